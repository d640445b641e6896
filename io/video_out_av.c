/*
 * video_out_av.c - the encoder and the container of a libav writer (an encoded file, FIFO or
 * device; y4m on stdout or in a file through the wrapped_avframe encoder): their opening, in
 * an order that refuses what cannot be written before a byte is, and their finish at close.
 * An encoder of a large frame opens only at the first frame (lazy): a header alone must not
 * cost the frames it declares (SPEC 3); at open, one of a small size checks the options.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

#include "video_out_internal.h"

/* Above this many pixels a frame, the encoder opens at the first frame (see es_video_out's
 * lazy): 2 MP, 1920x1080 and less, opens at once as ever (one encoder, not two). */
#define ES_VIDEO_OUT_LAZY_PIXELS (1 << 21)

void es_vout_averr(char *msg, size_t len, const char *what, int err) {
  char e[AV_ERROR_MAX_STRING_SIZE];
  av_strerror(err, e, sizeof e);
  snprintf(msg, len, "%s: %s", what, e);
}

/* Whether an encoder's failure err (at its open or on a frame) is memory running out: libav*
 * said so (AVERROR(ENOMEM)), or an external encoder's generic error (AVERROR_EXTERNAL) comes
 * while memory for 16 more frames of width x height (and 256 MB) cannot be had. libx264 reports its
 * own failed allocation only by printing "x264 [error]: malloc of size N failed" through its
 * default logger (x264_malloc has no handle that reaches libavcodec's log, so no log capture
 * sees it), and libavcodec returns AVERROR_EXTERNAL: hence the probe. It sees an
 * address-space limit (ulimit -v) or an exhausted heap; not a kernel that overcommits and
 * kills later, which no return code reports anyway. The margin is wide because by the time
 * the probe runs the encoder may have torn down its threads and freed their stacks: with 16 MB,
 * test_cli_encoder_nomem saw "exit 3" at one address-space limit in two loaded runs of the
 * suite (the probe found room the encoder had just given back). */
int es_vout_encoder_nomem(int err, int width, int height) {
  if (err == AVERROR(ENOMEM)) return 1;
  if (err != AVERROR_EXTERNAL) return 0;
  const size_t frame = (size_t)(width > 0 ? width : 1) * (size_t)(height > 0 ? height : 1);
  void *p = malloc(16 * frame + ((size_t)256 << 20));
  free(p);
  return p == NULL;
}

/* Allocates, sets up and opens an encoder. tuning: apply --crf/--preset (or mpeg4's
 * constant quantiser). Returns an AVERROR; *out is set either way (free it). */
static int open_encoder(AVCodecContext **out, const AVCodec *codec, const es_video_out_opts *o,
                        int w, int h, enum AVPixelFormat fmt, AVRational tb, AVRational fps,
                        int global_header, int tuning) {
  AVCodecContext *e = *out = avcodec_alloc_context3(codec);
  if (!e) return AVERROR(ENOMEM);
  e->width = w;
  e->height = h;
  e->pix_fmt = fmt;
  e->time_base = tb;
  e->framerate = fps;
  /* The input's pixel shape: the map is in its stored pixels (an anamorphic source's heat
   * video is shown as wide as the source), as ffmpeg keeps it. */
  e->sample_aspect_ratio = (AVRational){1, 1};
  if (o->sar_num > 0 && o->sar_den > 0)
    av_reduce(&e->sample_aspect_ratio.num, &e->sample_aspect_ratio.den, o->sar_num, o->sar_den,
              INT_MAX);
  /* The input's field order, as ffmpeg passes it on: the map's rows are the woven frame's,
   * so a player or filter that treats fields apart sees them where the source has them. */
  if (o->field_order > AV_FIELD_UNKNOWN && o->field_order <= AV_FIELD_BT)
    e->field_order = (enum AVFieldOrder)o->field_order;
  if (fmt == AV_PIX_FMT_GRAY8 || fmt == AV_PIX_FMT_GRAY16) {
    e->color_range = AVCOL_RANGE_JPEG;
  } else if (fmt == AV_PIX_FMT_YUVJ420P || fmt == AV_PIX_FMT_YUVJ422P ||
             fmt == AV_PIX_FMT_YUVJ444P) {
    e->color_range = AVCOL_RANGE_JPEG; /* what the J formats mean */
    e->colorspace = AVCOL_SPC_SMPTE170M;
  } else {
    e->color_range = AVCOL_RANGE_MPEG;
    e->colorspace = AVCOL_SPC_SMPTE170M; /* the renderer's YUV is BT.601 */
  }
  if (global_header) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  /* libx265 prints its banner, settings and errors straight to stderr (27 lines a run), past
   * libavutil's log: silenced with it, as the failure comes back as our own message. */
  if (!strcmp(codec->name, "libx265") && av_log_get_level() < AV_LOG_INFO)
    av_opt_set(e->priv_data, "x265-params", "log-level=none", 0);
  if (tuning) {
    int has_crf = av_opt_find(e->priv_data, "crf", NULL, 0, 0) != NULL;
    if (o->crf >= 0 && has_crf) {
      av_opt_set_int(e->priv_data, "crf", o->crf, 0);
    } else if (o->crf < 0 && !has_crf && codec->id == AV_CODEC_ID_MPEG4) {
      /* mpeg4's default is a 200 kb/s bit rate, far too little for a heat map: use a
       * constant quantiser instead. */
      e->flags |= AV_CODEC_FLAG_QSCALE;
      e->global_quality = FF_QP2LAMBDA * 3;
    }
    if (o->preset && av_opt_set(e->priv_data, "preset", o->preset, 0) < 0)
      return AVERROR_OPTION_NOT_FOUND;
  }
  return avcodec_open2(e, codec, NULL);
}

/* The video stream of v->fmt, described by par, with the input's rotation where there is one;
 * YUV4MPEG2's 16-bit grey allowed. */
static int add_stream(es_video_out *v, const AVCodecParameters *par, char *msg, size_t len) {
  int err;
  v->st = avformat_new_stream(v->fmt, NULL);
  if (!v->st) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  v->st->time_base = v->tb;
  v->st->sample_aspect_ratio = par->sample_aspect_ratio;
  v->st->avg_frame_rate = v->fps;
  v->st->r_frame_rate = v->fps;
  if ((err = avcodec_parameters_copy(v->st->codecpar, par)) < 0) {
    es_vout_averr(msg, len, "stream parameters", err);
    return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
  }
  if (v->has_dm) {
    const size_t dmsize = sizeof v->dm;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 102) /* FFmpeg 6.1: side data in codecpar */
    AVPacketSideData *sd = av_packet_side_data_new(&v->st->codecpar->coded_side_data,
                                                   &v->st->codecpar->nb_coded_side_data,
                                                   AV_PKT_DATA_DISPLAYMATRIX, dmsize, 0);
    uint8_t *dm = sd ? sd->data : NULL;
#else
    uint8_t *dm = av_stream_new_side_data(v->st, AV_PKT_DATA_DISPLAYMATRIX, dmsize);
#endif
    if (!dm) {
      snprintf(msg, len, "out of memory");
      return ES_ERR_NOMEM;
    }
    memcpy(dm, v->dm, dmsize);
  }
  /* 16-bit grey is "Cmono16", which FFmpeg's y4m muxer counts as an extension (-strict -1);
   * ffmpeg reads it back. */
  if (!strcmp(v->fmt->oformat->name, "yuv4mpegpipe"))
    v->fmt->strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL;
  return ES_OK;
}

/* The container freed, its output (v->pb, or a dry run's buffer, freed already) not closed. */
static void drop_container(es_video_out *v) {
  v->fmt->pb = NULL;
  avformat_free_context(v->fmt);
  v->fmt = NULL;
  v->st = NULL;
}

/* A lazy writer's container, on the output opened at open, with a stream described by par;
 * its header written. On failure the output stays v->pb and the container is freed. dry:
 * the header is written into memory and the container freed either way (a muxer may have
 * written part of its header before it refuses). */
static int lazy_container(es_video_out *v, const AVCodecParameters *par, int dry, char *msg,
                          size_t len) {
  int rc, err = avformat_alloc_output_context2(&v->fmt, v->ofmt, NULL, NULL);
  if (err < 0) {
    es_vout_averr(msg, len, "cannot create the container", err);
    return ES_ERR_OUTPUT;
  }
  if ((rc = add_stream(v, par, msg, len)) == ES_OK) {
    if (!dry) {
      v->fmt->pb = v->pb;
    } else if ((err = avio_open_dyn_buf(&v->fmt->pb)) < 0) {
      snprintf(msg, len, "out of memory");
      rc = ES_ERR_NOMEM;
    }
    if (rc == ES_OK && (err = avformat_write_header(v->fmt, NULL)) < 0) {
      es_vout_averr(msg, len, "cannot write the header", err);
      rc = err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
    }
    if (dry && v->fmt->pb) {
      uint8_t *buf = NULL;
      avio_close_dyn_buf(v->fmt->pb, &buf);
      av_free(buf);
    }
  }
  if (rc != ES_OK || dry) {
    drop_container(v);
    return rc;
  }
  v->pb = NULL; /* the container's now */
  v->header_written = 1;
  return ES_OK;
}

/* The first frame of a lazy writer: the encoder at the output's size, then the container. */
int es_vout_lazy_start(es_video_out *v, char *msg, size_t len) {
  int err = open_encoder(&v->enc, v->codec, &v->opts, v->enc_w, v->enc_h, v->enc_fmt, v->tb,
                         v->fps, v->global_header, 1);
  if (err < 0) {
    char what[200];
    snprintf(what, sizeof what, "encoder %s refused %dx%d %s", v->codec->name, v->width,
             v->height, av_get_pix_fmt_name(v->enc_fmt) ? av_get_pix_fmt_name(v->enc_fmt) : "?");
    es_vout_averr(msg, len, what, err);
    return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
  }
  if ((err = avcodec_parameters_from_context(v->par, v->enc)) < 0) {
    es_vout_averr(msg, len, "stream parameters", err);
    return ES_ERR_OUTPUT;
  }
  int rc = lazy_container(v, v->par, 0, msg, len);
  if (rc == ES_OK) v->lazy = 0;
  return rc;
}

/* Close of a lazy writer that had no frame: the container with the stream as described at
 * open (the output's size, no encoder opened), as ffmpeg writes one with no frame (MP4 and
 * MOV then leave the empty track out). Its codec headers (extradata) were the small
 * encoder's: left out; where the container cannot be written without them (H.264 in
 * Matroska), the small encoder's are kept, there being no frame they could misdescribe. */
static int lazy_empty(es_video_out *v, char *msg, size_t len) {
  AVCodecParameters *bare = avcodec_parameters_alloc();
  int rc;
  if (!bare || avcodec_parameters_copy(bare, v->par) < 0) {
    avcodec_parameters_free(&bare);
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  av_freep(&bare->extradata);
  bare->extradata_size = 0;
  const AVCodecParameters *use = bare;
  if (v->par->extradata_size && lazy_container(v, bare, 1, msg, len) == ES_ERR_OUTPUT)
    use = v->par; /* refused without them (tried into memory first) */
  rc = lazy_container(v, use, 0, msg, len);
  avcodec_parameters_free(&bare);
  if (rc == ES_OK) msg[0] = 0; /* the refusal tried into memory is no error */
  return rc;
}

/* The encoder's time bases to try, best first, into tbs; returns how many (1 to 3). The
 * input's time base first, so that variable frame timing survives (MP4, Matroska); where the
 * encoder refuses it (mpeg4 takes denominators up to 65535 only, 1/90000 is common), one frame
 * of the input's base rate, on which every time stamp falls (as ffmpeg's encoder time base;
 * one frame of the average rate moved variable-rate frames by up to half a frame), then one
 * frame of the average. AVI counts frames but keeps gaps (empty frames): the base rate's frame
 * is its unit; other outputs that count frames (y4m, Ogg) play them one after the other: one
 * frame of the average rate. */
static int time_bases(const es_video_out *v, const es_video_out_opts *o, AVRational tbs[3]) {
  AVRational base = {o->base_num, o->base_den}; /* every input time stamp on its frames */
  if (base.num <= 0 || base.den <= 0) base = v->fps;
  const int gaps = !strcmp(v->fmt->oformat->name, "avi");
  const AVRational cand[3] = {v->in_tb, av_inv_q(base), av_inv_q(v->fps)};
  int ntb = 0;
  for (int i = v->counted ? (gaps ? 1 : 2) : 0; i < 3; i++) {
    int dup = 0;
    for (int k = 0; k < ntb; k++)
      dup |= !av_cmp_q(tbs[k], cand[i]);
    if (!dup) tbs[ntb++] = cand[i];
  }
  return ntb;
}

/* The message and status of an encoder that would not open at pw x ph (err): where it opens
 * without --preset and --crf (plain_opens > 0; -1: not tried yet), they were refused (a usage
 * error); else the encoder refused the frames, or memory ran out (exit 4, not 3). */
static int encoder_refused(const es_video_out *v, const es_video_out_opts *o,
                           const AVCodec *codec, enum AVPixelFormat enc_fmt, int pw, int ph,
                           AVRational tb, int global_header, int err, int plain_opens, char *msg,
                           size_t len) {
  int rc;
  AVCodecContext *plain = NULL;
  if (plain_opens < 0 && err != AVERROR(ENOMEM) && v->mode == ES_VOUT_ENCODE &&
      (o->preset || o->crf >= 0))
    plain_opens =
        open_encoder(&plain, codec, o, pw, ph, enc_fmt, tb, v->fps, global_header, 0) >= 0;
  if (plain_opens > 0) {
    /* It opens without them: the preset or crf was refused. */
    if (o->preset && o->crf >= 0)
      snprintf(msg, len, "preset %s or crf %d: refused by encoder %s", o->preset, o->crf,
               codec->name);
    else if (o->preset)
      snprintf(msg, len, "preset %s: not a preset of encoder %s", o->preset, codec->name);
    else
      snprintf(msg, len, "crf %d: refused by encoder %s", o->crf, codec->name);
    rc = ES_ERR_USAGE;
  } else {
    char what[200];
    snprintf(what, sizeof what, "encoder %s refused %dx%d %s%s", codec->name, o->width,
             o->height, av_get_pix_fmt_name(enc_fmt) ? av_get_pix_fmt_name(enc_fmt) : "?",
             (o->width | o->height) & 1 ? " (it may not take odd sizes)" : "");
    es_vout_averr(msg, len, what, err);
    rc = ES_ERR_OUTPUT;
    if (es_vout_encoder_nomem(err, o->width, o->height)) { /* exit 4, not 3 */
      char e[AV_ERROR_MAX_STRING_SIZE];
      av_strerror(err, e, sizeof e);
      snprintf(msg, len, "encoder %s: out of memory for %dx%d (%s)", codec->name, o->width,
               o->height, e);
      rc = ES_ERR_NOMEM;
    }
  }
  avcodec_free_context(&plain);
  return rc;
}

/* v->enc opened on the first of the time bases tbs (ntb) that it takes, which becomes v->tb.
 * A large encoder waits for the first frame (lazy): here one of a small size of the same
 * parity checks the options, time base and pixel format. Where that one is refused (an
 * encoder of fixed sizes, h263), the encoder is opened at the output's size, as before. */
static int open_checked_encoder(es_video_out *v, const es_video_out_opts *o,
                                const AVCodec *codec, enum AVPixelFormat enc_fmt,
                                const AVRational *tbs, int ntb, int global_header, char *msg,
                                size_t len) {
  int err;
  v->lazy = v->mode == ES_VOUT_ENCODE && (int64_t)v->enc_w * v->enc_h > ES_VIDEO_OUT_LAZY_PIXELS;
  int pw = v->enc_w, ph = v->enc_h;
  int plain_opens = -1; /* the encoder at pw x ph opens without --preset/--crf (-1: not tried) */
  for (;;) {
    if (v->lazy) {
      pw = v->enc_w > 65 ? 64 + (v->enc_w & 1) : v->enc_w;
      ph = v->enc_h > 65 ? 64 + (v->enc_h & 1) : v->enc_h;
    } else {
      pw = v->enc_w;
      ph = v->enc_h;
    }
    err = AVERROR(EINVAL);
    for (int i = 0; i < ntb && err < 0; i++) {
      avcodec_free_context(&v->enc);
      err = open_encoder(&v->enc, codec, o, pw, ph, enc_fmt, tbs[i], v->fps, global_header,
                         v->mode == ES_VOUT_ENCODE);
      v->tb = tbs[i];
      if (err == AVERROR(ENOMEM)) break;
    }
    if (err >= 0 || !v->lazy || err == AVERROR(ENOMEM)) break;
    if (v->mode == ES_VOUT_ENCODE && (o->preset || o->crf >= 0)) {
      AVCodecContext *plain = NULL;
      plain_opens = open_encoder(&plain, codec, o, pw, ph, enc_fmt, tbs[ntb - 1], v->fps,
                                 global_header, 0) >= 0;
      avcodec_free_context(&plain);
      if (plain_opens) break; /* the small one opens without them: they were refused (below) */
    }
    v->lazy = 0;
    plain_opens = -1; /* that was the small size */
  }
  if (err >= 0) return ES_OK;
  return encoder_refused(v, o, codec, enc_fmt, pw, ph, tbs[ntb - 1], global_header, err,
                         plain_opens, msg, len);
}

/* The output opened (a FIFO checked and opened in place first, video_out_file.c) and the
 * muxer's init run; then the header written, or for a lazy writer the container and the
 * encoder freed, the output kept open for the first frame. */
static int open_output(es_video_out *v, const AVCodec *codec, char **url, char *msg,
                       size_t len) {
  int rc, err;
  if (v->final_path && !v->tmp_path && (rc = es_vout_file_stream(v, url, msg, len)) < 0)
    return rc;
  if ((err = avio_open(&v->fmt->pb, *url, AVIO_FLAG_WRITE)) < 0) {
    es_vout_averr(msg, len, "cannot open for writing", err);
    return ES_ERR_OUTPUT;
  }
  /* The muxer's checks of the stream come before its header is written, and write nothing:
   * a refusal there is the container refusing this codec (mov and VP9 or AV1), a usage
   * problem as in video_out_codec.c, not a failed write. */
  if ((err = avformat_init_output(v->fmt, NULL)) < 0) {
    if (v->mode == ES_VOUT_ENCODE && !v->tmp_path && err != AVERROR(ENOMEM) &&
        !(v->fmt->pb->seekable & AVIO_SEEKABLE_NORMAL)) {
      /* a FIFO: video_out_codec.c accepted the codec, so it is the seeking (mp4, mov) */
      es_vout_say_seeks(msg, len, v->ofmt);
      return ES_ERR_OUTPUT;
    }
    if (v->mode == ES_VOUT_ENCODE && err != AVERROR(ENOMEM)) {
      snprintf(msg, len, "the %s container cannot hold %s video", v->ofmt->name, codec->name);
      return ES_ERR_USAGE;
    }
    es_vout_averr(msg, len, "cannot write the header", err);
    return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
  }
  if (v->lazy) {
    /* The checks are done: the output stays open, the container and the encoder are made
     * again at the first frame (or for none, at close), at the output's size. */
    v->pb = v->fmt->pb;
    drop_container(v);
    avcodec_free_context(&v->enc);
    return ES_OK;
  }
  if ((err = avformat_write_header(v->fmt, NULL)) < 0) {
    es_vout_averr(msg, len, "cannot write the header", err);
    return ES_ERR_OUTPUT;
  }
  v->header_written = 1;
  return ES_OK;
}

int es_vout_av_open(es_video_out *v, const es_video_out_opts *o, const AVOutputFormat *ofmt,
                    const AVCodec *codec, enum AVPixelFormat enc_fmt, char **url, char *msg,
                    size_t len) {
  int rc, err;
  AVRational tbs[3];
  if (!*url) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if ((err = avformat_alloc_output_context2(&v->fmt, ofmt, NULL, NULL)) < 0) {
    es_vout_averr(msg, len, "cannot create the container", err);
    return ES_ERR_OUTPUT;
  }
  v->frame = av_frame_alloc();
  v->held = av_frame_alloc();
  v->pkt = av_packet_alloc();
  if (!v->frame || !v->held || !v->pkt) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if (v->mode == ES_VOUT_ENCODE && (rc = es_vout_check_tuning(codec, o, msg, len)) < 0)
    return rc;
  const int global_header = !!(v->fmt->oformat->flags & AVFMT_GLOBALHEADER);
  v->counted = es_vout_counts_frames(v->fmt->oformat, codec);
  const int ntb = time_bases(v, o, tbs);
  rc = open_checked_encoder(v, o, codec, enc_fmt, tbs, ntb, global_header, msg, len);
  if (rc < 0) return rc;
  v->codec = codec;
  v->ofmt = ofmt;
  v->enc_fmt = enc_fmt;
  v->global_header = global_header;
  v->step = av_rescale_q(1, av_inv_q(v->fps), v->tb);
  if (v->step < 1) v->step = 1;
  if (o->ts_discont) v->jump = av_rescale_q(ES_TS_JUMP_S, (AVRational){1, 1}, v->tb);
  v->opts = *o;
  v->opts.codec = NULL;
  v->opts.display_matrix = NULL;
  if (o->preset && !(v->preset = strdup(o->preset))) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  v->opts.preset = v->preset;
  /* The input's rotation metadata: the map is in the stored orientation, as the source's
   * frames are, so players turn both alike. Containers without it (y4m, AVI) drop it. */
  if (o->display_matrix && v->mode == ES_VOUT_ENCODE) {
    memcpy(v->dm, o->display_matrix, sizeof v->dm);
    v->has_dm = 1;
  }
  v->par = avcodec_parameters_alloc();
  if (!v->par) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if ((err = avcodec_parameters_from_context(v->par, v->enc)) < 0) {
    es_vout_averr(msg, len, "stream parameters", err);
    return ES_ERR_OUTPUT;
  }
  v->par->width = v->enc_w; /* the encoder of a lazy open is small */
  v->par->height = v->enc_h;
  if ((rc = add_stream(v, v->par, msg, len)) < 0) return rc;
  if ((rc = open_output(v, codec, url, msg, len)) < 0) return rc;
  return es_vout_frame_setup(v, enc_fmt, msg, len);
}

int es_vout_av_close(es_video_out *v, int commit, char *msg, size_t len) {
  int rc = ES_OK, err;
  /* No frame came to a lazy writer: its container, with the stream and no frame. */
  if (commit && v->lazy && !v->header_written) rc = lazy_empty(v, msg, len);
  if (commit && rc == ES_OK && v->header_written) {
    rc = es_vout_frame_flush(v, msg, len);
    if (rc == ES_OK && (err = av_write_trailer(v->fmt)) < 0) {
      es_vout_averr(msg, len, "cannot finish the container", err);
      rc = ES_ERR_OUTPUT;
    }
  }
  if (v->fmt && v->fmt->pb) {
    if (commit && rc == ES_OK) avio_flush(v->fmt->pb);
    if (commit && rc == ES_OK && v->fmt->pb->error < 0) {
      es_vout_averr(msg, len, "write error", v->fmt->pb->error);
      rc = ES_ERR_OUTPUT;
    }
    if ((err = avio_closep(&v->fmt->pb)) < 0 && commit && rc == ES_OK) {
      es_vout_averr(msg, len, "write error", err);
      rc = ES_ERR_OUTPUT;
    }
  }
  if (v->pb && (err = avio_closep(&v->pb)) < 0 && commit && rc == ES_OK) {
    es_vout_averr(msg, len, "write error", err);
    rc = ES_ERR_OUTPUT;
  }
  if (v->tmp_path) {
    const int crc = es_vout_file_commit(v, commit && rc == ES_OK && v->header_written, msg, len);
    if (crc != ES_OK) rc = crc;
  }
  return rc;
}
