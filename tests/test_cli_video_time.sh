#!/bin/bash
# test_cli_video_time.sh - the heat video's time stamps against the input's (skipped without
# FFmpeg; each case skips where this FFmpeg lacks the encoder, muxer or filter it needs):
# - time stamps that go back (two MPEG-TS files one after the other, as `cat a.ts b.ts`):
#   the heat video goes on one frame after the last instead of packing the rest into
#   one-tick steps; --stats keeps the input's time stamps, as ffprobe gives them;
# - variable frame rate MP4 with a 1/90000 time base (as phones write them) through
#   MPEG-4 part 2 (the default codec without libx264, which refuses 1/90000) and into AVI
#   (which counts frames): every frame keeps its time, as ffmpeg keeps it;
# - negative time stamps (Matroska from -1 s) into MP4 and MOV: every frame shown, from 0;
# - a clock that jumps forward ten hours in MPEG-TS: closed up to one frame (the MP4 muxer
#   failed on it); the same gap in Matroska is kept;
# - variable frame rate MP4 (setpts): each packet lasts until the next frame, the last as the
#   input's, and the heat video as long as the input.
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

# 2. Variable frame rate MP4 with a 1/90000 time base: frame N at N/10 + (7N mod 5) / 50 s.
# Average rate ~10/1 is not their grid (1/50 s is), so a one-frame time base of the
# average moved frames by up to half a frame (0.3 s came out 0.283, 0.8 s 0.85).
if ff_has muxers mp4 && ff_has demuxers mov && ff_has filters setpts && ff_has filters settb &&
  ff_has encoders mpeg4; then
  ran=$((ran + 1))
  vfr="settb=1/50,setpts='(N*5+mod(N*7,5))/50/TB'"
  for sync in "-fps_mode passthrough" "-vsync passthrough"; do # FFmpeg 5.1+, before
    # shellcheck disable=SC2086
    $FF -f lavfi -i "testsrc=size=48x32:rate=10" -frames:v 16 -vf "$vfr" $sync -enc_time_base 1/50 \
      -c:v mpeg4 -video_track_timescale 90000 "$T/vfr.mp4" 2>/dev/null && break
  done
  [ -s "$T/vfr.mp4" ] || fail "cannot make vfr.mp4"
  times "$T/vfr.mp4" > "$T/vfr.in"
  outs="mkv"
  ff_has muxers avi && ff_has demuxers avi && outs="$outs avi"
  for ext in $outs; do
    "$BIN" -q "$T/vfr.mp4" -o "$T/vfr-heat.$ext" --codec mpeg4; rc=$?
    [ $rc = 0 ] || fail "vfr.mp4 -> $ext: exit $rc"
    times "$T/vfr-heat.$ext" > "$T/vfr.$ext"
    "$PY" - "$T/vfr.in" "$T/vfr.$ext" "$ext" <<'EOF' || fail "VFR 1/90000 -> .$ext: see above"
import sys
a = [float(x) for x in open(sys.argv[1])]
b = [float(x) for x in open(sys.argv[2])]
bad = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if abs(x - y) > 0.0015]
if len(a) != len(b) or bad:
    print('.%s: %d frames, want %d; frames off their time (index, input s, heat s): %s'
          % (sys.argv[3], len(b), len(a), bad[:4]))
    sys.exit(1)
print('VFR 1/90000 -> .%s: %d frames at the input times' % (sys.argv[3], len(b)))
EOF
  done
else
  echo "test_cli_video_time: VFR MP4 skipped: no mp4 muxer, mov demuxer, setpts or settb filter or mpeg4 encoder"
fi

# 3. Negative time stamps (Matroska from -1 s): MP4 and MOV hide frames before 0 (an edit list
# for encoder delay), so the heat video showed only the last 25 of 50 frames. The heat
# video starts at 0, every frame in it, as ffmpeg's does.
if ff_has muxers matroska && ff_has muxers mp4 && ff_has demuxers mov && ff_has muxers mov; then
  ran=$((ran + 1))
  $FF -f lavfi -i "testsrc=size=48x32:rate=25" -frames:v 50 -c:v $ENC -bf 0 "$T/n0.mkv" &&
    $FF -i "$T/n0.mkv" -c copy -avoid_negative_ts disabled -output_ts_offset -1 "$T/neg.mkv" ||
    fail "cannot make neg.mkv"
  first=$(times "$T/neg.mkv" | head -1)
  [ "$first" = "-1.000000" ] || echo "test_cli_video_time: neg.mkv starts at $first s, not -1 (this FFmpeg)"
  for ext in mp4 mov; do
    "$BIN" -q "$T/neg.mkv" -o "$T/neg-heat.$ext" --stats "$T/neg.csv" -y; rc=$?
    [ $rc = 0 ] || fail "neg.mkv -> $ext: exit $rc"
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$T/neg-heat.$ext")
    [ "$n" = 50 ] || fail "negative time stamps -> .$ext: the heat video shows $n frames, want 50"
    got=$(times "$T/neg-heat.$ext" | sed -n '1p;2p;50p' | tr '\n' ' ')
    [ "$got" = "0.000000 0.040000 1.960000 " ] || fail "negative time stamps -> .$ext: frames 0, 1, 49 at $got"
  done
  got=$(sed -n 2p "$T/neg.csv" | cut -d, -f3)
  "$PY" -c "import sys; sys.exit(0 if abs(float('${got:-nan}') - float('$first')) < 1e-6 else 1)" ||
    fail "negative time stamps: --stats gives frame 0 at $got s, want $first (the input's)"
else
  echo "test_cli_video_time: negative time stamps skipped: no matroska, mp4 or mov muxer"
fi

# 4. A clock that jumps forward (an MPEG-TS capture restarted ten hours later, as `cat a.ts
# b.ts`): a jump of more than 10 s in a format whose clock may jump is a break, closed up to
# one frame, as ffmpeg closes it. Kept, it made the MP4 muxer fail (exit 3, the heat video
# lost: "Not yet implemented in FFmpeg"). --stats keeps the input's own time stamps. The same
# gap in Matroska (a clock that does not jump) is the video's own timing and stays.
if ff_has muxers mpegts && ff_has demuxers mpegts && ff_has muxers mp4 && ff_has demuxers mov &&
  ff_has muxers matroska; then
  ran=$((ran + 1))
  $FF -f lavfi -i "testsrc=size=48x32:rate=25" -frames:v 12 -c:v $ENC -bf 0 "$T/j1.ts" &&
    $FF -f lavfi -i "testsrc=size=48x32:rate=25" -frames:v 12 -c:v $ENC -bf 0 \
      -output_ts_offset 36000 "$T/j2.ts" || fail "cannot make j1.ts, j2.ts"
  cat "$T/j1.ts" "$T/j2.ts" > "$T/jump.ts"
  "$BIN" -q "$T/jump.ts" -o "$T/jump.mp4" --stats "$T/jump.csv"; rc=$?
  [ $rc = 0 ] || fail "a ten-hour jump in MPEG-TS -> mp4: exit $rc"
  times "$T/jump.mp4" > "$T/jump.heat"
  "$PY" - "$T/jump.heat" "$T/jump.csv" <<'EOF' || fail "a ten-hour jump in MPEG-TS: see above"
import csv, sys
heat = [float(x) for x in open(sys.argv[1])]
pts = [float(r['pts']) for r in csv.DictReader(open(sys.argv[2]))]
ok = True
if len(heat) != len(pts) or len(pts) < 20:
    print('heat video has %d frames, --stats %d records' % (len(heat), len(pts))); ok = False
steps = [b - a for a, b in zip(heat, heat[1:])]
# one frame a step; two where the junction's packet (flagged corrupt) was skipped
if steps and (min(steps) < 0.039 or max(steps) > 0.081):
    print('heat video steps %.6f..%.6f s, want 0.04 (one frame)' % (min(steps), max(steps))); ok = False
if not pts or max(pts) < 36000:
    print('--stats: the second half is not at its own time (36001.4 s on): %s' % pts[-2:]); ok = False
print('jump in MPEG-TS: heat %s ... %s, --stats ... %s' % (heat[:2], heat[-2:], pts[-1:]))
sys.exit(0 if ok else 1)
EOF
  $FF -copyts -i "$T/jump.ts" -c copy "$T/jump.mkv" || fail "cannot make jump.mkv"
  "$BIN" -q "$T/jump.mkv" -o "$T/jump-heat.mkv"; rc=$?
  [ $rc = 0 ] || fail "a ten-hour gap in Matroska -> mkv: exit $rc"
  last=$(times "$T/jump-heat.mkv" | tail -1)
  "$PY" -c "import sys; sys.exit(0 if float('${last:-0}') > 36000 else 1)" ||
    fail "a ten-hour gap in Matroska: the heat video ends at $last s, want the gap kept (> 36000)"
else
  echo "test_cli_video_time: a jumping clock skipped: no mpegts, mp4, mov or matroska in this FFmpeg"
fi

# 5. Variable frame rate MP4 (setpts, as the issue's): every packet of the heat video has its
# duration, the time to the next frame, and the last keeps the input's; the video lasts as
# long as the input (every packet had none, and a 7.067 s input gave 7.080 s). Compared with
# ffprobe, in presentation order: time stamps and durations, and the container's duration.
if ff_has muxers mp4 && ff_has demuxers mov && ff_has filters setpts && ff_has filters settb; then
  ran=$((ran + 1))
  encs=$(printf "%s\n" $ENC libx264 | sort -u)
  for ienc in $encs; do
  ff_has encoders $ienc || continue
  # (libx264's B-frames: the MP4 demuxer gives such packets no duration, and the last frame
  # ends where the file says it does)
  $FF -f lavfi -i "testsrc=size=64x48:rate=25" -frames:v 30 \
    -vf "settb=1/1000,setpts='(N*0.04+0.03*floor(N/4)+0.01*mod(N,3))/TB'" \
    -fps_mode passthrough -enc_time_base 1:1000 -c:v $ienc "$T/vfr.mp4" || fail "cannot make vfr.mp4"
  for enc in $encs; do
    ff_has encoders $enc || continue
    "$BIN" -q -y "$T/vfr.mp4" -o "$T/vfr-$enc.mp4" --codec $enc; rc=$?
    [ $rc = 0 ] || fail "vfr.mp4 ($ienc) -> mp4 ($enc): exit $rc"
    "$PY" - "$T/vfr.mp4" "$T/vfr-$enc.mp4" "$ienc -> $enc" <<'EOF' || fail "variable frame rate ($ienc -> $enc): see above"
import subprocess, sys
def probe(f):
    q = lambda *a: subprocess.run(['ffprobe', '-v', 'error', *a, f], capture_output=True,
                                  text=True, check=True).stdout.split()
    dur = float(q('-show_entries', 'format=duration', '-of', 'csv=p=0')[0])
    pk = sorted((float(a), b) for a, b in
                (l.split(',') for l in q('-select_streams', 'v:0', '-show_entries',
                                          'packet=pts_time,duration_time', '-of', 'csv=p=0')))
    bf = int(q('-select_streams', 'v:0', '-show_entries', 'stream=has_b_frames', '-of', 'csv=p=0')[0])
    return dur, pk, bf
din, pin, _ = probe(sys.argv[1])
dout, pout, bframes = probe(sys.argv[2])
ok = True
ts_in = [p for p, _ in pin]
ts_out = [p for p, _ in pout]
if len(ts_in) != len(ts_out) or any(abs(a - b) > 1e-3 for a, b in zip(ts_in, ts_out)):
    print('time stamps: input %s, heat %s' % (ts_in, ts_out)); ok = False
if len(set(round(b - a, 3) for a, b in zip(ts_in, ts_in[1:]))) < 3:
    print('the input is not of variable rate: %s' % ts_in); ok = False
# each duration the time to the next frame; the last as the input's stream ends
want = [b - a for a, b in zip(ts_in, ts_in[1:])] + [din - ts_in[-1]]
# (ffprobe reads none from an MP4 with B-frames at a variable rate, its stts holding decoding
# steps, ffmpeg's as ours: there the file's duration says where the last ends)
got = [d for _, d in pout]
bad = [(i, g, round(w, 6)) for i, (g, w) in enumerate(zip(got, want))
       if g == 'N/A' and not bframes or g != 'N/A' and abs(float(g) - w) > 1e-3]
if bad:
    print('packet durations (index, heat, want): %s' % bad); ok = False
if abs(dout - din) > 1e-3:
    print('duration: input %.6f s, heat %.6f s' % (din, dout)); ok = False
print('vfr mp4 (%s): %d frames, input %.6f s, heat %.6f s, durations %s' %
      (sys.argv[3], len(ts_out), din, dout, 'checked' if 'N/A' not in got else 'none read (B-frames)'))
sys.exit(0 if ok else 1)
EOF
  done
  done
else
  echo "test_cli_video_time: variable frame rate skipped: no mp4, mov, setpts or settb in this FFmpeg"
fi

[ $ran -gt 0 ] || { echo "test_cli_video_time: skipped (nothing this FFmpeg can make)"; exit 77; }
if [ $FAIL -ne 0 ]; then
  echo "test_cli_video_time: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_video_time: all checks passed"
