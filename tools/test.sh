#!/bin/bash
# Builds and runs the whole test suite twice: a normal Release build (with CUDA where nvcc
# is present; GPU tests skip without a GPU), then under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
echo "== build (Release) =="
bash tools/build.sh build
echo "== tests (Release) =="
ctest --test-dir build --output-on-failure -j"$jobs"
echo "== build (AddressSanitizer + UBSan, CPU) =="
bash tools/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DES_SANITIZE=ON -DES_WITH_CUDA=OFF
echo "== tests (AddressSanitizer + UBSan) =="
ctest --test-dir build-asan --output-on-failure -j"$jobs"
