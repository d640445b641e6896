/*
 * cpu_band_template.h - one row band of the CPU engine, included by cpu.c once per level
 * storage type (FFmpeg's template habit): ES_LT is the type of a quantized level in the row
 * ring (uint8_t for L <= 255, uint16_t when the clip sentinel L fits, uint32_t for
 * L = 65536), ES_FN(name) adds the type suffix. Everything else (cpu_ctx, cpu_thread, helpers) comes from cpu.c.
 */
#ifndef ES_LT
#error "cpu_band_template.h is included by cpu.c with ES_LT and ES_FN defined"
#endif

/* Fills ring slot of virtual row v (0 <= v < h for a real row; reflect maps any v) with the
 * padded, quantized levels: column x of the image sits at R + x; the R columns on each side
 * hold the reflected levels (reflect) or the sentinel L (clip). Returns 0 for a clip row
 * outside the image (the slot is then not used). */
static int ES_FN(ring_fill)(const cpu_ctx *c, ES_LT *dst, int v) {
  int w = c->w, R = c->R;
  int sy = v;
  if (v < 0 || v >= c->h) {
    if (c->border == ES_BORDER_CLIP) return 0;
    sy = es_reflect(v, c->h);
  }
  const uint8_t *row = c->data + (size_t)sy * c->stride;
  ES_LT *mid = dst + R;
  if (c->depth == 8) {
    for (int x = 0; x < w; x++) mid[x] = (ES_LT)c->lut8[row[x]];
  } else {
    /* Rows need not be 2-byte aligned (an odd stride or data pointer is allowed): each
     * sample by memcpy, which compiles to a plain load where that is legal. */
    uint32_t L = (uint32_t)c->levels;
    for (int x = 0; x < w; x++) {
      uint16_t s;
      memcpy(&s, row + 2 * (size_t)x, 2);
      mid[x] = (ES_LT)es_quantize(s, L, 16);
    }
  }
  /* Outside the mask: the sentinel, as past a clip border (and so in any reflection). */
  if (c->mask) {
    const uint8_t *m = c->mask + (size_t)sy * c->mask_stride;
    for (int x = 0; x < w; x++)
      if (!m[x]) mid[x] = (ES_LT)c->levels;
  }
  if (c->border == ES_BORDER_CLIP) {
    for (int i = 0; i < R; i++) dst[i] = (ES_LT)c->levels;
    for (int i = R + w; i < w + 2 * R + 1; i++) dst[i] = (ES_LT)c->levels;
  } else {
    for (int i = 0; i < R; i++) dst[i] = mid[es_reflect(i - R, w)];
    for (int i = R + w; i < w + 2 * R + 1; i++) dst[i] = mid[es_reflect(i - R, w)];
  }
  return 1;
}

/* Adds m (negative: removes) to the bins of the nlev levels lv[0..nlev-1]; S follows
 * exactly (flog differences wrap modulo 2^64 and the sum comes out exact). */
static inline void ES_FN(levels_add)(uint16_t *hist, uint64_t *S, const uint64_t *flog,
                                     const ES_LT *lv, int nlev, int m) {
  for (int i = 0; i < nlev; i++) {
    unsigned l = lv[i], cnt = hist[l];
    hist[l] = (uint16_t)(cnt + m);
    *S += flog[cnt + m] - flog[cnt];
  }
}

/* Adds `sign` times (a weight; negative removes) the window columns d = lo..hi to hist and
 * S: image column x holds nlev levels at base[x * cs ..]. Only image columns are read, each
 * once with its multiplicity: clip counts the columns outside in the sentinel bin, reflect
 * folds them onto the image columns they read. So a window much wider than the image
 * (K = 255 on a 1- or 4-pixel wide image) costs O(min(K, w)) columns per row, not O(K). */
static void ES_FN(window_add)(const cpu_ctx *c, uint16_t *hist, uint64_t *S, const ES_LT *base,
                              size_t cs, int nlev, int lo, int hi, int sign) {
  const uint64_t *flog = c->tables->flog;
  const int w = c->w;
  int a = lo > 0 ? lo : 0, b = hi < w - 1 ? hi : w - 1;
  int inside = b >= a ? b - a + 1 : 0, outside = hi - lo + 1 - inside;
  if (outside == 0 || c->border == ES_BORDER_CLIP) {
    for (int x = a; x <= b; x++) ES_FN(levels_add)(hist, S, flog, base + x * cs, nlev, sign);
    if (outside) {
      unsigned cnt = hist[c->levels];
      int m = sign * outside * nlev;
      hist[c->levels] = (uint16_t)(cnt + m);
      *S += flog[cnt + m] - flog[cnt];
    }
  } else if (hi - lo + 1 <= w) {
    for (int d = lo; d <= hi; d++)
      ES_FN(levels_add)(hist, S, flog, base + es_reflect(d, w) * cs, nlev, sign);
  } else {
    for (int x = 0; x < w; x++) {
      int m = cpu_reflect_count(lo, hi, x, w);
      if (m) ES_FN(levels_add)(hist, S, flog, base + x * cs, nlev, sign * m);
    }
  }
}

/* Per-pixel output: the map, and the statistics of the row. */
static inline void ES_FN(emit)(const cpu_ctx *c, cpu_thread *t, float *mrow, int x, float hv,
                               double *rs, double *rss) {
  if (mrow) mrow[x] = hv;
  if (c->want_minmax) {
    if (hv < t->min) t->min = hv;
    if (hv > t->max) t->max = hv;
  }
  if (c->want_stats) {
    *rs += hv;
    *rss += (double)hv * (double)hv;
    t->bins[es_stats_bin(hv, c->binscale, c->bins)]++;
  }
}

/* One row of Huang's sliding window, from the window at x = 0 (histogram `hist`, sum S)
 * to the end of the row; rows[j] point at column 0 of each window row, hws[j] its half
 * width. Leaves the histogram holding the window at x = w - 1. */
static inline __attribute__((always_inline)) void ES_FN(slide_any)(
    const cpu_ctx *c, cpu_thread *t, uint16_t *hist, const ES_LT *const *rows,
    const int *hws, int nr, int ntot, uint64_t S, float *mrow, double *rs, double *rss) {
  const uint64_t *dinc = c->dinc, *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const int w = c->w, sent = c->levels;
  for (int x = 0;; x++) {
    unsigned ns = hist[sent];
    int n = ntot - (int)ns;
    float hv = es_entropy_value(S - flog[ns], log2n[n], scale[n], c->oscale);
    ES_FN(emit)(c, t, mrow, x, hv, rs, rss);
    if (x + 1 == w) break;
    for (int j = 0; j < nr; j++) {
      const ES_LT *p = rows[j] + x;
      if (p[-hws[j]] == p[hws[j] + 1]) continue; /* no change; see slide_cols */
      uint16_t *ha = hist + p[-hws[j]], *hb = hist + p[hws[j] + 1];
      size_t cm = (size_t)*ha - 1; /* size_t: one decrement for the store and the index */
      *ha = (uint16_t)cm;
      S -= dinc[cm];
      size_t cb = *hb;
      *hb = (uint16_t)(cb + 1);
      S += dinc[cb];
    }
  }
}

/* The same for nr full-width rows of one half width hw (square windows), meant to be
 * called with constants. */
static inline __attribute__((always_inline)) void ES_FN(slide_square)(
    const cpu_ctx *c, cpu_thread *t, uint16_t *hist, const ES_LT *const *rows, int nr,
    int hw, int ntot, uint64_t S, float *mrow, double *rs, double *rss) {
  const uint64_t *dinc = c->dinc, *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const int w = c->w, sent = c->levels;
  const ES_LT *pl[ES_WINDOW_MAX];
  for (int j = 0; j < nr; j++) pl[j] = rows[j] - hw;
  for (int x = 0;; x++) {
    unsigned ns = hist[sent];
    int n = ntot - (int)ns;
    float hv = es_entropy_value(S - flog[ns], log2n[n], scale[n], c->oscale);
    ES_FN(emit)(c, t, mrow, x, hv, rs, rss);
    if (x + 1 == w) break;
    for (int j = 0; j < nr; j++) {
      if (pl[j][x] == pl[j][x + 2 * hw + 1]) continue; /* no change; see slide_cols */
      uint16_t *ha = hist + pl[j][x], *hb = hist + pl[j][x + 2 * hw + 1];
      size_t cm = (size_t)*ha - 1;
      *ha = (uint16_t)cm;
      S -= dinc[cm];
      size_t cb = *hb;
      *hb = (uint16_t)(cb + 1);
      S += dinc[cb];
    }
  }
}

/* Huang's sliding histogram along each row: per pixel, for every row of the window, the
 * pixel leaving on the left goes out and the one entering on the right comes in, and S
 * follows with the exact increments dinc[c] = flog[c + 1] - flog[c]. O(K) per pixel,
 * independent of L (only touched bins are read) and of the window area. */
static void ES_FN(band_huang)(const cpu_ctx *c, cpu_thread *t, int y0, int y1) {
  const int w = c->w, K = c->K, r = c->r, R = c->R, ring_n = K + 1;
  const size_t pw = (size_t)w + 2 * R + 1;
  ES_LT *ring = (ES_LT *)t->ring;
  uint16_t *hist = t->hist;
  const ES_LT *rows[ES_WINDOW_MAX];
  int hws[ES_WINDOW_MAX];
  int valid[ES_WINDOW_MAX + 1];

  for (int v = y0 - r; v < y0 + r; v++) {
    int s = ((v % ring_n) + ring_n) % ring_n;
    valid[s] = ES_FN(ring_fill)(c, ring + (size_t)s * pw, v);
  }
  for (int y = y0; y < y1; y++) {
    int v = y + r, s = ((v % ring_n) + ring_n) % ring_n;
    valid[s] = ES_FN(ring_fill)(c, ring + (size_t)s * pw, v);
    /* The window's rows, and its population before clipping columns. */
    int nr = 0, ntot = 0;
    for (int dy = -r; dy <= r; dy++) {
      int vv = y + dy, ss = ((vv % ring_n) + ring_n) % ring_n;
      if (!valid[ss]) continue;
      rows[nr] = ring + (size_t)ss * pw + R;
      hws[nr] = c->win.hw[dy + r];
      ntot += 2 * hws[nr] + 1;
      nr++;
    }
    uint64_t S = 0;
    for (int j = 0; j < nr; j++) ES_FN(window_add)(c, hist, &S, rows[j], 1, 1, -hws[j], hws[j], 1);
    float *mrow = cpu_map_row(c, t, y);
    double rs = 0.0, rss = 0.0;
    if (c->win_square && nr == K) {
      /* Constant K and hw let the compiler unroll the window rows and keep the row
       * pointers in registers: about half the instructions per pixel at small K. */
      switch (K) {
      case 3: ES_FN(slide_square)(c, t, hist, rows, 3, 1, ntot, S, mrow, &rs, &rss); break;
      case 5: ES_FN(slide_square)(c, t, hist, rows, 5, 2, ntot, S, mrow, &rs, &rss); break;
      case 7: ES_FN(slide_square)(c, t, hist, rows, 7, 3, ntot, S, mrow, &rs, &rss); break;
      case 9: ES_FN(slide_square)(c, t, hist, rows, 9, 4, ntot, S, mrow, &rs, &rss); break;
      default: ES_FN(slide_square)(c, t, hist, rows, nr, r, ntot, S, mrow, &rs, &rss); break;
      }
    } else {
      ES_FN(slide_any)(c, t, hist, rows, hws, nr, ntot, S, mrow, &rs, &rss);
    }
    /* Leave the histogram empty for the next row (cheaper than clearing L bins). */
    for (int j = 0; j < nr; j++)
      ES_FN(window_add)(c, hist, &S, rows[j], 1, 1, w - 1 - hws[j], w - 1 + hws[j], -1);
    cpu_row_done(c, t, y, y1);
    if (c->want_stats) {
      c->rowsum[y] = rs;
      c->rowsumsq[y] = rss;
    }
    if (c->level_hist_wanted) {
      const ES_LT *p = ring + (size_t)(((y % ring_n) + ring_n) % ring_n) * pw + R;
      for (int x = 0; x < w; x++) t->level_hist[p[x]]++;
    }
  }
}

/* Huang for images much shorter than the window (cpu_short): every window row is one of
 * the h image rows (reflect repeats them, clip leaves the others out), so the h rows are quantized
 * once per band into ring slots 0..h-1, and each output row slides one row per distinct
 * (image row, half width), weighted by the number of window rows it stands for: O(min(h, K))
 * updates per pixel instead of O(K), and h padded rows of memory instead of K + 1 (plus
 * K levels per column for the square kernel). S follows by exact flog differences. */
static void ES_FN(band_short)(const cpu_ctx *c, cpu_thread *t, int y0, int y1) {
  const int w = c->w, h = c->h, r = c->r, R = c->R, sent = c->levels;
  const size_t pw = (size_t)w + 2 * R + 1;
  ES_LT *ring = (ES_LT *)t->ring;
  uint16_t *hist = t->hist;
  const uint64_t *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const ES_LT *rows[ES_WINDOW_MAX];
  int hws[ES_WINDOW_MAX], wts[ES_WINDOW_MAX], src[ES_WINDOW_MAX];

  for (int v = 0; v < h; v++) ES_FN(ring_fill)(c, ring + (size_t)v * pw, v);
  for (int y = y0; y < y1; y++) {
    int nr = 0, ntot = 0;
    for (int dy = -r; dy <= r; dy++) {
      int v = y + dy, hw = c->win.hw[dy + r], j = 0;
      if (v < 0 || v >= h) {
        if (c->border == ES_BORDER_CLIP) continue;
        v = es_reflect(v, h);
      }
      while (j < nr && !(src[j] == v && hws[j] == hw)) j++;
      if (j == nr) {
        src[j] = v;
        hws[j] = hw;
        wts[j] = 0;
        rows[j] = ring + (size_t)v * pw + R;
        nr++;
      }
      wts[j]++;
      ntot += 2 * hw + 1;
    }
    uint64_t S = 0;
    for (int j = 0; j < nr; j++)
      ES_FN(window_add)(c, hist, &S, rows[j], 1, 1, -hws[j], hws[j], wts[j]);
    float *mrow = cpu_map_row(c, t, y);
    double rs = 0.0, rss = 0.0;
    for (int x = 0;; x++) {
      unsigned ns = hist[sent];
      int n = ntot - (int)ns;
      float hv = es_entropy_value(S - flog[ns], log2n[n], scale[n], c->oscale);
      ES_FN(emit)(c, t, mrow, x, hv, &rs, &rss);
      if (x + 1 == w) break;
      for (int j = 0; j < nr; j++) {
        const ES_LT *p = rows[j] + x;
        unsigned a = p[-hws[j]], b = p[hws[j] + 1], m = (unsigned)wts[j];
        if (a == b) continue;
        unsigned ca = hist[a], cb;
        hist[a] = (uint16_t)(ca - m);
        S += flog[ca - m] - flog[ca];
        cb = hist[b];
        hist[b] = (uint16_t)(cb + m);
        S += flog[cb + m] - flog[cb];
      }
    }
    /* Leave the histogram empty for the next row. */
    for (int j = 0; j < nr; j++)
      ES_FN(window_add)(c, hist, &S, rows[j], 1, 1, w - 1 - hws[j], w - 1 + hws[j], -wts[j]);
    cpu_row_done(c, t, y, y1);
    if (c->want_stats) {
      c->rowsum[y] = rs;
      c->rowsumsq[y] = rss;
    }
    if (c->level_hist_wanted) {
      const ES_LT *p = ring + (size_t)y * pw + R;
      for (int x = 0; x < w; x++) t->level_hist[p[x]]++;
    }
  }
}

/* Square windows, column-major Huang: colbuf holds, for every padded column i, the K
 * levels of the window's rows at colbuf[i * K + slot] (slot = virtual row mod K; a clip row
 * outside the image holds the sentinel). Moving down a row rewrites one slot per column;
 * moving right drops column x's K levels and adds column x + K's, read contiguously from
 * two pointers at constant offsets: fewer registers and instructions than K row pointers
 * (callgrind in tools/BENCHMARKS.md). The order of a column's levels does not matter to a
 * histogram. N = K * K - c_L as everywhere. */
static inline __attribute__((always_inline)) void ES_FN(slide_cols)(
    const cpu_ctx *c, cpu_thread *t, uint16_t *hist, const ES_LT *colbuf, int K, uint64_t S,
    float *mrow, double *rs, double *rss, const int skip, long *eqp) {
  const uint64_t *dinc = c->dinc, *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const double oscale = c->oscale;
  const int w = c->w, sent = c->levels, ntot = K * K, r = (K - 1) / 2;
  /* Interior [xa, xb): no column of the window is outside the image, so the sentinel count
   * (clipped rows only) and with it N, log2 N and 2^-ES_FIX_SHIFT/N stay fixed: the loop there skips
   * those table reads, and with only a map to write, the statistics branches too. */
  int xa = c->border == ES_BORDER_CLIP ? (r < w ? r : w) : 0;
  int xb = c->border == ES_BORDER_CLIP ? w - r : w;
  if (c->mask) xa = xb = 0; /* masked pixels move the sentinel count anywhere */
  if (xb < xa) xb = xa;
  const int plain = mrow && !c->want_stats && !c->want_minmax;
  const ES_LT *pa = colbuf;
  long eq = 0;
#define ES_SLIDE_COLS_STEP_V(SKIP)                                                                 \
  do {                                                                                       \
    const ES_LT *pb = pa + (size_t)K * K;                                                    \
    for (int j = 0; j < K; j++) {                                                            \
      /* size_t: one decrement serves the store and the table index. */                    \
      size_t a_ = pa[j], b_ = pb[j];                                                         \
      /* Same level leaving and entering: no change. Skipping it breaks the chain of       \
       * store-to-load forwarding on one bin that flat image areas otherwise make (5x on   \
       * real frames); on noise the branch mispredicts, so rows with few equal pairs run   \
       * without it (SKIP: a constant; `skip` is fixed along a row). */                     \
      if (SKIP) {                                                                            \
        if (a_ == b_) {                                                                      \
          eq += j == 0;                                                                      \
          continue;                                                                          \
        }                                                                                    \
      } else if (j == 0) {                                                                   \
        eq += a_ == b_; /* the share of equal pairs, sampled on the top window row */      \
      }                                                                                      \
      uint16_t *ha = hist + a_;                                                              \
      size_t cm = (size_t)*ha - 1;                                                           \
      *ha = (uint16_t)cm;                                                                    \
      S -= dinc[cm];                                                                         \
      uint16_t *hb = hist + b_;                                                              \
      size_t cb = *hb;                                                                       \
      *hb = (uint16_t)(cb + 1);                                                              \
      S += dinc[cb];                                                                         \
    }                                                                                        \
    pa += K;                                                                                 \
  } while (0)
  /* `skip` is a constant at every call site (see band_huang_sq): no test in the loop. */
#define ES_SLIDE_COLS_STEP() ES_SLIDE_COLS_STEP_V(skip)
  for (int x = 0;;) {
    if (x == xa && xa < xb) {
      unsigned ns = hist[sent];
      int n = ntot - (int)ns;
      const uint64_t F = flog[ns];
      const double l2 = log2n[n], sc = scale[n];
      if (plain) {
        for (;; x++) {
          mrow[x] = es_entropy_value(S - F, l2, sc, oscale);
          if (x + 1 == w) {
            *eqp = eq;
            return;
          }
          ES_SLIDE_COLS_STEP();
          if (x + 1 == xb) break;
        }
      } else {
        for (;; x++) {
          float hv = es_entropy_value(S - F, l2, sc, oscale);
          ES_FN(emit)(c, t, mrow, x, hv, rs, rss);
          if (x + 1 == w) {
            *eqp = eq;
            return;
          }
          ES_SLIDE_COLS_STEP();
          if (x + 1 == xb) break;
        }
      }
      x++;
      continue;
    }
    unsigned ns = hist[sent];
    int n = ntot - (int)ns;
    float hv = es_entropy_value(S - flog[ns], log2n[n], scale[n], oscale);
    ES_FN(emit)(c, t, mrow, x, hv, rs, rss);
    if (x + 1 == w) {
      *eqp = eq;
      return;
    }
    ES_SLIDE_COLS_STEP();
    x++;
  }
#undef ES_SLIDE_COLS_STEP
#undef ES_SLIDE_COLS_STEP_V
}

/* The square Huang row in ES_CPU_SEGS segments slid in lockstep, each with a histogram of
 * its own. On real images a bin is touched several times a pixel (a smooth column holds
 * one level in several window rows, and the next pixel's columns hold it again), and each
 * touch waits for the last one's store (a load-add-store chain through memory), so one
 * histogram leaves the core waiting on one chain; segments are independent chains that
 * overlap. The left edge [0, xa) (clip: the sentinel count changes) slides in `hist` as
 * slide_cols does; the interior [xa, xb) (N fixed there) is cut into ES_CPU_SEGS segments
 * of seg columns, each from its own first window; the last one goes on to x = w - 1 (the
 * right edge). Their histograms are interleaved, bin l of segment s at h4[l * ES_CPU_SEGS +
 * s]: one base pointer and a constant displacement a segment, where separate arrays took a
 * register each and pushed the sums onto the stack (about 3% slower). Values go to mrow
 * (never NULL here); the caller takes the statistics from mrow afterwards in x order. Every
 * histogram is left empty. Each S is the exact integer sum as everywhere, so the results
 * are the same bits. */
static inline __attribute__((always_inline)) void ES_FN(slide_segs)(
    const cpu_ctx *c, uint16_t *hist, uint16_t *h4, const ES_LT *colbuf, int K,
    uint64_t S, float *mrow, int xa, int xb, const int skip, long *eqp) {
  const uint64_t *dinc = c->dinc, *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const double oscale = c->oscale;
  const int w = c->w, sent = c->levels, ntot = K * K, r = (K - 1) / 2, R = c->R;
  const size_t cs = (size_t)K;
  const ES_LT *col0 = colbuf + (size_t)R * cs; /* image column 0, for window_add */
  long eq = 0;
  /* One pair of a segment's column move: window row J's level leaves with column PA and
   * that of column PA + K enters, in histogram H at bins l * NB + OFF. SKIP (a constant, as
   * in slide_cols): equal levels are no change and are skipped. */
#define ES_SEGS_PAIR(PA, H, SS, J, SKIP, NB, OFF)                                            \
  do {                                                                                       \
    size_t a_ = (PA)[J], b_ = (PA)[(size_t)K * K + (J)];                                     \
    if (!(SKIP) || a_ != b_) {                                                               \
      uint16_t *ha = (H) + a_ * (NB) + (OFF);                                                \
      size_t cm = (size_t)*ha - 1;                                                           \
      *ha = (uint16_t)cm;                                                                    \
      SS -= dinc[cm];                                                                        \
      uint16_t *hb = (H) + b_ * (NB) + (OFF);                                                \
      size_t cb = *hb;                                                                       \
      *hb = (uint16_t)(cb + 1);                                                              \
      SS += dinc[cb];                                                                        \
    }                                                                                        \
  } while (0)
#define ES_SEGS_STEP(PA, H, SS, NB, OFF)                                                     \
  do {                                                                                       \
    eq += (PA)[0] == (PA)[(size_t)K * K]; /* the top window row's share of equal pairs */  \
    for (int j = 0; j < K; j++) ES_SEGS_PAIR(PA, H, SS, j, skip, NB, OFF);                   \
    (PA) += K;                                                                               \
  } while (0)
  const ES_LT *pa = colbuf;
  for (int x = 0; x < xa; x++) {
    unsigned ns = hist[sent];
    int n = ntot - (int)ns;
    mrow[x] = es_entropy_value(S - flog[ns], log2n[n], scale[n], oscale);
    ES_SEGS_STEP(pa, hist, S, 1, 0);
  }
  /* The interior starts afresh in h4: empty `hist` (its window at xa). */
  ES_FN(window_add)(c, hist, &S, col0, cs, K, xa - r, xa + r, -1);
  const int seg = (xb - xa) / ES_CPU_SEGS;
  uint64_t Ss[ES_CPU_SEGS];
  const ES_LT *ps[ES_CPU_SEGS];
  int xs[ES_CPU_SEGS];
  for (int s = 0; s < ES_CPU_SEGS; s++) {
    xs[s] = xa + s * seg;
    ps[s] = colbuf + (size_t)xs[s] * cs;
    /* Segment s's first window: padded columns xs..xs + K - 1, as the slide reads them
     * (reflected levels or sentinels in the padding). */
    uint64_t t = 0;
    for (int k = 0; k < K * K; k++) {
      uint16_t *hp = h4 + (size_t)ps[s][k] * ES_CPU_SEGS + s;
      size_t cnt = *hp;
      *hp = (uint16_t)(cnt + 1);
      t += dinc[cnt];
    }
    Ss[s] = t;
  }
  {
    /* Inside [xa, xb) every segment's sentinel count is the clipped rows'. */
    unsigned ns = h4[(size_t)sent * ES_CPU_SEGS];
    int n = ntot - (int)ns;
    const uint64_t F = flog[ns];
    const double l2 = log2n[n], sc = scale[n];
    for (int i = 0;; i++) {
      for (int s = 0; s < ES_CPU_SEGS; s++)
        mrow[xs[s] + i] = es_entropy_value(Ss[s] - F, l2, sc, oscale);
      if (i + 1 == seg) break;
      eq += ps[0][0] == ps[0][(size_t)K * K];
      /* Window row by window row across the segments: their chains interleave. */
      for (int j = 0; j < K; j++)
        for (int s = 0; s < ES_CPU_SEGS; s++)
          ES_SEGS_PAIR(ps[s], h4, Ss[s], j, skip, ES_CPU_SEGS, s);
      for (int s = 0; s < ES_CPU_SEGS; s++) ps[s] += K;
    }
  }
  /* All but the last segment are done: empty their bins (windows at xs + seg - 1). */
  for (int s = 0; s + 1 < ES_CPU_SEGS; s++)
    for (int k = 0; k < K * K; k++) h4[(size_t)ps[s][k] * ES_CPU_SEGS + s]--;
  /* The last segment on to the row's end (the right edge included), then empty. */
  uint64_t SL = Ss[ES_CPU_SEGS - 1];
  pa = ps[ES_CPU_SEGS - 1];
  for (int x = xs[ES_CPU_SEGS - 1] + seg - 1; x + 1 < w;) {
    ES_SEGS_STEP(pa, h4, SL, ES_CPU_SEGS, ES_CPU_SEGS - 1);
    x++;
    unsigned ns = h4[(size_t)sent * ES_CPU_SEGS + ES_CPU_SEGS - 1];
    int n = ntot - (int)ns;
    mrow[x] = es_entropy_value(SL - flog[ns], log2n[n], scale[n], oscale);
  }
  for (int k = 0; k < K * K; k++) h4[(size_t)pa[k] * ES_CPU_SEGS + ES_CPU_SEGS - 1]--;
  *eqp = eq;
#undef ES_SEGS_STEP
#undef ES_SEGS_PAIR
}

static void ES_FN(band_huang_sq)(const cpu_ctx *c, cpu_thread *t, int y0, int y1) {
  const int w = c->w, K = c->K, r = c->r, R = c->R;
  const int pwc = w + 2 * R;
  const size_t pw = (size_t)w + 2 * R + 1;
  ES_LT *row = (ES_LT *)t->ring; /* one padded row (the ring's first slot) */
  ES_LT *colbuf = (ES_LT *)t->colbuf;
  uint16_t *hist = t->hist;
  (void)pw;

  for (int v = y0 - r; v < y1 + r; v++) {
    /* Row v enters slot v mod K; from the band's first row on, one per output row. */
    int slot = ((v % K) + K) % K;
    if (ES_FN(ring_fill)(c, row, v)) {
      for (int i = 0; i < pwc; i++) colbuf[(size_t)i * K + slot] = row[i];
    } else {
      for (int i = 0; i < pwc; i++) colbuf[(size_t)i * K + slot] = (ES_LT)c->levels;
    }
    int y = v - r;
    if (y < y0) continue;
    uint64_t S = 0;
    ES_FN(window_add)(c, hist, &S, colbuf + (size_t)R * K, (size_t)K, K, -r, r, 1);
    float *mrow = cpu_map_row(c, t, y);
    double rs = 0.0, rss = 0.0;
    long eq = 0;
    if (y == y0) t->skip_eq = 1;
    /* Segments in lockstep (slide_segs) where a map row takes the values and the interior
     * is long enough for each segment to pay for its own first window. A mask moves N
     * anywhere: one segment (slide_cols). */
    const int xa = c->border == ES_BORDER_CLIP ? (r < w ? r : w) : 0;
    const int xb = c->border == ES_BORDER_CLIP ? w - r : w;
    if (mrow && !c->mask && xb - xa >= ES_CPU_SEGS * cpu_seg_min(K)) {
#define ES_SLIDE_SEGS_K(KK)                                                                  \
  do {                                                                                       \
    if (t->skip_eq)                                                                          \
      ES_FN(slide_segs)(c, hist, t->hists, colbuf, KK, S, mrow, xa, xb, 1, &eq);             \
    else                                                                                     \
      ES_FN(slide_segs)(c, hist, t->hists, colbuf, KK, S, mrow, xa, xb, 0, &eq);             \
  } while (0)
      switch (K) {
      case 3: ES_SLIDE_SEGS_K(3); break;
      case 5: ES_SLIDE_SEGS_K(5); break;
      case 7: ES_SLIDE_SEGS_K(7); break;
      case 9: ES_SLIDE_SEGS_K(9); break;
      default: ES_SLIDE_SEGS_K(K); break;
      }
#undef ES_SLIDE_SEGS_K
      t->skip_eq = 4 * eq >= (long)(w - 1); /* as below */
      /* The statistics from the row, in x order (the sums emit takes in slide_cols). */
      if (c->want_stats || c->want_minmax)
        for (int x = 0; x < w; x++) ES_FN(emit)(c, t, NULL, x, mrow[x], &rs, &rss);
      goto row_done;
    }
    /* slide_cols inlined with K and `skip` as constants: one copy per small K and per
     * skip choice. */
#define ES_SLIDE_COLS_K(KK)                                                                  \
  do {                                                                                       \
    if (t->skip_eq)                                                                          \
      ES_FN(slide_cols)(c, t, hist, colbuf, KK, S, mrow, &rs, &rss, 1, &eq);                 \
    else                                                                                     \
      ES_FN(slide_cols)(c, t, hist, colbuf, KK, S, mrow, &rs, &rss, 0, &eq);                 \
  } while (0)
    switch (K) {
    case 3: ES_SLIDE_COLS_K(3); break;
    case 5: ES_SLIDE_COLS_K(5); break;
    case 7: ES_SLIDE_COLS_K(7); break;
    case 9: ES_SLIDE_COLS_K(9); break;
    default: ES_SLIDE_COLS_K(K); break;
    }
#undef ES_SLIDE_COLS_K
    /* Skip on the next row when at least a quarter of this row's sampled pairs (the top
     * window row's) were equal (noise with L levels has 1/L). Only the speed depends on it,
     * never the result. */
    t->skip_eq = 4 * eq >= (long)(w - 1);
    /* Leave the histogram empty: drop the window at x = w - 1. */
    ES_FN(window_add)(c, hist, &S, colbuf + (size_t)R * K, (size_t)K, K, w - 1 - r, w - 1 + r,
                      -1);
  row_done:
    cpu_row_done(c, t, y, y1);
    if (c->want_stats) {
      c->rowsum[y] = rs;
      c->rowsumsq[y] = rss;
    }
    if (c->level_hist_wanted) {
      int ys = ((y % K) + K) % K;
      for (int x = 0; x < w; x++) t->level_hist[colbuf[(size_t)(R + x) * K + ys]]++;
    }
  }
}

/* Perreault-Hebert for square windows: one histogram per padded column over the K rows of
 * the window, moved down one row per output row (2 updates per column); along the row the
 * window histogram adds the entering column's histogram and subtracts the leaving one's,
 * and S is recomputed from the L bins. O(L) per pixel, independent of K. */
static void ES_FN(band_ph)(const cpu_ctx *c, cpu_thread *t, int y0, int y1) {
  const int w = c->w, K = c->K, r = c->r, R = c->R, ring_n = K + 1;
  /* Bins incl. the clip sentinel, padded to whole 8-lane vectors (the pad bins stay 0). */
  const int nb = (c->levels + 1 + 7) & ~7;
  const int pwc = w + 2 * R;    /* padded columns */
  const size_t pw = (size_t)w + 2 * R + 1;
  ES_LT *ring = (ES_LT *)t->ring;
  uint16_t *colh = t->colh;
  uint16_t *win = t->hist;
  const uint64_t *flog = c->tables->flog;
  const double *log2n = c->tables->log2n, *scale = c->tables->scale;
  const int L = c->levels;
  int valid[ES_WINDOW_MAX + 1];

  memset(colh, 0, (size_t)pwc * nb * sizeof *colh);
  int nrows = 0; /* window rows inside the image (clip) or K (reflect) */
  for (int v = y0 - r; v <= y0 + r; v++) {
    int s = ((v % ring_n) + ring_n) % ring_n;
    valid[s] = ES_FN(ring_fill)(c, ring + (size_t)s * pw, v);
    if (!valid[s]) continue;
    nrows++;
    const ES_LT *p = ring + (size_t)s * pw;
    for (int i = 0; i < pwc; i++) colh[(size_t)i * nb + p[i]]++;
  }
  for (int y = y0; y < y1; y++) {
    if (y > y0) {
      /* Move the column histograms down: row y - r - 1 leaves, row y + r enters. */
      int vo = y - r - 1, so = ((vo % ring_n) + ring_n) % ring_n;
      if (valid[so]) {
        const ES_LT *p = ring + (size_t)so * pw;
        for (int i = 0; i < pwc; i++) colh[(size_t)i * nb + p[i]]--;
        nrows--;
      }
      int vi = y + r, si = ((vi % ring_n) + ring_n) % ring_n;
      valid[si] = ES_FN(ring_fill)(c, ring + (size_t)si * pw, vi);
      if (valid[si]) {
        const ES_LT *p = ring + (size_t)si * pw;
        for (int i = 0; i < pwc; i++) colh[(size_t)i * nb + p[i]]++;
        nrows++;
      }
    }
    const int ntot = nrows * K;
    memset(win, 0, (size_t)nb * sizeof *win);
    for (int i = 0; i < K; i++) {
      const uint16_t *ch = colh + (size_t)i * nb;
      for (int k = 0; k < nb; k++) win[k] = (uint16_t)(win[k] + ch[k]);
    }
    float *mrow = cpu_map_row(c, t, y);
    double rs = 0.0, rss = 0.0;
    for (int x = 0;; x++) {
      uint64_t S = cpu_sum_flog(flog, win, L);
      int n = ntot - (int)win[L];
      float hv = es_entropy_value(S, log2n[n], scale[n], c->oscale);
      ES_FN(emit)(c, t, mrow, x, hv, &rs, &rss);
      if (x + 1 == w) break;
      const uint16_t *cin = colh + (size_t)(x + K) * nb, *cout = colh + (size_t)x * nb;
      /* 8 bins at a time with GCC/Clang vector types (SSE2, NEON): gcc would not
       * vectorize the plain loop, fearing the window histogram aliases the columns. */
      for (int j = 0; j < nb; j += 8) {
        cpu_v8u16 a, b, d;
        memcpy(&a, win + j, 16);
        memcpy(&b, cin + j, 16);
        memcpy(&d, cout + j, 16);
        a = a + b - d;
        memcpy(win + j, &a, 16);
      }
    }
    cpu_row_done(c, t, y, y1);
    if (c->want_stats) {
      c->rowsum[y] = rs;
      c->rowsumsq[y] = rss;
    }
    if (c->level_hist_wanted) {
      const ES_LT *p = ring + (size_t)(((y % ring_n) + ring_n) % ring_n) * pw + R;
      for (int x = 0; x < w; x++) t->level_hist[p[x]]++;
    }
  }
}
