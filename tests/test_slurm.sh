#!/bin/bash
# test_slurm.sh - entropy-stream through a real Slurm (Debian's slurm-wlm and munge): starts
# munged, slurmctld and slurmd on this machine with a one-node cluster it configures under a
# temporary directory (its own munge key and socket, ports not in use, no cgroups: proctrack/
# linuxproc, task/none; a node with four "gpu" GRES of no device, so that the sample's
# --gres=gpu:1 is scheduled), submits samples/slurm/array.sbatch as an array of 4 over a
# directory of images and over a video, then samples/slurm/merge.sbatch with
# --dependency=afterok, and checks the merged result against one process byte for byte:
# the heat maps, the statistics, and the video's frames and time stamps (lossless ffv1, so
# that equal pictures are equal bytes); also srun -n 2 in one job (the step's tasks share the
# batch, the batch shell takes none), and a failed array holding its merge back. The daemons
# are stopped at the end, whatever happens.
# Skipped (77, with the reason) where Slurm or munge is not installed or we are not root
# (the daemons run as root, SlurmUser=root). ES_SLURM_KEEP=1 keeps the directory.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SRC=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-python3}
skip() { echo "test_slurm: skipped: $*"; exit 77; }
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
ES_SLURM_NAME=test_slurm
. "$SRC/tests/es_slurm.sh"

export ENTROPY_STREAM=$BIN
export ENTROPY_STREAM_MERGE="$PY $SRC/tools/entropy-stream-merge"
# array.sbatch then merge.sbatch after it; the array's own --cpus-per-task asks for more
# cores than a small machine has: one each here. Waits at most 240 s for the merge.
run_array() { # NAME INPUT OUT [OPTIONS...]
  local name=$1 in=$2 out=$3 jid mid
  shift 3
  jid=$(sbatch --parsable --array=0-3 --cpus-per-task=1 -o "$T/log/$name-%A_%a.out" \
    "$SRC/samples/slurm/array.sbatch" "$in" "$out" "$@") || { fail "$name: sbatch"; return 1; }
  mid=$(sbatch --parsable --dependency="afterok:$jid" -o "$T/log/$name-merge-%j.out" \
    "$SRC/samples/slurm/merge.sbatch" "$in" "$out") || { fail "$name: sbatch merge"; return 1; }
  for _ in $(seq 1200); do
    [ -z "$(squeue -h -j "$jid,$mid" -o %i 2> /dev/null)" ] && break
    if squeue -h -j "$mid" -o %r 2> /dev/null | grep -q DependencyNeverSatisfied; then
      fail "$name: a task of the array failed: $(cat "$T"/log/"$name"-[0-9]*.out)"
      scancel "$mid"
      return 1
    fi
    sleep 0.2
  done
  [ -z "$(squeue -h -j "$jid,$mid" -o %i 2> /dev/null)" ] || { fail "$name: not done in 240 s"; return 1; }
  local tasks
  tasks=$(ls "$T"/log/"$name"-[0-9]*_[0-3].out 2> /dev/null | wc -l)
  [ "$tasks" = 4 ] || fail "$name: $tasks task logs, not 4"
  cat "$T"/log/"$name"-merge-*.out
  grep -q "entropy-stream-merge: $out/stats.csv: " "$T"/log/"$name"-merge-*.out ||
    fail "$name: the merge job did not merge: $(cat "$T"/log/"$name"-merge-*.out)"
  echo "test_slurm: $name: $(grep -h 'share\|written\|frames,' "$T"/log/"$name"-[0-9]*.out | tr '\n' ' ')"
}

# ---- A directory of images: 4 shares against one run.
mkdir imgs one
for i in 1 2 3 4 5 6 7; do cp "$SRC/samples/camera.png" "imgs/c$i.png"; done
cp "$SRC/samples/chelsea.png" "$SRC/samples/moon16.png" "$SRC/samples/coffee_rgba.png" imgs/
"$BIN" imgs -o one/heat --stats one/stats.csv -q || fail "the single-process batch"
run_array batch "$T/imgs" "$T/out/batch" -v
diff -r one/heat out/batch/heat > /dev/null || fail "batch: the array's maps differ from one run's"
[ "$(ls out/batch/heat | wc -l)" = 10 ] || fail "batch: $(ls out/batch/heat | wc -l) maps, not 10"
cmp -s one/stats.csv out/batch/stats.csv || fail "batch: the merged stats differ from one run's"
[ "$(ls out/batch/shares/stats.*.csv | wc -l)" = 4 ] || fail "batch: not 4 stats files"

# ---- A video: 4 shares of a 300-frame H.264 clip (a keyframe each 25 frames, B-frames).
if [ "${ES_HAVE_FFMPEG:-1}" = 0 ] || ! command -v ffprobe > /dev/null ||
  ! ffmpeg -v error -f lavfi -i testsrc2=s=320x240:r=25 -frames:v 300 -c:v libx264 -g 25 \
    -sc_threshold 0 clip.mp4 2> /dev/null; then
  echo "test_slurm: no FFmpeg or libx264: the video case skipped"
else
  "$BIN" "$T/clip.mp4" -o one/heat.mkv --codec ffv1 --stats one/vstats.csv -q || fail "the single video run"
  run_array video "$T/clip.mp4" "$T/out/video" --codec ffv1 -v
  cmp -s one/vstats.csv out/video/stats.csv || fail "video: the merged stats differ from one run's"
  n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
    -of default=nw=1:nk=1 out/video/heat.mkv | head -1)
  [ "$n" = 300 ] || fail "video: the joined heat video has $n frames, not 300"
  # framemd5: each frame's time stamp, duration and picture checksum
  cmp -s <(ffmpeg -v error -i one/heat.mkv -f framemd5 -) \
    <(ffmpeg -v error -i out/video/heat.mkv -f framemd5 -) ||
    fail "video: the joined heat video's frames or time stamps differ from one run's"
  ls out/video/shares/heat.*.mkv | wc -l | grep -qx 4 || fail "video: not 4 segments"
fi

# ---- srun -n 2 in one job (no array): --shard slurm takes the step's tasks. The batch shell
# itself (--ntasks=2, SLURM_PROCID 0, no step) must not: run there, it would be share 0 of 2.
cat > srun.sh << EOF
#!/bin/bash
"$BIN" "$T/imgs" --stats "$T/out/srun-batch.csv" --shard slurm -q
srun --ntasks=2 bash -c '"$BIN" "$T/imgs" -o "$T/out/srun/heat" \
  --stats "$T/out/srun/stats.\$SLURM_PROCID.csv" --shard slurm -v'
EOF
mkdir -p out/srun
if timeout 120 sbatch --wait --ntasks=2 --cpus-per-task=1 -o "$T/log/srun-%j.out" srun.sh > /dev/null; then
  diff -r one/heat out/srun/heat > /dev/null || fail "srun -n 2: the maps differ from one run's"
  $ENTROPY_STREAM_MERGE stats out/srun/stats.csv out/srun/stats.0.csv out/srun/stats.1.csv \
    --count 10 2> /dev/null || fail "srun -n 2: the merge: $(cat "$T"/log/srun-*.out)"
  cmp -s one/stats.csv out/srun/stats.csv || fail "srun -n 2: the stats differ from one run's"
  grep -q "share 1/2: " "$T"/log/srun-*.out || fail "srun -n 2: no task said share 1/2"
  # the batch shell is in no array and no step: refused, nothing written
  grep -q "not in a Slurm job array or srun step" "$T"/log/srun-*.out ||
    fail "srun -n 2: the batch shell took a share: $(cat "$T"/log/srun-*.out)"
  [ ! -e out/srun-batch.csv ] || fail "srun -n 2: the batch shell wrote its stats"
else
  fail "srun -n 2: the job failed: $(cat "$T"/log/srun-*.out)"
fi

# ---- A share that fails holds the merge back (afterok): it never runs, nothing is merged.
jid=$(sbatch --parsable --array=0-3 --cpus-per-task=1 -o "$T/log/bad-%A_%a.out" \
  "$SRC/samples/slurm/array.sbatch" "$T/no-such-video.mp4" "$T/out/bad")
mid=$(sbatch --parsable --dependency="afterok:$jid" -o "$T/log/bad-merge-%j.out" \
  "$SRC/samples/slurm/merge.sbatch" "$T/no-such-video.mp4" "$T/out/bad")
held=0
for _ in $(seq 600); do
  squeue -h -j "$mid" -o %r 2> /dev/null | grep -q DependencyNeverSatisfied && held=1 && break
  sleep 0.2
done
[ "$held" = 1 ] || fail "a failed array did not hold its merge back: $(squeue -h -j "$mid" -o '%T %r' 2>&1)"
scancel "$mid" 2> /dev/null
grep -q "no-such-video.mp4: No such file or directory" "$T"/log/bad-"$jid"_0.out ||
  fail "the failed share said: $(cat "$T"/log/bad-"$jid"_0.out)"
[ ! -e "$T/out/bad/stats.csv" ] && ! ls "$T"/log/bad-merge-* > /dev/null 2>&1 ||
  fail "the merge of a failed array ran"

if [ "$FAIL" -gt 0 ]; then
  echo "test_slurm: $FAIL failure(s); logs:"
  tail -n 5 "$T"/log/*.out "$T"/log/slurmctld.log "$T"/log/slurmd.log
  exit 1
fi
echo "test_slurm: all checks passed"
