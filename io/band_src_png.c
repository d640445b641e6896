/*
 * band_src_png.c - a PNG as a band source (es_band_stage.h): read whole at open (PNG has no
 * random access to rows worth its price), then handed out band by band. For --band-rows on
 * a PNG: the map's outputs are written band by band all the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_io.h"

typedef struct band_png {
  const char *path;
  int64_t max_pixels;
  es_image img; /* img.data points into data */
  void *data;
} band_png;

static int bp_open(es_band_source *s, es_band_info *info, char *msg, size_t len) {
  band_png *b = s->self;
  int rc = es_png_read(b->path, b->max_pixels, &b->img, &b->data, NULL, msg, len);
  memset(info, 0, sizeof *info);
  if (rc != ES_OK) return rc;
  info->width = b->img.width;
  info->height = b->img.height;
  info->depth = b->img.depth;
  return ES_OK;
}

static int bp_read(es_band_source *s, int y0, int nrows, void *dst, size_t dst_stride,
                   char *msg, size_t len) {
  band_png *b = s->self;
  const size_t row = (size_t)b->img.width * (b->img.depth == 16 ? 2 : 1);
  (void)msg;
  (void)len;
  for (int y = 0; y < nrows; y++)
    memcpy((uint8_t *)dst + (size_t)y * dst_stride,
           (const uint8_t *)b->img.data + (size_t)(y0 + y) * b->img.stride, row);
  return ES_OK;
}

static void bp_close(es_band_source *s) {
  band_png *b = s->self;
  if (!b) return;
  free(b->data);
  free(b);
  s->self = NULL;
}

int es_band_source_png(es_band_source *s, const char *path, const es_band_source_opts *o) {
  band_png *b = calloc(1, sizeof *b);
  memset(s, 0, sizeof *s);
  if (!b) return ES_ERR_NOMEM;
  b->path = path;
  b->max_pixels = o->max_pixels;
  s->name = path;
  s->self = b;
  s->open = bp_open;
  s->read = bp_read;
  s->close = bp_close;
  return ES_OK;
}
