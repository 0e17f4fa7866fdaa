#!/bin/bash
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
cap=
if command -v tshark >/dev/null 2>&1; then
	tshark -i lo -f "tcp port 20049" -w "$pcap" -q \
		>"$work/cap.out" 2>"$work/cap.err" &
	cap=$!
	for _ in $(seq 150); do
		grep -q "Capturing on" "$work/cap.err" 2>/dev/null && break
		kill -0 $cap 2>/dev/null || break
		sleep 0.1
	done
	grep -q "Capturing on" "$work/cap.err" ||
		{ say "tshark could not capture on lo:"; cat "$work/cap.err"; status=1; }
else
	say "tshark not installed: no capture check"
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

if [ -n "$cap" ]; then
	sleep 1
	kill -INT $cap 2>/dev/null
	wait $cap 2>/dev/null
	[ "${RPCRDMA_LAB_KEEP:-0}" = 1 ] && cp "$pcap" /run/lab/
	# Judged down to ONC RPC.  Wireshark 4.0's NFS dissector is left
	# out: it decodes a READ reply whose data went by RDMA Write into
	# the Write chunk (RFC 8267 §4.1) as if the data were inline and
	# marks that (270-byte) frame Malformed; counted, not judged.
	ts() { tshark -n --disable-protocol nfs -r "$pcap" "$@" 2>/dev/null; }
	count() { ts -Y "$1" | wc -l; }
	nfs_malformed=$(tshark -n -r "$pcap" -Y _ws.malformed 2>/dev/null | wc -l)
	nfs_chunk_reads=$(tshark -n -r "$pcap" -Y \
		'_ws.malformed && nfs.procedure_v3 == 6 && rpcordma.writes_count > 0' \
		2>/dev/null | wc -l)
	frames=$(ts | wc -l)
	req=$(count iwarp_mpa.req)
	crcreq=$(count 'iwarp_mpa.req && iwarp_mpa.crc_flag == 1')
	rep=$(count iwarp_mpa.rep)
	crcrep=$(count 'iwarp_mpa.rep && iwarp_mpa.crc_flag == 1')
	fpdus=$(count iwarp_mpa.fpdu)
	rpc=$(count rpcordma)
	malformed=$(count _ws.malformed)
	badlen=$(count iwarp_mpa.bad_length)
	crc_good=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Good CRC32')
	crc_bad=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Bad CRC32')
	say "capture: frames $frames, MPA requests $req (CRC asked: $crcreq)," \
		"replies $rep (CRC: $crcrep), FPDUs $fpdus, RPC-over-RDMA $rpc"
	say "capture: malformed $malformed, MPA bad length $badlen," \
		"CRC good $crc_good, bad $crc_bad"
	say "capture: with tshark's NFS dissector: $nfs_malformed malformed," \
		"$nfs_chunk_reads of them NFSv3 READ replies with a Write list"
	ok=1
	[ "$req" -ge 4 ] && [ "$rep" -ge 4 ] || { say "FAIL: MPA handshakes missing"; ok=0; }
	[ "$crcreq" -ge 2 ] && [ $((req - crcreq)) -ge 2 ] ||
		{ say "FAIL: want MPA Requests with and without the CRC flag"; ok=0; }
	[ "$crcrep" -ge 2 ] || { say "FAIL: siw did not answer with CRC on"; ok=0; }
	[ "$rpc" -ge 1 ] || { say "FAIL: no RPC-over-RDMA decoded"; ok=0; }
	[ "$malformed" -eq 0 ] || { say "FAIL: $malformed malformed frames"; ok=0; }
	[ "$badlen" -eq 0 ] || { say "FAIL: $badlen MPA frames with a bad length"; ok=0; }
	[ "$crc_bad" -eq 0 ] || { say "FAIL: $crc_bad bad CRCs"; ok=0; }
	[ "$crc_good" -ge 1 ] || { say "FAIL: no CRC verified good"; ok=0; }
	if [ $ok = 1 ]; then
		summary+=("$(printf '%-52s %s' "capture iwarp<->siw judged by tshark" ok)")
	else
		ts -Y '_ws.malformed || iwarp_mpa.bad_length' | head -n 10
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
