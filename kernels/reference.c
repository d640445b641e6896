/*
 * reference.c - the plain double-precision reference, for tests: every window's levels
 * gathered directly, sorted, and counted as runs (the counts of a plain level histogram,
 * without its O(L) clearing, so L = 65536 stays cheap); entropy from double logs.
 * Deliberately shares nothing with the engines but es_quantize and the window geometry.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"

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
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) q[(size_t)y * w + x] = es_quantize(es_image_sample(img, x, y), L, img->depth);
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
          lv[n++] = q[(size_t)yy * w + xx];
        }
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
      double hv = (log2((double)n) - s / (double)n) * oscale;
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
  uint64_t *lh = calloc((size_t)L, sizeof *lh);
  uint64_t *sh = calloc((size_t)1 << img->depth, sizeof *sh); /* raw samples */
  if (!lh || !sh) {
    free(lh);
    free(sh);
    return ES_ERR_NOMEM;
  }
  memset(stats, 0, sizeof *stats);
  stats->bins = bins;
  double binscale = es_stats_binscale(p, bins);
  es_stats_acc acc = {0.0, 0.0, INFINITY, -INFINITY, 0};
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      double v = map[(size_t)y * w + x];
      float f = (float)v;
      acc.sum += v;
      acc.sumsq += v * v;
      if (f < acc.min) acc.min = f;
      if (f > acc.max) acc.max = f;
      stats->hist[es_stats_bin(f, binscale, bins)]++;
      lh[es_quantize(es_image_sample(img, x, y), L, img->depth)]++;
      sh[es_image_sample(img, x, y)]++;
    }
  }
  acc.count = (int64_t)w * h;
  es_stats_finish(stats, &acc, lh, L, sh, img->depth);
  free(lh);
  free(sh);
  return ES_OK;
}
