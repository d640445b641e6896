/*
 * es_luma.h - SPEC section 1's colour-to-grey rule, shared by every reader that meets colour
 * (io/png.c, io/tiff_in.c): Y = (299 R + 587 G + 114 B + 500) / 1000, integer division, in
 * the image's own depth (8- or 16-bit components give an 8- or 16-bit Y). One definition, so
 * the same pixels stored as PNG or as TIFF give the same grey to the bit.
 */
#ifndef ES_LUMA_H
#define ES_LUMA_H

#include <stdint.h>

static inline uint32_t es_luma(uint32_t r, uint32_t g, uint32_t b) {
  return (299u * r + 587u * g + 114u * b + 500u) / 1000u;
}

#endif /* ES_LUMA_H */
