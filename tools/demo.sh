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
echo
echo "demo: wrote"
ls -l out/heat.mp4 2>/dev/null || true
ls -l out/heat/
echo "open out/heat.mp4 and out/heat/*.png"
