/*
 * test_pipeline_shard.c - the rules of --shard (pipeline/shard.c): "I/N" and Slurm's
 * variables parsed (job arrays with a minimum id and a step, srun steps, both, and the batch
 * shell that is neither); the files of a batch split into runs in name order, every file in
 * exactly one share for any N, balanced by pixel count; a video's frames split at keyframes,
 * every frame in exactly one share, and each share decoded from its keyframe (the reader's
 * seek) giving exactly its own frames.
 */
#include "es_test.h"
#include "es_test_video.h"

#include "entropy_stream.h"
#include "es_io.h"

static const char *slurm_vars[] = {"SLURM_ARRAY_TASK_ID",  "SLURM_ARRAY_TASK_COUNT",
                                   "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP",
                                   "SLURM_STEP_ID",        "SLURM_PROCID",
                                   "SLURM_NTASKS",         "SLURM_STEP_NUM_TASKS"};

static void slurm_clear(void) {
  for (size_t i = 0; i < sizeof slurm_vars / sizeof *slurm_vars; i++) unsetenv(slurm_vars[i]);
}

/* Parses spec; returns the status, the share in *sh. */
static int parse(const char *spec, es_shard *sh) {
  char msg[256] = "";
  sh->index = sh->count = -1;
  int rc = es_shard_parse(spec, sh, msg, sizeof msg);
  if (rc != ES_OK) CHECK(msg[0] != 0, "%s: an error without a message", spec);
  return rc;
}

static void test_parse(void) {
  es_shard sh;
  static const char *bad[] = {"4/4", "-1/4", "1/0", "0/0", "a/4", "1/b", "1", "/4", "1/",
                              "1/4/2", " 1/4", "1/4 ", "+1/4", "0/100001", "slurmy", ""};
  CHECK(parse("0/1", &sh) == ES_OK && sh.index == 0 && sh.count == 1, "0/1");
  CHECK(parse("3/4", &sh) == ES_OK && sh.index == 3 && sh.count == 4, "3/4: %d/%d", sh.index,
        sh.count);
  CHECK(parse("99999/100000", &sh) == ES_OK && sh.count == 100000, "the largest N");
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(parse(bad[i], &sh) == ES_ERR_USAGE, "'%s' was taken as %d/%d", bad[i], sh.index,
          sh.count);

  slurm_clear();
  CHECK(parse("slurm", &sh) == ES_ERR_USAGE, "slurm outside Slurm was taken");
  /* sbatch --array=2-5: ids 2..5, the task of id 4 is the third. */
  setenv("SLURM_ARRAY_TASK_ID", "4", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "2", 1);
  CHECK(parse("slurm", &sh) == ES_OK && sh.index == 2 && sh.count == 4, "array 2-5, id 4: %d/%d",
        sh.index, sh.count);
  /* --array=1-7:2: ids 1, 3, 5, 7. */
  setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);
  setenv("SLURM_ARRAY_TASK_STEP", "2", 1);
  CHECK(parse("slurm", &sh) == ES_OK && sh.index == 3 && sh.count == 4, "array 1-7:2, id 7: %d/%d",
        sh.index, sh.count);
  /* --array=1,5,9: no step, ids not in a row: refused, not guessed. */
  setenv("SLURM_ARRAY_TASK_ID", "9", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  unsetenv("SLURM_ARRAY_TASK_STEP");
  CHECK(parse("slurm", &sh) == ES_ERR_USAGE, "array 1,5,9 was taken as %d/%d", sh.index, sh.count);
  /* The batch shell of --ntasks=4 (no step): the array task alone. */
  setenv("SLURM_ARRAY_TASK_ID", "2", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_PROCID", "0", 1);
  CHECK(parse("slurm", &sh) == ES_OK && sh.index == 2 && sh.count == 4,
        "the batch shell took its SLURM_NTASKS: %d/%d", sh.index, sh.count);
  /* srun -n 4 inside array task 2 of 4: task 3 of the step is share 2*4+3 of 16. */
  setenv("SLURM_STEP_ID", "0", 1);
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  CHECK(parse("slurm", &sh) == ES_OK && sh.index == 11 && sh.count == 16,
        "array task under srun: %d/%d", sh.index, sh.count);
  /* srun -n 3 alone (no array): SLURM_NTASKS where the step's count is not given. */
  slurm_clear();
  setenv("SLURM_STEP_ID", "0", 1);
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "3", 1);
  CHECK(parse("slurm", &sh) == ES_OK && sh.index == 1 && sh.count == 3, "srun -n 3: %d/%d",
        sh.index, sh.count);
  setenv("SLURM_PROCID", "x", 1);
  CHECK(parse("slurm", &sh) == ES_ERR_USAGE, "a SLURM_PROCID of x was taken");
  slurm_clear();
}

/* A file holding a PNG signature and IHDR of w x h (all es_png_size reads). */
static void png_header(const char *path, uint32_t w, uint32_t h) {
  unsigned char b[33] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                         'I',  'H', 'D', 'R'};
  for (int i = 0; i < 4; i++) {
    b[16 + i] = (unsigned char)(w >> (24 - 8 * i));
    b[20 + i] = (unsigned char)(h >> (24 - 8 * i));
  }
  b[24] = 8;
  tv_write_file(path, b, sizeof b);
}

static void test_files(const char *dir) {
  enum { NF = 37 };
  char *paths[NF + 1];
  uint64_t w[NF + 1], total = 0;
  int share[NF + 1];
  for (int i = 0; i <= NF; i++) {
    paths[i] = malloc(strlen(dir) + 32);
    sprintf(paths[i], "%s/f%03d.png", dir, i);
  }
  /* Equal sizes: shares differ by one file at most. */
  for (int i = 0; i < NF; i++) png_header(paths[i], 64, 48);
  for (int n = 1; n <= NF + 5; n++) {
    int cnt[NF + 8] = {0};
    CHECK(es_shard_files(n, (const char *const *)paths, NF, share) == ES_OK, "N %d", n);
    for (int i = 0; i < NF; i++) {
      CHECK(share[i] >= 0 && share[i] < n, "N %d: file %d in share %d", n, i, share[i]);
      CHECK(i == 0 ? share[i] == 0 : share[i] >= share[i - 1], "N %d: not runs in name order", n);
      cnt[share[i]]++;
    }
    for (int k = 0; k < n; k++)
      CHECK(cnt[k] == NF / n || cnt[k] == (NF + n - 1) / n, "N %d: share %d has %d files", n, k,
            cnt[k]);
  }
  /* Sizes that vary, and a file that is no PNG (its size unknown: it weighs the PNGs'
   * average, so that a directory of JPEGs and PNGs stays balanced): balanced by pixels,
   * each share within one file's weight of an N-th. */
  for (int i = 0; i < NF; i++) {
    uint32_t a = (uint32_t)es_test_range(1, 3000), b = (uint32_t)es_test_range(1, 3000);
    png_header(paths[i], a, b);
    w[i] = (uint64_t)a * b;
  }
  tv_write_file(paths[NF], "not a png", 9);
  w[NF] = 0;
  for (int i = 0; i < NF; i++) w[NF] += w[i];
  w[NF] /= NF;
  for (int i = 0; i <= NF; i++) total += w[i];
  for (int n = 1; n <= 12; n++) {
    uint64_t sum[12] = {0}, wmax = 0;
    CHECK(es_shard_files(n, (const char *const *)paths, NF + 1, share) == ES_OK, "N %d", n);
    for (int i = 0; i <= NF; i++) {
      CHECK(share[i] >= 0 && share[i] < n && (i == 0 || share[i] >= share[i - 1]),
            "N %d: file %d in share %d", n, i, share[i]);
      sum[share[i]] += w[i];
      if (w[i] > wmax) wmax = w[i];
    }
    for (int k = 0; k < n; k++)
      CHECK(sum[k] <= total / n + wmax, "N %d: share %d has %" PRIu64 " pixels of %" PRIu64, n, k,
            sum[k], total);
  }
  CHECK(es_shard_files(0, (const char *const *)paths, NF, share) == ES_ERR_USAGE, "N 0");
  for (int i = 0; i <= NF; i++) free(paths[i]);
}

/* Decodes share sh of the video as the CLI does (seek, then es_shard_frame): its frames. */
static int64_t decode_share(const char *path, const es_shard_range *r, int64_t *first_pts) {
  es_video_in *vin = NULL;
  es_video_in_opts o = {.raw = NULL};
  es_video_info info;
  char msg[256] = "";
  int64_t kept = 0;
  uint8_t *buf;
  o.seek = r->seek;
  o.seek_ts = r->seek_ts;
  if (es_video_in_open(&vin, path, &o, &info, msg, sizeof msg) != ES_OK) {
    CHECK(0, "open %s: %s", path, msg);
    return -1;
  }
  buf = malloc((size_t)info.width * info.height);
  for (;;) {
    int64_t pts;
    double s;
    int rc = es_video_in_read(vin, buf, (size_t)info.width, &pts, &s, msg, sizeof msg);
    if (rc == ES_ERR_EOF) break;
    if (rc != ES_OK) {
      CHECK(0, "read %s: %s", path, msg);
      break;
    }
    int where = es_shard_frame(r, pts);
    if (where > 0) break;
    if (where < 0) continue;
    if (!kept++) *first_pts = pts;
  }
  free(buf);
  es_video_in_close(&vin);
  return kept;
}

static void test_video(const char *dir) {
  /* H.264 with B-frames (presentation order differs from decode order) and keyframes every
   * 10 and every 7 frames; Matroska and MP4 (whose index keeps decode times). */
  static const char *kinds[][2] = {{"a.mp4", "-g 10 -sc_threshold 0"}, {"b.mkv", "-g 7 -bf 3 -sc_threshold 0"}};
  int decoded = 0;
  if (!tv_need_ffmpeg("test_pipeline_shard (video)")) return;
  for (size_t v = 0; v < 2; v++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, kinds[v][0]);
    if (tv_sh("ffmpeg -v error -f lavfi -i testsrc2=s=96x64:r=25 -frames:v 100 -c:v libx264 "
              "%s -y %s",
              kinds[v][1], path) != 0) {
      printf("test_pipeline_shard: no libx264 in ffmpeg: video skipped\n");
      return;
    }
    for (int n = 1; n <= 12; n++) {
      int64_t next = 0;
      for (int k = 0; k < n; k++) {
        es_shard sh = {k, n};
        es_shard_range r;
        char msg[256] = "";
        int64_t first_pts = INT64_MIN;
        CHECK(es_shard_video(&sh, path, &r, msg, sizeof msg) == ES_OK, "%s %d/%d: %s", path, k,
              n, msg);
        CHECK(r.total == 100, "%s: %" PRId64 " frames", path, r.total);
        CHECK(r.first == next, "%s %d/%d: starts at frame %" PRId64 ", not %" PRId64, path, k, n,
              r.first, next);
        next = r.first + r.frames;
        if (n > 1 && (k == 0 || k == n - 1 || k == n / 2) && r.frames > 0) {
          int64_t got = decode_share(path, &r, &first_pts);
          decoded++;
          CHECK(got == r.frames, "%s %d/%d: decoded %" PRId64 " frames of %" PRId64, path, k, n,
                got, r.frames);
          CHECK(k == 0 || first_pts == r.start_ts, "%s %d/%d: first frame at %" PRId64
                ", not %" PRId64, path, k, n, first_pts, r.start_ts);
        }
      }
      CHECK(next == 100, "%s N %d: the shares end at frame %" PRId64, path, n, next);
    }
    /* 4 shares of keyframes every 10 frames: cut at 20, 50, 70 (25 and 75 are as near to
     * 20 as 30 and 70 as 80: the earlier). */
    {
      int64_t want[4] = {0, 20, 50, 70};
      for (int k = 0; k < 4 && v == 0; k++) {
        es_shard sh = {k, 4};
        es_shard_range r;
        char msg[256];
        es_shard_video(&sh, path, &r, msg, sizeof msg);
        CHECK(r.first == want[k], "share %d/4 starts at %" PRId64 ", not %" PRId64, k, r.first,
              want[k]);
      }
    }
  }
  printf("test_pipeline_shard: 2 videos split 1..12 ways, %d shares decoded from their "
         "keyframes\n", decoded);
}

int main(void) {
  char dir[] = "/tmp/es_shard_XXXXXX";
  es_test_seed("test_pipeline_shard");
  if (!mkdtemp(dir)) return 1;
  test_parse();
  test_files(dir);
  test_video(dir);
  tv_sh("rm -rf %s", dir);
  return es_test_done("test_pipeline_shard");
}
