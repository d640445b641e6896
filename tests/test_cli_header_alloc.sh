#!/bin/bash
# test_cli_header_alloc.sh - a video header alone costs no memory of the frames it declares
# (SPEC 3: header dimensions are checked before any allocation; memory is bounded by the
# frames in flight). A 49-byte y4m declaring 16000x16000 frames (within --max-pixels) once
# made the CLI allocate --queue frame buffers of 256 MB (and maps of 1 GB with -o .npy, an
# encoder's frames with -o .mp4) before any frame had come, and the 12000x12000 10-bit one
# a 288 MB packet; under a 1 GB address-space limit that was "out of memory" (exit 4, or 3
# from the encoder) where the input is simply cut short. Now: from a regular file the
# first frame is checked against the file's size, from a pipe it is read into memory grown
# as its bytes come, and outputs and frame buffers are made once a frame is there: exit 2,
# "frame 0 is short (got N of M bytes)", one line, no output written. Files, redirected
# standard input and pipes; y4m (8-bit direct, 4:2:0, 10-bit through the decoder) and raw.
# A first frame that is whole and a second that is short keeps the first (earlier frames
# kept), under the same limit. The limit (ulimit -v) is left out under the sanitizers,
# whose shadow memory needs terabytes of address space; the messages are checked anyway.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ]; then
  echo "test_cli_header_alloc: skipped (no FFmpeg)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
# shellcheck source=es_test_ffmpeg.sh
source "$(dirname "$0")/es_test_ffmpeg.sh"
Y4M=0
es_can_read_y4m && Y4M=1
[ $Y4M = 1 ] || echo "test_cli_header_alloc: no y4m demuxer in this FFmpeg: raw cases only"

LIMIT_KB=$((1024 * 1024)) # 1 GB of address space
LIMITED=1
if [ "${ES_SANITIZE:-0}" = 1 ] || [ "${ES_SANITIZE:-0}" = ON ]; then
  LIMITED=0
  echo "test_cli_header_alloc: sanitizer build: no address-space limit, messages only"
fi
# Fewer malloc arenas (64 MB of address space each) and threads: the baseline stays small
# on a machine of many cores. The CPU only: CUDA reserves address space when it starts.
export MALLOC_ARENA_MAX=2
OPTS=(--device cpu --threads 2 --queue 8 --no-progress)

# run NAME MODE(file|redir|pipe) INPUT [ARGS...]: the CLI on INPUT, under the limit where
# there is one; its exit code in $rc, standard error in $T/NAME.err.
run() {
  local name=$1 mode=$2 in=$3
  shift 3
  (
    [ $LIMITED = 1 ] && ulimit -v $LIMIT_KB
    case $mode in
      file) exec "$BIN" "${OPTS[@]}" "$in" "$@" ;;
      redir) exec "$BIN" "${OPTS[@]}" - "$@" < "$in" ;;
      pipe) cat "$in" | "$BIN" "${OPTS[@]}" - "$@" ;;
    esac
  ) > "$T/$name.out" 2> "$T/$name.err"
  rc=$?
}

"$PY" - "$T" <<'EOF' || { echo "cannot make the inputs"; exit 1; }
import sys
t = sys.argv[1]
def put(name, data): open(f'{t}/{name}', 'wb').write(data)
hdr = lambda w, h, c: f'YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C{c}\n'.encode()
put('big.y4m', hdr(16000, 16000, 'mono') + b'FRAME\n' + b'abcdef')         # frame 256000000 B
put('big420.y4m', hdr(16000, 16000, '420jpeg') + b'FRAME\n' + bytes(1000))  # Y plane 256000000 B
put('big10.y4m', hdr(12000, 12000, 'mono10') + b'FRAME\n' + bytes(99))      # 288000000 B
put('hdr.y4m', hdr(16000, 16000, 'mono'))                                  # no frame at all
put('big.raw', b'abc')
# One whole 4096x4096 frame, then 10 bytes of the next.
put('one.y4m', hdr(4096, 4096, 'mono') + b'FRAME\n' + bytes(range(256)) * 65536 + b'FRAME\n' + bytes(10))
put('one.raw', bytes(range(256)) * 65536 + bytes(10))
put('small.y4m', hdr(64, 48, 'mono') + 3 * (b'FRAME\n' + bytes(range(256)) * 12))
put('small.raw', bytes(range(256)) * 36)
EOF

# The limit itself must leave room for a small input, with every output kind (else this
# machine's baseline is above it: the limited cases are skipped, saying so).
if [ $LIMITED = 1 ]; then
  for o in npy mp4; do
    if [ $Y4M = 1 ]; then
      run ctl-$o file "$T/small.y4m" -o "$T/ctl.$o" --stats "$T/ctl-$o.csv"
    else
      run ctl-$o redir "$T/small.raw" --raw gray8:64x48 -o "$T/ctl.$o" --stats "$T/ctl-$o.csv"
    fi
    if [ $rc != 0 ]; then
      echo "test_cli_header_alloc: a small input fails under ulimit -v $LIMIT_KB (exit $rc:" \
        "$(head -c 300 "$T/ctl-$o.err")): no limit, messages only"
      LIMITED=0
      break
    fi
  done
fi

# short NAME MODE INPUT GOT SIZE [ARGS...]: frame 0 is cut short: exit 2, that one line,
# and no output written (nothing was opened for a frame that never came).
short() {
  local name=$1 mode=$2 in=$3 got=$4 size=$5
  shift 5
  rm -rf "$T/o.npy" "$T/o.mp4" "$T/o.csv" "$T/o.dir"
  run "$name" "$mode" "$in" "$@"
  local want="entropy-stream: $([ "$mode" = file ] && echo "$in" || echo -): frame 0 is short (got $got of $size bytes)"
  [ $rc = 2 ] || fail "$name: exit $rc, want 2: $(head -c 400 "$T/$name.err")"
  [ "$(cat "$T/$name.err")" = "$want" ] ||
    fail "$name: stderr '$(head -c 400 "$T/$name.err")', want the one line '$want'"
  for f in o.npy o.mp4 o.csv o.dir; do
    [ -e "$T/$f" ] && fail "$name: $f written for an input with no frame"
  done
  return 0
}

if [ $Y4M = 1 ]; then
  for mode in file redir pipe; do
    short y4m-stats-$mode $mode "$T/big.y4m" 6 256000000 --stats "$T/o.csv"
    short y4m-npy-$mode $mode "$T/big.y4m" 6 256000000 -o "$T/o.npy"
    short y4m-420-$mode $mode "$T/big420.y4m" 1000 384000000 -o "$T/o.npy"
    short y4m-10bit-$mode $mode "$T/big10.y4m" 99 288000000 -o "$T/o.npy"
  done
  short y4m-mp4-file file "$T/big.y4m" 6 256000000 -o "$T/o.mp4"
  short y4m-mp4-pipe pipe "$T/big.y4m" 6 256000000 -o "$T/o.mp4"
  short y4m-dir-pipe pipe "$T/big.y4m" 6 256000000 -o "$T/o.dir/"
fi
for mode in redir pipe; do
  short raw8-$mode $mode "$T/big.raw" 3 256000000 --raw gray8:16000x16000 -o "$T/o.npy"
  short raw16-$mode $mode "$T/big.raw" 3 512000000 --raw gray16le:16000x16000 --stats "$T/o.csv"
done

# A header and no frame at all (the input ends cleanly): nothing to compute, and the heat
# video's encoder waits for a frame that never comes. It once opened at the header's size:
# x264 allocated 1.3 GB for a 38-byte input (155 MB resident; under the limit exit 3 and
# libx264's own "x264 [error]: malloc of size 1307974336 failed" on stderr). Now exit 0, no
# line on stderr (-q), and the container written as ffmpeg writes it with no frame: MP4
# with no stream (ffprobe reads it); Matroska with its empty stream (libavformat 59's
# demuxer refuses any Matroska file without a frame, ffmpeg's own too: only its EBML magic
# is checked here). Standard output gets the y4m header, a frame directory is made empty.
no_frame() {
  local name=$1
  shift
  run "$name" redir "$T/hdr.y4m" -q "$@"
  [ $rc = 0 ] || fail "$name: exit $rc, want 0: $(head -c 400 "$T/$name.err")"
  [ -s "$T/$name.err" ] && fail "$name: stderr '$(head -c 400 "$T/$name.err")', want none"
  return 0
}
if [ $Y4M = 1 ] && ff_has encoders libx264; then
  rm -f "$T/n.mp4" "$T/n.mkv"
  no_frame none-mp4 -o "$T/n.mp4"
  ffprobe -v error "$T/n.mp4" > /dev/null 2>&1 || fail "none-mp4: ffprobe cannot read the mp4"
  no_frame none-mkv -o "$T/n.mkv"
  [ "$(head -c 4 "$T/n.mkv" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 1a45dfa3 ] ||
    fail "none-mkv: no Matroska file written"
  no_frame none-crf-mp4 -o "$T/n.mp4" -y --crf 30 --preset veryfast
  ffprobe -v error "$T/n.mp4" > /dev/null 2>&1 || fail "none-crf-mp4: ffprobe cannot read the mp4"
elif [ $Y4M = 1 ]; then
  echo "test_cli_header_alloc: no libx264: the no-frame .mp4 and .mkv cases skipped"
fi
if [ $Y4M = 1 ]; then
  no_frame none-stdout -o -
  [ "$(head -c 9 "$T/none-stdout.out")" = YUV4MPEG2 ] || fail "none-stdout: no y4m header"
  rm -rf "$T/n.dir"
  no_frame none-dir -o "$T/n.dir/"
  [ -d "$T/n.dir" ] && [ -z "$(ls -A "$T/n.dir")" ] || fail "none-dir: not an empty directory"
fi

# A whole first frame and a short second: the first is kept, the second named.
whole_then_short() {
  local name=$1 mode=$2 in=$3
  shift 3
  rm -f "$T/o.npy"
  run "$name" "$mode" "$in" -o "$T/o.npy" "$@"
  [ $rc = 2 ] || fail "$name: exit $rc, want 2: $(head -c 400 "$T/$name.err")"
  grep -q "frame 1 is short (got 10 of 16777216 bytes)" "$T/$name.err" ||
    fail "$name: $(head -c 400 "$T/$name.err")"
  "$PY" -c "
import numpy as np, sys
a = np.load('$T/o.npy')
sys.exit(0 if a.shape == (1, 4096, 4096) and a.max() > 0 else 1)" ||
    fail "$name: the whole first frame was not kept"
}
if [ $Y4M = 1 ]; then
  whole_then_short one-y4m-file file "$T/one.y4m"
  whole_then_short one-y4m-pipe pipe "$T/one.y4m"
fi
whole_then_short one-raw-pipe pipe "$T/one.raw" --raw gray8:4096x4096

[ $LIMITED = 1 ] && echo "test_cli_header_alloc: cases run under ulimit -v $LIMIT_KB"
[ $FAIL = 0 ] && echo "test_cli_header_alloc: all passed"
exit $((FAIL > 0))
