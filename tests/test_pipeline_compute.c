/*
 * test_pipeline_compute.c - es_compute against es_cpu_run called directly: random images of
 * odd sizes (8 and 16 bit, padded strides), random parameters and renderings, the same bits
 * in map, statistics and planes; several threads calling es_compute on one context at once;
 * injected faults (ES_FAULT_INJECT) retried with identical output.
 */
#include <pthread.h>

#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"

/* One random case on ctx (whose params are p): es_compute vs the reference. */
static void one_case(es_context *ctx, const es_params *p, int depth, int bins, int w, int h,
                     const char *what) {
  size_t bps = depth == 16 ? 2 : 1;
  size_t stride = (size_t)w * bps + (size_t)es_test_range(0, 5) * bps;
  void *data = malloc(stride * (size_t)h);
  if (!data) {
    CHECK(0, "out of memory");
    return;
  }
  pt_fill(data, w, h, stride, depth);
  es_image img = {data, w, h, stride, depth};
  es_render r;
  es_render_default(&r);
  r.format = es_test_range(0, 5); /* ES_PIX_NONE .. ES_PIX_YUV420P */
  r.colormap = es_test_range(0, 4);
  r.range_auto = es_test_range(0, 1);
  r.overlay = es_test_range(0, 2) == 0 ? 0.0f : (float)es_test_range(0, 100) / 100.0f;
  r.overlay_on = es_test_range(0, 1);

  pt_result ref, got;
  char msg[256] = "";
  if (pt_result_init(&ref, w, h, r.format) || pt_result_init(&got, w, h, r.format)) {
    CHECK(0, "out of memory");
    goto end;
  }
  int rc = pt_reference(&img, p, bins, &r, &ref, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_cpu_run: %d %s", what, rc, msg);
  rc = es_compute(ctx, &img, got.map, got.map_stride, &got.stats, &r, &got.pix);
  CHECK(rc == ES_OK, "%s: es_compute: %d %s", what, rc, es_context_error(ctx));
  if (rc == ES_OK) {
    pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, what);
    pt_stats_equal(&ref.stats, &got.stats, what);
    pt_pix_equal(&ref.pix, &got.pix, r.format, w, h, what);
  }
  /* Map only: no stats, no rendering. */
  memset(got.map, 0xff, got.map_stride * (size_t)h * sizeof(float));
  rc = es_compute(ctx, &img, got.map, got.map_stride, NULL, NULL, NULL);
  CHECK(rc == ES_OK, "%s: es_compute map only: %d %s", what, rc, es_context_error(ctx));
  if (rc == ES_OK) pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, what);
end:
  pt_result_free(&ref);
  pt_result_free(&got);
  free(data);
}

typedef struct thread_arg {
  es_context *ctx;
  es_params p;
  int bins;
  uint64_t seed;
} thread_arg;

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;

static void *compute_thread(void *arg) {
  thread_arg *a = arg;
  for (int i = 0; i < 6; i++) {
    /* es_test_rand has one global state: draw sizes and content under a lock; the
     * computations run outside it, at the same time on the shared context. */
    pthread_mutex_lock(&rng_lock);
    int w = es_test_range(1, 120), h = es_test_range(1, 90);
    size_t stride = (size_t)w;
    uint8_t *data = malloc(stride * (size_t)h);
    pt_fill(data, w, h, stride, 8);
    pt_result ref, got;
    pt_result_init(&ref, w, h, ES_PIX_NONE);
    pt_result_init(&got, w, h, ES_PIX_NONE);
    pthread_mutex_unlock(&rng_lock);
    es_image img = {data, w, h, stride, 8};
    char msg[256] = "";
    int rc = es_compute(a->ctx, &img, got.map, got.map_stride, &got.stats, NULL, NULL);
    CHECK(rc == ES_OK, "threaded es_compute: %d", rc);
    rc = pt_reference(&img, &a->p, a->bins, NULL, &ref, msg, sizeof msg);
    CHECK(rc == ES_OK, "reference: %s", msg);
    pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, "threaded");
    pt_stats_equal(&ref.stats, &got.stats, "threaded");
    pt_result_free(&ref);
    pt_result_free(&got);
    free(data);
  }
  return NULL;
}

int main(void) {
  es_test_seed("test_pipeline_compute");
  unsetenv("ES_FAULT_INJECT");

  /* Random cases. */
  for (int round = 0; round < 24; round++) {
    int depth = es_test_range(0, 2) == 0 ? 16 : 8;
    es_config c;
    es_config_default(&c);
    pt_random_params(&c.params, depth);
    c.threads = es_test_range(0, 3);
    c.stats_bins = es_test_range(1, 64);
    c.device = es_test_range(0, 1) ? ES_DEVICE_AUTO : ES_DEVICE_CPU;
    c.verbose = 0;
    es_context *ctx = NULL;
    char msg[256];
    int rc = es_context_create(&ctx, &c, msg, sizeof msg);
    CHECK(rc == ES_OK, "create: %s", msg);
    if (rc) continue;
    int w = es_test_range(1, 133), h = es_test_range(1, 71);
    char what[160];
    snprintf(what, sizeof what, "round %d: %dx%d depth %d K=%d %s %s L=%d base %d", round, w, h,
             depth, c.params.window, c.params.shape ? "disk" : "square",
             c.params.border ? "reflect" : "clip", c.params.levels, c.params.base);
    one_case(ctx, &c.params, depth, c.stats_bins, w, h, what);
    es_context_destroy(&ctx);
  }

  /* Several threads on one context. */
  {
    es_config c;
    es_config_default(&c);
    c.threads = 2;
    c.verbose = 0;
    es_context *ctx = NULL;
    CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
    pthread_t t[4];
    thread_arg a = {ctx, c.params, c.stats_bins, 0};
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, compute_thread, &a);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    es_context_destroy(&ctx);
  }

  /* Fault injection: calls 1 and 2 fail on their first attempt, are retried, same bits. */
  {
    setenv("ES_FAULT_INJECT", "frames=1,2", 1);
    es_config c;
    es_config_default(&c);
    c.threads = 2;
    c.verbose = 1; /* the warning lines go to stderr, as a user would see them */
    es_context *ctx = NULL;
    CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create with faults");
    unsetenv("ES_FAULT_INJECT");
    for (int i = 0; i < 4; i++) {
      char what[64];
      snprintf(what, sizeof what, "fault-injected call %d", i);
      one_case(ctx, &c.params, 8, c.stats_bins, es_test_range(5, 77), es_test_range(5, 51), what);
    }
    /* one_case makes two calls each: indexes 0..7; 1 and 2 were injected once each. */
    CHECK(es_context_retries(ctx) == 2, "retries %lld, want 2", (long long)es_context_retries(ctx));
    es_context_destroy(&ctx);
  }

  /* The injector's keys: frames= (first attempts) and gpus= (every attempt on those GPU
   * ordinals; test_gpu_pipeline's broken-GPU cases), in either order. */
  {
    static es_fault f, g;
    es_fault_parse(&f, "frames=3,7,gpus=1,2");
    CHECK(f.n == 2 && f.frame[0] == 3 && f.frame[1] == 7, "frames=3,7,gpus=1,2: %d frames", f.n);
    CHECK(f.gpus == 6, "frames=3,7,gpus=1,2: gpu mask %#llx, want 0x6", (unsigned long long)f.gpus);
    es_fault_parse(&f, "gpus=0,frames=5");
    CHECK(f.n == 1 && f.frame[0] == 5 && f.gpus == 1, "gpus=0,frames=5: %d frames, mask %#llx", f.n,
          (unsigned long long)f.gpus);
    CHECK(es_fault_gpu(&f, 0) && !es_fault_gpu(&f, 1) && !es_fault_gpu(&f, -1) &&
              !es_fault_gpu(&f, 64) && !es_fault_gpu(NULL, 0),
          "es_fault_gpu");
    es_fault_copy(&g, &f);
    CHECK(g.gpus == 1 && g.n == 1 && es_fault_take(&g, 5) && !es_fault_take(&g, 5),
          "es_fault_copy: mask %#llx, n %d", (unsigned long long)g.gpus, g.n);
    es_fault_parse(&f, "frames=2");
    CHECK(f.n == 1 && f.gpus == 0, "frames=2: %d frames, mask %#llx", f.n,
          (unsigned long long)f.gpus);
    es_fault_parse(&f, "gpus=64,-1");
    CHECK(f.n == 0 && f.gpus == 0, "gpus=64,-1: mask %#llx", (unsigned long long)f.gpus);
    /* A broken GPU the context does not use (CPU only here, or no such GPU) changes
     * nothing: no retries. */
    setenv("ES_FAULT_INJECT", "gpus=0", 1);
    es_config c;
    es_config_default(&c);
    c.device = ES_DEVICE_CPU;
    c.threads = 2;
    es_context *ctx = NULL;
    CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create with gpus=0");
    unsetenv("ES_FAULT_INJECT");
    if (ctx) {
      one_case(ctx, &c.params, 8, c.stats_bins, es_test_range(5, 77), es_test_range(5, 51),
               "gpus=0 on the CPU");
      CHECK(es_context_retries(ctx) == 0, "gpus=0 on the CPU: %lld retries",
            (long long)es_context_retries(ctx));
      es_context_destroy(&ctx);
    }
  }
  return es_test_done("test_pipeline_compute");
}
