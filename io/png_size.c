/*
 * png_size.c - a PNG's width and height from its first 24 bytes (signature and IHDR), read
 * without libpng or decoding: cheap enough to weigh every file of a large batch when it is
 * split into shares (pipeline/shard.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "es_io.h"

int es_png_size(const char *path, int64_t *width, int64_t *height) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char b[24];
  FILE *f = fopen(path, "rb");
  size_t got;
  if (!f) return ES_ERR_INPUT;
  got = fread(b, 1, sizeof b, f);
  fclose(f);
  if (got != sizeof b || memcmp(b, sig, 8) || memcmp(b + 12, "IHDR", 4)) return ES_ERR_INPUT;
  *width = (int64_t)b[16] << 24 | (int64_t)b[17] << 16 | (int64_t)b[18] << 8 | b[19];
  *height = (int64_t)b[20] << 24 | (int64_t)b[21] << 16 | (int64_t)b[22] << 8 | b[23];
  return ES_OK;
}
