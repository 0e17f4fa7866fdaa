# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Sourced by demo_capture_check.sh and demo_capture_v2_check.sh: runs
# `make demo`'s client and server under a loopback capture (scripts/
# demo.sh --pcap).  Needs $build and $tag (the report prefix) set; leaves
# $here, $work (removed at exit), $pcap, $fail and bad() for the caller.
# Exits 77 (skip) without tshark.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v tshark >/dev/null 2>&1 || { echo "tshark not installed: skip"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-democap.XXXXXX")
trap 'rm -rf "$work"' EXIT
pcap=$work/demo.pcap
fail=0
bad() { echo "$tag: FAIL: $*"; fail=1; }

(cd "$here" && scripts/demo.sh "$build" --pcap "$pcap") >"$work/demo.out" 2>&1
rc=$?
grep -E "result|capture" "$work/demo.out"
[ $rc -eq 0 ] || { cat "$work/demo.out"; bad "the demo failed"; }
[ -s "$pcap" ] || { echo "$tag: FAIL: no capture"; exit 1; }
