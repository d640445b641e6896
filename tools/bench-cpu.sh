#!/bin/bash
# bench-cpu.sh - the CPU figures: our engine on 1 thread (and all threads) against
# scikit-image's rank.entropy on 1 thread, same random images, same cases; prints the
# ratios. usage: tools/bench-cpu.sh [ENTROPY_BENCH] [REPS_SKIMAGE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:-${ES_BENCH:-$here/../build-cpu/tools/entropy-bench}}
sreps=${2:-3}
py=/usr/bin/python3
[ -x "$bench" ] || { echo "bench-cpu.sh: $bench: not found (build entropy-bench first)" >&2; exit 2; }
cases=(400x400x5x16 2560x2560x5x16 1920x1080x9x256)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for c in "${cases[@]}"; do args+=(--case "$c"); done
echo "== entropy-bench (ours)"
"$bench" "${args[@]}" --json "$tmp/ours.json"
echo "== scikit-image rank.entropy (1 thread, $sreps reps)"
# Its JSON goes to a file: on a failure (no scikit-image: exit 77 and an "error" field) say
# why, rather than leave with set -e and the reason in a removed temporary.
if ! "$py" "$here/bench-skimage.py" --reps "$sreps" "${args[@]}" > "$tmp/sk.json"; then
  echo "bench-cpu.sh: bench-skimage.py failed: $(cat "$tmp/sk.json")" >&2
  exit 2
fi
"$py" - "$tmp/ours.json" "$tmp/sk.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))["rows"]
sk = json.load(open(sys.argv[2]))
print(f"== ratios (skimage {sk.get('skimage', '?')}, numpy {sk.get('numpy', '?')}; medians)")
print(f"{'case':24} {'skimage 1T ms':>14} {'ours 1T ms':>11} {'x faster':>9} {'ours all ms':>12} {'threads':>8} {'x faster':>9}")
for r in sk["rows"]:
    key = (r["width"], r["height"], r["window"], r["levels"])
    mine = [o for o in ours if (o["width"], o["height"], o["window"], o["levels"]) == key
            and o["engine"] == "cpu engine" and o["median_ms"] is not None]
    one = [o for o in mine if o["threads"] == 1]
    alln = [o for o in mine if o["threads"] != 1]
    name = "%dx%d K=%d L=%d" % key
    s = r["median_ms"]
    o1 = one[0]["median_ms"] if one else float("nan")
    line = f"{name:24} {s:14.1f} {o1:11.2f} {s / o1:9.1f}"
    if alln:
        on = alln[0]["median_ms"]
        line += f" {on:12.2f} {alln[0]['threads']:8d} {s / on:9.1f}"
    print(line)
PY
