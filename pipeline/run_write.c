/*
 * run_write.c - a run's writing thread: each result, in input order, to every sink still
 * live, with SPEC section 3's failure policy. A sink that fails is said once and closed
 * uncommitted at once (its temporary removed); the others go on and are committed at the
 * end; the run stops early only when none is left. A frame or the stream failing is fatal
 * to all of them.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "es_pipeline_internal.h"
#include "es_run_internal.h"
#include "es_trace.h"

/* Ends the run early: the reading thread stops as for a stop, the stream wakes. */
static void end_early(es_run *r) {
  r->stopped = 1;
  atomic_store(&r->abort, 1);
  es_stream_abort(r->st);
}

void es_run_item_of(es_item *it, const es_frame *f, const char *name, int64_t index) {
  memset(it, 0, sizeof *it);
  it->name = name;
  it->index = index;
  it->pts = f->pts;
  it->pts_seconds = f->pts_seconds;
  it->damaged = f->damaged;
  it->width = f->width;
  it->height = f->height;
  it->depth = f->depth;
  it->map = f->map;
  it->map_stride = f->map_stride;
  it->pix = &f->pix;
  it->stats = &f->stats;
}

/* Hands one computed frame to every live sink; 1 when one of them took it. */
static int write_item(es_run *r, const es_frame *f) {
  char msg[RUN_MSG_LEN];
  int took = 0;
  es_item it;
  /* named by the input ("-": standard input); a share's index is the whole video's */
  es_run_item_of(&it, f, r->src.name, f->index + r->c.index_base);
  for (int i = 0; i < r->nsinks; i++) {
    run_sink *s = &r->sinks[i];
    if (s->closed) continue;
    msg[0] = 0;
    s->k.what = NULL;
    int rc = s->k.write(&s->k, &it, msg, sizeof msg);
    if (rc == ES_OK || rc == ES_SINK_KEPT) {
      took = 1;
      s->taken++;
      if (rc == ES_SINK_KEPT) r->counts.skipped++; /* not claimed as written */
      continue;
    }
    es_run_say(r, s->k.what ? s->k.what : s->k.name ? s->k.name : "-", "%s",
               *msg ? msg : es_strerror(rc));
    r->code = es_run_worse(r->code, es_exit_code(rc));
    /* A write a stop ended (a FIFO with no reader) is not written, not failed. */
    s->failed_at = rc == ES_ERR_INTERRUPTED ? ES_RUN_SINK_GIVEN_UP : it.index;
    s->closed = 1;
    s->k.close(&s->k, 0, NULL, 0); /* its partial file goes now */
  }
  return took;
}

int es_run_gpus_failed(es_run *r, int wait) {
  char m[ES_ERRLEN];
  const int rc =
      wait ? es_ctx_gpus_settle(r->ctx, m, sizeof m) : es_ctx_gpus_failed(r->ctx, m, sizeof m);
  if (rc == ES_OK) return 0;
  /* Once a run, not once a context: a caller's next run on the same context said nothing */
  if (atomic_exchange(r->gpus_said, 1) == 0) es_run_say(r, NULL, "%s", m);
  r->code = es_run_worse(r->code, es_exit_code(rc));
  r->fatal = 1;
  return 1;
}

void es_run_write_all(es_run *r) {
  int live = 0;
  for (;;) {
    es_frame *f = NULL;
    int rc = es_stream_pull(r->st, &f);
    if (rc == ES_ERR_EOF) break;
    if (rc != ES_OK) {
      if (!es_run_stop_requested(r)) {
        const char *m = es_context_error(r->ctx);
        es_run_say(r, NULL, "%s", m && *m ? m : es_strerror(rc));
        r->code = es_run_worse(r->code, es_exit_code(rc));
        r->fatal = 1;
      }
      r->stopped = 1;
      atomic_store(&r->abort, 1);
      break;
    }
    if (f->status != ES_OK && es_run_gpus_failed(r, 0)) { /* not the frame's own failure */
      es_stream_release(r->st, f);
      end_early(r);
      break;
    }
    if (f->status != ES_OK) {
      /* A frame no device could compute (SPEC 3: exit 4) is missing from every sink alike:
       * not one sink failing. The run ends and nothing is committed. */
      const char *m = es_context_error(r->ctx);
      char what[64];
      snprintf(what, sizeof what, "frame %" PRId64, f->index + r->c.index_base);
      es_run_say(r, what, "%s", m && *m ? m : es_strerror(f->status));
      r->code = es_run_worse(r->code, es_exit_code(f->status));
      r->fatal = 1;
      es_stream_release(r->st, f);
      end_early(r);
      break;
    }
    int took = write_item(r, f);
    es_stream_release(r->st, f);
    if (took || r->nsinks == 0) {
      if (r->counts.frames == 0) es_trace("video: first frame written");
      r->counts.frames++;
    }
    live = 0;
    for (int i = 0; i < r->nsinks; i++) live += !r->sinks[i].closed;
    if (r->nsinks && !live) { /* every sink has failed: nothing left to write */
      end_early(r);
      break;
    }
    if (r->c.progress) {
      r->counts.elapsed_s = es_run_now_s() - r->t0;
      r->c.progress(r->c.user, &r->counts);
    }
  }
  es_trace("video: last frame written (%" PRId64 ")", r->counts.frames);
  pthread_join(r->rth, NULL);
  r->rth_started = 0;
  r->counts.pushed = r->pushed;
  if (r->src.counts) r->src.counts(&r->src, &r->counts.source);

  /* What the reader ended with: a short last frame or a corrupt stream keeps the frames
   * before it; a stop finishes properly. A run stopped early cut the reading itself. */
  if (r->read_status != ES_OK && !r->stopped) {
    if (r->read_status == ES_ERR_INTERRUPTED) {
      r->code = es_run_worse(r->code, 130);
    } else {
      es_run_say(r, r->src.name, "%s", *r->read_msg ? r->read_msg : es_strerror(r->read_status));
      r->code = es_run_worse(r->code, es_exit_code(r->read_status));
    }
  }
  /* Corrupt packets are skipped and the rest kept (SPEC 3); where nothing was left, the
   * input is as good as unreadable: an input error, the empty outputs kept as a short
   * first frame leaves them. */
  if (r->read_status == ES_OK && !r->stopped && !es_run_stop_requested(r) && r->pushed == 0 &&
      r->counts.source.corrupt > 0) {
    int64_t nc = r->counts.source.corrupt;
    es_run_say(r, r->src.name, "no frame could be decoded (%" PRId64 " corrupt packet%s skipped)",
               nc, nc == 1 ? "" : "s");
    r->code = es_run_worse(r->code, 2);
  }
  if (es_run_stop_requested(r)) r->code = 130;
}

void es_run_close_sinks(es_run *r) {
  char msg[RUN_MSG_LEN];
  const int commit = !r->fatal;
  /* A video's last frame lasts as the input's does, where the input was read to its end. */
  const int at_end = r->read_status == ES_OK && !r->stopped && !es_run_stop_requested(r);
  const int whole_failed = (r->src.flags & ES_SOURCE_WHOLE) && !at_end;
  for (int i = 0; i < r->nsinks; i++) {
    run_sink *s = &r->sinks[i];
    if (s->closed) continue;
    if (at_end && s->k.end && r->src.end_pts) s->k.end(&s->k, r->src.end_pts(&r->src));
    /* A failed or interrupted run whose sink took no frame leaves nothing under its name
     * (no unplayable video, no empty .npy; a frame directory goes where this run made it);
     * a statistics file keeps its header, as the records of the frames computed are kept. */
    int c = commit && ((s->k.flags & ES_SINK_KEEP_EMPTY) || !(r->code != 0 && s->taken == 0));
    /* A whole input (a stack) cut short, by a bad page or a stop, leaves no output holding
     * part of it. */
    if (whole_failed && !(s->k.flags & ES_SINK_KEEP_EMPTY)) c = 0;
    msg[0] = 0;
    s->closed = 1;
    int rc = s->k.close(&s->k, c, msg, sizeof msg);
    if (rc != ES_OK && c) {
      es_run_say(r, s->k.name, "%s", *msg ? msg : es_strerror(rc));
      r->code = es_run_worse(r->code, es_exit_code(rc));
      s->failed_at = ES_RUN_SINK_AT_CLOSE;
    }
  }
}
