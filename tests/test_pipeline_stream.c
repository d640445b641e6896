/*
 * test_pipeline_stream.c - the streaming engine: many frames of random content and sizes
 * through streams with several workers, pulled strictly in push order, each bit-identical
 * to es_cpu_run of the same frame; buffers fixed up front or grown on demand; per-frame
 * errors; injected faults (ES_FAULT_INJECT) retried with identical output; abort from
 * another thread unblocking acquire and pull; destroy in mid-flight; bounded memory (frames
 * out of the pool never above cfg.queue; resident memory flat over a long stream).
 */
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"

/* Frame content is a function of (seed, index), so the consumer can rebuild the input. */
static uint64_t mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

typedef struct frame_desc {
  int w, h, depth;
  size_t pad; /* extra stride bytes (frames with a fixed max size only) */
} frame_desc;

static void frame_describe(uint64_t seed, int64_t i, int maxw, int maxh, int allow16,
                           frame_desc *d) {
  uint64_t r = mix(seed ^ mix((uint64_t)i));
  /* A few recurring sizes and odd random ones. */
  static const int sizes[][2] = {{1, 1}, {17, 9}, {64, 48}, {33, 65}, {101, 3}};
  int k = (int)(r % 8);
  if (k < 5) {
    d->w = sizes[k][0];
    d->h = sizes[k][1];
  } else {
    d->w = 1 + (int)((r >> 8) % 120);
    d->h = 1 + (int)((r >> 20) % 80);
  }
  if (maxw) {
    if (d->w > maxw) d->w = maxw;
    if (d->h > maxh) d->h = maxh;
  }
  d->depth = allow16 && (r >> 40) % 3 == 0 ? 16 : 8;
  d->pad = 0;
}

static void frame_content(uint64_t seed, int64_t i, const frame_desc *d, void *data,
                          size_t stride) {
  uint64_t x = mix(seed + 7 * (uint64_t)i + 1);
  uint32_t flat = (uint32_t)x;
  for (int y = 0; y < d->h; y++) {
    uint8_t *row = (uint8_t *)data + (size_t)y * stride;
    for (int c = 0; c < d->w; c++) {
      x = mix(x);
      uint32_t v = (x >> 61) == 0 ? flat : (uint32_t)(x >> 16);
      if (d->depth == 16)
        ((uint16_t *)row)[c] = (uint16_t)v;
      else
        row[c] = (uint8_t)v;
    }
  }
}

typedef struct producer {
  es_stream *s;
  uint64_t seed;
  int64_t n;
  int maxw, maxh, depth16, fixed;
  int lend;    /* frames lent (es_frame.lend) from buffers of the producer's own */
  int rc;      /* first error */
} producer;

/* Lent frames: each a malloc'd buffer with a padded stride, freed by lend_release, which
 * counts the returns (each exactly once, checked against the frames pushed). */
static atomic_long lend_returns;
static void lend_free(void *arg) {
  free(arg);
  atomic_fetch_add(&lend_returns, 1);
}

static void *produce(void *arg) {
  producer *p = arg;
  p->rc = ES_OK;
  for (int64_t i = 0; i < p->n; i++) {
    es_frame *f = NULL;
    int rc = es_stream_acquire(p->s, &f);
    if (rc) {
      p->rc = rc;
      return NULL;
    }
    frame_desc d;
    frame_describe(p->seed, i, p->maxw, p->maxh, p->depth16, &d);
    if (p->fixed) {
      /* Buffers sized for the maximum: use a smaller frame in them with a padded stride. */
      f->width = d.w;
      f->height = d.h;
      f->depth = d.depth;
      f->stride = (size_t)p->maxw * (d.depth == 16 ? 2 : 1);
    } else {
      rc = es_stream_reserve(p->s, f, d.w, d.h, d.depth);
      if (rc) {
        p->rc = rc;
        return NULL;
      }
    }
    if (p->lend) {
      f->stride = ((size_t)d.w + (size_t)(i % 5)) * (d.depth == 16 ? 2 : 1);
      void *buf = malloc(f->stride * (size_t)d.h);
      if (!buf) {
        p->rc = ES_ERR_NOMEM;
        return NULL;
      }
      frame_content(p->seed, i, &d, buf, f->stride);
      f->lend = buf;
      f->lend_release = lend_free;
      f->lend_arg = buf;
      if (f->data) memset(f->data, 0x5a, (size_t)f->width); /* not what the stream reads */
    } else {
      frame_content(p->seed, i, &d, f->data, f->stride);
    }
    f->pts = 1000 + 3 * i;
    f->pts_seconds = (double)i / 25.0;
    f->user = (void *)(intptr_t)(i + 1);
    rc = es_stream_push(p->s, f);
    if (rc) {
      p->rc = rc;
      return NULL;
    }
  }
  p->rc = es_stream_finish(p->s);
  return NULL;
}

/* Pulls every frame and checks it against es_cpu_run of the rebuilt input. */
static int64_t consume(es_stream *s, const es_params *p, int bins, const es_stream_config *sc,
                       uint64_t seed, int maxw, int maxh, int depth16, const char *what) {
  int64_t got = 0;
  char msg[256];
  for (;;) {
    es_frame *f = NULL;
    int rc = es_stream_pull(s, &f);
    if (rc == ES_ERR_EOF) break;
    CHECK(rc == ES_OK && f, "%s: pull %lld: %d", what, (long long)got, rc);
    if (rc) break;
    CHECK(f->index == got, "%s: frame %lld pulled as %lld (out of order)", what, (long long)got,
          (long long)f->index);
    CHECK(f->user == (void *)(intptr_t)(got + 1) && f->pts == 1000 + 3 * got &&
              f->pts_seconds == (double)got / 25.0,
          "%s: frame %lld: pts or tag not passed through", what, (long long)got);
    CHECK(f->status == ES_OK, "%s: frame %lld status %d", what, (long long)got, f->status);
    CHECK(f->device == -1 || f->device >= 0, "device");
    frame_desc d;
    frame_describe(seed, got, maxw, maxh, depth16, &d);
    CHECK(f->width == d.w && f->height == d.h && f->depth == d.depth, "%s: frame %lld size",
          what, (long long)got);
    if (f->status == ES_OK && f->width == d.w && f->height == d.h) {
      size_t stride = (size_t)d.w * (d.depth == 16 ? 2 : 1);
      void *in = malloc(stride * (size_t)d.h);
      frame_content(seed, got, &d, in, stride);
      es_image img = {in, d.w, d.h, stride, d.depth};
      pt_result ref;
      pt_result_init(&ref, d.w, d.h, sc->render.format);
      rc = pt_reference(&img, p, bins, &sc->render, &ref, msg, sizeof msg);
      CHECK(rc == ES_OK, "%s: reference: %s", what, msg);
      char fw[280]; /* what (up to 199 characters) and the frame: gcc -Wformat-truncation */
      snprintf(fw, sizeof fw, "%s frame %lld (%dx%d/%d)", what, (long long)got, d.w, d.h,
               d.depth);
      if (sc->want_map) {
        CHECK(f->map && f->map_stride >= (size_t)d.w, "%s: no map", fw);
        if (f->map) pt_map_equal(ref.map, ref.map_stride, f->map, f->map_stride, d.w, d.h, fw);
      } else {
        CHECK(f->map == NULL, "%s: map without want_map", fw);
      }
      if (sc->want_stats) pt_stats_equal(&ref.stats, &f->stats, fw);
      if (sc->render.format != ES_PIX_NONE)
        pt_pix_equal(&ref.pix, &f->pix, sc->render.format, d.w, d.h, fw);
      pt_result_free(&ref);
      free(in);
    }
    /* Poison what the stream gave, so a recycled frame must be recomputed. */
    if (f->map) memset(f->map, 0xff, f->map_stride * (size_t)f->height * sizeof(float));
    memset(&f->stats, 0xa5, sizeof f->stats);
    es_stream_release(s, f);
    got++;
  }
  return got;
}

/* One stream run with random settings. fault: ES_FAULT_INJECT value or NULL. */
static void run_stream(int round, const char *fault, int64_t n) {
  es_config c;
  es_config_default(&c);
  int depth16 = es_test_range(0, 1);
  pt_random_params(&c.params, 8); /* levels valid for 8-bit frames too */
  c.threads = es_test_range(1, 4);
  c.queue = es_test_range(1, 6);
  c.stats_bins = es_test_range(1, 40);
  c.device = es_test_range(0, 1) ? ES_DEVICE_AUTO : ES_DEVICE_CPU;
  c.gpu_background = es_test_range(0, 1); /* GPUs (if any) join the stream when open */
  c.verbose = fault ? 1 : 0;
  if (fault)
    setenv("ES_FAULT_INJECT", fault, 1);
  else
    unsetenv("ES_FAULT_INJECT");
  es_context *ctx = NULL;
  char msg[256];
  int rc = es_context_create(&ctx, &c, msg, sizeof msg);
  unsetenv("ES_FAULT_INJECT");
  CHECK(rc == ES_OK, "create: %s", msg);
  if (rc) return;

  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = es_test_range(0, 3) != 0;
  sc.want_stats = es_test_range(0, 1);
  es_render_default(&sc.render);
  sc.render.format = es_test_range(0, 5);
  sc.render.colormap = es_test_range(0, 4);
  sc.render.range_auto = es_test_range(0, 1);
  sc.render.overlay = es_test_range(0, 1) ? 0.0f : 0.5f;
  sc.render.overlay_on = es_test_range(0, 1);
  int fixed = es_test_range(0, 1);
  int lend = es_test_range(0, 2) == 0;
  int maxw = 0, maxh = 0;
  if (fixed) {
    maxw = es_test_range(20, 90);
    maxh = es_test_range(10, 60);
    sc.max_width = maxw;
    sc.max_height = maxh;
    sc.depth = depth16 ? 16 : 8;
  }
  char what[200];
  snprintf(what, sizeof what,
           "stream %d (threads %d queue %d %s%s, map %d stats %d fmt %d, %s %dx%d%s%s%s)",
           round, c.threads, c.queue, c.device == ES_DEVICE_CPU ? "cpu" : "auto",
           c.gpu_background ? " background" : "", sc.want_map, sc.want_stats, sc.render.format,
           fixed ? "fixed" : "grow", maxw, maxh, lend ? ", lent" : "", fault ? ", faults " : "",
           fault ? fault : "");
  printf("%s\n", what);

  es_stream *s = NULL;
  rc = es_stream_open(ctx, &sc, &s);
  CHECK(rc == ES_OK, "%s: open: %s", what, es_context_error(ctx));
  if (rc) {
    es_context_destroy(&ctx);
    return;
  }
  /* 16-bit frames appear only in streams whose fixed buffers are 16-bit (or grow). */
  producer p = {s, es_test_rand(), n, maxw, maxh, depth16, fixed, lend, 0};
  atomic_store(&lend_returns, 0);
  pthread_t t;
  pthread_create(&t, NULL, produce, &p);
  int64_t got = consume(s, &c.params, c.stats_bins, &sc, p.seed, maxw, maxh, p.depth16, what);
  pthread_join(t, NULL);
  CHECK(p.rc == ES_OK, "%s: producer: %d %s", what, p.rc, es_context_error(ctx));
  CHECK(got == n, "%s: pulled %lld of %lld", what, (long long)got, (long long)n);
  es_frame *f = NULL;
  CHECK(es_stream_pull(s, &f) == ES_ERR_EOF && !f, "%s: EOF again", what);
  CHECK(es_stream_max_live(s) <= c.queue, "%s: %d frames out of a pool of %d", what,
        es_stream_max_live(s), c.queue);
  if (fault) {
    int64_t want = 0;
    for (const char *q = strchr(fault, '='); q; q = strchr(q + 1, ','))
      if (strtoll(q + 1, NULL, 10) < n) want++;
    CHECK(es_context_retries(ctx) == want, "%s: retries %lld, want %lld", what,
          (long long)es_context_retries(ctx), (long long)want);
  } else {
    CHECK(es_context_retries(ctx) == 0, "%s: retries without faults", what);
  }
  CHECK(atomic_load(&lend_returns) == (lend ? n : 0), "%s: %ld lent frames given back of %lld",
        what, atomic_load(&lend_returns), (long long)(lend ? n : 0));
  es_stream_destroy(&s);
  CHECK(s == NULL, "destroy clears the pointer");
  CHECK(atomic_load(&lend_returns) == (lend ? n : 0), "%s: destroy gave back %ld", what,
        atomic_load(&lend_returns));
  es_context_destroy(&ctx);
}

/* ---- Abort. ---- */
typedef struct blocker {
  es_stream *s;
  int pull; /* 0: acquire, 1: pull */
  atomic_int done;
  int rc;
} blocker;

static void *block(void *arg) {
  blocker *b = arg;
  es_frame *f = NULL;
  b->rc = b->pull ? es_stream_pull(b->s, &f) : es_stream_acquire(b->s, &f);
  atomic_store(&b->done, 1);
  return NULL;
}

static void test_abort(void) {
  es_config c;
  es_config_default(&c);
  c.queue = 3;
  c.threads = 2;
  c.verbose = 0;
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  es_frame *held[3];
  for (int i = 0; i < 3; i++) CHECK(es_stream_acquire(s, &held[i]) == ES_OK, "acquire %d", i);
  blocker ba = {s, 0, 0, 0}, bp = {s, 1, 0, 0};
  atomic_init(&ba.done, 0);
  atomic_init(&bp.done, 0);
  pthread_t ta, tp;
  pthread_create(&ta, NULL, block, &ba);
  pthread_create(&tp, NULL, block, &bp);
  usleep(200 * 1000);
  CHECK(!atomic_load(&ba.done), "acquire did not block with the pool empty");
  CHECK(!atomic_load(&bp.done), "pull did not block with nothing pushed");
  es_stream_abort(s);
  pthread_join(ta, NULL);
  pthread_join(tp, NULL);
  CHECK(ba.rc == ES_ERR_INTERRUPTED, "acquire after abort: %d", ba.rc);
  CHECK(bp.rc == ES_ERR_INTERRUPTED, "pull after abort: %d", bp.rc);
  es_frame *f = NULL;
  CHECK(es_stream_acquire(s, &f) == ES_ERR_INTERRUPTED, "acquire on an aborted stream");
  CHECK(es_stream_reserve(s, held[0], 5, 5, 8) == ES_OK, "reserve");
  CHECK(es_stream_push(s, held[0]) == ES_ERR_INTERRUPTED, "push on an aborted stream");
  es_stream_destroy(&s); /* frames still held: freed with the pool */

  /* Destroy in mid-flight: frames queued and running, nothing pulled; lent ones given
   * back by destroy, each once. */
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open 2");
  atomic_store(&lend_returns, 0);
  for (int i = 0; i < 3; i++) {
    CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire");
    CHECK(es_stream_reserve(s, f, 301, 207, 8) == ES_OK, "reserve");
    if (i == 1) {
      void *buf = malloc(f->stride * 207);
      memset(buf, 99, f->stride * 207);
      f->lend = buf;
      f->lend_release = lend_free;
      f->lend_arg = buf;
    } else {
      memset(f->data, i * 40, f->stride * 207);
    }
    CHECK(es_stream_push(s, f) == ES_OK, "push");
  }
  es_stream_abort(s);
  CHECK(atomic_load(&lend_returns) == 0, "a lent frame given back before destroy");
  es_stream_destroy(&s);
  CHECK(atomic_load(&lend_returns) == 1, "destroy gave back %ld lent frames of 1",
        atomic_load(&lend_returns));
  es_context_destroy(&ctx);
}

/* ---- Misuse and per-frame errors. ---- */
static void test_misuse(void) {
  es_config c;
  es_config_default(&c);
  c.queue = 2;
  c.threads = 1;
  c.verbose = 0;
  c.params.levels = 300; /* 16-bit frames: 300 levels; 8-bit ones: 256 (it was an error) */
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  es_stream *s = NULL;
  sc.render.format = 99;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_ERR_USAGE && !s, "bad render format");
  sc.render.format = ES_PIX_NONE;
  sc.max_width = 10; /* without a height */
  CHECK(es_stream_open(ctx, &sc, &s) == ES_ERR_USAGE && !s, "max width without height");
  sc.max_width = 0;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  es_frame *f = NULL;
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire");
  CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push without reserve");
  CHECK(es_stream_reserve(s, f, 0, 5, 8) == ES_ERR_USAGE, "reserve 0 wide");
  CHECK(es_stream_reserve(s, f, 5, 5, 12) == ES_ERR_USAGE, "reserve depth 12");
  CHECK(es_stream_reserve(s, f, 9, 7, 8) == ES_OK, "reserve");
  f->stride = 4;
  CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push with a short stride");
  f->stride = 9;
  f->height = 8; /* more rows than reserved */
  CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push beyond the buffer");
  f->height = 7;
  memset(f->data, 7, 9 * 7);
  CHECK(es_stream_push(s, f) == ES_OK, "push 8-bit");
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire 2");
  CHECK(es_stream_reserve(s, f, 11, 3, 16) == ES_OK, "reserve 16");
  memset(f->data, 0x33, 11 * 3 * 2);
  CHECK(es_stream_push(s, f) == ES_OK, "push 16-bit");
  /* Let the worker finish both frames before the misuse below records its own errors: the
   * 8-bit frame's message must still be what the pull of that frame reports (the library
   * once let the worker write it at compute time, and a later error - these misuses -
   * replaced it; on the GPU machine the timing made that happen). */
  usleep(100 * 1000);
  CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push of a frame pushed already");
  CHECK(strstr(es_context_error(ctx), "push of a frame not acquired"),
        "the caller's own error was replaced: %s", es_context_error(ctx));
  CHECK(es_stream_reserve(s, f, 50, 50, 16) == ES_ERR_USAGE, "reserve of a pushed frame");
  CHECK(es_stream_finish(s) == ES_OK, "finish");
  CHECK(es_stream_pull(s, &f) == ES_OK && f->index == 0, "pull 0");
  CHECK(f->status == ES_OK, "8-bit frame with 300 levels: status %d", f->status);
  int zero8 = 1; /* a constant frame */
  for (int y = 0; y < 7; y++)
    for (int x = 0; x < 9; x++) zero8 &= f->map[(size_t)y * f->map_stride + x] == 0.0f;
  CHECK(zero8, "constant 8-bit frame: entropy not zero");
  es_stream_release(s, f);
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire after finish still hands a frame back");
  CHECK(es_stream_reserve(s, f, 3, 3, 8) == ES_OK, "reserve");
  CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push after finish");
  es_stream_release(s, f); /* acquired, never pushed: back to the pool */
  CHECK(es_stream_pull(s, &f) == ES_OK && f->index == 1, "pull 1");
  CHECK(f->status == ES_OK, "16-bit frame status %d", f->status);
  /* A constant frame has zero entropy everywhere. */
  int zero = 1;
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 11; x++) zero &= f->map[(size_t)y * f->map_stride + x] == 0.0f;
  CHECK(zero, "constant frame: entropy not zero");
  es_stream_release(s, f);
  CHECK(es_stream_pull(s, &f) == ES_ERR_EOF, "EOF");
  es_stream_release(s, NULL);
  es_stream_destroy(&s);
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
}

/* ---- A frame whose geometry no engine can compute is refused at reserve and push. ----
 * The push checked a lent frame's stride only against its row: a stride whose rows span
 * more than the address space, or a side too long for the engines, went to a worker and
 * failed there as the frame's status (and the map of a frame one row of 2^31 - 100 samples
 * wide was allocated first). Now es_stream_push refuses it with the same message
 * es_compute gives, and the frame stays the producer's: fixed, it goes through. */
static void test_push_geometry(void) {
  es_config c;
  es_config_default(&c);
  c.queue = 2;
  c.threads = 1;
  c.verbose = 0;
  c.device = ES_DEVICE_CPU;
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  static uint8_t pixels[9 * 7];
  memset(pixels, 5, sizeof pixels);
  es_frame *f = NULL;
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire");
  /* A side too long for the engines is refused by the reserve too, before its 2 GB of
   * samples and 8 GB of map are allocated for a frame no engine could compute (a PNG of
   * one such row passes --max-pixels; it was refused only at compute time). */
  CHECK(es_stream_reserve(s, f, INT_MAX - 100, 1, 8) == ES_ERR_INPUT &&
            strstr(es_context_error(ctx), "not supported"),
        "reserve of a %d-wide frame: %s", INT_MAX - 100, es_context_error(ctx));
  CHECK(es_stream_reserve(s, f, 1, INT_MAX - 100, 16) == ES_ERR_INPUT, "reserve, too tall");
  CHECK(es_stream_reserve(s, f, 9, 7, 8) == ES_OK, "reserve after a refused one");
  atomic_store(&lend_returns, 0);
  f->width = 9;
  f->height = 7;
  f->depth = 8;
  f->lend = pixels;
  f->lend_release = lend_free;
  f->lend_arg = NULL;
  const struct {
    int width, height, depth;
    size_t stride;
    int want;
    const char *says;
  } bad[] = {
      {9, 7, 8, 8, ES_ERR_USAGE, "stride"},                   /* shorter than a row */
      {9, 7, 16, 17, ES_ERR_USAGE, "stride"},                 /* 16-bit: a row is 18 bytes */
      {9, 7, 8, SIZE_MAX / 2, ES_ERR_USAGE, "address space"}, /* rows past PTRDIFF_MAX */
      {9, 7, 8, SIZE_MAX / 3, ES_ERR_USAGE, "address space"}, /* the extent wraps size_t */
      {9, 7, 8, (size_t)PTRDIFF_MAX / 6 + 1, ES_ERR_USAGE, "address space"},
      {INT_MAX - 100, 1, 8, (size_t)INT_MAX, ES_ERR_INPUT, "not supported"}, /* too wide */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    f->width = bad[i].width;
    f->height = bad[i].height;
    f->depth = bad[i].depth;
    f->stride = bad[i].stride;
    const int rc = es_stream_push(s, f);
    CHECK(rc == bad[i].want, "lent %dx%d depth %d stride %zu: push gave %d, want %d", bad[i].width,
          bad[i].height, bad[i].depth, bad[i].stride, rc, bad[i].want);
    CHECK(strstr(es_context_error(ctx), bad[i].says), "lent stride %zu: message '%s', want '%s'",
          bad[i].stride, es_context_error(ctx), bad[i].says);
  }
  CHECK(atomic_load(&lend_returns) == 0, "a refused frame's lent samples were given back");
  /* The frame is still the producer's: corrected, it is computed. */
  f->width = 9;
  f->height = 7;
  f->depth = 8;
  f->stride = 9;
  CHECK(es_stream_push(s, f) == ES_OK, "push of the corrected frame: %s", es_context_error(ctx));
  CHECK(es_stream_finish(s) == ES_OK, "finish");
  f = NULL;
  CHECK(es_stream_pull(s, &f) == ES_OK && f && f->index == 0, "pull");
  if (f) {
    CHECK(f->status == ES_OK, "corrected frame: status %d (%s)", f->status, es_context_error(ctx));
    int zero = f->map != NULL;
    for (int y = 0; zero && y < 7; y++)
      for (int x = 0; x < 9; x++)
        zero &= f->map[(size_t)y * f->map_stride + x] == 0.0f;
    CHECK(zero, "constant lent frame: entropy not zero");
    es_stream_release(s, f);
  }
  CHECK(atomic_load(&lend_returns) == 1, "lent samples given back %ld times, want 1",
        atomic_load(&lend_returns));
  CHECK(es_stream_pull(s, &f) == ES_ERR_EOF, "EOF");
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
}

/* ---- The context destroyed while a stream lives. ---- */
/* es_context_destroy with frames queued: the stream keeps the context, computes them and
 * frees it at es_stream_destroy (the workers read the freed context: under ASan a
 * use-after-free, else frames computed from whatever reused its memory). */
static void test_context_first(void) {
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_CPU;
  c.queue = 4;
  c.threads = 1;
  c.verbose = 0;
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  sc.want_stats = 1;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  if (!s) return;
  const int W = 700, H = 500;
  for (int i = 0; i < 4; i++) {
    es_frame *f = NULL;
    CHECK(es_stream_acquire(s, &f) == ES_OK && es_stream_reserve(s, f, W, H, 8) == ES_OK,
          "acquire");
    pt_fill(f->data, W, H, f->stride, 8);
    CHECK(es_stream_push(s, f) == ES_OK, "push %d", i);
  }
  es_context_destroy(&ctx);
  CHECK(ctx == NULL, "es_context_destroy left the pointer");
  /* Whatever reuses the context's memory must not reach the frames still queued. */
  void *junk[8];
  for (int i = 0; i < 8; i++) {
    junk[i] = malloc(sizeof(es_context));
    if (junk[i]) memset(junk[i], 0xa5, sizeof(es_context));
  }
  CHECK(es_stream_finish(s) == ES_OK, "finish");
  int64_t got = 0;
  es_frame *f = NULL;
  while (es_stream_pull(s, &f) == ES_OK) {
    CHECK(f->status == ES_OK && f->index == got && f->stats.count == (int64_t)W * H,
          "frame %lld after es_context_destroy: status %d count %lld", (long long)got, f->status,
          (long long)f->stats.count);
    if (f->status == ES_OK) {
      es_image img = {f->data, W, H, f->stride, 8};
      pt_result ref;
      char msg[200];
      pt_result_init(&ref, W, H, ES_PIX_NONE);
      CHECK(pt_reference(&img, &c.params, c.stats_bins, &sc.render, &ref, msg, sizeof msg) == ES_OK,
            "reference: %s", msg);
      pt_map_equal(ref.map, ref.map_stride, f->map, f->map_stride, W, H,
                   "a frame computed after es_context_destroy");
      pt_result_free(&ref);
    }
    es_stream_release(s, f);
    got++;
  }
  CHECK(got == 4, "%lld frames of 4 after es_context_destroy", (long long)got);
  es_stream_destroy(&s); /* frees the context too (ASan: no leak, no use after free) */
  for (int i = 0; i < 8; i++)
    free(junk[i]);
}

/* ---- A long stream: memory stays flat. ---- */
static long rss_kib(void) {
  FILE *fp = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (!fp) return -1;
  if (fscanf(fp, "%ld %ld", &pages, &res) != 2) res = -1;
  fclose(fp);
  return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_long(void) {
  es_config c;
  es_config_default(&c);
  c.queue = 4;
  c.threads = 2;
  c.verbose = 0;
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, NULL, 0) == ES_OK, "create");
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  sc.want_stats = 1;
  es_render_default(&sc.render);
  sc.max_width = 64;
  sc.max_height = 48;
  sc.depth = 8;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  producer p = {s, es_test_rand(), 2000, 64, 48, 0, 1, 0, 0};
  pthread_t t;
  pthread_create(&t, NULL, produce, &p);
  long rss_early = -1, rss_late = -1;
  int64_t got = 0;
  uint64_t checked = 0;
  for (;;) {
    es_frame *f = NULL;
    int rc = es_stream_pull(s, &f);
    if (rc == ES_ERR_EOF) break;
    CHECK(rc == ES_OK && f->index == got && f->status == ES_OK, "long stream frame %lld",
          (long long)got);
    if (rc) break;
    /* A cheap check on every frame: the stats count is the frame's pixel count. */
    checked += f->stats.count == (int64_t)f->width * f->height;
    es_stream_release(s, f);
    got++;
    if (got == 200) rss_early = rss_kib();
  }
  rss_late = rss_kib();
  pthread_join(t, NULL);
  CHECK(got == 2000 && checked == 2000, "long stream: %lld frames, %llu good stats",
        (long long)got, (unsigned long long)checked);
  CHECK(es_stream_max_live(s) <= 4, "long stream: %d live frames", es_stream_max_live(s));
  printf("long stream: RSS %ld KiB at frame 200, %ld KiB at 2000, max live %d of 4\n",
         rss_early, rss_late, es_stream_max_live(s));
#ifdef __SANITIZE_ADDRESS__
  /* ASan keeps freed blocks in quarantine (the engines allocate per job): RSS grows by
   * design there; the pool bound above still holds. */
  rss_late = rss_early = -1;
#endif
  if (rss_early > 0 && rss_late > 0)
    CHECK(rss_late - rss_early < 2048, "RSS grew by %ld KiB over 1800 frames",
          rss_late - rss_early);
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
}

int main(void) {
  es_test_seed("test_pipeline_stream");
  for (int round = 0; round < 10; round++) run_stream(round, NULL, es_test_range(20, 70));
  run_stream(100, "frames=3,7", 12);
  run_stream(101, "frames=0,1,2,5,40", 30);
  test_abort();
  test_misuse();
  test_push_geometry();
  test_context_first();
  test_long();
  return es_test_done("test_pipeline_stream");
}
