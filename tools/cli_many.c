/*
 * cli_many.c - several videos in one run (issue 31): `entropy-stream a.mp4 b.mkv -o heat/
 * --stats s.csv`, or a directory that holds video files and no stills. One context for all
 * of them (the GPUs opened once, cuInit paid once: es_run_config.context), and a few of the
 * library's runs at a time on threads of their own, so that the cores' decoders and the GPUs
 * are shared by several videos. Each video's heat video is DIR/<its base name> (the input's
 * container where the library writes it, else .mkv); its statistics go to a part file of its
 * own next to the --stats file, and the parts are joined in the videos' order at the end
 * (memory bounded: a record at a time), so that the one file equals the single runs' files
 * one after another, under one header. A video that fails is said by its run and counted;
 * the others finish, and the exit code is the worst (SPEC 3).
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Video files by extension (a directory's): a directory that holds any of these and no
 * still is a list of videos. */
static const char *const video_exts[] = {"mp4", "mkv", "mov", "avi", "webm", "ts", "m2ts",
                                         "mts", "m4v", "mpg", "mpeg", "y4m", "nut", "flv",
                                         "wmv", "ogv", "3gp", "mxf", "h264", "264", "hevc",
                                         "h265", "ivf", "mjpeg", NULL};
static int is_video_name(const char *name) {
  const char *e = cli_ext_of(name);
  for (int i = 0; video_exts[i]; i++)
    if (!strcasecmp(e, video_exts[i])) return 1;
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_dir_videos(const char *dir, char ***paths, size_t *n) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char **v = NULL;
  size_t cap = 0, k = 0;
  int stills = 0;
  *paths = NULL;
  *n = 0;
  if (!d) return 0;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    char *p;
    if (e->d_name[0] == '.') continue; /* hidden, and our own temporaries */
    if (!(p = es_join_path(dir, e->d_name))) break;
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(p);
      continue;
    }
    if (es_still_ext_ok(p, NULL)) stills = 1;
    if (!is_video_name(e->d_name) || stills) {
      free(p);
      if (stills) break; /* a batch of stills, as before: nothing more to know */
      continue;
    }
    if (k == cap) {
      char **nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
      if (!nv) {
        free(p);
        break;
      }
      v = nv;
    }
    v[k++] = p;
  }
  closedir(d);
  if (stills || !k) {
    for (size_t i = 0; i < k; i++) free(v[i]);
    free(v);
    return 0;
  }
  qsort(v, k, sizeof *v, name_cmp);
  *paths = v;
  *n = k;
  return 1;
}

/* One video of the list. */
typedef struct many_item {
  const char *in;
  char *out;       /* DIR/<base>, or NULL (no -o, or skipped with -n) */
  char *part;      /* its statistics part file, or NULL */
  int code;        /* the run's exit code (-1: not run) */
  int begun;       /* its run began (not one a stop left out) */
  int64_t frames;
} many_item;

typedef struct many {
  cli_opts *o;
  es_context *ctx;
  many_item *it;
  size_t n;
  atomic_size_t next; /* the next item a worker takes */
  const char *stats_ext;
  int dec_threads;    /* each video's decoder threads */
} many;

static int many_stopped(void) { return atomic_load(&g_stop) != 0; }

/* Runs item i: its source, -o's sink and the statistics part. The exit code. */
static int run_item(many *m, many_item *t) {
  cli_opts *o = m->o;
  es_run_config rc_cfg;
  es_run *run = NULL;
  es_source src;
  es_sink k;
  es_video_source_opts vso = {NULL, o->max_pixels, o->verbose && !o->quiet, 0, 0, 0, 0, 0, 0,
                              m->dec_threads};
  es_sink_opts so = {cli_png_pixfmt(o->format), 0, o->codec, o->crf, o->preset, o->pix_fmt,
                     o->overwrite, o->skip, t->in, o->cfg.stats_bins};
  int rc;
  if ((rc = es_source_video(&src, t->in, &vso)) != ES_OK) {
    cli_err(t->in, "%s", es_strerror(rc));
    return es_exit_code(rc);
  }
  es_run_config_default(&rc_cfg);
  rc_cfg.cfg = o->cfg;
  rc_cfg.render = o->render;
  rc_cfg.stopped = many_stopped;
  rc_cfg.mask = o->mask;
  rc_cfg.mask_stride = (size_t)o->mask_w;
  rc_cfg.mask_width = o->mask_w;
  rc_cfg.mask_height = o->mask_h;
  rc_cfg.mask_name = o->mask_path;
  rc_cfg.context = m->ctx;
  if ((rc = es_run_create(&run, &rc_cfg, &src)) != ES_OK) goto fail;
  if (t->out) {
    if ((rc = es_sink_for_video(&k, t->out, &so)) != ES_OK || (rc = es_run_add_sink(run, &k)))
      goto fail;
  }
  if (t->part) {
    so.overwrite = 1; /* the part file made empty by mkstemps: replaced */
    if ((rc = es_sink_stats(&k, t->part, &so)) != ES_OK || (rc = es_run_add_sink(run, &k)))
      goto fail;
  }
  es_run_execute(run);
  {
    es_run_counts c;
    es_run_get_counts(run, &c);
    t->frames = c.frames;
    rc = c.exit_code;
  }
  es_run_destroy(&run);
  return rc;
fail:
  cli_err(t->in, "%s", es_strerror(rc));
  es_run_destroy(&run);
  return es_exit_code(rc);
}

static void *worker_main(void *arg) {
  many *m = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&m->next, 1);
    if (i >= m->n) break;
    if (atomic_load(&g_stop)) { /* a stop: no video begins after it */
      m->it[i].code = 130;
      continue;
    }
    m->it[i].begun = 1;
    m->it[i].code = run_item(m, &m->it[i]);
  }
  return NULL;
}

/* Copies the part file's records (its first hdr_lines lines are the header) to out. */
static int append_part(FILE *out, const char *part, int hdr_lines, int with_header) {
  FILE *f = fopen(part, "rb");
  int c, line = 0;
  if (!f) return errno == ENOENT ? 0 : -1; /* a run that opened no sink wrote nothing */
  while ((c = getc(f)) != EOF) {
    if (line >= hdr_lines || with_header) putc(c, out);
    if (c == '\n') line++;
  }
  int bad = ferror(f);
  fclose(f);
  return bad ? -1 : 0;
}

/* Lines in the header of an empty statistics file of this kind (CSV 1, JSON lines 0). */
static int header_lines(const many *m, const char *hdr_path) {
  es_stats_writer *sw = NULL;
  char msg[MSG_LEN];
  int lines = -1, c;
  if (es_stats_writer_open(&sw, hdr_path, 1, m->o->cfg.stats_bins, msg, sizeof msg) != ES_OK)
    return -1;
  if (es_stats_writer_close(&sw, 1, msg, sizeof msg) != ES_OK) return -1;
  FILE *f = fopen(hdr_path, "rb");
  if (!f) return -1;
  lines = 0;
  while ((c = getc(f)) != EOF) lines += c == '\n';
  fclose(f);
  return lines;
}

/* Joins the parts into the --stats file (one header, then every video's records in order),
 * written to a temporary and renamed, or to standard output. 0, or the exit code (said). */
static int join_stats(many *m, const char *hdr_path) {
  const cli_opts *o = m->o;
  char msg[MSG_LEN] = "";
  es_atomic a;
  FILE *out = stdout;
  int hl = header_lines(m, hdr_path), rc = 0;
  memset(&a, 0, sizeof a);
  if (hl < 0) {
    cli_err(o->stats_path, "cannot write the statistics' header");
    return 3;
  }
  if (strcmp(o->stats_path, "-")) {
    if ((rc = es_atomic_open(&a, o->stats_path, o->overwrite, msg, sizeof msg)) != ES_OK) {
      cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
      return 3;
    }
    out = a.fp;
  }
  rc = append_part(out, hdr_path, hl, 1); /* the header, once, whatever the parts hold */
  for (size_t i = 0; i < m->n && !rc; i++)
    if (m->it[i].part) rc = append_part(out, m->it[i].part, hl, 0);
  if (rc) {
    cli_err(o->stats_path, "cannot join the videos' statistics: %s", strerror(errno ? errno : EIO));
    es_atomic_abort(&a);
    return 3;
  }
  if (out == stdout) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_err("-", "write error: %s", strerror(errno ? errno : EIO));
      return 3;
    }
    return 0;
  }
  if ((rc = es_atomic_commit(&a, msg, sizeof msg)) != ES_OK && rc != ES_WRITE_KEPT) {
    cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
    return 3;
  }
  return 0;
}

/* A part file for the statistics of item i: next to the --stats file (its directory's
 * filesystem), or in TMPDIR for standard output. Created empty, tracked (a second SIGINT
 * removes it). */
static char *part_make(const cli_opts *o, const char *ext, const char *tag) {
  const char *tmpdir = getenv("TMPDIR");
  char *base, *t;
  size_t len;
  int fd;
  if (strcmp(o->stats_path, "-")) {
    base = es_tmp_template(o->stats_path, tag);
  } else {
    base = malloc(strlen(tmpdir && *tmpdir ? tmpdir : "/tmp") + strlen(tag) + 40);
    if (base) sprintf(base, "%s/.entropy-stream.%s-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp", tag);
  }
  if (!base) return NULL;
  len = strlen(base) + strlen(ext) + 2;
  t = malloc(len);
  if (t) snprintf(t, len, "%s.%s", base, ext);
  free(base);
  if (!t) return NULL;
  if ((fd = mkstemps(t, (int)strlen(ext) + 1)) < 0) {
    free(t);
    return NULL;
  }
  close(fd);
  es_tmp_track(t);
  return t;
}

static void part_drop(char *p) {
  if (!p) return;
  unlink(p);
  es_tmp_untrack(p);
  free(p);
}

/* How many videos run at once: ES_MANY_RUNS, else a quarter of the cores (each video's
 * decoder takes threads of its own), at least 2 and at most 8. */
static int runs_at_once(size_t n) {
  const char *e = getenv("ES_MANY_RUNS");
  long cores = sysconf(_SC_NPROCESSORS_ONLN), m;
  m = e && atoi(e) > 0 ? atoi(e) : cores / 4;
  if (!(e && atoi(e) > 0)) m = m < 2 ? 2 : m > 8 ? 8 : m;
  return (int)(m > (long)n ? (long)n : m);
}

int cli_run_many(cli_opts *o, const char *const *inputs, size_t n, int out_kind) {
  many m;
  many_item *it = NULL;
  unsigned char *keep = NULL;
  pthread_t th[64];
  int nth = 0, code = 0, rc;
  char msg[MSG_LEN] = "", *hdr = NULL;
  double t0;
  size_t failed = 0, ran = 0, made = 0;
  int64_t frames = 0;

  memset(&m, 0, sizeof m);
  if (out_kind != OUT_DIR && out_kind != OUT_NONE) {
    cli_err(o->output, "several videos need a directory output (-o DIR/), each written there "
            "under its own name");
    return 1;
  }
  if (!o->output && !o->stats_path) {
    cli_err(NULL, "several videos: give -o DIR/ or --stats FILE (the statistics lines are for "
            "one input)");
    return 1;
  }
  if (o->raw || o->format == FMT_F32) {
    cli_err(NULL, "%s: not for several videos", o->raw ? "--raw" : "--format f32");
    return 1;
  }
  if (!(it = calloc(n, sizeof *it)) || !(keep = malloc(n))) {
    cli_err(NULL, "out of memory");
    code = 4;
    goto end;
  }
  /* --shard: whole videos a share, as a batch's files. */
  if ((rc = cli_shard_files(o, inputs, n, keep)) >= 0) {
    code = rc;
    goto end;
  }
  for (size_t i = 0; i < n; i++) {
    it[i].in = inputs[i];
    it[i].code = -1;
    if (!strcmp(inputs[i], "-")) {
      cli_err("-", "standard input: not among several inputs");
      code = 1;
      goto end;
    }
    { /* an image or a directory here is a mistake of the command, not a damaged video */
      struct stat st;
      const int dir = stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode);
      if (dir || es_still_ext_ok(inputs[i], NULL)) {
        cli_err(inputs[i], "%s among several inputs (they are videos; a directory of images is "
                "one INPUT)", dir ? "a directory" : "an image");
        code = 1;
        goto end;
      }
    }
    if (o->stats_path && !strcmp(o->stats_path, "-") && cli_stdout_is(inputs[i])) {
      cli_err("-", "standard output is the input %s itself (choose another output)", inputs[i]);
      code = 1;
      goto end;
    }
    if (o->stats_path && strcmp(o->stats_path, "-") && es_same_file(inputs[i], o->stats_path)) {
      cli_err(o->stats_path, "is the input itself (choose another output)");
      code = 1;
      goto end;
    }
  }
  /* Each video's output, named before any work: two of one name, or one that is an input,
   * refused; an existing one refused, skipped (-n) or replaced (-y) as for one video. */
  for (size_t i = 0; i < n && o->output; i++) {
    const char *slash = strrchr(inputs[i], '/');
    const char *base = slash ? slash + 1 : inputs[i];
    char name[4096];
    if (!keep[i]) continue;
    if (es_out_kind_of(base) == OUT_VIDEO) {
      snprintf(name, sizeof name, "%s", base);
    } else { /* a container the library does not write (.m2ts, .mts, ...): Matroska */
      const char *dot = strrchr(base, '.');
      snprintf(name, sizeof name, "%.*s.mkv", (int)(dot && dot > base ? dot - base : (long)strlen(base)), base);
    }
    if (!(it[i].out = es_join_path(o->output, name))) {
      cli_err(NULL, "out of memory");
      code = 4;
      goto end;
    }
    for (size_t j = 0; j < i; j++)
      if (it[j].out && !strcmp(it[j].out, it[i].out)) {
        cli_err(it[i].out, "both %s and %s would be written there", inputs[j], inputs[i]);
        code = 1;
        goto end;
      }
    for (size_t j = 0; j < n; j++)
      if (es_same_file(inputs[j], it[i].out)) {
        cli_err(it[i].out, "is the input itself (choose another output)");
        code = 1;
        goto end;
      }
    if (es_output_exists(it[i].out)) {
      if (o->skip) {
        if (!o->quiet) cli_err(it[i].out, "exists, skipped");
        free(it[i].out);
        it[i].out = NULL;
        if (!o->stats_path) keep[i] = 0;
      } else if (!o->overwrite) {
        cli_err(it[i].out, "exists (use -y to overwrite, -n to skip)");
        code = 3;
        goto end;
      }
    }
  }
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) {
    code = 3;
    goto end;
  }
  if (o->output) made = es_first_missing(o->output); /* removed again where nothing came */
  if (o->output && cli_make_out_dir(o->output) != ES_OK) {
    code = 3;
    goto end;
  }
  /* The statistics' parts, made before any work: a --stats that cannot be written leaves no
   * video behind. */
  m.stats_ext = o->stats_path && strlen(o->stats_path) > 5 &&
                        !strcasecmp(cli_ext_of(o->stats_path), "jsonl") ? "jsonl"
                : o->stats_path && !strcasecmp(cli_ext_of(o->stats_path), "json") ? "json" : "csv";
  if (o->stats_path) {
    if (!(hdr = part_make(o, m.stats_ext, "header"))) {
      cli_err(o->stats_path, "cannot create a part file next to it: %s", strerror(errno ? errno : EIO));
      code = 3;
      goto end;
    }
    for (size_t i = 0; i < n; i++) {
      char tag[32];
      if (!keep[i]) continue;
      snprintf(tag, sizeof tag, "part%zu", i);
      if (!(it[i].part = part_make(o, m.stats_ext, tag))) {
        cli_err(o->stats_path, "cannot create a part file next to it: %s",
                strerror(errno ? errno : EIO));
        code = 3;
        goto end;
      }
    }
  }
  /* One context for every video: the GPUs open once (in the background: the first frames
   * compute on the cores meanwhile). */
  if ((rc = es_context_create(&m.ctx, &o->cfg, msg, sizeof msg)) != ES_OK) {
    cli_err(NULL, "%s", *msg ? msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  m.o = o;
  m.n = 0;
  for (size_t i = 0; i < n; i++) /* the share's videos, in order */
    if (keep[i]) it[m.n++] = it[i];
  for (size_t i = m.n; i < n; i++) memset(&it[i], 0, sizeof it[i]);
  m.it = it;
  t0 = cli_now_s();
  {
    /* The workers run with SIGINT/SIGTERM blocked: the handler runs on this thread, which
     * only waits; every run polls the flag it sets. */
    sigset_t set, old;
    const int want = runs_at_once(m.n);
    /* The cores shared among the decoders running at once: each left to FFmpeg's choice
     * (the cores + 1), eight runs on 64 cores made some 520 decoder threads (BENCHMARKS V3). */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m.dec_threads = want > 0 && cores / want > 1 ? (int)(cores / want) : 1;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    for (int k = 0; k < want && k < (int)(sizeof th / sizeof th[0]); k++)
      if (pthread_create(&th[nth], NULL, worker_main, &m) == 0) nth++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!nth) worker_main(&m); /* no thread: one at a time, here */
    for (int k = 0; k < nth; k++) pthread_join(th[k], NULL);
  }
  for (size_t i = 0; i < m.n; i++) {
    code = cli_worse(code, it[i].code < 0 ? 0 : it[i].code);
    if (!it[i].begun) continue;
    ran++;
    frames += it[i].frames;
    if (it[i].code && it[i].code != 130) failed++;
  }
  if (o->stats_path) {
    rc = join_stats(&m, hdr);
    if (rc) code = cli_worse(code, rc);
  }
  if (!o->quiet) {
    char d[64], fail_s[48] = "", of_s[48] = "";
    if (failed) snprintf(fail_s, sizeof fail_s, " (%zu failed)", failed);
    if (ran < m.n) snprintf(of_s, sizeof of_s, " of %zu", m.n); /* a stop left some out */
    const double el = cli_now_s() - t0;
    cli_err(NULL, "%zu%s video%s%s, %" PRId64 " frame%s, %.2f s, %.1f fps, %s%s", ran, of_s,
            ran == 1 && !*of_s ? "" : "s", fail_s,
            frames, frames == 1 ? "" : "s", el, el > 0 ? frames / el : 0.0,
            cli_device_desc(m.ctx, d, sizeof d), code == 130 ? ", interrupted" : "");
  }
  fflush(NULL);
end:
  /* An output directory the run made and wrote nothing into (every video failed) is not
   * left, as for one image into a new directory. */
  if (made) es_remove_made_dirs(o->output, made);
  if (it)
    for (size_t i = 0; i < n; i++) {
      part_drop(it[i].part);
      free(it[i].out);
    }
  part_drop(hdr);
  free(it);
  free(keep);
  if (m.ctx) {
    cli_exit_if_gpus_opening(m.ctx, code);
    es_context_destroy(&m.ctx);
  }
  return code;
}
