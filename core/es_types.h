/*
 * es_types.h - the types and status codes every room of the library shares (core/): io/ and
 * kernels/ include this header, not the public one, which includes it (and whose installed
 * copy has it written in, so that entropy_stream.h stays the one header installed).
 * es_params_default, es_params_check, es_params_hmax and es_render_default are defined
 * in kernels/tables.c; the es_param_* functions (each parameter's rule) in core/params.c.
 */
#ifndef ES_TYPES_H
#define ES_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. The numbers never change. */
enum es_status {
  ES_OK = 0,
  ES_ERR_USAGE = -1,       /* a parameter is out of range; exit code 1 */
  ES_ERR_INPUT = -2,       /* unreadable, corrupt, unsupported or too large input; exit 2 */
  ES_ERR_OUTPUT = -3,      /* cannot create or write an output; exit 3 */
  ES_ERR_DEVICE = -4,      /* a GPU failed and no fallback could finish; exit 4 */
  ES_ERR_NOMEM = -5,       /* out of host memory; exit 4 */
  ES_ERR_INTERRUPTED = -6, /* stopped by SIGINT/SIGTERM; exit 130 */
  ES_ERR_EOF = -7,         /* flow: no more frames (not an error) */
  ES_ERR_AGAIN = -8,       /* flow: try again later (not an error; no function of this
                            * version returns it) */
  ES_ERR_INTERNAL = -9     /* a bug; exit 4 */
};

enum es_shape { ES_SHAPE_SQUARE = 0, ES_SHAPE_DISK = 1 };
enum es_border { ES_BORDER_CLIP = 0, ES_BORDER_REFLECT = 1 };
enum es_base { ES_BASE_2 = 0, ES_BASE_E = 1 };
enum es_device { ES_DEVICE_AUTO = 0, ES_DEVICE_GPU = 1, ES_DEVICE_CPU = 2 };

#define ES_WINDOW_MAX 255
#define ES_STATS_MAX_BINS 1024
#define ES_MAX_GPUS 64

/* What is computed (docs/spec.md). */
typedef struct es_params {
  int window; /* K, odd, 1..255; default 5 */
  int shape;  /* enum es_shape; default square */
  int border; /* enum es_border; default clip */
  int levels; /* L, 2..65536; default 16. 8-bit input computes L above 256 as 256 (the
               * same levels; hmax and the statistics' bins those of 256) */
  int base;   /* enum es_base; default 2 (bits) */
  /* Float samples (es_image depth 32): the range [in_lo, in_hi] quantized linearly onto the
   * L levels (docs/spec.md, float samples). NAN, NAN (default) or 0, 0 (a zeroed struct):
   * each image's own finite min..max over its inside pixels; else both finite, in_lo <
   * in_hi. Ignored for integer samples. */
  double in_lo, in_hi;
  /* Pixels outside the image's mask (es_image.mask): 0 (default) their H is NaN in the map
   * and they are left out of the statistics; 1: H is computed from the inside pixels of
   * their window, as scikit-image's rank filters do (0 where there are none), still left
   * out of the statistics. Inside pixels are the same either way. */
  int mask_computed;
} es_params;

/* Fills the defaults above (p NULL: does nothing; so do the other *_default functions). */
void es_params_default(es_params *p);
/* Checks p for input of bit depth `depth` (8, 16, or 32 for float samples). On ES_ERR_USAGE writes a one-line
 * message naming the parameter and its allowed range into msg (may be NULL): "window 4: must
 * be odd, 1..255" (the rules are es_param_check's). */
int es_params_check(const es_params *p, int depth, char *msg, size_t msglen);
/* The largest value H can take: log2(min(|W|, L)) in the output unit (bits or nats). */
double es_params_hmax(const es_params *p);

/* ---- Parameters by name (core/params.c). Each parameter's rule is kept once, here, and
 * its messages name the parameter as the library spells it: "window 4: must be odd, 1..255",
 * "device x: must be auto, gpu or cpu", never a program's flag (a program maps the name: the
 * CLI to --window, Python to window=). msg may be NULL; every function returns ES_OK or
 * ES_ERR_USAGE (a bad value, or a name that is not a parameter of that kind).
 * Number parameters: window (odd, 1..ES_WINDOW_MAX), levels (2..65536), stats_bins
 * (1..ES_STATS_MAX_BINS), threads (0..4096, 0 = all cores), queue (1..4096), gpu (an ordinal,
 * 0..ES_MAX_GPUS-1), cpu_below (0..2^62 pixels), max_pixels (1..2^62), crf (0..63), band
 * (0..65535), band_rows (0..2^30), level (0..63), mask_computed (0..1). */
int es_param_check(const char *name, int64_t v, char *msg, size_t msglen);
/* overlay (0..1), the one real-number parameter checked alone. NaN is refused. */
int es_param_check_real(const char *name, double v, char *msg, size_t msglen);
/* The rule of a number or enumerated parameter, as its messages end: "must be odd, 1..255",
 * "must be square or disk". */
int es_param_rule(const char *name, char *buf, size_t len);
/* Enumerated parameters: shape (square, disk), border (clip, reflect), base (2, e), device
 * (auto, gpu, cpu), colormap (enum es_colormap: inferno, viridis, magma, turbo, gray), range
 * (es_render.range_auto: fixed, auto), pix_fmt (yuv420p, yuv444p). es_param_parse sets
 * *value from a name ("shape x: must be square or disk" otherwise); es_param_name_of gives
 * a value's name (NULL: none); es_param_names lists the names, each between two `quote`
 * strings (NULL: none), "square or disk". */
int es_param_parse(const char *name, const char *text, int *value, char *msg, size_t msglen);
/* A value given as its number (a struct field): "shape 7: must be square or disk". */
int es_param_check_enum(const char *name, int value, char *msg, size_t msglen);
const char *es_param_name_of(const char *name, int value);
int es_param_names(const char *name, const char *quote, char *buf, size_t len);
/* The length of a parameter's name at s where s begins a reference to it, "NAME:", "NAME
 * VALUE:" or "NAME VALUE)" (as in a library message: "gpus 3: listed twice", "(device gpu)"),
 * else 0. The parameters checked elsewhere are named too: in_range, overlay, gpus, shard,
 * stats. */
size_t es_param_ref(const char *s);

/* A grey image in caller memory. Not owned. Samples are uint8_t (depth 8), native-endian
 * uint16_t (depth 16) or native float (depth 32: quantized by es_params' in_lo..in_hi,
 * NaN and infinite samples outside, as masked ones); rows are `stride` bytes apart. */
typedef struct es_image {
  const void *data;
  int width;
  int height;
  size_t stride;
  int depth;
  /* NULL (a zeroed field): every pixel is inside. Else width x height bytes, rows
   * mask_stride bytes apart, non-zero = inside: a pixel outside is counted in no window
   * (as a pixel past a clip border), its H is NaN in the map (0 when rendered) and it is
   * left out of every statistic (docs/spec.md, masks). */
  const uint8_t *mask;
  size_t mask_stride;
} es_image;

/* Per-image statistics of H (docs/spec.md). */
typedef struct es_stats {
  int64_t count;         /* pixels (inside the mask: the others are in no statistic) */
  double mean, std;      /* of H (population std) */
  float min, max;        /* of H */
  double global_entropy; /* entropy in bits of the image's raw samples at its bit depth, as
                          * FFmpeg's entropy filter (mode normal) gives it for the grey plane
                          * (a histogram of 2^depth bins, FFmpeg's single-precision sum);
                          * for float samples, global_entropy_levels */
  double global_entropy_levels; /* entropy in bits of the image's L quantized levels */
  int bins;              /* histogram bins used (1..ES_STATS_MAX_BINS) */
  uint64_t hist[ES_STATS_MAX_BINS]; /* counts of H in equal bins over [0, hmax] */
} es_stats;

/* Rendering of the map into pixels (colormap, grey, encoder planes). */
enum es_colormap {
  ES_CMAP_INFERNO = 0,
  ES_CMAP_VIRIDIS = 1,
  ES_CMAP_MAGMA = 2,
  ES_CMAP_TURBO = 3,
  ES_CMAP_GRAY = 4
};
enum es_pixfmt {
  ES_PIX_NONE = 0,
  ES_PIX_RGB24 = 1,   /* plane 0: interleaved R,G,B bytes */
  ES_PIX_GRAY8 = 2,   /* plane 0: uint8 */
  ES_PIX_GRAY16 = 3,  /* plane 0: native-endian uint16 */
  ES_PIX_YUV444P = 4, /* planes 0,1,2: Y, U, V (BT.601 limited range), full resolution */
  ES_PIX_YUV420P = 5  /* planes 0,1,2: Y full, U and V ceil(w/2) x ceil(h/2) */
};
typedef struct es_render {
  int format;    /* enum es_pixfmt */
  int colormap;  /* enum es_colormap; used by RGB24 and YUV formats */
  int range_auto; /* 0: divide by hmax (fixed); 1: by each frame's min..max */
  float overlay;  /* 0..1: opacity of the heat over the source grey (1: the heat alone, 0: the
                   * grey alone), where overlay_on is set or overlay > 0; otherwise (a zeroed
                   * struct) no overlay: the heat alone. GRAY16 ignores it. */
  int overlay_on; /* 1: blend by overlay even where it is 0. Kept apart from overlay so that a
                   * zeroed es_render still means no overlay, as it always did. */
} es_render;
void es_render_default(es_render *r); /* RGB24, inferno, fixed, no overlay */

/* An image rendered into planes (es_pixfmt says which and of what size). */
typedef struct es_planes {
  uint8_t *plane[3];
  size_t stride[3]; /* bytes */
} es_planes;

#ifdef __cplusplus
}
#endif
#endif /* ES_TYPES_H */
