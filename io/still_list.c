/*
 * still_list.c - the stills of a directory batch (es_paths.h): the walk (-r, --ext), the
 * names in sorted order, and the output names, moved here from tools/cli_images.c so that
 * the library's still-list source (src_stills.c) and the Python module list a directory as
 * the CLI does; and, by the same walk, a directory's video files (es_video_dir_list: a list
 * of videos, pipeline/run_many.c), moved here from tools/cli_many.c.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "es_io.h"
#include "es_paths.h"
#include "es_stage.h"

/* The extension of a name (after its last dot, not a leading one), or "". */
static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return "";
  return dot + 1;
}

static void say(const es_still_list_opts *o, const char *what, const char *fmt, const char *arg) {
  char line[512];
  if (!o->say) return;
  snprintf(line, sizeof line, fmt, arg);
  o->say(o->say_arg, what, line);
}

static int push(es_still_list *l, char *full, char *relname) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 64;
    es_still_entry *ne = realloc(l->e, nc * sizeof *ne);
    if (!ne) return ES_ERR_NOMEM;
    l->e = ne;
    l->cap = nc;
  }
  memset(&l->e[l->n], 0, sizeof l->e[0]);
  l->e[l->n].path = full;
  l->e[l->n].name = relname;
  l->n++;
  return ES_OK;
}

/* Lists the stills under root/rel: every extension the build reads, any case
 * (es_still_ext_ok); those o->ext leaves out are marked narrowed. The top directory
 * unreadable is an error (msg); a subdirectory unreadable is a failure of the batch, as a
 * file that cannot be read is (SPEC 3: the other files are still done): said here and
 * counted. A name that is not a regular file (links followed) is listed failed, said here:
 * opening a FIFO blocks a reader until a writer comes, which may be never. */
static int collect(es_still_list *l, const char *root, const char *rel,
                   const es_still_list_opts *o, char *msg, size_t len) {
  char *dirpath = *rel ? es_join_path(root, rel) : strdup(root);
  DIR *d = NULL;
  struct dirent *e;
  int rc = ES_OK;
  if (!dirpath) return ES_ERR_NOMEM;
  d = opendir(dirpath);
  if (!d) {
    if (*rel) {
      say(o, dirpath, "cannot read directory: %s", strerror(errno));
      l->unreadable++;
      goto end;
    }
    snprintf(msg, len, "cannot read directory: %s", strerror(errno)); /* named by the caller */
    rc = ES_ERR_INPUT;
    goto end;
  }
  while ((e = readdir(d))) {
    char *relname, *full;
    struct stat st;
    int not_regular;
    if (e->d_name[0] == '.') continue; /* ., .., hidden files and our temporaries */
    relname = *rel ? es_join_path(rel, e->d_name) : strdup(e->d_name);
    full = relname ? es_join_path(root, relname) : NULL;
    if (!relname || !full) {
      free(relname);
      free(full);
      rc = ES_ERR_NOMEM;
      goto end;
    }
    /* Only real directories are descended into: a symlink to a parent would loop. */
    if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
      char real[PATH_MAX];
      int is_out = o->skip_dir && realpath(full, real) && !strcmp(real, o->skip_dir);
      if (o->recursive && !is_out) rc = collect(l, root, relname, o, msg, len);
      free(relname);
      free(full);
      if (rc) goto end;
      continue;
    }
    const int video = o->videos && !es_still_ext_ok(e->d_name, NULL) &&
                      es_path_is_video(e->d_name);
    if (!video && !es_still_ext_ok(e->d_name, NULL)) {
      free(relname);
      free(full);
      continue;
    }
    /* stat, not the lstat above: a symlink to a regular file is taken (a dangling one fails
     * at open, with its reason). A symlink to a directory is skipped as any directory not
     * descended into is, whatever its name. */
    not_regular = stat(full, &st) == 0 && !S_ISREG(st.st_mode);
    if (not_regular && (S_ISDIR(st.st_mode) || !es_still_ext_ok(e->d_name, o->ext))) {
      free(relname);
      free(full);
      continue;
    }
    if (not_regular) say(o, full, "%s", "not a regular file");
    if (push(l, full, relname) != ES_OK) {
      free(relname);
      free(full);
      rc = ES_ERR_NOMEM;
      goto end;
    }
    if (not_regular) l->e[l->n - 1].failed = ES_ERR_INPUT;
    l->e[l->n - 1].video = video;
    l->e[l->n - 1].narrowed = !video && !es_still_ext_ok(e->d_name, o->ext);
  }
end:
  if (d) closedir(d);
  free(dirpath);
  return rc;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(((const es_still_entry *)a)->name, ((const es_still_entry *)b)->name);
}

/* The length of a name without its extension ("a/b.jpg": 3). */
static size_t stem_len(const char *name) {
  const char *e = ext_of(name);
  return *e ? (size_t)(e - 1 - name) : strlen(name);
}

static int stem_cmp(const void *a, const void *b) {
  const es_still_entry *x = *(es_still_entry *const *)a, *y = *(es_still_entry *const *)b;
  const size_t kx = stem_len(x->name), ky = stem_len(y->name);
  int c = strncmp(x->name, y->name, kx < ky ? kx : ky);
  return c ? c : (kx > ky) - (kx < ky);
}

/* Inputs of one directory that share a stem (a.png and a.jpg, a.jpg and a.tif): each one that
 * is not a PNG keeps its extension in its output name (a.png -> a.png, a.jpg -> a.jpg.png), so
 * that every picture gets its own map and a PNG's output name never depends on the other
 * files. Other inputs take .png in place of their extension (a.jpg -> a.png). */
static int mark_shared_stems(es_still_entry *e, size_t n) {
  es_still_entry **by = malloc(n * sizeof *by);
  size_t m = 0;
  if (!by) return ES_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    if (!e[i].video) by[m++] = &e[i]; /* a video's output is named otherwise */
  n = m;
  qsort(by, n, sizeof *by, stem_cmp);
  for (size_t i = 0, k; i < n; i = k) {
    for (k = i + 1; k < n && !stem_cmp(&by[i], &by[k]);) k++;
    if (k - i > 1)
      for (size_t m = i; m < k; m++) by[m]->keep_ext = 1; /* es_still_out_name keeps a PNG's */
  }
  free(by);
  return ES_OK;
}

int es_still_list_dir(es_still_list *l, const char *root, const es_still_list_opts *o, char *msg,
                      size_t len) {
  size_t kept = 0;
  int rc;
  memset(l, 0, sizeof *l);
  rc = collect(l, root, "", o, msg, len);
  if (rc != ES_OK) goto fail;
  if (l->n) qsort(l->e, l->n, sizeof *l->e, name_cmp); /* l->e is NULL when n is 0 */
  /* The names of the files --ext leaves out take part (they keep the others' output names
   * independent of --ext), then those files go. */
  if (l->n && (rc = mark_shared_stems(l->e, l->n)) != ES_OK) goto fail;
  for (size_t i = 0; i < l->n; i++) {
    if (l->e[i].narrowed) {
      free(l->e[i].path);
      free(l->e[i].name);
      continue;
    }
    l->e[kept++] = l->e[i];
  }
  l->n = kept;
  return ES_OK;
fail:
  es_still_list_free(l);
  return rc;
}

void es_still_list_free(es_still_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->e[i].path);
    free(l->e[i].name);
    free(l->e[i].out);
  }
  free(l->e);
  memset(l, 0, sizeof *l);
}

char *es_still_out_name(const char *rel, int keep_ext, int f32) {
  const int is_png = !strcasecmp(ext_of(rel), "png");
  const size_t k = keep_ext && !is_png ? strlen(rel) : stem_len(rel);
  char *r;
  if (is_png && !f32) return strdup(rel);
  r = malloc(k + 5);
  if (!r) return NULL;
  memcpy(r, rel, k);
  memcpy(r + k, f32 ? ".npy" : ".png", 5);
  return r;
}

int es_video_dir_list(const char *dir, char ***paths, size_t *n) {
  es_still_list l;
  es_still_list_opts lo;
  char msg[256];
  char **v;
  size_t k = 0;
  int rc, still = 0;
  *paths = NULL;
  *n = 0;
  memset(&lo, 0, sizeof lo);
  lo.videos = 1;
  rc = es_still_list_dir(&l, dir, &lo, msg, sizeof msg);
  if (rc != ES_OK) return rc == ES_ERR_NOMEM ? rc : 0; /* unreadable: the batch says why */
  if (!(v = malloc((l.n ? l.n : 1) * sizeof *v))) {
    es_still_list_free(&l);
    return ES_ERR_NOMEM;
  }
  /* Regular files only (links followed): a FIFO or a dangling link named a.png makes no
   * batch of stills, nor is one named a.mp4 a video to open. */
  for (size_t i = 0; i < l.n && !still; i++) {
    struct stat st;
    if (stat(l.e[i].path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (!l.e[i].video) still = 1; /* a batch of stills, its videos left out */
    else v[k++] = l.e[i].path, l.e[i].path = NULL;
  }
  es_still_list_free(&l);
  if (still || !k) {
    es_video_dir_free(&v, k);
    return 0;
  }
  *paths = v;
  *n = k;
  return 1;
}

void es_video_dir_free(char ***paths, size_t n) {
  if (!*paths) return;
  for (size_t i = 0; i < n; i++) free((*paths)[i]);
  free(*paths);
  *paths = NULL;
}

/* ---- A batch's outputs, checked before its run. */

/* An output by name, then in the list's order. */
typedef struct out_at {
  const char *out;
  size_t i;
} out_at;
static int out_at_cmp(const void *a, const void *b) {
  const out_at *x = a, *y = b;
  int c = strcmp(x->out, y->out);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

int es_still_out_clashes(const char *const *ins, const char *const *outs, size_t n, int *failed,
                         es_still_say_fn say, void *arg) {
  out_at *by = malloc((n ? n : 1) * sizeof *by);
  size_t m = 0;
  char msg[PATH_MAX + 64];
  if (!by) return ES_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    if (outs[i]) by[m].out = outs[i], by[m++].i = i;
  qsort(by, m, sizeof *by, out_at_cmp);
  for (size_t k = 0, owner = SIZE_MAX; k < m; k++) {
    const size_t i = by[k].i;
    if (owner != SIZE_MAX && strcmp(outs[i], outs[owner])) owner = SIZE_MAX;
    if (failed[i]) continue;
    if (owner == SIZE_MAX) {
      owner = i;
      continue;
    }
    snprintf(msg, sizeof msg, "also the output of %s (rename one of them)", ins[owner]);
    if (say) say(arg, outs[i], msg);
    failed[i] = ES_ERR_OUTPUT;
  }
  free(by);
  return ES_OK;
}

void es_still_make_out_dirs(char *const *outs, size_t n, int *failed, es_still_say_fn say,
                            void *arg) {
  /* Sorted names do not keep a directory's files together ("a/b/x.png" < "a/c.png" <
   * "a/d/y.png"): the directories that failed are remembered, each said once. */
  typedef struct {
    const char *path; /* into an output's name */
    size_t len;
  } bad_dir;
  bad_dir *bad = NULL;
  size_t nbad = 0;
  char msg[512];
  for (size_t i = 0; i < n; i++) {
    char *slash = outs[i] ? strrchr(outs[i], '/') : NULL;
    size_t dlen, at = 0;
    int under = 0;
    if (!slash || slash == outs[i] || failed[i]) continue;
    dlen = (size_t)(slash - outs[i]);
    for (size_t k = 0; k < nbad && !under; k++)
      under = dlen >= bad[k].len && !strncmp(outs[i], bad[k].path, bad[k].len) &&
              (dlen == bad[k].len || outs[i][bad[k].len] == '/');
    if (under) {
      failed[i] = ES_ERR_OUTPUT;
      continue;
    }
    *slash = 0;
    if (es_make_dirs(outs[i], &at, NULL, msg, sizeof msg) != ES_OK) {
      char save = outs[i][at];
      bad_dir *nb = realloc(bad, (nbad + 1) * sizeof *bad);
      outs[i][at] = 0;
      if (say) say(arg, outs[i], msg);
      outs[i][at] = save;
      failed[i] = ES_ERR_OUTPUT;
      if (nb) {
        bad = nb;
        bad[nbad].path = outs[i];
        bad[nbad++].len = at;
      }
    }
    *slash = '/';
  }
  free(bad);
}

/* A file by its identity, and the input it is. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  size_t at;
} file_id;
struct es_still_ids {
  file_id *id;
  size_t n;
};

static int file_id_cmp(const void *a, const void *b) {
  const file_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return (x->ino > y->ino) - (x->ino < y->ino);
}

int es_still_ids_make(es_still_ids **out, const char *const *ins, size_t n) {
  es_still_ids *ids = calloc(1, sizeof *ids);
  struct stat st;
  *out = NULL;
  if (!ids || !(ids->id = malloc((n ? n : 1) * sizeof *ids->id))) {
    free(ids);
    return ES_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    if (stat(ins[i], &st) != 0) continue;
    ids->id[ids->n].dev = st.st_dev;
    ids->id[ids->n].ino = st.st_ino;
    ids->id[ids->n++].at = i;
  }
  if (ids->n) qsort(ids->id, ids->n, sizeof *ids->id, file_id_cmp);
  *out = ids;
  return ES_OK;
}

int64_t es_still_ids_find(const es_still_ids *ids, const char *path) {
  struct stat st;
  file_id key;
  const file_id *hit;
  if (path ? stat(path, &st) != 0 : fstat(1, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  key.dev = st.st_dev;
  key.ino = st.st_ino;
  key.at = 0;
  hit = ids->n ? bsearch(&key, ids->id, ids->n, sizeof *ids->id, file_id_cmp) : NULL;
  return hit ? (int64_t)hit->at : -1;
}

void es_still_ids_free(es_still_ids **ids) {
  if (!*ids) return;
  free((*ids)->id);
  free(*ids);
  *ids = NULL;
}

/* ---- A batch of stills: its items' inputs, names, outputs and failures. */

static int batch_alloc(es_still_batch *b, size_t n, int outs) {
  const size_t m = n ? n : 1;
  memset(b, 0, sizeof *b);
  b->ins = calloc(m, sizeof *b->ins);
  b->names = calloc(m, sizeof *b->names);
  b->outs = outs ? calloc(m, sizeof *b->outs) : NULL;
  b->failed = calloc(m, sizeof *b->failed);
  b->index = calloc(m, sizeof *b->index);
  if (!b->ins || !b->names || (outs && !b->outs) || !b->failed || !b->index) return ES_ERR_NOMEM;
  b->n = n;
  for (size_t i = 0; i < n; i++) b->index[i] = (int64_t)i;
  return ES_OK;
}

int es_still_batch_dir(es_still_batch *b, const char *root, const es_still_list_opts *lo,
                       const char *out_dir, int f32, char *msg, size_t len) {
  es_still_list l;
  int rc = es_still_list_dir(&l, root, lo, msg, len);
  memset(b, 0, sizeof *b);
  if (rc != ES_OK) return rc;
  if ((rc = batch_alloc(b, l.n, out_dir != NULL)) != ES_OK) goto end;
  b->unreadable = l.unreadable;
  for (size_t i = 0; i < l.n; i++) { /* the strings move to the batch */
    b->ins[i] = l.e[i].path;
    b->names[i] = l.e[i].name;
    b->failed[i] = l.e[i].failed;
    l.e[i].path = l.e[i].name = NULL;
    if (!out_dir) continue;
    char *rel = es_still_out_name(b->names[i], l.e[i].keep_ext, f32);
    b->outs[i] = rel ? es_join_path(out_dir, rel) : NULL;
    free(rel);
    if (!b->outs[i]) {
      rc = ES_ERR_NOMEM;
      goto end;
    }
  }
  if (out_dir)
    rc = es_still_out_clashes((const char *const *)b->ins, (const char *const *)b->outs, b->n,
                              b->failed, lo ? lo->say : NULL, lo ? lo->say_arg : NULL);
end:
  es_still_list_free(&l);
  return rc;
}

int es_still_batch_one(es_still_batch *b, const char *path, const char *out) {
  if (batch_alloc(b, 1, out != NULL) != ES_OK) return ES_ERR_NOMEM;
  b->ins[0] = strdup(path);
  b->names[0] = strdup(path);
  if (out) b->outs[0] = strdup(out);
  return b->ins[0] && b->names[0] && (!out || b->outs[0]) ? ES_OK : ES_ERR_NOMEM;
}

void es_still_batch_keep(es_still_batch *b, const unsigned char *keep) {
  size_t k = 0;
  for (size_t i = 0; i < b->n; i++) {
    if (!keep[i]) {
      free(b->ins[i]), free(b->names[i]), free(b->outs ? b->outs[i] : NULL);
      continue;
    }
    b->ins[k] = b->ins[i], b->names[k] = b->names[i], b->failed[k] = b->failed[i];
    if (b->outs) b->outs[k] = b->outs[i];
    b->index[k++] = b->index[i];
  }
  b->n = k;
}

void es_still_batch_free(es_still_batch *b) {
  for (size_t i = 0; i < b->n; i++) {
    if (b->ins) free(b->ins[i]);
    if (b->names) free(b->names[i]);
    if (b->outs) free(b->outs[i]);
  }
  free(b->ins), free(b->names), free(b->outs), free(b->failed), free(b->index);
  memset(b, 0, sizeof *b);
}

int64_t es_still_batch_clobbers(const es_still_batch *b, int outs_files, const char *stats,
                                const char **bad) {
  es_still_ids *ids = NULL;
  int64_t hit = -1;
  *bad = NULL;
  if (es_still_ids_make(&ids, (const char *const *)b->ins, b->n) != ES_OK) return -2;
  for (size_t i = 0; i < b->n && b->outs && outs_files && hit < 0; i++)
    if ((hit = es_still_ids_find(ids, b->outs[i])) >= 0) *bad = b->outs[i];
  if (hit < 0 && stats && (hit = es_still_ids_find(ids, strcmp(stats, "-") ? stats : NULL)) >= 0)
    *bad = stats;
  es_still_ids_free(&ids);
  return hit;
}
