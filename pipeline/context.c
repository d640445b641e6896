/*
 * context.c - the library context: status codes, configuration defaults and checks, opening
 * the GPUs (a pool of workers, ES_GPU_WORKERS_PER_DEVICE per device), version information.
 * Device scheduling and es_compute live in device.c, the streaming engine in stream.c.
 */
#include <dirent.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_io.h"
#include "es_pipeline_internal.h"

#ifndef ES_BUILD_TYPE
#define ES_BUILD_TYPE "unknown"
#endif

const char *es_strerror(int status) {
  switch (status) {
  case ES_OK: return "success";
  case ES_ERR_USAGE: return "usage error";
  case ES_ERR_INPUT: return "input error";
  case ES_ERR_OUTPUT: return "output error";
  case ES_ERR_DEVICE: return "device error";
  case ES_ERR_NOMEM: return "out of memory";
  case ES_ERR_INTERRUPTED: return "interrupted";
  case ES_ERR_EOF: return "end of stream";
  case ES_ERR_AGAIN: return "try again";
  case ES_ERR_INTERNAL: return "internal error";
  default: return "unknown error";
  }
}

int es_exit_code(int status) {
  switch (status) {
  case ES_OK:
  case ES_ERR_EOF: return 0;
  case ES_ERR_USAGE: return 1;
  case ES_ERR_INPUT: return 2;
  case ES_ERR_OUTPUT: return 3;
  case ES_ERR_INTERRUPTED: return 130;
  /* AGAIN is flow and should never reach an exit: if it does, it is a bug (4). */
  default: return 4;
  }
}

void es_config_default(es_config *c) {
  if (!c) return;
  memset(c, 0, sizeof *c);
  es_params_default(&c->params);
  c->device = ES_DEVICE_AUTO;
  c->ngpus = 0;
  c->cpu_below = -1;
  c->threads = 0;
  c->stats_bins = 16;
  c->queue = 0; /* es_config_queue */
  c->verbose = 1;
}

void es_ctx_message(const es_context *ctx, const char *fmt, ...) {
  char line[2 * ES_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (ctx->cfg.message)
    ctx->cfg.message(ctx->cfg.message_user, line);
  else
    fprintf(stderr, "entropy-stream: %s\n", line);
}

/* The last error each thread got from each of the last ES_TL_ERR_CONTEXTS contexts it got one
 * from: several threads calling es_compute on one context (the CLI's batch) each read back
 * their own message, not whatever another thread failed with in between, also where a
 * thread works with two contexts (one slot was once kept: an error on the second context
 * made the thread read another thread's message from the first). */
#define ES_TL_ERR_CONTEXTS 4
typedef struct tl_err_slot {
  unsigned long long serial; /* the context's serial; 0: unused */
  unsigned long long used;   /* tl_err_tick when last written: the oldest slot is reused */
  char msg[ES_ERRLEN];
} tl_err_slot;
static _Thread_local tl_err_slot tl_err[ES_TL_ERR_CONTEXTS]; /* this thread's */
static _Thread_local unsigned long long tl_err_tick;         /* this thread's */
/* Context serials (from 1): the address alone would match a later context created where a
 * destroyed one was, and hand it a message another thread got from the old one. */
static atomic_ullong g_ctx_serial;

static tl_err_slot *tl_err_find(unsigned long long serial) {
  for (int i = 0; i < ES_TL_ERR_CONTEXTS; i++)
    if (tl_err[i].serial == serial) return &tl_err[i];
  return NULL;
}

void es_ctx_set_error(es_context *ctx, const char *fmt, ...) {
  char tmp[ES_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&ctx->lock);
  memcpy(ctx->err, tmp, sizeof tmp);
  pthread_mutex_unlock(&ctx->lock);
  tl_err_slot *t = tl_err_find(ctx->serial);
  if (!t) { /* an unused slot (used 0), else the one written longest ago */
    t = &tl_err[0];
    for (int i = 1; i < ES_TL_ERR_CONTEXTS; i++)
      if (tl_err[i].used < t->used) t = &tl_err[i];
  }
  memcpy(t->msg, tmp, sizeof tmp);
  t->serial = ctx->serial;
  t->used = ++tl_err_tick;
}

static int online_cores(void) {
#ifdef ES_HAVE_OPENMP
  int n = omp_get_num_procs();
#else
  long n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return n > 0 ? (int)n : 1;
}

/* Checks everything that does not depend on the GPUs present. */
static int config_check(const es_config *c, char *msg, size_t len) {
  /* Depth 16 allows every level count; the per-image depth is checked at compute time. */
  int rc = es_params_check(&c->params, 16, msg, len);
  if (rc) return rc;
  /* The rules are core/params.c's (es_param_check), as the CLI's and Python's are. */
  if ((rc = es_param_check_enum("device", c->device, msg, len))) return rc;
  if (c->ngpus < 0 || c->ngpus > ES_MAX_GPUS) {
    snprintf(msg, len, "gpus: 0..%d entries allowed", ES_MAX_GPUS);
    return ES_ERR_USAGE;
  }
  if ((rc = es_param_check("threads", c->threads, msg, len)) ||
      (rc = es_param_check("stats_bins", c->stats_bins, msg, len)))
    return rc;
  /* queue 0: the default (es_config_queue) */
  if (c->queue != 0 && (rc = es_param_check("queue", c->queue, msg, len))) return rc;
  return ES_OK;
}

/* The entries of CUDA_VISIBLE_DEVICES, or -1 where it is not set. */
static int gpus_env_count(void) {
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  int n = 0;
  if (!v) return -1;
  for (const char *p = v; *p;) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    n++;
    while (*p && *p != ',') p++;
  }
  return n;
}

/* The GPUs the NVIDIA driver lists in /proc, or -1 where it lists none there (no driver
 * loaded, or one that does not keep that list, as under WSL). */
static int gpus_proc_count(void) {
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* How many GPUs "all visible" most likely is, without initialising CUDA (0.2-1.1 s): the
 * entries of CUDA_VISIBLE_DEVICES where it is set, else the driver's list of GPUs. Sizes the
 * default queue, and lets a --gpus list open in the background; opening the GPUs finds the
 * true number. */
static int gpus_visible_of(int driver) { /* driver: the driver's count, or -1 */
  const int env = gpus_env_count();
  return env >= 0 ? env : driver > 0 ? driver : 0;
}
static int gpus_visible_hint(void) { return gpus_visible_of(gpus_proc_count()); }

/* A GPU list may open in the background when every ordinal in it is one the driver's list
 * shows, and none is listed twice; otherwise the context opens first, as before, and
 * gpus_choose says exactly what is wrong at once (no driver at all, as on a machine without
 * GPUs, fails there in milliseconds). A list that passes here and still cannot be opened
 * fails the work later (es_ctx_gpus_failed). */
static int gpus_list_plausible(const es_config *c, const es_fault *f) {
  const int drv = f->drv_gpus > 0 ? f->drv_gpus : gpus_proc_count();
  if (drv <= 0) return 0;
  const int hint = gpus_visible_of(drv);
  /* Under gpus_env the list was checked against the driver's when it became the
   * environment, whose entries are now all CUDA sees. */
  if (c->gpus_env) return c->ngpus > 0 && c->ngpus <= hint;
  for (int i = 0; i < c->ngpus; i++) {
    if (c->gpus[i] < 0 || c->gpus[i] >= hint) return 0;
    for (int j = 0; j < i; j++)
      if (c->gpus[j] == c->gpus[i]) return 0;
  }
  return 1;
}

int es_config_gpus_env(es_config *c) {
  if (!c || c->gpus_env || c->ngpus <= 0 || c->ngpus > ES_MAX_GPUS ||
      c->device == ES_DEVICE_CPU || !es_gpu_built() || getenv("CUDA_VISIBLE_DEVICES"))
    return 0;
  es_fault *f = malloc(sizeof *f); /* drvgpus= (tests); large for a stack */
  if (!f) return 0;
  es_fault_parse(f, getenv("ES_FAULT_INJECT"));
  const int ok = gpus_list_plausible(c, f);
  free(f);
  if (!ok) return 0;
  char list[ES_MAX_GPUS * 12 + 1];
  int n = 0;
  for (int i = 0; i < c->ngpus; i++)
    n += snprintf(list + n, sizeof list - (size_t)n, "%s%d", i ? "," : "", c->gpus[i]);
  /* The list's order: entry i is CUDA's ordinal i (gpus_choose). */
  if (setenv("CUDA_VISIBLE_DEVICES", list, 0) != 0) return 0;
  c->gpus_env = 1;
  es_trace("context: CUDA_VISIBLE_DEVICES=%s (the listed GPUs only)", list);
  return 1;
}

int es_config_queue(const es_config *c) {
  es_config def;
  if (!c) { /* the defaults, as es_context_create reads a NULL configuration */
    es_config_default(&def);
    c = &def;
  }
  if (c->queue > 0) return c->queue;
  int n = 0;
  if (c->device != ES_DEVICE_CPU && es_gpu_built()) n = c->ngpus > 0 ? c->ngpus : gpus_visible_hint();
  if (n > ES_MAX_GPUS) n = ES_MAX_GPUS;
  /* 4 frames a GPU: measured on 4 x H200, 1080p K=51, 8 frames kept 4 GPUs at 4151 fps and
   * 16 at 6592 (BENCHMARKS F2); one or two GPUs gain nothing above 8 (S11). */
  return 4 * n > 8 ? 4 * n : 8;
}

/* Chooses the GPUs to open: ord, CUDA's ordinals; label, what messages and results call
 * them (the list's ordinals, which differ under gpus_env). Checks a --gpus list against what
 * is visible. A build without CUDA says so ("no GPU visible" alone sent the user looking for
 * a driver). */
#ifdef ES_HAVE_CUDA
#define ES_NO_GPU "no GPU visible"
#else
#define ES_NO_GPU "built without CUDA"
#endif
static int gpus_choose(const es_config *c, int visible, int *ord, int *label, int *n,
                       char *msg, size_t len) {
  *n = 0;
  if (c->device == ES_DEVICE_CPU) return ES_OK;
  if (c->ngpus == 0) {
    for (int i = 0; i < visible && i < ES_MAX_GPUS; i++) {
      label[*n] = i;
      ord[(*n)++] = i;
    }
  } else {
    for (int i = 0; i < c->ngpus; i++) {
      int g = c->gpus[i];
      const int cu = c->gpus_env ? i : g; /* CUDA's ordinal of the entry */
      if (g < 0 || cu >= visible) {
        /* A GPU asked for that is not there: a device problem, as --device gpu without
         * one is (ES_ERR_DEVICE), not a bad value. */
        if (visible == 0)
          snprintf(msg, len, "gpus %d: " ES_NO_GPU, g);
        else
          snprintf(msg, len, "gpus %d: only %d GPU%s visible (0..%d)", g, visible,
                   visible == 1 ? "" : "s", visible - 1);
        return g < 0 ? ES_ERR_USAGE : ES_ERR_DEVICE;
      }
      for (int j = 0; j < i; j++) {
        if (c->gpus[j] == g) {
          snprintf(msg, len, "gpus %d: listed twice", g);
          return ES_ERR_USAGE;
        }
      }
      label[*n] = g;
      ord[(*n)++] = cu;
    }
  }
  if (*n == 0 && c->device == ES_DEVICE_GPU) {
    snprintf(msg, len, ES_NO_GPU " (device gpu)");
    return ES_ERR_DEVICE;
  }
  return ES_OK;
}

/* Runs fn on the n items of `size` bytes at `items`, each on a thread of its own, and
 * waits for all of them. One item runs on the calling thread, as does any item whose
 * thread cannot start (or beyond ES_MAX_GPUS): the work is done either way. */
static void run_each(void *(*fn)(void *), void *items, size_t size, int n) {
  pthread_t th[ES_MAX_GPUS];
  char started[ES_MAX_GPUS] = {0};
  for (int i = 0; i < n; i++) {
    void *item = (char *)items + (size_t)i * size;
    if (n > 1 && i < ES_MAX_GPUS && pthread_create(&th[i], NULL, fn, item) == 0)
      started[i] = 1;
    else
      fn(item);
  }
  for (int i = 0; i < n && i < ES_MAX_GPUS; i++)
    if (started[i]) pthread_join(th[i], NULL);
}

/* The workers of one GPU, opened on a thread of their own: each GPU's context creation,
 * module load and warm-up take a few hundred milliseconds, and the GPUs open in parallel. */
typedef struct gpu_open {
  int ordinal;                                   /* in: the device */
  int blocking_sync;                             /* in: cfg.gpu_blocking_sync */
  es_gpu_worker *w[ES_GPU_WORKERS_PER_DEVICE];   /* out: all opened, or none */
  char why[ES_ERRLEN];                           /* out: the reason when none */
} gpu_open;

typedef struct worker_open {
  int ordinal;
  int warm; /* worker 0: with the warm-up job */
  es_gpu_worker *w;
  char why[ES_ERRLEN];
} worker_open;

static void *worker_open_main(void *arg) {
  worker_open *o = arg;
  int rc = o->warm ? es_gpu_worker_create(&o->w, o->ordinal, o->why, sizeof o->why)
                   : es_gpu_worker_create_cold(&o->w, o->ordinal, o->why, sizeof o->why);
  if (rc != ES_OK) o->w = NULL;
  return NULL;
}

/* Worker 0 first, warmed up (it creates the device's context and loads the kernels), then
 * the others in parallel and without a warm-up job of their own (which cost 20-90 ms each
 * on the GPU machines while the context was busy). */
static void *gpu_open_main(void *arg) {
  gpu_open *g = arg;
  worker_open o[ES_GPU_WORKERS_PER_DEVICE];
  int ok = 1;
  memset(o, 0, sizeof o);
  for (int k = 0; k < ES_GPU_WORKERS_PER_DEVICE; k++) o[k].ordinal = g->ordinal;
  o[0].warm = 1;
  es_trace("GPU %d: opening worker 0", g->ordinal);
  /* Before worker 0 makes the context: its waits then sleep from the first one. */
  if (g->blocking_sync) es_gpu_set_blocking_sync(g->ordinal);
  worker_open_main(&o[0]);
  if (o[0].w) run_each(worker_open_main, &o[1], sizeof o[1], ES_GPU_WORKERS_PER_DEVICE - 1);
  for (int k = 0; k < ES_GPU_WORKERS_PER_DEVICE; k++) {
    if (!o[k].w && ok) {
      ok = 0;
      snprintf(g->why, sizeof g->why, "%s", o[k].why[0] ? o[k].why : "unknown error");
    }
  }
  for (int k = 0; k < ES_GPU_WORKERS_PER_DEVICE; k++) {
    if (ok)
      g->w[k] = o[k].w;
    else
      es_gpu_worker_destroy(&o[k].w); /* all or none */
  }
  es_trace("GPU %d: open%s", g->ordinal, ok ? "" : " failed");
  return NULL;
}

/* Opens ES_GPU_WORKERS_PER_DEVICE workers on each chosen GPU (the GPUs in parallel). Under
 * auto with all GPUs, a GPU that cannot be opened is skipped with a warning; a GPU asked
 * for by name or under --device gpu is an error. */
static int gpus_open(es_context *ctx, const int *ord, const int *label, int n, char *msg,
                     size_t len) {
  int rc = ES_OK;
  int strict = ctx->cfg.device == ES_DEVICE_GPU || ctx->cfg.ngpus > 0;
  gpu_open *g = calloc((size_t)n + 1, sizeof *g);
  ctx->workers = calloc((size_t)n * ES_GPU_WORKERS_PER_DEVICE + 1, sizeof *ctx->workers);
  if (!g || !ctx->workers) {
    snprintf(msg, len, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  for (int i = 0; i < n; i++) {
    g[i].ordinal = ord[i];
    g[i].blocking_sync = ctx->cfg.gpu_blocking_sync;
  }
  run_each(gpu_open_main, g, sizeof *g, n);
  for (int i = 0; i < n; i++) {
    if (!g[i].w[0]) {
      if (strict) {
        snprintf(msg, len, "GPU %d: cannot open: %s", label[i], g[i].why);
        rc = ES_ERR_DEVICE;
        continue; /* the other GPUs' workers are freed below */
      }
      if (ctx->cfg.verbose >= 1)
        es_ctx_message(ctx, "warning: GPU %d unusable (%s): not used", label[i], g[i].why);
      continue;
    }
    for (int k = 0; k < ES_GPU_WORKERS_PER_DEVICE; k++) {
      ctx->workers[ctx->nworkers].w = g[i].w[k];
      ctx->workers[ctx->nworkers].gpu = ctx->ngpu;
      ctx->nworkers++;
      g[i].w[k] = NULL;
    }
    ctx->gpu_cuda[ctx->ngpu] = ord[i];
    ctx->gpu_ordinal[ctx->ngpu++] = label[i];
  }
  if (rc != ES_OK) goto end;
  if (ctx->ngpu == 0 && ctx->cfg.device == ES_DEVICE_GPU) {
    snprintf(msg, len, "no usable GPU (device gpu)");
    rc = ES_ERR_DEVICE;
  }
end:
  if (g)
    for (int i = 0; i < n; i++)
      for (int k = 0; k < ES_GPU_WORKERS_PER_DEVICE; k++) es_gpu_worker_destroy(&g[i].w[k]);
  free(g);
  return rc;
}

/* Finishes the GPU part of a context: the GPU list in the configuration, then the flag
 * that lets other threads read the GPU fields. */
static void gpus_publish(es_context *ctx) {
  ctx->cfg.ngpus = ctx->ngpu;
  for (int i = 0; i < ctx->ngpu; i++) ctx->cfg.gpus[i] = ctx->gpu_ordinal[i];
  pthread_mutex_lock(&ctx->lock);
  atomic_store_explicit(&ctx->gpus_ready, 1, memory_order_release);
  pthread_cond_broadcast(&ctx->gpus_cond);
  pthread_mutex_unlock(&ctx->lock);
}

int es_ctx_gpus_ready(const es_context *ctx) {
  return atomic_load_explicit(&((es_context *)ctx)->gpus_ready, memory_order_acquire);
}

void es_ctx_gpus_wait(const es_context *ctx) {
  if (es_ctx_gpus_ready(ctx)) return;
  es_ctx_gpus_demand(ctx); /* a waiter wants them: open them if nobody asked yet */
  es_context *c = (es_context *)ctx; /* the lock is not part of the logical state */
  pthread_mutex_lock(&c->lock);
  while (!atomic_load_explicit(&c->gpus_ready, memory_order_acquire))
    pthread_cond_wait(&c->gpus_cond, &c->lock);
  pthread_mutex_unlock(&c->lock);
}

static void *gpus_background_main(void *arg);

void es_ctx_gpus_demand(const es_context *ctx) {
  es_context *c = (es_context *)ctx; /* the opening is not part of the logical state */
  if (!c->gpu_lazy || atomic_exchange(&c->gpu_demanded, 1)) return;
  es_trace("context: GPUs asked for");
  pthread_mutex_lock(&c->lock);
  c->gpu_thread_started = pthread_create(&c->gpu_thread, NULL, gpus_background_main, c) == 0;
  const int started = c->gpu_thread_started;
  pthread_mutex_unlock(&c->lock);
  /* No thread: opened here, on the caller's thread (the work waits, but gets its GPUs). */
  if (!started) gpus_background_main(c);
}

int es_ctx_gpus_demanded(const es_context *ctx) {
  return !ctx->gpu_lazy || atomic_load(&((es_context *)ctx)->gpu_demanded);
}

/* cfg.gpu_background: the GPUs opened on a thread of their own. Under auto with all GPUs
 * nothing here is an error: a GPU that cannot be opened is skipped (gpus_open warns), and
 * with none the context stays CPU-only. A list's failure is kept for the work to fail on
 * (gpu_strict). */
static void *gpus_background_main(void *arg) {
  es_context *ctx = arg;
  char why[ES_ERRLEN] = "";
  int ord[ES_MAX_GPUS], label[ES_MAX_GPUS], nord = 0;
  es_trace("context: opening GPUs in the background");
  if (ctx->fault.open_delay_ms > 0) usleep((useconds_t)ctx->fault.open_delay_ms * 1000);
  int visible = es_gpu_device_count();
  es_trace("context: %d GPU(s) visible", visible);
  int rc = gpus_choose(&ctx->cfg, visible, ord, label, &nord, why, sizeof why);
  if (rc == ES_OK) rc = gpus_open(ctx, ord, label, nord, why, sizeof why);
  if (rc != ES_OK) {
    if (ctx->gpu_strict) {
      snprintf(ctx->gpu_fail_msg, sizeof ctx->gpu_fail_msg, "%s", why[0] ? why : es_strerror(rc));
      atomic_store(&ctx->gpu_failed, rc);
      es_trace("context: the listed GPUs cannot be opened: %s", ctx->gpu_fail_msg);
    } else if (ctx->cfg.verbose >= 1) {
      es_ctx_message(ctx, "warning: GPUs not used: %s", why[0] ? why : "error");
    }
    for (int i = 0; i < ctx->nworkers; i++) es_gpu_worker_destroy(&ctx->workers[i].w);
    ctx->nworkers = 0;
    ctx->ngpu = 0;
  }
  gpus_publish(ctx);
  es_trace("context: GPUs ready (%d)", ctx->ngpu);
  return NULL;
}

int es_ctx_gpus_failed(const es_context *ctx, char *msg, size_t len) {
  const int rc = ctx->gpu_strict ? atomic_load(&((es_context *)ctx)->gpu_failed) : ES_OK;
  if (rc != ES_OK && msg && len) snprintf(msg, len, "%s", ctx->gpu_fail_msg);
  return rc;
}

int es_ctx_gpus_settle(const es_context *ctx, char *msg, size_t len) {
  if (!ctx->gpu_strict || !es_ctx_gpus_demanded(ctx)) return ES_OK;
  es_ctx_gpus_wait(ctx);
  return es_ctx_gpus_failed(ctx, msg, len);
}

int es_context_create(es_context **out, const es_config *cfg, char *msg, size_t msglen) {
  char tmp[ES_ERRLEN];
  es_context *ctx = NULL;
  int rc = ES_OK;
  if (!msg || !msglen) { /* no room for even the terminator: messages go nowhere */
    msg = tmp;
    msglen = sizeof tmp;
  }
  msg[0] = '\0';
  if (!out) return ES_ERR_USAGE;
  *out = NULL;
  es_config def;
  if (!cfg) {
    es_config_default(&def);
    cfg = &def;
  }
  rc = config_check(cfg, msg, msglen);
  if (rc) goto end;
  ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    snprintf(msg, msglen, "out of memory");
    rc = ES_ERR_NOMEM;
    goto end;
  }
  ctx->serial = atomic_fetch_add(&g_ctx_serial, 1) + 1;
  ctx->cfg = *cfg;
  ctx->cfg.queue = es_config_queue(cfg);
  pthread_mutex_init(&ctx->lock, NULL);
  pthread_mutex_init(&ctx->split_lock, NULL);
  pthread_cond_init(&ctx->worker_free, NULL);
  pthread_cond_init(&ctx->gpus_cond, NULL);
  atomic_init(&ctx->gpus_ready, 0);
  atomic_init(&ctx->gpu_demanded, 0);
  atomic_init(&ctx->gpu_failed, ES_OK);
  atomic_init(&ctx->retries, 0);
  atomic_init(&ctx->compute_calls, 0);
  atomic_init(&ctx->refs, 1);
  es_fault_parse(&ctx->fault, getenv("ES_FAULT_INJECT"));
  /* In the background under auto: all GPUs, or a list the driver shows (a listed GPU that
   * then cannot open fails the work before its outputs are committed). Device gpu opens
   * first: no work may start without one. Without CUDA built there is nothing to open: the
   * context is complete (CPU only) when created, and never reads as "GPUs still opening". */
  /* (Tests: ES_FAULT_INJECT=bglist takes the list's background path where no driver is,
   * so the listed GPUs' failure to open reaches the runs as on a GPU host whose GPU
   * refuses.) */
  const int background =
      cfg->gpu_background && cfg->device == ES_DEVICE_AUTO && es_gpu_built() &&
      (cfg->ngpus == 0 || ctx->fault.bglist || gpus_list_plausible(cfg, &ctx->fault));
  ctx->threads = cfg->threads > 0 ? cfg->threads : online_cores();
  ctx->cfg.threads = ctx->threads;
  if (ctx->cfg.cpu_below < 0) ctx->cfg.cpu_below = ES_DEFAULT_CPU_BELOW;
  (void)es_tables_get(); /* build the shared tables now, not inside the first job */

  if (background) {
    /* Opened at the first work that could use a GPU (es_ctx_gpus_demand), on a thread of
     * their own: a run of small images, or one that ends first, never starts CUDA. */
    ctx->gpu_lazy = 1;
    ctx->gpu_strict = cfg->ngpus > 0;
    *out = ctx;
    return ES_OK;
  }
  /* Here: without gpu_background. */
  int ord[ES_MAX_GPUS], label[ES_MAX_GPUS], nord = 0;
  int visible = cfg->device == ES_DEVICE_CPU ? 0 : es_gpu_device_count();
  es_trace("context: %d GPU(s) visible", visible);
  rc = gpus_choose(cfg, visible, ord, label, &nord, msg, msglen);
  if (rc) goto end;
  rc = gpus_open(ctx, ord, label, nord, msg, msglen);
  if (rc) goto end;
  /* The configuration in force lists the GPUs actually used. */
  gpus_publish(ctx);
  if (ctx->cfg.verbose >= 2)
    es_ctx_message(ctx, "%d GPU%s, %d CPU thread%s, cpu-below %lld pixel%s", ctx->ngpu,
                   ctx->ngpu == 1 ? "" : "s", ctx->threads, ctx->threads == 1 ? "" : "s",
                   (long long)ctx->cfg.cpu_below, ctx->cfg.cpu_below == 1 ? "" : "s");
  *out = ctx;
  ctx = NULL;
end:
  es_context_destroy(&ctx);
  return rc;
}

void es_ctx_ref(es_context *ctx) { atomic_fetch_add(&ctx->refs, 1); }

/* The workers of one GPU, closed in turn on one thread (frees of page-locked staging and
 * device memory, stream and event teardown). */
typedef struct gpu_close {
  es_context *ctx;
  int gpu; /* index into gpu_ordinal */
} gpu_close;

static void *gpu_close_main(void *arg) {
  gpu_close *c = arg;
  for (int i = 0; i < c->ctx->nworkers; i++)
    if (c->ctx->workers[i].gpu == c->gpu) es_gpu_worker_destroy(&c->ctx->workers[i].w);
  return NULL;
}

/* Every GPU's workers closed, the GPUs in parallel: each GPU's frees take the driver some
 * milliseconds, and with four GPUs in turn they added up at the end of every run. */
static void gpus_close(es_context *ctx) {
  gpu_close c[ES_MAX_GPUS];
  const double t0 = es_trace_ms();
  if (ctx->nworkers == 0) return;
  for (int g = 0; g < ctx->ngpu; g++) c[g] = (gpu_close){ctx, g};
  run_each(gpu_close_main, c, sizeof c[0], ctx->ngpu);
  for (int i = 0; i < ctx->nworkers; i++) es_gpu_worker_destroy(&ctx->workers[i].w); /* any left */
  es_trace("context: %d GPU(s) closed in %.1f ms", ctx->ngpu, es_trace_ms() - t0);
}

void es_ctx_unref(es_context *ctx) {
  if (atomic_fetch_sub(&ctx->refs, 1) != 1) return;
  /* Under ES_TRACE, how many jobs failed on a device and ran again elsewhere: a test running
   * on the GPU with -q sees a silent fallback to the CPU here (its output alone would match). */
  es_trace("context: done, %lld job(s) retried", (long long)atomic_load(&ctx->retries));
  pthread_mutex_lock(&ctx->lock);
  const int started = ctx->gpu_thread_started;
  pthread_mutex_unlock(&ctx->lock);
  if (started) pthread_join(ctx->gpu_thread, NULL);
  gpus_close(ctx);
  free(ctx->workers);
  pthread_cond_destroy(&ctx->gpus_cond);
  pthread_cond_destroy(&ctx->worker_free);
  pthread_mutex_destroy(&ctx->lock);
  pthread_mutex_destroy(&ctx->split_lock);
  free(ctx);
}

/* The caller's handle goes; the context with it unless streams still use it (their
 * workers read it until es_stream_destroy). */
void es_context_destroy(es_context **pctx) {
  if (!pctx || !*pctx) return;
  es_context *ctx = *pctx;
  tl_err_slot *t = tl_err_find(ctx->serial);
  if (t) t->serial = t->used = 0; /* the slot is free for another context */
  *pctx = NULL;
  es_ctx_unref(ctx);
}

/* Worker threads may record an error while the caller reads one: the caller gets a copy
 * taken under the lock, in a buffer of its own thread, valid until its next call here. */
const char *es_context_error(const es_context *ctx) {
  static _Thread_local char copy[ES_ERRLEN];
  if (!ctx) return "";
  const tl_err_slot *t = tl_err_find(ctx->serial); /* this thread's own last error on ctx */
  if (t) return t->msg;
  es_context *c = (es_context *)ctx; /* the lock is not part of the logical state */
  pthread_mutex_lock(&c->lock);
  memcpy(copy, c->err, sizeof copy);
  pthread_mutex_unlock(&c->lock);
  return copy;
}

int es_context_gpus_open(const es_context *ctx) { return ctx ? es_ctx_gpus_ready(ctx) : 0; }

int es_context_gpus_asked(const es_context *ctx) { return ctx ? es_ctx_gpus_demanded(ctx) : 0; }

void es_context_expect(const es_context *ctx, int64_t pixels) {
  if (ctx && ctx->cfg.device == ES_DEVICE_AUTO && pixels >= ctx->cfg.cpu_below)
    es_ctx_gpus_demand(ctx);
}

int es_context_gpu_count(const es_context *ctx) {
  if (!ctx) return 0;
  es_ctx_gpus_wait(ctx);
  return ctx->ngpu;
}

const es_config *es_context_config(const es_context *ctx) {
  if (!ctx) return NULL;
  es_ctx_gpus_wait(ctx);
  return &ctx->cfg;
}

int64_t es_context_retries(const es_context *ctx) {
  return ctx ? (int64_t)atomic_load(&((es_context *)ctx)->retries) : 0;
}

/* Appends to buf like snprintf, keeping the total length even when truncated. */
static void add(char *buf, size_t len, int *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, int *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t used = (size_t)*n < len ? (size_t)*n : len;
  int k = vsnprintf(buf ? buf + used : NULL, buf && len > used ? len - used : 0, fmt, ap);
  va_end(ap);
  if (k > 0) *n += k;
}

int es_host_pin(void *p, size_t bytes) { return es_gpu_host_register(p, bytes); }
void es_host_unpin(void *p) { es_gpu_host_unregister(p); }

int es_version_info(char *buf, size_t len) {
  char line[512];
  int n = 0;
  if (buf && len) buf[0] = '\0';
  add(buf, len, &n, "entropy-stream %s (%s build)\n", ES_VERSION_STRING, ES_BUILD_TYPE);
  line[0] = '\0';
  es_io_versions(line, sizeof line);
  add(buf, len, &n, "%s\n", line);
  line[0] = '\0';
  es_gpu_versions(line, sizeof line);
  add(buf, len, &n, "%s\n", line);
  int ngpu = es_gpu_device_count();
  if (ngpu == 0) add(buf, len, &n, "GPUs: none visible\n");
  for (int i = 0; i < ngpu; i++) {
    line[0] = '\0';
    if (es_gpu_describe(i, line, sizeof line) != ES_OK && !line[0])
      snprintf(line, sizeof line, "GPU %d: (no description)", i);
    add(buf, len, &n, "%s\n", line);
  }
#ifdef ES_HAVE_OPENMP
  add(buf, len, &n, "OpenMP: %d threads\n", omp_get_max_threads());
#else
  add(buf, len, &n, "OpenMP: not built (%d cores)\n", online_cores());
#endif
  return n;
}

/* What computes: never waits for GPUs still opening (those have computed nothing yet). */
const char *es_context_describe(es_context *ctx, char *buf, size_t len) {
  if (!es_context_gpus_open(ctx)) {
    /* GPUs never asked for (no frame a GPU could take): CUDA was not started at all. */
    snprintf(buf, len, es_context_gpus_asked(ctx) ? "CPU (GPUs still opening)" : "CPU");
    return buf;
  }
  int n = es_context_gpu_count(ctx);
  const es_config *c = es_context_config(ctx);
  if (n <= 0)
    snprintf(buf, len, "CPU");
  else if (c && c->device == ES_DEVICE_AUTO)
    snprintf(buf, len, "GPU x%d + CPU", n);
  else
    snprintf(buf, len, "GPU x%d", n);
  return buf;
}
