#!/bin/bash
# test_cli_errors.sh - every bad input and bad option of SPEC section 3 through the CLI: the
# exit code, one line on stderr naming the file or option (and the allowed range), and no
# output file or temporary left behind. Also --version, --help and --device gpu without GPU.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
SEED=${ES_TEST_SEED:-$(( $(date +%s) ^ $$ ))}
echo "test_cli_errors: seed $SEED (ES_TEST_SEED to replay)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
AV=${ES_HAVE_FFMPEG:-0} # without FFmpeg, standard input and video cannot be read (checked below)

# Bad PNGs built byte by byte.
W=$(( 11 + SEED % 17 )); H=$(( 9 + (SEED / 5) % 13 ))
"$PY" - "$T" $W $H $SEED <<'EOF' || { echo "cannot make inputs"; exit 1; }
import os, struct, sys, zlib
import numpy as np
d, w, h, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
def chunk(t, b, crc=None):
    c = zlib.crc32(t + b) & 0xffffffff if crc is None else crc
    return struct.pack('>I', len(b)) + t + b + struct.pack('>I', c)
def png(w, h, rows=None, ihdr_crc=None, idat=None, depth=8, ctype=0):
    rows = h if rows is None else rows
    a = rng.integers(0, 256, (rows, w), dtype=np.uint8)
    raw = b''.join(b'\0' + a[y].tobytes() for y in range(rows))
    body = zlib.compress(raw) if idat is None else idat
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0), ihdr_crc)
            + chunk(b'IDAT', body) + chunk(b'IEND', b''))
def put(name, data):
    open(os.path.join(d, name), 'wb').write(data)
good = png(w, h)
put('good.png', good)
put('truncated.png', good[:len(good) // 2])
bad = bytearray(good); bad[len(bad) - 20] ^= 0x55  # inside IDAT: its CRC no longer matches
put('crc.png', bytes(bad))
put('ihdrcrc.png', png(w, h, ihdr_crc=0x12345678))
put('empty.png', b'')
put('notpng.png', b'this is not a PNG file, just some text\n' * 3)
put('huge.png', png(1, 1, idat=zlib.compress(b'\0\0'))[:16] + struct.pack('>IIBBBBB', 100000, 100000, 8, 0, 0, 0, 0)
    + struct.pack('>I', zlib.crc32(b'IHDR' + struct.pack('>IIBBBBB', 100000, 100000, 8, 0, 0, 0, 0)) & 0xffffffff)
    + chunk(b'IDAT', zlib.compress(b'\0' * 101)) + chunk(b'IEND', b''))
put('zerowidth.png', png(0, h, idat=zlib.compress(b'\0' * h)))
put('short.png', png(w, h, rows=h // 2))
put('baddepth.png', png(w, h, depth=7))
put('large.png', png(200, 150))
EOF

# An input error: exit 2, one line "entropy-stream: FILE: ...", no output, no temporary.
bad_input() { # NAME [extra args]
  local name=$1; shift
  local od="$T/out_$name"; mkdir -p "$od"
  local msg rc
  msg=$("$BIN" -q "$T/$name" -o "$od/x.npy" "$@" 2>&1 >/dev/null); rc=$?
  [ $rc = 2 ] || fail "$name: exit $rc, want 2 ($msg)"
  [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "$name: want one line on stderr, got: $msg"
  case "$msg" in "entropy-stream: $T/$name: "?*) ;; *) fail "$name: message does not name the file: $msg";; esac
  case "$msg" in *.) fail "$name: message ends with a period: $msg";; esac
  [ -z "$(ls -A "$od")" ] || fail "$name: left files behind: $(ls -A "$od")"
  echo "$name -> $rc: $msg"
}
bad_input truncated.png
bad_input crc.png
bad_input ihdrcrc.png
bad_input empty.png
bad_input notpng.png
bad_input huge.png
bad_input zerowidth.png
bad_input short.png
bad_input baddepth.png
bad_input missing.png
bad_input good.png --max-pixels $(( W * H - 1 ))
# The header's size is refused before any allocation: the message says so.
msg=$("$BIN" -q "$T/huge.png" -o "$T/h.npy" 2>&1)
case "$msg" in *100000*) ;; *) fail "huge.png: message does not give the size: $msg";; esac
# One bad image into a directory the run would make: nothing is written, so nothing is left
# (the new directory, its new parents) where there was nothing; a directory that was there
# stays. The empty directory was left behind (exit 2), though a failed --stats, checked
# before it is made, leaves none.
mkdir "$T/ndkeep"
for o in "$T/nd1/" "$T/nd2/deep/er" "$T/ndkeep/sub/"; do
  msg=$("$BIN" -q "$T/notpng.png" -o "$o" 2>&1); rc=$?
  [ $rc = 2 ] || fail "bad image into new directory $o: exit $rc, want 2 ($msg)"
done
[ -e "$T/nd1" ] && fail "bad image into a new directory: $T/nd1 left behind"
[ -e "$T/nd2" ] && fail "bad image into new directories: $T/nd2 left behind"
[ -d "$T/ndkeep" ] && [ -z "$(ls -A "$T/ndkeep")" ] || fail "bad image into a new directory: ndkeep/ removed or not empty: $(ls -A "$T/ndkeep" 2>&1)"
msg=$("$BIN" -q "$T/notpng.png" -o "$T/nd3/" --format f32 --stats "$T/nd3/s.csv" 2>&1); rc=$?
[ $rc = 2 ] && [ -f "$T/nd3/s.csv" ] || fail "bad image, --stats inside the new directory: exit $rc, the statistics file not kept ($msg)"
"$BIN" -q "$T/good.png" -o "$T/nd4/deep/" || fail "good image into new directories: exit $?"
[ -f "$T/nd4/deep/good.png" ] || fail "good image into new directories: not written"
# The good file passes with the same options (so the failures above are the inputs').
"$BIN" -q "$T/good.png" -o "$T/good.npy" --max-pixels $(( W * H )) || fail "good.png: exit $?"

# Output errors: exit 3, nothing left.
printf 'x' > "$T/afile"
msg=$("$BIN" -q "$T/good.png" -o "$T/afile/x.png" 2>&1); rc=$?
[ $rc = 3 ] || fail "output under a regular file: exit $rc, want 3 ($msg)"
case "$msg" in "entropy-stream: $T/afile/x.png: "?*) ;; *) fail "output error message: $msg";; esac
# ... and says why: it said "exists (use -y to overwrite, -n to skip)" (and -n skipped it
# as existing) for a name whose directory is a file, which exists no more than it.
case "$msg" in *"Not a directory") ;; *) fail "output under a regular file: message: $msg";; esac
msg=$("$BIN" -q -n "$T/good.png" -o "$T/afile/x.png" 2>&1); rc=$?
[ $rc = 3 ] || fail "output under a regular file, -n: exit $rc, want 3 ($msg)"
case "$msg" in "entropy-stream: $T/afile/x.png: "*"Not a directory") ;; *) fail "output under a regular file, -n: message: $msg";; esac
ln -s loop.npy "$T/loop.npy"
msg=$("$BIN" -q "$T/good.png" -o "$T/loop.npy" 2>&1); rc=$?
[ $rc = 3 ] || fail "output a loop of links: exit $rc, want 3 ($msg)"
case "$msg" in "entropy-stream: $T/loop.npy: "*"symbolic links") ;; *) fail "output a loop of links: message: $msg";; esac
# An existing device or FIFO named without an extension has no output type: it was taken for
# a directory to make and refused as "exists and is not a directory" (exit 3), which says
# nothing of what to do. Now a usage error saying so; "/dev/null/" asks for a directory.
mkfifo "$T/fifo"
mkdir -p "$T/din"; cp "$T/good.png" "$T/din/"
for o in /dev/null "$T/fifo"; do
  msg=$("$BIN" -q "$T/good.png" -o "$o" 2>&1); rc=$?
  [ $rc = 1 ] || fail "-o $o: exit $rc, want 1 ($msg)"
  case "$msg" in "entropy-stream: $o: is a "*"without an extension its output type is unknown"*) ;; *) fail "-o $o: message: $msg";; esac
  msg=$("$BIN" -q "$T/din" -o "$o" 2>&1); rc=$?
  [ $rc = 1 ] && [ "${msg#*: is a }" != "$msg" ] && [ "${msg#*directory input needs a directory output}" != "$msg" ] ||
    fail "directory input -o $o: exit $rc, want 1 ($msg)"
done
[ -p "$T/fifo" ] || fail "-o fifo: the FIFO was replaced"
msg=$("$BIN" -q "$T/good.png" -o /dev/null/ 2>&1); rc=$?
[ $rc = 3 ] || fail "-o /dev/null/: exit $rc, want 3 ($msg)"
msg=$("$BIN" -q "$T/good.png" -o "$T/afile/sub/" 2>&1); rc=$?
[ $rc = 3 ] || fail "output directory under a regular file: exit $rc, want 3 ($msg)"
msg=$("$BIN" -q "$T/good.png" -o "$T/x.npy" --stats "$T/afile/s.csv" 2>&1); rc=$?
[ $rc = 3 ] || fail "stats under a regular file: exit $rc, want 3 ($msg)"
case "$msg" in "entropy-stream: $T/afile/s.csv: "*"Not a directory") ;; *) fail "stats under a regular file: message: $msg";; esac
[ -e "$T/x.npy" ] && [ $rc = 3 ] && echo "note: map written although stats failed"
if [ "$(id -u)" != 0 ]; then
  mkdir "$T/ro"; chmod 555 "$T/ro"
  msg=$("$BIN" -q "$T/good.png" -o "$T/ro/x.png" 2>&1); rc=$?
  [ $rc = 3 ] || fail "read-only directory: exit $rc, want 3 ($msg)"
  [ -z "$(ls -A "$T/ro")" ] || fail "read-only directory: files left"
  chmod 755 "$T/ro"
fi
if [ -w /dev/full ]; then
  msg=$("$BIN" -q "$T/good.png" --stats - 2>&1 >/dev/full); rc=$?
  [ $rc = 3 ] || fail "stats to a full stdout: exit $rc, want 3 ($msg)"
fi
# Past the file size limit (ulimit -f 1: 1 KiB) a write fails with EFBIG: exit 3 naming the
# file, no temporary left. SIGXFSZ killed the process before (exit 153, no message, the
# temporary left behind).
for o in x.npy x.png; do
  mkdir -p "$T/fsz"
  msg=$(ulimit -f 1; "$BIN" -q "$T/large.png" -o "$T/fsz/$o" 2>&1); rc=$?
  [ $rc = 3 ] || fail "$o past ulimit -f: exit $rc, want 3 ($msg)"
  case "$msg" in "entropy-stream: $T/fsz/$o: "*"File too large") ;; *) fail "$o past ulimit -f: message: $msg";; esac
  [ -z "$(ls -A "$T/fsz")" ] || fail "$o past ulimit -f: files left: $(ls -A "$T/fsz")"
  rm -rf "$T/fsz"
done

# Usage errors: exit 1, one line naming the option and the allowed range.
bad_opt() { # EXPECTED-PREFIX EXPECTED-SUBSTRING args...
  local pre=$1 sub=$2; shift 2
  local msg rc
  msg=$("$BIN" "$@" "$T/good.png" -o "$T/u.npy" 2>&1); rc=$?
  [ $rc = 1 ] || fail "$*: exit $rc, want 1 ($msg)"
  [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "$*: want one line, got: $msg"
  case "$msg" in "entropy-stream: $pre"*"$sub"*) ;; *) fail "$*: message '$msg' lacks '$pre' ... '$sub'";; esac
  [ -e "$T/u.npy" ] && fail "$*: output written" && rm -f "$T/u.npy"
}
bad_opt "--window 4: " "1..255" --window 4
bad_opt "--window 4: " "1..255" -w 4
bad_opt "--window 257: " "1..255" -w 257
bad_opt "--window 0: " "1..255" -w 0
bad_opt "--window abc: " "1..255" -w abc
bad_opt "--levels 1: " "2..65536" -L 1
bad_opt "--levels 70000: " "65536" --levels 70000
bad_opt "--shape round: " "square or disk" --shape round
bad_opt "--border wrap: " "clip or reflect" --border wrap
bad_opt "--base 10: " "2 or e" --base 10
bad_opt "--format jpg: " "heat" --format jpg
# A .npy is float32 whatever --format says: another format was silently ignored.
bad_opt "--format gray8: " "always float32" --format gray8
bad_opt "--format gray16: " "always float32" --format gray16
bad_opt "--format heat: " "always float32" --format heat
"$BIN" -q "$T/good.png" -o "$T/f32.npy" --format f32 || fail "--format f32 -o x.npy: exit $?"
bad_opt "--colormap jet: " "inferno" --colormap jet
# Encoder settings and rendering options that the output would ignore are refused, as
# --format and --overlay are with a .npy (each was silently ignored, exit 0).
bad_opt "--codec: " "only for a video file output" --codec mpeg4
bad_opt "--crf: " "only for a video file output" --crf 20
bad_opt "--preset: " "only for a video file output" --preset fast
bad_opt "--colormap: " "only for --format heat" --colormap viridis
bad_opt "--range: " "not float32 maps" --range auto
msg=$("$BIN" -q "$T/good.png" -o "$T/cm.png" --format gray8 --colormap turbo 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: --colormap: only for --format heat (the output is gray8)" ] ||
  fail "--colormap with gray8: exit $rc, want 1 ($msg)"
[ -e "$T/cm.png" ] && fail "--colormap with gray8: output written"
msg=$("$BIN" -q "$T/good.png" -o - --codec mpeg4 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] || fail "--codec with -o -: exit $rc, want 1 ($msg)"
# ... but taken where they count.
"$BIN" -q "$T/good.png" -o "$T/cm.png" --colormap turbo --range auto || fail "--colormap heat png: exit $?"
"$BIN" -q "$T/good.png" -o "$T/cm16.png" --format gray16 --range auto || fail "--range gray16 png: exit $?"
# Without -o nothing is rendered or encoded: one rule, every rendering and encoder option
# refused there as with a .npy (issue 32: --stats s.csv --colormap turbo was accepted while
# -o x.npy --colormap viridis was refused). Nothing is written, --stats included.
for a in "--colormap turbo" "--range auto" "--overlay 0.5" "--format gray8" "--format f32" \
         "--codec mpeg4" "--crf 20" "--preset fast"; do
  set -- $a
  for s in "--stats $T/cm.csv" ""; do
    rm -f "$T/cm.csv"
    msg=$("$BIN" -q "$T/good.png" $s "$@" 2>&1 >/dev/null); rc=$?
    [ $rc = 1 ] && [ "$msg" = "entropy-stream: $1: nothing is rendered without -o (it applies to an output's pictures)" ] ||
      fail "$a without -o ($s): exit $rc, want 1 ($msg)"
    [ -e "$T/cm.csv" ] && fail "$a without -o: --stats written"
  done
done
bad_opt "--range x: " "fixed or auto" --range x
# Device options a run would ignore: --gpus with --device cpu (no GPU opened) and --cpu-below
# outside auto (every frame goes to the one device) ran with them silently dropped, exit 0.
bad_opt "--gpus: " "not with --device cpu" --device cpu --gpus 0
bad_opt "--gpus: " "not with --device cpu" --gpus all --device cpu
bad_opt "--cpu-below: " "only with --device auto" --device cpu --cpu-below 0
bad_opt "--cpu-below: " "only with --device auto (under gpu every frame goes to the GPUs)" --cpu-below 100 --device gpu
"$BIN" -q "$T/good.png" -o "$T/dev.npy" --device cpu --threads 1 || fail "--device cpu --threads 1: exit $?"
"$BIN" -q "$T/good.png" -o "$T/dev2.npy" --device auto --cpu-below 0 --gpus all || fail "--device auto --cpu-below 0 --gpus all: exit $?"
# -r with a file or standard input would be ignored (and is a frame rate to FFmpeg users).
msg=$("$BIN" -q -r "$T/good.png" -o "$T/r.npy" 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: $T/good.png: -r: only for a directory input" ] ||
  fail "-r with a file: exit $rc, want 1 ($msg)"
[ -e "$T/r.npy" ] && fail "-r with a file: output written"
msg=$(head -c 16 /dev/zero | "$BIN" -q --recursive - --raw gray8:4x4 --stats - 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: -: -r: only for a directory input" ] ||
  fail "-r with standard input: exit $rc, want 1 ($msg)"
bad_opt "--overlay 1.5: " "0..1" --overlay 1.5
bad_opt "--overlay -0.1: " "0..1" --overlay -0.1
bad_opt "--overlay: " "not with --format gray16" --overlay 0.5 --format gray16
bad_opt "--overlay: " "not float32 maps" --overlay 0.5
bad_opt "--stats-bins 0: " "1..1024" --stats-bins 0
bad_opt "--stats-bins 1025: " "1..1024" --stats-bins 1025
bad_opt "--device tpu: " "auto, gpu or cpu" --device tpu
bad_opt "--gpus 0,x: " "0..63" --gpus 0,x
bad_opt "--gpus 64: " "0..63" --gpus 64
bad_opt "--gpus 0,: " "0..63" --gpus 0,
bad_opt "--gpus ,0: " "0..63" --gpus ,0
bad_opt "--gpus 0,,1: " "0..63" --gpus 0,,1
bad_opt "--cpu-below -1: " "0.." --cpu-below -1
bad_opt "--threads -2: " "0..4096" --threads -2
bad_opt "--queue 0: " "1..1024" --queue 0
bad_opt "--raw gray8:10: " "gray8:WxH" --raw gray8:10
bad_opt "--raw rgb24:4x4: " "gray16le:WxH" --raw rgb24:4x4
bad_opt "--raw gray8:4x4@2000: " "at most 1000" --raw gray8:4x4@2000
bad_opt "--raw gray8:4x4@30/0: " "30000/1001" --raw gray8:4x4@30/0
bad_opt "--crf 99: " "0..63" --crf 99
# Encoder settings where no encoder runs (.npy, .png, a directory, -): refused, not ignored
# (y4m on standard output cannot hold libx264, as a .y4m file cannot; both said nothing).
bad_opt "--crf: " "video file" --crf 20
bad_opt "--codec: " "video file" --codec libx264
bad_opt "--preset: " "video file" --preset veryfast
msg=$("$BIN" --codec libx264 "$T/good.png" -o - 2>&1 >"$T/enc.y4m"); rc=$?
[ $rc = 1 ] || fail "--codec with -o -: exit $rc, want 1 ($msg)"
case "$msg" in "entropy-stream: --codec: "*"video file"*) ;; *) fail "--codec with -o -: message: $msg";; esac
[ -s "$T/enc.y4m" ] && fail "--codec with -o -: y4m written anyway"
bad_opt "--max-pixels 0: " "1.." --max-pixels 0
# Numbers are plain decimal: strtol/strtod took leading white space, a sign, hex, exponents
# (" 5", "+5", "-0", "0x1", "1e-1": all ran, exit 0). Each is refused naming the range.
bad_opt "--window  5: " "1..255" -w " 5"
bad_opt "--window +5: " "1..255" -w +5
bad_opt "--window -5: " "1..255" --window=-5
bad_opt "--levels +16: " "2..65536" -L +16
bad_opt "--levels 16 : " "2..65536" -L "16 "
bad_opt "--stats-bins +4: " "1..1024" --stats-bins +4
bad_opt "--queue  2: " "1..1024" --queue " 2"
bad_opt "--queue 1e3: " "1..1024" --queue 1e3
bad_opt "--threads -0: " "0..4096" --threads -0
bad_opt "--threads +1: " "0..4096" --threads +1
bad_opt "--gpus  0: " "0..63" --gpus " 0"
bad_opt "--gpus 0,+1: " "0..63" --gpus 0,+1
bad_opt "--gpus 0x1: " "0..63" --gpus 0x1
bad_opt "--cpu-below +0: " "0.." --cpu-below +0
bad_opt "--cpu-below 1e3: " "0.." --cpu-below 1e3
bad_opt "--crf +20: " "0..63" --crf +20
bad_opt "--max-pixels +100: " "1.." --max-pixels +100
bad_opt "--max-pixels  100: " "1.." --max-pixels " 100"
for v in 0x1 " 0.5" +0.5 -0 1e-1 inf nan . 0.5. "0.5 " 0,5; do
  bad_opt "--overlay $v: " "0..1" --overlay "$v"
done
for v in gray8:+5x5 "gray8: 5x5" gray8:5x+5 gray8:0x5x5 gray8:4x4@0x1e gray8:4x4@inf \
         "gray8:4x4@ 30" gray8:4x4@+30 gray8:4x4@1e1 gray8:4x4@30/+1 gray8:4x4@30/1e0 \
         "gray8:4x4@30 " gray8:4x4@30/ gray8:4x4@.; do
  bad_opt "--raw $v: " "gray8:WxH" --raw "$v"
done
# ... while plain decimals still pass: leading zeros, "0.5", ".5", "1.", a rate's ratio.
"$BIN" -q "$T/good.png" -o "$T/dec.png" -w 05 -L 016 --overlay .5 --queue 02 || fail "plain decimals: exit $?"
"$BIN" -q "$T/good.png" -o "$T/dec1.png" --overlay 1. || fail "--overlay 1.: exit $?"
if [ "$AV" = 1 ]; then # standard input is read through libavformat
  for v in gray8:4x2@29.97 gray8:4x2@30000/1001 gray8:4x2@30000:1001 gray8:4x2@.5 gray16le:04x2@25; do
    head -c 16 /dev/zero | "$BIN" -q - --raw "$v" --stats "$T/raw.csv" -y || fail "--raw $v: exit $?"
  done
fi
bad_opt "--bogus: " "unknown option" --bogus
# An abbreviation of several options is ambiguous, not unknown (it said "unknown option"
# for --ver, which is the start of --verbose and --version).
bad_opt "--ver: " "ambiguous option (--verbose, --version; see --help)" --ver
bad_opt "--pr: " "ambiguous option (--preset, --progress; see --help)" --pr
bad_opt "--st: " "ambiguous option (--stats, --stats-bins; see --help)" --st=s.csv
bad_opt "-Z: " "unknown option" -Z
# A value given to an option that takes none: said so (it was "unknown option").
for o in help recursive quiet verbose progress no-progress version; do
  bad_opt "--$o: " "takes no value" "--$o=x"
done
bad_opt "--verbose: " "takes no value" --verb=1
# 8-bit input takes L above 256 as 256 (it was refused, exit 1): the same map.
msg=$("$BIN" -q -L 300 "$T/good.png" -o "$T/u.npy" 2>&1); rc=$?
[ $rc = 0 ] || fail "-L 300 on 8-bit input: exit $rc, want 0 ($msg)"
"$BIN" -q -L 256 "$T/good.png" -o "$T/u256.npy" && cmp -s "$T/u.npy" "$T/u256.npy" ||
  fail "-L 300 on 8-bit input: not the map of -L 256"
rm -f "$T/u.npy" "$T/u256.npy"
bad_opt "--levels 65537: " "2..65536" -L 65537
msg=$("$BIN" -q "$T/good.png" -o "$T/sdir/" --stats "$T/s.txt" 2>&1); rc=$?
[ $rc = 1 ] || fail "--stats s.txt: exit $rc, want 1 ($msg)"
case "$msg" in "entropy-stream: "*"--stats"*csv*jsonl*) ;; *) fail "--stats s.txt message: $msg";; esac
[ -e "$T/sdir" ] && fail "--stats s.txt: the output directory was created anyway"
# Two statistics files, as two -o: refused (the first was dropped in silence, exit 0).
msg=$("$BIN" -q "$T/good.png" --stats "$T/st1.csv" --stats "$T/st2.csv" 2>&1); rc=$?
[ $rc = 1 ] && [ "$msg" = "entropy-stream: --stats $T/st2.csv: only one statistics file" ] ||
  fail "--stats twice: exit $rc, want 1 ($msg)"
[ -e "$T/st1.csv" ] || [ -e "$T/st2.csv" ] && fail "--stats twice: a statistics file written"
msg=$("$BIN" "$T/good.png" -o 2>&1); rc=$?
[ $rc = 1 ] || fail "-o without a value: exit $rc"
msg=$("$BIN" 2>&1); rc=$?
[ $rc = 1 ] || fail "no INPUT: exit $rc, want 1"
case "$msg" in "entropy-stream: "*INPUT*) ;; *) fail "no INPUT message: $msg";; esac
msg=$("$BIN" -q "$T/good.png" -o "$T/v.mp4" 2>&1); rc=$?
[ $rc = 1 ] || fail "image to .mp4: exit $rc, want 1 ($msg)"
[ -e "$T/v.mp4" ] && fail "image to .mp4 wrote a file"
msg=$("$BIN" -q "$T/good.png" -o "$T/v.xyz" 2>&1); rc=$?
[ $rc = 1 ] || fail "unknown output extension: exit $rc, want 1 ($msg)"

# An output that is the input itself is refused even with -y (the input survives).
cp "$T/good.png" "$T/self.png"
msg=$("$BIN" -q -y "$T/self.png" -o "$T/self.png" 2>&1); rc=$?
[ $rc = 1 ] || fail "output = input: exit $rc, want 1 ($msg)"
cmp -s "$T/good.png" "$T/self.png" || fail "output = input: the input was modified"
mkdir "$T/selfdir"; cp "$T/good.png" "$T/selfdir/"
msg=$("$BIN" -q -y "$T/selfdir" -o "$T/selfdir/" 2>&1); rc=$?
[ $rc = 1 ] || fail "output dir = input dir: exit $rc, want 1 ($msg)"
cmp -s "$T/good.png" "$T/selfdir/good.png" || fail "output dir = input dir: the input was modified"
# ... and so is an output named inside a directory that lands on the input: an image into
# its own directory, a batch whose input is a symlink into the output directory, the
# statistics file, a frame of a video written into the video's own directory.
mkdir "$T/own"; cp "$T/good.png" "$T/own/"
msg=$(cd "$T/own" && "$BIN" -q good.png -o . -y 2>&1); rc=$?
[ $rc = 1 ] || fail "image into its own directory: exit $rc, want 1 ($msg)"
[ "$msg" = "entropy-stream: ./good.png: is the input good.png itself (choose another output)" ] || fail "image into its own directory: message: $msg"
cmp -s "$T/good.png" "$T/own/good.png" || fail "image into its own directory: the input was modified"
mkdir "$T/lin" "$T/lout"; cp "$T/good.png" "$T/lout/l.png"; ln -s ../lout/l.png "$T/lin/l.png"
msg=$("$BIN" -q -y "$T/lin" -o "$T/lout" 2>&1); rc=$?
[ $rc = 1 ] || fail "batch input linked into the output: exit $rc, want 1 ($msg)"
case "$msg" in "entropy-stream: $T/lout/l.png: is the input $T/lin/l.png itself"*) ;; *) fail "batch self message: $msg";; esac
cmp -s "$T/good.png" "$T/lout/l.png" || fail "batch input linked into the output: the input was modified"
mkdir "$T/vself"
"$PY" -c "import sys; open(sys.argv[1], 'wb').write(b'YUV4MPEG2 W8 H4 F25:1 Ip A1:1 Cmono\n' + 3 * (b'FRAME\n' + bytes(range(32))))" "$T/vself.y4m"
cp "$T/vself.y4m" "$T/vself/frame_000001.npy"
cp "$T/vself.y4m" "$T/vself/v.csv"
msg=$("$BIN" -q -y "$T/vself/frame_000001.npy" --format f32 -o "$T/vself" 2>&1); rc=$?
if [ $rc = 2 ]; then
  echo "note: this libavformat does not read y4m files: video cases not tested ($msg)"
else
  [ $rc = 1 ] || fail "video frames into the video's directory: exit $rc, want 1 ($msg)"
  case "$msg" in *"$T/vself/frame_000001.npy: is the input itself"*) ;; *) fail "video frame self message: $msg";; esac
  cmp -s "$T/vself.y4m" "$T/vself/frame_000001.npy" || fail "video frames into the video's directory: the input was modified"
  # A video output under a regular file: why, not "exists".
  for o in v.mkv v.npy; do
    msg=$("$BIN" -q "$T/vself.y4m" -o "$T/afile/$o" 2>&1); rc=$?
    [ $rc = 3 ] || fail "video $o under a regular file: exit $rc, want 3 ($msg)"
    case "$msg" in "entropy-stream: $T/afile/$o: "*"Not a directory") ;; *) fail "video $o under a regular file: message: $msg";; esac
  done
  msg=$("$BIN" -q -y "$T/vself/v.csv" --stats "$T/vself/v.csv" 2>&1); rc=$?
  [ $rc = 1 ] || fail "--stats onto the input: exit $rc, want 1 ($msg)"
  [ "$msg" = "entropy-stream: $T/vself/v.csv: is the input itself (choose another output)" ] || fail "--stats onto the input: message: $msg"
  cmp -s "$T/vself.y4m" "$T/vself/v.csv" || fail "--stats onto the input: the input was modified"
fi

# Binary output to a terminal is refused (script(1) gives the run a pty).
if command -v script >/dev/null; then
  script -qec "'$BIN' -q '$T/good.png' -o -" /dev/null > "$T/tty.out" 2>&1; rc=$?
  [ $rc = 1 ] || fail "-o - on a terminal: exit $rc, want 1 ($(cat -v "$T/tty.out"))"
  grep -aq "entropy-stream: -: standard output is a terminal" "$T/tty.out" || fail "-o - on a terminal: $(cat -v "$T/tty.out")"
  # So is standard input from a terminal: it waited for frames a keyboard does not type
  # (script's input stays open here; timeout: before the fix it ran until killed).
  timeout 20 script -qec "'$BIN' -q - --stats -" /dev/null > "$T/tty-in.out" 2>&1 < <(sleep 30); rc=$?
  [ $rc = 1 ] || fail "- on a terminal: exit $rc, want 1 ($(cat -v "$T/tty-in.out"))"
  grep -aq "entropy-stream: -: standard input is a terminal (pipe frames into it or redirect a file)" "$T/tty-in.out" ||
    fail "- on a terminal: $(cat -v "$T/tty-in.out")"
fi

# --version and --help.
out=$("$BIN" --version); rc=$?
[ $rc = 0 ] || fail "--version: exit $rc"
case "$out" in *"entropy-stream 0."*libpng*) ;; *) fail "--version output: $out";; esac
# Where no CUDA driver is installed, cudaDriverGetVersion gives 0: that is no driver, not a
# "driver 0.0" (which --version once printed).
case "$out" in *"driver 0.0"*) fail "--version shows a driver 0.0: $out";; esac
# It names what was left out of the build as CUDA and OpenMP do (FFmpeg's line was missing).
if [ "$AV" = 1 ]; then want="; FFmpeg .*: libavformat "; else want="FFmpeg: not built"; fi
printf '%s\n' "$out" | grep -q "$want" || fail "--version: no '$want': $out"
out=$("$BIN" --help); rc=$?
[ $rc = 0 ] || fail "--help: exit $rc"
for o in --window --shape --border --levels --base --format --colormap --range --overlay \
         --stats --stats-bins --device --gpus --cpu-below --threads --queue --raw --codec \
         --crf --preset --max-pixels --recursive -y -n --quiet --verbose --progress \
         --no-progress --version --help 1..255 2..65536 1..1024; do
  printf '%s\n' "$out" | grep -q -e "$o" || fail "--help does not mention $o"
done
# --gpus as the parser takes it (and README says it): a repeated ordinal is refused.
printf '%s\n' "$out" | grep -q "distinct GPU ordinals 0\.\.63" || fail "--help: --gpus not 'distinct GPU ordinals 0..63'"
bad_opt "--gpus 0,0: " "distinct ordinals 0..63" --gpus 0,0

# ... written to a full disk or a closed standard output: an output error (exit 3, one line),
# as GNU tools say 'write error' (both exited 0 without a word).
for o in --help --version; do
  if [ -w /dev/full ]; then
    msg=$("$BIN" $o 2>&1 >/dev/full); rc=$?
    [ $rc = 3 ] && [ "$msg" = "entropy-stream: -: write error: No space left on device" ] ||
      fail "$o > /dev/full: exit $rc, want 3 ($msg)"
  fi
  msg=$("$BIN" $o 2>&1 >&-); rc=$?
  [ $rc = 3 ] && [ "$msg" = "entropy-stream: -: write error: Bad file descriptor" ] ||
    fail "$o >&-: exit $rc, want 3 ($msg)"
done

# Standard output closed at the start: the next file opened took its number, and what was
# meant for it went there: --stats - wrote its CSV into the .npy being written (exit 0, the
# .npy 585 bytes too long). It must fail as a closed stdout (exit 3), the .npy kept whole.
# (On a GPU machine the CUDA driver's device files took it: --version wrote into one.)
if [ "$AV" = 1 ]; then
  head -c 30000 /dev/urandom > "$T/fd.raw"
  "$BIN" -q - --raw gray8:100x100 -o "$T/fd-want.npy" < "$T/fd.raw" || fail "raw to .npy: exit $?"
  msg=$("$BIN" -q - --raw gray8:100x100 -o "$T/fd.npy" --stats - < "$T/fd.raw" 2>&1 >&-); rc=$?
  [ $rc = 3 ] || fail "--stats - with stdout closed: exit $rc, want 3 ($msg)"
  [ "$msg" = "entropy-stream: -: cannot write: Bad file descriptor" ] ||
    fail "--stats - with stdout closed: message: $msg"
  cmp -s "$T/fd-want.npy" "$T/fd.npy" || fail "--stats - with stdout closed: the .npy is not the map alone"
  # Standard input that cannot be read (closed, or a directory): the error was printed by the
  # stdin pump and the reader saw an empty stream: --raw ran on with exit 0 (an empty .npy
  # written), y4m added "cannot open: Invalid data ..." as a second line. One line, exit 2,
  # nothing written.
  for how in closed dir; do
    for mode in raw y4m; do
      args=(-q - -o "$T/in-$how-$mode.npy"); [ $mode = raw ] && args+=(--raw gray8:4x4)
      if [ $how = closed ]; then msg=$("$BIN" "${args[@]}" 2>&1 <&-); rc=$?; want="Bad file descriptor"
      else msg=$("$BIN" "${args[@]}" 2>&1 < "$T"); rc=$?; want="Is a directory"; fi
      [ $rc = 2 ] && [ "$msg" = "entropy-stream: -: read error: $want" ] ||
        fail "stdin $how, $mode: exit $rc, want 2 and one line 'read error: $want': $msg"
      [ -e "$T/in-$how-$mode.npy" ] && fail "stdin $how, $mode: an output was written"
    done
  done

  # Empty standard input (/dev/null, an empty pipe, an empty file): y4m said "cannot open:
  # Invalid data found when processing input"; it says that nothing came (exit 2, nothing
  # written). Raw frames too: they gave an empty (0,4,4) .npy with exit 0.
  : > "$T/empty"
  for how in devnull pipe file; do
    for mode in raw y4m; do
      args=(-q - -o "$T/in-empty-$how-$mode.npy"); [ $mode = raw ] && args+=(--raw gray8:4x4)
      case $how in
        devnull) msg=$("$BIN" "${args[@]}" 2>&1 < /dev/null); rc=$? ;;
        pipe) msg=$(: | "$BIN" "${args[@]}" 2>&1); rc=$? ;;
        file) msg=$("$BIN" "${args[@]}" 2>&1 < "$T/empty"); rc=$? ;;
      esac
      [ $rc = 2 ] && [ "$msg" = "entropy-stream: -: no data on standard input" ] ||
        fail "stdin empty ($how), $mode: exit $rc, want 2 and 'no data on standard input': $msg"
      [ -e "$T/in-empty-$how-$mode.npy" ] && fail "stdin empty ($how), $mode: an output was written"
    done
  done
else
  # Built without FFmpeg: standard input and video are refused at once, in one line (exit 2),
  # and nothing is written. An empty raw stdin said "no data on standard input" or "built
  # without FFmpeg", as the stdin pump's timing fell; a video went through the whole setup.
  printf 'x' > "$T/v.mp4"
  for how in raw y4m empty video; do
    case $how in
      raw) msg=$(head -c 32 /dev/zero | "$BIN" -q - --raw gray8:4x4 -o "$T/nav.npy" 2>&1); rc=$? ;;
      y4m) msg=$(printf 'YUV4MPEG2 W4 H4\n' | "$BIN" -q - -o "$T/nav.npy" 2>&1); rc=$? ;;
      empty) msg=$("$BIN" -q - --raw gray8:4x4 -o "$T/nav.npy" 2>&1 < /dev/null); rc=$? ;;
      video) msg=$("$BIN" -q "$T/v.mp4" -o "$T/nav.npy" 2>&1); rc=$?; in="$T/v.mp4" ;;
    esac
    [ $how = video ] || in=-
    [ $rc = 2 ] && [ "$msg" = "entropy-stream: $in: built without FFmpeg: cannot read video or standard input" ] ||
      fail "no FFmpeg, $how input: exit $rc, want 2 and one line 'built without FFmpeg': $msg"
    [ -e "$T/nav.npy" ] && fail "no FFmpeg, $how input: an output was written"
  done
  echo "built without FFmpeg: video and standard input refused ($msg)"
fi

# --device gpu where no GPU can be used: exit 4 with one line.
if [ "${ES_HAVE_CUDA:-0}" = 1 ] && nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is present: --device gpu failure not tested here"
else
  # A build without CUDA says so (it said "no GPU visible" alone, as if a driver were missing).
  nogpu="no GPU visible"; [ "${ES_HAVE_CUDA:-0}" = 1 ] || nogpu="built without CUDA"
  msg=$("$BIN" -q --device gpu "$T/good.png" -o "$T/gpu.npy" 2>&1); rc=$?
  [ $rc = 4 ] || fail "--device gpu without GPU: exit $rc, want 4 ($msg)"
  [ "$msg" = "entropy-stream: $nogpu (--device gpu)" ] ||
    fail "--device gpu without GPU: message: $msg"
  [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] || fail "--device gpu: want one line, got: $msg"
  [ -e "$T/gpu.npy" ] && fail "--device gpu without GPU wrote an output"
  echo "--device gpu -> $rc: $msg"
  # A GPU asked for by number is as missing: exit 4 too (it was 1, a usage error).
  msg=$("$BIN" -q --device auto --gpus 0 "$T/good.png" -o "$T/gpu.npy" 2>&1); rc=$?
  [ $rc = 4 ] || fail "--gpus 0 without GPU: exit $rc, want 4 ($msg)"
  [ "$msg" = "entropy-stream: --gpus 0: $nogpu" ] || fail "--gpus 0 without GPU: message: $msg"
  [ -e "$T/gpu.npy" ] && fail "--gpus 0 without GPU wrote an output"
fi

# Control bytes in a file name (a newline, an ESC) are escaped: every message stays one line
# and cannot move the terminal's cursor; UTF-8 names pass unchanged (SPEC 3).
mkdir "$T/ctl"
printf junk > "$T/ctl/"$'bad\nname.png'
printf junk > "$T/ctl/"$'esc\033[31m\ttab.png'
printf junk > "$T/ctl/"$'caf\xc3\xa9.png'
"$BIN" --no-progress "$T/ctl" -o "$T/ctlo" 2> "$T/ctl.err"; rc=$?
[ $rc = 2 ] || fail "control bytes in names: exit $rc, want 2"
[ "$(wc -l < "$T/ctl.err")" = 5 ] || fail "control bytes in names: want 5 lines: $(cat -A "$T/ctl.err")"
grep -qv "^entropy-stream: " "$T/ctl.err" && fail "control bytes in names: a line is not a message: $(cat -A "$T/ctl.err")"
LC_ALL=C grep -q $'[\x01-\x1f\x7f]' "$T/ctl.err" && fail "control bytes printed raw: $(cat -A "$T/ctl.err")"
grep -qF "entropy-stream: $T/ctl/bad\nname.png: " "$T/ctl.err" || fail "newline not escaped as \\n: $(cat -A "$T/ctl.err")"
grep -qF "entropy-stream: $T/ctl/esc\e[31m\ttab.png: " "$T/ctl.err" || fail "ESC/tab not escaped: $(cat -A "$T/ctl.err")"
grep -qF "entropy-stream: $T/ctl/"$'caf\xc3\xa9.png: ' "$T/ctl.err" || fail "UTF-8 name changed: $(cat -A "$T/ctl.err")"
# Other control bytes as \xHH, in a single input's name too.
printf junk > "$T/"$'x\x01y.png'
msg=$("$BIN" -q "$T/"$'x\x01y.png' -o "$T/xy.npy" 2>&1); rc=$?
[ $rc = 2 ] || fail "\\x01 in a name: exit $rc, want 2"
[ "$msg" = "entropy-stream: $T/x\x01y.png: not a PNG file" ] || fail "\\x01 in a name: $(printf '%s' "$msg" | cat -A)"
# A backslash is escaped as \\: a name holding the two characters \n does not read as one
# holding a newline (both printed "\n" before).
printf junk > "$T/"'back\nslash.png'
msg=$("$BIN" -q "$T/"'back\nslash.png' -o "$T/bs.npy" 2>&1); rc=$?
[ $rc = 2 ] || fail "backslash in a name: exit $rc, want 2"
[ "$msg" = "entropy-stream: $T/back\\\\nslash.png: not a PNG file" ] || fail "backslash in a name: $msg"

if [ $FAIL -ne 0 ]; then
  echo "test_cli_errors: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_errors: all checks passed"
