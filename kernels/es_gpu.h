/*
 * es_gpu.h - C interface of the CUDA engine (the .cu files of kernels/, extern "C").
 * When the project is built without CUDA, kernels/gpu_stub.c provides these functions:
 * es_gpu_device_count() returns 0 and everything else ES_ERR_DEVICE.
 *
 * Threading: an es_gpu_worker belongs to one host thread at a time. Several workers may
 * share a device (each has its own CUDA stream(s) and buffers), which is how copies of one
 * frame overlap the kernel of another.
 */
#ifndef ES_GPU_H
#define ES_GPU_H

#include <stddef.h>

#include "es_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the library was built with CUDA. */
int es_gpu_built(void);
/* Number of visible CUDA devices; 0 when none (or no driver, or built without CUDA). */
int es_gpu_device_count(void);
/* One line: "GPU 0: NVIDIA H100 80GB HBM3, 132 SMs, 79.1 GiB, cc 9.0". */
int es_gpu_describe(int device, char *buf, size_t len);
/* "CUDA runtime 13.0, driver 13.0" or "CUDA: not built". */
int es_gpu_versions(char *buf, size_t len);

/* Page-locked host memory (falls back to malloc when pinning fails or without CUDA). */
void *es_gpu_host_alloc(size_t bytes);
void es_gpu_host_free(void *p);
/* Page-locks existing host memory for every device (1: done, 0: not possible, nothing
 * changed), and undoes it. The stream's pool registers its malloc'd buffers this way once
 * the GPUs are open, so frames can start on the CPU before CUDA is initialised. */
int es_gpu_host_register(void *p, size_t bytes);
void es_gpu_host_unregister(void *p);
/* 1 where p is page-locked host memory CUDA knows (allocated or registered), else 0 (and
 * always 0 without CUDA). */
int es_gpu_is_pinned(const void *p);
/* 1 if GPU device's primary context is active (made by this process), 0 if not, -1 if that
 * cannot be told (no driver). Creates no context. For tests (test_gpu_home). */
int es_gpu_context_active(int device);

/* Makes threads that wait for `device` sleep instead of spinning (CUDA's blocking sync);
 * process-wide for that device, best called before its first worker. 0 on success. */
int es_gpu_set_blocking_sync(int device);

typedef struct es_gpu_worker es_gpu_worker;

/* Creates a worker on `device`: stream(s), events, tables uploaded, and a first warm-up
 * launch, so later calls pay no start-up cost. Device buffers grow on demand and are then
 * reused. msg gets a one-line reason on failure. */
int es_gpu_worker_create(es_gpu_worker **out, int device, char *msg, size_t msglen);
/* The same without the warm-up job, for further workers of a device one warm worker has
 * opened (the context and module are loaded; this worker's buffers grow on its first job). */
int es_gpu_worker_create_cold(es_gpu_worker **out, int device, char *msg, size_t msglen);
void es_gpu_worker_destroy(es_gpu_worker **w);
int es_gpu_worker_device(const es_gpu_worker *w);

/* Runs a job on the worker's device and waits for it: uploads job->in (pageable or pinned
 * host memory), computes, and copies back only what the job asks for (map, stats,
 * rendering). Large images are pipelined in row bands over >= 2 streams. Results are
 * bit-identical to es_cpu_run. On a CUDA error returns ES_ERR_DEVICE with "GPU n: call:
 * error" in msg; the worker remains usable if the device does. */
int es_gpu_run(es_gpu_worker *w, const es_job *job, char *msg, size_t msglen);

/* One job split by rows across n workers (one a device), each range with halos of r rows
 * and pipelined on its own device; output identical to one device. es_gpu_run runs one on
 * its calling thread; pipeline/split_run.c (es_split_run) drives several devices at once
 * from its own threads. In this order:
 * - es_gpu_split_open: checks the job and the workers (as es_gpu_run; float samples are
 *   converted to their levels here), and plans es_gpu_split_ranges(s) ranges (a worker whose
 *   share of rows rounds to none gets none), range i on es_gpu_split_worker(s, i);
 * - es_gpu_split_compute for every range: phase 1 (upload, entropy, map and statistics of
 *   its rows), on any thread; ranges of different workers may run at the same time, each on
 *   its own thread, with copy_threads OpenMP threads for its staging copies (0: the
 *   default);
 * - es_gpu_split_gather, once all succeeded: the job's statistics from the ranges'; returns
 *   1 when the job renders, then es_gpu_split_render for every range (phase 2, as phase 1);
 * - es_gpu_split_close, always (NULL is fine). */
typedef struct es_gpu_split es_gpu_split;
int es_gpu_split_open(es_gpu_split **out, es_gpu_worker **ws, int n, const es_job *job,
                      char *msg, size_t msglen);
int es_gpu_split_ranges(const es_gpu_split *s);
es_gpu_worker *es_gpu_split_worker(const es_gpu_split *s, int i);
int es_gpu_split_compute(es_gpu_split *s, int i, int copy_threads, char *msg, size_t msglen);
int es_gpu_split_gather(es_gpu_split *s);
int es_gpu_split_render(es_gpu_split *s, int i, int copy_threads, char *msg, size_t msglen);
void es_gpu_split_close(es_gpu_split **s);

/* Ties the caller's data to the worker's life: es_gpu_worker_destroy calls done(data) before
 * anything else (the pipeline's host thread of the worker ends there). One slot; NULL done:
 * nothing is called. es_gpu_worker_attached gives the data back (NULL: none). */
void es_gpu_worker_attach(es_gpu_worker *w, void *data, void (*done)(void *));
void *es_gpu_worker_attached(const es_gpu_worker *w);

/* The naive baseline kernel (one thread a pixel, full window rescan, the study's v0),
 * for entropy-bench: time of the kernel alone in *kernel_ms (CUDA events). */
int es_gpu_naive(es_gpu_worker *w, const es_image *img, const es_params *p, float *out,
                 size_t out_stride, float *kernel_ms, char *msg, size_t msglen);

/* For entropy-bench: run the job's kernels only, on input already resident on the device
 * from a previous es_gpu_run of the same size, `reps` times; per-rep device times (CUDA
 * events) into ms[0..reps-1]. Where job->map is set, the last repetition's map is copied
 * into it afterwards (outside the timed region), so callers can check what was timed. */
int es_gpu_bench_kernel(es_gpu_worker *w, const es_job *job, int reps, float *ms, char *msg,
                        size_t msglen);

/* For entropy-bench: the PCIe floor in the same run: pinned host <-> device copies of
 * `bytes` on `device`, best of a few repetitions, in GB/s (10^9 bytes/s). */
int es_gpu_bench_pcie(int device, size_t bytes, float *h2d_gbs, float *d2h_gbs, char *msg,
                      size_t msglen);

/* The same on n devices at once: each copies `bytes` each way, all started together, timed
 * by the host clock from the first start to the last end; best of a few repetitions, as the
 * total over the devices in GB/s. The PCIe floor of an n-GPU job. */
int es_gpu_bench_pcie_multi(const int *devices, int n, size_t bytes, float *h2d_gbs,
                            float *d2h_gbs, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif /* ES_GPU_H */
