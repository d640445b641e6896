#!/usr/bin/env python3
"""test_bands_large.py - a 40,000 x 40,000 8-bit tiled TIFF (1.6 gigapixels) in bounded memory
(issue 30): to a float32 tiled BigTIFF and to --stats, each run's peak RSS measured by
/usr/bin/time -f %M under 512 MB (not a timed test), and the output checked against a
reference computed band by band here: rows of the map sampled at the top edge, in the middle,
across band and tile boundaries and at the bottom edge, each compared bit for bit with
entropy-stream's whole-image run on a crop of the input holding those rows and their halo
(no band driver), and the --stats records of both runs equal, with the global entropies
recomputed here from the tiles' exact histograms.

The input is four distinct 256 x 256 tiles, tile (ty, tx) being tile (ty + tx) % 4, so any
row of it is computed here in closed form; tifffile writes their deflate bytes, encoded once,
24,649 times (93 MB on disk); the map takes 741 MB (zstd). It takes 1-3 minutes on the
2-core build machine (57 s at a load average of 6, 161 s at 10-20), so it runs in the full
suite only (ES_TEST_FULL=1), and not under the sanitizers (ASan's shadow memory is no measure
of the program's).
"""
import os
import subprocess
import sys
import tempfile
import time
import zlib

BIN = os.environ.get("ES_BIN")
if not BIN:
    print("skipped: ES_BIN not set")
    sys.exit(77)
if os.environ.get("ES_TEST_FULL", "0") in ("", "0"):
    print("skipped: runs in the full suite (ES_TEST_FULL=1; about 1-3 minutes)")
    sys.exit(77)
if os.environ.get("ES_SANITIZE", "") in ("1", "ON", "TRUE", "true"):
    print("skipped: not under the sanitizers (their shadow memory is not the program's)")
    sys.exit(77)
if not os.path.exists("/usr/bin/time"):
    print("skipped: no /usr/bin/time")
    sys.exit(77)
try:
    import numpy as np
    import tifffile
    from PIL import Image
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

H = W = 40000
T = 256
K = 5
R = K // 2
RSS_LIMIT_KB = 512 * 1024
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def make_tiles():
    y, x = np.mgrid[0:T, 0:T]
    return [(((x // (k + 2)) * 37 + (y // 3) * 11 + k * 50 + (x * y // 97)) % 256 // 16 * 16)
            .astype(np.uint8) for k in range(4)]


TILES = make_tiles()
STACK = np.stack(TILES)


def rows(y0, y1):
    """Input rows y0..y1-1, whole width, in closed form."""
    yy, xx = np.mgrid[y0:y1, 0:W]
    return STACK[(yy // T + xx // T) % 4, yy % T, xx % T]


def run(args, label):
    """Runs the program under /usr/bin/time; returns (exit code, peak RSS in KB, seconds)."""
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", BIN] + args, capture_output=True, text=True)
    el = time.time() - t0
    lines = p.stderr.strip().splitlines()
    try:
        rss = int(lines[-1])
    except (IndexError, ValueError):
        rss = -1
    print(f"{label}: exit {p.returncode}, peak RSS {rss / 1024:.0f} MB, {el:.1f} s")
    if p.returncode != 0:
        fail(f"{label}: exit {p.returncode}: {p.stderr[-500:]}")
    if not 0 < rss < RSS_LIMIT_KB:
        fail(f"{label}: peak RSS {rss} KB, want under {RSS_LIMIT_KB} KB")
    return p.returncode, rss, el


def read_map_rows(path, y0, y1):
    """Rows y0..y1-1 of the float32 tiled TIFF written, decoding only the tiles they touch:
    zstd (the zstd program; one call a tile row, its tiles' frames back to back) or deflate,
    then libtiff's floating-point predictor undone (each tile row holds a row's bytes as
    planes, most significant first, horizontally differenced)."""
    with tifffile.TiffFile(path) as tf:
        page = tf.pages[0]
        th, tw, iw = page.tilelength, page.tilewidth, page.imagewidth
        ntx = (iw + tw - 1) // tw
        comp, pred = int(page.compression), int(page.predictor)
        out = np.empty((y1 - y0, iw), np.float32)
        fh = tf.filehandle
        for ty in range(y0 // th, (y1 - 1) // th + 1):
            raw = []
            for tx in range(ntx):
                i = ty * ntx + tx
                fh.seek(page.dataoffsets[i])
                raw.append(fh.read(page.databytecounts[i]))
            if comp == 50000:
                data = subprocess.run(["zstd", "-d", "-c"], input=b"".join(raw),
                                      capture_output=True, check=True).stdout
            elif comp in (8, 32946):
                data = b"".join(zlib.decompress(r) for r in raw)
            else:
                data = b"".join(raw)
            tiles = np.frombuffer(data, np.uint8).reshape(ntx, th, tw * 4)
            if pred == 3:
                acc = np.cumsum(tiles, axis=2, dtype=np.uint8).reshape(ntx, th, 4, tw)
                tiles = np.ascontiguousarray(acc[:, :, ::-1, :].transpose(0, 1, 3, 2))
            f = tiles.reshape(ntx, th, tw * 4).view("<f4").reshape(ntx, th, tw)
            band = f.transpose(1, 0, 2).reshape(th, ntx * tw)[:, :iw]
            a, b = max(y0, ty * th), min(y1, (ty + 1) * th)
            out[a - y0:b - y0] = band[a - ty * th:b - ty * th]
        return out


def reference_rows(y0, y1, tmp):
    """Map rows y0..y1-1 by entropy-stream's whole-image run on a crop with its halo."""
    a, b = max(0, y0 - R), min(H, y1 + R)
    Image.fromarray(rows(a, b)).save(f"{tmp}/crop.png")
    subprocess.run([BIN, f"{tmp}/crop.png", "-w", str(K), "-o", f"{tmp}/crop.npy", "-y", "-q"],
                   check=True)
    return np.load(f"{tmp}/crop.npy")[y0 - a:y1 - a]


def stats_record(path):
    with open(path) as f:
        lines = f.read().strip().splitlines()
    if len(lines) != 2:
        fail(f"{path}: {len(lines)} lines, want a header and one record")
        return {}
    return dict(zip(lines[0].split(","), lines[1].split(",")))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src = f"{tmp}/big.tif"
        enc = [zlib.compress(t.tobytes(), 6) for t in TILES]
        nty, ntx = (H + T - 1) // T, (W + T - 1) // T

        def tiles():
            for ty in range(nty):
                for tx in range(ntx):
                    yield enc[(ty + tx) % 4]
        t0 = time.time()
        with tifffile.TiffWriter(src, bigtiff=True) as tw:
            tw.write(tiles(), shape=(H, W), dtype=np.uint8, tile=(T, T), compression="zlib",
                     metadata=None)
        print(f"input: {os.path.getsize(src) / 1e6:.0f} MB on disk, made in {time.time() - t0:.1f} s")

        out = f"{tmp}/map.tif"
        run([src, "-w", str(K), "-o", out, "--stats", f"{tmp}/a.csv", "-q"], "to a float32 BigTIFF")
        run([src, "-w", str(K), "--stats", f"{tmp}/b.csv", "-q"], "to --stats")
        if failures:
            return
        print(f"output: {os.path.getsize(out) / 1e6:.0f} MB on disk")
        with tifffile.TiffFile(out) as tf:
            p = tf.pages[0]
            if not (tf.is_bigtiff and p.shape == (H, W) and p.dtype == np.float32 and p.is_tiled):
                fail(f"output: bigtiff {tf.is_bigtiff}, shape {p.shape}, {p.dtype}, tiled {p.is_tiled}")

        # Sampled rows: the edges, a tile boundary, the middle, the band boundaries of the
        # default budget whatever it chose (every 64 rows crossed somewhere below).
        for y0, y1 in [(0, 8), (250, 262), (19990, 20010), (H // 3, H // 3 + 70), (H - 9, H)]:
            got = read_map_rows(out, y0, y1)
            ref = reference_rows(y0, y1, tmp)
            if not np.array_equal(got.view(np.uint32), ref.view(np.uint32)):
                bad = np.argwhere(got.view(np.uint32) != ref.view(np.uint32))[0]
                fail(f"rows {y0}..{y1 - 1}: differ first at {tuple(bad + [y0, 0])}: "
                     f"{got[tuple(bad)]} vs {ref[tuple(bad)]}")
            else:
                print(f"rows {y0}..{y1 - 1}: equal to the whole-image run of their crop")

        a, b = stats_record(f"{tmp}/a.csv"), stats_record(f"{tmp}/b.csv")
        if a != b:
            fail(f"--stats of the two runs differ: {a} vs {b}")
        if (a.get("width"), a.get("height")) != (str(W), str(H)):
            fail(f"--stats size {a.get('width')} x {a.get('height')}")
        # The global entropies from the tiles' exact histograms: tile kind k covers the tile
        # cells with (ty + tx) % 4 == k, cut at the right and bottom edges.
        hist = np.zeros(256, np.int64)
        for ty in range(nty):
            hh = min(T, H - ty * T)
            for tx in range(ntx):
                ww = min(T, W - tx * T)
                hist += np.bincount(TILES[(ty + tx) % 4][:hh, :ww].ravel(), minlength=256)
        p = hist[hist > 0] / (H * W)
        ge = float(-(p * np.log2(p)).sum())
        lev = np.bincount(np.arange(256) * 16 // 256, weights=hist, minlength=16)
        q = lev[lev > 0] / (H * W)
        gl = float(-(q * np.log2(q)).sum())
        if abs(float(a["global_entropy_levels"]) - gl) > 1e-9:
            fail(f"global_entropy_levels {a['global_entropy_levels']}, numpy {gl}")
        if abs(float(a["global_entropy"]) - ge) > 1e-5:  # FFmpeg's single precision
            fail(f"global_entropy {a['global_entropy']}, numpy {ge}")
        print(f"--stats: mean {a['mean']} std {a['std']} min {a['min']} max {a['max']}, "
              f"global entropy {a['global_entropy']} (numpy {ge:.6f})")
    if failures:
        print(f"test_bands_large: {failures} check(s) failed")
        sys.exit(1)
    print("test_bands_large: all checks passed")


main()
