/*
 * gpu_kernels.cuh - the device kernels of the CUDA engine (included by es_gpu.cu only):
 * quantize+pad, the sliding-histogram entropy kernels with fused statistics (k_entropy, one
 * output column a thread, any window; k_entropy4, four columns, square K <= 7 and L <= 31;
 * k_entropy2, two columns, square windows of run-time size), rendering, and the naive
 * baseline. Every result goes through es_math.h, so the bits equal the CPU engine's.
 *
 * Geometry: a worker computes output rows [row0, row1) of the image (local row y = global
 * row row0 + y). The level image `lev` is padded by r on every side: padded (p, c) holds
 * the level of image pixel (row0 + p - r, c - r) after the border rule: reflect maps the
 * index back into the image, clip stores the sentinel level L (a histogram bin that S
 * ignores and that makes N = area - count[L]). So the entropy kernel has no bounds checks.
 */
#ifndef ES_GPU_KERNELS_CUH
#define ES_GPU_KERNELS_CUH

#include <stdint.h>

#include "es_gpu_internal.cuh" /* ES_HL_*: the histogram layouts */
#include "es_kernels.h"

/* Programmatic dependent launch (sm_90): a quantize pass lets the entropy kernel after it be
 * scheduled once all its blocks have started; the entropy kernel sets up its shared memory,
 * then waits for the pass to complete and its stores to be visible. Without the launch
 * attribute (launch_strips) the wait returns at once. */
__device__ __forceinline__ void es_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void es_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Device accumulators of the fused statistics (one set per worker, zeroed by k_acc_init). */
struct es_dacc {
  unsigned int minbits, maxbits; /* float bits of min/max of H (H >= 0: int order = float order) */
  unsigned long long hist[ES_STATS_MAX_BINS];
  unsigned long long inside; /* pixels inside the mask (k_maskfix; with statistics only) */
  unsigned long long levhist[65536];
};

__global__ void k_acc_init(es_dacc *a, int bins, int levels) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) {
    a->minbits = 0x7f800000u;
    a->maxbits = 0u;
    a->inside = 0ull;
  }
  for (int k = i; k < bins; k += gridDim.x * blockDim.x) a->hist[k] = 0;
  for (int k = i; k < levels; k += gridDim.x * blockDim.x) a->levhist[k] = 0;
}


/* The raw samples' histogram of n = W x nrows samples in tight rows of `pitch` bytes from
 * `in` (global_entropy: FFmpeg's entropy filter's histogram; the host takes the log sum
 * from these integer counts, as for the CPU engine). 8-bit: 256 shared counters a block,
 * flushed with one atomic a sample value; 16-bit: into hist (zeroed by the caller), one
 * atomic per run of equal samples in a warp (a flat image would send every lane of every
 * warp to one address). Grid-stride; blocks of 256 threads. */
__global__ void k_samplehist(const void *in, size_t pitch, int W, int nrows, int depth,
                             unsigned long long *hist, const uint8_t *mask) {
  __shared__ unsigned int sh[256];
  const size_t n = (size_t)W * (size_t)nrows;
  if (depth == 8) {
    sh[threadIdx.x] = 0u;
    __syncthreads();
  }
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const size_t y = i / (size_t)W, x = i - y * (size_t)W;
    const unsigned char *row = (const unsigned char *)in + y * pitch;
    /* mask (W bytes a row, or NULL): only the inside samples are counted */
    const bool in = !mask || mask[y * (size_t)W + x];
    if (depth == 8) {
      if (in) atomicAdd(&sh[row[x]], 1u);
    } else {
      /* An outside sample takes a value no sample has, so the lanes stay converged. */
      const unsigned v = in ? ((const uint16_t *)row)[x] : 0x10000u; /* native endian */
      const unsigned same = __match_any_sync(__activemask(), v);
      if (in && (threadIdx.x & 31) == (unsigned)(__ffs(same) - 1))
        atomicAdd(&hist[v], (unsigned long long)__popc(same));
    }
  }
  if (depth == 8) {
    __syncthreads();
    if (sh[threadIdx.x]) atomicAdd(&hist[threadIdx.x], (unsigned long long)sh[threadIdx.x]);
  }
}

struct es_qparams {
  const void *in;   /* device copy of image rows [in0, ...), tight rows of in_pitch bytes */
  size_t in_pitch;
  int in0;
  int depth, W, H;
  int row0, nrows; /* the range this worker computes */
  int r, levels, border;
  void *lev;       /* padded level image */
  size_t lpitch;   /* elements */
  unsigned long long *levhist; /* or NULL: no level histogram */
  const uint8_t *mask; /* or NULL: the image's mask rows from in0, W bytes a row; a pixel
                        * outside is the sentinel level L, as past a clip border */
};

/* A quantize block's count of the levels of its range's own pixels: in the block's 256
 * shared words where L <= 256 (sh, zeroed here; flush adds them to levhist, one atomic a
 * level), else straight into levhist. Block-uniform, as its __syncthreads need. */
struct es_qhist {
  unsigned int *sh;
  bool shared;
  __device__ __forceinline__ es_qhist(unsigned int *s, const es_qparams &Q)
      : sh(s), shared(Q.levhist && Q.levels <= 256) {
    if (shared) {
      sh[threadIdx.x] = 0;
      __syncthreads();
    }
  }
  __device__ __forceinline__ void add(const es_qparams &Q, uint32_t q) const {
    if (shared)
      atomicAdd(&sh[q], 1u);
    else
      atomicAdd(&Q.levhist[q], 1ull);
  }
  __device__ __forceinline__ void flush(const es_qparams &Q) const {
    if (shared) {
      __syncthreads();
      for (int k = threadIdx.x; k < Q.levels; k += blockDim.x)
        if (sh[k]) atomicAdd(&Q.levhist[k], (unsigned long long)sh[k]);
    }
  }
};

/* Quantizes padded rows [p0, p1) into lev; counts the levels of the range's own pixels
 * (each image pixel once, whatever the halos) into levhist. Block: 256 threads along x,
 * QROWS rows per block. */
#define ES_QROWS 8
template <typename LT>
__global__ void __launch_bounds__(256) k_quant(const es_qparams Q, int p0, int p1) {
  es_pdl_trigger();
  __shared__ unsigned int sh[256];
  const es_qhist lh(sh, Q);
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int pw = Q.W + 2 * Q.r;
  int pb = p0 + blockIdx.y * ES_QROWS;
  int pe = min(pb + ES_QROWS, p1);
  if ((size_t)c < Q.lpitch) { /* the pitch's slack past pw: the sentinel (k_entropy2 reads it) */
    int j = c - Q.r;
    bool jin = j >= 0 && j < Q.W;
    int jj = c >= pw ? -1 : (jin ? j : (Q.border == ES_BORDER_REFLECT ? es_reflect(j, Q.W) : -1));
    for (int p = pb; p < pe; p++) {
      int i = Q.row0 + p - Q.r;
      bool iin = i >= 0 && i < Q.H;
      int ii = iin ? i : (Q.border == ES_BORDER_REFLECT ? es_reflect(i, Q.H) : -1);
      uint32_t q;
      if (ii < 0 || jj < 0) {
        q = (uint32_t)Q.levels; /* clip: outside the image */
      } else {
        const char *row = (const char *)Q.in + (size_t)(ii - Q.in0) * Q.in_pitch;
        uint32_t v = Q.depth == 16 ? (uint32_t)((const uint16_t *)row)[jj]
                                   : (uint32_t)((const uint8_t *)row)[jj];
        q = es_quantize(v, (uint32_t)Q.levels, Q.depth);
        if (Q.mask && !Q.mask[(size_t)(ii - Q.in0) * (size_t)Q.W + jj]) {
          q = (uint32_t)Q.levels; /* outside the mask: in no window, in no count */
        } else if (Q.levhist && jin && i >= Q.row0 && i < Q.row0 + Q.nrows) {
          lh.add(Q, q);
        }
      }
      ((LT *)Q.lev)[(size_t)p * Q.lpitch + c] = (LT)q;
    }
  }
  lh.flush(Q);
}

/* k_quant for 8-bit levels, four padded columns a thread and one 32-bit store a row (the
 * padded rows are 16-byte multiples). The columns' source indices are worked out once;
 * 8-bit rows with all four columns inside the image take four byte loads and
 * (v * L) >> 8 (= es_quantize for depth 8, in 32 bits). Same levels and counts as k_quant,
 * which did ~30 instructions a pixel (BENCHMARKS Q2). It also fills the pitch's slack past
 * the padded width with the sentinel level: k_entropy4 reads it for the columns past the
 * image's last one. A block takes ES_QROWS4 rows (8 until BENCHMARKS V7: 4 fills more of
 * the chip at small sizes, 2560^2 38.1 -> 36.0 us). */
#define ES_QROWS4 4
/* Four 8-bit samples quantized at once, (v * L) >> 8 each: two 16-bit lanes a multiply
 * (v * L <= 255 * 256 fits in 16 bits). */
__device__ __forceinline__ uint32_t es_quant_word(uint32_t v, uint32_t L) {
  const uint32_t e = (((v & 0x00ff00ffu) * L) >> 8) & 0x00ff00ffu;
  const uint32_t o = (((v >> 8) & 0x00ff00ffu) * L) & 0xff00ff00u;
  return e | o;
}
template <bool U>
__global__ void __launch_bounds__(256) k_quant4(const es_qparams Q, int p0, int p1) {
  es_pdl_trigger();
  __shared__ unsigned int sh[256];
  const es_qhist lh(sh, Q);
  const int c0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  const int pw = Q.W + 2 * Q.r;
  const int pb = p0 + blockIdx.y * ES_QROWS4;
  const int pe = min(pb + ES_QROWS4, p1);
  const uint32_t L = (uint32_t)Q.levels;
  if ((size_t)c0 < Q.lpitch) {
    int jj[4];
    bool jin[4], all = Q.depth == 8;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const int j = c0 + k - Q.r;
      jin[k] = j >= 0 && j < Q.W;
      /* -1: the sentinel (clip outside the image, or the pitch's slack past pw) */
      jj[k] = c0 + k >= pw
                  ? -1
                  : (jin[k] ? j : (Q.border == ES_BORDER_REFLECT ? es_reflect(j, Q.W) : -1));
      all = all && jin[k];
    }
    /* U: a block's ES_QROWS4 rows all inside the image, 8-bit, the four columns inside: every
     * row's bytes loaded before any is quantized and stored, so ES_QROWS4 rows of loads are in
     * flight a thread rather than one (BENCHMARKS R4). */
    const int i0 = Q.row0 + pb - Q.r;
    if (U && all && pe - pb == ES_QROWS4 && i0 >= 0 && i0 + ES_QROWS4 <= Q.H) {
      const uint8_t *s0 = (const uint8_t *)Q.in + (size_t)(i0 - Q.in0) * Q.in_pitch + (c0 - Q.r);
      /* A row's four bytes from the two aligned words around them (the input buffer has 16
       * bytes of slack past its end), then one funnel shift: two loads a row instead of
       * four byte loads (BENCHMARKS V8: 10240^2 357.0 -> 348.4 us). */
      uint32_t w0[ES_QROWS4], w1[ES_QROWS4], sh8[ES_QROWS4];
#pragma unroll
      for (int t = 0; t < ES_QROWS4; t++) {
        const uintptr_t a = (uintptr_t)(s0 + (size_t)t * Q.in_pitch);
        const uint32_t *wp = (const uint32_t *)(a & ~(uintptr_t)3);
        w0[t] = __ldg(wp);
        w1[t] = __ldg(wp + 1);
        sh8[t] = 8u * (uint32_t)(a & 3);
      }
#pragma unroll
      for (int t = 0; t < ES_QROWS4; t++) {
        const uint32_t qw = es_quant_word(__funnelshift_r(w0[t], w1[t], sh8[t]), L);
        const int i = i0 + t;
        if (Q.levhist && i >= Q.row0 && i < Q.row0 + Q.nrows) {
#pragma unroll
          for (int k = 0; k < 4; k++) lh.add(Q, (qw >> (8 * k)) & 0xffu);
        }
        *(uint32_t *)((uint8_t *)Q.lev + (size_t)(pb + t) * Q.lpitch + c0) = qw;
      }
    } else {
      for (int p = pb; p < pe; p++) {
        const int i = Q.row0 + p - Q.r;
        const bool iin = i >= 0 && i < Q.H;
        const int ii = iin ? i : (Q.border == ES_BORDER_REFLECT ? es_reflect(i, Q.H) : -1);
        uint32_t q[4];
        const char *row = (const char *)Q.in + (size_t)(ii - Q.in0) * Q.in_pitch;
        if (ii >= 0 && all) {
          const uint8_t *s = (const uint8_t *)row + (c0 - Q.r);
#pragma unroll
          for (int k = 0; k < 4; k++) q[k] = ((uint32_t)s[k] * L) >> 8;
        } else {
#pragma unroll
          for (int k = 0; k < 4; k++) {
            if (ii < 0 || jj[k] < 0) {
              q[k] = L;
            } else {
              const uint32_t v = Q.depth == 16 ? (uint32_t)((const uint16_t *)row)[jj[k]]
                                               : (uint32_t)((const uint8_t *)row)[jj[k]];
              q[k] = es_quantize(v, L, Q.depth);
            }
          }
        }
        if (Q.levhist && i >= Q.row0 && i < Q.row0 + Q.nrows) {
#pragma unroll
          for (int k = 0; k < 4; k++) {
            if (jin[k]) lh.add(Q, q[k]);
          }
        }
        *(uint32_t *)((uint8_t *)Q.lev + (size_t)p * Q.lpitch + c0) =
            q[0] | (q[1] << 8) | (q[2] << 16) | (q[3] << 24);
      }
    }
  }
  lh.flush(Q);
}

struct es_eparams {
  const void *lev;
  size_t lpitch;        /* elements */
  int W;
  int y0, y1;           /* local output rows of this launch */
  int ty;               /* output rows per thread (strip height) */
  int strip0;           /* first strip of this launch (global-histogram mode launches in groups) */
  int r, area, levels;
  int dshared;          /* entries of the delta table copied to shared memory (0: global) */
  int drep;             /* 1: the shared table is replicated per lane (dshared = area * 32) */
  const unsigned int *dfl; /* dfl[c] = flog[c+1] - flog[c] (< 2^31) */
  const double *log2n, *scale;
  const unsigned long long *flog; /* f table: the sentinel's share of S */
  double oscale;
  double log2n_area, scale_area; /* log2n[area], scale[area]: N inside the image (k_entropy4) */
  float *map;           /* local row y at map + y * mpitch, or NULL */
  size_t mpitch;
  unsigned short *ghist; /* global-histogram mode: hist[level * gslots + slot] */
  size_t gslots;
  int stats, bins;
  double binscale;
  es_dacc *acc;
  int square;           /* the window is square (a run-time K takes the segment slide) */
  int cfill;            /* k_entropy2: bytes of a level's row of column counts (es_cfill), or
                         * 0: first windows pixel by pixel */
  int hw[ES_WINDOW_MAX]; /* per-row (= per-column: the shapes are symmetric) half widths */
};

/* The end of an entropy block with statistics: min/max of H over the block by warp
 * shuffles, one partial per warp, one atomic per block (mean and std come from k_rowstats,
 * in the CPU's order), and the block's bins of H added to the worker's. */
__device__ __forceinline__ void es_block_stats(float vmin, float vmax, const unsigned int *sbins,
                                               int nb, es_dacc *acc) {
  __shared__ float wmin[32], wmax[32];
  const int tid = threadIdx.x, bx = blockDim.x;
  for (int o = 16; o > 0; o >>= 1) {
    vmin = fminf(vmin, __shfl_down_sync(0xffffffffu, vmin, o));
    vmax = fmaxf(vmax, __shfl_down_sync(0xffffffffu, vmax, o));
  }
  const int lane = tid & 31, warp = tid >> 5;
  if (lane == 0) {
    wmin[warp] = vmin;
    wmax[warp] = vmax;
  }
  __syncthreads();
  if (tid == 0) {
    for (int k = 1; k < (bx + 31) / 32; k++) {
      vmin = fminf(vmin, wmin[k]);
      vmax = fmaxf(vmax, wmax[k]);
    }
    atomicMin(&acc->minbits, __float_as_uint(vmin));
    atomicMax(&acc->maxbits, __float_as_uint(vmax));
  }
  for (int k = tid; k < nb; k += bx)
    if (sbins[k]) atomicAdd(&acc->hist[k], (unsigned long long)sbins[k]);
}

/* The entropy kernel: one thread per output column of a strip of ty rows. The thread builds
 * the window's level histogram at the strip's first row, then slides it down: per window
 * column j, the pixel leaving at the top and the one entering at the bottom (Huang's update,
 * transposed, which also fits the disk: column j spans rows -hw[j]..hw[j]). S = sum f(c_k)
 * moves by the exact integer deltas of f, so no level scan is ever needed; the clip
 * sentinel's count moves S like any level's and its f is subtracted at the output (as the
 * CPU engine does), which keeps a compare out of every update. Counts live in
 * shared memory or, for large L, in global memory (es_hist). */
/* The KC level bytes from the byte at offset o of word wp[0] on, as packed words (byte j in
 * word j/4), read with aligned 32-bit loads and byte permutes (sel = 0x3210 + 0x1111 * o)
 * instead of KC byte loads. Rows are padded so the words past the end stay inside the
 * allocation. */
template <int KC>
__device__ __forceinline__ void es_load_seg(const uint32_t *wp, uint32_t sel, uint32_t *seg) {
  constexpr int NW = (KC + 2) / 4 + 1;
  uint32_t w[NW + 1];
#pragma unroll
  for (int k = 0; k < NW; k++) w[k] = __ldg(wp + k);
  w[NW] = 0;
#pragma unroll
  for (int k = 0; k < (KC + 3) / 4; k++) seg[k] = __byte_perm(w[k], w[k + 1], sel);
}

/* W32 blocks always have this many threads (range_plan), so a level's row of counts is a
 * compile-time stride: one instruction an address. */
#define ES_W32_BX 128
/* Shared memory by 32-bit byte address (from __cvta_generic_to_shared): an address is one
 * IMAD or LEA from a per-thread base, where pointer arithmetic gave an element index and a
 * LEA onto the shared window's base. The count loads and stores are volatile, so they stay
 * in program order (a level may leave and enter in one row); table loads are free to
 * move. */
__device__ __forceinline__ uint32_t es_lds_v(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ void es_sts_v(uint32_t a, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v));
}
/* Shared atomic add returning the old word (ATOMS): a count's read and write in one shared
 * memory instruction. k_entropy4 moves its counts with it (ES_ATOMS=1, BENCHMARKS R5: 5%
 * faster at 10240^2); the one-column kernel keeps loads and stores, which measured faster
 * there (R5: K=15 and K=25 L=16 and the disk window slower with atomics). */
__device__ __forceinline__ uint32_t es_atoms_add(uint32_t a, uint32_t v) {
  uint32_t old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(a), "r"(v));
  return old;
}
/* Shared atomic add with no result (RED): k_entropy4's first-window counts when S is summed
 * per level afterwards. */
__device__ __forceinline__ void es_reds_add(uint32_t a, uint32_t v) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(a), "r"(v));
}
#ifndef ES_ATOMS
#define ES_ATOMS 1
#endif
__device__ __forceinline__ uint32_t es_lds(uint32_t a) {
  uint32_t v;
  asm("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a));
  return v;
}

/* U: the unit of a count. 1: the words hold counts. The compile-time windows' W32 words
 * hold z + c * U instead (U = the delta table's bytes between counts, z = this lane's byte
 * offset in it): the word is then the table entry's address, less the table's base, and a
 * lookup needs no arithmetic (BENCHMARKS G18). */
template <int HL, uint32_t U = 1> struct es_hist {
  static_assert(U == 1 || HL == ES_HL_W32, "encoded counts are W32 words only");
  void *base; /* this thread's count of level 0 */
  size_t hs;  /* elements between levels (W32: ES_W32_BX) */
  uint32_t sa; /* W32: shared byte address of base */
  __device__ __forceinline__ unsigned short *p16(uint32_t v) const {
    return (unsigned short *)base + v * hs;
  }
  __device__ __forceinline__ uint32_t get(uint32_t v) const {
    if (HL == ES_HL_W32) return es_lds_v(sa + v * (4 * ES_W32_BX));
    return *p16(v);
  }
  /* Adds a pixel of level v (the window's first fill); returns the count before (as the
   * word holds it: z + c * U). The slide moves counts with move(). */
  __device__ __forceinline__ uint32_t inc(uint32_t v) const {
    if (HL == ES_HL_W32) {
      const uint32_t a = sa + v * (4 * ES_W32_BX), c = es_lds_v(a);
      es_sts_v(a, c + U);
      return c;
    }
    unsigned short *p = p16(v), c = *p;
    *p = (unsigned short)(c + 1u);
    return c;
  }
  /* One step of the slide: level vo loses a pixel, then vi gains one (they may be the
   * same level). co is vo's count before its move, ci vi's count before its move (after
   * vo's). Both counts are read before either is written, so the two reads are in flight
   * together, where add(vo), add(vi) waited for the first read before the second. */
  __device__ __forceinline__ void move(uint32_t vo, uint32_t vi, uint32_t &co,
                                       uint32_t &ci) const {
    if (HL == ES_HL_W32) {
      const uint32_t ao = sa + vo * (4 * ES_W32_BX), ai = sa + vi * (4 * ES_W32_BX);
      co = es_lds_v(ao);
      ci = es_lds_v(ai) - (vo == vi ? U : 0u);
      es_sts_v(ao, co - U);
      es_sts_v(ai, ci + U); /* the same word: this store puts co back */
      return;
    }
    unsigned short *po = p16(vo), *pi = p16(vi);
    co = *po;
    ci = (uint32_t)*pi - (vo == vi ? 1u : 0u);
    *po = (unsigned short)(co - 1u);
    *pi = (unsigned short)(ci + 1u);
  }
};

/* Levels a thread loads before their moves in the run-time square slides: k_entropy (8 was
 * slower there, C3) and k_entropy2 (K=75 L=256: 0.403 ms at 4, 0.353 at 8, 0.335 at 16;
 * C8, C9). */
#ifndef ES_SQU
#define ES_SQU 4
#endif
#ifndef ES_SQU2
#define ES_SQU2 16
#endif

/* N levels of the leaving row (po) and of the entering row (pi), all loaded before any is
 * used, so N pairs of loads are in flight. */
template <int N, typename LT>
__device__ __forceinline__ void es_load_rows(const LT *po, const LT *pi, uint32_t (&vo)[N],
                                             uint32_t (&vi)[N]) {
#pragma unroll
  for (int k = 0; k < N; k++) {
    vo[k] = __ldg(po + k);
    vi[k] = __ldg(pi + k);
  }
}

/* Shared-memory bytes of the histograms of a block of bx threads for L levels. */
__host__ __device__ inline size_t es_hist_bytes(int hl, int L, int bx) {
  if (hl == ES_HL_W32) return (size_t)(L + 1) * bx * 4;
  if (hl == ES_HL_S16) return (size_t)((L + 2) / 2) * bx * 4; /* whole words */
  return 0;
}

/* Windows a thread of k_entropy2 owns: the column-count fill below is written for them. */
#define ES_CFILL_NW 2

/* k_entropy2's first windows, built from column counts rather than pixel by pixel (large
 * square windows; P.cfill = cs). A block's threads own NW = ES_CFILL_NW = 2 windows each
 * (NW * bx windows side by side, window u at the block's first column + u); a window at row
 * ys is the sum of K neighbouring columns' counts over K rows, and the block's windows share
 * all but one of them. So instead of NW * bx * K^2 increments:
 *   A. each of the NW * bx + K - 1 columns' K levels are counted once, as bytes (a column
 *      holds at most K <= 255 pixels) in rows of cs bytes a level, at the start of the
 *      count area;
 *   B. each warp takes a level at a time: a prefix sum of the row's column counts (8 a
 *      lane, then across the warp), and window u's count is P[u + K - 1] - P[u - 1].
 * The byte rows (cs <= the count row's bytes) lie below the count rows of the same level and
 * above: rows are taken from the top level down in batches of one a warp, and a batch's
 * count rows are written only once every warp has read its byte row (the __syncthreads);
 * the count row of level v never overlaps a byte row below v. After B the count area holds
 * each thread's window counts as the slide expects them: one 32-bit word a level and thread,
 * window 2t in its low and 2t + 1 in its high half, times `unit`. hbytes: the count area's
 * size (the prefix sums lie after it). Block-uniform: every thread calls it. (The one-column
 * kernel had this fill too, with NW = 1 (C1: K=75 L=256 0.97 -> 0.75 ms); since k_entropy2
 * took its square windows it could only apply there with ES_PAIR=0, so it went.) */
__device__ __forceinline__ void es_cfill_rows(const es_eparams &P, unsigned int *h32, int K,
                                              size_t hbytes, uint32_t unit) {
  const int tid = threadIdx.x, bx = blockDim.x, cs = P.cfill;
  const int nlev = P.levels + 1, nw = bx >> 5, warp = tid >> 5, lane = tid & 31, tpl = bx >> 5;
  const int top = nlev - 1;
  constexpr int NW = ES_CFILL_NW;
  const uint8_t *cc = (const uint8_t *)h32;
  /* a warp's prefix sums (256 16-bit: P <= 256 * 255 fits), after the count area */
  unsigned short *T = (unsigned short *)(h32 + hbytes / 4) + warp * 256;
  for (int b = 0; b * nw <= top; b++) {
    const int v = top - (b * nw + warp);
    const bool vin = v >= 0 && v < nlev; /* warp-uniform */
    uint32_t win[4] = {0u, 0u, 0u, 0u}; /* a lane's threads' counts (NW = 2: packed) */
    if (vin) {
      uint2 d = make_uint2(0u, 0u); /* 32-bit accesses: the count area is 4-byte aligned */
      if (8 * lane < cs) {
        const unsigned int *rw = (const unsigned int *)(cc + (size_t)v * cs + 8 * lane);
        d = make_uint2(rw[0], rw[1]);
      }
      uint32_t p[8], s = 0;
#pragma unroll
      for (int k = 0; k < 8; k++) {
        s += ((k < 4 ? d.x : d.y) >> (8 * (k & 3))) & 255u;
        p[k] = s;
      }
      uint32_t incl = s;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
      }
      const uint32_t ex = incl - s;
      unsigned int *tw = (unsigned int *)(T + 8 * lane);
#pragma unroll
      for (int k = 0; k < 4; k++) tw[k] = (ex + p[2 * k]) | ((ex + p[2 * k + 1]) << 16);
      __syncwarp();
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const int t = lane * tpl + k;
        if (k < tpl) {
#pragma unroll
          for (int h = 0; h < NW; h++) {
            const int u = NW * t + h;
            win[k] |= unit * ((uint32_t)T[u + K - 1] - (u ? (uint32_t)T[u - 1] : 0u)) << (16 * h);
          }
        }
      }
      __syncwarp();
    }
    __syncthreads();
    if (vin) {
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const int t = lane * tpl + k;
        if (k < tpl) {
          h32[(size_t)v * bx + t] = win[k];
        }
      }
    }
  }
  __syncthreads();
}

/* Phase A, then B (es_cfill_rows). Columns past the padded width are not counted: no window
 * of the block's threads inside the image reaches them (NW = 2: one more column, the level
 * image's slack holds the sentinel there). */
template <typename LT>
__device__ __forceinline__ void es_cfill(const es_eparams &P, unsigned int *h32, int ys, int K,
                                         size_t hbytes, uint32_t unit) {
  const int tid = threadIdx.x, bx = blockDim.x, cs = P.cfill;
  constexpr int NW = ES_CFILL_NW;
  const int xb = blockIdx.x * bx * NW, pw = P.W + K - 1 + (NW - 1);
  const size_t lp = P.lpitch;
  for (int c = tid; c < NW * bx + K - 1 && xb + c < pw; c += bx) {
    const LT *p = (const LT *)P.lev + (size_t)ys * lp + xb + c;
    unsigned int *cw = (unsigned int *)((uint8_t *)h32 + (c & ~3));
    const uint32_t inc = 1u << (8 * (c & 3));
    for (int dy = 0; dy < K; dy++) {
      atomicAdd(cw + (uint32_t)p[(size_t)dy * lp] * (uint32_t)(cs / 4), inc);
    }
  }
  __syncthreads();
  es_cfill_rows(P, h32, K, hbytes, unit);
}

/* One column move of k_entropy's run-time windows: level vo leaves the window and vi enters
 * it; S takes the leaving count's f delta out and adds the entering one's (dt: the delta
 * table, ds its stride). vo == vi changes nothing and is skipped. */
template <typename H>
__device__ __forceinline__ void es_move1(H &hist, uint32_t vo, uint32_t vi,
                                         const unsigned int *dt, int ds, unsigned long long &S) {
  if (vo == vi) return;
  uint32_t co, ci;
  hist.move(vo, vi, co, ci);
  S -= dt[(co - 1u) * ds];
  S += dt[ci * ds];
}

template <typename LT, int HL, int KC>
__global__ void __launch_bounds__(128) k_entropy(const es_eparams P) {
  extern __shared__ unsigned long long es_smem[];
  unsigned int *sd = (unsigned int *)es_smem;
  unsigned int *sbins = (unsigned int *)(sd + P.dshared);
  const int nb = P.stats ? P.bins : 0;
  constexpr bool GH = HL == ES_HL_GLOBAL;
  constexpr bool KREP = KC > 0 && KC * KC <= 64;
  constexpr uint32_t HU = KC > 0 && HL == ES_HL_W32 ? (KREP ? 4 * 32 : 4) : 1;
  es_hist<HL, HU> hist;
  const int tid = threadIdx.x, bx = blockDim.x;
  const int L = P.levels;
  unsigned int *h32 = (unsigned int *)(sbins + ((nb + 1) & ~1));
  if (!GH) {
    hist.base = HL == ES_HL_W32 ? (void *)(h32 + tid) : (void *)((unsigned short *)h32 + tid);
    hist.hs = (size_t)bx;
    hist.sa = (uint32_t)__cvta_generic_to_shared(hist.base);
    const int words = (int)(es_hist_bytes(HL, L, bx) / 4);
    /* count 0 (the W32 words k = tid + m * bx are this thread's own) */
    const uint32_t z = HU == 4 * 32 ? 4u * (uint32_t)(tid & 31) : 0u;
    for (int k = tid; k < words; k += bx) h32[k] = HL == ES_HL_W32 ? z : 0u;
  } else {
    size_t slot = ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * bx + tid;
    hist.base = P.ghist + slot;
    hist.hs = P.gslots;
  }
  /* Small tables are replicated once per lane (dt[c * 32 + lane]): random counts across a
   * warp then never hit the same bank twice. */
  for (int k = tid; k < P.dshared; k += bx) sd[k] = P.dfl[P.drep ? k >> 5 : k];
  for (int k = tid; k < nb; k += bx) sbins[k] = 0;
  __syncthreads();
  es_pdl_wait(); /* the level image is the quantize pass's */
  const unsigned int *dt = P.dshared ? (P.drep ? sd + (tid & 31) : sd) : P.dfl;
  const int ds = P.drep ? 32 : 1;
  /* The compile-time windows (square, K <= 9) always have the table in shared memory,
   * replicated up to area 64 (the host's dshared_replicated). A pointer the compiler can
   * see is shared gives LDS with 32-bit addresses; dt, which may point to global memory,
   * gives generic 64-bit loads (LD.E) and two more instructions a lookup. */
  const uint32_t sdb = (uint32_t)__cvta_generic_to_shared(sd);
  const uint32_t dka = sdb + (KREP ? 4u * (uint32_t)(tid & 31) : 0u);
  constexpr uint32_t dks = KREP ? 4 * 32 : 4; /* bytes between counts */
  /* the f delta of count c (HU > 1: of the word c holds) */
#define ES_DT(c)                                                                            \
  (KC ? es_lds(HU > 1 ? sdb + (uint32_t)(c) : dka + (uint32_t)(c) * dks) : dt[(c) * ds])

  const int x = blockIdx.x * bx + tid;
  const int ys = P.y0 + (P.strip0 + blockIdx.y) * P.ty;
  const int ye = min(ys + P.ty, P.y1);
  const int r = KC ? (KC - 1) / 2 : P.r, K = KC ? KC : 2 * r + 1;
  float vmin = __int_as_float(0x7f800000), vmax = 0.0f;
  if (x < P.W && ys < ye) {
    const LT *col = (const LT *)P.lev + x;
    const size_t lp = P.lpitch;
    unsigned long long S = 0;
    for (int dy = 0; dy < K; dy++) {
      const int h = P.hw[dy];
      const LT *row = col + (size_t)(ys + dy) * lp;
      for (int j = r - h; j <= r + h; j++) S += ES_DT(hist.inc(row[j]));
    }
    /* KC (8-bit levels): the word index of the row that leaves the window, moved a row a
     * step rather than computed from y (BENCHMARKS G16); the entering row is kw words
     * below it. The padded rows are 16-byte multiples from an aligned base, so the
     * thread's byte offset in its word, and the permute selector, stay the same. */
    const uint32_t *lw0 = (const uint32_t *)P.lev; /* the same for all: a uniform register */
    const uint32_t lw = (uint32_t)(lp / 4), kw = (uint32_t)K * lw;
    uint32_t wo = (uint32_t)(((size_t)ys * lp + (size_t)x) / 4); /* word index (< 2^32) */
    const uint32_t sel = 0x3210u + 0x1111u * (uint32_t)(x & 3);
    /* (Taking N's constants from registers where ns == 0 measured 9% slower: BENCHMARKS G9.) */
    for (int y = ys;; y++) {
      /* S counts the clip sentinel's level too (no test in the updates): take its f out. */
      const int ns = (int)((hist.get((uint32_t)L) - (dka - sdb) * (HU > 1)) / HU), n = P.area - ns;
      const float hv = es_entropy_value(S - __ldg(P.flog + ns), P.log2n[n], P.scale[n], P.oscale);
      if (P.map) P.map[(size_t)y * P.mpitch + x] = hv;
      if (nb) {
        vmin = fminf(vmin, hv);
        vmax = fmaxf(vmax, hv);
        atomicAdd(&sbins[es_stats_bin(hv, P.binscale, nb)], 1u);
      }
      if (y + 1 >= ye) break;
      if (KC) {
        /* Square window of compile-time size: the leaving and entering rows are whole
         * segments, read at fixed offsets from the two row pointers. */
        uint32_t so[(KC + 6) / 4], si[(KC + 6) / 4];
        es_load_seg<KC>(lw0 + wo, sel, so);
        es_load_seg<KC>(lw0 + wo + kw, sel, si);
        wo += lw;
#pragma unroll
        for (int j = 0; j < KC; j++) {
          /* byte j, zero-extended, in one PRMT (a shift and a mask otherwise) */
          const uint32_t vo = __byte_perm(so[j >> 2], 0u, 0x4440u | (j & 3)),
                         vi = __byte_perm(si[j >> 2], 0u, 0x4440u | (j & 3));
          /* vo == vi leaves S and the counts as they are (move takes care of it). The skip
           * (predicated, not a branch) costs a compare and predicates every update: at K=5
           * L=16 doing the move anyway was 2.5% faster; at K=3 and K >= 7, L=256, the skip
           * 2-3% (BENCHMARKS G13). */
          if (KC != 5 && vo == vi) continue;
          uint32_t co, ci;
          hist.move(vo, vi, co, ci);
          S -= ES_DT(co - HU);
          S += ES_DT(ci);
        }
      } else if (P.square) {
        /* Square window of run-time size: the leaving row y and the entering row y + K are
         * whole segments, read through two row pointers at constant offsets, ES_SQU levels
         * of each before their moves (the generic form below works out two 64-bit
         * addresses and a half width a column). */
        const LT *po = col + (size_t)y * lp, *pi = po + (size_t)K * lp;
        int j = 0;
        for (; j + ES_SQU <= K; j += ES_SQU) {
          uint32_t vo[ES_SQU], vi[ES_SQU];
          es_load_rows<ES_SQU>(po + j, pi + j, vo, vi);
#pragma unroll
          for (int k = 0; k < ES_SQU; k++) {
            es_move1(hist, vo[k], vi[k], dt, ds, S);
          }
        }
        for (; j < K; j++) {
          es_move1(hist, __ldg(po + j), __ldg(pi + j), dt, ds, S);
        }
      } else {
      for (int j = 0; j < K; j++) {
        const int h = P.hw[j];
        es_move1(hist, col[(size_t)(y + r - h) * lp + j], col[(size_t)(y + r + h + 1) * lp + j],
                 dt, ds, S);
      }
      }
    }
#undef ES_DT
    if (GH) { /* leave the global histogram zeroed for the next strip on this slot */
      for (int dy = 0; dy < K; dy++) {
        const int h = P.hw[dy];
        const LT *row = col + (size_t)(ye - 1 + dy) * lp;
        for (int j = r - h; j <= r + h; j++) *hist.p16((uint32_t)row[j]) = 0;
      }
    }
  }
  if (nb) es_block_stats(vmin, vmax, sbins, nb, P.acc);
}

/* A 32-bit global load at base[i], the index widened by one IMAD.WIDE.U32 (the compiler's
 * own form of base + (c & 0xffff) took a shift, a mask and a 64-bit add). */
__device__ __forceinline__ unsigned int es_ldg_at(const unsigned int *base, uint32_t i) {
  unsigned int v;
  asm("{\n\t.reg .u64 a;\n\tmad.wide.u32 a, %1, 4, %2;\n\tld.global.nc.u32 %0, [a];\n\t}"
      : "=r"(v)
      : "r"(i), "l"(base));
  return v;
}

/* k_entropy2's delta table (ST: windows up to 1024 pixels): a static shared array, so a
 * lookup is one shared load at a constant offset from the count word's half. */
#define ES_DT2_MAX 1024

/* k_entropy2's delta lookup for a count half h (es_move2): ST: the static shared table at
 * shared address tb, h a byte offset (4c); else the global table dfl, h the count c. */
template <bool ST>
__device__ __forceinline__ unsigned int es_dt2(uint32_t tb, const unsigned int *dfl, uint32_t h) {
  return ST ? es_lds(tb + h) : es_ldg_at(dfl, h);
}

/* One column move of k_entropy2: level vo leaves and vi enters the column's windows, W0
 * (the thread's first window, the low half of a count word) and/or W1 (the second, the high
 * half). ST: the halves hold 4c, the delta table's byte offset (at most 4 * 1024), and the
 * table is the static shared one (tb = its shared address); else they hold c and the table
 * is global (dfl). The halves never carry or borrow: a count is at most
 * K^2 < 2^16 and never goes below 0. Both words are read before either is written, and vo
 * == vi is handled in the arithmetic as in es_hist::move (ci then reads co - m, the deltas
 * cancel, the second store puts the word back) rather than by a branch: a branch a column
 * kept each column's table lookups from overlapping the next column's (C7). */
template <bool W0, bool W1, bool ST>
__device__ __forceinline__ void es_move2(uint32_t sa, uint32_t rs, uint32_t vo, uint32_t vi,
                                         uint32_t tb, const unsigned int *dfl,
                                         unsigned long long &S0, unsigned long long &S1) {
  constexpr uint32_t U = ST ? 4u : 1u;
  constexpr uint32_t m = (W0 ? U : 0u) | (W1 ? U << 16 : 0u);
  const uint32_t ao = sa + vo * rs, ai = sa + vi * rs;
  const uint32_t co = es_lds_v(ao), ci = es_lds_v(ai) - (ao == ai ? m : 0u);
  es_sts_v(ao, co - m);
  es_sts_v(ai, ci + m);
  /* f(c) - f(c - 1) for the leaving level's count c, f(c + 1) - f(c) for the entering
   * one's (ci: its count before the move) */
  if (W0) {
    S0 -= es_dt2<ST>(tb - 4u, dfl - 1, co & 0xffffu);
    S0 += es_dt2<ST>(tb, dfl, ci & 0xffffu);
  }
  if (W1) {
    S1 -= es_dt2<ST>(tb - 4u, dfl - 1, co >> 16);
    S1 += es_dt2<ST>(tb, dfl, ci >> 16);
  }
}

/* Two output columns a thread: square windows of run-time size, levels of type LT, counts in
 * shared memory. The windows at x0 and x0 + 1 share K of their K + 1 columns, so one 32-bit
 * word a level and thread holds both counts (low half: x0, high: x0 + 1) and a row of the
 * slide moves K + 1 columns for two pixels, where the one-column kernel moved 2K - and a
 * lane's words never share a bank with another lane's (the one-column kernel's 16-bit
 * counts put two lanes in a bank). Same S sums as every engine, so the bits are the CPU's.
 * Block: bx threads (64 or 32; pair_bx), words [level][thread]. The last thread of an odd
 * width computes a second window at x = W that is not written (its last column is the
 * level image's slack, the sentinel). ST: the window has at most ES_DT2_MAX pixels, its
 * delta table is copied to static shared memory and the count halves hold 4c (es_move2). */
template <typename LT, bool ST>
__global__ void __launch_bounds__(64, 6) k_entropy2(const es_eparams P) {
  __shared__ unsigned int s_dt2[ST ? ES_DT2_MAX : 1];
  extern __shared__ unsigned long long es_smem[];
  const int nb = P.stats ? P.bins : 0;
  unsigned int *sbins = (unsigned int *)es_smem;
  unsigned int *h32 = sbins + ((nb + 1) & ~1);
  const int tid = threadIdx.x, bx = blockDim.x, L = P.levels, K = 2 * P.r + 1;
  constexpr uint32_t U = ST ? 4u : 1u;
  for (int k = tid; k < (L + 1) * bx; k += bx) h32[k] = 0u;
  if (ST)
    for (int k = tid; k < P.area; k += bx) s_dt2[k] = P.dfl[k];
  for (int k = tid; k < nb; k += bx) sbins[k] = 0u;
  __syncthreads();
  es_pdl_wait(); /* the level image is the quantize pass's */
  const uint32_t tb = (uint32_t)__cvta_generic_to_shared(s_dt2);
  const int x0 = 2 * (blockIdx.x * bx + tid);
  const int ys = P.y0 + (P.strip0 + blockIdx.y) * P.ty;
  const int ye = min(ys + P.ty, P.y1);
  const size_t hbytes = (size_t)(L + 1) * bx * 4;
  const bool cf = P.cfill && ys < ye; /* block-uniform */
  if (cf) es_cfill<LT>(P, h32, ys, K, hbytes, U);
  const uint32_t sa = (uint32_t)__cvta_generic_to_shared(h32 + tid), rs = 4u * (uint32_t)bx;
  float vmin = __int_as_float(0x7f800000), vmax = 0.0f;
  if (x0 < P.W && ys < ye) {
    const size_t lp = P.lpitch;
    const LT *col = (const LT *)P.lev + x0;
    unsigned long long S0 = 0, S1 = 0;
    if (cf) {
      for (int v = 0; v <= L; v++) {
        const uint32_t c = es_lds_v(sa + (uint32_t)v * rs);
        S0 += __ldg(P.flog + (c & 0xffffu) / U);
        S1 += __ldg(P.flog + (c >> 16) / U);
      }
    } else {
      for (int dy = 0; dy < K; dy++) {
        const LT *row = col + (size_t)(ys + dy) * lp;
        for (int j = 0; j <= K; j++) {
          const uint32_t a = sa + (uint32_t)__ldg(row + j) * rs;
          const uint32_t m = (j < K ? U : 0u) | (j >= 1 ? U << 16 : 0u);
          const uint32_t c = es_lds_v(a);
          es_sts_v(a, c + m);
          if (j < K) S0 += es_dt2<ST>(tb, P.dfl, c & 0xffffu);
          if (j >= 1) S1 += es_dt2<ST>(tb, P.dfl, c >> 16);
        }
      }
    }
    const bool two = x0 + 1 < P.W;
    const bool vec = two && (P.mpitch & 1) == 0;
    for (int y = ys;; y++) {
      /* the clip sentinel's counts: N and its f, as k_entropy */
      const uint32_t ws = es_lds_v(sa + (uint32_t)L * rs);
      const int ns0 = (int)((ws & 0xffffu) / U), ns1 = (int)((ws >> 16) / U);
      const int n0 = P.area - ns0, n1 = P.area - ns1;
      const float h0 = es_entropy_value(S0 - __ldg(P.flog + ns0), P.log2n[n0], P.scale[n0], P.oscale);
      const float h1 = es_entropy_value(S1 - __ldg(P.flog + ns1), P.log2n[n1], P.scale[n1], P.oscale);
      if (P.map) {
        float *mrow = P.map + (size_t)y * P.mpitch + x0;
        if (vec) {
          *(float2 *)mrow = make_float2(h0, h1);
        } else {
          mrow[0] = h0;
          if (two) mrow[1] = h1;
        }
      }
      if (nb) {
        vmin = fminf(vmin, h0);
        vmax = fmaxf(vmax, h0);
        atomicAdd(&sbins[es_stats_bin(h0, P.binscale, nb)], 1u);
        if (two) {
          vmin = fminf(vmin, h1);
          vmax = fmaxf(vmax, h1);
          atomicAdd(&sbins[es_stats_bin(h1, P.binscale, nb)], 1u);
        }
      }
      if (y + 1 >= ye) break;
      /* the leaving row y and the entering row y + K: column 0 is window x0's only, column
       * K window x0 + 1's only, the K - 1 between are both windows' */
      const LT *po = col + (size_t)y * lp, *pi = po + (size_t)K * lp;
      es_move2<true, false, ST>(sa, rs, __ldg(po), __ldg(pi), tb, P.dfl, S0, S1);
      int j = 1;
      for (; j + ES_SQU2 <= K; j += ES_SQU2) {
        uint32_t vo[ES_SQU2], vi[ES_SQU2];
        es_load_rows<ES_SQU2>(po + j, pi + j, vo, vi);
#pragma unroll
        for (int k = 0; k < ES_SQU2; k++) es_move2<true, true, ST>(sa, rs, vo[k], vi[k], tb, P.dfl, S0, S1);
      }
      for (; j < K; j++) es_move2<true, true, ST>(sa, rs, __ldg(po + j), __ldg(pi + j), tb, P.dfl, S0, S1);
      es_move2<false, true, ST>(sa, rs, __ldg(po + K), __ldg(pi + K), tb, P.dfl, S0, S1);
    }
  }
  if (nb) es_block_stats(vmin, vmax, sbins, nb, P.acc);
}

/* Four output columns a thread: square windows of compile-time size KC <= 7, 8-bit levels,
 * W32 counts. Neighbouring columns' windows share KC - 1 of their KC columns, so one thread
 * keeps the level counts of the four windows x0..x0+3 in the four byte lanes of one shared
 * word per level (lane k holds 4 * c, a byte offset into the delta table: c <= 49 fits). A
 * row of the slide moves the KC + 3 columns of the four windows once each - a column shared
 * by m windows adds or takes m lanes in one shared read and write - where one window a
 * thread moved 4 * KC columns. The f deltas are still looked up per window and lane (S is
 * the same exact integer sum, so the bits are the CPU engine's), and each lookup is a byte
 * permute and a shared load at a constant offset. A row's deltas of one window are summed
 * in 32 bits (at most G of them, each below (log2 49 + 1.5) * 2^26, so below 2^31) and
 * added to the 64-bit S once. Columns past the image read the sentinel level (k_quant fills
 * the row pitch) and are not written. FL: the first window's S is summed once a level after
 * its counts are in (fewer lookups where L + 1 < AREA); the same integer. */
template <int KC, bool PT, bool FL>
__global__ void __launch_bounds__(ES_W32_BX) k_entropy4(const es_eparams P) {
  constexpr int NC = KC + 3, NW = (NC + 3) / 4, AREA = KC * KC;
  constexpr int G = KC <= 5 ? NC : 3; /* columns between two 64-bit flushes */
  /* PT: a column move's two deltas for one window, f(ci + 1) - f(ci) - (f(co) - f(co - 1)),
   * in one lookup of a table T[co][ci] (row stride AREA, co 0..AREA: 4 (AREA + 1) AREA
   * bytes) instead of two of dt. The lanes' byte offsets 4c make the address 4c_o * AREA
   * + 4c_i, one multiply-add. Row co = 1 is dt itself (f(1) - f(0) = 0): the first window
   * reads it. The row stride AREA keeps the busiest entries (small counts) in distinct
   * banks: 1.24 wavefronts a lookup on random L = 16 levels at K = 5 against 2 for the two
   * dt lookups (BENCHMARKS D1). */
  constexpr int NT = PT ? (AREA + 1) * AREA : AREA;
  __shared__ unsigned int s_dt[NT];
  /* FL: the first window's counts go in first, then S is summed once a level from this f
   * table: 4 (L + 1) lookups instead of 4 AREA (the caller takes it where L + 1 < AREA). */
  __shared__ unsigned long long s_f[FL ? AREA + 1 : 1];
  extern __shared__ unsigned long long es_smem[];
  const int nb = P.stats ? P.bins : 0;
  unsigned int *sbins = (unsigned int *)es_smem;
  unsigned int *h32 = sbins + ((nb + 1) & ~1);
  const int tid = threadIdx.x, L = P.levels;
  for (int k = tid; k < (L + 1) * ES_W32_BX; k += ES_W32_BX) h32[k] = 0u;
  for (int k = tid; k < NT; k += ES_W32_BX) {
    if (PT) {
      const int co = k / AREA, ci = k - co * AREA;
      s_dt[k] = P.dfl[ci] - (co > 0 ? P.dfl[co - 1] : 0u);
    } else {
      s_dt[k] = P.dfl[k];
    }
  }
  if (FL)
    for (int k = tid; k <= AREA; k += ES_W32_BX) s_f[k] = P.flog[k];
  for (int k = tid; k < nb; k += ES_W32_BX) sbins[k] = 0u;
  __syncthreads();
  es_pdl_wait(); /* the level image is the quantize pass's */
  const uint32_t sa = (uint32_t)__cvta_generic_to_shared(h32 + tid);
  /* shared: lookups are LDS at a constant offset; dt is T's row 1 */
  const char *dtp = (const char *)s_dt + (PT ? 4 * AREA : 0);
  const int x0 = 4 * (blockIdx.x * ES_W32_BX + tid);
  const int ys = P.y0 + (P.strip0 + blockIdx.y) * P.ty;
  const int ye = min(ys + P.ty, P.y1);
  float vmin = __int_as_float(0x7f800000), vmax = 0.0f;
  if (x0 < P.W && ys < ye) {
    const uint32_t *lw0 = (const uint32_t *)P.lev;
    const uint32_t lw = (uint32_t)(P.lpitch / 4);
    uint32_t wo = (uint32_t)(((size_t)ys * P.lpitch + (size_t)x0) / 4);
    unsigned long long S[4] = {0ull, 0ull, 0ull, 0ull};
    /* first window: KC rows of KC + 3 columns */
    for (int dy = 0; dy < KC; dy++) {
      uint32_t seg[NW];
#pragma unroll
      for (int k = 0; k < NW; k++) seg[k] = __ldg(lw0 + wo + (uint32_t)dy * lw + k);
#pragma unroll
      for (int j = 0; j < NC; j++) {
        const uint32_t v = __byte_perm(seg[j >> 2], 0u, 0x4440u | (j & 3));
        const uint32_t a = sa + v * (4 * ES_W32_BX);
        uint32_t m = 0;
#pragma unroll
        for (int w = 0; w < 4; w++)
          if (j >= w && j < w + KC) m |= 4u << (8 * w);
        if (FL) {
          es_reds_add(a, m);
          continue;
        }
        uint32_t c;
        if (ES_ATOMS) {
          c = es_atoms_add(a, m);
        } else {
          c = es_lds_v(a);
          es_sts_v(a, c + m);
        }
#pragma unroll
        for (int w = 0; w < 4; w++)
          if (j >= w && j < w + KC)
            S[w] += *(const unsigned int *)(dtp + __byte_perm(c, 0u, 0x4440u | w));
      }
    }
    if (FL) { /* S = the sum of f(count) over the levels, the sentinel's included */
      const char *fb = (const char *)s_f;
#pragma unroll 4
      for (int l = 0; l <= L; l++) {
        const uint32_t c = es_lds_v(sa + (uint32_t)l * (4 * ES_W32_BX));
#pragma unroll
        for (int w = 0; w < 4; w++)
          S[w] += *(const unsigned long long *)(fb + 2 * __byte_perm(c, 0u, 0x4440u | w));
      }
    }
    const double l2a = P.log2n_area, sca = P.scale_area;
    const bool vec = (P.W & 3) == 0 && x0 + 3 < P.W;
    for (int y = ys;; y++) {
      /* The clip sentinel's four counts; none inside the image, where N = area. */
      const uint32_t ws = es_lds_v(sa + (uint32_t)L * (4 * ES_W32_BX));
      float hv[4];
      if (ws == 0u) {
#pragma unroll
        for (int w = 0; w < 4; w++) hv[w] = es_entropy_value(S[w], l2a, sca, P.oscale);
      } else {
#pragma unroll
        for (int w = 0; w < 4; w++) {
          const int ns = (int)(__byte_perm(ws, 0u, 0x4440u | w) >> 2), n = AREA - ns;
          hv[w] = es_entropy_value(S[w] - __ldg(P.flog + ns), P.log2n[n], P.scale[n], P.oscale);
        }
      }
      if (P.map) {
        float *mrow = P.map + (size_t)y * P.mpitch + x0;
        if (vec) {
          *(float4 *)mrow = make_float4(hv[0], hv[1], hv[2], hv[3]);
        } else {
#pragma unroll
          for (int w = 0; w < 4; w++)
            if (x0 + w < P.W) mrow[w] = hv[w];
        }
      }
      if (nb) {
#pragma unroll
        for (int w = 0; w < 4; w++)
          if (x0 + w < P.W) {
            vmin = fminf(vmin, hv[w]);
            vmax = fmaxf(vmax, hv[w]);
            atomicAdd(&sbins[es_stats_bin(hv[w], P.binscale, nb)], 1u);
          }
      }
      if (y + 1 >= ye) break;
      uint32_t so[NW], si[NW];
#pragma unroll
      for (int k = 0; k < NW; k++) {
        so[k] = __ldg(lw0 + wo + k);
        si[k] = __ldg(lw0 + wo + (uint32_t)KC * lw + k);
      }
      wo += lw;
      uint32_t acc[4] = {0u, 0u, 0u, 0u};
#pragma unroll
      for (int j = 0; j < NC; j++) {
        uint32_t m = 0;
#pragma unroll
        for (int w = 0; w < 4; w++)
          if (j >= w && j < w + KC) m |= 4u << (8 * w);
        const uint32_t vo = __byte_perm(so[j >> 2], 0u, 0x4440u | (j & 3)),
                       vi = __byte_perm(si[j >> 2], 0u, 0x4440u | (j & 3));
        const uint32_t ao = sa + vo * (4 * ES_W32_BX), ai = sa + vi * (4 * ES_W32_BX);
        uint32_t co, ci;
        if (ES_ATOMS) {
          /* ES_ATOMS: two shared atomics instead of two loads and two stores (BENCHMARKS
           * R5); where vo == vi the second returns co - m, as the loads' form computes. The
           * lanes never carry or borrow: a lane holds 4c <= 196 and loses only what it had. */
          co = es_atoms_add(ao, 0u - m);
          ci = es_atoms_add(ai, m);
        } else {
          co = es_lds_v(ao);
          ci = es_lds_v(ai) - (vo == vi ? m : 0u);
          es_sts_v(ao, co - m);
          es_sts_v(ai, ci + m); /* the same word: this store puts co back */
        }
#pragma unroll
        for (int w = 0; w < 4; w++)
          if (j >= w && j < w + KC)
            acc[w] += PT ? *(const unsigned int *)((const char *)s_dt +
                                                   __byte_perm(co, 0u, 0x4440u | w) * AREA +
                                                   __byte_perm(ci, 0u, 0x4440u | w))
                         : *(const unsigned int *)(dtp + __byte_perm(ci, 0u, 0x4440u | w)) -
                               *(const unsigned int *)(dtp - 4 + __byte_perm(co, 0u, 0x4440u | w));
        if ((j + 1) % G == 0 || j == NC - 1) {
#pragma unroll
          for (int w = 0; w < 4; w++) {
            S[w] += (unsigned long long)(long long)(int)acc[w];
            acc[w] = 0u;
          }
        }
      }
    }
  }
  if (nb) es_block_stats(vmin, vmax, sbins, nb, P.acc);
}


/* Per-row sums of H and H^2 in x order, one thread a row: exactly the CPU engine's order
 * (each row from 0.0, left to right; rows are then added in order on the host), so mean
 * and std are the same bits on every engine and any split. */
__global__ void k_rowstats(const float *map, size_t mpitch, int W, int rows, double *out,
                           const uint8_t *mask) {
  int y = blockIdx.x * blockDim.x + threadIdx.x;
  if (y >= rows) return;
  const float *m = map + (size_t)y * mpitch;
  double rs = 0.0, rss = 0.0;
  int x = 0;
  if (mask) { /* the inside pixels only (W mask bytes a row), as cpu_row_mask sums them */
    const uint8_t *mr = mask + (size_t)y * (size_t)W;
    for (; x < W; x++) {
      if (!mr[x]) continue;
      const double h = (double)m[x];
      rs = __dadd_rn(rs, h);
      rss = __dadd_rn(rss, __dmul_rn(h, h));
    }
  }
  for (; x + 8 <= W; x += 8) { /* eight loads in flight, then the adds in order */
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = __ldg(m + x + k);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      const double h = (double)v[k];
      rs = __dadd_rn(rs, h);
      rss = __dadd_rn(rss, __dmul_rn(h, h));
    }
  }
  for (; x < W; x++) {
    const double h = (double)m[x];
    rs = __dadd_rn(rs, h);
    rss = __dadd_rn(rss, __dmul_rn(h, h));
  }
  out[2 * (size_t)y] = rs;
  out[2 * (size_t)y + 1] = rss;
}

/* A band's rows y0..y1 (local) under a mask (rows W bytes from the range's first output
 * row): a pixel outside becomes NaN (unless `computed`: scikit-image's value stays), and the
 * inside pixels' H go into the statistics (nb bins; 0: none) as k_entropy's own do without
 * a mask. Grid-stride over the band, 256 threads a block; the bins in dynamic shared
 * memory (nb words). */
__global__ void __launch_bounds__(256) k_maskfix(float *map, size_t mpitch, const uint8_t *mask,
                                                 int W, int y0, int y1, int computed, int nb,
                                                 double binscale, es_dacc *acc) {
  extern __shared__ unsigned long long es_smem[];
  unsigned int *sbins = (unsigned int *)es_smem;
  __shared__ unsigned int s_inside;
  for (int k = threadIdx.x; k < nb; k += blockDim.x) sbins[k] = 0;
  if (threadIdx.x == 0) s_inside = 0u;
  __syncthreads();
  float vmin = __int_as_float(0x7f800000), vmax = 0.0f;
  unsigned int own = 0u;
  const size_t n = (size_t)W * (size_t)(y1 - y0);
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const size_t y = (size_t)y0 + i / (size_t)W, x = i % (size_t)W;
    float *p = map + y * mpitch + x;
    if (!mask[y * (size_t)W + x]) {
      if (!computed) *p = __int_as_float(0x7fc00000); /* NAN, as the CPU's */
      continue;
    }
    if (nb) {
      const float hv = *p;
      own++;
      vmin = fminf(vmin, hv);
      vmax = fmaxf(vmax, hv);
      atomicAdd(&sbins[es_stats_bin(hv, binscale, nb)], 1u);
    }
  }
  if (own) atomicAdd(&s_inside, own);
  __syncthreads();
  if (nb) {
    if (threadIdx.x == 0 && s_inside) atomicAdd(&acc->inside, (unsigned long long)s_inside);
    es_block_stats(vmin, vmax, sbins, nb, acc);
  }
}

struct es_rparams {
  const float *map; /* local rows, mpitch floats */
  size_t mpitch;
  const void *in;   /* device input rows from in0 */
  size_t in_pitch;
  int in0, row0;    /* global row of in row 0 / of local row 0 */
  int depth, W, rows, fmt;
  double lo, inv;
  int a256;
  const uint8_t *lut;
  uint8_t *pl[3];   /* device planes, local rows, tight strides ps */
  size_t ps[3];
};

__device__ __forceinline__ void es_dev_rgb(const es_rparams &R, int x, int y, uint8_t rgb[3]) {
  int i = es_render_index8(R.map[(size_t)y * R.mpitch + x], R.lo, R.inv);
  const uint8_t *e = R.lut + 3 * i;
  if (R.a256 >= 0) {
    const char *row = (const char *)R.in + (size_t)(R.row0 + y - R.in0) * R.in_pitch;
    uint32_t v = R.depth == 16 ? (uint32_t)((const uint16_t *)row)[x] : (uint32_t)((const uint8_t *)row)[x];
    uint8_t g = es_grey8(v, R.depth);
    for (int k = 0; k < 3; k++) rgb[k] = es_blend(e[k], g, R.a256);
  } else {
    rgb[0] = e[0];
    rgb[1] = e[1];
    rgb[2] = e[2];
  }
}

/* One thread a pixel (YUV420P: one thread a 2x2 chroma block). The rules: render.c. */
__global__ void k_render(const es_rparams R) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (R.fmt == ES_PIX_YUV420P) {
    int cw = (R.W + 1) / 2;
    if (x >= cw) return;
    int ny = 2 * y + 1 < R.rows ? 2 : 1;
    int nx = 2 * x + 1 < R.W ? 2 : 1;
    int su = 0, sv = 0, n = nx * ny;
    for (int dy = 0; dy < ny; dy++) {
      for (int dx = 0; dx < nx; dx++) {
        uint8_t rgb[3];
        int px = 2 * x + dx, py = 2 * y + dy;
        es_dev_rgb(R, px, py, rgb);
        R.pl[0][(size_t)py * R.ps[0] + px] = es_rgb_to_y(rgb[0], rgb[1], rgb[2]);
        su += es_rgb_to_u(rgb[0], rgb[1], rgb[2]);
        sv += es_rgb_to_v(rgb[0], rgb[1], rgb[2]);
      }
    }
    R.pl[1][(size_t)y * R.ps[1] + x] = (uint8_t)((su + n / 2) / n);
    R.pl[2][(size_t)y * R.ps[2] + x] = (uint8_t)((sv + n / 2) / n);
    return;
  }
  if (x >= R.W) return;
  float h = R.map[(size_t)y * R.mpitch + x];
  switch (R.fmt) {
  case ES_PIX_RGB24: {
    uint8_t rgb[3];
    es_dev_rgb(R, x, y, rgb);
    uint8_t *d = R.pl[0] + (size_t)y * R.ps[0] + 3 * (size_t)x;
    d[0] = rgb[0];
    d[1] = rgb[1];
    d[2] = rgb[2];
    break;
  }
  case ES_PIX_GRAY8: {
    uint8_t i = (uint8_t)es_render_index8(h, R.lo, R.inv);
    if (R.a256 >= 0) {
      const char *row = (const char *)R.in + (size_t)(R.row0 + y - R.in0) * R.in_pitch;
      uint32_t v = R.depth == 16 ? (uint32_t)((const uint16_t *)row)[x] : (uint32_t)((const uint8_t *)row)[x];
      i = es_blend(i, es_grey8(v, R.depth), R.a256);
    }
    R.pl[0][(size_t)y * R.ps[0] + x] = i;
    break;
  }
  case ES_PIX_GRAY16:
    ((uint16_t *)(R.pl[0] + (size_t)y * R.ps[0]))[x] = (uint16_t)es_render_index16(h, R.lo, R.inv);
    break;
  case ES_PIX_YUV444P: {
    uint8_t rgb[3];
    es_dev_rgb(R, x, y, rgb);
    R.pl[0][(size_t)y * R.ps[0] + x] = es_rgb_to_y(rgb[0], rgb[1], rgb[2]);
    R.pl[1][(size_t)y * R.ps[1] + x] = es_rgb_to_u(rgb[0], rgb[1], rgb[2]);
    R.pl[2][(size_t)y * R.ps[2] + x] = es_rgb_to_v(rgb[0], rgb[1], rgb[2]);
    break;
  }
  default: break;
  }
}

/* The study's v0: one thread a pixel, the whole window rescanned into per-thread counters
 * (local memory), then S from the f table. Reads the padded level image; L <= 256. */
template <typename LT>
__global__ void k_naive(const es_eparams P) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  if (x >= P.W || y >= P.y1) return;
  unsigned short cnt[257];
  for (int k = 0; k <= P.levels; k++) cnt[k] = 0;
  const LT *col = (const LT *)P.lev + x;
  const int r = P.r;
  for (int dy = 0; dy <= 2 * r; dy++) {
    const int h = P.hw[dy];
    const LT *row = col + (size_t)(y + dy) * P.lpitch;
    for (int j = r - h; j <= r + h; j++) cnt[row[j]]++;
  }
  /* S = sum f(c) through the delta table: f(c) = sum_{i<c} dfl[i]. */
  unsigned long long S = 0;
  for (int k = 0; k < P.levels; k++)
    for (int i = 0; i < cnt[k]; i++) S += (unsigned long long)P.dfl[i];
  int n = P.area - cnt[P.levels];
  P.map[(size_t)y * P.mpitch + x] = es_entropy_value(S, P.log2n[n], P.scale[n], P.oscale);
}

#endif /* ES_GPU_KERNELS_CUH */
