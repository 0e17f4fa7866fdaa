#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/package/deb_check.sh SOURCE_DIR — the Debian packages, as CI
# builds them: a copy of the source tree goes through
# `dpkg-buildpackage -us -uc -b` (Debian's compiler flags: -O2,
# _FORTIFY_SOURCE, stack protector; any compiler warning fails the test),
# `lintian --fail-on error` judges the result, and each .deb is unpacked
# into a scratch root with `dpkg -x` to check what it holds.  From that
# root a program is built with pkg-config and run, and rpcrdma-dump runs.
# Exit 77 (skip) without dpkg-buildpackage, dh or lintian.
set -u
src=$(cd "$1" && pwd)
for t in dpkg-buildpackage dh lintian; do
	command -v $t >/dev/null 2>&1 || { echo "package: $t not installed: skip"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
bad() { echo "package: FAIL: $*"; fails=$((fails + 1)); }
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$work/rpcrdma-$version

# The source as a fresh clone has it (no build directories).
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
		tar -xf - -C "$tree"
else
	(cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$tree"
fi

start=$(date +%s)
(cd "$tree" && dpkg-buildpackage -us -uc -b -j"${JOBS:-2}") >"$work/build.log" 2>&1 ||
	{ tail -40 "$work/build.log"; echo "package: FAIL: dpkg-buildpackage"; exit 1; }
echo "package: dpkg-buildpackage -us -uc -b: $(( $(date +%s) - start )) s"
if grep -E 'warning:' "$work/build.log" | grep -v '^dpkg-' >"$work/warn.txt"; then
	head -20 "$work/warn.txt"
	bad "$(wc -l <"$work/warn.txt") compiler warnings with Debian's build flags"
fi

changes=$(ls "$work"/*.changes)
lintian --fail-on error "$changes" >"$work/lintian.txt" 2>&1 || bad "lintian reports errors"
grep -v 'root privileges' "$work/lintian.txt"
echo "package: lintian: $(grep -c '^E:' "$work/lintian.txt") errors," \
	"$(grep -c '^W:' "$work/lintian.txt") warnings"

arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
root=$work/root
for p in librpcrdma0 librpcrdma-dev rpcrdma-tools; do
	deb=$(ls "$work/${p}_${version}_"*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || { bad "no $p package"; continue; }
	dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$work/$p.list"
	dpkg -x "$deb" "$root"
done
# What each package must hold (and the internal header it must not).
has() { grep -qx "$2" "$work/$1.list" || bad "$1 lacks $2"; }
has librpcrdma0 "/usr/lib/$arch/librpcrdma.so.0"
has librpcrdma0 "/usr/lib/$arch/librpcrdma.so.0.1.0"
for f in rpcrdma.h tirpc.h error.h iov.h; do has librpcrdma-dev "/usr/include/rpcrdma/$f"; done
for f in librpcrdma.so librpcrdma.a pkgconfig/rpcrdma.pc cmake/rpcrdma/rpcrdmaConfig.cmake \
	cmake/rpcrdma/rpcrdmaConfigVersion.cmake cmake/rpcrdma/rpcrdmaTargets.cmake; do
	has librpcrdma-dev "/usr/lib/$arch/$f"
done
for f in man7/rpcrdma.7.gz man3/rpcrdma.3.gz man3/clnt_rdma_create.3.gz \
	man3/svc_rdma_create.3.gz man3/svc_rdma_callback_client.3.gz; do
	has librpcrdma-dev "/usr/share/man/$f"
done
for f in /usr/bin/rpcrdma-dump /usr/bin/rpcrdma-perf /usr/share/man/man1/rpcrdma-dump.1.gz \
	/usr/share/man/man1/rpcrdma-perf.1.gz /usr/share/rpcrdma/wireshark/rpcrdma2.lua \
	/usr/sbin/rpcrdma-nfs3d /usr/share/man/man8/rpcrdma-nfs3d.8.gz \
	/usr/bin/rpcrdma-stat /usr/bin/rpcrdma-ping /usr/share/man/man1/rpcrdma-stat.1.gz \
	/usr/share/man/man1/rpcrdma-ping.1.gz /usr/share/rpcrdma/rpcrdma-latency.bt; do
	has rpcrdma-tools "$f"
done
# The example service, under the -dev package's documentation.
for f in blockstore.x blockstore_server.c blockstore_client.c Makefile; do
	has librpcrdma-dev "/usr/share/doc/librpcrdma-dev/examples/$f"
done
grep -q 'export.h' "$work/librpcrdma-dev.list" && bad "librpcrdma-dev ships the internal export.h"
# Only the shared library in the library package (Debian policy 8.2).
grep -v -e "^/usr/lib/$arch/librpcrdma.so.0" -e '^/usr/share/doc/' -e '/$' \
	"$work/librpcrdma0.list" >"$work/extra.txt" && bad "librpcrdma0 holds $(cat "$work/extra.txt")"

# The unpacked packages work: a program built with their pkg-config
# file runs against their shared library; their rpcrdma-dump decodes.
cat >"$work/prog.c" <<'PROG'
#include <stdio.h>
#include <rpcrdma/rpcrdma.h>
int main(void)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	printf("%s; credits %u\n", rpcrdma_strerror(RPCRDMA_ERR_TIMEOUT), o.credits);
	return o.size == sizeof(o) ? 0 : 1;
}
PROG
export PKG_CONFIG_PATH=$root/usr/lib/$arch/pkgconfig
# shellcheck disable=SC2046
cc -o "$work/prog" "$work/prog.c" $(pkg-config --cflags --libs rpcrdma) 2>"$work/cc.err" ||
	bad "building against the packages: $(cat "$work/cc.err")"
out=$(LD_LIBRARY_PATH=$root/usr/lib/$arch "$work/prog") || bad "the program failed: $out"
LD_LIBRARY_PATH=$root/usr/lib/$arch ldd "$work/prog" | grep -q "$root/usr/lib/$arch/librpcrdma.so.0" ||
	bad "the program did not load the packaged librpcrdma.so.0"
echo "package: a program built against the packages says: $out"
"$root/usr/bin/rpcrdma-dump" --hex 'f6ab0e18 01 01 07 1f' | grep -q 'remote_invalidation: true' ||
	bad "the packaged rpcrdma-dump does not decode"

echo "package: $(cat "$work"/*.list | grep -vc '/$') paths in 3 packages; $fails failures"
[ $fails -eq 0 ] && echo "package: PASS"
exit $((fails > 0))
