#!/bin/bash
# Builds and runs the whole test suite twice: a normal Release build (with CUDA where nvcc
# is present; GPU tests skip without a GPU), then under AddressSanitizer + UBSan.
# Quick by default: the long parameter sweeps run a sample of their combinations (each test
# prints its seed; ES_TEST_SEED replays one). ES_TEST_FULL=1 runs every combination (CI does).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
t0=$SECONDS
took=()
phase() { # NAME COMMAND...: runs it and notes how long it took
  local name=$1 t=$SECONDS
  shift
  echo "== $name =="
  "$@"
  took+=("$name $((SECONDS - t)) s")
}
phase "build (Release)" bash tools/build.sh build
phase "tests (Release)" ctest --test-dir build --output-on-failure -j"$jobs"
phase "build (AddressSanitizer + UBSan, CPU)" \
  bash tools/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DES_SANITIZE=ON -DES_WITH_CUDA=OFF
phase "tests (AddressSanitizer + UBSan)" ctest --test-dir build-asan --output-on-failure -j"$jobs"
suite=quick
[ "${ES_TEST_FULL:-0}" = 0 ] || suite=full
echo "== the $suite suite passed in $((SECONDS - t0)) s on $jobs cores =="
printf '   %s\n' "${took[@]}"
