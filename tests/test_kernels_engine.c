/*
 * test_kernels_engine.c - the CPU engine (both algorithms) and the naive baseline against
 * the double reference, on fresh random images of odd sizes (1x1, 1xN, Nx1, smaller than
 * the window, ...), every window/shape/border/levels/base combination, 8- and 16-bit input;
 * bitwise identity across thread counts 1, 2, 3, 7 and across algorithms; statistics
 * against es_ref_stats. The same with masks (random, all out, all in, one pixel, blocks; any
 * non-zero byte inside) and float samples (NaN and infinities among them, the image's own
 * range or a given one): NaN exactly where the reference has it (outside), and statistics
 * over the inside only.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"
#include "es_test.h"

#define TOL 1e-5

static const uint32_t POISON = 0x7fc0dead; /* a NaN no engine computes */

static float poison_value(void) {
  float f;
  memcpy(&f, &POISON, 4);
  return f;
}

static int is_poison(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u == POISON;
}

/* A random image with a padded stride whose padding is random garbage too. Depth 32:
 * float samples, spread wide or few distinct, some NaN or infinite. */
static uint8_t *make_image(es_image *img, int w, int h, int depth) {
  size_t bps = es_depth_bytes(depth);
  size_t stride = (size_t)w * bps + (size_t)es_test_range(0, 7) * bps;
  uint8_t *buf = malloc(stride * h + 1);
  for (size_t i = 0; i < stride * h; i++) buf[i] = (uint8_t)es_test_rand();
  /* Sometimes few distinct values, so windows hold repeated levels. */
  if (depth != 32 && es_test_range(0, 2) == 0) {
    int mask = es_test_range(0, 1) ? 0x81 : 0xC0;
    for (size_t i = 0; i < stride * h; i++) buf[i] &= (uint8_t)mask;
  }
  if (depth == 32) {
    int few = es_test_range(0, 2) == 0, bad = es_test_range(0, 3); /* 1 in `bad * 8` */
    double scale = es_test_range(0, 1) ? 1000.0 : 1e-3;
    for (int y = 0; y < h; y++) {
      for (int x = 0; x < w; x++) {
        float v = few ? (float)es_test_range(-3, 3) * 0.25f
                      : (float)(((double)(es_test_rand() >> 11) / 9007199254740992.0 - 0.3) * scale);
        if (bad && es_test_range(0, 8 * bad - 1) == 0) {
          int k = es_test_range(0, 2);
          v = k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
        }
        memcpy(buf + (size_t)y * stride + 4 * (size_t)x, &v, 4);
      }
    }
  }
  img->data = buf;
  img->width = w;
  img->height = h;
  img->stride = stride;
  img->depth = depth;
  img->mask = NULL;
  img->mask_stride = 0;
  return buf;
}

/* Mask kinds: none, random (any density), all outside, all inside, one pixel inside,
 * rectangles inside. Inside is any non-zero byte; the stride's padding is garbage. */
enum { MK_NONE, MK_RANDOM, MK_ZERO, MK_ONE, MK_PIXEL, MK_BLOCKS, MK_KINDS };
static const char *const mk_name[] = {"none", "random", "all out", "all in", "one pixel", "blocks"};
static uint8_t *make_mask(es_image *img, int kind) {
  int w = img->width, h = img->height;
  if (kind == MK_NONE) return NULL;
  size_t stride = (size_t)w + (size_t)es_test_range(0, 5);
  uint8_t *m = malloc(stride * h);
  for (size_t i = 0; i < stride * h; i++) m[i] = (uint8_t)es_test_rand();
  int density = es_test_range(1, 9), px = es_test_range(0, w - 1), py = es_test_range(0, h - 1);
  int bx0 = es_test_range(0, w - 1), bx1 = es_test_range(bx0, w - 1);
  int by0 = es_test_range(0, h - 1), by1 = es_test_range(by0, h - 1);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      int in = kind == MK_RANDOM   ? es_test_range(0, 9) < density
               : kind == MK_ONE    ? 1
               : kind == MK_PIXEL  ? x == px && y == py
               : kind == MK_BLOCKS ? (x >= bx0 && x <= bx1 && y >= by0 && y <= by1) ||
                                         (x + y) % 7 == 0
                                   : 0;
      m[(size_t)y * stride + x] = in ? (uint8_t)es_test_range(1, 255) : 0;
    }
  }
  img->mask = m;
  img->mask_stride = stride;
  return m;
}

typedef struct run_out {
  float *map;
  size_t stride;
} run_out;

static float *poisoned_map(int w, int h, size_t *stride) {
  *stride = (size_t)w + (size_t)es_test_range(0, 3);
  size_t n = *stride * h;
  float *m = malloc(n * sizeof *m);
  float pv = poison_value();
  for (size_t i = 0; i < n; i++) m[i] = pv;
  return m;
}

static int run_engine(const es_image *img, const es_params *p, int threads, float *map,
                      size_t stride, es_stats *st, int bins) {
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = *img;
  job.params = *p;
  job.map = map;
  job.map_stride = stride;
  job.stats = st;
  job.stats_bins = bins;
  job.render.format = ES_PIX_NONE;
  char msg[256] = "";
  int rc = es_cpu_run(&job, threads, msg, sizeof msg);
  CHECK(rc == ES_OK, "es_cpu_run: %d %s", rc, msg);
  return rc;
}

static const char *desc(const es_params *p, int w, int h, int depth, int mk) {
  static char buf[200];
  snprintf(buf, sizeof buf, "%dx%d d%d K=%d %s %s L=%d base %s mask %s%s range %g:%g", w, h,
           depth, p->window, p->shape == ES_SHAPE_DISK ? "disk" : "square",
           p->border == ES_BORDER_REFLECT ? "reflect" : "clip", p->levels,
           p->base == ES_BASE_E ? "e" : "2", mk_name[mk], p->mask_computed ? " computed" : "",
           p->in_lo, p->in_hi);
  return buf;
}

static void one_case_mask(int w, int h, int depth, const es_params *p, int mk) {
  es_image img;
  uint8_t *buf = make_image(&img, w, h, depth);
  uint8_t *mbuf = make_mask(&img, mk);
  double *ref = malloc((size_t)w * h * sizeof *ref);
  int rc = es_ref_entropy(&img, p, ref);
  CHECK(rc == ES_OK, "es_ref_entropy %d", rc);
  const char *d = desc(p, w, h, depth, mk);
  int64_t inside = 0; /* pixels the reference computes (not NaN) and counts */
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      int in = es_image_inside(&img, x, y);
      if (depth == 32) {
        float f;
        memcpy(&f, buf + (size_t)y * img.stride + 4 * (size_t)x, 4);
        in = in && isfinite(f);
      }
      inside += in;
      CHECK(p->mask_computed ? !isnan(ref[(size_t)y * w + x]) : in == !isnan(ref[(size_t)y * w + x]),
            "%s: reference NaN at %d,%d but inside %d", d, x, y, in);
    }
  }

  /* Engine (default algorithm), one thread. */
  size_t s1;
  float *m1 = poisoned_map(w, h, &s1);
  run_engine(&img, p, 1, m1, s1, NULL, 0);
  double maxerr = 0.0;
  int unwritten = 0, touched_pad = 0, outside = 0;
  double hmax = es_params_hmax(p);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      float v = m1[(size_t)y * s1 + x];
      if (isnan(v) && !is_poison(v) && isnan(ref[(size_t)y * w + x])) continue; /* outside */
      if (is_poison(v) || !isfinite(v) || isnan(ref[(size_t)y * w + x])) {
        unwritten++;
        continue;
      }
      double e = fabs((double)v - ref[(size_t)y * w + x]);
      if (e > maxerr) maxerr = e;
      if (!(v >= 0.0f && (double)v <= hmax + 1e-6)) outside++;
    }
    for (size_t x = w; x < s1; x++)
      if (!is_poison(m1[(size_t)y * s1 + x])) touched_pad++;
  }
  CHECK(unwritten == 0, "%s: %d pixels not written", d, unwritten);
  CHECK(outside == 0, "%s: %d values outside [0, %g]", d, outside, hmax);
  CHECK(touched_pad == 0, "%s: %d padding floats written", d, touched_pad);
  CHECK(maxerr <= TOL, "%s: max abs error %g vs reference", d, maxerr);

  /* Thread counts: bitwise identical. */
  static const int tcs[] = {2, 3, 7};
  size_t s2;
  float *m2 = poisoned_map(w, h, &s2);
  for (int i = 0; i < 3; i++) {
    float pv = poison_value();
    for (size_t k = 0; k < s2 * h; k++) m2[k] = pv;
    run_engine(&img, p, tcs[i], m2, s2, NULL, 0);
    int diff = 0;
    for (int y = 0; y < h; y++) diff += memcmp(m1 + (size_t)y * s1, m2 + (size_t)y * s2, (size_t)w * 4) != 0;
    CHECK(diff == 0, "%s: %d rows differ between 1 and %d threads", d, diff, tcs[i]);
  }

  /* Both algorithms (square): bitwise identical. */
  if (p->shape == ES_SHAPE_SQUARE) {
    const char *algos[] = {"huang", "ph", "rows"};
    for (int a = 0; a < 3; a++) {
      setenv("ES_CPU_ALGO", algos[a], 1);
      float pv = poison_value();
      for (size_t k = 0; k < s2 * h; k++) m2[k] = pv;
      run_engine(&img, p, es_test_range(1, 3), m2, s2, NULL, 0);
      int diff = 0;
      for (int y = 0; y < h; y++) diff += memcmp(m1 + (size_t)y * s1, m2 + (size_t)y * s2, (size_t)w * 4) != 0;
      CHECK(diff == 0, "%s: %d rows differ with ES_CPU_ALGO=%s", d, diff, algos[a]);
    }
    unsetenv("ES_CPU_ALGO");
  }

  /* The naive baseline (no masks, no float samples). */
  if (!img.mask && depth != 32) {
    float pv = poison_value();
    for (size_t k = 0; k < s2 * h; k++) m2[k] = pv;
    rc = es_cpu_naive(&img, p, m2, s2);
    CHECK(rc == ES_OK, "es_cpu_naive %d", rc);
    double e2 = 0.0;
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        float v = m2[(size_t)y * s2 + x];
        if (is_poison(v)) bad++;
        double e = fabs((double)v - ref[(size_t)y * w + x]);
        if (!(e <= e2)) e2 = e;
      }
    CHECK(bad == 0 && e2 <= TOL, "%s: naive: %d unwritten, max abs error %g", d, bad, e2);
  }

  /* Statistics without a map, against the reference and across thread counts. */
  {
    int bins = es_test_range(1, 40);
    es_stats st, st3, rs;
    memset(&st, 0xA5, sizeof st);
    memset(&st3, 0x5A, sizeof st3);
    run_engine(&img, p, 1, NULL, 0, &st, bins);
    run_engine(&img, p, 3, NULL, 0, &st3, bins);
    /* A map and statistics in one call: the map's bits, and the statistics of the call
     * without a map (the square Huang's segments take them from the map's row after it). */
    es_stats stm;
    memset(&stm, 0x3C, sizeof stm);
    float pv = poison_value();
    for (size_t k = 0; k < s2 * h; k++) m2[k] = pv;
    run_engine(&img, p, es_test_range(1, 3), m2, s2, &stm, bins);
    int mdiff = 0;
    for (int y = 0; y < h; y++) mdiff += memcmp(m1 + (size_t)y * s1, m2 + (size_t)y * s2, (size_t)w * 4) != 0;
    CHECK(mdiff == 0, "%s: %d rows differ with statistics asked for too", d, mdiff);
    CHECK(stm.count == st.count && stm.mean == st.mean && stm.std == st.std &&
              stm.min == st.min && stm.max == st.max && stm.bins == st.bins &&
              !memcmp(stm.hist, st.hist, sizeof st.hist) &&
              stm.global_entropy == st.global_entropy &&
              stm.global_entropy_levels == st.global_entropy_levels,
          "%s: statistics with a map differ from those without", d);
    es_ref_stats(&img, p, ref, bins, &rs);
    CHECK(st.count == inside && st.bins == bins, "%s: stats count %lld of %lld inside, bins",
          d, (long long)st.count, (long long)inside);
    CHECK(rs.count == inside, "%s: reference count %lld", d, (long long)rs.count);
    CHECK(fabs(st.mean - rs.mean) <= TOL, "%s: mean %.9g vs %.9g", d, st.mean, rs.mean);
    CHECK(fabs(st.std - rs.std) <= 1e-4, "%s: std %.9g vs %.9g", d, st.std, rs.std);
    CHECK(fabsf(st.min - rs.min) <= TOL && fabsf(st.max - rs.max) <= TOL,
          "%s: min/max %g %g vs %g %g", d, st.min, st.max, rs.min, rs.max);
    CHECK(fabs(st.global_entropy - rs.global_entropy) <= 1e-12, "%s: global %g vs %g", d,
          st.global_entropy, rs.global_entropy);
    CHECK(fabs(st.global_entropy_levels - rs.global_entropy_levels) <= 1e-12,
          "%s: global of the levels %g vs %g", d, st.global_entropy_levels,
          rs.global_entropy_levels);
    CHECK(st.mean == st3.mean && st.std == st3.std && st.min == st3.min && st.max == st3.max &&
              !memcmp(st.hist, st3.hist, sizeof st.hist),
          "%s: stats differ between 1 and 3 threads", d);
    /* The histogram: exactly the engine map's bins; against the reference, only pixels
     * within rounding of a bin edge may move. */
    uint64_t own[ES_STATS_MAX_BINS] = {0};
    double bs = es_stats_binscale(p, bins);
    int near = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        if (isnan(ref[(size_t)y * w + x]) || (p->mask_computed && !es_image_inside(&img, x, y)))
          continue;
        if (depth == 32 && p->mask_computed) {
          float f;
          memcpy(&f, buf + (size_t)y * img.stride + 4 * (size_t)x, 4);
          if (!isfinite(f)) continue;
        }
        own[es_stats_bin(m1[(size_t)y * s1 + x], bs, bins)]++;
        double t = ref[(size_t)y * w + x] * bs;
        if (fabs(t - floor(t + 0.5)) < 1e-4) near++;
      }
    CHECK(!memcmp(own, st.hist, sizeof(uint64_t) * bins), "%s: hist differs from its own map", d);
    uint64_t moved = 0, total = 0;
    for (int k = 0; k < bins; k++) {
      moved += st.hist[k] > rs.hist[k] ? st.hist[k] - rs.hist[k] : rs.hist[k] - st.hist[k];
      total += st.hist[k];
    }
    CHECK(total == (uint64_t)inside, "%s: hist total %llu", d, (unsigned long long)total);
    if (inside == 0)
      CHECK(st.mean == 0.0 && st.std == 0.0 && st.min == 0.0f && st.max == 0.0f &&
                st.global_entropy == 0.0 && st.global_entropy_levels == 0.0,
            "%s: no pixel inside, statistics not 0", d);
    if (depth == 32)
      CHECK(st.global_entropy == st.global_entropy_levels, "%s: float global %g vs levels %g",
            d, st.global_entropy, st.global_entropy_levels);
    CHECK(moved <= 2 * (uint64_t)near, "%s: hist moved %llu near %d", d, (unsigned long long)moved, near);
  }
  free(m1);
  free(m2);
  free(ref);
  free(buf);
  free(mbuf);
}

static void one_case(int w, int h, int depth, const es_params *p) {
  one_case_mask(w, h, depth, p, MK_NONE);
}

/* A random mask kind (none a third of the time), float ranges, mask_computed. */
static void masked_params(es_params *p, int depth) {
  p->mask_computed = es_test_range(0, 3) == 0;
  if (depth == 32) {
    int k = es_test_range(0, 3);
    if (k == 1) p->in_lo = p->in_hi = 0.0; /* a zeroed struct: auto too */
    if (k >= 2) {                          /* given; may clip the samples */
      p->in_lo = es_test_range(-400, 100);
      p->in_hi = p->in_lo + es_test_range(1, 600) * (k == 2 ? 1.0 : 1e-3);
    }
  }
}

static void random_params(es_params *p, int depth, int maxk) {
  es_params_default(p);
  int k = es_test_range(0, (maxk - 1) / 2);
  p->window = 2 * k + 1;
  p->shape = es_test_range(0, 1);
  p->border = es_test_range(0, 1);
  p->base = es_test_range(0, 1);
  static const int l8[] = {2, 16, 256, 3, 37};
  static const int l16[] = {2, 4096, 65536, 255, 1000};
  p->levels = depth == 8 ? l8[es_test_range(0, 4)] : l16[es_test_range(0, 4)];
}

/* Bad jobs are refused with ES_ERR_USAGE and a one-line message, and write nothing. */
static void bad_jobs(void) {
  uint8_t px[12] = {0};
  float map[12];
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = (es_image){px, 4, 3, 4, 8};
  es_params_default(&job.params);
  job.map = map;
  job.map_stride = 4;
  for (int i = 0; i < 7; i++) {
    es_job j = job;
    switch (i) {
    case 0: j.params.window = 4; break;
    case 1: j.params.window = 257; break;
    case 2: j.params.levels = 65537; break;
    case 3: j.in.data = NULL; break;
    case 4: j.map_stride = 3; break;
    case 5: j.stats = (es_stats *)map; j.stats_bins = 0; break;
    case 6: j.in.depth = 12; break;
    }
    for (int k = 0; k < 12; k++) map[k] = poison_value();
    char msg[256] = "";
    int rc = es_cpu_run(&j, 1, msg, sizeof msg);
    CHECK(rc == ES_ERR_USAGE && msg[0] && !strchr(msg, '\n'), "bad job %d: rc %d msg '%s'", i, rc, msg);
    int written = 0;
    for (int k = 0; k < 12; k++) written += !is_poison(map[k]);
    CHECK(written == 0, "bad job %d: %d map values written", i, written);
  }
  es_image img = {px, 4, 3, 4, 8};
  es_params p;
  es_params_default(&p);
  p.levels = 1;
  CHECK(es_cpu_naive(&img, &p, map, 4) == ES_ERR_USAGE, "naive accepted L=1");
  double ref[12];
  CHECK(es_ref_entropy(&img, &p, ref) == ES_ERR_USAGE, "reference accepted L=1");
}

int main(void) {
  es_test_seed("test_kernels_engine");
  bad_jobs();
  /* Fixed corner cases first: every shape/border/base at degenerate sizes. */
  static const int sizes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 3}, {3, 2}, {1, 17}, {23, 1}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (int k = 1; k <= 9; k += 2) {
      for (int combo = 0; combo < 8; combo++) {
        es_params p;
        es_params_default(&p);
        p.window = k;
        p.shape = combo & 1;
        p.border = (combo >> 1) & 1;
        p.base = (combo >> 2) & 1;
        p.levels = combo & 1 ? 2 : 256;
        one_case(sizes[s][0], sizes[s][1], 8, &p);
      }
    }
  }
  /* Every L of the brief at each depth, with both algorithms (square) and both borders. */
  static const int l8[] = {2, 16, 256};
  static const int l16[] = {2, 4096, 65536};
  for (int depth = 8; depth <= 16; depth += 8) {
    for (int li = 0; li < 3; li++) {
      for (int combo = 0; combo < 4; combo++) {
        es_params p;
        es_params_default(&p);
        p.levels = depth == 8 ? l8[li] : l16[li];
        p.shape = combo & 1;
        p.border = combo >> 1;
        p.window = 2 * es_test_range(0, 5) + 1;
        p.base = es_test_range(0, 1);
        one_case(es_test_range(1, 41), es_test_range(1, 37), depth, &p);
      }
    }
  }
  /* Random cases, windows up to larger than the image (kept small: the reference is
   * O(area) per pixel and this runs under ASan too). */
  for (int i = 0; i < 120; i++) {
    int depth = es_test_range(0, 2) ? 8 : 16;
    es_params p;
    int big = es_test_range(0, 3) == 0;
    random_params(&p, depth, big ? 61 : 15);
    int w = big ? es_test_range(1, 24) : es_test_range(1, 67);
    int h = big ? es_test_range(1, 24) : es_test_range(1, 53);
    one_case(w, h, depth, &p);
  }
  /* The largest window on a small image. */
  {
    es_params p;
    es_params_default(&p);
    p.window = 255;
    p.border = ES_BORDER_REFLECT;
    p.levels = 16;
    one_case(7, 5, 8, &p);
    p.border = ES_BORDER_CLIP;
    p.shape = ES_SHAPE_DISK;
    one_case(5, 3, 16, &p);
    /* Columns narrower than the window, down many rows: each row's window is built from the
     * image columns with their multiplicities (reflect folds the window onto them, clip
     * counts the rest as the sentinel), in every algorithm. */
    for (int combo = 0; combo < 4; combo++) {
      p.shape = combo & 1;
      p.border = combo >> 1;
      one_case(1 + combo, 90, combo & 1 ? 16 : 8, &p);
      one_case(90, 1 + combo, combo & 1 ? 8 : 16, &p); /* rows: band_short */
    }
    /* Short images around the band_short line (4 h <= K), every shape and border. */
    for (int combo = 0; combo < 4; combo++) {
      p.window = 2 * es_test_range(4, 20) + 1;
      p.shape = combo & 1;
      p.border = combo >> 1;
      p.levels = combo & 1 ? 256 : 16;
      int h = p.window / 4 + es_test_range(-2, 2);
      one_case(es_test_range(1, 50), h < 1 ? 1 : h, 8, &p);
    }
  }
  /* The square Huang's segments (slide_segs in the CPU engine): rows whose interior holds
   * 4 segments of at least max(4 K, 32) columns, around that line and with remainders,
   * both borders, the three level types of the ring (L <= 255, L = 256 and 4096, L =
   * 65536); the default algorithm is checked against the reference and ES_CPU_ALGO=huang
   * (the segments), ph and rows against it bit for bit, with and without statistics. */
  for (int i = 0; i < 24; i++) {
    static const int ks[] = {3, 5, 7, 9, 11, 25};
    static const int dw[] = {-1, 0, 1, 3, 7};
    es_params p;
    es_params_default(&p);
    p.window = ks[i % 6];
    p.border = (i / 6) & 1;
    p.base = es_test_range(0, 1);
    int depth = i / 12 ? 16 : 8;
    p.levels = depth == 8 ? (es_test_range(0, 1) ? 256 : 16) : (es_test_range(0, 1) ? 65536 : 4096);
    int r = p.window / 2, seg = 4 * p.window > 32 ? 4 * p.window : 32;
    int w = 4 * seg + dw[es_test_range(0, 4)] + (p.border == ES_BORDER_CLIP ? 2 * r : 0);
    one_case(w, es_test_range(p.window / 4 + 1, p.window / 4 + 6), depth, &p);
  }
  /* Masks and float samples: corner sizes with every mask kind, then random cases. */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (int mk = MK_RANDOM; mk < MK_KINDS; mk++) {
      es_params p;
      int depth = mk % 2 ? 8 : 32;
      random_params(&p, depth == 32 ? 16 : 8, 9);
      masked_params(&p, depth);
      one_case_mask(sizes[s][0], sizes[s][1], depth, &p, mk);
    }
  }
  for (int i = 0; i < 90; i++) {
    int depth = (int[]){8, 16, 32, 32}[es_test_range(0, 3)];
    es_params p;
    int big = es_test_range(0, 5) == 0;
    random_params(&p, depth == 32 ? 16 : depth, big ? 61 : 15);
    masked_params(&p, depth);
    int w = big ? es_test_range(1, 24) : es_test_range(1, 67);
    int h = big ? es_test_range(1, 24) : es_test_range(1, 53);
    one_case_mask(w, h, depth, &p, es_test_range(0, 2) ? es_test_range(1, MK_KINDS - 1) : MK_NONE);
  }
  /* The algorithms' own paths with a mask: Perreault-Hebert (wide, small L), band_short
   * (short rows), the square kernels' interior (K = 3..9). */
  for (int combo = 0; combo < 8; combo++) {
    es_params p;
    es_params_default(&p);
    p.border = combo & 1;
    p.shape = (combo >> 1) & 1;
    p.levels = combo & 4 ? 4 : 256;
    p.window = 2 * es_test_range(1, 4) + 1;
    one_case_mask(es_test_range(40, 90), es_test_range(5, 30), combo & 4 ? 32 : 8, &p, MK_RANDOM);
    p.window = 2 * es_test_range(10, 30) + 1;
    one_case_mask(es_test_range(5, 60), es_test_range(1, 4), 16, &p, MK_BLOCKS);
  }
  return es_test_done("test_kernels_engine");
}
