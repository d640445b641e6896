/*
 * render.c - rendering of a finished map on the CPU (colormaps, grey, YUV planes).
 *
 * THE RULES (the GPU engine replicates them exactly; every step is in es_math.h):
 *   range:   fixed: lo = 0, inv = 1/hmax (es_params_hmax), inv = 0 if hmax == 0.
 *            auto:  lo = min, inv = 1/(max - min) (double), inv = 0 if max == min
 *                   (min/max: the frame's float min and max of H, converted to double).
 *   a256   = (int)lround(overlay * 256.0) (overlay as double); overlay applies when a256 > 0.
 *   g      = es_grey8(source sample, depth) (only used when a256 > 0).
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
#include "es_kernels.h"
void es_render_range(const es_params *p, const es_render *r, float min, float max, double *lo, double *inv) { (void)p; (void)r; (void)min; (void)max; *lo = 0; *inv = 0; }
int es_cpu_render(const float *map, size_t map_stride, const es_image *src, const es_params *p, const es_render *r, float min, float max, const es_planes *pix, int threads) { (void)map; (void)map_stride; (void)src; (void)p; (void)r; (void)min; (void)max; (void)pix; (void)threads; return ES_ERR_INTERNAL; }
