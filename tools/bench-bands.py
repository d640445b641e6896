#!/usr/bin/env python3
"""bench-bands.py - an image larger than memory (issue 30): an N x N 8-bit tiled TIFF
(default 100,000^2 = 10 gigapixels; made here) through entropy-stream in bands, K=15 L=256,
to --stats and to a gray8 tiled TIFF, in Mpixel/s against libtiff reading and writing the
same TIFFs alone in the same run, which is the floor (issue 30's target: >= 0.8x of it):

  --stats        against `tiffinfo -D` (every tile of the input decoded, nothing written)
  -o gray8 .tif  against `tiffcp -8 -m 0 -c zstd` (decode the input, encode an 8-bit zstd
                 BigTIFF in the input's 256 x 256 tiles, no predictor: what our writer does;
                 tiffcp 4.5 holds the whole image to do it, so -m 0 lifts its 256 MiB limit:
                 10 GB of memory at 100,000^2)

The input is made of four 256 x 256 tiles of samples/camera.png (tile (ty, tx) is
(ty + tx) % 4), encoded once with deflate and written 150,000+ times by tifffile, so a
10-gigapixel TIFF takes seconds to make and its tiles a few GB of disk.
Each command runs --repeat times (median), after one untimed run of `tiffinfo -D` that puts
the input in the page cache; peak RSS (/usr/bin/time -f %M) is printed with each.

  python3 tools/bench-bands.py                      # the GPU machine: 100,000^2
  python3 tools/bench-bands.py --size 20000 -- --device cpu   # the CPU build machine
Arguments after -- go to entropy-stream (--device, --gpus, --band-rows, ...).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
from PIL import Image

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def timed(cmd, label):
    """Runs cmd under /usr/bin/time; returns (seconds, peak RSS MB)."""
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    el = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"bench-bands: {label} failed (exit {p.returncode}): {p.stderr[-600:]}")
    try:
        rss = int(p.stderr.strip().splitlines()[-1]) / 1024
    except (IndexError, ValueError):
        rss = float("nan")
    return el, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100000, help="image side [100000]")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command [1]")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "tools", "entropy-stream"))
    ap.add_argument("--dir", default=None, help="where the TIFFs go [a temporary directory]")
    ap.add_argument("extra", nargs="*", help="after --: arguments for entropy-stream")
    a = ap.parse_args()
    n = a.size
    px = n * n
    T = 256
    cam = np.asarray(Image.open(os.path.join(ROOT, "samples", "camera.png")).convert("L"))
    tiles = [np.ascontiguousarray(cam[i // 2 * T:(i // 2 + 1) * T, i % 2 * T:(i % 2 + 1) * T])
             for i in range(4)]
    enc = [zlib.compress(t.tobytes(), 6) for t in tiles]
    import tifffile
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        src = os.path.join(tmp, "in.tif")
        nt = (n + T - 1) // T

        def gen():
            for ty in range(nt):
                for tx in range(nt):
                    yield enc[(ty + tx) % 4]
        t0 = time.time()
        with tifffile.TiffWriter(src, bigtiff=True) as tw:
            tw.write(gen(), shape=(n, n), dtype=np.uint8, tile=(T, T), compression="zlib",
                     metadata=None)
        print(f"input: {n} x {n} 8-bit ({px / 1e9:.2f} Gpixel), tiles {T}, deflate, "
              f"{os.path.getsize(src) / 1e6:.0f} MB, made in {time.time() - t0:.1f} s")
        subprocess.run(["tiffinfo", "-D", src], capture_output=True)  # page cache
        es = [a.bin, src, "-w", "15", "-L", "256", "--max-pixels", str(max(px, 1 << 31)),
              "-q"] + a.extra
        out = os.path.join(tmp, "out.tif")
        rows = [
            ("read alone (tiffinfo -D)", ["tiffinfo", "-D", src], None),
            ("entropy-stream --stats", es + ["--stats", os.path.join(tmp, "s.csv"), "-y"], 0),
            ("read+write alone (tiffcp, gray8 zstd tiled)",
             ["tiffcp", "-8", "-m", "0", "-c", "zstd", src, out], None),
            ("entropy-stream -o gray8 .tif", es + ["--format", "gray8", "-o", out, "-y"], 2),
        ]
        res = []
        for label, cmd, floor in rows:
            runs = []
            for _ in range(a.repeat):
                if os.path.exists(out):
                    os.unlink(out)
                runs.append(timed(cmd, label))
            el = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            res.append(el)
            line = f"{label:45s} {el:8.2f} s {px / el / 1e6:9.1f} Mpixel/s  peak RSS {rss:6.0f} MB"
            if floor is not None:
                line += f"  {res[floor] / el:5.2f}x of the floor"
            print(line)
        with open(os.path.join(tmp, "s.csv")) as f:
            rec = f.read().strip().splitlines()[-1].split(",")
        print(f"--stats record: width {rec[3]} height {rec[4]} mean {rec[5]} std {rec[6]}")


if __name__ == "__main__":
    main()
