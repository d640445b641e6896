#!/bin/bash
# test_tools_check_includes.sh - tools/check-includes.py can fail: a copy of the rooms' sources
# in a temporary directory passes as it is; with includes planted across each forbidden
# direction (and one into no room) it exits 1 with exactly one line per planted include, and
# the includes planted in allowed directions are not among them. (test_tools_includes runs it
# on the tree itself.)
set -u
S=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for r in core io kernels pipeline tools; do cp -r "$S/$r" "$T/$r"; done
fail=0
out=$("$PY" "$S/tools/check-includes.py" "$T" 2>&1); rc=$?
[ $rc = 0 ] || { echo "FAIL: the unchanged copy: exit $rc:"; echo "$out"; fail=1; }
: >"$T/want"
plant() { # FILE HEADER [ROOM -> ROOM]: appends the include; a forbidden one is expected back
  local file=$1 hdr=$2
  printf '#include "%s"\n' "$hdr" >>"$T/$file"
  [ $# -gt 2 ] && echo "$file:$(wc -l <"$T/$file"): $3 ($hdr)" >>"$T/want"
  return 0
}
plant io/npy.c es_pipeline_internal.h "io -> pipeline"
plant io/statsio.c es_kernels.h "io -> kernels"
plant kernels/cpu.c es_io.h "kernels -> io"
plant kernels/es_math.h entropy_stream.h "kernels -> pipeline"
plant core/es_types.h es_kernels.h "core -> kernels"
plant core/trace.c entropy_stream.h "core -> pipeline"
plant pipeline/stream.c cli.h "pipeline -> tools"
plant io/png.c no_such_header.h "io -> ?"
plant pipeline/device.c es_io.h   # allowed: pipeline -> io
plant io/atomic.c es_trace.h      # allowed: io -> core
plant tools/cli_paths.c es_gpu.h  # allowed: tools -> kernels
mkdir -p "$T/python" && : >"$T/python/module.c" # (a room still to come)
plant python/module.c cli.h "python -> tools"
plant python/module.c entropy_stream.h  # allowed: python -> pipeline
out=$("$PY" "$S/tools/check-includes.py" "$T" 2>&1); rc=$?
[ $rc = 1 ] || { echo "FAIL: with planted violations: exit $rc, want 1"; fail=1; }
if [ "$(printf '%s\n' "$out" | sort)" != "$(sort "$T/want")" ]; then
  echo "FAIL: the checker's lines differ from the planted violations:"
  diff <(sort "$T/want") <(printf '%s\n' "$out" | sort)
  fail=1
fi
[ $fail = 0 ] && echo "test_tools_check_includes: $(wc -l <"$T/want") planted violations reported, 4 allowed includes passed"
exit $fail
