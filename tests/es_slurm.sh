# es_slurm.sh - a one-node Slurm of our own on this machine, for tests/test_slurm.sh and
# tools/bench-slurm.sh (sourced; not a test itself). The caller sets PY (a python3),
# ES_SLURM_NAME (its name in messages) and skip() (what to do where no cluster can start,
# with the reason); this starts munged (its own key and socket), slurmctld and slurmd (ports
# not in use, a configuration written under T, the temporary directory it makes and enters),
# waits for the node, exports SLURM_CONF, and on exit stops the daemons by their pids and
# removes T (ES_SLURM_KEEP=1 keeps it). Jobs write their logs under T/log.
for p in munged slurmctld slurmd sbatch squeue sinfo scancel srun; do
  command -v "$p" > /dev/null || [ -x "/usr/sbin/$p" ] || skip "no $p (Debian: slurm-wlm, munge)"
done
[ "$(id -u)" = 0 ] || skip "not root (the test's slurmd runs jobs as SlurmUser=root)"
PATH=$PATH:/usr/sbin
T=$(mktemp -d /tmp/es_slurm.XXXXXX)
chmod 755 "$T" # munged wants its socket's directories searchable by all
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
  if [ "${ES_SLURM_KEEP:-0}" = 1 ]; then echo "$ES_SLURM_NAME: kept $T"; else rm -rf "$T"; fi
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
echo "$ES_SLURM_NAME: cluster up: $NODE, $CPUS CPUs, ports $P1 $P2"
