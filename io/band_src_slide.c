/*
 * band_src_slide.c - one pyramid level of a whole-slide image as a band source
 * (es_band_stage.h), read region by region through OpenSlide (io/openslide.c; the stub
 * without it says so at open).
 */
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_io.h"

typedef struct band_slide {
  const char *path;
  int64_t max_pixels;
  int level;
  es_slide *slide;
} band_slide;

static int bs_open(es_band_source *s, es_band_info *info, char *msg, size_t len) {
  band_slide *b = s->self;
  memset(info, 0, sizeof *info);
  int rc = es_slide_open(b->path, b->level < 0 ? 0 : b->level, b->max_pixels, &b->slide,
                         &info->width, &info->height, msg, len);
  info->depth = 8;
  return rc;
}

static int bs_read(es_band_source *s, int y0, int nrows, void *dst, size_t dst_stride,
                   char *msg, size_t len) {
  band_slide *b = s->self;
  return es_slide_read_rows(b->slide, y0, nrows, dst, dst_stride, msg, len);
}

static void bs_close(es_band_source *s) {
  band_slide *b = s->self;
  if (!b) return;
  es_slide_close(&b->slide);
  free(b);
  s->self = NULL;
}

int es_band_source_slide(es_band_source *s, const char *path, const es_band_source_opts *o) {
  band_slide *b = calloc(1, sizeof *b);
  memset(s, 0, sizeof *s);
  if (!b) return ES_ERR_NOMEM;
  b->path = path;
  b->max_pixels = o->max_pixels;
  b->level = o->level;
  s->name = path;
  s->self = b;
  s->open = bs_open;
  s->read = bs_read;
  s->close = bs_close;
  return ES_OK;
}
