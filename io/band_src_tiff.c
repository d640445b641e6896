/*
 * band_src_tiff.c - one page of a TIFF as a band source (es_band_stage.h): rows read band
 * by band through es_tiff_read_rows, which decodes each strip or tile row once. The page's
 * GeoTIFF tags go to the sinks (a TIFF output carries them on).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_band_stage.h"
#include "es_tiff.h"

typedef struct band_tiff {
  const char *path;
  int64_t max_pixels;
  int band;
  es_tiff *t;       /* opened here, or handed over by the caller (opts.tiff) */
  es_tiff_geo *geo; /* the page's GeoTIFF tags, or NULL */
} band_tiff;

static int bt_open(es_band_source *s, es_band_info *info, char *msg, size_t len) {
  band_tiff *b = s->self;
  es_tiff_info ti;
  int rc = ES_OK;
  memset(info, 0, sizeof *info);
  /* A TIFF the caller opened is on page 0, as es_tiff_open leaves it: what its header
   * said is kept there (es_tiff_info_of), and the file is not read again. */
  if (b->t)
    es_tiff_info_of(b->t, &ti);
  else
    rc = es_tiff_open(b->path, b->max_pixels, &b->t, &ti, msg, len);
  if (rc != ES_OK) return rc;
  if (ti.depth == 32) { /* float32 is computed whole: its range is the whole image's */
    snprintf(msg, len, "band_rows: not for float32 samples (computed whole)");
    return ES_ERR_USAGE;
  }
  if (b->band < 0 || b->band >= ti.bands) {
    if (ti.bands > 1) /* the reader's own words (es_tiff_read_rows would say them later) */
      snprintf(msg, len, "no band %d: the image has %d (band 0..%d)", b->band, ti.bands,
               ti.bands - 1);
    else
      snprintf(msg, len, "no band %d: the image has one", b->band);
    return ES_ERR_USAGE;
  }
  if (ti.has_geo && (rc = es_tiff_geo_get(b->t, &b->geo, msg, len)) != ES_OK) return rc;
  info->width = ti.width;
  info->height = ti.height;
  info->depth = ti.depth;
  info->geo = b->geo;
  return ES_OK;
}

static int bt_read(es_band_source *s, int y0, int nrows, void *dst, size_t dst_stride,
                   char *msg, size_t len) {
  band_tiff *b = s->self;
  return es_tiff_read_rows(b->t, y0, nrows, b->band, dst, dst_stride, msg, len);
}

static void bt_close(es_band_source *s) {
  band_tiff *b = s->self;
  if (!b) return;
  es_tiff_close(&b->t);
  es_tiff_geo_free(&b->geo);
  free(b);
  s->self = NULL;
}

int es_band_source_tiff(es_band_source *s, const char *path, const es_band_source_opts *o) {
  band_tiff *b = calloc(1, sizeof *b);
  memset(s, 0, sizeof *s);
  if (!b) {
    es_tiff *t = o->tiff; /* owned from the call on */
    es_tiff_close(&t);
    return ES_ERR_NOMEM;
  }
  b->path = path;
  b->max_pixels = o->max_pixels;
  b->band = o->band;
  b->t = o->tiff;
  s->name = path;
  s->self = b;
  s->open = bt_open;
  s->read = bt_read;
  s->close = bt_close;
  return ES_OK;
}
