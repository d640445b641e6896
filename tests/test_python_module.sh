#!/bin/bash
# The Python module (python/, issue 33): installs it with pip into a virtual environment of
# Debian's python3 (under the build directory, linked to this build's shared library) and
# runs its pytest suite, python/tests. Skips (77) with the reason where it cannot: a
# sanitizer build (its library cannot load into an uninstrumented python), no shared
# library, or python3 without numpy, pytest, setuptools or venv.
set -euo pipefail
src=${ES_SRC:?}
build=${ES_BUILD:?}
skip() { echo "SKIP: $*"; exit 77; }
[ "${ES_SANITIZE:-0}" = 1 ] && skip "sanitizer build: libentropy-stream needs libasan preloaded into python"
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
ES_SOURCE_DIR=$src ES_BUILD_DIR=$build "$venv/bin/pip" install -q --no-build-isolation \
  --no-index --no-deps --force-reinstall "$work"
cd "$build"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$src/python/tests"
