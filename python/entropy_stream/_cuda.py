"""CUDA arrays (CuPy, or anything with ``__cuda_array_interface__`` that CuPy wraps): the map
computed on the array's own GPU by the library's es_compute_device, with no trip through
host memory, into a CuPy array."""
import numpy as np

from . import _core


def is_cuda_array(obj):
    return hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, np.ndarray)


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise NotImplementedError("a CUDA array (__cuda_array_interface__) needs CuPy to be "
                                  "wrapped and to hold the result; CuPy is not importable") from e
    return cupy


def _check(cupy, a):
    if a.dtype == np.float32:
        raise NotImplementedError("float32 CUDA arrays are not supported (their levels are "
                                  "taken on the host): pass a NumPy array, or uint8/uint16")
    if a.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"image dtype {a.dtype}: must be uint8 or uint16")
    if a.ndim not in (2, 3):
        raise ValueError(f"image has {a.ndim} dimensions: must be 2-D [H, W] or 3-D [T, H, W]")
    if a.size == 0:
        raise ValueError("image is empty (a dimension is 0)")


def _rows(cupy, frame):
    """The frame with contiguous rows at a positive stride (a copy on its GPU otherwise)."""
    item = frame.itemsize
    if frame.strides[1] != item or frame.strides[0] < frame.shape[1] * item or \
            frame.strides[0] % item or frame.data.ptr % item:
        frame = cupy.ascontiguousarray(frame)
    return frame


def compute(image, out, window, shape, border, levels, base, mask, device, want_stats=False,
            bins=16):
    """The map (CuPy float32, `out` if given) or, with want_stats, the stats dict(s)."""
    cupy = _cupy()
    if device not in ("auto", "gpu"):
        raise ValueError(f"device={device!r}: a CUDA array is computed on its own GPU: "
                         f"'auto' or 'gpu'")
    a = cupy.asarray(image)  # wraps __cuda_array_interface__, no copy
    _check(cupy, a)
    with a.device:
        if want_stats:
            out = None
        elif out is None:
            out = cupy.empty(a.shape, dtype=cupy.float32)
        else:
            if not isinstance(out, cupy.ndarray) or out.dtype != cupy.float32:
                raise TypeError("out: must be a CuPy array of float32 for a CUDA image")
            if out.shape != a.shape:
                raise ValueError(f"out shape {out.shape}: must be the image's, {a.shape}")
            if not out.flags.c_contiguous:
                raise ValueError("out must be C-contiguous")
            if out.device.id != a.device.id:
                raise ValueError(f"out is on GPU {out.device.id}, the image on GPU "
                                 f"{a.device.id}")
        # The library computes on streams of its own: what the caller queued on the current
        # stream (the input's writes) must be done first.
        cupy.cuda.get_current_stream().synchronize()
        # The mask on the image's GPU, one tight byte a pixel, non-zero inside: [H, W] for
        # every frame, or [T, H, W].
        m = None
        if mask is not None:
            m = cupy.ascontiguousarray(cupy.asarray(mask) != 0, dtype=cupy.uint8)
            if not (m.shape == a.shape[-2:] or (a.ndim == 3 and m.shape == a.shape)):
                raise ValueError(f"mask shape {m.shape}: must be the image's {a.shape} (or a "
                                 f"frame's, for a stack)")
            cupy.cuda.get_current_stream().synchronize()  # the conversion just queued
        frames = [a] if a.ndim == 2 else list(a)
        masks = [m] * len(frames) if m is None or m.ndim == 2 else list(m)
        outs = [out] if a.ndim == 2 else (list(out) if out is not None else [None] * len(a))
        stats = []
        for f, o, fm in zip(frames, outs, masks):
            g = _rows(cupy, f)
            if g is not f:
                cupy.cuda.get_current_stream().synchronize()  # the copy just queued
            f = g
            st = _core.entropy_device(
                f.data.ptr, f.shape[0], f.shape[1], f.strides[0], 8 * f.itemsize,
                0 if o is None else o.data.ptr, a.device.id, window=window, shape=shape,
                border=border, levels=levels, base=base, bins=bins, want_stats=want_stats,
                mask_ptr=0 if fm is None else fm.data.ptr)
            stats.append(st)
    if want_stats:
        return stats[0] if a.ndim == 2 else stats
    return out
