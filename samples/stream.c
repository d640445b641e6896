/*
 * stream.c - the streaming interface of libentropy-stream: a producer thread acquires
 * frames from the stream's pool, fills them and pushes them; the main thread pulls the
 * results in push order, prints a line of statistics per frame and gives each frame back.
 * Memory stays bounded by the pool (cfg.queue frames) however many frames go through.
 *
 *   sample-stream [FRAMES [WIDTH HEIGHT]]     (default 100 frames of 320 x 240)
 *
 * The frames are generated: a disc of noise that moves across a flat background.
 * Uses only the public header.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "entropy_stream.h"
#include "sample_args.h"

typedef struct producer {
  es_stream *s;
  int frames, w, h;
  int rc; /* how the producer ended */
} producer;

static void *produce(void *arg) {
  producer *p = arg;
  uint32_t seed = 1;
  p->rc = ES_OK;
  for (int i = 0; i < p->frames; i++) {
    es_frame *f;
    int rc = es_stream_acquire(p->s, &f);
    if (rc == ES_OK) rc = es_stream_reserve(p->s, f, p->w, p->h, 8);
    if (rc) {
      p->rc = rc;
      es_stream_abort(p->s); /* wakes the consumer */
      return NULL;
    }
    int cx = (int)((long long)i * p->w / (p->frames > 1 ? p->frames : 1)), cy = p->h / 2;
    int r = p->h / 4;
    for (int y = 0; y < p->h; y++) {
      uint8_t *row = (uint8_t *)f->data + (size_t)y * f->stride;
      for (int x = 0; x < p->w; x++) {
        seed = seed * 1664525u + 1013904223u;
        int in = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r;
        row[x] = in ? (uint8_t)(seed >> 24) : 100;
      }
    }
    f->pts = i;
    f->pts_seconds = i / 25.0;
    rc = es_stream_push(p->s, f);
    if (rc) {
      p->rc = rc;
      es_stream_abort(p->s);
      return NULL;
    }
  }
  p->rc = es_stream_finish(p->s);
  return NULL;
}

int main(int argc, char **argv) {
  int frames = 100, w = 320, h = 240;
  char msg[256];
  es_context *ctx = NULL;
  es_stream *s = NULL;
  int ret = 1, rc;
  if (argc == 3 || argc > 4 || (argc > 1 && !arg_int(argv[1], 1, INT_MAX, &frames)) ||
      (argc > 3 && !(arg_int(argv[2], 1, INT_MAX, &w) && arg_int(argv[3], 1, INT_MAX, &h)))) {
    fprintf(stderr, "usage: sample-stream [FRAMES [WIDTH HEIGHT]] (each >= 1)\n");
    return 1;
  }

  es_config cfg;
  es_config_default(&cfg);
  cfg.queue = 6;
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  if (rc) {
    fprintf(stderr, "sample-stream: %s\n", msg);
    return es_exit_code(rc);
  }
  /* Statistics only: no map is copied back. Buffers grow on the first reserve. */
  es_stream_config sc = {0};
  sc.want_stats = 1;
  sc.render.format = ES_PIX_NONE;
  rc = es_stream_open(ctx, &sc, &s);
  if (rc) {
    fprintf(stderr, "sample-stream: %s\n", es_context_error(ctx));
    ret = es_exit_code(rc);
    goto end;
  }

  producer p = {s, frames, w, h, ES_OK};
  pthread_t t;
  if (pthread_create(&t, NULL, produce, &p) != 0) {
    fprintf(stderr, "sample-stream: cannot start the producer\n");
    goto end;
  }
  printf("frame,pts_s,mean,std,max,device\n");
  int failed = 0;
  for (;;) {
    es_frame *f;
    rc = es_stream_pull(s, &f);
    if (rc == ES_ERR_EOF) break; /* finished and drained: flow, not failure */
    if (rc) break;
    if (f->status == ES_OK)
      printf("%lld,%.2f,%.4f,%.4f,%.4f,%s\n", (long long)f->index, f->pts_seconds, f->stats.mean,
             f->stats.std, f->stats.max, f->device < 0 ? "cpu" : "gpu");
    else
      failed++;
    es_stream_release(s, f);
  }
  pthread_join(t, NULL);
  if (rc != ES_ERR_EOF || p.rc != ES_OK) {
    /* A producer that failed aborted the stream: its error is the cause, not the pull's
     * ES_ERR_INTERRUPTED. */
    fprintf(stderr, "sample-stream: %s\n", es_context_error(ctx));
    ret = es_exit_code(p.rc != ES_OK ? p.rc : rc);
    goto end;
  }
  if (failed) fprintf(stderr, "sample-stream: %d frame(s) failed\n", failed);
  ret = failed ? 4 : 0;
end:
  es_stream_destroy(&s);
  es_context_destroy(&ctx);
  return ret;
}
