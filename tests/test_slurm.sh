#!/bin/bash
# test_slurm.sh - entropy-stream through a real Slurm (Debian's slurm-wlm and munge): starts
# munged, slurmctld and slurmd on this machine with a one-node cluster it configures under a
# temporary directory (its own munge key and socket, ports not in use, no cgroups: proctrack/
# linuxproc, task/none; a node with four "gpu" GRES of no device, so that the sample's
# --gres=gpu:1 is scheduled), submits samples/slurm/array.sbatch as an array of 4 over a
# directory of images and over a video, then samples/slurm/merge.sbatch with
# --dependency=afterok, and checks the merged result against one process byte for byte:
# the heat maps, the statistics, and the video's frames and time stamps (lossless ffv1, so
# that equal pictures are equal bytes). The daemons are stopped at the end, whatever happens.
# Skipped (77, with the reason) where Slurm or munge is not installed or we are not root
# (the daemons run as root, SlurmUser=root). ES_SLURM_KEEP=1 keeps the directory.
set -u
BIN=${ES_BIN:?ES_BIN not set}
SRC=${ES_SRC:?ES_SRC not set}
PY=${ES_PYTHON3:-python3}
skip() { echo "test_slurm: skipped: $*"; exit 77; }
for p in munged slurmctld slurmd sbatch squeue sinfo scancel srun; do
  command -v "$p" > /dev/null || [ -x "/usr/sbin/$p" ] || skip "no $p (Debian: slurm-wlm, munge)"
done
[ "$(id -u)" = 0 ] || skip "not root (the test's slurmd runs jobs as SlurmUser=root)"
PATH=$PATH:/usr/sbin
T=$(mktemp -d /tmp/es_slurm.XXXXXX)
chmod 755 "$T" # munged wants its socket's directories searchable by all
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
PIDS=()
cleanup() {
  # Jobs first (their steps are slurmd's children), then the daemons, each by its own pid.
  if [ -n "${SLURM_CONF:-}" ]; then scancel --quiet --full -u root 2> /dev/null; fi
  for ((k = ${#PIDS[@]} - 1; k >= 0; k--)); do
    kill "${PIDS[k]}" 2> /dev/null
    for _ in $(seq 50); do kill -0 "${PIDS[k]}" 2> /dev/null || break; sleep 0.1; done
    kill -9 "${PIDS[k]}" 2> /dev/null
  done
  [ -f "$T/munge/munged.pid" ] && kill "$(cat "$T/munge/munged.pid")" 2> /dev/null
  if [ "${ES_SLURM_KEEP:-0}" = 1 ]; then echo "test_slurm: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$T" || exit 1
mkdir -p munge state spool log run etc out

# ---- munge: a key and a socket of our own.
head -c 1024 /dev/urandom > munge/munge.key
chmod 700 munge && chmod 400 munge/munge.key
munged --socket="$T/munge/sock" --key-file="$T/munge/munge.key" --pid-file="$T/munge/munged.pid" \
  --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" -f 2> log/munged.err ||
  skip "munged does not start: $(tail -1 log/munged.err)"

# ---- Slurm: one node, this machine, with what slurmd -C finds; two ports not in use.
read -r P1 P2 < <("$PY" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
NODE=$(hostname -s)
HW=$(slurmd -C 2> /dev/null | head -1)
CPUS=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<< "$HW")
MEM=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<< "$HW")
[ -n "$CPUS" ] && [ -n "$MEM" ] || skip "slurmd -C says nothing of this machine: $HW"
cat > etc/slurm.conf << EOF
ClusterName=estest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$P1
SlurmdPort=$P2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=600
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
# Slurm keeps a GPU only with a device file: four of /dev/null's kind (regular files where
# mknod is not allowed: slurmd then logs that they are no devices, and keeps them).
mkdir dev
for g in 0 1 2 3; do mknod "dev/gpu$g" c 1 3 2> /dev/null || : > "dev/gpu$g"; done
echo "NodeName=$NODE Name=gpu File=$T/dev/gpu[0-3]" > etc/gres.conf
export SLURM_CONF=$T/etc/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" > log/slurmctld.out 2>&1 &
PIDS+=($!)
slurmd -D -N "$NODE" -f "$SLURM_CONF" > log/slurmd.out 2>&1 &
PIDS+=($!)
up=0
for _ in $(seq 150); do
  [ "$(sinfo -h -N -o %T 2> /dev/null)" = idle ] && up=1 && break
  for p in "${PIDS[@]}"; do kill -0 "$p" 2> /dev/null || break 2; done
  sleep 0.2
done
if [ "$up" != 1 ]; then
  tail -3 log/slurmctld.log log/slurmd.log log/*.out 2> /dev/null
  skip "the test cluster did not come up (node: $(sinfo -h -N -o %T 2>&1 | head -1))"
fi
echo "test_slurm: cluster up: $NODE, $CPUS CPUs, ports $P1 $P2"

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
