#!/usr/bin/env python3
"""bench-python.py - the Python module against scikit-image, and Dask against one call.

  1. In-process, 1920x1080 uint8, K=9, L=256 (scikit-image's levels for uint8), on a real
     photograph (skimage.data.astronaut, grey, resized to 1080p): es.entropy on one CPU
     thread against skimage.filters.rank.entropy(image, square(9)) on the same array;
     median of repeats after a warm-up, and how far apart the two are (float32 steps).
  2. A SIZE x SIZE uint8 Dask array (the photograph tiled) in CHUNK^2 chunks on a
     distributed.LocalCluster of WORKERS processes: es.dask.entropy(...).compute() against
     one es.entropy call on the whole array (all cores), and whether they are equal bit for
     bit.
  3. Where CuPy and a GPU are present: es.entropy on the same 1080p image as a CuPy array,
     the result left on the GPU (the issue's target: under 0.2 ms at K=9).

  build/python-venv/bin/python tools/bench-python.py [--reps N] [--dask-size SIZE]
      [--chunk CHUNK] [--workers W] [--no-dask] [--no-skimage] [--clock wall|thread]

Needs the module installed (tests/test_python_module.sh installs it into
build/python-venv), scikit-image, and Dask's distributed for part 2.
"""
import argparse
import statistics
import time

import numpy as np

import entropy_stream as es


def photo_1080p():
    from skimage import data, transform, util
    from skimage.color import rgb2gray
    grey = rgb2gray(data.astronaut())
    return util.img_as_ubyte(transform.resize(grey, (1080, 1920), anti_aliasing=True))


# Part 1's clock: wall time, or with --clock thread the calling thread's CPU time
# (time.thread_time). Both sides of part 1 run on the calling thread (scikit-image's
# rank.entropy is single-threaded; es.entropy with threads=1 computes on the caller's thread),
# so on a machine shared with other jobs the thread clock leaves out the time the thread
# waited for a core, which wall time charges to whichever side it fell on.
part1_clock = time.perf_counter


def median_ms(fn, reps, clock=None):
    clock = clock or time.perf_counter
    fn()  # warm-up (context, tables, pages)
    times = []
    for _ in range(reps):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return statistics.median(times), times


def bench_skimage(img, reps, sk_reps):
    from skimage.filters.rank import entropy as sk_entropy
    from skimage.morphology import square
    ours = es.entropy(img, window=9, levels=256, device="cpu", threads=1)
    ref = sk_entropy(img, square(9))
    ref32 = ref.astype(np.float32)
    steps = np.abs(ours.astype(np.float64) - ref32) / np.spacing(np.maximum(ref32, 1e-30))
    es_ms, _ = median_ms(lambda: es.entropy(img, window=9, levels=256, device="cpu",
                                            threads=1), reps, part1_clock)
    sk_ms, _ = median_ms(lambda: sk_entropy(img, square(9)), sk_reps, part1_clock)
    clock = "thread CPU time" if part1_clock is time.thread_time else "wall time"
    print(f"1920x1080 uint8 K=9 L=256, skimage.data.astronaut (grey, resized), {clock}:")
    print(f"  es.entropy, 1 CPU thread:   {es_ms:9.1f} ms  (median of {reps})")
    print(f"  skimage.filters.rank.entropy: {sk_ms:7.1f} ms  (median of {sk_reps})")
    print(f"  speed-up {sk_ms / es_ms:.1f}x; equal: float32(skimage) == es at "
          f"{np.mean(steps == 0) * 100:.2f}% of pixels, max {steps.max():.0f} float32 step(s) "
          f"apart, max |diff| {np.abs(ours - ref).max():.2e} bits")
    return img


def bench_cupy(img, reps):
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # noqa: BLE001 - any reason is a reason to skip
        print(f"CuPy: skipped ({e})")
        return
    d = cupy.asarray(img)
    out = cupy.empty(img.shape, cupy.float32)

    def call():
        es.entropy(d, window=9, levels=256, out=out)
        cupy.cuda.Device().synchronize()

    for _ in range(20):
        call()
    n = max(reps, 200)
    ms, _ = median_ms(call, n)
    want = es.entropy(img, window=9, levels=256, device="cpu")
    print(f"  es.entropy on a CuPy array (result on the GPU), GPU {d.device.id}: {ms:.3f} ms "
          f"(median of {n}); bit-identical to the CPU: "
          f"{np.array_equal(cupy.asnumpy(out), want)}")
    # Where the call's time goes: the device synchronisation alone, and the C entry point
    # with the pointers taken beforehand (the call less the Python wrapper's checks).
    from entropy_stream import _core
    sync_ms, _ = median_ms(lambda: cupy.cuda.Device().synchronize(), n)
    args = (d.data.ptr, d.shape[0], d.shape[1], d.strides[0], 8, out.data.ptr, d.device.id)

    def direct():
        _core.entropy_device(*args, window=9, shape="square", border="clip", levels=256,
                             base=2, bins=16, want_stats=False, mask_ptr=0)
        cupy.cuda.Device().synchronize()

    direct_ms, _ = median_ms(direct, n)
    print(f"  parts: the C entry point alone {direct_ms:.3f} ms, the Python wrapper "
          f"{ms - direct_ms:.3f} ms, a device synchronisation alone {sync_ms:.3f} ms")


def bench_dask(img, size, chunk, workers, reps):
    import dask.array as da
    import distributed

    tile = img

    def make(block_info=None):
        # Each chunk is cut from the photograph tiled over the whole array, on its worker.
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        ys = np.arange(y0, y1) % tile.shape[0]
        xs = np.arange(x0, x1) % tile.shape[1]
        return tile[np.ix_(ys, xs)]

    chunks = da.core.normalize_chunks((chunk, chunk), (size, size))
    x = da.map_blocks(make, chunks=chunks, dtype=np.uint8, meta=np.empty((0, 0), np.uint8))
    whole = x.compute(scheduler="threads")
    print(f"{size}x{size} uint8 in {chunk}^2 chunks, K=9 L=256, LocalCluster of {workers} "
          f"worker processes (1 thread each):")
    t0 = time.perf_counter()
    single = es.entropy(whole, window=9, levels=256, device="cpu")
    single_ms = (time.perf_counter() - t0) * 1e3
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        h = es.dask.entropy(x, window=9, levels=256, device="cpu", threads=1)
        h.sum().compute()  # warm-up: workers import the module, make contexts
        times = []
        got = None
        for _ in range(reps):
            t0 = time.perf_counter()
            got = h.compute()
            times.append((time.perf_counter() - t0) * 1e3)
    dask_ms = statistics.median(times)
    print(f"  one es.entropy call (all cores): {single_ms:9.1f} ms")
    print(f"  es.dask.entropy(...).compute():  {dask_ms:9.1f} ms (median of {reps}, result "
          f"gathered into the client)")
    print(f"  bit-identical: {np.array_equal(got, single)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--sk-reps", type=int, default=3)
    ap.add_argument("--dask-size", type=int, default=20000)
    ap.add_argument("--chunk", type=int, default=2048)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dask-reps", type=int, default=1)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--no-skimage", action="store_true", help="no part 1 (CuPy and Dask only)")
    ap.add_argument("--clock", choices=("wall", "thread"), default="wall",
                    help="part 1's clock: wall time, or the calling thread's CPU time")
    a = ap.parse_args()
    global part1_clock
    part1_clock = time.thread_time if a.clock == "thread" else time.perf_counter
    img = photo_1080p()
    if not a.no_skimage:
        bench_skimage(img, a.reps, a.sk_reps)
    bench_cupy(img, a.reps)
    if not a.no_dask:
        bench_dask(img, a.dask_size, a.chunk, a.workers, a.dask_reps)


if __name__ == "__main__":
    main()
