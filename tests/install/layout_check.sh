#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/install/layout_check.sh BUILD_DIR — what `cmake --install` puts
# where: both tools, the shared and static library with the soname link,
# the public headers (each compiles on its own; the internal export.h is
# not installed), rpcrdma.pc, the CMake package, the Wireshark dissector
# and the manual pages.
set -u
build=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-layout.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
bad() { echo "install layout: FAIL: $*"; fails=$((fails + 1)); }

cmake --install "$build" --prefix "$work/p" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; echo "install layout: FAIL: cmake --install"; exit 1; }
cd "$work/p" || exit 1
libdir=$(dirname "$(find . -name 'librpcrdma.so.0' | head -1)")
[ "$libdir" != "." ] || { bad "no librpcrdma.so.0"; libdir=lib; }
for f in bin/rpcrdma-dump bin/rpcrdma-perf bin/rpcrdma-stat bin/rpcrdma-ping; do
	[ -x "$f" ] || bad "$f is not installed"
done
for f in "$libdir/librpcrdma.so" "$libdir/librpcrdma.a" "$libdir/pkgconfig/rpcrdma.pc" \
	"$libdir/cmake/rpcrdma/rpcrdmaConfig.cmake" \
	"$libdir/cmake/rpcrdma/rpcrdmaConfigVersion.cmake" \
	"$libdir/cmake/rpcrdma/rpcrdmaTargets.cmake" \
	include/rpcrdma/rpcrdma.h include/rpcrdma/tirpc.h include/rpcrdma/error.h \
	include/rpcrdma/iov.h share/rpcrdma/wireshark/rpcrdma2.lua \
	share/man/man7/rpcrdma.7 share/man/man1/rpcrdma-perf.1 share/man/man1/rpcrdma-dump.1 \
	share/man/man1/rpcrdma-stat.1 share/man/man1/rpcrdma-ping.1 \
	share/rpcrdma/rpcrdma-latency.bt share/doc/rpcrdma/examples/Makefile \
	share/doc/rpcrdma/examples/blockstore.x; do
	[ -e "$f" ] || bad "$f is not installed"
done
# rpcrdma-nfs3d and its page, when the build made it (rpcgen, libtirpc).
if [ -e "$build/tools/nfs3d/rpcrdma-nfs3d" ]; then
	[ -x sbin/rpcrdma-nfs3d ] || bad "sbin/rpcrdma-nfs3d is not installed"
	[ -e share/man/man8/rpcrdma-nfs3d.8 ] || bad "rpcrdma-nfs3d.8 is not installed"
fi
[ -e include/rpcrdma/export.h ] && bad "the internal include/rpcrdma/export.h is installed"
[ "$(readlink "$libdir/librpcrdma.so.0")" = "librpcrdma.so.0.1.0" ] ||
	bad "librpcrdma.so.0 does not point at librpcrdma.so.0.1.0"
# Each public header compiles alone with only the installed include
# directory (and libtirpc's, which tirpc.h includes).
for h in include/rpcrdma/*.h; do
	printf '#include <rpcrdma/%s>\n' "$(basename "$h")" >"$work/h.c"
	cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -I/usr/include/tirpc \
		"$work/h.c" 2>"$work/h.err" || bad "$h does not compile alone: $(head -3 "$work/h.err")"
done
echo "install layout: $(find . -type f -o -type l | wc -l) files installed; $fails failures"
[ $fails -eq 0 ] && echo "install layout: PASS"
exit $((fails > 0))
