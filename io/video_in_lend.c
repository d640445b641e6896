/*
 * video_in_lend.c - lending: the pool of buffers the decoder writes Y planes into, and the
 * hand-over of a decoded (or directly read) frame by reference instead of by copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/buffer.h>
#include <libavutil/frame.h>

#include "video_in_internal.h"

/* ---- Lending: decoded Y planes in buffers of our own, handed out by reference ----
 * A pool buffer is a page-aligned block: a header page (struct lend_buf) and then the data,
 * whole pages, so that pin() can page-lock exactly the data. The block outlives the reader
 * when a frame is still lent out at close; its free callback needs only the header. */
#define ES_LEND_HDR 4096
typedef struct lend_buf {
  uint8_t *data;
  size_t bytes; /* page-rounded size of data */
  int pinned;   /* 1: pin() succeeded; -1: it refused for good (not asked again); 0: not
                 * yet (set by the reading thread only) */
  void (*unpin)(void *p);
} lend_buf;

static void lend_buf_free(void *opaque, uint8_t *data) {
  lend_buf *h = opaque;
  (void)data;
  if (h->pinned > 0 && h->unpin) h->unpin(h->data);
  free(h); /* the block starts with the header */
}

#if LIBAVUTIL_VERSION_MAJOR >= 57
static AVBufferRef *lend_alloc(void *opaque, size_t size)
#else
static AVBufferRef *lend_alloc(void *opaque, int size)
#endif
{
  es_video_in *v =
      opaque; /* called under lend_lock (av_buffer_pool_get in es_vin_lend_get_buffer) */
  const size_t bytes = ((size_t)size + ES_LEND_HDR - 1) / ES_LEND_HDR * ES_LEND_HDR;
  if (v->nlend == v->lend_cap) {
    int cap = v->lend_cap ? 2 * v->lend_cap : 32;
    lend_buf **nb = realloc(v->lend_bufs, sizeof *nb * (size_t)cap);
    if (!nb) return NULL;
    v->lend_bufs = nb;
    v->lend_cap = cap;
  }
  uint8_t *block = aligned_alloc(ES_LEND_HDR, ES_LEND_HDR + bytes);
  if (!block) return NULL;
  lend_buf *h = (lend_buf *)block;
  h->data = block + ES_LEND_HDR;
  /* Zeroed, as FFmpeg's own frame pool is (avcodec_default_get_buffer2: av_buffer_allocz).
   * Decoders read bytes of a picture buffer they never write, by design: H.264's SIMD loads
   * take whole vectors across the row padding (linesize past the width) and keep only the
   * lanes inside the picture. No decoded pixel depends on those bytes (the maps of
   * samples/clip.mp4 are the same with the buffers filled with 0, 128 or 255, and the same as
   * from FFmpeg's buffers), but left uninitialised, valgrind's lane-blind tracking marked
   * whole decoded rows undefined and reported every read of them by the CPU engine
   * (ring_fill). Once per pool buffer: they are reused frame after frame. */
  memset(h->data, 0, bytes);
  h->bytes = bytes;
  h->pinned = 0;
  h->unpin = v->unpin;
  AVBufferRef *b = av_buffer_create(h->data, size, lend_buf_free, h, 0);
  if (!b) {
    free(block);
    return NULL;
  }
  v->lend_bufs[v->nlend++] = h;
  return b;
}

/* The header of a buffer of the pool, or NULL (a buffer the decoder made itself). */
static lend_buf *lend_find(es_video_in *v, const AVBufferRef *b) {
  lend_buf *h = NULL;
  pthread_mutex_lock(&v->lend_lock);
  for (int i = 0; i < v->nlend && !h; i++)
    if (v->lend_bufs[i]->data == b->data) h = v->lend_bufs[i];
  pthread_mutex_unlock(&v->lend_lock);
  return h;
}

/* get_buffer2 of a lending reader: FFmpeg's own allocation (its plane layout, padding and
 * alignment rules), then plane 0 moved into a pool buffer of the same size where nothing
 * else lives in it. Called from the decoder's threads. */
int es_vin_lend_get_buffer(AVCodecContext *c, AVFrame *f, int flags) {
  int err = avcodec_default_get_buffer2(c, f, flags);
  es_video_in *v = c->opaque;
  if (err < 0 || !v || !v->lend || !f->buf[0] || !f->data[0]) return err;
  const AVBufferRef *b0 = f->buf[0];
  for (int i = 1; i < AV_NUM_DATA_POINTERS && f->data[i]; i++)
    if (f->data[i] >= b0->data && f->data[i] < b0->data + b0->size) return err; /* shared */
  const ptrdiff_t off = f->data[0] - b0->data;
  AVBufferRef *nb = NULL;
  pthread_mutex_lock(&v->lend_lock);
  if (!v->lend_pool && !v->lend_failed) {
    v->lend_size = (size_t)b0->size;
    v->lend_pool = av_buffer_pool_init2((size_t)b0->size, v, lend_alloc, NULL);
    v->lend_failed = !v->lend_pool;
  }
  if (v->lend_pool && (size_t)b0->size <= v->lend_size) nb = av_buffer_pool_get(v->lend_pool);
  pthread_mutex_unlock(&v->lend_lock);
  if (!nb) return err; /* keep FFmpeg's buffer */
  av_buffer_unref(&f->buf[0]);
  f->buf[0] = nb;
  f->data[0] = nb->data + off;
  return err;
}

void es_video_in_unlend(void *ref) {
  AVFrame *f = ref;
  av_frame_free(&f);
}

/* Lends the received frame f (moved into a new frame) when its Y plane is the grey plane
 * as stored; 0 if it cannot (the caller copies). Pins a pool buffer on its first lending
 * that pin() accepts; one that pin() refused for good is not asked again (its buffer comes
 * round every few frames: a failing cudaHostRegister each time). */
int es_vin_lend_frame(es_video_in *v, AVFrame *f, es_video_lent *lent) {
  if (!es_vin_plane0_as_stored(f->format, v->depth) || f->linesize[0] <= 0 || !f->buf[0]) return 0;
  AVFrame *keep = av_frame_alloc();
  if (!keep) return 0;
  av_frame_move_ref(keep, f);
  if (v->pin) {
    lend_buf *h = lend_find(v, keep->buf[0]);
    if (h && !h->pinned) {
      const int r = v->pin(h->data, h->bytes);
      h->pinned = r > 0 ? 1 : r < 0 ? -1 : 0;
    }
  }
  lent->data = keep->data[0];
  lent->stride = (size_t)keep->linesize[0];
  lent->ref = keep;
  return 1;
}

/* Lends the staged frame (v->stage, row bytes a row): 1, or 0 where it cannot (it stays
 * staged, for a call with a buffer). */
int es_vin_stage_lend(es_video_in *v, size_t row, es_video_lent *lent) {
  AVFrame *keep = av_frame_alloc();
  if (!keep || v->raw_frame_size > (size_t)INT_MAX) {
    av_frame_free(&keep);
    return 0;
  }
  keep->buf[0] =
      av_buffer_create(v->stage, (int)v->raw_frame_size, av_buffer_default_free, NULL, 0);
  if (!keep->buf[0]) {
    av_frame_free(&keep);
    return 0;
  }
  keep->data[0] = v->stage;
  v->stage = NULL; /* the frame's now */
  lent->data = keep->data[0];
  lent->stride = row;
  lent->ref = keep;
  return 1;
}
