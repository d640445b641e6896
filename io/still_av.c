/*
 * still_av.c - any other still image libavcodec decodes (WebP, BMP, PNM, TGA, JPEG 2000, QOI,
 * ...), through FFmpeg's image2 demuxer, which reads the whole file as one packet and names
 * its codec by the file's extension (issue 28). The grey plane of YUV and grey formats is made
 * as a video frame's is (es_vin_grey_convert, shared with video_in_read.c): the Y plane as
 * stored; 9..16-bit samples stay 16-bit (a PGM of 16 bits is delivered as it is stored).
 * Palette and RGB pictures of 8 or 16 bits a sample take SPEC section 1's luma rule, as a PNG
 * does, not libswscale's matrix: a grey-palette BMP came out of libswscale off by one in 14%
 * of its pixels, where the luma rule gives each grey back exactly. Other formats (RGB565,
 * 10-bit RGB, ...) go through libswscale as video does. Built only with FFmpeg.
 * A still that decodes with errors is refused, not concealed: the decoder's error lines are
 * caught (video_in_log.c's capture) and the first one is the message.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/dict.h>
#include <libavutil/intreadwrite.h>
#include <libavutil/pixdesc.h>

#include "es_io.h"
#include "video_in_internal.h"

/* One decode's state, freed on the one exit path. */
typedef struct es_still_av {
  AVFormatContext *fmt;
  AVCodecContext *dec;
  AVPacket *pkt;
  AVFrame *frame;
  es_vin_grey grey;
  int64_t src_size;    /* bytes in the file (the packet), 0 when unknown */
  int64_t px_per_byte; /* the most pixels a byte of this codec's data can hold, 0: no bound */
  int cannot_hold;     /* get_buffer refused a size the file's bytes cannot hold */
} es_still_av;

/* The most pixels a byte of data can hold, for codecs whose data has a floor: raw samples
 * (PNM, XWD, XBM: 8 at one bit a pixel) and run-length coding (a run's count byte and one
 * sample: TGA 128 pixels, SGI 127, Sun raster 256 in three bytes, QOI 62). A header claiming
 * more than the file can hold is refused before the picture is allocated, as for PNG and
 * JPEG: a 100-byte PGM claiming 16000 x 16000 took 256 MB before "invalid data". An
 * uncompressed BMP is bounded the same way (bmp_floor). Codecs not here (WebP, RLE BMPs with
 * their skips, JPEG 2000, PCX, ...) are bounded by max_pixels alone. */
static int64_t px_per_byte(enum AVCodecID id) {
  switch (id) {
  case AV_CODEC_ID_PGM:
  case AV_CODEC_ID_PPM:
  case AV_CODEC_ID_PBM:
  case AV_CODEC_ID_PAM:
  case AV_CODEC_ID_PGMYUV:
  case AV_CODEC_ID_XWD:
  case AV_CODEC_ID_XBM: return 8;
  case AV_CODEC_ID_QOI: return 64;
  case AV_CODEC_ID_TARGA:
  case AV_CODEC_ID_SGI: return 128;
  case AV_CODEC_ID_SUNRAST: return 256;
  default: return 0;
  }
}

/* A BMP whose rows are stored whole (BI_RGB, BI_BITFIELDS in its BITMAPINFOHEADER or later):
 * 8 pixels a byte at most (1 bit a pixel); 0 for RLE and the OS/2 headers. */
static int64_t bmp_floor(const AVPacket *pkt) {
  if (pkt->size < 34 || AV_RL32(pkt->data + 14) < 40) return 0;
  const uint32_t comp = AV_RL32(pkt->data + 30);
  return comp == 0 || comp == 3 ? 8 : 0;
}

static int get_buffer(AVCodecContext *c, AVFrame *f, int flags) {
  es_still_av *s = c->opaque;
  if (s->px_per_byte && s->src_size > 0 &&
      (int64_t)f->width * f->height / s->px_per_byte > s->src_size + 1024) {
    s->cannot_hold = 1;
    return AVERROR_INVALIDDATA;
  }
  return avcodec_default_get_buffer2(c, f, flags);
}

/* libav*'s "Picture size 70000x70000 is invalid" / "... exceeds specified max pixel count"
 * told as the PNG and JPEG readers tell it. 1 when msg was written. */
static int size_message(const char *logged, int64_t max_pixels, char *msg, size_t len) {
  unsigned w = 0, h = 0;
  const char *p = strstr(logged, "Picture size ");
  if (!p || sscanf(p, "Picture size %ux%u", &w, &h) != 2) return 0;
  if ((int64_t)w * h > max_pixels)
    snprintf(msg, len, "image is %u x %u = %" PRId64 " pixels, more than max_pixels %" PRId64, w,
             h, (int64_t)w * h, max_pixels);
  else
    snprintf(msg, len, "image is %u x %u: larger than libavcodec decodes", w, h);
  return 1;
}

/* SPEC section 1's luma rule, in the samples' own depth. */
static unsigned luma(unsigned r, unsigned g, unsigned b) {
  return (299u * r + 587u * g + 114u * b + 500u) / 1000u;
}

/* A palette picture, or RGB of 8 or 16 bits a sample, made grey by the luma rule: 1 when it
 * was (dst written), 0 for a format this does not take (es_vin_grey_convert's), or a negative
 * status. */
static int rgb_to_grey(const AVFrame *f, int w, int h, int depth, void *dst, size_t dst_stride,
                       char *msg, size_t len) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
  if (!d || (d->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BAYER | AV_PIX_FMT_FLAG_FLOAT |
                         AV_PIX_FMT_FLAG_BITSTREAM)))
    return 0;
  if (d->flags & AV_PIX_FMT_FLAG_PAL) {
    if (f->format != AV_PIX_FMT_PAL8 || depth != 8) return 0;
    const uint32_t *pal = (const uint32_t *)f->data[1]; /* 0xAARRGGBB, native */
    for (int y = 0; y < h; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0];
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < w; x++) {
        const uint32_t p = pal[s[x]];
        o[x] = (uint8_t)luma(p >> 16 & 255, p >> 8 & 255, p & 255);
      }
    }
    return 1;
  }
  if (!(d->flags & AV_PIX_FMT_FLAG_RGB) || d->nb_components < 3) return 0;
  for (int c = 0; c < 3; c++) /* comp[0..2] are R, G, B in an RGB format's descriptor */
    if (d->comp[c].depth != depth) return 0;
  uint16_t *rgb = av_malloc_array((size_t)w * 3, sizeof *rgb);
  if (!rgb) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  for (int y = 0; y < h; y++) {
    for (int c = 0; c < 3; c++)
      av_read_image_line2(rgb + (size_t)c * w, (const uint8_t **)f->data, f->linesize, d, 0, y, c,
                          w, 0, 2);
    uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
    for (int x = 0; x < w; x++) {
      const unsigned v = luma(rgb[x], rgb[(size_t)w + x], rgb[2 * (size_t)w + x]);
      if (depth == 8)
        o[x] = (uint8_t)v;
      else
        AV_WN16(o + 2 * (size_t)x, v); /* native order: the destination may be unaligned */
    }
  }
  av_free(rgb);
  return 1;
}

/* What failed, with the line FFmpeg logged for it where there is one (first letter lowered:
 * libav*'s "Not enough data" is our "not enough data"). */
static void av_message(char *msg, size_t len, const char *what, int err, const char *logged) {
  char m[AV_ERROR_MAX_STRING_SIZE + 200];
  if (logged[0])
    snprintf(m, sizeof m, "%s", logged);
  else
    av_strerror(err, m, sizeof m);
  if (m[0] >= 'A' && m[0] <= 'Z' && m[1] >= 'a' && m[1] <= 'z') m[0] = (char)(m[0] - 'A' + 'a');
  snprintf(msg, len, "%s: %s", what, m);
}

/* What open() would say, and "is a directory", before libavformat words it otherwise. */
static int check_file(const char *path, struct stat *st, char *msg, size_t len) {
  if (stat(path, st) != 0) {
    snprintf(msg, len, "cannot open: %s", strerror(errno));
    return ES_ERR_INPUT;
  }
  if (S_ISDIR(st->st_mode)) {
    snprintf(msg, len, "is a directory");
    return ES_ERR_INPUT;
  }
  if (S_ISREG(st->st_mode) && st->st_size == 0) {
    snprintf(msg, len, "empty file");
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* The file through image2, as one file: its options and URL live only for the open. */
static int open_file(es_still_av *s, const char *path, const AVInputFormat *image2,
                     const char *logged, char *msg, size_t len) {
  AVDictionary *opts = NULL;
  char *url = NULL;
  int rc = ES_OK, err;
  /* The name is a file, never a pattern of numbered files ("shot%03d.bmp"). */
  av_dict_set(&opts, "pattern_type", "none", 0);
  url = av_asprintf("file:%s", path); /* "file:" keeps a name with a colon a file */
  if (!url) {
    snprintf(msg, len, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  err = avformat_open_input(&s->fmt, url, image2, &opts);
  if (err < 0) {
    av_message(msg, len, "cannot open", err, logged);
    rc = err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_INPUT;
    goto end;
  }
end:
  av_dict_free(&opts);
  av_free(url);
  return rc;
}

/* The decoder of the file's one stream, bounded before it allocates a picture. */
static int open_decoder(es_still_av *s, const struct stat *st, int64_t max_pixels,
                        const char *logged, char *msg, size_t len) {
  int err;
  const AVCodecParameters *par = s->fmt->nb_streams ? s->fmt->streams[0]->codecpar : NULL;
  const AVCodec *codec = par ? avcodec_find_decoder(par->codec_id) : NULL;
  if (!codec) {
    if (par && par->codec_id != AV_CODEC_ID_NONE)
      snprintf(msg, len, "libavcodec has no %s decoder", avcodec_get_name(par->codec_id));
    else
      snprintf(msg, len, "not an image format libavcodec decodes");
    return ES_ERR_INPUT;
  }
  s->dec = avcodec_alloc_context3(codec);
  s->pkt = av_packet_alloc();
  s->frame = av_frame_alloc();
  if (!s->dec || !s->pkt || !s->frame || avcodec_parameters_to_context(s->dec, par) < 0) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  /* libavcodec checks the header's size against this before it allocates the picture, and
   * get_buffer what the file can hold. */
  s->dec->max_pixels = max_pixels;
  s->dec->opaque = s;
  s->dec->get_buffer2 = get_buffer;
  s->src_size = S_ISREG(st->st_mode) ? (int64_t)st->st_size : 0;
  s->px_per_byte = px_per_byte(par->codec_id);
  s->dec->thread_count = 1; /* a batch decodes a file on each core already */
  if ((err = avcodec_open2(s->dec, codec, NULL)) < 0) {
    av_message(msg, len, "cannot open the decoder", err, logged);
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* The file's one packet decoded into s->frame; any error the decoder met refuses it. */
static int decode(es_still_av *s, int64_t max_pixels, const char *logged, char *msg, size_t len) {
  int err;
  if ((err = av_read_frame(s->fmt, s->pkt)) < 0) {
    av_message(msg, len, "cannot read", err, logged);
    return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_INPUT;
  }
  if (s->fmt->streams[0]->codecpar->codec_id == AV_CODEC_ID_BMP) s->px_per_byte = bmp_floor(s->pkt);
  err = avcodec_send_packet(s->dec, s->pkt);
  if (err >= 0) err = avcodec_send_packet(s->dec, NULL); /* the file is the whole picture */
  if (err >= 0) err = avcodec_receive_frame(s->dec, s->frame);
  if (err == AVERROR(ENOMEM)) {
    snprintf(msg, len, "decoding failed: out of memory");
    return ES_ERR_NOMEM;
  }
  if (err < 0 || logged[0] || (s->frame->flags & AV_FRAME_FLAG_CORRUPT) ||
      s->frame->decode_error_flags) {
    /* Any error the decoder met, returned or only logged (a concealed picture is not the
     * picture): the file is refused, as a corrupt PNG or JPEG is. */
    if (s->cannot_hold) {
      snprintf(msg, len, "truncated: a %d x %d image cannot be in %" PRId64 " bytes", s->dec->width,
               s->dec->height, s->src_size);
    } else if (!size_message(logged, max_pixels, msg, len)) {
      if (err < 0)
        av_message(msg, len, "cannot decode", err, logged);
      else if (logged[0])
        av_message(msg, len, "corrupt image data", 0, logged);
      else
        snprintf(msg, len, "corrupt image data");
    }
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* The decoded picture's grey into the caller's destination, described by img. */
static int deliver(es_still_av *s, int64_t max_pixels, es_png_dest_fn dest, void *user,
                   es_image *img, char *msg, size_t len) {
  int rc;
  const int w = s->frame->width, h = s->frame->height;
  if (w <= 0 || h <= 0) {
    snprintf(msg, len, "invalid image size %dx%d", w, h);
    return ES_ERR_INPUT;
  }
  if ((int64_t)w * h > max_pixels) { /* a decoder that did not check (libavcodec's does) */
    snprintf(msg, len, "image is %d x %d = %" PRId64 " pixels, more than max_pixels %" PRId64, w,
             h, (int64_t)w * h, max_pixels);
    return ES_ERR_INPUT;
  }
  const int depth = es_vin_depth_of(s->frame->format);
  void *dst = NULL;
  size_t dst_stride = 0;
  rc = dest(user, w, h, depth, &dst, &dst_stride, msg, len);
  if (rc != ES_OK) return rc;
  if (!dst || dst_stride < (size_t)w * (depth / 8)) {
    snprintf(msg, len, "no room for a %d x %d image", w, h);
    return ES_ERR_INTERNAL;
  }
  rc = rgb_to_grey(s->frame, w, h, depth, dst, dst_stride, msg, len);
  if (rc == 0)
    rc = es_vin_grey_convert(&s->grey, s->frame, w, h, depth, dst, dst_stride, -1, msg, len);
  else if (rc == 1)
    rc = ES_OK;
  if (rc != ES_OK) return rc;
  img->data = dst;
  img->width = w;
  img->height = h;
  img->stride = dst_stride;
  img->depth = depth;
  return ES_OK;
}

int es_still_av_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                        es_image *img, char *msg, size_t len) {
  es_still_av s;
  char logged[200] = "";
  struct stat st;
  int rc = ES_OK;
  memset(&s, 0, sizeof s);
  memset(img, 0, sizeof *img);
  if (max_pixels <= 0) max_pixels = (int64_t)1 << 31;
  if (!dest) {
    snprintf(msg, len, "no destination");
    return ES_ERR_USAGE;
  }
  if ((rc = check_file(path, &st, msg, len)) != ES_OK) return rc;
  const AVInputFormat *image2 = av_find_input_format("image2");
  if (!image2) {
    snprintf(msg, len, "libavformat has no image2 demuxer");
    return ES_ERR_INPUT;
  }
  /* Errors come back as statuses; libav*'s log stays quiet unless the caller chose a level
   * (as the video reader does), and its error lines are caught for the message. */
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
  es_vin_log_hook();
  es_vin_log_capture = logged;
  es_vin_log_capture_len = sizeof logged;
  if ((rc = open_file(&s, path, image2, logged, msg, len)) != ES_OK) goto end;
  logged[0] = 0; /* from here, a line logged is the decoder's */
  if ((rc = open_decoder(&s, &st, max_pixels, logged, msg, len)) != ES_OK) goto end;
  if ((rc = decode(&s, max_pixels, logged, msg, len)) != ES_OK) goto end;
  rc = deliver(&s, max_pixels, dest, user, img, msg, len);
end:
  es_vin_log_capture = NULL;
  es_vin_grey_free(&s.grey);
  av_frame_free(&s.frame);
  av_packet_free(&s.pkt);
  avcodec_free_context(&s.dec);
  avformat_close_input(&s.fmt);
  if (rc != ES_OK) memset(img, 0, sizeof *img);
  return rc;
}
