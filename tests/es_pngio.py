"""es_pngio.py - the PNG reader the Python tests share: the program's own outputs decoded
without another library (non-interlaced 8/16-bit grey or RGB), so a test checks the bytes the
program wrote, not what a second decoder makes of them."""
import struct
import zlib

import numpy as np


def png_read(path):
    """Non-interlaced 8/16-bit grey or RGB (what the program writes): HxWxC integers."""
    data = open(path, "rb").read()
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, t = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if t == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif t == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, bd, ct, _, _, il = hdr
    assert il == 0 and bd in (8, 16) and ct in (0, 2), hdr
    ch = 3 if ct == 2 else 1
    bpp = ch * bd // 8
    raw = zlib.decompress(idat)
    stride = w * bpp
    out = np.zeros((h, stride), dtype=np.int64)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(h):
        f = raw[y * (stride + 1)]
        cur = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        rec = np.zeros(stride, dtype=np.int64)
        for i in range(stride):
            a = rec[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            rec[i] = (cur[i] + p) & 0xFF
        out[y] = rec
        prev = rec
    if bd == 16:
        out = out[:, 0::2] * 256 + out[:, 1::2]
    return out.reshape(h, w, ch)
