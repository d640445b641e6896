/*
 * band_sink_npy.c - the float32 map as a [H, W] .npy written band by band, in row order
 * (es_npy_bands: a temporary renamed into place at commit).
 */
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_io.h"

typedef struct band_npy {
  const char *path;
  int overwrite;
  es_npy_bands *npy;
} band_npy;

static int bn_open(es_band_sink *k, const es_band_info *info, char *msg, size_t len) {
  band_npy *b = k->self;
  return es_npy_bands_open(&b->npy, b->path, b->overwrite, info->width, info->height, msg, len);
}

static int bn_write(es_band_sink *k, int y0, int nrows, const float *map, size_t map_stride,
                    const es_planes *pix, char *msg, size_t len) {
  band_npy *b = k->self;
  (void)y0;
  (void)pix;
  return es_npy_bands_write(b->npy, map, map_stride, nrows, msg, len);
}

static int bn_close(es_band_sink *k, int commit, char *msg, size_t len) {
  band_npy *b = k->self;
  int rc = ES_OK;
  if (!b) return ES_OK;
  if (b->npy) rc = es_npy_bands_close(&b->npy, commit, msg, len);
  free(b);
  k->self = NULL;
  return rc == ES_WRITE_KEPT ? ES_OK : rc; /* kept is said at open */
}

int es_band_sink_npy(es_band_sink *k, const char *path, const es_band_sink_opts *o) {
  band_npy *b = calloc(1, sizeof *b);
  memset(k, 0, sizeof *k);
  if (!b) return ES_ERR_NOMEM;
  b->path = path;
  b->overwrite = o->overwrite;
  k->name = path;
  k->self = b;
  k->pixfmt = ES_PIX_NONE;
  k->open = bn_open;
  k->write = bn_write;
  k->close = bn_close;
  return ES_OK;
}
