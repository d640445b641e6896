#!/usr/bin/python3
"""long-functions.py [LINES] [ROOT] - the library's functions longer than LINES (default 150).

Lists the functions of core/ io/ kernels/ pipeline/ python/src (C and CUDA) under ROOT
(default: this script's repository) with more than LINES lines, longest first, one a line:
"LINES FILE:LINE NAME". Function extents come from universal-ctags (Debian: universal-ctags);
a CUDA kernel that ctags names after its __launch_bounds__ is named from its source line.
Exit 0; 2 where ctags-universal is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys

DIRS = ("core", "io", "kernels", "pipeline", "python/src")


def main(argv):
    limit = int(argv[1]) if len(argv) > 1 else 150
    root = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ctags = shutil.which("ctags-universal") or shutil.which("universal-ctags")
    if not ctags:
        print("long-functions: ctags-universal not found (apt install universal-ctags)", file=sys.stderr)
        return 2
    dirs = [d for d in DIRS if os.path.isdir(os.path.join(root, d))]
    out = subprocess.run([ctags, "-R", "--output-format=json", "--fields=+ne", "--kinds-C=f",
                          "--kinds-C++=f", "--langmap=C++:+.cu.cuh", "-f", "-"] + dirs,
                         cwd=root, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        t = json.loads(line)
        if t.get("_type") != "tag" or t.get("kind") != "function" or "end" not in t:
            continue
        n = t["end"] - t["line"] + 1
        if n <= limit:
            continue
        name = t["name"]
        if name.startswith("__"):  # __launch_bounds__(...) k_name(...): the kernel's name
            with open(os.path.join(root, t["path"]), encoding="utf-8", errors="replace") as f:
                src = f.read().split("\n")[t["line"] - 1]
            m = re.search(r"\)\s*(\w+)\s*\(", src)
            name = m.group(1) if m else name
        rows.append((n, t["path"], t["line"], name))
    for n, path, line, name in sorted(rows, key=lambda r: (-r[0], r[1], r[2])):
        print("%4d %s:%d %s" % (n, path, line, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
