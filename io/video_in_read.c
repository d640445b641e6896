/*
 * video_in.c - video files and standard input through libavformat/libavcodec/libswscale.
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
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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

/* Consecutive demuxer errors after which the input is taken as ended (a damaged tail that
 * the demuxer cannot resynchronise in). */
#define ES_VIDEO_MAX_DEMUX_ERRORS 256

/* Packets whose decoding logged an error, remembered per reader until their frame comes out
 * (frame threads and B-frame delay keep a few dozen packets in flight at most). */
#define ES_VIDEO_BAD_SEQS 64

/* Which packet a log line of the decoder belongs to: AVCodecContext.reordered_opaque, which
 * libavcodec copies into each frame thread's context when it hands it a packet and into the
 * frame it makes (removed in libavcodec 61; there a logged error marks the next frame out). */
#if LIBAVCODEC_VERSION_MAJOR < 61
#define ES_VIDEO_TAG_PACKETS 1
#if LIBAVCODEC_VERSION_MAJOR == 60 /* deprecated there */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#else
#define ES_VIDEO_TAG_PACKETS 0
#endif

/* HEVC joins: see join_settle. A picture sent (its packet's tag) and whether its frame came
 * out; HEVC's DPB holds 16 pictures at most. */
#define ES_JOIN_PICS 16
#define ES_JOINS 4
typedef struct es_join_pic {
  int64_t seq;
  int out;
} es_join_pic;
typedef struct es_join {
  int64_t seq; /* the tag of the IRAP packet that discards */
  es_join_pic pics[ES_JOIN_PICS];
  int n;
} es_join;

struct es_video_in {
  AVFormatContext *fmt;  /* demuxer */
  AVCodecContext *dec;   /* decoder of the chosen stream */
  AVPacket *pkt;         /* reused for every read */
  AVFrame *frame;        /* reused for every decoded frame */
  struct SwsContext *sws; /* conversion to grey, made on the first frame that needs it */
  int sws_fmt;           /* source pixel format sws was made for */
  uint8_t *scratch;      /* aligned grey plane for destinations libswscale cannot take */
  size_t scratch_stride;
  int stream;            /* index of the video stream */
  int width, height, depth;
  AVRational tb;         /* time base of pts */
  int64_t step;          /* one frame in tb units (for frames without a time stamp) */
  int64_t next_pts;      /* pts to give a frame without a time stamp */
  int64_t last_pts;      /* the last frame's, delivered or held; INT64_MIN before any */
  int last_timed;        /* the last frame had its packet's duration (next_pts is its end) */
  int64_t stream_end;    /* where the stream ends, as the container states it (the later of the
                          * stream's and the file's end; not estimated from the bit rate), or
                          * AV_NOPTS_VALUE */
  int64_t delivered;     /* frames given to the caller */
  double deliver_ms;     /* ES_TRACE: time spent handing frames over: copying planes out
                          * (deliver) or lending the frame (lend_frame, pin included) */
  int64_t corrupt;       /* packets skipped: refused by the decoder or the demuxer */
  /* Frames the decoder gave with decode errors (concealed): delivered like any, as ffmpeg
   * and players show them, and counted. cur_damaged: the frame in `frame` carries errors;
   * last_damaged: the frame last handed over did (es_video_in_frame_damaged). */
  int64_t damaged;
  int cur_damaged, last_damaged;
  int64_t flagged;       /* packets the demuxer flagged corrupt, decoded all the same */
  int64_t prekey;        /* packets before the stream's first keyframe that gave no frame */
  int key_seen;          /* a keyframe packet was sent, or a frame came out: prekey is final */
  /* Packets the decoder took but gave no frame for, and no error: es_video_in_dropped. */
  int64_t discards;      /* packets sent flagged AV_PKT_FLAG_DISCARD: no frame, by design */
  int64_t leading;       /* packets sent whose leading picture the decoder skips, by design
                          * (open GOP where decoding starts: lead_skipped) */
  int lead_nal_len;      /* HEVC: bytes of each NAL's length prefix (hvcC), 0: Annex B */
  int lead_start;        /* HEVC: decoding starts anew (the stream's start, or an end of
                          * sequence): the next CRA's RASL pictures are skipped */
  int lead_rasl;         /* HEVC: the RASL pictures that come now are skipped */
  int lead_eos;          /* HEVC: the last packet ended with an end of sequence (or bitstream) */
  int lead_join;         /* HEVC: this packet's IRAP discards the pictures waiting (join_*) */
  /* HEVC: pictures the decoder discards by design at a join (join_frame). join_ring: the
   * last pictures sent of the current sequence; joins: those of the sequences before a join
   * whose frames are not all out yet. */
  int64_t joined;
  es_join_pic join_ring[ES_JOIN_PICS];
  int join_n;
  es_join joins[ES_JOINS];
  int njoins;
  int lead_refs;         /* MPEG-1/2: reference pictures (I, P) seen, up to 2 */
  int lead_closed;       /* MPEG-1/2: the last GOP header's closed_gop */
  int count_drops;       /* the codec gives one frame a packet (or field pair): counted */
  int64_t sent_ok;       /* packets the decoder took */
  int64_t received;      /* frames it gave, damaged ones included */
  int64_t recv_errors;   /* receives that failed (a packet's error, counted as corrupt) */
  int64_t interlaced;    /* frames it gave that were interlaced (see field_packets) */
  /* Field pictures (see packet_structure): H.264 and MPEG-2 make one frame of two field
   * packets. Each packet sent is a frame or a field (its parity), or unknown. */
  int fields;                   /* FIELDS_*: how each packet's structure is known */
  AVCodecParserContext *parser; /* FIELDS_PARSER: H.264's, complete packets, for its
                                 * picture_structure; pctx its own codec context */
  AVCodecContext *pctx;
  int field_open;           /* parity (TOP/BOTTOM) of the last field packet while unpaired */
  int64_t second_fields;    /* packets that were the second field of a pair, or unknown (they
                             * may be: not counted as dropped), but not before the first
                             * keyframe (prekey) or marked discard, which are counted there */
  int64_t prekey_second;    /* those among the prekey packets: see next_frame */
  int64_t key_seq, key_dts; /* the first keyframe packet's tag (seq) and dts */
  int64_t packets;       /* packets of the stream read (raw: frame index of the next one) */
  size_t raw_frame_size; /* bytes of a frame's Y plane read directly (raw, y4m), else 0 */
  int raw_direct;        /* raw or y4m: frames read straight into the caller's buffer, through
                          * avio or with pread (see es_video_in_open, in_bytes) */
  size_t y4m_frame_size; /* bytes of one y4m frame's data, 0 when not y4m */
  int y4m_format;         /* y4m: the stream's AVPixelFormat (a concatenated stream must match) */
  int y4m_packets;       /* y4m whose Y plane needs converting: frames read here as packets
                          * for the rawvideo decoder (y4m_packet) */
  size_t y4m_skip;       /* y4m direct: bytes after the Y plane (chroma) skipped per frame */
  uint8_t *drop;         /* direct reads through avio: where skipped bytes go (ES_DROP_BYTES) */
  int line_read;         /* y4m direct: the next frame's FRAME line is read, its data not yet
                          * (a read without a buffer stopped there) */
  uint8_t *stage;        /* direct: a frame's Y plane read before the caller had a buffer
                          * for it (direct_read), until handed over; av_malloc'd */
  int held;              /* frame holds a decoded frame not yet handed over (a read without a
                          * buffer, of a frame that could not be lent) */
  int64_t held_pts;      /* its time stamp */
  int pfd;               /* direct reads from a regular file: its descriptor, else -1 */
  int pfd_own;           /* pfd was opened here (a named file; not standard input) */
  int64_t poff;          /* pfd: file offset of what comes next */
  /* Lending (opts.lend): the pool of Y-plane buffers the decoder writes into (lend_get_buffer),
   * and the buffers it has made (to recognise them); all under lend_lock, which
   * get_buffer2 takes from the decoder's threads. */
  int lend;
  int (*pin)(void *p, size_t bytes);
  void (*unpin)(void *p);
  pthread_mutex_t lend_lock;
  AVBufferPool *lend_pool;
  size_t lend_size;      /* bytes of each pool buffer (0: no pool yet) */
  int lend_failed;       /* the pool could not be made: the decoder's own buffers then */
  struct lend_buf **lend_bufs;
  int nlend, lend_cap;
  int flushing;          /* the decoder was sent NULL: draining */
  int finished;          /* drained: only EOF (or the pending error) is left */
  int drain_errors;      /* failed receives while draining */
  int pending;           /* an error to report once every frame before it was given out */
  char pending_msg[160];
  int primed;            /* es_video_in_open decoded the first frame (whose size and depth
                          * are the stream's): 1, it waits in frame for the first read; or
                          * the status that read returns (ES_ERR_EOF: no frame at all) */
  char prime_msg[160];   /* primed < 0, not ES_ERR_EOF: its message */
  /* Errors libavcodec/libavformat only log (see log_cb); written by log_cb from any thread,
   * all under log_lock. */
  int logged;            /* in the registry log_cb attributes log lines to */
  es_video_in *log_next; /* next reader in the registry */
  int64_t seq;           /* packets sent to the decoder (tag of the last one, from 1) */
  int64_t bad[ES_VIDEO_BAD_SEQS]; /* tags of packets whose decoding logged an error (ring) */
  unsigned nbad;         /* tags ever put in bad (next slot: nbad % ES_VIDEO_BAD_SEQS) */
  int64_t dec_untagged, dec_untagged_seen; /* decoder errors of no known packet */
  int64_t demux_logged, demux_seen;        /* demuxer errors logged / accounted for */
  int64_t log_lines;     /* error lines libav* logged for this reader (es_video_in_log_lines) */
  void (*log_fn)(void *arg, const char *line); /* opts.log: where they go, or NULL */
  void *log_arg;
};

/* ---- Errors that are only logged.
 *
 * Some damage is seen by FFmpeg but neither returned nor flagged: FFmpeg 5.1's ffv1 decoder
 * finds a slice CRC mismatch, conceals the slice from the previous frame, logs "slice CRC
 * mismatch" and returns the frame with no AV_FRAME_FLAG_CORRUPT or decode_error_flags; the
 * Matroska demuxer logs a damaged element, resynchronises at the next cluster and returns the
 * packets after it as if none were lost. The log is the only trace, so the reader installs an
 * av_log callback (once per process, and only while libav*'s log is at its default level or
 * quiet: an application that chose a level may have its own callback, which is left alone -
 * these errors then go uncounted). The callback forwards every line to
 * av_log_default_callback, which prints nothing at the AV_LOG_QUIET level the reader sets, and
 * notes lines at AV_LOG_ERROR or worse that belong to a reader in the registry below:
 *  - from an AVCodecContext of a decoder whose opaque is the reader (frame threads log from
 *    their own copies of the context; libavcodec copies opaque and reordered_opaque into each
 *    copy with its packet). reordered_opaque is the tag of the packet being decoded, so the
 *    frame carrying that tag is the damaged one: it is marked and counted like a flagged
 *    frame, once however many lines it logged. Lines with no tag (libavcodec 61+) mark the
 *    next frame given out instead.
 *  - from the reader's AVFormatContext or its AVIOContext: data the demuxer dropped. Lines
 *    logged by a read that also returned an error are that error (already counted); lines
 *    before a packet that came back count once, however many there are.
 * Attribution limits: lines logged by a decoder through another object (its private context,
 * a parser) are not seen; a decoder that logs an error of packet N while decoding N+1 marks
 * frame N+1; a packet whose error is returned leaves its tag unused (no frame carries it), so
 * nothing is counted twice. Several readers decoding at once in one process do not share
 * counts: each line is matched to its reader by pointer. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_hooked; /* log_cb is installed (set once, under log_once) */
static es_video_in *log_readers; /* registry: readers with logged != 0 */

/* While this thread opens an input: where the first error line libav* logs goes (its
 * returned code alone can mislead: the y4m demuxer returns EBUSY, "Device or resource busy",
 * for a header whose frame size libavutil refuses, having logged "Picture size ... is
 * invalid"; a cut MP4 is "Invalid data" where the log says "moov atom not found"). */
static _Thread_local char *log_capture;
static _Thread_local size_t log_capture_len;

static void log_cb(void *avcl, int level, const char *fmt, va_list vl) {
  if (level <= AV_LOG_ERROR && log_capture && !log_capture[0]) {
    va_list cp;
    va_copy(cp, vl);
    vsnprintf(log_capture, log_capture_len, fmt, cp);
    va_end(cp);
    size_t n = strlen(log_capture);
    while (n > 0 &&
           (log_capture[n - 1] == '\n' || log_capture[n - 1] == ' ' || log_capture[n - 1] == '.'))
      log_capture[--n] = 0;
  }
  if (avcl && level <= AV_LOG_ERROR) {
    int codec_ctx = *(const AVClass **)avcl == avcodec_get_class();
    es_video_in *hit = NULL;
    pthread_mutex_lock(&log_lock);
    for (es_video_in *v = log_readers; v; v = v->log_next) {
      if (codec_ctx) {
        const AVCodecContext *c = avcl;
        if (c->opaque != v || !c->codec || !av_codec_is_decoder(c->codec)) continue;
        hit = v;
#if ES_VIDEO_TAG_PACKETS
        int64_t tag = c->reordered_opaque;
        if (tag > 0) {
          if (!v->nbad || v->bad[(v->nbad - 1) % ES_VIDEO_BAD_SEQS] != tag)
            v->bad[v->nbad++ % ES_VIDEO_BAD_SEQS] = tag;
          break;
        }
#endif
        v->dec_untagged++;
        break;
      }
      if (v->fmt && (avcl == v->fmt || avcl == v->fmt->pb)) {
        hit = v;
        v->demux_logged++;
        break;
      }
    }
    /* The reader's own lines: counted, and handed to its caller's log (which may show
     * them) as one line "[h264] what", without libav*'s object address. Under log_lock, so
     * the reader cannot be closed meanwhile. */
    if (hit) {
      hit->log_lines++;
      if (hit->log_fn) {
        char line[512];
        const AVClass *cls = *(const AVClass **)avcl;
        int n = snprintf(line, sizeof line, "[%s] ", cls->item_name ? cls->item_name(avcl) : "?");
        if (n < 0 || (size_t)n >= sizeof line) n = 0;
        va_list cp;
        va_copy(cp, vl);
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, cp);
        va_end(cp);
        size_t k = strlen(line);
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' '))
          line[--k] = 0;
        for (char *p = line; *p; p++) /* one line, whatever libav* wrote */
          if (*p == '\n' || *p == '\r') *p = ' ';
        hit->log_fn(hit->log_arg, line);
      }
    }
    pthread_mutex_unlock(&log_lock);
  }
  av_log_default_callback(avcl, level, fmt, vl);
}

static void log_install(void) {
  int lvl = av_log_get_level();
  if (lvl != AV_LOG_INFO && lvl != AV_LOG_QUIET) return;
  av_log_set_callback(log_cb);
  log_hooked = 1;
}

static void log_register(es_video_in *v) {
  pthread_once(&log_once, log_install);
  if (!log_hooked) return;
  pthread_mutex_lock(&log_lock);
  v->log_next = log_readers;
  log_readers = v;
  v->logged = 1;
  pthread_mutex_unlock(&log_lock);
}

static void log_unregister(es_video_in *v) {
  if (!v->logged) return;
  pthread_mutex_lock(&log_lock);
  for (es_video_in **p = &log_readers; *p; p = &(*p)->log_next)
    if (*p == v) {
      *p = v->log_next;
      break;
    }
  v->logged = 0;
  pthread_mutex_unlock(&log_lock);
}

/* Whether the decoder logged an error for the packet frame f came from (or for no known
 * packet since the last frame); either way it is accounted for afterwards. */
static int frame_logged_bad(es_video_in *v, const AVFrame *f) {
  int bad = 0;
  if (!v->logged) return 0;
  pthread_mutex_lock(&log_lock);
#if ES_VIDEO_TAG_PACKETS
  int64_t tag = f->reordered_opaque;
  unsigned n = v->nbad < ES_VIDEO_BAD_SEQS ? v->nbad : ES_VIDEO_BAD_SEQS;
  for (unsigned i = 0; tag > 0 && i < n; i++)
    if (v->bad[i] == tag) {
      v->bad[i] = 0;
      bad = 1;
    }
#else
  (void)f;
#endif
  if (v->dec_untagged != v->dec_untagged_seen) {
    v->dec_untagged_seen = v->dec_untagged;
    bad = 1;
  }
  pthread_mutex_unlock(&log_lock);
  return bad;
}

/* Whether the demuxer logged errors since the last call (they are then accounted for). */
static int demux_logged_bad(es_video_in *v) {
  int bad = 0;
  if (!v->logged) return 0;
  pthread_mutex_lock(&log_lock);
  if (v->demux_logged != v->demux_seen) {
    v->demux_seen = v->demux_logged;
    bad = 1;
  }
  pthread_mutex_unlock(&log_lock);
  return bad;
}

static void averr(char *msg, size_t len, const char *what, int err) {
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
  snprintf(msg, len, "--raw %s: expected gray8:WxH[@FPS] or gray16le:WxH[@FPS]", spec);
  return ES_ERR_USAGE;
}

static int check_size(int w, int h, int64_t max_pixels, char *msg, size_t len) {
  if (w <= 0 || h <= 0) {
    snprintf(msg, len, "unknown or invalid frame size %dx%d", w, h);
    return ES_ERR_INPUT;
  }
  if (max_pixels > 0 && (int64_t)w * h > max_pixels) {
    snprintf(msg, len, "frame size %dx%d exceeds --max-pixels %" PRId64, w, h, max_pixels);
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* Depth of the grey plane delivered for a pixel format: 8 up to 8 bits, else 16. */
static int depth_of(enum AVPixelFormat f) {
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
static int plane0_as_stored(enum AVPixelFormat f, int depth) {
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
  return plane0_as_stored((enum AVPixelFormat)p->format, depth_of((enum AVPixelFormat)p->format))
             ? 2
             : 1;
}

/* Direct reads from a regular file (a named file, or standard input redirected from one)
 * go through pread at offsets of their own, so that a frame's bytes can be read by several
 * threads at once (in_bytes). Pipes keep libavformat's sequential reads. */
static void pread_setup(es_video_in *v, const char *path, int64_t stdin_start) {
  const int is_stdin = !strcmp(path, "-");
  if (is_stdin && stdin_start < 0) return; /* not seekable: a pipe */
  const int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
  const int64_t pos = avio_tell(v->fmt->pb); /* bytes libavformat has taken (the header) */
  struct stat st;
  if (fd < 0) return;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pos < 0) {
    if (!is_stdin) close(fd);
    return;
  }
  v->pfd = fd;
  v->pfd_own = !is_stdin;
  /* pipe:0 counts from where it started reading; file: from the file's start */
  v->poff = (is_stdin ? stdin_start : 0) + pos;
}

/* ---- Lending: decoded Y planes in buffers of our own, handed out by reference ----
 * A pool buffer is a page-aligned block: a header page (struct lend_buf) and then the data,
 * whole pages, so that pin() can page-lock exactly the data. The block outlives the reader
 * when a frame is still lent out at close; its free callback needs only the header. */
#define ES_LEND_HDR 4096
typedef struct lend_buf {
  uint8_t *data;
  size_t bytes;          /* page-rounded size of data */
  int pinned;            /* pin() succeeded (set by the reading thread only) */
  void (*unpin)(void *p);
} lend_buf;

static void lend_buf_free(void *opaque, uint8_t *data) {
  lend_buf *h = opaque;
  (void)data;
  if (h->pinned && h->unpin) h->unpin(h->data);
  free(h); /* the block starts with the header */
}

#if LIBAVUTIL_VERSION_MAJOR >= 57
static AVBufferRef *lend_alloc(void *opaque, size_t size)
#else
static AVBufferRef *lend_alloc(void *opaque, int size)
#endif
{
  es_video_in *v = opaque; /* called under lend_lock (av_buffer_pool_get in lend_get_buffer) */
  const size_t bytes = ((size_t)size + ES_LEND_HDR - 1) / ES_LEND_HDR * ES_LEND_HDR;
  if (v->nlend == v->lend_cap) {
    int cap = v->lend_cap ? 2 * v->lend_cap : 32;
    lend_buf **nb = realloc(v->lend_bufs, sizeof *nb * (size_t)cap);
    if (!nb) return NULL;
    v->lend_bufs = nb;
    v->lend_cap = cap;
  }
  uint8_t *block = aligned_alloc(ES_LEND_HDR, ES_LEND_HDR + bytes);
  if (!block) return NULL;
  lend_buf *h = (lend_buf *)block;
  h->data = block + ES_LEND_HDR;
  /* Zeroed, as FFmpeg's own frame pool is (avcodec_default_get_buffer2: av_buffer_allocz).
   * Decoders read bytes of a picture buffer they never write, by design: H.264's SIMD loads
   * take whole vectors across the row padding (linesize past the width) and keep only the
   * lanes inside the picture. No decoded pixel depends on those bytes (the maps of
   * samples/clip.mp4 are the same with the buffers filled with 0, 128 or 255, and the same as
   * from FFmpeg's buffers), but left uninitialised, valgrind's lane-blind tracking marked
   * whole decoded rows undefined and reported every read of them by the CPU engine
   * (ring_fill). Once per pool buffer: they are reused frame after frame. */
  memset(h->data, 0, bytes);
  h->bytes = bytes;
  h->pinned = 0;
  h->unpin = v->unpin;
  AVBufferRef *b = av_buffer_create(h->data, size, lend_buf_free, h, 0);
  if (!b) {
    free(block);
    return NULL;
  }
  v->lend_bufs[v->nlend++] = h;
  return b;
}

/* The header of a buffer of the pool, or NULL (a buffer the decoder made itself). */
static lend_buf *lend_find(es_video_in *v, const AVBufferRef *b) {
  lend_buf *h = NULL;
  pthread_mutex_lock(&v->lend_lock);
  for (int i = 0; i < v->nlend && !h; i++)
    if (v->lend_bufs[i]->data == b->data) h = v->lend_bufs[i];
  pthread_mutex_unlock(&v->lend_lock);
  return h;
}

/* get_buffer2 of a lending reader: FFmpeg's own allocation (its plane layout, padding and
 * alignment rules), then plane 0 moved into a pool buffer of the same size where nothing
 * else lives in it. Called from the decoder's threads. */
static int lend_get_buffer(AVCodecContext *c, AVFrame *f, int flags) {
  int err = avcodec_default_get_buffer2(c, f, flags);
  es_video_in *v = c->opaque;
  if (err < 0 || !v || !v->lend || !f->buf[0] || !f->data[0]) return err;
  const AVBufferRef *b0 = f->buf[0];
  for (int i = 1; i < AV_NUM_DATA_POINTERS && f->data[i]; i++)
    if (f->data[i] >= b0->data && f->data[i] < b0->data + b0->size) return err; /* shared */
  const ptrdiff_t off = f->data[0] - b0->data;
  AVBufferRef *nb = NULL;
  pthread_mutex_lock(&v->lend_lock);
  if (!v->lend_pool && !v->lend_failed) {
    v->lend_size = (size_t)b0->size;
    v->lend_pool = av_buffer_pool_init2((size_t)b0->size, v, lend_alloc, NULL);
    v->lend_failed = !v->lend_pool;
  }
  if (v->lend_pool && (size_t)b0->size <= v->lend_size) nb = av_buffer_pool_get(v->lend_pool);
  pthread_mutex_unlock(&v->lend_lock);
  if (!nb) return err; /* keep FFmpeg's buffer */
  av_buffer_unref(&f->buf[0]);
  f->buf[0] = nb;
  f->data[0] = nb->data + off;
  return err;
}

void es_video_in_unlend(void *ref) {
  AVFrame *f = ref;
  av_frame_free(&f);
}

/* ---- Field pictures.
 *
 * Interlaced H.264 and MPEG-2 code a frame either as one picture (H.264 MBAFF, MPEG-2 frame
 * pictures: one packet) or as two field pictures (H.264 PAFF, MPEG-2 field pictures: a
 * packet each where the demuxer splits them, as MPEG-TS does); their decoders make one frame
 * of a field pair. count_dropped counts the packets that gave no frame, so it must know which
 * packets were the second field of a pair: each packet's picture structure is read before it
 * is sent, for H.264 by libavcodec's parser (its picture_structure, from the first slice
 * header; PARSER_FLAG_COMPLETE_FRAMES: each packet parsed at once, as it is), for MPEG-2 from
 * the picture coding extension (libavcodec 59's parser leaves picture_structure unknown for
 * MPEG-2). A field of the parity opposite to an unpaired field before it is a second field.
 * HEVC and MPEG-1 need nothing: libavcodec's HEVC decoder gives every field picture as a
 * frame of its own, and MPEG-1 has no fields. */
enum {
  FIELDS_NONE,   /* every packet is a frame of its own */
  FIELDS_PARSER, /* H.264: libavcodec's parser */
  FIELDS_MPEG2,  /* MPEG-2: mpeg2_structure */
  FIELDS_SLACK   /* H.264 without a parser: every interlaced frame may have been two packets */
};

static void fields_open(es_video_in *v, const AVCodecParameters *par) {
  v->fields = FIELDS_NONE;
  if (par->codec_id == AV_CODEC_ID_MPEG2VIDEO) v->fields = FIELDS_MPEG2;
  if (par->codec_id != AV_CODEC_ID_H264) return;
  v->fields = FIELDS_SLACK; /* unless the parser can be had (a build may leave it out) */
  v->parser = av_parser_init(par->codec_id);
  v->pctx = avcodec_alloc_context3(NULL);
  if (!v->parser || !v->pctx || avcodec_parameters_to_context(v->pctx, par) < 0) {
    av_parser_close(v->parser);
    v->parser = NULL;
    avcodec_free_context(&v->pctx);
    return;
  }
  v->parser->flags |= PARSER_FLAG_COMPLETE_FRAMES;
  v->fields = FIELDS_PARSER;
}

/* MPEG-2: the picture_structure of the packet's first picture coding extension (ISO/IEC
 * 13818-2 6.2.3.1: 1 top field, 2 bottom field, 3 frame), looked for between its first
 * picture start code and its first slice; a picture without one is MPEG-1's, a frame. */
static int mpeg2_structure(const uint8_t *b, int n) {
  int picture = 0;
  for (int i = 0; i + 6 < n; i++) {
    if (b[i] || b[i + 1] || b[i + 2] != 1) continue;
    const uint8_t code = b[i + 3];
    if (code == 0x00) {
      picture = 1;
    } else if (picture && code >= 0x01 && code <= 0xaf) { /* a slice: no extension */
      return AV_PICTURE_STRUCTURE_FRAME;
    } else if (picture && code == 0xb5 && (b[i + 4] >> 4) == 8) {
      return b[i + 6] & 3 ? b[i + 6] & 3 : AV_PICTURE_STRUCTURE_UNKNOWN;
    }
    i += 2;
  }
  return AV_PICTURE_STRUCTURE_UNKNOWN;
}

/* The picture structure of pkt (AV_PICTURE_STRUCTURE_*), before it is sent. */
static int packet_structure(es_video_in *v, const AVPacket *pkt) {
  if (v->fields == FIELDS_MPEG2) return mpeg2_structure(pkt->data, pkt->size);
  if (v->fields != FIELDS_PARSER) return AV_PICTURE_STRUCTURE_FRAME;
  uint8_t *out = NULL;
  int out_size = 0;
  v->parser->picture_structure = AV_PICTURE_STRUCTURE_UNKNOWN;
  av_parser_parse2(v->parser, v->pctx, &out, &out_size, pkt->data, pkt->size, pkt->pts, pkt->dts,
                   pkt->pos);
  return out_size > 0 ? v->parser->picture_structure : AV_PICTURE_STRUCTURE_UNKNOWN;
}

/* A packet the decoder took, of picture structure ps: is it the second field of a pair (or
 * of unknown structure, and so perhaps one)? */
static int second_field(es_video_in *v, int ps) {
  if (ps == AV_PICTURE_STRUCTURE_TOP_FIELD || ps == AV_PICTURE_STRUCTURE_BOTTOM_FIELD) {
    const int second = v->field_open && v->field_open != ps;
    v->field_open = second ? 0 : ps;
    return second;
  }
  v->field_open = 0;
  return ps != AV_PICTURE_STRUCTURE_FRAME;
}

/* The packets count_dropped takes as half of a frame the decoder gave. A field pair gives
 * one interlaced frame; counted up to the interlaced frames given, so that a pair the
 * decoder dropped counts its two packets (a stream of field pairs, or of frame pictures,
 * counts exactly; one that mixes them may count a dropped pair once). Without a parser,
 * every interlaced frame is taken as a pair, as before: drops of frame pictures go
 * uncounted. */
static int64_t field_packets(const es_video_in *v) {
  if (v->fields == FIELDS_SLACK) return v->interlaced;
  return v->second_fields < v->interlaced ? v->second_fields : v->interlaced;
}

int es_video_built(void) { return 1; }

static int next_frame(es_video_in *v, char *msg, size_t len);

int es_video_in_open(es_video_in **out, const char *path, const es_video_in_opts *opts,
                     es_video_info *info, char *msg, size_t len) {
  int rc = ES_OK, err;
  AVDictionary *fopts = NULL, **sopts = NULL;
  es_video_in *v = NULL;
  const char *raw = opts ? opts->raw : NULL;
  int64_t max_pixels = opts ? opts->max_pixels : 0;
  const AVInputFormat *ifmt = NULL;
  AVRational raw_fps = {0, 1};
  unsigned nb_streams = 0;

  *out = NULL;
  if (msg && len) msg[0] = 0;
  /* Errors come back as statuses with a one-line message; libav*'s own log stays quiet
   * unless the caller chose a level. */
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);

  v = calloc(1, sizeof *v);
  if (!v) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  v->stream = -1;
  v->pfd = -1;
  pthread_mutex_init(&v->lend_lock, NULL);
  v->lend = opts && opts->lend;
  v->pin = opts ? opts->pin : NULL;
  v->unpin = opts ? opts->unpin : NULL;
  v->log_fn = opts ? opts->log : NULL;
  v->log_arg = opts ? opts->log_arg : NULL;
  /* Standard input redirected from a file may not start at offset 0: where libavformat's
   * reading starts, for pread_setup. */
  const int64_t stdin_start = strcmp(path, "-") ? -1 : (int64_t)lseek(0, 0, SEEK_CUR);
  if (raw) {
    const char *pf;
    int w, h;
    if ((rc = parse_raw(raw, &pf, &w, &h, &raw_fps, msg, len)) < 0) goto end;
    if ((rc = check_size(w, h, max_pixels, msg, len)) < 0) goto end;
    ifmt = av_find_input_format("rawvideo");
    if (!ifmt) {
      snprintf(msg, len, "libavformat has no rawvideo demuxer");
      rc = ES_ERR_INPUT;
      goto end;
    }
    char size[64], rate[64];
    snprintf(size, sizeof size, "%dx%d", w, h);
    snprintf(rate, sizeof rate, "%d/%d", raw_fps.num, raw_fps.den);
    av_dict_set(&fopts, "pixel_format", pf, 0);
    av_dict_set(&fopts, "video_size", size, 0);
    av_dict_set(&fopts, "framerate", rate, 0);
    v->raw_frame_size = (size_t)w * h * (pf[4] ? 2 : 1);
  }

  /* "-" through libavformat's pipe protocol; "file:" keeps a name with a colon a file. */
  char *url = NULL;
  if (!strcmp(path, "-"))
    url = av_strdup("pipe:0");
  else
    url = av_asprintf("file:%s", path);
  if (!url) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  char logged[160] = "";
  pthread_once(&log_once, log_install);
  log_capture = logged;
  log_capture_len = sizeof logged;
  err = avformat_open_input(&v->fmt, url, ifmt, &fopts);
  log_capture = NULL;
  av_free(url);
  /* From here on errors the demuxer only logs are counted (find_stream_info reads packets
   * too); the decoder's once it is open and tagged as ours. */
  if (err >= 0) log_register(v);
  if (err < 0) {
    /* What FFmpeg logged says why: next to "invalid data" (as ffmpeg prints both), in place
     * of any other code, which may not be the reason (EBUSY above). */
    averr(msg, len, "cannot open", err);
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
               strcmp(path, "-") ? "" : "; raw frames: --raw");
    }
    rc = ES_ERR_INPUT;
    goto end;
  }
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
  /* Raw frames: the demuxer's options already say everything, and a y4m header does too
   * (find_stream_info would buffer frames that the reads below must see). */
  const int y4m = raw ? 0 : y4m_kind(v->fmt);
  if (!raw && !y4m && (err = avformat_find_stream_info(v->fmt, sopts)) < 0) {
    averr(msg, len, "cannot read stream information", err);
    rc = ES_ERR_INPUT;
    goto end;
  }
  /* A stream met only while reading (a PMT of MPEG-TS that adds one, or damage that reads
   * as one) is probed as it goes, and until that ends av_read_frame holds back every packet
   * of every stream: up to probesize bytes of payload, 5 MB by default, each packet keeping
   * its whole demuxer buffer (200 KB in MPEG-TS). A long small-frame .ts with such a stream
   * took the whole file in (191 MB for 30000 frames of 64x48). Only the stream chosen below
   * is read, so late probing is cut short; 4096 is what FFmpeg's segment demuxers (hls,
   * dash) open with where no probesize is set, should one open a segment while reading. */
  if (!raw && !y4m) v->fmt->probesize = 4096;
  const AVCodec *codec = NULL;
  err = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (err == AVERROR_DECODER_NOT_FOUND) {
    snprintf(msg, len, "no decoder for the video stream");
    rc = ES_ERR_INPUT;
    goto end;
  }
  if (err < 0) {
    snprintf(msg, len, "no video stream");
    rc = ES_ERR_INPUT;
    goto end;
  }
  v->stream = err;
  for (unsigned i = 0; i < v->fmt->nb_streams; i++)
    if ((int)i != v->stream) v->fmt->streams[i]->discard = AVDISCARD_ALL;
  AVStream *st = v->fmt->streams[v->stream];
  if ((rc = check_size(st->codecpar->width, st->codecpar->height, max_pixels, msg, len)) < 0)
    goto end;

  v->dec = avcodec_alloc_context3(codec);
  if (!v->dec) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  if ((err = avcodec_parameters_to_context(v->dec, st->codecpar)) < 0) {
    averr(msg, len, "decoder parameters", err);
    rc = ES_ERR_INPUT;
    goto end;
  }
  v->dec->pkt_timebase = st->time_base;
  v->dec->thread_count = opts && opts->threads > 0 ? opts->threads : 0;
  v->dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (max_pixels > 0 && max_pixels <= INT_MAX) v->dec->max_pixels = max_pixels;
  /* Verify checksums where the codec has them (ffv1 slices, ...): a damaged frame is then
   * an error we skip and count instead of a picture with garbage in it. */
  v->dec->err_recognition |= AV_EF_CRCCHECK;
  /* Lending: Y planes in our pool (lend_get_buffer), for decoders that take a get_buffer2. */
  if (v->lend && (codec->capabilities & AV_CODEC_CAP_DR1)) v->dec->get_buffer2 = lend_get_buffer;
  if ((err = avcodec_open2(v->dec, codec, NULL)) < 0) {
    averr(msg, len, "cannot open the decoder", err);
    rc = ES_ERR_INPUT;
    goto end;
  }
  v->dec->opaque = v; /* for log_cb; copied into frame threads' contexts with each packet */
  /* Decoders that give one frame for every packet they take (or one for a pair of field
   * packets), whatever the stream: packets left without a frame once drained were dropped
   * (count_dropped). Others may take packets that give no frame by design (MPEG-4's
   * not-coded VOPs, VP8's hidden frames) and are not counted. */
  v->count_drops = codec->id == AV_CODEC_ID_H264 || codec->id == AV_CODEC_ID_HEVC ||
                   codec->id == AV_CODEC_ID_MPEG1VIDEO || codec->id == AV_CODEC_ID_MPEG2VIDEO;
  /* lead_skipped: decoding starts here; HEVC packets are length-prefixed where the extradata
   * is an hvcC record (version 1, 23 bytes or more: .mp4, .mkv), else Annex B (.ts, raw). */
  v->lead_start = 1;
  if (v->dec->extradata_size >= 23 && v->dec->extradata[0] == 1)
    v->lead_nal_len = (v->dec->extradata[21] & 3) + 1;
  fields_open(v, st->codecpar);
  v->pkt = av_packet_alloc();
  v->frame = av_frame_alloc();
  if (!v->pkt || !v->frame) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }

  v->width = st->codecpar->width;
  v->height = st->codecpar->height;
  v->depth = depth_of(v->dec->pix_fmt != AV_PIX_FMT_NONE ? v->dec->pix_fmt
                                                          : (enum AVPixelFormat)st->codecpar->format);
  if (y4m) {
    int fs = av_image_get_buffer_size(st->codecpar->format, v->width, v->height, 1);
    if (fs <= 0) {
      snprintf(msg, len, "cannot size the frames of this YUV4MPEG2 stream");
      rc = ES_ERR_INPUT;
      goto end;
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
   * for the rawvideo decoder instead (y4m_packet). Either way a damaged FRAME line costs
   * its frame only: frames have one size, so the next line follows its data. */
  const size_t ybytes = (size_t)v->width * v->height * (v->depth == 16 ? 2 : 1);
  if (y4m == 2 && ybytes <= v->y4m_frame_size) {
    v->raw_direct = 1;
    v->raw_frame_size = ybytes;
    v->y4m_skip = v->y4m_frame_size - ybytes;
  } else if (y4m) {
    v->y4m_packets = 1;
  }
  if (v->raw_direct || v->y4m_packets) pread_setup(v, path, stdin_start);
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
  /* The first frame sets the stream's size and depth, as it sets up ffmpeg's filters: the
   * stream's parameters are what libavformat's probing saw last, which can be a later part
   * (H.264 in MPEG-TS whose size changes in its first seconds gave the second size, and its
   * first frame was refused as a size change). Raw frames and y4m have one format, from the
   * header. Where there is no frame (an error, the end), the first read says so. */
  if (!raw && !y4m) {
    v->primed = next_frame(v, v->prime_msg, sizeof v->prime_msg);
    if (v->primed == ES_OK) {
      v->primed = 1;
      v->width = v->frame->width;
      v->height = v->frame->height;
      v->depth = depth_of(v->frame->format);
      if ((rc = check_size(v->width, v->height, max_pixels, msg, len)) < 0) goto end;
    }
  }

  if (info) {
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
  *out = v;
  v = NULL;
end:
  if (sopts) {
    for (unsigned i = 0; i < nb_streams; i++) av_dict_free(&sopts[i]);
    av_free(sopts);
  }
  av_dict_free(&fopts);
  es_video_in_close(&v);
  return rc;
}

/* Copies (or converts) the decoded frame's grey plane into dst. */
static int deliver(es_video_in *v, const AVFrame *f, void *dst, size_t dst_stride, char *msg,
                   size_t len) {
  size_t row = (size_t)v->width * (v->depth == 16 ? 2 : 1);
  int offset = 0, step = plane0_direct(f->format, v->depth, &offset);
  if (step == (v->depth == 16 ? 2 : 1)) { /* planar: one copy per row */
    /* Non-temporal stores: the frame is read next by the GPU's DMA or a CPU worker, not
     * by this core (BENCHMARKS S8). */
    if (dst_stride == row && (size_t)f->linesize[0] == row) {
      es_copy_nt(dst, f->data[0], row * (size_t)v->height);
      return ES_OK;
    }
    for (int y = 0; y < v->height; y++)
      es_copy_nt((uint8_t *)dst + (size_t)y * dst_stride,
                 f->data[0] + (ptrdiff_t)y * f->linesize[0], row);
    return ES_OK;
  }
  if (step) { /* packed 8-bit YUV (YUYV, UYVY, ...): every step-th byte */
    for (int y = 0; y < v->height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0] + offset;
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < v->width; x++) o[x] = s[(size_t)x * step];
    }
    return ES_OK;
  }
  /* A frame of another depth than the stream's (a stream that changes depth, as two H.264
   * files of 8 and 10 bits joined): its Y as stored all the same, 8-bit samples in a 16-bit
   * stream scaled by bit replication (v * 257, as 9..15-bit Y is scaled), deeper ones in an
   * 8-bit stream without their low bits. libswscale took 8-bit YUV for limited range and
   * stretched it to full-range grey, and dithered the low bits away. */
  enum AVPixelFormat yg = y_plane_gray(f->format);
  if (v->depth == 16 && (step = plane0_direct(f->format, 8, &offset)) != 0) {
    for (int y = 0; y < v->height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0] + offset;
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < v->width; x++)
        AV_WN16(o + 2 * x, s[(size_t)x * step] * 257);
    }
    return ES_OK;
  }
  if (v->depth == 8 && yg != AV_PIX_FMT_NONE) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    const int be = !!(d->flags & AV_PIX_FMT_FLAG_BE), drop = d->comp[0].depth - 8;
    for (int y = 0; y < v->height; y++) {
      const uint8_t *s = f->data[0] + (ptrdiff_t)y * f->linesize[0];
      uint8_t *o = (uint8_t *)dst + (size_t)y * dst_stride;
      for (int x = 0; x < v->width; x++)
        o[x] = (uint8_t)((be ? AV_RB16(s + 2 * x) : AV_RL16(s + 2 * x)) >> drop);
    }
    return ES_OK;
  }
  enum AVPixelFormat src = f->format;
  if (yg != AV_PIX_FMT_NONE) src = yg; /* plane 0 alone, seen as grey */
  if (!v->sws || v->sws_fmt != src) {
    sws_freeContext(v->sws);
    enum AVPixelFormat to = v->depth == 16 ? AV_PIX_FMT_GRAY16 : AV_PIX_FMT_GRAY8;
    v->sws = sws_getContext(v->width, v->height, src, v->width, v->height, to,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                            NULL);
    if (!v->sws) {
      snprintf(msg, len, "cannot convert pixel format %s to grey",
               av_get_pix_fmt_name(f->format) ? av_get_pix_fmt_name(f->format) : "?");
      return ES_ERR_INPUT;
    }
    v->sws_fmt = src;
  }
  /* libswscale's 16-bit paths step rows by stride / 2: an odd stride (or address) goes
   * through an aligned scratch plane and is copied out. */
  int direct_dst = v->depth == 8 || !(((uintptr_t)dst | dst_stride) & 1);
  if (!direct_dst && !v->scratch) {
    v->scratch_stride = FFALIGN(row, 64);
    v->scratch = av_malloc(v->scratch_stride * v->height);
    if (!v->scratch) {
      snprintf(msg, len, "out of memory");
      return ES_ERR_NOMEM;
    }
  }
  uint8_t *dplanes[4] = {direct_dst ? dst : v->scratch, NULL, NULL, NULL};
  int dls[4] = {direct_dst ? (int)dst_stride : (int)v->scratch_stride, 0, 0, 0};
  if (sws_scale(v->sws, (const uint8_t *const *)f->data, f->linesize, 0, v->height, dplanes,
                dls) != v->height) {
    snprintf(msg, len, "conversion of frame %" PRId64 " to grey failed", v->delivered);
    return ES_ERR_INPUT;
  }
  if (!direct_dst)
    for (int y = 0; y < v->height; y++)
      memcpy((uint8_t *)dst + (size_t)y * dst_stride, v->scratch + (size_t)y * v->scratch_stride,
             row);
  return ES_OK;
}

static int y4m_packet(es_video_in *v, char *msg, size_t len);

/* The next packet of our stream into v->pkt: ES_OK, ES_ERR_EOF, or a fatal error. */
static int next_packet(es_video_in *v, char *msg, size_t len) {
  int errors = 0;
  if (v->y4m_packets) return y4m_packet(v, msg, len);
  for (;;) {
    int err = av_read_frame(v->fmt, v->pkt);
    /* Errors the demuxer logged while reading: a returned error is counted below, else a
     * damaged stretch it skipped silently before this packet (or the end). */
    if (demux_logged_bad(v) && !errors && err != AVERROR_INVALIDDATA && err != AVERROR(EIO) &&
        err != AVERROR_BUG)
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
    averr(msg, len, "read error", err);
    return ES_ERR_INPUT;
  }
}

/* ---- Direct reads (raw_direct): through libavformat's AVIOContext, or with pread from a
 * regular file (pfd). */

/* pread until n bytes or the end; returns the count (a read error ends it early). */
static size_t pread_full(int fd, uint8_t *dst, size_t n, int64_t off, int *err) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(fd, dst + got, n - got, (off_t)(off + (int64_t)got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) *err = AVERROR(errno);
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

/* The buffer skipped bytes are read into (see in_bytes). */
#define ES_DROP_BYTES ((size_t)1 << 20)

/* Bytes per thread below which a frame is read by one thread. */
#define ES_PREAD_CHUNK ((size_t)256 << 10)

/* n bytes of the input into dst, or dropped where dst is NULL; returns how many there were
 * (fewer only at the end or on a read error, *err then says which). From a regular file
 * the bytes are read by up to four threads at once: one thread copying out of the page
 * cache bounded raw and y4m input at ~2600 fps of 1080p (BENCHMARKS Y1). */
static size_t in_bytes(es_video_in *v, uint8_t *dst, size_t n, int *err) {
  if (v->pfd < 0) {
    AVIOContext *pb = v->fmt->pb;
    size_t got = 0;
    /* Skipped bytes still have to be read from a pipe: into a buffer larger than avio's,
     * which avio_read then fills straight from the pipe (small reads through avio's own
     * buffer cost twice the copy). */
    if (!dst && !v->drop && !(v->drop = av_malloc(ES_DROP_BYTES))) {
      *err = AVERROR(ENOMEM);
      return 0;
    }
    while (got < n) {
      const size_t step = dst ? n - got : (n - got < ES_DROP_BYTES ? n - got : ES_DROP_BYTES);
      const int want = step < (size_t)INT_MAX ? (int)step : INT_MAX;
      const int r = avio_read(pb, dst ? dst + got : v->drop, want);
      if (r > 0) got += (size_t)r;
      if (r != want) {
        if (r < 0 && r != AVERROR_EOF) *err = r;
        break;
      }
    }
    return got;
  }
  if (!dst) { /* skipped: only whether the file holds them */
    struct stat st;
    if (fstat(v->pfd, &st) != 0) {
      *err = AVERROR(errno);
      return 0;
    }
    const int64_t left = (int64_t)st.st_size - v->poff;
    const size_t got = left <= 0 ? 0 : (uint64_t)left < n ? (size_t)left : n;
    v->poff += (int64_t)got;
    return got;
  }
  const int nt = n >= 4 * ES_PREAD_CHUNK ? 4 : n >= 2 * ES_PREAD_CHUNK ? 2 : 1;
  const size_t per = (n + (size_t)nt - 1) / (size_t)nt;
  size_t part[4] = {0, 0, 0, 0}, len[4] = {0, 0, 0, 0}; /* bytes read / asked, per thread */
  int perr[4] = {0, 0, 0, 0};
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
#endif
  for (int k = 0; k < nt; k++) {
    const size_t a = (size_t)k * per;
    len[k] = a + per < n ? per : n - a;
    part[k] = pread_full(v->pfd, dst + a, len[k], v->poff + (int64_t)a, &perr[k]);
  }
  size_t got = 0;
  for (int k = 0; k < nt; k++) { /* what arrived without a gap */
    got += part[k];
    if (perr[k]) *err = perr[k];
    if (part[k] < len[k]) break;
  }
  v->poff += (int64_t)got;
  return got;
}

/* Bytes of the regular file (pfd) after what was read, or -1 with *err set. */
static int64_t file_left(const es_video_in *v, int *err) {
  struct stat st;
  if (fstat(v->pfd, &st) != 0) {
    *err = AVERROR(errno);
    return -1;
  }
  return (int64_t)st.st_size > v->poff ? (int64_t)st.st_size - v->poff : 0;
}

/* The first allocation of in_bytes_grown from a pipe; each later one doubles. */
#define ES_GROW_FIRST ((size_t)1 << 20)

/* n bytes of the input into *buf, allocated here (av_malloc'd, with pad zeroed bytes after
 * the n) only as far as the bytes exist: a header declares a frame's size, and a 49-byte
 * y4m of 16000x16000 frames must not cost 256 MB. From a regular file the size is checked
 * first: a frame it cannot hold is not read, nor allocated; from a pipe the buffer grows
 * as the bytes arrive, from ES_GROW_FIRST by doubling, so that it stays within twice what
 * came (and the copies of growing within the frame's size). Returns how many bytes there
 * were, as in_bytes; *buf is NULL where they are fewer than n, or where no memory could be
 * had (*err is then AVERROR(ENOMEM)). */
static size_t in_bytes_grown(es_video_in *v, uint8_t **buf, size_t n, size_t pad, int *err) {
  size_t got = 0, cap = 0;
  *buf = NULL;
  if (v->pfd >= 0) {
    const int64_t left = file_left(v, err);
    if (left < 0) return 0;
    if ((uint64_t)left < n) { /* short: what in_bytes would have read, without reading it */
      v->poff += left;
      return (size_t)left;
    }
    cap = n; /* it is all there: one allocation, one read */
  }
  while (got < n) {
    size_t next = cap ? (cap < n / 2 ? 2 * cap : n) : (n < ES_GROW_FIRST ? n : ES_GROW_FIRST);
    uint8_t *b = next <= SIZE_MAX - pad ? av_realloc(*buf, next + pad) : NULL;
    if (!b) {
      *err = AVERROR(ENOMEM);
      break;
    }
    *buf = b;
    cap = next;
    const size_t r = in_bytes(v, *buf + got, cap - got, err);
    got += r;
    if (got < cap) break;
  }
  if (got < n) {
    av_freep(buf);
    return got;
  }
  memset(*buf + n, 0, pad);
  return got;
}

/* The line before a y4m frame's data ("FRAME", optional parameters, '\n'), read as
 * libavformat's demuxer reads it (at most Y4M_LINE_MAX bytes before the '\n'); a stream
 * header in its place may be as long as the demuxer takes a first one (Y4M_HEADER_MAX, its
 * MAX_YUV4_HEADER: ffmpeg's own headers with a colour range pass 80 bytes). */
#define Y4M_LINE_MAX 80
#define Y4M_HEADER_MAX 96
enum { Y4M_FRAME, Y4M_END, Y4M_CUT, Y4M_BAD, Y4M_LOST, Y4M_HEADER };

/* The most bytes a line that begins with these n may hold before its '\n'. */
static size_t y4m_line_max(const char *line, size_t n) {
  return n >= 10 && !memcmp(line, "YUV4MPEG2 ", 10) ? Y4M_HEADER_MAX : Y4M_LINE_MAX;
}

/* Y4M_HEADER: a stream header ("YUV4MPEG2 ...") where a frame line was due, as when two y4m
 * streams are concatenated; the line (n bytes, terminated) is left in line, which holds
 * Y4M_HEADER_MAX + 1 bytes. */
static int y4m_line(es_video_in *v, int *err, char *line, int *len) {
  int n = 0;
  if (v->pfd >= 0) {
    const size_t got = pread_full(v->pfd, (uint8_t *)line, Y4M_HEADER_MAX + 1, v->poff, err);
    const char *nl = memchr(line, '\n', got);
    const size_t max = y4m_line_max(line, got);
    if (!nl || (size_t)(nl - line) > max)
      return got == 0 ? Y4M_END : !nl && got <= max ? Y4M_CUT : Y4M_LOST;
    n = (int)(nl - line);
    v->poff += n + 1;
  } else {
    AVIOContext *pb = v->fmt->pb;
    for (;;) {
      const int c = avio_r8(pb);
      if (pb->eof_reached || pb->error) {
        if (pb->error && pb->error != AVERROR_EOF) *err = pb->error;
        return n ? Y4M_CUT : Y4M_END;
      }
      if (c == '\n') break;
      if ((size_t)n == y4m_line_max(line, (size_t)n))
        return Y4M_LOST; /* no frame boundary to resume from */
      line[n++] = (char)c;
    }
  }
  line[n] = 0;
  *len = n;
  if (n >= 10 && !memcmp(line, "YUV4MPEG2 ", 10)) return Y4M_HEADER;
  return n >= 5 && !memcmp(line, "FRAME", 5) ? Y4M_FRAME : Y4M_BAD;
}

/* A y4m stream header line in memory, for y4m_header_format's demuxer. */
typedef struct y4m_mem {
  const uint8_t *p;
  size_t left;
} y4m_mem;

static int y4m_mem_read(void *opaque, uint8_t *buf, int size) {
  y4m_mem *m = opaque;
  const size_t k = m->left < (size_t)size ? m->left : (size_t)size;
  if (!k) return AVERROR_EOF;
  memcpy(buf, m->p, k);
  m->p += k;
  m->left -= k;
  return (int)k;
}

/* The pixel format, W and H of a y4m stream header (n bytes, without its '\n') as
 * libavformat's demuxer reads them (it read the first header): AV_PIX_FMT_NONE where it
 * refuses the header. A parser of our own took 4:2:0 where only an XYSCSS field gave the
 * layout, which the demuxer takes from there. */
static enum AVPixelFormat y4m_header_format(const char *line, int n, int *w, int *h) {
  enum AVPixelFormat f = AV_PIX_FMT_NONE;
  const AVInputFormat *ifmt = av_find_input_format("yuv4mpegpipe");
  AVFormatContext *fmt = avformat_alloc_context();
  uint8_t text[Y4M_HEADER_MAX + 1];
  y4m_mem m = {text, (size_t)n + 1};
  const int cap = 4096; /* avio's buffer */
  uint8_t *buf = av_malloc(cap);
  AVIOContext *pb = buf ? avio_alloc_context(buf, cap, 0, &m, y4m_mem_read, NULL, NULL) : NULL;
  *w = *h = 0;
  if (!ifmt || !fmt || !pb || n < 0 || n > Y4M_HEADER_MAX) goto end;
  memcpy(text, line, (size_t)n);
  text[n] = '\n';
  fmt->pb = pb;
  fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  if (avformat_open_input(&fmt, NULL, ifmt, NULL) < 0) goto end; /* it freed fmt */
  if (fmt->nb_streams == 1) {
    const AVCodecParameters *p = fmt->streams[0]->codecpar;
    f = (enum AVPixelFormat)p->format;
    *w = p->width;
    *h = p->height;
  }
end:
  avformat_close_input(&fmt);
  if (pb)
    av_freep(&pb->buffer);
  else
    av_free(buf);
  avio_context_free(&pb);
  return f;
}

/* Why frame v->packets ended early: a read error (err), else it is short (got of fsize
 * bytes). Returns ES_ERR_INPUT. */
static int frame_cut(const es_video_in *v, int err, size_t got, size_t fsize, char *msg,
                     size_t len) {
  if (err)
    averr(msg, len, "read error", err);
  else
    snprintf(msg, len, "frame %" PRId64 " is short (got %zu of %zu bytes)", v->packets, got,
             fsize);
  return ES_ERR_INPUT;
}

/* Reads up to the next good FRAME line: a frame whose line is damaged is skipped and
 * counted (frames have one size, so the next line follows its data). ES_OK, ES_ERR_EOF at
 * the end, or ES_ERR_INPUT with msg (a read error, a short last frame). */
static int y4m_next_frame(es_video_in *v, char *msg, size_t len) {
  const size_t fsize = v->y4m_frame_size;
  int err = 0, n = 0;
  char line[Y4M_HEADER_MAX + 1];
  for (int bad = 0;;) {
    const int l = y4m_line(v, &err, line, &n);
    if (l == Y4M_FRAME) return ES_OK;
    if (l == Y4M_HEADER) {
      /* Another stream's header (concatenated y4m files): the same frames go on; frames of
       * another size or layout end the input with an error, the frames before kept. */
      int w, h;
      const enum AVPixelFormat f = y4m_header_format(line, n, &w, &h);
      if (f == v->y4m_format && w == v->width && h == v->height) continue;
      if (f == AV_PIX_FMT_NONE) {
        snprintf(msg, len,
                 "frame %" PRId64 ": a new y4m stream begins with a header that "
                 "cannot be read",
                 v->packets);
        return ES_ERR_INPUT;
      }
      const char *fn = av_get_pix_fmt_name(f), *sn = av_get_pix_fmt_name(v->y4m_format);
      snprintf(msg, len,
               "frame %" PRId64 ": a new y4m stream of %dx%d %s begins where the stream started "
               "at %dx%d %s (changes of size or pixel format are not supported)",
               v->packets, w, h, fn ? fn : "?", v->width, v->height, sn ? sn : "?");
      return ES_ERR_INPUT;
    }
    if (l == Y4M_BAD && ++bad < ES_VIDEO_MAX_DEMUX_ERRORS) {
      v->corrupt++;
      v->packets++;
      /* The skipped frame keeps its place in time: later frames keep their own time stamps
       * (read straight, a frame's pts is next_pts; through the decoder, the packet count). */
      v->next_pts += v->step;
      if (in_bytes(v, NULL, fsize, &err) == fsize) continue;
      return ES_ERR_EOF;
    }
    if (err || l == Y4M_CUT) return frame_cut(v, err, 0, fsize, msg, len);
    if (l != Y4M_END) v->corrupt++;
    return ES_ERR_EOF;
  }
}

/* A time stamp in seconds, the double nearest to pts * num / den: the product is exact (below
 * 2^53 for any real stream) and one division rounds it once. pts * av_q2d(tb) rounds twice
 * and wrote 1.4000000000000001 for the frame at 1.4 s of a 1/12800 time base. */
static double ts_seconds(int64_t pts, AVRational tb) {
  return (double)pts * (double)tb.num / (double)tb.den;
}

/* The end of direct reads: a frame cut short (a read error, or got of its fsize bytes),
 * else (nothing at all where a raw frame would begin) the end of the input. */
static int direct_end(es_video_in *v, int err, size_t got, size_t fsize, char *msg, size_t len) {
  v->finished = 1;
  v->line_read = 0;
  if (err == AVERROR(ENOMEM)) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if (err || got > 0 || v->y4m_frame_size) return frame_cut(v, err, got, fsize, msg, len);
  return ES_ERR_EOF;
}

/* Lends the staged frame (v->stage, row bytes a row): 1, or 0 where it cannot (it stays
 * staged, for a call with a buffer). */
static int stage_lend(es_video_in *v, size_t row, es_video_lent *lent) {
  AVFrame *keep = av_frame_alloc();
  if (!keep || v->raw_frame_size > (size_t)INT_MAX) {
    av_frame_free(&keep);
    return 0;
  }
  keep->buf[0] =
      av_buffer_create(v->stage, (int)v->raw_frame_size, av_buffer_default_free, NULL, 0);
  if (!keep->buf[0]) {
    av_frame_free(&keep);
    return 0;
  }
  keep->data[0] = v->stage;
  v->stage = NULL; /* the frame's now */
  lent->data = keep->data[0];
  lent->stride = row;
  lent->ref = keep;
  return 1;
}

/* One raw or y4m frame read straight into dst (see raw_direct).
 * Without dst (the caller has no buffer for frames yet, and sizes one only for a frame
 * that exists): from a regular file, ES_ERR_AGAIN once the file holds the whole frame
 * (only its y4m FRAME line read), else its end or short frame as with dst, nothing
 * allocated. From a pipe, the first frame is read into a buffer grown as its bytes arrive
 * (in_bytes_grown) and lent (held until a call with dst where lent is NULL); later frames
 * are ES_ERR_AGAIN at once: a whole frame came, so a buffer for the next is bounded by
 * what came. */
static int direct_read(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
                       int64_t *pts, double *pts_seconds, char *msg, size_t len) {
  const size_t row = (size_t)v->width * (v->depth == 16 ? 2 : 1);
  const size_t fsize = v->y4m_frame_size ? v->y4m_frame_size : v->raw_frame_size;
  size_t got = 0;
  int err = 0;
  if (!v->stage) {
    if (v->finished) return ES_ERR_EOF;
    if (v->y4m_frame_size && !v->line_read) {
      const int rc = y4m_next_frame(v, msg, len);
      if (rc != ES_OK) {
        v->finished = 1;
        return rc;
      }
      v->line_read = 1;
    }
    if (!dst) {
      if (v->pfd >= 0) {
        const int64_t left = file_left(v, &err);
        if (left >= 0 && (uint64_t)left >= fsize) return ES_ERR_AGAIN;
        got = left > 0 ? (size_t)left : 0;
        v->poff += (int64_t)got; /* as the reads would have left it */
        return direct_end(v, err, got, fsize, msg, len);
      }
      if (v->delivered > 0) return ES_ERR_AGAIN;
      got = in_bytes_grown(v, &v->stage, v->raw_frame_size, 0, &err);
      if (got == v->raw_frame_size && v->y4m_skip) got += in_bytes(v, NULL, v->y4m_skip, &err);
      if (got != fsize) {
        av_freep(&v->stage);
        return direct_end(v, err, got, fsize, msg, len);
      }
    }
  }
  if (v->stage) { /* read by an earlier call, or just now */
    if (dst) {
      for (int y = 0; y < v->height; y++)
        memcpy((uint8_t *)dst + (size_t)y * dst_stride, v->stage + (size_t)y * row, row);
      av_freep(&v->stage);
    } else if (!lent || !stage_lend(v, row, lent)) {
      return ES_ERR_AGAIN; /* held for a call with a buffer */
    }
  } else {
    if (dst_stride == row) {
      got = in_bytes(v, dst, v->raw_frame_size, &err);
    } else {
      for (int y = 0; y < v->height; y++) {
        const size_t r = in_bytes(v, (uint8_t *)dst + (size_t)y * dst_stride, row, &err);
        got += r;
        if (r != row) break;
      }
    }
    if (got == v->raw_frame_size && v->y4m_skip) got += in_bytes(v, NULL, v->y4m_skip, &err);
    if (got != fsize) return direct_end(v, err, got, fsize, msg, len);
  }
  v->line_read = 0;
  if (pts) *pts = v->next_pts;
  if (pts_seconds) *pts_seconds = ts_seconds(v->next_pts, v->tb);
  v->next_pts += v->step;
  v->delivered++;
  v->packets++;
  return ES_OK;
}

/* One y4m frame read here into v->pkt for the rawvideo decoder (y4m_packets), its time
 * stamp the frame's index as the demuxer gives it. ES_OK or ES_ERR_EOF; a read error or a
 * short last frame is left pending, reported once the frames before it are out. The packet
 * is allocated as its bytes arrive (in_bytes_grown), not at the size the header says. */
static int y4m_packet(es_video_in *v, char *msg, size_t len) {
  const size_t fsize = v->y4m_frame_size;
  char *why = v->pending_msg; /* read only once v->pending is set */
  int err = 0, rc = y4m_next_frame(v, why, sizeof v->pending_msg);
  if (rc == ES_OK) {
    uint8_t *data = NULL;
    const size_t got = fsize > (size_t)INT_MAX
                           ? 0
                           : in_bytes_grown(v, &data, fsize, AV_INPUT_BUFFER_PADDING_SIZE, &err);
    if (fsize > (size_t)INT_MAX || err == AVERROR(ENOMEM)) {
      av_free(data);
      snprintf(msg, len, "out of memory");
      return ES_ERR_NOMEM;
    }
    if (got == fsize) {
      av_packet_unref(v->pkt);
      v->pkt->buf = av_buffer_create(data, (int)fsize + AV_INPUT_BUFFER_PADDING_SIZE,
                                     av_buffer_default_free, NULL, 0);
      if (!v->pkt->buf) {
        av_free(data);
        snprintf(msg, len, "out of memory");
        return ES_ERR_NOMEM;
      }
      v->pkt->data = data;
      v->pkt->size = (int)fsize;
      v->pkt->stream_index = v->stream;
      v->pkt->pts = v->pkt->dts = v->packets; /* frames so far, damaged ones included */
      v->pkt->duration = 1;
      return ES_OK;
    }
    rc = frame_cut(v, err, got, fsize, why, sizeof v->pending_msg);
  }
  if (rc == ES_ERR_INPUT) v->pending = ES_ERR_INPUT;
  return ES_ERR_EOF;
}

int es_video_in_read(es_video_in *v, void *dst, size_t dst_stride, int64_t *pts,
                     double *pts_seconds, char *msg, size_t len) {
  return es_video_in_read_lend(v, dst, dst_stride, NULL, pts, pts_seconds, msg, len);
}

/* Lends the received frame f (moved into a new frame) when its Y plane is the grey plane
 * as stored; 0 if it cannot (the caller copies). Pins a pool buffer on its first lending
 * that pin() accepts. */
static int lend_frame(es_video_in *v, AVFrame *f, es_video_lent *lent) {
  if (!plane0_as_stored(f->format, v->depth) || f->linesize[0] <= 0 || !f->buf[0]) return 0;
  AVFrame *keep = av_frame_alloc();
  if (!keep) return 0;
  av_frame_move_ref(keep, f);
  if (v->pin) {
    lend_buf *h = lend_find(v, keep->buf[0]);
    if (h && !h->pinned) h->pinned = v->pin(h->data, h->bytes) ? 1 : 0;
  }
  lent->data = keep->data[0];
  lent->stride = (size_t)keep->linesize[0];
  lent->ref = keep;
  return 1;
}

/* Hands the decoded frame v->frame (time stamp p) over: lent, copied into dst, or without
 * dst, where it cannot be lent, held for the next call (ES_ERR_AGAIN). */
static int hand_over(es_video_in *v, int64_t p, void *dst, size_t dst_stride, es_video_lent *lent,
                     int64_t *pts, double *pts_seconds, char *msg, size_t len) {
  AVFrame *f = v->frame;
  const int tr = es_trace_enabled();
  const double t0 = tr ? es_trace_ms() : 0.0;
  int rc = ES_ERR_AGAIN;
  if (lent && lend_frame(v, f, lent))
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
  if (pts_seconds) *pts_seconds = ts_seconds(p, v->tb);
  return ES_OK;
}

/* Whether frame f came from a packet sent before the first keyframe packet: by its tag
 * where packets are tagged, else by its dts (unknown: no). */
static int frame_before_key(const es_video_in *v, const AVFrame *f) {
#if ES_VIDEO_TAG_PACKETS
  if (f->reordered_opaque > 0) return f->reordered_opaque < v->key_seq;
#endif
  return f->pkt_dts != AV_NOPTS_VALUE && v->key_dts != AV_NOPTS_VALUE && f->pkt_dts < v->key_dts;
}

/* HEVC joins. An IRAP that ends a sequence (a CRA just after an end-of-sequence NAL, as where
 * two streams are joined, or an IDR or BLA with no_output_of_prior_pics_flag: hevc_lead's
 * lead_join) makes hevcdec discard the pictures of the sequence before it still waiting to
 * be shown (ff_hevc_output_frame: those not marked for bumping), by design: ffmpeg gives the
 * same frame count. Which ones is not a matter of POC or pts alone (a picture decoded late,
 * below one already shown, is discarded too), so each picture sent is matched to its frame by
 * the packet's tag (reordered_opaque). The frames of a sequence all come out before the
 * first of the next one (seq_output), so a join is settled by a frame of a later packet, or
 * once drained: a picture of those sent before the join (the last ES_JOIN_PICS) that gave no
 * frame by then was discarded. Without packet tags (libavcodec 61), none is excused. */
static void join_settle(es_video_in *v, int i) {
  es_join *j = &v->joins[i];
  for (int k = 0; k < j->n; k++)
    if (!j->pics[k].out) v->joined++;
  memmove(j, j + 1, sizeof *j * (size_t)(--v->njoins - i));
}

/* A packet sent whose picture counts (not excused otherwise): join is its lead_join. */
static void join_sent(es_video_in *v, int64_t seq, int join) {
#if ES_VIDEO_TAG_PACKETS
  if (join && v->join_n) {
    if (v->njoins == ES_JOINS) join_settle(v, 0); /* the oldest, early: it may count more */
    es_join *j = &v->joins[v->njoins++];
    j->seq = seq;
    j->n = v->join_n;
    memcpy(j->pics, v->join_ring, sizeof j->pics);
    v->join_n = 0;
  }
  if (v->join_n == ES_JOIN_PICS) {
    memmove(v->join_ring, v->join_ring + 1, sizeof v->join_ring[0] * (ES_JOIN_PICS - 1));
    v->join_n--;
  }
  v->join_ring[v->join_n++] = (es_join_pic){.seq = seq, .out = 0};
#else
  (void)v, (void)seq, (void)join;
#endif
}

/* A frame out of HEVC (damaged or not): marks its picture, in the join it is before (the
 * joins before it settled) or in the ring of the current sequence. */
static void join_frame(es_video_in *v, const AVFrame *f) {
#if ES_VIDEO_TAG_PACKETS
  const int64_t tag = f->reordered_opaque;
  es_join_pic *pics = v->join_ring;
  int n = v->join_n;
  for (int i = 0; i < v->njoins;) {
    es_join *j = &v->joins[i];
    if (tag >= j->seq) {
      join_settle(v, i);
      continue;
    }
    pics = j->pics; /* a frame before this join is before the later ones too */
    n = j->n;
    break;
  }
  for (int k = 0; k < n; k++)
    if (pics[k].seq == tag) pics[k].out = 1;
#else
  (void)v, (void)f;
#endif
}

/* Once drained: the packets the decoder took and gave no frame for, though it returned no
 * error for them. H.264 does this where damage lost a keyframe: the frames after it, decoded
 * against references it no longer has, come out of order (their POCs below the last one
 * given out) and are discarded with only a debug line ("no picture ooo"), no error and no
 * flag. Every packet of the counted codecs gives a frame, a receive error, or (field
 * pictures, in two packets) half of an interlaced frame; packets before the first keyframe
 * are counted apart (prekey), and so are packets the container marks to be discarded (an
 * .mp4 trimmed with -c copy keeps the packets from the keyframe before its start, flagged
 * AV_PKT_FLAG_DISCARD by its edit list: libavcodec decodes them and gives no frame, by
 * design; not counted anywhere else), the leading pictures of an open GOP that the
 * decoder skips where decoding starts (lead_skipped), and the pictures HEVC's decoder
 * discards at a join (join_settle). What is left over was dropped. */
static int64_t count_dropped(const es_video_in *v) {
  /* final once drained (the decoder's EOF; not a drain given up after 1024 errors) */
  if (!v->count_drops || !v->finished || v->drain_errors > 1024) return 0;
  const int64_t left = v->sent_ok - v->received - v->recv_errors - v->prekey - field_packets(v) -
                       v->discards - v->leading - v->joined;
  return left > 0 ? left : 0;
}

/* The next NAL of an HEVC packet at or after *b, never past end: its first byte (its header),
 * *b moved on to where the one after it is looked for (hvcC: past its length, so *b is its
 * end; Annex B: just past its start code, the NAL's end being the next start code); NULL where
 * none is left. */
static const uint8_t *hevc_nal(const es_video_in *v, const uint8_t **b, const uint8_t *end) {
  const uint8_t *p = *b;
  if (v->lead_nal_len) {
    if (end - p < v->lead_nal_len) return NULL;
    uint32_t n = 0;
    for (int i = 0; i < v->lead_nal_len; i++)
      n = n << 8 | p[i];
    const uint8_t *nal = p + v->lead_nal_len;
    if (n > (uint32_t)(end - nal)) n = (uint32_t)(end - nal);
    *b = nal + n;
    return nal;
  }
  while (end - p >= 3 && !(p[0] == 0 && p[1] == 0 && p[2] == 1))
    p++;
  if (end - p < 3) return NULL;
  return *b = p + 3;
}

/* lead_skipped for HEVC; last_eos: the packet before ended with an end of sequence. Sets
 * lead_join where the packet's IRAP makes the decoder discard the pictures waiting. */
static int hevc_lead(es_video_in *v, const AVPacket *p, int last_eos) {
  const uint8_t *b = p->data, *end = p->data + p->size;
  int at_start = 1, eos_start = 0; /* EOS or EOB before any other NAL: hevcdec's eos_at_start */
  v->lead_join = 0;
  for (const uint8_t *nal; (nal = hevc_nal(v, &b, end));) {
    if (end - nal < 2) continue; /* an empty NAL: on to the next */
    const int type = nal[0] >> 1 & 0x3f;
    if (type == 36 || type == 37) {
      v->lead_start = 1;
      eos_start |= at_start;
    } else {
      at_start = 0;
    }
    if (type >= 32) continue;       /* parameter sets, SEI, AUD: on to the picture */
    if (type >= 16 && type <= 23) { /* IRAP: BLA 16..18, IDR 19..20, CRA 21 */
      v->lead_rasl = type <= 18 || (type >= 21 && v->lead_start);
      /* no_output_of_prior_pics_flag: an IDR's or BLA's own (the bit after
       * first_slice_segment_in_pic_flag), set by hevcdec for a CRA just after an end of
       * sequence (its last_eos) */
      v->lead_join = type == 21 ? last_eos || eos_start : end - nal >= 3 && (nal[2] & 0x40);
      v->lead_start = 0;
      return 0;
    }
    if (type == 8 || type == 9) return v->lead_rasl;
    if (type < 6) v->lead_rasl = 0; /* a trailing picture: the leading ones are over */
    return 0;
  }
  return 0;
}

/* Whether the packet's last NAL is an end of sequence or of bitstream (36, 37) after some
 * other NAL (hevcdec's eos: the next packet's last_eos; one at the packet's start is
 * hevc_lead's). Annex B: the last start code, past trailing zero bytes; hvcC: the NALs'
 * lengths, one after the other. Never past p->size. */
static int hevc_ends_eos(const es_video_in *v, const AVPacket *p) {
  const uint8_t *b = p->data;
  int n = p->size, type = -1, nals = 0;
  if (v->lead_nal_len) {
    for (const uint8_t *nal, *at = b; (nal = hevc_nal(v, &at, b + n));)
      if (at - nal >= 2) { /* at: the NAL's end */
        type = nal[0] >> 1 & 0x3f;
        nals++;
      }
    return nals > 1 && (type == 36 || type == 37);
  }
  while (n > 0 && b[n - 1] == 0)
    n--;
  if (n < 5 || b[n - 5] || b[n - 4] || b[n - 3] != 1) return 0; /* EOS, EOB: 2 bytes */
  type = b[n - 2] >> 1 & 0x3f;
  int first = 0; /* the first start code: is it this one? */
  while (first + 3 <= n - 5 && !(b[first] == 0 && b[first + 1] == 0 && b[first + 2] == 1))
    first++;
  return (type == 36 || type == 37) && first + 3 <= n - 5;
}

/* Whether the decoder skips the picture of packet p, by design, as a leading picture of an
 * open GOP where decoding starts (no error, no frame; ffmpeg gives the same frame count), as
 * FFmpeg's decoders do, following them packet by packet (one picture a packet):
 *  - HEVC: the RASL pictures (NAL types 8, 9) after a CRA (21) that starts decoding (the
 *    stream's first, or the first after an end-of-sequence or end-of-bitstream NAL: 36, 37)
 *    or after a BLA (16..18), up to the next trailing or IRAP picture (hevcdec's max_ra: its
 *    POC test agrees while POCs go up, as in any stream that is not damaged). The RASL of a
 *    later CRA are decoded, so a keyframe lost to damage still shows.
 *  - MPEG-1/2: B-pictures (picture_coding_type 3) while fewer than two reference pictures
 *    were seen, where the last GOP header is not closed_gop (mpeg12dec's "Skipping B slice
 *    due to open GOP"); broken_link changes nothing there, and a later open GOP has its
 *    forward reference.
 * Neither libavcodec's parsers nor the decoders expose this (the parsers give the picture
 * type and POC, not the NAL type or closed_gop), so the packet's headers are read here: start
 * codes (Annex B, MPEG) or length prefixes (hvcC), up to the first picture or slice NAL, never
 * past p->size. Updates the state it follows; 0 for other codecs. */
static int lead_skipped(es_video_in *v, const AVPacket *p) {
  const uint8_t *b = p->data, *end = p->data + p->size;
  const enum AVCodecID id = v->dec->codec_id;
  if (id == AV_CODEC_ID_HEVC) {
    const int last_eos = v->lead_eos, skip = hevc_lead(v, p, last_eos);
    v->lead_eos = hevc_ends_eos(v, p);
    if (v->lead_eos) v->lead_start = 1;
    return skip;
  }
  if (id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_MPEG2VIDEO) {
    while (end - b >= 6) {
      if (b[0] || b[1] || b[2] != 1) {
        b++;
        continue;
      }
      if (b[3] == 0xb8 && end - b >= 8) v->lead_closed = b[7] >> 6 & 1; /* GOP header */
      if (b[3] == 0x00) { /* picture header: temporal_reference (10 bits), coding type (3) */
        const int type = b[5] >> 3 & 7;
        if (type == 1 || type == 2) {
          if (v->lead_refs < 2) v->lead_refs++;
          return 0;
        }
        return type == 3 && v->lead_refs < 2 && !v->lead_closed;
      }
      b += 4;
    }
  }
  return 0;
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
      if (v->count_drops && v->dec->codec_id == AV_CODEC_ID_HEVC) join_frame(v, f);
#ifdef AV_FRAME_FLAG_INTERLACED
      if (f->flags & AV_FRAME_FLAG_INTERLACED) v->interlaced++;
#else
      if (f->interlaced_frame) v->interlaced++;
#endif
      if (v->received == 1) {
        /* The first frame out: where it came from a packet before the first keyframe (or
         * no keyframe was seen at all), the decoder decodes those: none was dropped. */
        if (!v->key_seen || frame_before_key(v, f)) {
          v->prekey = 0;
          v->second_fields += v->prekey_second; /* they were decoded: pairs as any */
          v->prekey_second = 0;
        }
        v->key_seen = 1;
      }
      /* Damage the decoder flagged, or only logged (frame_logged_bad): the frame is kept
       * (its damaged parts concealed, as ffmpeg and players show it), marked, and counted
       * once it is handed over. Skipping it lost a frame that ffmpeg counts. */
      int logged_bad = frame_logged_bad(v, f);
      v->cur_damaged =
          (f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags || logged_bad;
      return ES_OK;
    }
    if (err == AVERROR_EOF) {
      v->finished = 1;
      while (v->njoins)
        join_settle(v, 0);
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
      v->pending = frame_cut(v, 0, (size_t)v->pkt->size, v->raw_frame_size, v->pending_msg,
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
    const int lead = v->count_drops && lead_skipped(v, v->pkt);
    const int join = v->lead_join;
    const int ps = v->fields != FIELDS_NONE ? packet_structure(v, v->pkt) : 0;
    err = avcodec_send_packet(v->dec, v->pkt);
    av_packet_unref(v->pkt);
    if (err < 0 && err != AVERROR(EAGAIN) && err != AVERROR_EOF)
      v->corrupt++; /* counted once: not among the packets before the first keyframe too */
    else if (prekey)
      v->prekey++;
    if (err >= 0) {
      v->sent_ok++;
      if (discard && !prekey) v->discards++; /* see count_dropped (prekey: counted there) */
      else if (lead && !prekey)
        v->leading++;
      else if (!prekey && v->dec->codec_id == AV_CODEC_ID_HEVC && v->count_drops)
        join_sent(v, v->seq, join);
      /* a second field counted above (prekey, discard, leading) is not excused again */
      if (v->fields != FIELDS_NONE && second_field(v, ps)) {
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
  if (v->raw_direct) return direct_read(v, dst, dst_stride, lent, pts, pts_seconds, msg, len);
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
int64_t es_video_in_log_lines(const es_video_in *v) {
  int64_t n = 0;
  if (!v) return 0;
  pthread_mutex_lock(&log_lock); /* the decoder's threads may still be logging */
  n = v->log_lines;
  pthread_mutex_unlock(&log_lock);
  return n;
}
int es_video_in_frame_damaged(const es_video_in *v) { return v ? v->last_damaged : 0; }
int64_t es_video_in_flagged(const es_video_in *v) { return v ? v->flagged : 0; }
int64_t es_video_in_prekey(const es_video_in *v) { return v ? v->prekey : 0; }
int64_t es_video_in_dropped(const es_video_in *v) { return v ? count_dropped(v) : 0; }
int64_t es_video_in_excused(const es_video_in *v) {
  return v && v->finished ? v->discards + v->leading + v->joined : 0;
}
double es_video_in_copy_ms(const es_video_in *v) { return v ? v->deliver_ms : 0.0; }

void es_video_in_close(es_video_in **pv) {
  if (!pv || !*pv) return;
  es_video_in *v = *pv;
  log_unregister(v);
  sws_freeContext(v->sws);
  av_free(v->scratch);
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
