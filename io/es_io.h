/*
 * es_io.h - sources and sinks: PNG (libpng), JPEG (libjpeg), other stills (libav*), .npy,
 * statistics files, atomic file replacement, and video/stdin/stdout through FFmpeg's
 * libraries. Nothing here knows about GPUs or threads; every function returns an es_status
 * and writes a one-line message ("what went wrong", without the file name: the caller
 * prefixes it) into msg.
 */
#ifndef ES_IO_H
#define ES_IO_H

#include <stdint.h>
#include <stdio.h>

#include "es_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a path names a y4m file (".y4m", any case): the readers and writers say so when
 * a minimal libavformat lacks the y4m demuxer or muxer. */
int es_path_is_y4m(const char *path);

/* ---- Atomic outputs: write to a temporary name in the same directory, rename at the end. */

/* What an output name is, links followed (es_output_resolve). */
enum {
  ES_OUT_NEW,   /* nothing there yet (or a link to a name not there): created */
  ES_OUT_FILE,  /* something to replace: a regular file (or a directory: refused) */
  ES_OUT_STREAM /* a FIFO or a device: opened and written in place, never replaced */
};
/* Follows symbolic links at the end of path to the name actually written: *target
 * (malloc'd, the caller frees it) is path itself or the name its links lead to, whose
 * directory holds the temporary, so a link stays a link. Returns an ES_OUT_* kind, or a
 * negative es_status with msg set (*target NULL): a loop of links, out of memory. */
int es_output_resolve(const char *path, char **target, char *msg, size_t len);
/* 1 when writing path would replace something (what -y and -n are about): not for a new
 * name, nor for a FIFO or device, which are written into, nor for a name that cannot be
 * resolved (es_output_resolve fails: the write reports why), nor for a directory (never
 * replaced: the write reports it). */
int es_output_exists(const char *path);
/* 1 when path names a FIFO (links followed): opening it for writing waits for a reader. */
int es_output_is_fifo(const char *path);
/* Opens an existing FIFO or device (ES_OUT_STREAM) for writing in place: a descriptor
 * (blocking, close-on-exec), or ES_ERR_OUTPUT with msg set. A FIFO with no reader is waited
 * for, as open() would, until the stop set by es_output_set_stop says so: then
 * ES_ERR_INTERRUPTED, msg "not written: interrupted while waiting for a reader". */
int es_output_open_stream(const char *path, char *msg, size_t len);
/* What ends those waits: a function returning nonzero once the program stops (the CLI's
 * first SIGINT); called from the writing threads, never from a handler. NULL: none. */
typedef int (*es_stop_fn)(void);
void es_output_set_stop(es_stop_fn stopped);
/* "DIR/.NAME.TAG-XXXXXX" for mkstemp next to final_path (malloc'd, NULL: out of memory).
 * NAME is at most ES_TMP_NAME_KEEP bytes of the final name, so the temporary fits NAME_MAX
 * whenever the final name does; mkstemp's six letters keep it unique. */
enum { ES_TMP_NAME_KEEP = 200 };
char *es_tmp_template(const char *final_path, const char *tag);
/* Creates the temporary for final_path ("DIR/.NAME.TAG-XXXXXX", exclusively, with the mode
 * any new file gets: 0666 & ~umask, the mask read from /proc, not set), tracked as
 * es_tmp_track says. Returns its descriptor (close-on-exec) with *tmp its malloc'd name, or
 * ES_ERR_NOMEM / ES_ERR_OUTPUT with msg set and *tmp NULL. */
int es_tmp_create(const char *final_path, const char *tag, char **tmp, char *msg, size_t len);
/* The temporaries that exist now, for a program that ends at once on a signal (a second
 * SIGINT): es_tmp_unlink_all removes them, and is async-signal-safe (unlink only, no locks,
 * no allocation). es_tmp_track is called once a temporary is created, es_tmp_untrack after it
 * is renamed or unlinked (in that order, so that no moment leaves it untracked; unlinking a
 * name already gone is harmless), with the same pointer (still allocated: it names the slot).
 * Thread-safe; a name too long or beyond the table's ES_TMP_TRACK_MAX slots is not tracked
 * (nor one when out of memory: each tracked name is a copy of its own, which a walk reads
 * whole and which is never freed under it). */
enum { ES_TMP_TRACK_MAX = 256 };
void es_tmp_track(const char *tmp_path);
void es_tmp_untrack(const char *tmp_path);
void es_tmp_unlink_all(void);
/* es_tmp_unlink_all's walk with fn in place of unlink (fn must be async-signal-safe where the
 * walk runs in a handler): called once for each name tracked now, whole. Internal, for
 * test_io_atomic, which records the names a walk would remove while others track. */
void es_tmp_walk(void (*fn)(const char *name, void *arg), void *arg);

/* The overwrite argument of es_atomic_open and the writers built on it (es_png_write,
 * es_npy_write): 0 refuses an existing name (ES_ERR_OUTPUT "exists (use -y to overwrite)"),
 * 1 replaces it, ES_WRITE_KEEP (-n) keeps it: the writer returns ES_WRITE_KEPT (> 0, msg
 * "exists, skipped") and leaves nothing of its own, also where the name appeared while the
 * file was being written (a concurrent run's, renamed into place first). */
enum { ES_WRITE_KEPT = 1, ES_WRITE_KEEP = 2 };
/* Renames a finished temporary into place: rename(), or without overwrite one that fails
 * when final_path appeared since the output was opened, rather than replacing a file
 * another process made meanwhile. ES_OK, or ES_ERR_OUTPUT with msg set ("exists (use -y to
 * overwrite)", "cannot rename into place: ..."). */
int es_rename_into(const char *tmp, const char *final_path, int overwrite, char *msg,
                   size_t len);

typedef struct es_atomic {
  char *final_path; /* owned; links followed (es_output_resolve) */
  char *tmp_path;   /* owned */
  FILE *fp;         /* open for writing on tmp_path, or on final_path when stream */
  int stream;       /* final_path is a FIFO or device written in place: no temporary */
  int overwrite;    /* as given to es_atomic_open; 0: commit does not replace a file that
                     * appeared after the open either (ES_ERR_OUTPUT "exists ...") */
} es_atomic;
/* overwrite: 0 = ES_ERR_OUTPUT if final_path exists ("exists (use -y to overwrite)"). An
 * existing FIFO or device is opened for writing in place whatever overwrite says
 * (es_output_open_stream: ES_ERR_INTERRUPTED where a FIFO's reader was waited for in vain). */
int es_atomic_open(es_atomic *a, const char *final_path, int overwrite, char *msg, size_t len);
/* fflush + fsync-free close + rename; on any failure unlinks the temporary, ES_ERR_OUTPUT
 * (ES_WRITE_KEPT, see above); where the temporary cannot be unlinked either, msg ends with
 * "; its temporary PATH is left (cannot remove it: REASON)". */
int es_atomic_commit(es_atomic *a, char *msg, size_t len);
/* Closes and unlinks the temporary. Safe on a zeroed or committed struct. */
void es_atomic_abort(es_atomic *a);

/* ---- PNG in. */
typedef struct es_png_info {
  int width, height;
  int bit_depth;  /* as stored: 1, 2, 4, 8, 16 */
  int color_type; /* PNG_COLOR_TYPE_* */
  int interlaced;
} es_png_info;
/* Reads a PNG into a newly malloc'd grey image of depth 8 or 16 (SPEC section 1 luma rule).
 * Dimensions are checked against max_pixels (and for overflow) before any allocation.
 * *data is owned by the caller (free()); img->data points into it. info may be NULL. */
int es_png_read(const char *path, int64_t max_pixels, es_image *img, void **data,
                es_png_info *info, char *msg, size_t len);
/* The same from memory (for tests and stdin). */
int es_png_read_mem(const void *buf, size_t size, int64_t max_pixels, es_image *img,
                    void **data, es_png_info *info, char *msg, size_t len);

/* Reads a PNG file into memory the caller provides (e.g. a frame of an es_stream): once the
 * header is known, dest is called with the image's width, height and depth (8 or 16); it
 * returns ES_OK with *dst and *dst_stride (bytes, at least width * depth / 8) set, or an
 * es_status with a message in msg. Same checks and messages as es_png_read; on success
 * img->data is *dst. On failure the destination's contents are undefined. */
typedef int (*es_png_dest_fn)(void *user, int width, int height, int depth, void **dst,
                              size_t *dst_stride, char *msg, size_t len);
int es_png_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                   es_image *img, es_png_info *info, char *msg, size_t len);

/* ---- Stills of every format the build reads (issue 28): the dispatch (still.c) and its
 * readers. Each takes es_png_dest_fn's destination and its contract (size and depth known,
 * dest called once, max_pixels checked before anything is allocated); a corrupt, truncated
 * or unsupported file is ES_ERR_INPUT with a one-line message in msg. */

/* Reads path with the reader its first bytes name (PNG's signature, JPEG's SOI), else the one
 * its extension names (any case): PNG, JPEG, then every extension es_still_av_read_to takes.
 * A file neither names: ES_ERR_INPUT "not an image format this build reads". */
int es_still_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                     es_image *img, char *msg, size_t len);
/* What a reader may take besides the image: the sample of a TIFF band stack (band, 0 for
 * the others), and, where geo is not NULL, a TIFF's GeoTIFF tags (*geo set, the caller's to
 * es_tiff_geo_free; left NULL where the file has none or is no TIFF). */
typedef struct es_still_opts {
  int band;
  struct es_tiff_geo **geo;
} es_still_opts;
/* es_still_read_to with options (o NULL: none): every format is one line of the dispatch's
 * table, the TIFF's taking band and geo. */
int es_still_read_opt(const char *path, int64_t max_pixels, const es_still_opts *o,
                      es_png_dest_fn dest, void *user, es_image *img, char *msg, size_t len);
/* 1 when es_still_read_to has a reader for path: by its first bytes (a regular file only: a
 * FIFO is not opened) or by its extension. */
int es_still_is(const char *path);
/* 1 when name's extension (any case) is one a still reader of this build takes and, where
 * ext_filter is not NULL, one of its comma-separated extensions ("png,tif", any case): the
 * names a directory batch takes (--ext). */
int es_still_ext_ok(const char *name, const char *ext_filter);
/* ES_OK when every item of a --ext list is an extension this build reads, else ES_ERR_USAGE
 * with msg ("not an image format this build reads: xyz"). */
int es_still_filter_check(const char *ext_filter, char *msg, size_t len);
/* Every extension the build reads, space-separated ("png jpg jpeg ..."), into buf. */
int es_still_exts(char *buf, size_t len);

/* JPEG through libjpeg-turbo (jpeg.c): grey and YCbCr give their Y plane as stored (depth 8),
 * RGB the luma rule; CMYK/YCCK are refused. Warnings that mean lost data (a truncated file, a
 * bad Huffman code) are errors; none is printed. */
int es_jpeg_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                    es_image *img, char *msg, size_t len);
/* "libjpeg-turbo 2.1.5": the libjpeg built against (es_io_versions names it). */
const char *es_jpeg_version(void);
/* Any other still libavcodec decodes (still_av.c: WebP, BMP, PNM, TGA, JPEG 2000, QOI, ...),
 * its codec named by the extension, made grey as a video frame is (Y as stored, else
 * libswscale); samples deeper than 8 bits stay 16-bit. A decode that logs or returns an error
 * is refused. Without FFmpeg: ES_ERR_INPUT "built without FFmpeg". */
int es_still_av_read_to(const char *path, int64_t max_pixels, es_png_dest_fn dest, void *user,
                        es_image *img, char *msg, size_t len);
/* A PNG's size from its signature and IHDR alone (24 bytes, no decoding): ES_OK, or
 * ES_ERR_INPUT where the file cannot be read or does not start as a PNG. */
int es_png_size(const char *path, int64_t *width, int64_t *height);

/* ---- PNG out: plane 0 of a rendering in ES_PIX_RGB24, ES_PIX_GRAY8 or ES_PIX_GRAY16,
 * written atomically. stride: bytes between rows (0 = tight). */
int es_png_write(const char *path, int overwrite, int width, int height, int pixfmt,
                 const uint8_t *data, size_t stride, char *msg, size_t len);

/* ---- One image's result to a file by its extension (sink_stills.c; the batch's sink and the
 * CLI's one still): .npy the float map; .tif the rendering of pixfmt, or the map where
 * pixfmt is ES_PIX_NONE, with geo (NULL: none); anything else a PNG of the rendering.
 * overwrite as es_png_write's (ES_WRITE_KEEP: ES_WRITE_KEPT for a file that exists). */
struct es_tiff_geo;
int es_still_result_write(const char *path, int overwrite, int width, int height, int pixfmt,
                          const float *map, size_t map_stride, const es_planes *pix,
                          const struct es_tiff_geo *geo, char *msg, size_t len);

/* ---- .npy out: float32, little-endian, C order. stride: floats between rows (0 = width). */
int es_npy_write(const char *path, int overwrite, int width, int height, const float *map,
                 size_t stride, char *msg, size_t len);
/* Streaming [T, H, W]: header rewritten with the final T at close (seekable files only). */
typedef struct es_npy_stream es_npy_stream;
int es_npy_stream_open(es_npy_stream **out, const char *path, int overwrite, int width,
                       int height, char *msg, size_t len);
int es_npy_stream_write(es_npy_stream *s, const float *map, size_t stride, char *msg,
                        size_t len);
int es_npy_stream_close(es_npy_stream **s, int commit, char *msg, size_t len);
/* A [H, W] map written in row order, band by band (es_compute_bands): the header first,
 * rows appended, atomically renamed into place at close with commit (a temporary otherwise
 * removed). es_npy_bands_write takes the next nrows rows; close with commit refuses a map
 * short of H rows (ES_ERR_INTERNAL). */
typedef struct es_npy_bands es_npy_bands;
int es_npy_bands_open(es_npy_bands **out, const char *path, int overwrite, int width,
                      int height, char *msg, size_t len);
int es_npy_bands_write(es_npy_bands *s, const float *map, size_t stride, int nrows,
                       char *msg, size_t len);
int es_npy_bands_close(es_npy_bands **s, int commit, char *msg, size_t len);

/* ---- Whole-slide images through OpenSlide (io/openslide.c; io/openslide_stub.c without it):
 * one pyramid level (0 = full resolution) as 8-bit grey, rows at a time. Transparent pixels
 * (nothing scanned there) are the slide's background colour, white unless the slide names
 * another; colour becomes grey by SPEC section 1's luma rule. */
typedef struct es_slide es_slide;
/* 1 where OpenSlide is built in. */
int es_slide_built(void);
/* 1 when OpenSlide recognises path as a slide (a vendor format, or a tiled TIFF). */
int es_slide_detect(const char *path);
/* Opens level `level` of the slide: its width and height, checked against max_pixels.
 * ES_ERR_USAGE for a level the slide does not have, ES_ERR_INPUT for a file OpenSlide does
 * not read (msg says why), ES_ERR_NOMEM. */
int es_slide_open(const char *path, int level, int64_t max_pixels, es_slide **s, int *width,
                  int *height, char *msg, size_t len);
/* Rows y0..y0 + nrows - 1 of the level, grey uint8, rows dst_stride bytes apart. */
int es_slide_read_rows(es_slide *s, int y0, int nrows, void *dst, size_t dst_stride,
                       char *msg, size_t len);
void es_slide_close(es_slide **s); /* accepts NULL and *s NULL */

/* ---- Statistics records (CSV with a header line, or JSON lines). path "-" = stdout CSV. */
typedef struct es_stats_writer es_stats_writer;
/* 1 when path names a statistics file es_stats_writer_open takes (.csv, .jsonl, .json, -). */
int es_stats_path_ok(const char *path);
int es_stats_writer_open(es_stats_writer **out, const char *path, int overwrite, int bins,
                         char *msg, size_t len);
/* name: file name (batch) or NULL (video: the index is used); pts_seconds NAN if unknown. */
int es_stats_writer_add(es_stats_writer *w, const char *name, int64_t index,
                        double pts_seconds, int width, int height, const es_stats *st,
                        char *msg, size_t len);
/* The same with the record's damaged column (0/1): 1 for a frame decoded with errors
 * (es_video_in_frame_damaged); es_stats_writer_add writes 0. */
int es_stats_writer_add_frame(es_stats_writer *w, const char *name, int64_t index,
                              double pts_seconds, int width, int height, int damaged,
                              const es_stats *st, char *msg, size_t len);
int es_stats_writer_close(es_stats_writer **w, int commit, char *msg, size_t len);

/* ---- Video and streams in (libavformat/libavcodec/libswscale). Built only with FFmpeg;
 * without it es_video_in_open returns ES_ERR_INPUT "built without FFmpeg". */
typedef struct es_video_in es_video_in;
/* 1 where FFmpeg's libraries are built in, 0 in a build without them (the stub). */
int es_video_built(void);
typedef struct es_video_in_opts {
  const char *raw;     /* "gray8:WxH[@fps]" / "gray16le:WxH[@fps]" for raw stdin, or NULL */
  int64_t max_pixels;  /* frames larger than this are ES_ERR_INPUT */
  int threads;         /* decoder threads, 0 = FFmpeg's choice */
  /* Lending (es_video_in_read_lend): the decoder writes Y planes into page-aligned buffers
   * of the reader's own pool, which pin() may page-lock (returns 1 if it did; 0: try again
   * on the buffer's next frame, e.g. until the GPUs are open; negative: it cannot, and that
   * buffer is not asked again). unpin() runs when a pinned buffer is freed, which may be
   * after es_video_in_close (a frame still lent out). */
  int lend;
  int (*pin)(void *p, size_t bytes);
  void (*unpin)(void *p);
  /* Error lines libav* logs for this reader (decoder, demuxer) are never printed; they are
   * counted (es_video_in_log_lines) and, where log is set, handed to it as one line each,
   * "[h264] error while decoding MB 11 20, bytestream -5", from the thread that logged
   * it (a decoder thread too: log must be thread-safe and must not call the reader). */
  void (*log)(void *arg, const char *line);
  void *log_arg;
  /* seek 1: decoding starts at the keyframe at or before seek_ts (the stream's time base,
   * es_video_index's), found by libavformat's seek before the first frame is decoded, as
   * one share of a video split by es_shard_video starts. A file only (not "-" or raw). */
  int seek;
  int64_t seek_ts;
} es_video_in_opts;
typedef struct es_video_info {
  int width, height, depth; /* depth 8 or 16 of the grey plane delivered */
  int fps_num, fps_den;     /* frame rate (25/1 if unknown) */
  int tb_num, tb_den;       /* time base of pts */
  int64_t frames;           /* estimate, 0 if unknown */
  /* The stream's display matrix (rotation / flip metadata, AV_PKT_DATA_DISPLAYMATRIX), if it
   * has one: frames are delivered as stored, and a video output can carry it so that players
   * show the heat map as they show the source. */
  int has_display_matrix;
  int32_t display_matrix[9];
  /* Sample (pixel) aspect ratio, as the container or codec says; 0/1 if unknown. The map
   * keeps the stored pixels, so a video output carries it for players to shape the picture
   * as they shape the source's (anamorphic DV, DVD, HDV). */
  int sar_num, sar_den;
  /* The base frame rate: the rate on whose frames every time stamp falls, as ffmpeg guesses
   * it (av_guess_frame_rate: the stream's r_frame_rate, mostly). fps above is the average;
   * they differ for variable frame rate input (frames at 0, 0.14, 0.28 s: 50/1 against
   * about 10/1). */
  int base_num, base_den;
  /* Field order (an AVFieldOrder: 0 unknown, 1 progressive, 2..5 TT BB TB BT), as libavformat
   * reports it: frames are delivered woven (both fields, as stored), and a video output
   * carries it as ffmpeg does (YUV4MPEG2 It/Ib, Matroska FieldOrder). */
  int field_order;
  /* 1 where the container's clock may jump (libavformat's AVFMT_TS_DISCONT: MPEG-TS and
   * MPEG-PS, say, spliced or captured across a restart): a video output then takes a jump
   * forward of more than ES_TS_JUMP_S seconds as a break, as ffmpeg does. */
  int ts_discont;
} es_video_info;
/* The packet index of a video file's stream (the one es_video_in_open decodes), read
 * packet by packet without decoding: one entry a packet that gives a frame (empty and
 * discarded packets left out), in decode order. For splitting a video at keyframes
 * (pipeline/shard.c). */
typedef struct es_video_index {
  int64_t n;        /* packets */
  int64_t *pts;     /* each one's presentation time stamp (its dts where it has none) */
  int64_t *dts;     /* decode time stamp, or INT64_MIN where it has none */
  uint8_t *key;     /* 1: a keyframe (decoding can start there) */
  int tb_num, tb_den; /* the time base of pts and dts */
} es_video_index;
/* ES_OK, or ES_ERR_INPUT with msg (no video stream, a packet with no time stamp at all),
 * ES_ERR_NOMEM. es_video_index_free frees what it holds (a zeroed one too). */
int es_video_index_read(const char *path, es_video_index *ix, char *msg, size_t len);
void es_video_index_free(es_video_index *ix);

/* path "-" = standard input (y4m recognised by its header, or raw with opts->raw). */
int es_video_in_open(es_video_in **out, const char *path, const es_video_in_opts *opts,
                     es_video_info *info, char *msg, size_t len);
/* Decodes the next frame and copies its grey plane (depth as info says) into dst.
 * ES_ERR_EOF at the end; ES_ERR_INPUT for a fatal error (e.g. a short last raw frame:
 * "frame N is short (got B of S bytes)"). Corrupt packets are skipped and counted. */
int es_video_in_read(es_video_in *v, void *dst, size_t dst_stride, int64_t *pts,
                     double *pts_seconds, char *msg, size_t len);
/* The same, but a decoded frame whose grey plane is its Y plane as stored is lent rather
 * than copied: *lent gets a reference (lent->ref non-NULL) to give back with
 * es_video_in_unlend, and dst is not written. Other frames are copied into dst as above
 * (lent->ref NULL).
 * dst may be NULL, for a caller that sizes a buffer only for a frame that exists (a header
 * alone must not cost the memory of the frames it declares): the next frame is then lent
 * where it can be, else ES_ERR_AGAIN says that it exists (decoded, read ahead into memory
 * grown as its bytes came, or, in a regular file, all there) and is held for the next
 * call, which needs a dst. A frame of raw or y4m input is lent this way only where it is
 * the first from a pipe; EOF and errors come as they would with a dst (a short first frame
 * of a regular file found from the file's size, nothing allocated). */
typedef struct es_video_lent {
  const void *data; /* the grey plane's first row */
  size_t stride;    /* bytes between rows */
  void *ref;        /* the decoded frame, held until es_video_in_unlend */
} es_video_lent;
int es_video_in_read_lend(es_video_in *v, void *dst, size_t dst_stride, es_video_lent *lent,
                          int64_t *pts, double *pts_seconds, char *msg, size_t len);
void es_video_in_unlend(void *ref); /* safe after es_video_in_close */
/* Packets skipped: those the decoder refused (an error for the packet, no frame) and damaged
 * stretches the demuxer skipped. */
int64_t es_video_in_corrupt(const es_video_in *v);
/* Frames delivered that the decoder made despite errors in their data (concealed, as ffmpeg
 * and players show them): AV_FRAME_FLAG_CORRUPT, decode_error_flags, or an error it only
 * logged for the frame's packet. */
int64_t es_video_in_damaged(const es_video_in *v);
/* Error lines libav* logged for the reader (see es_video_in_opts.log). */
int64_t es_video_in_log_lines(const es_video_in *v);
/* 1 when the frame the last successful read delivered is one of those, else 0. */
int es_video_in_frame_damaged(const es_video_in *v);
/* Packets the demuxer flagged corrupt (AV_PKT_FLAG_CORRUPT), given to the decoder all the
 * same as ffmpeg does (what it then finds damaged is counted as above). */
int64_t es_video_in_flagged(const es_video_in *v);
/* Packets before the stream's first keyframe that the decoder dropped (no frame, no error:
 * a stream cut mid-GOP); 0 where it decoded them. */
int64_t es_video_in_prekey(const es_video_in *v);
/* Packets the decoder took and gave no frame for, with no error (H.264 discards frames that
 * come out of order, as after damage that lost a keyframe); known once the stream is
 * drained, 0 before. Counted for H.264, HEVC and MPEG-1/2 video, whose every packet gives a
 * frame; an interlaced frame may be two field packets, so only packets beyond two an
 * interlaced frame count. */
int64_t es_video_in_dropped(const es_video_in *v);
/* Packets the decoder took and gave no frame for, by design, not counted anywhere: those the
 * container marks to be discarded, the leading pictures of an open GOP where decoding starts,
 * HEVC pictures discarded at a join. Known once drained, as es_video_in_dropped. */
int64_t es_video_in_excused(const es_video_in *v);
double es_video_in_copy_ms(const es_video_in *v); /* under ES_TRACE: ms copying planes out of decoded frames, or lending them */
/* The end of the last frame delivered, in the stream's time base: its time stamp plus its
 * duration (the packet's; where it has none, the end the stream states, else one frame of the
 * frame rate); INT64_MIN before any frame. A video output's last frame lasts until there. */
int64_t es_video_in_end_pts(const es_video_in *v);
void es_video_in_close(es_video_in **v);

/* ---- Video and streams out. */
typedef struct es_video_out es_video_out;
typedef struct es_video_out_opts {
  int width, height;
  int fps_num, fps_den, tb_num, tb_den; /* from the input */
  int format;        /* what is written: ES_PIX_RGB24 (heat), ES_PIX_GRAY8, ES_PIX_GRAY16 */
  int f32;           /* stdout only: raw little-endian float32 frames */
  const char *codec; /* NULL: libx264 if present else mpeg4, else the container's own */
  int crf;           /* <0: encoder default */
  const char *preset; /* NULL: encoder default */
  int overwrite;
  const int32_t *display_matrix; /* NULL, or 9 values written as the stream's rotation
                                  * metadata where the container keeps it */
  int sar_num, sar_den;          /* sample aspect ratio of the input; 0 (or invalid): 1:1 */
  int base_num, base_den;        /* the input's base frame rate (es_video_info); 0: fps */
  int field_order;               /* the input's (es_video_info); 0: unknown, written as progressive */
  int ts_discont;                /* the input's (es_video_info): forward jumps over ES_TS_JUMP_S are
                                  * breaks in its clock, closed up to one frame */
  int pix_fmt;                   /* heat's chroma (--pix-fmt): ES_PIX_NONE, the default (4:2:0
                                  * where the encoder takes it, libx264 at an odd size padded to
                                  * the even size above; y4m 4:4:4), ES_PIX_YUV420P or
                                  * ES_PIX_YUV444P (an encoder without it is refused) */
} es_video_out_opts;
/* ffmpeg's -dts_delta_threshold: a larger step forward in a clock that may jump is a break. */
#define ES_TS_JUMP_S 10
/* path "-" = stdout YUV4MPEG2 (heat as 4:4:4, gray8 as mono) or raw f32; a path with a
 * container extension = encoded video (written atomically: temp name, renamed at close). */
int es_video_out_open(es_video_out **out, const char *path, const es_video_out_opts *opts,
                      char *msg, size_t len);
/* The es_pixfmt the writer wants rendered frames in (e.g. ES_PIX_YUV420P for libx264,
 * ES_PIX_YUV444P for y4m heat or --pix-fmt yuv444p, ES_PIX_GRAY8 for mono), or
 * ES_PIX_NONE when it wants the float map (f32). */
int es_video_out_pixfmt(const es_video_out *v);
int es_video_out_write(es_video_out *v, const es_planes *pix, const float *map,
                       size_t map_stride, int64_t pts, char *msg, size_t len);
/* The input's end (its time base, as the pts written): each packet lasts until the next frame,
 * and the last until this end, where it is later; without it (or INT64_MIN) the last lasts
 * one frame of the frame rate. Call it before es_video_out_close. */
void es_video_out_end(es_video_out *v, int64_t end_pts);
/* Flushes the encoder, writes the trailer, renames into place (commit) or removes. */
int es_video_out_close(es_video_out **v, int commit, char *msg, size_t len);

/* "libpng 1.6.39; libavformat 59.27.100, libavcodec ..., libswscale ..." */
int es_io_versions(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* ES_IO_H */
