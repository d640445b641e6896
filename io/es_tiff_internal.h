/*
 * es_tiff_internal.h - what io/tiff_in.c, io/tiff_out.c and io/tiff_geo.c share: libtiff's
 * error and warning handlers, and the GeoTIFF tags' registration, reading and writing.
 */
#ifndef ES_TIFF_INTERNAL_H
#define ES_TIFF_INTERNAL_H

#include <stdarg.h>
#include <tiffio.h>

#include "es_tiff.h"

/* Size of the buffer es_tiff_capture's user pointer names. */
enum { ES_TIFF_ERR_LEN = 256 };
/* TIFFOpenOptions handlers: the first error since the buffer (user, ES_TIFF_ERR_LEN bytes)
 * was cleared is kept as one line; warnings are dropped. Both return 1: nothing reaches
 * libtiff's global handlers (stderr). */
int es_tiff_capture(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap);
int es_tiff_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap);

/* Makes the GeoTIFF and GDAL_NODATA tags known to libtiff (a tag extender, as libgeotiff's
 * xtiff.c does), once per process; called before any TIFF is opened. */
void es_tiff_geo_register(void);
/* 1 when the current directory of tif carries any GeoTIFF tag. */
int es_tiff_geo_present(TIFF *tif);
/* Copies the current directory's GeoTIFF tags into a new blob (*geo NULL: none). */
int es_tiff_geo_read(TIFF *tif, es_tiff_geo **geo, char *msg, size_t len);
/* A copy of geo (NULL for NULL); NULL with ES_ERR_NOMEM in *rc when out of memory. */
es_tiff_geo *es_tiff_geo_dup(const es_tiff_geo *geo, int *rc);
/* Sets geo's tags on the directory being written. */
int es_tiff_geo_write(TIFF *tif, const es_tiff_geo *geo, char *msg, size_t len);

#endif /* ES_TIFF_INTERNAL_H */
