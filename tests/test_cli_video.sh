#!/bin/bash
# test_cli_video.sh - video and streams through the CLI (skipped without FFmpeg): a lavfi clip
# of odd size to .mp4 heat (frame count, size, frame rate), to .npy [T,H,W] compared frame by
# frame with the single-image result of the same frame, to a frame directory, y4m stdin to
# y4m stdout into ffmpeg, --format f32 to stdout, --stats per frame, and raw gray8 stdin with
# a short last frame (exit 2, frame number named, earlier frames kept). Without y4m in this
# FFmpeg (a minimal build): raw frames on stdin instead, and -o - / .y4m must fail in one line.
# Also: a FIFO or a link as -o (written into, written through) and names up to NAME_MAX, and
# outputs that fail alone (a full device, ulimit -f, a closed pipe, a frame file in the way):
# the other output kept whole, exit 3, the run stopped only when no output is left.
# A stream that MPEG-TS adds while it is read leaves memory bounded (peak RSS, 600 vs 6000 frames).
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ] || ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
  echo "test_cli_video: skipped (no FFmpeg)"
  exit 77
fi
SEED=${ES_TEST_SEED:-$(( $(date +%s) ^ $$ ))}
echo "test_cli_video: seed $SEED (ES_TEST_SEED to replay)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
FF="ffmpeg -nostdin -v error -y"
# shellcheck source=es_test_ffmpeg.sh
source "$(dirname "$0")/es_test_ffmpeg.sh"
Y4M_FF=0   # the ffmpeg/ffprobe programs write and read y4m
ff_has muxers yuv4mpegpipe && ff_has demuxers yuv4mpegpipe && Y4M_FF=1
Y4M_IN=0   # the library reads y4m on stdin
es_can_read_y4m && Y4M_IN=1
Y4M_OUT=0  # the library writes y4m
es_can_write_y4m && Y4M_OUT=1

# An odd-size clip, stored losslessly in grey so its frames can be extracted exactly.
W=$(( 41 + 2 * (SEED % 12) )); H=$(( 31 + 2 * ((SEED / 13) % 9) )); N=$(( 7 + SEED % 6 ))
echo "clip ${W}x${H}, $N frames at 10 fps"
$FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -vf format=gray -frames:v $N -c:v ffv1 "$T/clip.mkv" \
  || { echo "cannot make the clip"; exit 1; }
probe() { # FILE ENTRIES -> csv values
  ffprobe -v error -count_frames -select_streams v:0 -show_entries "stream=$2" -of csv=p=0 "$1"
}

# .mp4 heat: frames, size (odd), frame rate. libx264 gets 4:2:0 (High profile, what browsers
# play) at the even size above, as H.264 crops 4:2:0 in steps of two only; --pix-fmt yuv444p
# keeps the exact size (High 4:4:4 Predictive, which an odd size once got by default).
"$BIN" -q "$T/clip.mkv" -o "$T/heat.mp4"; rc=$?
[ $rc = 0 ] || fail "clip -> mp4: exit $rc"
got=$(probe "$T/heat.mp4" width,height,nb_read_frames,r_frame_rate)
if ff_has encoders libx264; then
  [ "$got" = "$((W + 1)),$((H + 1)),10/1,$N" ] || fail "heat.mp4: got '$got', want '$((W + 1)),$((H + 1)),10/1,$N'"
  got=$(probe "$T/heat.mp4" profile,pix_fmt)
  [ "$got" = "High,yuv420p" ] || fail "heat.mp4: got '$got', want 'High,yuv420p'"
  # decoded: frames of that size, the added column and row the edge's colour, not black
  got=$($FF -i "$T/heat.mp4" -f rawvideo -pix_fmt gray - | wc -c)
  [ "$got" = $(((W + 1) * (H + 1) * N)) ] || fail "heat.mp4 decoded: $got bytes, want $(((W + 1) * (H + 1) * N))"
  # the first frame's grey bytes (no filter: a minimal FFmpeg has no crop); its last pixel, and
  # its copies right, below and diagonally
  f0=($($FF -i "$T/heat.mp4" -frames:v 1 -f rawvideo -pix_fmt gray - | od -An -v -tu1))
  o=$(((H - 1) * (W + 1) + W - 1))
  c=(${f0[$o]} ${f0[$((o + 1))]} ${f0[$((o + W + 1))]} ${f0[$((o + W + 2))]})
  corner="${c[*]}"
  [ ${#c[@]} = 4 ] && [ $(( (c[1] - c[0]) ** 2 )) -le 16 ] && [ $(( (c[2] - c[0]) ** 2 )) -le 16 ] &&
    [ $(( (c[3] - c[0]) ** 2 )) -le 16 ] ||
    fail "heat.mp4: the padding is not the edge's colour: corner luma $corner"
  "$BIN" -q "$T/clip.mkv" -o "$T/heat444.mp4" --pix-fmt yuv444p; rc=$?
  [ $rc = 0 ] || fail "clip -> mp4 --pix-fmt yuv444p: exit $rc"
  got=$(probe "$T/heat444.mp4" width,height,profile,pix_fmt,nb_read_frames)
  [ "$got" = "High 4:4:4 Predictive,$W,$H,yuv444p,$N" ] ||
    fail "heat444.mp4: got '$got', want 'High 4:4:4 Predictive,$W,$H,yuv444p,$N'"
else
  [ "$got" = "$W,$H,10/1,$N" ] || fail "heat.mp4: got '$got', want '$W,$H,10/1,$N'"
fi
# MPEG-4 part 2 keeps the odd size in 4:2:0; it has no 4:4:4 (refused, exit 1, nothing left).
"$BIN" -q "$T/clip.mkv" -o "$T/heat-m4.mp4" --codec mpeg4; rc=$?
got=$(probe "$T/heat-m4.mp4" width,height,pix_fmt)
[ $rc = 0 ] && [ "$got" = "$W,$H,yuv420p" ] || fail "clip -> mpeg4: exit $rc, got '$got', want '$W,$H,yuv420p'"
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/m4-444.mp4" --codec mpeg4 --pix-fmt yuv444p 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/m4-444.mp4: --pix-fmt yuv444p: encoder mpeg4 does not take it" ] &&
  [ ! -e "$T/m4-444.mp4" ] || fail "mpeg4 --pix-fmt yuv444p: exit $rc, '$msg'"
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/nv12.mp4" --pix-fmt nv12 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: --pix-fmt nv12: must be yuv420p or yuv444p" ] ||
  fail "--pix-fmt nv12: exit $rc, '$msg'"
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/g.mp4" --format gray8 --pix-fmt yuv420p 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/g.mp4: --pix-fmt applies to heat video only (--format heat)" ] &&
  [ ! -e "$T/g.mp4" ] || fail "gray8 --pix-fmt: exit $rc, '$msg'"
ls -A "$T" | grep -q '^\.' && fail "temporaries left: $(ls -A "$T")"
"$BIN" -q "$T/clip.mkv" -o "$T/heat.mkv" --codec mpeg4 --format gray8; rc=$?
[ $rc = 0 ] || fail "clip -> mkv mpeg4 gray8: exit $rc"
got=$(probe "$T/heat.mkv" codec_name,width,height,nb_read_frames)
[ "$got" = "mpeg4,$W,$H,$N" ] || fail "heat.mkv: got '$got', want 'mpeg4,$W,$H,$N'"

# .avi from Matroska (time base 1/1000): AVI counts frames at its time base, so the output's
# must be one frame (a bug once gave 1000/1 fps and empty frames between the real ones).
if ff_has muxers avi && ff_has demuxers avi; then
  "$BIN" -q "$T/clip.mkv" -o "$T/heat.avi"; rc=$?
  [ $rc = 0 ] || fail "clip -> avi: exit $rc"
  got=$(probe "$T/heat.avi" avg_frame_rate,nb_frames,nb_read_frames)
  [ "$got" = "10/1,$N,$N" ] || fail "heat.avi: got '$got', want '10/1,$N,$N'"
else
  echo "test_cli_video: avi case skipped: no avi muxer/demuxer in this FFmpeg"
fi

# Container and codec, against the ffmpeg program: what ffmpeg writes is written (exit 0, the
# same codec); what it refuses is a usage error (exit 1, one line "the MUXER container cannot
# hold CODEC video"), nothing left behind. Bugs once refused png in Matroska (its query knows
# native ids only) and let ogv, y4m and mov refuse at the header with exit 3.
$FF -f lavfi -i "testsrc=size=64x48:rate=10" -frames:v 4 -pix_fmt yuv420p -c:v ffv1 "$T/even.mkv" \
  || fail "cannot make even.mkv"
pair() { # EXT MUXER CODEC
  local ext=$1 mux=$2 codec=$3 ref="$T/pairs/ref.$1" out="$T/pairs/$3.$1" msg rc want
  if ! ff_has muxers "$mux" || ! ff_has encoders "$codec"; then
    echo "test_cli_video: .$ext with $codec skipped: no $mux muxer or $codec encoder in this FFmpeg"
    return
  fi
  mkdir -p "$T/pairs"
  if $FF -i "$T/even.mkv" -c:v "$codec" "$ref" 2>/dev/null; then
    "$BIN" -q "$T/even.mkv" -o "$out" --codec "$codec"; rc=$?
    [ $rc = 0 ] || fail ".$ext with $codec: exit $rc, ffmpeg writes it"
    want=$(probe "$ref" codec_name,nb_read_frames)
    got=$(probe "$out" codec_name,nb_read_frames)
    [ "$got" = "$want" ] || fail ".$ext with $codec: got '$got', want '$want' (as ffmpeg's)"
  else
    msg=$("$BIN" -q "$T/even.mkv" -o "$out" --codec "$codec" 2>&1); rc=$?
    [ $rc = 1 ] || fail ".$ext with $codec: exit $rc, want 1 ($msg)"
    [ "$msg" = "entropy-stream: $out: the $mux container cannot hold $codec video" ] \
      || fail ".$ext with $codec: message '$msg'"
  fi
  echo ".$ext with $codec: exit $rc"
  rm -f "$T/pairs/ref.$ext" "$out"
  [ -z "$(ls -A "$T/pairs")" ] || fail ".$ext with $codec left $(ls -A "$T/pairs")"
}
pair mkv matroska png
# Codecs with a QuickTime tag only: Matroska writes them as V_QUICKTIME (refused, exit 1, before).
pair mkv matroska gif
pair ts mpegts libx264
pair ogv ogv mpeg4
pair ogv ogv libx264
pair mov mov libvpx-vp9
pair mp4 mp4 ffv1
pair webm webm mpeg4
# mjpeg lists yuv420p but refuses it in limited range: heat was exit 3 "encoder mjpeg refused".
pair avi avi mjpeg
# Encoders that take a palette only (smc) go through a fixed palette, as ffmpeg's scale filter
# makes one (exit 3 "cannot convert rgb24 to pal8" before, after the temporary was made); and
# grey into one whose best grey format is pal8 (zmbv) goes through a grey palette, losslessly.
pair mov mov smc
if ff_has encoders zmbv && ff_has muxers avi && ff_has demuxers avi && [ $Y4M_OUT = 1 ] && [ $Y4M_FF = 1 ]; then
  msg=$("$BIN" -q "$T/even.mkv" -o "$T/zmbv.avi" --codec zmbv --format gray8 2>&1); rc=$?
  [ $rc = 0 ] || fail "zmbv gray8: exit $rc ($msg)"
  got=$(probe "$T/zmbv.avi" codec_name,pix_fmt,nb_read_frames)
  [ "$got" = "zmbv,pal8,4" ] || fail "zmbv gray8: got '$got', want zmbv,pal8,4"
  "$BIN" -q "$T/even.mkv" --format gray8 -o - | $FF -i - -f rawvideo -pix_fmt gray "$T/zmbv-want.gray"
  # (as rgb24: libswscale's pal8 to gray is off by one here and there; r = g = b = the grey)
  $FF -i "$T/zmbv.avi" -f rawvideo -pix_fmt rgb24 "$T/zmbv-got.rgb"
  "$PY" -c "
import sys, numpy as np
a = np.fromfile(sys.argv[1], np.uint8); b = np.fromfile(sys.argv[2], np.uint8).reshape(-1, 3)
sys.exit(0 if a.size and a.size == len(b) and (b == a[:, None]).all() else 1)" "$T/zmbv-want.gray" "$T/zmbv-got.rgb" ||
    fail "zmbv gray8: the decoded frames differ from the gray8 maps"
  rm -f "$T/zmbv.avi" "$T/zmbv-want.gray" "$T/zmbv-got.rgb"
fi
# An encoder of hardware frames only: refused before anything is made (exit 1, one line).
if ff_has encoders h264_vaapi; then
  msg=$("$BIN" -q "$T/even.mkv" -o "$T/pairs/va.mkv" --codec h264_vaapi 2>&1); rc=$?
  [ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/pairs/va.mkv: --codec h264_vaapi: the encoder takes only vaapi frames, which cannot be made here" ] ||
    fail "--codec h264_vaapi: exit $rc, want 1 ($msg)"
  [ -z "$(ls -A "$T/pairs")" ] || fail "--codec h264_vaapi left $(ls -A "$T/pairs")"
fi
[ $Y4M_OUT = 1 ] && pair y4m yuv4mpegpipe libx264
[ $Y4M_OUT = 1 ] && pair y4m yuv4mpegpipe mpeg4
# No --codec, a container that holds neither libx264 nor mpeg4: its own default codec, as
# ffmpeg picks it (a bug once refused .webm and failed .ogv at the header); where this
# FFmpeg has no encoder for it, a usage error in one line.
default_for() { # EXT MUXER
  local ext=$1 mux=$2 ref="$T/pairs/ref.$1" out="$T/pairs/default.$1" msg rc want got
  ff_has muxers "$mux" || { echo "test_cli_video: default .$ext skipped: no $mux muxer"; return; }
  mkdir -p "$T/pairs"
  msg=$("$BIN" -q "$T/even.mkv" -o "$out" 2>&1); rc=$?
  if $FF -i "$T/even.mkv" "$ref" 2>/dev/null; then
    [ $rc = 0 ] || fail "default .$ext: exit $rc, ffmpeg writes it ($msg)"
    want=$(probe "$ref" codec_name,nb_read_frames)
    got=$(probe "$out" codec_name,nb_read_frames)
    [ "$got" = "$want" ] || fail "default .$ext: got '$got', want '$want' (as ffmpeg's)"
  else
    [ $rc = 1 ] || fail "default .$ext: exit $rc, want 1 ($msg)"
    case "$msg" in "entropy-stream: $out: the $mux container cannot hold "*" video"*) ;;
      *) fail "default .$ext: message '$msg'";; esac
    [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "default .$ext: want one line, got: $msg"
  fi
  echo "default .$ext: exit $rc ${got:-$msg}"
  rm -f "$ref" "$out"
  [ -z "$(ls -A "$T/pairs")" ] || fail "default .$ext left $(ls -A "$T/pairs")"
}
default_for webm webm
default_for ogv ogv

# Animated GIF and APNG, as ffmpeg writes heat.gif from the same frames: "unknown output
# type" before. Their muxers take their own codec only, which the gif muxer checks in its
# header alone: the default-codec probe (muxer_takes) tries the header too, or libx264 was
# taken and the header failed (exit 3).
for ext in gif apng; do
  ff_has muxers $ext && ff_has encoders $ext || { echo "test_cli_video: -o heat.$ext skipped: no $ext muxer or encoder"; continue; }
  "$BIN" -q "$T/even.mkv" -o "$T/pairs/heat.$ext" 2>"$T/ext.err"; rc=$?
  got=$(probe "$T/pairs/heat.$ext" codec_name,nb_read_frames)
  [ $rc = 0 ] && [ "$got" = "$ext,4" ] || fail "-o heat.$ext: exit $rc, got '$got', want $ext,4: $(cat "$T/ext.err")"
  rm -f "$T/pairs/heat.$ext"
done

# .npy [T,H,W] against each frame extracted and computed as an image.
K=$(( 3 + 2 * (SEED % 4) ))
"$BIN" -q "$T/clip.mkv" -o "$T/v.npy" -w $K --border reflect; rc=$?
[ $rc = 0 ] || fail "clip -> npy: exit $rc"
mkdir "$T/png"
$FF -i "$T/clip.mkv" -pix_fmt gray "$T/png/f%03d.png" || fail "cannot extract frames"
i=0
for f in "$T"/png/f*.png; do
  "$BIN" -q "$f" -o "$T/png/$(basename "$f" .png).npy" -w $K --border reflect || fail "$f: exit $?"
  i=$((i + 1))
done
[ $i = $N ] || fail "ffmpeg extracted $i frames, want $N"
"$PY" - "$T/v.npy" "$T"/png/f*.npy <<'EOF' || fail "video .npy differs from the per-frame images"
import sys
import numpy as np
v = np.load(sys.argv[1])
frames = [np.load(p) for p in sys.argv[2:]]
assert v.dtype == np.float32 and v.shape == (len(frames),) + frames[0].shape, (v.shape, len(frames), frames[0].shape)
for t, f in enumerate(frames):
    assert np.array_equal(v[t], f), 'frame %d differs by %g' % (t, np.abs(v[t] - f).max())
print('npy: %d frames identical to the single-image maps' % len(frames))
EOF

# A frame directory.
"$BIN" -q "$T/clip.mkv" -o "$T/frames" --format gray16; rc=$?
[ $rc = 0 ] || fail "clip -> frame directory: exit $rc"
[ "$(ls "$T/frames" | wc -l)" = $N ] || fail "frame directory holds $(ls "$T/frames" | wc -l) files, want $N"
[ -f "$T/frames/frame_000000.png" ] && [ -f "$T/frames/frame_$(printf %06d $((N - 1))).png" ] \
  || fail "frame names: $(ls "$T/frames" | tr '\n' ' ')"
got=$(probe "$T/frames/frame_000000.png" width,height,pix_fmt)
case "$got" in "$W,$H,gray16"*) ;; *) fail "frame_000000.png: $got";; esac
# Again with -n, one frame file gone: that one written, the others kept, and the summary
# counts them apart instead of claiming it wrote them all.
rm "$T/frames/frame_000001.png"
msg=$("$BIN" --no-progress -n "$T/clip.mkv" -o "$T/frames" --format gray16 2>&1); rc=$?
[ $rc = 0 ] || fail "-n into the frame directory: exit $rc ($msg)"
[ -f "$T/frames/frame_000001.png" ] || fail "-n did not write the missing frame"
case "$msg" in "entropy-stream: $N frames ($((N - 1)) skipped: exist), ${W}x${H}, "*) ;; *) fail "-n frame summary: $msg";; esac

# Stats per frame: N records, index 0..N-1, pts 0, 0.1, ...
"$BIN" -q "$T/clip.mkv" --stats "$T/v.csv" -w $K --border reflect; rc=$?
[ $rc = 0 ] || fail "clip -> stats: exit $rc"
# global_entropy is FFmpeg's entropy filter on each frame's grey plane (issue 32), whatever -w.
if ff_has filters entropy && ff_has filters metadata; then
  $FF -i "$T/clip.mkv" -vf "entropy,metadata=print:file=$T/v-ff.txt" -f null - ||
    fail "ffmpeg's entropy filter on the clip failed"
else
  echo "test_cli_video: global_entropy against ffmpeg skipped: no entropy or metadata filter in this FFmpeg"
  : > "$T/v-ff.txt"
fi
"$PY" - "$T/v.csv" "$T/v.npy" "$T/clip.mkv" "$T/v-ff.txt" <<'EOF' || fail "video stats wrong"
import csv, sys
import numpy as np
rows = list(csv.DictReader(open(sys.argv[1])))
v = np.load(sys.argv[2]).astype(np.float64)
ff = [l.split('=', 1)[1] for l in open(sys.argv[4]).read().splitlines()
      if l.startswith('lavfi.entropy.entropy.normal.Y=')]
has_ff = open(sys.argv[4]).read() != ''  # empty: this FFmpeg has no entropy filter
assert len(rows) == v.shape[0] and (not has_ff or len(ff) == len(rows)), (len(rows), v.shape, len(ff))
for t, r in enumerate(rows):
    # the name column holds the input's name (it was empty: joined CSVs could not be told apart)
    assert r['name'] == sys.argv[3], r['name']
    assert not has_ff or '%f' % float(r['global_entropy']) == ff[t], (t, r['global_entropy'], ff[t])
    assert int(r['index']) == t, r['index']
    assert abs(float(r['pts']) - t / 10) < 1e-6, r['pts']
    assert abs(float(r['mean']) - v[t].mean()) < 1e-4, (t, r['mean'], v[t].mean())
print('stats: %d rows' % len(rows))
EOF

# The same pts through y4m (time base 1/10, one frame): frame t at exactly t/10 s, the double
# nearest (3 * 0.1 gave 0.30000000000000004 where the .mkv's 1/1000 gave 0.3).
if [ $Y4M_IN = 1 ] && [ $Y4M_OUT = 1 ]; then
  "$BIN" -q "$T/clip.mkv" --format gray8 -o - | "$BIN" -q - --stats "$T/y4m-pts.csv" ||
    fail "clip -> y4m -> stats: exit $?"
  "$PY" - "$T/y4m-pts.csv" <<'EOF' || fail "y4m stats pts not t/10, or not named -"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = [r['pts'] for t, r in enumerate(rows) if float(r['pts']) != t / 10]
assert rows and not bad, bad
assert all(r['name'] == '-' for r in rows), [r['name'] for r in rows]
EOF
fi

# y4m in on stdin, y4m out on stdout, into ffmpeg.
if [ $Y4M_FF = 1 ] && [ $Y4M_IN = 1 ] && [ $Y4M_OUT = 1 ]; then
  got=$($FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v $N -pix_fmt yuv420p -f yuv4mpegpipe - \
    | "$BIN" -q - -o - | ffprobe -v error -count_frames -show_entries stream=width,height,nb_read_frames,pix_fmt -of csv=p=0 -)
  case "$got" in "$W,$H,yuv444p"*",$N") ;; *) fail "y4m pipe: got '$got', want $W,$H,yuv444p...,$N";; esac
  # y4m stays 4:4:4 (a lossless intermediate) unless --pix-fmt yuv420p asks: the odd size kept
  "$BIN" -q "$T/clip.mkv" -o "$T/h420.y4m" --pix-fmt yuv420p || fail "y4m --pix-fmt yuv420p: exit $?"
  got=$(probe "$T/h420.y4m" width,height,pix_fmt,nb_read_frames)
  case "$got" in "$W,$H,yuv420p"*",$N") ;; *) fail "h420.y4m: got '$got', want $W,$H,yuv420p...,$N";; esac
  got=$($FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v $N -pix_fmt yuv420p -f yuv4mpegpipe - \
    | "$BIN" -q - --format gray8 -o - | ffprobe -v error -count_frames -show_entries stream=nb_read_frames,pix_fmt -of csv=p=0 -)
  case "$got" in gray*",$N") ;; *) fail "y4m gray8 pipe: got '$got', want gray,$N";; esac
else
  echo "test_cli_video: y4m pipe skipped: no y4m muxer/demuxer in this FFmpeg (program $Y4M_FF, library in $Y4M_IN out $Y4M_OUT); raw frames through the pipe instead"
  # The same pipe with raw frames: ffmpeg's rawvideo into stdin, float32 out on stdout.
  got=$($FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v $N -pix_fmt gray -f rawvideo - \
    | "$BIN" -q - --raw gray8:${W}x${H}@10 --format f32 -o - | wc -c)
  [ "$got" = $(( N * W * H * 4 )) ] || fail "raw pipe: $got bytes on stdout, want $(( N * W * H * 4 ))"
  if [ $Y4M_IN = 0 ]; then
    # y4m on stdin that the library cannot read: an input error that says why, in one line.
    msg=$(printf 'YUV4MPEG2 W2 H2 F25:1 Ip A1:1 Cmono\nFRAME\n\0\0\0\0' | "$BIN" -q - --stats - 2>&1 >/dev/null); rc=$?
    [ $rc = 2 ] || fail "y4m stdin without the demuxer: exit $rc, want 2 ($msg)"
    case "$msg" in "entropy-stream: -: "*"no yuv4mpegpipe demuxer"*) ;; *) fail "y4m stdin without the demuxer: message '$msg'";; esac
    [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "y4m stdin without the demuxer: want one line, got: $msg"
  fi
fi

# An unknown x264 preset: exit 1 and exactly one line on stderr (libx264 itself prints its
# own error line straight to stderr when it is handed one, so it must be refused before).
if ffmpeg -hide_banner -encoders 2>/dev/null | grep -q " libx264 "; then
  "$BIN" -q "$T/clip.mkv" -o "$T/p.mp4" --preset warp9 2>"$T/p.err"; rc=$?
  [ $rc = 1 ] || fail "--preset warp9: exit $rc, want 1"
  [ "$(wc -l <"$T/p.err")" = 1 ] || fail "--preset warp9: stderr is not one line: $(cat "$T/p.err")"
  grep -q "^entropy-stream: .*--preset warp9: not a preset of encoder libx264" "$T/p.err" ||
    fail "--preset warp9: message: $(cat "$T/p.err")"
  [ ! -e "$T/p.mp4" ] || fail "--preset warp9 left $T/p.mp4"
fi

# Encoders that print to stderr past libavutil's log: libx265 (its banner and settings, 27
# lines, and its own error lines beside ours) and SVT-AV1 (12 lines). With -q nothing is
# printed; a refusal is our one line.
# libx265 3.5 leaks 1168 bytes of its own at every encoder (ffmpeg's too, under LD_PRELOAD
# libasan): LeakSanitizer must not count it here.
$FF -f lavfi -i "testsrc=size=64x64:rate=10" -frames:v 3 -c:v ffv1 "$T/sq.mkv" || fail "cannot make sq.mkv"
X265_ASAN="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
for c in libx265 libsvtav1; do
  ff_has encoders $c || { echo "test_cli_video: --codec $c skipped: no such encoder"; continue; }
  ASAN_OPTIONS=$X265_ASAN "$BIN" -q "$T/sq.mkv" -o "$T/$c.mkv" --codec $c 2>"$T/$c.err"; rc=$?
  [ $rc = 0 ] && [ ! -s "$T/$c.err" ] || fail "--codec $c -q: exit $rc, stderr: $(head -c 300 "$T/$c.err")"
  [ "$(probe "$T/$c.mkv" nb_read_frames)" = 3 ] || fail "--codec $c: $(probe "$T/$c.mkv" nb_read_frames) frames, want 3"
done
if ff_has encoders libx265; then
  msg=$(ASAN_OPTIONS=$X265_ASAN "$BIN" -q "$T/sq.mkv" -o "$T/x265-63.mkv" --codec libx265 --crf 63 2>&1); rc=$?
  [ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/x265-63.mkv: --crf 63: refused by encoder libx265" ] ||
    fail "--codec libx265 --crf 63: exit $rc, want 1 and one line: $msg"
  # Above 2 MP a frame the encoder opens at the first frame, and a small one checks the
  # options at open: the same refusal, before any frame.
  msg=$(head -c $((2050 * 1026)) /dev/zero | ASAN_OPTIONS=$X265_ASAN "$BIN" -q - --raw gray8:2050x1026 \
    -o "$T/x265-63-big.mkv" --codec libx265 --crf 63 2>&1); rc=$?
  [ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/x265-63-big.mkv: --crf 63: refused by encoder libx265" ] ||
    fail "--codec libx265 --crf 63, 2050x1026: exit $rc, want 1 and one line: $msg"
fi

# A .y4m output file: the same uncompressed frames as stdout, byte for byte (a bug once sent
# libx264 packets into the y4m muxer, which refused them).
if [ $Y4M_OUT = 1 ]; then
  "$BIN" -q "$T/clip.mkv" -o "$T/out.y4m"; rc=$?
  [ $rc = 0 ] || fail ".y4m file output: exit $rc"
  "$BIN" -q "$T/clip.mkv" -o - > "$T/stdout.y4m"
  cmp -s "$T/out.y4m" "$T/stdout.y4m" || fail ".y4m file differs from the y4m on stdout"
  # The frame rate, not Matroska's time base 1/1000 (a bug once wrote F1000:1).
  head -c 80 "$T/stdout.y4m" | head -n 1 | grep -q " F10:1 " ||
    fail "y4m header: $(head -c 80 "$T/stdout.y4m" | head -n 1), want F10:1"
  if [ $Y4M_FF = 1 ]; then
    got=$(ffprobe -v error -count_frames -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$T/out.y4m")
    [ "$got" = "$W,$H,$N" ] || fail ".y4m file: got '$got', want $W,$H,$N"
  else
    echo "test_cli_video: .y4m file probe skipped: no y4m demuxer in the ffprobe program"
  fi
else
  # The library cannot write y4m: -o - and .y4m are output errors (exit 3), one line each,
  # nothing left behind.
  echo "test_cli_video: .y4m output skipped: no y4m muxer in this FFmpeg (checking the error instead)"
  for o in "$T/out.y4m" -; do
    msg=$("$BIN" -q "$T/clip.mkv" -o "$o" 2>&1 >/dev/null); rc=$?
    [ $rc = 3 ] || fail "y4m output $o without the muxer: exit $rc, want 3 ($msg)"
    [ "$msg" = "entropy-stream: $o: libavformat has no yuv4mpegpipe muxer" ] \
      || fail "y4m output $o without the muxer: message '$msg'"
  done
  [ -e "$T/out.y4m" ] && fail "y4m output without the muxer left $T/out.y4m"
  ls -A "$T" | grep -q '^\.' && fail "temporaries left: $(ls -A "$T")"
fi

# Raw float32 on stdout: T*H*W*4 bytes, the same values as the .npy.
"$BIN" -q "$T/clip.mkv" --format f32 -o - -w $K --border reflect > "$T/v.f32"; rc=$?
[ $rc = 0 ] || fail "f32 to stdout: exit $rc"
[ "$(stat -c %s "$T/v.f32")" = $(( N * W * H * 4 )) ] || fail "f32 stdout: $(stat -c %s "$T/v.f32") bytes, want $(( N * W * H * 4 ))"
"$PY" -c "
import sys, numpy as np
a = np.fromfile('$T/v.f32', '<f4'); b = np.load('$T/v.npy').ravel()
sys.exit(0 if a.shape == b.shape and np.array_equal(a, b) else 1)" || fail "f32 stdout differs from the .npy"

# Raw gray8 on stdin with a short last frame: exit 2, the frame named, earlier frames kept.
RW=$(( 13 + SEED % 7 )); RH=$(( 9 + SEED % 5 )); RN=$(( 3 + SEED % 4 ))
head -c $(( RW * RH * RN + RW * RH / 2 )) /dev/urandom > "$T/raw.bin"
msg=$("$BIN" -q - --raw gray8:${RW}x${RH}@12.5 -o "$T/raw.npy" < "$T/raw.bin" 2>&1); rc=$?
[ $rc = 2 ] || fail "short raw frame: exit $rc, want 2 ($msg)"
[ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "short raw frame: want one line, got: $msg"
case "$msg" in "entropy-stream: -: "*"frame $RN"*) ;; *) fail "short raw frame message does not name frame $RN: $msg";; esac
"$PY" -c "
import numpy as np, sys
a = np.load('$T/raw.npy'); print('raw npy', a.shape)
sys.exit(0 if a.shape == ($RN, $RH, $RW) else 1)" || fail "short raw frame: earlier frames not kept"
# The same frames whole: exit 0.
head -c $(( RW * RH * RN )) "$T/raw.bin" | "$BIN" -q - --raw gray8:${RW}x${RH} -o "$T/raw2.npy"; rc=$?
[ $rc = 0 ] || fail "whole raw frames: exit $rc"
cmp -s "$T/raw.npy" "$T/raw2.npy" || fail "raw frames give different maps with and without a short tail"
# A rate as FFmpeg writes it (30000/1001, 30000:1001): frame 2 at 2002/30000 s.
for rate in 30000/1001 30000:1001; do
  t2=$(head -c $(( RW * RH * 3 )) "$T/raw.bin" | "$BIN" -q - --raw gray8:${RW}x${RH}@$rate --stats - |
       awk -F, 'NR == 4 { print $3 }')
  "$PY" -c "import sys; sys.exit(0 if abs(float('${t2:-nan}') - 2002 / 30000) < 1e-6 else 1)" ||
    fail "--raw @$rate: frame 2 at '$t2' s, want $(( 2002 ))/30000"
done
# Standard input redirected from the very file named as an output: refused as a named input
# is, even with -y (it was replaced by the output, exit 0), for -o, a frame and --stats.
head -c $(( RW * RH * 2 )) "$T/raw.bin" > "$T/self.npy"; cp "$T/self.npy" "$T/self.keep"
mkdir "$T/selfdir"; cp "$T/self.npy" "$T/selfdir/frame_000000.npy"; cp "$T/self.npy" "$T/self.csv"
for args in "-o $T/self.npy" "--format f32 -o $T/selfdir" "--stats $T/self.csv"; do
  f=${args##* }; [ -d "$f" ] && f=$f/frame_000000.npy
  msg=$("$BIN" -q -y - --raw gray8:${RW}x${RH} $args < "$f" 2>&1); rc=$?
  [ $rc = 1 ] && [ "$msg" = "entropy-stream: $f: is the input itself (choose another output)" ] ||
    fail "stdin from the output ($args): exit $rc, want 1 ($msg)"
  cmp -s "$T/self.keep" "$f" || fail "stdin from the output ($args): the input was replaced"
done
# Standard output appended to the input itself ('in -o - >> in'): the run read what it wrote
# and never ended (frames of the input's size go on as one stream), filling the disk; --stats
# - >> in appended text to the input. Refused as cat refuses it: exit 1, one line, the input
# as it was. (timeout: before the fix this ran until killed.)
cp "$T/self.keep" "$T/selfo.raw"
msg=$(timeout 20 "$BIN" -q - --raw gray8:${RW}x${RH} --format f32 -o - < "$T/selfo.raw" 2>&1 >> "$T/selfo.raw"); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: -: standard output is the file on standard input (choose another output)" ] ||
  fail "-o - appended to stdin's file: exit $rc, want 1 ($msg)"
cmp -s "$T/self.keep" "$T/selfo.raw" || fail "-o - appended to stdin's file: the input changed"
cp "$T/clip.mkv" "$T/selfo.mkv"
for args in "-o -" "--stats -"; do
  msg=$(timeout 20 "$BIN" -q "$T/selfo.mkv" $args 2>&1 >> "$T/selfo.mkv"); rc=$?
  [ $rc = 1 ] && [ "$msg" = "entropy-stream: -: standard output is the input $T/selfo.mkv itself (choose another output)" ] ||
    fail "$args appended to the input: exit $rc, want 1 ($msg)"
  cmp -s "$T/clip.mkv" "$T/selfo.mkv" || fail "$args appended to the input: the input changed"
done
# 16-bit raw.
head -c $(( RW * RH * 2 * 2 )) /dev/urandom | "$BIN" -q - --raw gray16le:${RW}x${RH} -L 4096 -o "$T/raw16.npy"; rc=$?
[ $rc = 0 ] || fail "raw gray16le: exit $rc"

# Existing video output refused; a video into a .png is a usage error; bad video input exit 2.
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/heat.mp4" 2>&1); rc=$?
[ $rc = 3 ] || fail "existing mp4: exit $rc, want 3"
[ "$msg" = "entropy-stream: $T/heat.mp4: exists (use -y to overwrite, -n to skip)" ] || fail "existing mp4 message: $msg"
"$BIN" -q -y "$T/clip.mkv" -o "$T/heat.mp4" || fail "-y over mp4: exit $?"
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/x.png" 2>&1); rc=$?
[ $rc = 1 ] || fail "video -> png: exit $rc, want 1 ($msg)"
head -c 5000 /dev/urandom > "$T/noise.mp4"
msg=$("$BIN" -q "$T/noise.mp4" -o "$T/noise.npy" 2>&1); rc=$?
[ $rc = 2 ] || fail "noise.mp4: exit $rc, want 2 ($msg)"
[ -e "$T/noise.npy" ] && fail "noise.mp4 left an output"

# Output that cannot be created: exit 3, nothing left.
printf 'x' > "$T/afile"
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/afile/x.mp4" 2>&1); rc=$?
[ $rc = 3 ] || fail "mp4 under a regular file: exit $rc, want 3 ($msg)"
case "$msg" in "entropy-stream: $T/afile/x.mp4: "?*) ;; *) fail "mp4 output error message: $msg";; esac
# With --stats (opened first): an output not opened ends the run before any frame, and the
# statistics file, holding nothing computed, goes too (README).
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/afile/x.mp4" --stats "$T/xo.csv" 2>&1); rc=$?
[ $rc = 3 ] || fail "mp4 under a regular file, with --stats: exit $rc, want 3 ($msg)"
ls -A "$T" | grep -q 'xo\.csv' && fail "mp4 under a regular file, with --stats: left $(ls -A "$T" | grep xo)"
# A statistics file that cannot be made leaves no frame directory behind (an empty one was
# left: the directory was made first), as a batch leaves none; inside it, it is made first.
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/nodir" --stats "$T/afile/s.csv" 2>&1); rc=$?
[ $rc = 3 ] || fail "frames with an unwritable --stats: exit $rc, want 3 ($msg)"
[ -e "$T/nodir" ] && fail "frames with an unwritable --stats: $T/nodir left behind"
"$BIN" -q "$T/clip.mkv" -o "$T/indir" --stats "$T/indir/s.csv" && [ "$(wc -l < "$T/indir/s.csv")" = $((N + 1)) ] ||
  fail "frames with --stats inside their directory: exit $?"
# Inside it, a --stats that cannot be made (a subdirectory that is not there): the frame
# directory, made first for it, was left behind empty (with the new parents), exit 3.
msg=$("$BIN" -q "$T/clip.mkv" -o "$T/fnew/frames" --stats "$T/fnew/frames/sub/s.csv" 2>&1); rc=$?
[ $rc = 3 ] || fail "frames with --stats in a missing subdirectory of their directory: exit $rc, want 3 ($msg)"
[ -e "$T/fnew" ] && fail "frames with --stats in a missing subdirectory of their directory: $(find "$T/fnew") left behind"

# Corrupt packets in the middle of a video: skipped and counted, the rest kept, exit 0.
$FF -f lavfi -i testsrc=size=96x64:rate=10 -frames:v 30 -c:v mpeg4 -g 5 "$T/c.avi" || fail "cannot make c.avi"
"$PY" - "$T/c.avi" "$T/cc.avi" <<'EOF'
import random, sys
b = bytearray(open(sys.argv[1], 'rb').read())
random.seed(3)
for i in range(len(b) // 3, len(b) // 3 + 400):
    b[i] = random.randrange(256)
open(sys.argv[2], 'wb').write(bytes(b))
EOF
msg=$("$BIN" "$T/cc.avi" -o "$T/cc.npy" 2>&1); rc=$?
echo "corrupt avi: exit $rc: $msg"
[ $rc = 0 ] || fail "corrupt packets: exit $rc, want 0 ($msg)"
n=$("$PY" -c "import numpy as np; print(np.load('$T/cc.npy').shape[0])")
[ "$n" -ge 20 ] && [ "$n" -le 30 ] || fail "corrupt packets: $n frames kept"
case "$msg" in *"$n frames"*) ;; *) fail "summary does not give the $n frames written: $msg";; esac
[ "$n" = 30 ] || case "$msg" in *corrupt*) ;; *) fail "frames lost but no corrupt count in the summary: $msg";; esac

# Streams whose size is known only once a decoder has looked (H.264 in MPEG-TS, a raw H.264
# stream) and deep video read at its own depth: the default --max-pixels (2^31) once went to
# the decoders as an option they refuse (most 2^31 - 1), which left these "0x0" and 8-bit.
if ff_has encoders libx264 && ff_has muxers mpegts && ff_has muxers h264; then
  $FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v $N -c:v libx264 "$T/p.ts" &&
    $FF -i "$T/p.ts" -c copy "$T/p.h264" || fail "cannot make p.ts / p.h264"
  for f in p.ts p.h264; do
    msg=$("$BIN" -q "$T/$f" --stats "$T/$f.csv" 2>&1); rc=$?
    [ $rc = 0 ] || fail "$f: exit $rc ($msg)"
    [ "$(wc -l < "$T/$f.csv" 2>/dev/null)" = $((N + 1)) ] || fail "$f: $(wc -l < "$T/$f.csv") stats lines, want $((N + 1))"
  done
else
  echo "H.264 in MPEG-TS: skipped (this ffmpeg lacks libx264, mpegts or h264)"
fi

# A stream that MPEG-TS adds while it is read (a later PMT; damage can read as one) is probed
# as it comes, and libavformat holds back every packet until that ends: up to 5 MB of payload,
# each packet keeping its 200 KB demuxer buffer. A damaged 64x48 .ts of 30000 frames peaked at
# 191 MB against 54 MB for 3000. Here a PMT after frame 300 adds a private stream with one PES
# of junk: 6000 frames of 32x32 took 23 MB more than 600 (the whole file held back). Now the
# probing is cut short after find_stream_info: less than 8 MB apart, every frame kept.
if ff_has encoders mpeg2video && ff_has muxers mpegts && ff_has demuxers mpegts; then
  for n in 600 6000; do
    $FF -f lavfi -i "testsrc=size=32x32:rate=25" -frames:v $n -c:v mpeg2video -f mpegts "$T/late$n-src.ts" ||
      fail "cannot make late$n-src.ts"
    "$PY" - "$T/late$n-src.ts" "$T/late$n.ts" 300 <<'PYEOF' || fail "cannot make late$n.ts"
import sys
src, dst, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
pk = [data[i:i + 188] for i in range(0, len(data) - 187, 188)]
def pid(p): return ((p[1] & 0x1F) << 8) | p[2]
def crc32_mpeg(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) & 0xFFFFFFFF if c & 0x80000000 else (c << 1) & 0xFFFFFFFF
    return c
def section(p):  # the section that a payload-unit-start packet begins
    off = 4 + (1 + p[4] if p[3] & 0x20 else 0)
    off += 1 + p[off]
    return p[off:off + 3 + (((p[off + 1] & 0x0F) << 8) | p[off + 2])]
pat = section(next(p for p in pk if pid(p) == 0 and p[1] & 0x40))
pmt_pid = ((pat[10] & 0x1F) << 8) | pat[11]
pmt = bytearray(section(next(p for p in pk if pid(p) == pmt_pid and p[1] & 0x40))[:-4])
pil = ((pmt[10] & 0x0F) << 8) | pmt[11]
video = ((pmt[13 + pil] & 0x1F) << 8) | pmt[14 + pil]  # its first stream
NEW = 0x155
pmt[5] = (pmt[5] & 0xC1) | (((pmt[5] >> 1) + 1) % 32) << 1  # the next version
pmt += bytes([0x06, 0xE0 | NEW >> 8, NEW & 0xFF, 0xF0, 0x00])  # private data, no descriptor
n = len(pmt) + 4 - 3
pmt[1], pmt[2] = (pmt[1] & 0xF0) | n >> 8, n & 0xFF
pmt += crc32_mpeg(pmt).to_bytes(4, 'big')
def ts(p_id, payload):
    b = bytes([0x47, 0x40 | p_id >> 8, p_id & 0xFF, 0x10]) + payload
    return b + b'\xff' * (188 - len(b))
junk = bytes((i * 37 + 11) & 0xFF for i in range(100))
pes = b'\x00\x00\x01\xbd' + (len(junk) + 3).to_bytes(2, 'big') + b'\x80\x00\x00' + junk
out, starts = [], 0
for p in pk:
    out.append(p)
    if pid(p) == video and p[1] & 0x40:
        starts += 1
        if starts == after:
            out += [ts(pmt_pid, b'\x00' + bytes(pmt)), ts(NEW, pes)]
open(dst, 'wb').write(b''.join(out))
PYEOF
  done
  # A sanitizer's quarantine holds what is freed (the packets of every frame): RSS says
  # nothing there, so that build checks the records only.
  SAN=0; [ "${ES_SANITIZE:-0}" = 1 ] || [ "${ES_SANITIZE:-0}" = ON ] && SAN=1
  "$PY" - "$BIN" "$T/late600.ts" "$T/late6000.ts" "$T/late.csv" $SAN > "$T/late.out" <<'PYEOF' ||
import resource, subprocess, sys
b, short, long_, csv, san = sys.argv[1:6]
def peak(ts, n):
    r = subprocess.run([b, '-q', '-y', '--device', 'cpu', ts, '--stats', csv]).returncode
    rows = sum(1 for _ in open(csv)) - 1
    assert r == 0 and rows == n, (ts, r, rows)
    # ru_maxrss of the children is the largest so far: the lighter run first
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
a = peak(short, 600)
z = peak(long_, 6000)
print('late stream in MPEG-TS: peak RSS %d KB for 600 frames, %d KB for 6000%s'
      % (a, z, ' (sanitizer build: not compared)' if san == '1' else ''))
sys.exit(0 if san == '1' or z - a < 8 * 1024 else 1)
PYEOF
    fail "$(cat "$T/late.out")"
  cat "$T/late.out"
else
  echo "late stream in MPEG-TS: skipped (this ffmpeg lacks mpeg2video or mpegts)"
fi
if ff_has encoders ffv1; then
  $FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v 3 -pix_fmt gray16le -c:v ffv1 "$T/d16.mkv" ||
    fail "cannot make d16.mkv"
  msg=$("$BIN" -v "$T/d16.mkv" -L 1024 --stats "$T/d16.csv" 2>&1); rc=$?
  [ $rc = 0 ] || fail "16-bit ffv1 with -L 1024: exit $rc ($msg)"
  case "$msg" in *"16-bit"*) ;; *) fail "16-bit ffv1 not read as 16-bit: $msg";; esac
fi

# A damaged FRAME line in a y4m stream: that frame skipped and counted, every later frame
# keeps its own time stamp (they came one frame early), from a file and through a pipe.
if [ $Y4M_IN = 1 ]; then
  "$PY" - "$T/dmg.y4m" <<'EOF2'
import sys
out = bytearray(b"YUV4MPEG2 W8 H6 F25:1 Ip A1:1 Cmono\n")
for i in range(10):
    out += (b"FRAMX\n" if i == 3 else b"FRAME\n") + bytes([(i * 37 + k) % 256 for k in range(48)])
open(sys.argv[1], "wb").write(bytes(out))
EOF2
  for how in file pipe; do
    if [ $how = file ]; then got=$("$BIN" -q - --stats - < "$T/dmg.y4m" 2>/dev/null)
    else got=$(cat "$T/dmg.y4m" | "$BIN" -q - --stats - 2>/dev/null); fi
    pts=$(printf '%s\n' "$got" | awk -F, 'NR > 1 { printf "%s ", $3 }')
    [ "$pts" = "0 0.04 0.08 0.16 0.2 0.24 0.28 0.32 0.36 " ] ||
      fail "damaged y4m FRAME line ($how): pts '$pts', want 0 0.04 0.08 0.16 ... 0.36"
  done
fi

# Damaged H.264 (issue 27): an .mp4 whose middle is overwritten by random bytes (a fixed seed).
# Every frame the decoder gives is kept, concealed ones too, as `ffmpeg -i bad.mp4 -f null -`
# does (it once kept 75 of ffmpeg's 77): the heat video has ffmpeg's frame count, the summary
# says "N frames decoded with errors" (apart from the packets refused, "corrupt packets
# skipped"), and --stats marks those N frames in its damaged column (CSV and JSON lines).
# (Which frames carry errors may vary by one between runs: the decoder's frame threads; each
# run is checked against its own summary.)
# libav*'s own lines ("[h264 @ 0x...] error while decoding MB ...") are never printed as
# such: without -v they are counted in the summary, with -v each is one of our lines, named
# by the file.
if ff_has encoders libx264 && ff_has muxers mp4; then
  $FF -f lavfi -i "testsrc2=size=320x240:rate=25" -frames:v 100 -c:v libx264 -threads 1 -g 25 -pix_fmt yuv420p \
    -fflags +bitexact -flags:v +bitexact "$T/h264.mp4" || fail "cannot make the H.264 clip"
  "$PY" - "$T/h264.mp4" "$T/h264-bad.mp4" <<'EOF2'
import random, sys
d = bytearray(open(sys.argv[1], "rb").read())
r = random.Random(27)
a, n = len(d) * 45 // 100, len(d) // 12
d[a:a + n] = bytes(r.randrange(256) for _ in range(n))
open(sys.argv[2], "wb").write(bytes(d))
EOF2
  ffn=$(ffmpeg -nostdin -v quiet -i "$T/h264-bad.mp4" -map 0:v:0 -f null - -progress pipe:1 | sed -n 's/^frame=//p' | tail -n 1)
  "$BIN" "$T/h264-bad.mp4" -o "$T/h264-heat.mp4" --stats "$T/h264.csv" -y 2> "$T/h264.err"; rc=$?
  echo "damaged H.264: ffmpeg decodes ${ffn:-?} frames; $(tail -n 1 "$T/h264.err")"
  [ $rc = 0 ] || fail "damaged H.264: exit $rc ($(cat "$T/h264.err"))"
  got=$(probe "$T/h264-heat.mp4" nb_read_frames)
  [ -n "$ffn" ] && [ "$got" = "$ffn" ] || fail "damaged H.264: heat video of $got frames, ffmpeg decodes '$ffn'"
  grep -v '^entropy-stream: ' "$T/h264.err" && fail "damaged H.264: lines not ours on stderr (above)"
  [ "$(wc -l < "$T/h264.err")" = 1 ] || fail "damaged H.264: more than the summary: $(cat "$T/h264.err")"
  nd=$(sed -n 's/.*, \([0-9]*\) frames\{0,1\} decoded with errors.*/\1/p' "$T/h264.err")
  nc=$(sed -n 's/.*, \([0-9]*\) corrupt packets\{0,1\} skipped.*/\1/p' "$T/h264.err")
  nl=$(sed -n 's/.*, \([0-9]*\) FFmpeg error messages\{0,1\} (-v shows them).*/\1/p' "$T/h264.err")
  [ -n "$nd" ] && [ "$nd" -gt 0 ] && [ -n "$nc" ] && [ "$nc" -gt 0 ] && [ -n "$nl" ] && [ "$nl" -gt 0 ] ||
    fail "damaged H.264: summary without frames decoded with errors, corrupt packets and FFmpeg messages: $(cat "$T/h264.err")"
  "$BIN" -q "$T/h264-bad.mp4" --stats "$T/h264.jsonl" -y 2> "$T/h264j.err" || fail "damaged H.264 -> jsonl: exit $?"
  ndj=$(sed -n 's/.*, \([0-9]*\) frames\{0,1\} decoded with errors.*/\1/p' "$T/h264j.err")
  "$PY" - "$T/h264.csv" "$T/h264.jsonl" "${ffn:-0}" "${nd:-0}" "${ndj:-0}" <<'EOF2' || fail "damaged H.264: --stats damaged column wrong"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
js = [json.loads(l) for l in open(sys.argv[2])]
hdr = open(sys.argv[1]).readline().strip().split(",")
assert hdr[hdr.index("global_entropy") + 1 : hdr.index("global_entropy") + 4] == ["global_entropy_levels", "damaged", "hist_0"], hdr[:13]
assert len(rows) == len(js) == int(sys.argv[3]), (len(rows), len(js), sys.argv[3])
assert all(r["damaged"] in ("0", "1") for r in rows)
marked = [int(r["index"]) for r in rows if r["damaged"] == "1"]
assert len(marked) == int(sys.argv[4]) > 0, (marked, sys.argv[4])
marked_j = [j["index"] for j in js if j["damaged"] == 1]
assert all(j["damaged"] in (0, 1) for j in js)
assert len(marked_j) == int(sys.argv[5]) > 0, (marked_j, sys.argv[5])
print("damaged frames: csv", marked, "jsonl", marked_j)
EOF2
  "$BIN" -v "$T/h264-bad.mp4" -o "$T/h264-heat.mp4" -y 2> "$T/h264v.err"; rc=$?
  [ $rc = 0 ] || fail "damaged H.264 -v: exit $rc"
  grep -v '^entropy-stream: ' "$T/h264v.err" && fail "damaged H.264 -v: lines not ours on stderr (above)"
  nv=$(grep -c "^entropy-stream: $T/h264-bad.mp4: \[h264\] " "$T/h264v.err")
  [ "$nv" -gt 0 ] && grep -q ", $nv FFmpeg error messages\{0,1\}$" "$T/h264v.err" ||
    fail "damaged H.264 -v: $nv FFmpeg lines shown; summary: $(tail -n 1 "$T/h264v.err")"
else
  echo "test_cli_video: damaged H.264 skipped (no libx264 encoder or mp4 muxer)"
fi

# A video of which no frame could be decoded (every y4m FRAME line damaged): an input error,
# exit 2, said in one line. It was exit 0 ("everything asked for was written") with an
# empty map and only the summary's corrupt count.
if [ $Y4M_IN = 1 ]; then
  "$PY" -c "
import sys
out = bytearray(b'YUV4MPEG2 W8 H6 F25:1 Ip A1:1 Cmono\n')
for i in range(4): out += b'FRAMX\n' + bytes(48)
open(sys.argv[1], 'wb').write(bytes(out))" "$T/allbad.y4m"
  for how in file pipe; do
    if [ $how = file ]; then "$BIN" -q "$T/allbad.y4m" --stats "$T/allbad.csv" -y 2> "$T/allbad.err"; rc=$?
    else cat "$T/allbad.y4m" | "$BIN" -q - --stats "$T/allbad.csv" -y 2> "$T/allbad.err"; rc=$?; fi
    [ $rc = 2 ] || fail "no frame decodable ($how): exit $rc, want 2 ($(cat "$T/allbad.err"))"
    grep -q "^entropy-stream: [^:]*: no frame could be decoded (4 corrupt packets skipped)$" "$T/allbad.err" ||
      fail "no frame decodable ($how): message: $(cat "$T/allbad.err")"
  done
fi

# A run that fails before its first frame leaves nothing under the output's name (SPEC 3):
# an MJPEG .avi whose header says 16000x16000 and whose packets are zeroed (none decodes) left a 542-byte .mkv that
# ffprobe cannot open, a 262-byte .mp4 with no stream, a .npy of shape (0,16000,16000), a y4m
# header and an empty frame directory; an .mp4 piped in (its index at the end, not seekable)
# left an unopenable .mkv. Exit 2 and one line each; a y4m header alone, a valid empty
# stream, still gives its empty output with exit 0.
nothing_left() { # LABEL NAME ERRFILE RC: exit 2, one line, nothing under NAME, no temporary
  [ "$4" = 2 ] && [ "$(wc -l < "$3")" = 1 ] || fail "$1: exit $4, want 2 and one line: $(cat "$3")"
  [ -e "$2" ] && fail "$1: $(basename "$2") left ($(ls -ld "$2"))"
  ls -A "$(dirname "$2")" | grep -q '^\.' && fail "$1: temporaries left: $(ls -A "$(dirname "$2")")"
}
mkdir "$T/nf"
nf_outs=(x.npy xdir)
ff_has muxers matroska && nf_outs+=(x.mkv)
ff_has muxers mp4 && nf_outs+=(x.mp4)
[ $Y4M_OUT = 1 ] && nf_outs+=(x.y4m)
if ff_has encoders mjpeg && ff_has muxers avi && ff_has demuxers avi && ff_has decoders mjpeg; then
  $FF -f lavfi -i "testsrc=size=64x48:rate=10" -frames:v 3 -c:v mjpeg -pix_fmt yuvj420p "$T/m.avi" &&
    "$PY" - "$T/m.avi" "$T/nf/big.avi" <<'EOF2' || fail "cannot make big.avi"
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
i = d.index(b'avih') + 8               # MainAVIHeader: dwWidth, dwHeight at 32, 36
struct.pack_into('<II', d, i + 32, 16000, 16000)
j = d.index(b'strf') + 8               # BITMAPINFOHEADER: biWidth, biHeight at 4, 8
struct.pack_into('<ii', d, j + 4, 16000, 16000)
# and no packet decodes: the MJPEG decoder made a damaged 64x96 frame of the first one,
# which is kept since damaged frames are (ffmpeg decodes it too); zeroed, none gives a frame
k = d.index(b'movi')
while d.find(b'00dc', k) >= 0:
    k = d.find(b'00dc', k)
    n = struct.unpack_from('<I', d, k + 4)[0]
    d[k + 8:k + 8 + n] = bytes(n)
    k += 8 + n
open(sys.argv[2], 'wb').write(bytes(d))
EOF2
  for out in "${nf_outs[@]}"; do
    rm -rf "${T:?}/nf/$out"
    "$BIN" -q "$T/nf/big.avi" -o "$T/nf/$out" 2> "$T/nf.err"; rc=$?
    nothing_left "16000x16000 .avi -> $out" "$T/nf/$out" "$T/nf.err" $rc
    grep -q "^entropy-stream: $T/nf/big.avi: no frame could be decoded" "$T/nf.err" ||
      fail "16000x16000 .avi -> $out: message: $(cat "$T/nf.err")"
  done
else
  echo "test_cli_video: 16000x16000 .avi skipped: no mjpeg encoder/decoder or avi muxer/demuxer"
fi
if ff_has encoders libx264 && ff_has muxers mp4 && ff_has demuxers mov; then
  # 72 KB with its index at the end: more than libavformat holds back from a pipe.
  $FF -f lavfi -i "testsrc2=size=160x120:rate=25" -frames:v 30 -c:v libx264 -crf 0 \
    -pix_fmt yuv420p "$T/piped.mp4" || fail "cannot make piped.mp4"
  for out in "${nf_outs[@]}"; do
    rm -rf "${T:?}/nf/$out"
    cat "$T/piped.mp4" | "$BIN" -q - -o "$T/nf/$out" 2> "$T/nf.err"; rc=$?
    nothing_left ".mp4 from a pipe -> $out" "$T/nf/$out" "$T/nf.err" $rc
  done
else
  echo "test_cli_video: .mp4 from a pipe skipped: no libx264 encoder, mp4 muxer or mov demuxer"
fi
if [ $Y4M_IN = 1 ]; then # the valid empty stream: exit 0, its outputs written
  for out in x.npy x.mkv; do
    [ $out = x.mkv ] && ! ff_has muxers matroska && continue
    printf 'YUV4MPEG2 W16 H16 F25:1 Ip A1:1 Cmono\n' | "$BIN" -q - -o "$T/nf/$out" 2> "$T/nf.err"; rc=$?
    [ $rc = 0 ] && [ -f "$T/nf/$out" ] || fail "y4m header alone -> $out: exit $rc, want 0 and the file: $(cat "$T/nf.err")"
  done
fi

# Rotation metadata (a display matrix) goes to the heat video, so players turn it as they
# turn the source; the map itself is in the stored orientation (SPEC: the Y plane as stored).
if ff_has encoders libx264 && ff_has muxers mp4; then
  $FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v 3 -c:v libx264 "$T/r0.mp4" &&
    $FF -i "$T/r0.mp4" -c copy -metadata:s:v:0 rotate=90 "$T/rot.mp4" || fail "cannot make rot.mp4"
  rot() { ffprobe -v error -select_streams v:0 -show_entries stream_side_data=rotation -of csv=p=0 "$1" | tr -d ' \n'; }
  want=$(rot "$T/rot.mp4")
  "$BIN" -q "$T/rot.mp4" -o "$T/rot-heat.mp4" || fail "rot.mp4 -> mp4: exit $?"
  [ -n "$want" ] && [ "$(rot "$T/rot-heat.mp4")" = "$want" ] ||
    fail "rotation: source '$want', heat video '$(rot "$T/rot-heat.mp4")'"
  got=$(probe "$T/rot-heat.mp4" width,height | head -1 | cut -d, -f1,2)
  # (W and H are odd: libx264's 4:2:0 takes the even size above)
  [ "$got" = "$((W + 1)),$((H + 1))" ] || fail "rotated heat video is $got, want the stored $((W + 1)),$((H + 1))"
fi

# The sample aspect ratio goes to the heat video (and the y4m A field), as ffmpeg keeps it:
# an anamorphic source (720x576 at 16:15 is 4:3 on screen) played 5:4, stretched, once the
# heat video said 1:1.
# (The GPU machine's minimal FFmpeg has no setsar filter: skipped there.)
if ! ff_has encoders ffv1 || ! ff_has filters setsar || ! ff_has muxers matroska; then
  echo "test_cli_video: sample aspect ratio skipped: no ffv1 encoder, setsar filter or matroska muxer in this FFmpeg"
else
  $FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v 3 -vf setsar=16/15 -c:v ffv1 "$T/sar.mkv" ||
    fail "cannot make sar.mkv"
  sar() { ffprobe -v error -select_streams v:0 -show_entries stream=sample_aspect_ratio -of csv=p=0 "$1"; }
  for ext in mp4 mkv; do
    if [ $ext = mp4 ] && ! ff_has muxers mp4; then continue; fi
    "$BIN" -q "$T/sar.mkv" -o "$T/sar-heat.$ext" || fail "sar.mkv -> $ext: exit $?"
    [ "$(sar "$T/sar-heat.$ext")" = 16:15 ] || fail "sample aspect ratio: heat .$ext says '$(sar "$T/sar-heat.$ext")', want 16:15"
  done
  if [ $Y4M_OUT = 1 ]; then
    "$BIN" -q "$T/sar.mkv" -o - | head -c 100 | head -n 1 | grep -q " A16:15 " ||
      fail "sample aspect ratio: y4m header $("$BIN" -q "$T/sar.mkv" -o - | head -c 100 | head -n 1), want A16:15"
  fi
  "$BIN" -q "$T/clip.mkv" -o "$T/sar-none.mkv" && [ "$(sar "$T/sar-none.mkv")" = 1:1 ] ||
    fail "no sample aspect ratio in the input: heat video says '$(sar "$T/sar-none.mkv")', want 1:1"
fi

# The field order goes to the heat video and the y4m I field, as ffmpeg passes it on (the
# map is of the woven frame; interlaced input came out as Ip / progressive).
fo() { ffprobe -v error -select_streams v:0 -show_entries stream=field_order -of csv=p=0 "$1"; }
if ! ff_has encoders ffv1 || ! ff_has muxers matroska; then
  echo "test_cli_video: field order skipped: no ffv1 encoder or matroska muxer in this FFmpeg"
else
  $FF -f lavfi -i "testsrc=size=${W}x${H}:rate=10" -frames:v 3 -c:v ffv1 -field_order bb "$T/bff.mkv" ||
    fail "cannot make bff.mkv"
  "$BIN" -q "$T/bff.mkv" -o "$T/bff-heat.mkv" || fail "bff.mkv -> mkv: exit $?"
  [ "$(fo "$T/bff-heat.mkv")" = bb ] || fail "field order: heat .mkv says '$(fo "$T/bff-heat.mkv")', want bb"
  if [ $Y4M_OUT = 1 ]; then
    hdr=$("$BIN" -q "$T/bff.mkv" -o - | head -c 100 | head -n 1)
    case "$hdr" in *" Ib "*) ;; *) fail "field order: y4m header '$hdr', want Ib";; esac
  fi
  if [ $Y4M_IN = 1 ] && [ $Y4M_OUT = 1 ]; then
    hdr=$( (printf 'YUV4MPEG2 W8 H6 F25:1 It A1:1 Cmono\nFRAME\n'; head -c 48 /dev/zero) |
      "$BIN" -q - --format gray8 -o - | head -c 100 | head -n 1)
    [ "$hdr" = "YUV4MPEG2 W8 H6 F25:1 It A1:1 Cmono XCOLORRANGE=FULL" ] ||
      fail "field order: y4m It in, header '$hdr' out"
  fi
  if [ $Y4M_OUT = 1 ]; then
    "$BIN" -q "$T/clip.mkv" -o - --format gray8 | head -c 100 | head -n 1 | grep -q " Ip " ||
      fail "field order: a progressive input's y4m header is not Ip"
  fi
fi

# A y4m header whose frames are too large for libavformat: its demuxer returns EBUSY and the
# message was "cannot open: Device or resource busy"; it now gives the reason FFmpeg logged,
# naming the size (exit 2, one line, from a file and a pipe, nothing allocated).
if [ $Y4M_IN = 1 ]; then
  printf 'YUV4MPEG2 W100000 H100000 F25:1 Ip A1:1 C420jpeg\nFRAME\nabc' > "$T/huge.y4m"
  for how in file pipe; do
    if [ $how = file ]; then msg=$("$BIN" -q "$T/huge.y4m" --stats - 2>&1 >/dev/null); rc=$?
    else msg=$(cat "$T/huge.y4m" | "$BIN" -q - --stats - 2>&1 >/dev/null); rc=$?; fi
    [ $rc = 2 ] || fail "huge y4m header ($how): exit $rc, want 2 ($msg)"
    case "$msg" in *busy*|*[Bb]usy*) fail "huge y4m header ($how): $msg";; esac
    case "$msg" in "entropy-stream: "*": cannot open: "*"100000x100000"*) ;;
      *) fail "huge y4m header ($how): the message does not name the size: $msg";; esac
    [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "huge y4m header ($how): want one line: $msg"
  done
fi

# Two y4m streams one after the other (cat a.y4m b.y4m): the same size and layout go on as
# one stream; another size ends the input with an error naming it (exit 2), the frames
# before kept. (A second header was taken for damaged frame lines: frames were lost with
# exit 0.)
if [ $Y4M_IN = 1 ]; then
  "$PY" - "$T/y1.y4m" "$T/y2.y4m" "$T/y3.y4m" "$T/y4.y4m" <<'EOF2'
import sys
def stream(path, w, h, n):
    out = bytearray(b"YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n" % (w, h))
    for i in range(n):
        out += b"FRAME\n" + bytes([(i * 53 + k * 7) % 256 for k in range(w * h)])
    open(path, "wb").write(bytes(out))
stream(sys.argv[1], 8, 6, 4)
stream(sys.argv[2], 10, 6, 3)
# A header as ffmpeg writes one with a colour range (85 bytes at 1920x1080), padded to 95, the
# longest libavformat's demuxer takes; the frame lines' limit is 80. A second such header was
# taken for a lost frame line: its frames were dropped, exit 0, "1 corrupt packet skipped".
# A header whose layout is only in XYSCSS (no C field: libavformat takes 4:4:4 from it); the
# second one was read as 4:2:0 and refused as another layout, exit 2.
def one(path, hdr, fsize):
    out = bytearray(hdr)
    for i in range(4):
        out += b"FRAME\n" + bytes([(i * 53 + k * 7) % 256 for k in range(fsize)])
    open(path, "wb").write(bytes(out))
hdr = b"YUV4MPEG2 W8 H6 F30000:1001 Ip A1:1 Cmono XYSCSS=420JPEG XCOLORRANGE=LIMITED XCOMMENT="
one(sys.argv[3], hdr + b"x" * (95 - len(hdr)) + b"\n", 48)
one(sys.argv[4], b"YUV4MPEG2 W8 H6 F25:1 Ip A1:1 XYSCSS=444\n", 144)
EOF2
  cat "$T/y1.y4m" "$T/y1.y4m" > "$T/y11.y4m"
  cat "$T/y1.y4m" "$T/y2.y4m" > "$T/y12.y4m"
  { cat "$T/y1.y4m"; printf 'YUV4MPEG2 W8 H6 F25:1 Cfoo\n'; } > "$T/y1bad.y4m"
  msg=$(cat "$T/y1bad.y4m" | "$BIN" -q - --stats "$T/c1bad.csv" -y 2>&1); rc=$?
  [ $rc = 2 ] && [ "$msg" = "entropy-stream: -: frame 4: a new y4m stream begins with a header that cannot be read" ] ||
    fail "a second y4m header that libavformat refuses: exit $rc, want 2 ($msg)"
  for how in file pipe; do
    for y in 3:"with 95-byte headers" 4:"whose layout is in XYSCSS"; do
      k=${y%%:*}; what=${y#*:}
      cat "$T/y$k.y4m" "$T/y$k.y4m" > "$T/yy.y4m"
      if [ $how = file ]; then msg=$("$BIN" -q - --stats "$T/cyy.csv" -y < "$T/yy.y4m" 2>&1); rc=$?
      else msg=$(cat "$T/yy.y4m" | "$BIN" -q - --stats "$T/cyy.csv" -y 2>&1); rc=$?; fi
      [ $rc = 0 ] && [ -z "$msg" ] && [ "$(wc -l < "$T/cyy.csv")" = 9 ] ||
        fail "two y4m streams $what ($how): exit $rc, $(($(wc -l < "$T/cyy.csv") - 1)) records, want 8 ($msg)"
    done
    if [ $how = file ]; then "$BIN" -q - --stats "$T/c11.csv" -y < "$T/y11.y4m"; rc=$?
    else cat "$T/y11.y4m" | "$BIN" -q - --stats "$T/c11.csv" -y; rc=$?; fi
    [ $rc = 0 ] && [ "$(wc -l < "$T/c11.csv")" = 9 ] ||
      fail "two same y4m streams ($how): exit $rc, $(($(wc -l < "$T/c11.csv") - 1)) records, want 8"
    cut -d, -f4- "$T/c11.csv" | sed -n '2,5p' > "$T/c11a"; cut -d, -f4- "$T/c11.csv" | sed -n '6,9p' > "$T/c11b"
    cmp -s "$T/c11a" "$T/c11b" || fail "two same y4m streams ($how): the second's records differ from the first's"
    if [ $how = file ]; then msg=$("$BIN" -q - --stats "$T/c12.csv" -y < "$T/y12.y4m" 2>&1); rc=$?
    else msg=$(cat "$T/y12.y4m" | "$BIN" -q - --stats "$T/c12.csv" -y 2>&1); rc=$?; fi
    [ $rc = 2 ] || fail "a second y4m stream of another size ($how): exit $rc, want 2 ($msg)"
    case "$msg" in *"frame 4: a new y4m stream of 10x6"*) ;; *) fail "second y4m stream ($how): message: $msg";; esac
    [ "$(wc -l < "$T/c12.csv")" = 5 ] || fail "second y4m stream ($how): $(($(wc -l < "$T/c12.csv") - 1)) records kept, want 4"
  done
fi

# -n keeps an existing video output, and --stats still gets every frame's record.
"$BIN" -q "$T/clip.mkv" -o "$T/keep.mkv" --codec mpeg4 --stats "$T/keep-y.csv" -y || fail "keep.mkv: exit $?"
"$BIN" -q "$T/clip.mkv" -o "$T/keep.mkv" --stats "$T/keep-n.csv" -n; rc=$?
[ $rc = 0 ] && cmp -s "$T/keep-y.csv" "$T/keep-n.csv" ||
  fail "-n on an existing video with --stats: exit $rc, $(($(wc -l < "$T/keep-n.csv") - 1)) records, want $N"

# Outputs fail one by one (README): in a video or stream run an output that cannot be written
# is said once and leaves nothing under its name, the others are still written whole, exit 3,
# and the summary names what failed. Before, the first failure discarded every output (the
# heat video went with a --stats file that failed, and the other way round).
mkdir "$T/ind"
I="$T/ind"
ln -s /dev/full "$I/full.csv" # a device: written in place; every flush fails with ENOSPC
$FF -f lavfi -i "testsrc=size=48x32:rate=10" -vf format=gray -frames:v 40 -c:v ffv1 "$I/c40.mkv" ||
  fail "cannot make c40.mkv"
head -c $(( 16 * 12 * 2000 )) /dev/urandom > "$I/many.raw"
one_fail() { # LABEL RC WANT_RC ERRFILE FIRST_LINE SUMMARY_PATTERN: one error line, then the summary
  local first summary
  first=$(sed -n 1p "$4"); summary=$(sed -n 2p "$4")
  [ "$2" = "$3" ] || fail "$1: exit $2, want $3: $(cat "$4")"
  [ "$first" = "$5" ] || fail "$1: first line '$first', want '$5'"
  case "$summary" in $6) ;; *) fail "$1: summary '$summary', want $6";; esac
  [ "$(wc -l < "$4")" = 2 ] || fail "$1: want two lines on stderr, got: $(cat "$4")"
  [ -z "$(ls -A "$I" | grep '^\.')" ] || fail "$1: temporaries left: $(ls -A "$I" | grep '^\.')"
}
# --stats into a full device (256 bins: the 4 KiB buffer fills within a few frames): the video
# is kept with all 40 frames, the statistics are not.
"$BIN" --no-progress "$I/c40.mkv" -o "$I/v.mkv" --codec mpeg4 --stats "$I/full.csv" --stats-bins 256 \
  2> "$I/err"; rc=$?
one_fail "--stats full, -o .mkv" $rc 3 "$I/err" "entropy-stream: $I/full.csv: cannot write: No space left on device" \
  "entropy-stream: 40 frames, 48x32, *; failed: --stats $I/full.csv at frame [0-9]*"
[ "$(probe "$I/v.mkv" nb_read_frames 2>/dev/null)" = 40 ] || fail "--stats full: the video was not kept whole"
# -o .npy past the file size limit (64 KiB; SIGXFSZ is ignored, the write fails with EFBIG):
# the .npy and its temporary gone, the --stats file kept with every record.
( ulimit -f 64; "$BIN" --no-progress "$I/c40.mkv" -o "$I/big.npy" --stats "$I/s.csv" 2> "$I/err" ); rc=$?
one_fail "-o .npy past ulimit -f, --stats" $rc 3 "$I/err" "entropy-stream: $I/big.npy: cannot write: File too large" \
  "entropy-stream: 40 frames, 48x32, *; failed: -o $I/big.npy at frame [0-9]*"
[ ! -e "$I/big.npy" ] || fail "-o .npy past ulimit -f: the partial .npy is there"
[ "$(wc -l 2>/dev/null < "$I/s.csv")" = 41 ] || fail "-o .npy past ulimit -f: --stats not kept whole"
# --stats - into a pipe whose reader leaves after 100 bytes (2000 records fill a pipe's
# buffer, so the break is met whatever the timing): exit 3, not killed by SIGPIPE, and the
# .npy keeps every frame.
"$BIN" --no-progress - --raw gray8:16x12 -o "$I/m.npy" --stats - < "$I/many.raw" 2> "$I/err" | head -c 100 > /dev/null
rc=${PIPESTATUS[0]}
one_fail "--stats - into a closed pipe, -o .npy" $rc 3 "$I/err" "entropy-stream: -: cannot write: Broken pipe" \
  "entropy-stream: 2000 frames, 16x12, *; failed: --stats - at frame [0-9]*"
"$PY" -c "
import numpy as np, sys
sys.exit(0 if np.load('$I/m.npy').shape == (2000, 12, 16) else 1)" 2>/dev/null ||
  fail "--stats - into a closed pipe: the .npy was not kept whole"
# -o - (float32) into a pipe whose reader leaves: the --stats file keeps every record.
"$BIN" --no-progress - --raw gray8:16x12 --format f32 -o - --stats "$I/f.csv" < "$I/many.raw" 2> "$I/err" |
  head -c 100 > /dev/null
rc=${PIPESTATUS[0]}
one_fail "-o - into a closed pipe, --stats" $rc 3 "$I/err" "entropy-stream: -: write error: Broken pipe" \
  "entropy-stream: 2000 frames, 16x12, *; failed: -o - at frame [0-9]*"
[ "$(wc -l 2>/dev/null < "$I/f.csv")" = 2001 ] || fail "-o - into a closed pipe: --stats not kept whole"
# A frame directory whose frame_000003.png is a directory: that output stops there (frames 0..2
# kept, each whole, said once), the statistics go on to the end.
mkdir -p "$I/fr/frame_000003.png"
"$BIN" --no-progress "$I/c40.mkv" -o "$I/fr" --stats "$I/fr.csv" 2> "$I/err"; rc=$?
one_fail "frame directory blocked at frame 3, --stats" $rc 3 "$I/err" \
  "entropy-stream: $I/fr/frame_000003.png: is a directory" \
  "entropy-stream: 40 frames, 48x32, *; failed: -o $I/fr at frame 3"
[ "$(ls "$I/fr" | tr '\n' ' ')" = "frame_000000.png frame_000001.png frame_000002.png frame_000003.png " ] ||
  fail "frame directory blocked at frame 3: holds $(ls "$I/fr" | tr '\n' ' ')"
[ "$(wc -l 2>/dev/null < "$I/fr.csv")" = 41 ] || fail "frame directory blocked: --stats not kept whole"
# A short last frame and a failed output: both said, the worse code (3), the .npy kept.
head -c $(( 16 * 12 * 5 + 50 )) "$I/many.raw" > "$I/short.raw"
msg=$("$BIN" -q - --raw gray8:16x12 -o "$I/short.npy" --stats "$I/full.csv" --stats-bins 256 < "$I/short.raw" 2>&1); rc=$?
[ $rc = 3 ] || fail "short frame and a failed output: exit $rc, want 3 ($msg)"
[ "$msg" = "entropy-stream: $I/full.csv: cannot write: No space left on device
entropy-stream: -: frame 5 is short (got 50 of 192 bytes)" ] || fail "short frame and a failed output: messages: $msg"
"$PY" -c "
import numpy as np, sys
sys.exit(0 if np.load('$I/short.npy').shape == (5, 12, 16) else 1)" 2>/dev/null ||
  fail "short frame and a failed output: the .npy was not kept"
# Nothing left to write stops the run early, as before: --stats only into a closed pipe, and
# both outputs failed, on an endless input (a run that went on would meet the timeout: 124).
cat /dev/zero | timeout 60 "$BIN" --no-progress - --raw gray8:16x12 --stats - 2> "$I/err" | head -c 100 > /dev/null
rc=${PIPESTATUS[1]}
[ $rc = 3 ] || fail "--stats - only, into a closed pipe: exit $rc, want 3 (it must stop): $(cat "$I/err")"
mkdir -p "$I/fr0/frame_000000.png"
cat /dev/zero | timeout 60 "$BIN" --no-progress - --raw gray8:16x12 -o "$I/fr0" --stats "$I/full.csv" \
  --stats-bins 256 2> "$I/err" > /dev/null
rc=${PIPESTATUS[1]}
[ $rc = 3 ] || fail "both outputs failed: exit $rc, want 3 (it must stop): $(cat "$I/err")"
grep -q "; failed: -o $I/fr0 at frame 0, --stats $I/full.csv at frame [0-9]*$" "$I/err" ||
  fail "both outputs failed: summary: $(cat "$I/err")"

# ES_TRACE=1: the phase lines on stderr (milliseconds since start, the thread), nothing on
# stdout, and the run itself complete.
tr=$(ES_TRACE=1 "$BIN" -q "$T/clip.mkv" --stats "$T/tr.csv" -y 2>&1 >/dev/null); rc=$?
[ $rc = 0 ] || fail "ES_TRACE run: exit $rc"
for want in "main" "video: input open" "video: first frame written" "video: last frame written ($N)"; do
  printf '%s\n' "$tr" | grep -qF "$want" || fail "ES_TRACE: no '$want' line: $tr"
done
printf '%s\n' "$tr" | grep -v '^es-trace  *[0-9.]* ms \[[0-9a-f]*\] ' && fail "ES_TRACE: a line not in the trace format"
[ "$(wc -l < "$T/tr.csv")" = $((N + 1)) ] || fail "ES_TRACE run: $(wc -l < "$T/tr.csv") stats lines, want $((N + 1))"
[ -z "$(ES_TRACE=0 "$BIN" -q "$T/clip.mkv" --stats "$T/tr.csv" -y 2>&1)" ] || fail "ES_TRACE=0 printed"

# Video into a FIFO: written in place, without -y, the FIFO kept (a regular file replaced it
# with -y; without, it was refused as existing). y4m streams; mp4 seeks: one line, exit 3.
# A link to a video is written through; the link stays.
mkfifo "$T/f.y4m" "$T/f.mp4"
if [ $Y4M_OUT = 1 ] && [ $Y4M_FF = 1 ]; then
  (timeout 30 cat "$T/f.y4m" > "$T/got.y4m") & rd=$!
  msg=$("$BIN" -q "$T/clip.mkv" -o "$T/f.y4m" 2>&1); rc=$?
  wait $rd
  [ $rc = 0 ] && [ -z "$msg" ] && [ -p "$T/f.y4m" ] || fail "-o FIFO .y4m: exit $rc, $(ls -l "$T/f.y4m"): $msg"
  got=$(probe "$T/got.y4m" width,height,nb_read_frames)
  [ "$got" = "$W,$H,$N" ] || fail "-o FIFO .y4m: the reader got '$got', want $W,$H,$N"
else
  echo "test_cli_video: FIFO .y4m case skipped: no y4m muxer/demuxer"
fi
# mp4 and a .npy of frames are refused before the FIFO is opened, with no reader on it (they
# waited for one, then were refused), and with --stats nothing is left under either name.
mkfifo "$T/f.npy"
rm -f "$T/fifo.csv"
for f in f.mp4 f.npy; do
  case $f in
    f.mp4) want="the mp4 container cannot be written into a pipe (it seeks; try .y4m, .nut or .mkv)" ;;
    f.npy) want="cannot write frames into a pipe (.npy's frame count is written last)" ;;
  esac
  for y in "" -y; do
    msg=$(timeout -k 5 20 "$BIN" -q "$T/clip.mkv" -o "$T/$f" --stats "$T/fifo.csv" $y 2>&1); rc=$?
    [ $rc = 3 ] && [ "$msg" = "entropy-stream: $T/$f: $want" ] && [ -p "$T/$f" ] \
      || fail "-o FIFO $f $y, no reader: exit $rc (want 3, one line), $(ls -l "$T/$f"): $msg"
    ls -A "$T" | grep -q 'fifo\.csv' && fail "-o FIFO $f $y: --stats left: $(ls -A "$T" | grep fifo)"
  done
done
mkdir "$T/real"
ln -s real/v.mp4 "$T/v.mp4"
"$BIN" -q "$T/clip.mkv" -o "$T/v.mp4"; rc=$?
[ $rc = 0 ] && [ -L "$T/v.mp4" ] && [ -f "$T/real/v.mp4" ] || fail "-o link .mp4: exit $rc, $(ls -l "$T/v.mp4")"
"$BIN" -q "$T/clip.mkv" -o "$T/v.mp4" 2>/dev/null; rc=$?
[ $rc = 3 ] || fail "-o link to an existing .mp4 without -y: exit $rc, want 3"
"$BIN" -q "$T/clip.mkv" -o "$T/v.mp4" -y; rc=$?
[ $rc = 0 ] && [ -L "$T/v.mp4" ] && [ "$(ls -A "$T/real")" = v.mp4 ] || fail "-o link .mp4 -y: exit $rc, $(ls -l "$T/v.mp4")"
[ "$(probe "$T/v.mp4" nb_read_frames)" = $N ] || fail "-o link .mp4: $(probe "$T/v.mp4" nb_read_frames) frames, want $N"

# Video names of 245..255 bytes: the temporary's ".NAME.es-XXXXXX" went past NAME_MAX (exit 3,
# "File name too long"); it now keeps a prefix of the name.
for n in 245 251 255; do
  long="$T/$(head -c $((n - 4)) /dev/zero | tr '\0' v).mp4"
  msg=$("$BIN" -q "$T/clip.mkv" -o "$long" -y 2>&1); rc=$?
  [ $rc = 0 ] && [ -f "$long" ] || fail "$n-byte .mp4 name: exit $rc: $msg"
  rm -f "$long"
done
[ -z "$(ls -A "$T" | grep '^\.')" ] || fail "temporaries left: $(ls -A "$T" | grep '^\.')"

# Progress on a terminal (script(1) gives the run a pty): frames done of the container's
# count, fps and an ETA; from a pipe, whose length is unknown, frames and fps but no count
# and no ETA. --stats - on the same terminal: each record begins a line of its own; it was
# drawn on after the progress line ("... 1/9 frames, 50.0 fps, ETA 0:00,1,0.1,41,31,...").
if command -v script >/dev/null; then
  out=$(script -qec "'$BIN' '$T/clip.mkv' --stats -" /dev/null 2>&1); rc=$?
  [ $rc = 0 ] || fail "--stats - on a tty: exit $rc ($out)"
  printf '%s' "$out" | grep -aq "entropy-stream: [0-9]*/$N frames, [0-9.]* fps, ETA [0-9]*:[0-9][0-9]" \
    || fail "video on a tty: no 'K/$N frames, fps, ETA' progress: $(printf '%s' "$out" | cat -v)"
  # The last frame, at the count: ETA 0:00 (it read "N/N frames, ... ETA ?").
  printf '%s' "$out" | grep -aq "entropy-stream: $N/$N frames, [0-9.]* fps, ETA 0:00"$'\r' \
    || fail "video on a tty: no '$N/$N frames, fps, ETA 0:00' progress: $(printf '%s' "$out" | cat -v)"
  printf '%s' "$out" | grep -aq "ETA [0-9:?]*[^0-9:?"$'\r'"]" \
    && fail "--stats - on a tty: a record drawn on after the progress line: $(printf '%s' "$out" | cat -v)"
  rows=$(printf '%s' "$out" | sed 's/\x1b\[K/\n/g' | tr '\r' '\n' | grep -ac "^$T/clip.mkv,[0-9]*,[0-9.]*,$W,$H,")
  [ "$rows" = $N ] || fail "--stats - on a tty: $rows whole records, want $N: $(printf '%s' "$out" | cat -v)"
  $FF -i "$T/clip.mkv" -f rawvideo -pix_fmt gray "$T/clip.gray" || fail "cannot make raw frames"
  out=$(script -qec "cat '$T/clip.gray' | '$BIN' - --raw gray8:${W}x$H -o '$T/tty.npy' -y" /dev/null 2>&1)
  printf '%s' "$out" | grep -aq "entropy-stream: [0-9]* frames\?, [0-9.]* fps"$'\r' \
    || fail "pipe on a tty: no 'K frames, fps' progress: $(printf '%s' "$out" | cat -v)"
  printf '%s' "$out" | grep -aq "ETA\|[0-9]/[0-9]* frames" \
    && fail "pipe on a tty: a count or an ETA for a stream of unknown length: $(printf '%s' "$out" | cat -v)"
  # One frame: "1 frame, ... fps" (it read "1 frames", the summary below it "1 frame").
  out=$(script -qec "head -c $((W * H)) '$T/clip.gray' | '$BIN' - --raw gray8:${W}x$H -o '$T/tty.npy' -y" /dev/null 2>&1)
  printf '%s' "$out" | grep -aq "entropy-stream: 1 frame, [0-9.]* fps"$'\r' \
    || fail "one frame from a pipe on a tty: no '1 frame, fps' progress: $(printf '%s' "$out" | cat -v)"
  # A container's count is an estimate (duration x frame rate): 40 frames 5 ms apart, then
  # 20 at 40 ms, make 60 frames in 1 s, "25 frames" at 25 fps. Past it, progress read
  # "41/25 frames, ETA ?"; it drops the count there. (--stats - on the tty: a line a frame.)
  $FF -f lavfi -i "testsrc=size=32x24:rate=25" -frames:v 60 -fps_mode passthrough -c:v ffv1 \
    -vf "setpts='if(lt(N,40),N*0.005/TB,(0.2+(N-40)*0.04)/TB)'" "$T/vfr.mkv" 2>/dev/null \
    || $FF -f lavfi -i "testsrc=size=32x24:rate=25" -frames:v 60 -vsync passthrough -c:v ffv1 \
    -vf "setpts='if(lt(N,40),N*0.005/TB,(0.2+(N-40)*0.04)/TB)'" "$T/vfr.mkv" || fail "cannot make the VFR clip"
  est=$("$BIN" -v "$T/vfr.mkv" 2>&1 | sed -n 's/.*fps, \([0-9]*\) frames (estimate).*/\1/p')
  if [ -n "$est" ] && [ "$est" -lt 60 ]; then
    out=$(script -qec "'$BIN' '$T/vfr.mkv' --stats -" /dev/null 2>&1)
    over=$(printf '%s' "$out" | grep -ao "[0-9]*/$est frames" | awk -F/ -v e="$est" '$1 + 0 > e + 0' | head -1)
    [ -z "$over" ] || fail "progress past the container's estimate of $est frames: '$over'"
    printf '%s' "$out" | grep -aq "entropy-stream: 60 frames, [0-9.]* fps"$'\r' \
      || fail "past the estimate: no 'K frames, fps' progress: $(printf '%s' "$out" | cat -v | tail -c 600)"
  else
    echo "test_cli_video: VFR estimate check skipped (this FFmpeg estimates '${est:-none}' of 60 frames)"
  fi
  out=$(script -qec "'$BIN' '$T/clip.mkv' -o '$T/tty.npy' -y --no-progress" /dev/null 2>&1)
  printf '%s' "$out" | grep -aq " fps, ETA" && fail "--no-progress on a tty: progress shown"
  out=$(script -qec "'$BIN' '$T/clip.mkv' -o '$T/tty.npy' -y -q" /dev/null 2>&1)
  [ -z "$out" ] || fail "-q on a tty: printed $(printf '%s' "$out" | cat -v)"
fi

# Standard input's records are named "-" (raw frames: any FFmpeg build reads them).
head -c 48 /dev/urandom | "$BIN" -q - --raw gray8:4x4 --stats "$T/raw-name.jsonl" ||
  fail "raw stdin --stats: exit $?"
"$PY" - "$T/raw-name.jsonl" <<'EOF' || fail "raw stdin records not named -"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 3 and all(r['name'] == '-' for r in recs), recs
EOF
# Neither -o nor --stats: each frame's statistics line on stdout (it computed and wrote
# nothing), named by the input, numbered, timed, the numbers of --stats to 4 decimals.
"$BIN" -q "$T/clip.mkv" -w $K --border reflect >"$T/v-line.txt" || fail "video stats line: exit $?"
"$PY" - "$T/v-line.txt" "$T/v.csv" "$T/clip.mkv" <<'EOF' || fail "video stats line"
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(lines) == len(rows), (len(lines), len(rows))
for t, (l, r) in enumerate(zip(lines, rows)):
    want = ('%s frame %d at %.3f s: %sx%s, H mean %.4f std %.4f min %.4f max %.4f bits, '
            'global entropy %.4f bits (levels %.4f bits)' % (
                sys.argv[3], t, float(r['pts']), r['width'], r['height'], float(r['mean']),
                float(r['std']), float(r['min']), float(r['max']), float(r['global_entropy']),
                float(r['global_entropy_levels'])))
    assert l == want, (l, want)
EOF
# -v of a one-frame video: "1 frame", never "1 frames" or "(s)" (issue 32).
$FF -f lavfi -i "testsrc=size=32x24:rate=10" -frames:v 1 -c:v ffv1 "$T/one.mkv" || fail "cannot make one.mkv"
msg=$("$BIN" -v --no-progress "$T/one.mkv" -o "$T/one.npy" 2>&1); rc=$?
[ $rc = 0 ] || fail "-v one frame: exit $rc ($msg)"
printf '%s\n' "$msg" | grep -q "^entropy-stream: 1 frame, 32x24" || fail "-v one frame: summary: $msg"
printf '%s\n' "$msg" | grep -Eq "(^|[^0-9./])1 (frame|file|worker|thread|GPU|pixel|packet)s\b|\(s\)" &&
  fail "-v one frame: a plural of one, or (s): $msg"

if [ $FAIL -ne 0 ]; then
  echo "test_cli_video: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_video: all checks passed"
