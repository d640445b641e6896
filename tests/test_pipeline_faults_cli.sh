#!/bin/bash
# test_pipeline_faults_cli.sh - the fallback path end to end: raw frames on stdin through the
# CLI's stream, with and without injected faults (ES_FAULT_INJECT, see
# pipeline/es_pipeline_internal.h) on some frames. The outputs (.npy maps, stats) must be
# byte-identical, exit 0 both times, and the faulted run must say so on stderr.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ]; then # --raw on stdin is read through libavformat
  echo "skip: built without FFmpeg"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
W=$((RANDOM % 90 + 17)); H=$((RANDOM % 60 + 9)); N=$((RANDOM % 12 + 9))
echo "frames: $N of ${W}x${H}"
head -c $((W * H * N)) /dev/urandom > "$T/in.raw"
fail=0
run() { # name, extra env
  env -u ES_FAULT_INJECT "$@" "$BIN" --raw "gray8:${W}x${H}" --threads 2 --queue 3 --no-progress \
    --stats "$T/$NAME.csv" - -o "$T/$NAME.npy" < "$T/in.raw" 2> "$T/$NAME.err"
}
NAME=clean; run; rc=$?
[ $rc -eq 0 ] || { echo "clean run: exit $rc"; cat "$T/clean.err"; fail=1; }
NAME=faults; run ES_FAULT_INJECT="frames=0,3,$((N - 1))"; rc=$?
[ $rc -eq 0 ] || { echo "faulted run: exit $rc"; cat "$T/faults.err"; fail=1; }
cmp "$T/clean.npy" "$T/faults.npy" || { echo "maps differ"; fail=1; }
cmp "$T/clean.csv" "$T/faults.csv" || { echo "stats differ"; fail=1; }
n=$(grep -c "warning: .* failed (injected fault)" "$T/faults.err")
[ "$n" = 3 ] || { echo "expected 3 retry warnings, got $n:"; cat "$T/faults.err"; fail=1; }
! grep -q warning "$T/clean.err" || { echo "clean run warned:"; cat "$T/clean.err"; fail=1; }
# The count of retried jobs that ES_TRACE prints when the context is freed (test_gpu_cli.sh
# asserts 0 for its GPU runs, whose -q hides the warnings): one per faulted frame, 0 clean.
for want in 0 3; do
  NAME=traced$want
  if [ $want = 0 ]; then run ES_TRACE=1; else run ES_TRACE=1 ES_FAULT_INJECT="frames=0,3,$((N - 1))"; fi
  got=$(sed -n 's/.*context: done, \([0-9]*\) job(s) retried$/\1/p' "$T/$NAME.err")
  [ "$got" = $want ] || { echo "traced run: retry count '$got', want $want"; fail=1; }
done
# The .npy holds N frames.
"$PY" - "$T/clean.npy" "$N" "$H" "$W" <<'PYEOF' || fail=1
import sys, numpy as np
a = np.load(sys.argv[1])
want = tuple(int(x) for x in sys.argv[2:5])
assert a.shape == want and a.dtype == np.float32, (a.shape, a.dtype, want)
assert np.isfinite(a).all() and a.min() >= 0 and a.max() <= 4.0
PYEOF
# On a terminal (script(1) gives the run a pty) the warnings come while a progress line is
# shown: each must begin a line of its own. The library wrote them straight to stderr,
# drawn on after the progress ("... 7/20 frames, 95.2 fps, ETA 0:00entropy-stream:
# warning: ..."); they go through the program's messages now, which clear the line first.
# (--stats - on the tty redraws progress after every frame; faults on 40 frames of 60.)
if command -v script >/dev/null; then
  head -c $((W * H * 60)) /dev/urandom > "$T/in60.raw"
  list=$(seq -s, 10 49)
  out=$(ES_FAULT_INJECT="frames=$list" script -qec "'$BIN' --raw gray8:${W}x$H --threads 2 \
    --stats - - < '$T/in60.raw'" /dev/null 2>&1); rc=$?
  [ $rc = 0 ] || { echo "faults on a tty: exit $rc"; fail=1; }
  n=$(printf '%s' "$out" | sed 's/\x1b\[K/\n/g' | tr '\r' '\n' | grep -ac "^entropy-stream: warning: .* failed (injected fault)")
  [ "$n" = 40 ] || { echo "faults on a tty: $n warnings begin a line, want 40:"; printf '%s' "$out" | cat -v | grep -a warning | head -5; fail=1; }
  ! printf '%s' "$out" | grep -aq "[^K]entropy-stream: warning" ||
    { echo "faults on a tty: a warning drawn on after other text:"; printf '%s' "$out" | cat -v | grep -a "[^K]entropy-stream: warning" | head -3; fail=1; }
fi
exit $fail
