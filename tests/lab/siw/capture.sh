#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/siw/capture.sh — sourced by the siw lab scripts inside the
# guest: a tshark capture on lo (the kernel's siw and our userspace iwarp
# provider both talk TCP to 192.0.2.1, which goes through lo) and its
# verdict.  The caller defines say() and sets status.
#
#   cap_start PCAP FILTER     start capturing (returns once tshark is live)
#   cap_stop                  stop it
#   cap_judge PCAP MIN_CRC_REQ MIN_PLAIN_REQ
#                             tshark decodes the capture down to ONC RPC:
#                             at least MIN_CRC_REQ MPA Requests with the C
#                             bit (RFC 5044 §7.1) each answered with it,
#                             at least MIN_PLAIN_REQ without, RPC-over-RDMA
#                             decoded, no malformed frame, no MPA bad
#                             length, no bad CRC, and a CRC checked good
#                             when CRC was asked for.  Returns 1 on failure.
cap_pid=

# tshark on a capture.  Packets sent back to back from two CPUs may reach
# the capture in the other order (frames out of sequence, "previous
# segment not captured"; seen with siw's transmit path): TCP reassembles
# them in sequence order, as the receiving stack did.
cap_ts() { tshark -o tcp.reassemble_out_of_order:TRUE "$@"; }

cap_start() {  # PCAP FILTER
	local err=$1.err
	tshark -i lo -f "$2" -w "$1" -q >/dev/null 2>"$err" &
	cap_pid=$!
	for _ in $(seq 150); do
		grep -q "Capturing on" "$err" 2>/dev/null && return 0
		kill -0 $cap_pid 2>/dev/null || break
		sleep 0.1
	done
	say "tshark could not capture on lo:"
	cat "$err"
	cap_pid=
	return 1
}

cap_stop() {
	[ -n "$cap_pid" ] || return 0
	sleep 1
	kill -INT $cap_pid 2>/dev/null
	wait $cap_pid 2>/dev/null
	cap_pid=
}

cap_judge() {  # PCAP MIN_CRC_REQ MIN_PLAIN_REQ
	local pcap=$1 ok=1
	[ "${RPCRDMA_LAB_KEEP:-0}" = 1 ] && cp "$pcap" /run/lab/
	# Judged down to ONC RPC.  Wireshark 4.0's NFS dissector is left
	# out: it decodes a READ reply whose data went by RDMA Write into
	# the Write chunk (RFC 8267 §4.1) as if the data were inline and
	# marks that (270-byte) frame Malformed; counted, not judged.
	# Three tshark passes (each costs seconds under TCG): the fields of
	# every frame, the CRC verdicts, and the NFS view.
	local frames req crcreq rep crcrep fpdus rpc malformed badlen
	local crc_good crc_bad nfs_malformed nfs_chunk_reads
	read -r frames req crcreq rep crcrep fpdus rpc malformed badlen <<<"$(
		cap_ts -n --disable-protocol nfs -r "$pcap" -T fields \
			-E separator='|' -E occurrence=f -e iwarp_mpa.req \
			-e iwarp_mpa.rep -e iwarp_mpa.crc_flag -e iwarp_mpa.fpdu \
			-e rpcordma.xid -e _ws.malformed -e iwarp_mpa.bad_length \
			2>/dev/null | awk -F'|' '
			{ n++ }
			$1 != "" { q++; if ($3 == 1) qc++ }
			$2 != "" { r++; if ($3 == 1) rc++ }
			$4 != "" { f++ }
			$5 != "" { x++ }
			$6 != "" { m++ }
			$7 != "" { b++ }
			END { print n+0, q+0, qc+0, r+0, rc+0, f+0, x+0, m+0, b+0 }')"
	read -r crc_good crc_bad <<<"$(
		cap_ts -n --disable-protocol nfs -r "$pcap" -Y iwarp_mpa.crc_check -V \
			2>/dev/null | awk '/Good CRC32/ { g++ } /Bad CRC32/ { b++ }
			END { print g+0, b+0 }')"
	read -r nfs_malformed nfs_chunk_reads <<<"$(
		cap_ts -n -r "$pcap" -Y _ws.malformed -T fields -E separator='|' \
			-E occurrence=f -e nfs.procedure_v3 -e rpcordma.writes_count \
			2>/dev/null | awk -F'|' '{ m++ } $1 == 6 && $2 > 0 { r++ }
			END { print m+0, r+0 }')"
	say "capture: frames $frames, MPA requests $req (CRC asked: $crcreq)," \
		"replies $rep (CRC: $crcrep), FPDUs $fpdus, RPC-over-RDMA $rpc"
	say "capture: malformed $malformed, MPA bad length $badlen," \
		"CRC good $crc_good, bad $crc_bad"
	# What the capture itself lost: a packet the kernel dropped before
	# dumpcap read it leaves a hole that tshark may misparse.
	grep -i "dropped\|captured" "$pcap.err" 2>/dev/null | sed 's/^/siw-capture: /'
	say "capture: with tshark's NFS dissector: $nfs_malformed malformed," \
		"$nfs_chunk_reads of them NFSv3 READ replies with a Write list"
	[ "$crcreq" -ge "$2" ] && [ "$crcrep" -ge "$crcreq" ] ||
		{ say "FAIL: want $2 MPA Requests with the CRC flag, each answered with it"; ok=0; }
	[ $((req - crcreq)) -ge "$3" ] ||
		{ say "FAIL: want $3 MPA Requests without the CRC flag"; ok=0; }
	[ "$rep" -ge "$req" ] || { say "FAIL: an MPA Request went unanswered"; ok=0; }
	[ "$rpc" -ge 1 ] || { say "FAIL: no RPC-over-RDMA decoded"; ok=0; }
	[ "$malformed" -eq 0 ] || { say "FAIL: $malformed malformed frames"; ok=0; }
	[ "$badlen" -eq 0 ] || { say "FAIL: $badlen MPA frames with a bad length"; ok=0; }
	[ "$crc_bad" -eq 0 ] || { say "FAIL: $crc_bad bad CRCs"; ok=0; }
	[ "$2" -eq 0 ] || [ "$crc_good" -ge 1 ] || { say "FAIL: no CRC verified good"; ok=0; }
	if [ $ok = 0 ]; then
		cap_ts -n --disable-protocol nfs -r "$pcap" \
			-Y '_ws.malformed || iwarp_mpa.bad_length' 2>/dev/null | head -n 10
		[ "$crc_bad" -eq 0 ] || tshark -n --disable-protocol nfs -r "$pcap" \
			-Y 'iwarp_mpa.crc_check && iwarp_mpa.crc != iwarp_mpa.crc_check' \
			2>/dev/null | head -n 10
		return 1
	fi
	return 0
}
