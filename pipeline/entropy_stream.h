/*
 * entropy_stream.h - the one public header of libentropy-stream.
 *
 * Local Shannon entropy of images and video frames, on the CPU (OpenMP) and on every
 * NVIDIA GPU (CUDA), with bit-identical results on both (see docs/spec.md).
 *
 * Conventions: every function returns an int status, ES_OK (0) or a negative es_status;
 * a context keeps a one-line message for its last error (es_context_error). Destroy
 * functions take the address of the pointer, accept NULL and set it to NULL.
 */
#ifndef ENTROPY_STREAM_H
#define ENTROPY_STREAM_H

#include <stddef.h>
#include <stdint.h>

/* The shared types and status codes (core/es_types.h; written in here in the installed copy). */
#include "es_types.h"
/* The sources and sinks of a run (core/es_stage.h; written in here as es_types.h is). */
#include "es_stage.h"
/* The band sources and sinks of a band run (core/es_band_stage.h; written in as es_stage.h). */
#include "es_band_stage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ES_VERSION_MAJOR 0
#define ES_VERSION_MINOR 2
#define ES_VERSION_PATCH 0
#define ES_VERSION_STRING "0.2.0"

/* A short constant description of a status code ("input error", ...). */
const char *es_strerror(int status);
/* The process exit code of a status (0, 1, 2, 3, 4, 130; docs/spec.md, exit codes). */
int es_exit_code(int status);

/* Library-wide configuration of a context. */
typedef struct es_config {
  es_params params;
  int device;           /* enum es_device; default auto */
  int gpus[ES_MAX_GPUS]; /* device ordinals to use; ngpus == 0 means all visible */
  int ngpus;
  int64_t cpu_below;    /* frames with fewer pixels go to the CPU under auto; <0: default */
  int threads;          /* CPU worker threads; 0 = all cores */
  int stats_bins;       /* 1..ES_STATS_MAX_BINS; default 16 */
  int queue;            /* frames in flight per stage (streaming); 0 (default): 8, or 4 a
                         * GPU where more than two GPUs are to be used (es_config_queue) */
  int verbose;          /* 0 quiet, 1 normal, 2 verbose (library messages, see message) */
  int gpu_background;   /* 1: with device auto (in a library built with CUDA; a gpus list
                         * where the driver lists those GPUs: docs/library.md),
                         * es_context_create returns at once and the GPUs open on a
                         * thread of their own (CUDA start-up takes 0.2-1.1 s) from the
                         * first work that could use one: a frame or image of cpu_below
                         * pixels or more, es_context_gpu_count, es_context_config. Work
                         * below cpu_below never starts CUDA. Streams begin on the CPU and
                         * the GPUs join them when open; es_compute of an image a GPU could
                         * take waits for them. Default 0: open first. */
  int gpu_blocking_sync; /* 1: a thread waiting for its GPU sleeps (CUDA's blocking sync)
                         * instead of spinning on a core, leaving the cores to decoder and
                         * encoder threads; waits wake a little later. Default 0: CUDA's
                         * choice (spin while cores outnumber contexts). */
  /* Where the library's messages go (warnings such as a GPU failing and its frame retried;
   * with verbose 2, what runs where): one line, without a newline or a program name, from
   * any thread of the library, possibly from several at once. NULL (default): written to
   * stderr as "entropy-stream: LINE". A program that draws on stderr itself (a progress
   * line) takes them here to clear its drawing first. Also called inside es_context_create,
   * before the context is returned. It may call es_context_error and es_context_gpus_open,
   * but no call that waits for the library's threads (es_compute, es_context_gpu_count,
   * es_context_config, es_stream_*, es_context_destroy): it runs on those threads, as the
   * one opening the GPUs (gpu_background), which such a call would wait for. */
  void (*message)(void *user, const char *line);
  void *message_user;   /* passed to message */
  int gpus_env;         /* 1: the gpus list is the process's CUDA_VISIBLE_DEVICES, set by
                         * es_config_gpus_env: entry i is CUDA's ordinal i. Messages and
                         * results keep the list's ordinals. Default 0. */
} es_config;
/* Fills the defaults above. Initialise every es_config with it, then set the fields wanted:
 * fields added in later versions (as message, message_user) then get their defaults. The
 * struct's size is part of the ABI: a program is built against the header of the library
 * it runs with. While the version is 0.x, each minor version may grow structs and has a
 * soname of its own (libentropy-stream.so.0.2 for 0.2: es_config gained message). */
void es_config_default(es_config *c);
/* For a program that owns its process, before any thread and before CUDA starts: makes c's
 * gpus list the process's CUDA_VISIBLE_DEVICES and sets c->gpus_env, so that CUDA starts only
 * the listed GPUs (its start grows with the GPUs it finds: on four H200s 1.05 s, with one of
 * them visible 0.4 s; tools/BENCHMARKS.md Z8). Only where that variable is unset, the device
 * is not cpu, and every ordinal is one the driver lists, none twice; otherwise changes
 * nothing (the context checks the list as before). Returns 1 when set, else 0. A library
 * inside someone else's process leaves the environment alone: do not call it there. */
int es_config_gpus_env(es_config *c);
/* The frames in flight a context of this configuration uses (c NULL: of the default
 * configuration, as es_context_create takes NULL): c->queue, or where that is 0 the
 * default, 8 or 4 for each GPU it is to use, whichever is more. The GPUs of "all" are
 * counted without starting CUDA: CUDA_VISIBLE_DEVICES' entries, else the driver's
 * /proc/driver/nvidia/gpus. */
int es_config_queue(const es_config *c);

typedef struct es_context es_context;

/* Creates a context: checks the configuration (cfg NULL: es_config_default's; a value out
 * of range: ES_ERR_USAGE), opens the GPUs asked for and warms them up (module load,
 * tables, staging buffers). With device auto and no GPU, uses the CPU. With device gpu
 * and no usable GPU, or a gpus[] ordinal that is not visible, returns ES_ERR_DEVICE. On
 * failure *out is NULL and, where msg is not NULL, a one-line reason is written there. */
int es_context_create(es_context **out, const es_config *cfg, char *msg, size_t msglen);
/* Ends the caller's use of the context. Streams still open keep it (and their frames in
 * flight compute): it is freed with the last of them, at es_stream_destroy. No other thread
 * may be inside a call on the context (es_compute, ...) or make one after. */
void es_context_destroy(es_context **ctx);
/* The message of the last error the calling thread got from this context (so threads
 * sharing a context each read their own; kept for the last 4 contexts a thread got errors
 * from), or, if this thread got none, the context's last error ("" if none). The string
 * stays valid until the thread's next call. */
const char *es_context_error(const es_context *ctx);
/* Number of GPUs the context computes on (0 = CPU only); waits for GPUs opening in the
 * background (gpu_background). es_context_gpus_open: 1 once they are open (at once
 * without gpu_background), never waits. */
int es_context_gpu_count(const es_context *ctx);
int es_context_gpus_open(const es_context *ctx);
/* Work of `pixels` a frame is coming (a video whose header was read): where a GPU could
 * take it (device auto, cpu_below or more) and the GPUs of a gpu_background context were
 * not asked for yet, they start opening now rather than at the first such frame. Never
 * waits; nothing to do for other contexts. */
void es_context_expect(const es_context *ctx, int64_t pixels);
/* 1 once the GPUs are open or opening; 0 while a gpu_background context has had no work a
 * GPU could take (CUDA not started). Never waits. */
int es_context_gpus_asked(const es_context *ctx);
/* The configuration in force (after defaults were filled in). */
const es_config *es_context_config(const es_context *ctx);

/* One-shot: local entropy of `img` into `out` (float32, img->height rows of out_stride
 * floats; may be NULL), with statistics into `stats` (may be NULL) and a rendering into
 * `pix` (may be NULL; planes/strides as es_pixfmt says). Chooses the device as the
 * configuration says (a large image is split across all GPUs). The outputs may overlap the
 * input (a rendering written in place over the image: the input is then copied first), not
 * one another (ES_ERR_USAGE). Safe to call from several threads at once on one context. On
 * a GPU, buffers page-locked with es_host_pin move by DMA directly; pageable ones pass
 * through the GPU's page-locked staging, which a map of 1 MB or more grows to about the sum
 * of the cores' L2 caches (37 MB for a 1080p map on a host of 16 x 2 MB) and keeps for
 * later calls. */
int es_compute(es_context *ctx, const es_image *img, float *out, size_t out_stride,
               es_stats *stats, const es_render *render, es_planes *pix);

/* One-shot on GPU memory: as es_compute without a rendering, where img->data and `out` may
 * be device memory (cudaMalloc, a CuPy array's) of GPU `device` (a CUDA ordinal), or
 * page-locked host memory. Computed on that GPU alone, with no trip through host memory
 * and no retry on another device (the CPU cannot read device memory), and returns when the
 * map and stats are written. The caller makes sure the input is ready (its writes on other
 * CUDA streams synchronized). ES_ERR_DEVICE where `device` is not a GPU of the context
 * (a CPU-only context, a library built without CUDA) or the GPU failed; ES_ERR_USAGE as
 * es_compute's checks, and where out overlaps the input. Safe from several threads. */
int es_compute_device(es_context *ctx, int device, const es_image *img, float *out,
                      size_t out_stride, es_stats *stats);

/* ---- Streaming: push frames in, pull results out in push order. ----
 * The stream owns a fixed pool of frame buffers (es_context_config(ctx)->queue frames,
 * pinned when a GPU is used): the producer acquires one, fills `data`, pushes it; the
 * consumer pulls results in order and releases each frame back to the pool. Memory is
 * bounded by the pool.
 * Every frame out of the pool counts against it: acquired and not yet pushed, in flight,
 * and pulled and not yet released. With all of them out, es_stream_acquire waits for a
 * release, so a caller that pushes and pulls on one thread must pull (and release) before
 * it acquires more than the pool holds, or that acquire waits forever.
 * Threads: every stream function may be called from any thread. Several producers may
 * acquire and push at once (frames are numbered in the order their pushes happen), and
 * several consumers may pull at once. es_stream_destroy is the exception (see there). */
typedef struct es_frame {
  /* Set by the producer before es_stream_push. */
  int width, height, depth; /* as in es_image */
  size_t stride;            /* bytes between rows of data */
  void *data;               /* the stream's buffer, to fill (not to replace: es_stream_push
                             * refuses another pointer; lend other memory, below). Holds
                             * max_width x max_height samples of the stream's depth; in a
                             * stream of 0 x 0, only what es_stream_reserve made sure of
                             * (may be NULL before it). */
  int64_t index;            /* frame number (the stream fills it in push order) */
  int64_t pts;              /* presentation time in time_base units, or INT64_MIN */
  double pts_seconds;       /* or NAN */
  void *user;               /* producer's tag, passed through untouched */
  int damaged;              /* producer's mark, passed through untouched (0 when acquired):
                             * 1 where the frame was decoded with errors (concealed) */
  /* Results, valid from es_stream_pull until es_stream_release. map, pix and stats hold this
   * frame's results only where status is ES_OK (else whatever the buffers last held). */
  int status;               /* ES_OK or the error of this frame */
  float *map;               /* float32 map when the stream wants it, else NULL */
  size_t map_stride;        /* floats */
  es_planes pix;            /* rendering when the stream wants it */
  es_stats stats;           /* when the stream wants stats */
  int device;               /* -1: CPU, else the GPU ordinal that computed it */
  /* Optional, set by the producer before es_stream_push instead of filling `data`: samples
   * it lends (rows `stride` bytes apart), read until the frame goes back to the pool, when
   * the stream calls lend_release(lend_arg) (es_stream_release, or es_stream_destroy for
   * a frame never pulled). Page-locked memory (es_host_pin) goes to a GPU directly. */
  const void *lend;
  void (*lend_release)(void *arg);
  void *lend_arg;
  /* Optional, set by the producer before es_stream_push: this frame's mask (as es_image's:
   * width x height bytes, rows mask_stride apart, non-zero = inside), read until the frame
   * is pulled. NULL (as acquired): the stream's mask, if es_stream_config has one. */
  const uint8_t *mask;
  size_t mask_stride;
} es_frame;

typedef struct es_stream_config {
  int want_map;     /* copy the float32 map back */
  int want_stats;   /* compute statistics */
  es_render render; /* format ES_PIX_NONE: no rendering */
  int max_width, max_height, depth; /* largest frame; buffers are sized for it up front.
                                     * 0 x 0: buffers grow on demand (es_stream_reserve),
                                     * e.g. for a batch of images of different sizes.
                                     * depth 8, 16 or 32 (float samples) */
  /* One mask for every frame that sets none of its own (a video with --mask), or NULL: as
   * es_frame's, mask_width x mask_height; the caller keeps it until es_stream_destroy.
   * es_stream_push refuses a frame of another size that has no mask of its own
   * (ES_ERR_INPUT). */
  const uint8_t *mask;
  size_t mask_stride;
  int mask_width, mask_height;
} es_stream_config;
/* Reads a mask from an image file (any still format the inputs take: PNG, JPEG, TIFF, ...;
 * at most max_pixels pixels) into *mask, malloc'd (the caller frees it): width x height
 * bytes, rows width apart, 1 where the image's sample is non-zero (inside), else 0 - the
 * form es_stream_config.mask and es_run_config.mask take. ES_OK, or the reader's status
 * (ES_ERR_INPUT, ...) or ES_ERR_NOMEM, with msg set where there is more to say; *mask is
 * NULL then. */
int es_mask_read(const char *path, int64_t max_pixels, uint8_t **mask, int *width, int *height,
                 char *msg, size_t len);

typedef struct es_stream es_stream;
/* Opens a stream on ctx and starts its compute threads. ES_ERR_USAGE for a bad sc (render
 * format, colormap or overlay; a negative size, one side 0, or a depth not 8, 16 or 32 with
 * a size), ES_ERR_NOMEM; the stream keeps the context until es_stream_destroy (es_context_destroy
 * may come first). On failure *out is NULL. */
int es_stream_open(es_context *ctx, const es_stream_config *sc, es_stream **out);
/* Blocks until a free frame buffer is available; returns ES_ERR_INTERRUPTED if the stream
 * was aborted. Still hands frames out after es_stream_finish (they can only be released). */
int es_stream_acquire(es_stream *s, es_frame **out);
/* Makes sure an acquired frame can hold width x height samples of `depth` bits (grows its
 * buffer if needed) and sets data, width, height, depth and a tight stride. ES_ERR_USAGE
 * for a frame not acquired from this stream, a bad size or depth; ES_ERR_INPUT for a frame
 * no engine takes (a side too long: as es_stream_push refuses it) or too large to address,
 * before any allocation; ES_ERR_NOMEM. */
int es_stream_reserve(es_stream *s, es_frame *f, int width, int height, int depth);
/* Hands a filled frame to the compute stage; the stream owns it until it is pulled.
 * ES_ERR_USAGE: a frame not acquired from this stream (or pushed already), data that is
 * not the stream's buffer, a push after es_stream_finish, or a geometry es_compute would
 * refuse (size, depth, a stride shorter than a row, rows past its buffer or the address
 * space); ES_ERR_INPUT: a side too long for the engines; each with es_context_error's
 * message. ES_ERR_NOMEM where its outputs cannot grow, ES_ERR_INTERRUPTED once aborted.
 * On any error the frame stays the caller's (acquired): correct it and push again, or give
 * it back with es_stream_release (which returns a lent buffer, below; es_stream_destroy
 * also reclaims it). */
int es_stream_push(es_stream *s, es_frame *f);
/* No more frames will be pushed (later pushes fail with ES_ERR_USAGE). May be called again. */
int es_stream_finish(es_stream *s);
/* Blocks for the next result in push order; ES_ERR_EOF once finished and drained. A frame
 * whose status is not ES_OK also sets es_context_error to its message ("frame N: ..."),
 * here, in the caller's thread: the compute threads never overwrite the context's message.
 * Several threads may pull at once; each call takes the next frame in push order. */
int es_stream_pull(es_stream *s, es_frame **out);
/* Gives a pulled frame back to the pool, in any order, or an acquired frame that was not
 * pushed. Its fields (map, pix, data) are not to be used after. A frame pushed and not
 * pulled, or of another stream, is ignored. */
void es_stream_release(es_stream *s, es_frame *f);
/* Wakes every blocked call with ES_ERR_INTERRUPTED (for a fatal error in another stage).
 * After it acquire, push and pull return ES_ERR_INTERRUPTED (pull also for frames already
 * computed); frames queued are not computed. reserve, release, finish and destroy work. */
void es_stream_abort(es_stream *s);
/* Waits for the frames being computed, then frees the pool, frames still held included,
 * and gives back every lent buffer not yet given back. No other thread may be inside a
 * call on the stream, or make one after: to stop threads blocked in acquire or pull,
 * es_stream_abort, join them, then destroy. */
void es_stream_destroy(es_stream **s);

/* ---- Bands: an image larger than memory (docs/library.md, "Bands"). ----
 * The image is read through `read` in row order, computed in bands of band_rows rows, each
 * with r = window / 2 rows of halo above and below (at the image's top and bottom the
 * border rule applies, as for the whole image), by es_compute on the context (every GPU,
 * the CPU), and handed to `write` in row order. Reading band k + 1, computing band k and
 * writing band k - 1 overlap: memory is a few bands, never the image. The map, rendering
 * and statistics are exactly, bit for bit, those es_compute gives for the whole image.
 * Callbacks run on the library's threads (read on one, write and progress on the caller's),
 * never two of the same kind at once; each returns ES_OK or an es_status with a one-line
 * message in msg, which es_compute_bands returns and es_context_error then says. */
typedef int (*es_band_read_fn)(void *user, int y0, int nrows, void *dst, size_t dst_stride,
                               char *msg, size_t msglen);
/* Rows y0..y0 + nrows - 1 of the results: map (NULL without want_map), planes of the
 * rendering (plane 0 only: RGB24, GRAY8 or GRAY16; NULL without one). */
typedef int (*es_band_write_fn)(void *user, int y0, int nrows, const float *map,
                                size_t map_stride, const es_planes *pix, char *msg,
                                size_t msglen);
typedef struct es_bands_config {
  int width, height, depth;  /* the image: sides >= 1, depth 8 or 16 */
  int band_rows;             /* B >= 1; 0 (default): from mem_budget (es_bands_rows) */
  int64_t mem_budget;        /* bytes the bands in flight may take; 0 (default): 256 MiB,
                              * 256 MiB a GPU where several compute */
  es_band_read_fn read;      /* required */
  void *read_user;
  es_band_write_fn write;    /* NULL: nothing written (statistics only) */
  void *write_user;
  int want_map;              /* hand the float32 map to write */
  es_render render;          /* ES_PIX_NONE (default), or RGB24/GRAY8/GRAY16 of a fixed range */
  es_stats *stats;           /* the whole image's statistics, or NULL */
  /* After each band written: rows done of height (the caller's thread). May be NULL. */
  void (*progress)(void *user, int rows_done, int height);
  void *progress_user;
  /* Polled between bands; nonzero stops the run with ES_ERR_INTERRUPTED. May be NULL. */
  int (*stop)(void *user);
  void *stop_user;
} es_bands_config;
/* Fills the defaults (zero band_rows and budget, no output, render ES_PIX_NONE). */
void es_bands_config_default(es_bands_config *bc);
/* The band rows a run of bc on ctx uses: bc->band_rows, or the most that keep the bands in
 * flight within the budget (at least 1, at most the height). */
int es_bands_rows(const es_context *ctx, const es_bands_config *bc);
/* Runs bc on ctx. ES_ERR_USAGE for a bad bc (sizes, no read, a rendering of an auto range
 * or YUV planes), the callbacks' own statuses, es_compute's, ES_ERR_INTERRUPTED from stop.
 * Safe from several threads at once on one context (each its own bc). */
int es_compute_bands(es_context *ctx, const es_bands_config *bc);

/* ---- A band run: one image from a band source to band sinks and statistics sinks
 * (docs/library.md, "Bands"; pipeline/bands_run.c). It opens the source, creates a context
 * of cfg (its GPUs opened before the first band: every band may go to one), opens the
 * statistics sinks, then the band sinks (one kept, -n, is said through notice and dropped;
 * where every output was kept and no statistics are asked for, nothing is computed), runs
 * es_compute_bands, and commits the band sinks, then hands the statistics sinks one record
 * (index 0) of the whole image. Any failure ends the run: every output is closed
 * uncommitted (nothing left under its name; a statistics file too) and the summary says
 * whose it was; a stop (stopped) ends it as ES_ERR_INTERRUPTED, nothing written. The source
 * and every sink are closed before es_run_bands returns, in every case. */
#define ES_BANDS_MAX_SINKS 4
typedef struct es_bands_summary {
  int width, height, depth; /* the source's (0 before it opened) */
  int band_rows, nbands;
  int computed;             /* the image was computed (the bands ran to the end) */
  double elapsed_s;         /* from the first band's start to the last band written */
  es_stats stats;           /* the whole image's, with want_stats or statistics sinks */
  char device[64];          /* what computed (es_context_describe) */
  int status;               /* ES_OK or the run's failure */
  int exit_code;            /* SPEC 3's */
  /* The failure: whose (the source's or a sink's name; NULL where none is at fault, a
   * context that could not be created), the parameter at fault where it is one ("range":
   * the message starts with it), and the one-line reason. */
  const char *failed;
  const char *param;
  char msg[512];
} es_bands_summary;
typedef struct es_bands_run_config {
  es_config cfg;            /* the context the run creates (gpu_background is not used) */
  es_render render;         /* colormap and range of a rendering (its format: a sink's);
                             * the range must be fixed */
  int band_rows;            /* 0: from mem_budget (es_bands_config's) */
  int64_t mem_budget;
  es_band_source source;    /* owned by the run from the call on */
  es_band_sink sinks[ES_BANDS_MAX_SINKS]; /* owned too; written and committed in order */
  int nsinks;
  es_sink stats_sinks[ES_BANDS_MAX_SINKS]; /* es_stage.h sinks given the one record */
  int nstats;
  int want_stats;           /* the statistics in the summary also without a sink */
  int (*stopped)(void *user); /* polled between bands; may be NULL */
  /* Before the first band, the summary's geometry, band rows and device filled; after each
   * band (rows done); a notice such as "exists, skipped" for an output kept (-n). Each may
   * be NULL; called on the caller's thread. */
  void (*begin)(void *user, const es_bands_summary *s);
  void (*progress)(void *user, int rows_done, int height);
  void (*notice)(void *user, const char *name, const char *line);
  void *user;
} es_bands_run_config;
void es_bands_run_config_default(es_bands_run_config *c);
/* Runs c (see above); s filled in every case. Returns s->status. */
int es_run_bands(const es_bands_run_config *c, es_bands_summary *s);
/* Closes c's source and sinks (uncommitted) where c will not be run: a constructor failed. */
void es_bands_run_config_close(es_bands_run_config *c);

/* Page-locks host memory for the GPUs (cudaHostRegister, portable): 1 if done, 0 if not
 * (no GPU, or the driver refused). es_host_unpin undoes it before the memory is freed. */
int es_host_pin(void *p, size_t bytes);
void es_host_unpin(void *p);

/* Multi-line description: version, libpng, libav*, CUDA runtime and driver, GPUs, OpenMP
 * threads. Returns the length written (like snprintf). */
int es_version_info(char *buf, size_t len);

/* ---- Shares: one process's part of work split across many (Slurm job arrays, srun;
 * docs/cluster.md). Each rule depends on the inputs alone, never on timing or on which
 * process starts first, so N processes started anywhere agree on who does what: together
 * they do every item exactly once, whatever N. */
#define ES_SHARD_MAX 100000
typedef struct es_shard {
  int index; /* this process's share, 0 <= index < count */
  int count; /* shares in all, 1..ES_SHARD_MAX (1: the whole work) */
} es_shard;
/* Parses "I/N" (decimal, 0 <= I < N <= ES_SHARD_MAX) or "slurm": Slurm's variables of the
 * calling process, a job array's task (SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, over
 * SLURM_ARRAY_TASK_STEP, of SLURM_ARRAY_TASK_COUNT) and, inside an srun step (SLURM_STEP_ID
 * set), its task (SLURM_PROCID of SLURM_STEP_NUM_TASKS, else SLURM_NTASKS); both: the array
 * task's share cut again among the step's tasks. ES_OK, or ES_ERR_USAGE with msg (a bad
 * form, or "slurm" outside a job array and an srun step, or an array of listed ids such as
 * --array=1,5,9 whose task's place cannot be told). Reads the environment: not thread-safe
 * against setenv. */
int es_shard_parse(const char *spec, es_shard *out, char *msg, size_t len);
/* The share of each of n files, in the order given (the caller's name order): share_of[i]
 * for paths[i]. The shares are runs of consecutive files, balanced by pixel count (a PNG's
 * size read from its header alone; a file whose header cannot be read weighs one pixel,
 * and is reported by whichever share reads it): file i goes to share
 * floor(count * (pixels of the files before it) / (pixels of all)). Shares may be empty
 * (count > n). ES_OK, ES_ERR_USAGE for a count out of range, ES_ERR_NOMEM. */
int es_shard_files(int count, const char *const *paths, size_t n, int *share_of);
/* One share of a video file: N time ranges cut at keyframes of its packet index (read
 * without decoding, io/video_index.c), each cut at the keyframe nearest to an N-th of the
 * frames. Frame indices and time stamps are the whole video's. */
typedef struct es_shard_range {
  int64_t first;    /* the whole video's index of the share's first frame */
  int64_t frames;   /* frames of the share (0: an empty share, a video of few keyframes) */
  int64_t total;    /* frames of the whole video (its packets) */
  int64_t start_ts; /* the share's frames: start_ts <= pts < end_ts (the stream's time base) */
  int64_t end_ts;   /* INT64_MAX for the last share */
  int seek;         /* 1: decoding starts by seeking to seek_ts (es_video_in_opts); 0 for
                     * the first share, which decodes from the start as a whole run does */
  int64_t seek_ts;  /* the share's first keyframe: its dts (its pts where it has none) */
  int tb_num, tb_den; /* the stream's time base */
} es_shard_range;
/* Fills r for share sh of the video at path (a file: it is read twice). ES_OK, ES_ERR_INPUT
 * with msg (no video stream, packets without time stamps, a build without FFmpeg),
 * ES_ERR_NOMEM. */
int es_shard_video(const es_shard *sh, const char *path, es_shard_range *r, char *msg,
                   size_t len);
/* Where a decoded frame of time stamp pts falls: -1 before the share (decoded from its
 * keyframe, dropped), 0 in it, 1 past it (the share is done: stop reading). */
int es_shard_frame(const es_shard_range *r, int64_t pts);

/* Jobs that failed on a device (a GPU error, or an injected fault) and were computed again
 * on another GPU or the CPU, since the context was created (es_compute and streams). */
int64_t es_context_retries(const es_context *ctx);

/* What computes ("CPU", "GPU x2 + CPU", "CPU (GPUs still opening)") into buf, without
 * waiting for GPUs still opening (those computed nothing yet); returns buf. */
const char *es_context_describe(es_context *ctx, char *buf, size_t len);

/* ---- Runs: a source, the compute, and the sinks each result goes to, in input order.
 * The run reads the source on a thread of its own into an es_stream, opens the sinks on the
 * first frame's geometry, and writes each result to every sink on the calling thread. Its
 * failure policy is SPEC section 3's: a sink that fails is said once, closed uncommitted
 * (its temporary removed) and dropped, and the others go on; the run stops early only when
 * none is left. A frame no device could compute, or the stream failing, ends the run and
 * nothing is committed. A stop (es_run_stop, a first SIGINT) finishes the frames already
 * read and commits what was written. Its lines go through the context's es_config.message
 * ("NAME: reason", as the library's others), the verbose ones with verbose 2, none but
 * errors with verbose 0. */
typedef struct es_run es_run;
#define ES_RUN_MAX_SINKS 8
/* Where a sink failed (es_run_sink_failed_at): a frame index (>= 0), or one of these. */
enum {
  ES_RUN_SINK_LIVE = -1,      /* did not fail */
  ES_RUN_SINK_AT_CLOSE = -2,  /* its commit failed */
  ES_RUN_SINK_GIVEN_UP = -3   /* a write a stop ended (a FIFO with no reader): not failed */
};
typedef struct es_run_counts {
  int64_t frames;    /* frames that reached a sink (kept ones, -n, included) */
  int64_t skipped;   /* frames a sink kept as they were (ES_SINK_KEPT) */
  int64_t pushed;    /* frames read into the compute */
  int64_t expected;  /* the source's estimate of its frames (0: unknown) */
  int width, height, depth; /* the source's */
  double elapsed_s;  /* since the first frame was read into the compute */
  es_source_counts source; /* the source's damage */
  int started;       /* the frames began to flow (the outputs opened): a summary applies */
  int exit_code;     /* SPEC 3's, once es_run_execute returned */
  /* A run of a read_item source (a batch of stills): */
  int64_t failed;    /* items that failed (undecodable, not computed, an output not written) */
  int64_t pixels;    /* pixels of the items written */
  int64_t interrupted; /* of the failed items, those a stop gave up (ES_ERR_INTERRUPTED: an
                        * output FIFO without a reader): not done, but no error of theirs */
} es_run_counts;
typedef struct es_run_config {
  es_config cfg;      /* the context the run creates (on a thread of its own, while the
                       * source opens) */
  es_render render;   /* colormap, range, overlay of a rendering (its format: a sink's) */
  /* Polled besides es_run_stop (may be NULL): nonzero stops the run as es_run_stop does. */
  int (*stopped)(void);
  /* After each frame, on the writing thread (may be NULL). */
  void (*progress)(void *user, const es_run_counts *c);
  /* The writing thread begins (1) and ends (0) writing, the run's own threads started (a
   * program blocks its signals there, so that they land on a thread not inside a write). */
  void (*writing)(void *user, int begin);
  void *user;
  /* Every frame's mask (es_stream_config.mask's rules: width x height bytes, rows
   * mask_stride apart, non-zero = inside), kept by the caller until es_run_destroy; or
   * NULL. A source whose frames are of another size is refused before any sink opens (exit
   * 2), its message naming the mask by mask_name where set. */
  const uint8_t *mask;
  size_t mask_stride;
  int mask_width, mask_height;
  const char *mask_name;
  /* Added to every frame's index in what the sinks get and in the run's messages: a share
   * of a video (es_shard_range.first) numbers its records and frame files as the whole
   * video does. */
  int64_t index_base;
  /* A run of a read_item source: its decoding and its writing threads, each (0: the cores
   * online); never more than the items or the context's queue. */
  int workers;
  /* A run of a read_item source, item by item (each NULL: none; the caller's, kept until
   * es_run_destroy, count entries). item_index: item i's index in what the sinks get (a
   * --shard share's items numbered as in the whole batch; NULL: i + index_base).
   * item_failed: item i failed before the run (an es_status; 0: none) and was said then (an
   * output name two inputs share, a directory that could not be made): counted failed,
   * never read, checked or said again. item_done: item i is over, with its status (ES_OK,
   * ES_SINK_KEPT, or its failure), its size (0 where never read) and the seconds since its
   * check began; called under the run's lock, one at a time, on a worker thread. */
  const int64_t *item_index;
  const int *item_failed;
  void (*item_done)(void *user, int64_t item, int status, int width, int height,
                    double seconds);
  /* Once the sinks are open, before the compute opens and any item is read (may be NULL):
   * where a caller makes what the items need (their output directories, marking in
   * item_failed those it could not make). Nonzero is an exit code that ends the run. */
  int (*prepare)(void *user);
  /* A context to compute on instead of creating one (NULL: the run creates its own from
   * cfg). The caller's: it outlives the run (es_run_destroy does not destroy it), and
   * several runs may use it at once, each on threads of its own, so that a list of videos
   * opens the GPUs once (cuInit paid once) and the runs share them frame by frame. cfg
   * still gives the run's messages and verbosity: pass the context's. */
  es_context *context;
} es_run_config;
void es_run_config_default(es_run_config *c);
/* A run of src. The run owns src from the call on, also where it fails (src is closed
 * then), and closes it at es_run_destroy. */
int es_run_create(es_run **out, const es_run_config *c, const es_source *src);
/* Adds a sink, owned by the run from the call on (where the call fails, ES_ERR_USAGE past
 * ES_RUN_MAX_SINKS or after es_run_execute, it is closed uncommitted). Written and closed in
 * the order added; opened so too, ES_SINK_OPEN_FIRST ones first. */
int es_run_add_sink(es_run *r, const es_sink *k);
/* Runs to the end: ES_OK, or the worst status of the run (what failed was said); the exit
 * code of SPEC 3 in es_run_get_counts. Once per run. */
int es_run_execute(es_run *r);
/* Stops the run as a first SIGINT does. Async-signal-safe (one lock-free atomic store). */
void es_run_stop(es_run *r);
void es_run_get_counts(const es_run *r, es_run_counts *c);
/* Where sink i (in the order added) failed: an ES_RUN_SINK_* or a frame index. */
int64_t es_run_sink_failed_at(const es_run *r, int i);
/* The run's context (NULL before es_run_execute created it, or where that failed). */
es_context *es_run_context(const es_run *r);
/* Frees the stream, the source and the context; NULL is ignored. */
void es_run_destroy(es_run **r);

/* ---- Several videos in one call (pipeline/run_many.c; docs/library.md, "Several videos"):
 * each video's heat video into one directory, and one statistics file of every video's
 * records in the inputs' order under one header, as the single runs' files one after another
 * would be, byte for byte. One context for all of them (the GPUs opened once), a few es_runs
 * at once on threads of their own (each video's decoder given its share of the cores), so
 * that several videos keep the cores and the GPUs busy. Before any work, the outputs are
 * named and checked: two inputs of one output name, an output that is an input (refused,
 * exit 1), an existing output (refused, exit 3; kept with sink.skip, replaced with
 * sink.overwrite), a statistics file the same way; then the directory is made and each
 * video's statistics go to a part file of its own beside the statistics file, joined in
 * order at the end (a record at a time: memory bounded). A video that fails is said by its
 * run and counted, the others finish; the exit code is the worst (SPEC 3). A stop
 * (es_many_config.stopped) begins no other video, finishes those begun and joins their
 * records (exit 130). The lines of the runs go through cfg.message; the list's own through
 * say. */
typedef struct es_many es_many;
typedef struct es_many_config {
  es_config cfg;        /* the context made for all the videos (where context is NULL) */
  es_render render;     /* colormap, range, overlay of the heat videos */
  /* Each video's heat video: out_dir/BASE, the input's base name where es_sink_for_video
   * writes its container, else BASE with .mkv for its extension; NULL: none. */
  const char *out_dir;
  /* Every video's statistics records (.csv, .jsonl, .json; "-": CSV on standard output),
   * cfg.stats_bins bins; NULL: none. */
  const char *stats;
  /* The heat videos' options (es_sink_opts: pixfmt, codec, crf, preset, pix_fmt; its input
   * and bins are set for each video). overwrite and skip apply to every output, the
   * statistics file's included: an existing one is replaced, or kept (said, with verbose 1
   * or more; a video whose heat video is kept is run only for the statistics). */
  es_sink_opts sink;
  int64_t max_pixels;   /* a video's frames larger are an input error (0: no limit) */
  int verbose_log;      /* FFmpeg's error lines through cfg.message */
  /* Every frame's mask, as es_run_config's (mask_name names it in messages). */
  const uint8_t *mask;
  size_t mask_stride;
  int mask_width, mask_height;
  const char *mask_name;
  /* Videos run at once (0: a quarter of the cores online, at least 2, at most 8); never
   * more than the videos. decoder_threads: each video's decoder (0: the cores online over
   * the videos at once, at least 1). */
  int runs;
  int decoder_threads;
  /* A share of the list (es_shard_files' answer for this process), kept by the caller until
   * es_many_execute returns: share[i] 0 leaves input i to another process (checked as an
   * input, never named, run or joined); NULL: every input. */
  const unsigned char *share;
  /* Input i's own check before any work, in the list's order, after the library's refusal
   * of "-" and before its checks of the statistics file against it (may be NULL): nonzero
   * is an exit code that ends the call before any output is made (said by check). */
  int (*check)(void *user, size_t i, const char *path);
  /* Polled before each video begins and by every run (es_run_config.stopped; may be NULL). */
  int (*stopped)(void);
  /* The list's own lines (a refusal, an output kept, a video that could not begin, the
   * join): whose (a path, "-", or NULL), the parameter at fault where one could change the
   * outcome ("overwrite": the output exists, and overwrite or skip would let the call go on;
   * NULL otherwise), and the line ("exists"). Called from the caller's thread and from the
   * workers, one line at a time. NULL: "NAME: line" through cfg.message (as es_run says). */
  void (*say)(void *user, const char *name, const char *param, const char *line);
  void *user;
  /* A context of the caller's to compute on instead (as es_run_config.context): it outlives
   * the call, es_many_destroy leaves it. */
  es_context *context;
} es_many_config;
typedef struct es_many_counts {
  size_t videos;     /* of the list (this share's) */
  size_t ran;        /* videos begun (a stop leaves the others out) */
  size_t failed;     /* of those, videos that failed (an interrupted one is not failed) */
  int64_t frames;    /* frames that reached an output, every video's */
  double elapsed_s;  /* from the first video's start to the statistics joined */
  int started;       /* the videos began (the checks passed, the context made): a summary
                      * applies */
  int interrupted;   /* a stop ended the call (exit 130) */
  int exit_code;     /* SPEC 3's, once es_many_execute returned */
} es_many_counts;
void es_many_config_default(es_many_config *c);
/* A list of the n videos inputs[] (copied), with c (copied; its pointers the caller's until
 * es_many_destroy). ES_OK, ES_ERR_NOMEM, or ES_ERR_USAGE (no input, NULL). */
int es_many_create(es_many **out, const es_many_config *c, const char *const *inputs, size_t n);
/* Checks, runs every video and joins the statistics (see above). ES_OK, or the status of the
 * worst exit code (what failed was said); the exit code in es_many_get_counts. Once. */
int es_many_execute(es_many *m);
void es_many_get_counts(const es_many *m, es_many_counts *c);
/* The context the videos computed on (NULL before es_many_execute made it, or where that
 * failed): its es_context_describe for a summary. */
es_context *es_many_context(const es_many *m);
/* Frees the list, and the context where it made it; NULL is ignored. */
void es_many_destroy(es_many **m);

#ifdef __cplusplus
}
#endif
#endif /* ENTROPY_STREAM_H */
