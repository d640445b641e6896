/*
 * es_paths.h - output directories and names (io/paths.c): directories made as mkdir -p does
 * and removed again where a run left them empty, joins, and whether a name is the input.
 */
#ifndef ES_PATHS_H
#define ES_PATHS_H

#include <stddef.h>

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

#endif
