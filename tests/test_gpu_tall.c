/*
 * test_gpu_tall.c - images taller than a CUDA grid is high (gridDim.y <= 65535) on the GPU,
 * bit for bit against es_cpu_run (skipped without a GPU):
 * - a 3-pixel-wide image of 1.5M rows: its bands' quantize launches had 93750 block rows
 *   (invalid configuration), so every such job failed on the GPU (es_gpu_run, the split,
 *   es_gpu_bench_kernel's kernels-only run of the whole image);
 * - renderings (every format, an overlay) of 70000+ rows: k_render takes a block row per
 *   row (a chroma row for YUV420P) and its single launch was refused;
 * - the naive kernel (a block row per row) on 70000+ rows;
 * - es_compute on --device gpu: those jobs must not fall back to the CPU (0 retries).
 * Every failure message names the case and the first differing row.
 */
#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_kernels.h"
#include "es_pipeline_internal.h" /* es_split_run */
#include "es_test.h"

static void *make_image(es_image *img, int w, int h, int depth) {
  size_t bps = depth == 16 ? 2 : 1;
  img->width = w;
  img->height = h;
  img->depth = depth;
  img->stride = (size_t)w * bps;
  img->mask = NULL; /* no mask */
  img->mask_stride = 0;
  uint8_t *d = malloc(img->stride * (size_t)h);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      uint32_t v = (uint32_t)es_test_rand();
      if (v & 1) v = (uint32_t)((x / 3 + y / 5) * 2654435761u); /* runs: few levels a window */
      if (depth == 16) {
        uint16_t s = (uint16_t)(v >> 7);
        memcpy(d + (size_t)y * img->stride + 2 * (size_t)x, &s, 2);
      } else {
        d[(size_t)y * img->stride + x] = (uint8_t)(v >> 9);
      }
    }
  }
  img->data = d;
  return d;
}

static float *poisoned(int w, int h) {
  float *m = malloc((size_t)w * h * sizeof *m);
  memset(m, 0xff, (size_t)w * h * sizeof *m);
  return m;
}

static void map_same(const char *what, const float *got, const float *ref, int w, int h) {
  for (int y = 0; y < h; y++) {
    if (memcmp(got + (size_t)y * w, ref + (size_t)y * w, (size_t)w * sizeof *got)) {
      CHECK(0,
            "%s: map differs from es_cpu_run from row %d of %d (first rows of a later "
            "launch chunk start at 65535 block rows)",
            what, y, h);
      return;
    }
  }
}

static void stats_same(const char *what, const es_stats *g, const es_stats *r) {
  CHECK(g->count == r->count && g->min == r->min && g->max == r->max &&
            !memcmp(&g->mean, &r->mean, sizeof g->mean) &&
            !memcmp(&g->std, &r->std, sizeof g->std) && g->global_entropy == r->global_entropy &&
            g->global_entropy_levels == r->global_entropy_levels &&
            g->bins == r->bins && !memcmp(g->hist, r->hist, sizeof g->hist),
        "%s: statistics differ from es_cpu_run (mean %.17g / %.17g, min %g / %g, max %g / %g)",
        what, g->mean, r->mean, g->min, r->min, g->max, r->max);
}

/* Map and statistics of a narrow, tall image: one worker, a split over two, and the
 * benchmark's kernels-only run (the whole image in one band). */
static void quant_case(es_gpu_worker *w, es_gpu_worker **pair) {
  es_image img;
  char msg[256] = "", what[160];
  const int W = 3, H = 1500000 + es_test_range(0, 99);
  void *buf = make_image(&img, W, H, 8);
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = img;
  es_params_default(&job.params);
  job.params.border = es_test_range(0, 1);
  job.stats_bins = 16;
  snprintf(what, sizeof what, "%dx%d K=5 L=16 border %d", W, H, job.params.border);
  float *ref = poisoned(W, H);
  es_stats rst, st;
  es_job cj = job;
  cj.map = ref;
  cj.map_stride = (size_t)W;
  cj.stats = &rst;
  int rc = es_cpu_run(&cj, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_cpu_run: %s", what, msg);
  if (rc) goto end;

  float *map = poisoned(W, H);
  job.map = map;
  job.map_stride = (size_t)W;
  job.stats = &st;
  memset(&st, 0, sizeof st);
  rc = es_gpu_run(w, &job, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_gpu_run failed (a quantize launch of more than 65535 block rows?): %s",
        what, msg);
  if (rc == ES_OK) {
    map_same(what, map, ref, W, H);
    stats_same(what, &st, &rst);
  }

  /* The benchmark's kernels-only run: the whole image is one band. */
  if (rc == ES_OK) {
    float ms = -1.0f;
    memset(map, 0xff, (size_t)W * H * sizeof *map);
    es_job bj = job;
    bj.stats = NULL;
    rc = es_gpu_bench_kernel(w, &bj, 1, &ms, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: es_gpu_bench_kernel failed: %s", what, msg);
    if (rc == ES_OK) {
      char bw[200];
      snprintf(bw, sizeof bw, "bench kernels-only %s", what);
      map_same(bw, map, ref, W, H);
    }
  }

  memset(map, 0xff, (size_t)W * H * sizeof *map);
  memset(&st, 0, sizeof st);
  rc = es_split_run(pair, 2, &job, msg, sizeof msg);
  CHECK(rc == ES_OK, "multi %s: es_split_run failed: %s", what, msg);
  if (rc == ES_OK) {
    char mw[200];
    snprintf(mw, sizeof mw, "multi %s", what);
    map_same(mw, map, ref, W, H);
    stats_same(mw, &st, &rst);
  }
  free(map);
end:
  free(ref);
  free(buf);
}

/* A rendering of more rows than a grid may be high, against es_cpu_run's. */
static void render_case(es_gpu_worker *w, es_gpu_worker **pair, int fmt, int H) {
  es_image img;
  char msg[256] = "", what[200];
  const int W = 33 + 2 * es_test_range(0, 8) + (fmt == ES_PIX_YUV420P ? 0 : es_test_range(0, 1));
  int depth = es_test_range(0, 3) == 0 ? 16 : 8;
  void *buf = make_image(&img, W, H, depth);
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = img;
  es_params_default(&job.params);
  job.params.window = 2 * es_test_range(0, 3) + 1;
  job.params.border = es_test_range(0, 1);
  es_render_default(&job.render);
  job.render.format = fmt;
  job.render.colormap = es_test_range(0, 4);
  job.render.range_auto = es_test_range(0, 1);
  job.render.overlay = 0.25f + (float)es_test_range(0, 50) / 100.0f; /* reads the input rows */
  job.render.overlay_on = 1;
  snprintf(what, sizeof what, "%dx%d %d-bit K=%d border %d fmt %d cmap %d auto %d overlay %g", W, H,
           depth, job.params.window, job.params.border, fmt, job.render.colormap,
           job.render.range_auto, job.render.overlay);
  const int np = es_pix_planes(fmt);
  uint8_t *cpu[3] = {NULL, NULL, NULL}, *gpu[3] = {NULL, NULL, NULL};
  size_t bytes[3] = {0, 0, 0};
  for (int i = 0; i < np; i++) {
    job.pix.stride[i] = es_pix_stride(fmt, i, W);
    bytes[i] = job.pix.stride[i] * (size_t)es_pix_plane_height(fmt, i, H);
    cpu[i] = malloc(bytes[i]);
    gpu[i] = malloc(bytes[i]);
    memset(cpu[i], 0xcd, bytes[i]);
  }
  es_job cj = job;
  for (int i = 0; i < np; i++)
    cj.pix.plane[i] = cpu[i];
  int rc = es_cpu_run(&cj, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_cpu_run: %s", what, msg);
  for (int pass = 0; rc == ES_OK && pass < 2; pass++) {
    es_job gj = job;
    for (int i = 0; i < np; i++) {
      memset(gpu[i], 0xcd, bytes[i]);
      gj.pix.plane[i] = gpu[i];
    }
    int grc = pass ? es_split_run(pair, 2, &gj, msg, sizeof msg)
                   : es_gpu_run(w, &gj, msg, sizeof msg);
    CHECK(grc == ES_OK,
          "%s%s: GPU rendering failed (a k_render launch of more than 65535 "
          "block rows?): %s",
          pass ? "multi " : "", what, msg);
    if (grc) continue;
    for (int i = 0; i < np; i++) {
      if (!memcmp(gpu[i], cpu[i], bytes[i])) continue;
      size_t k = 0;
      while (k < bytes[i] && gpu[i][k] == cpu[i][k])
        k++;
      CHECK(0, "%s%s: plane %d differs from es_cpu_run's from its row %zu", pass ? "multi " : "",
            what, i, k / job.pix.stride[i]);
    }
  }
  for (int i = 0; i < np; i++) {
    free(cpu[i]);
    free(gpu[i]);
  }
  free(buf);
}

static void naive_case(es_gpu_worker *w) {
  es_image img;
  char msg[256] = "";
  const int W = 5 + es_test_range(0, 30), H = 70000 + es_test_range(0, 999);
  void *buf = make_image(&img, W, H, 8);
  es_params p;
  es_params_default(&p);
  p.window = 3;
  es_job cj;
  memset(&cj, 0, sizeof cj);
  cj.in = img;
  cj.params = p;
  float *ref = poisoned(W, H), *map = poisoned(W, H);
  cj.map = ref;
  cj.map_stride = (size_t)W;
  int rc = es_cpu_run(&cj, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "naive %dx%d: es_cpu_run: %s", W, H, msg);
  if (rc == ES_OK) {
    float kms = -1.0f;
    rc = es_gpu_naive(w, &img, &p, map, (size_t)W, &kms, msg, sizeof msg);
    CHECK(rc == ES_OK,
          "naive %dx%d: es_gpu_naive failed (a launch of more than 65535 block "
          "rows?): %s",
          W, H, msg);
    char what[80];
    snprintf(what, sizeof what, "naive %dx%d K=3", W, H);
    if (rc == ES_OK) map_same(what, map, ref, W, H);
  }
  free(ref);
  free(map);
  free(buf);
}

/* Through the library on --device gpu: the tall jobs stay on the GPU (no retry). */
static void compute_case(void) {
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_GPU;
  c.verbose = 1;
  es_context *ctx = NULL;
  char msg[256] = "";
  int rc = es_context_create(&ctx, &c, msg, sizeof msg);
  CHECK(rc == ES_OK, "es_context_create --device gpu: %s", msg);
  if (rc) return;
  es_image img;
  const int W = 41, H = 70001;
  void *buf = make_image(&img, W, H, 8);
  float *map = poisoned(W, H), *ref = poisoned(W, H);
  es_render r;
  es_render_default(&r);
  r.format = ES_PIX_RGB24;
  es_planes pix, cpix;
  memset(&pix, 0, sizeof pix);
  memset(&cpix, 0, sizeof cpix);
  pix.stride[0] = cpix.stride[0] = (size_t)W * 3;
  pix.plane[0] = malloc(pix.stride[0] * H);
  cpix.plane[0] = malloc(cpix.stride[0] * H);
  es_stats st, rst;
  rc = es_compute(ctx, &img, map, (size_t)W, &st, &r, &pix);
  CHECK(rc == ES_OK, "es_compute %dx%d RGB24 on --device gpu: %s", W, H, es_context_error(ctx));
  CHECK(es_context_retries(ctx) == 0,
        "es_compute %dx%d RGB24: %lld retries: the GPU failed and the job fell back (see the "
        "warning above)",
        W, H, (long long)es_context_retries(ctx));
  es_job cj;
  memset(&cj, 0, sizeof cj);
  cj.in = img;
  cj.params = c.params;
  cj.map = ref;
  cj.map_stride = (size_t)W;
  cj.stats = &rst;
  cj.stats_bins = c.stats_bins;
  cj.render = r;
  cj.pix = cpix;
  int crc = es_cpu_run(&cj, 0, msg, sizeof msg);
  CHECK(crc == ES_OK, "es_cpu_run: %s", msg);
  if (rc == ES_OK && crc == ES_OK) {
    map_same("es_compute tall", map, ref, W, H);
    stats_same("es_compute tall", &st, &rst);
    CHECK(!memcmp(pix.plane[0], cpix.plane[0], pix.stride[0] * H),
          "es_compute tall: RGB24 plane differs from es_cpu_run's");
  }
  free(pix.plane[0]);
  free(cpix.plane[0]);
  free(map);
  free(ref);
  free(buf);
  es_context_destroy(&ctx);
}

int main(void) {
  es_test_seed("test_gpu_tall");
  int ndev = es_gpu_device_count();
  if (ndev == 0) {
    printf("test_gpu_tall: no CUDA device (built with CUDA: %d): skipped\n", es_gpu_built());
    return ES_TEST_SKIP;
  }
  unsetenv("ES_FAULT_INJECT");
  char msg[256] = "";
  es_gpu_worker *w = NULL, *pair[2] = {NULL, NULL};
  int rc = es_gpu_worker_create(&w, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create: %s", msg);
  if (rc) return es_test_done("test_gpu_tall");
  rc = es_gpu_worker_create(&pair[0], 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create pair 0: %s", msg);
  if (rc == ES_OK) rc = es_gpu_worker_create(&pair[1], ndev > 1 ? 1 : 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create pair 1: %s", msg);
  if (rc == ES_OK) {
    quant_case(w, pair);
    /* One worker: ranges of 70000+ rows; the split: 140000+ rows, 70000+ a worker. */
    static const int fmts[] = {ES_PIX_RGB24, ES_PIX_GRAY8, ES_PIX_GRAY16, ES_PIX_YUV444P,
                               ES_PIX_YUV420P};
    for (int i = 0; i < 5; i++)
      render_case(w, pair, fmts[i], 70000 + es_test_range(0, 999));
    render_case(w, pair, ES_PIX_YUV420P, 140001 + 2 * es_test_range(0, 500));
    render_case(w, pair, ES_PIX_RGB24, 140000 + es_test_range(0, 999));
    naive_case(w);
  }
  es_gpu_worker_destroy(&pair[0]);
  es_gpu_worker_destroy(&pair[1]);
  es_gpu_worker_destroy(&w);
  compute_case();
  return es_test_done("test_gpu_tall");
}
