/*
 * band_sink_tiff.c - the map (float32) or its rendering (heat, gray8, gray16) as a tiled
 * TIFF written band by band (es_tiff_writer keeps one tile row, never the image), BigTIFF
 * where it may pass 4 GiB, with the input's GeoTIFF tags where it had them.
 */
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_tiff.h"

typedef struct band_tif {
  const char *path;
  int overwrite;
  es_tiff_writer *w;
} band_tif;

static int bf_open(es_band_sink *k, const es_band_info *info, char *msg, size_t len) {
  band_tif *b = k->self;
  es_tiff_writer_opts to;
  memset(&to, 0, sizeof to);
  to.width = info->width;
  to.height = info->height;
  to.pages = 1;
  to.pixfmt = k->pixfmt;
  to.geo = info->geo;
  return es_tiff_writer_open(b->path, b->overwrite, &to, &b->w, msg, len);
}

static int bf_write(es_band_sink *k, int y0, int nrows, const float *map, size_t map_stride,
                    const es_planes *pix, char *msg, size_t len) {
  band_tif *b = k->self;
  return map ? es_tiff_writer_write_rows(b->w, y0, nrows, map, map_stride * sizeof(float), msg,
                                         len)
             : es_tiff_writer_write_rows(b->w, y0, nrows, pix->plane[0], pix->stride[0], msg,
                                         len);
}

static int bf_close(es_band_sink *k, int commit, char *msg, size_t len) {
  band_tif *b = k->self;
  int rc = ES_OK;
  if (!b) return ES_OK;
  if (b->w) rc = es_tiff_writer_close(&b->w, commit, msg, len);
  free(b);
  k->self = NULL;
  return rc == ES_WRITE_KEPT ? ES_OK : rc; /* kept is said at open */
}

int es_band_sink_tiff(es_band_sink *k, const char *path, const es_band_sink_opts *o) {
  band_tif *b = calloc(1, sizeof *b);
  memset(k, 0, sizeof *k);
  if (!b) return ES_ERR_NOMEM;
  b->path = path;
  b->overwrite = o->overwrite;
  k->name = path;
  k->self = b;
  k->pixfmt = o->pixfmt;
  k->open = bf_open;
  k->write = bf_write;
  k->close = bf_close;
  return ES_OK;
}
