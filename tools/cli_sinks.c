/*
 * cli_sinks.c - the CLI's own sinks of a run, shared by videos and stills: the statistics
 * line a frame on standard output (neither -o nor --stats), and `--stats -` on a terminal,
 * whose records go where the progress line is drawn: the line is wiped first and drawn again
 * below the record.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int tty_open(es_sink *k, const es_source_info *in, es_sink_needs *n, char *msg, size_t len) {
  cli_ui *u = k->self;
  int rc = u->inner.open(&u->inner, in, n, msg, len);
  k->what = u->inner.what;
  return rc;
}
static int tty_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  cli_ui *u = k->self;
  cli_clear_progress();
  u->last = 0;
  int rc = u->inner.write(&u->inner, it, msg, len);
  k->what = u->inner.what;
  return rc;
}
static int tty_close(es_sink *k, int commit, char *msg, size_t len) {
  cli_ui *u = k->self;
  return u->inner.close(&u->inner, commit, msg, len);
}

void cli_sink_tty(es_sink *k, cli_ui *u) {
  u->inner = *k;
  k->self = u;
  k->open = tty_open;
  k->write = tty_write;
  k->end = NULL;
  k->close = tty_close;
}

static int line_open(es_sink *k, const es_source_info *in, es_sink_needs *n, char *msg,
                     size_t len) {
  (void)k, (void)in, (void)msg, (void)len;
  n->want_stats = 1;
  return ES_OK;
}
static int line_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  cli_ui *u = k->self;
  (void)msg, (void)len;
  if (u->show) {
    cli_clear_progress();
    u->last = 0;
  }
  /* A still's line has no index nor time. */
  cli_stats_line(it->name, u->still ? -1 : it->index, u->still ? NAN : it->pts_seconds,
                 it->width, it->height, it->stats, u->o->cfg.params.base);
  return ES_OK;
}
static int line_close(es_sink *k, int commit, char *msg, size_t len) {
  (void)k, (void)commit;
  if (fflush(stdout) == 0 && !ferror(stdout)) return ES_OK;
  snprintf(msg, len, "write error: %s", strerror(errno ? errno : EIO));
  return ES_ERR_OUTPUT;
}

es_sink cli_sink_line(cli_ui *u) {
  es_sink k = {"-", NULL, ES_SINK_KEEP_EMPTY, u, line_open, line_write, NULL, line_close, NULL};
  return k;
}
