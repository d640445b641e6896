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

    python3 tools/fuzz-inputs.py --bin build-asan/tools/entropy-stream -n 2000 [--seed 1]
        [--kinds png,y4m,raw] [--work /tmp/es-fuzz] [--timeout 5]

Meant for an ASan+UBSan build (tools/build.sh build-asan -DES_SANITIZE=ON ...); one process
at a time. Not a ctest: it is slow by design.
"""
import argparse
import os
import random
import re
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


SUMMARY = re.compile(r"^entropy-stream: \d+ frames?, .* corrupt packets? skipped$")


def judge(rc, err, timed_out, out_npy, stats, want_name, video):
    """A list of problems (empty: fine). A video (y4m, raw) keeps the frames before an error
    (a short last frame), and its summary line stays under -q when packets were skipped."""
    probs = []
    if timed_out:
        return ["timeout"]
    if video:
        err = "".join(l + "\n" for l in err.splitlines() if not SUMMARY.match(l))
    if SAN.search(err):
        probs.append("sanitizer")
    if rc not in (0, 2):
        probs.append("exit %d" % rc)
    if rc == 0 or (video and rc == 2 and os.path.exists(out_npy)):
        if rc == 0 and err.strip():
            probs.append("stderr on success")
        if not os.path.exists(out_npy):
            probs.append("exit 0 without the .npy")
        else:
            shape, head = npy_shape(out_npy)
            recs = open(stats).read().splitlines()[1:] if os.path.exists(stats) else []
            if shape is None:
                probs.append("bad .npy header")
            else:
                n = 1
                for s in shape:
                    n *= s
                hl = head.index(b"\n") + 1 if b"\n" in head else 0
                if os.path.getsize(out_npy) != hl + 4 * n:
                    probs.append("npy size %d != header %d + 4 * %d" % (os.path.getsize(out_npy), hl, n))
                t = shape[0] if len(shape) == 3 else 1
                if len(recs) != t:
                    probs.append("npy has %d maps, stats %d records" % (t, len(recs)))
                if n == 0 and not video:
                    probs.append("empty map on success")
    if rc == 2:
        if os.path.exists(out_npy) and not video:
            probs.append("failed run left the .npy")
        if not LINE.match(err) and not SAN.search(err):
            probs.append("message not one line: %r" % err[:300])
        elif want_name and not err.startswith("entropy-stream: %s: " % want_name):
            probs.append("message does not name the input: %r" % err[:200])
    return probs


def run_one(args, work, data, kind, raw_spec=None, mode="file"):
    d = os.path.join(work, "run")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    inp = os.path.join(d, "in.y4m" if kind == "y4m" and mode == "path" else "in.png" if kind == "png" else "in.bin")
    with open(inp, "wb") as f:
        f.write(data)
    out_npy, stats = os.path.join(d, "x.npy"), os.path.join(d, "s.csv")
    cmd = [args.bin]
    stdin = None
    name = inp
    if kind == "png" or mode == "path":
        cmd.append(inp)
    else:
        cmd.append("-")
        name = "-"
        if raw_spec:
            cmd += ["--raw", raw_spec]
    cmd += ["-o", out_npy, "--stats", stats, "-q", "-y", "--device", "cpu"]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=3072",
               UBSAN_OPTIONS="print_stacktrace=1")
    try:
        if kind != "png" and mode == "pipe":
            p = subprocess.Popen(["cat", inp], stdout=subprocess.PIPE)
            r = subprocess.run(cmd, stdin=p.stdout, capture_output=True, timeout=args.timeout, env=env)
            p.wait()
        else:
            with open(inp, "rb") as fin:
                r = subprocess.run(cmd, stdin=fin if name == "-" else subprocess.DEVNULL, capture_output=True,
                                   timeout=args.timeout, env=env)
        rc, err, to = r.returncode, r.stderr.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired as e:
        rc, err, to = -1, (e.stderr or b"").decode("utf-8", "replace"), True
    want = name if name != "-" else None
    return judge(rc, err, to, out_npy, stats, want, kind != "png"), rc, err, cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-asan", "tools", "entropy-stream"))
    ap.add_argument("-n", type=int, default=1000, help="mutants to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="png,y4m,raw")
    ap.add_argument("--work", default="/tmp/es-fuzz")
    ap.add_argument("--timeout", type=float, default=5)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    kinds = args.kinds.split(",")
    os.makedirs(os.path.join(args.work, "findings"), exist_ok=True)
    pseeds, yseeds = png_seeds(), y4m_seeds()
    counts, found, rcs = {}, 0, {}
    for i in range(args.n):
        kind = rng.choice(kinds)
        spec, mode = None, "file"
        if kind == "png":
            data, m = mutate_png(rng.choice(pseeds), rng)
        elif kind == "y4m":
            data, m = mutate_y4m(rng.choice(yseeds), rng)
            mode = rng.choice(["file", "file", "pipe", "path"])
        else:
            data, spec, m = raw_case(rng)
            mode = rng.choice(["file", "pipe"])
        key = "%s/%s" % (kind, m)
        counts[key] = counts.get(key, 0) + 1
        probs, rc, err, cmd = run_one(args, args.work, data, kind, spec, mode)
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
