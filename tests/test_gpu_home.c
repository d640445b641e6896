/*
 * test_gpu_home.c - a GPU left out of the context's list gets no CUDA context (needs 2 GPUs;
 * exit 77 otherwise). A context on GPU 1 only; then a thread that has no CUDA context of its
 * own (as the CLI's decoder thread, or a caller's thread) page-locks a buffer with
 * es_host_pin, computes from it with es_compute and unpins it. Before, those host-memory
 * calls ran in the thread's default device, GPU 0, whose primary context they created (GPU
 * memory and start-up time spent on a GPU the user excluded with --gpus 1; an exclusive GPU 0
 * in use refused the pinning). Checked with the driver's primary-context state, which creates
 * nothing. The map must equal the CPU engine's, and the buffer must have been page-locked.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_test.h"

enum { W = 997, H = 613 };

typedef struct {
  es_context *ctx;
  uint8_t *buf;
  float *map;
  int pinned, rc;
} job_t;

static void *pin_and_compute(void *arg) {
  job_t *j = arg;
  j->pinned = es_host_pin(j->buf, (size_t)W * H);
  es_image img = {j->buf, W, H, (size_t)W, 8};
  j->rc = es_compute(j->ctx, &img, j->map, (size_t)W, NULL, NULL, NULL);
  if (j->pinned) es_host_unpin(j->buf);
  return NULL;
}

int main(void) {
  es_test_seed("test_gpu_home");
  int ngpu = es_gpu_device_count();
  if (ngpu < 2) {
    printf("test_gpu_home: %d GPU(s) visible, needs 2: skipped\n", ngpu);
    return ES_TEST_SKIP;
  }
  if (es_gpu_context_active(0) != 0) {
    printf("test_gpu_home: GPU 0's context state cannot be read or is already active: skipped\n");
    return ES_TEST_SKIP;
  }
  es_config c;
  es_config_default(&c);
  c.device = ES_DEVICE_GPU;
  c.gpus[0] = 1;
  c.ngpus = 1;
  char msg[256];
  es_context *ctx = NULL;
  CHECK(es_context_create(&ctx, &c, msg, sizeof msg) == ES_OK, "create on GPU 1: %s", msg);
  if (!ctx) return es_test_done("test_gpu_home");

  job_t j = {ctx, malloc((size_t)W * H), malloc(sizeof(float) * (size_t)W * H), 0, -1};
  float *ref = malloc(sizeof(float) * (size_t)W * H);
  for (size_t i = 0; i < (size_t)W * H; i++)
    j.buf[i] = (uint8_t)(es_test_rand() >> 56);
  memset(j.map, 0xff, sizeof(float) * (size_t)W * H);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, pin_and_compute, &j) == 0, "thread");
  pthread_join(th, NULL);
  CHECK(j.pinned == 1, "es_host_pin on a thread without a CUDA context: %d, want 1", j.pinned);
  CHECK(j.rc == ES_OK, "es_compute on GPU 1: %d (%s)", j.rc, es_context_error(ctx));

  es_config cc;
  es_config_default(&cc);
  cc.device = ES_DEVICE_CPU;
  es_context *cpu = NULL;
  CHECK(es_context_create(&cpu, &cc, msg, sizeof msg) == ES_OK, "cpu context: %s", msg);
  es_image img = {j.buf, W, H, (size_t)W, 8};
  CHECK(cpu && es_compute(cpu, &img, ref, (size_t)W, NULL, NULL, NULL) == ES_OK, "cpu compute");
  CHECK(!memcmp(ref, j.map, sizeof(float) * (size_t)W * H), "GPU 1's map differs from the CPU's");
  es_context_destroy(&cpu);

  CHECK(es_gpu_context_active(1) == 1, "GPU 1 (the context's GPU) has no active context: %d",
        es_gpu_context_active(1));
  CHECK(es_gpu_context_active(0) == 0,
        "GPU 0, left out of the context's list, got a CUDA context (state %d): host memory was "
        "pinned, queried or unpinned in its context",
        es_gpu_context_active(0));
  es_context_destroy(&ctx);
  free(j.buf);
  free(j.map);
  free(ref);
  return es_test_done("test_gpu_home");
}
