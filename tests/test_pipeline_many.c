/*
 * test_pipeline_many.c - several videos in one call (es_many, pipeline/run_many.c; the
 * directory's list, io/still_list.c). y4m clips written here (three sizes and lengths, each
 * its own content), run through es_many three at a time on the CPU, against each clip run
 * alone through es_run into its own heat video and statistics file:
 * - the one statistics file (CSV, JSON lines) is the single runs' records one after another
 *   in the inputs' order under one header, byte for byte, and each heat video is the single
 *   run's, byte for byte;
 * - two inputs of one output name are refused before any work (exit 1, the clash said with
 *   both inputs, no context made, no directory or file created);
 * - an input that is not a video among good ones fails alone: said once, counted, the others
 *   finished and their records joined, exit 2;
 * - an existing heat video is refused (exit 3, param "overwrite"), kept with skip (its bytes
 *   untouched, said "exists, skipped", its records still joined), and with skip and no
 *   statistics its video is not run at all;
 * - a share (es_many_config.share) runs its videos only, and their records only;
 * - a stop before the first video begins none (exit 130), the statistics the header alone;
 * - es_video_dir_list lists a directory of videos in name order, and none where a still is.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "entropy_stream.h"
#include "es_io.h" /* es_video_built */
#include "es_test_video.h"

enum { NCLIP = 3 };
static const int g_w[NCLIP] = {96, 64, 80}, g_h[NCLIP] = {64, 48, 48}, g_n[NCLIP] = {7, 5, 9};
static char g_dir[256];

/* A y4m clip of frames frames, 4:2:0, its texture from seed. */
static int write_y4m(const char *path, int w, int h, int frames, int seed) {
  FILE *f = fopen(path, "wb");
  uint32_t x32 = (uint32_t)seed * 2654435761u + 1;
  if (!f) return -1;
  fprintf(f, "YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C420jpeg\n", w, h);
  for (int k = 0; k < frames; k++) {
    fputs("FRAME\n", f);
    for (int i = 0; i < w * h; i++) {
      x32 ^= x32 << 13, x32 ^= x32 >> 17, x32 ^= x32 << 5;
      putc((int)(((i % w) * seed + (i / w) * 3 + k * 5) / 2 + (x32 & 31)) & 255, f);
    }
    for (int i = 0; i < 2 * (w / 2) * (h / 2); i++) putc(128, f);
  }
  return fclose(f) == 0 ? 0 : -1;
}

static char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path_of(const char *fmt, ...) {
  static char buf[8][512];
  static int k;
  char rel[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rel, sizeof rel, fmt, ap);
  va_end(ap);
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, rel);
  return buf[k];
}

static void base_config(es_config *c) {
  es_config_default(c);
  c->device = ES_DEVICE_CPU;
  c->threads = 2;
  c->params.window = 5;
  c->verbose = 0;
}

/* One clip alone through es_run: its heat video and its statistics file. */
static int single_run(const char *in, const char *heat, const char *stats) {
  es_run_config rc;
  es_run *run = NULL;
  es_source src;
  es_sink k;
  es_video_source_opts vso;
  es_sink_opts so = {ES_PIX_RGB24, 0, NULL, -1, NULL, ES_PIX_NONE, 1, 0, in, 16};
  es_run_counts c;
  memset(&vso, 0, sizeof vso);
  es_run_config_default(&rc);
  base_config(&rc.cfg);
  if (es_source_video(&src, in, &vso) != ES_OK || es_run_create(&run, &rc, &src) != ES_OK)
    return -1;
  if (heat && (es_sink_for_video(&k, heat, &so) != ES_OK || es_run_add_sink(run, &k) != ES_OK))
    return -1;
  if (es_sink_stats(&k, stats, &so) != ES_OK || es_run_add_sink(run, &k) != ES_OK) return -1;
  es_run_execute(run);
  es_run_get_counts(run, &c);
  es_run_destroy(&run);
  return c.exit_code;
}

/* What es_many said: every line, and how many named each parameter. */
typedef struct heard {
  pthread_mutex_t lock;
  char text[4096];
  int lines, overwrite;
} heard;
static void on_say(void *user, const char *name, const char *param, const char *line) {
  heard *h = user;
  pthread_mutex_lock(&h->lock);
  size_t n = strlen(h->text);
  snprintf(h->text + n, sizeof h->text - n, "%s: %s\n", name ? name : "(none)", line);
  h->lines++;
  h->overwrite += param && !strcmp(param, "overwrite");
  pthread_mutex_unlock(&h->lock);
}
static atomic_int g_lib_lines; /* the runs' own lines (cfg.message) */
static void on_message(void *user, const char *line) {
  (void)user;
  printf("  library: %s\n", line);
  atomic_fetch_add(&g_lib_lines, 1);
}

static int g_stop_now; /* es_many_config.stopped's answer */
static int stop_now(void) { return g_stop_now; }

/* es_many over ins[0..n) into out_dir and stats: its counts; h collects its lines. */
static int many(const char *const *ins, size_t n, const char *out_dir, const char *stats,
                int skip, int overwrite, const unsigned char *share, heard *h,
                es_many_counts *k, int *made_ctx) {
  es_many_config c;
  es_many *m = NULL;
  int rc;
  es_many_config_default(&c);
  base_config(&c.cfg);
  c.cfg.verbose = 1;
  c.cfg.message = on_message;
  c.out_dir = out_dir;
  c.stats = stats;
  c.sink.skip = skip;
  c.sink.overwrite = overwrite;
  c.share = share;
  c.runs = 3;
  c.say = on_say;
  c.stopped = stop_now;
  c.user = h;
  memset(h->text, 0, sizeof h->text);
  h->lines = h->overwrite = 0;
  memset(k, 0, sizeof *k);
  if ((rc = es_many_create(&m, &c, ins, n)) != ES_OK) return rc;
  rc = es_many_execute(m);
  es_many_get_counts(m, k);
  if (made_ctx) *made_ctx = es_many_context(m) != NULL;
  es_many_destroy(&m);
  return rc;
}

/* 1 when the files a and b hold the same bytes. */
static int same_file(const char *a, const char *b) {
  size_t na = 0, nb = 0;
  uint8_t *x = tv_read_file(a, &na), *y = tv_read_file(b, &nb);
  int same = x && y && na == nb && !memcmp(x, y, na);
  free(x);
  free(y);
  return same;
}

/* The single runs' statistics files of clips idx[0..n) one after another: the first's
 * header (hdr_lines lines: CSV 1, JSON lines 0), then every file's records. */
static void expected_join(const char *out, const char *ext, const int *idx, int n, int hdr_lines) {
  FILE *f = fopen(out, "wb");
  for (int i = 0; i < n && f; i++) {
    size_t len = 0;
    uint8_t *b = tv_read_file(path_of("single/%d.%s", idx[i], ext), &len);
    size_t at = 0;
    for (int l = 0; l < hdr_lines && i > 0 && at < len; at++)
      if (b[at] == '\n') l++; /* the header once, the first file's */
    if (b) fwrite(b + at, 1, len - at, f);
    free(b);
  }
  if (f) fclose(f);
}

int main(void) {
  heard h;
  es_many_counts k;
  char *ins[NCLIP + 1], *paths_tmp;
  const char *list[NCLIP + 1];
  int made_ctx = -1, rc;
  char **dirv = NULL;
  size_t ndir = 0;

  if (!es_video_built() || !tv_lavf_has_demuxer("yuv4mpegpipe") ||
      !tv_lavf_has_muxer("yuv4mpegpipe")) {
    printf("test_pipeline_many: no FFmpeg, or no y4m in it: skipped\n");
    return ES_TEST_SKIP;
  }
  snprintf(g_dir, sizeof g_dir, "%s/es_many_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) return 1;
  pthread_mutex_init(&h.lock, NULL);
  tv_sh("mkdir -p '%s/clips' '%s/single' '%s/other'", g_dir, g_dir, g_dir);
  for (int i = 0; i < NCLIP; i++) {
    ins[i] = strdup(path_of("clips/%c.y4m", 'a' + i));
    list[i] = ins[i];
    CHECK(write_y4m(ins[i], g_w[i], g_h[i], g_n[i], 7 + 4 * i) == 0, "write %s", ins[i]);
    CHECK(single_run(ins[i], path_of("single/%d.y4m", i), path_of("single/%d.csv", i)) == 0,
          "single run of %s", ins[i]);
    CHECK(single_run(ins[i], NULL, path_of("single/%d.jsonl", i)) == 0, "single run (jsonl)");
  }

  /* ---- The list: the statistics joined in order, the heat videos the single runs'. */
  {
    const int all[NCLIP] = {0, 1, 2};
    expected_join(path_of("want.csv"), "csv", all, NCLIP, 1);
    expected_join(path_of("want.jsonl"), "jsonl", all, NCLIP, 0);
    rc = many(list, NCLIP, path_of("heat"), path_of("s.csv"), 0, 0, NULL, &h, &k, NULL);
    CHECK(rc == ES_OK && k.exit_code == 0, "list: status %d, exit %d: %s", rc, k.exit_code, h.text);
    CHECK(k.videos == NCLIP && k.ran == NCLIP && k.failed == 0 && k.started,
          "list: %zu videos, %zu ran, %zu failed", k.videos, k.ran, k.failed);
    CHECK(k.frames == g_n[0] + g_n[1] + g_n[2], "list: %lld frames", (long long)k.frames);
    CHECK(same_file(path_of("s.csv"), path_of("want.csv")),
          "list: the statistics are not the single runs' records in order under one header");
    for (int i = 0; i < NCLIP; i++)
      CHECK(same_file(path_of("heat/%c.y4m", 'a' + i), path_of("single/%d.y4m", i)),
            "list: heat/%c.y4m is not the single run's", 'a' + i);
    rc = many(list, NCLIP, NULL, path_of("s.jsonl"), 0, 0, NULL, &h, &k, NULL);
    CHECK(rc == ES_OK && same_file(path_of("s.jsonl"), path_of("want.jsonl")),
          "list: the JSON lines are not the single runs' records in order");
    CHECK(tv_dir_entries(g_dir) == 8, "list: %d entries in the directory (temporaries left?)",
          tv_dir_entries(g_dir));
  }

  /* ---- Two inputs of one output name: refused before any work. */
  {
    const char *clash[2] = {ins[0], path_of("other/a.y4m")};
    CHECK(write_y4m(clash[1], 32, 32, 2, 1) == 0, "write other/a.y4m");
    rc = many(clash, 2, path_of("heat2"), path_of("s2.csv"), 0, 1, NULL, &h, &k, &made_ctx);
    CHECK(rc == ES_ERR_USAGE && k.exit_code == 1, "clash: status %d, exit %d", rc, k.exit_code);
    CHECK(h.lines == 1 && strstr(h.text, "heat2/a.y4m: both ") && strstr(h.text, "clips/a.y4m and ") &&
              strstr(h.text, "other/a.y4m would be written there"),
          "clash: said %d line(s): %s", h.lines, h.text);
    CHECK(!k.started && !made_ctx && k.ran == 0, "clash: work began (started %d, context %d)",
          k.started, made_ctx);
    CHECK(!tv_exists(path_of("heat2")) && !tv_exists(path_of("s2.csv")),
          "clash: an output was created");
  }

  /* ---- An input that is not a video among good ones: it fails alone. */
  {
    const char *bad[3] = {ins[0], path_of("other/junk.y4m"), ins[2]};
    const int good[2] = {0, 2};
    CHECK(tv_write_file(bad[1], "not a video at all\n", 19) == 0, "write junk");
    expected_join(path_of("want3.csv"), "csv", good, 2, 1);
    atomic_store(&g_lib_lines, 0);
    rc = many(bad, 3, path_of("heat3"), path_of("s3.csv"), 0, 0, NULL, &h, &k, NULL);
    CHECK(k.exit_code == 2 && rc == ES_ERR_INPUT, "bad: status %d, exit %d", rc, k.exit_code);
    CHECK(k.ran == 3 && k.failed == 1 && k.frames == g_n[0] + g_n[2],
          "bad: %zu ran, %zu failed, %lld frames", k.ran, k.failed, (long long)k.frames);
    CHECK(h.lines + atomic_load(&g_lib_lines) == 1, "bad: said %d times (%s)",
          h.lines + atomic_load(&g_lib_lines), h.text);
    CHECK(same_file(path_of("s3.csv"), path_of("want3.csv")), "bad: the others' records differ");
    CHECK(same_file(path_of("heat3/a.y4m"), path_of("single/0.y4m")) &&
              same_file(path_of("heat3/c.y4m"), path_of("single/2.y4m")) &&
              !tv_exists(path_of("heat3/junk.y4m")),
          "bad: the others' heat videos are not the single runs', or the bad one's is left");
  }

  /* ---- Existing heat videos: refused, kept (skip), and with skip alone not run at all. */
  {
    const char *mark = "kept as it was\n";
    size_t len = 0;
    CHECK(tv_write_file(path_of("heat/b.y4m"), mark, strlen(mark)) == 0, "mark heat/b.y4m");
    rc = many(list, NCLIP, path_of("heat"), path_of("s4.csv"), 0, 0, NULL, &h, &k, &made_ctx);
    CHECK(rc == ES_ERR_OUTPUT && k.exit_code == 3 && h.overwrite == 1 && !made_ctx &&
              strstr(h.text, "heat/a.y4m: exists\n") && !tv_exists(path_of("s4.csv")),
          "exists: status %d, exit %d, %d param(s): %s", rc, k.exit_code, h.overwrite, h.text);
    rc = many(list, NCLIP, path_of("heat"), path_of("s4.csv"), 1, 0, NULL, &h, &k, NULL);
    CHECK(rc == ES_OK && h.lines == NCLIP && strstr(h.text, "heat/b.y4m: exists, skipped"),
          "skip: status %d, said: %s", rc, h.text);
    uint8_t *b = tv_read_file(path_of("heat/b.y4m"), &len);
    CHECK(b && len == strlen(mark) && !memcmp(b, mark, len), "skip: heat/b.y4m was replaced");
    free(b);
    CHECK(same_file(path_of("s4.csv"), path_of("want.csv")),
          "skip: the statistics are not every video's records (the outputs kept)");
    CHECK(k.ran == NCLIP && k.frames == g_n[0] + g_n[1] + g_n[2], "skip: %zu ran", k.ran);
    rc = many(list, NCLIP, path_of("heat"), NULL, 1, 0, NULL, &h, &k, NULL);
    CHECK(rc == ES_OK && k.videos == 0 && k.ran == 0 && k.frames == 0,
          "skip without statistics: %zu videos run, %lld frames", k.ran, (long long)k.frames);
  }

  /* ---- A share: its videos, and their records only. */
  {
    const unsigned char share[NCLIP] = {0, 1, 1};
    const int mine[2] = {1, 2};
    expected_join(path_of("want5.csv"), "csv", mine, 2, 1);
    rc = many(list, NCLIP, path_of("heat5"), path_of("s5.csv"), 0, 0, share, &h, &k, NULL);
    CHECK(rc == ES_OK && k.videos == 2 && k.ran == 2 && !tv_exists(path_of("heat5/a.y4m")) &&
              same_file(path_of("s5.csv"), path_of("want5.csv")),
          "share: status %d, %zu videos, %zu ran", rc, k.videos, k.ran);
  }

  /* ---- A stop before any video began: none begins, the statistics file is the header. */
  {
    size_t len = 0;
    g_stop_now = 1;
    rc = many(list, NCLIP, path_of("heat6"), path_of("s6.csv"), 0, 0, NULL, &h, &k, NULL);
    g_stop_now = 0;
    uint8_t *b = tv_read_file(path_of("s6.csv"), &len);
    CHECK(rc == ES_ERR_INTERRUPTED && k.exit_code == 130 && k.interrupted && k.started &&
              k.videos == NCLIP && k.ran == 0 && k.frames == 0,
          "stop: status %d, exit %d, %zu of %zu videos ran", rc, k.exit_code, k.ran, k.videos);
    CHECK(b && len > 0 && memchr(b, '\n', len) == b + len - 1 && !strncmp((char *)b, "name,", 5),
          "stop: the statistics file is not the header alone");
    CHECK(!tv_exists(path_of("heat6")), "stop: the output directory made is left");
    free(b);
  }

  /* ---- A directory's videos, in name order; none where a still is among them. */
  rc = es_video_dir_list(path_of("clips"), &dirv, &ndir);
  CHECK(rc == 1 && ndir == NCLIP, "dir: %d, %zu videos", rc, ndir);
  for (size_t i = 0; rc == 1 && i < ndir && i < NCLIP; i++)
    CHECK(!strcmp(dirv[i], ins[i]), "dir: video %zu is %s, not %s", i, dirv[i], ins[i]);
  es_video_dir_free(&dirv, ndir);
  paths_tmp = path_of("clips/z.png");
  CHECK(tv_write_file(paths_tmp, "x", 1) == 0, "write z.png");
  rc = es_video_dir_list(path_of("clips"), &dirv, &ndir);
  CHECK(rc == 0 && !dirv && ndir == 0, "dir with a still: %d, %zu videos", rc, ndir);

  tv_sh("rm -rf '%s'", g_dir);
  for (int i = 0; i < NCLIP; i++) free(ins[i]);
  pthread_mutex_destroy(&h.lock);
  return es_test_done("test_pipeline_many");
}
