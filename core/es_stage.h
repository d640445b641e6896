/*
 * es_stage.h - the two ends of a run (pipeline/run.c): a source of frames and the sinks that
 * take each result. io/ implements them (one file each: io/src_*.c, io/sink_*.c), pipeline/
 * drives them, a program may write its own. Kept in core/ because io/ may include only core/;
 * written into the installed entropy_stream.h as es_types.h is.
 *
 * Life of a source: open (its header read: the frames' geometry in es_source_info), read one
 * frame at a time in order, close. Life of a sink: open on the source's geometry (after the
 * first frame was read, so that a header alone never costs a frame's memory), write each
 * result in input order, close with commit (renamed into place) or without (its temporary
 * removed). Every call returns an es_status and, on failure, a one-line reason in msg
 * without the file's name: the run prefixes it ("NAME: reason").
 */
#ifndef ES_STAGE_H
#define ES_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "es_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct es_tiff_geo; /* io/es_tiff.h's GeoTIFF tags of a page (opaque) */

/* What a source's header says of its frames, and what a sink writes its own header from. */
typedef struct es_source_info {
  int width, height, depth;       /* depth 8 or 16 */
  int fps_num, fps_den;           /* average frame rate (25/1 where unknown) */
  int tb_num, tb_den;             /* time base of pts */
  int base_num, base_den;         /* the rate every time stamp falls on (0: fps) */
  int64_t frames;                 /* estimate, 0 if unknown */
  int has_display_matrix;         /* rotation metadata a video sink carries on */
  int32_t display_matrix[9];
  int sar_num, sar_den;           /* sample aspect ratio (0/1: unknown) */
  int field_order;                /* an AVFieldOrder (0: unknown) */
  int ts_discont;                 /* the container's clock may jump */
} es_source_info;

/* What the run lends its sources: a stop to look at where a read may block, page-locking
 * for the buffers a source lends (once the GPUs are open), and a line sink for a decoder's
 * own error lines. Each function may be NULL. */
typedef struct es_stage_env {
  int (*stopped)(void *arg);      /* nonzero once the run is stopping (a signal, or every
                                   * output failed); called from any thread */
  void *stopped_arg;
  int (*pin)(void *p, size_t bytes); /* es_host_pin, once GPUs are open: 1 if done, 0 not
                                      * yet (ask again), negative: refused (never again) */
  void (*unpin)(void *p);
  void (*log)(void *arg, const char *line); /* thread-safe; NULL: counted only */
  void *log_arg;
} es_stage_env;

/* One frame as a source read it. */
typedef struct es_source_frame {
  int64_t pts;        /* in the time base, or INT64_MIN */
  double pts_seconds; /* or NAN */
  int damaged;        /* decoded with errors (concealed) */
  /* Where the source lent its own buffer instead of writing dst: data, its stride, and the
   * reference to give back with es_source.unlend (ref NULL: dst was written). */
  const void *lend;
  size_t lend_stride;
  void *lend_ref;
  /* A lent frame's geometry where it is not the header's (a stack's page of another size);
   * 0: es_source_info's. */
  int width, height, depth;
  /* An item of a list (es_source.read_item, or read of such a source): its name (the
   * statistics' and sinks', a still's path relative to its directory; NULL: the source's),
   * its name in messages (its path; NULL: name), and the GeoTIFF tags of a TIFF read with
   * them asked for (the source's until its close; NULL: none). */
  const char *name;
  const char *what;
  const struct es_tiff_geo *geo;
} es_source_frame;

/* Where an item of its own size is decoded (es_source.read_item): called once the item's
 * header is checked, with its width, height and depth (8, 16; 32 for float32 samples);
 * sets *dst and *dst_stride, or fails with a reason in msg. The shape of io's
 * es_png_dest_fn. */
typedef int (*es_source_dest_fn)(void *user, int width, int height, int depth, void **dst,
                                 size_t *dst_stride, char *msg, size_t len);

/* What a source counts of its input's damage, for the run's summary. */
typedef struct es_source_counts {
  int64_t corrupt; /* packets refused and skipped */
  int64_t flagged; /* packets the demuxer flagged corrupt, decoded all the same */
  int64_t prekey;  /* packets before the first keyframe dropped */
  int64_t dropped; /* packets the decoder gave no frame for, with no error */
  int64_t damaged; /* frames decoded with errors */
  int64_t logged;  /* the decoder's own error lines */
  int empty;       /* the input had no byte at all (standard input) */
  double copy_ms;  /* under ES_TRACE: time spent copying planes out */
} es_source_counts;

/* A sequential source (a video, a FIFO, standard input). self is the source's own state;
 * name names it in messages and statistics records ("-": standard input). */
typedef struct es_source es_source;
struct es_source {
  const char *name;
  void *self;
  /* Opens the input and reads its header. The env is kept until close. */
  int (*open)(es_source *s, const es_stage_env *env, es_source_info *info, char *msg,
              size_t len);
  /* Reads the next frame into dst (rows dst_stride bytes apart, info's geometry), or lends
   * its own buffer (fr->lend_ref set). dst NULL: lends where it can, else ES_ERR_AGAIN says
   * the frame exists and is held for the next call, which needs a dst. ES_ERR_EOF at the
   * end; ES_ERR_INPUT for a fatal input error. */
  int (*read)(es_source *s, void *dst, size_t dst_stride, es_source_frame *fr, char *msg,
              size_t len);
  void (*unlend)(void *ref);              /* gives a lent buffer back; after close too */
  void (*counts)(const es_source *s, es_source_counts *c);
  int64_t (*end_pts)(const es_source *s); /* end of the last frame read, or INT64_MIN */
  void (*close)(es_source *s);            /* frees self; the struct is the caller's */
  int flags;                              /* ES_SOURCE_* */
  /* A list of items (a directory of stills) that several threads may read at once, in any
   * order: count items, read_item decodes item i (0 .. count-1) through dest, fills fr's
   * name, what and geo, and fails one item without ending the others (ES_ERR_INPUT with the
   * reason in msg). Thread-safe after open. NULL and 0 for a sequential source; read stays
   * for a reader taking the items one after the other. */
  int64_t count;
  int (*read_item)(es_source *s, int64_t i, es_source_dest_fn dest, void *user,
                   es_source_frame *fr, char *msg, size_t len);
};
/* es_source.flags: the input is one whole (a stack's pages): a run cut short (an input error,
 * a stop) leaves no output that would hold part of it (a .npy, a .tif are closed
 * uncommitted), where a video keeps the frames before a damaged one. Statistics keep the
 * records computed (ES_SINK_KEEP_EMPTY); a frame directory keeps the frame files written
 * (its uncommitted close removes only the directories it made and left empty). */
#define ES_SOURCE_WHOLE 1

/* One result handed to a sink: the frame's identity and what the compute made of it. */
typedef struct es_item {
  const char *name;    /* the source's */
  int64_t index;       /* frame number */
  int64_t pts;         /* as read */
  double pts_seconds;
  int damaged;
  int width, height;
  const float *map;    /* when a sink asked for it */
  size_t map_stride;   /* floats */
  const es_planes *pix; /* the rendering a sink asked for */
  const es_stats *stats; /* when a sink asked for them */
  const struct es_tiff_geo *geo; /* an item's GeoTIFF tags (es_source_frame.geo), or NULL */
  int depth;           /* the frame's sample depth (8, 16; 32 float): a list's items differ */
  /* A run of a read_item source: the item's number in the source (0 .. count-1), the slot a
   * file-an-item sink writes (index may differ: es_run_config.item_index); 0 elsewhere. */
  int64_t item;
} es_item;

/* What a sink asks the compute to make: one rendering (ES_PIX_NONE: none), the float map,
 * the statistics. Filled by open. */
typedef struct es_sink_needs {
  int pixfmt;
  int want_map;
  int want_stats;
} es_sink_needs;

/* write's answer for an item whose output existed and was kept (-n): skipped, not failed. */
#define ES_SINK_KEPT 1
/* es_sink.flags: committed also where it took no frame in a failed run (a statistics file
 * keeps its header); other sinks of a failed run that took nothing leave nothing. */
#define ES_SINK_KEEP_EMPTY 1
/* es_sink.flags: opened before the sinks without it (a statistics file: one that cannot be
 * written leaves no other output behind); written and closed in the run's order all the
 * same. */
#define ES_SINK_OPEN_FIRST 2
/* es_sink.flags: a file an item (a batch's outputs, es_sink_stills): write may be called by
 * several threads at once, items in any order, and a failing write fails its item only (the
 * sink is not dropped), its msg naming the file itself ("out/a.png: reason"). A run of a
 * read_item source hands every other sink its items in index order, with their statistics
 * only (no map, no rendering). */
#define ES_SINK_PER_ITEM 4

typedef struct es_sink es_sink;
struct es_sink {
  const char *name;    /* in messages ("-": standard output) */
  const char *what;    /* set by a failing call where another name is at fault (a directory
                        * that could not be made, a frame file); NULL: name */
  int flags;
  void *self;
  int (*open)(es_sink *k, const es_source_info *info, es_sink_needs *needs, char *msg,
              size_t len);
  /* ES_OK, ES_SINK_KEPT, or an error (the sink is then closed uncommitted and dropped). */
  int (*write)(es_sink *k, const es_item *it, char *msg, size_t len);
  void (*end)(es_sink *k, int64_t end_pts); /* the input's end, where read to it; may be NULL */
  /* Commits or removes, and frees self. Called once, also for a sink never opened. */
  int (*close)(es_sink *k, int commit, char *msg, size_t len);
  /* A file an item (ES_SINK_PER_ITEM), before item `item` is read (may be NULL): ES_OK to
   * write it; ES_SINK_KEPT where its output exists and is kept (-n: not written, and the item
   * not even read unless an ordered sink takes its statistics); or an error, the reason in
   * msg naming the file (its output exists and may not be replaced): the item fails unread,
   * so that a refused output costs no decoding. Thread-safe, as write. */
  int (*check)(es_sink *k, int64_t item, char *msg, size_t len);
};

/* ---- The sources and sinks of io/, and the table that matches names to them
 * (io/registry.c). Each constructor fills a caller's struct; nothing is opened until the
 * run calls open. ES_OK or ES_ERR_NOMEM. */

/* Options of every sink a name may choose (each takes what it needs). */
typedef struct es_sink_opts {
  int pixfmt;          /* the rendering written: ES_PIX_RGB24 (heat), ES_PIX_GRAY8, GRAY16 */
  int f32;             /* float32 maps instead (a .npy frame directory, raw f32 on stdout) */
  const char *codec;   /* video: NULL for the container's default */
  int crf;             /* video: <0 for the encoder's default */
  const char *preset;  /* video: NULL for the encoder's default */
  int pix_fmt;         /* video: heat's chroma, ES_PIX_NONE for the default */
  int overwrite;       /* replace existing files (-y) */
  int skip;            /* frame directory: keep existing frame files (-n) */
  const char *input;   /* the input's path ("-": standard input), never to be replaced */
  int bins;            /* statistics: histogram bins */
} es_sink_opts;

/* A video of frames (libav*: a file, a FIFO, "-" standard input: y4m, or raw with raw
 * "gray8:WxH[@fps]"). Standard input and FIFOs are read through a pump thread, so that a
 * stop is seen where a read would block (and "-" then stands for the pump's pipe on fd 0). */
typedef struct es_video_source_opts {
  const char *raw;
  int64_t max_pixels;  /* frames larger are an input error */
  int verbose_log;     /* hand libav*'s error lines to the env's log */
  /* One share of a video file (entropy_stream.h's es_shard_video gives the numbers; all 0:
   * the whole input). seek 1: decoding starts at the keyframe at or before seek_ts (the
   * stream's time base; a file only). keep 1: only frames of keep_from <= pts < keep_to are
   * read; those before are dropped (decoded from the keyframe), and the first one past
   * ends the read as the input's end would, its pts the source's end_pts (so that a video
   * sink's last frame lasts until the next share's first). */
  int seek;
  int64_t seek_ts;
  int keep;
  int64_t keep_from, keep_to;
  int64_t frames;      /* the frames the source will give, for progress (0: the header's) */
  int threads;         /* decoder threads (0: FFmpeg's choice, the cores + 1) */
} es_video_source_opts;
int es_source_video(es_source *s, const char *path, const es_video_source_opts *o);

struct es_tiff; /* io/es_tiff.h's open TIFF */
/* A multi-page TIFF as a stack of frames, page after page (es_tiff.h; name: the path). Every
 * page is read as grey (band: the sample of a band stack); same_size: a page of another size
 * than page 0's is an input error ("page N: is WxH, page 0 WxH"), else it is lent in a
 * buffer of its own size. Flag ES_SOURCE_WHOLE. */
typedef struct es_tiff_source_opts {
  int64_t max_pixels;  /* pages larger are an input error */
  int band;
  int same_size;
  struct es_tiff *tiff; /* path already opened on page 0 (es_tiff_open, max_pixels), handed
                         * over so that its header is not read again (owned by the source
                         * from the call on); or NULL */
} es_tiff_source_opts;
int es_source_tiff(es_source *s, const char *path, const es_tiff_source_opts *o);

/* A list of stills (es_still_read_opt's formats: PNG, JPEG, TIFF, libav's), one item each,
 * each of its own size: read_item for several threads at once, read for one item after the
 * other (lent, with its geometry; a file that cannot be read ends a sequential read, not a
 * parallel one). paths[i] is read, names[i] (NULL: the path) is its name; both are copied.
 * band: the sample of a TIFF band stack; geo: a TIFF's GeoTIFF tags are loaded too
 * (es_source_frame.geo). The header's width and height are 0 (each item has its own),
 * depth 8, frames the count. */
typedef struct es_stills_source_opts {
  int64_t max_pixels;  /* images larger are an input error */
  int band;
  int geo;
  const char *name;    /* the source's name in messages (NULL: "stills") */
} es_stills_source_opts;
int es_source_stills(es_source *s, const char *const *paths, const char *const *names, size_t n,
                     const es_stills_source_opts *o);

/* A video file (x.mp4, x.mkv, ...) or, path "-", y4m (raw float32 with f32) on stdout. */
int es_sink_video(es_sink *k, const char *path, const es_sink_opts *o);
/* One .npy of shape (frames, height, width), float32. */
int es_sink_npy_stack(es_sink *k, const char *path, const es_sink_opts *o);
/* A multi-page TIFF, a page a frame: the rendering, or float32 maps with f32; the GeoTIFF
 * tags of the input's page 0 (o->input, where it is a TIFF that has them) on every page. */
int es_sink_tiff(es_sink *k, const char *path, const es_sink_opts *o);
/* A directory of frame_NNNNNN.png (or .npy with f32), made where missing. */
int es_sink_frame_dir(es_sink *k, const char *path, const es_sink_opts *o);
/* A batch's outputs (ES_SINK_PER_ITEM): item i's result (es_item.item) to outs[i] (NULL:
 * none), each file by its extension: .png the rendering (o->pixfmt), .npy the float map,
 * .tif the rendering or, with f32, the map, with the item's GeoTIFF tags (es_item.geo); "-"
 * one frame of y4m on standard output (heat as 4:4:4, grey as mono; f32: raw float32).
 * o->overwrite and o->skip as es_sink_opts says, looked at by check before an item is read
 * and again at its write; a file kept (-n) is ES_SINK_KEPT. outs are copied. */
int es_sink_stills(es_sink *k, const char *const *outs, size_t n, const es_sink_opts *o);
/* The statistics records (CSV, JSON lines; "-": CSV on stdout), one a frame. Flags
 * ES_SINK_KEEP_EMPTY and ES_SINK_OPEN_FIRST (clear the latter where the file lies in a
 * directory another sink makes). */
int es_sink_stats(es_sink *k, const char *path, const es_sink_opts *o);

/* What an output name is, by the table of io/registry.c: */
enum es_out_kind {
  ES_OUTK_NONE = 0, /* no name */
  ES_OUTK_PNG,      /* x.png: one picture */
  ES_OUTK_NPY,      /* x.npy */
  ES_OUTK_VIDEO,    /* x.mp4, x.mkv, ... */
  ES_OUTK_DIR,      /* a directory (existing, ending in '/', or without an extension) */
  ES_OUTK_STDOUT,   /* "-" */
  ES_OUTK_TIFF      /* x.tif, x.tiff: one picture or a stack's pages (no video run writes it) */
};
/* The kind of an output name, or -1 for an extension no sink takes. */
int es_out_kind_of(const char *path);
/* The sink of a video run's output name (es_out_kind_of: video, .npy, directory, "-"), or
 * ES_ERR_USAGE for a kind a video run cannot write (a .png). */
int es_sink_for_video(es_sink *k, const char *path, const es_sink_opts *o);
/* The same for a stack's pages (es_source_tiff): .npy, .tif, directory; ES_ERR_USAGE for
 * the others. */
int es_sink_for_stack(es_sink *k, const char *path, const es_sink_opts *o);
/* 1 for a video file's extension, any case (.mp4, .mkv, .m2ts, .y4m, .h264, ...: the table of
 * io/registry.c), what a directory's list of videos takes (es_video_dir_list). */
int es_path_is_video(const char *path);
/* The video files of the directory dir (es_path_is_video; regular files, links followed;
 * hidden names and subdirectories left out) as "dir/NAME", sorted by name, where it holds
 * some and no still (a name a still reader of the build takes): 1, with *paths (malloc'd,
 * each name too) and *n. 0 where it holds a still or no video, or cannot be read: a batch
 * of stills, whose run says why; *paths NULL. ES_ERR_NOMEM. Free with es_video_dir_free. */
int es_video_dir_list(const char *dir, char ***paths, size_t *n);
void es_video_dir_free(char ***paths, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* ES_STAGE_H */
