#!/usr/bin/python3
"""check-includes.py [ROOT] - the rooms of the library include one way only.

Every #include "..." in the C and CUDA sources and headers of core/ io/ kernels/ pipeline/
tools/ python/ (where it exists) under ROOT (default: this script's repository) is resolved to
the room holding that header (first beside the including file, as the compiler does, then in
each room's directory) and checked against the allowed directions:

    core     -> core
    io       -> core io
    kernels  -> core kernels
    pipeline -> core io kernels pipeline
    tools    -> everything but python
    python   -> everything but tools

Prints one line per violation, "FILE:LINE: ROOM -> ROOM (HEADER)", and exits 1 if there is
any; a quoted include found in no room is one too ("FILE:LINE: ROOM -> ? (HEADER)"), so that
a header put somewhere new is not passed over. Exit 0 and a one-line count otherwise.
"""
import os
import re
import sys

ROOMS = ("core", "io", "kernels", "pipeline", "tools", "python")
ALLOWED = {
    "core": {"core"},
    "io": {"core", "io"},
    "kernels": {"core", "kernels"},
    "pipeline": {"core", "io", "kernels", "pipeline"},
    "tools": set(ROOMS) - {"python"},
    "python": set(ROOMS) - {"tools"},
}
SUFFIXES = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def room_of(root, path):
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    top = rel.split(os.sep, 1)[0]
    return top if top in ROOMS else None


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    bad = 0
    seen = 0
    for room in ROOMS:
        top = os.path.join(root, room)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(d, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.read().split("\n")
                for n, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    seen += 1
                    inc = m.group(1)
                    where = [os.path.join(d, inc)] + [os.path.join(root, r, inc) for r in ROOMS]
                    found = next((p for p in where if os.path.isfile(p)), None)
                    to = room_of(root, found) if found else None
                    if to in ALLOWED[room]:
                        continue
                    print("%s:%d: %s -> %s (%s)" % (os.path.relpath(path, root), n, room, to or "?", inc))
                    bad += 1
    if bad:
        return 1
    rooms = [r for r in ROOMS if os.path.isdir(os.path.join(root, r))]
    print("check-includes: %d quoted includes in %s, no forbidden direction" % (seen, " ".join(rooms)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
