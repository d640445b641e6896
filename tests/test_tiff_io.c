/*
 * test_tiff_io.c - the TIFF reader and writer (io/tiff_in.c, io/tiff_out.c) against each
 * other and against hand-made files: every kind the writer makes (float32, gray8, gray16,
 * RGB) on one page and on a stack, odd sizes across tile edges, rows written and read back in
 * random bands; the reader's grey of hand-made 1-bit, min-is-white, palette, RGB and band
 * stacks; bad inputs (not a TIFF, empty, cut short, a header claiming 10^6 x 10^6, complex
 * and 64-bit float samples) refused with ES_ERR_INPUT and one line; the writer's atomic
 * output (nothing left on abort, -n and -y). The CLI, libtiff's codecs and GeoTIFF are in
 * tests/test_tiff_cli.py.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "es_luma.h"
#include "es_test.h"
#include "es_tiff.h"

static char g_dir[256];

static size_t bpp_of(int pixfmt) {
  return pixfmt == ES_PIX_NONE ? 4 : pixfmt == ES_PIX_RGB24 ? 3 : pixfmt == ES_PIX_GRAY16 ? 2 : 1;
}

/* The grey the reader must give for pixel i of a page written as pixfmt. */
static void expect_grey(int pixfmt, const uint8_t *src, size_t i, void *out) {
  switch (pixfmt) {
  case ES_PIX_RGB24: {
    const uint8_t *p = src + 3 * i;
    *(uint8_t *)out = (uint8_t)es_luma(p[0], p[1], p[2]);
    break;
  }
  default: memcpy(out, src + bpp_of(pixfmt) * i, bpp_of(pixfmt)); break;
  }
}

/* Counts the files in g_dir (temporaries included: they start with a dot). */
static int files_in_dir(void) {
  DIR *d = opendir(g_dir);
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void round_trip(int pixfmt, int w, int h, int pages, int tile, int bigtiff) {
  char path[512], msg[256] = "";
  const size_t bpp = bpp_of(pixfmt), stride = (size_t)w * bpp + 3; /* an odd stride */
  uint8_t *img = malloc(stride * h * pages);
  es_tiff_writer *wr = NULL;
  es_tiff_writer_opts o;
  int rc;
  snprintf(path, sizeof path, "%s/rt.tif", g_dir);
  for (size_t i = 0; i < stride * h * pages; i++) img[i] = (uint8_t)es_test_rand();
  if (pixfmt == ES_PIX_NONE) /* finite floats: random bytes may be NaN, whose bits vary */
    for (int p = 0; p < pages; p++)
      for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
          float v = (float)((double)(es_test_rand() % 100000) / 7.0 - 5000.0);
          memcpy(img + (size_t)(p * h + y) * stride + 4 * (size_t)x, &v, 4);
        }
  memset(&o, 0, sizeof o);
  o.width = w;
  o.height = h;
  o.pages = pages;
  o.pixfmt = pixfmt;
  o.tile = tile;
  o.bigtiff = bigtiff;
  rc = es_tiff_writer_open(path, 1, &o, &wr, msg, sizeof msg);
  CHECK(rc == ES_OK, "writer open %d: %s", rc, msg);
  if (rc != ES_OK) goto end;
  for (int p = 0; p < pages && rc == ES_OK; p++) {
    if (p) rc = es_tiff_writer_next_page(wr, msg, sizeof msg);
    for (int y = 0; y < h && rc == ES_OK;) {
      int n = es_test_range(1, 40);
      if (n > h - y) n = h - y;
      rc = es_tiff_writer_write_rows(wr, y, n, img + (size_t)(p * h + y) * stride, stride, msg,
                                     sizeof msg);
      y += n;
    }
  }
  CHECK(rc == ES_OK, "write %d: %s", rc, msg);
  rc = es_tiff_writer_close(&wr, rc == ES_OK, msg, sizeof msg);
  CHECK(rc == ES_OK && !wr, "close %d: %s", rc, msg);
  CHECK(files_in_dir() == 1, "only the file is left, no temporary");

  es_tiff *t = NULL;
  es_tiff_info in;
  rc = es_tiff_open(path, 0, &t, &in, msg, sizeof msg);
  CHECK(rc == ES_OK, "open %d: %s", rc, msg);
  if (rc != ES_OK) goto end;
  const int depth = pixfmt == ES_PIX_NONE ? 32 : pixfmt == ES_PIX_GRAY16 ? 16 : 8;
  CHECK(in.width == w && in.height == h && in.pages == pages && in.depth == depth, "info %dx%d %d pages depth %d",
        in.width, in.height, in.pages, in.depth);
  CHECK(in.tiled == 1 && in.block_width == (tile ? tile : 256), "tiled %d %d", in.tiled, in.block_width);
  CHECK(in.bigtiff == bigtiff, "bigtiff %d", in.bigtiff);
  CHECK(in.bands == 1 && !in.has_geo, "bands %d geo %d", in.bands, in.has_geo);
  const size_t gb = (size_t)depth / 8, gs = (size_t)w * gb + 1;
  uint8_t *grey = malloc(gs * h), *want = malloc(gb);
  for (int p = 0; p < pages; p++) {
    if (p) {
      rc = es_tiff_set_page(t, p, &in, msg, sizeof msg);
      CHECK(rc == ES_OK, "page %d: %s", p, msg);
    }
    /* in bands of random heights, as issue 30's streaming reads it */
    for (int y = 0; y < h && rc == ES_OK;) {
      int n = es_test_range(1, 300);
      if (n > h - y) n = h - y;
      rc = es_tiff_read_rows(t, y, n, 0, grey + (size_t)y * gs, gs, msg, sizeof msg);
      CHECK(rc == ES_OK, "read rows %d+%d: %s", y, n, msg);
      y += n;
    }
    int bad = 0;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        expect_grey(pixfmt, img + (size_t)(p * h + y) * stride, (size_t)x, want);
        if (memcmp(want, grey + (size_t)y * gs + (size_t)x * gb, gb)) bad++;
      }
    CHECK(bad == 0, "kind %d %dx%d page %d: %d pixels differ", pixfmt, w, h, p, bad);
  }
  free(grey);
  free(want);
  es_tiff_close(&t);
  CHECK(t == NULL, "closed");
end:
  unlink(path);
  free(img);
}

/* ---- hand-made files: a little-endian classic TIFF with one IFD and its data. */
typedef struct {
  uint16_t tag, type;
  uint32_t count, value;
} ifd_entry;

/* Writes header + IFD (entries sorted by tag) + data; offsets in entries that point at data
 * are given relative to the data's start, marked by type | 0x8000. */
static void write_tiff(const char *path, ifd_entry *e, int n, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  const uint32_t data_at = 8 + 2 + 12 * (uint32_t)n + 4;
  uint8_t hdr[8] = {'I', 'I', 42, 0, 8, 0, 0, 0};
  uint16_t cnt = (uint16_t)n;
  uint32_t zero = 0;
  fwrite(hdr, 1, 8, f);
  fwrite(&cnt, 2, 1, f);
  for (int i = 0; i < n; i++) {
    ifd_entry x = e[i];
    if (x.type & 0x8000) {
      x.type &= 0x7fff;
      x.value += data_at;
    }
    fwrite(&x.tag, 2, 1, f);
    fwrite(&x.type, 2, 1, f);
    fwrite(&x.count, 4, 1, f);
    fwrite(&x.value, 4, 1, f);
  }
  fwrite(&zero, 4, 1, f);
  if (size) fwrite(data, 1, size, f);
  fclose(f);
}

enum { SHORT = 3, LONG = 4, OFF = 0x8000 };

/* A w x h strip image (one strip) of spp samples of bits; extra entries appended sorted. */
static void simple_tiff(const char *path, uint32_t w, uint32_t h, int spp, int bits, int photo,
                        int fmt, const void *data, size_t size, const ifd_entry *extra, int nextra) {
  ifd_entry e[16];
  int n = 0;
  e[n++] = (ifd_entry){256, LONG, 1, w};
  e[n++] = (ifd_entry){257, LONG, 1, h};
  e[n++] = (ifd_entry){258, SHORT, 1, (uint32_t)bits}; /* one value for every sample: libtiff
                                                           * takes it */
  e[n++] = (ifd_entry){259, SHORT, 1, 1};
  e[n++] = (ifd_entry){262, SHORT, 1, (uint32_t)photo};
  e[n++] = (ifd_entry){273, LONG | OFF, 1, 0};
  e[n++] = (ifd_entry){277, SHORT, 1, (uint32_t)spp};
  e[n++] = (ifd_entry){278, LONG, 1, h};
  e[n++] = (ifd_entry){279, LONG, 1, (uint32_t)size};
  for (int i = 0; i < nextra; i++) e[n++] = extra[i];
  if (fmt != 1) e[n++] = (ifd_entry){339, SHORT, 1, (uint32_t)fmt};
  /* sort by tag (insertion) */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && e[j - 1].tag > e[j].tag; j--) {
      ifd_entry x = e[j];
      e[j] = e[j - 1];
      e[j - 1] = x;
    }
  write_tiff(path, e, n, data, size);
}

/* Reads page 0 whole through es_tiff_read_to into buf; returns the status. */
typedef struct {
  uint8_t *buf;
  size_t cap;
  int calls;
} dest_box;

static int dest_fn(void *user, int width, int height, int depth, void **dst, size_t *stride,
                   char *msg, size_t len) {
  dest_box *b = user;
  size_t need = (size_t)width * (size_t)height * (size_t)(depth / 8);
  b->calls++;
  if (need > b->cap) {
    snprintf(msg, len, "test buffer too small");
    return ES_ERR_NOMEM;
  }
  *dst = b->buf;
  *stride = (size_t)width * (size_t)(depth / 8);
  return ES_OK;
}

static int read_whole(const char *path, int band, dest_box *b, es_image *img, char *msg, size_t len) {
  return es_tiff_read_to(path, 0, band, 0, dest_fn, b, img, NULL, msg, len);
}

static void hand_made(void) {
  char path[512], msg[256];
  uint8_t buf[4096];
  dest_box b = {buf, sizeof buf, 0};
  es_image img;
  int rc;
  snprintf(path, sizeof path, "%s/h.tif", g_dir);

  /* 1-bit min-is-black, 10 x 2: rows 0b10110000 0b01000000 and the inverse: 0 or 255 */
  {
    uint8_t d[4] = {0xB0, 0x40, 0x4F, 0xBF};
    simple_tiff(path, 10, 2, 1, 1, 1, 1, d, 4, NULL, 0);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_OK && img.depth == 8 && img.width == 10, "1-bit: %d %s", rc, msg);
    const uint8_t want[20] = {255, 0, 255, 255, 0, 0, 0, 0, 0, 255,
                              0, 255, 0, 0, 255, 255, 255, 255, 255, 0};
    CHECK(rc == ES_OK && !memcmp(buf, want, 20), "1-bit values");
    /* the same bits, min-is-white: inverted */
    simple_tiff(path, 10, 2, 1, 1, 0, 1, d, 4, NULL, 0);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    int ok = rc == ES_OK;
    for (int i = 0; i < 20 && ok; i++) ok = buf[i] == 255 - want[i];
    CHECK(ok, "1-bit min-is-white: %d %s", rc, msg);
  }
  /* 4-bit grey: v * 17 */
  {
    uint8_t d[2] = {0x0F, 0x7A};
    simple_tiff(path, 4, 1, 1, 4, 1, 1, d, 2, NULL, 0);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_OK && buf[0] == 0 && buf[1] == 255 && buf[2] == 7 * 17 && buf[3] == 10 * 17,
          "4-bit: %d %s", rc, msg);
  }
  /* RGB 8-bit: luma by SPEC's rule */
  {
    uint8_t d[9] = {255, 0, 0, 10, 200, 30, 1, 2, 3};
    ifd_entry bps = {258, SHORT, 1, 8};
    (void)bps;
    simple_tiff(path, 3, 1, 3, 8, 2, 1, d, 9, NULL, 0);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_OK && buf[0] == es_luma(255, 0, 0) && buf[1] == es_luma(10, 200, 30) &&
              buf[2] == es_luma(1, 2, 3),
          "RGB: %d %s (%u %u %u)", rc, msg, buf[0], buf[1], buf[2]);
  }
  /* palette, 2-bit: a 16-bit colormap of 4 entries (R then G then B) */
  {
    uint16_t map[12] = {0, 65535, 0, 257 * 10, /* R */ 0, 0, 65535, 257 * 20, /* G */
                        0, 0, 0, 257 * 30 /* B */};
    uint8_t d[1 + 24];
    d[0] = 0x1B; /* indices 0 1 2 3 */
    memcpy(d + 1, map, 24);
    ifd_entry cm = {320, SHORT | OFF, 12, 1};
    simple_tiff(path, 4, 1, 1, 2, 3, 1, d, 25, &cm, 1);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_OK && buf[0] == 0 && buf[1] == es_luma(255, 0, 0) && buf[2] == es_luma(0, 255, 0) &&
              buf[3] == es_luma(10, 20, 30),
          "palette: %d %s (%u %u %u %u)", rc, msg, buf[0], buf[1], buf[2], buf[3]);
  }
  /* a band stack: 3 samples of 16 bits, min-is-black, no extra-sample meaning */
  {
    uint16_t d[6] = {1, 2, 3, 400, 500, 600};
    for (int band = 0; band < 3; band++) {
      rc = 0;
      simple_tiff(path, 2, 1, 3, 16, 1, 1, d, 12, NULL, 0);
      rc = read_whole(path, band, &b, &img, msg, sizeof msg);
      uint16_t v[2];
      memcpy(v, buf, 4);
      CHECK(rc == ES_OK && img.depth == 16 && v[0] == d[band] && v[1] == d[3 + band],
            "band %d: %d %s", band, rc, msg);
    }
    b.calls = 0;
    rc = read_whole(path, 3, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_ERR_USAGE && !strcmp(msg, "no band 3: the image has 3 (band 0..2)") && b.calls == 0, "band 3: %d %s", rc, msg);
  }
  /* float32 grey */
  {
    float d[3] = {-1.5f, 0.0f, 1e30f};
    simple_tiff(path, 3, 1, 1, 32, 1, 3, d, 12, NULL, 0);
    rc = read_whole(path, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_OK && img.depth == 32 && !memcmp(buf, d, 12), "float: %d %s", rc, msg);
  }

  /* ---- bad inputs: ES_ERR_INPUT, one line, dest never called */
  struct {
    const char *what;
    const char *want; /* in the message */
  } bad[] = {{"not a TIFF", "not a TIFF file"},
             {"empty", "empty file"},
             {"huge", "1000000 x 1000000"},
             {"complex", "complex float"},
             {"float64", "64-bit float"},
             {"int16", "signed integer"},
             {"cut", "strip"},
             {"cmyk", "CMYK"},
             {"dir", "is a directory"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *p = path;
    FILE *f;
    uint8_t d[64];
    memset(d, 7, sizeof d);
    switch (i) {
    case 0: f = fopen(path, "wb"); fputs("P5\n1 1\n255\n", f); fclose(f); break;
    case 1: f = fopen(path, "wb"); fclose(f); break;
    case 2: simple_tiff(path, 1000000, 1000000, 1, 8, 1, 1, d, 64, NULL, 0); break;
    case 3: simple_tiff(path, 2, 2, 1, 64, 1, 6, d, 64, NULL, 0); break;
    case 4: simple_tiff(path, 2, 2, 1, 64, 1, 3, d, 32, NULL, 0); break;
    case 5: simple_tiff(path, 2, 2, 1, 16, 1, 2, d, 8, NULL, 0); break;
    case 6: { /* the strip's byte count says 64, the file holds 10 of them */
      simple_tiff(path, 8, 8, 1, 8, 1, 1, d, 64, NULL, 0);
      struct stat st;
      stat(path, &st);
      CHECK(truncate(path, st.st_size - 54) == 0, "truncate");
      break;
    }
    case 7: simple_tiff(path, 2, 2, 4, 8, 5, 1, d, 16, NULL, 0); break;
    case 8: p = g_dir; break;
    }
    b.calls = 0;
    msg[0] = 0;
    rc = read_whole(p, 0, &b, &img, msg, sizeof msg);
    CHECK(rc == ES_ERR_INPUT && strstr(msg, bad[i].want) && !strchr(msg, '\n'),
          "%s: %d '%s'", bad[i].what, rc, msg);
    CHECK(i == 6 || b.calls == 0, "%s: nothing reserved for it", bad[i].what);
  }
  unlink(path);
}

/* The writer's output is atomic: abort leaves nothing; 0 refuses an existing name; KEEP
 * keeps it; 1 replaces it. */
static void atomic_out(void) {
  char path[512], msg[256];
  es_tiff_writer *w = NULL;
  es_tiff_writer_opts o;
  uint8_t row[3 * 40] = {0}; /* up to three rows of 40 */
  int rc;
  snprintf(path, sizeof path, "%s/a.tif", g_dir);
  memset(&o, 0, sizeof o);
  o.width = 40;
  o.height = 3;
  o.pixfmt = ES_PIX_GRAY8;
  o.pages = 1;
  rc = es_tiff_writer_open(path, 0, &o, &w, msg, sizeof msg);
  CHECK(rc == ES_OK, "open: %s", msg);
  rc = es_tiff_writer_write_rows(w, 0, 2, row, 40, msg, sizeof msg);
  CHECK(rc == ES_OK, "rows: %s", msg);
  rc = es_tiff_writer_write_rows(w, 3, 1, row, 40, msg, sizeof msg);
  CHECK(rc == ES_ERR_INTERNAL, "out of order refused: %d", rc);
  rc = es_tiff_writer_close(&w, 1, msg, sizeof msg); /* a row short */
  CHECK(rc == ES_ERR_INTERNAL && strstr(msg, "2 of its 3 rows"), "short: %d %s", rc, msg);
  CHECK(files_in_dir() == 0, "nothing left after a failed close");
  rc = es_tiff_writer_open(path, 0, &o, &w, msg, sizeof msg);
  es_tiff_writer_close(&w, 0, msg, sizeof msg);
  CHECK(rc == ES_OK && files_in_dir() == 0, "nothing left after an abort");
  /* a whole one, then 0 / KEEP / 1 over it */
  rc = es_tiff_writer_open(path, 0, &o, &w, msg, sizeof msg);
  for (int y = 0; y < 3 && rc == ES_OK; y++) rc = es_tiff_writer_write_rows(w, y, 1, row, 40, msg, sizeof msg);
  rc = es_tiff_writer_close(&w, rc == ES_OK, msg, sizeof msg);
  CHECK(rc == ES_OK && files_in_dir() == 1, "written: %d %s", rc, msg);
  rc = es_tiff_writer_open(path, 0, &o, &w, msg, sizeof msg);
  CHECK(rc == ES_ERR_OUTPUT && strstr(msg, "exists") && !w, "exists refused: %d %s", rc, msg);
  rc = es_tiff_writer_open(path, ES_WRITE_KEEP, &o, &w, msg, sizeof msg);
  if (rc == ES_OK) {
    for (int y = 0; y < 3; y++) es_tiff_writer_write_rows(w, y, 1, row, 40, msg, sizeof msg);
    rc = es_tiff_writer_close(&w, 1, msg, sizeof msg);
  }
  CHECK(rc == ES_WRITE_KEPT && files_in_dir() == 1, "-n keeps it: %d %s", rc, msg);
  rc = es_tiff_writer_open(path, 1, &o, &w, msg, sizeof msg);
  for (int y = 0; y < 3 && rc == ES_OK; y++) rc = es_tiff_writer_write_rows(w, y, 1, row, 40, msg, sizeof msg);
  rc = es_tiff_writer_close(&w, rc == ES_OK, msg, sizeof msg);
  CHECK(rc == ES_OK && files_in_dir() == 1, "-y replaces it: %d %s", rc, msg);
  unlink(path);
  CHECK(es_tiff_writer_close(NULL, 1, msg, sizeof msg) == ES_OK, "close(NULL)");
}

int main(void) {
  es_test_seed("test_tiff_io");
  snprintf(g_dir, sizeof g_dir, "/tmp/es_tiff_io_%d", (int)getpid());
  mkdir(g_dir, 0700);
  const int kinds[] = {ES_PIX_NONE, ES_PIX_GRAY8, ES_PIX_GRAY16, ES_PIX_RGB24};
  for (int k = 0; k < 4; k++) {
    round_trip(kinds[k], 300, 517, 1, 0, 0);   /* across tile edges both ways */
    round_trip(kinds[k], 1, 1, 2, 16, 0);      /* a one-pixel stack, tiles of 16 */
    round_trip(kinds[k], 256, 256, 3, 0, 1);   /* exactly one tile, BigTIFF asked for */
    round_trip(kinds[k], 10, 7, 1, 0, 0);      /* far smaller than its one 256^2 tile */
  }
  hand_made();
  atomic_out();
  rmdir(g_dir);
  return es_test_done("test_tiff_io");
}
