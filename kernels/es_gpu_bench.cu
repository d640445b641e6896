/*
 * es_gpu_bench.cu - the CUDA engine's benchmark entry points: es_gpu_bench_kernel (a run's
 * kernels again, timed by events), es_gpu_bench_pcie and es_gpu_bench_pcie_multi (pinned
 * copy bandwidth of one GPU, of several at once). The worker and the range functions they
 * reuse: es_gpu_internal.cuh, es_gpu.cu.
 */
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "es_gpu.h"
#include "es_gpu_internal.cuh"
#include "es_kernels.h"

/* Waits until the host sets *flag (pinned, mapped): es_gpu_bench_kernel's ES_BENCH_GATE. */
__global__ void k_gate(const volatile unsigned int *flag) {
  while (*flag == 0u) __nanosleep(1000);
}

extern "C" int es_gpu_bench_kernel(es_gpu_worker *w, const es_job *job, int reps, float *ms,
                                   char *msg, size_t msglen) {
  int rc = es_job_check(job, msg, msglen), dev = w ? w->device : -1;
  es_range R;
  unsigned int *dg = NULL; /* ES_BENCH_GATE: the gate's device address */
  /* The end event is recorded inside range_compute, before the host's waits, unless a
   * rendering follows (it needs the range's statistics on the host first). */
  const int inner = job->render.format == ES_PIX_NONE;
  /* ES_BENCH_GATE=1: the GPU starts a repetition only once the host has queued all of it, so
   * the events time the device's work alone, without the host's launch calls between them
   * (a diagnostic: the default times both, as a caller sees them). */
  const int gate = gpu_env()->bench_gate;
  if (rc) return rc;
  if (job->in.width != w->last_w || job->in.height != w->last_h ||
      job->in.depth != w->last_depth || w->last_row0 != 0 || w->last_row1 != job->in.height) {
    if (msg && msglen)
      snprintf(msg, msglen, "GPU %d: bench: run es_gpu_run on this size first", w->device);
    return ES_ERR_USAGE;
  }
  memset(&R, 0, sizeof R);
  R.row0 = 0;
  R.row1 = job->in.height;
  range_plan(&R, job, w);
  if (R.in0 != w->last_in0 || R.in1 != w->last_in1 ||
      w->cap_lev < R.lpitch * (size_t)(job->in.height + 2 * R.r) * (size_t)R.lt ||
      (R.hl == ES_HL_GLOBAL && !w->d_ghist)) {
    if (msg && msglen)
      snprintf(msg, msglen, "GPU %d: bench: run es_gpu_run with these parameters first", w->device);
    return ES_ERR_USAGE;
  }
  ES_CK(cudaSetDevice(w->device));
  if (gate) {
    if (!w->gate) {
      void *g = NULL;
      ES_CK(cudaHostAlloc(&g, sizeof(unsigned int), cudaHostAllocMapped));
      w->gate = (volatile unsigned int *)g;
    }
    ES_CK(cudaHostGetDevicePointer((void **)&dg, (void *)w->gate, 0));
  }
  for (int i = 0; i < reps; i++) {
    if (gate) {
      *w->gate = 0u;
      k_gate<<<1, 1, 0, w->s_comp>>>(dg);
      ES_CKL("k_gate");
      w->gate_armed = 1;
    }
    ES_CK(cudaEventRecord(w->ev_t0, w->s_comp));
    rc = range_compute(w, &R, job, 1, inner ? w->ev_t1 : NULL, msg, msglen);
    if (rc) goto end;
    if (!inner) {
      double lo, inv;
      es_render_range(&job->params, &job->render, R.hmin, R.hmax, &lo, &inv);
      rc = range_render(w, &R, job, lo, inv, 1, msg, msglen);
      if (rc) goto end;
    }
    if (!inner) ES_CK(cudaEventRecord(w->ev_t1, w->s_comp));
    ES_CK(cudaEventSynchronize(w->ev_t1));
    ES_CK(cudaEventElapsedTime(&ms[i], w->ev_t0, w->ev_t1));
  }
  /* The last repetition's map, for the caller's correctness check beside the times. */
  if (job->map && reps > 0)
    ES_CK(cudaMemcpy2D(job->map, job->map_stride * 4, w->d_map, (size_t)job->in.width * 4,
                       (size_t)job->in.width * 4, (size_t)job->in.height,
                       cudaMemcpyDeviceToHost));
end:
  gate_release(w); /* an error before range_compute raised it: do not leave k_gate waiting */
  return rc;
}

extern "C" int es_gpu_bench_pcie(int device, size_t bytes, float *h2d_gbs, float *d2h_gbs,
                                 char *msg, size_t msglen) {
  int rc = ES_OK, dev = device;
  void *h = NULL, *d = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  float best_up = 1e30f, best_dn = 1e30f;
  ES_CK(cudaSetDevice(device));
  ES_CK(cudaMallocHost(&h, bytes));
  ES_CK(cudaMalloc(&d, bytes));
  memset(h, 1, bytes);
  ES_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ES_CK(cudaEventCreate(&e0));
  ES_CK(cudaEventCreate(&e1));
  for (int i = 0; i < 6; i++) { /* the first of each is a warm-up */
    float t;
    ES_CK(cudaEventRecord(e0, s));
    ES_CK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
    ES_CK(cudaEventRecord(e1, s));
    ES_CK(cudaEventSynchronize(e1));
    ES_CK(cudaEventElapsedTime(&t, e0, e1));
    if (i && t < best_up) best_up = t;
    ES_CK(cudaEventRecord(e0, s));
    ES_CK(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s));
    ES_CK(cudaEventRecord(e1, s));
    ES_CK(cudaEventSynchronize(e1));
    ES_CK(cudaEventElapsedTime(&t, e0, e1));
    if (i && t < best_dn) best_dn = t;
  }
  if (h2d_gbs) *h2d_gbs = (float)((double)bytes / 1e9 / (best_up / 1e3));
  if (d2h_gbs) *d2h_gbs = (float)((double)bytes / 1e9 / (best_dn / 1e3));
end:
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  if (d) cudaFree(d);
  if (h) cudaFreeHost(h);
  return rc;
}

extern "C" int es_gpu_bench_pcie_multi(const int *devices, int n, size_t bytes, float *h2d_gbs,
                                       float *d2h_gbs, char *msg, size_t msglen) {
  int rc = ES_OK, dev = n > 0 ? devices[0] : 0;
  void *h[ES_MAX_GPUS] = {0}, *d[ES_MAX_GPUS] = {0};
  cudaStream_t s[ES_MAX_GPUS] = {0};
  double best[2] = {1e30, 1e30};
  if (n < 1 || n > ES_MAX_GPUS) {
    if (msg && msglen) snprintf(msg, msglen, "GPU: %d devices (1..%d)", n, ES_MAX_GPUS);
    return ES_ERR_USAGE;
  }
  for (int i = 0; i < n; i++) {
    dev = devices[i];
    ES_CK(cudaSetDevice(dev));
    ES_CK(cudaMallocHost(&h[i], bytes));
    ES_CK(cudaMalloc(&d[i], bytes));
    memset(h[i], 1, bytes);
    ES_CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  }
  for (int r = 0; r < 6; r++) { /* the first is a warm-up */
    for (int dir = 0; dir < 2; dir++) {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      for (int i = 0; i < n; i++) {
        dev = devices[i];
        ES_CK(cudaSetDevice(dev));
        if (dir == 0)
          ES_CK(cudaMemcpyAsync(d[i], h[i], bytes, cudaMemcpyHostToDevice, s[i]));
        else
          ES_CK(cudaMemcpyAsync(h[i], d[i], bytes, cudaMemcpyDeviceToHost, s[i]));
      }
      for (int i = 0; i < n; i++) ES_CK(cudaStreamSynchronize(s[i]));
      clock_gettime(CLOCK_MONOTONIC, &t1);
      double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
      if (r && ms < best[dir]) best[dir] = ms;
    }
  }
  if (h2d_gbs) *h2d_gbs = (float)((double)bytes * n / 1e9 / (best[0] / 1e3));
  if (d2h_gbs) *d2h_gbs = (float)((double)bytes * n / 1e9 / (best[1] / 1e3));
end:
  for (int i = 0; i < n; i++) {
    cudaSetDevice(devices[i]);
    if (s[i]) cudaStreamDestroy(s[i]);
    if (d[i]) cudaFree(d[i]);
    if (h[i]) cudaFreeHost(h[i]);
  }
  return rc;
}
