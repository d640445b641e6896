#!/usr/bin/python3
"""bench-skimage.py - times scikit-image's filters.rank.entropy on one thread, on the same
random levels entropy-bench generates (splitmix64 of the pixel index), and prints JSON.

usage: bench-skimage.py [--reps N] [--case WxHxKxL ...]
Default cases: the two of the CPU target (2560x2560 K=5 L=16, 1920x1080 K=9 L=256) and
400x400 K=5 L=16. The median of N runs (default 3) after one warm-up on a small image.
"""
import os

# One thread for everything numpy/scipy might use; rank.entropy itself is single-threaded.
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

SEED = 1


def levels(w, h, L):
    """The levels of entropy-bench's make_levels, row-chunked to bound memory."""
    out = np.empty(w * h, dtype=np.uint8 if L <= 256 else np.uint16)
    chunk = 1 << 22
    with np.errstate(over="ignore"):
        for s in range(0, w * h, chunk):
            z = np.arange(s, min(s + chunk, w * h), dtype=np.uint64)
            z = z * np.uint64(0x9E3779B97F4A7C15) + np.uint64(SEED)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
            out[s:s + len(z)] = (z >> np.uint64(32)) % np.uint64(L)
    return out.reshape(h, w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--case", action="append", default=[])
    a = ap.parse_args()
    if a.reps < 1:
        ap.error("--reps must be at least 1")
    for c in a.case:
        parts = c.split("x")
        if len(parts) != 4 or not all(x.isdigit() for x in parts):
            ap.error("--case %s: want WxHxKxL" % c)
    cases = a.case or ["400x400x5x16", "2560x2560x5x16", "1920x1080x9x256"]
    try:
        import skimage
        from skimage.filters import rank
    except ImportError as e:
        print(json.dumps({"tool": "bench-skimage", "error": str(e)}))
        return 77
    rows = []
    warm = levels(64, 64, 16)
    rank.entropy(warm, np.ones((5, 5), np.uint8))
    for c in cases:
        w, h, K, L = (int(x) for x in c.split("x"))
        q = levels(w, h, L)
        fp = np.ones((K, K), np.uint8)
        ts = []
        for _ in range(a.reps):
            t = time.perf_counter()
            rank.entropy(q, fp)
            ts.append((time.perf_counter() - t) * 1e3)
        rows.append({"width": w, "height": h, "window": K, "levels": L,
                     "median_ms": statistics.median(ts), "reps": a.reps,
                     "all_ms": ts})
        print(f"skimage {w}x{h} K={K} L={L}: median {statistics.median(ts):.1f} ms",
              file=sys.stderr)
    print(json.dumps({"tool": "bench-skimage", "skimage": skimage.__version__,
                      "numpy": np.__version__, "threads": 1, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
