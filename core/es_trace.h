/*
 * es_trace.h - phase timing (core/trace.c), for every part of the library: with
 * ES_TRACE=1 in the environment, es_trace prints one line per call on stderr, milliseconds
 * since the first call. A no-op otherwise.
 */
#ifndef ES_TRACE_H
#define ES_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

void es_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int es_trace_enabled(void);
double es_trace_ms(void); /* a monotonic clock in ms, for phase totals under ES_TRACE */

#ifdef __cplusplus
}
#endif

#endif /* ES_TRACE_H */
