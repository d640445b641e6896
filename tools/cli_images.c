/*
 * cli_images.c - the image runner: one PNG, or a directory of them (-r: its subdirectories
 * too), through an es_stream, with decode worker threads reading PNGs into frames and encode
 * worker threads writing the results, then the --stats records in name order and the
 * summary.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

/* ======================================================================================
 * Images: one PNG or a directory of them, through an es_stream. Decode workers take the
 * files in name order, read each PNG straight into a frame of the stream and push it;
 * encode workers pull the results and write them (PNG's zlib is the slow part, so there
 * are several), then give the frames back. Memory is the stream's pool of --queue frames,
 * grown to the largest image seen. A file that fails to decode is never pushed: its
 * failure is recorded in its job, so the ordered pull never waits for it.
 * ==================================================================================== */

enum { JOB_SKIPPED = 1 }; /* an img_job status besides ES_OK and the es_status codes */

typedef struct img_job {
  char *in;   /* input path (owned) */
  char *name; /* name in messages and stats: relative to the input directory (owned) */
  char *out;  /* output path or NULL (owned) */
  size_t index; /* in the whole batch, all --shard shares together: the stats' index */
  int status; /* ES_OK, an es_status, or JOB_SKIPPED (-n); set by job_done */
  int keep;   /* -n and the output exists: computed for --stats only, the output kept */
  int failed;  /* set before the workers start: a failure already reported (not a regular file,
                  no output directory), the job's status; it is counted, never opened */
  int keep_ext; /* its output keeps the input's extension: a.jpg -> a.jpg.png */
  int width, height;
  double t0;       /* when its decode began (-v) */
  es_tiff_geo *geo; /* a TIFF output's GeoTIFF tags, the input's (owned; NULL: none) */
  void *stats;     /* when --stats: its frame's es_stats up to the bins used (owned; an
                    * es_stats whole has room for ES_STATS_MAX_BINS, 8 KB a file) */
} img_job;

typedef struct img_batch {
  const cli_opts *o;
  es_context *ctx;
  es_stream *st;
  int out_kind; /* of each job's output: OUT_PNG, OUT_NPY, OUT_STDOUT or OUT_NONE */
  int single;   /* one PNG input, not a directory: no summary counts its skip, so it is told */
  int pixfmt;   /* the rendering the stream makes (ES_PIX_NONE: none, or the map) */
  img_job *jobs; /* sorted by name; set before the workers start */
  size_t njobs;
  pthread_mutex_t lock; /* guards the fields below */
  size_t next;          /* next job to decode */
  size_t done;          /* jobs finished (any status) */
  int decoders;         /* decode workers still running: the last one finishes the stream */
  int64_t pixels;       /* pixels computed */
  double t0;
  double last_progress;
  int show_progress;
} img_batch;

/* es_still_list_dir's failures, said as the walk finds them. */
static void say_listed(void *arg, const char *what, const char *msg) {
  (void)arg;
  cli_err(what, "%s", msg);
}

/* A file by its identity (links followed), and the job whose input it is. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  size_t job;
} file_id;

static int file_id_cmp(const void *a, const void *b) {
  const file_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return (x->ino > y->ino) - (x->ino < y->ino);
}

/* The input that st is, or NULL. */
static const file_id *find_file_id(const file_id *ids, size_t n, const struct stat *st) {
  file_id key = {st->st_dev, st->st_ino, 0};
  return n ? bsearch(&key, ids, n, sizeof *ids, file_id_cmp) : NULL;
}

/* Jobs (pointers into the name-sorted array) by output name, then in name order. */
static int job_out_cmp(const void *a, const void *b) {
  const img_job *x = *(img_job *const *)a, *y = *(img_job *const *)b;
  int c = strcmp(x->out, y->out);
  return c ? c : (x > y) - (x < y);
}

/* A job is over (written, skipped or failed): count it and show progress. */
static void job_done(img_batch *b, img_job *j, int status) {
  pthread_mutex_lock(&b->lock);
  j->status = status;
  b->done++;
  if (b->show_progress) {
    double t = cli_now_s();
    if (t - b->last_progress > 0.2 || b->done == b->njobs) {
      double el = t - b->t0, rate = el > 0 ? b->done / el : 0;
      char eta[32];
      cli_fmt_eta(eta, sizeof eta, rate > 0 ? (b->njobs - b->done) / rate : -1);
      b->last_progress = t;
      cli_progress_line("%zu/%zu file%s, %.1f files/s, ETA %s", b->done, b->njobs,
                        b->njobs == 1 ? "" : "s", rate, eta);
    }
  }
  pthread_mutex_unlock(&b->lock);
}

/* The message of a failed frame without the stream's "frame N: " (the file names it). */
static const char *frame_error(es_context *ctx, int status) {
  const char *m = es_context_error(ctx);
  if (!m || !*m) return es_strerror(status);
  if (!strncmp(m, "frame ", 6)) {
    const char *p = m + 6;
    while (*p >= '0' && *p <= '9') p++;
    if (p > m + 6 && p[0] == ':' && p[1] == ' ') return p + 2;
  }
  return m;
}

/* es_still_read_to's destination: the acquired frame, grown to the image's size. */
typedef struct frame_dest {
  es_context *ctx; /* whose message says why a reserve was refused */
  es_stream *st;
  es_frame *f;
} frame_dest;

static int frame_dest_fn(void *user, int width, int height, int depth, void **dst,
                         size_t *dst_stride, char *msg, size_t len) {
  frame_dest *d = user;
  int rc;
  rc = es_stream_reserve(d->st, d->f, width, height, depth);
  if (rc == ES_ERR_NOMEM) {
    snprintf(msg, len, "out of memory for a %dx%d image", width, height);
    return rc;
  }
  if (rc != ES_OK) { /* a size no engine takes */
    snprintf(msg, len, "%s", es_context_error(d->ctx));
    return rc;
  }
  *dst = d->f->data;
  *dst_stride = d->f->stride;
  return ES_OK;
}

/* Decodes one file into a frame and pushes it. ES_OK when pushed (its encode worker ends the
 * job), else the job's status (JOB_SKIPPED or the error, already reported). */
static int decode_image(img_batch *b, img_job *j) {
  const cli_opts *o = b->o;
  char msg[MSG_LEN] = "";
  frame_dest d = {b->ctx, b->st, NULL};
  es_image img;
  int rc;

  j->t0 = cli_now_s();
  if (j->failed) return j->failed; /* reported when it was found */
  if (j->out && b->out_kind != OUT_STDOUT && es_output_exists(j->out)) {
    if (o->skip) {
      if ((b->single || o->verbose) && !o->quiet) cli_err(j->out, "exists, skipped");
      /* The statistics file still gets every image's record (SPEC 2: one a frame or image),
       * as a video's frames to a directory do: computed, not written. */
      if (!o->stats_path) return JOB_SKIPPED;
      j->keep = 1;
    } else if (!o->overwrite) {
      cli_err(j->out, "exists (use -y to overwrite, -n to skip)");
      return ES_ERR_OUTPUT;
    }
  }
  rc = es_stream_acquire(b->st, &d.f);
  if (rc != ES_OK) return rc;
  { /* a TIFF: its page 0, band --band; the georeferencing where a .tif is written */
    es_still_opts so = {o->band, b->out_kind == OUT_TIFF ? &j->geo : NULL};
    rc = es_still_read_opt(j->in, o->max_pixels, &so, frame_dest_fn, &d, &img, msg, sizeof msg);
  }
  if (rc != ES_OK) {
    cli_err(j->in, "%s", *msg ? msg : es_strerror(rc));
  } else if ((rc = es_params_check(&o->cfg.params, img.depth, msg, sizeof msg)) != ES_OK) {
    cli_err(j->in, "%s", msg);
  } else {
    d.f->user = j;
    rc = es_stream_push(b->st, d.f);
    if (rc == ES_OK) return ES_OK;
    cli_err(j->in, "%s", frame_error(b->ctx, rc));
  }
  es_stream_release(b->st, d.f);
  return rc;
}

static void *img_decoder(void *arg) {
  img_batch *b = arg;
  for (;;) {
    img_job *j;
    int rc;
    pthread_mutex_lock(&b->lock);
    if (g_stop || b->next >= b->njobs) {
      pthread_mutex_unlock(&b->lock);
      break;
    }
    j = &b->jobs[b->next++];
    pthread_mutex_unlock(&b->lock);
    rc = decode_image(b, j);
    if (rc != ES_OK) job_done(b, j, rc);
  }
  pthread_mutex_lock(&b->lock);
  if (--b->decoders == 0) es_stream_finish(b->st);
  pthread_mutex_unlock(&b->lock);
  return NULL;
}

/* Writes the result of one frame to its job's output. */
static int write_image(img_batch *b, img_job *j, const es_frame *f, char *msg, size_t len) {
  const cli_opts *o = b->o;
  int rc = ES_OK;
  /* -n: a file that appears after decode_image looked (another run of a sharded batch
   * finished it first) is kept and the job skipped (ES_WRITE_KEPT), not failed as "exists". */
  const int ow = o->skip ? ES_WRITE_KEEP : o->overwrite;
  switch (b->out_kind) {
  case OUT_PNG:
  case OUT_NPY:
  case OUT_TIFF: /* by the name's extension, which out_kind was chosen by */
    rc = es_still_result_write(j->out, ow, f->width, f->height, b->pixfmt, f->map, f->map_stride,
                               &f->pix, j->geo, msg, len);
    break;
  case OUT_STDOUT: {
    /* One frame of y4m (or raw float32), in the rendering the stream was opened with. */
    es_video_out *vo = NULL;
    es_video_out_opts vopt;
    memset(&vopt, 0, sizeof vopt);
    vopt.width = f->width;
    vopt.height = f->height;
    vopt.fps_num = 25;
    vopt.fps_den = 1;
    vopt.tb_num = 1;
    vopt.tb_den = 25;
    vopt.format = cli_png_pixfmt(o->format);
    vopt.f32 = o->format == FMT_F32;
    vopt.crf = -1;
    vopt.overwrite = 1;
    rc = es_video_out_open(&vo, "-", &vopt, msg, len);
    if (rc == ES_OK && es_video_out_pixfmt(vo) != b->pixfmt) {
      snprintf(msg, len, "the writer wants another rendering");
      rc = ES_ERR_INTERNAL;
    }
    if (rc == ES_OK) rc = es_video_out_write(vo, &f->pix, f->map, f->map_stride, 0, msg, len);
    if (rc == ES_OK) rc = es_video_out_close(&vo, 1, msg, len);
    if (vo) es_video_out_close(&vo, 0, NULL, 0);
    break;
  }
  default: break;
  }
  return rc;
}

/* Ends the job of one pulled frame: reports a compute error, or writes and keeps the
 * statistics. Returns the job's status. */
static int finish_image(img_batch *b, img_job *j, const es_frame *f) {
  const cli_opts *o = b->o;
  char msg[MSG_LEN] = "";
  int rc = f->status;
  if (rc != ES_OK) {
    cli_err(j->in, "%s", frame_error(b->ctx, rc));
    return rc;
  }
  if (o->stats_path || o->stats_line) {
    /* Kept until the records are written in name order, so only what they hold. */
    int bins = f->stats.bins > 0 && f->stats.bins <= ES_STATS_MAX_BINS ? f->stats.bins : 0;
    size_t size = offsetof(es_stats, hist) + (size_t)bins * sizeof f->stats.hist[0];
    j->stats = malloc(size);
    if (!j->stats) {
      cli_err(j->in, "out of memory");
      return ES_ERR_NOMEM;
    }
    memcpy(j->stats, &f->stats, size);
  }
  j->width = f->width;
  j->height = f->height;
  if (j->keep) return JOB_SKIPPED; /* -n: computed for its statistics, the file kept */
  rc = write_image(b, j, f, msg, sizeof msg);
  if (rc == ES_WRITE_KEPT) {
    if ((b->single || o->verbose) && !o->quiet) cli_err(j->out, "exists, skipped");
    return JOB_SKIPPED;
  }
  if (rc != ES_OK) {
    cli_err(j->out ? j->out : "-", "%s", *msg ? msg : es_strerror(rc));
    return rc;
  }
  if (o->verbose && !o->quiet)
    cli_err(j->in, "%dx%d, %.0f ms%s%s", f->width, f->height, (cli_now_s() - j->t0) * 1e3,
            j->out ? " -> " : "", j->out ? j->out : "");
  pthread_mutex_lock(&b->lock);
  b->pixels += (int64_t)f->width * f->height;
  pthread_mutex_unlock(&b->lock);
  return ES_OK;
}

static void *img_encoder(void *arg) {
  img_batch *b = arg;
  es_frame *f;
  while (es_stream_pull(b->st, &f) == ES_OK) { /* ES_ERR_EOF: all files pushed are done */
    img_job *j = f->user;
    int rc = finish_image(b, j, f);
    es_stream_release(b->st, f);
    job_done(b, j, rc);
  }
  return NULL;
}

/* Starts n threads of fn (at least one, else 0 and none). Returns how many started. */
static int start_threads(pthread_t *th, int n, void *(*fn)(void *), void *arg) {
  int started = 0;
  for (int i = 0; i < n; i++) {
    if (pthread_create(&th[i], NULL, fn, arg) != 0) break;
    started++;
  }
  return started;
}

int cli_run_images(cli_opts *o, int in_kind, int out_kind) {
  img_batch b;
  img_job *jobs = NULL;
  size_t n = 0, unreadable = 0; /* unreadable: subdirectories that failed */
  es_stats_writer *sw = NULL;
  pthread_t *th = NULL;
  int nworkers = 0, ndec = 0, nenc = 0, code = 0, rc;
  char msg[MSG_LEN] = "";
  char outreal[PATH_MAX];
  const char *skip_dir = NULL;
  size_t made = 0; /* one image into a new directory: where the directories made start */
  int ncores = (int)sysconf(_SC_NPROCESSORS_ONLN);

  memset(&b, 0, sizeof b);
  pthread_mutex_init(&b.lock, NULL);
  if (ncores < 1) ncores = 1;

  /* The list of work, sorted so that stats come out in a stable order. */
  if (in_kind == IN_DIR) {
    if (out_kind != OUT_DIR && out_kind != OUT_NONE) {
      cli_err(o->output, "a directory input needs a directory output");
      code = 1;
      goto end;
    }
    if (o->output && realpath(o->output, outreal)) skip_dir = outreal;
    {
      es_still_list_opts lo = {o->recursive, o->ext, skip_dir, say_listed, NULL};
      es_still_list l;
      rc = es_still_list_dir(&l, o->input, &lo, msg, sizeof msg);
      if (rc != ES_OK) {
        cli_err(o->input, "%s", *msg ? msg : es_strerror(rc));
        code = es_exit_code(rc);
        goto end;
      }
      unreadable = l.unreadable;
      n = l.n;
      jobs = n ? calloc(n, sizeof *jobs) : NULL;
      for (size_t i = 0; i < n && jobs; i++) { /* the strings move to the jobs */
        jobs[i].in = l.e[i].path;
        jobs[i].name = l.e[i].name;
        jobs[i].failed = l.e[i].failed;
        jobs[i].keep_ext = l.e[i].keep_ext;
        l.e[i].path = l.e[i].name = NULL;
      }
      if (n && !jobs) {
        es_still_list_free(&l);
        n = 0;
        code = 4;
        goto end;
      }
      es_still_list_free(&l);
    }
    for (size_t i = 0; i < n && o->output; i++) {
      char *r2 = es_still_out_name(jobs[i].name, jobs[i].keep_ext, o->format == FMT_F32);
      char *out = r2 ? es_join_path(o->output, r2) : NULL;
      free(r2);
      if (!out) {
        code = 4;
        goto end;
      }
      jobs[i].out = out;
    }
    b.out_kind = o->output ? (o->format == FMT_F32 ? OUT_NPY : OUT_PNG) : OUT_NONE;
    /* Inputs whose outputs get one name (m.PNG and m.png both make m.npy): the first in name
     * order (of those not failed already) keeps it, the others fail, named. Both were
     * written at once: one map lost. */
    if (o->output && n > 1) {
      img_job **by_out = malloc(n * sizeof *by_out);
      if (!by_out) {
        code = 4;
        goto end;
      }
      for (size_t i = 0; i < n; i++) by_out[i] = &jobs[i];
      qsort(by_out, n, sizeof *by_out, job_out_cmp);
      const img_job *owner = NULL;
      for (size_t i = 0; i < n; i++) {
        img_job *j = by_out[i];
        if (owner && strcmp(j->out, owner->out)) owner = NULL;
        if (j->failed) continue;
        if (!owner) {
          owner = j;
          continue;
        }
        cli_err(j->out, "also the output of %s (rename one of them)", owner->in);
        j->failed = ES_ERR_OUTPUT;
      }
      free(by_out);
    }
    if (n == 0 && !o->quiet)
      cli_err(o->input, "no image files%s%s%s", o->ext ? " (--ext " : "", o->ext ? o->ext : "",
              o->recursive ? (o->ext ? ")" : "") : (o->ext ? "; -r descends)" : " (-r descends)"));
    /* --shard: this run's share of the files (all of them without it), each keeping its
     * index in the whole batch; outputs were named and checked for clashes across all. */
    {
      const char **paths = malloc((n ? n : 1) * sizeof *paths);
      unsigned char *keep = malloc(n ? n : 1);
      size_t k = 0;
      if (!paths || !keep) {
        free(paths);
        free(keep);
        code = 4;
        goto end;
      }
      for (size_t i = 0; i < n; i++) paths[i] = jobs[i].in;
      rc = cli_shard_files(o, paths, n, keep);
      free(paths);
      for (size_t i = 0; i < n && rc < 0; i++) {
        if (!keep[i]) {
          free(jobs[i].in);
          free(jobs[i].name);
          free(jobs[i].out);
          continue;
        }
        jobs[k] = jobs[i];
        jobs[k++].index = i;
      }
      free(keep);
      if (rc >= 0) {
        code = rc;
        goto end;
      }
      n = k;
    }
  } else {
    jobs = calloc(1, sizeof *jobs);
    if (!jobs) {
      code = 4;
      goto end;
    }
    n = 1;
    jobs[0].in = strdup(o->input);
    jobs[0].name = strdup(o->input);
    if (out_kind == OUT_DIR) {
      const char *base = strrchr(o->input, '/');
      char *r2;
      base = base ? base + 1 : o->input;
      r2 = es_still_out_name(base, 0, o->format == FMT_F32);
      jobs[0].out = r2 ? es_join_path(o->output, r2) : NULL;
      free(r2);
      b.out_kind = o->format == FMT_F32 ? OUT_NPY : OUT_PNG;
    } else if (out_kind == OUT_PNG || out_kind == OUT_NPY || out_kind == OUT_TIFF) {
      jobs[0].out = strdup(o->output);
      b.out_kind = out_kind;
      if (out_kind == OUT_PNG && o->format == FMT_F32) {
        cli_err(o->output, "--format f32 needs a .npy output (or -)");
        code = 1;
        goto end;
      }
    } else if (out_kind == OUT_STDOUT) {
      jobs[0].out = strdup("-");
      b.out_kind = OUT_STDOUT;
    } else if (out_kind == OUT_VIDEO) {
      cli_err(o->output, "an image input needs a .png, .npy, .tif, directory or - output");
      code = 1;
      goto end;
    } else {
      b.out_kind = OUT_NONE;
    }
    if (!jobs[0].in || !jobs[0].name || (o->output && !jobs[0].out)) {
      code = 4;
      goto end;
    }
  }

  /* Never let an output replace an input of the run, its own or another's: an image written
   * into a directory (the input's own, or one a symlinked input points into), d/a.png and
   * d/d/a.png into the parent of d (./d/a.png is the first's input), and the statistics
   * file. The inputs' identities are sorted once, each output looked up in them. */
  {
    file_id *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t nid = 0;
    const file_id *hit = NULL;
    const char *bad = NULL;
    struct stat st;
    if (!ids) {
      code = 4;
      goto end;
    }
    for (size_t i = 0; i < n; i++) {
      if (stat(jobs[i].in, &st) != 0) continue;
      ids[nid].dev = st.st_dev;
      ids[nid].ino = st.st_ino;
      ids[nid++].job = i;
    }
    if (nid) qsort(ids, nid, sizeof *ids, file_id_cmp);
    for (size_t i = 0; i < n && !bad; i++)
      if (jobs[i].out && b.out_kind != OUT_STDOUT && stat(jobs[i].out, &st) == 0 &&
          (hit = find_file_id(ids, nid, &st)))
        bad = jobs[i].out;
    if (!bad && o->stats_path && strcmp(o->stats_path, "-") && stat(o->stats_path, &st) == 0 &&
        (hit = find_file_id(ids, nid, &st)))
      bad = o->stats_path;
    /* --stats - appended to an input (>> in/a.png), as main refuses it for one input. */
    if (!bad && o->stats_path && !strcmp(o->stats_path, "-") && fstat(1, &st) == 0 &&
        S_ISREG(st.st_mode) && (hit = find_file_id(ids, nid, &st))) {
      cli_err("-", "standard output is the input %s itself (choose another output)",
              jobs[hit->job].in);
      free(ids);
      code = 1;
      goto end;
    }
    if (bad) cli_err(bad, "is the input %s itself (choose another output)", jobs[hit->job].in);
    free(ids);
    if (bad) {
      code = 1;
      goto end;
    }
  }
  /* The statistics file first: one that cannot be written creates no output directory.
   * Unless it is to be inside that directory: then the directory is made first (and the
   * subdirectories below). */
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) {
    code = 3;
    goto end;
  }
  if (rc == STATS_SKIPPED && !o->output) goto end;
  /* One image into a directory the run makes: if nothing is written into it (a bad input,
   * an interrupt), the directory goes again at the end, as a failure leaves no file. */
  if (in_kind != IN_DIR && o->output && out_kind == OUT_DIR) made = es_first_missing(o->output);
  if (o->stats_path) {
    if (o->output && (out_kind == OUT_DIR || in_kind == IN_DIR) &&
        cli_path_inside(o->output, o->stats_path))
      rc = cli_stats_open_inside(o, o->output, &sw);
    else
      rc = cli_stats_open(o, &sw);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
  }

  if (o->output && (out_kind == OUT_DIR || in_kind == IN_DIR)) {
    rc = cli_make_out_dir(o->output);
    if (rc != ES_OK) {
      code = 3;
      goto end;
    }
    /* Subdirectories of a recursive batch. One that cannot be made is a failure of the
     * files under it, as an unwritable output file is (SPEC 3: the others are still done,
     * the summary counts them, exit 3). Each directory in the way is named once, whatever
     * the number of files and subdirectories under it (sorted names do not keep those
     * together: "a/b/x.png" < "a/c.png" < "a/d/y.png"). */
    {
      typedef struct {
        const char *path; /* into a job's out */
        size_t len;
      } bad_dir;
      bad_dir *bad = NULL; /* the directories that could not be made */
      size_t nbad = 0;
      for (size_t i = 0; i < n; i++) {
        char *slash = jobs[i].out ? strrchr(jobs[i].out, '/') : NULL;
        size_t dlen, at = 0;
        int under = 0;
        if (!slash || slash == jobs[i].out || jobs[i].failed) continue;
        dlen = (size_t)(slash - jobs[i].out);
        for (size_t k = 0; k < nbad && !under; k++)
          under = dlen >= bad[k].len && !strncmp(jobs[i].out, bad[k].path, bad[k].len) &&
                  (dlen == bad[k].len || jobs[i].out[bad[k].len] == '/');
        if (under) {
          jobs[i].failed = ES_ERR_OUTPUT;
          continue;
        }
        *slash = 0;
        rc = es_make_dirs(jobs[i].out, &at, NULL, msg, sizeof msg);
        if (rc != ES_OK) {
          char save = jobs[i].out[at];
          bad_dir *nb = realloc(bad, (nbad + 1) * sizeof *bad);
          jobs[i].out[at] = 0;
          cli_err(jobs[i].out, "%s", msg);
          jobs[i].out[at] = save;
          jobs[i].failed = ES_ERR_OUTPUT;
          if (nb) {
            bad = nb;
            bad[nbad].path = jobs[i].out;
            bad[nbad++].len = at;
          }
        }
        *slash = '/';
      }
      free(bad);
    }
  }
  /* The stream: one frame per file at most, so a single image gets every core. What it
   * renders is what the outputs take: a PNG's pixels, the map of a .npy, or the frame the
   * standard-output writer wants (y4m: heat as 4:4:4, grey as mono; f32: the map). */
  {
    char cmsg[MSG_LEN] = "";
    es_config cfg = o->cfg;
    es_stream_config sc;
    cfg.queue = es_config_queue(&cfg);
    if (n < (size_t)cfg.queue) cfg.queue = n > 0 ? (int)n : 1;
    rc = es_context_create(&b.ctx, &cfg, cmsg, sizeof cmsg);
    if (rc != ES_OK) {
      cli_err(NULL, "%s", *cmsg ? cmsg : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    memset(&sc, 0, sizeof sc); /* max_width 0: frames grow to each image */
    if (b.out_kind == OUT_PNG || (b.out_kind == OUT_TIFF && o->format != FMT_F32))
      b.pixfmt = cli_png_pixfmt(o->format);
    else if (b.out_kind == OUT_STDOUT && o->format != FMT_F32)
      b.pixfmt = o->format == FMT_HEAT ? ES_PIX_YUV444P : cli_png_pixfmt(o->format);
    sc.want_map = b.out_kind == OUT_NPY || (b.out_kind == OUT_STDOUT && o->format == FMT_F32) ||
                  (b.out_kind == OUT_TIFF && o->format == FMT_F32);
    sc.want_stats = o->stats_path != NULL || o->stats_line;
    sc.render = o->render;
    sc.render.format = b.pixfmt;
    cli_mask_to(o, &sc);
    rc = es_stream_open(b.ctx, &sc, &b.st);
    if (rc != ES_OK) {
      const char *m = es_context_error(b.ctx);
      cli_err(NULL, "%s", m && *m ? m : es_strerror(rc));
      code = es_exit_code(rc);
      goto end;
    }
    /* As many decoders and encoders as there are cores, files and frames to hold. */
    nworkers = ncores < cfg.queue ? ncores : cfg.queue;
    /* (es_context_config would wait for GPUs still opening.) */
    if (o->verbose && !o->quiet) {
      char d[64];
      cli_err(NULL, "%zu file%s, %d in flight, %s", n, n == 1 ? "" : "s", cfg.queue,
              cli_device_desc(b.ctx, d, sizeof d));
    }
  }
  b.o = o;
  b.single = in_kind != IN_DIR;
  b.jobs = jobs;
  b.njobs = n;
  b.t0 = cli_now_s();
  b.show_progress = !o->quiet && (o->progress == 1 || (o->progress < 0 && isatty(2))) && n > 1;
  th = calloc((size_t)nworkers * 2, sizeof *th);
  if (!th) {
    code = 4;
    goto end;
  }
  nenc = start_threads(th, nworkers, img_encoder, &b);
  b.decoders = nworkers; /* before any decoder can finish the stream */
  if (nenc > 0) ndec = start_threads(th + nenc, nworkers, img_decoder, &b);
  if (ndec < nworkers) {
    if (ndec == 0) {
      es_stream_abort(b.st);
      for (int i = 0; i < nenc; i++) pthread_join(th[i], NULL);
      cli_err(NULL, "cannot start the worker threads");
      code = 4;
      goto end;
    }
    pthread_mutex_lock(&b.lock); /* the ones that did not start will not finish it */
    b.decoders -= nworkers - ndec;
    if (b.decoders == 0) es_stream_finish(b.st);
    pthread_mutex_unlock(&b.lock);
  }
  for (int i = 0; i < nenc + ndec; i++) pthread_join(th[i], NULL);
  cli_main_writes(1); /* the statistics are written below (the stream's workers take signals) */
  cli_clear_progress(); /* before the records (--stats - on the terminal) and the summary */

  /* Results in name order. */
  {
    size_t failed = 0, skipped = 0, notrun = 0;
    size_t cut = 0; /* given up by the signal (an output FIFO that had no reader): not done */
    double el = cli_now_s() - b.t0;
    es_stats rec; /* a kept record, whole again for the writer */
    for (size_t i = 0; i < n; i++) {
      img_job *j = &jobs[i];
      if (i >= b.next) {
        notrun++;
        continue;
      }
      if (j->status == JOB_SKIPPED) {
        skipped++;
        if (!j->stats) continue; /* -n with --stats: its record still goes in */
      } else if (j->status != ES_OK) {
        failed++;
        if (j->status == ES_ERR_INTERRUPTED) cut++;
        code = cli_worse(code, es_exit_code(j->status));
        /* computed, but its map could not be written: the outputs fail one by one, as a
         * video's do, and its record still goes in */
        if (!j->stats) continue;
      }
      if (o->stats_line && j->stats) {
        memcpy(&rec, j->stats, offsetof(es_stats, hist)); /* the line reads no histogram */
        cli_stats_line(j->name, -1, NAN, j->width, j->height, &rec, o->cfg.params.base);
      } else if (sw && j->stats) {
        memcpy(&rec, j->stats, offsetof(es_stats, hist));
        memcpy(rec.hist, (const char *)j->stats + offsetof(es_stats, hist),
               (size_t)rec.bins * sizeof rec.hist[0]);
        rc = es_stats_writer_add(sw, j->name, (int64_t)j->index, NAN, j->width, j->height, &rec,
                                 msg, sizeof msg);
        if (rc != ES_OK) {
          cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
          code = cli_worse(code, es_exit_code(rc));
          es_stats_writer_close(&sw, 0, NULL, 0);
        }
      }
    }
    if (unreadable) code = cli_worse(code, 2); /* each was reported when the list was made */
    if (o->stats_line && (fflush(stdout) != 0 || ferror(stdout))) {
      cli_err("-", "write error: %s", strerror(errno ? errno : EIO));
      code = cli_worse(code, 3);
    }
    if (sw) {
      rc = es_stats_writer_close(&sw, 1, msg, sizeof msg);
      if (rc != ES_OK) {
        cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
        code = cli_worse(code, es_exit_code(rc));
      }
    }
    if (g_stop) {
      /* The summary of an interrupted batch; an interruption is no error (its exit code
       * says it), so -q silences it, as it does a video's. */
      char cuts[96] = "";
      code = 130;
      /* done: written or skipped; a file that failed (its own line said why) is not done */
      if (failed > cut) snprintf(cuts, sizeof cuts, ", %zu failed", failed - cut);
      if (cut)
        snprintf(cuts + strlen(cuts), sizeof cuts - strlen(cuts), ", %zu interrupted", cut);
      if (!o->quiet)
        cli_err(NULL, "interrupted: %zu of %zu file%s done%s, %zu not started", b.done - failed,
                n, n == 1 ? "" : "s", cuts, notrun);
    } else if (!o->quiet) {
      char d[64];
      /* One file's failure was already said in its own line. */
      if (failed && n > 1) cli_err(NULL, "%zu of %zu files failed", failed, n);
      if (unreadable)
        cli_err(NULL, "%zu director%s could not be read", unreadable,
                unreadable == 1 ? "y" : "ies");
      {
        if (n == 1 && !failed && !skipped)
          cli_err(NULL, "1 file, %dx%d, %.2f s, %s", jobs[0].width, jobs[0].height, el,
                  cli_device_desc(b.ctx, d, sizeof d));
        else if (n > 1 || (n == 1 && !b.single)) /* a batch of one tells its skip here */
          cli_err(NULL,
                  "%zu file%s, %zu written, %zu skipped, %zu failed, %.2f s, %.1f Mpixel/s, %s",
                  n, n == 1 ? "" : "s", n - failed - skipped, skipped, failed, el,
                  el > 0 ? b.pixels / el / 1e6 : 0.0, cli_device_desc(b.ctx, d, sizeof d));
      }
    }
  }
end:
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  cli_main_writes(0);
  /* (the image's writer has finished: its threads are joined) */
  if (made) es_remove_made_dirs(o->output, made); /* only those left empty */
  cli_exit_if_gpus_opening(b.ctx, code);
  es_stream_destroy(&b.st);
  es_context_destroy(&b.ctx);
  for (size_t i = 0; i < n; i++) {
    free(jobs[i].in);
    free(jobs[i].name);
    free(jobs[i].out);
    free(jobs[i].stats);
    es_tiff_geo_free(&jobs[i].geo);
  }
  free(jobs);
  free(th);
  pthread_mutex_destroy(&b.lock);
  return code;
}
