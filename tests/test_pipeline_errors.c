/*
 * test_pipeline_errors.c - threads sharing one context each read back their own error.
 * Two threads call es_compute on one context, failing in different ways at the same time;
 * after every failure each must see its own message in es_context_error (the CLI's batch
 * reports a file's error that way). Also: a thread that got no error sees the context's,
 * and a thread's error on a destroyed context is not handed to a new one at its address.
 * Then the library's edges (each a bug found by a hunt through the API, session 14):
 * es_params_hmax and es_params_check on bad or missing parameters, es_context_create with
 * no room for a message, a pushed frame whose stride overflows its size check, a stream
 * opened with an overlay out of range, 16-bit input on unaligned rows (UBSan in the
 * sanitizer build; the same map and rendering as aligned rows in every build), and the
 * std of a constant map exactly 0. And the library's messages: with es_config.message set,
 * every line (an injected fault's retry warning, verbose 2's lines) goes there, without a
 * newline or program name, and none to stderr, where they were drawn on after the CLI's
 * progress line.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "entropy_stream.h"
#include "es_test.h"

#define ROUNDS 20000

typedef struct arg {
  es_context *ctx;
  int kind;     /* 0: no image; 1: a rendering without planes */
  int mismatch; /* failures whose message was not this thread's */
  int wrong_rc;
} arg;

static void *hammer(void *p) {
  arg *a = p;
  static const uint8_t px[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  es_image img = {px, 3, 3, 3, 8};
  es_render r;
  es_render_default(&r);
  const char *want = a->kind == 0 ? "no image" : "a rendering was asked for without planes";
  for (int i = 0; i < ROUNDS; i++) {
    int rc = a->kind == 0 ? es_compute(a->ctx, NULL, NULL, 0, NULL, NULL, NULL)
                          : es_compute(a->ctx, &img, NULL, 0, NULL, &r, NULL);
    if (rc != ES_ERR_USAGE) a->wrong_rc++;
    if (strcmp(es_context_error(a->ctx), want) != 0) a->mismatch++;
  }
  return NULL;
}

static void *other_thread_reads(void *p) {
  /* This thread made no call: it sees the context's last error, whichever it is. */
  const char *m = es_context_error((es_context *)p);
  return (void *)(intptr_t)(strcmp(m, "no image") == 0 ||
                  strcmp(m, "a rendering was asked for without planes") == 0);
}

/* A thread that fails on context A, then (after main destroyed A and created B, likely at
 * A's address) reads B's error: B never failed, so it must read "". */
typedef struct reuse_arg {
  es_context **ctx;
  pthread_barrier_t *bar;
  char seen[256];
} reuse_arg;

static void *fail_then_read(void *p) {
  reuse_arg *a = p;
  es_compute(*a->ctx, NULL, NULL, 0, NULL, NULL, NULL); /* "no image" on A */
  pthread_barrier_wait(a->bar); /* main: destroy A, create B */
  pthread_barrier_wait(a->bar);
  snprintf(a->seen, sizeof a->seen, "%s", es_context_error(*a->ctx));
  return NULL;
}

/* A thread with errors on two contexts reads its own message from each, though another
 * thread failed on the first since (one slot was kept per thread: after its error on B,
 * the thread read A's last message, the other thread's). */
typedef struct two_arg {
  es_context *a;
  pthread_barrier_t *bar;
} two_arg;

static void *fail_empty(void *p) {
  two_arg *t = p;
  pthread_barrier_wait(t->bar);
  es_image empty = {"", 0, 0, 0, 8};
  es_compute(t->a, &empty, NULL, 0, NULL, NULL, NULL); /* "empty image" on A */
  pthread_barrier_wait(t->bar);
  return NULL;
}

static void two_contexts(es_context *a, const es_config *cfg) {
  char msg[256];
  es_context *b = NULL;
  CHECK(es_context_create(&b, cfg, msg, sizeof msg) == ES_OK, "context B: %s", msg);
  if (!b) return;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  two_arg t = {a, &bar};
  pthread_t th;
  pthread_create(&th, NULL, fail_empty, &t);
  es_compute(a, NULL, NULL, 0, NULL, NULL, NULL); /* "no image" on A */
  es_render r;
  es_render_default(&r);
  static const uint8_t px[4];
  es_image im = {px, 2, 2, 2, 8};
  es_compute(b, &im, NULL, 0, NULL, &r, NULL); /* "... without planes" on B */
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  pthread_join(th, NULL);
  CHECK(!strcmp(es_context_error(a), "no image"),
        "a thread's error on context A after one on B: '%s', want 'no image'", es_context_error(a));
  CHECK(strstr(es_context_error(b), "without planes"), "context B: '%s'", es_context_error(b));
  pthread_barrier_destroy(&bar);
  es_context_destroy(&b);
}

static void edges(es_context *ctx) {
  char msg[256];
  es_params p;
  /* es_params_hmax: windows es_params_check refuses have no maximum (K = 257 wrote past the
   * half-width table). */
  es_params_default(&p);
  const int bad_k[] = {257, 4001, 0, -5, 4};
  for (int i = 0; i < 5; i++) {
    p.window = bad_k[i];
    CHECK(es_params_hmax(&p) == 0.0, "es_params_hmax(window %d) = %g", bad_k[i], es_params_hmax(&p));
  }
  p.window = 255;
  CHECK(es_params_hmax(&p) > 0.0, "es_params_hmax(window 255) not positive");
  CHECK(es_params_check(NULL, 8, msg, sizeof msg) == ES_ERR_USAGE, "es_params_check(NULL)");

  /* es_context_create with msglen 0 writes nothing at msg. */
  char *m = malloc(17);
  if (m) {
    m[16] = 'X';
    es_config cfg;
    es_config_default(&cfg);
    cfg.device = ES_DEVICE_CPU;
    cfg.threads = -3; /* refused: a message the call has no room for */
    es_context *c2 = NULL;
    int rc = es_context_create(&c2, &cfg, m + 16, 0);
    CHECK(rc == ES_ERR_USAGE && !c2, "context with threads -3: %d", rc);
    CHECK(m[16] == 'X', "es_context_create wrote into a message of length 0");
    es_context_destroy(&c2);
    free(m);
  }

  /* A stream: a frame whose stride makes stride * (height - 1) wrap is refused; a stream
   * with an overlay out of range is refused at open. */
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_stats = 1;
  sc.render.format = ES_PIX_NONE;
  es_stream *st = NULL;
  CHECK(es_stream_open(ctx, &sc, &st) == ES_OK && st, "stream: %s", es_context_error(ctx));
  if (st) {
    es_frame *f = NULL;
    if (es_stream_acquire(st, &f) == ES_OK && es_stream_reserve(st, f, 10, 10, 8) == ES_OK) {
      memset(f->data, 7, 100);
      f->stride = (size_t)1 << 63;
      f->height = 3;
      CHECK(es_stream_push(st, f) == ES_ERR_USAGE, "a frame of stride 2^63 was pushed");
      es_stream_release(st, f);
    }
    es_stream_destroy(&st);
  }
  /* A lent frame (rows in the producer's memory) with such a stride: refused at push with
   * a usage error, as es_compute refuses it (the worker once read outside any buffer: a
   * crash; then the frame failed at compute time), the frame still the producer's. */
  st = NULL;
  CHECK(es_stream_open(ctx, &sc, &st) == ES_OK && st, "stream: %s", es_context_error(ctx));
  if (st) {
    static const uint8_t lent[40];
    es_frame *f = NULL;
    if (es_stream_acquire(st, &f) == ES_OK) {
      f->width = 10;
      f->height = 3;
      f->depth = 8;
      f->stride = (size_t)1 << 63;
      f->lend = lent;
      CHECK(es_stream_push(st, f) == ES_ERR_USAGE && strstr(es_context_error(ctx), "address space"),
            "a lent frame of stride 2^63 was pushed: %s", es_context_error(ctx));
      es_stream_release(st, f);
    }
    es_stream_destroy(&st);
  }
  /* es_compute: strides whose rows would wrap around the address space (or negative ones
   * converted to size_t) are refused; the input's crashed, the map's wrote over itself. */
  {
    static const uint8_t px8[64];
    float fm[64];
    uint8_t rgb[3 * 64];
    es_image im = {px8, 10, 3, (size_t)1 << 63, 8};
    es_params_default(&p);
    CHECK(es_compute(ctx, &im, NULL, 0, &(es_stats){0}, NULL, NULL) == ES_ERR_USAGE,
          "an image stride of 2^63 was taken");
    im.stride = (size_t)-10; /* -10 */
    CHECK(es_compute(ctx, &im, fm, 10, NULL, NULL, NULL) == ES_ERR_USAGE,
          "a negative image stride was taken");
    im.stride = 10;
    CHECK(es_compute(ctx, &im, fm, (size_t)1 << 62, NULL, NULL, NULL) == ES_ERR_USAGE &&
              strstr(es_context_error(ctx), "map stride"),
          "a map stride of 2^62 floats was taken: %s", es_context_error(ctx));
    es_render r;
    es_render_default(&r);
    es_planes pl = {{rgb, NULL, NULL}, {(size_t)1 << 63, 0, 0}};
    CHECK(es_compute(ctx, &im, NULL, 0, NULL, &r, &pl) == ES_ERR_USAGE,
          "a plane stride of 2^63 was taken");
  }
  es_render_default(&sc.render);
  sc.render.overlay = 2.0f;
  st = NULL;
  CHECK(es_stream_open(ctx, &sc, &st) == ES_ERR_USAGE && !st, "a stream with overlay 2 opened");
  es_stream_destroy(&st);

  /* 16-bit samples on odd addresses and an odd stride: the same map, stats and rendering
   * (with an overlay, which reads the source) as from aligned rows. */
  const int W = 37, H = 23;
  const size_t ostride = 2 * (size_t)W + 3; /* odd */
  uint8_t *raw = malloc(ostride * H + 1);
  uint16_t *al = malloc(sizeof(uint16_t) * W * H);
  float *m1 = malloc(sizeof(float) * W * H), *m2 = malloc(sizeof(float) * W * H);
  uint8_t *px1 = malloc(3 * W * H), *px2 = malloc(3 * W * H);
  if (raw && al && m1 && m2 && px1 && px2) {
    for (int i = 0; i < W * H; i++) {
      al[i] = (uint16_t)es_test_rand();
      memcpy(raw + 1 + (size_t)(i / W) * ostride + 2 * (size_t)(i % W), &al[i], 2);
    }
    es_params_default(&p);
    es_render r;
    es_render_default(&r);
    r.overlay = 0.5f;
    r.overlay_on = 1;
    es_stats s1, s2;
    es_planes pl1 = {{px1, NULL, NULL}, {3 * (size_t)W, 0, 0}};
    es_planes pl2 = {{px2, NULL, NULL}, {3 * (size_t)W, 0, 0}};
    es_image a = {al, W, H, 2 * (size_t)W, 16}, u = {raw + 1, W, H, ostride, 16};
    int r1 = es_compute(ctx, &a, m1, W, &s1, &r, &pl1);
    int r2 = es_compute(ctx, &u, m2, W, &s2, &r, &pl2);
    CHECK(r1 == ES_OK && r2 == ES_OK, "16-bit: %d %d %s", r1, r2, es_context_error(ctx));
    CHECK(!memcmp(m1, m2, sizeof(float) * W * H), "16-bit unaligned rows: another map");
    CHECK(!memcmp(px1, px2, 3 * (size_t)W * H), "16-bit unaligned rows: another rendering");
    CHECK(s1.mean == s2.mean && s1.std == s2.std, "16-bit unaligned rows: other stats");
  }
  free(raw);
  free(al);
  free(m1);
  free(m2);
  free(px1);
  free(px2);

  /* Outputs over the input (a map or a rendering written in place): the results of separate
   * buffers (the engines read the input in bands while they wrote over it: another map, and
   * an RGB rendering with an overlay read source pixels already overwritten); outputs
   * overlapping one another are refused. */
  {
    const int IW = 61, IH = 47;
    const size_t n = (size_t)IW * IH;
    uint8_t *src = malloc(n), *buf = malloc(n * sizeof(float)), *px = malloc(3 * n);
    float *ref = malloc(n * sizeof(float));
    if (src && buf && px && ref) {
      for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(es_test_rand() >> 7);
      es_params_default(&p);
      es_image im = {src, IW, IH, IW, 8}, ib = {buf, IW, IH, IW, 8};
      CHECK(es_compute(ctx, &im, ref, IW, NULL, NULL, NULL) == ES_OK, "in place: reference %s",
            es_context_error(ctx));
      memcpy(buf, src, n);
      CHECK(es_compute(ctx, &ib, (float *)buf, IW, NULL, NULL, NULL) == ES_OK, "map in place");
      CHECK(!memcmp(buf, ref, n * sizeof(float)), "a map written over its input differs");
      const int fmts[] = {ES_PIX_GRAY8, ES_PIX_RGB24};
      for (int k = 0; k < 2; k++) {
        es_render g;
        es_render_default(&g);
        g.format = fmts[k];
        g.overlay = 0.25f;
        size_t ps = (size_t)IW * (k ? 3 : 1);
        es_planes gp = {{px, NULL, NULL}, {ps, 0, 0}}, bp = {{buf, NULL, NULL}, {ps, 0, 0}};
        CHECK(es_compute(ctx, &im, NULL, 0, NULL, &g, &gp) == ES_OK, "render: %s",
              es_context_error(ctx));
        memcpy(buf, src, n);
        CHECK(es_compute(ctx, &ib, NULL, 0, NULL, &g, &bp) == ES_OK, "render %d in place", fmts[k]);
        CHECK(!memcmp(buf, px, ps * IH),
              "a rendering (format %d, overlay) written over its "
              "input differs",
              fmts[k]);
        es_planes over = {{buf + 4, NULL, NULL}, {ps, 0, 0}};
        CHECK(es_compute(ctx, &im, (float *)buf, IW, NULL, &g, &over) == ES_ERR_USAGE &&
                  strstr(es_context_error(ctx), "overlaps"),
              "a rendering over the map was not refused: %s", es_context_error(ctx));
      }
    }
    free(src);
    free(buf);
    free(px);
    free(ref);
  }

  /* A side within two windows of INT_MAX is refused before anything is read (the engines'
   * padded widths are ints). */
  {
    static const uint8_t one = 0;
    es_image huge = {&one, INT32_MAX - 100, 1, (size_t)INT32_MAX, 8};
    es_params_default(&p);
    CHECK(es_compute(ctx, &huge, NULL, 0, NULL, NULL, NULL) == ES_ERR_INPUT,
          "an image %d pixels wide was not refused", huge.width);
  }

  /* A constant image: H is the same everywhere, so its std is exactly 0 (sumsq / n -
   * mean^2 left 1.3e-7 at 1200 x 900). */
  const int CW = 1200, CH = 900;
  uint8_t *c8 = malloc((size_t)CW * CH);
  if (c8) {
    memset(c8, 77, (size_t)CW * CH);
    es_image ci = {c8, CW, CH, CW, 8};
    es_stats cs;
    es_params_default(&p);
    CHECK(es_compute(ctx, &ci, NULL, 0, &cs, NULL, NULL) == ES_OK, "constant: %s",
          es_context_error(ctx));
    CHECK(cs.min == cs.max && cs.std == 0.0, "constant image: min %g max %g std %g", cs.min,
          cs.max, cs.std);
    free(c8);
  }
}

typedef struct msg_log {
  int n;         /* lines received */
  int bad;       /* lines with a newline or a program name */
  int retried;   /* the injected fault's warning */
} msg_log;

static void collect(void *user, const char *line) {
  msg_log *m = user;
  m->n++;
  if (strchr(line, '\n') || !strncmp(line, "entropy-stream", 14)) m->bad++;
  if (strstr(line, "warning: CPU failed (injected fault): frame retried on the CPU")) m->retried++;
}

static void messages(void) {
  es_config cfg;
  es_context *ctx = NULL;
  msg_log log = {0, 0, 0};
  char msg[256] = "", path[] = "/tmp/es-msg-XXXXXX";
  uint8_t px[16 * 16];
  float map[16 * 16];
  es_image im = {px, 16, 16, 16, 8};
  struct stat st;
  int saved = dup(2), tmp = mkstemp(path);
  CHECK(saved >= 0 && tmp >= 0, "cannot redirect stderr");
  if (saved < 0 || tmp < 0) return;
  unlink(path);
  es_config_default(&cfg);
  CHECK(cfg.message == NULL && cfg.message_user == NULL, "es_config_default: a message sink");
  cfg.device = ES_DEVICE_CPU;
  cfg.threads = 1;
  cfg.verbose = 2;
  cfg.message = collect;
  cfg.message_user = &log;
  for (int i = 0; i < 16 * 16; i++) px[i] = (uint8_t)(i * 37);
  fflush(stderr);
  dup2(tmp, 2);
  setenv("ES_FAULT_INJECT", "frames=0", 1);
  int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  unsetenv("ES_FAULT_INJECT");
  if (rc == ES_OK) rc = es_compute(ctx, &im, map, 16, NULL, NULL, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK(rc == ES_OK, "messages: %d %s", rc, ctx ? es_context_error(ctx) : msg);
  CHECK(log.retried == 1, "the retry warning came %d times to es_config.message", log.retried);
  CHECK(log.n >= 2, "verbose 2: %d lines to es_config.message, want the context's and the "
        "retry's", log.n);
  CHECK(log.bad == 0, "%d lines with a newline or a program name", log.bad);
  CHECK(fstat(tmp, &st) == 0 && st.st_size == 0, "%lld bytes written to stderr besides",
        (long long)st.st_size);
  close(tmp);
  es_context_destroy(&ctx);
}

int main(void) {
  es_test_seed("test_pipeline_errors");
  messages();
  es_config cfg;
  es_config_default(&cfg);
  cfg.device = ES_DEVICE_CPU;
  cfg.verbose = 0;
  char msg[256] = "";
  es_context *ctx = NULL;
  int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK && ctx, "context: %d %s", rc, msg);
  if (!ctx) return es_test_done("test_pipeline_errors");

  arg a[2] = {{ctx, 0, 0, 0}, {ctx, 1, 0, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, hammer, &a[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    CHECK(a[i].wrong_rc == 0, "thread %d: %d calls did not return ES_ERR_USAGE", i,
          a[i].wrong_rc);
    CHECK(a[i].mismatch == 0, "thread %d: %d of %d failures read another thread's message", i,
          a[i].mismatch, ROUNDS);
  }
  pthread_t t3;
  void *ok = NULL;
  pthread_create(&t3, NULL, other_thread_reads, ctx);
  pthread_join(t3, &ok);
  CHECK(ok != NULL, "a thread with no error of its own did not see the context's last error");

  /* A new context at the same address must not inherit this thread's old message. */
  es_compute(ctx, NULL, NULL, 0, NULL, NULL, NULL);
  es_context_destroy(&ctx);
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK, "second context: %s", msg);
  CHECK(ctx && es_context_error(ctx)[0] == '\0', "a new context reports an old error: '%s'",
        ctx ? es_context_error(ctx) : "");
  es_context_destroy(&ctx);

  /* The same from another thread: its error on A must not come back from B. */
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK && ctx, "third context: %s", msg);
  if (ctx) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    reuse_arg ra = {&ctx, &bar, ""};
    pthread_t t4;
    pthread_create(&t4, NULL, fail_then_read, &ra);
    pthread_barrier_wait(&bar);
    const void *old = ctx;
    es_context_destroy(&ctx);
    rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
    CHECK(rc == ES_OK && ctx, "fourth context: %s", msg);
    printf("new context %s the old one's address\n", (const void *)ctx == old ? "at" : "not at");
    pthread_barrier_wait(&bar);
    pthread_join(t4, NULL);
    CHECK(ra.seen[0] == '\0', "another thread read its error on a destroyed context from a "
          "new one: '%s'", ra.seen);
    pthread_barrier_destroy(&bar);
    if (ctx) two_contexts(ctx, &cfg);
    if (ctx) edges(ctx);
    es_context_destroy(&ctx);
  }
  return es_test_done("test_pipeline_errors");
}
