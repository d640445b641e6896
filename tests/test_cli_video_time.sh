#!/bin/bash
# test_cli_video_time.sh - the heat video's time stamps against the input's (skipped without
# FFmpeg; each case skips where this FFmpeg lacks the encoder, muxer or filter it needs):
# - time stamps that go back (two MPEG-TS files one after the other, as `cat a.ts b.ts`):
#   the heat video goes on one frame after the last instead of packing the rest into
#   one-tick steps; --stats keeps the input's time stamps, as ffprobe gives them.
set -u
BIN=${ES_BIN:?ES_BIN not set}
PY=${ES_PYTHON3:-/usr/bin/python3}
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ] || ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
  echo "test_cli_video_time: skipped (no FFmpeg)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
FF="ffmpeg -nostdin -v error -y"
# shellcheck source=es_test_ffmpeg.sh
source "$(dirname "$0")/es_test_ffmpeg.sh"
# frame time stamps in seconds, one a line (ffprobe's best effort: AVI stores none)
times() {
  ffprobe -v error -select_streams v:0 -show_entries frame=best_effort_timestamp_time -of csv=p=0 "$1" |
    tr -d ',' | grep .
}
# the encoder every case can use: mpeg4 (in minimal builds too), else libx264
ENC=
for e in mpeg4 libx264; do ff_has encoders $e && { ENC=$e; break; }; done
[ -n "$ENC" ] || { echo "test_cli_video_time: skipped (neither mpeg4 nor libx264 encoder)"; exit 77; }
ran=0

# 1. Time stamps that go back. Each half is 12 frames at 25 fps from 1.4 s (the MPEG-TS
# muxer's start); the packet at the junction is flagged corrupt by the demuxer (continuity
# counter) and skipped. The heat video must be strictly increasing with no step shorter
# than half a frame (the second half was packed into 1/90000 s steps after the first's last).
if ff_has muxers mpegts && ff_has demuxers mpegts && ff_has muxers matroska; then
  ran=$((ran + 1))
  $FF -f lavfi -i "testsrc=size=48x32:rate=25" -frames:v 12 -c:v $ENC -bf 0 "$T/a.ts" ||
    fail "cannot make a.ts"
  cat "$T/a.ts" "$T/a.ts" > "$T/aa.ts"
  "$BIN" -q "$T/aa.ts" -o "$T/aa.mkv" --stats "$T/aa.csv"; rc=$?
  [ $rc = 0 ] || fail "aa.ts -> mkv: exit $rc"
  times "$T/aa.mkv" > "$T/aa.heat"
  ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 "$T/aa.ts" |
    tr -d ',' | grep . > "$T/aa.in"
  "$PY" - "$T/aa.heat" "$T/aa.csv" "$T/aa.in" <<'EOF' || fail "time stamps that go back: see above"
import csv, sys
heat = [float(x) for x in open(sys.argv[1])]
rows = list(csv.DictReader(open(sys.argv[2])))
inp = [float(x) for x in open(sys.argv[3])]
ok = True
if len(heat) != len(rows) or len(rows) < 20:
    print('heat video has %d frames, --stats %d records' % (len(heat), len(rows))); ok = False
steps = [b - a for a, b in zip(heat, heat[1:])]
if steps and min(steps) < 0.02:
    i = steps.index(min(steps))
    print('heat video: frame %d at %.6f s after frame %d at %.6f s (want one frame, 0.04 s, later)'
          % (i + 1, heat[i + 1], i, heat[i])); ok = False
# --stats keeps the input's own time stamps: every record's pts is one of ffprobe's, in order
pts = [float(r['pts']) for r in rows]
if pts[12:] and min(pts[12:]) > 1.45:
    print('--stats: the second half does not start again at 1.4 s: %s' % pts[10:14]); ok = False
if any(min(abs(p - q) for q in inp) > 1e-6 for p in pts):
    print('--stats pts not among the input time stamps'); ok = False
print('time stamps that go back: heat %s ... %s' % (heat[:2], heat[-2:]))
sys.exit(0 if ok else 1)
EOF
else
  echo "test_cli_video_time: time stamps that go back skipped: no mpegts or matroska in this FFmpeg"
fi

[ $ran -gt 0 ] || { echo "test_cli_video_time: skipped (nothing this FFmpeg can make)"; exit 77; }
if [ $FAIL -ne 0 ]; then
  echo "test_cli_video_time: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_video_time: all checks passed"
