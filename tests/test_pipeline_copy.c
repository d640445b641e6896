/*
 * test_pipeline_copy.c - es_copy_nt (es_copy.h), the non-temporal copy of the GPU engine's
 * staging copies and the video reader's plane copies: on random sizes (0 to 3 pages and
 * around its 256-byte and 64-byte thresholds) and every source and destination offset
 * within a 64-byte line, the destination equals memcpy's and no byte outside it changes.
 * Also the rule that sizes the staging-copy teams (es_copy_team_next), and the row copy on
 * such a team (es_copy_rows): tight and strided rows, below and above ES_COPY_TEAM_MIN and
 * with rows wider than a piece, on teams of 0 (OpenMP's default), 1 and 3 threads and a cap
 * below the ask, land in the destination's rows as memcpy's and leave the bytes between
 * them as they were.
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

/* The staging-copy team's rule (es_copy_team_next) on the numbers of BENCHMARKS D8: a
 * 1080p map's 8.3 MB copy that waited a 4 ms time slice on 16 threads halves the team, the
 * same copy at its quiet pace (0.3 ms) does not, nor does a slow but short one; halving stops
 * at 2; 32 good copies in a row grow the team by one thread, and a stall starts the count
 * again; a full team (0) stays full while copies are good. */
static void team_cases(void) {
  const size_t mb8 = (size_t)1920 * 1080 * 4; /* a 1080p float map, 8.3 MB */
  int team = 0, good = 0;
  CHECK(!es_copy_team_next(&team, &good, 16, mb8, 0.3e-3) && team == 0 && good == 0,
        "a quiet copy changed a full team: %d, %d", team, good);
  CHECK(!es_copy_team_next(&team, &good, 16, (size_t)1 << 20, 2.9e-3) && team == 0,
        "a short slow copy counted as a stall: %d", team);
  CHECK(es_copy_team_next(&team, &good, 16, mb8, 4.0e-3) && team == 8 && good == 0,
        "a 4 ms copy on 16 threads: team %d, good %d (8, 0 wanted)", team, good);
  CHECK(!es_copy_team_next(&team, &good, 8, (size_t)16 << 20, 3.5e-3) && team == 8 && good == 1,
        "16 MB in 3.5 ms on 8 threads (4.8 GB/s): team %d, good %d (8, 1 wanted)", team, good);
  for (int i = 0; i < 30; i++) es_copy_team_next(&team, &good, 8, mb8, 0.3e-3);
  CHECK(team == 8 && good == 31, "31 good copies: team %d, good %d (8, 31 wanted)", team, good);
  es_copy_team_next(&team, &good, 8, mb8, 0.3e-3);
  CHECK(team == 9 && good == 0, "32 good copies: team %d, good %d (9, 0 wanted)", team, good);
  for (int i = 0; i < 10; i++) es_copy_team_next(&team, &good, team, mb8, 40e-3);
  CHECK(team == 2, "repeated stalls: team %d (2 wanted)", team);
}

/* es_copy_rows of rows rows of rowbytes bytes, sstride and dstride apart. */
static int rows_case(size_t rowbytes, int rows, size_t sstride, size_t dstride, int threads,
                     int cap) {
  const size_t scap = sstride * (size_t)rows, dcap = dstride * (size_t)rows + GUARD;
  unsigned char *src = malloc(scap), *dst = malloc(dcap), *want = malloc(dcap);
  int ok = src && dst && want;
  if (ok) {
    for (size_t i = 0; i < scap; i++) src[i] = (unsigned char)es_test_rand();
    for (size_t i = 0; i < dcap; i++) dst[i] = want[i] = (unsigned char)(0x5A ^ i);
    for (int y = 0; y < rows; y++)
      memcpy(want + (size_t)y * dstride, src + (size_t)y * sstride, rowbytes);
    es_copy_rows(dst, dstride, src, sstride, rowbytes, rows, threads, cap);
    ok = memcmp(dst, want, dcap) == 0;
  }
  free(src);
  free(dst);
  free(want);
  return ok;
}

static void rows_cases(void) {
  static const struct {
    size_t rowbytes;
    int rows;
    size_t spad, dpad; /* stride - rowbytes */
  } c[] = {
      {1000, 7, 0, 0},                       /* below ES_COPY_TEAM_MIN: one thread */
      {1000, 7, 24, 40},                     /* the same, strided */
      {4001, 300, 0, 0},                     /* tight, 1.2 MB: pieces, the last one short */
      {3001, 200, 71, 99},                   /* strided, 600 KB: rows in pieces */
      {(size_t)300 << 10, 3, 64, 8},         /* rows wider than a piece */
      {ES_COPY_TEAM_MIN / 64, 64, 0, 0},     /* exactly ES_COPY_TEAM_MIN */
  };
  static const int team[][2] = {{0, 16}, {1, 16}, {3, 16}, {8, 2}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    for (size_t t = 0; t < sizeof team / sizeof team[0]; t++)
      CHECK(rows_case(c[i].rowbytes, c[i].rows, c[i].rowbytes + c[i].spad,
                      c[i].rowbytes + c[i].dpad, team[t][0], team[t][1]),
            "es_copy_rows: %zu bytes x %d rows, strides +%zu/+%zu, threads %d cap %d",
            c[i].rowbytes, c[i].rows, c[i].spad, c[i].dpad, team[t][0], team[t][1]);
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
  team_cases();
  rows_cases();
  printf("test_pipeline_copy: %d cases\n", cases);
  return es_test_done("test_pipeline_copy");
}
