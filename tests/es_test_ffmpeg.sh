# es_test_ffmpeg.sh - sourced by the shell tests that use FFmpeg: what this FFmpeg can do.
# A minimal build (the GPU machine's shared one) may lack the y4m muxer and demuxer, and has few filters and encoders;
# the cases that need one skip with a note naming it, everything else still runs.
# Needs BIN (the entropy-stream program) for the es_can_* checks.

# ff_has KIND NAME: `ffmpeg -KIND` (muxers, demuxers, filters, encoders, decoders) lists NAME
# (a demuxer line may name several: "matroska,webm").
ff_has() {
  ffmpeg -hide_banner -"$1" 2>/dev/null |
    awk -v n="$2" '{ k = split($2, a, ","); for (i = 1; i <= k; i++) if (a[i] == n) f = 1 } END { exit !f }'
}

# es_can_write_y4m: the library (its libavformat) writes YUV4MPEG2 on standard output.
es_can_write_y4m() {
  head -c 1 /dev/zero | "$BIN" -q - --raw gray8:1x1 -o - >/dev/null 2>&1
}

# es_can_read_y4m: the library reads YUV4MPEG2 on standard input.
es_can_read_y4m() {
  printf 'YUV4MPEG2 W2 H2 F25:1 Ip A1:1 Cmono\nFRAME\n\0\0\0\0' | "$BIN" -q - --stats - >/dev/null 2>&1
}
