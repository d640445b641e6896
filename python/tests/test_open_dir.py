"""pytest: es.open of a directory, its images through the library's run (es_source_stills and
the run's batch path): maps and statistics equal to es.entropy / es.stats of each image read
the same way (PNGs of several sizes, 8 and 16 bits, written here), JPEG and TIFF equal to the
CLI's float maps of the same directory, names and order, recursive= and ext=, an undecodable
file among good ones, an empty directory, a missing one, early stops (break, close, with),
the queue bounding what waits for the caller, and mask= (its wrong size a ValueError)."""
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import numpy as np
import pytest

import entropy_stream as es

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def write_png(path, a):
    """A grey PNG of a 2-D uint8 or uint16 array (no library: zlib and the chunk format)."""
    h, w = a.shape
    depth = 16 if a.dtype == np.uint16 else 8
    rows = a.astype(">u2" if depth == 16 else np.uint8).tobytes()
    stride = w * (2 if depth == 16 else 1)
    raw = b"".join(b"\0" + rows[y * stride:(y + 1) * stride] for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image(h, w, seed, dtype=np.uint8):
    """Smooth structure and noise, so that every level and window sees something."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    top = 65535 if dtype == np.uint16 else 255
    base = (np.sin(x / 7.0) + np.cos(y / 5.0) + 2) / 4 * top * 0.7
    return np.clip(base + rng.integers(0, top // 4, (h, w)), 0, top).astype(dtype)


def tasks():
    return len(os.listdir("/proc/self/task"))


def wait_tasks(want, timeout=3.0):
    end = time.monotonic() + timeout
    while tasks() > want and time.monotonic() < end:
        time.sleep(0.02)
    return tasks()


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.fixture
def pngs(tmp_path):
    """A directory of PNGs of several sizes and depths (names out of creation order)."""
    arrays = {"b.png": image(48, 64, 1), "a.png": image(33, 21, 2),
              "c16.png": image(40, 30, 3, np.uint16), "d.png": image(7, 90, 4)}
    for n, a in arrays.items():
        write_png(tmp_path / n, a)
    return tmp_path, arrays


@pytest.mark.parametrize("kw", [dict(), dict(window=9, levels=256, base="e"),
                                dict(window=7, shape="disk", border="reflect", levels=64,
                                     bins=8)])
def test_maps_and_stats_equal_entropy_of_each_image(pngs, kw):
    d, arrays = pngs
    with es.open(d, device="cpu", **kw) as frames:
        got = list(frames)
    assert [f.name for f in got] == sorted(arrays)
    assert [f.index for f in got] == list(range(len(arrays)))
    for f in got:
        a = arrays[f.name]
        assert f.pts is None and f.damaged is False
        assert same(f.map, es.entropy(a, device="cpu", **{k: v for k, v in kw.items()
                                                          if k != "bins"})), f.name
        want = es.stats(a, device="cpu", **kw)
        for k in ("count", "mean", "std", "min", "max", "global_entropy",
                  "global_entropy_levels", "bins"):
            assert f.stats[k] == want[k], (f.name, k)
        assert list(f.stats["hist"]) == list(want["hist"]), f.name


def test_map_false_stats_false(pngs):
    d, arrays = pngs
    got = list(es.open(d, map=False))
    assert [f.map for f in got] == [None] * len(arrays)
    assert all(f.stats is not None for f in got)
    got = list(es.open(d, stats=False))
    assert [f.stats for f in got] == [None] * len(arrays)
    assert all(f.map.shape == arrays[f.name].shape for f in got)


def cli():
    path = os.environ.get("ES_BIN") or os.path.join(ROOT, "build", "tools", "entropy-stream")
    if not os.path.exists(path):
        pytest.skip(f"no CLI at {path} (ES_BIN)")
    return path


def test_jpeg_tiff_16bit_equal_cli_float_maps(tmp_path):
    """JPEG, TIFF (8 and 16 bits) and PNG in one directory, each of its own size: the maps
    the CLI writes for the same directory (--format f32: a .npy an image), bit for bit."""
    ffmpeg = shutil.which("ffmpeg")
    if not ffmpeg:
        pytest.skip("no ffmpeg on PATH")
    d = tmp_path / "in"
    d.mkdir()
    write_png(tmp_path / "g.png", image(50, 70, 5))
    write_png(tmp_path / "g16.png", image(31, 45, 6, np.uint16))
    for src, out, extra in (("g.png", "p.jpg", []), ("g.png", "t8.tif", []),
                            ("g16.png", "t16.tif", ["-pix_fmt", "gray16le"])):
        r = subprocess.run([ffmpeg, "-v", "error", "-y", "-i", str(tmp_path / src), *extra,
                            str(d / out)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"ffmpeg cannot write {out}: {r.stderr.decode()[-200:]}")
    shutil.copy(tmp_path / "g16.png", d / "q16.png")
    out = tmp_path / "out"
    subprocess.run([cli(), "-q", str(d), "-o", str(out) + "/", "--format", "f32", "-w", "7",
                    "-L", "128"], check=True)
    got = list(es.open(d, window=7, levels=128))
    assert [f.name for f in got] == ["p.jpg", "q16.png", "t16.tif", "t8.tif"]
    for f in got:
        want = np.load(out / (os.path.splitext(f.name)[0] + ".npy"))
        assert same(f.map, want), f.name


def test_recursive_and_ext(tmp_path):
    write_png(tmp_path / "z.png", image(10, 12, 1))
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    write_png(tmp_path / "sub" / "a.png", image(11, 13, 2))
    write_png(tmp_path / "sub" / "deeper" / "b.PNG", image(12, 14, 3))
    write_png(tmp_path / ".hidden.png", image(9, 9, 4))
    (tmp_path / "notes.txt").write_text("not an image")
    assert [f.name for f in es.open(tmp_path)] == ["z.png"]
    got = list(es.open(tmp_path, recursive=True))
    assert [f.name for f in got] == ["sub/a.png", "sub/deeper/b.PNG", "z.png"]
    assert [f.map.shape for f in got] == [(11, 13), (12, 14), (10, 12)]
    assert [f.name for f in es.open(tmp_path, recursive=True, ext="jpg")] == []
    assert [f.name for f in es.open(tmp_path, recursive=True, ext="png")] == [
        "sub/a.png", "sub/deeper/b.PNG", "z.png"]
    with pytest.raises(NotADirectoryError):
        es.open(tmp_path / "z.png", recursive=True)
    with pytest.raises(TypeError):
        es.open(tmp_path, ext=["png"])


def test_undecodable_file_skipped_counted_raised_at_end(pngs):
    d, arrays = pngs
    (d / "bb.png").write_bytes(b"this is no PNG")
    names, idx = [], []
    frames = es.open(d)
    with pytest.raises(OSError, match=r"^entropy-stream: .*bb\.png: .*\(1 of 5 files failed"):
        for f in frames:
            names.append(f.name)
            idx.append(f.index)
            assert same(f.map, es.entropy(arrays[f.name]))
    # every good file was given, in order, the bad one's index left out
    assert names == ["a.png", "b.png", "c16.png", "d.png"]
    assert idx == [0, 1, 3, 4]
    assert frames.closed
    with pytest.raises(StopIteration):
        next(frames)


def test_empty_directory(tmp_path):
    before = tasks()
    with es.open(tmp_path) as frames:
        assert list(frames) == []
    assert wait_tasks(before) == before


def test_missing_directory(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError):
        es.open(missing, recursive=True)
    with pytest.raises(OSError, match="nope"):
        list(es.open(missing))


@pytest.fixture
def many(tmp_path):
    for i in range(40):
        write_png(tmp_path / f"f{i:03d}.png", image(64, 80, i))
    return tmp_path


@pytest.mark.parametrize("how", ["break", "close", "with"])
def test_early_stop_joins_and_frees(many, how):
    base_maps = es._core._open_live_maps()
    before = tasks()
    frames = es.open(many, queue=2)
    if how == "with":
        with frames:
            assert next(frames).index == 0
    else:
        for f in frames:
            if f.index == 1:
                break
        del f
        if how == "close":
            frames.close()
            assert frames.closed
            with pytest.raises(StopIteration):
                next(frames)
        else:  # leaving the loop and dropping the iterator
            del frames
    assert wait_tasks(before) == before
    assert es._core._open_live_maps() == base_maps


def test_queue_bounds_the_maps_waiting(many):
    """A caller that stops taking: the maps copied for it stay within the queue (and one in
    the sink's hands), not the directory's 40."""
    base_maps = es._core._open_live_maps()
    with es.open(many, queue=3) as frames:
        first = next(frames)
        end = time.monotonic() + 5
        while es._core._open_live_maps() - base_maps < 1 + 3 and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)  # give the run time to overrun, were it not bounded
        assert 1 + 3 <= es._core._open_live_maps() - base_maps <= 1 + 3 + 1
        rest = list(frames)
    assert first.index == 0 and [f.index for f in rest] == list(range(1, 40))


def test_mask(tmp_path):
    a, b = image(30, 40, 1), image(30, 40, 2)
    write_png(tmp_path / "a.png", a)
    write_png(tmp_path / "b.png", b)
    m = np.zeros((30, 40), bool)
    m[5:25, 8:30] = True
    got = list(es.open(tmp_path, mask=m, window=5))
    assert [f.name for f in got] == ["a.png", "b.png"]
    for f, img in zip(got, (a, b)):
        assert same(f.map, es.entropy(img, mask=m, window=5))
        assert f.stats["count"] == es.stats(img, mask=m, window=5)["count"] == m.sum()
    with pytest.raises(ValueError, match="mask"):
        list(es.open(tmp_path, mask=np.ones((30, 41), np.uint8)))
    with pytest.raises(ValueError, match="mask"):
        es.open(tmp_path, mask=np.ones((3, 3, 3), np.uint8))


def test_bad_parameters_raise_at_the_call(pngs):
    d, _ = pngs
    with pytest.raises(ValueError, match="window"):
        es.open(d, window=4)
    with pytest.raises(ValueError, match="raw"):
        es.open(d, raw="gray8:4x4")
    with pytest.raises(ValueError, match="in_range"):
        es.open(d, in_range=(1.0, 0.0))


def test_video_mask():
    """mask= reaches a video's run too: every frame's statistics cover its inside, and a mask
    of another size than the frames is a ValueError."""
    clip = os.path.join(ROOT, "samples", "clip.mp4")
    try:
        with es.open(clip) as frames:
            h, w = next(frames).map.shape
    except OSError as e:
        pytest.skip(f"es.open cannot read video: {e}")
    m = np.zeros((h, w), bool)
    m[10:50, 20:90] = True
    with es.open(clip, mask=m) as frames:
        f = next(frames)
        assert f.stats["count"] == m.sum()
        assert np.isnan(f.map[~m]).all() and not np.isnan(f.map[m]).any()
    with pytest.raises(ValueError, match="the mask"):
        list(es.open(clip, mask=np.ones((h, w + 1), bool)))


def test_hmax_each_image_its_own_depth(tmp_path):
    """levels above 256 with a window of more than 256 pixels: an 8-bit image's hmax is
    log2(256), a 16-bit one's log2(K*K), in one directory (the sink is told each item's
    depth, es_item.depth)."""
    a8, a16 = image(40, 50, 1), image(40, 50, 2, np.uint16)
    write_png(tmp_path / "a8.png", a8)
    write_png(tmp_path / "b16.png", a16)
    got = list(es.open(tmp_path, window=31, levels=1024))
    assert [f.name for f in got] == ["a8.png", "b16.png"]
    for f, a in zip(got, (a8, a16)):
        # es.stats refuses an 8-bit image levels above 256: it computes them as 256
        want = es.stats(a, window=31, levels=256 if a.dtype == np.uint8 else 1024)
        assert f.stats["hmax"] == want["hmax"], f.name
        assert list(f.stats["hist"]) == list(want["hist"])
    assert got[0].stats["hmax"] == 8.0 and got[1].stats["hmax"] > 9.9


def test_float_tiff_in_range(tmp_path):
    """A float32 TIFF (the CLI's --format f32 map of a PNG) in a directory: quantized over
    in_range=, or its own min..max without; equal to es.entropy of the same floats."""
    write_png(tmp_path / "g.png", image(37, 52, 7))
    d = tmp_path / "in"
    d.mkdir()
    subprocess.run([cli(), "-q", str(tmp_path / "g.png"), "-o", str(d / "h.tif"), "--format",
                    "f32"], check=True)
    subprocess.run([cli(), "-q", str(tmp_path / "g.png"), "-o", str(tmp_path / "h.npy")],
                   check=True)
    floats = np.load(tmp_path / "h.npy").reshape(37, 52).astype(np.float32)
    for rng in (None, (0.0, 4.0)):
        (f,) = list(es.open(d, in_range=rng, levels=32))
        assert f.name == "h.tif"
        assert same(f.map, es.entropy(floats, in_range=rng, levels=32)), rng
    a = next(iter(es.open(d, in_range=(0.0, 4.0), levels=32))).map
    b = next(iter(es.open(d, in_range=(0.0, 1.0), levels=32))).map
    assert not np.array_equal(a, b, equal_nan=True)
