#!/bin/bash
# test_cli_param_msgs.sh - the CLI's lines for io/'s messages about a parameter (issue 26):
# the library names the parameter ("more than max_pixels 47", "(band 0..2)", "preset warp9
# or crf 20: ..."), and tools/cli_msg.c gives it the flag, so that each line is the one the
# CLI has always printed, byte for byte, flag included wherever the name stands: at the
# start, after "(", after " or ", after "than " and "exceeds ", and after the "FILE: " the
# library's run puts first. tests/test_io_param_msgs.c checks the library's side.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SRC=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
cd "$T" || exit 1
[ "${ES_HAVE_FFMPEG:-0}" = 1 ] || { echo "test_cli_param_msgs: skipped: no FFmpeg"; exit 77; }

# line CODE WANT ARGS...: exit code CODE, and stderr exactly the one line WANT; no output left.
n=0
line() {
  local code=$1 want=$2 rc
  shift 2
  n=$((n + 1))
  "$BIN" -q "$@" -o "o$n.${OUTEXT:-npy}" </dev/null >/dev/null 2>err.txt
  rc=$?
  [ "$rc" = "$code" ] || fail "$*: exit $rc, not $code ($(head -c 300 err.txt))"
  [ "$(cat err.txt)" = "$want" ] || fail "$*: said '$(cat err.txt)', want '$want'"
  [ -e "o$n.${OUTEXT:-npy}" ] && fail "$*: an output was left"
  return 0
}

# Black PNGs by Python's zlib (the GPU machine's minimal FFmpeg has no lavfi color source),
# the TIFF written by the program itself.
"$PY" - <<'EOF2' && "$BIN" -q g10.png -o g.tif --format gray8 || { echo "cannot make the inputs"; exit 1; }
import struct, zlib
def png(path, w, h):
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"\0" * ((w + 1) * h))) + chunk(b"IEND", b""))
png("g.png", 8, 6)
png("g10.png", 10, 4)
EOF2
printf 'P5 3000 2000 255\n' > g.pgm && head -c 64 /dev/zero >> g.pgm
clip=$SRC/samples/clip.mp4

# max_pixels: "more than" (PNG, TIFF, a PGM through libavcodec) and "exceeds" (video, raw)
line 2 "entropy-stream: g.png: image is 8 x 6 = 48 pixels, more than --max-pixels 47" g.png --max-pixels 47
line 2 "entropy-stream: g.tif: image is 10 x 4 = 40 pixels, more than --max-pixels 39" g.tif --max-pixels 39
if ffmpeg -hide_banner -decoders 2>/dev/null | grep -q " pgm "; then
  line 2 "entropy-stream: g.pgm: image is 3000 x 2000 = 6000000 pixels, more than --max-pixels 5999999" \
    g.pgm --max-pixels 5999999
else
  echo "libavcodec without a PGM decoder: the PGM's line not checked"
fi
line 2 "entropy-stream: $clip: frame size 320x240 exceeds --max-pixels 1000" "$clip" --max-pixels 1000
head -c 30000 /dev/zero > frames.raw
n=$((n + 1))
"$BIN" -q - --raw gray8:100x100 --max-pixels 9999 -o "o$n.npy" <frames.raw 2>err.txt
rc=$?
[ $rc = 2 ] && [ "$(cat err.txt)" = "entropy-stream: -: frame size 100x100 exceeds --max-pixels 9999" ] ||
  fail "raw over --max-pixels: exit $rc, '$(cat err.txt)'"

# A video encoder's options, refused after "FILE: " (the run's sink)
OUTEXT=mkv line 1 "entropy-stream: o$((n + 1)).mkv: --codec nosuch: no such video encoder in libavcodec" \
  "$clip" --codec nosuch
OUTEXT=mp4 line 1 "entropy-stream: o$((n + 1)).mp4: --crf: encoder mpeg4 has no crf option" \
  "$clip" --codec mpeg4 --crf 20
OUTEXT=mp4 line 1 "entropy-stream: o$((n + 1)).mp4: --pix-fmt applies to heat video only (--format heat)" \
  "$clip" --format gray8 --pix-fmt yuv420p
# libx265 3.5 leaks of its own at every encoder (test_cli_video.sh): not LeakSanitizer's count
X265_ASAN="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
if ffmpeg -hide_banner -encoders 2>/dev/null | grep -q " libx265 "; then
  OUTEXT=mkv ASAN_OPTIONS=$X265_ASAN line 1 "entropy-stream: o$((n + 1)).mkv: --preset warp9 or --crf 20: refused by encoder libx265" \
    "$clip" --codec libx265 --preset warp9 --crf 20
  OUTEXT=mkv ASAN_OPTIONS=$X265_ASAN line 1 "entropy-stream: o$((n + 1)).mkv: --preset warp9: not a preset of encoder libx265" \
    "$clip" --codec libx265 --preset warp9
else
  echo "no libx265 in ffmpeg: the refusals at the encoder's open not checked"
fi

# TIFF bands and slides (numpy and tifffile write them)
if "$PY" -c "import numpy, tifffile" 2>/dev/null; then
  "$PY" -c "
import numpy as np, tifffile
tifffile.imwrite('b3.tif', np.zeros((4, 9, 3), np.uint8), photometric='minisblack', planarconfig='contig')
tifffile.imwrite('f.tif', np.zeros((4, 9), np.float32))
tifffile.imwrite('s.tif', np.zeros((48, 64, 3), np.uint8), photometric='rgb', tile=(16, 16))
" || fail "cannot write the TIFFs"
  line 1 "entropy-stream: b3.tif: no band 3: the image has 3 (--band 0..2)" b3.tif --band 3
  line 1 "entropy-stream: b3.tif: no band 3: the image has 3 (--band 0..2)" b3.tif --band 3 --band-rows 2
  line 1 "entropy-stream: f.tif: --band-rows: not for float32 samples (computed whole)" f.tif --band-rows 2
  if "$BIN" --level 0 "$SRC/samples/chelsea.png" 2>&1 | grep -q "built without OpenSlide"; then
    echo "no OpenSlide: the slide's lines not checked"
  else
    line 1 "entropy-stream: s.tif: --level 3: the slide has levels 0..0" s.tif --level 3
    line 2 "entropy-stream: s.tif: level 0 is 64 x 48, more than --max-pixels 3071" s.tif --level 0 --max-pixels 3071
  fi
else
  echo "no numpy and tifffile: the band and slide lines not checked"
fi

echo "test_cli_param_msgs: $n cases, $FAIL failure(s)"
[ $FAIL = 0 ]
