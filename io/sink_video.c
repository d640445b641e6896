/*
 * sink_video.c - a video run's heat video (es_stage.h): an encoded file (x.mp4, x.mkv, ...,
 * written under a temporary name and renamed at commit) or, as "-", y4m or raw float32 on
 * standard output, through es_video_out. Opened on the source's geometry, so it carries the
 * input's frame rate, time base, rotation, aspect ratio and field order.
 */
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_stage.h"

typedef struct sink_video {
  es_sink_opts o;
  const char *path;
  es_video_out *vo; /* open */
} sink_video;

static int sv_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                   size_t len) {
  sink_video *s = k->self;
  es_video_out_opts vopt;
  memset(&vopt, 0, sizeof vopt);
  vopt.width = in->width;
  vopt.height = in->height;
  vopt.fps_num = in->fps_num;
  vopt.fps_den = in->fps_den;
  vopt.tb_num = in->tb_num;
  vopt.tb_den = in->tb_den;
  vopt.base_num = in->base_num;
  vopt.base_den = in->base_den;
  vopt.format = s->o.pixfmt;
  vopt.f32 = s->o.f32;
  vopt.codec = s->o.codec;
  vopt.crf = s->o.crf;
  vopt.preset = s->o.preset;
  vopt.pix_fmt = s->o.pix_fmt;
  vopt.overwrite = s->o.overwrite;
  vopt.display_matrix = in->has_display_matrix ? in->display_matrix : NULL;
  vopt.sar_num = in->sar_num;
  vopt.sar_den = in->sar_den;
  vopt.field_order = in->field_order;
  vopt.ts_discont = in->ts_discont;
  int rc = es_video_out_open(&s->vo, s->path, &vopt, msg, len);
  if (rc != ES_OK) return rc;
  needs->pixfmt = es_video_out_pixfmt(s->vo);
  needs->want_map = needs->pixfmt == ES_PIX_NONE;
  return ES_OK;
}

static int sv_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_video *s = k->self;
  return es_video_out_write(s->vo, it->pix, it->map, it->map_stride, it->pts, msg, len);
}

static void sv_end(es_sink *k, int64_t end_pts) {
  sink_video *s = k->self;
  if (s->vo) es_video_out_end(s->vo, end_pts);
}

static int sv_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_video *s = k->self;
  int rc = ES_OK;
  if (!s) return ES_OK;
  if (s->vo) rc = es_video_out_close(&s->vo, commit, msg, len);
  free(s);
  k->self = NULL;
  return rc;
}

int es_sink_video(es_sink *k, const char *path, const es_sink_opts *o) {
  sink_video *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  s->o = *o;
  s->path = path;
  k->name = path;
  k->self = s;
  k->open = sv_open;
  k->write = sv_write;
  k->end = sv_end;
  k->close = sv_close;
  return ES_OK;
}
