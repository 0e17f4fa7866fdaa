#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/siw/nfs.sh NFS3_INTEROP NFS41_INTEROP — runs INSIDE a siw lab
# guest under tests/kernel/nfsd-up.sh (nfsd listening on siw_d0):
#
#   RPCRDMA_LAB_RDMA=siw tests/lab/run.sh tests/kernel/nfsd-up.sh \
#       bash tests/lab/siw/nfs.sh BUILD/.../nfs3_interop BUILD/.../nfs41_interop
#
# Our rpcgen NFSv3 and NFSv4.1 clients against the kernel's nfsd on siw,
# in one boot:
#   1. over our userspace iwarp provider, MPA CRC off (what siw offers);
#   2. over the iwarp provider asking for MPA CRC (RPCRDMA_MPA_CRC=1,
#      RFC 5044 §7.1: siw must then use it too);
#   3. over the verbs provider on siw_d0 (rdma-core's libsiw);
# while 1 and 2 are captured on lo (the kernel's and our TCP both go
# through it) and the capture is judged by tshark: MPA Requests with and
# without the CRC flag and their Replies, no malformed frame, no MPA bad
# length, no bad CRC and at least one good one.
# Each client run checks nfsd's per-procedure counters against the calls
# it made and counts the directory it fills, so before each run the export
# is emptied and the counters' snapshot taken again.
set -u
nfs3=${1:?usage: nfs.sh NFS3_INTEROP NFS41_INTEROP}
nfs41=${2:?usage: nfs.sh NFS3_INTEROP NFS41_INTEROP}
status=0
summary=()
work=$(mktemp -d)
pcap=$work/siw-iwarp.pcapng

say() { echo "siw-nfs: $*"; }

run() {  # LABEL CMD...
	local label=$1 t0 rc dt
	shift
	echo "=== siw-nfs: $label"
	# Each client expects an empty export (its READDIRPLUS counts).
	find "$NFS_EXPORT" -mindepth 1 -delete
	cp /proc/net/rpc/nfsd "$NFSD_STATS"
	t0=$(date +%s.%N)
	"$@"
	rc=$?
	dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	[ $rc = 0 ] || status=1
	summary+=("$(printf '%-52s %s %6ss' "$label" "$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")" "$dt")")
}

# --- capture of our iwarp provider against siw -------------------------
. "$(dirname "${BASH_SOURCE[0]}")/capture.sh"
capturing=0
if ! command -v tshark >/dev/null 2>&1; then
	say "tshark not installed: no capture check"
	status=1
elif cap_start "$pcap" "tcp port 20049"; then
	capturing=1
else
	status=1
fi

cb="--cb-wait 1 --cb-optional"
run "NFSv3 over iwarp, MPA CRC off" \
	"$nfs3" --transport rdma --provider iwarp
run "NFSv4.1 over iwarp, MPA CRC off" \
	"$nfs41" --transport rdma --provider iwarp $cb
run "NFSv3 over iwarp, MPA CRC on (RPCRDMA_MPA_CRC=1)" \
	env RPCRDMA_MPA_CRC=1 "$nfs3" --transport rdma --provider iwarp
run "NFSv4.1 over iwarp, MPA CRC on (RPCRDMA_MPA_CRC=1)" \
	env RPCRDMA_MPA_CRC=1 "$nfs41" --transport rdma --provider iwarp $cb

if [ $capturing = 1 ]; then
	cap_stop
	# Two clients without CRC, two asking for it.
	if cap_judge "$pcap" 2 2; then
		summary+=("$(printf '%-52s %s' "capture iwarp<->siw judged by tshark" ok)")
	else
		summary+=("$(printf '%-52s %s' "capture iwarp<->siw judged by tshark" FAIL)")
		status=1
	fi
fi

run "NFSv3 over verbs on $RPCRDMA_LAB_DEV" \
	"$nfs3" --transport rdma --provider verbs
run "NFSv4.1 over verbs on $RPCRDMA_LAB_DEV" \
	"$nfs41" --transport rdma --provider verbs $cb

echo "=== siw-nfs summary (nfsd on ${RPCRDMA_LAB_DEV:-?}, ${RPCRDMA_LAB_RDMA:-?})"
printf '%s\n' "${summary[@]}"
rm -rf "$work"
exit $status
