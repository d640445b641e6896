#!/usr/bin/env bash
# test_cli_stdout.sh - `-o -` as an ffmpeg pipeline uses it (README's third example), checked
# on the bytes and through ffmpeg/ffprobe:
# - the YUV4MPEG2 header: W, H, F (NTSC 30000:1001 kept), A, C444 for heat, Cmono for gray8,
#   Cmono16 for gray16, and ffmpeg reads each back with that pix_fmt and the same values;
# - heat: the 4:4:4 planes are the PNG's RGB in BT.601 limited range (within 2 levels back);
# - gray8 / gray16: the map scaled to the full range (H / log2(min(K*K, L)) * 255 or 65535);
# - odd sizes (1x1, 3x5, 4097x3): whole frames, read back by ffprobe;
# - --format f32: the .npy's values, little-endian float32, nothing else;
# - a directory input with -o -: refused (exit 1), nothing written on standard output.
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ] || ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
  echo "test_cli_stdout: skipped (no FFmpeg)"
  exit 77
fi
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "test_cli_stdout: skipped (no numpy)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
FF="ffmpeg -nostdin -v error -y"
# shellcheck source=es_test_ffmpeg.sh
source "$(dirname "$0")/es_test_ffmpeg.sh"
if ! es_can_write_y4m || ! ff_has muxers yuv4mpegpipe || ! ff_has demuxers yuv4mpegpipe ||
  ! ff_has filters testsrc2; then
  echo "test_cli_stdout: skipped (no y4m in the library or in ffmpeg, or no testsrc2)"
  exit 77
fi

$FF -f lavfi -i testsrc2=size=64x48:rate=30000/1001 -frames:v 4 -pix_fmt yuv420p "$T/ntsc.y4m" ||
  fail "cannot make ntsc.y4m"

# y4m reader for the checks: frames as [planes, H, W] arrays.
cat > "$T/y4m.py" <<'EOF'
import numpy as np
def read(path):
    d = open(path, 'rb').read()
    nl = d.index(b'\n')
    hdr = d[:nl].decode().split()
    f = {t[0]: t[1:] for t in hdr[1:]}
    W, H, C = int(f['W']), int(f['H']), f.get('C', '420jpeg')
    bps, planes = {'444': (1, 3), 'mono': (1, 1), 'mono16': (2, 1)}[C]
    size = W * H * bps * planes
    p, frames = nl + 1, []
    while p < len(d):
        assert d[p:p + 5] == b'FRAME', 'no FRAME at byte %d' % p
        p = d.index(b'\n', p) + 1
        buf = d[p:p + size]
        assert len(buf) == size, 'short frame: %d of %d bytes' % (len(buf), size)
        p += size
        frames.append(np.frombuffer(buf, np.uint8 if bps == 1 else '<u2').reshape(planes, H, W))
    return hdr, frames
EOF

# 1. Headers, and ffmpeg's reading of them.
for f in heat:yuv444p:C444 gray8:gray:Cmono gray16:gray16le:Cmono16; do
  fmt=${f%%:*}; rest=${f#*:}; pix=${rest%%:*}; c=${rest#*:}
  "$BIN" -q "$T/ntsc.y4m" --format "$fmt" -o - > "$T/$fmt.y4m"; rc=$?
  [ $rc = 0 ] || fail "$fmt -o -: exit $rc"
  hdr=$(head -n 1 "$T/$fmt.y4m")
  for want in YUV4MPEG2 W64 H48 F30000:1001 Ip A1:1 "$c"; do
    case " $hdr " in *" $want "*) ;; *) fail "$fmt -o -: header '$hdr' lacks $want";; esac
  done
  got=$(ffprobe -v error -count_frames -show_entries stream=width,height,pix_fmt,r_frame_rate,nb_read_frames \
    -of csv=p=0 "$T/$fmt.y4m")
  [ "$got" = "64,48,$pix,30000/1001,4" ] || fail "$fmt -o -: ffprobe says '$got', want 64,48,$pix,30000/1001,4"
  $FF -i "$T/$fmt.y4m" -f rawvideo -pix_fmt "$pix" "$T/$fmt.ff" || fail "$fmt: ffmpeg cannot read it back"
done
"$BIN" -q "$T/ntsc.y4m" -o "$T/m.npy" || fail "ntsc.y4m -o m.npy"
"$BIN" -q "$T/ntsc.y4m" --format f32 -o - > "$T/m.f32" || fail "--format f32 -o -"
"$BIN" -q "$T/ntsc.y4m" -o "$T/frames" || fail "ntsc.y4m -o frames/"
for i in 0 1 2 3; do
  $FF -i "$T/frames/frame_00000$i.png" -f rawvideo -pix_fmt rgb24 "$T/rgb$i.raw" || fail "frame $i PNG"
done

"$PY" - "$T" <<'EOF' || fail "values: see above"
import sys, math, numpy as np
T = sys.argv[1]
sys.path.insert(0, T)
from y4m import read
bad = 0
def check(ok, what):
    global bad
    if not ok:
        print('FAIL:', what); bad += 1
m = np.load(T + '/m.npy')                       # [T, H, W]; K=5 L=16: log2(min(25, 16)) = 4
hmax = math.log2(16)
f32 = np.fromfile(T + '/m.f32', '<f4')
check(f32.size == m.size and np.array_equal(f32.reshape(m.shape), m), 'f32 -o - is not the .npy')
_, g8 = read(T + '/gray8.y4m'); _, g16 = read(T + '/gray16.y4m')
g8 = np.stack([a[0] for a in g8]).astype(float); g16 = np.stack([a[0] for a in g16]).astype(float)
check(np.array_equal(g8, np.round(m / hmax * 255)), 'gray8 y4m is not H scaled to 0..255')
check(np.array_equal(g16, np.round(m / hmax * 65535)), 'gray16 y4m is not H scaled to 0..65535')
check(np.array_equal(np.fromfile(T + '/gray8.ff', np.uint8).reshape(g8.shape), g8), 'ffmpeg reads gray8 otherwise')
check(np.array_equal(np.fromfile(T + '/gray16.ff', '<u2').reshape(g16.shape), g16), 'ffmpeg reads gray16 otherwise')
_, heat = read(T + '/heat.y4m')
check(len(heat) == 4, 'heat: %d frames' % len(heat))
for i, a in enumerate(heat):
    rgb = np.fromfile(T + '/rgb%d.raw' % i, np.uint8).reshape(48, 64, 3).astype(float)
    Y, U, V = [p.astype(float) for p in a]
    y = (Y - 16) * 255 / 219; u = (U - 128) * 255 / 224; v = (V - 128) * 255 / 224
    back = np.stack([y + 1.402 * v, y - 0.344136 * u - 0.714136 * v, y + 1.772 * u], -1)
    d = np.abs(back - rgb).max()
    check(d <= 2.0, 'heat frame %d: 4:4:4 back to RGB is %.2f from the PNG' % (i, d))
sys.exit(1 if bad else 0)
EOF

# 2. Odd sizes: whole frames, each format.
for s in 1x1 3x5 4097x3; do
  w=${s%x*}; h=${s#*x}
  head -c $((w * h * 3)) /dev/urandom > "$T/odd.raw"
  for f in heat:yuv444p gray16:gray16le; do
    fmt=${f%%:*}; pix=${f#*:}
    got=$("$BIN" -q - --raw "gray8:$s" --format "$fmt" -o - < "$T/odd.raw" |
      ffprobe -v error -count_frames -show_entries stream=width,height,pix_fmt,nb_read_frames -of csv=p=0 -)
    [ "$got" = "$w,$h,$pix,3" ] || fail "$s $fmt -o -: ffprobe says '$got', want $w,$h,$pix,3"
  done
  n=$("$BIN" -q - --raw "gray8:$s" --format f32 -o - < "$T/odd.raw" | wc -c)
  [ "$n" = $((w * h * 3 * 4)) ] || fail "$s --format f32 -o -: $n bytes, want $((w * h * 12))"
done

# 3. A directory of PNGs has no y4m stream (their sizes may differ): refused, nothing written.
mkdir -p "$T/dir"
$FF -f lavfi -i testsrc2=size=32x20 -frames:v 1 "$T/dir/a.png" || fail "cannot make dir/a.png"
msg=$("$BIN" -q "$T/dir" -o - 2>&1 > "$T/dir.out"); rc=$?
[ $rc = 1 ] || fail "directory -o -: exit $rc, want 1 ($msg)"
[ "$msg" = "entropy-stream: -: a directory input needs a directory output" ] || fail "directory -o -: message '$msg'"
[ ! -s "$T/dir.out" ] || fail "directory -o -: wrote $(wc -c < "$T/dir.out") bytes on standard output"

if [ $FAIL -ne 0 ]; then
  echo "test_cli_stdout: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_stdout: all checks passed"
