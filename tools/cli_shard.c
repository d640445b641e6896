/*
 * cli_shard.c - --shard I/N (or slurm): which part of a batch or of a video this run does.
 * The rules are the library's (pipeline/shard.c, entropy_stream.h); here the runners get
 * their answer, and what the user is told: an empty share, or a video that cannot be split.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_shard_files(const cli_opts *o, const char *const *paths, size_t n, unsigned char *keep) {
  int *share = NULL;
  size_t mine = 0;
  int rc;
  if (!o->shard_set || o->shard.count <= 1) {
    memset(keep, 1, n);
    return -1;
  }
  share = malloc((n ? n : 1) * sizeof *share);
  CLI_REFUSE(!share, 4, NULL, "out of memory");
  rc = es_shard_files(o->shard.count, paths, n, share);
  if (rc != ES_OK) {
    free(share);
    cli_err(NULL, "--shard: %s", es_strerror(rc));
    return es_exit_code(rc);
  }
  for (size_t i = 0; i < n; i++) {
    keep[i] = share[i] == o->shard.index;
    mine += keep[i];
  }
  free(share);
  /* More shares than files (or one large file first): nothing to do is no failure, but it
   * is said, so that an array of many tasks shows which ones had nothing. */
  if (!mine && n && !o->quiet)
    cli_err(o->input, "share %d/%d: no files (%zu file%s in %d shares)", o->shard.index,
            o->shard.count, n, n == 1 ? "" : "s", o->shard.count);
  else if (o->verbose && !o->quiet)
    cli_err(o->input, "share %d/%d: %zu of %zu files", o->shard.index, o->shard.count, mine, n);
  return -1;
}

int cli_shard_video(const cli_opts *o, es_shard_range *r, es_video_source_opts *vso) {
  char msg[MSG_LEN] = "";
  struct stat st;
  int rc;
  memset(r, 0, sizeof *r);
  r->start_ts = INT64_MIN;
  r->end_ts = INT64_MAX;
  if (!o->shard_set || o->shard.count <= 1) return -1;
  /* The packet index is read first, then the share: the input is read twice. */
  CLI_REFUSE(!strcmp(o->input, "-") || o->raw || stat(o->input, &st) != 0 || !S_ISREG(st.st_mode),
             1, o->input, "--shard: a video to split must be a regular file (it is read twice)");
  rc = es_shard_video(&o->shard, o->input, r, msg, sizeof msg);
  if (rc != ES_OK) return cli_fail(o->input, rc, msg);
  if (r->frames == 0) { /* no output at all: the merge joins the shares that have frames */
    if (!o->quiet)
      cli_err(o->input, "share %d/%d: no frames (%" PRId64 " frames, too few keyframes for %d "
              "shares); nothing written", o->shard.index, o->shard.count, r->total,
              o->shard.count);
    return 0;
  }
  /* The source seeks to the share's keyframe, drops the frames before the share and ends
   * at the first one past it (es_shard_frame's rule), and counts the share's frames. */
  vso->seek = r->seek;
  vso->seek_ts = r->seek_ts;
  vso->keep = 1;
  vso->keep_from = r->start_ts;
  vso->keep_to = r->end_ts;
  vso->frames = r->frames;
  if (o->verbose && !o->quiet)
    cli_err(o->input, "share %d/%d: frames %" PRId64 "..%" PRId64 " of %" PRId64,
            o->shard.index, o->shard.count, r->first, r->first + r->frames - 1, r->total);
  return -1;
}
