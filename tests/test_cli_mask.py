#!/usr/bin/env python3
"""--mask and --in-range through the CLI (issue 28). On a real photograph (samples/camera.png)
with masks made here (blocks and scattered pixels; all out; all in; one pixel; a 16-bit and an
RGB mask, any non-zero sample inside): the .npy map is NaN exactly outside, and inside equals
scikit-image's rank.entropy(q, footprint, mask=...) on the quantized image (float32 rounding;
where scikit-image is installed), for clip square and disk windows; reflect's inside values
against a direct numpy count of the in-mask pixels of each reflected window; the statistics
(--stats CSV) are those of the inside (numpy on the map); a heat PNG shows H = 0 outside; a
video takes the same mask every frame. Bad input: a mask of another size (image and video),
a missing mask, a second --mask, bad --in-range values: the exit code and one line, no
output left."""
import os
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
try:
    from skimage.filters import rank
    from skimage.morphology import disk
except Exception:  # scikit-image missing: the numpy reference alone
    rank = None

ES_BIN = os.environ.get("ES_BIN")
SRC = os.environ.get("ES_SRC", os.path.join(os.path.dirname(__file__), ".."))
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def png_write(path, a, rgb=False):
    a = np.asarray(a)
    h, w = a.shape[:2]
    depth = 16 if a.dtype == np.uint16 else 8
    raw = b''.join(b'\0' + (a.astype('>u2') if depth == 16 else a.astype(np.uint8))[y].tobytes()
                   for y in range(h))

    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    ihdr = struct.pack('>IIBBBBB', w, h, depth, 2 if rgb else 0, 0, 0, 0)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) +
                           chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def run(args, want=0):
    p = subprocess.run([ES_BIN] + args, capture_output=True, text=True)
    if p.returncode != want:
        fail("%s: exit %d, want %d: %s" % (" ".join(args), p.returncode, want, p.stderr.strip()))
    return p


def window(k, shape):
    r = k // 2
    if shape == "disk":
        yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
        return (xx * xx + yy * yy <= r * r).astype(np.uint8)
    return np.ones((k, k), np.uint8)


def ref_reflect(q, m, k, shape, levels):
    """H of each pixel from the in-mask pixels of its reflected (numpy 'symmetric') window."""
    r = k // 2
    fp = window(k, shape)
    qp = np.pad(q, r, mode="symmetric")
    mp = np.pad(m, r, mode="symmetric")
    h, w = q.shape
    out = np.full((h, w), np.nan)
    for y in range(h):
        for x in range(w):
            if not m[y, x]:
                continue
            wq = qp[y:y + k, x:x + k][(fp > 0) & (mp[y:y + k, x:x + k] > 0)]
            c = np.bincount(wq, minlength=levels).astype(np.float64)
            c = c[c > 0]
            p = c / c.sum()
            out[y, x] = max(0.0, -(p * np.log2(p)).sum())
    return out


with tempfile.TemporaryDirectory() as T:
    cam = os.path.join(SRC, "samples", "camera.png")
    img = png_read(cam)[..., 0]
    h, w = img.shape
    rng = np.random.default_rng(int(os.environ.get("ES_TEST_SEED", "0") or 0) or None)
    masks = {}
    m = np.zeros((h, w), np.uint8)
    m[60:300, 100:420] = rng.integers(1, 256, size=(240, 320))
    m[rng.random((h, w)) < 0.2] = 7
    masks["blocks"] = m
    masks["zero"] = np.zeros((h, w), np.uint8)
    masks["one"] = np.full((h, w), 255, np.uint8)
    one = np.zeros((h, w), np.uint8)
    one[200, 301] = 1
    masks["pixel"] = one
    for name, m in masks.items():
        png_write(os.path.join(T, name + ".png"), m)
    # A 16-bit mask and an RGB one: any non-zero sample is inside (RGB: its luma).
    m16 = (masks["blocks"].astype(np.uint16) * 3)
    png_write(os.path.join(T, "m16.png"), m16)
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 1] = np.where(masks["blocks"] > 0, 200, 0)
    png_write(os.path.join(T, "rgb.png"), rgb, rgb=True)
    masks["m16"] = m16
    masks["rgb"] = rgb[..., 1]

    cases = [("blocks", 5, "square", 16), ("blocks", 9, "disk", 256), ("zero", 3, "square", 16),
             ("one", 7, "disk", 32), ("pixel", 5, "square", 16), ("m16", 3, "disk", 8),
             ("rgb", 5, "square", 64)]
    for name, k, shape, levels in cases:
        mf = os.path.join(T, name + ".png")
        out = os.path.join(T, "o.npy")
        st = os.path.join(T, "s.csv")
        run([cam, "--mask", mf, "-o", out, "-y", "-q", "-w", str(k), "--shape", shape,
             "-L", str(levels), "--stats", st])
        a = np.load(out)
        inside = masks[name] > 0
        if not np.array_equal(np.isnan(a), ~inside):
            fail("%s K=%d %s: NaN at %d pixels, %d outside" % (name, k, shape, np.isnan(a).sum(),
                                                               (~inside).sum()))
            continue
        q = (img * levels) >> 8
        if rank is not None:
            fp = disk(k // 2) if shape == "disk" else np.ones((k, k), np.uint8)
            ref = rank.entropy(q.astype(np.uint8 if levels <= 256 else np.uint16), fp,
                               mask=inside.astype(np.uint8))
            err = np.abs(a[inside] - ref[inside]).max() if inside.any() else 0.0
            if not err <= 1e-5:
                fail("%s K=%d %s L=%d: max error %g against skimage's mask" % (name, k, shape,
                                                                               levels, err))
        # The statistics record: of the inside only (numpy on the map).
        rows = open(st).read().splitlines()
        hdr, rec = rows[0].split(","), rows[1].split(",")
        col = {n: i for i, n in enumerate(hdr)}
        vals = a[inside].astype(np.float64)
        if inside.any():
            want = (vals.mean(), vals.std(), vals.min(), vals.max())
        else:
            want = (0.0, 0.0, 0.0, 0.0)
        got = tuple(float(rec[col[c]]) for c in ("mean", "std", "min", "max"))
        if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            fail("%s: stats %s, numpy on the inside %s" % (name, got, want))
        nh = sum(int(rec[i]) for i, c in enumerate(hdr) if c.startswith("hist_"))
        if nh != int(inside.sum()):
            fail("%s: histogram holds %d pixels, %d inside" % (name, nh, inside.sum()))

    # Reflect: a reflection that lands on a masked pixel is not counted.
    sub = img[400:440, 100:150]  # the ground: textured (the sky is flat: H = 0 any way)
    msub = masks["blocks"][400:440, 100:150].copy()
    msub[:, :3] = 0
    msub[0, 10:20] = 0
    png_write(os.path.join(T, "sub.png"), sub.astype(np.uint8))
    png_write(os.path.join(T, "msub.png"), msub)
    for k, shape in ((5, "square"), (7, "disk")):
        out = os.path.join(T, "r.npy")
        run([os.path.join(T, "sub.png"), "--mask", os.path.join(T, "msub.png"), "-o", out, "-y",
             "-q", "-w", str(k), "--shape", shape, "--border", "reflect"])
        a = np.load(out)
        ref = ref_reflect((sub * 16) >> 8, msub > 0, k, shape, 16)
        if not np.array_equal(np.isnan(a), np.isnan(ref)):
            fail("reflect K=%d %s: NaN differs" % (k, shape))
        elif np.nanmax(np.abs(a - ref)) > 1e-5 or np.nanmax(ref) < 1.0:
            fail("reflect K=%d %s: max error %g" % (k, shape, np.nanmax(np.abs(a - ref))))

    # A heat PNG: outside is H = 0, inferno's first colour (0, 0, 4).
    heat = os.path.join(T, "heat.png")
    run([cam, "--mask", os.path.join(T, "blocks.png"), "-o", heat, "-y", "-q"])
    px = png_read(heat)
    outside = masks["blocks"] == 0
    if not (px[outside] == [0, 0, 4]).all():
        fail("heat PNG: outside pixels are not H = 0's colour")

    # A video: the same mask every frame.
    clip = os.path.join(SRC, "samples", "clip.mp4")
    if os.environ.get("ES_HAVE_FFMPEG", "1") in ("1", "ON", "TRUE", "true") and os.path.exists(clip):
        vm = np.zeros((240, 320), np.uint8)
        vm[30:200, 40:280] = 1
        png_write(os.path.join(T, "vm.png"), vm)
        out = os.path.join(T, "v.npy")
        run([clip, "--mask", os.path.join(T, "vm.png"), "-o", out, "-y", "-q"])
        if os.path.exists(out):
            v = np.load(out)
            if not all(np.array_equal(np.isnan(f), vm == 0) for f in v):
                fail("video: a frame's NaN are not the mask's outside")
        # Of another size: exit 2, one line, nothing written.
        out2 = os.path.join(T, "v2.npy")
        p = run([clip, "--mask", os.path.join(T, "blocks.png"), "-o", out2, "-q"], want=2)
        if os.path.exists(out2) or len(p.stderr.strip().splitlines()) != 1 or "mask" not in p.stderr:
            fail("video, mask of another size: %r, output %s" % (p.stderr, os.path.exists(out2)))

    # Bad input.
    out = os.path.join(T, "bad.npy")
    for args, code, what in (
            (["--mask", os.path.join(T, "vm.png") if os.path.exists(os.path.join(T, "vm.png"))
              else os.path.join(T, "sub.png")], 2, "not the same size"),
            (["--mask", os.path.join(T, "missing.png")], 2, "missing.png"),
            (["--mask", os.path.join(T, "blocks.png"), "--mask", os.path.join(T, "one.png")], 1,
             "--mask"),
            (["--in-range", "3:1"], 1, "--in-range"),
            (["--in-range", "nan:1"], 1, "--in-range"),
            (["--in-range", "1"], 1, "--in-range"),
            (["--in-range", "0x1:5"], 1, "--in-range")):
        p = run([cam] + args + ["-o", out], want=code)
        lines = p.stderr.strip().splitlines()
        if len(lines) != 1 or what not in lines[0] or not lines[0].startswith("entropy-stream: "):
            fail("%s: message %r" % (" ".join(args), p.stderr))
        if os.path.exists(out):
            fail("%s: output left" % " ".join(args))
    # A good range on 8-bit input: no effect (the range is for float samples).
    a1, a2 = os.path.join(T, "a1.npy"), os.path.join(T, "a2.npy")
    run([cam, "-o", a1, "-q"])
    run([cam, "--in-range", "-1.5:2e3", "-o", a2, "-q"])
    if os.path.exists(a1) and os.path.exists(a2) and not np.array_equal(np.load(a1), np.load(a2)):
        fail("--in-range changed an 8-bit input's map")

if failures:
    print("test_cli_mask: %d failure(s)" % failures)
    sys.exit(1)
print("test_cli_mask: all checks passed")
