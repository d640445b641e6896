#!/bin/bash
# gpu-check.sh OUTDIR - the one script for the GPU machine: configure (sm_90) and build in
# build-check/, then the GPU benchmark table (test_gpu_bench with ES_GPU_BENCH),
# compute-sanitizer memcheck and racecheck on the GPU engine test in its small mode, every
# ctest (GPU ones included) and tools/entropy-bench (the order keeps the GPU engine's own
# results first, should the device call run out of time), then write logs and results.json into OUTDIR (flat,
# at most 8 files) and print a summary table last.
# FFmpeg: works with or without `source .device-deps/device-env.sh` (sourced here if present).
# Env: ES_CHECK_BUILD (build dir, default build-check), ES_CHECK_JOBS (default 16),
#      ES_CHECK_SKIP (space-separated stages to skip: ctest sanitizer bench entropy-bench
#      gate skimage stream), ES_CHECK_FRAMES / ES_CHECK_REPS (streaming benchmark, 600 / 3),
#      ES_CHECK_STREAM_ARGS (more bench-stream.py options, e.g. --no-extras).
# Four GPUs (the scaling issue), in one call:
#   ES_CHECK_SKIP="sanitizer skimage bench ctest" ES_CHECK_STREAM_ARGS=--no-extras \
#     bash tools/gpu-check.sh $OUT     # entropy-bench x1/x2/x4, streaming on 0 / 0,1 / 0,1,2,3
# Files back: results.json, gpu-bench.json, bench.json, bench-gate.json, skimage.json,
# stream.json and logs.tar.gz (every log).
set -u
out=${1:?usage: gpu-check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
bdir=${ES_CHECK_BUILD:-build-check}
jobs=${ES_CHECK_JOBS:-16}
skip=" ${ES_CHECK_SKIP:-} "
if [ -f .device-deps/device-env.sh ] && ! command -v ffmpeg >/dev/null 2>&1; then
  # shellcheck disable=SC1091
  source .device-deps/device-env.sh
fi

declare -A res
# the stages, in the order results.json and the summary list them
stages=(build ctest memcheck racecheck bench entropy_bench gate skimage stream)
t_start=$(date +%s)
stage() { echo "== $1 ($(date -u +%H:%M:%S))"; }

stage "configure + build"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DES_PTXAS_VERBOSE=ON 2>&1
} >"$out/build.log"
if cmake --build "$bdir" -j"$jobs" >>"$out/build.log" 2>&1; then
  res[build]=ok
else
  # A half-written file may break one target: build every other one (ninja -k 0), then
  # make sure the GPU engine's own programs exist. (FFmpeg's non-PIC static libraries, which
  # a shared library cannot link, no longer do: configure sees a static-only FFmpeg and sets
  # ES_BUILD_SHARED OFF; build.log's feature summary says so.)
  echo "full build failed; building the rest (-k 0)" >>"$out/build.log"
  cmake --build "$bdir" -j"$jobs" -- -k 0 >>"$out/build.log" 2>&1
  if cmake --build "$bdir" -j"$jobs" --target test_gpu_engine test_gpu_bench >>"$out/build.log" 2>&1; then
    res[build]=partial
  else
    res[build]=FAILED
  fi
  cmake --build "$bdir" -j"$jobs" --target entropy-bench >>"$out/build.log" 2>&1 || true
fi
grep -E "error|registers|spill" "$out/build.log" | grep -v "0 bytes spill" | head -5

res[memcheck]=skipped
res[racecheck]=skipped
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ $skip != *" sanitizer "* ]] && [ -x "$cs" ] && [ -x "$bdir/tests/test_gpu_engine" ]; then
  stage "compute-sanitizer"
  : >"$out/sanitizer.log"
  for tool in memcheck racecheck; do
    echo "=== $tool" >>"$out/sanitizer.log"
    from=$(($(wc -l <"$out/sanitizer.log") + 1))
    ES_TEST_SMALL=1 timeout 120 "$cs" --tool $tool --error-exitcode 9 \
      "$bdir/tests/test_gpu_engine" >>"$out/sanitizer.log" 2>&1
    rc=$?
    # this tool's own summary line (racecheck cut short must not show memcheck's)
    sum=$(tail -n +"$from" "$out/sanitizer.log" | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
    res[$tool]="rc $rc ${sum:-}"
  done
fi

res[bench]=skipped
if [[ $skip != *" bench "* ]] && [ -x "$bdir/tests/test_gpu_bench" ]; then
  stage "GPU benchmark"
  ES_GPU_BENCH="$out/gpu-bench.json" timeout 200 "$bdir/tests/test_gpu_bench" >"$out/gpu-bench.log" 2>&1
  res[bench]="rc $?"
fi

res[ctest]=skipped
if [[ $skip != *" ctest "* ]] && [ "${res[build]}" != FAILED ]; then
  stage "ctest"
  (cd "$bdir" && timeout 380 ctest --output-on-failure -j4 --timeout 330) >"$out/ctest.log" 2>&1
  res[ctest]=$(grep -E "tests passed|tests failed" "$out/ctest.log" | tail -1)
  [ -n "${res[ctest]}" ] || res[ctest]="no summary (timeout?)"
  grep -E "\*\*\*Failed|\*\*\*Timeout|Not Run|Skipped" "$out/ctest.log" | head -20
fi

res[entropy_bench]=skipped
if [[ $skip != *" entropy-bench "* ]] && [ -x "$bdir/tools/entropy-bench" ]; then
  stage "entropy-bench"
  timeout 120 "$bdir/tools/entropy-bench" --json "$out/bench.json" >"$out/entropy-bench.log" 2>&1
  res[entropy_bench]="rc $?"
fi

# The same sizes' kernel rows with every launch queued before the start event (ES_BENCH_GATE):
# what of the kernel time is the device's own, and what the host's launch calls.
res[gate]=skipped
if [[ $skip != *" gate "* ]] && [ -x "$bdir/tools/entropy-bench" ]; then
  stage "entropy-bench, launches queued first"
  ES_BENCH_GATE=1 timeout 120 "$bdir/tools/entropy-bench" --gpu-only --json "$out/bench-gate.json" \
    --case 400x400x5x16 --case 2560x2560x5x16 --case 10240x10240x5x16 --case 1920x1080x3x256 \
    --case 1920x1080x75x256 >"$out/entropy-bench-gate.log" 2>&1
  res[gate]="rc $?"
fi

# scikit-image on the same machine, same run (the CPU and window-sweep targets compare with it).
res[skimage]=skipped
if [[ $skip != *" skimage "* ]]; then
  py=""
  for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null && "$c" -c "import skimage" 2>/dev/null; then py=$c; break; fi
  done
  if [ -n "$py" ]; then
    stage "scikit-image"
    sk=()
    for c in 2560x2560x5x16 1920x1080x9x256 1920x1080x3x256 1920x1080x7x256 1920x1080x15x256 \
      1920x1080x25x256 1920x1080x51x256 1920x1080x75x256; do sk+=(--case "$c"); done
    timeout 200 "$py" tools/bench-skimage.py --reps 1 "${sk[@]}" >"$out/skimage.json" 2>"$out/skimage.log"
    res[skimage]="rc $?"
  fi
fi

# The streaming pipeline against plain ffmpeg (needs the ffmpeg program and libx264).
res[stream]=skipped
if [[ $skip != *" stream "* ]] && command -v ffmpeg >/dev/null && [ -x "$bdir/tools/entropy-stream" ]; then
  stage "streaming benchmark"
  ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
  # Explicit lists: "all" under auto starts on the CPU while CUDA opens the GPUs in the
  # background (2 s for four H200s), which would hide how the GPUs scale.
  gl=(all)
  [ "$ngpu" -ge 2 ] && gl=(0 0,1)
  [ "$ngpu" -ge 4 ] && gl=(0 0,1 0,1,2,3)
  timeout ${ES_CHECK_STREAM_TIMEOUT:-300} python3 tools/bench-stream.py --bin "$bdir/tools/entropy-stream" \
    --out "$out" --frames ${ES_CHECK_FRAMES:-600} --reps ${ES_CHECK_REPS:-3} --gpus "${gl[@]}" \
    --cpu-row ${ES_CHECK_STREAM_ARGS:-} >"$out/stream.log" 2>&1
  res[stream]="rc $?"
fi

t_end=$(date +%s)
{
  printf '{\n  "seconds": %d,\n' $((t_end - t_start))
  printf '  "device": "%s",\n' "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  first=1
  for k in "${stages[@]}"; do
    [ $first = 1 ] || printf ',\n'
    first=0
    printf '  "%s": "%s"' "$k" "$(echo "${res[$k]}" | tr -d '"\\')"
  done
  printf '\n}\n'
} >"$out/results.json"

echo
echo "== GPU benchmark (median; floor = device memory for kernel rows, PCIe for h2h rows)"
grep -E "ms .*Gpx/s|PCIe" "$out/gpu-bench.log" 2>/dev/null | cut -c1-150
echo
echo "== entropy-bench"
grep -E "^(size|window|case)" "$out/entropy-bench.log" 2>/dev/null | cut -c1-150
echo
echo "== entropy-bench kernel rows, launches queued first (ES_BENCH_GATE=1)"
grep -E "x1 kernel" "$out/entropy-bench-gate.log" 2>/dev/null | cut -c1-150
echo
echo "== streaming"
cat "$out/stream.log" 2>/dev/null | cut -c1-150
# At most 8 files come back from the device: keep the JSONs and pack the logs.
(cd "$out" && tar czf logs.tar.gz ./*.log 2>/dev/null && rm -f ./*.log)
echo
echo "== summary ($((t_end - t_start)) s)"
for k in "${stages[@]}"; do
  printf '%-14s %s\n' "$k" "${res[$k]}"
done
