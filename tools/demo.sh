#!/bin/bash
# Builds entropy-stream and runs the main job on the sample media: a heat-map video of the
# sample clip and heat-map PNGs of the sample images, in out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh build >/dev/null
bin=build/tools/entropy-stream
mkdir -p out
clip=$(ls samples/*.mp4 samples/*.mkv 2>/dev/null | head -n 1 || true)
if [ -n "$clip" ]; then
  "$bin" "$clip" -o out/heat.mp4 -y --stats out/clip-stats.csv
fi
"$bin" samples/ -o out/heat/ -y --stats out/image-stats.csv
# The Python module (python/): installed into build/python-venv, then its example run.
if /usr/bin/python3 -c "import numpy, setuptools, skimage, venv" 2>/dev/null &&
   [ -e build/pipeline/libentropy-stream.so ]; then
  [ -x build/python-venv/bin/python ] ||
    /usr/bin/python3 -m venv --system-site-packages build/python-venv
  build/python-venv/bin/pip install -q --no-build-isolation --no-index --no-deps \
    --force-reinstall ./python
  build/python-venv/bin/python samples/python_example.py
else
  echo "demo: Python module skipped (needs /usr/bin/python3 with numpy, setuptools, skimage, venv: tools/install-deps.sh; and the shared library)"
fi
echo
echo "demo: wrote"
ls -l out/heat.mp4 2>/dev/null || true
ls -l out/heat/
echo "open out/heat.mp4 and out/heat/*.png"
