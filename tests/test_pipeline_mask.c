/*
 * test_pipeline_mask.c - masks and float samples through the library's entry points:
 * es_compute (map, statistics, renderings) against es_cpu_run called directly, bit for bit;
 * a stream with one mask for every frame, a frame with its own mask, float frames; a float
 * range given in the configuration; bad masks and ranges refused with a one-line message;
 * es_mask_read (a 16-bit PNG's non-zero samples are inside; a missing file, one past
 * max_pixels refused, no mask left).
 */
#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"
#include "es_io.h" /* es_png_write */

#include <stdlib.h>
#include <unistd.h>

/* es_mask_read: a 16-bit grey PNG whose samples are 0, 1, 256 and 65535 (non-zero in either
 * byte alone too) becomes 1 where non-zero; a missing file and one over max_pixels fail
 * with a message and no mask. */
static void mask_read_case(void) {
  char dir[] = "/tmp/test_pipeline_mask-XXXXXX", path[64], msg[256] = "";
  uint16_t px[5 * 3];
  uint8_t *mask = NULL;
  int w = 0, h = 0, rc, same = 1;
  if (!mkdtemp(dir)) return;
  snprintf(path, sizeof path, "%s/m.png", dir);
  for (int i = 0; i < 15; i++) px[i] = (uint16_t)(int[]){0, 1, 256, 65535}[es_test_range(0, 3)];
  rc = es_png_write(path, 1, 5, 3, ES_PIX_GRAY16, (const uint8_t *)px, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "mask png: %s", msg);
  rc = es_mask_read(path, 1000, &mask, &w, &h, msg, sizeof msg);
  CHECK(rc == ES_OK && mask && w == 5 && h == 3, "es_mask_read: %d %dx%d '%s'", rc, w, h, msg);
  for (int i = 0; rc == ES_OK && i < 15; i++) same &= mask[i] == (px[i] != 0);
  CHECK(same, "es_mask_read: a byte is not 1 where the sample is non-zero, else 0");
  free(mask);
  rc = es_mask_read(path, 14, &mask, &w, &h, msg, sizeof msg);
  CHECK(rc == ES_ERR_INPUT && !mask && *msg, "15 pixels over max 14: %d '%s'", rc, msg);
  unlink(path);
  rc = es_mask_read(path, 1000, &mask, &w, &h, msg, sizeof msg);
  CHECK(rc != ES_OK && !mask, "a missing mask file: %d", rc);
  rmdir(dir);
}

/* Random samples of depth 8, 16 or 32 (floats with NaN and infinities). */
static void fill(void *data, int w, int h, size_t stride, int depth) {
  if (depth != 32) {
    pt_fill(data, w, h, stride, depth);
    return;
  }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float v = (float)es_test_range(-1000, 1000) / 8.0f;
      int k = es_test_range(0, 40);
      if (k == 0) v = NAN;
      if (k == 1) v = -INFINITY;
      memcpy((uint8_t *)data + (size_t)y * stride + 4 * (size_t)x, &v, 4);
    }
}

static uint8_t *random_mask(int w, int h, size_t *stride) {
  *stride = (size_t)w + (size_t)es_test_range(0, 4);
  uint8_t *m = malloc(*stride * (size_t)h);
  int density = es_test_range(0, 10);
  for (size_t i = 0; i < *stride * (size_t)h; i++)
    m[i] = es_test_range(0, 9) < density ? (uint8_t)es_test_range(1, 255) : 0;
  return m;
}

/* es_compute with a mask (and float samples) against es_cpu_run on the same job. */
static void compute_case(es_context *ctx, const es_params *p, int depth) {
  int w = es_test_range(1, 90), h = es_test_range(1, 70);
  size_t stride = (size_t)w * es_depth_bytes(depth) + 4 * (size_t)es_test_range(0, 2);
  void *data = malloc(stride * (size_t)h);
  size_t ms;
  uint8_t *mask = random_mask(w, h, &ms);
  fill(data, w, h, stride, depth);
  es_image img = {data, w, h, stride, depth, es_test_range(0, 4) ? mask : NULL, ms};
  es_render r;
  es_render_default(&r);
  r.format = es_test_range(0, 5);
  r.range_auto = es_test_range(0, 1);
  pt_result ref, got;
  char msg[256] = "", what[128];
  snprintf(what, sizeof what, "es_compute %dx%d d%d mask %d L=%d", w, h, depth, img.mask != NULL,
           p->levels);
  if (pt_result_init(&ref, w, h, r.format) || pt_result_init(&got, w, h, r.format)) {
    CHECK(0, "out of memory");
    goto end;
  }
  int rc = pt_reference(&img, p, 16, &r, &ref, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: es_cpu_run: %s", what, msg);
  rc = es_compute(ctx, &img, got.map, got.map_stride, &got.stats, &r, &got.pix);
  CHECK(rc == ES_OK, "%s: %s", what, es_context_error(ctx));
  if (rc == ES_OK) {
    pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, what);
    pt_stats_equal(&ref.stats, &got.stats, what);
    pt_pix_equal(&ref.pix, &got.pix, r.format, w, h, what);
    /* NaN exactly outside (mask, or a float sample that is not finite), unless computed. */
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        int in = es_image_inside(&img, x, y);
        if (depth == 32) {
          float f;
          memcpy(&f, (uint8_t *)data + (size_t)y * stride + 4 * (size_t)x, 4);
          in = in && isfinite(f);
        }
        /* mask_computed: no NaN (scikit-image's value outside) */
        bad += (!in && !p->mask_computed) != isnan(got.map[(size_t)y * got.map_stride + x]);
      }
    CHECK(!bad, "%s: %d pixels NaN inside or not NaN outside", what, bad);
  }
end:
  pt_result_free(&ref);
  pt_result_free(&got);
  free(data);
  free(mask);
}

/* A stream: frames with the stream's mask, their own, none; 8-bit and float frames. Each
 * result against es_cpu_run of the same image and mask. */
static int streamed; /* frames compared */
static void stream_case(es_context *ctx, const es_params *p) {
  const int w = es_test_range(5, 60), h = es_test_range(5, 40), nf = 6;
  size_t sms, fms;
  uint8_t *smask = random_mask(w, h, &sms), *fmask = random_mask(w, h, &fms);
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  sc.want_stats = 1;
  sc.render.format = ES_PIX_NONE;
  sc.mask = smask;
  sc.mask_stride = sms;
  sc.mask_width = w;
  sc.mask_height = h;
  es_stream *s = NULL;
  int rc = es_stream_open(ctx, &sc, &s);
  CHECK(rc == ES_OK, "es_stream_open: %s", es_context_error(ctx));
  if (rc) goto end;
  void *imgs[6];
  int depths[6];
  for (int i = 0; i < nf; i++) {
    es_frame *f;
    depths[i] = i % 3 == 2 ? 32 : 8;
    rc = es_stream_acquire(s, &f);
    CHECK(rc == ES_OK && !f->mask, "acquire %d: %d (mask %p)", i, rc, (const void *)f->mask);
    rc = es_stream_reserve(s, f, w, h, depths[i]);
    CHECK(rc == ES_OK, "reserve %d: %s", i, es_context_error(ctx));
    fill(f->data, w, h, f->stride, depths[i]);
    imgs[i] = malloc(f->stride * (size_t)h);
    memcpy(imgs[i], f->data, f->stride * (size_t)h);
    if (i % 2) { /* its own mask */
      f->mask = fmask;
      f->mask_stride = fms;
    }
    rc = es_stream_push(s, f);
    CHECK(rc == ES_OK, "push %d: %s", i, es_context_error(ctx));
  }
  {
    /* A frame of another size without a mask of its own: refused, the stream goes on. */
    es_frame *f;
    rc = es_stream_acquire(s, &f);
    if (rc == ES_OK) rc = es_stream_reserve(s, f, w + 1, h, 8);
    if (rc == ES_OK) {
      memset(f->data, 0, f->stride * (size_t)h);
      rc = es_stream_push(s, f);
      CHECK(rc == ES_ERR_INPUT && strstr(es_context_error(ctx), "not the same size"),
            "frame %dx%d with a %dx%d stream mask: %d '%s'", w + 1, h, w, h, rc,
            es_context_error(ctx));
      es_stream_release(s, f);
    }
  }
  es_stream_finish(s);
  for (int i = 0; i < nf; i++) {
    es_frame *f;
    rc = es_stream_pull(s, &f);
    CHECK(rc == ES_OK && f->status == ES_OK, "pull %d: %d %s", i, rc, es_context_error(ctx));
    if (rc) break;
    es_image img = {imgs[i], w, h, (size_t)w * es_depth_bytes(depths[i]), depths[i],
                    i % 2 ? fmask : smask, i % 2 ? fms : sms};
    pt_result ref;
    char msg[256], what[64];
    es_params pf = *p; /* as the stream computes a frame of this depth */
    es_params_for_depth(&pf, depths[i]);
    snprintf(what, sizeof what, "stream frame %d d%d %s mask", i, depths[i], i % 2 ? "own" : "stream's");
    if (pt_result_init(&ref, w, h, ES_PIX_NONE) == 0 &&
        pt_reference(&img, &pf, es_context_config(ctx)->stats_bins, NULL, &ref, msg, sizeof msg) == ES_OK) {
      streamed++;
      pt_map_equal(ref.map, ref.map_stride, f->map, f->map_stride, w, h, what);
      pt_stats_equal(&ref.stats, &f->stats, what);
    } else {
      CHECK(0, "%s: reference failed", what);
    }
    pt_result_free(&ref);
    es_stream_release(s, f);
  }
  for (int i = 0; i < nf; i++) free(imgs[i]);
end:
  es_stream_destroy(&s);
  free(smask);
  free(fmask);
}

int main(void) {
  es_test_seed("test_pipeline_mask");
  char msg[256];
  for (int round = 0; round < 3; round++) {
    es_config cfg;
    es_config_default(&cfg);
    pt_random_params(&cfg.params, 16);
    if (round == 1) { /* a given float range */
      cfg.params.in_lo = -20.0;
      cfg.params.in_hi = 50.5;
    }
    if (round == 2) cfg.params.mask_computed = 1;
    es_context *ctx = NULL;
    int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
    CHECK(rc == ES_OK, "context: %s", msg);
    if (rc) continue;
    for (int i = 0; i < 30; i++) {
      int depth = (int[]){8, 16, 32}[es_test_range(0, 2)];
      es_params p = cfg.params;
      es_params_for_depth(&p, depth);
      compute_case(ctx, &p, depth);
    }
    stream_case(ctx, &cfg.params);
    es_context_destroy(&ctx);
  }
  /* Bad input: a range that is not LO < HI, a mask stride shorter than a row. */
  {
    es_config cfg;
    es_config_default(&cfg);
    cfg.params.in_lo = 3.0;
    cfg.params.in_hi = 3.0;
    es_context *ctx = NULL;
    int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
    CHECK(rc == ES_ERR_USAGE && !strcmp(msg, "in_range 3:3: must be finite, LO < HI"),
          "in range 3:3: %d '%s'", rc, msg);
    cfg.params.in_hi = NAN; /* one of the two only */
    rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
    CHECK(rc == ES_ERR_USAGE, "in range 3:nan: %d '%s'", rc, msg);
    es_config_default(&cfg);
    rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
    CHECK(rc == ES_OK, "context: %s", msg);
    uint8_t px[12] = {0}, mk[12] = {1};
    float map[12];
    es_image img = {px, 4, 3, 4, 8, mk, 3};
    rc = es_compute(ctx, &img, map, 4, NULL, NULL, NULL);
    CHECK(rc == ES_ERR_USAGE && strstr(es_context_error(ctx), "mask stride"),
          "mask stride 3 of 4: %d '%s'", rc, es_context_error(ctx));
    es_context_destroy(&ctx);
  }
  mask_read_case();
  CHECK(streamed == 18, "%d stream frames compared of 18", streamed);
  return es_test_done("test_pipeline_mask");
}
