/*
 * run_video.c - a whole conversion through the library's run: a video in, a heat video and
 * a statistics file out, with the same rules as the entropy-stream program (first frame
 * read before any output is opened, a failing output dropped, nothing partial left).
 *
 *   sample-run_video IN.mp4 OUT.mp4 STATS.csv
 *
 * Uses only the public header.
 */
#include <stdio.h>

#include "entropy_stream.h"

int main(int argc, char **argv) {
  es_run_config cfg;
  es_source src;
  es_sink video, stats;
  es_run *run = NULL;
  es_run_counts c;
  es_video_source_opts in = {.max_pixels = (int64_t)1 << 31}; /* the whole video */
  es_sink_opts out = {ES_PIX_RGB24, 0, NULL, -1, NULL, ES_PIX_NONE, 0, 0, NULL, 16};
  int rc;
  if (argc != 4) {
    fprintf(stderr, "usage: sample-run_video IN OUT STATS.csv\n");
    return 1;
  }
  out.input = argv[1];
  es_run_config_default(&cfg);
  rc = es_source_video(&src, argv[1], &in);
  if (rc == ES_OK) rc = es_run_create(&run, &cfg, &src);
  if (rc == ES_OK && (rc = es_sink_video(&video, argv[2], &out)) == ES_OK)
    rc = es_run_add_sink(run, &video);
  if (rc == ES_OK && (rc = es_sink_stats(&stats, argv[3], &out)) == ES_OK)
    rc = es_run_add_sink(run, &stats);
  if (rc != ES_OK) { /* what was made before is freed by es_run_destroy */
    fprintf(stderr, "sample-run_video: %s\n", es_strerror(rc));
    es_run_destroy(&run);
    return es_exit_code(rc);
  }
  es_run_execute(run); /* what failed was said through the context's messages */
  es_run_get_counts(run, &c);
  if (c.exit_code == 0)
    printf("%lld frames, %dx%d, %.2f s\n", (long long)c.frames, c.width, c.height, c.elapsed_s);
  es_run_destroy(&run);
  return c.exit_code;
}
