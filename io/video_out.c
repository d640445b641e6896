/*
 * video_out.c - video I/O through libav* (to be written).
 */
#include "es_io.h"
