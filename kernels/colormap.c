/*
 * colormap.c - colormap tables (inferno, viridis, magma, turbo from matplotlib's data, see
 * tools/gen-colormaps.py; gray built here) and their names.
 */
#include <stddef.h>
#include <string.h>

#include "colormap_data.h"
#include "es_kernels.h"

/* gray is the identity ramp; a constant table keeps es_colormap_lut free of lazy init (and
 * so thread-safe without locks). */
#define G4(i) (i), (i), (i), (i) + 1, (i) + 1, (i) + 1, (i) + 2, (i) + 2, (i) + 2, (i) + 3, (i) + 3, (i) + 3
#define G16(i) G4(i), G4((i) + 4), G4((i) + 8), G4((i) + 12)
#define G64(i) G16(i), G16((i) + 16), G16((i) + 32), G16((i) + 48)
static const uint8_t es_cmap_gray[256 * 3] = {G64(0), G64(64), G64(128), G64(192)};

static const struct {
  const char *name;
  const uint8_t *lut;
} es_cmaps[] = {
    [ES_CMAP_INFERNO] = {"inferno", es_cmap_inferno},
    [ES_CMAP_VIRIDIS] = {"viridis", es_cmap_viridis},
    [ES_CMAP_MAGMA] = {"magma", es_cmap_magma},
    [ES_CMAP_TURBO] = {"turbo", es_cmap_turbo},
    [ES_CMAP_GRAY] = {"gray", es_cmap_gray},
};
#define ES_NCMAPS ((int)(sizeof es_cmaps / sizeof es_cmaps[0]))

const uint8_t *es_colormap_lut(int colormap) {
  if (colormap < 0 || colormap >= ES_NCMAPS) return NULL;
  return es_cmaps[colormap].lut;
}

int es_colormap_from_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < ES_NCMAPS; i++)
    if (!strcmp(name, es_cmaps[i].name)) return i;
  /* matplotlib and ImageMagick users type "grey" as often as "gray" */
  if (!strcmp(name, "grey")) return ES_CMAP_GRAY;
  return -1;
}

/* "?" (not NULL) for an unknown id, so callers can print it without a check. */
const char *es_colormap_name(int colormap) {
  if (colormap < 0 || colormap >= ES_NCMAPS) return "?";
  return es_cmaps[colormap].name;
}
