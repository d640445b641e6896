#!/bin/bash
# test_cli_cuda_start.sh - CUDA is not started where the run cannot use it (issue 31): CUDA's
# first call runs cuInit (0.2-1.1 s on the GPU hosts). Under ES_TRACE the library traces
# "context: GPUs asked for" when a run first has work a GPU could take and "CUDA: first call"
# at the first CUDA call; neither may appear for --device cpu (any size) or under auto where
# every frame is below --cpu-below. Before, auto opened the GPUs at context creation, so a
# stream of small frames started CUDA too (the trace said "opening GPUs in the background").
# And frames a GPU could take do ask for them (in a build with CUDA), from the input's header. Where a driver is
# installed, a --device cpu run never maps libcuda (checked while it waits for input).
set -u
BIN=${ES_BIN:?ES_BIN not set}
T=$(mktemp -d)
trap 'exec 7>&- 2>/dev/null; rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=1; }
# 64 frames of 32x32 gray8 (1024 pixels, far below the default --cpu-below of 163840): long
# enough that a GPU thread started at creation would have traced its opening.
head -c $((64 * 32 * 32)) /dev/zero >"$T/small.raw"
head -c $((2 * 640 * 480)) /dev/zero >"$T/big.raw"
no_cuda() { # WHAT TRACEFILE: neither the request nor CUDA's first call nor an opening
  if grep -E "GPUs asked for|CUDA: first call|opening GPUs|opening worker" "$2"; then
    fail "$1: CUDA started"
  fi
}
ES_TRACE=1 "$BIN" --no-progress --device auto --raw gray8:32x32 - -o "$T/small-auto.npy" \
  <"$T/small.raw" 2>"$T/small-auto.err" || fail "small frames, auto: exit $?"
# The summary names what computed: the CPU, with no GPUs "still opening" (none were asked for).
grep -q "^entropy-stream: 64 frames, 32x32, .*, CPU$" "$T/small-auto.err" ||
  fail "small frames, auto: summary: $(grep -v es-trace "$T/small-auto.err")"
grep -q "stream: pool of" "$T/small-auto.err" || fail "small frames, auto: no trace at all: $(cat "$T/small-auto.err")"
no_cuda "64 small frames under auto" "$T/small-auto.err"
[ -s "$T/small-auto.npy" ] || fail "small frames, auto: no output"
ES_TRACE=1 "$BIN" -q --device cpu --raw gray8:640x480 - -o "$T/big-cpu.npy" \
  <"$T/big.raw" 2>"$T/big-cpu.err" || fail "--device cpu: exit $?"
no_cuda "--device cpu" "$T/big-cpu.err"
cmp -s "$T/small-auto.npy" "$T/big-cpu.npy" && fail "outputs not distinct (test broken)"
# Large frames under auto: the GPUs are asked for (a build with CUDA; the stub has none).
ES_TRACE=1 "$BIN" -q --device auto --raw gray8:640x480 - -o "$T/big-auto.npy" \
  <"$T/big.raw" 2>"$T/big-auto.err" || fail "large frames, auto: exit $?"
# Asked for as soon as the input's header gives the frame size (es_context_expect), before
# the context is handed to the stream: not only at the first frame pushed, after the first
# read and the outputs' opening (an encoder's open takes tens of ms).
if [ "${ES_HAVE_CUDA:-0}" = 1 ]; then
  ask=$(grep -n "context: GPUs asked for" "$T/big-auto.err" | cut -d: -f1 | head -1)
  ready=$(grep -n "video: context ready" "$T/big-auto.err" | cut -d: -f1 | head -1)
  if [ -z "$ask" ] || [ -z "$ready" ] || [ "$ask" -gt "$ready" ]; then
    fail "large frames under auto: GPUs not asked for before the stream: $(cat "$T/big-auto.err")"
  fi
fi
cmp -s "$T/big-cpu.npy" "$T/big-auto.npy" || fail "large frames: auto and cpu outputs differ"
# A --device cpu run waiting for its second frame: libcuda is not in its address space.
mkfifo "$T/in"
"$BIN" -q --device cpu --raw gray8:640x480 - -o "$T/wait.npy" <"$T/in" 2>"$T/wait.err" &
pid=$!
exec 7>"$T/in"
head -c $((640 * 480)) /dev/zero >&7
sleep 0.5
if grep -E "libcuda\.so|libnvidia" /proc/$pid/maps; then fail "--device cpu mapped the driver"; fi
grep -q "libcudart" /proc/$pid/maps || echo "note: the runtime is not linked dynamically here"
exec 7>&-
wait $pid || fail "--device cpu from a FIFO: exit $?"
[ $FAIL = 0 ] && echo "test_cli_cuda_start: ok"
exit $FAIL
