/*
 * float.c - float samples (es_image depth 32) as the engines take them: the range of the
 * linear rule (es_quantize_float in es_math.h), and the conversion, done once on the host,
 * into 16-bit samples of the same levels and a mask that leaves out NaN, infinite and
 * masked samples. Every engine computes a float image from what es_float_levels gives, so
 * their results stay the same bits.
 */
#include <math.h>
#include <string.h>

#include "es_kernels.h"

/* Sample (x, y) of a float image (rows need not be aligned). */
static inline float float_sample(const es_image *img, int x, int y) {
  float v;
  memcpy(&v, (const uint8_t *)img->data + (size_t)y * img->stride + 4 * (size_t)x, 4);
  return v;
}

static inline int float_inside(const es_image *img, int x, int y, float v) {
  return isfinite(v) && (!img->mask || img->mask[(size_t)y * img->mask_stride + x]);
}

int es_params_range_auto(const es_params *p) {
  return (isnan(p->in_lo) && isnan(p->in_hi)) || (p->in_lo == 0.0 && p->in_hi == 0.0);
}

int64_t es_float_range(const es_image *img, const es_params *p, double *lo, double *hi) {
  int64_t n = 0;
  float mn = INFINITY, mx = -INFINITY;
  for (int y = 0; y < img->height; y++) {
    for (int x = 0; x < img->width; x++) {
      float v = float_sample(img, x, y);
      if (!float_inside(img, x, y, v)) continue;
      n++;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
  }
  if (!es_params_range_auto(p)) {
    *lo = p->in_lo;
    *hi = p->in_hi;
  } else if (n) {
    *lo = mn;
    *hi = mx;
  } else {
    *lo = *hi = 0.0;
  }
  return n;
}

void es_float_levels(const es_image *img, const es_params *p, uint16_t *samples,
                     uint8_t *mask) {
  double lo, hi;
  const uint32_t L = (uint32_t)p->levels;
  es_float_range(img, p, &lo, &hi);
  for (int y = 0; y < img->height; y++) {
    uint16_t *s = samples + (size_t)y * img->width;
    uint8_t *m = mask + (size_t)y * img->width;
    for (int x = 0; x < img->width; x++) {
      float v = float_sample(img, x, y);
      m[x] = (uint8_t)float_inside(img, x, y, v);
      s[x] = m[x] ? es_level_sample(es_quantize_float(v, lo, hi, L), L) : 0;
    }
  }
}
