/*
 * es_copy.h - a large copy with non-temporal stores, for destinations the CPU does not read
 * back soon (a pinned buffer the GPU's DMA reads, a caller's map): skipping the
 * read-for-ownership of every destination line saves a third of the memory traffic. Used by
 * the GPU engine's staging copies and by the video reader's plane copies. Also the rule that
 * sizes the GPU engine's staging-copy teams (es_copy_team_next), and the row copy on such a
 * team (es_copy_rows, copy.c).
 */
#ifndef ES_COPY_H
#define ES_COPY_H

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

static inline void es_copy_nt(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
  char *d = (char *)dst;
  const char *s = (const char *)src;
  size_t head = (16 - ((uintptr_t)d & 15)) & 15;
  if (n < 256) {
    memcpy(dst, src, n);
    return;
  }
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  size_t blocks = n / 64;
  for (size_t i = 0; i < blocks; i++, s += 64, d += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n - blocks * 64);
  _mm_sfence();
#else
  memcpy(dst, src, n);
#endif
}

/* The size of a staging-copy team after a copy of `bytes` took `seconds` on `nt` threads,
 * where *team is the current size (0: the cap) and *good counts copies since the last
 * stall. An OpenMP team ends in a barrier, so one member without a core holds the copy up
 * for a scheduler time slice: a copy below 0.25 GB/s a thread for over 3 ms (the stalls
 * measured took 4-8 ms a copy; a first touch of fresh pages is slow too, but not that slow)
 * halves the team, to 2 at the least; 32 copies in a row without one grow it by a thread
 * (the caller caps it). Returns 1 where the copy counted as a stall (BENCHMARKS D8). */
static inline int es_copy_team_next(int *team, int *good, int nt, size_t bytes, double seconds) {
  if (seconds > 3e-3 && (double)bytes < seconds * (double)nt * 0.25e9) {
    *team = nt / 2 > 2 ? nt / 2 : 2;
    *good = 0;
    return 1;
  }
  if (*team > 0 && ++*good >= 32) {
    *team = nt + 1;
    *good = 0;
  }
  return 0;
}

/* Copies from this size on go to a team (es_copy_rows), below it to one thread (~8 GB/s): a
 * team of 16 copied a 0.5 MB band of a 1080p input in ~10 us (BENCHMARKS J5). */
#define ES_COPY_TEAM_MIN ((size_t)256 << 10)

#ifdef __cplusplus
extern "C" {
#endif

/* rows rows of rowbytes bytes from src (rows sstride bytes apart) to dst (dstride apart),
 * with non-temporal stores; from ES_COPY_TEAM_MIN bytes in all on an OpenMP team of the
 * calling thread of at most `threads` threads (0: OpenMP's default) and `cap`, fewer while
 * this thread's recent copies stalled (es_copy_team_next). One thread without OpenMP. */
void es_copy_rows(void *dst, size_t dstride, const void *src, size_t sstride, size_t rowbytes,
                  int rows, int threads, int cap);

#ifdef __cplusplus
}
#endif

#endif /* ES_COPY_H */
