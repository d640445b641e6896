/*
 * es_tiff.h - TIFF in and out through libtiff (io/tiff_in.c, io/tiff_out.c, io/tiff_geo.c).
 *
 * The reader delivers any row range of a page as grey samples (a band of a large image, or
 * the whole of it), reading only the strips or tiles those rows touch; the writer takes rows
 * in order and keeps one tile row, never the image. Both keep the GeoTIFF tags of an input
 * (es_tiff_geo) so that a map written from it overlays it in GIS tools. As everything in
 * io/, every function returns an es_status and writes a one-line message, without the file
 * name, into msg; libtiff's own errors and warnings are captured, never printed.
 */
#ifndef ES_TIFF_H
#define ES_TIFF_H

#include <stddef.h>
#include <stdint.h>

#include "es_io.h"
#include "es_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- TIFF in. */

typedef struct es_tiff es_tiff;       /* an open TIFF file, positioned on one page */
typedef struct es_tiff_geo es_tiff_geo; /* the GeoTIFF tags of a page (opaque) */

/* How a page's samples are stored (TIFF's SampleFormat): unsigned integers or IEEE floats. */
enum { ES_TIFF_UINT = 1, ES_TIFF_FLOAT = 3 };

typedef struct es_tiff_info {
  int width, height;  /* of the current page */
  int pages;          /* pages (image file directories) in the file */
  int samples;        /* samples per pixel, as stored (extra samples such as alpha included) */
  int bits;           /* bits per sample, as stored: 1, 2, 4, 8, 16 or 32 */
  int sample_format;  /* ES_TIFF_UINT or ES_TIFF_FLOAT */
  int photometric;    /* TIFF's PHOTOMETRIC_* (0 min-is-white, 1 min-is-black, 2 RGB,
                       * 3 palette, 6 YCbCr) */
  int planar;         /* 1: samples of a pixel together (contig), 2: one plane each */
  int compression;    /* TIFF's COMPRESSION_* (1 none, 5 LZW, 7 JPEG, 8 deflate, 32773
                       * PackBits, 50000 zstd, ...) */
  int tiled;          /* 1: tiles of block_width x block_height; 0: strips of block_height
                       * rows (block_width = width) */
  int block_width, block_height;
  int bigtiff;        /* 1 for a BigTIFF file */
  int has_geo;        /* 1 when the page carries GeoTIFF tags (es_tiff_geo_get) */
  int bands;          /* what --band chooses among: the samples of a grey image with several
                       * (a band stack), else 1 (grey, RGB(A), palette: one grey) */
  int depth;          /* depth of the grey es_tiff_read_rows delivers: 8 (1-, 2-, 4- and
                       * 8-bit samples, palette and RGB of 8 bits), 16, or 32 (float32) */
} es_tiff_info;

/* Opens path on its first page. The page's header is checked before anything is allocated
 * for its pixels: width * height against max_pixels (<= 0: 2^31), sizes that overflow, a
 * sample format this reader does not take (complex, signed, 64-bit float, 32-bit integer,
 * ...): ES_ERR_INPUT with msg set and *t NULL. info may be NULL. Close with es_tiff_close. */
int es_tiff_open(const char *path, int64_t max_pixels, es_tiff **t, es_tiff_info *info,
                 char *msg, size_t len);
/* Makes page (0 .. pages-1) the current one, with the same checks as es_tiff_open; info (may
 * be NULL) describes it. On failure the file stays open but no page is current (reads fail
 * until a page is set). */
int es_tiff_set_page(es_tiff *t, int page, es_tiff_info *info, char *msg, size_t len);
/* What es_tiff_open or es_tiff_set_page said of the current page, without reading the file
 * again (a header probed once, then handed on). */
void es_tiff_info_of(const es_tiff *t, es_tiff_info *info);
/* Rows y0 .. y0 + nrows - 1 of the current page as grey, into dst (rows dst_stride bytes
 * apart, at least width * depth / 8): uint8, native-endian uint16 or float32 as info.depth
 * says. Colour (RGB, RGBA, palette, JPEG-compressed YCbCr) becomes luma by SPEC section 1's
 * rule in the image's own depth, exactly as the PNG reader makes it (es_luma.h); alpha and
 * other extra samples are ignored; grey of 1, 2 or 4 bits is scaled to 8 bits as PNG's is
 * (v * 255 / (2^bits - 1): 1-bit is 0 or 255), min-is-white is inverted. A band stack gives
 * sample `band` (0 .. bands-1; any other band is ES_ERR_USAGE for a stack and must be 0
 * otherwise). Only the strips or tiles the rows touch are decoded; the last strip or tile
 * row decoded is kept, so reading a page band by band, in order, decodes each block once.
 * Memory: one strip, or one row of tiles, per plane read. Corrupt or truncated data is
 * ES_ERR_INPUT ("strip 3: ..." / "tile 12: ..."). */
int es_tiff_read_rows(es_tiff *t, int y0, int nrows, int band, void *dst, size_t dst_stride,
                      char *msg, size_t len);
/* The GeoTIFF tags of the current page (ModelTiepoint, ModelPixelScale, ModelTransformation,
 * GeoKeyDirectory, GeoDoubleParams, GeoAsciiParams, GDAL_NODATA), copied into a new blob
 * (es_tiff_geo_free), or *geo NULL where the page has none. ES_ERR_NOMEM only. */
int es_tiff_geo_get(es_tiff *t, es_tiff_geo **geo, char *msg, size_t len);
/* The same for page of the file at path, opened for it (*geo NULL: none, or the file
 * unreadable now: its reading reports that). */
int es_tiff_geo_load(const char *path, int page, es_tiff_geo **geo, char *msg, size_t len);
void es_tiff_geo_free(es_tiff_geo **geo); /* accepts NULL and *geo NULL */
void es_tiff_close(es_tiff **t);          /* accepts NULL and *t NULL */

/* The whole of one page into memory the caller's dest provides, as es_png_read_to: dest is
 * called with width, height and depth (8, 16, or 32 for float32 samples) once the header is
 * checked; img->data is then *dst (img->depth 32 for float). info may be NULL. */
int es_tiff_read_to(const char *path, int page, int band, int64_t max_pixels,
                    es_png_dest_fn dest, void *user, es_image *img, es_tiff_info *info,
                    char *msg, size_t len);

/* 1 when path ends in .tif or .tiff (any case). */
int es_path_is_tiff(const char *path);
/* 1 when the first bytes of a file are a TIFF's ("II*\0", "MM\0*", BigTIFF's "II+\0",
 * "MM\0+"); n is how many bytes buf holds. */
int es_tiff_magic(const void *buf, size_t n);

/* ---- TIFF out. */

typedef struct es_tiff_writer es_tiff_writer;
typedef struct es_tiff_writer_opts {
  int width, height; /* of every page */
  int pages;         /* pages that will be written, 0 if unknown (BigTIFF is then chosen,
                      * see bigtiff) */
  int pixfmt;        /* what rows hold: ES_PIX_NONE = float32 (the map), ES_PIX_GRAY8,
                      * ES_PIX_GRAY16 (native-endian), ES_PIX_RGB24 (heat) */
  int tile;          /* tile side, a multiple of 16; 0: 256 */
  int compression;   /* TIFF's COMPRESSION_*, 0: zstd where libtiff has it, else deflate */
  int bigtiff;       /* 1: always BigTIFF; 0: BigTIFF only when the pixels of the pages
                      * (all pages unknown: counted as 4 GiB) could pass 4 GiB */
  const es_tiff_geo *geo; /* NULL, or GeoTIFF tags written on every page (copied at open) */
} es_tiff_writer_opts;

/* Creates path through es_atomic_open (a temporary next to it, renamed at close; overwrite
 * 0 / 1 / ES_WRITE_KEEP as for es_png_write, ES_WRITE_KEPT returned for -n). A TIFF must be
 * seekable: a FIFO or device output is ES_ERR_OUTPUT. The writer is on page 0. */
int es_tiff_writer_open(const char *path, int overwrite, const es_tiff_writer_opts *opts,
                        es_tiff_writer **w, char *msg, size_t len);
/* Rows y0 .. y0 + nrows - 1 of the current page, stride bytes apart; y0 must be where the
 * last call ended (rows in order). A row of tiles is encoded and written once it is full,
 * so memory is one tile row whatever the image. */
int es_tiff_writer_write_rows(es_tiff_writer *w, int y0, int nrows, const void *data,
                              size_t stride, char *msg, size_t len);
/* Ends the current page (all its rows written) and starts the next one. */
int es_tiff_writer_next_page(es_tiff_writer *w, char *msg, size_t len);
/* commit 1: ends the last page (all its rows written, else ES_ERR_INTERNAL and nothing left)
 * and renames the file into place (ES_OK, ES_WRITE_KEPT or ES_ERR_OUTPUT). commit 0, or any
 * failure: removes the temporary. *w is freed and set NULL in every case; accepts NULL. */
int es_tiff_writer_close(es_tiff_writer **w, int commit, char *msg, size_t len);

/* "libtiff 4.5.0" (TIFFGetVersion's first line, shortened). */
int es_tiff_version(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ES_TIFF_H */
