/*
 * es_gpu_internal.cuh - what the CUDA engine's files share and nothing else includes: the
 * worker (a GPU's plan: streams, events, h_/d_ buffers), the range a worker computes, the
 * error macros, the engine's environment, and the range functions es_gpu.cu defines for
 * es_gpu_bench.cu. Private: not installed, C++ (CUDA) only.
 */
#ifndef ES_GPU_INTERNAL_CUH
#define ES_GPU_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "es_gpu.h"
#include "es_kernels.h"

/* Functions shared between the engine's files stay out of the shared library's symbols. */
#define ES_GPU_PRIVATE __attribute__((visibility("hidden")))

#define ES_NSLOT 4              /* pinned staging slots each way */

/* Where a thread's level counts live (HL, the histogram layout):
 *   ES_HL_GLOBAL: 16-bit, global memory, count of v at [v * gslots + slot] (large L);
 *   ES_HL_W32:    32-bit words in shared memory, [v][thread]: a warp's 32 lanes always hit
 *                 32 different banks (small L);
 *   ES_HL_S16:    16-bit in shared memory, [v][thread]: half the memory, but two lanes share
 *                 a bank, so accesses to different levels conflict 2-way. Measured on the
 *                 H100 (BENCHMARKS G9): W32 1.237 -> 1.180 ms at L=16; for L=256 packing a
 *                 thread's pairs into one word (conflict-free) cost more in address
 *                 arithmetic than the conflicts did (K=7 0.098 -> 0.122 ms), so S16 stays. */
#define ES_HL_GLOBAL 0
#define ES_HL_W32 1
#define ES_HL_S16 2

/* Records the failing call in msg and jumps to `end`. Needs rc, msg, msglen, dev in scope. */
#define ES_CK(call)                                                                          \
  do {                                                                                       \
    cudaError_t es_e_ = (call);                                                              \
    if (es_e_ != cudaSuccess) {                                                              \
      es_gpu_err(msg, msglen, dev, #call, __FILE__, __LINE__, es_e_);                        \
      rc = ES_ERR_DEVICE;                                                                    \
      goto end;                                                                              \
    }                                                                                        \
  } while (0)
/* After a launch: the launch error now (bad configuration), execution errors at the sync. */
#define ES_CKL(what) ES_CK(cudaGetLastError())

static inline void es_gpu_err(char *msg, size_t msglen, int dev, const char *call, const char *file,
                       int line, cudaError_t e) {
  if (!msg || !msglen) return;
  const char *f = strrchr(file, '/');
  snprintf(msg, msglen, "GPU %d: %s at %s:%d: %s", dev, call, f ? f + 1 : file, line,
           cudaGetErrorString(e));
}

struct es_dacc; /* gpu_kernels.cuh */

#define ES_OCC_CACHE 16

struct es_gpu_worker {
  int device;                   /* CUDA ordinal; fixed */
  int nsm;                      /* multiprocessors, for launch sizing */
  size_t smem_optin;            /* largest dynamic shared memory a block may ask for */
  int pdl;                      /* entropy kernels launched programmatically after their
                                 * quantize pass (launch_strips): cc 9.0 on;
                                 * 2: ES_PDL=refuse, a test of the fallback (an attribute the
                                 * runtime refuses) */
  cudaStream_t s_up, s_comp, s_down; /* H2D, kernels, D2H: three engines that overlap */
  cudaEvent_t ev_up[ES_NSLOT], ev_dn[ES_NSLOT], ev_comp, ev_t0, ev_t1;
  /* Tables (uploaded once from es_tables_get; never recomputed here). */
  unsigned int *d_dfl;          /* flog[c+1] - flog[c], exact integers (< 2^31) */
  double *d_log2n, *d_scale;
  unsigned long long *d_flog;   /* the f table itself (ES_NMAX + 1 entries) */
  uint8_t *d_lut;               /* 256 x 3 colormap of the current rendering */
  es_dacc *d_acc;
  es_dacc *h_acc;               /* pinned read-back of d_acc */
  unsigned long long *d_shist;  /* raw samples' histogram (65536 bins; k_samplehist) */
  unsigned long long *h_shist;  /* pinned read-back of d_shist */
  /* Buffers grown on demand and reused (capacities in bytes). */
  void *d_in; size_t cap_in;
  uint8_t *d_mask; size_t cap_mask;         /* the image's mask rows in0..in1, W bytes a row */
  void *d_lev; size_t cap_lev;
  float *d_map; size_t cap_map;
  unsigned short *d_ghist; size_t cap_ghist;
  uint8_t *d_pix; size_t cap_pix;
  double *d_rows; size_t cap_rows;          /* per-row sums (k_rowstats) */
  uint8_t *h_rows; size_t cap_hrows;       /* pinned read-back of d_rows */
  uint8_t *h_in[ES_NSLOT]; size_t cap_hin;   /* pinned staging, input */
  /* Pinned staging for downloads: one buffer cut into slots of the current band's size and
   * used round robin across calls (out_seq), so that a slot is downloaded into again only
   * after about the cores' L2 caches' worth of other downloads (out_prepare). */
  uint8_t *h_out; size_t cap_hout, out_slot;
  unsigned out_nslot, out_seq;
  uint8_t *h_outp[ES_NSLOT];    /* the slot of each download in flight, by band % ES_NSLOT */
  /* Geometry of the last run (es_gpu_bench_kernel re-runs its kernels). */
  int last_w, last_h, last_depth, last_row0, last_row1, last_in0, last_in1;
  /* ES_BENCH_GATE=1 (es_gpu_bench_kernel): a pinned, mapped flag k_gate waits on, so that a
   * repetition's launches are all queued before its start event runs; range_compute raises
   * it once its launches are queued (gate_armed). */
  volatile unsigned int *gate;
  int gate_armed;
  /* Blocks an SM holds, by kernel, block width and dynamic shared memory: the occupancy
   * query costs the host microseconds before every launch (launch_strips; BENCHMARKS D6). */
  struct { const void *k; int bx; size_t smem; int per_sm; } occ[ES_OCC_CACHE];
  unsigned nocc;
  /* The caller's data tied to the worker's life (es_gpu_worker_attach): the pipeline's host
   * thread that drives this worker in jobs split over several GPUs (pipeline/split_run.c). */
  void *attached;
  void (*attached_done)(void *); /* called by es_gpu_worker_destroy first, or NULL */
};

/* The environment the GPU engine reads (gpu_env, es_gpu.cu: which switches and why). */
typedef struct es_gpu_env {
  int pdl_refuse;   /* ES_PDL=refuse */
  int copy_threads; /* ES_COPY_THREADS, else 16 */
  int bench_gate;   /* ES_BENCH_GATE=1 */
} es_gpu_env;

ES_GPU_PRIVATE const es_gpu_env *gpu_env(void);

/* The range a worker computes and what it derives from it. */
struct es_range {
  int row0, row1;   /* output rows */
  int in0, in1;     /* input rows needed (reflect may reach anywhere) */
  int r, area, lt;  /* lt: level type bytes 1/2/4 */
  size_t lpitch;    /* padded row, elements */
  int bx;           /* entropy block width */
  int hl;           /* histogram layout ES_HL_* (gpu_kernels.cuh); ES_HL_GLOBAL: global mode */
  int pbx;          /* k_entropy2's block width, or 0: not that kernel (pair_bx) */
  es_window win;
  /* results of phase 1 */
  float hmin, hmax;
  uint64_t hist[ES_STATS_MAX_BINS];
  uint64_t inside;   /* pixels inside the image's mask (a mask and statistics only) */
  uint64_t *levhist; /* levels entries, owned by the caller */
  uint64_t *samplehist; /* 2^depth entries (raw samples), owned by the caller; NULL: none
                         * (no statistics, or the level histogram is theirs) */
  double *rowsums;   /* 2 per row (sum, sumsq), owned by the caller; NULL: no stats */
};

/* es_gpu_host.cu's, for the rest of the engine: the first CUDA call traced once (entry: who
 * made it); the home device set (the first a worker opened); 1 where p is page-locked host
 * memory CUDA knows, or (direct) memory a copy engine reaches without the host: page-locked,
 * device or managed. */
ES_GPU_PRIVATE void cuda_note(const char *entry);
ES_GPU_PRIVATE void gpu_home_set(int device);
/* gpu_mem_kind's answers: pageable (or unknown) host memory, page-locked host memory, device
 * (or managed) memory of any GPU. */
enum { ES_GPU_MEM_PAGEABLE = 0, ES_GPU_MEM_PINNED = 1, ES_GPU_MEM_DEVICE = 2 };
ES_GPU_PRIVATE int gpu_mem_kind(const void *p, const char *why);
ES_GPU_PRIVATE int gpu_is_pinned(const void *p);

ES_GPU_PRIVATE void range_plan(es_range *R, const es_job *job, const es_gpu_worker *w);
ES_GPU_PRIVATE int range_compute(es_gpu_worker *w, es_range *R, const es_job *job,
                                 int kernels_only, cudaEvent_t done, char *msg, size_t msglen);
ES_GPU_PRIVATE int range_render(es_gpu_worker *w, const es_range *R, const es_job *job,
                                double lo, double inv, int kernels_only, char *msg,
                                size_t msglen);
ES_GPU_PRIVATE void gate_release(es_gpu_worker *w);

#endif /* ES_GPU_INTERNAL_CUH */
