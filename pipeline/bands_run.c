/*
 * bands_run.c - one image in row bands from a band source to band sinks and statistics
 * sinks (es_run_bands): what a program needs around es_compute_bands. The order is the
 * one the failures are said in: the source (its header), the context, the statistics
 * sinks (one that cannot be written leaves no other output behind), then the band sinks;
 * the bands; the band sinks committed, then the one statistics record. Any failure ends
 * the run with nothing left under an output's name; the summary says whose it was, and
 * the caller says it (the library prints nothing).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "es_pipeline_internal.h"

typedef struct bands_job {
  const es_bands_run_config *c;
  es_band_source src;
  es_band_sink sinks[ES_BANDS_MAX_SINKS];
  int live[ES_BANDS_MAX_SINKS];   /* opened, not kept, not yet closed */
  int closed[ES_BANDS_MAX_SINKS]; /* close called (once) */
  int nsinks;
  es_sink stats[ES_BANDS_MAX_SINKS];
  int stats_closed[ES_BANDS_MAX_SINKS];
  int nstats;
  const char *write_failed; /* the sink whose write failed, for the summary */
} bands_job;

void es_bands_run_config_default(es_bands_run_config *c) {
  if (!c) return;
  memset(c, 0, sizeof *c);
  es_config_default(&c->cfg);
  es_render_default(&c->render);
}

void es_bands_run_config_close(es_bands_run_config *c) {
  for (int i = 0; i < c->nsinks && i < ES_BANDS_MAX_SINKS; i++)
    if (c->sinks[i].close) c->sinks[i].close(&c->sinks[i], 0, NULL, 0);
  for (int i = 0; i < c->nstats && i < ES_BANDS_MAX_SINKS; i++)
    if (c->stats_sinks[i].close) c->stats_sinks[i].close(&c->stats_sinks[i], 0, NULL, 0);
  if (c->source.close) c->source.close(&c->source);
  c->nsinks = c->nstats = 0;
  memset(&c->source, 0, sizeof c->source);
}

/* es_compute_bands' write: the map to the sinks of float32, the rendering to the others. */
static int job_write(void *user, int y0, int nrows, const float *map, size_t map_stride,
                     const es_planes *pix, char *msg, size_t len) {
  bands_job *j = user;
  for (int i = 0; i < j->nsinks; i++) {
    es_band_sink *k = &j->sinks[i];
    if (!j->live[i]) continue;
    const int rc = k->pixfmt == ES_PIX_NONE
                       ? k->write(k, y0, nrows, map, map_stride, NULL, msg, len)
                       : k->write(k, y0, nrows, NULL, 0, pix, msg, len);
    if (rc != ES_OK) {
      j->write_failed = k->name;
      return rc;
    }
  }
  return ES_OK;
}

/* Closes band sink i once; its status. */
static int close_sink(bands_job *j, int i, int commit, char *msg, size_t len) {
  if (j->closed[i]) return ES_OK;
  j->closed[i] = 1;
  j->live[i] = 0;
  return j->sinks[i].close(&j->sinks[i], commit, msg, len);
}

static int close_stats(bands_job *j, int i, int commit, char *msg, size_t len) {
  if (j->stats_closed[i]) return ES_OK;
  j->stats_closed[i] = 1;
  return j->stats[i].close(&j->stats[i], commit, msg, len);
}

static int job_read(void *user, int y0, int nrows, void *dst, size_t dst_stride, char *msg,
                    size_t len) {
  es_band_source *src = user;
  return src->read(src, y0, nrows, dst, dst_stride, msg, len);
}

static int job_stop(void *user) {
  const bands_job *j = user;
  return j->c->stopped(j->c->user);
}

/* Records the run's failure (the first one said stays). */
static int fail(es_bands_summary *s, int rc, const char *who, const char *msg) {
  if (s->status != ES_OK) return s->status;
  s->status = rc;
  s->failed = who;
  snprintf(s->msg, sizeof s->msg, "%s", msg && *msg ? msg : es_strerror(rc));
  return rc;
}

/* The band sinks opened (a kept one said and dropped); the bands config told what they
 * take. ES_OK, or the failure recorded. */
static int open_sinks(bands_job *j, const es_band_info *info, es_bands_config *bc,
                      es_bands_summary *s) {
  char msg[512] = "";
  int pixfmt = ES_PIX_NONE;
  for (int i = 0; i < j->nsinks; i++) {
    es_band_sink *k = &j->sinks[i];
    if (k->pixfmt != ES_PIX_NONE) {
      /* Checked before the output is created: a band alone cannot know the whole map's
       * range, and one rendering is made for every sink that takes one. */
      if (j->c->render.range_auto) {
        s->param = "range";
        return fail(s, ES_ERR_USAGE, NULL,
                    "range auto: not with bands (it needs the whole map first; use fixed)");
      }
      if (pixfmt != ES_PIX_NONE && pixfmt != k->pixfmt)
        return fail(s, ES_ERR_USAGE, k->name, "one rendering for every output of bands");
    }
    *msg = 0;
    const int rc = k->open(k, info, msg, sizeof msg);
    if (rc == ES_BAND_SINK_KEPT) {
      if (j->c->notice) j->c->notice(j->c->user, k->name, "exists, skipped");
      close_sink(j, i, 0, NULL, 0);
      continue;
    }
    if (rc != ES_OK) return fail(s, rc, k->name, msg);
    j->live[i] = 1;
    if (k->pixfmt == ES_PIX_NONE) {
      bc->want_map = 1;
    } else {
      pixfmt = k->pixfmt;
      bc->render = j->c->render;
      bc->render.format = pixfmt;
    }
  }
  return ES_OK;
}

/* The band sinks committed in order, then the statistics record. */
static void commit(bands_job *j, es_bands_summary *s) {
  char msg[512];
  for (int i = 0; i < j->nsinks && s->status == ES_OK; i++) {
    if (!j->live[i]) continue;
    es_band_sink *k = &j->sinks[i];
    *msg = 0;
    const int rc = close_sink(j, i, 1, msg, sizeof msg);
    if (rc == ES_BAND_SINK_KEPT && j->c->notice)
      j->c->notice(j->c->user, k->name, "exists, skipped");
    else if (rc != ES_OK && rc != ES_BAND_SINK_KEPT)
      fail(s, rc, k->name, msg);
  }
  if (s->status != ES_OK) return;
  es_item it;
  memset(&it, 0, sizeof it);
  it.name = j->src.name;
  it.pts = INT64_MIN;
  it.pts_seconds = NAN;
  it.width = s->width;
  it.height = s->height;
  it.stats = &s->stats;
  for (int i = 0; i < j->nstats; i++) {
    es_sink *k = &j->stats[i];
    *msg = 0;
    int rc = k->write(k, &it, msg, sizeof msg);
    if (rc == ES_OK)
      rc = close_stats(j, i, 1, msg, sizeof msg);
    else
      close_stats(j, i, 0, NULL, 0);
    if (rc != ES_OK) fail(s, rc, k->name, msg);
  }
}

int es_run_bands(const es_bands_run_config *c, es_bands_summary *s) {
  bands_job j;
  es_band_info info;
  es_bands_config bc;
  es_context *ctx = NULL;
  char msg[512] = "";
  int rc;

  memset(s, 0, sizeof *s);
  memset(&j, 0, sizeof j);
  memset(&info, 0, sizeof info);
  j.c = c;
  j.src = c->source;
  j.nsinks = c->nsinks < 0 ? 0 : c->nsinks > ES_BANDS_MAX_SINKS ? ES_BANDS_MAX_SINKS : c->nsinks;
  j.nstats = c->nstats < 0 ? 0 : c->nstats > ES_BANDS_MAX_SINKS ? ES_BANDS_MAX_SINKS : c->nstats;
  memcpy(j.sinks, c->sinks, sizeof j.sinks[0] * (size_t)j.nsinks);
  memcpy(j.stats, c->stats_sinks, sizeof j.stats[0] * (size_t)j.nstats);
  if (c->nsinks > ES_BANDS_MAX_SINKS || c->nstats > ES_BANDS_MAX_SINKS || !j.src.open) {
    fail(s, ES_ERR_USAGE, NULL, "a band run takes one source and at most 4 sinks of each kind");
    goto end;
  }

  if ((rc = j.src.open(&j.src, &info, msg, sizeof msg)) != ES_OK) {
    fail(s, rc, j.src.name, msg);
    goto end;
  }
  s->width = info.width;
  s->height = info.height;
  s->depth = info.depth;

  es_config cfg = c->cfg;
  cfg.gpu_background = 0; /* one large image: every band may go to a GPU */
  if ((rc = es_context_create(&ctx, &cfg, msg, sizeof msg)) != ES_OK) {
    fail(s, rc, NULL, msg);
    goto end;
  }

  es_bands_config_default(&bc);
  bc.width = info.width;
  bc.height = info.height;
  bc.depth = info.depth;
  bc.band_rows = c->band_rows > 0 ? c->band_rows : 0;
  bc.mem_budget = c->mem_budget;
  bc.read = job_read;
  bc.read_user = &j.src;
  {
    es_source_info si;
    es_sink_needs needs;
    memset(&si, 0, sizeof si);
    si.width = info.width;
    si.height = info.height;
    si.depth = info.depth;
    for (int i = 0; i < j.nstats; i++) {
      es_sink *k = &j.stats[i];
      memset(&needs, 0, sizeof needs);
      *msg = 0;
      if ((rc = k->open(k, &si, &needs, msg, sizeof msg)) != ES_OK) {
        fail(s, rc, k->name, msg);
        goto end;
      }
    }
  }
  if (open_sinks(&j, &info, &bc, s) != ES_OK) goto end;
  {
    int live = 0;
    for (int i = 0; i < j.nsinks; i++) live += j.live[i];
    /* Every output kept (-n) and no statistics asked for: nothing to compute. */
    if (!live && j.nsinks > 0 && !j.nstats && !c->want_stats) goto end;
    if (live) {
      bc.write = job_write;
      bc.write_user = &j;
    }
  }
  if (j.nstats || c->want_stats) bc.stats = &s->stats;
  bc.progress = c->progress;
  bc.progress_user = c->user;
  if (c->stopped) {
    bc.stop = job_stop;
    bc.stop_user = &j;
  }
  {
    const double t0 = es_trace_ms();
    s->band_rows = es_bands_rows(ctx, &bc);
    s->nbands = (int)(((int64_t)info.height + s->band_rows - 1) / s->band_rows);
    es_context_describe(ctx, s->device, sizeof s->device);
    if (c->begin) c->begin(c->user, s);
    rc = es_compute_bands(ctx, &bc);
    s->elapsed_s = (es_trace_ms() - t0) / 1e3;
  }
  if (rc != ES_OK) {
    if (rc == ES_ERR_INTERRUPTED)
      fail(s, rc, j.src.name, "interrupted: nothing written");
    else /* the reader's failures are the input's, a writer's its output's */
      fail(s, rc, j.write_failed ? j.write_failed : j.src.name, es_context_error(ctx));
    goto end;
  }
  s->computed = 1;
  es_context_describe(ctx, s->device, sizeof s->device);
  commit(&j, s);
end:
  /* Whatever was not committed is removed: the band sinks' temporaries, the statistics
   * files (a failed band run keeps no record). */
  for (int i = 0; i < j.nsinks; i++) close_sink(&j, i, 0, NULL, 0);
  for (int i = 0; i < j.nstats; i++) close_stats(&j, i, 0, NULL, 0);
  if (j.src.close) j.src.close(&j.src);
  es_context_destroy(&ctx);
  s->exit_code = es_exit_code(s->status);
  return s->status;
}
