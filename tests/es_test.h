/*
 * es_test.h - tiny helpers for the C tests: checks that count failures, a seeded random
 * generator (seed printed, overridable with ES_TEST_SEED), and the skip code.
 */
#ifndef ES_TEST_H
#define ES_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ES_TEST_SKIP 77

static int es_test_failures;

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      es_test_failures++;                                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);              \
      fprintf(stderr, __VA_ARGS__);                                                         \
      fputc('\n', stderr);                                                                  \
    }                                                                                       \
  } while (0)

static uint64_t es_test_rng_state;
/* Seeds from ES_TEST_SEED or the clock, and prints the seed so a failure can be replayed. */
static inline void es_test_seed(const char *name) {
  const char *s = getenv("ES_TEST_SEED");
  es_test_rng_state = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
  if (!es_test_rng_state) es_test_rng_state = 1;
  printf("%s: seed %" PRIu64 " (ES_TEST_SEED to replay)\n", name, es_test_rng_state);
}
static inline uint64_t es_test_rand(void) { /* xorshift64* */
  uint64_t x = es_test_rng_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  es_test_rng_state = x;
  return x * 0x2545F4914F6CDD1DULL;
}
static inline int es_test_range(int lo, int hi) { /* inclusive */
  return lo + (int)(es_test_rand() % (uint64_t)(hi - lo + 1));
}
static inline int es_test_done(const char *name) {
  if (es_test_failures) {
    printf("%s: %d check(s) failed\n", name, es_test_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}
#endif
