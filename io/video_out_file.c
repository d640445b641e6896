/*
 * video_out_file.c - where an encoded video's bytes go. A file is written under a temporary
 * name in the same directory and renamed at close, so that a failure never leaves a partial
 * file under the final name (a link is followed: the temporary goes next to what it names).
 * A FIFO or device is written in place, as es_atomic_open does: nothing is replaced. A FIFO
 * is opened here, where its wait for a reader can end on the program's stop, and refused to
 * a container that seeks (mp4, mov) before that wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavutil/avstring.h>

#include "video_out_internal.h"

/* A temporary file next to v->final_path, created exclusively. */
static int make_tmp(es_video_out *v, char *msg, size_t len) {
  const int fd = es_tmp_create(v->final_path, "es", &v->tmp_path, msg, len);
  if (fd < 0) return fd;
  close(fd); /* libavformat opens it by name */
  return ES_OK;
}

int es_vout_file_target(es_video_out *v, const char *path, const es_video_out_opts *o,
                        char **url, char *msg, size_t len) {
  int rc;
  int kind = es_output_resolve(path, &v->final_path, msg, len);
  if (kind < 0) return kind;
  if (kind == ES_OUT_FILE && !o->overwrite) { /* ES_OUT_FILE: something is there */
    snprintf(msg, len, "exists (use -y to overwrite)");
    return ES_ERR_OUTPUT;
  }
  v->overwrite = o->overwrite;
  if (kind != ES_OUT_STREAM && (rc = make_tmp(v, msg, len)) < 0) return rc;
  *url = av_asprintf("file:%s", kind == ES_OUT_STREAM ? v->final_path : v->tmp_path);
  return ES_OK;
}

void es_vout_say_seeks(char *msg, size_t len, const AVOutputFormat *ofmt) {
  snprintf(msg, len,
           "the %s container cannot be written into a pipe (it seeks; try .y4m, .nut or .mkv)",
           ofmt->name);
}

/* A muxer's init tried over an output that cannot seek and keeps nothing, on a copy of v's
 * stream: 1 where it refuses (mp4, mov: they seek back to their index). Asked before a FIFO
 * is opened, as opening one waits for a reader; 0 where it takes it or the trial could not be
 * made (the real init then says). */
#if LIBAVFORMAT_VERSION_MAJOR >= 61
static int discard_bytes(void *opaque, const uint8_t *buf, int n) {
#else
static int discard_bytes(void *opaque, uint8_t *buf, int n) {
#endif
  (void)opaque;
  (void)buf;
  return n;
}

static int pipe_refused(const es_video_out *v) {
  AVFormatContext *f = NULL;
  unsigned char *buf = av_malloc(4096);
  int refused = 0;
  if (buf && avformat_alloc_output_context2(&f, v->ofmt, NULL, NULL) >= 0) {
    AVStream *st = avformat_new_stream(f, NULL);
    f->pb = avio_alloc_context(buf, 4096, 1, NULL, NULL, discard_bytes, NULL);
    if (f->pb) buf = NULL; /* the context's now */
    if (st && f->pb && avcodec_parameters_copy(st->codecpar, v->par) >= 0) {
      st->time_base = v->tb;
      f->strict_std_compliance = v->fmt->strict_std_compliance;
      const int err = avformat_init_output(f, NULL);
      refused = err < 0 && err != AVERROR(ENOMEM);
    }
    if (f->pb) av_freep(&f->pb->buffer);
    avio_context_free(&f->pb);
    avformat_free_context(f);
  }
  av_free(buf);
  return refused;
}

/* A FIFO named as the output is opened here, where its wait for a reader can end on the
 * program's stop (es_output_open_stream: libavformat's open() would wait for good), and
 * written through its descriptor: *url becomes "pipe:N". A device is left to *url. */
static int open_stream(es_video_out *v, char **url, char *msg, size_t len) {
  struct stat st;
  const int fd = es_output_open_stream(v->final_path, msg, len);
  if (fd < 0) return fd;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    close(fd);
    return ES_OK;
  }
  char *pipe_url = av_asprintf("pipe:%d", fd);
  if (!pipe_url) {
    close(fd);
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  av_free(*url);
  *url = pipe_url;
  v->stream_fd = fd; /* the pipe protocol does not close it: es_video_out_close does */
  return ES_OK;
}

int es_vout_file_stream(es_video_out *v, char **url, char *msg, size_t len) {
  if (es_output_is_fifo(v->final_path) && pipe_refused(v)) {
    es_vout_say_seeks(msg, len, v->ofmt);
    return ES_ERR_OUTPUT;
  }
  return open_stream(v, url, msg, len);
}

int es_vout_file_commit(es_video_out *v, int keep, char *msg, size_t len) {
  const int rc = keep ? es_rename_into(v->tmp_path, v->final_path, v->overwrite, msg, len) : ES_OK;
  if (!keep || rc != ES_OK) unlink(v->tmp_path);
  es_tmp_untrack(v->tmp_path);
  return rc;
}
