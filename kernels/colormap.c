/*
 * colormap.c - colormap tables (inferno, viridis, magma, turbo from matplotlib's data, see
 * tools/gen-colormaps.py; gray built here). Their names are core/params.c's ("colormap"), the
 * table the CLI and Python parse with.
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

static const uint8_t *const es_cmaps[] = {
    [ES_CMAP_INFERNO] = es_cmap_inferno, [ES_CMAP_VIRIDIS] = es_cmap_viridis,
    [ES_CMAP_MAGMA] = es_cmap_magma,     [ES_CMAP_TURBO] = es_cmap_turbo,
    [ES_CMAP_GRAY] = es_cmap_gray,
};
#define ES_NCMAPS ((int)(sizeof es_cmaps / sizeof es_cmaps[0]))

const uint8_t *es_colormap_lut(int colormap) {
  if (colormap < 0 || colormap >= ES_NCMAPS) return NULL;
  return es_cmaps[colormap];
}

int es_colormap_from_name(const char *name) {
  int v;
  if (name && es_param_parse("colormap", name, &v, NULL, 0) == ES_OK) return v;
  /* matplotlib and ImageMagick users type "grey" as often as "gray" */
  if (name && !strcmp(name, "grey")) return ES_CMAP_GRAY;
  return -1;
}

/* "?" (not NULL) for an unknown id, so callers can print it without a check. */
const char *es_colormap_name(int colormap) {
  const char *n = es_param_name_of("colormap", colormap);
  return n ? n : "?";
}
