#!/usr/bin/python3
"""make-samples.py - regenerates the sample images of samples/ from scikit-image's data
folder (Debian's python3-skimage; every source image there is CC0 / public domain, see
samples/README.md). Needs python3-skimage, python3-pil, python3-numpy, python3-scipy.

    /usr/bin/python3 samples/make-samples.py [OUTDIR]     (default: the folder of this script)

The outputs cover the kinds of PNG input entropy-stream reads: 8-bit grey, 8-bit RGB at an
odd size, 16-bit grey, RGBA, and an 8-bit palette with tRNS, Adam7-interlaced."""
import os
import shutil
import struct
import sys
import zlib

import numpy as np
from PIL import Image
from scipy import ndimage

import skimage.data

DATA = os.path.dirname(skimage.data.__file__)


def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def write_palette_adam7(path, idx, palette, alpha):
    """8-bit palette PNG, Adam7-interlaced, with tRNS (PIL cannot write interlaced PNGs)."""
    h, w = idx.shape
    raw = b""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
              (0, 1, 1, 2)]
    for x0, y0, dx, dy in passes:
        sub = idx[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        for row in sub:
            raw += b"\x00" + row.astype(np.uint8).tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 1)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", ihdr))
        f.write(chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).ravel())))
        f.write(chunk(b"tRNS", bytes(np.asarray(alpha, np.uint8))))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    # 1. camera: 512 x 512 8-bit grey photograph, as shipped
    shutil.copyfile(os.path.join(DATA, "camera.png"), os.path.join(out, "camera.png"))
    # 2. chelsea: 451 x 300 8-bit RGB photograph (odd width), as shipped
    shutil.copyfile(os.path.join(DATA, "chelsea.png"), os.path.join(out, "chelsea.png"))
    # 3. moon as 16-bit grey: smoothed (sigma 1.5) so the 16-bit levels are real, not v*257,
    #    cropped to an odd 383 x 257
    moon = np.asarray(Image.open(os.path.join(DATA, "moon.png")), np.float64)
    sm = ndimage.gaussian_filter(moon, 1.5)[100:357, 60:443]
    lo, hi = sm.min(), sm.max()
    v16 = np.round((sm - lo) / (hi - lo) * 65535).astype(np.uint16)
    Image.fromarray(v16, mode="I;16").save(os.path.join(out, "moon16.png"), optimize=True)
    # 4. coffee with an alpha ramp: 8-bit RGBA, 301 x 199 (alpha is ignored on input)
    coffee = np.asarray(Image.open(os.path.join(DATA, "coffee.png")).convert("RGB"))
    crop = coffee[101:300, 150:451]
    a = np.tile(np.linspace(255, 32, crop.shape[1]).astype(np.uint8), (crop.shape[0], 1))
    Image.fromarray(np.dstack([crop, a]), mode="RGBA").save(os.path.join(out, "coffee_rgba.png"),
                                                           optimize=True)
    # 5. chelsea quantised to 48 colours, palette + tRNS, Adam7: 227 x 151 (every second pixel)
    small = Image.open(os.path.join(DATA, "chelsea.png")).convert("RGB").resize((227, 151),
                                                                                Image.LANCZOS)
    q = small.quantize(colors=48, method=Image.Quantize.MEDIANCUT)
    pal = np.asarray(q.getpalette()[:48 * 3]).reshape(48, 3)
    alpha = [255 if i % 3 else 128 for i in range(48)]
    write_palette_adam7(os.path.join(out, "chelsea_palette_adam7.png"), np.asarray(q), pal, alpha)


if __name__ == "__main__":
    main()
