/*
 * sink_stats.c - the statistics records of a run (es_stage.h): one CSV or JSON-lines record
 * a frame (es_stats_writer), named by the source, so that joined files tell inputs apart.
 * Committed also in a failed run: the records of the frames computed are kept, as the maps
 * are (ES_SINK_KEEP_EMPTY).
 */
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_stage.h"

typedef struct sink_stats {
  const char *path;
  int overwrite, bins;
  es_stats_writer *sw; /* open */
} sink_stats;

static int ss_open(es_sink *k, const es_source_info *in, es_sink_needs *needs, char *msg,
                   size_t len) {
  sink_stats *s = k->self;
  (void)in;
  int rc = es_stats_writer_open(&s->sw, s->path, s->overwrite, s->bins, msg, len);
  if (rc == ES_OK) needs->want_stats = 1;
  return rc;
}

static int ss_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  sink_stats *s = k->self;
  return es_stats_writer_add_frame(s->sw, it->name, it->index, it->pts_seconds, it->width,
                                   it->height, it->damaged, it->stats, msg, len);
}

static int ss_close(es_sink *k, int commit, char *msg, size_t len) {
  sink_stats *s = k->self;
  int rc = ES_OK;
  if (!s) return ES_OK;
  if (s->sw) rc = es_stats_writer_close(&s->sw, commit, msg, len);
  free(s);
  k->self = NULL;
  return rc;
}

int es_sink_stats(es_sink *k, const char *path, const es_sink_opts *o) {
  sink_stats *s = calloc(1, sizeof *s);
  memset(k, 0, sizeof *k);
  if (!s) return ES_ERR_NOMEM;
  s->path = path;
  s->overwrite = o->overwrite;
  s->bins = o->bins;
  k->name = path;
  k->flags = ES_SINK_KEEP_EMPTY | ES_SINK_OPEN_FIRST;
  k->self = s;
  k->open = ss_open;
  k->write = ss_write;
  k->close = ss_close;
  return ES_OK;
}
