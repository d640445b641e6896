/*
 * es_pipeline_test.h - helpers shared by the pipeline tests: random images of odd sizes,
 * an owned result (map, stats, planes) with poisoned buffers, the direct es_cpu_run
 * reference of an image, and a bit-for-bit comparison of two results.
 */
#ifndef ES_PIPELINE_TEST_H
#define ES_PIPELINE_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_kernels.h"
#include "es_test.h"

/* Random image content: a mix of noise and flat patches, so windows see 1..many levels. */
static inline void pt_fill(void *data, int w, int h, size_t stride, int depth) {
  int flat = es_test_range(0, 3);
  uint32_t base = (uint32_t)es_test_rand();
  for (int y = 0; y < h; y++) {
    uint8_t *row = (uint8_t *)data + (size_t)y * stride;
    for (int x = 0; x < w; x++) {
      uint32_t v = (uint32_t)es_test_rand();
      if (flat && ((x / 4 + y / 3) % (flat + 1)) == 0) v = base;
      if (depth == 16)
        ((uint16_t *)row)[x] = (uint16_t)v;
      else
        row[x] = (uint8_t)v;
    }
  }
}

typedef struct pt_result {
  int w, h;
  float *map;
  size_t map_stride;
  es_stats stats;
  es_planes pix;
  int fmt;
} pt_result;

/* Allocates (and poisons) a result for w x h with rendering format fmt (ES_PIX_NONE: none). */
static inline int pt_result_init(pt_result *r, int w, int h, int fmt) {
  memset(r, 0, sizeof *r);
  r->w = w;
  r->h = h;
  r->fmt = fmt;
  r->map_stride = (size_t)w + (size_t)es_test_range(0, 3);
  r->map = malloc(r->map_stride * (size_t)h * sizeof(float));
  if (!r->map) return -1;
  memset(r->map, 0xff, r->map_stride * (size_t)h * sizeof(float)); /* NaN poison */
  memset(&r->stats, 0xa5, sizeof r->stats);
  for (int i = 0; i < es_pix_planes(fmt); i++) {
    r->pix.stride[i] = es_pix_stride(fmt, i, w);
    size_t n = r->pix.stride[i] * (size_t)es_pix_plane_height(fmt, i, h);
    r->pix.plane[i] = malloc(n);
    if (!r->pix.plane[i]) return -1;
    memset(r->pix.plane[i], 0x5a, n);
  }
  return 0;
}

static inline void pt_result_free(pt_result *r) {
  free(r->map);
  for (int i = 0; i < 3; i++) free(r->pix.plane[i]);
  memset(r, 0, sizeof *r);
}

/* The reference: es_cpu_run directly (one thread) on img with params p. */
static inline int pt_reference(const es_image *img, const es_params *p, int bins,
                               const es_render *render, pt_result *r, char *msg, size_t len) {
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = *img;
  job.params = *p;
  job.map = r->map;
  job.map_stride = r->map_stride;
  job.stats = &r->stats;
  job.stats_bins = bins;
  if (render && render->format != ES_PIX_NONE) {
    job.render = *render;
    job.pix = r->pix;
  }
  return es_cpu_run(&job, 1, msg, len);
}

static inline int pt_stats_equal(const es_stats *a, const es_stats *b, const char *what) {
  int ok = a->count == b->count && memcmp(&a->mean, &b->mean, sizeof a->mean) == 0 &&
           memcmp(&a->std, &b->std, sizeof a->std) == 0 &&
           memcmp(&a->min, &b->min, sizeof a->min) == 0 &&
           memcmp(&a->max, &b->max, sizeof a->max) == 0 &&
           memcmp(&a->global_entropy, &b->global_entropy, sizeof(double)) == 0 &&
           memcmp(&a->global_entropy_levels, &b->global_entropy_levels, sizeof(double)) == 0 &&
           a->bins == b->bins && a->bins >= 1 && a->bins <= ES_STATS_MAX_BINS &&
           memcmp(a->hist, b->hist, sizeof a->hist[0] * (size_t)a->bins) == 0;
  CHECK(ok, "%s: stats differ (mean %.17g vs %.17g, min %g/%g max %g/%g, count %lld/%lld)",
        what, a->mean, b->mean, a->min, b->min, a->max, b->max, (long long)a->count,
        (long long)b->count);
  return ok;
}

/* Map (w x h floats, any strides) bit for bit. */
static inline int pt_map_equal(const float *a, size_t sa, const float *b, size_t sb, int w,
                               int h, const char *what) {
  for (int y = 0; y < h; y++) {
    if (memcmp(a + (size_t)y * sa, b + (size_t)y * sb, (size_t)w * sizeof(float)) != 0) {
      for (int x = 0; x < w; x++) {
        if (memcmp(&a[(size_t)y * sa + x], &b[(size_t)y * sb + x], sizeof(float)) != 0) {
          CHECK(0, "%s: map differs at (%d,%d): %.9g vs %.9g", what, x, y,
                a[(size_t)y * sa + x], b[(size_t)y * sb + x]);
          return 0;
        }
      }
    }
  }
  return 1;
}

static inline int pt_pix_equal(const es_planes *a, const es_planes *b, int fmt, int w, int h,
                               const char *what) {
  for (int i = 0; i < es_pix_planes(fmt); i++) {
    size_t row = es_pix_stride(fmt, i, w);
    for (int y = 0; y < es_pix_plane_height(fmt, i, h); y++) {
      if (memcmp(a->plane[i] + (size_t)y * a->stride[i], b->plane[i] + (size_t)y * b->stride[i],
                 row) != 0) {
        CHECK(0, "%s: rendering plane %d differs in row %d", what, i, y);
        return 0;
      }
    }
  }
  return 1;
}

/* A random parameter set valid for depth. */
static inline void pt_random_params(es_params *p, int depth) {
  es_params_default(p);
  static const int windows[] = {1, 3, 5, 7, 9, 15};
  p->window = windows[es_test_range(0, 5)];
  p->shape = es_test_range(0, 1);
  p->border = es_test_range(0, 1);
  p->base = es_test_range(0, 3) == 0 ? ES_BASE_E : ES_BASE_2;
  p->levels = depth == 16 ? es_test_range(2, 4096) : es_test_range(2, 256);
}

#endif /* ES_PIPELINE_TEST_H */
