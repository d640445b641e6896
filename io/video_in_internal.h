/*
 * video_in_internal.h - what the parts of the video reader share (private to io/video_in_*.c):
 * the reader's state (struct es_video_in) and the functions one part calls in another.
 *   video_in_read.c    demux/decode: es_video_in_open/read/close and the frame hand-over
 *   video_in_lend.c    the lending pool (decoded Y planes handed out by reference)
 *   video_in_log.c     the process-wide capture of errors libav* only logs
 *   video_in_drops.c   the accounting of packets that gave no frame (fields, leads, joins)
 *   video_in_direct.c  raw and y4m frames read straight from the input (pread, avio)
 */
#ifndef ES_VIDEO_IN_INTERNAL_H
#define ES_VIDEO_IN_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>

#include "es_io.h"

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

/* A decoded frame's grey plane, as video frames and libav's stills (still_av.c) get it: the
 * Y plane as stored for 8-bit YUV/grey formats, else libswscale to GRAY8/GRAY16. The state
 * a converter keeps between frames (zeroed to start; es_vin_grey_free releases it). */
typedef struct es_vin_grey {
  struct SwsContext *sws; /* made on the first frame that needs it */
  int sws_fmt;            /* source pixel format sws was made for */
  uint8_t *scratch;       /* aligned grey plane for destinations libswscale cannot take */
  size_t scratch_stride;  /* its row bytes */
} es_vin_grey;
/* Writes f's grey plane (width x height, depth 8 or 16: es_vin_depth_of) into dst. frame >= 0
 * is named in the message of a failed conversion. ES_OK, or ES_ERR_INPUT/ES_ERR_NOMEM. */
int es_vin_grey_convert(es_vin_grey *g, const AVFrame *f, int width, int height, int depth,
                        void *dst, size_t dst_stride, int64_t frame, char *msg, size_t len);
void es_vin_grey_free(es_vin_grey *g);
/* Depth of the grey plane delivered for a pixel format: 8 up to 8 bits, else 16. */
int es_vin_depth_of(enum AVPixelFormat f);

/* One reader. Its fields belong to the reader (video_in_read.c), which opens, reads and
 * closes, unless a comment names another part: that part writes them (the reader may only
 * read them, or reset them at open and close). */
struct es_video_in {
  AVFormatContext *fmt;  /* demuxer */
  AVCodecContext *dec;   /* decoder of the chosen stream */
  AVPacket *pkt;         /* reused for every read */
  AVFrame *frame;        /* reused for every decoded frame */
  es_vin_grey grey;      /* conversion to grey (es_vin_grey_convert) */
  int stream;            /* index of the video stream */
  int width, height, depth; /* the stream's frame size and grey depth (8 or 16), from open */
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
  int64_t damaged;               /* frames handed over that were (hand_over) */
  int cur_damaged, last_damaged; /* set by next_frame / hand_over */
  int64_t flagged;       /* packets the demuxer flagged corrupt, decoded all the same */
  int64_t prekey;        /* packets before the stream's first keyframe that gave no frame */
  int key_seen;          /* a keyframe packet was sent, or a frame came out: prekey is final */
  /* Packets the decoder took but gave no frame for, and no error: es_video_in_dropped. The
   * counts are kept by next_frame; lead_* by lead_skipped (video_in_drops.c). */
  int64_t discards;      /* packets sent flagged AV_PKT_FLAG_DISCARD: no frame, by design */
  int64_t leading;       /* packets sent whose leading picture the decoder skips, by design
                          * (open GOP where decoding starts: lead_skipped) */
  int lead_nal_len;      /* HEVC: bytes of each NAL's length prefix (hvcC), 0: Annex B */
  int lead_start;        /* HEVC: decoding starts anew (the stream's start, or an end of
                          * sequence): the next CRA's RASL pictures are skipped */
  int lead_rasl;         /* HEVC: the RASL pictures that come now are skipped */
  int lead_eos;          /* HEVC: the last packet ended with an end of sequence (or bitstream) */
  int lead_join;         /* HEVC: this packet's IRAP discards the pictures waiting (join_*) */
  /* HEVC: pictures the decoder discards by design at a join (join_frame; video_in_drops.c).
   * join_ring: the last pictures sent of the current sequence; joins: those of the sequences before
   * a join whose frames are not all out yet. */
  int64_t joined;                      /* pictures discarded so (join_settle) */
  es_join_pic join_ring[ES_JOIN_PICS]; /* join_sent */
  int join_n;                          /* pictures in join_ring */
  es_join joins[ES_JOINS];             /* join_sent, settled by join_settle */
  int njoins;                          /* joins in joins */
  int lead_refs;         /* MPEG-1/2: reference pictures (I, P) seen, up to 2 */
  int lead_closed;       /* MPEG-1/2: the last GOP header's closed_gop */
  int count_drops;       /* the codec gives one frame a packet (or field pair): counted */
  int64_t sent_ok;       /* packets the decoder took */
  int64_t received;      /* frames it gave, damaged ones included */
  int64_t recv_errors;   /* receives that failed (a packet's error, counted as corrupt) */
  int64_t interlaced;    /* frames it gave that were interlaced (see field_packets) */
  /* Field pictures (see packet_structure; fields, parser, pctx and field_open are
   * video_in_drops.c's, second_fields and prekey_second next_frame's): H.264 and MPEG-2 make one
   * frame of two field packets. Each packet sent is a frame or a field (its parity), or unknown. */
  int fields;                   /* FIELDS_*: how each packet's structure is known */
  AVCodecParserContext *parser; /* FIELDS_PARSER: H.264's, complete packets, for its
                                 * picture_structure; pctx its own codec context */
  AVCodecContext *pctx;         /* (video_in_drops.c: fields_open, packet_structure) */
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
  /* pfd, pfd_own, poff, drop, stage and line_read: video_in_direct.c (pfd set by pread_setup) */
  int pfd;               /* direct reads from a regular file: its descriptor, else -1 */
  int pfd_own;           /* pfd was opened here (a named file; not standard input) */
  int64_t poff;          /* pfd: file offset of what comes next */
  /* Lending (opts.lend): the pool of Y-plane buffers the decoder writes into (lend_get_buffer),
   * and the buffers it has made (to recognise them); all under lend_lock, which
   * get_buffer2 takes from the decoder's threads. Written by video_in_lend.c; lend, pin and
   * unpin are set at open. */
  int lend;                            /* opts.lend: decoded frames may be lent */
  int (*pin)(void *p, size_t bytes);   /* opts.pin: page-locks a pool buffer, or NULL */
  void (*unpin)(void *p);              /* opts.unpin: undoes pin */
  pthread_mutex_t lend_lock;           /* guards lend_pool .. lend_cap */
  AVBufferPool *lend_pool;             /* made on the first get_buffer2 */
  size_t lend_size;      /* bytes of each pool buffer (0: no pool yet) */
  int lend_failed;       /* the pool could not be made: the decoder's own buffers then */
  struct lend_buf **lend_bufs; /* headers of the buffers the pool made (lend_alloc) */
  int nlend, lend_cap;         /* lend_bufs: used, allocated */
  int flushing;          /* the decoder was sent NULL: draining */
  int finished;          /* drained: only EOF (or the pending error) is left */
  int drain_errors;      /* failed receives while draining */
  int pending;           /* an error to report once every frame before it was given out */
  char pending_msg[160]; /* its message */
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
  void *log_arg;                               /* opts.log's argument */
};

enum {
  FIELDS_NONE,   /* every packet is a frame of its own */
  FIELDS_PARSER, /* H.264: libavcodec's parser */
  FIELDS_MPEG2,  /* MPEG-2: mpeg2_structure */
  FIELDS_SLACK   /* H.264 without a parser: every interlaced frame may have been two packets */
};

/* video_in_read.c */
void es_vin_averr(char *msg, size_t len, const char *what, int err);
int es_vin_plane0_as_stored(enum AVPixelFormat f, int depth);
double es_vin_ts_seconds(int64_t pts, AVRational tb);

/* video_in_log.c */
extern _Thread_local char *es_vin_log_capture; /* see video_in_log.c */
extern _Thread_local size_t es_vin_log_capture_len;
void es_vin_log_hook(void);
void es_vin_log_register(es_video_in *v);
void es_vin_log_unregister(es_video_in *v);
int es_vin_frame_logged_bad(es_video_in *v, const AVFrame *f);
int es_vin_demux_logged_bad(es_video_in *v);

/* video_in_lend.c */
int es_vin_lend_get_buffer(AVCodecContext *c, AVFrame *f, int flags);
int es_vin_lend_frame(es_video_in *v, AVFrame *f, es_video_lent *lent);
int es_vin_stage_lend(es_video_in *v, size_t row, es_video_lent *lent);

/* video_in_drops.c */
void es_vin_fields_open(es_video_in *v, const AVCodecParameters *par);
int es_vin_packet_structure(es_video_in *v, const AVPacket *pkt);
int es_vin_second_field(es_video_in *v, int ps);
int es_vin_frame_before_key(const es_video_in *v, const AVFrame *f);
void es_vin_join_settle(es_video_in *v, int i);
void es_vin_join_sent(es_video_in *v, int64_t seq, int join);
void es_vin_join_frame(es_video_in *v, const AVFrame *f);
int64_t es_vin_count_dropped(const es_video_in *v);
int es_vin_lead_skipped(es_video_in *v, const AVPacket *p);

/* video_in_direct.c */
void es_vin_pread_setup(es_video_in *v, const char *path, int64_t stdin_start);
int es_vin_frame_cut(const es_video_in *v, int err, size_t got, size_t fsize, char *msg,
                     size_t len);
int es_vin_direct_read(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
                       int64_t *pts, double *pts_seconds, char *msg, size_t len);
int es_vin_y4m_packet(es_video_in *v, char *msg, size_t len);

#endif
