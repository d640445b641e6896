/*
 * cli_video.c - the runners of frames: a video file, a FIFO or standard input (y4m, or raw
 * with --raw), and a multi-page TIFF's pages, through the library's run (pipeline/run.c):
 * the options checked, the source and the sinks chosen (io/registry.c matches the -o name),
 * the progress line drawn from the run's counters, and the summary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Appends "OPT NAME at frame K" (or "when closed") to the summary's list of the outputs
 * that failed, "; failed: ..."; nothing for an output that did not fail. */
static void failed_note(char *buf, size_t len, const char *opt, const char *name, int64_t at) {
  size_t n = strlen(buf);
  char where[48];
  if (at == ES_RUN_SINK_LIVE || at == ES_RUN_SINK_GIVEN_UP || n + 1 >= len) return;
  if (at >= 0)
    snprintf(where, sizeof where, "at frame %" PRId64, at);
  else
    snprintf(where, sizeof where, "when closed");
  snprintf(buf + n, len - n, "%s%s %s %s", n ? ", " : "; failed: ", opt, name ? name : "-", where);
}

static void run_progress(void *user, const es_run_counts *c) {
  cli_ui *u = user;
  double t = cli_now_s();
  if (!u->show || t - u->last <= 0.2) return;
  const int64_t written = c->frames, total = c->expected;
  double fps = c->elapsed_s > 0 ? written / c->elapsed_s : 0;
  char eta[32];
  u->last = t;
  /* None left is 0:00, whatever the rate ("7/7 frames, ETA ?" said nothing true). */
  cli_fmt_eta(eta, sizeof eta,
              total == written ? 0 : total > written && fps > 0 ? (total - written) / fps : -1);
  /* The count is the container's estimate (a duration times the frame rate): past it, it
   * was wrong, and "205/125 frames, ETA ?" says nothing true. */
  if (total > 0 && total >= written)
    cli_progress_line("%" PRId64 "/%" PRId64 " frame%s, %.1f fps, ETA %s", written, total,
                      total == 1 ? "" : "s", fps, eta);
  else
    cli_progress_line("%" PRId64 " frame%s, %.1f fps", written, written == 1 ? "" : "s", fps);
}

/* The summary line of a run whose frames began. */
static void summary(const cli_opts *o, es_run *run, int code, int out_sink, int stats_sink) {
  es_run_counts c;
  es_run_get_counts(run, &c);
  const es_source_counts *s = &c.source;
  const double el = c.elapsed_s;
  char d[64], extra[320] = "", skips[64] = "", failed[640] = "";
  if (out_sink >= 0) failed_note(failed, sizeof failed, "-o", o->output, es_run_sink_failed_at(run, out_sink));
  if (stats_sink >= 0)
    failed_note(failed, sizeof failed, "--stats", o->stats_path, es_run_sink_failed_at(run, stats_sink));
  if (c.skipped > 0) /* not claimed as written */
    snprintf(skips, sizeof skips, " (%" PRId64 " skipped: exist)", c.skipped);
  const struct {
    int64_t n;
    const char *what, *then;
  } notes[] = {
    /* kept, concealed as ffmpeg and players show them; among the frames (--stats: damaged) */
    {s->damaged, "frame", " decoded with errors"},
    {s->corrupt, "corrupt packet", " skipped"}, /* refused by the decoder (or the demuxer) */
    /* decoded as ffmpeg does; damage found in them is counted above */
    {s->flagged, "packet", " flagged corrupt by the demuxer (decoded)"},
    {s->prekey, "packet", " before the first keyframe dropped"},
    /* no error, no flag: the decoder gave no frame (H.264 out of order) */
    {s->dropped, "packet", " dropped by the decoder"},
    /* libav*'s own error lines, printed only with -v */
    {s->logged, "FFmpeg error message", o->verbose && !o->quiet ? "" : " (-v shows them)"}};
  for (size_t i = 0, at = 0; i < sizeof notes / sizeof *notes; i++, at = strlen(extra))
    if (notes[i].n > 0)
      snprintf(extra + at, sizeof extra - at, ", %" PRId64 " %s%s%s", notes[i].n, notes[i].what,
               notes[i].n == 1 ? "" : "s", notes[i].then);
  cli_clear_progress();
  if (!o->quiet || s->damaged > 0 || s->corrupt > 0 || s->flagged > 0 || s->dropped > 0)
    cli_err(NULL, "%" PRId64 " frame%s%s, %dx%d, %.2f s, %.1f fps, %s%s%s%s", c.frames,
            c.frames == 1 ? "" : "s", skips, c.width, c.height, el,
            el > 0 ? c.frames / el : 0.0, es_context_describe(es_run_context(run), d, sizeof d),
            extra, code == 130 ? ", interrupted" : "", failed);
}

/* The summary line of a stack's run ("3 of 3 pages, ..."). */
static void stack_summary(const cli_opts *o, es_run *run, int code) {
  es_run_counts c;
  char d[64];
  es_run_get_counts(run, &c);
  if (!o->quiet && code != 130)
    cli_err(NULL, "%" PRId64 " of %" PRId64 " pages, %dx%d, %.2f s, %s", c.frames, c.expected,
            c.width, c.height, c.elapsed_s, es_context_describe(es_run_context(run), d, sizeof d));
}

/* Runs src (closed here in every case) into the sinks of -o (a stack's or a video's, by the
 * registry), --stats and the statistics lines, and says the summary. The exit code. */
static int run_source(cli_opts *o, int out_kind, es_source *src, int stack, int64_t index_base) {
  es_run_config rc_cfg;
  es_sink k;
  es_run *run = NULL;
  es_sink_opts so = {cli_png_pixfmt(o->format), o->format == FMT_F32, o->codec, o->crf,
                     o->preset, o->pix_fmt, o->overwrite, o->skip, o->input, o->cfg.stats_bins};
  /* A stack draws no progress line (its pages go as fast as files are read). */
  cli_ui ui = {o, !stack && cli_progress_on(o), 0, 0, {0}};
  int out_sink = -1, stats_sink = -1, code = 0, rc;

  cli_run_config(&rc_cfg, o, run_progress, &ui);
  rc_cfg.index_base = index_base; /* --shard: records and frame names the whole video's */
  if ((rc = es_run_create(&run, &rc_cfg, src)) != ES_OK) /* src closed by it */
    return cli_fail(NULL, rc, NULL);
  /* -o first (written and closed first), then --stats, which opens first (one that cannot
   * be written leaves no other output behind), unless it lies inside the frame directory. */
  if (out_kind != OUT_NONE) {
    rc = stack ? es_sink_for_stack(&k, o->output, &so) : es_sink_for_video(&k, o->output, &so);
    if (rc != ES_OK || (rc = es_run_add_sink(run, &k)) != ES_OK) goto fail;
    out_sink = 0;
  }
  rc = cli_add_stats_sinks(run, o, &so, &ui, o->stats_path && out_kind == OUT_DIR &&
                                                  cli_path_inside(o->output, o->stats_path));
  if (rc != ES_OK) goto fail;
  if (o->stats_path) stats_sink = out_sink + 1;

  es_run_execute(run);
  {
    es_run_counts c;
    es_run_get_counts(run, &c);
    code = c.exit_code;
    if (c.started && stack)
      stack_summary(o, run, code);
    else if (c.started)
      summary(o, run, code, out_sink, stats_sink);
  }
  cli_main_writes(0);
  cli_exit_if_gpus_opening(es_run_context(run), code);
  es_run_destroy(&run);
  return code;
fail:
  cli_err(NULL, "%s", es_strerror(rc));
  es_run_destroy(&run);
  return es_exit_code(rc);
}

int cli_run_video(cli_opts *o, int out_kind) {
  es_source src;
  es_video_source_opts vso = {o->raw, o->max_pixels, o->verbose && !o->quiet, 0, 0, 0, 0, 0, 0};
  es_shard_range shard;
  int rc;

  CLI_REFUSE(out_kind == OUT_PNG, 1, o->output,
             "a video input needs a video, .npy, directory or - output");
  CLI_REFUSE(out_kind == OUT_VIDEO && o->format == FMT_F32, 1, o->output,
             "--format f32 needs a .npy, directory or - output");
  CLI_REFUSE(o->raw && strcmp(o->input, "-"), 1, o->input,
             "--raw applies to standard input (-) only");
  /* Refuse an existing output before any work. */
  if (out_kind == OUT_VIDEO || out_kind == OUT_NPY) {
    if ((rc = cli_exists(o, o->output)) == 3) return 3;
    if (rc == 1) {
      if (!o->stats_path) return 0;
      out_kind = OUT_NONE; /* the statistics are still asked for: computed, nothing else */
    }
  }
  CLI_REFUSE(o->stats_path && strcmp(o->stats_path, "-") && es_same_file(o->input, o->stats_path),
             1, o->stats_path, "is the input itself (choose another output)");
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) return 3;
  if (rc == STATS_SKIPPED && out_kind == OUT_NONE) return 0;
  if ((rc = cli_shard_video(o, &shard, &vso)) >= 0) return rc;
  if ((rc = es_source_video(&src, o->input, &vso)) != ES_OK) return cli_fail(NULL, rc, NULL);
  return run_source(o, out_kind, &src, 0, shard.first);
}

/* The outputs a stack refuses, an existing output, the --stats file: the exit code to end
 * with (said), or -1 to go on (out_kind OUT_NONE where the output was kept, -n). */
static int stack_checks(cli_opts *o, int *out_kind) {
  int rc;

  CLI_REFUSE(*out_kind == OUT_PNG || *out_kind == OUT_STDOUT || *out_kind == OUT_VIDEO ||
                 (*out_kind == OUT_DIR && o->format == FMT_F32),
             1, o->output,
             "a multi-page TIFF is a stack: write it to x.npy, x.tif, a directory of pictures, or "
             "--stats");
  if (*out_kind == OUT_NPY || *out_kind == OUT_TIFF) {
    if ((rc = cli_exists(o, o->output)) == 3) return 3;
    if (rc == 1) {
      if (!o->stats_path) return 0;
      *out_kind = OUT_NONE;
    }
  }
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) return 3;
  if (rc == STATS_SKIPPED && *out_kind == OUT_NONE) return 0;
  return -1;
}

/* A multi-page TIFF (issue 28): its pages, in order, as a video's frames (io/src_tiff.c),
 * to x.npy [T, H, W], a multi-page x.tif (page 0's GeoTIFF tags on every page), a directory
 * of frame_000000.png, ..., and --stats (index = page). A page that cannot be read, or is
 * not page 0's size where the output needs one size, ends the run with exit 2 and, as for
 * any failed image, no .npy or .tif left under its final name (ES_SOURCE_WHOLE). */
int cli_run_stack(cli_opts *o, int out_kind, es_tiff *tiff) {
  es_source src;
  es_tiff_source_opts to = {o->max_pixels, o->band, out_kind == OUT_NPY || out_kind == OUT_TIFF,
                            NULL};
  int rc = stack_checks(o, &out_kind);

  if (rc >= 0) {
    es_tiff_close(&tiff);
    return rc;
  }
  to.tiff = tiff; /* the header main read, not read again; the source owns it now */
  if ((rc = es_source_tiff(&src, o->input, &to)) != ES_OK) return cli_fail(NULL, rc, NULL);
  return run_source(o, out_kind, &src, 1, 0);
}

