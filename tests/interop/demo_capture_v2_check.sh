#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# demo_capture_v2_check.sh BUILD_DIR — `make demo` in RPC-over-RDMA
# version 2 (the default) under capture.  Wireshark's rpcordma dissector
# knows only RFC 8166, so the judges are split:
#  - tshark (which we did not write), with rpcordma disabled, checks the
#    iWARP layers: every MPA FPDU's CRC32c, DDP/RDMAP framing, no
#    malformed frame;
#  - rpcrdma-dump decodes every RPC-over-RDMA message with our codec and
#    tests/interop/v2_capture_check.py checks the v2 rules on the wire:
#    CONNPROP exchange (§5.3.4, §7), F_RESPONSE = msg_type (§3.2),
#    rdma_inv_handle names one of the call's handles (§3.3), Read list,
#    Write list, Reply chunk and RDMA2_NOMSG all present, a reverse call;
#  - tshark again, with the v2 dissector we ship (rpcrdma2.lua), must
#    decode every message of the capture to rpcrdma-dump's values, with
#    no malformed frame (wireshark_v2_check.py).
# Exit 77 (skip) without tshark or python3.
set -u
unset RPCRDMA_VERSIONS
build=$1
command -v python3 >/dev/null 2>&1 || { echo "python3 not installed: skip"; exit 77; }
tag="v2 capture"
. "$(dirname "$0")/demo_capture.sh"

# The options of every tshark run on our captures: tests/tshark_mpa.sh.
. "$(dirname "$0")/../tshark_mpa.sh"
ts() { tshark $tshark_mpa_opts --disable-protocol rpcordma -r "$pcap" "$@" 2>/dev/null; }
frames=$(ts | wc -l)
ddp=$(ts -Y iwarp_ddp_rdmap | wc -l)
malformed=$(ts -Y _ws.malformed | wc -l)
crc_bad=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Bad CRC32')
echo "v2 capture: tshark: $frames frames, $ddp DDP/RDMAP, malformed $malformed, bad CRC $crc_bad"
[ "$ddp" -ge 4000 ] || bad "tshark decoded only $ddp DDP/RDMAP frames"
[ "$malformed" -eq 0 ] || bad "$malformed malformed frames"
[ "$crc_bad" -eq 0 ] || bad "$crc_bad bad CRCs"

"$build/tools/rpcrdma-dump" --json "$pcap" >"$work/dump.json" ||
	bad "rpcrdma-dump reported errors"
python3 "$here/tests/interop/v2_capture_check.py" "$work/dump.json" || fail=1
python3 "$here/tests/interop/wireshark_v2_check.py" --lua "$here/tools/wireshark/rpcrdma2.lua" \
	--dump "$build/tools/rpcrdma-dump" "$pcap" || fail=1
[ $fail -eq 0 ] && echo "v2 capture: PASS"
exit $fail
