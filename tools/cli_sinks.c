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
#include <unistd.h>

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

int cli_progress_on(const cli_opts *o) {
  return !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2)));
}

static int run_stopped(void) { return atomic_load(&g_stop) != 0; }
/* Signals stay blocked on the writing (main) thread until the summary is written (the
 * runner's end, cli_main_writes(0)). */
static void run_writing(void *user, int begin) {
  (void)user;
  if (begin) cli_main_writes(1);
}

void cli_run_config(es_run_config *c, const cli_opts *o,
                    void (*progress)(void *user, const es_run_counts *c), void *user) {
  es_run_config_default(c);
  c->cfg = o->cfg;
  c->render = o->render;
  c->stopped = run_stopped;
  c->progress = progress;
  c->writing = run_writing;
  c->user = user;
  c->mask = o->mask; /* --mask: the same for every frame */
  c->mask_stride = (size_t)o->mask_w;
  c->mask_width = o->mask_w;
  c->mask_height = o->mask_h;
  c->mask_name = o->mask_path;
}

int cli_add_stats_sinks(es_run *run, const cli_opts *o, const es_sink_opts *so, cli_ui *ui,
                        int inside) {
  es_sink k;
  int rc;
  if (o->stats_path) {
    if ((rc = es_sink_stats(&k, o->stats_path, so)) != ES_OK) return rc;
    if (inside) k.flags &= ~ES_SINK_OPEN_FIRST;
    if (ui->show && !strcmp(o->stats_path, "-") && isatty(1)) /* --stats - on a terminal */
      cli_sink_tty(&k, ui);
    if ((rc = es_run_add_sink(run, &k)) != ES_OK) return rc;
  }
  if (o->stats_line) {
    k = cli_sink_line(ui);
    if ((rc = es_run_add_sink(run, &k)) != ES_OK) return rc;
  }
  return ES_OK;
}
