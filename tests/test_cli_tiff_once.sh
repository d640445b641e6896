#!/bin/bash
# test_cli_tiff_once.sh - a TIFF input's header is read once (entropy-stream.c probes it, the
# band run and a stack's run read that same open file): the input is opened once, counted by
# strace, for one page in bands (to --stats, .npy, .tif), --band-rows, and a stack of two
# pages; with the outputs of each as the runs make them. Where the file cannot be opened the
# message is the reader's, exit 2, as before.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SAM=$(dirname "$0")/../samples
if ! command -v strace >/dev/null || ! command -v ffmpeg >/dev/null ||
   ! command -v tiffcp >/dev/null || [ "${ES_HAVE_FFMPEG:-0}" != 1 ]; then
  echo "test_cli_tiff_once: skipped (needs strace, ffmpeg and tiffcp)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
ff() { ffmpeg -nostdin -v error -y "$@"; }
ff -i "$SAM/camera.png" -pix_fmt gray "$T/p0.tif" &&
  ff -i "$SAM/camera.png" -vf "lutyuv=y=val/2" -pix_fmt gray16le "$T/p1.tif" &&
  (cd "$T" && tiffcp p0.tif p0.tif stack.tif) || { echo "FAIL: inputs"; exit 1; }
if ! strace -f -o "$T/probe" true 2>/dev/null; then
  echo "test_cli_tiff_once: skipped (strace cannot trace here)"
  exit 77
fi

# LeakSanitizer cannot run under a tracer (ptrace): leaks are the other tests' to find.
if [ "${ES_SANITIZE:-0}" = 1 ]; then export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"; fi

# opens IN ARGS...: how many times the run opened IN ("exit N: ..." where it failed).
opens() {
  local in=$1; shift
  rm -f "$T/tr"
  strace -f -e trace=open,openat -o "$T/tr" "$BIN" -q -y "$in" "$@" > /dev/null 2> "$T/err" || {
    echo "exit $?: $(head -c 300 "$T/err")"; return; }
  grep -c "\"$in\"" "$T/tr"
}
for args in "--stats $T/s.csv" "-o $T/m.npy" "-o $T/m.tif" "--band-rows 37 -o $T/m.npy" \
  "-o $T/h.tif --format heat"; do
  for in in "$T/p0.tif" "$T/p1.tif"; do
    # shellcheck disable=SC2086
    n=$(opens "$in" $args)
    [ "$n" = 1 ] || fail "$in $args: opened $n times"
  done
done
n=$(opens "$T/stack.tif" -o "$T/st.npy")
[ "$n" = 1 ] || fail "stack: opened $n times"
n=$(opens "$T/stack.tif" --stats "$T/st.csv")
[ "$n" = 1 ] || fail "stack to --stats: opened $n times"
[ "$(grep -c '' "$T/st.csv")" = 3 ] || fail "stack: $(cat "$T/st.csv")"
# One that cannot be opened: said by the run, as before.
: > "$T/empty.tif"
msg=$("$BIN" -q "$T/empty.tif" --stats "$T/e.csv" 2>&1); rc=$?
[ $rc = 2 ] && [ "${msg#entropy-stream: $T/empty.tif: }" != "$msg" ] && [ ! -e "$T/e.csv" ] ||
  fail "an empty .tif: exit $rc, '$msg'"
[ $FAIL = 0 ] && echo "test_cli_tiff_once: OK" || echo "test_cli_tiff_once: $FAIL failure(s)"
[ $FAIL = 0 ]
