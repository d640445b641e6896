/*
 * video_out.c - encoded video files and standard output through libavcodec/libavformat.
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
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "es_io.h"

enum { MODE_ENCODE, MODE_Y4M, MODE_F32 };

struct es_video_out {
  int mode;
  int width, height;
  int enc_w, enc_h;           /* the encoder's frame size: width x height, or for 4:2:0 in
                                 libx264 at an odd size the even size above (padded) */
  int want;                   /* es_pixfmt the caller renders into */
  AVFormatContext *fmt;       /* muxer (encode and y4m) */
  AVCodecContext *enc;        /* encoder (wrapped_avframe for y4m) */
  AVStream *st;
  AVFrame *frame;             /* the encoder's input, refilled per frame */
  /* Each packet lasts until the next frame, the last until the input's end (es_video_out_end):
   * a frame is held back until the next one comes (not where the output counts frames), and
   * the durations of the frames sent wait in durs for their packets (pts, duration pairs). */
  AVFrame *held;              /* the frame held back (swapped with frame), or NULL */
  int has_held;
  int64_t end_pts;            /* the input's end (input time base), or INT64_MIN */
  int64_t *durs;
  size_t ndurs, capdurs;
  AVPacket *pkt;
  struct SwsContext *sws;     /* want -> made_av, when they differ */
  enum AVPixelFormat want_av; /* AVPixelFormat of want */
  enum AVPixelFormat made_av; /* what the frame's planes are made as: the encoder's format, or
                                 for a palette encoder (pal8) its indices as BGR8 or GRAY8 */
  int pal;                    /* the encoder takes pal8: palette is set on every frame */
  uint32_t palette[256];      /* pal8: BGR8's fixed 3-3-2 colours, or a grey ramp */
  AVRational in_tb;           /* time base of the pts the caller passes */
  int counted;                /* the output counts frames: pts become frame numbers */
  int64_t first_pts;          /* counted: the first pts passed (frame 0), or AV_NOPTS_VALUE */
  int64_t last_pts;           /* last pts sent (encoder time base), for monotonicity */
  int64_t step;               /* one frame in the encoder time base (at least 1) */
  int64_t shift;              /* added to every pts: a start before 0, a step back, a break
                               * in a clock that may jump (encoder tb) */
  int64_t jump;               /* a step forward above it is a break (opts.ts_discont); 0: none */
  int64_t frames;             /* frames written */
  int header_written;
  /* Where the header's size is large, the encoder and the container wait for the first
   * frame: a header alone must not cost the frames it declares (SPEC 3; x264 allocates
   * about 5 bytes a pixel when it opens). The options were checked at open on an encoder
   * of a small size. */
  int lazy;
  const AVCodec *codec;       /* the encoder */
  const AVOutputFormat *ofmt; /* the container */
  enum AVPixelFormat enc_fmt; /* the encoder's pixel format */
  AVRational tb, fps;         /* the encoder's time base; the frame rate */
  int global_header;
  es_video_out_opts opts;     /* lazy: what the encoder opens with (preset copied) */
  char *preset;
  int32_t dm[9];              /* the input's rotation, for a container that keeps it */
  int has_dm;
  AVCodecParameters *par;     /* the stream as the encoder at open described it, at the
                                 output's size */
  AVIOContext *pb;            /* lazy: the output, opened at open, until the container */
  int failed;                 /* a write failed: close may not commit */
  char *final_path;           /* encode: the name renamed into at commit (links followed) */
  char *tmp_path;             /* encode: the temporary written to; NULL for a FIFO/device */
  int stream_fd;              /* a FIFO written in place: its descriptor ("pipe:N"), or -1 */
  int overwrite;              /* -y: the commit may replace a file made since the open */
  float *f32_row;             /* f32 on a big-endian host: one byte-swapped row */
};

static void averr(char *msg, size_t len, const char *what, int err) {
  char e[AV_ERROR_MAX_STRING_SIZE];
  av_strerror(err, e, sizeof e);
  snprintf(msg, len, "%s: %s", what, e);
}

/* Whether an encoder's failure err (at its open or on a frame) is memory running out: libav*
 * said so (AVERROR(ENOMEM)), or an external encoder's generic error (AVERROR_EXTERNAL) comes
 * while memory for 16 more frames of width x height (and 16 MB) cannot be had. libx264 reports its
 * own failed allocation only by printing "x264 [error]: malloc of size N failed" through its
 * default logger (x264_malloc has no handle that reaches libavcodec's log, so no log capture
 * sees it), and libavcodec returns AVERROR_EXTERNAL: hence the probe. It sees an
 * address-space limit (ulimit -v) or an exhausted heap; not a kernel that overcommits and
 * kills later, which no return code reports anyway. */
static int es_encoder_nomem(int err, int width, int height) {
  if (err == AVERROR(ENOMEM)) return 1;
  if (err != AVERROR_EXTERNAL) return 0;
  const size_t frame = (size_t)(width > 0 ? width : 1) * (size_t)(height > 0 ? height : 1);
  void *p = malloc(16 * frame + ((size_t)16 << 20));
  free(p);
  return p == NULL;
}

static enum AVPixelFormat av_of(int es_fmt) {
  switch (es_fmt) {
  case ES_PIX_RGB24: return AV_PIX_FMT_RGB24;
  case ES_PIX_GRAY8: return AV_PIX_FMT_GRAY8;
  case ES_PIX_GRAY16: return AV_PIX_FMT_GRAY16;
  case ES_PIX_YUV444P: return AV_PIX_FMT_YUV444P;
  case ES_PIX_YUV420P: return AV_PIX_FMT_YUV420P;
  default: return AV_PIX_FMT_NONE;
  }
}

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
   * at an odd size too: encoded at the even size above, es_video_out_open), or 4:4:4 where
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
static int counts_frames(const AVOutputFormat *f, const AVCodec *c) {
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

/* A temporary file next to v->final_path, created exclusively. */
static int make_tmp(es_video_out *v, char *msg, size_t len) {
  const int fd = es_tmp_create(v->final_path, "es", &v->tmp_path, msg, len);
  if (fd < 0) return fd;
  close(fd); /* libavformat opens it by name */
  return ES_OK;
}

/* Why a container that seeks is refused a pipe. */
static void say_seeks(char *msg, size_t len, const AVOutputFormat *ofmt) {
  snprintf(msg, len,
           "the %s container cannot be written into a pipe (it seeks; try .y4m, .nut or .mkv)",
           ofmt->name);
}

/* A muxer's init tried over an output that cannot seek and keeps nothing, on a copy of v's
 * stream: 1 where it refuses (mp4, mov: they seek back to their index). Asked before a FIFO
 * is opened, as opening one waits for a reader; 0 where it takes it or the trial could not be
 * made (the real init then says). */
#if LIBAVFORMAT_VERSION_MAJOR >= 61
static int discard_bytes(void *opaque, const uint8_t *buf, int n) {
#else
static int discard_bytes(void *opaque, uint8_t *buf, int n) {
#endif
  (void)opaque;
  (void)buf;
  return n;
}

static int pipe_refused(const es_video_out *v) {
  AVFormatContext *f = NULL;
  unsigned char *buf = av_malloc(4096);
  int refused = 0;
  if (buf && avformat_alloc_output_context2(&f, v->ofmt, NULL, NULL) >= 0) {
    AVStream *st = avformat_new_stream(f, NULL);
    f->pb = avio_alloc_context(buf, 4096, 1, NULL, NULL, discard_bytes, NULL);
    if (f->pb) buf = NULL; /* the context's now */
    if (st && f->pb && avcodec_parameters_copy(st->codecpar, v->par) >= 0) {
      st->time_base = v->tb;
      f->strict_std_compliance = v->fmt->strict_std_compliance;
      const int err = avformat_init_output(f, NULL);
      refused = err < 0 && err != AVERROR(ENOMEM);
    }
    if (f->pb) av_freep(&f->pb->buffer);
    avio_context_free(&f->pb);
    avformat_free_context(f);
  }
  av_free(buf);
  return refused;
}

/* A FIFO named as the output is opened here, where its wait for a reader can end on the
 * program's stop (es_output_open_stream: libavformat's open() would wait for good), and
 * written through its descriptor: *url becomes "pipe:N". A device is left to *url. */
static int open_stream(es_video_out *v, char **url, char *msg, size_t len) {
  struct stat st;
  const int fd = es_output_open_stream(v->final_path, msg, len);
  if (fd < 0) return fd;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    close(fd);
    return ES_OK;
  }
  char *pipe_url = av_asprintf("pipe:%d", fd);
  if (!pipe_url) {
    close(fd);
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  av_free(*url);
  *url = pipe_url;
  v->stream_fd = fd; /* the pipe protocol does not close it: es_video_out_close does */
  return ES_OK;
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

/* Above this many pixels a frame, the encoder opens at the first frame (see es_video_out's
 * lazy): 2 MP, 1920x1080 and less, opens at once as ever (one encoder, not two). */
#define ES_VIDEO_OUT_LAZY_PIXELS (1 << 21)

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
    averr(msg, len, "stream parameters", err);
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

/* A lazy writer's container, on the output opened at open, with a stream described by par;
 * its header written. On failure the output stays v->pb and the container is freed. dry:
 * the header is written into memory and the container freed either way (a muxer may have
 * written part of its header before it refuses). */
static int lazy_container(es_video_out *v, const AVCodecParameters *par, int dry, char *msg,
                          size_t len) {
  int rc, err = avformat_alloc_output_context2(&v->fmt, v->ofmt, NULL, NULL);
  if (err < 0) {
    averr(msg, len, "cannot create the container", err);
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
      averr(msg, len, "cannot write the header", err);
      rc = err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
    }
    if (dry && v->fmt->pb) {
      uint8_t *buf = NULL;
      avio_close_dyn_buf(v->fmt->pb, &buf);
      av_free(buf);
    }
  }
  if (rc != ES_OK || dry) {
    v->fmt->pb = NULL;
    avformat_free_context(v->fmt);
    v->fmt = NULL;
    v->st = NULL;
    return rc;
  }
  v->pb = NULL; /* the container's now */
  v->header_written = 1;
  return ES_OK;
}

/* The first frame of a lazy writer: the encoder at the output's size, then the container. */
static int lazy_start(es_video_out *v, char *msg, size_t len) {
  int err = open_encoder(&v->enc, v->codec, &v->opts, v->enc_w, v->enc_h, v->enc_fmt, v->tb,
                         v->fps, v->global_header, 1);
  if (err < 0) {
    char what[200];
    snprintf(what, sizeof what, "encoder %s refused %dx%d %s", v->codec->name, v->width,
             v->height, av_get_pix_fmt_name(v->enc_fmt) ? av_get_pix_fmt_name(v->enc_fmt) : "?");
    averr(msg, len, what, err);
    return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
  }
  if ((err = avcodec_parameters_from_context(v->par, v->enc)) < 0) {
    averr(msg, len, "stream parameters", err);
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

/* What a y4m output is written in: heat as 4:4:4 (a lossless intermediate), or 4:2:0 where
 * --pix-fmt yuv420p asks; grey as it is. */
static int y4m_want(const es_video_out_opts *o) {
  if (o->format != ES_PIX_RGB24) return o->format;
  return o->pix_fmt == ES_PIX_YUV420P ? ES_PIX_YUV420P : ES_PIX_YUV444P;
}

int es_video_out_open(es_video_out **out, const char *path, const es_video_out_opts *o,
                      char *msg, size_t len) {
  int rc = ES_OK, err;
  es_video_out *v = NULL;
  const AVCodec *codec = NULL, *taken = NULL; /* taken: the default codec muxer_takes accepted */
  const AVOutputFormat *ofmt = NULL;
  AVDictionary *mopts = NULL;
  char *url = NULL;
  enum AVPixelFormat enc_fmt = AV_PIX_FMT_NONE;

  *out = NULL;
  if (msg && len) msg[0] = 0;
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
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
    snprintf(msg, len, "--pix-fmt applies to heat video only (--format heat)");
    return ES_ERR_USAGE;
  }
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
  AVRational base = {o->base_num, o->base_den}; /* every input time stamp on its frames */
  if (base.num <= 0 || base.den <= 0) base = fps;
  v->in_tb = (AVRational){o->tb_num, o->tb_den};
  if (v->in_tb.num <= 0 || v->in_tb.den <= 0) v->in_tb = av_inv_q(fps);

  if (!strcmp(path, "-")) {
    if (o->f32) {
      v->mode = MODE_F32;
      v->want = ES_PIX_NONE;
      if (AV_NE(1, 0)) {
        v->f32_row = malloc((size_t)o->width * sizeof(float));
        if (!v->f32_row) {
          rc = ES_ERR_NOMEM;
          snprintf(msg, len, "out of memory");
          goto end;
        }
      }
      *out = v;
      return ES_OK;
    }
    v->mode = MODE_Y4M;
    ofmt = av_guess_format("yuv4mpegpipe", NULL, NULL);
    codec = avcodec_find_encoder(AV_CODEC_ID_WRAPPED_AVFRAME);
    if (!ofmt || !codec) {
      /* The same status as a .y4m file name below: this FFmpeg cannot write y4m. */
      snprintf(msg, len, !ofmt ? "libavformat has no yuv4mpegpipe muxer"
                               : "libavcodec has no wrapped_avframe encoder for y4m");
      rc = ES_ERR_OUTPUT;
      goto end;
    }
    v->want = y4m_want(o);
    v->want_av = enc_fmt = av_of(v->want);
    url = av_strdup("pipe:1");
  } else {
    v->mode = MODE_ENCODE;
    ofmt = av_guess_format(NULL, path, NULL);
    if (!ofmt && es_path_is_y4m(path)) {
      /* A y4m name, and a libavformat built without the muxer (a minimal FFmpeg): the
       * name is right, the library cannot write it - as for -o - above. */
      snprintf(msg, len, "libavformat has no yuv4mpegpipe muxer");
      rc = ES_ERR_OUTPUT;
      goto end;
    }
    if (!ofmt || (ofmt->flags & AVFMT_NOFILE)) {
      snprintf(msg, len, "no video container for this file name");
      rc = ES_ERR_USAGE;
      goto end;
    }
    if (!strcmp(ofmt->name, "yuv4mpegpipe") && !o->codec) {
      /* A .y4m file: the same uncompressed frames as on stdout, not an encoder's packets. */
      codec = avcodec_find_encoder(AV_CODEC_ID_WRAPPED_AVFRAME);
      if (!codec) {
        snprintf(msg, len, "libavcodec has no wrapped_avframe encoder for y4m");
        rc = ES_ERR_OUTPUT;
        goto end;
      }
    } else if (o->codec) {
      codec = avcodec_find_encoder_by_name(o->codec);
      if (!codec || codec->type != AVMEDIA_TYPE_VIDEO) {
        snprintf(msg, len, "--codec %s: no such video encoder in libavcodec", o->codec);
        rc = ES_ERR_USAGE;
        goto end;
      }
    } else {
      /* SPEC: libx264 where present, else MPEG-4 part 2, where the container holds them; a
       * container that holds neither (webm, ogv) gets its muxer's own default, as ffmpeg
       * picks it (libvpx-vp9, libtheora). */
      const AVCodec *cand[3] = {avcodec_find_encoder_by_name("libx264"),
                                avcodec_find_encoder(AV_CODEC_ID_MPEG4), NULL};
      const AVCodec *own = avcodec_find_encoder(ofmt->video_codec);
      if (own != cand[0] && own != cand[1]) cand[2] = own;
      char refused[128] = "";
      int nref = 0;
      for (int i = 0; i < 3 && !codec; i++) {
        if (!cand[i] || (i == 1 && cand[1] == cand[0])) continue;
        if (muxer_takes(ofmt, cand[i]->id, o->width, o->height))
          codec = taken = cand[i];
        else
          av_strlcatf(refused, sizeof refused, "%s%s", nref++ ? " or " : "", cand[i]->name);
      }
      if (!codec) {
        /* The container's own codec, where this libavcodec has no encoder for it. */
        const char *lack = ofmt->video_codec != AV_CODEC_ID_NONE && !own
                               ? avcodec_get_name(ofmt->video_codec)
                               : NULL;
        if (!nref) { /* none of them in this libavcodec: it cannot write video */
          snprintf(msg, len, "libavcodec has neither libx264 nor mpeg4%s%s%s",
                   lack ? " nor a " : "", lack ? lack : "", lack ? " encoder" : "");
          rc = ES_ERR_OUTPUT;
        } else {
          snprintf(msg, len, "the %s container cannot hold %s video%s%s%s", ofmt->name, refused,
                   lack ? ", and libavcodec has no " : "", lack ? lack : "",
                   lack ? " encoder" : "");
          rc = ES_ERR_USAGE;
        }
        goto end;
      }
    }
    /* (a default codec was asked already: muxer_takes may try the muxer's init) */
    if (codec != taken && !muxer_takes(ofmt, codec->id, o->width, o->height)) {
      snprintf(msg, len, "the %s container cannot hold %s video", ofmt->name, codec->name);
      rc = ES_ERR_USAGE;
      goto end;
    }
    if (codec->id == AV_CODEC_ID_WRAPPED_AVFRAME)
      v->want = y4m_want(o), enc_fmt = av_of(v->want);
    else
      choose_formats(codec, o->format, o->pix_fmt, o->width, o->height, &enc_fmt, &v->want);
    if (o->pix_fmt != ES_PIX_NONE && enc_fmt != av_of(o->pix_fmt) &&
        !(o->pix_fmt == ES_PIX_YUV420P && enc_fmt == AV_PIX_FMT_YUVJ420P)) {
      snprintf(msg, len, "--pix-fmt %s: encoder %s does not take it",
               av_get_pix_fmt_name(av_of(o->pix_fmt)), codec->name);
      rc = ES_ERR_USAGE;
      goto end;
    }
    /* H.264 crops 4:2:0 in steps of two pixels only (its SPS frame cropping): libx264 refuses
     * an odd size there. Heat of an odd size is encoded at the even size above, the last
     * column or row repeated (es_video_out_write), and that is the size shown: 4:2:0 is what
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
      snprintf(msg, len, "--codec %s: the encoder takes only %s frames, which cannot be made here",
               codec->name, names);
      rc = ES_ERR_USAGE;
      goto end;
    }
    v->want_av = av_of(v->want);
    /* A link is followed (the temporary goes next to what it names); a FIFO or device is
     * written in place without -y, as es_atomic_open does: nothing is replaced. */
    int kind = es_output_resolve(path, &v->final_path, msg, len);
    if (kind < 0) {
      rc = kind;
      goto end;
    }
    if (kind == ES_OUT_FILE && !o->overwrite) { /* ES_OUT_FILE: something is there */
      snprintf(msg, len, "exists (use -y to overwrite)");
      rc = ES_ERR_OUTPUT;
      goto end;
    }
    v->overwrite = o->overwrite;
    if (kind != ES_OUT_STREAM && (rc = make_tmp(v, msg, len)) < 0) goto end;
    url = av_asprintf("file:%s", kind == ES_OUT_STREAM ? v->final_path : v->tmp_path);
  }
  if (!url) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }

  if ((err = avformat_alloc_output_context2(&v->fmt, ofmt, NULL, NULL)) < 0) {
    averr(msg, len, "cannot create the container", err);
    rc = ES_ERR_OUTPUT;
    goto end;
  }
  v->frame = av_frame_alloc();
  v->held = av_frame_alloc();
  v->pkt = av_packet_alloc();
  if (!v->frame || !v->held || !v->pkt) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  if (v->mode == MODE_ENCODE && o->preset && !strcmp(codec->name, "libx264")) {
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
               "--preset %s: not a preset of encoder libx264 (ultrafast, superfast, veryfast, "
               "faster, fast, medium, slow, slower, veryslow, placebo)",
               o->preset);
      rc = ES_ERR_USAGE;
      goto end;
    }
  }
  if (v->mode == MODE_ENCODE && o->crf >= 0) {
    AVCodecContext *probe = avcodec_alloc_context3(codec);
    int has_crf = probe && av_opt_find(probe->priv_data, "crf", NULL, 0, 0) != NULL;
    avcodec_free_context(&probe);
    if (!has_crf) {
      snprintf(msg, len, "--crf: encoder %s has no crf option", codec->name);
      rc = ES_ERR_USAGE;
      goto end;
    }
  }
  /* The input's time base first, so that variable frame timing survives (MP4, Matroska);
   * where the encoder refuses it (mpeg4 takes denominators up to 65535 only, 1/90000 is
   * common), one frame of the input's base rate, on which every time stamp falls (as
   * ffmpeg's encoder time base; one frame of the average rate moved variable-rate frames by
   * up to half a frame), then one frame of the average. AVI counts frames but keeps gaps
   * (empty frames): the base rate's frame is its unit; other outputs that count frames
   * (y4m, Ogg) play them one after the other: one frame of the average rate. */
  int global_header = !!(v->fmt->oformat->flags & AVFMT_GLOBALHEADER);
  v->counted = counts_frames(v->fmt->oformat, codec);
  const int gaps = !strcmp(v->fmt->oformat->name, "avi");
  AVRational cand[3] = {v->in_tb, av_inv_q(base), av_inv_q(fps)}, tbs[3];
  int ntb = 0;
  for (int i = v->counted ? (gaps ? 1 : 2) : 0; i < 3; i++) {
    int dup = 0;
    for (int k = 0; k < ntb; k++)
      dup |= !av_cmp_q(tbs[k], cand[i]);
    if (!dup) tbs[ntb++] = cand[i];
  }
  /* A large encoder waits for the first frame (lazy): here one of a small size of the same
   * parity checks the options, time base and pixel format. Where that one is refused (an
   * encoder of fixed sizes, h263), the encoder is opened at the output's size, as before. */
  v->lazy = v->mode == MODE_ENCODE && (int64_t)v->enc_w * v->enc_h > ES_VIDEO_OUT_LAZY_PIXELS;
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
      err = open_encoder(&v->enc, codec, o, pw, ph, enc_fmt, tbs[i], fps, global_header,
                         v->mode == MODE_ENCODE);
      v->tb = tbs[i];
      if (err == AVERROR(ENOMEM)) break;
    }
    if (err >= 0 || !v->lazy || err == AVERROR(ENOMEM)) break;
    if (v->mode == MODE_ENCODE && (o->preset || o->crf >= 0)) {
      AVCodecContext *plain = NULL;
      plain_opens = open_encoder(&plain, codec, o, pw, ph, enc_fmt, tbs[ntb - 1], fps,
                                 global_header, 0) >= 0;
      avcodec_free_context(&plain);
      if (plain_opens) break; /* the small one opens without them: they were refused (below) */
    }
    v->lazy = 0;
    plain_opens = -1; /* that was the small size */
  }
  if (err < 0) {
    AVCodecContext *plain = NULL;
    if (plain_opens < 0 && err != AVERROR(ENOMEM) && v->mode == MODE_ENCODE &&
        (o->preset || o->crf >= 0))
      plain_opens = open_encoder(&plain, codec, o, pw, ph, enc_fmt, tbs[ntb - 1], fps,
                                 global_header, 0) >= 0;
    if (plain_opens > 0) {
      /* It opens without them: the preset or crf was refused. */
      if (o->preset && o->crf >= 0)
        snprintf(msg, len, "--preset %s or --crf %d: refused by encoder %s", o->preset, o->crf,
                 codec->name);
      else if (o->preset)
        snprintf(msg, len, "--preset %s: not a preset of encoder %s", o->preset, codec->name);
      else
        snprintf(msg, len, "--crf %d: refused by encoder %s", o->crf, codec->name);
      rc = ES_ERR_USAGE;
    } else {
      char what[200];
      snprintf(what, sizeof what, "encoder %s refused %dx%d %s%s", codec->name, o->width,
               o->height, av_get_pix_fmt_name(enc_fmt) ? av_get_pix_fmt_name(enc_fmt) : "?",
               (o->width | o->height) & 1 ? " (it may not take odd sizes)" : "");
      averr(msg, len, what, err);
      rc = ES_ERR_OUTPUT;
      if (es_encoder_nomem(err, o->width, o->height)) { /* exit 4, not 3 */
        char e[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(err, e, sizeof e);
        snprintf(msg, len, "encoder %s: out of memory for %dx%d (%s)", codec->name, o->width,
                 o->height, e);
        rc = ES_ERR_NOMEM;
      }
    }
    avcodec_free_context(&plain);
    goto end;
  }
  v->codec = codec;
  v->ofmt = ofmt;
  v->enc_fmt = enc_fmt;
  v->fps = fps;
  v->global_header = global_header;
  v->step = av_rescale_q(1, av_inv_q(fps), v->tb);
  if (v->step < 1) v->step = 1;
  if (o->ts_discont) v->jump = av_rescale_q(ES_TS_JUMP_S, (AVRational){1, 1}, v->tb);
  v->opts = *o;
  v->opts.codec = NULL;
  v->opts.display_matrix = NULL;
  if (o->preset && !(v->preset = strdup(o->preset))) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  v->opts.preset = v->preset;
  /* The input's rotation metadata: the map is in the stored orientation, as the source's
   * frames are, so players turn both alike. Containers without it (y4m, AVI) drop it. */
  if (o->display_matrix && v->mode == MODE_ENCODE) {
    memcpy(v->dm, o->display_matrix, sizeof v->dm);
    v->has_dm = 1;
  }
  v->par = avcodec_parameters_alloc();
  if (!v->par) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  if ((err = avcodec_parameters_from_context(v->par, v->enc)) < 0) {
    averr(msg, len, "stream parameters", err);
    rc = ES_ERR_OUTPUT;
    goto end;
  }
  v->par->width = v->enc_w; /* the encoder of a lazy open is small */
  v->par->height = v->enc_h;
  if ((rc = add_stream(v, v->par, msg, len)) < 0) goto end;
  if (v->final_path && !v->tmp_path) {
    if (es_output_is_fifo(v->final_path) && pipe_refused(v)) {
      say_seeks(msg, len, ofmt);
      rc = ES_ERR_OUTPUT;
      goto end;
    }
    if ((rc = open_stream(v, &url, msg, len)) < 0) goto end;
  }
  if ((err = avio_open(&v->fmt->pb, url, AVIO_FLAG_WRITE)) < 0) {
    averr(msg, len, "cannot open for writing", err);
    rc = ES_ERR_OUTPUT;
    goto end;
  }
  /* The muxer's checks of the stream come before its header is written, and write nothing:
   * a refusal there is the container refusing this codec (mov and VP9 or AV1), a usage
   * problem as above, not a failed write. */
  if ((err = avformat_init_output(v->fmt, &mopts)) < 0) {
    if (v->mode == MODE_ENCODE && !v->tmp_path && err != AVERROR(ENOMEM) &&
        !(v->fmt->pb->seekable & AVIO_SEEKABLE_NORMAL)) {
      /* a FIFO: muxer_takes has accepted the codec, so it is the seeking (mp4, mov) */
      say_seeks(msg, len, ofmt);
      rc = ES_ERR_OUTPUT;
    } else if (v->mode == MODE_ENCODE && err != AVERROR(ENOMEM)) {
      snprintf(msg, len, "the %s container cannot hold %s video", ofmt->name, codec->name);
      rc = ES_ERR_USAGE;
    } else {
      averr(msg, len, "cannot write the header", err);
      rc = err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
    }
    goto end;
  }
  if (v->lazy) {
    /* The checks are done: the output stays open, the container and the encoder are made
     * again at the first frame (or for none, at close), at the output's size. */
    v->pb = v->fmt->pb;
    v->fmt->pb = NULL;
    avformat_free_context(v->fmt);
    v->fmt = NULL;
    v->st = NULL;
    avcodec_free_context(&v->enc);
  } else {
    if ((err = avformat_write_header(v->fmt, NULL)) < 0) {
      averr(msg, len, "cannot write the header", err);
      rc = ES_ERR_OUTPUT;
      goto end;
    }
    v->header_written = 1;
  }

  /* The frame's buffer is made at the first frame (alloc_frame): a header alone costs none. */
  v->frame->format = v->held->format = enc_fmt;
  v->frame->width = v->held->width = v->enc_w;
  v->frame->height = v->held->height = v->enc_h;
  v->made_av = enc_fmt;
  if (enc_fmt == AV_PIX_FMT_PAL8) {
    /* libswscale does not write pal8: ffmpeg's scale filter makes BGR8 and gives it BGR8's
     * fixed palette; grey keeps its values through a grey ramp. */
    int grey = v->want == ES_PIX_GRAY8 || v->want == ES_PIX_GRAY16;
    v->made_av = grey ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_BGR8;
    v->pal = 1;
    for (int i = 0; i < 256; i++) {
      uint32_t r = grey ? i : (i & 7) * 36, g = grey ? i : (i >> 3 & 7) * 36,
               b = grey ? i : (i >> 6) * 85;
      v->palette[i] = 0xFF000000u | r << 16 | g << 8 | b;
    }
  }
  if (v->want_av != v->made_av) {
    v->sws = sws_getContext(o->width, o->height, v->want_av, o->width, o->height, v->made_av,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                            NULL);
    if (!v->sws) {
      snprintf(msg, len, "cannot convert %s to %s", av_get_pix_fmt_name(v->want_av),
               av_get_pix_fmt_name(v->made_av));
      rc = ES_ERR_OUTPUT;
      goto end;
    }
  }
  *out = v;
  v = NULL;
end:
  av_dict_free(&mopts);
  av_free(url);
  if (v) es_video_out_close(&v, 0, NULL, 0);
  return rc;
}

int es_video_out_pixfmt(const es_video_out *v) { return v ? v->want : ES_PIX_NONE; }

/* The duration of the frame of time stamp pts (encoder time base) sent, taken from v->durs;
 * 0 if none is known. */
static int64_t take_duration(es_video_out *v, int64_t pts) {
  for (size_t i = 0; i < v->ndurs; i++)
    if (v->durs[2 * i] == pts) {
      const int64_t d = v->durs[2 * i + 1];
      memmove(v->durs + 2 * i, v->durs + 2 * i + 2, (v->ndurs - i - 1) * 2 * sizeof *v->durs);
      v->ndurs--;
      return d;
    }
  return 0;
}

/* An encoder call that failed with err: out of memory (ES_ERR_NOMEM, exit 4, not a write
 * failure) where es_encoder_nomem says so. */
static int encode_failed(const es_video_out *v, int err, char *msg, size_t len) {
  if (es_encoder_nomem(err, v->width, v->height)) {
    char e[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(err, e, sizeof e);
    snprintf(msg, len, "encoding failed: out of memory (%s)", e);
    return ES_ERR_NOMEM;
  }
  averr(msg, len, "encoding failed", err);
  return ES_ERR_OUTPUT;
}

/* Sends one frame (or NULL to flush) and writes every packet that comes out. */
static int encode(es_video_out *v, AVFrame *f, char *msg, size_t len) {
  int err = avcodec_send_frame(v->enc, f);
  if (err < 0 && err != AVERROR_EOF) return encode_failed(v, err, msg, len);
  for (;;) {
    err = avcodec_receive_packet(v->enc, v->pkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return ES_OK;
    if (err < 0) return encode_failed(v, err, msg, len);
    v->pkt->stream_index = v->st->index;
    const int64_t d = take_duration(v, v->pkt->pts);
    if (d > 0) v->pkt->duration = d;
    av_packet_rescale_ts(v->pkt, v->enc->time_base, v->st->time_base);
    err = av_interleaved_write_frame(v->fmt, v->pkt); /* takes the packet's reference */
    if (err < 0) {
      averr(msg, len, "write error", err);
      return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
    }
  }
}

/* Sends the held frame, lasting duration d (encoder time base; at least 1), and records d for
 * its packet. */
static int send_held(es_video_out *v, int64_t d, char *msg, size_t len) {
  if (d < 1) d = 1;
  if (v->ndurs == v->capdurs) {
    /* An encoder holds some frames (x264: its lookahead); a packet whose pts matched none
     * would keep its entry: the oldest go past a bound. */
    if (v->capdurs >= 4096) {
      memmove(v->durs, v->durs + 2, (v->ndurs - 1) * 2 * sizeof *v->durs);
      v->ndurs--;
    } else {
      const size_t cap = v->capdurs ? 2 * v->capdurs : 64;
      int64_t *n = realloc(v->durs, cap * 2 * sizeof *n);
      if (!n) {
        snprintf(msg, len, "out of memory");
        return ES_ERR_NOMEM;
      }
      v->durs = n;
      v->capdurs = cap;
    }
  }
  v->durs[2 * v->ndurs] = v->held->pts;
  v->durs[2 * v->ndurs + 1] = d;
  v->ndurs++;
  v->has_held = 0;
  return encode(v, v->held, msg, len);
}

static int write_f32(es_video_out *v, const float *map, size_t map_stride, char *msg,
                     size_t len) {
  if (!map) {
    snprintf(msg, len, "no map to write");
    return ES_ERR_INTERNAL;
  }
  for (int y = 0; y < v->height; y++) {
    const float *row = map + (size_t)y * map_stride;
    if (v->f32_row) { /* big-endian host: the format is little-endian */
      for (int x = 0; x < v->width; x++) {
        uint32_t u;
        memcpy(&u, row + x, 4);
        u = __builtin_bswap32(u);
        memcpy(v->f32_row + x, &u, 4);
      }
      row = v->f32_row;
    }
    if (fwrite(row, sizeof(float), (size_t)v->width, stdout) != (size_t)v->width) {
      snprintf(msg, len, "write error: %s", strerror(errno));
      return ES_ERR_OUTPUT;
    }
  }
  return ES_OK;
}

/* Fills a planar frame larger than the w x h written into it by repeating the last column and
 * row of each plane, so that the padding of an odd size (enc_w, enc_h) holds the edge's
 * colour, not black, and its 4:2:0 chroma stays the edge's. */
static void pad_edges(AVFrame *f, int w, int h) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
  const int np = av_pix_fmt_count_planes(f->format);
  for (int p = 0; p < np; p++) {
    const int cw = p == 1 || p == 2 ? d->log2_chroma_w : 0, ch = p == 1 || p == 2 ? d->log2_chroma_h : 0;
    const int pw = AV_CEIL_RSHIFT(w, cw), pf = AV_CEIL_RSHIFT(f->width, cw);
    const int ph = AV_CEIL_RSHIFT(h, ch), phf = AV_CEIL_RSHIFT(f->height, ch);
    const int s = av_image_get_linesize(f->format, w, p) / pw; /* bytes a sample */
    for (int y = 0; y < ph; y++) {
      uint8_t *row = f->data[p] + (ptrdiff_t)y * f->linesize[p];
      for (int x = pw; x < pf; x++) memcpy(row + (size_t)x * s, row + (size_t)(pw - 1) * s, s);
    }
    for (int y = ph; y < phf; y++)
      memcpy(f->data[p] + (ptrdiff_t)y * f->linesize[p],
             f->data[p] + (ptrdiff_t)(ph - 1) * f->linesize[p], (size_t)pf * s);
  }
}

int es_video_out_write(es_video_out *v, const es_planes *pix, const float *map,
                       size_t map_stride, int64_t pts, char *msg, size_t len) {
  int rc, err;
  if (!v) return ES_ERR_INTERNAL;
  if (v->failed) {
    snprintf(msg, len, "an earlier write failed");
    return ES_ERR_OUTPUT;
  }
  if (v->mode == MODE_F32) {
    rc = write_f32(v, map, map_stride, msg, len);
    if (rc < 0) v->failed = 1;
    else v->frames++;
    return rc;
  }
  if (!pix || !pix->plane[0]) {
    snprintf(msg, len, "no rendered frame to write");
    return ES_ERR_INTERNAL;
  }
  if (v->lazy && (rc = lazy_start(v, msg, len)) < 0) {
    v->failed = 1;
    return rc;
  }
  /* The frame's buffer, at the first frame; then the encoder (wrapped_avframe above all)
   * may still hold the last buffer. */
  if ((!v->frame->buf[0] && av_frame_get_buffer(v->frame, 0) < 0) ||
      (err = av_frame_make_writable(v->frame)) < 0) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if (v->sws) {
    const uint8_t *src[4] = {pix->plane[0], pix->plane[1], pix->plane[2], NULL};
    int sls[4] = {(int)pix->stride[0], (int)pix->stride[1], (int)pix->stride[2], 0};
    uint8_t *dst[4] = {v->frame->data[0], v->frame->data[1], v->frame->data[2],
                       v->frame->data[3]};
    if (v->pal) dst[1] = NULL; /* the indices only: the palette is set below */
    sws_scale(v->sws, src, sls, 0, v->height, dst, v->frame->linesize);
  } else {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(v->frame->format);
    int np = av_pix_fmt_count_planes(v->frame->format);
    for (int p = 0; p < np && p < 3; p++) {
      int h = p > 0 ? AV_CEIL_RSHIFT(v->height, d->log2_chroma_h) : v->height;
      int bytes = av_image_get_linesize(v->frame->format, v->width, p);
      if (!pix->plane[p]) {
        snprintf(msg, len, "rendered frame lacks plane %d", p);
        return ES_ERR_INTERNAL;
      }
      av_image_copy_plane(v->frame->data[p], v->frame->linesize[p], pix->plane[p],
                          (int)pix->stride[p], bytes, h);
    }
  }
  if (v->pal) memcpy(v->frame->data[1], v->palette, sizeof v->palette);
  if (v->enc_w != v->width || v->enc_h != v->height) pad_edges(v->frame, v->width, v->height);
  int64_t p;
  if (pts == INT64_MIN || pts == AV_NOPTS_VALUE) {
    p = v->last_pts == INT64_MIN ? 0 : v->last_pts + 1;
  } else {
    /* Counted frames start at frame 0: AVI would fill a late start with empty frames. */
    if (v->counted && v->first_pts == AV_NOPTS_VALUE) v->first_pts = pts;
    p = av_rescale_q(v->counted ? pts - v->first_pts : pts, v->in_tb, v->enc->time_base) +
        v->shift;
  }
  /* A video that starts before 0 starts at 0, every frame moved alike, as ffmpeg starts it:
   * MP4 and MOV take time before 0 for encoder delay and hide its frames (an edit list),
   * which lost the first second of a Matroska input from -1 s. */
  if (v->last_pts == INT64_MIN && p < 0) {
    v->shift -= p;
    p = 0;
  }
  /* Encoders need increasing pts. A break in the input's clock moves this frame and every
   * later one to follow the last a frame later, as ffmpeg moves them: time stamps that go
   * back by a frame or more (MPEG-TS files one after the other, a restarted clock; each
   * frame took the next tick, the rest of the input played in an instant), and a jump forward
   * of more than ES_TS_JUMP_S in a clock that may jump (MPEG-TS spliced or captured across a
   * restart; kept, a ten-hour jump made MP4 and AVI outputs fail, exit 3 and the video lost,
   * and stretched others with hours of the last frame). A smaller step back is rounding: the
   * next tick. */
  if (v->last_pts != INT64_MIN) {
    int64_t d = p - v->last_pts;
    if (d <= -v->step || (v->jump > 0 && d > v->jump)) {
      v->shift += v->last_pts + v->step - p;
      p = v->last_pts + v->step;
    } else if (d <= 0) {
      p = v->last_pts + 1;
    }
  }
  v->frame->pts = p;
  v->last_pts = p;
  if (v->counted) { /* frames, not times: nothing to wait for */
    rc = encode(v, v->frame, msg, len);
  } else {
    /* The frame held back lasts until this one; this one is held until the next, or the end. */
    rc = v->has_held ? send_held(v, p - v->held->pts, msg, len) : ES_OK;
    AVFrame *t = v->held;
    v->held = v->frame;
    v->frame = t;
    v->has_held = 1;
  }
  if (rc < 0) v->failed = 1;
  else v->frames++;
  return rc;
}

void es_video_out_end(es_video_out *v, int64_t end_pts) {
  if (v) v->end_pts = end_pts;
}

int es_video_out_close(es_video_out **pv, int commit, char *msg, size_t len) {
  int rc = ES_OK, err;
  char tmsg[256];
  if (!msg || !len) {
    msg = tmsg;
    len = sizeof tmsg;
  }
  if (!pv || !*pv) return ES_OK;
  es_video_out *v = *pv;
  if (v->failed) commit = 0;
  if (v->mode == MODE_F32) {
    if (commit && fflush(stdout) != 0) {
      snprintf(msg, len, "write error: %s", strerror(errno));
      rc = ES_ERR_OUTPUT;
    }
    goto end;
  }
  /* No frame came to a lazy writer: its container, with the stream and no frame. */
  if (commit && v->lazy && !v->header_written) rc = lazy_empty(v, msg, len);
  if (commit && rc == ES_OK && v->header_written) {
    if (v->enc && v->has_held) {
      /* The last frame lasts until the input's end, or one frame of the frame rate. */
      int64_t d = v->step;
      if (v->end_pts != INT64_MIN && v->end_pts != AV_NOPTS_VALUE) {
        const int64_t e = av_rescale_q(v->end_pts, v->in_tb, v->enc->time_base) + v->shift;
        if (e > v->held->pts) d = e - v->held->pts;
      }
      rc = send_held(v, d, msg, len);
    }
    if (rc == ES_OK && v->enc) rc = encode(v, NULL, msg, len);
    if (rc == ES_OK && (err = av_write_trailer(v->fmt)) < 0) {
      averr(msg, len, "cannot finish the container", err);
      rc = ES_ERR_OUTPUT;
    }
  }
  if (v->fmt && v->fmt->pb) {
    if (commit && rc == ES_OK) avio_flush(v->fmt->pb);
    if (commit && rc == ES_OK && v->fmt->pb->error < 0) {
      averr(msg, len, "write error", v->fmt->pb->error);
      rc = ES_ERR_OUTPUT;
    }
    if ((err = avio_closep(&v->fmt->pb)) < 0 && commit && rc == ES_OK) {
      averr(msg, len, "write error", err);
      rc = ES_ERR_OUTPUT;
    }
  }
  if (v->pb && (err = avio_closep(&v->pb)) < 0 && commit && rc == ES_OK) {
    averr(msg, len, "write error", err);
    rc = ES_ERR_OUTPUT;
  }
  if (v->tmp_path) {
    if (commit && rc == ES_OK && v->header_written) {
      if ((rc = es_rename_into(v->tmp_path, v->final_path, v->overwrite, msg, len)) != ES_OK)
        unlink(v->tmp_path);
    } else {
      unlink(v->tmp_path);
    }
    es_tmp_untrack(v->tmp_path);
  }
end:
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
