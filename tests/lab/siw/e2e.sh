#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
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
# then, with siw.ko swapped for its mpa_crc_required build (swap.sh):
#   client verbs (siw_d0) -> server iwarp   v2        (CRC both ways)
#   client iwarp + CRC    -> server verbs   reconnection
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

# siw built with mpa_crc_required: as initiator it asks for MPA CRC and
# refuses an MPA Reply without it (siw_cm.c:776-777), and it checks every
# FPDU's CRC; so these runs pass only if our iwarp provider answers with
# CRC and computes it right (RFC 5044 §7.1, §4.4).  As responder it uses
# CRC when asked: our client asks (RPCRDMA_MPA_CRC=1).
if "$(dirname "${BASH_SOURCE[0]}")/swap.sh" crc; then
	run "e2e v2 on siw-crc, client verbs, server iwarp" verbs iwarp "" \
		"$e2e" "$addr"
	run "reconnect on siw-crc, client iwarp+CRC, server verbs" iwarp verbs "" \
		env RPCRDMA_MPA_CRC=1 "$reconnect" "$addr"
else
	status=1
	summary+=("swap to the mpa_crc_required build of siw.ko FAILED")
fi

echo "=== siw-e2e summary (device ${RPCRDMA_LAB_DEV:-?})"
printf '%s\n' "${summary[@]}"
exit $status
