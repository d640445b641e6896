#!/usr/bin/python3
"""test_kernels_bench.py - entropy-bench --quick runs, writes valid JSON, and every timed row
carries a reference check within float rounding (not a timing test: times are not judged)."""
import json
import os
import subprocess
import sys
import tempfile

bench = os.environ.get("ES_BENCH")
if not bench or not os.path.exists(bench):
    print("ES_BENCH not set or missing: skipped")
    sys.exit(77)
fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "b.json")
    r = subprocess.run([bench, "--quick", "--reps", "1", "--json", out],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    doc = json.load(open(out))
    rows = doc["rows"]
    check(len(rows) >= 10, f"only {len(rows)} rows")
    timed = [x for x in rows if x["median_ms"] is not None]
    check(any(x["engine"] == "cpu naive (1 thread)" for x in timed), "no naive baseline row")
    check(any(x["engine"] == "cpu engine" and x["threads"] == 1 for x in timed), "no 1-thread row")
    for x in timed:
        check(x["median_ms"] > 0 and x["max_abs_err"] <= 1e-5,
              f"{x['engine']} {x['width']}x{x['height']} K={x['window']}: "
              f"{x['median_ms']} ms err {x['max_abs_err']} ({x['err_against']})")
        check(x["err_against"] in ("ref", "sampled ref", "vs 1 thread", "vs cpu"),
              f"unknown reference {x['err_against']}")
    gpu = [x for x in rows if x["engine"].startswith("gpu")]
    check(len(gpu) > 0, "no GPU rows at all")
    for x in gpu:
        if x["median_ms"] is None:
            check(x["note"] != "", "an untimed GPU row without a reason")
    # Usage errors: exit 1 and a message.
    r = subprocess.run([bench, "--case", "10x10x4x16"], capture_output=True, text=True)
    check(r.returncode == 1 and "--case" in r.stderr, f"bad --case: {r.returncode} {r.stderr}")
    r = subprocess.run([bench, "--bogus"], capture_output=True, text=True)
    check(r.returncode == 1, f"unknown option: exit {r.returncode}")

print("test_kernels_bench:", "all checks passed" if not fails else f"{fails} check(s) failed")
sys.exit(1 if fails else 0)
