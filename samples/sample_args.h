/*
 * sample_args.h - the samples' command-line number parsing, in one place. Header-only, next
 * to the samples, so that each one still builds alone from its own .c file (as FFmpeg's
 * doc/examples do): `cc samples/oneshot.c $(pkg-config --cflags --libs entropy-stream)`.
 */
#ifndef ES_SAMPLE_ARGS_H
#define ES_SAMPLE_ARGS_H

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

/* 1 with *out set where s is a whole decimal number in lo..hi, else 0: "5x", "abc", " 5"
 * or "" are not numbers (atoi read them as 5, 0, 5 and 0). */
static inline int arg_int(const char *s, long lo, long hi, int *out) {
  if (!isdigit((unsigned char)s[0]) && !(s[0] == '-' && isdigit((unsigned char)s[1]))) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno || v < lo || v > hi) return 0;
  *out = (int)v;
  return 1;
}

#endif /* ES_SAMPLE_ARGS_H */
