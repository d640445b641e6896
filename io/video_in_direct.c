/*
 * video_in_direct.c - raw and y4m frames read by the reader itself rather than the demuxer:
 * straight into the caller's buffer (pread from a regular file on several threads, or
 * avio from a pipe), or as packets for the rawvideo decoder (y4m whose Y plane needs
 * converting); y4m frame lines and concatenated stream headers.
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
#ifdef _OPENMP
#include <omp.h>
#endif

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>

#include "video_in_internal.h"

/* Direct reads from a regular file (a named file, or standard input redirected from one)
 * go through pread at offsets of their own, so that a frame's bytes can be read by several
 * threads at once (in_bytes). Pipes keep libavformat's sequential reads. */
void es_vin_pread_setup(es_video_in *v, const char *path, int64_t stdin_start) {
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
/* Threads reading one frame at most: eight on hosts of 64 cores or more, else four. On 4 x
 * H200 (64 cores) four threads' ~16 GB/s out of the page cache held a K=51 stream of 1080p
 * grey at 7700-8000 fps, four GPUs taking ~9300 (BENCHMARKS Z8). */
#define ES_PREAD_THREADS 8

static int pread_threads(void) {
#ifdef _OPENMP
  return omp_get_num_procs() >= 64 ? ES_PREAD_THREADS : 4;
#else
  return 1;
#endif
}

/* n bytes of the input into dst, or dropped where dst is NULL; returns how many there were
 * (fewer only at the end or on a read error, *err then says which). From a regular file
 * the bytes are read by several threads at once (pread_threads): one thread copying out of
 * the page cache bounded raw and y4m input at ~2600 fps of 1080p (BENCHMARKS Y1). */
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
  const size_t most = (size_t)pread_threads(), chunks = n / ES_PREAD_CHUNK;
  const int nt = chunks >= most ? (int)most : chunks > 1 ? (int)chunks : 1;
  const size_t per = (n + (size_t)nt - 1) / (size_t)nt;
  size_t part[ES_PREAD_THREADS] = {0}, len[ES_PREAD_THREADS] = {0}; /* read / asked */
  int perr[ES_PREAD_THREADS] = {0};
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
int es_vin_frame_cut(const es_video_in *v, int err, size_t got, size_t fsize, char *msg,
                     size_t len) {
  if (err)
    es_vin_averr(msg, len, "read error", err);
  else
    snprintf(msg, len, "frame %" PRId64 " is short (got %zu of %zu bytes)", v->packets, got, fsize);
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
    if (err || l == Y4M_CUT) return es_vin_frame_cut(v, err, 0, fsize, msg, len);
    if (l != Y4M_END) v->corrupt++;
    return ES_ERR_EOF;
  }
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
  if (err || got > 0 || v->y4m_frame_size) return es_vin_frame_cut(v, err, got, fsize, msg, len);
  return ES_ERR_EOF;
}

/* One raw or y4m frame read straight into dst (see raw_direct).
 * Without dst (the caller has no buffer for frames yet, and sizes one only for a frame
 * that exists): from a regular file, ES_ERR_AGAIN once the file holds the whole frame
 * (only its y4m FRAME line read), else its end or short frame as with dst, nothing
 * allocated. From a pipe, the first frame is read into a buffer grown as its bytes arrive
 * (in_bytes_grown) and lent (held until a call with dst where lent is NULL); later frames
 * are ES_ERR_AGAIN at once: a whole frame came, so a buffer for the next is bounded by
 * what came. */
int es_vin_direct_read(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
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
    } else if (!lent || !es_vin_stage_lend(v, row, lent)) {
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
  if (pts_seconds) *pts_seconds = es_vin_ts_seconds(v->next_pts, v->tb);
  v->next_pts += v->step;
  v->delivered++;
  v->packets++;
  return ES_OK;
}

/* One y4m frame read here into v->pkt for the rawvideo decoder (y4m_packets), its time
 * stamp the frame's index as the demuxer gives it. ES_OK or ES_ERR_EOF; a read error or a
 * short last frame is left pending, reported once the frames before it are out. The packet
 * is allocated as its bytes arrive (in_bytes_grown), not at the size the header says. */
int es_vin_y4m_packet(es_video_in *v, char *msg, size_t len) {
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
    rc = es_vin_frame_cut(v, err, got, fsize, why, sizeof v->pending_msg);
  }
  if (rc == ES_ERR_INPUT) v->pending = ES_ERR_INPUT;
  return ES_ERR_EOF;
}
