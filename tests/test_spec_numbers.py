#!/usr/bin/env python3
"""test_spec_numbers.py - the numbers a user gets, against SPEC.md section 1 and the statistics
of section 2, from an independent plain double-precision reference written here in numpy
(nothing is taken from the program's own tables or code).

The CLI runs on small random PNGs of odd sizes, written here byte by byte, and its outputs are
read back by this script (.npy maps, --stats CSV and JSONL, gray8 / gray16 / heat PNGs):
- maps: 1x1, 1xN, Nx1 and larger; K = 1 .. 255 (windows larger than the image, where
  reflect repeats as numpy.pad's 'symmetric' mode); square and disk (dx*dx + dy*dy <= r*r,
  scikit-image's morphology.disk); clip and reflect; L = 2 .. 256 for 8-bit input and
  L = 3 .. 65536 for 16-bit input; bits and nats. Tolerance: |H - ref| <= 2.4e-7 * max(ref, 1)
  + 1e-7 (float32 rounding of a double reference; S in 2^-26 fixed point adds < 1e-8).
- statistics: mean and population std of the float32 map (1e-9 relative / 1e-6), min and max
  exactly the map's, global_entropy_levels: the entropy of the quantized levels (1e-9),
  global_entropy: FFmpeg's entropy filter on the raw samples (its single-precision sum,
  reproduced here: the same bits; checked against ffmpeg itself, 8- and 16-bit, at L = 16),
  the histogram in --stats-bins equal bins over [0, hmax] (a value at hmax in the last bin, so
  the bins sum to W*H), CSV and JSONL the same numbers.
- PNG colour: grey of 1, 2, 4, 8, 16 bits, RGB, RGBA, grey+alpha (8 and 16 bits), palette with
  and without tRNS, Adam7 interlaced: the grey (SPEC's integer luma in the image's own depth)
  seen through --format gray8 --overlay 0 and through the 16-bit levels of the map.
- rendering: gray8 and gray16 round(v * 255) / round(v * 65535) of v = clamp(H / hmax) (the
  largest possible H maps to 255 / 65535; halves up, in exact arithmetic), --range auto (a constant map: 0, no division by
  zero), --overlay A blending round(A * 256) / 256 of the heat over the grey, the colormaps'
  end points (matplotlib's, round(x * 255)), and every entry where matplotlib is installed.
- the pts column: the double nearest to pts * time base (y4m and raw at 30000/1001 on standard
  input, the sample clip's 1/12800 against ffprobe's time stamps).
With a GPU (a CUDA build that finds one), the maps and statistics are checked on it too.
"""
import csv
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
except Exception as e:  # pragma: no cover
    print("skipped: numpy not available:", e)
    sys.exit(77)
from es_pngio import png_read  # noqa: E402 (after numpy's check)

ES_BIN = os.environ.get("ES_BIN")
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)

seed = int(os.environ.get("ES_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
# Quick by default: each parameter sweep runs a sample of its combinations in which every value
# of every parameter still occurs (cover() below), drawn from the seed; ES_TEST_FULL=1 runs
# them all (CI does).
FULL = os.environ.get("ES_TEST_FULL", "0") not in ("", "0")
print("test_spec_numbers: seed %d (ES_TEST_SEED to replay), %s" % (
    seed, "full sweeps" if FULL else "sampled sweeps (ES_TEST_FULL=1 for all)"))
rng = np.random.default_rng(seed)
fails = 0
checks = 0


def fail(what):
    global fails
    fails += 1
    print("FAIL:", what)


# ---- PNG writing and reading (plain zlib, independent of libpng) ----

def png_bytes(a, color_type, bit_depth, palette=None, trns=None, interlace=0):
    h, w = a.shape[:2]
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    a = a.reshape(h, w, ch)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

    def rows(sub):
        out = b""
        for row in sub.reshape(sub.shape[0], -1):
            if bit_depth == 16:
                rb = row.astype(">u2").tobytes()
            elif bit_depth == 8:
                rb = row.astype(np.uint8).tobytes()
            else:
                bits = "".join(format(int(v), "0%db" % bit_depth) for v in row)
                bits += "0" * (-len(bits) % 8)
                rb = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
            out += b"\0" + rb
        return out

    if interlace:
        raw = b""
        for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]:
            sub = a[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += rows(sub)
    else:
        raw = rows(a)
    d = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type,
                                                        0, 0, interlace))
    if palette is not None:
        d += chunk(b"PLTE", np.asarray(palette, dtype=np.uint8).tobytes())
        if trns is not None:
            d += chunk(b"tRNS", bytes(trns))
    return d + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


# ---- the reference (SPEC section 1), in doubles ----

def footprint(K, shape):
    r = (K - 1) // 2
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)
            if shape == "square" or dx * dx + dy * dy <= r * r]


def reflect(i, n):
    m = i % (2 * n)
    return 2 * n - 1 - m if m >= n else m


def ref_map(q, K, shape, border, base):
    h, w = q.shape
    offs = footprint(K, shape)
    H = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            if border == "clip":
                vals = [q[y + dy, x + dx] for dy, dx in offs if 0 <= y + dy < h and 0 <= x + dx < w]
            else:
                vals = [q[reflect(y + dy, h), reflect(x + dx, w)] for dy, dx in offs]
            c = np.unique(np.array(vals), return_counts=True)[1].astype(np.float64)
            n = c.sum()
            H[y, x] = max(math.log2(n) - float((c * np.log2(c)).sum()) / n, 0.0)
    return H * (math.log(2) if base == "e" else 1.0)


def ref_hmax(K, shape, L, base):
    return math.log2(min(len(footprint(K, shape)), L)) * (math.log(2) if base == "e" else 1.0)


def ref_global(q):
    c = np.unique(q, return_counts=True)[1].astype(np.float64)
    n = c.sum()
    return max(math.log2(n) - float((c * np.log2(c)).sum()) / n, 0.0)


def ref_global_ffmpeg(img, depth):
    """libavfilter/vf_entropy.c (mode normal) step by step: the histogram of the raw samples
    in ascending order, total, p and the running sum in float32, log2 in double."""
    c = np.bincount(img.astype(np.int64).ravel(), minlength=1 << depth)
    total = np.float32(img.size)
    e = np.float32(0.0)
    for n in c[c > 0]:
        p = np.float32(n) / total
        e = np.float32(float(e) + -math.log2(float(p)) * float(p))
    return float(e)


def luma(r, g, b):
    return (299 * r + 587 * g + 114 * b + 500) // 1000


def run(args):
    return subprocess.run([ES_BIN, "-q", "-y"] + args, capture_output=True, text=True)


def cover(*factors):
    """The combinations of the factors' values to check: all of them with ES_TEST_FULL=1, else
    as many as the largest factor has values, each value of each factor in at least one (a
    random permutation of each factor's values, repeated to that length, paired at random)."""
    if FULL:
        out = [()]
        for f in factors:
            out = [c + (v,) for c in out for v in f]
        return out
    n = max(len(f) for f in factors)
    cols = []
    for f in factors:
        col = []
        while len(col) < n:
            col += [f[i] for i in rng.permutation(len(f))]
        cols.append([col[i] for i in rng.permutation(n)])
    return list(zip(*cols))


# ---- checks ----

def check_map(T, tag, img, depth, K, shape, border, L, base, bins, device):
    """One PNG through the CLI: the map against ref_map, the statistics against the map."""
    global checks
    checks += 1
    src = os.path.join(T, "m.png")
    open(src, "wb").write(png_bytes(img, 0, depth))
    npy, scsv, sjs = (os.path.join(T, n) for n in ("m.npy", "m.csv", "m.jsonl"))
    what = "%s %dx%d d%d K=%d %s %s L=%d base %s bins %d on %s" % (
        tag, img.shape[1], img.shape[0], depth, K, shape, border, L, base, bins, device)
    common = [src, "-w", str(K), "--shape", shape, "--border", border, "-L", str(L), "--base",
              base, "--stats-bins", str(bins), "--device", device]
    p = run(common + ["-o", npy, "--stats", scsv])
    p2 = run(common + ["--stats", sjs])
    if p.returncode or p2.returncode:
        return fail("%s: exit %d/%d: %s%s" % (what, p.returncode, p2.returncode, p.stderr, p2.stderr))
    out = np.load(npy)
    if out.dtype != np.float32 or out.shape != img.shape:
        return fail("%s: .npy is %s %s" % (what, out.dtype, out.shape))
    q = (img.astype(np.int64) * L) >> depth
    ref = ref_map(q, K, shape, border, base)
    d = np.abs(out.astype(np.float64) - ref)
    bad = d > 2.4e-7 * np.maximum(ref, 1.0) + 1e-7
    if bad.any():
        y, x = np.argwhere(bad)[0]
        fail("%s: H(%d, %d) = %.9g, reference %.12g" % (what, x, y, out[y, x], ref[y, x]))
    hm = ref_hmax(K, shape, L, base)
    if out.min() < 0 or out.max() > np.float32(hm):
        fail("%s: values %g..%g outside [0, %.9g]" % (what, out.min(), out.max(), hm))
    row = list(csv.DictReader(open(scsv)))
    js = [json.loads(line) for line in open(sjs)]
    if len(row) != 1 or len(js) != 1:
        return fail("%s: %d CSV and %d JSONL records" % (what, len(row), len(js)))
    row, js = row[0], js[0]
    o = out.astype(np.float64)
    hist = [int(row["hist_%d" % b]) for b in range(bins)]
    want = np.bincount(np.clip(np.floor(o * bins / hm), 0, bins - 1).astype(int).ravel()
                       if hm > 0 else np.zeros(o.size, int), minlength=bins).tolist()
    m = []
    if (int(row["width"]), int(row["height"])) != (img.shape[1], img.shape[0]):
        m.append("size %sx%s" % (row["width"], row["height"]))
    if row["pts"] != "" or js["pts"] is not None:
        m.append("pts of an image %r / %r" % (row["pts"], js["pts"]))
    if abs(float(row["mean"]) - o.mean()) > 1e-9 * max(1.0, o.mean()):
        m.append("mean %s, map's %.17g" % (row["mean"], o.mean()))
    if abs(float(row["std"]) - o.std()) > 1e-6:
        m.append("std %s, map's %.17g" % (row["std"], o.std()))
    if np.float32(row["min"]) != out.min() or np.float32(row["max"]) != out.max():
        m.append("min/max %s %s, map's %r %r" % (row["min"], row["max"], out.min(), out.max()))
    if abs(float(row["global_entropy_levels"]) - ref_global(q)) > 1e-9:
        m.append("global entropy of the levels %s, reference %.17g" % (
            row["global_entropy_levels"], ref_global(q)))
    if float(row["global_entropy"]) != ref_global_ffmpeg(img, depth):
        m.append("global entropy %s, FFmpeg's arithmetic %.17g" % (
            row["global_entropy"], ref_global_ffmpeg(img, depth)))
    # float32 sums: within 1e-5 of the exact entropy of the samples
    if abs(float(row["global_entropy"]) - ref_global(img)) > 1e-5:
        m.append("global entropy %s, exact %.17g" % (row["global_entropy"], ref_global(img)))
    if sum(hist) != img.size:
        m.append("histogram sums to %d for %d pixels" % (sum(hist), img.size))
    if hist != want:
        m.append("histogram %s, from the map %s" % (hist, want))
    for k in ("mean", "std", "min", "max", "global_entropy", "global_entropy_levels", "width",
              "height"):
        if float(row[k]) != js[k]:
            m.append("CSV %s %s, JSONL %r" % (k, row[k], js[k]))
    if hist != js["hist"]:
        m.append("CSV and JSONL histograms differ")
    if m:
        fail("%s: %s" % (what, "; ".join(m)))


def maps(T, device):
    for h, w in [(1, 1), (1, 7), (9, 1), (6, 5), (11, 13)]:
        for depth in (8, 16):
            img = rng.integers(0, 1 << depth, size=(h, w))
            levels = (2, 16, 256) if depth == 8 else (3, 16, 65536)
            combos = cover((1, 3, 5, 9), ("square", "disk"), ("clip", "reflect"))
            # L drawn for each; sampled, every one of the three in each size and depth
            pick = rng.permutation(len(combos)) % 3 if not FULL else None
            for i, (K, shape, border) in enumerate(combos):
                L = levels[pick[i] if not FULL else rng.integers(0, 3)]
                check_map(T, "random", img, depth, K, shape, border, L,
                          "e" if rng.integers(0, 4) == 0 else "2", 16, device)
    # windows larger than the image (the reflection repeats), K up to 255
    for h, w in [(1, 1), (2, 3), (5, 4)]:
        img = rng.integers(0, 256, size=(h, w))
        for K, shape, border in cover((7, 31, 255), ("square", "disk"), ("clip", "reflect")):
            check_map(T, "big window", img, 8, K, shape, border, 256, "2", 7, device)
    img = rng.integers(0, 65536, size=(4, 6))
    check_map(T, "16-bit", img, 16, 255, "disk", "reflect", 65536, "e", 5, device)
    # constant images; bins 1 and 1024
    check_map(T, "constant", np.full((6, 7), 77), 8, 5, "square", "reflect", 16, "2", 3, device)
    check_map(T, "constant", np.full((3, 2), 65535), 16, 3, "disk", "clip", 65536, "2", 1, device)
    img = rng.integers(0, 256, size=(12, 10))
    check_map(T, "bins", img, 8, 5, "square", "clip", 64, "2", 1, device)
    check_map(T, "bins", img, 8, 7, "disk", "reflect", 256, "e", 1024, device)
    check_map(T, "bins", img, 8, 3, "square", "reflect", 9, "2", 9, device)
    # every H exactly on a bin edge (hmax = log2 L exact, h * bins / hmax an integer): the
    # bin above it. 2x8 images seen whole by K = 15; H = 15/8 (counts 8 4 2 1 1) at L = 8 in
    # 392 bins is bin 245 (once 244: bins / hmax was rounded down), H = 25/8 (counts
    # 4 2 2 2 1 1 1 1 1 1) at L = 32 in 184 bins is bin 115.
    for L, bins, counts in ((8, 392, (8, 4, 2, 1, 1)), (32, 184, (4, 2, 2, 2, 1, 1, 1, 1, 1, 1))):
        img = np.repeat([k * 256 // L for k in range(len(counts))], counts).reshape(2, 8)
        check_map(T, "bin edge", img, 8, 15, "square", "clip", L, "2", bins, device)


def colour(T):
    """PNG colour types to grey: gray8 with --overlay 0 is the grey (the high byte of 16-bit
    grey), and a K=3 map at L = 2^depth sees every grey level."""
    global checks
    src, g8, npy = (os.path.join(T, n) for n in ("c.png", "c-g8.png", "c.npy"))
    sizes = [(1, 1), (3, 5), (10, 9)]
    # Sampled: each colour case below (5 grey, 3 kinds x 2 depths of RGB(A) and grey+alpha, 4
    # palettes with and without tRNS) with and without Adam7, each at a size drawn for it.
    size_of = rng.integers(0, len(sizes), size=(2, 5 + 3 * 2 + 4 * 2))
    for si, (h, w) in enumerate(sizes):
        for il in (0, 1):
            cases = []
            for bd in (1, 2, 4, 8, 16):
                v = rng.integers(0, 1 << bd, size=(h, w))
                grey = v * (255 // ((1 << bd) - 1)) if bd < 8 else v
                cases.append(("grey%d" % bd, png_bytes(v, 0, bd, interlace=il), grey, max(bd, 8)))
            for bd in (8, 16):
                px = rng.integers(0, 1 << bd, size=(h, w, 4))
                y = luma(px[..., 0], px[..., 1], px[..., 2])
                cases.append(("rgb%d" % bd, png_bytes(px[..., :3], 2, bd, interlace=il), y, bd))
                cases.append(("rgba%d" % bd, png_bytes(px, 6, bd, interlace=il), y, bd))
                cases.append(("grey+alpha%d" % bd, png_bytes(px[..., :2], 4, bd, interlace=il),
                              px[..., 0], bd))
            for bd in (1, 2, 4, 8):
                n = 1 << bd
                pal = rng.integers(0, 256, size=(n, 3))
                idx = rng.integers(0, n, size=(h, w))
                y = luma(pal[idx, 0], pal[idx, 1], pal[idx, 2])
                cases.append(("palette%d" % bd, png_bytes(idx, 3, bd, pal, interlace=il), y, 8))
                trns = rng.integers(0, 256, size=max(1, n // 2)).tolist()
                cases.append(("palette%d+tRNS" % bd, png_bytes(idx, 3, bd, pal, trns, il), y, 8))
            assert len(cases) == size_of.shape[1]
            for ci, (name, data, grey, depth) in enumerate(cases):
                if not FULL and size_of[il, ci] != si:
                    continue
                checks += 1
                what = "%s%s %dx%d" % (name, " Adam7" if il else "", w, h)
                open(src, "wb").write(data)
                p = run([src, "-o", g8, "--format", "gray8", "--overlay", "0"])
                L = 1 << depth
                p2 = run([src, "-o", npy, "-w", "3", "-L", str(L)])
                if p.returncode or p2.returncode:
                    fail("%s: exit %d/%d: %s%s" % (what, p.returncode, p2.returncode, p.stderr,
                                                   p2.stderr))
                    continue
                got = png_read(g8)[..., 0]
                want = grey >> 8 if depth == 16 else grey
                if (got != want).any():
                    y, x = np.argwhere(got != want)[0]
                    fail("%s: grey(%d, %d) = %d, SPEC's %d" % (what, x, y, got[y, x], want[y, x]))
                ref = ref_map(grey.astype(np.int64), 3, "square", "clip", "2")
                if np.abs(np.load(npy) - ref).max() > 2e-6:
                    fail("%s: the map is not the grey's (16-bit levels)" % what)


CMAP_ENDS = {"inferno": ((0, 0, 4), (252, 255, 164)), "viridis": ((68, 1, 84), (253, 231, 37)),
             "magma": ((0, 0, 4), (252, 253, 191)), "turbo": ((48, 18, 59), (122, 4, 3)),
             "gray": ((0, 0, 0), (255, 255, 255))}


def colormap_luts():
    """matplotlib's tables as round(x * 255) where matplotlib exists, else None."""
    try:
        import matplotlib
        get = matplotlib.colormaps.__getitem__ if hasattr(matplotlib, "colormaps") else None
        if get is None:
            from matplotlib import cm
            get = cm.get_cmap
        luts = {n: np.round(np.array([get(n)(i)[:3] for i in range(256)]) * 255).astype(int)
                for n in ("inferno", "viridis", "magma", "turbo")}
    except Exception:
        return None
    luts["gray"] = np.repeat(np.arange(256)[:, None], 3, 1)
    return luts


def scaled(H, lo, d, top):
    """round(clamp((H - lo) / d, 0, 1) * top), halves up, in exact rationals of the doubles
    (0 where d == 0)."""
    from fractions import Fraction
    if not d > 0:
        return np.zeros(H.shape, dtype=np.int64)
    lo, d = Fraction(lo), Fraction(d)
    return np.array([min(max(math.floor((Fraction(float(h)) - lo) / d * top + Fraction(1, 2)),
                             0), top) for h in H.ravel()], dtype=np.int64).reshape(H.shape)


def rendering(T):
    global checks
    src, out, npy = (os.path.join(T, n) for n in ("r.png", "r-out.png", "r.npy"))
    luts = colormap_luts()
    if luts is None:
        print("note: no matplotlib: colormaps checked at their end points only")
    # An image whose map reaches 0 and the largest possible value: a flat left part and, on
    # the right, 3x3 windows of nine distinct levels (H = log2 9 with reflect or inside).
    h, w = 9, 12
    ends = np.zeros((h, w), dtype=np.int64)
    for y in range(h):
        for x in range(6, w):
            ends[y, x] = 20 * ((x % 3) * 3 + y % 3) + 10
    cases = [(ends, 8, 3, 256, "reflect"), (rng.integers(0, 256, size=(7, 10)), 8, 5, 16, "clip"),
             (rng.integers(0, 65536, size=(8, 5)), 16, 3, 7, "clip"),
             (np.full((4, 5), 9), 8, 3, 16, "clip"),
             (np.tile(np.array([[0, 255], [255, 0]]), (3, 4)), 8, 3, 16, "reflect"),
             # H = 2.5 everywhere (counts 4 4 4 1 1 1 1 seen whole by K = 15), hmax = log2 8:
             # 2.5 / 3 * 255 = 212.5 and * 65535 = 54612.5 round up (once 212 and 54612)
             (np.repeat(np.arange(7) * 32, (4, 4, 4, 1, 1, 1, 1)).reshape(2, 8), 8, 15, 8,
              "clip")]
    for img, depth, K, L, border in cases:
        open(src, "wb").write(png_bytes(img, 0, depth))
        base = [src, "-w", str(K), "-L", str(L), "--border", border]
        p = run(base + ["-o", npy])
        if p.returncode:
            fail("rendering: map: exit %d: %s" % (p.returncode, p.stderr))
            continue
        H = np.load(npy).astype(np.float64)
        grey8 = img >> 8 if depth == 16 else img
        for fmt in ("gray8", "gray16", "heat"):
            cmaps = ["inferno"] if fmt != "heat" else list(CMAP_ENDS)
            combos = cover(("fixed", "auto"), cmaps,
                           [None] if fmt == "gray16" else [None, 0, 0.3, 1])
            if img is ends:  # the top of the scale below, for every colormap however sampled
                combos += [("fixed", c, None) for c in cmaps if ("fixed", c, None) not in combos]
            for rng_, cmap, ov in combos:
                checks += 1
                args = base + ["--format", fmt, "--range", rng_, "-o", out]
                if fmt == "heat":  # (refused with gray8 and gray16, which ignore it)
                    args += ["--colormap", cmap]
                if ov is not None:
                    args += ["--overlay", str(ov)]
                what = "%s %s %s overlay %s on %dx%d d%d" % (fmt, rng_, cmap, ov,
                                                            img.shape[1], img.shape[0],
                                                            depth)
                p = run(args)
                if p.returncode:
                    fail("%s: exit %d: %s" % (what, p.returncode, p.stderr))
                    continue
                got = png_read(out)
                if rng_ == "fixed":
                    lo, d = 0.0, ref_hmax(K, "square", L, "2")
                else:
                    lo, d = H.min(), H.max() - H.min()
                if fmt == "gray16":
                    want = scaled(H, lo, d, 65535)[..., None]
                else:
                    i8 = scaled(H, lo, d, 255)
                    if fmt == "gray8":
                        want = i8[..., None]
                    elif luts is not None:
                        want = luts[cmap][i8]
                    else:
                        want = None
                        lo_c, hi_c = CMAP_ENDS[cmap]
                        for idx, rgb in ((0, lo_c), (255, hi_c)):
                            sel = i8 == idx
                            if ov is None and sel.any() and \
                                    (got[sel] != np.array(rgb)).any():
                                fail("%s: colormap index %d is not %s" % (what, idx, rgb))
                    if want is not None and ov is not None:
                        a = int(round(ov * 256))
                        want = (want * a + grey8[..., None] * (256 - a) + 128) >> 8
                if want is not None and (got != want).any():
                    y, x = np.argwhere((got != want).any(axis=2))[0]
                    fail("%s: pixel (%d, %d) = %s, want %s (H %.9g)" % (
                        what, x, y, got[y, x].tolist(), want[y, x].tolist(), H[y, x]))
                if rng_ == "fixed" and img is ends:
                    # the largest possible value is the top of the scale
                    top = got[H == H.max()]
                    want_top = {"gray8": [255], "gray16": [65535]}.get(
                        fmt, list(CMAP_ENDS[cmap][1]))
                    if ov is None and (top != np.array(want_top)).any():
                        fail("%s: the largest H renders as %s, not %s" % (
                            what, top[0].tolist(), want_top))


def ffmpeg_global(T):
    """SPEC section 2: global_entropy is FFmpeg's entropy filter (mode normal) on the grey
    samples at the input's bit depth, whatever L: the same six decimals ffmpeg prints, 8- and
    16-bit, at the default L = 16 (the levels' entropy is another column)."""
    global checks
    if not shutil.which("ffmpeg"):
        print("note: no ffmpeg: the entropy filter comparison skipped")
        return
    src, scsv = os.path.join(T, "f.png"), os.path.join(T, "f.csv")
    for depth, h, w in [(8, 1, 1), (8, 7, 9), (8, 40, 33), (8, 64, 100), (16, 1, 1), (16, 7, 9),
                        (16, 40, 33), (16, 64, 100)]:
        checks += 1
        top = 1 << depth
        img = rng.integers(0, top, size=(h, w)) // rng.integers(1, 64)
        open(src, "wb").write(png_bytes(img, 0, depth))
        p = run([src, "--stats", scsv])
        fmt = "gray" if depth == 8 else "gray16le"
        f = subprocess.run(["ffmpeg", "-v", "error", "-i", src, "-vf",
                            "format=%s,entropy,metadata=print:file=-" % fmt, "-f", "null", "-"],
                           capture_output=True, text=True)
        vals = [line.split("=", 1)[1] for line in f.stdout.splitlines()
                if line.startswith("lavfi.entropy.entropy.normal.")]
        if p.returncode:
            fail("%dx%d d%d: exit %d: %s" % (w, h, depth, p.returncode, p.stderr))
            continue
        if f.returncode or not vals:
            print("note: ffmpeg's entropy filter gave nothing (%s)" % f.stderr.strip()[:200])
            return
        ge = float(list(csv.DictReader(open(scsv)))[0]["global_entropy"])
        if "%f" % ge != vals[0]:
            fail("%dx%d d%d: global entropy %.9g (%f), ffmpeg's entropy filter %s" % (
                w, h, depth, ge, ge, vals[0]))


def pts_column(T):
    """The pts column is the double nearest to pts * time base (as Python's Fraction gives it),
    not a product rounded twice: frame 35 of the sample clip (time base 1/12800) is at 1.4 s,
    once written 1.4000000000000001; y4m at 30000:1001 and raw @30000/1001 frames likewise."""
    global checks
    from fractions import Fraction
    scsv = os.path.join(T, "p.csv")
    n = 40
    frame = bytes(8)
    y4m = b"YUV4MPEG2 W4 H2 F30000:1001 Cmono\n" + b"".join(b"FRAME\n" + frame for _ in range(n))
    cases = [("y4m 30000:1001", ["-"], y4m, [Fraction(i * 1001, 30000) for i in range(n)]),
             ("raw @30000/1001", ["-", "--raw", "gray8:4x2@30000/1001"], frame * n,
              [Fraction(i * 1001, 30000) for i in range(n)])]
    clip = os.path.join(os.environ.get("ES_SRC", ""), "samples", "clip.mp4")
    if os.environ.get("ES_HAVE_FFMPEG", "0") in ("1", "ON", "TRUE", "true") and \
            os.path.exists(clip) and shutil.which("ffprobe"):
        f = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=time_base:frame=best_effort_timestamp", "-of", "csv=p=0",
                            clip], capture_output=True, text=True)
        lines = [x.strip().rstrip(",") for x in f.stdout.split()]
        tb = [x for x in lines if "/" in x]
        ts = [int(x) for x in lines if x.lstrip("-").isdigit()]
        if f.returncode == 0 and tb and ts:
            num, den = (int(x) for x in tb[0].split("/"))
            cases.append(("samples/clip.mp4", [clip], None, [Fraction(t * num, den) for t in ts]))
    for name, args, data, want in cases:
        checks += 1
        p = subprocess.run([ES_BIN, "-q", "-y"] + args + ["--stats", scsv], input=data,
                           capture_output=True)
        if p.returncode == 2 and b"no yuv4mpegpipe demuxer" in p.stderr:
            print("note: %s skipped: this libavformat reads no y4m" % name)
            continue
        if p.returncode:
            fail("%s: exit %d: %s" % (name, p.returncode, p.stderr.decode(errors="replace")))
            continue
        got = [r["pts"] for r in csv.DictReader(open(scsv))]
        if len(got) != len(want):
            fail("%s: %d records for %d frames" % (name, len(got), len(want)))
            continue
        for i, (g, w) in enumerate(zip(got, want)):
            if float(g) != float(w):
                fail("%s: frame %d at %s s, not %r (%s)" % (name, i, g, float(w), w))
                break


def gpu_usable(T):
    if os.environ.get("ES_HAVE_CUDA", "0") not in ("1", "ON", "TRUE", "true"):
        return False
    src = os.path.join(T, "probe.png")
    open(src, "wb").write(png_bytes(np.zeros((2, 2), dtype=np.int64), 0, 8))
    return run([src, "--device", "gpu", "--stats", os.path.join(T, "probe.csv")]).returncode == 0


with tempfile.TemporaryDirectory() as T:
    maps(T, "cpu")
    colour(T)
    rendering(T)
    ffmpeg_global(T)
    if os.environ.get("ES_HAVE_FFMPEG", "0") in ("1", "ON", "TRUE", "true"):
        pts_column(T)
    if gpu_usable(T):
        maps(T, "gpu")
    else:
        print("note: no GPU: maps checked on the CPU only")

print("test_spec_numbers: %d checks, %d failure(s)" % (checks, fails))
sys.exit(1 if fails else 0)
