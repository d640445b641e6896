/*
 * test_pipeline_params.c - each parameter's rule, kept once in the library (core/params.c):
 * every number parameter refused one past each bound (and an even window) and taken at the
 * bounds, every enumerated one by each of its names and refused by another, and every message
 * the library gives for a bad parameter - es_param_*, es_params_check, es_job_check,
 * es_context_create, es_stream_open, es_compute, es_shard_parse, es_stats_writer_open - names
 * the parameter first ("window 4: must be odd, 1..255") and holds no "--" (a program's flag
 * is the program's to add: tools/cli_msg.c maps the names). The rules' texts are those the
 * CLI's messages have always carried (tests/test_cli_errors.sh asserts the CLI's lines).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_kernels.h"
#include "es_test.h"

/* msg is a library message for parameter `name`: it begins "NAME " or "NAME:", is one line,
 * and names no flag. want (NULL: not checked) is the whole message. */
static void check_msg(const char *what, const char *msg, const char *name, const char *want) {
  size_t n = strlen(name);
  CHECK(!strncmp(msg, name, n) && (msg[n] == ' ' || msg[n] == ':'),
        "%s: \"%s\" does not begin with the parameter's name \"%s\"", what, msg, name);
  CHECK(!strstr(msg, "--"), "%s: \"%s\" names a flag", what, msg);
  CHECK(!strchr(msg, '\n') && msg[0], "%s: \"%s\" is not one line", what, msg);
  CHECK(es_param_ref(msg) == n, "%s: es_param_ref(\"%s\") = %zu, not %zu", what, msg,
        es_param_ref(msg), n);
  if (want) CHECK(!strcmp(msg, want), "%s: \"%s\", want \"%s\"", what, msg, want);
}

/* A number parameter: lo..hi taken, lo - 1 and hi + 1 refused with the rule in the message. */
static void number(const char *name, int64_t lo, int64_t hi, const char *rule) {
  char msg[256], got[128], want[256];
  CHECK(es_param_rule(name, got, sizeof got) == ES_OK && !strcmp(got, rule),
        "%s: rule \"%s\", want \"%s\"", name, got, rule);
  CHECK(es_param_check(name, lo, msg, sizeof msg) == ES_OK, "%s %" PRId64 ": %s", name, lo, msg);
  CHECK(es_param_check(name, hi, NULL, 0) == ES_OK, "%s %" PRId64 " refused", name, hi);
  const int64_t bad[] = {lo - 1, hi + 1};
  for (int i = 0; i < 2; i++) {
    memset(msg, 'X', sizeof msg);
    msg[sizeof msg - 1] = 0;
    CHECK(es_param_check(name, bad[i], msg, sizeof msg) == ES_ERR_USAGE, "%s %" PRId64 " taken",
          name, bad[i]);
    snprintf(want, sizeof want, "%s %" PRId64 ": %s", name, bad[i], rule);
    check_msg(name, msg, name, want);
    CHECK(es_param_check(name, bad[i], NULL, 0) == ES_ERR_USAGE, "%s: msg NULL", name);
  }
}

/* An enumerated parameter: each of its names (in order, listed "a, b or c") to its value
 * and back; another name refused. */
static void named(const char *name, const char *const *names, const int *values, int n,
                  const char *list) {
  char msg[256], got[128], want[256];
  int v = -12345;
  CHECK(es_param_names(name, NULL, got, sizeof got) == ES_OK && !strcmp(got, list),
        "%s: names \"%s\", want \"%s\"", name, got, list);
  for (int i = 0; i < n; i++) {
    CHECK(es_param_parse(name, names[i], &v, msg, sizeof msg) == ES_OK && v == values[i],
          "%s %s: %d, want %d", name, names[i], v, values[i]);
    CHECK(es_param_name_of(name, values[i]) && !strcmp(es_param_name_of(name, values[i]), names[i]),
          "%s: the name of %d", name, values[i]);
    CHECK(es_param_check_enum(name, values[i], NULL, 0) == ES_OK, "%s %d refused", name, values[i]);
  }
  v = -12345;
  CHECK(es_param_parse(name, "x", &v, msg, sizeof msg) == ES_ERR_USAGE && v == -12345,
        "%s x: taken", name);
  snprintf(want, sizeof want, "%s x: must be %s", name, list);
  check_msg(name, msg, name, want);
  CHECK(es_param_check_enum(name, 77, msg, sizeof msg) == ES_ERR_USAGE, "%s 77 taken", name);
  snprintf(want, sizeof want, "%s 77: must be %s", name, list);
  check_msg(name, msg, name, want);
  CHECK(es_param_name_of(name, 77) == NULL, "%s: a name for 77", name);
}

int main(void) {
  char msg[512];
  es_test_seed("test_pipeline_params");

  /* The numbers, their bounds and the rules' words: the CLI's "--window x: must be odd,
   * 1..255" and every other range message are these rules under a flag. */
  number("levels", 2, 65536, "must be 2..65536");
  number("stats_bins", 1, ES_STATS_MAX_BINS, "must be 1..1024");
  number("threads", 0, 4096, "must be 0..4096 (0 = all cores)");
  number("queue", 1, 4096, "must be 1..4096");
  number("gpu", 0, ES_MAX_GPUS - 1, "must be 0..63");
  number("cpu_below", 0, INT64_C(1) << 62, "must be 0..4611686018427387904 pixels");
  number("max_pixels", 1, INT64_C(1) << 62, "must be 1..4611686018427387904");
  number("crf", 0, 63, "must be 0..63");
  number("band", 0, 65535, "must be 0..65535");
  number("band_rows", 0, 1 << 30, "must be 0..1073741824 (0: from a 256 MiB budget)");
  number("level", 0, 63, "must be 0..63");
  number("mask_computed", 0, 1, "must be 0..1");
  /* The window: odd as well. */
  number("window", 1, ES_WINDOW_MAX, "must be odd, 1..255");
  for (int k = -1; k <= ES_WINDOW_MAX + 2; k++)
    CHECK((es_param_check("window", k, NULL, 0) == ES_OK) == (k >= 1 && k <= 255 && k % 2),
          "window %d", k);
  CHECK(es_param_check("window", 4, msg, sizeof msg) == ES_ERR_USAGE, "window 4 taken");
  check_msg("window 4", msg, "window", "window 4: must be odd, 1..255");
  /* overlay: a real number. */
  CHECK(es_param_check_real("overlay", 0.0, NULL, 0) == ES_OK &&
            es_param_check_real("overlay", 1.0, NULL, 0) == ES_OK,
        "overlay 0 or 1 refused");
  const double bad_overlay[] = {-0.001, 1.001, NAN, INFINITY};
  for (int i = 0; i < 4; i++) {
    CHECK(es_param_check_real("overlay", bad_overlay[i], msg, sizeof msg) == ES_ERR_USAGE,
          "overlay %g taken", bad_overlay[i]);
    check_msg("overlay", msg, "overlay", NULL);
  }
  CHECK(es_param_check_real("overlay", 1.5, msg, sizeof msg) == ES_ERR_USAGE, "overlay 1.5");
  check_msg("overlay 1.5", msg, "overlay", "overlay 1.5: must be 0..1");
  CHECK(es_param_rule("overlay", msg, sizeof msg) == ES_OK && !strcmp(msg, "must be 0..1"),
        "overlay rule %s", msg);

  /* The names. */
  {
    static const char *const shape[] = {"square", "disk"}, *const border[] = {"clip", "reflect"},
                             *const base[] = {"2", "e"}, *const device[] = {"auto", "gpu", "cpu"},
                             *const cmap[] = {"inferno", "viridis", "magma", "turbo", "gray"},
                             *const range[] = {"fixed", "auto"},
                             *const pix[] = {"yuv420p", "yuv444p"};
    static const int shape_v[] = {ES_SHAPE_SQUARE, ES_SHAPE_DISK},
                     border_v[] = {ES_BORDER_CLIP, ES_BORDER_REFLECT},
                     base_v[] = {ES_BASE_2, ES_BASE_E},
                     device_v[] = {ES_DEVICE_AUTO, ES_DEVICE_GPU, ES_DEVICE_CPU},
                     cmap_v[] = {ES_CMAP_INFERNO, ES_CMAP_VIRIDIS, ES_CMAP_MAGMA, ES_CMAP_TURBO,
                                 ES_CMAP_GRAY},
                     range_v[] = {0, 1}, pix_v[] = {ES_PIX_YUV420P, ES_PIX_YUV444P};
    named("shape", shape, shape_v, 2, "square or disk");
    named("border", border, border_v, 2, "clip or reflect");
    named("base", base, base_v, 2, "2 or e");
    named("device", device, device_v, 3, "auto, gpu or cpu");
    named("colormap", cmap, cmap_v, 5, "inferno, viridis, magma, turbo or gray");
    named("range", range, range_v, 2, "fixed or auto");
    named("pix_fmt", pix, pix_v, 2, "yuv420p or yuv444p");
    /* The named colormaps are the renderers' tables, one for one. */
    for (int i = -1; i <= 5; i++)
      CHECK(!es_colormap_lut(i) == !es_param_name_of("colormap", i), "colormap %d: lut %p", i,
            (const void *)es_colormap_lut(i));
    char q[64];
    CHECK(es_param_names("shape", "'", q, sizeof q) == ES_OK && !strcmp(q, "'square' or 'disk'"),
          "quoted names: %s", q);
  }
  /* Not a parameter of that kind: refused, never a crash. */
  CHECK(es_param_check("shape", 1, NULL, 0) == ES_ERR_USAGE, "shape as a number");
  CHECK(es_param_check(NULL, 1, NULL, 0) == ES_ERR_USAGE, "NULL number");
  CHECK(es_param_parse("window", "5", NULL, NULL, 0) == ES_ERR_USAGE, "window as a name");
  CHECK(es_param_parse(NULL, "x", NULL, msg, sizeof msg) == ES_ERR_USAGE, "NULL name");
  CHECK(es_param_rule("nothing", msg, sizeof msg) == ES_ERR_USAGE && !msg[0], "rule of nothing");
  CHECK(es_param_check_real("window", 1.0, NULL, 0) == ES_ERR_USAGE, "window as real");

  /* es_param_ref: a reference at the start of a message, not a word in one. */
  {
    static const struct { const char *s; size_t n; } refs[] = {
      {"window 4: must be odd", 6}, {"gpus: 0..64 entries allowed", 4},
      {"device gpu)", 6},           {"shard slurm: not in a job", 5},
      {"in_range 3:3: must be", 8}, {"stats FILE: must end", 5},
      {"stats_bins 0: must", 10},   {"level 3 is 4000 x 3000, more", 0},
      {"no band 3: the image", 0},  {"windows 4: x", 0},
      {"window", 0},                {"shard : must be I/N", 5},
      {"bit depth 7: must be", 0},  {"", 0}};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
      CHECK(es_param_ref(refs[i].s) == refs[i].n, "es_param_ref(\"%s\") = %zu, want %zu",
            refs[i].s, es_param_ref(refs[i].s), refs[i].n);
    CHECK(es_param_ref(NULL) == 0, "es_param_ref(NULL)");
  }

  /* es_params_check: each field of es_params. */
  {
    static const struct { const char *name, *want; int field, value; } pc[] = {
      {"window", "window 4: must be odd, 1..255", 0, 4},
      {"window", "window 257: must be odd, 1..255", 0, 257},
      {"shape", "shape 2: must be square or disk", 1, 2},
      {"border", "border -1: must be clip or reflect", 2, -1},
      {"base", "base 5: must be 2 or e", 3, 5},
      {"levels", "levels 1: must be 2..65536", 4, 1},
      {"levels", "levels 65537: must be 2..65536", 4, 65537},
      {"mask_computed", "mask_computed 3: must be 0..1", 5, 3},
      {"in_range", "in_range 2:1: must be finite, LO < HI", 6, 0}};
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
      es_params p;
      es_params_default(&p);
      int *f[] = {&p.window, &p.shape, &p.border, &p.base, &p.levels, &p.mask_computed};
      if (pc[i].field < 6) {
        *f[pc[i].field] = pc[i].value;
      } else {
        p.in_lo = 2;
        p.in_hi = 1;
      }
      CHECK(es_params_check(&p, 16, msg, sizeof msg) == ES_ERR_USAGE, "%s taken", pc[i].want);
      check_msg("es_params_check", msg, pc[i].name, pc[i].want);
    }
  }

  /* es_job_check, es_compute and es_stream_open: the statistics' bins, the colormap and
   * the overlay. */
  {
    uint8_t px[16] = {0}, rgb[48];
    float map[16];
    es_stats st;
    es_job job;
    memset(&job, 0, sizeof job);
    es_params_default(&job.params);
    job.in = (es_image){px, 4, 4, 4, 8, NULL, 0};
    job.map = map;
    job.map_stride = 4;
    CHECK(es_job_check(&job, msg, sizeof msg) == ES_OK, "good job: %s", msg);
    job.stats = &st;
    job.stats_bins = 0;
    CHECK(es_job_check(&job, msg, sizeof msg) == ES_ERR_USAGE, "stats_bins 0 taken");
    check_msg("es_job_check", msg, "stats_bins", "stats_bins 0: must be 1..1024");
    job.stats_bins = 16;
    es_render_default(&job.render);
    job.pix.plane[0] = rgb;
    job.pix.stride[0] = 12;
    CHECK(es_job_check(&job, msg, sizeof msg) == ES_OK, "good rendering: %s", msg);
    job.render.colormap = 9;
    CHECK(es_job_check(&job, msg, sizeof msg) == ES_ERR_USAGE, "colormap 9 taken");
    check_msg("es_job_check", msg, "colormap", "colormap 9: must be inferno, viridis, magma, turbo or gray");
    job.render.colormap = ES_CMAP_GRAY;
    job.render.overlay = 2.0f;
    CHECK(es_job_check(&job, msg, sizeof msg) == ES_ERR_USAGE, "overlay 2 taken");
    check_msg("es_job_check", msg, "overlay", "overlay 2: must be 0..1");

    es_config cfg;
    es_config_default(&cfg);
    cfg.device = ES_DEVICE_CPU;
    cfg.threads = 1;
    es_context *ctx = NULL;
    CHECK(es_context_create(&ctx, &cfg, msg, sizeof msg) == ES_OK, "context: %s", msg);
    if (ctx) {
      es_render r;
      es_render_default(&r);
      r.overlay = 2.0f;
      es_planes pl = {{rgb, NULL, NULL}, {12, 0, 0}};
      CHECK(es_compute(ctx, &job.in, map, 4, NULL, &r, &pl) == ES_ERR_USAGE, "es_compute overlay 2");
      check_msg("es_compute", es_context_error(ctx), "overlay", "overlay 2: must be 0..1");
      es_stream_config sc;
      memset(&sc, 0, sizeof sc);
      sc.render = r;
      es_stream *s = NULL;
      CHECK(es_stream_open(ctx, &sc, &s) == ES_ERR_USAGE && !s, "es_stream_open overlay 2");
      check_msg("es_stream_open", es_context_error(ctx), "overlay", "overlay 2: must be 0..1");
      sc.render.overlay = 0.5f;
      sc.render.colormap = -1;
      CHECK(es_stream_open(ctx, &sc, &s) == ES_ERR_USAGE && !s, "es_stream_open colormap -1");
      check_msg("es_stream_open", es_context_error(ctx), "colormap", NULL);
      es_context_destroy(&ctx);
    }
  }

  /* es_shard_parse (Slurm's variables unset: "slurm" outside a job). */
  {
    static const char *const vars[] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
                                       "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_NTASKS",
                                       "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    static const char *const specs[] = {"2/2", "0/0", "x", "1/", "/2", "slurm"};
    es_shard sh;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
      CHECK(es_shard_parse(specs[i], &sh, msg, sizeof msg) == ES_ERR_USAGE, "shard %s taken", specs[i]);
      check_msg("es_shard_parse", msg, "shard", NULL);
    }
    CHECK(es_shard_parse(NULL, &sh, msg, sizeof msg) == ES_ERR_USAGE, "shard NULL taken");
    check_msg("es_shard_parse", msg, "shard", "shard: no value");
    CHECK(es_shard_parse("1/3", &sh, msg, sizeof msg) == ES_OK && sh.index == 1 && sh.count == 3,
          "shard 1/3: %s", msg);
  }

  /* es_stats_writer_open: the file's name and the bins. */
  {
    es_stats_writer *w = NULL;
    CHECK(es_stats_writer_open(&w, "x.txt", 1, 16, msg, sizeof msg) == ES_ERR_USAGE && !w, "x.txt");
    check_msg("es_stats_writer_open", msg, "stats", "stats FILE: must end in .csv or .jsonl (or be -)");
    CHECK(es_stats_writer_open(&w, "-", 1, 1025, msg, sizeof msg) == ES_ERR_USAGE && !w, "1025 bins");
    check_msg("es_stats_writer_open", msg, "stats_bins", "stats_bins 1025: must be 1..1024");
  }
  return es_test_failures ? 1 : 0;
}
