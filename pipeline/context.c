/*
 * context.c - the library context (to be written)
 * STUB: to be written.
 */
#include "entropy_stream.h"
