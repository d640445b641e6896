/*
 * throughput.c - one-shot versus streaming on the same frames: es_compute called frame
 * after frame (each call uses the device and threads the context picks), then the same
 * frames through es_stream (a producer thread, several workers, results in order). Prints
 * the best of 3 repetitions of each, in frames per second.
 *
 *   sample-throughput [WIDTH HEIGHT FRAMES [QUEUE [THREADS]]]   (default 320 240 400 8 0)
 *
 * The frames are 4 noise images used in turn. Uses only the public header.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under a strict -std=c11 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entropy_stream.h"
#include "sample_args.h"

typedef struct producer {
  es_stream *s;
  int n, w, h;
  const uint8_t *src;
} producer;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *produce(void *arg) {
  producer *p = arg;
  size_t frame = (size_t)p->w * p->h;
  for (int i = 0; i < p->n; i++) {
    es_frame *f;
    if (es_stream_acquire(p->s, &f) || es_stream_reserve(p->s, f, p->w, p->h, 8)) break;
    memcpy(f->data, p->src + (size_t)(i % 4) * frame, frame);
    if (es_stream_push(p->s, f)) break;
  }
  es_stream_finish(p->s);
  return NULL;
}

int main(int argc, char **argv) {
  int w = 320, h = 240, n = 400;
  char msg[256];
  es_config cfg;
  es_config_default(&cfg);
  cfg.queue = 8;
  cfg.threads = 0;
  cfg.verbose = 0;
  if (argc == 2 || argc == 3 || argc > 6 ||
      (argc > 3 && !(arg_int(argv[1], 1, 16384, &w) && arg_int(argv[2], 1, 16384, &h) &&
                     arg_int(argv[3], 1, INT_MAX, &n))) ||
      (argc > 4 && !arg_int(argv[4], 0, 4096, &cfg.queue)) ||
      (argc > 5 && !arg_int(argv[5], 0, 4096, &cfg.threads))) {
    fprintf(stderr, "usage: sample-throughput [WIDTH HEIGHT FRAMES [QUEUE [THREADS]]] (sides "
                    "1..16384, FRAMES >= 1, QUEUE 0..4096 (0: 8), THREADS 0..4096 (0: all "
                    "cores))\n");
    return 1;
  }
  es_context *ctx = NULL;
  int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  if (rc) {
    fprintf(stderr, "sample-throughput: %s\n", msg);
    return es_exit_code(rc);
  }
  size_t frame = (size_t)w * h;
  uint8_t *src = malloc(frame * 4);
  float *map = malloc(frame * sizeof *map);
  if (!src || !map) {
    fprintf(stderr, "sample-throughput: out of memory\n");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  uint32_t seed = 7;
  for (size_t i = 0; i < frame * 4; i++) {
    seed = seed * 1664525u + 1013904223u;
    src[i] = (uint8_t)(seed >> 24);
  }
  double best_one = 1e30, best_stream = 1e30;
  for (int rep = 0; rep < 3 && rc == ES_OK; rep++) {
    es_stats st;
    double t0 = now();
    for (int i = 0; i < n && rc == ES_OK; i++) {
      es_image img = {src + (size_t)(i % 4) * frame, w, h, (size_t)w, 8, NULL, 0}; /* no mask */
      rc = es_compute(ctx, &img, map, (size_t)w, &st, NULL, NULL);
    }
    double t1 = now();
    if (rc) break;

    es_stream_config sc = {0};
    sc.want_map = 1;
    sc.want_stats = 1;
    es_stream *s = NULL;
    rc = es_stream_open(ctx, &sc, &s);
    if (rc) break;
    producer p = {s, n, w, h, src};
    pthread_t t;
    double t2 = now();
    if (pthread_create(&t, NULL, produce, &p) != 0) {
      es_stream_destroy(&s);
      rc = ES_ERR_NOMEM;
      break;
    }
    es_frame *f;
    int got = 0;
    while ((rc = es_stream_pull(s, &f)) == ES_OK) {
      got += f->status == ES_OK;
      es_stream_release(s, f);
    }
    pthread_join(t, NULL);
    double t3 = now();
    es_stream_destroy(&s);
    rc = rc == ES_ERR_EOF && got == n ? ES_OK : ES_ERR_INTERNAL;
    if (t1 - t0 < best_one) best_one = t1 - t0;
    if (t3 - t2 < best_stream) best_stream = t3 - t2;
  }
  if (rc) {
    fprintf(stderr, "sample-throughput: %s\n", es_context_error(ctx));
    goto end;
  }
  printf("%dx%d, %d frames, %d GPU(s), %d CPU threads, queue %d: es_compute %.1f fps, "
         "es_stream %.1f fps\n",
         w, h, n, es_context_gpu_count(ctx), es_context_config(ctx)->threads,
         es_context_config(ctx)->queue, /* cfg.queue 0: the default */
         n / best_one, n / best_stream);
end:
  free(src);
  free(map);
  es_context_destroy(&ctx);
  return es_exit_code(rc);
}
