/*
 * test_pipeline_copy.c - es_copy_nt (es_copy.h), the non-temporal copy of the GPU engine's
 * staging copies and the video reader's plane copies: on random sizes (0 to 3 pages and
 * around its 256-byte and 64-byte thresholds) and every source and destination offset
 * within a 64-byte line, the destination equals memcpy's and no byte outside it changes.
 */
#include <stdlib.h>
#include <string.h>

#include "es_copy.h"
#include "es_test.h"

#define GUARD 64

static int one_case(unsigned n, unsigned so, unsigned dof) {
  const size_t cap = n + 2 * GUARD + 64;
  unsigned char *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);
  int ok = src && dst && want;
  if (ok) {
    for (size_t i = 0; i < cap; i++) {
      src[i] = (unsigned char)es_test_rand();
      dst[i] = want[i] = (unsigned char)(0xA5 ^ i); /* poison: unwritten bytes show */
    }
    memcpy(want + GUARD + dof, src + so, n);
    es_copy_nt(dst + GUARD + dof, src + so, n);
    ok = memcmp(dst, want, cap) == 0;
  }
  free(src);
  free(dst);
  free(want);
  return ok;
}

int main(void) {
  es_test_seed("test_pipeline_copy");
  static const unsigned edges[] = {0, 1, 15, 16, 63, 64, 65, 255, 256, 257, 319, 320, 4095, 4096, 4097};
  int cases = 0;
  for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
    for (unsigned so = 0; so < 64; so += 7)
      for (unsigned dof = 0; dof < 64; dof += 5) {
        CHECK(one_case(edges[e], so, dof), "n %u, source offset %u, destination offset %u",
              edges[e], so, dof);
        cases++;
      }
  for (int k = 0; k < 400; k++) {
    unsigned n = (unsigned)es_test_range(0, 3 * 4096 + 77);
    unsigned so = (unsigned)es_test_range(0, 63), dof = (unsigned)es_test_range(0, 63);
    CHECK(one_case(n, so, dof), "n %u, source offset %u, destination offset %u", n, so, dof);
    cases++;
  }
  printf("test_pipeline_copy: %d cases\n", cases);
  return es_test_done("test_pipeline_copy");
}
