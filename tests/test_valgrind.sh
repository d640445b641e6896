#!/bin/bash
# test_valgrind.sh - a few small runs of the program under valgrind's memcheck, each failing on
# any error valgrind reports (--error-exitcode): an H.264 .mp4 (the decoder's frames lent to
# the CPU engine: their buffers once held bytes the decoder never writes, and valgrind reported
# "Use of uninitialised value" in ring_fill, issue 27), the same with a heat video, a PNG
# batch with --stats, raw gray8 frames on standard input. CPU only (--device cpu: no GPU
# driver under valgrind). Skipped without valgrind and in a sanitizer build (ASan's runtime and
# valgrind's do not mix). Leaks are not checked here (ASan's build does): errors only.
set -u
BIN=${ES_BIN:?ES_BIN not set}
if ! command -v valgrind >/dev/null; then
  echo "test_valgrind: skipped (no valgrind: tools/install-deps.sh installs it)"
  exit 77
fi
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  echo "test_valgrind: skipped (a sanitizer build)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
# (--track-origins=yes shows where an uninitialised value was made, at twice the time: add it
# to look into a failure)
VG=(valgrind -q --error-exitcode=99 --leak-check=no)
# vg NAME ARGS...: the program under valgrind; its exit must be 0 and valgrind silent.
vg() {
  local name=$1
  shift
  "${VG[@]}" --log-file="$T/$name.vg" "$BIN" -q --device cpu "$@" 2> "$T/$name.err"
  local rc=$?
  [ $rc = 0 ] || fail "$name: exit $rc: $(cat "$T/$name.err")"
  if [ -s "$T/$name.vg" ]; then
    fail "$name: valgrind reported:"
    head -n 40 "$T/$name.vg"
  fi
}

# Raw gray8 frames on standard input (no FFmpeg decoder), 24x16, 3 frames, clip border.
head -c $((24 * 16 * 3)) /dev/urandom > "$T/raw.bin"
vg raw --raw gray8:24x16 - -o "$T/raw.npy" --border clip < "$T/raw.bin"

# PNG batch: two small grey and RGB images, maps and --stats.
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ] && command -v ffmpeg >/dev/null; then
  mkdir -p "$T/in"
  ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=37x23" -frames:v 1 -pix_fmt gray "$T/in/a.png" &&
    ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=29x31" -frames:v 1 -pix_fmt rgb24 "$T/in/b.png" ||
    fail "cannot make the PNGs"
  vg png "$T/in" -o "$T/out" --stats "$T/png.csv"
else
  echo "test_valgrind: PNG case skipped (no ffmpeg to make the images)"
fi

# H.264 at 96x64 (64x48 did not show the uninitialised bytes: its rows need no padding read),
# 8 frames with B-frames: --stats and a .npy, then a heat video (x264 under valgrind too).
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ] && command -v ffmpeg >/dev/null &&
  ffmpeg -hide_banner -encoders 2>/dev/null | grep -q ' libx264 '; then
  ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=96x64:rate=25" -frames:v 8 -c:v libx264 \
    -threads 1 -pix_fmt yuv420p -fflags +bitexact -flags:v +bitexact "$T/h264.mp4" ||
    fail "cannot make the H.264 clip"
  vg h264 "$T/h264.mp4" -o "$T/h264.npy" --stats "$T/h264.csv"
  vg h264-mp4 "$T/h264.mp4" -o "$T/heat.mp4"
else
  echo "test_valgrind: H.264 cases skipped (no FFmpeg or libx264)"
fi

if [ $FAIL -ne 0 ]; then
  echo "test_valgrind: $FAIL failure(s)"
  exit 1
fi
echo "test_valgrind: all checks passed"
