#!/bin/bash
# test_cli_shard.sh - --shard I/N through the CLI, and tools/entropy-stream-merge: a directory
# and a video in 4 shares (run at once, into one output directory) give the maps, the stats
# and the frame count of one run, byte for byte once merged; more shares than work leaves
# shares empty (exit 0, said); a share missing or doubled is refused by the merge, naming
# the frames or files; bad values are usage errors.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SRC=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-python3}
MERGE=("$PY" "$SRC/tools/entropy-stream-merge")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
cd "$T" || exit 1

# expect CODE PATTERN CMD...: exit code CODE and a stderr line matching PATTERN.
expect() {
  local code=$1 pat=$2 rc
  shift 2
  "$@" > out.txt 2> err.txt
  rc=$?
  [ "$rc" = "$code" ] || fail "$*: exit $rc, not $code ($(head -c 300 err.txt))"
  grep -Eq -- "$pat" err.txt || fail "$*: no line matching '$pat' in: $(head -c 300 err.txt)"
}

# ---- Bad values.
mkdir imgs
for i in 1 2 3 4 5 6 7 8 9; do cp "$SRC/samples/camera.png" "imgs/c$i.png"; done
cp "$SRC/samples/chelsea.png" "$SRC/samples/moon16.png" "$SRC/samples/coffee_rgba.png" imgs/
for v in 4/4 -1/4 1/0 x 1/4/2 "" 0/100001; do
  expect 1 "^entropy-stream: --shard $v: must be I/N" "$BIN" imgs --shard "$v"
done
expect 1 "^entropy-stream: imgs/c1.png: --shard: only for a directory or a video file" \
  "$BIN" imgs/c1.png --shard 0/2
expect 1 "^entropy-stream: --shard slurm: not in a Slurm job array or srun step" \
  env -u SLURM_ARRAY_TASK_ID -u SLURM_STEP_ID "$BIN" imgs --shard slurm

# ---- A directory: 4 shares at once into one output directory, against one run.
"$BIN" imgs -o whole --stats whole.csv -q || fail "the whole batch run"
pids=()
for i in 0 1 2 3; do
  "$BIN" imgs -o part --stats "part$i.csv" --shard "$i/4" -q & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a share of the batch failed"; done
diff -r whole part > /dev/null || fail "the shares' maps differ from one run's"
[ "$(ls part | wc -l)" = 12 ] || fail "the shares wrote $(ls -A part | wc -l) files, not 12"
"${MERGE[@]}" stats merged.csv part3.csv part1.csv part0.csv part2.csv 2> /dev/null ||
  fail "merge of the batch's stats"
cmp -s merged.csv whole.csv || fail "the merged batch stats differ from one run's"
# Each file in exactly one share, whatever N: the records of N shares are the 12 files.
for n in 1 2 5 12 15; do
  rm -f s_*.csv
  for ((i = 0; i < n; i++)); do "$BIN" imgs --stats "s_$i.csv" --shard "$i/$n" -q 2> /dev/null ||
    fail "share $i/$n failed"; done
  "${MERGE[@]}" stats "m$n.csv" s_*.csv --count 12 2> /dev/null || fail "$n shares: merge"
  cmp -s "m$n.csv" whole.csv || fail "$n shares: the stats differ from one run's"
done
# More shares than files: an empty share says so (and only an empty one) and exits 0.
empty=0
for ((i = 0; i < 15; i++)); do
  "$BIN" imgs --stats e.csv -y --shard "$i/15" 2> err.txt || fail "share $i/15: exit $?"
  said=0
  grep -q "share $i/15: no files (12 files in 15 shares)" err.txt && said=1
  [ "$said" = "$(( $(wc -l < e.csv) == 1 ))" ] || fail "share $i/15: said '$(cat err.txt)'"
  empty=$((empty + said))
done
[ "$empty" -ge 3 ] || fail "$empty of 15 shares were empty (12 files)"
# -n: a share run again skips what it (or another share) wrote.
"$BIN" imgs -o part --shard 1/4 -n 2> err.txt || fail "-n again: exit $?"
grep -q ", 0 written, 3 skipped," err.txt || fail "-n again: $(cat err.txt)"
# The merge refuses a share missing or doubled, naming what: the indices of its records.
span() { awk -F, 'NR > 1 { if (a == "") a = $2; b = $2 } END { print a "\\.\\." b }' "$1"; }
expect 2 "merged2.csv: files missing: index $(span part1.csv) \(no share has them\)" \
  "${MERGE[@]}" stats merged2.csv part0.csv part2.csv part3.csv
expect 2 "merged2.csv: files doubled: index $(span part2.csv) \([0-9]+ in part2.csv and part2.csv\)" \
  "${MERGE[@]}" stats merged2.csv part0.csv part1.csv part2.csv part2.csv part3.csv
expect 2 "merged2.csv: files missing: index $(span part3.csv)" \
  "${MERGE[@]}" stats merged2.csv part0.csv part1.csv part2.csv --count 12
[ ! -e merged2.csv ] || fail "a refused merge left merged2.csv"
expect 3 "merged.csv: exists \(use -y to overwrite\)" "${MERGE[@]}" stats merged.csv part0.csv

# ---- A video (needs FFmpeg and libx264 in the ffmpeg program to make one).
if [ "${ES_HAVE_FFMPEG:-1}" = 0 ] || ! command -v ffprobe > /dev/null ||
  ! ffmpeg -v error -f lavfi -i testsrc2=s=160x120:r=25 -frames:v 200 -c:v libx264 -g 20 \
    -sc_threshold 0 src.mp4 2> /dev/null; then
  echo "test_cli_shard: no FFmpeg or libx264: the video cases skipped"
else
  frames() { ffprobe -v error -count_frames -select_streams v:0 -show_entries \
    stream=nb_read_frames -of default=nw=1:nk=1 "$1" | grep -m1 .; }
  ts_list() { ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of \
    default=nw=1:nk=1 "$1" | grep -v '^$' | sort -n; }
  "$BIN" src.mp4 -o wframes --stats whole.jsonl -q || fail "the whole video run (frames)"
  "$BIN" src.mp4 -o whole.mkv --codec ffv1 -q || fail "the whole video run (.mkv)"
  "$BIN" src.mp4 -o whole.ts -q || fail "the whole video run (.ts)"
  pids=()
  for i in 0 1 2 3; do
    ( "$BIN" src.mp4 -o pframes --stats "v$i.jsonl" --shard "$i/4" -q &&
      "$BIN" src.mp4 -o "h$i.mkv" --codec ffv1 --shard "$i/4" -q &&
      "$BIN" src.mp4 -o "h$i.ts" --shard "$i/4" -q ) & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a share of the video failed"; done
  diff -r wframes pframes > /dev/null || fail "the shares' frame maps differ from one run's"
  [ "$(ls pframes | wc -l)" = 200 ] || fail "$(ls pframes | wc -l) frame files, not 200"
  "${MERGE[@]}" stats vmerged.jsonl v2.jsonl v0.jsonl v3.jsonl v1.jsonl --count 200 2> /dev/null ||
    fail "merge of the video's stats"
  cmp -s vmerged.jsonl whole.jsonl || fail "the merged video stats differ from one run's"
  # The heat videos joined: the whole run's frames (lossless: the same pictures) and time
  # stamps, .mkv through the merge, .ts also through ffmpeg's concat as documented.
  # (the merge remuxes with the ffmpeg program: a minimal one, as the GPU machine's, may lack
  # the Matroska muxer or framemd5)
  if ffmpeg -hide_banner -muxers 2> /dev/null | grep -qw matroska &&
    ffmpeg -hide_banner -muxers 2> /dev/null | grep -qw framemd5 &&
    ffmpeg -hide_banner -demuxers 2> /dev/null | grep -qw concat; then
    "${MERGE[@]}" video joined.mkv h3.mkv h1.mkv h0.mkv h2.mkv --count 200 2> /dev/null ||
      fail "merge of the .mkv segments"
    [ "$(frames joined.mkv)" = 200 ] || fail "joined.mkv has $(frames joined.mkv) frames"
    cmp -s <(ffmpeg -v error -i whole.mkv -f framemd5 -) <(ffmpeg -v error -i joined.mkv -f framemd5 -) ||
      fail "joined.mkv: frames or time stamps differ from the whole run's"
  else
    echo "test_cli_shard: the ffmpeg program lacks the Matroska or framemd5 muxer: .mkv join skipped"
  fi
  if ffmpeg -hide_banner -demuxers 2> /dev/null | grep -qw concat; then
    printf "file 'h%d.ts'\n" 0 1 2 3 > list.txt
    ffmpeg -v error -f concat -safe 0 -i list.txt -c copy -muxdelay 0 -muxpreload 0 joined.ts ||
      fail "ffmpeg's concat of the .ts segments"
    [ "$(frames joined.ts)" = 200 ] || fail "joined.ts has $(frames joined.ts) frames"
    cmp -s <(ts_list whole.ts) <(ts_list joined.ts) || fail "joined.ts: time stamps differ"
  fi
  # A segment missing or doubled: refused, naming where.
  expect 2 "h2.mkv: frames missing: from [0-9.]+ s \(the end of h0.mkv\)" \
    "${MERGE[@]}" video j2.mkv h0.mkv h2.mkv h3.mkv
  cp h1.mkv h1b.mkv
  expect 2 "h1b?.mkv: frames doubled" "${MERGE[@]}" video j2.mkv h0.mkv h1.mkv h1b.mkv h2.mkv h3.mkv
  first3=$(grep -o '"index":[0-9]*' v3.jsonl | head -1 | cut -d: -f2)
  expect 2 "j2.jsonl: frames missing: index $first3\.\.199 \(no share has them\)" \
    "${MERGE[@]}" stats j2.jsonl v0.jsonl v1.jsonl v2.jsonl --count 200
  # A video of one keyframe in 3 shares: the first does it all, the others say they are empty.
  ffmpeg -v error -f lavfi -i testsrc2=s=64x48:r=25 -frames:v 30 -c:v libx264 -g 250 one.mkv
  for i in 1 2; do
    expect 0 "one.mkv: share $i/3: no frames \(30 frames, too few keyframes for 3 shares\)" \
      "$BIN" one.mkv -o "one$i.mkv" --shard "$i/3"
    [ ! -e "one$i.mkv" ] || fail "the empty share $i/3 wrote one$i.mkv"
  done
  "$BIN" one.mkv --stats one0.csv --shard 0/3 -q || fail "share 0/3 of one keyframe"
  [ "$(($(wc -l < one0.csv) - 1))" = 30 ] || fail "share 0/3 of one keyframe: not 30 records"
  # Standard input cannot be split (it is read twice).
  expect 1 "^entropy-stream: -: --shard: a video to split must be a regular file" \
    "$BIN" - --shard 0/2 < src.mp4
fi

if [ "$FAIL" -gt 0 ]; then
  echo "test_cli_shard: $FAIL failure(s)"
  exit 1
fi
echo "test_cli_shard: all checks passed"
