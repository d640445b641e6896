/*
 * shard.c - the rules that split work across processes (--shard I/N, Slurm job arrays):
 * which share a process is (es_shard_parse, from "I/N" or Slurm's variables), which files of
 * a batch are its own (es_shard_files: runs in name order balanced by pixel count), and which
 * frames of a video (es_shard_video: time ranges cut at keyframes of the packet index). Every
 * rule is a function of the inputs alone, so processes that never talk to each other agree.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_io.h"

/* A whole decimal number in [lo, hi], digits only. */
static int parse_num(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out) {
  int64_t v = 0;
  if (!n || n > 18) return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A Slurm variable as a number; 0 where it is unset (*set 0), -1 where it is not a number. */
static int slurm_var(const char *name, int64_t *out, int *set) {
  const char *s = getenv(name);
  *set = s && *s;
  if (!*set) return 0;
  return parse_num(s, strlen(s), 0, INT64_C(1) << 40, out);
}

static int from_slurm(es_shard *out, char *msg, size_t len) {
  int64_t id = 0, cnt = 1, min = 0, step = 1, procid = 0, ntasks = 1, v;
  int has_array, has_id, has_step_id, set;
  int64_t a_index = 0, a_count = 1;
  /* A job array's task. */
  if (slurm_var("SLURM_ARRAY_TASK_COUNT", &cnt, &has_array) ||
      slurm_var("SLURM_ARRAY_TASK_ID", &id, &has_id) ||
      slurm_var("SLURM_ARRAY_TASK_MIN", &min, &set) ||
      slurm_var("SLURM_ARRAY_TASK_STEP", &step, &set)) {
    snprintf(msg, len, "shard slurm: a SLURM_ARRAY_TASK_* variable is not a number");
    return ES_ERR_USAGE;
  }
  if (has_array && has_id) {
    if (step < 1) step = 1;
    /* --array=0-99%16 and 1-7:2 number their tasks evenly; --array=1,5,9 lists ids whose
     * place among the tasks no variable says. */
    if (id < min || (id - min) % step || (id - min) / step >= cnt || cnt < 1) {
      snprintf(msg, len,
               "shard slurm: array task %" PRId64 " is not the %" PRId64 "-th of %" PRId64
               " tasks from %" PRId64 " by %" PRId64 " (use --array=A-B[:S], or shard I/N)",
               id, (id - min) / step, cnt, min, step);
      return ES_ERR_USAGE;
    }
    a_index = (id - min) / step;
    a_count = cnt;
  }
  /* An srun step's task. The batch script itself has SLURM_PROCID 0 and, with --ntasks,
   * SLURM_NTASKS > 1, but no SLURM_STEP_ID: taken there, it would do share 0 of several
   * that nothing else runs. */
  has_step_id = getenv("SLURM_STEP_ID") && *getenv("SLURM_STEP_ID");
  if (has_step_id) {
    int has_p, has_n;
    if (slurm_var("SLURM_PROCID", &procid, &has_p) ||
        slurm_var("SLURM_STEP_NUM_TASKS", &ntasks, &has_n)) {
      snprintf(msg, len, "shard slurm: SLURM_PROCID or SLURM_STEP_NUM_TASKS is not a number");
      return ES_ERR_USAGE;
    }
    if (!has_n) {
      if (slurm_var("SLURM_NTASKS", &v, &has_n)) {
        snprintf(msg, len, "shard slurm: SLURM_NTASKS is not a number");
        return ES_ERR_USAGE;
      }
      if (has_n) ntasks = v;
    }
    if (!has_p || !has_n) ntasks = 1, procid = 0;
    if (ntasks < 1 || procid >= ntasks) {
      snprintf(msg, len, "shard slurm: task %" PRId64 " of %" PRId64 " tasks", procid, ntasks);
      return ES_ERR_USAGE;
    }
  }
  if (!(has_array && has_id) && !has_step_id) {
    snprintf(msg, len, "shard slurm: not in a Slurm job array or srun step "
                       "(SLURM_ARRAY_TASK_ID and SLURM_STEP_ID are unset)");
    return ES_ERR_USAGE;
  }
  if (a_count * ntasks > ES_SHARD_MAX) {
    snprintf(msg, len, "shard slurm: %" PRId64 " shares, more than %d", a_count * ntasks,
             ES_SHARD_MAX);
    return ES_ERR_USAGE;
  }
  out->index = (int)(a_index * ntasks + procid);
  out->count = (int)(a_count * ntasks);
  return ES_OK;
}

int es_shard_parse(const char *spec, es_shard *out, char *msg, size_t len) {
  const char *slash;
  int64_t i, n;
  if (!spec || !out) {
    snprintf(msg, len, "shard: no value");
    return ES_ERR_USAGE;
  }
  if (!strcmp(spec, "slurm")) return from_slurm(out, msg, len);
  slash = strchr(spec, '/');
  if (!slash || parse_num(slash + 1, strlen(slash + 1), 1, ES_SHARD_MAX, &n) ||
      parse_num(spec, (size_t)(slash - spec), 0, n - 1, &i)) {
    snprintf(msg, len, "shard %s: must be I/N with 0 <= I < N <= %d, or slurm", spec,
             ES_SHARD_MAX);
    return ES_ERR_USAGE;
  }
  out->index = (int)i;
  out->count = (int)n;
  return ES_OK;
}

int es_shard_files(int count, const char *const *paths, size_t n, int *share_of) {
  uint64_t *w = NULL, total = 0, before = 0;
  if (count < 1 || count > ES_SHARD_MAX) return ES_ERR_USAGE;
  if (!n) return ES_OK;
  w = malloc(n * sizeof *w);
  if (!w) return ES_ERR_NOMEM;
  uint64_t known = 0, nknown = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t wd, ht;
    /* A side is at most 2^31 - 1 in a PNG: a product below 2^62, a sum of up to 2^64 / 2^62
     * files without overflow is not guaranteed, so each weight is capped at 2^40 pixels. */
    if (es_png_size(paths[i], &wd, &ht) == ES_OK && wd > 0 && ht > 0) {
      w[i] = (uint64_t)wd * (uint64_t)ht;
      if (w[i] > (UINT64_C(1) << 40)) w[i] = UINT64_C(1) << 40;
      known += w[i];
      nknown++;
    } else {
      w[i] = 0; /* not a PNG (a JPEG, a TIFF): weighed below */
    }
  }
  /* A file whose size its header does not give cheaply weighs what the PNGs weigh on
   * average (1 where there are none), so a mixed directory stays balanced. Still a pure
   * function of the names and the files: the same split in every share. */
  const uint64_t avg = nknown ? (known / nknown > 0 ? known / nknown : 1) : 1;
  for (size_t i = 0; i < n; i++) {
    if (!w[i]) w[i] = avg;
    total += w[i];
  }
  /* floor(count * before / total) in 128 bits: count <= 2^17 and before < 2^64. */
  for (size_t i = 0; i < n; i++) {
    __extension__ unsigned __int128 q = (unsigned __int128)before * (unsigned)count / total;
    share_of[i] = (int)q;
    before += w[i];
  }
  free(w);
  return ES_OK;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The index of the first of the n sorted values at or above v. */
static int64_t lower_bound(const int64_t *s, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (s[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int es_shard_video(const es_shard *sh, const char *path, es_shard_range *r, char *msg,
                   size_t len) {
  es_video_index ix;
  int64_t *sorted = NULL, *keys = NULL, *cut = NULL, nkeys = 0;
  int rc;

  memset(r, 0, sizeof *r);
  if (!sh || sh->count < 1 || sh->count > ES_SHARD_MAX || sh->index < 0 ||
      sh->index >= sh->count) {
    snprintf(msg, len, "shard: no such share");
    return ES_ERR_USAGE;
  }
  rc = es_video_index_read(path, &ix, msg, len);
  if (rc != ES_OK) return rc;
  r->tb_num = ix.tb_num;
  r->tb_den = ix.tb_den;
  r->total = ix.n;
  r->end_ts = INT64_MAX;
  r->start_ts = INT64_MIN;
  if (ix.n == 0) goto end; /* every share is empty; the first one decodes what there is */
  sorted = malloc((size_t)ix.n * sizeof *sorted);
  keys = malloc((size_t)ix.n * sizeof *keys);
  cut = malloc(((size_t)sh->count + 1) * sizeof *cut);
  if (!sorted || !keys || !cut) {
    snprintf(msg, len, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  /* Frames in presentation order; each keyframe's place in it (a keyframe comes out of the
   * decoder before every frame after it in that order). */
  memcpy(sorted, ix.pts, (size_t)ix.n * sizeof *sorted);
  qsort(sorted, (size_t)ix.n, sizeof *sorted, cmp_i64);
  for (int64_t i = 0; i < ix.n; i++)
    if (ix.key[i]) keys[nkeys++] = lower_bound(sorted, ix.n, ix.pts[i]);
  qsort(keys, (size_t)nkeys, sizeof *keys, cmp_i64);
  /* Cut k of the N-1 goes at the keyframe nearest to frame k*F/N (the earlier of two as
   * near), never before the cut before it. Frames before the first keyframe are the first
   * share's: it decodes from the start, as a whole run does. */
  cut[0] = 0;
  cut[sh->count] = ix.n;
  for (int k = 1; k < sh->count; k++) {
    int64_t target = (int64_t)((__extension__(unsigned __int128)ix.n * (unsigned)k) /
                               (unsigned)sh->count);
    int64_t j = lower_bound(keys, nkeys, target), best = ix.n;
    if (j < nkeys) best = keys[j];
    if (j > 0 && (j == nkeys || target - keys[j - 1] <= keys[j] - target)) best = keys[j - 1];
    /* A cut at frame 0 would leave the first share empty while a later one decodes from
     * the start: the next keyframe instead (or none), so that the first share has the
     * start, as the first file of a batch is the first share's. */
    if (best <= 0) {
      j = lower_bound(keys, nkeys, 1);
      best = j < nkeys ? keys[j] : ix.n;
    }
    if (best < cut[k - 1]) best = cut[k - 1];
    if (nkeys == 0) best = ix.n; /* no keyframe: nowhere to start but the start */
    cut[k] = best;
  }
  {
    const int64_t a = cut[sh->index], b = cut[sh->index + 1];
    r->first = a;
    r->frames = b - a;
    r->start_ts = sh->index == 0 ? INT64_MIN : a < ix.n ? sorted[a] : INT64_MAX;
    r->end_ts = b < ix.n ? sorted[b] : INT64_MAX;
    if (sh->index > 0 && r->frames > 0) {
      /* The keyframe packet that is frame a: seek to its decode time, where the index
       * (MP4's) is kept by it; BACKWARD lands there, or on an earlier keyframe. */
      for (int64_t i = 0; i < ix.n; i++) {
        if (ix.key[i] && ix.pts[i] == sorted[a]) {
          r->seek = 1;
          r->seek_ts = ix.dts[i] != INT64_MIN && ix.dts[i] < ix.pts[i] ? ix.dts[i] : ix.pts[i];
          break;
        }
      }
    }
  }
end:
  free(sorted);
  free(keys);
  free(cut);
  es_video_index_free(&ix);
  return rc;
}

int es_shard_frame(const es_shard_range *r, int64_t pts) {
  if (pts < r->start_ts) return -1;
  if (pts >= r->end_ts) return 1;
  return 0;
}
