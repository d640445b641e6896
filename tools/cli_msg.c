/*
 * cli_msg.c - what the command-line program tells the user and how it stops: the SIGINT and
 * SIGTERM handler and its flags, one-line messages and the progress line on standard error
 * (also the library's messages), and the end of a run (its exit code; the early exit while
 * the GPUs are still opening).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

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
atomic_int g_stop;
static atomic_int g_stop_pid;     /* the first signal's sending process (0: the kernel, a tty) */
static atomic_llong g_stop_ns;    /* when it came (CLOCK_MONOTONIC) */
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

void cli_install_signals(void) {
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
void cli_main_writes(int begin) {
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

const char *cli_flag(const char *param, char *buf, size_t len) {
  size_t at = 0;
  for (; at < 2 && at + 1 < len; at++) buf[at] = '-';
  for (; *param && at + 1 < len; param++) buf[at++] = *param == '_' ? '-' : *param;
  buf[at] = 0;
  return buf;
}

/* The library's messages name parameters ("window 4: must be odd, 1..255", "no GPU visible
 * (device gpu)", "image is 9 x 9 = 81 pixels, more than max_pixels 80"); ours name flags.
 * A name is given its flag only where the library's wording puts a reference, never for
 * being a word: "no band 3: the image has 1", "level 3 is 4000 x 3000", "the slide has levels
 * 0..2", "no crf option" and "raw frames" are prose. The rule, exactly:
 *   - at a clause's start - the line's start, after "(", after " or ", and after ": " (the
 *     library's run says "NAME: message" of a file, es_run_say) - a parameter's name
 *     (es_param_ref's table) followed by ':' ("crf: ...") or ')' ("raw frames: raw)"), or by
 *     " VALUE" where VALUE, up to the next space, ends in ':' or ')' ("level 3: ...",
 *     "(band 0..2)") or is followed by " or " ("preset fast or crf 20: ..."); a name
 *     holding '_', which no word of prose does, followed by a space ("pix_fmt applies ...");
 *   - after "than " or "exceeds ", a limit's name and its number ("more than max_pixels 80").
 * Why this does not reach a user's path or value: each place is the library's own wording
 * before the name, and a path or value comes after it ("preset VALUE:", "PATH: message");
 * so one is rewritten only if it itself holds such a place and form (a file named
 * "x: level 3: y", a --preset named "a or crf 3:"), and then the flag it gets still
 * reads as what the user typed. The file a message is about (cli_err's `what`) is never
 * rewritten. */
static int follows(const char *in, const char *p, const char *word) {
  size_t k = strlen(word);
  return (size_t)(p - in) >= k && !strncmp(p - k, word, k);
}

/* The length of a parameter's name (es_param_ref's table) at p, as a whole word (followed
 * by ' ', ':', ')' or the end); 0 for any other word. */
static size_t name_at(const char *p) {
  char probe[40];
  size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
  if (!n || n + 2 > sizeof probe || (p[n] && p[n] != ' ' && p[n] != ':' && p[n] != ')'))
    return 0;
  memcpy(probe, p, n);
  memcpy(probe + n, ":", 2);
  return es_param_ref(probe) == n ? n : 0;
}

/* The length of the name to map at p in the line in (the rule above), or 0. */
static size_t ref_at(const char *in, const char *p) {
  const int clause = p == in || p[-1] == '(' || follows(in, p, " or ") || follows(in, p, ": ");
  const int limit = follows(in, p, "than ") || follows(in, p, "exceeds ");
  size_t n = clause || limit ? name_at(p) : 0;
  if (!n) return 0;
  if (limit) return p[n] == ' ' && p[n + 1] >= '0' && p[n + 1] <= '9' ? n : 0;
  if (p[n] == ':' || p[n] == ')') return n;
  if (p[n] != ' ') return 0;
  if (memchr(p, '_', n)) return n;
  const char *v = p + n + 1, *end = v + strcspn(v, " ");
  if (end == v) return 0; /* "shard : ...": an empty value */
  if (end[-1] == ':' || end[-1] == ')') return n;
  return !strncmp(end, " or ", 4) ? n : 0;
}

static void flags_for_params(const char *in, char *out, size_t cap) {
  size_t at = 0;
  for (const char *p = in; *p && at + 1 < cap;) {
    size_t n = ref_at(in, p);
    if (n) {
      char name[64], flag[72];
      snprintf(name, sizeof name, "%.*s", (int)n, p);
      cli_flag(name, flag, sizeof flag);
      at += (size_t)snprintf(out + at, cap - at, "%s", flag);
      p += n;
      continue;
    }
    out[at++] = *p++;
  }
  out[at < cap ? at : cap - 1] = 0;
}

void cli_err(const char *what, const char *fmt, ...) {
  va_list ap;
  char text[PATH_MAX + 1024]; /* may name a file too: "also the output of PATH (...)" */
  char line[sizeof text + 256];
  char out[4 * (PATH_MAX + sizeof line) + 8]; /* every byte escaped as \xHH still fits */
  size_t at = 0;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  flags_for_params(text, line, sizeof line);
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

void cli_progress_line(const char *fmt, ...) {
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
void cli_clear_progress(void) {
  pthread_mutex_lock(&g_err_lock);
  clear_progress_locked();
  pthread_mutex_unlock(&g_err_lock);
}

/* The library's messages (es_config.message): lines like ours, a progress line cleared
 * first. */
void cli_lib_message(void *user, const char *line) {
  (void)user;
  cli_err(NULL, "%s", line);
}

double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The exit code of a run: interrupted wins, then the worst of the failures. */
int cli_worse(int code, int other) {
  if (code == 130 || other == 130) return 130;
  return other > code ? other : code;
}

int cli_fail(const char *what, int rc, const char *msg) {
  cli_err(what, "%s", msg && *msg ? msg : es_strerror(rc));
  return es_exit_code(rc);
}

/* The run is over (every output closed, every message printed) while the GPUs are still
 * opening in the background: nothing ran on them, so instead of waiting for CUDA to finish
 * starting only to tear it down (0.3-0.6 s on the GPU machines, longer than a short batch
 * takes on the CPU), the process ends here and the system reclaims everything. */
void cli_exit_if_gpus_opening(es_context *ctx, int code) {
  if (!ctx || es_context_gpus_open(ctx)) return;
  /* the line es_ctx_unref traces, which this exit skips (test_gpu_cli reads it) */
  es_trace("context: done, %lld job(s) retried", (long long)es_context_retries(ctx));
  es_trace("exit while the GPUs are still opening");
  fflush(NULL);
  _exit(code);
}

void cli_fmt_eta(char *buf, size_t len, double s) {
  if (!(s >= 0) || s > 1e7)
    snprintf(buf, len, "?");
  else if (s >= 3600)
    snprintf(buf, len, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
  else
    snprintf(buf, len, "%d:%02d", (int)s / 60, (int)s % 60);
}

/* The line a run with neither -o nor --stats prints for each image or frame, as ffprobe
 * prints what it found (the run computed and wrote nothing before: no feedback at all):
 *   camera.png: 512x512, H mean 4.1265 std 1.7120 min 0.9397 max 7.1128 bits, global
 *   entropy 7.2317 bits (levels 3.9873 bits)
 * (one line; a frame is "clip.mp4 frame 3 at 0.120 s: ..."). H is in the --base unit; the
 * global entropies are bits. The name is escaped as cli_err's are. --stats - is the form
 * for programs. */
void cli_stats_line(const char *name, int64_t index, double pts, int width, int height,
                    const es_stats *st, int base) {
  char nm[4 * PATH_MAX + 8];
  size_t at = 0;
  const char *unit = base == ES_BASE_E ? "nats" : "bits";
  escape_into(nm, sizeof nm, &at, name);
  if (index >= 0) {
    if (pts == pts) /* a frame's time where it has one */
      printf("%s frame %" PRId64 " at %.3f s: ", nm, index, pts);
    else
      printf("%s frame %" PRId64 ": ", nm, index);
  } else {
    printf("%s: ", nm);
  }
  printf("%dx%d, H mean %.4f std %.4f min %.4f max %.4f %s, global entropy %.4f bits "
         "(levels %.4f bits)\n",
         width, height, st->mean, st->std, (double)st->min, (double)st->max, unit,
         st->global_entropy, st->global_entropy_levels);
}
