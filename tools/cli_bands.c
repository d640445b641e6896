/*
 * cli_bands.c - one image computed in row bands (es_compute_bands): a whole-slide image
 * (OpenSlide), one TIFF, or a PNG with --band-rows. The source delivers rows in order, the
 * map goes out band by band (.npy in place, a tiled TIFF), or only to --stats; memory is a
 * few bands. A PNG output (and a PNG input) is whole by its format: the rendering is
 * gathered, then written. Progress: bands done, Mpixel/s, ETA. SIGINT stops between bands;
 * the output's temporary is removed and nothing is left under its name.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"

/* ---- The source: rows in order. */
typedef struct band_src {
  es_image img;  /* a PNG read whole (img.data into data) */
  void *data;
  es_slide *slide; /* a whole-slide image, or NULL */
  es_tiff *tiff;   /* a TIFF read band by band, or NULL */
  int band;        /* a TIFF band stack's sample (--band) */
  es_tiff_geo *geo; /* the TIFF's GeoTIFF tags, for a TIFF output (or NULL) */
  int width, height, depth;
} band_src;

static int src_read(void *user, int y0, int n, void *dst, size_t dst_stride, char *msg,
                    size_t len) {
  band_src *s = user;
  if (s->slide) return es_slide_read_rows(s->slide, y0, n, dst, dst_stride, msg, len);
  if (s->tiff) return es_tiff_read_rows(s->tiff, y0, n, s->band, dst, dst_stride, msg, len);
  const size_t row = (size_t)s->width * (s->depth == 16 ? 2 : 1);
  for (int y = 0; y < n; y++)
    memcpy((uint8_t *)dst + (size_t)y * dst_stride,
           (const uint8_t *)s->img.data + (size_t)(y0 + y) * s->img.stride, row);
  return ES_OK;
}

/* ---- The sink: the map or rendering band by band. */
typedef struct band_sink {
  int kind;         /* OUT_NPY, OUT_TIFF, OUT_PNG or OUT_NONE */
  es_npy_bands *npy;
  es_tiff_writer *tif;
  uint8_t *png;     /* OUT_PNG: the rendering, gathered */
  size_t png_stride;
  int pixfmt;
  int width;
  /* progress */
  int show;
  int band_rows, nbands;
  double t0, last;
  int drawn; /* a progress line was drawn */
} band_sink;

static int sink_write(void *user, int y0, int n, const float *map, size_t map_stride,
                      const es_planes *pix, char *msg, size_t len) {
  band_sink *k = user;
  if (k->kind == OUT_NPY) return es_npy_bands_write(k->npy, map, map_stride, n, msg, len);
  if (k->kind == OUT_TIFF)
    return map ? es_tiff_writer_write_rows(k->tif, y0, n, map, map_stride * sizeof(float), msg,
                                           len)
               : es_tiff_writer_write_rows(k->tif, y0, n, pix->plane[0], pix->stride[0], msg,
                                           len);
  if (k->kind == OUT_PNG)
    for (int y = 0; y < n; y++)
      memcpy(k->png + (size_t)(y0 + y) * k->png_stride, pix->plane[0] + (size_t)y * pix->stride[0],
             k->png_stride);
  return ES_OK;
}

static void on_progress(void *user, int done, int height) {
  band_sink *k = user;
  double now = cli_now_s();
  /* The first band at once, then four times a second, and the end. */
  if (!k->show || (k->drawn && done < height && now - k->last < 0.25)) return;
  k->drawn = 1;
  k->last = now;
  const double el = now - k->t0, px = (double)done * k->width;
  const double rate = el > 0 ? px / el : 0;
  char eta[32];
  cli_fmt_eta(eta, sizeof eta, rate > 0 ? ((double)height - done) * k->width / rate : -1);
  const int bands = (int)(((int64_t)done + k->band_rows - 1) / k->band_rows);
  cli_progress_line("band %d/%d, %.1f Mpixel/s, ETA %s", bands, k->nbands, rate / 1e6, eta);
}

static int stop_requested(void *user) {
  (void)user;
  return atomic_load(&g_stop) != 0;
}

int cli_is_slide_name(const char *path) {
  static const char *const exts[] = {"svs", "ndpi", "vms", "vmu", "scn", "mrxs", "svslide",
                                     "bif"};
  const char *e = cli_ext_of(path);
  for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
    if (!strcasecmp(e, exts[i])) return 1;
  return 0;
}

/* Bands for a slide always; for one TIFF always (a TIFF is where images too large to hold
 * are kept, and the band run's outputs are the whole image's, bit for bit, whatever the
 * size); for one PNG with --band-rows. Into a .npy, a .tif, a .png or --stats alone. */
int cli_bands_wanted(const cli_opts *o, int in_kind, int out_kind) {
  if (out_kind != OUT_NPY && out_kind != OUT_TIFF && out_kind != OUT_PNG && out_kind != OUT_NONE)
    return 0;
  if (in_kind == IN_SLIDE) return 1;
  if (in_kind != IN_STILL) return 0;
  if (o->band_rows >= 0) return 1;
  if (!es_path_is_tiff(o->input) || o->mask) return 0;
  /* A float TIFF is computed whole: its default range is the whole image's min..max (the
   * float rule), which a band alone does not know. */
  es_tiff *t = NULL;
  es_tiff_info ti;
  char msg[MSG_LEN];
  if (es_tiff_open(o->input, o->max_pixels, &t, &ti, msg, sizeof msg) != ES_OK) return 1;
  es_tiff_close(&t);
  return ti.depth != 32;
}

int cli_run_bands(cli_opts *o, int in_kind, int out_kind) {
  band_src src;
  band_sink sink;
  es_context *ctx = NULL;
  es_stats_writer *sw = NULL;
  es_stats *st = NULL;
  char msg[MSG_LEN] = "";
  int code = 0, rc;
  const char *in = o->input;
  memset(&src, 0, sizeof src);
  memset(&sink, 0, sizeof sink);
  /* A slide takes a few bands of memory, never the whole, and slides of 10^10 pixels are
   * common: the default --max-pixels (2^31, which guards a whole image's buffers and a
   * header's claims) does not apply to it; one given does. A TIFF keeps the SPEC's rule
   * (a larger one takes --max-pixels), as its header may claim any size. */
  const int64_t limit = o->max_pixels == (INT64_C(1) << 31) && in_kind == IN_SLIDE
                            ? INT64_C(1) << 46
                            : o->max_pixels;

  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) return 3;
  if (rc == STATS_SKIPPED && !o->output) return 0;

  if (in_kind == IN_SLIDE) {
    rc = es_slide_open(in, o->level < 0 ? 0 : o->level, limit, &src.slide, &src.width,
                       &src.height, msg, sizeof msg);
    src.depth = 8;
  } else if (es_path_is_tiff(in)) {
    es_tiff_info ti;
    src.band = o->band;
    rc = es_tiff_open(in, limit, &src.tiff, &ti, msg, sizeof msg);
    if (rc == ES_OK && ti.depth == 32) { /* computed whole (cli_bands_wanted) */
      rc = ES_ERR_USAGE;
      snprintf(msg, sizeof msg, "--band-rows: not for float32 samples (computed whole)");
    }
    if (rc == ES_OK && (o->band < 0 || o->band >= ti.bands)) {
      rc = ES_ERR_USAGE;
      if (ti.bands > 1) /* the reader's own words (es_tiff_read_rows would say them later) */
        snprintf(msg, sizeof msg, "no band %d: the image has %d (--band 0..%d)", o->band,
                 ti.bands, ti.bands - 1);
      else
        snprintf(msg, sizeof msg, "no band %d: the image has one", o->band);
    }
    if (rc == ES_OK && ti.has_geo && out_kind == OUT_TIFF)
      rc = es_tiff_geo_get(src.tiff, &src.geo, msg, sizeof msg);
    src.width = ti.width;
    src.height = ti.height;
    src.depth = ti.depth;
  } else {
    rc = es_png_read(in, limit, &src.img, &src.data, NULL, msg, sizeof msg);
    src.width = src.img.width;
    src.height = src.img.height;
    src.depth = src.img.depth;
  }
  if (rc) {
    cli_err(in, "%s", *msg ? msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }

  es_config cfg = o->cfg;
  cfg.gpu_background = 0; /* one large image: every band may go to a GPU */
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  if (rc) {
    cli_err(NULL, "%s", msg);
    code = es_exit_code(rc);
    goto end;
  }

  es_bands_config bc;
  es_bands_config_default(&bc);
  bc.width = src.width;
  bc.height = src.height;
  bc.depth = src.depth;
  bc.band_rows = o->band_rows > 0 ? o->band_rows : 0;
  bc.read = src_read;
  bc.read_user = &src;
  bc.stop = stop_requested;
  bc.progress = on_progress;
  bc.progress_user = &sink;

  if (o->stats_path || o->stats_line) {
    if (!(st = calloc(1, sizeof *st))) {
      cli_err(NULL, "out of memory");
      code = 4;
      goto end;
    }
    bc.stats = st;
  }
  if (o->stats_path && (rc = cli_stats_open(o, &sw)) != ES_OK) {
    code = es_exit_code(rc);
    goto end;
  }

  sink.kind = out_kind;
  sink.width = src.width;
  if (out_kind == OUT_NPY) {
    rc = es_npy_bands_open(&sink.npy, o->output, o->overwrite ? 1 : o->skip ? ES_WRITE_KEEP : 0,
                           src.width, src.height, msg, sizeof msg);
    if (rc == ES_WRITE_KEPT) {
      if (!o->quiet) cli_err(o->output, "exists, skipped");
      sink.kind = OUT_NONE;
      if (!st) goto end;
    } else if (rc) {
      cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    } else {
      bc.want_map = 1;
      bc.write = sink_write;
      bc.write_user = &sink;
    }
  } else if (out_kind == OUT_TIFF) {
    es_tiff_writer_opts to;
    memset(&to, 0, sizeof to);
    to.width = src.width;
    to.height = src.height;
    to.pages = 1;
    to.pixfmt = o->format == FMT_F32 ? ES_PIX_NONE : cli_png_pixfmt(o->format);
    to.geo = src.geo;
    if (to.pixfmt != ES_PIX_NONE) {
      bc.render = o->render;
      bc.render.format = to.pixfmt;
      if (bc.render.range_auto) {
        cli_err(NULL, "--range auto: not with bands (it needs the whole map first; use fixed)");
        code = 1;
        goto end;
      }
    }
    rc = es_tiff_writer_open(o->output, o->overwrite ? 1 : o->skip ? ES_WRITE_KEEP : 0, &to,
                             &sink.tif, msg, sizeof msg);
    if (rc == ES_WRITE_KEPT) {
      if (!o->quiet) cli_err(o->output, "exists, skipped");
      sink.kind = OUT_NONE;
      bc.render.format = ES_PIX_NONE;
      if (!st) goto end;
    } else if (rc) {
      cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    } else {
      bc.want_map = to.pixfmt == ES_PIX_NONE;
      bc.write = sink_write;
      bc.write_user = &sink;
    }
  } else if (out_kind == OUT_PNG) {
    es_render r = o->render;
    r.format = cli_png_pixfmt(o->format);
    if (r.range_auto) {
      cli_err(NULL, "--range auto: not with bands (it needs the whole map first; use fixed)");
      code = 1;
      goto end;
    }
    sink.pixfmt = r.format;
    sink.png_stride = es_pix_stride(r.format, 0, src.width);
    if (!(sink.png = malloc(sink.png_stride * (size_t)src.height))) {
      cli_err(o->output, "out of memory for a %dx%d picture", src.width, src.height);
      code = 4;
      goto end;
    }
    bc.render = r;
    bc.write = sink_write;
    bc.write_user = &sink;
  }

  const double t0 = cli_now_s();
  sink.t0 = sink.last = t0;
  sink.show = !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2)));
  sink.band_rows = es_bands_rows(ctx, &bc);
  sink.nbands = (int)(((int64_t)src.height + sink.band_rows - 1) / sink.band_rows);
  if (o->verbose && !o->quiet) {
    char d[64];
    cli_err(NULL, "%dx%d in %d bands of %d rows, %s", src.width, src.height, sink.nbands,
            sink.band_rows, cli_device_desc(ctx, d, sizeof d));
  }
  rc = es_compute_bands(ctx, &bc);
  cli_clear_progress();
  const double el = cli_now_s() - t0;
  if (rc) {
    if (rc == ES_ERR_INTERRUPTED) {
      code = 130;
      if (!o->quiet) cli_err(in, "interrupted: nothing written");
    } else {
      /* The reader's failures are the input's, the writer's the output's. */
      cli_err(rc == ES_ERR_OUTPUT ? o->output : in, "%s", es_context_error(ctx));
      code = es_exit_code(rc);
    }
    goto end;
  }
  if (sink.npy) {
    rc = es_npy_bands_close(&sink.npy, 1, msg, sizeof msg);
    if (rc && rc != ES_WRITE_KEPT) {
      cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
  } else if (sink.tif) {
    rc = es_tiff_writer_close(&sink.tif, 1, msg, sizeof msg);
    if (rc && rc != ES_WRITE_KEPT) {
      cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
  } else if (sink.png) {
    rc = es_png_write(o->output, o->overwrite ? 1 : o->skip ? ES_WRITE_KEEP : 0, src.width,
                      src.height, sink.pixfmt, sink.png, sink.png_stride, msg, sizeof msg);
    if (rc == ES_WRITE_KEPT) {
      if (!o->quiet) cli_err(o->output, "exists, skipped");
    } else if (rc) {
      cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
  }
  if (st && o->stats_line) {
    cli_stats_line(in, -1, NAN, src.width, src.height, st, o->cfg.params.base);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_err("-", "write error: %s", strerror(errno ? errno : EIO));
      code = 3;
    }
  }
  if (sw) {
    rc = es_stats_writer_add(sw, in, 0, NAN, src.width, src.height, st, msg, sizeof msg);
    if (!rc) rc = es_stats_writer_close(&sw, 1, msg, sizeof msg);
    if (rc) {
      cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
      code = cli_worse(code, es_exit_code(rc));
    }
  }
  if (!o->quiet && !code) {
    char d[64];
    cli_err(NULL, "1 file, %dx%d, %d bands of %d rows, %.2f s, %.1f Mpixel/s, %s", src.width,
            src.height, sink.nbands, sink.band_rows, el,
            el > 0 ? (double)src.width * src.height / el / 1e6 : 0.0,
            cli_device_desc(ctx, d, sizeof d));
  }
end:
  es_npy_bands_close(&sink.npy, 0, NULL, 0); /* not committed: its temporary removed */
  es_tiff_writer_close(&sink.tif, 0, NULL, 0);
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  free(sink.png);
  free(st);
  es_slide_close(&src.slide);
  es_tiff_close(&src.tiff);
  es_tiff_geo_free(&src.geo);
  free(src.data);
  if (ctx) cli_exit_if_gpus_opening(ctx, code);
  es_context_destroy(&ctx);
  return code;
}
