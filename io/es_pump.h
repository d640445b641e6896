/*
 * es_pump.h - the pump of standard input and of FIFOs (io/pump.c), internal to io/: a
 * decoder blocked in read() on a pipe that stays open but silent never sees a stop
 * (libavformat retries EINTR), so a thread copies the pipe into one of our own, polling
 * with a timeout, and closes its end on a stop: the decoder sees the end of its input.
 */
#ifndef ES_PUMP_H
#define ES_PUMP_H

#include <stddef.h>

typedef struct es_pump es_pump;
/* Standard input through a pump where it is not a regular file (fd 0 becomes the pump's
 * pipe). *out NULL where no pump runs (a regular file, or no thread could start): the
 * reader reads fd 0 itself. stopped(arg) is polled until es_pump_release. ES_OK. */
int es_pump_stdin(es_pump **out, int (*stopped)(void *), void *arg);
/* A FIFO named path through a pump: opens it (waiting for a writer until stopped says so:
 * then *alt NULL) and writes "/dev/fd/N" for the reader to open into alt, or path itself
 * where it is no FIFO (then *out NULL). */
int es_pump_fifo(es_pump **out, const char *path, char *alt, size_t len, const char **name,
                 int (*stopped)(void *), void *arg);
/* After the reader opened the pump's pipe: the descriptor kept for it is closed. */
void es_pump_opened(es_pump *p);
/* rc of a reader of the pump (ES_OK or ES_ERR_EOF at its end, or an input error): where the
 * pump's own read failed, ES_ERR_INPUT with msg "read error: ..."; else rc. p may be NULL. */
int es_pump_status(const es_pump *p, int rc, char *msg, size_t len);
/* 1 when the input ended before its first byte (p NULL: 0). */
int es_pump_empty(const es_pump *p);
/* The reader is done: the pump stops asking stopped() and frees itself once its thread
 * ends (it may be blocked writing to a reader that stopped reading). NULL is ignored. */
void es_pump_release(es_pump **p);

#endif
