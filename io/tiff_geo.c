/*
 * tiff_geo.c - GeoTIFF in, GeoTIFF out, without libgeotiff: the tags that place an image on
 * the Earth (ModelPixelScale, ModelTiepoint, ModelTransformation, the GeoKeyDirectory and its
 * double and ASCII parameters, and GDAL's no-data value) are copied from an input page as
 * they are stored and written back on the map made from it, so a GIS overlays the two. The
 * keys are not interpreted: the map has the input's pixel grid, so the same tags are right.
 * libtiff does not know the GeoTIFF tags; they are registered through a tag extender, as
 * libgeotiff's xtiff.c does, so that libtiff reads them typed and can write them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "es_tiff_internal.h"

/* The tags, in the order they are written (libtiff sorts them in the file anyway). */
static const uint32_t es_geo_tags[] = {
    33550, /* ModelPixelScaleTag: doubles */
    33922, /* ModelTiepointTag: doubles */
    34264, /* ModelTransformationTag: 16 doubles */
    34735, /* GeoKeyDirectoryTag: shorts */
    34736, /* GeoDoubleParamsTag: doubles */
    34737, /* GeoAsciiParamsTag: ASCII */
    42113, /* GDAL_NODATA: ASCII */
};
enum { ES_GEO_NTAGS = sizeof es_geo_tags / sizeof es_geo_tags[0] };

static const TIFFFieldInfo es_geo_fields[] = {
    {33550, -1, -1, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, "ModelPixelScaleTag"},
    {33922, -1, -1, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, "ModelTiepointTag"},
    {34264, -1, -1, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, "ModelTransformationTag"},
    {34735, -1, -1, TIFF_SHORT, FIELD_CUSTOM, 1, 1, "GeoKeyDirectoryTag"},
    {34736, -1, -1, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, "GeoDoubleParamsTag"},
    {34737, -1, -1, TIFF_ASCII, FIELD_CUSTOM, 1, 0, "GeoAsciiParamsTag"},
    {42113, -1, -1, TIFF_ASCII, FIELD_CUSTOM, 1, 0, "GDALNoDataValue"}, /* where libtiff
                                                                           * lacks it */
};

struct es_tiff_geo {
  uint32_t count[ES_GEO_NTAGS]; /* values (ASCII: bytes with the NUL); 0: tag absent */
  void *data[ES_GEO_NTAGS];     /* owned */
};

static TIFFExtendProc es_geo_parent;

/* Called by libtiff for every directory it sets up; TIFFMergeFieldInfo leaves a tag libtiff
 * already knows as it is. */
static void es_geo_extend(TIFF *tif) {
  TIFFMergeFieldInfo(tif, es_geo_fields, sizeof es_geo_fields / sizeof es_geo_fields[0]);
  if (es_geo_parent) es_geo_parent(tif);
}

static void es_geo_init(void) { es_geo_parent = TIFFSetTagExtender(es_geo_extend); }

void es_tiff_geo_register(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, es_geo_init);
}

static size_t es_geo_size(TIFFDataType type) {
  return type == TIFF_DOUBLE ? 8 : type == TIFF_SHORT ? 2 : 1;
}

/* Tag i of the current directory: *count values at *data (libtiff's memory), 0 if absent. */
static int es_geo_get(TIFF *tif, int i, uint32_t *count, const void **data) {
  const TIFFField *f = TIFFFindField(tif, es_geo_tags[i], TIFF_ANY);
  void *p = NULL;
  *count = 0;
  *data = NULL;
  if (!f) return 0;
  if (TIFFFieldPassCount(f)) {
    if (TIFFFieldReadCount(f) == TIFF_VARIABLE2) {
      uint32_t c = 0;
      if (!TIFFGetField(tif, es_geo_tags[i], &c, &p)) return 0;
      *count = c;
    } else {
      uint16_t c = 0;
      if (!TIFFGetField(tif, es_geo_tags[i], &c, &p)) return 0;
      *count = c;
    }
  } else {
    if (TIFFFieldDataType(f) != TIFF_ASCII || !TIFFGetField(tif, es_geo_tags[i], &p) || !p)
      return 0;
    *count = (uint32_t)strlen(p) + 1;
  }
  *data = p;
  return p && *count;
}

int es_tiff_geo_present(TIFF *tif) {
  for (int i = 0; i < ES_GEO_NTAGS; i++) {
    uint32_t c;
    const void *d;
    if (es_geo_get(tif, i, &c, &d)) return 1;
  }
  return 0;
}

int es_tiff_geo_read(TIFF *tif, es_tiff_geo **out, char *msg, size_t len) {
  es_tiff_geo *g = calloc(1, sizeof *g);
  int any = 0;
  *out = NULL;
  if (!g) goto nomem;
  for (int i = 0; i < ES_GEO_NTAGS; i++) {
    uint32_t c;
    const void *d;
    const TIFFField *f = TIFFFindField(tif, es_geo_tags[i], TIFF_ANY);
    if (!es_geo_get(tif, i, &c, &d)) continue;
    size_t bytes = (size_t)c * es_geo_size(TIFFFieldDataType(f));
    g->data[i] = malloc(bytes + 1); /* ASCII keeps its NUL inside the count */
    if (!g->data[i]) goto nomem;
    memcpy(g->data[i], d, bytes);
    ((char *)g->data[i])[bytes] = 0;
    g->count[i] = c;
    any = 1;
  }
  if (any) *out = g;
  else es_tiff_geo_free(&g);
  return ES_OK;
nomem:
  es_tiff_geo_free(&g);
  snprintf(msg, len, "out of memory");
  return ES_ERR_NOMEM;
}

es_tiff_geo *es_tiff_geo_dup(const es_tiff_geo *geo, int *rc) {
  es_tiff_geo *g;
  *rc = ES_OK;
  if (!geo) return NULL;
  if (!(g = calloc(1, sizeof *g))) goto nomem;
  for (int i = 0; i < ES_GEO_NTAGS; i++) {
    if (!geo->count[i]) continue;
    size_t bytes = (size_t)geo->count[i] * (i == 3 ? 2 : i >= 5 ? 1 : 8);
    if (!(g->data[i] = malloc(bytes + 1))) goto nomem;
    memcpy(g->data[i], geo->data[i], bytes + 1);
    g->count[i] = geo->count[i];
  }
  return g;
nomem:
  es_tiff_geo_free(&g);
  *rc = ES_ERR_NOMEM;
  return NULL;
}

int es_tiff_geo_write(TIFF *tif, const es_tiff_geo *geo, char *msg, size_t len) {
  if (!geo) return ES_OK;
  for (int i = 0; i < ES_GEO_NTAGS; i++) {
    const TIFFField *f = TIFFFindField(tif, es_geo_tags[i], TIFF_ANY);
    int ok;
    if (!geo->count[i]) continue;
    if (!f) {
      snprintf(msg, len, "cannot write GeoTIFF tag %u", (unsigned)es_geo_tags[i]);
      return ES_ERR_INTERNAL;
    }
    if (!TIFFFieldPassCount(f))
      ok = TIFFSetField(tif, es_geo_tags[i], geo->data[i]);
    else if (TIFFFieldReadCount(f) == TIFF_VARIABLE2)
      ok = TIFFSetField(tif, es_geo_tags[i], (uint32_t)geo->count[i], geo->data[i]);
    else
      ok = TIFFSetField(tif, es_geo_tags[i], (int)geo->count[i], geo->data[i]);
    if (!ok) {
      snprintf(msg, len, "cannot write GeoTIFF tag %u", (unsigned)es_geo_tags[i]);
      return ES_ERR_OUTPUT;
    }
  }
  return ES_OK;
}

void es_tiff_geo_free(es_tiff_geo **geo) {
  if (!geo || !*geo) return;
  for (int i = 0; i < ES_GEO_NTAGS; i++) free((*geo)->data[i]);
  free(*geo);
  *geo = NULL;
}
