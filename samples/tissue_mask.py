#!/usr/bin/env python3
"""tissue_mask.py - a tissue mask of a whole-slide image from the entropy map of a low
pyramid level, as the entropy maskers of digital pathology do (EntropyMasker, Song et al.,
Scientific Reports 2023): glass and background are flat (low local entropy), tissue is
textured (high), so a threshold on H separates them where a threshold on brightness fails
(faint stains, dark glass, pen marks of one colour).

    samples/tissue_mask.py slide.svs -o mask.png [--level N] [--window K] [--threshold T]

1. entropy-stream computes H of the level (default: the slide's lowest-resolution level,
   which it names in its own message for a level past the pyramid), streamed in bands, into
   a temporary .npy;
2. the threshold is Otsu's on the histogram of H (or --threshold T, in bits);
3. with SciPy, the mask is opened (a 3 x 3 square) and its holes filled, as EntropyMasker does;
4. the mask is written as an 8-bit PNG (255 tissue, 0 background) at that level's size, and
   its tissue fraction printed.

It needs numpy and Pillow (Debian: python3-numpy python3-pil), and the entropy-stream program
(--entropy-stream PATH, else build/tools/entropy-stream beside this checkout, else PATH).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image


def find_program(given):
    if given:
        return given
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "tools",
                        "entropy-stream")
    return here if os.path.exists(here) else shutil.which("entropy-stream") or "entropy-stream"


def lowest_level(prog, slide):
    """The slide's last level: entropy-stream names the pyramid when asked for a level past it
    ("--level 63: the slide has levels 0..N")."""
    p = subprocess.run([prog, slide, "--level", "63", "--stats", "-", "-q"],
                       capture_output=True, text=True)
    m = re.search(r"levels 0\.\.(\d+)", p.stderr)
    if not m:
        sys.exit(f"tissue_mask: {slide}: {p.stderr.strip() or 'not a slide'}")
    return int(m.group(1))


def otsu(values, bins=256):
    """Otsu's threshold: the cut of the histogram that maximises the between-class variance."""
    hist, edges = np.histogram(values, bins=bins)
    hist = hist.astype(np.float64)
    centers = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist)
    w1 = w0[-1] - w0
    m0 = np.cumsum(hist * centers)
    mu0 = m0 / np.maximum(w0, 1)
    mu1 = (m0[-1] - m0) / np.maximum(w1, 1)
    between = w0 * w1 * (mu0 - mu1) ** 2
    return float(edges[1:][np.argmax(between)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("slide")
    ap.add_argument("-o", "--output", required=True, help="mask PNG (255 tissue, 0 background)")
    ap.add_argument("--level", type=int, help="pyramid level [the lowest resolution]")
    ap.add_argument("--window", type=int, default=15, help="entropy window K, odd [15]")
    ap.add_argument("--levels", type=int, default=64, help="grey levels L [64]")
    ap.add_argument("--threshold", type=float, help="H threshold in bits [Otsu's]")
    ap.add_argument("--entropy-stream", dest="prog", help="the entropy-stream program")
    a = ap.parse_args()
    prog = find_program(a.prog)
    level = a.level if a.level is not None else lowest_level(prog, a.slide)
    with tempfile.TemporaryDirectory() as tmp:
        hpath = os.path.join(tmp, "h.npy")
        p = subprocess.run([prog, a.slide, "--level", str(level), "-w", str(a.window), "-L",
                            str(a.levels), "-o", hpath, "-q"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"tissue_mask: {p.stderr.strip()}")
        h = np.load(hpath)
    t = a.threshold if a.threshold is not None else otsu(h.ravel())
    mask = h > t
    try:
        from scipy import ndimage
        mask = ndimage.binary_opening(mask, structure=np.ones((3, 3), bool))
        mask = ndimage.binary_fill_holes(mask)
    except ImportError:
        pass  # the plain threshold
    Image.fromarray((mask * 255).astype(np.uint8)).save(a.output)
    print(f"{a.slide}: level {level}, {h.shape[1]}x{h.shape[0]}, threshold {t:.4f} bits, "
          f"tissue {100.0 * mask.mean():.1f}%")


if __name__ == "__main__":
    main()
