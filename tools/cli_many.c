/*
 * cli_many.c - several videos in one run (issue 31): `entropy-stream a.mp4 b.mkv -o heat/
 * --stats s.csv`, or a directory that holds video files and no still (es_video_dir_list).
 * The library does the work (pipeline/run_many.c: the outputs named and checked, a few runs
 * at once over one context, the statistics joined in order); here the flags that do not
 * apply to several videos are refused, the options become its configuration, its lines
 * name the flags, and the summary is said.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int many_stopped(void) { return atomic_load(&g_stop) != 0; }

/* The library names the parameter that would let it go on (overwrite); here, the flags. */
static void many_say(void *user, const char *name, const char *param, const char *line) {
  (void)user;
  cli_err(name, "%s%s", line, param ? " (use -y to overwrite, -n to skip)" : "");
}

/* An image or a directory among the inputs is a mistake of the command, not a damaged
 * video: refused before any work (the library's check hook). */
static int many_check(void *user, size_t i, const char *path) {
  struct stat st;
  const int dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
  (void)user, (void)i;
  if (!dir && !es_still_ext_ok(path, NULL)) return 0;
  cli_err(path, "%s among several inputs (they are videos; a directory of images is one INPUT)",
          dir ? "a directory" : "an image");
  return 1;
}

/* "N[ of M] videos[ (F failed)], FRAMES frames, T s, FPS fps, DEVICE[, interrupted]". */
static void summary(es_many *m, const es_many_counts *k) {
  char d[64], fail_s[48] = "", of_s[48] = "";
  if (k->failed) snprintf(fail_s, sizeof fail_s, " (%zu failed)", k->failed);
  if (k->ran < k->videos) snprintf(of_s, sizeof of_s, " of %zu", k->videos); /* a stop */
  cli_err(NULL, "%zu%s video%s%s, %" PRId64 " frame%s, %.2f s, %.1f fps, %s%s", k->ran, of_s,
          k->ran == 1 && !*of_s ? "" : "s", fail_s, k->frames, k->frames == 1 ? "" : "s",
          k->elapsed_s, k->elapsed_s > 0 ? k->frames / k->elapsed_s : 0.0,
          es_context_describe(es_many_context(m), d, sizeof d),
          k->interrupted ? ", interrupted" : "");
}

int cli_run_many(cli_opts *o, const char *const *inputs, size_t n, int out_kind) {
  const char *runs = getenv("ES_MANY_RUNS");
  es_many_config c;
  es_many_counts k;
  es_many *m = NULL;
  unsigned char *keep = NULL;
  int code;

  CLI_REFUSE(
      out_kind != OUT_DIR && out_kind != OUT_NONE, 1, o->output,
      "several videos need a directory output (-o DIR/), each written there under its own name");
  CLI_REFUSE(
      !o->output && !o->stats_path, 1, NULL,
      "several videos: give -o DIR/ or --stats FILE (the statistics lines are for one input)");
  CLI_REFUSE(o->raw || o->format == FMT_F32, 1, NULL, "%s: not for several videos",
             o->raw ? "--raw" : "--format f32");
  CLI_REFUSE(!(keep = malloc(n)), 4, NULL, "out of memory");
  /* --shard: whole videos a share, as a batch's files. */
  if ((code = cli_shard_files(o, inputs, n, keep)) >= 0) goto end;
  es_many_config_default(&c);
  c.cfg = o->cfg;
  c.render = o->render;
  c.out_dir = o->output;
  c.stats = o->stats_path;
  c.sink = (es_sink_opts){cli_png_pixfmt(o->format), 0, o->codec, o->crf, o->preset,
                          o->pix_fmt, o->overwrite, o->skip, NULL, o->cfg.stats_bins};
  c.max_pixels = o->max_pixels;
  c.verbose_log = o->verbose && !o->quiet;
  c.mask = o->mask;
  c.mask_stride = (size_t)o->mask_w;
  c.mask_width = o->mask_w;
  c.mask_height = o->mask_h;
  c.mask_name = o->mask_path;
  c.runs = runs && atoi(runs) > 0 ? atoi(runs) : 0; /* ES_MANY_RUNS: videos at once */
  c.share = keep;
  c.check = many_check;
  c.stopped = many_stopped;
  c.say = many_say;
  if (es_many_create(&m, &c, inputs, n) != ES_OK) {
    cli_err(NULL, "out of memory");
    code = 4;
    goto end;
  }
  es_many_execute(m);
  es_many_get_counts(m, &k);
  code = k.exit_code;
  if (k.started && !o->quiet) summary(m, &k);
  fflush(NULL);
  cli_exit_if_gpus_opening(es_many_context(m), code);
end:
  es_many_destroy(&m);
  free(keep);
  return code;
}
