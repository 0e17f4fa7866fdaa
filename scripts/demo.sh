#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# demo.sh BUILD_DIR [--pcap FILE] — what `make demo` runs.
#
# Starts the example blockstore server (examples/, an ordinary rpcgen
# program served by svc_run() over svc_rdma_create) on loopback with the
# userspace iwarp provider, runs the example client against it, and prints
# the client's report: the RPC-over-RDMA version the connection
# negotiated, calls, bytes, message shapes, the callback, and NULL latency
# and 1 MiB WRITE / READ times next to the same calls over libtirpc/TCP
# (the server also serves the program on a libtirpc TCP transport, in the
# same svc_run()), measured in the same run.
# --pcap FILE (or RPCRDMA_DEMO_PCAP=FILE) also captures the loopback
# traffic with tshark/dumpcap: Wireshark decodes it as MPA → DDP/RDMAP →
# RPC-over-RDMA → ONC RPC.  Exit status: the client's.
set -u
build=${1:-build}
shift || true
pcap=${RPCRDMA_DEMO_PCAP:-}
while [ $# -gt 0 ]; do
	case $1 in
	--pcap) pcap=$2; shift 2 ;;
	--pcap=*) pcap=${1#--pcap=}; shift ;;
	*) echo "usage: $0 BUILD_DIR [--pcap FILE]" >&2; exit 2 ;;
	esac
done
srv=$build/examples/blockstore_server
cli=$build/examples/blockstore_client
for b in "$srv" "$cli"; do
	[ -x "$b" ] || { echo "demo: $b not built" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-demo.XXXXXX")
cap_pid=""
srv_pid=""
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
	[ -n "$cap_pid" ] && kill -INT "$cap_pid" 2>/dev/null && wait "$cap_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# A random port, so two demos do not collide, below Linux's ephemeral
# range (32768-60999 by default): a port in it may be taken by any
# outgoing connection of the machine (seen: thousands in TIME_WAIT made
# the server's bind fail with "Address already in use").
port=$(( 20000 + (RANDOM % 12000) ))
if [ -n "$pcap" ]; then
	if command -v tshark >/dev/null 2>&1; then
		# A large kernel buffer: the 1 MiB transfers come in 64 KiB
		# loopback segments, and one dropped segment desynchronises
		# a reassembling decoder (rpcrdma-dump) for the rest of its
		# stream.
		tshark -i lo -B 64 -f "tcp port $port" -w "$pcap" -q 2>"$dir/cap.err" &
		cap_pid=$!
		for _ in $(seq 100); do
			grep -q "Capturing on" "$dir/cap.err" 2>/dev/null && break
			sleep 0.1
		done
		# "Capturing on" can come before packets are really taken: probe
		# the (still closed) port until the probe's SYN/RST is in the
		# file, so the demo's connection setup (the MPA exchange that
		# identifies iWARP to Wireshark) cannot be missed.
		for _ in $(seq 50); do
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
			sleep 0.1
			[ "$(tshark -r "$pcap" 2>/dev/null | wc -l)" -gt 0 ] && break
		done
	else
		echo "demo: tshark not found (install Debian package tshark): no capture" >&2
		pcap=""
	fi
fi

"$srv" --listen "127.0.0.1:$port" --provider iwarp --tcp-listen 127.0.0.1:0 \
	>"$dir/server.log" 2>&1 &
srv_pid=$!
for _ in $(seq 100); do
	grep -q "TCP baseline on port" "$dir/server.log" 2>/dev/null && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
tport=$(awk '/TCP baseline on port/ { print $NF }' "$dir/server.log")
if ! grep -q "listening" "$dir/server.log" || [ -z "$tport" ]; then
	echo "demo: the server did not start:" >&2
	cat "$dir/server.log" >&2
	exit 1
fi
echo "demo: $(head -1 "$dir/server.log")"
"$cli" --provider iwarp --tcp "127.0.0.1:$tport" "127.0.0.1:$port"
rc=$?
if [ -n "$pcap" ]; then
	sleep 0.5
	kill -INT "$cap_pid" 2>/dev/null
	wait "$cap_pid" 2>/dev/null
	cap_pid=""
	echo "demo: capture saved in $pcap ($(tshark -r "$pcap" 2>/dev/null | wc -l) frames;" \
		"open it with Wireshark)"
fi
if [ $rc -ne 0 ]; then
	echo "demo: server log:" >&2
	cat "$dir/server.log" >&2
fi
exit $rc
