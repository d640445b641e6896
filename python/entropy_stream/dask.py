"""Dask arrays: ``entropy_stream.entropy`` chunk by chunk.

Each chunk is computed with r = (window - 1) // 2 rows and columns of its neighbours
(``map_overlap``, depth r, boundary 'none': nothing is padded at the array's own edges),
then trimmed. Every window of a chunk's own pixels then sees exactly what it sees in the
whole array, with the 'clip' and the 'reflect' border alike, so the result is the same bits
as one call on the whole array. Chunks may be NumPy arrays, or CuPy arrays (each then computed
on its own GPU, the result a CuPy-backed Dask array).
"""
import numpy as np

from . import entropy as _entropy

__all__ = ["entropy"]


def entropy(darray, window=5, shape="square", border="clip", levels=16, base=2,
            device="auto", *, threads=0):
    """Local entropy of a 2-D Dask array of uint8 or uint16, as a float32 Dask array.

    Parameters
    ----------
    darray : dask.array.Array, shape (H, W)
    window, shape, border, levels, base, device, threads
        As for :func:`entropy_stream.entropy`.

    Returns
    -------
    dask.array.Array of float32
        The chunks of `darray`, except that map_overlap merges a chunk thinner than r into
        its neighbour.
    """
    import dask.array as da

    if not isinstance(darray, da.Array):
        darray = da.asarray(darray)
    if darray.ndim != 2:
        raise ValueError(f"darray has {darray.ndim} dimensions: must be 2-D")
    if darray.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"darray dtype {darray.dtype}: must be uint8 or uint16")
    if not isinstance(window, int) or window < 1 or window % 2 == 0:
        raise ValueError(f"window={window!r}: must be odd, 1..255")
    r = (window - 1) // 2

    def block(x):
        return _entropy(x, window=window, shape=shape, border=border, levels=levels,
                        base=base, device=device, threads=threads)

    meta = np.empty((0, 0), dtype=np.float32)
    if type(darray._meta).__module__.startswith("cupy"):  # CuPy chunks give CuPy maps
        import cupy
        meta = cupy.empty((0, 0), dtype=cupy.float32)
    if r == 0:
        return darray.map_blocks(block, dtype=np.float32, meta=meta)
    return darray.map_overlap(block, depth=r, boundary="none", trim=True, dtype=np.float32,
                              meta=meta)
