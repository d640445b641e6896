/*
 * video_out_y4m.c - YUV4MPEG2 output: uncompressed frames through libavformat's yuv4mpegpipe
 * muxer and the wrapped_avframe encoder (frames handed to the muxer as they are, no codec),
 * on standard output ("-o -", pipe:1) or into a .y4m file (the encode mode's file, chosen in
 * video_out_codec.c). Here: what y4m is written in, and the stdout writer's muxer and
 * encoder; the frames then go the libav way of video_out_av.c and video_out_frame.c.
 */
#include <stdio.h>

#include <libavutil/mem.h>

#include "video_out_internal.h"

/* Heat as 4:4:4 (a lossless intermediate), or 4:2:0 where --pix-fmt yuv420p asks; grey as
 * it is. */
int es_vout_y4m_want(const es_video_out_opts *o) {
  if (o->format != ES_PIX_RGB24) return o->format;
  return o->pix_fmt == ES_PIX_YUV420P ? ES_PIX_YUV420P : ES_PIX_YUV444P;
}

const AVCodec *es_vout_y4m_codec(char *msg, size_t len) {
  const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_WRAPPED_AVFRAME);
  if (!codec) snprintf(msg, len, "libavcodec has no wrapped_avframe encoder for y4m");
  return codec;
}

int es_vout_y4m_stdout(es_video_out *v, const es_video_out_opts *o,
                       const AVOutputFormat **ofmt, const AVCodec **codec,
                       enum AVPixelFormat *enc_fmt, char **url, char *msg, size_t len) {
  *ofmt = av_guess_format("yuv4mpegpipe", NULL, NULL);
  if (!*ofmt) {
    /* The same status as a .y4m file name: this FFmpeg cannot write y4m. */
    snprintf(msg, len, "libavformat has no yuv4mpegpipe muxer");
    return ES_ERR_OUTPUT;
  }
  if (!(*codec = es_vout_y4m_codec(msg, len))) return ES_ERR_OUTPUT;
  v->want = es_vout_y4m_want(o);
  v->want_av = *enc_fmt = es_vout_av_of(v->want);
  *url = av_strdup("pipe:1");
  return ES_OK;
}
