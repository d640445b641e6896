/*
 * video_out_internal.h - what the parts of the video writer share (private to io/video_out*.c):
 * the writer's state (struct es_video_out) and the functions one part calls in another. One
 * writer per mode, each part with one purpose:
 *   video_out.c        es_video_out_open/write/close: checks the options, picks the mode
 *                      (encoded file, y4m or float32 on stdout), owns and frees the state
 *   video_out_raw.c    float32 maps on stdout (--format f32 -o -)
 *   video_out_y4m.c    YUV4MPEG2: its rendering, and its muxer on stdout
 *   video_out_codec.c  a file name's container, encoder and pixel formats
 *   video_out_file.c   where the bytes go: a temporary renamed at commit, or a FIFO in place
 *   video_out_av.c     the encoder and the container: opened (at once or at the first frame),
 *                      finished at close
 *   video_out_frame.c  each frame: converted, timed, encoded and muxed
 */
#ifndef ES_VIDEO_OUT_INTERNAL_H
#define ES_VIDEO_OUT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

#include "es_io.h"

/* The writer's modes: encoded video through libav (a file, FIFO or device), YUV4MPEG2 on
 * stdout (libav's muxer on pipe:1), float32 maps on stdout (no libav). */
enum { ES_VOUT_ENCODE, ES_VOUT_Y4M, ES_VOUT_F32 };

struct es_video_out {
  int mode;                   /* ES_VOUT_ENCODE, ES_VOUT_Y4M or ES_VOUT_F32 */
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

/* video_out_av.c */
/* "what: libav's words for err" into msg. */
void es_vout_averr(char *msg, size_t len, const char *what, int err);
/* Whether an encoder's failure err is memory running out (see its definition). */
int es_vout_encoder_nomem(int err, int width, int height);
/* Opens the encoder and the container of a libav mode (encode or y4m) on url, whose
 * container ofmt, encoder codec and pixel format enc_fmt are chosen; *url is the writer's
 * (freed by the caller). ES_OK or a status with msg; the caller closes v on failure. */
int es_vout_av_open(es_video_out *v, const es_video_out_opts *o, const AVOutputFormat *ofmt,
                    const AVCodec *codec, enum AVPixelFormat enc_fmt, char **url, char *msg,
                    size_t len);
/* The first frame of a lazy writer: the encoder at the output's size, then the container. */
int es_vout_lazy_start(es_video_out *v, char *msg, size_t len);
/* Close of a libav mode: with commit, the last frame, the encoder's flush and the trailer,
 * then the output closed and, for a temporary, renamed (or removed without commit). */
int es_vout_av_close(es_video_out *v, int commit, char *msg, size_t len);

/* video_out_codec.c */
/* The AVPixelFormat of an es_pixfmt, or AV_PIX_FMT_NONE. */
enum AVPixelFormat es_vout_av_of(int es_fmt);
/* The container for file name path, its encoder (--codec, or the default of SPEC) and the
 * pixel formats (v->want, v->want_av, *enc_fmt; v->enc_w/enc_h padded for libx264's 4:2:0).
 * ES_ERR_USAGE for what the user asked that cannot be, ES_ERR_OUTPUT for what this FFmpeg
 * lacks. */
int es_vout_choose_codec(es_video_out *v, const char *path, const es_video_out_opts *o,
                         const AVOutputFormat **ofmt, const AVCodec **codec,
                         enum AVPixelFormat *enc_fmt, char *msg, size_t len);
/* --preset and --crf checked against encoder codec before it is opened (ES_ERR_USAGE). */
int es_vout_check_tuning(const AVCodec *codec, const es_video_out_opts *o, char *msg,
                         size_t len);
/* Whether the output counts frames instead of storing a time stamp per frame. */
int es_vout_counts_frames(const AVOutputFormat *f, const AVCodec *c);

/* video_out_file.c */
/* The output file of the encode mode: path resolved (v->final_path), a temporary made next
 * to it (v->tmp_path) unless it is a FIFO or device, and *url for libavformat. */
int es_vout_file_target(es_video_out *v, const char *path, const es_video_out_opts *o,
                        char **url, char *msg, size_t len);
/* Before a FIFO or device is opened: a FIFO refused to a container that seeks (ES_ERR_OUTPUT),
 * then a FIFO opened here and *url made "pipe:N" (a device is left to *url). */
int es_vout_file_stream(es_video_out *v, char **url, char *msg, size_t len);
/* Why a container that seeks is refused a pipe. */
void es_vout_say_seeks(char *msg, size_t len, const AVOutputFormat *ofmt);
/* The temporary renamed into the final name (keep) or removed; ES_OK or the rename's status. */
int es_vout_file_commit(es_video_out *v, int keep, char *msg, size_t len);

/* video_out_y4m.c */
/* What a y4m output is written in (es_pixfmt). */
int es_vout_y4m_want(const es_video_out_opts *o);
/* libavcodec's wrapped_avframe encoder, which y4m takes; NULL with msg where it lacks one. */
const AVCodec *es_vout_y4m_codec(char *msg, size_t len);
/* YUV4MPEG2 on stdout: its muxer, encoder, pixel formats and *url ("pipe:1"). */
int es_vout_y4m_stdout(es_video_out *v, const es_video_out_opts *o,
                       const AVOutputFormat **ofmt, const AVCodec **codec,
                       enum AVPixelFormat *enc_fmt, char **url, char *msg, size_t len);

/* video_out_raw.c: open (a row buffer on a big-endian host), one map, close (stdout flushed
 * with commit). */
int es_vout_raw_open(es_video_out *v, char *msg, size_t len);
int es_vout_raw_write(es_video_out *v, const float *map, size_t map_stride, char *msg,
                      size_t len);
int es_vout_raw_close(es_video_out *v, int commit, char *msg, size_t len);

/* video_out_frame.c */
/* The frames' format (enc_fmt at the encoder's size), pal8's palette, and the conversion from
 * the caller's rendering where it differs. */
int es_vout_frame_setup(es_video_out *v, enum AVPixelFormat enc_fmt, char *msg, size_t len);
/* One rendered frame of input time stamp pts (in_tb; INT64_MIN or AV_NOPTS_VALUE: none). */
int es_vout_frame_write(es_video_out *v, const es_planes *pix, int64_t pts, char *msg,
                        size_t len);
/* The frame held back, lasting until the input's end (or one frame), then the encoder's
 * flush. */
int es_vout_frame_flush(es_video_out *v, char *msg, size_t len);

#endif
