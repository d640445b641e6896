#!/bin/bash
# test_cli_stack.sh - a multi-page TIFF as a stack through the library's run (io/src_tiff.c,
# io/sink_tiff.c), with inputs made by ffmpeg and tiffcp (no tifffile needed, unlike
# test_tiff_cli.py): each page's statistics are those of the page alone, with --mask too;
# pages of another size go to a directory, and with a mask fail the stack at that page (exit
# 2, the frames and records before it kept); a damaged page leaves no .npy or .tif, nor a
# temporary.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
SAM=$(dirname "$0")/../samples
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ] || ! command -v ffmpeg >/dev/null || ! command -v tiffcp >/dev/null ||
   ! command -v tiffinfo >/dev/null; then
  echo "test_cli_stack: skipped (needs ffmpeg, tiffcp and tiffinfo: tools/install-deps.sh)"
  exit 77
fi
# A minimal FFmpeg (the GPU machine's) lacks the TIFF encoder or lavfi's color source.
if ! ffmpeg -hide_banner -encoders 2>/dev/null | awk '$2 == "tiff" { f = 1 } END { exit !f }' ||
   ! ffmpeg -hide_banner -filters 2>/dev/null | awk '$2 == "color" { f = 1 } END { exit !f }'; then
  echo "test_cli_stack: skipped (this FFmpeg has no TIFF encoder or no lavfi color source)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
ff() { ffmpeg -nostdin -v error -y "$@"; }

ff -i "$SAM/camera.png" -pix_fmt gray "$T/p0.tif"
ff -i "$SAM/camera.png" -vf "lutyuv=y=val/2" -pix_fmt gray "$T/p1.tif"
ff -i "$SAM/chelsea.png" -pix_fmt gray "$T/q.tif"
ff -f lavfi -i "color=black:s=512x512,drawbox=x=100:y=60:w=300:h=200:color=white:t=fill" \
  -frames:v 1 -pix_fmt gray "$T/mask.png"
(cd "$T" && tiffcp p0.tif p1.tif stack.tif && tiffcp p0.tif q.tif p1.tif mixed.tif &&
  tiffcp -c zip p0.tif p1.tif p1.tif dmg.tif) || { echo "FAIL: tiffcp"; exit 1; }
# Page 2 of dmg.tif damaged: garbage over its first deflate strip.
off=$(tiffinfo -s -2 "$T/dmg.tif" 2>/dev/null | awk '/Strips:/ { getline; gsub(/[][,]/, " "); print $2; exit }')
printf 'garbage%.0s' 1 2 3 4 5 6 7 8 | dd of="$T/dmg.tif" bs=1 seek=$((off + 4)) conv=notrunc 2>/dev/null

# The numbers of a statistics line, after its size.
nums() { sed 's/^.*: [0-9]*x[0-9]*, //'; }

# Each page as the page alone, with and without a mask.
for m in "" "--mask $T/mask.png"; do
  # shellcheck disable=SC2086
  out=$("$BIN" -q "$T/stack.tif" $m) || fail "stack $m: exit $?"
  [ "$(echo "$out" | wc -l)" = 2 ] || fail "stack $m: two lines: $out"
  for p in 0 1; do
    # shellcheck disable=SC2086
    one=$("$BIN" -q "$T/p$p.tif" $m | nums)
    got=$(echo "$out" | grep "frame $p:" | nums)
    [ -n "$one" ] && [ "$got" = "$one" ] || fail "stack $m page $p: '$got', alone '$one'"
  done
done
a=$("$BIN" -q "$T/stack.tif" | nums)
b=$("$BIN" -q "$T/stack.tif" --mask "$T/mask.png" | nums)
[ "$a" != "$b" ] || fail "--mask changes nothing on a stack: $a"

# Pages of another size: a directory takes them, each its own size.
"$BIN" -q "$T/mixed.tif" -o "$T/fr" --stats "$T/fr.csv" || fail "mixed to a directory: exit $?"
sizes=$("$PY" - "$T/fr" <<'PYEOF'
import struct, sys
for i in range(3):
    b = open("%s/frame_%06d.png" % (sys.argv[1], i), "rb").read(24)
    print("%dx%d" % struct.unpack(">II", b[16:24]))
PYEOF
)
[ "$(echo $sizes)" = "512x512 451x300 512x512" ] || fail "mixed pages' sizes: $sizes"
[ "$(wc -l < "$T/fr.csv")" = 4 ] || fail "mixed: a record a page: $(cat "$T/fr.csv")"

# ... and with a mask, fail the stack at page 1 (exit 2), page 0's frame and record kept.
err=$("$BIN" -q "$T/mixed.tif" --mask "$T/mask.png" -o "$T/fm" --stats "$T/fm.csv" 2>&1)
rc=$?
[ $rc = 2 ] || fail "mixed with a mask: exit $rc, want 2"
echo "$err" | grep -q "mixed.tif: frame 1: 451x300, the mask .*mask.png 512x512: not the same size" ||
  fail "mixed with a mask: message '$err'"
[ "$(ls "$T/fm")" = frame_000000.png ] || fail "mixed with a mask: frames $(ls "$T/fm")"
[ "$(wc -l < "$T/fm.csv")" = 2 ] || fail "mixed with a mask: records $(cat "$T/fm.csv")"

# A damaged page: exit 2, named; no .npy or .tif left (nor a temporary), the records kept.
for o in m.npy m.tif; do
  mkdir "$T/d_$o"
  err=$("$BIN" -q "$T/dmg.tif" -o "$T/d_$o/$o" --stats "$T/d_$o/s.csv" 2>&1)
  rc=$?
  [ $rc = 2 ] || fail "damaged page to $o: exit $rc, want 2"
  echo "$err" | grep -q "dmg.tif: page 2: " || fail "damaged page to $o: message '$err'"
  [ "$(ls "$T/d_$o")" = s.csv ] || fail "damaged page to $o: left $(ls "$T/d_$o")"
  [ "$(wc -l < "$T/d_$o/s.csv")" = 3 ] || fail "damaged page to $o: records $(cat "$T/d_$o/s.csv")"
done

[ $FAIL = 0 ] && echo "test_cli_stack: all passed"
exit $((FAIL > 0))
