/*
 * test_pipeline_split.c - how many GPUs share one image (es_split_gpus, issue 31): the
 * cases BENCHMARKS measured on four H200s (10240^2 K=5 L=16 page-locked: more than two;
 * pageable: two, four having been slower than two in every run; 1080p K=3 pageable: one,
 * four having taken 2.93 ms against 0.38; 1080p K=75 pageable: two), small images on one
 * GPU, and for random jobs: the count is within 1..n, the same for the same job, and by the
 * model never slower than any smaller count (the rule's promise). Pure arithmetic: runs
 * without a GPU. Also es_split_run's refusals, which need no GPU either: no workers, or a
 * job es_job_check refuses, give ES_ERR_USAGE and its message (ES_ERR_DEVICE, "CUDA: not
 * built", without CUDA) and leave the map as it was.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "es_pipeline_internal.h"
#include "es_test.h"

static es_job job_of(int w, int h, int K, int L, int depth, int map, int fmt) {
  static float fake_map; /* only its presence counts: the model reads no pixel */
  es_job j;
  memset(&j, 0, sizeof j);
  j.in.width = w;
  j.in.height = h;
  j.in.depth = depth;
  j.in.stride = (size_t)w * (depth == 16 ? 2 : 1);
  es_params_default(&j.params);
  j.params.window = K;
  j.params.levels = L;
  j.map = map ? &fake_map : NULL;
  j.map_stride = (size_t)w;
  j.render.format = fmt;
  return j;
}

/* es_split_run's refusals before any GPU work: no workers; a NULL worker; an even window. */
static void split_run_refusals(void) {
  enum { W = 64, H = 48 };
  static uint8_t img[W * H];
  static float map[W * H];
  es_gpu_worker *none[2] = {NULL, NULL};
  const int cuda = es_gpu_built();
  for (int i = 0; i < W * H; i++) {
    img[i] = (uint8_t)(i * 37);
    map[i] = -1.0f;
  }
  es_job j;
  memset(&j, 0, sizeof j);
  j.in = (es_image){img, W, H, W, 8};
  es_params_default(&j.params);
  j.map = map;
  j.map_stride = W;
  static const struct {
    int n, window;
    const char *usage; /* the message with CUDA */
  } c[] = {{0, 5, "GPU: 0 workers (1..64)"},
           {2, 5, "GPU: worker 0 is NULL"},
           {2, 4, "window"}};
  for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
    char msg[256] = "";
    j.params.window = c[k].window;
    const int rc = es_split_run(c[k].n ? none : NULL, c[k].n, &j, msg, sizeof msg);
    CHECK(rc == (cuda ? ES_ERR_USAGE : ES_ERR_DEVICE), "es_split_run case %zu: rc %d", k, rc);
    CHECK(strstr(msg, cuda ? c[k].usage : "CUDA: not built") != NULL,
          "es_split_run case %zu: message \"%s\"", k, msg);
  }
  int untouched = 1;
  for (int i = 0; i < W * H; i++) untouched &= map[i] == -1.0f;
  CHECK(untouched, "es_split_run wrote into the map of a refused job");
}

int main(void) {
  es_test_seed("test_pipeline_split");
  es_job big = job_of(10240, 10240, 5, 16, 8, 1, ES_PIX_NONE);
  /* Page-locked: more than two (the links of three or four GPUs together are the bound). */
  CHECK(es_split_gpus(&big, 4, 1, 1) >= 3, "10240^2 page-locked on 4: %d", es_split_gpus(&big, 4, 1, 1));
  CHECK(es_split_gpus(&big, 2, 1, 1) == 2, "10240^2 page-locked on 2: %d", es_split_gpus(&big, 2, 1, 1));
  CHECK(es_split_gpus(&big, 4, 0, 0) == 2, "10240^2 pageable on 4: %d", es_split_gpus(&big, 4, 0, 0));
  CHECK(es_split_gpus(&big, 8, 0, 0) == 2, "10240^2 pageable on 8: %d", es_split_gpus(&big, 8, 0, 0));
  /* Page-locked input, pageable map: the map's copies (four fifths of the bytes) bound it. */
  CHECK(es_split_gpus(&big, 4, 1, 0) == 2, "10240^2 pinned in, pageable out: %d",
        es_split_gpus(&big, 4, 1, 0));
  es_job k3 = job_of(1920, 1080, 3, 256, 8, 1, ES_PIX_NONE);
  CHECK(es_split_gpus(&k3, 4, 0, 0) == 1, "1080p K=3 pageable on 4: %d", es_split_gpus(&k3, 4, 0, 0));
  CHECK(es_split_gpus(&k3, 2, 0, 0) == 1, "1080p K=3 pageable on 2: %d", es_split_gpus(&k3, 2, 0, 0));
  es_job k75 = job_of(1920, 1080, 75, 256, 8, 1, ES_PIX_NONE);
  CHECK(es_split_gpus(&k75, 4, 0, 0) == 2, "1080p K=75 pageable on 4: %d", es_split_gpus(&k75, 4, 0, 0));
  es_job small = job_of(400, 400, 5, 16, 8, 1, ES_PIX_NONE);
  CHECK(es_split_gpus(&small, 4, 1, 1) == 1, "400^2: %d", es_split_gpus(&small, 4, 1, 1));
  /* The broken-GPU case of test_gpu_pipeline (4096x2100 K=5 L=16 pageable) must split. */
  es_job tp = job_of(4096, 2100, 5, 16, 8, 1, ES_PIX_NONE);
  CHECK(es_split_gpus(&tp, 4, 0, 0) >= 2, "4096x2100 pageable: %d", es_split_gpus(&tp, 4, 0, 0));
  CHECK(es_split_gpus(&big, 1, 1, 1) == 1 && es_split_gpus(&big, 0, 1, 1) == 1,
        "one or no GPU: %d %d", es_split_gpus(&big, 1, 1, 1), es_split_gpus(&big, 0, 1, 1));
  /* A larger model time for more pageable bytes (the same job, its map pageable). */
  CHECK(es_split_model_ms(&big, 4, 1, 0) > es_split_model_ms(&big, 4, 1, 1),
        "pageable map not dearer than a page-locked one");
  /* Random jobs: the count is in range, the same twice, and by the model no slower than
   * one GPU or any smaller candidate count. */
  for (int i = 0; i < 2000; i++) {
    const int fmts[4] = {ES_PIX_NONE, ES_PIX_GRAY8, ES_PIX_RGB24, ES_PIX_YUV420P};
    int w = es_test_range(1, 12000), h = es_test_range(1, 12000);
    int K = 2 * es_test_range(0, 60) + 1, depth = es_test_range(0, 1) ? 16 : 8;
    int L = depth == 16 ? es_test_range(2, 65536) : es_test_range(2, 256);
    es_job j = job_of(w, h, K, L, depth, es_test_range(0, 1), fmts[es_test_range(0, 3)]);
    int n = es_test_range(1, 8), inp = es_test_range(0, 1), outp = es_test_range(0, 1);
    int m = es_split_gpus(&j, n, inp, outp);
    CHECK(m >= 1 && m <= n, "%dx%d K=%d L=%d on %d: %d GPUs", w, h, K, L, n, m);
    CHECK(m == es_split_gpus(&j, n, inp, outp), "%dx%d: not the same twice", w, h);
    const double tm = es_split_model_ms(&j, m, inp, outp);
    for (int k = 1; k < m; k++)
      CHECK(tm <= es_split_model_ms(&j, k, inp, outp), "%dx%d K=%d L=%d: %d GPUs slower than %d",
            w, h, K, L, m, k);
  }
  /* Measured rates (es_split_gpus_measured): ms a MB as the hosts of BENCHMARKS U1-U3
   * showed for 10240^2 pageable (x1, x2, x4: 4 x H100 16.5, 27.8, 25.7; 2 x H200 15.9, 11.4):
   * one GPU where more were slower, two where two were faster; and where more do not save
   * 15%, never more. */
  const double h100x4[5] = {0, 16.5 / 1e3, 27.8 / 1e3, 26.5 / 1e3, 25.7 / 1e3};
  const double h200x2[3] = {0, 15.9 / 1e3, 11.4 / 1e3};
  const double flat[5] = {0, 10.0 / 1e3, 10.0 / 1e3, 10.0 / 1e3, 10.0 / 1e3};
  CHECK(es_split_gpus_measured(&big, 4, h100x4) == 1, "measured 4 x H100: %d",
        es_split_gpus_measured(&big, 4, h100x4));
  CHECK(es_split_gpus_measured(&big, 2, h200x2) == 2, "measured 2 x H200: %d",
        es_split_gpus_measured(&big, 2, h200x2));
  CHECK(es_split_gpus_measured(&big, 4, flat) == 1, "measured, under 15%% saved: %d",
        es_split_gpus_measured(&big, 4, flat));
  /* What a call took is folded into the rates (es_split_fold, es_split_observe): where the
   * probe said two GPUs were faster and a 10240^2 call on two then took 1.14x one GPU's time
   * (4 x H200, BENCHMARKS V1), the next call goes back to one; a call as fast as measured
   * keeps the count; a time below the kernels' counts as the whole time. */
  {
    double r[3] = {0, 17.9 / 1e3, 14.4 / 1e3};
    CHECK(es_split_gpus_measured(&big, 2, r) == 2, "before the fold: %d",
          es_split_gpus_measured(&big, 2, r));
    const double mb = 10240.0 * 10240 * 5 / 1e6;
    double same[3] = {0, r[1], r[2]};
    es_split_fold(same, &big, 2, r[2] * mb + 0.1); /* about what was measured */
    CHECK(es_split_gpus_measured(&big, 2, same) == 2, "a call as measured turned it: %d",
          es_split_gpus_measured(&big, 2, same));
    es_split_fold(r, &big, 2, 11.15);              /* x2's time on V1's host */
    CHECK(r[2] > 14.4 / 1e3, "x2's rate did not rise: %g", r[2]);
    CHECK(es_split_gpus_measured(&big, 2, r) == 1, "after a slow split: %d",
          es_split_gpus_measured(&big, 2, r));
    const double r1 = r[1];
    es_split_fold(r, &big, 1, 9.81);               /* x1's time there */
    CHECK(r[1] > 0 && r[1] != r1 && es_split_gpus_measured(&big, 2, r) == 1,
          "after x1's own time: rate %g, count %d", r[1], es_split_gpus_measured(&big, 2, r));
    double tiny[3] = {0, 0.01, 0.01};
    es_split_fold(tiny, &big, 1, 1e-3);
    CHECK(tiny[1] > 0 && tiny[1] < 0.01, "a time below the kernels': %g", tiny[1]);
  }
  /* Random rates: never a count whose time by those rates is above a smaller count's. */
  for (int i = 0; i < 2000; i++) {
    double r[9];
    int n = es_test_range(2, 8);
    int w = es_test_range(1024, 12000), h = es_test_range(1024, 12000);
    es_job j = job_of(w, h, 2 * es_test_range(0, 60) + 1, es_test_range(2, 256), 8, 1, ES_PIX_NONE);
    for (int m = 1; m <= n; m++) r[m] = es_test_range(1, 100) / 1e3;
    int m = es_split_gpus_measured(&j, n, r);
    const double mb = ((double)w * h * 5) / 1e6;
    const double kern = (double)w * h / 1e6; /* a bound only: the kernel share falls with m */
    CHECK(m >= 1 && m <= n, "measured: %d of %d", m, n);
    for (int k = 1; k < m; k++)
      CHECK(r[m] * mb <= r[k] * mb + kern, "measured: %d GPUs chosen, %d moved it faster", m, k);
  }
  split_run_refusals();
  return es_test_done("test_pipeline_split");
}
