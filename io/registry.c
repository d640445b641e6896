/*
 * registry.c - where output names are matched to what writes them: one line a name. A new
 * output is a sink file of its own and one line in the table below.
 */
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "es_band_stage.h"
#include "es_stage.h"
#include "es_tiff.h"

/* By extension (any case). sink: what a video run writes there (NULL: nothing, e.g. a .png,
 * one picture); stack: what a stack's pages are written to (es_source_tiff); band: what one
 * image in bands (es_run_bands) is written to. The rows "/" (a directory) and "-" (standard
 * output) are matched by es_out_kind_of's own rules, not by extension. */
static const struct {
  const char *ext;
  int kind;
  int (*sink)(es_sink *k, const char *path, const es_sink_opts *o);
  int (*stack)(es_sink *k, const char *path, const es_sink_opts *o);
  int (*band)(es_band_sink *k, const char *path, const es_band_sink_opts *o);
} outputs[] = {
    {"png", ES_OUTK_PNG, NULL, NULL, es_band_sink_png},
    {"npy", ES_OUTK_NPY, es_sink_npy_stack, es_sink_npy_stack, es_band_sink_npy},
    {"tif", ES_OUTK_TIFF, NULL, es_sink_tiff, es_band_sink_tiff},
    {"tiff", ES_OUTK_TIFF, NULL, es_sink_tiff, es_band_sink_tiff},
    {"mp4", ES_OUTK_VIDEO, es_sink_video},
    {"mkv", ES_OUTK_VIDEO, es_sink_video},
    {"avi", ES_OUTK_VIDEO, es_sink_video},
    {"mov", ES_OUTK_VIDEO, es_sink_video},
    {"nut", ES_OUTK_VIDEO, es_sink_video},
    {"y4m", ES_OUTK_VIDEO, es_sink_video},
    {"webm", ES_OUTK_VIDEO, es_sink_video},
    {"m4v", ES_OUTK_VIDEO, es_sink_video},
    {"ts", ES_OUTK_VIDEO, es_sink_video},
    {"flv", ES_OUTK_VIDEO, es_sink_video},
    {"mpg", ES_OUTK_VIDEO, es_sink_video},
    {"mpeg", ES_OUTK_VIDEO, es_sink_video},
    {"ogv", ES_OUTK_VIDEO, es_sink_video},
    {"wmv", ES_OUTK_VIDEO, es_sink_video},
    {"gif", ES_OUTK_VIDEO, es_sink_video},
    {"apng", ES_OUTK_VIDEO, es_sink_video},
    {"/", ES_OUTK_DIR, es_sink_frame_dir, es_sink_frame_dir},
    {"-", ES_OUTK_STDOUT, es_sink_video},
};
enum { NOUT = sizeof outputs / sizeof outputs[0] };

/* The extension of path's last component ("" where none). */
static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) return "";
  return dot + 1;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int es_out_kind_of(const char *path) {
  const char *e;
  size_t n;
  if (!path) return ES_OUTK_NONE;
  if (!strcmp(path, "-")) return ES_OUTK_STDOUT;
  n = strlen(path);
  if (is_dir(path) || path[n - 1] == '/') return ES_OUTK_DIR;
  e = ext_of(path);
  for (int i = 0; i < NOUT; i++)
    if (outputs[i].kind != ES_OUTK_DIR && outputs[i].kind != ES_OUTK_STDOUT &&
        !strcasecmp(e, outputs[i].ext))
      return outputs[i].kind;
  if (!*e) return ES_OUTK_DIR; /* a name without an extension is a directory to create */
  return -1;
}

/* The row of path's kind and extension, or -1. */
static int row_of(const char *path) {
  const int kind = es_out_kind_of(path);
  const char *e = kind == ES_OUTK_DIR ? "/" : kind == ES_OUTK_STDOUT ? "-" : ext_of(path);
  for (int i = 0; i < NOUT; i++)
    if (outputs[i].kind == kind && !strcasecmp(e, outputs[i].ext)) return i;
  return -1;
}

int es_sink_for_video(es_sink *k, const char *path, const es_sink_opts *o) {
  const int i = row_of(path);
  return i >= 0 && outputs[i].sink ? outputs[i].sink(k, path, o) : ES_ERR_USAGE;
}

int es_sink_for_stack(es_sink *k, const char *path, const es_sink_opts *o) {
  const int i = row_of(path);
  return i >= 0 && outputs[i].stack ? outputs[i].stack(k, path, o) : ES_ERR_USAGE;
}

int es_band_sink_for(es_band_sink *k, const char *path, const es_band_sink_opts *o) {
  const int i = row_of(path);
  return i >= 0 && outputs[i].band ? outputs[i].band(k, path, o) : ES_ERR_USAGE;
}

/* Video files by extension (any case), the inputs of a list of videos: a directory that
 * holds any of these and no still is a list of videos (es_video_dir_list). Wider than the
 * outputs above: a video run reads containers no sink writes (.m2ts, .mxf, raw .h264). */
static const char *const video_inputs[] = {"mp4", "mkv", "mov", "avi", "webm", "ts", "m2ts",
                                           "mts", "m4v", "mpg", "mpeg", "y4m", "nut", "flv",
                                           "wmv", "ogv", "3gp", "mxf", "h264", "264", "hevc",
                                           "h265", "ivf", "mjpeg"};
enum { NVIN = sizeof video_inputs / sizeof video_inputs[0] };

int es_path_is_video(const char *path) {
  const char *e = ext_of(path);
  for (int i = 0; i < NVIN; i++)
    if (!strcasecmp(e, video_inputs[i])) return 1;
  return 0;
}

/* Inputs of a band run, by extension: the whole-slide formats OpenSlide reads (a TIFF is
 * one only with a level); then a TIFF by es_path_is_tiff, the name rule of the whole
 * program; anything else is read as a PNG. */
static const struct {
  const char *ext;
  int (*band)(es_band_source *s, const char *path, const es_band_source_opts *o);
} band_inputs[] = {
    {"svs", es_band_source_slide},  {"ndpi", es_band_source_slide},
    {"vms", es_band_source_slide},  {"vmu", es_band_source_slide},
    {"scn", es_band_source_slide},  {"mrxs", es_band_source_slide},
    {"svslide", es_band_source_slide}, {"bif", es_band_source_slide},
};
enum { NBIN = sizeof band_inputs / sizeof band_inputs[0] };

int es_path_is_slide(const char *path) {
  const char *e = ext_of(path);
  for (int i = 0; i < NBIN; i++)
    if (band_inputs[i].band == es_band_source_slide && !strcasecmp(e, band_inputs[i].ext))
      return 1;
  return 0;
}

int es_band_source_for(es_band_source *s, const char *path, const es_band_source_opts *o) {
  const char *e = ext_of(path);
  if (o->level >= 0) return es_band_source_slide(s, path, o);
  for (int i = 0; i < NBIN; i++)
    if (!strcasecmp(e, band_inputs[i].ext)) return band_inputs[i].band(s, path, o);
  if (es_path_is_tiff(path)) return es_band_source_tiff(s, path, o);
  return es_band_source_png(s, path, o);
}
