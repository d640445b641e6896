/*
 * run_many.c - several videos in one call (entropy_stream.h, "Several videos"; issue 31),
 * moved here from tools/cli_many.c: the outputs named and checked before any work, one
 * context for every video (the GPUs opened once, cuInit paid once: es_run_config.context),
 * and a few of the library's runs at a time on threads of their own, so that the cores'
 * decoders and the GPUs are shared by several videos. Each video's statistics go to a part
 * file of its own next to the statistics file, and the parts are joined in the videos' order
 * at the end (a record at a time: memory bounded), so that the one file equals the single
 * runs' files one after another, under one header. A video that fails is said by its run and
 * counted; the others finish, and the exit code is the worst (SPEC 3).
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "es_io.h"
#include "es_paths.h"
#include "es_pipeline_internal.h"
#include "es_run_internal.h"

#define MANY_MAX_RUNS 64 /* threads at most, whatever runs says */

/* One video of the list. Written by the worker that runs it, read after the join. */
typedef struct many_item {
  const char *in;  /* es_many.inputs' */
  char *out;       /* out_dir/<base>, or NULL (none, kept with skip, or not this share's) */
  char *part;      /* its statistics part file, or NULL */
  int code;        /* the run's exit code (-1: not run) */
  int begun;       /* its run began (not one a stop left out) */
  int64_t frames;
} many_item;

struct es_many {
  es_many_config c;     /* immutable (the caller's pointers) */
  char **inputs;        /* owned copies */
  size_t n;
  many_item *it;        /* n; after the checks, the share's videos first, in order */
  size_t nrun;          /* the share's videos */
  const char *stats;    /* c.stats, or NULL once an existing one was kept (skip) */
  const char *stats_ext;
  char *hdr;            /* the header's part file */
  size_t made;          /* es_first_missing(out_dir): the directories this call made */
  es_context *ctx;      /* c.context, or own_ctx */
  es_context *own_ctx;
  atomic_size_t next;   /* the next video a worker takes */
  atomic_int gpus_said; /* the listed GPUs' failure said: once for all the runs */
  int dec_threads;      /* each video's decoder threads */
  es_many_counts counts;
  int executed;
};

/* One line of the list's own: to say, else "NAME: line" through the context's message. */
static void say(const es_many *m, const char *name, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(const es_many *m, const char *name, const char *param, const char *fmt, ...) {
  char line[PATH_MAX + 512], full[2 * PATH_MAX + 640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (m->c.say) {
    m->c.say(m->c.user, name, param, line);
    return;
  }
  snprintf(full, sizeof full, "%s%s%s%s", name ? name : "", name ? ": " : "", line,
           param ? " (set overwrite to replace it, or skip to keep it)" : "");
  if (m->c.cfg.message)
    m->c.cfg.message(m->c.cfg.message_user, full);
  else
    fprintf(stderr, "entropy-stream: %s\n", full);
}

static int stopping(const es_many *m) { return m->c.stopped && m->c.stopped(); }

void es_many_config_default(es_many_config *c) {
  memset(c, 0, sizeof *c);
  es_config_default(&c->cfg);
  es_render_default(&c->render);
  c->sink.pixfmt = ES_PIX_RGB24;
  c->sink.crf = -1;
  c->sink.pix_fmt = ES_PIX_NONE;
}

int es_many_create(es_many **out, const es_many_config *c, const char *const *inputs, size_t n) {
  es_many *m;
  *out = NULL;
  if (!c || !inputs || !n) return ES_ERR_USAGE;
  if (!(m = calloc(1, sizeof *m))) return ES_ERR_NOMEM;
  m->c = *c;
  atomic_init(&m->gpus_said, 0);
  m->n = n;
  m->stats = c->stats;
  if (!(m->inputs = calloc(n, sizeof *m->inputs)) || !(m->it = calloc(n, sizeof *m->it))) {
    es_many_destroy(&m);
    return ES_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    if (!(m->inputs[i] = strdup(inputs[i]))) {
      es_many_destroy(&m);
      return ES_ERR_NOMEM;
    }
  *out = m;
  return ES_OK;
}

/* 1 when standard output is a regular file and the file in. */
static int stdout_is(const char *in) {
  struct stat a, b;
  return stat(in, &a) == 0 && fstat(1, &b) == 0 && S_ISREG(b.st_mode) && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

/* Each input as an input: not standard input, the caller's check, and never the file the
 * statistics go to. 0, or the exit code (said). */
static int check_inputs(es_many *m) {
  for (size_t i = 0; i < m->n; i++) {
    const char *in = m->inputs[i];
    int rc;
    m->it[i].in = in;
    m->it[i].code = -1;
    if (!strcmp(in, "-")) {
      say(m, "-", NULL, "standard input: not among several inputs");
      return 1;
    }
    if (m->c.check && (rc = m->c.check(m->c.user, i, in)) != 0) return rc;
    if (m->stats && !strcmp(m->stats, "-") && stdout_is(in)) {
      say(m, "-", NULL, "standard output is the input %s itself (choose another output)", in);
      return 1;
    }
    if (m->stats && strcmp(m->stats, "-") && es_same_file(in, m->stats)) {
      say(m, m->stats, NULL, "is the input itself (choose another output)");
      return 1;
    }
  }
  return 0;
}

/* Item i's output name, out_dir/<base>: the input's own where the library writes its
 * container, else Matroska (.m2ts, .mts, ...). NULL: out of memory. */
static char *out_name(const char *dir, const char *in) {
  const char *slash = strrchr(in, '/');
  const char *base = slash ? slash + 1 : in, *dot = strrchr(base, '.');
  char name[4096];
  if (es_out_kind_of(base) == ES_OUTK_VIDEO)
    snprintf(name, sizeof name, "%s", base);
  else
    snprintf(name, sizeof name, "%.*s.mkv", (int)(dot && dot > base ? dot - base : (long)strlen(base)),
             base);
  return es_join_path(dir, name);
}

/* Each video's output, named before any work: two of one name, or one that is an input,
 * refused; an existing one refused, kept (skip) or replaced (overwrite) as for one video.
 * keep[i] is cleared for a video left with nothing to write. 0, or the exit code (said). */
static int name_outputs(es_many *m, unsigned char *keep) {
  const es_sink_opts *so = &m->c.sink;
  for (size_t i = 0; i < m->n && m->c.out_dir; i++) {
    many_item *t = &m->it[i];
    if (!keep[i]) continue;
    if (!(t->out = out_name(m->c.out_dir, t->in))) {
      say(m, NULL, NULL, "out of memory");
      return 4;
    }
    for (size_t j = 0; j < i; j++)
      if (m->it[j].out && !strcmp(m->it[j].out, t->out)) {
        say(m, t->out, NULL, "both %s and %s would be written there", m->inputs[j], t->in);
        return 1;
      }
    for (size_t j = 0; j < m->n; j++)
      if (es_same_file(m->inputs[j], t->out)) {
        say(m, t->out, NULL, "is the input itself (choose another output)");
        return 1;
      }
    if (!es_output_exists(t->out)) continue;
    if (so->skip) {
      if (m->c.cfg.verbose >= 1) say(m, t->out, NULL, "exists, skipped");
      free(t->out);
      t->out = NULL;
      if (!m->stats) keep[i] = 0;
    } else if (!so->overwrite) {
      say(m, t->out, "overwrite", "exists");
      return 3;
    }
  }
  /* The statistics file, as the outputs: kept with skip (the heat videos still written). */
  if (m->stats && strcmp(m->stats, "-") && !so->overwrite && es_output_exists(m->stats)) {
    if (!so->skip) {
      say(m, m->stats, "overwrite", "exists");
      return 3;
    }
    if (m->c.cfg.verbose >= 1) say(m, m->stats, NULL, "exists, skipped");
    m->stats = NULL;
  }
  return 0;
}

/* The extension of path's last component ("" where none, or a leading dot's). */
static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return "";
  return dot + 1;
}

/* A part file for statistics: next to the statistics file (its directory's filesystem), or
 * in TMPDIR for standard output. Created empty, tracked (a program's second SIGINT removes
 * it, es_tmp_unlink_all). */
static char *part_make(const es_many *m, const char *tag) {
  const char *tmpdir = getenv("TMPDIR"), *ext = m->stats_ext;
  char *base, *t;
  size_t len;
  int fd;
  if (strcmp(m->stats, "-")) {
    base = es_tmp_template(m->stats, tag);
  } else {
    const char *d = tmpdir && *tmpdir ? tmpdir : "/tmp";
    len = strlen(d) + strlen(tag) + 40;
    if ((base = malloc(len))) snprintf(base, len, "%s/.entropy-stream.%s-XXXXXX", d, tag);
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

static void part_drop(char **p) {
  if (!*p) return;
  unlink(*p);
  es_tmp_untrack(*p);
  free(*p);
  *p = NULL;
}

/* The output directory, and the statistics' parts, made before any work: a statistics file
 * that cannot be written leaves no video behind. 0, or the exit code (said). */
static int make_outputs(es_many *m, const unsigned char *keep) {
  const char *s = m->stats;
  if (m->c.out_dir) {
    char msg[512], name[PATH_MAX];
    size_t at = 0;
    m->made = es_first_missing(m->c.out_dir); /* removed again where nothing came */
    if (es_make_dirs(m->c.out_dir, &at, NULL, msg, sizeof msg) != ES_OK) {
      snprintf(name, sizeof name, "%.*s", (int)at, m->c.out_dir); /* the part in the way */
      say(m, name, NULL, "%s", msg);
      return 3;
    }
  }
  m->stats_ext = s && strlen(s) > 5 && !strcasecmp(ext_of(s), "jsonl") ? "jsonl"
                 : s && !strcasecmp(ext_of(s), "json") ? "json" : "csv";
  if (!s) return 0;
  if (!(m->hdr = part_make(m, "header"))) {
    say(m, s, NULL, "cannot create a part file next to it: %s", strerror(errno ? errno : EIO));
    return 3;
  }
  for (size_t i = 0; i < m->n; i++) {
    char tag[32];
    if (!keep[i]) continue;
    snprintf(tag, sizeof tag, "part%zu", i);
    if (!(m->it[i].part = part_make(m, tag))) {
      say(m, s, NULL, "cannot create a part file next to it: %s", strerror(errno ? errno : EIO));
      return 3;
    }
  }
  return 0;
}

/* Runs item t: its source, the heat video's sink and the statistics part. The exit code. */
static int run_item(es_many *m, many_item *t) {
  const es_many_config *c = &m->c;
  es_run_config rc_cfg;
  es_run *run = NULL;
  es_source src;
  es_sink k;
  es_video_source_opts vso;
  es_sink_opts so = c->sink;
  int rc;
  memset(&vso, 0, sizeof vso);
  vso.max_pixels = c->max_pixels;
  vso.verbose_log = c->verbose_log;
  vso.threads = m->dec_threads;
  so.input = t->in;
  so.bins = c->cfg.stats_bins;
  if ((rc = es_source_video(&src, t->in, &vso)) != ES_OK) {
    say(m, t->in, NULL, "%s", es_strerror(rc));
    return es_exit_code(rc);
  }
  es_run_config_default(&rc_cfg);
  rc_cfg.cfg = c->cfg;
  rc_cfg.render = c->render;
  rc_cfg.stopped = c->stopped;
  rc_cfg.mask = c->mask;
  rc_cfg.mask_stride = c->mask_stride;
  rc_cfg.mask_width = c->mask_width;
  rc_cfg.mask_height = c->mask_height;
  rc_cfg.mask_name = c->mask_name;
  rc_cfg.context = m->ctx;
  if ((rc = es_run_create(&run, &rc_cfg, &src)) != ES_OK) goto fail;
  run->gpus_said = &m->gpus_said; /* the runs say it once between them */
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
    es_run_counts rc_counts;
    es_run_get_counts(run, &rc_counts);
    t->frames = rc_counts.frames;
    rc = rc_counts.exit_code;
  }
  es_run_destroy(&run);
  return rc;
fail:
  say(m, t->in, NULL, "%s", es_strerror(rc));
  es_run_destroy(&run);
  return es_exit_code(rc);
}

static void *worker_main(void *arg) {
  es_many *m = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&m->next, 1);
    if (i >= m->nrun) break;
    if (stopping(m)) { /* a stop: no video begins after it */
      m->it[i].code = 130;
      continue;
    }
    if (es_ctx_gpus_failed(m->ctx, NULL, 0) != ES_OK) { /* said by the run that met it */
      /* Begun and failed at once, as every job fails from then on: a failed video in the
       * counts ("2 of 6 videos (2 failed)" read as a stop's summary) */
      m->it[i].begun = 1;
      m->it[i].code = 4;
      continue;
    }
    m->it[i].begun = 1;
    m->it[i].code = run_item(m, &m->it[i]);
  }
  return NULL;
}

/* How many videos run at once: runs, else a quarter of the cores (each video's decoder
 * takes threads of its own), at least 2 and at most 8; never more than the videos. */
static int runs_at_once(const es_many *m) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN), r = m->c.runs;
  if (r <= 0) r = cores / 4 < 2 ? 2 : cores / 4 > 8 ? 8 : cores / 4;
  return (int)(r > (long)m->nrun ? (long)m->nrun : r);
}

/* The videos, a few at a time, on workers of their own. */
static void run_all(es_many *m) {
  pthread_t th[MANY_MAX_RUNS];
  sigset_t set, old;
  const int want = runs_at_once(m);
  /* The cores shared among the decoders running at once: each left to FFmpeg's choice
   * (the cores + 1), eight runs on 64 cores made some 520 decoder threads (BENCHMARKS V3). */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nth = 0;
  m->dec_threads = m->c.decoder_threads > 0 ? m->c.decoder_threads
                   : want > 0 && cores / want > 1 ? (int)(cores / want) : 1;
  /* The workers (and the runs' threads they start) run with SIGINT/SIGTERM blocked: a
   * handler runs on the calling thread, which only waits, never inside a worker's write
   * (EINTR would cut a record); every run polls the stop it sets. */
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  for (int k = 0; k < want && k < MANY_MAX_RUNS; k++)
    if (pthread_create(&th[nth], NULL, worker_main, m) == 0) nth++;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!nth) worker_main(m); /* no thread: one at a time, here */
  for (int k = 0; k < nth; k++) pthread_join(th[k], NULL);
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

/* Lines in the header of an empty statistics file of this kind (CSV 1, JSON lines 0),
 * written to the header's part file. */
static int header_lines(const es_many *m) {
  es_stats_writer *sw = NULL;
  char msg[512];
  int lines = -1, c;
  if (es_stats_writer_open(&sw, m->hdr, 1, m->c.cfg.stats_bins, msg, sizeof msg) != ES_OK)
    return -1;
  if (es_stats_writer_close(&sw, 1, msg, sizeof msg) != ES_OK) return -1;
  FILE *f = fopen(m->hdr, "rb");
  if (!f) return -1;
  lines = 0;
  while ((c = getc(f)) != EOF) lines += c == '\n';
  fclose(f);
  return lines;
}

/* Joins the parts into the statistics file (one header, then every video's records in
 * order), written to a temporary and renamed, or to standard output. 0, or the exit code
 * (said). */
static int join_stats(es_many *m) {
  const char *s = m->stats;
  char msg[512] = "";
  es_atomic a;
  FILE *out = stdout;
  int hl = header_lines(m), rc = 0;
  memset(&a, 0, sizeof a);
  if (hl < 0) {
    say(m, s, NULL, "cannot write the statistics' header");
    return 3;
  }
  if (strcmp(s, "-")) {
    if ((rc = es_atomic_open(&a, s, m->c.sink.overwrite, msg, sizeof msg)) != ES_OK) {
      say(m, s, NULL, "%s", *msg ? msg : es_strerror(rc));
      return 3;
    }
    out = a.fp;
  }
  rc = append_part(out, m->hdr, hl, 1); /* the header, once, whatever the parts hold */
  for (size_t i = 0; i < m->nrun && !rc; i++)
    if (m->it[i].part) rc = append_part(out, m->it[i].part, hl, 0);
  if (rc) {
    say(m, s, NULL, "cannot join the videos' statistics: %s", strerror(errno ? errno : EIO));
    es_atomic_abort(&a);
    return 3;
  }
  if (out == stdout) {
    if (fflush(stdout) != 0 || ferror(stdout)) {
      say(m, "-", NULL, "write error: %s", strerror(errno ? errno : EIO));
      return 3;
    }
    return 0;
  }
  if ((rc = es_atomic_commit(&a, msg, sizeof msg)) != ES_OK && rc != ES_WRITE_KEPT) {
    say(m, s, NULL, "%s", *msg ? msg : es_strerror(rc));
    return 3;
  }
  return 0;
}

static int status_of(int code) {
  switch (code) {
  case 0: return ES_OK;
  case 1: return ES_ERR_USAGE;
  case 2: return ES_ERR_INPUT;
  case 3: return ES_ERR_OUTPUT;
  case 130: return ES_ERR_INTERRUPTED;
  default: return ES_ERR_NOMEM;
  }
}

int es_many_execute(es_many *m) {
  es_many_counts *k = &m->counts;
  unsigned char *keep = NULL;
  char msg[512] = "";
  double t0;
  int code, rc;
  if (m->executed) return ES_ERR_USAGE;
  m->executed = 1;
  if (!(keep = malloc(m->n))) {
    say(m, NULL, NULL, "out of memory");
    code = 4;
    goto end;
  }
  for (size_t i = 0; i < m->n; i++) keep[i] = !m->c.share || m->c.share[i];
  if ((code = check_inputs(m)) != 0 || (code = name_outputs(m, keep)) != 0 ||
      (code = make_outputs(m, keep)) != 0)
    goto end;
  /* One context for every video: with gpu_background the GPUs open on a thread of their own
   * while the first frames compute on the cores. */
  if (!(m->ctx = m->c.context)) {
    if ((rc = es_context_create(&m->own_ctx, &m->c.cfg, msg, sizeof msg)) != ES_OK) {
      say(m, NULL, NULL, "%s", *msg ? msg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    m->ctx = m->own_ctx;
  }
  for (size_t i = 0; i < m->n; i++) /* the share's videos, in order */
    if (keep[i]) m->it[m->nrun++] = m->it[i];
  for (size_t i = m->nrun; i < m->n; i++) memset(&m->it[i], 0, sizeof m->it[i]);
  k->videos = m->nrun;
  k->started = 1;
  t0 = es_run_now_s();
  run_all(m);
  for (size_t i = 0; i < m->nrun; i++) {
    const many_item *t = &m->it[i];
    code = es_run_worse(code, t->code < 0 ? 0 : t->code);
    if (!t->begun) continue;
    k->ran++;
    k->frames += t->frames;
    if (t->code && t->code != 130) k->failed++;
  }
  /* The listed GPUs could not be opened: every run failed on it, and the records of those
   * that ended before it was known are not joined either (nothing written, SPEC 3). */
  if (es_ctx_gpus_settle(m->ctx, msg, sizeof msg) != ES_OK) {
    if (atomic_exchange(&m->gpus_said, 1) == 0) say(m, NULL, NULL, "%s", msg); /* no run did */
    code = es_run_worse(code, 4);
  } else if (m->stats && (rc = join_stats(m)) != 0) code = es_run_worse(code, rc);
  k->elapsed_s = es_run_now_s() - t0;
end:
  /* An output directory made and written nothing into (every video failed) is not left, as
   * for one image into a new directory. */
  if (m->made) es_remove_made_dirs(m->c.out_dir, m->made);
  for (size_t i = 0; i < m->n; i++) part_drop(&m->it[i].part);
  part_drop(&m->hdr);
  free(keep);
  k->interrupted = code == 130;
  k->exit_code = code;
  return status_of(code);
}

void es_many_get_counts(const es_many *m, es_many_counts *c) { *c = m->counts; }

es_context *es_many_context(const es_many *m) { return m->ctx; }

void es_many_destroy(es_many **pm) {
  es_many *m = *pm;
  if (!m) return;
  for (size_t i = 0; m->it && i < m->n; i++) {
    part_drop(&m->it[i].part);
    free(m->it[i].out);
  }
  part_drop(&m->hdr);
  for (size_t i = 0; m->inputs && i < m->n; i++) free(m->inputs[i]);
  free(m->inputs);
  free(m->it);
  es_context_destroy(&m->own_ctx);
  free(m);
  *pm = NULL;
}
