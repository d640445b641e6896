/*
 * es_test_png.h - grey PNG inputs for the C tests of stills, and a destination for
 * es_still_read_to and read_item that keeps what it was given (one copy for the tests of the
 * still list, its source and the batch run, which each had their own).
 */
#ifndef ES_TEST_PNG_H
#define ES_TEST_PNG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "es_io.h"

/* dir/name: a w x h grey PNG of depth 8 or 16 whose bytes are a pattern of seed and of the
 * row (no two files of different seeds alike). ES_OK or es_png_write's status. */
static inline int es_test_write_png(const char *dir, const char *name, int w, int h, int depth,
                                    int seed) {
  char path[256], msg[256] = "";
  const int bpp = depth / 8;
  uint8_t *p = malloc((size_t)w * h * bpp);
  if (!p) return ES_ERR_NOMEM;
  for (int i = 0; i < w * h * bpp; i++)
    p[i] = (uint8_t)(i * 31 + seed * 7 + (i / w) * 5);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int rc = es_png_write(path, 1, w, h, depth == 16 ? ES_PIX_GRAY16 : ES_PIX_GRAY8, p, 0, msg,
                        sizeof msg);
  free(p);
  return rc;
}

/* What es_test_to_buf was given and allocated (data: the caller frees it). */
typedef struct es_test_buf {
  void *data;
  size_t stride;
  int w, h, depth;
} es_test_buf;

/* An es_png_dest_fn: rows padded past the width (a reader must not assume rows packed;
 * png.c stores 16-bit samples aligned), zeroed. */
static inline int es_test_to_buf(void *user, int width, int height, int depth, void **dst,
                                 size_t *dst_stride, char *msg, size_t len) {
  es_test_buf *b = user;
  (void)msg, (void)len;
  b->w = width, b->h = height, b->depth = depth;
  b->stride = (size_t)width * (depth / 8) + 4;
  b->data = calloc(b->stride, (size_t)height);
  *dst = b->data;
  *dst_stride = b->stride;
  return b->data ? ES_OK : ES_ERR_NOMEM;
}

#endif
