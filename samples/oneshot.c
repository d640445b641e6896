/*
 * oneshot.c - the smallest use of libentropy-stream: create a context, compute the local
 * entropy of one image held in memory (es_compute), print its statistics.
 *
 *   sample-oneshot [WIDTH HEIGHT]      (default 640 x 480)
 *
 * The image is generated: a smooth gradient on the left half, noise on the right, so the
 * map has a low-entropy and a high-entropy side. Uses only the public header.
 */
#include <stdio.h>
#include <stdlib.h>

#include "entropy_stream.h"
#include "sample_args.h"

int main(int argc, char **argv) {
  int w = 640, h = 480;
  int ret = 1;
  es_context *ctx = NULL;
  uint8_t *pixels = NULL;
  float *map = NULL;
  char msg[256];
  if (argc == 2 || argc > 3 ||
      (argc == 3 && !(arg_int(argv[1], 1, 16384, &w) && arg_int(argv[2], 1, 16384, &h)))) {
    fprintf(stderr, "usage: sample-oneshot [WIDTH HEIGHT] (1..16384)\n");
    return 1;
  }

  /* The defaults are SPEC.md's: 5 x 5 square window, 16 levels, bits, device auto. */
  es_config cfg;
  es_config_default(&cfg);
  int rc = es_context_create(&ctx, &cfg, msg, sizeof msg);
  if (rc) {
    fprintf(stderr, "sample-oneshot: %s\n", msg);
    return es_exit_code(rc);
  }

  pixels = malloc((size_t)w * h);
  map = malloc((size_t)w * h * sizeof *map);
  if (!pixels || !map) {
    fprintf(stderr, "sample-oneshot: out of memory\n");
    ret = es_exit_code(ES_ERR_NOMEM);
    goto end;
  }
  uint32_t seed = 12345;
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      seed = seed * 1664525u + 1013904223u;
      uint8_t gradient = (uint8_t)(x * 255 / (w > 1 ? w : 2)), noise = (uint8_t)(seed >> 24);
      pixels[(size_t)y * w + x] = x < w / 2 ? gradient : noise;
    }
  }

  es_image img = {pixels, w, h, (size_t)w, 8, NULL, 0}; /* NULL, 0: no mask */
  es_stats st;
  rc = es_compute(ctx, &img, map, (size_t)w, &st, NULL, NULL);
  if (rc) {
    fprintf(stderr, "sample-oneshot: %s\n", es_context_error(ctx));
    ret = es_exit_code(rc);
    goto end;
  }
  printf("%d x %d on %s: mean %.4f bits, std %.4f, min %.4f, max %.4f, global %.4f bits\n", w,
         h, es_context_gpu_count(ctx) ? "GPU(s)" : "the CPU", st.mean, st.std, st.min, st.max,
         st.global_entropy);
  printf("left (gradient) pixel H = %.4f, right (noise) pixel H = %.4f\n",
         map[(size_t)(h / 2) * w + w / 4], map[(size_t)(h / 2) * w + 3 * w / 4]);
  printf("histogram of H over [0, %.3f] in %d bins:", es_params_hmax(&cfg.params), st.bins);
  for (int i = 0; i < st.bins; i++) printf(" %llu", (unsigned long long)st.hist[i]);
  printf("\n");
  ret = 0;
end:
  free(map);
  free(pixels);
  es_context_destroy(&ctx);
  return ret;
}
