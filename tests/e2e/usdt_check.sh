#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The USDT probes (common/usdt.h): every one is in the built library
# (readelf -n: stapsdt notes of provider rpcrdma), and where bpftrace can
# run (root, a kernel with uprobes and BPF), tools/rpcrdma-latency.bt
# attached to a running rpcrdma-ping counts its calls by procedure.
#   usdt_check.sh LIBRARY BUILD_DIR LATENCY_BT
set -u
LIB=$1 B=$2 BT=$3
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
T=$(mktemp -d)
cleanup() { [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

readelf -n "$LIB" >"$T/notes"
if ! grep -q "Provider: rpcrdma" "$T/notes"; then
	echo "no USDT probes in $LIB: built without <sys/sdt.h> (systemtap-sdt-dev)"
	exit 77
fi
for p in connect disconnect call_start call_done call_marshal reply \
	svc_call svc_reply err_send err_recv mr_reg mr_inv; do
	if grep -q "Name: $p\$" "$T/notes"; then ok; else bad "probe $p missing"; fi
done

# bpftrace, where the machine allows it.
why=""
if ! command -v bpftrace >/dev/null 2>&1; then
	why="bpftrace is not installed"
elif [ "$(id -u)" -ne 0 ]; then
	why="bpftrace needs root"
elif ! timeout 30 bpftrace -e 'BEGIN { exit(); }' >"$T/bt0" 2>&1; then
	why="bpftrace cannot load a program here: $(grep -m1 ERROR "$T/bt0")"
fi
if [ -n "$why" ]; then
	echo "bpftrace run skipped: $why"
else
	"$B/examples/blockstore_server" --listen 127.0.0.1:0 --port-file "$T/port" \
		>/dev/null 2>&1 &
	SPID=$!
	for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
	"$B/tools/rpcrdma-ping" -q -c 400 -i 0.01 "127.0.0.1:$(cat "$T/port")" \
		0x20049001 1 >"$T/ping" 2>&1 &
	PP=$!
	sleep 0.5
	timeout -s INT 3 bpftrace -p "$PP" "$BT" >"$T/bt" 2>&1
	wait "$PP"
	cat "$T/bt"
	# The NULL procedure of 0x20049001 (537169921) version 1 was timed.
	n=$(sed -n 's/^@calls\[537169921, 1, 0\]: \([0-9]*\)$/\1/p' "$T/bt")
	if [ "${n:-0}" -gt 0 ]; then ok; else bad "bpftrace counted no calls"; fi
	if grep -q '^@latency_us\[537169921, 1, 0\]' "$T/bt"; then ok; else
		bad "no latency histogram"; fi
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
