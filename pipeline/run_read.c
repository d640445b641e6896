/*
 * run_read.c - the threads that feed a run: the context created while the source opens, and
 * the reading thread that fills frames of the run's es_stream from the source, lending the
 * source's own buffers where it can.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "es_run_internal.h"
#include "es_trace.h"

void *es_run_ctx_main(void *arg) {
  run_ctx_open *c = arg;
  es_trace("context: create");
  c->rc = es_context_create(&c->ctx, c->cfg, c->msg, sizeof c->msg);
  es_trace("context: created");
  pthread_mutex_lock(&c->lock);
  c->created = 1;
  if (c->pixels > 0 && c->ctx) es_context_expect(c->ctx, c->pixels);
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

void es_run_ctx_expect(run_ctx_open *c, int64_t pixels) {
  pthread_mutex_lock(&c->lock);
  c->pixels = pixels;
  if (c->created && c->ctx) es_context_expect(c->ctx, pixels);
  pthread_mutex_unlock(&c->lock);
}

/* Lent buffers are page-locked once the GPUs are open, so frames go to a GPU without a
 * copy; until then, and without GPUs, they stay pageable (0: the source asks again on the
 * buffer's next frame). A buffer the driver refuses (-1) stays pageable: asked again, it
 * cost a failing cudaHostRegister every time it came round, i.e. every frame (bench-decode
 * --pin-fails). */
static _Atomic(es_context *) g_pin_ctx;
void es_run_pin_ctx(es_context *ctx) { atomic_store(&g_pin_ctx, ctx); }
static atomic_int g_pin_holds; /* runs on a caller's context that set g_pin_ctx */
void es_run_pin_hold(es_context *ctx) {
  atomic_fetch_add(&g_pin_holds, 1);
  atomic_store(&g_pin_ctx, ctx);
}
void es_run_pin_release(void) {
  if (atomic_fetch_sub(&g_pin_holds, 1) == 1) atomic_store(&g_pin_ctx, NULL);
}
int es_run_pin(void *p, size_t bytes) {
  es_context *ctx = atomic_load(&g_pin_ctx);
  if (!ctx || !es_context_gpus_open(ctx) || es_context_gpu_count(ctx) <= 0) return 0;
  return es_host_pin(p, bytes) ? 1 : -1;
}

void *es_run_read_main(void *arg) {
  es_run *r = arg;
  es_source *src = &r->src;
  es_frame *f = NULL;
  int rc = ES_OK;
  /* ES_TRACE: where this thread's time goes (waiting for a free frame, or reading). */
  const int tr = es_trace_enabled();
  double t_wait = 0, t_read = 0, t0 = 0;
  for (;;) {
    es_source_frame fr = {INT64_MIN, NAN, 0, NULL, 0, NULL};
    if (atomic_load(&r->abort) || (es_run_stop_requested(r) && !r->first_had)) {
      rc = ES_ERR_INTERRUPTED;
      break;
    }
    if (tr) t0 = es_trace_ms();
    rc = es_stream_acquire(r->st, &f);
    if (tr) t_wait += es_trace_ms() - t0;
    if (rc != ES_OK) {
      f = NULL;
      break;
    }
    /* A frame buffer is made for a frame the source has (ES_ERR_AGAIN: it exists), not for
     * the size a header declared: a slot that never held a frame of ours (f->data NULL)
     * asks without one. Lent frames never need one. */
    rc = ES_ERR_AGAIN;
    if (r->first_lent) { /* frame 0, read before the sinks were opened */
      fr = r->first;
      r->first_lent = 0;
      rc = ES_OK;
    }
    for (int pass = 0; rc == ES_ERR_AGAIN && pass < 2; pass++) {
      if ((f->data || pass) &&
          (rc = es_stream_reserve(r->st, f, r->info.width, r->info.height, r->info.depth))) {
        snprintf(r->read_msg, sizeof r->read_msg, "out of memory for a %dx%d frame",
                 r->info.width, r->info.height);
        break;
      }
      if (tr) t0 = es_trace_ms();
      rc = src->read(src, f->data, f->stride, &fr, r->read_msg, sizeof r->read_msg);
      if (tr) t_read += es_trace_ms() - t0;
    }
    if (rc != ES_OK) break;
    if (fr.lend_ref) { /* the source's own buffer, until the stream gives it back */
      f->width = fr.width > 0 ? fr.width : r->info.width; /* a stack's page: its own size */
      f->height = fr.height > 0 ? fr.height : r->info.height;
      f->depth = fr.depth > 0 ? fr.depth : r->info.depth;
      f->lend = fr.lend;
      f->stride = fr.lend_stride;
      f->lend_release = src->unlend;
      f->lend_arg = fr.lend_ref;
    }
    /* A frame of its own size (a stack's page) and the mask: said here as open_source says
     * it of frame 0, where the stream would refuse it with no more than "input error". */
    if (r->c.mask && (f->width != r->c.mask_width || f->height != r->c.mask_height)) {
      snprintf(r->read_msg, sizeof r->read_msg, "frame %lld: %dx%d, the mask%s%s %dx%d: not the same size",
               (long long)(r->pushed + r->c.index_base), f->width, f->height,
               r->c.mask_name ? " " : "", r->c.mask_name ? r->c.mask_name : "", r->c.mask_width,
               r->c.mask_height);
      rc = ES_ERR_INPUT;
      break;
    }
    f->pts = fr.pts;
    f->pts_seconds = fr.pts_seconds;
    f->user = NULL;
    f->damaged = fr.damaged;
    if (r->pushed == 0) es_trace("decode: first frame read");
    rc = es_stream_push(r->st, f);
    if (rc != ES_OK) break; /* the frame is still ours (entropy_stream.h) */
    f = NULL;
    r->pushed++;
    r->first_had = 0;
  }
  /* The frame we hold was never pushed (or its push failed): give it back to the pool,
   * with its lent buffer, rather than leave both to es_stream_destroy. */
  if (f) es_stream_release(r->st, f);
  if (tr) {
    es_source_counts sc = {0};
    if (src->counts) src->counts(src, &sc);
    es_trace("decode: %lld frames pushed; %.1f ms waiting for a free frame, %.1f ms reading "
             "(%.1f of them copying planes out of decoded frames)",
             (long long)r->pushed, t_wait, t_read, sc.copy_ms);
  }
  if (rc == ES_ERR_EOF) rc = ES_OK;
  /* After a stop the stdin pump closes its pipe wherever the producer was, so the frame
   * being read comes out short: that is the interruption, not a damaged input. */
  if (rc == ES_ERR_INPUT && es_run_stop_requested(r)) rc = ES_ERR_INTERRUPTED;
  r->read_status = rc;
  es_stream_finish(r->st);
  return NULL;
}
