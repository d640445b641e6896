/*
 * test_pipeline_compute_device.c - es_compute_device, the one-shot on GPU memory (issue
 * 33: the Python module hands it CuPy arrays). Everywhere: a context with no GPU (device
 * cpu, or a library without CUDA, or no GPU visible) refuses it with ES_ERR_DEVICE and a
 * message naming the GPU, never reads the pointers (the CPU cannot read device memory);
 * bad geometry is ES_ERR_USAGE as es_compute's; an output over the input is refused (no
 * host-side copy). Where a GPU opens: on page-locked host memory (es_host_pin; the same
 * direct path device memory takes) it gives es_compute's bits and statistics; an ordinal
 * the context does not use is refused. The device-memory case itself runs in
 * python/tests (CuPy) on the GPU machine.
 */
#include "entropy_stream.h"
#include "es_test.h"

static es_context *context(int device, char *msg, size_t len) {
  es_config c;
  es_config_default(&c);
  c.device = device;
  c.verbose = 0;
  c.params.window = 9;
  c.params.levels = 64;
  es_context *ctx = NULL;
  if (es_context_create(&ctx, &c, msg, len) != ES_OK) return NULL;
  return ctx;
}

int main(void) {
  char msg[256];
  const int w = 203, h = 117;
  uint8_t *px = malloc((size_t)w * h);
  float *map = malloc(sizeof(float) * (size_t)w * h), *ref = malloc(sizeof(float) * (size_t)w * h);
  es_context *cpu = NULL, *gpu = NULL;
  if (!px || !map || !ref) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  es_test_seed("test_pipeline_compute_device");
  for (size_t i = 0; i < (size_t)w * h; i++) px[i] = (uint8_t)(es_test_rand() >> 56) & 0x3f;
  es_image img = {px, w, h, (size_t)w, 8};

  cpu = context(ES_DEVICE_CPU, msg, sizeof msg);
  CHECK(cpu != NULL, "cpu context: %s", msg);
  if (cpu) {
    /* Pointers the CPU must not touch: refused before any read. */
    es_image bad = {(const void *)(uintptr_t)0x10, w, h, (size_t)w, 8};
    int rc = es_compute_device(cpu, 0, &bad, (float *)(uintptr_t)0x100000, (size_t)w, NULL);
    CHECK(rc == ES_ERR_DEVICE, "device cpu context: %d", rc);
    CHECK(strstr(es_context_error(cpu), "GPU 0") && strstr(es_context_error(cpu), "device cpu"),
          "message: %s", es_context_error(cpu));
    es_image empty = {px, 0, h, (size_t)w, 8};
    rc = es_compute_device(cpu, 0, &empty, map, (size_t)w, NULL);
    CHECK(rc == ES_ERR_USAGE, "empty image: %d", rc);
    rc = es_compute_device(cpu, 0, &img, map, (size_t)w - 1, NULL);
    CHECK(rc == ES_ERR_USAGE && strstr(es_context_error(cpu), "stride"), "short map stride: %d %s",
          rc, es_context_error(cpu));
    rc = es_compute_device(cpu, 0, &img, (float *)px, (size_t)w, NULL);
    CHECK(rc == ES_ERR_USAGE && strstr(es_context_error(cpu), "overlaps the input"),
          "map over the input: %d %s", rc, es_context_error(cpu));
    CHECK(es_compute_device(NULL, 0, &img, map, (size_t)w, NULL) == ES_ERR_USAGE, "NULL ctx");
    CHECK(es_compute_device(cpu, 0, NULL, map, (size_t)w, NULL) == ES_ERR_USAGE, "NULL image");
    CHECK(es_compute(cpu, &img, ref, (size_t)w, NULL, NULL, NULL) == ES_OK, "cpu: %s",
          es_context_error(cpu));
  }

  gpu = context(ES_DEVICE_GPU, msg, sizeof msg);
  if (!gpu) {
    printf("test_pipeline_compute_device: no GPU (%s): the GPU half not run\n", msg);
  } else if (cpu) {
    int pinned_in = es_host_pin(px, (size_t)w * h), pinned_out = es_host_pin(map, sizeof(float) * (size_t)w * h);
    es_stats st, st_ref;
    memset(map, 0xff, sizeof(float) * (size_t)w * h);
    int rc = es_compute_device(gpu, 0, &img, map, (size_t)w, &st);
    CHECK(rc == ES_OK, "GPU 0: %s", es_context_error(gpu));
    CHECK(memcmp(map, ref, sizeof(float) * (size_t)w * h) == 0, "GPU map differs from the CPU's");
    CHECK(es_compute(cpu, &img, NULL, 0, &st_ref, NULL, NULL) == ES_OK, "cpu stats");
    CHECK(st.mean == st_ref.mean && st.max == st_ref.max && st.global_entropy == st_ref.global_entropy &&
              memcmp(st.hist, st_ref.hist, sizeof(uint64_t) * (size_t)st.bins) == 0,
          "GPU stats differ from the CPU's");
    rc = es_compute_device(gpu, ES_MAX_GPUS + 3, &img, map, (size_t)w, NULL);
    CHECK(rc == ES_ERR_DEVICE && strstr(es_context_error(gpu), "not a GPU this context"),
          "an ordinal not in the context: %d %s", rc, es_context_error(gpu));
    if (pinned_in) es_host_unpin(px);
    if (pinned_out) es_host_unpin(map);
  }
  es_context_destroy(&gpu);
  es_context_destroy(&cpu);
  free(px);
  free(map);
  free(ref);
  return es_test_done("test_pipeline_compute_device");
}
