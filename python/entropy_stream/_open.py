"""entropy_stream.open: the frames of a video, or the images of a directory, each with its
map and statistics, through the library's run (es_run_* over its video source or its list of
stills; the C side is python/src/open.c)."""
import os
import re
import stat

import numpy as np

from . import _core

Frame = _core.Frame
Frames = _core.Frames


def _source(source):
    """(path the library opens, name frames and messages use, object to keep alive, whether
    it is a directory)."""
    if isinstance(source, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(source))
        if path == "-":
            # A pipe on standard input is read through /dev/fd/0, as a FIFO: the library's
            # "-" puts a pump of its own over the interpreter's fd 0 (the CLI's way), whose
            # thread could then wait forever on a writer after a close.
            if stat.S_ISFIFO(os.fstat(0).st_mode):
                return "/dev/fd/0", "-", None, False
            return "-", "-", None, False
        return path, path, None, os.path.isdir(path)
    fileno = getattr(source, "fileno", None)
    if fileno is None:
        raise TypeError(f"source {source!r}: must be a path, '-' (standard input) or a "
                        f"binary file object with a fileno()")
    try:
        fd = fileno()
    except (OSError, ValueError) as e:  # io.UnsupportedOperation: BytesIO and the like
        raise TypeError(f"source {source!r}: has no file descriptor ({e}); pass a path, '-' "
                        f"or a file object of a file or pipe") from e
    path = f"/dev/fd/{fd}"
    name = getattr(source, "name", None)
    return path, name if isinstance(name, str) else path, source, False


def open(path_or_file, window=5, shape="square", border="clip", levels=16, base=2,
         device="auto", map=True, stats=True, raw=None, queue=4, *, bins=16, threads=0,
         mask=None, in_range=None, recursive=False, ext=None):
    """Iterate over the frames of a video, a FIFO or standard input, or over the images of a
    directory, with their entropy.

    The library's run reads and decodes the input on threads of its own, computes each
    frame on the device chosen, and hands every result, in order, to a queue of at most
    `queue` frames that this iterator takes from: memory stays bounded by the queue and
    the run's own frames in flight (the CLI's default pool), whatever the length of the
    video (the CLI's rule). Maps and
    statistics are bit-identical to ``entropy-stream IN -o x.npy --stats x.csv``.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file object
        A video file (anything the build's libavformat opens: mp4, mkv, avi, y4m, ...), a
        named FIFO, ``"-"`` for standard input (YUV4MPEG2, or raw frames with `raw`), or a
        file object with a ``fileno()`` (a pipe from ``subprocess.Popen(...).stdout``): its
        descriptor is read by the library through ``/dev/fd/N`` (bytes the object has
        buffered itself are not seen; a regular file is read from its start). A
        directory: its images (PNG, JPEG, TIFF and what the build's libav* reads, hidden
        names skipped), listed and read as ``entropy-stream DIR -o OUT/`` does, one
        Frame each in name order, each of its own size.
    window : int, optional
        K, the window's side, odd, 1..255. Default 5.
    shape : {'square', 'disk'}, optional
    border : {'clip', 'reflect'}, optional
    levels : int, optional
        L, 2..65536 (8-bit video computes L above 256 as 256). Default 16.
    base : {2, 'e'}, optional
    device : {'auto', 'cpu', 'gpu'}, optional
        As for :func:`entropy_stream.entropy`.
    map : bool, optional
        False: no map is copied back (``Frame.map`` is None); statistics only.
    stats : bool, optional
        False: no statistics (``Frame.stats`` is None).
    raw : str, optional
        Raw grey frames instead of a container or YUV4MPEG2: ``"gray8:WxH"`` or
        ``"gray16le:WxH"``, ``"@FPS"`` optional (the CLI's ``--raw``).
    queue : int, optional
        Computed frames held for the caller, 1..4096; the run waits while they are all
        there. Default 4. (The run's own frames in flight are the library's default, as
        the CLI's without ``--queue``.)
    bins : int, optional
        Histogram bins of the statistics, 1..1024. Default 16.
    threads : int, optional
        CPU worker threads; 0 (default) is all cores.
    mask : array_like, optional
        2-D, of every frame's (every image's) shape, non-zero inside: pixels outside are in
        no window, their H is NaN, and the statistics cover the inside only. A frame or an
        image of another size raises ValueError (a directory's: at the end, after the
        others).
    in_range : (float, float), optional
        Float samples (a float32 TIFF) quantized linearly over ``(lo, hi)``; by default each
        image's own finite min..max.
    recursive : bool, optional
        A directory: descend into its subdirectories (``-r``); names are then relative
        (``"sub/a.png"``). Default False.
    ext : str, optional
        A directory: only these extensions, comma-separated, any case (``"png,jpg"``;
        ``--ext``). Default None: every one the build reads.

    Returns
    -------
    Frames
        An iterator of :class:`Frame` and a context manager. ``close()`` (also at the end
        of a ``with`` block, when the iterator is deleted, or at the end of the input)
        stops the run, joins its thread and frees the frames it had queued.

    Yields
    ------
    Frame
        ``.index`` (from 0; a directory's: the image's place in name order), ``.pts``
        (seconds, float, or None; None for a directory's), ``.name`` (the input's name,
        "-" for standard input, a directory's image's path relative to it, as in the CLI's
        ``--stats`` records), ``.damaged``
        (bool: concealed decoding errors), ``.map`` (float32 ndarray [H, W] the caller
        owns, or None), ``.stats`` (the dict :func:`entropy_stream.stats` returns, or
        None). A Frame is also a tuple in that order.

    Raises
    ------
    ValueError
        A parameter out of range (the message names it and the allowed range), at the call.
    TypeError
        A source that is neither a path nor a file object with a descriptor.
    OSError
        An input that cannot be opened or read ("entropy-stream: NAME: what went wrong"),
        raised by ``next()`` where it happened: the frames before a short or corrupt one
        are given first. A directory that cannot be listed raises at the call; an image in
        it that cannot be read is skipped (no Frame, its index left out), the others are
        given, and the end of the iteration raises OSError naming the last such file and
        how many failed (the CLI's exit 2 after a batch with failures).
    MemoryError, RuntimeError
        Out of memory; a device failed and no fallback could finish.
    KeyboardInterrupt
        Ctrl-C while waiting for a frame (seen within 0.1 s); the run goes on until closed.

    Examples
    --------
    >>> import entropy_stream as es
    >>> with es.open("samples/clip.mp4", window=9, levels=256) as frames:
    ...     for f in frames:
    ...         print(f.index, f.pts, f.map.shape, round(f.stats["mean"], 3))
    >>> for f in es.open("photos/", recursive=True, ext="png,jpg", window=9):
    ...     print(f.name, f.map.shape, f.stats["mean"])
    """
    if raw is not None and not (isinstance(raw, str) and re.fullmatch(
            r"(gray8|gray16le):[1-9][0-9]*x[1-9][0-9]*(@.+)?", raw)):  # the rate: the library's
        raise ValueError(f"raw={raw!r}: must be 'gray8:WxH' or 'gray16le:WxH', '@FPS' optional")
    path, name, keep, is_dir = _source(path_or_file)
    if (recursive or ext is not None) and not is_dir:
        if not os.path.exists(path):
            raise FileNotFoundError(2, "entropy-stream: no such directory", path)
        raise NotADirectoryError(20, "entropy-stream: recursive= and ext= take a directory",
                                 path)
    if raw is not None and is_dir:
        raise ValueError(f"raw={raw!r}: a directory's images are files, not raw frames")
    if ext is not None and not isinstance(ext, str):
        raise TypeError(f"ext={ext!r}: must be a str such as 'png,jpg' or None")
    if mask is not None:
        m = np.asarray(mask)
        if m.ndim != 2 or m.size == 0:
            raise ValueError(f"mask: must be a non-empty 2-D array of the frames' shape, not "
                             f"{m.shape}")
        mask = np.ascontiguousarray(m != 0, dtype=np.uint8)
    lo = hi = float("nan")
    if in_range is not None:
        try:
            lo, hi = (float(v) for v in in_range)
        except (TypeError, ValueError) as e:
            raise ValueError(f"in_range={in_range!r}: must be None or (lo, hi)") from e
    return _core.open_run(path, name, keep, window=window, shape=shape, border=border,
                          levels=levels, base=base, device=device, map=map, stats=stats,
                          raw=raw, queue=queue, bins=bins, threads=threads, dir=is_dir,
                          recursive=bool(recursive), ext=ext, mask=mask, in_lo=lo, in_hi=hi)
