#!/bin/bash
# bench-slurm.sh - a Slurm job array of shares (samples/slurm/array.sbatch, then merge.sbatch
# after it) against one process, on a one-node Slurm of its own (tests/es_slurm.sh; root,
# slurm-wlm and munge), with the check that both give the same bytes. The figures go to
# tools/BENCHMARKS.md ("Slurm job arrays").
#
#   bash tools/bench-slurm.sh batch [IMAGES [WxH]]   a directory of IMAGES PNGs (200, 1024x768)
#   bash tools/bench-slurm.sh video [FRAMES [WxH]]   an H.264 video (3000 frames, 1920x1080,
#                                                    a keyframe each 50), heat video in .mkv
# ES_BIN (default build/tools/entropy-stream), SHARDS (4), CPUS_PER_TASK (1): the array.
# Times are wall clock: the single run, and the array from sbatch to the merge's end
# (Slurm's scheduling included), with each task's own time from its log.
set -u
cd "$(dirname "$0")/.." || exit 1
SRC=$PWD
BIN=$(realpath "${ES_BIN:-build/tools/entropy-stream}")
PY=${ES_PYTHON3:-python3}
KIND=${1:?usage: bench-slurm.sh batch|video [COUNT [WxH]]}
SHARDS=${SHARDS:-4}
CPT=${CPUS_PER_TASK:-1}
ES_SLURM_NAME=bench-slurm
skip() { echo "bench-slurm: cannot start a Slurm here: $*"; exit 1; }
. "$SRC/tests/es_slurm.sh"
export ENTROPY_STREAM=$BIN ENTROPY_STREAM_MERGE="$PY $SRC/tools/entropy-stream-merge"
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f\n", a - b }'; }

# array IN OUT [OPTIONS...]: the array and its merge; prints the seconds from submit to end.
array() {
  local in=$1 out=$2 t0 jid mid
  shift 2
  t0=$(now)
  jid=$(sbatch --parsable --array=0-$((SHARDS - 1)) --cpus-per-task="$CPT" \
    -o "$T/log/a-%A_%a.out" "$SRC/samples/slurm/array.sbatch" "$in" "$out" "$@")
  mid=$(sbatch --parsable --dependency="afterok:$jid" -o "$T/log/m-%j.out" \
    "$SRC/samples/slurm/merge.sbatch" "$in" "$out")
  while [ -n "$(squeue -h -j "$jid,$mid" -o %i)" ]; do
    squeue -h -j "$mid" -o %r | grep -q DependencyNeverSatisfied &&
      { echo "bench-slurm: a task failed:"; cat "$T"/log/a-*.out; exit 1; }
    sleep 0.1
  done
  since "$t0"
  grep -h "s, .*fps\|files, " "$T"/log/a-"$jid"_*.out | sed 's/^/  task: /' >&2
  cat "$T"/log/m-"$mid".out >&2
}

case $KIND in
batch)
  N=${2:-200} SIZE=${3:-1024x768}
  mkdir imgs one
  ffmpeg -v error -f lavfi -i "testsrc2=s=$SIZE:r=25" -frames:v "$N" imgs/i%04d.png || exit 1
  t0=$(now)
  "$BIN" imgs -o one/heat --stats one/stats.csv -q || exit 1
  t1=$(since "$t0")
  t2=$(array "$T/imgs" "$T/out")
  same=yes
  diff -r one/heat out/heat > /dev/null || same="NO (maps differ)"
  cmp -s one/stats.csv out/stats.csv || same="NO (stats differ)"
  echo "bench-slurm: batch of $N PNGs of $SIZE on $(nproc) cores: one process $t1 s;" \
    "$SHARDS shares through Slurm (--cpus-per-task=$CPT) $t2 s; same maps and stats: $same"
  ;;
video)
  N=${2:-3000} SIZE=${3:-1920x1080}
  mkdir one
  ffmpeg -v error -f lavfi -i "testsrc2=s=$SIZE:r=25" -frames:v "$N" -c:v libx264 \
    -preset veryfast -g 50 -sc_threshold 0 src.mp4 || exit 1
  t0=$(now)
  "$BIN" "$T/src.mp4" -o one/heat.mkv --stats one/stats.csv -q || exit 1
  t1=$(since "$t0")
  t2=$(array "$T/src.mp4" "$T/out")
  frames() { ffprobe -v error -count_frames -select_streams v:0 -show_entries \
    stream=nb_read_frames -of default=nw=1:nk=1 "$1" | head -1; }
  stamps() { ffprobe -v error -select_streams v:0 -show_entries packet=pts_time \
    -of default=nw=1:nk=1 "$1" | sort -n | md5sum; }
  fs=$(frames src.mp4) f1=$(frames one/heat.mkv) fj=$(frames out/heat.mkv)
  st=same
  cmp -s one/stats.csv out/stats.csv || st="DIFFERENT"
  ts=same
  [ "$(stamps one/heat.mkv)" = "$(stamps out/heat.mkv)" ] || ts="DIFFERENT"
  echo "bench-slurm: video of $N frames of $SIZE on $(nproc) cores: one process $t1 s;" \
    "$SHARDS shares through Slurm (--cpus-per-task=$CPT) $t2 s; frames (ffprobe" \
    "-count_frames): source $fs, one run $f1, joined $fj; stats $st; time stamps of the" \
    "joined heat video against one run's: $ts"
  ;;
*) echo "usage: bench-slurm.sh batch|video [COUNT [WxH]]"; exit 1 ;;
esac
