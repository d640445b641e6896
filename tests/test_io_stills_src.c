/*
 * test_io_stills_src.c - the still list of a directory (es_still_list_dir: sorted names, a
 * FIFO listed failed and said, --ext narrowing the list while the names it leaves out still
 * share stems, es_still_out_name) and the still-list source (es_source_stills): its
 * sequential read (items in order, each lent at its own size and depth, named) and its
 * read_item from four threads at once in opposite orders, every item's samples equal to
 * es_still_read_to's of the file, an undecodable file and a FIFO failing only their own
 * item. A batch's outputs checked before its run: es_still_out_clashes (the first of two
 * inputs sharing an output keeps it, the other fails, said once; one failed already is
 * passed over), es_still_make_out_dirs (a directory that cannot be made fails the outputs
 * under it, said once) and es_still_ids_* (an output that is an input, links followed);
 * es_still_batch_dir (the list as a batch, outputs named), es_still_batch_keep (a share,
 * keeping the whole listing's indices), es_still_batch_one and es_still_batch_clobbers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "es_io.h"
#include "es_paths.h"
#include "es_stage.h"
#include "es_test.h"
#include "es_test_png.h"

enum { NF = 7 };
/* The files in name order: 0 a.jpg (no JPEG here: garbage, undecodable), 1 a.png, 2 b16.png,
 * 3 c.png, 4 d/e.png (recursive only), 5 f.png (a FIFO), 6 g.png (8 bit, wide). */
static char g_dir[64];
static int g_said;
static char g_last[400];
static void say(void *arg, const char *what, const char *msg) {
  (void)arg;
  g_said++;
  snprintf(g_last, sizeof g_last, "%s: %s", what, msg);
}

/* 1 when rows of (data, stride) equal the file's as es_still_read_to reads it. */
static int same_as_file(const char *path, const void *data, size_t stride, int w, int h,
                        int depth) {
  es_test_buf ref = {0};
  es_image img;
  char msg[256];
  int ok = es_still_read_to(path, 0, es_test_to_buf, &ref, &img, msg, sizeof msg) == ES_OK &&
           ref.w == w && ref.h == h && ref.depth == depth;
  for (int y = 0; ok && y < h; y++)
    ok = !memcmp((const uint8_t *)data + y * stride, (uint8_t *)ref.data + y * ref.stride,
                 (size_t)w * (depth / 8));
  free(ref.data);
  return ok;
}

static int g_said, g_said_fifo;
static void said(void *arg, const char *what, const char *msg) {
  (void)arg;
  g_said++;
  if (strstr(what, "f.png") && !strcmp(msg, "not a regular file")) g_said_fifo++;
}

typedef struct worker {
  es_source *s;
  int64_t n;
  int reverse;
  int ok, failed_bad, failed_fifo;
  const es_still_list *l;
} worker;

static void *read_all(void *arg) {
  worker *wk = arg;
  wk->ok = 1;
  for (int64_t k = 0; k < wk->n; k++) {
    const int64_t i = wk->reverse ? wk->n - 1 - k : k;
    es_test_buf b = {0};
    es_source_frame fr;
    char msg[256] = "";
    memset(&fr, 0, sizeof fr);
    int rc = wk->s->read_item(wk->s, i, es_test_to_buf, &b, &fr, msg, sizeof msg);
    const char *name = wk->l->e[i].name;
    if (!fr.name || strcmp(fr.name, name) || !fr.what || strcmp(fr.what, wk->l->e[i].path)) wk->ok = 0;
    if (!strcmp(name, "a.jpg")) {
      wk->failed_bad += rc == ES_ERR_INPUT && *msg;
    } else if (!strcmp(name, "f.png")) {
      wk->failed_fifo += rc == ES_ERR_INPUT && !strcmp(msg, "not a regular file");
    } else if (rc != ES_OK || fr.width != b.w || fr.height != b.h || fr.depth != b.depth ||
               !same_as_file(wk->l->e[i].path, b.data, b.stride, b.w, b.h, b.depth)) {
      fprintf(stderr, "item %lld (%s): %d %s\n", (long long)i, name, rc, msg);
      wk->ok = 0;
    }
    free(b.data);
  }
  return NULL;
}

int main(void) {
  char path[128], msg[256] = "";
  snprintf(g_dir, sizeof g_dir, "/tmp/test_io_stills_src-XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  snprintf(path, sizeof path, "%s/d", g_dir);
  mkdir(path, 0777);
  CHECK(es_test_write_png(g_dir, "a.png", 31, 17, 8, 1) == ES_OK, "a.png");
  CHECK(es_test_write_png(g_dir, "b16.png", 20, 9, 16, 2) == ES_OK, "b16.png");
  CHECK(es_test_write_png(g_dir, "c.png", 5, 40, 8, 3) == ES_OK, "c.png");
  CHECK(es_test_write_png(g_dir, "d/e.png", 12, 12, 8, 4) == ES_OK, "d/e.png");
  CHECK(es_test_write_png(g_dir, "g.png", 257, 3, 8, 5) == ES_OK, "g.png");
  snprintf(path, sizeof path, "%s/a.jpg", g_dir);
  FILE *fp = fopen(path, "wb");
  if (fp) {
    fputs("\xff\xd8\xff garbage, not a JPEG", fp);
    fclose(fp);
  }
  snprintf(path, sizeof path, "%s/f.png", g_dir);
  CHECK(mkfifo(path, 0666) == 0, "mkfifo");
  snprintf(path, sizeof path, "%s/.hidden.png", g_dir);
  fp = fopen(path, "wb");
  if (fp) fclose(fp);

  /* The list: sorted, recursive, the FIFO failed and said once; a.png and a.jpg share a
   * stem, so a.jpg's output keeps its extension and a.png's stays a.png. */
  es_still_list l;
  es_still_list_opts lo = {1, NULL, NULL, said, NULL};
  CHECK(es_still_list_dir(&l, g_dir, &lo, msg, sizeof msg) == ES_OK, "list: %s", msg);
  const char *want[NF] = {"a.jpg", "a.png", "b16.png", "c.png", "d/e.png", "f.png", "g.png"};
  CHECK(l.n == NF, "%zu listed", l.n);
  for (size_t i = 0; i < l.n && i < NF; i++) CHECK(!strcmp(l.e[i].name, want[i]), "%zu: %s", i, l.e[i].name);
  CHECK(g_said == 1 && g_said_fifo == 1, "said %d, the FIFO %d", g_said, g_said_fifo);
  CHECK(l.n == NF && l.e[5].failed == ES_ERR_INPUT && !l.e[1].failed, "failed flags");
  CHECK(l.n == NF && l.e[0].keep_ext && l.e[1].keep_ext && !l.e[3].keep_ext, "keep_ext");
  {
    char *o1 = es_still_out_name("a.jpg", 1, 0), *o2 = es_still_out_name("a.png", 1, 0);
    char *o3 = es_still_out_name("d/x.jpg", 0, 0), *o4 = es_still_out_name("a.png", 0, 1);
    CHECK(o1 && !strcmp(o1, "a.jpg.png") && o2 && !strcmp(o2, "a.png") && o3 &&
              !strcmp(o3, "d/x.png") && o4 && !strcmp(o4, "a.npy"),
          "out names %s %s %s %s", o1, o2, o3, o4);
    free(o1), free(o2), free(o3), free(o4);
  }
  /* --ext png, not recursive: a.jpg is gone, a.png still keeps the shared stem's mark. */
  {
    es_still_list l2;
    es_still_list_opts lo2 = {0, "png", NULL, NULL, NULL};
    CHECK(es_still_list_dir(&l2, g_dir, &lo2, msg, sizeof msg) == ES_OK, "list 2");
    CHECK(l2.n == 5 && !strcmp(l2.e[0].name, "a.png") && l2.e[0].keep_ext, "--ext: %zu", l2.n);
    es_still_list_free(&l2);
    snprintf(path, sizeof path, "%s/none", g_dir);
    CHECK(es_still_list_dir(&l2, path, &lo2, msg, sizeof msg) == ES_ERR_INPUT &&
              strstr(msg, "cannot read directory"),
          "a missing directory: %s", msg);
  }

  const char *paths[NF], *names[NF];
  for (size_t i = 0; i < NF && i < l.n; i++) paths[i] = l.e[i].path, names[i] = l.e[i].name;
  es_source s;
  es_source_info info;
  es_stills_source_opts so = {0, 0, 0, g_dir};
  CHECK(es_source_stills(&s, paths, names, l.n, &so) == ES_OK, "source");
  CHECK(s.count == (int64_t)l.n && s.read_item && s.read, "count %lld", (long long)s.count);
  CHECK(s.open(&s, NULL, &info, msg, sizeof msg) == ES_OK && info.frames == (int64_t)l.n,
        "open");

  /* Four threads at once, two in each order: every item read by each. */
  worker wk[4];
  pthread_t th[4];
  for (int t = 0; t < 4; t++) {
    wk[t] = (worker){&s, s.count, t & 1, 0, 0, 0, &l};
    pthread_create(&th[t], NULL, read_all, &wk[t]);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
    CHECK(wk[t].ok && wk[t].failed_bad == 1 && wk[t].failed_fifo == 1, "thread %d: %d %d %d", t,
          wk[t].ok, wk[t].failed_bad, wk[t].failed_fifo);
  }

  /* The sequential read: items in order, lent; the undecodable first ends it. */
  es_source_frame fr;
  memset(&fr, 0, sizeof fr);
  CHECK(s.read(&s, NULL, 0, &fr, msg, sizeof msg) == ES_ERR_INPUT && fr.name &&
            !strcmp(fr.name, "a.jpg"),
        "a.jpg read: %s", msg);
  s.close(&s);
  /* Without the bad ones: every item in order, to the end. */
  {
    const char *p2[4] = {paths[1], paths[2], paths[3], paths[6]};
    const char *n2[4] = {names[1], names[2], names[3], names[6]};
    int got = 0;
    CHECK(es_source_stills(&s, p2, n2, 4, NULL) == ES_OK, "source 2");
    CHECK(s.open(&s, NULL, &info, msg, sizeof msg) == ES_OK, "open 2");
    for (;;) {
      memset(&fr, 0, sizeof fr);
      int rc = s.read(&s, NULL, 0, &fr, msg, sizeof msg);
      if (rc == ES_ERR_EOF) break;
      CHECK(rc == ES_OK && fr.lend_ref && got < 4 && !strcmp(fr.name, n2[got]) &&
                same_as_file(p2[got], fr.lend, fr.lend_stride, fr.width, fr.height, fr.depth),
            "read %d: %d %s", got, rc, msg);
      if (fr.lend_ref) s.unlend(fr.lend_ref);
      if (rc != ES_OK || ++got > 4) break;
    }
    CHECK(got == 4, "%d items read", got);
    s.close(&s);
  }
  /* Clashes: m.PNG and m.png both make m.npy; x failed already, so y keeps x.npy. */
  {
    const char *ins[5] = {"m.PNG", "m.png", "q.png", "x.png", "x.jpg"};
    const char *outs[5] = {"o/m.npy", "o/m.npy", "o/q.npy", "o/x.npy", "o/x.npy"};
    int failed[5] = {0, 0, 0, ES_ERR_INPUT, 0};
    g_said = 0;
    g_last[0] = 0;
    CHECK(es_still_out_clashes(ins, outs, 5, failed, say, NULL) == ES_OK, "clashes");
    CHECK(failed[0] == 0 && failed[1] == ES_ERR_OUTPUT && failed[2] == 0 &&
              failed[3] == ES_ERR_INPUT && failed[4] == 0 && g_said == 1 &&
              !strcmp(g_last, "o/m.npy: also the output of m.PNG (rename one of them)"),
          "clashes: %d %d %d %d %d, said %d: %s", failed[0], failed[1], failed[2], failed[3],
          failed[4], g_said, g_last);
  }
  /* Output directories: o/a/x and o/a/y made; "o/f" is a file, so o/f/1.png and o/f/g/2.png
   * fail, the directory said once. */
  {
    char o1[160], o2[160], o3[160], o4[160], blk[160];
    char *outs[4] = {o1, o2, o3, o4};
    int failed[4] = {0};
    struct stat st;
    snprintf(o1, sizeof o1, "%s/o/a/x/1.png", g_dir);
    snprintf(o2, sizeof o2, "%s/o/f/1.png", g_dir);
    snprintf(o3, sizeof o3, "%s/o/a/y/2.png", g_dir);
    snprintf(o4, sizeof o4, "%s/o/f/g/2.png", g_dir);
    snprintf(blk, sizeof blk, "%s/o", g_dir);
    mkdir(blk, 0777);
    snprintf(blk, sizeof blk, "%s/o/f", g_dir);
    FILE *fp = fopen(blk, "w");
    if (fp) fclose(fp);
    g_said = 0;
    es_still_make_out_dirs(outs, 4, failed, say, NULL);
    snprintf(blk, sizeof blk, "%s/o/a/x", g_dir);
    CHECK(stat(blk, &st) == 0 && S_ISDIR(st.st_mode), "o/a/x not made");
    snprintf(blk, sizeof blk, "%s/o/a/y", g_dir);
    CHECK(stat(blk, &st) == 0 && S_ISDIR(st.st_mode), "o/a/y not made");
    CHECK(!failed[0] && failed[1] == ES_ERR_OUTPUT && !failed[2] && failed[3] == ES_ERR_OUTPUT &&
              g_said == 1 && strstr(g_last, "/o/f: "),
          "dirs: %d %d %d %d, said %d: %s", failed[0], failed[1], failed[2], failed[3], g_said,
          g_last);
    CHECK(!strcmp(o2 + strlen(g_dir), "/o/f/1.png"), "an output name changed: %s", o2);
  }
  /* An output that is an input: by identity, through a link. */
  {
    const char *ins[2] = {paths[1], paths[2]};
    char link_path[160];
    es_still_ids *ids = NULL;
    snprintf(link_path, sizeof link_path, "%s/o/link.png", g_dir);
    CHECK(symlink(paths[2], link_path) == 0, "symlink");
    CHECK(es_still_ids_make(&ids, ins, 2) == ES_OK && ids, "ids");
    CHECK(es_still_ids_find(ids, paths[1]) == 0 && es_still_ids_find(ids, link_path) == 1,
          "an input not found");
    snprintf(link_path, sizeof link_path, "%s/o/none.png", g_dir);
    CHECK(es_still_ids_find(ids, link_path) == -1 && es_still_ids_find(ids, paths[3]) == -1,
          "a file not an input found");
    es_still_ids_free(&ids);
    CHECK(!ids, "ids not cleared");
  }
  /* The directory as a batch: the list's items with outputs under o2/ (f32: .npy), then a
   * share of it keeping the whole listing's indices. */
  {
    es_still_batch b;
    es_still_list l2;
    es_still_list_opts lo2 = {0, NULL, NULL, NULL, NULL};
    unsigned char keep[NF] = {0};
    char want[200];
    CHECK(es_still_list_dir(&l2, g_dir, &lo2, msg, sizeof msg) == ES_OK && l2.n > 2 && l2.n <= NF,
          "list 2: %zu", l2.n);
    int rc = es_still_batch_dir(&b, g_dir, &lo2, "o2", 1, msg, sizeof msg);
    CHECK(rc == ES_OK && b.n == l2.n && b.outs, "batch: %d %s, %zu items", rc, msg, b.n);
    for (size_t i = 0; rc == ES_OK && i < b.n && i < l2.n; i++) {
      char *rel = es_still_out_name(l2.e[i].name, l2.e[i].keep_ext, 1);
      snprintf(want, sizeof want, "o2/%s", rel ? rel : "");
      free(rel);
      CHECK(!strcmp(b.ins[i], l2.e[i].path) && !strcmp(b.names[i], l2.e[i].name) &&
                !strcmp(b.outs[i], want) && b.failed[i] == l2.e[i].failed &&
                b.index[i] == (int64_t)i,
            "batch item %zu: %s %s %s %d", i, b.ins[i], b.names[i], b.outs[i], b.failed[i]);
    }
    for (size_t i = 1; i < b.n && i < NF; i += 2) keep[i] = 1;
    const size_t n0 = b.n;
    es_still_batch_keep(&b, keep);
    CHECK(b.n == n0 / 2, "share: %zu of %zu", b.n, n0);
    for (size_t k = 0; k < b.n; k++)
      CHECK(b.index[k] == (int64_t)(2 * k + 1) && !strcmp(b.names[k], l2.e[2 * k + 1].name),
            "share item %zu: index %lld %s", k, (long long)b.index[k], b.names[k]);
    es_still_batch_free(&b);
    es_still_list_free(&l2);
    CHECK(es_still_batch_one(&b, "x/a.tif", "-") == ES_OK && b.n == 1 &&
              !strcmp(b.names[0], "x/a.tif") && !strcmp(b.outs[0], "-") && !b.failed[0],
          "one");
    es_still_batch_free(&b);
    /* An output onto its own input, a statistics file onto one: found; "-" outputs not. */
    const char *bad = NULL;
    CHECK(es_still_batch_one(&b, paths[1], paths[1]) == ES_OK &&
              es_still_batch_clobbers(&b, 1, NULL, &bad) == 0 && bad == b.outs[0] &&
              es_still_batch_clobbers(&b, 0, NULL, &bad) == -1 &&
              es_still_batch_clobbers(&b, 0, paths[1], &bad) == 0 && bad && !strcmp(bad, paths[1]),
          "clobbers");
    es_still_batch_free(&b);
    CHECK(es_still_batch_one(&b, "a.png", NULL) == ES_OK && b.n == 1 && !b.outs, "one, no output");
    es_still_batch_free(&b);
  }
  es_still_list_free(&l);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
  printf("test_io_stills_src: %d failure(s)\n", es_test_failures);
  return es_test_failures ? 1 : 0;
}
