/*
 * test_io_npy.c - .npy output: header layout (magic, version 1.0, length, padding to a
 * multiple of 64, the dict), little-endian float32 contents with strided input, the streamed
 * [T, H, W] form with T rewritten at close, abort leaving nothing, and numpy.load reading
 * both (when the tests' python3, $ES_PYTHON3, has numpy).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "es_io.h"
#include "es_test.h"

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)sz + 1);
  *n = fread(b, 1, (size_t)sz, f);
  b[*n] = 0;
  fclose(f);
  return b;
}

/* Checks the header and returns the offset of the data (0 on error). */
static size_t check_header(const uint8_t *b, size_t n, const char *shape) {
  CHECK(n >= 10 && !memcmp(b, "\x93NUMPY\x01\x00", 8), "magic/version");
  if (n < 10) return 0;
  size_t hl = b[8] | (size_t)b[9] << 8, off = 10 + hl;
  CHECK(off % 64 == 0, "header of %zu bytes is not a multiple of 64", off);
  CHECK(off <= n && b[off - 1] == '\n', "header does not end in a newline");
  char want[200];
  snprintf(want, sizeof want, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
  CHECK(off <= n && !memcmp(b + 10, want, strlen(want)), "dict: %.*s", (int)hl, (const char *)b + 10);
  for (size_t i = 10 + strlen(want); i + 1 < off && i < n; i++)
    if (b[i] != ' ') {
      CHECK(b[i] == ' ', "padding byte %zu is 0x%02x", i, b[i]);
      break;
    }
  return off;
}

static float le_float(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float value(int t, int y, int x, uint64_t salt) {
  return (float)(((uint64_t)t * 1000003u + (uint64_t)y * 7919u + (uint64_t)x * 104729u + salt) % 100000) /
         16384.0f;
}

int main(void) {
  es_test_seed("test_io_npy");
  char msg[256], path[512], path2[512], dir[] = "/tmp/es_test_io_npy.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  uint64_t salt = es_test_rand() % 1000;
  int w = es_test_range(1, 123), h = es_test_range(1, 71), T = es_test_range(2, 6);
  size_t stride = (size_t)w + (size_t)es_test_range(0, 5);
  float *map = malloc(sizeof(float) * stride * h);
  for (int i = 0; i < (int)(stride * h); i++) map[i] = NAN; /* poison the padding */

  /* one map [H, W] */
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) map[(size_t)y * stride + x] = value(0, y, x, salt);
  snprintf(path, sizeof path, "%s/one.npy", dir);
  int st = es_npy_write(path, 0, w, h, map, stride, msg, sizeof msg);
  CHECK(st == ES_OK, "npy_write: %s", msg);
  size_t n = 0;
  uint8_t *b = slurp(path, &n);
  char shape[100];
  snprintf(shape, sizeof shape, "(%d, %d)", h, w);
  size_t off = b ? check_header(b, n, shape) : 0;
  CHECK(off && n == off + (size_t)w * h * 4, "size %zu, want %zu", n, off + (size_t)w * h * 4);
  for (int y = 0; off && n == off + (size_t)w * h * 4 && y < h; y++)
    for (int x = 0; x < w; x++)
      if (le_float(b + off + ((size_t)y * w + x) * 4) != value(0, y, x, salt)) {
        CHECK(0, "value at (%d,%d)", x, y);
        y = h;
        break;
      }
  free(b);
  CHECK(es_npy_write(path, 0, w, h, map, stride, msg, sizeof msg) == ES_ERR_OUTPUT, "no-overwrite");

  /* stream [T, H, W] */
  snprintf(path2, sizeof path2, "%s/stream.npy", dir);
  es_npy_stream *s = NULL;
  st = es_npy_stream_open(&s, path2, 0, w, h, msg, sizeof msg);
  CHECK(st == ES_OK && s, "stream open: %s", msg);
  CHECK(access(path2, F_OK) != 0, "stream visible before close");
  for (int t = 0; t < T && s; t++) {
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) map[(size_t)y * stride + x] = value(t, y, x, salt);
    st = es_npy_stream_write(s, map, stride, msg, sizeof msg);
    CHECK(st == ES_OK, "stream write %d: %s", t, msg);
  }
  st = es_npy_stream_close(&s, 1, msg, sizeof msg);
  CHECK(st == ES_OK && s == NULL, "stream close: %s", msg);
  b = slurp(path2, &n);
  snprintf(shape, sizeof shape, "(%d, %d, %d)", T, h, w);
  off = b ? check_header(b, n, shape) : 0;
  CHECK(off && n == off + (size_t)T * w * h * 4, "stream size %zu", n);
  for (int t = 0; off && n == off + (size_t)T * w * h * 4 && t < T; t++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        if (le_float(b + off + (((size_t)t * h + y) * w + x) * 4) != value(t, y, x, salt)) {
          CHECK(0, "stream value at t %d (%d,%d)", t, x, y);
          t = T, y = h;
          break;
        }
  free(b);

  /* zero frames is a valid (0, H, W) array; abort leaves nothing */
  char path3[600];
  snprintf(path3, sizeof path3, "%s/empty.npy", dir);
  CHECK(es_npy_stream_open(&s, path3, 0, w, h, msg, sizeof msg) == ES_OK, "open empty: %s", msg);
  CHECK(es_npy_stream_close(&s, 1, msg, sizeof msg) == ES_OK, "close empty: %s", msg);
  b = slurp(path3, &n);
  snprintf(shape, sizeof shape, "(0, %d, %d)", h, w);
  off = b ? check_header(b, n, shape) : 0;
  CHECK(off == n, "empty stream has %zu data bytes", n - off);
  free(b);
  char path4[600];
  snprintf(path4, sizeof path4, "%s/aborted.npy", dir);
  CHECK(es_npy_stream_open(&s, path4, 0, w, h, msg, sizeof msg) == ES_OK, "open: %s", msg);
  es_npy_stream_write(s, map, stride, msg, sizeof msg);
  CHECK(es_npy_stream_close(&s, 0, msg, sizeof msg) == ES_OK, "abort");
  CHECK(access(path4, F_OK) != 0, "aborted stream exists");
  CHECK(es_npy_stream_close(&s, 1, msg, sizeof msg) == ES_OK, "close(NULL)");

  /* numpy reads all three the same */
  const char *py = getenv("ES_PYTHON3");
  if (!py || !*py) py = "/usr/bin/python3";
  if (access(py, X_OK) == 0) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import sys\n"
             "try:\n import numpy as np\nexcept ImportError: sys.exit(77)\n"
             "w,h,T,salt=%d,%d,%d,%d\n"
             "t,y,x=np.meshgrid(np.arange(T),np.arange(h),np.arange(w),indexing='ij')\n"
             "ref=((t*1000003+y*7919+x*104729+salt)%%100000).astype(np.float32)/np.float32(16384)\n"
             "a=np.load('%s'); s=np.load('%s'); e=np.load('%s')\n"
             "assert a.dtype==np.float32 and a.shape==(h,w), (a.dtype,a.shape)\n"
             "assert s.dtype==np.float32 and s.shape==(T,h,w), s.shape\n"
             "assert e.shape==(0,h,w), e.shape\n"
             "assert np.array_equal(a, ref[0]) and np.array_equal(s, ref)\n"
             "print('numpy.load: ok', a.shape, s.shape, e.shape)\"",
             py, w, h, T, (int)salt, path, path2, path3);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (rc == 77) printf("numpy not installed: numpy.load check skipped\n");
    else CHECK(rc == 0, "numpy.load check failed (%d)", rc);
  } else {
    printf("no python3: numpy.load check skipped\n");
  }
  unlink(path);
  unlink(path2);
  unlink(path3);
  rmdir(dir);
  free(map);
  return es_test_done("test_io_npy");
}
