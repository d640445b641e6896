/*
 * test_kernels_render.c - CPU rendering (es_cpu_render, es_render_range, and es_cpu_run's
 * rendering) against a direct per-pixel computation with es_math.h, for every pixel format,
 * colormap, overlay and range mode, 8- and 16-bit sources, odd sizes, padded strides
 * (padding must stay untouched), and thread counts 1 and 3.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "es_kernels.h"
#include "es_test.h"

#define POISON 0xCD

typedef struct planes_buf {
  es_planes pl;
  uint8_t *mem[3];
  size_t size[3];
} planes_buf;

static void planes_alloc(planes_buf *b, int fmt, int w, int h) {
  memset(b, 0, sizeof *b);
  for (int i = 0; i < es_pix_planes(fmt); i++) {
    b->pl.stride[i] = es_pix_stride(fmt, i, w) + (size_t)es_test_range(0, 5);
    b->size[i] = b->pl.stride[i] * es_pix_plane_height(fmt, i, h);
    b->mem[i] = malloc(b->size[i]);
    memset(b->mem[i], POISON, b->size[i]);
    b->pl.plane[i] = b->mem[i];
  }
}
static void planes_free(planes_buf *b) {
  for (int i = 0; i < 3; i++) free(b->mem[i]);
}

/* The expected planes, written from the rules in render.c's header comment: full-size
 * RGB first, then every format from it. */
static void expected(const float *map, size_t ms, const es_image *src, const es_params *p,
                     const es_render *r, float mn, float mx, planes_buf *e) {
  int w = src->width, h = src->height, fmt = r->format;
  double lo, range;
  if (r->range_auto) {
    lo = mn;
    range = (double)mx - (double)mn;
  } else {
    lo = 0;
    range = es_params_hmax(p);
  }
  double inv = range > 0 ? 1.0 / range : 0.0;
  if (range > 0 && fma(inv, range, -1.0) < 0) inv = nextafter(inv, INFINITY); /* rounded up */
  /* No overlay (-1) unless overlay_on or overlay > 0 (a zeroed es_render: the heat alone). */
  int a = r->overlay_on || r->overlay > 0.0f ? (int)lround(r->overlay * 256.0) : -1;
  const uint8_t *lut = es_colormap_lut(r->colormap);
  uint8_t *rgb = malloc((size_t)w * h * 3);
  int *u = malloc((size_t)w * h * sizeof *u), *v = malloc((size_t)w * h * sizeof *v);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      float hv = map[(size_t)y * ms + x];
      uint8_t g = es_grey8(es_image_sample(src, x, y), src->depth);
      int i8 = es_render_index8(hv, lo, inv);
      uint8_t *c = rgb + 3 * ((size_t)y * w + x);
      for (int k = 0; k < 3; k++) c[k] = lut ? lut[3 * i8 + k] : 0;
      if (a >= 0)
        for (int k = 0; k < 3; k++) c[k] = es_blend(c[k], g, a);
      u[(size_t)y * w + x] = es_rgb_to_u(c[0], c[1], c[2]);
      v[(size_t)y * w + x] = es_rgb_to_v(c[0], c[1], c[2]);
      uint8_t *p0 = e->pl.plane[0] + (size_t)y * e->pl.stride[0];
      switch (fmt) {
      case ES_PIX_RGB24: memcpy(p0 + 3 * (size_t)x, c, 3); break;
      case ES_PIX_GRAY8: p0[x] = a >= 0 ? es_blend((uint8_t)i8, g, a) : (uint8_t)i8; break;
      case ES_PIX_GRAY16: {
        uint16_t s = (uint16_t)es_render_index16(hv, lo, inv);
        memcpy(p0 + 2 * (size_t)x, &s, 2);
        break;
      }
      case ES_PIX_YUV444P:
        p0[x] = es_rgb_to_y(c[0], c[1], c[2]);
        e->pl.plane[1][(size_t)y * e->pl.stride[1] + x] = (uint8_t)u[(size_t)y * w + x];
        e->pl.plane[2][(size_t)y * e->pl.stride[2] + x] = (uint8_t)v[(size_t)y * w + x];
        break;
      case ES_PIX_YUV420P: p0[x] = es_rgb_to_y(c[0], c[1], c[2]); break;
      }
    }
  }
  if (fmt == ES_PIX_YUV420P) {
    for (int cy = 0; cy < (h + 1) / 2; cy++)
      for (int cx = 0; cx < (w + 1) / 2; cx++) {
        int su = 0, sv = 0, n = 0;
        for (int y = 2 * cy; y < 2 * cy + 2 && y < h; y++)
          for (int x = 2 * cx; x < 2 * cx + 2 && x < w; x++) {
            su += u[(size_t)y * w + x];
            sv += v[(size_t)y * w + x];
            n++;
          }
        e->pl.plane[1][(size_t)cy * e->pl.stride[1] + cx] = (uint8_t)((su + n / 2) / n);
        e->pl.plane[2][(size_t)cy * e->pl.stride[2] + cx] = (uint8_t)((sv + n / 2) / n);
      }
  }
  free(rgb);
  free(u);
  free(v);
}

static int same_planes(const planes_buf *a, const planes_buf *b, int fmt) {
  for (int i = 0; i < es_pix_planes(fmt); i++)
    if (a->size[i] != b->size[i] || memcmp(a->mem[i], b->mem[i], a->size[i])) return 0;
  return 1;
}

static const char *fmt_name(int f) {
  static const char *n[] = {"none", "rgb24", "gray8", "gray16", "yuv444p", "yuv420p"};
  return f >= 0 && f <= 5 ? n[f] : "?";
}

int main(void) {
  es_test_seed("test_kernels_render");

  /* es_render_range. */
  {
    es_params p;
    es_params_default(&p);
    es_render r;
    es_render_default(&r);
    double lo, inv;
    es_render_range(&p, &r, 0.5f, 2.0f, &lo, &inv);
    CHECK(lo == 0.0 && inv == 1.0 / es_params_hmax(&p), "fixed range: lo %g inv %g", lo, inv);
    r.range_auto = 1;
    es_render_range(&p, &r, 0.5f, 2.0f, &lo, &inv);
    /* 1 / 1.5 rounded up: the double nearest 2/3 is below it */
    CHECK(lo == 0.5 && inv == nextafter(1.0 / 1.5, INFINITY), "auto range: lo %g inv %.17g", lo,
          inv);
    es_render_range(&p, &r, 1.25f, 1.25f, &lo, &inv);
    CHECK(lo == 1.25 && inv == 0.0, "auto range, flat map: lo %g inv %g", lo, inv);
    p.window = 1;
    r.range_auto = 0;
    es_render_range(&p, &r, 0.0f, 0.0f, &lo, &inv);
    CHECK(inv == 0.0, "K=1: hmax 0 must give inv 0, got %g", inv);
    /* Ties round up: (h - lo) * 255 / range exactly m + 1/2 gives m + 1. With 1 / range
     * rounded to nearest (below 1/3 and 1/3.75) these gave 212, 54612 and 195. */
    p.window = 15;
    p.levels = 8; /* hmax = log2 8 = 3 */
    es_render_range(&p, &r, 0.0f, 0.0f, &lo, &inv);
    CHECK(es_render_index8(2.5f, lo, inv) == 213, "fixed range: 2.5 / 3 * 255 = 212.5 gave %d",
          es_render_index8(2.5f, lo, inv));
    CHECK(es_render_index16(2.5f, lo, inv) == 54613,
          "fixed range: 2.5 / 3 * 65535 = 54612.5 gave %d", es_render_index16(2.5f, lo, inv));
    r.range_auto = 1;
    es_render_range(&p, &r, 8.25f, 12.0f, &lo, &inv);
    CHECK(es_render_index8(11.125f, lo, inv) == 196,
          "auto range 8.25..12: 2.875 / 3.75 * 255 = 195.5 gave %d",
          es_render_index8(11.125f, lo, inv));
  }

  int have_lut = es_colormap_lut(ES_CMAP_INFERNO) != NULL;
  if (!have_lut) printf("colormaps not available: RGB/YUV formats not checked\n");

  /* The overlay is continuous: 0 (with overlay_on) is the source grey alone, 1 the heat
   * alone, the same as no overlay (a zeroed or default es_render: overlay 0, off). It once
   * took 0 for "off", so 0 and 1 gave the same picture. */
  {
    enum { W = 7, H = 3 };
    es_params p;
    es_params_default(&p);
    float map[W * H];
    uint8_t sbuf[W * H];
    for (int i = 0; i < W * H; i++) {
      map[i] = (float)(es_params_hmax(&p) * i / (W * H - 1));
      sbuf[i] = (uint8_t)(37 * i + 11);
    }
    es_image src = {sbuf, W, H, W, 8};
    for (int fmt = ES_PIX_RGB24; fmt <= ES_PIX_GRAY8; fmt++) {
      if (!have_lut && fmt == ES_PIX_RGB24) continue;
      int bpp = fmt == ES_PIX_RGB24 ? 3 : 1;
      uint8_t off[W * H * 3] = {0}, grey[W * H * 3] = {0}, one[W * H * 3] = {0};
      es_planes pl;
      memset(&pl, 0, sizeof pl);
      pl.stride[0] = (size_t)W * bpp;
      es_render r;
      es_render_default(&r);
      r.format = fmt;
      pl.plane[0] = off;
      CHECK(es_cpu_render(map, W, &src, &p, &r, 0, 0, &pl, 1) == ES_OK, "render, no overlay");
      r.overlay_on = 1;
      pl.plane[0] = grey;
      CHECK(es_cpu_render(map, W, &src, &p, &r, 0, 0, &pl, 1) == ES_OK, "render, overlay 0");
      r.overlay = 1.0f;
      pl.plane[0] = one;
      CHECK(es_cpu_render(map, W, &src, &p, &r, 0, 0, &pl, 1) == ES_OK, "render, overlay 1");
      int grey_ok = 1;
      for (int i = 0; i < W * H * bpp; i++)
        grey_ok &= grey[i] == sbuf[i / bpp];
      CHECK(grey_ok, "%s: overlay 0 is not the source grey", fmt_name(fmt));
      CHECK(!memcmp(off, one, (size_t)W * H * bpp), "%s: overlay 1 differs from no overlay",
            fmt_name(fmt));
      CHECK(memcmp(off, grey, (size_t)W * H * bpp), "%s: overlay 0 is the heat", fmt_name(fmt));
    }
    es_render r;
    memset(&r, 0, sizeof r);
    CHECK(es_render_a256(&r) == -1, "a zeroed es_render has an overlay");
    r.overlay = 0.5f;
    CHECK(es_render_a256(&r) == 128, "overlay 0.5 without overlay_on: a256 %d", es_render_a256(&r));
    r.overlay = 0.0f;
    r.overlay_on = 1;
    CHECK(es_render_a256(&r) == 0, "overlay 0, on: a256 %d", es_render_a256(&r));
  }
  static const float overlays[] = {0.0f, 0.37f, 1.0f};
  for (int iter = 0; iter < 60; iter++) {
    int w = es_test_range(1, 37), h = es_test_range(1, 29);
    if (iter < 4) { /* 1x1, 1xN, Nx1 first */
      w = iter & 1 ? 1 : es_test_range(1, 9);
      h = iter & 2 ? 1 : es_test_range(1, 9);
    }
    int depth = es_test_range(0, 1) ? 16 : 8;
    es_params p;
    es_params_default(&p);
    p.window = 2 * es_test_range(0, 4) + 1;
    p.levels = es_test_range(2, 256);
    p.base = es_test_range(0, 1);
    double hmax = es_params_hmax(&p);
    size_t ms = (size_t)w + (size_t)es_test_range(0, 3);
    float *map = malloc(ms * h * sizeof *map);
    float mn = INFINITY, mx = -INFINITY;
    int flat = es_test_range(0, 9) == 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        float v;
        int k = es_test_range(0, 9);
        v = flat ? (float)(hmax / 3) : k == 0 ? 0.0f : k == 1 ? (float)hmax
          : (float)(hmax * (double)es_test_rand() / 18446744073709551616.0);
        map[(size_t)y * ms + x] = v;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
      }
    size_t bps = depth == 16 ? 2 : 1;
    size_t sstride = (size_t)w * bps + (size_t)es_test_range(0, 3) * bps;
    uint8_t *sbuf = malloc(sstride * h);
    for (size_t i = 0; i < sstride * h; i++) sbuf[i] = (uint8_t)es_test_rand();
    es_image src = {sbuf, w, h, sstride, depth};

    for (int fmt = ES_PIX_RGB24; fmt <= ES_PIX_YUV420P; fmt++) {
      if (!have_lut && fmt != ES_PIX_GRAY8 && fmt != ES_PIX_GRAY16) continue;
      es_render r;
      es_render_default(&r);
      r.format = fmt;
      r.colormap = es_test_range(ES_CMAP_INFERNO, ES_CMAP_GRAY);
      r.range_auto = es_test_range(0, 1);
      r.overlay = overlays[es_test_range(0, 2)];
      r.overlay_on = es_test_range(0, 1);
      planes_buf got, got3, want;
      planes_alloc(&got, fmt, w, h);
      got3 = got;
      for (int i = 0; i < 3; i++) { /* same strides, own memory */
        got3.mem[i] = got.mem[i] ? malloc(got.size[i]) : NULL;
        if (got3.mem[i]) memset(got3.mem[i], POISON, got.size[i]);
        got3.pl.plane[i] = got3.mem[i];
      }
      want = got;
      for (int i = 0; i < 3; i++) {
        want.mem[i] = got.mem[i] ? malloc(got.size[i]) : NULL;
        if (want.mem[i]) memset(want.mem[i], POISON, got.size[i]);
        want.pl.plane[i] = want.mem[i];
      }
      int rc = es_cpu_render(map, ms, &src, &p, &r, mn, mx, &got.pl, 1);
      int rc3 = es_cpu_render(map, ms, &src, &p, &r, mn, mx, &got3.pl, 3);
      expected(map, ms, &src, &p, &r, mn, mx, &want);
      CHECK(rc == ES_OK && rc3 == ES_OK, "es_cpu_render %d %d", rc, rc3);
      CHECK(same_planes(&got, &want, fmt),
            "%s %dx%d d%d auto=%d overlay=%g on=%d cmap %d: differs from the rules", fmt_name(fmt),
            w, h, depth, r.range_auto, r.overlay, r.overlay_on, r.colormap);
      CHECK(same_planes(&got, &got3, fmt), "%s %dx%d: 1 and 3 threads differ", fmt_name(fmt), w, h);
      planes_free(&got);
      planes_free(&got3);
      planes_free(&want);
    }
    free(map);
    free(sbuf);
  }

  /* es_cpu_run with rendering: the same planes as rendering its own map with the frame's
   * min and max (auto range), with and without a caller map. The last ones are wider than
   * 4096 pixels: without a map a fixed range renders each band 2 rows at a time. */
  if (have_lut) {
    es_cpu_scratch scratch = {NULL, 0}; /* one caller's map across the frames */
    for (int iter = 0; iter < 16; iter++) {
      int w = iter < 12 ? es_test_range(1, 45) : es_test_range(4097, 9000);
      int h = iter < 12 ? es_test_range(1, 31) : es_test_range(1, 13);
      uint8_t *sbuf = malloc((size_t)w * h);
      for (size_t i = 0; i < (size_t)w * h; i++) sbuf[i] = (uint8_t)es_test_rand();
      es_image src = {sbuf, w, h, (size_t)w, 8};
      es_job job;
      memset(&job, 0, sizeof job);
      job.in = src;
      es_params_default(&job.params);
      job.params.window = 2 * es_test_range(0, 3) + 1;
      es_render_default(&job.render);
      job.render.format = es_test_range(ES_PIX_RGB24, ES_PIX_YUV420P);
      job.render.range_auto = es_test_range(0, 1);
      job.render.overlay = overlays[es_test_range(0, 2)];
      job.render.overlay_on = es_test_range(0, 1);
      float *map = malloc((size_t)w * h * sizeof *map);
      es_stats st;
      job.map = map;
      job.map_stride = (size_t)w;
      job.stats = &st;
      job.stats_bins = 16;
      planes_buf a, b;
      planes_alloc(&a, job.render.format, w, h);
      planes_alloc(&b, job.render.format, w, h);
      b.pl.stride[0] = a.pl.stride[0];
      job.pix = a.pl;
      char msg[256] = "";
      int rc = es_cpu_run(&job, es_test_range(1, 3), msg, sizeof msg);
      CHECK(rc == ES_OK, "es_cpu_run with rendering: %s", msg);
      planes_free(&b);
      b = a;
      for (int i = 0; i < 3; i++) {
        b.mem[i] = a.mem[i] ? malloc(a.size[i]) : NULL;
        if (b.mem[i]) memset(b.mem[i], POISON, a.size[i]);
        b.pl.plane[i] = b.mem[i];
      }
      es_cpu_render(map, (size_t)w, &src, &job.params, &job.render, st.min, st.max, &b.pl, 1);
      CHECK(same_planes(&a, &b, job.render.format), "es_cpu_run %s %dx%d: rendering differs",
            fmt_name(job.render.format), w, h);
      /* No caller map: a fixed range renders band by band (YUV420P bands of whole chroma
       * rows) as the rows come, auto renders from a temporary map. */
      for (int i = 0; i < 3; i++)
        if (a.mem[i]) memset(a.mem[i], POISON, a.size[i]);
      job.map = NULL;
      job.stats = NULL;
      rc = es_cpu_run(&job, es_test_range(1, 3), msg, sizeof msg);
      CHECK(rc == ES_OK && same_planes(&a, &b, job.render.format),
            "es_cpu_run without a map: rc %d, rendering differs", rc);
      /* With a scratch map: the same planes; an auto range renders from it, kept while
       * large enough and grown otherwise. */
      for (int i = 0; i < 3; i++)
        if (a.mem[i]) memset(a.mem[i], POISON, a.size[i]);
      float *before = scratch.map;
      size_t cap = scratch.cap;
      job.scratch = &scratch;
      rc = es_cpu_run(&job, es_test_range(1, 3), msg, sizeof msg);
      CHECK(rc == ES_OK && same_planes(&a, &b, job.render.format),
            "es_cpu_run with a scratch map: rc %d, rendering differs", rc);
      if (job.render.range_auto)
        CHECK(scratch.cap >= (size_t)w * h &&
                  (cap < (size_t)w * h || scratch.map == before),
              "scratch %zu -> %zu floats for %dx%d: not kept or not grown", cap, scratch.cap, w,
              h);
      else
        CHECK(scratch.map == before, "a fixed range used the scratch map");
      planes_free(&a);
      planes_free(&b);
      free(map);
      free(sbuf);
    }
    es_cpu_scratch_free(&scratch);
  }
  return es_test_done("test_kernels_render");
}
