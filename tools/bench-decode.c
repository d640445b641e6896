/*
 * bench-decode.c - the library's video decode path against plain libav and ffmpeg, in CPU
 * time (a tool, never a timed test; BENCHMARKS Z4, issue 31).
 *
 * Every mode decodes the whole clip once in a child process of its own and computes nothing;
 * the parent takes the child's user+sys CPU seconds from wait4 (the decoder's threads
 * included) and its wall time. The rounds are interleaved (one pass of every mode a round,
 * the first round a warm-up not counted) and the MEDIAN of each mode is printed, per frame.
 * CPU time is the measure on a loaded machine: wall time there is mostly other processes.
 *
 * Modes (all with the same decoder thread count, --threads):
 *   ffmpeg  `ffmpeg -v error -threads T -i CLIP -f null -`
 *   plain   a plain libav loop with the decoder options es_video_in sets (thread_count T,
 *           frame and slice threads, AV_EF_CRCCHECK): av_read_frame, avcodec_send_packet,
 *           avcodec_receive_frame, nothing else
 *   lend    es_video_in_read_lend: the library's reader, each frame lent and given back at
 *           once (its lending pool, drop accounting, bitstream parser, log capture)
 *   hold    the same, each lent frame held until --queue frames later, as a run's queue holds
 *           them (the pool then grows by the queue)
 *   copy    es_video_in_read: the Y plane copied into one buffer of ours (the path without
 *           lending)
 *   source  the run's source (es_source_video) read on a thread of its own and handed to a
 *           consumer thread through a bounded queue of --queue frames (one mutex, two
 *           condition variables, as es_stream), which gives each frame back: the run's
 *           hand-off without the compute
 *   cli     (with --cli) the whole run: `ENTROPY_STREAM CLIP -q -y --stats FILE ARGS`, the
 *           entropy computed (on the GPUs where there are, else on the cores)
 * --pin: the lending modes page-lock each pool buffer with es_host_pin (cudaHostRegister in a
 * CUDA build, CUDA started before the loop), as a run does once its GPUs are open;
 * --pin-fails: a pin hook that refuses every buffer, as es_run_pin does where cudaHostRegister
 * fails. The children report how often the hook was asked and the time spent in it, and their
 * own CPU seconds from open to close ("loop cpu s": without process start, CUDA's included).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_stage.h"
#include "es_types.h"

#define MAX_MODES 8
#define MAX_REPS 64
static const char *const k_modes[] = {"ffmpeg", "plain", "lend", "hold", "copy", "source", "cli"};
#define N_KNOWN (int)(sizeof k_modes / sizeof k_modes[0])

typedef struct opts {
  int threads;                /* decoder threads, 0: FFmpeg's choice (the cores + 1) */
  int queue;                  /* frames a run holds (hold, source) */
  int pin;                    /* the lending modes' pin hook: 0 none, PIN_FAILS, PIN_REAL */
  const char *cli, *cli_args; /* mode cli: the entropy-stream binary, its extra arguments */
  const char *clip;
} opts;

/* ---- children: one pass of one mode, "frames N pins P pin_ms M loop_cpu S" on stdout ---- */

enum { PIN_FAILS = 1, PIN_REAL = 2 };
static int g_pin_mode;
static atomic_int g_pins; /* pin asks */
static double g_pin_ms;   /* time in them (the reading thread's only: no lock) */
static double now_s(void);
static int pin_hook(void *p, size_t bytes) {
  atomic_fetch_add(&g_pins, 1);
  if (g_pin_mode == PIN_FAILS) return -1; /* es_run_pin's answer where cudaHostRegister fails */
  const double t0 = now_s();
  const int ok = es_host_pin(p, bytes);
  g_pin_ms += 1e3 * (now_s() - t0);
  return ok ? 1 : -1; /* as es_run_pin answers */
}
static void unpin_hook(void *p) {
  if (g_pin_mode == PIN_REAL) es_host_unpin(p);
}

static int64_t run_plain(const opts *o) {
  AVFormatContext *fmt = NULL;
  AVCodecContext *dec = NULL;
  AVPacket *pkt = av_packet_alloc();
  AVFrame *frame = av_frame_alloc();
  const AVCodec *codec = NULL;
  int64_t n = -1;
  av_log_set_level(AV_LOG_QUIET);
  if (!pkt || !frame || avformat_open_input(&fmt, o->clip, NULL, NULL) < 0 ||
      avformat_find_stream_info(fmt, NULL) < 0)
    goto end;
  int si = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (si < 0 || !(dec = avcodec_alloc_context3(codec)) ||
      avcodec_parameters_to_context(dec, fmt->streams[si]->codecpar) < 0)
    goto end;
  for (unsigned i = 0; i < fmt->nb_streams; i++)
    if ((int)i != si) fmt->streams[i]->discard = AVDISCARD_ALL;
  /* es_video_in_open's decoder options */
  dec->pkt_timebase = fmt->streams[si]->time_base;
  dec->thread_count = o->threads;
  dec->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  dec->err_recognition |= AV_EF_CRCCHECK;
  if (avcodec_open2(dec, codec, NULL) < 0) goto end;
  n = 0;
  int eof = 0;
  for (;;) {
    int err = avcodec_receive_frame(dec, frame);
    if (err >= 0) {
      n++;
      av_frame_unref(frame);
      continue;
    }
    if (err == AVERROR_EOF) break;
    if (err != AVERROR(EAGAIN)) continue; /* a frame it could not make */
    if (eof) break;
    err = av_read_frame(fmt, pkt);
    if (err < 0) {
      eof = 1;
      avcodec_send_packet(dec, NULL);
      continue;
    }
    if (pkt->stream_index == si) avcodec_send_packet(dec, pkt);
    av_packet_unref(pkt);
  }
end:
  av_frame_free(&frame);
  av_packet_free(&pkt);
  avcodec_free_context(&dec);
  avformat_close_input(&fmt);
  return n;
}

/* lend, hold, copy: the reader on this thread. */
static int64_t run_reader(const opts *o, const char *mode) {
  const int lend = strcmp(mode, "copy") != 0, hold = !strcmp(mode, "hold") ? o->queue : 0;
  es_video_in_opts vio = {.threads = o->threads,
                          .lend = lend,
                          .pin = lend && o->pin ? pin_hook : NULL,
                          .unpin = unpin_hook};
  es_video_in *v = NULL;
  es_video_info info;
  char msg[256];
  uint8_t *buf = NULL;
  void **ring = hold ? calloc((size_t)hold, sizeof *ring) : NULL;
  int64_t n = -1;
  if ((hold && !ring) || es_video_in_open(&v, o->clip, &vio, &info, msg, sizeof msg) != ES_OK)
    goto end;
  const size_t stride = (size_t)info.width * (info.depth == 16 ? 2 : 1);
  /* copy: one buffer for every frame; lend: a buffer only for a frame that cannot be lent
   * (ES_ERR_AGAIN), as the run's reading thread asks */
  if (!lend && !(buf = malloc(stride * (size_t)info.height))) goto end;
  n = 0;
  for (;;) {
    es_video_lent l = {NULL, 0, NULL};
    int64_t pts;
    int rc = lend ? es_video_in_read_lend(v, buf, stride, &l, &pts, NULL, msg, sizeof msg)
                  : es_video_in_read(v, buf, stride, &pts, NULL, msg, sizeof msg);
    if (rc == ES_ERR_AGAIN) {
      if (!buf && !(buf = malloc(stride * (size_t)info.height))) break;
      rc = es_video_in_read_lend(v, buf, stride, &l, &pts, NULL, msg, sizeof msg);
    }
    if (rc != ES_OK) break;
    n++;
    if (!l.ref) continue;
    if (!hold) {
      es_video_in_unlend(l.ref);
      continue;
    }
    void **slot = &ring[n % hold];
    if (*slot) es_video_in_unlend(*slot);
    *slot = l.ref;
  }
end:
  for (int i = 0; ring && i < hold; i++)
    if (ring[i]) es_video_in_unlend(ring[i]);
  free(ring);
  es_video_in_close(&v);
  free(buf);
  return n;
}

/* source: the run's reading thread and a consumer, through a bounded queue. */
typedef struct handoff {
  pthread_mutex_t lock;
  pthread_cond_t not_full, not_empty;
  void **q;                   /* the frames' lent references: a ring of cap */
  int cap, head, count, done; /* done: the reading thread has ended */
  es_source src;
} handoff;

static void *read_main(void *arg) {
  handoff *h = arg;
  char msg[256];
  for (;;) {
    es_source_frame fr;
    memset(&fr, 0, sizeof fr);
    /* no buffer: every frame of this clip is lent (the run would reserve one otherwise) */
    int rc = h->src.read(&h->src, NULL, 0, &fr, msg, sizeof msg);
    if (rc == ES_ERR_AGAIN) {
      fprintf(stderr, "bench-decode: a frame was not lent\n");
      break;
    }
    if (rc != ES_OK) break;
    pthread_mutex_lock(&h->lock);
    while (h->count == h->cap)
      pthread_cond_wait(&h->not_full, &h->lock);
    h->q[(h->head + h->count++) % h->cap] = fr.lend_ref;
    pthread_cond_signal(&h->not_empty);
    pthread_mutex_unlock(&h->lock);
  }
  pthread_mutex_lock(&h->lock);
  h->done = 1;
  pthread_cond_signal(&h->not_empty);
  pthread_mutex_unlock(&h->lock);
  return NULL;
}

static int64_t run_source(const opts *o) {
  handoff h;
  memset(&h, 0, sizeof h);
  es_video_source_opts so = {.threads = o->threads};
  es_stage_env env = {.pin = o->pin ? pin_hook : NULL, .unpin = unpin_hook};
  es_source_info info;
  char msg[256];
  int64_t n = -1;
  pthread_t t;
  h.cap = o->queue;
  h.q = calloc((size_t)h.cap, sizeof *h.q);
  pthread_mutex_init(&h.lock, NULL);
  pthread_cond_init(&h.not_full, NULL);
  pthread_cond_init(&h.not_empty, NULL);
  if (!h.q || es_source_video(&h.src, o->clip, &so) != ES_OK ||
      h.src.open(&h.src, &env, &info, msg, sizeof msg) != ES_OK ||
      pthread_create(&t, NULL, read_main, &h))
    goto end;
  n = 0;
  for (;;) {
    pthread_mutex_lock(&h.lock);
    while (!h.count && !h.done)
      pthread_cond_wait(&h.not_empty, &h.lock);
    if (!h.count) {
      pthread_mutex_unlock(&h.lock);
      break;
    }
    void *ref = h.q[h.head];
    h.head = (h.head + 1) % h.cap;
    h.count--;
    pthread_cond_signal(&h.not_full);
    pthread_mutex_unlock(&h.lock);
    if (ref) h.src.unlend(ref);
    n++;
  }
  pthread_join(t, NULL);
end:
  if (h.src.close) h.src.close(&h.src);
  free(h.q);
  pthread_mutex_destroy(&h.lock);
  pthread_cond_destroy(&h.not_full);
  pthread_cond_destroy(&h.not_empty);
  return n;
}

static double cpu_self(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int child(const opts *o, const char *mode) {
  g_pin_mode = o->pin;
  if (o->pin == PIN_REAL) { /* CUDA started before the loop's CPU time is taken */
    void *w = aligned_alloc(4096, 4096);
    if (w && es_host_pin(w, 4096)) es_host_unpin(w);
    free(w);
  }
  const double c0 = cpu_self();
  int64_t n = !strcmp(mode, "plain")    ? run_plain(o)
              : !strcmp(mode, "source") ? run_source(o)
                                        : run_reader(o, mode);
  printf("frames %lld pins %d pin_ms %.3f loop_cpu %.4f\n", (long long)n, atomic_load(&g_pins),
         g_pin_ms, cpu_self() - c0);
  return n > 0 ? 0 : 1;
}

/* ---- the parent ---- */

typedef struct sample {
  double cpu, wall, loop, pin_ms; /* loop: the child's own CPU from open to close, or -1 */
  long long frames, pins;
} sample;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs one pass of mode in a child; its CPU and wall seconds, frames and pin asks. */
static int measure(const char *self, const char *ffmpeg, const opts *o, const char *mode,
                   sample *s) {
  int fd[2];
  char th[16], qu[16], line[256] = "";
  snprintf(th, sizeof th, "%d", o->threads);
  snprintf(qu, sizeof qu, "%d", o->queue);
  if (pipe(fd)) return -1;
  const double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    if (!strcmp(mode, "ffmpeg")) {
      execlp(ffmpeg, ffmpeg, "-nostdin", "-v", "error", "-threads", th, "-i", o->clip, "-f", "null",
             "-", (char *)NULL);
    } else if (!strcmp(mode, "cli")) { /* the whole run, statistics only */
      char *av[64], stats[64], *extra = strdup(o->cli_args ? o->cli_args : ""), *sp = NULL;
      int n = 0;
      snprintf(stats, sizeof stats, "/tmp/bench-decode-%d.csv", (int)getpid());
      av[n++] = (char *)o->cli;
      av[n++] = (char *)o->clip;
      av[n++] = "-q";
      av[n++] = "-y";
      av[n++] = "--stats";
      av[n++] = stats;
      for (char *w = strtok_r(extra, " ", &sp); w && n < 62; w = strtok_r(NULL, " ", &sp))
        av[n++] = w;
      av[n] = NULL;
      execv(o->cli, av);
    } else {
      char *av[] = {(char *)self,
                    "--child",
                    (char *)mode,
                    "--threads",
                    th,
                    "--queue",
                    qu,
                    (char *)o->clip,
                    o->pin == PIN_REAL ? "--pin"
                    : o->pin           ? "--pin-fails"
                                       : NULL,
                    NULL};
      execv(self, av);
    }
    _exit(127);
  }
  close(fd[1]);
  size_t got = 0;
  ssize_t k;
  while ((k = read(fd[0], line + got, sizeof line - 1 - got)) > 0)
    got += (size_t)k;
  line[got] = 0;
  close(fd[0]);
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) return -1;
  s->wall = now_s() - t0;
  s->cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
  s->frames = -1;
  s->pins = 0;
  s->loop = s->pin_ms = -1;
  sscanf(line, "frames %lld pins %lld pin_ms %lf loop_cpu %lf", &s->frames, &s->pins, &s->pin_ms,
         &s->loop);
  if (!strcmp(mode, "cli")) { /* its statistics file: gone with the pass */
    char stats[64];
    snprintf(stats, sizeof stats, "/tmp/bench-decode-%d.csv", (int)pid);
    unlink(stats);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int usage(void) {
  fprintf(stderr, "usage: bench-decode [--reps N] [--threads T] [--queue Q] [--modes a,b,...]\n"
                  "                    [--ffmpeg PATH] [--pin | --pin-fails]\n"
                  "                    [--cli ENTROPY_STREAM [--cli-args 'ARGS']] CLIP\n"
                  "modes: ffmpeg plain lend hold copy source [cli] (default: all but cli)\n");
  return 2;
}

int main(int argc, char **argv) {
  opts o = {.threads = 0, .queue = 8};
  int reps = 5;
  const char *modes_arg = "ffmpeg,plain,lend,hold,copy,source", *ffmpeg = "ffmpeg";
  const char *child_mode = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--child") && i + 1 < argc)
      child_mode = argv[++i];
    else if (!strcmp(a, "--threads") && i + 1 < argc)
      o.threads = atoi(argv[++i]);
    else if (!strcmp(a, "--queue") && i + 1 < argc)
      o.queue = atoi(argv[++i]);
    else if (!strcmp(a, "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(a, "--modes") && i + 1 < argc)
      modes_arg = argv[++i];
    else if (!strcmp(a, "--ffmpeg") && i + 1 < argc)
      ffmpeg = argv[++i];
    else if (!strcmp(a, "--pin-fails"))
      o.pin = PIN_FAILS;
    else if (!strcmp(a, "--pin"))
      o.pin = PIN_REAL;
    else if (!strcmp(a, "--cli") && i + 1 < argc)
      o.cli = argv[++i];
    else if (!strcmp(a, "--cli-args") && i + 1 < argc)
      o.cli_args = argv[++i];
    else if (a[0] == '-' && a[1])
      return usage();
    else
      o.clip = a;
  }
  if (!o.clip || o.threads < 0 || o.queue < 1 || reps < 1 || reps > MAX_REPS) return usage();
  if (child_mode) return child(&o, child_mode);

  const char *modes[MAX_MODES];
  int nm = 0;
  char *list = strdup(modes_arg);
  for (char *sp = NULL, *m = strtok_r(list, ",", &sp); m && nm < MAX_MODES;
       m = strtok_r(NULL, ",", &sp)) {
    int known = 0;
    for (int k = 0; k < N_KNOWN; k++)
      known |= !strcmp(m, k_modes[k]);
    if (!known || (!strcmp(m, "cli") && !o.cli)) return usage();
    modes[nm++] = m;
  }
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) return 1;
  self[sl] = 0;

  static sample s[MAX_MODES][MAX_REPS];
  long long frames[MAX_MODES] = {0}, pins[MAX_MODES] = {0};
  for (int r = -1; r < reps; r++) /* round -1: the warm-up (page cache, CPU frequency) */
    for (int m = 0; m < nm; m++) {
      sample x;
      if (measure(self, ffmpeg, &o, modes[m], &x)) {
        fprintf(stderr, "bench-decode: mode %s failed\n", modes[m]);
        return 1;
      }
      if (r < 0) continue;
      s[m][r] = x;
      frames[m] = x.frames;
      pins[m] = x.pins;
    }
  /* ffmpeg says nothing at -v error: it decoded the frames the plain loop counted */
  long long ref_frames = 0;
  for (int m = 0; m < nm; m++)
    if (!strcmp(modes[m], "plain")) ref_frames = frames[m];
  printf("clip %s, decoder threads %d%s, queue %d, medians of %d (one warm-up round)%s\n", o.clip,
         o.threads, o.threads ? "" : " (FFmpeg's choice)", o.queue, reps,
         o.pin == PIN_FAILS  ? ", every pin refused"
         : o.pin == PIN_REAL ? ", pool buffers pinned"
                             : "");
  printf("%-7s %7s %8s %15s %12s %8s %11s %10s %9s %8s\n", "mode", "frames", "cpu s", "(min-max)",
         "cpu ms/frame", "wall s", "x plain cpu", "loop cpu s", "pin asks", "pin ms");
  double mc[MAX_MODES], lo[MAX_MODES], hi[MAX_MODES], mw[MAX_MODES], ml[MAX_MODES], mp[MAX_MODES],
      plain_cpu = 0;
  for (int m = 0; m < nm; m++) {
    double c[MAX_REPS], w[MAX_REPS], l[MAX_REPS], pm[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      c[r] = s[m][r].cpu;
      w[r] = s[m][r].wall;
      l[r] = s[m][r].loop;
      pm[r] = s[m][r].pin_ms;
    }
    mc[m] = median(c, reps); /* sorts c */
    lo[m] = c[0];
    hi[m] = c[reps - 1];
    mw[m] = median(w, reps);
    ml[m] = median(l, reps);
    mp[m] = median(pm, reps);
    if (!strcmp(modes[m], "plain")) plain_cpu = mc[m];
  }
  for (int m = 0; m < nm; m++) {
    const long long f = frames[m] >= 0 ? frames[m] : ref_frames;
    char spread[32], ratio[16] = "", loop[16] = "-", pms[16] = "-";
    snprintf(spread, sizeof spread, "(%.3f-%.3f)", lo[m], hi[m]);
    if (plain_cpu > 0) snprintf(ratio, sizeof ratio, "%.3f", mc[m] / plain_cpu);
    if (ml[m] >= 0) snprintf(loop, sizeof loop, "%.3f", ml[m]);
    if (mp[m] >= 0 && o.pin == PIN_REAL && pins[m] > 0) snprintf(pms, sizeof pms, "%.2f", mp[m]);
    printf("%-7s %7lld %8.3f %15s %12.3f %8.3f %11s %10s %9lld %8s\n", modes[m], f, mc[m], spread,
           f > 0 ? 1e3 * mc[m] / (double)f : 0.0, mw[m], ratio, loop, pins[m], pms);
  }
  free(list);
  return 0;
}
