/*
 * npy.c - io (to be written)
 * STUB: to be written.
 */
#include "es_io.h"
