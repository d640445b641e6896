# setup.py - builds entropy_stream, a CPython extension over libentropy-stream's public
# header (pipeline/entropy_stream.h), linked against the shared library of a CMake build of
# this checkout, found by rpath (no install of the library needed):
#
#   bash tools/build.sh build
#   /usr/bin/python3 -m venv --system-site-packages VENV
#   VENV/bin/pip install --no-build-isolation ./python
#
# ES_BUILD_DIR names another build directory (default: build/ beside python/);
# ES_SOURCE_DIR the checkout, where python/ was copied elsewhere to build (the ctest does, to
# leave no build files in the tree).
import os
import sys

import numpy
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.environ.get("ES_SOURCE_DIR", os.path.dirname(here)))
build = os.path.abspath(os.environ.get("ES_BUILD_DIR", os.path.join(root, "build")))
libdir = os.path.join(build, "pipeline")
header = os.path.join(root, "pipeline", "entropy_stream.h")
if not os.path.exists(header):
    sys.exit(f"entropy_stream: {header}: not found (install from the checkout's python/)")
if not os.path.exists(os.path.join(libdir, "libentropy-stream.so")):
    sys.exit(f"entropy_stream: {libdir}/libentropy-stream.so: not found; build the library "
             f"first (bash tools/build.sh build; ES_BUILD_SHARED must be ON) or set ES_BUILD_DIR")

ext = Extension(
    "entropy_stream._core",
    sources=[os.path.join("src", "core.c"), os.path.join("src", "open.c")],
    depends=[os.path.join("src", "es_py.h")],
    # io/ for es_paths.h: es.open lists a directory with the CLI's walk (es_still_list_dir)
    include_dirs=[os.path.join(root, "pipeline"), os.path.join(root, "core"),
                  os.path.join(root, "io"), numpy.get_include()],
    library_dirs=[libdir],
    libraries=["entropy-stream"],
    runtime_library_dirs=[libdir],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
)

setup(
    name="entropy-stream",
    version="0.2.0",
    description="Local Shannon entropy of images and video frames (libentropy-stream)",
    packages=["entropy_stream"],
    ext_modules=[ext],
    python_requires=">=3.9",
    install_requires=["numpy"],
)
