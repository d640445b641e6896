#!/usr/bin/env python3
"""Still images of every format (issue 28), through the real CLI, from the photographs in
samples/:
- JPEG: grey, YCbCr 4:2:0 / 4:4:4 / progressive / odd sizes: the grey the CLI reads is, to the
  bit, the Y plane libjpeg decodes (`djpeg -grayscale`, written back by `--overlay 0 --format
  gray8`), and the map equals the PNG path's map of that grey; an RGB JPEG (cjpeg -rgb) gives
  the luma rule of djpeg's RGB; CMYK is refused; scikit-image's rank.entropy on the quantized
  djpeg grey agrees (where scikit-image is installed).
- WebP (lossless), BMP (palette and RGB), PGM (8 and 16 bits), PPM, TGA, JPEG 2000 (lossless),
  made by PIL: maps equal to the PNG path of the same picture.
- A directory of mixed extensions, upper case ones included; --ext narrowing it; the output
  names (a.jpg -> a.png; a.png and a.jpg -> a.png and a.jpg.png).
- Bad inputs of each format (truncated, corrupt, a header claiming a huge size, a .jpg that is
  text, empty): exit 2, one line `entropy-stream: FILE: ...`, nothing left in the output
  directory; in a batch the good files are still written.
"""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image
except Exception as e:  # pragma: no cover - environment without PIL
    print("skipped: numpy/PIL not available:", e)
    sys.exit(77)

ES_BIN = os.environ.get("ES_BIN")
SRC = os.environ.get("ES_SRC", os.path.join(os.path.dirname(__file__), ".."))
HAVE_FFMPEG = os.environ.get("ES_HAVE_FFMPEG", "1") in ("1", "ON", "TRUE", "true")
if not ES_BIN or not os.path.exists(ES_BIN):
    print("skipped: ES_BIN not set")
    sys.exit(77)
if not shutil.which("djpeg") or not shutil.which("cjpeg"):
    print("skipped: djpeg/cjpeg (libjpeg-turbo-progs) not installed")
    sys.exit(77)
SAMPLES = os.path.join(SRC, "samples")

failures = 0
checks = 0


def check(ok, what):
    global failures, checks
    checks += 1
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def run(args, want=0):
    p = subprocess.run([ES_BIN, "--device", "cpu", "--no-progress"] + args, capture_output=True,
                       text=True)
    if p.returncode != want:
        raise SystemExit("FAIL: %s -> exit %d, want %d: %s" %
                         (" ".join(args), p.returncode, want, p.stderr))
    return p


def grey_of(path, tmp):
    """The grey plane the CLI reads: --overlay 0 writes it back as gray8 (8-bit inputs)."""
    out = os.path.join(tmp, "grey_of.png")
    run([path, "-o", out, "-y", "-q", "--overlay", "0", "--format", "gray8"])
    return np.array(Image.open(out))


def map_of(path, tmp, extra=()):
    out = os.path.join(tmp, "map_of.npy")
    run([path, "-o", out, "-y", "-q"] + list(extra))
    return np.load(out)


def read_pnm(path):
    """PGM/PPM (binary, maxval 255) as numpy, what djpeg -pnm writes."""
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    w, h = int(fields[1]), int(fields[2])
    ch = 1 if fields[0] == b"P5" else 3
    return np.frombuffer(data[pos:pos + w * h * ch], np.uint8).reshape((h, w, ch) if ch == 3 else (h, w))


def luma(rgb):
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((299 * r + 587 * g + 114 * b + 500) // 1000).astype(rgb.dtype)


def same_map(a, b, tmp, what, extra=()):
    ma, mb = map_of(a, tmp, extra), map_of(b, tmp, extra)
    check(ma.shape == mb.shape and np.array_equal(ma, mb), what)


def av_lacks_decoders():
    """The libav stills' decoders this test needs that the linked libavcodec lacks (a
    minimal FFmpeg, as the GPU machine's, has none of them): their cases are then skipped."""
    lacking = []
    with tempfile.TemporaryDirectory() as t:
        im = Image.new("L", (8, 8), 7)
        for ext, kw in (("webp", dict(lossless=True)), ("bmp", {}), ("pgm", {}), ("tga", {}),
                        ("jp2", {})):
            path = os.path.join(t, "probe." + ext)
            im.save(path, **kw)
            p = subprocess.run([ES_BIN, "--device", "cpu", "-q", path], capture_output=True,
                               text=True)
            if "libavcodec has no" in p.stderr:
                lacking.append(ext)
    return lacking


if HAVE_FFMPEG and av_lacks_decoders():
    print("test_stills: libavcodec lacks %s: its stills' cases skipped" % av_lacks_decoders())
    HAVE_FFMPEG = False

with tempfile.TemporaryDirectory() as tmp:
    photos = {n: Image.open(os.path.join(SAMPLES, n + ".png"))
              for n in ("camera", "chelsea", "coffee_rgba")}
    rgb = photos["chelsea"].convert("RGB")
    odd = photos["coffee_rgba"].convert("RGB")  # 301 x 199: partial MCUs at both edges
    grey = photos["camera"]

    # ---- JPEG: the Y plane as libjpeg decodes it, to the bit.
    jpegs = {
        "grey.jpg": (grey, dict(quality=90)),
        "y420.jpg": (rgb, dict(quality=90)),
        "y444.jpg": (rgb, dict(quality=95, subsampling=0)),
        "y422.JPEG": (rgb, dict(quality=85, subsampling=1)),
        "prog.jpg": (rgb, dict(quality=80, progressive=True)),
        "odd420.jpg": (odd, dict(quality=75)),
    }
    for name, (im, kw) in jpegs.items():
        path = os.path.join(tmp, name)
        im.save(path, format="JPEG", **kw)
        ref = os.path.join(tmp, name + ".pgm")
        subprocess.run(["djpeg", "-grayscale", "-pnm", "-outfile", ref, path], check=True)
        y = read_pnm(ref)
        ours = grey_of(path, tmp)
        check(ours.shape == y.shape and np.array_equal(ours, y),
              "%s: the grey read is djpeg -grayscale's Y plane, bit for bit" % name)
        ref_png = os.path.join(tmp, name + ".ref.png")
        Image.fromarray(y).save(ref_png)
        same_map(path, ref_png, tmp, "%s: map equals the PNG path's map of that Y plane" % name)
        same_map(path, ref_png, tmp, "%s: the same with -w 7 --shape disk -L 256" % name,
                 ["-w", "7", "--shape", "disk", "-L", "256"])

    # An RGB JPEG (no colour transform): djpeg's RGB through SPEC's luma rule.
    ppm = os.path.join(tmp, "rgb.ppm")
    rgb.save(ppm)
    rgbjpg = os.path.join(tmp, "rgb.jpg")
    subprocess.run(["cjpeg", "-rgb", "-quality", "90", "-outfile", rgbjpg, ppm], check=True)
    dec = os.path.join(tmp, "rgb_dec.ppm")
    subprocess.run(["djpeg", "-pnm", "-outfile", dec, rgbjpg], check=True)
    y = luma(read_pnm(dec))
    check(np.array_equal(grey_of(rgbjpg, tmp), y), "RGB JPEG: the luma rule of djpeg's RGB")

    # CMYK: refused, exit 2, said so.
    cmyk = os.path.join(tmp, "cmyk.jpg")
    rgb.convert("CMYK").save(cmyk, quality=90)
    p = run([cmyk, "-o", os.path.join(tmp, "cmyk_out.png")], want=2)
    check("CMYK" in p.stderr and p.stderr.count("\n") == 1, "CMYK JPEG refused: " + p.stderr.strip())

    # scikit-image's rank.entropy on the quantized djpeg grey.
    try:
        from skimage.filters import rank
        from skimage.morphology import disk
        have_skimage = True
    except Exception:
        have_skimage = False
        print("note: scikit-image not installed: its cross-check skipped")
    if have_skimage:
        y = read_pnm(os.path.join(tmp, "y420.jpg.pgm"))
        for k, shape, levels in ((5, "square", 16), (9, "disk", 32)):
            q = ((y.astype(np.int64) * levels) >> 8).astype(np.uint8)
            fp = np.ones((k, k), np.uint8) if shape == "square" else disk((k - 1) // 2)
            ref = rank.entropy(q, fp)
            ours = map_of(os.path.join(tmp, "y420.jpg"), tmp,
                          ["-w", str(k), "--shape", shape, "-L", str(levels)])
            err = float(np.max(np.abs(ours.astype(np.float64) - ref)))
            check(err <= 2e-6 * max(1.0, float(ref.max())),
                  "y420.jpg K=%d %s L=%d against scikit-image rank.entropy: max error %.3g" %
                  (k, shape, levels, err))

    # Magic before extension: a PNG named .jpg is read as the PNG it is; a JPEG without an
    # extension is a still, not a video.
    shutil.copy(os.path.join(SAMPLES, "camera.png"), os.path.join(tmp, "png_really.jpg"))
    same_map(os.path.join(tmp, "png_really.jpg"), os.path.join(SAMPLES, "camera.png"), tmp,
             "a PNG named .jpg is read by its signature")
    # In a directory batch a PNG named .tif is read as the PNG it is, as any other name is
    # (the TIFF reader is one line of the dispatch: it was chosen by the name alone, "not a
    # TIFF file").
    mis = os.path.join(tmp, "mis")
    os.makedirs(mis, exist_ok=True)
    shutil.copy(os.path.join(SAMPLES, "camera.png"), os.path.join(mis, "png_really.tif"))
    run([mis, "-o", os.path.join(tmp, "mis_out"), "-y", "-q", "--format", "f32"])
    check(np.array_equal(np.load(os.path.join(tmp, "mis_out", "png_really.npy")),
                         map_of(os.path.join(SAMPLES, "camera.png"), tmp)),
          "a PNG named .tif in a directory is read by its signature")
    shutil.copy(os.path.join(tmp, "grey.jpg"), os.path.join(tmp, "noext"))
    same_map(os.path.join(tmp, "noext"), os.path.join(tmp, "grey.jpg"), tmp,
             "a JPEG without an extension is read as a still")

    # ---- libavcodec's stills: the same map as the PNG path of the same picture.
    if HAVE_FFMPEG:
        grey_png = os.path.join(tmp, "grey_ref.png")
        grey.save(grey_png)
        rgb_png = os.path.join(tmp, "rgb_ref.png")
        rgb.save(rgb_png)
        pal = rgb.convert("P")
        pal_png = os.path.join(tmp, "pal_ref.png")
        pal.save(pal_png)
        cases = [("g.webp", grey, dict(lossless=True), grey_png),
                 ("c.webp", rgb, dict(lossless=True), rgb_png),
                 ("g.bmp", grey, {}, grey_png),  # 8-bit palette of greys
                 ("c.BMP", rgb, {}, rgb_png),
                 ("p.bmp", pal, {}, pal_png),
                 ("g.pgm", grey, {}, grey_png),
                 ("c.ppm", rgb, {}, rgb_png),
                 ("g.tga", grey, {}, grey_png),
                 ("c.tga", rgb, dict(compression="tga_rle"), rgb_png),
                 ("g.jp2", grey, {}, grey_png)]  # OpenJPEG's default: lossless 5/3
        for name, im, kw, ref in cases:
            path = os.path.join(tmp, name)
            im.save(path, **kw)
            same_map(path, ref, tmp, "%s: map equals the PNG path's" % name)
        # 16-bit grey stays 16-bit: a PGM of moon16's samples against moon16.png.
        m16 = np.array(Image.open(os.path.join(SAMPLES, "moon16.png"))).astype(">u2")
        pgm16 = os.path.join(tmp, "m16.pgm")
        with open(pgm16, "wb") as f:
            f.write(b"P5 %d %d 65535\n" % (m16.shape[1], m16.shape[0]) + m16.tobytes())
        for extra in ([], ["-L", "4096", "-w", "3"]):
            same_map(pgm16, os.path.join(SAMPLES, "moon16.png"), tmp,
                     "16-bit PGM: map equals moon16.png's %s" % " ".join(extra), extra)

    # ---- A directory of mixed extensions.
    d = os.path.join(tmp, "mixed")
    os.makedirs(os.path.join(d, "sub"))
    grey.save(os.path.join(d, "a.png"))
    shutil.copy(os.path.join(tmp, "y420.jpg"), os.path.join(d, "a.jpg"))
    shutil.copy(os.path.join(tmp, "y444.jpg"), os.path.join(d, "B.JPG"))
    shutil.copy(os.path.join(tmp, "prog.jpg"), os.path.join(d, "sub", "c.jpeg"))
    open(os.path.join(d, "notes.txt"), "w").write("not an image\n")
    names = ["a.jpg", "a.png", "B.JPG"]
    if HAVE_FFMPEG:
        shutil.copy(os.path.join(tmp, "g.webp"), os.path.join(d, "D.WebP"))
        shutil.copy(os.path.join(tmp, "c.BMP"), os.path.join(d, "e.bmp"))
        names += ["D.WebP", "e.bmp"]
    out = os.path.join(tmp, "mixed_out")
    stats = os.path.join(tmp, "mixed.csv")
    run([d, "-r", "-o", out, "-q", "--stats", stats])
    want = {"a.png", "a.jpg.png", "B.png", "sub/c.png"}
    if HAVE_FFMPEG:
        want |= {"D.png", "e.png"}
    got = set()
    for root, _, files in os.walk(out):
        got |= {os.path.relpath(os.path.join(root, f), out) for f in files}
    check(got == want, "mixed directory: outputs %s (want %s)" % (sorted(got), sorted(want)))
    rows = open(stats).read().splitlines()[1:]
    check(len(rows) == len(want), "mixed directory: %d stats records" % len(rows))
    # Each output is the map of its own input: a.jpg.png is a.jpg's, B.png B.JPG's.
    for src, dst in (("a.jpg", "a.jpg.png"), ("B.JPG", "B.png"), ("a.png", "a.png")):
        one = os.path.join(tmp, "one.png")
        run([os.path.join(d, src), "-o", one, "-y", "-q"])
        check(np.array_equal(np.array(Image.open(one)), np.array(Image.open(os.path.join(out, dst)))),
              "mixed directory: %s is the map of %s" % (dst, src))
    # float maps: .npy in place of the extension, the shared stem kept apart the same way.
    out_f = os.path.join(tmp, "mixed_f32")
    run([d, "-o", out_f, "-q", "--format", "f32"])
    want_f = {"a.npy", "a.jpg.npy", "B.npy"} | ({"D.npy", "e.npy"} if HAVE_FFMPEG else set())
    check(set(os.listdir(out_f)) == want_f,
          "f32 batch: %s (want %s)" % (sorted(os.listdir(out_f)), sorted(want_f)))

    # --ext narrows it (any case, with or without a dot); the names do not change with it.
    out2 = os.path.join(tmp, "ext_out")
    run([d, "-r", "-o", out2, "-q", "--ext", "JPG,.jpeg"])
    got = set()
    for root, _, files in os.walk(out2):
        got |= {os.path.relpath(os.path.join(root, f), out2) for f in files}
    check(got == {"a.jpg.png", "B.png", "sub/c.png"}, "--ext JPG,.jpeg: %s" % sorted(got))
    p = run([d, "-o", os.path.join(tmp, "ext_bad"), "--ext", "png,gif"], want=1)
    check("--ext" in p.stderr and "gif" in p.stderr and p.stderr.count("\n") == 1,
          "--ext with a format not read: exit 1, " + p.stderr.strip())
    p = run([os.path.join(d, "a.png"), "-o", os.path.join(tmp, "x.png"), "--ext", "png"], want=1)
    check("only for a directory input" in p.stderr, "--ext with a file input: exit 1")
    # (jfif: a JPEG extension, read by every build, that no file here has)
    p = run([d, "--ext", "jfif", "--stats", os.path.join(tmp, "none.csv")], want=0)
    check("no image files (--ext jfif" in p.stderr, "--ext matching nothing: said, " + p.stderr.strip())

    # One still into a directory: the map under the input's name with .png / .npy.
    one_dir = os.path.join(tmp, "one_dir")
    run([os.path.join(tmp, "y422.JPEG"), "-o", one_dir + "/", "-q"])
    run([os.path.join(tmp, "y422.JPEG"), "-o", one_dir + "/", "-q", "--format", "f32"])
    check(sorted(os.listdir(one_dir)) == ["y422.npy", "y422.png"],
          "one JPEG into a directory: %s" % sorted(os.listdir(one_dir)))

    # ---- Bad inputs: exit 2, one line naming the file, nothing left behind.
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)
    good = open(os.path.join(tmp, "y420.jpg"), "rb").read()
    sof = good.index(b"\xff\xc0")

    def with_size(data, at, w, h, cut=None):
        b = bytearray(data)
        b[at + 5:at + 7] = h.to_bytes(2, "big")
        b[at + 7:at + 9] = w.to_bytes(2, "big")
        return bytes(b[:cut] if cut else b)

    corrupt = bytearray(good)
    for i in range(len(good) // 3, len(good) // 3 + 400):
        corrupt[i] ^= 0x5A
    bad_files = {
        "trunc.jpg": (good[:len(good) // 2], "truncated"),
        "corrupt.jpg": (bytes(corrupt), "corrupt JPEG data"),
        "huge.jpg": (with_size(good, sof, 60000, 60000, 4000), "more than --max-pixels"),
        "forged.jpg": (with_size(good, sof, 40000, 40000, 4000), "cannot be in 4000 bytes"),
        "text.jpg": (b"hello, this is not a JPEG\n", "not a JPEG file"),
        "empty.jpeg": (b"", "empty file"),
    }
    if HAVE_FFMPEG:
        def bmp_header(w, h):
            """An 8-bit BI_RGB BMP's headers and grey palette: 1078 bytes before the rows."""
            import struct
            return (b"BM" + struct.pack("<IHHI", 1078 + w * h, 0, 0, 1078) +
                    struct.pack("<IiiHHIIiiII", 40, w, h, 1, 8, 0, 0, 2835, 2835, 256, 0) +
                    bytes(b for v in range(256) for b in (v, v, v, 0)))

        def cut(name):
            data = open(os.path.join(tmp, name), "rb").read()
            return data[:len(data) // 2]
        bad_files.update({
            "trunc.webp": (cut("c.webp"), "cannot decode"),
            "trunc.bmp": (cut("c.BMP"), "not enough data"),
            "trunc.pgm": (cut("g.pgm"), "cannot decode"),
            "trunc.tga": (cut("g.tga"), "not enough data"),
            "huge.pgm": (b"P5 100000 100000 255\n" + b"x" * 100, "more than --max-pixels"),
            "forged.pgm": (b"P5 16000 16000 255\n" + b"x" * 100, "cannot be in"),
            "forged.bmp": (bmp_header(16000, 16000) + b"x" * 100, "cannot be in"),
            "huge.bmp": (bmp_header(60000, 60000) + b"x" * 100, "not enough data"),
            "text.webp": (b"not a webp at all", "cannot decode"),
        })
    for name, (data, said) in bad_files.items():
        path = os.path.join(bad, name)
        with open(path, "wb") as f:
            f.write(data)
        outd = os.path.join(tmp, "bad_out_" + name.replace(".", "_"))
        os.makedirs(outd)
        p = run([path, "-o", os.path.join(outd, "map.png")], want=2)
        err = p.stderr
        check(err.startswith("entropy-stream: %s: " % path) and err.count("\n") == 1 and said in err
              and os.listdir(outd) == [], "%s: exit 2, %s" % (name, err.strip()))
    # In a batch the good ones are still written, and each bad one named once.
    shutil.copy(os.path.join(tmp, "y420.jpg"), os.path.join(bad, "good.jpg"))
    bad_out = os.path.join(tmp, "bad_batch")
    p = run([bad, "-o", bad_out, "--stats", os.path.join(tmp, "bad.csv")], want=2)
    check(sorted(os.listdir(bad_out)) == ["good.png"],
          "batch with bad files: only the good one written: %s" % sorted(os.listdir(bad_out)))
    lines = [l for l in p.stderr.splitlines() if l.startswith("entropy-stream: " + bad + "/")]
    check(len(lines) == len(bad_files), "batch with bad files: %d of %d named" %
          (len(lines), len(bad_files)))

print("%d passed, %d failed" % (checks - failures, failures))
sys.exit(1 if failures else 0)
