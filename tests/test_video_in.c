/*
 * test_video_in.c - es_video_in_* against the ffmpeg program: clips of random odd sizes made
 * from lavfi sources in several containers and codecs; frame count, size, depth, frame rate,
 * the grey plane (checked against ffmpeg's own extraction of the Y plane) and pts (against
 * ffprobe's best_effort_timestamp); y4m and raw gray8/gray16le through a real pipe on stdin,
 * including a short last frame; bad --raw specs, --max-pixels, a missing file.
 * With a minimal FFmpeg (no extractplanes filter, no y4m muxer/demuxer, no mjpeg encoder)
 * the reference Y plane is cut from ffmpeg's raw 4:4:4 output instead, and the cases that
 * need what is missing skip with a note; everything else runs.
 */
#include <inttypes.h>
#include <math.h>
#include <sys/resource.h>

#include "es_io.h"
#include "es_test_video.h"

static char dir[256];
static int have_extractplanes; /* the ffmpeg program has the extractplanes filter */

/* The reference Y plane of a clip, as stored (no range conversion), into ref. kind:
 * "y:FMT" - Y of a YUV source; FMT is the 4:4:4 format of the same depth and range
 * (yuv444p, yuvj444p, yuv444p10le); "gray" for a grey source; otherwise ffmpeg output
 * options giving the reference directly (e.g. luma of RGB: "-pix_fmt gray"). With the
 * extractplanes filter: ffmpeg's extractplanes=y. Without it: ffmpeg converts to FMT
 * (which copies Y unchanged: checked against extractplanes on every clip here) and the
 * first plane of each frame is kept. */
static int make_ref(const char *clip, const char *kind, int w, int h, const char *ref) {
  if (strncmp(kind, "y:", 2) != 0)
    return tv_sh("ffmpeg -v error -y -i '%s' %s -f rawvideo '%s'", clip, kind, ref);
  const char *fmt = kind + 2;
  int wide = strstr(fmt, "10le") != NULL;
  if (have_extractplanes)
    return tv_sh("ffmpeg -v error -y -i '%s' -vf extractplanes=y -pix_fmt %s -f rawvideo '%s'",
                 clip, wide ? "gray10le" : "gray", ref);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.444", ref);
  int rc = tv_sh("ffmpeg -v error -y -i '%s' -pix_fmt %s -f rawvideo '%s'", clip, fmt, tmp);
  if (rc) return rc;
  size_t size = 0, plane = (size_t)w * h * (wide ? 2 : 1);
  uint8_t *d = tv_read_file(tmp, &size);
  unlink(tmp);
  if (!d || size % (3 * plane)) {
    free(d);
    return 1;
  }
  size_t n = size / (3 * plane);
  for (size_t i = 1; i < n; i++) memmove(d + i * plane, d + 3 * i * plane, plane);
  rc = tv_write_file(ref, d, n * plane) ? 1 : 0;
  free(d);
  return rc;
}

/* Decodes every frame of path (opts as given); returns the frames concatenated (tight rows,
 * 1 or 2 bytes a sample), their count, pts, and the final status and message. */
typedef struct decoded {
  es_video_info info;
  uint8_t *data;
  int n;
  int64_t pts[512];
  double secs[512];
  int open_rc, end_rc;
  int64_t corrupt;
  int lent;            /* frames lent (g_lend) */
  int asked;           /* g_ask: frames that needed a buffer (ES_ERR_AGAIN without one) */
  char msg[256];
} decoded;

/* Lending (es_video_in_read_lend): decode_all holds up to HOLD lent frames at once and
 * copies each one out only when it gives it back, so a decoder that reused a lent buffer
 * shows; the last one is given back after es_video_in_close. The pin hook page-locks
 * nothing: it accepts every other call, to exercise a retry on the buffer's next frame. */
static int g_lend;
/* g_ask: each frame is asked for without a buffer first (lending), as the CLI asks, and
 * read into one only where the reader says ES_ERR_AGAIN (it exists, and is held); asking
 * again without one must say the same. The frames, time stamps and end must not change. */
static int g_ask;
static int pin_calls, pin_ok, unpin_calls;
/* g_refuse: the pin hook refuses every buffer for good (negative), as the run's does where
 * page-locking fails: each pool buffer must then be asked once, not on every frame it holds
 * (a cudaHostRegister a frame). pin_seen: the buffers asked; pin_repeats: asks again. */
static int g_refuse, pin_nseen, pin_repeats;
static void *pin_seen[512];
static int fake_pin(void *p, size_t bytes) {
  CHECK(p && bytes && ((uintptr_t)p & 4095) == 0 && bytes % 4096 == 0, "pin %p %zu", p, bytes);
  if (g_refuse) {
    int seen = 0;
    for (int i = 0; i < pin_nseen; i++) seen |= pin_seen[i] == p;
    if (seen) pin_repeats++;
    else if (pin_nseen < 512) pin_seen[pin_nseen++] = p;
    pin_calls++;
    return -1;
  }
  return ++pin_calls % 2;
}
static void fake_unpin(void *p) {
  CHECK(p != NULL, "unpin NULL");
  unpin_calls++;
}
#define HOLD 6
typedef struct held {
  es_video_lent l;
  int idx;
} held;
/* Frame idx's rows (row bytes each, stride apart at src) into d->data, frame bytes a frame. */
static void store_frame(decoded *d, int idx, const void *src, size_t stride, size_t frame,
                        size_t row) {
  for (int y = 0; y < d->info.height; y++)
    memcpy(d->data + frame * (size_t)idx + (size_t)y * row, (const uint8_t *)src + y * stride,
           row);
}

static void give_back(decoded *d, held *h, size_t frame, size_t row) {
  store_frame(d, h->idx, h->l.data, h->l.stride, frame, row);
  es_video_in_unlend(h->l.ref);
  h->l.ref = NULL;
}

static void decode_all(const char *path, const char *raw, int64_t max_pixels, int threads,
                       decoded *d) {
  memset(d, 0, sizeof *d);
  const int lend = g_lend || g_ask;
  es_video_in_opts o = {.raw = raw, .max_pixels = max_pixels, .threads = threads,
                       .lend = lend, .pin = fake_pin, .unpin = fake_unpin};
  held hold[HOLD];
  int nheld = 0;
  es_video_in *v = NULL;
  memset(&d->info, 0x5a, sizeof d->info); /* poison: open must fill it */
  d->open_rc = es_video_in_open(&v, path, &o, &d->info, d->msg, sizeof d->msg);
  if (d->open_rc < 0) {
    CHECK(v == NULL, "failed open left a handle");
    return;
  }
  size_t bps = d->info.depth == 16 ? 2 : 1;
  size_t frame = (size_t)d->info.width * d->info.height * bps;
  size_t stride = (size_t)d->info.width * bps + (getenv("TV_PAD") ? atoi(getenv("TV_PAD")) : 13); /* a padded destination */
  /* g_ask: made once the reader says a frame exists, as the CLI makes its buffers */
  uint8_t *buf = g_ask ? NULL : malloc(stride * d->info.height);
  for (;;) {
    if (buf) memset(buf, 0xa5, stride * d->info.height);
    int64_t pts = -777;
    double secs = -777;
    es_video_lent lent;
    int rc;
    if (g_ask) {
      rc = es_video_in_read_lend(v, NULL, 0, &lent, &pts, &secs, d->msg, sizeof d->msg);
      if (rc == ES_ERR_AGAIN) {
        CHECK(!lent.ref, "ES_ERR_AGAIN, and a frame lent");
        rc = es_video_in_read_lend(v, NULL, 0, &lent, &pts, &secs, d->msg, sizeof d->msg);
        CHECK(rc == ES_ERR_AGAIN, "frame %d: asked again without a buffer: %d %s", d->n, rc,
              d->msg);
        if (!buf && (buf = malloc(stride * d->info.height)))
          memset(buf, 0xa5, stride * d->info.height);
        rc = es_video_in_read_lend(v, buf, stride, &lent, &pts, &secs, d->msg, sizeof d->msg);
        CHECK(rc != ES_ERR_AGAIN, "frame %d: ES_ERR_AGAIN with a buffer", d->n);
        d->asked += rc == ES_OK; /* from a pipe, the end may come after ES_ERR_AGAIN */
      }
    } else if (g_lend) {
      rc = es_video_in_read_lend(v, buf, stride, &lent, &pts, &secs, d->msg, sizeof d->msg);
    } else {
      rc = es_video_in_read(v, buf, stride, &pts, &secs, d->msg, sizeof d->msg);
    }
    if (rc < 0) {
      CHECK(!(g_lend || g_ask) || !lent.ref, "a failed read lent a frame");
      d->end_rc = rc;
      break;
    }
    if (d->n >= 512) break;
    uint8_t *nd = realloc(d->data, frame * (d->n + 1));
    if (!nd) break;
    d->data = nd;
    if ((g_lend || g_ask) && lent.ref) {
      CHECK(lent.data && lent.stride >= (size_t)d->info.width * bps, "lent stride %zu",
            lent.stride);
      if (nheld == HOLD) { /* the oldest goes back */
        give_back(d, &hold[0], frame, (size_t)d->info.width * bps);
        memmove(hold, hold + 1, sizeof *hold * (HOLD - 1));
        nheld--;
      }
      hold[nheld].l = lent;
      hold[nheld++].idx = d->n;
      d->lent++;
    } else {
      store_frame(d, d->n, buf, stride, frame, (size_t)d->info.width * bps);
    }
    d->pts[d->n] = pts;
    d->secs[d->n] = secs;
    d->n++;
  }
  /* EOF is sticky */
  if (d->end_rc == ES_ERR_EOF && buf)
    CHECK(es_video_in_read(v, buf, stride, NULL, NULL, d->msg, sizeof d->msg) == ES_ERR_EOF,
          "second read after EOF");
  d->corrupt = es_video_in_corrupt(v);
  free(buf);
  for (int i = 0; i + 1 < nheld; i++) give_back(d, &hold[i], frame, (size_t)d->info.width * bps);
  es_video_in_close(&v);
  CHECK(v == NULL, "close did not clear the handle");
  es_video_in_close(&v); /* NULL is fine */
  if (nheld) give_back(d, &hold[nheld - 1], frame, (size_t)d->info.width * bps); /* after close */
}

/* ffprobe's best_effort_timestamp of every video frame. */
static int probe_pts(const char *path, int64_t *pts, int max) {
  char *out = tv_capture("ffprobe -v error -select_streams v:0 -show_entries "
                         "frame=best_effort_timestamp -of csv=p=0 '%s'", path);
  int n = 0;
  char *save = NULL;
  for (char *t = out ? strtok_r(out, "\n", &save) : NULL; t && n < max;
       t = strtok_r(NULL, "\n", &save)) {
    while (*t == ' ') t++;
    if (*t) pts[n++] = strtoll(t, NULL, 10);
  }
  free(out);
  return n;
}

/* One clip: lavfi source -> file; decode it; compare with ffmpeg's extraction. */
/* bits: of the reference samples when they are fewer than 16 (9..15): the reference is
 * then the Y as stored, and what is delivered must be it scaled to the full 16-bit range
 * by bit replication (v << (16 - bits) | v >> (2 * bits - 16), libswscale's rule). */
static int widen(int v, int bits) {
  return bits > 8 && bits < 16 ? (v << (16 - bits)) | (v >> (2 * bits - 16)) : v;
}

/* lends: 2 - the decoder gives the Y plane as stored and takes a get_buffer2: every frame
 * is lent, from buffers of the reader's pool (pinned); 1 - lent from the decoder's own
 * buffers (not pinned); 0 - not stored as delivered: copied, none lent. */
static void clip_case(const char *name, int w, int h, const char *rate, int n,
                      const char *encode, const char *ref_fmt, int depth, int tol, int bits,
                      int lends) {
  char clip[512], ref[512];
  snprintf(clip, sizeof clip, "%s/%s", dir, name);
  snprintf(ref, sizeof ref, "%s/clip%d.ref", dir, es_test_range(0, 1 << 30));
  if (!encode) /* an existing clip */
    snprintf(clip, sizeof clip, "%s", name);
  /* testsrc2 (moving pattern) made at an even size, scaled to the odd size asked for. */
  else if (tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=%s -frames:v %d "
            "-vf scale=%d:%d %s '%s'",
            (w + 1) & ~1, (h + 1) & ~1, rate, n, w, h, encode, clip) != 0) {
    CHECK(0, "%s: could not make the clip", name);
    return;
  }
  /* The Y plane as stored (no range conversion) or luma of RGB. */
  if (make_ref(clip, ref_fmt, w, h, ref) != 0) {
    CHECK(0, "%s: ffmpeg could not extract the reference", name);
    return;
  }
  decoded d;
  decode_all(clip, NULL, 0, es_test_range(0, 3), &d);
  CHECK(d.open_rc == ES_OK, "%s: open %d %s", name, d.open_rc, d.msg);
  if (d.open_rc < 0) return;
  CHECK(d.end_rc == ES_ERR_EOF, "%s: end %d %s", name, d.end_rc, d.msg);
  CHECK(d.info.width == w && d.info.height == h, "%s: size %dx%d, want %dx%d", name,
        d.info.width, d.info.height, w, h);
  CHECK(d.info.depth == depth, "%s: depth %d want %d", name, d.info.depth, depth);
  CHECK(d.n == n, "%s: %d frames, want %d", name, d.n, n);
  CHECK(d.corrupt == 0, "%s: %" PRId64 " corrupt in a clean clip", name, d.corrupt);
  int rn, rd;
  if (sscanf(rate, "%d/%d", &rn, &rd) != 2) rd = 1;
  CHECK((int64_t)d.info.fps_num * rd == (int64_t)rn * d.info.fps_den, "%s: fps %d/%d want %s",
        name, d.info.fps_num, d.info.fps_den, rate);
  CHECK(d.info.frames == 0 || llabs(d.info.frames - n) <= 1, "%s: estimate %" PRId64, name,
        d.info.frames);
  size_t rsize = 0;
  uint8_t *r = tv_read_file(ref, &rsize);
  size_t fbytes = (size_t)w * h * (depth == 16 ? 2 : 1);
  CHECK(r && rsize == fbytes * n, "%s: reference has %zu bytes, want %zu", name, rsize,
        fbytes * n);
  if (r && rsize == fbytes * n && d.n == n) {
    int maxdiff = 0;
    size_t bad = 0;
    for (size_t i = 0; i < (size_t)w * h * n; i++) {
      int a = depth == 16 ? ((const uint16_t *)d.data)[i] : d.data[i];
      int b = depth == 16 ? widen(r[2 * i] | r[2 * i + 1] << 8, bits) : r[i];
      int df = abs(a - b);
      if (df > maxdiff) maxdiff = df;
      if (df) bad++;
    }
    CHECK(maxdiff <= tol, "%s: grey plane differs from ffmpeg's by up to %d (%zu samples)",
          name, maxdiff, bad);
  }
  free(r);
  /* The same frames lent instead of copied; pins undone once every buffer is freed. */
  {
    decoded l;
    pin_calls = pin_ok = unpin_calls = 0;
    g_lend = 1;
    decode_all(clip, NULL, 0, es_test_range(0, 3), &l);
    g_lend = 0;
    CHECK(l.open_rc == ES_OK && l.end_rc == ES_ERR_EOF && l.n == d.n, "%s lent: %d %d %d frames",
          name, l.open_rc, l.end_rc, l.n);
    CHECK(l.n != d.n || !memcmp(l.data, d.data, fbytes * (size_t)d.n), "%s: lent frames differ",
          name);
    for (int i = 0; i < l.n && i < d.n; i++)
      CHECK(l.pts[i] == d.pts[i], "%s lent: frame %d pts", name, i);
    CHECK(unpin_calls == pin_calls / 2 + pin_calls % 2, "%s: %d pins accepted, %d undone", name,
          pin_calls / 2 + pin_calls % 2, unpin_calls);
    CHECK(l.lent == (lends ? l.n : 0) && (pin_calls > 0) == (lends == 2),
          "%s: %d of %d frames lent, %d pin calls (want lends %d)", name, l.lent, l.n, pin_calls,
          lends);
    free(l.data);
    /* Every pin refused for good: the same frames, each pool buffer asked once. */
    pin_calls = unpin_calls = pin_nseen = pin_repeats = 0;
    g_refuse = g_lend = 1;
    decode_all(clip, NULL, 0, es_test_range(0, 3), &l);
    g_refuse = g_lend = 0;
    CHECK(l.open_rc == ES_OK && l.end_rc == ES_ERR_EOF && l.n == d.n &&
              (l.n != d.n || !memcmp(l.data, d.data, fbytes * (size_t)d.n)),
          "%s refused pins: %d %d %d frames, or other samples", name, l.open_rc, l.end_rc, l.n);
    CHECK(pin_repeats == 0 && unpin_calls == 0 && (pin_calls > 0) == (lends == 2),
          "%s: pins refused: %d asks for %d buffers and %d frames (%d again), %d undone", name,
          pin_calls, pin_nseen, l.n, pin_repeats, unpin_calls);
    free(l.data);
    /* Asked for without a buffer first: the same frames (decoded frames lent, or held). */
    g_ask = 1;
    decode_all(clip, NULL, 0, es_test_range(0, 3), &l);
    g_ask = 0;
    CHECK(l.open_rc == ES_OK && l.end_rc == ES_ERR_EOF && l.n == d.n, "%s asked: %d %d %d frames",
          name, l.open_rc, l.end_rc, l.n);
    CHECK(l.n != d.n || !memcmp(l.data, d.data, fbytes * (size_t)d.n), "%s: asked frames differ",
          name);
    for (int i = 0; i < l.n && i < d.n; i++)
      CHECK(l.pts[i] == d.pts[i], "%s asked: frame %d pts", name, i);
    CHECK(l.lent + l.asked == l.n && l.lent == (lends ? l.n : 0),
          "%s asked: %d lent, %d held for a buffer, of %d", name, l.lent, l.asked, l.n);
    free(l.data);
  }
  int64_t ppts[512];
  int pn = probe_pts(clip, ppts, 512);
  CHECK(pn == d.n, "%s: ffprobe sees %d frames", name, pn);
  double tb = (double)d.info.tb_num / d.info.tb_den;
  for (int i = 0; i < pn && i < d.n; i++) {
    CHECK(d.pts[i] == ppts[i], "%s: frame %d pts %" PRId64 " ffprobe %" PRId64, name, i,
          d.pts[i], ppts[i]);
    CHECK(fabs(d.secs[i] - d.pts[i] * tb) < 1e-9, "%s: pts seconds", name);
    if (i) CHECK(d.pts[i] > d.pts[i - 1], "%s: pts not increasing at %d", name, i);
  }
  free(d.data);
}

/* A stream whose bit depth changes (H.264 in MPEG-TS, two files one after the other: `cat
 * a.ts b.ts`): every frame is its Y as stored at the stream's depth (the one the reader
 * gives when opening it), whatever its own - 8-bit Y times 257 in a 16-bit stream
 * (libswscale took such a frame for limited-range YUV and stretched it: 75 came out 17587,
 * not 19275), 10-bit Y without its two low bits in an 8-bit stream (libswscale dithered
 * them: a third of the samples one off). The first and last frames are checked (the
 * junction may cost a frame: the demuxer flags it). bits[0], bits[1]: 8 or 10, of the first
 * and the second file. */
static int y_at_depth(int v, int bits, int depth) {
  if (depth == 16) return bits == 8 ? v * 257 : widen(v, bits);
  return v >> (bits - 8);
}

static void depth_change_case(int w, int h, const int bits[2]) {
  char clip[2][512], ref[2][512], ab[512];
  const int n = 6, ends = 3;
  for (int i = 0; i < 2; i++) {
    snprintf(clip[i], sizeof clip[i], "%s/dc%d-%d.ts", dir, i, bits[i]);
    snprintf(ref[i], sizeof ref[i], "%s/dc%d-%d.ref", dir, i, bits[i]);
    if (tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=25 -frames:v %d "
              "-c:v libx264 -bf 0 -pix_fmt %s '%s'",
              w, h, n, bits[i] == 10 ? "yuv420p10le" : "yuv420p", clip[i]) != 0) {
      printf("test_video_in: depth change %d -> %d skipped: libx264 cannot write %d bits\n",
             bits[0], bits[1], bits[i]);
      return;
    }
    if (make_ref(clip[i], bits[i] == 10 ? "y:yuv444p10le" : "y:yuv444p", w, h, ref[i]) != 0) {
      CHECK(0, "depth change %d -> %d: cannot extract the reference", bits[0], bits[1]);
      return;
    }
  }
  snprintf(ab, sizeof ab, "%s/dc%d-%d.ts", dir, bits[0], bits[1]);
  if (tv_sh("cat '%s' '%s' > '%s'", clip[0], clip[1], ab) != 0) {
    CHECK(0, "depth change: cannot join the clips");
    return;
  }
  decoded d;
  decode_all(ab, NULL, 0, es_test_range(0, 3), &d);
  CHECK(d.open_rc == ES_OK && d.end_rc == ES_ERR_EOF && d.n >= 2 * ends,
        "depth change %d -> %d: open %d end %d, %d frames %s", bits[0], bits[1], d.open_rc,
        d.end_rc, d.n, d.msg);
  const size_t px = (size_t)w * h;
  const int depth = d.info.depth;
  for (int i = 0; i < 2 && d.open_rc == ES_OK && d.n >= 2 * ends; i++) {
    size_t rsize = 0, bad = 0;
    uint8_t *r = tv_read_file(ref[i], &rsize);
    const int wide = bits[i] > 8;
    CHECK(r && rsize == px * n * (wide ? 2 : 1), "depth change: reference %d", i);
    if (!r || rsize != px * n * (wide ? 2 : 1)) {
      free(r);
      continue;
    }
    int at = -1, got_at = 0, want_at = 0;
    for (int t = 0; t < ends; t++) {
      const size_t fd = i ? (size_t)(d.n - ends + t) : (size_t)t; /* frame in d */
      const size_t fr = i ? (size_t)(n - ends + t) : (size_t)t;   /* frame in the reference */
      for (size_t k = 0; k < px; k++) {
        const size_t ri = fr * px + k, di = fd * px + k;
        const int v = wide ? r[2 * ri] | r[2 * ri + 1] << 8 : r[ri];
        const int want = y_at_depth(v, bits[i], depth);
        const int got = depth == 16 ? ((const uint16_t *)d.data)[di] : d.data[di];
        if (got != want && !bad++) at = (int)k, got_at = got, want_at = want;
      }
    }
    CHECK(bad == 0,
          "depth change %d -> %d (a %d-bit stream): %zu samples of the %d-bit "
          "frames are not their Y as stored (sample %d: %d, want %d)",
          bits[0], bits[1], depth, bad, bits[i], at, got_at, want_at);
    free(r);
  }
  free(d.data);
}

/* A size change early in an H.264 MPEG-TS stream (two files joined, the second larger):
 * libavformat's stream parameters are what its probing saw last, here the second file's
 * size, so the reader took the stream for WxH of the second, and the first frame ended it
 * ("frame 0 is 50x52 but the stream started at 80x60", nothing kept). The first frame sets
 * the stream's size: the first file's frames are delivered, then the change is an error
 * naming the frame and both sizes as they come. */
static void size_change_case(int w, int h) {
  char a[512], b[512], ab[512], ref[512];
  const int n = 6, w2 = w + 30, h2 = h + 8;
  snprintf(a, sizeof a, "%s/sc-a.ts", dir);
  snprintf(b, sizeof b, "%s/sc-b.ts", dir);
  snprintf(ab, sizeof ab, "%s/sc-ab.ts", dir);
  snprintf(ref, sizeof ref, "%s/sc-a.ref", dir);
  if (tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=25 -frames:v %d "
            "-c:v libx264 -bf 0 '%s' && ffmpeg -v error -y -f lavfi -i "
            "testsrc2=size=%dx%d:rate=25 -frames:v %d -c:v libx264 -bf 0 '%s' && "
            "cat '%s' '%s' > '%s'",
            w, h, n, a, w2, h2, n, b, a, b, ab) != 0 ||
      make_ref(a, "y:yuv444p", w, h, ref) != 0) {
    CHECK(0, "size change: cannot make the clips");
    return;
  }
  decoded d;
  decode_all(ab, NULL, 0, es_test_range(0, 3), &d);
  char want[160];
  snprintf(want, sizeof want, "is %dx%d but the stream started at %dx%d", w2, h2, w, h);
  CHECK(d.open_rc == ES_OK && d.info.width == w && d.info.height == h,
        "size change: open %d, %dx%d, want %dx%d (the first frame's) %s", d.open_rc, d.info.width,
        d.info.height, w, h, d.msg);
  CHECK(d.end_rc == ES_ERR_INPUT && strstr(d.msg, want), "size change: end %d '%s', want '%s'",
        d.end_rc, d.msg, want);
  /* the first file's frames (the junction may cost one: the demuxer flags it), each the
   * frame of its time (25 fps, time base 1/90000); the last two may be decoded without the
   * skipped one they refer to */
  CHECK(d.n >= n - 1 && d.n <= n, "size change: %d frames before it, want %d", d.n, n);
  size_t rsize = 0;
  const size_t fb = (size_t)w * h;
  uint8_t *r = tv_read_file(ref, &rsize);
  if (d.open_rc == ES_OK && d.info.width == w && d.info.height == h && r && rsize == fb * n)
    for (int i = 0; i < d.n; i++) {
      const int64_t k = (d.pts[i] - d.pts[0]) / 3600;
      CHECK(k >= 0 && k < n && (k >= n - 2 || !memcmp(d.data + fb * i, r + fb * k, fb)),
            "size change: frame %d (%" PRId64 " of the first file) differs", i, k);
    }
  free(r);
  free(d.data);
}

static void rand_fill(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(es_test_rand() >> 33);
}

/* How a case's bytes reach the reader: a real pipe on standard input, standard input
 * redirected from a regular file (not at offset 0), or the file named. From a file, frames
 * are read with pread, a big frame by several threads at once. */
enum { VIA_PIPE, VIA_STDIN_FILE, VIA_NAMED };
static const char *const via_name[] = {"pipe", "stdin file", "named file"};

/* Feeds data to the reader as `via` says; returns the path to open ("-" or the file). */
/* After reading to the end of standard input redirected from a file: is its offset at the
 * end, as sequential reads would leave it? (1 for the other ways in.) */
static int via_at_end(int via) {
  struct stat st;
  if (via != VIA_STDIN_FILE) return 1;
  return fstat(0, &st) == 0 && lseek(0, 0, SEEK_CUR) == st.st_size;
}

static const char *via_open(int via, const void *data, size_t size, pid_t *pid, int *saved) {
  static char file[512];
  snprintf(file, sizeof file, "%s/via.bin", dir);
  *pid = 0;
  *saved = -1;
  if (via == VIA_PIPE) {
    *pid = tv_stdin_pipe(data, size, saved);
    return "-";
  }
  if (via == VIA_STDIN_FILE) {
    *pid = tv_stdin_file(file, data, size, (size_t)es_test_range(1, 5000), saved);
    CHECK(*pid == 0, "stdin from a file: cannot set up %s", file);
    return "-";
  }
  FILE *f = fopen(file, "wb");
  CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", file);
  return file;
}

/* Raw gray8/gray16le frames, with and without a short last frame; big: frames of ~1 MB. */
static void raw_case(int depth, int short_tail, int via, int big) {
  int w = big ? es_test_range(700, 1100) | 1 : es_test_range(1, 97) | 1;
  int h = big ? es_test_range(500, 1000) : es_test_range(1, 61);
  int n = big ? es_test_range(1, 3) : es_test_range(1, 6);
  size_t bps = depth == 16 ? 2 : 1, fsize = (size_t)w * h * bps;
  size_t tail = short_tail ? (size_t)es_test_range(1, (int)fsize - 1 > 0 ? (int)fsize - 1 : 1)
                           : 0;
  if (short_tail && fsize == 1) return; /* no short frame of a 1-byte frame */
  size_t total = fsize * n + tail;
  uint8_t *data = malloc(total);
  rand_fill(data, total);
  char spec[64];
  snprintf(spec, sizeof spec, "%s:%dx%d@30000/1001", depth == 16 ? "gray16le" : "gray8", w, h);
  int saved = -1;
  pid_t pid;
  const char *path = via_open(via, data, total, &pid, &saved);
  decoded d;
  decode_all(path, spec, 0, 0, &d);
  CHECK(via_at_end(via), "raw %s: stdin's offset is not at the end after reading", spec);
  tv_stdin_restore(pid, saved);
  CHECK(d.open_rc == ES_OK, "raw %s %s: open %d %s", spec, via_name[via], d.open_rc, d.msg);
  if (d.open_rc == ES_OK) {
    CHECK(d.info.width == w && d.info.height == h && d.info.depth == depth, "raw %s: info",
          spec);
    CHECK(d.info.fps_num == 30000 && d.info.fps_den == 1001, "raw fps %d/%d", d.info.fps_num,
          d.info.fps_den);
    CHECK(d.n == n, "raw %s %s: %d frames of %d delivered", spec, via_name[via], d.n, n);
    if (d.n == n) {
      int same = 1;
      for (size_t i = 0; i < (size_t)w * h * n && same; i++) {
        int a = depth == 16 ? ((const uint16_t *)d.data)[i] : d.data[i];
        int b = depth == 16 ? (data[2 * i] | data[2 * i + 1] << 8) : data[i];
        same = a == b;
      }
      CHECK(same, "raw %s %s: samples differ from those written", spec, via_name[via]);
    }
    for (int i = 0; i < d.n; i++) {
      double want = i * 1001.0 / 30000.0;
      CHECK(fabs(d.secs[i] - want) < 1e-6, "raw frame %d at %.6f s, want %.6f", i, d.secs[i],
            want);
    }
    /* Asked without a buffer: from a pipe the first frame is read into memory of the
     * reader's own and lent, later ones wait for a buffer; a file's all wait for one. */
    const int lent0 = g_ask && via == VIA_PIPE && d.n > 0;
    CHECK(d.lent == lent0 && d.asked == (g_ask ? d.n - lent0 : 0),
          "raw %s %s asked %d: %d lent, %d held for a buffer, of %d", spec, via_name[via], g_ask,
          d.lent, d.asked, d.n);
    if (short_tail) {
      char want[160];
      snprintf(want, sizeof want, "frame %d is short (got %zu of %zu bytes)", n, tail, fsize);
      CHECK(d.end_rc == ES_ERR_INPUT && !strcmp(d.msg, want),
            "raw short %s: %d '%s', want '%s'", via_name[via], d.end_rc, d.msg, want);
    } else {
      CHECK(d.end_rc == ES_ERR_EOF, "raw %s: end %d %s", spec, d.end_rc, d.msg);
    }
  }
  free(d.data);
  free(data);
}

/* y4m through a pipe: recognised by its header, no options. What is done to the stream:
 *  Y4M_SHORT:  the last frame cut short; the frames before it must come, then the error;
 *  Y4M_BAD:    one frame's "FRAME" line damaged; that frame skipped and counted, the rest
 *              kept (frames have one size, so the next line is found);
 *  Y4M_PARAMS: one frame line carries a parameter ("FRAME Ixyz"), which changes nothing. */
enum { Y4M_CLEAN, Y4M_SHORT, Y4M_BAD, Y4M_PARAMS };
static void y4m_pipe_case(const char *pixfmt, int depth, int bits, int mode, int via, int big) {
  const int short_tail = mode == Y4M_SHORT;
  int w = big ? es_test_range(700, 1100) | 1 : es_test_range(8, 120) | 1;
  int h = big ? es_test_range(500, 1000) | 1 : es_test_range(8, 90) | 1;
  int n = big ? es_test_range(2, 3) : es_test_range(2, 7);
  char clip[512], ref[512];
  snprintf(clip, sizeof clip, "%s/p.y4m", dir);
  snprintf(ref, sizeof ref, "%s/p.ref", dir);
  if (tv_sh("ffmpeg -v error -y -f lavfi -i testsrc2=size=%dx%d:rate=24 -frames:v %d -vf "
            "scale=%d:%d,format=%s -strict -1 '%s'",
            (w + 1) & ~1, (h + 1) & ~1, n, w, h, pixfmt, clip) ||
      make_ref(clip,
               !strcmp(pixfmt, "gray") ? "-pix_fmt gray"
               : bits == 10            ? "y:yuv444p10le"
                                       : "y:yuv444p",
               w, h, ref)) {
    CHECK(0, "y4m %s: ffmpeg failed", pixfmt);
    return;
  }
  size_t csize = 0, rsize = 0;
  uint8_t *c = tv_read_file(clip, &csize), *r = tv_read_file(ref, &rsize);
  size_t fsize = !strcmp(pixfmt, "gray") ? (size_t)w * h
                 : !strcmp(pixfmt, "yuv420p")
                     ? (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2)
                     : (size_t)w * h * 6; /* yuv444p10le */
  size_t cut = short_tail ? (size_t)es_test_range(1, (int)fsize - 1) : 0;
  const int k = es_test_range(0, n - 1); /* the frame Y4M_BAD / Y4M_PARAMS changes */
  const uint8_t *nl = c ? memchr(c, '\n', csize) : NULL;
  const size_t at = nl ? (size_t)(nl - c) + 1 + (size_t)k * (6 + fsize) : 0; /* its line */
  if (c && (mode == Y4M_BAD || mode == Y4M_PARAMS)) {
    CHECK(nl && at + 6 <= csize && !memcmp(c + at, "FRAME\n", 6), "y4m %s: no frame line",
          pixfmt);
    if (mode == Y4M_BAD && nl) c[at + 2] = 'B';
    uint8_t *grown = mode == Y4M_PARAMS && nl ? realloc(c, csize + 5) : NULL;
    if (grown) {
      c = grown;
      memmove(c + at + 10, c + at + 5, csize - at - 5);
      memcpy(c + at + 5, " Ixyz", 5);
      csize += 5;
    }
  }
  int saved = -1;
  pid_t pid;
  if (!c) {
    CHECK(0, "y4m %s: cannot read %s", pixfmt, clip);
    free(r);
    return;
  }
  const char *path = via_open(via, c, csize - cut, &pid, &saved);
  decoded d;
  decode_all(path, NULL, 0, 0, &d);
  CHECK(via_at_end(via), "y4m %s: stdin's offset is not at the end after reading", pixfmt);
  tv_stdin_restore(pid, saved);
  if (short_tail) {
    char want[160];
    snprintf(want, sizeof want, "frame %d is short (got %zu of %zu bytes)", n - 1, fsize - cut,
             fsize);
    CHECK(d.open_rc == ES_OK && d.end_rc == ES_ERR_INPUT && !strcmp(d.msg, want),
          "y4m short %s %s: %d %d '%s', want '%s'", pixfmt, via_name[via], d.open_rc, d.end_rc,
          d.msg, want);
    n--; /* the frames before it are all delivered */
  } else {
    CHECK(d.open_rc == ES_OK && d.end_rc == ES_ERR_EOF, "y4m %s %s: %d %d %s", pixfmt,
          via_name[via], d.open_rc, d.end_rc, d.msg);
  }
  CHECK(d.corrupt == (mode == Y4M_BAD), "y4m %s %s mode %d: %" PRId64 " corrupt", pixfmt,
        via_name[via], mode, d.corrupt);
  int skipped = -1; /* the reference frame missing from the output */
  if (mode == Y4M_BAD) {
    skipped = k;
    n--;
  }
  CHECK(d.n == n && d.info.width == w && d.info.height == h && d.info.depth == depth,
        "y4m pipe %s: %d frames %dx%d depth %d", pixfmt, d.n, d.info.width, d.info.height,
        d.info.depth);
  CHECK(d.info.fps_num == 24 && d.info.fps_den == 1, "y4m fps");
  /* Asked without a buffer (see raw_case); 10-bit frames come from the decoder, converted:
   * never lent, each held for a buffer. */
  const int lent0 = g_ask && via == VIA_PIPE && bits == 8 && d.n > 0;
  CHECK(d.lent == lent0 && d.asked == (g_ask ? d.n - lent0 : 0),
        "y4m %s %s asked %d: %d lent, %d held for a buffer, of %d", pixfmt, via_name[via], g_ask,
        d.lent, d.asked, d.n);
  size_t fb = (size_t)w * h * (depth == 16 ? 2 : 1);
  if (d.n == n && r && rsize >= fb * (n + (skipped >= 0))) {
    int maxdiff = 0;
    const size_t fp = (size_t)w * h;
    for (size_t i = 0; i < fp * n; i++) {
      const size_t j = skipped >= 0 && i / fp >= (size_t)skipped ? i + fp : i;
      int a = depth == 16 ? ((const uint16_t *)d.data)[i] : d.data[i];
      int b = depth == 16 ? widen(r[2 * j] | r[2 * j + 1] << 8, bits) : r[j];
      if (abs(a - b) > maxdiff) maxdiff = abs(a - b);
    }
    CHECK(maxdiff == 0, "y4m %s %s: Y differs by %d", pixfmt, via_name[via], maxdiff);
  }
  free(c);
  free(r);
  free(d.data);
}

/* A y4m header declaring frames of fsize bytes (C field c, w x h), then the FRAME line and
 * 6 bytes: read as the CLI reads, asking without a buffer (g_ask), in a child process
 * whose address space is limited to what it maps now and 128 MB more (not under ASan,
 * whose shadow memory needs terabytes). The reader once allocated the declared frame before
 * its bytes came (a packet of fsize for 10-bit frames; the CLI, a pool of them): now the
 * first frame is found short from the file's size, or read from a pipe into memory that
 * grows as its bytes come. Either way: frame 0 is short, no frame delivered. */
static void huge_header_case(const char *c, int w, int h, size_t fsize, int via) {
  char hdr[160];
  const int n = snprintf(hdr, sizeof hdr, "YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C%s\nFRAME\nabcdef",
                         w, h, c);
  fflush(stdout);
  fflush(stderr);
  const pid_t child = fork();
  if (child == 0) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    long vm_kb = 0;
    FILE *st = fopen("/proc/self/status", "r");
    char line[256];
    while (st && fgets(line, sizeof line, st))
      if (!strncmp(line, "VmSize:", 7)) vm_kb = atol(line + 7);
    if (st) fclose(st);
    const struct rlimit lim = {(rlim_t)(vm_kb + 128 * 1024) * 1024, RLIM_INFINITY};
    if (vm_kb <= 0 || setrlimit(RLIMIT_AS, &lim) != 0) printf("huge header: no limit set\n");
#endif
    es_test_failures = 0;
    int saved = -1;
    pid_t pid;
    const char *path = via_open(via, hdr, (size_t)n, &pid, &saved);
    decoded d;
    g_ask = 1;
    decode_all(path, NULL, 0, 0, &d);
    tv_stdin_restore(pid, saved);
    char want[160];
    snprintf(want, sizeof want, "frame 0 is short (got 6 of %zu bytes)", fsize);
    CHECK(d.open_rc == ES_OK && d.end_rc == ES_ERR_INPUT && d.n == 0 && !strcmp(d.msg, want),
          "huge %s header, %s: open %d, end %d, %d frames, '%s' (want '%s')", c, via_name[via],
          d.open_rc, d.end_rc, d.n, d.msg, want);
    free(d.data);
    fflush(stdout);
    _exit(es_test_failures ? 1 : 0);
  }
  int status = 0;
  CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "huge %s header, %s: the child failed (status %#x)", c, via_name[via], status);
}

/* y4m (where ffmpeg writes it and libavformat reads it) and raw frames, through a pipe,
 * standard input redirected from a file and a named file. */
static void stream_cases(int have_y4m) {
  if (have_y4m) {
    /* 10-bit frames are read as packets for the decoder, with the same rules */
    static const struct {
      const char *pixfmt;
      int depth, bits, mode;
    } y4m_cases[] = {
        {"yuv420p", 8, 8, Y4M_CLEAN},       {"gray", 8, 8, Y4M_CLEAN},
        {"yuv444p10le", 16, 10, Y4M_CLEAN}, {"yuv420p", 8, 8, Y4M_SHORT},
        {"gray", 8, 8, Y4M_SHORT},          {"yuv420p", 8, 8, Y4M_BAD},
        {"gray", 8, 8, Y4M_PARAMS},         {"yuv444p10le", 16, 10, Y4M_SHORT},
        {"yuv444p10le", 16, 10, Y4M_BAD},   {"yuv444p10le", 16, 10, Y4M_PARAMS},
    };
    for (int via = VIA_PIPE; via <= VIA_NAMED; via++)
      for (size_t i = 0; i < sizeof y4m_cases / sizeof y4m_cases[0]; i++)
        y4m_pipe_case(y4m_cases[i].pixfmt, y4m_cases[i].depth, y4m_cases[i].bits,
                      y4m_cases[i].mode, via, 0);
    /* frames big enough to be read by several threads from a file */
    y4m_pipe_case("yuv420p", 8, 8, Y4M_CLEAN, VIA_STDIN_FILE, 1);
    y4m_pipe_case("gray", 8, 8, Y4M_SHORT, VIA_NAMED, 1);
    y4m_pipe_case("yuv420p", 8, 8, Y4M_BAD, VIA_NAMED, 1);
  } else {
    /* Standard input is still covered by the raw cases below. */
    printf("test_video_in: y4m pipe cases skipped: no y4m muxer in the ffmpeg program or no "
           "yuv4mpegpipe demuxer in libavformat\n");
  }
  for (int depth = 8; depth <= 16; depth += 8)
    for (int via = VIA_PIPE; via <= VIA_NAMED; via++) {
      raw_case(depth, 0, via, 0);
      raw_case(depth, 1, via, 0);
      if (via != VIA_PIPE || g_ask) {
        raw_case(depth, 0, via, 1);
        raw_case(depth, 1, via, 1);
      }
    }
}

/* A build without FFmpeg: every open fails with one clear line (video_stub.c). */
static int stub_checks(void) {
  char msg[128] = "poison";
  es_video_in *v = (es_video_in *)&msg;
  es_video_in_opts o = {.raw = NULL};
  es_video_info info;
  CHECK(es_video_built() == 0, "es_video_built() is %d without FFmpeg", es_video_built());
  int rc = es_video_in_open(&v, "-", &o, &info, msg, sizeof msg);
  CHECK(rc == ES_ERR_INPUT && v == NULL && !strcmp(msg, "built without FFmpeg"), "in: %d %s",
        rc, msg);
  es_video_out *w = (es_video_out *)&msg;
  es_video_out_opts oo = {16, 16, 25, 1, 1, 25, ES_PIX_RGB24, 0, NULL, -1, NULL, 0, NULL,
                          0, 0, 0, 0, 0, 0, 0};
  rc = es_video_out_open(&w, "x.mp4", &oo, msg, sizeof msg);
  CHECK(rc == ES_ERR_OUTPUT && w == NULL && !strcmp(msg, "built without FFmpeg"), "out: %d %s",
        rc, msg);
  CHECK(!tv_exists("x.mp4"), "stub wrote a file");
  es_video_in_close(&v);
  CHECK(es_video_out_close(&w, 1, NULL, 0) == ES_OK, "close of NULL");
  return es_test_done("test_video_in (without FFmpeg)");
}

int main(void) {
  es_test_seed("test_video_in");
  const char *have = getenv("ES_HAVE_FFMPEG");
  if (have && !strcmp(have, "0")) return stub_checks();
  if (!tv_need_ffmpeg("test_video_in")) return ES_TEST_SKIP;
  CHECK(es_video_built() == 1, "es_video_built() is %d in a build with FFmpeg", es_video_built());
  snprintf(dir, sizeof dir, "%s/es-video-in-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return 1;

  have_extractplanes = tv_ffmpeg_has("filters", "extractplanes");
  if (!have_extractplanes)
    printf("test_video_in: no extractplanes filter in this FFmpeg: Y reference cut from "
           "ffmpeg's 4:4:4 output\n");
  /* y4m on a pipe: ffmpeg must write it and the library's libavformat read it. */
  int have_y4m = tv_ffmpeg_has("muxers", "yuv4mpegpipe") && tv_lavf_has_demuxer("yuv4mpegpipe");
  int w = es_test_range(17, 180) | 1, h = es_test_range(9, 120) | 1;
  printf("clips %dx%d\n", w, h);
  /* 8-bit YUV through several decoders and containers: Y as stored, exactly. */
  const char *y = "y:yuv444p";
  clip_case("a.mkv", w, h, "25", es_test_range(3, 12), "-c:v libx264 -pix_fmt yuv444p", y, 8,
            0, 8, 2);
  clip_case("b.mp4", w, h, "30000/1001", es_test_range(3, 12), "-c:v mpeg4 -pix_fmt yuv420p",
            y, 8, 0, 8, 2);
  if (tv_ffmpeg_need("test_video_in: c.avi (mjpeg)", "encoders", "mjpeg", "mjpeg encoder"))
    clip_case("c.avi", w + 1, h + 1, "12", es_test_range(3, 8), "-c:v mjpeg -pix_fmt yuvj422p",
              "y:yuvj444p", 8, 0, 8, 2);
  clip_case("d.nut", w, h, "10", es_test_range(2, 6), "-c:v rawvideo -pix_fmt nv12", y, 8, 0, 8,
            1);
  clip_case("d2.avi", w, h, "10", es_test_range(2, 6), "-c:v rawvideo -pix_fmt yuyv422", y, 8, 0,
            8, 0);
  /* >8 bits: GRAY16 scaled to the full range by libswscale (what ffmpeg does to gray16le). */
  clip_case("e.nut", w, h, "50", es_test_range(2, 6), "-c:v ffv1 -pix_fmt yuv420p10le",
            "y:yuv444p10le", 16, 0, 10, 0);
  /* RGB: luma through libswscale, as ffmpeg's -pix_fmt gray (rounding may differ by 1). */
  clip_case("f.nut", w, h, "25", es_test_range(2, 6), "-c:v ffv1 -pix_fmt bgr0",
            "-pix_fmt gray", 8, 1, 8, 0);
  clip_case("g.mkv", w, h, "25", es_test_range(2, 6), "-c:v ffv1 -pix_fmt gray16le",
            "-pix_fmt gray16le", 16, 0, 16, 2);

  if (tv_ffmpeg_has("encoders", "libx264") && tv_ffmpeg_has("muxers", "mpegts") &&
      tv_lavf_has_demuxer("mpegts")) {
    depth_change_case(w + 1, h + 1, (const int[2]){10, 8});
    depth_change_case(w + 1, h + 1, (const int[2]){8, 10});
    size_change_case(w + 1, h + 1);
  } else {
    printf("test_video_in: depth and size change skipped: no libx264 or mpegts in this "
           "FFmpeg\n");
  }

  /* The sample clip shipped in samples/ (H.264 4:2:0, 320x240, 75 frames at 25 fps). */
  const char *src = getenv("ES_SRC");
  if (src) {
    char sample[512];
    snprintf(sample, sizeof sample, "%s/samples/clip.mp4", src);
    if (tv_exists(sample)) clip_case(sample, 320, 240, "25", 75, NULL, y, 8, 0, 8, 2);
  }

  /* Twice: read into a buffer given each time, and asked for without one first (g_ask;
   * with frames of ~1 MB through a pipe too, whose first frame is read in growing steps). */
  for (g_ask = 0; g_ask < 2; g_ask++) stream_cases(have_y4m);
  g_ask = 0;
  if (tv_lavf_has_demuxer("yuv4mpegpipe"))
    for (int via = VIA_PIPE; via <= VIA_NAMED; via++) {
      huge_header_case("mono", 16000, 16000, 256000000, via);
      huge_header_case("mono10", 12000, 12000, 288000000, via);
    }

  /* Bad raw specs: usage errors naming the parameter (raw; the CLI says --raw). */
  const char *bad[] = {"gray8", "gray8:", "gray8:10", "gray8:10x", "gray8:0x5", "rgb24:4x4",
                       "gray8:4x4@", "gray8:4x4@abc", "gray16le:4x4x", "gray8:-3x4"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    decoded d;
    decode_all("-", bad[i], 0, 0, &d);
    char want[160];
    snprintf(want, sizeof want, "raw %s: expected gray8:WxH[@FPS] or gray16le:WxH[@FPS]",
             bad[i]);
    CHECK(d.open_rc == ES_ERR_USAGE && !strcmp(d.msg, want), "raw '%s': %d '%s'", bad[i],
          d.open_rc, d.msg);
  }
  /* max_pixels, checked before anything is read (raw) or decoded (a file); named as the
   * library's parameter, not the CLI's --max-pixels. */
  {
    decoded d;
    decode_all("-", "gray8:100000x100000", 1LL << 31, 0, &d);
    CHECK(d.open_rc == ES_ERR_INPUT && strstr(d.msg, " max_pixels ") && !strstr(d.msg, "--"), "raw too big: %d %s",
          d.open_rc, d.msg);
    char clip[512];
    snprintf(clip, sizeof clip, "%s/a.mkv", dir);
    decode_all(clip, NULL, (int64_t)w * h - 1, 0, &d);
    CHECK(d.open_rc == ES_ERR_INPUT && strstr(d.msg, " max_pixels ") && !strstr(d.msg, "--"), "file too big: %d %s",
          d.open_rc, d.msg);
    decode_all(clip, NULL, (int64_t)w * h, 0, &d);
    CHECK(d.open_rc == ES_OK, "exactly max-pixels: %d %s", d.open_rc, d.msg);
    free(d.data);
    /* A y4m header claiming a huge frame: refused from the header. */
    snprintf(clip, sizeof clip, "%s/huge.y4m", dir);
    const char hdr[] = "YUV4MPEG2 W10000 H10000 F25:1 Ip A1:1 Cmono\nFRAME\nxyz";
    tv_write_file(clip, hdr, sizeof hdr - 1);
    decode_all(clip, NULL, 1LL << 26, 0, &d);
    if (tv_lavf_has_demuxer("yuv4mpegpipe"))
      CHECK(d.open_rc == ES_ERR_INPUT && strstr(d.msg, " max_pixels ") && !strstr(d.msg, "--"), "huge y4m: %d %s",
            d.open_rc, d.msg);
    else /* not readable at all: the message says why */
      CHECK(d.open_rc == ES_ERR_INPUT && strstr(d.msg, "no yuv4mpegpipe demuxer"),
            "huge y4m without a y4m demuxer: %d %s", d.open_rc, d.msg);
  }
  /* Not there, not a video. */
  {
    decoded d;
    char p[512];
    snprintf(p, sizeof p, "%s/missing.mp4", dir);
    decode_all(p, NULL, 0, 0, &d);
    CHECK(d.open_rc == ES_ERR_INPUT && d.msg[0] && !strchr(d.msg, '\n'), "missing: %d %s",
          d.open_rc, d.msg);
    snprintf(p, sizeof p, "%s/text.mkv", dir);
    tv_write_file(p, "hello, this is not a video\n", 27);
    decode_all(p, NULL, 0, 0, &d);
    CHECK(d.open_rc == ES_ERR_INPUT, "text file: %d %s", d.open_rc, d.msg);
  }
  tv_sh("rm -rf '%s'", dir);
  return es_test_done("test_video_in");
}
