/*
 * cpu.c - the CPU engine: OpenMP over row bands, sliding histograms, exact fixed-point S.
 *
 * Each band keeps a ring of K + 1 quantized, padded rows (reflected levels, or the sentinel
 * level L for clip, counted in an extra bin and subtracted: N = Ntot - c_L and
 * S = S_all - f(c_L), so edges need no branch). Two algorithms, chosen per (K, L, shape)
 * by cpu_use_ph below:
 *   - Huang (any shape): per pixel, each window row drops its leftmost pixel and takes a
 *     new one on the right: 2 K histogram updates, each moving S by a table increment.
 *     Square windows read the window column-major (band_huang_sq: K levels per padded
 *     column, two pointers), disks through one pointer per window row (band_huang).
 *     Images no taller than the window slide each distinct image row once, weighted
 *     (band_short).
 *   - Perreault-Hebert (square): column histograms slid down a row at a time; per pixel
 *     the window histogram changes by two column histograms and S is summed over L bins.
 * Either way S is the exact integer sum of flog[c_k], so the result is the same bits for
 * any algorithm, band split or thread count, and as the GPU's (es_entropy_value).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_kernels.h"

/* Read-only during the parallel loop, except rowsum/rowsumsq: each row written by the one
 * thread that computes it. */
typedef struct cpu_ctx {
  const es_tables *tables;
  es_window win;
  int w, h, K, r, R, levels, depth, border;
  int win_square;        /* every window row has half width r */
  const uint8_t *data;
  size_t stride;
  double oscale;
  uint64_t *dinc;        /* dinc[c] = flog[c + 1] - flog[c], c = 0..area */
  uint16_t lut8[256];    /* 8-bit sample -> level */
  float *map;            /* output map (caller's or temporary), or NULL */
  size_t map_stride;
  const es_job *job;     /* rendering band by band (chunk_rows > 0): its planes */
  int chunk_rows;        /* rows per cpu_thread.rows, even; 0: not rendered by bands */
  int want_stats, want_minmax, level_hist_wanted, sample_hist_wanted;
  double binscale;
  int bins;
  double *rowsum, *rowsumsq; /* per row, summed in row order at the end */
  /* The image's mask, or NULL. With one, the band kernels only write H (want_stats and
   * want_minmax are 0 while they run) and cpu_row_mask takes each finished row's
   * statistics over its inside pixels and writes NaN outside: the map (caller's or
   * temporary) or the rendering's rows always exist then. */
  const uint8_t *mask;
  size_t mask_stride;
  int mask_stats, mask_minmax, mask_computed;
} cpu_ctx;

/* Owned by one OpenMP thread during the loop; reduced in index order afterwards. */
typedef struct cpu_thread {
  void *ring;            /* (K + 1) padded rows of levels */
  uint16_t *hist;        /* L + 1 bins (window histogram) */
  uint16_t *hists;       /* square Huang: ES_CPU_SEGS interleaved (slide_segs), or NULL */
  uint16_t *colh;        /* Perreault-Hebert column histograms, or NULL */
  void *colbuf;          /* square Huang: K levels per padded column, or NULL */
  uint64_t *level_hist;  /* L bins, or NULL */
  uint64_t *sample_hist; /* 2^depth bins of the raw samples (global_entropy), or NULL: the
                          * level histogram is theirs (L = 2^depth) or no statistics */
  uint64_t bins[ES_STATS_MAX_BINS];
  float min, max;
  float *rows;           /* rendering by bands, no map: chunk_rows rows from row cy0 */
  int cy0;
  int skip_eq;           /* square Huang: skip equal leaving/entering levels on this row
                          * (chosen from the previous row's share of equal pairs) */
} cpu_thread;

typedef uint16_t cpu_v8u16 __attribute__((vector_size(16)));

/* Counts the raw samples of image rows [y0, y1) into t->sample_hist (global_entropy), the
 * inside pixels' only. */
static void cpu_sample_hist(const cpu_ctx *c, cpu_thread *t, int y0, int y1) {
  for (int y = y0; y < y1; y++) {
    const uint8_t *row = c->data + (size_t)y * c->stride;
    const uint8_t *m = c->mask ? c->mask + (size_t)y * c->mask_stride : NULL;
    if (c->depth == 8) {
      for (int x = 0; x < c->w; x++)
        if (!m || m[x]) t->sample_hist[row[x]]++;
    } else {
      for (int x = 0; x < c->w; x++) { /* rows need not be aligned */
        uint16_t v;
        memcpy(&v, row + 2 * (size_t)x, 2);
        if (!m || m[x]) t->sample_hist[v]++;
      }
    }
  }
}

/* sum_k flog[win[k]] over L bins: plain scalar loads with four independent sums. gcc's
 * vectorizer turns this loop into emulated gathers (movq/movhps pairs), which callgrind
 * showed costs more instructions than it saves, so it is kept scalar. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static uint64_t cpu_sum_flog(const uint64_t *flog, const uint16_t *win, int L) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int k = 0;
  for (; k + 3 < L; k += 4) {
    s0 += flog[win[k]];
    s1 += flog[win[k + 1]];
    s2 += flog[win[k + 2]];
    s3 += flog[win[k + 3]];
  }
  for (; k < L; k++) s0 += flog[win[k]];
  return (s0 + s1) + (s2 + s3);
}

/* How many of the window columns d in [lo, hi] read image column x of a row of w under
 * reflect: es_reflect maps d to x where d = x or d = 2w - 1 - x modulo 2w. O(1), so a
 * window wider than the image costs per image column, not per window column. */
static int cpu_floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int cpu_count_mod(int lo, int hi, int a, int m) {
  return cpu_floordiv(hi - a, m) - cpu_floordiv(lo - 1 - a, m);
}
static int cpu_reflect_count(int lo, int hi, int x, int w) {
  return cpu_count_mod(lo, hi, x, 2 * w) + cpu_count_mod(lo, hi, 2 * w - 1 - x, 2 * w);
}

/* The row of the map that row y of the band is computed into: the caller's or temporary
 * map, or the thread's chunk of rows when rendering by bands, or NULL. */
static inline float *cpu_map_row(const cpu_ctx *c, const cpu_thread *t, int y) {
  if (c->map) return c->map + (size_t)y * c->map_stride;
  if (t->rows) return t->rows + (size_t)(y - t->cy0) * c->w;
  return NULL;
}

/* Row y of a band ending at y1 is computed: when rendering by bands, render the thread's
 * chunk once it is full or the band ends. Chunks start at the band's first row and hold an
 * even number of rows, and YUV420P bands start on even rows (es_cpu_run), so no chunk splits
 * the pair of image rows of a chroma row. The format was checked before the loop. */
static void cpu_row_mask(const cpu_ctx *c, cpu_thread *t, int y);
static inline void cpu_row_done(const cpu_ctx *c, cpu_thread *t, int y, int y1) {
  if (c->mask) cpu_row_mask(c, t, y);
  if (!t->rows || (y + 1 - t->cy0 < c->chunk_rows && y + 1 < y1)) return;
  const es_job *j = c->job;
  (void)es_cpu_render_rows(t->rows, (size_t)c->w, t->cy0, y + 1, &j->in, &j->params,
                           &j->render, &j->pix);
  t->cy0 = y + 1;
}

/* Row y is computed, with a mask: its inside pixels go into the statistics (as emit does
 * without a mask), the others become NaN unless mask_computed. */
static void cpu_row_mask(const cpu_ctx *c, cpu_thread *t, int y) {
  float *mrow = cpu_map_row(c, t, y);
  const uint8_t *m = c->mask + (size_t)y * c->mask_stride;
  double rs = 0.0, rss = 0.0;
  for (int x = 0; x < c->w; x++) {
    if (!m[x]) {
      if (!c->mask_computed) mrow[x] = NAN;
      continue;
    }
    float hv = mrow[x];
    if (c->mask_minmax) {
      if (hv < t->min) t->min = hv;
      if (hv > t->max) t->max = hv;
    }
    if (c->mask_stats) {
      rs += hv;
      rss += (double)hv * (double)hv;
      t->bins[es_stats_bin(hv, c->binscale, c->bins)]++;
    }
  }
  if (c->mask_stats) {
    c->rowsum[y] = rs;
    c->rowsumsq[y] = rss;
  }
}

/* Square Huang rows are slid as this many independent segments at once (slide_segs): on a
 * photograph (1080p, K=9, L=256, one thread) 3, 4, 6 and 8 took 22.3, 19.8, 21.1 and
 * 21.0 ms against 25.0 for one (more segments spill their sums and pointers to the stack),
 * on random levels 18.8, 16.6, 18.0, 17.6 against 19.0 (tools/BENCHMARKS.md Z1). Each
 * segment is at least cpu_seg_min(K) columns: its own first window costs K^2 updates in
 * and K^2 out, about 2 K pixels' work. */
#define ES_CPU_SEGS 4
static int cpu_seg_min(int K) { return 4 * K > 32 ? 4 * K : 32; }

#define ES_LT uint8_t
#define ES_FN(name) name##_u8
#include "cpu_band_template.h"
#undef ES_LT
#undef ES_FN
#define ES_LT uint16_t
#define ES_FN(name) name##_u16
#include "cpu_band_template.h"
#undef ES_LT
#undef ES_FN
#define ES_LT uint32_t
#define ES_FN(name) name##_u32
#include "cpu_band_template.h"
#undef ES_LT
#undef ES_FN

/* The inside pixels of the image's mask. */
static int64_t cpu_mask_count(const cpu_ctx *c) {
  int64_t n = 0;
  for (int y = 0; y < c->h; y++) {
    const uint8_t *m = c->mask + (size_t)y * c->mask_stride;
    for (int x = 0; x < c->w; x++) n += m[x] != 0;
  }
  return n;
}

/* Cost model in instructions per pixel, from callgrind on 400^2 random levels (wall clock
 * on this shared 2-core machine was too noisy to fit; tools/BENCHMARKS.md has the table):
 * Huang ~16.5 K for the unrolled K <= 9 kernels and ~19 K above, whatever L is;
 * Perreault-Hebert ~40 + 3.9 L, whatever K is. So PH for small L against K: K=5 L<=10,
 * K=9 L<=27, K=25 L<=111, K=75 L=256. Huang's updates also wait on each other through the
 * histogram, so where the counts are close this leans to Huang only slightly wrongly.
 * Perreault-Hebert only for square windows and rows long enough to pay for the columns. */
/* Images at most a quarter as tall as the window go through band_short: reflect repeats
 * each row K / h times or more there, and clip leaves most window rows out. Nearer K the
 * weighted updates cost more than the repeats save (disk windows at h = K: 10-30%). */
static int cpu_short(const es_params *p, int height) { return 4 * height <= p->window; }

static int cpu_use_ph(const es_params *p, int width, int height) {
  const char *force = getenv("ES_CPU_ALGO"); /* "huang" / "ph": benchmarks and tests */
  if (p->shape != ES_SHAPE_SQUARE) return 0;
  if (force && (!strcmp(force, "huang") || !strcmp(force, "rows"))) return 0;
  if (force && !strcmp(force, "ph")) return 1;
  if (width < 2 * p->window) return 0;
  double huang = (p->window <= 9 ? 16.5 : 19.0) * p->window;
  double ph = 40.0 + 3.9 * p->levels;
  /* Short images: band_short slides at most h rows, while Perreault-Hebert still puts K
   * rows into its column histograms per band (about 8 instructions a level), spread over
   * only h rows. A 1 x 4000000 image at K = 255, L = 16, reflect took 9.7 s in PH. */
  if (cpu_short(p, height)) huang = (p->window <= 9 ? 16.5 : 19.0) * height;
  if (height < p->window) ph += 8.0 * p->window / height;
  return ph < huang;
}

/* ES_CPU_ALGO=rows: square windows through the row-pointer Huang (tests compare it). */
static int cpu_rows_algo(void) {
  const char *force = getenv("ES_CPU_ALGO");
  return force && !strcmp(force, "rows");
}

static int cpu_threads(int threads) {
#ifdef ES_HAVE_OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#else
  threads = 1;
#endif
  return threads < 1 ? 1 : threads;
}

void es_cpu_scratch_free(es_cpu_scratch *s) {
  free(s->map);
  s->map = NULL;
  s->cap = 0;
}

int es_cpu_run_threads(const es_job *job, int threads) {
  int nt = cpu_threads(threads);
  if (!job) return nt;
  /* threads <= 0 (all cores) on a small frame: waking threads costs more than it saves
   * (on a loaded machine a sleeping worker can cost a scheduler tick), so use fewer. An
   * explicit count is obeyed (tests use it); the split never changes the results. */
  int K = job->params.window;
  int64_t work = (int64_t)job->in.width * job->in.height * (K < 8 ? 8 : K);
  if (threads <= 0 && work / 262144 + 1 < nt) nt = (int)(work / 262144 + 1);
  return nt;
}

static int cpu_run_levels(const es_job *job, int threads, char *msg, size_t msglen);

int es_cpu_run(const es_job *job, int threads, char *msg, size_t msglen) {
  int rc = es_job_check(job, msg, msglen);
  if (rc || job->in.depth != 32) return rc ? rc : cpu_run_levels(job, threads, msg, msglen);
  /* Float samples: their levels as 16-bit samples and their inside as a mask
   * (es_float_levels, the one conversion), then the same engine. */
  const size_t n = (size_t)job->in.width * job->in.height;
  uint16_t *samples = malloc(n * sizeof *samples);
  uint8_t *mask = malloc(n);
  if (!samples || !mask) {
    rc = ES_ERR_NOMEM;
    if (msg) snprintf(msg, msglen, "out of memory for a %dx%d image", job->in.width, job->in.height);
    goto end;
  }
  es_float_levels(&job->in, &job->params, samples, mask);
  es_job lj = *job;
  lj.in.data = samples;
  lj.in.stride = (size_t)job->in.width * sizeof *samples;
  lj.in.depth = 16;
  lj.in.mask = mask;
  lj.in.mask_stride = (size_t)job->in.width;
  rc = cpu_run_levels(&lj, threads, msg, msglen);
  /* The raw samples of a float image are its levels (docs/spec.md). */
  if (rc == ES_OK && job->stats) job->stats->global_entropy = job->stats->global_entropy_levels;
end:
  free(samples);
  free(mask);
  return rc;
}

/* How one run's work is laid out: threads, the kernel and the ring's element. */
typedef struct cpu_plan {
  int nt;
  int use_ph, use_short;
  int by_bands; /* each thread renders its rows as they come (no full-size map) */
  size_t lsz;   /* ring element: 1, 2 or 4 bytes */
  size_t pw;    /* a padded row of the ring, in elements */
} cpu_plan;

/* The shared context of one run from the job: sizes, parameters and what is wanted. */
static void cpu_ctx_init(cpu_ctx *c, const es_job *job) {
  const es_params *p = &job->params;
  memset(c, 0, sizeof *c);
  c->tables = es_tables_get();
  es_window_make(&c->win, p->window, p->shape);
  c->w = job->in.width;
  c->h = job->in.height;
  c->K = p->window;
  c->r = c->win.r;
  c->R = c->win.r;
  c->levels = p->levels;
  c->depth = job->in.depth;
  c->border = p->border;
  c->win_square = p->shape == ES_SHAPE_SQUARE;
  c->data = job->in.data;
  c->stride = job->in.stride;
  c->mask = job->in.mask;
  c->mask_stride = job->in.mask_stride;
  c->mask_computed = p->mask_computed;
  c->oscale = es_out_scale(p->base);
  for (int v = 0; v < 256; v++)
    c->lut8[v] = (uint16_t)es_quantize((uint32_t)v, (uint32_t)p->levels, 8);
  int render = job->render.format != ES_PIX_NONE;
  const int stats = job->stats != NULL, minmax = stats || (render && job->render.range_auto);
  c->want_stats = stats && !c->mask;
  c->want_minmax = minmax && !c->mask;
  c->mask_stats = stats && c->mask;
  c->mask_minmax = minmax && c->mask;
  c->level_hist_wanted = stats;
  /* With a mask the level histogram differs from the samples' (masked samples are the
   * sentinel level), so the samples always take their own. */
  c->sample_hist_wanted = stats && (c->mask || es_stats_sample_hist_own(p->levels, c->depth));
  c->bins = job->stats_bins;
  c->binscale = stats ? es_stats_binscale(p, c->bins) : 0.0;
  c->map = job->map;
  c->map_stride = job->map_stride;
}

/* A mask needs the rows of H to take their statistics from (cpu_row_mask), and a rendering
 * of the range auto the whole map: the job's scratch, or *tmpmap. ES_OK or ES_ERR_NOMEM. */
static int cpu_map_buffer(cpu_ctx *c, const es_job *job, float **tmpmap) {
  size_t need = (size_t)c->w * c->h;
  es_cpu_scratch *sc = job->scratch;
  if (sc && sc->cap < need) {
    es_cpu_scratch_free(sc);
    sc->map = malloc(need * sizeof *sc->map);
    if (!sc->map) return ES_ERR_NOMEM;
    sc->cap = need;
  }
  if (sc) {
    c->map = sc->map;
  } else {
    *tmpmap = malloc(need * sizeof **tmpmap);
    if (!*tmpmap) return ES_ERR_NOMEM;
    c->map = *tmpmap;
  }
  c->map_stride = (size_t)c->w;
  return ES_OK;
}

/* Each thread's ring, histograms and the buffers its kernel needs: ES_OK or ES_ERR_NOMEM
 * (what was allocated is freed by cpu_threads_free). */
static int cpu_threads_alloc(const cpu_ctx *c, cpu_thread *ts, const cpu_plan *pl,
                             const es_params *p) {
  for (int i = 0; i < pl->nt; i++) {
    cpu_thread *t = &ts[i];
    t->min = INFINITY;
    t->max = -INFINITY;
    t->ring = malloc((size_t)(pl->use_short ? c->h : c->K + 1) * pl->pw * pl->lsz);
    t->hist = calloc((size_t)p->levels + 8, sizeof *t->hist); /* PH pads to 8 lanes */
    if (!t->ring || !t->hist) return ES_ERR_NOMEM;
    if (!pl->use_ph && !pl->use_short && p->shape == ES_SHAPE_SQUARE && !cpu_rows_algo()) {
      t->colbuf = malloc((size_t)(c->w + 2 * c->R) * c->K * pl->lsz);
      t->hists = calloc((size_t)ES_CPU_SEGS * ((size_t)p->levels + 1), sizeof *t->hists);
      if (!t->colbuf || !t->hists) return ES_ERR_NOMEM;
    }
    if (pl->use_ph) {
      t->colh = malloc((size_t)(c->w + 2 * c->R) * ((p->levels + 8) & ~7) * sizeof *t->colh);
      if (!t->colh) return ES_ERR_NOMEM;
    }
    if (pl->by_bands) {
      t->rows = malloc((size_t)c->chunk_rows * c->w * sizeof *t->rows);
      if (!t->rows) return ES_ERR_NOMEM;
    }
    if (c->level_hist_wanted) {
      /* L + 1: a masked pixel's level is the sentinel L, counted there and left out. */
      t->level_hist = calloc((size_t)p->levels + 1, sizeof *t->level_hist);
      if (!t->level_hist) return ES_ERR_NOMEM;
    }
    if (c->sample_hist_wanted) {
      t->sample_hist = calloc((size_t)1 << c->depth, sizeof *t->sample_hist);
      if (!t->sample_hist) return ES_ERR_NOMEM;
    }
  }
  return ES_OK;
}

/* What cpu_threads_alloc made, also of a thread it did not reach (NULL pointers). */
static void cpu_threads_free(cpu_thread *ts, int nt) {
  if (!ts) return;
  for (int i = 0; i < nt; i++) {
    free(ts[i].ring);
    free(ts[i].hist);
    free(ts[i].hists);
    free(ts[i].colh);
    free(ts[i].colbuf);
    free(ts[i].level_hist);
    free(ts[i].sample_hist);
    free(ts[i].rows);
  }
}

/* Rows [y0, y1) through the plan's kernel, in the ring element's type. */
static void cpu_band(const cpu_ctx *c, cpu_thread *t, const cpu_plan *pl, int y0, int y1) {
  if (pl->lsz == 1) {
    if (pl->use_ph)
      band_ph_u8(c, t, y0, y1);
    else if (pl->use_short)
      band_short_u8(c, t, y0, y1);
    else if (t->colbuf)
      band_huang_sq_u8(c, t, y0, y1);
    else
      band_huang_u8(c, t, y0, y1);
  } else if (pl->lsz == 2) {
    if (pl->use_ph)
      band_ph_u16(c, t, y0, y1);
    else if (pl->use_short)
      band_short_u16(c, t, y0, y1);
    else if (t->colbuf)
      band_huang_sq_u16(c, t, y0, y1);
    else
      band_huang_u16(c, t, y0, y1);
  } else {
    if (pl->use_ph)
      band_ph_u32(c, t, y0, y1);
    else if (pl->use_short)
      band_short_u32(c, t, y0, y1);
    else if (t->colbuf)
      band_huang_sq_u32(c, t, y0, y1);
    else
      band_huang_u32(c, t, y0, y1);
  }
  if (c->sample_hist_wanted) cpu_sample_hist(c, t, y0, y1);
}

/* The job's statistics from the threads' partials, in a fixed order: the results do not
 * depend on the thread count. */
static void cpu_reduce_stats(const cpu_ctx *c, cpu_thread *ts, int nt, const es_job *job, float mn,
                             float mx) {
  const es_params *p = &job->params;
  es_stats *st = job->stats;
  es_stats_acc acc = {0.0, 0.0, mn, mx, (int64_t)c->w * c->h};
  if (c->mask) acc.count = cpu_mask_count(c);
  for (int y = 0; y < c->h; y++) {
    acc.sum += c->rowsum[y];
    acc.sumsq += c->rowsumsq[y];
  }
  uint64_t *lh = ts[0].level_hist;
  for (int i = 1; i < nt; i++)
    for (int k = 0; k < p->levels; k++)
      lh[k] += ts[i].level_hist[k];
  memset(st->hist, 0, sizeof st->hist);
  st->bins = c->bins;
  for (int i = 0; i < nt; i++)
    for (int k = 0; k < c->bins; k++)
      st->hist[k] += ts[i].bins[k];
  uint64_t *sh = lh;
  if (c->sample_hist_wanted) {
    sh = ts[0].sample_hist;
    for (int i = 1; i < nt; i++)
      for (size_t k = 0; k < (size_t)1 << c->depth; k++)
        sh[k] += ts[i].sample_hist[k];
  }
  es_stats_finish(st, &acc, lh, p->levels, sh, c->depth);
}

static int cpu_run_levels(const es_job *job, int threads, char *msg, size_t msglen) {
  int rc = ES_OK;
  const es_params *p = &job->params;
  cpu_ctx c;
  cpu_plan pl;
  cpu_ctx_init(&c, job);
  int render = job->render.format != ES_PIX_NONE;
  const int stats = job->stats != NULL;

  const int nt = es_cpu_run_threads(job, threads);
  const int nbands = c.h < nt * 4 ? c.h : nt * 4;
  pl.nt = nt;
  pl.use_ph = cpu_use_ph(p, c.w, c.h);
  pl.use_short = !pl.use_ph && cpu_short(p, c.h);
  /* Ring element: the smallest type that holds the clip sentinel L (cache footprint of
   * the K + 1 rows: large windows read 2 K row streams at once). */
  pl.lsz = p->levels <= 255 ? 1 : p->levels <= 65535 ? 2 : 4;
  pl.pw = (size_t)c.w + 2 * c.R + 1;
  rc = ES_ERR_NOMEM; /* until every buffer below is allocated */
  cpu_thread *ts = calloc((size_t)nt, sizeof *ts);
  float *tmpmap = NULL;
  c.dinc = malloc(((size_t)c.win.area + 1) * sizeof *c.dinc);
  if (!ts || !c.dinc) goto end;
  for (int n = 0; n < c.win.area; n++) c.dinc[n] = c.tables->flog[n + 1] - c.tables->flog[n];
  c.dinc[c.win.area] = 0; /* never read: no bin exceeds the area */
  /* With a fixed range, and no map asked for, each thread renders its rows as they come
   * from a few rows' buffer (about 64 KB: still in cache): no full-size map. The range
   * auto needs the whole frame's min and max first, so it renders a whole map after. */
  pl.by_bands = !c.map && render && !job->render.range_auto;
  const int by_bands = pl.by_bands;
  if (by_bands) {
    rc = es_cpu_render_rows(NULL, 0, 0, 0, &job->in, p, &job->render, &job->pix);
    if (rc == ES_ERR_USAGE) { /* the format or colormap: before any work */
      if (msg) snprintf(msg, msglen, "rendering failed");
      goto end;
    }
    rc = ES_ERR_NOMEM;
    c.job = job;
    c.chunk_rows = (int)((65536 / sizeof(float)) / (size_t)c.w) & ~1;
    if (c.chunk_rows < 2) c.chunk_rows = 2;
  }
  if (!c.map && (render || c.mask) && !by_bands && cpu_map_buffer(&c, job, &tmpmap) != ES_OK)
    goto end;
  if (stats) {
    c.rowsum = malloc((size_t)c.h * sizeof *c.rowsum);
    c.rowsumsq = malloc((size_t)c.h * sizeof *c.rowsumsq);
    if (!c.rowsum || !c.rowsumsq) goto end;
  }
  if (cpu_threads_alloc(&c, ts, &pl, p) != ES_OK) goto end;

  rc = ES_OK;

#ifdef ES_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
  for (int b = 0; b < nbands; b++) {
#ifdef ES_HAVE_OPENMP
    cpu_thread *t = &ts[omp_get_thread_num()];
#else
    cpu_thread *t = &ts[0];
#endif
    int y0 = (int)((int64_t)c.h * b / nbands), y1 = (int)((int64_t)c.h * (b + 1) / nbands);
    if (by_bands && job->render.format == ES_PIX_YUV420P) {
      /* Bands of whole chroma rows (the split never changes a value). */
      int ch = (c.h + 1) / 2;
      y0 = 2 * (int)((int64_t)ch * b / nbands);
      y1 = b + 1 == nbands ? c.h : 2 * (int)((int64_t)ch * (b + 1) / nbands);
    }
    if (y0 == y1) continue;
    t->cy0 = y0;
    cpu_band(&c, t, &pl, y0, y1);
  }

  /* Reduce in a fixed order: the results do not depend on the thread count. */
  float mn = INFINITY, mx = -INFINITY;
  for (int i = 0; i < nt; i++) {
    if (ts[i].min < mn) mn = ts[i].min;
    if (ts[i].max > mx) mx = ts[i].max;
  }
  if (stats) cpu_reduce_stats(&c, ts, nt, job, mn, mx);
  if (render && !by_bands) {
    rc = es_cpu_render(c.map, c.map_stride, &job->in, p, &job->render, mn, mx, &job->pix,
                       nt);
    if (rc && msg) snprintf(msg, msglen, "rendering failed");
  }
end:
  if (rc == ES_ERR_NOMEM && msg) snprintf(msg, msglen, "out of memory for a %dx%d image", c.w, c.h);
  cpu_threads_free(ts, nt);
  free(ts);
  free(tmpmap);
  free(c.dinc);
  free(c.rowsum);
  free(c.rowsumsq);
  return rc;
}

/* The study's baseline: every pixel rescans its whole window into a level histogram and
 * takes double logs of the counts (each distinct level once), then clears what it set. */
int es_cpu_naive(const es_image *img, const es_params *p, float *out, size_t out_stride) {
  int rc = es_params_check(p, img->depth, NULL, 0);
  if (rc) return rc;
  if (img->depth == 32 || img->mask) return ES_ERR_USAGE; /* the study's baseline had neither */
  es_window win;
  es_window_make(&win, p->window, p->shape);
  int w = img->width, h = img->height, L = p->levels;
  uint32_t *hist = calloc((size_t)L, sizeof *hist);
  uint32_t *lv = malloc((size_t)win.area * sizeof *lv);
  if (!hist || !lv) {
    rc = ES_ERR_NOMEM;
    goto end;
  }
  double oscale = es_out_scale(p->base);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      int n = 0;
      for (int dy = -win.r; dy <= win.r; dy++) {
        int hw = win.hw[dy + win.r];
        int yy = y + dy;
        if (p->border == ES_BORDER_CLIP) {
          if (yy < 0 || yy >= h) continue;
        } else {
          yy = es_reflect(yy, h);
        }
        for (int dx = -hw; dx <= hw; dx++) {
          int xx = x + dx;
          if (p->border == ES_BORDER_CLIP) {
            if (xx < 0 || xx >= w) continue;
          } else {
            xx = es_reflect(xx, w);
          }
          uint32_t v = es_image_sample(img, xx, yy); /* 16-bit rows may be unaligned */
          uint32_t q = es_quantize(v, (uint32_t)L, img->depth);
          hist[q]++;
          lv[n++] = q;
        }
      }
      double s = 0.0;
      for (int i = 0; i < n; i++) {
        uint32_t cnt = hist[lv[i]];
        if (cnt) {
          s += (double)cnt * log2((double)cnt);
          hist[lv[i]] = 0;
        }
      }
      double hv = (log2((double)n) - s / (double)n) * oscale;
      out[(size_t)y * out_stride + x] = (float)(hv > 0.0 ? hv : 0.0);
    }
  }
end:
  free(hist);
  free(lv);
  return rc;
}
