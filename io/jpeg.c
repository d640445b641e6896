/*
 * jpeg.c - JPEG in through libjpeg-turbo (issue 28).
 *
 * A grey or YCbCr JPEG's grey is its Y plane as stored: it is decoded with out_color_space
 * JCS_GRAYSCALE, which hands out the Y component without any colour conversion (its weights
 * are SPEC section 1's luma rule already), bit for bit what `djpeg -grayscale` writes. A JPEG
 * stored as RGB (Adobe transform 0) is decoded to RGB and made grey by the luma rule, as a PNG
 * is; CMYK and YCCK are refused (no single grey without the ink's profile).
 * Input is untrusted: the frame header's size is checked against max_pixels, and against what
 * the file's bytes can hold, before anything is allocated; libjpeg's error_exit longjmps back
 * here, and its warnings are never printed: those that mean image data is missing or corrupt
 * (a truncated file, a bad Huffman code) are errors, the image is not used.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
/* after jpeglib.h: its messages depend on jconfig.h's (arithmetic coding) */
#include <jerror.h>

#include "es_io.h"

#define ES_JPEG_DEFAULT_MAX_PIXELS ((int64_t)1 << 31)

/* Everything a decode owns, in the caller of the setjmp function (written only through a
 * pointer after setjmp, so its fields keep their values after a longjmp). */
typedef struct es_jpeg_rd {
  struct jpeg_decompress_struct cinfo;
  struct jpeg_error_mgr jerr; /* first field of the manager libjpeg calls: see rd_of */
  jmp_buf jmp;
  int created; /* jpeg_create_decompress done: jpeg_destroy_decompress owed */
  FILE *fp;
  int64_t src_size; /* bytes in the file, 0 when unknown */
  uint8_t *rgb;     /* one RGB row (a JPEG stored as RGB) */
  int status;
  char err[200];
} es_jpeg_rd;

static es_jpeg_rd *rd_of(j_common_ptr c) {
  return (es_jpeg_rd *)((char *)c->err - offsetof(es_jpeg_rd, jerr));
}

/* libjpeg's message for its last code, first letter lowered ("Not a JPEG file" -> "not a
 * JPEG file"; "JPEG" keeps its case). */
static void es_jpeg_set_err(es_jpeg_rd *rd, j_common_ptr c) {
  char m[JMSG_LENGTH_MAX];
  c->err->format_message(c, m);
  if (m[0] >= 'A' && m[0] <= 'Z' && m[1] >= 'a' && m[1] <= 'z') m[0] = (char)(m[0] - 'A' + 'a');
  snprintf(rd->err, sizeof rd->err, "%s", m);
}

static void es_jpeg_error_exit(j_common_ptr c) {
  es_jpeg_rd *rd = rd_of(c);
  if (!rd->err[0] && c->err->msg_code == JWRN_JPEG_EOF)
    snprintf(rd->err, sizeof rd->err, "truncated (premature end of JPEG file)");
  if (!rd->err[0]) es_jpeg_set_err(rd, c);
  if (!rd->status)
    rd->status = c->err->msg_code == JERR_OUT_OF_MEMORY ? ES_ERR_NOMEM : ES_ERR_INPUT;
  longjmp(rd->jmp, 1);
}

/* Warnings (level -1) and trace messages (level >= 0). Never printed. A warning that means
 * image data is lost ends the decode as an error: libjpeg would go on and fill the rest with
 * grey, and a map of that grey is not the picture. Others (unknown JFIF revision, extraneous
 * bytes between markers, a bad ICC marker) leave the image whole and are let be. */
static void es_jpeg_emit_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  switch (c->err->msg_code) {
  case JWRN_JPEG_EOF:
  case JWRN_HIT_MARKER:
  case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(C_ARITH_CODING_SUPPORTED) ||                                 \
    defined(D_ARITH_CODING_SUPPORTED) /* where jerror.h has it */
  case JWRN_ARITH_BAD_CODE:
#endif
  case JWRN_MUST_RESYNC:
  case JWRN_NOT_SEQUENTIAL:
  case JWRN_BOGUS_PROGRESSION: es_jpeg_error_exit(c); break;
  default: c->err->num_warnings++; break;
  }
}

static void es_jpeg_output_message(j_common_ptr c) { (void)c; }

/* The libjpeg part. Only rd's fields are written after setjmp. */
static int es_jpeg_decode(es_jpeg_rd *rd, int64_t max_pixels, es_png_dest_fn dest, void *user,
                          es_image *img) {
  struct jpeg_decompress_struct *ci = &rd->cinfo;
  if (setjmp(rd->jmp)) return rd->status ? rd->status : ES_ERR_INPUT;
  jpeg_create_decompress(ci);
  rd->created = 1;
  jpeg_stdio_src(ci, rd->fp);
  jpeg_read_header(ci, TRUE);

  const uint32_t w = ci->image_width, h = ci->image_height;
  const int64_t px = (int64_t)w * h;
  if (px > max_pixels) {
    snprintf(rd->err, sizeof rd->err,
             "image is %" PRIu32 " x %" PRIu32 " = %" PRId64
             " pixels, more than max_pixels %" PRId64,
             w, h, px, max_pixels);
    return ES_ERR_INPUT;
  }
  /* Huffman coding spends at least one bit on each 8x8 block (its DC code), so a file of S
   * bytes holds at most 8 S blocks: a header claiming more is a cut or forged file, refused
   * before the output (and a progressive file's whole-image coefficients) is allocated.
   * Arithmetic coding has no such floor; max_pixels alone bounds it. */
  const int64_t blocks = (int64_t)((w + 7) / 8) * ((h + 7) / 8);
  if (!ci->arith_code && rd->src_size > 0 && blocks / 8 > rd->src_size + 1024) {
    snprintf(rd->err, sizeof rd->err,
             "truncated: a %" PRIu32 " x %" PRIu32 " image cannot be in %" PRId64 " bytes", w, h,
             rd->src_size);
    return ES_ERR_INPUT;
  }
  switch (ci->jpeg_color_space) {
  case JCS_GRAYSCALE:
  case JCS_YCbCr: ci->out_color_space = JCS_GRAYSCALE; break; /* Y as stored */
  case JCS_RGB: ci->out_color_space = JCS_RGB; break;         /* luma rule below */
  default:
    snprintf(rd->err, sizeof rd->err, "%s JPEG is not supported (convert it to RGB or grey)",
             ci->jpeg_color_space == JCS_CMYK   ? "a CMYK"
             : ci->jpeg_color_space == JCS_YCCK ? "a YCCK"
                                                : "this colour space's");
    return ES_ERR_INPUT;
  }
  ci->dct_method = JDCT_ISLOW; /* libjpeg's default and djpeg's: the same bits as djpeg */
  jpeg_start_decompress(ci);

  void *dst = NULL;
  size_t dst_stride = 0;
  int rc = dest(user, (int)w, (int)h, 8, &dst, &dst_stride, rd->err, sizeof rd->err);
  if (rc != ES_OK) return rc;
  if (!dst || dst_stride < w) {
    snprintf(rd->err, sizeof rd->err, "no room for a %" PRIu32 " x %" PRIu32 " image", w, h);
    return ES_ERR_INTERNAL;
  }
  if (ci->out_color_space == JCS_RGB) {
    rd->rgb = malloc((size_t)w * 3);
    if (!rd->rgb) {
      snprintf(rd->err, sizeof rd->err, "out of memory");
      return ES_ERR_NOMEM;
    }
  }
  while (ci->output_scanline < h) {
    uint8_t *row = (uint8_t *)dst + (size_t)ci->output_scanline * dst_stride;
    if (!rd->rgb) {
      /* straight into the destination, up to four rows a call (libjpeg's row group) */
      JSAMPROW rows[4];
      JDIMENSION n = h - ci->output_scanline < 4 ? h - ci->output_scanline : 4;
      for (JDIMENSION k = 0; k < n; k++)
        rows[k] = row + k * dst_stride;
      jpeg_read_scanlines(ci, rows, n);
    } else {
      JSAMPROW r = rd->rgb;
      jpeg_read_scanlines(ci, &r, 1);
      for (uint32_t x = 0; x < w; x++) {
        const uint8_t *p = rd->rgb + 3 * (size_t)x;
        row[x] = (uint8_t)((299u * p[0] + 587u * p[1] + 114u * p[2] + 500u) / 1000u);
      }
    }
  }
  /* Reads to EOI: data cut after the last row's scan (a progressive file's later scans, or
   * its end) is a truncation too. */
  jpeg_finish_decompress(ci);
  img->data = dst;
  img->width = (int)w;
  img->height = (int)h;
  img->stride = dst_stride;
  img->depth = 8;
  return ES_OK;
}

/* libjpeg has no run-time version call: the one built against. */
#define ES_JPEG_STR2(x) #x
#define ES_JPEG_STR(x) ES_JPEG_STR2(x)
const char *es_jpeg_version(void) {
#ifdef LIBJPEG_TURBO_VERSION
  return "libjpeg-turbo " ES_JPEG_STR(LIBJPEG_TURBO_VERSION);
#else
  return "libjpeg " ES_JPEG_STR(JPEG_LIB_VERSION);
#endif
}

int es_jpeg_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                    es_image *img, char *msg, size_t len) {
  es_jpeg_rd *rd;
  struct stat st;
  int status;
  memset(img, 0, sizeof *img);
  if (!dest) {
    snprintf(msg, len, "no destination");
    return ES_ERR_USAGE;
  }
  /* on the heap: the struct holds a jmp_buf and libjpeg's state, a few KB */
  rd = calloc(1, sizeof *rd);
  if (!rd) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  rd->fp = fopen(path, "rb");
  if (!rd->fp) {
    snprintf(msg, len, "cannot open: %s", strerror(errno));
    free(rd);
    return ES_ERR_INPUT;
  }
  if (fstat(fileno(rd->fp), &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(rd->err, sizeof rd->err, "is a directory");
    status = ES_ERR_INPUT;
    goto end;
  }
  if (fstat(fileno(rd->fp), &st) == 0 && S_ISREG(st.st_mode)) {
    rd->src_size = (int64_t)st.st_size;
    if (rd->src_size == 0) {
      snprintf(rd->err, sizeof rd->err, "empty file");
      status = ES_ERR_INPUT;
      goto end;
    }
  }
  rd->cinfo.err = jpeg_std_error(&rd->jerr);
  rd->jerr.error_exit = es_jpeg_error_exit;
  rd->jerr.emit_message = es_jpeg_emit_message;
  rd->jerr.output_message = es_jpeg_output_message;
  status =
      es_jpeg_decode(rd, max_pixels > 0 ? max_pixels : ES_JPEG_DEFAULT_MAX_PIXELS, dest, user, img);
end:
  if (rd->created) jpeg_destroy_decompress(&rd->cinfo);
  fclose(rd->fp);
  free(rd->rgb);
  if (status != ES_OK) {
    memset(img, 0, sizeof *img);
    snprintf(msg, len, "%s", rd->err[0] ? rd->err : "cannot decode");
  }
  free(rd);
  return status;
}
