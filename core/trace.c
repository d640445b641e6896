/*
 * trace.c - start-up and phase timing for profiling on a GPU machine: with ES_TRACE set in
 * the environment, es_trace prints one line per call to stderr with the milliseconds since
 * the first call (the CLI makes that call first thing in main) and the calling thread.
 * Without ES_TRACE it costs one relaxed load.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "es_trace.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static int trace_on;
static double trace_t0;

static double trace_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void trace_init(void) {
  const char *e = getenv("ES_TRACE");
  trace_on = e && *e && *e != '0';
  trace_t0 = trace_now();
}

double es_trace_ms(void) { return trace_now(); }

int es_trace_enabled(void) {
  pthread_once(&trace_once, trace_init);
  return trace_on;
}

void es_trace(const char *fmt, ...) {
  pthread_once(&trace_once, trace_init);
  if (!trace_on) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One fprintf per line: stdio locks the stream, so lines from threads do not mix. */
  fprintf(stderr, "es-trace %9.3f ms [%lx] %s\n", trace_now() - trace_t0,
          (unsigned long)pthread_self() & 0xffffful, line);
}
