#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# build-matrix.sh DIR CC/TYPE... — configure and build everything (library,
# tools, tests, examples) once per compiler and CMAKE_BUILD_TYPE, with
# -Werror and no sanitizer, each in DIR/CC-TYPE.  Optimisation levels find
# different warnings (gcc's -Wmaybe-uninitialized at -O2 and -Os only), so
# a packager's build type is checked as such, not only the -O0 sanitizer
# build.  Stops at the first configuration that fails.
set -eu
dir=$1
shift
jobs=${JOBS:-2}
mkdir -p "$dir"
for conf in "$@"; do
	cc=${conf%/*}
	type=${conf#*/}
	b=$dir/$cc-$type
	start=$(date +%s)
	CC=$cc cmake -S . -B "$b" -DCMAKE_BUILD_TYPE="$type" -DRPCRDMA_WERROR=ON \
		-DRPCRDMA_SANITIZE=OFF >"$b.log" 2>&1 ||
		{ cat "$b.log"; echo "build-matrix: $cc $type: configure failed" >&2; exit 1; }
	cmake --build "$b" -j"$jobs" >>"$b.log" 2>&1 ||
		{ grep -E -B2 -A6 'error|warning' "$b.log" | head -80
		  echo "build-matrix: $cc $type: FAILED (log: $b.log)" >&2; exit 1; }
	echo "build-matrix: $cc $type: ok, no warnings ($(( $(date +%s) - start )) s)"
done
