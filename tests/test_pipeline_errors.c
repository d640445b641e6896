/*
 * test_pipeline_errors.c - threads sharing one context each read back their own error.
 * Two threads call es_compute on one context, failing in different ways at the same time;
 * after every failure each must see its own message in es_context_error (the CLI's batch
 * reports a file's error that way). Also: a thread that got no error sees the context's.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

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

int main(void) {
  es_test_seed("test_pipeline_errors");
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
  return es_test_done("test_pipeline_errors");
}
