/*
 * test_pipeline_api.c - the public header used as a third-party program would use it, where
 * it went wrong: frames handed to a stream they do not belong to; the buffer pointers of an
 * es_frame (fields a caller can write) taken for the stream's own; NULL arguments.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "entropy_stream.h"
#include "es_test.h"

static es_context *cpu_context(int queue) {
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_CPU;
  c.queue = queue;
  c.threads = 1;
  c.verbose = 0;
  es_context *ctx = NULL;
  char msg[200];
  int rc = es_context_create(&ctx, &c, msg, sizeof msg);
  CHECK(rc == ES_OK, "create: %s", msg);
  return ctx;
}

/* A frame of one stream pushed, reserved or released on another, and an es_frame of the
 * caller's own: each refused (ES_ERR_USAGE; a release ignored), the stream unharmed. The
 * library once took them: the other stream numbered and computed a frame of a pool not its
 * own (its producer then could not push it), and a caller's es_frame had the slot's state
 * read past its end (ASan: heap-buffer-overflow). */
static void test_foreign_frames(void) {
  es_context *ctx = cpu_context(2);
  if (!ctx) return;
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  es_stream *s1 = NULL, *s2 = NULL;
  CHECK(es_stream_open(ctx, &sc, &s1) == ES_OK && es_stream_open(ctx, &sc, &s2) == ES_OK,
        "open: %s", es_context_error(ctx));
  if (!s1 || !s2) goto end;
  es_frame *f = NULL, *g = NULL;
  CHECK(es_stream_acquire(s1, &f) == ES_OK && es_stream_reserve(s1, f, 8, 6, 8) == ES_OK,
        "acquire");
  memset(f->data, 9, 48);
  int rc = es_stream_push(s2, f);
  CHECK(rc == ES_ERR_USAGE, "push into another stream: %d", rc);
  CHECK(strstr(es_context_error(ctx), "not from this stream"), "message: %s",
        es_context_error(ctx));
  rc = es_stream_reserve(s2, f, 8, 6, 8);
  CHECK(rc == ES_ERR_USAGE, "reserve in another stream: %d", rc);
  es_stream_release(s2, f); /* ignored */
  CHECK(es_stream_push(s1, f) == ES_OK, "push into its own stream: %s", es_context_error(ctx));
  CHECK(es_stream_finish(s1) == ES_OK && es_stream_finish(s2) == ES_OK, "finish");
  CHECK(es_stream_pull(s1, &g) == ES_OK && g == f && g->index == 0 && g->status == ES_OK &&
            g->map[0] == 0.0f,
        "pull from its own stream");
  CHECK(es_stream_pull(s2, &g) == ES_ERR_EOF, "the other stream got a frame");
  if (f) es_stream_release(s1, f);

  /* An es_frame of the caller's own (heap, so that ASan sees a read past it). */
  es_frame *mine = calloc(1, sizeof *mine);
  uint8_t px[16] = {0};
  if (mine) {
    mine->width = mine->height = 4;
    mine->depth = 8;
    mine->stride = 4;
    mine->data = px;
    CHECK(es_stream_push(s1, mine) == ES_ERR_USAGE, "push of a caller's es_frame");
    CHECK(es_stream_reserve(s1, mine, 4, 4, 8) == ES_ERR_USAGE, "reserve of a caller's es_frame");
    es_stream_release(s1, mine);
    /* Inside the pool, but not at a frame. */
    es_frame *h = NULL;
    CHECK(es_stream_acquire(s1, &h) == ES_OK, "acquire");
    if (h) {
      CHECK(es_stream_push(s1, (es_frame *)((char *)h + 8)) == ES_ERR_USAGE,
            "push of a pointer into a frame");
      es_stream_release(s1, h);
    }
    free(mine);
  }
end:
  es_stream_destroy(&s1);
  es_stream_destroy(&s2);
  es_context_destroy(&ctx);
}

/* The pointers in an es_frame are fields the caller can write. A producer that lends its
 * samples and sets data to NULL (it has nothing to fill), a consumer that clears map, or a
 * producer that points data at memory of its own: the stream must keep its buffers. The
 * library kept them only in those fields: after a lent frame with data NULL, a reserve of
 * that slot returned ES_OK with data still NULL (the caller then wrote through NULL); after
 * a consumer cleared map, the next frame of the slot came back without one; a caller's own
 * data was computed and then freed by es_stream_destroy (ASan: double free; the stream's
 * buffer leaked). */
static int lend_returned;
static void lend_back(void *arg) {
  free(arg);
  lend_returned++;
}

static void test_frame_pointers(void) {
  es_context *ctx = cpu_context(1); /* one slot: every frame is the same one */
  if (!ctx) return;
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  sc.want_map = 1;
  es_render_default(&sc.render);
  sc.render.format = ES_PIX_GRAY8;
  es_stream *s = NULL;
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open: %s", es_context_error(ctx));
  if (!s) goto end;
  es_frame *f = NULL, *g = NULL;
  /* 1: copied, so the slot has an input buffer. */
  CHECK(es_stream_acquire(s, &f) == ES_OK && es_stream_reserve(s, f, 8, 8, 8) == ES_OK,
        "acquire 1");
  if (!f || !f->data) goto end;
  memset(f->data, 1, 64);
  CHECK(es_stream_push(s, f) == ES_OK && es_stream_pull(s, &g) == ES_OK && g == f, "frame 1");
  /* The consumer clears what it was given. */
  g->map = NULL;
  g->pix.plane[0] = NULL;
  es_stream_release(s, g);
  /* 2: lent; data set to NULL by the producer. */
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire 2");
  uint8_t *lent = malloc(64);
  if (!lent) goto end;
  for (int i = 0; i < 64; i++)
    lent[i] = (uint8_t)(i * 37);
  f->width = f->height = 8;
  f->depth = 8;
  f->stride = 8;
  f->lend = lent;
  f->lend_release = lend_back;
  f->lend_arg = lent;
  f->data = NULL;
  CHECK(es_stream_push(s, f) == ES_OK, "push lent: %s", es_context_error(ctx));
  CHECK(es_stream_pull(s, &g) == ES_OK && g == f && g->status == ES_OK, "pull lent");
  CHECK(g->map && g->pix.plane[0], "frame 2 came back without its map (%p) or plane (%p)",
        (void *)g->map, (void *)g->pix.plane[0]);
  es_stream_release(s, g);
  CHECK(lend_returned == 1, "lent buffer given back %d times", lend_returned);
  /* 3: copied again: the reserve must give a buffer. */
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire 3");
  CHECK(es_stream_reserve(s, f, 8, 8, 8) == ES_OK && f->data, "reserve after a lent frame: data %p",
        f->data);
  if (f->data) {
    memset(f->data, 5, 64);
    CHECK(es_stream_push(s, f) == ES_OK && es_stream_pull(s, &g) == ES_OK && g == f, "frame 3");
    CHECK(g->map && g->map[0] == 0.0f, "frame 3 map");
  }
  es_stream_release(s, f);
  /* 4: data pointed at memory of the caller's own: refused (lend is the way to do that). */
  CHECK(es_stream_acquire(s, &f) == ES_OK, "acquire 4");
  uint8_t *own = malloc(64);
  if (own) {
    memset(own, 3, 64);
    f->width = f->height = 8;
    f->depth = 8;
    f->stride = 8;
    f->data = own;
    CHECK(es_stream_push(s, f) == ES_ERR_USAGE, "push of the caller's own data");
    CHECK(strstr(es_context_error(ctx), "es_frame.lend"), "message: %s", es_context_error(ctx));
    es_stream_release(s, f); /* back to the pool: the stream must not keep `own` */
  }
  es_stream_destroy(&s);
  free(own); /* still the caller's */
end:
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
}

/* Every function with NULL pointers: the documented status, never a crash. es_params_default,
 * es_config_default and es_render_default wrote through NULL, es_config_queue read it
 * (SIGSEGV); NULL now leaves them nothing to do, and es_config_queue answers for the
 * defaults (as es_context_create takes a NULL configuration for them). */
static void test_null_arguments(void) {
  es_params_default(NULL);
  es_config_default(NULL);
  es_render_default(NULL);
  es_config def;
  es_config_default(&def);
  CHECK(es_config_queue(NULL) == es_config_queue(&def), "es_config_queue(NULL) %d, defaults %d",
        es_config_queue(NULL), es_config_queue(&def));
  char msg[100];
  CHECK(es_params_check(NULL, 8, msg, sizeof msg) == ES_ERR_USAGE, "es_params_check");
  CHECK(es_params_hmax(NULL) == 0.0, "es_params_hmax");
  CHECK(es_context_create(NULL, NULL, msg, sizeof msg) == ES_ERR_USAGE, "create");
  CHECK(es_context_error(NULL) && es_context_gpu_count(NULL) == 0 &&
            es_context_gpus_open(NULL) == 0 && !es_context_config(NULL) &&
            es_context_retries(NULL) == 0,
        "context queries");
  es_context_destroy(NULL);
  CHECK(es_compute(NULL, NULL, NULL, 0, NULL, NULL, NULL) == ES_ERR_USAGE, "compute");
  es_stream *s = NULL;
  es_frame *f = NULL;
  CHECK(es_stream_open(NULL, NULL, &s) == ES_ERR_USAGE && !s, "open");
  CHECK(es_stream_open(NULL, NULL, NULL) == ES_ERR_USAGE, "open");
  CHECK(es_stream_acquire(NULL, &f) == ES_ERR_USAGE &&
            es_stream_acquire(NULL, NULL) == ES_ERR_USAGE,
        "acquire");
  CHECK(es_stream_reserve(NULL, NULL, 1, 1, 8) == ES_ERR_USAGE, "reserve");
  CHECK(es_stream_push(NULL, NULL) == ES_ERR_USAGE, "push");
  CHECK(es_stream_finish(NULL) == ES_ERR_USAGE, "finish");
  CHECK(es_stream_pull(NULL, &f) == ES_ERR_USAGE && es_stream_pull(NULL, NULL) == ES_ERR_USAGE,
        "pull");
  es_stream_release(NULL, NULL);
  es_stream_abort(NULL);
  es_stream_destroy(NULL);
  es_stream_destroy(&s);
  CHECK(es_version_info(NULL, 0) > 0, "version info");
  CHECK(es_host_pin(NULL, 0) == 0, "pin");
  es_host_unpin(NULL);
  es_context *ctx = cpu_context(1);
  if (!ctx) return;
  es_stream_config sc;
  memset(&sc, 0, sizeof sc);
  CHECK(es_stream_open(ctx, NULL, &s) == ES_ERR_USAGE && !s, "open without a configuration");
  CHECK(es_stream_open(ctx, &sc, &s) == ES_OK, "open");
  CHECK(es_stream_acquire(s, NULL) == ES_ERR_USAGE, "acquire");
  CHECK(es_stream_reserve(s, NULL, 1, 1, 8) == ES_ERR_USAGE, "reserve");
  CHECK(es_stream_push(s, NULL) == ES_ERR_USAGE, "push");
  CHECK(es_stream_pull(s, NULL) == ES_ERR_USAGE, "pull");
  es_stream_release(s, NULL);
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
}

int main(void) {
  es_test_seed("test_pipeline_api");
  test_foreign_frames();
  test_frame_pointers();
  test_null_arguments();
  return es_test_done("test_pipeline_api");
}
