/*
 * test_io_stats.c - --stats files: CSV (header line, quoting, empty pts for NaN, empty name
 * for video frames) and JSON lines (null for NaN and missing names, hist as an array),
 * parsed back here and checked for exact round trips of every number; the extension rule
 * (.csv, .jsonl, .json, else ES_ERR_USAGE); and Python's csv/json modules reading both.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "es_io.h"
#include "es_test.h"

#define NREC 7

static double rnd_double(void) {
  return (double)(es_test_rand() >> 11) * 0x1.0p-53 * 8.0; /* any double in [0, 8) */
}

typedef struct rec {
  const char *name;
  int64_t index;
  double pts;
  int w, h;
  int damaged; /* the damaged column: 0 where written by es_stats_writer_add */
  es_stats st;
} rec;

/* Even records through es_stats_writer_add (damaged 0), odd ones through
 * es_stats_writer_add_frame with their damaged mark. */
static int add_rec(es_stats_writer *w, const rec *r, int i, char *msg, size_t len) {
  if (i % 2 == 0)
    return es_stats_writer_add(w, r->name, r->index, r->pts, r->w, r->h, &r->st, msg, len);
  return es_stats_writer_add_frame(w, r->name, r->index, r->pts, r->w, r->h, r->damaged, &r->st,
                                   msg, len);
}

static void make_recs(rec *r, int bins) {
  static const char *names[NREC] = {"a.png", "dir/b c.png", "comma,name.png", "quote\"d.png",
                                    NULL, NULL, "caf\xc3\xa9.png"};
  for (int i = 0; i < NREC; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].name = names[i];
    r[i].index = i;
    r[i].pts = i == 5 ? NAN : i * 0.04;
    r[i].w = es_test_range(1, 20000);
    r[i].h = es_test_range(1, 20000);
    r[i].st.bins = bins;
    r[i].st.count = (int64_t)r[i].w * r[i].h;
    r[i].st.mean = rnd_double();
    r[i].st.std = rnd_double() / 3;
    r[i].st.min = (float)rnd_double();
    r[i].st.max = (float)rnd_double();
    r[i].st.global_entropy = rnd_double();
    r[i].st.global_entropy_levels = rnd_double();
    r[i].damaged = i % 2 ? i != 3 : 0; /* odd: 1, 0 (i 3), 1 */
    for (int b = 0; b < bins; b++) r[i].st.hist[b] = es_test_rand() >> es_test_range(1, 63);
  }
  r[0].st.min = 0.0f;
  r[1].st.max = 4.0f;
  /* Whole numbers of two or more digits: "10", "20", not the shortest %g, "1e+01" (a video
   * starting at 10 s had pts 1e+01; -L 1024 can give a global entropy of 10 bits). */
  r[6].pts = 10.0;
  r[6].st.global_entropy = 20.0;
  r[6].st.global_entropy_levels = 16.0;
  r[6].st.max = 10.0f;
}

/* Splits one CSV line into fields (RFC 4180 quoting). Returns the count. */
static int csv_split(char *line, char **f, int maxf) {
  int n = 0;
  char *p = line;
  while (n < maxf) {
    if (*p == '"') {
      char *o = ++p;
      f[n++] = o;
      for (;;) {
        if (*p == '"' && p[1] == '"') *o++ = '"', p += 2;
        else if (*p == '"') { p++; break; }
        else if (!*p) break;
        else *o++ = *p++;
      }
      *o = 0;
      if (*p == ',') p++;
      else break;
    } else {
      f[n++] = p;
      char *c = strchr(p, ',');
      if (!c) break;
      *c = 0;
      p = c + 1;
    }
  }
  return n;
}

static void test_csv(const char *dir, rec *r, int bins) {
  char path[512], msg[256];
  snprintf(path, sizeof path, "%s/s.csv", dir);
  es_stats_writer *w = NULL;
  CHECK(es_stats_writer_open(&w, path, 0, bins, msg, sizeof msg) == ES_OK, "csv open: %s", msg);
  for (int i = 0; i < NREC && w; i++)
    CHECK(add_rec(w, &r[i], i, msg, sizeof msg) == ES_OK, "csv add %d: %s", i, msg);
  CHECK(access(path, F_OK) != 0, "csv visible before close");
  CHECK(es_stats_writer_close(&w, 1, msg, sizeof msg) == ES_OK && !w, "csv close: %s", msg);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "no csv");
  if (!f) return;
  static char line[65536];
  char *fl[ES_STATS_MAX_BINS + 16];
  CHECK(fgets(line, sizeof line, f) != NULL, "no header");
  line[strcspn(line, "\n")] = 0;
  int nf = csv_split(line, fl, ES_STATS_MAX_BINS + 16);
  static const char *want[] = {"name", "index", "pts", "width", "height", "mean",
                               "std", "min", "max", "global_entropy",
                               "global_entropy_levels", "damaged", "hist_0"};
  CHECK(nf == 12 + bins, "header has %d fields", nf);
  for (int i = 0; i < 13 && i < nf; i++) CHECK(!strcmp(fl[i], want[i]), "header field %d: %s", i, fl[i]);
  char hb[32];
  snprintf(hb, sizeof hb, "hist_%d", bins - 1);
  CHECK(nf == 12 + bins && !strcmp(fl[nf - 1], hb), "last header field");
  for (int i = 0; i < NREC; i++) {
    if (!fgets(line, sizeof line, f)) {
      CHECK(0, "record %d missing", i);
      break;
    }
    line[strcspn(line, "\n")] = 0;
    nf = csv_split(line, fl, ES_STATS_MAX_BINS + 16);
    CHECK(nf == 12 + bins, "record %d has %d fields", i, nf);
    if (nf != 12 + bins) continue;
    CHECK(!strcmp(fl[0], r[i].name ? r[i].name : ""), "record %d name \"%s\"", i, fl[0]);
    CHECK(strtoll(fl[1], NULL, 10) == r[i].index, "index");
    if (isnan(r[i].pts)) CHECK(fl[2][0] == 0, "NaN pts written as \"%s\"", fl[2]);
    else CHECK(strtod(fl[2], NULL) == r[i].pts, "pts %s vs %.17g", fl[2], r[i].pts);
    CHECK(atoi(fl[3]) == r[i].w && atoi(fl[4]) == r[i].h, "size");
    CHECK(strtod(fl[5], NULL) == r[i].st.mean, "mean %s vs %.17g", fl[5], r[i].st.mean);
    CHECK(strtod(fl[6], NULL) == r[i].st.std, "std %s", fl[6]);
    CHECK(strtof(fl[7], NULL) == r[i].st.min, "min %s vs %.9g", fl[7], r[i].st.min);
    CHECK(strtof(fl[8], NULL) == r[i].st.max, "max %s", fl[8]);
    CHECK(strtod(fl[9], NULL) == r[i].st.global_entropy, "global entropy %s", fl[9]);
    CHECK(strtod(fl[10], NULL) == r[i].st.global_entropy_levels, "global entropy levels %s",
          fl[10]);
    if (i == 6)
      CHECK(!strcmp(fl[2], "10") && !strcmp(fl[8], "10") && !strcmp(fl[9], "20") &&
                !strcmp(fl[10], "16"),
            "whole numbers written as pts %s, max %s, global entropy %s, %s (want 10, 10, 20, 16)",
            fl[2], fl[8], fl[9], fl[10]);
    CHECK(!strcmp(fl[11], r[i].damaged ? "1" : "0"), "record %d damaged %s, want %d", i, fl[11],
          r[i].damaged);
    for (int b = 0; b < bins; b++)
      if (strtoull(fl[12 + b], NULL, 10) != r[i].st.hist[b]) {
        CHECK(0, "record %d hist %d: %s", i, b, fl[12 + b]);
        break;
      }
  }
  CHECK(!fgets(line, sizeof line, f), "extra lines");
  fclose(f);
}

/* Minimal reader for the writer's own JSON line: finds "key": and returns the text after. */
static const char *json_val(const char *line, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(line, k);
  return p ? p + strlen(k) : NULL;
}

static void test_jsonl(const char *dir, rec *r, int bins, const char *ext) {
  char path[512], msg[256];
  snprintf(path, sizeof path, "%s/s%s", dir, ext);
  es_stats_writer *w = NULL;
  CHECK(es_stats_writer_open(&w, path, 0, bins, msg, sizeof msg) == ES_OK, "jsonl open: %s", msg);
  for (int i = 0; i < NREC && w; i++)
    CHECK(add_rec(w, &r[i], i, msg, sizeof msg) == ES_OK, "jsonl add %d: %s", i, msg);
  CHECK(es_stats_writer_close(&w, 1, msg, sizeof msg) == ES_OK, "jsonl close: %s", msg);
  FILE *f = fopen(path, "r");
  if (!f) {
    CHECK(0, "no %s", path);
    return;
  }
  static char line[65536];
  for (int i = 0; i < NREC; i++) {
    if (!fgets(line, sizeof line, f)) {
      CHECK(0, "json record %d missing", i);
      break;
    }
    CHECK(line[0] == '{' && strstr(line, "}\n"), "record %d is not one object per line", i);
    const char *v = json_val(line, "name");
    if (!r[i].name) CHECK(v && !strncmp(v, "null", 4), "name null");
    if (i == 2) CHECK(v && !strncmp(v, "\"comma,name.png\"", 16), "name: %.20s", v);
    if (i == 3) CHECK(v && !strncmp(v, "\"quote\\\"d.png\"", 14), "escaped name: %.20s", v);
    v = json_val(line, "pts");
    if (isnan(r[i].pts)) CHECK(v && !strncmp(v, "null", 4), "NaN pts: %.10s", v);
    else CHECK(v && strtod(v, NULL) == r[i].pts, "pts");
    if (i == 6) CHECK(v && !strncmp(v, "10,", 3), "JSON pts 10 written as %.10s", v);
    v = json_val(line, "index");
    CHECK(v && strtoll(v, NULL, 10) == r[i].index, "index");
    v = json_val(line, "mean");
    CHECK(v && strtod(v, NULL) == r[i].st.mean, "mean");
    v = json_val(line, "min");
    CHECK(v && strtof(v, NULL) == r[i].st.min, "min");
    v = json_val(line, "global_entropy");
    CHECK(v && strtod(v, NULL) == r[i].st.global_entropy, "global_entropy");
    v = json_val(line, "global_entropy_levels");
    CHECK(v && strtod(v, NULL) == r[i].st.global_entropy_levels, "global_entropy_levels");
    v = json_val(line, "damaged");
    CHECK(v && !strncmp(v, r[i].damaged ? "1," : "0,", 2), "record %d damaged: %.4s", i, v);
    v = json_val(line, "hist");
    CHECK(v && *v == '[', "hist is not an array");
    for (int b = 0; v && *v && b < bins; b++) {
      char *e;
      unsigned long long h = strtoull(v + 1, &e, 10);
      if (h != r[i].st.hist[b]) {
        CHECK(0, "json hist %d", b);
        break;
      }
      v = e;
    }
    CHECK(v && *v == ']', "hist has more than %d bins", bins);
  }
  fclose(f);
}

/* File names that are not UTF-8: every byte that does not start a valid sequence becomes
 * \ufffd, so the JSON line is UTF-8. F5..FF never start one (F5..F7 once passed for 3-byte
 * leads, and a name like "a\xf5\x80\x80b.png" made a line no JSON reader could decode). */
static void test_json_not_utf8(const char *dir) {
  static const struct {
    const char *name, *want;
  } cases[] = {
      {"a\xf5\x80\x80"
       "b.png",
       "\"a\\ufffd\\ufffd\\ufffdb.png\""},
      {"\xf8\x88\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"\xff\xfe", "\"\\ufffd\\ufffd\""},
      {"\xc1\xbf", "\"\\ufffd\\ufffd\""},
      {"\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xe2\x82\xac\xf0\x9f\x98\x80\""},
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},
  };
  char path[512], msg[256];
  snprintf(path, sizeof path, "%s/u.jsonl", dir);
  es_stats_writer *w = NULL;
  es_stats st;
  memset(&st, 0, sizeof st);
  st.bins = 1;
  CHECK(es_stats_writer_open(&w, path, 0, 1, msg, sizeof msg) == ES_OK, "open: %s", msg);
  for (size_t i = 0; w && i < sizeof cases / sizeof *cases; i++)
    CHECK(es_stats_writer_add(w, cases[i].name, (int64_t)i, 0, 1, 1, &st, msg, sizeof msg) == ES_OK,
          "add: %s", msg);
  CHECK(es_stats_writer_close(&w, 1, msg, sizeof msg) == ES_OK, "close: %s", msg);
  FILE *f = fopen(path, "r");
  char line[1024];
  for (size_t i = 0; f && i < sizeof cases / sizeof *cases; i++) {
    const char *v = fgets(line, sizeof line, f) ? json_val(line, "name") : NULL;
    CHECK(v && !strncmp(v, cases[i].want, strlen(cases[i].want)), "name %zu written as %.40s", i,
          v ? v : "(none)");
  }
  if (f) fclose(f);
  unlink(path);
}

int main(void) {
  es_test_seed("test_io_stats");
  char msg[256], dir[] = "/tmp/es_test_io_stats.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  int bins = es_test_range(1, 40);
  rec *r = malloc(sizeof(rec) * NREC);
  make_recs(r, bins);
  test_csv(dir, r, bins);
  test_jsonl(dir, r, bins, ".jsonl");
  test_jsonl(dir, r, bins, ".json");
  test_json_not_utf8(dir);

  /* the extension rule, and the checks of open */
  es_stats_writer *w = NULL;
  static const char *bad[] = {"stats.txt", "stats", "dir.csv/stats", "stats.csv.gz", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int st = es_stats_writer_open(&w, bad[i], 1, 16, msg, sizeof msg);
    CHECK(st == ES_ERR_USAGE && !w && !strcmp(msg, "stats FILE: must end in .csv or .jsonl (or be -)"),
          "\"%s\": %d %s", bad[i], st, msg);
  }
  char path[600];
  snprintf(path, sizeof path, "%s/S.CSV", dir);
  CHECK(es_stats_writer_open(&w, path, 0, 16, msg, sizeof msg) == ES_OK, "upper-case .CSV: %s", msg);
  CHECK(es_stats_writer_close(&w, 0, msg, sizeof msg) == ES_OK && access(path, F_OK) != 0,
        "close without commit left a file");
  snprintf(path, sizeof path, "%s/s.csv", dir);
  CHECK(es_stats_writer_open(&w, path, 0, 16, msg, sizeof msg) == ES_ERR_OUTPUT && !w,
        "existing: %s", msg);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  CHECK(es_stats_writer_open(&w, path, 0, 0, msg, sizeof msg) == ES_ERR_USAGE, "0 bins");
  CHECK(es_stats_writer_open(&w, path, 0, bins, msg, sizeof msg) == ES_OK, "open: %s", msg);
  es_stats other = r[0].st;
  other.bins = bins + 1;
  CHECK(es_stats_writer_add(w, "x", 0, 0, 1, 1, &other, msg, sizeof msg) == ES_ERR_INTERNAL,
        "bins mismatch accepted");
  es_stats_writer_close(&w, 0, msg, sizeof msg);
  CHECK(es_stats_writer_close(&w, 1, msg, sizeof msg) == ES_OK, "close(NULL)");

  /* "-": CSV on standard output, header first */
  {
    char out[600];
    snprintf(out, sizeof out, "%s/stdout.txt", dir);
    fflush(stdout);
    int saved = dup(1);
    FILE *o = fopen(out, "w");
    dup2(fileno(o), 1);
    fclose(o);
    int s1 = es_stats_writer_open(&w, "-", 0, 2, msg, sizeof msg);
    es_stats two = r[0].st;
    two.bins = 2;
    two.hist[0] = 5;
    two.hist[1] = 6;
    int s2 = s1 ? s1 : es_stats_writer_add(w, NULL, 3, 0.12, 4, 5, &two, msg, sizeof msg);
    int s3 = es_stats_writer_close(&w, 1, msg, sizeof msg);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK(s1 == ES_OK && s2 == ES_OK && s3 == ES_OK, "stdout: %d %d %d %s", s1, s2, s3, msg);
    char line[512] = "";
    FILE *in = fopen(out, "r");
    CHECK(in && fgets(line, sizeof line, in) &&
              !strcmp(line, "name,index,pts,width,height,mean,std,min,max,global_entropy,"
                            "global_entropy_levels,damaged,hist_0,hist_1\n"),
          "stdout header: %s", line);
    CHECK(in && fgets(line, sizeof line, in) && !strncmp(line, ",3,0.12,4,5,", 12) &&
              strstr(line, ",5,6\n"),
          "stdout record: %s", line);
    if (in) fclose(in);
    unlink(out);
  }

  /* Python's csv and json modules read the files the same */
  const char *py = getenv("ES_PYTHON3");
  if (!py || !*py) py = "/usr/bin/python3";
  if (access(py, X_OK) == 0) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import csv, json, math\n"
             "rows=list(csv.DictReader(open('%s/s.csv', newline='', encoding='utf-8')))\n"
             "js=[json.loads(l) for l in open('%s/s.jsonl', encoding='utf-8')]\n"
             "assert len(rows)==%d and len(js)==%d\n"
             "for c, j in zip(rows, js):\n"
             "  assert c['name']==(j['name'] or ''), (c['name'], j['name'])\n"
             "  assert (c['pts']=='' and j['pts'] is None) or float(c['pts'])==j['pts']\n"
             "  for k in ('mean','std','min','max','global_entropy','global_entropy_levels'): assert float(c[k])==j[k], k\n"
             "  assert int(c['damaged'])==j['damaged'] and j['damaged'] in (0, 1)\n"
             "  assert [int(c['hist_%%d'%%b]) for b in range(%d)]==j['hist']\n"
             "assert rows[2]['name']=='comma,name.png' and rows[3]['name']=='quote\\\"d.png'\n"
             "assert js[6]['name']=='caf\\u00e9.png'\n"
             "print('python csv/json: ok')\"",
             py, dir, dir, NREC, NREC, bins);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "python csv/json check failed");
  }
  snprintf(path, sizeof path, "%s/s.csv", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/s.jsonl", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/s.json", dir);
  unlink(path);
  CHECK(rmdir(dir) == 0, "temporary files left in %s", dir);
  free(r);
  return es_test_done("test_io_stats");
}
