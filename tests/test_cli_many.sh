#!/bin/bash
# test_cli_many.sh - several videos in one run (issue 31, tools/cli_many.c): clips made here
# by ffmpeg (y4m, H.264 with B-frames in .mp4, FFV1 in .mkv, two frame sizes), run as a list
# of inputs and as a directory, three at a time (ES_MANY_RUNS=3), one context for all:
# - --stats (CSV and JSON lines) is the single runs' files one after another under one
#   header, byte for byte; the heat videos equal the single runs' (y4m byte for byte, H.264
#   frame for frame by their decoded frames' MD5s);
# - a damaged clip and a missing file among good ones are said once each and counted, the
#   others finish, exit 2, and the damaged one leaves no heat video under its final name;
#   where every video fails, the output directory made is removed again;
# - a first SIGINT finishes the videos begun (committed, their records their frames) and
#   begins no other: exit 130;
# - -o a file with several inputs, neither -o nor --stats, two inputs of one base name and an
#   output that is an input are usage errors (exit 1) that create nothing; an existing
#   output is refused (exit 3, before any work), skipped with -n, replaced with -y;
# - a directory holding stills and videos stays a batch of its stills;
# - --shard I/N deals whole videos: the shares' records are the whole run's.
set -u
BIN=${ES_BIN:?ES_BIN not set}
[ "${ES_HAVE_FFMPEG:-1}" = 1 ] || { echo "skip: built without FFmpeg"; exit 77; }
command -v ffmpeg >/dev/null || { echo "skip: no ffmpeg program"; exit 77; }
source "$(dirname "$0")/es_test_ffmpeg.sh"
ff_has encoders libx264 && ff_has encoders ffv1 && ff_has muxers yuv4mpegpipe ||
  { echo "skip: this ffmpeg lacks libx264, ffv1 or the y4m muxer"; exit 77; }
es_can_write_y4m && es_can_read_y4m || { echo "skip: the library lacks y4m"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
cd "$T" || exit 1
export ES_MANY_RUNS=3

# expect CODE PATTERN CMD...: exit code CODE and a stderr line matching PATTERN.
expect() {
  local code=$1 pat=$2 rc
  shift 2
  "$@" > out.txt 2> err.txt
  rc=$?
  [ "$rc" = "$code" ] || fail "$*: exit $rc, not $code ($(head -c 300 err.txt))"
  grep -Eq -- "$pat" err.txt || fail "$*: no line matching '$pat' in: $(head -c 300 err.txt)"
}
ffq() { ffmpeg -nostdin -loglevel error -y "$@"; }

mkdir clips
ffq -f lavfi -i testsrc2=s=96x64:r=25 -frames:v 14 -pix_fmt yuv420p clips/a.y4m
ffq -f lavfi -i testsrc2=s=128x72:r=25 -frames:v 30 -c:v libx264 -bf 3 -g 12 -pix_fmt yuv420p clips/b.mp4
ffq -f lavfi -i mandelbrot=s=80x48:r=25 -frames:v 9 -c:v ffv1 clips/c.mkv
ffq -f lavfi -i testsrc2=s=64x48:r=10 -frames:v 5 -pix_fmt gray clips/d.y4m
list=(clips/a.y4m clips/b.mp4 clips/c.mkv clips/d.y4m)

# The single runs: one file a video, and its heat video.
mkdir single
: > want.csv
: > want.jsonl
for v in "${list[@]}"; do
  n=$(basename "$v")
  "$BIN" -q "$v" -o "single/$n" --stats "single/$n.csv" || fail "single run of $v"
  "$BIN" -q "$v" --stats "single/$n.jsonl" || fail "single run of $v (jsonl)"
  [ -s want.csv ] || head -1 "single/$n.csv" > want.csv
  tail -n +2 "single/$n.csv" >> want.csv
  cat "single/$n.jsonl" >> want.jsonl
done
[ "$(wc -l < want.csv)" = $((1 + 14 + 30 + 9 + 5)) ] || fail "the single runs gave $(wc -l < want.csv) lines"

# same_heat A B: byte for byte (y4m), else the decoded frames' MD5s (H.264 in .mp4 and .mkv,
# whose muxer writes a random segment UID).
same_heat() {
  cmp -s "$1" "$2" && return 0
  case $1 in *.y4m) return 1 ;; esac
  [ "$(ffmpeg -nostdin -loglevel error -i "$1" -f framemd5 - | grep -v '^#')" = \
    "$(ffmpeg -nostdin -loglevel error -i "$2" -f framemd5 - | grep -v '^#')" ]
}

# ---- A list of inputs, and the directory of them.
expect 0 "^entropy-stream: 4 videos, 58 frames, " "$BIN" "${list[@]}" -o heat/ --stats s.csv
cmp -s s.csv want.csv || fail "list: --stats is not the single runs' records in order: $(diff s.csv want.csv | head -5)"
for v in "${list[@]}"; do
  n=$(basename "$v")
  [ -f "heat/$n" ] || { fail "list: no heat/$n"; continue; }
  same_heat "heat/$n" "single/$n" || fail "list: heat/$n is not the single run's"
done
[ -z "$(ls -A . | grep '^\.')" ] || fail "list: temporaries left: $(ls -A . | grep '^\.')"
expect 0 "4 videos" "$BIN" clips --stats s2.csv -o heat2
cmp -s s2.csv want.csv || fail "directory: --stats differs from the single runs'"
for v in "${list[@]}"; do
  n=$(basename "$v")
  same_heat "heat2/$n" "single/$n" || fail "directory: heat2/$n is not the single run's"
done
expect 0 "4 videos" "$BIN" "${list[@]}" --stats s.jsonl
cmp -s s.jsonl want.jsonl || fail "list: --stats .jsonl is not the single runs' records"
"$BIN" -q "${list[@]}" --stats - > s3.csv 2> err.txt || fail "--stats -: exit $?"
cmp -s s3.csv want.csv || fail "--stats -: not the single runs' records"
# One at a time gives the same.
ES_MANY_RUNS=1 "$BIN" -q "${list[@]}" --stats s4.csv || fail "ES_MANY_RUNS=1: exit $?"
cmp -s s4.csv want.csv || fail "ES_MANY_RUNS=1: --stats differs"

# ---- A damaged clip and a missing file among good ones.
head -c 2500 clips/b.mp4 > bad.mp4
head -c 4000 /dev/urandom >> bad.mp4
expect 2 "^entropy-stream: (\./)?bad\.mp4: " "$BIN" clips/a.y4m bad.mp4 clips/c.mkv -o heat3/ --stats s5.csv
[ "$(grep -c 'bad\.mp4' err.txt)" = 1 ] || fail "damaged: said $(grep -c 'bad\.mp4' err.txt) times: $(cat err.txt)"
grep -q "2 videos\|(1 failed)" err.txt || fail "damaged: the summary does not count it: $(cat err.txt)"
[ -e heat3/bad.mp4 ] && fail "damaged: heat3/bad.mp4 left under its final name"
same_heat heat3/a.y4m single/a.y4m && same_heat heat3/c.mkv single/c.mkv ||
  fail "damaged: the good videos' heat differs"
{ head -1 want.csv; tail -n +2 single/a.y4m.csv; tail -n +2 single/c.mkv.csv; } > want5.csv
grep -v '^bad\.mp4,' s5.csv | cmp -s - want5.csv || fail "damaged: the good videos' records differ"
expect 2 "^entropy-stream: missing\.mp4: " "$BIN" clips/a.y4m missing.mp4 clips/d.y4m --stats s6.csv
{ head -1 want.csv; tail -n +2 single/a.y4m.csv; tail -n +2 single/d.y4m.csv; } > want6.csv
cmp -s s6.csv want6.csv || fail "missing: the others' records differ"

expect 2 "2 videos \(2 failed\)" "$BIN" missing.mp4 bad.mp4 -o new/sub/ --stats s6b.csv
[ -e new ] && fail "every video failed: the output directory made is left"

# ---- A stop (SIGINT) once the first two videos are being written, two at a time: exit 130,
# the videos begun finished and committed (their records the frames in their heat videos),
# no other begun (the summary says how many were).
mkdir long
for i in 1 2 3 4; do
  ffq -f lavfi -i testsrc2=s=320x240:r=30 -frames:v 400 -c:v libx264 -preset ultrafast "long/v$i.mp4"
done
ES_MANY_RUNS=2 "$BIN" long -o hl/ --stats sl.csv 2> errl.txt &
pid=$!
for _ in $(seq 1 400); do
  [ "$(ls -A hl 2>/dev/null | grep -c '^\.')" -ge 2 ] && break
  sleep 0.05
done
kill -INT $pid
wait $pid
rc=$?
[ "$rc" = 130 ] || fail "stop: exit $rc, not 130 ($(cat errl.txt))"
# (Two begun here; a fast host may have begun a third before the signal came.)
began=$(sed -n 's/^entropy-stream: \([0-9]\) of 4 videos, .*interrupted$/\1/p' errl.txt)
[ -n "$began" ] && [ "$began" -ge 2 ] && [ "$began" -lt 4 ] || fail "stop: summary: $(cat errl.txt)"
[ "$(ls hl | wc -l)" = "$began" ] || fail "stop: $began begun, heat videos $(ls hl | tr '\n' ' ')"
for f in hl/*; do
  n=$(ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$f")
  [ "$n" -gt 0 ] && [ "$(grep -c "^long/$(basename "$f")," sl.csv)" = "$n" ] ||
    fail "stop: $f has $n frames and $(grep -c "^long/$(basename "$f")," sl.csv) records"
done
[ -z "$(ls -A hl | grep '^\.')$(ls -A . | grep '^\.')" ] || fail "stop: temporaries left"

# ---- Usage errors: nothing created.
expect 1 "^entropy-stream: out\.mp4: several videos need a directory output" "$BIN" "${list[@]}" -o out.mp4
expect 1 "give -o DIR/ or --stats FILE" "$BIN" clips/a.y4m clips/b.mp4
mkdir other && cp clips/a.y4m other/
expect 1 "^entropy-stream: heat4/a\.y4m: both clips/a\.y4m and other/a\.y4m" "$BIN" clips/a.y4m other/a.y4m -o heat4/
expect 1 "is the input itself" "$BIN" clips/a.y4m clips/b.mp4 -o clips/ -y
expect 1 "standard input: not among several" "$BIN" clips/a.y4m - --stats x.csv
expect 1 "^entropy-stream: clips: a directory among several inputs" "$BIN" clips/a.y4m clips --stats x.csv
expect 1 "^entropy-stream: .*camera\.png: an image among several inputs" "$BIN" clips/a.y4m "$ES_SRC/samples/camera.png" --stats x.csv
[ -e out.mp4 ] || [ -e heat4 ] || [ -e x.csv ] && fail "a usage error left an output"

# ---- Existing outputs: refused before any work, skipped (-n), replaced (-y).
expect 3 "^entropy-stream: heat/a\.y4m: exists \(use -y" "$BIN" "${list[@]}" -o heat/ --stats s7.csv
[ -e s7.csv ] && fail "refused: s7.csv written"
expect 0 "heat/a\.y4m: exists, skipped" "$BIN" "${list[@]}" -o heat/ --stats s7.csv -n
cmp -s s7.csv want.csv || fail "-n: the statistics are still every video's"
expect 0 "4 videos" "$BIN" "${list[@]}" -o heat/ --stats s.csv -y
cmp -s s.csv want.csv || fail "-y: --stats differs"

# ---- A directory of stills and videos: a batch of its stills, as before.
mkdir mixed && cp clips/a.y4m mixed/ && cp "${ES_SRC:?}/samples/camera.png" mixed/
expect 0 "" "$BIN" mixed --stats s8.csv
[ "$(grep -c '^camera.png,' s8.csv)" = 1 ] && [ "$(wc -l < s8.csv)" = 2 ] ||
  fail "mixed: not the batch of its stills: $(cat s8.csv)"

# ---- --shard: whole videos a share; the shares' records are the whole run's.
"$BIN" -q "${list[@]}" --stats sh0.csv --shard 0/2 || fail "--shard 0/2: exit $?"
"$BIN" -q "${list[@]}" --stats sh1.csv --shard 1/2 || fail "--shard 1/2: exit $?"
[ "$(tail -q -n +2 sh0.csv sh1.csv | sort)" = "$(tail -n +2 want.csv | sort)" ] ||
  fail "--shard: the shares' records are not the whole run's"
[ "$(tail -n +2 sh0.csv | wc -l)" -gt 0 ] && [ "$(tail -n +2 sh1.csv | wc -l)" -gt 0 ] ||
  fail "--shard: a share is empty"

[ "$FAIL" = 0 ] || { echo "$FAIL failure(s)"; exit 1; }
echo "test_cli_many: ok"
