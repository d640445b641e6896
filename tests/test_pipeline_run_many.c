/*
 * test_pipeline_run_many.c - several es_runs at once over ONE context (es_run_config.context,
 * issue 31: a list of videos in one run, the GPUs opened once). Sources of generated frames
 * (each its own content, size and length) and sinks that keep a checksum of every item's
 * map and statistics: each source run alone on a context of its own, then all of them at
 * once on threads of their own over one shared context, must give the same items bit for
 * bit, in order; on the CPU, then under auto with every frame wanting a GPU (the GPUs opening
 * in the background while the runs start: where there are GPUs the runs share them). The
 * shared context outlives the runs (es_run_destroy leaves it), is what
 * es_run_context answers, and takes a run after the others are gone. A source failing among
 * good ones fails its run alone.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "entropy_stream.h"
#include "es_test.h"

enum { NSRC = 6, MAXF = 40 };

typedef struct gen {
  int w, h, frames, seed, fail_at, next;
} gen;
static int g_open(es_source *s, const es_stage_env *env, es_source_info *in, char *msg, size_t len) {
  gen *g = s->self;
  (void)env, (void)msg, (void)len;
  memset(in, 0, sizeof *in);
  in->width = g->w, in->height = g->h, in->depth = 8, in->fps_num = 25, in->fps_den = 1;
  in->tb_num = 1, in->tb_den = 25, in->frames = g->frames;
  return ES_OK;
}
static int g_read(es_source *s, void *dst, size_t stride, es_source_frame *fr, char *msg, size_t len) {
  gen *g = s->self;
  if (g->next >= g->frames) return ES_ERR_EOF;
  if (!dst) return ES_ERR_AGAIN;
  if (g->next == g->fail_at) {
    snprintf(msg, len, "frame %d is short", g->next);
    return ES_ERR_INPUT;
  }
  uint32_t x32 = (uint32_t)(g->seed * 2654435761u + g->next * 40503u + 1);
  for (int y = 0; y < g->h; y++)
    for (int x = 0; x < g->w; x++) {
      x32 ^= x32 << 13, x32 ^= x32 >> 17, x32 ^= x32 << 5; /* xorshift32: texture */
      ((uint8_t *)dst)[y * stride + x] = (uint8_t)((x * g->seed + y * 3) / 4 + (x32 & 15));
    }
  fr->pts = g->next;
  fr->pts_seconds = g->next / 25.0;
  g->next++;
  return ES_OK;
}
static void g_close(es_source *s) { (void)s; }

/* What a sink saw: per item its index and a checksum of the map's and statistics' bytes. */
typedef struct seen {
  int n, committed;
  int64_t index[MAXF];
  uint64_t sum[MAXF];
} seen;
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
static int k_open(es_sink *k, const es_source_info *in, es_sink_needs *n, char *msg, size_t len) {
  (void)k, (void)in, (void)msg, (void)len;
  n->want_map = 1;
  n->want_stats = 1;
  return ES_OK;
}
static int k_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  seen *s = k->self;
  (void)msg, (void)len;
  if (s->n >= MAXF) return ES_ERR_OUTPUT;
  uint64_t h = 1469598103934665603ull;
  for (int y = 0; y < it->height; y++)
    h = fnv(h, it->map + (size_t)y * it->map_stride, (size_t)it->width * sizeof(float));
  h = fnv(h, &it->stats->mean, sizeof it->stats->mean);
  h = fnv(h, &it->stats->std, sizeof it->stats->std);
  h = fnv(h, &it->stats->min, sizeof it->stats->min);
  h = fnv(h, &it->stats->max, sizeof it->stats->max);
  s->index[s->n] = it->index;
  s->sum[s->n] = h;
  s->n++;
  return ES_OK;
}
static int k_close(es_sink *k, int commit, char *msg, size_t len) {
  (void)msg, (void)len;
  ((seen *)k->self)->committed = commit;
  return ES_OK;
}

static void quiet(void *user, const char *line) {
  atomic_int *n = user;
  (void)line;
  atomic_fetch_add(n, 1);
}

typedef struct job {
  gen g;
  seen s;
  es_context *ctx; /* shared, or NULL: the run's own */
  es_context *ran_on;
  int code;
} job;

static atomic_int g_lines;
/* The device of a pass: the CPU, then auto with every frame wanting a GPU and the GPUs
 * opening in the background while the runs start (as the CLI's), where GPUs exist (without
 * one it computes on the CPU). */
static int g_device = ES_DEVICE_CPU;
static void set_device(es_config *c) {
  c->device = g_device;
  c->threads = 2;
  c->params.window = 5;
  if (g_device == ES_DEVICE_AUTO) {
    c->cpu_below = 1;
    c->gpu_background = 1;
  }
}
static void *run_one(void *arg) {
  job *j = arg;
  es_run_config rc;
  es_run *run = NULL;
  es_source src = {"gen", &j->g, g_open, g_read, NULL, NULL, NULL, g_close, 0};
  es_sink k = {"rec", NULL, 0, &j->s, k_open, k_write, NULL, k_close};
  es_run_config_default(&rc);
  set_device(&rc.cfg);
  rc.cfg.message = quiet;
  rc.cfg.message_user = &g_lines;
  rc.context = j->ctx;
  j->g.next = 0;
  memset(&j->s, 0, sizeof j->s);
  j->code = -1;
  if (es_run_create(&run, &rc, &src) != ES_OK) return NULL;
  es_run_add_sink(run, &k);
  es_run_execute(run);
  es_run_counts c;
  es_run_get_counts(run, &c);
  j->code = c.exit_code;
  j->ran_on = es_run_context(run);
  es_run_destroy(&run);
  return NULL;
}

static int pass(void) {
  job alone[NSRC], many[NSRC];
  pthread_t th[NSRC];
  es_context *ctx = NULL;
  es_config cfg;
  char msg[256];
  int rc;

  memset(alone, 0, sizeof alone);
  for (int i = 0; i < NSRC; i++) {
    gen g = {96 + 16 * (i % 3), 64 + 8 * i, 12 + 5 * i, i + 3, -1, 0};
    alone[i].g = g;
    run_one(&alone[i]);
    CHECK(alone[i].code == 0 && alone[i].s.n == g.frames && alone[i].s.committed,
          "source %d alone: exit %d, %d of %d items", i, alone[i].code, alone[i].s.n, g.frames);
  }

  es_config_default(&cfg);
  set_device(&cfg);
  cfg.message = quiet;
  cfg.message_user = &g_lines;
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK, "context: %s", msg);
  if (rc != ES_OK) return 1;

  /* All at once on the shared context; source 4 fails at its frame 7. */
  for (int round = 0; round < 3; round++) {
    memcpy(many, alone, sizeof many);
    many[4].g.fail_at = round == 1 ? 7 : -1;
    for (int i = 0; i < NSRC; i++) many[i].ctx = ctx;
    for (int i = 0; i < NSRC; i++) CHECK(pthread_create(&th[i], NULL, run_one, &many[i]) == 0, "thread");
    for (int i = 0; i < NSRC; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NSRC; i++) {
      const int failing = round == 1 && i == 4;
      CHECK(many[i].ran_on == ctx, "round %d source %d: ran on %p, not the shared %p", round, i,
            (void *)many[i].ran_on, (void *)ctx);
      CHECK(many[i].code == (failing ? 2 : 0), "round %d source %d: exit %d", round, i, many[i].code);
      const int want = failing ? 7 : alone[i].s.n;
      CHECK(many[i].s.n == want, "round %d source %d: %d items, want %d", round, i, many[i].s.n, want);
      for (int f = 0; f < many[i].s.n && f < want; f++) {
        CHECK(many[i].s.index[f] == f, "round %d source %d: item %d has index %lld", round, i, f,
              (long long)many[i].s.index[f]);
        CHECK(many[i].s.sum[f] == alone[i].s.sum[f],
              "round %d source %d frame %d: not the single run's map and statistics", round, i, f);
      }
    }
  }
  /* The runs left the context whole: one more run on it, alone. */
  memcpy(&many[0], &alone[0], sizeof many[0]);
  many[0].ctx = ctx;
  run_one(&many[0]);
  CHECK(many[0].code == 0 && many[0].s.n == alone[0].s.n && many[0].s.sum[3] == alone[0].s.sum[3],
        "a run after the others: exit %d, %d items", many[0].code, many[0].s.n);
  {
    char d[64];
    printf("test_pipeline_run_many: device %s: computed on %s\n",
           g_device == ES_DEVICE_CPU ? "cpu" : "auto", es_context_describe(ctx, d, sizeof d));
  }
  es_context_destroy(&ctx);
  return 0;
}

int main(void) {
  pass();
  g_device = ES_DEVICE_AUTO;
  pass();
  if (es_test_failures) return 1;
  printf("test_pipeline_run_many: %d sources, one at a time and all at once on one context: "
         "the same items bit for bit\n", NSRC);
  return 0;
}
