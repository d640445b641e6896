/*
 * es_paths.h - output directories and names (io/paths.c): directories made as mkdir -p does
 * and removed again where a run left them empty, joins, and whether a name is the input.
 */
#ifndef ES_PATHS_H
#define ES_PATHS_H

#include <stddef.h>
#include <stdint.h>

/* mkdir -p; ES_OK or ES_ERR_OUTPUT with the reason in msg. On failure *bad (if not NULL) is
 * the length of the leading part of path that could not be made (what the message is
 * about), and *why its errno (ENOTDIR: something else is in the way). */
int es_make_dirs(const char *path, size_t *bad, int *why, char *msg, size_t len);
/* The length of the shortest leading part of path (whole components) that does not exist:
 * what es_make_dirs(path) will create starts there. 0 when all of it exists (or cannot be
 * looked at: then es_make_dirs creates nothing either). */
size_t es_first_missing(const char *path);
/* Removes the directories of path down to its leading part of length `from` (those that
 * es_first_missing said a run would make), deepest first, stopping at the first that is not
 * empty: what a run that wrote nothing into them had created. */
void es_remove_made_dirs(const char *path, size_t from);
/* "a/b" (malloc'd; NULL when out of memory). */
char *es_join_path(const char *a, const char *b);
/* 1 when `out` exists and is the file `in` (same device and inode, links followed): writing
 * it would replace the input. `in` "-" is what standard input is (`- < x.y4m`: that file). */
int es_same_file(const char *in, const char *out);


/* ---- The stills of a directory batch (still_list.c). */
typedef struct es_still_entry {
  char *path;   /* root/name (owned) */
  char *name;   /* relative to the root: the batch's name for it (owned) */
  char *out;    /* the caller's output path (owned, freed with the list; NULL) */
  int failed;   /* not a regular file (said): ES_ERR_INPUT, never to be opened */
  int keep_ext; /* shares its stem with another input: its output keeps its extension */
  int narrowed; /* (internal: left out by ext) */
  int video;    /* a video file, not a still (es_still_list_opts.videos) */
} es_still_entry;
typedef struct es_still_list {
  es_still_entry *e; /* sorted by name (strcmp) */
  size_t n, cap;
  size_t unreadable; /* subdirectories that could not be read (each said) */
} es_still_list;
typedef struct es_still_list_opts {
  int recursive;        /* descend into subdirectories (real ones, not links) */
  const char *ext;      /* comma-separated extensions to take (NULL: every one the build
                         * reads); the others still share stems (keep_ext) */
  const char *skip_dir; /* a directory not descended into (the output's realpath), or NULL */
  /* A failure of one file or subdirectory ("PATH", "not a regular file"); may be NULL. */
  void (*say)(void *arg, const char *what, const char *msg);
  void *say_arg;
  /* List the video files too (es_path_is_video, where not a still), marked video: they take
   * no part in keep_ext, and ext does not leave them out (es_video_dir_list's walk). */
  int videos;
} es_still_list_opts;
/* Lists the stills under root (every name es_still_ext_ok takes, hidden names skipped),
 * sorted by name. ES_OK, ES_ERR_NOMEM, or ES_ERR_INPUT where root cannot be read (msg
 * without the name). Free with es_still_list_free. */
int es_still_list_dir(es_still_list *l, const char *root, const es_still_list_opts *o, char *msg,
                      size_t len);
void es_still_list_free(es_still_list *l);
/* The output name of an input named rel in a batch (malloc'd, NULL: out of memory): a PNG
 * keeps its name (a.png -> a.png), any other format takes .png in place of its extension
 * (a.jpg -> a.png, as a converter would name it), or, where keep_ext, after it (a.jpg ->
 * a.jpg.png); float maps (f32) take .npy the same way (a.png -> a.npy). */
char *es_still_out_name(const char *rel, int keep_ext, int f32);

/* What a batch checks of its outputs before its run (the CLI's directory and still runs).
 * say: each failure, as es_still_list_opts.say ("OUT", "reason"); may be NULL. */
typedef void (*es_still_say_fn)(void *arg, const char *what, const char *msg);
/* Outputs two inputs share (m.PNG and m.png both make m.npy: both written at once, one map
 * lost): the first in the list's order of those not failed keeps it, each other fails
 * (failed[i] = ES_ERR_OUTPUT, "OUT: also the output of IN (rename one of them)"). outs[i]
 * NULL: none. ES_OK or ES_ERR_NOMEM. */
int es_still_out_clashes(const char *const *ins, const char *const *outs, size_t n, int *failed,
                         es_still_say_fn say, void *arg);
/* Makes the directory of each output not failed (a recursive batch's subdirectories; the
 * name's own part before its last '/'). One that cannot be made fails the outputs under it
 * (failed[i] = ES_ERR_OUTPUT), named once whatever the files under it ("DIR: reason"). */
void es_still_make_out_dirs(char *const *outs, size_t n, int *failed, es_still_say_fn say,
                            void *arg);
/* A batch of stills: item i reads ins[i], is named names[i] (the statistics' name), writes
 * outs[i] (outs NULL: no outputs), failed[i] before any run (an es_status, said: 0 none),
 * index[i] its index in the whole listing. */
typedef struct es_still_batch {
  size_t n;
  char **ins, **names, **outs;
  int *failed;
  int64_t *index;
  size_t unreadable; /* subdirectories that could not be read (each said) */
} es_still_batch;
/* A directory's stills as a batch: listed as es_still_list_dir does (lo), each one's output
 * under out_dir (NULL: none) named by es_still_out_name (f32: .npy), and outputs two inputs
 * share failed (es_still_out_clashes, said through lo->say). ES_OK, ES_ERR_NOMEM, or
 * es_still_list_dir's failure (msg). Free with es_still_batch_free (also after a failure). */
int es_still_batch_dir(es_still_batch *b, const char *root, const es_still_list_opts *lo,
                       const char *out_dir, int f32, char *msg, size_t len);
/* One still as a batch: path, named path, written to out (NULL: none). ES_OK or
 * ES_ERR_NOMEM. */
int es_still_batch_one(es_still_batch *b, const char *path, const char *out);
/* Keeps the items with keep[i] set (a --shard share), in order, each keeping its index. */
void es_still_batch_keep(es_still_batch *b, const unsigned char *keep);
void es_still_batch_free(es_still_batch *b);
/* Never an output onto an input of the batch, its own or another's (an image written into
 * its own directory, d/d/a.png into d, a statistics file): the index of the first input that
 * an output of b (outs_files 0: b's outputs are not files, "-") or stats (NULL: none; "-":
 * standard output's file, where a regular one) is, links followed, with *bad that output;
 * -1 none; -2 out of memory. */
int64_t es_still_batch_clobbers(const es_still_batch *b, int outs_files, const char *stats,
                                const char **bad);

/* The inputs by identity (links followed), to find an output that would replace one. */
typedef struct es_still_ids es_still_ids;
int es_still_ids_make(es_still_ids **ids, const char *const *ins, size_t n);
/* The index of the input that path is (path NULL: standard output's file, where a regular
 * one), or -1. */
int64_t es_still_ids_find(const es_still_ids *ids, const char *path);
void es_still_ids_free(es_still_ids **ids);

#endif
