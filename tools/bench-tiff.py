#!/usr/bin/env python3
"""TIFF stack benchmark (issue 28): a 16-bit W x W TIFF stack of N pages (default 2048^2,
100 pages, deflate in strips, as microscopes write them) through entropy-stream, against
decoding the same file alone, in one run on the machine it runs on.

  bench-tiff.py --bin build/tools/entropy-stream [--pages 100] [--size 2048]
                [--compression zlib|none] [--device cpu] [--reps 3] [--out DIR]

Rows, each the median wall time of --reps runs (after one warm-up run), as pages per second:
  decode alone   `tiffinfo -D stack.tif`: libtiff reads and decodes every strip of every
                 page and shows nothing (tiffcp cannot write to /dev/null: libtiff reads
                 back what it writes there, "IO error writing tag data")
  decode + copy  `tiffcp -c none stack.tif plain.tif`: decoded and written raw to a file
  --stats        entropy-stream stack.tif --stats s.csv (decode + entropy + statistics)
  -o maps.tif    entropy-stream stack.tif -o maps.tif (float32, tiled, zstd: + the encode)
  -o maps.npy    entropy-stream stack.tif -o maps.npy
and the entropy's cost over decoding: (t_stats - t_decode) / t_decode. The check beside the
times: the statistics file holds one record a page, in page order, and page 0's record is
the record of page 0 written alone as a PNG (the PNG path, another reader), whose mean H is
not trivially 0. Needs numpy and
tifffile (python3-tifffile) to make the stack, and libtiff-tools for tiffinfo and tiffcp. Writes
DIR/tiff.json."""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
import tifffile


def timed(cmd, reps):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def png16(path, a):
    h, w = a.shape
    rows = a.astype(">u2").tobytes()
    raw = b"".join(b"\0" + rows[y * 2 * w:(y + 1) * 2 * w] for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--compression", default="zlib", choices=["zlib", "none"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--extra", default="", help="more entropy-stream options, e.g. '-w 9 -L 256'")
    a = ap.parse_args()
    if not shutil.which("tiffcp") or not shutil.which("tiffinfo"):
        sys.exit("bench-tiff: tiffcp/tiffinfo not found (Debian's libtiff-tools)")
    tmp = a.out or tempfile.mkdtemp(prefix="bench-tiff-")
    os.makedirs(tmp, exist_ok=True)
    stack = os.path.join(tmp, "stack.tif")
    n, w = a.pages, a.size
    # Content that compresses as real data does: a smooth field with sensor noise, each page
    # shifted (a time series), over the whole 16-bit range (12-bit camera data stored as is
    # would be level 0 everywhere at L=16: a map of zeros measures nothing).
    rng = np.random.default_rng(28)
    y, x = np.mgrid[0:w, 0:w].astype(np.float32)
    t0 = time.perf_counter()
    with tifffile.TiffWriter(stack, bigtiff=n * w * w * 2 > 3 << 30) as tw:
        for i in range(n):
            base = 32768 + 24000 * np.sin((x + 7 * i) / 97.0) * np.cos((y - 3 * i) / 131.0)
            page = (base + rng.normal(0, 1500, (w, w))).clip(0, 65535).astype(np.uint16)
            if i == 0:
                png16(os.path.join(tmp, "page0.png"), page)
            tw.write(page, photometric="minisblack", rowsperstrip=64,
                     compression=None if a.compression == "none" else "zlib")
    made = time.perf_counter() - t0
    size = os.path.getsize(stack)
    es = [a.bin, "--device", a.device, "-q", "--no-progress", "-y"] + a.extra.split()
    rows = {}
    rows["decode alone (tiffinfo -D)"] = timed(["tiffinfo", "-D", stack], a.reps)
    rows["decode + raw copy (tiffcp -c none)"] = timed(
        ["tiffcp", "-c", "none", stack, os.path.join(tmp, "plain.tif")], a.reps)
    rows["entropy --stats"] = timed(es + [stack, "--stats", os.path.join(tmp, "s.csv")], a.reps)
    rows["entropy -o maps.tif"] = timed(es + [stack, "-o", os.path.join(tmp, "maps.tif")], a.reps)
    rows["entropy -o maps.npy"] = timed(es + [stack, "-o", os.path.join(tmp, "maps.npy")], a.reps)
    # the check: one record a page, in order; page 0's equals the PNG path's
    recs = open(os.path.join(tmp, "s.csv")).read().strip().split("\n")[1:]
    subprocess.run(es + [os.path.join(tmp, "page0.png"), "--stats", os.path.join(tmp, "p0.csv")],
                   check=True)
    p0 = open(os.path.join(tmp, "p0.csv")).read().strip().split("\n")[1].split(",")
    mean0 = float(p0[5])
    ok = (mean0 > 0.5 and len(recs) == n and [r.split(",")[1] for r in recs] == [str(i) for i in range(n)] and
          recs[0].split(",")[5:] == p0[5:])
    dec = rows["decode alone (tiffinfo -D)"]
    print("bench-tiff: %d pages of %dx%d 16-bit, %s, %.0f MB on disk (made in %.1f s), "
          "device %s, median of %d" % (n, w, w, a.compression, size / 1e6, made, a.device, a.reps))
    for name, t in rows.items():
        print("  %-46s %7.2f s  %6.1f pages/s" % (name, t, n / t))
    over = (rows["entropy --stats"] - dec) / dec
    print("  entropy's cost over decoding (--stats): %+.0f%%   check: %s" %
          (100 * over, "ok (%d records, page 0 = PNG path)" % n if ok else "FAILED"))
    with open(os.path.join(tmp, "tiff.json"), "w") as f:
        json.dump({"pages": n, "size": w, "compression": a.compression, "device": a.device,
                   "bytes": size, "seconds": rows, "overhead_stats": over, "check": ok}, f,
                  indent=1)
    if not a.out:
        shutil.rmtree(tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
