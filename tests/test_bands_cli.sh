#!/bin/bash
# test_bands_cli.sh - one image in row bands through the CLI (--band-rows, whole-slide
# images through OpenSlide): the .npy, the rendered .png and the --stats record of a band
# run equal a whole-image run's, byte for byte, for bands of 1, 2, r, an odd count and the
# budget's, odd windows, disk, reflect, 8 and 16 bits; .tif outputs (float32, heat, gray16)
# equal the whole image's; tiled and striped TIFF inputs (always in bands) equal the PNG of
# the same pixels; a generic tiled pyramidal TIFF made
# here (tifffile) read through OpenSlide at levels 0, 1 and 2 equals the same pixels as an
# RGB PNG and as a striped RGB TIFF (the same luma rule, io/es_luma.h); bad uses (a missing level, a file OpenSlide cannot read,
# --band-rows out of range or with a video) with SPEC 3's exit codes; progress on stderr;
# SIGINT mid-image: exit 130, nothing under the output's name, no temporary left;
# samples/tissue_mask.py finds the tissue of a slide made here.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SRC=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
BPID=
cleanup() {
  [ -n "$BPID" ] && kill -KILL "$BPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
run() { # run EXPECTED_RC LABEL ARGS...: the run's exit code must be EXPECTED_RC
  local want=$1 label=$2
  shift 2
  "$BIN" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$label: exit $rc, want $want ($(head -c 300 "$T/err"))"
}

# ---- Band runs equal whole-image runs (PNG inputs: the image is read whole, then banded).
for img in chelsea.png moon16.png camera.png; do
  for opts in "-w 5" "-w 9 --shape disk" "-w 15 --border reflect -L 64" "-w 63 --border reflect" \
              "-w 31 --shape disk -L 7"; do
    # shellcheck disable=SC2086
    run 0 "$img $opts whole" "$SRC/samples/$img" $opts -o "$T/w.npy" --stats "$T/w.csv" -y -q
    # shellcheck disable=SC2086
    run 0 "$img $opts heat whole" "$SRC/samples/$img" $opts -o "$T/w.png" -y -q
    r=$(( $(echo "$opts" | sed 's/-w \([0-9]*\).*/\1/') / 2 ))
    for br in 1 2 $r 7 0; do
      label="$img $opts --band-rows $br"
      # shellcheck disable=SC2086
      run 0 "$label" "$SRC/samples/$img" $opts --band-rows $br -o "$T/b.npy" --stats "$T/b.csv" -y -q
      cmp -s "$T/w.npy" "$T/b.npy" || fail "$label: .npy differs from the whole image's"
      cmp -s "$T/w.csv" "$T/b.csv" || fail "$label: --stats differs: $(tail -1 "$T/w.csv" | cut -c1-120) vs $(tail -1 "$T/b.csv" | cut -c1-120)"
      # shellcheck disable=SC2086
      run 0 "$label heat" "$SRC/samples/$img" $opts --band-rows $br -o "$T/b.png" -y -q
      cmp -s "$T/w.png" "$T/b.png" || fail "$label: .png differs from the whole image's"
    done
  done
done
# TIFF out: a band run's file is the whole-image run's, byte for byte (float32 and heat).
for fmt in f32 heat gray16; do
  run 0 "tif $fmt whole" "$SRC/samples/moon16.png" -w 9 --format $fmt -o "$T/w.tif" -y -q
  run 0 "tif $fmt bands" "$SRC/samples/moon16.png" -w 9 --format $fmt --band-rows 3 -o "$T/b.tif" -y -q
  cmp -s "$T/w.tif" "$T/b.tif" || fail "tif $fmt: the band run's file differs from the whole image's"
done
# TIFF in (always in bands): tiled and striped, 16 bits, equal to the PNG of the same pixels.
if "$PY" -c "import numpy, tifffile, PIL" 2>/dev/null; then
  "$PY" - "$SRC/samples/moon16.png" "$T" <<'EOF' || fail "making the TIFFs"
import sys, numpy as np, tifffile
from PIL import Image
a = np.asarray(Image.open(sys.argv[1])).astype(np.uint16)
tifffile.imwrite(f"{sys.argv[2]}/tiled.tif", a, tile=(64, 64), compression="zlib")
tifffile.imwrite(f"{sys.argv[2]}/striped.tif", a, rowsperstrip=5)
EOF
  run 0 "moon16 png" "$SRC/samples/moon16.png" -w 11 --shape disk -o "$T/w.npy" --stats "$T/w.csv" -y -q
  for t in tiled striped; do
    for br in 1 6 0; do
      run 0 "$t tif --band-rows $br" "$T/$t.tif" -w 11 --shape disk --band-rows $br -o "$T/b.npy" --stats "$T/b.csv" -y -q
      cmp -s "$T/w.npy" "$T/b.npy" || fail "$t tif --band-rows $br: .npy differs from the PNG's"
      diff -q <(cut -d, -f2- "$T/w.csv") <(cut -d, -f2- "$T/b.csv") >/dev/null ||
        fail "$t tif --band-rows $br: --stats differs from the PNG's"
    done
  done
fi

# The statistics line (neither -o nor --stats) is the whole image's too.
run 0 "stats line whole" "$SRC/samples/chelsea.png" -w 7
cp "$T/out" "$T/line.w"
run 0 "stats line bands" "$SRC/samples/chelsea.png" -w 7 --band-rows 3
cmp -s "$T/line.w" "$T/out" || fail "stats line differs: $(cat "$T/out")"

# ---- Bad uses.
run 1 "--band-rows -1" "$SRC/samples/chelsea.png" --band-rows -1
grep -q -- "--band-rows -1: must be 0\.\." "$T/err" || fail "--band-rows -1: $(cat "$T/err")"
run 1 "--band-rows x" "$SRC/samples/chelsea.png" --band-rows x
run 1 "--band-rows with a directory" "$SRC/samples" --band-rows 4 -o "$T/d"
grep -q -- "--band-rows: only for one image" "$T/err" || fail "--band-rows dir: $(cat "$T/err")"
[ -e "$T/d" ] && fail "--band-rows dir: the output directory was made"
run 1 "--band-rows auto range" "$SRC/samples/chelsea.png" --band-rows 4 --range auto -o "$T/a.png"
[ -e "$T/a.png" ] && fail "--range auto: a picture was written"
run 3 "--band-rows existing" "$SRC/samples/chelsea.png" --band-rows 4 -o "$T/b.npy"
grep -q "exists" "$T/err" || fail "existing output: $(cat "$T/err")"

# ---- Whole-slide images through OpenSlide.
if "$BIN" --level 0 "$SRC/samples/chelsea.png" 2>&1 | grep -q "built without OpenSlide"; then
  echo "OpenSlide: not built in, slide cases skipped"
elif ! "$PY" -c "import numpy, tifffile, PIL" 2>/dev/null; then
  echo "OpenSlide: $PY lacks numpy, tifffile or PIL, slide cases skipped"
else
  # A generic tiled pyramidal TIFF (levels 1/2 and 1/4, tiles 256, deflate) of odd sizes, and
  # each level's pixels as an RGB PNG, which the PNG reader turns grey by the same rule.
  "$PY" - "$T" <<'EOF' || fail "making the pyramid"
import sys, numpy as np, tifffile
from PIL import Image
t = sys.argv[1]
rng = np.random.default_rng(7)
h, w = 1200, 1300  # divisible by 4: levels of exact downsamples 2 and 4
img = (rng.integers(0, 256, (h, w, 3)) // 24 * 24).astype(np.uint8)
img[100:400, 200:900] = [200, 60, 30]
img[500:, :300] = rng.integers(0, 256, (h - 500, 300, 1)).astype(np.uint8)
with tifffile.TiffWriter(f"{t}/slide.tif") as tw:
    lv = img
    for i in range(3):
        tw.write(lv, tile=(256, 256), compression="zlib", photometric="rgb",
                 subfiletype=0 if i == 0 else 1, metadata=None)
        Image.fromarray(lv).save(f"{t}/level{i}.png")
        tifffile.imwrite(f"{t}/level{i}.tif", lv, photometric="rgb", rowsperstrip=17)
        # OpenSlide's generic TIFF takes the next level as stored (here a 2x decimation).
        # Sides that do not divide give a downsample that is no integer, where OpenSlide
        # resamples a region by a fraction of a pixel (docs/behaviour.md, Bands). And every
        # level at least a tile tall: OpenSlide 3.4.1 shifts a level shorter than one tile
        # by the tile's padding (its own openslide-write-png shows the first rows blank).
        lv = np.ascontiguousarray(lv[::2, ::2])
EOF
  for lv in 0 1 2; do
    for opts in "-w 5" "-w 15 --shape disk --border reflect -L 64"; do
      label="slide level $lv $opts"
      # shellcheck disable=SC2086
      run 0 "$label png" "$T/level$lv.png" $opts -o "$T/p.npy" --stats "$T/p.csv" -y -q
      # shellcheck disable=SC2086
      run 0 "$label" "$T/slide.tif" --level $lv $opts --band-rows 37 -o "$T/s.npy" --stats "$T/s.csv" -y -q
      cmp -s "$T/p.npy" "$T/s.npy" || fail "$label: .npy differs from the PNG of the same pixels"
      # shellcheck disable=SC2086
      run 0 "$label tif" "$T/level$lv.tif" $opts -o "$T/t.npy" -y -q
      cmp -s "$T/t.npy" "$T/s.npy" || fail "$label: .npy differs from the TIFF of the same pixels"
      diff -q <(cut -d, -f2- "$T/p.csv") <(cut -d, -f2- "$T/s.csv") >/dev/null ||
        fail "$label: --stats differs from the PNG's"
    done
  done
  run 1 "slide --level 3" "$T/slide.tif" --level 3 -o "$T/x.npy"
  grep -q -- "--level 3: the slide has levels 0..2" "$T/err" || fail "--level 3: $(cat "$T/err")"
  [ -e "$T/x.npy" ] && fail "--level 3: an output was left"
  head -c 5000 "$T/slide.tif" >"$T/cut.svs"
  run 2 "truncated slide" "$T/cut.svs" -o "$T/x.npy"
  grep -q "^entropy-stream: $T/cut.svs: " "$T/err" || fail "truncated slide: $(cat "$T/err")"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "truncated slide: not one line: $(cat "$T/err")"
  [ -e "$T/x.npy" ] && fail "truncated slide: an output was left"
  printf 'not a slide at all' >"$T/junk.svs"
  run 2 "not a slide" "$T/junk.svs" --stats "$T/x.csv"
  [ -e "$T/x.csv" ] && fail "not a slide: a --stats file was left"

  # ---- samples/tissue_mask.py: glass (flat white with faint noise) and tissue (a textured
  # disc), as a 3-level pyramid; the mask of its lowest level must find the disc.
  "$PY" - "$T" <<'EOF' || fail "making the tissue slide"
import sys, numpy as np, tifffile
rng = np.random.default_rng(5)
h, w = 1024, 1536
y, x = np.mgrid[0:h, 0:w]
disc = (y - 500) ** 2 + (x - 700) ** 2 < 380 ** 2
img = np.full((h, w, 3), 236, np.uint8) + rng.integers(0, 3, (h, w, 1)).astype(np.uint8)
tex = rng.integers(90, 230, (h, w, 3)).astype(np.uint8)
img[disc] = tex[disc]
with tifffile.TiffWriter(f"{sys.argv[1]}/tissue.tif") as tw:
    lv = img
    for i in range(3):
        tw.write(lv, tile=(256, 256), compression="zlib", photometric="rgb",
                 subfiletype=0 if i == 0 else 1, metadata=None)
        lv = np.ascontiguousarray(lv[::2, ::2])
np.save(f"{sys.argv[1]}/disc.npy", disc[::4, ::4])
EOF
  if "$PY" "$SRC/samples/tissue_mask.py" "$T/tissue.tif" -o "$T/mask.png" --entropy-stream "$BIN" \
      >"$T/mask.out" 2>&1; then
    grep -q "level 2, 384x256" "$T/mask.out" || fail "tissue_mask: not the lowest level: $(cat "$T/mask.out")"
    "$PY" - "$T" <<'EOF' || fail "tissue_mask: the mask misses the tissue"
import sys, numpy as np
from PIL import Image
m = np.asarray(Image.open(f"{sys.argv[1]}/mask.png")) > 0
d = np.load(f"{sys.argv[1]}/disc.npy")
inside, outside = m[d].mean(), m[~d].mean()
print(f"tissue_mask: {100 * inside:.1f}% of the tissue, {100 * outside:.1f}% of the glass")
sys.exit(0 if m.shape == d.shape and inside > 0.95 and outside < 0.05 else 1)
EOF
  else
    fail "tissue_mask.py: $(cat "$T/mask.out")"
  fi

  # ---- Progress, and SIGINT in the middle of a large image.
  "$PY" - "$T" <<'EOF' || fail "making the large TIFF"
import sys, numpy as np, tifffile
rng = np.random.default_rng(3)
tile = (rng.integers(0, 256, (256, 256)) // 8 * 8).astype(np.uint8)
H = W = 6144
with tifffile.TiffWriter(f"{sys.argv[1]}/large.tif", bigtiff=True) as tw:
    tw.write((tile for _ in range((H // 256) * (W // 256))), shape=(H, W), dtype=np.uint8,
             tile=(256, 256), compression="zlib", metadata=None)
EOF
  mkdir "$T/sig"
  "$BIN" "$T/large.tif" --level 0 -w 63 --band-rows 8 --threads 1 --device cpu --progress \
    -o "$T/sig/large.npy" 2>"$T/sig.err" &
  BPID=$!
  # Interrupted once the temporary holds some bands.
  for _ in $(seq 1 200); do
    n=$(find "$T/sig" -type f -size +2M | wc -l)
    [ "$n" -gt 0 ] && break
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.05
  done
  [ "$n" -gt 0 ] || fail "SIGINT: no temporary grew in 10 s"
  kill -INT "$BPID"
  wait "$BPID"
  rc=$?
  BPID=
  [ "$rc" = 130 ] || fail "SIGINT: exit $rc, want 130 ($(tr '\r' '\n' <"$T/sig.err" | tail -3))"
  [ -z "$(ls -A "$T/sig")" ] || fail "SIGINT: left $(ls -A "$T/sig")"
  tr '\r' '\n' <"$T/sig.err" | grep -q "band [0-9]*/768, [0-9.]* Mpixel/s, ETA [0-9?]" ||
    fail "progress: no 'band i/768, Mpixel/s, ETA' line: $(tr '\r' '\n' <"$T/sig.err" | head -3)"
  # The same into a .tif (the tiled writer's temporary): stopped after a few bands drawn.
  "$BIN" "$T/large.tif" --level 0 -w 63 --band-rows 8 --threads 1 --device cpu --progress \
    -o "$T/sig/large.tif" 2>"$T/sig2.err" &
  BPID=$!
  for _ in $(seq 1 200); do
    n=$(tr '\r' '\n' <"$T/sig2.err" | grep -c "entropy-stream: band")
    [ "$n" -ge 3 ] && break
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.05
  done
  [ "$n" -ge 3 ] || fail "SIGINT .tif: no progress in 10 s"
  kill -INT "$BPID"
  wait "$BPID"
  rc=$?
  BPID=
  [ "$rc" = 130 ] || fail "SIGINT .tif: exit $rc, want 130 ($(tr '\r' '\n' <"$T/sig2.err" | tail -3))"
  [ -z "$(ls -A "$T/sig")" ] || fail "SIGINT .tif: left $(ls -A "$T/sig")"
fi

[ "$FAIL" = 0 ] && echo "test_bands_cli: all checks passed" && exit 0
echo "test_bands_cli: $FAIL check(s) failed"
exit 1
