#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/install/man_check.sh BUILD_DIR MAP — the installed manual pages:
# each page passes `mandoc -T lint` (warnings and worse) and renders with
# man-db's `man --warnings -l` without a groff warning (what lintian runs);
# each link names a page that exists; every function the library exports
# (the version script MAP) has a page or a link in section 3; the pages
# the README promises are there.
set -u
build=$1
map=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-man.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
bad() { echo "man pages: FAIL: $*"; fails=$((fails + 1)); }
for t in mandoc man; do
	command -v $t >/dev/null 2>&1 || { echo "man pages: $t not installed: skip"; exit 77; }
done

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; echo "man pages: FAIL: cmake --install"; exit 1; }
man=$work/prefix/share/man
[ -d "$man" ] || { echo "man pages: FAIL: nothing in share/man"; exit 1; }

pages=0 links=0
for f in "$man"/man*/*; do
	if [ -L "$f" ]; then
		links=$((links + 1))
		[ -f "$f" ] || bad "$(basename "$f") links to a missing page ($(readlink "$f"))"
		continue
	fi
	pages=$((pages + 1))
	out=$(mandoc -T lint -W warning "$f" 2>&1) || bad "mandoc -T lint: $out"
	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
	[ -z "$out" ] || bad "man --warnings -l $(basename "$f"): $out"
	# At 80 columns (man's MANWIDTH=80 is a 78-column line), every line
	# breaks: no "can't break line" or other groff warning.
	out=$(groff -mandoc -Tutf8 -ww -rLL=78n "$f" 2>&1 >/dev/null)
	[ -z "$out" ] || bad "80 columns: $(basename "$f"): $out"
	# Every page renders to text that names itself.
	name=$(basename "$f")
	name=${name%.*}
	MANWIDTH=80 man -l "$f" 2>/dev/null | grep -q -- "$name" ||
		bad "man -l $(basename "$f") does not render its name"
	grep -q '@[A-Z_]*@' "$f" && bad "$(basename "$f") has an unsubstituted @VARIABLE@"
done

for p in man7/rpcrdma.7 man3/rpcrdma.3 man3/clnt_rdma_create.3 man3/svc_rdma_create.3 \
	man1/rpcrdma-perf.1 man1/rpcrdma-dump.1 man1/rpcrdma-stat.1 man1/rpcrdma-ping.1; do
	[ -e "$man/$p" ] || bad "$p is not installed"
done
# The functions of the version script: between "global:" and "local:".
fns=$(perl -0pe 's|/\*.*?\*/||gs' "$map" | awk '/global:/ {on=1; next} /local:/ {on=0} on' |
	tr -d ' \t;' | grep -v '^$')
[ -n "$fns" ] || bad "no function found in $map"
nf=0
for fn in $fns; do
	nf=$((nf + 1))
	[ -e "$man/man3/$fn.3" ] || bad "exported function $fn has no manual page or link"
done
echo "man pages: $pages pages, $links links, $nf exported functions covered; $fails failures"
[ $fails -eq 0 ] && echo "man pages: PASS"
exit $((fails > 0))
