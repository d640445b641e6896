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


def strict_json(name):
    raise ValueError(f"not JSON: {name}")


with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "b.json")
    r = subprocess.run([bench, "--quick", "--reps", "1", "--json", out],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    doc = json.load(open(out), parse_constant=strict_json)
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
    # The threads a row names are the threads that ran it: with 8 OpenMP threads the engine
    # runs a 64x64 frame on 1 (fewer threads for small frames), so no timed row may claim 8
    # for it (nor divide its speed-up by 8 "per core"). Without OpenMP every row runs on 1.
    out8 = os.path.join(d, "t8.json")
    r = subprocess.run([bench, "--reps", "1", "--json", out8, "--case", "64x64x5x16"],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_NUM_THREADS="8"))
    check(r.returncode == 0, f"64x64 with 8 threads: exit {r.returncode}: {r.stderr}")
    doc8 = json.load(open(out8), parse_constant=strict_json)
    want8 = 8 if os.environ.get("ES_HAVE_OPENMP", "1") == "1" else 1
    check(doc8["threads"] == want8,
          f"header threads {doc8['threads']} with OMP_NUM_THREADS=8 (want {want8})")
    for x in doc8["rows"]:
        if x["engine"] == "cpu engine" and x["median_ms"] is not None:
            check(x["threads"] == 1, f"64x64 timed row claims {x['threads']} threads: {x}")
    # Usage errors: exit 1 and a message.
    r = subprocess.run([bench, "--case", "10x10x4x16"], capture_output=True, text=True)
    check(r.returncode == 1 and "--case" in r.stderr, f"bad --case: {r.returncode} {r.stderr}")
    r = subprocess.run([bench, "--bogus"], capture_output=True, text=True)
    check(r.returncode == 1, f"unknown option: exit {r.returncode}")
    # Malformed numbers are usage errors, not silently the defaults (--reps abc ran the full
    # benchmark) or a prefix (10x10x3x16junk), and a 17th --case says why.
    for args in (["--case", "10x10x3x16junk"], ["--reps", "abc"], ["--threads", "2x"],
                 ["--reps", ""], ["--case", "8x8x3x2"] * 17,
                 # an option whose value is missing is not "unknown" (it once said so)
                 ["--json"], ["--reps"], ["--threads"], ["--case"]):
        r = subprocess.run([bench] + args, capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and r.stderr, f"{args[:2]}: exit {r.returncode} {r.stderr}")
        check("unknown option" not in r.stderr, f"{args[:2]}: {r.stderr}")

print("test_kernels_bench:", "all checks passed" if not fails else f"{fails} check(s) failed")
sys.exit(1 if fails else 0)
