/*
 * src_video.c - the source of a video run (es_stage.h): a video file, a FIFO or standard
 * input (y4m, or raw frames), decoded by es_video_in with its frames lent rather than copied
 * (tools/BENCHMARKS.md S10). Standard input and FIFOs go through a pump (pump.c), so that a
 * stop is seen where a read would block. What an empty standard input or a stream of no
 * decodable frame is, is said here, before the run creates any output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_io.h"
#include "es_pump.h"
#include "es_stage.h"

typedef struct src_video {
  es_video_source_opts o;
  const char *path;    /* as given ("-": standard input) */
  es_video_in *vin;    /* after open */
  es_pump *pump;       /* standard input's or a FIFO's, or NULL */
  int64_t reads;       /* reads made: the first one's end says what an empty input is */
  const es_stage_env *env; /* the run's, from open on */
  int past;            /* keep: a frame past keep_to was read (the read is over) */
  int64_t past_pts;    /* that frame's pts: the end of the frames read */
} src_video;

static int src_open(es_source *s, const es_stage_env *env, es_source_info *info, char *msg,
                    size_t len) {
  src_video *v = s->self;
  es_video_in_opts vio;
  es_video_info vi;
  char alt[32];
  const char *in_path = v->path; /* what the reader opens */
  int rc;
  memset(&vio, 0, sizeof vio);
  v->env = env;
  if (!strcmp(v->path, "-")) {
    es_pump_stdin(&v->pump, env->stopped, env->stopped_arg);
  } else {
    rc = es_pump_fifo(&v->pump, v->path, alt, sizeof alt, &in_path, env->stopped,
                      env->stopped_arg);
    if (rc != ES_OK) return rc;
    if (!in_path) return ES_ERR_INTERRUPTED; /* a stop came while the FIFO waited */
  }
  vio.raw = v->o.raw;
  vio.max_pixels = v->o.max_pixels;
  vio.threads = v->o.threads;
  vio.lend = 1; /* decoded frames lent to the stream, not copied (BENCHMARKS S10) */
  vio.pin = env->pin;
  vio.unpin = env->unpin;
  vio.seek = v->o.seek;
  vio.seek_ts = v->o.seek_ts;
  /* libav*'s error lines (a damaged stream logs dozens): handed on where asked for (-v);
   * otherwise counted in the summary */
  if (v->o.verbose_log) {
    vio.log = env->log;
    vio.log_arg = env->log_arg;
  }
  rc = es_video_in_open(&v->vin, in_path, &vio, &vi, msg, len);
  es_pump_opened(v->pump); /* the reader opened the pipe itself */
  if (rc != ES_OK) {
    rc = es_pump_status(v->pump, rc, msg, len);
    /* Nothing came: say so, not the y4m reader's "invalid data". A raw stream of no frames
     * is a stream of 0 frames (it opens without reading). */
    if (rc != ES_ERR_INTERRUPTED && !strcmp(v->path, "-") && es_pump_empty(v->pump)) {
      rc = ES_ERR_INPUT;
      snprintf(msg, len, "no data on standard input");
    }
    return rc;
  }
  memset(info, 0, sizeof *info);
  info->width = vi.width;
  info->height = vi.height;
  info->depth = vi.depth;
  info->fps_num = vi.fps_num;
  info->fps_den = vi.fps_den;
  info->tb_num = vi.tb_num;
  info->tb_den = vi.tb_den;
  info->base_num = vi.base_num;
  info->base_den = vi.base_den;
  info->frames = v->o.frames > 0 ? v->o.frames : vi.frames;
  info->has_display_matrix = vi.has_display_matrix;
  memcpy(info->display_matrix, vi.display_matrix, sizeof info->display_matrix);
  info->sar_num = vi.sar_num;
  info->sar_den = vi.sar_den;
  info->field_order = vi.field_order;
  info->ts_discont = vi.ts_discont;
  return ES_OK;
}

static int src_read(es_source *s, void *dst, size_t dst_stride, es_source_frame *fr, char *msg,
                    size_t len) {
  src_video *v = s->self;
  es_video_lent lent = {NULL, 0, NULL};
  const int first = v->reads++ == 0;
  int rc;
  if (v->past) return ES_ERR_EOF;
  for (;;) {
    rc = es_video_in_read_lend(v->vin, dst, dst_stride, &lent, &fr->pts, &fr->pts_seconds, msg,
                               len);
    if (rc != ES_OK && rc != ES_ERR_AGAIN) rc = es_pump_status(v->pump, rc, msg, len);
    if (rc != ES_OK || !v->o.keep) break;
    const int before = fr->pts < v->o.keep_from, past = fr->pts >= v->o.keep_to;
    if (!before && !past) break;
    /* Not this share's: decoded only because decoding starts at a keyframe (before), or
     * the next share's first (past: the read is over, and that frame's pts is its end). */
    if (lent.ref) es_video_in_unlend(lent.ref);
    lent.ref = NULL;
    if (past) {
      v->past = 1;
      v->past_pts = fr->pts;
      return ES_ERR_EOF;
    }
    if (v->env && v->env->stopped && v->env->stopped(v->env->stopped_arg))
      return ES_ERR_INTERRUPTED;
  }
  if (rc == ES_OK) {
    fr->lend = lent.data;
    fr->lend_stride = lent.stride;
    fr->lend_ref = lent.ref;
    /* Of the read just made */
    fr->damaged = es_video_in_frame_damaged(v->vin);
  }
  /* Before the first frame: an empty standard input (raw frames open without reading; y4m
   * said so at the open), and a stream of which no packet decoded (an MJPEG .avi whose
   * header says 16000x16000; an .mp4 piped in, its index at the end) are the input's
   * errors. A y4m header alone is a valid empty stream. */
  if (first && rc == ES_ERR_EOF && !strcmp(v->path, "-") && es_pump_empty(v->pump)) {
    snprintf(msg, len, "no data on standard input");
    return ES_ERR_INPUT;
  }
  if (first && rc == ES_ERR_EOF && es_video_in_corrupt(v->vin) > 0) {
    int64_t nc = es_video_in_corrupt(v->vin);
    snprintf(msg, len, "no frame could be decoded (%" PRId64 " corrupt packet%s skipped)", nc,
             nc == 1 ? "" : "s");
    return ES_ERR_INPUT;
  }
  return rc;
}

static void src_counts(const es_source *s, es_source_counts *c) {
  const src_video *v = s->self;
  memset(c, 0, sizeof *c);
  c->empty = es_pump_empty(v->pump);
  if (!v->vin) return;
  c->corrupt = es_video_in_corrupt(v->vin);
  c->flagged = es_video_in_flagged(v->vin);
  c->prekey = es_video_in_prekey(v->vin);
  c->dropped = es_video_in_dropped(v->vin);
  c->damaged = es_video_in_damaged(v->vin);
  c->logged = es_video_in_log_lines(v->vin);
  c->copy_ms = es_video_in_copy_ms(v->vin);
}

static int64_t src_end_pts(const es_source *s) {
  const src_video *v = s->self;
  if (v->past) return v->past_pts;
  return v->vin ? es_video_in_end_pts(v->vin) : INT64_MIN;
}

static void src_close(es_source *s) {
  src_video *v = s->self;
  if (!v) return;
  es_video_in_close(&v->vin); /* frames still lent out stay valid (es_video_in_unlend) */
  es_pump_release(&v->pump);
  free(v);
  s->self = NULL;
}

int es_source_video(es_source *s, const char *path, const es_video_source_opts *o) {
  src_video *v = calloc(1, sizeof *v);
  memset(s, 0, sizeof *s);
  if (!v) return ES_ERR_NOMEM;
  if (o) v->o = *o;
  v->path = path;
  s->name = path;
  s->self = v;
  s->open = src_open;
  s->read = src_read;
  s->unlend = es_video_in_unlend;
  s->counts = src_counts;
  s->end_pts = src_end_pts;
  s->close = src_close;
  return ES_OK;
}
