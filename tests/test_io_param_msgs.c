/*
 * test_io_param_msgs.c - io/'s messages about a parameter name the parameter as the library
 * spells it (core/params.c: max_pixels, band, band_rows, level, raw, codec, preset, crf,
 * pix_fmt, format), never a program's flag (issue 26): each one triggered for real - a PNG, a
 * TIFF, a PGM and a slide over max_pixels, a band the image has not, float32 in bands, a slide
 * level it has not, a bad raw spec, raw and file frames over max_pixels, and each refusal of
 * a video encoder's option - and compared whole. tools/cli_msg.c turns the names into flags;
 * tests/test_cli_param_msgs.sh checks the CLI's lines for the same cases.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <unistd.h>
#ifdef ES_HAVE_FFMPEG
#include <libavcodec/avcodec.h>
#endif

#include "entropy_stream.h"
#include "es_band_stage.h"
#include "es_io.h"
#include "es_tiff.h"
#include "es_test.h"

static char dir[] = "/tmp/test_io_param_msgs-XXXXXX";

/* libx265 3.5 leaks about 1 KB of its own at every encoder it opens (ffmpeg's too; see
 * test_cli_video.sh): LeakSanitizer, in the sanitizer build, does not count what was
 * allocated inside libx265. Unused elsewhere. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libx265.so\n"; }

/* msg is the library's whole message want, names no flag, and mentions param as a word. */
static void said(const char *what, int rc, int want_rc, const char *msg, const char *want,
                 const char *param) {
  CHECK(rc == want_rc, "%s: status %d, want %d (%s)", what, rc, want_rc, msg);
  CHECK(!strstr(msg, "--"), "%s: \"%s\" names a flag", what, msg);
  CHECK(!strcmp(msg, want), "%s: \"%s\", want \"%s\"", what, msg, want);
  const char *p = strstr(msg, param);
  CHECK(p && (p == msg || p[-1] == ' ' || p[-1] == '('), "%s: \"%s\" does not name %s", what,
        msg, param);
}

static int dest_fn(void *user, int width, int height, int depth, void **dst, size_t *stride,
                   char *msg, size_t len) {
  (void)user, (void)width, (void)height, (void)depth, (void)dst, (void)stride;
  snprintf(msg, len, "the destination was asked for memory");
  return ES_ERR_INTERNAL;
}

/* A TIFF of w x h, spp samples of `bits` (32: float), in strips or tw x tw tiles (tw > 0). */
static int write_tiff(const char *path, int w, int h, int spp, int bits, int tw) {
  TIFF *t = TIFFOpen(path, "w");
  if (!t) return -1;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, bits == 32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp == 3 && tw ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  const size_t px = (size_t)spp * (bits / 8);
  unsigned char *buf = calloc((size_t)(tw ? tw * tw : w), px);
  int ok = buf != NULL;
  if (ok && tw) {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, tw);
    TIFFSetField(t, TIFFTAG_TILELENGTH, tw);
    for (int y = 0; ok && y < h; y += tw)
      for (int x = 0; ok && x < w; x += tw) {
        memset(buf, (x + y) & 255, (size_t)tw * tw * px);
        ok = TIFFWriteTile(t, buf, (uint32_t)x, (uint32_t)y, 0, 0) >= 0;
      }
  } else if (ok) {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, h);
    for (int y = 0; ok && y < h; y++) ok = TIFFWriteScanline(t, buf, (uint32_t)y, 0) >= 0;
  }
  free(buf);
  TIFFClose(t);
  return ok ? 0 : -1;
}

static void test_stills(void) {
  char path[512], msg[256], want[256];
  es_image img;
  /* PNG: 7 x 5 = 35 pixels over 34 */
  snprintf(path, sizeof path, "%s/g.png", dir);
  unsigned char px[35] = {0};
  int rc = es_png_write(path, 1, 7, 5, ES_PIX_GRAY8, px, 0, msg, sizeof msg);
  CHECK(rc == ES_OK, "png write: %s", msg);
  rc = es_png_read_to(path, 34, dest_fn, NULL, &img, NULL, msg, sizeof msg);
  said("png", rc, ES_ERR_INPUT, msg, "image is 7 x 5 = 35 pixels, more than max_pixels 34",
       "max_pixels");
  /* TIFF: 9 x 4 over 35; a band it has not; float32 in bands */
  snprintf(path, sizeof path, "%s/g.tif", dir);
  CHECK(write_tiff(path, 9, 4, 3, 8, 0) == 0, "tiff write");
  es_tiff *t = NULL;
  rc = es_tiff_open(path, 35, &t, NULL, msg, sizeof msg);
  said("tiff", rc, ES_ERR_INPUT, msg, "image is 9 x 4 = 36 pixels, more than max_pixels 35",
       "max_pixels");
  es_tiff_close(&t);
  for (int from = 0; from < 2; from++) { /* es_tiff_read_rows, then the band source */
    es_band_source_opts bo = {INT64_C(1) << 31, 3, -1, NULL};
    es_band_source s;
    es_band_info bi;
    unsigned char row[64];
    es_tiff_info ti;
    if (from == 0) {
      rc = es_tiff_open(path, INT64_C(1) << 31, &t, &ti, msg, sizeof msg);
      CHECK(rc == ES_OK, "tiff open: %s", msg);
      if (rc == ES_OK) rc = es_tiff_read_rows(t, 0, 1, 3, row, sizeof row, msg, sizeof msg);
      es_tiff_close(&t);
    } else {
      rc = es_band_source_tiff(&s, path, &bo);
      CHECK(rc == ES_OK, "band source: %d", rc);
      if (rc == ES_OK) {
        rc = s.open(&s, &bi, msg, sizeof msg);
        s.close(&s);
      }
    }
    said(from ? "band source: band 3" : "tiff read: band 3", rc, ES_ERR_USAGE, msg,
         "no band 3: the image has 3 (band 0..2)", "band");
  }
  snprintf(path, sizeof path, "%s/f.tif", dir);
  CHECK(write_tiff(path, 4, 3, 1, 32, 0) == 0, "float tiff write");
  {
    es_band_source_opts bo = {INT64_C(1) << 31, 0, -1, NULL};
    es_band_source s;
    es_band_info bi;
    rc = es_band_source_tiff(&s, path, &bo);
    CHECK(rc == ES_OK, "band source: %d", rc);
    if (rc == ES_OK) {
      rc = s.open(&s, &bi, msg, sizeof msg);
      s.close(&s);
    }
    said("band source: float32", rc, ES_ERR_USAGE, msg,
         "band_rows: not for float32 samples (computed whole)", "band_rows");
  }
  /* A slide (a tiled TIFF, OpenSlide's generic-tiff): a level it has not; over max_pixels */
  if (es_slide_built()) {
    snprintf(path, sizeof path, "%s/s.tif", dir);
    CHECK(write_tiff(path, 64, 48, 3, 8, 16) == 0, "slide write");
    es_slide *sl = NULL;
    int w = 0, h = 0;
    rc = es_slide_open(path, 3, INT64_C(1) << 31, &sl, &w, &h, msg, sizeof msg);
    said("slide level 3", rc, ES_ERR_USAGE, msg, "level 3: the slide has levels 0..0", "level");
    es_slide_close(&sl);
    rc = es_slide_open(path, 0, 3071, &sl, &w, &h, msg, sizeof msg);
    said("slide max_pixels", rc, ES_ERR_INPUT, msg, "level 0 is 64 x 48, more than max_pixels 3071",
         "max_pixels");
    es_slide_close(&sl);
  } else {
    printf("no OpenSlide: the slide's messages not checked\n");
  }
  /* A PGM through libavcodec, over max_pixels before anything is decoded */
  if (es_video_built()) {
    snprintf(path, sizeof path, "%s/g.pgm", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
      fprintf(f, "P5 3000 2000 255\n");
      for (int i = 0; i < 64; i++) fputc(0, f);
      fclose(f);
    }
    rc = es_still_av_read_to(path, 5999999, dest_fn, NULL, &img, msg, sizeof msg);
    snprintf(want, sizeof want, "image is 3000 x 2000 = 6000000 pixels, more than max_pixels %d",
             5999999);
    if (strstr(msg, "has no pgm decoder")) /* a minimal FFmpeg (the GPU machine's) */
      printf("libavcodec without a PGM decoder: the PGM's message not checked\n");
    else
      said("pgm", rc, ES_ERR_INPUT, msg, want, "max_pixels");
  }
}

#ifdef ES_HAVE_FFMPEG
static void test_video_in(void) {
  char path[512], msg[256];
  es_video_in *in = NULL;
  es_video_info info;
  es_video_in_opts o;
  memset(&o, 0, sizeof o);
  o.max_pixels = INT64_C(1) << 31;
  o.raw = "gray8:0x5";
  int rc = es_video_in_open(&in, "-", &o, &info, msg, sizeof msg);
  said("raw spec", rc, ES_ERR_USAGE, msg,
       "raw gray8:0x5: expected gray8:WxH[@FPS] or gray16le:WxH[@FPS]", "raw");
  es_video_in_close(&in);
  o.raw = "gray8:100x100";
  o.max_pixels = 9999;
  rc = es_video_in_open(&in, "-", &o, &info, msg, sizeof msg);
  said("raw max_pixels", rc, ES_ERR_INPUT, msg, "frame size 100x100 exceeds max_pixels 9999",
       "max_pixels");
  es_video_in_close(&in);
  const char *src = getenv("ES_SRC");
  snprintf(path, sizeof path, "%s/samples/clip.mp4", src ? src : ".");
  o.raw = NULL;
  o.max_pixels = 1000;
  rc = es_video_in_open(&in, path, &o, &info, msg, sizeof msg);
  said("clip max_pixels", rc, ES_ERR_INPUT, msg, "frame size 320x240 exceeds max_pixels 1000",
       "max_pixels");
  es_video_in_close(&in);
}

/* Opens a 64x48 heat video with codec, preset, crf and pix_fmt, and writes one frame. */
static int encode(const char *name, const char *codec, const char *preset, int crf, int format,
                  int pix_fmt, char *msg, size_t len) {
  char path[512];
  es_video_out_opts o;
  memset(&o, 0, sizeof o);
  o.width = 64, o.height = 48, o.fps_num = 25, o.fps_den = 1, o.tb_num = 1, o.tb_den = 25;
  o.format = format, o.codec = codec, o.crf = crf, o.preset = preset, o.pix_fmt = pix_fmt;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  es_video_out *v = NULL;
  *msg = 0;
  int rc = es_video_out_open(&v, path, &o, msg, len);
  if (rc != ES_OK) return rc;
  static uint8_t plane[3][64 * 48 * 6];
  es_planes pl = {{plane[0], plane[1], plane[2]}, {64 * 6, 64 * 6, 64 * 6}};
  rc = es_video_out_write(v, &pl, NULL, 0, 0, msg, len);
  int crc = es_video_out_close(&v, rc == ES_OK, rc == ES_OK ? msg : NULL, len);
  CHECK(access(path, F_OK) != 0 || rc == ES_OK, "%s: left behind after a refusal", name);
  return rc < 0 ? rc : crc;
}

static void test_video_out(void) {
  char msg[256];
  int rc = encode("a.mkv", "nosuch", NULL, -1, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
  said("codec", rc, ES_ERR_USAGE, msg, "codec nosuch: no such video encoder in libavcodec",
       "codec");
  rc = encode("b.mkv", NULL, NULL, -1, ES_PIX_GRAY8, ES_PIX_YUV420P, msg, sizeof msg);
  said("pix_fmt gray", rc, ES_ERR_USAGE, msg, "pix_fmt applies to heat video only (format heat)",
       "pix_fmt");
  if (avcodec_find_encoder_by_name("mpeg4")) {
    rc = encode("c.mp4", "mpeg4", NULL, -1, ES_PIX_RGB24, ES_PIX_YUV444P, msg, sizeof msg);
    said("pix_fmt mpeg4", rc, ES_ERR_USAGE, msg, "pix_fmt yuv444p: encoder mpeg4 does not take it",
         "pix_fmt");
    rc = encode("d.mp4", "mpeg4", NULL, 20, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("crf mpeg4", rc, ES_ERR_USAGE, msg, "crf: encoder mpeg4 has no crf option", "crf");
  }
  if (avcodec_find_encoder_by_name("libx264")) {
    rc = encode("e.mkv", "libx264", "warp9", -1, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("preset x264", rc, ES_ERR_USAGE, msg,
         "preset warp9: not a preset of encoder libx264 (ultrafast, superfast, veryfast, faster, "
         "fast, medium, slow, slower, veryslow, placebo)",
         "preset");
  }
  if (avcodec_find_encoder_by_name("libx265")) {
    rc = encode("f.mkv", "libx265", NULL, 63, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("crf x265", rc, ES_ERR_USAGE, msg, "crf 63: refused by encoder libx265", "crf");
    rc = encode("g.mkv", "libx265", "warp9", -1, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("preset x265", rc, ES_ERR_USAGE, msg, "preset warp9: not a preset of encoder libx265",
         "preset");
    rc = encode("h.mkv", "libx265", "warp9", 20, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("preset crf x265", rc, ES_ERR_USAGE, msg,
         "preset warp9 or crf 20: refused by encoder libx265", "preset");
  } else {
    printf("no libx265: the refusals of a preset or crf at open not checked\n");
  }
  const AVCodec *va = avcodec_find_encoder_by_name("h264_vaapi");
  if (va && va->pix_fmts && va->pix_fmts[0] == AV_PIX_FMT_VAAPI) {
    rc = encode("i.mkv", "h264_vaapi", NULL, -1, ES_PIX_RGB24, ES_PIX_NONE, msg, sizeof msg);
    said("codec vaapi", rc, ES_ERR_USAGE, msg,
         "codec h264_vaapi: the encoder takes only vaapi frames, which cannot be made here",
         "codec");
  }
}
#endif

int main(void) {
  if (!mkdtemp(dir)) return 1;
  test_stills();
#ifdef ES_HAVE_FFMPEG
  if (es_video_built()) {
    test_video_in();
    test_video_out();
  }
#endif
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return es_test_done("test_io_param_msgs");
}
