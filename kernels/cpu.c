/*
 * cpu.c - the CPU engine (OpenMP, sliding histograms, exact fixed-point S).
 * STUB: to be written.
 */
#include "es_kernels.h"
int es_cpu_run(const es_job *job, int threads, char *msg, size_t msglen) { (void)job; (void)threads; (void)msg; (void)msglen; return ES_ERR_INTERNAL; }
int es_cpu_naive(const es_image *img, const es_params *p, float *out, size_t out_stride) { (void)img; (void)p; (void)out; (void)out_stride; return ES_ERR_INTERNAL; }
