/*
 * entropy-stream.c - the command-line program: parses SPEC.md section 2's options and drives
 * the library. Everything goes through es_stream: images (one PNG, or a directory of them)
 * with decode worker threads reading PNGs into frames and encode worker threads writing the
 * results; video and stdin with a decode thread feeding it and the main thread writing
 * results in order. Everything computed or encoded lives in the library; this file only
 * decides what to call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_kernels.h"

#define PROG "entropy-stream"
#define MSG_LEN 512

/* ---- Output formats and kinds. */
enum fmt { FMT_HEAT = 0, FMT_GRAY8, FMT_GRAY16, FMT_F32 };
static const char *const fmt_names[] = {"heat", "gray8", "gray16", "f32"}; /* by enum fmt */
enum out_kind {
  OUT_NONE = 0, /* no -o: only --stats */
  OUT_PNG,      /* x.png */
  OUT_NPY,      /* x.npy */
  OUT_VIDEO,    /* x.mp4, x.mkv, ... */
  OUT_DIR,      /* a directory */
  OUT_STDOUT    /* "-" */
};
enum in_kind { IN_PNG = 0, IN_DIR, IN_VIDEO };

typedef struct cli_opts {
  const char *input;
  const char *output;
  es_config cfg;
  es_render render;
  int format; /* enum fmt */
  int format_set; /* --format given */
  int colormap_set; /* --colormap given */
  int range_set;    /* --range given */
  int gpus_set;      /* --gpus given ("all" too) */
  int cpu_below_set; /* --cpu-below given */
  const char *stats_path;
  const char *raw;
  const char *codec;
  int crf;
  const char *preset;
  int64_t max_pixels;
  int recursive;
  int overwrite; /* -y */
  int skip;      /* -n */
  int quiet;
  int verbose;
  int progress; /* -1 auto, 0 off, 1 on */
} cli_opts;

/* ---- Signals: the handler only sets a flag; a second signal ends the process at once,
 * removing the temporaries of the outputs being written (a .npy of a video may be large).
 * One request can arrive twice: `timeout -s INT` (and `kill -- -PGID` from a script's own
 * group) signals the process and then its process group, so the run gets two signals from
 * one process microseconds apart. A second signal from the process that sent the first,
 * within ES_SIG_SAME_NS, is that same request; a second Ctrl-C (from the terminal, no
 * sending process) or a later kill is a second request. */
/* Lock-free atomics: safe in a signal handler (C11 7.14.1.1) and between threads. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal flag must be lock-free");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the signal time must be lock-free");
#define ES_SIG_SAME_NS 200000000LL
static atomic_int g_stop;
static atomic_int g_stop_pid;     /* the first signal's sending process (0: the kernel, a tty) */
static atomic_llong g_stop_ns;    /* when it came (CLOCK_MONOTONIC) */
/* Set by the main thread on a fatal output error: readers stop as for a signal, but the exit
 * code stays the error's. */
static atomic_int g_abort;
/* A progress line is on the screen, not ended by a newline (set while it is drawn, cleared
 * once it is wiped; written under g_err_lock, read by the handler without it). */
static atomic_int g_progress_shown;

static void on_signal(int sig, siginfo_t *si, void *uctx) {
  (void)sig;
  (void)uctx;
  struct timespec ts; /* clock_gettime is async-signal-safe (POSIX.1-2008) */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  int pid = si && si->si_code == SI_USER ? (int)si->si_pid : 0;
  if (g_stop) {
    if (pid != 0 && pid == atomic_load(&g_stop_pid) &&
        now - atomic_load(&g_stop_ns) < ES_SIG_SAME_NS)
      return; /* the same request, delivered twice */
    es_tmp_unlink_all();
    /* The line is left as it is, but ended: the shell's prompt must not land after it.
     * write(2) is async-signal-safe; stdio is not. */
    if (atomic_load(&g_progress_shown)) {
      ssize_t w = write(2, "\n", 1);
      (void)w;
    }
    _exit(130);
  }
  atomic_store(&g_stop_pid, pid);
  atomic_store(&g_stop_ns, now);
  g_stop = 1;
}

/* Ends an output's wait for a FIFO's reader (es_output_set_stop): the frames in flight are
 * finished, and one waiting for a reader that never came is said as not written. */
static int stop_requested(void) { return atomic_load(&g_stop) != 0; }

static void install_signals(void) {
  struct sigaction sa;
  es_output_set_stop(stop_requested);
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* A closed stdout pipe must be a write error (exit 3), not a silent death. So must an
   * output past the file size limit (ulimit -f): SIGXFSZ would kill the process with no
   * message and leave the temporary behind; ignored, the write fails with EFBIG. */
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN);
}

/* The handler is installed without SA_RESTART, so that a signal interrupts a blocking open
 * (an input FIFO with no writer yet). But a write() into a pipe whose reader is slow
 * (--stats - | ...) then fails with EINTR when the signal lands on the thread blocked in
 * it, and stdio cannot resume after that: the record is cut and the run says "Interrupted
 * system call". So the main thread blocks SIGINT and SIGTERM while it writes outputs; the
 * kernel gives them to another thread of the process (decoder, workers, stdin pump), none
 * of which writes through stdio, and the flag is seen as before. */
static void main_writes(int begin) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(begin ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* ---- Messages. Every error is one line: "entropy-stream: WHAT: why". Progress lines are
 * cleared first so an error never lands in the middle of one. */
static pthread_mutex_t g_err_lock = PTHREAD_MUTEX_INITIALIZER;
static void clear_progress_locked(void) {
  if (atomic_load(&g_progress_shown)) {
    fputs("\r\033[K", stderr);
    atomic_store(&g_progress_shown, 0);
  }
}

/* Appends s to dst[*at..cap) with control bytes escaped (\n, \t, \r, \e, \xHH): a file name
 * or a library's text may hold a newline or an ESC, and a message must stay one line that
 * cannot move the cursor. A backslash is escaped too (\\), so that a name holding the two
 * characters "\n" does not read as one holding a newline. Bytes >= 0x80 pass unchanged, so
 * UTF-8 names read as they are.
 * Stops before an escape that would not fit; dst stays terminated. */
static void escape_into(char *dst, size_t cap, size_t *at, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char e[5] = {(char)c, 0};
    size_t k;
    if (c == '\\') {
      memcpy(e, "\\\\", 3);
    } else if (c < 0x20 || c == 0x7f) {
      const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r"
                        : c == 0x1b ? "\\e" : NULL;
      if (named)
        memcpy(e, named, 3);
      else
        snprintf(e, sizeof e, "\\x%02x", c);
    }
    k = strlen(e);
    if (*at + k >= cap) break;
    memcpy(dst + *at, e, k);
    *at += k;
  }
  dst[*at] = 0;
}

static void err(const char *what, const char *fmt, ...) {
  va_list ap;
  char line[PATH_MAX + 1024]; /* may name a file too: "also the output of PATH (...)" */
  char out[4 * (PATH_MAX + sizeof line) + 8]; /* every byte escaped as \xHH still fits */
  size_t at = 0;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (what) {
    escape_into(out, sizeof out, &at, what);
    escape_into(out, sizeof out, &at, ": ");
  }
  escape_into(out, sizeof out, &at, line);
  pthread_mutex_lock(&g_err_lock);
  clear_progress_locked();
  fprintf(stderr, PROG ": %s\n", out);
  pthread_mutex_unlock(&g_err_lock);
}

static void progress_line(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&g_err_lock);
  atomic_store(&g_progress_shown, 1); /* before it is drawn: a half-drawn line is ended too */
  fputs("\r\033[K" PROG ": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  pthread_mutex_unlock(&g_err_lock);
}

/* Clears a progress line on the screen. Called before a --stats record goes to standard
 * output where that is a terminal: stderr's progress line is usually on the same screen, and
 * the record would be drawn on after it ("... ETA 0:00c1.png,0,..."). */
static void clear_progress(void) {
  pthread_mutex_lock(&g_err_lock);
  clear_progress_locked();
  pthread_mutex_unlock(&g_err_lock);
}

/* The library's messages (es_config.message): lines like ours, a progress line cleared
 * first. */
static void lib_message(void *user, const char *line) {
  (void)user;
  err(NULL, "%s", line);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- Usage. */
static void usage(FILE *f) {
  fprintf(f,
    "usage: " PROG " [OPTIONS] INPUT [-o OUTPUT]\n"
    "Local Shannon entropy heat maps of images and video (CPU and NVIDIA GPUs).\n"
    "\n"
    "INPUT   a.png | a directory of *.png | a video file | - (stdin: y4m, or raw with --raw)\n"
    "OUTPUT  x.png | x.npy | x.mp4/.mkv/.avi/.mov/.nut/.y4m... | a directory | - (stdout y4m,\n"
    "        or raw float32 with --format f32); without -o only --stats is written\n"
    "\n"
    "What is computed:\n"
    "  -w, --window K        window size, odd, 1..255 (default 5)\n"
    "      --shape S         square|disk (default square)\n"
    "      --border B        clip|reflect (default clip)\n"
    "  -L, --levels L        quantization levels, 2..256 for 8-bit input, 2..65536 for\n"
    "                        16-bit input (default 16)\n"
    "      --base B          2|e: bits or nats (default 2)\n"
    "Rendering:\n"
    "      --format F        heat|gray8|gray16|f32 (default heat)\n"
    "      --colormap C      inferno|viridis|magma|turbo|gray (default inferno)\n"
    "      --range R         fixed|auto (default fixed: divide by log2(min(|W|, L)))\n"
    "      --overlay A       0..1: opacity of the heat over the source grey (0: the grey\n"
    "                        alone; default: the heat alone); pictures only (heat, gray8)\n"
    "Statistics:\n"
    "      --stats FILE      one record per image or frame: .csv, .jsonl, or - (stdout CSV)\n"
    "      --stats-bins B    histogram bins, 1..%d (default 16)\n"
    "Devices:\n"
    "      --device D        auto|gpu|cpu (default auto)\n"
    "      --gpus LIST       all|0,2,... distinct GPU ordinals 0..%d (default all; not\n"
    "                        with --device cpu)\n"
    "      --cpu-below N     under auto, frames of fewer pixels go to the CPU, 0..2^62\n"
    "                        (default 163840; --device auto only)\n"
    "      --threads N       CPU worker threads, 0..4096 (default 0 = all cores)\n"
    "      --queue N         frames in flight per stage, 1..1024 (default 8, or 4 a GPU\n"
    "                        with more than two GPUs)\n"
    "Input and output:\n"
    "      --raw SPEC        raw stdin: gray8:WxH[@FPS] or gray16le:WxH[@FPS]\n"
    "      --codec NAME      video encoder, for a video file output (default libx264 if\n"
    "                        present, else mpeg4, else the container's own: libvpx-vp9 for\n"
    "                        .webm, libtheora for .ogv)\n"
    "      --crf N           encoder quality, 0..63 (default: the encoder's; mpeg4, which\n"
    "                        has no crf, gets a constant quantiser of 3)\n"
    "      --preset P        encoder preset (default: the encoder's)\n"
    "      --max-pixels N    refuse larger inputs, 1..2^62 (default 2^31)\n"
    "  -r, --recursive       descend into subdirectories (a directory input only)\n"
    "  -o, --output PATH     where to write (see OUTPUT)\n"
    "  -y                    overwrite existing outputs\n"
    "  -n                    skip existing outputs (default: refuse with an error)\n"
    "Everyday use:\n"
    "  -q, --quiet           no progress and no summary, nor an interruption's (errors are\n"
    "                        always shown, and so is a video's summary when corrupt packets\n"
    "                        were skipped, flagged or dropped by the decoder)\n"
    "  -v, --verbose         devices used, one line per file\n"
    "      --progress        progress on stderr even when it is not a terminal\n"
    "      --no-progress     no progress (default: shown when stderr is a terminal)\n"
    "      --version         versions of the library, libpng, libav*, CUDA, GPUs seen\n"
    "  -h, --help            this help\n"
    "Numbers are plain decimal: digits, and a decimal point for --overlay and FPS (no sign,\n"
    "spaces, hex or exponent).\n"
    "\n"
    "Environment:\n"
    "  ES_TRACE=1            start-up and phase times on stderr\n"
    "  ES_GPU_SYNC=block     threads waiting for a GPU sleep instead of spinning\n"
    "\n"
    "Exit codes: 0 done, 1 usage, 2 input, 3 output, 4 device or out of memory, 130\n"
    "interrupted.\n",
    ES_STATS_MAX_BINS, ES_MAX_GPUS - 1);
}

/* ---- Strict number parsing: the whole string, in range. strtoll and strtod alone also take
 * leading white space, a sign, and (strtod) hex, exponents, inf and nan: " 5", "+5", "-0",
 * "0x1" and "1e-1" all passed. A number here is decimal digits only (no option takes a
 * negative value), and a real number digits with one optional decimal point ("0.3", ".5"). */
static int all_digits(const char *s) {
  return *s && s[strspn(s, "0123456789")] == 0;
}

/* The length of the plain decimal number at the start of s ("29.97", "5.", ".5"), or 0. */
static size_t decimal_len(const char *s) {
  size_t n = strspn(s, "0123456789"), k = 0;
  if (s[n] == '.') k = strspn(s + n + 1, "0123456789");
  if (!n && !k) return 0;
  return s[n] == '.' ? n + 1 + k : n;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  long long v;
  if (!s || !all_digits(s)) return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  int64_t v;
  if (parse_i64(s, lo, hi, &v)) return -1;
  *out = (int)v;
  return 0;
}

static int pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* "gray8:WxH[@FPS]" / "gray16le:WxH[@FPS]": checked here so a typo is a usage error. */
static int raw_spec_ok(const char *s) {
  const char *p;
  char *end;
  long w, h;
  if (!strncmp(s, "gray8:", 6))
    p = s + 6;
  else if (!strncmp(s, "gray16le:", 9))
    p = s + 9;
  else
    return 0;
  errno = 0;
  if (*p < '0' || *p > '9') return 0; /* digits only: no " 5", "+5" */
  w = strtol(p, &end, 10);
  if (errno || end == p || *end != 'x' || w < 1 || w > 1 << 20) return 0;
  p = end + 1;
  if (*p < '0' || *p > '9') return 0;
  h = strtol(p, &end, 10);
  if (errno || end == p || h < 1 || h > 1 << 20) return 0;
  if (*end == '@') {
    /* A number (25, 29.97) or a ratio as FFmpeg writes rates (30000/1001, 30000:1001), in
     * plain decimal (no hex, exponent, sign or inf). */
    double fps;
    size_t n;
    p = end + 1;
    if (!(n = decimal_len(p))) return 0;
    fps = strtod(p, &end);
    if (end != p + n) return 0;
    if (*end == '/' || *end == ':') {
      const char *q = end + 1;
      double den;
      if (!(n = decimal_len(q))) return 0;
      den = strtod(q, &end);
      if (end != q + n || !(den > 0)) return 0;
      fps /= den;
    }
    if (*end || !(fps > 0 && fps <= 1000)) return 0;
  } else if (*end) {
    return 0;
  }
  return 1;
}

enum {
  OPT_SHAPE = 256, OPT_BORDER, OPT_BASE, OPT_FORMAT, OPT_COLORMAP, OPT_RANGE, OPT_OVERLAY,
  OPT_STATS, OPT_STATS_BINS, OPT_DEVICE, OPT_GPUS, OPT_CPU_BELOW, OPT_THREADS, OPT_QUEUE,
  OPT_RAW, OPT_CODEC, OPT_CRF, OPT_PRESET, OPT_MAX_PIXELS, OPT_PROGRESS, OPT_NO_PROGRESS,
  OPT_VERSION
};

/* Returns 0 to go on, 1 for a usage error (message printed), or -2 after --help/--version
 * (exit 0). */
static int parse_args(int argc, char **argv, cli_opts *o) {
  static const struct option longopts[] = {
    {"window", required_argument, 0, 'w'},   {"shape", required_argument, 0, OPT_SHAPE},
    {"border", required_argument, 0, OPT_BORDER}, {"levels", required_argument, 0, 'L'},
    {"base", required_argument, 0, OPT_BASE}, {"format", required_argument, 0, OPT_FORMAT},
    {"colormap", required_argument, 0, OPT_COLORMAP},
    {"range", required_argument, 0, OPT_RANGE}, {"overlay", required_argument, 0, OPT_OVERLAY},
    {"stats", required_argument, 0, OPT_STATS},
    {"stats-bins", required_argument, 0, OPT_STATS_BINS},
    {"device", required_argument, 0, OPT_DEVICE}, {"gpus", required_argument, 0, OPT_GPUS},
    {"cpu-below", required_argument, 0, OPT_CPU_BELOW},
    {"threads", required_argument, 0, OPT_THREADS}, {"queue", required_argument, 0, OPT_QUEUE},
    {"raw", required_argument, 0, OPT_RAW},  {"codec", required_argument, 0, OPT_CODEC},
    {"crf", required_argument, 0, OPT_CRF},  {"preset", required_argument, 0, OPT_PRESET},
    {"max-pixels", required_argument, 0, OPT_MAX_PIXELS},
    {"recursive", no_argument, 0, 'r'},      {"output", required_argument, 0, 'o'},
    {"quiet", no_argument, 0, 'q'},          {"verbose", no_argument, 0, 'v'},
    {"progress", no_argument, 0, OPT_PROGRESS},
    {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
    {"version", no_argument, 0, OPT_VERSION}, {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
  static const char *const shapes[] = {"square", "disk"};
  static const char *const borders[] = {"clip", "reflect"};
  static const char *const cmaps[] = {"inferno", "viridis", "magma", "turbo", "gray"};
  static const char *const ranges[] = {"fixed", "auto"};
  static const char *const devices[] = {"auto", "gpu", "cpu"};
  int c, v;
  int64_t v64;

  opterr = 0; /* our own one-line messages */
  while ((c = getopt_long(argc, argv, ":w:L:o:rynqvh", longopts, NULL)) != -1) {
    const char *a = optarg;
    switch (c) {
    case 'w':
      if (parse_int(a, INT_MIN, INT_MAX, &o->cfg.params.window)) {
        err(NULL, "--window %s: must be odd, 1..%d", a, ES_WINDOW_MAX);
        return 1;
      }
      break;
    case 'L':
      if (parse_int(a, INT_MIN, INT_MAX, &o->cfg.params.levels)) {
        err(NULL, "--levels %s: must be 2..256 for 8-bit input, 2..65536 for 16-bit", a);
        return 1;
      }
      break;
    case OPT_SHAPE:
      if ((v = pick(a, shapes, 2)) < 0) {
        err(NULL, "--shape %s: must be square or disk", a);
        return 1;
      }
      o->cfg.params.shape = v ? ES_SHAPE_DISK : ES_SHAPE_SQUARE;
      break;
    case OPT_BORDER:
      if ((v = pick(a, borders, 2)) < 0) {
        err(NULL, "--border %s: must be clip or reflect", a);
        return 1;
      }
      o->cfg.params.border = v ? ES_BORDER_REFLECT : ES_BORDER_CLIP;
      break;
    case OPT_BASE:
      if (!strcmp(a, "2"))
        o->cfg.params.base = ES_BASE_2;
      else if (!strcmp(a, "e"))
        o->cfg.params.base = ES_BASE_E;
      else {
        err(NULL, "--base %s: must be 2 or e", a);
        return 1;
      }
      break;
    case OPT_FORMAT:
      if ((v = pick(a, fmt_names, 4)) < 0) {
        err(NULL, "--format %s: must be heat, gray8, gray16 or f32", a);
        return 1;
      }
      o->format = v;
      o->format_set = 1;
      break;
    case OPT_COLORMAP:
      if ((v = pick(a, cmaps, 5)) < 0) {
        err(NULL, "--colormap %s: must be inferno, viridis, magma, turbo or gray", a);
        return 1;
      }
      o->render.colormap = v; /* the names are in es_colormap order */
      o->colormap_set = 1;
      break;
    case OPT_RANGE:
      if ((v = pick(a, ranges, 2)) < 0) {
        err(NULL, "--range %s: must be fixed or auto", a);
        return 1;
      }
      o->render.range_auto = v;
      o->range_set = 1;
      break;
    case OPT_OVERLAY: {
      char *end;
      double d;
      size_t n = decimal_len(a);
      errno = 0;
      d = n ? strtod(a, &end) : -1; /* plain decimal: no " 0.5", "+0.5", "0x1", "1e-1", "nan" */
      if (!n || errno || end != a + n || *end || !(d >= 0 && d <= 1)) {
        err(NULL, "--overlay %s: must be a decimal number 0..1 (0.3)", a);
        return 1;
      }
      o->render.overlay = (float)d;
      o->render.overlay_on = 1; /* 0 too: the grey alone, not "no overlay" */
      break;
    }
    case OPT_STATS:
      if (o->stats_path) { /* as -o: the first would be dropped */
        err(NULL, "--stats %s: only one statistics file", a);
        return 1;
      }
      if (!*a) {
        err(NULL, "--stats: needs a file name (.csv, .jsonl) or -");
        return 1;
      }
      if (!es_stats_path_ok(a)) { /* before any output directory is made */
        err(a, "--stats FILE: must end in .csv or .jsonl (or be -)");
        return 1;
      }
      o->stats_path = a;
      break;
    case OPT_STATS_BINS:
      if (parse_int(a, 1, ES_STATS_MAX_BINS, &o->cfg.stats_bins)) {
        err(NULL, "--stats-bins %s: must be 1..%d", a, ES_STATS_MAX_BINS);
        return 1;
      }
      break;
    case OPT_DEVICE:
      if ((v = pick(a, devices, 3)) < 0) {
        err(NULL, "--device %s: must be auto, gpu or cpu", a);
        return 1;
      }
      o->cfg.device = v == 0 ? ES_DEVICE_AUTO : v == 1 ? ES_DEVICE_GPU : ES_DEVICE_CPU;
      break;
    case OPT_GPUS:
      o->gpus_set = 1;
      o->cfg.ngpus = 0;
      if (strcmp(a, "all")) {
        char buf[512], *tok, *save = NULL;
        size_t len = strlen(a);
        snprintf(buf, sizeof buf, "%s", a);
        /* strtok_r skips empty fields: "0," and ",0" would pass for "0". */
        if (!len || len >= sizeof buf || a[0] == ',' || a[len - 1] == ',' || strstr(a, ",,"))
          o->cfg.ngpus = -1;
        for (tok = o->cfg.ngpus < 0 ? NULL : strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
          if (o->cfg.ngpus >= ES_MAX_GPUS || parse_int(tok, 0, ES_MAX_GPUS - 1, &v)) {
            o->cfg.ngpus = -1;
            break;
          }
          for (int i = 0; i < o->cfg.ngpus; i++)
            if (o->cfg.gpus[i] == v) o->cfg.ngpus = -1;
          if (o->cfg.ngpus < 0) break;
          o->cfg.gpus[o->cfg.ngpus++] = v;
        }
        if (o->cfg.ngpus <= 0) {
          err(NULL, "--gpus %s: must be all or a list of distinct ordinals 0..%d (0,2,...)",
              a, ES_MAX_GPUS - 1);
          return 1;
        }
      }
      break;
    case OPT_CPU_BELOW:
      if (parse_i64(a, 0, INT64_C(1) << 62, &v64)) {
        err(NULL, "--cpu-below %s: must be 0..%" PRId64 " pixels", a, INT64_C(1) << 62);
        return 1;
      }
      o->cfg.cpu_below = v64;
      o->cpu_below_set = 1;
      break;
    case OPT_THREADS:
      if (parse_int(a, 0, 4096, &o->cfg.threads)) {
        err(NULL, "--threads %s: must be 0..4096 (0 = all cores)", a);
        return 1;
      }
      break;
    case OPT_QUEUE:
      if (parse_int(a, 1, 1024, &o->cfg.queue)) {
        err(NULL, "--queue %s: must be 1..1024", a);
        return 1;
      }
      break;
    case OPT_RAW:
      if (!raw_spec_ok(a)) {
        err(NULL, "--raw %s: must be gray8:WxH[@FPS] or gray16le:WxH[@FPS], W and H 1..%d, FPS "
            "above 0 and at most 1000 (25, 29.97 or 30000/1001)", a, 1 << 20);
        return 1;
      }
      o->raw = a;
      break;
    case OPT_CODEC:
      if (!*a) {
        err(NULL, "--codec: needs an encoder name (libx264, mpeg4, ...)");
        return 1;
      }
      o->codec = a;
      break;
    case OPT_CRF:
      if (parse_int(a, 0, 63, &o->crf)) {
        err(NULL, "--crf %s: must be 0..63", a);
        return 1;
      }
      break;
    case OPT_PRESET:
      o->preset = a;
      break;
    case OPT_MAX_PIXELS:
      if (parse_i64(a, 1, INT64_C(1) << 62, &o->max_pixels)) {
        err(NULL, "--max-pixels %s: must be 1..%" PRId64, a, INT64_C(1) << 62);
        return 1;
      }
      break;
    case 'r': o->recursive = 1; break;
    case 'o':
      if (o->output) {
        err(NULL, "-o %s: only one output", a);
        return 1;
      }
      if (!*a) {
        err(NULL, "-o: needs a file name, a directory or -");
        return 1;
      }
      o->output = a;
      break;
    case 'y': o->overwrite = 1; break;
    case 'n': o->skip = 1; break;
    case 'q': o->quiet = 1; break;
    case 'v': o->verbose++; break;
    case OPT_PROGRESS: o->progress = 1; break;
    case OPT_NO_PROGRESS: o->progress = 0; break;
    case OPT_VERSION: {
      char buf[4096];
      es_version_info(buf, sizeof buf);
      fputs(buf, stdout);
      if (*buf && buf[strlen(buf) - 1] != '\n') fputc('\n', stdout);
      return -2;
    }
    case 'h':
      usage(stdout);
      return -2;
    case ':':
    default: {
      /* getopt_long sets optopt for long options too: name what the user typed. */
      const char *arg = argv[optind - 1];
      char name[128];
      /* "--help=x": glibc returns '?' with optopt set to the option's value (0 for an
       * unknown name); name it in full, even where an abbreviation was typed. */
      if (c == '?' && optopt && !strncmp(arg, "--", 2) && strchr(arg, '=')) {
        for (const struct option *lo = longopts; lo->name; lo++) {
          if (lo->val == optopt && lo->has_arg == no_argument) {
            err(NULL, "--%s: takes no value", lo->name);
            return 1;
          }
        }
      }
      if (!strncmp(arg, "--", 2))
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
      else
        snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
      /* An abbreviation of several options comes back as '?' with optopt 0, as an unknown
       * name does: name the options it could be. */
      if (c == '?' && !optopt && !strncmp(arg, "--", 2) && name[2]) {
        char list[256] = "";
        size_t at = 0, n = strlen(name + 2);
        int k = 0;
        for (const struct option *lo = longopts; lo->name; lo++) {
          if (strncmp(lo->name, name + 2, n) || at >= sizeof list) continue;
          at += (size_t)snprintf(list + at, sizeof list - at, "%s--%s", k++ ? ", " : "", lo->name);
        }
        if (k > 1) {
          err(NULL, "%s: ambiguous option (%s; see --help)", name, list);
          return 1;
        }
      }
      err(NULL, "%s: %s (see --help)", name, c == ':' ? "needs a value" : "unknown option");
      return 1;
    }
    }
  }
  if (optind >= argc) {
    err(NULL, "no INPUT given (usage: " PROG " [OPTIONS] INPUT [-o OUTPUT]; see --help)");
    return 1;
  }
  if (argc - optind > 1) {
    err(NULL, "%s: only one INPUT (usage: " PROG " [OPTIONS] INPUT [-o OUTPUT])",
        argv[optind + 1]);
    return 1;
  }
  o->input = argv[optind];
  if (o->overwrite && o->skip) {
    err(NULL, "-y and -n: choose one");
    return 1;
  }
  /* The parameters are checked against the widest depth here; the levels are checked
   * again against each input's own depth. */
  {
    char msg[MSG_LEN];
    if (o->cfg.params.levels < 2 || o->cfg.params.levels > 65536) {
      err(NULL, "--levels %d: must be 2..256 for 8-bit input, 2..65536 for 16-bit",
          o->cfg.params.levels);
      return 1;
    }
    if (es_params_check(&o->cfg.params, 16, msg, sizeof msg) != ES_OK) {
      err(NULL, "%s", msg);
      return 1;
    }
  }
  /* Device options the run would ignore, refused as the output's are: --device cpu opens no
   * GPU, and --cpu-below is auto's line between the CPU and the GPUs (under cpu or gpu every
   * frame goes to that device). */
  if (o->gpus_set && o->cfg.device == ES_DEVICE_CPU) {
    err(NULL, "--gpus: not with --device cpu (it uses no GPU)");
    return 1;
  }
  if (o->cpu_below_set && o->cfg.device != ES_DEVICE_AUTO) {
    err(NULL, "--cpu-below: only with --device auto (under %s every frame goes to the %s)",
        o->cfg.device == ES_DEVICE_CPU ? "cpu" : "gpu",
        o->cfg.device == ES_DEVICE_CPU ? "CPU" : "GPUs");
    return 1;
  }
  if (o->render.overlay_on && o->format == FMT_GRAY16) {
    /* The blend is 8-bit (the renderers' es_blend): rather refused than silently ignored. */
    err(NULL, "--overlay: not with --format gray16 (use heat or gray8)");
    return 1;
  }
  if (o->stats_path && o->output && !strcmp(o->stats_path, "-") && !strcmp(o->output, "-")) {
    err(NULL, "--stats - and -o -: both would write to standard output");
    return 1;
  }
  return 0;
}

/* ---- Paths. */
static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return "";
  return dot + 1;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 when `out` exists and is the file `in` (same device and inode, links followed): writing
 * it would replace the input. The -o guard in main compares only the -o path; the names
 * made inside an output directory are known later and checked with this. `in` "-" is what
 * standard input is (`- < x.y4m`: that file). */
static int same_file(const char *in, const char *out) {
  struct stat a, b;
  int have_in = strcmp(in, "-") ? stat(in, &a) == 0 : fstat(0, &a) == 0 && S_ISREG(a.st_mode);
  return have_in && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 1 when standard output is a regular file and the file `in` ("-": standard input's). */
static int stdout_is(const char *in) {
  struct stat a, b;
  int have_in = strcmp(in, "-") ? stat(in, &a) == 0 : fstat(0, &a) == 0;
  return have_in && fstat(1, &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

static int is_video_ext(const char *e) {
  static const char *const exts[] = {"mp4", "mkv", "avi", "mov", "nut", "y4m",  "webm", "m4v",
                                     "ts",  "flv", "mpg", "mpeg", "ogv", "wmv", "gif", "apng"};
  for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
    if (!strcasecmp(e, exts[i])) return 1;
  return 0;
}

static int out_kind_of(const char *out) {
  const char *e;
  size_t n;
  if (!out) return OUT_NONE;
  if (!strcmp(out, "-")) return OUT_STDOUT;
  n = strlen(out);
  if (is_dir(out) || out[n - 1] == '/') return OUT_DIR;
  e = ext_of(out);
  if (!strcasecmp(e, "png")) return OUT_PNG;
  if (!strcasecmp(e, "npy")) return OUT_NPY;
  if (is_video_ext(e)) return OUT_VIDEO;
  if (!*e) return OUT_DIR; /* a name without an extension is a directory to create */
  return -1;
}

/* mkdir -p; ES_OK or ES_ERR_OUTPUT with the reason in msg. On failure *bad (if not NULL) is
 * the length of the leading part of path that could not be made (what the message is
 * about), and *why its errno (ENOTDIR: something else is in the way). */
static int make_dirs(const char *path, size_t *bad, int *why, char *msg, size_t len) {
  char buf[PATH_MAX];
  size_t n = strlen(path), dummy_bad;
  int dummy_why;
  if (!bad) bad = &dummy_bad;
  if (!why) why = &dummy_why;
  *bad = n;
  *why = ENAMETOOLONG;
  if (n >= sizeof buf) {
    snprintf(msg, len, "path too long");
    return ES_ERR_OUTPUT;
  }
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == 0) {
      char save = buf[i];
      buf[i] = 0;
      *bad = i;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
        *why = errno;
        snprintf(msg, len, "cannot create directory: %s", strerror(errno));
        return ES_ERR_OUTPUT;
      }
      if (!is_dir(buf)) {
        *why = ENOTDIR;
        snprintf(msg, len, "cannot create directory: exists and is not a directory");
        return ES_ERR_OUTPUT;
      }
      buf[i] = save;
    }
  }
  return ES_OK;
}

/* make_dirs for an output directory; a failure is reported naming the directory that could
 * not be made (the output itself, or a parent of it in the way). */
static int make_out_dir(const char *path) {
  char msg[MSG_LEN], name[PATH_MAX];
  size_t at = 0;
  int rc = make_dirs(path, &at, NULL, msg, sizeof msg);
  if (rc != ES_OK) {
    snprintf(name, sizeof name, "%.*s", (int)at, path);
    err(name, "%s", msg);
  }
  return rc;
}

/* The length of the shortest leading part of path (whole components) that does not exist:
 * what make_dirs(path) will create starts there. 0 when all of it exists (or cannot be
 * looked at: then make_dirs creates nothing either). */
static size_t first_missing(const char *path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  struct stat st;
  if (n >= sizeof buf) return 0;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == 0) {
      char save = buf[i];
      buf[i] = 0;
      if (lstat(buf, &st) != 0) return errno == ENOENT ? i : 0;
      buf[i] = save;
    }
  }
  return 0;
}

/* Removes the directories of path down to its leading part of length `from` (those that
 * first_missing said a run would make), deepest first, stopping at the first that is not
 * empty: what a run that wrote nothing into them had created. */
static void remove_made_dirs(const char *path, size_t from) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (!from || n >= sizeof buf) return;
  memcpy(buf, path, n + 1);
  for (;;) {
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    if (n < from || rmdir(buf) != 0) return;
    while (n > 0 && buf[n - 1] != '/') n--;
    if (n == 0) return;
    buf[n] = 0;
  }
}

/* 1 when path names something under the directory dir ("out/s.csv" under "out/"). */
static int path_inside(const char *dir, const char *path) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return !strncmp(path, dir, n) && path[n] == '/';
}

static char *join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + nb + 2);
  if (!s) return NULL;
  memcpy(s, a, na);
  if (na && a[na - 1] != '/') s[na++] = '/';
  memcpy(s + na, b, nb + 1);
  return s;
}

/* The rendering the --format asks for (for PNG outputs). */
static int png_pixfmt(int format) {
  switch (format) {
  case FMT_GRAY8: return ES_PIX_GRAY8;
  case FMT_GRAY16: return ES_PIX_GRAY16;
  default: return ES_PIX_RGB24;
  }
}

/* An existing --stats file without -y. -n keeps it: stats_path is cleared and the other
 * outputs are still written (STATS_SKIPPED); otherwise the error is reported
 * (STATS_REFUSED, exit code 3). STATS_OK: nothing in the way. */
enum { STATS_OK, STATS_SKIPPED, STATS_REFUSED };
static int stats_file_check(cli_opts *o) {
  if (!o->stats_path || !strcmp(o->stats_path, "-") || o->overwrite ||
      !es_output_exists(o->stats_path))
    return STATS_OK;
  if (!o->skip) {
    err(o->stats_path, "exists (use -y to overwrite, -n to skip)");
    return STATS_REFUSED;
  }
  if (!o->quiet) err(o->stats_path, "exists, skipped");
  o->stats_path = NULL;
  return STATS_SKIPPED;
}

/* The exit code of a run: interrupted wins, then the worst of the failures. */
static int worse(int code, int other) {
  if (code == 130 || other == 130) return 130;
  return other > code ? other : code;
}

/* The run is over (every output closed, every message printed) while the GPUs are still
 * opening in the background: nothing ran on them, so instead of waiting for CUDA to finish
 * starting only to tear it down (0.3-0.6 s on the GPU machines, longer than a short batch
 * takes on the CPU), the process ends here and the system reclaims everything. */
static void exit_if_gpus_opening(es_context *ctx, int code) {
  if (!ctx || es_context_gpus_open(ctx)) return;
  es_trace("exit while the GPUs are still opening");
  fflush(NULL);
  _exit(code);
}

/* What computes: never waits for GPUs still opening (those have computed nothing yet). */
static const char *device_desc(es_context *ctx, char *buf, size_t len) {
  if (!es_context_gpus_open(ctx)) {
    snprintf(buf, len, "CPU (GPUs still opening)");
    return buf;
  }
  int n = es_context_gpu_count(ctx);
  const es_config *c = es_context_config(ctx);
  if (n <= 0)
    snprintf(buf, len, "CPU");
  else if (c && c->device == ES_DEVICE_AUTO)
    snprintf(buf, len, "GPU x%d + CPU", n);
  else
    snprintf(buf, len, "GPU x%d", n);
  return buf;
}

static void fmt_eta(char *buf, size_t len, double s) {
  if (!(s >= 0) || s > 1e7)
    snprintf(buf, len, "?");
  else if (s >= 3600)
    snprintf(buf, len, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
  else
    snprintf(buf, len, "%d:%02d", (int)s / 60, (int)s % 60);
}

/* Opens the --stats writer; a failure is reported. */
static int stats_open(const cli_opts *o, es_stats_writer **sw) {
  char msg[MSG_LEN] = "";
  int rc = es_stats_writer_open(sw, o->stats_path, o->overwrite, o->cfg.stats_bins, msg,
                                sizeof msg);
  if (rc != ES_OK) err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
  return rc;
}

/* Makes the output directory dir and opens the --stats file, which lies inside it. Where the
 * statistics file cannot be opened (a subdirectory that is not there), the directories made
 * here are removed again, deepest first (nothing was written into them yet): a run that
 * fails on its --stats leaves no output directory behind, as where the file lies outside it
 * and is opened first. A failure is reported. */
static int stats_open_inside(const cli_opts *o, const char *dir, es_stats_writer **sw) {
  const size_t made = first_missing(dir); /* where what make_out_dir creates starts */
  int rc = make_out_dir(dir);
  if (rc != ES_OK || (rc = stats_open(o, sw)) == ES_OK) return rc;
  remove_made_dirs(dir, made);
  return rc;
}

/* ======================================================================================
 * Images: one PNG or a directory of them, through an es_stream. Decode workers take the
 * files in name order, read each PNG straight into a frame of the stream and push it;
 * encode workers pull the results and write them (PNG's zlib is the slow part, so there
 * are several), then give the frames back. Memory is the stream's pool of --queue frames,
 * grown to the largest image seen. A file that fails to decode is never pushed: its
 * failure is recorded in its job, so the ordered pull never waits for it.
 * ==================================================================================== */

enum { JOB_SKIPPED = 1 }; /* an img_job status besides ES_OK and the es_status codes */

typedef struct img_job {
  char *in;   /* input path (owned) */
  char *name; /* name in messages and stats: relative to the input directory (owned) */
  char *out;  /* output path or NULL (owned) */
  int status; /* ES_OK, an es_status, or JOB_SKIPPED (-n); set by job_done */
  int keep;   /* -n and the output exists: computed for --stats only, the output kept */
  int failed;  /* set before the workers start: a failure already reported (not a regular file,
                  no output directory), the job's status; it is counted, never opened */
  int width, height;
  double t0;       /* when its decode began (-v) */
  void *stats;     /* when --stats: its frame's es_stats up to the bins used (owned; an
                    * es_stats whole has room for ES_STATS_MAX_BINS, 8 KB a file) */
} img_job;

typedef struct img_batch {
  const cli_opts *o;
  es_context *ctx;
  es_stream *st;
  int out_kind; /* of each job's output: OUT_PNG, OUT_NPY, OUT_STDOUT or OUT_NONE */
  int single;   /* one PNG input, not a directory: no summary counts its skip, so it is told */
  int pixfmt;   /* the rendering the stream makes (ES_PIX_NONE: none, or the map) */
  img_job *jobs; /* sorted by name; set before the workers start */
  size_t njobs;
  pthread_mutex_t lock; /* guards the fields below */
  size_t next;          /* next job to decode */
  size_t done;          /* jobs finished (any status) */
  int decoders;         /* decode workers still running: the last one finishes the stream */
  int64_t pixels;       /* pixels computed */
  double t0;
  double last_progress;
  int show_progress;
} img_batch;

/* Lists the *.png files under root/rel into jobs. The top directory unreadable is an error
 * (msg); a subdirectory unreadable is a failure of the batch, as a file that cannot be read
 * is (SPEC 3: the other files are still done): reported here and counted in *unreadable.
 * A *.png that is not a regular file (links followed) is listed as a failed job, reported
 * here: opening a FIFO blocks a worker until a writer comes, which may be never, and a
 * thread blocked in open() does not see SIGINT. */
static int collect_pngs(const char *root, const char *rel, int recursive, const char *skip_dir,
                        img_job **jobs, size_t *n, size_t *cap, size_t *unreadable, char *msg,
                        size_t len) {
  char *dirpath = *rel ? join(root, rel) : strdup(root);
  DIR *d = NULL;
  struct dirent *e;
  int rc = ES_OK;
  if (!dirpath) return ES_ERR_NOMEM;
  d = opendir(dirpath);
  if (!d) {
    if (*rel) {
      err(dirpath, "cannot read directory: %s", strerror(errno));
      (*unreadable)++;
      goto end;
    }
    snprintf(msg, len, "cannot read directory: %s", strerror(errno)); /* named by the caller */
    rc = ES_ERR_INPUT;
    goto end;
  }
  while ((e = readdir(d))) {
    char *relname, *full;
    struct stat st;
    int not_regular;
    if (e->d_name[0] == '.') continue; /* ., .., hidden files and our temporaries */
    relname = *rel ? join(rel, e->d_name) : strdup(e->d_name);
    full = relname ? join(root, relname) : NULL;
    if (!relname || !full) {
      free(relname);
      free(full);
      rc = ES_ERR_NOMEM;
      goto end;
    }
    /* Only real directories are descended into: a symlink to a parent would loop. */
    if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
      char real[PATH_MAX];
      int is_out = skip_dir && realpath(full, real) && !strcmp(real, skip_dir);
      if (recursive && !is_out)
        rc = collect_pngs(root, relname, recursive, skip_dir, jobs, n, cap, unreadable, msg, len);
      free(relname);
      free(full);
      if (rc) goto end;
      continue;
    }
    if (strcasecmp(ext_of(e->d_name), "png")) {
      free(relname);
      free(full);
      continue;
    }
    /* stat, not the lstat above: a symlink to a regular file is taken, as it always was (a
     * dangling one fails at open, with its reason). A symlink to a directory is skipped as
     * any directory not descended into is, whatever its name. */
    not_regular = stat(full, &st) == 0 && !S_ISREG(st.st_mode);
    if (not_regular && S_ISDIR(st.st_mode)) {
      free(relname);
      free(full);
      continue;
    }
    if (not_regular) err(full, "not a regular file");
    if (*n == *cap) {
      size_t nc = *cap ? *cap * 2 : 64;
      img_job *nj = realloc(*jobs, nc * sizeof *nj);
      if (!nj) {
        free(relname);
        free(full);
        rc = ES_ERR_NOMEM;
        goto end;
      }
      *jobs = nj;
      *cap = nc;
    }
    memset(&(*jobs)[*n], 0, sizeof **jobs);
    (*jobs)[*n].in = full;
    (*jobs)[*n].name = relname;
    if (not_regular) (*jobs)[*n].failed = ES_ERR_INPUT;
    (*n)++;
  }
end:
  if (d) closedir(d);
  free(dirpath);
  return rc;
}

static int job_cmp(const void *a, const void *b) {
  return strcmp(((const img_job *)a)->name, ((const img_job *)b)->name);
}

/* A file by its identity (links followed), and the job whose input it is. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  size_t job;
} file_id;

static int file_id_cmp(const void *a, const void *b) {
  const file_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The input that st is, or NULL. */
static const file_id *find_file_id(const file_id *ids, size_t n, const struct stat *st) {
  file_id key = {st->st_dev, st->st_ino, 0};
  return n ? bsearch(&key, ids, n, sizeof *ids, file_id_cmp) : NULL;
}

/* Jobs (pointers into the name-sorted array) by output name, then in name order. */
static int job_out_cmp(const void *a, const void *b) {
  const img_job *x = *(img_job *const *)a, *y = *(img_job *const *)b;
  int c = strcmp(x->out, y->out);
  return c ? c : (x > y) - (x < y);
}

/* A job is over (written, skipped or failed): count it and show progress. */
static void job_done(img_batch *b, img_job *j, int status) {
  pthread_mutex_lock(&b->lock);
  j->status = status;
  b->done++;
  if (b->show_progress) {
    double t = now_s();
    if (t - b->last_progress > 0.2 || b->done == b->njobs) {
      double el = t - b->t0, rate = el > 0 ? b->done / el : 0;
      char eta[32];
      fmt_eta(eta, sizeof eta, rate > 0 ? (b->njobs - b->done) / rate : -1);
      b->last_progress = t;
      progress_line("%zu/%zu files, %.1f files/s, ETA %s", b->done, b->njobs, rate, eta);
    }
  }
  pthread_mutex_unlock(&b->lock);
}

/* The message of a failed frame without the stream's "frame N: " (the file names it). */
static const char *frame_error(es_context *ctx, int status) {
  const char *m = es_context_error(ctx);
  if (!m || !*m) return es_strerror(status);
  if (!strncmp(m, "frame ", 6)) {
    const char *p = m + 6;
    while (*p >= '0' && *p <= '9') p++;
    if (p > m + 6 && p[0] == ':' && p[1] == ' ') return p + 2;
  }
  return m;
}

/* es_png_read_to's destination: the acquired frame, grown to the image's size. */
typedef struct frame_dest {
  es_context *ctx; /* whose message says why a reserve was refused */
  es_stream *st;
  es_frame *f;
} frame_dest;

static int frame_dest_fn(void *user, int width, int height, int depth, void **dst,
                         size_t *dst_stride, char *msg, size_t len) {
  frame_dest *d = user;
  int rc = es_stream_reserve(d->st, d->f, width, height, depth);
  if (rc == ES_ERR_NOMEM) {
    snprintf(msg, len, "out of memory for a %dx%d image", width, height);
    return rc;
  }
  if (rc != ES_OK) { /* a size no engine takes */
    snprintf(msg, len, "%s", es_context_error(d->ctx));
    return rc;
  }
  *dst = d->f->data;
  *dst_stride = d->f->stride;
  return ES_OK;
}

/* Decodes one file into a frame and pushes it. ES_OK when pushed (its encode worker ends the
 * job), else the job's status (JOB_SKIPPED or the error, already reported). */
static int decode_image(img_batch *b, img_job *j) {
  const cli_opts *o = b->o;
  char msg[MSG_LEN] = "";
  frame_dest d = {b->ctx, b->st, NULL};
  es_image img;
  int rc;

  j->t0 = now_s();
  if (j->failed) return j->failed; /* reported when it was found */
  if (j->out && b->out_kind != OUT_STDOUT && es_output_exists(j->out)) {
    if (o->skip) {
      if ((b->single || o->verbose) && !o->quiet) err(j->out, "exists, skipped");
      /* The statistics file still gets every image's record (SPEC 2: one a frame or image),
       * as a video's frames to a directory do: computed, not written. */
      if (!o->stats_path) return JOB_SKIPPED;
      j->keep = 1;
    } else if (!o->overwrite) {
      err(j->out, "exists (use -y to overwrite, -n to skip)");
      return ES_ERR_OUTPUT;
    }
  }
  rc = es_stream_acquire(b->st, &d.f);
  if (rc != ES_OK) return rc;
  rc = es_png_read_to(j->in, o->max_pixels, frame_dest_fn, &d, &img, NULL, msg, sizeof msg);
  if (rc != ES_OK) {
    err(j->in, "%s", *msg ? msg : es_strerror(rc));
  } else if ((rc = es_params_check(&o->cfg.params, img.depth, msg, sizeof msg)) != ES_OK) {
    err(j->in, "%s", msg);
  } else {
    d.f->user = j;
    rc = es_stream_push(b->st, d.f);
    if (rc == ES_OK) return ES_OK;
    err(j->in, "%s", frame_error(b->ctx, rc));
  }
  es_stream_release(b->st, d.f);
  return rc;
}

static void *img_decoder(void *arg) {
  img_batch *b = arg;
  for (;;) {
    img_job *j;
    int rc;
    pthread_mutex_lock(&b->lock);
    if (g_stop || b->next >= b->njobs) {
      pthread_mutex_unlock(&b->lock);
      break;
    }
    j = &b->jobs[b->next++];
    pthread_mutex_unlock(&b->lock);
    rc = decode_image(b, j);
    if (rc != ES_OK) job_done(b, j, rc);
  }
  pthread_mutex_lock(&b->lock);
  if (--b->decoders == 0) es_stream_finish(b->st);
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

/* Writes the result of one frame to its job's output. */
static int write_image(img_batch *b, img_job *j, const es_frame *f, char *msg, size_t len) {
  const cli_opts *o = b->o;
  int rc = ES_OK;
  switch (b->out_kind) {
  case OUT_PNG:
    rc = es_png_write(j->out, o->overwrite, f->width, f->height, b->pixfmt, f->pix.plane[0],
                      f->pix.stride[0], msg, len);
    break;
  case OUT_NPY:
    rc = es_npy_write(j->out, o->overwrite, f->width, f->height, f->map, f->map_stride, msg,
                      len);
    break;
  case OUT_STDOUT: {
    /* One frame of y4m (or raw float32), in the rendering the stream was opened with. */
    es_video_out *vo = NULL;
    es_video_out_opts vopt;
    memset(&vopt, 0, sizeof vopt);
    vopt.width = f->width;
    vopt.height = f->height;
    vopt.fps_num = 25;
    vopt.fps_den = 1;
    vopt.tb_num = 1;
    vopt.tb_den = 25;
    vopt.format = png_pixfmt(o->format);
    vopt.f32 = o->format == FMT_F32;
    vopt.crf = -1;
    vopt.overwrite = 1;
    rc = es_video_out_open(&vo, "-", &vopt, msg, len);
    if (rc == ES_OK && es_video_out_pixfmt(vo) != b->pixfmt) {
      snprintf(msg, len, "the writer wants another rendering");
      rc = ES_ERR_INTERNAL;
    }
    if (rc == ES_OK) rc = es_video_out_write(vo, &f->pix, f->map, f->map_stride, 0, msg, len);
    if (rc == ES_OK) rc = es_video_out_close(&vo, 1, msg, len);
    if (vo) es_video_out_close(&vo, 0, NULL, 0);
    break;
  }
  default: break;
  }
  return rc;
}

/* Ends the job of one pulled frame: reports a compute error, or writes and keeps the
 * statistics. Returns the job's status. */
static int finish_image(img_batch *b, img_job *j, const es_frame *f) {
  const cli_opts *o = b->o;
  char msg[MSG_LEN] = "";
  int rc = f->status;
  if (rc != ES_OK) {
    err(j->in, "%s", frame_error(b->ctx, rc));
    return rc;
  }
  if (o->stats_path) {
    /* Kept until the records are written in name order, so only what they hold. */
    int bins = f->stats.bins > 0 && f->stats.bins <= ES_STATS_MAX_BINS ? f->stats.bins : 0;
    size_t size = offsetof(es_stats, hist) + (size_t)bins * sizeof f->stats.hist[0];
    j->stats = malloc(size);
    if (!j->stats) {
      err(j->in, "out of memory");
      return ES_ERR_NOMEM;
    }
    memcpy(j->stats, &f->stats, size);
  }
  j->width = f->width;
  j->height = f->height;
  if (j->keep) return JOB_SKIPPED; /* -n: computed for its statistics, the file kept */
  rc = write_image(b, j, f, msg, sizeof msg);
  if (rc != ES_OK) {
    err(j->out ? j->out : "-", "%s", *msg ? msg : es_strerror(rc));
    return rc;
  }
  if (o->verbose && !o->quiet)
    err(j->in, "%dx%d, %.0f ms%s%s", f->width, f->height, (now_s() - j->t0) * 1e3,
        j->out ? " -> " : "", j->out ? j->out : "");
  pthread_mutex_lock(&b->lock);
  b->pixels += (int64_t)f->width * f->height;
  pthread_mutex_unlock(&b->lock);
  return ES_OK;
}

static void *img_encoder(void *arg) {
  img_batch *b = arg;
  es_frame *f;
  while (es_stream_pull(b->st, &f) == ES_OK) { /* ES_ERR_EOF: all files pushed are done */
    img_job *j = f->user;
    int rc = finish_image(b, j, f);
    es_stream_release(b->st, f);
    job_done(b, j, rc);
  }
  return NULL;
}

/* Starts n threads of fn (at least one, else 0 and none). Returns how many started. */
static int start_threads(pthread_t *th, int n, void *(*fn)(void *), void *arg) {
  int started = 0;
  for (int i = 0; i < n; i++) {
    if (pthread_create(&th[i], NULL, fn, arg) != 0) break;
    started++;
  }
  return started;
}

static int run_images(cli_opts *o, int in_kind, int out_kind) {
  img_batch b;
  img_job *jobs = NULL;
  size_t n = 0, cap = 0, unreadable = 0; /* unreadable: subdirectories that failed */
  es_stats_writer *sw = NULL;
  pthread_t *th = NULL;
  int nworkers = 0, ndec = 0, nenc = 0, code = 0, rc;
  char msg[MSG_LEN] = "";
  char outreal[PATH_MAX];
  const char *skip_dir = NULL;
  size_t made = 0; /* one image into a new directory: where the directories made start */
  int ncores = (int)sysconf(_SC_NPROCESSORS_ONLN);

  memset(&b, 0, sizeof b);
  pthread_mutex_init(&b.lock, NULL);
  if (ncores < 1) ncores = 1;

  /* The list of work, sorted so that stats come out in a stable order. */
  if (in_kind == IN_DIR) {
    if (out_kind != OUT_DIR && out_kind != OUT_NONE) {
      err(o->output, "a directory input needs a directory output");
      code = 1;
      goto end;
    }
    if (o->output && realpath(o->output, outreal)) skip_dir = outreal;
    rc = collect_pngs(o->input, "", o->recursive, skip_dir, &jobs, &n, &cap, &unreadable, msg,
                      sizeof msg);
    if (rc != ES_OK) {
      err(o->input, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    if (n) qsort(jobs, n, sizeof *jobs, job_cmp); /* jobs is NULL when n is 0 */
    for (size_t i = 0; i < n && o->output; i++) {
      char *rel = jobs[i].name;
      char *out;
      if (o->format == FMT_F32) { /* float maps go to .npy under the same name */
        size_t k = strlen(rel) - 3;
        char *r2 = malloc(k + 4);
        if (!r2) {
          code = 4;
          goto end;
        }
        memcpy(r2, rel, k);
        memcpy(r2 + k, "npy", 4);
        out = join(o->output, r2);
        free(r2);
      } else {
        out = join(o->output, rel);
      }
      if (!out) {
        code = 4;
        goto end;
      }
      jobs[i].out = out;
    }
    b.out_kind = o->output ? (o->format == FMT_F32 ? OUT_NPY : OUT_PNG) : OUT_NONE;
    /* Inputs whose outputs get one name (m.PNG and m.png both make m.npy): the first in name
     * order (of those not failed already) keeps it, the others fail, named. Both were
     * written at once: one map lost. */
    if (o->output && n > 1) {
      img_job **by_out = malloc(n * sizeof *by_out);
      if (!by_out) {
        code = 4;
        goto end;
      }
      for (size_t i = 0; i < n; i++) by_out[i] = &jobs[i];
      qsort(by_out, n, sizeof *by_out, job_out_cmp);
      const img_job *owner = NULL;
      for (size_t i = 0; i < n; i++) {
        img_job *j = by_out[i];
        if (owner && strcmp(j->out, owner->out)) owner = NULL;
        if (j->failed) continue;
        if (!owner) {
          owner = j;
          continue;
        }
        err(j->out, "also the output of %s (rename one of them)", owner->in);
        j->failed = ES_ERR_OUTPUT;
      }
      free(by_out);
    }
    if (n == 0 && !o->quiet) err(o->input, "no *.png files%s", o->recursive ? "" : " (-r descends)");
  } else {
    jobs = calloc(1, sizeof *jobs);
    if (!jobs) {
      code = 4;
      goto end;
    }
    n = 1;
    jobs[0].in = strdup(o->input);
    jobs[0].name = strdup(o->input);
    if (out_kind == OUT_DIR) {
      const char *base = strrchr(o->input, '/');
      base = base ? base + 1 : o->input;
      if (o->format == FMT_F32) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%.*s.npy", (int)(strlen(base) - 4), base);
        jobs[0].out = join(o->output, tmp);
        b.out_kind = OUT_NPY;
      } else {
        jobs[0].out = join(o->output, base);
        b.out_kind = OUT_PNG;
      }
    } else if (out_kind == OUT_PNG || out_kind == OUT_NPY) {
      jobs[0].out = strdup(o->output);
      b.out_kind = out_kind;
      if (out_kind == OUT_PNG && o->format == FMT_F32) {
        err(o->output, "--format f32 needs a .npy output (or -)");
        code = 1;
        goto end;
      }
    } else if (out_kind == OUT_STDOUT) {
      jobs[0].out = strdup("-");
      b.out_kind = OUT_STDOUT;
    } else if (out_kind == OUT_VIDEO) {
      err(o->output, "an image input needs a .png, .npy, directory or - output");
      code = 1;
      goto end;
    } else {
      b.out_kind = OUT_NONE;
    }
    if (!jobs[0].in || !jobs[0].name || (o->output && !jobs[0].out)) {
      code = 4;
      goto end;
    }
  }

  /* Never let an output replace an input of the run, its own or another's: an image written
   * into a directory (the input's own, or one a symlinked input points into), d/a.png and
   * d/d/a.png into the parent of d (./d/a.png is the first's input), and the statistics
   * file. The inputs' identities are sorted once, each output looked up in them. */
  {
    file_id *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t nid = 0;
    const file_id *hit = NULL;
    const char *bad = NULL;
    struct stat st;
    if (!ids) {
      code = 4;
      goto end;
    }
    for (size_t i = 0; i < n; i++) {
      if (stat(jobs[i].in, &st) != 0) continue;
      ids[nid].dev = st.st_dev;
      ids[nid].ino = st.st_ino;
      ids[nid++].job = i;
    }
    if (nid) qsort(ids, nid, sizeof *ids, file_id_cmp);
    for (size_t i = 0; i < n && !bad; i++)
      if (jobs[i].out && b.out_kind != OUT_STDOUT && stat(jobs[i].out, &st) == 0 &&
          (hit = find_file_id(ids, nid, &st)))
        bad = jobs[i].out;
    if (!bad && o->stats_path && strcmp(o->stats_path, "-") && stat(o->stats_path, &st) == 0 &&
        (hit = find_file_id(ids, nid, &st)))
      bad = o->stats_path;
    /* --stats - appended to an input (>> in/a.png), as main refuses it for one input. */
    if (!bad && o->stats_path && !strcmp(o->stats_path, "-") && fstat(1, &st) == 0 &&
        S_ISREG(st.st_mode) && (hit = find_file_id(ids, nid, &st))) {
      err("-", "standard output is the input %s itself (choose another output)",
          jobs[hit->job].in);
      free(ids);
      code = 1;
      goto end;
    }
    if (bad) err(bad, "is the input %s itself (choose another output)", jobs[hit->job].in);
    free(ids);
    if (bad) {
      code = 1;
      goto end;
    }
  }
  /* The statistics file first: one that cannot be written creates no output directory.
   * Unless it is to be inside that directory: then the directory is made first (and the
   * subdirectories below). */
  rc = stats_file_check(o);
  if (rc == STATS_REFUSED) {
    code = 3;
    goto end;
  }
  if (rc == STATS_SKIPPED && !o->output) goto end;
  /* One image into a directory the run makes: if nothing is written into it (a bad input,
   * an interrupt), the directory goes again at the end, as a failure leaves no file. */
  if (in_kind != IN_DIR && o->output && out_kind == OUT_DIR) made = first_missing(o->output);
  if (o->stats_path) {
    if (o->output && (out_kind == OUT_DIR || in_kind == IN_DIR) &&
        path_inside(o->output, o->stats_path))
      rc = stats_open_inside(o, o->output, &sw);
    else
      rc = stats_open(o, &sw);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
  }

  if (o->output && (out_kind == OUT_DIR || in_kind == IN_DIR)) {
    rc = make_out_dir(o->output);
    if (rc != ES_OK) {
      code = 3;
      goto end;
    }
    /* Subdirectories of a recursive batch. One that cannot be made is a failure of the
     * files under it, as an unwritable output file is (SPEC 3: the others are still done,
     * the summary counts them, exit 3). Each directory in the way is named once, whatever
     * the number of files and subdirectories under it (sorted names do not keep those
     * together: "a/b/x.png" < "a/c.png" < "a/d/y.png"). */
    {
      typedef struct {
        const char *path; /* into a job's out */
        size_t len;
      } bad_dir;
      bad_dir *bad = NULL; /* the directories that could not be made */
      size_t nbad = 0;
      for (size_t i = 0; i < n; i++) {
        char *slash = jobs[i].out ? strrchr(jobs[i].out, '/') : NULL;
        size_t dlen, at = 0;
        int under = 0;
        if (!slash || slash == jobs[i].out || jobs[i].failed) continue;
        dlen = (size_t)(slash - jobs[i].out);
        for (size_t k = 0; k < nbad && !under; k++)
          under = dlen >= bad[k].len && !strncmp(jobs[i].out, bad[k].path, bad[k].len) &&
                  (dlen == bad[k].len || jobs[i].out[bad[k].len] == '/');
        if (under) {
          jobs[i].failed = ES_ERR_OUTPUT;
          continue;
        }
        *slash = 0;
        rc = make_dirs(jobs[i].out, &at, NULL, msg, sizeof msg);
        if (rc != ES_OK) {
          char save = jobs[i].out[at];
          bad_dir *nb = realloc(bad, (nbad + 1) * sizeof *bad);
          jobs[i].out[at] = 0;
          err(jobs[i].out, "%s", msg);
          jobs[i].out[at] = save;
          jobs[i].failed = ES_ERR_OUTPUT;
          if (nb) {
            bad = nb;
            bad[nbad].path = jobs[i].out;
            bad[nbad++].len = at;
          }
        }
        *slash = '/';
      }
      free(bad);
    }
  }
  /* The stream: one frame per file at most, so a single image gets every core. What it
   * renders is what the outputs take: a PNG's pixels, the map of a .npy, or the frame the
   * standard-output writer wants (y4m: heat as 4:4:4, grey as mono; f32: the map). */
  {
    char cmsg[MSG_LEN] = "";
    es_config cfg = o->cfg;
    es_stream_config sc;
    cfg.queue = es_config_queue(&cfg);
    if (n < (size_t)cfg.queue) cfg.queue = n > 0 ? (int)n : 1;
    rc = es_context_create(&b.ctx, &cfg, cmsg, sizeof cmsg);
    if (rc != ES_OK) {
      err(NULL, "%s", *cmsg ? cmsg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    memset(&sc, 0, sizeof sc); /* max_width 0: frames grow to each image */
    if (b.out_kind == OUT_PNG)
      b.pixfmt = png_pixfmt(o->format);
    else if (b.out_kind == OUT_STDOUT && o->format != FMT_F32)
      b.pixfmt = o->format == FMT_HEAT ? ES_PIX_YUV444P : png_pixfmt(o->format);
    sc.want_map = b.out_kind == OUT_NPY || (b.out_kind == OUT_STDOUT && o->format == FMT_F32);
    sc.want_stats = o->stats_path != NULL;
    sc.render = o->render;
    sc.render.format = b.pixfmt;
    rc = es_stream_open(b.ctx, &sc, &b.st);
    if (rc != ES_OK) {
      const char *m = es_context_error(b.ctx);
      err(NULL, "%s", m && *m ? m : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    /* As many decoders and encoders as there are cores, files and frames to hold. */
    nworkers = ncores < cfg.queue ? ncores : cfg.queue;
    /* (es_context_config would wait for GPUs still opening.) */
    if (o->verbose && !o->quiet) {
      char d[64];
      err(NULL, "%zu file%s, %d in flight, %s", n, n == 1 ? "" : "s", cfg.queue,
          device_desc(b.ctx, d, sizeof d));
    }
  }
  b.o = o;
  b.single = in_kind != IN_DIR;
  b.jobs = jobs;
  b.njobs = n;
  b.t0 = now_s();
  b.show_progress = !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2))) && n > 1;
  th = calloc((size_t)nworkers * 2, sizeof *th);
  if (!th) {
    code = 4;
    goto end;
  }
  nenc = start_threads(th, nworkers, img_encoder, &b);
  b.decoders = nworkers; /* before any decoder can finish the stream */
  if (nenc > 0) ndec = start_threads(th + nenc, nworkers, img_decoder, &b);
  if (ndec < nworkers) {
    if (ndec == 0) {
      es_stream_abort(b.st);
      for (int i = 0; i < nenc; i++) pthread_join(th[i], NULL);
      err(NULL, "cannot start the worker threads");
      code = 4;
      goto end;
    }
    pthread_mutex_lock(&b.lock); /* the ones that did not start will not finish it */
    b.decoders -= nworkers - ndec;
    if (b.decoders == 0) es_stream_finish(b.st);
    pthread_mutex_unlock(&b.lock);
  }
  for (int i = 0; i < nenc + ndec; i++) pthread_join(th[i], NULL);
  main_writes(1); /* the statistics are written below (the stream's workers take signals) */
  clear_progress(); /* before the records (--stats - on the terminal) and the summary */

  /* Results in name order. */
  {
    size_t failed = 0, skipped = 0, notrun = 0;
    double el = now_s() - b.t0;
    es_stats rec; /* a kept record, whole again for the writer */
    for (size_t i = 0; i < n; i++) {
      img_job *j = &jobs[i];
      if (i >= b.next) {
        notrun++;
        continue;
      }
      if (j->status == JOB_SKIPPED) {
        skipped++;
        if (!j->stats) continue; /* -n with --stats: its record still goes in */
      } else if (j->status != ES_OK) {
        failed++;
        code = worse(code, es_exit_code(j->status));
        /* computed, but its map could not be written: the outputs fail one by one, as a
         * video's do, and its record still goes in */
        if (!j->stats) continue;
      }
      if (sw && j->stats) {
        memcpy(&rec, j->stats, offsetof(es_stats, hist));
        memcpy(rec.hist, (const char *)j->stats + offsetof(es_stats, hist),
               (size_t)rec.bins * sizeof rec.hist[0]);
        rc = es_stats_writer_add(sw, j->name, (int64_t)i, NAN, j->width, j->height, &rec, msg,
                                 sizeof msg);
        if (rc != ES_OK) {
          err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
          code = worse(code, es_exit_code(rc));
          es_stats_writer_close(&sw, 0, NULL, 0);
        }
      }
    }
    if (unreadable) code = worse(code, 2); /* each was reported when the list was made */
    if (sw) {
      rc = es_stats_writer_close(&sw, 1, msg, sizeof msg);
      if (rc != ES_OK) {
        err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
        code = worse(code, es_exit_code(rc));
      }
    }
    if (g_stop) {
      /* The summary of an interrupted batch; an interruption is no error (its exit code
       * says it), so -q silences it, as it does a video's. */
      code = 130;
      if (!o->quiet)
        err(NULL, "interrupted: %zu of %zu files done, %zu not started", b.done, n, notrun);
    } else if (!o->quiet) {
      char d[64];
      /* One file's failure was already said in its own line. */
      if (failed && n > 1) err(NULL, "%zu of %zu files failed", failed, n);
      if (unreadable)
        err(NULL, "%zu director%s could not be read", unreadable, unreadable == 1 ? "y" : "ies");
      {
        if (n == 1 && !failed && !skipped)
          err(NULL, "1 file, %dx%d, %.2f s, %s", jobs[0].width, jobs[0].height, el,
              device_desc(b.ctx, d, sizeof d));
        else if (n > 1 || (n == 1 && !b.single)) /* a batch of one tells its skip here */
          err(NULL, "%zu file%s, %zu written, %zu skipped, %zu failed, %.2f s, %.1f Mpixel/s, %s",
              n, n == 1 ? "" : "s", n - failed - skipped, skipped, failed, el,
              el > 0 ? b.pixels / el / 1e6 : 0.0, device_desc(b.ctx, d, sizeof d));
      }
    }
  }
end:
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  main_writes(0);
  /* (the image's writer has finished: its threads are joined) */
  if (made) remove_made_dirs(o->output, made); /* only those left empty */
  exit_if_gpus_opening(b.ctx, code);
  es_stream_destroy(&b.st);
  es_context_destroy(&b.ctx);
  for (size_t i = 0; i < n; i++) {
    free(jobs[i].in);
    free(jobs[i].name);
    free(jobs[i].out);
    free(jobs[i].stats);
  }
  free(jobs);
  free(th);
  pthread_mutex_destroy(&b.lock);
  return code;
}

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

/* Where an output of a video run failed: a frame index (>= 0), or one of these. */
enum { OUT_LIVE = -1, OUT_FAILED_AT_CLOSE = -2 };

/* Appends "OPT NAME at frame K" (or "when closed") to the summary's list of the outputs
 * that failed, "; failed: ..."; nothing for an output that did not fail. */
static void failed_note(char *buf, size_t len, const char *opt, const char *name, int64_t at) {
  size_t n = strlen(buf);
  char where[48];
  if (at == OUT_LIVE || n + 1 >= len) return;
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
  /* Frame 0 as run_video read it, lent, before the decode thread starts (which pushes it
   * first and clears first_lent); run_video gives it back where the thread never ran. */
  int first_lent;
  es_video_lent first;
  int64_t first_pts;
  double first_pts_seconds;
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
    if (g_stop || g_abort) {
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
    if (v->pushed == 0) es_trace("decode: first frame read");
    rc = es_stream_push(v->st, f);
    if (rc != ES_OK) break; /* the frame is still ours (entropy_stream.h) */
    f = NULL;
    v->pushed++;
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
} ctx_open;

static void *ctx_open_main(void *arg) {
  ctx_open *c = arg;
  es_trace("context: create");
  c->rc = es_context_create(&c->ctx, c->cfg, c->msg, sizeof c->msg);
  es_trace("context: created");
  return NULL;
}

/* The input failed before its first frame was had (at the open or the first read): reported,
 * and the exit code. A signal meanwhile made the pump close standard input, so the reader
 * saw an empty or short stream: that is the interruption, not bad input. */
static int input_failed(const cli_opts *o, const char *in_name, int rc, const char *msg) {
  if (g_stop) {
    if (!o->quiet) err(in_name, "interrupted before the first frame");
    return 130;
  }
  err(in_name, "%s", *msg ? msg : es_strerror(rc));
  return es_exit_code(rc);
}

static int run_video(cli_opts *o, int out_kind) {
  vid_run v;
  ctx_open co = {.cfg = &o->cfg};
  pthread_t cth;
  int cth_started = 0;
  es_context *ctx = NULL;
  es_video_out *vo = NULL;
  es_npy_stream *ns = NULL;
  es_stats_writer *sw = NULL;
  es_stream_config sc;
  es_video_in_opts vio;
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
    err(o->output, "a video input needs a video, .npy, directory or - output");
    return 1;
  }
  if (out_kind == OUT_VIDEO && o->format == FMT_F32) {
    err(o->output, "--format f32 needs a .npy, directory or - output");
    return 1;
  }
  if (o->raw && strcmp(o->input, "-")) {
    err(o->input, "--raw applies to standard input (-) only");
    return 1;
  }
  /* Refuse an existing output before any work. */
  if ((out_kind == OUT_VIDEO || out_kind == OUT_NPY) && es_output_exists(o->output)) {
    if (o->skip) {
      if (!o->quiet) err(o->output, "exists, skipped");
      if (!o->stats_path) return 0;
      out_kind = OUT_NONE; /* the statistics are still asked for: computed, nothing else */
    } else if (!o->overwrite) {
      err(o->output, "exists (use -y to overwrite, -n to skip)");
      return 3;
    }
  }
  if (o->stats_path && strcmp(o->stats_path, "-") && same_file(o->input, o->stats_path)) {
    err(o->stats_path, "is the input itself (choose another output)");
    return 1;
  }
  rc = stats_file_check(o);
  if (rc == STATS_REFUSED) return 3;
  if (rc == STATS_SKIPPED && out_kind == OUT_NONE) return 0;

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
  if (o->verbose && !o->quiet) {
    char len_s[48] = "length unknown"; /* raw H.264, pipes: the container does not say */
    if (v.info.frames > 0)
      snprintf(len_s, sizeof len_s, "%" PRId64 " frames (estimate)", v.info.frames);
    err(in_name, "%dx%d, %d-bit, %d/%d fps, %s", v.info.width, v.info.height, v.info.depth,
        v.info.fps_num, v.info.fps_den, len_s);
  }
  rc = es_params_check(&o->cfg.params, v.info.depth, msg, sizeof msg);
  if (rc != ES_OK) {
    err(in_name, "%s", msg);
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
  es_trace("video: first frame read");

  /* Outputs. The statistics file first, so that one that cannot be written leaves no
   * frame directory behind (as in run_images); where it lies inside that directory, with
   * it (stats_open_inside). */
  if (o->stats_path && !(out_kind == OUT_DIR && path_inside(o->output, o->stats_path))) {
    rc = stats_open(o, &sw);
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
    vopt.format = png_pixfmt(o->format);
    vopt.f32 = o->format == FMT_F32;
    vopt.codec = o->codec;
    vopt.crf = o->crf;
    vopt.preset = o->preset;
    vopt.overwrite = o->overwrite;
    vopt.display_matrix = v.info.has_display_matrix ? v.info.display_matrix : NULL;
    vopt.sar_num = v.info.sar_num;
    vopt.sar_den = v.info.sar_den;
    vopt.field_order = v.info.field_order;
    vopt.ts_discont = v.info.ts_discont;
    rc = es_video_out_open(&vo, o->output, &vopt, msg, sizeof msg);
    if (rc != ES_OK) {
      err(out_name, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    sc.render.format = es_video_out_pixfmt(vo);
    sc.want_map = sc.render.format == ES_PIX_NONE;
  } else if (out_kind == OUT_NPY) {
    rc = es_npy_stream_open(&ns, o->output, o->overwrite, v.info.width, v.info.height, msg,
                            sizeof msg);
    if (rc != ES_OK) {
      err(out_name, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    sc.want_map = 1;
  } else if (out_kind == OUT_DIR) {
    if (o->stats_path && path_inside(o->output, o->stats_path))
      rc = stats_open_inside(o, o->output, &sw);
    else
      rc = make_out_dir(o->output);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
    if (o->format == FMT_F32)
      sc.want_map = 1;
    else
      sc.render.format = frame_pixfmt = png_pixfmt(o->format);
  }
  if (sc.render.format != ES_PIX_NONE) {
    int fmt = sc.render.format;
    sc.render = o->render;
    sc.render.format = fmt;
  }
  sc.want_stats = sw != NULL;
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
    err(NULL, "%s", *co.msg ? co.msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  if (o->verbose && !o->quiet) {
    char d[64];
    err(NULL, "computing on %s", device_desc(ctx, d, sizeof d));
  }
  es_trace("video: context ready");
  atomic_store(&g_pin_ctx, ctx);
  rc = es_stream_open(ctx, &sc, &v.st);
  if (rc != ES_OK) {
    const char *m = es_context_error(ctx);
    err(NULL, "%s", m && *m ? m : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  es_trace("video: stream open");

  t0 = now_s();
  if (pthread_create(&th, NULL, decode_thread, &v) != 0) {
    err(NULL, "cannot start the decode thread");
    code = 4;
    goto end;
  }
  th_started = 1;
  main_writes(1); /* after the decode thread is made: it inherits the mask */

  {
    int show = !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2)));
    /* Outputs asked for; with none (no -o, no --stats) the frames are only computed. */
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
          err(NULL, "%s", m && *m ? m : es_strerror(rc));
          code = worse(code, es_exit_code(rc));
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
        err(what, "%s", m && *m ? m : es_strerror(f->status));
        code = worse(code, es_exit_code(f->status));
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
          snprintf(name, sizeof name, "frame_%06" PRId64 ".%s", f->index,
                   o->format == FMT_F32 ? "npy" : "png");
          path = join(o->output, name);
          what = path ? path : out_name;
          if (!path) {
            rc = ES_ERR_NOMEM;
          } else if (same_file(o->input, path)) {
            snprintf(msg, sizeof msg, "is the input itself (choose another output)");
            rc = ES_ERR_USAGE;
          } else if (o->skip && es_output_exists(path)) {
            skipped++;
            rc = ES_OK;
          } else if (!o->overwrite && es_output_exists(path)) {
            snprintf(msg, sizeof msg, "exists (use -y to overwrite, -n to skip)");
            rc = ES_ERR_OUTPUT;
          } else if (o->format == FMT_F32) {
            rc = es_npy_write(path, o->overwrite, f->width, f->height, f->map, f->map_stride,
                              msg, sizeof msg);
          } else {
            rc = es_png_write(path, o->overwrite, f->width, f->height, frame_pixfmt,
                              f->pix.plane[0], f->pix.stride[0], msg, sizeof msg);
          }
        }
        if (rc == ES_OK) {
          took = 1;
        } else {
          /* Its partial file goes now; a directory keeps the frames written before. */
          err(what ? what : "-", "%s", *msg ? msg : es_strerror(rc));
          code = worse(code, es_exit_code(rc));
          out_failed = f->index;
          es_video_out_close(&vo, 0, NULL, 0);
          es_npy_stream_close(&ns, 0, NULL, 0);
        }
        free(path);
      }
      if (sw) {
        msg[0] = 0;
        if (stats_tty) {
          clear_progress();
          last = 0; /* drawn again below the record */
        }
        rc = es_stats_writer_add(sw, NULL, f->index, f->pts_seconds, f->width, f->height,
                                 &f->stats, msg, sizeof msg);
        if (rc == ES_OK) {
          took = 1;
        } else {
          err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
          code = worse(code, es_exit_code(rc));
          stats_failed = f->index;
          es_stats_writer_close(&sw, 0, NULL, 0);
        }
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
        double t = now_s();
        if (t - last > 0.2) {
          double el = t - t0, fps = el > 0 ? written / el : 0;
          char eta[32];
          last = t;
          /* None left is 0:00, whatever the rate ("7/7 frames, ETA ?" said nothing true). */
          fmt_eta(eta, sizeof eta,
                  v.info.frames == written            ? 0
                  : v.info.frames > written && fps > 0 ? (v.info.frames - written) / fps
                                                       : -1);
          /* The count is the container's estimate (a duration times the frame rate): past
           * it, it was wrong, and "205/125 frames, ETA ?" says nothing true. */
          if (v.info.frames > 0 && v.info.frames >= written)
            progress_line("%" PRId64 "/%" PRId64 " frames, %.1f fps, ETA %s", written,
                          v.info.frames, fps, eta);
          else
            progress_line("%" PRId64 " frame%s, %.1f fps", written, written == 1 ? "" : "s",
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
      code = worse(code, 130);
    } else {
      err(in_name, "%s", *v.read_msg ? v.read_msg : es_strerror(v.read_status));
      code = worse(code, es_exit_code(v.read_status));
    }
  }
  /* Corrupt packets are skipped and the rest kept (SPEC 3); where nothing was left, the
   * input is as good as unreadable: an input error, the empty outputs kept as a short
   * first frame leaves them. */
  if (v.read_status == ES_OK && !stopped && !g_stop && v.pushed == 0 &&
      es_video_in_corrupt(v.vin) > 0) {
    int64_t nc = es_video_in_corrupt(v.vin);
    err(in_name, "no frame could be decoded (%" PRId64 " corrupt packet%s skipped)", nc,
        nc == 1 ? "" : "s");
    code = worse(code, 2);
  }
  if (g_stop) code = 130;

  /* Close the outputs still open (a failed one was closed when it failed): committed
   * unless a frame or the stream failed. */
  {
    int commit = !fatal;
    if (vo) {
      rc = es_video_out_close(&vo, commit, msg, sizeof msg);
      if (rc != ES_OK && commit) {
        err(out_name, "%s", *msg ? msg : es_strerror(rc));
        code = worse(code, es_exit_code(rc));
        out_failed = OUT_FAILED_AT_CLOSE;
      }
    }
    if (ns) {
      rc = es_npy_stream_close(&ns, commit, msg, sizeof msg);
      if (rc != ES_OK && commit) {
        err(out_name, "%s", *msg ? msg : es_strerror(rc));
        code = worse(code, es_exit_code(rc));
        out_failed = OUT_FAILED_AT_CLOSE;
      }
    }
    if (sw) {
      /* The records of the frames written are kept, as the maps are. */
      rc = es_stats_writer_close(&sw, commit, msg, sizeof msg);
      if (rc != ES_OK && commit) {
        err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
        code = worse(code, es_exit_code(rc));
        stats_failed = OUT_FAILED_AT_CLOSE;
      }
    }
  }
  es_trace("video: outputs closed");
  {
    double el = now_s() - t0;
    int64_t corrupt = es_video_in_corrupt(v.vin), flagged = es_video_in_flagged(v.vin),
            prekey = es_video_in_prekey(v.vin), dropped = es_video_in_dropped(v.vin);
    char d[64], extra[256] = "", skips[64] = "", failed[640] = "";
    failed_note(failed, sizeof failed, "-o", out_name, out_failed);
    failed_note(failed, sizeof failed, "--stats", o->stats_path, stats_failed);
    if (skipped > 0) /* not claimed as written */
      snprintf(skips, sizeof skips, " (%" PRId64 " skipped: exist)", skipped);
    if (corrupt > 0)
      snprintf(extra, sizeof extra, ", %" PRId64 " corrupt packet%s skipped", corrupt,
               corrupt == 1 ? "" : "s");
    if (flagged > 0) /* decoded as ffmpeg does; damage found in them is among the corrupt */
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
    clear_progress();
    if (!o->quiet || corrupt > 0 || flagged > 0 || dropped > 0)
      err(NULL, "%" PRId64 " frame%s%s, %dx%d, %.2f s, %.1f fps, %s%s%s%s", written,
          written == 1 ? "" : "s", skips, v.info.width, v.info.height, el,
          el > 0 ? written / el : 0.0, device_desc(ctx, d, sizeof d), extra,
          code == 130 ? ", interrupted" : "", failed);
  }

end:
  main_writes(0);
  if (fifo_fd >= 0) close(fifo_fd);
  if (cth_started) pthread_join(cth, NULL);
  if (th_started) {
    es_stream_abort(v.st);
    pthread_join(th, NULL);
  }
  if (vo) es_video_out_close(&vo, 0, NULL, 0);
  if (ns) es_npy_stream_close(&ns, 0, NULL, 0);
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  exit_if_gpus_opening(ctx ? ctx : co.ctx, code);
  es_context_destroy(&co.ctx);
  es_stream_destroy(&v.st);   /* gives lent frames back to the reader */
  if (v.first_lent) es_video_in_unlend(v.first.ref); /* frame 0, never pushed */
  es_video_in_close(&v.vin);  /* frees (and unpins) its buffers, while the context lives */
  atomic_store(&g_pin_ctx, NULL);
  es_context_destroy(&ctx);
  es_trace("video: all freed");
  return code;
}

/* A standard descriptor closed when we start (`>&-`) would be handed to the next file
 * opened - an output's temporary, or a device the CUDA driver opens - and what is meant for
 * standard output written into it (`-o x.npy --stats - >&-` wrote the CSV into the .npy,
 * exit 0). Each closed one is taken by /dev/null opened the other way round (stdin for
 * writing, stdout and stderr for reading), so that using it still fails as a closed one
 * does (EBADF) and no file gets its number. */
static void hold_closed_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (got >= 0 && got != fd) { /* a lower one was free after all: not ours to keep */
      close(got);
    }
  }
}

int main(int argc, char **argv) {
  cli_opts o;
  int rc, in_kind, out_kind;
  struct stat st;

  hold_closed_std_fds();
  es_trace("main");
  memset(&o, 0, sizeof o);
  es_config_default(&o.cfg);
  es_render_default(&o.render);
  o.format = FMT_HEAT;
  o.crf = -1;
  o.max_pixels = INT64_C(1) << 31;
  o.progress = -1;

  rc = parse_args(argc, argv, &o);
  if (rc == -2) { /* --help, --version: written, or a write error (a full disk, no stdout) */
    if (fflush(stdout) != 0 || ferror(stdout)) {
      err("-", "write error: %s", strerror(errno));
      return 3;
    }
    return 0;
  }
  if (rc) return 1;
  /* SVT-AV1 (--codec libsvtav1) prints a 12-line banner and its errors to stderr past
   * libavutil's log; only its environment variable quiets it, and setenv is safe only
   * before any thread starts. Our own message reports a failure. A user's SVT_LOG stays. */
  setenv("SVT_LOG", "0", 0);
  o.cfg.verbose = o.quiet ? 0 : o.verbose ? 2 : 1;
  o.cfg.message = lib_message;
  /* CUDA start-up (a few hundred ms) overlaps the first frames, computed on the CPU. */
  o.cfg.gpu_background = 1;
  /* ES_GPU_SYNC=block: threads waiting for a GPU sleep instead of spinning, leaving the
   * cores to the decoder and encoder. Off by default: on the H100 machine it measured no
   * steady gain either way (tools/BENCHMARKS.md S7). */
  {
    const char *gs = getenv("ES_GPU_SYNC");
    o.cfg.gpu_blocking_sync = gs && !strcmp(gs, "block");
  }

  /* What the input is. */
  if (!strcmp(o.input, "-")) {
    in_kind = IN_VIDEO;
  } else if (stat(o.input, &st) != 0) {
    err(o.input, "%s", strerror(errno));
    return 2;
  } else if (S_ISDIR(st.st_mode)) {
    in_kind = IN_DIR;
  } else if (!strcasecmp(ext_of(o.input), "png")) {
    /* A FIFO, socket or device named *.png is refused, as in a directory: open() would block
     * a worker until a writer comes, beyond the reach of SIGINT, and a PNG is decoded whole,
     * so a pipe brings nothing a file does not. */
    if (!S_ISREG(st.st_mode)) {
      err(o.input, "not a regular file");
      return 2;
    }
    in_kind = IN_PNG;
  } else {
    in_kind = IN_VIDEO;
  }
  /* -r with a file or standard input would be ignored (and to an FFmpeg user -r is a frame
   * rate): refused as the other options a run would ignore. */
  if (o.recursive && in_kind != IN_DIR) {
    err(o.input, "-r: only for a directory input");
    return 1;
  }
  out_kind = out_kind_of(o.output);
  /* A directory input writes a directory: a name like heat.v2 can only be that. */
  if (out_kind < 0 && in_kind == IN_DIR) out_kind = OUT_DIR;
  /* A name without an extension is a directory to make; but an existing device or FIFO
   * (-o /dev/null, as ffmpeg's -f null) was refused as "exists and is not a directory" (exit
   * 3), which says nothing of what to do. Such a file is written into directly only where
   * its name gives the output type (x.npy, x.mkv); without one, say so. */
  if (out_kind == OUT_DIR && o.output[strlen(o.output) - 1] != '/') {
    struct stat ost;
    if (stat(o.output, &ost) == 0 && !S_ISDIR(ost.st_mode) && !S_ISREG(ost.st_mode)) {
      const char *what = S_ISCHR(ost.st_mode) ? "character device" : S_ISBLK(ost.st_mode)
                         ? "block device" : S_ISFIFO(ost.st_mode) ? "FIFO" : "socket";
      if (in_kind == IN_DIR)
        err(o.output, "is a %s: a directory input needs a directory output (without -o only "
            "--stats is written)", what);
      else
        err(o.output, "is a %s, and without an extension its output type is unknown (without "
            "-o only --stats is written; -o - writes y4m, or --format f32, to standard output)",
            what);
      return 1;
    }
  }
  if (out_kind < 0) {
    err(o.output, "unknown output type (use .png, .npy, a video extension, a directory or -)");
    return 1;
  }
  if (out_kind == OUT_NPY && o.format_set && o.format != FMT_F32) {
    /* It would be ignored: a .npy holds the float32 map whatever --format says. */
    err(NULL, "--format %s: a .npy output is always float32 (use f32, or a .png output)",
        fmt_names[o.format]);
    return 1;
  }
  if (o.render.overlay_on && (out_kind == OUT_NPY || o.format == FMT_F32)) {
    /* It would be ignored too: float32 maps are the values, never a picture. */
    err(NULL, "--overlay: only for pictures (heat or gray8), not float32 maps");
    return 1;
  }
  /* Options the output given would ignore, as the two above (no encoder runs but for a
   * video file: standard output is y4m or raw float32, as a .y4m file is). Without -o they
   * are let be, as --format is: a run for --stats alone may share a rendering run's options. */
  if (o.output && out_kind != OUT_VIDEO && (o.codec || o.crf >= 0 || o.preset)) {
    err(NULL, "%s: only for a video file output (x.mp4, x.mkv, ...)",
        o.codec ? "--codec" : o.crf >= 0 ? "--crf" : "--preset");
    return 1;
  }
  if (o.output && o.colormap_set && (out_kind == OUT_NPY || o.format != FMT_HEAT)) {
    err(NULL, "--colormap: only for --format heat (the output is %s)",
        out_kind == OUT_NPY ? "float32" : fmt_names[o.format]);
    return 1;
  }
  if (o.output && o.range_set && (out_kind == OUT_NPY || o.format == FMT_F32)) {
    err(NULL, "--range: only for pictures (heat, gray8, gray16), not float32 maps");
    return 1;
  }
  if (o.raw && in_kind != IN_VIDEO) {
    err(o.input, "--raw applies to standard input (-) only");
    return 1;
  }
  if (o.stats_path && out_kind == OUT_STDOUT && !strcmp(o.stats_path, "-")) {
    err(NULL, "--stats - and -o -: both would write to standard output");
    return 1;
  }
  if (out_kind == OUT_STDOUT && isatty(1)) {
    err("-", "standard output is a terminal (pipe it into a program or a file)");
    return 1;
  }
  if (!strcmp(o.input, "-") && isatty(0)) { /* no frames come from a keyboard: it would wait */
    err("-", "standard input is a terminal (pipe frames into it or redirect a file)");
    return 1;
  }
  /* Never let an output replace its own input (-y would destroy it), standard input's file
   * included. */
  if (o.output && strcmp(o.output, "-") && same_file(o.input, o.output)) {
    err(o.output, "is the input itself (choose another output)");
    return 1;
  }
  /* Nor standard output be the input ('in.y4m -o - >> in.y4m'): the run read what it wrote,
   * and frames of the input's size go on as one stream, so it never ended; '--stats - >>'
   * wrote onto the input. Refused, as cat refuses it. A directory's files: run_images. */
  if ((out_kind == OUT_STDOUT || (o.stats_path && !strcmp(o.stats_path, "-"))) &&
      in_kind != IN_DIR && stdout_is(o.input)) {
    if (!strcmp(o.input, "-"))
      err("-", "standard output is the file on standard input (choose another output)");
    else
      err("-", "standard output is the input %s itself (choose another output)", o.input);
    return 1;
  }
  /* Without FFmpeg no video or standard input can be read: said at once, in one line (it
   * went through the run's whole setup, and an empty stdin said "no data" instead). */
  if (in_kind == IN_VIDEO && !es_video_built()) {
    err(o.input, "built without FFmpeg: cannot read video or standard input");
    return 2;
  }
  install_signals();
  if (in_kind == IN_VIDEO) return run_video(&o, out_kind);
  return run_images(&o, in_kind, out_kind);
}
