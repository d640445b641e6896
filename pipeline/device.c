/*
 * device.c - device scheduling: the pool of GPU workers (one mutex, one condition
 * variable), the choice CPU / GPU / all GPUs for a frame, running a job with its fallbacks
 * (a failed GPU job goes to another GPU, then to the CPU, with the same result), fault
 * injection for tests, and the thread-safe one-shot es_compute.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_pipeline_internal.h"
#include "es_trace.h"

/* ---- Fault injection (see es_pipeline_internal.h). ---- */

/* The comma-separated integers after `key` in spec, at most max of them, into out: their
 * count. */
static int fault_list(const char *spec, const char *key, long long *out, int max) {
  const char *q = strstr(spec, key);
  int n = 0;
  for (q = q ? q + strlen(key) : NULL; q && *q && n < max;) {
    char *end;
    long long v = strtoll(q, &end, 10);
    if (end == q) break;
    out[n++] = v;
    q = end;
    if (*q != ',') break;
    q++;
  }
  return n;
}

/* spec: "frames=3,7,12", "gpus=1", "nopin", "opendelay=MS" (the GPUs' background opening
 * starts MS later), "bglist" (a GPU list opens in the background where no driver lists
 * GPUs), "drvgpus=N" (the driver is taken to list N GPUs: a list may become
 * CUDA_VISIBLE_DEVICES without one); other keys are ignored, so the variable can grow. */
void es_fault_parse(es_fault *f, const char *spec) {
  long long v[256];
  f->n = 0;
  f->gpus = 0;
  f->nopin = 0;
  f->open_delay_ms = 0;
  f->bglist = 0;
  f->drv_gpus = 0;
  for (int i = 0; i < ES_FAULT_MAX; i++) atomic_init(&f->fired[i], 0);
  if (!spec) return;
  f->n = fault_list(spec, "frames=", v, ES_FAULT_MAX);
  for (int i = 0; i < f->n; i++) f->frame[i] = v[i];
  const int ng = fault_list(spec, "gpus=", v, 256);
  for (int i = 0; i < ng; i++)
    if (v[i] >= 0 && v[i] < 64) f->gpus |= (uint64_t)1 << v[i];
  f->nopin = strstr(spec, "nopin") != NULL;
  f->bglist = strstr(spec, "bglist") != NULL;
  f->open_delay_ms =
      fault_list(spec, "opendelay=", v, 1) == 1 && v[0] > 0 && v[0] < 60000 ? (int)v[0] : 0;
  f->drv_gpus = fault_list(spec, "drvgpus=", v, 1) == 1 && v[0] > 0 && v[0] <= 64 ? (int)v[0] : 0;
}

void es_fault_copy(es_fault *dst, const es_fault *src) {
  dst->n = src->n;
  dst->gpus = src->gpus;
  dst->nopin = src->nopin;
  for (int i = 0; i < src->n; i++) {
    dst->frame[i] = src->frame[i];
    atomic_init(&dst->fired[i], 0);
  }
}

int es_fault_take(es_fault *f, int64_t frame) {
  if (!f) return 0;
  for (int i = 0; i < f->n; i++)
    if (f->frame[i] == frame && atomic_exchange(&f->fired[i], 1) == 0) return 1;
  return 0;
}

int es_fault_gpu(const es_fault *f, int ordinal) {
  return f && ordinal >= 0 && ordinal < 64 && (f->gpus >> ordinal & 1);
}

/* ---- The GPU worker pool. ---- */

static int gpu_enabled(const es_context *ctx, int gpu) {
  return ctx->fail_streak[gpu] < ES_GPU_DISABLE_STREAK;
}

/* Takes a free worker on GPU `want` (or any GPU when want < 0) that is neither excluded nor
 * disabled; waits while all such workers are busy. NULL when no such worker exists. */
static es_pool_worker *pool_acquire(es_context *ctx, int want, uint64_t excluded) {
  es_pool_worker *got = NULL;
  pthread_mutex_lock(&ctx->lock);
  for (;;) {
    int exists = 0;
    for (int i = 0; i < ctx->nworkers && !got; i++) {
      es_pool_worker *pw = &ctx->workers[i];
      if ((want >= 0 && pw->gpu != want) || (excluded >> pw->gpu & 1) ||
          !gpu_enabled(ctx, pw->gpu))
        continue;
      exists = 1;
      if (!pw->busy) got = pw;
    }
    if (got || !exists) break;
    pthread_cond_wait(&ctx->worker_free, &ctx->lock);
  }
  if (got) got->busy = 1;
  pthread_mutex_unlock(&ctx->lock);
  return got;
}

/* Takes one free worker on each of the first `most` enabled GPUs at once (all or nothing,
 * so two callers never hold half each). Returns the count (0 when fewer than 2 GPUs are
 * enabled). */
static int pool_acquire_all(es_context *ctx, es_pool_worker **got, int most) {
  int n = 0;
  pthread_mutex_lock(&ctx->lock);
  for (;;) {
    int enabled = 0, ready = 0;
    n = 0;
    for (int g = 0; g < ctx->ngpu && enabled < most; g++) {
      if (!gpu_enabled(ctx, g)) continue;
      enabled++;
      for (int i = 0; i < ctx->nworkers; i++) {
        if (ctx->workers[i].gpu == g && !ctx->workers[i].busy) {
          got[n++] = &ctx->workers[i];
          ready++;
          break;
        }
      }
    }
    if (enabled < 2) {
      n = 0;
      break;
    }
    if (ready == enabled) break;
    pthread_cond_wait(&ctx->worker_free, &ctx->lock);
  }
  for (int i = 0; i < n; i++) got[i]->busy = 1;
  pthread_mutex_unlock(&ctx->lock);
  return n;
}

/* Gives a worker back; `failed` (1) counts towards disabling its GPU, success (0) resets
 * the count, -1 leaves it as it is (a failure no device is blamed for). The warning goes
 * out after the lock is released: the caller's message callback may call the library
 * (es_context_error takes this lock) and may be slow. */
static void pool_release(es_context *ctx, es_pool_worker *pw, int failed) {
  int disabled = 0;
  pthread_mutex_lock(&ctx->lock);
  pw->busy = 0;
  if (failed < 0) {
    /* neither */
  } else if (failed) {
    disabled = ++ctx->fail_streak[pw->gpu] == ES_GPU_DISABLE_STREAK;
  } else {
    ctx->fail_streak[pw->gpu] = 0;
  }
  pthread_cond_broadcast(&ctx->worker_free);
  pthread_mutex_unlock(&ctx->lock);
  if (disabled && ctx->cfg.verbose >= 1)
    es_ctx_message(ctx, "warning: GPU %d failed %d times in a row: not used any more",
                   ctx->gpu_ordinal[pw->gpu], ES_GPU_DISABLE_STREAK);
}

/* ---- Choosing a device and running a job. ---- */

/* The CPU whatever the GPUs: the configuration alone says so (device cpu, or a frame below
 * cpu_below under auto). Reads no GPU field, so it may be asked before the GPUs are open. */
static int cpu_by_config(const es_context *ctx, int64_t pixels) {
  return ctx->cfg.device == ES_DEVICE_CPU ||
         (ctx->cfg.device == ES_DEVICE_AUTO && pixels < ctx->cfg.cpu_below);
}

int es_pick_target(const es_context *ctx, int64_t pixels, int allow_multi) {
  if (cpu_by_config(ctx, pixels) || ctx->ngpu == 0) return ES_TARGET_CPU;
  /* How many GPUs (es_split_gpus) is decided with the job, in es_run_job. */
  if (allow_multi && ctx->ngpu > 1) return ES_TARGET_MULTI;
  return ES_TARGET_ANY_GPU;
}

/* ---- How many GPUs share one image. ----
 * A model of the time on n GPUs: kernels (ms a megapixel, linear in K: the 1080p L=256 rows of
 * BENCHMARKS' session 6 check), links (one GPU's, and all GPUs' at once: F1), the host's
 * staging copies of pageable buffers (they hide behind one GPU's DMA and bound two or more:
 * F1), and a fixed cost a GPU added. It ranks the counts, it does not predict to the tenth of
 * a millisecond, hence the 15% a larger count must save; each call's own time then corrects
 * its class's rate (es_split_observe, V1-V2). */
#define ES_SPLIT_MPX_MS 0.0155        /* kernel ms a megapixel, K=0 */
#define ES_SPLIT_MPX_MS_K 0.0043      /* and per unit of K */
#define ES_SPLIT_LINK_GBS 50.0        /* one GPU's link */
#define ES_SPLIT_LINKS_GBS 145.0      /* every GPU's links at once */
#define ES_SPLIT_HOST1_GBS 62.0       /* staging copies, one GPU */
#define ES_SPLIT_HOSTN_GBS 80.0       /* staging copies, two GPUs or more */
#define ES_SPLIT_GPU_MS 0.1           /* fixed cost of each GPU after the first */
#define ES_SPLIT_GAIN 0.85            /* a larger count must take at most this share */

/* The bytes a job moves out of the device (map, rendering planes). */
static double split_out_bytes(const es_job *job) {
  const es_image *in = &job->in;
  double b = job->map ? 4.0 * in->width * (double)in->height : 0.0;
  const int fmt = job->render.format;
  for (int i = 0; fmt != ES_PIX_NONE && i < es_pix_planes(fmt); i++)
    b += (double)es_pix_stride(fmt, i, in->width) * es_pix_plane_height(fmt, i, in->height);
  return b;
}

/* The model's kernel time of a job on one GPU (the constants above), ms. */
static double split_kernel_ms(const es_job *job) {
  const double px = (double)job->in.width * job->in.height;
  const int K = job->params.window, L = job->params.levels;
  double kern = px / 1e6 * (ES_SPLIT_MPX_MS + ES_SPLIT_MPX_MS_K * K);
  if (L <= 32) kern *= 0.25;
  if (L > 256) kern *= 4.0;
  return kern;
}

/* The bytes a job moves into the device (its samples). */
static double split_in_bytes(const es_job *job) {
  return (double)job->in.width * job->in.height * es_depth_bytes(job->in.depth);
}

double es_split_model_ms(const es_job *job, int m, int in_pinned, int out_pinned) {
  const double kern = split_kernel_ms(job);
  const double in_b = split_in_bytes(job), out_b = split_out_bytes(job);
  const double page_b = (in_pinned ? 0.0 : in_b) + (out_pinned ? 0.0 : out_b);
  double link = ES_SPLIT_LINK_GBS * m;
  if (link > ES_SPLIT_LINKS_GBS) link = ES_SPLIT_LINKS_GBS;
  const double host = m > 1 ? ES_SPLIT_HOSTN_GBS : ES_SPLIT_HOST1_GBS;
  const double dma_ms = (in_b + out_b) / (link * 1e6), copy_ms = page_b / (host * 1e6);
  return ES_SPLIT_GPU_MS * (m - 1) + kern / m + (dma_ms > copy_ms ? dma_ms : copy_ms);
}

int es_split_gpus(const es_job *job, int n, int in_pinned, int out_pinned) {
  if (n < 2) return n < 1 ? 1 : n;
  int best = 1;
  double tbest = es_split_model_ms(job, 1, in_pinned, out_pinned);
  /* Every count: one taken saves 15% on the best before it, so it is also faster than
   * each count passed over (those saved less than 15% on a best no better). */
  for (int m = 2; m <= n; m++) {
    const double t = es_split_model_ms(job, m, in_pinned, out_pinned);
    if (t < ES_SPLIT_GAIN * tbest) {
      best = m;
      tbest = t;
    }
  }
  return best;
}

/* 1 when every output of the job (map, rendering planes) is page-locked. */
static int out_pinned_of(const es_job *job) {
  int out_pinned = 1;
  if (job->map) out_pinned &= es_gpu_is_pinned(job->map);
  const int fmt = job->render.format;
  for (int i = 0; fmt != ES_PIX_NONE && i < es_pix_planes(fmt); i++)
    out_pinned &= es_gpu_is_pinned(job->pix.plane[i]);
  return out_pinned;
}

int es_split_gpus_for(const es_job *job, int n) {
  if (n < 2) return 1;
  return es_split_gpus(job, n, es_gpu_is_pinned(job->in.data), out_pinned_of(job));
}

/* ---- How many GPUs share one pageable image: measured. ----
 * A pageable output's staging copies bound a split image, and how they scale with the GPU
 * count differs from host to host: 10240^2 pageable on two GPUs took 0.72x one GPU's time on
 * 2 x H200 (32 cores), 1.13x on 4 x H200 and 1.69x on 4 x H100 (64 cores each; BENCHMARKS
 * U1-U3), so no constant of the model above fits every host. The first job of a size class
 * that could be split measures the host instead: a pageable 8-bit probe image (class 0:
 * 4096 x 2048, 8 MB in and a 32 MB map out, more than the cores' caches hold; class 1:
 * 8192 x 8192, 320 MB) computed host to host on m = 1..n GPUs, the best of ES_PROBE_REPS
 * runs after a warm-up (which sizes the buffers). Class 1 costs about 0.2 s once. */
#define ES_PROBE_REPS 3
static const int probe_w[ES_SPLIT_CLASSES] = {4096, 8192};
static const int probe_h[ES_SPLIT_CLASSES] = {2048, 8192};

int es_split_class(const es_job *job) {
  return (double)job->in.width * job->in.height >= ES_SPLIT_LARGE_PX;
}

/* A job's MB moved (in + out): what the measured rates are per. */
static double split_mb(const es_job *job) {
  return (split_in_bytes(job) + split_out_bytes(job)) / 1e6;
}

int es_split_probe_workers(es_gpu_worker **ws, int n, int cls, double *ms_mb, char *msg,
                           size_t len) {
  const int pw = probe_w[cls], ph = probe_h[cls];
  const size_t npx = (size_t)pw * ph;
  uint8_t *in = malloc(npx);
  float *map = malloc(npx * sizeof *map);
  int rc = ES_OK;
  es_job job;
  memset(&job, 0, sizeof job);
  if (!in || !map) {
    if (msg && len) snprintf(msg, len, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  for (size_t i = 0; i < npx; i++) in[i] = (uint8_t)(i * 2654435761u >> 24);
  memset(map, 0, npx * sizeof *map); /* touched: page faults are not what is measured */
  job.in = (es_image){in, pw, ph, (size_t)pw, 8};
  es_params_default(&job.params);
  job.map = map;
  job.map_stride = (size_t)pw;
  const double kern = split_kernel_ms(&job), mb = split_mb(&job);
  for (int m = 1; m <= n && rc == ES_OK; m++) {
    double best = 0;
    for (int r = 0; r <= ES_PROBE_REPS && rc == ES_OK; r++) {
      const double t0 = es_trace_ms();
      rc = m == 1 ? es_gpu_run(ws[0], &job, msg, len) : es_split_run(ws, m, &job, msg, len);
      const double t = es_trace_ms() - t0;
      if (r > 0 && (best == 0 || t < best)) best = t; /* r 0: the warm-up */
    }
    /* What moving the bytes took, without the kernels the model counts apart. */
    const double move = best - kern / m;
    ms_mb[m] = (move > 0 ? move : best) / mb;
  }
end:
  free(in);
  free(map);
  return rc;
}

int es_split_gpus_measured(const es_job *job, int n, const double *ms_mb) {
  const double kern = split_kernel_ms(job), mb = split_mb(job);
  int best = 1;
  double tbest = kern + ms_mb[1] * mb;
  for (int m = 2; m <= n; m++) {
    const double t = kern / m + ms_mb[m] * mb;
    if (t < ES_SPLIT_GAIN * tbest) {
      best = m;
      tbest = t;
    }
  }
  return best;
}

/* Measures the rates of a size class once (es_split_probe_workers on one worker of each
 * GPU). 1 when they are there, 0 where the measurement failed (the model then decides). */
static int split_probe(es_context *ctx, int cls) {
  pthread_mutex_lock(&ctx->split_lock);
  if (ctx->split_state[cls] == 0) {
    es_pool_worker *pw[ES_MAX_GPUS];
    es_gpu_worker *ws[ES_MAX_GPUS];
    char why[ES_ERRLEN] = "";
    const int n = pool_acquire_all(ctx, pw, ctx->ngpu);
    for (int i = 0; i < n; i++) ws[i] = pw[i]->w;
    const double t0 = es_trace_ms();
    double *ms_mb = ctx->split_ms_mb[cls];
    int rc = n >= 2 ? es_split_probe_workers(ws, n, cls, ms_mb, why, sizeof why) : ES_ERR_DEVICE;
    for (int i = 0; i < n; i++) pool_release(ctx, pw[i], -1);
    ctx->split_state[cls] = rc == ES_OK ? 1 : -1;
    if (rc == ES_OK && es_trace_enabled()) {
      char line[256];
      int k = snprintf(line, sizeof line, "split: class %d measured in %.1f ms, ms a MB:", cls,
                       es_trace_ms() - t0);
      for (int m = 1; m <= n && k > 0 && (size_t)k < sizeof line; m++)
        k += snprintf(line + k, sizeof line - (size_t)k, " x%d %.4f", m, ms_mb[m]);
      es_trace("%s", line);
    } else if (rc != ES_OK) {
      es_trace("split: class %d not measured (%s): the model decides", cls, why);
    }
  }
  const int ok = ctx->split_state[cls] == 1;
  pthread_mutex_unlock(&ctx->split_lock);
  return ok;
}

/* What a split job of m GPUs took on this host, folded into its class's rate: the probe
 * runs once, on a probe image, and a host's copy rate moves with what else runs there (on
 * 4 x H200 a probe said two GPUs move 8192^2 fastest while 10240^2 then took 1.14x one GPU's
 * time; BENCHMARKS V1). Half the old rate, half the new: one slow call turns the count back,
 * one noisy call does not undo a measurement. Only jobs es_split_count chose the count of. */
void es_split_fold(double *ms_mb, const es_job *job, int m, double ms) {
  if (m < 1 || ms <= 0) return;
  const double move = ms - split_kernel_ms(job) / m; /* as the probe counts it */
  ms_mb[m] = 0.5 * ms_mb[m] + 0.5 * (move > 0 ? move : ms) / split_mb(job);
}

void es_split_observe(es_context *ctx, const es_job *job, int m, double ms) {
  if (m < 1 || m > ctx->ngpu || ctx->split_force > 0 || !es_split_measurable(job)) return;
  const int cls = es_split_class(job);
  pthread_mutex_lock(&ctx->split_lock);
  if (ctx->split_state[cls] == 1) es_split_fold(ctx->split_ms_mb[cls], job, m, ms);
  pthread_mutex_unlock(&ctx->split_lock);
}

int es_split_measurable(const es_job *job) {
  return !out_pinned_of(job) && (double)job->in.width * job->in.height >= ES_SPLIT_PROBE_MIN_PX;
}

int es_split_count(es_context *ctx, const es_job *job) {
  const int n = ctx->ngpu;
  if (n < 2) return 1;
  if (ctx->split_force > 0) return ctx->split_force < n ? ctx->split_force : n;
  if (!es_split_measurable(job) || !split_probe(ctx, es_split_class(job)))
    return es_split_gpus_for(job, n);
  return es_split_gpus_measured(job, n, ctx->split_ms_mb[es_split_class(job)]);
}

int es_cpu_threads_for(int64_t pixels, int max_threads) {
  int64_t n = pixels / ES_CPU_PIXELS_PER_THREAD;
  if (n < 1) n = 1;
  return n < max_threads ? (int)n : (max_threads > 0 ? max_threads : 1);
}

/* Not worth retrying: the job itself is wrong, another device would say the same. */
static int job_error(int rc) { return rc == ES_ERR_USAGE || rc == ES_ERR_INPUT; }

static void copy_msg(char *msg, size_t len, const char *why) {
  if (msg && len) snprintf(msg, len, "%s", why);
}

int es_run_job(es_context *ctx, const es_job *job, int target, int cpu_threads, int64_t frame,
               es_fault *fault, int *device, char *msg, size_t msglen) {
  char why[ES_ERRLEN];
  uint64_t excluded = 0; /* GPU indexes that failed this job */
  int first = 1, cpu_retried = 0, rc = ES_OK;
  *device = -1;
  if (target != ES_TARGET_CPU) es_ctx_gpus_wait(ctx);
  /* Listed GPUs that could not be opened fail every job from then on, the CPU's too: the
   * run ends at once, with the failure said once (es_ctx_gpus_failed). */
  if (ctx->gpu_strict && (rc = es_ctx_gpus_failed(ctx, why, sizeof why)) != ES_OK) {
    copy_msg(msg, msglen, why);
    return rc;
  }
  const int split_chosen = target == ES_TARGET_MULTI; /* its time goes to es_split_observe */

  if (target == ES_TARGET_MULTI) {
    es_pool_worker *pw[ES_MAX_GPUS];
    /* As many GPUs as pay for this job (es_split_gpus); fewer than two: one GPU. */
    const int most = es_split_count(ctx, job);
    int n = most >= 2 ? pool_acquire_all(ctx, pw, most) : 0;
    if (n >= 2) {
      es_gpu_worker *ws[ES_MAX_GPUS];
      for (int i = 0; i < n; i++) ws[i] = pw[i]->w;
      int broken = 0; /* fault injection: a GPU of the split fails every job */
      for (int i = 0; i < n; i++)
        broken |= es_fault_gpu(fault, ctx->gpu_ordinal[pw[i]->gpu]);
      why[0] = '\0';
      if (es_fault_take(fault, frame) || broken) {
        rc = ES_ERR_DEVICE;
        snprintf(why, sizeof why, "injected fault");
      } else {
        const double t0 = es_trace_ms();
        rc = es_split_run(ws, n, job, why, sizeof why);
        if (rc == ES_OK) es_split_observe(ctx, job, n, es_trace_ms() - t0);
      }
      /* Which device broke is not known here: no GPU is blamed, the retry goes to one GPU.
       * Nor is any acquitted: a success would reset the failure counts, and so would a
       * failed split, so that a GPU failing every job was never disabled while splits kept
       * coming (each failing first, then retried). */
      for (int i = 0; i < n; i++)
        pool_release(ctx, pw[i], rc == ES_OK ? 0 : -1);
      if (rc == ES_OK) {
        *device = ctx->gpu_ordinal[pw[0]->gpu];
        return ES_OK;
      }
      if (job_error(rc)) {
        copy_msg(msg, msglen, why);
        return rc;
      }
      atomic_fetch_add(&ctx->retries, 1);
      if (ctx->cfg.verbose >= 1)
        es_ctx_message(ctx, "warning: %d GPUs failed (%s): frame retried on one GPU", n, why);
      first = 0;
    }
    target = ES_TARGET_ANY_GPU;
  }

  for (;;) {
    if (target != ES_TARGET_CPU) {
      es_pool_worker *pw = pool_acquire(ctx, target, excluded);
      if (!pw && target >= 0) pw = pool_acquire(ctx, -1, excluded);
      if (!pw) {
        target = ES_TARGET_CPU;
        continue;
      }
      int ord = ctx->gpu_ordinal[pw->gpu];
      why[0] = '\0';
      if ((first && es_fault_take(fault, frame)) || es_fault_gpu(fault, ord)) {
        rc = ES_ERR_DEVICE;
        snprintf(why, sizeof why, "injected fault");
      } else {
        const double t0 = es_trace_ms();
        rc = es_gpu_run(pw->w, job, why, sizeof why);
        if (rc == ES_OK && split_chosen && first) es_split_observe(ctx, job, 1, es_trace_ms() - t0);
      }
      first = 0;
      pool_release(ctx, pw, rc != ES_OK && !job_error(rc));
      if (rc == ES_OK) {
        *device = ord;
        return ES_OK;
      }
      if (job_error(rc)) {
        copy_msg(msg, msglen, why);
        return rc;
      }
      excluded |= (uint64_t)1 << pw->gpu;
      atomic_fetch_add(&ctx->retries, 1);
      /* Another GPU if one is left that has not failed this job, else the CPU. */
      int other = -1;
      pthread_mutex_lock(&ctx->lock);
      for (int g = 0; g < ctx->ngpu && other < 0; g++)
        if (!(excluded >> g & 1) && gpu_enabled(ctx, g)) other = g;
      pthread_mutex_unlock(&ctx->lock);
      if (ctx->cfg.verbose >= 1) {
        if (other >= 0)
          es_ctx_message(ctx, "warning: GPU %d failed (%s): frame retried on GPU %d", ord,
                         why[0] ? why : "unknown error", ctx->gpu_ordinal[other]);
        else
          es_ctx_message(ctx, "warning: GPU %d failed (%s): frame retried on the CPU", ord,
                         why[0] ? why : "unknown error");
      }
      target = other >= 0 ? ES_TARGET_ANY_GPU : ES_TARGET_CPU;
      continue;
    }
    why[0] = '\0';
    if (first && es_fault_take(fault, frame)) {
      rc = ES_ERR_DEVICE;
      snprintf(why, sizeof why, "injected fault");
    } else {
      rc = es_cpu_run(job, es_cpu_threads_for((int64_t)job->in.width * job->in.height, cpu_threads),
                      why, sizeof why);
    }
    first = 0;
    if (rc == ES_OK) {
      *device = -1;
      return ES_OK;
    }
    /* The CPU is the last resort: it is tried again once only after a device-type failure
     * (which on the CPU only an injected fault produces); memory or internal errors stand. */
    if (rc == ES_ERR_DEVICE && !cpu_retried) {
      cpu_retried = 1;
      atomic_fetch_add(&ctx->retries, 1);
      if (ctx->cfg.verbose >= 1)
        es_ctx_message(ctx, "warning: CPU failed (%s): frame retried on the CPU",
                       why[0] ? why : "unknown error");
      continue;
    }
    copy_msg(msg, msglen, why[0] ? why : es_strerror(rc));
    return rc;
  }
}

/* ---- One-shot. ---- */

static int extents_overlap(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  if (!a || !b || !an || !bn) return 0;
  return pa < pb ? pb - pa < an : pa - pb < bn;
}

/* The outputs of a checked job must not overlap one another (ES_ERR_USAGE); one that
 * overlaps the input makes *in_overlap 1: the engines read the input while they write, in
 * bands on several threads, so the input is then copied first. */
static int job_overlaps(const es_job *job, int *in_overlap, char *msg, size_t msglen) {
  const es_image *in = &job->in;
  const void *p[4] = {job->map, NULL, NULL, NULL};
  size_t n[4] = {0, 0, 0, 0};
  const char *name[4] = {"the map", "rendering plane 0", "rendering plane 1", "rendering plane 2"};
  if (job->map)
    n[0] = es_rows_extent(job->map_stride * sizeof(float), in->height,
                          (size_t)in->width * sizeof(float));
  int fmt = job->render.format;
  for (int i = 0; fmt != ES_PIX_NONE && i < es_pix_planes(fmt); i++) {
    p[1 + i] = job->pix.plane[i];
    n[1 + i] = es_rows_extent(job->pix.stride[i], es_pix_plane_height(fmt, i, in->height),
                              es_pix_stride(fmt, i, in->width));
  }
  for (int i = 0; i < 4; i++) {
    for (int j = i + 1; j < 4; j++) {
      if (extents_overlap(p[i], n[i], p[j], n[j])) {
        snprintf(msg, msglen, "%s overlaps %s", name[i], name[j]);
        return ES_ERR_USAGE;
      }
    }
  }
  size_t in_n =
      es_rows_extent(in->stride, in->height, (size_t)in->width * es_depth_bytes(in->depth));
  *in_overlap = 0;
  for (int i = 0; i < 4; i++)
    *in_overlap |= extents_overlap(p[i], n[i], in->data, in_n);
  return ES_OK;
}

int es_compute(es_context *ctx, const es_image *img, float *out, size_t out_stride,
               es_stats *stats, const es_render *render, es_planes *pix) {
  char why[ES_ERRLEN] = "";
  int rc = ES_OK, device = -1;
  unsigned char *copy = NULL; /* the input, where an output overlaps it */
  if (!ctx) return ES_ERR_USAGE;
  if (!img) {
    es_ctx_set_error(ctx, "no image");
    return ES_ERR_USAGE;
  }
  /* cfg.gpu_background: the GPUs may still be opening, or not asked for yet. An image the
   * CPU takes whatever the GPUs (below cpu_below) neither waits for them nor opens them. */
  const int64_t pixels = (int64_t)img->width * img->height;
  if (!cpu_by_config(ctx, pixels)) es_ctx_gpus_wait(ctx);
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = *img;
  job.params = ctx->cfg.params;
  es_params_for_depth(&job.params, img->depth);
  job.map = out;
  job.map_stride = out_stride;
  job.stats = stats;
  job.stats_bins = ctx->cfg.stats_bins;
  if (render && render->format != ES_PIX_NONE) {
    if (!pix) {
      es_ctx_set_error(ctx, "a rendering was asked for without planes");
      return ES_ERR_USAGE;
    }
    job.render = *render;
    job.pix = *pix;
  } else {
    job.render.format = ES_PIX_NONE;
  }
  rc = es_job_check(&job, why, sizeof why);
  if (rc) goto end;
  int in_overlap = 0;
  rc = job_overlaps(&job, &in_overlap, why, sizeof why);
  if (rc) goto end;
  if (in_overlap) { /* written in place: compute from a copy of the input */
    size_t row = (size_t)img->width * es_depth_bytes(img->depth);
    copy = malloc(row * (size_t)img->height);
    if (!copy) {
      rc = ES_ERR_NOMEM;
      snprintf(why, sizeof why, "out of memory for a copy of the input (an output overlaps it)");
      goto end;
    }
    for (int y = 0; y < img->height; y++)
      memcpy(copy + row * (size_t)y, (const unsigned char *)img->data + img->stride * (size_t)y,
             row);
    job.in.data = copy;
    job.in.stride = row;
  }
  int64_t index = atomic_fetch_add(&ctx->compute_calls, 1);
  int target = es_pick_target(ctx, pixels, 1);
  rc = es_run_job(ctx, &job, target, ctx->threads, index, &ctx->fault, &device, why, sizeof why);
end:
  free(copy);
  if (rc) es_ctx_set_error(ctx, "%s", why[0] ? why : es_strerror(rc));
  return rc;
}

/* ---- One-shot on device memory (es_compute_device). ---- */

int es_compute_device(es_context *ctx, int device, const es_image *img, float *out,
                      size_t out_stride, es_stats *stats) {
  char why[ES_ERRLEN] = "";
  int rc = ES_OK, gpu = -1, in_overlap = 0;
  es_pool_worker *pw = NULL;
  if (!ctx) return ES_ERR_USAGE;
  if (!img) {
    es_ctx_set_error(ctx, "no image");
    return ES_ERR_USAGE;
  }
  es_ctx_gpus_wait(ctx);
  es_job job;
  memset(&job, 0, sizeof job);
  job.in = *img;
  job.params = ctx->cfg.params;
  job.map = out;
  job.map_stride = out_stride;
  job.stats = stats;
  job.stats_bins = ctx->cfg.stats_bins;
  job.render.format = ES_PIX_NONE;
  if ((rc = es_ctx_gpus_failed(ctx, why, sizeof why)) != ES_OK) goto end;
  rc = es_job_check(&job, why, sizeof why);
  if (rc) goto end;
  rc = job_overlaps(&job, &in_overlap, why, sizeof why);
  if (rc) goto end;
  if (in_overlap) { /* es_compute copies the input first; that copy would be a host trip */
    rc = ES_ERR_USAGE;
    snprintf(why, sizeof why, "the map overlaps the input");
    goto end;
  }
  for (int g = 0; g < ctx->ngpu && gpu < 0; g++)
    if (ctx->gpu_cuda[g] == device) gpu = g; /* the caller's memory: CUDA's ordinal */
  if (gpu < 0) {
    rc = ES_ERR_DEVICE;
    snprintf(why, sizeof why, "GPU %d: not a GPU this context computes on (%d GPUs%s)", device,
             ctx->ngpu, ctx->cfg.device == ES_DEVICE_CPU ? ", device cpu" : "");
    goto end;
  }
  /* On that GPU only, and no retry elsewhere: the buffers live on it, and the CPU cannot
   * read them. */
  pw = pool_acquire(ctx, gpu, 0);
  if (!pw) {
    rc = ES_ERR_DEVICE;
    snprintf(why, sizeof why, "GPU %d: not used any more after repeated failures", device);
    goto end;
  }
  rc = es_gpu_run(pw->w, &job, why, sizeof why);
  pool_release(ctx, pw, rc != ES_OK && !job_error(rc));
end:
  if (rc) es_ctx_set_error(ctx, "%s", why[0] ? why : es_strerror(rc));
  return rc;
}
