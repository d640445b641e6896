"""pytest: the entropy_stream module against scikit-image, the CLI, itself (bands, stacks,
threads, Dask) and bad input. Run by tests/test_python_module.sh (ctest) in a venv where
the module is installed; scikit-image, Dask and CuPy tests skip with the reason when those
are missing."""
import os
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

import entropy_stream as es

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLES = os.path.join(ROOT, "samples")

try:
    from skimage import data
    from skimage.filters.rank import entropy as sk_entropy
    from skimage.morphology import disk, square
    HAVE_SKIMAGE = True
except ImportError:  # the tests against it skip; the others run on stand-in images
    HAVE_SKIMAGE = False
needs_skimage = pytest.mark.skipif(not HAVE_SKIMAGE, reason="scikit-image is not installed")
STAND_IN = {"camera": (512, 512), "coins": (303, 384), "moon": (512, 512), "brick": (512, 512),
            "grass": (512, 512), "gravel": (512, 512), "camera.png": (512, 512),
            "moon16.png": (257, 383)}


def photo(name):
    """A real photograph: skimage.data's (Debian's python3-skimage ships them) or samples/.
    Without scikit-image, a seeded stand-in of the same size and dtype (smooth + noise)."""
    if not HAVE_SKIMAGE:
        h, w = STAND_IN[name]
        rng = np.random.default_rng(sum(map(ord, name)))
        y, x = np.mgrid[0:h, 0:w]
        v = (x * 3 + y) % 256 + rng.integers(0, 32, (h, w))
        if name == "moon16.png":
            return (v * 200 + rng.integers(0, 256, (h, w))).astype(np.uint16)
        return (v % 256).astype(np.uint8)
    if name.endswith(".png"):
        import skimage.io
        return skimage.io.imread(os.path.join(SAMPLES, name))
    return getattr(data, name)()


def ulps_apart(ours, ref):
    """How many float32 steps our float32 map lies from scikit-image's double values."""
    ref32 = ref.astype(np.float32)
    return np.abs(ours.astype(np.float64) - ref32) / np.spacing(np.maximum(ref32, 1e-30))


# ---- Against scikit-image on photographs, every parameter it shares. ----

@needs_skimage
@pytest.mark.parametrize("name", ["camera", "coins", "moon"])
@pytest.mark.parametrize("fp", ["square", "disk"])
@pytest.mark.parametrize("window", [1, 3, 5, 9, 15])
def test_skimage_uint8(name, fp, window):
    img = photo(name)
    footprint = square(window) if fp == "square" else disk((window - 1) // 2)
    ref = sk_entropy(img, footprint)
    ours = es.entropy(img, window=window, shape=fp, levels=256)
    assert ours.dtype == np.float32 and ours.shape == img.shape
    # scikit-image sums in double; the library rounds its exact sum once to float32.
    assert ulps_apart(ours, ref).max() <= 1
    drop = es.skimage.entropy(img, footprint)
    assert drop.dtype == ref.dtype == np.float64
    np.testing.assert_array_equal(drop, ours.astype(np.float64))


@needs_skimage
@pytest.mark.parametrize("shift", [0, 4])
@pytest.mark.parametrize("fp", ["square", "disk"])
@pytest.mark.parametrize("window", [3, 7])
def test_skimage_uint16(shift, fp, window):
    # samples/moon16.png: a 16-bit photograph (max 65535), and it at 12 bits. scikit-image
    # bins uint16 by max+1; the library at 65536 levels makes the same partition.
    img = photo("moon16.png")[:96, :128] >> shift
    footprint = square(window) if fp == "square" else disk((window - 1) // 2)
    ref = sk_entropy(img, footprint)
    drop = es.skimage.entropy(img, footprint)
    assert drop.dtype == np.float64
    assert ulps_apart(drop.astype(np.float32), ref).max() <= 1


@needs_skimage
def test_skimage_out_and_refusals():
    img = photo("camera")[:64, :80]
    out = np.zeros(img.shape)
    got = es.skimage.entropy(img, disk(2), out=out)
    assert got is out
    assert ulps_apart(out.astype(np.float32), sk_entropy(img, disk(2))).max() <= 1
    fp = np.ones((5, 5), np.uint8)
    fp[0, 0] = 0  # neither square nor disk
    with pytest.raises(ValueError, match="neither a full square nor"):
        es.skimage.entropy(img, fp)
    with pytest.raises(ValueError, match="odd square"):
        es.skimage.entropy(img, np.ones((4, 4)))
    with pytest.raises(ValueError, match="odd square"):
        es.skimage.entropy(img, np.ones((3, 5)))
    with pytest.raises(NotImplementedError, match="shift"):
        es.skimage.entropy(img, square(3), shift_x=1)
    with pytest.raises(ValueError, match="mask shape"):
        es.skimage.entropy(img, square(3), mask=np.ones((3, 3), bool))
    with pytest.raises(TypeError, match="uint8 or uint16"):
        es.skimage.entropy(img.astype(np.float64), square(3))


# ---- Bit-exact where SPEC says so: the CLI's .npy, bands, strides, stacks. ----

def cli():
    path = os.environ.get("ES_BIN") or os.path.join(ROOT, "build", "tools", "entropy-stream")
    if not os.path.exists(path):
        pytest.skip(f"no CLI at {path} (ES_BIN)")
    return path


@needs_skimage
@pytest.mark.parametrize("args", [
    dict(window=5, shape="square", border="clip", levels=16, base=2),
    dict(window=9, shape="disk", border="reflect", levels=256, base="e"),
    dict(window=15, shape="square", border="reflect", levels=7, base=2),
])
def test_cli_npy_bit_exact(args):
    img = photo("camera.png")
    assert img.dtype == np.uint8 and img.ndim == 2
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "h.npy")
        subprocess.run([cli(), "-q", "--device", "cpu", "-w", str(args["window"]), "--shape",
                        args["shape"], "--border", args["border"], "-L", str(args["levels"]),
                        "--base", str(args["base"]), os.path.join(SAMPLES, "camera.png"),
                        "-o", npy], check=True)
        want = np.load(npy)
    np.testing.assert_array_equal(es.entropy(img, **args), want)


@needs_skimage
def test_cli_npy_bit_exact_uint16():
    img = photo("moon16.png")
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "h.npy")
        subprocess.run([cli(), "-q", "-w", "7", "-L", "1000", os.path.join(SAMPLES, "moon16.png"),
                        "-o", npy], check=True)
        want = np.load(npy)
    np.testing.assert_array_equal(es.entropy(img, window=7, levels=1000), want)


@pytest.mark.parametrize("border", ["clip", "reflect"])
@pytest.mark.parametrize("shape", ["square", "disk"])
def test_bands_bit_exact(border, shape):
    # A large image is computed in bands of rows with a halo of r rows (so Ctrl-C is seen
    # between them); forced here on a small one: the same bits as one call.
    img = photo("camera")
    whole = es.entropy(img, window=11, shape=shape, border=border, levels=64)
    old = es._core._set_band_pixels(512 * 7)
    try:
        banded = es.entropy(img, window=11, shape=shape, border=border, levels=64)
        tiny = es.entropy(img[:40], window=11, shape=shape, border=border, levels=64)
    finally:
        es._core._set_band_pixels(old)
    np.testing.assert_array_equal(banded, whole)
    np.testing.assert_array_equal(
        tiny, es.entropy(img[:40], window=11, shape=shape, border=border, levels=64))


def test_strides_and_copies():
    img = photo("coins")
    want = es.entropy(np.ascontiguousarray(img[::2, ::3]), window=7)
    np.testing.assert_array_equal(es.entropy(img[::2, ::3], window=7), want)  # copied
    np.testing.assert_array_equal(es.entropy(img[10:200, 5:300], window=7),
                                  es.entropy(img[10:200, 5:300].copy(), window=7))  # in place
    np.testing.assert_array_equal(es.entropy(img.T, window=7),
                                  es.entropy(img.T.copy(), window=7))
    np.testing.assert_array_equal(es.entropy(img[::-1], window=7),
                                  es.entropy(img[::-1].copy(), window=7))
    u16 = photo("moon16.png")
    swapped = u16.astype(">u2")
    np.testing.assert_array_equal(es.entropy(swapped, levels=300), es.entropy(u16, levels=300))


def test_out_in_place():
    img = photo("camera")
    out = np.full(img.shape, -1, np.float32)
    got = es.entropy(img, window=9, out=out)
    assert got is out
    np.testing.assert_array_equal(out, es.entropy(img, window=9))


def test_stack_equals_frames():
    frames = np.stack([photo(n) for n in ["camera", "moon", "brick", "grass", "gravel"] * 3])
    maps = es.entropy(frames, window=9, shape="disk", levels=32)
    assert maps.shape == frames.shape and maps.dtype == np.float32
    for t in range(len(frames)):
        np.testing.assert_array_equal(maps[t], es.entropy(frames[t], window=9, shape="disk",
                                                          levels=32))
    # A strided stack (every other frame, a crop) is lent frame by frame: the same bits.
    view = frames[::2, 3:500, 7:]
    np.testing.assert_array_equal(es.entropy(view, window=5), es.entropy(view.copy(), window=5))
    st = es.stats(frames, window=9, shape="disk", levels=32)
    assert isinstance(st, list) and len(st) == len(frames)
    for t in range(len(frames)):
        one = es.stats(frames[t], window=9, shape="disk", levels=32)
        assert st[t]["mean"] == one["mean"] and st[t]["max"] == one["max"]
        np.testing.assert_array_equal(st[t]["hist"], one["hist"])


def test_stats_match_the_map():
    img = photo("camera")
    h, st = es.stats(img, window=7, levels=16, bins=10, with_map=True)
    np.testing.assert_array_equal(h, es.entropy(img, window=7, levels=16))
    assert st["count"] == img.size and st["bins"] == 10 and st["hmax"] == 4.0
    assert st["min"] == h.min() and st["max"] == h.max()
    assert abs(st["mean"] - h.astype(np.float64).mean()) < 1e-9
    assert abs(st["std"] - h.astype(np.float64).std()) < 1e-7
    assert st["hist"].dtype == np.uint64 and st["hist"].sum() == img.size
    q = (img.astype(np.int64) * 16) >> 8  # levels of the image: floor(v * L / 2^8)
    p = np.bincount(q.ravel(), minlength=16) / q.size
    p = p[p > 0]
    assert abs(st["global_entropy_levels"] + (p * np.log2(p)).sum()) < 1e-9
    p = np.bincount(img.ravel(), minlength=256) / img.size  # the raw 8-bit samples
    p = p[p > 0]
    assert abs(st["global_entropy"] + (p * np.log2(p)).sum()) < 1e-5  # FFmpeg's float sum


def test_base_e_is_nats():
    img = photo("moon")
    bits = es.entropy(img, window=5).astype(np.float64)
    nats = es.entropy(img, window=5, base="e")
    np.testing.assert_allclose(nats, bits * np.log(2), rtol=2e-7, atol=1e-7)
    np.testing.assert_array_equal(es.entropy(img, window=5, base=np.e), nats)


# ---- Bad input: clear exceptions, never a crash. ----

def test_bad_input():
    img = photo("camera")[:32, :32]
    with pytest.raises(TypeError, match="float64: must be uint8, uint16 or float32"):
        es.entropy(img.astype(np.float64))
    with pytest.raises(TypeError, match="int16"):
        es.entropy(img.astype(np.int16))
    with pytest.raises(ValueError, match=r"in_range=\(3, 3\)"):
        es.entropy(img.astype(np.float32), in_range=(3, 3))
    with pytest.raises(ValueError, match="in_range"):
        es.entropy(img.astype(np.float32), in_range=5)
    with pytest.raises(ValueError, match=r"levels=70000: must be 2\.\.65536 for float32"):
        es.entropy(img.astype(np.float32), levels=70000)
    with pytest.raises(ValueError, match="mask shape"):
        es.entropy(img, mask=np.ones((32, 31), bool))
    with pytest.raises(ValueError, match="mask shape"):
        es.entropy(img, mask=np.ones((2, 32, 32), bool))
    with pytest.raises(ValueError, match="4 dimensions"):
        es.entropy(img[None, None])
    with pytest.raises(ValueError, match="1 dimensions"):
        es.entropy(img[0])
    with pytest.raises(ValueError, match="empty"):
        es.entropy(img[:0])
    with pytest.raises(ValueError, match="empty"):
        es.entropy(np.zeros((0, 4, 4), np.uint8))
    with pytest.raises(ValueError, match=r"window=4: must be odd, 1\.\.255"):
        es.entropy(img, window=4)
    with pytest.raises(ValueError, match=r"window=257"):
        es.entropy(img, window=257)
    with pytest.raises(ValueError, match=r"levels=300: must be 2\.\.256 for uint8"):
        es.entropy(img, levels=300)
    with pytest.raises(ValueError, match=r"levels=1: must be 2\.\.65536 for uint16"):
        es.entropy(img.astype(np.uint16), levels=1)
    with pytest.raises(ValueError, match="'square' or 'disk'"):
        es.entropy(img, shape="round")
    with pytest.raises(ValueError, match="'clip' or 'reflect'"):
        es.entropy(img, border="wrap")
    with pytest.raises(ValueError, match="base=10"):
        es.entropy(img, base=10)
    # The names in the library's order (core/params.c), the CLI's "auto, gpu or cpu".
    with pytest.raises(ValueError, match=r"device='tpu': must be 'auto', 'gpu' or 'cpu'"):
        es.entropy(img, device="tpu")
    with pytest.raises(ValueError, match=r"bins=0: must be 1\.\.1024"):
        es.stats(img, bins=0)
    # The library's rule, under the keyword.
    with pytest.raises(ValueError, match=r"threads=5000: must be 0\.\.4096 \(0 = all cores\)"):
        es.entropy(img, threads=5000)
    ro = np.zeros(img.shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        es.entropy(img, out=ro)
    with pytest.raises(ValueError, match=r"out shape \(32, 31\)"):
        es.entropy(img, out=np.zeros((32, 31), np.float32))
    with pytest.raises(TypeError, match="out dtype float64"):
        es.entropy(img, out=np.zeros(img.shape))
    with pytest.raises(ValueError, match="C-contiguous"):
        es.entropy(img, out=np.zeros((32, 64), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        es.entropy(img, out=np.zeros((32, 32), np.float32).T)
    with pytest.raises(TypeError):
        es.entropy(img, window="5")


def test_out_overlapping_the_input():
    # out's memory also holds the input: the input is read from a copy, the result is right.
    img = photo("camera")[:64, :64]
    want = es.entropy(img, window=5)
    buf = np.zeros(64 * 64, np.float32)
    view8 = buf.view(np.uint8)[: 64 * 64].reshape(64, 64)
    view8[...] = img
    got = es.entropy(view8, window=5, out=buf.reshape(64, 64))
    np.testing.assert_array_equal(got, want)


def test_gpu_refused_without_one():
    img = photo("camera")[:16, :16]
    try:
        es.entropy(img, device="gpu")
    except RuntimeError as e:
        assert "GPU" in str(e) or "gpu" in str(e)
    else:
        assert "GPU" in es.version_info()  # it ran: there is a GPU


# ---- Threads, Ctrl-C. ----

def test_threads_at_once():
    imgs = [photo(n) for n in ["camera", "coins", "moon", "brick", "grass", "gravel"]]
    jobs = [(img, w, s) for img in imgs for w, s in [(5, "square"), (9, "disk"), (3, "square")]]
    want = [es.entropy(img, window=w, shape=s, levels=64) for img, w, s in jobs]
    got = [None] * len(jobs)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                img, w, s = jobs[i]
                got[i] = es.entropy(img, window=w, shape=s, levels=64)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_gil_released():
    # While one thread computes a long stack, another runs Python.
    frames = np.stack([photo("camera")] * 24)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    old = es._core._set_band_pixels(512 * 16)
    try:
        es.entropy(frames[0], window=31, threads=1)
        n0 = len(ticks)
        es.entropy(frames, window=31, threads=1)
    finally:
        es._core._set_band_pixels(old)
        done.set()
        t.join()
    assert len(ticks) - n0 > 5


@pytest.mark.parametrize("kind", ["stack", "bands"])
def test_ctrl_c(kind):
    img = photo("camera")
    arg = np.stack([img] * 400) if kind == "stack" else np.tile(img, (80, 1))
    start = time.monotonic()
    full = None
    old = es._core._set_band_pixels(512 * 32)
    try:
        t0 = time.monotonic()
        # On the CPU, one thread: a GPU computed the whole stack before the 0.2 s signal came
        # (an H100), and the KeyboardInterrupt then reached pytest itself.
        es.entropy(arg[:8] if kind == "stack" else arg[:4096], window=41, threads=1,
                   device="cpu")
        full = (time.monotonic() - t0) * (len(arg) / 8 if kind == "stack" else 10)
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            es.entropy(arg, window=41, threads=1, device="cpu")
        took = time.monotonic() - start
        timer.join()
    finally:
        es._core._set_band_pixels(old)
    assert took < full / 2, f"Ctrl-C took {took:.2f} s of a {full:.2f} s call"


# ---- Dask on a LocalCluster of several worker processes. ----

def test_dask_local_cluster():
    dask_array = pytest.importorskip("dask.array", reason="Dask is not installed")
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    img = np.tile(photo("camera"), (2, 3))[:1000, :1400]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        for chunks, kw in [((256, 300), dict(window=9, levels=256)),
                           ((333, 250), dict(window=15, shape="disk", border="reflect")),
                           ((128, 128), dict(window=1))]:
            d = dask_array.from_array(img, chunks=chunks)
            got = es.dask.entropy(d, **kw)
            # (a chunk thinner than r is merged into its neighbour by map_overlap)
            assert got.dtype == np.float32 and got.shape == d.shape
            np.testing.assert_array_equal(got.compute(), es.entropy(img, **kw))


# ---- CUDA arrays (CuPy), where a GPU and CuPy exist (the GPU machine). ----

def test_device_entry_without_gpu():
    # es_compute_device through the module's plumbing, on host memory: refused clearly where
    # no GPU opens; where one does, host pointers work too (staged) and give the same bits.
    img = photo("camera")
    out = np.zeros(img.shape, np.float32)
    args = (img.ctypes.data, img.shape[0], img.shape[1], img.strides[0], 8, out.ctypes.data, 0)
    kw = dict(window=9, shape="disk", border="clip", levels=256, base=2)
    with pytest.raises(TypeError, match="shape, border and base are required"):
        es._core.entropy_device(*args, window=9)
    with pytest.raises(ValueError, match=r"levels=300: must be 2\.\.256"):
        es._core.entropy_device(*args, **dict(kw, levels=300))
    try:
        es._core.entropy_device(*args, **kw)
    except RuntimeError as e:
        assert "GPU" in str(e) or "gpu" in str(e), str(e)
        return
    np.testing.assert_array_equal(out, es.entropy(img, window=9, shape="disk", levels=256))


def cupy_or_skip():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as e:
        pytest.skip(f"no CUDA device ({e})")
    return cupy


def test_cupy_arrays():
    cupy = cupy_or_skip()
    host = photo("camera")
    img = cupy.asarray(host)
    h = es.entropy(img, window=9, levels=256)
    assert isinstance(h, cupy.ndarray) and h.dtype == cupy.float32 and h.shape == host.shape
    assert h.device.id == img.device.id
    want = es.entropy(host, window=9, levels=256, device="cpu")
    np.testing.assert_array_equal(cupy.asnumpy(h), want)
    # out on the GPU, filled in place
    out = cupy.full(host.shape, -1, cupy.float32)
    assert es.entropy(img, window=9, levels=256, out=out) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), want)
    # a strided view (copied once on the GPU), uint16, disk, reflect, a stack
    view = img[::2, 1::3]
    np.testing.assert_array_equal(cupy.asnumpy(es.entropy(view, window=5)),
                                  es.entropy(host[::2, 1::3], window=5, device="cpu"))
    u16 = photo("moon16.png")
    np.testing.assert_array_equal(
        cupy.asnumpy(es.entropy(cupy.asarray(u16), window=7, shape="disk", border="reflect",
                                levels=1000)),
        es.entropy(u16, window=7, shape="disk", border="reflect", levels=1000, device="cpu"))
    stack = np.stack([photo(n) for n in ["camera", "moon", "brick"]])
    np.testing.assert_array_equal(cupy.asnumpy(es.entropy(cupy.asarray(stack), window=9)),
                                  es.entropy(stack, window=9, device="cpu"))
    st = es.stats(img, window=9, levels=256)
    ref = es.stats(host, window=9, levels=256, device="cpu")
    assert st["mean"] == ref["mean"] and st["max"] == ref["max"]
    np.testing.assert_array_equal(st["hist"], ref["hist"])
    with pytest.raises(TypeError, match="float32"):
        es.entropy(img, out=cupy.zeros(host.shape, cupy.float64))
    with pytest.raises(ValueError, match="out shape"):
        es.entropy(img, out=cupy.zeros((3, 3), cupy.float32))
    with pytest.raises(ValueError, match="'auto' or 'gpu'"):
        es.entropy(img, device="cpu")
    with pytest.raises(TypeError, match="int32"):
        es.entropy(img.astype(cupy.int32))
    # A mask on the GPU (the library copies it device to device): the CPU's bits, NaN outside.
    m = _masks(host.shape, 2)["random"]
    np.testing.assert_array_equal(
        cupy.asnumpy(es.entropy(img, window=9, levels=256, mask=cupy.asarray(m))).view(np.uint32),
        es.entropy(host, window=9, levels=256, mask=m, device="cpu").view(np.uint32))
    st = es.stats(img, window=5, mask=cupy.asarray(m))
    ref = es.stats(host, window=5, mask=m, device="cpu")
    assert st["count"] == ref["count"] == (m != 0).sum() and st["mean"] == ref["mean"]
    with pytest.raises(ValueError, match="mask shape"):
        es.entropy(img, mask=cupy.ones((3, 3), bool))


def test_cupy_dask_chunks():
    cupy = cupy_or_skip()
    dask_array = pytest.importorskip("dask.array", reason="Dask is not installed")
    host = np.tile(photo("camera"), (2, 2))
    d = dask_array.from_array(cupy.asarray(host), chunks=(300, 400), asarray=False)
    got = es.dask.entropy(d, window=9, levels=256).compute(scheduler="threads")
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), es.entropy(host, window=9, levels=256))


# ---- Masks and float32 samples (issue 28's rules, issue 33's mask= and in_range=). ----

def _masks(shape, seed):
    """Random (any density, any non-zero value inside), all out, all in, one pixel."""
    rng = np.random.default_rng(seed)
    r = np.where(rng.random(shape) < rng.uniform(0.1, 0.9), rng.integers(1, 256, shape), 0)
    one = np.zeros(shape, np.uint8)
    one[shape[0] // 2, shape[1] // 3] = 1
    return {"random": r.astype(np.uint8), "zero": np.zeros(shape, bool),
            "one": np.ones(shape, bool), "pixel": one}


def _direct(q, inside, k, shape, border, levels):
    """H of every inside pixel from the inside pixels of its window (numpy, double); NaN
    outside. The reference for masks, independent of the library."""
    r = k // 2
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    fp = np.ones((k, k), bool) if shape == "square" else (xx * xx + yy * yy <= r * r)
    mode = "symmetric" if border == "reflect" else "constant"
    qp = np.pad(q.astype(np.int64), r, mode=mode)
    mp = np.pad(inside, r, mode=mode)  # clip: padding False (not counted)
    out = np.full(q.shape, np.nan)
    for y, x in zip(*np.nonzero(inside)):
        w = qp[y:y + k, x:x + k][fp & mp[y:y + k, x:x + k]]
        c = np.bincount(w, minlength=levels)
        c = c[c > 0] / w.size
        out[y, x] = max(0.0, -(c * np.log2(c)).sum())
    return out


@needs_skimage
@pytest.mark.parametrize("kind", ["random", "zero", "one", "pixel"])
@pytest.mark.parametrize("fp,window", [("square", 5), ("disk", 9), ("square", 1)])
def test_skimage_mask_on_a_photograph(kind, fp, window):
    # es.skimage.entropy(mask=) is scikit-image's: the pixels outside are computed too, from
    # the mask's pixels of their window (0 where there are none); uint8 and bool masks.
    img = photo("camera")[100:260, 150:330]
    m = _masks(img.shape, window)[kind]
    foot = square(window) if fp == "square" else disk(window // 2)
    ref = sk_entropy(img, foot, mask=m)
    got = es.skimage.entropy(img, foot, mask=m)
    assert got.dtype == np.float64 and not np.isnan(got).any()
    assert ulps_apart(got.astype(np.float32), ref).max() <= 1
    ref16 = sk_entropy(img.astype(np.uint16) * 7, foot, mask=m)
    got16 = es.skimage.entropy(img.astype(np.uint16) * 7, foot, mask=m)
    assert ulps_apart(got16.astype(np.float32), ref16).max() <= 1


@needs_skimage
def test_skimage_float_mask_rule():
    # A float mask goes through img_as_ubyte, as scikit-image does: 0.001 rounds to 0 (out).
    img = photo("camera")[:60, :70]
    m = np.zeros(img.shape)
    m[10:40, 5:50] = 0.6
    m[20:30, 20:30] = 0.001
    assert ulps_apart(es.skimage.entropy(img, disk(2), mask=m).astype(np.float32),
                      sk_entropy(img, disk(2), mask=m)).max() <= 1


@pytest.mark.parametrize("border", ["clip", "reflect"])
@pytest.mark.parametrize("shape", ["square", "disk"])
def test_mask_against_direct_count(border, shape):
    # es.entropy(mask=): NaN exactly outside; inside, the entropy of the window's inside
    # pixels (a reflection landing outside the mask is not counted either).
    img = photo("camera")[300:345, 200:262]
    for kind, m in _masks(img.shape, 3).items():
        got = es.entropy(img, window=7, shape=shape, border=border, levels=16, mask=m)
        inside = np.asarray(m) != 0
        assert np.array_equal(np.isnan(got), ~inside), kind
        ref = _direct((img.astype(np.int64) * 16) >> 8, inside, 7, shape, border, 16)
        if inside.any():
            assert np.nanmax(np.abs(got - ref)) <= 1e-5, kind


def test_mask_stats_are_the_inside():
    # Statistics over the inside only, against numpy on the map.
    img = photo("camera")
    m = _masks(img.shape, 11)["random"]
    h, st = es.stats(img, window=9, levels=32, mask=m, bins=20, with_map=True)
    inside = m != 0
    v = h[inside].astype(np.float64)
    assert st["count"] == inside.sum()
    assert np.isclose(st["mean"], v.mean(), rtol=1e-9) and np.isclose(st["std"], v.std(), rtol=1e-6)
    assert st["min"] == v.min() and st["max"] == v.max()
    edges = np.minimum((v * np.nextafter(20 / st["hmax"], np.inf)).astype(int), 19)
    assert np.array_equal(st["hist"], np.bincount(edges, minlength=20))
    q = (img[inside].astype(np.int64) * 32) >> 8
    c = np.bincount(q) / q.size
    c = c[c > 0]
    assert np.isclose(st["global_entropy_levels"], -(c * np.log2(c)).sum(), rtol=1e-12)
    none = es.stats(img, mask=np.zeros(img.shape, bool))
    assert none["count"] == 0 and none["mean"] == 0 and none["max"] == 0 and none["hist"].sum() == 0


def test_mask_bands_and_stacks_bit_exact():
    # A large image in bands, and a stack (one 2-D mask for every frame, or one a frame):
    # the same bits as one call on each frame.
    img = photo("camera")
    m = _masks(img.shape, 5)["random"]
    whole = es.entropy(img, window=11, border="reflect", mask=m)
    old = es._core._set_band_pixels(5000)
    try:
        banded = es.entropy(img, window=11, border="reflect", mask=m)
    finally:
        es._core._set_band_pixels(old)
    assert np.array_equal(whole.view(np.uint32), banded.view(np.uint32))
    stack = np.stack([img, img[::-1].copy(), 255 - img])
    ms = np.stack([m, _masks(img.shape, 6)["random"], m])
    for mm in (m, ms):
        got = es.entropy(stack, window=5, mask=mm)
        for t in range(3):
            one = es.entropy(stack[t], window=5, mask=mm if mm.ndim == 2 else mm[t])
            assert np.array_equal(got[t].view(np.uint32), one.view(np.uint32))


def test_float32_rule():
    # floor((v - lo) * L / (hi - lo)) in double, clamped: the same map as the uint16 image of
    # those levels; NaN and infinities outside; the image's own range by default.
    rng = np.random.default_rng(7)
    f = rng.normal(100.0, 30.0, (90, 110)).astype(np.float32)
    f[5, 5], f[6, 7], f[50, 60] = np.nan, np.inf, -np.inf
    L = 64
    finite = np.isfinite(f)
    for rng_ in (None, (40.0, 160.0)):
        lo, hi = (float(f[finite].min()), float(f[finite].max())) if rng_ is None else rng_
        q = np.floor((f.astype(np.float64) - lo) * L / (hi - lo))
        q = np.clip(np.nan_to_num(q, nan=0, posinf=0, neginf=0), 0, L - 1).astype(np.int64)
        got = es.entropy(f, window=5, levels=L, in_range=rng_)
        assert np.array_equal(np.isnan(got), ~finite)
        ref = _direct(q, finite, 5, "square", "clip", L)
        assert np.nanmax(np.abs(got - ref)) <= 1e-5
        # As the uint16 samples of the same levels with the NaN/inf as a mask: bit for bit.
        s16 = ((q << 16) + L - 1) // L
        same = es.entropy(s16.astype(np.uint16), window=5, levels=L, mask=finite)
        assert np.array_equal(got.view(np.uint32), same.view(np.uint32))
    st = es.stats(f, window=5, levels=L)
    assert st["count"] == finite.sum() and st["global_entropy"] == st["global_entropy_levels"]
    # A constant image: every finite sample level 0, H 0.
    c = np.full((8, 9), 3.5, np.float32)
    assert not es.entropy(c, window=3).any()
