/*
 * test_gpu_engine.c - the CUDA engine against exact references: every parameter combination
 * on fresh random inputs of odd sizes (map bits, fused statistics, renderings), multi-worker
 * splits, pinned and pageable buffers, the naive kernel, and band pipelining on a tall image.
 * Skips (77) without a GPU. ES_TEST_SMALL=1 shrinks everything (compute-sanitizer runs).
 *
 * The reference map is computed here by direct counting of every window in integers ->
 * S = sum flog[c] -> es_entropy_value: by definition the same bits the engines must give.
 * Where es_cpu_run is implemented (not a stub), the GPU must also equal it bit for bit.
 * Masks and float samples (mask_case): the GPU against es_cpu_run bit for bit (map, NaN
 * outside included, statistics and renderings), which test_kernels_engine checks against
 * the double reference.
 */
#include <math.h>

#include "es_gpu.h"
#include "es_kernels.h"
#include "es_pipeline_internal.h" /* es_split_run */
#include "es_test.h"
#include "test_gpu_ref.h"

static int g_small;

static void ref_stats(const es_image *img, const es_params *p, const float *map, int bins,
                      es_stats *st) {
  uint64_t *lh = calloc((size_t)p->levels, sizeof *lh);
  uint64_t *sh = calloc((size_t)1 << img->depth, sizeof *sh); /* raw samples */
  es_stats_acc acc;
  double bs = es_stats_binscale(p, bins);
  memset(st, 0, sizeof *st);
  acc.sum = acc.sumsq = 0.0;
  acc.min = INFINITY;
  acc.max = 0.0f;
  acc.count = (int64_t)img->width * img->height;
  for (int y = 0; y < img->height; y++) {
    /* Each row from 0.0 left to right, rows added in order: the engines' contract. */
    double rs = 0.0, rss = 0.0;
    for (int x = 0; x < img->width; x++) {
      float h = map[(size_t)y * img->width + x];
      rs += h;
      rss += (double)h * (double)h;
      if (h < acc.min) acc.min = h;
      if (h > acc.max) acc.max = h;
      st->hist[es_stats_bin(h, bs, bins)]++;
      lh[es_quantize(es_image_sample(img, x, y), (uint32_t)p->levels, img->depth)]++;
      sh[es_image_sample(img, x, y)]++;
    }
    acc.sum += rs;
    acc.sumsq += rss;
  }
  st->bins = bins;
  es_stats_finish(st, &acc, lh, p->levels, sh, img->depth);
  free(lh);
  free(sh);
}

static void check_stats(const char *what, const es_stats *g, const es_stats *r) {
  CHECK(g->count == r->count, "%s: count %lld vs %lld", what, (long long)g->count, (long long)r->count);
  CHECK(g->min == r->min && g->max == r->max, "%s: min/max %.9g %.9g vs %.9g %.9g", what, g->min,
        g->max, r->min, r->max);
  CHECK(g->global_entropy == r->global_entropy, "%s: global entropy %.17g vs %.17g", what,
        g->global_entropy, r->global_entropy);
  CHECK(g->global_entropy_levels == r->global_entropy_levels,
        "%s: global entropy of the levels %.17g vs %.17g", what, g->global_entropy_levels,
        r->global_entropy_levels);
  /* Row sums in the CPU engine's order make mean and std the same bits too (stricter than
   * the 1e-9 relative the contract asks for). */
  CHECK(!memcmp(&g->mean, &r->mean, sizeof g->mean) && !memcmp(&g->std, &r->std, sizeof g->std),
        "%s: mean/std %.17g %.17g vs %.17g %.17g", what, g->mean, g->std, r->mean, r->std);
  CHECK(g->bins == r->bins, "%s: bins %d vs %d", what, g->bins, r->bins);
  int bad = 0;
  for (int k = 0; k < r->bins; k++) bad += g->hist[k] != r->hist[k];
  CHECK(!bad, "%s: %d histogram bins differ", what, bad);
}

/* A random image with structure (runs, gradients) and noise, so windows hold few and many
 * levels. */
static void *make_image(es_image *img, int w, int h, int depth, int pad, int pinned) {
  size_t bps = depth == 16 ? 2 : 1;
  img->width = w;
  img->height = h;
  img->depth = depth;
  img->stride = (size_t)w * bps + (size_t)pad;
  img->mask = NULL; /* no mask (mask_case sets one) */
  img->mask_stride = 0;
  size_t bytes = img->stride * (size_t)h;
  uint8_t *d = pinned ? es_gpu_host_alloc(bytes) : malloc(bytes);
  int mode = es_test_range(0, 2);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      uint32_t v = (uint32_t)es_test_rand();
      if (mode == 1) v = (uint32_t)(x * 7 + y * 3) + (v & 15);
      if (mode == 2 && (v & 3)) v = (uint32_t)((x / 5 + y / 7) * 2654435761u);
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

static int cpu_available(void) {
  static int avail = -1;
  if (avail < 0) {
    uint8_t px[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float m[9];
    es_job j;
    memset(&j, 0, sizeof j);
    j.in.data = px;
    j.in.width = j.in.height = 3;
    j.in.stride = 3;
    j.in.depth = 8;
    es_params_default(&j.params);
    j.map = m;
    j.map_stride = 3;
    char msg[256];
    avail = es_cpu_run(&j, 1, msg, sizeof msg) == ES_OK;
    printf("es_cpu_run %s\n", avail ? "available: compared too" : "is a stub: reference only");
  }
  return avail;
}

/* Poisoned map with a padded stride: NaN everywhere, padding checked after the run. */
static float *poisoned_map(int h, size_t stride, int pinned) {
  size_t bytes = stride * (size_t)h * 4;
  float *m = pinned ? es_gpu_host_alloc(bytes) : malloc(bytes);
  memset(m, 0xff, bytes);
  return m;
}

static int compare_map(const char *what, const float *g, size_t gs, const float *ref, int w, int h) {
  long bad = 0, pad = 0;
  int fx = -1, fy = -1;
  for (int y = 0; y < h; y++) {
    if (memcmp(g + (size_t)y * gs, ref + (size_t)y * w, (size_t)w * 4)) {
      for (int x = 0; x < w; x++) {
        if (memcmp(&g[(size_t)y * gs + x], &ref[(size_t)y * w + x], 4)) {
          if (!bad) {
            fx = x;
            fy = y;
          }
          bad++;
        }
      }
    }
    for (size_t x = (size_t)w; x < gs; x++) {
      uint32_t u;
      memcpy(&u, &g[(size_t)y * gs + x], 4);
      pad += u != 0xffffffffu;
    }
  }
  CHECK(!bad, "%s: %ld pixels differ, first (%d,%d): %.9g vs %.9g", what, bad, fx, fy,
        bad ? g[(size_t)fy * gs + fx] : 0.0, bad ? ref[(size_t)fy * w + fx] : 0.0);
  CHECK(!pad, "%s: %ld padding floats written", what, pad);
  return bad == 0 && pad == 0;
}

static void describe(char *buf, size_t n, const es_image *img, const es_params *p) {
  snprintf(buf, n, "%dx%d d%d K=%d %s %s L=%d base %s", img->width, img->height, img->depth,
           p->window, p->shape ? "disk" : "square", p->border ? "reflect" : "clip", p->levels,
           p->base ? "e" : "2");
}

/* One random case: map (+stats half the time) against the reference; es_cpu_run too.
 * quad: the cases of the four-columns-a-thread kernel (square K <= 7, 8-bit, L <= 31), every
 * width modulo 4 and widths below 4 included, first windows summed per level (L + 1 < K^2)
 * and pixel by pixel; quad 2: widths of whole words (W % 4 == 0,
 * the vector stores) across several warps and blocks; quad 3: large square windows (K 11..129)
 * on several blocks across and several strips: the two-columns-a-thread kernel (k_entropy2),
 * which builds its first windows from column counts (es_cfill) where K^2 > 2 (L + 1), and
 * the one-column kernel where its counts do not fit (16-bit, L above 767). */
static void one_case(es_gpu_worker *w, es_gpu_worker **pair, int big, int quad) {
  es_image img;
  es_params p;
  char what[160], msg[256];
  int depth = (!quad || quad == 3) && es_test_range(0, 3) == 0 ? 16 : 8;
  int W = big ? es_test_range(2000, 4099) : es_test_range(1, g_small ? 23 : 97);
  int H = big ? es_test_range(2100, 2301) : es_test_range(1, g_small ? 19 : 83);
  if (quad == 2) W = 4 * (big ? es_test_range(500, 1024) : es_test_range(33, g_small ? 40 : 300));
  if (quad == 3) { /* several blocks across (128 threads at L <= 380), several strips */
    W = es_test_range(129, g_small ? 200 : 420);
    H = es_test_range(17, g_small ? 40 : 90);
  }
  if (!big && quad != 2 && es_test_range(0, 1)) {
    W |= 1;
    H |= 1;
  }
  int pinned = es_test_range(0, 3) == 0;
  void *buf = make_image(&img, W, H, depth, es_test_range(0, 5), pinned);
  es_params_default(&p);
  static const int ks[] = {1, 3, 5, 7, 9, 11, 15, 21, 25, 31, 51};
  p.window = big ? (es_test_range(0, 1) ? 5 : 9) : ks[es_test_range(0, 10)];
  if (!big && es_test_range(0, 5) == 0) p.window = 2 * es_test_range(0, 127) + 1; /* up to 255 */
  if (g_small && p.window > 31) p.window = 31;
  if (quad && quad != 3) p.window = 2 * es_test_range(1, 3) + 1;
  if (quad == 3) p.window = 2 * es_test_range(5, es_test_range(0, 3) ? 40 : 64) + 1; /* 11..129 */
  p.shape = quad ? ES_SHAPE_SQUARE : es_test_range(0, 1);
  p.border = es_test_range(0, 1);
  p.base = es_test_range(0, 1);
  int lmax = depth == 16 ? 65536 : 256;
  int lc = es_test_range(0, 4);
  p.levels = lc == 0 ? 16 : lc == 1 ? lmax : lc == 2 ? 2 : es_test_range(2, lmax);
  if (depth == 16 && lc == 3 && es_test_range(0, 1)) p.levels = es_test_range(257, 5000);
  if (quad && quad != 3) p.levels = es_test_range(0, 2) ? es_test_range(2, 31) : 16;
  if (quad == 3 && depth == 16 && es_test_range(0, 1)) p.levels = es_test_range(257, 1500);
  if (quad == 3 && g_small) { /* the sanitizer runs: both count layouts, windows that pay */
    static int n3;
    p.levels = n3++ % 2 ? 256 : 16;
    p.window = 2 * es_test_range(11, 40) + 1;
  }
  describe(what, sizeof what, &img, &p);

  float *ref = malloc(sizeof *ref * (size_t)W * H);
  ref_map(&img, &p, ref);
  size_t ms = (size_t)W + (size_t)es_test_range(0, 3);
  int mpinned = es_test_range(0, 3) == 0;
  float *map = poisoned_map(H, ms, mpinned);
  es_stats st, rst;
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = img;
  job.params = p;
  job.map = map;
  job.map_stride = ms;
  int want_stats = es_test_range(0, 1);
  if (want_stats) {
    memset(&st, 0xab, sizeof st);
    job.stats = &st;
    job.stats_bins = es_test_range(1, 64);
  }
  int rc = es_gpu_run(w, &job, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_gpu_run: %s", what, msg);
  if (rc == ES_OK) {
    compare_map(what, map, ms, ref, W, H);
    if (want_stats) {
      ref_stats(&img, &p, ref, job.stats_bins, &rst);
      check_stats(what, &st, &rst);
    }
  }
  if (cpu_available() && !big) {
    float *cm = malloc(sizeof *cm * (size_t)W * H);
    es_job cj = job;
    cj.map = cm;
    cj.map_stride = (size_t)W;
    es_stats cst = {0}; /* filled by es_cpu_run; zeroed for the analysers */
    cj.stats = want_stats ? &cst : NULL;
    rc = es_cpu_run(&cj, 2, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: es_cpu_run: %s", what, msg);
    if (rc == ES_OK) compare_map("es_cpu_run vs reference", cm, (size_t)W, ref, W, H);
    if (rc == ES_OK && want_stats) check_stats("GPU stats vs es_cpu_run", &st, &cst);
    free(cm);
  }
  /* The same job split over two workers. */
  if (pair) {
    float *m2 = poisoned_map(H, ms, 0);
    es_stats st2;
    es_job j2 = job;
    j2.map = m2;
    if (want_stats) j2.stats = &st2;
    rc = es_split_run(pair, 2, &j2, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: es_split_run: %s", what, msg);
    if (rc == ES_OK) {
      char w2[200];
      snprintf(w2, sizeof w2, "multi %s", what);
      compare_map(w2, m2, ms, ref, W, H);
      if (want_stats) check_stats(w2, &st2, &rst);
    }
    free(m2);
  }
  /* The naive kernel gives the same bits (same exact S). */
  if (p.levels <= 256 && !big && es_test_range(0, 2) == 0) {
    float *nm = poisoned_map(H, (size_t)W, 0);
    float kms = -1.0f;
    rc = es_gpu_naive(w, &img, &p, nm, (size_t)W, &kms, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: es_gpu_naive: %s", what, msg);
    if (rc == ES_OK) compare_map("naive", nm, (size_t)W, ref, W, H);
    CHECK(kms >= 0.0f, "naive kernel time %g", kms);
    free(nm);
  }
  if (mpinned)
    es_gpu_host_free(map);
  else
    free(map);
  if (pinned)
    es_gpu_host_free(buf);
  else
    free(buf);
  free(ref);
}

/* Renderings: every format, fixed/auto range, overlay or not, against es_cpu_render of the
 * reference map (the rules of render.c). big_fmt != 0: a frame of that format too large for
 * one staging band (ES_BAND_BYTES, 16 MB) in pageable memory, so its planes come back in
 * more chunks than there are staging slots; its map is the CPU engine's (equal to the
 * reference, checked above), since the double reference would take minutes. */
static void render_case(es_gpu_worker *w, es_gpu_worker **pair, int big_fmt) {
  es_image img;
  es_params p;
  char what[200], msg[256];
  int depth = big_fmt || es_test_range(0, 2) != 0 ? 8 : 16;
  int W = big_fmt ? 4001 + 2 * es_test_range(0, 50) : es_test_range(1, g_small ? 21 : 71);
  int H = big_fmt ? 6001 + es_test_range(0, 99) : es_test_range(1, g_small ? 17 : 53);
  void *buf = make_image(&img, W, H, depth, es_test_range(0, 3), 0);
  es_params_default(&p);
  p.window = 2 * es_test_range(0, 6) + 1;
  p.shape = es_test_range(0, 1);
  p.border = es_test_range(0, 1);
  p.levels = es_test_range(2, 256);
  p.base = es_test_range(0, 1);
  es_render r;
  es_render_default(&r);
  r.format = big_fmt ? big_fmt : es_test_range(ES_PIX_RGB24, ES_PIX_YUV420P);
  r.colormap = es_test_range(0, 4);
  r.range_auto = es_test_range(0, 1);
  r.overlay = es_test_range(0, 1) ? 0.0f : (float)es_test_range(0, 1000) / 1000.0f;
  r.overlay_on = es_test_range(0, 1); /* overlay 0 and on: the source grey alone */
  describe(what, sizeof what, &img, &p);
  snprintf(what + strlen(what), sizeof what - strlen(what),
           " fmt %d cmap %d auto %d overlay %g on %d", r.format, r.colormap, r.range_auto,
           r.overlay, r.overlay_on);
  float *ref = malloc(sizeof *ref * (size_t)W * H);
  es_stats rst;
  if (big_fmt) {
    es_job cj;
    memset(&cj, 0, sizeof cj);
    cj.in = img;
    cj.params = p;
    cj.map = ref;
    cj.map_stride = (size_t)W;
    cj.stats = &rst;
    cj.stats_bins = 16;
    if (es_cpu_run(&cj, 0, msg, sizeof msg) != ES_OK) {
      printf("es_cpu_run unavailable (%s): large rendering not compared\n", msg);
      free(ref);
      free(buf);
      return;
    }
  } else {
    ref_map(&img, &p, ref);
    ref_stats(&img, &p, ref, 16, &rst);
  }
  es_planes gp, cp;
  uint8_t *bufs[6];
  for (int i = 0; i < 3; i++) {
    size_t s = es_pix_stride(r.format, i, W) + (size_t)es_test_range(0, 3);
    size_t n = s * (size_t)es_pix_plane_height(r.format, i, H) + 1;
    bufs[i] = malloc(n);
    bufs[i + 3] = malloc(n);
    memset(bufs[i], 0xcd, n);
    memset(bufs[i + 3], 0xcd, n);
    gp.plane[i] = bufs[i];
    cp.plane[i] = bufs[i + 3];
    gp.stride[i] = cp.stride[i] = s;
  }
  int crc = es_cpu_render(ref, (size_t)W, &img, &p, &r, rst.min, rst.max, &cp, 1);
  for (int pass = 0; pass < (pair ? 2 : 1); pass++) {
    es_job job;
    memset(&job, 0, sizeof job);
    job.in = img;
    job.params = p;
    job.render = r;
    job.pix = gp;
    for (int i = 0; i < 3; i++) {
      size_t n = gp.stride[i] * (size_t)es_pix_plane_height(r.format, i, H) + 1;
      memset(bufs[i], 0xcd, n);
    }
    int rc = pass ? es_split_run(pair, 2, &job, msg, sizeof msg) : es_gpu_run(w, &job, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: render run: %s", what, msg);
    if (rc || crc) {
      if (crc) printf("es_cpu_render unavailable (%d): rendering not compared\n", crc);
      continue;
    }
    for (int i = 0; i < es_pix_planes(r.format); i++) {
      size_t n = gp.stride[i] * (size_t)es_pix_plane_height(r.format, i, H) + 1;
      CHECK(!memcmp(bufs[i], bufs[i + 3], n), "%s%s: plane %d differs from es_cpu_render",
            pass ? "multi " : "", what, i);
    }
  }
  for (int i = 0; i < 6; i++) free(bufs[i]);
  free(ref);
  free(buf);
}

/* A mask of the image's size (random, all out, all in, one pixel, blocks), any non-zero
 * byte inside, a padded stride; pinned or pageable. */
static uint8_t *make_mask(es_image *img, int kind, int pinned) {
  const int w = img->width, h = img->height;
  size_t stride = (size_t)w + (size_t)es_test_range(0, 5), n = stride * (size_t)h;
  uint8_t *m = pinned ? es_gpu_host_alloc(n) : malloc(n);
  int density = es_test_range(1, 9), px = es_test_range(0, w - 1), py = es_test_range(0, h - 1);
  int bx0 = es_test_range(0, w - 1), bx1 = es_test_range(bx0, w - 1);
  int by0 = es_test_range(0, h - 1), by1 = es_test_range(by0, h - 1);
  for (int y = 0; y < h; y++)
    for (size_t x = 0; x < stride; x++) {
      int in = kind == 0   ? es_test_range(0, 9) < density
               : kind == 1 ? 0
               : kind == 2 ? 1
               : kind == 3 ? ((int)x == px && y == py)
                           : ((int)x >= bx0 && (int)x <= bx1 && y >= by0 && y <= by1) ||
                                 ((int)x + y) % 5 == 0;
      m[(size_t)y * stride + x] = in ? (uint8_t)es_test_range(1, 255) : 0;
    }
  img->mask = m;
  img->mask_stride = stride;
  return m;
}

/* Float samples with NaN and infinities among them. */
static void *make_float(es_image *img, int w, int h, int pinned) {
  img->width = w;
  img->height = h;
  img->depth = 32;
  img->stride = (size_t)w * 4 + 4 * (size_t)es_test_range(0, 3);
  uint8_t *d = pinned ? es_gpu_host_alloc(img->stride * (size_t)h) : malloc(img->stride * (size_t)h);
  const int few = es_test_range(0, 2) == 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float v = few ? (float)es_test_range(-4, 4) * 0.5f
                    : (float)((double)(es_test_rand() >> 11) / 9007199254740992.0 * 700.0 - 200.0);
      int k = es_test_range(0, 60);
      if (k == 0) v = NAN;
      if (k == 1) v = INFINITY;
      if (k == 2) v = -INFINITY;
      memcpy(d + (size_t)y * img->stride + 4 * (size_t)x, &v, 4);
    }
  img->data = d;
  return d;
}

/* One job with a mask and/or float samples on the GPU (one worker and two), against
 * es_cpu_run bit for bit. kind: the image's size class; 0 small, 1 several bands (tall), 2
 * the fast kernels' shapes (square K <= 7 8-bit L <= 31, or large square windows). */
static void mask_case(es_gpu_worker *w, es_gpu_worker **pair, int kind) {
  es_image img;
  es_params p;
  char what[256], msg[256];
  const int depth = (int[]){8, 16, 32}[es_test_range(0, 2)];
  int W = kind == 1 ? es_test_range(1500, 2600) : es_test_range(1, g_small ? 40 : 300);
  int H = kind == 1 ? es_test_range(2100, 2400) : es_test_range(1, g_small ? 30 : 120);
  const int pinned = es_test_range(0, 2) == 0;
  void *buf = depth == 32 ? make_float(&img, W, H, pinned)
                          : make_image(&img, W, H, depth, es_test_range(0, 5), pinned);
  img.mask = NULL;
  img.mask_stride = 0;
  const int mk = es_test_range(-1, 4); /* -1: no mask (float samples: NaN and inf only) */
  const int mpin = es_test_range(0, 1);
  uint8_t *mbuf = mk >= 0 || depth != 32 ? make_mask(&img, mk < 0 ? 0 : mk, mpin) : NULL;
  es_params_default(&p);
  p.window = 2 * es_test_range(0, 6) + 1;
  p.shape = es_test_range(0, 1);
  p.border = es_test_range(0, 1);
  p.base = es_test_range(0, 1);
  p.levels = (int[]){2, 16, 256, 4096, 65536}[es_test_range(0, depth == 8 ? 2 : 4)];
  p.mask_computed = es_test_range(0, 3) == 0;
  if (kind == 2) {
    p.shape = ES_SHAPE_SQUARE;
    if (es_test_range(0, 1)) {
      p.window = 2 * es_test_range(1, 3) + 1;
      p.levels = es_test_range(2, 31);
    } else {
      p.window = 2 * es_test_range(5, 30) + 1;
    }
  }
  if (depth == 32 && es_test_range(0, 1)) {
    p.in_lo = -50.0;
    p.in_hi = 300.0;
  }
  snprintf(what, sizeof what, "mask %d computed %d range %g:%g ", mk, p.mask_computed, p.in_lo,
           p.in_hi);
  describe(what + strlen(what), sizeof what - strlen(what), &img, &p);

  float *cm = malloc(sizeof *cm * (size_t)W * H);
  es_stats cst, gst;
  memset(&cst, 0, sizeof cst);
  es_job cj;
  memset(&cj, 0, sizeof cj);
  cj.in = img;
  cj.params = p;
  cj.map = cm;
  cj.map_stride = (size_t)W;
  cj.stats = &cst;
  cj.stats_bins = es_test_range(1, 64);
  int rc = es_cpu_run(&cj, 0, msg, sizeof msg);
  if (rc != ES_OK) {
    printf("es_cpu_run unavailable (%s): masks not compared\n", msg);
    goto end;
  }
  for (int pass = 0; pass < (pair ? 2 : 1); pass++) {
    size_t ms = (size_t)W + (size_t)es_test_range(0, 3);
    float *map = poisoned_map(H, ms, 0);
    es_job job = cj;
    job.map = map;
    job.map_stride = ms;
    memset(&gst, 0xab, sizeof gst);
    job.stats = es_test_range(0, 3) ? &gst : NULL;
    rc = pass ? es_split_run(pair, 2, &job, msg, sizeof msg) : es_gpu_run(w, &job, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s%s: GPU run: %s", pass ? "multi " : "", what, msg);
    if (rc == ES_OK) {
      char w2[300];
      snprintf(w2, sizeof w2, "%s%s vs es_cpu_run", pass ? "multi " : "", what);
      compare_map(w2, map, ms, cm, W, H);
      if (job.stats) check_stats(w2, &gst, &cst);
    }
    free(map);
  }
  /* A rendering (auto range half the time: the inside's min and max) against the CPU's. */
  if (kind != 1) {
    es_render r;
    es_render_default(&r);
    r.format = es_test_range(ES_PIX_RGB24, ES_PIX_YUV420P);
    r.range_auto = es_test_range(0, 1);
    r.overlay = es_test_range(0, 1) ? 0.0f : 0.5f;
    es_planes gp, cp;
    uint8_t *bufs[6];
    for (int i = 0; i < 3; i++) {
      size_t s = es_pix_stride(r.format, i, W), n = s * (size_t)es_pix_plane_height(r.format, i, H) + 1;
      bufs[i] = calloc(n, 1);
      bufs[i + 3] = calloc(n, 1);
      gp.plane[i] = bufs[i];
      cp.plane[i] = bufs[i + 3];
      gp.stride[i] = cp.stride[i] = s;
    }
    es_job rj;
    memset(&rj, 0, sizeof rj);
    rj.in = img;
    rj.params = p;
    rj.render = r;
    rj.pix = cp;
    int crc = es_cpu_run(&rj, 1, msg, sizeof msg);
    rj.pix = gp;
    rc = es_gpu_run(w, &rj, msg, sizeof msg);
    CHECK(crc == ES_OK && rc == ES_OK, "%s: render runs %d %d: %s", what, crc, rc, msg);
    for (int i = 0; rc == ES_OK && crc == ES_OK && i < es_pix_planes(r.format); i++) {
      size_t n = gp.stride[i] * (size_t)es_pix_plane_height(r.format, i, H);
      CHECK(!memcmp(bufs[i], bufs[i + 3], n), "%s fmt %d auto %d: plane %d differs from the CPU's",
            what, r.format, r.range_auto, i);
    }
    for (int i = 0; i < 6; i++) free(bufs[i]);
  }
end:
  free(cm);
  if (pinned)
    es_gpu_host_free(buf);
  else
    free(buf);
  if (mbuf && mpin)
    es_gpu_host_free(mbuf);
  else
    free(mbuf);
}

int main(void) {
  es_test_seed("test_gpu_engine");
  int ndev = es_gpu_device_count();
  if (ndev == 0) {
    printf("test_gpu_engine: no CUDA device (built with CUDA: %d): skipped\n", es_gpu_built());
    return ES_TEST_SKIP;
  }
  g_small = getenv("ES_TEST_SMALL") && atoi(getenv("ES_TEST_SMALL"));
  char msg[256], d[256];
  es_gpu_describe(0, d, sizeof d);
  es_gpu_versions(msg, sizeof msg);
  printf("%s; %s; small %d\n", d, msg, g_small);
  es_gpu_worker *w = NULL, *pair[2] = {NULL, NULL};
  int rc = es_gpu_worker_create(&w, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create: %s", msg);
  if (rc) return es_test_done("test_gpu_engine");
  CHECK(es_gpu_worker_device(w) == 0, "worker device");
  rc = es_gpu_worker_create(&pair[0], 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create pair 0: %s", msg);
  rc = es_gpu_worker_create(&pair[1], ndev > 1 ? 1 : 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "worker_create pair 1: %s", msg);
  printf("multi: 2 workers on devices 0 and %d\n", ndev > 1 ? 1 : 0);

  /* A bad job is a usage error, and the worker stays usable. */
  {
    uint8_t px[4] = {0};
    es_job j;
    memset(&j, 0, sizeof j);
    j.in.data = px;
    j.in.width = j.in.height = 2;
    j.in.stride = 2;
    j.in.depth = 8;
    es_params_default(&j.params);
    j.params.window = 4;
    CHECK(es_gpu_run(w, &j, msg, sizeof msg) == ES_ERR_USAGE, "even window accepted");
  }
  int ncase = g_small ? 12 : 400;
  for (int i = 0; i < ncase; i++) one_case(w, (i % 3 == 0) ? pair : NULL, 0, 0);
  int nquad = g_small ? 6 : 120;
  for (int i = 0; i < nquad; i++) one_case(w, (i % 3 == 0) ? pair : NULL, 0, 1);
  for (int i = 0; i < (g_small ? 2 : 30); i++) one_case(w, (i % 3 == 0) ? pair : NULL, 0, 2);
  for (int i = 0; i < (g_small ? 4 : 40); i++) one_case(w, (i % 3 == 0) ? pair : NULL, 0, 3);
  for (int i = 0; i < (g_small ? 8 : 150); i++) mask_case(w, (i % 3 == 0) ? pair : NULL, i % 4 == 3 ? 2 : 0);
  if (!g_small) mask_case(w, pair, 1);
  int nrender = g_small ? 6 : 80;
  for (int i = 0; i < nrender; i++) render_case(w, (i % 4 == 0) ? pair : NULL, 0);
  if (!g_small) {
    /* Large pageable renderings: planes downloaded in more chunks than staging slots. */
    render_case(w, pair, ES_PIX_RGB24);
    render_case(w, NULL, ES_PIX_YUV420P);
    /* Tall images: several pipelined bands, halos across band edges, stats and multi. */
    for (int i = 0; i < 3; i++) one_case(w, pair, 1, 0);
    one_case(w, pair, 1, 1);
    one_case(w, pair, 1, 2);
    one_case(w, NULL, 1, 2);
  }
  es_gpu_worker_destroy(&pair[0]);
  es_gpu_worker_destroy(&pair[1]);
  es_gpu_worker_destroy(&w);
  es_gpu_worker_destroy(&w); /* NULL is fine */
  return es_test_done("test_gpu_engine");
}
