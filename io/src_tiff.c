/*
 * src_tiff.c - a multi-page TIFF as the source of a run (es_stage.h): its pages, in order,
 * as a video's frames. A page of page 0's geometry is read straight into the run's frame
 * (es_tiff_read_rows); one of another size or depth (a frame directory or statistics take
 * any) is read into a buffer of its own and lent. A page that cannot be read fails the
 * stack (ES_SOURCE_WHOLE: no .npy or .tif is left of it), named by its number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_stage.h"
#include "es_tiff.h"

typedef struct src_tiff {
  es_tiff_source_opts o;
  const char *path;
  es_tiff *t;         /* after open */
  es_tiff_info first; /* page 0's */
  es_tiff_info cur;   /* page next's, once held */
  int next;           /* the page the next read gives */
  int held;           /* page next is the current one, checked (a read without dst) */
} src_tiff;

static int st_open(es_source *s, const es_stage_env *env, es_source_info *info, char *msg,
                   size_t len) {
  src_tiff *v = s->self;
  (void)env;
  int rc = ES_OK;
  if (v->o.tiff) { /* opened by the caller, on page 0: what its header said is kept there */
    v->t = v->o.tiff;
    v->o.tiff = NULL;
    es_tiff_info_of(v->t, &v->first);
  } else {
    rc = es_tiff_open(v->path, v->o.max_pixels, &v->t, &v->first, msg, len);
  }
  if (rc != ES_OK) return rc;
  memset(info, 0, sizeof *info);
  info->width = v->first.width;
  info->height = v->first.height;
  info->depth = v->first.depth;
  info->fps_num = 25; /* a stack has no rate: es_source_info's "unknown" */
  info->fps_den = 1;
  info->tb_num = 1;
  info->tb_den = 25;
  info->frames = v->first.pages; /* exact: a .tif output sizes its offsets by it */
  info->sar_den = 1;
  return ES_OK;
}

/* Bytes of one sample at a grey depth of es_tiff_read_rows (8, 16, 32: float32). */
static size_t sample_bytes(int depth) { return depth <= 8 ? 1 : depth <= 16 ? 2 : 4; }

/* Makes page next the current one and checks it (held until read). */
static int hold_page(src_tiff *v, char *m, size_t len) {
  int rc = ES_OK;
  v->cur = v->first;
  if (v->next > 0) rc = es_tiff_set_page(v->t, v->next, &v->cur, m, len);
  if (rc == ES_OK && v->o.same_size &&
      (v->cur.width != v->first.width || v->cur.height != v->first.height)) {
    snprintf(m, len, "is %dx%d, page 0 %dx%d (a stack's pages are one size)", v->cur.width,
             v->cur.height, v->first.width, v->first.height);
    rc = ES_ERR_INPUT;
  }
  if (rc == ES_OK) v->held = 1;
  return rc;
}

static int st_read(es_source *s, void *dst, size_t dst_stride, es_source_frame *fr, char *msg,
                   size_t len) {
  src_tiff *v = s->self;
  char m[400] = "";
  void *own = NULL;
  int rc = ES_OK;
  if (v->next >= v->first.pages) return ES_ERR_EOF;
  if (!v->held) rc = hold_page(v, m, sizeof m);
  const int same = v->cur.width == v->first.width && v->cur.height == v->first.height &&
                   v->cur.depth == v->first.depth;
  if (rc == ES_OK && same && !dst) return ES_ERR_AGAIN; /* read into the run's frame */
  if (rc == ES_OK && !same) { /* a buffer of the page's own size, lent */
    dst_stride = (size_t)v->cur.width * sample_bytes(v->cur.depth);
    dst = own = malloc(dst_stride * (size_t)v->cur.height);
    if (!own) {
      snprintf(m, sizeof m, "out of memory for a %dx%d page", v->cur.width, v->cur.height);
      rc = ES_ERR_NOMEM;
    }
  }
  if (rc == ES_OK)
    rc = es_tiff_read_rows(v->t, 0, v->cur.height, v->o.band, dst, dst_stride, m, sizeof m);
  if (rc != ES_OK) {
    free(own);
    snprintf(msg, len, "page %d: %s", v->next, *m ? m : "cannot be read");
    return rc;
  }
  if (own) {
    fr->lend = own;
    fr->lend_stride = dst_stride;
    fr->lend_ref = own;
    fr->width = v->cur.width;
    fr->height = v->cur.height;
    fr->depth = v->cur.depth;
  }
  v->held = 0;
  v->next++;
  return ES_OK;
}

static void st_close(es_source *s) {
  src_tiff *v = s->self;
  if (!v) return;
  es_tiff_close(&v->t);
  es_tiff_close(&v->o.tiff); /* handed over, never opened */
  free(v);
  s->self = NULL;
}

int es_source_tiff(es_source *s, const char *path, const es_tiff_source_opts *o) {
  src_tiff *v = calloc(1, sizeof *v);
  memset(s, 0, sizeof *s);
  if (!v) {
    es_tiff *t = o ? o->tiff : NULL; /* owned from the call on */
    es_tiff_close(&t);
    return ES_ERR_NOMEM;
  }
  if (o) v->o = *o;
  v->path = path;
  s->name = path;
  s->self = v;
  s->open = st_open;
  s->read = st_read;
  s->unlend = free; /* a page's own buffer */
  s->close = st_close;
  s->flags = ES_SOURCE_WHOLE;
  return ES_OK;
}
