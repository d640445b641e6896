#!/usr/bin/env python3
"""Cross-check against scikit-image: rank.entropy(q, footprint) on the quantized image must
equal entropy-stream's --border clip map (float32 rounding), for square and disk windows, on
real photographs shipped in Debian's python3-skimage data folder (grey and RGB; the RGB ones
also check SPEC's integer luma rule). Runs the real CLI and reads its .npy output."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import skimage
    import skimage.io
    from skimage.filters import rank
    from skimage.morphology import disk
except Exception as e:  # pragma: no cover - environment without scikit-image
    print("skipped: numpy/scikit-image not available:", e)
    sys.exit(77)

ES_BIN = os.environ.get("ES_BIN")
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)
DATA = os.path.join(os.path.dirname(skimage.__file__), "data")


def luma(img):
    """SPEC section 1: Y = (299 R + 587 G + 114 B + 500) // 1000, alpha ignored."""
    if img.ndim == 2:
        return img.astype(np.int64)
    r, g, b = (img[..., i].astype(np.int64) for i in range(3))
    return (299 * r + 587 * g + 114 * b + 500) // 1000


def run_cli(png, k, shape, levels, out):
    cmd = [ES_BIN, png, "-o", out, "-y", "-q", "--device", "cpu", "-w", str(k),
           "--shape", shape, "-L", str(levels), "--border", "clip"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("FAIL: %s -> %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return np.load(out)


failures = 0
checks = 0
with tempfile.TemporaryDirectory() as tmp:
    cases = [("camera.png", [(3, "square", 16), (5, "square", 16), (9, "disk", 16),
                             (15, "disk", 256), (7, "square", 256)]),
             ("coffee.png", [(5, "square", 16), (11, "disk", 32)]),
             ("moon.png", [(5, "disk", 64), (21, "square", 16)])]
    for name, params in cases:
        path = os.path.join(DATA, name)
        if not os.path.exists(path):
            print("note: %s missing from this scikit-image, skipped" % name)
            continue
        img = skimage.io.imread(path)
        assert img.dtype == np.uint8, img.dtype
        grey = luma(img)
        for k, shape, levels in params:
            q = ((grey * levels) >> 8).astype(np.uint8)
            r = (k - 1) // 2
            fp = np.ones((k, k), dtype=np.uint8) if shape == "square" else disk(r)
            ref = rank.entropy(q, fp)
            ours = run_cli(path, k, shape, levels, os.path.join(tmp, "out.npy"))
            checks += 1
            if ours.shape != ref.shape or ours.dtype != np.float32:
                print("FAIL %s K=%d %s L=%d: shape/dtype %s %s vs %s" %
                      (name, k, shape, levels, ours.shape, ours.dtype, ref.shape))
                failures += 1
                continue
            err = float(np.max(np.abs(ours.astype(np.float64) - ref)))
            ok = err <= 2e-6 * max(1.0, float(ref.max()))
            print("%s %s K=%d %s L=%d: max abs error %.3g vs scikit-image %s" %
                  ("ok  " if ok else "FAIL", name, k, shape, levels, err, skimage.__version__))
            failures += 0 if ok else 1
if checks == 0:
    print("skipped: no scikit-image sample images found")
    sys.exit(77)
print("%d passed, %d failed" % (checks - failures, failures))
sys.exit(1 if failures else 0)
