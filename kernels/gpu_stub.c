/*
 * gpu_stub.c - the CUDA engine interface when built without CUDA.
 * STUB: to be written.
 */
#include <stdio.h>
#include "es_gpu.h"
int es_gpu_built(void) { return 0; }
int es_gpu_device_count(void) { return 0; }
