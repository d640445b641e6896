/*
 * band_sink_png.c - the rendering as one PNG. A PNG is whole by its format: the bands'
 * rows are gathered, and the picture written (atomically) at commit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_io.h"

typedef struct band_png_out {
  const char *path;
  int overwrite;
  int width, height;
  uint8_t *buf; /* the rendering, gathered */
  size_t stride;
} band_png_out;

static int bg_open(es_band_sink *k, const es_band_info *info, char *msg, size_t len) {
  band_png_out *b = k->self;
  b->width = info->width;
  b->height = info->height;
  /* plane 0 of RGB24, GRAY8 or GRAY16, as kernels/'s es_pix_stride has it */
  b->stride = (size_t)info->width *
              (k->pixfmt == ES_PIX_RGB24 ? 3 : k->pixfmt == ES_PIX_GRAY16 ? 2 : 1);
  if (!(b->buf = malloc(b->stride * (size_t)info->height))) {
    snprintf(msg, len, "out of memory for a %dx%d picture", info->width, info->height);
    return ES_ERR_NOMEM;
  }
  return ES_OK;
}

static int bg_write(es_band_sink *k, int y0, int nrows, const float *map, size_t map_stride,
                    const es_planes *pix, char *msg, size_t len) {
  band_png_out *b = k->self;
  (void)map;
  (void)map_stride;
  (void)msg;
  (void)len;
  for (int y = 0; y < nrows; y++)
    memcpy(b->buf + (size_t)(y0 + y) * b->stride, pix->plane[0] + (size_t)y * pix->stride[0],
           b->stride);
  return ES_OK;
}

static int bg_close(es_band_sink *k, int commit, char *msg, size_t len) {
  band_png_out *b = k->self;
  int rc = ES_OK;
  if (!b) return ES_OK;
  if (commit && b->buf)
    rc = es_png_write(b->path, b->overwrite, b->width, b->height, k->pixfmt, b->buf, b->stride,
                      msg, len);
  free(b->buf);
  free(b);
  k->self = NULL;
  return rc; /* ES_WRITE_KEPT (-n) is ES_BAND_SINK_KEPT */
}

int es_band_sink_png(es_band_sink *k, const char *path, const es_band_sink_opts *o) {
  band_png_out *b = calloc(1, sizeof *b);
  memset(k, 0, sizeof *k);
  if (!b) return ES_ERR_NOMEM;
  b->path = path;
  b->overwrite = o->overwrite;
  k->name = path;
  k->self = b;
  k->pixfmt = o->pixfmt == ES_PIX_NONE ? ES_PIX_RGB24 : o->pixfmt;
  k->open = bg_open;
  k->write = bg_write;
  k->close = bg_close;
  return ES_OK;
}
