/*
 * es_band_stage.h - the two ends of a band run (pipeline/bands_run.c, es_run_bands): a
 * source that delivers an image's rows in order, and sinks that take the results band by
 * band. io/ implements them (one file each: io/band_src_*.c, io/band_sink_*.c; names are
 * matched to them in io/registry.c), pipeline/ drives them, a program may write its own.
 * Kept in core/ because io/ may include only core/; written into the installed
 * entropy_stream.h as es_stage.h is.
 *
 * Life of a band source: open (its header: the image's size), read rows in order (each row
 * once), close. Life of a band sink: open on the source's geometry, write each band's rows
 * in order, close with commit (renamed into place) or without (its temporary removed).
 * Every call returns an es_status and, on failure, a one-line reason in msg without the
 * file's name: the run says whose it is.
 */
#ifndef ES_BAND_STAGE_H
#define ES_BAND_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "es_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct es_tiff;     /* io/es_tiff.h's open TIFF */
struct es_tiff_geo; /* io/es_tiff.h's GeoTIFF tags */

/* What a band source's header says. */
typedef struct es_band_info {
  int width, height, depth;      /* depth 8 or 16 */
  const struct es_tiff_geo *geo; /* GeoTIFF tags a TIFF sink carries on (NULL: none); the
                                  * source's, valid until it closes */
} es_band_info;

typedef struct es_band_source es_band_source;
struct es_band_source {
  const char *name; /* in messages and the statistics record */
  void *self;
  int (*open)(es_band_source *s, es_band_info *info, char *msg, size_t len);
  /* Rows y0 .. y0 + nrows - 1 as grey of info's depth, rows dst_stride bytes apart. */
  int (*read)(es_band_source *s, int y0, int nrows, void *dst, size_t dst_stride, char *msg,
              size_t len);
  void (*close)(es_band_source *s); /* frees self; called once, also for one never opened */
};

/* open's and close's answer for an output that existed and was kept (-n): nothing
 * written, not failed (es_stage.h's ES_SINK_KEPT). */
#define ES_BAND_SINK_KEPT 1

typedef struct es_band_sink es_band_sink;
struct es_band_sink {
  const char *name; /* in messages */
  void *self;
  int pixfmt;       /* what it takes, known before open: ES_PIX_NONE the float32 map, else
                     * the rendering (ES_PIX_RGB24, GRAY8, GRAY16) */
  /* ES_OK, ES_BAND_SINK_KEPT (the sink is then closed and dropped), or an error. */
  int (*open)(es_band_sink *k, const es_band_info *info, char *msg, size_t len);
  /* Rows y0 .. y0 + nrows - 1: map (rows map_stride floats apart) for ES_PIX_NONE, else
   * plane 0 of pix. */
  int (*write)(es_band_sink *k, int y0, int nrows, const float *map, size_t map_stride,
               const es_planes *pix, char *msg, size_t len);
  /* Commits (ES_OK, or ES_BAND_SINK_KEPT where the output existed and was kept) or
   * removes, and frees self. Called once, also for a sink never opened. */
  int (*close)(es_band_sink *k, int commit, char *msg, size_t len);
};

/* ---- The band sources and sinks of io/ (one file each), and the table that matches
 * names to them (io/registry.c). Each constructor fills a caller's struct; nothing is
 * opened until open. ES_OK, ES_ERR_NOMEM, or ES_ERR_USAGE where no band file takes it. */
typedef struct es_band_source_opts {
  int64_t max_pixels; /* a larger image is an input error */
  int band;           /* a TIFF band stack's sample */
  int level;          /* a slide's pyramid level; >= 0 also makes any name a slide */
  struct es_tiff *tiff; /* path already opened on page 0 (es_tiff_open with max_pixels),
                         * handed over so that its header is not read again (a TIFF's
                         * source owns it from the call on); or NULL */
} es_band_source_opts;
int es_band_source_tiff(es_band_source *s, const char *path, const es_band_source_opts *o);
int es_band_source_png(es_band_source *s, const char *path, const es_band_source_opts *o);
int es_band_source_slide(es_band_source *s, const char *path, const es_band_source_opts *o);

typedef struct es_band_sink_opts {
  int pixfmt;    /* for a picture (.png, a .tif of a rendering): ES_PIX_RGB24, GRAY8,
                  * GRAY16; ES_PIX_NONE: a .tif of float32 (a .npy is float32 always) */
  int overwrite; /* 1 replaces an existing output (-y), ES_WRITE_KEEP keeps it (-n) */
} es_band_sink_opts;
int es_band_sink_npy(es_band_sink *k, const char *path, const es_band_sink_opts *o);
int es_band_sink_tiff(es_band_sink *k, const char *path, const es_band_sink_opts *o);
int es_band_sink_png(es_band_sink *k, const char *path, const es_band_sink_opts *o);

/* 1 for the extension of a whole-slide format (.svs, .ndpi, .mrxs, ...; a .tif is a slide
 * only with a level). */
int es_path_is_slide(const char *path);
/* The band source of an input: a slide (by its name, or o->level >= 0), a TIFF (by its
 * name), else a PNG read whole. */
int es_band_source_for(es_band_source *s, const char *path, const es_band_source_opts *o);
/* The band sink of an output name (.npy, .tif, .png), or ES_ERR_USAGE for the others. */
int es_band_sink_for(es_band_sink *k, const char *path, const es_band_sink_opts *o);

#ifdef __cplusplus
}
#endif
#endif /* ES_BAND_STAGE_H */
