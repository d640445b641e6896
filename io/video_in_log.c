/*
 * video_in_log.c - the process-wide capture of errors libav* only logs: an av_log callback
 * that attributes each error line to the reader (decoder or demuxer) it came from, and the
 * first error line of an open in progress (es_vin_log_capture).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>

#include "video_in_internal.h"

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
static int log_hooked;           /* log_cb is installed (set once, under log_once) */
static es_video_in *log_readers; /* registry: readers with logged != 0 */

/* While this thread opens an input: where the first error line libav* logs goes (its
 * returned code alone can mislead: the y4m demuxer returns EBUSY, "Device or resource busy",
 * for a header whose frame size libavutil refuses, having logged "Picture size ... is
 * invalid"; a cut MP4 is "Invalid data" where the log says "moov atom not found"). */
_Thread_local char *es_vin_log_capture;
_Thread_local size_t es_vin_log_capture_len;

static void log_cb(void *avcl, int level, const char *fmt, va_list vl) {
  if (level <= AV_LOG_ERROR && es_vin_log_capture && !es_vin_log_capture[0]) {
    va_list cp;
    va_copy(cp, vl);
    vsnprintf(es_vin_log_capture, es_vin_log_capture_len, fmt, cp);
    va_end(cp);
    size_t n = strlen(es_vin_log_capture);
    while (n > 0 && (es_vin_log_capture[n - 1] == '\n' || es_vin_log_capture[n - 1] == ' ' ||
                     es_vin_log_capture[n - 1] == '.'))
      es_vin_log_capture[--n] = 0;
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

/* Installs log_cb (once per process, where libav*'s log level allows): before an open, so
 * that es_vin_log_capture sees what the demuxer logs. */
void es_vin_log_hook(void) { pthread_once(&log_once, log_install); }

void es_vin_log_register(es_video_in *v) {
  pthread_once(&log_once, log_install);
  if (!log_hooked) return;
  pthread_mutex_lock(&log_lock);
  v->log_next = log_readers;
  log_readers = v;
  v->logged = 1;
  pthread_mutex_unlock(&log_lock);
}

void es_vin_log_unregister(es_video_in *v) {
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
int es_vin_frame_logged_bad(es_video_in *v, const AVFrame *f) {
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
int es_vin_demux_logged_bad(es_video_in *v) {
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

int64_t es_video_in_log_lines(const es_video_in *v) {
  int64_t n = 0;
  if (!v) return 0;
  pthread_mutex_lock(&log_lock); /* the decoder's threads may still be logging */
  n = v->log_lines;
  pthread_mutex_unlock(&log_lock);
  return n;
}
