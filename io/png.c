/*
 * png.c - PNG in and out with libpng, and the library versions line (es_io_versions).
 *
 * Reading follows SPEC section 1: every PNG becomes one grey plane of depth 8 (or 16 for
 * 16-bit files). Luma is computed here, Y = (299 R + 587 G + 114 B + 500) / 1000 in the
 * image's own depth, not with png_set_rgb_to_gray (whose fixed-point rounding differs).
 * Input is untrusted: the IHDR dimensions are checked against max_pixels before libpng
 * allocates anything, libpng's own user limits are set too, and every libpng error is
 * caught through setjmp; all memory of a decode is held in one context struct and released
 * on the one exit path.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "es_io.h"
#include "es_luma.h"
#include "es_tiff.h"

#ifdef ES_HAVE_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswscale/swscale.h>
#endif

#define ES_PNG_DEFAULT_MAX_PIXELS ((int64_t)1 << 31)

/* ---------------------------------------------------------------- reading */

/* Everything a decode owns. Lives in the caller of the setjmp function, so its fields keep
 * their values after a longjmp (they are only ever written through a pointer). */
typedef struct es_png_rd {
  png_structp png;
  png_infop info;
  /* source: memory (mem/size/pos) or a FILE (fp), with the first bytes in peek[] */
  const uint8_t *mem;
  size_t size, pos;
  FILE *fp;
  int64_t src_size; /* bytes in the whole source (file or memory), 0 when unknown (a pipe) */
  uint8_t peek[24];
  size_t npeek, peekpos;
  /* results */
  uint8_t *out;        /* grey plane: malloc'd and handed to the caller on success, or the
                        * caller's own memory (dest) */
  es_png_dest_fn dest; /* NULL: out is malloc'd here */
  void *dest_user;
  uint8_t *rows; /* one decoded row, and room for its grey */
  int64_t max_pixels;
  int status;
  char err[200];
  char warn[120]; /* last libpng warning: it names the bad field of an IHDR error */
} es_png_rd;

/* libpng's messages start with a capital ("Not enough image data"); ours do not. Chunk
 * names ("IDAT: CRC error") keep their case. */
static void es_png_set_err(es_png_rd *rd, const char *m) {
  snprintf(rd->err, sizeof rd->err, "%s", m);
  if (isupper((unsigned char)rd->err[0]) && islower((unsigned char)rd->err[1]))
    rd->err[0] = (char)tolower((unsigned char)rd->err[0]);
}

static void es_png_rd_error(png_structp png, png_const_charp m) {
  es_png_rd *rd = png_get_error_ptr(png);
  if (!rd->err[0]) {
    es_png_set_err(rd, m);
    if (rd->warn[0] && strstr(m, "IHDR")) { /* "Invalid IHDR data" alone says too little */
      size_t n = strlen(rd->err);
      snprintf(rd->err + n, sizeof rd->err - n, " (%s)", rd->warn);
    }
  }
  if (!rd->status) rd->status = ES_ERR_INPUT;
  png_longjmp(png, 1);
}

/* Warnings are benign (bad ancillary chunk CRC, extra data): the image is still good. The
 * last one is kept for the message of an error that follows. */
static void es_png_rd_warning(png_structp png, png_const_charp m) {
  es_png_rd *rd = png_get_error_ptr(png);
  snprintf(rd->warn, sizeof rd->warn, "%s", m);
  if (isupper((unsigned char)rd->warn[0]) && islower((unsigned char)rd->warn[1]))
    rd->warn[0] = (char)tolower((unsigned char)rd->warn[0]);
}

static void es_png_rd_read(png_structp png, png_bytep dst, size_t n) {
  es_png_rd *rd = png_get_io_ptr(png);
  if (rd->peekpos < rd->npeek) {
    size_t k = rd->npeek - rd->peekpos;
    if (k > n) k = n;
    memcpy(dst, rd->peek + rd->peekpos, k);
    rd->peekpos += k;
    dst += k;
    n -= k;
  }
  if (!n) return;
  if (rd->fp) {
    size_t got = fread(dst, 1, n, rd->fp);
    if (got == n) return;
    if (ferror(rd->fp)) {
      char m[160];
      snprintf(m, sizeof m, "read error: %s", strerror(errno));
      png_error(png, m);
    }
  } else if (rd->size - rd->pos >= n) {
    memcpy(dst, rd->mem + rd->pos, n);
    rd->pos += n;
    return;
  }
  png_error(png, "truncated");
}

static uint32_t es_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Looks at the signature and the IHDR before libpng sees the file, so a header claiming a
 * huge image is refused with the numbers, before anything is allocated. */
static int es_png_precheck(es_png_rd *rd) {
  if (rd->npeek == 0) {
    es_png_set_err(rd, "empty file");
    return ES_ERR_INPUT;
  }
  size_t sig = rd->npeek < 8 ? rd->npeek : 8;
  if (png_sig_cmp(rd->peek, 0, sig) != 0) {
    es_png_set_err(rd, "not a PNG file");
    return ES_ERR_INPUT;
  }
  if (rd->npeek < 8) {
    es_png_set_err(rd, "truncated");
    return ES_ERR_INPUT;
  }
  if (rd->npeek >= 24 && !memcmp(rd->peek + 12, "IHDR", 4)) {
    uint32_t w = es_be32(rd->peek + 16), h = es_be32(rd->peek + 20);
    if (!w || !h) {
      es_png_set_err(rd, !w ? "image width is zero" : "image height is zero");
      return ES_ERR_INPUT;
    }
    /* Sizes above 2^31 - 1 are libpng's to refuse; below, the product fits in 62 bits. */
    if (w <= PNG_UINT_31_MAX && h <= PNG_UINT_31_MAX) {
      const int64_t px = (int64_t)w * (int64_t)h;
      if (px > rd->max_pixels) {
        snprintf(rd->err, sizeof rd->err,
                 "image is %" PRIu32 " x %" PRIu32 " = %" PRId64
                 " pixels, more than max_pixels %" PRId64,
                 w, h, px, rd->max_pixels);
        return ES_ERR_INPUT;
      }
    }
  }
  return ES_OK; /* anything else wrong in the header is libpng's to report */
}

static int es_png_mul(size_t a, size_t b, size_t *r) { return __builtin_mul_overflow(a, b, r); }

/* Converts one decoded row (channels ch of depth 8 or 16, big-endian) to grey. */
static void es_png_row_to_grey(const uint8_t *src, int ch, int depth, int width, void *dst) {
  if (depth == 8) {
    uint8_t *d = dst;
    if (ch <= 2) {
      for (int x = 0; x < width; x++)
        d[x] = src[(size_t)x * ch];
    } else {
      for (int x = 0; x < width; x++) {
        const uint8_t *p = src + (size_t)x * ch;
        d[x] = (uint8_t)es_luma(p[0], p[1], p[2]);
      }
    }
  } else {
    uint16_t *d = dst;
    if (ch <= 2) {
      for (int x = 0; x < width; x++) {
        const uint8_t *p = src + (size_t)x * ch * 2;
        d[x] = (uint16_t)(p[0] << 8 | p[1]);
      }
    } else {
      for (int x = 0; x < width; x++) {
        const uint8_t *p = src + (size_t)x * ch * 2;
        uint32_t r = (uint32_t)p[0] << 8 | p[1], g = (uint32_t)p[2] << 8 | p[3],
                 b = (uint32_t)p[4] << 8 | p[5];
        d[x] = (uint16_t)es_luma(r, g, b);
      }
    }
  }
}

/* The libpng part. Only rd's fields are written after setjmp (no locals are read after a
 * longjmp), which is what makes the error path well defined. */
static int es_png_decode(es_png_rd *rd, es_image *img, es_png_info *pinfo) {
  if (setjmp(png_jmpbuf(rd->png))) return rd->status ? rd->status : ES_ERR_INPUT;

  /* libpng's own limits as a second line: no dimension above max_pixels, and bounded
   * ancillary chunks (its defaults). */
  int64_t lim = rd->max_pixels < PNG_UINT_31_MAX ? rd->max_pixels : PNG_UINT_31_MAX;
  png_set_user_limits(rd->png, (png_uint_32)lim, (png_uint_32)lim);
#ifdef PNG_HANDLE_AS_UNKNOWN_SUPPORTED
  /* Ancillary chunks other than tRNS are skipped unread: their data is never needed, and
   * libpng allocates a text or profile chunk's whole claimed length before reading it (a
   * 487-byte file with a tEXt length of 2^31 - 1 took 2.4 GB and 6 s to be "truncated"). */
  png_set_keep_unknown_chunks(rd->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
#endif
  png_set_read_fn(rd->png, rd, es_png_rd_read);
  png_read_info(rd->png, rd->info);

  png_uint_32 w = 0, h = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(rd->png, rd->info, &w, &h, &bit_depth, &color_type, &interlace, NULL, NULL);
  if ((int64_t)w * (int64_t)h > rd->max_pixels) { /* IHDR was not first: checked here too */
    snprintf(rd->err, sizeof rd->err,
             "image is %" PRIu32 " x %" PRIu32 " = %" PRId64
             " pixels, more than max_pixels %" PRId64,
             (uint32_t)w, (uint32_t)h, (int64_t)w * (int64_t)h, rd->max_pixels);
    return ES_ERR_INPUT;
  }
  /* Deflate expands at most 1032:1, so a source of S bytes holds at most ~1032 S bytes of
   * scanlines: a header claiming more is a cut or corrupt file, refused before libpng (whose
   * row buffers alone are two rows, one zeroed) or this reader allocates for it. A 111-byte
   * file claiming 2147483647 x 1 at 16-bit grey+alpha asked for 3 x 8.6 GB. */
  const uint64_t min_raw =
      (uint64_t)h * ((uint64_t)w * png_get_channels(rd->png, rd->info) * (uint64_t)bit_depth / 8);
  if (rd->src_size > 0 && min_raw / 1032 > (uint64_t)rd->src_size + 1024) {
    snprintf(rd->err, sizeof rd->err,
             "truncated: a %" PRIu32 " x %" PRIu32 " image cannot be in %" PRId64 " bytes",
             (uint32_t)w, (uint32_t)h, rd->src_size);
    return ES_ERR_INPUT;
  }
  if (pinfo) {
    pinfo->width = (int)w;
    pinfo->height = (int)h;
    pinfo->bit_depth = bit_depth;
    pinfo->color_type = color_type;
    pinfo->interlaced = interlace != PNG_INTERLACE_NONE;
  }

  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(rd->png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(rd->png);
  /* No png_set_interlace_handling: an Adam7 image is read as its seven reduced images, each
   * row converted to grey and scattered to its place, so an interlaced file needs no more
   * memory than a plain one (the grey plane and one decoded row). */
  png_read_update_info(rd->png, rd->info);

  int ch = png_get_channels(rd->png, rd->info);
  int depth = png_get_bit_depth(rd->png, rd->info);
  size_t rowbytes = png_get_rowbytes(rd->png, rd->info);
  if ((depth != 8 && depth != 16) || ch < 1 || ch > 4) {
    snprintf(rd->err, sizeof rd->err, "unsupported PNG (depth %d, %d channels)", depth, ch);
    return ES_ERR_INPUT;
  }
  size_t bps = (size_t)depth / 8, stride, outsize;
  if (es_png_mul(w, bps, &stride) || es_png_mul(stride, h, &outsize)) {
    snprintf(rd->err, sizeof rd->err, "image is too large for this machine");
    return ES_ERR_INPUT;
  }
  if (rd->dest) {
    void *dst = NULL;
    size_t dst_stride = 0;
    int rc =
        rd->dest(rd->dest_user, (int)w, (int)h, depth, &dst, &dst_stride, rd->err, sizeof rd->err);
    if (rc != ES_OK) return rc;
    if (!dst || dst_stride < stride) {
      snprintf(rd->err, sizeof rd->err, "no room for a %" PRIu32 " x %" PRIu32 " image",
               (uint32_t)w, (uint32_t)h);
      return ES_ERR_INTERNAL;
    }
    rd->out = dst;
    stride = dst_stride;
  } else {
    rd->out = malloc(outsize ? outsize : 1);
  }
  /* a decoded row, then (interlaced) its grey before the scatter */
  rd->rows = malloc(rowbytes + stride + 1);
  if (!rd->out || !rd->rows) {
    snprintf(rd->err, sizeof rd->err, "out of memory for a %" PRIu32 " x %" PRIu32 " image",
             (uint32_t)w, (uint32_t)h);
    return ES_ERR_NOMEM;
  }
  if (interlace == PNG_INTERLACE_NONE) {
    for (png_uint_32 y = 0; y < h; y++) {
      png_read_row(rd->png, rd->rows, NULL);
      es_png_row_to_grey(rd->rows, ch, depth, (int)w, rd->out + (size_t)y * stride);
    }
  } else {
    uint8_t *grey = rd->rows + rowbytes;
    /* libpng skips the passes that are empty for this size, exactly as this loop does */
    for (int pass = 0; pass < 7; pass++) {
      png_uint_32 cols = PNG_PASS_COLS(w, pass), nrows = PNG_PASS_ROWS(h, pass);
      if (!cols || !nrows) continue;
      for (png_uint_32 j = 0; j < nrows; j++) {
        png_read_row(rd->png, rd->rows, NULL);
        es_png_row_to_grey(rd->rows, ch, depth, (int)cols, grey);
        size_t y = PNG_ROW_FROM_PASS_ROW(j, pass);
        uint8_t *dst = rd->out + y * stride;
        if (depth == 8) {
          for (png_uint_32 k = 0; k < cols; k++)
            dst[PNG_COL_FROM_PASS_COL(k, pass)] = grey[k];
        } else {
          /* the destination's stride may leave its rows unaligned */
          for (png_uint_32 k = 0; k < cols; k++)
            memcpy(dst + 2 * (size_t)PNG_COL_FROM_PASS_COL(k, pass), grey + 2 * (size_t)k, 2);
        }
      }
    }
  }
  /* Reads to IEND: a file cut after the image data, or a bad CRC in the last IDAT, is an
   * error too, as for any other truncation. */
  png_read_end(rd->png, NULL);

  img->data = rd->out;
  img->width = (int)w;
  img->height = (int)h;
  img->stride = stride;
  img->depth = depth;
  return ES_OK;
}

/* Shared by the file and memory readers: rd has its source and peek[] filled. */
static int es_png_read_rd(es_png_rd *rd, int64_t max_pixels, es_image *img, void **data,
                          es_png_info *info, char *msg, size_t len) {
  int status;
  rd->max_pixels = max_pixels > 0 ? max_pixels : ES_PNG_DEFAULT_MAX_PIXELS;
  status = es_png_precheck(rd);
  if (status) goto end;
  rd->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, rd, es_png_rd_error, es_png_rd_warning);
  if (rd->png) rd->info = png_create_info_struct(rd->png);
  if (!rd->png || !rd->info) {
    status = ES_ERR_NOMEM;
    snprintf(rd->err, sizeof rd->err, "out of memory");
    goto end;
  }
  status = es_png_decode(rd, img, info);
end:
  if (rd->png) png_destroy_read_struct(&rd->png, rd->info ? &rd->info : NULL, NULL);
  free(rd->rows);
  if (status == ES_OK) {
    if (data) *data = rd->out;
  } else {
    if (!rd->dest) free(rd->out);
    if (data) *data = NULL;
    memset(img, 0, sizeof *img);
    snprintf(msg, len, "%s", rd->err[0] ? rd->err : "cannot decode");
  }
  return status;
}

int es_png_read_mem(const void *buf, size_t size, int64_t max_pixels, es_image *img, void **data,
                    es_png_info *info, char *msg, size_t len) {
  es_png_rd rd;
  memset(&rd, 0, sizeof rd);
  rd.mem = buf;
  rd.size = buf ? size : 0;
  rd.src_size = (int64_t)rd.size;
  rd.npeek = rd.size < sizeof rd.peek ? rd.size : sizeof rd.peek;
  if (rd.npeek) memcpy(rd.peek, buf, rd.npeek);
  rd.pos = rd.npeek;
  return es_png_read_rd(&rd, max_pixels, img, data, info, msg, len);
}

/* A file into malloc'd memory (dest NULL, *data set) or into dest's. */
static int es_png_read_file(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                            es_image *img, void **data, es_png_info *info, char *msg, size_t len) {
  es_png_rd rd;
  struct stat st;
  int status;
  memset(&rd, 0, sizeof rd);
  rd.dest = dest;
  rd.dest_user = user;
  rd.fp = fopen(path, "rb");
  if (!rd.fp) {
    snprintf(msg, len, "cannot open: %s", strerror(errno));
    return ES_ERR_INPUT;
  }
  const int have_st = fstat(fileno(rd.fp), &st) == 0;
  if (have_st && S_ISDIR(st.st_mode)) {
    snprintf(msg, len, "is a directory");
    status = ES_ERR_INPUT;
    goto end;
  }
  if (have_st && S_ISREG(st.st_mode)) rd.src_size = (int64_t)st.st_size;
  rd.npeek = fread(rd.peek, 1, sizeof rd.peek, rd.fp);
  if (rd.npeek < sizeof rd.peek && ferror(rd.fp)) {
    snprintf(msg, len, "read error: %s", strerror(errno));
    status = ES_ERR_INPUT;
    goto end;
  }
  status = es_png_read_rd(&rd, max_pixels, img, data, info, msg, len);
end:
  fclose(rd.fp);
  if (status && data) *data = NULL;
  return status;
}

int es_png_read(const char *path, int64_t max_pixels, es_image *img, void **data, es_png_info *info,
                char *msg, size_t len) {
  return es_png_read_file(path, max_pixels, NULL, NULL, img, data, info, msg, len);
}

int es_png_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                   es_image *img, es_png_info *info, char *msg, size_t len) {
  if (!dest) {
    snprintf(msg, len, "no destination");
    return ES_ERR_USAGE;
  }
  return es_png_read_file(path, max_pixels, dest, user, img, NULL, info, msg, len);
}

/* ---------------------------------------------------------------- writing */

typedef struct es_png_wr {
  png_structp png;
  png_infop info;
  es_atomic at;
  uint8_t *row; /* 16-bit rows converted to big-endian */
  char err[200];
} es_png_wr;

static void es_png_wr_error(png_structp png, png_const_charp m) {
  es_png_wr *wr = png_get_error_ptr(png);
  if (!wr->err[0]) snprintf(wr->err, sizeof wr->err, "cannot write PNG: %s", m);
  png_longjmp(png, 1);
}

static void es_png_wr_warning(png_structp png, png_const_charp m) {
  (void)png;
  (void)m;
}

static void es_png_wr_write(png_structp png, png_bytep src, size_t n) {
  es_png_wr *wr = png_get_io_ptr(png);
  if (fwrite(src, 1, n, wr->at.fp) != n) {
    snprintf(wr->err, sizeof wr->err, "cannot write: %s", strerror(errno));
    png_error(png, wr->err);
  }
}

static void es_png_wr_flush(png_structp png) { (void)png; }

static int es_png_encode(es_png_wr *wr, int width, int height, int pixfmt, const uint8_t *data,
                         size_t stride) {
  if (setjmp(png_jmpbuf(wr->png))) return ES_ERR_OUTPUT;
  int ctype = pixfmt == ES_PIX_RGB24 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
  int depth = pixfmt == ES_PIX_GRAY16 ? 16 : 8;
  png_set_write_fn(wr->png, wr, es_png_wr_write, es_png_wr_flush);
  /* Measured on a 4096 x 4096 entropy map (a mosaic of scikit-image photographs):
   * a heat map holds at most 256 distinct RGB triples, which zlib matches best unfiltered:
   * level 2, no filter: 0.7 s, 17.4 MB, against libpng's default (level 6, adaptive
   * filters) 2.7 s, 24.4 MB. Grey maps are smooth ramps where Paeth wins: level 2, Paeth:
   * 0.43 s, 9.6 MB (no filter: 11.0 MB). */
  png_set_compression_level(wr->png, 2);
  png_set_filter(wr->png, PNG_FILTER_TYPE_BASE,
                 pixfmt == ES_PIX_RGB24 ? PNG_FILTER_NONE : PNG_FILTER_PAETH);
  png_set_IHDR(wr->png, wr->info, (png_uint_32)width, (png_uint_32)height, depth, ctype,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(wr->png, wr->info);
  for (int y = 0; y < height; y++) {
    const uint8_t *src = data + (size_t)y * stride;
    if (depth == 16) {
      for (int x = 0; x < width; x++) { /* PNG stores 16-bit samples big-endian */
        uint16_t s;                     /* rows may be unaligned (the caller's stride) */
        memcpy(&s, src + 2 * (size_t)x, 2);
        wr->row[2 * x] = (uint8_t)(s >> 8);
        wr->row[2 * x + 1] = (uint8_t)s;
      }
      png_write_row(wr->png, wr->row);
    } else {
      png_write_row(wr->png, (png_bytep)src);
    }
  }
  png_write_end(wr->png, NULL);
  return ES_OK;
}

int es_png_write(const char *path, int overwrite, int width, int height, int pixfmt,
                 const uint8_t *data, size_t stride, char *msg, size_t len) {
  es_png_wr wr;
  int status;
  memset(&wr, 0, sizeof wr);
  if (pixfmt != ES_PIX_RGB24 && pixfmt != ES_PIX_GRAY8 && pixfmt != ES_PIX_GRAY16) {
    snprintf(msg, len, "PNG output needs RGB24, GRAY8 or GRAY16 pixels (got format %d)", pixfmt);
    return ES_ERR_INTERNAL;
  }
  if (width <= 0 || height <= 0 || (uint64_t)width > PNG_UINT_31_MAX || !data) {
    snprintf(msg, len, "cannot write an empty %d x %d image", width, height);
    return ES_ERR_INTERNAL;
  }
  size_t bpp = pixfmt == ES_PIX_RGB24 ? 3 : pixfmt == ES_PIX_GRAY16 ? 2 : 1;
  if (!stride) stride = bpp * (size_t)width;
  status = es_atomic_open(&wr.at, path, overwrite, msg, len);
  if (status) return status;
  if (pixfmt == ES_PIX_GRAY16 && !(wr.row = malloc((size_t)width * 2))) {
    status = ES_ERR_NOMEM;
    snprintf(wr.err, sizeof wr.err, "out of memory");
    goto end;
  }
  wr.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &wr, es_png_wr_error, es_png_wr_warning);
  if (wr.png) wr.info = png_create_info_struct(wr.png);
  if (!wr.png || !wr.info) {
    status = ES_ERR_NOMEM;
    snprintf(wr.err, sizeof wr.err, "out of memory");
    goto end;
  }
  status = es_png_encode(&wr, width, height, pixfmt, data, stride);
end:
  if (wr.png) png_destroy_write_struct(&wr.png, wr.info ? &wr.info : NULL);
  free(wr.row);
  if (status == ES_OK) return es_atomic_commit(&wr.at, msg, len);
  es_atomic_abort(&wr.at);
  snprintf(msg, len, "%s", wr.err[0] ? wr.err : "cannot write PNG");
  return status;
}

/* ---------------------------------------------------------------- versions */

int es_io_versions(char *buf, size_t len) {
  char tiff[64];
  es_tiff_version(tiff, sizeof tiff);
  int n = snprintf(buf, len, "libpng %s (built with %s), zlib %s, %s, %s",
                   png_get_libpng_ver(NULL), PNG_LIBPNG_VER_STRING, zlibVersion(),
                   es_jpeg_version(), tiff);
#ifdef ES_HAVE_FFMPEG
  /* run-time versions; the compile-time one follows where it differs (a library upgraded
   * under the binary) */
  static const struct {
    const char *name;
    unsigned (*run)(void);
    unsigned built;
  } libs[] = {{"libavformat", avformat_version, LIBAVFORMAT_VERSION_INT},
              {"libavcodec", avcodec_version, LIBAVCODEC_VERSION_INT},
              {"libswscale", swscale_version, LIBSWSCALE_VERSION_INT},
              {"libavutil", avutil_version, LIBAVUTIL_VERSION_INT}};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    unsigned v = libs[i].run(), bv = libs[i].built;
    size_t used = n > 0 && (size_t)n < len ? (size_t)n : len;
    if (i == 0) {
      n += snprintf(buf ? buf + used : NULL, len - used, "; FFmpeg %s: ", av_version_info());
      used = n > 0 && (size_t)n < len ? (size_t)n : len;
    }
    n += snprintf(buf ? buf + used : NULL, len - used, "%s%s %u.%u.%u", i ? ", " : "", libs[i].name,
                  v >> 16, v >> 8 & 255, v & 255);
    if (v != bv) {
      used = n > 0 && (size_t)n < len ? (size_t)n : len;
      n += snprintf(buf ? buf + used : NULL, len - used, " (built with %u.%u.%u)", bv >> 16,
                    bv >> 8 & 255, bv & 255);
    }
  }
#else
  size_t used = n > 0 && (size_t)n < len ? (size_t)n : len;
  n += snprintf(buf ? buf + used : NULL, len - used, "; FFmpeg: not built");
#endif
  return n;
}
