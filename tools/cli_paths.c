/*
 * cli_paths.c - the outputs' names and files: whether standard output is the input, an
 * output directory made (with its message), and the --stats file checked and opened. The
 * name table and the directory helpers are the library's (io/registry.c, io/paths.c).
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

/* 1 when standard output is a regular file and the file `in` ("-": standard input's). */
int cli_stdout_is(const char *in) {
  struct stat a, b;
  int have_in = strcmp(in, "-") ? stat(in, &a) == 0 : fstat(0, &a) == 0;
  return have_in && fstat(1, &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

/* es_make_dirs for an output directory; a failure is reported naming the directory that could
 * not be made (the output itself, or a parent of it in the way). */
int cli_make_out_dir(const char *path) {
  char msg[MSG_LEN], name[PATH_MAX];
  size_t at = 0;
  int rc = es_make_dirs(path, &at, NULL, msg, sizeof msg);
  if (rc != ES_OK) {
    snprintf(name, sizeof name, "%.*s", (int)at, path);
    cli_err(name, "%s", msg);
  }
  return rc;
}

/* 1 when path names something under the directory dir ("out/s.csv" under "out/"). */
int cli_path_inside(const char *dir, const char *path) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return !strncmp(path, dir, n) && path[n] == '/';
}

/* The rendering the --format asks for (for PNG outputs). */
int cli_png_pixfmt(int format) {
  switch (format) {
  case FMT_GRAY8: return ES_PIX_GRAY8;
  case FMT_GRAY16: return ES_PIX_GRAY16;
  default: return ES_PIX_RGB24;
  }
}

int cli_exists(const cli_opts *o, const char *path) {
  if (o->overwrite || !es_output_exists(path)) return 0;
  CLI_REFUSE(!o->skip, 3, path, "exists (use -y to overwrite, -n to skip)");
  if (!o->quiet) cli_err(path, "exists, skipped");
  return 1;
}

/* An existing --stats file without -y. -n keeps it: stats_path is cleared and the other
 * outputs are still written (STATS_SKIPPED); otherwise the error is reported
 * (STATS_REFUSED, exit code 3). STATS_OK: nothing in the way. */
int cli_stats_file_check(cli_opts *o) {
  int rc = !o->stats_path || !strcmp(o->stats_path, "-") ? STATS_OK : cli_exists(o, o->stats_path);
  if (rc == STATS_SKIPPED) o->stats_path = NULL;
  return rc;
}
