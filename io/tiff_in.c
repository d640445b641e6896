/*
 * tiff_in.c - TIFF in with libtiff: any row range of a page as grey (es_tiff.h).
 *
 * A page is read block by block (a strip, or a row of tiles), each block decoded by libtiff
 * (TIFFReadEncodedStrip/Tile, so every codec libtiff was built with: none, LZW, deflate,
 * zstd, JPEG, PackBits, ...) and converted row by row to grey: 8/16-bit grey as stored,
 * 1/2/4-bit grey scaled to 8 bits as PNG's are, palette and RGB(A) to luma by SPEC's rule
 * (es_luma.h, the PNG reader's), float32 as stored, one sample of a band stack. The last
 * block decoded of each plane is kept, so a caller reading bands in order (issue 30) decodes
 * each block once and holds one block row, never the page.
 *
 * Input is untrusted: a page's header is checked (sizes against max_pixels, overflow, the
 * sample format, blocks no larger than the image) before anything is allocated for it, and
 * libtiff's own allocations are capped (TIFFOpenOptionsSetMaxSingleMemAlloc). libtiff's
 * errors and warnings go to this reader's handlers (TIFFOpenOptions, libtiff 4.5), never to
 * stderr: the first error is the message of the call that failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include "es_luma.h"
#include "es_tiff.h"
#include "es_tiff_internal.h"

#define ES_TIFF_DEFAULT_MAX_PIXELS ((int64_t)1 << 31)

enum { KIND_GREY, KIND_PALETTE, KIND_RGB, KIND_BANDS };

struct es_tiff {
  TIFF *tif;
  int64_t max_pixels;
  int page;          /* current page, -1: none */
  es_tiff_info info; /* of the current page */
  int kind;          /* KIND_* */
  int sample0;       /* grey: which sample of a contig pixel is the grey (0) */
  int invert;        /* min-is-white */
  uint8_t pal[256];  /* palette index -> luma, 8-bit */
  /* The decoded block of each plane read: a strip, or a row of tiles (tile k at k * bsize).
   * Planes: 1 for contig data, else the planes the page's kind reads (RGB: 3). */
  uint8_t *buf[3];
  int64_t cached[3];  /* block row held in buf[i] (strip row or tile row), -1: none */
  size_t bsize;       /* bytes of one strip or one tile, as decoded */
  size_t browbytes;   /* bytes of one row of a strip or tile (one plane) */
  int nblocks_across; /* tiles across (1 for strips) */
  char err[256];      /* libtiff's first error since it was cleared */
};

/* libtiff's messages start with a capital ("Read error ..."); ours do not. */
static void es_tiff_lower(char *s) {
  if (s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'a' && s[1] <= 'z') s[0] = (char)(s[0] - 'A' + 'a');
}

int es_tiff_capture(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  char *err = user;
  (void)module; /* names libtiff's function, which tells a user nothing */
  if (err && !err[0]) {
    const char *name = tif ? TIFFFileName(tif) : NULL;
    size_t n = name ? strlen(name) : 0;
    vsnprintf(err, ES_TIFF_ERR_LEN, fmt, ap);
    /* "a.tif: Can not read TIFF directory": the caller names the file */
    if (n && !strncmp(err, name, n) && err[n] == ':' && err[n + 1] == ' ')
      memmove(err, err + n + 2, strlen(err + n + 2) + 1);
    es_tiff_lower(err);
    for (char *p = err; *p; p++) /* one line */
      if (*p == '\n' || *p == '\r') *p = ' ';
  }
  return 1; /* handled: libtiff's global handler (stderr) is not called */
}

int es_tiff_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
  (void)tif;
  (void)user;
  (void)module;
  (void)fmt;
  (void)ap;
  return 1; /* benign (an unknown tag, an odd field): the image is still read */
}

int es_path_is_tiff(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  if (!dot || strchr(dot, '/')) return 0;
  return !strcasecmp(dot, ".tif") || !strcasecmp(dot, ".tiff");
}

int es_tiff_magic(const void *buf, size_t n) {
  const uint8_t *p = buf;
  if (n < 4) return 0;
  return (p[0] == 'I' && p[1] == 'I' && (p[2] == 42 || p[2] == 43) && p[3] == 0) ||
         (p[0] == 'M' && p[1] == 'M' && p[2] == 0 && (p[3] == 42 || p[3] == 43));
}

static const char *es_tiff_format_name(int fmt) {
  switch (fmt) {
  case SAMPLEFORMAT_INT: return "signed integer";
  case SAMPLEFORMAT_IEEEFP: return "float";
  case SAMPLEFORMAT_VOID: return "untyped";
  case SAMPLEFORMAT_COMPLEXINT: return "complex integer";
  case SAMPLEFORMAT_COMPLEXIEEEFP: return "complex float";
  default: return "unsigned integer";
  }
}

/* A page's header fields as libtiff gives them (defaults filled in), before they are taken. */
typedef struct es_tiff_header {
  uint32_t w, h;
  uint16_t spp, bits, fmt, photo, planar, comp, nextra;
  uint16_t *extra;
} es_tiff_header;

/* Reads the current directory's header into hd and t->info; its size checked first. */
static int es_tiff_page_header(es_tiff *t, es_tiff_header *hd, char *msg, size_t len) {
  TIFF *tif = t->tif;
  es_tiff_info *in = &t->info;
  uint32_t w = 0, h = 0;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h)) {
    snprintf(msg, len, "no image size in the header");
    return ES_ERR_INPUT;
  }
  if (!w || !h) {
    snprintf(msg, len, !w ? "image width is zero" : "image height is zero");
    return ES_ERR_INPUT;
  }
  if ((int64_t)w * h > t->max_pixels || w > INT32_MAX || h > INT32_MAX) {
    snprintf(msg, len,
             "image is %" PRIu32 " x %" PRIu32 " = %" PRId64 " pixels, more than max_pixels %" PRId64,
             w, h, (int64_t)w * h, t->max_pixels);
    return ES_ERR_INPUT;
  }
  hd->w = w;
  hd->h = h;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &hd->spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &hd->bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &hd->fmt);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &hd->planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &hd->comp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &hd->nextra, &hd->extra);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &hd->photo)) /* absent: grey, or RGB by its samples */
    hd->photo = hd->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  in->width = (int)w;
  in->height = (int)h;
  in->samples = hd->spp;
  in->bits = hd->bits;
  in->sample_format = hd->fmt == SAMPLEFORMAT_IEEEFP ? ES_TIFF_FLOAT : ES_TIFF_UINT;
  in->photometric = hd->photo;
  in->planar = hd->planar;
  in->compression = hd->comp;
  in->tiled = TIFFIsTiled(tif) ? 1 : 0;
  in->bigtiff = TIFFIsBigTIFF(tif) ? 1 : 0;
  in->has_geo = es_tiff_geo_present(tif);
  in->bands = 1;
  return ES_OK;
}

/* A palette page: its colormap made the luma of each index (t->pal). */
static int es_tiff_page_palette(es_tiff *t, const es_tiff_header *hd, char *msg, size_t len) {
  uint16_t *r, *g, *b;
  if (hd->spp != 1 || hd->bits > 8 || hd->fmt != SAMPLEFORMAT_UINT) {
    snprintf(msg, len, "unsupported palette image (%u samples of %u bits)", hd->spp, hd->bits);
    return ES_ERR_INPUT;
  }
  if (!TIFFGetField(t->tif, TIFFTAG_COLORMAP, &r, &g, &b)) {
    snprintf(msg, len, "palette image without a colormap");
    return ES_ERR_INPUT;
  }
  /* TIFF colormaps are 16-bit; a few old writers stored 8-bit values, which libtiff's
   * own RGBA reader recognises by every entry being below 256 (as here). */
  const int n = 1 << hd->bits;
  int eight = 1;
  for (int i = 0; i < n; i++)
    if (r[i] >= 256 || g[i] >= 256 || b[i] >= 256) eight = 0;
  for (int i = 0; i < 256; i++) {
    int k = i < n ? i : n - 1;
    uint32_t R = eight ? r[k] : r[k] >> 8, G = eight ? g[k] : g[k] >> 8,
             B = eight ? b[k] : b[k] >> 8;
    t->pal[i] = (uint8_t)es_luma(R, G, B);
  }
  t->kind = KIND_PALETTE;
  return ES_OK;
}

/* Which of the layouts this reader takes the page is (t->kind, t->invert), or why none. */
static int es_tiff_page_kind(es_tiff *t, const es_tiff_header *hd, char *msg, size_t len) {
  es_tiff_info *in = &t->info;
  const uint16_t spp = hd->spp, bits = hd->bits, fmt = hd->fmt, planar = hd->planar;
  if (spp < 1 || (planar != PLANARCONFIG_CONTIG && planar != PLANARCONFIG_SEPARATE)) {
    snprintf(msg, len, "unsupported layout (%u samples, planar configuration %u)", spp, planar);
    return ES_ERR_INPUT;
  }
  /* The sample formats taken: unsigned 1..16 bits, float 32 bits. */
  if (fmt == SAMPLEFORMAT_IEEEFP ? bits != 32
                                 : fmt != SAMPLEFORMAT_UINT ||
                                       (bits != 1 && bits != 2 && bits != 4 && bits != 8 &&
                                        bits != 16)) {
    snprintf(msg, len, "unsupported sample format: %u-bit %s", bits, es_tiff_format_name(fmt));
    return ES_ERR_INPUT;
  }
  t->invert = 0;
  t->sample0 = 0;
  switch (hd->photo) {
  case PHOTOMETRIC_MINISWHITE:
  case PHOTOMETRIC_MINISBLACK:
    /* grey + alpha is grey (PNG's rule); other extra samples make a band stack */
    if (spp == 1 ||
        (spp == 2 && hd->nextra == 1 && hd->extra &&
         (hd->extra[0] == EXTRASAMPLE_ASSOCALPHA || hd->extra[0] == EXTRASAMPLE_UNASSALPHA))) {
      t->kind = KIND_GREY;
    } else {
      t->kind = KIND_BANDS;
      in->bands = spp;
    }
    if (bits < 8 && spp != 1) {
      snprintf(msg, len, "unsupported: %u samples of %u bits", spp, bits);
      return ES_ERR_INPUT;
    }
    t->invert = hd->photo == PHOTOMETRIC_MINISWHITE && fmt != SAMPLEFORMAT_IEEEFP;
    break;
  case PHOTOMETRIC_PALETTE: return es_tiff_page_palette(t, hd, msg, len);
  case PHOTOMETRIC_YCBCR:
    if (hd->comp != COMPRESSION_JPEG) {
      snprintf(msg, len, "unsupported: YCbCr samples not JPEG-compressed");
      return ES_ERR_INPUT;
    }
    /* libjpeg converts to RGB as it decodes; strip and tile sizes follow */
    TIFFSetField(t->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    if (spp != 3 || planar != PLANARCONFIG_CONTIG) {
      snprintf(msg, len, "unsupported YCbCr layout (%u samples)", spp);
      return ES_ERR_INPUT;
    }
    /* fall through */
  case PHOTOMETRIC_RGB:
    if (spp < 3 || (bits != 8 && bits != 16) || fmt != SAMPLEFORMAT_UINT) {
      snprintf(msg, len, "unsupported RGB image (%u samples of %u bits %s)", spp, bits,
               es_tiff_format_name(fmt));
      return ES_ERR_INPUT;
    }
    t->kind = KIND_RGB;
    break;
  case PHOTOMETRIC_SEPARATED:
    snprintf(msg, len, "unsupported photometric interpretation: CMYK");
    return ES_ERR_INPUT;
  default:
    snprintf(msg, len, "unsupported photometric interpretation %u", hd->photo);
    return ES_ERR_INPUT;
  }
  return ES_OK;
}

/* Blocks: no larger than the image (tiles round it up to their size): a header with a
 * 2^31-row strip or a 65536^2 tile over a small image must not allocate for it. */
static int es_tiff_page_blocks(es_tiff *t, const es_tiff_header *hd, char *msg, size_t len) {
  TIFF *tif = t->tif;
  es_tiff_info *in = &t->info;
  const uint32_t w = hd->w, h = hd->h;
  uint32_t bw = 0, bh = 0;
  if (in->tiled) {
    if (!TIFFGetField(tif, TIFFTAG_TILEWIDTH, &bw) || !TIFFGetField(tif, TIFFTAG_TILELENGTH, &bh) ||
        !bw || !bh) {
      snprintf(msg, len, "tiled image without a tile size");
      return ES_ERR_INPUT;
    }
    /* (a tile of up to 2^20 pixels is always taken: a small image in 256^2 tiles is common) */
    if (((uint64_t)bw * bh > 4 * ((uint64_t)w + 16) * ((uint64_t)h + 16) &&
         (uint64_t)bw * bh > (1u << 20)) ||
        bw > (1u << 24) || bh > (1u << 24)) {
      snprintf(msg, len, "a tile of %" PRIu32 " x %" PRIu32 " is far larger than the image", bw, bh);
      return ES_ERR_INPUT;
    }
    t->bsize = (size_t)TIFFTileSize64(tif);
    t->browbytes = (size_t)TIFFTileRowSize64(tif);
    t->nblocks_across = (int)((w + bw - 1) / bw);
  } else {
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &bh);
    if (bh == 0 || bh > h) bh = h;
    bw = w;
    t->browbytes = (size_t)TIFFScanlineSize64(tif);
    t->bsize = t->browbytes * bh;
    t->nblocks_across = 1;
  }
  if (!t->bsize || !t->browbytes) {
    snprintf(msg, len, "image is too large for this machine");
    return ES_ERR_INPUT;
  }
  in->block_width = (int)bw;
  in->block_height = (int)bh;
  return ES_OK;
}

/* Reads the current directory's header into t->info and checks it; allocates nothing. */
static int es_tiff_page_check(es_tiff *t, char *msg, size_t len) {
  es_tiff_info *in = &t->info;
  es_tiff_header hd = {0,
                       0,
                       1,
                       1,
                       SAMPLEFORMAT_UINT,
                       PHOTOMETRIC_MINISBLACK,
                       PLANARCONFIG_CONTIG,
                       COMPRESSION_NONE,
                       0,
                       NULL};
  int pages = in->pages, rc;
  memset(in, 0, sizeof *in);
  in->pages = pages;
  if ((rc = es_tiff_page_header(t, &hd, msg, len)) != ES_OK) return rc;
  if ((rc = es_tiff_page_kind(t, &hd, msg, len)) != ES_OK) return rc;
  in->depth = hd.fmt == SAMPLEFORMAT_IEEEFP ? 32 : hd.bits == 16 ? 16 : 8;
  return es_tiff_page_blocks(t, &hd, msg, len);
}

static void es_tiff_drop_blocks(es_tiff *t) {
  for (int i = 0; i < 3; i++) {
    free(t->buf[i]);
    t->buf[i] = NULL;
    t->cached[i] = -1;
  }
}

int es_tiff_set_page(es_tiff *t, int page, es_tiff_info *info, char *msg, size_t len) {
  int rc;
  es_tiff_drop_blocks(t);
  t->page = -1;
  if (page < 0 || page >= t->info.pages) {
    snprintf(msg, len, "no page %d (the file has %d)", page, t->info.pages);
    return ES_ERR_USAGE;
  }
  t->err[0] = 0;
  if (!TIFFSetDirectory(t->tif, (tdir_t)page)) {
    snprintf(msg, len, "page %d: %s", page, t->err[0] ? t->err : "cannot read its header");
    return ES_ERR_INPUT;
  }
  rc = es_tiff_page_check(t, msg, len);
  if (rc != ES_OK) return rc;
  t->page = page;
  if (info) *info = t->info;
  return ES_OK;
}

void es_tiff_info_of(const es_tiff *t, es_tiff_info *info) { *info = t->info; }

int es_tiff_open(const char *path, int64_t max_pixels, es_tiff **out, es_tiff_info *info,
                 char *msg, size_t len) {
  es_tiff *t = NULL;
  TIFFOpenOptions *opts = NULL;
  struct stat st;
  uint8_t head[8];
  ssize_t got;
  int fd = -1, rc = ES_ERR_INPUT;
  *out = NULL;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(msg, len, "cannot open: %s", strerror(errno));
    return ES_ERR_INPUT;
  }
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(msg, len, "is a directory");
    goto end;
  }
  got = pread(fd, head, sizeof head, 0);
  if (got < 0) {
    snprintf(msg, len, "read error: %s", strerror(errno));
    goto end;
  }
  if (got == 0) {
    snprintf(msg, len, "empty file");
    goto end;
  }
  if (!es_tiff_magic(head, (size_t)got)) {
    snprintf(msg, len, got < 4 ? "truncated" : "not a TIFF file");
    goto end;
  }
  if (got < 8) {
    snprintf(msg, len, "truncated");
    goto end;
  }
  es_tiff_geo_register(); /* before libtiff reads a directory */
  t = calloc(1, sizeof *t);
  opts = TIFFOpenOptionsAlloc();
  if (!t || !opts) {
    snprintf(msg, len, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  t->page = -1;
  t->max_pixels = max_pixels > 0 ? max_pixels : ES_TIFF_DEFAULT_MAX_PIXELS;
  for (int i = 0; i < 3; i++) t->cached[i] = -1;
  TIFFOpenOptionsSetErrorHandlerExtR(opts, es_tiff_capture, t->err);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, es_tiff_warning, NULL);
  /* libtiff's own buffers (a strip's compressed bytes, directory arrays): no single one
   * above what the largest page allowed could need, however its header lies. */
  {
    int64_t cap = t->max_pixels * 16 + ((int64_t)64 << 20);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, cap > 0 ? (tmsize_t)cap : (tmsize_t)INT64_MAX);
  }
  t->tif = TIFFFdOpenExt(fd, path, "rm", opts); /* no mmap: a file cut while read is EIO */
  if (!t->tif) {
    snprintf(msg, len, "%s", t->err[0] ? t->err : "cannot read the TIFF header");
    goto end;
  }
  fd = -1; /* TIFFClose closes it */
  {
    tdir_t n = TIFFNumberOfDirectories(t->tif);
    t->info.pages = n > INT32_MAX ? INT32_MAX : (int)n;
  }
  if (t->info.pages < 1) t->info.pages = 1;
  rc = es_tiff_set_page(t, 0, info, msg, len);
  if (rc == ES_ERR_USAGE) rc = ES_ERR_INPUT;
end:
  if (opts) TIFFOpenOptionsFree(opts);
  if (fd >= 0) close(fd);
  if (rc != ES_OK) {
    es_tiff_close(&t);
    return rc;
  }
  *out = t;
  return ES_OK;
}

void es_tiff_close(es_tiff **pt) {
  es_tiff *t = pt ? *pt : NULL;
  if (!t) return;
  es_tiff_drop_blocks(t);
  if (t->tif) TIFFClose(t->tif);
  free(t);
  *pt = NULL;
}

/* The block row (strip or tile row) brow of plane, decoded into slot. */
static int es_tiff_load(es_tiff *t, int slot, int plane, int64_t brow, char *msg, size_t len) {
  if (t->cached[slot] == brow) return ES_OK;
  t->cached[slot] = -1;
  if (!t->buf[slot]) {
    size_t n;
    if (__builtin_mul_overflow(t->bsize, (size_t)t->nblocks_across, &n)) {
      snprintf(msg, len, "image is too large for this machine");
      return ES_ERR_INPUT;
    }
    t->buf[slot] = malloc(n);
    if (!t->buf[slot]) {
      snprintf(msg, len, "out of memory for a block of %zu bytes", n);
      return ES_ERR_NOMEM;
    }
  }
  const es_tiff_info *in = &t->info;
  for (int k = 0; k < t->nblocks_across; k++) {
    tmsize_t r;
    uint32_t idx;
    t->err[0] = 0;
    if (in->tiled) {
      idx = TIFFComputeTile(t->tif, (uint32_t)k * (uint32_t)in->block_width,
                            (uint32_t)(brow * in->block_height), 0, (uint16_t)plane);
      r = TIFFReadEncodedTile(t->tif, idx, t->buf[slot] + (size_t)k * t->bsize,
                              (tmsize_t)t->bsize);
    } else {
      idx = TIFFComputeStrip(t->tif, (uint32_t)(brow * in->block_height), (uint16_t)plane);
      r = TIFFReadEncodedStrip(t->tif, idx, t->buf[slot], (tmsize_t)t->bsize);
    }
    if (r < 0) {
      snprintf(msg, len, "%s %" PRIu32 ": %s", in->tiled ? "tile" : "strip", idx,
               t->err[0] ? t->err : "cannot decode");
      return ES_ERR_INPUT;
    }
    /* A short last strip or a tile cut short leaves the rest of the buffer as it was:
     * libtiff reports real damage as an error above. */
  }
  t->cached[slot] = brow;
  return ES_OK;
}

/* An unsigned sample of 1..16 bits, the i-th of a row. */
static inline uint32_t es_tiff_sample(const uint8_t *row, size_t i, int bits) {
  if (bits == 8) return row[i];
  if (bits == 16) {
    uint16_t v;
    memcpy(&v, row + 2 * i, 2);
    return v;
  }
  size_t bit = i * (size_t)bits;
  return (uint32_t)(row[bit >> 3] >> (8 - bits - (int)(bit & 7))) & ((1u << bits) - 1);
}

/* n pixels of one row segment to grey. src[p]: the segment's first pixel in plane p (contig:
 * src[0], every sample of a pixel together). */
static void es_tiff_convert(const es_tiff *t, const uint8_t *const src[3], int n, int band,
                            void *dst) {
  const es_tiff_info *in = &t->info;
  const int bits = in->bits, contig = in->planar == PLANARCONFIG_CONTIG;
  const size_t step = contig ? (size_t)in->samples : 1; /* samples between pixels */
  switch (t->kind) {
  case KIND_GREY:
  case KIND_BANDS: {
    const size_t off = contig ? (size_t)(t->kind == KIND_BANDS ? band : t->sample0) : 0;
    const uint8_t *s = src[0];
    if (in->depth == 32) {
      float *d = dst;
      for (int x = 0; x < n; x++) memcpy(&d[x], s + 4 * (x * step + off), 4);
    } else if (bits == 16) {
      if (step == 1 && !t->invert) {
        memcpy(dst, s, (size_t)n * 2);
      } else {
        uint8_t *d = dst; /* the caller's stride may leave rows unaligned */
        for (int x = 0; x < n; x++) {
          uint16_t v = (uint16_t)es_tiff_sample(s, x * step + off, 16);
          if (t->invert) v = (uint16_t)(65535 - v);
          memcpy(d + 2 * (size_t)x, &v, 2);
        }
      }
    } else if (bits == 8 && step == 1 && !t->invert) {
      memcpy(dst, s, (size_t)n);
    } else {
      /* 1, 2, 4 bits: v * 255 / (2^bits - 1), libpng's expansion (1-bit: 0 or 255); 8 bits
       * of a band stack or min-is-white come here too (scale 1) */
      uint8_t *d = dst;
      const uint32_t max = (1u << bits) - 1, scale = 255u / max;
      for (int x = 0; x < n; x++) {
        uint32_t v = es_tiff_sample(s, x * step + off, bits);
        if (t->invert) v = max - v;
        d[x] = (uint8_t)(v * scale);
      }
    }
    break;
  }
  case KIND_PALETTE: {
    uint8_t *d = dst;
    for (int x = 0; x < n; x++) d[x] = t->pal[es_tiff_sample(src[0], (size_t)x, bits)];
    break;
  }
  case KIND_RGB: {
    const size_t o1 = contig ? 1 : 0, o2 = contig ? 2 : 0;
    const uint8_t *r = src[0], *g = contig ? src[0] : src[1], *b = contig ? src[0] : src[2];
    if (bits == 8) {
      uint8_t *d = dst;
      for (int x = 0; x < n; x++) {
        size_t i = (size_t)x * step;
        d[x] = (uint8_t)es_luma(r[i], g[i + o1], b[i + o2]);
      }
    } else {
      uint8_t *d = dst;
      for (int x = 0; x < n; x++) {
        size_t i = (size_t)x * step;
        uint16_t v = (uint16_t)es_luma(es_tiff_sample(r, i, 16), es_tiff_sample(g, i + o1, 16),
                                       es_tiff_sample(b, i + o2, 16));
        memcpy(d + 2 * (size_t)x, &v, 2);
      }
    }
    break;
  }
  }
}

/* A band --band may name: 0 .. bands-1 (a single grey: 0). */
static int es_tiff_band_check(const es_tiff_info *in, int band, char *msg, size_t len) {
  if (band >= 0 && band < in->bands) return ES_OK;
  if (in->bands > 1)
    snprintf(msg, len, "no band %d: the image has %d (band 0..%d)", band, in->bands,
             in->bands - 1);
  else
    snprintf(msg, len, "no band %d: the image has one", band);
  return ES_ERR_USAGE;
}

int es_tiff_read_rows(es_tiff *t, int y0, int nrows, int band, void *dst, size_t dst_stride,
                      char *msg, size_t len) {
  const es_tiff_info *in = &t->info;
  int planes[3] = {0, 0, 0}, nplanes = 1;
  if (t->page < 0) {
    snprintf(msg, len, "no page is set");
    return ES_ERR_INTERNAL;
  }
  if (es_tiff_band_check(in, band, msg, len) != ES_OK) return ES_ERR_USAGE;
  if (y0 < 0 || nrows < 0 || y0 > in->height - nrows || !dst ||
      dst_stride < (size_t)in->width * (size_t)(in->depth / 8)) {
    snprintf(msg, len, "rows %d..%d are not in the image", y0, y0 + nrows - 1);
    return ES_ERR_INTERNAL;
  }
  if (in->planar == PLANARCONFIG_SEPARATE) {
    if (t->kind == KIND_RGB) {
      nplanes = 3;
      planes[1] = 1;
      planes[2] = 2;
    } else if (t->kind == KIND_BANDS) {
      planes[0] = band;
    }
  }
  for (int y = y0; y < y0 + nrows; y++) {
    const int64_t brow = y / in->block_height;
    const size_t r = (size_t)(y - brow * in->block_height);
    const uint8_t *src[3] = {NULL, NULL, NULL};
    uint8_t *d = (uint8_t *)dst + (size_t)(y - y0) * dst_stride;
    for (int p = 0; p < nplanes; p++) {
      int rc = es_tiff_load(t, p, planes[p], brow, msg, len);
      if (rc != ES_OK) return rc;
    }
    for (int k = 0; k < t->nblocks_across; k++) {
      const int x0 = k * in->block_width;
      const int n = in->tiled && in->width - x0 < in->block_width ? in->width - x0
                                                                  : in->block_width;
      for (int p = 0; p < nplanes; p++)
        src[p] = t->buf[p] + (size_t)k * t->bsize + r * t->browbytes;
      es_tiff_convert(t, src, n, band, d + (size_t)x0 * (size_t)(in->depth / 8));
    }
  }
  return ES_OK;
}

int es_tiff_read_to(const char *path, int page, int band, int64_t max_pixels,
                    es_png_dest_fn dest, void *user, es_image *img, es_tiff_info *info,
                    char *msg, size_t len) {
  es_tiff *t = NULL;
  es_tiff_info in;
  void *dst = NULL;
  size_t dst_stride = 0;
  int rc;
  memset(img, 0, sizeof *img);
  if (!dest) {
    snprintf(msg, len, "no destination");
    return ES_ERR_USAGE;
  }
  rc = es_tiff_open(path, max_pixels, &t, &in, msg, len);
  if (rc != ES_OK) goto end;
  if (page != 0 && (rc = es_tiff_set_page(t, page, &in, msg, len)) != ES_OK) goto end;
  /* before dest: nothing is reserved for a band that is not there */
  if ((rc = es_tiff_band_check(&in, band, msg, len)) != ES_OK) goto end;
  rc = dest(user, in.width, in.height, in.depth, &dst, &dst_stride, msg, len);
  if (rc != ES_OK) goto end;
  if (!dst || dst_stride < (size_t)in.width * (size_t)(in.depth / 8)) {
    snprintf(msg, len, "no room for a %d x %d image", in.width, in.height);
    rc = ES_ERR_INTERNAL;
    goto end;
  }
  rc = es_tiff_read_rows(t, 0, in.height, band, dst, dst_stride, msg, len);
  if (rc != ES_OK) goto end;
  img->data = dst;
  img->width = in.width;
  img->height = in.height;
  img->stride = dst_stride;
  img->depth = in.depth;
  if (info) *info = in;
end:
  es_tiff_close(&t);
  return rc;
}

int es_tiff_geo_get(es_tiff *t, es_tiff_geo **geo, char *msg, size_t len) {
  *geo = NULL;
  if (t->page < 0 || !t->info.has_geo) return ES_OK;
  return es_tiff_geo_read(t->tif, geo, msg, len);
}

int es_tiff_geo_load(const char *path, int page, es_tiff_geo **geo, char *msg, size_t len) {
  es_tiff *t = NULL;
  int rc;
  *geo = NULL;
  if (es_tiff_open(path, 0, &t, NULL, msg, len) != ES_OK) return ES_OK;
  rc = page ? es_tiff_set_page(t, page, NULL, msg, len) : ES_OK;
  rc = rc == ES_OK ? es_tiff_geo_get(t, geo, msg, len) : ES_OK;
  es_tiff_close(&t);
  return rc;
}

int es_tiff_version(char *buf, size_t len) {
  const char *v = TIFFGetVersion(); /* "LIBTIFF, Version 4.5.0\nCopyright ..." */
  const char *p = strstr(v, "Version ");
  int n = p ? (int)strcspn(p + 8, "\n") : 0;
  return snprintf(buf, len, "libtiff %.*s", n, p ? p + 8 : "?");
}
