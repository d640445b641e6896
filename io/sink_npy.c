/*
 * sink_npy.c - a video run's .npy of shape (frames, height, width), float32 (es_stage.h):
 * es_npy_stream, whose header gets the final frame count at commit.
 */
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_stage.h"

typedef struct sink_npy {
  const char *path;
  int overwrite;
  es_npy_stream *ns; /* open */
} sink_npy;

static int sn_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                   size_t len) {
  sink_npy *s = k->self;
  int rc = es_npy_stream_open(&s->ns, s->path, s->overwrite, in->width, in->height, msg, len);
  if (rc == ES_OK) needs->want_map = 1;
  return rc;
}

static int sn_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_npy *s = k->self;
  return es_npy_stream_write(s->ns, it->map, it->map_stride, msg, len);
}

static int sn_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_npy *s = k->self;
  int rc = ES_OK;
  if (!s) return ES_OK;
  if (s->ns) rc = es_npy_stream_close(&s->ns, commit, msg, len);
  free(s);
  k->self = NULL;
  return rc;
}

int es_sink_npy_stack(es_sink *k, const char *path, const es_sink_opts *o) {
  sink_npy *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  s->path = path;
  s->overwrite = o->overwrite;
  k->name = path;
  k->self = s;
  k->open = sn_open;
  k->write = sn_write;
  k->close = sn_close;
  return ES_OK;
}
