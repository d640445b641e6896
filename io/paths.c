/*
 * paths.c - output directories and names (es_paths.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "es_paths.h"
#include "es_types.h"

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int es_same_file(const char *in, const char *out) {
  struct stat a, b;
  int have_in = strcmp(in, "-") ? stat(in, &a) == 0 : fstat(0, &a) == 0 && S_ISREG(a.st_mode);
  return have_in && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int es_make_dirs(const char *path, size_t *bad, int *why, char *msg, size_t len) {
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

size_t es_first_missing(const char *path) {
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

void es_remove_made_dirs(const char *path, size_t from) {
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

char *es_join_path(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + nb + 2);
  if (!s) return NULL;
  memcpy(s, a, na);
  if (na && a[na - 1] != '/') s[na++] = '/';
  memcpy(s + na, b, nb + 1);
  return s;
}
