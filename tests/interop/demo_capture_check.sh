#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# demo_capture_check.sh BUILD_DIR — run `make demo`'s client and server
# with a loopback capture (scripts/demo.sh --pcap) and let tshark, a
# dissector we did not write, judge the wire: MPA/DDP/RDMAP framing with
# good CRCs, RPC-over-RDMA headers carrying a Read list, a Write list and a
# Reply chunk (RFC 8166 §4.3), RDMA_NOMSG for the Long Call and Long Reply,
# ONC RPC calls of the blockstore program, and no malformed frame.
# Exit 77 (skip) without tshark.
#
# The demo runs in RPC-over-RDMA version 1: Wireshark's rpcordma dissector
# knows only RFC 8166 headers, so a v2 capture (draft-cel-nfsv4-rpcrdma-
# version-two, the default) would show no RPC-over-RDMA message at all.
# Both programs take RPCRDMA_VERSIONS from their default options.
set -u
export RPCRDMA_VERSIONS=1
build=$1
tag="demo capture"
. "$(dirname "$0")/demo_capture.sh"

# Wireshark decodes calls of programs it does not know only when asked.
# The options of every tshark run on our captures: tests/tshark_mpa.sh.
. "$(dirname "$0")/../tshark_mpa.sh"
ts() { tshark $tshark_mpa_opts -o rpc.dissect_unknown_programs:TRUE -r "$pcap" "$@" 2>/dev/null; }
count() { ts -Y "$1" | wc -l; }
frames=$(ts | wc -l)
rpcordma=$(count rpcordma)
reads=$(count 'rpcordma.reads_count > 0')
writes=$(count 'rpcordma.writes_count > 0')
reply=$(count 'rpcordma.reply_count > 0')
nomsg=$(count 'rpcordma.msg_type == 1')
calls=$(count 'rpc.msgtyp == 0 && rpc.program == 0x20049001')
cbcalls=$(count 'rpc.msgtyp == 0 && rpc.program == 0x20049002')
malformed=$(count _ws.malformed)
crc_bad=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Bad CRC32')
echo "demo capture: $frames frames, $rpcordma RPC-over-RDMA messages: Read list in $reads," \
	"Write list in $writes, Reply chunk in $reply, RDMA_NOMSG $nomsg;" \
	"blockstore calls $calls, callback calls $cbcalls; malformed $malformed, bad CRC $crc_bad"
[ "$rpcordma" -ge 2000 ] || bad "expected at least 2000 RPC-over-RDMA messages"
[ "$reads" -ge 2 ] || bad "no Read list (WRITE data, Long Call)"
[ "$writes" -ge 1 ] || bad "no Write list (READ data)"
[ "$reply" -ge 1 ] || bad "no Reply chunk (LIST)"
[ "$nomsg" -ge 2 ] || bad "expected RDMA_NOMSG for the Long Call and the Long Reply"
[ "$calls" -ge 2000 ] || bad "tshark decoded only $calls blockstore calls"
[ "$cbcalls" -ge 1 ] || bad "the reverse-direction callback call was not decoded"
[ "$malformed" -eq 0 ] || bad "$malformed malformed frames"
[ "$crc_bad" -eq 0 ] || bad "$crc_bad bad CRCs"
[ $fail -eq 0 ] && echo "demo capture: PASS"
# RPCRDMA_KEEP_FAILED_PCAP=FILE keeps a failing capture for a look.
[ $fail -ne 0 ] && [ -n "${RPCRDMA_KEEP_FAILED_PCAP:-}" ] && cp "$pcap" "$RPCRDMA_KEEP_FAILED_PCAP"
exit $fail
