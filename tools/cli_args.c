/*
 * cli_args.c - the command line: --help, strict number parsing, and cli_parse_args, which fills
 * a cli_opts from SPEC.md section 2's options and refuses a bad one with one line (exit 1).
 * The checks that need the input or the output looked at are main's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --queue's bound: below the library's (see OPT_QUEUE). */
#define CLI_QUEUE_MAX 1024

const char *const cli_fmt_names[] = {"heat", "gray8", "gray16", "f32"}; /* by enum fmt */

/* ---- Usage: one screen (under 40 lines), the options with their ranges and defaults and four
 * examples; the detail is the man page's (docs/entropy-stream.1). */
static void usage(FILE *f) {
  fprintf(f,
    "usage: " PROG " [OPTIONS] INPUT [-o OUTPUT]\n"
    "Local Shannon entropy heat maps of images and video, on CPUs and NVIDIA GPUs.\n"
    "INPUT   an image (png, jpg, tif, ...) | a directory of them | video(s) | -\n"
    "OUTPUT  x.png | x.npy | x.tif | x.mp4, ... | a directory | - (stdout: y4m, raw\n"
    "        float32 with --format f32); with neither -o nor --stats: stats on stdout\n"
    "Options (default in brackets):\n"
    "  -w, --window K      window size, odd, 1..255 [5]\n"
    "      --shape S       square|disk [square]\n"
    "      --border B      clip|reflect [clip]; --mask IMG: non-zero = inside\n"
    "  -L, --levels L      levels, 2..65536 (8-bit input: L above 256 as 256) [16]\n"
    "      --base B        2|e: bits or nats [2]; --in-range LO:HI of float input\n"
    "      --format F      heat|gray8|gray16|f32 [heat]; --band N: a TIFF's band [0]\n"
    "      --colormap C    inferno|viridis|magma|turbo|gray [inferno]\n"
    "      --range R       fixed|auto: scale by log2(min(|W|, L)) or min..max [fixed]\n"
    "      --overlay A     0..1: heat over the source grey; heat and gray8 only [off]\n"
    "      --stats FILE    one record per image or frame: .csv, .jsonl or - (CSV)\n"
    "      --stats-bins B  histogram bins of H, 1..%d [16]\n"
    "      --device D      auto|gpu|cpu [auto]\n"
    "      --gpus LIST     all|0,2,...: distinct GPU ordinals 0..%d [all]\n"
    "      --cpu-below N   under auto, smaller frames go to the CPU, 0..2^62 [163840]\n"
    "      --threads N     CPU worker threads, 0..4096, 0 = all cores [0]\n"
    "      --queue N       frames in flight a stage, 1..1024 [8; 4 a GPU for 3+ GPUs]\n"
    "      --raw SPEC      raw stdin: gray8:WxH[@FPS] or gray16le:WxH[@FPS]\n"
    "      --codec NAME    video encoder [libx264, else mpeg4, else the container's]\n"
    "      --crf N         encoder quality, 0..63; --preset P [both: the encoder's]\n"
    "      --pix-fmt F     yuv420p|yuv444p: heat video chroma [yuv420p; y4m yuv444p]\n"
    "      --max-pixels N  refuse larger inputs, 1..2^62 [2^31]; --shard I/N|slurm\n"
    "  -r, --recursive     descend into subdirectories; --ext png,jpg: only those\n"
    "  -o, --output PATH   where to write; -y, -n: overwrite, skip existing [refuse]\n"
    "  -q, --quiet         no progress, no summary; -v, --verbose: devices, each file\n"
    "      --progress      progress on stderr; --no-progress [on a terminal]\n"
    "      --version       versions of the library, FFmpeg, CUDA; -h, --help: this\n"
    "Exit: 0 done, 1 usage, 2 input, 3 output, 4 device or memory, 130 interrupted.\n"
    "Examples:\n"
    "  " PROG " photo.png -o heat.png\n"
    "  " PROG " photos/ -r -o heat/ --stats stats.csv\n"
    "  " PROG " in.mp4 -o heat.mp4 --crf 20\n"
    "  ffmpeg -i in.mkv -f yuv4mpegpipe - | " PROG " - -o - | ffmpeg -i - o.mp4\n"
    "Everything else: man " PROG " (docs/entropy-stream.1 in the source).\n",
    ES_STATS_MAX_BINS, ES_MAX_GPUS - 1);
}

/* ---- Strict number parsing: the whole string, in range. strtoll and strtod alone also take
 * leading white space, a sign, and (strtod) hex, exponents, inf and nan: " 5", "+5", "-0",
 * "0x1" and "1e-1" all passed. A number here is decimal digits only (no option takes a
 * negative value), and a real number digits with one optional decimal point ("0.3", ".5"). */
static int all_digits(const char *s) {
  return *s && s[strspn(s, "0123456789")] == 0;
}

/* The length of the plain decimal number at the start of s ("29.97", "5.", ".5"), or 0. */
static size_t decimal_len(const char *s) {
  size_t n = strspn(s, "0123456789"), k = 0;
  if (s[n] == '.') k = strspn(s + n + 1, "0123456789");
  if (!n && !k) return 0;
  return s[n] == '.' ? n + 1 + k : n;
}

static int parse_i64(const char *s, int64_t hi, int64_t *out) {
  char *end;
  long long v;
  if (!s || !all_digits(s)) return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || *end || v > hi) return -1;
  *out = v;
  return 0;
}

/* --in-range LO:HI: two finite decimal numbers (a sign, a point and an exponent allowed:
 * float data spans any scale; no hex, inf or nan), LO < HI. */
static int parse_real(const char *s, size_t n, double *out) {
  char buf[64], *end;
  if (n == 0 || n >= sizeof buf || strspn(s, "0123456789+-.eE") < n) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  errno = 0;
  *out = strtod(buf, &end);
  return errno || *end || !(*out - *out == 0.0) ? -1 : 0;
}
static int parse_in_range(const char *s, double *lo, double *hi) {
  const char *c = strchr(s, ':');
  if (!c || parse_real(s, (size_t)(c - s), lo) || parse_real(c + 1, strlen(c + 1), hi)) return -1;
  return *lo < *hi ? 0 : -1;
}

/* ---- The values' rules are the library's (core/params.c, es_param_*): the CLI parses the
 * text (decimal digits, a name) and refuses a bad value with the library's rule under its
 * flag, "--window x: must be odd, 1..255". */
static int bad_value(const char *param, const char *a) {
  char rule[128], flag[40];
  es_param_rule(param, rule, sizeof rule);
  cli_err(NULL, "%s %s: %s", cli_flag(param, flag, sizeof flag), a, rule);
  return 1;
}

/* A number option: decimal digits, in the range the library gives param; param NULL: any
 * int (a parameter es_params_check rules once every option is read). */
static int num_opt(const char *param, const char *a, int64_t *v) {
  int64_t x;
  if (parse_i64(a, param ? INT64_MAX : INT_MAX, &x) ||
      (param && es_param_check(param, x, NULL, 0) != ES_OK))
    return -1;
  *v = x;
  return 0;
}
static int int_opt(const char *param, const char *a, int *v) {
  int64_t x;
  if (num_opt(param, a, &x)) return -1; /* every int parameter's range is within an int */
  *v = (int)x;
  return 0;
}

static int pick(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* "gray8:WxH[@FPS]" / "gray16le:WxH[@FPS]": checked here so a typo is a usage error. */
static int raw_spec_ok(const char *s) {
  const char *p;
  char *end;
  long w, h;
  if (!strncmp(s, "gray8:", 6))
    p = s + 6;
  else if (!strncmp(s, "gray16le:", 9))
    p = s + 9;
  else
    return 0;
  errno = 0;
  if (*p < '0' || *p > '9') return 0; /* digits only: no " 5", "+5" */
  w = strtol(p, &end, 10);
  if (errno || end == p || *end != 'x' || w < 1 || w > 1 << 20) return 0;
  p = end + 1;
  if (*p < '0' || *p > '9') return 0;
  h = strtol(p, &end, 10);
  if (errno || end == p || h < 1 || h > 1 << 20) return 0;
  if (*end == '@') {
    /* A number (25, 29.97) or a ratio as FFmpeg writes rates (30000/1001, 30000:1001), in
     * plain decimal (no hex, exponent, sign or inf). */
    double fps;
    size_t n;
    p = end + 1;
    if (!(n = decimal_len(p))) return 0;
    fps = strtod(p, &end);
    if (end != p + n) return 0;
    if (*end == '/' || *end == ':') {
      const char *q = end + 1;
      double den;
      if (!(n = decimal_len(q))) return 0;
      den = strtod(q, &end);
      if (end != q + n || !(den > 0)) return 0;
      fps /= den;
    }
    if (*end || !(fps > 0 && fps <= 1000)) return 0;
  } else if (*end) {
    return 0;
  }
  return 1;
}

/* ---- The nearest option to a misspelt one. The optimal string alignment distance between two
 * names: Levenshtein's insertions, deletions and substitutions, and a swap of two neighbours
 * (--widnow) counted as one edit, as git's "did you mean" counts it. Three rows of the
 * table; a name longer than 63 bytes is far from every option. */
static int option_distance(const char *a, const char *b) {
  int cli_longopts[3][64], *r2 = cli_longopts[0], *r1 = cli_longopts[1], *r = cli_longopts[2];
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return INT_MAX;
  for (size_t j = 0; j <= lb; j++) r1[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    r[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int d = r1[j - 1] + (a[i - 1] != b[j - 1]);
      if (r1[j] + 1 < d) d = r1[j] + 1;
      if (r[j - 1] + 1 < d) d = r[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && r2[j - 2] + 1 < d)
        d = r2[j - 2] + 1;
      r[j] = d;
    }
    int *t = r2;
    r2 = r1;
    r1 = r;
    r = t;
  }
  return r1[lb];
}

/* The long option nearest to name (without its "--"), or NULL where none is close: one edit
 * for a name of up to four letters, two for a longer one, and never as many edits as the
 * name has letters (--xy is not --gpus misspelt). A tie goes to the first in the table. */
static const char *nearest_option(const char *name, const struct option *longopts) {
  const char *best = NULL;
  int best_d = INT_MAX, n = (int)strlen(name), limit = n <= 4 ? 1 : 2;
  for (const struct option *lo = longopts; lo->name; lo++) {
    int d = option_distance(name, lo->name);
    if (d < best_d) {
      best_d = d;
      best = lo->name;
    }
  }
  return best_d <= limit && best_d < n ? best : NULL;
}

/* ---- The options that are more than a number or a name: each reads its value a (NULL for
 * one that takes none) into o. 0 to go on, 1 for a usage error (said), -2 after --help and
 * --version (exit 0). */
static int opt_format(cli_opts *o, const char *a) {
  int v = pick(a, cli_fmt_names, 4);
  CLI_REFUSE(v < 0, 1, NULL, "--format %s: must be heat, gray8, gray16 or f32", a);
  o->format = v;
  o->format_set = 1;
  return 0;
}

static int opt_overlay(cli_opts *o, const char *a) {
  char *end, rule[32];
  double d;
  size_t n = decimal_len(a);
  errno = 0;
  d = n ? strtod(a, &end) : -1; /* plain decimal: no " 0.5", "+0.5", "0x1", "1e-1", "nan" */
  if (!n || errno || end != a + n || *end || es_param_check_real("overlay", d, NULL, 0)) {
    es_param_rule("overlay", rule, sizeof rule); /* "must be 0..1" */
    cli_err(NULL, "--overlay %s: must be a decimal number %s (0.3)", a, rule + strlen("must be "));
    return 1;
  }
  o->render.overlay = (float)d;
  o->render.overlay_on = 1; /* 0 too: the grey alone, not "no overlay" */
  return 0;
}

static int opt_stats(cli_opts *o, const char *a) {
  CLI_REFUSE(o->stats_path, 1, NULL, "--stats %s: only one statistics file", a); /* as -o */
  CLI_REFUSE(!*a, 1, NULL, "--stats: needs a file name (.csv, .jsonl) or -");
  /* before any output directory is made */
  CLI_REFUSE(!es_stats_path_ok(a), 1, a, "--stats FILE: must end in .csv or .jsonl (or be -)");
  o->stats_path = a;
  return 0;
}

static int opt_gpus(cli_opts *o, const char *a) {
  char buf[512], *tok, *save = NULL, rule[32];
  size_t len = strlen(a);
  int v;
  o->gpus_set = 1;
  o->cfg.ngpus = 0;
  if (!strcmp(a, "all")) return 0;
  snprintf(buf, sizeof buf, "%s", a);
  /* strtok_r skips empty fields: "0," and ",0" would pass for "0". */
  if (!len || len >= sizeof buf || a[0] == ',' || a[len - 1] == ',' || strstr(a, ",,"))
    o->cfg.ngpus = -1;
  for (tok = o->cfg.ngpus < 0 ? NULL : strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (o->cfg.ngpus >= ES_MAX_GPUS || int_opt("gpu", tok, &v)) {
      o->cfg.ngpus = -1;
      break;
    }
    for (int i = 0; i < o->cfg.ngpus; i++)
      if (o->cfg.gpus[i] == v) o->cfg.ngpus = -1;
    if (o->cfg.ngpus < 0) break;
    o->cfg.gpus[o->cfg.ngpus++] = v;
  }
  es_param_rule("gpu", rule, sizeof rule); /* "must be 0..63" */
  CLI_REFUSE(o->cfg.ngpus <= 0, 1, NULL,
             "--gpus %s: must be all or a list of distinct ordinals %s (0,2,...)", a,
             rule + strlen("must be "));
  return 0;
}

/* The library takes 1..4096; the CLI stops at CLI_QUEUE_MAX, a program's choice: each
 * stage's frames are memory held, and more gained nothing measured. */
static int opt_queue(cli_opts *o, const char *a) {
  CLI_REFUSE(int_opt("queue", a, &o->cfg.queue) || o->cfg.queue > CLI_QUEUE_MAX, 1, NULL,
             "--queue %s: must be 1..%d", a, CLI_QUEUE_MAX);
  return 0;
}

static int opt_raw(cli_opts *o, const char *a) {
  CLI_REFUSE(!raw_spec_ok(a), 1, NULL, "--raw %s: must be gray8:WxH[@FPS] or gray16le:WxH[@FPS], "
             "W and H 1..%d, FPS above 0 and at most 1000 (25, 29.97 or 30000/1001)", a, 1 << 20);
  o->raw = a;
  return 0;
}

static int opt_codec(cli_opts *o, const char *a) {
  CLI_REFUSE(!*a, 1, NULL, "--codec: needs an encoder name (libx264, mpeg4, ...)");
  o->codec = a;
  return 0;
}

static int opt_mask(cli_opts *o, const char *a) {
  CLI_REFUSE(o->mask_path || !*a, 1, NULL, "--mask %s: one mask file (a PNG of the input's size)",
             a);
  o->mask_path = a;
  return 0;
}

static int opt_in_range(cli_opts *o, const char *a) {
  CLI_REFUSE(parse_in_range(a, &o->cfg.params.in_lo, &o->cfg.params.in_hi), 1, NULL,
             "--in-range %s: must be LO:HI, decimal numbers with LO < HI (-1.5:2e3)", a);
  return 0;
}

/* The extensions a directory batch takes: each one this build reads. */
static int opt_ext(cli_opts *o, const char *a) {
  char msg[MSG_LEN];
  CLI_REFUSE(es_still_filter_check(a, msg, sizeof msg) != ES_OK, 1, NULL, "--ext %s: %s", a, msg);
  o->ext = a;
  return 0;
}

/* The rules, Slurm's variables too, are the library's (shard.c). */
static int opt_shard(cli_opts *o, const char *a) {
  char msg[MSG_LEN];
  CLI_REFUSE(es_shard_parse(a, &o->shard, msg, sizeof msg) != ES_OK, 1, NULL, "%s", msg);
  o->shard_set = 1;
  return 0;
}

static int opt_output(cli_opts *o, const char *a) {
  CLI_REFUSE(o->output, 1, NULL, "-o %s: only one output", a);
  CLI_REFUSE(!*a, 1, NULL, "-o: needs a file name, a directory or -");
  o->output = a;
  return 0;
}

static int opt_version(cli_opts *o, const char *a) {
  char buf[4096];
  (void)o, (void)a;
  es_version_info(buf, sizeof buf);
  fputs(buf, stdout);
  if (*buf && buf[strlen(buf) - 1] != '\n') fputc('\n', stdout);
  return -2;
}

static int opt_help(cli_opts *o, const char *a) {
  (void)o, (void)a;
  usage(stdout);
  return -2;
}

/* ---- The table: one row an option, in --help's order of old (the order getopt_long's
 * abbreviations, "did you mean" and "ambiguous option" go by). A number or a name is read
 * here and ruled by the library's parameter (es_param_*); the rest by its own function. */
enum {
  K_DIGITS, /* decimal digits into an int; the range is es_params_check's, after every option */
  K_INT,    /* decimal digits into an int, in param's range */
  K_I64,    /* decimal digits into an int64_t, in param's range */
  K_NAME,   /* one of param's names (es_param_parse) into an int */
  K_TEXT,   /* the text itself, kept */
  K_SET,    /* no value: the int set to value */
  K_COUNT,  /* no value: the int counts the times given (-vv) */
  K_FN,     /* fn(o, value) */
  K_FN0     /* no value: fn(o, NULL) */
};
typedef struct opt_row {
  const char *name; /* the long name, or NULL (a letter alone) */
  int letter;       /* the short option, or 0 */
  int kind;
  const char *param; /* the library's parameter (K_DIGITS .. K_NAME) */
  size_t at;         /* offsetof(cli_opts, the value) */
  size_t set;        /* offsetof(cli_opts, the int set to 1 when given), or 0 for none */
  int value;         /* K_SET's */
  int (*fn)(cli_opts *o, const char *a);
} opt_row;

#define AT(field) offsetof(cli_opts, field)
static const opt_row cli_longopts[] = {
  {"window", 'w', K_DIGITS, "window", AT(cfg.params.window)},
  {"shape", 0, K_NAME, "shape", AT(cfg.params.shape)},
  {"border", 0, K_NAME, "border", AT(cfg.params.border)},
  {"levels", 'L', K_DIGITS, "levels", AT(cfg.params.levels)},
  {"base", 0, K_NAME, "base", AT(cfg.params.base)},
  {"format", .kind = K_FN, .fn = opt_format},
  {"colormap", 0, K_NAME, "colormap", AT(render.colormap), AT(colormap_set)},
  {"range", 0, K_NAME, "range", AT(render.range_auto), AT(range_set)},
  {"overlay", .kind = K_FN, .fn = opt_overlay},
  {"stats", .kind = K_FN, .fn = opt_stats},
  {"stats-bins", 0, K_INT, "stats_bins", AT(cfg.stats_bins)},
  {"device", 0, K_NAME, "device", AT(cfg.device)},
  {"gpus", .kind = K_FN, .fn = opt_gpus},
  {"cpu-below", 0, K_I64, "cpu_below", AT(cfg.cpu_below), AT(cpu_below_set)},
  {"threads", 0, K_INT, "threads", AT(cfg.threads)},
  {"queue", .kind = K_FN, .fn = opt_queue},
  {"raw", .kind = K_FN, .fn = opt_raw},
  {"codec", .kind = K_FN, .fn = opt_codec},
  {"crf", 0, K_INT, "crf", AT(crf)},
  {"preset", 0, K_TEXT, .at = AT(preset)},
  {"pix-fmt", 0, K_NAME, "pix_fmt", AT(pix_fmt)},
  {"max-pixels", 0, K_I64, "max_pixels", AT(max_pixels)},
  {"shard", .kind = K_FN, .fn = opt_shard},
  {"band", 0, K_INT, "band", AT(band), AT(band_set)},
  {"band-rows", 0, K_INT, "band_rows", AT(band_rows)}, /* 0: bands from a memory budget */
  {"level", 0, K_INT, "level", AT(level)},             /* a whole-slide image's level */
  {"recursive", 'r', K_SET, .at = AT(recursive), .value = 1},
  {"output", 'o', K_FN, .fn = opt_output},
  {"ext", .kind = K_FN, .fn = opt_ext},
  {"quiet", 'q', K_SET, .at = AT(quiet), .value = 1},
  {"verbose", 'v', K_COUNT, .at = AT(verbose)},
  {"progress", 0, K_SET, .at = AT(progress), .value = 1},
  {"no-progress", 0, K_SET, .at = AT(progress), .value = 0},
  {"version", 0, K_FN0, .fn = opt_version},
  {"help", 'h', K_FN0, .fn = opt_help},
  {"mask", .kind = K_FN, .fn = opt_mask},
  {"in-range", .kind = K_FN, .fn = opt_in_range},
  {NULL, 'y', K_SET, .at = AT(overwrite), .value = 1},
  {NULL, 'n', K_SET, .at = AT(skip), .value = 1},
  {0, 0, 0, 0}}; /* the end (test_docs reads the names up to it) */
#undef AT
#define NROWS (sizeof cli_longopts / sizeof *cli_longopts - 1)

/* Reads option r's value a into o: 0, 1 (said), or -2 (--help, --version). */
static int apply(const opt_row *r, const char *a, cli_opts *o) {
  char *base = (char *)o;
  int *v = (int *)(base + r->at);
  switch (r->kind) {
  case K_DIGITS:
  case K_INT:
    if (int_opt(r->kind == K_INT ? r->param : NULL, a, v)) return bad_value(r->param, a);
    break;
  case K_I64:
    if (num_opt(r->param, a, (int64_t *)(base + r->at))) return bad_value(r->param, a);
    break;
  case K_NAME:
    if (es_param_parse(r->param, a, v, NULL, 0)) return bad_value(r->param, a);
    break;
  case K_TEXT: *(const char **)(base + r->at) = a; break;
  case K_SET: *v = r->value; break;
  case K_COUNT: ++*v; break;
  default: return r->fn(o, a);
  }
  if (r->set) *(int *)(base + r->set) = 1;
  return 0;
}

/* An option getopt_long refused (c: '?' unknown, ':' without its value): said, returns 1. */
static int bad_option(int c, char **argv, const struct option *longopts) {
  /* getopt_long sets optopt for long options too: name what the user typed. */
  const char *arg = argv[optind - 1];
  char name[128];
  /* "--help=x": glibc returns '?' with optopt set to the option's value (0 for an
   * unknown name); name it in full, even where an abbreviation was typed. */
  if (c == '?' && optopt && !strncmp(arg, "--", 2) && strchr(arg, '=')) {
    for (const struct option *lo = longopts; lo->name; lo++) {
      if (lo->val == optopt && lo->has_arg == no_argument) {
        cli_err(NULL, "--%s: takes no value", lo->name);
        return 1;
      }
    }
  }
  if (!strncmp(arg, "--", 2))
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
  else
    snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
  /* An abbreviation of several options comes back as '?' with optopt 0, as an unknown
   * name does: name the options it could be. */
  if (c == '?' && !optopt && !strncmp(arg, "--", 2) && name[2]) {
    char list[256] = "";
    size_t at = 0, n = strlen(name + 2);
    int k = 0;
    for (const struct option *lo = longopts; lo->name; lo++) {
      if (strncmp(lo->name, name + 2, n) || at >= sizeof list) continue;
      at += (size_t)snprintf(list + at, sizeof list - at, "%s--%s", k++ ? ", " : "", lo->name);
    }
    if (k > 1) {
      cli_err(NULL, "%s: ambiguous option (%s; see --help)", name, list);
      return 1;
    }
  }
  if (c == '?' && !optopt && !strncmp(arg, "--", 2)) {
    const char *near = nearest_option(name + 2, longopts);
    if (near) {
      cli_err(NULL, "%s: unknown option; did you mean --%s?", name, near);
      return 1;
    }
  }
  cli_err(NULL, "%s: %s (see --help)", name, c == ':' ? "needs a value" : "unknown option");
  return 1;
}

/* Returns 0 to go on, 1 for a usage error (message printed), or -2 after --help/--version
 * (exit 0). */
int cli_parse_args(int argc, char **argv, cli_opts *o) {
  struct option longopts[NROWS + 1];
  size_t nl = 0;
  int c, rc;

  memset(longopts, 0, sizeof longopts);
  /* getopt_long's value of a row: its letter, or 256 + its index. */
  for (size_t i = 0; i < NROWS; i++) {
    const opt_row *r = &cli_longopts[i];
    const int none = r->kind == K_SET || r->kind == K_COUNT || r->kind == K_FN0;
    if (r->name)
      longopts[nl++] = (struct option){r->name, none ? no_argument : required_argument, NULL,
                                       r->letter ? r->letter : 256 + (int)i};
  }
  opterr = 0; /* our own one-line messages */
  while ((c = getopt_long(argc, argv, ":w:L:o:rynqvh", longopts, NULL)) != -1) {
    const opt_row *r = c >= 256 && c < 256 + (int)NROWS ? &cli_longopts[c - 256] : NULL;
    for (size_t i = 0; !r && i < NROWS && c != '?' && c != ':'; i++)
      if (cli_longopts[i].letter == c) r = &cli_longopts[i];
    if (!r) return bad_option(c, argv, longopts);
    if ((rc = apply(r, optarg, o)) != 0) return rc;
  }
  char msg[MSG_LEN];
  CLI_REFUSE(optind >= argc, 1, NULL,
             "no INPUT given (usage: " PROG " [OPTIONS] INPUT [-o OUTPUT]; see --help)");
  o->input = argv[optind];
  o->inputs = (const char *const *)&argv[optind]; /* several: videos (cli_many.c) */
  o->ninputs = argc - optind;
  CLI_REFUSE(o->overwrite && o->skip, 1, NULL, "-y and -n: choose one");
  /* Every depth takes the same parameters (8-bit input: L above 256 as 256). */
  CLI_REFUSE(es_params_check(&o->cfg.params, 16, msg, sizeof msg) != ES_OK, 1, NULL, "%s", msg);
  /* Device options the run would ignore, refused as the output's are: --device cpu opens no
   * GPU, and --cpu-below is auto's line between the CPU and the GPUs (under cpu or gpu every
   * frame goes to that device). */
  CLI_REFUSE(o->gpus_set && o->cfg.device == ES_DEVICE_CPU, 1, NULL,
             "--gpus: not with --device cpu (it uses no GPU)");
  CLI_REFUSE(o->cpu_below_set && o->cfg.device != ES_DEVICE_AUTO, 1, NULL,
             "--cpu-below: only with --device auto (under %s every frame goes to the %s)",
             o->cfg.device == ES_DEVICE_CPU ? "cpu" : "gpu",
             o->cfg.device == ES_DEVICE_CPU ? "CPU" : "GPUs");
  /* The blend is 8-bit (the renderers' es_blend): rather refused than silently ignored. */
  CLI_REFUSE(o->render.overlay_on && o->format == FMT_GRAY16, 1, NULL,
             "--overlay: not with --format gray16 (use heat or gray8)");
  CLI_REFUSE(o->stats_path && o->output && !strcmp(o->stats_path, "-") && !strcmp(o->output, "-"),
             1, NULL, "--stats - and -o -: both would write to standard output");
  return 0;
}
