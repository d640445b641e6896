/*
 * video_out.c - the video writer's entry points (es_io.h): the options checked, the mode chosen
 * from the name, and each call handed to that mode's part; the writer's state is owned and
 * freed here (video_out_internal.h lists the parts).
 *
 * A file name with a container extension becomes encoded video (libx264 where present,
 * else MPEG-4 part 2; a container that holds neither gets its own default codec), written
 * to a temporary name in the same directory and renamed at close, so a failure never
 * leaves a partial file under the final name (a link is followed; a FIFO or device is
 * written in place, and needs a container that can be streamed, such as y4m). "-" is standard
 * output: YUV4MPEG2 through libavformat's yuv4mpegpipe muxer on pipe:1, or raw little-endian
 * float32 maps (f32). The writer says which rendering it wants (es_video_out_pixfmt) so frames
 * reach the encoder without a conversion where possible.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavutil/avutil.h>

#include "video_out_internal.h"

/* The options that no mode takes: ES_ERR_USAGE for what the user asked, ES_ERR_INTERNAL for
 * what the caller should not have passed. */
static int check_opts(const char *path, const es_video_out_opts *o, char *msg, size_t len) {
  if (!o || o->width <= 0 || o->height <= 0) {
    snprintf(msg, len, "invalid output frame size");
    return ES_ERR_INTERNAL;
  }
  if (o->format != ES_PIX_RGB24 && o->format != ES_PIX_GRAY8 && o->format != ES_PIX_GRAY16 &&
      !(o->f32 && !strcmp(path, "-"))) {
    snprintf(msg, len, "unsupported output format for video");
    return ES_ERR_USAGE;
  }
  if (o->pix_fmt != ES_PIX_NONE && o->pix_fmt != ES_PIX_YUV420P && o->pix_fmt != ES_PIX_YUV444P) {
    snprintf(msg, len, "invalid output pixel format");
    return ES_ERR_INTERNAL;
  }
  if (o->pix_fmt != ES_PIX_NONE && (o->f32 || o->format != ES_PIX_RGB24)) {
    /* grey and float maps have no chroma to choose */
    snprintf(msg, len, "pix_fmt applies to heat video only (format heat)");
    return ES_ERR_USAGE;
  }
  return ES_OK;
}

int es_video_out_open(es_video_out **out, const char *path, const es_video_out_opts *o,
                      char *msg, size_t len) {
  int rc;
  es_video_out *v = NULL;
  const AVCodec *codec = NULL;
  const AVOutputFormat *ofmt = NULL;
  char *url = NULL;
  enum AVPixelFormat enc_fmt = AV_PIX_FMT_NONE;

  *out = NULL;
  if (msg && len) msg[0] = 0;
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
  if ((rc = check_opts(path, o, msg, len)) < 0) return rc;
  v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  v->stream_fd = -1;
  v->width = v->enc_w = o->width;
  v->height = v->enc_h = o->height;
  v->last_pts = INT64_MIN;
  v->end_pts = INT64_MIN;
  v->first_pts = AV_NOPTS_VALUE;
  AVRational fps = {o->fps_num, o->fps_den};
  if (fps.num <= 0 || fps.den <= 0) fps = (AVRational){25, 1};
  v->fps = fps;
  v->in_tb = (AVRational){o->tb_num, o->tb_den};
  if (v->in_tb.num <= 0 || v->in_tb.den <= 0) v->in_tb = av_inv_q(fps);

  if (!strcmp(path, "-") && o->f32) {
    v->mode = ES_VOUT_F32;
    rc = es_vout_raw_open(v, msg, len);
  } else if (!strcmp(path, "-")) {
    v->mode = ES_VOUT_Y4M;
    rc = es_vout_y4m_stdout(v, o, &ofmt, &codec, &enc_fmt, &url, msg, len);
  } else {
    v->mode = ES_VOUT_ENCODE;
    rc = es_vout_choose_codec(v, path, o, &ofmt, &codec, &enc_fmt, msg, len);
    if (rc == ES_OK) rc = es_vout_file_target(v, path, o, &url, msg, len);
  }
  if (rc == ES_OK && v->mode != ES_VOUT_F32)
    rc = es_vout_av_open(v, o, ofmt, codec, enc_fmt, &url, msg, len);
  if (rc == ES_OK) {
    *out = v;
    v = NULL;
  }
  av_free(url);
  if (v) es_video_out_close(&v, 0, NULL, 0);
  return rc;
}

int es_video_out_pixfmt(const es_video_out *v) { return v ? v->want : ES_PIX_NONE; }

int es_video_out_write(es_video_out *v, const es_planes *pix, const float *map,
                       size_t map_stride, int64_t pts, char *msg, size_t len) {
  if (!v) return ES_ERR_INTERNAL;
  if (v->failed) {
    snprintf(msg, len, "an earlier write failed");
    return ES_ERR_OUTPUT;
  }
  if (v->mode == ES_VOUT_F32) return es_vout_raw_write(v, map, map_stride, msg, len);
  return es_vout_frame_write(v, pix, pts, msg, len);
}

void es_video_out_end(es_video_out *v, int64_t end_pts) {
  if (v) v->end_pts = end_pts;
}

int es_video_out_close(es_video_out **pv, int commit, char *msg, size_t len) {
  char tmsg[256];
  if (!msg || !len) {
    msg = tmsg;
    len = sizeof tmsg;
  }
  if (!pv || !*pv) return ES_OK;
  es_video_out *v = *pv;
  if (v->failed) commit = 0;
  const int rc = v->mode == ES_VOUT_F32 ? es_vout_raw_close(v, commit, msg, len)
                                        : es_vout_av_close(v, commit, msg, len);
  if (v->stream_fd >= 0) close(v->stream_fd); /* after the AVIOContexts writing into it */
  sws_freeContext(v->sws);
  av_frame_free(&v->frame);
  av_frame_free(&v->held);
  free(v->durs);
  av_packet_free(&v->pkt);
  avcodec_free_context(&v->enc);
  avformat_free_context(v->fmt);
  free(v->final_path);
  free(v->tmp_path);
  free(v->f32_row);
  free(v->preset);
  avcodec_parameters_free(&v->par);
  free(v);
  *pv = NULL;
  return rc;
}
