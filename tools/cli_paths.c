/*
 * cli_paths.c - the outputs' names and files: what kind of output a path is, whether an
 * output is the input, output directories made (and removed again when left empty), path
 * joins, and the --stats file checked and opened.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

/* ---- Paths. */
const char *cli_ext_of(const char *path) {
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
int cli_same_file(const char *in, const char *out) {
  struct stat a, b;
  int have_in = strcmp(in, "-") ? stat(in, &a) == 0 : fstat(0, &a) == 0 && S_ISREG(a.st_mode);
  return have_in && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 1 when standard output is a regular file and the file `in` ("-": standard input's). */
int cli_stdout_is(const char *in) {
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

int cli_out_kind_of(const char *out) {
  const char *e;
  size_t n;
  if (!out) return OUT_NONE;
  if (!strcmp(out, "-")) return OUT_STDOUT;
  n = strlen(out);
  if (is_dir(out) || out[n - 1] == '/') return OUT_DIR;
  e = cli_ext_of(out);
  if (!strcasecmp(e, "png")) return OUT_PNG;
  if (!strcasecmp(e, "npy")) return OUT_NPY;
  if (!strcasecmp(e, "tif") || !strcasecmp(e, "tiff")) return OUT_TIFF;
  if (is_video_ext(e)) return OUT_VIDEO;
  if (!*e) return OUT_DIR; /* a name without an extension is a directory to create */
  return -1;
}

/* mkdir -p; ES_OK or ES_ERR_OUTPUT with the reason in msg. On failure *bad (if not NULL) is
 * the length of the leading part of path that could not be made (what the message is
 * about), and *why its errno (ENOTDIR: something else is in the way). */
int cli_make_dirs(const char *path, size_t *bad, int *why, char *msg, size_t len) {
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

/* cli_make_dirs for an output directory; a failure is reported naming the directory that could
 * not be made (the output itself, or a parent of it in the way). */
int cli_make_out_dir(const char *path) {
  char msg[MSG_LEN], name[PATH_MAX];
  size_t at = 0;
  int rc = cli_make_dirs(path, &at, NULL, msg, sizeof msg);
  if (rc != ES_OK) {
    snprintf(name, sizeof name, "%.*s", (int)at, path);
    cli_err(name, "%s", msg);
  }
  return rc;
}

/* The length of the shortest leading part of path (whole components) that does not exist:
 * what cli_make_dirs(path) will create starts there. 0 when all of it exists (or cannot be
 * looked at: then cli_make_dirs creates nothing either). */
size_t cli_first_missing(const char *path) {
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
 * cli_first_missing said a run would make), deepest first, stopping at the first that is not
 * empty: what a run that wrote nothing into them had created. */
void cli_remove_made_dirs(const char *path, size_t from) {
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
int cli_path_inside(const char *dir, const char *path) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return !strncmp(path, dir, n) && path[n] == '/';
}

char *cli_join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + nb + 2);
  if (!s) return NULL;
  memcpy(s, a, na);
  if (na && a[na - 1] != '/') s[na++] = '/';
  memcpy(s + na, b, nb + 1);
  return s;
}

/* The rendering the --format asks for (for PNG outputs). */
int cli_png_pixfmt(int format) {
  switch (format) {
  case FMT_GRAY8: return ES_PIX_GRAY8;
  case FMT_GRAY16: return ES_PIX_GRAY16;
  default: return ES_PIX_RGB24;
  }
}

/* An existing --stats file without -y. -n keeps it: stats_path is cleared and the other
 * outputs are still written (STATS_SKIPPED); otherwise the error is reported
 * (STATS_REFUSED, exit code 3). STATS_OK: nothing in the way. */
int cli_stats_file_check(cli_opts *o) {
  if (!o->stats_path || !strcmp(o->stats_path, "-") || o->overwrite ||
      !es_output_exists(o->stats_path))
    return STATS_OK;
  if (!o->skip) {
    cli_err(o->stats_path, "exists (use -y to overwrite, -n to skip)");
    return STATS_REFUSED;
  }
  if (!o->quiet) cli_err(o->stats_path, "exists, skipped");
  o->stats_path = NULL;
  return STATS_SKIPPED;
}

/* Opens the --stats writer; a failure is reported. */
int cli_stats_open(const cli_opts *o, es_stats_writer **sw) {
  char msg[MSG_LEN] = "";
  int rc = es_stats_writer_open(sw, o->stats_path, o->overwrite, o->cfg.stats_bins, msg,
                                sizeof msg);
  if (rc != ES_OK) cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
  return rc;
}

/* Makes the output directory dir and opens the --stats file, which lies inside it. Where the
 * statistics file cannot be opened (a subdirectory that is not there), the directories made
 * here are removed again, deepest first (nothing was written into them yet): a run that
 * fails on its --stats leaves no output directory behind, as where the file lies outside it
 * and is opened first. A failure is reported. */
int cli_stats_open_inside(const cli_opts *o, const char *dir, es_stats_writer **sw) {
  const size_t made = cli_first_missing(dir); /* where what cli_make_out_dir creates starts */
  int rc = cli_make_out_dir(dir);
  if (rc != ES_OK || (rc = cli_stats_open(o, sw)) == ES_OK) return rc;
  cli_remove_made_dirs(dir, made);
  return rc;
}
