#!/bin/bash
# test_cli_signal.sh - SIGINT/SIGTERM during real runs: a video fed slowly on stdin is
# finished properly (exit 130, the .mp4 plays with > 0 frames, no temporary left), and an
# image batch stops starting files (exit 130, every written file complete, no temporaries).
# The stdin video is y4m, or raw gray8 frames (--raw) where this FFmpeg has no y4m.
# Also: a stalled source (stdin or a FIFO) whose only output failed ends by itself (exit 3);
# with another output still written it waits, and SIGINT keeps that output.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
SEED=${ES_TEST_SEED:-$(( $(date +%s) ^ $$ ))}
echo "test_cli_signal: seed $SEED (ES_TEST_SEED to replay)"
T=$(mktemp -d)
FPID=
BPID=
cleanup() {
  [ -n "$FPID" ] && kill "$FPID" 2>/dev/null
  [ -n "$BPID" ] && kill "$BPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
# await_end SECONDS LABEL: the run $BPID must end on its own within SECONDS (frames in
# flight finished, outputs closed); sets rc to its exit code.
await_end() {
  for _ in $(seq 1 $(( $1 * 10 ))); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$BPID" 2>/dev/null; then
    fail "$2: still running $1 s after the signal"
    kill -KILL "$BPID"
  fi
  wait "$BPID"; rc=$?
  BPID=
}
# interrupt SIG SECONDS LABEL: sends SIG to the run $BPID, then await_end.
interrupt() {
  kill -"$1" "$BPID"
  await_end "$2" "$3"
}
# await SECONDS LABEL WHAT COMMAND...: polls COMMAND until it succeeds (the state a case means
# to interrupt); fails the case, naming WHAT, where SECONDS pass or the run $BPID ends first.
# Fixed pauses raced with a run slow to get there (a loaded machine, ASan): a case then
# passed without testing its point, or failed.
await() {
  local s=$1 label=$2 what=$3
  shift 3
  for _ in $(seq 1 $(( s * 20 ))); do
    "$@" && return 0
    if ! kill -0 "$BPID" 2>/dev/null; then
      "$@" && return 0
      fail "$label: the run ended before $what"
      return 1
    fi
    sleep 0.05
  done
  fail "$label: $what not seen in $s s"
  return 1
}
# What /proc says a thread sleeps in (wchan), learnt from probes since the names differ between
# kernels: W_SLEEP a sleep(1), W_READ a read of an empty pipe, W_WRITE a write into a full one,
# W_POLL a poll. Empty where /proc does not say: the waits on them then fall back to a pause.
# wchan_probe VAR PID: VAR = what PID sleeps in (the same twice, 0.1 s apart); ends PID.
wchan_probe() {
  local w prev=
  for _ in $(seq 1 50); do
    w=$(cat "/proc/$2/wchan" 2>/dev/null)
    [ "$w" = 0 ] && w=
    [ -n "$w" ] && [ "$w" = "$prev" ] && break
    prev=$w
    w=
    sleep 0.1
  done
  kill "$2" 2>/dev/null
  wait "$2" 2>/dev/null
  printf -v "$1" '%s' "$w"
}
W_READ= W_WRITE= W_POLL=
sleep 30 & wchan_probe W_SLEEP $!
if [ -n "$W_SLEEP" ]; then
  mkfifo "$T/probe-r" "$T/probe-w"
  sleep 30 > "$T/probe-r" & FPID=$!
  cat "$T/probe-r" > /dev/null & wchan_probe W_READ $!
  kill $FPID; wait $FPID 2>/dev/null
  sleep 30 < "$T/probe-w" & FPID=$!
  yes > "$T/probe-w" 2>/dev/null & wchan_probe W_WRITE $!
  kill $FPID; wait $FPID 2>/dev/null; FPID=
  "$PY" -c 'import select; select.poll().poll(30000)' & wchan_probe W_POLL $!
fi
echo "test_cli_signal: wchan: sleep '$W_SLEEP', pipe read '$W_READ', write '$W_WRITE', poll '$W_POLL'"
# run_in WCHAN: a thread of the run $BPID sleeps in WCHAN now.
run_in() { [ -n "$1" ] && grep -qxF "$1" /proc/"$BPID"/task/*/wchan 2>/dev/null; }
# await_reading LABEL: waits (60 s at most) until a thread of the run $BPID sleeps reading a
# pipe: its input (through the stdin pump) has nothing for it. Without wchan, a 2 s pause.
await_reading() {
  if [ -z "$W_READ" ]; then sleep 2; return 0; fi
  await 60 "$1" "a read of its input waiting" run_in "$W_READ"
}
# stalled: the producer $FPID has sent everything (its ffmpeg is done: the subshell is now the
# sleep it execs) and the run has taken it all. The pump sleeping in poll says the FIFO is
# empty (the producer's writes woke it long ago), and nothing more comes; the decoder
# sleeping in a read after that says the pump's pipe is empty too: every frame sent was read.
# (A decoder waiting while the pump still held data was not yet that.)
stalled() {
  [ "$(cat /proc/"$FPID"/comm 2>/dev/null)" = sleep ] || return 1
  if [ -z "$W_READ" ] || [ -z "$W_POLL" ]; then sleep 2; return 0; fi # /proc does not say
  run_in "$W_POLL" && run_in "$W_READ"
}
# trace_says LINE: the run (under ES_TRACE=1) has traced LINE on $T/err. A case that awaits a
# line of $T/err empties it before its run: the run's own `2>` is done in its child, maybe
# after this shell has looked (and found the line the previous run wrote).
trace_says() { grep -q "] $1\$" "$T/err"; }

# ---- Video: ffmpeg -re feeds y4m at 25 fps for 60 s; the CLI gets SIGINT once it has written a
# frame and waits for the next one (ES_TRACE says the first; wchan the wait).
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ] && command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; then
  # shellcheck source=es_test_ffmpeg.sh
  source "$(dirname "$0")/es_test_ffmpeg.sh"
  # What goes into the pipe: y4m, or raw frames where ffmpeg cannot write y4m or the library
  # cannot read it (the point of these cases is a slow or stalled stdin, not the format).
  if ff_has muxers yuv4mpegpipe && es_can_read_y4m; then
    SRC=(-pix_fmt yuv420p -f yuv4mpegpipe); RAW1=(); RAW2=()
  else
    echo "test_cli_signal: no y4m in this FFmpeg: raw gray8 frames on stdin instead"
    SRC=(-pix_fmt gray -f rawvideo); RAW1=(--raw gray8:161x97@25); RAW2=(--raw gray8:67x45@25)
  fi
  for sig in INT TERM; do
    rm -f "$T/fifo" "$T/out.mp4"
    mkfifo "$T/fifo"
    ffmpeg -nostdin -v error -re -f lavfi -i "testsrc=size=161x97:rate=25" -t 60 "${SRC[@]}" \
      - > "$T/fifo" 2>/dev/null &
    FPID=$!
    : > "$T/err"
    ES_TRACE=1 "$BIN" --no-progress "${RAW1[@]}" - -o "$T/out.mp4" < "$T/fifo" 2> "$T/err" &
    BPID=$!
    await 60 "SIG$sig on a video" "a frame written" trace_says "video: first frame written" &&
      await_reading "SIG$sig on a video"
    interrupt $sig 10 "a video on stdin"
    kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
    echo "SIG$sig: exit $rc; stderr: $(cat "$T/err")"
    [ $rc = 130 ] || fail "SIG$sig on a video: exit $rc, want 130"
    # The pump cuts the pipe wherever the producer was: not a short frame of the input.
    grep -q "is short" "$T/err" && fail "SIG$sig: the interruption reported as a short frame: $(cat "$T/err")"
    [ -f "$T/out.mp4" ] || fail "SIG$sig: out.mp4 missing"
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$T/out.mp4")
    echo "SIG$sig: out.mp4 has $n frames"
    [ -n "$n" ] && [ "$n" -gt 0 ] 2>/dev/null || fail "SIG$sig: out.mp4 does not play ($n frames)"
    [ -n "$n" ] && [ "$n" -lt 1500 ] 2>/dev/null || fail "SIG$sig: out.mp4 has all $n frames: the signal did not stop reading"
    ls -A "$T" | grep -q '^\.' && fail "SIG$sig: temporaries left: $(ls -A "$T")"
  done
  # Frames larger than a pipe's buffer arrive in pieces: a signal then cuts one, which must
  # not be reported as a short frame of the input. The frames read are kept.
  rm -f "$T/big.npy"
  : > "$T/err"
  ffmpeg -nostdin -v error -re -f lavfi -i "testsrc=size=640x480:rate=25" -t 60 -pix_fmt gray \
    -f rawvideo - 2>/dev/null |
    ES_TRACE=1 "$BIN" --no-progress --raw gray8:640x480@25 - -o "$T/big.npy" 2> "$T/err" &
  BPID=$! # $! of a pipeline: its last command, entropy-stream
  # (Not a wait for a read of its input: a run slower than 25 fps, ASan on a loaded machine,
  # never waits for one, and its point is a frame cut, wherever the run is.)
  await 60 "640x480 raw frames" "a frame written" trace_says "video: first frame written"
  interrupt INT 10 "640x480 raw frames"
  echo "SIGINT on 640x480 raw frames: exit $rc; stderr: $(cat "$T/err")"
  [ $rc = 130 ] || fail "SIGINT on 640x480 raw frames: exit $rc, want 130"
  grep -q "is short" "$T/err" && fail "SIGINT on 640x480 raw frames reported as a short frame: $(cat "$T/err")"
  n=$(sed -n 's/^entropy-stream: \([0-9]*\) frames\?, .*/\1/p' "$T/err")
  "$PY" -c "
import numpy as np, sys
a = np.load('$T/big.npy'); print('640x480 raw frames: npy', a.shape)
sys.exit(0 if a.shape[1:] == (480, 640) and 0 < a.shape[0] == int(sys.argv[1]) < 1500 else 1)" "${n:-0}" ||
    fail "SIGINT on 640x480 raw frames: the .npy does not hold the $n frames read"
  # A signal while the stream's header is still awaited (nothing written yet): exit 130, not
  # "cannot open" (exit 2) because the pump closed standard input; no output made. The writer
  # stays open and silent until ended (a `sleep 8 |` ended by itself on a slow machine).
  if [ ${#RAW1[@]} = 0 ]; then
    rm -f "$T/fifo" "$T/hdr.npy"
    mkfifo "$T/fifo"
    sleep 60 > "$T/fifo" &
    FPID=$!
    "$BIN" --no-progress - -o "$T/hdr.npy" < "$T/fifo" 2> "$T/err" &
    BPID=$!
    await_reading "header wait"
    interrupt INT 5 "header wait"
    kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
    echo "SIGINT before the header: exit $rc; stderr: $(cat "$T/err")"
    [ $rc = 130 ] || fail "SIGINT before the header: exit $rc, want 130"
    grep -q "cannot open" "$T/err" && fail "SIGINT before the header reported as bad input"
    grep -qx "entropy-stream: -: interrupted before the first frame" "$T/err" ||
      fail "SIGINT before the header: not said as such: $(cat "$T/err")"
    [ -e "$T/hdr.npy" ] && fail "SIGINT before the header: an output was made"
    ls -A "$T" | grep -q '^\.' && fail "SIGINT before the header: temporaries left: $(ls -A "$T")"
  fi
  # A signal while raw frames are awaited from a silent stdin: the pump then closes the
  # input, the reader finds a stream of 0 frames, and the outputs were opened with no frame
  # (a 538-byte .mkv ffprobe cannot open, a .mp4 with no stream, a .npy of shape (0,16,16), a
  # y4m header, an empty frame directory; exit 130). Nothing is made now.
  early_outs=(e.npy edir)
  ff_has muxers matroska && early_outs+=(e.mkv)
  ff_has muxers mp4 && early_outs+=(e.mp4)
  es_can_write_y4m && early_outs+=(e.y4m)
  for mode in raw; do
    args=(--raw gray8:16x16)
    for out in "${early_outs[@]}"; do
      label="SIGINT awaiting the first frame ($mode -> $out)"
      rm -rf "${T:?}/$out" "$T/fifo"
      mkfifo "$T/fifo"
      sleep 60 > "$T/fifo" &
      FPID=$!
      : > "$T/err"
      ES_TRACE=1 "$BIN" --no-progress "${args[@]}" - -o "$T/$out" < "$T/fifo" 2> "$T/err" &
      BPID=$!
      await_reading "$label"
      interrupt INT 5 "$label"
      kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
      [ $rc = 130 ] || fail "$label: exit $rc, want 130: $(grep -v '^es-trace' "$T/err")"
      grep -qx "entropy-stream: -: interrupted before the first frame" "$T/err" ||
        fail "$label: not said as such: $(grep -v '^es-trace' "$T/err")"
      [ -e "$T/$out" ] && fail "$label: $out left ($(ls -ld "$T/$out"))"
      ls -A "$T" | grep -q '^\.' && fail "$label: temporaries left: $(ls -A "$T")"
    done
  done
  # A source that sends a few frames and then stays open and silent: the decoder is blocked
  # in read(); SIGINT must still end the run at once with those frames kept.
  rm -f "$T/fifo" "$T/stall.npy"
  mkfifo "$T/fifo"
  ( ffmpeg -nostdin -v error -f lavfi -i "testsrc=size=67x45:rate=25" -frames:v 17 "${SRC[@]}" \
      - 2>/dev/null; exec sleep 60 ) > "$T/fifo" &
  FPID=$!
  "$BIN" --no-progress "${RAW2[@]}" - -o "$T/stall.npy" < "$T/fifo" 2> "$T/err" &
  BPID=$!
  await 60 "stalled stdin" "the 17 frames read and a read waiting" stalled
  interrupt INT 5 "stalled stdin"
  kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
  echo "stalled stdin: exit $rc; stderr: $(cat "$T/err")"
  [ $rc = 130 ] || fail "stalled stdin: exit $rc, want 130"
  "$PY" -c "
import numpy as np, sys
a = np.load('$T/stall.npy'); print('stalled stdin: npy', a.shape)
sys.exit(0 if a.shape == (17, 45, 67) else 1)" || fail "stalled stdin: the 17 frames sent were not all kept"
  # The same silent source as a FIFO named as the input (not stdin): the decoder was blocked
  # in read() on it, never saw the flag, and the run went on until the writer wrote again.
  # y4m only: --raw is for stdin.
  if [ ${#RAW1[@]} = 0 ]; then
    rm -f "$T/fifo" "$T/stall2.npy"
    mkfifo "$T/fifo"
    ( ffmpeg -nostdin -v error -f lavfi -i "testsrc=size=67x45:rate=25" -frames:v 17 "${SRC[@]}" \
        - 2>/dev/null; exec sleep 60 ) > "$T/fifo" &
    FPID=$!
    "$BIN" --no-progress "$T/fifo" -o "$T/stall2.npy" 2> "$T/err" &
    BPID=$!
    await 60 "stalled FIFO input" "the 17 frames read and a read waiting" stalled
    interrupt INT 5 "stalled FIFO input"
    kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
    echo "stalled FIFO input: exit $rc; stderr: $(cat "$T/err")"
    [ $rc = 130 ] || fail "stalled FIFO input: exit $rc, want 130"
    "$PY" -c "
import numpy as np, sys
a = np.load('$T/stall2.npy'); print('stalled FIFO input: npy', a.shape)
sys.exit(0 if a.shape == (17, 45, 67) else 1)" || fail "stalled FIFO input: the 17 frames sent were not all kept"
  fi
  # A source that sends one frame and stays silent, and an output that fails on that frame
  # (its frame file is a directory in the way). When it is the only output the run must stop
  # by itself, exit 3, whether the source is standard input or a FIFO named as INPUT. The
  # decode thread is blocked in read() there; the pump sees the abort as it sees a signal and
  # closes its pipe, so the final join does not wait for the writer (without that, the run
  # hung until it wrote). With --stats still being written the run goes on waiting for
  # frames, and SIGINT ends it with the statistics kept (exit 130; before, the failed frame
  # directory discarded them at once, exit 3).
  for how in stdin fifo; do
    if [ $how = fifo ] && [ ${#RAW1[@]} != 0 ]; then continue; fi # --raw is for stdin only
    for outs in one two; do
      rm -rf "$T/fifo" "$T/ofail" "$T/ofail.csv"
      mkdir -p "$T/ofail/frame_000000.png"
      mkfifo "$T/fifo"
      ( ffmpeg -nostdin -v error -f lavfi -i "testsrc=size=67x45:rate=25" -frames:v 1 "${SRC[@]}" \
          - 2>/dev/null; exec sleep 60 ) > "$T/fifo" &
      FPID=$!
      extra=(); [ $outs = two ] && extra=(--stats "$T/ofail.csv")
      : > "$T/err"
      if [ $how = stdin ]; then
        "$BIN" --no-progress "${RAW2[@]}" - -o "$T/ofail" "${extra[@]}" < "$T/fifo" 2> "$T/err" &
      else
        "$BIN" --no-progress "$T/fifo" -o "$T/ofail" "${extra[@]}" 2> "$T/err" &
      fi
      BPID=$!
      label="stalled $how, the only output failed"
      if [ $outs = one ]; then
        for _ in $(seq 1 100); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$BPID" 2>/dev/null; then
          fail "$label: still running 10 s after the failure"
          kill -KILL "$BPID"
        fi
        wait "$BPID"; rc=$?; BPID=
        [ $rc = 3 ] || fail "$label: exit $rc, want 3: $(cat "$T/err")"
      else
        label="stalled $how, -o failed, --stats going on"
        # Once the failure is said and the run waits for frames, it must stay: a run that
        # ended by itself did so within the pump's next look at its flags (0.1 s).
        await 60 "$label" "the failure said" grep -q "frame_000000.png: is a directory" "$T/err" &&
          await 60 "$label" "the frame read and a read waiting" stalled
        for _ in $(seq 1 10); do kill -0 "$BPID" 2>/dev/null && sleep 0.1; done
        kill -0 "$BPID" 2>/dev/null || fail "$label: ended before the signal: $(cat "$T/err")"
        interrupt INT 5 "$label"
        [ $rc = 130 ] || fail "$label: exit $rc, want 130: $(cat "$T/err")"
        [ "$(wc -l 2>/dev/null < "$T/ofail.csv")" = 2 ] || fail "$label: the statistics of the frame sent were not kept"
        grep -q "; failed: -o $T/ofail at frame 0$" "$T/err" || fail "$label: summary: $(cat "$T/err")"
      fi
      kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=
      echo "$label: exit $rc; stderr: $(cat "$T/err")"
      grep -c "frame_000000.png: is a directory" "$T/err" | grep -qx 1 || fail "$label: the failure not said once: $(cat "$T/err")"
    done
  done
else
  echo "no FFmpeg: video part skipped"
fi

# ---- A signal while the main thread is blocked writing --stats - into a pipe whose reader is
# slow: the run finishes properly (exit 130), every record written whole. The write failed
# with EINTR before ("-: cannot write: Interrupted system call"), the last record cut. The
# reader starts once the signal is sent ($T/go), the run blocked in its write (wchan) by then.
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ]; then # --raw on stdin is read through libavformat
"$PY" -c "
import numpy as np, sys
np.random.default_rng(int(sys.argv[2])).integers(0, 256, (4000, 48, 64), dtype=np.uint8).tofile(sys.argv[1])
" "$T/frames.raw" $SEED || { echo "cannot make frames"; exit 1; }
rm -f "$T/sp"; mkfifo "$T/sp"
rm -f "$T/go"
( for _ in $(seq 1 1200); do [ -e "$T/go" ] && break; sleep 0.05; done; exec cat > "$T/sp.csv" ) \
  < "$T/sp" &
FPID=$!
"$BIN" --no-progress --raw gray8:64x48 - --stats - < "$T/frames.raw" > "$T/sp" 2> "$T/err" &
BPID=$!
if [ -n "$W_WRITE" ]; then
  await 60 "--stats - into a slow pipe" "a write waiting for the reader" run_in "$W_WRITE"
else
  sleep 1 # /proc does not say
fi
kill -INT "$BPID"
touch "$T/go"
await_end 10 "--stats - into a slow pipe"
wait $FPID; FPID=
echo "--stats - into a slow pipe: exit $rc; stderr: $(cat "$T/err")"
[ $rc = 130 ] || fail "--stats - into a slow pipe: exit $rc, want 130"
grep -q "cannot write" "$T/err" && fail "--stats - into a slow pipe: a write error: $(cat "$T/err")"
n=$(sed -n 's/^entropy-stream: \([0-9]*\) frames\?, .*/\1/p' "$T/err")
"$PY" - "$T/sp.csv" "$n" <<'EOF2' || fail "--stats - into a slow pipe: the records are not whole"
import sys
lines = open(sys.argv[1]).read().split('\n')
assert lines[-1] == '', 'the last record is cut: %r' % lines[-1][-40:]
rows = [l.split(',') for l in lines[:-1]]
assert all(len(r) == len(rows[0]) for r in rows), 'a record has a different field count'
assert len(rows) - 1 == int(sys.argv[2]), '%d records, %s frames' % (len(rows) - 1, sys.argv[2])
print('%d whole records' % (len(rows) - 1))
EOF2

# A second signal ends the run at once (exit 130) without finishing: the temporary of the
# output must go with it. It was left behind (.m.npy.tmp-*, as large as the frames written).
# Frames of ~0.1 s each on one thread, 32 in flight: the first signal leaves seconds of work.
# Each run is signalled once it has written a frame (its pool full by then).
"$PY" -c "
import numpy as np, sys
np.random.default_rng(int(sys.argv[2])).integers(0, 256, (60, 240, 320), dtype=np.uint8).tofile(sys.argv[1])
" "$T/slow.raw" $SEED || { echo "cannot make frames"; exit 1; }
# twice LABEL: a first SIGINT to the run $BPID, then (while it finishes what it holds) a
# second; returns 1, the run reaped, where it ended before the second ($rc as interrupt sets).
# A second signal from the same process within 0.2 s of the first one's handling is that one
# delivered twice (ES_SIG_SAME_NS, tools/cli_msg.c): it is sent 0.3 s after the first was
# seen taken, no longer pending for the run (/proc's ShdPnd: a thread has dequeued it and
# runs the handler). Fixed pauses raced with a signal handled late on a loaded machine.
twice() {
  kill -INT "$BPID"
  await 60 "$1" "the first SIGINT taken" sigint_taken
  sleep 0.3
  if kill -0 "$BPID" 2>/dev/null; then
    interrupt INT 5 "$1"
    return 0
  fi
  wait "$BPID"; BPID=
  echo "note: $1: the run ended before the second SIGINT: not tested"
  return 1
}
# sigint_taken: no SIGINT is pending for the run $BPID (the process-wide set, bit 2 - 1).
sigint_taken() {
  local p
  p=$(sed -n 's/^ShdPnd:[[:space:]]*//p' /proc/"$BPID"/status 2>/dev/null)
  [ -n "$p" ] && (( (16#${p: -1} & 2) == 0 ))
}
mkdir "$T/two"
: > "$T/err"
ES_TRACE=1 "$BIN" --no-progress --threads 1 --queue 32 -w 255 -L 256 --raw gray8:320x240 - \
  -o "$T/two/m.npy" < "$T/slow.raw" 2> "$T/err" &
BPID=$!
await 60 "a second SIGINT" "a frame written" trace_says "video: first frame written"
if twice "a second SIGINT"; then
  echo "a second SIGINT: exit $rc; left: $(ls -A "$T/two")"
  [ $rc = 130 ] || fail "a second SIGINT: exit $rc, want 130"
  [ -z "$(ls -A "$T/two")" ] || fail "a second SIGINT: files left: $(ls -A "$T/two")"
fi

# The same with a progress line drawn (--progress: as on a terminal): the run that ends at once
# ends that line too, so that the shell's prompt does not land after it. It did not.
mkdir "$T/two-p"
: > "$T/err"
"$BIN" --progress --threads 1 --queue 32 -w 255 -L 256 --raw gray8:320x240 - -o "$T/two-p/m.npy" \
  < "$T/slow.raw" 2> "$T/err" &
BPID=$!
# Wait for the line itself (drawn once a frame is done): under a sanitizer on a loaded machine
# the first frame takes over a second. (No ES_TRACE here: its lines would end stderr too.)
await 60 "a second SIGINT, progress shown" "the progress line" grep -aq "frames\?, [0-9.]* fps" "$T/err"
if twice "a second SIGINT, progress shown"; then
  echo "a second SIGINT, progress shown: exit $rc; stderr: $(cat -v "$T/err" | tail -c 200)"
  [ $rc = 130 ] || fail "a second SIGINT, progress shown: exit $rc, want 130"
  grep -aq "frames\?, [0-9.]* fps" "$T/err" || fail "a second SIGINT, progress shown: no progress line"
  [ "$(tail -c 1 "$T/err" | od -An -c | tr -d ' ')" = '\n' ] \
    || fail "a second SIGINT, progress shown: the progress line not ended: $(cat -v "$T/err" | tail -c 200)"
fi

# One request delivered twice: `timeout -s INT` signals the run and then its process group, so
# two SIGINTs come from one process microseconds apart. That is one interruption: the run
# finishes what it holds and keeps its output (exit 130). The second was taken as "stop now"
# (about 1 run in 20 under timeout, every run under valgrind): no message, the .npy removed.
# Two kills from this shell back to back do the same, every time. The .npy holds the frames
# the summary counts.
mkdir "$T/dup"
: > "$T/err"
ES_TRACE=1 "$BIN" --no-progress --threads 1 --queue 2 -w 255 -L 256 --raw gray8:320x240 - \
  -o "$T/dup/m.npy" < "$T/slow.raw" 2> "$T/err" &
BPID=$!
await 60 "one SIGINT delivered twice" "a frame written" trace_says "video: first frame written"
kill -INT $BPID; kill -INT $BPID
await_end 60 "one SIGINT delivered twice"
echo "one SIGINT delivered twice: exit $rc; left: $(ls -A "$T/dup"); stderr: $(cat "$T/err")"
[ $rc = 130 ] || fail "one SIGINT delivered twice: exit $rc, want 130"
[ "$(ls -A "$T/dup")" = m.npy ] || fail "one SIGINT delivered twice: files left: '$(ls -A "$T/dup")', want m.npy"
n=$(sed -n 's/^entropy-stream: \([0-9]*\) frames\?, .*/\1/p' "$T/err")
"$PY" -c "
import numpy as np, sys
a = np.load('$T/dup/m.npy'); print('one SIGINT delivered twice: npy', a.shape)
sys.exit(0 if a.shape[1:] == (240, 320) and 0 < a.shape[0] == int(sys.argv[1]) < 60 else 1)" "${n:-0}" ||
  fail "one SIGINT delivered twice: the .npy does not hold the $n frames the summary counts"
fi

# ---- Image batch: many files; SIGINT once some are written.
mkdir "$T/in"
"$PY" - "$T/in" $SEED <<'EOF' || { echo "cannot make inputs"; exit 1; }
import os, struct, sys, zlib
import numpy as np
d, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
def chunk(t, b):
    return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
for i in range(400):
    w, h = 301 + 2 * int(rng.integers(0, 20)), 201 + 2 * int(rng.integers(0, 20))
    a = rng.integers(0, 256, (h, w), dtype=np.uint8)
    raw = b''.join(b'\0' + a[y].tobytes() for y in range(h))
    open(os.path.join(d, 'img%03d.png' % i), 'wb').write(
        b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
        + chunk(b'IDAT', zlib.compress(raw, 1)) + chunk(b'IEND', b''))
EOF
"$BIN" -q -w 31 -L 256 "$T/in" -o "$T/out" 2> "$T/err" &
BPID=$!
await 60 "SIGINT on a batch" "3 files written" eval '[ "$(ls "$T/out" 2>/dev/null | wc -l)" -ge 3 ]'
kill -INT $BPID
wait $BPID; rc=$?
BPID=
done_n=$(ls "$T/out" | wc -l)
echo "batch: exit $rc after $done_n of 400 files; stderr: $(cat "$T/err")"
if [ $rc = 0 ] && [ "$done_n" = 400 ]; then
  echo "batch finished before the signal: nothing to check about interruption"
else
  [ $rc = 130 ] || fail "SIGINT on a batch: exit $rc, want 130"
  [ "$done_n" -lt 400 ] || fail "SIGINT on a batch: all files were still done"
  # -q: an interruption is no error (exit 130 says it), so nothing is printed, as for a
  # video. The batch said "interrupted: N of M files done" all the same.
  [ -s "$T/err" ] && fail "SIGINT on a -q batch: printed $(cat "$T/err")"
fi
[ -z "$(ls -A "$T/out" | grep '^\.')" ] || fail "batch: temporaries left: $(ls -A "$T/out" | grep '^\.')"
"$PY" - "$T/out" <<'EOF' || fail "batch: a written PNG is incomplete"
import os, sys, zlib, struct
d = sys.argv[1]
for n in os.listdir(d):
    b = open(os.path.join(d, n), 'rb').read()
    assert b[:8] == b'\x89PNG\r\n\x1a\n' and b[-8:-4] == b'IEND', n
print('%d written PNGs complete' % len(os.listdir(d)))
EOF

# ---- An output that is a FIFO with no reader: its writer waited in open() for one, and a
# first SIGINT did not end that wait (the run sat until a reader came). Now the signal ends it:
# that output is said once as not written, every other output is kept, exit 130.
# files_written FILE...: every FILE exists.
files_written() {
  local f
  for f in "$@"; do [ -f "$f" ] || return 1; done
}
# files_and_sleep FILE...: the FILEs are written and a thread of the run $BPID sleeps as a
# sleep(1) does (W_SLEEP): it waits between tries of its FIFO (io/atomic.c; nothing else in a
# run sleeps).
files_and_sleep() { files_written "$@" && run_in "$W_SLEEP"; }
# await_fifo_wait LABEL FILE...: waits (60 s at most) until the run $BPID waits for its FIFO's
# reader, the FILEs written. A fixed wait raced with a run slow to get there (a loaded
# machine, ASan). Without wchan, 2 s after the FILEs.
await_fifo_wait() {
  local label=$1
  shift
  if [ -z "$W_SLEEP" ]; then
    await 60 "$label" "its files written" files_written "$@" || true
    sleep 2
    return 0
  fi
  await 60 "$label" "the wait for its FIFO's reader" files_and_sleep "$@"
}
# fifo_case LABEL FIFO ARGS...: runs the CLI with ARGS, FIFO (one of its outputs) without a
# reader; SIGINT once it waits for one (and the files in FIFO_AFTER are written); the run
# must end within 5 s, exit 130, naming FIFO once.
FIFO_AFTER=()
fifo_case() {
  local label=$1 fifo=$2
  shift 2
  rm -f "$fifo"; mkfifo "$fifo"
  "$BIN" --no-progress "$@" 2> "$T/err" &
  BPID=$!
  await_fifo_wait "$label" "${FIFO_AFTER[@]}"
  if ! kill -0 "$BPID" 2>/dev/null; then
    wait "$BPID"; rc=$?; BPID=
    fail "$label: ended before the signal (exit $rc): $(cat "$T/err")"
    return
  fi
  interrupt INT 5 "$label"
  echo "$label: exit $rc; stderr: $(cat "$T/err")"
  [ $rc = 130 ] || fail "$label: exit $rc, want 130"
  [ "$(grep -c "$fifo: not written" "$T/err")" = 1 ] || fail "$label: the FIFO not said once as not written: $(cat "$T/err")"
  [ -p "$fifo" ] || fail "$label: the FIFO was replaced"
}
# A signal at the very start of main: the handlers were installed only after the options
# were read and checked, and a SIGINT before that (the first 50-100 ms of a run on a loaded
# machine, most of them the loader's) took the default action: the process died with no
# message. The run is held at main's first line deterministically: under ES_TRACE its first
# act is a trace line to stderr, here a full pipe, so it waits in that write; SIGINT then, the
# pipe drained: it must end by itself, exit 130, said, nothing written.
"$PY" - "$BIN" "$T/in/img000.png" "$T/early.png" <<'EOF2' || fail "SIGINT at the start of main: see above"
import fcntl, os, subprocess, sys, time
bin_, src, out = sys.argv[1:4]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
os.set_blocking(w, False)
try:
    while True:
        os.write(w, b'x' * 4096)
except BlockingIOError:
    pass
os.set_blocking(w, True)
p = subprocess.Popen([bin_, '--no-progress', src, '-o', out], stderr=w,
                     env=dict(os.environ, ES_TRACE='1'))
os.close(w)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:  # until it sleeps writing into the full pipe
    try:
        wchan = open('/proc/%d/wchan' % p.pid).read()
        state = open('/proc/%d/stat' % p.pid).read().rsplit(')', 1)[1].split()[0]
    except OSError:
        wchan, state = '', ''
    if 'pipe' in wchan and state == 'S':
        break
    if p.poll() is not None:
        break
    time.sleep(0.002)
else:
    p.kill()
    print('FAIL: SIGINT at the start of main: the run never waited in its first write')
    sys.exit(1)
p.send_signal(2)
os.set_blocking(r, False)
err = b''
while True:
    try:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        err += chunk
    except BlockingIOError:
        if time.monotonic() > deadline + 30:  # it never ended: killed, failed below
            p.kill()
            break
        time.sleep(0.01)
p.wait()
lines = [l for l in err.decode(errors='replace').split('\n') if l.startswith('entropy-stream')]
print('SIGINT at the start of main: returncode %d; %s' % (p.returncode, lines))
ok = p.returncode == 130 and lines and 'interrupted' in lines[-1] and not os.path.exists(out)
sys.exit(0 if ok else 1)
EOF2

rm -rf "$T/fin" "$T/fout"; mkdir "$T/fin" "$T/fout"
for k in 0 1 2 3; do cp "$T/in/img00$k.png" "$T/fin/"; done
printf 'not a png' > "$T/fin/bad.png" # fails (exit 2), said on its own line: not done either
# A batch: the other three files are written whole, no temporaries.
FIFO_AFTER=("$T/fout/img000.png" "$T/fout/img002.png" "$T/fout/img003.png")
fifo_case "a batch, one output a FIFO" "$T/fout/img001.png" -w 5 "$T/fin" -o "$T/fout"
FIFO_AFTER=()
[ "$(ls "$T/fout")" = "$(printf 'img000.png\nimg001.png\nimg002.png\nimg003.png')" ] \
  || fail "a batch, one output a FIFO: outputs: $(ls -A "$T/fout")"
for k in 0 2 3; do
  "$PY" -c "import sys; b = open(sys.argv[1], 'rb').read(); sys.exit(b[:4] != b'\x89PNG' or b[-8:-4] != b'IEND')" \
    "$T/fout/img00$k.png" || fail "a batch, one output a FIFO: img00$k.png not whole"
done
ls -A "$T/fout" | grep -q '^\.' && fail "a batch, one output a FIFO: temporaries left: $(ls -A "$T/fout")"
# Its summary counts the FIFO as interrupted and bad.png as failed, neither as done (it said
# "4 of 4 files done", then "4 of 5 files done, 1 interrupted").
grep -q "interrupted: 3 of 5 files done, 1 failed, 1 interrupted, 0 not started" "$T/err" \
  || fail "a batch, one output a FIFO: the summary counts a failed or interrupted file as done: $(cat "$T/err")"
# One image, to a PNG, and its statistics (opened first: nothing is computed after it).
fifo_case "one image to a FIFO" "$T/f.png" -w 5 "$T/fin/img000.png" -o "$T/f.png"
fifo_case "--stats into a FIFO" "$T/f.csv" -w 5 "$T/fin/img000.png" --stats "$T/f.csv"
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ] && command -v ffmpeg >/dev/null; then
  # A video's outputs: a video (y4m, else Matroska), its statistics, a frame of a frame
  # directory. (A .npy of frames is refused on a FIFO before it is opened: test_cli_video.)
  ffmpeg -nostdin -v error -f lavfi -i "testsrc=size=68x46:rate=25" -frames:v 5 -pix_fmt yuv420p \
    "$T/v.mkv" || fail "cannot make a video"
  vext=mkv; ff_has muxers yuv4mpegpipe && vext=y4m
  fifo_case "a video into a FIFO" "$T/f.$vext" -w 5 "$T/v.mkv" -o "$T/f.$vext"
  fifo_case "a video's --stats into a FIFO" "$T/fv.csv" -w 5 "$T/v.mkv" --stats "$T/fv.csv"
  # With --stats, opened before -o: it went with the FIFO given up (exit 130, no fs.csv). It
  # is kept, whole: the header, and no record (no frame was computed yet).
  out=f.$vext
  rm -f "$T/fs.csv"
  fifo_case "a video into a FIFO $out, with --stats" "$T/$out" -w 5 "$T/v.mkv" -o "$T/$out" \
    --stats "$T/fs.csv"
  [ "$(cat "$T/fs.csv" 2>/dev/null | wc -l)" = 1 ] && grep -q '^name,index,pts,' "$T/fs.csv" \
    || fail "a video into a FIFO $out, with --stats: not kept whole: $(ls -A "$T" | grep fs)"
  ls -A "$T" | grep -q '^\.fs\.csv' && fail "a video into a FIFO $out, with --stats: temporary left"
  # --stats the FIFO, -o a file: -o, opened after it, is not begun (nothing computed).
  rm -f "$T/fo.$vext"
  fifo_case "a video's --stats into a FIFO, with -o" "$T/fv.csv" -w 5 "$T/v.mkv" -o "$T/fo.$vext" \
    --stats "$T/fv.csv"
  ls -A "$T" | grep -q "fo\.$vext" && fail "a video's --stats into a FIFO, with -o: -o begun: $(ls -A "$T")"
  rm -rf "$T/fdir"; mkdir "$T/fdir"
  fifo_case "a frame file a FIFO" "$T/fdir/frame_000002.png" -w 5 "$T/v.mkv" -o "$T/fdir"
  [ "$(ls "$T/fdir" | tr '\n' ' ')" = "frame_000000.png frame_000001.png frame_000002.png " ] \
    || fail "a frame file a FIFO: frames: $(ls -A "$T/fdir")"
  # Its summary says interrupted, not that -o failed (it said "; failed: -o ... at frame 2").
  grep -q ', interrupted$' "$T/err" && ! grep -q 'failed' "$T/err" \
    || fail "a frame file a FIFO: the summary: $(cat "$T/err")"
fi

if [ $FAIL -ne 0 ]; then
  echo "test_cli_signal: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_signal: all checks passed"
