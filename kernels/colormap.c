/*
 * colormap.c - colormap tables (inferno, viridis, magma, turbo, gray).
 * STUB: to be written.
 */
#include <stddef.h>
#include "es_kernels.h"
const uint8_t *es_colormap_lut(int colormap) { (void)colormap; return NULL; }
int es_colormap_from_name(const char *name) { (void)name; return -1; }
const char *es_colormap_name(int colormap) { (void)colormap; return "?"; }
