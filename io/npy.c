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

/* An .npy file opened at path (es_atomic: written under a temporary name and renamed at
 * commit; a FIFO or device in place) with its header hdr (hl bytes) written. seek_back: the
 * header is rewritten at close (T, the frame count), which a pipe cannot take: refused before
 * any frame is computed (a device such as /dev/null can seek), and a FIFO before it is
 * opened, which would wait for a reader. On failure nothing is left open or under path. */
static int es_npy_begin(es_atomic *at, const char *path, int overwrite, const char *hdr,
                        size_t hl, int seek_back, char *msg, size_t len) {
  int status;
  memset(at, 0, sizeof *at);
  if (seek_back && es_output_is_fifo(path)) {
    status = ES_ERR_OUTPUT;
  } else if ((status = es_atomic_open(at, path, overwrite, msg, len)) != ES_OK) {
    return status; /* es_atomic_open leaves nothing */
  } else if (seek_back && at->stream && lseek(fileno(at->fp), 0, SEEK_CUR) < 0) {
    status = ES_ERR_OUTPUT;
  }
  if (status != ES_OK) {
    snprintf(msg, len, "cannot write frames into a pipe (.npy's frame count is written last)");
    goto end;
  }
  if (fwrite(hdr, 1, hl, at->fp) != hl) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    status = ES_ERR_OUTPUT;
    goto end;
  }
  return ES_OK;
end:
  es_atomic_abort(at);
  return status;
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
  status = es_npy_begin(&at, path, overwrite, hdr, hl, 0, msg, len);
  if (status) return status;
  status = es_npy_rows(at.fp, width, height, map, stride, msg, len);
  if (status) goto end;
  return es_atomic_commit(&at, msg, len);
end:
  es_atomic_abort(&at);
  return status;
}

/* What a streamed output (frames: [T, H, W]) and a banded one (rows of one map: [H, W])
 * share; the first member of each, so that one opening, write and close serve both. */
typedef struct {
  es_atomic at;
  int width, height;
  int failed; /* a write failed: close cannot commit */
} es_npy_out;

/* *out: a zeroed object of size bytes whose first member is an es_npy_out, for width x height
 * maps, its file opened with header hdr (hl bytes) written (es_npy_begin); NULL on failure. */
static int es_npy_out_open(void **out, size_t size, const char *path, int overwrite, int width,
                           int height, const char *hdr, size_t hl, int seek_back, char *msg,
                           size_t len) {
  es_npy_out *o = calloc(1, size);
  *out = NULL;
  if (!o) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  o->width = width;
  o->height = height;
  const int status = es_npy_begin(&o->at, path, overwrite, hdr, hl, seek_back, msg, len);
  if (status != ES_OK) {
    free(o);
    return status;
  }
  *out = o;
  return ES_OK;
}

/* nrows rows of map (stride 0: the width) after those written; a failure is kept (close then
 * cannot commit). */
static int es_npy_out_rows(es_npy_out *o, const float *map, size_t stride, int nrows, char *msg,
                           size_t len) {
  const int status =
      es_npy_rows(o->at.fp, o->width, nrows, map, stride ? stride : (size_t)o->width, msg, len);
  if (status) o->failed = 1;
  return status;
}

/* The end of a close: with commit and status ES_OK (the kind's own checks passed), the file
 * committed; else removed. o (the object it heads) is freed. */
static int es_npy_out_close(es_npy_out *o, int commit, int status, char *msg, size_t len) {
  if (commit && status == ES_OK) status = es_atomic_commit(&o->at, msg, len);
  es_atomic_abort(&o->at); /* no-op after a commit */
  free(o);
  return status;
}

struct es_npy_stream {
  es_npy_out o; /* first: es_npy_out_open allocates the whole */
  int64_t frames;
  size_t header_size;
};

static size_t es_npy_stream_header(int width, int height, char *hdr, size_t cap, size_t total,
                                   int64_t t) {
  char shape[96];
  snprintf(shape, sizeof shape, "(%" PRId64 ", %d, %d)", t, height, width);
  return es_npy_header(hdr, cap, total, shape);
}

int es_npy_stream_open(es_npy_stream **out, const char *path, int overwrite, int width,
                       int height, char *msg, size_t len) {
  char hdr[256];
  void *p;
  *out = NULL;
  if (width <= 0 || height <= 0) {
    snprintf(msg, len, "cannot write %d x %d frames", width, height);
    return ES_ERR_INTERNAL;
  }
  /* Size the header for the widest T there can be, so the rewrite always fits. */
  const size_t hl = es_npy_stream_header(width, height, hdr, sizeof hdr, 0, INT64_MAX);
  es_npy_stream_header(width, height, hdr, sizeof hdr, hl, 0);
  const int status =
      es_npy_out_open(&p, sizeof **out, path, overwrite, width, height, hdr, hl, 1, msg, len);
  if (status != ES_OK) return status;
  *out = p;
  (*out)->header_size = hl;
  return ES_OK;
}

int es_npy_stream_write(es_npy_stream *s, const float *map, size_t stride, char *msg,
                        size_t len) {
  if (!s || !map || s->o.failed) {
    snprintf(msg, len, "output is closed");
    return ES_ERR_INTERNAL;
  }
  const int status = es_npy_out_rows(&s->o, map, stride, s->o.height, msg, len);
  if (status) return status;
  s->frames++;
  return ES_OK;
}

int es_npy_stream_close(es_npy_stream **ps, int commit, char *msg, size_t len) {
  es_npy_stream *s = ps ? *ps : NULL;
  int status = ES_OK;
  char hdr[256];
  if (!s) return ES_OK;
  *ps = NULL;
  if (commit && s->o.failed) {
    snprintf(msg, len, "an earlier write failed");
    status = ES_ERR_OUTPUT;
  } else if (commit) {
    /* T, now known, into the header written at open (of the same size) */
    es_npy_stream_header(s->o.width, s->o.height, hdr, sizeof hdr, s->header_size, s->frames);
    if (fflush(s->o.at.fp) != 0 || fseeko(s->o.at.fp, 0, SEEK_SET) != 0 ||
        fwrite(hdr, 1, s->header_size, s->o.at.fp) != s->header_size) {
      snprintf(msg, len, "cannot write: %s", strerror(errno));
      status = ES_ERR_OUTPUT;
    }
  }
  return es_npy_out_close(&s->o, commit, status, msg, len);
}

struct es_npy_bands {
  es_npy_out o; /* first: es_npy_out_open allocates the whole */
  int rows;     /* rows written so far */
};

int es_npy_bands_open(es_npy_bands **out, const char *path, int overwrite, int width,
                      int height, char *msg, size_t len) {
  char hdr[256], shape[64];
  void *p;
  *out = NULL;
  if (width <= 0 || height <= 0) {
    snprintf(msg, len, "cannot write an empty %d x %d map", width, height);
    return ES_ERR_INTERNAL;
  }
  snprintf(shape, sizeof shape, "(%d, %d)", height, width);
  const size_t hl = es_npy_header(hdr, sizeof hdr, 0, shape);
  const int status =
      es_npy_out_open(&p, sizeof **out, path, overwrite, width, height, hdr, hl, 0, msg, len);
  if (status != ES_OK) return status;
  *out = p;
  return ES_OK;
}

int es_npy_bands_write(es_npy_bands *s, const float *map, size_t stride, int nrows,
                       char *msg, size_t len) {
  if (!s || !map || s->o.failed || nrows < 0 || nrows > s->o.height - s->rows) {
    snprintf(msg, len, "output is closed or full");
    return ES_ERR_INTERNAL;
  }
  const int status = es_npy_out_rows(&s->o, map, stride, nrows, msg, len);
  if (status) return status;
  s->rows += nrows;
  return ES_OK;
}

int es_npy_bands_close(es_npy_bands **ps, int commit, char *msg, size_t len) {
  es_npy_bands *s = ps ? *ps : NULL;
  int status = ES_OK;
  if (!s) return ES_OK;
  *ps = NULL;
  if (commit && (s->o.failed || s->rows != s->o.height)) {
    if (s->o.failed)
      snprintf(msg, len, "an earlier write failed");
    else
      snprintf(msg, len, "%d rows of %d written", s->rows, s->o.height);
    status = s->o.failed ? ES_ERR_OUTPUT : ES_ERR_INTERNAL;
  }
  return es_npy_out_close(&s->o, commit, status, msg, len);
}
