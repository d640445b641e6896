/*
 * reference.c - the plain double-precision reference, for tests: every window's levels
 * gathered directly, sorted, and counted as runs (the counts of a plain level histogram,
 * without its O(L) clearing, so L = 65536 stays cheap); entropy from double logs.
 * Deliberately shares nothing with the engines but es_quantize, es_quantize_float with
 * es_float_range (the float rule) and the window geometry. Masks (and float samples that
 * are not finite) are followed pixel by pixel: a pixel outside is left out of every window.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"

/* The levels of every pixel, L for a pixel outside the mask (or a float sample that is not
 * finite): the integer rule or the float rule (docs/spec.md). */
static void ref_levels(const es_image *img, const es_params *p, uint32_t *q) {
  int w = img->width, h = img->height, L = p->levels;
  double lo = 0.0, hi = 0.0;
  if (img->depth == 32) es_float_range(img, p, &lo, &hi);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      uint32_t v;
      if (img->depth == 32) {
        float f;
        memcpy(&f, (const uint8_t *)img->data + (size_t)y * img->stride + 4 * (size_t)x, 4);
        v = isfinite(f) && es_image_inside(img, x, y) ? es_quantize_float(f, lo, hi, (uint32_t)L)
                                                      : (uint32_t)L;
      } else {
        v = es_image_inside(img, x, y) ? es_quantize(es_image_sample(img, x, y), L, img->depth)
                                       : (uint32_t)L;
      }
      q[(size_t)y * w + x] = v;
    }
  }
}

static int ref_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

int es_ref_entropy(const es_image *img, const es_params *p, double *out) {
  int rc = es_params_check(p, img->depth, NULL, 0);
  if (rc) return rc;
  int w = img->width, h = img->height, L = p->levels;
  es_window win;
  es_window_make(&win, p->window, p->shape);
  uint32_t *q = malloc((size_t)w * h * sizeof *q);
  uint32_t *lv = malloc((size_t)win.area * sizeof *lv);
  if (!q || !lv) {
    rc = ES_ERR_NOMEM;
    goto end;
  }
  ref_levels(img, p, q);
  double oscale = es_out_scale(p->base);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      long n = 0;
      for (int dy = -win.r; dy <= win.r; dy++) {
        int hw = win.hw[dy + win.r];
        for (int dx = -hw; dx <= hw; dx++) {
          int yy = y + dy, xx = x + dx;
          if (p->border == ES_BORDER_CLIP) {
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
          } else {
            yy = es_reflect(yy, h);
            xx = es_reflect(xx, w);
          }
          uint32_t l = q[(size_t)yy * w + xx];
          if (l != (uint32_t)L) lv[n++] = l; /* outside the mask: in no window */
        }
      }
      if (q[(size_t)y * w + x] == (uint32_t)L && !p->mask_computed) {
        out[(size_t)y * w + x] = NAN;
        continue;
      }
      qsort(lv, (size_t)n, sizeof *lv, ref_cmp);
      double s = 0.0;
      for (long i = 0; i < n;) {
        long j = i;
        while (j < n && lv[j] == lv[i]) j++;
        double c = (double)(j - i);
        s += c * log2(c);
        i = j;
      }
      double hv = n ? (log2((double)n) - s / (double)n) * oscale : 0.0;
      out[(size_t)y * w + x] = hv > 0.0 ? hv : 0.0;
    }
  }
end:
  free(q);
  free(lv);
  return rc;
}

int es_ref_stats(const es_image *img, const es_params *p, const double *map, int bins,
                 es_stats *stats) {
  int rc = es_params_check(p, img->depth, NULL, 0);
  if (rc) return rc;
  if (bins < 1 || bins > ES_STATS_MAX_BINS) return ES_ERR_USAGE;
  int w = img->width, h = img->height, L = p->levels;
  const int sdepth = img->depth == 32 ? 0 : img->depth; /* float: no raw histogram */
  uint64_t *lh = calloc((size_t)L + 1, sizeof *lh); /* bin L: outside, not counted */
  uint64_t *sh = calloc((size_t)1 << sdepth, sizeof *sh); /* raw samples */
  uint32_t *q = malloc((size_t)w * h * sizeof *q);
  if (!lh || !sh || !q) {
    free(lh);
    free(sh);
    free(q);
    return ES_ERR_NOMEM;
  }
  ref_levels(img, p, q);
  memset(stats, 0, sizeof *stats);
  stats->bins = bins;
  double binscale = es_stats_binscale(p, bins);
  es_stats_acc acc = {0.0, 0.0, INFINITY, -INFINITY, 0};
  int64_t count = 0;
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      if (q[(size_t)y * w + x] == (uint32_t)L) continue; /* outside: in no statistic */
      count++;
      double v = map[(size_t)y * w + x];
      float f = (float)v;
      acc.sum += v;
      acc.sumsq += v * v;
      if (f < acc.min) acc.min = f;
      if (f > acc.max) acc.max = f;
      stats->hist[es_stats_bin(f, binscale, bins)]++;
      lh[q[(size_t)y * w + x]]++;
      if (sdepth) sh[es_image_sample(img, x, y)]++;
    }
  }
  acc.count = count;
  es_stats_finish(stats, &acc, lh, L, sh, sdepth);
  /* Float samples: global_entropy is the levels' (docs/spec.md). */
  if (!sdepth) stats->global_entropy = stats->global_entropy_levels;
  free(lh);
  free(sh);
  free(q);
  return ES_OK;
}
