/*
 * test_video_damaged.c - damaged video is decoded as far as it can be: garbage written over
 * the middle of a .nut/.mkv, or bytes cut out of the middle of an .mp4. The reader must not
 * fail, must count the packets/frames it skipped (es_video_in_corrupt), and must deliver
 * the frames around the damage - those before it exactly as from the intact file. Empty
 * packets, which are legal (NUT and AVI carry them), are no damage: nothing is counted.
 */
#include <inttypes.h>

#include "es_io.h"
#include "es_test_video.h"

static char dir[256];

typedef struct run {
  int rc_open, rc_end, n;
  int64_t corrupt, flagged, prekey, dropped;
  uint8_t *frames; /* n frames of w*h */
  char msg[256];
} run;

static void decode(const char *path, int w, int h, run *r) {
  memset(r, 0, sizeof *r);
  es_video_in_opts o = {.raw = NULL};
  es_video_info info;
  es_video_in *v = NULL;
  r->rc_open = es_video_in_open(&v, path, &o, &info, r->msg, sizeof r->msg);
  if (r->rc_open < 0) return;
  CHECK(info.width == w && info.height == h, "%s: %dx%d", path, info.width, info.height);
  size_t fs = (size_t)w * h;
  uint8_t *buf = malloc(fs);
  for (;;) {
    memset(buf, 0xa5, fs);
    int rc = es_video_in_read(v, buf, (size_t)w, NULL, NULL, r->msg, sizeof r->msg);
    if (rc < 0) {
      r->rc_end = rc;
      break;
    }
    uint8_t *nf = realloc(r->frames, fs * (r->n + 1));
    if (!nf) break;
    r->frames = nf;
    memcpy(r->frames + fs * r->n, buf, fs);
    if (++r->n > 1000) break;
  }
  r->corrupt = es_video_in_corrupt(v);
  r->flagged = es_video_in_flagged(v);
  r->prekey = es_video_in_prekey(v);
  r->dropped = es_video_in_dropped(v);
  free(buf);
  es_video_in_close(&v);
}

static int ffprobe_count(const char *path, const char *what);

/* Makes a clip of n frames of lavfi's testsrc2 at w x h, 25 fps, encoded with `opts` (the
 * codec and its options, filters too) into path. Returns tv_sh's status (0: made). */
static int make_clip(const char *path, int w, int h, int n, const char *opts) {
  return tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=25 -frames:v %d %s '%s'",
               w, h, n, opts, path);
}

/* A reading that opened and ran to the end of the input (decode's rc_open and rc_end). */
static void check_read_to_end(const char *label, const run *r) {
  CHECK(r->rc_open == ES_OK && r->rc_end == ES_ERR_EOF, "%s: %d %d %s", label, r->rc_open,
        r->rc_end, r->msg);
}

/* cut: remove bytes instead of overwriting them. counted: visible damage must show in the
 * corrupt count (codecs with checksums, containers that resynchronise, and H.264, whose
 * concealment FFmpeg 5.1 only logs: the reader counts decoder and demuxer errors it logs).
 * accounted: a codec whose every packet gives a frame (progressive H.264): each packet
 * ffprobe reads is a frame delivered or is counted (corrupt, before the first keyframe, or
 * dropped by the decoder without an error). */
static void damage_case(const char *name, const char *encode, int n, int cut, int counted,
                        int accounted) {
  int w = es_test_range(40, 160) | 1, h = es_test_range(30, 120) | 1;
  char clip[512], bad[512];
  snprintf(clip, sizeof clip, "%s/%s", dir, name);
  snprintf(bad, sizeof bad, "%s/bad-%s", dir, name);
  /* The encoder named after -c:v must exist in this ffmpeg (a minimal one has few). */
  char enc[64] = "", what[160];
  const char *c = strstr(encode, "-c:v ");
  if (c) sscanf(c + 5, "%63s", enc);
  snprintf(what, sizeof what, "%s encoder", enc);
  snprintf(clip, sizeof clip, "test_video_damaged: %s", name);
  if (enc[0] && !tv_ffmpeg_need(clip, "encoders", enc, what)) return;
  snprintf(clip, sizeof clip, "%s/%s", dir, name);
  char opts[512];
  snprintf(opts, sizeof opts, "-vf scale=%d:%d %s", w, h, encode);
  if (make_clip(clip, (w + 1) & ~1, (h + 1) & ~1, n, opts) != 0) {
    CHECK(0, "%s: could not make the clip", name);
    return;
  }
  size_t size = 0;
  uint8_t *data = tv_read_file(clip, &size);
  if (!data) {
    CHECK(0, "%s: unreadable", name);
    return;
  }
  /* Damage a stretch in the middle (40%..60% of the file, some bytes of it). */
  size_t at = size * 2 / 5 + (size_t)es_test_range(0, (int)(size / 10));
  size_t span = (size_t)es_test_range((int)(size / 50) + 16, (int)(size / 10) + 32);
  if (at + span > size) span = size - at;
  if (cut) {
    memmove(data + at, data + at + span, size - at - span);
    size -= span;
  } else {
    for (size_t i = 0; i < span; i++) data[at + i] = (uint8_t)(es_test_rand() >> 40);
  }
  tv_write_file(bad, data, size);
  free(data);
  printf("%s: %dx%d, %d frames, %s %zu bytes at %zu\n", name, w, h, n,
         cut ? "cut" : "overwrote", span, at);

  run good, dmg;
  decode(clip, w, h, &good);
  CHECK(good.rc_open == ES_OK && good.rc_end == ES_ERR_EOF && good.n == n && good.corrupt == 0 &&
            good.flagged == 0 && good.prekey == 0 && good.dropped == 0,
        "%s intact: %d %d %d frames %" PRId64 " corrupt %" PRId64 " flagged %" PRId64
        " before the first keyframe %" PRId64 " dropped %s",
        name, good.rc_open, good.rc_end, good.n, good.corrupt, good.flagged, good.prekey,
        good.dropped, good.msg);
  decode(bad, w, h, &dmg);
  printf("%s damaged: %d frames, %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64
         " before the first keyframe, %" PRId64 " dropped, end %d %s\n",
         name, dmg.n, dmg.corrupt, dmg.flagged, dmg.prekey, dmg.dropped, dmg.rc_end, dmg.msg);
  CHECK(dmg.rc_open == ES_OK, "%s damaged: open %d %s", name, dmg.rc_open, dmg.msg);
  CHECK(dmg.rc_end == ES_ERR_EOF, "%s damaged: ended with %d %s (not EOF)", name, dmg.rc_end,
        dmg.msg);
  CHECK(dmg.n >= n / 4 && dmg.n <= n, "%s damaged: %d frames of %d", name, dmg.n, n);
  /* The first frames (well before the damage) are the intact file's. */
  size_t fs = (size_t)w * h;
  int same = 0;
  while (same < dmg.n && same < good.n &&
         !memcmp(dmg.frames + fs * same, good.frames + fs * same, fs))
    same++;
  /* Damage that changed no delivered frame and lost none (it fell on bytes nothing reads,
   * e.g. a Matroska Void element or chroma the grey plane never shows) need not be
   * counted; any visible damage must be. */
  int visible = dmg.n != good.n || same < dmg.n;
  /* And damage that the decoder itself does not notice (random bytes in an H.264 slice that
   * still parse: no checksum says otherwise) cannot be counted: ffmpeg reports nothing
   * either. What ffmpeg reports as an error, the reader must count. */
  char *log = tv_capture("ffmpeg -nostdin -v error -i '%s' -f null - 2>&1", bad);
  int reported = log && *log;
  free(log);
  printf("%s damaged: %d leading frames intact, damage %s, %s by ffmpeg\n", name, same,
         visible ? "visible" : "not visible in the grey planes",
         reported ? "reported" : "not reported");
  /* Packets the demuxer flagged are decoded (as ffmpeg does) and counted apart; so are
   * frames the decoder dropped without an error. */
  CHECK(!counted || !visible || !reported || dmg.corrupt + dmg.flagged + dmg.dropped > 0,
        "%s damaged: nothing counted as corrupt, flagged or dropped (ffmpeg reports errors)",
        name);
  if (accounted) {
    /* Every packet is a frame or counted; none counted twice as dropped. (corrupt may
     * also count damaged stretches of the file that were no packet.) */
    const int pk = ffprobe_count(bad, "packets");
    printf("%s damaged: %d packets (ffprobe)\n", name, pk);
    CHECK(pk > 0 && dmg.n + dmg.corrupt + dmg.prekey + dmg.dropped >= pk &&
              dmg.n + dmg.prekey + dmg.dropped <= pk,
          "%s damaged: %d packets, %d frames, %" PRId64 " corrupt, %" PRId64
          " before the first keyframe, %" PRId64 " dropped: packets not accounted for",
          name, pk, dmg.n, dmg.corrupt, dmg.prekey, dmg.dropped);
  }
  CHECK(same >= n / 5, "%s damaged: only %d leading frames equal the intact ones", name, same);
  free(good.frames);
  free(dmg.frames);
}

#ifdef ES_HAVE_FFMPEG
/* Copies the packets of in (one video stream) into a new NUT file out, with an empty packet
 * (size 0) after every second one. 0 on success. */
static int remux_with_empty(const char *in, const char *out) {
  AVFormatContext *ic = NULL, *oc = NULL;
  AVPacket *p = av_packet_alloc();
  int rc = -1, n = 0;
  if (!p || avformat_open_input(&ic, in, NULL, NULL) < 0) goto end;
  if (avformat_find_stream_info(ic, NULL) < 0 || ic->nb_streams != 1) goto end;
  if (avformat_alloc_output_context2(&oc, NULL, "nut", out) < 0) goto end;
  AVStream *is = ic->streams[0], *os = avformat_new_stream(oc, NULL);
  if (!os || avcodec_parameters_copy(os->codecpar, is->codecpar) < 0) goto end;
  os->time_base = is->time_base;
  if (avio_open(&oc->pb, out, AVIO_FLAG_WRITE) < 0 || avformat_write_header(oc, NULL) < 0)
    goto end;
  while (av_read_frame(ic, p) >= 0) {
    av_packet_rescale_ts(p, is->time_base, os->time_base);
    int64_t ts = p->dts != AV_NOPTS_VALUE ? p->dts : p->pts;
    p->stream_index = 0;
    if (av_write_frame(oc, p) < 0) goto end;
    av_packet_unref(p);
    if (++n % 2 == 0) {
      p->pts = p->dts = ts + 1; /* between this packet and the next */
      p->stream_index = 0;
      if (av_write_frame(oc, p) < 0) goto end; /* data NULL, size 0 */
    }
  }
  rc = av_write_trailer(oc) < 0 ? -1 : n;
end:
  av_packet_free(&p);
  if (oc) avio_closep(&oc->pb);
  avformat_free_context(oc);
  avformat_close_input(&ic);
  return rc;
}
#endif

/* Empty packets among good ones: every frame delivered as from the file without them, and
 * nothing counted as corrupt (ffmpeg skips them silently too). */
static void empty_packets_case(void) {
#ifdef ES_HAVE_FFMPEG
  if (!tv_ffmpeg_need("test_video_damaged: empty packets", "encoders", "ffv1", "ffv1 encoder") ||
      !tv_lavf_has_muxer("nut") || !tv_lavf_has_demuxer("nut")) {
    printf("test_video_damaged: empty packets skipped (no ffv1 or nut)\n");
    return;
  }
  int w = es_test_range(10, 45) * 2, h = es_test_range(8, 35) * 2, n = es_test_range(6, 14);
  char clip[512], holey[512];
  snprintf(clip, sizeof clip, "%s/e.nut", dir);
  snprintf(holey, sizeof holey, "%s/e-empty.nut", dir);
  if (make_clip(clip, w, h, n, "-c:v ffv1 -pix_fmt yuv420p") != 0 ||
      remux_with_empty(clip, holey) != n) {
    CHECK(0, "empty packets: could not make the clips");
    return;
  }
  run good, e;
  decode(clip, w, h, &good);
  decode(holey, w, h, &e);
  printf("empty packets: %dx%d, %d frames, %d empty packets: %d frames, %" PRId64 " corrupt\n",
         w, h, n, n / 2, e.n, e.corrupt);
  CHECK(good.rc_end == ES_ERR_EOF && good.n == n && good.corrupt == 0, "empty: intact %d %d",
        good.rc_end, good.n);
  check_read_to_end("empty packets", &e);
  CHECK(e.corrupt == 0, "empty packets: %" PRId64 " counted as corrupt", e.corrupt);
  CHECK(e.n == n && !memcmp(e.frames, good.frames, (size_t)w * h * n),
        "empty packets: %d frames of %d, or not the intact ones", e.n, n);
  free(good.frames);
  free(e.frames);
#endif
}

/* ffprobe's count of the frames ffmpeg decodes from path (or of its packets), -1 if none. */
static int ffprobe_count(const char *path, const char *what) {
  char *out = tv_capture("ffprobe -v quiet -count_%s -select_streams v:0 -show_entries "
                         "stream=nb_read_%s -of csv=p=0 '%s'",
                         what, what, path);
  int n = -1;
  if (!out || sscanf(out, "%d", &n) != 1) n = -1;
  free(out);
  return n;
}

static int need_ts_h264(const char *name) {
  char test[96];
  snprintf(test, sizeof test, "test_video_damaged: %s", name);
  if (!tv_ffmpeg_need(test, "encoders", "libx264", "libx264 encoder") ||
      !tv_ffmpeg_need(test, "muxers", "mpegts", "mpegts muxer") ||
      !tv_lavf_has_demuxer("mpegts")) {
    printf("test_video_damaged: %s skipped (no libx264 or mpegts)\n", name);
    return 0;
  }
  return 1;
}

/* Two H.264 MPEG-TS files joined with cat: the continuity counters break at the junction
 * and libavformat flags the first packet of the second part corrupt, though it is whole.
 * It is decoded as ffmpeg decodes it (it was dropped, and with it the second part's first
 * frame, and its P-frames lost their reference): every frame of both parts, as from each
 * part alone, as many as ffmpeg decodes, and the flag counted, nothing skipped. */
static void joined_ts_case(void) {
  if (!need_ts_h264("joined MPEG-TS")) return;
  int w = es_test_range(16, 40) * 2, h = es_test_range(12, 30) * 2;
  int na = es_test_range(12, 30), nb = es_test_range(12, 30);
  char a[512], b[512], j[512];
  snprintf(a, sizeof a, "%s/ja.ts", dir);
  snprintf(b, sizeof b, "%s/jb.ts", dir);
  snprintf(j, sizeof j, "%s/joined.ts", dir);
  if (make_clip(a, w, h, na, "-c:v libx264 -g 10 -bf 2 -pix_fmt yuv420p") != 0 ||
      make_clip(b, w, h, nb, "-vf negate -c:v libx264 -g 10 -bf 2 -pix_fmt yuv420p") != 0 ||
      tv_sh("cat '%s' '%s' > '%s'", a, b, j) != 0) {
    CHECK(0, "joined MPEG-TS: could not make the clips");
    return;
  }
  run ra, rb, rj;
  decode(a, w, h, &ra);
  decode(b, w, h, &rb);
  decode(j, w, h, &rj);
  const int ff = ffprobe_count(j, "frames");
  printf("joined MPEG-TS: %dx%d, %d + %d frames: %d frames (ffmpeg %d), %" PRId64
         " corrupt, %" PRId64 " flagged\n",
         w, h, na, nb, rj.n, ff, rj.corrupt, rj.flagged);
  CHECK(ra.n == na && rb.n == nb &&
            ra.corrupt + rb.corrupt + ra.flagged + rb.flagged + ra.dropped + rb.dropped == 0,
        "joined MPEG-TS: the parts gave %d and %d frames", ra.n, rb.n);
  check_read_to_end("joined MPEG-TS", &rj);
  CHECK(rj.n == na + nb && rj.n == ff, "joined MPEG-TS: %d frames of %d + %d (ffmpeg: %d)", rj.n,
        na, nb, ff);
  /* The counters break unless the second part's first one happens to follow the first
   * part's last (1 in 16): flagged where ffmpeg says so. */
  char *log = tv_capture("ffmpeg -nostdin -v warning -i '%s' -f null - 2>&1", j);
  const int ff_flagged = log && strstr(log, "corrupt input packet");
  free(log);
  CHECK(rj.corrupt == 0 && rj.dropped == 0 && (rj.flagged >= 1) == ff_flagged,
        "joined MPEG-TS: %" PRId64 " corrupt, %" PRId64 " dropped, %" PRId64
        " flagged (ffmpeg: %s)",
        rj.corrupt, rj.dropped, rj.flagged, ff_flagged ? "a corrupt packet" : "none");
  const size_t fs = (size_t)w * h;
  CHECK(rj.n == na + nb && !memcmp(rj.frames, ra.frames, fs * na) &&
            !memcmp(rj.frames + fs * na, rb.frames, fs * nb),
        "joined MPEG-TS: the frames are not those of the two parts");
  free(ra.frames);
  free(rb.frames);
  free(rj.frames);
}

/* An H.264 MPEG-TS cut mid-GOP (at a transport packet boundary): the packets before the
 * first keyframe give no frame and no error, as with ffmpeg (same frame count); they are
 * counted apart (es_video_in_prekey), not as corrupt, and the frames after are the intact
 * file's last ones. */
static void prekey_case(void) {
  if (!need_ts_h264("MPEG-TS cut mid-GOP")) return;
  int w = es_test_range(16, 40) * 2, h = es_test_range(12, 30) * 2, n = es_test_range(40, 70);
  char full[512], cut[512];
  snprintf(full, sizeof full, "%s/full.ts", dir);
  snprintf(cut, sizeof cut, "%s/cut.ts", dir);
  if (make_clip(full, w, h, n, "-c:v libx264 -g 25 -sc_threshold 0 -bf 2 -pix_fmt yuv420p") !=
      0) {
    CHECK(0, "cut MPEG-TS: could not make the clip");
    return;
  }
  size_t size = 0;
  uint8_t *data = tv_read_file(full, &size);
  if (!data) {
    CHECK(0, "cut MPEG-TS: unreadable");
    return;
  }
  /* Cut within the first GOP (the first 25 frames hold most of the first third or more of
   * the file): past the first keyframe, before the second. */
  const size_t npk = size / 188;
  const size_t skip = 188 * (size_t)es_test_range((int)(npk / 10) + 2, (int)(npk / 4) + 2);
  tv_write_file(cut, data + skip, size - skip);
  free(data);
  run good, c;
  decode(full, w, h, &good);
  decode(cut, w, h, &c);
  const int ff = ffprobe_count(cut, "frames"), pk = ffprobe_count(cut, "packets");
  printf("cut MPEG-TS: %dx%d, %d frames, first %zu bytes cut: %d frames (ffmpeg %d, %d packets), "
         "%" PRId64 " before the first keyframe, %" PRId64 " corrupt\n",
         w, h, n, skip, c.n, ff, pk, c.prekey, c.corrupt);
  CHECK(good.n == n && good.prekey == 0 && good.corrupt == 0 && good.dropped == 0,
        "cut MPEG-TS: intact %d frames", good.n);
  check_read_to_end("cut MPEG-TS", &c);
  CHECK(c.n == ff && c.n > 0 && c.n < n, "cut MPEG-TS: %d frames (ffmpeg %d)", c.n, ff);
  CHECK(c.prekey > 0 && c.n + c.prekey == pk && c.corrupt == 0 && c.dropped == 0,
        "cut MPEG-TS: %" PRId64 " packets before the first keyframe, %d frames, %d packets, "
        "%" PRId64 " corrupt, %" PRId64 " dropped",
        c.prekey, c.n, pk, c.corrupt, c.dropped);
  const size_t fs = (size_t)w * h;
  CHECK(c.n > 0 && c.n <= good.n &&
            !memcmp(c.frames, good.frames + fs * (good.n - c.n), fs * c.n),
        "cut MPEG-TS: the frames are not the intact file's last %d", c.n);
  free(good.frames);
  free(c.frames);
}

/* An H.264 MPEG-TS whose middle keyframe is lost (its transport packets cut out): the
 * frames after it, up to the next keyframe, are decoded against references the decoder no
 * longer has, come out of order, and are discarded with no error (ffmpeg gives the same
 * frame count and says only "no picture ooo" at debug level). Every packet ffprobe reads is
 * then a frame delivered or counted: here as dropped by the decoder. */
static void lost_key_case(void) {
  if (!need_ts_h264("MPEG-TS without a keyframe")) return;
  int w = es_test_range(16, 40) * 2, h = es_test_range(12, 30) * 2, n = es_test_range(35, 60);
  char full[512], bad[512];
  snprintf(full, sizeof full, "%s/key.ts", dir);
  snprintf(bad, sizeof bad, "%s/nokey.ts", dir);
  if (make_clip(full, w, h, n, "-c:v libx264 -g 10 -sc_threshold 0 -pix_fmt yuv420p") != 0) {
    CHECK(0, "lost keyframe: could not make the clip");
    return;
  }
  /* The byte positions of the packets (ffprobe: one PES each, from its first transport
   * packet on), keyframes marked. */
  char *list = tv_capture("ffprobe -v quiet -select_streams v:0 -show_entries packet=pos,flags "
                          "-of csv=p=0 '%s'",
                          full);
  long pos[256];
  int key[256], np = 0;
  for (char *l = list; l && *l && np < 256;) {
    char fl[8] = "";
    if (*l >= '0' && *l <= '9' && sscanf(l, "%ld,%7s", &pos[np], fl) == 2) {
      key[np] = fl[0] == 'K';
      np++;
    }
    char *nl = strchr(l, '\n');
    l = nl ? nl + 1 : NULL;
  }
  free(list);
  /* The second or third keyframe (a packet in the middle, with packets after it). */
  int k = -1, seen = 0, want = es_test_range(2, 3);
  for (int i = 1; i + 1 < np && k < 0; i++)
    if (key[i] && ++seen == want) k = i;
  size_t size = 0;
  uint8_t *data = tv_read_file(full, &size);
  if (k < 0 || !data || pos[k] % 188 || pos[k + 1] % 188 || (size_t)pos[k + 1] > size) {
    CHECK(0, "lost keyframe: no keyframe to cut (%d packets)", np);
    free(data);
    return;
  }
  memmove(data + pos[k], data + pos[k + 1], size - (size_t)pos[k + 1]);
  tv_write_file(bad, data, size - (size_t)(pos[k + 1] - pos[k]));
  free(data);
  run good, r;
  decode(full, w, h, &good);
  decode(bad, w, h, &r);
  const int ff = ffprobe_count(bad, "frames"), pk = ffprobe_count(bad, "packets");
  printf("lost keyframe: %dx%d, %d frames, packet %d (a keyframe) cut: %d frames (ffmpeg %d, %d "
         "packets), %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64 " dropped\n",
         w, h, n, k, r.n, ff, pk, r.corrupt, r.flagged, r.dropped);
  CHECK(good.n == n && good.corrupt + good.flagged + good.prekey + good.dropped == 0,
        "lost keyframe: intact %d frames", good.n);
  check_read_to_end("lost keyframe", &r);
  CHECK(r.n == ff && r.n < n - 1 && pk == n - 1, "lost keyframe: %d frames (ffmpeg %d), %d packets",
        r.n, ff, pk);
  CHECK(r.dropped > 0 && r.prekey == 0 && r.n + r.corrupt + r.dropped == pk,
        "lost keyframe: %d frames, %" PRId64 " corrupt, %" PRId64 " dropped of %d packets", r.n,
        r.corrupt, r.dropped, pk);
  const size_t fs = (size_t)w * h;
  CHECK(r.n >= k - 3 && !memcmp(r.frames, good.frames, fs * (size_t)(k - 3)),
        "lost keyframe: the frames before it are not the intact file's");
  free(good.frames);
  free(r.frames);
}

/* An intact H.264 .mp4 trimmed without re-encoding (ffmpeg -ss T -i in.mp4 -c copy): the
 * packets from the keyframe before T up to T stay in the file, flagged discard by the edit
 * list (AV_PKT_FLAG_DISCARD), and the decoder decodes them and gives no frame, by design.
 * Nothing is damaged: as many frames as ffmpeg decodes, none counted. */
static void trimmed_mp4_case(void) {
  if (!tv_ffmpeg_need("test_video_damaged: trimmed .mp4", "encoders", "libx264",
                      "libx264 encoder") ||
      !tv_lavf_has_demuxer("mov")) {
    printf("test_video_damaged: trimmed .mp4 skipped (no libx264 or mov)\n");
    return;
  }
  int w = es_test_range(16, 40) * 2, h = es_test_range(12, 30) * 2, n = es_test_range(50, 80);
  int g = es_test_range(10, 20), start = es_test_range(g + 2, 2 * g - 1); /* mid-GOP */
  char full[512], cut[512];
  snprintf(full, sizeof full, "%s/trim-full.mp4", dir);
  snprintf(cut, sizeof cut, "%s/trim.mp4", dir);
  char opts[128];
  snprintf(opts, sizeof opts, "-c:v libx264 -g %d -sc_threshold 0 -bf 2 -pix_fmt yuv420p", g);
  if (make_clip(full, w, h, n, opts) != 0 ||
      tv_sh("ffmpeg -v error -y -ss %.2f -i '%s' -c copy '%s'", start / 25.0, full, cut) != 0) {
    CHECK(0, "trimmed .mp4: could not make the clips");
    return;
  }
  run r;
  decode(cut, w, h, &r);
  const int ff = ffprobe_count(cut, "frames"), pk = ffprobe_count(cut, "packets");
  printf("trimmed .mp4: %dx%d, %d frames, GOP %d, from frame %d: %d frames (ffmpeg %d, %d "
         "packets), %" PRId64 " corrupt, %" PRId64 " before the first keyframe, %" PRId64
         " dropped\n",
         w, h, n, g, start, r.n, ff, pk, r.corrupt, r.prekey, r.dropped);
  check_read_to_end("trimmed .mp4", &r);
  CHECK(r.n == ff && r.n > 0 && pk > ff, "trimmed .mp4: %d frames (ffmpeg %d of %d packets)",
        r.n, ff, pk);
  CHECK(r.corrupt + r.flagged + r.prekey + r.dropped == 0,
        "trimmed .mp4: %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64
        " before the first keyframe, %" PRId64 " dropped (the edit list's discarded packets)",
        r.corrupt, r.flagged, r.prekey, r.dropped);
  free(r.frames);
}

int main(void) {
  es_test_seed("test_video_damaged");
  if (!tv_need_ffmpeg("test_video_damaged")) return ES_TEST_SKIP;
  snprintf(dir, sizeof dir, "%s/es-video-dmg-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return 1;
  /* Intra-only codecs with checksums (ffv1 v3 slice CRCs) or without (mjpeg), in
   * containers that resynchronise (nut syncpoints, Matroska clusters). */
  damage_case("a.nut", "-c:v ffv1 -level 3 -slicecrc 1 -g 1 -pix_fmt yuv420p", 40, 0, 1, 0);
  damage_case("b.mkv", "-c:v ffv1 -level 3 -slicecrc 1 -g 1 -pix_fmt yuv420p", 40, 0, 1, 0);
  damage_case("c.mkv", "-c:v libx264 -g 10 -pix_fmt yuv444p", 50, 0, 1, 1);
  damage_case("d.mp4", "-c:v mpeg4 -g 8 -pix_fmt yuv420p -movflags +faststart", 50, 1, 1, 0);
  /* MPEG-TS, whose demuxer flags the packets it finds damaged: decoded all the same. */
  if (tv_lavf_has_muxer("mpegts") && tv_lavf_has_demuxer("mpegts")) {
    damage_case("e.ts", "-c:v mpeg2video -g 8 -pix_fmt yuv420p", 50, 1, 1, 0);
    /* H.264 whose damage loses a keyframe: the frames after it come out of order and the
     * decoder discards them with no error (ffmpeg's "no picture ooo", at debug level). */
    damage_case("f.ts", "-c:v libx264 -g 10 -pix_fmt yuv444p", 50, 0, 1, 1);
  }
  empty_packets_case();
  joined_ts_case();
  prekey_case();
  lost_key_case();
  trimmed_mp4_case();
  tv_sh("rm -rf '%s'", dir);
  return es_test_done("test_video_damaged");
}
