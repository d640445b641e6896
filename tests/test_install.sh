#!/bin/bash
# Install the library into a temporary prefix (cmake --install --prefix), then build and run
# samples/oneshot.c against it: through the pkg-config file and through the CMake package
# (C++ and C-only projects); compile the header and every sample as strict C11, a C++
# program against the header, and samples/ configured on its own. A bug once baked the
# configured prefix into the .pc file, so an install under another prefix could not be used.
set -u
[ -n "${ES_BUILD:-}" ] && [ -n "${ES_SRC:-}" ] || { echo "skipped: ES_BUILD/ES_SRC not set"; exit 77; }
if [ "${ES_SANITIZE:-0}" = 1 ]; then
  echo "skipped: a sanitizer build's library needs the sanitizer runtime in every consumer"
  exit 77
fi
command -v pkg-config >/dev/null || { echo "skipped: no pkg-config"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAIL=0
fail() { echo "FAIL: $*"; FAIL=$((FAIL + 1)); }

cmake --install "$ES_BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install"; }
[ -f "$T/prefix/include/entropy_stream.h" ] || fail "header not installed"
# The man page (issue 32), where man looks for it under the prefix.
[ -f "$T/prefix/share/man/man1/entropy-stream.1" ] || fail "man page not installed in share/man/man1"
# The merge of --shard runs (issue 29), beside the program.
[ -x "$T/prefix/bin/entropy-stream-merge" ] || fail "entropy-stream-merge not installed in bin"
# One header: the public one, core/es_types.h written into it (no quoted include left over).
hdrs=$(cd "$T/prefix/include" 2>/dev/null && find . -type f | sort | tr '\n' ' ')
[ "$hdrs" = "./entropy_stream.h " ] || fail "installed under include/: $hdrs(want entropy_stream.h alone)"
grep -n '^ *# *include *"' "$T/prefix/include/entropy_stream.h" &&
  fail "the installed header includes a header that is not installed"
pc=$(find "$T/prefix" -name entropy-stream.pc | head -1)
[ -n "$pc" ] || fail "no entropy-stream.pc installed"
# The OpenMP runtime the static library needs is named by path in the .pc file and in the
# package: the runtime's own file, not the compiler's development link "lib*.so" in a
# directory of that compiler's version (gcc 12: /usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so),
# which is gone once that compiler is upgraded or removed while the runtime stays.
for lib in $(sed -n 's/^Libs.private: //p' "$pc") \
           $(sed -n 's/.*INTERFACE_LINK_LIBRARIES "\(.*\)".*/\1/p' \
               "$T"/prefix/lib*/cmake/EntropyStream/EntropyStreamTargets.cmake | tr ';' ' '); do
  case $lib in /*) ;; *) continue ;; esac
  [ -e "$lib" ] || fail "the installed package names a missing file: $lib"
  case $lib in
    *.so) [ -L "$lib" ] && fail "the installed package names the compiler's development link $lib, not the runtime it points to ($(readlink -f "$lib"))" ;;
  esac
done
export PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
inc=$(pkg-config --variable=includedir entropy-stream)
[ -f "$inc/entropy_stream.h" ] || fail "pkg-config includedir '$inc' has no header"
libdir=$(pkg-config --variable=libdir entropy-stream)

# pkg-config: the shared library where one is built, else the static one with its
# private dependencies (and a C++ link where CUDA is in it).
if [ "${ES_BUILD_SHARED:-1}" = 1 ]; then
  cc "$ES_SRC/samples/oneshot.c" $(pkg-config --cflags --libs entropy-stream) -o "$T/oneshot-pc" \
    2>"$T/cc.log" || { cat "$T/cc.log"; fail "cc with pkg-config"; }
else
  c++ -x c "$ES_SRC/samples/oneshot.c" -x none $(pkg-config --static --cflags --libs entropy-stream) \
    -o "$T/oneshot-pc" 2>"$T/cc.log" || { cat "$T/cc.log"; fail "c++ with pkg-config --static"; }
fi
if [ -x "$T/oneshot-pc" ]; then
  out=$(LD_LIBRARY_PATH="$libdir" "$T/oneshot-pc") || fail "oneshot (pkg-config) exit $?"
  echo "$out" | grep -q "histogram of H" || fail "oneshot (pkg-config) printed: $out"
fi

# The static route: a C program linked through `pkg-config --static` against the static
# library alone (a copy of the install without the shared one), FFmpeg and the rest shared as
# the system has them, links and runs. On a stock Debian 12 it could not link: Requires.private
# pulled FFmpeg's whole static list (cannot find -lzmq, -lvpx), and the .pc named
# /usr/lib/x86_64-linux-gnu/libpthread.a by path.
if [ "${ES_FFMPEG_STATIC_ONLY:-0}" != 1 ]; then
  grep -E '^Libs.private:.* /[^ ]*\.a( |$)' "$pc" && fail "the .pc file names a static archive by path"
  cp -a "$T/prefix" "$T/sprefix"
  rm -f "$T"/sprefix/lib*/libentropy-stream.so*
  spc=$(find "$T/sprefix" -name entropy-stream.pc | head -1)
  if PKG_CONFIG_PATH=$(dirname "$spc") cc "$ES_SRC/samples/oneshot.c" \
       $(PKG_CONFIG_PATH=$(dirname "$spc") pkg-config --static --cflags --libs entropy-stream) \
       -o "$T/oneshot-static" 2>"$T/cs.log"; then
    readelf -d "$T/oneshot-static" | grep -q 'NEEDED.*libentropy-stream' &&
      fail "pkg-config --static: the program needs libentropy-stream.so"
    out=$("$T/oneshot-static") || fail "oneshot (pkg-config --static) exit $?"
    echo "$out" | grep -q "histogram of H" || fail "oneshot (pkg-config --static) printed: $out"
  else
    cat "$T/cs.log"
    fail "cc with pkg-config --static (the static library, FFmpeg shared)"
  fi
fi

# The installed header alone (twice) as strict C11, every sample as strict C11 from its own
# .c (the project's build defines _GNU_SOURCE; a user's -std=c11 does not: throughput.c's
# clock_gettime was undeclared), and a C++ program that calls the library (extern "C").
strict="-std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only"
printf '#include <entropy_stream.h>\n#include <entropy_stream.h>\n' >"$T/h.c"
cc $strict -I"$inc" "$T/h.c" 2>"$T/h.log" || { cat "$T/h.log"; fail "the header as strict C11"; }
for s in "$ES_SRC"/samples/*.c; do
  cc $strict $(pkg-config --cflags entropy-stream) "$s" 2>"$T/s.log" ||
    { cat "$T/s.log"; fail "$(basename "$s") as strict C11"; }
done
cat >"$T/cxx.cpp" <<'CXX'
#include <entropy_stream.h>
#include <cstdio>
#include <vector>
int main() {
  es_config cfg;
  es_config_default(&cfg);
  es_context *ctx = NULL;
  char msg[256];
  if (es_context_create(&ctx, &cfg, msg, sizeof msg) != ES_OK) return 1;
  std::vector<unsigned char> px(64 * 48);
  for (size_t i = 0; i < px.size(); i++) px[i] = (unsigned char)(i * 37 % 251);
  std::vector<float> map(px.size());
  es_image img = {&px[0], 64, 48, 64, 8, nullptr, 0};
  es_stats st;
  int rc = es_compute(ctx, &img, &map[0], 64, &st, NULL, NULL);
  std::printf("%s, mean H %.3f\n", es_strerror(rc), st.mean);
  es_context_destroy(&ctx);
  return rc != ES_OK;
}
CXX
if [ "${ES_BUILD_SHARED:-1}" = 1 ]; then pcl="--libs"; else pcl="--static --libs"; fi
if c++ -std=c++11 -Wall -Wextra -pedantic -Werror "$T/cxx.cpp" $(pkg-config --cflags $pcl entropy-stream) \
  -o "$T/cxx" 2>"$T/cxx.log"; then
  out=$(LD_LIBRARY_PATH="$libdir" "$T/cxx") || fail "C++ program exit $?: $out"
else
  cat "$T/cxx.log"
  fail "a C++ program using the header did not build"
fi

# CMake package.
mkdir -p "$T/consumer"
cat >"$T/consumer/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.22)
project(consumer C CXX)
find_package(EntropyStream REQUIRED)
add_executable(oneshot "$ES_SRC/samples/oneshot.c")
target_link_libraries(oneshot EntropyStream::entropy-stream)
set_target_properties(oneshot PROPERTIES LINKER_LANGUAGE CXX)
CM
if cmake -S "$T/consumer" -B "$T/consumer/b" -DCMAKE_PREFIX_PATH="$T/prefix" >"$T/cm.log" 2>&1 &&
   cmake --build "$T/consumer/b" >>"$T/cm.log" 2>&1; then
  out=$(LD_LIBRARY_PATH="$libdir" "$T/consumer/b/oneshot") || fail "oneshot (CMake package) exit $?"
  echo "$out" | grep -q "histogram of H" || fail "oneshot (CMake package) printed: $out"
else
  tail -20 "$T/cm.log"
  fail "find_package(EntropyStream) consumer did not build"
fi
# A C-only project linking the static library: the CUDA objects in it need the C++ runtime,
# which the package's link interface must bring (a C linker does not add it). It is built
# with the other compiler (clang for a gcc build, gcc for a clang one) where there is one:
# the archive's OpenMP runtime must come with it (a clang-built archive linked by gcc got
# gcc's libgomp through find_dependency(OpenMP), and libomp's __kmpc_* were undefined).
# Nor does the package ask a user's project for OpenMP::OpenMP_C (its compiler's OpenMP, if it
# has one, and -fopenmp on the user's own code through the shared library's interface).
grep -l "OpenMP::" "$T"/prefix/lib*/cmake/EntropyStream/*.cmake 2>/dev/null | grep -q . &&
  fail "the installed CMake package names OpenMP:: (the user's OpenMP, not the library's runtime)"
built_cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$ES_BUILD/CMakeCache.txt")
case $(basename "$built_cc") in *clang*) other_cc=gcc ;; *) other_cc=clang ;; esac
command -v $other_cc >/dev/null || other_cc=$built_cc
mkdir -p "$T/cstatic"
cat >"$T/cstatic/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.22)
project(cstatic C)
find_package(EntropyStream REQUIRED)
add_executable(oneshot "$ES_SRC/samples/oneshot.c")
target_link_libraries(oneshot EntropyStream::entropy-stream-static)
CM
if cmake -S "$T/cstatic" -B "$T/cstatic/b" -DCMAKE_PREFIX_PATH="$T/prefix" -DCMAKE_C_COMPILER="$other_cc" \
     >"$T/cs.log" 2>&1 &&
   cmake --build "$T/cstatic/b" >>"$T/cs.log" 2>&1; then
  out=$("$T/cstatic/b/oneshot") || fail "oneshot (C project, static) exit $?"
  echo "$out" | grep -q "histogram of H" || fail "oneshot (C project, static) printed: $out"
else
  tail -20 "$T/cs.log"
  fail "a C-only find_package(EntropyStream) consumer of the static library did not build ($other_cc)"
fi
# samples/CMakeLists.txt configured on its own builds every sample against the install.
if cmake -S "$ES_SRC/samples" -B "$T/samples" -DCMAKE_PREFIX_PATH="$T/prefix" >"$T/sm.log" 2>&1 &&
   cmake --build "$T/samples" >>"$T/sm.log" 2>&1; then
  out=$(LD_LIBRARY_PATH="$libdir" "$T/samples/sample-oneshot" 64 48) || fail "sample-oneshot (samples on their own) exit $?"
  echo "$out" | grep -q "histogram of H" || fail "sample-oneshot (samples on their own) printed: $out"
  for s in "$ES_SRC"/samples/*.c; do
    [ -x "$T/samples/sample-$(basename "$s" .c)" ] || fail "samples on their own: no sample-$(basename "$s" .c)"
  done
else
  tail -20 "$T/sm.log"
  fail "samples/ configured on its own against the install did not build"
fi
# Absolute install dirs (Nix passes them): the .pc file names them as they are. The relative
# prefix once made includedir /include and libdir //opt/es/lib (configure only: no build).
# Every optional part is off here, and the summary says what was left out and why (it said
# "OFF" alone, the same for a part turned off and one not found). pkg-config is needed only
# for FFmpeg: without it configure went no further (find_package(PkgConfig REQUIRED)).
if cmake -S "$ES_SRC" -B "$T/abs" -DES_WITH_CUDA=OFF -DES_WITH_FFMPEG=OFF -DES_WITH_OPENMP=OFF \
     -DPKG_CONFIG_EXECUTABLE="$T/no-pkg-config" \
     -DES_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/opt/es \
     -DCMAKE_INSTALL_LIBDIR=/opt/es-lib/lib -DCMAKE_INSTALL_INCLUDEDIR=/opt/es-dev/include >"$T/abs.log" 2>&1; then
  for want in "OpenMP          : OFF (ES_WITH_OPENMP=OFF" "FFmpeg (libav\*) : OFF (ES_WITH_FFMPEG=OFF" \
              "CUDA            : OFF (ES_WITH_CUDA=OFF"; do
    grep -q -- "$want" "$T/abs.log" || fail "configure summary lacks '$want': $(grep -A9 'feature summary' "$T/abs.log")"
  done
  got=$(PKG_CONFIG_PATH="$T/abs/pipeline" pkg-config --variable=libdir entropy-stream),$(PKG_CONFIG_PATH="$T/abs/pipeline" pkg-config --variable=includedir entropy-stream)
  [ "$got" = /opt/es-lib/lib,/opt/es-dev/include ] ||
    fail "absolute install dirs: the .pc file says libdir,includedir = $got"
else
  tail -20 "$T/abs.log"
  fail "configure with absolute install dirs"
fi
# As a subproject (add_subdirectory), CUDA off for time: the project around it keeps its own
# build type (none here; it was forced to Release, -DNDEBUG included), builds no tests of
# ours, and links the library's targets. The CLI is built too: with every optional part off
# it once did not link (the video reader's stubs lagged behind video_in.c: 40856b6).
mkdir -p "$T/parent"
cat >"$T/parent/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.22)
project(parent C)
add_subdirectory("$ES_SRC" es)
add_executable(oneshot "$ES_SRC/samples/oneshot.c")
target_link_libraries(oneshot EntropyStream::entropy-stream-static)
CM
if cmake -S "$T/parent" -B "$T/parent/b" -DES_WITH_CUDA=OFF -DES_WITH_OPENMP=OFF -DES_WITH_FFMPEG=OFF >"$T/sub.log" 2>&1 &&
   cmake --build "$T/parent/b" --target oneshot entropy-stream-cli -j"$(nproc)" >>"$T/sub.log" 2>&1; then
  grep -q "^CMAKE_BUILD_TYPE:STRING=\$" "$T/parent/b/CMakeCache.txt" ||
    fail "subproject: the parent's build type was set: $(grep ^CMAKE_BUILD_TYPE: "$T/parent/b/CMakeCache.txt")"
  grep -q "^ES_BUILD_TESTS:BOOL=OFF" "$T/parent/b/CMakeCache.txt" || fail "subproject: ES_BUILD_TESTS is not OFF"
  out=$("$T/parent/b/oneshot") || fail "oneshot (subproject) exit $?"
  echo "$out" | grep -q "histogram of H" || fail "oneshot (subproject) printed: $out"
  out=$("$T/parent/b/es/tools/entropy-stream" --version) || fail "entropy-stream --version (all parts off) exit $?"
  echo "$out" | grep -q "FFmpeg: not built" || fail "entropy-stream --version (all parts off) printed: $out"
else
  tail -20 "$T/sub.log"
  fail "a project using entropy-stream through add_subdirectory did not build"
fi
[ $FAIL = 0 ] && echo "test_install: 7 consumers built and ran, header and samples strict C11" || echo "test_install: $FAIL failure(s)"
exit $((FAIL > 0))
