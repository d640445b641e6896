#!/bin/bash
# test_pipeline_run_video.sh - samples/run_video.c converts samples/clip.mp4 through the
# library's run (es_run) into a heat .mp4 and a statistics CSV byte-identical to what the
# entropy-stream program writes for the same input; its errors follow the program's rules:
# a missing input is exit 2 with one line naming it, an output that exists is exit 3 and
# leaves no statistics file behind (opened first, removed with the failed run), a usage
# error is exit 1. Skipped without FFmpeg.
set -u
BIN=${ES_BIN:?ES_BIN not set}
S=${ES_BUILD:?ES_BUILD not set}/samples/sample-run_video
CLIP=${ES_SRC:?ES_SRC not set}/samples/clip.mp4
if [ "${ES_HAVE_FFMPEG:-0}" != 1 ]; then
  echo "test_pipeline_run_video: skipped (no FFmpeg)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

out=$("$S" "$CLIP" "$T/s.mp4" "$T/s.csv" 2>"$T/s.err") || { echo "sample failed: $?: $(cat "$T/s.err")"; exit 1; }
case $out in
  "75 frames, 320x240, "*) ;;
  *) echo "sample-run_video: unexpected summary: $out"; fail=1 ;;
esac
"$BIN" -q "$CLIP" -o "$T/c.mp4" --stats "$T/c.csv" || { echo "CLI failed: $?"; exit 1; }
cmp "$T/s.mp4" "$T/c.mp4" || { echo "the sample's video differs from the CLI's"; fail=1; }
cmp "$T/s.csv" "$T/c.csv" || { echo "the sample's statistics differ from the CLI's"; fail=1; }
[ "$(wc -l <"$T/s.csv")" = 76 ] || { echo "statistics: $(wc -l <"$T/s.csv") lines, want 76"; fail=1; }

"$S" "$T/none.mp4" "$T/n.mp4" "$T/n.csv" >/dev/null 2>"$T/n.err"; rc=$?
[ $rc = 2 ] || { echo "missing input: exit $rc, want 2"; fail=1; }
[ "$(wc -l <"$T/n.err")" = 1 ] && grep -q "^entropy-stream: $T/none.mp4: " "$T/n.err" ||
  { echo "missing input: want one line naming it: $(cat "$T/n.err")"; fail=1; }
[ -e "$T/n.mp4" ] || [ -e "$T/n.csv" ] && { echo "missing input: an output was left"; fail=1; }

"$S" "$CLIP" "$T/c.mp4" "$T/e.csv" >/dev/null 2>"$T/e.err"; rc=$?
[ $rc = 3 ] || { echo "existing output: exit $rc, want 3: $(cat "$T/e.err")"; fail=1; }
grep -q "^entropy-stream: $T/c.mp4: exists" "$T/e.err" || { echo "existing output: $(cat "$T/e.err")"; fail=1; }
[ -e "$T/e.csv" ] && { echo "existing output: the statistics file was left"; fail=1; }
ls -A "$T" | grep -q '^\.' && { echo "a temporary was left: $(ls -A "$T")"; fail=1; }

"$S" "$CLIP" >/dev/null 2>&1; rc=$?
[ $rc = 1 ] || { echo "usage: exit $rc, want 1"; fail=1; }
[ $fail = 0 ] && echo "test_pipeline_run_video: ok"
exit $fail
