#!/bin/bash
# test_cli_omp.sh - the program's OpenMP threads sleep when a parallel region ends
# (OMP_WAIT_POLICY=passive, set before libgomp's constructor reads it: BENCHMARKS U4), and a
# policy the user set is kept. libgomp shows what it read under OMP_DISPLAY_ENV; a build
# without OpenMP (nothing shown) skips.
set -u
BIN=${ES_BIN:?ES_BIN not set}
shown=$(OMP_DISPLAY_ENV=true "$BIN" --version 2>&1 | grep "OMP_WAIT_POLICY")
if [ -z "$shown" ]; then
  echo "SKIP: no OpenMP runtime that shows its environment"
  exit 77
fi
FAIL=0
echo "$shown" | grep -q "'PASSIVE'" || { echo "FAIL: default policy: $shown"; FAIL=1; }
kept=$(OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=true "$BIN" --version 2>&1 | grep "OMP_WAIT_POLICY")
echo "$kept" | grep -q "'ACTIVE'" || { echo "FAIL: the user's policy not kept: $kept"; FAIL=1; }
[ $FAIL = 0 ] && echo "test_cli_omp: ok"
exit $FAIL
