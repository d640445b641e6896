/*
 * run_batch.c - the run of a read_item source (a directory of stills): a pool of decoding
 * threads takes the items in index order and reads each into a frame of the run's stream
 * (grown to the largest item), a pool of writing threads pulls the results and hands each to
 * the per-item sinks (ES_SINK_PER_ITEM: a file an item; PNG's zlib is slow, so several
 * write at once), and every other sink (statistics) gets the items in index order, whatever
 * order they were finished in. An item that fails (undecodable, of a size the mask or the
 * engines refuse, not computed, its output not written) is said once and counted; the
 * others go on (SPEC 3), the exit code the worst of theirs. An ordered sink may take the
 * maps too (es.open of a directory): each kept until its turn, at most a queue of them.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "es_pipeline_internal.h"
#include "es_run_internal.h"
#include "es_trace.h"

typedef struct batch_item {
  const char *name;    /* the source's (es_source_frame.name), or the source's name */
  const char *what;    /* in messages */
  const struct es_tiff_geo *geo;
  int status;          /* ES_OK, ES_SINK_KEPT or the failure's es_status */
  int done;            /* finished (under the batch's lock) */
  int width, height, depth;
  unsigned kept;       /* bit k: per-item sink k's output exists and is kept (its check) */
  double t0;           /* when its check began */
  es_stats *stats;     /* kept for the ordered sinks until its turn (owned) */
  float *map;          /* the same, where an ordered sink takes the map (width floats a row) */
} batch_item;

typedef struct batch {
  es_run *r;
  int64_t n;
  batch_item *items;
  pthread_mutex_t lock; /* guards what follows, and the ordered sinks' writes */
  int64_t next;         /* the next item to decode */
  int64_t ordered;      /* the next item the ordered sinks take */
  int decoders;         /* decoding threads still running: the last one finishes the stream */
  int want_stats;       /* an ordered sink takes statistics */
  /* An ordered sink takes the map (es.open of a directory): each item's map is kept until
   * its turn, so a decoder waits (on turn) while `window` items are started and not yet
   * handed in order: the maps held stay bounded by the frames in flight, not the list. */
  int want_map;
  int64_t window;
  pthread_cond_t turn;
  unsigned per_item;    /* bit k: sink k is a file an item */
  atomic_int gpus_failed; /* the listed GPUs could not be opened: no item begins after it */
} batch;

/* The index the sinks get for item i: the caller's (a share of a batch), or i + base. */
static int64_t item_index(const batch *b, int64_t i) {
  return b->r->c.item_index ? b->r->c.item_index[i] : i + b->r->c.index_base;
}

static int stopping(const batch *b) {
  return es_run_stop_requested(b->r) || atomic_load(&b->r->abort) ||
         atomic_load(&((batch *)b)->gpus_failed);
}

/* The message of a failed frame without the stream's "frame N: " (the item names it). */
static const char *frame_error(es_context *ctx, int status) {
  const char *m = es_context_error(ctx);
  if (!m || !*m) return es_strerror(status);
  if (!strncmp(m, "frame ", 6)) {
    const char *p = m + 6;
    while (*p >= '0' && *p <= '9') p++;
    if (p > m + 6 && p[0] == ':' && p[1] == ' ') return p + 2;
  }
  return m;
}

/* The ordered sinks take item i (its statistics; a failed item without them is left out,
 * as a file that could not be read has no record). Under the lock. */
static void write_ordered(batch *b, int64_t i) {
  es_run *r = b->r;
  batch_item *t = &b->items[i];
  char msg[RUN_MSG_LEN];
  es_item it;
  if (!t->stats && t->status != ES_OK && t->status != ES_SINK_KEPT) return;
  memset(&it, 0, sizeof it);
  it.name = t->name;
  it.index = item_index(b, i);
  it.item = i;
  it.pts = INT64_MIN;
  it.pts_seconds = NAN;
  it.width = t->width;
  it.height = t->height;
  it.depth = t->depth;
  it.stats = t->stats;
  it.map = t->map;
  it.map_stride = (size_t)t->width;
  it.geo = t->geo;
  for (int k = 0; k < r->nsinks; k++) {
    run_sink *s = &r->sinks[k];
    if (s->closed || (s->k.flags & ES_SINK_PER_ITEM)) continue;
    msg[0] = 0;
    s->k.what = NULL;
    int rc = s->k.write(&s->k, &it, msg, sizeof msg);
    if (rc == ES_OK || rc == ES_SINK_KEPT) {
      s->taken++;
      continue;
    }
    es_run_say(r, s->k.what ? s->k.what : s->k.name, "%s", *msg ? msg : es_strerror(rc));
    r->code = es_run_worse(r->code, es_exit_code(rc));
    s->failed_at = rc == ES_ERR_INTERRUPTED ? ES_RUN_SINK_GIVEN_UP : it.index;
    s->closed = 1;
    s->k.close(&s->k, 0, NULL, 0); /* its partial file goes now */
  }
}

/* Item i is over: counted, and the ordered sinks take every item finished in order. */
static void item_over(batch *b, int64_t i, int status) {
  es_run *r = b->r;
  batch_item *t = &b->items[i];
  pthread_mutex_lock(&b->lock);
  t->status = status;
  t->done = 1;
  if (status == ES_OK || status == ES_SINK_KEPT) {
    r->counts.frames++;
    if (status == ES_SINK_KEPT) r->counts.skipped++;
    else r->counts.pixels += (int64_t)t->width * t->height;
  } else {
    r->counts.failed++;
    if (status == ES_ERR_INTERRUPTED) r->counts.interrupted++;
    r->code = es_run_worse(r->code, es_exit_code(status));
  }
  if (r->c.item_done)
    r->c.item_done(r->c.user, i, status, t->width, t->height, es_run_now_s() - t->t0);
  while (b->ordered < b->n && b->items[b->ordered].done) {
    write_ordered(b, b->ordered);
    free(b->items[b->ordered].stats);
    b->items[b->ordered].stats = NULL;
    free(b->items[b->ordered].map);
    b->items[b->ordered].map = NULL;
    b->ordered++;
    pthread_cond_broadcast(&b->turn);
  }
  if (r->c.progress) {
    r->counts.elapsed_s = es_run_now_s() - r->t0;
    r->c.progress(r->c.user, &r->counts);
  }
  pthread_mutex_unlock(&b->lock);
}

/* read_item's destination: the acquired frame, grown to the item's size. */
typedef struct frame_dest {
  es_run *r;
  es_frame *f;
} frame_dest;

static int frame_dest_fn(void *user, int width, int height, int depth, void **dst,
                         size_t *dst_stride, char *msg, size_t len) {
  frame_dest *d = user;
  int rc = es_stream_reserve(d->r->st, d->f, width, height, depth);
  if (rc == ES_ERR_NOMEM) {
    snprintf(msg, len, "out of memory for a %dx%d image", width, height);
    return rc;
  }
  if (rc != ES_OK) { /* a size no engine takes */
    snprintf(msg, len, "%s", es_context_error(d->r->ctx));
    return rc;
  }
  *dst = d->f->data;
  *dst_stride = d->f->stride;
  return ES_OK;
}

/* The per-item sinks' checks of item i before it is read: ES_OK to read it (t->kept the
 * outputs kept), ES_SINK_KEPT where every output is kept and no ordered sink takes its
 * statistics (nothing to compute), or the first refusal, said. */
static int check_item(batch *b, int64_t i) {
  es_run *r = b->r;
  batch_item *t = &b->items[i];
  char msg[RUN_MSG_LEN];
  int checked = 0;
  for (int k = 0; k < r->nsinks; k++) {
    run_sink *s = &r->sinks[k];
    if (!(b->per_item & 1u << k)) continue;
    checked++;
    if (!s->k.check) continue;
    msg[0] = 0;
    int rc = s->k.check(&s->k, i, msg, sizeof msg);
    if (rc == ES_SINK_KEPT) {
      t->kept |= 1u << k;
    } else if (rc != ES_OK) { /* the sink's message names its file */
      es_run_say(r, NULL, "%s", *msg ? msg : es_strerror(rc));
      return rc;
    }
  }
  /* Every output kept: read only for the statistics. */
  if (checked && t->kept == b->per_item && !b->want_stats) return ES_SINK_KEPT;
  return ES_OK;
}

/* Reads item i into a frame and pushes it: ES_OK (a writer ends the item), or the item's
 * status: its failure, said (or said before the run: item_failed), or ES_SINK_KEPT. */
static int decode_item(batch *b, int64_t i) {
  es_run *r = b->r;
  batch_item *t = &b->items[i];
  char msg[RUN_MSG_LEN] = "";
  frame_dest d = {r, NULL};
  es_source_frame fr;
  int rc;
  t->name = t->what = r->src.name;
  t->t0 = es_run_now_s();
  if (r->c.item_failed && r->c.item_failed[i] != ES_OK) return r->c.item_failed[i];
  if ((rc = check_item(b, i)) != ES_OK) return rc;
  rc = es_stream_acquire(r->st, &d.f);
  if (rc != ES_OK) return rc; /* the stream was aborted: the run is ending */
  memset(&fr, 0, sizeof fr);
  fr.pts = INT64_MIN;
  fr.pts_seconds = NAN;
  rc = r->src.read_item(&r->src, i, frame_dest_fn, &d, &fr, msg, sizeof msg);
  if (fr.name) t->name = fr.name;
  t->what = fr.what ? fr.what : t->name;
  t->geo = fr.geo;
  if (rc != ES_OK) {
    es_run_say(r, t->what, "%s", *msg ? msg : es_strerror(rc));
  } else if ((rc = es_params_check(&r->c.cfg.params, d.f->depth, msg, sizeof msg)) != ES_OK) {
    es_run_say(r, t->what, "%s", msg);
  } else {
    d.f->user = t;
    d.f->pts = INT64_MIN;
    d.f->pts_seconds = NAN;
    d.f->damaged = fr.damaged;
    rc = es_stream_push(r->st, d.f);
    if (rc == ES_OK) return ES_OK;
    es_run_say(r, t->what, "%s", frame_error(r->ctx, rc));
  }
  es_stream_release(r->st, d.f);
  return rc;
}

static void *decoder_main(void *arg) {
  batch *b = arg;
  for (;;) {
    int64_t i;
    pthread_mutex_lock(&b->lock);
    while (b->want_map && !stopping(b) && b->next - b->ordered >= b->window) {
      struct timespec dl; /* timed: a stop (an atomic store) broadcasts nothing */
      clock_gettime(CLOCK_REALTIME, &dl);
      dl.tv_nsec += 50000000L;
      if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&b->turn, &b->lock, &dl);
    }
    if (stopping(b) || b->next >= b->n) {
      pthread_mutex_unlock(&b->lock);
      break;
    }
    i = b->next++;
    pthread_mutex_unlock(&b->lock);
    int rc = decode_item(b, i);
    if (rc != ES_OK) {
      item_over(b, i, rc);
      continue;
    }
    pthread_mutex_lock(&b->lock);
    b->r->pushed++;
    pthread_mutex_unlock(&b->lock);
  }
  pthread_mutex_lock(&b->lock);
  if (--b->decoders == 0) es_stream_finish(b->r->st);
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

/* One computed item to every per-item sink; its statistics kept for the ordered ones.
 * Returns the item's status. */
static int write_item(batch *b, es_frame *f) {
  es_run *r = b->r;
  batch_item *t = f->user;
  char msg[RUN_MSG_LEN];
  int status = ES_OK, kept = 0;
  es_item it;
  if (f->status != ES_OK) {
    es_run_say(r, t->what, "%s", frame_error(r->ctx, f->status));
    return f->status;
  }
  t->width = f->width;
  t->height = f->height;
  t->depth = f->depth;
  if (b->want_stats) {
    /* Kept until the records are written in order, so only what they hold. */
    int bins = f->stats.bins > 0 && f->stats.bins <= ES_STATS_MAX_BINS ? f->stats.bins : 0;
    size_t size = offsetof(es_stats, hist) + (size_t)bins * sizeof f->stats.hist[0];
    t->stats = calloc(1, sizeof *t->stats); /* whole: a sink may read any field */
    if (!t->stats) {
      es_run_say(r, t->what, "out of memory");
      return ES_ERR_NOMEM;
    }
    memcpy(t->stats, &f->stats, size);
  }
  if (b->want_map && f->map) { /* kept until its turn, as the statistics */
    t->map = malloc(sizeof(float) * (size_t)f->width * (size_t)f->height);
    if (!t->map) {
      es_run_say(r, t->what, "out of memory");
      return ES_ERR_NOMEM;
    }
    for (int y = 0; y < f->height; y++)
      memcpy(t->map + (size_t)y * f->width, f->map + (size_t)y * f->map_stride,
             sizeof(float) * (size_t)f->width);
  }
  es_run_item_of(&it, f, t->name, item_index(b, t - b->items)); /* pts: none, as pushed */
  it.item = t - b->items;
  it.geo = t->geo;
  for (int k = 0; k < r->nsinks; k++) {
    run_sink *s = &r->sinks[k];
    if (!(s->k.flags & ES_SINK_PER_ITEM)) continue;
    if (t->kept & 1u << k) { /* its check kept the output: computed for the statistics */
      kept = 1;
      continue;
    }
    msg[0] = 0;
    int rc = s->k.write(&s->k, &it, msg, sizeof msg);
    if (rc == ES_SINK_KEPT) {
      kept = 1;
    } else if (rc != ES_OK) { /* this item's output: said by the sink's own message */
      es_run_say(r, NULL, "%s", *msg ? msg : es_strerror(rc));
      status = rc;
    }
  }
  return status != ES_OK ? status : kept ? ES_SINK_KEPT : ES_OK;
}

/* Listed GPUs that could not be opened: the batch ends (said once, exit 4) and writes
 * nothing, as when they opened first. A file is written once the opening that its item
 * asked for is over (a wait while it is under way); an item too small for a GPU asks for
 * none, so files of small items written before a larger one asked for the GPUs stay. */
static int gpus_failed(batch *b) {
  char m[ES_ERRLEN];
  if (es_ctx_gpus_settle(b->r->ctx, m, sizeof m) == ES_OK) return 0;
  pthread_mutex_lock(&b->lock);
  es_run_gpus_failed(b->r, 0);
  pthread_mutex_unlock(&b->lock);
  atomic_store(&b->gpus_failed, 1); /* the items in flight fail at once (es_run_job) */
  return 1;
}

static void *writer_main(void *arg) {
  batch *b = arg;
  es_frame *f;
  while (es_stream_pull(b->r->st, &f) == ES_OK) { /* ES_ERR_EOF: every item pushed is done */
    batch_item *t = f->user;
    if (gpus_failed(b)) {
      es_stream_release(b->r->st, f);
      item_over(b, t - b->items, ES_ERR_DEVICE);
      continue;
    }
    int rc = write_item(b, f);
    es_stream_release(b->r->st, f);
    item_over(b, t - b->items, rc);
  }
  return NULL;
}

/* Starts up to n threads of fn; how many started. */
static int start_threads(pthread_t *th, int n, void *(*fn)(void *), void *arg) {
  int started = 0;
  while (started < n && pthread_create(&th[started], NULL, fn, arg) == 0) started++;
  return started;
}

int es_run_batch(es_run *r) {
  char msg[RUN_MSG_LEN] = "";
  es_stream_config sc;
  batch b;
  pthread_t *th = NULL;
  int code, nw, ndec = 0, nwr = 0, writing = 0;
  memset(&b, 0, sizeof b);
  pthread_mutex_init(&b.lock, NULL);
  pthread_cond_init(&b.turn, NULL);
  b.r = r;
  int rc = r->src.open(&r->src, &r->env, &r->info, msg, sizeof msg);
  if (rc != ES_OK) {
    es_run_say(r, r->src.name, "%s", *msg ? msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  r->src_open = 1;
  b.n = r->src.count > 0 ? r->src.count : 0;
  r->counts.expected = b.n;
  b.items = calloc(b.n ? (size_t)b.n : 1, sizeof *b.items);
  if (!b.items) {
    code = 4;
    goto end;
  }
  if ((code = es_run_open_sinks(r, &sc)) != 0) goto end;
  for (int k = 0; k < r->nsinks; k++) {
    const run_sink *s = &r->sinks[k];
    if (s->k.flags & ES_SINK_PER_ITEM) {
      b.per_item |= 1u << k;
      continue;
    }
    if (s->needs.pixfmt != ES_PIX_NONE) {
      es_run_say(r, s->k.name, "takes a rendering: a batch hands the outputs that are not a "
                 "file an item their statistics and map only");
      code = 1;
      goto end;
    }
    b.want_stats = 1; /* an ordered sink takes the statistics (and the map, where asked) */
    b.want_map |= s->needs.want_map;
  }
  if (r->c.prepare && (code = r->c.prepare(r->c.user)) != 0) goto end;
  /* One frame an item at most, so a single image gets every core. */
  r->c.cfg.queue = es_config_queue(&r->c.cfg);
  if (b.n < r->c.cfg.queue) r->c.cfg.queue = b.n > 0 ? (int)b.n : 1;
  if ((code = es_run_open_compute(r, &sc)) != 0) goto end;
  b.window = r->c.cfg.queue;
  if (r->verbose >= 2) {
    char d[64];
    es_run_say(r, NULL, "%" PRId64 " file%s, %d in flight, %s", b.n, b.n == 1 ? "" : "s",
               r->c.cfg.queue, es_context_describe(r->ctx, d, sizeof d));
  }
  nw = r->c.workers > 0 ? r->c.workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (nw < 1) nw = 1;
  if (nw > r->c.cfg.queue) nw = r->c.cfg.queue;
  th = calloc((size_t)nw * 2, sizeof *th);
  if (!th) {
    code = 4;
    goto end;
  }
  r->t0 = es_run_now_s();
  r->counts.started = 1;
  nwr = start_threads(th, nw, writer_main, &b);
  b.decoders = nw; /* before any decoder can finish the stream */
  if (nwr > 0) ndec = start_threads(th + nwr, nw, decoder_main, &b);
  if (ndec == 0) {
    es_stream_abort(r->st);
    for (int i = 0; i < nwr; i++) pthread_join(th[i], NULL);
    es_run_say(r, NULL, "cannot start the worker threads");
    code = 4;
    goto end;
  }
  pthread_mutex_lock(&b.lock); /* those that did not start will not finish it */
  b.decoders -= nw - ndec;
  if (b.decoders == 0) es_stream_finish(r->st);
  pthread_mutex_unlock(&b.lock);
  if (r->c.writing) {
    r->c.writing(r->c.user, 1);
    writing = 1;
  }
  for (int i = 0; i < nwr + ndec; i++) pthread_join(th[i], NULL);
  if (!r->fatal && !es_run_stop_requested(r)) es_run_gpus_failed(r, 1); /* before the commit */
  /* The items that never began once the listed GPUs failed failed too (every job fails from
   * then on): counted so, not left to read as done (the CLI's summary said "10 written" of
   * 12 with nothing written). Under a stop they are the stop's "not started". */
  if (atomic_load(&b.gpus_failed) && !es_run_stop_requested(r))
    for (int64_t i = 0; i < b.n; i++)
      if (!b.items[i].done) item_over(&b, i, ES_ERR_DEVICE);
  /* Items never started (a stop) are not written; every one started is over. */
  r->counts.elapsed_s = es_run_now_s() - r->t0;
  code = r->code;
  if (es_run_stop_requested(r)) {
    code = 130;
    r->stopped = 1;
  }
  r->code = code;
  r->read_status = r->stopped ? ES_ERR_INTERRUPTED : ES_OK;
  es_run_close_sinks(r);
  code = r->code;
end:
  if (writing) r->c.writing(r->c.user, 0);
  for (int64_t i = 0; b.items && i < b.n; i++) {
    free(b.items[i].stats);
    free(b.items[i].map);
  }
  free(b.items);
  free(th);
  pthread_cond_destroy(&b.turn);
  pthread_mutex_destroy(&b.lock);
  return code;
}
