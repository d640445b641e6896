/*
 * test_gpu_bench.c - the GPU benchmark entry points (es_gpu_bench_kernel, es_gpu_bench_pcie,
 * es_gpu_naive) and, with ES_GPU_BENCH=FILE.json, the GPU engine's benchmark table: kernel
 * times (median of CUDA-event reps), host-to-host times against the PCIe floor measured in
 * the same run, the window sweep, and the error of each case next to its time.
 * As a ctest (no ES_GPU_BENCH) it runs small sizes and checks that the numbers are sane and
 * that the benchmarked maps are exact. Skips (77) without a GPU.
 */
#include <time.h>

#include "es_gpu.h"
#include "es_kernels.h"
#include "es_pipeline_internal.h" /* es_split_run */
#include "es_test.h"
#include "test_gpu_ref.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}
static float median(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpf);
  return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* kind 0: random samples; 1: photo-like (smooth shapes, gradients, mild noise). */
static void fill(uint8_t *d, int w, int h, int depth, int kind) {
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      uint32_t v = (uint32_t)es_test_rand();
      if (kind == 1) {
        double fx = (double)x / w, fy = (double)y / h;
        double s = 0.5 + 0.25 * sin(9.0 * fx + 4.0 * fy) + 0.2 * cos(23.0 * fx * fy) +
                   ((x / 97 + y / 61) % 3 == 0 ? 0.1 : 0.0);
        if (s < 0) s = 0;
        if (s > 1) s = 1;
        v = (uint32_t)(s * 60000.0) + (v & 1023);
        v = depth == 16 ? v : v >> 8;
      } else {
        v = depth == 16 ? v >> 16 : v >> 24;
      }
      if (depth == 16) {
        uint16_t s16 = (uint16_t)v;
        memcpy(d + 2 * ((size_t)y * w + x), &s16, 2);
      } else {
        d[(size_t)y * w + x] = (uint8_t)(v > 255 ? 255 : v);
      }
    }
  }
}

/* Bits that differ from the exact reference on a few rows (top, middle, bottom), and the
 * largest |GPU - double-log reference| on a sample of them. */
static void check_rows(const es_image *img, const es_params *p, const float *map, size_t ms,
                       long *bad, double *maxerr) {
  int rows[6] = {0, 1, img->height / 2, img->height / 2 + 1, img->height - 2, img->height - 1};
  float *ref = malloc(sizeof *ref * (size_t)img->width);
  *bad = 0;
  *maxerr = 0.0;
  for (int i = 0; i < 6; i++) {
    int y = rows[i] < 0 ? 0 : rows[i];
    ref_rows(img, p, y, y + 1, ref);
    for (int x = 0; x < img->width; x++) {
      if (memcmp(&ref[x], &map[(size_t)y * ms + x], 4)) (*bad)++;
      if (x % 61 == 0 || x == img->width - 1) {
        double e = fabs((double)map[(size_t)y * ms + x] - ref_double(img, p, x, y));
        if (e > *maxerr) *maxerr = e;
      }
    }
  }
  free(ref);
}

static FILE *g_json;
static int g_first = 1;
static void json_row(const char *name, int w, int h, const es_params *p, const char *what,
                     double ms, double floor_ms, long bad, double err) {
  double gpx = (double)w * h / (ms * 1e-3) / 1e9;
  printf("%-28s %6dx%-6d K=%-3d L=%-5d %-14s %9.3f ms %7.2f Gpx/s", name, w, h, p->window,
         p->levels, what, ms, gpx);
  if (floor_ms > 0) printf("  floor %7.3f ms (x%.2f)", floor_ms, ms / floor_ms);
  printf("  bad %ld err %.2g\n", bad, err);
  if (g_json) {
    fprintf(g_json,
            "%s\n  {\"case\": \"%s\", \"width\": %d, \"height\": %d, \"window\": %d, \"levels\": %d, "
            "\"shape\": %d, \"border\": %d, \"what\": \"%s\", \"ms\": %.6f, \"gpx_s\": %.4f, "
            "\"floor_ms\": %.6f, \"bits_differing\": %ld, \"max_abs_err\": %.3g}",
            g_first ? "" : ",", name, w, h, p->window, p->levels, p->shape, p->border, what, ms,
            gpx, floor_ms, bad, err);
    g_first = 0;
  }
}

/* One size: kernel time, and host-to-host times (pageable and pinned) against the floor. */
static void bench_case(es_gpu_worker *w, es_gpu_worker **pair, const char *name, int W, int H,
                       int depth, int kind, const es_params *p, int reps, int h2h,
                       double up_gbs, double dn_gbs) {
  char msg[256];
  size_t bps = depth == 16 ? 2 : 1;
  uint8_t *in = malloc((size_t)W * H * bps);
  float *map = malloc(sizeof *map * (size_t)W * H);
  float *t = malloc(sizeof *t * (size_t)(reps > 7 ? reps : 7));
  long bad;
  double err;
  fill(in, W, H, depth, kind);
  memset(map, 0xff, sizeof *map * (size_t)W * H); /* poison, and fault the pages in */
  es_job job;
  memset(&job, 0, sizeof job);
  job.in.data = in;
  job.in.width = W;
  job.in.height = H;
  job.in.stride = (size_t)W * bps;
  job.in.depth = depth;
  job.params = *p;
  job.map = map;
  job.map_stride = (size_t)W;
  int rc = es_gpu_run(w, &job, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_gpu_run: %s", name, msg);
  if (rc) goto end;
  check_rows(&job.in, p, map, (size_t)W, &bad, &err);
  CHECK(bad == 0, "%s: %ld pixels differ from the exact reference", name, bad);
  memset(map, 0xff, sizeof *map * (size_t)W * H); /* poison again: the timed run's map */
  rc = es_gpu_bench_kernel(w, &job, reps, t, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_gpu_bench_kernel: %s", name, msg);
  if (rc) goto end;
  for (int i = 0; i < reps; i++) CHECK(t[i] > 0.0f && t[i] < 1e5f, "%s: kernel time %g", name, t[i]);
  {
    long kbad = 0;
    double kerr = 0.0;
    check_rows(&job.in, p, map, (size_t)W, &kbad, &kerr);
    CHECK(kbad == 0, "%s: %ld pixels of the timed kernel run differ from the exact reference",
          name, kbad);
    bad += kbad;
  }
  double dev_floor = (double)W * H * (bps + 4) / 2.98e12 * 1e3; /* device-memory floor */
  json_row(name, W, H, p, "kernel", median(t, reps), dev_floor, bad, err);
  if (!h2h) goto end;
  double pcie = ((double)W * H * bps / up_gbs + (double)W * H * 4 / dn_gbs) / 1e6;
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    rc = es_gpu_run(w, &job, msg, sizeof msg);
    t[i] = (float)(now_ms() - t0);
    CHECK(rc == ES_OK, "%s: es_gpu_run: %s", name, msg);
  }
  printf("  h2h pageable runs:");
  for (int i = 0; i < 5; i++) printf(" %.3f", t[i]);
  printf(" ms\n");
  json_row(name, W, H, p, "h2h pageable", median(t, 5), pcie, bad, err);
  if (pair) {
    for (int i = 0; i < 5; i++) {
      double t0 = now_ms();
      rc = es_split_run(pair, 2, &job, msg, sizeof msg);
      t[i] = (float)(now_ms() - t0);
      CHECK(rc == ES_OK, "%s: es_split_run: %s", name, msg);
    }
    check_rows(&job.in, p, map, (size_t)W, &bad, &err);
    CHECK(bad == 0, "%s multi: %ld pixels differ", name, bad);
    json_row(name, W, H, p, "h2h 2 workers", median(t, 5), pcie, bad, err);
  }
  {
    es_job pj = job;
    void *pin = es_gpu_host_alloc((size_t)W * H * bps);
    float *pmap = es_gpu_host_alloc(sizeof *pmap * (size_t)W * H);
    memcpy(pin, in, (size_t)W * H * bps);
    memset(pmap, 0xff, sizeof *pmap * (size_t)W * H);
    pj.in.data = pin;
    pj.map = pmap;
    for (int i = 0; i < 5; i++) {
      double t0 = now_ms();
      rc = es_gpu_run(w, &pj, msg, sizeof msg);
      t[i] = (float)(now_ms() - t0);
      CHECK(rc == ES_OK, "%s: pinned es_gpu_run: %s", name, msg);
    }
    CHECK(!memcmp(pmap, map, sizeof *pmap * (size_t)W * H), "%s: pinned map differs", name);
    json_row(name, W, H, p, "h2h pinned", median(t, 5), pcie, bad, err);
    es_stats st;
    pj.map = NULL;
    pj.stats = &st;
    pj.stats_bins = 16;
    for (int i = 0; i < 5; i++) {
      double t0 = now_ms();
      rc = es_gpu_run(w, &pj, msg, sizeof msg);
      t[i] = (float)(now_ms() - t0);
      CHECK(rc == ES_OK, "%s: stats es_gpu_run: %s", name, msg);
    }
    json_row(name, W, H, p, "h2h stats only", median(t, 5), (double)W * H * bps / up_gbs / 1e6, bad, err);
    es_gpu_host_free(pin);
    es_gpu_host_free(pmap);
  }
  if (p->levels <= 256) {
    float kms = 0.0f;
    rc = es_gpu_naive(w, &job.in, p, map, (size_t)W, &kms, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: naive: %s", name, msg);
    check_rows(&job.in, p, map, (size_t)W, &bad, &err);
    CHECK(bad == 0, "%s naive: %ld pixels differ", name, bad);
    json_row(name, W, H, p, "naive kernel", kms, 0, bad, err);
  }
end:
  free(in);
  free(map);
  free(t);
}

int main(void) {
  es_test_seed("test_gpu_bench");
  if (es_gpu_device_count() == 0) {
    printf("test_gpu_bench: no CUDA device: skipped\n");
    return ES_TEST_SKIP;
  }
  const char *out = getenv("ES_GPU_BENCH");
  int full = out && *out;
  char msg[256], d[256];
  es_gpu_describe(0, d, sizeof d);
  printf("%s\n", d);
  float up = 0, dn = 0;
  int rc = es_gpu_bench_pcie(0, full ? (size_t)256 << 20 : (size_t)8 << 20, &up, &dn, msg, sizeof msg);
  CHECK(rc == ES_OK && up > 0.1f && dn > 0.1f, "bench_pcie: %s (%g %g GB/s)", msg, up, dn);
  printf("PCIe pinned: H2D %.1f GB/s, D2H %.1f GB/s\n", up, dn);
  es_gpu_worker *w = NULL, *pair[2] = {NULL, NULL};
  rc = es_gpu_worker_create(&w, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker: %s", msg);
  es_gpu_worker_create(&pair[0], 0, msg, sizeof msg);
  es_gpu_worker_create(&pair[1], es_gpu_device_count() > 1 ? 1 : 0, msg, sizeof msg);
  if (rc) return es_test_done("test_gpu_bench");
  if (full) {
    g_json = fopen(out, "w");
    if (g_json) fprintf(g_json, "{\"device\": \"%s\", \"pcie_h2d_gbs\": %.2f, \"pcie_d2h_gbs\": %.2f, \"rows\": [", d, up, dn);
  }
  es_params p;
  es_params_default(&p);
  if (!full) {
    bench_case(w, pair, "small K=5 L=16", 301, 207, 8, 0, &p, 3, 1, up, dn);
    p.levels = 4096;
    bench_case(w, NULL, "small 16-bit L=4096", 129, 77, 16, 1, &p, 2, 0, up, dn);
    return es_test_done("test_gpu_bench");
  }
  printf("%-28s %-13s %-16s %-14s %12s %13s\n", "case", "size", "params", "what", "time", "rate");
  const char *first = getenv("ES_GPU_BENCH_FIRST");
  if (first) { /* one kernel row only, e.g. under ncu; "h2h": its host-to-host rows too */
    int h2h = !strcmp(first, "h2h");
    bench_case(w, h2h ? pair : NULL, "study K=5 L=16", 10240, 10240, 8, 0, &p, 3, h2h, up, dn);
    return es_test_done("test_gpu_bench");
  }
  bench_case(w, pair, "study K=5 L=16", 10240, 10240, 8, 0, &p, 20, 1, up, dn);
  bench_case(w, NULL, "study K=5 L=16", 2560, 2560, 8, 0, &p, 50, 1, up, dn);
  static const int ks[] = {3, 7, 15, 25, 51, 75};
  p.levels = 256;
  for (int k = 0; k < 6; k++) {
    p.window = ks[k];
    bench_case(w, NULL, "sweep photo-like L=256", 1920, 1080, 8, 1, &p, 10, 0, up, dn);
  }
  for (int k = 0; k < 6; k++) {
    p.window = ks[k];
    bench_case(w, NULL, "sweep random L=256", 1920, 1080, 8, 0, &p, 10, 0, up, dn);
  }
  p.window = 9;
  bench_case(w, NULL, "1080p K=9 L=256 random", 1920, 1080, 8, 0, &p, 10, 1, up, dn);
  p.window = 5;
  p.shape = ES_SHAPE_DISK;
  p.border = ES_BORDER_REFLECT;
  p.levels = 16;
  bench_case(w, NULL, "disk reflect K=5 L=16", 10240, 10240, 8, 0, &p, 10, 0, up, dn);
  p.shape = ES_SHAPE_SQUARE;
  p.border = ES_BORDER_CLIP;
  p.levels = 4096;
  bench_case(w, NULL, "16-bit L=4096", 1920, 1080, 16, 1, &p, 5, 0, up, dn);
  p.levels = 65536;
  bench_case(w, NULL, "16-bit L=65536", 1920, 1080, 16, 1, &p, 3, 0, up, dn);
  if (g_json) {
    fprintf(g_json, "\n]}\n");
    fclose(g_json);
  }
  es_gpu_worker_destroy(&pair[0]);
  es_gpu_worker_destroy(&pair[1]);
  es_gpu_worker_destroy(&w);
  return es_test_done("test_gpu_bench");
}
