/*
 * es_gpu.cu - the CUDA engine: workers (a GPU's plan: device, streams, events, buffers
 * allocated once and grown on demand), the row-band pipeline that overlaps host staging, H2D,
 * kernels and D2H, a job's rows cut into ranges one a worker (es_gpu_split_*: which thread
 * drives which range is pipeline/split_run.c's), and the naive baseline. Kernels:
 * gpu_kernels.cuh; devices' names, host memory and the home device: es_gpu_host.cu; what
 * es_gpu_bench.cu (the benchmark entry points) shares of the plan: es_gpu_internal.cuh.
 *
 * Every CUDA call goes through ES_CK, which records "GPU n: call at file:line: error" in msg
 * and jumps to the function's one cleanup label; nothing here exits.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_copy.h"
#include "es_gpu.h"
#include "es_gpu_internal.cuh"
#include "gpu_kernels.cuh"

#ifndef ES_BAND_BYTES
#define ES_BAND_BYTES (16u << 20) /* output bytes per pipelined band, at most (BENCHMARKS P2) */
#endif
#ifndef ES_MIN_BANDS
#define ES_MIN_BANDS 4          /* bands a range is cut into, at least (rows allowing) */
#endif
#ifndef ES_OUT_LAG
#define ES_OUT_LAG 2 /* bands a pageable output is copied out behind the newest download */
#endif
#define ES_GHIST_BYTES ((size_t)512 << 20) /* global histograms of the large-L path */
/* The largest gridDim.y (and z) CUDA allows. Kernels that take a row (or a few) per block
 * row are launched in chunks of at most this many block rows. */
#define ES_GRID_Y_MAX 65535
/* Rows of one k_render launch: even (a YUV420P chroma row, two map rows, never straddles two
 * launches) and at most ES_GRID_Y_MAX. */
#define ES_RENDER_ROWS (ES_GRID_Y_MAX - 1)

static void es_gpu_msg(char *msg, size_t msglen, const char *fmt, const char *a, int b) {
  if (msg && msglen) snprintf(msg, msglen, fmt, a, b);
}

/* OpenMP threads a staging copy may use on this host thread (0: the default, up to 16): set
 * for the call by es_gpu_split_compute and es_gpu_split_render, whose ranges of a job on
 * several GPUs run at once, each with its share of the cores (pipeline/split_run.c). */
static __thread int tl_copy_threads;

/* ---- small helpers ---- */

/* The environment the GPU engine reads, all of it here, once (pthread_once). The A/B
 * switches of kept changes (ES_PDL=0, ES_FWL, ES_QUAD, ES_PAIRT, ES_PAIR, ES_CFILL,
 * ES_SQSLIDE, ES_QUNROLL, ES_OUT_RING, ES_COPY_ADAPT: each measured and kept for several
 * sessions, BENCHMARKS) are gone; what is left serves tests and measurements:
 * - ES_PDL=refuse: programmatic launches asked for with an attribute the runtime refuses,
 *   to test the plain-launch fallback (test_gpu_pdl_fallback);
 * - ES_COPY_THREADS=N: at most N threads a staging copy (measuring; default 16);
 * - ES_BENCH_GATE=1: es_gpu_bench_kernel queues a repetition's launches before the GPU
 *   starts it (tools/gpu-check.sh's gate rows).
 * Elsewhere in the library: ES_TRACE (core/trace.c, phase times), ES_FAULT_INJECT
 * (pipeline/context.c, tests' fault injection), ES_CPU_ALGO (kernels/cpu.c, tests' choice
 * of CPU engine); in the CLI: ES_GPU_SYNC (blocking waits), ES_EXIT_PLAIN (the plain
 * exit, tools/cli_exit.c). */
static es_gpu_env g_env;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void gpu_env_load(void) {
  const char *e = getenv("ES_PDL");
  g_env.pdl_refuse = e && !strcmp(e, "refuse");
  e = getenv("ES_COPY_THREADS");
  g_env.copy_threads = e && atoi(e) > 0 ? atoi(e) : 16;
  e = getenv("ES_BENCH_GATE");
  g_env.bench_gate = e && e[0] == '1';
}

const es_gpu_env *gpu_env(void) {
  pthread_once(&g_env_once, gpu_env_load);
  return &g_env;
}

static float es_bits_float(unsigned int u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Host row copy of the staging (pageable <-> pinned, the host half of the pipeline, which
 * must keep up with PCIe): core's es_copy_rows, on a team of at most this thread's share of
 * the cores (tl_copy_threads; 0: OpenMP's default) and ES_COPY_THREADS (gpu_env). */
static void copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t rowbytes,
                      int rows) {
  es_copy_rows(dst, dstride, src, sstride, rowbytes, rows, tl_copy_threads,
               gpu_env()->copy_threads);
}

static cudaError_t grow_dev(void **p, size_t *cap, size_t need) {
  if (need <= *cap) return cudaSuccess;
  if (*p) cudaFree(*p);
  *p = NULL;
  *cap = 0;
  size_t n = need + need / 8;
  cudaError_t e = cudaMalloc(p, n);
  if (e == cudaSuccess) *cap = n;
  return e;
}

/* n pinned buffers of `need` bytes each (grown, never shrunk). */
static cudaError_t grow_pinned(uint8_t **slots, int n, size_t *cap, size_t need) {
  if (need <= *cap) return cudaSuccess;
  for (int i = 0; i < n; i++) {
    if (slots[i]) cudaFreeHost(slots[i]);
    slots[i] = NULL;
  }
  *cap = 0;
  for (int i = 0; i < n; i++) {
    cudaError_t e = cudaMallocHost((void **)&slots[i], need);
    if (e != cudaSuccess) return e;
  }
  *cap = need;
  return cudaSuccess;
}

/* Bytes downloaded into other slots before a download staging slot is used again: the sum
 * of the L2 caches of the cores a copy team may run on (16 x 2 MB on the H100 host), at most
 * 64 MB. A download into lines that the last copy-out left in the cores' L2 caches runs at
 * half speed (23 GB/s on the H100 host); after ~32 MB of downloads elsewhere, at the full 54
 * GB/s (BENCHMARKS W1). */
static size_t out_reuse_bytes(void) {
  static long long v = -1;
  long long r = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (r < 0) {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), n = sysconf(_SC_NPROCESSORS_ONLN);
    if (l2 <= 0) l2 = 1L << 20;
    if (n < 1) n = 1;
#ifdef ES_HAVE_OPENMP
    if (n > gpu_env()->copy_threads) n = gpu_env()->copy_threads;
#else
    n = 1;
#endif
    r = (long long)l2 * n;
    if (r > (64LL << 20)) r = 64LL << 20;
    __atomic_store_n(&v, r, __ATOMIC_RELAXED);
  }
  return (size_t)r;
}

/* Downloads of ES_OUT_RING_FROM bytes or more in all get the slots out_reuse_bytes asks for;
 * smaller ones (the stream workers' warm-up render) only ES_NSLOT. */
#define ES_OUT_RING_FROM ((size_t)1 << 20)

/* Cut the download staging into slots of `slot` bytes for a download of `total` bytes,
 * growing it where needed (nothing may be in flight). */
static cudaError_t out_prepare(es_gpu_worker *w, size_t slot, size_t total) {
  slot = (slot + 4095) & ~(size_t)4095;
  size_t n = ES_NSLOT;
  if (total >= ES_OUT_RING_FROM) {
    size_t m = (out_reuse_bytes() + slot - 1) / slot + 1;
    if (m > n) n = m < 64 ? m : 64;
  }
  const cudaError_t e = grow_pinned(&w->h_out, 1, &w->cap_hout, slot * n);
  if (e != cudaSuccess) return e;
  w->out_slot = slot;
  w->out_nslot = (unsigned)(w->cap_hout / slot);
  return cudaSuccess;
}

/* The next download staging slot, recorded as in-flight download k's. */
static uint8_t *out_take(es_gpu_worker *w, int k) {
  uint8_t *p = w->h_out + (size_t)(w->out_seq++ % w->out_nslot) * w->out_slot;
  w->h_outp[k % ES_NSLOT] = p;
  return p;
}

/* ---- worker ---- */

static const void *const es_kernel_list[] = {
#define ES_KSH(LT, KC) (const void *)k_entropy<LT, ES_HL_W32, KC>, (const void *)k_entropy<LT, ES_HL_S16, KC>
    ES_KSH(uint8_t, 0), ES_KSH(uint16_t, 0), ES_KSH(uint32_t, 0), ES_KSH(uint8_t, 3),
    ES_KSH(uint8_t, 5), ES_KSH(uint8_t, 7), ES_KSH(uint8_t, 9),
    (const void *)k_entropy<uint8_t, ES_HL_GLOBAL, 0>, (const void *)k_entropy<uint16_t, ES_HL_GLOBAL, 0>,
    (const void *)k_entropy<uint32_t, ES_HL_GLOBAL, 0>,
#define ES_K4(KC, PT) (const void *)k_entropy4<KC, PT, false>, (const void *)k_entropy4<KC, PT, true>
    ES_K4(3, true), ES_K4(5, true), ES_K4(7, false), ES_K4(3, false), ES_K4(5, false),
#undef ES_K4
    (const void *)k_entropy2<uint8_t, true>,
    (const void *)k_entropy2<uint8_t, false>, (const void *)k_entropy2<uint16_t, true>,
    (const void *)k_entropy2<uint16_t, false>};
#undef ES_KSH

/* es_gpu_worker.pdl for a GPU of compute capability major.x: ES_PDL=refuse tests the
 * fallback (test_gpu_pdl_fallback). */
static int pdl_mode(int major) {
  if (major < 9) return 0;
  return gpu_env()->pdl_refuse ? 2 : 1;
}

extern "C" void es_gpu_worker_destroy(es_gpu_worker **pw) {
  if (!pw || !*pw) return;
  es_gpu_worker *w = *pw;
  if (w->attached_done) w->attached_done(w->attached); /* the pipeline's host thread ends */
  cudaSetDevice(w->device);
  if (w->s_up) cudaStreamSynchronize(w->s_up);
  if (w->s_comp) cudaStreamSynchronize(w->s_comp);
  if (w->s_down) cudaStreamSynchronize(w->s_down);
  for (int i = 0; i < ES_NSLOT; i++) {
    if (w->ev_up[i]) cudaEventDestroy(w->ev_up[i]);
    if (w->ev_dn[i]) cudaEventDestroy(w->ev_dn[i]);
    if (w->h_in[i]) cudaFreeHost(w->h_in[i]);
  }
  if (w->h_out) cudaFreeHost(w->h_out);
  if (w->ev_comp) cudaEventDestroy(w->ev_comp);
  if (w->ev_t0) cudaEventDestroy(w->ev_t0);
  if (w->ev_t1) cudaEventDestroy(w->ev_t1);
  if (w->gate) cudaFreeHost((void *)w->gate);
  if (w->s_up) cudaStreamDestroy(w->s_up);
  if (w->s_comp) cudaStreamDestroy(w->s_comp);
  if (w->s_down) cudaStreamDestroy(w->s_down);
  cudaFree(w->d_dfl);
  cudaFree(w->d_log2n);
  cudaFree(w->d_flog);
  cudaFree(w->d_scale);
  cudaFree(w->d_lut);
  cudaFree(w->d_acc);
  if (w->h_acc) cudaFreeHost(w->h_acc);
  cudaFree(w->d_shist);
  if (w->h_shist) cudaFreeHost(w->h_shist);
  cudaFree(w->d_in);
  cudaFree(w->d_mask);
  cudaFree(w->d_lev);
  cudaFree(w->d_map);
  cudaFree(w->d_ghist);
  cudaFree(w->d_pix);
  cudaFree(w->d_rows);
  if (w->h_rows) cudaFreeHost(w->h_rows);
  cudaGetLastError();
  free(w);
  *pw = NULL;
}

extern "C" int es_gpu_worker_device(const es_gpu_worker *w) { return w ? w->device : -1; }

extern "C" void es_gpu_worker_attach(es_gpu_worker *w, void *data, void (*done)(void *)) {
  w->attached = data;
  w->attached_done = done;
}

extern "C" void *es_gpu_worker_attached(const es_gpu_worker *w) { return w->attached; }

static int split_run_here(es_gpu_worker **ws, int n, const es_job *job, char *msg,
                          size_t msglen);

/* The tables of es_tables_get on the worker's device (never recomputed there): the f
 * deltas are exact integer differences of the shared table. */
static int upload_tables(es_gpu_worker *w, char *msg, size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const es_tables *t = es_tables_get();
  unsigned int *hd = (unsigned int *)malloc(sizeof *hd * ES_NMAX);
  if (!hd) return ES_ERR_NOMEM;
  for (int c = 0; c < ES_NMAX; c++) {
    uint64_t d = t->flog[c + 1] - t->flog[c];
    if (d > 0xffffffffu) { /* cannot happen with ES_FIX_SHIFT 26 (es_math.h) */
      if (msg && msglen) snprintf(msg, msglen, "GPU %d: f increment %d does not fit 32 bits", dev, c);
      rc = ES_ERR_INTERNAL;
      goto end;
    }
    hd[c] = (unsigned int)d;
  }
  ES_CK(cudaMalloc((void **)&w->d_dfl, sizeof *hd * ES_NMAX));
  ES_CK(cudaMalloc((void **)&w->d_log2n, sizeof(double) * (ES_NMAX + 1)));
  ES_CK(cudaMalloc((void **)&w->d_flog, sizeof(unsigned long long) * (ES_NMAX + 1)));
  ES_CK(cudaMemcpy(w->d_flog, t->flog, sizeof(unsigned long long) * (ES_NMAX + 1), cudaMemcpyHostToDevice));
  ES_CK(cudaMalloc((void **)&w->d_scale, sizeof(double) * (ES_NMAX + 1)));
  ES_CK(cudaMalloc((void **)&w->d_lut, 768));
  ES_CK(cudaMalloc((void **)&w->d_acc, sizeof(es_dacc)));
  ES_CK(cudaMallocHost((void **)&w->h_acc, sizeof(es_dacc)));
  ES_CK(cudaMalloc((void **)&w->d_shist, sizeof(unsigned long long) * 65536));
  ES_CK(cudaMallocHost((void **)&w->h_shist, sizeof(unsigned long long) * 65536));
  ES_CK(cudaMemcpy(w->d_dfl, hd, sizeof *hd * ES_NMAX, cudaMemcpyHostToDevice));
  ES_CK(cudaMemcpy(w->d_log2n, t->log2n, sizeof(double) * (ES_NMAX + 1), cudaMemcpyHostToDevice));
  ES_CK(cudaMemcpy(w->d_scale, t->scale, sizeof(double) * (ES_NMAX + 1), cudaMemcpyHostToDevice));
end:
  free(hd);
  return rc;
}

/* Warm-up: a small job through every stage, so module loading and first-launch costs are
 * paid here and not by the first frame. */
static int warm_up(es_gpu_worker *w, char *msg, size_t msglen) {
  uint8_t img[37 * 23];
  float map[37 * 23];
  uint8_t rgb[37 * 23 * 3];
  es_stats st;
  for (int i = 0; i < 37 * 23; i++) img[i] = (uint8_t)(i * 37);
  es_job j;
  memset(&j, 0, sizeof j);
  j.in.data = img;
  j.in.width = 37;
  j.in.height = 23;
  j.in.stride = 37;
  j.in.depth = 8;
  es_params_default(&j.params);
  j.map = map;
  j.map_stride = 37;
  j.stats = &st;
  j.stats_bins = 16;
  es_render_default(&j.render);
  j.pix.plane[0] = rgb;
  j.pix.stride[0] = 37 * 3;
  return split_run_here(&w, 1, &j, msg, msglen);
}

static int worker_create(es_gpu_worker **out, int device, int warm, char *msg, size_t msglen) {
  int rc = ES_OK, dev = device;
  es_gpu_worker *w = NULL;
  cudaDeviceProp pr;
  *out = NULL;
  if (device < 0 || device >= es_gpu_device_count()) {
    es_gpu_msg(msg, msglen, "GPU %s%d: no such device", "", device);
    return ES_ERR_DEVICE;
  }
  w = (es_gpu_worker *)calloc(1, sizeof *w);
  if (!w) return ES_ERR_NOMEM;
  w->device = device;
  ES_CK(cudaSetDevice(device));
  ES_CK(cudaGetDeviceProperties(&pr, device));
  w->nsm = pr.multiProcessorCount;
  w->smem_optin = pr.sharedMemPerBlockOptin;
  w->pdl = pdl_mode(pr.major);
  es_trace("GPU %d: properties read", device);
  ES_CK(cudaStreamCreateWithFlags(&w->s_up, cudaStreamNonBlocking));
  es_trace("GPU %d: first stream (context current)", device);
  ES_CK(cudaStreamCreateWithFlags(&w->s_comp, cudaStreamNonBlocking));
  ES_CK(cudaStreamCreateWithFlags(&w->s_down, cudaStreamNonBlocking));
  for (int i = 0; i < ES_NSLOT; i++) {
    ES_CK(cudaEventCreateWithFlags(&w->ev_up[i], cudaEventDisableTiming));
    ES_CK(cudaEventCreateWithFlags(&w->ev_dn[i], cudaEventDisableTiming));
  }
  ES_CK(cudaEventCreateWithFlags(&w->ev_comp, cudaEventDisableTiming));
  ES_CK(cudaEventCreate(&w->ev_t0));
  ES_CK(cudaEventCreate(&w->ev_t1));
  for (size_t k = 0; k < sizeof es_kernel_list / sizeof es_kernel_list[0]; k++) {
    cudaFuncAttributes fa;
    ES_CK(cudaFuncGetAttributes(&fa, es_kernel_list[k]));
    /* The opt-in limit covers static shared memory too. */
    ES_CK(cudaFuncSetAttribute(es_kernel_list[k], cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int)(w->smem_optin - fa.sharedSizeBytes)));
  }
  w->smem_optin -= 2048; /* what range_plan may ask for, below every kernel's limit */
  es_trace("GPU %d: kernel attributes set", device);
  rc = upload_tables(w, msg, msglen);
  if (rc) goto end;
  if (warm) {
    es_trace("GPU %d: tables uploaded, warm-up job", device);
    rc = warm_up(w, msg, msglen);
    if (rc) goto end;
    es_trace("GPU %d: warm-up done", device);
  }
end:
  if (rc) {
    es_gpu_worker_destroy(&w);
    return rc;
  }
  gpu_home_set(device);
  *out = w;
  return ES_OK;
}

extern "C" int es_gpu_worker_create(es_gpu_worker **out, int device, char *msg, size_t msglen) {
  return worker_create(out, device, 1, msg, msglen);
}

extern "C" int es_gpu_worker_create_cold(es_gpu_worker **out, int device, char *msg,
                                         size_t msglen) {
  return worker_create(out, device, 0, msg, msglen);
}

/* ---- one worker's share of a job ---- */

/* Source row (global) of padded row p of the range, or -1 (clip, outside). */
static int range_src(const es_range *R, const es_job *job, int p) {
  int i = R->row0 + p - R->r, H = job->in.height;
  if (i >= 0 && i < H) return i;
  if (job->params.border != ES_BORDER_REFLECT) return -1;
  return es_reflect(i, H);
}

/* The f-increment table of the entropy kernel in shared memory: replicated once per lane
 * (dt[c * 32 + lane], no bank conflicts) for small windows, one copy up to 1024, else none
 * (read from global memory). */
static int dshared_replicated(int area) { return area <= 64; }
static int dshared_entries(int area) {
  return dshared_replicated(area) ? area * 32 : (area <= 1024 ? area : 0);
}

/* es_cfill's row of column counts, in bytes, where k_entropy2 (bx threads of two windows,
 * count rows of 4 bx bytes) builds its first windows from column counts (gpu_kernels.cuh),
 * else 0. It pays where K^2 increments a thread cost more than the L + 1 levels' prefix sums
 * and lookups: K^2 > 2 (L + 1) (C1/C4: even at K = 21-25, L = 256). The byte rows must fit
 * in a row of counts and in a warp's 32 x 8 bytes. */
static int cfill_bytes(int K, int L, int bx) {
  if ((long long)K * K <= 2LL * (L + 1)) return 0;
  const int cs = (2 * bx + K - 1 + 7) & ~7;
  return cs <= 256 && cs <= 4 * bx ? cs : 0;
}

/* k_entropy2's block width (its counts: L + 1 words a thread), or 0 where it does not apply:
 * square windows of run-time size (K > 9 for 8-bit levels: the compile-time kernels take the
 * rest) whose counts fit in shared memory. */
static int pair_bx(const es_range *R, int square, int K, int L) {
  if (!square || R->hl == ES_HL_GLOBAL || R->lt > 2) return 0;
  if (R->lt == 1 && K >= 3 && K <= 9) return 0;
  for (int bx = 64; bx >= 32; bx /= 2)
    if ((size_t)(L + 1) * bx * 4 <= 96 * 1024) return bx;
  return 0;
}

void range_plan(es_range *R, const es_job *job, const es_gpu_worker *w) {
  es_window_make(&R->win, job->params.window, job->params.shape);
  R->r = R->win.r;
  R->area = R->win.area;
  int L = job->params.levels;
  R->lt = L <= 255 ? 1 : (L <= 65535 ? 2 : 4);
  R->lpitch = (size_t)job->in.width + 2 * (size_t)R->r;
  R->lpitch = (R->lpitch + 16 + 15) & ~(size_t)15; /* slack for es_load_seg's words */
  int lo = job->in.height, hi = -1;
  for (int p = 0; p < R->row1 - R->row0 + 2 * R->r; p++) {
    int s = range_src(R, job, p);
    if (s < 0) continue;
    if (s < lo) lo = s;
    if (s > hi) hi = s;
  }
  R->in0 = lo;
  R->in1 = hi + 1;
  /* Shared histograms when they fit (32-bit counts for few levels, else 16-bit up to 96 KB a
   * block), else global ones. */
  R->hl = ES_HL_GLOBAL;
  R->bx = 128;
  size_t fixed = (size_t)dshared_entries(R->area) * 4 + (ES_STATS_MAX_BINS + 2) * 4;
  if (es_hist_bytes(ES_HL_W32, L, ES_W32_BX) <= 16 * 1024) {
    R->bx = ES_W32_BX; /* the kernel's W32 addressing assumes it */
    R->hl = ES_HL_W32;
  } else {
    for (int bx = 128; bx >= 32; bx /= 2) {
      size_t hb = es_hist_bytes(ES_HL_S16, L, bx);
      if (fixed + hb <= w->smem_optin && hb <= 96 * 1024) {
        R->bx = bx;
        R->hl = ES_HL_S16;
        break;
      }
    }
  }
  R->pbx = pair_bx(R, job->params.shape == ES_SHAPE_SQUARE, 2 * R->r + 1, L); /* 0 if global */
}

/* Launches quantize for padded rows [p0, p1). */
static cudaError_t launch_quant(es_gpu_worker *w, const es_range *R, const es_job *job, int p0,
                                int p1, int levhist) {
  es_qparams Q;
  Q.in = w->d_in;
  Q.in_pitch = (size_t)job->in.width * (job->in.depth == 16 ? 2 : 1);
  Q.in0 = R->in0;
  Q.depth = job->in.depth;
  Q.W = job->in.width;
  Q.H = job->in.height;
  Q.row0 = R->row0;
  Q.nrows = R->row1 - R->row0;
  Q.r = R->r;
  Q.levels = job->params.levels;
  Q.border = job->params.border;
  Q.lev = w->d_lev;
  Q.lpitch = R->lpitch;
  Q.levhist = levhist ? w->d_acc->levhist : NULL;
  Q.mask = job->in.mask ? w->d_mask : NULL;
  if (p1 <= p0) return cudaSuccess;
  /* Under a mask, 8-bit levels too go through the one-column k_quant (k_quant4's fast path
   * reads no mask). */
  const int quad = R->lt == 1 && !Q.mask;
  /* a block: 256 threads of four columns and ES_QROWS4 rows (k_quant4), or of one column and
   * ES_QROWS rows (k_quant). gridDim.y is at most ES_GRID_Y_MAX: a band of more rows (a
   * narrow, tall image: 3 x 1.5M pixels made 93750 block rows, an invalid configuration) is
   * quantized in several launches of the same blocks. */
  const int qrows = quad ? ES_QROWS4 : ES_QROWS;
  const unsigned gx =
      quad ? (unsigned)((Q.lpitch / 4 + 255) / 256) : (unsigned)((Q.lpitch + 255) / 256);
  const int span = ES_GRID_Y_MAX * qrows; /* padded rows a launch covers, at most */
  for (int a = p0; a < p1; a += span) {
    const int b = p1 - a > span ? a + span : p1;
    const dim3 grid(gx, (unsigned)((b - a + qrows - 1) / qrows));
    if (quad) {
      k_quant4<true><<<grid, 256, 0, w->s_comp>>>(Q, a, b); /* unrolled form (BENCHMARKS R4) */
    } else if (R->lt == 1) {
      k_quant<uint8_t><<<grid, 256, 0, w->s_comp>>>(Q, a, b);
    } else if (R->lt == 2) {
      k_quant<uint16_t><<<grid, 256, 0, w->s_comp>>>(Q, a, b);
    } else {
      k_quant<uint32_t><<<grid, 256, 0, w->s_comp>>>(Q, a, b);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

/* The shared-histogram kernel for a range: level type, layout, compile-time window. */
template <typename LT, int KC> static const void *shared_kernel(int hl) {
  return hl == ES_HL_W32 ? (const void *)k_entropy<LT, ES_HL_W32, KC>
                         : (const void *)k_entropy<LT, ES_HL_S16, KC>;
}

static const void *pick_shared_kernel(const es_range *R, int square, int K) {
  if (R->lt == 1 && square && K == 3) return shared_kernel<uint8_t, 3>(R->hl);
  if (R->lt == 1 && square && K == 5) return shared_kernel<uint8_t, 5>(R->hl);
  if (R->lt == 1 && square && K == 7) return shared_kernel<uint8_t, 7>(R->hl);
  if (R->lt == 1 && square && K == 9) return shared_kernel<uint8_t, 9>(R->hl);
  if (R->lt == 1) return shared_kernel<uint8_t, 0>(R->hl);
  if (R->lt == 2) return shared_kernel<uint16_t, 0>(R->hl);
  return shared_kernel<uint32_t, 0>(R->hl);
}

template <int KC, bool PT> static const void *quad_kernel(int fl) {
  return fl ? (const void *)k_entropy4<KC, PT, true> : (const void *)k_entropy4<KC, PT, false>;
}

/* The four-columns-a-thread kernel where it applies (square K <= 7, 8-bit levels, W32
 * counts), else NULL (BENCHMARKS Q1). */
static const void *pick_quad_kernel(const es_range *R, int square, int K, int L) {
  if (R->lt != 1 || !square || R->hl != ES_HL_W32) return NULL;
  /* The pair table T where its lookups spread over few banks: counts of random levels
   * cluster near K^2 / L, so fewer levels spread the (c_o, c_i) pairs over more words
   * (1.9 wavefronts a lookup at K = 5, L = 8, against dt's two; 1.5 at L = 12; BENCHMARKS
   * D1). */
  const int pt = L >= (K == 3 ? 8 : 12);
  /* First windows summed once a level where there are fewer levels than window pixels:
   * 1080p K=7 L=16 0.0240 -> 0.0226 ms, 10240^2 -1% (BENCHMARKS V2). */
  const int fl = L + 1 < K * K;
  if (K == 3) return pt ? quad_kernel<3, true>(fl) : quad_kernel<3, false>(fl);
  if (K == 5) return pt ? quad_kernel<5, true>(fl) : quad_kernel<5, false>(fl);
  if (K == 7) return quad_kernel<7, false>(fl); /* T of 9.8 KB lost: 0.031 -> 0.035 ms */
  return NULL;
}

/* The global-histogram kernel (large L) for a range's level type. */
static const void *pick_global_kernel(const es_range *R) {
  if (R->lt == 1) return (const void *)k_entropy<uint8_t, ES_HL_GLOBAL, 0>;
  if (R->lt == 2) return (const void *)k_entropy<uint16_t, ES_HL_GLOBAL, 0>;
  return (const void *)k_entropy<uint32_t, ES_HL_GLOBAL, 0>;
}

/* Strips for gx columns of blocks over `rows` rows when `cap` blocks fit on the chip at
 * once: every block has the same work, so the grid should be whole waves - one block more
 * than a wave runs as a tail on its own (the first strip rule, ty ~ rows * gx / cap,
 * rounded to 2160 blocks for 2112 places at 10240^2). At least tmin rows a strip (the
 * first window of a strip costs area updates, a row 2K). Returns the strip height. */
static int strip_rows(int rows, int gx, long long cap, int tmin) {
  if (cap < 1) cap = 1;
  long long per_wave = cap / gx; /* strips in one full wave */
  if (per_wave < 1) return rows > 0 ? rows : 1; /* one row of blocks is a wave already */
  /* The fewest waves whose strips are still tall enough; fewer strips when even one wave
   * would make them too short (a small image cannot fill the chip). */
  long long strips = per_wave;
  if ((rows + strips - 1) / strips < tmin) strips = rows / tmin > 0 ? rows / tmin : 1;
  int ty = (int)((rows + strips - 1) / strips);
  return ty < 1 ? 1 : ty;
}

/* Launches a shared-histogram entropy kernel: gx blocks of bx threads across, strips of
 * rows sized to `waves` whole waves of the blocks that fit on the chip at once. One wave
 * for the one-column kernels; k_entropy4 takes 3: its single wave ended with the SMs up to
 * 11% apart, and shorter strips let the early ones take more (BENCHMARKS Q6). */
static cudaError_t launch_strips(es_gpu_worker *w, const void *kfn, es_eparams *E, int gx, int bx,
                                 int rows, int tmin, size_t smem, int waves) {
  int per_sm = -1;
  for (unsigned i = 0; i < w->nocc && i < ES_OCC_CACHE && per_sm < 0; i++)
    if (w->occ[i].k == kfn && w->occ[i].bx == bx && w->occ[i].smem == smem) per_sm = w->occ[i].per_sm;
  if (per_sm < 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kfn, bx, smem) != cudaSuccess) {
      cudaGetLastError();
      per_sm = 2048 / bx;
    }
    const unsigned i = w->nocc++ % ES_OCC_CACHE; /* the oldest entry goes once it is full */
    w->occ[i].k = kfn;
    w->occ[i].bx = bx;
    w->occ[i].smem = smem;
    w->occ[i].per_sm = per_sm;
  }
  const long long wave = (long long)w->nsm * (per_sm > 0 ? per_sm : 1);
  if (waves > 1) {
    /* Strips sized for as many whole waves as tmin-row strips fill, where that is fewer than
     * `waves`: 2560^2 made 3200 blocks of 4-row strips for 1584 places (two waves and a tail
     * of 32 blocks, 39.5 us); sized for two waves it takes 5-row strips, 2560 blocks, 38.1
     * us (BENCHMARKS V5, V6). */
    const long long full = (long long)gx * (rows / tmin > 0 ? rows / tmin : 1) / wave;
    if (full >= 1 && full < waves) waves = (int)full;
  }
  int ty = strip_rows(rows, gx, wave * waves, tmin);
  E->ty = ty;
  E->strip0 = 0;
  dim3 grid((unsigned)gx, (unsigned)((rows + ty - 1) / ty));
  void *args[] = {(void *)E};
  int refused = 0;
  if (w->pdl) {
    /* After the quantize pass on the same stream (or the band before's entropy kernel,
     * which does not trigger early): the kernel's set-up overlaps the pass's end, and it
     * waits for the pass before it reads levels (es_pdl_wait). 2560^2 0.0418 -> 0.0392 ms,
     * 400^2 0.0149 -> 0.0132 ms (BENCHMARKS V2). */
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = grid;
    cfg.blockDim = dim3((unsigned)bx);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = w->s_comp;
    at[0].id = w->pdl == 2 ? (cudaLaunchAttributeID)0x7fff
                           : cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (cudaLaunchKernelExC(&cfg, kfn, args) == cudaSuccess) return cudaSuccess;
    cudaGetLastError();
    refused = 1;
  }
  const cudaError_t e = cudaLaunchKernel(kfn, grid, dim3((unsigned)bx), args, smem, w->s_comp);
  if (refused && e == cudaSuccess) {
    /* A runtime or platform that refuses the attribute: plain launches from now on, since a
     * plain launch works (else its error is the one to report). */
    w->pdl = 0;
    es_trace("GPU %d: programmatic launches refused; plain launches", w->device);
  }
  return e;
}

/* Launches the entropy kernel for local output rows [y0, y1). */
static cudaError_t launch_entropy(es_gpu_worker *w, const es_range *R, const es_job *job, int y0,
                                  int y1, int stats, int bins, int write_map) {
  es_eparams E;
  int W = job->in.width, K = 2 * R->r + 1, rows = y1 - y0;
  if (rows <= 0) return cudaSuccess;
  memset(&E, 0, sizeof E);
  E.lev = w->d_lev;
  E.lpitch = R->lpitch;
  E.W = W;
  E.y0 = y0;
  E.y1 = y1;
  E.r = R->r;
  E.area = R->area;
  E.levels = job->params.levels;
  E.drep = dshared_replicated(R->area);
  E.dshared = dshared_entries(R->area);
  E.dfl = w->d_dfl;
  E.log2n = w->d_log2n;
  E.flog = w->d_flog;
  E.scale = w->d_scale;
  E.oscale = es_out_scale(job->params.base);
  E.map = write_map ? w->d_map : NULL;
  E.mpitch = (size_t)W;
  E.ghist = w->d_ghist;
  E.stats = stats;
  E.bins = bins;
  E.binscale = stats ? es_stats_binscale(&job->params, bins) : 0.0;
  E.acc = w->d_acc;
  for (int i = 0; i < K; i++) E.hw[i] = R->win.hw[i];
  const int square = job->params.shape == ES_SHAPE_SQUARE;
  E.square = square;
  int bx = R->bx;
  int gx = (W + bx - 1) / bx;
  /* Strip height: the first window of a strip costs `area` updates, a slide 2K a row, so
   * strips are at least 16 rows and area / 2K. */
  int tmin = R->area / (2 * K) + 1;
  if (tmin < 16) tmin = 16;
  /* shared memory: the delta table, then the block's bins of H (whole pairs of words) */
  const size_t sbins = stats ? (size_t)((bins + 1) & ~1) * 4 : 0;
  size_t smem = (size_t)E.dshared * 4 + sbins;
  /* Under a mask, only the one-column kernel: k_entropy4 takes N = area inside the image,
   * and k_entropy2 is left out with it (the sentinel may be anywhere). */
  const int masked = job->in.mask != NULL;
  const void *k4 = masked ? NULL : pick_quad_kernel(R, square, K, E.levels);
  if (k4) { /* four columns a thread; the delta table is static shared memory */
    smem = sbins + es_hist_bytes(ES_HL_W32, E.levels, bx);
    const es_tables *t = es_tables_get();
    E.log2n_area = t->log2n[R->area];
    E.scale_area = t->scale[R->area];
    /* Strips of 4 rows at least (not 16): a 1080p frame then fills the chip, 0.045 ->
     * 0.036 ms at K=5 (BENCHMARKS Q7). */
    return launch_strips(w, k4, &E, (W + 4 * bx - 1) / (4 * bx), bx, rows, 4, smem, 3);
  }
  const int pbx = masked ? 0 : R->pbx;
  if (pbx) { /* two columns a thread */
    /* the delta table: k_entropy2<., true>'s static shared copy up to ES_DT2_MAX entries */
    const int st = R->area <= ES_DT2_MAX;
    E.drep = 0;
    E.dshared = 0;
    smem = sbins + (size_t)(E.levels + 1) * pbx * 4;
    E.cfill = cfill_bytes(K, E.levels, pbx);
    if (E.cfill) {
      smem += (size_t)(pbx / 32) * 512;
      tmin = 16;
    }
    const void *kfn = R->lt == 1 ? (st ? (const void *)k_entropy2<uint8_t, true>
                                       : (const void *)k_entropy2<uint8_t, false>)
                                 : (st ? (const void *)k_entropy2<uint16_t, true>
                                       : (const void *)k_entropy2<uint16_t, false>);
    return launch_strips(w, kfn, &E, (W + 2 * pbx - 1) / (2 * pbx), pbx, rows, tmin, smem, 1);
  }
  if (R->hl != ES_HL_GLOBAL) {
    smem += es_hist_bytes(R->hl, E.levels, bx);
    const void *kfn = pick_shared_kernel(R, square, K);
    return launch_strips(w, kfn, &E, gx, bx, rows, tmin, smem, 1);
  }
  /* Global histograms (large L): strips to fill the chip's threads. */
  long long target = (long long)w->nsm * 2048;
  int ty = (int)(((long long)gx * bx * rows + target - 1) / target);
  if (ty < tmin) ty = tmin;
  int nstrips = (rows + ty - 1) / ty;
  /* Global histograms: as many strips per launch as there are histogram slots. */
  size_t slots = w->cap_ghist / ((size_t)(E.levels + 1) * 2);
  int per = (int)(slots / ((size_t)gx * bx));
  if (per < 1) return cudaErrorMemoryAllocation;
  if (nstrips > per) { /* fewer, taller strips first */
    ty = (rows + per - 1) / per;
    nstrips = (rows + ty - 1) / ty;
  }
  E.ty = ty;
  E.gslots = slots;
  const void *kfn = pick_global_kernel(R);
  for (int s = 0; s < nstrips; s += per) {
    int ns = nstrips - s < per ? nstrips - s : per;
    E.strip0 = s;
    void *args[] = {(void *)&E};
    cudaError_t e = cudaLaunchKernel(kfn, dim3((unsigned)gx, (unsigned)ns), dim3((unsigned)bx),
                                     args, smem, w->s_comp);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

/* ES_BENCH_GATE (es_gpu_bench_kernel): let a waiting k_gate end, if one was launched. */
void gate_release(es_gpu_worker *w) {
  if (!w->gate_armed) return;
  __atomic_store_n(w->gate, 1u, __ATOMIC_RELEASE);
  w->gate_armed = 0;
}

/* The last upload band (of brows input rows from in0) that padded rows [f, g) read, or -1
 * if they read none (clip, all outside). The rows inside the image map in order, so only the
 * border's rows (reflect) are looked at one by one: a range_src call for every padded row
 * was host time before each band's first launch (with the occupancy query, ~27 us at
 * 10240^2; BENCHMARKS D6). */
static int band_need(const es_range *R, const es_job *job, int f, int g, int brows) {
  const int H = job->in.height, lo = R->r - R->row0, hi = H - R->row0 + R->r; /* inside: [lo, hi) */
  int smax = -1;
  const int a = f > lo ? f : lo, b = g < hi ? g : hi;
  if (a < b) smax = R->row0 + (b - 1) - R->r;
  if (job->params.border == ES_BORDER_REFLECT) {
    for (int p = f; p < g && p < lo; p++) {
      const int s = range_src(R, job, p);
      if (s > smax) smax = s;
    }
    for (int p = f > hi ? f : hi; p < g; p++) {
      const int s = range_src(R, job, p);
      if (s > smax) smax = s;
    }
  }
  return smax >= 0 ? (smax - R->in0) / brows : -1;
}

/* Band o (of brows map rows) of a range's pageable map: wait for its download, then copy it
 * from its staging slot into the caller's map. */
static cudaError_t copy_out_band(es_gpu_worker *w, const es_range *R, const es_job *job, int o,
                                 int brows) {
  const int W = job->in.width, nrows = R->row1 - R->row0, oy0 = o * brows;
  const int orr = oy0 + brows < nrows ? brows : nrows - oy0;
  const cudaError_t e = cudaEventSynchronize(w->ev_dn[o % ES_NSLOT]);
  if (e != cudaSuccess) return e;
  copy_rows(job->map + (size_t)(R->row0 + oy0) * job->map_stride, job->map_stride * 4,
            w->h_outp[o % ES_NSLOT], (size_t)W * 4, (size_t)W * 4, orr);
  return cudaSuccess;
}

/* Output rows a band of the range: bands of equal height, the last one what is left.
 * in_pinned, out_pinned: input and map move by DMA (gpu_mem_kind: not pageable). */
static int band_rows(const es_range *R, const es_job *job, int in_pinned, int out_pinned,
                     int kernels_only) {
  const int W = job->in.width, nrows = R->row1 - R->row0, want_map = job->map != NULL;
  const size_t inrow = (size_t)W * (job->in.depth == 16 ? 2 : 1);
  int brows = (int)((ES_BAND_BYTES + (size_t)W * 4 - 1) / ((size_t)W * 4));
  if (brows < 16) brows = 16;
  /* Bands let upload, kernels and download overlap. A range over one band's bytes takes at
   * least ES_MIN_BANDS bands of 64 rows or more (BENCHMARKS P2). A smaller one (a 1080p map)
   * takes up to ES_MIN_BANDS bands of at least 16K rows where both buffers are pinned (a
   * stream's other frames overlap its transfers anyway, and each band restarts its windows:
   * J10), 6K rows and ES_COPY_TEAM_MIN bytes where pageable (the host copies of one band
   * overlap the next band's transfers: J5, J7). */
  if ((size_t)W * 4 * (size_t)nrows > ES_BAND_BYTES) {
    const int per = (nrows + ES_MIN_BANDS - 1) / ES_MIN_BANDS;
    const int bcap = per > 64 ? per : 64;
    if (brows > bcap) brows = bcap;
  } else {
    const int pinned = in_pinned && (out_pinned || !want_map);
    int least = (pinned ? 16 : 6) * (2 * R->r + 1);
    if (least < 64) least = 64;
    const int lin = (int)((ES_COPY_TEAM_MIN + inrow - 1) / inrow);
    if (!pinned && least < lin) least = lin;
    int n = nrows / least;
    if (n > ES_MIN_BANDS) n = ES_MIN_BANDS;
    if (n > 1) brows = (nrows + n - 1) / n;
  }
  if (kernels_only) brows = nrows;
  if (brows > nrows) brows = nrows;
  /* Bands of equal height: 2560^2 was three 8 MB bands and a tenth of one, four equal ones
   * were 9% faster host to host (BENCHMARKS P1). The count stays: ceil(nrows / brows). */
  const int nb = (nrows + brows - 1) / brows;
  return (nrows + nb - 1) / nb;
}

/* The device buffers and pinned staging of a range in bands of brows rows, grown where they
 * are short (kernels_only: the run before grew those of the input and the map). */
static int range_buffers(es_gpu_worker *w, const es_range *R, const es_job *job, int brows,
                         int in_pinned, int out_pinned, int kernels_only, char *msg,
                         size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const int W = job->in.width, L = job->params.levels;
  const size_t inrow = (size_t)W * (job->in.depth == 16 ? 2 : 1);
  const int nrows = R->row1 - R->row0, prow = nrows + 2 * R->r, nin = R->in1 - R->in0;
  if (!kernels_only) {
    /* 16 bytes of slack: k_quant4 reads the aligned words around its bytes */
    ES_CK(grow_dev(&w->d_in, &w->cap_in, inrow * (size_t)(nin > 0 ? nin : 1) + 16));
    ES_CK(grow_dev(&w->d_lev, &w->cap_lev, R->lpitch * (size_t)prow * (size_t)R->lt));
    ES_CK(grow_dev((void **)&w->d_map, &w->cap_map, (size_t)W * (size_t)nrows * 4));
    if (R->hl == ES_HL_GLOBAL) {
      size_t per = (size_t)(L + 1) * 2 * (size_t)((W + R->bx - 1) / R->bx) * (size_t)R->bx;
      size_t want = ES_GHIST_BYTES > per ? ES_GHIST_BYTES / per * per : per;
      if (w->cap_ghist < want) {
        ES_CK(grow_dev((void **)&w->d_ghist, &w->cap_ghist, want));
        ES_CK(cudaMemset(w->d_ghist, 0, w->cap_ghist));
      }
    }
    if (!in_pinned) ES_CK(grow_pinned(w->h_in, ES_NSLOT, &w->cap_hin, inrow * (size_t)brows));
    if (job->map && !out_pinned)
      ES_CK(out_prepare(w, (size_t)W * 4 * (size_t)brows, (size_t)W * 4 * (size_t)nrows));
  }
  if (job->stats) {
    ES_CK(grow_dev((void **)&w->d_rows, &w->cap_rows, sizeof(double) * 2 * (size_t)nrows));
    ES_CK(grow_pinned(&w->h_rows, 1, &w->cap_hrows, sizeof(double) * 2 * (size_t)nrows));
  }
end:
  return rc;
}

/* Uploads input bands *up_next..target (brows rows each from in0) on s_up, each followed by
 * its ev_up event: by DMA from pinned (or device) memory, else through the pinned slots,
 * a slot refilled once its last upload is done. */
static int upload_bands(es_gpu_worker *w, const es_range *R, const es_job *job, int brows,
                        int in_pinned, cudaStream_t s_up, int *up_next, int target, char *msg,
                        size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const size_t inrow = (size_t)job->in.width * (job->in.depth == 16 ? 2 : 1);
  while (*up_next <= target) {
    const int u = *up_next, slot = u % ES_NSLOT;
    const int r0 = R->in0 + u * brows;
    const int rr = (R->in1 - r0) < brows ? (R->in1 - r0) : brows;
    const char *src = (const char *)job->in.data + (size_t)r0 * job->in.stride;
    char *dst = (char *)w->d_in + (size_t)(u * brows) * inrow;
    if (in_pinned) {
      ES_CK(cudaMemcpy2DAsync(dst, inrow, src, job->in.stride, inrow, (size_t)rr,
                              cudaMemcpyDefault, s_up));
    } else {
      ES_CK(cudaEventSynchronize(w->ev_up[slot])); /* slot free again */
      copy_rows(w->h_in[slot], inrow, src, job->in.stride, inrow, rr);
      ES_CK(cudaMemcpyAsync(dst, w->h_in[slot], inrow * (size_t)rr, cudaMemcpyHostToDevice,
                            s_up));
    }
    ES_CK(cudaEventRecord(w->ev_up[slot], s_up));
    (*up_next)++;
  }
end:
  return rc;
}

/* Band b's map (rows y0..y1 of the range) out on s_down once s_comp has it: by DMA into a
 * pinned map, else into a staging slot, copied out to the caller's map ES_OUT_LAG bands
 * behind (*out_next: the next band to copy out). */
static int download_map_band(es_gpu_worker *w, const es_range *R, const es_job *job, int b,
                             int y0, int y1, int brows, int out_pinned, int one_stream,
                             int *out_next, char *msg, size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const int W = job->in.width;
  /* The out slot of band b was last used by band b - NSLOT: copied out already? */
  while (!out_pinned && *out_next <= b - ES_NSLOT) {
    ES_CK(copy_out_band(w, R, job, *out_next, brows));
    (*out_next)++;
  }
  if (!one_stream) {
    ES_CK(cudaEventRecord(w->ev_comp, w->s_comp));
    ES_CK(cudaStreamWaitEvent(w->s_down, w->ev_comp, 0));
  }
  {
    const float *dsrc = w->d_map + (size_t)y0 * W;
    if (out_pinned)
      ES_CK(cudaMemcpy2DAsync(job->map + (size_t)(R->row0 + y0) * job->map_stride,
                              job->map_stride * 4, dsrc, (size_t)W * 4, (size_t)W * 4,
                              (size_t)(y1 - y0), cudaMemcpyDefault,
                              one_stream ? w->s_comp : w->s_down));
    else
      ES_CK(cudaMemcpyAsync(out_take(w, b), dsrc, (size_t)W * 4 * (size_t)(y1 - y0),
                            cudaMemcpyDeviceToHost, w->s_down));
  }
  ES_CK(cudaEventRecord(w->ev_dn[b % ES_NSLOT], w->s_down));
  /* Copy out ES_OUT_LAG bands behind, while the engines work on the newer ones. */
  while (!out_pinned && *out_next <= b - ES_OUT_LAG) {
    ES_CK(copy_out_band(w, R, job, *out_next, brows));
    (*out_next)++;
  }
end:
  return rc;
}

/* Phase 1's results read back (all streams synchronized) into R, and the geometry
 * es_gpu_bench_kernel re-runs. */
static void range_results(es_gpu_worker *w, es_range *R, const es_job *job, int want_stats,
                          int want_samples, int kernels_only) {
  const int nrows = R->row1 - R->row0, L = job->params.levels;
  const int bins = job->stats ? job->stats_bins : 1;
  if (want_stats) {
    R->hmin = es_bits_float(w->h_acc->minbits);
    R->hmax = es_bits_float(w->h_acc->maxbits);
    R->inside = w->h_acc->inside;
    for (int k = 0; k < bins; k++) R->hist[k] = w->h_acc->hist[k];
    if (R->levhist)
      for (int k = 0; k < L; k++) R->levhist[k] = w->h_acc->levhist[k];
  }
  if (want_samples)
    for (size_t k = 0; k < (size_t)1 << job->in.depth; k++) R->samplehist[k] = w->h_shist[k];
  if (job->stats && R->rowsums && !kernels_only)
    memcpy(R->rowsums, w->h_rows, sizeof(double) * 2 * (size_t)nrows);
  w->last_w = job->in.width;
  w->last_h = job->in.height;
  w->last_depth = job->in.depth;
  w->last_row0 = R->row0;
  w->last_row1 = R->row1;
  w->last_in0 = R->in0;
  w->last_in1 = R->in1;
}

/* Phase 1 of a worker: upload input rows [in0, in1) in bands through pinned slots, quantize
 * and compute bands as their rows arrive, and send map bands back (when the job wants the
 * map) while later bands compute. The map stays on the device for phase 2 (rendering).
 * kernels_only: the input is already on the device (es_gpu_bench_kernel). */
int range_compute(es_gpu_worker *w, es_range *R, const es_job *job, int kernels_only,
                  cudaEvent_t done, char *msg, size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const int W = job->in.width, L = job->params.levels;
  const size_t bps = job->in.depth == 16 ? 2 : 1, inrow = (size_t)W * bps;
  const int nrows = R->row1 - R->row0, prow = nrows + 2 * R->r;
  const int want_stats = job->stats != NULL || (job->render.format != ES_PIX_NONE && job->render.range_auto);
  const int bins = job->stats ? job->stats_bins : 1;
  const int want_map = job->map != NULL;
  const int want_samples = job->stats && R->samplehist; /* and k_samplehist */
  const size_t nsamples = (size_t)1 << job->in.depth;
  /* "pinned": moved directly by DMA (page-locked or device memory; gpu_mem_kind). */
  const int in_kind = kernels_only ? ES_GPU_MEM_PAGEABLE : gpu_mem_kind(job->in.data, NULL);
  const int out_kind = want_map ? gpu_mem_kind(job->map, NULL) : ES_GPU_MEM_PAGEABLE;
  const int in_pinned = in_kind != ES_GPU_MEM_PAGEABLE;
  const int out_pinned = out_kind != ES_GPU_MEM_PAGEABLE;
  /* Device memory both ways (es_compute_device: a CuPy array in, its map out): no PCIe
   * transfer to overlap, so one band, and its copies on s_comp with the kernels: the events
   * between streams only added latency to a call whose kernels take a few hundredths of a
   * millisecond at 1080p (BENCHMARKS Z2). */
  const int one_stream =
      in_kind == ES_GPU_MEM_DEVICE && (!want_map || out_kind == ES_GPU_MEM_DEVICE);
  const int brows = one_stream ? nrows : band_rows(R, job, in_pinned, out_pinned, kernels_only);
  const int nb = (nrows + brows - 1) / brows;
  const int nin = R->in1 - R->in0;
  const int nup = nin > 0 ? (nin + brows - 1) / brows : 0;
  int up_next = 0, out_next = 0, f = 0;
  /* The mask's rows from this range's first output row on the device, or NULL (no mask);
   * kernels_only: uploaded by the run before. */
  const uint8_t *dmask = job->in.mask ? w->d_mask + (size_t)(R->row0 - R->in0) * W : NULL;

  ES_CK(cudaSetDevice(w->device));
  rc = range_buffers(w, R, job, brows, in_pinned, out_pinned, kernels_only, msg, msglen);
  if (rc) goto end;
  if (want_stats) {
    k_acc_init<<<64, 256, 0, w->s_comp>>>(w->d_acc, ES_STATS_MAX_BINS, L);
    ES_CKL("k_acc_init");
  }
  if (want_samples)
    ES_CK(cudaMemsetAsync(w->d_shist, 0, sizeof(unsigned long long) * nsamples, w->s_comp));
  /* The mask's rows in0..in1, whole, on s_comp before the first quantize pass reads them
   * (cudaMemcpyDefault: host memory of any kind, or the device's own). */
  if (job->in.mask && !kernels_only && nin > 0) {
    ES_CK(grow_dev((void **)&w->d_mask, &w->cap_mask, (size_t)W * (size_t)nin));
    dmask = w->d_mask + (size_t)(R->row0 - R->in0) * W;
    ES_CK(cudaMemcpy2DAsync(w->d_mask, (size_t)W, job->in.mask + (size_t)R->in0 * job->in.mask_stride,
                            job->in.mask_stride, (size_t)W, (size_t)nin, cudaMemcpyDefault,
                            w->s_comp));
  }
  if (kernels_only) up_next = nup;

  for (int b = 0; b < nb; b++) {
    const int y0 = b * brows, y1 = y0 + brows < nrows ? y0 + brows : nrows;
    const int g = y1 + 2 * R->r < prow ? y1 + 2 * R->r : prow;
    if (g > f) {
      const int need = kernels_only ? -1 : band_need(R, job, f, g, brows);
      /* Upload through the band the rows need, and one band ahead to keep PCIe busy. */
      rc = upload_bands(w, R, job, brows, in_pinned, one_stream ? w->s_comp : w->s_up,
                        &up_next, need + 1 < nup - 1 ? need + 1 : nup - 1, msg, msglen);
      if (rc) goto end;
      if (need >= 0 && !kernels_only && !one_stream) /* the latest upload follows `need` on s_up */
        ES_CK(cudaStreamWaitEvent(w->s_comp, w->ev_up[(up_next - 1) % ES_NSLOT], 0));
      ES_CK(launch_quant(w, R, job, f, g, want_stats));
      f = g;
    }
    ES_CK(launch_entropy(w, R, job, y0, y1, want_stats && !dmask, bins,
                         want_map || job->stats || job->render.format != ES_PIX_NONE || dmask));
    if (dmask) {
      /* NaN outside, and the statistics of the inside, before the band's map goes out. */
      const size_t n = (size_t)W * (size_t)(y1 - y0);
      const unsigned blocks = (unsigned)(n / 256 + 1 < 1024 ? n / 256 + 1 : 1024);
      const int nbm = want_stats ? bins : 0;
      k_maskfix<<<blocks, 256, (size_t)nbm * 4, w->s_comp>>>(
          w->d_map, (size_t)W, dmask, W, y0, y1, job->params.mask_computed, nbm,
          nbm ? es_stats_binscale(&job->params, bins) : 0.0, w->d_acc);
      ES_CKL("k_maskfix");
    }
    if (want_map && !kernels_only) {
      rc = download_map_band(w, R, job, b, y0, y1, brows, out_pinned, one_stream, &out_next,
                             msg, msglen);
      if (rc) goto end;
    }
  }
  if (job->stats) {
    /* One launch over all rows: a row's sum is sequential, so parallelism comes from rows
     * (per-band launches left the GPU nearly idle: 37 ms instead of 1 at 10240^2). */
    k_rowstats<<<(nrows + 63) / 64, 64, 0, w->s_comp>>>(w->d_map, (size_t)W, W, nrows, w->d_rows,
                                                        dmask);
    ES_CKL("k_rowstats");
    if (!kernels_only)
      ES_CK(cudaMemcpyAsync(w->h_rows, w->d_rows, sizeof(double) * 2 * (size_t)nrows,
                            cudaMemcpyDeviceToHost, w->s_comp));
  }
  if (want_stats) {
    ES_CK(cudaMemcpyAsync(w->h_acc, w->d_acc, offsetof(es_dacc, levhist) + sizeof(unsigned long long) * (size_t)L,
                          cudaMemcpyDeviceToHost, w->s_comp));
  }
  if (want_samples) {
    /* The range's own rows, uploaded by now: their quantize launches waited for them. */
    const size_t n = (size_t)W * (size_t)nrows;
    const unsigned blocks = (unsigned)(n / 256 + 1 < 1024 ? n / 256 + 1 : 1024);
    k_samplehist<<<blocks, 256, 0, w->s_comp>>>((const char *)w->d_in + (size_t)(R->row0 - R->in0) * inrow,
                                                inrow, W, nrows, job->in.depth, w->d_shist, dmask);
    ES_CKL("k_samplehist");
    ES_CK(cudaMemcpyAsync(w->h_shist, w->d_shist, sizeof(unsigned long long) * nsamples,
                          cudaMemcpyDeviceToHost, w->s_comp));
  }
  /* Everything of this range is on s_comp now: the benchmark's end event goes here, before
   * the host's waits below (after them it timed the host's round trip too: BENCHMARKS R2). */
  if (done) ES_CK(cudaEventRecord(done, w->s_comp));
  gate_release(w); /* every launch of the repetition is queued: let k_gate end */
  while (want_map && !kernels_only && !out_pinned && out_next < nb) {
    ES_CK(copy_out_band(w, R, job, out_next, brows));
    out_next++;
  }
  ES_CK(cudaStreamSynchronize(w->s_comp));
  ES_CK(cudaStreamSynchronize(w->s_down));
  ES_CK(cudaStreamSynchronize(w->s_up));
  range_results(w, R, job, want_stats, want_samples, kernels_only);
end:
  if (rc) {
    /* Leave the worker usable: drain what was queued before the failure. */
    cudaStreamSynchronize(w->s_up);
    cudaStreamSynchronize(w->s_comp);
    cudaStreamSynchronize(w->s_down);
    cudaGetLastError();
  }
  return rc;
}

/* Device rows -> host rows: straight DMA into pinned destinations, else through the pinned
 * out slots, the host copy of one chunk overlapping the DMA of the next. Queued on s_down
 * after everything s_comp holds so far. */
static int download_rows(es_gpu_worker *w, void *dst, size_t dstride, const void *dsrc,
                         size_t rowbytes, int rows, char *msg, size_t msglen) {
  int rc = ES_OK, dev = w->device;
  int chunk, nch, done = 0;
  ES_CK(cudaEventRecord(w->ev_comp, w->s_comp));
  ES_CK(cudaStreamWaitEvent(w->s_down, w->ev_comp, 0));
  if (rows <= 0) goto end;
  if (gpu_is_pinned(dst)) {
    ES_CK(cudaMemcpy2DAsync(dst, dstride, dsrc, rowbytes, rowbytes, (size_t)rows,
                            cudaMemcpyDeviceToHost, w->s_down));
    ES_CK(cudaStreamSynchronize(w->s_down));
    goto end;
  }
  {
    /* Chunks of one band at most, in slots no larger than this download needs (the
     * warm-up's 37x23 render had grown the staging to ES_NSLOT whole bands); a download
     * under ES_OUT_RING_FROM keeps to ES_NSLOT slots (out_prepare). */
    size_t total = rowbytes * (size_t)rows, want = total < ES_BAND_BYTES ? total : ES_BAND_BYTES;
    chunk = want < rowbytes ? 1 : (int)(want / rowbytes);
    if (chunk > rows) chunk = rows;
    ES_CK(out_prepare(w, rowbytes * (size_t)chunk, total));
  }
  nch = (rows + chunk - 1) / chunk;
  for (int c = 0; c <= nch; c++) {
    if (c < nch) {
      if (c >= ES_NSLOT) { /* the slot's previous chunk must be copied out first */
        int o = done, oy = o * chunk, orr = oy + chunk < rows ? chunk : rows - oy;
        ES_CK(cudaEventSynchronize(w->ev_dn[o % ES_NSLOT]));
        copy_rows((char *)dst + (size_t)oy * dstride, dstride, w->h_outp[o % ES_NSLOT], rowbytes,
                  rowbytes, orr);
        done++;
      }
      int y = c * chunk, rr = y + chunk < rows ? chunk : rows - y;
      ES_CK(cudaMemcpyAsync(out_take(w, c), (const char *)dsrc + (size_t)y * rowbytes,
                            rowbytes * (size_t)rr, cudaMemcpyDeviceToHost, w->s_down));
      ES_CK(cudaEventRecord(w->ev_dn[c % ES_NSLOT], w->s_down));
    }
    while (done < c) { /* keep at most one chunk in flight behind the newest */
      int o = done, oy = o * chunk, orr = oy + chunk < rows ? chunk : rows - oy;
      ES_CK(cudaEventSynchronize(w->ev_dn[o % ES_NSLOT]));
      copy_rows((char *)dst + (size_t)oy * dstride, dstride, w->h_outp[o % ES_NSLOT], rowbytes,
                rowbytes, orr);
      done++;
    }
  }
end:
  return rc;
}

/* Phase 2 of a worker: render its rows from the map it kept, with the frame's lo/inv, and
 * bring back only the planes. */
int range_render(es_gpu_worker *w, const es_range *R, const es_job *job, double lo,
                 double inv, int kernels_only, char *msg, size_t msglen) {
  int rc = ES_OK, dev = w->device;
  const int fmt = job->render.format, W = job->in.width, rows = R->row1 - R->row0;
  const int np = es_pix_planes(fmt);
  es_rparams P;
  size_t off[3] = {0, 0, 0}, total = 0;
  int prow[3];
  memset(&P, 0, sizeof P);
  ES_CK(cudaSetDevice(w->device));
  for (int i = 0; i < np; i++) {
    P.ps[i] = es_pix_stride(fmt, i, W);
    prow[i] = (fmt == ES_PIX_YUV420P && i > 0) ? (rows + 1) / 2 : rows;
    off[i] = total;
    total += P.ps[i] * (size_t)prow[i];
  }
  if (!kernels_only) ES_CK(grow_dev((void **)&w->d_pix, &w->cap_pix, total));
  for (int i = 0; i < np; i++) P.pl[i] = w->d_pix + off[i];
  if (fmt != ES_PIX_GRAY8 && fmt != ES_PIX_GRAY16) {
    const uint8_t *lut = es_colormap_lut(job->render.colormap);
    if (!lut) {
      es_gpu_msg(msg, msglen, "GPU %s%d: unknown colormap", "", dev);
      rc = ES_ERR_USAGE;
      goto end;
    }
    ES_CK(cudaMemcpyAsync(w->d_lut, lut, 768, cudaMemcpyHostToDevice, w->s_comp));
  }
  P.map = w->d_map;
  P.mpitch = (size_t)W;
  P.in = w->d_in;
  P.in_pitch = (size_t)W * (job->in.depth == 16 ? 2 : 1);
  P.in0 = R->in0;
  P.row0 = R->row0;
  P.depth = job->in.depth;
  P.W = W;
  P.rows = rows;
  P.fmt = fmt;
  P.lo = lo;
  P.inv = inv;
  P.a256 = es_render_a256(&job->render);
  P.lut = w->d_lut;
  {
    /* One block row a row (a chroma row for YUV420P): ranges of more than ES_GRID_Y_MAX
     * rows (a 1000 x 70000 image) are rendered in launches of ES_RENDER_ROWS map rows, each
     * with its rows' map, planes and first row; before, their one launch was refused
     * (invalid configuration) and every such frame fell back to the CPU. */
    int tx = fmt == ES_PIX_YUV420P ? (W + 1) / 2 : W;
    for (int c0 = 0; c0 < rows; c0 += ES_RENDER_ROWS) {
      es_rparams Pc = P;
      const int cr = rows - c0 < ES_RENDER_ROWS ? rows - c0 : ES_RENDER_ROWS;
      Pc.map = P.map + (size_t)c0 * P.mpitch;
      Pc.row0 = P.row0 + c0;
      Pc.rows = cr;
      for (int i = 0; i < np; i++)
        Pc.pl[i] = P.pl[i] + (size_t)((fmt == ES_PIX_YUV420P && i > 0) ? c0 / 2 : c0) * P.ps[i];
      dim3 grid((unsigned)((tx + 127) / 128),
                (unsigned)(fmt == ES_PIX_YUV420P ? (cr + 1) / 2 : cr));
      k_render<<<grid, 128, 0, w->s_comp>>>(Pc);
      ES_CKL("k_render");
    }
  }
  if (kernels_only) goto end;
  for (int i = 0; i < np; i++) {
    int r0 = (fmt == ES_PIX_YUV420P && i > 0) ? R->row0 / 2 : R->row0;
    rc = download_rows(w, job->pix.plane[i] + (size_t)r0 * job->pix.stride[i], job->pix.stride[i],
                       P.pl[i], P.ps[i], prow[i], msg, msglen);
    if (rc) goto end;
  }
  ES_CK(cudaStreamSynchronize(w->s_down));
end:
  return rc;
}

/* ---- a job cut by rows into ranges, one a worker ---- */

/* A job split by rows (es_gpu.h): the ranges, what their phase 1 gives back (histograms,
 * row sums) and the job as the ranges compute it. */
struct es_gpu_split {
  es_job job;          /* float samples (depth 32) replaced by their levels and inside */
  int levels_entropy;  /* depth 32: the global entropy is that of the levels */
  int m;               /* ranges: a worker whose share of rows rounds to none gets none */
  es_gpu_worker *ws[ES_MAX_GPUS]; /* the worker of each range */
  es_range *Rs;
  uint64_t *lh, *lsum; /* the levels' histograms: one a range, and their sum */
  uint64_t *sh, *ssum; /* the raw samples' (global_entropy), where the levels' are not theirs */
  double *rows;        /* 2 a row (sum, sumsq), NULL without statistics */
  uint16_t *samples;   /* depth 32: the levels and the inside (es_float_levels), else NULL */
  uint8_t *mask;
  double lo, inv;      /* the rendering's range, from es_gpu_split_gather */
};

/* Float samples (depth 32): their levels as 16-bit samples and their inside as a mask, on
 * the host by es_float_levels (the one conversion every engine takes), then as any job. The
 * samples must be host memory. */
static int split_float(es_gpu_split *s, char *msg, size_t msglen) {
  const es_job *job = &s->job;
  if (gpu_mem_kind(job->in.data, NULL) == ES_GPU_MEM_DEVICE) {
    if (msg && msglen) snprintf(msg, msglen, "float samples in device memory: not supported");
    return ES_ERR_USAGE;
  }
  const size_t np = (size_t)job->in.width * job->in.height;
  s->samples = (uint16_t *)malloc(np * sizeof *s->samples);
  s->mask = (uint8_t *)malloc(np);
  if (!s->samples || !s->mask) {
    if (msg && msglen) snprintf(msg, msglen, "out of memory for a %dx%d image", job->in.width, job->in.height);
    return ES_ERR_NOMEM;
  }
  es_float_levels(&job->in, &job->params, s->samples, s->mask);
  s->job.in.data = s->samples;
  s->job.in.stride = (size_t)job->in.width * sizeof *s->samples;
  s->job.in.depth = 16;
  s->job.in.mask = s->mask;
  s->job.in.mask_stride = (size_t)job->in.width;
  s->levels_entropy = 1;
  return es_job_check(&s->job, msg, msglen);
}

/* The ranges: rows split at even boundaries (a YUV420P chroma row never straddles two
 * devices), each with its part of the histograms and row sums. */
static int split_plan(es_gpu_split *s, es_gpu_worker **ws, int n) {
  const es_job *job = &s->job;
  const int H = job->in.height, L = job->params.levels;
  const size_t nsamples = (size_t)1 << job->in.depth;
  /* Raw samples' histograms (global_entropy), one a range, where the levels' are not theirs */
  const int own_samples =
      job->stats && (job->in.mask || es_stats_sample_hist_own(L, job->in.depth));
  s->Rs = (es_range *)calloc((size_t)n, sizeof *s->Rs);
  s->lh = (uint64_t *)calloc((size_t)n * (size_t)L, sizeof *s->lh);
  s->lsum = (uint64_t *)calloc((size_t)L, sizeof *s->lsum);
  s->rows = job->stats ? (double *)malloc(sizeof(double) * 2 * (size_t)H) : NULL;
  s->sh = own_samples ? (uint64_t *)calloc((size_t)n * nsamples, sizeof *s->sh) : NULL;
  s->ssum = own_samples ? (uint64_t *)calloc(nsamples, sizeof *s->ssum) : NULL;
  if (!s->Rs || !s->lh || !s->lsum || (job->stats && !s->rows) ||
      (own_samples && (!s->sh || !s->ssum)))
    return ES_ERR_NOMEM;
  for (int i = 0; i < n; i++) {
    int a = (int)((long long)H * i / n) & ~1, b = i == n - 1 ? H : (int)((long long)H * (i + 1) / n) & ~1;
    if (b <= a) continue;
    es_range *R = &s->Rs[s->m];
    R->row0 = a;
    R->row1 = b;
    R->levhist = s->lh + (size_t)s->m * L;
    R->samplehist = s->sh ? s->sh + (size_t)s->m * nsamples : NULL;
    R->rowsums = s->rows ? s->rows + 2 * (size_t)a : NULL;
    range_plan(R, job, ws[i]);
    s->ws[s->m++] = ws[i];
  }
  return ES_OK;
}

extern "C" int es_gpu_split_open(es_gpu_split **out, es_gpu_worker **ws, int n, const es_job *job,
                                 char *msg, size_t msglen) {
  es_gpu_split *s = NULL;
  int rc = es_job_check(job, msg, msglen);
  *out = NULL;
  if (rc) return rc;
  s = (es_gpu_split *)calloc(1, sizeof *s);
  if (!s) return ES_ERR_NOMEM;
  s->job = *job;
  if (job->in.depth == 32) {
    rc = split_float(s, msg, msglen);
    if (rc) goto end;
  }
  if (n < 1 || n > ES_MAX_GPUS || !ws) {
    if (msg && msglen) snprintf(msg, msglen, "GPU: %d workers (1..%d)", n, ES_MAX_GPUS);
    rc = ES_ERR_USAGE;
    goto end;
  }
  for (int i = 0; i < n; i++) {
    if (!ws[i]) {
      if (msg && msglen) snprintf(msg, msglen, "GPU: worker %d is NULL", i);
      rc = ES_ERR_USAGE;
      goto end;
    }
  }
  rc = split_plan(s, ws, n);
end:
  if (rc) es_gpu_split_close(&s);
  *out = s;
  return rc;
}

extern "C" int es_gpu_split_ranges(const es_gpu_split *s) { return s ? s->m : 0; }

extern "C" es_gpu_worker *es_gpu_split_worker(const es_gpu_split *s, int i) {
  return s && i >= 0 && i < s->m ? s->ws[i] : NULL;
}

extern "C" int es_gpu_split_compute(es_gpu_split *s, int i, int copy_threads, char *msg,
                                    size_t msglen) {
  const int saved = tl_copy_threads;
  tl_copy_threads = copy_threads;
  const int rc = range_compute(s->ws[i], &s->Rs[i], &s->job, 0, NULL, msg, msglen);
  tl_copy_threads = saved;
  return rc;
}

extern "C" int es_gpu_split_gather(es_gpu_split *s) {
  const es_job *job = &s->job;
  const es_range *Rs = s->Rs;
  const int m = s->m, H = job->in.height, L = job->params.levels;
  const int bins = job->stats ? job->stats_bins : 1;
  const int want_stats = job->stats != NULL || (job->render.format != ES_PIX_NONE && job->render.range_auto);
  const size_t nsamples = (size_t)1 << job->in.depth;
  float hmin = 0.0f, hmax = 0.0f;
  double sum = 0.0, sumsq = 0.0;
  if (want_stats) {
    hmin = Rs[0].hmin;
    hmax = Rs[0].hmax;
    for (int i = 0; i < m; i++) {
      if (Rs[i].hmin < hmin) hmin = Rs[i].hmin;
      if (Rs[i].hmax > hmax) hmax = Rs[i].hmax;
      for (int k = 0; k < L; k++) s->lsum[k] += Rs[i].levhist[k];
      if (s->ssum)
        for (size_t k = 0; k < nsamples; k++) s->ssum[k] += Rs[i].samplehist[k];
    }
  }
  /* Rows in order, as the CPU engine adds them: the same bits whatever the split. */
  for (int y = 0; s->rows && y < H; y++) {
    sum += s->rows[2 * (size_t)y];
    sumsq += s->rows[2 * (size_t)y + 1];
  }
  if (job->stats) {
    es_stats *st = job->stats;
    es_stats_acc acc;
    acc.sum = sum;
    acc.sumsq = sumsq;
    acc.min = hmin;
    acc.max = hmax;
    acc.count = (int64_t)job->in.width * H;
    if (job->in.mask) { /* the inside pixels, counted on the devices (k_maskfix): the
                         * mask may be device memory (es_compute_device) */
      acc.count = 0;
      for (int i = 0; i < m; i++) acc.count += (int64_t)Rs[i].inside;
    }
    memset(st->hist, 0, sizeof st->hist);
    for (int i = 0; i < m; i++)
      for (int k = 0; k < bins; k++) st->hist[k] += Rs[i].hist[k];
    st->bins = bins;
    es_stats_finish(st, &acc, s->lsum, L, s->ssum ? s->ssum : s->lsum, job->in.depth);
    if (s->levels_entropy) st->global_entropy = st->global_entropy_levels;
  }
  if (job->render.format == ES_PIX_NONE) return 0;
  es_render_range(&job->params, &job->render, hmin, hmax, &s->lo, &s->inv);
  return 1;
}

extern "C" int es_gpu_split_render(es_gpu_split *s, int i, int copy_threads, char *msg,
                                   size_t msglen) {
  const int saved = tl_copy_threads;
  tl_copy_threads = copy_threads;
  const int rc = range_render(s->ws[i], &s->Rs[i], &s->job, s->lo, s->inv, 0, msg, msglen);
  tl_copy_threads = saved;
  return rc;
}

extern "C" void es_gpu_split_close(es_gpu_split **ps) {
  if (!ps || !*ps) return;
  es_gpu_split *s = *ps;
  free(s->Rs);
  free(s->lh);
  free(s->lsum);
  free(s->rows);
  free(s->sh);
  free(s->ssum);
  free(s->samples);
  free(s->mask);
  free(s);
  *ps = NULL;
}

/* A split's ranges in turn on this thread, its staging copies on the thread's own team: a
 * job on one worker (es_gpu_run, the warm-up). Several GPUs at once: es_split_run
 * (pipeline/split_run.c). */
static int split_run_here(es_gpu_worker **ws, int n, const es_job *job, char *msg,
                          size_t msglen) {
  es_gpu_split *s = NULL;
  int rc = es_gpu_split_open(&s, ws, n, job, msg, msglen);
  for (int i = 0; rc == ES_OK && i < s->m; i++) rc = es_gpu_split_compute(s, i, 0, msg, msglen);
  if (rc == ES_OK && es_gpu_split_gather(s))
    for (int i = 0; rc == ES_OK && i < s->m; i++) rc = es_gpu_split_render(s, i, 0, msg, msglen);
  es_gpu_split_close(&s);
  return rc;
}

extern "C" int es_gpu_run(es_gpu_worker *w, const es_job *job, char *msg, size_t msglen) {
  return split_run_here(&w, 1, job, msg, msglen);
}

/* ---- the naive baseline (the other benchmark entry points: es_gpu_bench.cu) ---- */

extern "C" int es_gpu_naive(es_gpu_worker *w, const es_image *img, const es_params *p, float *out,
                            size_t out_stride, float *kernel_ms, char *msg, size_t msglen) {
  int rc, dev = w ? w->device : -1;
  es_job job;
  es_range R;
  es_eparams E;
  size_t inrow;
  memset(&job, 0, sizeof job);
  job.in = *img;
  job.params = *p;
  rc = es_job_check(&job, msg, msglen);
  if (rc) return rc;
  if (p->levels > 256) {
    if (msg && msglen) snprintf(msg, msglen, "naive kernel: levels %d: must be 2..256", p->levels);
    return ES_ERR_USAGE;
  }
  memset(&R, 0, sizeof R);
  R.row0 = 0;
  R.row1 = img->height;
  range_plan(&R, &job, w);
  inrow = (size_t)img->width * (img->depth == 16 ? 2 : 1);
  ES_CK(cudaSetDevice(w->device));
  ES_CK(grow_dev(&w->d_in, &w->cap_in, inrow * (size_t)(R.in1 - R.in0) + 16));
  ES_CK(grow_dev(&w->d_lev, &w->cap_lev, R.lpitch * (size_t)(img->height + 2 * R.r) * (size_t)R.lt));
  ES_CK(grow_dev((void **)&w->d_map, &w->cap_map, (size_t)img->width * img->height * 4));
  ES_CK(cudaMemcpy2DAsync(w->d_in, inrow, (const char *)img->data + (size_t)R.in0 * img->stride,
                          img->stride, inrow, (size_t)(R.in1 - R.in0), cudaMemcpyHostToDevice,
                          w->s_comp));
  ES_CK(launch_quant(w, &R, &job, 0, img->height + 2 * R.r, 0));
  memset(&E, 0, sizeof E);
  E.lev = w->d_lev;
  E.lpitch = R.lpitch;
  E.W = img->width;
  E.y1 = img->height;
  E.r = R.r;
  E.area = R.area;
  E.levels = p->levels;
  E.dfl = w->d_dfl;
  E.log2n = w->d_log2n;
  E.flog = w->d_flog;
  E.scale = w->d_scale;
  E.oscale = es_out_scale(p->base);
  E.map = w->d_map;
  E.mpitch = (size_t)img->width;
  for (int i = 0; i < 2 * R.r + 1; i++) E.hw[i] = R.win.hw[i];
  {
    /* One block row a row: images of more than ES_GRID_Y_MAX rows in several launches, each
     * starting at its first row's levels and map row. */
    ES_CK(cudaEventRecord(w->ev_t0, w->s_comp));
    for (int c0 = 0; c0 < img->height; c0 += ES_GRID_Y_MAX) {
      const int cr = img->height - c0 < ES_GRID_Y_MAX ? img->height - c0 : ES_GRID_Y_MAX;
      es_eparams Ec = E;
      Ec.lev = (const char *)E.lev + (size_t)c0 * R.lpitch * (size_t)R.lt;
      Ec.map = E.map + (size_t)c0 * E.mpitch;
      Ec.y1 = cr;
      dim3 grid((unsigned)((img->width + 127) / 128), (unsigned)cr);
      if (R.lt == 1)
        k_naive<uint8_t><<<grid, 128, 0, w->s_comp>>>(Ec);
      else
        k_naive<uint16_t><<<grid, 128, 0, w->s_comp>>>(Ec);
      ES_CKL("k_naive");
    }
    ES_CK(cudaEventRecord(w->ev_t1, w->s_comp));
  }
  if (out)
    ES_CK(cudaMemcpy2DAsync(out, out_stride * 4, w->d_map, (size_t)img->width * 4,
                            (size_t)img->width * 4, (size_t)img->height, cudaMemcpyDeviceToHost,
                            w->s_comp));
  ES_CK(cudaStreamSynchronize(w->s_comp));
  if (kernel_ms) ES_CK(cudaEventElapsedTime(kernel_ms, w->ev_t0, w->ev_t1));
  w->last_w = 0; /* d_in no longer holds a job's range */
end:
  return rc;
}
