/*
 * test_bands_run.c - es_run_bands (pipeline/bands_run.c) against es_compute of the whole
 * image. The image goes in as a PNG or a TIFF file (io/'s band sources, chosen by name as
 * the program chooses them), in odd band rows, to every output kind of io/ (a .npy, a .tif
 * of float32, heat, gray8 and gray16, a .png, a statistics file) and to a band sink of the
 * test's own: each file is byte for byte the one the same writer makes of es_compute's
 * whole-image results, the test's sink gets the map or rendering bit for bit. Then the
 * failure rules: a source that cannot be opened, an output kept (-n), a writer failing
 * midway, a stop, range auto, each leaving nothing under an output's name.
 */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "es_pipeline_internal.h"
#include "es_pipeline_test.h"
#include "es_tiff.h"

static char g_dir[64];

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  uint8_t *b = NULL;
  long sz;
  *n = 0;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (b = malloc((size_t)sz + 1)) && fread(b, 1, (size_t)sz, f) == (size_t)sz)
    *n = (size_t)sz;
  fclose(f);
  return b;
}

static void same_file(const char *a, const char *b, const char *what) {
  size_t na, nb;
  uint8_t *da = slurp(a, &na), *db = slurp(b, &nb);
  CHECK(da && db && na > 0 && na == nb && !memcmp(da, db, na),
        "%s: %s and %s differ (%zu, %zu bytes)", what, a, b, na, nb);
  free(da);
  free(db);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The test's own band sink: rows gathered into a pt_result, in order. */
typedef struct mem_sink {
  pt_result *res;
  int next_row, bad_order, fail_at, closed, committed;
} mem_sink;

static int ms_open(es_band_sink *k, const es_band_info *info, char *msg, size_t len) {
  mem_sink *m = k->self;
  (void)msg;
  (void)len;
  if (info->width != m->res->w || info->height != m->res->h) m->bad_order++;
  return ES_OK;
}

static int ms_write(es_band_sink *k, int y0, int n, const float *map, size_t map_stride,
                    const es_planes *pix, char *msg, size_t len) {
  mem_sink *m = k->self;
  pt_result *r = m->res;
  if (y0 != m->next_row || (k->pixfmt == ES_PIX_NONE) != (map != NULL)) m->bad_order++;
  m->next_row = y0 + n;
  if (m->fail_at >= 0 && y0 + n > m->fail_at) {
    snprintf(msg, len, "disk full: planted");
    return ES_ERR_OUTPUT;
  }
  for (int y = 0; y < n; y++)
    if (map)
      memcpy(r->map + (size_t)(y0 + y) * r->map_stride, map + (size_t)y * map_stride,
             (size_t)r->w * sizeof(float));
    else
      memcpy(r->pix.plane[0] + (size_t)(y0 + y) * r->pix.stride[0],
             pix->plane[0] + (size_t)y * pix->stride[0], es_pix_stride(k->pixfmt, 0, r->w));
  return ES_OK;
}

static int ms_close(es_band_sink *k, int commit, char *msg, size_t len) {
  mem_sink *m = k->self;
  (void)msg;
  (void)len;
  m->closed++;
  m->committed = commit;
  return ES_OK;
}

static es_band_sink mem_band_sink(mem_sink *m, int pixfmt) {
  es_band_sink k = {"memory", m, pixfmt, ms_open, ms_write, ms_close};
  return k;
}

typedef struct notes {
  int kept;
  int stop_after; /* polls before the stop (-1: never) */
} notes;

static void on_notice(void *user, const char *name, const char *line) {
  notes *n = user;
  (void)name;
  if (!strcmp(line, "exists, skipped")) n->kept++;
}

static int on_stopped(void *user) {
  notes *n = user;
  return n->stop_after >= 0 && --n->stop_after < 0;
}

static void base_config(es_bands_run_config *c, const es_params *p, int bins, notes *n) {
  es_bands_run_config_default(c);
  c->cfg.params = *p;
  c->cfg.device = ES_DEVICE_CPU;
  c->cfg.stats_bins = bins;
  c->notice = on_notice;
  c->stopped = on_stopped;
  c->user = n;
}

/* One image (depth, w x h) through every output kind, from a PNG or a TIFF file. */
static void one_case(const es_params *p, int depth, int w, int h, int B, int tiff_in) {
  char what[160], in[96], f[7][96], ref[7][96];
  static const char *const names[7] = {"m.npy", "f.tif", "heat.tif", "g8.tif", "g16.tif",
                                        "heat.png", "s.csv"};
  static const int fmts[7] = {ES_PIX_NONE, ES_PIX_NONE, ES_PIX_RGB24, ES_PIX_GRAY8,
                              ES_PIX_GRAY16, ES_PIX_RGB24, ES_PIX_NONE};
  const size_t stride = (size_t)w * (depth == 16 ? 2 : 1);
  void *data = malloc(stride * (size_t)h);
  es_context *ctx = NULL;
  pt_result whole[7], got;
  char msg[256];
  const int bins = es_test_range(1, 40);
  memset(whole, 0, sizeof whole);
  memset(&got, 0, sizeof got);
  snprintf(what, sizeof what, "K=%d L=%d depth %d %dx%d B=%d from %s", p->window, p->levels,
           depth, w, h, B, tiff_in ? "TIFF" : "PNG");
  if (!data) goto end;
  pt_fill(data, w, h, stride, depth);
  es_image img = {data, w, h, stride, depth};

  /* The input file. */
  snprintf(in, sizeof in, "%s/in.%s", g_dir, tiff_in ? "tif" : "png");
  const int grey = depth == 16 ? ES_PIX_GRAY16 : ES_PIX_GRAY8;
  int rc;
  if (tiff_in) {
    es_tiff_writer_opts to = {w, h, 1, grey, 16 * es_test_range(1, 3), 0, 0, NULL};
    es_tiff_writer *tw = NULL;
    rc = es_tiff_writer_open(in, 1, &to, &tw, msg, sizeof msg);
    if (rc == ES_OK) rc = es_tiff_writer_write_rows(tw, 0, h, data, stride, msg, sizeof msg);
    if (rc == ES_OK) rc = es_tiff_writer_close(&tw, 1, msg, sizeof msg);
    es_tiff_writer_close(&tw, 0, NULL, 0);
  } else {
    rc = es_png_write(in, 1, w, h, grey, data, stride, msg, sizeof msg);
  }
  CHECK(rc == ES_OK, "%s: input: %s", what, msg);

  /* The references: es_compute on the whole image, written by the same writers. */
  es_config cfg;
  es_config_default(&cfg);
  cfg.params = *p;
  cfg.device = ES_DEVICE_CPU;
  cfg.stats_bins = bins;
  rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  CHECK(rc == ES_OK, "%s: context: %s", what, msg);
  if (rc) goto end;
  es_render r;
  es_render_default(&r);
  r.colormap = es_test_range(0, 4);
  for (int i = 0; i < 7; i++) {
    snprintf(f[i], sizeof f[i], "%s/%s", g_dir, names[i]);
    snprintf(ref[i], sizeof ref[i], "%s/ref-%s", g_dir, names[i]);
    r.format = fmts[i];
    if (pt_result_init(&whole[i], w, h, fmts[i])) goto end;
    rc = es_compute(ctx, &img, whole[i].map, whole[i].map_stride, &whole[i].stats, &r,
                    &whole[i].pix);
    CHECK(rc == ES_OK, "%s: es_compute: %s", what, es_context_error(ctx));
    unlink(f[i]);
  }
  es_npy_write(ref[0], 1, w, h, whole[0].map, whole[0].map_stride, msg, sizeof msg);
  for (int i = 1; i <= 4; i++) {
    es_tiff_writer_opts to = {w, h, 1, fmts[i], 0, 0, 0, NULL};
    es_tiff_writer *tw = NULL;
    rc = es_tiff_writer_open(ref[i], 1, &to, &tw, msg, sizeof msg);
    if (rc == ES_OK)
      rc = fmts[i] == ES_PIX_NONE
               ? es_tiff_writer_write_rows(tw, 0, h, whole[i].map,
                                           whole[i].map_stride * sizeof(float), msg, sizeof msg)
               : es_tiff_writer_write_rows(tw, 0, h, whole[i].pix.plane[0],
                                           whole[i].pix.stride[0], msg, sizeof msg);
    if (rc == ES_OK) rc = es_tiff_writer_close(&tw, 1, msg, sizeof msg);
    es_tiff_writer_close(&tw, 0, NULL, 0);
    CHECK(rc == ES_OK, "%s: reference %s: %s", what, names[i], msg);
  }
  es_png_write(ref[5], 1, w, h, ES_PIX_RGB24, whole[5].pix.plane[0], whole[5].pix.stride[0],
               msg, sizeof msg);
  {
    es_stats_writer *sw = NULL;
    rc = es_stats_writer_open(&sw, ref[6], 1, bins, msg, sizeof msg);
    if (rc == ES_OK)
      rc = es_stats_writer_add(sw, in, 0, NAN, w, h, &whole[6].stats, msg, sizeof msg);
    if (rc == ES_OK) rc = es_stats_writer_close(&sw, 1, msg, sizeof msg);
    CHECK(rc == ES_OK, "%s: reference statistics: %s", what, msg);
  }

  /* Each output kind on its own run (one rendering a run), and the test's sink beside it. */
  for (int i = 0; i < 6; i++) {
    es_bands_run_config c;
    es_bands_summary s;
    notes n = {0, -1};
    mem_sink m = {&got, 0, 0, -1, 0, 0};
    es_band_source_opts so = {0, 0, -1, NULL};
    es_band_sink_opts ko = {fmts[i], 0};
    char w2[200];
    snprintf(w2, sizeof w2, "%s to %s", what, names[i]);
    pt_result_free(&got);
    if (pt_result_init(&got, w, h, fmts[i])) goto end;
    base_config(&c, p, bins, &n);
    c.render = r;
    c.band_rows = B;
    c.want_stats = 1;
    CHECK(es_band_source_for(&c.source, in, &so) == ES_OK, "%s: source", w2);
    CHECK(es_band_sink_for(&c.sinks[c.nsinks++], f[i], &ko) == ES_OK, "%s: sink", w2);
    c.sinks[c.nsinks++] = mem_band_sink(&m, fmts[i]);
    if (i == 0) { /* the statistics file beside the .npy */
      es_sink_opts sto = {0};
      sto.overwrite = 1;
      sto.bins = bins;
      CHECK(es_sink_stats(&c.stats_sinks[c.nstats++], f[6], &sto) == ES_OK, "%s: stats", w2);
    }
    rc = es_run_bands(&c, &s);
    CHECK(rc == ES_OK && s.exit_code == 0 && s.computed && !s.failed,
          "%s: es_run_bands %d (%s: %s)", w2, rc, s.failed ? s.failed : "-", s.msg);
    if (rc != ES_OK) continue;
    CHECK(s.width == w && s.height == h && s.depth == depth && s.band_rows == (B < h ? B : h) &&
              s.nbands == (h + s.band_rows - 1) / s.band_rows,
          "%s: summary %dx%d depth %d, %d bands of %d", w2, s.width, s.height, s.depth, s.nbands,
          s.band_rows);
    same_file(ref[i], f[i], w2);
    if (i == 0) same_file(ref[6], f[6], w2);
    pt_stats_equal(&whole[i].stats, &s.stats, w2);
    if (fmts[i] == ES_PIX_NONE)
      pt_map_equal(whole[i].map, whole[i].map_stride, got.map, got.map_stride, w, h, w2);
    else
      pt_pix_equal(&whole[i].pix, &got.pix, fmts[i], w, h, w2);
    CHECK(m.next_row == h && !m.bad_order && m.closed == 1 && m.committed,
          "%s: the test's sink: rows %d of %d, %d out of order, closed %d", w2, m.next_row, h,
          m.bad_order, m.closed);
  }
end:
  for (int i = 0; i < 7; i++) pt_result_free(&whole[i]);
  pt_result_free(&got);
  es_context_destroy(&ctx);
  free(data);
}

/* The failure rules: nothing under an output's name, the summary says whose. */
static void failures(void) {
  const int w = 41, h = 57;
  uint8_t *data = malloc((size_t)w * h);
  char in[96], out[96], tif[96], csv[96], msg[256];
  es_params p;
  es_params_default(&p);
  p.window = 5;
  pt_result got;
  memset(&got, 0, sizeof got);
  if (!data || pt_result_init(&got, w, h, ES_PIX_NONE)) {
    CHECK(0, "out of memory");
    goto end;
  }
  pt_fill(data, w, h, (size_t)w, 8);
  snprintf(in, sizeof in, "%s/f.png", g_dir);
  snprintf(out, sizeof out, "%s/f.npy", g_dir);
  snprintf(csv, sizeof csv, "%s/f.csv", g_dir);
  snprintf(tif, sizeof tif, "%s/f.tif", g_dir);
  CHECK(es_png_write(in, 1, w, h, ES_PIX_GRAY8, data, (size_t)w, msg, sizeof msg) == ES_OK,
        "input: %s", msg);
  for (int t = 0; t < 5; t++) {
    es_bands_run_config c;
    es_bands_summary s;
    notes n = {0, t == 3 ? 2 : -1};
    mem_sink m = {&got, 0, 0, t == 2 ? 20 : -1, 0, 0};
    es_band_source_opts so = {0, 0, -1, NULL};
    es_band_sink_opts ko = {t == 4 ? ES_PIX_GRAY8 : ES_PIX_NONE, t == 1 ? ES_WRITE_KEEP : 0};
    es_sink_opts sto = {0};
    char missing[96];
    snprintf(missing, sizeof missing, "%s/none.tif", g_dir);
    unlink(out);
    unlink(csv);
    unlink(tif);
    if (t == 1) { /* an existing output, kept (-n): said, nothing computed */
      FILE *fp = fopen(out, "w");
      if (fp) fclose(fp);
    }
    base_config(&c, &p, 16, &n);
    c.band_rows = 7;
    c.render.range_auto = t == 4;
    sto.bins = 16;
    es_band_source_for(&c.source, t == 0 ? missing : in, &so);
    if (t != 1) es_sink_stats(&c.stats_sinks[c.nstats++], csv, &sto);
    es_band_sink_for(&c.sinks[c.nsinks++], t == 4 ? tif : out, &ko);
    if (t != 1) c.sinks[c.nsinks++] = mem_band_sink(&m, ko.pixfmt); /* 1: the output alone */
    const int rc = es_run_bands(&c, &s);
    switch (t) {
    case 0:
      CHECK(rc == ES_ERR_INPUT && s.exit_code == 2 && s.failed && !strcmp(s.failed, missing) &&
                *s.msg && !s.computed,
            "missing input: %d %s: %s", rc, s.failed ? s.failed : "-", s.msg);
      break;
    case 1:
      CHECK(rc == ES_OK && s.exit_code == 0 && n.kept == 1 && !s.computed,
            "kept output: %d, kept %d, computed %d", rc, n.kept, s.computed);
      break;
    case 2:
      CHECK(rc == ES_ERR_OUTPUT && s.exit_code == 3 && s.failed && !strcmp(s.failed, "memory") &&
                strstr(s.msg, "disk full: planted"),
            "writer failing: %d %s: %s", rc, s.failed ? s.failed : "-", s.msg);
      break;
    case 3:
      CHECK(rc == ES_ERR_INTERRUPTED && s.exit_code == 130 && !strcmp(s.failed, in),
            "stop: %d %s", rc, s.msg);
      break;
    case 4:
      CHECK(rc == ES_ERR_USAGE && s.exit_code == 1 && s.param && !strcmp(s.param, "range") &&
                !strncmp(s.msg, "range auto", 10),
            "range auto: %d %s", rc, s.msg);
      break;
    }
    CHECK(m.closed == (t != 1) && !m.committed,
          "case %d: the test's sink closed %d, committed %d", t, m.closed, m.committed);
    if (t != 1)
      CHECK(!exists(out) && !exists(tif) && !exists(csv), "case %d: an output left behind", t);
  }
end:
  unlink(in);
  unlink(out);
  pt_result_free(&got);
  free(data);
}

int main(void) {
  es_test_seed("test_bands_run");
  snprintf(g_dir, sizeof g_dir, "/tmp/es_bands_run_XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  static const int windows[] = {1, 3, 7, 15};
  for (int k = 0; k < 8; k++) {
    es_params p;
    es_params_default(&p);
    p.window = windows[k % 4];
    const int depth = k % 3 == 2 ? 16 : 8;
    p.levels = depth == 16 ? es_test_range(2, 4096) : es_test_range(2, 256);
    p.border = k % 2;
    const int w = es_test_range(1, 90), h = es_test_range(1, 120);
    const int B = 2 * es_test_range(0, 20) + 1; /* odd band rows, 1 .. 41 */
    one_case(&p, depth, w, h, B, k % 2);
  }
  failures();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  return es_test_done("test_bands_run");
}
