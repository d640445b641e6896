/*
 * test_io_png.c - PNG input of every kind against the SPEC section 1 grey rule computed
 * here, and write -> read round trips of the three output formats.
 *
 * Test PNGs are made with libpng in this file (each colour type and bit depth, palettes
 * with and without tRNS, Adam7, odd sizes, random content), decoded through es_png_read_mem
 * and es_png_read, and compared sample for sample with the expected grey.
 */
#include <inttypes.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "es_io.h"
#include "es_test.h"

typedef struct membuf {
  uint8_t *p;
  size_t n, cap;
} membuf;

static void mem_write(png_structp png, png_bytep d, size_t n) {
  membuf *m = png_get_io_ptr(png);
  if (m->n + n > m->cap) {
    m->cap = (m->n + n) * 2;
    m->p = realloc(m->p, m->cap);
    if (!m->p) abort();
  }
  memcpy(m->p + m->n, d, n);
  m->n += n;
}
static void mem_flush(png_structp png) { (void)png; }

/* A test image: samples[y][x][c] as integers of the stored bit depth (palette: indices). */
typedef struct timg {
  int w, h, ctype, depth, interlace, channels;
  uint16_t *s; /* w*h*channels */
  png_color pal[256];
  uint8_t trans[256];
  int npal, ntrans;
} timg;

static int ctype_channels(int ctype) {
  switch (ctype) {
  case PNG_COLOR_TYPE_GRAY: return 1;
  case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
  case PNG_COLOR_TYPE_RGB: return 3;
  case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
  default: return 1; /* palette */
  }
}

static void timg_random(timg *t, int w, int h, int ctype, int depth, int interlace) {
  memset(t, 0, sizeof *t);
  t->w = w, t->h = h, t->ctype = ctype, t->depth = depth, t->interlace = interlace;
  t->channels = ctype_channels(ctype);
  t->s = malloc(sizeof(uint16_t) * (size_t)w * h * t->channels);
  if (ctype == PNG_COLOR_TYPE_PALETTE) {
    t->npal = es_test_range(1, 1 << depth);
    for (int i = 0; i < t->npal; i++) {
      t->pal[i].red = (uint8_t)es_test_rand();
      t->pal[i].green = (uint8_t)es_test_rand();
      t->pal[i].blue = (uint8_t)es_test_rand();
    }
    t->ntrans = (es_test_rand() & 1) ? es_test_range(1, t->npal) : 0;
    for (int i = 0; i < t->ntrans; i++) t->trans[i] = (uint8_t)es_test_rand();
  }
  if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_RGB) t->ntrans = (int)(es_test_rand() & 1);
  uint32_t maxv = ctype == PNG_COLOR_TYPE_PALETTE ? (uint32_t)t->npal : 1u << depth;
  /* mix of random samples and extremes so 0 and the maximum are always exercised */
  for (size_t i = 0; i < (size_t)w * h * t->channels; i++) {
    uint32_t r = (uint32_t)es_test_rand();
    t->s[i] = (uint16_t)((r & 7) == 0 ? 0 : (r & 7) == 1 ? maxv - 1 : (r >> 3) % maxv);
  }
}

static membuf timg_encode(const timg *t) {
  membuf m = {0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) abort();
  png_set_write_fn(png, &m, mem_write, mem_flush);
  png_set_IHDR(png, info, t->w, t->h, t->depth, t->ctype,
               t->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, 0, 0);
  if (t->ctype == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, t->pal, t->npal);
    if (t->ntrans) png_set_tRNS(png, info, t->trans, t->ntrans, NULL);
  } else if (t->ntrans) { /* grey or RGB colour key: must not change the grey either */
    png_color_16 key;
    memset(&key, 0, sizeof key);
    key.gray = t->s[0];
    key.red = t->s[0];
    key.green = t->channels >= 3 ? t->s[1] : 0;
    key.blue = t->channels >= 3 ? t->s[2] : 0;
    png_set_tRNS(png, info, NULL, 0, &key);
  }
  size_t rowbytes = ((size_t)t->w * t->channels * t->depth + 7) / 8;
  uint8_t *img = calloc(rowbytes, t->h);
  png_bytep *rows = malloc(sizeof(png_bytep) * t->h);
  for (int y = 0; y < t->h; y++) {
    uint8_t *r = img + (size_t)y * rowbytes;
    rows[y] = r;
    for (int i = 0; i < t->w * t->channels; i++) {
      uint16_t v = t->s[(size_t)y * t->w * t->channels + i];
      if (t->depth == 16) {
        r[2 * i] = (uint8_t)(v >> 8);
        r[2 * i + 1] = (uint8_t)v;
      } else if (t->depth == 8) {
        r[i] = (uint8_t)v;
      } else { /* packed, most significant bits first */
        int per = 8 / t->depth;
        r[i / per] |= (uint8_t)(v << (8 - t->depth * (i % per + 1)));
      }
    }
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  free(img);
  return m;
}

/* SPEC section 1, written out independently of io/png.c. */
static uint32_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return (299 * r + 587 * g + 114 * b + 500) / 1000;
}
static uint32_t expected(const timg *t, int x, int y) {
  const uint16_t *p = t->s + ((size_t)y * t->w + x) * t->channels;
  switch (t->ctype) {
  case PNG_COLOR_TYPE_PALETTE: {
    png_color c = t->pal[p[0]];
    return luma(c.red, c.green, c.blue);
  }
  case PNG_COLOR_TYPE_RGB:
  case PNG_COLOR_TYPE_RGB_ALPHA: return luma(p[0], p[1], p[2]);
  default: /* grey, grey+alpha: grey, low depths scaled by bit replication */
    if (t->depth == 1) return p[0] * 255u;
    if (t->depth == 2) return p[0] * 85u;
    if (t->depth == 4) return p[0] * 17u;
    return p[0];
  }
}

static int check_decoded(const timg *t, const es_image *img, const char *what) {
  int bad = 0, want_depth = t->depth == 16 ? 16 : 8;
  CHECK(img->width == t->w && img->height == t->h && img->depth == want_depth,
        "%s: got %dx%d depth %d, want %dx%d depth %d", what, img->width, img->height, img->depth,
        t->w, t->h, want_depth);
  if (img->width != t->w || img->height != t->h || img->depth != want_depth) return 1;
  for (int y = 0; y < t->h && bad < 5; y++)
    for (int x = 0; x < t->w && bad < 5; x++) {
      const uint8_t *row = (const uint8_t *)img->data + (size_t)y * img->stride;
      uint32_t got = want_depth == 16 ? ((const uint16_t *)row)[x] : row[x];
      uint32_t want = expected(t, x, y);
      if (got != want) {
        bad++;
        CHECK(got == want, "%s: pixel (%d,%d) = %u, want %u", what, x, y, got, want);
      }
    }
  return bad;
}

/* es_png_read_to's destination: rows padded by 8 bytes, or a refusal. */
typedef struct dest_buf {
  int refuse;
  int w, h, depth;
  void *p;
  size_t stride;
} dest_buf;

static int dest_alloc(void *user, int width, int height, int depth, void **dst,
                      size_t *dst_stride, char *msg, size_t len) {
  dest_buf *d = user;
  d->w = width;
  d->h = height;
  d->depth = depth;
  if (d->refuse) {
    snprintf(msg, len, "refused");
    return ES_ERR_NOMEM;
  }
  d->stride = (size_t)width * (size_t)(depth / 8) + 8;
  d->p = malloc(d->stride * (size_t)height);
  *dst = d->p;
  *dst_stride = d->stride;
  return d->p ? ES_OK : ES_ERR_NOMEM;
}

static void test_kind(int ctype, int depth, int interlace, const char *tmpdir, int n) {
  timg t;
  int w = es_test_range(1, 97), h = es_test_range(1, 67);
  if (n == 0) w = 1, h = 1;
  timg_random(&t, w, h, ctype, depth, interlace);
  membuf m = timg_encode(&t);
  char what[128], msg[256] = "", path[512];
  snprintf(what, sizeof what, "ctype %d depth %d%s %dx%d%s", ctype, depth,
           interlace ? " adam7" : "", w, h, t.ntrans ? " tRNS" : "");

  es_image img;
  void *data = (void *)1;
  es_png_info info;
  memset(&info, 0xA5, sizeof info);
  int st = es_png_read_mem(m.p, m.n, 0, &img, &data, &info, msg, sizeof msg);
  CHECK(st == ES_OK, "%s: read_mem: %d %s", what, st, msg);
  if (st == ES_OK) {
    check_decoded(&t, &img, what);
    CHECK(img.data == data, "%s: img.data is not *data", what);
    CHECK(info.width == w && info.height == h && info.bit_depth == depth &&
              info.color_type == ctype && info.interlaced == interlace,
          "%s: info %d x %d depth %d ctype %d interlaced %d", what, info.width, info.height,
          info.bit_depth, info.color_type, info.interlaced);
    free(data);
  }

  /* the same bytes through the file reader */
  snprintf(path, sizeof path, "%s/k.png", tmpdir);
  FILE *f = fopen(path, "wb");
  fwrite(m.p, 1, m.n, f);
  fclose(f);
  data = (void *)1;
  st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_OK, "%s: read file: %d %s", what, st, msg);
  if (st == ES_OK) {
    check_decoded(&t, &img, what);
    free(data);
  }
  /* ... and into a caller's buffer with padded rows (es_png_read_to), or a refusing one */
  {
    dest_buf d = {0};
    st = es_png_read_to(path, 0, dest_alloc, &d, &img, NULL, msg, sizeof msg);
    CHECK(st == ES_OK && d.w == w && d.h == h && d.depth == (depth == 16 ? 16 : 8) &&
              img.data == d.p && img.stride == d.stride,
          "%s: read_to: %d %s (dest %dx%d depth %d)", what, st, msg, d.w, d.h, d.depth);
    if (st == ES_OK) check_decoded(&t, &img, what);
    free(d.p);
    d.refuse = 1;
    st = es_png_read_to(path, 0, dest_alloc, &d, &img, NULL, msg, sizeof msg);
    CHECK(st == ES_ERR_NOMEM && !strcmp(msg, "refused"), "%s: read_to refused: %d %s", what,
          st, msg);
  }
  /* max_pixels exactly at the size passes, one below fails */
  st = es_png_read_mem(m.p, m.n, (int64_t)w * h, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_OK, "%s: max_pixels = w*h: %d %s", what, st, msg);
  if (st == ES_OK) free(data);
  if ((int64_t)w * h > 1) {
    char want[160]; /* the library names its parameter (max_pixels), not a flag */
    snprintf(want, sizeof want, "image is %d x %d = %" PRId64 " pixels, more than max_pixels %" PRId64,
             (int)w, (int)h, (int64_t)w * h, (int64_t)w * h - 1);
    st = es_png_read_mem(m.p, m.n, (int64_t)w * h - 1, &img, &data, NULL, msg, sizeof msg);
    CHECK(st == ES_ERR_INPUT && !strcmp(msg, want), "%s: max_pixels = w*h-1: %d '%s', want '%s'",
          what, st, msg, want);
    CHECK(data == NULL, "%s: data not NULL after failure", what);
  }
  /* cut short anywhere: an input error for every kind and interlace mode, never a crash */
  for (int k = 0; k < 3; k++) {
    size_t cut = 1 + es_test_rand() % (m.n - 1);
    data = (void *)1;
    st = es_png_read_mem(m.p, cut, 0, &img, &data, NULL, msg, sizeof msg);
    CHECK(st == ES_ERR_INPUT && data == NULL, "%s: cut to %zu of %zu: %d %s", what, cut, m.n, st,
          msg);
  }
  free(m.p);
  free(t.s);
}

/* Reads a PNG written by es_png_write back with plain libpng (no luma: RGB stays RGB). */
static int read_plain(const char *path, int *w, int *h, int *ctype, int *depth, uint8_t **out,
                      size_t *rowbytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return -1;
  }
  png_init_io(png, f);
  png_read_info(png, info);
  *w = (int)png_get_image_width(png, info);
  *h = (int)png_get_image_height(png, info);
  *ctype = png_get_color_type(png, info);
  *depth = png_get_bit_depth(png, info);
  *rowbytes = png_get_rowbytes(png, info);
  *out = malloc(*rowbytes * *h);
  for (int y = 0; y < *h; y++) png_read_row(png, *out + (size_t)y * *rowbytes, NULL);
  png_read_end(png, NULL);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  return 0;
}

static void test_write(int pixfmt, const char *tmpdir) {
  int w = es_test_range(1, 131), h = es_test_range(1, 77);
  size_t bpp = pixfmt == ES_PIX_RGB24 ? 3 : pixfmt == ES_PIX_GRAY16 ? 2 : 1;
  size_t pad = (size_t)es_test_range(0, 9) * 2; /* strides wider than the row */
  size_t stride = bpp * w + pad;
  uint8_t *buf = malloc(stride * h);
  for (size_t i = 0; i < stride * h; i++) buf[i] = (uint8_t)es_test_rand();
  char path[512], msg[256] = "";
  snprintf(path, sizeof path, "%s/w%d.png", tmpdir, pixfmt);
  int st = es_png_write(path, 0, w, h, pixfmt, buf, stride, msg, sizeof msg);
  CHECK(st == ES_OK, "write fmt %d %dx%d: %d %s", pixfmt, w, h, st, msg);

  int rw, rh, ct, dp;
  uint8_t *px = NULL;
  size_t rb;
  CHECK(read_plain(path, &rw, &rh, &ct, &dp, &px, &rb) == 0, "fmt %d: libpng cannot read it",
        pixfmt);
  if (px) {
    int want_ct = pixfmt == ES_PIX_RGB24 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
    int want_dp = pixfmt == ES_PIX_GRAY16 ? 16 : 8;
    CHECK(rw == w && rh == h && ct == want_ct && dp == want_dp,
          "fmt %d: read back %dx%d ctype %d depth %d", pixfmt, rw, rh, ct, dp);
    int bad = 0;
    for (int y = 0; y < h && rw == w && rh == h && !bad; y++)
      for (int x = 0; x < w; x++) {
        const uint8_t *s = buf + (size_t)y * stride, *d = px + (size_t)y * rb;
        if (pixfmt == ES_PIX_GRAY16) {
          uint16_t v = ((const uint16_t *)s)[x]; /* native-endian in, big-endian in the file */
          if (d[2 * x] != v >> 8 || d[2 * x + 1] != (v & 255)) bad = 1;
        } else if (memcmp(s + bpp * x, d + bpp * x, bpp)) {
          bad = 1;
        }
        if (bad) {
          CHECK(!bad, "fmt %d: pixel (%d,%d) differs", pixfmt, x, y);
          break;
        }
      }
    free(px);
  }
  /* grey outputs also through es_png_read: the identity */
  if (pixfmt != ES_PIX_RGB24) {
    es_image img;
    void *data = NULL;
    st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
    CHECK(st == ES_OK, "fmt %d: es_png_read: %s", pixfmt, msg);
    for (int y = 0; st == ES_OK && y < h; y++)
      if (memcmp(buf + (size_t)y * stride, (const uint8_t *)img.data + (size_t)y * img.stride,
                 bpp * w)) {
        CHECK(0, "fmt %d: row %d differs after es_png_read", pixfmt, y);
        break;
      }
    free(data);
  }
  /* a second write without overwrite is refused and leaves the file as it was */
  st = es_png_write(path, 0, 1, 1, pixfmt, buf, 0, msg, sizeof msg);
  CHECK(st == ES_ERR_OUTPUT && strstr(msg, "exists"), "fmt %d: no-overwrite: %d %s", pixfmt, st,
        msg);
  st = es_png_write(path, 1, 1, 1, pixfmt, buf, 0, msg, sizeof msg);
  CHECK(st == ES_OK, "fmt %d: overwrite: %d %s", pixfmt, st, msg);
  if (read_plain(path, &rw, &rh, &ct, &dp, &px, &rb) == 0) {
    CHECK(rw == 1 && rh == 1, "fmt %d: overwrite left %dx%d", pixfmt, rw, rh);
    free(px);
  }
  unlink(path);
  free(buf);
}

int main(void) {
  es_test_seed("test_io_png");
  char tmpdir[] = "/tmp/es_test_io_png.XXXXXX";
  if (!mkdtemp(tmpdir)) return 1;
  static const struct {
    int ctype, depth;
  } kinds[] = {
      {PNG_COLOR_TYPE_GRAY, 1},       {PNG_COLOR_TYPE_GRAY, 2},      {PNG_COLOR_TYPE_GRAY, 4},
      {PNG_COLOR_TYPE_GRAY, 8},       {PNG_COLOR_TYPE_GRAY, 16},     {PNG_COLOR_TYPE_GRAY_ALPHA, 8},
      {PNG_COLOR_TYPE_GRAY_ALPHA, 16}, {PNG_COLOR_TYPE_RGB, 8},       {PNG_COLOR_TYPE_RGB, 16},
      {PNG_COLOR_TYPE_RGB_ALPHA, 8},  {PNG_COLOR_TYPE_RGB_ALPHA, 16}, {PNG_COLOR_TYPE_PALETTE, 1},
      {PNG_COLOR_TYPE_PALETTE, 2},    {PNG_COLOR_TYPE_PALETTE, 4},   {PNG_COLOR_TYPE_PALETTE, 8},
  };
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (int il = 0; il < 2; il++)
      for (int n = 0; n < 4; n++) test_kind(kinds[k].ctype, kinds[k].depth, il, tmpdir, n);
  for (int n = 0; n < 3; n++) {
    test_write(ES_PIX_RGB24, tmpdir);
    test_write(ES_PIX_GRAY8, tmpdir);
    test_write(ES_PIX_GRAY16, tmpdir);
  }
  /* the sample images decode as samples/README.md says */
  const char *src = getenv("ES_SRC");
  static const struct {
    const char *name;
    int w, h, depth, ctype, interlaced;
  } samples[] = {{"camera.png", 512, 512, 8, PNG_COLOR_TYPE_GRAY, 0},
                 {"chelsea.png", 451, 300, 8, PNG_COLOR_TYPE_RGB, 0},
                 {"moon16.png", 383, 257, 16, PNG_COLOR_TYPE_GRAY, 0},
                 {"coffee_rgba.png", 301, 199, 8, PNG_COLOR_TYPE_RGB_ALPHA, 0},
                 {"chelsea_palette_adam7.png", 227, 151, 8, PNG_COLOR_TYPE_PALETTE, 1}};
  for (size_t i = 0; src && i < sizeof samples / sizeof samples[0]; i++) {
    char p[1024], m[256];
    snprintf(p, sizeof p, "%s/samples/%s", src, samples[i].name);
    es_image img;
    es_png_info info;
    void *data = NULL;
    int st = es_png_read(p, 0, &img, &data, &info, m, sizeof m);
    CHECK(st == ES_OK && img.width == samples[i].w && img.height == samples[i].h &&
              img.depth == samples[i].depth && info.color_type == samples[i].ctype &&
              info.interlaced == samples[i].interlaced,
          "sample %s: %d %s", samples[i].name, st, m);
    free(data);
  }
  char msg[256];
  CHECK(es_png_write("x.png", 0, 4, 4, ES_PIX_YUV420P, (const uint8_t *)"", 0, msg, sizeof msg) !=
            ES_OK,
        "YUV420P accepted by es_png_write");
  char v[512];
  int n = es_io_versions(v, sizeof v);
  printf("es_io_versions: %s\n", v);
  CHECK(n > 0 && strstr(v, "libpng 1.") != NULL, "es_io_versions: %s", v);
  CHECK(es_io_versions(NULL, 0) == n, "es_io_versions(NULL, 0) = %d, not %d",
        es_io_versions(NULL, 0), n);
  char small[8];
  CHECK(es_io_versions(small, sizeof small) == n && strlen(small) == 7, "truncation");
  remove(tmpdir);
  return es_test_done("test_io_png");
}
