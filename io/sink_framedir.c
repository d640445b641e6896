/*
 * sink_framedir.c - a video run's frame directory (es_stage.h): frame_NNNNNN.png, or .npy
 * maps with f32, each written atomically. The directory is made at open where missing, and
 * what this run made of it goes again where it is left empty (a failed run). -n keeps a
 * frame file that exists (the frame is skipped), also one another run renamed into place
 * meanwhile; without -y an existing one fails the output.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_paths.h"
#include "es_stage.h"

typedef struct sink_dir {
  es_sink_opts o;
  const char *dir;
  size_t made;     /* where the part of dir this sink created begins (0: none) */
  char *last;      /* the frame file of the last write (k->what on its failure) */
  char what[PATH_MAX]; /* the directory that could not be made */
} sink_dir;

static int sd_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                   size_t len) {
  sink_dir *s = k->self;
  size_t at = 0;
  (void)in;
  s->made = es_first_missing(s->dir);
  int rc = es_make_dirs(s->dir, &at, NULL, msg, len);
  if (rc != ES_OK) { /* named by the directory in the way: the output itself or a parent */
    snprintf(s->what, sizeof s->what, "%.*s", (int)at, s->dir);
    k->what = s->what;
    return rc;
  }
  if (s->o.f32)
    needs->want_map = 1;
  else
    needs->pixfmt = s->o.pixfmt;
  return ES_OK;
}

static int sd_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_dir *s = k->self;
  char name[64];
  int rc;
  snprintf(name, sizeof name, "frame_%06" PRId64 ".%s", it->index, s->o.f32 ? "npy" : "png");
  free(s->last);
  s->last = es_join_path(s->dir, name);
  k->what = s->last;
  if (!s->last) return ES_ERR_NOMEM;
  if (s->o.input && es_same_file(s->o.input, s->last)) {
    snprintf(msg, len, "is the input itself (choose another output)");
    return ES_ERR_USAGE;
  }
  if (s->o.skip && es_output_exists(s->last)) return ES_SINK_KEPT;
  if (!s->o.overwrite && es_output_exists(s->last)) {
    snprintf(msg, len, "exists (use -y to overwrite, -n to skip)");
    return ES_ERR_OUTPUT;
  }
  /* -n: a frame file another run renamed into place meanwhile is kept, skipped */
  const int ow = s->o.skip ? ES_WRITE_KEEP : s->o.overwrite;
  if (s->o.f32)
    rc = es_npy_write(s->last, ow, it->width, it->height, it->map, it->map_stride, msg, len);
  else
    rc = es_png_write(s->last, ow, it->width, it->height, s->o.pixfmt, it->pix->plane[0],
                      it->pix->stride[0], msg, len);
  return rc == ES_WRITE_KEPT ? ES_SINK_KEPT : rc;
}

static int sd_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_dir *s = k->self;
  (void)msg;
  (void)len;
  if (!s) return ES_OK;
  /* The frames are in place as written; a failed run's directory goes where it was made
   * and is left empty (only the directories left empty). */
  if (!commit) es_remove_made_dirs(s->dir, s->made);
  free(s->last);
  free(s);
  k->self = NULL;
  k->what = NULL;
  return ES_OK;
}

int es_sink_frame_dir(es_sink *k, const char *path, const es_sink_opts *o) {
  sink_dir *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  s->o = *o;
  s->dir = path;
  k->name = path;
  k->self = s;
  k->open = sd_open;
  k->write = sd_write;
  k->close = sd_close;
  return ES_OK;
}
