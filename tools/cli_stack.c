/*
 * cli_stack.c - a multi-page TIFF as a stack of frames (issue 28): its pages, in order,
 * through one es_stream, as a video's frames go. A reader thread reads each page straight
 * into a frame (es_tiff_read_rows) and pushes it; the main thread pulls the results in page
 * order and writes them: `-o maps.npy` [T, H, W], `-o maps.tif` a multi-page TIFF (with page
 * 0's GeoTIFF tags), a directory of frame_000000.png, ..., and `--stats` a record a page
 * (index = page). A page that cannot be read ends the run with exit 2 and, as for any failed
 * image, no output is left under its final name.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct stack_run {
  const cli_opts *o;  /* immutable */
  es_context *ctx;    /* immutable once the reader starts */
  es_stream *st;      /* immutable once the reader starts */
  es_tiff *t;         /* owned by the reader thread while it runs */
  es_tiff_info first; /* page 0's, immutable */
  int same_size;      /* every page must be page 0's size (a .npy or .tif output) */
  int status;         /* the reader's failure (ES_OK: none); read after the join */
  char msg[MSG_LEN + 32]; /* its message, "page N: ..." */
} stack_run;

int cli_tiff_pages(const char *path, int64_t max_pixels) {
  es_tiff *t = NULL;
  es_tiff_info in;
  char msg[MSG_LEN];
  int n = 0;
  if (es_tiff_open(path, max_pixels, &t, &in, msg, sizeof msg) == ES_OK) n = in.pages;
  es_tiff_close(&t);
  return n;
}

/* Reads page p into an acquired frame and pushes it. */
static int stack_push_page(stack_run *r, int p) {
  const cli_opts *o = r->o;
  es_frame *f = NULL;
  es_tiff_info in = r->first;
  char m[MSG_LEN] = "";
  int rc = es_stream_acquire(r->st, &f);
  if (rc != ES_OK) return rc; /* aborted: the main thread knows why */
  if (p > 0) rc = es_tiff_set_page(r->t, p, &in, m, sizeof m);
  if (rc == ES_OK && r->same_size && (in.width != r->first.width || in.height != r->first.height)) {
    snprintf(m, sizeof m, "is %dx%d, page 0 %dx%d (a stack's pages are one size)", in.width,
             in.height, r->first.width, r->first.height);
    rc = ES_ERR_INPUT;
  }
  if (rc == ES_OK && (rc = es_params_check(&o->cfg.params, in.depth, m, sizeof m)) == ES_OK) {
    rc = es_stream_reserve(r->st, f, in.width, in.height, in.depth);
    if (rc != ES_OK) snprintf(m, sizeof m, "%s", es_context_error(r->ctx));
  }
  if (rc == ES_OK) rc = es_tiff_read_rows(r->t, 0, in.height, o->band, f->data, f->stride, m, sizeof m);
  if (rc == ES_OK) {
    f->user = (void *)(intptr_t)p;
    rc = es_stream_push(r->st, f);
    if (rc == ES_OK) return ES_OK;
    snprintf(m, sizeof m, "%s", es_context_error(r->ctx));
  }
  es_stream_release(r->st, f);
  if (rc != ES_ERR_INTERRUPTED) {
    r->status = rc;
    snprintf(r->msg, sizeof r->msg, "page %d: %s", p, *m ? m : es_strerror(rc));
  }
  return rc;
}

static void *stack_reader(void *arg) {
  stack_run *r = arg;
  for (int p = 0; p < r->first.pages && !g_stop; p++)
    if (stack_push_page(r, p) != ES_OK) break;
  es_stream_finish(r->st);
  return NULL;
}

/* An output that exists: ES_OK to write it, JOB skipped (1) with -n, or refused (said). */
static int stack_out_check(const cli_opts *o, const char *path) {
  if (!es_output_exists(path)) return ES_OK;
  if (o->skip) {
    if (!o->quiet) cli_err(path, "exists, skipped");
    return 1;
  }
  if (o->overwrite) return ES_OK;
  cli_err(path, "exists (use -y to overwrite, -n to skip)");
  return ES_ERR_OUTPUT;
}

int cli_run_stack(cli_opts *o, int out_kind) {
  stack_run r;
  es_stream_config sc;
  es_stats_writer *sw = NULL;
  es_npy_stream *ns = NULL;
  es_tiff_writer *tw = NULL;
  es_tiff_geo *geo = NULL;
  pthread_t th;
  int started = 0, code = 0, rc, out = out_kind != OUT_NONE, pixfmt = ES_PIX_NONE;
  int64_t done = 0;
  size_t made = 0;
  char msg[MSG_LEN] = "", cmsg[MSG_LEN] = "";
  double t0 = cli_now_s();

  memset(&r, 0, sizeof r);
  memset(&sc, 0, sizeof sc);
  r.o = o;
  if (out_kind == OUT_PNG || out_kind == OUT_STDOUT || out_kind == OUT_VIDEO ||
      (out_kind == OUT_DIR && o->format == FMT_F32)) {
    cli_err(o->output, "a multi-page TIFF is a stack: write it to x.npy, x.tif, a directory of "
            "pictures, or --stats");
    return 1;
  }
  rc = es_tiff_open(o->input, o->max_pixels, &r.t, &r.first, msg, sizeof msg);
  if (rc != ES_OK) {
    cli_err(o->input, "%s", msg);
    return es_exit_code(rc);
  }
  r.same_size = out_kind == OUT_NPY || out_kind == OUT_TIFF;
  if (out && out_kind != OUT_DIR) {
    rc = stack_out_check(o, o->output);
    if (rc < 0) {
      code = 3;
      goto end;
    }
    if (rc > 0) out = 0, out_kind = OUT_NONE;
    if (!out && !o->stats_path) goto end;
  }
  rc = cli_stats_file_check(o);
  if (rc == STATS_REFUSED) {
    code = 3;
    goto end;
  }
  if (rc == STATS_SKIPPED && !out) goto end;
  if (o->stats_path && !(out_kind == OUT_DIR && cli_path_inside(o->output, o->stats_path)) &&
      cli_stats_open(o, &sw) != ES_OK) {
    code = 3;
    goto end;
  }
  if (out_kind == OUT_NPY) {
    rc = es_npy_stream_open(&ns, o->output, o->overwrite || o->skip, r.first.width, r.first.height,
                            msg, sizeof msg);
    sc.want_map = 1;
  } else if (out_kind == OUT_TIFF) {
    es_tiff_writer_opts to;
    memset(&to, 0, sizeof to);
    to.width = r.first.width;
    to.height = r.first.height;
    to.pages = r.first.pages;
    to.pixfmt = pixfmt = o->format == FMT_F32 ? ES_PIX_NONE : cli_png_pixfmt(o->format);
    rc = r.first.has_geo ? es_tiff_geo_get(r.t, &geo, msg, sizeof msg) : ES_OK;
    to.geo = geo;
    if (rc == ES_OK) rc = es_tiff_writer_open(o->output, o->skip ? ES_WRITE_KEEP : o->overwrite, &to, &tw, msg,
                               sizeof msg);
    sc.want_map = pixfmt == ES_PIX_NONE;
  } else if (out_kind == OUT_DIR) {
    made = es_first_missing(o->output);
    if (o->stats_path && cli_path_inside(o->output, o->stats_path))
      rc = cli_stats_open_inside(o, o->output, &sw);
    else
      rc = cli_make_out_dir(o->output);
    if (rc != ES_OK) {
      code = es_exit_code(rc);
      goto end;
    }
    pixfmt = cli_png_pixfmt(o->format);
  }
  if (rc != ES_OK) {
    cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  sc.want_stats = o->stats_path != NULL || o->stats_line;
  sc.render = o->render;
  sc.render.format = sc.want_map ? ES_PIX_NONE : pixfmt;
  rc = es_context_create(&r.ctx, &o->cfg, cmsg, sizeof cmsg);
  if (rc == ES_OK) rc = es_stream_open(r.ctx, &sc, &r.st);
  if (rc != ES_OK) {
    const char *m = r.ctx ? es_context_error(r.ctx) : cmsg;
    cli_err(NULL, "%s", m && *m ? m : es_strerror(rc));
    code = es_exit_code(rc);
    goto end;
  }
  if (pthread_create(&th, NULL, stack_reader, &r) != 0) {
    cli_err(NULL, "cannot start the reader thread");
    code = 4;
    goto end;
  }
  started = 1;

  for (;;) {
    es_frame *f;
    int p;
    rc = es_stream_pull(r.st, &f);
    if (rc != ES_OK) break; /* ES_ERR_EOF: every page pushed is written */
    p = (int)(intptr_t)f->user;
    if (f->status != ES_OK) {
      cli_err(o->input, "page %d: %s", p, es_context_error(r.ctx));
      code = cli_worse(code, es_exit_code(f->status));
    } else {
      if (ns) rc = es_npy_stream_write(ns, f->map, f->map_stride, msg, sizeof msg);
      if (tw && p > 0) rc = es_tiff_writer_next_page(tw, msg, sizeof msg);
      if (tw && rc == ES_OK)
        rc = sc.want_map ? es_tiff_writer_write_rows(tw, 0, f->height, f->map,
                                                     f->map_stride * sizeof(float), msg, sizeof msg)
                         : es_tiff_writer_write_rows(tw, 0, f->height, f->pix.plane[0],
                                                     f->pix.stride[0], msg, sizeof msg);
      if (out_kind == OUT_DIR && out) {
        char name[32], *path;
        snprintf(name, sizeof name, "frame_%06d.png", p);
        path = es_join_path(o->output, name);
        rc = !path ? ES_ERR_NOMEM : stack_out_check(o, path);
        if (rc == ES_OK)
          rc = es_png_write(path, o->skip ? ES_WRITE_KEEP : o->overwrite, f->width, f->height,
                            pixfmt, f->pix.plane[0], f->pix.stride[0], msg, sizeof msg);
        if (rc == ES_WRITE_KEPT || rc == 1) rc = ES_OK;
        if (rc != ES_OK) cli_err(path ? path : o->output, "%s", *msg ? msg : es_strerror(rc));
        free(path);
      } else if (rc != ES_OK) {
        cli_err(o->output, "%s", *msg ? msg : es_strerror(rc));
      }
      if (rc == ES_OK && sw) {
        rc = es_stats_writer_add_frame(sw, o->input, p, NAN, f->width, f->height, 0, &f->stats,
                                       msg, sizeof msg);
        if (rc != ES_OK) cli_err(o->stats_path, "%s", *msg ? msg : es_strerror(rc));
      }
      if (rc == ES_OK && o->stats_line)
        cli_stats_line(o->input, p, NAN, f->width, f->height, &f->stats, o->cfg.params.base);
      code = cli_worse(code, es_exit_code(rc));
      if (rc == ES_OK) done++;
    }
    es_stream_release(r.st, f);
    if (code) break;
  }
  if (code) es_stream_abort(r.st);
  pthread_join(th, NULL);
  started = 0;
  if (r.status != ES_OK) {
    cli_err(o->input, "%s", r.msg);
    code = cli_worse(code, es_exit_code(r.status));
  }
  if (g_stop) code = 130;
  /* Everything or nothing: a stack cut short (a bad page, an interruption) leaves no .npy
   * or .tif under its final name, as a failed image leaves none. */
  if (ns) {
    rc = es_npy_stream_close(&ns, code == 0, msg, sizeof msg);
    if (code == 0 && rc != ES_OK) {
      cli_err(o->output, "%s", msg);
      code = es_exit_code(rc);
    }
  }
  if (tw) {
    rc = es_tiff_writer_close(&tw, code == 0, msg, sizeof msg);
    if (code == 0 && rc != ES_OK && rc != ES_WRITE_KEPT) {
      cli_err(o->output, "%s", msg);
      code = es_exit_code(rc);
    }
  }
  if (sw) {
    rc = es_stats_writer_close(&sw, 1, msg, sizeof msg);
    if (rc != ES_OK) {
      cli_err(o->stats_path, "%s", msg);
      code = cli_worse(code, es_exit_code(rc));
    }
  }
  if (!o->quiet && code != 130) {
    char d[64];
    cli_err(NULL, "%" PRId64 " of %d pages, %dx%d, %.2f s, %s", done, r.first.pages,
            r.first.width, r.first.height, cli_now_s() - t0, cli_device_desc(r.ctx, d, sizeof d));
  }
end:
  if (started) {
    es_stream_abort(r.st);
    pthread_join(th, NULL);
  }
  if (ns) es_npy_stream_close(&ns, 0, NULL, 0);
  if (tw) es_tiff_writer_close(&tw, 0, NULL, 0);
  if (sw) es_stats_writer_close(&sw, 0, NULL, 0);
  if (made && code) es_remove_made_dirs(o->output, made);
  es_tiff_geo_free(&geo);
  es_tiff_close(&r.t);
  if (r.ctx) cli_exit_if_gpus_opening(r.ctx, code);
  es_stream_destroy(&r.st);
  es_context_destroy(&r.ctx);
  return code;
}
