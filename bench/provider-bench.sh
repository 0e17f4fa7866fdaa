#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs the provider benchmark unpinned and pinned to CPU 0 (both ends and
# the provider's threads), as the wake-up cost on these machines differs
# a lot between the two.  Extra arguments go to rpcrdma-perf.
#
#   bench/provider-bench.sh [BUILD_DIR] [--provider iwarp|verbs] [--addr IP]
#                           [--iters N] [--json]
set -eu
build=build
case "${1:-}" in
-*|"") ;;
*) build=$1; shift ;;
esac
perf=$build/bench/rpcrdma-perf
[ -x "$perf" ] || { echo "provider-bench: no $perf (build first)" >&2; exit 2; }
echo "== unpinned"
"$perf" provider "$@"
echo "== pinned (CPU 0)"
"$perf" provider --pin "$@"
