#!/usr/bin/env python3
"""Still-image batch benchmark (issue 28): a directory of JPEG photos through entropy-stream
against the decode alone (djpeg), in one run, on the machine it runs on.

  bench-stills.py --bin build/tools/entropy-stream --out DIR [--files 200] [--reps 3]
                  [--device cpu] [--jobs N]

The photos are made from samples/*.png (scaled to 1..4 megapixels, each a different size,
crop and flip of one of them, quality 85..95, 4:2:0), once, into DIR/jpegs.
Rows, each the median of --reps runs (one warm-up first):
  djpeg       `djpeg -grayscale -outfile /dev/null` on every file, --jobs at a time (xargs
              -P): libjpeg-turbo's decode of the Y plane, what entropy-stream reads
  stats       entropy-stream DIR --stats s.csv: decode + entropy (+ the statistics), no map
              written; the check beside it is one record per file
  heat        entropy-stream DIR -o out/: decode + entropy + PNG heat maps written
The ratio stats/djpeg is the cost of the entropy over decoding (the issue asks under 1.2).
Writes DIR/stills.json."""
import argparse
import glob
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time


def make_photos(src_dir, out_dir, n, seed=28):
    from PIL import Image

    os.makedirs(out_dir, exist_ok=True)
    have = sorted(glob.glob(os.path.join(out_dir, "*.jpg")))
    if len(have) == n:
        return have
    for f in have:
        os.remove(f)
    rng = random.Random(seed)
    photos = []
    for p in sorted(glob.glob(os.path.join(src_dir, "*.png"))):
        im = Image.open(p)
        if im.mode in ("RGB", "RGBA", "P", "L"):  # moon16 (16-bit) is no photo for a JPEG
            photos.append(im.convert("RGBA").convert("RGB"))
    paths = []
    for i in range(n):
        im = photos[i % len(photos)]
        mp = rng.uniform(1.0, 4.0) * 1e6
        aspect = im.width / im.height * rng.uniform(0.8, 1.25)
        w = int((mp * aspect) ** 0.5)
        h = int(mp / w)
        big = im.resize((w, h), Image.BICUBIC)
        if rng.random() < 0.5:
            big = big.transpose(Image.FLIP_LEFT_RIGHT)
        p = os.path.join(out_dir, "photo_%03d.jpg" % i)
        big.save(p, quality=rng.randint(85, 95))
        paths.append(p)
    return paths


def timed(cmd, reps, check=None):
    """Median wall time of reps runs, and the median CPU time (user + system, of every process
    the run started): on a shared machine the CPU time says more than the wall time."""
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # warm-up: the files in the page cache
    ts, cpu = [], []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if check:
            check()
    return statistics.median(ts), statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="djpeg processes at a time (default: every core, as entropy-stream's "
                         "decode workers)")
    ap.add_argument("--samples", default=os.path.join(os.path.dirname(__file__), "..", "samples"))
    a = ap.parse_args()
    if not shutil.which("djpeg"):
        sys.exit("bench-stills: djpeg not found (Debian: libjpeg-turbo-progs)")
    os.makedirs(a.out, exist_ok=True)
    jdir = os.path.join(a.out, "jpegs")
    paths = make_photos(a.samples, jdir, a.files)
    mpix = 0
    from PIL import Image
    for p in paths:
        with Image.open(p) as im:
            mpix += im.width * im.height / 1e6
    n = len(paths)
    print("%d JPEGs, %.0f Mpixel in all (%.2f MP a file), %d cores, device %s" %
          (n, mpix, mpix / n, os.cpu_count(), a.device))

    rows, cpu = {}, {}
    t, cpu["djpeg"] = timed("ls %s/*.jpg | xargs -P %d -n 8 sh -c 'for f; do djpeg -grayscale -outfile "
                  "/dev/null \"$f\" || exit 1; done' sh" % (jdir, a.jobs), a.reps)
    rows["djpeg"] = t
    csv = os.path.join(a.out, "s.csv")

    def check_stats():
        recs = len(open(csv).read().splitlines()) - 1
        if recs != n:
            sys.exit("bench-stills: %d records for %d files" % (recs, n))

    base = "%s --device %s -q -y %s" % (a.bin, a.device, jdir)
    t, cpu["stats"] = timed(base + " --stats " + csv, a.reps, check_stats)
    rows["stats"] = t
    heat = os.path.join(a.out, "heat")
    t, cpu["heat"] = timed(base + " -o " + heat, a.reps)
    rows["heat"] = t
    written = len(glob.glob(os.path.join(heat, "*.png")))
    for k, v in rows.items():
        print("%-6s %7.2f s  %6.1f files/s  %6.1f Mpixel/s   CPU %7.2f s" %
              (k, v, n / v, mpix / v, cpu[k]))
    print("check: %d stats records, %d heat maps written, for %d files" % (n, written, n))
    ratio = rows["stats"] / rows["djpeg"]
    print("entropy over decoding: stats/djpeg = %.2f wall, %.2f CPU (issue 28 asks under 1.20); "
          "heat/djpeg = %.2f wall" % (ratio, cpu["stats"] / cpu["djpeg"], rows["heat"] / rows["djpeg"]))
    json.dump({"files": n, "mpixel": mpix, "cores": os.cpu_count(), "device": a.device,
               "jobs": a.jobs, "seconds": rows, "cpu_seconds": cpu, "ratio_stats_djpeg": ratio},
              open(os.path.join(a.out, "stills.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
