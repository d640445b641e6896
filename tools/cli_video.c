/*
 * cli_video.c - the video runner: a video file, a FIFO or standard input (y4m, or raw with
 * --raw), read through a pump where a blocked read would not see a signal; a decode thread
 * fills the frames of an es_stream, the main thread pulls them in order and writes the
 * outputs (a video, a .npy, a frame directory, standard output, --stats).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

/* ---- Standard input through a pump. A decoder blocked in read() on a pipe that stays open
 * but silent would never see SIGINT (libavformat retries EINTR). So when stdin is a pipe,
 * tty or socket, a pump thread copies it into a pipe of our own that replaces fd 0; it
 * polls with a timeout, and on a signal closes its end: the decoder sees EOF, the frames in
 * flight are finished and the output is closed properly. Regular files are read directly
 * (a demuxer may need to seek in them). */

/* A read error of the pump (its errno), set before it closes its pipe: the end of input the
 * reader sees after it is that error (pump_status), not the end of the stream. */
static atomic_int g_pump_errno;

/* Standard input ended before its first byte: the pump met its end having moved nothing
 * (stored before it closes its pipe, so before the reader sees that end), or stdin is a
 * regular file with nothing left to read. A y4m reader says only "invalid data" then. */
static atomic_int g_input_empty;

/* rc of a reader of the pump's pipe (ES_OK or ES_ERR_EOF at its end, or an input error, as
 * a header or frame cut short): ES_ERR_INPUT with msg "read error: ..." where the pump's
 * read failed; else rc. */
static int pump_status(int rc, char *msg, size_t len) {
  const int e = atomic_load(&g_pump_errno);
  if (!e || (rc != ES_OK && rc != ES_ERR_EOF && rc != ES_ERR_INPUT)) return rc;
  snprintf(msg, len, "read error: %s", strerror(e));
  return ES_ERR_INPUT;
}
typedef struct stdin_pump {
  int src; /* the real standard input (a dup), owned by the pump thread */
  int dst; /* write end of our pipe, owned by the pump thread */
  int src_is_pipe; /* splice can move the data */
} stdin_pump;

static void *stdin_pump_thread(void *arg) {
  stdin_pump *p = arg;
  size_t cap = 1 << 20;
  char *buf = malloc(cap);
  /* Pipe to pipe, splice moves page references instead of copying twice through buf. */
  int use_splice = p->src_is_pipe;
  int moved = 0; /* a byte went through */
  while (buf && !g_stop && !g_abort) {
    struct pollfd pfd = {p->src, POLLIN, 0};
    ssize_t n, off = 0;
    int r = poll(&pfd, 1, 100);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    if (use_splice) {
      n = splice(p->src, NULL, p->dst, NULL, cap, SPLICE_F_MOVE);
      if (n > 0) {
        moved = 1;
        continue;
      }
      if (n == 0) {
        if (!moved) atomic_store(&g_input_empty, 1);
        break;
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno != EINVAL && errno != ENOSYS) { /* EPIPE: the decoder is gone */
        if (errno != EPIPE) atomic_store(&g_pump_errno, errno);
        break;
      }
      use_splice = 0; /* not supported here: copy */
      continue;
    }
    n = read(p->src, buf, cap);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (n < 0) atomic_store(&g_pump_errno, errno);
      if (n == 0 && !moved) atomic_store(&g_input_empty, 1);
      break;
    }
    moved = 1;
    while (off < n) { /* blocks only while the decoder has a full pipe to read */
      ssize_t w = write(p->dst, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) goto done; /* the decoder is gone */
      off += w;
    }
  }
done:
  free(buf);
  close(p->dst); /* EOF for the decoder */
  close(p->src);
  free(p);
  return NULL;
}

/* Starts a pump thread from src (owned by the pump once started) into a new pipe; returns
 * the pipe's read end, or -1 (nothing started, src still the caller's). */
static int pump_start(int src, int src_is_pipe) {
  int fds[2] = {-1, -1};
  pthread_t th;
  stdin_pump *p = calloc(1, sizeof *p);
  if (!p || pipe(fds) != 0) goto fail;
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups; a failure only costs speed */
  if (src_is_pipe) fcntl(src, F_SETPIPE_SZ, 1 << 20); /* the producer's side too */
  p->src = src;
  p->src_is_pipe = src_is_pipe;
  p->dst = fds[1];
  fcntl(p->dst, F_SETFD, FD_CLOEXEC);
  fcntl(p->src, F_SETFD, FD_CLOEXEC);
  if (pthread_create(&th, NULL, stdin_pump_thread, p) != 0) goto fail;
  pthread_detach(th); /* it may be blocked writing to a decoder that stopped reading */
  return fds[0];
fail:
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  free(p);
  return -1;
}

/* Starts the pump when stdin is not a regular file. ES_OK (also when not needed). */
static int stdin_pump_start(void) {
  struct stat st;
  int have_st = fstat(0, &st) == 0;
  if (have_st && S_ISREG(st.st_mode)) {
    off_t at = lseek(0, 0, SEEK_CUR);
    if (at >= 0 && st.st_size <= at) atomic_store(&g_input_empty, 1);
    return ES_OK;
  }
  int src = dup(0);
  if (src < 0) return ES_OK;
  int rd = pump_start(src, have_st && S_ISFIFO(st.st_mode));
  if (rd < 0) { /* reading the real stdin directly still works, only less interruptibly */
    close(src);
    return ES_OK;
  }
  dup2(rd, 0);
  close(rd);
  return ES_OK;
}

/* A FIFO named as the input goes through a pump as standard input does: a decoder blocked in
 * read() on it never sees the signal flag, so a writer that stayed open and silent held the
 * run after SIGINT until it wrote again. Returns the name the reader opens (the pump's pipe
 * as /dev/fd/N, whose descriptor *keep holds; or path itself where no pump is needed or
 * possible), or NULL when a signal came while the FIFO's open waited for a writer. */
static const char *fifo_pump_start(const char *path, char *alt, size_t len, int *keep) {
  struct stat st;
  *keep = -1;
  if (stat(path, &st) != 0 || !S_ISFIFO(st.st_mode)) return path;
  int src;
  do /* waits for a writer; a signal interrupts it (no SA_RESTART) */
    src = open(path, O_RDONLY | O_CLOEXEC);
  while (src < 0 && errno == EINTR && !g_stop);
  if (src < 0) return g_stop ? NULL : path; /* the reader says why */
  int rd = pump_start(src, 1);
  if (rd < 0) rd = src; /* no pump: read the FIFO directly, as before */
  *keep = rd;
  snprintf(alt, len, "/dev/fd/%d", rd);
  return alt;
}

/* ======================================================================================
 * Video and streams: a decode thread fills frames of an es_stream; the main thread pulls
 * them in order and writes.
 * ==================================================================================== */

/* Where an output of a video run failed: a frame index (>= 0), or one of these.
 * OUT_GIVEN_UP: a write a signal ended (a FIFO with no reader): not written, not failed. */
enum { OUT_LIVE = -1, OUT_FAILED_AT_CLOSE = -2, OUT_GIVEN_UP = -3 };

/* Appends "OPT NAME at frame K" (or "when closed") to the summary's list of the outputs
 * that failed, "; failed: ..."; nothing for an output that did not fail. */
static void failed_note(char *buf, size_t len, const char *opt, const char *name, int64_t at) {
  size_t n = strlen(buf);
  char where[48];
  if (at == OUT_LIVE || at == OUT_GIVEN_UP || n + 1 >= len) return;
  if (at >= 0)
    snprintf(where, sizeof where, "at frame %" PRId64, at);
  else
    snprintf(where, sizeof where, "when closed");
  snprintf(buf + n, len - n, "%s%s %s %s", n ? ", " : "; failed: ", opt, name ? name : "-", where);
}

typedef struct vid_run {
  const cli_opts *o;
  es_stream *st;
  es_video_in *vin;
  es_video_info info;
  /* Written by the decode thread, read by main after joining. */
  int read_status;      /* ES_OK, ES_ERR_INTERRUPTED (signal) or the input error */
  char read_msg[MSG_LEN];
  int64_t pushed;
  /* Frame 0 as cli_run_video read it, lent, before the decode thread starts (which pushes it
   * first and clears first_lent); cli_run_video gives it back where the thread never ran. */
  int first_lent;
  /* Frame 0 was decoded before the outputs were opened (lent, or held by the reader):
   * pushed even after a signal, as every frame already decoded is computed and encoded
   * (SPEC 3). A signal between the outputs' open and this push left a .mkv or .mp4 with no
   * frame, which does not play. Cleared by the decode thread once it has pushed it. */
  int first_had;
  es_video_lent first;
  int64_t first_pts;
  double first_pts_seconds;
  es_shard_range shard; /* --shard: the frames that are this run's (cli_shard_video) */
} vid_run;

static void *decode_thread(void *arg) {
  vid_run *v = arg;
  es_frame *f = NULL;
  int rc = ES_OK;
  /* ES_TRACE: where this thread's time goes (waiting for a free frame, or reading). */
  const int tr = es_trace_enabled();
  double t_wait = 0, t_read = 0, t0 = 0;
  for (;;) {
    int64_t pts = INT64_MIN;
    double ptss = NAN;
    if (g_abort || (g_stop && !v->first_had)) {
      rc = ES_ERR_INTERRUPTED;
      break;
    }
    if (tr) t0 = es_trace_ms();
    rc = es_stream_acquire(v->st, &f);
    if (tr) t_wait += es_trace_ms() - t0;
    if (rc != ES_OK) {
      f = NULL;
      break;
    }
    /* A frame buffer is made for a frame the reader has (ES_ERR_AGAIN: it exists), not
     * for the size a header declared: a slot that never held a frame of ours (f->data
     * NULL) asks without one. Lent frames never need one. */
    es_video_lent lent;
    rc = ES_ERR_AGAIN;
    if (v->first_lent) { /* frame 0, read before the outputs were opened */
      lent = v->first;
      pts = v->first_pts;
      ptss = v->first_pts_seconds;
      v->first_lent = 0;
      rc = ES_OK;
    }
    for (int pass = 0; rc == ES_ERR_AGAIN && pass < 2; pass++) {
      if ((f->data || pass) &&
          (rc = es_stream_reserve(v->st, f, v->info.width, v->info.height, v->info.depth))) {
        snprintf(v->read_msg, sizeof v->read_msg, "out of memory for a %dx%d frame", v->info.width,
                 v->info.height);
        break;
      }
      if (tr) t0 = es_trace_ms();
      rc = es_video_in_read_lend(v->vin, f->data, f->stride, &lent, &pts, &ptss, v->read_msg,
                                 sizeof v->read_msg);
      if (tr) t_read += es_trace_ms() - t0;
    }
    if (rc != ES_OK) break;
    /* --shard: frames before the share (decoded from its keyframe) are dropped; the first
     * one past it ends the read, as the input's end would. */
    const int where = es_shard_frame(&v->shard, pts);
    if (where != 0) {
      if (lent.ref) es_video_in_unlend(lent.ref);
      if (where > 0) {
        rc = ES_ERR_EOF;
        break;
      }
      es_stream_release(v->st, f);
      f = NULL;
      v->first_had = 0;
      continue;
    }
    if (lent.ref) { /* the decoded frame itself, until the stream gives it back */
      f->width = v->info.width;
      f->height = v->info.height;
      f->depth = v->info.depth;
      f->lend = lent.data;
      f->stride = lent.stride;
      f->lend_release = es_video_in_unlend;
      f->lend_arg = lent.ref;
    }
    f->pts = pts;
    f->pts_seconds = ptss;
    f->user = NULL;
    /* Of the read just made (frame 0 too: nothing was read after it) */
    f->damaged = es_video_in_frame_damaged(v->vin);
    if (v->pushed == 0) es_trace("decode: first frame read");
    rc = es_stream_push(v->st, f);
    if (rc != ES_OK) break; /* the frame is still ours (entropy_stream.h) */
    f = NULL;
    v->pushed++;
    v->first_had = 0;
  }
  /* The frame we hold was never pushed (or its push failed): give it back to the pool,
   * with its lent decoder buffer, rather than leave both to es_stream_destroy. */
  if (f) es_stream_release(v->st, f);
  es_trace("decode: %lld frames pushed; %.1f ms waiting for a free frame, %.1f ms reading "
           "(%.1f of them copying planes out of decoded frames)",
           (long long)v->pushed, t_wait, t_read, es_video_in_copy_ms(v->vin));
  if (rc == ES_ERR_EOF) rc = ES_OK;
  rc = pump_status(rc, v->read_msg, sizeof v->read_msg);
  /* After a signal the stdin pump closes its pipe wherever the producer was, so the frame
   * being read comes out short: that is the interruption, not a damaged input. */
  if (rc == ES_ERR_INPUT && g_stop) rc = ES_ERR_INTERRUPTED;
  v->read_status = rc;
  es_stream_finish(v->st);
  return NULL;
}

/* Lent decoder buffers are page-locked (es_host_pin) once the GPUs are open, so frames go
 * to a GPU without a copy; until then, and without GPUs, they stay pageable. */
static _Atomic(es_context *) g_pin_ctx;
static int cli_pin(void *p, size_t bytes) {
  es_context *ctx = atomic_load(&g_pin_ctx);
  if (!ctx || !es_context_gpus_open(ctx) || es_context_gpu_count(ctx) <= 0) return 0;
  return es_host_pin(p, bytes);
}

/* The library context (GPU start-up: a few hundred ms) is created on a thread of its own
 * while the input is opened and probed, which takes about as long. */
typedef struct ctx_open {
  const es_config *cfg; /* in */
  es_context *ctx;      /* out */
  int rc;               /* out */
  char msg[MSG_LEN];    /* out */
  /* The frame size, once the input's header says it: under auto the GPUs start opening
   * when frames they could take are coming (es_context_expect), not at the first frame
   * pushed (after the first read and the outputs' opening). Whichever of the two threads
   * comes second (the context created, the size known) makes the call. */
  pthread_mutex_t lock;
  int created;          /* under lock */
  int64_t pixels;       /* under lock: 0 until known */
} ctx_open;

static void *ctx_open_main(void *arg) {
  ctx_open *c = arg;
  es_trace("context: create");
  c->rc = es_context_create(&c->ctx, c->cfg, c->msg, sizeof c->msg);
  es_trace("context: created");
  pthread_mutex_lock(&c->lock);
  c->created = 1;
  if (c->pixels > 0) es_context_expect(c->ctx, c->pixels);
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static void ctx_expect(ctx_open *c, int64_t pixels) {
  pthread_mutex_lock(&c->lock);
  c->pixels = pixels;
  if (c->created) es_context_expect(c->ctx, pixels);
  pthread_mutex_unlock(&c->lock);
}

/* es_video_in_opts.log: one libav* line, "entropy-stream: FILE: [h264] ...", from whichever
 * thread logged it (cli_err is thread-safe). */
static void cli_libav_line(void *arg, const char *line) { cli_err((const char *)arg, "%s", line); }

/* The input failed before its first frame was had (at the open or the first read): reported,
 * and the exit code. A signal meanwhile made the pump close standard input, so the reader
 * saw an empty or short stream: that is the interruption, not bad input. */
static int input_failed(const cli_opts *o, const char *in_name, int rc, const char *msg) {
  if (g_stop) {
    if (!o->quiet) cli_err(in_name, "interrupted before the first frame");
    return 130;
  }
  cli_err(in_name, "%s", *msg ? msg : es_strerror(rc));
  return es_exit_code(rc);
}

/* -o gave up its open at a first signal (a FIFO still waiting for a reader), said by its own
 * line: the other outputs are kept (README). --stats, opened before it, is committed with the
 * records of the frames computed: none yet. Returns the exit code, 130 (a --stats that cannot
 * be closed is said, as any output failing in an interrupted run). */
static int out_interrupted_at_open(const cli_opts *o, const char *in_name, es_stats_writer **sw) {
  char msg[MSG_LEN] = "";
  if (*sw) {
    int rc = es_stats_writer_close(sw, 1, msg, sizeof msg);
    if (rc != ES_OK) cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
  }
  if (!o->quiet) cli_err(in_name, "interrupted before the first frame");
  return 130;
}

int cli_run_video(cli_opts *o, int out_kind) {
  vid_run v;
  ctx_open co = {.cfg = &o->cfg, .lock = PTHREAD_MUTEX_INITIALIZER};
  pthread_t cth;
  int cth_started = 0;
  es_context *ctx = NULL;
  es_video_out *vo = NULL;
  es_npy_stream *ns = NULL;
  es_stats_writer *sw = NULL;
  es_stream_config sc;
  es_video_in_opts vio = {.raw = NULL};
  pthread_t th;
  int th_started = 0, code = 0, rc;
  /* The outputs fail one by one: a failed one is said once and closed uncommitted at once
   * (its temporary removed), the others go on and are committed at the end; the run stops
   * early only when none is left. A frame or the stream failing is fatal to all of them. */
  int fatal = 0;   /* a frame could not be computed, or the stream failed: nothing committed */
  int stopped = 0; /* the run ended before its input did (fatal, or every output failed) */
  int64_t out_failed = OUT_LIVE, stats_failed = OUT_LIVE; /* where -o, --stats failed */
  int64_t written = 0; /* frames that reached an output (skipped ones, -n, included; with
                        * no output asked for, the frames computed) */
  int64_t skipped = 0; /* frame files that existed, kept by -n */
  int64_t out_frames = 0; /* frames -o took (a frame directory's kept by -n included) */
  size_t made = 0; /* where the frame directory's part that this run creates begins (0: none) */
  char msg[MSG_LEN] = "";
  const char *out_name = o->output;
  const char *in_name = o->input;
  char fifo_path[32];
  int fifo_fd = -1;               /* the pump's read end while the reader opens it (a FIFO input) */
  const char *in_path = o->input; /* what the reader opens */
  int frame_pixfmt = ES_PIX_NONE;
  double t0;

  memset(&v, 0, sizeof v);
  memset(&sc, 0, sizeof sc);
  memset(&vio, 0, sizeof vio);
  v.o = o;

  if (out_kind == OUT_PNG) {
    cli_err(o->output, "a video input needs a video, .npy, directory or - output");
    return 1;
  }
  if (out_kind == OUT_VIDEO && o->format == FMT_F32) {
    cli_err(o->output, "--format f32 needs a .npy, directory or - output");
    return 1;
  }
  if (o->raw && strcmp(o->input, "-")) {
    cli_err(o->input, "--raw applies to standard input (-) only");
    return 1;
  }
  /* Refuse an existing output before any work. */
  if ((out_kind == OUT_VIDEO || out_kind == OUT_NPY) && es_output_exists(o->output)) {
    if (o->skip) {
      if (!o->quiet) cli_err(o->output, "exists, skipped");
      if (!o->stats_path) return 0;
      out_kind = OUT_NONE; /* the statistics are still asked for: computed, nothing else */
    } else if (!o->overwrite) {
      cli_err(o->output, "exists (use -y to overwrite, -n to skip)");
      return 3;
    }
  }
  if (o->stats_path && strcmp(o->stats_path, "-") && cli_same_file(o->input, o->stats_path)) {
    cli_err(o->stats_path, "is the input itself (choose another output)");
    return 1;
  }
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) return 3;
  if (rc == STATS_SKIPPED && out_kind == OUT_NONE) return 0;
  if ((rc = cli_shard_video(o, &v.shard, &vio)) >= 0) return rc;

  cth_started = pthread_create(&cth, NULL, ctx_open_main, &co) == 0;
  if (!strcmp(o->input, "-"))
    stdin_pump_start();
  else if (!(in_path = fifo_pump_start(o->input, fifo_path, sizeof fifo_path, &fifo_fd))) {
    code = input_failed(o, in_name, ES_ERR_INTERRUPTED, ""); /* a signal (g_stop) came */
    goto end;
  }
  vio.raw = o->raw;
  vio.max_pixels = o->max_pixels;
  vio.threads = 0;
  vio.lend = 1; /* decoded frames lent to the stream, not copied (BENCHMARKS S10) */
  vio.pin = cli_pin;
  vio.unpin = es_host_unpin;
  /* libav*'s error lines (a damaged stream logs dozens): shown with -v, on our line form;
   * otherwise counted in the summary */
  if (o->verbose && !o->quiet) {
    vio.log = cli_libav_line;
    vio.log_arg = (void *)in_name;
  }
  rc = es_video_in_open(&v.vin, in_path, &vio, &v.info, msg, sizeof msg);
  if (fifo_fd >= 0) close(fifo_fd); /* the reader opened the pipe itself */
  fifo_fd = -1;
  if (rc != ES_OK) {
    rc = pump_status(rc, msg, sizeof msg);
    /* Nothing came: say so, not the y4m reader's "invalid data". A raw stream of no frames
     * is a stream of 0 frames (it opens without reading). */
    if (rc != ES_ERR_INTERRUPTED && !strcmp(o->input, "-") && atomic_load(&g_input_empty)) {
      rc = ES_ERR_INPUT;
      snprintf(msg, sizeof msg, "no data on standard input");
    }
    code = input_failed(o, in_name, rc, msg);
    goto end;
  }
  es_trace("video: input open");
  if (o->shard_set) v.info.frames = v.shard.frames; /* the progress line's count */
  ctx_expect(&co, (int64_t)v.info.width * v.info.height);
  if (o->verbose && !o->quiet) {
    char len_s[48] = "length unknown"; /* raw H.264, pipes: the container does not say */
    if (v.info.frames > 0)
      snprintf(len_s, sizeof len_s, "%" PRId64 " frame%s (estimate)", v.info.frames,
               v.info.frames == 1 ? "" : "s");
    cli_err(in_name, "%dx%d, %d-bit, %d/%d fps, %s", v.info.width, v.info.height, v.info.depth,
            v.info.fps_num, v.info.fps_den, len_s);
  }
  rc = es_params_check(&o->cfg.params, v.info.depth, msg, sizeof msg);
  if (rc != ES_OK) {
    cli_err(in_name, "%s", msg);
    code = 1;
    goto end;
  }
  /* Frame 0 before anything is sized for the frames (an encoder allocates for the header's
   * size when it opens, the stream's buffers are the frame's size): a header alone declares
   * sizes, and a 49-byte y4m of 16000x16000 frames must not cost gigabytes. The reader
   * lends it, or holds it (ES_ERR_AGAIN) for the decode thread; a first frame that is
   * short or unreadable is the input's error, as a header the reader refused is. */
  rc = es_video_in_read_lend(v.vin, NULL, 0, &v.first, &v.first_pts, &v.first_pts_seconds, msg,
                             sizeof msg);
  if (rc != ES_OK && rc != ES_ERR_AGAIN) rc = pump_status(rc, msg, sizeof msg);
  if (rc == ES_OK) {
    v.first_lent = 1;
  } else if (rc != ES_ERR_AGAIN && rc != ES_ERR_EOF) {
    code = input_failed(o, in_name, rc, msg);
    goto end;
  }
  v.first_had = rc != ES_ERR_EOF;
  es_trace("video: first frame read");
  /* A run that ends before its first frame opens no output: an empty .mkv or .mp4 does not
   * play, and a .npy of shape (0, H, W) or a y4m header under the final name of a failed
   * run claims what it is not (SPEC 3). So a signal until now (the pump then closed standard
   * input: the reader saw its end), an empty standard input (raw frames open without
   * reading; y4m said so at the open), and a stream of which no packet decoded (an MJPEG
   * .avi whose header says 16000x16000; an .mp4 piped in, its index at the end) are said
   * here, before anything is created. A y4m header alone is a valid empty stream: its
   * empty outputs are still written, exit 0. */
  if (g_stop) {
    code = input_failed(o, in_name, ES_ERR_INTERRUPTED, "");
    goto end;
  }
  if (rc == ES_ERR_EOF && !strcmp(o->input, "-") && atomic_load(&g_input_empty)) {
    code = input_failed(o, in_name, ES_ERR_INPUT, "no data on standard input");
    goto end;
  }
  if (rc == ES_ERR_EOF && es_video_in_corrupt(v.vin) > 0) {
    int64_t nc = es_video_in_corrupt(v.vin);
    snprintf(msg, sizeof msg, "no frame could be decoded (%" PRId64 " corrupt packet%s skipped)",
             nc, nc == 1 ? "" : "s");
    code = input_failed(o, in_name, ES_ERR_INPUT, msg);
    goto end;
  }
  if (o->mask && (o->mask_w != v.info.width || o->mask_h != v.info.height)) {
    snprintf(msg, sizeof msg, "%dx%d, the mask %s %dx%d: not the same size", v.info.width,
             v.info.height, o->mask_path, o->mask_w, o->mask_h);
    code = input_failed(o, in_name, ES_ERR_INPUT, msg);
    goto end;
  }

  /* Outputs. The statistics file first, so that one that cannot be written leaves no
   * frame directory behind (as in cli_run_images); where it lies inside that directory, with
   * it (cli_stats_open_inside). */
  if (o->stats_path && !(out_kind == OUT_DIR && cli_path_inside(o->output, o->stats_path))) {
    rc = cli_stats_open(o, &sw);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
  }
  if (out_kind == OUT_VIDEO || out_kind == OUT_STDOUT) {
    es_video_out_opts vopt;
    memset(&vopt, 0, sizeof vopt);
    vopt.width = v.info.width;
    vopt.height = v.info.height;
    vopt.fps_num = v.info.fps_num;
    vopt.fps_den = v.info.fps_den;
    vopt.tb_num = v.info.tb_num;
    vopt.tb_den = v.info.tb_den;
    vopt.base_num = v.info.base_num;
    vopt.base_den = v.info.base_den;
    vopt.format = cli_png_pixfmt(o->format);
    vopt.f32 = o->format == FMT_F32;
    vopt.codec = o->codec;
    vopt.crf = o->crf;
    vopt.preset = o->preset;
    vopt.pix_fmt = o->pix_fmt;
    vopt.overwrite = o->overwrite;
    vopt.display_matrix = v.info.has_display_matrix ? v.info.display_matrix : NULL;
    vopt.sar_num = v.info.sar_num;
    vopt.sar_den = v.info.sar_den;
    vopt.field_order = v.info.field_order;
    vopt.ts_discont = v.info.ts_discont;
    rc = es_video_out_open(&vo, o->output, &vopt, msg, sizeof msg);
    if (rc != ES_OK) {
      cli_err(out_name, "%s", *msg ? msg : es_strerror(rc));
      code = rc == ES_ERR_INTERRUPTED ? out_interrupted_at_open(o, in_name, &sw) : es_exit_code(rc);
      goto end;
    }
    sc.render.format = es_video_out_pixfmt(vo);
    sc.want_map = sc.render.format == ES_PIX_NONE;
  } else if (out_kind == OUT_NPY) {
    rc = es_npy_stream_open(&ns, o->output, o->overwrite, v.info.width, v.info.height, msg,
                            sizeof msg);
    if (rc != ES_OK) {
      cli_err(out_name, "%s", *msg ? msg : es_strerror(rc));
      code = rc == ES_ERR_INTERRUPTED ? out_interrupted_at_open(o, in_name, &sw) : es_exit_code(rc);
      goto end;
    }
    sc.want_map = 1;
  } else if (out_kind == OUT_DIR) {
    made = cli_first_missing(o->output);
    if (o->stats_path && cli_path_inside(o->output, o->stats_path))
      rc = cli_stats_open_inside(o, o->output, &sw);
    else
      rc = cli_make_out_dir(o->output);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
    if (o->format == FMT_F32)
      sc.want_map = 1;
    else
      sc.render.format = frame_pixfmt = cli_png_pixfmt(o->format);
  }
  if (sc.render.format != ES_PIX_NONE) {
    int fmt = sc.render.format;
    sc.render = o->render;
    sc.render.format = fmt;
  }
  sc.want_stats = sw != NULL || o->stats_line;
  cli_mask_to(o, &sc);
  /* max_width 0: each frame buffer is made when a frame for it has come (decode_thread),
   * at most --queue of them, rather than --queue of the header's size up front. */
  es_trace("video: outputs open, joining the context thread");

  if (cth_started) {
    pthread_join(cth, NULL);
    cth_started = 0;
  } else {
    ctx_open_main(&co);
  }
  ctx = co.ctx;
  co.ctx = NULL;
  rc = co.rc;
  if (rc != ES_OK) {
    cli_err(NULL, "%s", *co.msg ? co.msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  if (o->verbose && !o->quiet) {
    char d[64];
    cli_err(NULL, "computing on %s", cli_device_desc(ctx, d, sizeof d));
  }
  es_trace("video: context ready");
  atomic_store(&g_pin_ctx, ctx);
  rc = es_stream_open(ctx, &sc, &v.st);
  if (rc != ES_OK) {
    const char *m = es_context_error(ctx);
    cli_err(NULL, "%s", m && *m ? m : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  es_trace("video: stream open");

  t0 = cli_now_s();
  if (pthread_create(&th, NULL, decode_thread, &v) != 0) {
    cli_err(NULL, "cannot start the decode thread");
    code = 4;
    goto end;
  }
  th_started = 1;
  cli_main_writes(1); /* after the decode thread is made: it inherits the mask */

  {
    int show = !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2)));
    /* Outputs asked for; with none (no -o, no --stats) each frame's statistics line. */
    const int asked = vo || ns || out_kind == OUT_DIR || sw;
    /* --stats - on a terminal: each record goes where the progress line is. */
    const int stats_tty = show && sw && !strcmp(o->stats_path, "-") && isatty(1);
    double last = 0;
    for (;;) {
      es_frame *f = NULL;
      int took = 0; /* an output took this frame */
      rc = es_stream_pull(v.st, &f);
      if (rc == ES_ERR_EOF) break;
      if (rc != ES_OK) {
        if (!g_stop) {
          const char *m = es_context_error(ctx);
          cli_err(NULL, "%s", m && *m ? m : es_strerror(rc));
          code = cli_worse(code, es_exit_code(rc));
          fatal = 1;
        }
        stopped = 1;
        g_abort = 1;
        break;
      }
      if (f->status != ES_OK) {
        /* A frame no device could compute (SPEC 3: exit 4) is missing from every output
         * alike: not one output failing. The run ends and nothing is committed. */
        const char *m = es_context_error(ctx);
        char what[64];
        snprintf(what, sizeof what, "frame %" PRId64, f->index);
        cli_err(what, "%s", m && *m ? m : es_strerror(f->status));
        code = cli_worse(code, es_exit_code(f->status));
        fatal = stopped = 1;
        es_stream_release(v.st, f);
        g_abort = 1;
        es_stream_abort(v.st);
        break;
      }
      if (vo || ns || (out_kind == OUT_DIR && out_failed == OUT_LIVE)) {
        const char *what = out_name; /* names the output that failed */
        char *path = NULL;
        msg[0] = 0;
        if (vo) {
          rc = es_video_out_write(vo, &f->pix, f->map, f->map_stride, f->pts, msg, sizeof msg);
        } else if (ns) {
          rc = es_npy_stream_write(ns, f->map, f->map_stride, msg, sizeof msg);
        } else {
          char name[64];
          snprintf(name, sizeof name, "frame_%06" PRId64 ".%s", f->index + v.shard.first,
                   o->format == FMT_F32 ? "npy" : "png");
          path = cli_join(o->output, name);
          what = path ? path : out_name;
          if (!path) {
            rc = ES_ERR_NOMEM;
          } else if (cli_same_file(o->input, path)) {
            snprintf(msg, sizeof msg, "is the input itself (choose another output)");
            rc = ES_ERR_USAGE;
          } else if (o->skip && es_output_exists(path)) {
            skipped++;
            rc = ES_OK;
          } else if (!o->overwrite && es_output_exists(path)) {
            snprintf(msg, sizeof msg, "exists (use -y to overwrite, -n to skip)");
            rc = ES_ERR_OUTPUT;
          } else {
            /* -n: a frame file another run renamed into place meanwhile is kept, skipped */
            const int ow = o->skip ? ES_WRITE_KEEP : o->overwrite;
            if (o->format == FMT_F32)
              rc = es_npy_write(path, ow, f->width, f->height, f->map, f->map_stride, msg,
                                sizeof msg);
            else
              rc = es_png_write(path, ow, f->width, f->height, frame_pixfmt, f->pix.plane[0],
                                f->pix.stride[0], msg, sizeof msg);
            if (rc == ES_WRITE_KEPT) {
              skipped++;
              rc = ES_OK;
            }
          }
        }
        if (rc == ES_OK) {
          took = 1;
          out_frames++;
        } else {
          /* Its partial file goes now; a directory keeps the frames written before. */
          cli_err(what ? what : "-", "%s", *msg ? msg : es_strerror(rc));
          code = cli_worse(code, es_exit_code(rc));
          out_failed = rc == ES_ERR_INTERRUPTED ? OUT_GIVEN_UP : f->index;
          es_video_out_close(&vo, 0, NULL, 0);
          es_npy_stream_close(&ns, 0, NULL, 0);
        }
        free(path);
      }
      if (sw) {
        msg[0] = 0;
        if (stats_tty) {
          cli_clear_progress();
          last = 0; /* drawn again below the record */
        }
        /* Named by the input ("-": standard input), so that joined files tell videos apart */
        rc = es_stats_writer_add_frame(sw, in_name, f->index + v.shard.first, f->pts_seconds,
                                       f->width, f->height, f->damaged, &f->stats, msg,
                                       sizeof msg);
        if (rc == ES_OK) {
          took = 1;
        } else {
          cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
          code = cli_worse(code, es_exit_code(rc));
          stats_failed = rc == ES_ERR_INTERRUPTED ? OUT_GIVEN_UP : f->index;
          es_stats_writer_close(&sw, 0, NULL, 0);
        }
      }
      if (o->stats_line) { /* neither -o nor --stats: what the frame holds, on stdout */
        if (show) {
          cli_clear_progress();
          last = 0;
        }
        cli_stats_line(in_name, f->index + v.shard.first, f->pts_seconds, f->width, f->height,
                       &f->stats, o->cfg.params.base);
      }
      es_stream_release(v.st, f);
      if (took || !asked) {
        if (written == 0) es_trace("video: first frame written");
        written++;
      }
      if (asked && !vo && !ns && !sw && (out_kind != OUT_DIR || out_failed != OUT_LIVE)) {
        /* Every output asked for has failed: nothing left to write. */
        stopped = 1;
        g_abort = 1;
        es_stream_abort(v.st);
        break;
      }
      if (show) {
        double t = cli_now_s();
        if (t - last > 0.2) {
          double el = t - t0, fps = el > 0 ? written / el : 0;
          char eta[32];
          last = t;
          /* None left is 0:00, whatever the rate ("7/7 frames, ETA ?" said nothing true). */
          cli_fmt_eta(eta, sizeof eta,
                      v.info.frames == written            ? 0
                      : v.info.frames > written && fps > 0 ? (v.info.frames - written) / fps
                                                       : -1);
          /* The count is the container's estimate (a duration times the frame rate): past
           * it, it was wrong, and "205/125 frames, ETA ?" says nothing true. */
          if (v.info.frames > 0 && v.info.frames >= written)
            cli_progress_line("%" PRId64 "/%" PRId64 " frame%s, %.1f fps, ETA %s", written,
                              v.info.frames, v.info.frames == 1 ? "" : "s", fps, eta);
          else
            cli_progress_line("%" PRId64 " frame%s, %.1f fps", written, written == 1 ? "" : "s",
                              fps);
        }
      }
    }
  }
  es_trace("video: last frame written (%" PRId64 ")", written);
  pthread_join(th, NULL);
  th_started = 0;

  /* What the reader ended with: a short last frame or a corrupt stream keeps the frames
   * before it; a signal finishes properly. A run stopped early cut the reading itself. */
  if (v.read_status != ES_OK && !stopped) {
    if (v.read_status == ES_ERR_INTERRUPTED) {
      code = cli_worse(code, 130);
    } else {
      cli_err(in_name, "%s", *v.read_msg ? v.read_msg : es_strerror(v.read_status));
      code = cli_worse(code, es_exit_code(v.read_status));
    }
  }
  /* Corrupt packets are skipped and the rest kept (SPEC 3); where nothing was left, the
   * input is as good as unreadable: an input error, the empty outputs kept as a short
   * first frame leaves them. */
  if (v.read_status == ES_OK && !stopped && !g_stop && v.pushed == 0 &&
      es_video_in_corrupt(v.vin) > 0) {
    int64_t nc = es_video_in_corrupt(v.vin);
    cli_err(in_name, "no frame could be decoded (%" PRId64 " corrupt packet%s skipped)", nc,
            nc == 1 ? "" : "s");
    code = cli_worse(code, 2);
  }
  if (g_stop) code = 130;
  if (o->stats_line && (fflush(stdout) != 0 || ferror(stdout))) {
    cli_err("-", "write error: %s", strerror(errno ? errno : EIO));
    code = cli_worse(code, 3);
  }

  /* Close the outputs still open (a failed one was closed when it failed): committed
   * unless a frame or the stream failed. A failed or interrupted run whose -o took no frame
   * leaves nothing under its name (no unplayable video, no empty .npy; the frame directory
   * goes where this run made it); --stats keeps its header, as the records of the frames
   * computed are kept. */
  {
    int commit = !fatal;
    /* The heat video's last frame lasts as the input's does, where the input was read to
     * its end. */
    if (vo && v.read_status == ES_OK && !stopped && !g_stop)
      /* (--shard: a share's last frame lasts until the next share's first, so that the
       * shares' videos joined have the whole video's time stamps) */
      es_video_out_end(vo, v.shard.end_ts != INT64_MAX ? v.shard.end_ts
                                                       : es_video_in_end_pts(v.vin));
    const int commit_out = commit && !(code != 0 && out_frames == 0);
    if (vo) {
      rc = es_video_out_close(&vo, commit_out, msg, sizeof msg);
      if (rc != ES_OK && commit_out) {
        cli_err(out_name, "%s", *msg ? msg : es_strerror(rc));
        code = cli_worse(code, es_exit_code(rc));
        out_failed = OUT_FAILED_AT_CLOSE;
      }
    }
    if (ns) {
      rc = es_npy_stream_close(&ns, commit_out, msg, sizeof msg);
      if (rc != ES_OK && commit_out) {
        cli_err(out_name, "%s", *msg ? msg : es_strerror(rc));
        code = cli_worse(code, es_exit_code(rc));
        out_failed = OUT_FAILED_AT_CLOSE;
      }
    }
    if (sw) {
      /* The records of the frames written are kept, as the maps are. */
      rc = es_stats_writer_close(&sw, commit, msg, sizeof msg);
      if (rc != ES_OK && commit) {
        cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
        code = cli_worse(code, es_exit_code(rc));
        stats_failed = OUT_FAILED_AT_CLOSE;
      }
    }
  }
  es_trace("video: outputs closed");
  {
    double el = cli_now_s() - t0;
    int64_t corrupt = es_video_in_corrupt(v.vin), flagged = es_video_in_flagged(v.vin),
            prekey = es_video_in_prekey(v.vin), dropped = es_video_in_dropped(v.vin),
            damaged = es_video_in_damaged(v.vin), logged = es_video_in_log_lines(v.vin);
    char d[64], extra[320] = "", skips[64] = "", failed[640] = "";
    failed_note(failed, sizeof failed, "-o", out_name, out_failed);
    failed_note(failed, sizeof failed, "--stats", o->stats_path, stats_failed);
    if (skipped > 0) /* not claimed as written */
      snprintf(skips, sizeof skips, " (%" PRId64 " skipped: exist)", skipped);
    /* Kept, concealed as ffmpeg and players show them; among the frames (--stats: damaged) */
    if (damaged > 0)
      snprintf(extra, sizeof extra, ", %" PRId64 " frame%s decoded with errors", damaged,
               damaged == 1 ? "" : "s");
    if (corrupt > 0) /* refused by the decoder (or the demuxer): no frame */
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               ", %" PRId64 " corrupt packet%s skipped", corrupt, corrupt == 1 ? "" : "s");
    if (flagged > 0) /* decoded as ffmpeg does; damage found in them is counted above */
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               ", %" PRId64 " packet%s flagged corrupt by the demuxer (decoded)", flagged,
               flagged == 1 ? "" : "s");
    if (prekey > 0)
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               ", %" PRId64 " packet%s before the first keyframe dropped", prekey,
               prekey == 1 ? "" : "s");
    if (dropped > 0) /* no error, no flag: the decoder gave no frame (H.264 out of order) */
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               ", %" PRId64 " packet%s dropped by the decoder", dropped,
               dropped == 1 ? "" : "s");
    if (logged > 0) /* libav*'s own error lines, printed only with -v */
      snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
               ", %" PRId64 " FFmpeg error message%s%s", logged, logged == 1 ? "" : "s",
               o->verbose && !o->quiet ? "" : " (-v shows them)");
    cli_clear_progress();
    if (!o->quiet || damaged > 0 || corrupt > 0 || flagged > 0 || dropped > 0)
      cli_err(NULL, "%" PRId64 " frame%s%s, %dx%d, %.2f s, %.1f fps, %s%s%s%s", written,
              written == 1 ? "" : "s", skips, v.info.width, v.info.height, el,
              el > 0 ? written / el : 0.0, cli_device_desc(ctx, d, sizeof d), extra,
              code == 130 ? ", interrupted" : "", failed);
  }

end:
  cli_main_writes(0);
  if (fifo_fd >= 0) close(fifo_fd);
  if (cth_started) pthread_join(cth, NULL);
  if (th_started) {
    es_stream_abort(v.st);
    pthread_join(th, NULL);
  }
  if (vo) es_video_out_close(&vo, 0, NULL, 0);
  if (ns) es_npy_stream_close(&ns, 0, NULL, 0);
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  /* A frame directory this run made, of a run that failed before its first frame: gone
   * (only the directories left empty). */
  if (made && code != 0 && out_frames == 0) cli_remove_made_dirs(o->output, made);
  cli_exit_if_gpus_opening(ctx ? ctx : co.ctx, code);
  es_context_destroy(&co.ctx);
  es_stream_destroy(&v.st);   /* gives lent frames back to the reader */
  if (v.first_lent) es_video_in_unlend(v.first.ref); /* frame 0, never pushed */
  es_video_in_close(&v.vin);  /* frees (and unpins) its buffers, while the context lives */
  atomic_store(&g_pin_ctx, NULL);
  es_context_destroy(&ctx);
  es_trace("video: all freed");
  return code;
}
