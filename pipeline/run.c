/*
 * run.c - a run's life (entropy_stream.h, "Runs"): created with its source, given its sinks,
 * executed once, destroyed. es_run_execute opens the ends in the order that leaves nothing
 * behind for a run that cannot start: the context on a thread of its own while the source
 * opens, the first frame read before any sink is opened (a header alone declares sizes, and
 * a 49-byte y4m of 16000x16000 frames must not cost gigabytes), then the sinks, the stream,
 * the reading thread; run_write.c writes the results and closes the sinks.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_run_internal.h"
#include "es_trace.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "es_run_stop must be lock-free");

double es_run_now_s(void) { return es_trace_ms() * 1e-3; } /* core's monotonic clock */

void es_run_say(const es_run *r, const char *what, const char *fmt, ...) {
  char text[4096 + 1024], line[2 * 4096 + 1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (what)
    snprintf(line, sizeof line, "%s: %s", what, text);
  else
    snprintf(line, sizeof line, "%s", text);
  if (r->c.cfg.message)
    r->c.cfg.message(r->c.cfg.message_user, line);
  else
    fprintf(stderr, "entropy-stream: %s\n", line);
}

int es_run_stop_requested(const es_run *r) {
  return atomic_load(&((es_run *)r)->stop) || (r->c.stopped && r->c.stopped());
}

int es_run_worse(int code, int other) {
  if (code == 130 || other == 130) return 130;
  return other > code ? other : code;
}

/* The env's stop: a stop asked for, or the run ending early. */
static int env_stopped(void *arg) {
  es_run *r = arg;
  return es_run_stop_requested(r) || atomic_load(&r->abort);
}

static void env_log(void *arg, const char *line) {
  es_run *r = arg;
  es_run_say(r, r->src.name, "%s", line);
}

void es_run_config_default(es_run_config *c) {
  memset(c, 0, sizeof *c);
  es_config_default(&c->cfg);
  es_render_default(&c->render);
}

int es_run_create(es_run **out, const es_run_config *c, const es_source *src) {
  es_run *r;
  *out = NULL;
  if (!c || !src || !src->open || !src->read || !src->close) {
    if (src && src->close) {
      es_source s = *src;
      s.close(&s);
    }
    return ES_ERR_USAGE;
  }
  r = calloc(1, sizeof *r);
  if (!r) {
    es_source s = *src;
    s.close(&s);
    return ES_ERR_NOMEM;
  }
  r->c = *c;
  r->src = *src;
  pthread_mutex_init(&r->co.lock, NULL);
  r->co.cfg = &r->c.cfg;
  r->env.stopped = env_stopped;
  r->env.stopped_arg = r;
  r->env.pin = es_run_pin;
  r->env.unpin = es_host_unpin;
  r->env.log = env_log;
  r->env.log_arg = r;
  r->verbose = c->cfg.verbose;
  atomic_init(&r->gpus_said_own, 0);
  r->gpus_said = &r->gpus_said_own;
  *out = r;
  return ES_OK;
}

int es_run_add_sink(es_run *r, const es_sink *k) {
  if (!k || !k->close) return ES_ERR_USAGE;
  if (!r || !k->open || !k->write || r->executed || r->nsinks == ES_RUN_MAX_SINKS) {
    es_sink s = *k; /* owned from the call on: closed, nothing written */
    s.close(&s, 0, NULL, 0);
    return ES_ERR_USAGE;
  }
  memset(&r->sinks[r->nsinks], 0, sizeof r->sinks[0]);
  r->sinks[r->nsinks].k = *k;
  r->sinks[r->nsinks].failed_at = ES_RUN_SINK_LIVE;
  r->nsinks++;
  return ES_OK;
}

void es_run_stop(es_run *r) { atomic_store(&r->stop, 1); }

void es_run_get_counts(const es_run *r, es_run_counts *c) { *c = r->counts; }

int64_t es_run_sink_failed_at(const es_run *r, int i) {
  return i >= 0 && i < r->nsinks ? r->sinks[i].failed_at : ES_RUN_SINK_LIVE;
}

es_context *es_run_context(const es_run *r) {
  return r->ctx ? r->ctx : r->c.context ? r->c.context : r->co.ctx;
}

/* The source failed before its first frame was had (at the open or the first read): said,
 * and the exit code. A stop meanwhile made the pump close standard input, so the source saw
 * an empty or short stream: that is the interruption, not bad input. */
static int input_failed(es_run *r, int rc, const char *msg) {
  if (es_run_stop_requested(r)) {
    if (r->verbose) es_run_say(r, r->src.name, "interrupted before the first frame");
    return 130;
  }
  es_run_say(r, r->src.name, "%s", *msg ? msg : es_strerror(rc));
  return es_exit_code(rc);
}

/* Opens the source and reads its first frame. The exit code (0: go on). */
static int open_source(es_run *r) {
  char msg[RUN_MSG_LEN] = "";
  int rc = r->src.open(&r->src, &r->env, &r->info, msg, sizeof msg);
  if (rc != ES_OK) return input_failed(r, rc, msg);
  r->src_open = 1;
  r->counts.width = r->info.width;
  r->counts.height = r->info.height;
  r->counts.depth = r->info.depth;
  r->counts.expected = r->info.frames;
  es_trace("video: input open");
  if (r->c.context) /* the caller's: its GPUs open now if frames of this size want them */
    es_context_expect(r->c.context, (int64_t)r->info.width * r->info.height);
  else
    es_run_ctx_expect(&r->co, (int64_t)r->info.width * r->info.height);
  if (r->verbose >= 2) {
    char len_s[48] = "length unknown"; /* raw H.264, pipes: the container does not say */
    if (r->info.frames > 0)
      snprintf(len_s, sizeof len_s, "%lld frame%s (estimate)", (long long)r->info.frames,
               r->info.frames == 1 ? "" : "s");
    es_run_say(r, r->src.name, "%dx%d, %d-bit, %d/%d fps, %s", r->info.width, r->info.height,
               r->info.depth, r->info.fps_num, r->info.fps_den, len_s);
  }
  rc = es_params_check(&r->c.cfg.params, r->info.depth, msg, sizeof msg);
  if (rc != ES_OK) {
    es_run_say(r, r->src.name, "%s", msg);
    return 1;
  }
  /* Frame 0 before anything is sized for the frames (an encoder allocates for the header's
   * size when it opens, the stream's buffers are the frame's size). The source lends it, or
   * holds it (ES_ERR_AGAIN) for the reading thread; a first frame that is short or
   * unreadable is the input's error, as a header the source refused is. */
  r->first.pts = INT64_MIN;
  r->first.pts_seconds = NAN;
  rc = r->src.read(&r->src, NULL, 0, &r->first, msg, sizeof msg);
  if (rc == ES_OK) {
    r->first_lent = 1;
  } else if (rc != ES_ERR_AGAIN && rc != ES_ERR_EOF) {
    return input_failed(r, rc, msg);
  }
  r->first_had = rc != ES_ERR_EOF;
  es_trace("video: first frame read");
  /* A run that ends before its first frame opens no sink (an empty .mkv does not play, and
   * a .npy of shape (0, H, W) under the final name of a failed run claims what it is not). */
  if (es_run_stop_requested(r)) return input_failed(r, ES_ERR_INTERRUPTED, "");
  /* The stream would refuse every frame of another size than its mask (after the sinks
   * opened, leaving them to remove): said here, before any. */
  if (r->c.mask && (r->c.mask_width != r->info.width || r->c.mask_height != r->info.height)) {
    snprintf(msg, sizeof msg, "%dx%d, the mask%s%s %dx%d: not the same size", r->info.width,
             r->info.height, r->c.mask_name ? " " : "", r->c.mask_name ? r->c.mask_name : "",
             r->c.mask_width, r->c.mask_height);
    return input_failed(r, ES_ERR_INPUT, msg);
  }
  return 0;
}

/* A sink gave up its open at a stop (a FIFO still waiting for a reader), said by its own
 * line: the sinks opened before it are committed with the records of the frames computed:
 * none yet. Returns 130. */
static int interrupted_at_open(es_run *r) {
  char msg[RUN_MSG_LEN] = "";
  for (int i = 0; i < r->nsinks; i++) {
    run_sink *s = &r->sinks[i];
    if (!s->opened || s->closed) continue;
    s->closed = 1;
    msg[0] = 0;
    int rc = s->k.close(&s->k, 1, msg, sizeof msg);
    if (rc != ES_OK) es_run_say(r, s->k.name, "%s", *msg ? msg : es_strerror(rc));
  }
  if (r->verbose) es_run_say(r, r->src.name, "interrupted before the first frame");
  return 130;
}

/* Opens the sinks (ES_SINK_OPEN_FIRST ones first) and fills the stream's configuration
 * from what they ask for. The exit code (0: go on). */
int es_run_open_sinks(es_run *r, es_stream_config *sc) {
  char msg[RUN_MSG_LEN];
  int pixfmt = ES_PIX_NONE;
  memset(sc, 0, sizeof *sc);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < r->nsinks; i++) {
      run_sink *s = &r->sinks[i];
      es_sink_needs needs = {ES_PIX_NONE, 0, 0};
      if ((s->k.flags & ES_SINK_OPEN_FIRST ? 0 : 1) != pass) continue; /* firsts at pass 0 */
      msg[0] = 0;
      s->k.what = NULL;
      int rc = s->k.open(&s->k, &r->info, &needs, msg, sizeof msg);
      if (rc != ES_OK) {
        es_run_say(r, s->k.what ? s->k.what : s->k.name, "%s", *msg ? msg : es_strerror(rc));
        return rc == ES_ERR_INTERRUPTED ? interrupted_at_open(r) : es_exit_code(rc);
      }
      s->opened = 1;
      s->needs = needs;
      if (needs.pixfmt != ES_PIX_NONE && pixfmt != ES_PIX_NONE && needs.pixfmt != pixfmt) {
        es_run_say(r, s->k.name, "wants another rendering than %s", r->sinks[0].k.name);
        return 1;
      }
      if (needs.pixfmt != ES_PIX_NONE) pixfmt = needs.pixfmt;
      sc->want_map |= needs.want_map;
      sc->want_stats |= needs.want_stats;
    }
  }
  if (pixfmt != ES_PIX_NONE) {
    sc->render = r->c.render;
    sc->render.format = pixfmt;
  }
  sc->mask = r->c.mask; /* every frame's (the caller's, until es_run_destroy) */
  sc->mask_stride = r->c.mask_stride;
  sc->mask_width = r->c.mask_width;
  sc->mask_height = r->c.mask_height;
  /* max_width 0: each frame buffer is made when a frame for it has come (run_read.c), at
   * most the queue of them, rather than the queue of the header's size up front. */
  return 0;
}

/* Joins the context thread and opens the stream. The exit code (0: go on). */
int es_run_open_compute(es_run *r, const es_stream_config *sc) {
  es_trace("video: outputs open, joining the context thread");
  if (r->c.context) {
    r->ctx = r->c.context; /* the caller's (never destroyed here) */
  } else {
    if (r->cth_started) {
      pthread_join(r->cth, NULL);
      r->cth_started = 0;
    } else {
      es_run_ctx_main(&r->co);
    }
    r->ctx = r->co.ctx;
    r->co.ctx = NULL;
  }
  if (r->co.rc != ES_OK) {
    es_run_say(r, NULL, "%s", *r->co.msg ? r->co.msg : es_strerror(r->co.rc));
    return es_exit_code(r->co.rc);
  }
  if (r->verbose >= 2 && !r->src.read_item) { /* a batch says it with its items (run_batch.c) */
    char d[64];
    es_run_say(r, NULL, "computing on %s", es_context_describe(r->ctx, d, sizeof d));
  }
  es_trace("video: context ready");
  if (r->c.context) {
    es_run_pin_hold(r->ctx);
    r->pin_held = 1;
  } else {
    es_run_pin_ctx(r->ctx);
  }
  int rc = es_stream_open(r->ctx, sc, &r->st);
  if (rc != ES_OK) {
    const char *m = es_context_error(r->ctx);
    es_run_say(r, NULL, "%s", m && *m ? m : es_strerror(rc));
    return es_exit_code(rc);
  }
  es_trace("video: stream open");
  return 0;
}

int es_run_execute(es_run *r) {
  es_stream_config sc;
  int writing = 0;
  if (!r || r->executed) return ES_ERR_USAGE;
  r->executed = 1;
  if (r->src.read_item) { /* a list of items: decoded and written by pools (run_batch.c) */
    r->code = es_run_batch(r);
    goto end;
  }
  /* A caller's context is there already: no thread to create one. */
  if (!r->c.context)
    r->cth_started = pthread_create(&r->cth, NULL, es_run_ctx_main, &r->co) == 0;
  if ((r->code = open_source(r)) != 0) goto end;
  if ((r->code = es_run_open_sinks(r, &sc)) != 0) goto end;
  if ((r->code = es_run_open_compute(r, &sc)) != 0) goto end;

  r->t0 = es_run_now_s();
  if (pthread_create(&r->rth, NULL, es_run_read_main, r) != 0) {
    es_run_say(r, NULL, "cannot start the decode thread");
    r->code = 4;
    goto end;
  }
  r->rth_started = 1;
  r->counts.started = 1;
  if (r->c.writing) { /* after the reading thread is made: it inherits the mask */
    r->c.writing(r->c.user, 1);
    writing = 1;
  }
  es_run_write_all(r);
  /* Listed GPUs still opening when the last frame was written (a short run): their outcome
   * decides whether the outputs are committed. */
  if (!r->fatal && !es_run_stop_requested(r)) es_run_gpus_failed(r, 1);
  es_run_close_sinks(r);
  es_trace("video: outputs closed");
  r->counts.elapsed_s = es_run_now_s() - r->t0;

end:
  if (writing) r->c.writing(r->c.user, 0);
  if (r->cth_started) {
    pthread_join(r->cth, NULL);
    r->cth_started = 0;
  }
  if (r->rth_started) {
    es_stream_abort(r->st);
    pthread_join(r->rth, NULL);
    r->rth_started = 0;
  }
  /* Sinks still open (an early end): removed, as a failed run leaves nothing of theirs. */
  for (int i = 0; i < r->nsinks; i++) {
    run_sink *s = &r->sinks[i];
    if (s->closed) continue;
    s->closed = 1;
    s->k.close(&s->k, 0, NULL, 0);
  }
  r->counts.exit_code = r->code;
  if (!r->code) return ES_OK;
  switch (r->code) {
  case 130: return ES_ERR_INTERRUPTED;
  case 1: return ES_ERR_USAGE;
  case 2: return ES_ERR_INPUT;
  case 3: return ES_ERR_OUTPUT;
  default: return ES_ERR_INTERNAL;
  }
}

void es_run_destroy(es_run **rp) {
  es_run *r = rp ? *rp : NULL;
  if (!r) return;
  *rp = NULL;
  if (r->cth_started) pthread_join(r->cth, NULL);
  for (int i = 0; i < r->nsinks; i++)
    if (!r->sinks[i].closed) r->sinks[i].k.close(&r->sinks[i].k, 0, NULL, 0);
  es_context_destroy(&r->co.ctx);
  es_stream_destroy(&r->st); /* gives lent frames back to the source */
  if (r->first_lent && r->first.lend_ref) r->src.unlend(r->first.lend_ref); /* never pushed */
  r->src.close(&r->src); /* frees (and unpins) its buffers, while the context lives */
  if (r->pin_held)
    es_run_pin_release();
  else if (!r->c.context)
    es_run_pin_ctx(NULL);
  if (r->c.context)
    r->ctx = NULL; /* the caller's */
  else
    es_context_destroy(&r->ctx);
  pthread_mutex_destroy(&r->co.lock);
  es_trace("video: all freed");
  free(r);
}
