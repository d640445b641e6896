/*
 * stream.c - the streaming engine: a fixed pool of cfg.queue frames, bounded work queues
 * (one mutex, condition variables, shutdown/abort flags, in the manner of zstd's pool.c),
 * compute threads (ES_GPU_WORKERS_PER_DEVICE per GPU, each borrowing a worker of its GPU
 * from the context's pool per frame, plus CPU workers), and a reorder ring so that
 * es_stream_pull returns frames strictly in push order.
 *
 * Life of a frame slot: FREE -> (acquire) ACQUIRED -> (push) QUEUED -> (a worker) RUNNING ->
 * DONE -> (pull) PULLED -> (release) FREE. Memory is the pool and nothing else: every buffer
 * belongs to a slot, so whatever the input length at most cfg.queue frames exist. A lent
 * input (es_frame.lend) is the producer's memory, held by one slot until it is released,
 * so at most cfg.queue of those are held either.
 *
 * Errors of a frame: the worker keeps the message in the slot, and es_stream_pull records
 * it on the context when it hands that frame over (in the consumer's thread). A worker
 * never writes the context's message itself: it would overwrite, at any moment, the error
 * a caller's own call just recorded (or the message of an earlier failed frame).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "es_pipeline_internal.h"

enum slot_state { SLOT_FREE, SLOT_ACQUIRED, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE, SLOT_PULLED };

typedef struct es_slot {
  es_frame f;           /* first member: an es_frame * is its slot. Owned by whoever holds
                         * the slot in its current state (producer, worker, consumer). */
  struct es_slot *next; /* link in the free list or a work queue; guarded by s->lock */
  int state;            /* enum slot_state; guarded by s->lock */
  int to_gpu;           /* set at push (producer) */
  int stealable;        /* set at push: on the CPU queue only because the GPUs were still
                         * opening; an idle GPU thread may take it */
  /* The slot's buffers. f.data, f.map and f.pix.plane[] show them to the caller, who can
   * write those fields (a lending producer may set data to NULL, a consumer clear map):
   * the stream reads its buffers only from here, and sets the frame's fields from them at
   * acquire, reserve and push. Changed only by the producer while ACQUIRED. */
  void *data_buf;      /* input samples: data_cap bytes */
  float *map_buf;      /* map: map_cap floats */
  uint8_t *pix_buf[3]; /* rendered planes: pix_cap[i] bytes */
  size_t data_cap;
  size_t map_cap;
  size_t pix_cap[3];
  /* Page-locking (es_gpu_host_register) of the buffers data, map, planes 0..2: 0 not asked,
   * 1 page-locked, 2 refused (not asked again: the slot comes round every few frames, and
   * a refused cudaHostRegister cost a failing call each time). Set by a GPU thread while
   * RUNNING, cleared when the producer or destroy frees the buffer. */
  unsigned char reg[5];
  char err[ES_ERRLEN];  /* "frame N: why" when f.status != ES_OK: written by the worker
                         * (RUNNING), read by es_stream_pull (DONE -> PULLED) */
} es_slot;

typedef struct es_worker_arg {
  struct es_stream *s;
  int target;      /* ES_TARGET_CPU or a GPU index */
  int cpu_threads; /* OpenMP threads for CPU jobs */
  es_cpu_scratch scratch; /* the CPU's map for --range auto, kept from frame to frame */
} es_worker_arg;

struct es_stream {
  es_context *ctx;          /* immutable; a reference (es_ctx_ref) held until destroy */
  es_stream_config sc;      /* immutable */
  int gpu_possible;         /* immutable: GPUs may compute (buffers page-aligned, registered) */
  atomic_int gpu_on;        /* 1 once the GPU threads run: frames may go to them */
  pthread_t joiner;         /* waits for GPUs opening in the background, starts their threads */
  int joiner_started;       /* guarded by lock: set once (open, or the first frame that could
                             * use a GPU: gpus_want); destroy reads it after shutdown */
  atomic_int joiner_asked;  /* 1 once the joiner started or need not (gpus_want's fast test) */
  int cap_threads;          /* immutable: room in threads/args */
  int nslots;               /* immutable: cfg.queue */
  es_slot *slots;           /* immutable array; each slot as es_slot says */
  es_slot **ring;           /* guarded by lock: [index % nslots] = pushed, not pulled frame */
  /* The threads started (nthreads of cap_threads): not immutable after open, as the joiner
   * adds the GPU threads then, under lock; destroy reads them after joining the joiner. */
  pthread_t *threads;       /* as nthreads */
  es_worker_arg *args;      /* as nthreads */
  int nthreads;             /* as above */
  int cpu_threads;          /* immutable: OpenMP threads per CPU worker */

  pthread_mutex_t lock;     /* guards everything below */
  pthread_cond_t free_cond; /* a slot went back to the pool, or abort */
  /* A frame was queued for the CPU workers / the GPU threads, or shutdown/abort. Two, and
   * signalled rather than broadcast: waking every worker for every frame (8 CPU workers
   * and 3 threads a GPU) cost the decode thread about 0.3 ms a frame (BENCHMARKS S8). */
  pthread_cond_t cpu_cond, gpu_cond;
  pthread_cond_t done_cond; /* a frame finished, or finish/abort */
  es_slot *free_head;       /* free slots (stack) */
  es_slot *cpu_head, *cpu_tail; /* frames waiting for a CPU worker (FIFO) */
  es_slot *gpu_head, *gpu_tail; /* frames waiting for a GPU thread (FIFO) */
  int64_t next_index;       /* index the next pushed frame gets */
  int64_t next_pull;        /* index the next pull returns */
  int live;                 /* slots out of the free list (<= nslots) */
  int max_live;             /* high-water mark of live, for tests */
  int finished;             /* es_stream_finish was called */
  int aborted;              /* es_stream_abort (or destroy): every wait returns */
  int shutdown;             /* destroy: workers exit */
  es_fault fault;           /* this stream's injected faults (atomics inside) */
  atomic_int pin_asks;      /* es_gpu_host_register calls made, for tests */
  /* The rate once the GPUs joined (ES_TRACE's last stream line; BENCHMARKS Z7: a run's
   * whole rate now includes their opening). Under lock. */
  double join_ms;           /* when gpu_on was set; 0 before */
  double last_done_ms;      /* when the last frame finished */
  int64_t done_after_join;  /* frames finished after join_ms */
};

static size_t bytes_per_sample(int depth) { return es_depth_bytes(depth); }
static int depth_ok(int depth) { return depth == 8 || depth == 16 || depth == 32; }

/* Every buffer of a slot (input, map, rendered planes) is page-locked before a GPU computes
 * it: the GPU engine then copies straight between them and the device, with no staging
 * copy on host threads (which, for pageable outputs, cost more than the transfers
 * themselves and competed with the decoder and encoder for the cores). The buffers are
 * plain page-aligned allocations, registered by the first GPU thread that runs the slot
 * (slot_register), so that frames can start on the CPU while CUDA is still starting. */
#define ES_PAGE 4096
static size_t page_round(size_t bytes) { return (bytes + ES_PAGE - 1) / ES_PAGE * ES_PAGE; }

static void *buf_alloc(const es_stream *s, size_t bytes) {
  if (!s->gpu_possible) return malloc(bytes ? bytes : 1);
  return aligned_alloc(ES_PAGE, page_round(bytes ? bytes : 1));
}

static void buf_free(void *p, unsigned char *reg) {
  if (p && *reg == 1) es_gpu_host_unregister(p);
  *reg = 0;
  free(p);
}

/* Page-locks the slot's buffers not asked yet (a GPU thread holding the slot); a refusal
 * is kept until the buffer is freed (the reader's lent buffers do the same, c5678db). */
static void slot_register(es_stream *s, es_slot *sl) {
  void *p[5] = {sl->data_buf, sl->map_buf, sl->pix_buf[0], sl->pix_buf[1], sl->pix_buf[2]};
  size_t n[5] = {sl->data_cap, sl->map_cap * sizeof(float), sl->pix_cap[0], sl->pix_cap[1],
                 sl->pix_cap[2]};
  for (int i = 0; i < 5; i++) {
    if (!p[i] || sl->reg[i]) continue;
    atomic_fetch_add(&s->pin_asks, 1);
    const int ok = !s->fault.nopin && es_gpu_host_register(p[i], page_round(n[i]));
    sl->reg[i] = ok ? 1 : 2;
  }
}

static void data_free(es_slot *sl) {
  buf_free(sl->data_buf, &sl->reg[0]);
  sl->data_buf = sl->f.data = NULL;
  sl->data_cap = 0;
}

static int data_grow(es_stream *s, es_slot *sl, size_t need) {
  if (need <= sl->data_cap) return ES_OK;
  data_free(sl);
  sl->data_buf = sl->f.data = buf_alloc(s, need);
  if (!sl->data_buf) return ES_ERR_NOMEM;
  sl->data_cap = need;
  return ES_OK;
}

/* Makes the map and rendering buffers of a slot fit w x h (allocated with the slot when
 * the stream knows its largest frame, grown here otherwise). */
static int outputs_grow(es_stream *s, es_slot *sl, int w, int h) {
  if (s->sc.want_map) {
    size_t need = (size_t)w * (size_t)h;
    if (need > sl->map_cap) {
      buf_free(sl->map_buf, &sl->reg[1]);
      sl->map_buf = buf_alloc(s, need * sizeof(float));
      sl->map_cap = sl->map_buf ? need : 0;
      if (!sl->map_buf) return ES_ERR_NOMEM;
    }
  }
  int fmt = s->sc.render.format;
  for (int i = 0; i < es_pix_planes(fmt); i++) {
    size_t need = es_pix_stride(fmt, i, w) * (size_t)es_pix_plane_height(fmt, i, h);
    if (need > sl->pix_cap[i]) {
      buf_free(sl->pix_buf[i], &sl->reg[2 + i]);
      sl->pix_buf[i] = buf_alloc(s, need);
      sl->pix_cap[i] = sl->pix_buf[i] ? need : 0;
      if (!sl->pix_buf[i]) return ES_ERR_NOMEM;
    }
  }
  return ES_OK;
}

/* Builds the job of a frame; the frame's own buffers receive the results. */
static void frame_job(es_stream *s, es_slot *sl, es_job *job) {
  es_frame *f = &sl->f;
  memset(job, 0, sizeof *job);
  job->in.data = f->lend ? f->lend : sl->data_buf;
  job->in.width = f->width;
  job->in.height = f->height;
  job->in.stride = f->stride;
  job->in.depth = f->depth;
  /* The frame's mask, else the stream's (one mask for every frame), else none. */
  job->in.mask = f->mask ? f->mask : s->sc.mask;
  job->in.mask_stride = f->mask ? f->mask_stride : s->sc.mask_stride;
  job->params = s->ctx->cfg.params;
  es_params_for_depth(&job->params, f->depth);
  job->map = s->sc.want_map ? sl->map_buf : NULL;
  job->map_stride = f->map_stride;
  job->stats = s->sc.want_stats ? &f->stats : NULL;
  job->stats_bins = s->ctx->cfg.stats_bins;
  job->render = s->sc.render;
  job->pix = f->pix; /* strides; the planes: */
  for (int i = 0; i < 3; i++)
    job->pix.plane[i] = sl->pix_buf[i];
}

static void run_frame(es_stream *s, es_worker_arg *a, es_slot *sl) {
  char why[ES_ERRLEN] = "";
  es_job job;
  frame_job(s, sl, &job);
  job.scratch = &a->scratch;
  int device = -1;
  int rc = es_job_check(&job, why, sizeof why);
  if (rc == ES_OK && a->target != ES_TARGET_CPU) slot_register(s, sl);
  if (rc == ES_OK)
    rc = es_run_job(s->ctx, &job, a->target, a->cpu_threads, sl->f.index, &s->fault, &device,
                    why, sizeof why);
  sl->f.status = rc;
  sl->f.device = device;
  sl->err[0] = '\0';
  if (rc != ES_OK) {
    /* Recorded on the context by es_stream_pull, when the consumer gets this frame. */
    snprintf(sl->err, sizeof sl->err, "frame %lld: %.480s", (long long)sl->f.index,
             why[0] ? why : es_strerror(rc));
    if (s->ctx->cfg.verbose >= 2)
      es_ctx_message(s->ctx, "frame %lld: %s", (long long)sl->f.index,
                     why[0] ? why : es_strerror(rc));
  }
}

/* The next frame for a worker (under s->lock), unlinked from its queue, or NULL. A GPU
 * thread with nothing of its own takes the oldest stealable frame of the CPU queue. */
static es_slot *take_work(es_stream *s, int gpu) {
  es_slot **head = gpu ? &s->gpu_head : &s->cpu_head;
  es_slot **tail = gpu ? &s->gpu_tail : &s->cpu_tail;
  es_slot *sl = *head, *prev = NULL;
  if (!sl && gpu) {
    head = &s->cpu_head;
    tail = &s->cpu_tail;
    for (sl = *head; sl && !sl->stealable; sl = sl->next) prev = sl;
  }
  if (!sl) return NULL;
  if (prev)
    prev->next = sl->next;
  else
    *head = sl->next;
  if (*tail == sl) *tail = prev;
  sl->next = NULL;
  return sl;
}

static void *worker_main(void *arg) {
  es_worker_arg *a = arg;
  es_stream *s = a->s;
  int gpu = a->target != ES_TARGET_CPU;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    es_slot *sl = NULL;
    while (!s->aborted && !s->shutdown && !(sl = take_work(s, gpu)))
      pthread_cond_wait(gpu ? &s->gpu_cond : &s->cpu_cond, &s->lock);
    if (!sl) break; /* aborted or shut down */
    sl->state = SLOT_RUNNING;
    pthread_mutex_unlock(&s->lock);

    run_frame(s, a, sl);

    pthread_mutex_lock(&s->lock);
    if (s->join_ms > 0 && es_trace_enabled()) { /* a trace line only: no clock otherwise */
      s->done_after_join++;
      s->last_done_ms = es_trace_ms();
    }
    sl->state = SLOT_DONE;
    pthread_cond_broadcast(&s->done_cond);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Starts ES_GPU_WORKERS_PER_DEVICE threads per GPU of the context (whose GPUs are open),
 * then lets frames go to them. ES_OK also when there are none to start. */
static int gpu_threads_start(es_stream *s) {
  const es_context *ctx = s->ctx;
  int rc = ES_OK;
  if (ctx->cfg.device == ES_DEVICE_CPU || ctx->ngpu == 0) return ES_OK;
  int n = ctx->ngpu * ES_GPU_WORKERS_PER_DEVICE;
  pthread_mutex_lock(&s->lock);
  const int before = s->nthreads; /* the CPU workers */
  for (int k = 0; k < n && s->nthreads < s->cap_threads && !s->shutdown; k++) {
    es_worker_arg *a = &s->args[s->nthreads];
    a->s = s;
    a->target = k / ES_GPU_WORKERS_PER_DEVICE;
    a->cpu_threads = ctx->threads;
    if (pthread_create(&s->threads[s->nthreads], NULL, worker_main, a) != 0) {
      rc = ES_ERR_NOMEM;
      break;
    }
    s->nthreads++;
  }
  /* Even with fewer threads than asked for, those that run can take GPU frames; with none
   * (the CPU workers alone), frames queued for the GPUs would wait for ever. */
  if (s->nthreads > before) {
    atomic_store(&s->gpu_on, 1);
    s->join_ms = es_trace_ms();
  }
  pthread_mutex_unlock(&s->lock);
  /* No verbose line: from the joiner it could land after the caller's own last line. */
  es_trace("stream: %d GPU thread(s)", n);
  return rc;
}

/* The GPUs open in the background (cfg.gpu_background): wait for them, then start their
 * threads. Until then every frame goes to the CPU workers. */
static void *joiner_main(void *arg) {
  es_stream *s = arg;
  es_ctx_gpus_wait(s->ctx);
  if (gpu_threads_start(s) != ES_OK && s->ctx->cfg.verbose >= 1)
    es_ctx_message(s->ctx, "warning: not every GPU thread could start");
  es_trace("stream: GPU threads started");
  return NULL;
}

/* Starts the joiner under the lock (not after shutdown). */
static int joiner_start_locked(es_stream *s) {
  if (s->joiner_started || s->shutdown) return ES_OK;
  if (pthread_create(&s->joiner, NULL, joiner_main, s) != 0) return ES_ERR_NOMEM;
  s->joiner_started = 1;
  return ES_OK;
}

/* A frame of `pixels` is about to be computed: where a GPU could take it (auto, cpu_below
 * or more) and the context's GPUs were not asked for yet (gpu_background opens them at the
 * first such frame), ask for them and start the joiner that lets them in. A stream of small
 * frames never starts CUDA. */
static void gpus_want(es_stream *s, int64_t pixels) {
  if (atomic_load(&s->joiner_asked)) return;
  const es_context *ctx = s->ctx;
  if (!s->gpu_possible || ctx->cfg.device == ES_DEVICE_CPU || pixels < ctx->cfg.cpu_below) return;
  if (atomic_exchange(&s->joiner_asked, 1)) return;
  es_ctx_gpus_demand(ctx);
  pthread_mutex_lock(&s->lock);
  const int rc = joiner_start_locked(s);
  pthread_mutex_unlock(&s->lock);
  if (rc != ES_OK && ctx->cfg.verbose >= 1)
    es_ctx_message(ctx, "warning: the GPUs cannot join the stream (no thread): CPU only");
}

int es_stream_open(es_context *ctx, const es_stream_config *sc, es_stream **out) {
  int rc = ES_OK;
  es_stream *s = NULL;
  if (!out) return ES_ERR_USAGE;
  *out = NULL;
  if (!ctx || !sc) return ES_ERR_USAGE;
  int fmt = sc->render.format;
  if (fmt != ES_PIX_NONE && es_pix_planes(fmt) == 0) {
    es_ctx_set_error(ctx, "bad rendering format");
    return ES_ERR_USAGE;
  }
  /* Checked here as es_compute checks them, rather than failing every frame later. */
  if (fmt != ES_PIX_NONE) {
    char why[96];
    if (es_param_check_enum("colormap", sc->render.colormap, why, sizeof why) != ES_OK ||
        es_param_check_real("overlay", sc->render.overlay, why, sizeof why) != ES_OK) {
      es_ctx_set_error(ctx, "%s", why);
      return ES_ERR_USAGE;
    }
  }
  if (sc->max_width < 0 || sc->max_height < 0 || (sc->max_width > 0) != (sc->max_height > 0) ||
      (sc->max_width > 0 && !depth_ok(sc->depth))) {
    es_ctx_set_error(ctx, "stream frame size %dx%d depth %d: bad", sc->max_width,
                     sc->max_height, sc->depth);
    return ES_ERR_USAGE;
  }

  s = calloc(1, sizeof *s);
  rc = ES_ERR_NOMEM; /* until the pool and the threads stand */
  if (!s) goto end;
  s->ctx = ctx;
  es_ctx_ref(ctx); /* released by es_stream_destroy */
  s->sc = *sc;
  s->gpu_possible = ctx->cfg.device != ES_DEVICE_CPU && es_gpu_built();
  atomic_init(&s->gpu_on, 0);
  atomic_init(&s->joiner_asked, 0);
  atomic_init(&s->pin_asks, 0);
  s->nslots = ctx->cfg.queue;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->free_cond, NULL);
  pthread_cond_init(&s->cpu_cond, NULL);
  pthread_cond_init(&s->gpu_cond, NULL);
  pthread_cond_init(&s->done_cond, NULL);
  es_fault_copy(&s->fault, &ctx->fault);
  s->slots = calloc((size_t)s->nslots, sizeof *s->slots);
  s->ring = calloc((size_t)s->nslots, sizeof *s->ring);
  if (!s->slots || !s->ring) goto end;
  for (int i = 0; i < s->nslots; i++) {
    es_slot *sl = &s->slots[i];
    sl->state = SLOT_FREE;
    if (sc->max_width > 0) {
      size_t bps = bytes_per_sample(sc->depth);
      if (data_grow(s, sl, (size_t)sc->max_width * bps * (size_t)sc->max_height) ||
          outputs_grow(s, sl, sc->max_width, sc->max_height))
        goto end;
    }
    sl->next = s->free_head;
    s->free_head = sl;
  }

  /* Threads. GPU: ES_GPU_WORKERS_PER_DEVICE per GPU, so the copies of one frame overlap the
   * kernel of another. CPU: min(threads, queue) workers sharing the cores (more workers
   * than frames in flight would idle), each with threads/workers OpenMP threads: many
   * single-thread workers for many small frames on few cores, no oversubscription. CPU
   * workers exist when frames can be routed to the CPU: no GPU, or --device auto (which
   * includes GPUs still opening in the background: every frame goes to the CPU until
   * they are open, then the GPU threads start, from the joiner thread). */
  const int ready = es_ctx_gpus_ready(ctx);
  int ncpu = 0;
  if (!ready || ctx->ngpu == 0 || ctx->cfg.device != ES_DEVICE_GPU) {
    ncpu = ctx->threads < s->nslots ? ctx->threads : s->nslots;
    if (ncpu < 1) ncpu = 1;
  }
  s->cpu_threads = ncpu > 0 ? ctx->threads / ncpu : ctx->threads;
  if (s->cpu_threads < 1) s->cpu_threads = 1;
  s->cap_threads = ncpu + (s->gpu_possible ? ES_MAX_GPUS * ES_GPU_WORKERS_PER_DEVICE : 0);
  s->threads = calloc((size_t)s->cap_threads + 1, sizeof *s->threads);
  s->args = calloc((size_t)s->cap_threads + 1, sizeof *s->args);
  if (!s->threads || !s->args) goto end;
  for (int i = 0; i < ncpu; i++) {
    es_worker_arg *a = &s->args[i];
    a->s = s;
    a->target = ES_TARGET_CPU;
    a->cpu_threads = s->cpu_threads;
    if (pthread_create(&s->threads[i], NULL, worker_main, a) != 0) goto end;
    s->nthreads++;
  }
  if (ready) {
    atomic_store(&s->joiner_asked, 1);
    if (gpu_threads_start(s) != ES_OK) goto end;
  } else if (es_ctx_gpus_demanded(ctx)) { /* opening already: the joiner now */
    atomic_store(&s->joiner_asked, 1);
    pthread_mutex_lock(&s->lock);
    rc = joiner_start_locked(s);
    pthread_mutex_unlock(&s->lock);
    if (rc != ES_OK) goto end;
    rc = ES_ERR_NOMEM;
  } /* else: at the first frame a GPU could take (gpus_want) */
  es_trace("stream: pool of %d frames, %d CPU worker(s)%s", s->nslots, ncpu,
           ready ? "" : ", GPUs joining when open");
  if (ctx->cfg.verbose >= 2)
    es_ctx_message(ctx, "stream: %d frame%s, %d CPU worker%s x %d thread%s", s->nslots,
                   s->nslots == 1 ? "" : "s", ncpu, ncpu == 1 ? "" : "s", s->cpu_threads,
                   s->cpu_threads == 1 ? "" : "s");
  *out = s;
  s = NULL;
  rc = ES_OK;
end:
  if (rc) es_ctx_set_error(ctx, "out of memory for the frame pool or its threads");
  es_stream_destroy(&s);
  return rc;
}

int es_stream_acquire(es_stream *s, es_frame **out) {
  if (!s || !out) return ES_ERR_USAGE;
  *out = NULL;
  pthread_mutex_lock(&s->lock);
  while (!s->free_head && !s->aborted) pthread_cond_wait(&s->free_cond, &s->lock);
  if (s->aborted) {
    pthread_mutex_unlock(&s->lock);
    return ES_ERR_INTERRUPTED;
  }
  es_slot *sl = s->free_head;
  s->free_head = sl->next;
  sl->next = NULL;
  sl->state = SLOT_ACQUIRED;
  if (++s->live > s->max_live) s->max_live = s->live;
  pthread_mutex_unlock(&s->lock);

  es_frame *f = &sl->f;
  f->index = -1;
  f->pts = INT64_MIN;
  f->pts_seconds = NAN;
  f->user = NULL;
  f->damaged = 0;
  f->status = ES_OK;
  f->device = -1;
  f->lend = NULL;
  f->lend_release = NULL;
  f->lend_arg = NULL;
  f->mask = NULL; /* the stream's own, if any */
  f->mask_stride = 0;
  f->data = sl->data_buf; /* whatever the last holder left in the field */
  sl->err[0] = '\0';
  memset(&f->stats, 0, sizeof f->stats);
  if (s->sc.max_width > 0) {
    f->width = s->sc.max_width;
    f->height = s->sc.max_height;
    f->depth = s->sc.depth;
    f->stride = (size_t)f->width * bytes_per_sample(f->depth);
  } else {
    f->width = f->height = 0;
    f->depth = 8;
    f->stride = 0;
  }
  *out = f;
  return ES_OK;
}

/* The slot of a frame of this stream's pool, or NULL for any other pointer: a frame of
 * another stream (its state is that stream's, under that stream's lock), or an es_frame of
 * the caller's own (a slot's fields would be read past its end). */
static es_slot *slot_of(const es_stream *s, es_frame *f) {
  uintptr_t p = (uintptr_t)f, base = (uintptr_t)s->slots;
  if (!f || !s->slots || p < base) return NULL;
  uintptr_t off = p - base;
  if (off >= (uintptr_t)s->nslots * sizeof(es_slot) || off % sizeof(es_slot) != 0) return NULL;
  return (es_slot *)f;
}

/* 1 when the caller holds the frame as a producer (acquired, not pushed): only then may its
 * buffers change. Records the error otherwise (`what`: the call). */
static int held_by_producer(es_stream *s, es_slot *sl, const char *what) {
  if (!sl) {
    es_ctx_set_error(s->ctx, "%s of a frame not from this stream", what);
    return 0;
  }
  pthread_mutex_lock(&s->lock);
  int held = sl->state == SLOT_ACQUIRED;
  pthread_mutex_unlock(&s->lock);
  if (!held) es_ctx_set_error(s->ctx, "%s of a frame not acquired", what);
  return held;
}

/* What es_compute would refuse of a frame's geometry (es_image_check: a side the engines
 * cannot pad, a stride shorter than a row or whose rows span past the address space),
 * recorded as the context's error: reserve and push refuse it before any buffer is sized. */
static int geometry_check(es_stream *s, const es_image *in) {
  char why[ES_ERRLEN];
  int rc = es_image_check(in, why, sizeof why);
  if (rc != ES_OK) es_ctx_set_error(s->ctx, "%s", why);
  return rc;
}

int es_stream_reserve(es_stream *s, es_frame *f, int width, int height, int depth) {
  if (!s || !f) return ES_ERR_USAGE;
  es_slot *sl = slot_of(s, f);
  if (!held_by_producer(s, sl, "reserve")) return ES_ERR_USAGE;
  if (width < 1 || height < 1 || !depth_ok(depth)) {
    es_ctx_set_error(s->ctx, "frame %dx%d depth %d: bad size", width, height, depth);
    return ES_ERR_USAGE;
  }
  size_t bps = bytes_per_sample(depth);
  if ((size_t)width > SIZE_MAX / bps / (size_t)height / sizeof(float)) {
    es_ctx_set_error(s->ctx, "frame %dx%d: too large", width, height);
    return ES_ERR_INPUT;
  }
  /* A frame the push would refuse (a side the engines cannot pad) gets no buffers either. */
  es_image in = {NULL, width, height, (size_t)width * bps, depth};
  int rc = geometry_check(s, &in);
  if (rc != ES_OK) return rc;
  gpus_want(s, (int64_t)width * height); /* before the frame is filled: CUDA starts sooner */
  if (data_grow(s, sl, (size_t)width * bps * (size_t)height) ||
      outputs_grow(s, sl, width, height)) {
    es_ctx_set_error(s->ctx, "out of memory for a %dx%d frame", width, height);
    return ES_ERR_NOMEM;
  }
  f->data = sl->data_buf;
  f->width = width;
  f->height = height;
  f->depth = depth;
  f->stride = (size_t)width * bps;
  return ES_OK;
}

int es_stream_push(es_stream *s, es_frame *f) {
  if (!s || !f) return ES_ERR_USAGE;
  es_slot *sl = slot_of(s, f);
  if (!held_by_producer(s, sl, "push")) return ES_ERR_USAGE;
  if (f->width < 1 || f->height < 1 || !depth_ok(f->depth) ||
      (!sl->data_buf && !f->lend)) {
    es_ctx_set_error(s->ctx, "frame %dx%d depth %d: bad size (es_stream_reserve first)",
                     f->width, f->height, f->depth);
    return ES_ERR_USAGE;
  }
  if (!f->lend && f->data != sl->data_buf) {
    /* The stream would compute (and later free) memory it does not own. */
    es_ctx_set_error(s->ctx, "push: frame data is not the stream's buffer (lend other memory "
                             "with es_frame.lend)");
    return ES_ERR_USAGE;
  }
  /* Refused here, before any output buffer is sized for it, rather than failing the frame
   * later: the frame stays the producer's. A lent frame has no buffer of ours to check it
   * against otherwise. */
  es_image in = {f->lend ? f->lend : f->data, f->width, f->height, f->stride, f->depth,
                 f->mask ? f->mask : s->sc.mask, f->mask ? f->mask_stride : s->sc.mask_stride};
  if (!f->mask && s->sc.mask &&
      (f->width != s->sc.mask_width || f->height != s->sc.mask_height)) {
    es_ctx_set_error(s->ctx, "%dx%d, the mask %dx%d: not the same size", f->width, f->height,
                     s->sc.mask_width, s->sc.mask_height);
    return ES_ERR_INPUT;
  }
  int rc = geometry_check(s, &in);
  if (rc != ES_OK) return rc;
  size_t row = (size_t)f->width * bytes_per_sample(f->depth);
  /* stride * (height - 1) + row <= data_cap, with no product that can wrap (a huge stride
   * once passed and the workers read far outside the buffer). */
  if (!f->lend && es_rows_extent(f->stride, f->height, row) > sl->data_cap) {
    es_ctx_set_error(s->ctx, "frame %dx%d stride %zu: larger than its buffer", f->width,
                     f->height, f->stride);
    return ES_ERR_USAGE;
  }
  if (outputs_grow(s, sl, f->width, f->height)) {
    es_ctx_set_error(s->ctx, "out of memory for a %dx%d frame", f->width, f->height);
    return ES_ERR_NOMEM;
  }
  f->map = s->sc.want_map ? sl->map_buf : NULL;
  f->map_stride = s->sc.want_map ? (size_t)f->width : 0;
  for (int i = 0; i < 3; i++) {
    f->pix.plane[i] = sl->pix_buf[i];
    f->pix.stride[i] = i < es_pix_planes(s->sc.render.format)
                           ? es_pix_stride(s->sc.render.format, i, f->width)
                           : 0;
  }
  f->status = ES_OK;
  f->device = -1;
  int64_t pixels = (int64_t)f->width * f->height;
  gpus_want(s, pixels); /* a lent frame was never reserved */
  /* gpu_on (acquire) also makes the context's GPU fields readable. Before it, a frame the
   * GPUs would take goes to the CPU queue, stealable by the GPU threads once they run. */
  const int gpu_on = atomic_load(&s->gpu_on);
  sl->to_gpu = gpu_on && es_pick_target(s->ctx, pixels, 0) != ES_TARGET_CPU;
  sl->stealable = !gpu_on && s->gpu_possible && s->ctx->cfg.device != ES_DEVICE_CPU &&
                  pixels >= s->ctx->cfg.cpu_below;

  pthread_mutex_lock(&s->lock);
  if (s->aborted) {
    rc = ES_ERR_INTERRUPTED;
  } else if (s->finished || sl->state != SLOT_ACQUIRED) {
    es_ctx_set_error(s->ctx, s->finished ? "push after finish" : "push of a frame not acquired");
    rc = ES_ERR_USAGE;
  } else {
    f->index = s->next_index++;
    s->ring[f->index % s->nslots] = sl;
    sl->state = SLOT_QUEUED;
    sl->next = NULL;
    es_slot **head = sl->to_gpu ? &s->gpu_head : &s->cpu_head;
    es_slot **tail = sl->to_gpu ? &s->gpu_tail : &s->cpu_tail;
    if (*tail)
      (*tail)->next = sl;
    else
      *head = sl;
    *tail = sl;
    /* One worker of the queue's kind; a GPU thread too for a frame it may steal. */
    pthread_cond_signal(sl->to_gpu ? &s->gpu_cond : &s->cpu_cond);
    if (sl->stealable) pthread_cond_signal(&s->gpu_cond);
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int es_stream_finish(es_stream *s) {
  if (!s) return ES_ERR_USAGE;
  pthread_mutex_lock(&s->lock);
  s->finished = 1;
  pthread_cond_broadcast(&s->done_cond);
  pthread_mutex_unlock(&s->lock);
  return ES_OK;
}

int es_stream_pull(es_stream *s, es_frame **out) {
  if (!s || !out) return ES_ERR_USAGE;
  *out = NULL;
  int rc = ES_OK;
  es_slot *failed = NULL; /* a pulled frame whose error goes on the context */
  pthread_mutex_lock(&s->lock);
  for (;;) {
    if (s->aborted) {
      rc = ES_ERR_INTERRUPTED;
      break;
    }
    es_slot *sl = s->ring[s->next_pull % s->nslots];
    if (s->next_pull < s->next_index && sl && sl->state == SLOT_DONE) {
      s->ring[s->next_pull % s->nslots] = NULL;
      s->next_pull++;
      sl->state = SLOT_PULLED;
      *out = &sl->f;
      if (sl->f.status != ES_OK) failed = sl;
      break;
    }
    if (s->finished && s->next_pull == s->next_index) {
      rc = ES_ERR_EOF;
      break;
    }
    pthread_cond_wait(&s->done_cond, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  /* The slot is the caller's now (PULLED): its message is stable. */
  if (failed)
    es_ctx_set_error(s->ctx, "%s", failed->err[0] ? failed->err : es_strerror(failed->f.status));
  return rc;
}

/* Detaches a lent input from its frame, for the caller to give back (lend_give) outside
 * the stream's lock. */
typedef struct lend_ret {
  void (*fn)(void *);
  void *arg;
} lend_ret;
static lend_ret lend_take(es_frame *f) {
  lend_ret r = {f->lend_release, f->lend_arg};
  f->lend = NULL;
  f->lend_release = NULL;
  f->lend_arg = NULL;
  return r;
}
static void lend_give(lend_ret r) {
  if (r.fn) r.fn(r.arg);
}

void es_stream_release(es_stream *s, es_frame *f) {
  es_slot *sl = s ? slot_of(s, f) : NULL;
  if (!sl) return; /* not a frame of this stream: nothing to give back */
  lend_ret lent = {NULL, NULL};
  pthread_mutex_lock(&s->lock);
  /* Only a frame the caller holds (acquired and not pushed, or pulled) may go back. */
  if (sl->state == SLOT_ACQUIRED || sl->state == SLOT_PULLED) {
    lent = lend_take(f); /* before the slot is free for another producer */
    sl->state = SLOT_FREE;
    sl->next = s->free_head;
    s->free_head = sl;
    s->live--;
    pthread_cond_signal(&s->free_cond);
  }
  pthread_mutex_unlock(&s->lock);
  lend_give(lent); /* the producer's release may be slow (an unpin): not under the lock */
}

/* Sets aborted (and shutdown: the workers exit) and wakes every wait (under s->lock). */
static void stop_locked(es_stream *s, int shutdown) {
  s->aborted = 1;
  if (shutdown) s->shutdown = 1;
  pthread_cond_broadcast(&s->free_cond);
  pthread_cond_broadcast(&s->cpu_cond);
  pthread_cond_broadcast(&s->gpu_cond);
  pthread_cond_broadcast(&s->done_cond);
}

void es_stream_abort(es_stream *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  stop_locked(s, 0);
  pthread_mutex_unlock(&s->lock);
}

/* Internal (tests): how many times the stream asked to page-lock a buffer. */
int es_stream_pin_asks(es_stream *s) { return atomic_load(&s->pin_asks); }

/* Internal (tests): the most frames that were out of the pool at once. */
int es_stream_max_live(es_stream *s) {
  pthread_mutex_lock(&s->lock);
  int n = s->max_live;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void es_stream_destroy(es_stream **ps) {
  if (!ps || !*ps) return;
  es_stream *s = *ps;
  /* Stop: workers finish the frame they hold (a job cannot be interrupted) and exit. */
  pthread_mutex_lock(&s->lock);
  stop_locked(s, 1);
  pthread_mutex_unlock(&s->lock);
  /* The joiner first: it may still add threads (none once shutdown is seen). No joiner
   * starts after the shutdown above (joiner_start_locked). */
  pthread_mutex_lock(&s->lock);
  const int joiner = s->joiner_started;
  pthread_mutex_unlock(&s->lock);
  if (joiner) pthread_join(s->joiner, NULL);
  for (int i = 0; i < s->nthreads; i++) pthread_join(s->threads[i], NULL);
  if (s->done_after_join > 0 && s->last_done_ms > s->join_ms)
    es_trace("stream: %lld frame(s) after the GPUs joined, in %.1f ms (%.1f fps)",
             (long long)s->done_after_join, s->last_done_ms - s->join_ms,
             s->done_after_join * 1e3 / (s->last_done_ms - s->join_ms));
  for (int i = 0; s->args && i < s->nthreads; i++) es_cpu_scratch_free(&s->args[i].scratch);
  if (s->slots) {
    for (int i = 0; i < s->nslots; i++) {
      es_slot *sl = &s->slots[i];
      lend_give(lend_take(&sl->f)); /* pushed and never pulled (abort), or never released */
      data_free(sl);
      buf_free(sl->map_buf, &sl->reg[1]);
      for (int k = 0; k < 3; k++)
        buf_free(sl->pix_buf[k], &sl->reg[2 + k]);
    }
  }
  free(s->slots);
  free(s->ring);
  free(s->threads);
  free(s->args);
  pthread_cond_destroy(&s->free_cond);
  pthread_cond_destroy(&s->cpu_cond);
  pthread_cond_destroy(&s->gpu_cond);
  pthread_cond_destroy(&s->done_cond);
  pthread_mutex_destroy(&s->lock);
  es_ctx_unref(s->ctx); /* frees it where es_context_destroy came first */
  free(s);
  *ps = NULL;
}
