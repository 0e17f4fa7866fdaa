#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""spdx.py [--fix] [ROOT]: every source file of the tree carries the
project's SPDX licence line near its top (COPYING).  Without --fix it lists
the files that lack it and exits 1; with --fix it adds the line in the
comment syntax of the file's language.  The source files are those git
tracks, or, outside a git checkout, those found by walking ROOT."""
import os
import subprocess
import sys

LICENSE = "BSD-2-Clause OR GPL-2.0-only"
TAG = "SPDX-License-Identifier: " + LICENSE


def style(path):
    """The comment that carries the tag in this file, or None (not source)."""
    base = os.path.basename(path)
    if "/corpus/" in path or path.startswith("fuzz/corpus"):
        return None
    if base.endswith((".c", ".h", ".x", ".map")):
        return "/* %s */" % TAG
    if base.endswith((".sh", ".py", ".cmake", ".supp")) or base in (
            "CMakeLists.txt", "Makefile", "rules", "run") or base.endswith(
            (".cmake.in", ".pc.in")):
        return "# %s" % TAG
    if base.endswith(".lua"):
        return "-- %s" % TAG
    if path.startswith("man/") and base.endswith(".in"):
        return '.\\" %s' % TAG
    return None


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                             capture_output=True, text=True).stdout
        return [p for p in out.splitlines() if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".git", "build"))]
            for f in files:
                found.append(os.path.relpath(os.path.join(d, f), root))
        return found


def main():
    args = sys.argv[1:]
    fix = "--fix" in args
    args = [a for a in args if a != "--fix"]
    root = args[0] if args else "."
    missing = []
    for rel in sorted(tracked(root)):
        line = style(rel)
        path = os.path.join(root, rel)
        if line is None or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        if TAG in "\n".join(text.splitlines()[:3]):
            continue
        if not fix:
            missing.append(rel)
            continue
        lines = text.splitlines(keepends=True)
        at = 1 if lines and lines[0].startswith("#!") else 0
        lines.insert(at, line + "\n")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("".join(lines))
    for rel in missing:
        print("no SPDX line (%s): %s" % (LICENSE, rel))
    if missing:
        print("%d file(s) without the licence line; scripts/spdx.py --fix adds it"
              % len(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
