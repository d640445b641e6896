/*
 * test_pipeline_config.c - status codes, exit codes, configuration defaults, every
 * configuration check of es_context_create (message and code), device choice without a GPU,
 * es_compute's argument checks, es_version_info.
 */
#include <stdlib.h>
#include <string.h>

#include "entropy_stream.h"
#include "es_gpu.h"
#include "es_pipeline_internal.h"
#include "es_test.h"

/* Creates a context from cfg; checks the code and that msg contains `want` (NULL: any). */
static void expect(const es_config *cfg, int code, const char *want, const char *what) {
  char msg[256];
  memset(msg, 'X', sizeof msg);
  msg[sizeof msg - 1] = '\0';
  es_context *ctx = (es_context *)(uintptr_t)1; /* poisoned: must become NULL on failure */
  int rc = es_context_create(&ctx, cfg, msg, sizeof msg);
  CHECK(rc == code, "%s: rc %d, want %d (%s)", what, rc, code, msg);
  if (code != ES_OK) {
    CHECK(ctx == NULL, "%s: context not NULL after failure", what);
    CHECK(want == NULL || strstr(msg, want), "%s: message \"%s\" lacks \"%s\"", what, msg, want);
    /* The library names parameters, never a program's flags (the CLI maps them). */
    CHECK(!strstr(msg, "--"), "%s: message \"%s\" names a flag", what, msg);
    CHECK(!strchr(msg, '\n') && msg[0] && msg[strlen(msg) - 1] != '.',
          "%s: message \"%s\" not one line without a trailing period", what, msg);
  } else {
    CHECK(ctx != NULL, "%s: no context", what);
    es_context_destroy(&ctx);
    CHECK(ctx == NULL, "%s: destroy did not clear the pointer", what);
  }
}

int main(void) {
  es_test_seed("test_pipeline_config");

  /* Status codes and exit codes (SPEC.md section 3). */
  static const struct { int st, code; } ex[] = {
      {ES_OK, 0}, {ES_ERR_EOF, 0}, {ES_ERR_USAGE, 1}, {ES_ERR_INPUT, 2}, {ES_ERR_OUTPUT, 3},
      {ES_ERR_DEVICE, 4}, {ES_ERR_NOMEM, 4}, {ES_ERR_INTERNAL, 4}, {ES_ERR_INTERRUPTED, 130}};
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    CHECK(es_exit_code(ex[i].st) == ex[i].code, "exit code of %d: %d", ex[i].st,
          es_exit_code(ex[i].st));
    CHECK(es_strerror(ex[i].st) && es_strerror(ex[i].st)[0], "strerror %d empty", ex[i].st);
  }
  CHECK(strcmp(es_strerror(ES_ERR_INPUT), es_strerror(ES_ERR_OUTPUT)) != 0, "strerror alike");
  CHECK(es_strerror(12345) != NULL, "strerror of an unknown code");

  /* Defaults. */
  es_config c;
  memset(&c, 0x5a, sizeof c);
  es_config_default(&c);
  CHECK(c.params.window == 5 && c.params.levels == 16 && c.params.shape == ES_SHAPE_SQUARE &&
            c.params.border == ES_BORDER_CLIP && c.params.base == ES_BASE_2,
        "params defaults");
  CHECK(c.device == ES_DEVICE_AUTO && c.ngpus == 0 && c.cpu_below < 0 && c.threads == 0 &&
            c.stats_bins == 16 && c.queue == 0 && c.verbose == 1,
        "config defaults");

  expect(&c, ES_OK, NULL, "defaults");
  expect(NULL, ES_OK, NULL, "NULL config");

  /* Every check, with the parameter named in the message as the library spells it. */
  es_config b;
#define BAD(field, value, code, want)                                                       \
  do {                                                                                      \
    es_config_default(&b);                                                                  \
    b.field = value;                                                                        \
    expect(&b, code, want, #field " = " #value);                                            \
  } while (0)
  BAD(params.window, 4, ES_ERR_USAGE, "window 4: must be odd, 1..255");
  BAD(params.window, 257, ES_ERR_USAGE, "window 257: must be odd, 1..255");
  BAD(params.window, 0, ES_ERR_USAGE, "window 0: must be odd, 1..255");
  BAD(params.levels, 1, ES_ERR_USAGE, "levels 1: must be 2..65536");
  BAD(params.levels, 65537, ES_ERR_USAGE, "levels 65537: must be 2..65536");
  BAD(params.shape, 7, ES_ERR_USAGE, "shape 7: must be square or disk");
  BAD(params.border, -1, ES_ERR_USAGE, "border -1: must be clip or reflect");
  BAD(params.base, 3, ES_ERR_USAGE, "base 3: must be 2 or e");
  BAD(device, 9, ES_ERR_USAGE, "device 9: must be auto, gpu or cpu");
  BAD(threads, -1, ES_ERR_USAGE, "threads -1: must be 0..4096 (0 = all cores)");
  BAD(stats_bins, 0, ES_ERR_USAGE, "stats_bins 0: must be 1..1024");
  BAD(stats_bins, ES_STATS_MAX_BINS + 1, ES_ERR_USAGE, "stats_bins 1025: must be 1..1024");
  BAD(queue, -1, ES_ERR_USAGE, "queue -1: must be 1..4096");
  BAD(queue, 4097, ES_ERR_USAGE, "queue 4097: must be 1..4096");
  BAD(ngpus, -2, ES_ERR_USAGE, "gpus: 0..64 entries allowed");
  /* Levels above 256 are fine for the context (16-bit input); checked per image. */
  BAD(params.levels, 65536, ES_OK, NULL);
  BAD(params.window, 255, ES_OK, NULL);
  BAD(threads, 4096, ES_OK, NULL);
  BAD(threads, 4097, ES_ERR_USAGE, "threads 4097: must be 0..4096 (0 = all cores)");
  BAD(queue, 4096, ES_OK, NULL);
  BAD(params.mask_computed, 2, ES_ERR_USAGE, "mask_computed 2: must be 0..1");

  int visible = es_gpu_device_count();
  printf("GPUs visible: %d\n", visible);

  /* The default queue: 8, or 4 frames a GPU to be used; "all" counted from
   * CUDA_VISIBLE_DEVICES (CUDA has started above, so changing it here changes nothing else). */
  {
    es_config q;
    es_config_default(&q);
    const int g = es_gpu_built();
    q.queue = 5;
    CHECK(es_config_queue(&q) == 5, "explicit queue: %d", es_config_queue(&q));
    q.queue = 0;
    q.ngpus = 2;
    CHECK(es_config_queue(&q) == 8, "2 GPUs: %d", es_config_queue(&q));
    q.ngpus = 3;
    CHECK(es_config_queue(&q) == (g ? 12 : 8), "3 GPUs: %d", es_config_queue(&q));
    q.device = ES_DEVICE_CPU;
    CHECK(es_config_queue(&q) == 8, "cpu: %d", es_config_queue(&q));
    q.device = ES_DEVICE_AUTO;
    q.ngpus = 0;
    const char *old = getenv("CUDA_VISIBLE_DEVICES");
    char *saved = old ? strdup(old) : NULL;
    setenv("CUDA_VISIBLE_DEVICES", "0, 1,2,3,", 1);
    CHECK(es_config_queue(&q) == (g ? 16 : 8), "4 visible: %d", es_config_queue(&q));
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    CHECK(es_config_queue(&q) == 8, "none visible: %d", es_config_queue(&q));
    if (saved)
      setenv("CUDA_VISIBLE_DEVICES", saved, 1);
    else
      unsetenv("CUDA_VISIBLE_DEVICES");
    free(saved);
  }
  /* A GPU that does not exist. */
  es_config_default(&b);
  b.gpus[0] = visible + 2;
  b.ngpus = 1;
  char want[64];
  /* A build without CUDA says so rather than "no GPU visible". */
  const char *cuda = getenv("ES_HAVE_CUDA");
  const char *no_gpu = cuda && !strcmp(cuda, "0") ? "built without CUDA" : "no GPU visible";
  if (visible == 0)
    snprintf(want, sizeof want, "gpus %d: %s", visible + 2, no_gpu);
  else
    snprintf(want, sizeof want, "gpus %d: only %d GPU", visible + 2, visible);
  expect(&b, ES_ERR_DEVICE, want, "--gpus beyond the visible ones");
  /* --device cpu ignores the GPU list. */
  b.device = ES_DEVICE_CPU;
  expect(&b, ES_OK, NULL, "--device cpu with a GPU list");

  if (visible == 0) {
    es_config_default(&b);
    b.device = ES_DEVICE_GPU;
    snprintf(want, sizeof want, "%s (device gpu)", no_gpu);
    expect(&b, ES_ERR_DEVICE, want, "--device gpu without GPU");
    /* auto without GPU: the CPU. */
    es_context *ctx = NULL;
    es_config_default(&b);
    CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK && ctx, "auto without GPU");
    CHECK(es_context_gpu_count(ctx) == 0, "gpu count %d", es_context_gpu_count(ctx));
    es_context_destroy(&ctx);
  }

  /* The configuration in force has the defaults filled in. */
  es_context *ctx = NULL;
  es_config_default(&b);
  b.threads = 3;
  b.verbose = 0;
  CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK, "create");
  const es_config *in = es_context_config(ctx);
  CHECK(in && in->threads == 3 && in->cpu_below == 163840 && in->queue == es_config_queue(&b) &&
            in->queue >= 8 && in->verbose == 0,
        "config in force: threads %d cpu_below %lld", in ? in->threads : -1,
        in ? (long long)in->cpu_below : -1LL);
  CHECK(strcmp(es_context_error(ctx), "") == 0, "fresh context has an error: %s",
        es_context_error(ctx));
  CHECK(es_context_retries(ctx) == 0, "retries on a fresh context");

  /* es_compute argument checks: the message names the problem, nothing is written. */
  uint8_t img8[7 * 5];
  for (size_t i = 0; i < sizeof img8; i++) img8[i] = (uint8_t)es_test_rand();
  es_image im = {img8, 7, 5, 7, 8};
  float out[7 * 5];
  CHECK(es_compute(ctx, NULL, out, 7, NULL, NULL, NULL) == ES_ERR_USAGE, "NULL image");
  CHECK(es_context_error(ctx)[0], "no message for a NULL image");
  es_image bad = im;
  bad.stride = 3;
  CHECK(es_compute(ctx, &bad, out, 7, NULL, NULL, NULL) == ES_ERR_USAGE, "short stride");
  CHECK(strstr(es_context_error(ctx), "stride"), "message: %s", es_context_error(ctx));
  bad = im;
  bad.depth = 12;
  CHECK(es_compute(ctx, &bad, out, 7, NULL, NULL, NULL) == ES_ERR_USAGE, "depth 12");
  CHECK(strstr(es_context_error(ctx), "depth"), "message: %s", es_context_error(ctx));
  CHECK(es_compute(ctx, &im, out, 3, NULL, NULL, NULL) == ES_ERR_USAGE, "short map stride");
  es_render r;
  es_render_default(&r);
  CHECK(es_compute(ctx, &im, out, 7, NULL, &r, NULL) == ES_ERR_USAGE, "render without planes");
  es_context_destroy(&ctx);
  es_context_destroy(&ctx); /* NULL is fine */
  es_context_destroy(NULL);

  /* 8-bit input with more levels than 256: computed as 256 levels (it was refused, so a
   * batch of 8- and 16-bit input could not take one L): the same map and statistics. A
   * 5 x 5 window of 25 pixels would hide a wrong hmax (log2 25 either way): K = 17. */
  {
    float out256[7 * 5];
    es_stats st, st256;
    es_context *c256 = NULL;
    es_config_default(&b);
    b.params.levels = 1000;
    b.params.window = 17;
    b.verbose = 0;
    CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK, "create levels 1000");
    b.params.levels = 256;
    CHECK(es_context_create(&c256, &b, NULL, 0) == ES_OK, "create levels 256");
    CHECK(ctx && c256 && es_compute(ctx, &im, out, 7, &st, NULL, NULL) == ES_OK,
          "levels 1000 on 8-bit: %s", ctx ? es_context_error(ctx) : "");
    CHECK(c256 && es_compute(c256, &im, out256, 7, &st256, NULL, NULL) == ES_OK, "levels 256");
    CHECK(!memcmp(out, out256, sizeof out) && st.global_entropy_levels == st256.global_entropy_levels &&
              st.bins == st256.bins && !memcmp(st.hist, st256.hist, sizeof st.hist),
          "levels 1000 on 8-bit: not the map and statistics of 256 levels");
    es_context_destroy(&ctx);
    es_context_destroy(&c256);
    b.params.levels = 65537;
    CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_ERR_USAGE && !ctx, "levels 65537");
  }

  /* GPUs opened in the background: create returns with the CPU usable at once; the GPU
   * queries wait for the opening (here: the visible GPUs, or none) and report it open. A
   * GPU list or --device gpu/cpu opens synchronously, as before. */
  es_config_default(&b);
  b.gpu_background = 1;
  b.verbose = 0;
  CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK && ctx, "background create");
  CHECK(es_compute(ctx, &im, out, 7, NULL, NULL, NULL) == ES_OK, "background: compute: %s",
        es_context_error(ctx));
  /* An image below cpu_below neither waits for the GPUs nor opens them: CUDA is not
   * started for work that cannot use it (issue 31; before, create opened them at once). */
  if (es_gpu_built())
    CHECK(!es_ctx_gpus_demanded(ctx) && !es_context_gpus_open(ctx) &&
              !es_context_gpus_asked(ctx),
          "background: a small image asked for the GPUs");
  CHECK(es_context_gpu_count(ctx) == visible, "background: gpu count %d of %d",
        es_context_gpu_count(ctx), visible);
  CHECK(es_context_gpus_open(ctx) == 1, "background: not open after the count");
  CHECK(es_context_config(ctx)->ngpus == visible, "background: GPUs in force %d",
        es_context_config(ctx)->ngpus);
  es_context_destroy(&ctx);
  es_config_default(&b);
  b.gpu_background = 1;
  b.device = ES_DEVICE_CPU;
  b.verbose = 0;
  CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK && ctx, "background cpu create");
  CHECK(es_context_gpus_open(ctx) == 1 && es_context_gpu_count(ctx) == 0,
        "--device cpu: synchronous, no GPU");
  es_context_destroy(&ctx);
  CHECK(es_context_gpus_open(NULL) == 0, "gpus_open of NULL");
  /* Destroyed while still opening (at once after create): waits, frees, no leak. */
  es_config_default(&b);
  b.gpu_background = 1;
  b.verbose = 0;
  CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK, "background create 3");
  {
    /* A stream: small frames leave the GPUs alone; the first frame a GPU could take (from
     * cpu_below pixels) asks for them, at its reserve, before it is filled. */
    es_stream_config sc = {0};
    sc.want_stats = 1;
    es_stream *st = NULL;
    CHECK(es_stream_open(ctx, &sc, &st) == ES_OK && st, "background stream open");
    const int sides[3][2] = {{8, 8}, {64, 32}, {640, 480}};
    for (int i = 0; st && i < 3; i++) {
      es_frame *f = NULL;
      CHECK(es_stream_acquire(st, &f) == ES_OK && f, "acquire %d", i);
      if (!f) break;
      CHECK(es_stream_reserve(st, f, sides[i][0], sides[i][1], 8) == ES_OK, "reserve %d", i);
      if (es_gpu_built())
        CHECK(es_ctx_gpus_demanded(ctx) == (i == 2), "frame %dx%d: GPUs asked for %d",
              sides[i][0], sides[i][1], es_ctx_gpus_demanded(ctx));
      memset(f->data, i, (size_t)sides[i][0] * sides[i][1]);
      CHECK(es_stream_push(st, f) == ES_OK, "push %d", i);
      CHECK(es_stream_pull(st, &f) == ES_OK && f && f->status == ES_OK, "pull %d", i);
      if (f) {
        CHECK(f->stats.count == (int64_t)sides[i][0] * sides[i][1], "frame %d: count", i);
        es_stream_release(st, f);
      }
    }
    es_stream_destroy(&st);
  }
  es_context_destroy(&ctx);
  es_config_default(&b);
  b.gpu_background = 1;
  b.verbose = 0;
  CHECK(es_context_create(&ctx, &b, NULL, 0) == ES_OK, "background create 2");
  es_ctx_gpus_demand(ctx); /* the opening starts now, on its thread */
  es_ctx_gpus_demand(ctx); /* and only once */
  CHECK(es_ctx_gpus_demanded(ctx) && es_context_gpus_asked(ctx),
        "background: not asked for after es_ctx_gpus_demand");
  CHECK(es_context_gpus_asked(NULL) == 0, "gpus_asked of NULL");
  es_context_destroy(&ctx);
  CHECK(ctx == NULL, "destroy clears");

  /* OpenMP threads of a CPU job: one per ES_CPU_PIXELS_PER_THREAD pixels, within the cap. */
  CHECK(es_cpu_threads_for(320 * 240, 8) == 1, "small frame: %d", es_cpu_threads_for(320 * 240, 8));
  CHECK(es_cpu_threads_for(1920 * 1080, 8) == 7, "1080p: %d", es_cpu_threads_for(1920 * 1080, 8));
  CHECK(es_cpu_threads_for(1920 * 1080, 2) == 2, "1080p on 2: %d", es_cpu_threads_for(1920 * 1080, 2));
  CHECK(es_cpu_threads_for(0, 0) == 1, "empty: %d", es_cpu_threads_for(0, 0));

  /* Version information. */
  char v[4096];
  memset(v, 'X', sizeof v);
  int n = es_version_info(v, sizeof v);
  printf("%s", v);
  CHECK(n > 0 && (size_t)n == strlen(v), "version length %d vs %zu", n, strlen(v));
  CHECK(strstr(v, "entropy-stream " ES_VERSION_STRING), "version line");
  CHECK(strstr(v, "OpenMP"), "OpenMP line");
  CHECK(es_version_info(NULL, 0) == n, "length without a buffer");
  char small[16];
  CHECK(es_version_info(small, sizeof small) == n && strlen(small) == sizeof small - 1,
        "truncated version");
  return es_test_done("test_pipeline_config");
}
