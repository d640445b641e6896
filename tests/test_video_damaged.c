/*
 * test_video_damaged.c - damaged video is decoded as far as it can be: garbage written over
 * the middle of a .nut/.mkv, or bytes cut out of the middle of an .mp4. The reader must not
 * fail, must count the packets/frames it skipped (es_video_in_corrupt), and must deliver
 * the frames around the damage - those before it exactly as from the intact file.
 */
#include <inttypes.h>

#include "es_io.h"
#include "es_test_video.h"

static char dir[256];

typedef struct run {
  int rc_open, rc_end, n;
  int64_t corrupt;
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
  free(buf);
  es_video_in_close(&v);
}

/* cut: remove bytes instead of overwriting them. counted: visible damage must show in the
 * corrupt count (codecs with checksums, containers that resynchronise, and H.264, whose
 * concealment FFmpeg 5.1 only logs: the reader counts decoder and demuxer errors it logs). */
static void damage_case(const char *name, const char *encode, int n, int cut, int counted) {
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
  if (tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=25 -frames:v %d "
            "-vf scale=%d:%d %s '%s'",
            (w + 1) & ~1, (h + 1) & ~1, n, w, h, encode, clip) != 0) {
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
  CHECK(good.rc_open == ES_OK && good.rc_end == ES_ERR_EOF && good.n == n && good.corrupt == 0,
        "%s intact: %d %d %d frames %" PRId64 " corrupt %s", name, good.rc_open, good.rc_end,
        good.n, good.corrupt, good.msg);
  decode(bad, w, h, &dmg);
  printf("%s damaged: %d frames, %" PRId64 " corrupt, end %d %s\n", name, dmg.n, dmg.corrupt,
         dmg.rc_end, dmg.msg);
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
  printf("%s damaged: %d leading frames intact, damage %s\n", name, same,
         visible ? "visible" : "not visible in the grey planes");
  CHECK(!counted || !visible || dmg.corrupt > 0, "%s damaged: nothing counted as corrupt",
        name);
  CHECK(same >= n / 5, "%s damaged: only %d leading frames equal the intact ones", name, same);
  free(good.frames);
  free(dmg.frames);
}

int main(void) {
  es_test_seed("test_video_damaged");
  if (!tv_need_ffmpeg("test_video_damaged")) return ES_TEST_SKIP;
  snprintf(dir, sizeof dir, "%s/es-video-dmg-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return 1;
  /* Intra-only codecs with checksums (ffv1 v3 slice CRCs) or without (mjpeg), in
   * containers that resynchronise (nut syncpoints, Matroska clusters). */
  damage_case("a.nut", "-c:v ffv1 -level 3 -slicecrc 1 -g 1 -pix_fmt yuv420p", 40, 0, 1);
  damage_case("b.mkv", "-c:v ffv1 -level 3 -slicecrc 1 -g 1 -pix_fmt yuv420p", 40, 0, 1);
  damage_case("c.mkv", "-c:v libx264 -g 10 -pix_fmt yuv444p", 50, 0, 1);
  damage_case("d.mp4", "-c:v mpeg4 -g 8 -pix_fmt yuv420p -movflags +faststart", 50, 1, 1);
  tv_sh("rm -rf '%s'", dir);
  return es_test_done("test_video_damaged");
}
