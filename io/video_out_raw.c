/*
 * video_out_raw.c - float32 maps on standard output (--format f32 -o -): each frame's
 * width x height values, rows top to bottom, little-endian whatever the host, with no header,
 * so that a reader needs only the size. No libav, and no rendering asked of the caller: the
 * map is written as computed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "video_out_internal.h"

int es_vout_raw_open(es_video_out *v, char *msg, size_t len) {
  v->want = ES_PIX_NONE;
  if (AV_NE(1, 0)) { /* big-endian host: a row is swapped before it is written */
    v->f32_row = malloc((size_t)v->width * sizeof(float));
    if (!v->f32_row) {
      snprintf(msg, len, "out of memory");
      return ES_ERR_NOMEM;
    }
  }
  return ES_OK;
}

static int write_map(es_video_out *v, const float *map, size_t map_stride, char *msg,
                     size_t len) {
  if (!map) {
    snprintf(msg, len, "no map to write");
    return ES_ERR_INTERNAL;
  }
  for (int y = 0; y < v->height; y++) {
    const float *row = map + (size_t)y * map_stride;
    if (v->f32_row) { /* big-endian host: the format is little-endian */
      for (int x = 0; x < v->width; x++) {
        uint32_t u;
        memcpy(&u, row + x, 4);
        u = __builtin_bswap32(u);
        memcpy(v->f32_row + x, &u, 4);
      }
      row = v->f32_row;
    }
    if (fwrite(row, sizeof(float), (size_t)v->width, stdout) != (size_t)v->width) {
      snprintf(msg, len, "write error: %s", strerror(errno));
      return ES_ERR_OUTPUT;
    }
  }
  return ES_OK;
}

int es_vout_raw_write(es_video_out *v, const float *map, size_t map_stride, char *msg,
                      size_t len) {
  const int rc = write_map(v, map, map_stride, msg, len);
  if (rc < 0) v->failed = 1;
  else v->frames++;
  return rc;
}

int es_vout_raw_close(es_video_out *v, int commit, char *msg, size_t len) {
  (void)v;
  if (commit && fflush(stdout) != 0) {
    snprintf(msg, len, "write error: %s", strerror(errno));
    return ES_ERR_OUTPUT;
  }
  return ES_OK;
}
