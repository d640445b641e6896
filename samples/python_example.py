#!/usr/bin/env python3
# %% [markdown]
# # entropy_stream from Python
# A notebook-style walk through the module (cells marked `# %%` run in Jupyter or VS Code,
# or the whole file as a script). Install it first, from the checkout:
#
#     bash tools/build.sh build
#     /usr/bin/python3 -m venv --system-site-packages venv
#     venv/bin/pip install --no-build-isolation ./python
#     venv/bin/python samples/python_example.py
#
# (tools/demo.sh does this into build/python-venv.)

# %%
import time

import numpy as np
from skimage import data

import entropy_stream as es

img = data.camera()  # a 512 x 512 uint8 photograph
print(es.version_info().splitlines()[0])

# %% [markdown]
# ## The map: es.entropy
# The SPEC's defaults: a 5 x 5 square window, 16 levels, bits, clipped at the edges.

# %%
h = es.entropy(img)
print("map", h.dtype, h.shape, "range", float(h.min()), "..", float(h.max()), "bits")
h9 = es.entropy(img, window=9, shape="disk", levels=256)  # scikit-image's levels for uint8

# %% [markdown]
# ## Statistics: es.stats (no map copied back unless with_map=True)

# %%
st = es.stats(img, window=9, levels=256, bins=8)
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in st.items() if k != "hist"})
print("histogram of H over [0, %.2f]:" % st["hmax"], st["hist"].tolist())

# %% [markdown]
# ## A drop-in for scikit-image

# %%
from skimage.filters.rank import entropy as sk_entropy  # noqa: E402
from skimage.morphology import disk  # noqa: E402

t0 = time.perf_counter()
ref = sk_entropy(img, disk(4))
t1 = time.perf_counter()
ours = es.skimage.entropy(img, disk(4))
t2 = time.perf_counter()
print(f"skimage {1e3 * (t1 - t0):.1f} ms, entropy_stream {1e3 * (t2 - t1):.1f} ms, "
      f"max difference {np.abs(ours - ref).max():.1e} bits (float32 rounding)")

# %% [markdown]
# ## A stack of frames [T, H, W] goes through the library's stream, in order

# %%
frames = np.stack([data.camera(), data.moon(), data.brick()])
maps = es.entropy(frames, window=9)
print("stack", maps.shape, [round(float(m.mean()), 3) for m in maps])

# %% [markdown]
# ## A video, frame by frame: es.open
# The library's run decodes and computes on threads of its own; at most `queue` frames wait
# for the loop, so memory stays bounded whatever the video's length. Leaving the loop (or
# the `with` block) stops the run.

# %%
import os  # noqa: E402

clip = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clip.mp4")
try:
    with es.open(clip, window=9, levels=256) as video:
        means = [(f.index, f.pts, round(f.stats["mean"], 3)) for f in video if f.index % 25 == 0]
    print("clip.mp4, every 25th frame (index, seconds, mean H):", means)
except OSError as e:  # a library built without FFmpeg reads no video
    print("es.open:", e)

# %% [markdown]
# ## Larger than memory: Dask, chunk by chunk, the same bits as one call

# %%
try:
    import dask.array as da
except ImportError:
    print("Dask is not installed: skipped")
else:
    big = da.from_array(np.tile(img, (4, 4)), chunks=(700, 900))
    hd = es.dask.entropy(big, window=9, levels=256)
    print("dask", hd.shape, "equal to one call:",
          np.array_equal(hd.compute(), es.entropy(np.tile(img, (4, 4)), window=9, levels=256)))

# %% [markdown]
# ## Plot (where matplotlib is present)

# %%
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    pass
else:
    fig, ax = plt.subplots(1, 2, figsize=(8, 4))
    ax[0].imshow(img, cmap="gray")
    ax[1].imshow(h9, cmap="inferno")
    for a in ax:
        a.axis("off")
    os.makedirs("out", exist_ok=True)
    fig.savefig("out/python_example.png", dpi=80, bbox_inches="tight")
    print("wrote out/python_example.png")
