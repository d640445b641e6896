/*
 * test_pipeline_batch.c - a directory of stills through es_run (pipeline/run_batch.c): the
 * still-list source's read_item decoded by three threads, a per-item sink of the test's own
 * (ES_SINK_PER_ITEM, written by several threads at once) whose maps must equal es_compute's
 * of each file bit for bit, an ordered sink that must get every item in name order with
 * es_compute's statistics, and es_sink_stills writing a heat PNG an item. An undecodable
 * file among them is said once, counted failed, has no output and no record, and the run's
 * exit code is 2 while the others are all written; a second run with -n keeps every
 * output (ES_SINK_KEPT: counted skipped, the records still written); an ordered sink asking
 * for a map (es.open of a directory) gets every item in name order with es_compute's map and
 * the file's depth; a stop asked for before the run leaves every item unstarted (exit 130).
 * What a CLI's batch needs of the run, item by item: es_sink_stills's check before an item is
 * read (an existing output refused without -y, "exists (use -y ...)", exit 3, nothing read or
 * written; kept with -n and no statistics: not even read, so a broken input whose output
 * exists is skipped, not failed), items failed before the run (item_failed: counted, never
 * read nor said again), the whole batch's index (item_index) in the records while a
 * file-an-item sink writes by es_item.item, item_done once an item with its status and size,
 * and the count of items a stop gave up (es_run_counts.interrupted).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_paths.h"
#include "es_test.h"
#include "es_test_png.h"

enum { MAXN = 16 };
static char g_dir[64];
static int g_records_opened; /* the records sink's open ran */

/* The per-item sink: each item's map, copied (a slot an index: no two threads share one). */
typedef struct maps {
  int n, writes_at_once, busy, max_busy;
  pthread_mutex_t lock;
  float *map[MAXN];
  int w[MAXN], h[MAXN];
} maps;
static int m_open(es_sink *k, const es_source_info *in, es_sink_needs *nd, char *msg, size_t len) {
  (void)k, (void)in, (void)msg, (void)len;
  nd->want_map = 1;
  return ES_OK;
}
static int m_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  maps *m = k->self;
  (void)msg, (void)len;
  pthread_mutex_lock(&m->lock);
  if (++m->busy > m->max_busy) m->max_busy = m->busy;
  pthread_mutex_unlock(&m->lock);
  usleep(20000); /* long enough that several writers overlap */
  if (it->index >= 0 && it->index < MAXN) {
    float *p = malloc((size_t)it->width * it->height * sizeof *p);
    for (int y = 0; p && y < it->height; y++)
      memcpy(p + (size_t)y * it->width, it->map + (size_t)y * it->map_stride,
             (size_t)it->width * sizeof *p);
    free(m->map[it->index]);
    m->map[it->index] = p;
    m->w[it->index] = it->width;
    m->h[it->index] = it->height;
  }
  pthread_mutex_lock(&m->lock);
  m->busy--;
  m->n++;
  pthread_mutex_unlock(&m->lock);
  return ES_OK;
}
static int m_close(es_sink *k, int commit, char *msg, size_t len) {
  (void)k, (void)commit, (void)msg, (void)len;
  return ES_OK;
}

/* The ordered sink: names, indices and statistics in the order received. */
typedef struct recs {
  int n, want_map, committed, closes;
  char name[MAXN][64];
  int64_t index[MAXN];
  es_stats st[MAXN];
  float *map[MAXN]; /* with want_map: each item's, copied */
  int depth[MAXN];
} recs;
static int r_open(es_sink *k, const es_source_info *in, es_sink_needs *nd, char *msg, size_t len) {
  recs *r = k->self;
  (void)in, (void)msg, (void)len;
  nd->want_stats = 1;
  nd->want_map = r->want_map;
  g_records_opened = 1;
  return ES_OK;
}
static int r_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  recs *r = k->self;
  (void)msg, (void)len;
  if (r->n < MAXN && it->stats && !it->pix && !it->map == !r->want_map) {
    snprintf(r->name[r->n], sizeof r->name[0], "%s", it->name);
    r->index[r->n] = it->index;
    r->st[r->n] = *it->stats;
    r->depth[r->n] = it->depth;
    if (it->map) {
      float *p = malloc((size_t)it->width * it->height * sizeof *p);
      for (int y = 0; p && y < it->height; y++)
        memcpy(p + (size_t)y * it->width, it->map + (size_t)y * it->map_stride,
               (size_t)it->width * sizeof *p);
      r->map[r->n] = p;
    }
  }
  r->n++;
  return ES_OK;
}
static int r_close(es_sink *k, int commit, char *msg, size_t len) {
  recs *r = k->self;
  (void)msg, (void)len;
  r->closes++;
  r->committed += commit;
  return ES_OK;
}

static int g_lines, g_bad_lines, g_exists_lines, g_a_lines;
static void on_message(void *user, const char *line) {
  (void)user;
  g_lines++;
  if (strstr(line, "bad.png: ")) g_bad_lines++;
  if (strstr(line, ": exists (use -y to overwrite, -n to skip)")) g_exists_lines++;
  if (strstr(line, "/a.png")) g_a_lines++;
}

/* What item_done was told, item by item. */
typedef struct dones {
  int calls[MAXN], status[MAXN], w[MAXN], h[MAXN];
} dones;
static void on_done(void *user, int64_t i, int status, int width, int height, double seconds) {
  dones *d = user;
  if (i < 0 || i >= MAXN || seconds < 0) return;
  d->calls[i]++;
  d->status[i] = status;
  d->w[i] = width;
  d->h[i] = height;
}

/* A file-an-item sink whose write of item `stop_at` is given up as a stop gives up a write
 * to a FIFO without a reader. */
static int cut_write(es_sink *k, const es_item *it, char *msg, size_t len) {
  const int64_t *stop_at = k->self;
  if (it->item != *stop_at) return ES_OK;
  snprintf(msg, len, "cut: given up");
  return ES_ERR_INTERRUPTED;
}

/* A run of the listed directory with the item-by-item options: es_sink_stills (overwrite,
 * skip), the records sink where rc_ is set, the cutting sink where cut >= 0. The exit code. */
typedef struct item_run {
  int overwrite, skip;
  recs *rc_;
  const int64_t *index;
  const int *failed;
  int64_t cut;
  dones *d;
  int prep; /* prepare's answer (-1: no prepare) */
} item_run;

/* The listed items' paths and names, and each one's output under out/ (out_store holds
 * them). */
static void list_items(const es_still_list *l, const char **paths, const char **names,
                       const char **outs, char (*out_store)[160]) {
  for (size_t i = 0; i < l->n; i++) {
    char *o = es_still_out_name(l->e[i].name, l->e[i].keep_ext, 0);
    paths[i] = l->e[i].path;
    names[i] = l->e[i].name;
    snprintf(out_store[i], sizeof out_store[i], "%s/out/%s", g_dir, o ? o : "x");
    outs[i] = out_store[i];
    free(o);
  }
}

/* prepare: called once, after the sinks opened (the records' open has run), before any item. */
static int g_prep_calls, g_prep_after_open, g_prep_code;
static int prep(void *user) {
  (void)user;
  g_prep_calls++;
  g_prep_after_open = g_records_opened;
  return g_prep_code;
}
static int run_items(const es_still_list *l, const item_run *ir, es_run_counts *counts) {
  const char *paths[MAXN], *names[MAXN], *outs[MAXN];
  char out_store[MAXN][160];
  es_run_config rc;
  es_source src;
  es_sink kr, kp, kc;
  es_run *run = NULL;
  es_stills_source_opts so = {0, 0, 0, g_dir};
  es_sink_opts po;
  list_items(l, paths, names, outs, out_store);
  es_run_config_default(&rc);
  rc.cfg.device = ES_DEVICE_CPU;
  rc.cfg.message = on_message;
  rc.workers = 3;
  rc.item_index = ir->index;
  rc.item_failed = ir->failed;
  rc.item_done = ir->d ? on_done : NULL;
  rc.user = ir->d;
  if (ir->prep >= 0) rc.prepare = prep, g_prep_code = ir->prep;
  memset(&po, 0, sizeof po);
  po.pixfmt = ES_PIX_RGB24;
  po.overwrite = ir->overwrite;
  po.skip = ir->skip;
  if (es_source_stills(&src, paths, names, l->n, &so) != ES_OK) return -1;
  if (es_run_create(&run, &rc, &src) != ES_OK) return -1;
  if (ir->rc_) {
    memset(&kr, 0, sizeof kr);
    kr.name = "records", kr.self = ir->rc_, kr.flags = ES_SINK_KEEP_EMPTY;
    kr.open = r_open, kr.write = r_write, kr.close = r_close;
    es_run_add_sink(run, &kr);
  }
  if (ir->cut >= 0) {
    memset(&kc, 0, sizeof kc);
    kc.name = "cut", kc.self = (void *)&ir->cut, kc.flags = ES_SINK_PER_ITEM;
    kc.open = m_open, kc.write = cut_write, kc.close = m_close;
    es_run_add_sink(run, &kc);
  }
  if (es_sink_stills(&kp, outs, l->n, &po) == ES_OK) es_run_add_sink(run, &kp);
  es_run_execute(run);
  es_run_get_counts(run, counts);
  es_run_destroy(&run);
  return counts->exit_code;
}

/* One run of the listed directory; the exit code. */
static int run_dir(const es_still_list *l, maps *m, recs *rc_, int skip, int stop,
                   es_run_counts *counts) {
  const char *paths[MAXN], *names[MAXN], *outs[MAXN];
  char out_store[MAXN][160];
  es_run_config rc;
  es_source src;
  es_sink ks, kr, kp;
  es_run *run = NULL;
  es_stills_source_opts so = {0, 0, 0, g_dir};
  es_sink_opts po;
  list_items(l, paths, names, outs, out_store);
  es_run_config_default(&rc);
  rc.cfg.device = ES_DEVICE_CPU;
  rc.cfg.message = on_message;
  rc.workers = 3;
  memset(&po, 0, sizeof po);
  po.pixfmt = ES_PIX_RGB24;
  po.skip = skip;
  if (es_source_stills(&src, paths, names, l->n, &so) != ES_OK) return -1;
  if (es_run_create(&run, &rc, &src) != ES_OK) return -1;
  memset(&ks, 0, sizeof ks);
  ks.name = "maps", ks.self = m, ks.flags = ES_SINK_PER_ITEM;
  ks.open = m_open, ks.write = m_write, ks.close = m_close;
  memset(&kr, 0, sizeof kr);
  kr.name = "records", kr.self = rc_, kr.flags = ES_SINK_KEEP_EMPTY;
  kr.open = r_open, kr.write = r_write, kr.close = r_close;
  es_run_add_sink(run, &ks);
  es_run_add_sink(run, &kr);
  if (es_sink_stills(&kp, outs, l->n, &po) == ES_OK) es_run_add_sink(run, &kp);
  if (stop) es_run_stop(run);
  es_run_execute(run);
  es_run_get_counts(run, counts);
  es_run_destroy(&run);
  return counts->exit_code;
}

int main(void) {
  char path[160], in[160], msg[256] = "";
  es_still_list l;
  es_still_list_opts lo = {0, NULL, NULL, NULL, NULL};
  es_run_counts c;
  maps m;
  recs r;
  int code;
  snprintf(g_dir, sizeof g_dir, "/tmp/test_pipeline_batch-XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  snprintf(in, sizeof in, "%s/in", g_dir);
  mkdir(in, 0777);
  snprintf(path, sizeof path, "%s/out", g_dir);
  mkdir(path, 0777);
  CHECK(es_test_write_png(in, "a.png", 64, 40, 8, 1) == ES_OK, "a");
  CHECK(es_test_write_png(in, "b.png", 23, 71, 16, 2) == ES_OK, "b");
  CHECK(es_test_write_png(in, "c.png", 130, 9, 8, 3) == ES_OK, "c");
  CHECK(es_test_write_png(in, "d.png", 17, 17, 8, 4) == ES_OK, "d");
  CHECK(es_test_write_png(in, "e.png", 300, 200, 8, 5) == ES_OK, "e");
  CHECK(es_test_write_png(in, "f.png", 9, 33, 16, 6) == ES_OK, "f");
  snprintf(path, sizeof path, "%s/in/bad.png", g_dir);
  FILE *fp = fopen(path, "wb");
  if (fp) {
    fputs("\x89PNG\r\n\x1a\n not a PNG after all", fp);
    fclose(fp);
  }
  snprintf(path, sizeof path, "%s/in", g_dir);
  CHECK(es_still_list_dir(&l, path, &lo, msg, sizeof msg) == ES_OK && l.n == 7, "list: %zu",
        l.n);
  /* Name order: a b bad c d e f. */
  const int bad = 2;
  CHECK(l.n == 7 && !strcmp(l.e[bad].name, "bad.png"), "order");

  /* The references: es_compute of each good file. */
  es_context *ctx = NULL;
  es_config cfg;
  es_config_default(&cfg);
  cfg.device = ES_DEVICE_CPU;
  CHECK(es_context_create(&ctx, &cfg, msg, sizeof msg) == ES_OK, "context: %s", msg);
  float *ref[MAXN] = {0};
  es_stats ref_st[MAXN];
  int ref_w[MAXN] = {0}, ref_h[MAXN] = {0};
  for (size_t i = 0; ctx && i < l.n; i++) {
    es_test_buf b = {0};
    es_image img;
    if (i == (size_t)bad) continue;
    if (es_still_read_to(l.e[i].path, 0, es_test_to_buf, &b, &img, msg, sizeof msg) != ES_OK)
      continue;
    img.data = b.data;
    img.stride = b.stride;
    ref[i] = malloc((size_t)img.width * img.height * sizeof(float));
    ref_w[i] = img.width, ref_h[i] = img.height;
    CHECK(es_compute(ctx, &img, ref[i], (size_t)img.width, &ref_st[i], NULL, NULL) == ES_OK,
          "compute %zu", i);
    free(b.data);
  }
  es_context_destroy(&ctx);

  memset(&m, 0, sizeof m);
  pthread_mutex_init(&m.lock, NULL);
  memset(&r, 0, sizeof r);
  code = run_dir(&l, &m, &r, 0, 0, &c);
  CHECK(code == 2, "exit %d, want 2 (one undecodable file)", code);
  CHECK(g_bad_lines == 1, "bad.png said %d times (%d lines)", g_bad_lines, g_lines);
  CHECK(c.frames == 6 && c.failed == 1 && c.skipped == 0 && c.expected == 7,
        "frames %lld failed %lld skipped %lld", (long long)c.frames, (long long)c.failed,
        (long long)c.skipped);
  CHECK(m.n == 6 && m.max_busy > 1, "per-item writes %d, at most %d at once", m.n, m.max_busy);
  for (size_t i = 0; i < l.n; i++) {
    if (i == (size_t)bad) {
      CHECK(!m.map[i], "a map for the bad file");
      continue;
    }
    CHECK(m.map[i] && ref[i] && m.w[i] == ref_w[i] && m.h[i] == ref_h[i] &&
              !memcmp(m.map[i], ref[i], (size_t)ref_w[i] * ref_h[i] * sizeof(float)),
          "%s: the run's map is not es_compute's", l.e[i].name);
    char *o = es_still_out_name(l.e[i].name, 0, 0);
    struct stat st;
    snprintf(path, sizeof path, "%s/out/%s", g_dir, o);
    CHECK(stat(path, &st) == 0 && st.st_size > 0, "%s not written", path);
    free(o);
  }
  snprintf(path, sizeof path, "%s/out/bad.png", g_dir);
  CHECK(access(path, F_OK) != 0, "bad.png has an output");
  /* The records: in name order, the bad one left out, es_compute's statistics. */
  CHECK(r.n == 6 && r.committed == 1, "records %d, committed %d", r.n, r.committed);
  for (int k = 0, i = 0; k < r.n && k < MAXN && i < (int)l.n; k++, i++) {
    if (i == bad) i++;
    CHECK(!strcmp(r.name[k], l.e[i].name) && r.index[k] == i, "record %d: %s %lld, want %s %d",
          k, r.name[k], (long long)r.index[k], l.e[i].name, i);
    CHECK(r.st[k].count == ref_st[i].count && r.st[k].mean == ref_st[i].mean &&
              r.st[k].max == ref_st[i].max && r.st[k].global_entropy == ref_st[i].global_entropy,
          "record %d: statistics differ", k);
  }

  /* -n: every output exists: kept, the records still written. */
  memset(&r, 0, sizeof r);
  code = run_dir(&l, &m, &r, 1, 0, &c);
  CHECK(code == 2 && c.skipped == 6 && c.frames == 6 && r.n == 6, "-n: exit %d skipped %lld, %d records",
        code, (long long)c.skipped, r.n);

  /* A stop before the run: nothing started, exit 130, the records' file kept. */
  memset(&r, 0, sizeof r);
  int before = m.n;
  code = run_dir(&l, &m, &r, 0, 1, &c);
  CHECK(code == 130 && m.n == before && r.n == 0 && c.frames == 0, "stop: exit %d, %d written",
        code, m.n - before);

  /* An ordered sink asking for a map: every item in name order with its map (each kept
   * until its turn), the bad one left out; each with its file's depth. */
  memset(&r, 0, sizeof r);
  r.want_map = 1;
  code = run_dir(&l, &m, &r, 1, 0, &c);
  CHECK(code == 2 && r.n == 6, "an ordered sink with a map: exit %d, %d records", code, r.n);
  for (int k = 0, i = 0; k < r.n && k < MAXN && i < (int)l.n; k++, i++) {
    if (i == bad) i++;
    CHECK(r.index[k] == i && r.map[k] && ref[i] &&
              !memcmp(r.map[k], ref[i], (size_t)ref_w[i] * ref_h[i] * sizeof(float)),
          "ordered record %d (%s): not es_compute's map", k, l.e[i].name);
    const int want_depth = !strcmp(l.e[i].name, "b.png") || !strcmp(l.e[i].name, "f.png") ? 16 : 8;
    CHECK(r.depth[k] == want_depth, "ordered record %d: depth %d, want %d", k, r.depth[k],
          want_depth);
    free(r.map[k]);
  }

  /* Every output but bad.png's exists. Neither -y nor -n: each refused before it is read
   * (one line each, exit 3), bad.png read and failed as before. */
  {
    item_run ir = {0, 0, NULL, NULL, NULL, -1, NULL, -1};
    dones d;
    memset(&d, 0, sizeof d);
    ir.d = &d;
    g_exists_lines = g_bad_lines = 0;
    code = run_items(&l, &ir, &c);
    CHECK(code == 3 && c.failed == 7 && c.frames == 0 && g_exists_lines == 6 && g_bad_lines == 1,
          "exists: exit %d, failed %lld, %d exists lines, bad said %d", code,
          (long long)c.failed, g_exists_lines, g_bad_lines);
    for (size_t i = 0; i < l.n; i++)
      CHECK(d.calls[i] == 1 && d.status[i] == (i == (size_t)bad ? ES_ERR_INPUT : ES_ERR_OUTPUT) &&
                d.w[i] == 0,
            "exists: item %zu done %d times, status %d, width %d", i, d.calls[i], d.status[i],
            d.w[i]);
  }
  /* bad.png's output exists too: -n without statistics keeps every output unread, so the
   * broken input is skipped, not failed. */
  snprintf(path, sizeof path, "%s/out/bad.png", g_dir);
  fp = fopen(path, "wb");
  if (fp) fclose(fp);
  {
    item_run ir = {0, 1, NULL, NULL, NULL, -1, NULL, -1};
    g_bad_lines = 0;
    code = run_items(&l, &ir, &c);
    CHECK(code == 0 && c.skipped == 7 && c.frames == 7 && c.failed == 0 && g_bad_lines == 0,
          "-n unread: exit %d, skipped %lld, failed %lld, bad said %d", code, (long long)c.skipped,
          (long long)c.failed, g_bad_lines);
  }
  unlink(path);
  /* A share of a bigger batch: item i is index 10 + 3i of the whole; a.png failed before the
   * run (not read, not said again); item 4 (d.png) given up by a stop's cut (exit 130: a
   * give-up is an interruption's code, the worst). */
  {
    int64_t index[MAXN];
    int failed[MAXN] = {0};
    item_run ir = {1, 0, NULL, index, failed, 4, NULL, -1};
    dones d;
    memset(&d, 0, sizeof d);
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < l.n; i++) index[i] = 10 + 3 * (int64_t)i;
    failed[0] = ES_ERR_OUTPUT;
    ir.rc_ = &r;
    ir.d = &d;
    g_a_lines = g_bad_lines = 0;
    code = run_items(&l, &ir, &c);
    CHECK(code == 130 && c.failed == 3 && c.interrupted == 1 && g_a_lines == 0 && g_bad_lines == 1,
          "share: exit %d, failed %lld, interrupted %lld, a.png said %d", code,
          (long long)c.failed, (long long)c.interrupted, g_a_lines);
    CHECK(d.calls[0] == 1 && d.status[0] == ES_ERR_OUTPUT && d.w[0] == 0, "a.png: %d %d",
          d.calls[0], d.status[0]);
    CHECK(d.status[4] == ES_ERR_INTERRUPTED && d.w[4] == ref_w[4] && d.h[4] == ref_h[4],
          "d.png: status %d, %dx%d", d.status[4], d.w[4], d.h[4]);
    CHECK(d.status[1] == ES_OK && d.w[1] == ref_w[1] && d.h[1] == ref_h[1], "b.png: %d %dx%d",
          d.status[1], d.w[1], d.h[1]);
    /* The records: b c d e f (a failed before, bad unreadable; d computed, its record kept),
     * with the whole batch's index. */
    CHECK(r.n == 5, "share: %d records", r.n);
    for (int k = 0, i = 1; k < r.n && k < MAXN && i < (int)l.n; k++, i++) {
      if (i == bad) i++;
      CHECK(!strcmp(r.name[k], l.e[i].name) && r.index[k] == 10 + 3 * i,
            "share record %d: %s %lld, want %s %d", k, r.name[k], (long long)r.index[k],
            l.e[i].name, 10 + 3 * i);
    }
  }

  /* prepare: after the sinks open, before anything is read; its code ends the run. */
  {
    item_run ir = {1, 0, NULL, NULL, NULL, -1, NULL, 3};
    dones d;
    memset(&d, 0, sizeof d);
    memset(&r, 0, sizeof r);
    ir.rc_ = &r;
    ir.d = &d;
    g_records_opened = g_prep_calls = 0;
    code = run_items(&l, &ir, &c);
    CHECK(code == 3 && g_prep_calls == 1 && g_prep_after_open && r.n == 0 && d.calls[0] == 0 &&
              c.frames == 0 && c.failed == 0,
          "prepare 3: exit %d, %d calls, after open %d, %d records", code, g_prep_calls,
          g_prep_after_open, r.n);
    ir.prep = 0;
    g_prep_calls = 0;
    memset(&r, 0, sizeof r);
    code = run_items(&l, &ir, &c);
    CHECK(code == 2 && g_prep_calls == 1 && r.n == 6, "prepare 0: exit %d, %d calls, %d records",
          code, g_prep_calls, r.n);
  }

  for (int i = 0; i < MAXN; i++) free(m.map[i]), free(ref[i]);
  pthread_mutex_destroy(&m.lock);
  es_still_list_free(&l);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  printf("test_pipeline_batch: %d failure(s)\n", es_test_failures);
  return es_test_failures ? 1 : 0;
}
