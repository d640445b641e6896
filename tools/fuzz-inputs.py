#!/usr/bin/env python3
"""fuzz-inputs.py - a small mutation fuzzer for entropy-stream's input parsers.

Starts from valid seeds (small PNGs of every colour type, bit depth and interlace, the PNGs
in samples/, YUV4MPEG2 streams with several header variants, raw gray8/gray16le frames),
mutates them (byte flips, chunk length/CRC corruption, truncation, chunk duplication and
reordering, IHDR field changes with a fixed CRC, y4m header token and FRAME line changes)
and runs each mutant through the CLI:

    entropy-stream INPUT -o x.npy --stats s.csv -q -y --device cpu

with a timeout. A result is a finding when the exit code is not 0 or 2, the run timed out,
a sanitizer reported, standard error is not exactly one "entropy-stream: FILE: ..." line on
failure (or is not empty on success), a failed run left x.npy behind, or a successful run
wrote an .npy whose shape disagrees with the --stats records. Findings are kept (input,
stderr) under the work directory.

The "video" kind (not in the default --kinds) does the same for containers: seeds made once
with ffmpeg from lavfi sources into WORK/seeds (H.264 in MP4, fragmented MP4 and MPEG-TS,
FFV1 in Matroska and NUT, 16-bit grey FFV1, MPEG-4 in AVI, VP9 in WebM, MJPEG in MOV, raw
grey in NUT, y4m 4:4:4 and 16-bit grey; a seed whose encoder is missing is skipped), damaged
blindly (byte flips past the headers, flips in the first KiB, truncation, a range
duplicated, two ranges swapped, a range zeroed; sometimes two at once), sometimes renamed
.bin (probing alone), and read by name, from standard input redirected from the file, or
through a pipe. The output is x.npy, x.mp4, x.mkv or a frame directory: a video output is
checked with ffprobe (frames decoded = --stats records; a video with no record need not
open, as ffmpeg's own MP4 and Matroska of no frame), a directory by its frame_NNNNNN.png
names. With --vmem-bin (a build without sanitizers, which cannot run under a small address
space) a quarter of the video mutants run through that binary under ulimit -v (--vmem-kb,
default 2000000), where an "out of memory" is a finding; a run whose peak RSS passes
--rss-mb is one too.

    python3 tools/fuzz-inputs.py --bin build-asan/tools/entropy-stream -n 2000 [--seed 1]
        [--kinds png,y4m,raw,video] [--work /tmp/es-fuzz] [--timeout 5]
        [--vmem-bin build-cpu/tools/entropy-stream]

Meant for an ASan+UBSan build (tools/build.sh build-asan -DES_SANITIZE=ON ...); one process
at a time. Not a ctest: it is slow by design.
"""
import argparse
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ------------------------------------------------------------------ PNG seeds


def chunk(typ, data):
    return struct.pack(">I", len(data)) + typ + data + struct.pack(">I", zlib.crc32(typ + data))


def make_png(w, h, ctype, depth, interlace=0, trns=False, rng=None):
    rng = rng or random.Random(0)
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    out = [b"\x89PNG\r\n\x1a\n", chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace))]
    if ctype == 3:
        n = 1 << depth
        out.append(chunk(b"PLTE", bytes(rng.randrange(256) for _ in range(3 * n))))
        if trns:
            out.append(chunk(b"tRNS", bytes(rng.randrange(256) for _ in range(n // 2 or 1))))
    elif trns and ctype == 0:
        out.append(chunk(b"tRNS", struct.pack(">H", 1)))
    elif trns and ctype == 2:
        out.append(chunk(b"tRNS", struct.pack(">HHH", 1, 2, 3)))
    out.append(chunk(b"tEXt", b"Comment\x00fuzz seed"))

    def raw_rows(pw, ph):
        bpr = (pw * ch * depth + 7) // 8
        return b"".join(bytes([rng.randrange(5)]) + bytes(rng.randrange(256) for _ in range(bpr)) for _ in range(ph))

    if interlace:
        passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        data = b""
        for x0, y0, dx, dy in passes:
            pw = (w - x0 + dx - 1) // dx if w > x0 else 0
            ph = (h - y0 + dy - 1) // dy if h > y0 else 0
            if pw and ph:
                data += raw_rows(pw, ph)
    else:
        data = raw_rows(w, h)
    z = zlib.compress(data, 9)
    # two IDATs, so that chunk reordering and duplication have something to work on
    cut = len(z) // 2
    out += [chunk(b"IDAT", z[:cut]), chunk(b"IDAT", z[cut:]), chunk(b"IEND", b"")]
    return b"".join(out)


def png_seeds():
    rng = random.Random(1)
    seeds = []
    for ctype, depths in ((0, (1, 2, 4, 8, 16)), (2, (8, 16)), (3, (1, 2, 4, 8)), (4, (8, 16)), (6, (8, 16))):
        for depth in depths:
            for il in (0, 1):
                w, h = rng.choice(((13, 7), (1, 1), (9, 17), (33, 5)))
                seeds.append(make_png(w, h, ctype, depth, il, trns=rng.random() < 0.4, rng=rng))
    for name in ("chelsea_palette_adam7.png", "moon16.png"):
        p = os.path.join(ROOT, "samples", name)
        if os.path.exists(p):
            seeds.append(open(p, "rb").read())
    return seeds


def split_chunks(b):
    """[(offset, length, type)] of the chunks after the signature, as far as they parse."""
    out, p = [], 8
    while p + 12 <= len(b):
        n = struct.unpack(">I", b[p:p + 4])[0]
        if p + 12 + n > len(b):
            break
        out.append((p, n, b[p + 4:p + 8]))
        p += 12 + n
    return out


def fix_crc(b, off, n):
    crc = zlib.crc32(bytes(b[off + 4:off + 8 + n]))
    b[off + 8 + n:off + 12 + n] = struct.pack(">I", crc)


def mutate_png(seed, rng):
    b = bytearray(seed)
    ch = split_chunks(b)
    kind = rng.choice(["flip", "flip", "len", "crc", "trunc", "dup", "swap", "drop", "ihdr_dim",
                       "ihdr_dim", "ihdr_field", "idat_raw", "insert", "plte"])
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == "len" and ch:
        off, n, _ = rng.choice(ch)
        v = rng.choice([0, 1, n - 1, n + 1, n * 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, rng.randrange(1 << 32)])
        b[off:off + 4] = struct.pack(">I", v & 0xFFFFFFFF)
    elif kind == "crc" and ch:
        off, n, _ = rng.choice(ch)
        b[off + 8 + n + rng.randrange(4)] ^= 1 << rng.randrange(8)
    elif kind == "trunc":
        b = b[:rng.randrange(len(b))]
    elif kind == "dup" and ch:
        off, n, _ = rng.choice(ch)
        c = b[off:off + 12 + n]
        at = rng.choice(ch)[0]
        b[at:at] = c
    elif kind == "swap" and len(ch) >= 2:
        (o1, n1, _), (o2, n2, _) = sorted(rng.sample(ch, 2))
        c1, c2 = b[o1:o1 + 12 + n1], b[o2:o2 + 12 + n2]
        b = b[:o1] + c2 + b[o1 + 12 + n1:o2] + c1 + b[o2 + 12 + n2:]
    elif kind == "drop" and ch:
        off, n, _ = rng.choice(ch)
        del b[off:off + 12 + n]
    elif kind == "ihdr_dim":
        big = [0, 1, 2, 3, 7, 8, 9, 255, 256, 65535, 65536, 46341, 100000, 1 << 20, 0x7FFFFFFF,
               0x80000000, 0xFFFFFFFF, rng.randrange(1 << 32)]
        w = rng.choice(big) if rng.random() < 0.7 else struct.unpack(">I", b[16:20])[0]
        h = rng.choice(big) if rng.random() < 0.7 else struct.unpack(">I", b[20:24])[0]
        b[16:24] = struct.pack(">II", w, h)
        if rng.random() < 0.9:
            fix_crc(b, 8, 13)
    elif kind == "ihdr_field":
        i = rng.randrange(24, 29)
        b[i] = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 255, rng.randrange(256)])
        fix_crc(b, 8, 13)
    elif kind == "idat_raw":
        # rebuild the image data: wrong size, bad filter bytes, garbage; valid zlib and CRCs
        idats = [c for c in ch if c[2] == b"IDAT"]
        if idats:
            z = b"".join(bytes(b[o + 8:o + 8 + n]) for o, n, _ in idats)
            try:
                raw = bytearray(zlib.decompressobj().decompress(z))
            except zlib.error:
                raw = bytearray(b"\0" * 64)
            m = rng.choice(["short", "long", "filter", "garbage", "empty"])
            if m == "short":
                raw = raw[:rng.randrange(len(raw) + 1)]
            elif m == "long":
                raw += bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
            elif m == "filter":
                for _ in range(rng.randint(1, 4)):
                    if raw:
                        raw[rng.randrange(len(raw))] = rng.choice([5, 6, 255])
            elif m == "garbage":
                raw = bytearray(rng.randrange(256) for _ in range(len(raw)))
            else:
                raw = bytearray()
            new = chunk(b"IDAT", zlib.compress(bytes(raw)))
            first, last = idats[0], idats[-1]
            b = b[:first[0]] + new + b[last[0] + 12 + last[1]:]
    elif kind == "insert":
        typ = rng.choice([b"IDAT", b"PLTE", b"tRNS", b"IHDR", b"zTXt", b"iCCP", b"sBIT", b"gAMA",
                          b"acTL", b"fcTL", b"eXIf", b"IEND", b"abCd", b"ABCD"])
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 13, 100, 1000])))
        if typ in (b"zTXt", b"iCCP") and rng.random() < 0.7:
            data = b"k\x00\x00" + zlib.compress(b"\0" * rng.choice([100, 10 ** 6, 2 * 10 ** 7]))
        at = rng.choice(ch)[0] if ch else len(b)
        b[at:at] = chunk(typ, data)
    elif kind == "plte":
        pl = [c for c in ch if c[2] in (b"PLTE", b"tRNS")]
        if pl:
            off, n, typ = rng.choice(pl)
            nn = rng.choice([0, 1, 3, 767, 768, 771, n + 3, max(n - 3, 0)])
            data = bytes(rng.randrange(256) for _ in range(nn))
            b = b[:off] + chunk(typ, data) + b[off + 12 + n:]
    if rng.random() < 0.15:  # stack a second mutation
        return mutate_png(bytes(b), rng)
    return bytes(b), kind


# ------------------------------------------------------------------ y4m seeds

Y4M_C = {"mono": 1.0, "mono16": 2.0, "mono10": 2.0, "420jpeg": 1.5, "420mpeg2": 1.5, "420paldv": 1.5,
         "420": 1.5, "422": 2.0, "444": 3.0, "411": 1.5, "444alpha": 4.0, "420p10": 3.0, "444p16": 6.0,
         "422p12": 4.0, None: 1.5}


def make_y4m(w, h, c, frames, rng, extra=""):
    hdr = "YUV4MPEG2 W%d H%d F25:1 Ip A1:1" % (w, h)
    if c:
        hdr += " C" + c
    hdr += extra + "\n"
    fsize = int(w * h * Y4M_C[c]) if c not in ("420", "420jpeg", "420mpeg2", "420paldv", "411", None) else \
        w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2) if c != "411" else w * h + 2 * ((w + 3) // 4) * h
    out = hdr.encode()
    for _ in range(frames):
        out += b"FRAME\n" + bytes(rng.randrange(256) for _ in range(fsize))
    return out


def y4m_seeds():
    rng = random.Random(2)
    seeds = []
    for c in Y4M_C:
        w, h = rng.choice(((16, 8), (7, 5), (1, 1), (32, 3)))
        seeds.append(make_y4m(w, h, c, 3, rng, rng.choice(["", " XYSCSS=420JPEG", " XCOLORRANGE=FULL"])))
    return seeds


def mutate_y4m(seed, rng):
    b = bytearray(seed)
    nl = b.index(b"\n")
    hdr, body = bytes(b[:nl]).decode("latin-1"), bytes(b[nl + 1:])
    kind = rng.choice(["token", "token", "token", "nonl", "longline", "frameline", "frameline", "trunc",
                       "flip", "concat", "addtoken"])
    toks = hdr.split(" ")
    vals = ["0", "-1", "1", "2", "65535", "65536", "46341", "2147483647", "2147483648", "99999999999",
            "", "x", "16", "8", "3"]
    if kind == "token":
        i = rng.randrange(1, len(toks))
        t = toks[i]
        k = t[:1]
        if k in "WH":
            toks[i] = k + rng.choice(vals)
        elif k == "F":
            toks[i] = "F" + rng.choice(["0:0", "0:1", "1:0", "30000:1001", "-1:1", "2147483647:1", "1", ":",
                                        "25:", "1:2147483647", "abc"])
        elif k == "A":
            toks[i] = "A" + rng.choice(["0:0", "1:0", "-1:-1", "x"])
        elif k == "I":
            toks[i] = "I" + rng.choice(["t", "b", "m", "?", "", "pp"])
        elif k == "C":
            toks[i] = "C" + rng.choice(list(c for c in Y4M_C if c) + ["", "mono12", "mono9", "420p16", "foo",
                                                                  "444p", "422p9", "x" * 40])
        else:
            toks[i] = k + rng.choice(vals)
        hdr = " ".join(toks)
    elif kind == "addtoken":
        hdr += " " + rng.choice(["W8", "H8", "C444", "Cmono", "X" + "y" * rng.randrange(300), "Q1",
                                 "", "W", "F0:0", "I?"])
    elif kind == "nonl":
        return (hdr.encode("latin-1") + body), kind
    elif kind == "longline":
        hdr += " X" + "a" * rng.choice([60, 80, 200, 1000, 5000, 70000])
    elif kind == "frameline":
        at = [m.start() for m in re.finditer(b"FRAME", body)]
        if at:
            i = rng.choice(at)
            m = rng.choice(["params", "nonl", "long", "name", "drop"])
            if m == "params":
                body = body[:i + 5] + b" Ixyz Xabc" + body[i + 5:]
            elif m == "nonl" and body[i + 5:i + 6] == b"\n":
                body = body[:i + 5] + body[i + 6:]
            elif m == "long":
                body = body[:i + 5] + b" X" + b"z" * rng.choice([70, 78, 79, 80, 81, 200]) + body[i + 5:]
            elif m == "name":
                body = body[:i] + rng.choice([b"FRAMX", b"frame", b"FRAM", b"YUV4MPEG2 W16 H8"]) + body[i + 5:]
            else:
                body = body[:i]
    elif kind == "trunc":
        body = body[:rng.randrange(len(body) + 1)]
    elif kind == "flip":
        body = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            if body:
                body[rng.randrange(len(body))] = rng.randrange(256)
        body = bytes(body)
    elif kind == "concat":
        other = rng.choice(y4m_seeds())
        body += other if rng.random() < 0.7 else seed
    out = hdr.encode("latin-1") + b"\n" + body
    if rng.random() < 0.15:
        return mutate_y4m(out, rng)
    return out, kind


def raw_case(rng):
    fmt = rng.choice(["gray8", "gray16le"])
    w, h = rng.choice(((16, 8), (7, 5), (1, 1), (33, 3)))
    fs = w * h * (2 if fmt == "gray16le" else 1)
    n = rng.choice([0, 1, 3, fs - 1, fs, fs + 1, 3 * fs, 3 * fs - 1, 3 * fs + 1, rng.randrange(5 * fs)])
    fps = rng.choice(["", "@30", "@30000/1001", "@1"])
    return bytes(rng.randrange(256) for _ in range(n)), "%s:%dx%d%s" % (fmt, w, h, fps), "raw"


# ------------------------------------------------------------------ video container seeds

# (name, extension, ffmpeg output arguments): small clips from lavfi sources, one per container
# and codec the decoder side is likely to meet; an encoder this FFmpeg lacks is skipped.
VIDEO_SEEDS = [
    ("h264", "mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "4", "-bf", "2"]),
    ("h264frag", "mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "3",
                         "-movflags", "frag_keyframe+empty_moov"]),
    ("ffv1", "mkv", ["-c:v", "ffv1", "-pix_fmt", "yuv420p"]),
    ("ffv1gray16", "mkv", ["-c:v", "ffv1", "-pix_fmt", "gray16le"]),
    ("ffv1odd", "nut", ["-c:v", "ffv1", "-pix_fmt", "yuv444p", "-s", "33x17"]),
    ("mpeg4", "avi", ["-c:v", "mpeg4", "-g", "3", "-bf", "1"]),
    ("h264ts", "ts", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "4"]),
    ("vp9", "webm", ["-c:v", "libvpx-vp9", "-b:v", "100k", "-deadline", "realtime", "-g", "4"]),
    ("mjpeg", "mov", ["-c:v", "mjpeg", "-pix_fmt", "yuvj422p"]),
    ("rawnut", "nut", ["-c:v", "rawvideo", "-pix_fmt", "gray"]),
    ("y4m444", "y4m", ["-pix_fmt", "yuv444p"]),
    ("y4mgray16", "y4m", ["-pix_fmt", "gray16le", "-strict", "-1"]),
]


def video_seeds(work):
    """[(name, ext, bytes)], made once with ffmpeg and kept under WORK/seeds."""
    d = os.path.join(work, "seeds")
    os.makedirs(d, exist_ok=True)
    out = []
    for name, ext, args in VIDEO_SEEDS:
        p = os.path.join(d, "%s.%s" % (name, ext))
        if not os.path.exists(p):
            src = "mandelbrot=size=48x32:rate=10" if "gray" in name else "testsrc2=size=48x32:rate=10"
            cmd = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, "-frames:v", "8"] + args + [p]
            if subprocess.run(cmd, capture_output=True).returncode != 0 or not os.path.getsize(p):
                print("seed %s.%s: not made (no encoder?)" % (name, ext), file=sys.stderr)
                if os.path.exists(p):
                    os.unlink(p)
                continue
        out.append((name, ext, open(p, "rb").read()))
    return out


def mutate_video(seed, rng):
    """Container-blind damage: most of it past the first bytes, where the headers are."""
    b = bytearray(seed)
    n = len(b)
    kind = rng.choice(["flip", "flip", "headflip", "trunc", "trunc", "dup", "swap", "zero", "zero"])

    def span():
        a = rng.randrange(n)
        return a, min(n, a + rng.choice([1, 4, 16, 64, 256, 1024, rng.randrange(1, n + 1)]))

    if kind == "flip":
        lo = min(n - 1, rng.choice([64, 256, n // 4]))
        for _ in range(rng.randint(1, 16)):
            b[rng.randrange(lo, n)] = rng.randrange(256)
    elif kind == "headflip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(min(n, 1024))
            b[i] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256), b[i] ^ (1 << rng.randrange(8))])
    elif kind == "trunc":
        b = b[:rng.randrange(n)]
    elif kind == "dup":
        a, e = span()
        at = rng.randrange(n)
        b[at:at] = b[a:e]
    elif kind == "swap":
        (a1, e1), (a2, e2) = sorted([span(), span()])
        if e1 <= a2:
            b = b[:a1] + b[a2:e2] + b[e1:a2] + b[a1:e1] + b[e2:]
    else:
        a, e = span()
        b[a:e] = bytes(e - a)
    if rng.random() < 0.2:
        return mutate_video(bytes(b), rng)
    return bytes(b), kind


# ------------------------------------------------------------------ running and judging

LINE = re.compile(r"^entropy-stream: [^\n]*: [^\n]+\n$")
SAN = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer")


def npy_shape(path):
    with open(path, "rb") as f:
        head = f.read(256)
    m = re.search(rb"'shape': \(([0-9, ]*)\)", head)
    if not m:
        return None, head
    return tuple(int(x) for x in m.group(1).split(b",") if x.strip()), head


# The video summary line (tools/cli_video.c, documented in docs/behaviour.md): the frames
# written, then what was skipped or counted, each clause only when its count is not 0, in
# this order; then ", interrupted" and the outputs that failed. Under -q it is printed only
# when one of the counts is there.
SUMMARY = re.compile(
    r"^entropy-stream: (?P<frames>\d+) frames?(?: \(\d+ skipped: exist\))?, \d+x\d+, [0-9.]+ s, "
    r"[0-9.]+ fps, (?:CPU|CPU \(GPUs still opening\)|GPU x\d+(?: \+ CPU)?)"
    r"(?P<counts>(?:, \d+ frames? decoded with errors)?"
    r"(?:, \d+ corrupt packets? skipped)?"
    r"(?:, \d+ packets? flagged corrupt by the demuxer \(decoded\))?"
    r"(?:, \d+ packets? before the first keyframe dropped)?"
    r"(?:, \d+ packets? dropped by the decoder)?"
    r"(?:, \d+ FFmpeg error messages?(?: \(-v shows them\))?)?)"
    r"(?:, interrupted)?(?:; failed: .+)?$")


def split_summary(err):
    """(the lines of ERR that are not the summary, the summary's match or None, problems):
    at most one summary line, and it is the last line."""
    lines = err.splitlines(keepends=True)
    probs, summary, rest = [], None, []
    for i, l in enumerate(lines):
        m = SUMMARY.match(l.rstrip("\n"))
        if not m:
            rest.append(l)
        elif summary is not None:
            probs.append("two summary lines")
        else:
            summary = m
            if i != len(lines) - 1:
                probs.append("summary line not the last")
    return "".join(rest), summary, probs


def count_video_frames(path):
    """Frames ffprobe decodes from PATH, or None when it cannot open it."""
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", path], capture_output=True, timeout=30)
    try:
        return int(r.stdout.decode().strip().split("\n")[0].strip(","))
    except ValueError:
        return None


def judge(rc, err, timed_out, out_path, stats, want_name, video):
    """A list of problems (empty: fine). A video (y4m, raw, containers) keeps the frames before
    an error (a short last frame), and its summary line (SUMMARY) stays under -q when packets
    were skipped, frames were decoded with errors or FFmpeg logged errors; it comes last, after
    the error line of a failed run, and counts the frames --stats has records for. OUT_PATH is
    an .npy, or a video file checked with ffprobe."""
    probs = []
    if timed_out:
        return ["timeout"]
    recs = open(stats).read().splitlines()[1:] if os.path.exists(stats) else []
    if video:
        # an error line may be followed by the summary (frames before the error kept)
        err, summary, sp = split_summary(err)
        probs += sp
        if summary:
            if not summary.group("counts"):
                probs.append("summary under -q with nothing skipped or counted")
            if ("; failed: " not in summary.group(0) and os.path.exists(stats)
                    and int(summary.group("frames")) != len(recs)):
                probs.append("summary says %s frames, stats %d records" % (summary.group("frames"), len(recs)))
    if SAN.search(err):
        probs.append("sanitizer")
    if rc not in (0, 2):
        probs.append("exit %d" % rc)
    if out_path.endswith("/"):
        if rc == 0 and err.strip():
            probs.append("stderr on success")
        names = sorted(os.listdir(out_path)) if os.path.isdir(out_path) else []
        want = ["frame_%06d.png" % i for i in range(len(recs))]
        if names != want and (rc == 0 or names):
            probs.append("frame directory holds %s, stats %d records" % (names[:4], len(recs)))
    elif not out_path.endswith(".npy"):
        if rc == 0 and err.strip():
            probs.append("stderr on success")
        if rc == 0 and not os.path.exists(out_path):
            probs.append("exit 0 without the video")
        if os.path.exists(out_path) and len(recs) > 0:
            t = count_video_frames(out_path)
            if t is None:
                probs.append("output video does not open")
            elif t != len(recs):
                probs.append("video has %d frames, stats %d records" % (t, len(recs)))
        elif os.path.exists(out_path) and out_path.endswith(".mp4") and count_video_frames(out_path) not in (None, 0):
            probs.append("video has frames, stats none")
    elif rc == 0 or (video and rc == 2 and os.path.exists(out_path)):
        if rc == 0 and err.strip():
            probs.append("stderr on success")
        if not os.path.exists(out_path):
            probs.append("exit 0 without the .npy")
        else:
            shape, head = npy_shape(out_path)
            if shape is None:
                probs.append("bad .npy header")
            else:
                n = 1
                for s in shape:
                    n *= s
                hl = head.index(b"\n") + 1 if b"\n" in head else 0
                if os.path.getsize(out_path) != hl + 4 * n:
                    probs.append("npy size %d != header %d + 4 * %d" % (os.path.getsize(out_path), hl, n))
                t = shape[0] if len(shape) == 3 else 1
                if len(recs) != t:
                    probs.append("npy has %d maps, stats %d records" % (t, len(recs)))
                if n == 0 and not video:
                    probs.append("empty map on success")
    if rc == 2:
        if os.path.exists(out_path) and not video:
            probs.append("failed run left the .npy")
        if not LINE.match(err) and not SAN.search(err):
            probs.append("message not one line: %r" % err[:300])
        elif want_name and not err.startswith("entropy-stream: %s: " % want_name):
            probs.append("message does not name the input: %r" % err[:200])
    return probs


def vmem_limit(kb):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (kb * 1024, kb * 1024))
    return f


def run_one(args, work, data, kind, raw_spec=None, mode="file", ext="bin", out="x.npy", vmem=False):
    """MODE: "file" (stdin from the file), "pipe" (stdin from cat), "path" (the file named)."""
    d = os.path.join(work, "run")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if kind == "png":
        ext = "png"
    elif kind == "y4m" and mode == "path":
        ext = "y4m"
    inp = os.path.join(d, "in." + ext)
    with open(inp, "wb") as f:
        f.write(data)
    out_path, stats = os.path.join(d, out), os.path.join(d, "s.csv")
    cmd = [args.vmem_bin if vmem else args.bin]
    stdin = None
    name = inp
    if kind == "png" or mode == "path":
        cmd.append(inp)
    else:
        cmd.append("-")
        name = "-"
        if raw_spec:
            cmd += ["--raw", raw_spec]
    cmd += ["-o", out_path, "--stats", stats, "-q", "-y", "--device", "cpu"]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=3072",
               UBSAN_OPTIONS="print_stacktrace=1")
    pre = vmem_limit(args.vmem_kb) if vmem else None
    rss0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        if kind != "png" and mode == "pipe":
            p = subprocess.Popen(["cat", inp], stdout=subprocess.PIPE)
            r = subprocess.run(cmd, stdin=p.stdout, capture_output=True, timeout=args.timeout, env=env,
                               preexec_fn=pre)
            p.stdout.close()
            p.wait()
        else:
            with open(inp, "rb") as fin:
                r = subprocess.run(cmd, stdin=fin if name == "-" else subprocess.DEVNULL, capture_output=True,
                                   timeout=args.timeout, env=env, preexec_fn=pre)
        rc, err, to = r.returncode, r.stderr.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired as e:
        rc, err, to = -1, (e.stderr or b"").decode("utf-8", "replace"), True
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    want = name if name != "-" else None
    probs = judge(rc, err, to, out_path, stats, want, kind != "png")
    if rss > rss0 and rss > args.rss_mb * 1024:
        probs.append("max RSS %d MB" % (rss // 1024))
    if vmem and re.search(r"memory", err, re.I):
        probs.append("out of memory under ulimit -v %d" % args.vmem_kb)
    return probs, rc, err, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-asan", "tools", "entropy-stream"))
    ap.add_argument("-n", type=int, default=1000, help="mutants to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="png,y4m,raw")
    ap.add_argument("--work", default="/tmp/es-fuzz")
    ap.add_argument("--timeout", type=float, default=5)
    ap.add_argument("--vmem-bin", help="a build without sanitizers: a quarter of the video mutants run "
                    "through it under ulimit -v")
    ap.add_argument("--vmem-kb", type=int, default=2000000)
    ap.add_argument("--rss-mb", type=int, default=1500, help="a run whose peak RSS passes this is a finding")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = args.kinds.split(",")
    os.makedirs(os.path.join(args.work, "findings"), exist_ok=True)
    pseeds, yseeds = png_seeds(), y4m_seeds()
    vseeds = video_seeds(args.work) if "video" in kinds else []
    counts, found, rcs = {}, 0, {}
    for i in range(args.n):
        kind = rng.choice(kinds)
        spec, mode, ext, out, vmem = None, "file", "bin", "x.npy", False
        if kind == "png":
            data, m = mutate_png(rng.choice(pseeds), rng)
        elif kind == "y4m":
            data, m = mutate_y4m(rng.choice(yseeds), rng)
            mode = rng.choice(["file", "file", "pipe", "path"])
        elif kind == "video":
            sname, ext, sdata = rng.choice(vseeds)
            data, m = mutate_video(sdata, rng)
            m = "%s-%s" % (sname, m)
            # standard input is probed as a file is (a container, not only y4m)
            mode = rng.choice(["path", "path", "pipe", "file"])
            if rng.random() < 0.1:
                ext = "bin"  # no extension to guess from: probing alone
            out = rng.choice(["x.npy", "x.npy", "x.mp4", "x.mkv", "frames/"])
            vmem = bool(args.vmem_bin) and rng.random() < 0.25
        else:
            data, spec, m = raw_case(rng)
            mode = rng.choice(["file", "pipe"])
        key = "%s/%s" % (kind, m)
        counts[key] = counts.get(key, 0) + 1
        probs, rc, err, cmd = run_one(args, args.work, data, kind, spec, mode, ext, out, vmem)
        rcs[rc] = rcs.get(rc, 0) + 1
        if probs:
            found += 1
            base = os.path.join(args.work, "findings", "%05d-%s-%s" % (i, kind, m))
            with open(base + ".in", "wb") as f:
                f.write(data)
            with open(base + ".txt", "w") as f:
                f.write("%s\nmode %s\n%s\nrc %d\n%s" % (probs, mode, " ".join(cmd), rc, err))
            print("FINDING %d %s %s: %s" % (i, key, mode, "; ".join(probs)[:300]), flush=True)
        if (i + 1) % 200 == 0:
            print("... %d run, %d findings, exit codes %s" % (i + 1, found, rcs), flush=True)
    print("done: %d mutants, %d findings" % (args.n, found))
    print("exit codes: %s" % rcs)
    for k in sorted(counts):
        print("  %-24s %d" % (k, counts[k]))


if __name__ == "__main__":
    sys.exit(main())
