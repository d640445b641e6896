/*
 * tiff_out.c - TIFF out with libtiff: tiled (256 x 256), zstd where libtiff has it (else
 * deflate), BigTIFF when the file could pass 4 GiB, one page or a stack, written atomically.
 *
 * Rows come in order and are held until a row of tiles is full, then each tile is encoded
 * and written: memory is one tile row, never the image, so a map computed band by band
 * (issue 30) is written as it comes. The file is the temporary of es_atomic_open, written by
 * libtiff through its descriptor (libtiff must seek, so a FIFO is refused), renamed into
 * place at close; any failure removes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include "es_tiff_internal.h"

struct es_tiff_writer {
  es_atomic at;
  TIFF *tif;
  int fd;                 /* at.fp's descriptor, which libtiff reads, writes and seeks */
  es_tiff_writer_opts o;  /* tile, compression filled in */
  es_tiff_geo *geo;       /* owned copy of o.geo */
  int page;               /* page being written */
  int y;                  /* rows of the page received */
  size_t bpp;             /* bytes a pixel */
  size_t rowbytes;        /* width * bpp */
  uint8_t *rows;          /* the tile row being filled: tile rows of rowbytes */
  uint8_t *tile;          /* one tile, zero-padded past the image's edge */
  size_t tilebytes;
  char err[ES_TIFF_ERR_LEN]; /* libtiff's first error, or the write's */
};

static tmsize_t es_tw_read(thandle_t h, void *buf, tmsize_t n) {
  es_tiff_writer *w = h;
  return (tmsize_t)read(w->fd, buf, (size_t)n);
}

static tmsize_t es_tw_write(thandle_t h, void *buf, tmsize_t n) {
  es_tiff_writer *w = h;
  size_t done = 0;
  while (done < (size_t)n) { /* write() may be short (a signal, a full disk) */
    ssize_t r = write(w->fd, (const uint8_t *)buf + done, (size_t)n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (!w->err[0])
        snprintf(w->err, sizeof w->err, "cannot write: %s", strerror(r < 0 ? errno : ENOSPC));
      return done ? (tmsize_t)done : -1;
    }
    done += (size_t)r;
  }
  return n;
}

static toff_t es_tw_seek(thandle_t h, toff_t off, int whence) {
  es_tiff_writer *w = h;
  return (toff_t)lseek(w->fd, (off_t)off, whence);
}

static int es_tw_close(thandle_t h) { /* es_atomic owns the descriptor */
  (void)h;
  return 0;
}

static toff_t es_tw_size(thandle_t h) {
  es_tiff_writer *w = h;
  struct stat st;
  return fstat(w->fd, &st) == 0 ? (toff_t)st.st_size : 0;
}

static int es_tw_map(thandle_t h, void **base, toff_t *size) {
  (void)h;
  (void)base;
  (void)size;
  return 0; /* never mapped */
}

static void es_tw_unmap(thandle_t h, void *base, toff_t size) {
  (void)h;
  (void)base;
  (void)size;
}

/* The tags of the page starting now. */
static int es_tw_setup_page(es_tiff_writer *w, char *msg, size_t len) {
  const es_tiff_writer_opts *o = &w->o;
  TIFF *tif = w->tif;
  const int rgb = o->pixfmt == ES_PIX_RGB24, f32 = o->pixfmt == ES_PIX_NONE;
  const int bits = f32 ? 32 : o->pixfmt == ES_PIX_GRAY16 ? 16 : 8;
  int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)o->width) &&
           TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)o->height) &&
           TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits) &&
           TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, rgb ? 3 : 1) &&
           TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
           TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, rgb ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
           TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
           TIFFSetField(tif, TIFFTAG_TILEWIDTH, (uint32_t)o->tile) &&
           TIFFSetField(tif, TIFFTAG_TILELENGTH, (uint32_t)o->tile) &&
           TIFFSetField(tif, TIFFTAG_COMPRESSION, o->compression);
  /* No predictor: an entropy map holds few distinct values (sums of a small table), which
   * zstd matches as they are; differences scatter them. On 8 maps of a noisy 2048^2 16-bit
   * page, K=5 L=16 (tools/BENCHMARKS.md T2): float32 28.6 MB without against 83.1 MB with
   * the floating-point predictor, gray16 22.7 against 33.3 MB, gray8 17.9 against 20.0. */
  if (ok && o->compression == COMPRESSION_ZSTD) ok = TIFFSetField(tif, TIFFTAG_ZSTD_LEVEL, 3);
  if (ok && o->compression == COMPRESSION_ADOBE_DEFLATE) ok = TIFFSetField(tif, TIFFTAG_ZIPQUALITY, 3);
  if (ok && o->pages > 1)
    ok = TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE) &&
         TIFFSetField(tif, TIFFTAG_PAGENUMBER, (uint16_t)(w->page < 65535 ? w->page : 65535),
                      (uint16_t)(o->pages < 65535 ? o->pages : 65535));
  if (!ok) {
    snprintf(msg, len, "cannot write the TIFF header: %s", w->err[0] ? w->err : "refused");
    return ES_ERR_OUTPUT;
  }
  return es_tiff_geo_write(tif, w->geo, msg, len);
}

int es_tiff_writer_open(const char *path, int overwrite, const es_tiff_writer_opts *opts,
                        es_tiff_writer **out, char *msg, size_t len) {
  es_tiff_writer *w = NULL;
  TIFFOpenOptions *topts = NULL;
  int rc;
  *out = NULL;
  if (!opts || opts->width <= 0 || opts->height <= 0 || opts->pages < 0 ||
      (opts->pixfmt != ES_PIX_NONE && opts->pixfmt != ES_PIX_GRAY8 &&
       opts->pixfmt != ES_PIX_GRAY16 && opts->pixfmt != ES_PIX_RGB24) ||
      opts->tile < 0 || opts->tile % 16) {
    snprintf(msg, len, "cannot write such a TIFF");
    return ES_ERR_INTERNAL;
  }
  es_tiff_geo_register();
  if (!(w = calloc(1, sizeof *w))) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  w->fd = -1;
  w->o = *opts;
  w->o.geo = NULL;
  if (!w->o.tile) w->o.tile = 256;
  if (!w->o.compression)
    w->o.compression = TIFFIsCODECConfigured(COMPRESSION_ZSTD) ? COMPRESSION_ZSTD
                                                               : COMPRESSION_ADOBE_DEFLATE;
  if (!TIFFIsCODECConfigured((uint16_t)w->o.compression)) {
    snprintf(msg, len, "this libtiff cannot compress with method %d", w->o.compression);
    rc = ES_ERR_OUTPUT;
    goto fail;
  }
  w->geo = es_tiff_geo_dup(opts->geo, &rc);
  if (rc != ES_OK) {
    snprintf(msg, len, "out of memory");
    goto fail;
  }
  w->bpp = opts->pixfmt == ES_PIX_NONE ? 4 : opts->pixfmt == ES_PIX_RGB24 ? 3
           : opts->pixfmt == ES_PIX_GRAY16 ? 2 : 1;
  {
    const size_t t = (size_t)w->o.tile;
    size_t rowsz;
    if (__builtin_mul_overflow((size_t)opts->width, w->bpp, &w->rowbytes) ||
        __builtin_mul_overflow(w->rowbytes, t, &rowsz)) {
      snprintf(msg, len, "image is too large for this machine");
      rc = ES_ERR_NOMEM;
      goto fail;
    }
    w->tilebytes = t * t * w->bpp;
    w->rows = malloc(rowsz);
    w->tile = calloc(1, w->tilebytes);
    if (!w->rows || !w->tile) {
      snprintf(msg, len, "out of memory");
      rc = ES_ERR_NOMEM;
      goto fail;
    }
  }
  rc = es_atomic_open(&w->at, path, overwrite, msg, len);
  if (rc != ES_OK) goto fail;
  if (w->at.stream) {
    snprintf(msg, len, "a TIFF is written to a file, not a pipe or device");
    rc = ES_ERR_OUTPUT;
    goto fail;
  }
  w->fd = fileno(w->at.fp);
  {
    /* Classic TIFF's offsets are 32-bit: BigTIFF where the pixels alone (compression may
     * not shrink them) with a margin for the directories could pass 4 GiB. */
    const uint64_t page = (uint64_t)opts->width * (uint64_t)opts->height * w->bpp;
    const uint64_t total = opts->pages ? page * (uint64_t)opts->pages : UINT64_MAX;
    const int big = opts->bigtiff || total > ((uint64_t)4 << 30) - ((uint64_t)64 << 20);
    if (!(topts = TIFFOpenOptionsAlloc())) {
      snprintf(msg, len, "out of memory");
      rc = ES_ERR_NOMEM;
      goto fail;
    }
    TIFFOpenOptionsSetErrorHandlerExtR(topts, es_tiff_capture, w->err);
    TIFFOpenOptionsSetWarningHandlerExtR(topts, es_tiff_warning, NULL);
    w->tif = TIFFClientOpenExt(w->at.final_path, big ? "w8" : "w", (thandle_t)w, es_tw_read,
                               es_tw_write, es_tw_seek, es_tw_close, es_tw_size, es_tw_map,
                               es_tw_unmap, topts);
    TIFFOpenOptionsFree(topts);
  }
  if (!w->tif) {
    snprintf(msg, len, "cannot write: %s", w->err[0] ? w->err : "libtiff refused");
    rc = ES_ERR_OUTPUT;
    goto fail;
  }
  rc = es_tw_setup_page(w, msg, len);
  if (rc != ES_OK) goto fail;
  *out = w;
  return ES_OK;
fail:
  es_tiff_writer_close(&w, 0, NULL, 0);
  return rc;
}

/* Encodes and writes the tile row held in w->rows (its first `rows` rows are the image's). */
static int es_tw_flush_tiles(es_tiff_writer *w, int rows, char *msg, size_t len) {
  const int t = w->o.tile, ty = ((w->y - 1) / t) * t;
  for (int x0 = 0; x0 < w->o.width; x0 += t) {
    const int cols = w->o.width - x0 < t ? w->o.width - x0 : t;
    const size_t rb = (size_t)cols * w->bpp, tb = (size_t)t * w->bpp;
    if (cols < t || rows < t) memset(w->tile, 0, w->tilebytes); /* the edge: zeros */
    for (int r = 0; r < rows; r++)
      memcpy(w->tile + (size_t)r * tb, w->rows + (size_t)r * w->rowbytes + (size_t)x0 * w->bpp,
             rb);
    const uint32_t idx = TIFFComputeTile(w->tif, (uint32_t)x0, (uint32_t)ty, 0, 0);
    if (TIFFWriteEncodedTile(w->tif, idx, w->tile, (tmsize_t)w->tilebytes) < 0) {
      snprintf(msg, len, "%s", w->err[0] ? w->err : "cannot write a tile");
      return ES_ERR_OUTPUT;
    }
  }
  return ES_OK;
}

int es_tiff_writer_write_rows(es_tiff_writer *w, int y0, int nrows, const void *data,
                              size_t stride, char *msg, size_t len) {
  const int t = w->o.tile;
  if (y0 != w->y || nrows < 0 || nrows > w->o.height - w->y || (nrows && !data) ||
      (nrows > 1 && stride < w->rowbytes)) {
    snprintf(msg, len, "rows %d..%d written out of order (next is row %d)", y0, y0 + nrows - 1,
             w->y);
    return ES_ERR_INTERNAL;
  }
  for (int i = 0; i < nrows; i++) {
    memcpy(w->rows + (size_t)(w->y % t) * w->rowbytes, (const uint8_t *)data + (size_t)i * stride,
           w->rowbytes);
    w->y++;
    if (w->y % t == 0 || w->y == w->o.height) {
      int rc = es_tw_flush_tiles(w, w->y % t ? w->y % t : t, msg, len);
      if (rc != ES_OK) return rc;
    }
  }
  return ES_OK;
}

/* Writes the current page's directory (its rows all given). */
static int es_tw_end_page(es_tiff_writer *w, char *msg, size_t len) {
  if (w->y != w->o.height) {
    snprintf(msg, len, "page %d has %d of its %d rows", w->page, w->y, w->o.height);
    return ES_ERR_INTERNAL;
  }
  if (!TIFFWriteDirectory(w->tif)) {
    snprintf(msg, len, "%s", w->err[0] ? w->err : "cannot write the TIFF directory");
    return ES_ERR_OUTPUT;
  }
  return ES_OK;
}

int es_tiff_writer_next_page(es_tiff_writer *w, char *msg, size_t len) {
  int rc = es_tw_end_page(w, msg, len);
  if (rc != ES_OK) return rc;
  w->page++;
  w->y = 0;
  return es_tw_setup_page(w, msg, len);
}

int es_tiff_writer_close(es_tiff_writer **pw, int commit, char *msg, size_t len) {
  es_tiff_writer *w = pw ? *pw : NULL;
  int rc = ES_OK;
  if (!w) return ES_OK;
  if (commit) {
    rc = es_tw_end_page(w, msg, len);
    if (rc == ES_OK && !TIFFFlush(w->tif)) {
      snprintf(msg, len, "%s", w->err[0] ? w->err : "cannot write the TIFF");
      rc = ES_ERR_OUTPUT;
    }
  }
  if (w->tif) TIFFClose(w->tif); /* flushes nothing more: the directory is written */
  w->tif = NULL;
  if (commit && rc == ES_OK) {
    if (w->err[0]) { /* a write that failed inside libtiff's close */
      snprintf(msg, len, "%s", w->err);
      rc = ES_ERR_OUTPUT;
    } else {
      rc = es_atomic_commit(&w->at, msg, len);
    }
  }
  es_atomic_abort(&w->at);
  es_tiff_geo_free(&w->geo);
  free(w->rows);
  free(w->tile);
  free(w);
  *pw = NULL;
  return rc;
}
