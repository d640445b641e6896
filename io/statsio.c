/*
 * statsio.c - the statistics records of --stats: CSV with a header line, or JSON lines,
 * one record per image or frame (SPEC section 2). Numbers are printed in their shortest
 * form that reads back to the same double/float, so files are exact and still readable.
 * Files are written atomically; "-" is CSV on standard output.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "es_io.h"

enum { ES_STATS_CSV = 0, ES_STATS_JSONL = 1 };

struct es_stats_writer {
  es_atomic at; /* files */
  FILE *fp;     /* at.fp, or stdout */
  int is_stdout;
  int format;
  int bins;
  int failed;
};

/* A whole number in full, else the shortest %.Ng (N = 1..17) that strtod reads back as v.
 * Non-finite: "" (the caller writes an empty CSV field or JSON null). */
static void es_fmt_double(char *buf, size_t len, double v) {
  if (!isfinite(v)) {
    buf[0] = 0;
    return;
  }
  /* A whole number as such: the shortest %g of 10 is "1e+01" */
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, len, "%.0f", v);
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, len, "%.*g", p, v);
    if (strtod(buf, NULL) == v) return;
  }
}
static void es_fmt_float(char *buf, size_t len, float v) {
  if (!isfinite(v)) {
    buf[0] = 0;
    return;
  }
  if (v == floorf(v) && fabsf(v) < 1e7f) {
    snprintf(buf, len, "%.0f", (double)v);
    return;
  }
  for (int p = 1; p <= 9; p++) {
    snprintf(buf, len, "%.*g", p, (double)v);
    if (strtof(buf, NULL) == v) return;
  }
}

static int es_stats_format(const char *path) {
  if (!strcmp(path, "-")) return ES_STATS_CSV;
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) return -1;
  if (!strcasecmp(dot, ".csv")) return ES_STATS_CSV;
  if (!strcasecmp(dot, ".jsonl") || !strcasecmp(dot, ".json")) return ES_STATS_JSONL;
  return -1;
}

int es_stats_path_ok(const char *path) { return path && es_stats_format(path) >= 0; }

int es_stats_writer_open(es_stats_writer **out, const char *path, int overwrite, int bins,
                         char *msg, size_t len) {
  int status = ES_OK;
  *out = NULL;
  if (!path || es_stats_format(path) < 0) {
    snprintf(msg, len, "stats FILE: must end in .csv or .jsonl (or be -)");
    return ES_ERR_USAGE;
  }
  if ((status = es_param_check("stats_bins", bins, msg, len)) != ES_OK) return status;
  es_stats_writer *w = calloc(1, sizeof *w);
  if (!w) {
    snprintf(msg, len, "out of memory");
    return ES_ERR_NOMEM;
  }
  w->format = es_stats_format(path);
  w->bins = bins;
  if (!strcmp(path, "-")) {
    w->fp = stdout;
    w->is_stdout = 1;
  } else {
    status = es_atomic_open(&w->at, path, overwrite, msg, len);
    if (status) goto end;
    w->fp = w->at.fp;
  }
  if (w->format == ES_STATS_CSV) {
    fputs("name,index,pts,width,height,mean,std,min,max,global_entropy,global_entropy_levels,"
          "damaged",
          w->fp);
    for (int b = 0; b < bins; b++) fprintf(w->fp, ",hist_%d", b);
    fputc('\n', w->fp);
    if (ferror(w->fp)) {
      snprintf(msg, len, "cannot write: %s", strerror(errno));
      status = ES_ERR_OUTPUT;
      goto end;
    }
  }
  *out = w;
  return ES_OK;
end:
  es_atomic_abort(&w->at);
  free(w);
  return status;
}

/* CSV field (RFC 4180): quoted when it holds a comma, quote, or line break. */
static void es_csv_str(FILE *fp, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, fp);
    return;
  }
  fputc('"', fp);
  for (; *s; s++) {
    if (*s == '"') fputc('"', fp);
    fputc(*s, fp);
  }
  fputc('"', fp);
}

/* Length of a valid UTF-8 sequence at s, 0 if invalid. */
static int es_utf8_len(const unsigned char *s) {
  /* Leads: C2..DF (2 bytes), E0..EF (3), F0..F4 (4); 80..C1 and F5..FF never lead. */
  int n = s[0] >= 0xF0 && s[0] <= 0xF4   ? 4
          : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
          : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
                                         : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

/* JSON string; file names that are not UTF-8 get U+FFFD for each bad byte (JSON must be
 * UTF-8). */
static void es_json_str(FILE *fp, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', fp);
  while (*s) {
    if (*s == '"' || *s == '\\') {
      fputc('\\', fp);
      fputc(*s++, fp);
    } else if (*s < 0x20) {
      fprintf(fp, "\\u%04x", *s++);
    } else if (*s < 0x80) {
      fputc(*s++, fp);
    } else {
      int n = es_utf8_len(s);
      if (n) {
        fwrite(s, 1, (size_t)n, fp);
        s += n;
      } else {
        fputs("\\ufffd", fp);
        s++;
      }
    }
  }
  fputc('"', fp);
}

int es_stats_writer_add(es_stats_writer *w, const char *name, int64_t index,
                        double pts_seconds, int width, int height, const es_stats *st,
                        char *msg, size_t len) {
  return es_stats_writer_add_frame(w, name, index, pts_seconds, width, height, 0, st, msg, len);
}

int es_stats_writer_add_frame(es_stats_writer *w, const char *name, int64_t index,
                              double pts_seconds, int width, int height, int damaged,
                              const es_stats *st, char *msg, size_t len) {
  char pts[32], mean[32], sd[32], mn[32], mx[32], ge[32], gel[32];
  if (!w || !st || w->failed) {
    snprintf(msg, len, "statistics output is closed");
    return ES_ERR_INTERNAL;
  }
  if (st->bins != w->bins) {
    snprintf(msg, len, "statistics have %d bins, the file %d", st->bins, w->bins);
    return ES_ERR_INTERNAL;
  }
  es_fmt_double(pts, sizeof pts, pts_seconds);
  es_fmt_double(mean, sizeof mean, st->mean);
  es_fmt_double(sd, sizeof sd, st->std);
  es_fmt_float(mn, sizeof mn, st->min);
  es_fmt_float(mx, sizeof mx, st->max);
  es_fmt_double(ge, sizeof ge, st->global_entropy);
  es_fmt_double(gel, sizeof gel, st->global_entropy_levels);
  FILE *fp = w->fp;
  if (w->format == ES_STATS_CSV) {
    if (name) es_csv_str(fp, name);
    fprintf(fp, ",%" PRId64 ",%s,%d,%d,%s,%s,%s,%s,%s,%s,%d", index, pts, width, height, mean,
            sd, mn, mx, ge, gel, damaged != 0);
    for (int b = 0; b < w->bins; b++) fprintf(fp, ",%" PRIu64, st->hist[b]);
    fputc('\n', fp);
  } else {
#define ES_J(s) ((s)[0] ? (s) : "null")
    fputs("{\"name\":", fp);
    if (name)
      es_json_str(fp, name);
    else
      fputs("null", fp);
    fprintf(fp,
            ",\"index\":%" PRId64 ",\"pts\":%s,\"width\":%d,\"height\":%d,\"mean\":%s,"
            "\"std\":%s,\"min\":%s,\"max\":%s,\"global_entropy\":%s,"
            "\"global_entropy_levels\":%s,\"damaged\":%d,\"hist\":[",
            index, ES_J(pts), width, height, ES_J(mean), ES_J(sd), ES_J(mn), ES_J(mx), ES_J(ge),
            ES_J(gel), damaged != 0);
#undef ES_J
    for (int b = 0; b < w->bins; b++) fprintf(fp, b ? ",%" PRIu64 : "%" PRIu64, st->hist[b]);
    fputs("]}\n", fp);
  }
  /* stdout is flushed per record so a pipe reader sees frames as they come */
  if (w->is_stdout) fflush(fp);
  if (ferror(fp)) {
    snprintf(msg, len, "cannot write: %s", strerror(errno));
    w->failed = 1;
    return ES_ERR_OUTPUT;
  }
  return ES_OK;
}

int es_stats_writer_close(es_stats_writer **pw, int commit, char *msg, size_t len) {
  es_stats_writer *w = pw ? *pw : NULL;
  int status = ES_OK;
  if (!w) return ES_OK;
  *pw = NULL;
  if (w->is_stdout) {
    if (fflush(stdout) != 0 || (commit && w->failed)) {
      snprintf(msg, len, "cannot write: %s", strerror(errno ? errno : EIO));
      status = ES_ERR_OUTPUT;
    }
  } else if (commit) {
    if (w->failed) {
      snprintf(msg, len, "an earlier write failed");
      status = ES_ERR_OUTPUT;
    } else {
      status = es_atomic_commit(&w->at, msg, len);
    }
  }
  es_atomic_abort(&w->at);
  free(w);
  return status;
}
