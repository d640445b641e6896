/*
 * video_out_codec.c - what a video file is encoded with: the container its name asks for, the
 * encoder (--codec, or SPEC's default: libx264 where present, else MPEG-4 part 2, else the
 * container's own), the pixel formats of the encoder and of the caller's rendering, and the
 * checks of --preset and --crf, all before anything is opened or written, so that a
 * refusal is a usage error with nothing left behind.
 */
#include <string.h>

#include <libavutil/avstring.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

#include "video_out_internal.h"

enum AVPixelFormat es_vout_av_of(int es_fmt) {
  switch (es_fmt) {
  case ES_PIX_RGB24: return AV_PIX_FMT_RGB24;
  case ES_PIX_GRAY8: return AV_PIX_FMT_GRAY8;
  case ES_PIX_GRAY16: return AV_PIX_FMT_GRAY16;
  case ES_PIX_YUV444P: return AV_PIX_FMT_YUV444P;
  case ES_PIX_YUV420P: return AV_PIX_FMT_YUV420P;
  default: return AV_PIX_FMT_NONE;
  }
}

/* Whether encoder c takes frames of format f. */
static int supports(const AVCodec *c, enum AVPixelFormat f) {
  if (!c->pix_fmts) return 1; /* the encoder does not say: assume it takes anything */
  for (const enum AVPixelFormat *p = c->pix_fmts; *p != AV_PIX_FMT_NONE; p++)
    if (*p == f) return 1;
  return 0;
}

/* Whether frames of format f can be made for an encoder: libswscale writes it, or it is pal8,
 * made as BGR8 (grey: GRAY8) indices with a fixed palette, as ffmpeg's scale filter does. */
static int can_make(enum AVPixelFormat f) {
  return f == AV_PIX_FMT_PAL8 || sws_isSupportedOutput(f) > 0;
}

/* The encoder's best format for src among those can_make allows; AV_PIX_FMT_NONE if none
 * (hardware frames only). */
static enum AVPixelFormat best_of(const AVCodec *c, enum AVPixelFormat src) {
  enum AVPixelFormat list[256];
  int n = 0;
  for (const enum AVPixelFormat *p = c->pix_fmts; *p != AV_PIX_FMT_NONE && n < 255; p++)
    if (can_make(*p)) list[n++] = *p;
  list[n] = AV_PIX_FMT_NONE;
  return n ? avcodec_find_best_pix_fmt_of_list(list, src, 0, NULL) : AV_PIX_FMT_NONE;
}

/* Chooses the encoder's pixel format and the rendering asked of the caller. *enc is
 * AV_PIX_FMT_NONE when the encoder takes nothing that can be made. asked: the heat's chroma
 * asked for (--pix-fmt: ES_PIX_YUV420P or ES_PIX_YUV444P; the caller refuses an encoder that
 * does not take it), or ES_PIX_NONE. */
static void choose_formats(const AVCodec *c, int format, int asked, int w, int h,
                           enum AVPixelFormat *enc, int *want) {
  int odd = (w | h) & 1;
  int x264 = !strncmp(c->name, "libx264", 7);
  if (format == ES_PIX_GRAY8 || format == ES_PIX_GRAY16) {
    enum AVPixelFormat g = format == ES_PIX_GRAY8 ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_GRAY16;
    *want = format;
    if (supports(c, g)) {
      *enc = g;
      return;
    }
    /* Convert on the CPU: the encoder's best format for grey of this depth. */
    if (c->pix_fmts)
      *enc = best_of(c, g);
    else
      *enc = AV_PIX_FMT_YUV420P;
    if (x264 && odd && *enc == AV_PIX_FMT_YUV420P) *enc = AV_PIX_FMT_YUV444P;
    return;
  }
  /* Heat (RGB): YUV 4:2:0 where it can be, what browsers and hardware decoders play (libx264
   * at an odd size too: encoded at the even size above, es_vout_choose_codec), or 4:4:4 where
   * asked. The JPEG encoders list yuv420p but refuse it in limited range (the renderer's) as
   * non-standard: there the RGB goes into full-range yuvj420p, the format ffmpeg gives them. */
  if (asked == ES_PIX_YUV444P) {
    *enc = supports(c, AV_PIX_FMT_YUV444P) ? AV_PIX_FMT_YUV444P : AV_PIX_FMT_NONE;
    *want = ES_PIX_YUV444P;
  } else if ((c->id == AV_CODEC_ID_MJPEG || c->id == AV_CODEC_ID_LJPEG) &&
      supports(c, AV_PIX_FMT_YUVJ420P)) {
    *enc = AV_PIX_FMT_YUVJ420P;
    *want = ES_PIX_RGB24;
  } else if (supports(c, AV_PIX_FMT_YUV420P) || asked == ES_PIX_YUV420P) {
    /* (asked and not taken: AV_PIX_FMT_NONE below, refused by the caller) */
    *enc = supports(c, AV_PIX_FMT_YUV420P) ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NONE;
    *want = ES_PIX_YUV420P;
  } else if (supports(c, AV_PIX_FMT_YUV444P)) {
    *enc = AV_PIX_FMT_YUV444P;
    *want = ES_PIX_YUV444P;
  } else {
    *enc = best_of(c, AV_PIX_FMT_RGB24);
    *want = ES_PIX_RGB24;
  }
}

/* Whether the output counts frames instead of storing a time stamp per frame: its time base
 * must then be one frame, or the rate it states is the input's time base. AVI's stream rate
 * is its time base and gaps become empty frames (1/12800 made a 25 fps clip 600 fps, 1800
 * frames; ffmpeg also names avi when it chooses frame timing); YUV4MPEG2 writes its F field
 * from the time base; Ogg's VP8 header takes it as the frame rate, as libtheora does for
 * Theora's headers in any container (12800 fps; decoders then read 7 frames of 75, in Ogg
 * and in Matroska alike); a raw stream has no time stamps at all. */
int es_vout_counts_frames(const AVOutputFormat *f, const AVCodec *c) {
  return (f->flags & AVFMT_NOTIMESTAMPS) || !strcmp(f->name, "avi") ||
         !strcmp(f->name, "yuv4mpegpipe") || !strcmp(f->name, "ogg") || !strcmp(f->name, "ogv") ||
         c->id == AV_CODEC_ID_THEORA;
}

/* Whether the muxer takes video of codec id, asked before anything is opened or written.
 * avformat_query_codec first; where it says no, the muxer's own list of codec tags still
 * counts (Matroska's query knows its native ids only, yet it writes any codec of that list,
 * png, huffyuv, ..., as V_MS/VFW/FOURCC, and one with a QuickTime tag, gif, tiff, hap, as
 * V_QUICKTIME, as ffmpeg does). Where the muxer has neither query
 * nor list (ogg, yuv4mpegpipe, mpegts, mpeg, gif) its init and header are tried on a w x h
 * stream of that codec, written into memory: ogg and yuv4mpegpipe refuse what they cannot
 * hold in their init, gif in its header. */
static int muxer_takes(const AVOutputFormat *ofmt, enum AVCodecID id, int w, int h) {
  unsigned int tag;
  int q = avformat_query_codec(ofmt, id, FF_COMPLIANCE_NORMAL);
  if (q >= 0) {
    if (q == 1 || (ofmt->codec_tag && av_codec_get_tag2(ofmt->codec_tag, id, &tag))) return 1;
    /* Matroska also writes a codec that QuickTime has a tag for as V_QUICKTIME (gif, tiff,
     * hap, smc, sgi), as ffmpeg does. */
    const struct AVCodecTag *const mov[] = {avformat_get_mov_video_tags(), NULL};
    return !strcmp(ofmt->name, "matroska") && av_codec_get_tag2(mov, id, &tag);
  }
  AVFormatContext *f = NULL;
  int ok = 0;
  if (avformat_alloc_output_context2(&f, ofmt, NULL, NULL) < 0) return 0;
  AVStream *st = avformat_new_stream(f, NULL);
  if (st && avio_open_dyn_buf(&f->pb) >= 0) {
    st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
    st->codecpar->codec_id = id;
    st->codecpar->width = w;
    st->codecpar->height = h;
    st->time_base = (AVRational){1, 25};
    /* The header too: some muxers check the codec only there (gif takes gif alone). */
    ok = avformat_init_output(f, NULL) >= 0 && avformat_write_header(f, NULL) >= 0;
    uint8_t *buf = NULL;
    avio_close_dyn_buf(f->pb, &buf);
    av_free(buf);
    f->pb = NULL;
  }
  avformat_free_context(f);
  return ok;
}

/* SPEC's default encoder for container ofmt, into *codec: libx264 where present, else MPEG-4
 * part 2, where the container holds them; a container that holds neither (webm, ogv) gets its
 * muxer's own default, as ffmpeg picks it (libvpx-vp9, libtheora). Where none fits, a status
 * with msg: ES_ERR_OUTPUT where this libavcodec has none of them (it cannot write video),
 * ES_ERR_USAGE where the container holds none of those it has. */
static int default_codec(const AVOutputFormat *ofmt, const es_video_out_opts *o,
                         const AVCodec **codec, char *msg, size_t len) {
  const AVCodec *cand[3] = {avcodec_find_encoder_by_name("libx264"),
                            avcodec_find_encoder(AV_CODEC_ID_MPEG4), NULL};
  const AVCodec *own = avcodec_find_encoder(ofmt->video_codec);
  if (own != cand[0] && own != cand[1]) cand[2] = own;
  char refused[128] = "";
  int nref = 0;
  for (int i = 0; i < 3 && !*codec; i++) {
    if (!cand[i] || (i == 1 && cand[1] == cand[0])) continue;
    if (muxer_takes(ofmt, cand[i]->id, o->width, o->height))
      *codec = cand[i];
    else
      av_strlcatf(refused, sizeof refused, "%s%s", nref++ ? " or " : "", cand[i]->name);
  }
  if (*codec) return ES_OK;
  /* The container's own codec, where this libavcodec has no encoder for it. */
  const char *lack =
      ofmt->video_codec != AV_CODEC_ID_NONE && !own ? avcodec_get_name(ofmt->video_codec) : NULL;
  if (!nref) { /* none of them in this libavcodec: it cannot write video */
    snprintf(msg, len, "libavcodec has neither libx264 nor mpeg4%s%s%s", lack ? " nor a " : "",
             lack ? lack : "", lack ? " encoder" : "");
    return ES_ERR_OUTPUT;
  }
  snprintf(msg, len, "the %s container cannot hold %s video%s%s%s", ofmt->name, refused,
           lack ? ", and libavcodec has no " : "", lack ? lack : "", lack ? " encoder" : "");
  return ES_ERR_USAGE;
}

int es_vout_choose_codec(es_video_out *v, const char *path, const es_video_out_opts *o,
                         const AVOutputFormat **ofmt_out, const AVCodec **codec_out,
                         enum AVPixelFormat *enc_fmt_out, char *msg, size_t len) {
  const AVCodec *codec = NULL, *taken = NULL; /* taken: the default codec muxer_takes accepted */
  enum AVPixelFormat enc_fmt = AV_PIX_FMT_NONE;
  const AVOutputFormat *ofmt = av_guess_format(NULL, path, NULL);
  if (!ofmt && es_path_is_y4m(path)) {
    /* A y4m name, and a libavformat built without the muxer (a minimal FFmpeg): the
     * name is right, the library cannot write it - as for -o - (video_out_y4m.c). */
    snprintf(msg, len, "libavformat has no yuv4mpegpipe muxer");
    return ES_ERR_OUTPUT;
  }
  if (!ofmt || (ofmt->flags & AVFMT_NOFILE)) {
    snprintf(msg, len, "no video container for this file name");
    return ES_ERR_USAGE;
  }
  if (!strcmp(ofmt->name, "yuv4mpegpipe") && !o->codec) {
    /* A .y4m file: the same uncompressed frames as on stdout, not an encoder's packets. */
    if (!(codec = es_vout_y4m_codec(msg, len))) return ES_ERR_OUTPUT;
  } else if (o->codec) {
    codec = avcodec_find_encoder_by_name(o->codec);
    if (!codec || codec->type != AVMEDIA_TYPE_VIDEO) {
      snprintf(msg, len, "codec %s: no such video encoder in libavcodec", o->codec);
      return ES_ERR_USAGE;
    }
  } else {
    int rc = default_codec(ofmt, o, &codec, msg, len);
    if (rc < 0) return rc;
    taken = codec;
  }
  /* (a default codec was asked already: muxer_takes may try the muxer's init) */
  if (codec != taken && !muxer_takes(ofmt, codec->id, o->width, o->height)) {
    snprintf(msg, len, "the %s container cannot hold %s video", ofmt->name, codec->name);
    return ES_ERR_USAGE;
  }
  if (codec->id == AV_CODEC_ID_WRAPPED_AVFRAME)
    v->want = es_vout_y4m_want(o), enc_fmt = es_vout_av_of(v->want);
  else
    choose_formats(codec, o->format, o->pix_fmt, o->width, o->height, &enc_fmt, &v->want);
  if (o->pix_fmt != ES_PIX_NONE && enc_fmt != es_vout_av_of(o->pix_fmt) &&
      !(o->pix_fmt == ES_PIX_YUV420P && enc_fmt == AV_PIX_FMT_YUVJ420P)) {
    snprintf(msg, len, "pix_fmt %s: encoder %s does not take it",
             av_get_pix_fmt_name(es_vout_av_of(o->pix_fmt)), codec->name);
    return ES_ERR_USAGE;
  }
  /* H.264 crops 4:2:0 in steps of two pixels only (its SPS frame cropping): libx264 refuses
   * an odd size there. Heat of an odd size is encoded at the even size above, the last
   * column or row repeated (video_out_frame.c), and that is the size shown: 4:2:0 is what
   * browsers and hardware decoders play, where High 4:4:4 Predictive mostly is not.
   * --pix-fmt yuv444p keeps the exact size. */
  if (!strcmp(codec->name, "libx264") && o->format == ES_PIX_RGB24 &&
      enc_fmt == AV_PIX_FMT_YUV420P) {
    v->enc_w += o->width & 1;
    v->enc_h += o->height & 1;
  }
  if (enc_fmt == AV_PIX_FMT_NONE) {
    char names[160] = "";
    for (const enum AVPixelFormat *p = codec->pix_fmts; p && *p != AV_PIX_FMT_NONE; p++)
      av_strlcatf(names, sizeof names, "%s%s", *names ? " " : "", av_get_pix_fmt_name(*p));
    snprintf(msg, len, "codec %s: the encoder takes only %s frames, which cannot be made here",
             codec->name, names);
    return ES_ERR_USAGE;
  }
  v->want_av = es_vout_av_of(v->want);
  *ofmt_out = ofmt;
  *codec_out = codec;
  *enc_fmt_out = enc_fmt;
  return ES_OK;
}

int es_vout_check_tuning(const AVCodec *codec, const es_video_out_opts *o, char *msg,
                         size_t len) {
  if (o->preset && !strcmp(codec->name, "libx264")) {
    /* libx264 prints its own "x264 [error]: invalid preset" straight to stderr, past
     * libavutil's log: refuse an unknown name before opening it (x264's preset list). */
    static const char *const x264_presets[] = {"ultrafast", "superfast", "veryfast", "faster",
                                               "fast",      "medium",    "slow",     "slower",
                                               "veryslow",  "placebo"};
    int known = 0;
    for (size_t i = 0; i < sizeof x264_presets / sizeof *x264_presets; i++)
      known |= !strcmp(o->preset, x264_presets[i]);
    if (!known) {
      snprintf(msg, len,
               "preset %s: not a preset of encoder libx264 (ultrafast, superfast, veryfast, "
               "faster, fast, medium, slow, slower, veryslow, placebo)",
               o->preset);
      return ES_ERR_USAGE;
    }
  }
  if (o->crf >= 0) {
    AVCodecContext *probe = avcodec_alloc_context3(codec);
    int has_crf = probe && av_opt_find(probe->priv_data, "crf", NULL, 0, 0) != NULL;
    avcodec_free_context(&probe);
    if (!has_crf) {
      snprintf(msg, len, "crf: encoder %s has no crf option", codec->name);
      return ES_ERR_USAGE;
    }
  }
  return ES_OK;
}
