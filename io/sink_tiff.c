/*
 * sink_tiff.c - a stack's multi-page TIFF (es_stage.h): a page a frame, the rendering or the
 * float32 maps (f32), through es_tiff_writer (a temporary renamed into place at commit). The
 * input's GeoTIFF tags (page 0's) go on every page, so that the maps lie where the input did.
 */
#include <stdlib.h>
#include <string.h>

#include "es_stage.h"
#include "es_tiff.h"

typedef struct sink_tiff {
  es_sink_opts o;
  const char *path;
  es_tiff_writer *tw; /* open */
  int64_t pages;      /* written */
  int want_map;
} sink_tiff;

static int stf_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                    size_t len) {
  sink_tiff *s = k->self;
  es_tiff_writer_opts to;
  es_tiff_geo *geo = NULL;
  int rc = ES_OK;
  memset(&to, 0, sizeof to);
  to.width = in->width;
  to.height = in->height;
  to.pages = in->frames > 0 && in->frames <= 0x7fffffff ? (int)in->frames : 0;
  to.pixfmt = s->o.f32 ? ES_PIX_NONE : s->o.pixfmt;
  if (s->o.input && es_path_is_tiff(s->o.input))
    rc = es_tiff_geo_load(s->o.input, 0, &geo, msg, len);
  to.geo = geo;
  if (rc == ES_OK)
    rc = es_tiff_writer_open(s->path, s->o.skip ? ES_WRITE_KEEP : s->o.overwrite, &to, &s->tw,
                             msg, len);
  es_tiff_geo_free(&geo); /* copied by the writer */
  if (rc != ES_OK) return rc;
  s->want_map = to.pixfmt == ES_PIX_NONE;
  if (s->want_map)
    needs->want_map = 1;
  else
    needs->pixfmt = to.pixfmt;
  return ES_OK;
}

static int stf_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_tiff *s = k->self;
  int rc = s->pages > 0 ? es_tiff_writer_next_page(s->tw, msg, len) : ES_OK;
  if (rc == ES_OK)
    rc = s->want_map ? es_tiff_writer_write_rows(s->tw, 0, it->height, it->map,
                                                 it->map_stride * sizeof(float), msg, len)
                     : es_tiff_writer_write_rows(s->tw, 0, it->height, it->pix->plane[0],
                                                 it->pix->stride[0], msg, len);
  if (rc == ES_OK) s->pages++;
  return rc;
}

static int stf_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_tiff *s = k->self;
  int rc = ES_OK;
  if (!s) return ES_OK;
  if (s->tw) rc = es_tiff_writer_close(&s->tw, commit, msg, len);
  free(s);
  k->self = NULL;
  return rc == ES_WRITE_KEPT ? ES_OK : rc; /* -n: one renamed into place meanwhile is kept */
}

int es_sink_tiff(es_sink *k, const char *path, const es_sink_opts *o) {
  sink_tiff *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  s->o = *o;
  s->path = path;
  k->name = path;
  k->self = s;
  k->open = stf_open;
  k->write = stf_write;
  k->close = stf_close;
  return ES_OK;
}
