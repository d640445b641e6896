/*
 * src_stills.c - a list of stills as the source of a run (es_stage.h): item i is file i,
 * decoded through the still dispatch (still.c) at its own size. read_item lets the run's
 * decoders take items in any order at once (each touches only its own item's slot);
 * read gives them one after the other, each in a buffer of its own, lent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "es_io.h"
#include "es_stage.h"
#include "es_tiff.h"

typedef struct src_stills {
  es_stills_source_opts o;
  size_t n;
  char **paths, **names;
  es_tiff_geo **geo; /* item i's GeoTIFF tags (o.geo), written only by its reader */
  size_t next;       /* the sequential read's next item */
} src_stills;

static int ss_open(es_source *s, const es_stage_env *env, es_source_info *info, char *msg,
                   size_t len) {
  src_stills *v = s->self;
  (void)env, (void)msg, (void)len;
  memset(info, 0, sizeof *info);
  info->depth = 8; /* each item has its own geometry: es_source_frame's */
  info->fps_num = 25;
  info->fps_den = 1;
  info->tb_num = 1;
  info->tb_den = 25;
  info->frames = (int64_t)v->n;
  info->sar_den = 1;
  return ES_OK;
}

static int ss_read_item(es_source *s, int64_t i, es_source_dest_fn dest, void *user,
                        es_source_frame *fr, char *msg, size_t len) {
  src_stills *v = s->self;
  struct stat st;
  es_image img;
  if (i < 0 || (size_t)i >= v->n) return ES_ERR_EOF;
  fr->name = v->names[i];
  fr->what = v->paths[i];
  fr->geo = NULL;
  /* Never opened where it is not a regular file: a FIFO would block its reader until a
   * writer came. A name that does not exist fails at open, with its reason. */
  if (stat(v->paths[i], &st) == 0 && !S_ISREG(st.st_mode)) {
    snprintf(msg, len, "not a regular file");
    return ES_ERR_INPUT;
  }
  es_still_opts so = {v->o.band, v->o.geo ? &v->geo[i] : NULL};
  int rc = es_still_read_opt(v->paths[i], v->o.max_pixels, &so, dest, user, &img, msg, len);
  if (rc != ES_OK) return rc;
  fr->width = img.width;
  fr->height = img.height;
  fr->depth = img.depth;
  fr->geo = v->geo ? v->geo[i] : NULL;
  return ES_OK;
}

/* The sequential read's destination: a buffer of the item's own size. */
static int own_dest(void *user, int width, int height, int depth, void **dst, size_t *dst_stride,
                    char *msg, size_t len) {
  const size_t stride = (size_t)width * (depth <= 8 ? 1 : depth <= 16 ? 2 : 4);
  void **own = user;
  *own = malloc(stride * (size_t)height);
  if (!*own) {
    snprintf(msg, len, "out of memory for a %dx%d image", width, height);
    return ES_ERR_NOMEM;
  }
  *dst = *own;
  *dst_stride = stride;
  return ES_OK;
}

static int ss_read(es_source *s, void *dst, size_t dst_stride, es_source_frame *fr, char *msg,
                   size_t len) {
  src_stills *v = s->self;
  void *own = NULL;
  (void)dst, (void)dst_stride; /* every item is lent: each has its own size */
  if (v->next >= v->n) return ES_ERR_EOF;
  int rc = ss_read_item(s, (int64_t)v->next, own_dest, &own, fr, msg, len);
  if (rc != ES_OK) {
    free(own);
    return rc;
  }
  fr->lend = own;
  fr->lend_stride = (size_t)fr->width * (fr->depth <= 8 ? 1 : fr->depth <= 16 ? 2 : 4);
  fr->lend_ref = own;
  v->next++;
  return ES_OK;
}

static void ss_close(es_source *s) {
  src_stills *v = s->self;
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) { /* (the arrays may be missing after a failed make) */
    if (v->paths) free(v->paths[i]);
    if (v->names) free(v->names[i]);
    if (v->geo) es_tiff_geo_free(&v->geo[i]);
  }
  free(v->paths);
  free(v->names);
  free(v->geo);
  free(v);
  s->self = NULL;
}

int es_source_stills(es_source *s, const char *const *paths, const char *const *names, size_t n,
                     const es_stills_source_opts *o) {
  src_stills *v = calloc(1, sizeof *v);
  memset(s, 0, sizeof *s);
  if (!v) return ES_ERR_NOMEM;
  if (o) v->o = *o;
  v->n = n;
  v->paths = calloc(n ? n : 1, sizeof *v->paths);
  v->names = calloc(n ? n : 1, sizeof *v->names);
  v->geo = v->o.geo ? calloc(n ? n : 1, sizeof *v->geo) : NULL;
  s->self = v;
  s->close = ss_close;
  if (!v->paths || !v->names || (v->o.geo && !v->geo)) goto nomem;
  for (size_t i = 0; i < n; i++) {
    v->paths[i] = strdup(paths[i]);
    v->names[i] = strdup(names && names[i] ? names[i] : paths[i]);
    if (!v->paths[i] || !v->names[i]) goto nomem;
  }
  s->name = v->o.name ? v->o.name : "stills";
  s->open = ss_open;
  s->read = ss_read;
  s->unlend = free; /* an item's own buffer */
  s->count = (int64_t)n;
  s->read_item = ss_read_item;
  return ES_OK;
nomem:
  ss_close(s);
  memset(s, 0, sizeof *s);
  return ES_ERR_NOMEM;
}
