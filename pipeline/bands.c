/*
 * bands.c - an image larger than memory, in row bands (es_compute_bands).
 *
 * Band k is output rows [y0, y1) = [k B, min(H, (k + 1) B)); it is computed as the
 * sub-image of input rows [a, b) = [max(0, y0 - r), min(H, y1 + r)). A window around an
 * output row reaches r rows up and down, so every row it reads is a real row of the
 * sub-image, or lies past the image's own top or bottom, where the sub-image's edge is the
 * image's and the border rule (clip, reflect) does what it does for the whole image (a
 * reflection needs at most r rows, and the sub-image has at least r + 1). S is the exact
 * integer sum on every engine, so the map rows are the whole image's, bit for bit.
 *
 * The statistics are not the engine's (it would count the halo rows): each band's output
 * rows are reduced as the engines reduce a whole image, in the same order - per row, H and
 * H^2 summed in x order in doubles (the compute thread, rows on OpenMP threads), then the
 * rows added in row order from 0.0 (the writer; see kernels/cpu.c, kernels/gpu_kernels.cuh)
 * - with integer histograms (the levels' folded from the samples' at the end), and
 * es_stats_finish makes the same fields from the same numbers. So --stats of a band run
 * equals the whole image's to the bit.
 *
 * Threads: one reader (reads band k into slot k % nslot), ncomp compute threads (es_compute
 * on the band, any order) and the caller as writer (statistics, write, progress, in band
 * order); nslot = ncomp + 2 slots, so reading k + 1, computing k and writing k - 1 overlap.
 * The halo rows band k shares with band k - 1 are copied from k - 1's slot, which the
 * reader alone overwrites (with band k - 1 + nslot, after k): every input row is read once,
 * in order.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_pipeline_internal.h"

#define BANDS_DEFAULT_BUDGET ((int64_t)256 << 20)

enum { SLOT_FREE = 0, SLOT_READY, SLOT_COMPUTING, SLOT_DONE };

typedef struct band_slot {
  int state; /* SLOT_*; guarded by bands_run.lock */
  int band;  /* the band it holds (from the reader's fill on); guarded by the lock */
  uint8_t *in;     /* input rows a..b-1; written by the reader, read by compute and writer */
  float *map;      /* rows a..b-1 of the map, or NULL; written by compute, read by writer */
  uint8_t *pix;    /* rows a..b-1 of the rendering, or NULL; as map */
  int pin_in, pin_map, pin_pix; /* page-locked for the GPUs (es_host_pin) */
  /* The band's statistics partials (with stats): written by the compute thread that took
   * the band, after es_compute; read by the writer. */
  double *rowsum, *rowsumsq; /* per output row, H and H^2 summed in x order */
  uint64_t *part;            /* nchunk x (bins + 2^depth): histograms of H and of the raw
                              * samples, one set a chunk of rows; merged into chunk 0 */
  float min, max;
} band_slot;

typedef struct bands_run {
  es_context *ctx;          /* immutable */
  const es_bands_config *bc; /* immutable */
  int W, H, B, r, nbands, nslot;
  size_t in_stride, pix_stride; /* bytes */
  int need_map;             /* the map is computed (want_map or stats) */
  /* Statistics (immutable once running): the parameters es_compute computes the depth
   * with, bins, their scale, and the threads a band's reduction takes. */
  es_params sp;
  int bins, nsample, nchunk;
  double binscale;
  band_slot *slots;
  pthread_mutex_t lock;
  pthread_cond_t cond;      /* any slot changed state, or failed */
  int next_compute;         /* next band a compute thread takes; guarded by lock */
  int failed;               /* first error's status (guarded by lock); stops every thread */
  char msg[ES_ERRLEN];      /* its message; guarded by lock */
} bands_run;

void es_bands_config_default(es_bands_config *bc) {
  if (!bc) return;
  memset(bc, 0, sizeof *bc);
  bc->render.format = ES_PIX_NONE;
}

static int bands_pix_bytes(int fmt) {
  return fmt == ES_PIX_RGB24 ? 3 : fmt == ES_PIX_GRAY16 ? 2 : fmt == ES_PIX_GRAY8 ? 1 : 0;
}

/* Bytes a row of a slot takes: input, map, rendering. */
static int64_t bands_row_bytes(const es_bands_config *bc) {
  int need_map = bc->want_map || bc->stats;
  return (int64_t)bc->width * ((bc->depth == 16 ? 2 : 1) + (need_map ? 4 : 0) +
                               bands_pix_bytes(bc->render.format));
}

static int bands_ncomp(const es_context *ctx) {
  int g = es_context_gpu_count(ctx);
  return g > 1 ? g : 1;
}

int es_bands_rows(const es_context *ctx, const es_bands_config *bc) {
  if (!ctx || !bc || bc->width < 1 || bc->height < 1) return 1;
  if (bc->band_rows > 0) return bc->band_rows < bc->height ? bc->band_rows : bc->height;
  const int r = (es_context_config(ctx)->params.window - 1) / 2;
  /* The default budget is per compute thread: each GPU keeps its own band in flight. */
  const int ncomp = bands_ncomp(ctx);
  const int64_t budget = bc->mem_budget > 0 ? bc->mem_budget : BANDS_DEFAULT_BUDGET * ncomp;
  const int64_t per_slot = budget / (ncomp + 2);
  int64_t rows = per_slot / bands_row_bytes(bc) - 2 * (int64_t)r;
  if (rows < 1) rows = 1;
  if (rows > bc->height) rows = bc->height;
  return (int)rows;
}

/* Records the first failure and wakes everyone. Called with the lock held. */
static void bands_fail_locked(bands_run *R, int status, const char *msg) {
  if (!R->failed) {
    R->failed = status;
    snprintf(R->msg, sizeof R->msg, "%s", msg && *msg ? msg : es_strerror(status));
  }
  pthread_cond_broadcast(&R->cond);
}
static void bands_fail(bands_run *R, int status, const char *msg) {
  pthread_mutex_lock(&R->lock);
  bands_fail_locked(R, status, msg);
  pthread_mutex_unlock(&R->lock);
}

static void band_rows_of(const bands_run *R, int k, int *y0, int *y1, int *a, int *b) {
  *y0 = k * R->B;
  *y1 = *y0 + R->B < R->H ? *y0 + R->B : R->H;
  *a = *y0 - R->r > 0 ? *y0 - R->r : 0;
  *b = *y1 + R->r < R->H ? *y1 + R->r : R->H;
}

static void *bands_reader_main(void *arg) {
  bands_run *R = arg;
  const es_bands_config *bc = R->bc;
  char msg[ES_ERRLEN];
  int prev_a = 0, prev_b = 0; /* input rows of the band before */
  for (int k = 0; k < R->nbands; k++) {
    band_slot *s = &R->slots[k % R->nslot];
    pthread_mutex_lock(&R->lock);
    while (!R->failed && s->state != SLOT_FREE) pthread_cond_wait(&R->cond, &R->lock);
    int stop = R->failed;
    pthread_mutex_unlock(&R->lock);
    if (stop) break;
    if (bc->stop && bc->stop(bc->stop_user)) {
      bands_fail(R, ES_ERR_INTERRUPTED, "interrupted");
      break;
    }
    int y0, y1, a, b;
    band_rows_of(R, k, &y0, &y1, &a, &b);
    int from = a;
    if (k > 0 && prev_b > a) { /* the halo shared with band k - 1: from its slot */
      const band_slot *p = &R->slots[(k - 1) % R->nslot];
      memcpy(s->in, p->in + (size_t)(a - prev_a) * R->in_stride,
             (size_t)(prev_b - a) * R->in_stride);
      from = prev_b;
    }
    if (b > from) {
      msg[0] = 0;
      int rc = bc->read(bc->read_user, from, b - from, s->in + (size_t)(from - a) * R->in_stride,
                        R->in_stride, msg, sizeof msg);
      if (rc) {
        bands_fail(R, rc, msg);
        break;
      }
    }
    prev_a = a;
    prev_b = b;
    pthread_mutex_lock(&R->lock);
    s->band = k;
    s->state = SLOT_READY;
    pthread_cond_broadcast(&R->cond);
    pthread_mutex_unlock(&R->lock);
  }
  return NULL;
}

/* A band's statistics partials into its slot (a compute thread, after es_compute): rows
 * split in nchunk chunks on OpenMP threads, each row's sums in x order (independent of the
 * split), integer histograms merged. */
static void bands_stats_band(const bands_run *R, band_slot *s, int off, int nrows, int depth) {
  const int W = R->W, nchunk = nrows < R->nchunk ? nrows : R->nchunk;
  const size_t per = (size_t)R->bins + (size_t)R->nsample;
  float cmin[ES_MAX_GPUS * 8], cmax[ES_MAX_GPUS * 8];
  memset(s->part, 0, sizeof *s->part * per * (size_t)R->nchunk);
#ifdef ES_HAVE_OPENMP
#pragma omp parallel for num_threads(nchunk) schedule(static, 1)
#endif
  for (int c = 0; c < nchunk; c++) {
    const int r0 = (int)((int64_t)nrows * c / nchunk), r1 = (int)((int64_t)nrows * (c + 1) / nchunk);
    uint64_t *hist = s->part + per * (size_t)c, *sh = hist + R->bins;
    float mn = INFINITY, mx = -INFINITY;
    for (int y = r0; y < r1; y++) {
      const float *row = s->map + (size_t)(off + y) * W;
      double rs = 0.0, rss = 0.0;
      for (int x = 0; x < W; x++) {
        const float hv = row[x];
        if (hv < mn) mn = hv;
        if (hv > mx) mx = hv;
        rs += hv;
        rss += (double)hv * (double)hv;
        hist[es_stats_bin(hv, R->binscale, R->bins)]++;
      }
      s->rowsum[y] = rs;
      s->rowsumsq[y] = rss;
      const uint8_t *irow = s->in + (size_t)(off + y) * R->in_stride;
      if (depth == 16) {
        for (int x = 0; x < W; x++) { /* rows need not be aligned */
          uint16_t v;
          memcpy(&v, irow + 2 * (size_t)x, 2);
          sh[v]++;
        }
      } else {
        for (int x = 0; x < W; x++) sh[irow[x]]++;
      }
    }
    cmin[c] = mn;
    cmax[c] = mx;
  }
  s->min = INFINITY;
  s->max = -INFINITY;
  for (int c = 0; c < nchunk; c++) {
    if (cmin[c] < s->min) s->min = cmin[c];
    if (cmax[c] > s->max) s->max = cmax[c];
    if (c > 0)
      for (size_t k = 0; k < per; k++) s->part[k] += s->part[per * (size_t)c + k];
  }
}

static void *bands_compute_main(void *arg) {
  bands_run *R = arg;
  const es_bands_config *bc = R->bc;
  for (;;) {
    pthread_mutex_lock(&R->lock);
    int k = R->next_compute;
    if (R->failed || k >= R->nbands) {
      pthread_mutex_unlock(&R->lock);
      break;
    }
    R->next_compute++;
    band_slot *s = &R->slots[k % R->nslot];
    while (!R->failed && !(s->state == SLOT_READY && s->band == k))
      pthread_cond_wait(&R->cond, &R->lock);
    if (R->failed) {
      pthread_mutex_unlock(&R->lock);
      break;
    }
    s->state = SLOT_COMPUTING;
    pthread_mutex_unlock(&R->lock);
    int y0, y1, a, b;
    band_rows_of(R, k, &y0, &y1, &a, &b);
    es_image img = {s->in, R->W, b - a, R->in_stride, bc->depth};
    es_planes pix;
    memset(&pix, 0, sizeof pix);
    pix.plane[0] = s->pix;
    pix.stride[0] = R->pix_stride;
    int rc = es_compute(R->ctx, &img, s->map, (size_t)R->W, NULL,
                        bc->render.format != ES_PIX_NONE ? &bc->render : NULL,
                        bc->render.format != ES_PIX_NONE ? &pix : NULL);
    if (!rc && bc->stats) bands_stats_band(R, s, y0 - a, y1 - y0, bc->depth);
    pthread_mutex_lock(&R->lock);
    if (rc) {
      char m[ES_ERRLEN];
      snprintf(m, sizeof m, "rows %d..%d: %s", y0, y1 - 1, es_context_error(R->ctx));
      bands_fail_locked(R, rc, m);
    } else {
      s->state = SLOT_DONE;
      pthread_cond_broadcast(&R->cond);
    }
    pthread_mutex_unlock(&R->lock);
    if (rc) break;
  }
  return NULL;
}

static int bands_check(es_context *ctx, const es_bands_config *bc) {
  if (!bc || !bc->read || bc->width < 1 || bc->height < 1 ||
      (bc->depth != 8 && bc->depth != 16) || bc->band_rows < 0 || bc->mem_budget < 0) {
    es_ctx_set_error(ctx, "bands: an image of %d x %d, depth %d, band rows %d, and a reader",
                     bc ? bc->width : 0, bc ? bc->height : 0, bc ? bc->depth : 0,
                     bc ? bc->band_rows : 0);
    return ES_ERR_USAGE;
  }
  int f = bc->render.format;
  if (f != ES_PIX_NONE && (!bands_pix_bytes(f) || bc->render.range_auto)) {
    es_ctx_set_error(ctx, "bands: a rendering in bands is RGB24, GRAY8 or GRAY16 of a fixed "
                     "range (an auto range needs the whole map first)");
    return ES_ERR_USAGE;
  }
  if ((bc->want_map || f != ES_PIX_NONE) && !bc->write) {
    es_ctx_set_error(ctx, "bands: a map or rendering asked for without a writer");
    return ES_ERR_USAGE;
  }
  return ES_OK;
}

/* The whole image's statistics, added up by the writer band by band in row order. */
typedef struct bands_total {
  es_stats_acc acc;
  uint64_t *hist, *sample_hist, *level_hist;
} bands_total;

/* The run's sizes and statistics parameters, from the context and the config. */
static void bands_setup(bands_run *R, es_context *ctx, const es_bands_config *bc) {
  R->ctx = ctx;
  R->bc = bc;
  R->W = bc->width;
  R->H = bc->height;
  R->r = (es_context_config(ctx)->params.window - 1) / 2;
  R->B = es_bands_rows(ctx, bc);
  R->nbands = (int)(((int64_t)R->H + R->B - 1) / R->B);
  const int want_ncomp = bands_ncomp(ctx);
  R->nslot = want_ncomp + 2;
  R->need_map = bc->want_map || bc->stats;
  R->in_stride = (size_t)R->W * (bc->depth == 16 ? 2 : 1);
  R->pix_stride = (size_t)R->W * (size_t)bands_pix_bytes(bc->render.format);
  R->sp = es_context_config(ctx)->params;
  es_params_for_depth(&R->sp, bc->depth);
  R->bins = es_context_config(ctx)->stats_bins;
  R->binscale = es_stats_binscale(&R->sp, R->bins);
  R->nsample = 1 << bc->depth;
  /* A band's reduction runs on the cores a compute thread may take (all of them over the
   * GPUs' threads), at most ES_MAX_GPUS * 8 chunks. */
  R->nchunk = 1;
#ifdef ES_HAVE_OPENMP
  R->nchunk = omp_get_num_procs() / want_ncomp;
#endif
  if (R->nchunk < 1) R->nchunk = 1;
  if (R->nchunk > ES_MAX_GPUS * 8) R->nchunk = ES_MAX_GPUS * 8;
}

/* Every slot's buffers (page-locked for the GPUs) and the whole image's histograms: 0, or
 * -1 out of memory (what was allocated is freed by bands_free). */
static int bands_alloc(bands_run *R, bands_total *T, int rows_max) {
  const es_bands_config *bc = R->bc;
  R->slots = calloc((size_t)R->nslot, sizeof *R->slots);
  if (!R->slots) return -1;
  for (int i = 0; i < R->nslot; i++) {
    band_slot *s = &R->slots[i];
    s->band = -1;
    size_t nin = R->in_stride * (size_t)rows_max, nmap = sizeof(float) * R->W * (size_t)rows_max,
           npix = R->pix_stride * (size_t)rows_max;
    if (!(s->in = malloc(nin))) return -1;
    s->pin_in = es_host_pin(s->in, nin);
    if (R->need_map) {
      if (!(s->map = malloc(nmap))) return -1;
      s->pin_map = es_host_pin(s->map, nmap);
    }
    if (npix) {
      if (!(s->pix = malloc(npix))) return -1;
      s->pin_pix = es_host_pin(s->pix, npix);
    }
  }
  if (bc->stats) {
    for (int i = 0; i < R->nslot; i++) {
      band_slot *s = &R->slots[i];
      s->rowsum = malloc(sizeof *s->rowsum * (size_t)R->B);
      s->rowsumsq = malloc(sizeof *s->rowsumsq * (size_t)R->B);
      s->part = malloc(sizeof *s->part * ((size_t)R->bins + R->nsample) * (size_t)R->nchunk);
      if (!s->rowsum || !s->rowsumsq || !s->part) return -1;
    }
    T->hist = calloc((size_t)R->bins, sizeof *T->hist);
    T->sample_hist = calloc((size_t)R->nsample, sizeof *T->sample_hist);
    T->level_hist = calloc((size_t)R->sp.levels, sizeof *T->level_hist);
    if (!T->hist || !T->sample_hist || !T->level_hist) return -1;
    T->acc.count = (int64_t)R->W * R->H;
  }
  return 0;
}

/* What bands_alloc made, also where it stopped halfway (NULL pointers, pins not taken). */
static void bands_free(bands_run *R, bands_total *T) {
  if (R->slots) {
    for (int i = 0; i < R->nslot; i++) {
      band_slot *s = &R->slots[i];
      if (s->pin_in) es_host_unpin(s->in);
      if (s->pin_map) es_host_unpin(s->map);
      if (s->pin_pix) es_host_unpin(s->pix);
      free(s->in);
      free(s->map);
      free(s->pix);
      free(s->rowsum);
      free(s->rowsumsq);
      free(s->part);
    }
  }
  free(R->slots);
  free(T->hist);
  free(T->sample_hist);
  free(T->level_hist);
}

/* The caller's part: each band's statistics added, the band written and its slot freed, in
 * band order, until the last band, a failure or a stop. */
static void bands_write_all(bands_run *R, bands_total *T) {
  const es_bands_config *bc = R->bc;
  for (int k = 0; k < R->nbands; k++) {
    band_slot *s = &R->slots[k % R->nslot];
    pthread_mutex_lock(&R->lock);
    while (!R->failed && !(s->state == SLOT_DONE && s->band == k))
      pthread_cond_wait(&R->cond, &R->lock);
    int stop = R->failed;
    pthread_mutex_unlock(&R->lock);
    if (stop) break;
    int y0, y1, a, b;
    band_rows_of(R, k, &y0, &y1, &a, &b);
    const size_t off = (size_t)(y0 - a);
    if (bc->stats) { /* rows in order, from 0.0, as the engines add them */
      for (int y = 0; y < y1 - y0; y++) {
        T->acc.sum += s->rowsum[y];
        T->acc.sumsq += s->rowsumsq[y];
      }
      if (s->min < T->acc.min) T->acc.min = s->min;
      if (s->max > T->acc.max) T->acc.max = s->max;
      for (int k = 0; k < R->bins; k++)
        T->hist[k] += s->part[k];
      for (int k = 0; k < R->nsample; k++)
        T->sample_hist[k] += s->part[R->bins + k];
    }
    if (bc->write) {
      es_planes pix;
      memset(&pix, 0, sizeof pix);
      pix.plane[0] = s->pix ? s->pix + off * R->pix_stride : NULL;
      pix.stride[0] = R->pix_stride;
      char wm[ES_ERRLEN] = "";
      int wrc = bc->write(bc->write_user, y0, y1 - y0, bc->want_map ? s->map + off * R->W : NULL,
                          (size_t)R->W, s->pix ? &pix : NULL, wm, sizeof wm);
      if (wrc) {
        bands_fail(R, wrc, wm);
        break;
      }
    }
    if (bc->progress) bc->progress(bc->progress_user, y1, R->H);
    pthread_mutex_lock(&R->lock);
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&R->cond);
    pthread_mutex_unlock(&R->lock);
    if (bc->stop && bc->stop(bc->stop_user) && k + 1 < R->nbands) {
      bands_fail(R, ES_ERR_INTERRUPTED, "interrupted");
      break;
    }
  }
}

/* The whole image's es_stats from the totals, as the engines make them. */
static void bands_finish_stats(const bands_run *R, bands_total *T) {
  const es_bands_config *bc = R->bc;
  es_stats *st = bc->stats;
  /* The levels' histogram from the samples' (es_quantize maps each sample to one level:
   * the same integer counts the engines make). */
  for (int v = 0; v < R->nsample; v++)
    T->level_hist[es_quantize((uint32_t)v, (uint32_t)R->sp.levels, bc->depth)] += T->sample_hist[v];
  memset(st->hist, 0, sizeof st->hist);
  memcpy(st->hist, T->hist, sizeof *T->hist * (size_t)R->bins);
  st->bins = R->bins;
  es_stats_finish(st, &T->acc, T->level_hist, R->sp.levels, T->sample_hist, bc->depth);
}

int es_compute_bands(es_context *ctx, const es_bands_config *bc) {
  bands_run R;
  bands_total T = {{0.0, 0.0, INFINITY, -INFINITY, 0}, NULL, NULL, NULL};
  pthread_t reader, comp[ES_MAX_GPUS];
  int ncomp = 0, reader_started = 0, rc;
  char msg[ES_ERRLEN];
  if (!ctx) return ES_ERR_USAGE;
  if ((rc = bands_check(ctx, bc)) != ES_OK) return rc;
  memset(&R, 0, sizeof R);
  pthread_mutex_init(&R.lock, NULL);
  pthread_cond_init(&R.cond, NULL);
  bands_setup(&R, ctx, bc);
  const int want_ncomp = R.nslot - 2; /* bands_setup: a slot a compute thread, and two */
  const int rows_max = (R.B + 2 * R.r < R.H ? R.B + 2 * R.r : R.H);
  rc = ES_ERR_NOMEM;
  snprintf(msg, sizeof msg, "out of memory for bands of %d rows of %d pixels", rows_max, R.W);
  if (bands_alloc(&R, &T, rows_max) != 0) goto end;
  rc = ES_OK;
  msg[0] = 0;
  if (pthread_create(&reader, NULL, bands_reader_main, &R) != 0) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, sizeof msg, "cannot start the band reader thread");
    goto end;
  }
  reader_started = 1;
  for (; ncomp < want_ncomp; ncomp++)
    if (pthread_create(&comp[ncomp], NULL, bands_compute_main, &R) != 0) break;
  if (ncomp == 0) {
    bands_fail(&R, ES_ERR_NOMEM, "cannot start a band compute thread");
    goto join;
  }
  bands_write_all(&R, &T); /* the caller writes, in band order */
join:
  if (reader_started) pthread_join(reader, NULL);
  for (int i = 0; i < ncomp; i++) pthread_join(comp[i], NULL);
  rc = R.failed;
  if (rc) snprintf(msg, sizeof msg, "%s", R.msg);
  if (!rc && bc->stats) bands_finish_stats(&R, &T);
end:
  bands_free(&R, &T);
  pthread_mutex_destroy(&R.lock);
  pthread_cond_destroy(&R.cond);
  if (rc) es_ctx_set_error(ctx, "%s", msg[0] ? msg : es_strerror(rc));
  return rc;
}
