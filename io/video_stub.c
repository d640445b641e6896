/*
 * video_stub.c - the es_video_* functions of a build without FFmpeg's libraries: every
 * open fails with a one-line reason, everything else is a harmless no-op.
 */
#include <string.h>

#include "es_io.h"

int es_video_built(void) { return 0; }

int es_video_in_open(es_video_in **out, const char *path, const es_video_in_opts *opts,
                     es_video_info *info, char *msg, size_t len) {
  (void)path;
  (void)opts;
  (void)info;
  if (out) *out = NULL;
  if (msg && len) snprintf(msg, len, "built without FFmpeg");
  return ES_ERR_INPUT;
}

int es_video_in_read(es_video_in *v, void *dst, size_t dst_stride, int64_t *pts,
                     double *pts_seconds, char *msg, size_t len) {
  (void)v;
  (void)dst;
  (void)dst_stride;
  (void)pts;
  (void)pts_seconds;
  if (msg && len) snprintf(msg, len, "built without FFmpeg");
  return ES_ERR_INPUT;
}

int es_video_in_read_lend(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
                          int64_t *pts, double *pts_seconds, char *msg, size_t len) {
  if (lent) lent->ref = NULL;
  return es_video_in_read(v, dst, dst_stride, pts, pts_seconds, msg, len);
}

void es_video_in_unlend(void *ref) { (void)ref; }

int64_t es_video_in_corrupt(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_damaged(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_log_lines(const es_video_in *v) {
  (void)v;
  return 0;
}
int es_video_in_frame_damaged(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_flagged(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_prekey(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_dropped(const es_video_in *v) {
  (void)v;
  return 0;
}
int64_t es_video_in_excused(const es_video_in *v) {
  (void)v;
  return 0;
}
double es_video_in_copy_ms(const es_video_in *v) {
  (void)v;
  return 0.0;
}

int64_t es_video_in_end_pts(const es_video_in *v) {
  (void)v;
  return INT64_MIN;
}

void es_video_in_close(es_video_in **v) {
  if (v) *v = NULL;
}

int es_video_out_open(es_video_out **out, const char *path, const es_video_out_opts *opts,
                      char *msg, size_t len) {
  (void)path;
  (void)opts;
  if (out) *out = NULL;
  if (msg && len) snprintf(msg, len, "built without FFmpeg");
  return ES_ERR_OUTPUT;
}

int es_video_out_pixfmt(const es_video_out *v) {
  (void)v;
  return ES_PIX_NONE;
}

int es_video_out_write(es_video_out *v, const es_planes *pix, const float *map,
                       size_t map_stride, int64_t pts, char *msg, size_t len) {
  (void)v;
  (void)pix;
  (void)map;
  (void)map_stride;
  (void)pts;
  if (msg && len) snprintf(msg, len, "built without FFmpeg");
  return ES_ERR_OUTPUT;
}

void es_video_out_end(es_video_out *v, int64_t end_pts) {
  (void)v;
  (void)end_pts;
}

int es_video_out_close(es_video_out **v, int commit, char *msg, size_t len) {
  (void)commit;
  (void)msg;
  (void)len;
  if (v) *v = NULL;
  return ES_OK;
}

int es_video_index_read(const char *path, es_video_index *ix, char *msg, size_t len) {
  (void)path;
  if (ix) memset(ix, 0, sizeof *ix);
  if (msg && len) snprintf(msg, len, "built without FFmpeg");
  return ES_ERR_INPUT;
}

void es_video_index_free(es_video_index *ix) {
  if (ix) memset(ix, 0, sizeof *ix);
}
