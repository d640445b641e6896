#!/bin/bash
# The plain-launch fallback of the entropy kernels: with ES_PDL=refuse the GPU worker asks
# for programmatic launches with an attribute the runtime refuses, so every launch_strips
# call must fall back to a plain launch (and say so once on the trace) and test_gpu_engine,
# in its small mode, must still match the CPU bit for bit. Skips (77) without a GPU.
set -u
bin="${ES_BUILD:?}/tests/test_gpu_engine"
[ -x "$bin" ] || { echo "no $bin"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ES_PDL=refuse ES_TEST_SMALL=1 ES_TRACE=1 "$bin" >"$log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "skipped: $(tail -1 "$log")"; exit 77; }
tail -3 "$log"
if [ $rc -ne 0 ]; then
  echo "FAIL: test_gpu_engine exited $rc with programmatic launches refused"
  exit 1
fi
if ! grep -q "programmatic launches refused; plain launches" "$log"; then
  echo "FAIL: no fallback on the trace (the refused attribute was accepted?)"
  exit 1
fi
echo "fallback taken on $(grep -c 'programmatic launches refused' "$log") worker(s); results identical"
