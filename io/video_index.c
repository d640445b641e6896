/*
 * video_index.c - a video file's packet index, read without decoding: each packet's time
 * stamps and keyframe flag, for splitting a long video into shares cut at keyframes
 * (pipeline/shard.c, --shard). The stream is the one es_video_in_open decodes (libavformat's
 * best video stream); packets that give no frame there (empty, or marked discard) are left
 * out, so the entries are the frames a clean stream decodes to.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>

#include "es_io.h"

void es_video_index_free(es_video_index *ix) {
  if (!ix) return;
  free(ix->pts);
  free(ix->dts);
  free(ix->key);
  memset(ix, 0, sizeof *ix);
}

/* Grows the three arrays to hold at least need entries. */
static int grow(es_video_index *ix, int64_t *cap, int64_t need) {
  if (need <= *cap) return ES_OK;
  int64_t nc = *cap ? *cap * 2 : 4096;
  while (nc < need) nc *= 2;
  int64_t *p = realloc(ix->pts, (size_t)nc * sizeof *p);
  if (!p) return ES_ERR_NOMEM;
  ix->pts = p;
  p = realloc(ix->dts, (size_t)nc * sizeof *p);
  if (!p) return ES_ERR_NOMEM;
  ix->dts = p;
  uint8_t *k = realloc(ix->key, (size_t)nc);
  if (!k) return ES_ERR_NOMEM;
  ix->key = k;
  *cap = nc;
  return ES_OK;
}

int es_video_index_read(const char *path, es_video_index *ix, char *msg, size_t len) {
  AVFormatContext *fmt = NULL;
  AVPacket *pkt = NULL;
  char *url = NULL;
  int64_t cap = 0;
  int rc = ES_OK, err, stream;

  memset(ix, 0, sizeof *ix);
  if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_QUIET);
  url = av_asprintf("file:%s", path); /* a name with a colon stays a file */
  pkt = av_packet_alloc();
  if (!url || !pkt) {
    rc = ES_ERR_NOMEM;
    snprintf(msg, len, "out of memory");
    goto end;
  }
  if ((err = avformat_open_input(&fmt, url, NULL, NULL)) < 0 ||
      (err = avformat_find_stream_info(fmt, NULL)) < 0) {
    char e[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(err, e, sizeof e);
    snprintf(msg, len, "cannot read the packet index: %s", e);
    rc = ES_ERR_INPUT;
    goto end;
  }
  stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
  if (stream < 0) {
    snprintf(msg, len, "no video stream");
    rc = ES_ERR_INPUT;
    goto end;
  }
  for (unsigned i = 0; i < fmt->nb_streams; i++)
    if ((int)i != stream) fmt->streams[i]->discard = AVDISCARD_ALL;
  ix->tb_num = fmt->streams[stream]->time_base.num;
  ix->tb_den = fmt->streams[stream]->time_base.den;
  for (;;) {
    err = av_read_frame(fmt, pkt);
    if (err == AVERROR(EAGAIN)) continue;
    if (err < 0) break; /* the end, or damage: the decoder would stop there too */
    if (pkt->stream_index == stream && pkt->size > 0 && !(pkt->flags & AV_PKT_FLAG_DISCARD)) {
      int64_t p = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      if (p == AV_NOPTS_VALUE) {
        /* Raw H.264 and AVI with B-frames: where a frame lies is only known by decoding. */
        snprintf(msg, len, "packet %" PRId64 " has no time stamp: cannot split the video "
                 "(remux it to .mkv or .mp4 first)", ix->n);
        rc = ES_ERR_INPUT;
        av_packet_unref(pkt);
        goto end;
      }
      if ((rc = grow(ix, &cap, ix->n + 1)) != ES_OK) {
        snprintf(msg, len, "out of memory");
        av_packet_unref(pkt);
        goto end;
      }
      ix->pts[ix->n] = p;
      ix->dts[ix->n] = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : INT64_MIN;
      ix->key[ix->n] = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
      ix->n++;
    }
    av_packet_unref(pkt);
  }
end:
  if (rc != ES_OK) es_video_index_free(ix);
  av_packet_free(&pkt);
  avformat_close_input(&fmt);
  av_free(url);
  return rc;
}
