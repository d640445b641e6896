/*
 * openslide.c - whole-slide images through OpenSlide (Aperio .svs, Hamamatsu .ndpi/.vms,
 * MIRAX, Leica .scn, Ventana .bif, generic tiled pyramidal TIFF, ...): one pyramid level
 * read rows at a time, for es_compute_bands. Built with ES_HAVE_OPENSLIDE; openslide_stub.c
 * otherwise.
 *
 * openslide_read_region gives premultiplied ARGB. Each pixel is composited over the slide's
 * background colour (its openslide.background-color property, white where it has none):
 * c + bg * (255 - a) / 255, rounded, which is the colour itself where the slide is opaque
 * (a = 255) and the background where nothing was scanned (a = 0: white glass, grey 255),
 * as OpenSlide's own viewers show it. Then grey by SPEC section 1's luma rule (es_luma.h,
 * the PNG and TIFF readers' one definition).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openslide.h>

#include "es_io.h"
#include "es_luma.h"

/* Columns read per openslide_read_region: the ARGB buffer is this many pixels by the rows
 * asked for, never a whole row of a 100,000-pixel-wide slide at once. */
#define ES_SLIDE_CHUNK 4096

struct es_slide {
  openslide_t *osr;
  int level;
  int64_t width, height; /* of the level */
  double downsample;
  uint32_t bg[3];        /* background R, G, B */
  uint32_t *argb;        /* ES_SLIDE_CHUNK x rows_cap */
  int rows_cap;
};

int es_slide_built(void) { return 1; }

int es_slide_detect(const char *path) { return openslide_detect_vendor(path) != NULL; }

int es_slide_open(const char *path, int level, int64_t max_pixels, es_slide **out, int *width,
                  int *height, char *msg, size_t len) {
  int rc = ES_ERR_INPUT;
  *out = NULL;
  es_slide *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if (!openslide_detect_vendor(path)) {
    snprintf(msg, len, "not a slide OpenSlide reads");
    goto end;
  }
  s->osr = openslide_open(path);
  const char *err = s->osr ? openslide_get_error(s->osr) : "cannot open";
  if (!s->osr || err) {
    snprintf(msg, len, "OpenSlide: %s", err ? err : "cannot open");
    goto end;
  }
  int32_t levels = openslide_get_level_count(s->osr);
  if (level < 0 || level >= levels) {
    snprintf(msg, len, "level %d: the slide has levels 0..%d", level, levels - 1);
    rc = ES_ERR_USAGE;
    goto end;
  }
  s->level = level;
  openslide_get_level_dimensions(s->osr, level, &s->width, &s->height);
  s->downsample = openslide_get_level_downsample(s->osr, level);
  if (s->width < 1 || s->height < 1 || !(s->downsample >= 1.0)) {
    snprintf(msg, len, "OpenSlide: level %d has no pixels (%s)", level,
             openslide_get_error(s->osr) ? openslide_get_error(s->osr) : "empty");
    goto end;
  }
  if (s->width > INT32_MAX / 2 || s->height > INT32_MAX / 2 ||
      s->width * s->height > max_pixels) {
    snprintf(msg, len, "level %d is %" PRId64 " x %" PRId64 ", more than max_pixels %" PRId64,
             level, s->width, s->height, max_pixels);
    goto end;
  }
  s->bg[0] = s->bg[1] = s->bg[2] = 255;
  const char *bgs = openslide_get_property_value(s->osr, OPENSLIDE_PROPERTY_NAME_BACKGROUND_COLOR);
  unsigned int bgv;
  if (bgs && strlen(bgs) == 6 && sscanf(bgs, "%6x", &bgv) == 1) {
    s->bg[0] = (bgv >> 16) & 255;
    s->bg[1] = (bgv >> 8) & 255;
    s->bg[2] = bgv & 255;
  }
  *width = (int)s->width;
  *height = (int)s->height;
  *out = s;
  return ES_OK;
end:
  es_slide_close(&s);
  return rc;
}

/* Premultiplied c (0..a) over background b: c + b (255 - a) / 255, rounded. */
static inline uint32_t slide_over(uint32_t c, uint32_t a, uint32_t b) {
  return c + (b * (255 - a) + 127) / 255;
}

int es_slide_read_rows(es_slide *s, int y0, int nrows, void *dst, size_t dst_stride,
                       char *msg, size_t len) {
  if (!s || y0 < 0 || nrows < 1 || y0 + (int64_t)nrows > s->height) {
    snprintf(msg, len, "rows %d..%d: outside the level", y0, y0 + nrows - 1);
    return ES_ERR_INTERNAL;
  }
  if (nrows > s->rows_cap) {
    free(s->argb);
    s->argb = malloc(sizeof *s->argb * ES_SLIDE_CHUNK * (size_t)nrows);
    s->rows_cap = s->argb ? nrows : 0;
    if (!s->argb) {
      snprintf(msg, len, "out of memory for %d rows", nrows);
      return ES_ERR_NOMEM;
    }
  }
  /* Level coordinates to level 0's, which read_region takes: exact for the integer
   * downsamples of pyramids (2, 4, ...). */
  const int64_t ly0 = (int64_t)llround((double)y0 * s->downsample);
  for (int64_t x0 = 0; x0 < s->width; x0 += ES_SLIDE_CHUNK) {
    const int64_t w = s->width - x0 < ES_SLIDE_CHUNK ? s->width - x0 : ES_SLIDE_CHUNK;
    const int64_t lx0 = (int64_t)llround((double)x0 * s->downsample);
    openslide_read_region(s->osr, s->argb, lx0, ly0, s->level, w, nrows);
    const char *err = openslide_get_error(s->osr);
    if (err) {
      snprintf(msg, len, "OpenSlide: rows %d..%d: %s", y0, y0 + nrows - 1, err);
      return ES_ERR_INPUT;
    }
    for (int y = 0; y < nrows; y++) {
      const uint32_t *src = s->argb + (size_t)y * (size_t)w;
      uint8_t *row = (uint8_t *)dst + (size_t)y * dst_stride + x0;
      for (int64_t x = 0; x < w; x++) {
        const uint32_t p = src[x], a = p >> 24;
        uint32_t r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255;
        if (a != 255) {
          r = slide_over(r, a, s->bg[0]);
          g = slide_over(g, a, s->bg[1]);
          b = slide_over(b, a, s->bg[2]);
        }
        row[x] = (uint8_t)es_luma(r, g, b);
      }
    }
  }
  return ES_OK;
}

void es_slide_close(es_slide **ps) {
  es_slide *s = ps ? *ps : NULL;
  if (!s) return;
  if (s->osr) openslide_close(s->osr);
  free(s->argb);
  free(s);
  *ps = NULL;
}
