/*
 * openslide_stub.c - the whole-slide reader of a build without OpenSlide (ES_WITH_OPENSLIDE
 * off, or libopenslide not found): every slide is an input error that says so.
 */
#include <stdio.h>

#include "es_io.h"

int es_slide_built(void) { return 0; }

int es_slide_detect(const char *path) {
  (void)path;
  return 0;
}

int es_slide_open(const char *path, int level, int64_t max_pixels, es_slide **out, int *width,
                  int *height, char *msg, size_t len) {
  (void)path;
  (void)level;
  (void)max_pixels;
  (void)width;
  (void)height;
  *out = NULL;
  snprintf(msg, len, "built without OpenSlide: cannot read whole-slide images");
  return ES_ERR_INPUT;
}

int es_slide_read_rows(es_slide *s, int y0, int nrows, void *dst, size_t dst_stride,
                       char *msg, size_t len) {
  (void)s;
  (void)y0;
  (void)nrows;
  (void)dst;
  (void)dst_stride;
  snprintf(msg, len, "built without OpenSlide");
  return ES_ERR_INTERNAL;
}

void es_slide_close(es_slide **s) {
  if (s) *s = NULL;
}
