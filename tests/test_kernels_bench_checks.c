/*
 * test_kernels_bench_checks.c - entropy-bench's own checks, compiled in from the tool (its
 * main renamed): the error beside a time must see a map the run did not write (NaN poison
 * anywhere in it, not only at the end), and --json must stay valid JSON whatever a row holds
 * (a NaN error, a message with quotes). Not a timing test.
 */
#define main entropy_bench_main
#include "../tools/entropy-bench.c"
#undef main

#include "es_test.h"

/* A map equal to the reference but for one poisoned (0xff bytes: NaN) pixel at `at`. */
static void poison_one(float *map, size_t at) { memset(&map[at], 0xff, sizeof *map); }

static void test_max_diff(void) {
  enum { N = 64 };
  float a[N], b[N];
  for (int i = 0; i < N; i++)
    a[i] = b[i] = (float)i * 0.25f;
  CHECK(max_diff(a, b, N) == 0.0, "equal maps: %g", max_diff(a, b, N));
  for (size_t at = 0; at < N; at += 7) {
    memcpy(b, a, sizeof b);
    poison_one(b, at);
    double e = max_diff(a, b, N);
    CHECK(isnan(e), "a NaN at %zu of %d not reported: err %g", at, N, e);
  }
  memcpy(b, a, sizeof b);
  memset(b, 0xff, sizeof b); /* nothing written at all */
  CHECK(isnan(max_diff(a, b, N)), "an all-NaN map not reported");
}

static void test_check_ref(void) {
  /* Small (full double reference) and large (sampled) images, a NaN at a pixel each path
   * looks at: the first one (a corner, which the sampled path always checks). */
  static const int sizes[][2] = {{40, 30}, {1000, 1000}};
  for (int s = 0; s < 2; s++) {
    int w = sizes[s][0], h = sizes[s][1];
    uint8_t *data = make_levels(w, h, 16);
    float *map = malloc((size_t)w * h * sizeof *map);
    CHECK(data && map, "out of memory");
    if (!data || !map) {
      free(data);
      free(map);
      return;
    }
    es_image img = {data, w, h, (size_t)w, 8};
    es_params p;
    es_params_default(&p);
    p.window = 25;
    p.levels = 16;
    es_job job;
    char msg[256];
    fill_job(&job, &img, &p, map);
    CHECK(es_cpu_run(&job, 1, msg, sizeof msg) == ES_OK, "cpu run: %s", msg);
    const char *how = "";
    double e = check_ref(&img, &p, map, &how);
    CHECK(e <= 1e-5, "%dx%d: err %g (%s) of a correct map", w, h, e, how);
    poison_one(map, 0);
    e = check_ref(&img, &p, map, &how);
    CHECK(isnan(e), "%dx%d: a NaN at pixel 0 not reported: err %g (%s)", w, h, e, how);
    free(data);
    free(map);
  }
}

/* Reads a whole file (NUL-terminated); NULL on failure. */
static char *slurp(FILE *f) {
  long n;
  if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    return NULL;
  }
  if (s) s[n] = 0;
  return s;
}

static void test_json_row(void) {
  g_json = tmpfile();
  CHECK(g_json != NULL, "tmpfile");
  if (!g_json) return;
  g_json_rows = 0;
  row_out("case", "cpu engine", 8, 8, 3, 16, 1, 1.5, 5, NAN, "ref", "");
  row_out("case", "cpu engine", 8, 8, 3, 16, 1, 0.0, 5, INFINITY, "ref", "");
  row_out("case", "gpu x1 host-to-host", 8, 8, 3, 16, 0, -1, 0, 0, "",
          "GPU 0: cudaMemcpy: \"invalid argument\" at C:\\x\ttab");
  char *s = slurp(g_json);
  fclose(g_json);
  g_json = NULL;
  CHECK(s != NULL, "read back");
  if (!s) return;
  /* No bare nan/inf tokens; quotes and backslashes in notes escaped. */
  const char *bad[] = {"nan", "inf", "\"invalid", "\\x", "\t"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *hit = strstr(s, bad[i]);
    /* "\"invalid" is fine when preceded by a backslash (escaped) */
    if (hit && i == 2 && hit > s && hit[-1] == '\\') hit = NULL;
    if (hit && i == 3 && hit > s && hit[-1] == '\\') hit = NULL;
    CHECK(!hit, "JSON row holds %s: %s", bad[i], s);
  }
  CHECK(strstr(s, "\"max_abs_err\": null") != NULL, "a NaN error not written as null: %s", s);
  free(s);
}

/* A run that fails prints no time: cpu_rows on parameters the engines refuse (1 level) must
 * give untimed rows that say why, not the time of failed runs (the naive row timed its
 * failing calls; the engine rows went on to check a map nothing wrote). */
static void test_failed_cpu_rows(void) {
  enum { W = 32, H = 24 };
  uint8_t *data = make_levels(W, H, 16);
  float *map1 = malloc(W * H * sizeof *map1), *mapn = malloc(W * H * sizeof *mapn);
  if (!data || !map1 || !mapn) {
    CHECK(0, "out of memory");
    goto end;
  }
  memset(map1, 0, W * H * sizeof *map1);
  memset(mapn, 0, W * H * sizeof *mapn);
  es_image img = {data, W, H, W, 8};
  es_params p;
  es_params_default(&p);
  p.window = 5;
  p.levels = 1;
  bench_opts o;
  memset(&o, 0, sizeof o);
  o.reps = 2;
  o.threads = 2; /* an n-thread row too */
  g_json = tmpfile();
  g_json_rows = 0;
  CHECK(g_json != NULL, "tmpfile");
  if (!g_json) goto end;
  cpu_rows(&o, "case", &img, &p, map1, mapn, 1);
  char *s = slurp(g_json);
  fclose(g_json);
  g_json = NULL;
  CHECK(s && g_json_rows >= 2, "%d rows", g_json_rows);
  if (s) {
    CHECK(!strstr(s, "\"median_ms\": 0") && !strstr(s, "\"median_ms\": 1") &&
              !strstr(s, "\"reps\""),
          "a failed run timed: %s", s);
    CHECK(!strstr(s, "speed-up"), "a speed-up of failed runs: %s", s);
    CHECK(!strstr(s, "\"note\": \"\"}"), "an untimed row without a reason: %s", s);
  }
  free(s);
end:
  free(data);
  free(map1);
  free(mapn);
}

int main(void) {
  test_max_diff();
  test_check_ref();
  test_json_row();
  test_failed_cpu_rows();
  return es_test_done("test_kernels_bench_checks");
}
