#!/bin/sh
# demo.sh BUILD_DIR — what `make demo` runs.  Until the RPC stack exists
# this decodes the sample messages in samples/ with rpcrdma-dump.
set -eu
build=${1:-build}
dump=$build/tools/rpcrdma-dump
[ -x "$dump" ] || { echo "demo: $dump not built" >&2; exit 1; }
n=0
for f in samples/*; do
	case $f in *.md|*.txt) continue ;; esac
	[ -f "$f" ] || continue
	echo "=== $f"
	"$dump" "$f"
	n=$((n + 1))
done
echo "=== decoded $n sample messages"
[ "$n" -gt 0 ]
