#!/usr/bin/env python3
"""TIFF in and out through the CLI (issue 28). The same pixels stored as TIFF of every kind
(8/16-bit grey, RGB, RGBA, palette, 1-bit, min-is-white, strips and tiles, BigTIFF, each
compression libtiff has, a band stack) must give maps byte-identical to
those of the same grey written as PNG (SPEC's luma rule computed here in numpy); the TIFF
files are made by tifffile and by GDAL's gdal_translate, independent writers. Outputs are
checked with libtiff's tiffinfo (tiled, compression, BigTIFF) and tiffcp (decoded to plain
TIFF for tifffile, which lacks zstd here) against the .npy map; GeoTIFF with gdalinfo (same
corner coordinates, CRS and no-data); bad inputs (truncated, corrupt, a header claiming
10^6 x 10^6, unsupported samples, a float image) with exit code, one line and nothing left
behind. A multi-page TIFF is a stack of frames: [T, H, W] .npy, multi-page .tif, a record
a page, a directory of pictures; a bad page fails it whole. The photograph is scikit-image's coffee where it is installed."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    import tifffile
except Exception as e:  # pragma: no cover - environment without them
    print("skipped: numpy/tifffile not available:", e)
    sys.exit(77)

ES_BIN = os.environ.get("ES_BIN")
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)
for tool in ("tiffinfo", "tiffcp", "gdalinfo", "gdal_translate"):
    if not shutil.which(tool):
        print("skipped: %s not installed (libtiff-tools, gdal-bin: tools/install-deps.sh)" % tool)
        sys.exit(77)

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(args, ok=True):
    p = subprocess.run([ES_BIN, "--device", "cpu", "-q", "--no-progress"] + args,
                       capture_output=True, text=True)
    if ok and p.returncode != 0:
        print("FAIL: %s -> %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
        global failures
        failures += 1
    return p


def png_write(path, a):
    """A minimal PNG writer (grey 8 or 16 bits, filter 0): the reference's own file."""
    h, w = a.shape
    depth = 16 if a.dtype == np.uint16 else 8
    rows = a.astype(">u2" if depth == 16 else "u1").tobytes()
    stride = w * depth // 8
    raw = b"".join(b"\0" + rows[y * stride:(y + 1) * stride] for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def luma(rgb):
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return (299 * r + 587 * g + 114 * b + 500) // 1000


def tiffinfo(path):
    return subprocess.run(["tiffinfo", path], capture_output=True, text=True).stdout


def tiff_plain(path, tmp):
    """path decoded by libtiff's tiffcp into an uncompressed TIFF tifffile reads."""
    out = os.path.join(tmp, "plain_" + os.path.basename(path))
    subprocess.run(["tiffcp", "-c", "none", path, out], check=True, capture_output=True)
    return tifffile.imread(out)


def gdal(src, dst, *opts):
    subprocess.run(["gdal_translate", "-q"] + list(opts) + [src, dst], check=True,
                   capture_output=True)


PARAMS = [["-w", "5", "-L", "16"], ["-w", "7", "-L", "256", "--shape", "disk"]]


def same_map(tif_args, grey, name, tmp, params_list=PARAMS):
    """The TIFF's map equals the map of grey written as PNG, for each parameter set."""
    ref_png = os.path.join(tmp, "ref.png")
    png_write(ref_png, grey)
    for params in params_list:
        ref = os.path.join(tmp, "ref.npy")
        out = os.path.join(tmp, "out.npy")
        for f in (ref, out):
            if os.path.exists(f):
                os.unlink(f)
        run([ref_png, "-o", ref] + params)
        p = run(tif_args + ["-o", out] + params)
        if p.returncode != 0:
            check(False, "%s: exit %d" % (name, p.returncode))
            continue
        with open(ref, "rb") as a, open(out, "rb") as b:
            check(a.read() == b.read(), "%s %s: map differs from the PNG path's" % (name, params))


with tempfile.TemporaryDirectory() as tmp:
    T = lambda n: os.path.join(tmp, n)
    rng = np.random.default_rng(28)
    try:
        import skimage.data
        rgb = skimage.data.coffee()[100:297, 150:421]  # odd size: 197 x 271
    except Exception:
        y, x = np.mgrid[0:197, 0:271]
        rgb = np.stack([(x * 3 + y) % 256, (y * 5) % 256, rng.integers(0, 256, x.shape)], -1)
        rgb = rgb.astype(np.uint8)
    g8 = luma(rgb).astype(np.uint8)
    g16 = (g8.astype(np.uint16) * 251 + rng.integers(0, 251, g8.shape)).astype(np.uint16)

    # ---- inputs of every kind, against the PNG path
    tifffile.imwrite(T("g8.tif"), g8)
    same_map([T("g8.tif")], g8, "8-bit strips", tmp)
    tifffile.imwrite(T("g8t.tif"), g8, tile=(64, 32), compression="zlib")
    same_map([T("g8t.tif")], g8, "8-bit tiles deflate", tmp)
    tifffile.imwrite(T("g16.tif"), g16, rowsperstrip=7, compression="zlib", predictor=True)
    same_map([T("g16.tif")], g16, "16-bit strips deflate+predictor", tmp)
    tifffile.imwrite(T("g16big.tif"), g16, bigtiff=True, tile=(32, 48))
    check(tifffile.TiffFile(T("g16big.tif")).is_bigtiff, "BigTIFF made")
    same_map([T("g16big.tif")], g16, "16-bit BigTIFF tiles", tmp)
    tifffile.imwrite(T("rgb.tif"), rgb, photometric="rgb")
    same_map([T("rgb.tif")], g8, "RGB", tmp)
    tifffile.imwrite(T("rgbp.tif"), np.moveaxis(rgb, -1, 0), photometric="rgb",
                     planarconfig="separate", tile=(64, 64))
    same_map([T("rgbp.tif")], g8, "RGB planar tiles", tmp)
    rgba = np.concatenate([rgb, rng.integers(0, 256, rgb.shape[:2] + (1,), dtype=np.uint8)], -1)
    tifffile.imwrite(T("rgba.tif"), rgba, photometric="rgb", extrasamples=["unassalpha"])
    same_map([T("rgba.tif")], g8, "RGBA", tmp)
    rgb16 = rgb.astype(np.uint16) * 257 + 3
    tifffile.imwrite(T("rgb16.tif"), rgb16, photometric="rgb")
    same_map([T("rgb16.tif")], luma(rgb16).astype(np.uint16), "RGB 16-bit", tmp)
    # palette: 8-bit indices into a 16-bit colormap; the grey is the luma of its top bytes
    pal = rng.integers(0, 256, (3, 256)).astype(np.uint16) * 257
    idx = (g8 // 3).astype(np.uint8)
    tifffile.imwrite(T("pal.tif"), idx, photometric="palette", colormap=pal)
    pal_rgb = (pal >> 8).T.astype(np.int64)
    same_map([T("pal.tif")], luma(pal_rgb[idx]).astype(np.uint8), "palette", tmp)
    # 1-bit: 0 or 255 (PNG's expansion); min-is-white inverted
    bits = g8 > 128
    tifffile.imwrite(T("b1.tif"), bits, photometric="minisblack")  # bool: 1 bit a sample
    chk = tifffile.imread(T("b1.tif"))  # tifffile's own unpacking, as a guard on the maker
    check(chk.shape == bits.shape and (chk.astype(bool) == bits).all() and
          tifffile.TiffFile(T("b1.tif")).pages[0].bitspersample == 1, "1-bit file made right")
    # tifffile writes bool as min-is-white unless told: a 1 is black there
    tifffile.imwrite(T("b1w.tif"), bits)
    if "min-is-white" in tiffinfo(T("b1w.tif")):
        same_map([T("b1w.tif")], np.where(bits, 0, 255).astype(np.uint8), "1-bit min-is-white",
                 tmp, PARAMS[:1])
    same_map([T("b1.tif")], np.where(bits, 255, 0).astype(np.uint8), "1-bit", tmp)
    tifffile.imwrite(T("w8.tif"), 255 - g8, photometric="miniswhite")
    same_map([T("w8.tif")], g8, "8-bit min-is-white", tmp)
    # each compression, made by GDAL (its own libtiff) from the plain files
    for comp in ("LZW", "DEFLATE", "ZSTD", "PACKBITS", "NONE"):
        for tiled in ("NO", "YES"):
            out = T("gd_%s_%s.tif" % (comp, tiled))
            gdal(T("g16.tif"), out, "-co", "COMPRESS=" + comp, "-co", "TILED=" + tiled,
                 "-co", "BLOCKYSIZE=16" if tiled == "YES" else "BLOCKYSIZE=5")
            same_map([out], g16, "16-bit %s tiled=%s" % (comp, tiled), tmp, PARAMS[:1])
    # JPEG-compressed YCbCr: the reference grey is GDAL's decoding of it to RGB, luma'd
    gdal(T("rgb.tif"), T("jpg.tif"), "-co", "COMPRESS=JPEG", "-co", "PHOTOMETRIC=YCBCR",
         "-co", "TILED=YES")
    check("JPEG" in tiffinfo(T("jpg.tif")) and "YCbCr" in tiffinfo(T("jpg.tif")), "JPEG YCbCr made")
    gdal(T("jpg.tif"), T("jpg_rgb.tif"), "-co", "COMPRESS=NONE", "-co", "PHOTOMETRIC=RGB")
    dec = tifffile.imread(T("jpg_rgb.tif"))
    same_map([T("jpg.tif")], luma(dec).astype(np.uint8), "JPEG YCbCr", tmp, PARAMS[:1])
    # a multi-page TIFF is a stack of frames: [T, H, W] in a .npy, a multi-page .tif, a
    # record a page; each page's map is the PNG path's map of that page
    pages = [g8, 255 - g8, g8 // 2]
    tifffile.imwrite(T("stack.tif"), np.stack(pages), photometric="minisblack",
                     compression="zlib", tile=(64, 64))
    check(len(tifffile.TiffFile(T("stack.tif")).pages) == 3, "3 pages made")
    maps = []
    for i, pg in enumerate(pages):
        png_write(T("page%d.png" % i), pg)
        run([T("page%d.png" % i), "-o", T("page%d.npy" % i)])
        maps.append(np.load(T("page%d.npy" % i)))
    run([T("stack.tif"), "-o", T("stack.npy")])
    st = np.load(T("stack.npy"))
    check(st.shape == (3,) + g8.shape and all(np.array_equal(st[i], maps[i]) for i in range(3)),
          "stack .npy = the pages' maps, in order")
    run([T("stack.tif"), "-o", T("stack_map.tif")])
    check(tiffinfo(T("stack_map.tif")).count("TIFF Directory at offset") == 3, "3 pages written")
    plain = T("plain_stack_map.tif")
    subprocess.run(["tiffcp", "-c", "none", T("stack_map.tif"), plain], check=True)
    with tifffile.TiffFile(plain) as tf:
        got = [pg.asarray() for pg in tf.pages]
    check(len(got) == 3 and all(np.array_equal(got[i], maps[i]) for i in range(3)),
          "multi-page .tif = the pages' maps")
    run([T("stack.tif"), "--stats", T("stack.csv")])
    rows = open(T("stack.csv")).read().strip().split("\n")
    check(len(rows) == 4 and [r.split(",")[1] for r in rows[1:]] == ["0", "1", "2"],
          "a record a page: %s" % rows)
    run([T("stack.tif"), "-o", T("stack_dir"), "--format", "gray8"])
    check(sorted(os.listdir(T("stack_dir"))) == ["frame_%06d.png" % i for i in range(3)],
          "a directory of pages: %s" % os.listdir(T("stack_dir")))
    # a stack whose page 2 is another size, or damaged: exit 2, no .npy or .tif left
    with tifffile.TiffWriter(T("stack_bad.tif")) as tw:
        tw.write(g8, photometric="minisblack")
        tw.write(g8, photometric="minisblack")
        tw.write(g8[:50], photometric="minisblack")
    b = bytearray(open(T("stack.tif"), "rb").read())
    off = tifffile.TiffFile(T("stack.tif")).pages[2].dataoffsets[1]
    b[off:off + 2] = b"\xff\xff"
    open(T("stack_dmg.tif"), "wb").write(bytes(b))
    for name, want in (("stack_bad.tif", "page 2: is 271x50, page 0 271x197"),
                       ("stack_dmg.tif", "page 2: tile")):
        for out in ("s.npy", "s.tif"):
            p = run([T(name), "-o", T(out)], ok=False)
            check(p.returncode == 2 and want in p.stderr and p.stderr.count("\n") == 1,
                  "%s -> %s: exit %d %r" % (name, out, p.returncode, p.stderr))
            check(not os.path.exists(T(out)), "%s: %s left" % (name, out))
    p = run([T("stack.tif"), "-o", T("stack.png")], ok=False)
    check(p.returncode == 1 and "stack" in p.stderr, "a stack to one .png refused: %r" % p.stderr)
    # a band stack: --band picks the sample, contig and planar
    bands = np.stack([g16, 65535 - g16, g16 // 3], -1)
    tifffile.imwrite(T("bands.tif"), bands, photometric="minisblack", planarconfig="contig")
    tifffile.imwrite(T("bandsp.tif"), np.moveaxis(bands, -1, 0), photometric="minisblack",
                     planarconfig="separate", tile=(32, 32))
    for b in range(3):
        same_map([T("bands.tif"), "--band", str(b)], bands[..., b], "band %d" % b, tmp, PARAMS[:1])
        same_map([T("bandsp.tif"), "--band", str(b)], bands[..., b], "planar band %d" % b, tmp,
                 PARAMS[:1])
    p = run([T("bands.tif"), "--band", "3", "-o", T("band3.npy")], ok=False)
    check(p.returncode == 1 and "--band 0..2" in p.stderr and p.stderr.count("\n") == 1,
          "--band 3 of 3: exit %d %r" % (p.returncode, p.stderr))
    check(not os.path.exists(T("band3.npy")), "--band 3: no output left")

    # ---- outputs: float32 by default, tiled, zstd; read back through libtiff
    run([T("g16.tif"), "-o", T("m.npy")])
    m = np.load(T("m.npy"))
    p = run([T("g16.tif"), "-o", T("m.tif")])
    info = tiffinfo(T("m.tif"))
    check("Tile Width: 256 Tile Length: 256" in info, "output tiled 256: %s" % info)
    check("ZSTD" in info or "AdobeDeflate" in info, "output compressed: %s" % info)
    check("IEEE floating point" in info and "Bits/Sample: 32" in info, "output float32")
    got = tiff_plain(T("m.tif"), tmp)
    check(got.dtype == np.float32 and np.array_equal(got, m), "float32 TIFF = the .npy map")
    for fmt, dt in (("gray8", np.uint8), ("gray16", np.uint16), ("heat", np.uint8)):
        run([T("g16.tif"), "-o", T("m_%s.tif" % fmt), "--format", fmt])
        run([T("g16.tif"), "-o", T("m_%s.png" % fmt), "--format", fmt])
        gdal(T("m_%s.png" % fmt), T("m_%s_png.tif" % fmt), "-co", "COMPRESS=NONE")
        want = tifffile.imread(T("m_%s_png.tif" % fmt))
        got = tiff_plain(T("m_%s.tif" % fmt), tmp)
        check(got.dtype == dt and np.array_equal(got, want), "%s TIFF = the PNG's pixels" % fmt)
    p = run([T("g16.tif"), "-o", T("m.tif")], ok=False)
    check(p.returncode == 3 and "exists" in p.stderr, "existing .tif refused: %r" % p.stderr)

    # ---- GeoTIFF in, GeoTIFF out: the same corners, CRS and no-data in gdalinfo
    gdal(T("g8.tif"), T("geo.tif"), "-a_srs", "EPSG:32633", "-a_ullr", "500000", "4600000",
         "502710", "4598030", "-a_nodata", "7")
    run([T("geo.tif"), "-o", T("geo_map.tif")])
    run([T("geo.tif"), "-o", T("geo_heat.tif"), "--format", "heat"])
    gi = json.loads(subprocess.run(["gdalinfo", "-json", T("geo.tif")], capture_output=True,
                                   text=True).stdout)
    for out in ("geo_map.tif", "geo_heat.tif"):
        go = json.loads(subprocess.run(["gdalinfo", "-json", T(out)], capture_output=True,
                                       text=True).stdout)
        check(go.get("cornerCoordinates") == gi.get("cornerCoordinates"),
              "%s corners %s vs %s" % (out, go.get("cornerCoordinates"), gi.get("cornerCoordinates")))
        check(go.get("coordinateSystem", {}).get("wkt") == gi["coordinateSystem"]["wkt"] and
              "32633" in gi["coordinateSystem"]["wkt"], "%s CRS" % out)
        check(go.get("geoTransform") == gi.get("geoTransform"), "%s geotransform" % out)
        check(go["bands"][0].get("noDataValue") == 7, "%s no-data %s" % (out, go["bands"][0]))
    # a rotated grid is written as ModelTransformation (GDAL's Python bindings make it)
    try:
        from osgeo import gdal as ogdal
    except Exception:
        ogdal = None
    if ogdal is not None:
        ds = ogdal.GetDriverByName("GTiff").Create(T("rot.tif"), 271, 197, 1, ogdal.GDT_UInt16)
        ds.SetGeoTransform([440720.0, 60.0, 5.0, 3751320.0, 4.0, -60.0])
        ds.SetProjection('PROJCS["WGS 84 / UTM zone 11N",GEOGCS["WGS 84",DATUM["WGS_1984",'
                         'SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],'
                         'UNIT["degree",0.0174532925199433]],PROJECTION["Transverse_Mercator"],'
                         'PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",-117],'
                         'PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],'
                         'PARAMETER["false_northing",0],UNIT["metre",1],'
                         'AUTHORITY["EPSG","32611"]]')
        ds.GetRasterBand(1).WriteArray(g16)
        ds = None
        run([T("rot.tif"), "-o", T("rot_map.tif")])
        gi = json.loads(subprocess.run(["gdalinfo", "-json", T("rot.tif")], capture_output=True,
                                       text=True).stdout)
        go = json.loads(subprocess.run(["gdalinfo", "-json", T("rot_map.tif")],
                                       capture_output=True, text=True).stdout)
        check(gi["geoTransform"][2] == 5.0 and go.get("geoTransform") == gi["geoTransform"],
              "rotated geotransform carried: %s vs %s" % (go.get("geoTransform"), gi["geoTransform"]))
        check(go.get("coordinateSystem", {}).get("wkt") == gi["coordinateSystem"]["wkt"],
              "rotated: CRS carried")
        same_map([T("rot.tif")], g16, "GDAL-written 16-bit", tmp, PARAMS[:1])
    else:
        print("note: osgeo (python3-gdal) missing: the ModelTransformation case is skipped")
    # a map of a file without georeferencing has none
    go = json.loads(subprocess.run(["gdalinfo", "-json", T("m.tif")], capture_output=True,
                                   text=True).stdout)
    check("coordinateSystem" not in go or not go["coordinateSystem"].get("wkt"), "no CRS invented")

    # ---- directory batches take .tif and .tiff; their maps are .png (.npy for f32)
    os.mkdir(T("in"))
    shutil.copy(T("g8.tif"), T("in/a.tif"))
    shutil.copy(T("g16.tif"), T("in/b.TIFF"))
    png_write(T("in/c.png"), g8)
    run([T("in"), "-o", T("out")])
    check(sorted(os.listdir(T("out"))) == ["a.png", "b.png", "c.png"],
          "batch outputs: %s" % os.listdir(T("out")))
    run([T("in"), "-o", T("outf"), "--format", "f32"])
    check(sorted(os.listdir(T("outf"))) == ["a.npy", "b.npy", "c.npy"],
          "batch f32 outputs: %s" % os.listdir(T("outf")))
    check(np.load(T("outf/a.npy")).tobytes() == np.load(T("outf/c.npy")).tobytes(),
          "a.tif and c.png, the same pixels, the same map")

    # ---- bad inputs: exit 2, one line naming the file, nothing left
    good = open(T("g16.tif"), "rb").read()
    bad = {}
    bad["truncated.tif"] = good[: len(good) // 2]
    b = bytearray(open(T("g8t.tif"), "rb").read())  # deflate tiles: damage one's zlib header
    off = tifffile.TiffFile(T("g8t.tif")).pages[0].dataoffsets[3]
    b[off:off + 2] = b"\xff\xff"
    bad["corrupt.tif"] = bytes(b)
    bad["notatiff.tif"] = b"P5\n1 1\n255\n\0"
    # a header claiming 10^6 x 10^6 (and one strip of 8 bytes)
    ents = [(256, 4, 1, 10**6), (257, 4, 1, 10**6), (258, 3, 1, 8), (259, 3, 1, 1),
            (262, 3, 1, 1), (273, 4, 1, 8 + 2 + 12 * 9 + 4), (277, 3, 1, 1), (278, 4, 1, 10**6),
            (279, 4, 1, 8)]
    bad["huge.tif"] = (b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", len(ents)) +
                       b"".join(struct.pack("<HHII", *e) for e in ents) + b"\0" * 4 + b"\0" * 8)
    for name, data in bad.items():
        with open(T(name), "wb") as f:
            f.write(data)
    tifffile.imwrite(T("complex.tif"), (g8[:8, :8] + 1j).astype(np.complex64))
    tifffile.imwrite(T("f64.tif"), g8[:8, :8].astype(np.float64))
    tifffile.imwrite(T("i16.tif"), g8[:8, :8].astype(np.int16))
    tifffile.imwrite(T("f32.tif"), g8.astype(np.float32))
    wants = {"truncated.tif": "", "corrupt.tif": "tile", "notatiff.tif": "not a TIFF file",
             "huge.tif": "1000000 x 1000000", "complex.tif": "complex float",
             "f64.tif": "64-bit float", "i16.tif": "signed integer",
             "f32.tif": "float32 samples are not supported yet"}
    for name, want in wants.items():
        os.makedirs(T("bad_out"), exist_ok=True)
        for out in ("x.tif", "x.npy"):
            p = run([T(name), "-o", T("bad_out/" + out), "-y"], ok=False)
            lines = p.stderr.strip().split("\n")
            check(p.returncode == 2, "%s: exit %d (%s)" % (name, p.returncode, p.stderr.strip()))
            check(len(lines) == 1 and lines[0].startswith("entropy-stream: %s: " % T(name)) and
                  want in lines[0], "%s: message %r" % (name, p.stderr))
        check(os.listdir(T("bad_out")) == [], "%s: left %s" % (name, os.listdir(T("bad_out"))))
        shutil.rmtree(T("bad_out"))

print("test_tiff_cli: %d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)
