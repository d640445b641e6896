/*
 * test_gpu_pipeline.c - the engine's GPU scheduling (skipped without a GPU): es_compute on
 * --device gpu and auto (small frames on the CPU, large on a GPU, very large split over all
 * GPUs) bit-identical to es_cpu_run; a stream on the GPUs with frames pulled in order and
 * identical; injected faults on GPU frames retried elsewhere with identical output.
 */
#include <pthread.h>
#include <unistd.h>

#include "es_gpu.h"
#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"

static void compute_case(es_context *ctx, const es_params *p, int bins, int w, int h, int depth,
                         int want_gpu, const char *what) {
  size_t bps = depth == 16 ? 2 : 1;
  size_t stride = (size_t)w * bps;
  void *data = malloc(stride * (size_t)h);
  pt_fill(data, w, h, stride, depth);
  es_image img = {data, w, h, stride, depth};
  es_render r;
  es_render_default(&r);
  r.format = es_test_range(1, 5);
  r.range_auto = es_test_range(0, 1);
  pt_result ref, got;
  char msg[256] = "";
  pt_result_init(&ref, w, h, r.format);
  pt_result_init(&got, w, h, r.format);
  CHECK(pt_reference(&img, p, bins, &r, &ref, msg, sizeof msg) == ES_OK, "reference: %s", msg);
  int rc = es_compute(ctx, &img, got.map, got.map_stride, &got.stats, &r, &got.pix);
  CHECK(rc == ES_OK, "%s: es_compute: %s", what, es_context_error(ctx));
  if (rc == ES_OK) {
    pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, what);
    pt_stats_equal(&ref.stats, &got.stats, what);
    pt_pix_equal(&ref.pix, &got.pix, r.format, w, h, what);
  }
  (void)want_gpu;
  pt_result_free(&ref);
  pt_result_free(&got);
  free(data);
}

/* Pushes n frames of the given sizes, checks order, device and bits. wait_at >= 0: before
 * pushing frame wait_at, wait for the context's GPUs (gpu_background) and give the stream's
 * joiner a moment to start their threads. Returns the number of frames a GPU computed. */
static int g_pin_asks; /* es_stream_pin_asks of stream_case's last stream */

static int stream_case(es_context *ctx, const es_params *p, int bins, int n, int big,
                       int wait_at, const char *what) {
  int on_gpu = 0;
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  sc.want_stats = 1;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "%s: open: %s", what, es_context_error(ctx));
  if (!s) return 0;
  /* Read before any wait for the GPUs (es_context_config waits for them). */
  const int queue = wait_at >= 0 ? 8 : es_context_config(ctx)->queue;
  const int64_t cpu_below = wait_at >= 0 ? 0 : es_context_config(ctx)->cpu_below;
  const int auto_dev = wait_at >= 0 || es_context_config(ctx)->device == ES_DEVICE_AUTO;
  /* Inputs kept for the comparison: frame i is (w, h) below. */
  void **in = calloc((size_t)n, sizeof *in);
  int *ws = calloc((size_t)n, sizeof *ws), *hs = calloc((size_t)n, sizeof *hs);
  int pushed = 0, pulled = 0;
  while (pulled < n) {
    /* Keep the pool full, then pull one. */
    while (pushed < n && pushed - pulled < queue) {
      if (pushed == wait_at) {
        CHECK(es_context_gpu_count(ctx) > 0, "%s: no GPU after waiting", what);
        usleep(200 * 1000);
      }
      es_frame *f = NULL;
      CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire");
      int w = big && pushed % 2 ? es_test_range(400, 900) : es_test_range(5, 200);
      int h = big && pushed % 2 ? es_test_range(300, 700) : es_test_range(5, 150);
      CHECK(es_stream_reserve(s, f, w, h, 8) == ES_OK, "reserve");
      pt_fill(f->data, w, h, f->stride, 8);
      in[pushed] = malloc((size_t)w * h);
      memcpy(in[pushed], f->data, (size_t)w * h);
      ws[pushed] = w;
      hs[pushed] = h;
      CHECK(es_stream_push(s, f) == ES_OK, "push");
      pushed++;
    }
    if (pushed == n) es_stream_finish(s);
    es_frame *f = NULL;
    int rc = es_stream_pull(s, &f);
    CHECK(rc == ES_OK && f->index == pulled, "%s: pull %d: rc %d", what, pulled, rc);
    if (rc) break;
    CHECK(f->status == ES_OK, "%s: frame %d status %d", what, pulled, f->status);
    int64_t px = (int64_t)ws[pulled] * hs[pulled];
    if (auto_dev && px < cpu_below)
      CHECK(f->device == -1, "%s: small frame %d on device %d", what, pulled, f->device);
    if (f->device >= 0) on_gpu++;
    es_image img = {in[pulled], ws[pulled], hs[pulled], (size_t)ws[pulled], 8};
    pt_result ref;
    char msg[256];
    pt_result_init(&ref, ws[pulled], hs[pulled], ES_PIX_NONE);
    CHECK(pt_reference(&img, p, bins, NULL, &ref, msg, sizeof msg) == ES_OK, "ref");
    char fw[160];
    snprintf(fw, sizeof fw, "%s frame %d (%dx%d, device %d)", what, pulled, ws[pulled],
             hs[pulled], f->device);
    pt_map_equal(ref.map, ref.map_stride, f->map, f->map_stride, ws[pulled], hs[pulled], fw);
    pt_stats_equal(&ref.stats, &f->stats, fw);
    pt_result_free(&ref);
    free(in[pulled]);
    es_stream_release(s, f);
    pulled++;
  }
  es_frame *f = NULL;
  CHECK(es_stream_pull(s, &f) == ES_ERR_EOF, "%s: EOF", what);
  g_pin_asks = es_stream_pin_asks(s);
  es_stream_destroy(&s);
  for (int i = pulled; i < n; i++) free(in[i]);
  free(in);
  free(ws);
  free(hs);
  return on_gpu;
}

/* The library's messages of the broken-GPU case: a callback that calls the library back, as
 * es_config.message allows. The "not used any more" warning was sent under the context's
 * lock, which es_context_error takes: the GPU thread that sent it waited for itself. */
/* es_context_create under ES_FAULT_INJECT=spec (read there only, so unset again at once). */
static int create_with_faults(es_context **ctx, const es_config *c, const char *spec, char *msg,
                              size_t len) {
  setenv("ES_FAULT_INJECT", spec, 1);
  const int rc = es_context_create(ctx, c, msg, len);
  unsetenv("ES_FAULT_INJECT");
  return rc;
}

static atomic_int g_disabled_lines;
static void message_calls_back(void *user, const char *line) {
  es_context *const *pctx = user;
  if (*pctx) (void)es_context_error(*pctx);
  if (strstr(line, "not used any more")) atomic_fetch_add(&g_disabled_lines, 1);
  fprintf(stderr, "entropy-stream: %s\n", line);
}

/* A GPU that fails every job (ES_FAULT_INJECT gpus=): disabled after ES_GPU_DISABLE_STREAK
 * failures in a row, then offered no more work; every frame still identical. */
static void broken_gpu_cases(int ngpu) {
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_GPU;
  c.verbose = 1;
  char msg[256] = "";

  /* One GPU, broken: a stream's frames all end on the CPU, and the GPU is given at most the
   * jobs in flight when it reached the streak (ES_GPU_WORKERS_PER_DEVICE - 1 beyond it). */
  es_config c1 = c;
  c1.ngpus = 1;
  c1.gpus[0] = 0;
  es_context *ctx = NULL;
  c1.message = message_calls_back;
  c1.message_user = &ctx;
  CHECK(create_with_faults(&ctx, &c1, "gpus=0", msg, sizeof msg) == ES_OK,
        "create (gpus=0 broken): %s", msg);
  if (ctx) {
    int g = stream_case(ctx, &c.params, c.stats_bins, 24, 1, -1, "GPU 0 broken");
    CHECK(atomic_load(&g_disabled_lines) == 1, "GPU 0 broken: %d 'not used any more' lines",
          atomic_load(&g_disabled_lines));
    CHECK(g == 0, "GPU 0 broken: %d frames reported as computed on a GPU", g);
    int64_t r = es_context_retries(ctx);
    CHECK(r >= ES_GPU_DISABLE_STREAK && r <= ES_GPU_DISABLE_STREAK + ES_GPU_WORKERS_PER_DEVICE - 1,
          "GPU 0 broken: %lld retries over 24 frames, want %d..%d: a disabled GPU kept getting "
          "frames (or was never disabled)",
          (long long)r, ES_GPU_DISABLE_STREAK,
          ES_GPU_DISABLE_STREAK + ES_GPU_WORKERS_PER_DEVICE - 1);
    es_context_destroy(&ctx);
  }

  /* Two GPUs or more, GPU 1 broken: its own jobs fail (blamed), and failed splits over all
   * GPUs (no device blamed) must not clear that count. Before, each failed split reset it,
   * so with splits in between GPU 1 never reached the streak and every split kept failing
   * first and being retried. */
  if (ngpu < 2) {
    printf("test_gpu_pipeline: broken GPU among several: skipped (one GPU)\n");
    return;
  }
  ctx = NULL;
  CHECK(create_with_faults(&ctx, &c, "gpus=1", msg, sizeof msg) == ES_OK,
        "create (gpus=1 broken): %s", msg);
  if (!ctx) return;
  /* Two GPUs (0 and 1) for this pageable job, whatever this host's measured rates say. */
  ctx->split_force = 2;
  const int W = 4096, H = 2100;
  uint8_t *data = malloc((size_t)W * H);
  float *ref = malloc(sizeof *ref * (size_t)W * H), *map = malloc(sizeof *map * (size_t)W * H);
  pt_fill(data, W, H, (size_t)W, 8);
  es_image img = {data, W, H, (size_t)W, 8};
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = img;
  job.params = c.params;
  job.map = ref;
  job.map_stride = (size_t)W;
  CHECK(es_cpu_run(&job, 0, msg, sizeof msg) == ES_OK, "es_cpu_run: %s", msg);
  job.map = map;
  for (int k = 0; k < ES_GPU_DISABLE_STREAK; k++) {
    /* A job for GPU 1 itself: fails there (counted), retried on another GPU. */
    int device = -2;
    memset(map, 0xff, sizeof *map * (size_t)W * H);
    int rc = es_run_job(ctx, &job, 1, 1, -1, &ctx->fault, &device, msg, sizeof msg);
    CHECK(rc == ES_OK && device != 1, "job %d for broken GPU 1: rc %d device %d: %s", k, rc, device,
          msg);
    CHECK(!memcmp(map, ref, sizeof *map * (size_t)W * H), "job %d for broken GPU 1: map differs",
          k);
    /* A split over every GPU: fails (GPU 1 in it), retried on one GPU. */
    memset(map, 0xff, sizeof *map * (size_t)W * H);
    rc = es_compute(ctx, &img, map, (size_t)W, NULL, NULL, NULL);
    CHECK(rc == ES_OK, "split %d with broken GPU 1: %s", k, es_context_error(ctx));
    CHECK(!memcmp(map, ref, sizeof *map * (size_t)W * H), "split %d with broken GPU 1: map differs",
          k);
  }
  /* Every job for GPU 1 and every split but the last (GPU 1 was disabled just before it)
   * retried once. */
  int64_t before = es_context_retries(ctx);
  CHECK(before == 2 * ES_GPU_DISABLE_STREAK - 1,
        "broken GPU 1: %lld retries, want %d (%d: the last split still included GPU 1, whose "
        "count the failed splits had reset)",
        (long long)before, 2 * ES_GPU_DISABLE_STREAK - 1, 2 * ES_GPU_DISABLE_STREAK);
  /* GPU 1 failed ES_GPU_DISABLE_STREAK of its own jobs: disabled, so no split includes it
   * and nothing fails any more. */
  for (int k = 0; k < 3; k++) {
    memset(map, 0xff, sizeof *map * (size_t)W * H);
    int rc = es_compute(ctx, &img, map, (size_t)W, NULL, NULL, NULL);
    CHECK(rc == ES_OK && !memcmp(map, ref, sizeof *map * (size_t)W * H),
          "after GPU 1 was disabled, compute %d: rc %d or map differs", k, rc);
  }
  CHECK(es_context_retries(ctx) == before,
        "broken GPU 1: %lld more retries after %d failures of its own: it was not disabled "
        "(failed splits reset its count) and splits still include it",
        (long long)(es_context_retries(ctx) - before), ES_GPU_DISABLE_STREAK);
  free(data);
  free(ref);
  free(map);
  es_context_destroy(&ctx);
}

int main(void) {
  es_test_seed("test_gpu_pipeline");
  int ngpu = es_gpu_device_count();
  if (ngpu == 0) {
    printf("test_gpu_pipeline: no GPU visible, skipped\n");
    return ES_TEST_SKIP;
  }
  unsetenv("ES_FAULT_INJECT");
  for (int dev = 0; dev < 2; dev++) {
    es_config c;
    es_config_default(&c);
    c.device = dev == 0 ? ES_DEVICE_GPU : ES_DEVICE_AUTO;
    c.verbose = 1;
    es_context *ctx = NULL;
    char msg[256];
    CHECK(es_context_create(&ctx, &c, msg, sizeof msg) == ES_OK, "create: %s", msg);
    if (!ctx) continue;
    CHECK(es_context_gpu_count(ctx) == ngpu, "gpu count %d of %d", es_context_gpu_count(ctx), ngpu);
    const char *name = dev == 0 ? "gpu" : "auto";
    for (int i = 0; i < 6; i++) {
      char what[80];
      snprintf(what, sizeof what, "%s compute %d", name, i);
      int depth = i % 3 == 2 ? 16 : 8;
      compute_case(ctx, &c.params, c.stats_bins, es_test_range(100, 1300),
                   es_test_range(100, 900), depth, 1, what);
    }
    /* Large enough to be split over every GPU when there are several. */
    compute_case(ctx, &c.params, c.stats_bins, 4001, 2203, 8, 1, "split");
    stream_case(ctx, &c.params, c.stats_bins, 40, 1, -1, name);
    CHECK(es_context_retries(ctx) == 0, "retries without faults: %lld",
          (long long)es_context_retries(ctx));
    es_context_destroy(&ctx);
  }

  /* GPUs opened in the background: the stream starts at once (its first frames on the CPU
   * workers), the GPUs join it once open; every frame identical to the reference. */
  {
    es_config c;
    es_config_default(&c);
    c.gpu_background = 1;
    c.gpu_blocking_sync = 1; /* as the CLI runs; from here on every wait of this process sleeps */
    c.cpu_below = 1000;
    c.verbose = 1;
    es_context *ctx = NULL;
    char msg[256];
    CHECK(es_context_create(&ctx, &c, msg, sizeof msg) == ES_OK, "background create: %s", msg);
    if (ctx) {
      int g = stream_case(ctx, &c.params, c.stats_bins, 40, 1, 20, "background");
      CHECK(g > 0, "background: no frame computed on a GPU after the GPUs opened");
      CHECK(es_context_gpu_count(ctx) == ngpu, "background: gpu count %d of %d",
            es_context_gpu_count(ctx), ngpu);
      es_context_destroy(&ctx);
    }
  }

  /* Page-locking refused (as a driver may, for good): each buffer of the pool asked once
   * (again only when it is reallocated to grow), not at every frame as before, when 400
   * frames cost 800 failing cudaHostRegister calls; the frames computed from pageable
   * memory, same bits. */
  {
    es_config c;
    es_config_default(&c);
    c.device = ES_DEVICE_GPU;
    es_context *ctx = NULL;
    CHECK(create_with_faults(&ctx, &c, "nopin", NULL, 0) == ES_OK, "create with nopin");
    if (ctx) {
      const int n = 400;
      CHECK(stream_case(ctx, &c.params, c.stats_bins, n, 0, -1, "nopin") == n,
            "nopin: a frame not on a GPU");
      CHECK(g_pin_asks > 0 && g_pin_asks < n / 2, "nopin: %d page-lock asks for %d frames",
            g_pin_asks, n);
      printf("page-locking refused: %d asks for %d frames\n", g_pin_asks, n);
      es_context_destroy(&ctx);
    }
  }

  /* Injected faults on GPU frames: retried on another GPU or the CPU, same bits. */
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_GPU;
  es_context *ctx = NULL;
  CHECK(create_with_faults(&ctx, &c, "frames=1,3,4", NULL, 0) == ES_OK, "create with faults");
  if (ctx) {
    stream_case(ctx, &c.params, c.stats_bins, 8, 1, -1, "faults");
    CHECK(es_context_retries(ctx) == 3, "retries %lld, want 3", (long long)es_context_retries(ctx));
    es_context_destroy(&ctx);
  }
  broken_gpu_cases(ngpu);
  return es_test_done("test_gpu_pipeline");
}
