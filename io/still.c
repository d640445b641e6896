/*
 * still.c - the still image dispatch (issue 28): which reader takes a file, by its first
 * bytes (PNG's signature, JPEG's SOI) and else by its extension, one table line a format; and
 * which names a directory batch takes (es_still_ext_ok, --ext).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "es_io.h"
#include "es_tiff.h"

/* Each reader in the shape the table takes; only the TIFF's uses the options. */
static int png_read(const char *path, int64_t max_pixels, const es_still_opts *o,
                    es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len) {
  (void)o;
  return es_png_read_to(path, max_pixels, dest, user, img, NULL, msg, len);
}

static int jpeg_read(const char *path, int64_t max_pixels, const es_still_opts *o,
                     es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len) {
  (void)o;
  return es_jpeg_read_to(path, max_pixels, dest, user, img, msg, len);
}

static int av_read(const char *path, int64_t max_pixels, const es_still_opts *o,
                   es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len) {
  (void)o;
  return es_still_av_read_to(path, max_pixels, dest, user, img, msg, len);
}

/* Page 0, in band o->band; its GeoTIFF tags where asked for and present, so that a map
 * written as TIFF carries the input's georeferencing. */
static int tiff_read(const char *path, int64_t max_pixels, const es_still_opts *o,
                     es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len) {
  es_tiff_info ti;
  int rc = es_tiff_read_to(path, 0, o->band, max_pixels, dest, user, img, &ti, msg, len);
  if (rc == ES_OK && o->geo && ti.has_geo && !*o->geo)
    rc = es_tiff_geo_load(path, 0, o->geo, msg, len);
  return rc;
}

#ifndef ES_HAVE_FFMPEG
/* Without FFmpeg the libav line is there (its extensions are known, and said to be unread by
 * this build) but reads nothing. */
int es_still_av_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                        es_image *img, char *msg, size_t len) {
  (void)path, (void)max_pixels, (void)dest, (void)user;
  memset(img, 0, sizeof *img);
  snprintf(msg, len, "built without FFmpeg: cannot read this image format");
  return ES_ERR_INPUT;
}
#endif

typedef int (*still_read_fn)(const char *path, int64_t max_pixels, const es_still_opts *o,
                             es_png_dest_fn dest, void *user, es_image *img, char *msg,
                             size_t len);

/* One line a format: its name, the magic its files start with (n bytes; 0: known by its
 * extension only), its extensions (lower case, space-separated) and its reader. */
typedef struct still_format {
  const char *name;
  const char *magic;
  size_t nmagic;
  const char *exts;
  still_read_fn read;
  int needs_ffmpeg;
} still_format;

static const still_format formats[] = {
    {"PNG", "\x89PNG\r\n\x1a\n", 8, "png", png_read, 0},
    {"JPEG", "\xff\xd8\xff", 3, "jpg jpeg jpe jfif", jpeg_read, 0},
    /* TIFF by its little-endian magic; a big-endian or BigTIFF one by its name. */
    {"TIFF", "II*\0", 4, "tif tiff", tiff_read, 0},
    /* Everything else libavcodec decodes as one picture, named by extension (image2's
     * table). GIF and APNG are left to the video reader: they are animations. */
    {"libav", NULL, 0,
     "webp bmp pgm ppm pbm pnm pam tga jp2 j2k j2c jpc qoi sgi rgb ras sun pcx xbm xwd",
     av_read, 1},
};
enum { NFORMATS = sizeof formats / sizeof formats[0] };

/* The extension of a name (after its last dot, not a leading one), or "". */
static const char *ext_of(const char *name) {
  const char *slash = strrchr(name, '/');
  const char *base = slash ? slash + 1 : name;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot + 1 : "";
}

/* Whether the space- or comma-separated list holds ext (any case). */
static int list_has(const char *list, const char *ext) {
  const size_t n = strlen(ext);
  if (!n) return 0;
  for (const char *p = list; *p;) {
    if (*p == '.') p++; /* --ext .png,.tif */
    size_t k = strcspn(p, " ,");
    if (k == n && !strncasecmp(p, ext, n)) return 1;
    p += k;
    p += strspn(p, " ,");
  }
  return 0;
}

static const still_format *by_ext(const char *name) {
  const char *ext = ext_of(name);
  for (int i = 0; i < NFORMATS; i++) {
    if (formats[i].needs_ffmpeg && !es_video_built()) continue;
    if (list_has(formats[i].exts, ext)) return &formats[i];
  }
  return NULL;
}

static const still_format *by_magic(const unsigned char *p, size_t n) {
  for (int i = 0; i < NFORMATS; i++)
    if (formats[i].nmagic && n >= formats[i].nmagic &&
        !memcmp(p, formats[i].magic, formats[i].nmagic))
      return &formats[i];
  return NULL;
}

/* The format of path: by its first bytes where it is a regular file that can be read (a FIFO
 * is never opened here: that would wait for a writer), else by its extension. */
static const still_format *format_of(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    unsigned char head[16];
    size_t n = 0;
    FILE *fp = fopen(path, "rb");
    if (fp) {
      n = fread(head, 1, sizeof head, fp);
      fclose(fp);
    }
    const still_format *f = by_magic(head, n);
    if (f) return f;
  }
  return by_ext(path);
}

int es_still_is(const char *path) { return format_of(path) != NULL; }

int es_still_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                     es_image *img, char *msg, size_t len) {
  return es_still_read_opt(path, max_pixels, NULL, dest, user, img, msg, len);
}

int es_still_read_opt(const char *path, int64_t max_pixels, const es_still_opts *o,
                      es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len) {
  static const es_still_opts none = {0, NULL};
  const still_format *f = format_of(path);
  if (!f) {
    memset(img, 0, sizeof *img);
    struct stat st;
    if (stat(path, &st) != 0)
      snprintf(msg, len, "cannot open: %s", strerror(errno));
    else
      snprintf(msg, len, "not an image format this build reads");
    return ES_ERR_INPUT;
  }
  return f->read(path, max_pixels, o ? o : &none, dest, user, img, msg, len);
}

int es_still_ext_ok(const char *name, const char *ext_filter) {
  const char *ext = ext_of(name);
  if (!by_ext(name)) return 0;
  return !ext_filter || list_has(ext_filter, ext);
}

int es_still_exts(char *buf, size_t len) {
  size_t used = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < NFORMATS; i++) {
    if (formats[i].needs_ffmpeg && !es_video_built()) continue;
    int n =
        snprintf(buf + used, len > used ? len - used : 0, "%s%s", used ? " " : "", formats[i].exts);
    if (n < 0) return ES_ERR_INTERNAL;
    used += (size_t)n;
  }
  return used < len ? ES_OK : ES_ERR_INTERNAL;
}

int es_still_filter_check(const char *ext_filter, char *msg, size_t len) {
  int any = 0;
  for (const char *p = ext_filter; *p;) {
    size_t k = strcspn(p, ",");
    char ext[32];
    if (k == 0 || k >= sizeof ext) {
      snprintf(msg, len, "expected extensions separated by commas (png,jpg)");
      return ES_ERR_USAGE;
    }
    memcpy(ext, p, k);
    ext[k] = 0;
    char name[40];
    snprintf(name, sizeof name, "x.%s", ext[0] == '.' ? ext + 1 : ext);
    if (!by_ext(name)) {
      snprintf(msg, len, "not an image format this build reads: %s", ext);
      return ES_ERR_USAGE;
    }
    any = 1;
    p += k;
    if (*p == ',') p++;
  }
  if (!any) {
    snprintf(msg, len, "expected extensions separated by commas (png,jpg)");
    return ES_ERR_USAGE;
  }
  return ES_OK;
}
