/*
 * video_in.c - video I/O through libav* (to be written).
 */
#include "es_io.h"
