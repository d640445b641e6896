#!/bin/bash
# test_gpu_cli.sh - the CLI end to end on a GPU against the CPU, byte for byte: every sample
# image (grey, RGB, RGBA, palette + Adam7, 16-bit; odd sizes) to heat, gray8 (range auto),
# gray16, overlays (0 and 0.3), colormaps, nats, disk/reflect and K=75 L=256 maps (.npy), the
# statistics of each run; the sample clip to .npy (K=5, K=51 L=256) and to YUV4MPEG2 heat and
# gray8 with an overlay; and a batch of the images. --device gpu (every frame to the GPU,
# whatever its size) against --device cpu. Skips (77) without a GPU. A frame that a failing
# GPU handed back to the CPU would match too, silently under -q: every GPU run is traced
# (ES_TRACE) and the count of jobs its context retried on another device must be 0
# (ES_FAULT_INJECT=gpus=0 makes GPU 0 fail every job: this test then fails). test_gpu_engine
# and test_gpu_pipeline check the GPU's own results; this test checks the CLI's paths around
# them: decoding, rendering planes for PNG and y4m, statistics, the batch.
set -u
BIN=${ES_BIN:?ES_BIN not set}
S=${ES_SRC:?ES_SRC not set}/samples
[ "${ES_HAVE_CUDA:-0}" = 1 ] || { echo "test_gpu_cli: skipped (built without CUDA)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
msg=$("$BIN" -q --device gpu "$S/camera.png" --stats "$T/probe.csv" 2>&1); rc=$?
if [ $rc = 4 ]; then echo "test_gpu_cli: skipped (no GPU: $msg)"; exit 77; fi
[ $rc = 0 ] || { echo "FAIL: --device gpu on camera.png: exit $rc: $msg"; exit 1; }
FAIL=0
N=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }
# NAME ERRFILE: the traced GPU run named no job retried on another device. Each context the run
# freed (or ended early) traced "context: done, N job(s) retried" (pipeline/context.c); none traced fails too.
no_retry() {
  local freed bad
  freed=$(grep -c "context: done, [0-9]* job(s) retried" "$2")
  bad=$(grep "context: done, [0-9]* job(s) retried" "$2" | grep -vc "done, 0 job(s)")
  [ "$freed" -ge 1 ] && [ "$bad" = 0 ] ||
    fail "$1: the GPU run retried jobs on another device (or traced no count): $(grep -e "context: done" -e warning "$2" | head -3)"
}
same() { # NAME EXT ARGS...: the same output bytes, exit code and statistics on both devices
  local name=$1 ext=$2 d; shift 2
  for d in cpu gpu; do
    ES_TRACE=$([ $d = gpu ] && echo 1 || echo 0) "$BIN" -q -y --device $d "$@" -o "$T/$name.$d.$ext" \
      --stats "$T/$name.$d.csv" 2>"$T/$name.$d.err"
    echo $? >"$T/$name.$d.rc"
  done
  N=$((N + 1))
  [ "$(cat "$T/$name.cpu.rc")" = 0 ] || fail "$name: cpu exit $(cat "$T/$name.cpu.rc"): $(cat "$T/$name.cpu.err")"
  [ "$(cat "$T/$name.gpu.rc")" = 0 ] || fail "$name: gpu exit $(cat "$T/$name.gpu.rc"): $(grep -v ^es-trace "$T/$name.gpu.err")"
  no_retry "$name" "$T/$name.gpu.err"
  cmp -s "$T/$name.cpu.$ext" "$T/$name.gpu.$ext" || fail "$name ($*): the outputs differ"
  # the first column names the input (the same) or is empty (video); the rest must match
  cmp -s "$T/$name.cpu.csv" "$T/$name.gpu.csv" || fail "$name ($*): the statistics differ"
}
for f in camera chelsea moon16 coffee_rgba chelsea_palette_adam7; do
  i=$S/$f.png
  same "$f-heat" png "$i"
  same "$f-npy" npy "$i" -w 9 --shape disk --border reflect
  same "$f-g8" png "$i" --format gray8 --range auto
  same "$f-g16" png "$i" --format gray16 -w 15
  same "$f-ov" png "$i" --overlay 0.3 --colormap turbo
  same "$f-ov0" png "$i" --overlay 0 --colormap viridis --base e
  same "$f-k75" npy "$i" -w 75 -L 256
done
same moon16-L4096 npy "$S/moon16.png" -L 4096 -w 7
if [ "${ES_HAVE_FFMPEG:-0}" = 1 ]; then
  same clip-npy npy "$S/clip.mp4" -w 5
  same clip-k51 npy "$S/clip.mp4" -w 51 -L 256
  # YUV4MPEG2 where this libavformat writes it (a minimal build may not)
  if head -c 1 /dev/zero | "$BIN" -q - --raw gray8:1x1 -o - >/dev/null 2>&1; then
    same clip-y4m y4m "$S/clip.mp4" --colormap magma
    same clip-y4m-g8 y4m "$S/clip.mp4" --format gray8 --range auto --overlay 0.5
  fi
fi
mkdir "$T/batch" && cp "$S"/*.png "$T/batch/"
for d in cpu gpu; do
  ES_TRACE=$([ $d = gpu ] && echo 1 || echo 0) "$BIN" -q --device $d "$T/batch" -o "$T/b-$d" \
    --stats "$T/b-$d.csv" 2>"$T/b-$d.err"; rc=$?
  [ $rc = 0 ] || fail "batch on $d: exit $rc: $(grep -v ^es-trace "$T/b-$d.err")"
done
no_retry batch "$T/b-gpu.err"
diff -r "$T/b-cpu" "$T/b-gpu" >/dev/null || fail "batch: the PNGs differ"
cmp -s "$T/b-cpu.csv" "$T/b-gpu.csv" || fail "batch: the statistics differ"
[ $FAIL = 0 ] && echo "test_gpu_cli: $N cases and a batch, GPU = CPU byte for byte" || echo "test_gpu_cli: $FAIL failure(s)"
exit $((FAIL > 0))
