"""pytest: es.open, the frames of a video through the library's run, against the CLI's
-o x.npy and --stats x.csv on the same input (samples/clip.mp4, a y4m made by ffmpeg, raw
frames from a pipe, standard input), and its life: threads joined and frames freed at a
break, a close or a deletion; Ctrl-C while waiting; memory bounded on a long stream; bad
input. Skips where the module's library was built without FFmpeg (its run has no video
source then) or where the CLI or ffmpeg is missing."""
import csv
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import numpy as np
import pytest

import entropy_stream as es

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLIP = os.path.join(ROOT, "samples", "clip.mp4")
W, H, N = 320, 240, 75  # samples/clip.mp4


def _has_video():
    try:
        with es.open(CLIP) as frames:
            next(frames)
        return True, ""
    except OSError as e:
        return False, str(e)


HAVE_VIDEO, WHY = _has_video()
pytestmark = pytest.mark.skipif(not HAVE_VIDEO, reason=f"es.open cannot read video: {WHY}")


def cli():
    path = os.environ.get("ES_BIN") or os.path.join(ROOT, "build", "tools", "entropy-stream")
    if not os.path.exists(path):
        pytest.skip(f"no CLI at {path} (ES_BIN)")
    return path


def ffmpeg():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.access(os.path.join(d, "ffmpeg"), os.X_OK):
            return os.path.join(d, "ffmpeg")
    pytest.skip("no ffmpeg on PATH")


def tasks():
    """Threads of this process, as the kernel counts them."""
    return len(os.listdir("/proc/self/task"))


def wait_tasks(want, timeout=3.0):
    """The thread count once it is back to want (a FIFO's pump thread ends within 0.1 s of
    its source's close), or what it still is after timeout."""
    end = time.monotonic() + timeout
    while tasks() > want and time.monotonic() < end:
        time.sleep(0.02)
    return tasks()


def cli_run(args, src, stdin=None):
    """The CLI's maps (.npy) and statistics records (CSV) of src."""
    with tempfile.TemporaryDirectory() as tmp:
        npy, csv_path = os.path.join(tmp, "h.npy"), os.path.join(tmp, "s.csv")
        subprocess.run([cli(), "-q", *args, src, "-o", npy, "--stats", csv_path], check=True,
                       stdin=stdin)
        with open(csv_path, newline="") as f:
            return np.load(npy), list(csv.DictReader(f))


def assert_same_as_cli(got, maps, records, name):
    """Frames of es.open equal, bit for bit, to the CLI's maps and statistics records."""
    assert len(got) == len(maps) == len(records)
    for f, m, r in zip(got, maps, records):
        assert f.index == int(r["index"])
        assert f.name == r["name"] == name
        assert f.pts == (float(r["pts"]) if r["pts"] else None)
        assert f.damaged == (r["damaged"] == "1")
        assert f.map.dtype == np.float32 and f.map.shape == (int(r["height"]), int(r["width"]))
        np.testing.assert_array_equal(f.map, m)
        s = f.stats
        assert s["count"] == f.map.size
        # The CSV writes each value in the shortest form that reads back as the same double
        # (min and max: the same float32)
        for k in ("mean", "std", "global_entropy", "global_entropy_levels"):
            assert s[k] == float(r[k]), k
        for k in ("min", "max"):
            assert np.float32(s[k]) == np.float32(r[k]) and s[k] == float(np.float32(r[k])), k
        assert list(s["hist"]) == [int(r[f"hist_{b}"]) for b in range(s["bins"])]


ARGS = [
    ({}, []),
    (dict(window=9, shape="disk", border="reflect", levels=256, base="e", bins=8),
     ["-w", "9", "--shape", "disk", "--border", "reflect", "-L", "256", "--base", "e",
      "--stats-bins", "8"]),
]


# ---- The same bits as the CLI. ----

@pytest.mark.parametrize("kw,args", ARGS)
def test_clip_matches_cli(kw, args):
    maps, records = cli_run(args, CLIP)
    assert maps.shape == (N, H, W)
    got = list(es.open(CLIP, **kw))
    assert [f.index for f in got] == list(range(N))
    assert_same_as_cli(got, maps, records, CLIP)
    # Statistics only, and maps only: the same values
    st = list(es.open(CLIP, map=False, **kw))
    assert all(f.map is None for f in st)
    assert [f.stats["mean"] for f in st] == [f.stats["mean"] for f in got]
    mp = list(es.open(CLIP, stats=False, **kw))
    assert all(f.stats is None for f in mp)
    np.testing.assert_array_equal(mp[40].map, got[40].map)


def test_y4m_by_ffmpeg_matches_cli():
    with tempfile.TemporaryDirectory() as tmp:
        y4m = os.path.join(tmp, "clip.y4m")
        subprocess.run([ffmpeg(), "-v", "error", "-i", CLIP, "-frames:v", "30", "-pix_fmt",
                        "yuv420p", "-f", "yuv4mpegpipe", y4m], check=True)
        maps, records = cli_run(["-w", "7", "-L", "64"], y4m)
        got = list(es.open(y4m, window=7, levels=64))
        assert len(got) == 30
        assert_same_as_cli(got, maps, records, y4m)


def test_raw_from_a_pipe_matches_cli():
    def gray():
        return subprocess.Popen([ffmpeg(), "-v", "error", "-i", CLIP, "-f", "rawvideo",
                                 "-pix_fmt", "gray", "-"], stdout=subprocess.PIPE)
    p = gray()
    try:
        maps, records = cli_run(["--raw", f"gray8:{W}x{H}@25", "-w", "11"], "-", stdin=p.stdout)
    finally:
        p.stdout.close()
        p.wait()
    p = gray()
    try:
        got = list(es.open(p.stdout, raw=f"gray8:{W}x{H}@25", window=11))
    finally:
        p.stdout.close()
        p.wait()
    assert p.returncode == 0
    # The CLI calls standard input "-"; a file object is its /dev/fd/N
    for r in records:
        r["name"] = got[0].name
    assert got[0].name.startswith("/dev/fd/")
    assert_same_as_cli(got, maps, records, got[0].name)


@pytest.mark.parametrize("how", ["pipe", "file"])
def test_standard_input(how):
    """es.open("-") in a child python whose stdin is a pipe (through /dev/fd/0) or a file
    (the library's "-"), against the CLI on the same y4m."""
    with tempfile.TemporaryDirectory() as tmp:
        y4m, out = os.path.join(tmp, "in.y4m"), os.path.join(tmp, "out.npy")
        subprocess.run([ffmpeg(), "-v", "error", "-i", CLIP, "-frames:v", "20", "-pix_fmt",
                        "gray", "-f", "yuv4mpegpipe", "-strict", "-1", y4m], check=True)
        maps, records = cli_run(["-w", "5", "-L", "32"], "-", stdin=open(y4m, "rb"))
        code = ("import sys, numpy as np, entropy_stream as es\n"
                "fr = list(es.open('-', window=5, levels=32))\n"
                "assert [f.name for f in fr] == ['-'] * len(fr)\n"
                "np.save(sys.argv[1], np.stack([f.map for f in fr]))\n"
                "print(repr([f.stats['mean'] for f in fr]))\n")
        if how == "file":
            r = subprocess.run([sys.executable, "-c", code, out], stdin=open(y4m, "rb"),
                               capture_output=True, text=True, timeout=120)
        else:
            cat = subprocess.Popen(["cat", y4m], stdout=subprocess.PIPE)
            r = subprocess.run([sys.executable, "-c", code, out], stdin=cat.stdout,
                               capture_output=True, text=True, timeout=120)
            cat.stdout.close()
            cat.wait()
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(np.load(out), maps)
        assert eval(r.stdout) == [float(x["mean"]) for x in records]


# ---- Its life: threads, frames, Ctrl-C, memory. ----

def test_break_leaves_no_thread_and_no_frame():
    list(es.open(CLIP, map=False))  # whatever a first run starts for good (thread pools)
    base = tasks()
    assert es._core._open_live_maps() == 0
    for round_ in range(3):
        frames = es.open(CLIP, window=9, queue=4)
        for f in frames:
            if f.index == 2:
                break
        assert tasks() > base  # the run is alive, its queue filling with frames
        end = time.monotonic() + 5
        while es._core._open_live_maps() < 1 + 4 and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.3)
        # f, the queue full, and at most the one the sink copied and waits to queue
        assert 1 + 4 <= es._core._open_live_maps() <= 1 + 4 + 1
        if round_ == 0:
            del frames  # deletion
        elif round_ == 1:
            frames.close()
            assert frames.closed
            assert next(frames, None) is None
        else:
            with frames:
                pass
        assert wait_tasks(base, 0.0) == base, "a thread of the run is left"
        assert es._core._open_live_maps() == 1  # only f, the caller's
        assert f.map.shape == (H, W) and f.map.flags.writeable and f.map.flags.c_contiguous
        del f
        assert es._core._open_live_maps() == 0
    # Read to its end: the run is joined before StopIteration
    frames = es.open(CLIP, map=False)
    assert sum(1 for _ in frames) == N and frames.closed
    assert tasks() == base


def test_close_a_blocked_pipe_and_ctrl_c():
    """A pipe whose writer sends a header and then nothing: __next__ waits; Ctrl-C raises
    KeyboardInterrupt within a slice; the iterator still works; close joins promptly."""
    list(es.open(CLIP, map=False))
    base = tasks()
    r, w = os.pipe()
    os.write(w, b"YUV4MPEG2 W64 H48 F25:1 Cmono\nFRAME\n" + bytes(64 * 48))
    frames = es.open(os.fdopen(r, "rb"))
    try:
        assert next(frames).map.shape == (48, 64)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            next(frames)
        took = time.monotonic() - t0
        timer.join()
        assert 0.25 < took < 1.5, took
        os.write(w, b"FRAME\n" + bytes(range(48)) * 64)
        f = next(frames)
        assert f.index == 1 and f.map.shape == (48, 64)
        t0 = time.monotonic()
        frames.close()
        assert time.monotonic() - t0 < 2.0
    finally:
        os.close(w)
        frames.close()
    assert wait_tasks(base) == base


def test_named_fifo():
    list(es.open(CLIP, map=False))
    base = tasks()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "in.fifo")
        os.mkfifo(fifo)
        frames = es.open(fifo)  # the run waits in open(2) for a writer that never comes
        time.sleep(0.3)
        t0 = time.monotonic()
        frames.close()
        assert time.monotonic() - t0 < 2.0
        assert next(frames, None) is None
        assert wait_tasks(base) == base
        # With a writer: the frames it writes, named by the FIFO's path
        data = b"YUV4MPEG2 W32 H16 F10:1 Cmono\n" + (b"FRAME\n" + bytes(range(256)) * 2) * 5

        def writer():
            with open(fifo, "wb") as f:
                f.write(data)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        got = list(es.open(fifo, window=3))
        t.join(10)
        assert [(f.index, f.pts, f.name) for f in got] == [(i, i / 10, fifo) for i in range(5)]
        want = es.entropy(np.frombuffer(bytes(range(256)) * 2, np.uint8).reshape(16, 32),
                          window=3)
        np.testing.assert_array_equal(got[4].map, want)
    assert wait_tasks(base) == base


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_memory_bounded_on_a_long_pipe():
    """500 frames of 640x480 (a map is 1.2 MB: 590 MB if they piled up) through a pipe,
    the caller slower than the run for a while: RSS and traced memory stay flat."""
    w, h, n = 640, 480, 500
    r, wfd = os.pipe()
    rng = np.random.default_rng(7)
    pics = [rng.integers(0, 256, (h, w), np.uint8).tobytes() for _ in range(4)]

    def writer():
        with os.fdopen(wfd, "wb") as f:
            f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Cmono\n".encode())
            for i in range(n):
                f.write(b"FRAME\n" + pics[i % 4])

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    tracemalloc.start()
    try:
        seen, rss, traced = 0, [], []
        with es.open(os.fdopen(r, "rb"), queue=4) as frames:
            for f in frames:
                assert f.map.shape == (h, w)
                seen += 1
                if seen == 30:
                    time.sleep(1.0)  # the run runs ahead: as far as the queue lets it
                    base_rss, base_traced = rss_mb(), tracemalloc.get_traced_memory()[0]
                if seen > 30 and seen % 50 == 0:
                    rss.append(rss_mb())
                    traced.append(tracemalloc.get_traced_memory()[0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        t.join(10)
    assert seen == n
    # AddressSanitizer keeps freed blocks in its quarantine (256 MB by default): the RSS of a
    # sanitizer build grows with what was freed. The traced memory below still counts.
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert max(rss) - base_rss < 40, (base_rss, rss)
    assert max(traced) - base_traced < 8 * 2**20, (base_traced, traced)
    assert peak < 40 * 2**20, peak  # the maps given are traced: a few at a time


# ---- Bad input. ----

def test_bad_input():
    live = es._core._open_live_maps()
    with pytest.raises(OSError, match=r"^entropy-stream: /nonexistent/x\.mp4: cannot open: "
                                      r"No such file or directory$"):
        list(es.open("/nonexistent/x.mp4"))
    with tempfile.TemporaryDirectory() as tmp:
        junk = os.path.join(tmp, "junk.mp4")
        with open(junk, "wb") as f:
            f.write(b"not a video at all" * 100)
        with pytest.raises(OSError, match="junk.mp4: cannot open"):
            next(es.open(junk))
        # a directory is its images (none here; python/tests/test_open_dir.py)
        assert list(es.open(tmp)) == []
        # A short last frame: the whole ones first, then the error naming the frame
        raw = os.path.join(tmp, "short.gray")
        with open(raw, "wb") as f:
            f.write(bytes(64 * 48) * 3 + bytes(100))
        seen = []
        with pytest.raises(OSError, match=r"short\.gray: frame 3 is short \(got 100 of 3072"):
            for fr in es.open(raw, raw="gray8:64x48"):
                seen.append(fr.index)
        assert seen == [0, 1, 2]
        del fr
    for kw, msg in [(dict(window=4), r"window=4: must be odd, 1\.\.255"),
                    (dict(window=257), r"window=257: must be odd, 1\.\.255"),
                    (dict(levels=1), r"levels=1: must be 2\.\.65536"),
                    (dict(shape="round"), r"shape='round': must be 'square' or 'disk'"),
                    (dict(border="wrap"), "border='wrap'"),
                    (dict(device="tpu"), "device='tpu'"),
                    (dict(base=10), "base=10"),
                    (dict(queue=0), r"queue=0: must be 1\.\.4096"),
                    (dict(bins=0), r"bins=0: must be 1\.\.1024"),
                    (dict(raw="gray12:64x48"), "raw='gray12:64x48': must be 'gray8:WxH'")]:
        with pytest.raises(ValueError, match=msg):
            es.open(CLIP, **kw)
    with pytest.raises(TypeError, match="fileno"):
        es.open(io.BytesIO(b"YUV4MPEG2"))
    with pytest.raises(TypeError, match="a path"):
        es.open(42)
    assert es._core._open_live_maps() == live


def test_help_is_enough():
    doc = es.open.__doc__
    for word in ("Parameters", "Yields", "Raises", "queue", "raw", "KeyboardInterrupt",
                 "close()", "Examples"):
        assert word in doc
    assert "seconds" in es.Frame.pts.__doc__ and "float32" in es.Frame.map.__doc__
    f = next(iter(es.open(CLIP)))
    assert (f.index, f.pts, f.name) == f[:3]


def test_device_gpu_without_one_or_with():
    """device='gpu': RuntimeError from next() where no GPU is usable (the run's context
    fails: exit 4), else the CPU's bits."""
    want = [f.map for f in es.open(CLIP, window=9, device="cpu", stats=False)]
    try:
        got = [f.map for f in es.open(CLIP, window=9, device="gpu", stats=False)]
    except RuntimeError as e:
        assert "GPU" in str(e) or "gpu" in str(e), str(e)
        assert str(e).startswith("entropy-stream: ")
    else:
        assert "GPU" in es.version_info()
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
