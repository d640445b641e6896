"""A drop-in for ``skimage.filters.rank.entropy`` on the library's engine.

Square and disk footprints, 2-D uint8 and uint16 images, scikit-image's rules: the window
is clipped at the image's edges, every distinct value is its own bin (uint8: 256 bins;
uint16: ``image.max() + 1``, which is the same partition as 65536 levels: the entropy of
a window depends only on how its samples split into equal values), the result in bits as
float64, as scikit-image gives it. The values are the library's float32 (the exact integer
sum, rounded once); scikit-image's own are computed in double, so the two agree to float32
rounding. A ``mask`` is scikit-image's: only its pixels (non-zero after
``img_as_ubyte``) are counted in any window, and every pixel, outside too, gets the entropy
of the mask's pixels in its window (0 where there are none).
"""
import numpy as np

from . import _core, entropy as _entropy, WINDOW_MAX

__all__ = ["entropy"]


def _ubyte_mask(mask):
    # skimage's own conversion of a mask (img_as_ubyte) where scikit-image is there; else
    # its rule for the common dtypes: bool as is, uint8 as is, uint16 >> 8, float rounded
    # from [0, 1] to 0..255.
    m = np.asarray(mask)
    try:
        from skimage.util import img_as_ubyte
        return img_as_ubyte(m)
    except ImportError:
        pass
    if m.dtype == np.bool_ or m.dtype == np.uint8:
        return m.astype(np.uint8)
    if m.dtype == np.uint16:
        return (m >> 8).astype(np.uint8)
    if m.dtype.kind == "f":
        return np.clip(np.rint(m * 255.0), 0, 255).astype(np.uint8)
    return (m != 0).astype(np.uint8)


def _disk(radius):
    # skimage.morphology.disk(radius), without importing scikit-image.
    y, x = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    return (x * x + y * y) <= radius * radius


def footprint_shape(footprint):
    """('square' | 'disk', window) for a footprint array, else ValueError saying why."""
    fp = np.asarray(footprint)
    if fp.ndim != 2:
        raise ValueError(f"footprint has {fp.ndim} dimensions: only 2-D square and disk "
                         f"footprints are supported")
    k = fp.shape[0]
    if fp.shape[1] != k or k % 2 == 0 or k > WINDOW_MAX:
        raise ValueError(f"footprint of shape {fp.shape}: only odd square footprints "
                         f"(square(K) or disk(r)) up to {WINDOW_MAX} x {WINDOW_MAX} are "
                         f"supported")
    on = fp > 0
    if on.all():
        return "square", k
    if np.array_equal(on, _disk((k - 1) // 2)):
        return "disk", k
    raise ValueError("footprint is neither a full square nor skimage.morphology.disk(r): "
                     "only those two are supported")


def entropy(image, footprint, out=None, mask=None, shift_x=0, shift_y=0):
    """Local entropy in bits, as ``skimage.filters.rank.entropy(image, footprint)``.

    Parameters
    ----------
    image : ndarray of uint8 or uint16, shape (H, W)
    footprint : ndarray, shape (K, K)
        ``skimage.morphology.square(K)`` (all ones) or ``disk(r)`` (K = 2r + 1); any other
        footprint raises ValueError naming why.
    out : ndarray, shape (H, W), optional
        Filled (cast to its dtype, as scikit-image does) and returned.
    mask : ndarray, shape (H, W), optional
        As scikit-image's: converted by ``img_as_ubyte`` (bool: True inside; float in
        [0, 1]: inside where it rounds above 0 of 255), non-zero pixels counted; the
        pixels outside are computed too, from the mask's pixels of their window.
    shift_x, shift_y : 0
        Shifted footprints are not supported (NotImplementedError).

    Returns
    -------
    ndarray of float64 (or `out`)
    """
    if shift_x or shift_y:
        raise NotImplementedError("shift_x/shift_y: only centred footprints (0, 0) are "
                                  "supported")
    img = np.asanyarray(image)
    if img.ndim != 2:
        raise ValueError(f"image has {img.ndim} dimensions: must be 2-D")
    if img.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"image dtype {img.dtype}: must be uint8 or uint16 (convert with "
                        f"skimage.util.img_as_ubyte, as scikit-image would)")
    shape, k = footprint_shape(footprint)
    if out is not None and out is img:
        raise NotImplementedError("Cannot perform rank operation in place.")
    levels = 256 if img.dtype == np.uint8 else 65536
    if mask is None:
        h = _entropy(img, window=k, shape=shape, border="clip", levels=levels, base=2)
    else:
        m = _ubyte_mask(mask)
        if m.shape != img.shape:
            raise ValueError(f"mask shape {m.shape}: must be the image's, {img.shape}")
        # scikit-image computes the pixels outside the mask too (from the mask's pixels of
        # their window): the library's mask_computed.
        h = _core.entropy(img, window=k, shape=shape, border="clip", levels=levels, base=2,
                          mask=np.ascontiguousarray(m != 0, dtype=np.uint8),
                          mask_computed=True)
    if out is None:
        return h.astype(np.float64)
    out = np.asarray(out)
    if out.shape != img.shape:
        raise ValueError(f"out shape {out.shape}: must be the image's, {img.shape}")
    out[...] = h
    return out
