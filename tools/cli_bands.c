/*
 * cli_bands.c - one image in row bands through the library's band run (es_run_bands,
 * pipeline/bands_run.c): a whole-slide image, one TIFF, or a PNG with --band-rows. Here:
 * the options mapped to the run's source and sinks (io/registry.c matches the names), its
 * failures and notices said, progress (bands done, Mpixel/s, ETA) and the summary.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct band_ui {
  const cli_opts *o;
  int show, band_rows, nbands, width, drawn;
  double t0, last;
} band_ui;

static void on_begin(void *user, const es_bands_summary *s) {
  band_ui *u = user;
  u->band_rows = s->band_rows;
  u->nbands = s->nbands;
  u->width = s->width;
  u->t0 = u->last = cli_now_s();
  if (u->o->verbose && !u->o->quiet)
    cli_err(NULL, "%dx%d in %d bands of %d rows, %s", s->width, s->height, s->nbands,
            s->band_rows, s->device);
}

static void on_progress(void *user, int done, int height) {
  band_ui *u = user;
  double now = cli_now_s();
  /* The first band at once, then four times a second, and the end. */
  if (!u->show || (u->drawn && done < height && now - u->last < 0.25)) return;
  u->drawn = 1;
  u->last = now;
  const double el = now - u->t0, rate = el > 0 ? (double)done * u->width / el : 0;
  char eta[32];
  cli_fmt_eta(eta, sizeof eta, rate > 0 ? ((double)height - done) * u->width / rate : -1);
  cli_progress_line("band %d/%d, %.1f Mpixel/s, ETA %s",
                    (int)(((int64_t)done + u->band_rows - 1) / u->band_rows), u->nbands,
                    rate / 1e6, eta);
}

static void on_notice(void *user, const char *name, const char *line) {
  if (!((band_ui *)user)->o->quiet) cli_err(name, "%s", line);
}

static int stop_requested(void *user) {
  (void)user;
  return atomic_load(&g_stop) != 0;
}

/* Bands for a slide always; for one TIFF always (a TIFF is where images too large to hold
 * are kept, and the band run's outputs are the whole image's, bit for bit, whatever the
 * size) but a float one (its default range is the whole image's min..max, which a band
 * alone does not know: computed whole); for one PNG with --band-rows. Into a .npy, a .tif,
 * a .png or --stats alone. tiff: what the TIFF's header said (main probed it), or NULL
 * where it could not be opened (the band run then says why). */
int cli_bands_wanted(const cli_opts *o, int in_kind, int out_kind, const es_tiff_info *tiff) {
  if (out_kind != OUT_NPY && out_kind != OUT_TIFF && out_kind != OUT_PNG && out_kind != OUT_NONE)
    return 0;
  if (in_kind == IN_SLIDE) return 1;
  if (in_kind != IN_STILL) return 0;
  if (o->band_rows >= 0) return 1;
  if (!es_path_is_tiff(o->input) || o->mask) return 0;
  return !tiff || tiff->depth != 32;
}

/* tiff: the input opened once by main (es_tiff_open, --max-pixels), handed over; or NULL. */
int cli_run_bands(cli_opts *o, int in_kind, es_tiff *tiff) {
  es_bands_run_config c;
  es_bands_summary s;
  band_ui ui = {o, cli_progress_on(o), 1, 1, 0, 0, 0, 0};
  es_band_source_opts so = {o->max_pixels, o->band, in_kind == IN_SLIDE ? o->level : -1, tiff};
  es_band_sink_opts ko = {o->format == FMT_F32 ? ES_PIX_NONE : cli_png_pixfmt(o->format),
                          o->overwrite ? 1 : o->skip ? ES_WRITE_KEEP : 0};
  es_sink_opts sto = {0};
  int rc, code;

  /* A slide takes a few bands of memory, never the whole, and slides of 10^10 pixels are
   * common: the default --max-pixels (2^31, a guard of a whole image's buffers and of a
   * header's claims) is not its limit; one given is. A TIFF keeps the SPEC's rule. */
  if (in_kind == IN_SLIDE && o->max_pixels == (INT64_C(1) << 31)) so.max_pixels = INT64_C(1) << 46;
  if (in_kind == IN_SLIDE && so.level < 0) so.level = 0;
  es_bands_run_config_default(&c);
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED || (rc == STATS_SKIPPED && !o->output)) {
    es_tiff_close(&tiff);
    return rc == STATS_REFUSED ? 3 : 0;
  }
  sto.overwrite = o->overwrite;
  sto.bins = o->cfg.stats_bins;
  rc = es_band_source_for(&c.source, o->input, &so); /* takes tiff */
  if (rc == ES_OK && o->stats_path)
    rc = es_sink_stats(&c.stats_sinks[c.nstats++], o->stats_path, &sto);
  if (rc == ES_OK && o->output) rc = es_band_sink_for(&c.sinks[c.nsinks++], o->output, &ko);
  if (rc != ES_OK) {
    es_bands_run_config_close(&c);
    return cli_fail(NULL, rc, NULL);
  }
  c.cfg = o->cfg;
  c.render = o->render;
  c.band_rows = o->band_rows > 0 ? o->band_rows : 0;
  c.want_stats = o->stats_line;
  c.stopped = stop_requested;
  c.begin = on_begin;
  c.progress = on_progress;
  c.notice = on_notice;
  c.user = &ui;
  es_run_bands(&c, &s);
  cli_clear_progress();
  code = s.exit_code;
  if (s.status == ES_ERR_INTERRUPTED) {
    if (!o->quiet) cli_err(s.failed, "%s", s.msg);
  } else if (s.status != ES_OK) {
    cli_err(s.failed, "%s%s", s.param ? "--" : "", s.msg); /* a parameter is an option here */
  } else if (s.computed && o->stats_line) {
    cli_stats_line(o->input, -1, NAN, s.width, s.height, &s.stats, o->cfg.params.base);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_err("-", "write error: %s", strerror(errno ? errno : EIO));
      code = 3;
    }
  }
  if (s.computed && !o->quiet && !code)
    cli_err(NULL, "1 file, %dx%d, %d bands of %d rows, %.2f s, %.1f Mpixel/s, %s", s.width,
            s.height, s.nbands, s.band_rows, s.elapsed_s,
            s.elapsed_s > 0 ? (double)s.width * s.height / s.elapsed_s / 1e6 : 0.0, s.device);
  return code;
}
