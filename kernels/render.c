/*
 * render.c - rendering of a finished map on the CPU (colormaps, grey, YUV planes).
 *
 * THE RULES (the GPU engine replicates them exactly; every step is in es_math.h):
 *   range:   fixed: lo = 0, inv = 1/hmax (es_params_hmax), inv = 0 if hmax == 0.
 *            auto:  lo = min, inv = 1/(max - min) (double), inv = 0 if max == min
 *                   (min/max: the frame's float min and max of H, converted to double).
 *            Either way inv is the double quotient rounded up (es_div_up), so that a tie
 *            (v * 255 exactly m + 1/2) rounds up.
 *   a256   = es_render_a256(r): -1 (no overlay) unless overlay_on or overlay > 0, else
 *            (int)lround(overlay * 256.0) (overlay as double) clamped to 0..256; overlay
 *            applies when a256 >= 0 (a256 == 0: the source grey alone).
 *   g      = es_grey8(source sample, depth) (only used when a256 >= 0).
 *   RGB24:   i = es_render_index8(h, lo, inv); (R,G,B) = lut[3*i .. 3*i+2]
 *            (lut = es_colormap_lut(colormap)); with overlay each channel c becomes
 *            es_blend(c, g, a256).
 *   GRAY8:   i = es_render_index8(h, lo, inv) (no colormap); with overlay es_blend(i, g, a256).
 *   GRAY16:  es_render_index16(h, lo, inv), native-endian uint16 (overlay ignored).
 *   YUV444P: (R,G,B) as RGB24 (blended when overlay); Y = es_rgb_to_y(R,G,B),
 *            U = es_rgb_to_u(R,G,B), V = es_rgb_to_v(R,G,B) per pixel.
 *   YUV420P: Y as YUV444P. U (resp. V) at chroma (cx, cy) covers pixels x in {2cx, 2cx+1},
 *            y in {2cy, 2cy+1} that exist in the image (ceil(w/2) x ceil(h/2) planes; at an
 *            odd right/bottom edge the block has 1 or 2 pixels): the per-pixel U (resp. V)
 *            values of YUV444P are summed as int, and the result is (sum + count/2) / count
 *            (integer division), count = number of existing pixels in the block (1, 2 or 4).
 * Strides are whatever the planes say (es_planes.stride, bytes); only the w x h area (and
 * the chroma area) is written.
 */
#include <math.h>
#include <string.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_kernels.h"

void es_render_range(const es_params *p, const es_render *r, float min, float max, double *lo,
                     double *inv) {
  /* 1 / range rounded up: a value whose (h - lo) * 255 / range is exactly m + 1/2 then
   * rounds up to m + 1, as the rule says; 1 / range rounded down took it to m (L = 8, H = 2.5:
   * 2.5 / 3 * 255 = 212.5 gave 212 in gray8, 54612 in gray16). */
  double range;
  if (r->range_auto) {
    *lo = (double)min;
    range = (double)max - (double)min;
  } else {
    *lo = 0.0;
    range = es_params_hmax(p);
  }
  *inv = range > 0.0 ? es_div_up(1.0, range) : 0.0;
}

int es_render_a256(const es_render *r) {
  /* overlay > 0 without overlay_on: callers from before overlay_on keep their overlay. */
  if (!r->overlay_on && !(r->overlay > 0.0f)) return -1;
  long a = lround((double)r->overlay * 256.0);
  return a < 0 ? 0 : a > 256 ? 256 : (int)a;
}

typedef struct render_ctx {
  const float *map; /* row map_y0 of the image */
  size_t map_stride;
  int map_y0;
  const es_image *src;
  const uint8_t *lut;
  double lo, inv;
  int a256;
} render_ctx;

static inline uint8_t render_grey(const render_ctx *c, int x, int y) {
  return es_grey8(es_image_sample(c->src, x, y), c->src->depth); /* rows may be unaligned */
}

/* The (blended) RGB of pixel (x, y): the rule at the top of this file. */
static inline void render_rgb(const render_ctx *c, int x, int y, uint8_t rgb[3]) {
  int i = es_render_index8(c->map[(size_t)(y - c->map_y0) * c->map_stride + x], c->lo, c->inv);
  const uint8_t *e = c->lut + 3 * i;
  if (c->a256 >= 0) {
    uint8_t g = render_grey(c, x, y);
    for (int k = 0; k < 3; k++) rgb[k] = es_blend(e[k], g, c->a256);
  } else {
    rgb[0] = e[0];
    rgb[1] = e[1];
    rgb[2] = e[2];
  }
}

static void render_row(const render_ctx *c, int fmt, int w, int y, const es_planes *pix) {
  const float *m = c->map + (size_t)(y - c->map_y0) * c->map_stride;
  switch (fmt) {
  case ES_PIX_RGB24: {
    uint8_t *d = pix->plane[0] + (size_t)y * pix->stride[0];
    for (int x = 0; x < w; x++) render_rgb(c, x, y, d + 3 * (size_t)x);
    break;
  }
  case ES_PIX_GRAY8: {
    uint8_t *d = pix->plane[0] + (size_t)y * pix->stride[0];
    for (int x = 0; x < w; x++) {
      uint8_t i = (uint8_t)es_render_index8(m[x], c->lo, c->inv);
      d[x] = c->a256 >= 0 ? es_blend(i, render_grey(c, x, y), c->a256) : i;
    }
    break;
  }
  case ES_PIX_GRAY16: {
    /* memcpy: a caller's stride need not keep rows 2-byte aligned. */
    uint8_t *d = pix->plane[0] + (size_t)y * pix->stride[0];
    for (int x = 0; x < w; x++) {
      uint16_t v = (uint16_t)es_render_index16(m[x], c->lo, c->inv);
      memcpy(d + 2 * (size_t)x, &v, 2);
    }
    break;
  }
  case ES_PIX_YUV444P: {
    uint8_t *py = pix->plane[0] + (size_t)y * pix->stride[0];
    uint8_t *pu = pix->plane[1] + (size_t)y * pix->stride[1];
    uint8_t *pv = pix->plane[2] + (size_t)y * pix->stride[2];
    for (int x = 0; x < w; x++) {
      uint8_t rgb[3];
      render_rgb(c, x, y, rgb);
      py[x] = es_rgb_to_y(rgb[0], rgb[1], rgb[2]);
      pu[x] = es_rgb_to_u(rgb[0], rgb[1], rgb[2]);
      pv[x] = es_rgb_to_v(rgb[0], rgb[1], rgb[2]);
    }
    break;
  }
  default: break;
  }
}

/* YUV420P: chroma row cy covers image rows 2cy and 2cy + 1 (when it exists). */
static void render_row420(const render_ctx *c, int w, int h, int cy, const es_planes *pix) {
  int cw = (w + 1) / 2;
  uint8_t *pu = pix->plane[1] + (size_t)cy * pix->stride[1];
  uint8_t *pv = pix->plane[2] + (size_t)cy * pix->stride[2];
  int ny = 2 * cy + 1 < h ? 2 : 1;
  for (int dy = 0; dy < ny; dy++) {
    int y = 2 * cy + dy;
    uint8_t *py = pix->plane[0] + (size_t)y * pix->stride[0];
    for (int x = 0; x < w; x++) {
      uint8_t rgb[3];
      render_rgb(c, x, y, rgb);
      py[x] = es_rgb_to_y(rgb[0], rgb[1], rgb[2]);
    }
  }
  for (int cx = 0; cx < cw; cx++) {
    int nx = 2 * cx + 1 < w ? 2 : 1;
    int su = 0, sv = 0, n = nx * ny;
    for (int dy = 0; dy < ny; dy++) {
      for (int dx = 0; dx < nx; dx++) {
        uint8_t rgb[3];
        render_rgb(c, 2 * cx + dx, 2 * cy + dy, rgb);
        su += es_rgb_to_u(rgb[0], rgb[1], rgb[2]);
        sv += es_rgb_to_v(rgb[0], rgb[1], rgb[2]);
      }
    }
    pu[cx] = (uint8_t)((su + n / 2) / n);
    pv[cx] = (uint8_t)((sv + n / 2) / n);
  }
}

/* Fills c for es_cpu_render and es_cpu_render_rows; ES_ERR_USAGE for a bad format or colormap. */
static int render_init(render_ctx *c, const float *map, size_t map_stride, int map_y0,
                       const es_image *src, const es_params *p, const es_render *r, float min,
                       float max, const es_planes *pix) {
  int fmt = r->format;
  if (fmt < ES_PIX_RGB24 || fmt > ES_PIX_YUV420P || !src || !pix) return ES_ERR_USAGE;
  memset(c, 0, sizeof *c);
  c->map = map;
  c->map_stride = map_stride;
  c->map_y0 = map_y0;
  c->src = src;
  es_render_range(p, r, min, max, &c->lo, &c->inv);
  c->a256 = es_render_a256(r);
  if (fmt != ES_PIX_GRAY8 && fmt != ES_PIX_GRAY16) {
    c->lut = es_colormap_lut(r->colormap);
    if (!c->lut) return ES_ERR_USAGE;
  }
  return ES_OK;
}

int es_cpu_render(const float *map, size_t map_stride, const es_image *src,
                  const es_params *p, const es_render *r, float min, float max,
                  const es_planes *pix, int threads) {
  int fmt = r->format;
  if (fmt == ES_PIX_NONE) return ES_OK;
  if (!map) return ES_ERR_USAGE;
  render_ctx c;
  int rc = render_init(&c, map, map_stride, 0, src, p, r, min, max, pix);
  if (rc) return rc;
  int w = src->width, h = src->height;
  int nrows = fmt == ES_PIX_YUV420P ? (h + 1) / 2 : h;
#ifdef ES_HAVE_OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#else
  (void)threads;
#endif
  for (int y = 0; y < nrows; y++) {
    if (fmt == ES_PIX_YUV420P)
      render_row420(&c, w, h, y, pix);
    else
      render_row(&c, fmt, w, y, pix);
  }
  return ES_OK;
}

int es_cpu_render_rows(const float *rows, size_t map_stride, int y0, int y1,
                       const es_image *src, const es_params *p, const es_render *r,
                       const es_planes *pix) {
  int fmt = r->format;
  if (fmt == ES_PIX_NONE) return ES_OK;
  if (r->range_auto) return ES_ERR_USAGE; /* needs the whole frame's min and max */
  render_ctx c;
  int rc = render_init(&c, rows, map_stride, y0, src, p, r, 0.0f, 0.0f, pix);
  if (rc || y0 == y1) return rc; /* no rows: the format and colormap checked */
  if (!rows) return ES_ERR_USAGE;
  int w = src->width, h = src->height;
  if (fmt == ES_PIX_YUV420P) {
    if (y0 % 2 || (y1 % 2 && y1 != h)) return ES_ERR_USAGE; /* a chroma row's pair split */
    for (int cy = y0 / 2; cy < (y1 + 1) / 2; cy++) render_row420(&c, w, h, cy, pix);
  } else {
    for (int y = y0; y < y1; y++) render_row(&c, fmt, w, y, pix);
  }
  return ES_OK;
}
