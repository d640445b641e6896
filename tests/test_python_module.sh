#!/bin/bash
# The Python module (python/, issue 33): installs it with pip into a virtual environment
# (under the build directory, linked to this build's shared library, or one built for it)
# and runs its pytest suite, python/tests. In a sanitizer build the extension is built with
# AddressSanitizer + UBSan too and python runs with their runtimes preloaded (leak checks
# off: the interpreter's own allocations at exit are not ours). Skips (77) with the reason
# where it cannot: no shared library, python3 without numpy, pytest, setuptools or venv, or
# a sanitizer build whose compiler has no libasan.so.
set -euo pipefail
src=${ES_SRC:?}
build=${ES_BUILD:?}
skip() { echo "SKIP: $*"; exit 77; }
# The python3: the first of ES_MODULE_PYTHON3, /usr/bin/python3, PATH's python3 and the
# tests' one that has what the module needs, preferring one that also has CuPy (the GPU
# machine's may live in a venv of its own).
py=""
cands=("${ES_MODULE_PYTHON3:-}" /usr/bin/python3 "$(command -v python3 || true)" "${ES_PYTHON3:-}")
for want in "numpy, pytest, setuptools, venv, cupy" "numpy, pytest, setuptools, venv"; do
  for c in "${cands[@]}"; do
    if [ -n "$c" ] && [ -x "$c" ] && "$c" -c "import $want" 2>/dev/null; then
      py=$c
      break 2
    fi
  done
done
[ -n "$py" ] || skip "no python3 (of ${cands[*]}) imports numpy, pytest, setuptools and venv (tools/install-deps.sh installs them)"
venv=$build/python-venv
work=$build/python-src
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv"
  # That python's own site-packages too, should it be a venv (whose packages, CuPy say,
  # --system-site-packages does not reach).
  "$py" -c "import site; print('\n'.join(site.getsitepackages()))" \
    >"$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/es_parent_site.pth"
fi
# The library: this build's shared one; where it has none (a static-only FFmpeg makes
# ES_BUILD_SHARED OFF, as on the GPU machine), a shared one of its own without FFmpeg (the
# module decodes nothing), configured as this build is for CUDA.
libbuild=$build
if [ "${ES_BUILD_SHARED:-1}" != 1 ]; then
  [ "${ES_SANITIZE:-0}" = 1 ] && skip "sanitizer build without a shared library"
  libbuild=$build/python-lib
  arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  cuda=$(sed -n 's/^ES_WITH_CUDA:BOOL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  echo "no shared library in $build: building one in $libbuild (FFmpeg off)"
  cmake -S "$src" -B "$libbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DES_WITH_FFMPEG=OFF \
    -DES_BUILD_SHARED=ON -DES_BUILD_TESTS=OFF ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} \
    ${cuda:+-DES_WITH_CUDA=$cuda} >"$build/python-lib.log" 2>&1 ||
    { tail -20 "$build/python-lib.log"; exit 1; }
  cmake --build "$libbuild" --target entropy-stream >>"$build/python-lib.log" 2>&1 ||
    { tail -20 "$build/python-lib.log"; exit 1; }
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
ES_SOURCE_DIR=$src ES_BUILD_DIR=$libbuild "$venv/bin/pip" install -q --no-build-isolation \
  --no-index --no-deps --force-reinstall "$work"
cd "$build"
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  unset CFLAGS LDFLAGS
  export LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$src/python/tests"
