#!/bin/bash
# tests/lab/siw/e2e.sh TEST_E2E TEST_RECONNECT — runs INSIDE a siw lab
# guest (RPCRDMA_LAB_RDMA=siw tests/lab/run.sh tests/lab/siw/e2e.sh ...).
#
# The e2e suite (tests/e2e: every message shape, reverse direction,
# timeouts, versions negotiation, then client reconnection) with the
# rdma-core "verbs" provider on the kernel's siw device against our own
# userspace "iwarp" provider, in both roles and in both RPC-over-RDMA
# versions, in one boot:
#
#   client verbs (siw_d0) -> server iwarp   v2, v1, reconnection
#   client iwarp          -> server verbs   v2, v1, reconnection
#
# Both sides talk iWARP over TCP to 192.0.2.1: siw in the kernel, ours in
# this process.  RPCRDMA_E2E_SERVER_PROVIDER gives the suite's servers
# their provider, RPCRDMA_PROVIDER its clients'.  Prints one line per run
# and fails if any run failed.
set -u
e2e=${1:?usage: e2e.sh TEST_E2E TEST_RECONNECT}
reconnect=${2:?usage: e2e.sh TEST_E2E TEST_RECONNECT}
addr=192.0.2.1
status=0
summary=()

run() {  # LABEL CLIENT SERVER VERSIONS CMD...
	local label=$1 cli=$2 srv=$3 vers=$4 t0 rc dt
	shift 4
	echo "=== siw-e2e: $label (client $cli, server $srv, RPCRDMA_VERSIONS=${vers:-default})"
	t0=$(date +%s.%N)
	if [ -n "$vers" ]; then
		RPCRDMA_PROVIDER=$cli RPCRDMA_E2E_SERVER_PROVIDER=$srv \
			RPCRDMA_VERSIONS=$vers "$@"
	else
		RPCRDMA_PROVIDER=$cli RPCRDMA_E2E_SERVER_PROVIDER=$srv "$@"
	fi
	rc=$?
	dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	[ $rc = 0 ] || status=1
	summary+=("$(printf '%-44s %s %6ss' "$label" "$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")" "$dt")")
}

for pair in "verbs iwarp" "iwarp verbs"; do
	set -- $pair
	run "e2e v2, client $1, server $2" "$1" "$2" "" "$e2e" "$addr"
	run "e2e v1, client $1, server $2" "$1" "$2" 1 "$e2e" "$addr"
	run "reconnect, client $1, server $2" "$1" "$2" "" "$reconnect" "$addr"
done

echo "=== siw-e2e summary (device ${RPCRDMA_LAB_DEV:-?})"
printf '%s\n' "${summary[@]}"
exit $status
