/*
 * test_pipeline_gpus_list.c - a caller's context with a gpus list that opens in the
 * background and then cannot be opened (ES_FAULT_INJECT=bglist: the path a GPU host's
 * /proc list lets a list take, without a GPU; opendelay=MS: the opening fails after the run's
 * last frame). Each es_run on that context fails with exit 4, its sink uncommitted, and says
 * why once: also the second run on the context (it said nothing: the context's one saying
 * had gone to the first run). A run whose frames no GPU would take (below cpu_below) never
 * opens the list and commits. With FFmpeg, es_many on that context (its list failed before
 * it began, so no video's run meets it): exit 4, every video failed, no statistics file,
 * and the failure said once, by es_many (nothing was said, and the videos not begun were
 * left out of the counts). Built without CUDA there is no list to open: skipped.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_test.h"

enum { W = 64, H = 48 };

typedef struct gen { int frames, next; } gen;
static int g_open(es_source *s, const es_stage_env *env, es_source_info *in, char *msg,
                  size_t len) {
  (void)s, (void)env, (void)msg, (void)len;
  memset(in, 0, sizeof *in);
  in->width = W, in->height = H, in->depth = 8, in->fps_num = 25, in->fps_den = 1;
  in->tb_num = 1, in->tb_den = 25, in->frames = ((gen *)s->self)->frames;
  return ES_OK;
}
static int g_read(es_source *s, void *dst, size_t stride, es_source_frame *fr, char *msg,
                  size_t len) {
  gen *g = s->self;
  (void)msg, (void)len;
  if (g->next >= g->frames) return ES_ERR_EOF;
  if (!dst) return ES_ERR_AGAIN;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) ((uint8_t *)dst)[y * stride + x] = (uint8_t)(x * 5 + y + g->next);
  fr->pts = g->next;
  fr->pts_seconds = g->next / 25.0;
  g->next++;
  return ES_OK;
}
static void g_close(es_source *s) { (void)s; }

typedef struct rec { int writes, closes, committed; } rec;
static int r_open(es_sink *k, const es_source_info *in, es_sink_needs *n, char *msg, size_t len) {
  (void)k, (void)in, (void)msg, (void)len;
  n->want_stats = 1;
  return ES_OK;
}
static int r_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  (void)it, (void)msg, (void)len;
  ((rec *)k->self)->writes++;
  return ES_OK;
}
static int r_close(es_sink *k, int commit, char *msg, size_t len) {
  (void)msg, (void)len;
  ((rec *)k->self)->closes++;
  ((rec *)k->self)->committed = commit;
  return ES_OK;
}

static int g_lines, g_gpu_lines;
static void on_message(void *user, const char *line) {
  (void)user;
  g_lines++;
  g_gpu_lines += strstr(line, "GPU") != NULL;
  printf("  message: %s\n", line);
}

/* One run of n frames on ctx; its exit code, the sink's record in *r. */
static int run_on(es_context *ctx, int n, rec *r) {
  es_run_config cfg;
  es_run *run = NULL;
  gen g = {n, 0};
  es_source src = {"gen", &g, g_open, g_read, NULL, NULL, NULL, g_close};
  es_sink k = {"rec", NULL, 0, r, r_open, r_write, NULL, r_close};
  es_run_counts c;
  memset(r, 0, sizeof *r);
  es_run_config_default(&cfg);
  cfg.cfg.message = on_message; /* the run's own lines */
  cfg.context = ctx;
  g_lines = g_gpu_lines = 0;
  CHECK(es_run_create(&run, &cfg, &src) == ES_OK, "run create");
  if (!run) return -1;
  CHECK(es_run_add_sink(run, &k) == ES_OK, "add sink");
  es_run_execute(run);
  es_run_get_counts(run, &c);
  es_run_destroy(&run);
  return c.exit_code;
}

/* A context listing GPU 63, opened in the background, that fails (after delay_ms): no host
 * has that GPU (a GPU 0 would open on a GPU host; bglist takes the background path for any
 * list). */
static es_context *list_context(int delay_ms, int64_t cpu_below) {
  char spec[64];
  snprintf(spec, sizeof spec, "bglist,opendelay=%d", delay_ms);
  setenv("ES_FAULT_INJECT", spec, 1);
  es_config c;
  es_config_default(&c);
  c.gpu_background = 1;
  c.ngpus = 1;
  c.gpus[0] = 63;
  c.cpu_below = cpu_below;
  c.threads = 2;
  c.message = on_message;
  es_context *ctx = NULL;
  char msg[256] = "";
  CHECK(es_context_create(&ctx, &c, msg, sizeof msg) == ES_OK, "context: %s", msg);
  unsetenv("ES_FAULT_INJECT");
  CHECK(ctx && !es_context_gpus_open(ctx) && !es_context_gpus_asked(ctx),
        "the list did not wait to be asked for");
  return ctx;
}

int main(void) {
  if (!es_gpu_built()) {
    printf("test_pipeline_gpus_list: built without CUDA (no list opens in the background), "
           "skipped\n");
    return ES_TEST_SKIP;
  }
  rec r;
  for (int delay = 0; delay <= 400; delay += 400) {
    es_context *ctx = list_context(delay, 0);
    if (!ctx) break;
    for (int k = 1; k <= 2; k++) {
      const int code = run_on(ctx, 6, &r);
      printf("opening failing after %d ms, run %d on the context: exit %d, %d written, "
             "committed %d, %d line(s)\n", delay, k, code, r.writes, r.committed, g_lines);
      CHECK(code == 4, "delay %d run %d: exit %d, want 4", delay, k, code);
      CHECK(r.closes == 1 && !r.committed, "delay %d run %d: the sink committed", delay, k);
      CHECK(g_lines == 1 && g_gpu_lines == 1,
            "delay %d run %d: %d line(s) (%d of the GPUs), want the failure said once", delay,
            k, g_lines, g_gpu_lines);
    }
#ifdef ES_HAVE_FFMPEG
    /* es_many on the same context: no video begins a run, es_many itself says it. */
    const char *src = getenv("ES_SRC");
    char clip[1024], dir[] = "/tmp/es-test-gpus-list-XXXXXX", stats[64];
    snprintf(clip, sizeof clip, "%s/samples/clip.mp4", src ? src : ".");
    if (access(clip, R_OK) == 0 && mkdtemp(dir)) {
      snprintf(stats, sizeof stats, "%s/s.csv", dir);
      const char *in[3] = {clip, clip, clip};
      es_many_config mc;
      es_many_config_default(&mc);
      mc.cfg.message = on_message;
      mc.stats = stats;
      mc.runs = 2;
      mc.context = ctx;
      es_many *m = NULL;
      es_many_counts mk;
      g_lines = g_gpu_lines = 0;
      CHECK(es_many_create(&m, &mc, in, 3) == ES_OK, "es_many_create");
      if (m) {
        es_many_execute(m);
        es_many_get_counts(m, &mk);
        es_many_destroy(&m);
        printf("es_many on the context (delay %d): exit %d, %zu of %zu failed, %d line(s)\n",
               delay, mk.exit_code, mk.failed, mk.videos, g_lines);
        CHECK(mk.exit_code == 4 && mk.failed == 3, "es_many: exit %d, %zu failed",
              mk.exit_code, mk.failed);
        CHECK(g_lines == 1 && g_gpu_lines == 1, "es_many: %d line(s), want the failure once",
              g_lines);
        CHECK(access(stats, F_OK) != 0, "es_many: the statistics file was written");
      }
      unlink(stats);
      rmdir(dir);
    }
#endif
    es_context_destroy(&ctx);
  }
  /* Frames below cpu_below: the list is never asked for, the run commits. */
  {
    es_context *ctx = list_context(0, (int64_t)W * H + 1);
    if (ctx) {
      const int code = run_on(ctx, 6, &r);
      CHECK(code == 0 && r.writes == 6 && r.committed && g_lines == 0,
            "small frames: exit %d, %d written, committed %d, %d line(s)", code, r.writes,
            r.committed, g_lines);
      CHECK(!es_context_gpus_asked(ctx), "small frames asked for the GPUs");
      es_context_destroy(&ctx);
    }
  }
  if (es_test_failures) {
    fprintf(stderr, "test_pipeline_gpus_list: %d failure(s)\n", es_test_failures);
    return 1;
  }
  printf("test_pipeline_gpus_list: ok\n");
  return 0;
}
