/*
 * test_io_badpng.c - every bad input of SPEC section 3 for the PNG reader: empty file, not
 * a PNG, truncated at every length, corrupt CRCs, a 69-byte file claiming 100000 x 100000
 * (must fail at once, before any big allocation), zero width, too little image data, a
 * directory, a missing file, and random corruption. Each must return ES_ERR_INPUT with a
 * clear one-line message, never crash or leak (run under ASan/valgrind in CI).
 */
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "es_io.h"
#include "es_test.h"

typedef struct membuf {
  uint8_t *p;
  size_t n, cap;
} membuf;

static void put(membuf *m, const void *d, size_t n) {
  if (m->n + n > m->cap) {
    m->cap = (m->n + n) * 2 + 64;
    m->p = realloc(m->p, m->cap);
    if (!m->p) abort();
  }
  memcpy(m->p + m->n, d, n);
  m->n += n;
}
static void put32(membuf *m, uint32_t v) {
  uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  put(m, b, 4);
}
/* One chunk with its CRC. */
static void chunk(membuf *m, const char *type, const void *data, uint32_t n) {
  put32(m, n);
  put(m, type, 4);
  if (n) put(m, data, n);
  uLong crc = crc32(0, (const Bytef *)type, 4);
  if (n) crc = crc32(crc, data, n);
  put32(m, (uint32_t)crc);
}
/* A PNG by hand: 8-bit grey, IHDR w x h, IDAT = zlib of `raw` (raw_n bytes of scanlines). */
static membuf make_png(uint32_t w, uint32_t h, const uint8_t *raw, size_t raw_n) {
  membuf m = {0};
  put(&m, "\x89PNG\r\n\x1a\n", 8);
  uint8_t ihdr[13] = {0};
  for (int i = 0; i < 4; i++) {
    ihdr[i] = (uint8_t)(w >> (24 - 8 * i));
    ihdr[4 + i] = (uint8_t)(h >> (24 - 8 * i));
  }
  ihdr[8] = 8; /* depth */
  ihdr[9] = 0; /* grey */
  chunk(&m, "IHDR", ihdr, 13);
  uLongf zn = compressBound(raw_n);
  uint8_t *z = malloc(zn);
  compress(z, &zn, raw, raw_n);
  chunk(&m, "IDAT", z, (uint32_t)zn);
  free(z);
  chunk(&m, "IEND", NULL, 0);
  return m;
}

static int read_mem(const membuf *m, int64_t maxpx, char *msg, size_t len) {
  es_image img;
  void *data = (void *)1;
  msg[0] = 0;
  int st = es_png_read_mem(m->p, m->n, maxpx, &img, &data, NULL, msg, len);
  if (st == ES_OK)
    free(data);
  else
    CHECK(data == NULL, "data not NULL after error %d (%s)", st, msg);
  if (st != ES_OK)
    CHECK(msg[0] && !strchr(msg, '\n') && msg[strlen(msg) - 1] != '.',
          "message not one line without period: \"%s\"", msg);
  return st;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
  es_test_seed("test_io_badpng");
  char msg[256];
  char tmpdir[] = "/tmp/es_test_io_badpng.XXXXXX";
  if (!mkdtemp(tmpdir)) return 1;

  /* a valid odd-sized image, the base of the corruptions */
  int w = es_test_range(5, 41), h = es_test_range(5, 37);
  size_t raw_n = (size_t)(w + 1) * h;
  uint8_t *raw = malloc(raw_n);
  for (size_t i = 0; i < raw_n; i++)
    raw[i] = (uint8_t)es_test_rand();
  for (int y = 0; y < h; y++)
    raw[(size_t)y * (w + 1)] = (uint8_t)(y % 5); /* filter bytes */
  membuf good = make_png((uint32_t)w, (uint32_t)h, raw, raw_n);
  CHECK(read_mem(&good, 0, msg, sizeof msg) == ES_OK, "the good image fails: %s", msg);

  /* empty */
  membuf empty = {0};
  CHECK(read_mem(&empty, 0, msg, sizeof msg) == ES_ERR_INPUT && !strcmp(msg, "empty file"),
        "empty: %s", msg);
  /* not a PNG */
  membuf text = {(uint8_t *)"hello, this is not an image at all\n", 35, 0};
  CHECK(read_mem(&text, 0, msg, sizeof msg) == ES_ERR_INPUT && !strcmp(msg, "not a PNG file"),
        "not a PNG: %s", msg);
  membuf jpeg = {(uint8_t *)"\xff\xd8\xff\xe0\x00\x10JFIF", 10, 0};
  CHECK(read_mem(&jpeg, 0, msg, sizeof msg) == ES_ERR_INPUT && !strcmp(msg, "not a PNG file"),
        "JPEG: %s", msg);

  /* truncated at every length */
  int trunc_ok = 1;
  for (size_t n = 1; n < good.n; n++) {
    membuf t = {good.p, n, 0};
    int st = read_mem(&t, 0, msg, sizeof msg);
    if (st != ES_ERR_INPUT) {
      CHECK(st == ES_ERR_INPUT, "truncated to %zu of %zu bytes: status %d (%s)", n, good.n, st,
            msg);
      trunc_ok = 0;
      break;
    }
    if (n < 8 || n > 33) /* inside the header, libpng may call it a bad IHDR instead */
      CHECK(strstr(msg, "truncated") || strstr(msg, "image data") || strstr(msg, "CRC"),
            "truncated to %zu: message \"%s\"", n, msg);
  }
  CHECK(trunc_ok, "truncation");
  {
    membuf t = {good.p, good.n / 2, 0};
    read_mem(&t, 0, msg, sizeof msg);
    printf("truncated: %s\n", msg);
  }

  /* corrupt CRC of IHDR, and one byte of IDAT data changed (its CRC no longer matches) */
  membuf bad = {0};
  put(&bad, good.p, good.n);
  bad.p[29] ^= 0x01; /* IHDR CRC */
  CHECK(read_mem(&bad, 0, msg, sizeof msg) == ES_ERR_INPUT && strstr(msg, "CRC"), "IHDR CRC: %s",
        msg);
  printf("IHDR CRC: %s\n", msg);
  memcpy(bad.p, good.p, good.n);
  bad.p[good.n - 12 - 2] ^= 0x40; /* the CRC of IDAT (IEND is the last 12 bytes) */
  CHECK(read_mem(&bad, 0, msg, sizeof msg) == ES_ERR_INPUT && strstr(msg, "CRC"), "IDAT CRC: %s",
        msg);
  printf("IDAT CRC: %s\n", msg);
  /* one byte of the IDAT data changed: zlib may notice first, else the CRC */
  memcpy(bad.p, good.p, good.n);
  bad.p[33 + 8 + 3] ^= 0x40;
  CHECK(read_mem(&bad, 0, msg, sizeof msg) == ES_ERR_INPUT, "IDAT data: %s", msg);
  printf("IDAT data byte: %s\n", msg);

  /* 100000 x 100000 in a tiny file: refused at once with the numbers, under an address-space
   * limit that a 10 GB allocation could not pass (not under ASan, which reserves a lot). */
  uint8_t one[2] = {0, 0};
  membuf huge = make_png(100000, 100000, one, 2);
  printf("huge header file: %zu bytes\n", huge.n);
  double t0 = now();
  int st = read_mem(&huge, (int64_t)1 << 31, msg, sizeof msg);
  double dt = now() - t0;
  CHECK(st == ES_ERR_INPUT && strstr(msg, "100000 x 100000") && strstr(msg, "10000000000") &&
            strstr(msg, "2147483648"),
        "huge: %d %s", st, msg);
  CHECK(dt < 0.5, "huge header took %.3f s", dt);
  printf("huge: %s (%.6f s)\n", msg, dt);
  /* Width and height above 2^31 - 1 (invalid PNG; a random corruption found the product
   * overflowing int64 in the size check before libpng could refuse them). */
  {
    membuf wide = make_png(0xF0000000u, 0xE0000000u, one, 2);
    st = read_mem(&wide, 0, msg, sizeof msg);
    CHECK(st == ES_ERR_INPUT, "4026531840 x 3758096384: %d %s", st, msg);
    printf("huge invalid sizes: %s\n", msg);
    free(wide.p);
  }
  /* the same through the file reader */
  char path[512];
  snprintf(path, sizeof path, "%s/huge.png", tmpdir);
  FILE *f = fopen(path, "wb");
  fwrite(huge.p, 1, huge.n, f);
  fclose(f);
  es_image img;
  void *data = NULL;
  st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && strstr(msg, "100000 x 100000"), "huge file: %d %s", st, msg);
  /* 1 x 3,000,000 (above libpng's default 1,000,000 per side) is fine under max_pixels
   * 2^31 in the header check; refused with max_pixels 2,999,999 */
  membuf tall = make_png(1, 3000000, one, 2);
  st = read_mem(&tall, 2999999, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && strstr(msg, "1 x 3000000"), "tall: %d %s", st, msg);
  st = read_mem(&tall, 0, msg, sizeof msg); /* passes the limits, then runs out of data */
  CHECK(st == ES_ERR_INPUT && !strstr(msg, "max-pixels") && !strstr(msg, "limit"),
        "tall, default limit: %d %s", st, msg);
  printf("tall: %s\n", msg);
  free(tall.p);
  /* Found by fuzzing (tools/fuzz-inputs.py): headers within max_pixels whose image cannot fit
   * in the file. 2147483647 x 1 in ~60 bytes made libpng allocate (and zero) 2 GB rows and
   * this reader a 2 GB plane before "not enough image data"; now refused at once from the
   * file's size (deflate expands at most 1032:1), by both readers. */
  {
    membuf wide = make_png(2147483647u, 1, one, 2);
    t0 = now();
    st = read_mem(&wide, 0, msg, sizeof msg);
    dt = now() - t0;
    CHECK(st == ES_ERR_INPUT && strstr(msg, "truncated") && strstr(msg, "2147483647 x 1"),
          "2147483647 x 1 in %zu bytes: %d %s", wide.n, st, msg);
    CHECK(dt < 0.5, "2147483647 x 1 took %.3f s", dt);
    snprintf(path, sizeof path, "%s/wide.png", tmpdir);
    f = fopen(path, "wb");
    fwrite(wide.p, 1, wide.n, f);
    fclose(f);
    t0 = now();
    st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
    dt = now() - t0;
    CHECK(st == ES_ERR_INPUT && strstr(msg, "truncated") && data == NULL && dt < 0.5,
          "2147483647 x 1 file: %d %s (%.3f s)", st, msg, dt);
    printf("2147483647 x 1 in %zu bytes: %s\n", wide.n, msg);
    unlink(path);
    free(wide.p);
    /* and a real image at deflate's best ratio still decodes: 4096 x 4096 of zeros */
    size_t zn = (size_t)4097 * 4096;
    uint8_t *zeros = calloc(zn, 1);
    membuf flat = make_png(4096, 4096, zeros, zn);
    st = read_mem(&flat, 0, msg, sizeof msg);
    CHECK(st == ES_OK, "4096 x 4096 zeros in %zu bytes: %d %s", flat.n, st, msg);
    free(flat.p);
    free(zeros);
  }
  /* Found by fuzzing: a tEXt chunk whose length says 2^31 - 1 in a 100-byte file made libpng
   * allocate the whole length before reading (2.4 GB and 6 s under ASan) to end "truncated".
   * Ancillary chunks but tRNS are now skipped unread. */
  {
    uint8_t row[2] = {0, 7};
    membuf m = make_png(1, 1, row, 2);
    membuf t = {0};
    put(&t, m.p, 33); /* signature and IHDR */
    put32(&t, 0x7FFFFFFFu);
    put(&t, "tEXt", 4);
    put(&t, "Comment\0long", 12);
    put(&t, m.p + 33, m.n - 33);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    t0 = now();
    st = read_mem(&t, 0, msg, sizeof msg);
    dt = now() - t0;
    getrusage(RUSAGE_SELF, &ru1);
    CHECK(st == ES_ERR_INPUT && dt < 0.5 && ru1.ru_maxrss - ru0.ru_maxrss < 256 * 1024,
          "tEXt of 2^31 - 1 bytes: %d %s (%.3f s, %ld KB more)", st, msg, dt,
          ru1.ru_maxrss - ru0.ru_maxrss);
    printf("tEXt of 2^31 - 1 bytes: %s (%.6f s)\n", msg, dt);
    /* the same chunk, well formed and small, is ignored */
    membuf ok = {0};
    put(&ok, m.p, 33);
    chunk(&ok, "tEXt", "Comment\0short", 13);
    chunk(&ok, "zTXt", "k\0\0", 3); /* a bad zTXt: skipped, not an error */
    put(&ok, m.p + 33, m.n - 33);
    CHECK(read_mem(&ok, 0, msg, sizeof msg) == ES_OK, "small tEXt: %s", msg);
    free(ok.p);
    free(t.p);
    free(m.p);
  }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__has_feature)
  {
    struct rlimit old, lim;
    getrlimit(RLIMIT_AS, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)1 << 30; /* 1 GiB of address space */
    if (setrlimit(RLIMIT_AS, &lim) == 0) {
      st = read_mem(&huge, (int64_t)1 << 40, msg, sizeof msg);
      /* over the limit of max_pixels 2^40: the allocation of 10 GB fails cleanly */
      CHECK(st == ES_ERR_INPUT || st == ES_ERR_NOMEM, "huge under RLIMIT_AS: %d %s", st, msg);
      printf("huge with max_pixels 2^40 under 1 GiB RLIMIT_AS: %s\n", msg);
      setrlimit(RLIMIT_AS, &old);
    }
  }
#endif
  free(huge.p);

  /* zero width, zero height */
  membuf zw = make_png(0, 7, one, 2), zh = make_png(7, 0, one, 2);
  CHECK(read_mem(&zw, 0, msg, sizeof msg) == ES_ERR_INPUT && strstr(msg, "width"), "zero width: %s",
        msg);
  printf("zero width: %s\n", msg);
  CHECK(read_mem(&zh, 0, msg, sizeof msg) == ES_ERR_INPUT && strstr(msg, "height"),
        "zero height: %s", msg);
  free(zw.p);
  free(zh.p);

  /* IDAT holding too little data: a complete zlib stream of half the rows */
  membuf shortd = make_png((uint32_t)w, (uint32_t)h, raw, raw_n / 2);
  CHECK(read_mem(&shortd, 0, msg, sizeof msg) == ES_ERR_INPUT && strstr(msg, "image data"),
        "short image data: %s", msg);
  printf("short image data: %s\n", msg);
  free(shortd.p);

  /* missing file, a directory, an empty file on disk */
  snprintf(path, sizeof path, "%s/missing.png", tmpdir);
  st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && strstr(msg, "No such file"), "missing: %d %s", st, msg);
  st = es_png_read(tmpdir, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && strstr(msg, "directory"), "directory: %d %s", st, msg);
  snprintf(path, sizeof path, "%s/empty.png", tmpdir);
  fclose(fopen(path, "wb"));
  st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && !strcmp(msg, "empty file"), "empty on disk: %d %s", st, msg);
  unlink(path);
  snprintf(path, sizeof path, "%s/huge.png", tmpdir);
  unlink(path);
  /* truncated file on disk */
  snprintf(path, sizeof path, "%s/trunc.png", tmpdir);
  f = fopen(path, "wb");
  fwrite(good.p, 1, good.n - 20, f);
  fclose(f);
  st = es_png_read(path, 0, &img, &data, NULL, msg, sizeof msg);
  CHECK(st == ES_ERR_INPUT && strstr(msg, "truncated"), "truncated on disk: %d %s", st, msg);
  unlink(path);

  /* random corruption: any outcome but a crash, a leak or a status other than OK/INPUT */
  int outcomes[2] = {0, 0};
  for (int i = 0; i < 400; i++) {
    memcpy(bad.p, good.p, good.n);
    int flips = es_test_range(1, 4);
    for (int k = 0; k < flips; k++)
      bad.p[es_test_rand() % good.n] ^= (uint8_t)(1 + es_test_rand() % 255);
    st = read_mem(&bad, 0, msg, sizeof msg);
    CHECK(st == ES_OK || st == ES_ERR_INPUT, "corruption %d: status %d (%s)", i, st, msg);
    outcomes[st == ES_OK ? 0 : 1]++;
  }
  /* the same inside the compressed data with the CRC made right again, so zlib and the
   * row filters meet the damage */
  for (int i = 0; i < 400; i++) {
    memcpy(bad.p, good.p, good.n);
    size_t idat = 33 + 8, idat_n = good.n - 12 - 4 - idat;
    int flips = es_test_range(1, 3);
    for (int k = 0; k < flips; k++)
      bad.p[idat + es_test_rand() % idat_n] ^= (uint8_t)(1 + es_test_rand() % 255);
    uLong crc = crc32(0, bad.p + idat - 4, (uInt)(idat_n + 4));
    for (int k = 0; k < 4; k++)
      bad.p[idat + idat_n + k] = (uint8_t)(crc >> (24 - 8 * k));
    st = read_mem(&bad, 0, msg, sizeof msg);
    CHECK(st == ES_OK || st == ES_ERR_INPUT, "IDAT corruption %d: status %d (%s)", i, st, msg);
    outcomes[st == ES_OK ? 0 : 1]++;
  }
  printf("random corruption: %d decoded, %d refused\n", outcomes[0], outcomes[1]);

  free(bad.p);
  free(good.p);
  free(raw);
  rmdir(tmpdir);
  return es_test_done("test_io_badpng");
}
