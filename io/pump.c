/*
 * pump.c - standard input and FIFOs through a pump thread (es_pump.h says why). When stdin
 * is a pipe, tty or socket, a thread copies it into a pipe of our own that replaces fd 0; it
 * polls with a timeout, and on a stop closes its end: the decoder sees EOF, the frames in
 * flight are finished and the outputs closed properly. Regular files are read directly (a
 * demuxer may need to seek in them). The pump's state is shared by its thread and the
 * source that reads it, and freed by whichever lets go of it last.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "es_pump.h"
#include "es_types.h"

struct es_pump {
  /* Immutable once the thread runs. */
  int src;         /* the real input (a dup of stdin, or the FIFO), owned by the thread */
  int dst;         /* write end of our pipe, owned by the thread */
  int src_is_pipe; /* splice can move the data */
  int keep;        /* FIFO: the read end kept until the reader opened it (-1: none) */
  /* Written by the thread before it closes dst, so before the reader sees the end. */
  atomic_int read_errno; /* a read error of the pump: the end the reader sees is that error */
  atomic_int empty;      /* the input ended before its first byte */
  /* Guarded by lock. */
  pthread_mutex_t lock;
  int refs;              /* the thread and the source */
  int released;          /* the source let go: stopped() is no longer to be called */
  int (*stopped)(void *);
  void *arg;
};

static void pump_unref(es_pump *p) {
  pthread_mutex_lock(&p->lock);
  int left = --p->refs;
  pthread_mutex_unlock(&p->lock);
  if (left) return;
  if (p->keep >= 0) close(p->keep);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* The thread's test: the source let go, or the run is stopping. */
static int pump_stopping(es_pump *p) {
  pthread_mutex_lock(&p->lock);
  int s = p->released || (p->stopped && p->stopped(p->arg));
  pthread_mutex_unlock(&p->lock);
  return s;
}

static void *pump_thread(void *arg) {
  es_pump *p = arg;
  size_t cap = 1 << 20;
  char *buf = malloc(cap);
  /* Pipe to pipe, splice moves page references instead of copying twice through buf. */
  int use_splice = p->src_is_pipe;
  int moved = 0; /* a byte went through */
  while (buf && !pump_stopping(p)) {
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
        if (!moved) atomic_store(&p->empty, 1);
        break;
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno != EINVAL && errno != ENOSYS) { /* EPIPE: the decoder is gone */
        if (errno != EPIPE) atomic_store(&p->read_errno, errno);
        break;
      }
      use_splice = 0; /* not supported here: copy */
      continue;
    }
    n = read(p->src, buf, cap);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (n < 0) atomic_store(&p->read_errno, errno);
      if (n == 0 && !moved) atomic_store(&p->empty, 1);
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
  pump_unref(p);
  return NULL;
}

static es_pump *pump_new(int (*stopped)(void *), void *arg) {
  es_pump *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_mutex_init(&p->lock, NULL);
  p->refs = 1;
  p->keep = -1;
  p->src = p->dst = -1;
  p->stopped = stopped;
  p->arg = arg;
  return p;
}

/* Starts p's thread from src (owned by the pump once started) into a new pipe; returns the
 * pipe's read end, or -1 (nothing started, src still the caller's). */
static int pump_start(es_pump *p, int src, int src_is_pipe) {
  int fds[2] = {-1, -1};
  pthread_t th;
  if (pipe(fds) != 0) return -1;
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups; a failure only costs speed */
  if (src_is_pipe) fcntl(src, F_SETPIPE_SZ, 1 << 20); /* the producer's side too */
  p->src = src;
  p->src_is_pipe = src_is_pipe;
  p->dst = fds[1];
  fcntl(p->dst, F_SETFD, FD_CLOEXEC);
  fcntl(p->src, F_SETFD, FD_CLOEXEC);
  p->refs++;
  if (pthread_create(&th, NULL, pump_thread, p) != 0) {
    p->refs--;
    close(fds[0]);
    close(fds[1]);
    p->src = p->dst = -1;
    return -1;
  }
  pthread_detach(th); /* it may be blocked writing to a decoder that stopped reading */
  return fds[0];
}

int es_pump_stdin(es_pump **out, int (*stopped)(void *), void *arg) {
  struct stat st;
  int have_st = fstat(0, &st) == 0;
  es_pump *p = pump_new(stopped, arg);
  *out = p;
  if (!p) return ES_OK; /* read directly: only less interruptibly */
  if (have_st && S_ISREG(st.st_mode)) {
    off_t at = lseek(0, 0, SEEK_CUR);
    if (at >= 0 && st.st_size <= at) atomic_store(&p->empty, 1);
    return ES_OK;
  }
  int src = dup(0);
  if (src < 0) return ES_OK;
  int rd = pump_start(p, src, have_st && S_ISFIFO(st.st_mode));
  if (rd < 0) { /* reading the real stdin directly still works, only less interruptibly */
    close(src);
    return ES_OK;
  }
  dup2(rd, 0);
  close(rd);
  return ES_OK;
}

int es_pump_fifo(es_pump **out, const char *path, char *alt, size_t len, const char **name,
                 int (*stopped)(void *), void *arg) {
  struct stat st;
  *out = NULL;
  *name = path;
  if (stat(path, &st) != 0 || !S_ISFIFO(st.st_mode)) return ES_OK;
  int src;
  do /* waits for a writer; a signal interrupts it (no SA_RESTART) */
    src = open(path, O_RDONLY | O_CLOEXEC);
  while (src < 0 && errno == EINTR && !(stopped && stopped(arg)));
  if (src < 0) { /* the reader says why, or a stop came */
    if (stopped && stopped(arg)) *name = NULL;
    return ES_OK;
  }
  es_pump *p = pump_new(stopped, arg);
  int rd = p ? pump_start(p, src, 1) : -1;
  if (rd < 0) rd = src; /* no pump: read the FIFO directly, as before */
  if (!p) {
    close(src);
    return ES_ERR_NOMEM;
  }
  p->keep = rd;
  snprintf(alt, len, "/dev/fd/%d", rd);
  *name = alt;
  *out = p;
  return ES_OK;
}

void es_pump_opened(es_pump *p) {
  if (!p || p->keep < 0) return;
  close(p->keep);
  p->keep = -1;
}

int es_pump_status(const es_pump *p, int rc, char *msg, size_t len) {
  const int e = p ? atomic_load(&((es_pump *)p)->read_errno) : 0;
  if (!e || (rc != ES_OK && rc != ES_ERR_EOF && rc != ES_ERR_INPUT)) return rc;
  snprintf(msg, len, "read error: %s", strerror(e));
  return ES_ERR_INPUT;
}

int es_pump_empty(const es_pump *p) { return p ? atomic_load(&((es_pump *)p)->empty) : 0; }

void es_pump_release(es_pump **pp) {
  es_pump *p = pp ? *pp : NULL;
  if (!p) return;
  *pp = NULL;
  pthread_mutex_lock(&p->lock);
  p->released = 1;
  pthread_mutex_unlock(&p->lock);
  pump_unref(p);
}
