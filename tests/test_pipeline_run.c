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
 * The run's mask reaches the compute (NaN exactly outside) and one of another size than the
 * frames is refused before any sink opens (exit 2); the index base numbers every item and
 * a failing sink's frame. With FFmpeg (and the ffmpeg program's libx264), the video
 * source's shares of an H.264 clip of B-frames and a keyframe every 12 frames (seek, the
 * time stamps kept, the frame count, the end at the next share's first frame) against the
 * whole clip read by the same source.
 */
#include <math.h>
#include <stdatomic.h>
#include <unistd.h>

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
  int base;        /* the run's index base: the first item's index */
  int want_map;    /* asks for the float map, and counts where it is NaN: */
  int map_ok;      /* maps NaN exactly outside g_mask and finite inside */
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
  n->want_map = r->want_map;
  return ES_OK;
}
static const uint8_t *g_mask; /* the run's mask (W x H, stride W), or NULL */
static int g_mask_w = W;
static int64_t g_base, g_failed_at;
static int r_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  rec *r = k->self;
  if (it->index == r->fail_at) {
    snprintf(msg, len, "disk full");
    return ES_ERR_OUTPUT;
  }
  r->in_order += it->index == r->writes + r->base;
  if (r->want_map && it->map) {
    int ok = 1;
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        ok &= !isnan(it->map[y * it->map_stride + x]) == (g_mask[y * W + x] != 0);
    r->map_ok += ok;
  }
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
  cfg.mask = g_mask;
  cfg.mask_stride = W;
  cfg.mask_width = g_mask_w;
  cfg.mask_height = H;
  cfg.mask_name = "m.png";
  cfg.index_base = g_base;
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
  g_failed_at = es_run_sink_failed_at(g_run, 0);
  es_run_destroy(&g_run);
  CHECK(g_run == NULL && g->closed == 1, "destroy closes the source once (%d)", g->closed);
  return c->exit_code;
}

/* Reads src (opened on a zeroed env) to its end: each frame's pts into pts (up to max),
 * the count returned, the end's status in *end_rc, the source's end_pts in *end. */
static int read_all(es_source *src, es_source_info *in, int64_t *pts, int max, int *end_rc,
                    int64_t *end) {
  es_stage_env env;
  char msg[256] = "";
  int n = 0, rc;
  memset(&env, 0, sizeof env);
  rc = src->open(src, &env, in, msg, sizeof msg);
  CHECK(rc == ES_OK, "open: %s", msg);
  uint8_t *buf = rc == ES_OK ? malloc((size_t)in->width * in->height * 2) : NULL;
  while (buf) {
    es_source_frame fr = {INT64_MIN, NAN, 0, NULL, 0, NULL};
    rc = src->read(src, buf, (size_t)in->width * 2, &fr, msg, sizeof msg);
    if (rc != ES_OK) break;
    if (fr.lend_ref) src->unlend(fr.lend_ref);
    if (n < max) pts[n] = fr.pts;
    n++;
  }
  *end_rc = rc;
  *end = src->end_pts(src);
  free(buf);
  src->close(src);
  return n;
}

/* The video source's share (es_video_source_opts seek, keep, frames) against the whole clip
 * read by the same source: the frames of the range, in order, then the end, whose pts is
 * the next frame's; the ranges of es_shard_video, decoded from their keyframes by a seek. */
static void video_share(void) {
  const char *ff = getenv("ES_HAVE_FFMPEG");
  char dir[] = "/tmp/es_run_XXXXXX", clip[64], cmd[256];
  int64_t all[512], got[512], end_all, end;
  es_source src;
  es_source_info in;
  int n_all, n, rc, seeks = 0;
  int64_t next = 0; /* the next share's first frame: the shares are the whole clip */
  if (!ff || strcmp(ff, "1") || !mkdtemp(dir)) {
    printf("test_pipeline_run: video source: skipped (no FFmpeg)\n");
    return;
  }
  snprintf(clip, sizeof clip, "%s/gop.mp4", dir);
  snprintf(cmd, sizeof cmd, "ffmpeg -v error -f lavfi -i testsrc2=s=64x48:r=25 -frames:v 60 "
           "-c:v libx264 -g 12 -bf 2 -pix_fmt yuv420p '%s'", clip);
  if (system(cmd) != 0) {
    printf("test_pipeline_run: video source: skipped (ffmpeg cannot make an H.264 clip)\n");
    rmdir(dir);
    return;
  }
  es_video_source_opts whole = {.max_pixels = (int64_t)1 << 31};
  CHECK(es_source_video(&src, clip, &whole) == ES_OK, "source");
  n_all = read_all(&src, &in, all, 512, &rc, &end_all);
  CHECK(n_all == 60 && rc == ES_ERR_EOF && end_all > all[n_all - 1], "%d frames", n_all);
  if (n_all < 20) goto end;
  { /* a range by hand, no seek: frames 5..8, then the end at frame 9's pts */
    es_video_source_opts o = whole;
    o.keep = 1, o.keep_from = all[5], o.keep_to = all[9], o.frames = 4;
    CHECK(es_source_video(&src, clip, &o) == ES_OK, "source");
    n = read_all(&src, &in, got, 512, &rc, &end);
    CHECK(n == 4 && rc == ES_ERR_EOF && in.frames == 4, "%d frames, %lld expected", n,
          (long long)in.frames);
    for (int i = 0; i < n && i < 4; i++) CHECK(got[i] == all[5 + i], "frame %d: pts %lld", i, (long long)got[i]);
    CHECK(end == all[9], "end %lld, want %lld", (long long)end, (long long)all[9]);
  }
  for (int k = 0; k < 3; k++) { /* es_shard_video's shares */
    es_shard sh = {k, 3};
    es_shard_range r;
    char msg[256] = "";
    CHECK(es_shard_video(&sh, clip, &r, msg, sizeof msg) == ES_OK, "shard %d: %s", k, msg);
    CHECK(r.frames > 0 && r.first == next, "share %d: frames %lld from %lld, want from %lld", k,
          (long long)r.frames, (long long)r.first, (long long)next);
    next = r.first + r.frames;
    if (r.frames == 0) continue;
    seeks += r.seek;
    es_video_source_opts o = whole;
    o.seek = r.seek, o.seek_ts = r.seek_ts, o.keep = 1, o.keep_from = r.start_ts;
    o.keep_to = r.end_ts, o.frames = r.frames;
    CHECK(es_source_video(&src, clip, &o) == ES_OK, "source");
    n = read_all(&src, &in, got, 512, &rc, &end);
    CHECK(n == r.frames && rc == ES_ERR_EOF && r.first + n <= n_all, "share %d: %d frames of %lld",
          k, n, (long long)r.frames);
    for (int i = 0; i < n && r.first + i < n_all; i++)
      CHECK(got[i] == all[r.first + i], "share %d frame %d: pts %lld", k, i, (long long)got[i]);
    const int64_t want = r.first + n < n_all ? all[r.first + n] : end_all;
    CHECK(end == want, "share %d: end %lld, want %lld", k, (long long)end, (long long)want);
  }
  CHECK(seeks == 2 && next == n_all, "%d shares decoded from a seek, want 2; %lld frames in all",
        seeks, (long long)next);
end:
  unlink(clip);
  rmdir(dir);
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
  { /* the run's mask: every map NaN exactly outside it */
    static uint8_t m[W * H];
    for (int i = 0; i < W * H; i++) m[i] = (i * 7919) % 5 != 0; /* a fifth outside */
    gen g = {6, 0, 0, 0, -1};
    rec a = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a};
    a.want_map = 1;
    g_mask = m;
    CHECK(run(&g, s, 1, &c) == 0, "exit %d: %s", c.exit_code, g_lines[0]);
    CHECK(a.writes == 6 && a.map_ok == 6, "%d of %d maps follow the mask", a.map_ok, a.writes);
    /* another size than the frames': refused before any sink opens, exit 2 */
    gen g2 = {6, 0, 0, 0, -1};
    rec b = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s2[] = {&b};
    g_mask_w = W - 1;
    CHECK(run(&g2, s2, 1, &c) == 2, "exit %d", c.exit_code);
    CHECK(b.open_order == 0 && b.closes == 1 && !b.committed && !c.started, "a sink opened");
    CHECK(g_nlines == 1 && !strcmp(g_lines[0], "gen: 37x23, the mask m.png 36x23: not the same size"),
          "%s", g_lines[0]);
    g_mask = NULL;
    g_mask_w = W;
  }
  { /* the index base: every item numbered from it, a sink's failing frame too */
    gen g = {7, 0, 0, 0, -1};
    rec a = mk(1004, 0, ES_PIX_NONE, 0), b = mk(-1, 0, ES_PIX_NONE, 0);
    rec *s[] = {&a, &b};
    a.base = b.base = 1000;
    g_base = 1000;
    CHECK(run(&g, s, 2, &c) == 3, "exit %d", c.exit_code);
    g_base = 0;
    CHECK(a.writes == 4 && a.in_order == 4 && b.writes == 7 && b.in_order == 7 &&
              b.last_index == 1006, "b: %d in order, last %d", b.in_order, b.last_index);
    CHECK(g_failed_at == 1004, "failed at %lld", (long long)g_failed_at);
  }
  video_share();
  if (es_test_failures) fprintf(stderr, "test_pipeline_run: %d failure(s)\n", es_test_failures);
  else printf("test_pipeline_run: ok\n");
  return es_test_failures != 0;
}
