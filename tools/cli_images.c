/*
 * cli_images.c - the image runner: one still, or a directory of them (-r: its subdirectories
 * too), through the library's run (pipeline/run_batch.c): the list made and checked (output
 * names, clashes, outputs that are inputs, --shard's share), the source and sinks chosen,
 * the progress line and -v lines drawn from the run's callbacks, and the summary.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct img_batch {
  const cli_opts *o;
  int in_kind, out_kind;
  es_still_batch sb; /* the items: inputs, names, outputs, failures, indices (whole batch) */
  size_t n;        /* sb.n */
  char **ins, **outs; /* sb's */
  int single;      /* one still, not a directory: no summary counts its skip, so it is told */
  int width, height; /* the single still's */
  int prepared;    /* prepare ran: the --stats file opened */
  cli_ui ui;       /* the progress line (drawn or not) and the CLI's own sinks */
} img_batch;

static void say(void *arg, const char *what, const char *msg) {
  (void)arg;
  cli_err(what, "%s", msg);
}
static void run_progress(void *user, const es_run_counts *c) {
  img_batch *b = user;
  const size_t done = (size_t)(c->frames + c->failed);
  double t = cli_now_s();
  if (!b->ui.show || (t - b->ui.last <= 0.2 && done != b->n)) return;
  double rate = c->elapsed_s > 0 ? done / c->elapsed_s : 0;
  char eta[32];
  cli_fmt_eta(eta, sizeof eta, rate > 0 ? (b->n - done) / rate : -1);
  b->ui.last = t;
  cli_progress_line("%zu/%zu file%s, %.1f files/s, ETA %s", done, b->n, b->n == 1 ? "" : "s",
                    rate, eta);
}

/* An item is over: its skip told (one still, or -v), its -v line. */
static void item_done(void *user, int64_t i, int status, int width, int height, double sec) {
  img_batch *b = user;
  const cli_opts *o = b->o;
  const char *out = b->outs ? b->outs[i] : NULL;
  if (status == ES_SINK_KEPT && (b->single || o->verbose) && !o->quiet)
    cli_err(out, "exists, skipped");
  if (status == ES_OK && o->verbose && !o->quiet)
    cli_err(b->ins[i], "%dx%d, %.0f ms%s%s", width, height, sec * 1e3, out ? " -> " : "",
            out ? out : "");
  if (status == ES_OK) b->width = width, b->height = height;
}

/* The output directory, and each item's own (-r): made once --stats is open. */
static int prepare(void *user) {
  img_batch *b = user;
  b->prepared = 1;
  if (!b->o->output || (b->out_kind != OUT_DIR && b->in_kind != IN_DIR)) return 0;
  if (cli_make_out_dir(b->o->output) != ES_OK) return 3;
  es_still_make_out_dirs(b->outs, b->n, b->sb.failed, say, NULL);
  return 0;
}


/* The list: a directory's stills (named, checked for clashes, this run's --shard share), or
 * the one still. The exit code to end with, or -1 to go on. */
static int make_list(img_batch *b) {
  const cli_opts *o = b->o;
  char msg[MSG_LEN] = "", outreal[PATH_MAX];
  const int f32 = o->format == FMT_F32;
  int rc = -1;
  if (b->in_kind == IN_DIR) {
    es_still_list_opts lo = {o->recursive, o->ext, NULL, say, NULL};
    CLI_REFUSE(b->out_kind != OUT_DIR && b->out_kind != OUT_NONE, 1, o->output,
               "a directory input needs a directory output");
    if (o->output && realpath(o->output, outreal)) lo.skip_dir = outreal;
    if ((rc = es_still_batch_dir(&b->sb, o->input, &lo, o->output, f32, msg, sizeof msg)))
      return cli_fail(o->input, rc, msg);
    if (b->sb.n == 0 && !o->quiet)
      cli_err(o->input, "no image files%s%s%s", o->ext ? " (--ext " : "", o->ext ? o->ext : "",
              o->recursive ? (o->ext ? ")" : "") : (o->ext ? "; -r descends)" : " (-r descends)"));
    /* --shard: this run's share, each item keeping its index in the whole batch; outputs were
     * named and checked for clashes across all. */
    unsigned char *keep = malloc(b->sb.n ? b->sb.n : 1);
    if (!keep) return 4;
    if ((rc = cli_shard_files(o, (const char *const *)b->sb.ins, b->sb.n, keep)) < 0)
      es_still_batch_keep(&b->sb, keep);
    free(keep);
  } else if (b->out_kind == OUT_VIDEO) {
    cli_err(o->output, "an image input needs a .png, .npy, .tif, directory or - output");
    return 1;
  } else if (b->out_kind == OUT_PNG && f32) {
    cli_err(o->output, "--format f32 needs a .npy output (or -)");
    return 1;
  } else {
    const char *base = strrchr(o->input, '/');
    char *rel = NULL, *out = NULL;
    if (b->out_kind == OUT_DIR) rel = es_still_out_name(base ? base + 1 : o->input, 0, f32);
    if (rel) out = es_join_path(o->output, rel);
    free(rel);
    if (b->out_kind == OUT_DIR && !out) return 4;
    rc = es_still_batch_one(&b->sb, o->input, b->out_kind == OUT_DIR ? out :
                            b->out_kind == OUT_STDOUT ? "-" : o->output) ? 4 : -1;
    free(out);
  }
  b->n = b->sb.n, b->ins = b->sb.ins, b->outs = b->sb.outs;
  return rc;
}

/* Never let an output replace an input of the run (es_still_batch_clobbers). The exit code,
 * or -1. */
static int outputs_not_inputs(const img_batch *b) {
  const char *bad;
  int64_t hit = es_still_batch_clobbers(&b->sb, b->out_kind != OUT_STDOUT, b->o->stats_path, &bad);
  if (hit == -2) return 4;
  if (hit >= 0 && !strcmp(bad, "-")) /* --stats - appended to an input (>> in/a.png) */
    cli_err("-", "standard output is the input %s itself (choose another output)", b->ins[hit]);
  else if (hit >= 0)
    cli_err(bad, "is the input %s itself (choose another output)", b->ins[hit]);
  return hit >= 0 ? 1 : -1;
}

/* The summary of a run whose items began. */
static void summary(const img_batch *b, es_run *run, size_t unreadable) {
  const cli_opts *o = b->o;
  const size_t n = b->n;
  es_run_counts c;
  char d[64];
  es_run_get_counts(run, &c);
  const size_t failed = (size_t)c.failed, skipped = (size_t)c.skipped, cut = (size_t)c.interrupted;
  const double el = c.elapsed_s;
  cli_clear_progress();
  if (atomic_load(&g_stop)) {
    /* An interruption is no error (its exit code says it): -q silences it. Done: written or
     * skipped; a file that failed (its own line said why) is not done. */
    char cuts[96] = "";
    if (failed > cut) snprintf(cuts, sizeof cuts, ", %zu failed", failed - cut);
    if (cut) snprintf(cuts + strlen(cuts), sizeof cuts - strlen(cuts), ", %zu interrupted", cut);
    if (!o->quiet)
      cli_err(NULL, "interrupted: %zu of %zu file%s done%s, %zu not started", (size_t)c.frames,
              n, n == 1 ? "" : "s", cuts, n - (size_t)c.frames - failed);
    return;
  }
  if (o->quiet) return;
  if (failed && n > 1) cli_err(NULL, "%zu of %zu files failed", failed, n);
  if (unreadable)
    cli_err(NULL, "%zu director%s could not be read", unreadable, unreadable == 1 ? "y" : "ies");
  if (n == 1 && !failed && !skipped)
    cli_err(NULL, "1 file, %dx%d, %.2f s, %s", b->width, b->height, el,
            es_context_describe(es_run_context(run), d, sizeof d));
  else if (n > 1 || (n == 1 && !b->single)) /* a batch of one tells its skip here */
    cli_err(NULL, "%zu file%s, %zu written, %zu skipped, %zu failed, %.2f s, %.1f Mpixel/s, %s",
            n, n == 1 ? "" : "s", n - failed - skipped, skipped, failed, el,
            el > 0 ? c.pixels / el / 1e6 : 0.0,
            es_context_describe(es_run_context(run), d, sizeof d));
}

int cli_run_images(cli_opts *o, int in_kind, int out_kind) {
  img_batch b;
  es_run *run = NULL;
  es_run_config rc_cfg;
  es_source src;
  es_sink k;
  es_sink_opts so = {cli_png_pixfmt(o->format), o->format == FMT_F32, NULL, -1, NULL,
                     ES_PIX_NONE, o->overwrite, o->skip, o->input, o->cfg.stats_bins};
  size_t made = 0;
  int code, rc, inside;

  memset(&b, 0, sizeof b);
  b.o = o;
  b.in_kind = in_kind;
  b.out_kind = out_kind;
  b.single = in_kind != IN_DIR;
  if ((code = make_list(&b)) >= 0 || (code = outputs_not_inputs(&b)) >= 0) goto end;
  code = 0;
  /* The statistics file opens first: one that cannot be written creates no output directory,
   * unless it is to be inside that directory, made first then (and removed again where the
   * file cannot be opened). */
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) {
    code = 3;
    goto end;
  }
  if (rc == STATS_SKIPPED && !o->output) goto end;
  inside = o->stats_path && o->output && (out_kind == OUT_DIR || in_kind == IN_DIR) &&
           cli_path_inside(o->output, o->stats_path);
  /* One image into a directory the run makes (or --stats inside it): if nothing is written
   * into it, it goes again at the end, as a failure leaves no file. */
  if (o->output && (out_kind == OUT_DIR || in_kind == IN_DIR) && (b.single || inside))
    made = es_first_missing(o->output);
  if (inside && cli_make_out_dir(o->output) != ES_OK) {
    code = 3;
    goto end;
  }

  cli_run_config(&rc_cfg, o, run_progress, &b);
  rc_cfg.item_index = b.sb.index;
  rc_cfg.item_failed = b.sb.failed;
  rc_cfg.item_done = item_done;
  rc_cfg.prepare = prepare;
  b.ui.o = o;
  b.ui.still = 1;
  b.ui.show = cli_progress_on(o) && b.n > 1;
  {
    /* a TIFF: its page 0, band --band; the georeferencing where a .tif is written */
    es_stills_source_opts sso = {o->max_pixels, o->band, out_kind == OUT_TIFF, o->input};
    if ((rc = es_source_stills(&src, (const char *const *)b.ins,
                               (const char *const *)b.sb.names, b.n, &sso)) != ES_OK ||
        (rc = es_run_create(&run, &rc_cfg, &src)) != ES_OK)
      goto fail;
  }
  if (b.outs) {
    if ((rc = es_sink_stills(&k, (const char *const *)b.outs, b.n, &so)) != ES_OK ||
        (rc = es_run_add_sink(run, &k)) != ES_OK)
      goto fail;
  }
  if ((rc = cli_add_stats_sinks(run, o, &so, &b.ui, inside)) != ES_OK) goto fail;
  es_run_execute(run);
  {
    es_run_counts c;
    es_run_get_counts(run, &c);
    code = c.exit_code;
    if (b.sb.unreadable) code = cli_worse(code, 2); /* each was said when the list was made */
    if (c.started) summary(&b, run, b.sb.unreadable);
  }
  goto end;
fail:
  code = cli_fail(NULL, rc, NULL);
end:
  cli_main_writes(0);
  /* Only those left empty: one still's that wrote nothing, or a batch's --stats that failed. */
  if (made && (b.single || !b.prepared)) es_remove_made_dirs(o->output, made);
  if (run) cli_exit_if_gpus_opening(es_run_context(run), code);
  es_run_destroy(&run);
  es_still_batch_free(&b.sb);
  return code;
}
