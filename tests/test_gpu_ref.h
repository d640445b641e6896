/*
 * test_gpu_ref.h - the exact reference the GPU tests compare with: direct counting of every
 * window in integers, S = sum flog[c], H = es_entropy_value (by definition the engines' bits),
 * plus a plain double-log version for error figures.
 */
#ifndef TEST_GPU_REF_H
#define TEST_GPU_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"

static inline int reflect(int i, int n) {
  int m = i % (2 * n);
  if (m < 0) m += 2 * n;
  if (m >= n) m = 2 * n - 1 - m;
  return m;
}

/* The quantized levels of the window of (x, y) into list (the border rule applied: clip
 * leaves outside pixels out, reflect mirrors them); returns how many. */
static inline int ref_window(const es_image *img, const es_params *p, const es_window *win,
                             int x, int y, uint32_t *list) {
  int n = 0;
  for (int dy = -win->r; dy <= win->r; dy++) {
    int h = win->hw[dy + win->r];
    for (int dx = -h; dx <= h; dx++) {
      int yy = y + dy, xx = x + dx;
      if (yy < 0 || yy >= img->height || xx < 0 || xx >= img->width) {
        if (p->border == ES_BORDER_CLIP) continue;
        yy = reflect(yy, img->height);
        xx = reflect(xx, img->width);
      }
      list[n++] = es_quantize(es_image_sample(img, xx, yy), (uint32_t)p->levels, img->depth);
    }
  }
  return n;
}

/* Exact reference of rows [y0, y1) into out (tight rows, row y0 first): direct counting of
 * every window in integers -> S = sum flog[c] -> es_entropy_value. */
static inline void ref_rows(const es_image *img, const es_params *p, int y0, int y1, float *out) {
  const es_tables *t = es_tables_get();
  es_window win;
  es_window_make(&win, p->window, p->shape);
  uint32_t *cnt = calloc((size_t)p->levels, sizeof *cnt);
  uint32_t *list = malloc(sizeof *list * (size_t)win.area);
  double os = es_out_scale(p->base);
  for (int y = y0; y < y1; y++) {
    for (int x = 0; x < img->width; x++) {
      const int n = ref_window(img, p, &win, x, y, list);
      for (int i = 0; i < n; i++) cnt[list[i]]++;
      uint64_t S = 0;
      for (int i = 0; i < n; i++) {
        if (cnt[list[i]]) {
          S += t->flog[cnt[list[i]]];
          cnt[list[i]] = 0;
        }
      }
      out[(size_t)(y - y0) * img->width + x] = es_entropy_value(S, t->log2n[n], t->scale[n], os);
    }
  }
  free(cnt);
  free(list);
}

static inline void ref_map(const es_image *img, const es_params *p, float *out) {
  ref_rows(img, p, 0, img->height, out);
}

/* H of pixel (x, y) with double logs (no tables): for error figures against the engine. */
static inline double ref_double(const es_image *img, const es_params *p, int x, int y) {
  es_window win;
  es_window_make(&win, p->window, p->shape);
  uint32_t *cnt = calloc((size_t)p->levels, sizeof *cnt);
  uint32_t *list = malloc(sizeof *list * (size_t)win.area);
  const int n = ref_window(img, p, &win, x, y, list);
  for (int i = 0; i < n; i++) cnt[list[i]]++;
  free(list);
  double s = 0.0;
  for (int k = 0; k < p->levels; k++)
    if (cnt[k] > 1) s += cnt[k] * log2((double)cnt[k]);
  free(cnt);
  double hv = (log2((double)n) - s / n) * (p->base == ES_BASE_E ? M_LN2 : 1.0);
  return hv > 0.0 ? hv : 0.0;
}

#endif
