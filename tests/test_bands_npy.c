/*
 * test_bands_npy.c - the .npy row writer (es_npy_rows_*, the output of es_compute_bands):
 * rows written in chunks of any size give the same file, byte for byte, as es_npy_write of
 * the whole map; nothing is left under the final name or as a temporary when the writer is
 * closed without commit, closed short of its rows, or refused an existing name.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  *n = b ? fread(b, 1, (size_t)sz, f) : 0;
  fclose(f);
  return b;
}

/* Files in dir (. and .. aside). */
static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

int main(void) {
  es_test_seed("test_bands_npy");
  char dir[] = "/tmp/es_bands_npy_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char whole[300], rows[300], msg[256];
  snprintf(whole, sizeof whole, "%s/whole.npy", dir);
  snprintf(rows, sizeof rows, "%s/rows.npy", dir);
  for (int round = 0; round < 20; round++) {
    int w = es_test_range(1, 50), h = es_test_range(1, 60);
    size_t stride = (size_t)w + (size_t)es_test_range(0, 3);
    float *map = malloc(stride * (size_t)h * sizeof *map);
    for (size_t i = 0; i < stride * (size_t)h; i++) map[i] = (float)(es_test_rand() % 100000) / 7.0f;
    CHECK(es_npy_write(whole, 1, w, h, map, stride, msg, sizeof msg) == ES_OK, "whole: %s", msg);
    es_npy_bands *nr = NULL;
    int rc = es_npy_bands_open(&nr, rows, 1, w, h, msg, sizeof msg);
    CHECK(rc == ES_OK, "open: %s", msg);
    for (int y = 0; rc == ES_OK && y < h;) {
      int n = es_test_range(1, h - y);
      rc = es_npy_bands_write(nr, map + (size_t)y * stride, stride, n, msg, sizeof msg);
      CHECK(rc == ES_OK, "write: %s", msg);
      y += n;
    }
    CHECK(es_npy_bands_write(nr, map, stride, 1, msg, sizeof msg) == ES_ERR_INTERNAL,
          "a row past the height was taken");
    CHECK(es_npy_bands_close(&nr, 1, msg, sizeof msg) == ES_OK && !nr, "close: %s", msg);
    size_t na = 0, nb = 0;
    uint8_t *a = slurp(whole, &na), *b = slurp(rows, &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na), "%dx%d: row file differs from the whole file",
          w, h);
    free(a);
    free(b);
    free(map);
  }
  /* Without commit, short of its rows, or refused: nothing of its own left. */
  unlink(rows);
  float row[32] = {0}; /* up to 4 rows of 8 */
  es_npy_bands *nr = NULL;
  CHECK(es_npy_bands_open(&nr, rows, 0, 8, 4, msg, sizeof msg) == ES_OK, "open: %s", msg);
  CHECK(es_npy_bands_write(nr, row, 8, 1, msg, sizeof msg) == ES_OK, "write: %s", msg);
  CHECK(count_files(dir) == 2, "the temporary is not beside whole.npy");
  CHECK(es_npy_bands_close(&nr, 0, msg, sizeof msg) == ES_OK, "abort");
  CHECK(count_files(dir) == 1 && access(rows, F_OK) != 0, "an aborted writer left a file");
  CHECK(es_npy_bands_open(&nr, rows, 0, 8, 4, msg, sizeof msg) == ES_OK, "open: %s", msg);
  CHECK(es_npy_bands_write(nr, row, 8, 3, msg, sizeof msg) == ES_OK, "write: %s", msg);
  CHECK(es_npy_bands_close(&nr, 1, msg, sizeof msg) == ES_ERR_INTERNAL && strstr(msg, "3 rows of 4"),
        "a short map was committed: %s", msg);
  CHECK(count_files(dir) == 1 && access(rows, F_OK) != 0, "a short writer left a file");
  CHECK(es_npy_bands_open(&nr, whole, 0, 8, 4, msg, sizeof msg) == ES_ERR_OUTPUT && !nr &&
            strstr(msg, "exists"),
        "an existing name was taken without overwrite: %s", msg);
  CHECK(count_files(dir) == 1, "a refused writer left a file");
  CHECK(es_npy_bands_close(&nr, 1, msg, sizeof msg) == ES_OK, "closing NULL");
  unlink(whole);
  rmdir(dir);
  return es_test_done("test_bands_npy");
}
