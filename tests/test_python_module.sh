#!/bin/bash
# The Python module (python/, issue 33): installs it with pip into a virtual environment of
# Debian's python3 (under the build directory, linked to this build's shared library) and
# runs its pytest suite, python/tests. In a sanitizer build the extension is built with
# AddressSanitizer + UBSan too and python runs with their runtimes preloaded (leak checks
# off: the interpreter's own allocations at exit are not ours). Skips (77) with the reason
# where it cannot: no shared library, python3 without numpy, pytest, setuptools or venv, or
# a sanitizer build whose compiler has no libasan.so.
set -euo pipefail
src=${ES_SRC:?}
build=${ES_BUILD:?}
skip() { echo "SKIP: $*"; exit 77; }
[ "${ES_BUILD_SHARED:-1}" = 1 ] || skip "no shared libentropy-stream in this build (ES_BUILD_SHARED is OFF)"
py=/usr/bin/python3
[ -x "$py" ] || py=${ES_PYTHON3:-python3}
for mod in numpy pytest setuptools venv; do
  "$py" -c "import $mod" 2>/dev/null || skip "$py cannot import $mod (tools/install-deps.sh installs it)"
done
venv=$build/python-venv
work=$build/python-src
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv"
fi
# Built from a copy, so that pip's build files stay out of the checkout.
rm -rf "$work"
cp -r "$src/python" "$work"
rm -rf "$work/build" "$work"/*.egg-info
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  cc=${CC:-cc}
  asan=$("$cc" -print-file-name=libasan.so)
  ubsan=$("$cc" -print-file-name=libubsan.so)
  [ -e "$asan" ] && [ -e "$ubsan" ] || skip "sanitizer build: $cc has no libasan.so/libubsan.so to preload into python"
  export CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
  export LDFLAGS="-fsanitize=address,undefined"
fi
ES_SOURCE_DIR=$src ES_BUILD_DIR=$build "$venv/bin/pip" install -q --no-build-isolation \
  --no-index --no-deps --force-reinstall "$work"
cd "$build"
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  unset CFLAGS LDFLAGS
  export LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$src/python/tests"
