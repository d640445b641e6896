#!/bin/bash
# test_cli_encoder_nomem.sh - out of memory in the encoder is exit 4 (SPEC 3, --help), not 3.
# Under `ulimit -v` a 1280x720 run to .mp4 on the CPU failed after a few frames with
# "encoding failed: Generic error in an external library", exit 3: libx264 prints its own
# "malloc of size N failed" and libavcodec returns AVERROR_EXTERNAL. Address-space limits from
# 400 to 1000 MB are tried (where the encoder fails depends on the machine's libraries): every
# run that fails must exit 4 and leave nothing under x.mp4 and no temporary; at least one
# must have failed in the encoder, else the case is skipped (exit 77) with the reason.
# Skipped under the sanitizers (their shadow memory needs terabytes of address space).
set -u
BIN=${ES_BIN:?ES_BIN not set}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ] || ! command -v ffmpeg >/dev/null; then
  echo "test_cli_encoder_nomem: skipped (no FFmpeg)"; exit 77
fi
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  echo "test_cli_encoder_nomem: skipped (sanitizers: no address-space limit)"; exit 77
fi
# shellcheck source=es_test_ffmpeg.sh
source "$(dirname "$0")/es_test_ffmpeg.sh"
if ! ff_has encoders libx264 || ! ff_has muxers mp4; then
  echo "test_cli_encoder_nomem: skipped (no libx264 encoder or mp4 muxer)"; exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=1280x720:rate=25" -frames:v 30 \
  -pix_fmt yuv420p "$T/v720.mp4" || { echo "cannot make v720.mp4"; exit 1; }
mkdir "$T/o"
enc=0
for lim in $(seq 400000 50000 1000000); do
  rm -rf "${T:?}/o"/* "$T"/o/.[!.]* 2>/dev/null
  (ulimit -v $lim; exec "$BIN" -q "$T/v720.mp4" -o "$T/o/x.mp4" --device cpu --threads 1) \
    2> "$T/err"; rc=$?
  msg=$(grep '^entropy-stream: ' "$T/err")
  echo "ulimit -v $lim: exit $rc $msg"
  [ $rc = 0 ] && continue
  [ $rc = 4 ] || fail "ulimit -v $lim: exit $rc, want 4 (out of memory): $msg"
  case $msg in *encod*) enc=$((enc + 1)) ;; esac
  [ -z "$(ls -A "$T/o")" ] || fail "ulimit -v $lim: left $(ls -A "$T/o")"
done
if [ $FAIL -ne 0 ]; then
  echo "test_cli_encoder_nomem: $FAIL failure(s)"
  exit 1
fi
if [ $enc = 0 ]; then
  echo "test_cli_encoder_nomem: skipped (no limit from 400 to 1000 MB made the encoder fail here)"
  exit 77
fi
echo "test_cli_encoder_nomem: all checks passed ($enc limits failed in the encoder, all exit 4)"
