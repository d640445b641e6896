/*
 * es_run_internal.h - what the files of a run share (pipeline/run.c: its life and the
 * opening of its ends; run_read.c: the context and reading threads; run_write.c: the
 * results to every sink and the failure policy). Internal to pipeline/.
 */
#ifndef ES_RUN_INTERNAL_H
#define ES_RUN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "entropy_stream.h"

#define RUN_MSG_LEN 512

typedef struct run_sink {
  es_sink k;         /* the sink's own (its self freed by its close) */
  int opened;        /* open succeeded */
  int closed;        /* close was called: dropped from the writes */
  int64_t failed_at; /* ES_RUN_SINK_* or the frame index it failed at */
  int64_t taken;     /* frames it took (kept ones included) */
  es_sink_needs needs; /* what its open asked for */
} run_sink;

/* The context, created on a thread of its own while the source opens (CUDA start-up takes
 * about as long as opening and probing a video). */
typedef struct run_ctx_open {
  const es_config *cfg; /* in */
  es_context *ctx;      /* out */
  int rc;               /* out */
  char msg[RUN_MSG_LEN]; /* out */
  /* The frame size, once the source's header says it: under auto the GPUs start opening
   * when frames they could take are coming (es_context_expect). Whichever of the two threads
   * comes second (the context created, the size known) makes the call. */
  pthread_mutex_t lock;
  int created;          /* under lock */
  int64_t pixels;       /* under lock: 0 until known */
} run_ctx_open;

struct es_run {
  /* Immutable once es_run_execute began. */
  es_run_config c;
  es_source src;
  int src_open;           /* src.open succeeded: close it at destroy */
  run_sink sinks[ES_RUN_MAX_SINKS];
  int nsinks;
  es_stage_env env;       /* what the source gets */
  es_source_info info;    /* the source's header */
  int verbose;            /* the context's: 0 errors only, 2 the verbose lines too */
  /* Set by es_run_stop (a signal handler); read by every thread. */
  atomic_int stop;
  /* Set by the writing thread where the run ends early: the reader stops as for a stop,
   * but the exit code stays the failure's. */
  atomic_int abort;
  /* The listed GPUs' failure said (es_run_gpus_failed): once a run, or once for the runs of
   * one es_many, which points this at its own flag before the run executes. */
  atomic_int gpus_said_own;
  atomic_int *gpus_said;  /* &gpus_said_own, or the es_many's */
  run_ctx_open co;        /* lock initialised at create */
  pthread_t cth;
  int cth_started;        /* the context thread runs: joined before the context is used */
  es_context *ctx;        /* the context, once joined (or co.ctx where never joined), or
                           * c.context, the caller's */
  int pin_held;           /* es_run_pin_hold was called (released at destroy) */
  es_stream *st;
  /* The reading thread's: written by it, read by the writing thread after joining. */
  pthread_t rth;
  int rth_started;
  int read_status;        /* ES_OK, ES_ERR_INTERRUPTED (a stop) or the input's error */
  char read_msg[RUN_MSG_LEN];
  int64_t pushed;
  /* Frame 0 as read before the sinks were opened: lent (first_lent, given back at destroy
   * where the reading thread never pushed it), or held by the source. Pushed even after a
   * stop, as every frame already read is computed and written (SPEC 3): a stop between the
   * sinks' open and this push left a .mkv or .mp4 with no frame, which does not play.
   * first_had is cleared by the reading thread once it has pushed it. */
  int first_lent;
  int first_had;
  es_source_frame first;
  /* The writing thread's. */
  es_run_counts counts;
  double t0;
  int fatal;   /* a frame could not be computed, or the stream failed: nothing committed */
  int stopped; /* the run ended before its input did (fatal, or every sink failed) */
  int code;    /* the exit code so far (SPEC 3) */
  int executed;
};

/* run.c */
/* One line through the context's message ("WHAT: text"; what may be NULL). */
void es_run_say(const es_run *r, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A stop was asked for (es_run_stop or the config's stopped). */
int es_run_stop_requested(const es_run *r);
/* The exit code of a run: interrupted wins, then the worst of the failures. */
int es_run_worse(int code, int other);
/* Seconds on the monotonic clock. */
double es_run_now_s(void);

/* Opens the sinks (ES_SINK_OPEN_FIRST ones first) and fills the stream's configuration
 * from what they ask for; the context joined (or created here) and the stream opened. Each
 * returns the exit code (0: go on), what failed said. */
int es_run_open_sinks(es_run *r, es_stream_config *sc);
int es_run_open_compute(es_run *r, const es_stream_config *sc);

/* run_batch.c */
/* The run of a read_item source: the exit code; the sinks closed. */
int es_run_batch(es_run *r);

/* run_read.c */
void *es_run_ctx_main(void *arg);
void es_run_ctx_expect(run_ctx_open *c, int64_t pixels);
void *es_run_read_main(void *arg);
/* The env's pin: es_host_pin once the run's GPUs are open (the context of the run that set
 * it last: lending is one run's at a time, pinning only an optimisation). */
void es_run_pin_ctx(es_context *ctx);
/* The same for runs on a caller's context (es_run_config.context), several at once: the
 * context stays the env's until the last of them lets go (a run's destroy must not turn
 * pinning off under another run still reading). */
void es_run_pin_hold(es_context *ctx);
void es_run_pin_release(void);
int es_run_pin(void *p, size_t bytes);

/* run_write.c */
/* What a sink gets of a computed frame: it, under the given name and index (the item's
 * slot and GeoTIFF tags are the caller's to add). */
void es_run_item_of(es_item *it, const es_frame *f, const char *name, int64_t index);
/* Pulls every result and writes it to every sink still live; then the end of the input. */
void es_run_write_all(es_run *r);
/* Closes every sink still open: committed unless the run failed (ES_SINK_KEEP_EMPTY) */
void es_run_close_sinks(es_run *r);
/* The run's listed GPUs could not be opened (es_ctx_gpus_failed; with wait, after waiting
 * for an opening under way, as before a commit): said once (gpus_said), the exit code
 * worsened, the run fatal (nothing committed); 1 then, 0 otherwise. The writing thread's. */
int es_run_gpus_failed(es_run *r, int wait);

#endif
