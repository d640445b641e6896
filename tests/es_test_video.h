/*
 * es_test_video.h - helpers for the video tests: run the ffmpeg/ffprobe programs, read files,
 * and feed standard input from a pipe (a child process writes, so the input is a real,
 * unseekable pipe as in `cat clip | entropy-stream -`).
 */
#ifndef ES_TEST_VIDEO_H
#define ES_TEST_VIDEO_H

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "es_test.h"

/* 77 unless the build has FFmpeg and the ffmpeg/ffprobe programs run. */
static inline int tv_need_ffmpeg(const char *name) {
  const char *h = getenv("ES_HAVE_FFMPEG");
  if (h && !strcmp(h, "0")) {
    printf("%s: built without FFmpeg: skipped\n", name);
    return 0;
  }
  if (system("ffmpeg -version >/dev/null 2>&1") != 0 ||
      system("ffprobe -version >/dev/null 2>&1") != 0) {
    printf("%s: no ffmpeg/ffprobe program: skipped\n", name);
    return 0;
  }
  return 1;
}

/* ---- What this FFmpeg can do. A minimal build (the GPU machine's) lacks many muxers,
 * demuxers, filters and encoders: the cases that need one skip with a note saying which,
 * everything else still runs. */

/* 1 when `ffmpeg -<kind>` (kind: muxers, demuxers, filters, encoders, decoders) lists name
 * (a demuxer line may list several names: "matroska,webm"). */
static inline int tv_ffmpeg_has(const char *kind, const char *name) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "ffmpeg -hide_banner -%s 2>/dev/null | awk -v n='%s' "
           "'{ k = split($2, a, \",\"); for (i = 1; i <= k; i++) if (a[i] == n) f = 1 } "
           "END { exit !f }'",
           kind, name);
  fflush(stdout);
  int st = system(cmd);
  return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Prints "NAME: skipped: no WHAT in this FFmpeg" and returns 0 when the capability is
 * missing; 1 when it is there. */
static inline int tv_ffmpeg_need(const char *test, const char *kind, const char *name,
                                 const char *what) {
  if (tv_ffmpeg_has(kind, name)) return 1;
  printf("%s: skipped: no %s in this FFmpeg\n", test, what);
  return 0;
}

#ifdef ES_HAVE_FFMPEG
#include <libavformat/avformat.h>
/* 1 when the libavformat the library is linked with has the muxer `name`. */
static inline int tv_lavf_has_muxer(const char *name) {
  return av_guess_format(name, NULL, NULL) != NULL;
}
/* 1 when that libavformat has the demuxer `name`. */
static inline int tv_lavf_has_demuxer(const char *name) {
  return av_find_input_format(name) != NULL;
}
/* 1 when the libavcodec the library is linked with has the encoder `name`. */
static inline int tv_lavc_has_encoder(const char *name) {
  return avcodec_find_encoder_by_name(name) != NULL;
}
#else
static inline int tv_lavf_has_muxer(const char *name) { return name && 0; }
static inline int tv_lavf_has_demuxer(const char *name) { return name && 0; }
static inline int tv_lavc_has_encoder(const char *name) { return name && 0; }
#endif

/* Runs a shell command built like printf; returns its exit status (-1 on failure). */
static inline int tv_sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  fflush(stdout);
  int st = system(cmd);
  if (st == -1 || !WIFEXITED(st)) return -1;
  if (WEXITSTATUS(st)) fprintf(stderr, "command failed (%d): %s\n", WEXITSTATUS(st), cmd);
  return WEXITSTATUS(st);
}

/* The standard output of a shell command (malloc'd, NUL-terminated) or NULL. */
static inline char *tv_capture(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  fflush(stdout);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (cap - n < 2) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  pclose(p);
  if (buf) buf[n] = 0;
  return buf;
}

static inline uint8_t *tv_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) *size = (size_t)n;
  return buf;
}

static inline int tv_write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, size, f);
  return fclose(f) == 0 && w == size ? 0 : -1;
}

static inline int tv_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Number of entries in a directory other than . and .. */
static inline int tv_dir_entries(const char *dir) {
  char *out = tv_capture("ls -A '%s' | wc -l", dir);
  int n = out ? atoi(out) : -1;
  free(out);
  return n;
}

/* Makes fd 0 the read end of a pipe that a child fills with data (then closes).
 * Returns the child's pid; *saved is a copy of the old fd 0 for tv_stdin_restore. */
static inline pid_t tv_stdin_pipe(const void *data, size_t size, int *saved) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    signal(SIGPIPE, SIG_DFL);
    const uint8_t *p = data;
    while (size > 0) {
      ssize_t w = write(fds[1], p, size);
      if (w <= 0) _exit(1);
      p += w;
      size -= (size_t)w;
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  *saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  return pid;
}

/* Standard input from a regular file: `skip` bytes of junk, then data, with fd 0 left at
 * offset `skip` (as `(head -c N >/dev/null; prog) < file` leaves it). Returns 0 (for
 * tv_stdin_restore) or -1; *saved as for tv_stdin_pipe. */
static inline pid_t tv_stdin_file(const char *path, const void *data, size_t size, size_t skip,
                                  int *saved) {
  FILE *f = fopen(path, "wb");
  int ok = f != NULL;
  for (size_t i = 0; ok && i < skip; i++) ok = fputc('J', f) != EOF;
  if (ok && size) ok = fwrite(data, 1, size, f) == size;
  if (f && fclose(f) != 0) ok = 0;
  int fd = ok ? open(path, O_RDONLY) : -1;
  if (fd < 0 || lseek(fd, (off_t)skip, SEEK_SET) != (off_t)skip) {
    if (fd >= 0) close(fd);
    *saved = -1;
    return -1;
  }
  *saved = dup(0);
  dup2(fd, 0);
  close(fd);
  return 0;
}

static inline void tv_stdin_restore(pid_t pid, int saved) {
  dup2(saved, 0);
  close(saved);
  if (pid > 0) {
    kill(pid, SIGTERM); /* if the reader stopped early the writer may still be blocked */
    waitpid(pid, NULL, 0);
  }
}

#endif
