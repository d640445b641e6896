/*
 * entropy-stream.c - the command-line program's main: SPEC.md section 2's options read
 * (cli_args.c), what the input and the output are, the options a run would ignore refused,
 * then the runner, each over one of the library's runs (es_run, es_run_batch, es_run_bands,
 * es_many): cli_images.c (stills, directories), cli_video.c (video, FIFOs, standard input,
 * TIFF stacks), cli_bands.c (an image in bands), cli_many.c (several videos). The others:
 * cli_msg.c (signals, messages, progress), cli_paths.c (outputs), cli_shard.c (--shard),
 * cli_sinks.c (the CLI's own sinks, a run's setup); cli.h says what crosses them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

/* A standard descriptor closed when we start (`>&-`) would be handed to the next file
 * opened - an output's temporary, or a device the CUDA driver opens - and what is meant for
 * standard output written into it (`-o x.npy --stats - >&-` wrote the CSV into the .npy,
 * exit 0). Each closed one is taken by /dev/null opened the other way round (stdin for
 * writing, stdout and stderr for reading), so that using it still fails as a closed one
 * does (EBADF) and no file gets its number. */
static void hold_closed_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (got >= 0 && got != fd) { /* a lower one was free after all: not ours to keep */
      close(got);
    }
  }
}

/* SIGINT/SIGTERM handled from the process's first instructions of its own: starting takes
 * 40-90 ms on a loaded machine, nearly all of it before main (the loader maps some 140
 * libraries, and their constructors run), and a signal meanwhile took the default action:
 * the process died with no message. An ELF executable's .preinit_array runs after the
 * loader has relocated everything and before any library's constructor; sigaction needs
 * nothing more. Only the loader's own mapping (a few ms) is left before it. main installs
 * them again where no .preinit_array ran (any other platform); a signal already seen keeps
 * g_stop set, and the run then ends as interrupted before its first frame.
 * OpenMP threads sleep as soon as a parallel region ends (OMP_WAIT_POLICY=passive) rather
 * than spin for a while: the CPU workers' regions are a frame (ms) apart, and spinning
 * threads took the cores the decoder's threads wanted (tools/BENCHMARKS.md U4). libgomp
 * reads the variable in its constructor, so it is set here, before any library's constructor
 * runs; a value the user set is kept. */
static void preinit(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  cli_install_signals();
  setenv("OMP_WAIT_POLICY", "passive", 0);
}
#if defined(__ELF__)
__attribute__((section(".preinit_array"), used)) static void (*const es_preinit)(int, char **,
                                                                                 char **) = preinit;
#endif

int main(int argc, char **argv) {
  cli_opts o;
  int rc, in_kind, out_kind;
  struct stat st;
  char msg[MSG_LEN] = "";
  char **videos = NULL; /* a directory's videos (es_video_dir_list) */
  size_t nvideos = 0;

  cli_install_signals(); /* before anything that takes time */
  hold_closed_std_fds();
  es_trace("main");
  memset(&o, 0, sizeof o);
  es_config_default(&o.cfg);
  es_render_default(&o.render);
  o.format = FMT_HEAT;
  o.crf = -1;
  o.max_pixels = INT64_C(1) << 31;
  o.progress = -1;
  o.band_rows = -1;
  o.level = -1;

  rc = cli_parse_args(argc, argv, &o);
  if (rc == -2) { /* --help, --version: written, or a write error (a full disk, no stdout) */
    if (fflush(stdout) != 0 || ferror(stdout)) {
      cli_err("-", "write error: %s", strerror(errno));
      return 3;
    }
    return 0;
  }
  if (rc) return 1;
  /* SVT-AV1 (--codec libsvtav1) prints a 12-line banner and its errors to stderr past
   * libavutil's log; only its environment variable quiets it, and setenv is safe only
   * before any thread starts. Our own message reports a failure. A user's SVT_LOG stays. */
  setenv("SVT_LOG", "0", 0);
  /* A --gpus list becomes CUDA_VISIBLE_DEVICES (a user's own stays): CUDA then starts only
   * those GPUs, 0.4 s instead of 1.05 s for one of four H200s (tools/BENCHMARKS.md Z8).
   * Before any thread, for the same reason. */
  es_config_gpus_env(&o.cfg);
  o.cfg.verbose = o.quiet ? 0 : o.verbose ? 2 : 1;
  o.cfg.message = cli_lib_message;
  /* CUDA start-up (a few hundred ms) overlaps the first frames, computed on the CPU. */
  o.cfg.gpu_background = 1;
  /* ES_GPU_SYNC=block: threads waiting for a GPU sleep instead of spinning, leaving the
   * cores to the decoder and encoder. Off by default: on the H100 machine it measured no
   * steady gain either way (tools/BENCHMARKS.md S7). */
  o.cfg.gpu_blocking_sync = getenv("ES_GPU_SYNC") && !strcmp(getenv("ES_GPU_SYNC"), "block");

  /* What the input is. Several: videos, each checked by cli_run_many. */
  if (o.ninputs > 1) {
    in_kind = IN_VIDEO;
  } else if (!strcmp(o.input, "-")) {
    in_kind = IN_VIDEO;
  } else if (stat(o.input, &st) != 0) {
    CLI_REFUSE(1, 2, o.input, "%s", strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    in_kind = IN_DIR;
  } else if (o.level >= 0 || es_path_is_slide(o.input)) {
    in_kind = IN_SLIDE; /* a whole-slide image (cli_bands.c), in bands through OpenSlide */
  } else if (es_still_ext_ok(o.input, NULL) ||
             (es_out_kind_of(o.input) != OUT_VIDEO && strcasecmp(cli_ext_of(o.input), "mjpeg") &&
              strcasecmp(cli_ext_of(o.input), "mjpg") && es_still_is(o.input))) {
    /* A still: by its extension (any format the build reads), or by its first bytes (PNG's
     * or JPEG's signature) where the name is not a video's: x.mjpeg starts as a JPEG but is
     * a stream of them.
     * A FIFO, socket or device named *.png is refused, as in a directory: open() would block
     * a worker until a writer comes, beyond the reach of SIGINT, and a still is decoded whole,
     * so a pipe brings nothing a file does not. */
    CLI_REFUSE(!S_ISREG(st.st_mode), 2, o.input, "not a regular file");
    in_kind = IN_STILL;
  } else {
    in_kind = IN_VIDEO;
  }
  /* -r with a file or standard input would be ignored (and to an FFmpeg user -r is a frame
   * rate): refused as the other options a run would ignore. */
  CLI_REFUSE(o.recursive && in_kind != IN_DIR, 1, o.input, "-r: only for a directory input");
  CLI_REFUSE(o.ext && in_kind != IN_DIR, 1, o.input, "--ext: only for a directory input");
  /* --shard splits a directory's files or a video file's frames: one image is one item. */
  CLI_REFUSE(o.shard_set && in_kind == IN_STILL, 1, o.input,
             "--shard: only for a directory or a video file");
  out_kind = es_out_kind_of(o.output);
  /* A directory input writes a directory: a name like heat.v2 can only be that. */
  if (out_kind < 0 && in_kind == IN_DIR) out_kind = OUT_DIR;
  /* A name without an extension is a directory to make; but an existing device or FIFO
   * (-o /dev/null, as ffmpeg's -f null) was refused as "exists and is not a directory" (exit
   * 3), which says nothing of what to do. Such a file is written into directly only where
   * its name gives the output type (x.npy, x.mkv); without one, say so. */
  if (out_kind == OUT_DIR && o.output[strlen(o.output) - 1] != '/') {
    struct stat ost;
    if (stat(o.output, &ost) == 0 && !S_ISDIR(ost.st_mode) && !S_ISREG(ost.st_mode)) {
      const char *what = S_ISCHR(ost.st_mode) ? "character device" : S_ISBLK(ost.st_mode)
                         ? "block device" : S_ISFIFO(ost.st_mode) ? "FIFO" : "socket";
      CLI_REFUSE(in_kind == IN_DIR, 1, o.output, "is a %s: a directory input needs a directory "
                 "output (without -o only --stats or the statistics lines are written)", what);
      CLI_REFUSE(1, 1, o.output, "is a %s, and without an extension its output type is unknown "
                 "(without -o only --stats or the statistics lines are written; -o - writes y4m, "
                 "or --format f32, to standard output)", what);
    }
  }
  CLI_REFUSE(out_kind < 0, 1, o.output,
             "unknown output type (use .png, .npy, .tif, a video extension, a directory or -)");
  if (out_kind == OUT_TIFF && !o.format_set) o.format = FMT_F32; /* a .tif holds the values */
  CLI_REFUSE(out_kind == OUT_TIFF && in_kind != IN_STILL && in_kind != IN_SLIDE, 1, o.output,
             "a TIFF output is for an image input (a video's maps: .npy or a directory)");
  CLI_REFUSE(o.band_set && in_kind == IN_VIDEO, 1, o.input,
             "--band: only for TIFF input (a file or a directory)");
  /* Rendering and encoder options without -o: nothing is rendered or encoded (--stats and
   * the statistics line read the map alone), so they would be ignored. Refused, as every
   * option the run would ignore is (-r with a file, --gpus with --device cpu, --colormap
   * with a .npy): one rule, where --stats s.csv --colormap turbo was let be. */
  if (!o.output) {
    const char *ignored = o.format_set ? "--format" : o.colormap_set ? "--colormap"
                          : o.range_set ? "--range" : o.render.overlay_on ? "--overlay"
                          : o.codec ? "--codec" : o.crf >= 0 ? "--crf" : o.preset ? "--preset"
                          : NULL;
    CLI_REFUSE(ignored, 1, NULL,
               "%s: nothing is rendered without -o (it applies to an output's pictures)", ignored);
  }
  /* It would be ignored: a .npy holds the float32 map whatever --format says. */
  CLI_REFUSE(out_kind == OUT_NPY && o.format_set && o.format != FMT_F32, 1, NULL,
             "--format %s: a .npy output is always float32 (use f32, or a .png output)",
             cli_fmt_names[o.format]);
  /* It would be ignored too: float32 maps are the values, never a picture. */
  CLI_REFUSE(o.render.overlay_on && (out_kind == OUT_NPY || o.format == FMT_F32), 1, NULL,
             "--overlay: only for pictures (heat or gray8), not float32 maps");
  /* Options the output given would ignore, as the two above (no encoder runs but for a
   * video file: standard output is y4m or raw float32, as a .y4m file is). */
  CLI_REFUSE(o.output && out_kind != OUT_VIDEO && (o.codec || o.crf >= 0 || o.preset), 1, NULL,
             "%s: only for a video file output (x.mp4, x.mkv, ...)",
             o.codec ? "--codec" : o.crf >= 0 ? "--crf" : "--preset");
  CLI_REFUSE(o.output && o.colormap_set && (out_kind == OUT_NPY || o.format != FMT_HEAT), 1, NULL,
             "--colormap: only for --format heat (the output is %s)",
             out_kind == OUT_NPY ? "float32" : cli_fmt_names[o.format]);
  CLI_REFUSE(o.output && o.range_set && (out_kind == OUT_NPY || o.format == FMT_F32), 1, NULL,
             "--range: only for pictures (heat, gray8, gray16), not float32 maps");
  CLI_REFUSE(o.raw && in_kind != IN_VIDEO, 1, o.input, "--raw applies to standard input (-) only");
  CLI_REFUSE(o.stats_path && out_kind == OUT_STDOUT && !strcmp(o.stats_path, "-"), 1, NULL,
             "--stats - and -o -: both would write to standard output");
  CLI_REFUSE(out_kind == OUT_STDOUT && isatty(1), 1, "-",
             "standard output is a terminal (pipe it into a program or a file)");
  /* No frames come from a keyboard: it would wait. */
  CLI_REFUSE(!strcmp(o.input, "-") && isatty(0), 1, "-",
             "standard input is a terminal (pipe frames into it or redirect a file)");
  /* Never let an output replace its own input (-y would destroy it), standard input's file
   * included. */
  CLI_REFUSE(o.output && strcmp(o.output, "-") && o.ninputs == 1 &&
             es_same_file(o.input, o.output), 1, o.output,
             "is the input itself (choose another output)");
  /* Nor standard output be the input ('in.y4m -o - >> in.y4m'): the run read what it wrote,
   * and frames of the input's size go on as one stream, so it never ended; '--stats - >>'
   * wrote onto the input. Refused, as cat refuses it. A directory's files: cli_run_images. */
  if ((out_kind == OUT_STDOUT || (o.stats_path && !strcmp(o.stats_path, "-"))) &&
      in_kind != IN_DIR && o.ninputs == 1 && cli_stdout_is(o.input)) {
    CLI_REFUSE(!strcmp(o.input, "-"), 1, "-",
               "standard output is the file on standard input (choose another output)");
    CLI_REFUSE(1, 1, "-", "standard output is the input %s itself (choose another output)",
               o.input);
  }
  /* Without FFmpeg no video or standard input can be read: said at once, in one line (it
   * went through the run's whole setup, and an empty stdin said "no data" instead). */
  CLI_REFUSE(in_kind == IN_VIDEO && !es_video_built(), 2, o.input,
             "built without FFmpeg: cannot read video or standard input");
  o.stats_line = !o.output && !o.stats_path;
  if (o.mask_path && (rc = es_mask_read(o.mask_path, o.max_pixels, &o.mask, &o.mask_w,
                                        &o.mask_h, msg, sizeof msg)) != ES_OK)
    return cli_fail(o.mask_path, rc, msg);
  /* A TIFF's header is read once, here: its pages (a multi-page TIFF is a stack, its pages
   * frames), its depth (a float one is computed whole); a stack's run and the band run
   * below read this open file. Where it cannot be opened, the run that reads it says why. */
  es_tiff *tiff = NULL;
  es_tiff_info ti;
  if (in_kind == IN_STILL && es_path_is_tiff(o.input)) {
    char msg[MSG_LEN];
    if (es_tiff_open(o.input, o.max_pixels, &tiff, &ti, msg, sizeof msg) != ES_OK) tiff = NULL;
  }
  const int stack = tiff && ti.pages > 1;
  const int bands = !stack && cli_bands_wanted(&o, in_kind, out_kind, tiff ? &ti : NULL);
  if (!bands && !stack) es_tiff_close(&tiff); /* the images' run opens it its own way */
  if (o.mask && (in_kind == IN_SLIDE || o.band_rows >= 0)) {
    cli_err(o.mask_path, "--mask: not yet for an image in bands (a slide, --band-rows)");
    rc = 1;
  } else if (bands) {
    rc = cli_run_bands(&o, in_kind, tiff); /* takes the open TIFF */
    tiff = NULL;
  } else if (in_kind == IN_SLIDE || o.band_rows >= 0) {
    cli_err(o.output ? o.output : o.input, "%s: only for one image into a .npy, a .tif, a .png "
            "or --stats", in_kind == IN_SLIDE ? "a slide" : "--band-rows");
    rc = 1;
  } else if (o.ninputs > 1) {
    rc = cli_run_many(&o, o.inputs, (size_t)o.ninputs, out_kind);
  } else if (in_kind == IN_DIR && !o.recursive && !o.ext && !o.band_set &&
             es_video_dir_list(o.input, &videos, &nvideos) > 0) {
    /* A directory of video files and no still: several videos (a directory with stills
     * stays a batch of them, its videos left out as before). */
    rc = cli_run_many(&o, (const char *const *)videos, nvideos, out_kind);
    es_video_dir_free(&videos, nvideos);
  } else if (in_kind == IN_VIDEO) {
    rc = cli_run_video(&o, out_kind);
  } else if (stack) {
    rc = cli_run_stack(&o, out_kind, tiff); /* its pages are frames; takes the open TIFF */
    tiff = NULL;
  } else {
    rc = cli_run_images(&o, in_kind, out_kind);
  }
  es_tiff_close(&tiff);
  free(o.mask);
  if (!getenv("ES_EXIT_PLAIN")) cli_exit(rc); /* ES_EXIT_PLAIN: the teardown in the exit */
  return rc;
}
