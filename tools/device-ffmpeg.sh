#!/bin/bash
# Builds the GPU machine's small static FFmpeg tarball with the shared recipe
# (../shared/device/build-ffmpeg-min.sh, read-only), fixing its one bug: it enables the
# demuxer and muxer "y4m", but FFmpeg names both "yuv4mpegpipe", so its tarball has no y4m I/O.
#   bash tools/device-ffmpeg.sh [OUT.tar.xz]   (default: .device-deps/ffmpeg-min-x86_64.tar.xz)
# FFMPEG_MIN_SCRIPT overrides where the shared recipe is. Runs on the CPU machine (as root:
# it apt-get installs build deps and fetches Debian's ffmpeg source).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${FFMPEG_MIN_SCRIPT:-$top/../shared/device/build-ffmpeg-min.sh}
out=$(realpath -m "${1:-$top/.device-deps/ffmpeg-min-x86_64.tar.xz}")
fixed=$(mktemp --suffix=.sh); trap 'rm -f "$fixed"' EXIT
sed -E '/^ *--enable-(de)?muxer=/ s/,y4m([ ,])/,yuv4mpegpipe\1/' "$src" > "$fixed"
for kind in demuxer muxer; do
  grep -Eq "^ *--enable-$kind=([^ ]*,)?yuv4mpegpipe[ ,]" "$fixed" ||
    { echo "device-ffmpeg.sh: could not fix y4m in --enable-$kind of $src" >&2; exit 1; }
done
! grep -Eq -- '--enable-(de)?muxer=[^ ]*y4m' "$fixed" ||
  { echo "device-ffmpeg.sh: y4m still left in $fixed" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
bash "$fixed" "$out"
