#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""abi_exports.py LIB MAP INCLUDE_DIR CC [CFLAGS...]

The shared library's dynamic symbols are exactly the functions the public
headers declare, each under the symbol version of the version script:

 - declared: every non-inline function declared in INCLUDE_DIR/rpcrdma/*.h
   (export.h excepted), as clang's AST of the headers lists them;
 - mapped:   the names in the `global:` part of the version script MAP;
 - exported: `nm -D --defined-only --with-symbol-versions LIB`.

Prints the differences and exits 1 when the three sets differ, a symbol
has no version or another version than the script's, or a name is not
rpcrdma_* / clnt_rdma_* / svc_rdma_*.
"""
import os
import re
import subprocess
import sys
import tempfile

PUBLIC_NAME = re.compile(r"^(rpcrdma_|clnt_rdma_|svc_rdma_)\w+$")


def declared(include, cc, cflags):
    hdr_dir = os.path.join(include, "rpcrdma")
    hdrs = sorted(h for h in os.listdir(hdr_dir)
                  if h.endswith(".h") and h != "export.h")
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        for h in hdrs:
            f.write('#include "rpcrdma/%s"\n' % h)
        src = f.name
    try:
        # -ast-dump-filter keeps the declarations whose name contains
        # "rdma_"; each is printed with its location.
        out = subprocess.run(
            [cc, "-fsyntax-only", "-I", include] + cflags +
            ["-Xclang", "-ast-dump", "-Xclang", "-ast-dump-filter",
             "-Xclang", "rdma_", src],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(src)
    names = set()
    for line in out.splitlines():
        m = re.match(r"FunctionDecl 0x[0-9a-f]+ <([^:>]+):[^>]*> "
                     r"\S+ (?:used |referenced )?(\w+) '[^']*'(.*)$", line)
        if not m:
            continue
        path, name, rest = m.groups()
        if "rpcrdma/" not in path or "inline" in rest or "static" in rest:
            continue
        names.add(name)
    return names, hdrs


def mapped(path):
    text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
    m = re.search(r"(\w[\w.]*)\s*\{\s*global:(.*?)local:", text, re.S)
    if not m:
        raise SystemExit("abi: no `NODE { global: ... local:` in %s" % path)
    return m.group(1), {n.strip() for n in m.group(2).split(";") if n.strip()}


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions",
                          lib], check=True, capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        # A version node itself shows as an absolute symbol.
        if parts[1] == "A":
            continue
        base, sep, ver = parts[2].partition("@")
        syms[base] = ver.lstrip("@") if sep else ""
    return syms


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    lib, mapfile, include, cc = sys.argv[1:5]
    cflags = sys.argv[5:]
    decl, hdrs = declared(include, cc, cflags)
    node, mapn = mapped(mapfile)
    exp = exported(lib)
    fails = []
    if not decl:
        fails.append("no function found in the headers (%s)" % ", ".join(hdrs))
    for n in sorted(decl - mapn):
        fails.append("%s is declared in a public header but not in %s" %
                     (n, os.path.basename(mapfile)))
    for n in sorted(mapn - decl):
        fails.append("%s is in %s but no public header declares it" %
                     (n, os.path.basename(mapfile)))
    for n in sorted(decl - set(exp)):
        fails.append("%s is declared but the library does not export it" % n)
    for n in sorted(set(exp) - decl):
        fails.append("the library exports %s, which no public header declares" % n)
    for n, v in sorted(exp.items()):
        if not PUBLIC_NAME.match(n):
            fails.append("exported name outside rpcrdma_*, clnt_rdma_*, svc_rdma_*: %s" % n)
        if v != node:
            fails.append("%s has symbol version '%s', not %s" % (n, v or "(none)", node))
    print("abi: %d functions declared in %s; %d in %s (node %s); %d exported by %s"
          % (len(decl), ", ".join(hdrs), len(mapn), os.path.basename(mapfile),
             node, len(exp), os.path.basename(lib)))
    for f in fails:
        print("abi: FAIL: " + f)
    if not fails:
        print("abi: PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
