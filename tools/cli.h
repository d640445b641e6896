/*
 * cli.h - what the files of the command-line program (tools/entropy-stream.c and
 * tools/cli_*.c) share: its options (cli_opts), the input and output kinds, the signal flags,
 * and the functions that cross files, each defined (with its full comment) where the
 * prototype's file says. Internal to tools/; the library's interface is entropy_stream.h.
 */
#ifndef ES_CLI_H
#define ES_CLI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "entropy_stream.h"
#include "es_io.h"
#include "es_tiff.h"
#include "es_paths.h"
#include "es_kernels.h"

#define PROG "entropy-stream"
#define MSG_LEN 512

/* ---- Output formats and kinds. */
enum fmt { FMT_HEAT = 0, FMT_GRAY8, FMT_GRAY16, FMT_F32 };
extern const char *const cli_fmt_names[]; /* by enum fmt (cli_args.c) */
enum out_kind { /* es_out_kind_of's (io/registry.c) */
  OUT_NONE = ES_OUTK_NONE,    /* no -o: only --stats */
  OUT_PNG = ES_OUTK_PNG,      /* x.png */
  OUT_NPY = ES_OUTK_NPY,      /* x.npy */
  OUT_VIDEO = ES_OUTK_VIDEO,  /* x.mp4, x.mkv, ... */
  OUT_DIR = ES_OUTK_DIR,      /* a directory */
  OUT_STDOUT = ES_OUTK_STDOUT, /* "-" */
  OUT_TIFF = ES_OUTK_TIFF      /* x.tif, x.tiff: float32 [default], or heat/gray8/gray16 with --format */
};
enum in_kind { IN_STILL = 0, IN_DIR, IN_VIDEO, IN_SLIDE }; /* IN_STILL: any format es_still_read_to
                                                        * reads; IN_SLIDE: a whole-slide image
                                                        * (OpenSlide) */

typedef struct cli_opts {
  const char *input;
  const char *const *inputs; /* every INPUT given (input is the first) */
  int ninputs;
  const char *output;
  es_config cfg;
  es_render render;
  int format; /* enum fmt */
  int format_set; /* --format given */
  int colormap_set; /* --colormap given */
  int range_set;    /* --range given */
  int gpus_set;      /* --gpus given ("all" too) */
  int cpu_below_set; /* --cpu-below given */
  const char *stats_path;
  const char *raw;
  const char *codec;
  int crf;
  const char *preset;
  int pix_fmt; /* --pix-fmt: ES_PIX_YUV420P, ES_PIX_YUV444P, or ES_PIX_NONE (the default) */
  int64_t max_pixels;
  int band;      /* --band: the sample of a TIFF band stack read as grey [0] */
  int band_set;  /* --band given */
  int recursive;
  const char *ext; /* --ext: the extensions a directory batch takes ("png,tif"); NULL: all */
  int overwrite; /* -y */
  int skip;      /* -n */
  int quiet;
  int verbose;
  int progress; /* -1 auto, 0 off, 1 on */
  es_shard shard; /* --shard: this run's share of the work (0/1 without it) */
  int shard_set;  /* --shard given */
  int band_rows; /* --band-rows: -1 not given, 0 auto (a memory budget), N rows a band */
  int level;     /* --level: -1 not given (0), else the slide's pyramid level */
  int stats_line; /* neither -o nor --stats: each image's or frame's statistics line on
                   * standard output (cli_stats_line), not a run that writes nothing */
  const char *mask_path; /* --mask FILE, read by es_mask_read (main) into: */
  uint8_t *mask;         /* mask_w x mask_h bytes, 1 inside, or NULL */
  int mask_w, mask_h;
} cli_opts;

/* ---- cli_msg.c: signals, messages, progress, the end of a run. */
/* Set (to 1) by the first SIGINT/SIGTERM; every loop of the run looks at it. Lock-free. */
extern atomic_int g_stop;
/* Installs the SIGINT/SIGTERM handler (and the outputs' stop), ignores SIGPIPE and SIGXFSZ. */
void cli_install_signals(void);
/* Blocks (begin 1) or unblocks (0) SIGINT and SIGTERM on the calling (main) thread. */
void cli_main_writes(int begin);
/* One line on stderr, "entropy-stream: WHAT: why" (what may be NULL), control bytes escaped;
 * a library message's parameter names become flags ("window 4: ..." -> "--window 4: ..."). */
void cli_err(const char *what, const char *fmt, ...);
/* Where cond holds: says cli_err(what, ...) and returns code from the calling function. The
 * CLI refuses a few dozen things before any work, each one test and one line. */
#define CLI_REFUSE(cond, code, what, ...)                                                        \
  do {                                                                                           \
    if (cond) {                                                                                  \
      cli_err(what, __VA_ARGS__);                                                                \
      return code;                                                                               \
    }                                                                                            \
  } while (0)
/* A library parameter's flag: "stats_bins" -> "--stats-bins" (into buf, returned). */
const char *cli_flag(const char *param, char *buf, size_t len);
/* Draws the progress line (stderr, \r-updated). */
void cli_progress_line(const char *fmt, ...);
/* Wipes a progress line on the screen. */
void cli_clear_progress(void);
/* The library's messages (es_config.message), as cli_err lines. */
void cli_lib_message(void *user, const char *line);
/* Seconds on the monotonic clock. */
double cli_now_s(void);
/* The exit code of a run: interrupted wins, then the worst of the failures. */
int cli_worse(int code, int other);
/* A library call that failed with status rc: says "WHAT: msg" (the status's text where msg is
 * NULL or empty) and returns rc's exit code. */
int cli_fail(const char *what, int rc, const char *msg);
/* Ends the process with code at once where the GPUs are still opening (nothing ran on them). */
void cli_exit_if_gpus_opening(es_context *ctx, int code);
/* cli_exit.c: where this process opened a GPU, exits now with code and leaves the driver's
 * teardown of its CUDA contexts to a child (BENCHMARKS Z6); otherwise returns. */
void cli_exit(int code);
/* An ETA of s seconds as M:SS or H:MM:SS ("?" when unknown). */
void cli_fmt_eta(char *buf, size_t len, double s);
/* Prints the statistics line of an image (index < 0) or a video's frame on standard output. */
void cli_stats_line(const char *name, int64_t index, double pts, int width, int height,
                    const es_stats *st, int base);

/* ---- cli_sinks.c: the CLI's own sinks of a run. What the progress line and they share. */
typedef struct cli_ui {
  const cli_opts *o;
  int show;      /* the progress line is drawn */
  double last;   /* when it was last drawn (0: at the next frame) */
  int still;     /* stills: a statistics line has no index nor time */
  es_sink inner; /* cli_sink_tty's: the sink whose records go where the progress line is */
} cli_ui;
/* --stats - on a terminal: k wrapped so that the progress line is wiped before each record
 * (k's own calls kept in u->inner). */
void cli_sink_tty(es_sink *k, cli_ui *u);
/* Neither -o nor --stats: each frame's statistics line on standard output. */
es_sink cli_sink_line(cli_ui *u);
/* 1 where the progress line is drawn: not -q, and --progress, or standard error a terminal. */
int cli_progress_on(const cli_opts *o);
/* A run's configuration from o (parameters, rendering, --mask), its stop and writing hooks
 * the CLI's; progress and user the caller's. */
void cli_run_config(es_run_config *c, const cli_opts *o,
                    void (*progress)(void *user, const es_run_counts *c), void *user);
/* Adds the sinks that come after -o: --stats (opened first unless inside, where it lies in
 * the output directory; wrapped by cli_sink_tty on a terminal) and the statistics lines.
 * ES_OK or the failure's status (not said). */
int cli_add_stats_sinks(es_run *run, const cli_opts *o, const es_sink_opts *so, cli_ui *ui,
                        int inside);

/* ---- cli_args.c: the command line. */
/* Fills o from argv: 0 to go on, 1 for a usage error (said), -2 after --help/--version. */
int cli_parse_args(int argc, char **argv, cli_opts *o);

/* ---- cli_paths.c: output kinds, directories, the --stats file. */
/* The extension of path's last component ("" where none). */
const char *cli_ext_of(const char *path);
/* 1 when standard output is a regular file and the file in ("-": standard input's). */
int cli_stdout_is(const char *in);
/* es_make_dirs for an output directory; a failure is said. */
int cli_make_out_dir(const char *path);
/* 1 when path names something under the directory dir. */
int cli_path_inside(const char *dir, const char *path);
/* The ES_PIX_ rendering of a --format for a picture output. */
int cli_png_pixfmt(int format);
/* An output file that exists, before any work: 0 to write it (none there, or -y), 1 kept with
 * -n (said unless -q), or the exit code 3 without -y or -n (said). */
int cli_exists(const cli_opts *o, const char *path);
/* What cli_stats_file_check found (cli_exists's answers). */
enum { STATS_OK = 0, STATS_SKIPPED = 1, STATS_REFUSED = 3 };
/* An existing --stats file without -y: kept with -n (stats_path cleared), else refused. */
int cli_stats_file_check(cli_opts *o);

/* ---- cli_shard.c: --shard, the share of a batch or a video this run does (the rules are
 * the library's, pipeline/shard.c). */
/* The batch's n files (in name order) that are this run's share: keep[i] 1 or 0. Returns
 * the exit code to end with (said), or -1 to go on. */
int cli_shard_files(const cli_opts *o, const char *const *paths, size_t n, unsigned char *keep);
/* A video's share: r filled, and in vso the source's seek, the time stamps it keeps and
 * their frame count. Returns the exit code to end with (said; 0 for an empty share), or -1
 * to go on. */
int cli_shard_video(const cli_opts *o, es_shard_range *r, es_video_source_opts *vso);

/* ---- The runners: each returns the exit code (SPEC 3). */
/* One PNG or a directory of them (cli_images.c). */
int cli_run_images(cli_opts *o, int in_kind, int out_kind);
/* The pages of a multi-page TIFF as frames, through the library's run (cli_video.c); tiff:
 * the input already open (main read its header), taken and closed. */
int cli_run_stack(cli_opts *o, int out_kind, es_tiff *tiff);
/* One image in row bands: a slide, a TIFF, or --band-rows (cli_bands.c). cli_bands_wanted:
 * 1 when the input and output go that way (tiff: the input TIFF's header, or NULL);
 * cli_run_bands takes tiff, the input already open (or NULL), and closes it. */
int cli_bands_wanted(const cli_opts *o, int in_kind, int out_kind, const es_tiff_info *tiff);
int cli_run_bands(cli_opts *o, int in_kind, es_tiff *tiff);
/* A video, a FIFO or standard input (cli_video.c). */
int cli_run_video(cli_opts *o, int out_kind);
/* Several videos in one run, over one context (cli_many.c, through the library's es_many):
 * the inputs given, or a directory's videos (es_video_dir_list). */
int cli_run_many(cli_opts *o, const char *const *inputs, size_t n, int out_kind);

#endif
