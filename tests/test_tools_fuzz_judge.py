#!/usr/bin/python3
"""test_tools_fuzz_judge.py - tools/fuzz-inputs.py's judge must read the program's own lines:
a finding must mean a defect (issue 27 item 10: its video findings were all summary lines it
did not know, "... (decoded)", "... dropped", and an error line followed by the summary). Real
runs of entropy-stream that are right (a damaged y4m FRAME line; a damaged H.264 .mp4, whose
summary has frames decoded with errors, packets dropped and FFmpeg messages; a short last raw
frame after a damaged one: an error line, then the summary) must give no finding, and the
same files with their stderr made wrong (two summaries, a summary before the error, a summary
that counts other frames than --stats, a summary under -q with nothing counted, a stray line)
must each give one."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("ES_SRC", os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("ES_BIN")
if not BIN or os.environ.get("ES_HAVE_FFMPEG") != "1":
    print("test_tools_fuzz_judge: skipped (no ES_BIN, or built without FFmpeg)")
    sys.exit(77)
spec = importlib.util.spec_from_file_location("fuzz_inputs", os.path.join(SRC, "tools", "fuzz-inputs.py"))
fz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fz)
fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL:", what)


def run(d, inp, extra=(), stdin=None):
    """entropy-stream INP -o D/x.npy --stats D/s.csv -q as the fuzzer runs it: (rc, stderr)."""
    cmd = [BIN, inp, "-o", os.path.join(d, "x.npy"), "--stats", os.path.join(d, "s.csv"), "-q", "-y",
           "--device", "cpu"] + list(extra)
    r = subprocess.run(cmd, capture_output=True, stdin=stdin)
    return r.returncode, r.stderr.decode("utf-8", "replace")


def judge(d, rc, err, name):
    return fz.judge(rc, err, False, os.path.join(d, "x.npy"), os.path.join(d, "s.csv"), name, True)


with tempfile.TemporaryDirectory() as t:
    # A y4m stream whose fourth FRAME line is damaged: that frame skipped, 9 kept, exit 0.
    y4m = os.path.join(t, "dmg.y4m")
    out = bytearray(b"YUV4MPEG2 W8 H6 F25:1 Ip A1:1 Cmono\n")
    for i in range(10):
        out += (b"FRAMX\n" if i == 3 else b"FRAME\n") + bytes((i * 37 + k) % 256 for k in range(48))
    open(y4m, "wb").write(bytes(out))
    rc, err = run(t, y4m)
    summary = err
    check(rc == 0 and fz.SUMMARY.match(err.rstrip("\n")), "damaged y4m: exit %d, stderr %r" % (rc, err))
    check(judge(t, rc, err, y4m) == [], "damaged y4m: findings %s" % judge(t, rc, err, y4m))

    # The same files, the stderr made wrong: each a finding.
    sm = fz.SUMMARY.match(summary.rstrip("\n"))
    if sm:
        bad = {
            "two summaries": summary + summary,
            "summary counting other frames": summary.replace(" %s frames," % sm.group("frames"),
                                                             " %d frames," % (int(sm.group("frames")) + 1), 1),
            "a summary under -q with nothing counted":
                summary[:summary.index(sm.group("counts"))] + "\n" if sm.group("counts") else None,
            "a stray line after the summary": summary + "[h264 @ 0x5581] error while decoding MB 1 2\n",
            "a stray line before the summary": "[h264 @ 0x5581] error while decoding MB 1 2\n" + summary,
        }
        for what, e in bad.items():
            check(e is not None and judge(t, 0, e, y4m) != [], "%s: no finding (%r)" % (what, e))
        # rc 2: the error line, then the summary, is right; the other way round is not
        e2 = "entropy-stream: %s: frame 10 is short (got 3 of 48 bytes)\n" % y4m
        check(judge(t, 2, e2 + summary, y4m) == [],
              "error line + summary: findings %s" % judge(t, 2, e2 + summary, y4m))
        check(judge(t, 2, summary + e2, y4m) != [], "summary + error line: no finding")
        check(judge(t, 2, e2 + e2 + summary, y4m) != [], "two error lines + summary: no finding")

    # A real error line followed by the summary: a damaged FRAME line, then a short last frame.
    cut = os.path.join(t, "cut.y4m")
    open(cut, "wb").write(bytes(out[:-20]))
    rc, err = run(t, cut)
    check(rc == 2 and len(err.splitlines()) == 2 and fz.SUMMARY.match(err.splitlines()[1]),
          "damaged and cut y4m: exit %d, stderr %r" % (rc, err))
    check(judge(t, rc, err, cut) == [], "damaged and cut y4m: findings %s (%r)" % (judge(t, rc, err, cut), err))

    # Damaged H.264 in .mp4: frames decoded with errors kept, packets dropped by the decoder,
    # FFmpeg's messages counted; the summary ends with none of the old "skipped".
    enc = subprocess.run(["ffmpeg", "-hide_banner", "-encoders"], capture_output=True).stdout.decode()
    if shutil.which("ffmpeg") and " libx264 " in enc:
        mp4 = os.path.join(t, "h264.mp4")
        r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
                            "-frames:v", "100", "-c:v", "libx264", "-threads", "1", "-g", "25", "-pix_fmt", "yuv420p",
                            "-fflags", "+bitexact", "-flags:v", "+bitexact", mp4], capture_output=True)
        check(r.returncode == 0, "cannot make the H.264 clip")
        d = bytearray(open(mp4, "rb").read())
        a, n = len(d) * 45 // 100, len(d) // 12
        x = 27
        for i in range(a, a + n):  # xorshift: fixed bytes, no Python version dependence
            x ^= (x << 13) & 0xFFFFFFFF
            x ^= x >> 17
            x ^= (x << 5) & 0xFFFFFFFF
            d[i] = x & 0xFF
        open(mp4, "wb").write(bytes(d))
        rc, err = run(t, mp4)
        check(rc == 0 and "decoded with errors" in err, "damaged H.264: exit %d, stderr %r" % (rc, err))
        check(judge(t, rc, err, mp4) == [], "damaged H.264: findings %s (%r)" % (judge(t, rc, err, mp4), err))
        print("damaged H.264:", err.strip())
    else:
        print("test_tools_fuzz_judge: damaged H.264 skipped (no libx264)")

print("test_tools_fuzz_judge:", "all checks passed" if not fails else "%d check(s) failed" % fails)
sys.exit(1 if fails else 0)
