/*
 * copy.c - es_copy_rows (es_copy.h): the GPU engine's staging copies (pageable <-> pinned,
 * the host half of its pipeline, which must keep up with PCIe), on an OpenMP team of the
 * calling thread sized to the cores that thread actually gets.
 *
 * A copy is cut into pieces of ES_COPY_PIECE bytes handed out as threads come free, by a
 * team sized to the cores this host thread actually gets: an OpenMP team ends in a barrier,
 * so one member without a core holds the copy up for a scheduler time slice (BENCHMARKS P1,
 * D8: with four busy processes on 16 cores, 16-thread teams made copies 30-40x slower).
 * es_copy_team_next has the rule: a stalled copy halves the team, 32 good ones grow it by
 * a thread, up to the cap.
 */
#include <stddef.h>
#include <string.h>
#ifdef ES_HAVE_OPENMP
#include <omp.h>
#endif

#include "es_copy.h"
#include "es_trace.h"

#define ES_COPY_PIECE ((size_t)256 << 10)

#ifdef ES_HAVE_OPENMP
/* This thread's team: its size after the last stall (0: the cap), and the copies since. */
static _Thread_local int tl_team;
static _Thread_local int tl_team_good;

static int copy_team(int threads, int cap) {
  int n = threads > 0 ? threads : omp_get_max_threads();
  if (n > cap) n = cap;
  return tl_team > 0 && tl_team < n ? tl_team : n;
}

static void copy_team_adapt(int nt, size_t bytes, double seconds) {
  if (es_copy_team_next(&tl_team, &tl_team_good, nt, bytes, seconds))
    es_trace("staging copies: %zu bytes in %.2f ms on %d threads; now %d threads", bytes,
             seconds * 1e3, nt, tl_team);
}
#endif

void es_copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t rowbytes,
                  int rows, int threads, int cap) {
  const size_t total = rowbytes * (size_t)rows;
#ifdef ES_HAVE_OPENMP
  if (total >= ES_COPY_TEAM_MIN) {
    const int nt = copy_team(threads, cap);
    const double t0 = es_trace_ms();
    if (dstride == rowbytes && sstride == rowbytes) {
      /* Pieces of ES_COPY_PIECE bytes (or one a thread, when fewer), handed out as threads
       * come free. */
      size_t chunk = (total + (size_t)nt - 1) / (size_t)nt;
      if (chunk > ES_COPY_PIECE) chunk = ES_COPY_PIECE;
      const long np = (long)((total + chunk - 1) / chunk);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
      for (long t = 0; t < np; t++) {
        size_t a = (size_t)t * chunk, b = a + chunk < total ? a + chunk : total;
        es_copy_nt((char *)dst + a, (const char *)src + a, b - a);
      }
    } else {
      /* rows in pieces of about ES_COPY_PIECE bytes */
#pragma omp parallel for num_threads(nt) \
    schedule(dynamic, rowbytes >= ES_COPY_PIECE ? 1 : (int)(ES_COPY_PIECE / rowbytes))
      for (int y = 0; y < rows; y++)
        es_copy_nt((char *)dst + (size_t)y * dstride, (const char *)src + (size_t)y * sstride, rowbytes);
    }
    copy_team_adapt(nt, total, (es_trace_ms() - t0) * 1e-3);
    return;
  }
#else
  (void)threads;
  (void)cap;
#endif
  if (dstride == rowbytes && sstride == rowbytes) {
    memcpy(dst, src, total);
    return;
  }
  for (int y = 0; y < rows; y++)
    es_copy_nt((char *)dst + (size_t)y * dstride, (const char *)src + (size_t)y * sstride, rowbytes);
}
