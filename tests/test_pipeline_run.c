/*
 * test_pipeline_run.c - es_run with ends of the test's own (core/es_stage.h), no files: a
 * source of generated frames and sinks that record what they get. Checks SPEC 3's policy at
 * the library's level: every sink gets every frame in order, with the statistics and the
 * rendering it asked for; a sink failing at frame K is said once, closed uncommitted at once
 * and the others committed (exit 3); every sink failing stops the run early; a stop from the
 * progress callback finishes the frames read and commits (exit 130); a sink failing at open
 * leaves the ones opened before uncommitted, ES_SINK_OPEN_FIRST ones opened first; a
 * statistics-like ES_SINK_KEEP_EMPTY sink is committed in a failed run; a source failing
 * before its first frame opens no sink; a run past ES_RUN_MAX_SINKS closes the extra sink.
 */
#include <stdatomic.h>

#include "entropy_stream.h"
#include "es_test.h"

enum { W = 37, H = 23 };

typedef struct gen { int frames, next, fail_open; int closed; int fail_read_at; } gen;
static int g_open(es_source *s, const es_stage_env *env, es_source_info *in, char *msg, size_t len) {
  gen *g = s->self;
  (void)env;
  if (g->fail_open) {
    snprintf(msg, len, "cannot open");
    return ES_ERR_INPUT;
  }
  memset(in, 0, sizeof *in);
  in->width = W, in->height = H, in->depth = 8, in->fps_num = 25, in->fps_den = 1;
  in->tb_num = 1, in->tb_den = 25, in->frames = g->frames;
  return ES_OK;
}
static int g_read(es_source *s, void *dst, size_t stride, es_source_frame *fr, char *msg, size_t len) {
  gen *g = s->self;
  if (g->next >= g->frames) return ES_ERR_EOF;
  if (!dst) return ES_ERR_AGAIN; /* it exists: held for a read with a buffer */
  if (g->next == g->fail_read_at && g->fail_read_at > -1 && g->frames > 0) {
    snprintf(msg, len, "frame %d is short", g->next);
    return ES_ERR_INPUT;
  }
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) ((uint8_t *)dst)[y * stride + x] = (uint8_t)(x * 7 + y * 3 + g->next * 11);
  fr->pts = g->next;
  fr->pts_seconds = g->next / 25.0;
  fr->damaged = g->next == 1;
  g->next++;
  return ES_OK;
}
static void g_close(es_source *s) { ((gen *)s->self)->closed++; }

typedef struct rec {
  int fail_at;     /* write fails at this frame (-1: never) */
  int fail_open;   /* open fails */
  int pixfmt, flags;
  int opened, open_order, writes, last_index, in_order, stats_ok, damaged;
  int closes, committed;
} rec;
static rec mk(int fail_at, int fail_open, int pixfmt, int flags) {
  rec r;
  memset(&r, 0, sizeof r);
  r.fail_at = fail_at, r.fail_open = fail_open, r.pixfmt = pixfmt, r.flags = flags;
  return r;
}
static int g_order;
static int r_open(es_sink *k, const es_source_info *in, es_sink_needs *n, char *msg, size_t len) {
  rec *r = k->self;
  r->open_order = ++g_order;
  if (r->fail_open) {
    snprintf(msg, len, "cannot open either");
    return ES_ERR_OUTPUT;
  }
  r->opened = in->width == W && in->height == H;
  n->pixfmt = r->pixfmt;
  n->want_stats = 1;
  return ES_OK;
}
static int r_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  rec *r = k->self;
  if (it->index == r->fail_at) {
    snprintf(msg, len, "disk full");
    return ES_ERR_OUTPUT;
  }
  r->in_order += it->index == r->writes;
  r->stats_ok += it->stats && it->stats->max > 0 && it->width == W && it->height == H &&
                 (r->pixfmt == ES_PIX_NONE || it->pix->plane[0] != NULL);
  r->damaged += it->damaged;
  r->last_index = (int)it->index;
  r->writes++;
  return ES_OK;
}
static int r_close(es_sink *k, int commit, char *msg, size_t len) {
  rec *r = k->self;
  (void)msg, (void)len;
  r->closes++;
  r->committed = commit;
  return ES_OK;
}
static es_sink sink_of(rec *r, const char *name) {
  es_sink k = {name, NULL, r->flags, r, r_open, r_write, NULL, r_close};
  return k;
}

static char g_lines[8][160];
static int g_nlines;
static void on_message(void *user, const char *line) {
  (void)user;
  if (g_nlines < 8) snprintf(g_lines[g_nlines], sizeof g_lines[0], "%s", line);
  g_nlines++;
}
static es_run *g_run;
static int g_stop_at = -1;
static void on_progress(void *user, const es_run_counts *c) {
  (void)user;
  if (c->frames == g_stop_at) es_run_stop(g_run);
}

/* Runs frames through the sinks; returns the exit code. */
static int run(gen *g, rec **sinks, int n, es_run_counts *c) {
  es_run_config cfg;
  es_source src = {"gen", g, g_open, g_read, NULL, NULL, NULL, g_close};
  es_run_config_default(&cfg);
  cfg.cfg.device = ES_DEVICE_CPU;
  cfg.cfg.threads = 2;
  cfg.cfg.message = on_message;
  cfg.progress = on_progress;
  g_nlines = 0;
  g_order = 0;
  CHECK(es_run_create(&g_run, &cfg, &src) == ES_OK, "create");
  for (int i = 0; i < n; i++) {
    char name[16];
    static char names[8][16];
    snprintf(name, sizeof name, "sink%d", i);
    memcpy(names[i], name, sizeof name);
    es_sink k = sink_of(sinks[i], names[i]);
    CHECK(es_run_add_sink(g_run, &k) == ES_OK, "add %d", i);
  }
  es_run_execute(g_run);
  es_run_get_counts(g_run, c);
  es_run_destroy(&g_run);
  CHECK(g_run == NULL && g->closed == 1, "destroy closes the source once (%d)", g->closed);
  return c->exit_code;
}

int main(void) {
  es_run_counts c;
  { /* every frame to every sink, in order; the rendering one sink asked for */
    gen g = {9, 0, 0, 0, -1};
    rec a = mk(-1, 0, ES_PIX_GRAY8, 0), b = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a, &b};
    CHECK(run(&g, s, 2, &c) == 0, "exit %d", c.exit_code);
    CHECK(c.frames == 9 && c.pushed == 9 && c.started && c.width == W, "frames %lld", (long long)c.frames);
    CHECK(a.writes == 9 && a.in_order == 9 && a.stats_ok == 9 && a.damaged == 1, "a %d %d %d", a.writes, a.in_order, a.stats_ok);
    CHECK(b.writes == 9 && b.in_order == 9 && b.stats_ok == 9, "b %d", b.writes);
    CHECK(a.closes == 1 && a.committed && b.closes == 1 && b.committed, "committed");
    CHECK(g_nlines == 0, "no message: %s", g_lines[0]);
  }
  { /* one sink fails at frame 3: said once, closed uncommitted at once, the other whole */
    gen g = {8, 0, 0, 0, -1};
    rec a = mk(3, 0, ES_PIX_NONE, 0), b = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a, &b};
    CHECK(run(&g, s, 2, &c) == 3, "exit %d", c.exit_code);
    CHECK(a.writes == 3 && a.closes == 1 && !a.committed, "a: %d writes, committed %d", a.writes, a.committed);
    CHECK(b.writes == 8 && b.committed && c.frames == 8, "b: %d", b.writes);
    CHECK(g_nlines == 1 && !strcmp(g_lines[0], "sink0: disk full"), "%d lines: %s", g_nlines, g_lines[0]);
  }
  { /* every sink fails: the run stops early, nothing committed of theirs */
    gen g = {400, 0, 0, 0, -1};
    rec a = mk(2, 0, ES_PIX_NONE, 0), b = mk(4, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a, &b};
    CHECK(run(&g, s, 2, &c) == 3, "exit %d", c.exit_code);
    CHECK(g.next < 400 && c.pushed < 400, "read on to %d", g.next);
    CHECK(!a.committed && !b.committed && a.closes == 1 && b.closes == 1, "closed once each");
  }
  { /* a stop after frame 2: the frames read finish, committed, exit 130 */
    gen g = {400, 0, 0, 0, -1};
    rec a = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a};
    g_stop_at = 2;
    CHECK(run(&g, s, 1, &c) == 130, "exit %d", c.exit_code);
    g_stop_at = -1;
    CHECK(a.writes >= 2 && a.writes < 400 && a.writes == c.frames && a.committed, "%d writes", a.writes);
  }
  { /* open fails: those opened before are not committed; OPEN_FIRST opens first; a
     * KEEP_EMPTY sink is committed where the run failed after frames began */
    gen g = {5, 0, 0, 0, -1};
    rec a = mk(-1, 0, ES_PIX_NONE, 0), b = mk(-1, 1, ES_PIX_NONE, ES_SINK_OPEN_FIRST);
    rec *s[] = {&a, &b};
    CHECK(run(&g, s, 2, &c) == 3, "exit %d", c.exit_code);
    CHECK(b.open_order == 1 && a.open_order == 0 && !c.started, "order %d %d", b.open_order, a.open_order);
    CHECK(a.closes == 1 && b.closes == 1 && a.writes == 0, "closed");
    CHECK(g_nlines == 1 && !strcmp(g_lines[0], "sink1: cannot open either"), "%s", g_lines[0]);
    /* the input fails at its first frame (read on the run's thread): a sink that took no
     * frame leaves nothing, a KEEP_EMPTY one is committed; the input's line, exit 2 */
    gen g2 = {3, 0, 0, 0, 0};
    rec k = mk(-1, 0, ES_PIX_NONE, ES_SINK_KEEP_EMPTY), o = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s2[] = {&o, &k};
    CHECK(run(&g2, s2, 2, &c) == 2, "exit %d", c.exit_code);
    CHECK(k.committed && k.closes == 1 && !o.committed && o.closes == 1 && k.writes == 0, "keep empty");
    CHECK(g_nlines == 1 && !strcmp(g_lines[0], "gen: frame 0 is short"), "%s", g_lines[0]);
  }
  { /* a source failing before its first frame: no sink opened, its line, exit 2 */
    gen g = {5, 0, 1, 0, -1};
    rec a = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a};
    CHECK(run(&g, s, 1, &c) == 2, "exit %d", c.exit_code);
    CHECK(a.open_order == 0 && a.closes == 1 && !a.committed, "sink opened");
    CHECK(g_nlines == 1 && !strcmp(g_lines[0], "gen: cannot open"), "%s", g_lines[0]);
  }
  { /* past ES_RUN_MAX_SINKS: refused, and the sink closed (owned from the call) */
    es_run_config cfg;
    gen g = {1, 0, 0, 0, -1};
    es_source src = {"gen", &g, g_open, g_read, NULL, NULL, NULL, g_close};
    rec r[ES_RUN_MAX_SINKS + 1];
    memset(r, 0, sizeof r);
    es_run_config_default(&cfg);
    CHECK(es_run_create(&g_run, &cfg, &src) == ES_OK, "create");
    for (int i = 0; i <= ES_RUN_MAX_SINKS; i++) {
      es_sink k = sink_of(&r[i], "x");
      int rc = es_run_add_sink(g_run, &k);
      CHECK(rc == (i < ES_RUN_MAX_SINKS ? ES_OK : ES_ERR_USAGE), "add %d: %d", i, rc);
    }
    CHECK(r[ES_RUN_MAX_SINKS].closes == 1 && r[0].closes == 0, "the extra one closed");
    es_run_destroy(&g_run);
    CHECK(r[0].closes == 1 && !r[0].committed && g.closed == 1, "destroy closes");
  }
  if (es_test_failures) fprintf(stderr, "test_pipeline_run: %d failure(s)\n", es_test_failures);
  else printf("test_pipeline_run: ok\n");
  return es_test_failures != 0;
}
