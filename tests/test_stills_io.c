/*
 * test_stills_io.c - the still dispatch's library calls (issue 28): es_still_ext_ok and the
 * --ext list check; es_still_read_to's destination contract (called once with the size and
 * depth, never for a file refused by max_pixels, its refusal returned, any stride taken,
 * odd addresses of 16-bit rows included) on JPEGs written here by libjpeg and on 16-bit PGM
 * and PPM (libav), whose values are known exactly: the PGM's samples as stored, the PPM's the
 * luma rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "es_io.h"
#include "es_test.h"

typedef struct dest_rec {
  int calls, width, height, depth;
  size_t stride;
  uint8_t *buf;  /* owned */
  size_t offset; /* where the image starts in buf (1: odd addresses) */
  int refuse;    /* return this status instead */
} dest_rec;

static int dest_fn(void *user, int width, int height, int depth, void **dst, size_t *dst_stride,
                   char *msg, size_t len) {
  dest_rec *d = user;
  d->calls++;
  d->width = width;
  d->height = height;
  d->depth = depth;
  if (d->refuse) {
    snprintf(msg, len, "refused by the destination");
    return d->refuse;
  }
  d->stride = (size_t)width * (depth / 8) + 7; /* odd: rows start at odd offsets too */
  free(d->buf);
  d->buf = calloc(d->stride * (size_t)height + d->offset, 1);
  if (!d->buf) return ES_ERR_NOMEM;
  *dst = d->buf + d->offset;
  *dst_stride = d->stride;
  return ES_OK;
}

/* A grey JPEG of a gradient, quality 100, written with libjpeg. */
static int write_jpeg(const char *path, int w, int h) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  FILE *fp = fopen(path, "wb");
  uint8_t *row = malloc((size_t)w);
  if (!fp || !row) return -1;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, fp);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    for (int x = 0; x < w; x++)
      row[x] = (uint8_t)((x * 7 + c.next_scanline * 3) & 255);
    JSAMPROW r = row;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  return fclose(fp);
}

static void test_ext(void) {
  CHECK(es_still_ext_ok("a.png", NULL) == 1, "a.png");
  CHECK(es_still_ext_ok("dir.x/A.PNG", NULL) == 1, "A.PNG");
  CHECK(es_still_ext_ok("a.JpEg", NULL) == 1, "a.JpEg");
  CHECK(es_still_ext_ok("a.txt", NULL) == 0, "a.txt");
  CHECK(es_still_ext_ok(".png", NULL) == 0, ".png is a hidden name without an extension");
  CHECK(es_still_ext_ok("png", NULL) == 0, "no extension");
  CHECK(es_still_ext_ok("a.png.gz", NULL) == 0, "a.png.gz");
  CHECK(es_still_ext_ok("a.jpg", "png,tif") == 0, "--ext png,tif leaves a.jpg out");
  CHECK(es_still_ext_ok("a.JPG", "png,jpg") == 1, "--ext png,jpg takes a.JPG");
  CHECK(es_still_ext_ok("a.jpg", ".jpg") == 1, "--ext .jpg");
  CHECK(es_still_ext_ok("a.jp", "jpg") == 0, "a prefix is not a match");
  CHECK(es_still_ext_ok("a.webp", NULL) == es_video_built(), "a.webp: with FFmpeg only");
  char msg[256];
  CHECK(es_still_filter_check("png,JPG", msg, sizeof msg) == ES_OK, "png,JPG: %s", msg);
  CHECK(es_still_filter_check("png,gif", msg, sizeof msg) == ES_ERR_USAGE && strstr(msg, "gif"),
        "gif refused: %s", msg);
  CHECK(es_still_filter_check("", msg, sizeof msg) == ES_ERR_USAGE, "empty list refused");
  CHECK(es_still_filter_check("png,,jpg", msg, sizeof msg) == ES_ERR_USAGE, "empty item refused");
  char exts[512];
  CHECK(es_still_exts(exts, sizeof exts) == ES_OK && strstr(exts, "png") && strstr(exts, "jpg"),
        "es_still_exts: %s", exts);
}

static void test_jpeg(const char *dir) {
  char path[512], msg[256] = "";
  es_image img;
  dest_rec d;
  snprintf(path, sizeof path, "%s/g.jpg", dir);
  CHECK(write_jpeg(path, 37, 23) == 0, "cannot write %s", path);
  memset(&d, 0, sizeof d);
  d.offset = 1;
  int rc = es_still_read_to(path, 0, dest_fn, &d, &img, msg, sizeof msg);
  CHECK(rc == ES_OK, "read: %d %s", rc, msg);
  CHECK(d.calls == 1 && d.width == 37 && d.height == 23 && d.depth == 8, "dest %d: %dx%d@%d",
        d.calls, d.width, d.height, d.depth);
  CHECK(img.width == 37 && img.height == 23 && img.depth == 8 && img.stride == d.stride &&
            img.data == d.buf + 1,
        "image %dx%d@%d stride %zu", img.width, img.height, img.depth, img.stride);
  /* quality 100 of a smooth gradient: within a step or two of what was written */
  int maxerr = 0;
  for (int y = 0; y < 23 && rc == ES_OK; y++)
    for (int x = 0; x < 37; x++) {
      int want = (x * 7 + y * 3) & 255, got = d.buf[1 + (size_t)y * d.stride + x];
      if (abs(got - want) > maxerr) maxerr = abs(got - want);
    }
  CHECK(maxerr <= 4, "decoded gradient off by %d", maxerr);
  /* max_pixels: refused before the destination is asked for memory */
  d.calls = 0;
  rc = es_still_read_to(path, 37 * 23 - 1, dest_fn, &d, &img, msg, sizeof msg);
  CHECK(rc == ES_ERR_INPUT && d.calls == 0 && !strcmp(msg, "image is 37 x 23 = 851 pixels, more than max_pixels 850"),
        "max_pixels: %d, %d calls, %s", rc, d.calls, msg);
  /* the destination's refusal is the result */
  d.refuse = ES_ERR_NOMEM;
  rc = es_still_read_to(path, 0, dest_fn, &d, &img, msg, sizeof msg);
  CHECK(rc == ES_ERR_NOMEM && !strcmp(msg, "refused by the destination"), "refusal: %d %s", rc,
        msg);
  free(d.buf);
  /* a name no reader takes, and one that is not there */
  rc = es_still_read_to("/nonexistent/x.jpg", 0, dest_fn, &d, &img, msg, sizeof msg);
  CHECK(rc == ES_ERR_INPUT && strstr(msg, "cannot open"), "missing: %d %s", rc, msg);
  snprintf(path, sizeof path, "%s/notes.txt", dir);
  FILE *fp = fopen(path, "w");
  if (fp) fputs("text\n", fp), fclose(fp);
  rc = es_still_read_to(path, 0, dest_fn, &d, &img, msg, sizeof msg);
  CHECK(rc == ES_ERR_INPUT && strstr(msg, "not an image format"), "text: %d %s", rc, msg);
}

/* 16-bit PGM and PPM through libav: values known exactly, odd destination addresses. */
static void test_pnm16(const char *dir) {
  enum { W = 13, H = 5 };
  char path[512], msg[256] = "";
  es_image img;
  dest_rec d;
  for (int rgb = 0; rgb < 2; rgb++) {
    const int ch = rgb ? 3 : 1;
    uint16_t v[H][W][3];
    snprintf(path, sizeof path, "%s/x.%s", dir, rgb ? "ppm" : "pgm");
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL, "cannot write %s", path);
    if (!fp) return;
    fprintf(fp, "P%d %d %d 65535\n", rgb ? 6 : 5, W, H);
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < ch; c++) {
          v[y][x][c] = (uint16_t)(x * 4099 + y * 997 + c * 15013 + 1);
          fputc(v[y][x][c] >> 8, fp);
          fputc(v[y][x][c] & 255, fp);
        }
    fclose(fp);
    memset(&d, 0, sizeof d);
    d.offset = 1;
    int rc = es_still_read_to(path, 0, dest_fn, &d, &img, msg, sizeof msg);
    if (rc != ES_OK && strstr(msg, "has no") && strstr(msg, "decoder")) {
      /* a minimal libavcodec (the GPU machine's) without the PNM decoders */
      printf("test_stills_io: %s: skipped (%s)\n", path, msg);
      continue;
    }
    CHECK(rc == ES_OK && d.depth == 16 && img.depth == 16 && img.width == W && img.height == H,
          "%s: %d %s depth %d", path, rc, msg, d.depth);
    int bad = 0;
    for (int y = 0; y < H && rc == ES_OK; y++)
      for (int x = 0; x < W; x++) {
        uint16_t got;
        memcpy(&got, d.buf + 1 + (size_t)y * d.stride + 2 * (size_t)x, 2);
        uint32_t want =
            rgb ? (299u * v[y][x][0] + 587u * v[y][x][1] + 114u * v[y][x][2] + 500u) / 1000u
                : v[y][x][0];
        if (got != want && bad++ < 3)
          fprintf(stderr, "%s (%d,%d): %u, want %u\n", path, x, y, got, (unsigned)want);
      }
    CHECK(bad == 0, "%s: %d samples differ", path, bad);
    free(d.buf);
  }
}

int main(void) {
  char dir[] = "/tmp/test_stills_io-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_ext();
  test_jpeg(dir);
  if (es_video_built())
    test_pnm16(dir);
  else
    printf("no FFmpeg: the libav reader is not built, its checks skipped\n");
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  printf("test_stills_io: %d failure(s)\n", es_test_failures);
  return es_test_failures ? 1 : 0;
}
