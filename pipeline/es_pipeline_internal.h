/*
 * es_pipeline_internal.h - what the pipeline's files (context.c, device.c, stream.c) share:
 * the context struct, the GPU worker pool, the fault injector and the one function that
 * runs a job with its fallbacks (GPU -> other GPU -> CPU). Not installed.
 */
#ifndef ES_PIPELINE_INTERNAL_H
#define ES_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_kernels.h"

/* SPEC.md's default line between CPU and GPU under --device auto (pixels). Not measured at
 * start-up: a measurement would cost every context a GPU warm-up round trip. */
#define ES_DEFAULT_CPU_BELOW 163840
/* es_compute splits an image over several GPUs where es_split_gpus says it pays. */
/* GPU workers (CUDA streams) per device: three, so copies of one job overlap the kernel of
 * another, and a stream of small frames (a 1080p job is ~0.4 ms of copies, kernels and
 * synchronisation) is not bound by the latency of two jobs at a time. */
#define ES_GPU_WORKERS_PER_DEVICE 3
/* A device whose jobs failed this many times in a row is no longer offered work. */
#define ES_GPU_DISABLE_STREAK 3
/* OpenMP threads for one CPU job: at least this many pixels per thread. Measured on the
 * 2-core build machine: a 320x240 frame ran at 414 fps on 1 thread and 141 fps on 2 (fork,
 * barriers and a loaded machine cost more than the band saves); 1920x1080 gained from 2. */
#define ES_CPU_PIXELS_PER_THREAD 262144
#define ES_ERRLEN 512

/* Fault injection for tests (ES_FAULT_INJECT="frames=3,7"): the FIRST attempt of each listed
 * frame index fails with ES_ERR_DEVICE ("injected fault") on whichever worker (GPU or CPU)
 * takes it; the engine then retries it as it would a real GPU error (another GPU, then the
 * CPU; a first attempt on the CPU is retried on the CPU), so the output must equal a clean
 * run's and es_context_retries counts one per fault. For es_compute the index is the
 * 0-based number of the es_compute calls on the context that passed the argument checks;
 * for a stream, the frame index. Each stream has its own copy, so every stream sees the
 * faults. Parsed once, at es_context_create. */
#define ES_FAULT_MAX 256
/* A second key, "gpus=1,2" (with frames= or alone, e.g. "frames=3,gpus=1"), makes EVERY
 * attempt on those GPU ordinals (0..63) fail, as a broken device would: a multi-GPU split
 * that includes one fails, and the device's failures count towards disabling it. */
typedef struct es_fault {
  int n;                            /* immutable after parse */
  int64_t frame[ES_FAULT_MAX];      /* immutable after parse */
  atomic_int fired[ES_FAULT_MAX];   /* set once, by the first attempt of that frame */
  uint64_t gpus;                    /* immutable after parse: bit o = GPU ordinal o broken */
  int nopin;                        /* immutable after parse: a stream's page-locking refused */
  int open_delay_ms;                /* immutable after parse: the background opening waits */
  int bglist;                       /* immutable after parse: a GPU list opens in the
                                     * background without a driver's /proc list */
  int drv_gpus;                     /* immutable after parse: >0, the driver's /proc list is
                                     * taken to hold that many GPUs (es_config_gpus_env) */
} es_fault;
void es_fault_parse(es_fault *f, const char *spec);
void es_fault_copy(es_fault *dst, const es_fault *src);
/* 1 when this attempt of `frame` must fail (and marks it fired). */
int es_fault_take(es_fault *f, int64_t frame);
/* 1 when every attempt on GPU `ordinal` must fail (the gpus= key; f may be NULL). */
int es_fault_gpu(const es_fault *f, int ordinal);

/* One GPU worker of the context's pool. */
typedef struct es_pool_worker {
  es_gpu_worker *w; /* owned by the pool; used by whoever holds busy */
  int gpu;          /* index into ctx->gpu_ordinal (immutable) */
  int busy;         /* guarded by ctx->lock */
} es_pool_worker;

/* "Immutable" below: written once before create returns, or, for the GPU fields under
 * cfg.gpu_background, by the opening thread before it sets gpus_ready; read only after
 * es_ctx_gpus_wait (or es_ctx_gpus_ready returned 1). */
/* Images below this many pixels take the model (a split of them saves under 0.1 ms). */
#define ES_SPLIT_PROBE_MIN_PX (1 << 20)
/* Size classes measured apart: how the copies scale changes with the size (4 x H200: a
 * 42 MB probe ran fastest on four GPUs, 10240^2's 525 MB on two, four being slower than one),
 * so images from ES_SPLIT_LARGE_PX pixels on are measured with a large probe. */
#define ES_SPLIT_CLASSES 2
#define ES_SPLIT_LARGE_PX (32 << 20)

struct es_context {
  es_config cfg;                   /* immutable (defaults filled in; GPU list: see above) */
  int threads;                     /* immutable: resolved CPU thread count (>= 1) */
  int ngpu;                        /* immutable: GPUs in use */
  int gpu_ordinal[ES_MAX_GPUS];    /* immutable: ordinal of each GPU in use, as listed
                                    * (messages, faults, results) */
  int gpu_cuda[ES_MAX_GPUS];       /* immutable: the same GPU's CUDA ordinal in this process
                                    * (differs under cfg.gpus_env) */
  es_pool_worker *workers;         /* immutable array of nworkers; busy under lock */
  int nworkers;                    /* immutable */
  atomic_int gpus_ready;           /* 1 once the GPU fields above are final */
  pthread_cond_t gpus_cond;        /* with lock: broadcast when gpus_ready is set */
  pthread_t gpu_thread;            /* the opening thread (gpu_background) */
  int gpu_thread_started;          /* guarded by lock: set once by es_ctx_gpus_demand */
  int gpu_lazy;                    /* immutable: gpu_background, the GPUs not asked for yet
                                    * at create (es_ctx_gpus_demand opens them) */
  atomic_int gpu_demanded;         /* 1 once es_ctx_gpus_demand ran (CUDA is starting) */
  int gpu_strict;                  /* immutable: GPUs listed (cfg.gpus) and opened in the
                                    * background: one that cannot open fails the work */
  atomic_int gpu_failed;           /* gpu_strict: the opening's failure (an es_status), set
                                    * before gpus_ready; 0 while opening or when opened */
  char gpu_fail_msg[ES_ERRLEN];    /* its message: written before gpu_failed */
  pthread_mutex_t lock;            /* guards busy, fail_streak, err */
  pthread_cond_t worker_free;      /* broadcast when a worker is released */
  int fail_streak[ES_MAX_GPUS];    /* guarded by lock: consecutive failures per GPU */
  atomic_llong retries;            /* jobs retried after a failure (any thread) */
  atomic_llong compute_calls;      /* es_compute call counter (fault injection index) */
  es_fault fault;                  /* faults of es_compute calls */
  char err[ES_ERRLEN];             /* guarded by lock: last error message */
  unsigned long long serial;       /* immutable: unique among the process's contexts (a
                                    * destroyed context's address may be reused) */
  atomic_int refs;                 /* the caller's handle (until es_context_destroy) and one
                                    * per stream not yet destroyed: freed at 0 */
  /* How fast a pageable image moves split over m GPUs on this host, measured once by the
   * first job that could be split (es_split_probe, device.c): the staging copies bound it,
   * and how they scale with the GPU count differs from host to host (BENCHMARKS U1-U3). */
  pthread_mutex_t split_lock;      /* held while measuring; guards the two fields below */
  int split_state[ES_SPLIT_CLASSES]; /* by size class: 0 not measured, 1 measured, -1 failed
                                      * (the model decides) */
  double split_ms_mb[ES_SPLIT_CLASSES][ES_MAX_GPUS + 1]; /* [class][m]: ms a MB moved (in +
                                                           * out) split over m GPUs */
  int split_force;                 /* tests only: > 0 fixes the count (es_split_count) */
};

/* Waits until the context's GPUs are open (at once unless cfg.gpu_background); after it
 * ngpu, gpu_ordinal, workers and cfg.gpus may be read. es_ctx_gpus_ready: the same test
 * without waiting. */
void es_ctx_gpus_wait(const es_context *ctx);
int es_ctx_gpus_ready(const es_context *ctx);
/* cfg.gpu_background: the GPUs open on their thread from the first call here on (work that
 * could use a GPU: a frame of cpu_below pixels or more, a query that waits for the GPUs),
 * not at es_context_create, so a run that never has such work never starts CUDA (cuInit
 * alone took 0.2-1.1 s on the GPU hosts). Returns at once; any thread, any number of
 * times. Nothing to do for other contexts (their GPUs opened at create). */
void es_ctx_gpus_demand(const es_context *ctx);
/* 1 where es_ctx_gpus_demand has run (or the GPUs opened at create). */
int es_ctx_gpus_demanded(const es_context *ctx);
/* GPUs listed in cfg.gpus open in the background as all GPUs do (a list limits which GPUs,
 * not when work starts), where the driver's own list in /proc shows them; a listed GPU that
 * then cannot be opened fails the work, as it failed es_context_create before. Its status
 * (ES_ERR_DEVICE, or ES_ERR_USAGE) and message once the opening failed; ES_OK while it is
 * under way, once it succeeded, and for every other context. Never waits. */
int es_ctx_gpus_failed(const es_context *ctx, char *msg, size_t len);
/* The same after waiting for an opening under way: what a run asks before it commits an
 * output, so that nothing is written where the listed GPUs cannot be had. GPUs never asked
 * for (no work a GPU could take) are not opened: ES_OK. */
int es_ctx_gpus_settle(const es_context *ctx, char *msg, size_t len);

/* One line of the library's messages, to cfg.message or else stderr (es_config). */
void es_ctx_message(const es_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A stream's hold on its context (es_stream_open), and its release (es_stream_destroy): the
 * last release frees a context es_context_destroy was called on. */
void es_ctx_ref(es_context *ctx);
void es_ctx_unref(es_context *ctx);

/* Records a one-line error on the context (thread-safe). */
void es_ctx_set_error(es_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Targets for es_run_job. A value >= 0 is a GPU index (ctx->gpu_ordinal[i]) to try first. */
#define ES_TARGET_ANY_GPU (-1)
#define ES_TARGET_CPU (-2)
#define ES_TARGET_MULTI (-3)

/* Where a frame of `pixels` pixels goes under the context's device policy: ES_TARGET_CPU,
 * ES_TARGET_ANY_GPU, or ES_TARGET_MULTI (es_compute only, allow_multi). */
int es_pick_target(const es_context *ctx, int64_t pixels, int allow_multi);

/* How many of n GPUs one job is split over (1..n; 1: no split), from a model of its time
 * on m GPUs: the kernels' share, the links' transfers and, for pageable buffers, the host's
 * staging copies, plus a fixed cost a GPU. More GPUs are taken only where the model says
 * they save 15% or more against the best smaller count, so a split is never the slower
 * choice by the model's own error. in_pinned / out_pinned: the input, and every output the
 * job brings back (map, rendering planes), are page-locked. Pure arithmetic: the same
 * answer for the same arguments (and the bits never depend on the split). */
int es_split_gpus(const es_job *job, int n, int in_pinned, int out_pinned);
/* The same, the buffers' page-locking asked of CUDA (es_gpu_is_pinned). */
int es_split_gpus_for(const es_job *job, int n);
/* The count es_compute uses: with a pageable map (or rendering), from the rates this host
 * showed when the context first split a pageable image (measured then, once: a few tens of
 * ms), the counts that were slower never taken; else (all page-locked, or the measurement
 * failed) es_split_gpus_for. ctx->split_force > 0 overrides it (tests). */
int es_split_count(es_context *ctx, const es_job *job);
/* Folds the time (ms, host to host) a job es_split_count counted for took on m GPUs into
 * the rate of its size class, where that class was measured. */
void es_split_observe(es_context *ctx, const es_job *job, int m, double ms);
/* The rule it folds by, on rates ms_mb[1..] (entropy-bench's auto rows take it too): half
 * the old rate of m GPUs, half the one that ms shows. */
void es_split_fold(double *ms_mb, const es_job *job, int m, double ms);
/* 1 where es_split_count takes measured rates for the job: a pageable output (map or
 * rendering) of ES_SPLIT_PROBE_MIN_PX pixels or more. */
int es_split_measurable(const es_job *job);
/* es_split_count's rule on given rates (ms_mb[m], m = 1..n, as measured): exposed for
 * test_pipeline_split. */
int es_split_gpus_measured(const es_job *job, int n, const double *ms_mb);
/* The measurement: ms a MB (in + out) of a pageable probe image of size class cls split
 * over m = 1..n of the workers ws (one a GPU) into ms_mb[m]. For es_split_count, and entropy-bench's auto rows. */
int es_split_probe_workers(es_gpu_worker **ws, int n, int cls, double *ms_mb, char *msg,
                           size_t len);
/* The size class of a job (0 below ES_SPLIT_LARGE_PX pixels, else 1). */
int es_split_class(const es_job *job);
/* The model's time (ms) of the job on m GPUs, for tests and the benchmark's notes. */
double es_split_model_ms(const es_job *job, int m, int in_pinned, int out_pinned);

/* Runs one job split by rows across n workers (one a device) at once (split_run.c): range 0
 * on the calling thread, the others on their workers' host threads; output identical to one
 * device (es_gpu_run). The first range's error (by range order) in msg. */
int es_split_run(es_gpu_worker **ws, int n, const es_job *job, char *msg, size_t msglen);

/* OpenMP threads for a CPU job of `pixels` pixels with at most `max_threads`. */
int es_cpu_threads_for(int64_t pixels, int max_threads);

/* Runs a checked job at `target` and, when a device fails, again on another GPU and then
 * on the CPU (at most cpu_threads OpenMP threads there, es_cpu_threads_for). USAGE/INPUT
 * errors are not retried.
 * *device: -1 (CPU) or the GPU ordinal that produced the result. frame/fault: fault
 * injection (fault may be NULL). Thread-safe. */
int es_run_job(es_context *ctx, const es_job *job, int target, int cpu_threads, int64_t frame,
               es_fault *fault, int *device, char *msg, size_t msglen);

/* For tests: the most frames that were out of a stream's pool at the same time. */
int es_stream_max_live(es_stream *s);
/* For tests: how many times a stream asked to page-lock one of its buffers. */
int es_stream_pin_asks(es_stream *s);

#endif /* ES_PIPELINE_INTERNAL_H */
