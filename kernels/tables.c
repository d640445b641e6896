/*
 * tables.c - the tables every engine shares (f(n) = n log2 n in 2^26 fixed point, log2 n,
 * 2^-26 / n), window geometry, and small helpers on parameters, statistics and pixel
 * formats. The tables are built once per process; the GPU engine uploads these arrays.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"

static uint64_t g_flog[ES_NMAX + 1];
static double g_log2n[ES_NMAX + 1];
static double g_scale[ES_NMAX + 1];
static es_tables g_tables;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void tables_build(void) {
  g_flog[0] = 0;
  g_log2n[0] = 0.0;
  g_scale[0] = 0.0;
  for (int n = 1; n <= ES_NMAX; n++) {
    /* n log2 n * 2^26 < 65025 * 16 * 2^26 < 2^53: llround of the double is exact enough and
     * the same on every machine that has a correctly rounded log2 (glibc's is). */
    double l = log2((double)n);
    g_flog[n] = (uint64_t)llround(ldexp((double)n * l, ES_FIX_SHIFT));
    g_scale[n] = ldexp(1.0, -ES_FIX_SHIFT) / (double)n;
    /* log2 n as the entropy formula computes it from flog: a window of one level (S =
     * flog[n]) then gives H = 0 exactly, not the rounding residue of f (~2^-27 / n). */
    g_log2n[n] = ES_DMUL((double)g_flog[n], g_scale[n]);
  }
  g_tables.flog = g_flog;
  g_tables.log2n = g_log2n;
  g_tables.scale = g_scale;
}

const es_tables *es_tables_get(void) {
  pthread_once(&g_once, tables_build);
  return &g_tables;
}

void es_window_make(es_window *w, int window, int shape) {
  int r = (window - 1) / 2;
  w->r = r;
  w->area = 0;
  for (int dy = -r; dy <= r; dy++) {
    int hw = r;
    if (shape == ES_SHAPE_DISK) {
      hw = 0;
      while ((hw + 1) * (hw + 1) + dy * dy <= r * r) hw++;
    }
    w->hw[dy + r] = hw;
    w->area += 2 * hw + 1;
  }
}

double es_out_scale(int base) { return base == ES_BASE_E ? M_LN2 : 1.0; }

void es_params_default(es_params *p) {
  if (!p) return;
  p->window = 5;
  p->shape = ES_SHAPE_SQUARE;
  p->border = ES_BORDER_CLIP;
  p->levels = 16;
  p->base = ES_BASE_2;
  p->in_lo = NAN; /* float samples: each image's own range */
  p->in_hi = NAN;
  p->mask_computed = 0;
}

int es_params_check(const es_params *p, int depth, char *msg, size_t msglen) {
  char tmp[8];
  if (!msg) {
    msg = tmp;
    msglen = sizeof tmp;
  }
  if (!p) {
    snprintf(msg, msglen, "no parameters");
    return ES_ERR_USAGE;
  }
  /* The rules are core/params.c's, so that the CLI and Python check the same. */
  int rc = es_param_check("window", p->window, msg, msglen);
  if (rc) return rc;
  if ((rc = es_param_check_enum("shape", p->shape, msg, msglen)) ||
      (rc = es_param_check_enum("border", p->border, msg, msglen)) ||
      (rc = es_param_check_enum("base", p->base, msg, msglen)))
    return rc;
  if (depth != 8 && depth != 16 && depth != 32) {
    snprintf(msg, msglen, "bit depth %d: must be 8, 16 or 32 (float)", depth);
    return ES_ERR_USAGE;
  }
  if (!es_params_range_auto(p) &&
      !(isfinite(p->in_lo) && isfinite(p->in_hi) && p->in_lo < p->in_hi)) {
    snprintf(msg, msglen, "in_range %g:%g: must be finite, LO < HI", p->in_lo, p->in_hi);
    return ES_ERR_USAGE;
  }
  if ((rc = es_param_check("mask_computed", p->mask_computed, msg, msglen))) return rc;
  /* Any depth: above 2^depth the levels are those of 2^depth (es_params_for_depth), so a
   * batch mixing 8- and 16-bit input takes one L (-L 1024 failed on every 8-bit file). */
  return es_param_check("levels", p->levels, msg, msglen);
}

void es_params_for_depth(es_params *p, int depth) {
  if ((depth == 8 || depth == 16) && p->levels > 1 << depth) p->levels = 1 << depth;
}

double es_params_hmax(const es_params *p) {
  es_window w;
  /* Public: a window es_params_check refuses (even, < 1, > ES_WINDOW_MAX) has no maximum;
   * es_window_make would write past its half-width table for K > ES_WINDOW_MAX. */
  if (!p || p->window < 1 || p->window > ES_WINDOW_MAX || p->window % 2 == 0 || p->levels < 2)
    return 0.0;
  es_window_make(&w, p->window, p->shape);
  int m = w.area < p->levels ? w.area : p->levels;
  return log2((double)m) * es_out_scale(p->base);
}

double es_div_up(double a, double b) {
  double q = a / b;
  /* fma gives the sign of q * b - a exactly */
  return fma(q, b, -a) < 0.0 ? nextafter(q, INFINITY) : q;
}

double es_stats_binscale(const es_params *p, int bins) {
  double hmax = es_params_hmax(p);
  /* Rounded up, so that a value on an edge (h * bins / hmax an integer m) has h * binscale
   * >= m and falls in bin m: bins / hmax rounded to nearest can be below it (L = 8, 392
   * bins: H = 15/8 landed in bin 244, not 245). One ulp more moves no other value where
   * hmax is exact (an integer: L a power of two): h * bins is exact, and off an edge at
   * least 2^-34 of itself from one; elsewhere hmax, and so every edge, is rounded anyway. */
  return hmax > 0.0 ? es_div_up((double)bins, hmax) : 0.0;
}

void es_stats_finish(es_stats *st, const es_stats_acc *acc, const uint64_t *level_hist,
                     int levels, const uint64_t *sample_hist, int depth) {
  st->count = acc->count;
  /* No pixel (a mask with none inside): every statistic 0, not the accumulators' start. */
  st->min = acc->count > 0 ? acc->min : 0.0f;
  st->max = acc->count > 0 ? acc->max : 0.0f;
  if (acc->count > 0) {
    double n = (double)acc->count;
    st->mean = acc->sum / n;
    double var = acc->sumsq / n - st->mean * st->mean;
    /* min == max: every value is the same and the spread exactly 0, where sumsq / n -
     * mean^2 leaves a rounding residue (1e-7 on a constant 1200 x 900 map). */
    st->std = var > 0.0 && acc->min != acc->max ? sqrt(var) : 0.0;
  } else {
    st->mean = st->std = 0.0;
  }
  st->global_entropy_levels = es_global_entropy(level_hist, levels, acc->count);
  st->global_entropy = es_global_entropy_ffmpeg(sample_hist, 1 << depth, acc->count);
}

int es_stats_sample_hist_own(int levels, int depth) { return levels != (1 << depth); }

double es_global_entropy_ffmpeg(const uint64_t *sample_hist, int nbins, int64_t total) {
  /* vf_entropy.c's filter_frame, operation for operation: total, p and the sum are floats,
   * log2 is the double one (p promoted), and -log2(p) * p + entropy is rounded to float at
   * each step. The same rounding gives the same value FFmpeg prints with %f. */
  if (total <= 0 || !sample_hist) return 0.0;
  float ftotal = (float)total;
  float entropy = 0;
  for (int k = 0; k < nbins; k++) {
    if (sample_hist[k]) {
      float p = (float)sample_hist[k] / ftotal;
      entropy = (float)((double)entropy + -log2((double)p) * (double)p);
    }
  }
  return entropy;
}

double es_global_entropy(const uint64_t *level_hist, int levels, int64_t total) {
  if (total <= 0) return 0.0;
  double s = 0.0;
  for (int k = 0; k < levels; k++) {
    if (level_hist[k]) s += (double)level_hist[k] * log2((double)level_hist[k]);
  }
  double h = log2((double)total) - s / (double)total;
  return h > 0.0 ? h : 0.0;
}

void es_render_default(es_render *r) {
  if (!r) return;
  r->format = ES_PIX_RGB24;
  r->colormap = ES_CMAP_INFERNO;
  r->range_auto = 0;
  r->overlay = 0.0f;
  r->overlay_on = 0;
}

int es_pix_planes(int fmt) {
  switch (fmt) {
  case ES_PIX_RGB24:
  case ES_PIX_GRAY8:
  case ES_PIX_GRAY16: return 1;
  case ES_PIX_YUV444P:
  case ES_PIX_YUV420P: return 3;
  default: return 0;
  }
}

size_t es_pix_stride(int fmt, int plane, int w) {
  switch (fmt) {
  case ES_PIX_RGB24: return (size_t)w * 3;
  case ES_PIX_GRAY8: return (size_t)w;
  case ES_PIX_GRAY16: return (size_t)w * 2;
  case ES_PIX_YUV444P: return (size_t)w;
  case ES_PIX_YUV420P: return plane == 0 ? (size_t)w : (size_t)(w + 1) / 2;
  default: return 0;
  }
}

int es_pix_plane_height(int fmt, int plane, int h) {
  if (fmt == ES_PIX_YUV420P && plane > 0) return (h + 1) / 2;
  return h;
}

size_t es_rows_extent(size_t stride, int rows, size_t row) {
  if (rows < 1) return 0;
  size_t n = (size_t)(rows - 1);
  if (n && stride > (SIZE_MAX - row) / n) return SIZE_MAX;
  return stride * n + row;
}

/* 1 when `rows` rows of `row` bytes, `stride` bytes apart, span at most PTRDIFF_MAX bytes
 * (no buffer is larger): a larger stride, or a negative one converted to size_t, would send
 * the engines' row addresses outside any buffer (or around the address space onto others). */
static int rows_fit(size_t stride, int rows, size_t row) {
  return row <= (size_t)PTRDIFF_MAX && es_rows_extent(stride, rows, row) <= (size_t)PTRDIFF_MAX;
}

int es_image_check(const es_image *in, char *msg, size_t msglen) {
  /* The engines pad rows and columns by up to a window (int arithmetic): a side within
   * 2 * ES_WINDOW_MAX of INT_MAX would overflow. Only a 1-row image of 2^31 pixels comes
   * near, and --max-pixels's default allows it. */
  if (in->width > INT_MAX - 2 * ES_WINDOW_MAX || in->height > INT_MAX - 2 * ES_WINDOW_MAX) {
    snprintf(msg, msglen, "image %d x %d: a side above %d is not supported", in->width, in->height,
             INT_MAX - 2 * ES_WINDOW_MAX);
    return ES_ERR_INPUT;
  }
  size_t bps = es_depth_bytes(in->depth);
  if (in->stride < (size_t)in->width * bps) {
    snprintf(msg, msglen, "image stride %zu shorter than a row", in->stride);
    return ES_ERR_USAGE;
  }
  if (!rows_fit(in->stride, in->height, (size_t)in->width * bps)) {
    snprintf(msg, msglen, "image stride %zu: %d rows would span more than the address space",
             in->stride, in->height);
    return ES_ERR_USAGE;
  }
  if (in->mask && (in->mask_stride < (size_t)in->width ||
                   !rows_fit(in->mask_stride, in->height, (size_t)in->width))) {
    snprintf(msg, msglen, "mask stride %zu: shorter than a row or past the address space",
             in->mask_stride);
    return ES_ERR_USAGE;
  }
  return ES_OK;
}

int es_job_check(const es_job *job, char *msg, size_t msglen) {
  int rc = es_params_check(&job->params, job->in.depth, msg, msglen);
  if (rc) return rc;
  if (!job->in.data || job->in.width < 1 || job->in.height < 1) {
    snprintf(msg, msglen, "empty image");
    return ES_ERR_USAGE;
  }
  if ((rc = es_image_check(&job->in, msg, msglen)) != ES_OK) return rc;
  if (job->map && job->map_stride < (size_t)job->in.width) {
    snprintf(msg, msglen, "map stride %zu shorter than a row", job->map_stride);
    return ES_ERR_USAGE;
  }
  if (job->map && (job->map_stride > SIZE_MAX / sizeof(float) ||
                   !rows_fit(job->map_stride * sizeof(float), job->in.height,
                             (size_t)job->in.width * sizeof(float)))) {
    snprintf(msg, msglen, "map stride %zu: %d rows would span more than the address space",
             job->map_stride, job->in.height);
    return ES_ERR_USAGE;
  }
  if (job->stats && (rc = es_param_check("stats_bins", job->stats_bins, msg, msglen))) return rc;
  if (job->render.format != ES_PIX_NONE) {
    if (job->render.format < ES_PIX_RGB24 || job->render.format > ES_PIX_YUV420P) {
      snprintf(msg, msglen, "bad rendering format");
      return ES_ERR_USAGE;
    }
    if ((rc = es_param_check_enum("colormap", job->render.colormap, msg, msglen))) return rc;
    if ((rc = es_param_check_real("overlay", job->render.overlay, msg, msglen))) return rc;
    for (int i = 0; i < es_pix_planes(job->render.format); i++) {
      if (!job->pix.plane[i] ||
          job->pix.stride[i] < es_pix_stride(job->render.format, i, job->in.width)) {
        snprintf(msg, msglen, "rendering plane %d missing or too narrow", i);
        return ES_ERR_USAGE;
      }
      if (!rows_fit(job->pix.stride[i], es_pix_plane_height(job->render.format, i, job->in.height),
                    es_pix_stride(job->render.format, i, job->in.width))) {
        snprintf(msg, msglen,
                 "rendering plane %d stride %zu: its rows would span more than the "
                 "address space",
                 i, job->pix.stride[i]);
        return ES_ERR_USAGE;
      }
    }
  }
  return ES_OK;
}
