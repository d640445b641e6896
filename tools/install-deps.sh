#!/bin/bash
# Installs what entropy-stream needs to build, run and test on Debian/Ubuntu (root or sudo).
# CUDA is optional: where nvcc is present (e.g. /usr/local/cuda) the GPU engine is built too.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
pkgs=(build-essential cmake ninja-build pkg-config git
      libpng-dev libtiff-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev ffmpeg
      libjpeg62-turbo-dev # io/jpeg.c (JPEG stills)
      libjpeg-turbo-progs python3-pil # tests/test_stills.py: djpeg's grey, PIL's encoders
      python3 python3-numpy python3-skimage python3-matplotlib
      man-db groff-base # man -l docs/entropy-stream.1; tests/test_docs.sh renders it
      valgrind # tests/test_valgrind.sh
      universal-ctags # tools/long-functions.py (functions over 150 lines)
      strace # tests/test_cli_tiff_once.sh: a TIFF input opened once
      libopenslide-dev openslide-tools python3-pil zstd # whole-slide images; tests/test_bands_*
      libtiff-tools gdal-bin python3-tifffile # tests/test_tiff_cli.py: tiffinfo, tiffcp, gdalinfo
      python3-dev python3-venv python3-pip python3-setuptools python3-wheel python3-pytest
      python3-dask python3-distributed # python/ and its tests
      slurm-wlm munge) # tests/test_slurm.sh: a one-node Slurm of its own (docs/cluster.md)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: everything is installed"
fi
