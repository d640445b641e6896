/*
 * render.c - rendering of a map on the CPU (colormaps, grey, YUV planes).
 * STUB: to be written.
 */
#include "es_kernels.h"
void es_render_range(const es_params *p, const es_render *r, float min, float max, double *lo, double *inv) { (void)p; (void)r; (void)min; (void)max; *lo = 0; *inv = 0; }
int es_cpu_render(const float *map, size_t map_stride, const es_image *src, const es_params *p, const es_render *r, float min, float max, const es_planes *pix, int threads) { (void)map; (void)map_stride; (void)src; (void)p; (void)r; (void)min; (void)max; (void)pix; (void)threads; return ES_ERR_INTERNAL; }
