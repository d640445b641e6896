/*
 * atomic.c - atomic outputs: every file is written under a temporary name in the directory
 * of its final name (".NAME.tmp-XXXXXX", so rename() stays within one filesystem) and renamed
 * into place only when complete. A failure at any step removes the temporary, so a final
 * name never holds a partial file (SPEC section 3). Two kinds of name are not replaced: a
 * symbolic link is followed and the file it names is written (temporary in that file's
 * directory), and an existing FIFO or device is opened and written in place, as ffmpeg and
 * ImageMagick do: replacing it would cut off its reader, and a stream has no partial file
 * to protect.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "es_io.h"

/* mkstemp creates files 0600; outputs should get the usual 0666 & ~umask. umask() cannot
 * be read without being set (racy with other threads), so read it from /proc. */
static mode_t es_output_mode(void) {
  mode_t mask = 022;
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f)) {
      unsigned m;
      if (sscanf(line, "Umask: %o", &m) == 1) {
        mask = (mode_t)m;
        break;
      }
    }
    fclose(f);
  }
  return 0666 & ~mask;
}

enum { ES_LINK_HOPS = 40 }; /* as the kernel's limit on links followed (ELOOP) */

int es_output_resolve(const char *path, char **target, char *msg, size_t len) {
  char *cur = strdup(path), *link = NULL;
  int status = ES_ERR_NOMEM;
  struct stat st;
  *target = NULL;
  if (!cur) goto nomem;
  for (int hops = 0;; hops++) {
    if (lstat(cur, &st) != 0) {
      if (errno != ENOENT) {
        snprintf(msg, len, "cannot create: %s", strerror(errno));
        status = ES_ERR_OUTPUT;
        goto end;
      }
      status = ES_OUT_NEW; /* a new name, or a link to one: created in its directory */
      break;
    }
    if (!S_ISLNK(st.st_mode)) {
      status = S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? ES_OUT_STREAM
                                                                                  : ES_OUT_FILE;
      break;
    }
    if (hops == ES_LINK_HOPS) {
      snprintf(msg, len, "cannot create: %s", strerror(ELOOP));
      status = ES_ERR_OUTPUT;
      goto end;
    }
    /* The link's target, relative to the link's directory unless absolute. */
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    if (!(link = malloc(cap))) goto nomem;
    ssize_t n = readlink(cur, link, cap);
    if (n < 0 || (size_t)n >= cap) {
      snprintf(msg, len, "cannot read the link: %s", strerror(n < 0 ? errno : ENAMETOOLONG));
      status = ES_ERR_OUTPUT;
      goto end;
    }
    link[n] = 0;
    const char *slash = strrchr(cur, '/');
    size_t dirlen = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
    char *next = malloc(dirlen + (size_t)n + 1);
    if (!next) goto nomem;
    memcpy(next, cur, dirlen);
    memcpy(next + dirlen, link, (size_t)n + 1);
    free(cur);
    free(link);
    link = NULL;
    cur = next;
  }
  *target = cur;
  cur = NULL;
  goto end;
nomem:
  snprintf(msg, len, "out of memory");
  status = ES_ERR_NOMEM;
end:
  free(cur);
  free(link);
  return status;
}

int es_output_exists(const char *path) {
  char *target = NULL, msg[8];
  struct stat st;
  int kind = es_output_resolve(path, &target, msg, sizeof msg);
  /* A name that cannot be resolved (a file where a directory should be, a loop of links,
   * no search permission) is not "there": the write fails and says why. Counted as there,
   * it was refused as "exists (use -y ...)" and skipped by -n as if it did. So is a
   * directory under the name: -y does not replace it (es_atomic_open: "is a directory"). */
  int exists = kind == ES_OUT_FILE && !(stat(target, &st) == 0 && S_ISDIR(st.st_mode));
  free(target);
  return exists;
}

char *es_tmp_template(const char *final_path, const char *tag) {
  const char *slash = strrchr(final_path, '/');
  const char *base = slash ? slash + 1 : final_path;
  size_t dirlen = (size_t)(base - final_path);
  /* At most ES_TMP_NAME_KEEP bytes of the name, so that "." NAME "." TAG "-XXXXXX" stays
   * within NAME_MAX (255) whenever the final name does; cut before a UTF-8 continuation
   * byte so the kept part is still whole characters. */
  size_t keep = strlen(base);
  if (keep > ES_TMP_NAME_KEEP) {
    keep = ES_TMP_NAME_KEEP;
    while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80)
      keep--;
  }
  size_t cap = dirlen + 1 + keep + 1 + strlen(tag) + 8;
  char *t = malloc(cap);
  if (!t) return NULL;
  memcpy(t, final_path, dirlen);
  snprintf(t + dirlen, cap - dirlen, ".%.*s.%s-XXXXXX", (int)keep, base, tag);
  return t;
}

/* The table of temporaries (es_tmp_track). Each tracked name is a buffer of its own, copied
 * whole before it is published in a free slot by one compare-exchange (from NULL: the same
 * store claims the slot), and never written again: a walk (es_tmp_unlink_all, in a signal
 * handler) loads a slot once and gets either NULL or a complete name. (A slot's one buffer
 * was rewritten in place by the slot's next tracker: a walk that had seen the slot taken
 * could read, and unlink, a mix of two names.) An untracked name leaves its slot first,
 * then its buffer is freed only where no walk is under way: es_tmp_walkers is 0 after the
 * slot was emptied, so any walk that could have loaded it has ended and a later one cannot
 * load it. Else it waits on es_tmp_retired, freed by a later untrack that sees no walk (a
 * walk in a handler ends the process: its names are never freed under it). A tracker finds
 * its slot again by its key, the pointer it tracked, which no other live temporary has. */
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "the handler's loads must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler's count must be lock-free");
typedef struct es_tmp_node {
  struct es_tmp_node *next; /* on es_tmp_retired; never read by a walk */
  char name[];              /* what a slot publishes: written once, before */
} es_tmp_node;
static char *_Atomic es_tmp_name[ES_TMP_TRACK_MAX];      /* a node's name; NULL: free */
static const char *_Atomic es_tmp_key[ES_TMP_TRACK_MAX]; /* the tracker's pointer; NULL: none */
static atomic_int es_tmp_walkers;                        /* walks under way */
static pthread_mutex_t es_tmp_retired_lock = PTHREAD_MUTEX_INITIALIZER;
static es_tmp_node *es_tmp_retired; /* untracked while a walk was under way */

void es_tmp_track(const char *tmp_path) {
  size_t n = strlen(tmp_path);
  if (n >= PATH_MAX) return;
  es_tmp_node *node = malloc(sizeof *node + n + 1);
  if (!node) return;
  node->next = NULL;
  memcpy(node->name, tmp_path, n + 1);
  for (int i = 0; i < ES_TMP_TRACK_MAX; i++) {
    char *expect = NULL;
    if (!atomic_compare_exchange_strong(&es_tmp_name[i], &expect, node->name)) continue;
    atomic_store(&es_tmp_key[i], tmp_path);
    return;
  }
  free(node); /* the table is full: not tracked */
}

/* Frees an untracked name, or keeps it (and what was kept) while a walk may read it. */
static void es_tmp_retire(char *name) {
  es_tmp_node *node = (es_tmp_node *)(name - offsetof(es_tmp_node, name)), *free_list = NULL;
  pthread_mutex_lock(&es_tmp_retired_lock);
  node->next = es_tmp_retired;
  if (atomic_load(&es_tmp_walkers) == 0) { /* every one was emptied from its slot before */
    free_list = node;
    es_tmp_retired = NULL;
  } else {
    es_tmp_retired = node;
  }
  pthread_mutex_unlock(&es_tmp_retired_lock);
  while (free_list) {
    node = free_list;
    free_list = node->next;
    free(node);
  }
}

void es_tmp_untrack(const char *tmp_path) {
  if (!tmp_path) return;
  for (int i = 0; i < ES_TMP_TRACK_MAX; i++) {
    if (atomic_load(&es_tmp_key[i]) != tmp_path) continue; /* another's, or free */
    atomic_store(&es_tmp_key[i], NULL); /* before another tracker may take the slot */
    char *name = atomic_exchange(&es_tmp_name[i], NULL);
    if (name) es_tmp_retire(name);
    return;
  }
}

void es_tmp_walk(void (*fn)(const char *name, void *arg), void *arg) {
  atomic_fetch_add(&es_tmp_walkers, 1); /* before any slot is loaded */
  for (int i = 0; i < ES_TMP_TRACK_MAX; i++) {
    const char *name = atomic_load(&es_tmp_name[i]); /* once: a whole name, or none */
    if (name) fn(name, arg);
  }
  atomic_fetch_sub(&es_tmp_walkers, 1);
}

static void unlink_one(const char *name, void *arg) {
  (void)arg;
  unlink(name);
}

void es_tmp_unlink_all(void) { es_tmp_walk(unlink_one, NULL); }

/* renameat2(RENAME_NOREPLACE), else (filesystems without it) link + unlink, else plain
 * rename where hard links are not supported. */
static int rename_into(const char *tmp, const char *final, int overwrite) {
  if (overwrite == 1) return rename(tmp, final);
#ifdef RENAME_NOREPLACE
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
#endif
  if (link(tmp, final) == 0) {
    unlink(tmp);
    return 0;
  }
  if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP) return -1;
  return rename(tmp, final);
}

int es_rename_into(const char *tmp, const char *final, int overwrite, char *msg, size_t len) {
  if (rename_into(tmp, final, overwrite) == 0) return ES_OK;
  if (errno == EEXIST && overwrite == ES_WRITE_KEEP) { /* another run's, finished first */
    snprintf(msg, len, "exists, skipped");
    return ES_WRITE_KEPT;
  }
  if (errno == EEXIST)
    snprintf(msg, len, "exists (use -y to overwrite)");
  else
    snprintf(msg, len, "cannot rename into place: %s", strerror(errno));
  return ES_ERR_OUTPUT;
}

int es_tmp_create(const char *final_path, const char *tag, char **tmp, char *msg, size_t len) {
  *tmp = es_tmp_template(final_path, tag);
  if (!*tmp) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  const int fd = mkostemp(*tmp, O_CLOEXEC);
  if (fd < 0) {
    snprintf(msg, len, "cannot create: %s", strerror(errno));
    free(*tmp); /* nothing was created: no one may unlink the template name */
    *tmp = NULL;
    return ES_ERR_OUTPUT;
  }
  es_tmp_track(*tmp);
  (void)fchmod(fd, es_output_mode()); /* not fatal: the file is still ours, only 0600 */
  return fd;
}

/* What ends a wait for a FIFO's reader (es_output_set_stop); NULL: nothing does. */
static _Atomic(es_stop_fn) es_out_stop;

void es_output_set_stop(es_stop_fn stopped) { atomic_store(&es_out_stop, stopped); }

enum { ES_READER_POLL_NS = 20000000 }; /* 20 ms between tries of a FIFO with no reader */

int es_output_is_fifo(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

int es_output_open_stream(const char *path, char *msg, size_t len) {
  /* A FIFO: opened without blocking, which fails (ENXIO) while it has no reader, so the
   * wait is a loop that can look at the stop; a device opens as it does, retried where a
   * signal cut its open. */
  const int fifo = es_output_is_fifo(path);
  for (;;) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd >= 0) {
      int fl = fifo ? fcntl(fd, F_GETFL) : 0;
      if (fl < 0 || (fifo && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
        snprintf(msg, len, "cannot open: %s", strerror(errno));
        close(fd);
        return ES_ERR_OUTPUT;
      }
      return fd; /* blocking again: writes wait for the reader, as they did */
    }
    if (errno != EINTR && !(fifo && errno == ENXIO)) {
      snprintf(msg, len, "cannot open: %s", strerror(errno));
      return ES_ERR_OUTPUT;
    }
    es_stop_fn stop = atomic_load(&es_out_stop);
    if (stop && stop()) {
      snprintf(msg, len, "not written: interrupted while %s",
               fifo ? "waiting for a reader" : "opening");
      return ES_ERR_INTERRUPTED;
    }
    if (fifo) {
      struct timespec ts = {0, ES_READER_POLL_NS};
      nanosleep(&ts, NULL);
    }
  }
}

int es_atomic_open(es_atomic *a, const char *final_path, int overwrite, char *msg, size_t len) {
  int status = ES_ERR_OUTPUT, fd = -1;
  struct stat st;
  memset(a, 0, sizeof *a);
  a->overwrite = overwrite;
  if (!final_path || !*final_path) {
    snprintf(msg, len, "empty output file name");
    return ES_ERR_USAGE;
  }
  int kind = es_output_resolve(final_path, &a->final_path, msg, len);
  if (kind < 0) {
    status = kind;
    goto end;
  }
  if (kind == ES_OUT_STREAM) {
    /* Written in place, -y or not: writing into a FIFO or device is what naming it asks
     * for, and nothing is replaced. No O_TRUNC: it means nothing there. */
    fd = es_output_open_stream(a->final_path, msg, len);
    if (fd < 0) {
      status = fd;
      goto end;
    }
    if (!(a->fp = fdopen(fd, "wb"))) {
      snprintf(msg, len, "cannot open: %s", strerror(errno));
      close(fd);
      goto end;
    }
    a->stream = 1;
    return ES_OK;
  }
  if (kind == ES_OUT_FILE && stat(a->final_path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      snprintf(msg, len, "is a directory");
      goto end;
    }
    if (overwrite == ES_WRITE_KEEP) {
      snprintf(msg, len, "exists, skipped");
      status = ES_WRITE_KEPT;
      goto end;
    }
    if (!overwrite) {
      snprintf(msg, len, "exists (use -y to overwrite)");
      goto end;
    }
  }
  fd = es_tmp_create(a->final_path, "tmp", &a->tmp_path, msg, len);
  if (fd < 0) {
    status = fd;
    goto end;
  }
  a->fp = fdopen(fd, "wb");
  if (!a->fp) {
    snprintf(msg, len, "cannot create: %s", strerror(errno));
    close(fd);
    goto end;
  }
  return ES_OK;
end:
  es_atomic_abort(a);
  return status;
}

/* The names freed and nothing marked open: how a commit and an abort both end. */
static void es_atomic_clear(es_atomic *a) {
  free(a->tmp_path);
  a->tmp_path = NULL;
  free(a->final_path);
  a->final_path = NULL;
  a->stream = 0;
}

int es_atomic_commit(es_atomic *a, char *msg, size_t len) {
  int status = ES_ERR_OUTPUT;
  if (!a->fp || (!a->tmp_path && !a->stream) || !a->final_path) {
    snprintf(msg, len, "output was not open");
    status = ES_ERR_INTERNAL;
    goto end;
  }
  /* Buffered data can meet ENOSPC/EIO only now: check the flush and the close. */
  if (fflush(a->fp) != 0 || ferror(a->fp)) {
    snprintf(msg, len, "cannot write: %s", strerror(errno ? errno : EIO));
    goto end;
  }
  FILE *fp = a->fp;
  a->fp = NULL;
  if (fclose(fp) != 0) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    goto end;
  }
  if (a->stream) { /* written in place: nothing to rename */
    es_atomic_clear(a);
    return ES_OK;
  }
  if ((status = es_rename_into(a->tmp_path, a->final_path, a->overwrite, msg, len)) != ES_OK)
    goto end;
  es_tmp_untrack(a->tmp_path);
  es_atomic_clear(a);
  return ES_OK;
end:
  /* Where the temporary cannot be removed either (the directory lost its write permission,
   * or went read-only, while the file was written), the message names it: it is left
   * behind, and the user must know which file to delete. */
  if (a->tmp_path) {
    const size_t n = strlen(msg);
    const int gone = unlink(a->tmp_path) == 0 || errno == ENOENT;
    if (!gone && n + 1 < len)
      snprintf(msg + n, len - n, "; its temporary %s is left (cannot remove it: %s)",
               a->tmp_path, strerror(errno));
  }
  es_atomic_abort(a);
  return status;
}

void es_atomic_abort(es_atomic *a) {
  if (!a) return;
  if (a->fp) fclose(a->fp);
  a->fp = NULL;
  if (a->tmp_path) {
    unlink(a->tmp_path); /* gone already where es_atomic_commit removed it */
    es_tmp_untrack(a->tmp_path);
  }
  es_atomic_clear(a);
}
