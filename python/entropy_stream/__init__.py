"""entropy_stream: local Shannon entropy of images and video frames.

A Python binding of libentropy-stream (C, OpenMP, CUDA). The same bits as the command
line ``entropy-stream`` and the C library, on the CPU or a GPU.

>>> import numpy as np, entropy_stream as es
>>> img = np.zeros((64, 64), np.uint8); img[:, 32:] = np.arange(32) * 8
>>> h = es.entropy(img, window=9, levels=256)
>>> h.dtype, h.shape
(dtype('float32'), (64, 64))

Submodules: ``entropy_stream.skimage`` (a drop-in for ``skimage.filters.rank.entropy``) and
``entropy_stream.dask`` (Dask arrays, chunk by chunk with an overlap of the window's radius).
"""
from . import _core, _cuda
from ._open import Frame, Frames, open  # noqa: A004 - es.open, as the issue names it

__all__ = ["entropy", "stats", "open", "Frame", "Frames", "version_info", "skimage", "dask"]
__version__ = _core.LIBRARY_VERSION
WINDOW_MAX = _core.WINDOW_MAX


def _mask_u8(mask):
    # Non-zero = inside, one byte a pixel, C-contiguous (what _core takes).
    if mask is None:
        return None
    import numpy as np
    return np.ascontiguousarray(np.asarray(mask) != 0, dtype=np.uint8)


def _in_range(in_range):
    # (in_lo, in_hi): NaN, NaN for each image's own finite min..max.
    if in_range is None:
        return float("nan"), float("nan")
    try:
        lo, hi = in_range
        return float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(f"in_range={in_range!r}: must be None or (lo, hi)") from None


def entropy(image, window=5, shape="square", border="clip", levels=16, base=2, mask=None,
            device="auto", out=None, *, threads=0, in_range=None):
    """Local Shannon entropy of every pixel.

    H(p) = log2 N - (1/N) sum_k c_k log2 c_k over the window around p, c_k the count of
    quantized level k (a sample v of d bits becomes floor(v * levels / 2**d)). The result is
    the library's exact integer sum converted once to float32: the same bits on the CPU and
    every GPU, and the same as ``entropy-stream ... -o x.npy``.

    Parameters
    ----------
    image : ndarray of uint8, uint16 or float32, shape (H, W) or (T, H, W); or a CuPy array
        Any strides: rows of contiguous samples are read in place; any other layout (a
        transposed or column-sliced view, byte-swapped uint16) is copied once. A 3-D array
        is a stack of frames, computed in order through the library's stream. A CuPy array
        (anything with ``__cuda_array_interface__``, wrapped by CuPy) is computed on its
        own GPU without a trip through host memory, and the map is a CuPy array on it.
    window : int, optional
        K, the window's side, odd, 1..255. Default 5.
    shape : {'square', 'disk'}, optional
        'disk': offsets with dx*dx + dy*dy <= r*r, r = (K-1)/2 (skimage.morphology.disk(r)).
    border : {'clip', 'reflect'}, optional
        'clip' (default): pixels outside the image are not counted (scikit-image's rule).
        'reflect': symmetric padding (MATLAB's entropyfilt).
    levels : int, optional
        L, 2..256 for uint8, 2..65536 for uint16 and float32. Default 16.
    base : {2, 'e'}, optional
        2: bits (default); 'e' (or math.e): nats.
    mask : array_like, shape (H, W) (or (T, H, W) for a stack), optional
        Pixels to use: non-zero inside. A pixel outside is counted in no window (as one
        past a clip border; with 'reflect' a reflection landing on it is not counted
        either), and its H is NaN. Statistics (:func:`stats`) cover the inside only. A 2-D
        mask applies to every frame of a stack. With a CuPy image, a mask on its GPU (or
        one copied there).
    in_range : (lo, hi), optional
        float32 images: a finite sample v is level floor((v - lo) * levels / (hi - lo)),
        in double, clamped to 0..levels-1; NaN and infinite samples are outside, as masked
        ones (H NaN). None (default): each image's own finite min..max (inside its mask;
        a constant image is all level 0). Ignored for uint8 and uint16.
    device : {'auto', 'cpu', 'gpu'}, optional
        'auto': every visible GPU, and the CPU for small images. 'gpu' raises RuntimeError
        where no GPU is usable.
    out : ndarray of float32, optional
        Filled in place and returned: the image's shape, writeable, C-contiguous (a CuPy
        array on the image's GPU for a CuPy image).
    threads : int, optional
        CPU worker threads; 0 (default) is all cores.

    Returns
    -------
    ndarray of float32
        The map, shape of `image`, values in [0, log2(min(window pixels, levels))].

    Raises
    ------
    TypeError
        A dtype other than uint8, uint16 or float32 (`image`), or other than float32
        (`out`).
    ValueError
        A parameter out of range (the message gives the allowed range), an image that is
        empty or not 2-D or 3-D, an `out` of the wrong shape, read-only or not C-contiguous.
    NotImplementedError
        A CUDA array where CuPy is not importable; `in_range` or a float32 image with a CUDA
        array (float levels are taken on the host).
    MemoryError, RuntimeError
        Out of memory; a GPU failed and no fallback could finish.
    KeyboardInterrupt
        Ctrl-C: seen between bands of rows of a large image and between frames of a stack.

    Notes
    -----
    The GIL is released while computing; calls from several threads at once are safe.
    """
    if _cuda.is_cuda_array(image):
        if in_range is not None:
            raise NotImplementedError("in_range: float32 CUDA arrays are not supported")
        return _cuda.compute(image, out, window, shape, border, levels, base, mask, device)
    lo, hi = _in_range(in_range)
    return _core.entropy(image, window=window, shape=shape, border=border, levels=levels,
                         base=base, mask=_mask_u8(mask), device=device, out=out,
                         threads=threads, in_lo=lo, in_hi=hi)


def stats(image, window=5, shape="square", border="clip", levels=16, base=2, mask=None,
          device="auto", *, bins=16, threads=0, with_map=False, in_range=None):
    """Statistics of the local entropy map (SPEC section 2), without copying the map back.

    Parameters
    ----------
    image, window, shape, border, levels, base, mask, device, threads, in_range
        As for :func:`entropy`. With a mask (or float samples that are not finite) every
        statistic covers the inside pixels only.
    bins : int, optional
        Histogram bins over [0, hmax], 1..1024. Default 16.
    with_map : bool, optional
        Also return the map: ``(map, stats)``.

    Returns
    -------
    dict, or list of dict for a 3-D stack (one per frame)
        ``count`` (pixels), ``mean``, ``std`` (population), ``min``, ``max`` of H;
        ``global_entropy``: the entropy in bits of the image's raw samples at their bit
        depth (FFmpeg's ``entropy`` filter; float32: that of the levels);
        ``global_entropy_levels``: that of its quantized levels;
        ``bins``; ``hist`` (uint64 array of counts of H in equal bins over [0, hmax]);
        ``hmax`` = log2(min(window pixels, levels)) in the output unit.

    Raises
    ------
    As :func:`entropy`. A 2-D image's statistics are one library call: Ctrl-C is seen
    when it returns.
    """
    if _cuda.is_cuda_array(image):
        if with_map:
            h = entropy(image, window, shape, border, levels, base, mask, device)
            return h, _cuda.compute(image, None, window, shape, border, levels,
                                    base, mask, device, want_stats=True, bins=bins)
        return _cuda.compute(image, None, window, shape, border, levels, base, mask, device,
                             want_stats=True, bins=bins)
    lo, hi = _in_range(in_range)
    return _core.stats(image, window=window, shape=shape, border=border, levels=levels,
                       base=base, mask=_mask_u8(mask), device=device, bins=bins,
                       threads=threads, with_map=with_map, in_lo=lo, in_hi=hi)


def version_info():
    """The library's version, libpng and libav* versions, CUDA runtime and driver, GPUs."""
    return _core.version_info()


def __getattr__(name):
    # The submodules import scikit-image and Dask, which take a while: only when used.
    if name in ("skimage", "dask"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'entropy_stream' has no attribute {name!r}")
