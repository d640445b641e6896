/*
 * es_kernels.h - the math of entropy-stream: shared tables, window geometry, the job a
 * compute engine runs, the plain double reference, the CPU engine (OpenMP) and rendering.
 * Nothing here knows about files, queues or threads beyond OpenMP inside one call.
 */
#ifndef ES_KERNELS_H
#define ES_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "es_types.h"
#include "es_math.h"
#include "es_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tables shared by every engine (built once per process, thread-safe, never freed):
 *   flog[n]  = round(n * log2(n) * 2^26)   (uint64, n = 0..ES_NMAX, flog[0] = flog[1] = 0;
 *                                           2^26 = 2^ES_FIX_SHIFT, see es_math.h)
 *   log2n[n] = flog[n] * scale[n] ~ log2(n) (double, exactly what es_entropy_value computes
 *                                           for S = flog[n], so one level gives H = 0)
 *   scale[n] = 2^-26 / n                    (double; scale[0] = 0)
 * The GPU engine uploads these same arrays, which is what makes its results bit-identical. */
typedef struct es_tables {
  const uint64_t *flog;
  const double *log2n;
  const double *scale;
} es_tables;
const es_tables *es_tables_get(void);


/* Window geometry: for dy = -r..r, the pixels dx = -hw[dy+r]..hw[dy+r] are in the window.
 * Square: hw = r for every row; disk: hw = floor(sqrt(r*r - dy*dy)) (scikit-image's
 * morphology.disk(r)). area = number of offsets. */
typedef struct es_window {
  int r;
  int area;
  int hw[ES_WINDOW_MAX];
} es_window;
void es_window_make(es_window *w, int window, int shape);

/* Sample (x, y) of a host image, 8- or 16-bit (16-bit rows need not be aligned). */
static inline uint32_t es_image_sample(const es_image *img, int x, int y) {
  const uint8_t *row = (const uint8_t *)img->data + (size_t)y * img->stride;
  if (img->depth == 16) {
    uint16_t v;
    memcpy(&v, row + 2 * (size_t)x, 2);
    return v;
  }
  return row[x];
}

/* Whether pixel (x, y) of a host image is inside its mask (no mask: every pixel). */
static inline int es_image_inside(const es_image *img, int x, int y) {
  return !img->mask || img->mask[(size_t)y * img->mask_stride + (size_t)x] != 0;
}
/* Bytes a sample of bit depth 8, 16 or 32 (float) takes. */
static inline size_t es_depth_bytes(int depth) { return depth == 32 ? 4 : depth == 16 ? 2 : 1; }

/* Float samples (depth 32, kernels/float.c). es_params_range_auto: in_lo..in_hi asks for
 * each image's own range (NAN, NAN or 0, 0). es_float_range: the range the levels are taken
 * over (p's, or the finite inside samples' min..max; 0..0 where there are none) into *lo,
 * *hi; returns the number of finite inside samples. es_float_levels: the image as the
 * engines compute it, width x height tight 16-bit samples of the same levels
 * (es_level_sample of es_quantize_float) and a tight mask, 1 where the sample is finite and
 * inside the image's own mask, else 0 (and the sample 0). */
int es_params_range_auto(const es_params *p);
int64_t es_float_range(const es_image *img, const es_params *p, double *lo, double *hi);
void es_float_levels(const es_image *img, const es_params *p, uint16_t *samples,
                     uint8_t *mask);

/* The output unit factor: 1 for bits, ln 2 for nats. */
double es_out_scale(int base);

/* A float map es_cpu_run renders from where the caller asked for none and the range is auto
 * (it needs the frame's min and max before any pixel): kept by a caller that runs frame
 * after frame on one thread (a stream's worker), grown when a frame is larger, so a video
 * does not allocate and free it every frame. Zero-initialise; es_cpu_scratch_free. */
typedef struct es_cpu_scratch {
  float *map;
  size_t cap; /* floats */
} es_cpu_scratch;
void es_cpu_scratch_free(es_cpu_scratch *s);

/* A compute job: one grey image in, any of map / stats / rendering out. The CPU engine and
 * each GPU engine take the same job. Pointers set to NULL are not produced. */
typedef struct es_job {
  es_image in;
  es_params params;
  float *map;          /* float32 [height][map_stride] or NULL */
  size_t map_stride;   /* floats */
  es_stats *stats;     /* or NULL */
  int stats_bins;      /* 1..ES_STATS_MAX_BINS when stats != NULL */
  es_render render;    /* render.format == ES_PIX_NONE: no rendering */
  es_planes pix;       /* destination planes of the rendering */
  es_cpu_scratch *scratch; /* or NULL: es_cpu_run's temporary map is its own */
} es_job;

/* Checks a job (parameters against the input depth, sizes, pointers). ES_OK or
 * ES_ERR_USAGE with a message. */
int es_job_check(const es_job *job, char *msg, size_t msglen);
/* The part of es_job_check that needs only the input's geometry (width, height >= 1 and
 * depth 8 or 16 already checked): a side the engines can pad, a stride of at least a row
 * whose rows span at most PTRDIFF_MAX bytes. ES_OK, ES_ERR_INPUT (a side too long) or
 * ES_ERR_USAGE (the stride), with a message. es_stream_push checks its frames with it. */
int es_image_check(const es_image *in, char *msg, size_t msglen);
/* Bytes from the first to one past the last byte of `rows` rows of `row` bytes, `stride`
 * apart (0 for no rows); SIZE_MAX where that does not fit in a size_t. */
size_t es_rows_extent(size_t stride, int rows, size_t row);

/* The plain double-precision reference: direct counting of every window, double logs.
 * out is width*height doubles (row-major, no padding). Slow; for tests. */
int es_ref_entropy(const es_image *img, const es_params *p, double *out);
/* Reference statistics from a reference map (double) and the image: mean, std, min, max,
 * global entropy, histogram of the map's float32 rounding. */
int es_ref_stats(const es_image *img, const es_params *p, const double *map, int bins,
                 es_stats *stats);

/* The CPU engine: OpenMP over row bands, sliding histograms, exact fixed-point S.
 * threads <= 0: all cores. Results (map, stats min/max/hist/global entropy, rendering)
 * do not depend on the thread count, bit for bit; mean/std are summed per row, then rows in
 * order, so they do not either. */
int es_cpu_run(const es_job *job, int threads, char *msg, size_t msglen);
/* The number of threads es_cpu_run(job, threads) runs on: threads, or for threads <= 0
 * OpenMP's default (OMP_NUM_THREADS, else the cores it may use), fewer for a small frame; 1
 * without OpenMP. job NULL: the count before the frame-size cut. For entropy-bench's rows. */
int es_cpu_run_threads(const es_job *job, int threads);

/* The study's baseline (one pixel at a time, full window rescan, double logs), for
 * entropy-bench's baseline row. Same output as the engine within float rounding. */
int es_cpu_naive(const es_image *img, const es_params *p, float *out, size_t out_stride);

/* The parameters a frame of bit depth `depth` is computed with: L above 2^depth becomes
 * 2^depth. The levels are the same (es_quantize maps the 2^depth samples one to one either
 * way, so every H is too), and hmax, the statistics' bins and the fixed rendering range
 * are those of L = 2^depth, as if it had been asked for. */
void es_params_for_depth(es_params *p, int depth);

/* Statistics helpers shared by engines: turn partial sums into es_stats fields. */
typedef struct es_stats_acc {
  double sum, sumsq; /* of H */
  float min, max;
  int64_t count;
} es_stats_acc;
/* Fills count, mean, std (population: sqrt(max(0, sumsq/count - mean^2))), min, max,
 * global_entropy_levels (from level_hist) and global_entropy (from sample_hist, the counts
 * of the raw samples: 2^depth bins) of st; the engine fills bins and hist itself. Every
 * engine finishes its statistics through this one function, from integer counts, so that
 * both engines give the same bits. Where levels == 2^depth the two histograms are the same
 * (es_quantize is the identity) and sample_hist may be level_hist. */
void es_stats_finish(es_stats *st, const es_stats_acc *acc, const uint64_t *level_hist,
                     int levels, const uint64_t *sample_hist, int depth);
/* Global entropy (bits) of a level histogram of `levels` bins over `total` samples. */
double es_global_entropy(const uint64_t *level_hist, int levels, int64_t total);
/* FFmpeg's entropy filter (libavfilter/vf_entropy.c, mode normal) on a histogram of the raw
 * samples of `nbins` bins over `total` samples, in its single-precision arithmetic: the
 * value lavfi.entropy.entropy.normal.Y holds. */
double es_global_entropy_ffmpeg(const uint64_t *sample_hist, int nbins, int64_t total);
/* Whether the raw samples need a histogram of their own: levels differs from 2^depth. */
int es_stats_sample_hist_own(int levels, int depth);
/* a / b rounded up (a, b > 0): the scales below, so that a value exactly on a bin edge or
 * a rounding tie is not pushed under it by a quotient rounded down. */
double es_div_up(double a, double b);
/* Bin scale for es_stats_bin: bins / hmax rounded up (a value on an edge goes to the bin
 * above it), 0 if hmax == 0. */
double es_stats_binscale(const es_params *p, int bins);

/* Colormaps: 256 RGB triples (uint8), for enum es_colormap. NULL for an unknown id. */
const uint8_t *es_colormap_lut(int colormap);
/* Name <-> id ("inferno", ...). -1 when unknown. */
int es_colormap_from_name(const char *name);
const char *es_colormap_name(int colormap);

/* Renders a finished float map on the CPU into the planes (the GPU does the same on the
 * device with the same es_math.h functions). lo/inv as es_render_index8 says, inv rounded
 * up (es_div_up); `src` is the source image (for overlays). */
void es_render_range(const es_params *p, const es_render *r, float min, float max, double *lo,
                     double *inv);
/* The overlay weight the renderers take: -1 for no overlay, else round(overlay * 256)
 * clamped to 0..256 (0: the source grey alone, 256: the heat alone). */
int es_render_a256(const es_render *r);
int es_cpu_render(const float *map, size_t map_stride, const es_image *src,
                  const es_params *p, const es_render *r, float min, float max,
                  const es_planes *pix, int threads);
/* Renders image rows y0..y1 - 1 with a fixed range (range_auto: ES_ERR_USAGE) from `rows`,
 * which holds row y0 at rows[0] (map_stride floats apart), on the calling thread: the same
 * bytes es_cpu_render writes for those rows. YUV420P: y0 even and y1 even or the height, so
 * no chroma row's pair of image rows is split. y0 == y1: only checks the format and colormap
 * (rows may be NULL). es_cpu_run renders band by band with it. */
int es_cpu_render_rows(const float *rows, size_t map_stride, int y0, int y1,
                       const es_image *src, const es_params *p, const es_render *r,
                       const es_planes *pix);

/* Byte size of plane i of a rendering of w x h in format fmt, with the tight stride
 * es_pix_stride gives. */
size_t es_pix_stride(int fmt, int plane, int w);
int es_pix_planes(int fmt);
int es_pix_plane_height(int fmt, int plane, int h);

#ifdef __cplusplus
}
#endif
#endif /* ES_KERNELS_H */
