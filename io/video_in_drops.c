/*
 * video_in_drops.c - the accounting of packets the decoder took and gave no frame for:
 * field pairs, packets before the first keyframe, leading pictures skipped where decoding
 * starts, HEVC joins, and what is left over (es_video_in_dropped).
 */
#include <stdint.h>
#include <string.h>

#include <libavcodec/avcodec.h>

#include "video_in_internal.h"

/* ---- Field pictures.
 *
 * Interlaced H.264 and MPEG-2 code a frame either as one picture (H.264 MBAFF, MPEG-2 frame
 * pictures: one packet) or as two field pictures (H.264 PAFF, MPEG-2 field pictures: a
 * packet each where the demuxer splits them, as MPEG-TS does); their decoders make one frame
 * of a field pair. es_vin_count_dropped counts the packets that gave no frame, so it must know
 * which packets were the second field of a pair: each packet's picture structure is read before it
 * is sent, for H.264 by libavcodec's parser (its picture_structure, from the first slice
 * header; PARSER_FLAG_COMPLETE_FRAMES: each packet parsed at once, as it is), for MPEG-2 from
 * the picture coding extension (libavcodec 59's parser leaves picture_structure unknown for
 * MPEG-2). A field of the parity opposite to an unpaired field before it is a second field.
 * HEVC and MPEG-1 need nothing: libavcodec's HEVC decoder gives every field picture as a
 * frame of its own, and MPEG-1 has no fields. */
void es_vin_fields_open(es_video_in *v, const AVCodecParameters *par) {
  v->fields = FIELDS_NONE;
  if (par->codec_id == AV_CODEC_ID_MPEG2VIDEO) v->fields = FIELDS_MPEG2;
  if (par->codec_id != AV_CODEC_ID_H264) return;
  v->fields = FIELDS_SLACK; /* unless the parser can be had (a build may leave it out) */
  v->parser = av_parser_init(par->codec_id);
  v->pctx = avcodec_alloc_context3(NULL);
  if (!v->parser || !v->pctx || avcodec_parameters_to_context(v->pctx, par) < 0) {
    av_parser_close(v->parser);
    v->parser = NULL;
    avcodec_free_context(&v->pctx);
    return;
  }
  v->parser->flags |= PARSER_FLAG_COMPLETE_FRAMES;
  v->fields = FIELDS_PARSER;
}

/* MPEG-2: the picture_structure of the packet's first picture coding extension (ISO/IEC
 * 13818-2 6.2.3.1: 1 top field, 2 bottom field, 3 frame), looked for between its first
 * picture start code and its first slice; a picture without one is MPEG-1's, a frame. */
static int mpeg2_structure(const uint8_t *b, int n) {
  int picture = 0;
  for (int i = 0; i + 6 < n; i++) {
    if (b[i] || b[i + 1] || b[i + 2] != 1) continue;
    const uint8_t code = b[i + 3];
    if (code == 0x00) {
      picture = 1;
    } else if (picture && code >= 0x01 && code <= 0xaf) { /* a slice: no extension */
      return AV_PICTURE_STRUCTURE_FRAME;
    } else if (picture && code == 0xb5 && (b[i + 4] >> 4) == 8) {
      return b[i + 6] & 3 ? b[i + 6] & 3 : AV_PICTURE_STRUCTURE_UNKNOWN;
    }
    i += 2;
  }
  return AV_PICTURE_STRUCTURE_UNKNOWN;
}

/* The picture structure of pkt (AV_PICTURE_STRUCTURE_*), before it is sent. */
int es_vin_packet_structure(es_video_in *v, const AVPacket *pkt) {
  if (v->fields == FIELDS_MPEG2) return mpeg2_structure(pkt->data, pkt->size);
  if (v->fields != FIELDS_PARSER) return AV_PICTURE_STRUCTURE_FRAME;
  uint8_t *out = NULL;
  int out_size = 0;
  v->parser->picture_structure = AV_PICTURE_STRUCTURE_UNKNOWN;
  av_parser_parse2(v->parser, v->pctx, &out, &out_size, pkt->data, pkt->size, pkt->pts, pkt->dts,
                   pkt->pos);
  return out_size > 0 ? v->parser->picture_structure : AV_PICTURE_STRUCTURE_UNKNOWN;
}

/* A packet the decoder took, of picture structure ps: is it the second field of a pair (or
 * of unknown structure, and so perhaps one)? */
int es_vin_second_field(es_video_in *v, int ps) {
  if (ps == AV_PICTURE_STRUCTURE_TOP_FIELD || ps == AV_PICTURE_STRUCTURE_BOTTOM_FIELD) {
    const int second = v->field_open && v->field_open != ps;
    v->field_open = second ? 0 : ps;
    return second;
  }
  v->field_open = 0;
  return ps != AV_PICTURE_STRUCTURE_FRAME;
}

/* The packets es_vin_count_dropped takes as half of a frame the decoder gave. A field pair gives
 * one interlaced frame; counted up to the interlaced frames given, so that a pair the
 * decoder dropped counts its two packets (a stream of field pairs, or of frame pictures,
 * counts exactly; one that mixes them may count a dropped pair once). Without a parser,
 * every interlaced frame is taken as a pair, as before: drops of frame pictures go
 * uncounted. */
static int64_t field_packets(const es_video_in *v) {
  if (v->fields == FIELDS_SLACK) return v->interlaced;
  return v->second_fields < v->interlaced ? v->second_fields : v->interlaced;
}

/* Whether frame f came from a packet sent before the first keyframe packet: by its tag
 * where packets are tagged, else by its dts (unknown: no). */
int es_vin_frame_before_key(const es_video_in *v, const AVFrame *f) {
#if ES_VIDEO_TAG_PACKETS
  if (f->reordered_opaque > 0) return f->reordered_opaque < v->key_seq;
#endif
  return f->pkt_dts != AV_NOPTS_VALUE && v->key_dts != AV_NOPTS_VALUE && f->pkt_dts < v->key_dts;
}

/* HEVC joins. An IRAP that ends a sequence (a CRA just after an end-of-sequence NAL, as where
 * two streams are joined, or an IDR or BLA with no_output_of_prior_pics_flag: hevc_lead's
 * lead_join) makes hevcdec discard the pictures of the sequence before it still waiting to
 * be shown (ff_hevc_output_frame: those not marked for bumping), by design: ffmpeg gives the
 * same frame count. Which ones is not a matter of POC or pts alone (a picture decoded late,
 * below one already shown, is discarded too), so each picture sent is matched to its frame by
 * the packet's tag (reordered_opaque). The frames of a sequence all come out before the
 * first of the next one (seq_output), so a join is settled by a frame of a later packet, or
 * once drained: a picture of those sent before the join (the last ES_JOIN_PICS) that gave no
 * frame by then was discarded. Without packet tags (libavcodec 61), none is excused. */
void es_vin_join_settle(es_video_in *v, int i) {
  es_join *j = &v->joins[i];
  for (int k = 0; k < j->n; k++)
    if (!j->pics[k].out) v->joined++;
  memmove(j, j + 1, sizeof *j * (size_t)(--v->njoins - i));
}

/* A packet sent whose picture counts (not excused otherwise): join is its lead_join. */
void es_vin_join_sent(es_video_in *v, int64_t seq, int join) {
#if ES_VIDEO_TAG_PACKETS
  if (join && v->join_n) {
    if (v->njoins == ES_JOINS) es_vin_join_settle(v, 0); /* the oldest, early: it may count more */
    es_join *j = &v->joins[v->njoins++];
    j->seq = seq;
    j->n = v->join_n;
    memcpy(j->pics, v->join_ring, sizeof j->pics);
    v->join_n = 0;
  }
  if (v->join_n == ES_JOIN_PICS) {
    memmove(v->join_ring, v->join_ring + 1, sizeof v->join_ring[0] * (ES_JOIN_PICS - 1));
    v->join_n--;
  }
  v->join_ring[v->join_n++] = (es_join_pic){.seq = seq, .out = 0};
#else
  (void)v, (void)seq, (void)join;
#endif
}

/* A frame out of HEVC (damaged or not): marks its picture, in the join it is before (the
 * joins before it settled) or in the ring of the current sequence. */
void es_vin_join_frame(es_video_in *v, const AVFrame *f) {
#if ES_VIDEO_TAG_PACKETS
  const int64_t tag = f->reordered_opaque;
  es_join_pic *pics = v->join_ring;
  int n = v->join_n;
  for (int i = 0; i < v->njoins;) {
    es_join *j = &v->joins[i];
    if (tag >= j->seq) {
      es_vin_join_settle(v, i);
      continue;
    }
    pics = j->pics; /* a frame before this join is before the later ones too */
    n = j->n;
    break;
  }
  for (int k = 0; k < n; k++)
    if (pics[k].seq == tag) pics[k].out = 1;
#else
  (void)v, (void)f;
#endif
}

/* Once drained: the packets the decoder took and gave no frame for, though it returned no
 * error for them. H.264 does this where damage lost a keyframe: the frames after it, decoded
 * against references it no longer has, come out of order (their POCs below the last one
 * given out) and are discarded with only a debug line ("no picture ooo"), no error and no
 * flag. Every packet of the counted codecs gives a frame, a receive error, or (field
 * pictures, in two packets) half of an interlaced frame; packets before the first keyframe
 * are counted apart (prekey), and so are packets the container marks to be discarded (an
 * .mp4 trimmed with -c copy keeps the packets from the keyframe before its start, flagged
 * AV_PKT_FLAG_DISCARD by its edit list: libavcodec decodes them and gives no frame, by
 * design; not counted anywhere else), the leading pictures of an open GOP that the
 * decoder skips where decoding starts (es_vin_lead_skipped), and the pictures HEVC's decoder
 * discards at a join (es_vin_join_settle). What is left over was dropped. */
int64_t es_vin_count_dropped(const es_video_in *v) {
  /* final once drained (the decoder's EOF; not a drain given up after 1024 errors) */
  if (!v->count_drops || !v->finished || v->drain_errors > 1024) return 0;
  const int64_t left = v->sent_ok - v->received - v->recv_errors - v->prekey - field_packets(v) -
                       v->discards - v->leading - v->joined;
  return left > 0 ? left : 0;
}

/* The next NAL of an HEVC packet at or after *b, never past end: its first byte (its header),
 * *b moved on to where the one after it is looked for (hvcC: past its length, so *b is its
 * end; Annex B: just past its start code, the NAL's end being the next start code); NULL where
 * none is left. */
static const uint8_t *hevc_nal(const es_video_in *v, const uint8_t **b, const uint8_t *end) {
  const uint8_t *p = *b;
  if (v->lead_nal_len) {
    if (end - p < v->lead_nal_len) return NULL;
    uint32_t n = 0;
    for (int i = 0; i < v->lead_nal_len; i++)
      n = n << 8 | p[i];
    const uint8_t *nal = p + v->lead_nal_len;
    if (n > (uint32_t)(end - nal)) n = (uint32_t)(end - nal);
    *b = nal + n;
    return nal;
  }
  while (end - p >= 3 && !(p[0] == 0 && p[1] == 0 && p[2] == 1))
    p++;
  if (end - p < 3) return NULL;
  return *b = p + 3;
}

/* es_vin_lead_skipped for HEVC; last_eos: the packet before ended with an end of sequence. Sets
 * lead_join where the packet's IRAP makes the decoder discard the pictures waiting. */
static int hevc_lead(es_video_in *v, const AVPacket *p, int last_eos) {
  const uint8_t *b = p->data, *end = p->data + p->size;
  int at_start = 1, eos_start = 0; /* EOS or EOB before any other NAL: hevcdec's eos_at_start */
  v->lead_join = 0;
  for (const uint8_t *nal; (nal = hevc_nal(v, &b, end));) {
    if (end - nal < 2) continue; /* an empty NAL: on to the next */
    const int type = nal[0] >> 1 & 0x3f;
    if (type == 36 || type == 37) {
      v->lead_start = 1;
      eos_start |= at_start;
    } else {
      at_start = 0;
    }
    if (type >= 32) continue;       /* parameter sets, SEI, AUD: on to the picture */
    if (type >= 16 && type <= 23) { /* IRAP: BLA 16..18, IDR 19..20, CRA 21 */
      v->lead_rasl = type <= 18 || (type >= 21 && v->lead_start);
      /* no_output_of_prior_pics_flag: an IDR's or BLA's own (the bit after
       * first_slice_segment_in_pic_flag), set by hevcdec for a CRA just after an end of
       * sequence (its last_eos) */
      v->lead_join = type == 21 ? last_eos || eos_start : end - nal >= 3 && (nal[2] & 0x40);
      v->lead_start = 0;
      return 0;
    }
    if (type == 8 || type == 9) return v->lead_rasl;
    if (type < 6) v->lead_rasl = 0; /* a trailing picture: the leading ones are over */
    return 0;
  }
  return 0;
}

/* Whether the packet's last NAL is an end of sequence or of bitstream (36, 37) after some
 * other NAL (hevcdec's eos: the next packet's last_eos; one at the packet's start is
 * hevc_lead's). Annex B: the last start code, past trailing zero bytes; hvcC: the NALs'
 * lengths, one after the other. Never past p->size. */
static int hevc_ends_eos(const es_video_in *v, const AVPacket *p) {
  const uint8_t *b = p->data;
  int n = p->size, type = -1, nals = 0;
  if (v->lead_nal_len) {
    for (const uint8_t *nal, *at = b; (nal = hevc_nal(v, &at, b + n));)
      if (at - nal >= 2) { /* at: the NAL's end */
        type = nal[0] >> 1 & 0x3f;
        nals++;
      }
    return nals > 1 && (type == 36 || type == 37);
  }
  while (n > 0 && b[n - 1] == 0)
    n--;
  if (n < 5 || b[n - 5] || b[n - 4] || b[n - 3] != 1) return 0; /* EOS, EOB: 2 bytes */
  type = b[n - 2] >> 1 & 0x3f;
  int first = 0; /* the first start code: is it this one? */
  while (first + 3 <= n - 5 && !(b[first] == 0 && b[first + 1] == 0 && b[first + 2] == 1))
    first++;
  return (type == 36 || type == 37) && first + 3 <= n - 5;
}

/* Whether the decoder skips the picture of packet p, by design, as a leading picture of an
 * open GOP where decoding starts (no error, no frame; ffmpeg gives the same frame count), as
 * FFmpeg's decoders do, following them packet by packet (one picture a packet):
 *  - HEVC: the RASL pictures (NAL types 8, 9) after a CRA (21) that starts decoding (the
 *    stream's first, or the first after an end-of-sequence or end-of-bitstream NAL: 36, 37)
 *    or after a BLA (16..18), up to the next trailing or IRAP picture (hevcdec's max_ra: its
 *    POC test agrees while POCs go up, as in any stream that is not damaged). The RASL of a
 *    later CRA are decoded, so a keyframe lost to damage still shows.
 *  - MPEG-1/2: B-pictures (picture_coding_type 3) while fewer than two reference pictures
 *    were seen, where the last GOP header is not closed_gop (mpeg12dec's "Skipping B slice
 *    due to open GOP"); broken_link changes nothing there, and a later open GOP has its
 *    forward reference.
 * Neither libavcodec's parsers nor the decoders expose this (the parsers give the picture
 * type and POC, not the NAL type or closed_gop), so the packet's headers are read here: start
 * codes (Annex B, MPEG) or length prefixes (hvcC), up to the first picture or slice NAL, never
 * past p->size. Updates the state it follows; 0 for other codecs. */
int es_vin_lead_skipped(es_video_in *v, const AVPacket *p) {
  const uint8_t *b = p->data, *end = p->data + p->size;
  const enum AVCodecID id = v->dec->codec_id;
  if (id == AV_CODEC_ID_HEVC) {
    const int last_eos = v->lead_eos, skip = hevc_lead(v, p, last_eos);
    v->lead_eos = hevc_ends_eos(v, p);
    if (v->lead_eos) v->lead_start = 1;
    return skip;
  }
  if (id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_MPEG2VIDEO) {
    while (end - b >= 6) {
      if (b[0] || b[1] || b[2] != 1) {
        b++;
        continue;
      }
      if (b[3] == 0xb8 && end - b >= 8) v->lead_closed = b[7] >> 6 & 1; /* GOP header */
      if (b[3] == 0x00) { /* picture header: temporal_reference (10 bits), coding type (3) */
        const int type = b[5] >> 3 & 7;
        if (type == 1 || type == 2) {
          if (v->lead_refs < 2) v->lead_refs++;
          return 0;
        }
        return type == 3 && v->lead_refs < 2 && !v->lead_closed;
      }
      b += 4;
    }
  }
  return 0;
}

int64_t es_video_in_dropped(const es_video_in *v) { return v ? es_vin_count_dropped(v) : 0; }
int64_t es_video_in_excused(const es_video_in *v) {
  return v && v->finished ? v->discards + v->leading + v->joined : 0;
}
