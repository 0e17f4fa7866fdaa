#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# wireshark_v2_synthetic.sh MKPCAP DUMP LUA — the v2 Wireshark dissector
# (tools/wireshark/rpcrdma2.lua) on synthetic captures holding every v2
# header type, every RDMA2_ERROR body and every kind of property
# (mkpcap --v2), compared with rpcrdma-dump by wireshark_v2_check.py:
#  - one Send per TCP segment, and the last one split into three DDP
#    segments (--split), with Wireshark's Send reassembly on (default);
#  - the split capture and --stress framing (several Sends per TCP
#    segment, FPDUs across segments) with that reassembly off, so every
#    DDP segment reaches the dissector;
#  - headers that each break one rule of the draft (mkpcap
#    --v2-violations): each must raise its expert info, and only it.
# Exit 77 (skip) without tshark or python3.
set -u
mkpcap=$1 dump=$2 lua=$3
here=$(cd "$(dirname "$0")" && pwd)
for t in tshark python3; do
	command -v $t >/dev/null 2>&1 || { echo "$t not installed: skip"; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-wsv2.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$mkpcap" --v2 "$work/plain.pcap" "$work/plain.json" &&
	"$mkpcap" --v2 --split "$work/split.pcap" "$work/split.json" &&
	"$mkpcap" --v2 --rev 2 --stress "$work/stress.pcap" "$work/stress.json" &&
	"$mkpcap" --v2-violations "$work/bad.pcap" "$work/bad.json" ||
	{ echo "wireshark v2: FAIL: mkpcap"; exit 1; }
rc=0
python3 "$here/wireshark_v2_check.py" --lua "$lua" --dump "$dump" \
	"$work/plain.pcap" "$work/split.pcap" || rc=1
python3 "$here/wireshark_v2_check.py" --lua "$lua" --dump "$dump" --no-send-reassembly \
	"$work/split.pcap" "$work/stress.pcap" || rc=1

# XID -> the expert info its header must raise.
want=(
	"0x3c000001|Reserved flag bits set"
	"0x3c000002|RDMA2_ERROR without RPCRDMA2_F_RESPONSE"
	"0x3c000003|RDMA2_NOMSG with no chunk"
	"0x3c000004|rdma_inv_handle is not one of this call's handles"
	"0x3c000005|Property data does not fit its type"
	"0x3c000006|Transport header truncated"
)
tshark -n -r "$work/bad.pcap" -X lua_script:"$lua" -Y rpcrdma2 -T fields -E separator='|' \
	-e rpcrdma2.xid -e _ws.expert.message >"$work/bad.txt" 2>/dev/null
for w in "${want[@]}"; do
	xid=${w%%|*} msg=${w#*|}
	line=$(grep "^$xid|" "$work/bad.txt")
	case ${line#*|} in
	"$msg"*) ;;
	*) echo "wireshark v2: FAIL: $xid: expected expert '$msg', got '${line#*|}'"; rc=1 ;;
	esac
	# Only that one: no second expert message in the frame.
	case ${line#*|} in
	*,*) echo "wireshark v2: FAIL: $xid: more than one expert info: ${line#*|}"; rc=1 ;;
	esac
done
n=$(wc -l <"$work/bad.txt")
[ "$n" -eq ${#want[@]} ] || { echo "wireshark v2: FAIL: $n rule-breaking headers decoded, expected ${#want[@]}"; rc=1; }
grep -q "Lua Error" "$work/bad.txt" && { echo "wireshark v2: FAIL: Lua error"; rc=1; }
echo "wireshark v2: $n rule-breaking headers checked for their expert info"
[ $rc -eq 0 ] && echo "wireshark v2 synthetic: PASS"
exit $rc
