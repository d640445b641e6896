/*
 * split_run.c - one job on several GPUs at once (es_split_run): which thread drives which
 * GPU's range, each range's share of the cores for its staging copies, waiting for all, the
 * first error. The GPU work of a range is kernels/' (es_gpu_split_*, es_gpu.h).
 *
 * Range 0 runs on the calling thread, each other on its worker's host thread: started on the
 * worker's first split and kept as long as the worker lives (es_gpu_worker_attach), so that
 * its OpenMP team for the staging copies lives as long too (a thread per call made a new team
 * of copy threads per call and phase). A GPU's CUDA context is current per thread: the range
 * calls set their worker's device on whichever thread runs them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_gpu.h"
#include "es_pipeline_internal.h"

#ifndef ES_COPY_THREADS_TOTAL
#define ES_COPY_THREADS_TOTAL 32 /* staging-copy threads of a split's ranges together */
#endif

/* One range's phase, run by one thread. */
typedef struct {
  es_gpu_split *s;
  int i;            /* the range */
  int phase;        /* 1 compute, 2 render */
  int copy_threads; /* staging-copy threads for this range (0: default) */
  int rc;
  char msg[256];
} split_task;

/* The host thread of one worker. */
typedef struct {
  pthread_t thread;
  pthread_mutex_t lock; /* guards task and quit */
  pthread_cond_t cond;  /* with lock: a task posted, done, or quit */
  split_task *task;     /* posted by run_phase, set back to NULL by the thread when done */
  int quit;             /* host_stop asks the thread to end */
} split_host;

static void task_run(split_task *t) {
  if (t->phase == 1)
    t->rc = es_gpu_split_compute(t->s, t->i, t->copy_threads, t->msg, sizeof t->msg);
  else
    t->rc = es_gpu_split_render(t->s, t->i, t->copy_threads, t->msg, sizeof t->msg);
}

/* A worker's host thread: runs the tasks posted to it until told to quit. */
static void *host_main(void *arg) {
  split_host *h = arg;
  pthread_mutex_lock(&h->lock);
  for (;;) {
    while (!h->task && !h->quit) pthread_cond_wait(&h->cond, &h->lock);
    if (h->quit) break;
    split_task *t = h->task;
    pthread_mutex_unlock(&h->lock);
    task_run(t);
    pthread_mutex_lock(&h->lock);
    h->task = NULL;
    pthread_cond_broadcast(&h->cond);
  }
  pthread_mutex_unlock(&h->lock);
  return NULL;
}

/* es_gpu_worker_destroy calls this before it frees the worker: the thread ends. */
static void host_stop(void *arg) {
  split_host *h = arg;
  pthread_mutex_lock(&h->lock);
  h->quit = 1;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
  pthread_join(h->thread, NULL);
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

/* The worker's host thread, started here on first use; NULL where none could be. */
static split_host *host_of(es_gpu_worker *w) {
  split_host *h = es_gpu_worker_attached(w);
  if (h) return h;
  h = calloc(1, sizeof *h);
  if (!h) return NULL;
  pthread_mutex_init(&h->lock, NULL);
  pthread_cond_init(&h->cond, NULL);
  if (pthread_create(&h->thread, NULL, host_main, h) != 0) {
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
    return NULL;
  }
  es_gpu_worker_attach(w, h, host_stop);
  return h;
}

/* Staging-copy threads of each of n ranges run at once: one core a range drives its device;
 * the copies of all ranges together at most ES_COPY_THREADS_TOTAL threads: host memory
 * bandwidth is spent long before that, and 4 ranges of 15 threads on 64 cores stalled
 * 2560^2 jobs for 3-10 ms (BENCHMARKS F1). One range: 0, the default. */
static int copy_share(int n) {
  int share = 0;
  if (n > 1) {
#ifdef ES_HAVE_OPENMP
    share = omp_get_num_procs() / n - 1;
    if (share > ES_COPY_THREADS_TOTAL / n) share = ES_COPY_THREADS_TOTAL / n;
#else
    share = 1;
#endif
    if (share < 1) share = 1;
  }
  return share;
}

/* Runs the tasks of one phase at once: task 0 on the calling thread, the others on their
 * workers' host threads; the first error (in range order) into msg. */
static int run_phase(split_task *ts, int n, char *msg, size_t msglen) {
  split_host *posted[ES_MAX_GPUS] = {NULL};
  int rc = ES_OK;
  const int share = copy_share(n);
  for (int i = 0; i < n; i++) ts[i].copy_threads = share;
  for (int i = 1; i < n; i++) {
    es_gpu_worker *w = es_gpu_split_worker(ts[i].s, ts[i].i);
    int dup = 0; /* a worker given twice runs its tasks in turn, on this thread */
    for (int j = 0; j < i; j++) dup |= w == es_gpu_split_worker(ts[j].s, ts[j].i);
    split_host *h = dup ? NULL : host_of(w);
    if (!h) continue;
    pthread_mutex_lock(&h->lock);
    h->task = &ts[i];
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    posted[i] = h;
  }
  task_run(&ts[0]);
  for (int i = 1; i < n; i++) {
    split_host *h = posted[i];
    if (!h) {
      task_run(&ts[i]); /* no host thread: in turn, on this one */
      continue;
    }
    pthread_mutex_lock(&h->lock);
    while (h->task) pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
  }
  for (int i = 0; i < n; i++) {
    if (ts[i].rc && !rc) {
      rc = ts[i].rc;
      if (msg && msglen) snprintf(msg, msglen, "%s", ts[i].msg);
    }
  }
  return rc;
}

int es_split_run(es_gpu_worker **ws, int n, const es_job *job, char *msg, size_t msglen) {
  es_gpu_split *s = NULL;
  split_task *ts = NULL;
  int rc = es_gpu_split_open(&s, ws, n, job, msg, msglen);
  if (rc) return rc;
  const int m = es_gpu_split_ranges(s);
  ts = calloc((size_t)m, sizeof *ts);
  if (!ts) {
    rc = ES_ERR_NOMEM;
    goto end;
  }
  for (int i = 0; i < m; i++) {
    ts[i].s = s;
    ts[i].i = i;
    ts[i].phase = 1;
  }
  rc = run_phase(ts, m, msg, msglen);
  if (rc == ES_OK && es_gpu_split_gather(s)) {
    for (int i = 0; i < m; i++) ts[i].phase = 2;
    rc = run_phase(ts, m, msg, msglen);
  }
end:
  free(ts);
  es_gpu_split_close(&s);
  return rc;
}
