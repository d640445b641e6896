/*
 * video_in_read.c - video files and standard input through libavformat/libavcodec/libswscale:
 * the reader's demux/decode (es_video_in_open/read/close). Its other parts: the lending pool
 * (video_in_lend.c), the capture of logged errors (video_in_log.c), the accounting of dropped
 * packets (video_in_drops.c) and direct raw/y4m reads (video_in_direct.c); the state they
 * share is in video_in_internal.h.
 *
 * Opens anything libavformat opens ("-" is pipe:0: YUV4MPEG2 found by probing, or the
 * rawvideo demuxer with --raw gray8:WxH / gray16le:WxH), decodes with FFmpeg's own frame
 * or slice threads, and copies the grey plane once into the caller's buffer: the Y plane as
 * stored for 8-bit YUV/grey formats, libswscale to GRAY8/GRAY16 for everything else.
 * Raw frames, and y4m frames whose Y plane is stored as delivered, skip the decoder: their
 * Y plane is read straight into the caller's buffer (from a regular file with pread, by
 * several threads). Other y4m frames are read here too, into packets for the rawvideo
 * decoder (the demuxer parses the stream header only). Packets the decoder refuses are
 * skipped and counted; frames it makes despite errors (concealed) are delivered, marked and
 * counted; neither is fatal.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/avutil.h>
#include <libavutil/dict.h>
#include <libavutil/imgutils.h>
#include <libavutil/intreadwrite.h>
#include <libavutil/log.h>
#include <libavutil/macros.h>
#include <libavutil/opt.h>
#include <libavutil/parseutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "es_copy.h"
#include "es_io.h"
#include "es_trace.h"
#include "video_in_internal.h"

void es_vin_averr(char *msg, size_t len, const char *what, int err) {
  char e[AV_ERROR_MAX_STRING_SIZE];
  av_strerror(err, e, sizeof e);
  snprintf(msg, len, "%s: %s", what, e);
}

/* "gray8:WxH[@FPS]" / "gray16le:WxH[@FPS]". */
static int parse_raw(const char *spec, const char **pixfmt, int *w, int *h, AVRational *fps,
                     char *msg, size_t len) {
  const char *rest;
  if (!strncmp(spec, "gray8:", 6)) {
    *pixfmt = "gray";
    rest = spec + 6;
  } else if (!strncmp(spec, "gray16le:", 9)) {
    *pixfmt = "gray16le";
    rest = spec + 9;
  } else {
    goto bad;
  }
  char *end;
  errno = 0;
  long lw = strtol(rest, &end, 10);
  if (end == rest || (*end != 'x' && *end != 'X') || errno || lw <= 0 || lw > INT_MAX / 2)
    goto bad;
  rest = end + 1;
  long lh = strtol(rest, &end, 10);
  if (end == rest || errno || lh <= 0 || lh > INT_MAX / 2) goto bad;
  *fps = (AVRational){25, 1};
  if (*end == '@') {
    if (!end[1] || av_parse_video_rate(fps, end + 1) < 0 || fps->num <= 0 || fps->den <= 0)
      goto bad;
  } else if (*end) {
    goto bad;
  }
  *w = (int)lw;
  *h = (int)lh;
  return ES_OK;
bad:
  snprintf(msg, len, "raw %s: expected gray8:WxH[@FPS] or gray16le:WxH[@FPS]", spec);
  return ES_ERR_USAGE;
}

static int check_size(int w, int h, int64_t max_pixels, char *msg, size_t len) {
  if (w <= 0 || h <= 0) {
    snprintf(msg, len, "unknown or invalid frame size %dx%d", w, h);
    return ES_ERR_INPUT;
  }
  if (max_pixels > 0 && (int64_t)w * h > max_pixels) {
    snprintf(msg, len, "frame size %dx%d exceeds max_pixels %" PRId64, w, h, max_pixels);
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* Depth of the grey plane delivered for a pixel format: 8 up to 8 bits, else 16. */
int es_vin_depth_of(enum AVPixelFormat f) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
  if (!d) return 8;
  int bits = 0;
  for (int i = 0; i < d->nb_components; i++)
    if (d->comp[i].depth > bits) bits = d->comp[i].depth;
  return bits > 8 ? 16 : 8;
}

/* The Y (or grey) plane can be copied as stored: returns the byte step between samples
 * (1 for planar, 2 for packed YUYV-like) and their offset, or 0 when it cannot.
 * depth 8: 8-bit samples in plane 0; depth 16: native-endian 16-bit samples, planar. */
static int plane0_direct(enum AVPixelFormat f, int depth, int *offset) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
  if (!d || d->nb_components < 1) return 0;
  if (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL |
                  AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT | AV_PIX_FMT_FLAG_BITSTREAM))
    return 0;
  const AVComponentDescriptor *c = &d->comp[0];
  if (c->plane != 0 || c->shift != 0) return 0;
  *offset = c->offset;
  if (depth == 8) return c->depth == 8 ? c->step : 0;
  int native_be = AV_NE(1, 0);
  return c->depth == 16 && c->step == 2 && c->offset == 0 &&
                 !!(d->flags & AV_PIX_FMT_FLAG_BE) == native_be
             ? 2
             : 0;
}

/* Plane 0 holds the grey plane exactly as delivered (samples one after another, no
 * conversion): its rows can be read, copied or lent as they are. */
int es_vin_plane0_as_stored(enum AVPixelFormat f, int depth) {
  int offset = 0;
  return plane0_direct(f, depth, &offset) == (depth == 16 ? 2 : 1) && offset == 0;
}

/* For a YUV or grey format whose Y plane is plane 0 of 9..16-bit samples: the grey format
 * of the same depth and byte order, so libswscale converts just that plane (as ffmpeg's
 * extractplanes=y then gray16 does: the Y as stored, scaled to 16 bits). */
static enum AVPixelFormat y_plane_gray(enum AVPixelFormat f) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f);
  if (!d || d->nb_components < 1 ||
      (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL |
                   AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT | AV_PIX_FMT_FLAG_BITSTREAM)))
    return AV_PIX_FMT_NONE;
  const AVComponentDescriptor *c = &d->comp[0];
  if (c->plane != 0 || c->offset != 0 || c->shift != 0 || c->step != 2 || c->depth <= 8 ||
      c->depth > 16)
    return AV_PIX_FMT_NONE;
  char name[32];
  snprintf(name, sizeof name, "gray%d%s", c->depth, (d->flags & AV_PIX_FMT_FLAG_BE) ? "be" : "le");
  return av_get_pix_fmt(name);
}

int es_path_is_y4m(const char *path) {
  const size_t pl = strlen(path);
  return pl > 4 && !strcasecmp(path + pl - 4, ".y4m");
}

/* A YUV4MPEG2 stream, whose frames are then read here rather than by the demuxer (its
 * header, parsed by the demuxer, says everything): 2 where the Y plane (the first plane of
 * a frame) is stored as delivered, 1 where it needs converting, else 0. */
static int y4m_kind(const AVFormatContext *fmt) {
  if (strcmp(fmt->iformat->name, "yuv4mpegpipe") || !fmt->pb || fmt->nb_streams != 1)
    return 0;
  const AVCodecParameters *p = fmt->streams[0]->codecpar;
  if (p->codec_id != AV_CODEC_ID_RAWVIDEO || p->width <= 0 || p->height <= 0) return 0;
  return es_vin_plane0_as_stored((enum AVPixelFormat)p->format,
                                 es_vin_depth_of((enum AVPixelFormat)p->format))
             ? 2
             : 1;
}

int es_video_built(void) { return 1; }

static int next_frame(es_video_in *v, char *msg, size_t len);

/* The reader's object with its options, before anything is opened: NULL out of memory. */
static es_video_in *vin_new(const es_video_in_opts *opts) {
  es_video_in *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->stream = -1;
  v->pfd = -1;
  pthread_mutex_init(&v->lend_lock, NULL);
  v->lend = opts && opts->lend;
  v->pin = opts ? opts->pin : NULL;
  v->unpin = opts ? opts->unpin : NULL;
  v->log_fn = opts ? opts->log : NULL;
  v->log_arg = opts ? opts->log_arg : NULL;
  return v;
}

/* --raw's frames: the rawvideo demuxer and its options (size, format, rate) in *fopts. */
static int vin_raw_options(es_video_in *v, const char *raw, int64_t max_pixels,
                           AVDictionary **fopts, const AVInputFormat **ifmt, AVRational *raw_fps,
                           char *msg, size_t len) {
  const char *pf;
  int w, h, rc;
  if ((rc = parse_raw(raw, &pf, &w, &h, raw_fps, msg, len)) < 0) return rc;
  if ((rc = check_size(w, h, max_pixels, msg, len)) < 0) return rc;
  *ifmt = av_find_input_format("rawvideo");
  if (!*ifmt) {
    snprintf(msg, len, "libavformat has no rawvideo demuxer");
    return ES_ERR_INPUT;
  }
  char size[64], rate[64];
  snprintf(size, sizeof size, "%dx%d", w, h);
  snprintf(rate, sizeof rate, "%d/%d", raw_fps->num, raw_fps->den);
  av_dict_set(fopts, "pixel_format", pf, 0);
  av_dict_set(fopts, "video_size", size, 0);
  av_dict_set(fopts, "framerate", rate, 0);
  v->raw_frame_size = (size_t)w * h * (pf[4] ? 2 : 1);
  return ES_OK;
}

/* The demuxer on path, with what FFmpeg logged as the message where it fails. */
static int vin_open_input(es_video_in *v, const char *path, const char *raw,
                          const AVInputFormat *ifmt, AVDictionary **fopts, char *msg, size_t len) {
  int err;
  /* "-" through libavformat's pipe protocol; "file:" keeps a name with a colon a file. */
  char *url = NULL;
  if (!strcmp(path, "-"))
    url = av_strdup("pipe:0");
  else
    url = av_asprintf("file:%s", path);
  if (!url) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  char logged[160] = "";
  es_vin_log_hook();
  es_vin_log_capture = logged;
  es_vin_log_capture_len = sizeof logged;
  err = avformat_open_input(&v->fmt, url, ifmt, fopts);
  es_vin_log_capture = NULL;
  av_free(url);
  /* From here on errors the demuxer only logs are counted (find_stream_info reads packets
   * too); the decoder's once it is open and tagged as ours. */
  if (err >= 0) es_vin_log_register(v);
  if (err < 0) {
    /* What FFmpeg logged says why: next to "invalid data" (as ffmpeg prints both), in place
     * of any other code, which may not be the reason (EBUSY above). */
    es_vin_averr(msg, len, "cannot open", err);
    if (logged[0] && err == AVERROR_INVALIDDATA) {
      const size_t used = strlen(msg);
      snprintf(msg + used, len > used ? len - used : 0, " (%s)", logged);
    } else if (logged[0]) {
      snprintf(msg, len, "cannot open: %s", logged);
    }
    /* A minimal libavformat may lack the y4m demuxer: say so rather than only "invalid
     * data" for what is a valid YUV4MPEG2 stream elsewhere. */
    int y4m_like = !strcmp(path, "-") || es_path_is_y4m(path);
    if (!raw && y4m_like && !av_find_input_format("yuv4mpegpipe")) {
      size_t used = strlen(msg);
      snprintf(msg + used, len > used ? len - used : 0,
               " (this libavformat has no yuv4mpegpipe demuxer%s)",
               strcmp(path, "-") ? "" : "; raw frames: raw");
    }
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* The streams' sizes as the header gives them, before any decoding (which would allocate
 * frames), then find_stream_info where the header does not say everything. */
static int vin_stream_info(es_video_in *v, int64_t max_pixels, int probe, char *msg, size_t len) {
  AVDictionary **sopts = NULL;
  unsigned nb_streams = 0;
  int rc = ES_OK, err;
  /* The header gives the size for most containers: check it before any decoding (which
   * would allocate frames) - a 60-byte y4m must not ask for gigabytes. */
  for (unsigned i = 0; i < v->fmt->nb_streams; i++) {
    AVCodecParameters *p = v->fmt->streams[i]->codecpar;
    if (p->codec_type == AVMEDIA_TYPE_VIDEO && p->width > 0 && p->height > 0 &&
        (rc = check_size(p->width, p->height, max_pixels, msg, len)) < 0)
      goto end;
  }
  /* Decoders that find_stream_info opens get the same limit. */
  nb_streams = v->fmt->nb_streams;
  if (nb_streams) {
    sopts = av_calloc(nb_streams, sizeof *sopts);
    if (!sopts) {
      rc = ES_ERR_NOMEM;
      snprintf(msg, len, "out of memory");
      goto end;
    }
    /* The decoders' option takes at most INT_MAX (its default): a larger limit, such as
     * --max-pixels's default of 2^31, is left to check_size, since setting it makes every
     * decoder that find_stream_info opens fail, and the stream's size and depth unknown
     * (H.264 in MPEG-TS or raw, HEVC: "invalid frame size 0x0"). */
    for (unsigned i = 0; i < nb_streams; i++)
      if (max_pixels > 0 && max_pixels <= INT_MAX)
        av_dict_set_int(&sopts[i], "max_pixels", max_pixels, 0);
  }
  if (probe && (err = avformat_find_stream_info(v->fmt, sopts)) < 0) {
    es_vin_averr(msg, len, "cannot read stream information", err);
    rc = ES_ERR_INPUT;
    goto end;
  }
end:
  if (sopts) {
    for (unsigned i = 0; i < nb_streams; i++)
      av_dict_free(&sopts[i]);
    av_free(sopts);
  }
  return rc;
}

/* The best video stream (v->stream, the others discarded) and its decoder. */
static int vin_choose_stream(es_video_in *v, int64_t max_pixels, const AVCodec **codec, char *msg,
                             size_t len) {
  int err = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, codec, 0);
  if (err == AVERROR_DECODER_NOT_FOUND) {
    snprintf(msg, len, "no decoder for the video stream");
    return ES_ERR_INPUT;
  }
  if (err < 0) {
    snprintf(msg, len, "no video stream");
    return ES_ERR_INPUT;
  }
  v->stream = err;
  for (unsigned i = 0; i < v->fmt->nb_streams; i++)
    if ((int)i != v->stream) v->fmt->streams[i]->discard = AVDISCARD_ALL;
  const AVStream *st = v->fmt->streams[v->stream];
  return check_size(st->codecpar->width, st->codecpar->height, max_pixels, msg, len);
}

/* The stream's decoder, opened with the reader's limits, checks, lending and drop
 * accounting, and its packet and frame. */
static int vin_open_decoder(es_video_in *v, const AVCodec *codec, const es_video_in_opts *opts,
                            int64_t max_pixels, char *msg, size_t len) {
  const AVStream *st = v->fmt->streams[v->stream];
  int err;
  v->dec = avcodec_alloc_context3(codec);
  if (!v->dec) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if ((err = avcodec_parameters_to_context(v->dec, st->codecpar)) < 0) {
    es_vin_averr(msg, len, "decoder parameters", err);
    return ES_ERR_INPUT;
  }
  v->dec->pkt_timebase = st->time_base;
  v->dec->thread_count = opts && opts->threads > 0 ? opts->threads : 0;
  v->dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (max_pixels > 0 && max_pixels <= INT_MAX) v->dec->max_pixels = max_pixels;
  /* Verify checksums where the codec has them (ffv1 slices, ...): a damaged frame is then
   * an error we skip and count instead of a picture with garbage in it. */
  v->dec->err_recognition |= AV_EF_CRCCHECK;
  /* Lending: Y planes in our pool (es_vin_lend_get_buffer), for decoders that take a get_buffer2.
   */
  if (v->lend && (codec->capabilities & AV_CODEC_CAP_DR1))
    v->dec->get_buffer2 = es_vin_lend_get_buffer;
  if ((err = avcodec_open2(v->dec, codec, NULL)) < 0) {
    es_vin_averr(msg, len, "cannot open the decoder", err);
    return ES_ERR_INPUT;
  }
  v->dec->opaque = v; /* for log_cb; copied into frame threads' contexts with each packet */
  /* Decoders that give one frame for every packet they take (or one for a pair of field
   * packets), whatever the stream: packets left without a frame once drained were dropped
   * (es_vin_count_dropped). Others may take packets that give no frame by design (MPEG-4's
   * not-coded VOPs, VP8's hidden frames) and are not counted. */
  v->count_drops = codec->id == AV_CODEC_ID_H264 || codec->id == AV_CODEC_ID_HEVC ||
                   codec->id == AV_CODEC_ID_MPEG1VIDEO || codec->id == AV_CODEC_ID_MPEG2VIDEO;
  /* es_vin_lead_skipped: decoding starts here; HEVC packets are length-prefixed where the extradata
   * is an hvcC record (version 1, 23 bytes or more: .mp4, .mkv), else Annex B (.ts, raw). */
  v->lead_start = 1;
  if (v->dec->extradata_size >= 23 && v->dec->extradata[0] == 1)
    v->lead_nal_len = (v->dec->extradata[21] & 3) + 1;
  es_vin_fields_open(v, st->codecpar);
  v->pkt = av_packet_alloc();
  v->frame = av_frame_alloc();
  if (!v->pkt || !v->frame) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  return ES_OK;
}

/* The frames' size and depth from the stream, and how raw and YUV4MPEG2 frames are read:
 * straight into the caller's buffer, or as packets for the rawvideo decoder. */
static int vin_frame_layout(es_video_in *v, const char *path, const char *raw, int y4m,
                            int64_t stdin_start, char *msg, size_t len) {
  const AVStream *st = v->fmt->streams[v->stream];
  v->width = st->codecpar->width;
  v->height = st->codecpar->height;
  v->depth = es_vin_depth_of(v->dec->pix_fmt != AV_PIX_FMT_NONE
                                 ? v->dec->pix_fmt
                                 : (enum AVPixelFormat)st->codecpar->format);
  if (y4m) {
    int fs = av_image_get_buffer_size(st->codecpar->format, v->width, v->height, 1);
    if (fs <= 0) {
      snprintf(msg, len, "cannot size the frames of this YUV4MPEG2 stream");
      return ES_ERR_INPUT;
    }
    v->y4m_frame_size = (size_t)fs;
    v->y4m_format = st->codecpar->format;
  }
  /* Raw frames carry no container: each is raw_frame_size bytes of the Y plane, read by
   * libavformat's I/O layer (the pipe or file protocol) straight into the caller's frame
   * buffer, one copy from the kernel, where packets and the rawvideo decoder would add a
   * packet copy and a plane copy (the reader thread bounds --raw throughput). */
  v->raw_direct = raw && v->fmt->pb && v->raw_frame_size > 0;
  /* YUV4MPEG2 the same way: libavformat's demuxer has parsed the stream header; each frame
   * is then a "FRAME" line (read here as the demuxer reads it) and the planes, of which the
   * Y plane goes straight into the caller's buffer and the rest is skipped. Where the Y
   * plane is not stored as delivered (9..15-bit samples), each frame is read into a packet
   * for the rawvideo decoder instead (es_vin_y4m_packet). Either way a damaged FRAME line costs
   * its frame only: frames have one size, so the next line follows its data. */
  const size_t ybytes = (size_t)v->width * v->height * (v->depth == 16 ? 2 : 1);
  if (y4m == 2 && ybytes <= v->y4m_frame_size) {
    v->raw_direct = 1;
    v->raw_frame_size = ybytes;
    v->y4m_skip = v->y4m_frame_size - ybytes;
  } else if (y4m) {
    v->y4m_packets = 1;
  }
  if (v->raw_direct || v->y4m_packets) es_vin_pread_setup(v, path, stdin_start);
  return ES_OK;
}

/* The time base, the frame rate (*fps: the stream's, else --raw's, else 25), the step of a
 * frame and where the stream ends. */
static void vin_timing(es_video_in *v, AVRational raw_fps, AVRational *fps_out) {
  const AVStream *st = v->fmt->streams[v->stream];
  v->tb = st->time_base;
  if (v->tb.num <= 0 || v->tb.den <= 0) v->tb = (AVRational){1, 25};
  AVRational fps = st->avg_frame_rate;
  if (fps.num <= 0 || fps.den <= 0) fps = st->r_frame_rate;
  if (fps.num <= 0 || fps.den <= 0) fps = raw_fps;
  if (fps.num <= 0 || fps.den <= 0) fps = (AVRational){25, 1};
  av_reduce(&fps.num, &fps.den, fps.num, fps.den, INT_MAX);
  v->step = av_rescale_q(1, av_inv_q(fps), v->tb);
  if (v->step <= 0) v->step = 1;
  v->next_pts = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
  v->last_pts = INT64_MIN;
  v->last_timed = 1; /* raw and y4m frames: one frame of the rate each */
  v->stream_end = AV_NOPTS_VALUE;
  if (v->fmt->duration_estimation_method != AVFMT_DURATION_FROM_BITRATE) {
    /* MP4 with B-frames: the track's duration counts from its first decoding time, before
     * 0, and the file's (the edit list's) is where it is shown to end. */
    if (st->duration > 0 && st->duration != AV_NOPTS_VALUE)
      v->stream_end = v->next_pts + st->duration;
    if (v->fmt->duration > 0 && v->fmt->duration != AV_NOPTS_VALUE) {
      const int64_t s0 = v->fmt->start_time != AV_NOPTS_VALUE ? v->fmt->start_time : 0;
      const int64_t e = av_rescale_q(s0 + v->fmt->duration, AV_TIME_BASE_Q, v->tb);
      if (v->stream_end == AV_NOPTS_VALUE || e > v->stream_end) v->stream_end = e;
    }
  }
  *fps_out = fps;
}

/* What the caller is told of the stream (es_video_info): size, rates, frame count, sample
 * aspect, display matrix. */
static void vin_info(const es_video_in *v, AVRational fps, es_video_info *info) {
  AVStream *st = v->fmt->streams[v->stream];
  memset(info, 0, sizeof *info);
  info->width = v->width;
  info->height = v->height;
  info->depth = v->depth;
  info->fps_num = fps.num;
  info->fps_den = fps.den;
  info->tb_num = v->tb.num;
  info->tb_den = v->tb.den;
  AVRational base = av_guess_frame_rate(v->fmt, st, NULL);
  if (base.num <= 0 || base.den <= 0) base = fps;
  av_reduce(&base.num, &base.den, base.num, base.den, INT_MAX);
  info->base_num = base.num;
  info->base_den = base.den;
  info->field_order = st->codecpar->field_order;
  info->ts_discont = (v->fmt->iformat->flags & AVFMT_TS_DISCONT) != 0;
  if (st->nb_frames > 0)
    info->frames = st->nb_frames;
  else if (st->duration > 0 && st->duration != AV_NOPTS_VALUE)
    info->frames = av_rescale_q(st->duration, st->time_base, av_inv_q(fps));
  else if (v->fmt->duration > 0 && v->fmt->duration != AV_NOPTS_VALUE)
    info->frames = av_rescale_q(v->fmt->duration, AV_TIME_BASE_Q, av_inv_q(fps));
  const uint8_t *dm = NULL;
  size_t dmsize = 0;
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 102) /* FFmpeg 6.1: side data in codecpar */
  const AVPacketSideData *sd = av_packet_side_data_get(
      st->codecpar->coded_side_data, st->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
  if (sd) {
    dm = sd->data;
    dmsize = sd->size;
  }
#else
  dm = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &dmsize);
#endif
  const AVRational sar = av_guess_sample_aspect_ratio(v->fmt, st, NULL);
  if (sar.num > 0 && sar.den > 0) {
    info->sar_num = sar.num;
    info->sar_den = sar.den;
  } else {
    info->sar_den = 1;
  }
  if (dm && dmsize >= sizeof info->display_matrix) {
    memcpy(info->display_matrix, dm, sizeof info->display_matrix);
    info->has_display_matrix = 1;
  }
}

int es_video_in_open(es_video_in **out, const char *path, const es_video_in_opts *opts,
                     es_video_info *info, char *msg, size_t len) {
  int rc = ES_OK, err;
  AVDictionary *fopts = NULL;
  es_video_in *v = NULL;
  const char *raw = opts ? opts->raw : NULL;
  int64_t max_pixels = opts ? opts->max_pixels : 0;
  const AVInputFormat *ifmt = NULL;
  AVRational raw_fps = {0, 1};

  *out = NULL;
  if (msg && len) msg[0] = 0;
  /* Errors come back as statuses with a one-line message; libav*'s own log stays quiet
   * unless the caller chose a level. */
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);

  v = vin_new(opts);
  if (!v) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  /* Standard input redirected from a file may not start at offset 0: where libavformat's
   * reading starts, for es_vin_pread_setup. */
  const int64_t stdin_start = strcmp(path, "-") ? -1 : (int64_t)lseek(0, 0, SEEK_CUR);
  if (raw && (rc = vin_raw_options(v, raw, max_pixels, &fopts, &ifmt, &raw_fps, msg, len)) < 0)
    goto end;
  if ((rc = vin_open_input(v, path, raw, ifmt, &fopts, msg, len)) < 0) goto end;
  /* Raw frames: the demuxer's options already say everything, and a y4m header does too
   * (find_stream_info would buffer frames that the reads below must see). */
  const int y4m = raw ? 0 : y4m_kind(v->fmt);
  if ((rc = vin_stream_info(v, max_pixels, !raw && !y4m, msg, len)) < 0) goto end;
  /* A stream met only while reading (a PMT of MPEG-TS that adds one, or damage that reads
   * as one) is probed as it goes, and until that ends av_read_frame holds back every packet
   * of every stream: up to probesize bytes of payload, 5 MB by default, each packet keeping
   * its whole demuxer buffer (200 KB in MPEG-TS). A long small-frame .ts with such a stream
   * took the whole file in (191 MB for 30000 frames of 64x48). Only the stream chosen below
   * is read, so late probing is cut short; 4096 is what FFmpeg's segment demuxers (hls,
   * dash) open with where no probesize is set, should one open a segment while reading. */
  if (!raw && !y4m) v->fmt->probesize = 4096;
  const AVCodec *codec = NULL;
  if ((rc = vin_choose_stream(v, max_pixels, &codec, msg, len)) < 0) goto end;
  if ((rc = vin_open_decoder(v, codec, opts, max_pixels, msg, len)) < 0) goto end;
  if ((rc = vin_frame_layout(v, path, raw, y4m, stdin_start, msg, len)) < 0) goto end;
  AVRational fps;
  vin_timing(v, raw_fps, &fps);
  /* The first frame sets the stream's size and depth, as it sets up ffmpeg's filters: the
   * stream's parameters are what libavformat's probing saw last, which can be a later part
   * (H.264 in MPEG-TS whose size changes in its first seconds gave the second size, and its
   * first frame was refused as a size change). Raw frames and y4m have one format, from the
   * header. Where there is no frame (an error, the end), the first read says so. */
  /* One share of a split video (--shard) starts at its keyframe: seeking backward to it,
   * before the first frame is decoded, lands on it (or on an earlier keyframe where the
   * container's index is coarser; the caller drops frames before its share either way). */
  if (opts && opts->seek) {
    if (raw || y4m || !strcmp(path, "-")) {
      snprintf(msg, len, "cannot seek in standard input or raw frames");
      rc = ES_ERR_USAGE;
      goto end;
    }
    if ((err = av_seek_frame(v->fmt, v->stream, opts->seek_ts, AVSEEK_FLAG_BACKWARD)) < 0) {
      es_vin_averr(msg, len, "cannot seek to the share's keyframe", err);
      rc = ES_ERR_INPUT;
      goto end;
    }
  }
  if (!raw && !y4m) {
    v->primed = next_frame(v, v->prime_msg, sizeof v->prime_msg);
    if (v->primed == ES_OK) {
      v->primed = 1;
      v->width = v->frame->width;
      v->height = v->frame->height;
      v->depth = es_vin_depth_of(v->frame->format);
      if ((rc = check_size(v->width, v->height, max_pixels, msg, len)) < 0) goto end;
    }
  }
  if (info) vin_info(v, fps, info);
  *out = v;
  v = NULL;
end:
  av_dict_free(&fopts);
  es_video_in_close(&v);
  return rc;
}

/* Copies (or converts) a decoded frame's grey plane into dst: what video frames and libav's
 * stills (still_av.c) share (see video_in_internal.h). */
int es_vin_grey_convert(es_vin_grey *g, const AVFrame *f, int width, int height, int depth,
                        void *dst, size_t dst_stride, int64_t frame, char *msg, size_t len) {
  size_t row = (size_t)width * (depth == 16 ? 2 : 1);
  int offset = 0, step = plane0_direct(f->format, depth, &offset);
  if (step == (depth == 16 ? 2 : 1)) { /* planar: one copy per row */
    /* Non-temporal stores: the frame is read next by the GPU's DMA or a CPU worker, not
     * by this core (BENCHMARKS S8). */
    if (dst_stride == row && (size_t)f->linesize[0] == row) {
      es_copy_nt(dst, f->data[0], row * (size_t)height);
      return ES_OK;
    }
    for (int y = 0; y < height; y++)
      es_copy_nt((uint8_t *)dst + (size_t)y * dst_stride,
                 f->data[0] + (ptrdiff_t)y * f->linesize[0], row);
    return ES_OK;
  }
  if (step) { /* packed 8-bit YUV (YUYV, UYVY, ...): every step-th byte */
    for (int y = 0; y < height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0] + offset;
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < width; x++) o[x] = s[(size_t)x * step];
    }
    return ES_OK;
  }
  /* A frame of another depth than the stream's (a stream that changes depth, as two H.264
   * files of 8 and 10 bits joined): its Y as stored all the same, 8-bit samples in a 16-bit
   * stream scaled by bit replication (v * 257, as 9..15-bit Y is scaled), deeper ones in an
   * 8-bit stream without their low bits. libswscale took 8-bit YUV for limited range and
   * stretched it to full-range grey, and dithered the low bits away. */
  enum AVPixelFormat yg = y_plane_gray(f->format);
  if (depth == 16 && (step = plane0_direct(f->format, 8, &offset)) != 0) {
    for (int y = 0; y < height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0] + offset;
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < width; x++)
        AV_WN16(o + 2 * x, s[(size_t)x * step] * 257);
    }
    return ES_OK;
  }
  if (depth == 8 && yg != AV_PIX_FMT_NONE) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    const int be = !!(d->flags & AV_PIX_FMT_FLAG_BE), drop = d->comp[0].depth - 8;
    for (int y = 0; y < height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0];
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < width; x++)
        o[x] = (uint8_t)((be ? AV_RB16(s + 2 * x) : AV_RL16(s + 2 * x)) >> drop);
    }
    return ES_OK;
  }
  enum AVPixelFormat src = f->format;
  if (yg != AV_PIX_FMT_NONE) src = yg; /* plane 0 alone, seen as grey */
  if (!g->sws || g->sws_fmt != src) {
    sws_freeContext(g->sws);
    enum AVPixelFormat to = depth == 16 ? AV_PIX_FMT_GRAY16 : AV_PIX_FMT_GRAY8;
    g->sws = sws_getContext(width, height, src, width, height, to,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                            NULL);
    if (!g->sws) {
      snprintf(msg, len, "cannot convert pixel format %s to grey",
               av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format) : "?");
      return ES_ERR_INPUT;
    }
    g->sws_fmt = src;
  }
  /* libswscale's 16-bit paths step rows by stride / 2: an odd stride (or address) goes
   * through an aligned scratch plane and is copied out. */
  int direct_dst = depth == 8 || !(((uintptr_t)dst | dst_stride) & 1);
  if (!direct_dst && !g->scratch) {
    g->scratch_stride = FFALIGN(row, 64);
    g->scratch = av_malloc(g->scratch_stride * height);
    if (!g->scratch) {
      snprintf(msg, len, "out of memory");
      return ES_ERR_NOMEM;
    }
  }
  uint8_t *dplanes[4] = {direct_dst ? dst : g->scratch, NULL, NULL, NULL};
  int dls[4] = {direct_dst ? (int)dst_stride : (int)g->scratch_stride, 0, 0, 0};
  if (sws_scale(g->sws, (const uint8_t *const *)f->data, f->linesize, 0, height, dplanes,
                dls) != height) {
    if (frame >= 0)
      snprintf(msg, len, "conversion of frame %" PRId64 " to grey failed", frame);
    else
      snprintf(msg, len, "conversion to grey failed");
    return ES_ERR_INPUT;
  }
  if (!direct_dst)
    for (int y = 0; y < height; y++)
      memcpy((uint8_t *)dst + (size_t)y * dst_stride, g->scratch + (size_t)y * g->scratch_stride,
             row);
  return ES_OK;
}

void es_vin_grey_free(es_vin_grey *g) {
  sws_freeContext(g->sws);
  av_free(g->scratch);
  memset(g, 0, sizeof *g);
}

static int deliver(es_video_in *v, const AVFrame *f, void *dst, size_t dst_stride, char *msg,
                   size_t len) {
  return es_vin_grey_convert(&v->grey, f, v->width, v->height, v->depth, dst, dst_stride,
                             v->delivered, msg, len);
}

/* The next packet of our stream into v->pkt: ES_OK, ES_ERR_EOF, or a fatal error. */
static int next_packet(es_video_in *v, char *msg, size_t len) {
  int errors = 0;
  if (v->y4m_packets) return es_vin_y4m_packet(v, msg, len);
  for (;;) {
    int err = av_read_frame(v->fmt, v->pkt);
    /* Errors the demuxer logged while reading: a returned error is counted below, else a
     * damaged stretch it skipped silently before this packet (or the end). */
    if (es_vin_demux_logged_bad(v) && !errors && err != AVERROR_INVALIDDATA &&
        err != AVERROR(EIO) && err != AVERROR_BUG)
      v->corrupt++;
    if (err >= 0) {
      if (v->pkt->stream_index == v->stream) return ES_OK;
      av_packet_unref(v->pkt);
      continue;
    }
    if (err == AVERROR_EOF) return ES_ERR_EOF;
    if (err == AVERROR(EAGAIN)) continue;
    if (err == AVERROR_INVALIDDATA || err == AVERROR(EIO) || err == AVERROR_BUG) {
      /* A damaged stretch: count it and let the demuxer resynchronise, up to a point. */
      v->corrupt++;
      if (avio_feof(v->fmt->pb) || ++errors >= ES_VIDEO_MAX_DEMUX_ERRORS) return ES_ERR_EOF;
      continue;
    }
    es_vin_averr(msg, len, "read error", err);
    return ES_ERR_INPUT;
  }
}

/* A time stamp in seconds, the double nearest to pts * num / den: the product is exact (below
 * 2^53 for any real stream) and one division rounds it once. pts * av_q2d(tb) rounds twice
 * and wrote 1.4000000000000001 for the frame at 1.4 s of a 1/12800 time base. */
double es_vin_ts_seconds(int64_t pts, AVRational tb) {
  return (double)pts * (double)tb.num / (double)tb.den;
}

int es_video_in_read(es_video_in *v, void *dst, size_t dst_stride, int64_t *pts,
                     double *pts_seconds, char *msg, size_t len) {
  return es_video_in_read_lend(v, dst, dst_stride, NULL, pts, pts_seconds, msg, len);
}

/* Hands the decoded frame v->frame (time stamp p) over: lent, copied into dst, or without
 * dst, where it cannot be lent, held for the next call (ES_ERR_AGAIN). */
static int hand_over(es_video_in *v, int64_t p, void *dst, size_t dst_stride, es_video_lent *lent,
                     int64_t *pts, double *pts_seconds, char *msg, size_t len) {
  AVFrame *f = v->frame;
  const int tr = es_trace_enabled();
  const double t0 = tr ? es_trace_ms() : 0.0;
  int rc = ES_ERR_AGAIN;
  if (lent && es_vin_lend_frame(v, f, lent))
    rc = ES_OK;
  else if (dst)
    rc = deliver(v, f, dst, dst_stride, msg, len);
  if (tr) v->deliver_ms += es_trace_ms() - t0;
  v->held = rc == ES_ERR_AGAIN;
  v->held_pts = p;
  if (v->held) return rc;
  av_frame_unref(f);
  if (rc < 0) return rc;
  v->delivered++;
  v->last_damaged = v->cur_damaged;
  v->damaged += v->cur_damaged;
  if (pts) *pts = p;
  if (pts_seconds) *pts_seconds = es_vin_ts_seconds(p, v->tb);
  return ES_OK;
}

/* Decodes the next good frame into v->frame: damaged ones are skipped and counted. ES_OK,
 * ES_ERR_EOF at the end, or a fatal error with msg (a pending one once every frame before it
 * was given out). */
static int next_frame(es_video_in *v, char *msg, size_t len) {
  int rc, err;
  for (;;) {
    if (v->finished) {
      if (v->pending) {
        snprintf(msg, len, "%s", v->pending_msg);
        return v->pending;
      }
      return ES_ERR_EOF;
    }
    err = avcodec_receive_frame(v->dec, v->frame);
    if (err >= 0) {
      AVFrame *f = v->frame;
      v->received++;
      if (v->count_drops && v->dec->codec_id == AV_CODEC_ID_HEVC) es_vin_join_frame(v, f);
#ifdef AV_FRAME_FLAG_INTERLACED
      if (f->flags & AV_FRAME_FLAG_INTERLACED) v->interlaced++;
#else
      if (f->interlaced_frame) v->interlaced++;
#endif
      if (v->received == 1) {
        /* The first frame out: where it came from a packet before the first keyframe (or
         * no keyframe was seen at all), the decoder decodes those: none was dropped. */
        if (!v->key_seen || es_vin_frame_before_key(v, f)) {
          v->prekey = 0;
          v->second_fields += v->prekey_second; /* they were decoded: pairs as any */
          v->prekey_second = 0;
        }
        v->key_seen = 1;
      }
      /* Damage the decoder flagged, or only logged (es_vin_frame_logged_bad): the frame is kept
       * (its damaged parts concealed, as ffmpeg and players show it), marked, and counted
       * once it is handed over. Skipping it lost a frame that ffmpeg counts. */
      int logged_bad = es_vin_frame_logged_bad(v, f);
      v->cur_damaged =
          (f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags || logged_bad;
      return ES_OK;
    }
    if (err == AVERROR_EOF) {
      v->finished = 1;
      while (v->njoins)
        es_vin_join_settle(v, 0);
      continue;
    }
    if (v->flushing) {
      /* Draining: a frame the decoder could not produce is skipped; EAGAIN cannot happen
       * here, but a decoder that never says EOF must not hang us. */
      if (err != AVERROR(EAGAIN)) {
        v->corrupt++;
        v->recv_errors++;
      }
      if (++v->drain_errors > 1024) v->finished = 1;
      continue;
    }
    if (err == AVERROR(ENOMEM)) { /* no memory for a frame: not damage (exit 4, not 2) */
      snprintf(msg, len, "decoding failed: out of memory");
      return ES_ERR_NOMEM;
    }
    if (err != AVERROR(EAGAIN)) { /* a frame the decoder could not produce */
      v->corrupt++;
      v->recv_errors++;
    }

    /* The decoder wants input. */
    rc = next_packet(v, msg, len);
    if (rc == ES_ERR_EOF) {
      v->flushing = 1;
      avcodec_send_packet(v->dec, NULL);
      continue;
    }
    if (rc < 0) return rc;
    if (v->raw_frame_size && (size_t)v->pkt->size < v->raw_frame_size) {
      /* A short last frame: deliver every frame before it, then report it. */
      v->pending = es_vin_frame_cut(v, 0, (size_t)v->pkt->size, v->raw_frame_size, v->pending_msg,
                             sizeof v->pending_msg);
      av_packet_unref(v->pkt);
      v->flushing = 1;
      avcodec_send_packet(v->dec, NULL);
      continue;
    }
    if (v->pkt->size == 0) {
      /* An empty packet is legal (NUT, AVI): nothing to decode, and sent it would be refused
       * (EINVAL) or, without data, start draining. ffmpeg skips them too. */
      av_packet_unref(v->pkt);
      continue;
    }
    v->packets++;
    /* A packet the demuxer flagged as damaged (MPEG-TS: a continuity counter that broke,
     * as at the junction of two files joined with cat, or a PES cut short) is decoded all
     * the same, as ffmpeg does without -fflags discardcorrupt: the data is often whole, and
     * dropping it lost its frame and the reference of the frames after it. What the decoder
     * finds wrong in it is skipped and counted below, as for any packet. */
    if (v->pkt->flags & AV_PKT_FLAG_CORRUPT) v->flagged++;
    /* Packets before the first keyframe (a stream cut mid-GOP): a decoder drops what it
     * cannot decode without its references, giving no frame and often no error. Counted
     * until the first keyframe packet; the first frame out says whether they were decoded
     * after all (see above). */
    const int prekey = !v->key_seen && !(v->pkt->flags & AV_PKT_FLAG_KEY);
    v->seq++;
    if (!v->key_seen && !prekey) {
      v->key_seen = 1;
      v->key_seq = v->seq;
      v->key_dts = v->pkt->dts;
    }
#if ES_VIDEO_TAG_PACKETS
    v->dec->reordered_opaque = v->seq; /* see log_cb */
#endif
    const int discard = (v->pkt->flags & AV_PKT_FLAG_DISCARD) != 0;
    const int lead = v->count_drops && es_vin_lead_skipped(v, v->pkt);
    const int join = v->lead_join;
    const int ps = v->fields != FIELDS_NONE ? es_vin_packet_structure(v, v->pkt) : 0;
    err = avcodec_send_packet(v->dec, v->pkt);
    av_packet_unref(v->pkt);
    if (err == AVERROR(ENOMEM)) {
      snprintf(msg, len, "decoding failed: out of memory");
      return ES_ERR_NOMEM;
    }
    if (err < 0 && err != AVERROR(EAGAIN) && err != AVERROR_EOF)
      v->corrupt++; /* counted once: not among the packets before the first keyframe too */
    else if (prekey)
      v->prekey++;
    if (err >= 0) {
      v->sent_ok++;
      if (discard && !prekey) v->discards++; /* see es_vin_count_dropped (prekey: counted there) */
      else if (lead && !prekey)
        v->leading++;
      else if (!prekey && v->dec->codec_id == AV_CODEC_ID_HEVC && v->count_drops)
        es_vin_join_sent(v, v->seq, join);
      /* a second field counted above (prekey, discard, leading) is not excused again */
      if (v->fields != FIELDS_NONE && es_vin_second_field(v, ps)) {
        if (prekey)
          v->prekey_second++;
        else if (!discard && !lead)
          v->second_fields++;
      }
    }
  }
}
int es_video_in_read_lend(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
                          int64_t *pts, double *pts_seconds, char *msg, size_t len) {
  int rc;
  if (!v) return ES_ERR_INTERNAL;
  if (lent) memset(lent, 0, sizeof *lent);
  if (v->raw_direct)
    return es_vin_direct_read(v, dst, dst_stride, lent, pts, pts_seconds, msg, len);
  if (v->held) return hand_over(v, v->held_pts, dst, dst_stride, lent, pts, pts_seconds, msg, len);
  if (v->primed) { /* the first frame, decoded by es_video_in_open (or why there is none) */
    rc = v->primed == 1 ? ES_OK : v->primed;
    v->primed = 0;
    if (rc != ES_OK) {
      if (rc != ES_ERR_EOF) snprintf(msg, len, "%s", v->prime_msg);
      return rc;
    }
  } else if ((rc = next_frame(v, msg, len)) != ES_OK) {
    return rc;
  }
  AVFrame *f = v->frame;
  if (f->width != v->width || f->height != v->height) {
    snprintf(msg, len,
             "frame %" PRId64 " is %dx%d but the stream started at %dx%d (size changes "
             "are not supported)",
             v->delivered, f->width, f->height, v->width, v->height);
    av_frame_unref(f);
    return ES_ERR_INPUT;
  }
  int64_t p = f->best_effort_timestamp;
  if (p == AV_NOPTS_VALUE) p = v->next_pts;
  v->next_pts = p + (f->pkt_duration > 0 ? f->pkt_duration : v->step);
  v->last_pts = p;
  v->last_timed = f->pkt_duration > 0;
  return hand_over(v, p, dst, dst_stride, lent, pts, pts_seconds, msg, len);
}

int64_t es_video_in_end_pts(const es_video_in *v) {
  if (!v || !v->delivered) return INT64_MIN;
  /* A frame without a duration (MP4 of variable rate with B-frames gives its packets none)
   * ends where the stream does, if that is after it and within two frames (a longer stream,
   * an audio one, says nothing of it): the last frame of such a stream keeps its length. */
  if (!v->last_timed && v->stream_end != AV_NOPTS_VALUE && v->last_pts != INT64_MIN &&
      v->stream_end > v->last_pts && v->stream_end - v->last_pts <= 2 * v->step)
    return v->stream_end;
  return v->next_pts;
}

int64_t es_video_in_corrupt(const es_video_in *v) { return v ? v->corrupt : 0; }
int64_t es_video_in_damaged(const es_video_in *v) { return v ? v->damaged : 0; }
int es_video_in_frame_damaged(const es_video_in *v) { return v ? v->last_damaged : 0; }
int64_t es_video_in_flagged(const es_video_in *v) { return v ? v->flagged : 0; }
int64_t es_video_in_prekey(const es_video_in *v) { return v ? v->prekey : 0; }
double es_video_in_copy_ms(const es_video_in *v) { return v ? v->deliver_ms : 0.0; }

void es_video_in_close(es_video_in **pv) {
  if (!pv || !*pv) return;
  es_video_in *v = *pv;
  es_vin_log_unregister(v);
  es_vin_grey_free(&v->grey);
  av_frame_free(&v->frame);
  av_packet_free(&v->pkt);
  avcodec_free_context(&v->dec);
  av_parser_close(v->parser);
  avcodec_free_context(&v->pctx);
  /* Buffers still lent out keep the pool until they come back (es_video_in_unlend). */
  av_buffer_pool_uninit(&v->lend_pool);
  free(v->lend_bufs);
  pthread_mutex_destroy(&v->lend_lock);
  avformat_close_input(&v->fmt);
  if (v->pfd_own) close(v->pfd);
  /* Standard input read with pread: leave its offset where the reads ended, as read()
   * would have (a shell may hand the same file on to the next command). */
  if (v->pfd == 0) lseek(0, (off_t)v->poff, SEEK_SET);
  av_free(v->drop);
  av_free(v->stage);
  free(v);
  *pv = NULL;
}
