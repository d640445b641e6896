#!/bin/bash
# test_cli_image.sh - one PNG through the CLI: .npy against a numpy reference (clip/reflect,
# square/disk, grey/RGB/16-bit, bits/nats), heat/gray8/gray16 PNGs, --stats CSV and JSONL
# consistent with the map, -y / -n / refusing an existing output, FIFO/device/link outputs
# (written into, written through), and names up to NAME_MAX.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
SEED=${ES_TEST_SEED:-$(( $(date +%s) ^ $$ ))}
echo "test_cli_image: seed $SEED (ES_TEST_SEED to replay)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }

cat > "$T/h.py" <<'EOF'
# Helpers: a tiny PNG writer/reader (zlib) and the entropy map computed directly with numpy.
import json, struct, sys, zlib
import numpy as np

def png_write(path, a, rgb=False):
    a = np.asarray(a)
    h, w = a.shape[:2]
    depth = 16 if a.dtype == np.uint16 else 8
    ctype = 2 if rgb else 0
    raw = b''
    be = a.astype('>u2') if depth == 16 else a.astype(np.uint8)
    for y in range(h):
        raw += b'\0' + be[y].tobytes()
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    ihdr = struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) +
                           chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))

def png_read(path):
    d = open(path, 'rb').read()
    assert d[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat, hdr = 8, b'', None
    while pos < len(d):
        n, = struct.unpack('>I', d[pos:pos + 4]); t = d[pos + 4:pos + 8]; body = d[pos + 8:pos + 8 + n]
        if t == b'IHDR': hdr = struct.unpack('>IIBBBBB', body)
        if t == b'IDAT': idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, il = hdr
    assert il == 0
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    bpp = ch * depth // 8
    raw = zlib.decompress(idat)
    stride = w * bpp
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    p = 0
    for y in range(h):
        f = raw[p]; line = np.frombuffer(raw[p + 1:p + 1 + stride], np.uint8).astype(np.int32); p += 1 + stride
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 0: v = line[x]
            elif f == 1: v = line[x] + a
            elif f == 2: v = line[x] + b
            elif f == 3: v = line[x] + (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                v = line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)
            cur[x] = v & 255
        out[y] = cur; prev = cur
    if depth == 16:
        out = out.view('>u2').astype(np.uint16)
    return w, h, depth, ctype, out.reshape(h, w, ch) if ch > 1 else out.reshape(h, w)

def entropy(img, depth, K, L, shape='square', border='clip', base='2'):
    img = np.asarray(img, np.int64)
    q = (img * L) >> depth
    H, W = q.shape
    r = (K - 1) // 2
    offs = [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)
            if shape == 'square' or dx * dx + dy * dy <= r * r]
    if border == 'reflect':
        pad = np.pad(q, r, mode='symmetric')
    else:
        pad = np.pad(q, r, mode='constant', constant_values=-1)
    cnt = {}
    N = np.zeros((H, W))
    for dy, dx in offs:
        s = pad[r + dy:r + dy + H, r + dx:r + dx + W]
        N += s >= 0
        for k in np.unique(s[s >= 0]):
            cnt.setdefault(k, np.zeros((H, W)))
            cnt[k] += s == k
    S = np.zeros((H, W))
    for c in cnt.values():
        S += np.where(c > 0, c * np.log2(np.maximum(c, 1)), 0)
    Hm = np.log2(N) - S / N
    if base == 'e':
        Hm *= np.log(2)
    return Hm

def npy(path):
    return np.load(path)

if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'make':  # make PATH W H KIND SEED   (KIND: g8, g16, rgb)
        path, w, h, kind, seed = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
        rng = np.random.default_rng(seed)
        # smooth-ish structure plus noise so entropy varies across the image
        yy, xx = np.mgrid[0:h, 0:w]
        base = (np.sin(xx / 3.0) + np.cos(yy / 5.0) + 2) / 4
        if kind == 'g16':
            a = (base * 65535 * 0.7 + rng.integers(0, 65535 * 0.3, (h, w))).astype(np.uint16)
            png_write(path, a)
        elif kind == 'rgb':
            a = (base[..., None] * 200 + rng.integers(0, 56, (h, w, 3))).astype(np.uint8)
            png_write(path, a, rgb=True)
        else:
            a = (base * 200 + rng.integers(0, 56, (h, w))).astype(np.uint8)
            png_write(path, a)
    elif cmd == 'check':  # check PNG NPY K L SHAPE BORDER BASE
        png, out, K, L, shape, border, base = sys.argv[2:9]
        w, h, depth, ctype, a = png_read(png)
        if ctype == 2:
            a = a.astype(np.int64)
            a = (299 * a[..., 0] + 587 * a[..., 1] + 114 * a[..., 2] + 500) // 1000
        ref = entropy(a, depth, int(K), int(L), shape, border, base)
        got = np.load(out)
        assert got.dtype == np.float32, got.dtype
        assert got.shape == (h, w), (got.shape, (h, w))
        err = np.abs(got.astype(np.float64) - ref).max()
        print('max abs error %.3g' % err)
        sys.exit(0 if err < 2e-5 else 1)
    elif cmd == 'pnginfo':  # prints W H DEPTH CTYPE
        w, h, depth, ctype, a = png_read(sys.argv[2])
        print(w, h, depth, ctype)
    elif cmd == 'gray':  # gray PNG NPY HMAX BITS: grey PNG = round(H / hmax * (2^bits-1)) +-1
        w, h, depth, ctype, a = png_read(sys.argv[2])
        m = np.load(sys.argv[3]).astype(np.float64)
        full = 2 ** int(sys.argv[5]) - 1
        exp = m / float(sys.argv[4]) * full
        d = np.abs(a.astype(np.float64) - exp).max()
        print('max grey deviation', d)
        sys.exit(0 if d <= 1.01 else 1)
    elif cmd == 'heat':  # heat PNG NPY: brighter (sum of RGB) where H is higher, mostly
        w, h, depth, ctype, a = png_read(sys.argv[2])
        m = np.load(sys.argv[3]).ravel()
        lum = a.reshape(-1, 3).astype(np.int64).sum(1)
        c = np.corrcoef(m, lum)[0, 1]
        print('heat/H correlation', c)
        sys.exit(0 if c > 0.9 else 1)
    elif cmd == 'stats':  # stats FILE NPY BINS HMAX NAME
        path, npyp, bins, hmax, name = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
        m = np.load(npyp).astype(np.float64)
        if path.endswith('.jsonl'):
            recs = [json.loads(l) for l in open(path) if l.strip()]
            assert len(recs) == 1, recs
            r = recs[0]
            hist = r['hist']
        else:
            import csv
            recs = list(csv.DictReader(open(path)))
            assert len(recs) == 1, recs
            r = {k: v for k, v in recs[0].items()}
            hist = [int(r['hist_%d' % i]) for i in range(bins)]
        assert r['name'] == name, (r['name'], name)
        assert int(r['width']) == m.shape[1] and int(r['height']) == m.shape[0]
        assert abs(float(r['mean']) - m.mean()) < 1e-4, (r['mean'], m.mean())
        assert abs(float(r['std']) - m.std()) < 1e-4, (r['std'], m.std())
        assert abs(float(r['min']) - m.min()) < 1e-6 and abs(float(r['max']) - m.max()) < 1e-6
        assert len(hist) == bins and sum(hist) == m.size, (len(hist), sum(hist))
        ref = np.histogram(np.clip(m, 0, hmax), bins=bins, range=(0, hmax))[0]
        # values on a bin edge may land on either side under float32
        assert np.abs(np.array(hist) - ref).sum() <= 0.01 * m.size + 2, (hist, ref.tolist())
        print('stats ok')
EOF

mk() { "$PY" "$T/h.py" make "$@" || { echo "cannot make input"; exit 1; }; }
check() { "$PY" "$T/h.py" check "$@"; }

# Odd sizes, different per run.
W=$(( 23 + SEED % 29 )); H=$(( 17 + (SEED / 7) % 23 ))
mk "$T/g8.png" $W $H g8 $SEED
mk "$T/rgb.png" $H $W rgb $((SEED + 1))
mk "$T/g16.png" $W $H g16 $((SEED + 2))
echo "sizes ${W}x${H}"

# .npy against the reference, several parameter sets.
run_npy() { # IN K L SHAPE BORDER BASE
  local out="$T/o_$RANDOM.npy"
  printf 'poison' > "$out.poison"
  if ! "$BIN" -q "$1" -o "$out" -w "$2" -L "$3" --shape "$4" --border "$5" --base "$6" --device cpu; then
    fail "$1 K=$2 L=$3 $4 $5 base $6: exit $?"
    return
  fi
  check "$1" "$out" "$2" "$3" "$4" "$5" "$6" || fail "$1 K=$2 L=$3 $4 $5 base $6: values differ from the reference"
}
run_npy "$T/g8.png" 5 16 square clip 2
run_npy "$T/g8.png" 7 16 square reflect 2
run_npy "$T/g8.png" 9 8 disk clip 2
run_npy "$T/g8.png" 5 256 disk reflect e
run_npy "$T/g8.png" 1 16 square clip 2
run_npy "$T/g8.png" 51 4 square reflect 2  # window larger than the image
run_npy "$T/rgb.png" 5 16 square clip 2
run_npy "$T/g16.png" 5 1000 square clip 2
run_npy "$T/g16.png" 3 65536 square reflect 2

# The default parameters (K=5, L=16, square, clip) with no options.
"$BIN" -q "$T/g8.png" -o "$T/def.npy" || fail "default run: exit $?"
check "$T/g8.png" "$T/def.npy" 5 16 square clip 2 || fail "defaults differ from K=5 L=16"

# PNG renderings: size, type, values.
"$BIN" -q "$T/g8.png" -o "$T/heat.png" || fail "heat: exit $?"
read -r w h d c < <("$PY" "$T/h.py" pnginfo "$T/heat.png")
[ "$w $h $d $c" = "$W $H 8 2" ] || fail "heat.png is $w x $h depth $d type $c, want $W x $H 8-bit RGB"
"$PY" "$T/h.py" heat "$T/heat.png" "$T/def.npy" || fail "heat colours do not follow H"
"$BIN" -q "$T/g8.png" -o "$T/g8out.png" --format gray8 || fail "gray8: exit $?"
read -r w h d c < <("$PY" "$T/h.py" pnginfo "$T/g8out.png")
[ "$w $h $d $c" = "$W $H 8 0" ] || fail "gray8 png is $w x $h depth $d type $c"
"$PY" "$T/h.py" gray "$T/g8out.png" "$T/def.npy" 4 8 || fail "gray8 values are not H/hmax*255"
"$BIN" -q "$T/g8.png" -o "$T/g16out.png" --format gray16 || fail "gray16: exit $?"
read -r w h d c < <("$PY" "$T/h.py" pnginfo "$T/g16out.png")
[ "$w $h $d $c" = "$W $H 16 0" ] || fail "gray16 png is $w x $h depth $d type $c"
"$PY" "$T/h.py" gray "$T/g16out.png" "$T/def.npy" 4 16 || fail "gray16 values are not H/hmax*65535"
"$BIN" -q "$T/g8.png" -o "$T/viridis.png" --colormap viridis || fail "viridis: exit $?"
cmp -s "$T/heat.png" "$T/viridis.png" && fail "--colormap viridis gives the same PNG as inferno"

# --range auto stretches each image's own min..max over the grey range; --overlay changes
# the heat (the source grey shows through).
"$BIN" -q "$T/g8.png" -o "$T/auto.png" --format gray8 --range auto || fail "--range auto: exit $?"
"$PY" - "$T/h.py" "$T/auto.png" <<'PYEOF2' || fail "--range auto does not span 0..255"
import sys, importlib.util
spec = importlib.util.spec_from_file_location('h', sys.argv[1]); h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
w, hh, d, c, a = h.png_read(sys.argv[2])
print('auto range grey', a.min(), a.max())
sys.exit(0 if a.min() == 0 and a.max() == 255 else 1)
PYEOF2
"$BIN" -q "$T/g8.png" -o "$T/overlay.png" --overlay 0.5 || fail "--overlay: exit $?"
cmp -s "$T/heat.png" "$T/overlay.png" && fail "--overlay 0.5 gives the same PNG as no overlay"
# --overlay A is the heat's opacity: 0 is the source grey alone (it was taken for "off" and
# gave the heat, as 1 does), 1 the heat alone, as without --overlay.
"$BIN" -q "$T/g8.png" -o "$T/ov0.png" --overlay 0 || fail "--overlay 0: exit $?"
"$BIN" -q "$T/g8.png" -o "$T/ov0g.png" --overlay 0 --format gray8 || fail "--overlay 0 gray8: exit $?"
"$BIN" -q "$T/g8.png" -o "$T/ov1.png" --overlay 1 || fail "--overlay 1: exit $?"
cmp -s "$T/heat.png" "$T/ov1.png" || fail "--overlay 1 differs from no overlay"
"$PY" - "$T/h.py" "$T/g8.png" "$T/ov0.png" "$T/ov0g.png" <<'PYEOF3' || fail "--overlay 0 is not the source grey"
import sys, importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location('h', sys.argv[1]); h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
src = h.png_read(sys.argv[2])[4]
rgb = h.png_read(sys.argv[3])[4]
grey = h.png_read(sys.argv[4])[4]
ok = rgb.shape == src.shape + (3,) and (rgb == src[..., None]).all() and (grey == src).all()
print('overlay 0 is the source grey:', ok)
sys.exit(0 if ok else 1)
PYEOF3

# Stats: CSV and JSONL, one record, consistent with the map; stats only (no -o).
B=$(( 5 + SEED % 20 ))
"$BIN" -q "$T/g8.png" --stats "$T/s.csv" --stats-bins $B || fail "stats csv: exit $?"
"$PY" "$T/h.py" stats "$T/s.csv" "$T/def.npy" $B 4 "$T/g8.png" || fail "stats CSV inconsistent with the map"
"$BIN" -q "$T/g8.png" -o "$T/s.npy" --stats "$T/s.jsonl" --stats-bins $B || fail "stats jsonl: exit $?"
"$PY" "$T/h.py" stats "$T/s.jsonl" "$T/s.npy" $B 4 "$T/g8.png" || fail "stats JSONL inconsistent with the map"
out=$("$BIN" -q "$T/g8.png" --stats - 2>/dev/null) || fail "stats to stdout: exit $?"
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "stats - should be a header and one row, got: $out"

# Existing outputs: refused (exit 3, exact message, file untouched), -n skips, -y replaces.
printf 'precious' > "$T/exists.npy"
msg=$("$BIN" -q "$T/g8.png" -o "$T/exists.npy" 2>&1); rc=$?
[ $rc = 3 ] || fail "existing output: exit $rc, want 3"
[ "$msg" = "entropy-stream: $T/exists.npy: exists (use -y to overwrite, -n to skip)" ] || fail "existing output message: $msg"
[ "$(cat "$T/exists.npy")" = precious ] || fail "refused output was modified"
"$BIN" -q -n "$T/g8.png" -o "$T/exists.npy"; rc=$?
[ $rc = 0 ] || fail "-n: exit $rc, want 0"
# Without -q, the skip is told (as for a video output); it used to be silent.
msg=$("$BIN" -n "$T/g8.png" -o "$T/exists.npy" 2>&1); rc=$?
[ $rc = 0 ] || fail "-n, not quiet: exit $rc, want 0"
[ "$msg" = "entropy-stream: $T/exists.npy: exists, skipped" ] || fail "-n message: $msg"
msg=$("$BIN" -q -n "$T/g8.png" -o "$T/exists.npy" 2>&1)
[ -z "$msg" ] || fail "-q -n printed: $msg"
[ "$(cat "$T/exists.npy")" = precious ] || fail "-n modified the existing output"
"$BIN" -q -y "$T/g8.png" -o "$T/exists.npy"; rc=$?
[ $rc = 0 ] || fail "-y: exit $rc"
check "$T/g8.png" "$T/exists.npy" 5 16 square clip 2 || fail "-y did not write the right map"
ls -A "$T" | grep -q '\.tmp' && fail "temporary files left: $(ls -A "$T")"
# -n keeps an existing output, but --stats still gets the image's record (it got none: the
# image was not computed), the same as with the output written.
"$BIN" -q -y "$T/g8.png" -o "$T/exists.npy" --stats "$T/st-y.csv"
printf 'precious' > "$T/exists.npy"
"$BIN" -q -n "$T/g8.png" -o "$T/exists.npy" --stats "$T/st-n.csv"; rc=$?
[ $rc = 0 ] || fail "-n with --stats: exit $rc"
[ "$(cat "$T/exists.npy")" = precious ] || fail "-n with --stats modified the existing output"
cmp -s "$T/st-y.csv" "$T/st-n.csv" || fail "-n with --stats: '$(cat "$T/st-n.csv")', want the record of a written run"

# Output directory for a single image: the same base name inside it.
mkdir "$T/od"
"$BIN" -q "$T/g8.png" -o "$T/od/" || fail "image into a directory: exit $?"
[ -f "$T/od/g8.png" ] || fail "image into a directory: $T/od/g8.png missing"

# An existing statistics file: refused (3) by default; with -n kept as it is, one
# "exists, skipped" line, and the other outputs still written (exit 0).
echo keep > "$T/keep.csv"
"$BIN" "$T/g8.png" --stats "$T/keep.csv" 2>"$T/e1"; rc=$?
[ $rc = 3 ] || fail "existing --stats: exit $rc, want 3"
"$BIN" "$T/g8.png" -o "$T/n.npy" --stats "$T/keep.csv" -n 2>"$T/e2"; rc=$?
[ $rc = 0 ] || fail "-n with an existing --stats: exit $rc, want 0"
[ "$(cat "$T/keep.csv")" = keep ] || fail "-n replaced the statistics file"
[ -s "$T/n.npy" ] || fail "-n with an existing --stats did not write the map"
grep -qx "entropy-stream: $T/keep.csv: exists, skipped" "$T/e2" || fail "-n stats message: $(cat "$T/e2")"
"$BIN" -q "$T/g8.png" --stats "$T/keep.csv" -n; rc=$?
[ $rc = 0 ] || fail "-n, stats only, existing file: exit $rc, want 0"

# A FIFO named *.png is refused at once (exit 2, one line), as in a batch: opening it would
# block until a writer came, beyond the reach of SIGINT. Before the fix this hung.
mkfifo "$T/pipe.png"
msg=$(timeout -k 5 20 "$BIN" "$T/pipe.png" -o "$T/pipe.npy" 2>&1); rc=$?
[ $rc = 2 ] || fail "FIFO input: exit $rc, want 2 ($msg)"
[ "$msg" = "entropy-stream: $T/pipe.png: not a regular file" ] || fail "FIFO input: message: $msg"
[ -e "$T/pipe.npy" ] && fail "FIFO input wrote an output"

# Outputs that are not regular files. A FIFO is written into (no temporary, no rename), -y or
# not, and stays a FIFO; so does a device. A link is written through: its target gets the
# file, the link stays a link (these were replaced by a regular file).
fifo_read() { # FIFO OUT: a reader in the background, as `cat f > out` would be
  (timeout 20 cat "$1" > "$2") &
}
mkfifo "$T/f.png" "$T/f.npy" "$T/f.csv"
for out in f.png f.npy; do
  fifo_read "$T/$out" "$T/got-$out"; rd=$!
  msg=$("$BIN" -q "$T/g8.png" -o "$T/$out" 2>&1); rc=$?
  wait $rd
  [ $rc = 0 ] && [ -z "$msg" ] || fail "-o FIFO $out: exit $rc: $msg"
  [ -p "$T/$out" ] || fail "-o FIFO $out: no longer a FIFO"
  "$BIN" -q "$T/g8.png" -o "$T/ref-$out"
  cmp -s "$T/got-$out" "$T/ref-$out" || fail "-o FIFO $out: the reader did not get the file"
done
fifo_read "$T/f.csv" "$T/got.csv"; rd=$!
msg=$("$BIN" -q "$T/g8.png" --stats "$T/f.csv" -y 2>&1); rc=$?
wait $rd
[ $rc = 0 ] && [ -p "$T/f.csv" ] || fail "--stats FIFO -y: exit $rc, $(ls -l "$T/f.csv"): $msg"
head -1 "$T/got.csv" | grep -q '^name,index,' || fail "--stats FIFO: the reader got '$(head -c 80 "$T/got.csv")'"
[ "$(wc -l < "$T/got.csv")" = 2 ] || fail "--stats FIFO: $(wc -l < "$T/got.csv") lines, want 2"
if [ "$(id -u)" = 0 ] && mknod "$T/null.npy" c 1 3 2>/dev/null; then # a device: as /dev/null
  "$BIN" -q "$T/g8.png" -o "$T/null.npy" -y; rc=$?
  [ $rc = 0 ] && [ -c "$T/null.npy" ] || fail "-o device -y: exit $rc, $(ls -l "$T/null.npy")"
else
  echo "test_cli_image: device case skipped (mknod needs root)"
fi
mkdir "$T/real"
ln -s real/t.png "$T/lnk.png"            # not there yet: created through the link
"$BIN" -q "$T/g8.png" -o "$T/lnk.png"; rc=$?
[ $rc = 0 ] && [ -L "$T/lnk.png" ] && [ -f "$T/real/t.png" ] || fail "-o dangling link: exit $rc, $(ls -l "$T/lnk.png")"
msg=$("$BIN" -q "$T/g8.png" -o "$T/lnk.png" 2>&1); rc=$?
[ $rc = 3 ] && [ "$msg" = "entropy-stream: $T/lnk.png: exists (use -y to overwrite, -n to skip)" ] \
  || fail "-o link to an existing file without -y: exit $rc: $msg"
"$BIN" -q "$T/g8.png" -o "$T/lnk.png" --format gray8 -y; rc=$?
[ $rc = 0 ] && [ -L "$T/lnk.png" ] || fail "-o link -y: exit $rc, $(ls -l "$T/lnk.png")"
"$BIN" -q "$T/g8.png" -o "$T/ref8.png" --format gray8
cmp -s "$T/real/t.png" "$T/ref8.png" || fail "-o link -y: the target was not rewritten"
[ "$(ls -A "$T/real")" = t.png ] || fail "-o link: left $(ls -A "$T/real")"
ln -s loop2.npy "$T/loop1.npy"; ln -s loop1.npy "$T/loop2.npy"
msg=$("$BIN" -q "$T/g8.png" -o "$T/loop1.npy" -y 2>&1); rc=$?
[ $rc = 3 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && [ -L "$T/loop1.npy" ] \
  || fail "-o loop of links: exit $rc: $msg"

# Names of 251..255 bytes: the temporary keeps a prefix of the name, within NAME_MAX.
for n in 251 255; do
  base=$(head -c $((n - 4)) /dev/zero | tr '\0' c)
  for ext in png npy; do
    "$BIN" -q "$T/g8.png" -o "$T/$base.$ext" -y; rc=$?
    [ $rc = 0 ] && [ -f "$T/$base.$ext" ] || fail "$n-byte .$ext name: exit $rc"
    rm -f "$T/$base.$ext"
  done
done
[ -z "$(ls -A "$T" | grep '^\.')" ] || fail "temporaries left: $(ls -A "$T" | grep '^\.')"

# An image much shorter than the window: at K = 255 every window row of a 1-row image is
# that row (reflect) or left out (clip). Perreault-Hebert (square, L = 16) still summed K
# copies of the row into its column histograms and the Huang kernels kept K + 1 quantized
# rows and K levels a column: 1 x 4000000, -w 255 --border reflect took 11.1 s and 1.2 GB.
# Now the image's one row is quantized and slid once, weighted: the peak is that of -w 5
# (before: about 600 MB more at 1 x 2000000).
"$PY" - "$T/wide.png" <<'PYEOF'
import struct, sys, zlib, random
w = 2000000
random.seed(5)
row = bytes(random.getrandbits(8) for _ in range(w))
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' +
    chunk(b'IHDR', struct.pack('>IIBBBBB', w, 1, 8, 0, 0, 0, 0)) +
    chunk(b'IDAT', zlib.compress(b'\0' + row)) + chunk(b'IEND', b''))
PYEOF
"$PY" - "$BIN" "$T/wide.png" "$T/wide.npy" > "$T/wide.out" <<'PYEOF' || fail "1-row image at K = 255: $(cat "$T/wide.out")"
import resource, subprocess, sys
b, png, npy = sys.argv[1:4]
def peak(args):
    cmd = [b, '-q', '-y', '--device', 'cpu', '--threads', '1', png, '-o', npy]
    r = subprocess.run(cmd + args).returncode
    assert r == 0, (args, r)
    # ru_maxrss of the children is the largest so far: the lighter run first
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
base = peak(['-w', '5'])
big = max(peak(['-w', '255', '--border', b_]) for b_ in ('reflect', 'clip'))
print('peak RSS at -w 5 %d KB, at -w 255 %d KB' % (base, big))
sys.exit(0 if big - base < 64 * 1024 else 1)
PYEOF

# A rendered picture with the fixed range needs no float map: the CPU renders each band as
# its rows come. es_cpu_run allocated a whole map only to render it (8000 x 8000 heat: 529
# MB peak, 256 MB of it the map); --range auto still needs it (the frame's min and max
# first), so a fixed-range rendering must peak at least 2/3 of the map (24 MB here) under
# it. Before, each peaked within a few MB of --range auto.
"$PY" - "$T/big.png" <<'PYEOF'
import os, struct, sys, zlib
w = h = 3000
raw = b''.join(b'\0' + os.urandom(w) for _ in range(h))
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' +
    chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) +
    chunk(b'IDAT', zlib.compress(raw, 1)) + chunk(b'IEND', b''))
PYEOF
"$PY" - "$BIN" "$T/big.png" "$T/bigout.png" > "$T/big.out" <<'PYEOF' || fail "fixed-range rendering keeps a float map: $(cat "$T/big.out")"
import os, subprocess, sys
b, png, out = sys.argv[1:4]
def peak(args):
    p = subprocess.Popen([b, '-q', '-y', '--device', 'cpu', '--threads', '2', png, '-o', out] + args)
    _, status, ru = os.wait4(p.pid, 0)
    assert status == 0, (args, status)
    return ru.ru_maxrss  # KB, this child's own
ok = True
for fmt, more in (('heat', []), ('gray16', []), ('heat', ['--overlay', '0.5'])):
    fixed = peak(['--format', fmt] + more)
    auto = peak(['--format', fmt, '--range', 'auto'] + more)
    print('%s %s: peak RSS fixed %d KB, auto %d KB' % (fmt, ' '.join(more), fixed, auto))
    ok = ok and auto - fixed >= 24 * 1024
sys.exit(0 if ok else 1)
PYEOF

# Neither -o nor --stats: the statistics line on stdout (issue 32: the run computed, wrote
# nothing and exited 0), the numbers of --stats - to 4 decimals; a batch gives one a file in
# name order; --stats - stays the CSV. -q silences stderr, not the result.
SRC=${ES_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
mkdir -p "$T/sl"
cp "$SRC/samples/camera.png" "$SRC/samples/moon16.png" "$T/sl/"
"$BIN" -q "$T/sl/moon16.png" -w 7 --base e >"$T/sl1.txt" 2>"$T/sl1.err"; rc=$?
[ $rc = 0 ] && [ ! -s "$T/sl1.err" ] || fail "stats line: exit $rc ($(cat "$T/sl1.err"))"
"$BIN" -q "$T/sl/moon16.png" -w 7 --base e --stats - >"$T/sl1.csv" || fail "stats line: --stats - failed"
"$BIN" -q "$T/sl" >"$T/sl2.txt" || fail "stats line of a batch: exit $?"
"$BIN" -q "$T/sl" --stats - >"$T/sl2.csv" || fail "stats line of a batch: --stats - failed"
"$PY" - "$T" <<'PYEOF' || fail "the statistics line"
import csv, re, sys
T = sys.argv[1]
pat = re.compile(r'^(.+): (\d+)x(\d+), H mean (\S+) std (\S+) min (\S+) max (\S+) (bits|nats), '
                 r'global entropy (\S+) bits \(levels (\S+) bits\)$')
def check(txt, csvf, unit, names):
    lines = open(txt).read().splitlines()
    rows = list(csv.DictReader(open(csvf)))
    assert len(lines) == len(rows) == len(names), (lines, rows)
    for line, row, name in zip(lines, rows, names):
        m = pat.match(line)
        assert m, line
        assert m.group(1) == name and m.group(8) == unit, line
        assert (m.group(2), m.group(3)) == (row['width'], row['height']), line
        for g, k in zip(range(4, 8), ('mean', 'std', 'min', 'max')):
            assert m.group(g) == '%.4f' % float(row[k]), (line, k, row[k])
        assert m.group(9) == '%.4f' % float(row['global_entropy']), line
        assert m.group(10) == '%.4f' % float(row['global_entropy_levels']), line
check(T + '/sl1.txt', T + '/sl1.csv', 'nats', [T + '/sl/moon16.png'])
check(T + '/sl2.txt', T + '/sl2.csv', 'bits', ['camera.png', 'moon16.png'])
PYEOF
# -v counts in the right number (issue 32: "stream: 1 frames"): one file, one frame in flight.
msg=$("$BIN" -v -y "$T/sl/camera.png" -o "$T/sl_v.png" 2>&1); rc=$?
[ $rc = 0 ] || fail "-v one file: exit $rc ($msg)"
printf '%s\n' "$msg" | grep -q "stream: 1 frame, " || fail "-v one file: no 'stream: 1 frame,': $msg"
printf '%s\n' "$msg" | grep -Eq "(^|[^0-9./])1 (frame|file|worker|thread|GPU|pixel)s\b|\(s\)" &&
  fail "-v one file: a plural of one, or (s): $msg"

if [ $FAIL -ne 0 ]; then
  echo "test_cli_image: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_image: all checks passed"
