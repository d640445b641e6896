/*
 * entropy-bench.c - the benchmark of the engines (a tool, never a timed test).
 *
 * Every timed row: one warm-up, then repetitions (>= 5 on the CPU, >= 20 on a GPU, or what
 * --reps says), the MEDIAN printed, and beside it the max abs error of that run's output
 * against a reference: the double reference (es_ref_entropy) where it is affordable, else
 * direct double counting at sampled pixels ("sampled ref"), or the CPU engine's map for GPU
 * rows ("vs cpu"; the engines are meant to be bit-identical, so 0 is expected).
 * Random levels come from a splitmix64 hash of the pixel index, the same generator as
 * tools/bench-skimage.py, so both time the same images.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_kernels.h"
#include "es_pipeline_internal.h" /* es_split_gpus_for: the library's GPU count for one image */

#define BENCH_SEED 1u
#define SAMPLES 4000

typedef struct bench_opts {
  int quick;
  int threads; /* all-threads row */
  int reps;    /* 0: defaults */
  const char *json;
  int ncases;
  int cases[16][4]; /* --case WxHxKxL: only these (CPU and GPU rows, no naive ones) */
  int gpu_only;     /* --gpu-only: no CPU rows; the CPU map (for err) computed once */
  int disk;         /* --disk: disk windows in every row (default square) */
  int mask_pct;     /* --mask P: also rows with a random mask of P% inside (1..100) */
} bench_opts;

static FILE *g_json;
static int g_json_rows;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* splitmix64 of the pixel index: level = (z >> 32) % L; sample = ceil(256 l / L), which
 * quantizes back to l. bench-skimage.py computes the same levels with numpy. */
static uint8_t *make_levels(int w, int h, int L) {
  uint8_t *img = malloc((size_t)w * h);
  if (!img) return NULL;
  for (size_t i = 0; i < (size_t)w * h; i++) {
    uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + BENCH_SEED;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    uint32_t l = (uint32_t)((z >> 32) % (uint64_t)L);
    img[i] = (uint8_t)((256u * l + (uint32_t)L - 1) / (uint32_t)L);
  }
  return img;
}

/* Folds one error into the running max: a NaN (a map value never written: the rows poison
 * maps with 0xff bytes, a NaN as float) sticks, so one anywhere in the map shows. */
static void err_fold(double *err, double e) {
  if (!isnan(*err) && !(e <= *err)) *err = e;
}

/* Direct double entropy at one pixel (clip border), for the sampled reference. */
static double direct_entropy(const es_image *img, const es_params *p, int x, int y,
                             uint32_t *hist, uint32_t *lv) {
  es_window win;
  es_window_make(&win, p->window, p->shape);
  const uint8_t *d = img->data;
  int n = 0;
  for (int dy = -win.r; dy <= win.r; dy++) {
    int yy = y + dy;
    if (yy < 0 || yy >= img->height) continue;
    for (int dx = -win.hw[dy + win.r]; dx <= win.hw[dy + win.r]; dx++) {
      int xx = x + dx;
      if (xx < 0 || xx >= img->width) continue;
      if (!es_image_inside(img, xx, yy)) continue; /* outside the mask: not counted */
      uint32_t q = es_quantize(d[(size_t)yy * img->stride + xx], (uint32_t)p->levels, 8);
      hist[q]++;
      lv[n++] = q;
    }
  }
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    uint32_t c = hist[lv[i]];
    if (c) {
      s += (double)c * log2((double)c);
      hist[lv[i]] = 0;
    }
  }
  double h = log2((double)n) - s / (double)n;
  return h > 0.0 ? h : 0.0;
}

/* Max abs error of map against the reference: full for small images, else sampled. */
static double check_ref(const es_image *img, const es_params *p, const float *map,
                        const char **how) {
  size_t npx = (size_t)img->width * img->height;
  es_window win;
  es_window_make(&win, p->window, p->shape);
  double err = 0.0;
  if ((double)npx * win.area <= 2e7) {
    double *ref = malloc(npx * sizeof *ref);
    if (!ref || es_ref_entropy(img, p, ref) != ES_OK) {
      free(ref);
      *how = "ref failed";
      return NAN;
    }
    for (size_t i = 0; i < npx; i++) {
      if (isnan(ref[i]) && isnan(map[i])) continue; /* outside the mask on both */
      err_fold(&err, fabs((double)map[i] - ref[i]));
    }
    free(ref);
    *how = "ref";
    return err;
  }
  uint32_t *hist = calloc((size_t)p->levels, sizeof *hist);
  uint32_t *lv = malloc((size_t)win.area * sizeof *lv);
  uint64_t z = 12345;
  for (int i = 0; i < SAMPLES + 4; i++) {
    int x, y;
    if (i < 4) {
      x = i & 1 ? img->width - 1 : 0;
      y = i & 2 ? img->height - 1 : 0;
    } else {
      z = z * 6364136223846793005ull + 1442695040888963407ull;
      x = (int)((z >> 33) % (uint64_t)img->width);
      y = (int)((z >> 13) % (uint64_t)img->height);
    }
    if (!es_image_inside(img, x, y)) { /* outside the mask: NaN expected */
      err_fold(&err, isnan(map[(size_t)y * img->width + x]) ? 0.0 : NAN);
      continue;
    }
    err_fold(&err, fabs((double)map[(size_t)y * img->width + x] -
                        direct_entropy(img, p, x, y, hist, lv)));
  }
  free(hist);
  free(lv);
  *how = "sampled ref";
  return err;
}

static double max_diff(const float *a, const float *b, size_t n) {
  double err = 0.0;
  for (size_t i = 0; i < n; i++)
    if (!(isnan(a[i]) && isnan(b[i]))) /* outside a mask on both */
      err_fold(&err, fabs((double)a[i] - (double)b[i]));
  return err;
}

/* JSON for --json: a number field ("name": v, ), null where v is not finite (a NaN error: a
 * map value the run never wrote; JSON has no NaN or Infinity), and a string with quotes,
 * backslashes and control characters escaped (notes carry error messages). */
static void json_num(const char *name, const char *fmt, double v) {
  fprintf(g_json, "\"%s\": ", name);
  if (isfinite(v))
    fprintf(g_json, fmt, v);
  else
    fputs("null", g_json);
  fputs(", ", g_json);
}
static void json_str(const char *s) {
  fputc('"', g_json);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(g_json, "\\%c", c);
    else if (c < 0x20)
      fprintf(g_json, "\\u%04x", c);
    else
      fputc(c, g_json);
  }
  fputc('"', g_json);
}

static void row_out(const char *group, const char *engine, int w, int h, int K, int L,
                    int threads, double ms, int reps, double err, const char *err_how,
                    const char *note) {
  double px = (double)w * h;
  char thr[16] = "";
  if (threads > 0) snprintf(thr, sizeof thr, "%d", threads);
  if (ms >= 0) {
    double mpx = px / (ms * 1e3);
    double gbs = px * 5.0 / (ms * 1e6); /* uint8 in + float32 out */
    int gpu = !strncmp(engine, "gpu", 3); /* GPU rows in Gpx/s */
    printf("%-7s %-22s %5dx%-5d K=%-3d L=%-4d %3s %10.3f ms %9.*f %s %7.2f GB/s  err %.2e (%s)%s%s\n",
           group, engine, w, h, K, L, thr, ms, gpu ? 3 : 1, gpu ? mpx / 1e3 : mpx,
           gpu ? "Gpx/s" : "Mpx/s", gbs, err, err_how, note && *note ? "  " : "",
           note ? note : "");
  } else {
    printf("%-7s %-22s %5dx%-5d K=%-3d L=%-4d %3s  %s\n", group, engine, w, h, K, L, thr,
           note ? note : "");
  }
  if (g_json) {
    fprintf(g_json, "%s  {\"group\": ", g_json_rows++ ? ",\n" : "");
    json_str(group);
    fputs(", \"engine\": ", g_json);
    json_str(engine);
    fprintf(g_json,
            ", \"width\": %d, \"height\": %d, \"window\": %d, \"levels\": %d, \"threads\": %d, ", w,
            h, K, L, threads);
    if (ms >= 0) {
      json_num("median_ms", "%.6f", ms);
      fprintf(g_json, "\"reps\": %d, ", reps);
      json_num("mpx_s", "%.3f", px / (ms * 1e3));
      json_num("gpx_s", "%.6f", px / (ms * 1e6));
      json_num("gb_s", "%.4f", px * 5.0 / (ms * 1e6));
      json_num("max_abs_err", "%.3e", err);
      fputs("\"err_against\": ", g_json);
      json_str(err_how);
      fputs(", ", g_json);
    } else {
      fprintf(g_json, "\"median_ms\": null, ");
    }
    fputs("\"note\": ", g_json);
    json_str(note ? note : "");
    fputs("}", g_json);
  }
}

static void fill_job(es_job *job, const es_image *img, const es_params *p, float *map) {
  memset(job, 0, sizeof *job);
  job->in = *img;
  job->params = *p;
  job->map = map;
  job->map_stride = (size_t)img->width;
  job->render.format = ES_PIX_NONE;
}

/* Times es_cpu_run on 1 thread (job1) and, when jobn is not NULL, on `threads` (jobn),
 * alternating the two so both see the same machine (a shared box changes speed between
 * processes and minutes): one warm-up each, then reps each; medians in ms. The maps are
 * poisoned after the warm-ups, so what is checked beside the times is the timed runs'.
 * 0 when every run succeeded, else -1 with msg. */
static int time_cpu(const es_job *job1, const es_job *jobn, int threads, int reps, double *ms1,
                    double *msn, char *msg, size_t msglen) {
  double *t1 = malloc((size_t)reps * sizeof *t1), *tn = malloc((size_t)reps * sizeof *tn);
  int rc = ES_ERR_NOMEM;
  snprintf(msg, msglen, "out of memory");
  if (t1 && tn) rc = es_cpu_run(job1, 1, msg, msglen);
  if (rc == ES_OK && jobn) rc = es_cpu_run(jobn, threads, msg, msglen);
  if (rc == ES_OK) {
    const size_t bytes = (size_t)job1->in.width * job1->in.height * sizeof *job1->map;
    memset(job1->map, 0xff, bytes);
    if (jobn) memset(jobn->map, 0xff, bytes);
  }
  for (int i = 0; rc == ES_OK && i < reps; i++) {
    double t0 = now_s();
    rc = es_cpu_run(job1, 1, msg, msglen);
    t1[i] = (now_s() - t0) * 1e3;
    if (rc == ES_OK && jobn) {
      t0 = now_s();
      rc = es_cpu_run(jobn, threads, msg, msglen);
      tn[i] = (now_s() - t0) * 1e3;
    }
  }
  if (rc == ES_OK) {
    *ms1 = median(t1, reps);
    if (jobn) *msn = median(tn, reps);
  }
  free(t1);
  free(tn);
  return rc == ES_OK ? 0 : -1;
}

/* The threads es_cpu_run(threads <= 0) runs a large frame on: OpenMP's default
 * (OMP_NUM_THREADS, else the cores it may use), or --threads. */
static int all_threads(const bench_opts *o) { return es_cpu_run_threads(NULL, o->threads); }

/* The naive baseline row: one warm-up and reps runs where the frame is cheap, else one run
 * on a band of rows, scaled to the frame; mapn poisoned before the timed runs. */
static void naive_row(const char *group, const es_image *img, const es_params *p, float *mapn,
                      int reps) {
  int w = img->width, h = img->height, K = p->window, L = p->levels;
  const char *how = "";
  char note[160] = "";
  /* O(K^2) per pixel with double logs: on large images time a band of rows once and scale
   * to the frame, and say so. */
  int band = h;
  double est_s = (double)w * h * K * K * 6e-9;
  if (est_s > 2.0) band = (int)(h * 2.0 / est_s) + 1;
  if (band > h) band = h;
  es_image sub = *img;
  sub.height = band;
  int nreps = band == h && est_s < 0.5 ? reps : 1;
  double *t = malloc((size_t)nreps * sizeof *t);
  int rc = t ? ES_OK : ES_ERR_NOMEM;
  if (rc == ES_OK && nreps > 1) rc = es_cpu_naive(&sub, p, mapn, (size_t)w); /* warm-up */
  /* poison (it also faults the pages in, outside the timed runs) */
  memset(mapn, 0xff, (size_t)w * band * sizeof *mapn);
  for (int i = 0; rc == ES_OK && i < nreps; i++) {
    double t0 = now_s();
    rc = es_cpu_naive(&sub, p, mapn, (size_t)w);
    t[i] = (now_s() - t0) * 1e3;
  }
  if (rc != ES_OK) {
    snprintf(note, sizeof note, "failed: %s", es_strerror(rc));
    row_out(group, "cpu naive (1 thread)", w, h, K, L, 1, -1, 0, 0, "", note);
    free(t);
    return;
  }
  double ms = median(t, nreps) * (double)h / band;
  free(t);
  double err = check_ref(&sub, p, mapn, &how);
  if (band < h) snprintf(note, sizeof note, "1 run on %d of %d rows, scaled to the frame", band, h);
  row_out(group, "cpu naive (1 thread)", w, h, K, L, 1, ms, nreps, err, how, note);
}

/* CPU rows for one case; the 1-thread map is left in map1 for the GPU rows. */
static void cpu_rows(const bench_opts *o, const char *group, const es_image *img,
                     const es_params *p, float *map1, float *mapn, int with_naive) {
  int w = img->width, h = img->height, K = p->window, L = p->levels;
  int reps = o->reps > 0 ? o->reps : 5;
  es_job job, jobn;
  const char *how = "";
  char note[160] = "", msg[256] = "";

  if (with_naive) naive_row(group, img, p, mapn, reps);
  fill_job(&job, img, p, map1);
  fill_job(&jobn, img, p, mapn);
  /* threads 0: the engine's default (all cores, fewer for small frames); the row says how
   * many that is for this frame, and per core divides by that. */
  const int thr = o->threads > 0 ? o->threads : 0;
  const int nt = es_cpu_run_threads(&jobn, thr);
  double t1 = -1, tn = -1;
  if (time_cpu(&job, nt > 1 ? &jobn : NULL, thr, reps, &t1, &tn, msg, sizeof msg)) {
    fprintf(stderr, "entropy-bench: cpu: %s\n", msg);
    row_out(group, "cpu engine", w, h, K, L, 1, -1, 0, 0, "", msg);
    if (nt > 1) row_out(group, "cpu engine", w, h, K, L, nt, -1, 0, 0, "", msg);
    return;
  }
  double err = check_ref(img, p, map1, &how);
  row_out(group, "cpu engine", w, h, K, L, 1, t1, reps, err, how, "");
  if (nt > 1) {
    err = max_diff(map1, mapn, (size_t)w * h);
    snprintf(note, sizeof note, "speed-up %.2fx, %.2f per core", t1 / tn, t1 / tn / nt);
    row_out(group, "cpu engine", w, h, K, L, nt, tn, reps, err, "vs 1 thread", note);
  } else if (all_threads(o) > 1) {
    snprintf(note, sizeof note, "the engine runs this frame on 1 thread (of %d)", all_threads(o));
    row_out(group, "cpu engine", w, h, K, L, all_threads(o), -1, 0, 0, "", note);
  }
}

typedef struct gpu_set {
  int n;
  es_gpu_worker *w[ES_MAX_GPUS];
} gpu_set;

/* Host-to-host runs of one job on the first n workers: one warm-up (it sizes the buffers),
 * then reps timed runs into t (ms). The map is poisoned after the warm-up, so what the
 * caller checks is the timed runs' map. 1 if every run succeeded, else 0 with msg. */
static int time_h2h(es_gpu_worker **ws, int n, const es_job *job, int reps, double *t,
                    char *msg, size_t msglen) {
  int ok = es_split_run(ws, n, job, msg, msglen) == ES_OK;
  if (ok) memset(job->map, 0xff, (size_t)job->in.width * job->in.height * sizeof *job->map);
  for (int i = 0; ok && i < reps; i++) {
    double t0 = now_s();
    ok = es_split_run(ws, n, job, msg, msglen) == ES_OK;
    t[i] = (now_s() - t0) * 1e3;
  }
  return ok;
}

/* Host-to-host rows of one job on 1 (when t1 < 0: timed here too), 2, 4, 8, ... and all
 * GPUs of g, each with its scaling efficiency against the one-GPU time: t1 / (n * tn). */
static void multi_rows(const char *group, gpu_set *g, const es_job *job, int reps, double t1,
                       const float *map_cpu, const char *tag) {
  const int w = job->in.width, h = job->in.height, K = job->params.window, L = job->params.levels;
  const size_t npx = (size_t)w * h;
  double *t = malloc((size_t)reps * sizeof *t);
  char msg[256] = "", eng[48], note[320];
  if (!t) return;
  for (int n = t1 < 0 ? 1 : 2; n <= g->n; n = n * 2 > g->n && n < g->n ? g->n : n * 2) {
    memset(job->map, 0xff, npx * sizeof *job->map);
    const int ok = time_h2h(g->w, n, job, reps, t, msg, sizeof msg);
    snprintf(eng, sizeof eng, "gpu x%d host-to-host%s", n, tag);
    if (!ok) {
      row_out(group, eng, w, h, K, L, 0, -1, 0, 0, "", msg);
      continue;
    }
    double tn = median(t, reps);
    note[0] = 0;
    if (n == 1) {
      t1 = tn;
    } else if (t1 > 0 && tn > 0) {
      int len = snprintf(note, sizeof note, "%.2fx the x1 time, scaling efficiency %.2f", tn / t1,
                         t1 / (n * tn));
      /* The floor of n GPUs at once: each moves its share of the output both ways. */
      int devs[ES_MAX_GPUS];
      float up = 0, down = 0;
      for (int i = 0; i < n; i++) devs[i] = es_gpu_worker_device(g->w[i]);
      if (!*tag &&
          es_gpu_bench_pcie_multi(devs, n, npx * 4 / (size_t)n, &up, &down, msg, sizeof msg) == ES_OK &&
          up > 0 && down > 0)
        snprintf(note + len, sizeof note - (size_t)len,
                 "; PCIe floor %.3f ms (%d GPUs at once: H2D %.1f GB/s, D2H %.1f GB/s)",
                 (double)npx / (up * 1e6) + (double)npx * 4 / (down * 1e6), n, up, down);
    }
    row_out(group, eng, w, h, K, L, 0, tn, reps, max_diff(map_cpu, job->map, npx), "vs cpu", note);
  }
  /* What es_compute does with this job on all of g's GPUs: the count es_split_gpus picks
   * (issue 31: never slower than fewer GPUs), against the x1 time. */
  if (g->n > 1 && t1 > 0) {
    /* As es_split_count: measured rates for a pageable output (each auto row measures them
     * again, as each context does once), else the model. */
    double ms_mb[ES_MAX_GPUS + 1];
    const int measured = es_split_measurable(job) &&
                         es_split_probe_workers(g->w, g->n, es_split_class(job), ms_mb, msg,
                                                sizeof msg) == ES_OK;
    int m = measured ? es_split_gpus_measured(job, g->n, ms_mb) : es_split_gpus_for(job, g->n);
    int taken[ES_MAX_GPUS + 1] = {0};
    const int m0 = m;
    memset(job->map, 0xff, npx * sizeof *job->map);
    /* As es_run_job: each call's time folded into the rates (es_split_observe), which may
     * turn the count of the next. The warm-up too: a context's first split call counts. */
    int ok = es_split_run(g->w, m, job, msg, sizeof msg) == ES_OK;
    for (int i = 0; ok && i <= reps; i++) {
      if (measured) m = es_split_gpus_measured(job, g->n, ms_mb);
      const double t0 = now_s();
      ok = es_split_run(g->w, m, job, msg, sizeof msg) == ES_OK;
      const double ms = (now_s() - t0) * 1e3;
      if (measured) es_split_fold(ms_mb, job, m, ms);
      if (i > 0) { /* i 0: the folded warm-up's */
        t[i - 1] = ms;
        taken[m]++;
      }
    }
    snprintf(eng, sizeof eng, "gpu auto x%d of %d host-to-host%s", m, g->n, tag);
    if (!ok) {
      row_out(group, eng, w, h, K, L, 0, -1, 0, 0, "", msg);
    } else {
      const double ta = median(t, reps);
      const int in_p = es_gpu_is_pinned(job->in.data), out_p = es_gpu_is_pinned(job->map);
      int len = snprintf(note, sizeof note, "%.2fx the x1 time; first x%d, timed", ta / t1, m0);
      for (int n = 1; n <= g->n && len > 0 && (size_t)len < sizeof note; n++)
        if (taken[n])
          len += snprintf(note + len, sizeof note - (size_t)len, " x%d %d", n, taken[n]);
      if (len > 0 && (size_t)len < sizeof note)
        len += snprintf(note + len, sizeof note - (size_t)len, "; %s",
                        measured ? "measured ms a MB" : "model ms");
      for (int n = 1; n <= g->n && len > 0 && (size_t)len < sizeof note;
           n = n * 2 > g->n && n < g->n ? g->n : n * 2)
        len += snprintf(note + len, sizeof note - (size_t)len, measured ? " x%d %.4f" : " x%d %.3f",
                        n, measured ? ms_mb[n] : es_split_model_ms(job, n, in_p, out_p));
      row_out(group, eng, w, h, K, L, 0, ta, reps, max_diff(map_cpu, job->map, npx), "vs cpu",
              note);
    }
  }
  free(t);
}

/* The caller's pageable buffers page-locked for the one call and unlocked after it
 * (cudaHostRegister/Unregister, as a library that "registers where it pays" would have to:
 * it cannot keep a caller's memory locked past the call), that cost included, on 1, 2, 4 ...
 * GPUs, against the pageable x1 time t1 (issue 31: does registering pay?). */
static void register_rows(const char *group, gpu_set *g, const es_job *job, int reps, double t1,
                          const float *map_cpu) {
  const int w = job->in.width, h = job->in.height, K = job->params.window, L = job->params.levels;
  const size_t npx = (size_t)w * h, in_bytes = job->in.stride * (size_t)(h - 1) + (size_t)w;
  double *t = malloc((size_t)reps * 3 * sizeof *t);
  char msg[256] = "", eng[48], note[160];
  if (!t) return;
  double *treg = t + reps, *tunreg = t + 2 * reps;
  for (int n = 1; n <= g->n; n = n * 2 > g->n && n < g->n ? g->n : n * 2) {
    int ok = 1;
    memset(job->map, 0xff, npx * sizeof *job->map);
    for (int i = -1; ok && i < reps; i++) { /* i -1: warm-up */
      const double t0 = now_s();
      ok = es_gpu_host_register((void *)job->in.data, in_bytes) &&
           es_gpu_host_register(job->map, npx * sizeof *job->map);
      const double t1r = now_s();
      if (ok) ok = es_split_run(g->w, n, job, msg, sizeof msg) == ES_OK;
      const double t2 = now_s();
      es_gpu_host_unregister((void *)job->in.data);
      es_gpu_host_unregister(job->map);
      if (i >= 0) {
        t[i] = (now_s() - t0) * 1e3;
        treg[i] = (t1r - t0) * 1e3;
        tunreg[i] = (now_s() - t2) * 1e3;
      }
    }
    snprintf(eng, sizeof eng, "gpu x%d host-to-host, registered", n);
    if (!ok) {
      row_out(group, eng, w, h, K, L, 0, -1, 0, 0, "", msg[0] ? msg : "cudaHostRegister refused");
      continue;
    }
    snprintf(note, sizeof note,
             "%.2fx the pageable x1 time; cudaHostRegister %.2f ms, Unregister %.2f ms a call",
             median(t, reps) / t1, median(treg, reps), median(tunreg, reps));
    row_out(group, eng, w, h, K, L, 0, median(t, reps), reps, max_diff(map_cpu, job->map, npx),
            "vs cpu", note);
  }
  free(t);
}

static void gpu_rows(const bench_opts *o, const char *group, gpu_set *g, const es_image *img,
                     const es_params *p, const float *map_cpu, float *mapg, int full) {
  int w = img->width, h = img->height, K = p->window, L = p->levels;
  size_t npx = (size_t)w * h;
  if (!g->n) {
    row_out(group, "gpu", w, h, K, L, 0, -1, 0, 0, "", "skipped: no GPU");
    return;
  }
  int reps = o->reps > 0 ? o->reps : 20;
  char msg[256] = "", note[160];
  es_job job;
  fill_job(&job, img, p, mapg);
  float *ms = malloc((size_t)reps * sizeof *ms);
  double *t = malloc((size_t)reps * sizeof *t);

  if (full) {
    float kms = 0;
    int nr = 3, ok = 1;
    double kt[3];
    for (int i = 0; i < nr && ok; i++) {
      memset(mapg, 0xff, npx * sizeof *mapg);
      ok = es_gpu_naive(g->w[0], img, p, mapg, (size_t)w, &kms, msg, sizeof msg) == ES_OK;
      kt[i] = kms;
    }
    if (ok)
      row_out(group, "gpu naive kernel", w, h, K, L, 0, median(kt, nr), nr,
              max_diff(map_cpu, mapg, npx), "vs cpu", "kernel only (CUDA events)");
    else
      row_out(group, "gpu naive kernel", w, h, K, L, 0, -1, 0, 0, "", msg);
  }

  /* Host to host on one GPU: pageable uint8 in, float32 out in host memory. */
  if (!time_h2h(g->w, 1, &job, reps, t, msg, sizeof msg)) {
    row_out(group, "gpu x1 host-to-host", w, h, K, L, 0, -1, 0, 0, "", msg);
    goto end;
  }
  double h2h = median(t, reps);
  double err = max_diff(map_cpu, mapg, npx);
  note[0] = 0;
  if (full) {
    float up = 0, down = 0;
    size_t bytes = npx * 4;
    if (es_gpu_bench_pcie(es_gpu_worker_device(g->w[0]), bytes, &up, &down, msg, sizeof msg) == ES_OK &&
        up > 0 && down > 0) {
      double floor_ms = (double)npx / (up * 1e6) + (double)npx * 4 / (down * 1e6);
      snprintf(note, sizeof note, "PCIe floor %.3f ms (H2D %.1f GB/s, D2H %.1f GB/s pinned)",
               floor_ms, up, down);
    }
  }
  row_out(group, "gpu x1 host-to-host", w, h, K, L, 0, h2h, reps, err, "vs cpu", note);

  memset(mapg, 0xff, npx * sizeof *mapg); /* poison: the timed kernels' own map is checked */
  if (es_gpu_bench_kernel(g->w[0], &job, reps, ms, msg, sizeof msg) == ES_OK) {
    for (int i = 0; i < reps; i++) t[i] = ms[i];
    row_out(group, "gpu x1 kernel", w, h, K, L, 0, median(t, reps), reps,
            max_diff(map_cpu, mapg, npx), "vs cpu",
            "kernel only (CUDA events); err of the last timed run's map");
  } else {
    row_out(group, "gpu x1 kernel", w, h, K, L, 0, -1, 0, 0, "", msg);
  }

  /* Several GPUs: 2, 4, 8, ... and all of them, each with its scaling efficiency against
   * the one-GPU row: t1 / (n * tn). */
  if (full) multi_rows(group, g, &job, reps, h2h, map_cpu, "");
  if (full) register_rows(group, g, &job, reps, h2h, map_cpu);
  /* Pageable input as above, the map in page-locked memory the caller allocated once (as a
   * caller does with es_host_pin): the input still passes through staging, the float32 map
   * (four times the input's bytes) comes back by DMA with no host copy. */
  if (full) {
    float *pin_out = (float *)es_gpu_host_alloc(npx * sizeof *pin_out);
    if (pin_out) {
      es_job pj = job;
      pj.map = pin_out;
      multi_rows(group, g, &pj, reps, -1, map_cpu, ", pinned out");
    }
    es_gpu_host_free(pin_out);
  }
  /* The same with page-locked input and output: no staging copies on the host, so these
   * rows show what the GPUs and their links scale to without the host's memory copies. */
  if (full && g->n > 1) {
    uint8_t *pin_in = (uint8_t *)es_gpu_host_alloc(npx);
    float *pin_out = (float *)es_gpu_host_alloc(npx * sizeof *pin_out);
    if (pin_in && pin_out) {
      es_job pj = job;
      memcpy(pin_in, img->data, npx);
      pj.in.data = pin_in;
      pj.in.stride = (size_t)w;
      pj.map = pin_out;
      multi_rows(group, g, &pj, reps, -1, map_cpu, ", pinned");
    }
    es_gpu_host_free(pin_in);
    es_gpu_host_free(pin_out);
  }
end:
  free(ms);
  free(t);
}

/* --mask P: the same case with a random mask of P% inside, timed against the case without
 * a mask in the same run (alternating runs, so both see the same machine), on 1 thread and
 * on all; then on one GPU host to host, against the masked CPU map. */
static void mask_rows(const bench_opts *o, const char *group, gpu_set *g, const es_image *img,
                      const es_params *p, int gpu) {
  const int w = img->width, h = img->height, K = p->window, L = p->levels, pct = o->mask_pct;
  const size_t npx = (size_t)w * h;
  const int reps = o->reps > 0 ? o->reps : 5;
  uint8_t *mask = malloc(npx);
  float *m0 = malloc(npx * sizeof *m0), *m1 = malloc(npx * sizeof *m1);
  float *mg = malloc(npx * sizeof *mg);
  char eng[64], note[160], msg[256] = "";
  const char *how = "";
  if (!mask || !m0 || !m1 || !mg) goto end;
  for (size_t i = 0; i < npx; i++) { /* splitmix64 of the index, another seed */
    uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + 77;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    mask[i] = (uint8_t)(((z ^ (z >> 31)) >> 40) % 100 < (uint64_t)pct);
  }
  es_image mimg = *img;
  mimg.mask = mask;
  mimg.mask_stride = (size_t)w;
  es_job plain, masked;
  fill_job(&plain, img, p, m0);
  fill_job(&masked, &mimg, p, m1);
  snprintf(eng, sizeof eng, "cpu engine, mask %d%%", pct);
  if (!o->gpu_only) {
    const int nt = es_cpu_run_threads(&plain, o->threads > 0 ? o->threads : 0);
    for (int pass = 0; pass < (nt > 1 ? 2 : 1); pass++) {
      const int thr = pass ? nt : 1;
      double t0 = -1, t1 = -1;
      if (time_cpu(&plain, &masked, thr, reps, &t0, &t1, msg, sizeof msg) == 0) {
        double err = pass ? max_diff(mg, m1, npx) : check_ref(&mimg, p, m1, &how);
        snprintf(note, sizeof note, "%.2fx the time without a mask (%.3f ms, same run)",
                 t1 / t0, t0);
        row_out(group, eng, w, h, K, L, thr, t1, reps, err, pass ? "vs 1 thread" : how, note);
      } else {
        row_out(group, eng, w, h, K, L, thr, -1, 0, 0, "", msg);
      }
      if (!pass) memcpy(mg, m1, npx * sizeof *mg); /* the 1-thread map, for the others */
    }
  } else {
    if (es_cpu_run(&masked, 0, msg, sizeof msg) != ES_OK) memset(m1, 0xff, npx * sizeof *m1);
    memcpy(mg, m1, npx * sizeof *mg);
  }
  if (gpu && g->n) {
    const int greps = o->reps > 0 ? o->reps : 20;
    double *t = malloc((size_t)greps * 2 * sizeof *t);
    es_job gplain = plain, gmasked = masked;
    gmasked.map = m1;
    int ok = t != NULL;
    /* alternating, as the CPU rows: one warm-up each, then pairs */
    ok = ok && es_gpu_run(g->w[0], &gplain, msg, sizeof msg) == ES_OK &&
         es_gpu_run(g->w[0], &gmasked, msg, sizeof msg) == ES_OK;
    if (ok) memset(m1, 0xff, npx * sizeof *m1);
    for (int i = 0; ok && i < greps; i++) {
      double a = now_s();
      ok = es_gpu_run(g->w[0], &gplain, msg, sizeof msg) == ES_OK;
      double b = now_s();
      ok = ok && es_gpu_run(g->w[0], &gmasked, msg, sizeof msg) == ES_OK;
      t[i] = (b - a) * 1e3;
      t[greps + i] = (now_s() - b) * 1e3;
    }
    snprintf(eng, sizeof eng, "gpu x1 h2h, mask %d%%", pct);
    if (ok) {
      double tp = median(t, greps), tm = median(t + greps, greps);
      snprintf(note, sizeof note, "%.2fx the time without a mask (%.3f ms, same run)", tm / tp, tp);
      row_out(group, eng, w, h, K, L, 0, tm, greps, max_diff(mg, m1, npx), "vs cpu", note);
    } else {
      row_out(group, eng, w, h, K, L, 0, -1, 0, 0, "", msg);
    }
    free(t);
  }
end:
  free(mask);
  free(m0);
  free(m1);
  free(mg);
}

static int run_case(const bench_opts *o, const char *group, gpu_set *g, int w, int h, int K,
                    int L, int naive, int gpu, int gpu_full) {
  uint8_t *data = make_levels(w, h, L);
  float *map1 = malloc((size_t)w * h * sizeof *map1);
  float *map2 = malloc((size_t)w * h * sizeof *map2);
  if (!data || !map1 || !map2) {
    fprintf(stderr, "entropy-bench: out of memory for %dx%d\n", w, h);
    free(data);
    free(map1);
    free(map2);
    return -1;
  }
  /* Poison: if the CPU map cannot be computed, the GPU rows' errors against it read NaN. */
  memset(map1, 0xff, (size_t)w * h * sizeof *map1);
  es_image img = {data, w, h, (size_t)w, 8};
  es_params p;
  es_params_default(&p);
  p.window = K;
  p.levels = L;
  p.shape = o->disk ? ES_SHAPE_DISK : ES_SHAPE_SQUARE;
  if (o->gpu_only) {
    es_job job;
    char msg[256];
    fill_job(&job, &img, &p, map1);
    if (es_cpu_run(&job, 0, msg, sizeof msg) != ES_OK)
      fprintf(stderr, "entropy-bench: cpu: %s\n", msg);
  } else {
    cpu_rows(o, group, &img, &p, map1, map2, naive);
  }
  if (gpu) gpu_rows(o, group, g, &img, &p, map1, map2, gpu_full);
  if (o->mask_pct) mask_rows(o, group, g, &img, &p, gpu);
  fflush(stdout);
  free(data);
  free(map1);
  free(map2);
  return 0;
}

/* A whole decimal number in 0..10^6 ("2x", "abc" and "" are not), for --reps/--threads. */
static int parse_count(const char *s, int *v) {
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < 0 || x > 1000000) return -1;
  *v = (int)x;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: entropy-bench [--quick] [--threads N] [--reps N] [--json FILE]\n"
          "                     [--case WxHxKxL ...]   (these cases only: CPU and GPU rows)\n"
          "                     [--gpu-only]           (no CPU rows; errors still against the CPU)\n"
          "                     [--disk]               (disk windows in every row; default square)\n"
          "                     [--mask P]             (also rows with a random mask, P%% inside)\n"
          "  --quick      small sizes only (64^2, 400^2, 192x108)\n"
          "  --threads N  threads of the all-threads rows (0 or absent: OpenMP's default)\n"
          "  --reps N     timed repetitions a row (0 or absent: 5 on the CPU, 20 on a GPU)\n"
          "  --json FILE  every row as JSON too\n");
}

int main(int argc, char **argv) {
  bench_opts o;
  memset(&o, 0, sizeof o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      o.quick = 1;
    } else if (!strcmp(a, "--gpu-only")) {
      o.gpu_only = 1;
    } else if (!strcmp(a, "--disk")) {
      o.disk = 1;
    } else if (!strcmp(a, "--mask") && i + 1 < argc) {
      if (parse_count(argv[++i], &o.mask_pct) || o.mask_pct < 1 || o.mask_pct > 100) {
        fprintf(stderr, "entropy-bench: --mask %s: want a percentage 1..100\n", argv[i]);
        return 1;
      }
    } else if ((!strcmp(a, "--threads") || !strcmp(a, "--reps")) && i + 1 < argc) {
      if (parse_count(argv[++i], !strcmp(a, "--reps") ? &o.reps : &o.threads)) {
        fprintf(stderr, "entropy-bench: %s %s: want a count\n", a, argv[i]);
        return 1;
      }
    } else if (!strcmp(a, "--json") && i + 1 < argc) {
      o.json = argv[++i];
    } else if (!strcmp(a, "--case") && i + 1 < argc) {
      if (o.ncases == 16) {
        fprintf(stderr, "entropy-bench: --case %s: at most 16 cases\n", argv[i + 1]);
        return 1;
      }
      int *c = o.cases[o.ncases], end = 0;
      if (sscanf(argv[++i], "%dx%dx%dx%d%n", &c[0], &c[1], &c[2], &c[3], &end) != 4 ||
          argv[i][end] || c[0] < 1 || c[1] < 1 || c[2] < 1 || c[2] > 255 || c[2] % 2 == 0 ||
          c[3] < 2 || c[3] > 256) {
        fprintf(stderr, "entropy-bench: --case %s: want WxHxKxL (K odd 1..255, L 2..256)\n", argv[i]);
        return 1;
      }
      o.ncases++;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (i + 1 == argc && (!strcmp(a, "--threads") || !strcmp(a, "--reps") || !strcmp(a, "--mask") ||
                                 !strcmp(a, "--json") || !strcmp(a, "--case"))) {
      fprintf(stderr, "entropy-bench: %s: needs a value\n", a);
      return 1;
    } else {
      fprintf(stderr, "entropy-bench: unknown option %s\n", a);
      usage(stderr);
      return 1;
    }
  }
  if (o.json) {
    g_json = fopen(o.json, "w");
    if (!g_json) {
      fprintf(stderr, "entropy-bench: %s: cannot create\n", o.json);
      return 3;
    }
    fprintf(g_json, "{\"tool\": \"entropy-bench\", \"version\": \"%s\", \"threads\": %d, "
            "\"shape\": \"%s\", \"rows\": [\n",
            ES_VERSION_STRING, all_threads(&o), o.disk ? "disk" : "square");
  }

  gpu_set g;
  memset(&g, 0, sizeof g);
  char msg[256];
  int ndev = es_gpu_device_count();
  for (int d = 0; d < ndev && d < ES_MAX_GPUS; d++) {
    if (es_gpu_worker_create(&g.w[g.n], d, msg, sizeof msg) == ES_OK)
      g.n++;
    else
      fprintf(stderr, "entropy-bench: GPU %d: %s\n", d, msg);
  }
  printf("entropy-bench %s: %d CPU thread(s), %d GPU(s); %s windows; median of repetitions; "
         "err = max abs error (against what in parentheses)\n",
         ES_VERSION_STRING, all_threads(&o), g.n, o.disk ? "disk" : "square");
  for (int d = 0; d < g.n; d++) {
    es_gpu_describe(es_gpu_worker_device(g.w[d]), msg, sizeof msg);
    printf("  %s\n", msg);
  }

  if (o.ncases) {
    for (int i = 0; i < o.ncases; i++)
      run_case(&o, "case", &g, o.cases[i][0], o.cases[i][1], o.cases[i][2], o.cases[i][3], 0, 1, 1);
  } else {
    static const int sizes_full[] = {400, 2560, 10240};
    static const int sizes_quick[] = {64, 400};
    const int *sizes = o.quick ? sizes_quick : sizes_full;
    for (int i = 0; i < 3 && !(o.quick && i == 2); i++)
      run_case(&o, "size", &g, sizes[i], sizes[i], 5, 16, 1, 1, 1);
    static const int ks[] = {3, 7, 15, 25, 51, 75};
    int sw = o.quick ? 192 : 1920, sh = o.quick ? 108 : 1080;
    for (int i = 0; i < 6; i++) run_case(&o, "window", &g, sw, sh, ks[i], 256, 0, 1, 0);
  }

  for (int d = 0; d < g.n; d++) es_gpu_worker_destroy(&g.w[d]);
  if (g_json) {
    fprintf(g_json, "\n]}\n");
    if (fclose(g_json) != 0) {
      fprintf(stderr, "entropy-bench: %s: write failed\n", o.json);
      return 3;
    }
  }
  return 0;
}
