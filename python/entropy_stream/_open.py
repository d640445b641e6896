"""entropy_stream.open: frames of a stream, each with its map and statistics.

The library's public header has no source yet (issue 26 adds the run: sources, compute,
sinks), so this reads what Python can read exactly as the CLI does without a decoder:
YUV4MPEG2 (a .y4m file, a binary file object or standard input, "-"), whose Y plane is the
grey frame as stored, and raw grey frames (raw="gray8:WxH[@FPS]" or "gray16le:WxH[@FPS]").
Frames are read and computed a batch at a time (the library's stream, in order), so memory
stays bounded by the batch whatever the length of the input.
"""
import builtins
import os
import sys
from fractions import Fraction

import numpy as np

from . import _core

# Y4M colour tags: (bytes per sample, chroma planes' size as a function of W, H).
_Y4M_8 = {
    "mono": lambda w, h: 0,
    "420": lambda w, h: 2 * ((w + 1) // 2) * ((h + 1) // 2),
    "420jpeg": lambda w, h: 2 * ((w + 1) // 2) * ((h + 1) // 2),
    "420mpeg2": lambda w, h: 2 * ((w + 1) // 2) * ((h + 1) // 2),
    "420paldv": lambda w, h: 2 * ((w + 1) // 2) * ((h + 1) // 2),
    "411": lambda w, h: 2 * ((w + 3) // 4) * h,
    "422": lambda w, h: 2 * ((w + 1) // 2) * h,
    "444": lambda w, h: 2 * w * h,
}
_Y4M_16 = {"mono16": "mono", "420p16": "420", "422p16": "422", "444p16": "444"}


class Frame:
    """One frame: ``index`` (from 0), ``pts`` (seconds, or None without a frame rate),
    ``name`` ("frame_000000", as the CLI names a video's frames), ``map`` (float32 [H, W],
    or None with want_map=False) and ``stats`` (dict, as entropy_stream.stats gives)."""

    __slots__ = ("index", "pts", "name", "map", "stats")

    def __init__(self, index, pts, name, map_, stats):
        self.index, self.pts, self.name, self.map, self.stats = index, pts, name, map_, stats

    def __repr__(self):
        shape = None if self.map is None else self.map.shape
        return f"Frame(index={self.index}, pts={self.pts}, name={self.name!r}, map={shape})"


def _read_exact(f, n, what):
    buf = f.read(n)
    if buf is None:
        buf = b""
    while len(buf) < n:
        more = f.read(n - len(buf))
        if not more:
            break
        buf += more
    return buf


def _line(f, limit=4096):
    out = bytearray()
    while len(out) < limit:
        c = f.read(1)
        if not c:
            return bytes(out) if out else None
        if c == b"\n":
            return bytes(out)
        out += c
    raise ValueError("YUV4MPEG2: a header line longer than 4096 bytes")


def _y4m_header(f, name):
    head = _line(f)
    if head is None or not head.startswith(b"YUV4MPEG2"):
        raise ValueError(f"{name}: not a YUV4MPEG2 stream (no 'YUV4MPEG2' header); raw "
                         f"frames need raw='gray8:WxH'")
    w = h = None
    fps = None
    tag = "420jpeg"
    for tok in head.decode("ascii", "replace").split()[1:]:
        if tok[0] == "W":
            w = int(tok[1:])
        elif tok[0] == "H":
            h = int(tok[1:])
        elif tok[0] == "F":
            num, den = tok[1:].split(":")
            if int(num) > 0 and int(den) > 0:
                fps = Fraction(int(num), int(den))
        elif tok[0] == "C":
            tag = tok[1:]
    if not w or not h or w < 1 or h < 1:
        raise ValueError(f"{name}: YUV4MPEG2 header without a valid W and H")
    if tag in _Y4M_8:
        depth, chroma = 8, _Y4M_8[tag](w, h)
    elif tag in _Y4M_16:
        depth, chroma = 16, 2 * _Y4M_8[_Y4M_16[tag]](w, h)
    else:
        raise NotImplementedError(f"{name}: YUV4MPEG2 colour space C{tag}: es.open reads "
                                  f"8-bit and 16-bit ones (mono, 420*, 411, 422, 444, mono16, "
                                  f"420p16, 422p16, 444p16); the CLI reads the others")
    return w, h, depth, chroma, fps


def _raw_spec(raw):
    try:
        fmt, rest = raw.split(":", 1)
        fps = None
        if "@" in rest:
            rest, f = rest.split("@", 1)
            fps = Fraction(f)
        w, h = (int(v) for v in rest.lower().split("x"))
    except (ValueError, ZeroDivisionError) as e:
        raise ValueError(f"raw={raw!r}: must be 'gray8:WxH' or 'gray16le:WxH', optionally "
                         f"'@FPS'") from e
    if fmt not in ("gray8", "gray16le") or w < 1 or h < 1 or (fps is not None and fps <= 0):
        raise ValueError(f"raw={raw!r}: must be 'gray8:WxH' or 'gray16le:WxH', optionally "
                         f"'@FPS'")
    return w, h, (8 if fmt == "gray8" else 16), fps


def _frames(f, name, raw):
    """(index, pts, grey ndarray) for every frame of the stream."""
    if raw is not None:
        w, h, depth, fps = _raw_spec(raw)
        chroma = 0
    else:
        w, h, depth, chroma, fps = _y4m_header(f, name)
    nbytes = w * h * (depth // 8)
    dtype = np.uint8 if depth == 8 else np.dtype("<u2")
    index = 0
    while True:
        if raw is None:
            line = _line(f)
            if line is None:
                return
            if not line.startswith(b"FRAME"):
                raise ValueError(f"{name}: frame {index}: expected a FRAME line")
        buf = _read_exact(f, nbytes + chroma, name)
        if raw is not None and not buf:
            return
        if len(buf) < nbytes + chroma:
            raise ValueError(f"{name}: frame {index}: short frame ({len(buf)} of "
                             f"{nbytes + chroma} bytes); the frames before it were given")
        grey = np.frombuffer(buf, dtype=dtype, count=w * h).reshape(h, w)
        if depth == 16:
            grey = grey.astype(np.uint16)  # native order
        pts = float(index / fps) if fps else None
        yield index, pts, grey
        index += 1


def open(source, *, raw=None, window=5, shape="square", border="clip", levels=16, base=2,
         device="auto", bins=16, threads=0, want_map=True, batch=8):
    """Iterate over the frames of a YUV4MPEG2 or raw grey stream with their entropy.

    Parameters
    ----------
    source : str, os.PathLike or binary file object
        A .y4m file, "-" for standard input, or an open binary file (a pipe from ffmpeg:
        ``ffmpeg -i in.mp4 -f yuv4mpegpipe -``). Video containers (mp4, mkv, ...) need the
        library's source run (issue 26): NotImplementedError until then.
    raw : str, optional
        Raw frames instead of YUV4MPEG2: "gray8:WxH" or "gray16le:WxH", "@FPS" optional.
    window, shape, border, levels, base, device, bins, threads
        As for :func:`entropy_stream.entropy` and :func:`entropy_stream.stats`.
    want_map : bool, optional
        False: statistics only (``Frame.map`` is None).
    batch : int, optional
        Frames read and computed together (memory: batch frames in flight). Default 8.

    Yields
    ------
    Frame
        ``.index``, ``.pts`` (seconds), ``.name``, ``.map``, ``.stats``.

    Raises
    ------
    OSError
        The file cannot be opened or read.
    ValueError
        Not a YUV4MPEG2 stream, a bad header or raw= spec, or a short last frame (raised
        after the frames before it were yielded).
    NotImplementedError
        A video container, or a YUV4MPEG2 colour space of 9 to 15 bits.
    """
    if batch < 1:
        raise ValueError(f"batch={batch}: must be >= 1")
    close = False
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path == "-":
            f, name = sys.stdin.buffer, "-"
        else:
            name = path
            if raw is None and not path.lower().endswith((".y4m", ".yuv4mpeg")):
                with builtins.open(path, "rb") as probe:
                    if not probe.read(10).startswith(b"YUV4MPEG2"):
                        raise NotImplementedError(
                            f"{path}: decoding video files needs the library's source run "
                            f"(issue 26); es.open reads YUV4MPEG2 and raw grey frames (pipe "
                            f"one in: ffmpeg -i {path} -f yuv4mpegpipe -)")
            f = builtins.open(path, "rb")
            close = True
    else:
        f, name = source, getattr(source, "name", "<stream>")
    try:
        pending = []

        def flush():
            stack = np.stack([g for _, _, g in pending])
            res = _core.stats(stack, window=window, shape=shape, border=border, levels=levels,
                              base=base, device=device, bins=bins, threads=threads,
                              with_map=want_map)
            maps, stats = res if want_map else (None, res)
            out = [Frame(i, pts, f"frame_{i:06d}", None if maps is None else maps[k],
                         stats[k]) for k, (i, pts, _) in enumerate(pending)]
            pending.clear()
            return out

        frames = _frames(f, name, raw)
        while True:
            try:
                item = next(frames)
            except StopIteration:
                break
            except ValueError:
                if pending:  # the frames before a short or broken one are given first
                    yield from flush()
                raise
            pending.append(item)
            if len(pending) == batch:
                yield from flush()
        if pending:
            yield from flush()
    finally:
        if close:
            f.close()

