/*
 * es_math.h - the per-pixel arithmetic shared, character for character, by the CPU engine
 * (C11) and the CUDA kernels (nvcc). Every floating-point step here is an explicitly rounded
 * IEEE operation (no contraction into FMA: the host build uses -ffp-contract=off and the
 * device path the __d*_rn intrinsics), so CPU and GPU produce the same bits.
 */
#ifndef ES_MATH_H
#define ES_MATH_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ES_HD __host__ __device__ __forceinline__
#else
#define ES_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define ES_DMUL(a, b) __dmul_rn((a), (b))
#define ES_DSUB(a, b) __dsub_rn((a), (b))
#define ES_DADD(a, b) __dadd_rn((a), (b))
#define ES_U64_TO_D(x) __ull2double_rn(x)
#define ES_D_TO_F(x) __double2float_rn(x)
#define ES_DDIV(a, b) __ddiv_rn((a), (b))
#else
#define ES_DMUL(a, b) ((double)(a) * (double)(b))
#define ES_DSUB(a, b) ((double)(a) - (double)(b))
#define ES_DADD(a, b) ((double)(a) + (double)(b))
#define ES_U64_TO_D(x) ((double)(x))
#define ES_D_TO_F(x) ((float)(x))
#define ES_DDIV(a, b) ((double)(a) / (double)(b))
#endif

/* Fixed point of S = sum_k f(c_k), f(n) = n log2 n: f is stored as round(f(n) * 2^26).
 * 2^26 keeps every increment f(n+1) - f(n) (at most (log2 65025 + 1/ln 2) * 2^26 < 2^31)
 * in 32 bits, so the GPU kernel's delta table takes one shared-memory wavefront a lookup
 * instead of two; the rounding of f (2^-27 per level present, relative to N) stays below
 * float32's resolution of H. */
#define ES_FIX_SHIFT 26
/* Largest window population: 255 * 255. Tables cover n = 0..ES_NMAX. */
#define ES_NMAX 65025

/* Border reflect (SPEC section 1, numpy.pad 'symmetric'): index i of a row or column of n
 * pixels -> -1 reads 0, -2 reads 1, n reads n-1, ..., repeating for windows larger than the
 * image. */
ES_HD int es_reflect(int i, int n) {
  int m = i % (2 * n);
  if (m < 0) m += 2 * n;
  return m >= n ? 2 * n - 1 - m : m;
}

/* Level of a sample v of bit depth `depth` (8 or 16) for L levels: floor(v * L / 2^depth). */
ES_HD uint32_t es_quantize(uint32_t v, uint32_t levels, int depth) {
  return (uint32_t)(((uint64_t)v * levels) >> depth);
}

/* Level of a finite float sample v over the range [lo, hi] for L levels (docs/spec.md, float
 * samples): q = floor(((v - lo) * L) / (hi - lo)), each operation one IEEE double rounding in
 * this order, clamped to 0..L-1; every sample is level 0 where hi <= lo (a constant image's
 * own range). The one place the rule is written: the engines take the levels it gives
 * (es_float_levels) and the reference calls it directly. */
ES_HD uint32_t es_quantize_float(float v, double lo, double hi, uint32_t levels) {
  if (!(hi > lo)) return 0;
  const double t = ES_DDIV(ES_DMUL(ES_DSUB((double)v, lo), (double)levels), ES_DSUB(hi, lo));
  if (!(t > 0.0)) return 0;
  if (t >= (double)levels) return levels - 1;
  return (uint32_t)t; /* t > 0: truncation is floor */
}

/* A 16-bit sample that es_quantize(., L, 16) maps to level q (q < L <= 65536): the least
 * s with s * L >= q * 2^16, so q * 2^16 <= s * L < q * 2^16 + L <= (q + 1) * 2^16. Float
 * images reach the engines as these samples, with NaN, infinite and masked samples
 * outside the mask. */
ES_HD uint16_t es_level_sample(uint32_t q, uint32_t levels) {
  return (uint16_t)((((uint64_t)q << 16) + levels - 1) / levels);
}

/* H from the exact sum S and the population N:
 *   H = (log2 N - S * 2^-ES_FIX_SHIFT / N) * out_scale
 * with log2n = log2(N) and scale = 2^-ES_FIX_SHIFT / N taken from the shared tables (es_tables), and
 * out_scale 1 (bits) or ln 2 (nats). Negative rounding residue is clamped to 0, after the
 * rounding to float: a positive h rounds to a positive float or +0, h <= 0 to a float <= 0,
 * so this is the float of the clamped h (NaN gives 0 both ways), with one single-precision
 * compare and select where a double clamp took six instructions (BENCHMARKS D3). */
ES_HD float es_entropy_value(uint64_t S, double log2n, double scale, double out_scale) {
  double h = ES_DSUB(log2n, ES_DMUL(ES_U64_TO_D(S), scale));
  h = ES_DMUL(h, out_scale);
  const float f = ES_D_TO_F(h);
  return f > 0.0f ? f : 0.0f;
}

/* Histogram bin of h: floor(h * bins / hmax), clamped to 0..bins-1. binscale = bins / hmax
 * rounded up (es_stats_binscale, once on the host; 0 when hmax is 0). */
ES_HD int es_stats_bin(float h, double binscale, int bins) {
  int b = (int)ES_DMUL((double)h, binscale);
  if (b < 0) b = 0;
  if (b > bins - 1) b = bins - 1;
  return b;
}

/* Normalised value -> 8-bit colormap index: round(clamp((h - lo) * inv, 0, 1) * 255).
 * Fixed range: lo = 0, inv = 1/hmax. Auto range: lo = min, inv = 1/(max - min) (0 when
 * max == min). */
ES_HD int es_render_index8(float h, double lo, double inv) {
  double v = ES_DMUL(ES_DSUB((double)h, lo), inv);
  if (!(v > 0.0)) v = 0.0;
  if (v > 1.0) v = 1.0;
  return (int)ES_DADD(ES_DMUL(v, 255.0), 0.5);
}
/* The same for 16-bit grey output. */
ES_HD int es_render_index16(float h, double lo, double inv) {
  double v = ES_DMUL(ES_DSUB((double)h, lo), inv);
  if (!(v > 0.0)) v = 0.0;
  if (v > 1.0) v = 1.0;
  return (int)ES_DADD(ES_DMUL(v, 65535.0), 0.5);
}

/* Overlay: heat channel c over source grey g with weight a256 = round(alpha * 256):
 * (c * a256 + g * (256 - a256) + 128) >> 8. Integer only. */
ES_HD uint8_t es_blend(uint8_t c, uint8_t g, int a256) {
  return (uint8_t)((c * a256 + g * (256 - a256) + 128) >> 8);
}

/* Source sample -> 8-bit grey for overlays. */
ES_HD uint8_t es_grey8(uint32_t v, int depth) { return (uint8_t)(depth == 16 ? v >> 8 : v); }

/* RGB -> BT.601 limited-range YCbCr, integer (the coefficients libswscale uses, 8-bit
 * fixed point with rounding). */
ES_HD uint8_t es_rgb_to_y(int r, int g, int b) {
  return (uint8_t)(((66 * r + 129 * g + 25 * b + 128) >> 8) + 16);
}
ES_HD uint8_t es_rgb_to_u(int r, int g, int b) {
  return (uint8_t)(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128);
}
ES_HD uint8_t es_rgb_to_v(int r, int g, int b) {
  return (uint8_t)(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128);
}

#endif /* ES_MATH_H */
