#!/usr/bin/python3
"""test_tools_bench_stream.py - tools/bench-stream.py's checks beside its numbers must be able
to fail (not a timing test: times are not judged). With a stand-in entropy-stream that exits 0
but writes its outputs only on its first call, every later row's check must say so, not
report the first call's files; peak_rss_mb must refuse a run that failed, and measure the
process, not the script's pages its children start with. Needs ffmpeg."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("ES_SRC", os.path.join(os.path.dirname(__file__), ".."))
TOOL = os.path.join(SRC, "tools", "bench-stream.py")
if not shutil.which("ffmpeg") or not shutil.which("ffprobe"):
    print("ffmpeg/ffprobe not found: skipped")
    sys.exit(77)
fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


# A stand-in for entropy-stream: the first call writes what it is asked for (-o: a copy of
# the input video; --stats: a header and one line a frame); later calls write nothing and
# still exit 0.
FAKE = r'''#!/bin/sh
state="$(dirname "$0")/called"
first=1; [ -e "$state" ] && first=0; : > "$state"
src=$1; shift
while [ $# -gt 0 ]; do
  case $1 in
    -o) [ $first = 1 ] && cp "$src" "$2"; shift ;;
    --stats) if [ $first = 1 ]; then echo "frame,mean" > "$2"; i=0
               while [ $i -lt %d ]; do echo "$i,1" >> "$2"; i=$((i+1)); done; fi; shift ;;
  esac
  shift
done
exit 0
'''

spec = importlib.util.spec_from_file_location("bench_stream", TOOL)
bs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bs)

with tempfile.TemporaryDirectory() as d:
    frames = 3
    fake = os.path.join(d, "fake-es")
    with open(fake, "w") as f:
        f.write(FAKE % frames)
    os.chmod(fake, 0o755)
    out = os.path.join(d, "out")
    r = subprocess.run([sys.executable, TOOL, "--bin", fake, "--out", out, "--frames",
                        str(frames), "--reps", "1", "--long", "0", "--no-extras"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"bench-stream.py exit {r.returncode}: {r.stderr[-800:]}")
    if r.returncode == 0:
        rows = json.load(open(os.path.join(out, "stream.json")))["rows"]
        es_rows = [x for x in rows if "entropy-stream" in x["case"] or "stdin" in x["case"]]
        check(len(es_rows) >= 3, f"only {len(es_rows)} entropy-stream rows")
        # Only the first call wrote anything: no later row may show a full count.
        full = "%d of %d" % (frames, frames)
        for x in es_rows[1:]:
            check(full not in x.get("check", ""),
                  f"{x['case']}: check {x.get('check')!r} from an earlier run's file")

    # Peak RSS of a run that failed is not a measurement.
    try:
        mb = bs.peak_rss_mb("printf abc", "exec false")
        check(False, f"peak_rss_mb of a failed run returned {mb} MB")
    except RuntimeError:
        pass
    mb, how = bs.peak_rss_mb("printf abc", "exec cat")
    check(mb > 0, f"peak_rss_mb of cat: {mb} ({how})")
    # ... and it is the process's own, not this script's resident pages copied at fork
    # (where GNU time can measure it; else the result says it is an upper bound).
    ballast = bytearray(200 << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    mb, how = bs.peak_rss_mb("printf abc", "exec cat")
    if bs.gnu_time():
        check(mb < 100, f"peak_rss_mb of cat beside a 200 MB script: {mb} MB ({how})")
    else:
        check("at least" in how, f"an upper bound not said: {how}")
    del ballast

print("test_tools_bench_stream:", "all checks passed" if not fails else f"{fails} check(s) failed")
sys.exit(1 if fails else 0)
