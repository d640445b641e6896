/*
 * sink_stills.c - a batch's outputs, one file an item (es_stage.h, ES_SINK_PER_ITEM): item i
 * goes to outs[i] (.png: the rendering; .npy: the float map; .tif: the rendering, or the map
 * with f32, with the item's GeoTIFF tags; "-": one frame of y4m, or raw float32 with f32, on
 * standard output, for a single still). The run's writer threads call write at once for
 * different items: it touches nothing but its own item's file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_stage.h"
#include "es_tiff.h"

typedef struct sink_stills {
  size_t n;
  char **outs; /* owned; NULL entries: no output for that item */
  int pixfmt, f32, ow;
} sink_stills;

/* By the registry's table (io/registry.c), as the CLI chose its output kind. */
static int kind_of(const char *out) {
  const int k = es_out_kind_of(out);
  return k == ES_OUTK_NPY || k == ES_OUTK_TIFF || k == ES_OUTK_STDOUT ? k : ES_OUTK_PNG;
}

/* The rendering a y4m frame on standard output takes: heat as 4:4:4, grey as mono. */
static int stdout_pixfmt(int pixfmt) {
  return pixfmt == ES_PIX_RGB24 ? ES_PIX_YUV444P : pixfmt;
}

/* One frame of y4m (or raw float32) on standard output, in the rendering asked for. */
static int write_stdout(const sink_stills *s, const es_item *it, char *msg, size_t len) {
  es_video_out *vo = NULL;
  es_video_out_opts vopt;
  memset(&vopt, 0, sizeof vopt);
  vopt.width = it->width;
  vopt.height = it->height;
  vopt.fps_num = 25;
  vopt.fps_den = 1;
  vopt.tb_num = 1;
  vopt.tb_den = 25;
  vopt.format = s->pixfmt;
  vopt.f32 = s->f32;
  vopt.crf = -1;
  vopt.overwrite = 1;
  int rc = es_video_out_open(&vo, "-", &vopt, msg, len);
  if (rc == ES_OK && es_video_out_pixfmt(vo) != (s->f32 ? ES_PIX_NONE : stdout_pixfmt(s->pixfmt))) {
    snprintf(msg, len, "the writer wants another rendering");
    rc = ES_ERR_INTERNAL;
  }
  if (rc == ES_OK) rc = es_video_out_write(vo, it->pix, it->map, it->map_stride, 0, msg, len);
  if (rc == ES_OK) rc = es_video_out_close(&vo, 1, msg, len);
  if (vo) es_video_out_close(&vo, 0, NULL, 0);
  return rc;
}

static int sk_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                   size_t len) {
  sink_stills *s = k->self;
  (void)in;
  for (size_t i = 0; i < s->n; i++) {
    if (!s->outs[i]) continue;
    const int kind = kind_of(s->outs[i]);
    if (kind == ES_OUTK_NPY || ((kind == ES_OUTK_TIFF || kind == ES_OUTK_STDOUT) && s->f32))
      needs->want_map = 1;
    else
      needs->pixfmt = kind == ES_OUTK_STDOUT ? stdout_pixfmt(s->pixfmt) : s->pixfmt;
  }
  if (needs->pixfmt == ES_PIX_NONE && !needs->want_map && s->n && s->f32) needs->want_map = 1;
  if (needs->pixfmt != ES_PIX_NONE && s->f32) {
    snprintf(msg, len, "float32 maps need .npy or .tif outputs");
    return ES_ERR_USAGE;
  }
  return ES_OK;
}

static int write_tiff(const char *out, int ow, int width, int height, int pixfmt,
                      const float *map, size_t map_stride, const es_planes *pix,
                      const es_tiff_geo *geo, char *msg, size_t len) {
  es_tiff_writer *tw = NULL;
  es_tiff_writer_opts to;
  memset(&to, 0, sizeof to);
  to.width = width;
  to.height = height;
  to.pages = 1;
  to.pixfmt = pixfmt; /* ES_PIX_NONE: the float32 map */
  to.geo = geo;
  int rc = es_tiff_writer_open(out, ow, &to, &tw, msg, len);
  if (rc == ES_OK && to.pixfmt == ES_PIX_NONE)
    rc = es_tiff_writer_write_rows(tw, 0, height, map, map_stride * sizeof(float), msg, len);
  else if (rc == ES_OK)
    rc = es_tiff_writer_write_rows(tw, 0, height, pix->plane[0], pix->stride[0], msg, len);
  if (tw) {
    int crc = es_tiff_writer_close(&tw, rc == ES_OK, rc == ES_OK ? msg : NULL,
                                   rc == ES_OK ? len : 0);
    if (rc == ES_OK) rc = crc;
  }
  return rc;
}

int es_still_result_write(const char *path, int overwrite, int width, int height, int pixfmt,
                          const float *map, size_t map_stride, const es_planes *pix,
                          const es_tiff_geo *geo, char *msg, size_t len) {
  switch (kind_of(path)) {
  case ES_OUTK_NPY:
    return es_npy_write(path, overwrite, width, height, map, map_stride, msg, len);
  case ES_OUTK_TIFF:
    return write_tiff(path, overwrite, width, height, pixfmt, map, map_stride, pix, geo, msg,
                      len);
  default:
    return es_png_write(path, overwrite, width, height, pixfmt, pix->plane[0], pix->stride[0],
                        msg, len);
  }
}

/* A failure's message names the file ("out/a.png: reason"): the sink is every item's. */
static int sk_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_stills *s = k->self;
  char m[400] = "";
  int rc;
  if (it->item < 0 || (size_t)it->item >= s->n || !s->outs[it->item]) return ES_OK;
  const char *out = s->outs[it->item];
  if (kind_of(out) == ES_OUTK_STDOUT)
    rc = write_stdout(s, it, m, sizeof m);
  else
    rc = es_still_result_write(out, s->ow, it->width, it->height, s->f32 ? ES_PIX_NONE : s->pixfmt,
                             it->map, it->map_stride, it->pix, it->geo, m, sizeof m);
  if (rc == ES_WRITE_KEPT) return ES_SINK_KEPT;
  if (rc != ES_OK) snprintf(msg, len, "%s: %s", out, *m ? m : "cannot be written");
  return rc;
}

/* Before item i is read: an output that exists is kept (-n) or refused unless it may be
 * replaced (-y), so that neither costs a decoding. A file that appears after this look is
 * the write's to settle (ES_WRITE_KEEP: kept). */
static int sk_check(es_sink *k, int64_t i, char *msg, size_t len) {
  sink_stills *s = k->self;
  if (i < 0 || (size_t)i >= s->n || !s->outs[i] || kind_of(s->outs[i]) == ES_OUTK_STDOUT ||
      !es_output_exists(s->outs[i]))
    return ES_OK;
  if (s->ow == ES_WRITE_KEEP) return ES_SINK_KEPT;
  if (s->ow) return ES_OK;
  snprintf(msg, len, "%s: exists (use -y to overwrite, -n to skip)", s->outs[i]);
  return ES_ERR_OUTPUT;
}

static int sk_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_stills *s = k->self;
  (void)commit, (void)msg, (void)len; /* each file was committed when written */
  if (!s) return ES_OK;
  for (size_t i = 0; i < s->n; i++) free(s->outs[i]);
  free(s->outs);
  free(s);
  k->self = NULL;
  return ES_OK;
}

int es_sink_stills(es_sink *k, const char *const *outs, size_t n, const es_sink_opts *o) {
  sink_stills *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  k->self = s;
  k->close = sk_close;
  s->outs = calloc(n ? n : 1, sizeof *s->outs);
  if (!s->outs) goto nomem;
  s->n = n;
  for (size_t i = 0; i < n; i++)
    if (outs[i] && !(s->outs[i] = strdup(outs[i]))) goto nomem;
  s->pixfmt = o->pixfmt;
  s->f32 = o->f32;
  /* -n: a file that appears between the run's start and its write is kept, not failed. */
  s->ow = o->skip ? ES_WRITE_KEEP : o->overwrite;
  k->name = "outputs";
  k->flags = ES_SINK_PER_ITEM;
  k->open = sk_open;
  k->write = sk_write;
  k->check = sk_check;
  return ES_OK;
nomem:
  sk_close(k, 0, NULL, 0);
  memset(k, 0, sizeof *k);
  return ES_ERR_NOMEM;
}
