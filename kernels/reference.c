/*
 * reference.c - the plain double-precision reference (tests only).
 * STUB: to be written.
 */
#include "es_kernels.h"
int es_ref_entropy(const es_image *img, const es_params *p, double *out) { (void)img; (void)p; (void)out; return ES_ERR_INTERNAL; }
int es_ref_stats(const es_image *img, const es_params *p, const double *map, int bins, es_stats *stats) { (void)img; (void)p; (void)map; (void)bins; (void)stats; return ES_ERR_INTERNAL; }
