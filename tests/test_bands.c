/*
 * test_bands.c - es_compute_bands against es_compute of the whole image: map, rendering and
 * statistics bit for bit, on odd sizes, every window from 1 to larger than the band (and
 * than the image), square and disk, clip and reflect, 8 and 16 bits, bands of 1, 2, r, odd
 * and more rows than the image; every input row read once, in order; a reader's or writer's
 * error, a stop and bad configurations.
 */
#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"

typedef struct mem_src {
  const es_image *img;
  int next_row;  /* the row the next read must start at: rows come once, in order */
  int bad_order; /* a read that did not */
  int fail_at;   /* a read reaching this row fails (-1: never) */
} mem_src;

static int mem_read(void *user, int y0, int n, void *dst, size_t dst_stride, char *msg,
                    size_t len) {
  mem_src *s = user;
  if (y0 != s->next_row || n < 1 || y0 + n > s->img->height) s->bad_order++;
  s->next_row = y0 + n;
  if (s->fail_at >= 0 && y0 + n > s->fail_at) {
    snprintf(msg, len, "cannot read row %d: planted", s->fail_at);
    return ES_ERR_INPUT;
  }
  size_t row = (size_t)s->img->width * (s->img->depth == 16 ? 2 : 1);
  for (int y = 0; y < n; y++)
    memcpy((uint8_t *)dst + (size_t)y * dst_stride,
           (const uint8_t *)s->img->data + (size_t)(y0 + y) * s->img->stride, row);
  return ES_OK;
}

typedef struct mem_sink {
  pt_result *res;
  int fmt;
  int next_row;
  int bad_order;
  int fail_at; /* a write reaching this row fails (-1: never) */
  int last_progress;
} mem_sink;

static int mem_write(void *user, int y0, int n, const float *map, size_t map_stride,
                     const es_planes *pix, char *msg, size_t len) {
  mem_sink *s = user;
  if (y0 != s->next_row) s->bad_order++;
  s->next_row = y0 + n;
  if (s->fail_at >= 0 && y0 + n > s->fail_at) {
    snprintf(msg, len, "disk full: planted");
    return ES_ERR_OUTPUT;
  }
  pt_result *r = s->res;
  for (int y = 0; y < n; y++) {
    if (map)
      memcpy(r->map + (size_t)(y0 + y) * r->map_stride, map + (size_t)y * map_stride,
             (size_t)r->w * sizeof(float));
    if (pix)
      memcpy(r->pix.plane[0] + (size_t)(y0 + y) * r->pix.stride[0],
             pix->plane[0] + (size_t)y * pix->stride[0], es_pix_stride(s->fmt, 0, r->w));
  }
  return ES_OK;
}

static void on_progress(void *user, int done, int height) {
  mem_sink *s = user;
  if (done <= s->last_progress || done > height) s->bad_order++;
  s->last_progress = done;
}

/* One case: params p on a w x h image of depth, bands of B rows (0: the budget's). */
static void one_case(const es_params *p, int depth, int w, int h, int B, int fmt, int threads,
                     const char *what) {
  size_t bps = depth == 16 ? 2 : 1, stride = (size_t)w * bps + (size_t)es_test_range(0, 3) * bps;
  void *data = malloc(stride * (size_t)h);
  es_context *ctx = NULL;
  pt_result ref, got;
  memset(&ref, 0, sizeof ref);
  memset(&got, 0, sizeof got);
  if (!data) goto end;
  pt_fill(data, w, h, stride, depth);
  es_image img = {data, w, h, stride, depth};
  es_config cfg;
  es_config_default(&cfg);
  cfg.params = *p;
  cfg.device = ES_DEVICE_CPU;
  cfg.threads = threads;
  cfg.stats_bins = es_test_range(1, 40);
  char msg[256];
  int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: context: %s", what, msg);
  if (rc) goto end;
  es_render r;
  es_render_default(&r);
  r.format = fmt;
  r.colormap = es_test_range(0, 4);
  r.overlay = (float)es_test_range(0, 100) / 100.0f;
  r.overlay_on = fmt != ES_PIX_NONE && es_test_range(0, 1);
  if (pt_result_init(&ref, w, h, fmt) || pt_result_init(&got, w, h, fmt)) {
    CHECK(0, "out of memory");
    goto end;
  }
  rc = es_compute(ctx, &img, ref.map, ref.map_stride, &ref.stats, &r, &ref.pix);
  CHECK(rc == ES_OK, "%s: es_compute: %s", what, es_context_error(ctx));

  mem_src src = {&img, 0, 0, -1};
  mem_sink sink = {&got, fmt, 0, 0, -1, 0};
  es_bands_config bc;
  es_bands_config_default(&bc);
  bc.width = w;
  bc.height = h;
  bc.depth = depth;
  bc.band_rows = B;
  bc.read = mem_read;
  bc.read_user = &src;
  bc.write = mem_write;
  bc.write_user = &sink;
  bc.want_map = 1;
  bc.render = r;
  bc.stats = &got.stats;
  bc.progress = on_progress;
  bc.progress_user = &sink;
  if (!B) bc.mem_budget = (int64_t)es_test_range(1, 64) * w * 16; /* a few rows to many */
  rc = es_compute_bands(ctx, &bc);
  CHECK(rc == ES_OK, "%s: es_compute_bands: %d %s", what, rc, es_context_error(ctx));
  if (rc == ES_OK) {
    pt_map_equal(ref.map, ref.map_stride, got.map, got.map_stride, w, h, what);
    pt_stats_equal(&ref.stats, &got.stats, what);
    pt_pix_equal(&ref.pix, &got.pix, fmt, w, h, what);
    CHECK(src.next_row == h && !src.bad_order, "%s: rows read out of order or not all (%d of %d)",
          what, src.next_row, h);
    CHECK(sink.next_row == h && !sink.bad_order && sink.last_progress == h,
          "%s: rows written out of order or not all (%d of %d)", what, sink.next_row, h);
  }
  /* Statistics alone (no writer): the same numbers. */
  es_stats st2;
  memset(&st2, 0x5a, sizeof st2);
  src.next_row = 0;
  bc.write = NULL;
  bc.want_map = 0;
  bc.render.format = ES_PIX_NONE;
  bc.progress = NULL;
  bc.stats = &st2;
  rc = es_compute_bands(ctx, &bc);
  CHECK(rc == ES_OK, "%s: stats alone: %d %s", what, rc, es_context_error(ctx));
  if (rc == ES_OK) pt_stats_equal(&ref.stats, &st2, what);
end:
  pt_result_free(&ref);
  pt_result_free(&got);
  es_context_destroy(&ctx);
  free(data);
}

static int stop_after(void *user) {
  int *n = user;
  return --*n < 0;
}

/* Errors: a reader's and a writer's failure come back with their message; stop; bad
 * configurations. */
static void errors(void) {
  const int w = 37, h = 61;
  uint8_t *data = malloc((size_t)w * h);
  es_context *ctx = NULL;
  pt_result got;
  memset(&got, 0, sizeof got);
  if (!data || pt_result_init(&got, w, h, ES_PIX_NONE)) {
    CHECK(0, "out of memory");
    goto end;
  }
  pt_fill(data, w, h, (size_t)w, 8);
  es_image img = {data, w, h, (size_t)w, 8};
  es_config cfg;
  es_config_default(&cfg);
  cfg.device = ES_DEVICE_CPU;
  char msg[256];
  if (es_context_create(&ctx, &cfg, msg, sizeof msg)) {
    CHECK(0, "context: %s", msg);
    goto end;
  }
  mem_src src = {&img, 0, 0, 30};
  mem_sink sink = {&got, ES_PIX_NONE, 0, 0, -1, 0};
  es_bands_config bc;
  es_bands_config_default(&bc);
  bc.width = w;
  bc.height = h;
  bc.depth = 8;
  bc.band_rows = 7;
  bc.read = mem_read;
  bc.read_user = &src;
  bc.write = mem_write;
  bc.write_user = &sink;
  bc.want_map = 1;
  int rc = es_compute_bands(ctx, &bc);
  CHECK(rc == ES_ERR_INPUT && strstr(es_context_error(ctx), "cannot read row 30: planted"),
        "reader failure: %d '%s'", rc, es_context_error(ctx));
  CHECK(sink.next_row <= 30, "rows past the failed read were written (%d)", sink.next_row);

  src = (mem_src){&img, 0, 0, -1};
  sink = (mem_sink){&got, ES_PIX_NONE, 0, 0, 20, 0};
  rc = es_compute_bands(ctx, &bc);
  CHECK(rc == ES_ERR_OUTPUT && strstr(es_context_error(ctx), "disk full: planted"),
        "writer failure: %d '%s'", rc, es_context_error(ctx));

  int polls = 3;
  src = (mem_src){&img, 0, 0, -1};
  sink = (mem_sink){&got, ES_PIX_NONE, 0, 0, -1, 0};
  bc.stop = stop_after;
  bc.stop_user = &polls;
  rc = es_compute_bands(ctx, &bc);
  CHECK(rc == ES_ERR_INTERRUPTED, "stop: %d '%s'", rc, es_context_error(ctx));
  CHECK(sink.next_row < h, "stop: every row was written (%d)", sink.next_row);
  bc.stop = NULL;

  es_bands_config bad = bc;
  bad.render.format = ES_PIX_GRAY8;
  bad.render.range_auto = 1;
  CHECK(es_compute_bands(ctx, &bad) == ES_ERR_USAGE, "an auto range was taken");
  bad = bc;
  bad.render.format = ES_PIX_YUV420P;
  CHECK(es_compute_bands(ctx, &bad) == ES_ERR_USAGE, "YUV planes were taken");
  bad = bc;
  bad.read = NULL;
  CHECK(es_compute_bands(ctx, &bad) == ES_ERR_USAGE, "no reader was taken");
  bad = bc;
  bad.depth = 12;
  CHECK(es_compute_bands(ctx, &bad) == ES_ERR_USAGE, "depth 12 was taken");
  bad = bc;
  bad.write = NULL;
  CHECK(es_compute_bands(ctx, &bad) == ES_ERR_USAGE, "a map without a writer was taken");
  CHECK(es_compute_bands(NULL, &bc) == ES_ERR_USAGE, "no context was taken");
  /* The budget's band rows: more budget, more rows; never 0, never past the height. */
  bad = bc;
  bad.band_rows = 0;
  bad.mem_budget = 1;
  CHECK(es_bands_rows(ctx, &bad) == 1, "a tiny budget gives %d rows", es_bands_rows(ctx, &bad));
  bad.mem_budget = (int64_t)1 << 40;
  CHECK(es_bands_rows(ctx, &bad) == h, "a huge budget gives %d rows", es_bands_rows(ctx, &bad));
end:
  pt_result_free(&got);
  es_context_destroy(&ctx);
  free(data);
}

int main(void) {
  es_test_seed("test_bands");
  static const int fmts[] = {ES_PIX_NONE, ES_PIX_RGB24, ES_PIX_GRAY8, ES_PIX_GRAY16};
  char what[200];
  /* Each window (1 to past the band and the image), shape, border and depth, with bands of
   * 1, 2, r, an odd count and the budget's. */
  static const int windows[] = {1, 3, 5, 9, 15, 31, 63};
  int ncase = 0;
  for (int wi = 0; wi < (int)(sizeof windows / sizeof *windows); wi++) {
    for (int shape = 0; shape < 2; shape++) {
      for (int border = 0; border < 2; border++) {
        for (int depth = 8; depth <= 16; depth += 8) {
          es_params p;
          es_params_default(&p);
          p.window = windows[wi];
          p.shape = shape;
          p.border = border;
          p.levels = depth == 16 ? es_test_range(2, 4096) : es_test_range(2, 300);
          p.base = es_test_range(0, 3) == 0 ? ES_BASE_E : ES_BASE_2;
          const int r = p.window / 2;
          const int bands[] = {1, 2, r > 0 ? r : 1, 2 * es_test_range(1, 9) + 1, 0, 1000};
          int B = bands[ncase % 6];
          int w = es_test_range(1, 70), h = es_test_range(1, 90);
          if (ncase % 5 == 0) h = es_test_range(1, 4); /* shorter than the halo */
          int fmt = fmts[es_test_range(0, 3)];
          snprintf(what, sizeof what, "K=%d %s %s depth %d L=%d %dx%d B=%d fmt %d", p.window,
                   shape ? "disk" : "square", border ? "reflect" : "clip", depth, p.levels, w,
                   h, B, fmt);
          one_case(&p, depth, w, h, B, fmt, es_test_range(1, 2), what);
          ncase++;
        }
      }
    }
  }
  errors();
  return es_test_done("test_bands");
}
