#!/bin/bash
# gpu-scale.sh OUTDIR - issue 31's figures on a several-GPU host in ONE device call (~9 min):
#   build (sm_90) -> ctest, GPU tests -> entropy-bench host-to-host rows on 1, 2, 4 GPUs and
#   the library's own count -> ES_TRACE phases of short runs -> a compute-bound stream (1080p
#   y4m from a file, K=51 disk, L=256, stats only) on 1 and all GPUs -> bench-stream.py (600
#   frames heat veryfast / ultrafast, stats only 600 and 3000 frames, against plain ffmpeg in
#   the same run) -> ctest, the other tests.
# Every stage runs under `timeout`, capped by what is left of ES_SCALE_BUDGET (default 540 s
# from the start); results.json is rewritten after every stage, so a run cut off still
# returns what it measured. Files in OUTDIR (flat, at most 8): results.json (stages, key
# figures, ratios against the targets), bench.json (entropy-bench), stream.json
# (bench-stream.py), run.log (every stage's output), trace.log (ES_TRACE runs), ctest.log,
# build.log.
# Before the call, in the checkout: `bash /work/shared/device/prep.sh` (FFmpeg into
# .device-deps/, sourced here). Without a GPU or FFmpeg the stages that need them say
# "skipped"; ES_SCALE_SKIP="build ctest-gpu bench trace k51 stream ctest-rest" skips stages
# (e.g. a dry run: ES_SCALE_SKIP="ctest-gpu ctest-rest" ES_SCALE_BUILD=build bash
# tools/gpu-scale.sh /tmp/x). Env: ES_SCALE_BUILD (build dir, default build-check),
# ES_SCALE_JOBS (default: cores, at most 64), ES_SCALE_FRAMES (k51 stream, default 2000),
# ES_SCALE_REPS (bench-stream, default 3), ES_SCALE_STREAM_FRAMES (bench-stream, default
# 600), ES_SCALE_TRACE_FRAMES (traced runs, default 600).
set -u
out=${1:?usage: gpu-scale.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
t_start=$(date +%s)
budget=${ES_SCALE_BUDGET:-540}
bdir=${ES_SCALE_BUILD:-build-check}
ncores=$(nproc)
jobs=${ES_SCALE_JOBS:-$((ncores > 64 ? 64 : ncores))}
skip=" ${ES_SCALE_SKIP:-} "
if [ -f .device-deps/device-env.sh ] && ! command -v ffmpeg >/dev/null 2>&1; then
  # shellcheck disable=SC1091
  source .device-deps/device-env.sh
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
all=$(seq -s, 0 $((ngpu > 0 ? ngpu - 1 : 0)))
# inputs in memory where possible (the K=51 input is 2000 x 2 MB frames)
tdir=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && tdir=/dev/shm
tmp=$(mktemp -d "$tdir/es-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
: >"$out/run.log"
: >"$out/trace.log"
declare -A st  # stage -> status
declare -A sec # stage -> seconds
stages=(build ctest-gpu bench trace k51 stream ctest-rest)
for s in "${stages[@]}"; do st[$s]="not reached"; sec[$s]=0; done

left() { echo $((budget - ($(date +%s) - t_start))); }
# cap SECONDS: the stage's limit, at most what is left less 15 s for the summary (0: none).
cap() {
  local l=$(($(left) - 15))
  [ "$l" -lt "$1" ] && echo $((l > 0 ? l : 0)) || echo "$1"
}
log() { echo "$*" | tee -a "$out/run.log"; }
# run_stage NAME LIMIT CMD...: runs CMD under timeout (output to run.log), records rc/seconds.
run_stage() {
  local name=$1 lim t0 rc
  lim=$(cap "$2")
  shift 2
  if [[ $skip == *" $name "* ]]; then st[$name]=skipped; summary; return 1; fi
  if [ "$lim" -le 5 ]; then st[$name]="no time left"; summary; return 1; fi
  log "== $name ($(date -u +%H:%M:%S), limit ${lim} s)"
  t0=$(date +%s)
  timeout -k 5 "$lim" "$@" >>"$out/run.log" 2>&1
  rc=$?
  sec[$name]=$(($(date +%s) - t0))
  case $rc in
  0) st[$name]=ok ;;
  124 | 137) st[$name]="timed out after ${lim} s" ;;
  77) st[$name]="skipped (rc 77)" ;;
  *) st[$name]="rc $rc" ;;
  esac
  log "== $name: ${st[$name]} in ${sec[$name]} s"
  summary
  return $rc
}

# results.json from what exists so far: the stages, then the key figures (parsed from
# bench.json, stream.json, k51 lines of run.log, ctest.log) with the issue's targets.
summary() {
  local f="" s
  for s in "${stages[@]}"; do f+="$s=${st[$s]}|${sec[$s]};"; done
  STAGES="$f" T_ALL=$(($(date +%s) - t_start)) NGPU=$ngpu OUT=$out python3 - <<'EOF' || true
import json, os, re
out = os.environ["OUT"]
res = {"seconds": int(os.environ["T_ALL"]), "gpus": int(os.environ["NGPU"]), "stages": {}}
try:
    res["device"] = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null").read().strip().splitlines()
    res["cores"] = os.cpu_count()
except Exception:
    pass
for item in os.environ["STAGES"].split(";"):
    if item:
        k, v = item.split("=", 1)
        status, secs = v.rsplit("|", 1)
        res["stages"][k] = {"status": status, "seconds": int(secs)}
# entropy-bench: ms by case and engine; ratios against x1 (targets: x2, x4 and auto <= x1;
# 10240^2 pageable x4 <= 0.6 x1).
try:
    # entropy-bench's printed rows (bench.json is complete only once the program ends)
    eb = {}
    pat = re.compile(r"^\S+\s+(gpu .*?host-to-host(?:, pinned out|, pinned)?)\s+(\d+)x(\d+)\s+"
                     r"K=(\d+)\s+L=(\d+)\s+(?:\d+\s+)?([0-9.]+) ms")
    for line in open(os.path.join(out, "run.log")):
        m = pat.match(line)
        if m:
            case = "%sx%s K=%s L=%s" % m.group(2, 3, 4, 5)
            eb.setdefault(case, {})[m.group(1)] = float(m.group(6))
    for case, d in eb.items():
        for tag in ("", ", pinned out", ", pinned"):
            x1 = d.get("gpu x1 host-to-host" + tag)
            for eng, ms in list(d.items()):
                if x1 and eng.endswith("host-to-host" + tag) and not eng.startswith("gpu x1 "):
                    d["ratio vs x1: " + eng] = round(ms / x1, 3)
    res["entropy_bench_ms"] = eb
    res["entropy_bench_targets"] = "x2, x4 and auto <= x1 in every row; 10240^2 pageable x4 <= 0.6 x1"
except Exception as e:
    res["entropy_bench_ms"] = "not available (%s)" % e
try:
    sj = json.load(open(os.path.join(out, "stream.json")))
    res["stream"] = [{"case": r["case"], "median_s": round(r["median_s"], 3), "fps": round(r["fps"], 1),
                      "fps_steady": r.get("fps_steady"), "ratio_vs_ffmpeg": round(r["ratio_vs_ffmpeg"], 3)
                      if "ratio_vs_ffmpeg" in r else None, "check": r.get("check")}
                     for r in sj.get("rows", []) if "fps" in r]
    res["stream_targets"] = "heat veryfast/ultrafast >= 0.9x ffmpeg, stats 600 >= 0.9x, 3000 >= 0.95x decode"
except Exception as e:
    res["stream"] = "not available (%s)" % e
try:
    k = {}
    for line in open(os.path.join(out, "run.log")):
        m = re.match(r"k51 (\S+) round (\d+): wall ([0-9.]+) s, steady ([0-9.]+) fps", line)
        if m:
            k.setdefault(m.group(1), []).append({"wall_s": float(m.group(3)), "fps": float(m.group(4))})
    if k:
        best = {g: max(x["fps"] for x in v) for g, v in k.items()}
        res["k51_disk_stream"] = {"runs": k, "best_fps": best}
        if "gpus=0" in best and len(best) > 1:
            for g, v in best.items():
                if g != "gpus=0":
                    res["k51_disk_stream"]["speedup " + g] = round(v / best["gpus=0"], 2)
        res["k51_target"] = "all 4 GPUs >= 3.4x one"
except Exception as e:
    res["k51_disk_stream"] = "not available (%s)" % e
try:
    c = open(os.path.join(out, "ctest.log")).read()
    res["ctest"] = re.findall(r"\d+% tests passed.*", c) + re.findall(r"^\s*\d+ - \S+ \(.*\)$", c, re.M)
except Exception:
    pass
try:
    t = open(os.path.join(out, "trace.log")).read()
    res["trace_walls"] = re.findall(r"^# (\S+): wall ([0-9.]+) s, rc (\d+)", t, re.M)
except Exception:
    pass
with open(os.path.join(out, "results.json.tmp"), "w") as f:
    json.dump(res, f, indent=1)
os.replace(os.path.join(out, "results.json.tmp"), os.path.join(out, "results.json"))
EOF
}

log "gpu-scale: $ngpu GPU(s), $ncores cores, budget ${budget} s, build dir $bdir, $(date -u)"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
  --format=csv >>"$out/run.log" 2>&1 || true
nvidia-smi topo -m >>"$out/run.log" 2>&1 || true
command -v ffmpeg >/dev/null && log "ffmpeg: $(command -v ffmpeg)" || log "ffmpeg: none"

# ---- build ----
build() { # a target that fails leaves the others built (-k 0): later stages use what exists
  cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
    { cmake --build "$bdir" -j"$jobs" || { cmake --build "$bdir" -j"$jobs" -- -k 0; false; }; }
}
if [[ $skip != *" build "* ]]; then
  run_stage build 300 bash -c "$(declare -f build); bdir=$bdir jobs=$jobs build >'$out/build.log' 2>&1"
  tail -5 "$out/build.log" >>"$out/run.log" 2>/dev/null
else
  st[build]=skipped
fi
es=$bdir/tools/entropy-stream
eb=$bdir/tools/entropy-bench

# ---- ctest, GPU tests (label gpu) ----
ctest_part() { # LABEL-ARGS...: into ctest.log
  (cd "$bdir" && ctest --output-on-failure -j"$1" --timeout 200 "${@:2}") >>"$out/ctest.log" 2>&1
}
: >"$out/ctest.log"
if [ -d "$bdir" ]; then
  echo "== ctest -L gpu" >>"$out/ctest.log"
  run_stage ctest-gpu 170 bash -c "$(declare -f ctest_part); out='$out' bdir='$bdir' ctest_part 4 -L gpu"
fi

# ---- entropy-bench host-to-host rows: x1, x2, x4, pinned, and the library's count ----
if [ "$ngpu" -ge 1 ] && [ -x "$eb" ]; then
  run_stage bench 90 "$eb" --gpu-only --reps 10 --json "$out/bench.json" \
    --case 10240x10240x5x16 --case 1920x1080x3x256 --case 1920x1080x75x256
else
  [[ $skip == *" bench "* ]] && st[bench]=skipped || st[bench]="skipped (no GPU or no entropy-bench)"
  summary
fi

# ---- ES_TRACE phases of short runs (600 frames of 1080p H.264, stats only; heat) ----
trace_runs() {
  local src=$tmp/trace.mp4 g name cmd t0 t1 rc
  ffmpeg -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 \
    -frames:v "${ES_SCALE_TRACE_FRAMES:-600}" -c:v libx264 -preset veryfast -pix_fmt yuv420p \
    "$src" || return 1
  # the CPU alone, the defaults (all GPUs under auto, opened in the background), GPU 0 named
  for g in cpu default gpu0; do
    case $g in cpu) dev="--device cpu" ;; default) dev="" ;; gpu0) dev="--gpus 0" ;; esac
    for name in stats heat; do
      [ "$name" = stats ] && cmd="$es $src --stats $tmp/t.csv -y --no-progress $dev" ||
        cmd="$es $src -o $tmp/t.mp4 -y --no-progress --preset veryfast $dev"
      t0=$(date +%s%N)
      ES_TRACE=1 $cmd 2>"$tmp/trace.err" >/dev/null
      rc=$?
      t1=$(date +%s%N)
      {
        printf '# %s-%s: wall %s s, rc %d\n# %s\n' "$name" "$g" \
          "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" "$rc" "$cmd"
        cat "$tmp/trace.err"
      } >>"$out/trace.log"
    done
  done
}
if command -v ffmpeg >/dev/null && [ -x "$es" ]; then
  run_stage trace 60 bash -c "$(declare -f trace_runs); tmp='$tmp' es='$es' all='$all' out='$out' trace_runs"
else
  st[trace]="skipped (no ffmpeg or entropy-stream)"
  summary
fi

# ---- compute-bound stream: 1080p y4m from a file, K=51 disk, L=256, stats only ----
k51_runs() {
  local y=$tmp/k51.y4m n=${ES_SCALE_FRAMES:-2000} r g err fps t0 t1
  ffmpeg -v error -y -f lavfi -i testsrc2=size=1920x1080:rate=30 -frames:v "$n" -pix_fmt gray \
    -f yuv4mpegpipe "$y" || return 1
  local lists=(0)
  [ "$ngpu" -ge 2 ] && lists+=("$all")
  [ "$ngpu" -ge 4 ] && lists=(0 0,1 "$all")
  for r in 1 2; do
    for g in "${lists[@]}"; do
      t0=$(date +%s%N)
      # The rate once the GPUs joined (the stream's trace line): a list opens in the
      # background now, so the run's own rate includes the opening (BENCHMARKS Z7).
      err=$(ES_TRACE=1 "$es" - --window 51 --shape disk --levels 256 --stats "$tmp/k.csv" -y \
        --no-progress --gpus "$g" <"$y" 2>&1 >/dev/null)
      rc=$?
      t1=$(date +%s%N)
      fps=$(echo "$err" | sed -n 's/.*after the GPUs joined, in [0-9.]* ms (\([0-9.]*\) fps).*/\1/p' | tail -1)
      echo "k51 gpus=$g round $r: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') s, steady ${fps:-?} fps, rc $rc, records $(($(wc -l <"$tmp/k.csv" 2>/dev/null || echo 0) - 1)) of $n"
      # Where the time went: the reader's waits, the rate after the GPUs joined.
      echo "$err" | grep -E "frames pushed|after the GPUs joined|GPUs ready" | sed 's/^/  /'
      [ $rc = 0 ] || echo "$err" | tail -3
    done
  done
  rm -f "$y"
}
if [ "$ngpu" -ge 1 ] && command -v ffmpeg >/dev/null && [ -x "$es" ]; then
  run_stage k51 120 bash -c "$(declare -f k51_runs); tmp='$tmp' es='$es' all='$all' ngpu=$ngpu k51_runs"
else
  [[ $skip == *" k51 "* ]] && st[k51]=skipped || st[k51]="skipped (no GPU or no ffmpeg)"
  summary
fi

# ---- streaming against plain ffmpeg: the product's defaults (all GPUs under auto) ----
if command -v ffmpeg >/dev/null && [ -x "$es" ]; then
  run_stage stream 150 python3 tools/bench-stream.py --bin "$es" --out "$out" \
    --frames "${ES_SCALE_STREAM_FRAMES:-600}" \
    --reps "${ES_SCALE_REPS:-3}" --gpus all --no-extras --no-stdin --long 5
else
  st[stream]="skipped (no ffmpeg or entropy-stream)"
  summary
fi

# ---- ctest, the rest ----
if [ -d "$bdir" ]; then
  echo "== ctest -LE gpu" >>"$out/ctest.log"
  run_stage ctest-rest 400 bash -c "$(declare -f ctest_part); out='$out' bdir='$bdir' ctest_part $((jobs / 4 > 2 ? jobs / 4 : 2)) -LE gpu"
fi
summary
log "== done in $(($(date +%s) - t_start)) s"
for s in "${stages[@]}"; do printf 'stage %-11s %-36s %4s s\n' "$s" "${st[$s]}" "${sec[$s]}"; done | tee -a "$out/run.log"
grep -E "host-to-host" "$out/run.log" | cut -c1-160 | head -40
grep -E "^k51 " "$out/run.log"
grep -E "fps" "$out/run.log" | grep -E "ffmpeg|entropy-stream" | cut -c1-150 | head -20
