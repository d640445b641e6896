/*
 * gpu_stub.c - the CUDA engine interface when the library is built without CUDA: no
 * devices, every device call fails with ES_ERR_DEVICE, and host "pinned" memory is malloc.
 * Keeps the rest of the library (pipeline, tools, tests) free of #ifdefs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "es_gpu.h"

static int stub_fail(char *msg, size_t msglen) {
  if (msg && msglen) snprintf(msg, msglen, "CUDA: not built");
  return ES_ERR_DEVICE;
}

int es_gpu_built(void) { return 0; }
int es_gpu_device_count(void) { return 0; }

int es_gpu_describe(int device, char *buf, size_t len) {
  (void)device;
  if (buf && len) snprintf(buf, len, "CUDA: not built");
  return ES_ERR_DEVICE;
}

int es_gpu_versions(char *buf, size_t len) {
  if (buf && len) snprintf(buf, len, "CUDA: not built");
  return ES_OK;
}

void *es_gpu_host_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void es_gpu_host_free(void *p) { free(p); }
int es_gpu_host_register(void *p, size_t bytes) {
  (void)p;
  (void)bytes;
  return 0;
}
void es_gpu_host_unregister(void *p) { (void)p; }
int es_gpu_is_pinned(const void *p) {
  (void)p;
  return 0;
}
int es_gpu_context_active(int device) {
  (void)device;
  return -1;
}

int es_gpu_set_blocking_sync(int device) {
  (void)device;
  return -1;
}
int es_gpu_worker_create(es_gpu_worker **out, int device, char *msg, size_t msglen) {
  (void)device;
  if (out) *out = NULL;
  return stub_fail(msg, msglen);
}
int es_gpu_worker_create_cold(es_gpu_worker **out, int device, char *msg, size_t msglen) {
  (void)device;
  if (out) *out = NULL;
  return stub_fail(msg, msglen);
}
void es_gpu_worker_destroy(es_gpu_worker **w) {
  if (w) *w = NULL;
}
int es_gpu_worker_device(const es_gpu_worker *w) {
  (void)w;
  return -1;
}

int es_gpu_run(es_gpu_worker *w, const es_job *job, char *msg, size_t msglen) {
  (void)w;
  (void)job;
  return stub_fail(msg, msglen);
}

int es_gpu_split_open(es_gpu_split **out, es_gpu_worker **ws, int n, const es_job *job,
                      char *msg, size_t msglen) {
  (void)ws;
  (void)n;
  (void)job;
  if (out) *out = NULL;
  return stub_fail(msg, msglen);
}
int es_gpu_split_ranges(const es_gpu_split *s) {
  (void)s;
  return 0;
}
es_gpu_worker *es_gpu_split_worker(const es_gpu_split *s, int i) {
  (void)s;
  (void)i;
  return NULL;
}
int es_gpu_split_compute(es_gpu_split *s, int i, int copy_threads, char *msg, size_t msglen) {
  (void)s;
  (void)i;
  (void)copy_threads;
  return stub_fail(msg, msglen);
}
int es_gpu_split_gather(es_gpu_split *s) {
  (void)s;
  return 0;
}
int es_gpu_split_render(es_gpu_split *s, int i, int copy_threads, char *msg, size_t msglen) {
  (void)s;
  (void)i;
  (void)copy_threads;
  return stub_fail(msg, msglen);
}
void es_gpu_split_close(es_gpu_split **s) {
  if (s) *s = NULL;
}
/* No worker exists without CUDA: nothing to tie to. */
void es_gpu_worker_attach(es_gpu_worker *w, void *data, void (*done)(void *)) {
  (void)w;
  (void)data;
  (void)done;
}
void *es_gpu_worker_attached(const es_gpu_worker *w) {
  (void)w;
  return NULL;
}

int es_gpu_naive(es_gpu_worker *w, const es_image *img, const es_params *p, float *out,
                 size_t out_stride, float *kernel_ms, char *msg, size_t msglen) {
  (void)w;
  (void)img;
  (void)p;
  (void)out;
  (void)out_stride;
  if (kernel_ms) *kernel_ms = 0.0f;
  return stub_fail(msg, msglen);
}

int es_gpu_bench_kernel(es_gpu_worker *w, const es_job *job, int reps, float *ms, char *msg,
                        size_t msglen) {
  (void)w;
  (void)job;
  (void)reps;
  (void)ms;
  return stub_fail(msg, msglen);
}

int es_gpu_bench_pcie(int device, size_t bytes, float *h2d_gbs, float *d2h_gbs, char *msg,
                      size_t msglen) {
  (void)device;
  (void)bytes;
  if (h2d_gbs) *h2d_gbs = 0.0f;
  if (d2h_gbs) *d2h_gbs = 0.0f;
  return stub_fail(msg, msglen);
}

int es_gpu_bench_pcie_multi(const int *devices, int n, size_t bytes, float *h2d_gbs, float *d2h_gbs,
                            char *msg, size_t msglen) {
  (void)devices;
  (void)n;
  (void)bytes;
  if (h2d_gbs) *h2d_gbs = 0.0f;
  if (d2h_gbs) *d2h_gbs = 0.0f;
  return stub_fail(msg, msglen);
}
