/*
 * npy.c - .npy output (NumPy format version 1.0): float32 little-endian ('<f4'), C order,
 * shape [H, W] for one map, or [T, H, W] streamed frame by frame with T rewritten into the
 * header at close. Files are written atomically (es_atomic); a FIFO or device in place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_io.h"

/* The streamed header is written once with room for any T (20 digits) and rewritten in
 * place at close, space-padded to the same length, which the format allows. */
#define ES_NPY_MAGIC "\x93NUMPY\x01\x00"

static int es_npy_host_le(void) {
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
}

/* Header of exactly `total` bytes (a multiple of 64), or of the smallest multiple of 64 when
 * total is 0. Returns the size written into hdr, 0 if it does not fit. */
static size_t es_npy_header(char *hdr, size_t cap, size_t total, const char *shape) {
  char dict[200];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                   shape);
  if (n < 0 || (size_t)n >= sizeof dict) return 0;
  size_t need = 10 + (size_t)n + 1; /* magic+version+len, dict, '\n' */
  if (!total) total = (need + 63) / 64 * 64;
  if (need > total || total > cap || total - 10 > 65535) return 0;
  memcpy(hdr, ES_NPY_MAGIC, 8);
  hdr[8] = (char)((total - 10) & 255);
  hdr[9] = (char)((total - 10) >> 8);
  memcpy(hdr + 10, dict, (size_t)n);
  memset(hdr + 10 + n, ' ', total - 10 - (size_t)n - 1);
  hdr[total - 1] = '\n';
  return total;
}

/* Writes h rows of w floats, little-endian. */
static int es_npy_rows(FILE *fp, int width, int height, const float *map, size_t stride,
                       char *msg, size_t len) {
  int le = es_npy_host_le();
  uint8_t *tmp = NULL;
  if (!le && !(tmp = malloc((size_t)width * 4))) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  for (int y = 0; y < height; y++) {
    const float *row = map + (size_t)y * stride;
    const void *src = row;
    if (!le) {
      const uint8_t *b = (const uint8_t *)row;
      for (size_t i = 0; i < (size_t)width; i++)
        for (int k = 0; k < 4; k++) tmp[4 * i + (size_t)k] = b[4 * i + 3 - (size_t)k];
      src = tmp;
    }
    if (fwrite(src, 4, (size_t)width, fp) != (size_t)width) {
      snprintf(msg, len, "cannot write: %s", strerror(errno));
      free(tmp);
      return ES_ERR_OUTPUT;
    }
  }
  free(tmp);
  return ES_OK;
}

int es_npy_write(const char *path, int overwrite, int width, int height, const float *map,
                 size_t stride, char *msg, size_t len) {
  es_atomic at;
  char shape[64], hdr[256];
  int status;
  if (width <= 0 || height <= 0 || !map) {
    snprintf(msg, len, "cannot write an empty %d x %d map", width, height);
    return ES_ERR_INTERNAL;
  }
  if (!stride) stride = (size_t)width;
  snprintf(shape, sizeof shape, "(%d, %d)", height, width);
  size_t hl = es_npy_header(hdr, sizeof hdr, 0, shape);
  status = es_atomic_open(&at, path, overwrite, msg, len);
  if (status) return status;
  if (fwrite(hdr, 1, hl, at.fp) != hl) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    status = ES_ERR_OUTPUT;
    goto end;
  }
  status = es_npy_rows(at.fp, width, height, map, stride, msg, len);
  if (status) goto end;
  return es_atomic_commit(&at, msg, len);
end:
  es_atomic_abort(&at);
  return status;
}

struct es_npy_stream {
  es_atomic at;
  int width, height;
  int64_t frames;
  size_t header_size;
  int failed; /* a write failed: close cannot commit */
};

static size_t es_npy_stream_header(const es_npy_stream *s, char *hdr, size_t cap, size_t total,
                                   int64_t t) {
  char shape[96];
  snprintf(shape, sizeof shape, "(%" PRId64 ", %d, %d)", t, s->height, s->width);
  return es_npy_header(hdr, cap, total, shape);
}

int es_npy_stream_open(es_npy_stream **out, const char *path, int overwrite, int width,
                       int height, char *msg, size_t len) {
  char hdr[256], shape[96];
  int status;
  *out = NULL;
  if (width <= 0 || height <= 0) {
    snprintf(msg, len, "cannot write %d x %d frames", width, height);
    return ES_ERR_INTERNAL;
  }
  es_npy_stream *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  s->width = width;
  s->height = height;
  /* Size the header for the widest T there can be, so the rewrite always fits. */
  snprintf(shape, sizeof shape, "(%" PRId64 ", %d, %d)", INT64_MAX, height, width);
  s->header_size = es_npy_header(hdr, sizeof hdr, 0, shape);
  /* T is known only at close, when the header is rewritten: a pipe cannot go back to it.
   * Refused before any frame is computed (a device such as /dev/null can seek), and a FIFO
   * before it is opened, which would wait for a reader. */
  if (es_output_is_fifo(path)) {
    status = ES_ERR_OUTPUT;
  } else if ((status = es_atomic_open(&s->at, path, overwrite, msg, len)) != ES_OK) {
    goto end;
  } else if (s->at.stream && lseek(fileno(s->at.fp), 0, SEEK_CUR) < 0) {
    status = ES_ERR_OUTPUT;
  }
  if (status != ES_OK) {
    snprintf(msg, len, "cannot write frames into a pipe (.npy's frame count is written last)");
    goto end;
  }
  es_npy_stream_header(s, hdr, sizeof hdr, s->header_size, 0);
  if (fwrite(hdr, 1, s->header_size, s->at.fp) != s->header_size) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    status = ES_ERR_OUTPUT;
    goto end;
  }
  *out = s;
  return ES_OK;
end:
  es_atomic_abort(&s->at);
  free(s);
  return status;
}

int es_npy_stream_write(es_npy_stream *s, const float *map, size_t stride, char *msg,
                        size_t len) {
  if (!s || !map || s->failed) {
    snprintf(msg, len, "output is closed");
    return ES_ERR_INTERNAL;
  }
  int status = es_npy_rows(s->at.fp, s->width, s->height, map, stride ? stride : (size_t)s->width,
                           msg, len);
  if (status) {
    s->failed = 1;
    return status;
  }
  s->frames++;
  return ES_OK;
}

int es_npy_stream_close(es_npy_stream **ps, int commit, char *msg, size_t len) {
  es_npy_stream *s = ps ? *ps : NULL;
  int status = ES_OK;
  char hdr[256];
  if (!s) return ES_OK;
  *ps = NULL;
  if (!commit) goto end;
  if (s->failed) {
    snprintf(msg, len, "an earlier write failed");
    status = ES_ERR_OUTPUT;
    goto end;
  }
  es_npy_stream_header(s, hdr, sizeof hdr, s->header_size, s->frames);
  if (fflush(s->at.fp) != 0 || fseeko(s->at.fp, 0, SEEK_SET) != 0 ||
      fwrite(hdr, 1, s->header_size, s->at.fp) != s->header_size) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    status = ES_ERR_OUTPUT;
    goto end;
  }
  status = es_atomic_commit(&s->at, msg, len);
end:
  es_atomic_abort(&s->at); /* no-op after a commit */
  free(s);
  return status;
}

struct es_npy_bands {
  es_atomic at;
  int width, height;
  int rows;   /* rows written so far */
  int failed; /* a write failed: close cannot commit */
};

int es_npy_bands_open(es_npy_bands **out, const char *path, int overwrite, int width,
                      int height, char *msg, size_t len) {
  char hdr[256], shape[64];
  int status;
  *out = NULL;
  if (width <= 0 || height <= 0) {
    snprintf(msg, len, "cannot write an empty %d x %d map", width, height);
    return ES_ERR_INTERNAL;
  }
  es_npy_bands *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  s->width = width;
  s->height = height;
  snprintf(shape, sizeof shape, "(%d, %d)", height, width);
  size_t hl = es_npy_header(hdr, sizeof hdr, 0, shape);
  if ((status = es_atomic_open(&s->at, path, overwrite, msg, len)) != ES_OK) goto end;
  if (fwrite(hdr, 1, hl, s->at.fp) != hl) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    status = ES_ERR_OUTPUT;
    goto end;
  }
  *out = s;
  return ES_OK;
end:
  es_atomic_abort(&s->at);
  free(s);
  return status;
}

int es_npy_bands_write(es_npy_bands *s, const float *map, size_t stride, int nrows,
                       char *msg, size_t len) {
  if (!s || !map || s->failed || nrows < 0 || nrows > s->height - s->rows) {
    snprintf(msg, len, "output is closed or full");
    return ES_ERR_INTERNAL;
  }
  int status = es_npy_rows(s->at.fp, s->width, nrows, map, stride ? stride : (size_t)s->width,
                           msg, len);
  if (status) {
    s->failed = 1;
    return status;
  }
  s->rows += nrows;
  return ES_OK;
}

int es_npy_bands_close(es_npy_bands **ps, int commit, char *msg, size_t len) {
  es_npy_bands *s = ps ? *ps : NULL;
  int status = ES_OK;
  if (!s) return ES_OK;
  *ps = NULL;
  if (!commit) goto end;
  if (s->failed || s->rows != s->height) {
    if (s->failed)
      snprintf(msg, len, "an earlier write failed");
    else
      snprintf(msg, len, "%d rows of %d written", s->rows, s->height);
    status = s->failed ? ES_ERR_OUTPUT : ES_ERR_INTERNAL;
    goto end;
  }
  status = es_atomic_commit(&s->at, msg, len);
end:
  es_atomic_abort(&s->at); /* no-op after a commit */
  free(s);
  return status;
}
