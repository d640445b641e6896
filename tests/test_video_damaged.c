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
#ifdef ES_HAVE_FFMPEG
#include <libavcodec/avcodec.h> /* LIBAVCODEC_VERSION_MAJOR */
#endif

static char dir[256];

typedef struct run {
  int rc_open, rc_end, n;
  int64_t corrupt, flagged, prekey, dropped, excused;
  int64_t damaged; /* es_video_in_damaged */
  int marked;      /* frames es_video_in_frame_damaged said were damaged */
  int field_order; /* es_video_info's */
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
  r->field_order = info.field_order;
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
    r->marked += es_video_in_frame_damaged(v);
    if (++r->n > 1000) break;
  }
  r->corrupt = es_video_in_corrupt(v);
  r->damaged = es_video_in_damaged(v);
  r->flagged = es_video_in_flagged(v);
  r->prekey = es_video_in_prekey(v);
  r->dropped = es_video_in_dropped(v);
  r->excused = es_video_in_excused(v);
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
  CHECK(!counted || !visible || !reported ||
            dmg.damaged + dmg.corrupt + dmg.flagged + dmg.dropped > 0,
        "%s damaged: nothing counted as damaged, corrupt, flagged or dropped (ffmpeg reports "
        "errors)",
        name);
  CHECK(dmg.marked == dmg.damaged && good.damaged == 0 && good.marked == 0,
        "%s: %d frames marked damaged, %" PRId64 " counted (intact: %d, %" PRId64 ")", name,
        dmg.marked, dmg.damaged, good.marked, good.damaged);
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
  if (!need_ts_h264("joined MPEG-TS") ||
      !tv_ffmpeg_need("test_video_damaged: joined MPEG-TS", "filters", "negate", "negate filter"))
    return;
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
 * then a frame delivered or counted: here as dropped by the decoder. tag names the clips;
 * x264 adds its options (interlaced: frames coded as frames, one packet each, which the
 * decoder flags interlaced; once these drops went uncounted). */
/* The byte positions of path's video packets (at most max), 0 if none; keyframes in key. */
static int packet_positions(const char *path, long *pos, int *key, int max) {
  char *list = tv_capture("ffprobe -v quiet -select_streams v:0 -show_entries packet=pos,flags "
                          "-of csv=p=0 '%s'",
                          path);
  int np = 0;
  for (char *l = list; l && *l && np < max;) {
    char fl[8] = "";
    if (*l >= '0' && *l <= '9' && sscanf(l, "%ld,%7s", &pos[np], fl) == 2) key[np++] = fl[0] == 'K';
    char *nl = strchr(l, '\n');
    l = nl ? nl + 1 : NULL;
  }
  free(list);
  return np;
}

/* Writes size bytes of data to path without the bytes [a, b) (packets cut out). */
static void write_cut(const char *path, const uint8_t *data, size_t size, size_t a, size_t b) {
  uint8_t *cut = malloc(size);
  if (!cut) return;
  memcpy(cut, data, a);
  memcpy(cut + a, data + b, size - b);
  tv_write_file(path, cut, size - (b - a));
  free(cut);
}

static void lost_key_case(const char *tag, const char *x264, int interlaced) {
  if (!need_ts_h264("MPEG-TS without a keyframe")) return;
  int w = es_test_range(16, 40) * 2, h = es_test_range(12, 30) * 2, n = es_test_range(35, 60);
  if (interlaced) h = h / 4 * 4; /* 4:2:0 fields */
  char full[512], bad[512], opts[256];
  snprintf(full, sizeof full, "%s/key%s.ts", dir, tag);
  snprintf(bad, sizeof bad, "%s/nokey%s.ts", dir, tag);
  snprintf(opts, sizeof opts, "-c:v libx264 -g 10 -sc_threshold 0 -pix_fmt yuv420p %s", x264);
  if (make_clip(full, w, h, n, opts) != 0) {
    CHECK(0, "lost keyframe%s: could not make the clip", tag);
    return;
  }
  /* The byte positions of the packets (ffprobe: one PES each, from its first transport
   * packet on), keyframes marked. */
  long pos[256];
  int key[256];
  const int np = packet_positions(full, pos, key, 256);
  /* The second or third keyframe (a packet in the middle, with packets after it). */
  int k = -1, seen = 0, want = es_test_range(2, 3);
  for (int i = 1; i + 1 < np && k < 0; i++)
    if (key[i] && ++seen == want) k = i;
  size_t size = 0;
  uint8_t *data = tv_read_file(full, &size);
  if (k < 0 || !data || pos[k] % 188 || pos[k + 1] % 188 || (size_t)pos[k + 1] > size) {
    CHECK(0, "lost keyframe%s: no keyframe to cut (%d packets)", tag, np);
    free(data);
    return;
  }
  write_cut(bad, data, size, (size_t)pos[k], (size_t)pos[k + 1]);
  free(data);
  run good, r;
  decode(full, w, h, &good);
  decode(bad, w, h, &r);
  const int ff = ffprobe_count(bad, "frames"), pk = ffprobe_count(bad, "packets");
  printf("lost keyframe%s: %dx%d, %d frames, packet %d (a keyframe) cut: %d frames (ffmpeg %d, "
         "%d packets), %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64 " dropped\n",
         tag, w, h, n, k, r.n, ff, pk, r.corrupt, r.flagged, r.dropped);
  CHECK(good.n == n && good.corrupt + good.flagged + good.prekey + good.dropped == 0,
        "lost keyframe%s: intact %d frames, %" PRId64 " dropped", tag, good.n, good.dropped);
  CHECK(!interlaced || good.field_order >= 2, "lost keyframe%s: field order %d (not interlaced)",
        tag, good.field_order);
  check_read_to_end("lost keyframe", &r);
  CHECK(r.n == ff && r.n < n - 1 && pk == n - 1,
        "lost keyframe%s: %d frames (ffmpeg %d), %d packets", tag, r.n, ff, pk);
  CHECK(r.dropped > 0 && r.prekey == 0 && r.n + r.corrupt + r.dropped == pk,
        "lost keyframe%s: %d frames, %" PRId64 " corrupt, %" PRId64 " dropped of %d packets", tag,
        r.n, r.corrupt, r.dropped, pk);
  const size_t fs = (size_t)w * h;
  CHECK(r.n >= k - 3 && !memcmp(r.frames, good.frames, fs * (size_t)(k - 3)),
        "lost keyframe%s: the frames before it are not the intact file's", tag);
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
  /* each discarded packet excused once: an excuse too many would hide a drop elsewhere */
  CHECK(r.n + r.excused == pk, "trimmed .mp4: %d frames + %" PRId64 " excused of %d packets",
        r.n, r.excused, pk);
  free(r.frames);
}

/* An intact open-GOP stream cut with -c copy at a keyframe (ffmpeg -ss T -i in -c copy): an
 * HEVC CRA whose RASL pictures refer to pictures before the cut, an MPEG-2 GOP not closed
 * whose first B-pictures refer to the GOP before. The decoder skips those leading pictures
 * by design, with no error (ffmpeg gives the same frame count): nothing is counted, and the
 * frames are the intact file's last ones. With lost, the cut's second keyframe is then cut
 * out too (HEVC in MPEG-TS, where its packets start at transport packets): every packet but
 * the skipped leading ones is a frame delivered or counted. */
static void open_gop_case(const char *name, const char *encoder, const char *encode,
                          const char *muxer, int lost) {
  char test[96];
  snprintf(test, sizeof test, "test_video_damaged: %s", name);
  if (!tv_ffmpeg_need(test, "encoders", encoder, encoder) ||
      !tv_ffmpeg_need(test, "muxers", "mpegts", "mpegts muxer") ||
      !tv_ffmpeg_need(test, "muxers", muxer, muxer) || !tv_lavf_has_demuxer("mpegts")) {
    printf("test_video_damaged: %s skipped (no %s, mpegts or %s)\n", name, encoder, muxer);
    return;
  }
  int w = es_test_range(16, 40) * 2, h = es_test_range(16, 30) * 2, n = es_test_range(70, 100);
  const int from = es_test_range(8, 14); /* after the first keyframe, before the third */
  char full[512], cut[512], bad[512];
  snprintf(full, sizeof full, "%s/og-full.ts", dir);
  snprintf(cut, sizeof cut, "%s/og-cut.%s", dir, strcmp(muxer, "matroska") ? muxer : "mkv");
  snprintf(bad, sizeof bad, "%s/og-bad.ts", dir);
  if (make_clip(full, w, h, n, encode) != 0 ||
      tv_sh("ffmpeg -v error -y -ss %.2f -i '%s' -c copy -f %s '%s'", from / 25.0, full, muxer,
            cut) != 0) {
    CHECK(0, "%s: could not make the clips", name);
    return;
  }
  run good, c;
  decode(full, w, h, &good);
  decode(cut, w, h, &c);
  const int ff = ffprobe_count(cut, "frames"), pk = ffprobe_count(cut, "packets");
  printf("%s: %dx%d, %d frames, cut at frame %d: %d frames (ffmpeg %d, %d packets), %" PRId64
         " corrupt, %" PRId64 " before the first keyframe, %" PRId64 " dropped\n",
         name, w, h, n, from, c.n, ff, pk, c.corrupt, c.prekey, c.dropped);
  CHECK(good.n == n && good.corrupt + good.flagged + good.prekey + good.dropped == 0,
        "%s: intact %d frames", name, good.n);
  check_read_to_end(name, &c);
  /* The cut has leading pictures (pk > ff), or the case tests nothing. */
  CHECK(c.n == ff && c.n > 0 && c.n < n && pk > ff, "%s: %d frames (ffmpeg %d of %d packets)", name,
        c.n, ff, pk);
  CHECK(c.corrupt + c.flagged + c.prekey + c.dropped == 0,
        "%s: %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64 " before the first keyframe, "
        "%" PRId64 " dropped (the leading pictures skipped by design)",
        name, c.corrupt, c.flagged, c.prekey, c.dropped);
  CHECK(c.n + c.excused == pk, "%s: %d frames + %" PRId64 " excused of %d packets", name, c.n,
        c.excused, pk);
  const size_t fs = (size_t)w * h;
  CHECK(c.n > 0 && c.n <= good.n && !memcmp(c.frames, good.frames + fs * (good.n - c.n), fs * c.n),
        "%s: the frames are not the intact file's last %d", name, c.n);
  if (lost) {
    /* The cut's second keyframe packet out (ffprobe: its position, and the next packet's). */
    long pos[256];
    int key[256];
    const int np = packet_positions(cut, pos, key, 256);
    int k = -1;
    for (int i = 1; i + 1 < np && k < 0; i++)
      if (key[i]) k = i;
    size_t size = 0;
    uint8_t *data = tv_read_file(cut, &size);
    if (k < 0 || !data || pos[k] % 188 || pos[k + 1] % 188 || (size_t)pos[k + 1] > size) {
      CHECK(0, "%s: no second keyframe to cut (%d packets)", name, np);
      free(data);
    } else {
      write_cut(bad, data, size, (size_t)pos[k], (size_t)pos[k + 1]);
      free(data);
      run r;
      decode(bad, w, h, &r);
      const int bpk = ffprobe_count(bad, "packets"), lead = pk - ff;
      printf("%s, packet %d (a keyframe) cut: %d frames, %d packets, %" PRId64 " corrupt, %" PRId64
             " dropped\n",
             name, k, r.n, bpk, r.corrupt, r.dropped);
      check_read_to_end(name, &r);
      CHECK(bpk == pk - 1 && r.n + r.corrupt + r.prekey + r.dropped >= bpk - lead &&
                r.n + r.prekey + r.dropped <= bpk - lead,
            "%s, keyframe cut: %d packets (%d leading), %d frames, %" PRId64 " corrupt, %" PRId64
            " dropped: packets not accounted for",
            name, bpk, lead, r.n, r.corrupt, r.dropped);
      free(r.frames);
    }
  }
  free(good.frames);
  free(c.frames);
}

#ifdef ES_HAVE_FFMPEG
/* Writes the HEVC stream out (its container from its name): every packet of a, then those of
 * b from its second keyframe on (a CRA with RASL pictures, or an IDR), their time stamps
 * moved to follow a's. eos: where an end-of-sequence NAL goes: 0 nowhere, 1 after a's last
 * picture (its packet's end, where libavformat's parser puts it), 2 before b's first (its
 * packet's start); 3: nowhere, and b's first picture (an IDR) gets no_output_of_prior_pics_flag
 * (Annex B). lose: b's first packet (the keyframe) left out. a NULL: b's part alone. Returns
 * b's packets, -1 on failure. */
static int join_hevc(const char *a, const char *b, const char *out, int eos, int lose) {
  static const uint8_t nal[5] = {0, 0, 1, 36 << 1, 1};
  AVFormatContext *ic = NULL, *oc = NULL;
  AVPacket *p = av_packet_alloc(), *last = av_packet_alloc();
  int rc = -1, nb = 0, keys = 0;
  int64_t top = INT64_MIN, off = 0;
  if (!p || !last || avformat_alloc_output_context2(&oc, NULL, NULL, out) < 0) goto end;
  AVStream *os = avformat_new_stream(oc, NULL);
  for (int part = a ? 0 : 1; part < 2; part++) {
    if (avformat_open_input(&ic, part ? b : a, NULL, NULL) < 0 ||
        avformat_find_stream_info(ic, NULL) < 0 || ic->nb_streams != 1)
      goto end;
    AVStream *is = ic->streams[0];
    if (!oc->pb) {
      if (!os || avcodec_parameters_copy(os->codecpar, is->codecpar) < 0) goto end;
      os->time_base = is->time_base;
      if (avio_open(&oc->pb, out, AVIO_FLAG_WRITE) < 0 || avformat_write_header(oc, NULL) < 0)
        goto end;
    }
    int first = 1;
    while (av_read_frame(ic, p) >= 0) {
      av_packet_rescale_ts(p, is->time_base, os->time_base);
      p->stream_index = 0;
      if (part && (p->flags & AV_PKT_FLAG_KEY)) keys++;
      if (part && keys < 2) { /* before b's second keyframe */
        av_packet_unref(p);
        continue;
      }
      if (part && first && a) off = top - p->dts + 3600; /* a frame (90 kHz) after a's last */
      if (part) {
        p->pts += off;
        p->dts += off;
      }
      if (p->pts > top) top = p->pts;
      if (p->dts > top) top = p->dts;
      if (part && first && eos == 3) { /* the IDR slice's flag: the bit after the first */
        if (av_packet_make_writable(p) < 0) goto end;
        for (int i = 0; i + 5 < p->size; i++)
          if (!p->data[i] && !p->data[i + 1] && p->data[i + 2] == 1 &&
              ((p->data[i + 3] >> 1 & 0x3f) == 19 || (p->data[i + 3] >> 1 & 0x3f) == 20)) {
            p->data[i + 5] |= 0x40;
            break;
          }
      }
      if (part && first && eos == 2) { /* the NAL before the packet's own */
        AVPacket *q = av_packet_alloc();
        if (!q || av_new_packet(q, p->size + 5) < 0 || av_packet_copy_props(q, p) < 0) {
          av_packet_free(&q);
          goto end;
        }
        memcpy(q->data, nal, 5);
        memcpy(q->data + 5, p->data, p->size);
        av_packet_unref(p);
        av_packet_move_ref(p, q);
        av_packet_free(&q);
      }
      const int skip = part && first && lose;
      first = 0;
      if (part) nb++;
      if (skip) {
        av_packet_unref(p);
        continue;
      }
      if (!part) { /* written once the next is read: a's last gets the NAL */
        if (last->size && av_write_frame(oc, last) < 0) goto end;
        av_packet_unref(last);
        av_packet_move_ref(last, p);
        continue;
      }
      if (av_write_frame(oc, p) < 0) goto end;
      av_packet_unref(p);
    }
    if (!part) {
      if (eos == 1 && last->size) {
        const int n = last->size;
        if (av_grow_packet(last, 5) < 0) goto end;
        memcpy(last->data + n, nal, 5);
      }
      if (last->size && av_write_frame(oc, last) < 0) goto end;
      av_packet_unref(last);
    }
    avformat_close_input(&ic);
  }
  rc = av_write_trailer(oc) < 0 ? -1 : nb;
end:
  av_packet_free(&p);
  av_packet_free(&last);
  if (oc) avio_closep(&oc->pb);
  avformat_free_context(oc);
  avformat_close_input(&ic);
  return rc;
}
#endif

/* Two HEVC streams (x265, B-frames: pictures wait to be shown) joined in one MPEG-TS, the
 * second from a CRA on, with an end-of-sequence NAL between them: at that CRA the decoder
 * discards the first stream's pictures still waiting (no_output_of_prior_pics_flag, which
 * hevcdec sets for a CRA after an end of sequence) and skips its RASL pictures, by design
 * (ffmpeg gives the same frame count). Nothing is damaged: none counted. With the CRA lost,
 * nothing is discarded and nothing excused: every packet is a frame, or counted. */
static void hevc_eos_case(const char *x265) {
#if defined ES_HAVE_FFMPEG && LIBAVCODEC_VERSION_MAJOR >= 61
  (void)x265; /* frames carry no packet tag there: the pictures discarded are counted */
  printf("test_video_damaged: HEVC joined after an EOS skipped (libavcodec 61)\n");
#elif defined ES_HAVE_FFMPEG
  if (!tv_ffmpeg_need("test_video_damaged: HEVC joined after an EOS", "encoders", "libx265",
                      "libx265") ||
      !tv_lavf_has_muxer("mpegts") || !tv_lavf_has_demuxer("mpegts")) {
    printf("test_video_damaged: HEVC joined after an EOS skipped (no libx265 or mpegts)\n");
    return;
  }
  int w = es_test_range(16, 40) * 2, h = es_test_range(16, 30) * 2;
  const int na = es_test_range(12, 50), nbf = es_test_range(45, 70);
  char a[512], b[512], j[512], bo[512], opts[512];
  snprintf(a, sizeof a, "%s/eos-a.ts", dir);
  snprintf(b, sizeof b, "%s/eos-b.ts", dir);
  snprintf(opts, sizeof opts, "-vf negate %s", x265);
  if (make_clip(a, w, h, na, x265) != 0 || make_clip(b, w, h, nbf, opts) != 0) {
    CHECK(0, "HEVC joined after an EOS: could not make the clips");
    return;
  }
  /* b's part alone: its frames (its RASL skipped), the count a join without loss keeps */
  snprintf(bo, sizeof bo, "%s/eos-bo.ts", dir);
  const int nb = join_hevc(NULL, b, bo, 0, 0);
  const int ffb = ffprobe_count(bo, "frames");
  run rb;
  decode(bo, w, h, &rb);
  /* MPEG-TS (Annex B: start codes), Matroska (hvcC: the muxer makes each NAL
   * length-prefixed, the end of sequence too) and a raw .hevc stream (no time stamps) */
  static const char *const exts[3] = {"ts", "mkv", "hevc"}, *const muxers[3] = {
                                                               "mpegts", "matroska", "hevc"};
  for (int c = 0; c < 3; c++) {
    const char *ext = exts[c];
    if (!tv_lavf_has_muxer(muxers[c]) || !tv_lavf_has_demuxer(muxers[c])) continue;
    for (int eos = 1; eos <= 2; eos++) {
      for (int lose = 0; lose <= (eos == 1); lose++) {
        snprintf(j, sizeof j, "%s/eos-j%d%d.%s", dir, eos, lose, ext);
        if (nb <= 0 || join_hevc(a, b, j, eos, lose) != nb) {
          CHECK(0, "HEVC joined after an EOS: could not join the clips");
          free(rb.frames);
          return;
        }
        run r;
        decode(j, w, h, &r);
        const int ff = ffprobe_count(j, "frames"), pk = ffprobe_count(j, "packets");
        printf("HEVC joined after an EOS (.%s, %s%s): %dx%d, %d + %d packets (%d frames alone): %d "
               "frames (ffmpeg %d, %d packets), %" PRId64 " corrupt, %" PRId64 " dropped\n",
               ext, eos == 1 ? "at the end of the first" : "at the start of the second",
               lose ? ", the CRA lost" : "", w, h, na, nb, ffb, r.n, ff, pk, r.corrupt, r.dropped);
        check_read_to_end("HEVC joined after an EOS", &r);
        /* with the CRA lost, a frame decoded without its references is skipped and counted */
        CHECK((lose ? r.n + r.corrupt : r.n) == ff && pk == na + nb - lose,
              "HEVC joined after an EOS: %d frames, %" PRId64 " corrupt (ffmpeg %d)", r.n,
              r.corrupt, ff);
        if (!lose) {
          /* pictures of the first were discarded (ff < na + ffb), or the case tests nothing */
          CHECK(ff < na + ffb && r.corrupt + r.flagged + r.prekey + r.dropped == 0,
                "HEVC joined after an EOS: %d frames of %d + %d, %" PRId64 " corrupt, %" PRId64
                " flagged, %" PRId64 " before the first keyframe, %" PRId64
                " dropped (discarded by design)",
                ff, na, ffb, r.corrupt, r.flagged, r.prekey, r.dropped);
          /* every packet a frame or excused, none twice (dropped is never below 0: an excuse
           * too many would hide a drop elsewhere) */
          CHECK(r.n + r.excused == pk,
                "HEVC joined after an EOS: %d frames + %" PRId64 " excused of %d packets", r.n,
                r.excused, pk);
          const size_t fs = (size_t)w * h;
          CHECK(rb.n == ffb && r.n >= ffb &&
                    !memcmp(r.frames + fs * (size_t)(r.n - ffb), rb.frames, fs * (size_t)ffb),
                "HEVC joined after an EOS: the last frames are not the second part's %d", ffb);
        } else {
          /* the first's waiting pictures are shown, nothing more is excused than the second's
           * RASL pictures (nb - ffb), which the decoder skips after the end of sequence: the
           * rest is a frame or counted (its skipped RASL pictures, here, as dropped) */
          CHECK(r.prekey == 0 && r.dropped > 0 && r.n + r.corrupt + r.dropped + (nb - ffb) >= pk,
                "HEVC joined after an EOS, CRA lost: %d frames, %" PRId64 " corrupt, %" PRId64
                " dropped of %d packets",
                r.n, r.corrupt, r.dropped, pk);
        }
        free(r.frames);
      }
    }
  }
  free(rb.frames);
  /* No end of sequence: the second part closed-GOP, its first IDR with
   * no_output_of_prior_pics_flag set, which makes the decoder discard the same way. */
  char closed[512], b2[512];
  const char *og = strstr(x265, "open-gop=1");
  if (!og) return;
  snprintf(closed, sizeof closed, "-vf negate %.*sopen-gop=0%s", (int)(og - x265), x265,
           og + strlen("open-gop=1"));
  snprintf(b2, sizeof b2, "%s/eos-b2.ts", dir);
  snprintf(bo, sizeof bo, "%s/eos-b2o.ts", dir);
  snprintf(j, sizeof j, "%s/eos-j3.ts", dir);
  int nb2 = -1;
  if (make_clip(b2, w, h, nbf, closed) != 0 || (nb2 = join_hevc(NULL, b2, bo, 0, 0)) <= 0 ||
      join_hevc(a, b2, j, 3, 0) != nb2) {
    CHECK(0, "HEVC joined at an IDR with no_output_of_prior_pics_flag: could not make it");
    return;
  }
  const int ffb2 = ffprobe_count(bo, "frames"), ff = ffprobe_count(j, "frames"),
            pk = ffprobe_count(j, "packets");
  run r;
  decode(j, w, h, &r);
  printf("HEVC joined at an IDR with no_output_of_prior_pics_flag: %d + %d packets (%d frames "
         "alone): %d frames (ffmpeg %d), %" PRId64 " corrupt, %" PRId64 " dropped\n",
         na, nb2, ffb2, r.n, ff, r.corrupt, r.dropped);
  check_read_to_end("HEVC joined at an IDR with no_output_of_prior_pics_flag", &r);
  CHECK(r.n == ff && ff < na + ffb2 && r.corrupt + r.flagged + r.prekey + r.dropped == 0 &&
            r.n + r.excused == pk,
        "HEVC joined at an IDR with no_output_of_prior_pics_flag: %d frames (ffmpeg %d) of %d + "
        "%d, %" PRId64 " corrupt, %" PRId64 " dropped, %" PRId64 " excused of %d packets",
        r.n, ff, na, ffb2, r.corrupt, r.dropped, r.excused, pk);
  free(r.frames);
#else
  (void)x265;
#endif
}

/* A bit writer for paff_write: n bits written into b. */
typedef struct bitw {
  uint8_t b[2048];
  int n;
} bitw;

static void put_bits(bitw *w, unsigned v, int k) {
  for (int i = k - 1; i >= 0; i--, w->n++)
    if (v >> i & 1) w->b[w->n >> 3] |= (uint8_t)(0x80 >> (w->n & 7));
}

static void put_ue(bitw *w, unsigned v) { /* Exp-Golomb */
  int k = 0;
  while ((v + 1) >> (k + 1))
    k++;
  put_bits(w, 0, k);
  put_bits(w, v + 1, k + 1);
}

/* w as an Annex B NAL unit of header byte hdr (trailing bits, emulation prevention); w is
 * cleared for the next. */
static void put_nal(FILE *f, int hdr, bitw *w) {
  put_bits(w, 1, 1);
  while (w->n & 7)
    put_bits(w, 0, 1);
  fwrite("\0\0\0\1", 1, 4, f);
  fputc(hdr, f);
  int zeros = 0;
  for (int i = 0; i < w->n / 8; i++) {
    if (zeros >= 2 && w->b[i] <= 3) {
      fputc(3, f);
      zeros = 0;
    }
    fputc(w->b[i], f);
    zeros = w->b[i] ? 0 : zeros + 1;
  }
  memset(w, 0, sizeof *w);
}

/* Field-coded (PAFF) H.264, which libx264 cannot make: n frames of (16 wmb) x (32 hmap), each
 * two field pictures (top, then bottom), a GOP of g frames: an IDR top field and an I bottom
 * field, then P fields of skipped macroblocks (Main profile, CAVLC; every macroblock of the I
 * fields I_16x16 DC-predicted without residual: a grey picture). POC type 0, so that the
 * frames after a lost IDR come out of order, as x264's do. 0 on success. */
static int paff_write(const char *path, int wmb, int hmap, int n, int g) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  static bitw w;
  memset(&w, 0, sizeof w);
  put_bits(&w, 77, 8); /* profile_idc: Main */
  put_bits(&w, 0, 8);
  put_bits(&w, 30, 8); /* level_idc */
  put_ue(&w, 0);       /* seq_parameter_set_id */
  put_ue(&w, 0);       /* log2_max_frame_num_minus4: frame_num in 4 bits */
  put_ue(&w, 0);       /* pic_order_cnt_type */
  put_ue(&w, 4);       /* log2_max_pic_order_cnt_lsb_minus4: 8 bits */
  put_ue(&w, 1);       /* max_num_ref_frames */
  put_bits(&w, 0, 1);  /* gaps_in_frame_num_value_allowed_flag */
  put_ue(&w, (unsigned)wmb - 1);
  put_ue(&w, (unsigned)hmap - 1); /* pic_height_in_map_units_minus1 (field rows) */
  put_bits(&w, 0, 1);             /* frame_mbs_only_flag: fields */
  put_bits(&w, 0, 1);             /* mb_adaptive_frame_field_flag: no MBAFF */
  put_bits(&w, 1, 1);             /* direct_8x8_inference_flag */
  put_bits(&w, 0, 2);             /* frame_cropping_flag, vui_parameters_present_flag */
  put_nal(f, 0x67, &w);
  put_ue(&w, 0);      /* pic_parameter_set_id */
  put_ue(&w, 0);      /* seq_parameter_set_id */
  put_bits(&w, 0, 2); /* CAVLC, bottom_field_pic_order_in_frame_present_flag */
  put_ue(&w, 0);      /* num_slice_groups_minus1 */
  put_ue(&w, 0);      /* num_ref_idx_l0_default_active_minus1 */
  put_ue(&w, 0);      /* num_ref_idx_l1_default_active_minus1 */
  put_bits(&w, 0, 3); /* weighted_pred_flag, weighted_bipred_idc */
  put_ue(&w, 0);      /* pic_init_qp_minus26 (se 0) */
  put_ue(&w, 0);      /* pic_init_qs_minus26 */
  put_ue(&w, 0);      /* chroma_qp_index_offset */
  put_bits(&w, 0, 3); /* deblocking control, constrained intra, redundant_pic_cnt */
  put_nal(f, 0x68, &w);
  for (int i = 0; i < n; i++) {
    const int k = i % g, intra = k == 0;
    for (int bottom = 0; bottom < 2; bottom++) {
      const int idr = intra && !bottom;
      put_ue(&w, 0);                /* first_mb_in_slice */
      put_ue(&w, intra ? 7 : 5);    /* slice_type: all I, all P */
      put_ue(&w, 0);                /* pic_parameter_set_id */
      put_bits(&w, (unsigned)k, 4); /* frame_num */
      put_bits(&w, 1, 1);           /* field_pic_flag */
      put_bits(&w, (unsigned)bottom, 1);
      if (idr) put_ue(&w, (unsigned)(i / g) & 1);  /* idr_pic_id */
      put_bits(&w, (unsigned)(2 * k + bottom), 8); /* pic_order_cnt_lsb */
      if (!intra) put_bits(&w, 0, 2); /* num_ref_idx_active_override, list modification */
      put_bits(&w, 0, idr ? 2 : 1);   /* dec_ref_pic_marking: defaults */
      put_ue(&w, 0);                  /* slice_qp_delta */
      if (!intra) {
        put_ue(&w, (unsigned)(wmb * hmap)); /* mb_skip_run: all */
      } else {
        for (int m = 0; m < wmb * hmap; m++) {
          put_ue(&w, 3);      /* mb_type I_16x16_2_0_0: DC, no coded blocks */
          put_ue(&w, 0);      /* intra_chroma_pred_mode: DC */
          put_ue(&w, 0);      /* mb_qp_delta */
          put_bits(&w, 1, 1); /* luma DC coeff_token: no coefficients */
        }
      }
      put_nal(f, idr ? 0x65 : 0x61, &w);
    }
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* Field-coded H.264 (PAFF) in MPEG-TS, a packet a field, two a frame: the intact file gives
 * every frame and counts nothing; with a middle IDR field pair cut out (the frames after it
 * come out of order and are discarded, as in lost_key_case), or one P field, every packet is
 * half of a frame delivered or counted as dropped. */
static void paff_case(void) {
  if (!tv_ffmpeg_need("test_video_damaged: PAFF", "muxers", "mpegts", "mpegts muxer") ||
      !tv_lavf_has_demuxer("mpegts") || !tv_lavf_has_demuxer("h264")) {
    printf("test_video_damaged: PAFF skipped (no mpegts or h264 demuxer)\n");
    return;
  }
  const int wmb = es_test_range(2, 8), hmap = es_test_range(1, 4), g = es_test_range(6, 10);
  const int n = 4 * g + es_test_range(0, g - 1), w = 16 * wmb, h = 32 * hmap;
  char es[512], full[512], bad[512];
  snprintf(es, sizeof es, "%s/paff.264", dir);
  snprintf(full, sizeof full, "%s/paff.ts", dir);
  if (paff_write(es, wmb, hmap, n, g) != 0 ||
      tv_sh("ffmpeg -v error -y -framerate 25 -i '%s' -c copy '%s'", es, full) != 0) {
    CHECK(0, "PAFF: could not make the clip");
    return;
  }
  run good;
  decode(full, w, h, &good);
  const int pk_full = ffprobe_count(full, "packets");
  printf("PAFF: %dx%d, %d frames, GOP %d: %d frames of %d packets, %" PRId64 " dropped\n", w, h, n,
         g, good.n, pk_full, good.dropped);
  check_read_to_end("PAFF", &good);
  CHECK(good.n == n && pk_full == 2 * n && good.field_order >= 2 &&
            good.corrupt + good.flagged + good.prekey + good.dropped == 0,
        "PAFF intact: %d frames of %d packets, field order %d, %" PRId64 " corrupt, %" PRId64
        " flagged, %" PRId64 " before the first keyframe, %" PRId64 " dropped",
        good.n, pk_full, good.field_order, good.corrupt, good.flagged, good.prekey, good.dropped);
  long pos[512];
  int key[512];
  const int np = packet_positions(full, pos, key, 512);
  size_t size = 0;
  uint8_t *data = tv_read_file(full, &size);
  if (np != 2 * n || !data) {
    CHECK(0, "PAFF: %d packets listed", np);
    free(data);
    free(good.frames);
    return;
  }
  for (int pair = 1; pair >= 0; pair--) {
    /* A pair: the second or third IDR frame's two fields; else a P field of the third GOP. */
    const int from = pair ? 2 * g * es_test_range(1, 2)
                          : 2 * (2 * g + es_test_range(1, g - 2)) + es_test_range(0, 1);
    const int to = from + (pair ? 2 : 1);
    CHECK(pos[from] % 188 == 0 && pos[to] % 188 == 0, "PAFF: packet %d not at a TS packet", from);
    snprintf(bad, sizeof bad, "%s/paff-cut%d.ts", dir, pair);
    write_cut(bad, data, size, (size_t)pos[from], (size_t)pos[to]);
    run r;
    decode(bad, w, h, &r);
    const int ff = ffprobe_count(bad, "frames"), pk = ffprobe_count(bad, "packets");
    printf("PAFF: packets %d..%d cut: %d frames (ffmpeg %d, %d packets), %" PRId64
           " corrupt, %" PRId64 " dropped\n",
           from, to - 1, r.n, ff, pk, r.corrupt, r.dropped);
    check_read_to_end("PAFF cut", &r);
    CHECK(r.n == ff && r.n < n && pk == 2 * n - (to - from), "PAFF cut %d: %d frames (ffmpeg %d)",
          from, r.n, ff);
    CHECK(r.dropped > 0 && r.prekey == 0 && 2 * r.n + r.corrupt + r.dropped == pk,
          "PAFF cut %d: %d frames, %" PRId64 " corrupt, %" PRId64 " dropped of %d packets", from,
          r.n, r.corrupt, r.dropped, pk);
    free(r.frames);
  }
  free(data);
  free(good.frames);
}

/* Interlaced MPEG-2 (frame pictures, interlaced DCT and motion) and field-coded HEVC (x265:
 * a picture a field, each given as a frame of its own) in MPEG-TS, intact: every frame, a
 * packet each, nothing counted as dropped. */
static void interlaced_intact_case(const char *name, const char *enc, const char *opts) {
  char test[96], path[512], o[256];
  snprintf(test, sizeof test, "test_video_damaged: %s", name);
  if (!tv_ffmpeg_need(test, "encoders", enc, enc) || !tv_lavf_has_demuxer("mpegts")) return;
  int w = es_test_range(16, 40) * 2, h = es_test_range(6, 15) * 4, n = es_test_range(20, 40);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(o, sizeof o, "%s -g 10 -pix_fmt yuv420p", opts);
  if (make_clip(path, w, h, n, o) != 0) {
    CHECK(0, "%s: could not make the clip", name);
    return;
  }
  run r;
  decode(path, w, h, &r);
  const int pk = ffprobe_count(path, "packets");
  printf("%s: %dx%d, %d frames: %d frames of %d packets, field order %d, %" PRId64 " dropped\n",
         name, w, h, n, r.n, pk, r.field_order, r.dropped);
  check_read_to_end(name, &r);
  CHECK(r.n == n && pk == n && r.corrupt + r.flagged + r.prekey + r.dropped == 0,
        "%s: %d frames of %d packets, %" PRId64 " corrupt, %" PRId64 " flagged, %" PRId64
        " before the first keyframe, %" PRId64 " dropped",
        name, r.n, pk, r.corrupt, r.flagged, r.prekey, r.dropped);
  free(r.frames);
}

/* Frames decoded with errors are kept (issue 27): an H.264 .mp4 whose middle is overwritten
 * by random bytes from a fixed seed (this damage, at this size, gives frames the decoder
 * conceals and flags, and packets it refuses). The reader must deliver exactly the frames
 * ffmpeg decodes (`ffmpeg -i bad.mp4 -f null -`: it keeps concealed frames), mark those
 * with decode errors (es_video_in_frame_damaged, one count each in es_video_in_damaged) and
 * count the refused packets apart (es_video_in_corrupt). It once skipped the damaged
 * frames: 75 frames where ffmpeg decodes 77. */
static void kept_damaged_case(void) {
  if (!tv_ffmpeg_need("test_video_damaged: kept damaged frames", "encoders", "libx264",
                      "libx264 encoder") ||
      !tv_lavf_has_muxer("mp4")) {
    printf("test_video_damaged: kept damaged frames skipped (no libx264 or mp4)\n");
    return;
  }
  const int w = 320, h = 240, n = 100;
  char clip[512], bad[512];
  snprintf(clip, sizeof clip, "%s/kept.mp4", dir);
  snprintf(bad, sizeof bad, "%s/kept-bad.mp4", dir);
  /* one thread, bitexact: the same bytes every run (x264's threads made them differ) */
  if (make_clip(clip, w, h, n,
                "-c:v libx264 -threads 1 -g 25 -pix_fmt yuv420p -fflags +bitexact "
                "-flags:v +bitexact") != 0) {
    CHECK(0, "kept damaged frames: could not make the clip");
    return;
  }
  size_t size = 0;
  uint8_t *data = tv_read_file(clip, &size);
  if (!data) {
    CHECK(0, "kept damaged frames: unreadable clip");
    return;
  }
  /* 45%..53% of the file, xorshift64* from a fixed seed (not the test's: the same damage
   * every run, so that it always holds frames the decoder flags) */
  uint64_t x = 27;
  for (size_t i = size * 45 / 100; i < size * 53 / 100; i++) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    data[i] = (uint8_t)((x * 0x2545F4914F6CDD1DULL) >> 56);
  }
  tv_write_file(bad, data, size);
  free(data);
  char *out = tv_capture("ffmpeg -nostdin -v quiet -i '%s' -map 0:v:0 -f null - -progress pipe:1 "
                         "| sed -n 's/^frame=//p' | tail -n 1",
                         bad);
  int ff = out ? atoi(out) : -1;
  free(out);
  run r;
  decode(bad, w, h, &r);
  printf("kept damaged frames: ffmpeg %d frames; reader %d frames, %" PRId64
         " decoded with errors (%d marked), %" PRId64 " corrupt packets skipped, %" PRId64
         " dropped by the decoder\n",
         ff, r.n, r.damaged, r.marked, r.corrupt, r.dropped);
  check_read_to_end("kept damaged frames", &r);
  CHECK(ff > 0 && r.n == ff, "kept damaged frames: %d frames, ffmpeg decodes %d", r.n, ff);
  CHECK(r.damaged > 0 && r.marked == r.damaged,
        "kept damaged frames: %" PRId64 " counted as decoded with errors, %d marked", r.damaged,
        r.marked);
  CHECK(r.corrupt > 0, "kept damaged frames: no refused packet counted");
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
  kept_damaged_case();
  empty_packets_case();
  joined_ts_case();
  prekey_case();
  lost_key_case("", "", 0);
  lost_key_case("-mbaff", "-flags +ildct+ilme -x264-params tff=1", 1);
  lost_key_case("-pic-struct",
                "-flags +ildct+ilme -x264-params tff=1:fake-interlaced=1:pic-struct=1", 1);
  paff_case();
  interlaced_intact_case("m2i.ts", "mpeg2video", "-c:v mpeg2video -flags +ilme+ildct -top 1 -bf 2");
  /* cutree=0 in every x265 clip here: x265 3.5's lookahead (cuTree) writes past a 12-byte
   * block at these small sizes (valgrind: "Invalid write of size 8" in Lookahead::cuTree at
   * 32x24..80x60 interlaced, 32x32 and 46x52 progressive), which glibc caught once as
   * "free(): invalid next size" and killed ffmpeg; with cutree=0 valgrind finds no write. */
  interlaced_intact_case("hevci.ts", "libx265",
                         "-c:v libx265 -x265-params interlace=tff:cutree=0:log-level=error");
  trimmed_mp4_case();
  /* Open GOPs: x265's CRA keyframes with RASL pictures (Annex B in MPEG-TS, hvcC's
   * length-prefixed NALs in Matroska; fixed B-frames, so that every CRA has some; one thread
   * and 32 rows or more, as x265 3.5 aborts on 48x64 with its thread pool and on 42x28
   * without), MPEG-2 GOPs not closed (-flags -cgop). */
  const char *x265 = "-c:v libx265 -pix_fmt yuv420p -x265-params "
                     "keyint=20:min-keyint=20:scenecut=0:open-gop=1:bframes=3:b-adapt=0:cutree=0:"
                     "pools=none:frame-threads=1:log-level=error";
  open_gop_case("open-GOP HEVC cut, MPEG-TS", "libx265", x265, "mpegts", 1);
  open_gop_case("open-GOP HEVC cut, Matroska", "libx265", x265, "matroska", 0);
  hevc_eos_case(x265);
  open_gop_case("open-GOP MPEG-2 cut, MPEG-TS", "mpeg2video",
                "-c:v mpeg2video -g 12 -bf 2 -flags -cgop -pix_fmt yuv420p", "mpegts", 0);
  /* the same interlaced (frame pictures): the field accounting and the leading pictures
   * together (each excused once) */
  open_gop_case("open-GOP interlaced MPEG-2 cut, MPEG-TS", "mpeg2video",
                "-c:v mpeg2video -g 12 -bf 2 -flags -cgop+ilme+ildct -top 1 -pix_fmt yuv420p",
                "mpegts", 0);
  tv_sh("rm -rf '%s'", dir);
  return es_test_done("test_video_damaged");
}
