#!/usr/bin/env python3
"""SPEC section 1 through the CLI, against an independent double-precision reference written
here in numpy (not the project's C reference): fresh random PNGs (8- and 16-bit grey, RGB of
both depths for the integer luma rule) of tiny and odd sizes (1x1, 1xN, Nx1, windows larger
than the image), every shape and border (reflect repeating as numpy.pad's 'symmetric'),
K from 1 to 255, L from 2 to 65536, --base e. Each map (.npy) is compared with the
reference to float32 rounding; each --stats record (mean, std, min, max, the global entropy
of the quantized levels, the histogram of H) with the same reference map. Every case runs on
the CPU engine and on `--device auto --cpu-below 0` (the GPU where there is one, else the CPU
again). The seed is new each run and printed; ES_SEED=n repeats a run."""
import csv
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

try:
    import numpy as np
except Exception as e:  # pragma: no cover - environment without numpy
    print("skipped: numpy not available:", e)
    sys.exit(77)

ES_BIN = os.environ.get("ES_BIN")
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)

SEED = int(os.environ.get("ES_SEED", int(time.time() * 1000) % 1000000007))
print("seed", SEED, "(ES_SEED=%d repeats this run)" % SEED)
rng = np.random.default_rng(SEED)


def png_write(path, a, depth):
    """A plain PNG (no interlace, filter 0): grey if a is 2-D, RGB if H x W x 3."""
    h, w = a.shape[:2]
    ctype = 0 if a.ndim == 2 else 2

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    dt = ">u2" if depth == 16 else "u1"
    raw = b"".join(b"\x00" + np.ascontiguousarray(a[y]).astype(dt).tobytes() for y in range(h))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)


def grey_of(img):
    """SPEC: Y = (299 R + 587 G + 114 B + 500) // 1000 in the image's own depth."""
    if img.ndim == 2:
        return img.astype(np.int64)
    r, g, b = (img[..., i].astype(np.int64) for i in range(3))
    return (299 * r + 587 * g + 114 * b + 500) // 1000


def reference(q, k, shape, border):
    """H(p) in double for every pixel, straight from the definition."""
    h, w = q.shape
    r = (k - 1) // 2
    offs = [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)
            if shape == "square" or dx * dx + dy * dy <= r * r]
    if border == "reflect":
        p = np.pad(q, r, mode="symmetric")
    else:
        p = np.pad(q, r, mode="constant", constant_values=-1)
    stack = np.stack([p[r + dy:r + dy + h, r + dx:r + dx + w] for dy, dx in offs])
    out = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            v = stack[:, y, x]
            _, c = np.unique(v[v >= 0], return_counts=True)
            n = c.sum()
            out[y, x] = math.log2(n) - float((c * np.log2(c)).sum()) / n
    return out, len(offs)


failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL", msg)


def check_stats(tag, rec, ref32, q, levels, area, bins, nats):
    """One --stats record against the map the reference gives (float32, as the CLI's)."""
    h64 = ref32.astype(np.float64)
    got = {k: float(rec[k]) for k in ("mean", "std", "min", "max", "global_entropy")}
    want = {"mean": h64.mean(), "std": h64.std(), "min": h64.min(), "max": h64.max()}
    for key, val in want.items():
        if abs(got[key] - val) > 1e-6 * max(1.0, abs(val)):
            fail("%s: stats %s %r, reference %r" % (tag, key, got[key], val))
    _, c = np.unique(q, return_counts=True)
    ge = math.log2(q.size) - float((c * np.log2(c)).sum()) / q.size
    if abs(got["global_entropy"] - ge) > 1e-9:
        fail("%s: global entropy %r, reference %r" % (tag, got["global_entropy"], ge))
    # The histogram: floor(h * bins / hmax) clamped to the last bin. Values within 1e-9 of a
    # bin edge may fall either side (hmax's last bit); every pixel is in exactly one bin.
    hmax = math.log2(min(area, levels)) * (math.log(2) if nats else 1.0)
    hist = np.array([int(rec["hist_%d" % b]) for b in range(bins)])
    scale = bins / hmax if hmax > 0 else 0.0  # one level or a 1-pixel window: H is 0, bin 0
    lo = np.clip(np.floor(h64 * scale * (1 - 1e-9)), 0, bins - 1).astype(int)
    hi = np.clip(np.floor(h64 * scale * (1 + 1e-9)), 0, bins - 1).astype(int)
    sure = np.bincount(lo[lo == hi], minlength=bins)
    unsure = np.bincount(np.concatenate([lo[lo != hi], hi[lo != hi]]), minlength=bins)
    if hist.sum() != q.size or np.any(hist < sure) or np.any(hist > sure + unsure):
        fail("%s: histogram %s, reference %s (+ up to %s on edges)" % (tag, hist, sure, unsure))


def case(tmp, img, depth, k, levels, shape, border, nats=False):
    global failures
    name = "%dx%d_%s_k%d_L%d_%s_%s%s" % (img.shape[1], img.shape[0], "rgb" if img.ndim == 3 else
                                         "g", k, levels, shape, border, "_e" if nats else "")
    src = os.path.join(tmp, name + ".png")
    png_write(src, img, depth)
    q = (grey_of(img) * levels) >> depth
    ref, area = reference(q, k, shape, border)
    if nats:
        ref = ref * math.log(2)
    bins = int(rng.integers(1, 40))
    for dev in (["--device", "cpu"], ["--device", "auto", "--cpu-below", "0"]):
        out = os.path.join(tmp, name + ".npy")
        st = os.path.join(tmp, name + ".csv")
        cmd = [ES_BIN, src, "-o", out, "--stats", st, "--stats-bins", str(bins), "-y", "-q",
               "-w", str(k), "-L", str(levels), "--shape", shape, "--border", border] + dev
        if nats:
            cmd += ["--base", "e"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        tag = "%s %s" % (name, dev[1])
        if p.returncode != 0:
            fail("%s: exit %d: %s" % (tag, p.returncode, p.stderr.strip()))
            continue
        got = np.load(out)
        if got.dtype != np.float32 or got.shape != q.shape:
            fail("%s: map %s %s, want float32 %s" % (tag, got.dtype, got.shape, q.shape))
            continue
        err = np.abs(got.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))
        if err.max() > 3e-7:
            y, x = np.unravel_index(err.argmax(), err.shape)
            fail("%s: H(%d,%d) = %r, reference %r" % (tag, x, y, float(got[y, x]), ref[y, x]))
        with open(st, newline="") as f:
            recs = list(csv.DictReader(f))
        if len(recs) != 1:
            fail("%s: %d stats records" % (tag, len(recs)))
            continue
        if int(recs[0]["width"]) != q.shape[1] or int(recs[0]["height"]) != q.shape[0]:
            fail("%s: stats size %sx%s" % (tag, recs[0]["width"], recs[0]["height"]))
        check_stats(tag, recs[0], got, q, levels, area, bins, nats)


def rand_img(h, w, depth, rgb=False):
    shape = (h, w, 3) if rgb else (h, w)
    return rng.integers(0, 1 << depth, shape, dtype=np.uint16 if depth == 16 else np.uint8)


with tempfile.TemporaryDirectory() as tmp:
    n = 0
    for h, w in [(1, 1), (1, 7), (6, 1), (2, 3), (5, 4), (13, 11)]:
        for k in (1, 3, 5, 9, 15):
            shape = str(rng.choice(["square", "disk"]))
            border = str(rng.choice(["clip", "reflect"]))
            levels = int(rng.choice([2, 3, 16, 97, 256]))
            case(tmp, rand_img(h, w, 8), 8, k, levels, shape, border)
            n += 1
    for levels in (2, 3, 1000, 65536):
        for border in ("clip", "reflect"):
            h, w = (int(v) for v in rng.integers(2, 12, 2))
            case(tmp, rand_img(h, w, 16), 16, int(rng.choice([3, 5, 7])), levels,
                 str(rng.choice(["square", "disk"])), border)
            n += 1
    case(tmp, rand_img(6, 9, 8), 8, 255, 16, "square", "reflect")
    case(tmp, rand_img(7, 5, 8), 8, 255, 256, "disk", "clip")
    case(tmp, rand_img(9, 8, 8), 8, 5, 16, "square", "clip", nats=True)
    case(tmp, rand_img(7, 6, 8, rgb=True), 8, 3, 16, "square", "clip")
    case(tmp, rand_img(7, 6, 16, rgb=True), 16, 5, 300, "disk", "reflect")
    n += 5
    print("%d cases, each on two devices: %d failures" % (n, failures))
sys.exit(1 if failures else 0)
