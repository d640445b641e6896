/*
 * video_out_frame.c - each frame of a libav writer: the caller's rendering copied or converted
 * (libswscale) into the encoder's frame, its time stamp made increasing in the encoder's time
 * base, and the frame encoded and its packets muxed. A frame is held back until the next comes
 * (or the input's end, at close), so that each packet lasts until the next frame: variable
 * frame timing survives, and the last frame does not end early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>

#include "video_out_internal.h"

/* The duration of the frame of time stamp pts (encoder time base) sent, taken from v->durs;
 * 0 if none is known. */
static int64_t take_duration(es_video_out *v, int64_t pts) {
  for (size_t i = 0; i < v->ndurs; i++)
    if (v->durs[2 * i] == pts) {
      const int64_t d = v->durs[2 * i + 1];
      memmove(v->durs + 2 * i, v->durs + 2 * i + 2, (v->ndurs - i - 1) * 2 * sizeof *v->durs);
      v->ndurs--;
      return d;
    }
  return 0;
}

/* An encoder call that failed with err: out of memory (ES_ERR_NOMEM, exit 4, not a write
 * failure) where es_encoder_nomem says so. */
static int encode_failed(const es_video_out *v, int err, char *msg, size_t len) {
  if (es_vout_encoder_nomem(err, v->width, v->height)) {
    char e[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(err, e, sizeof e);
    snprintf(msg, len, "encoding failed: out of memory (%s)", e);
    return ES_ERR_NOMEM;
  }
  es_vout_averr(msg, len, "encoding failed", err);
  return ES_ERR_OUTPUT;
}

/* Sends one frame (or NULL to flush) and writes every packet that comes out. */
static int encode(es_video_out *v, AVFrame *f, char *msg, size_t len) {
  int err = avcodec_send_frame(v->enc, f);
  if (err < 0 && err != AVERROR_EOF) return encode_failed(v, err, msg, len);
  for (;;) {
    err = avcodec_receive_packet(v->enc, v->pkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return ES_OK;
    if (err < 0) return encode_failed(v, err, msg, len);
    v->pkt->stream_index = v->st->index;
    const int64_t d = take_duration(v, v->pkt->pts);
    if (d > 0) v->pkt->duration = d;
    av_packet_rescale_ts(v->pkt, v->enc->time_base, v->st->time_base);
    err = av_interleaved_write_frame(v->fmt, v->pkt); /* takes the packet's reference */
    if (err < 0) {
      es_vout_averr(msg, len, "write error", err);
      return err == AVERROR(ENOMEM) ? ES_ERR_NOMEM : ES_ERR_OUTPUT;
    }
  }
}

/* Sends the held frame, lasting duration d (encoder time base; at least 1), and records d for
 * its packet. */
static int send_held(es_video_out *v, int64_t d, char *msg, size_t len) {
  if (d < 1) d = 1;
  if (v->ndurs == v->capdurs) {
    /* An encoder holds some frames (x264: its lookahead); a packet whose pts matched none
     * would keep its entry: the oldest go past a bound. */
    if (v->capdurs >= 4096) {
      memmove(v->durs, v->durs + 2, (v->ndurs - 1) * 2 * sizeof *v->durs);
      v->ndurs--;
    } else {
      const size_t cap = v->capdurs ? 2 * v->capdurs : 64;
      int64_t *n = realloc(v->durs, cap * 2 * sizeof *n);
      if (!n) {
        snprintf(msg, len, "out of memory");
        return ES_ERR_NOMEM;
      }
      v->durs = n;
      v->capdurs = cap;
    }
  }
  v->durs[2 * v->ndurs] = v->held->pts;
  v->durs[2 * v->ndurs + 1] = d;
  v->ndurs++;
  v->has_held = 0;
  return encode(v, v->held, msg, len);
}

/* Fills a planar frame larger than the w x h written into it by repeating the last column and
 * row of each plane, so that the padding of an odd size (enc_w, enc_h) holds the edge's
 * colour, not black, and its 4:2:0 chroma stays the edge's. */
static void pad_edges(AVFrame *f, int w, int h) {
  const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
  const int np = av_pix_fmt_count_planes(f->format);
  for (int p = 0; p < np; p++) {
    const int cw = p == 1 || p == 2 ? d->log2_chroma_w : 0;
    const int ch = p == 1 || p == 2 ? d->log2_chroma_h : 0;
    const int pw = AV_CEIL_RSHIFT(w, cw), pf = AV_CEIL_RSHIFT(f->width, cw);
    const int ph = AV_CEIL_RSHIFT(h, ch), phf = AV_CEIL_RSHIFT(f->height, ch);
    const int s = av_image_get_linesize(f->format, w, p) / pw; /* bytes a sample */
    for (int y = 0; y < ph; y++) {
      uint8_t *row = f->data[p] + (ptrdiff_t)y * f->linesize[p];
      for (int x = pw; x < pf; x++) memcpy(row + (size_t)x * s, row + (size_t)(pw - 1) * s, s);
    }
    for (int y = ph; y < phf; y++)
      memcpy(f->data[p] + (ptrdiff_t)y * f->linesize[p],
             f->data[p] + (ptrdiff_t)(ph - 1) * f->linesize[p], (size_t)pf * s);
  }
}

int es_vout_frame_setup(es_video_out *v, enum AVPixelFormat enc_fmt, char *msg, size_t len) {
  /* The frame's buffer is made at the first frame (es_vout_frame_write): a header alone costs none. */
  v->frame->format = v->held->format = enc_fmt;
  v->frame->width = v->held->width = v->enc_w;
  v->frame->height = v->held->height = v->enc_h;
  v->made_av = enc_fmt;
  if (enc_fmt == AV_PIX_FMT_PAL8) {
    /* libswscale does not write pal8: ffmpeg's scale filter makes BGR8 and gives it BGR8's
     * fixed palette; grey keeps its values through a grey ramp. */
    int grey = v->want == ES_PIX_GRAY8 || v->want == ES_PIX_GRAY16;
    v->made_av = grey ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_BGR8;
    v->pal = 1;
    for (int i = 0; i < 256; i++) {
      uint32_t r = grey ? i : (i & 7) * 36, g = grey ? i : (i >> 3 & 7) * 36,
               b = grey ? i : (i >> 6) * 85;
      v->palette[i] = 0xFF000000u | r << 16 | g << 8 | b;
    }
  }
  if (v->want_av != v->made_av) {
    v->sws = sws_getContext(v->width, v->height, v->want_av, v->width, v->height, v->made_av,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                            NULL);
    if (!v->sws) {
      snprintf(msg, len, "cannot convert %s to %s", av_get_pix_fmt_name(v->want_av),
               av_get_pix_fmt_name(v->made_av));
      return ES_ERR_OUTPUT;
    }
  }
  return ES_OK;
}

/* The caller's rendering pix into v->frame: converted where the encoder takes another format,
 * else copied plane by plane; pal8's palette set, and an odd size's padding filled. */
static int fill_frame(es_video_out *v, const es_planes *pix, char *msg, size_t len) {
  if (v->sws) {
    const uint8_t *src[4] = {pix->plane[0], pix->plane[1], pix->plane[2], NULL};
    int sls[4] = {(int)pix->stride[0], (int)pix->stride[1], (int)pix->stride[2], 0};
    uint8_t *dst[4] = {v->frame->data[0], v->frame->data[1], v->frame->data[2],
                       v->frame->data[3]};
    if (v->pal) dst[1] = NULL; /* the indices only: the palette is set below */
    sws_scale(v->sws, src, sls, 0, v->height, dst, v->frame->linesize);
  } else {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(v->frame->format);
    int np = av_pix_fmt_count_planes(v->frame->format);
    for (int p = 0; p < np && p < 3; p++) {
      int h = p > 0 ? AV_CEIL_RSHIFT(v->height, d->log2_chroma_h) : v->height;
      int bytes = av_image_get_linesize(v->frame->format, v->width, p);
      if (!pix->plane[p]) {
        snprintf(msg, len, "rendered frame lacks plane %d", p);
        return ES_ERR_INTERNAL;
      }
      av_image_copy_plane(v->frame->data[p], v->frame->linesize[p], pix->plane[p],
                          (int)pix->stride[p], bytes, h);
    }
  }
  if (v->pal) memcpy(v->frame->data[1], v->palette, sizeof v->palette);
  if (v->enc_w != v->width || v->enc_h != v->height) pad_edges(v->frame, v->width, v->height);
  return ES_OK;
}

/* The encoder time stamp of a frame of input time stamp pts: after the last one sent, moved
 * past a break in the input's clock (v->shift). */
static int64_t next_pts(es_video_out *v, int64_t pts) {
  int64_t p;
  if (pts == INT64_MIN || pts == AV_NOPTS_VALUE) {
    p = v->last_pts == INT64_MIN ? 0 : v->last_pts + 1;
  } else {
    /* Counted frames start at frame 0: AVI would fill a late start with empty frames. */
    if (v->counted && v->first_pts == AV_NOPTS_VALUE) v->first_pts = pts;
    p = av_rescale_q(v->counted ? pts - v->first_pts : pts, v->in_tb, v->enc->time_base) +
        v->shift;
  }
  /* A video that starts before 0 starts at 0, every frame moved alike, as ffmpeg starts it:
   * MP4 and MOV take time before 0 for encoder delay and hide its frames (an edit list),
   * which lost the first second of a Matroska input from -1 s. */
  if (v->last_pts == INT64_MIN && p < 0) {
    v->shift -= p;
    p = 0;
  }
  /* Encoders need increasing pts. A break in the input's clock moves this frame and every
   * later one to follow the last a frame later, as ffmpeg moves them: time stamps that go
   * back by a frame or more (MPEG-TS files one after the other, a restarted clock; each
   * frame took the next tick, the rest of the input played in an instant), and a jump forward
   * of more than ES_TS_JUMP_S in a clock that may jump (MPEG-TS spliced or captured across a
   * restart; kept, a ten-hour jump made MP4 and AVI outputs fail, exit 3 and the video lost,
   * and stretched others with hours of the last frame). A smaller step back is rounding: the
   * next tick. */
  if (v->last_pts != INT64_MIN) {
    int64_t d = p - v->last_pts;
    if (d <= -v->step || (v->jump > 0 && d > v->jump)) {
      v->shift += v->last_pts + v->step - p;
      p = v->last_pts + v->step;
    } else if (d <= 0) {
      p = v->last_pts + 1;
    }
  }
  v->frame->pts = p;
  v->last_pts = p;
  return p;
}

int es_vout_frame_write(es_video_out *v, const es_planes *pix, int64_t pts, char *msg,
                        size_t len) {
  int rc;
  if (!pix || !pix->plane[0]) {
    snprintf(msg, len, "no rendered frame to write");
    return ES_ERR_INTERNAL;
  }
  if (v->lazy && (rc = es_vout_lazy_start(v, msg, len)) < 0) {
    v->failed = 1;
    return rc;
  }
  /* The frame's buffer, at the first frame; then the encoder (wrapped_avframe above all)
   * may still hold the last buffer. */
  if ((!v->frame->buf[0] && av_frame_get_buffer(v->frame, 0) < 0) ||
      av_frame_make_writable(v->frame) < 0) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  if ((rc = fill_frame(v, pix, msg, len)) < 0) return rc;
  const int64_t p = next_pts(v, pts);
  v->frame->pts = p;
  v->last_pts = p;
  if (v->counted) { /* frames, not times: nothing to wait for */
    rc = encode(v, v->frame, msg, len);
  } else {
    /* The frame held back lasts until this one; this one is held until the next, or the end. */
    rc = v->has_held ? send_held(v, p - v->held->pts, msg, len) : ES_OK;
    AVFrame *t = v->held;
    v->held = v->frame;
    v->frame = t;
    v->has_held = 1;
  }
  if (rc < 0) v->failed = 1;
  else v->frames++;
  return rc;
}

int es_vout_frame_flush(es_video_out *v, char *msg, size_t len) {
  int rc = ES_OK;
  if (v->enc && v->has_held) {
    /* The last frame lasts until the input's end, or one frame of the frame rate. */
    int64_t d = v->step;
    if (v->end_pts != INT64_MIN && v->end_pts != AV_NOPTS_VALUE) {
      const int64_t e = av_rescale_q(v->end_pts, v->in_tb, v->enc->time_base) + v->shift;
      if (e > v->held->pts) d = e - v->held->pts;
    }
    rc = send_held(v, d, msg, len);
  }
  if (rc == ES_OK && v->enc) rc = encode(v, NULL, msg, len);
  return rc;
}
