#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Loopback capture check (CTest provider_capture_tshark, label interop).
#
#   capture_check.sh PROVIDER_CONFORMANCE [WORKDIR]
#
# Captures lo from before the first TCP handshake while a subset of the
# provider conformance suite runs on 127.0.0.1 with fixed ports and MPA
# CRC on, then asks tshark to decode the capture and asserts:
#   - MPA Request and MPA Reply frames are recognised (and ask for CRC);
#   - no malformed frames (_ws.malformed) and no MPA "bad length";
#   - every FPDU CRC checks good, none bad;
#   - every RDMAP opcode appears: Write, Read Request, Read Response, Send,
#     Send w/ Invalidate, Send w/ SE, Send w/ SE and Invalidate, Terminate.
# Exit 77 (skipped) only when tshark is not installed.
set -u

bin=${1:?usage: capture_check.sh PROVIDER_CONFORMANCE [WORKDIR]}
dir=${2:-${TMPDIR:-/tmp}/rpcrdma-capture.$$}

if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark is not installed"
	exit 77
fi

mkdir -p "$dir" || exit 1
pcap=$dir/loopback.pcapng
rm -f "$pcap"
# A fixed port range per run: the suite listens on BASE..BASE+199.
base=$((31000 + ($$ % 100) * 200))
last=$((base + 199))
# Small transfers only, and FPDUs capped at 8 KiB: tshark's MPA dissector
# frames FPDUs from the start of each TCP segment and cannot follow one
# that straddles segments, which RFC 5044 5.1 allows (and TCP does under
# window pressure in bulk transfers).  Bulk paths are the suite's job.
cases=${CAPTURE_CASES:-wire_all_opcodes,send_recv_multi_sge,access_write_bad_stag,access_read_oob_end,access_read_bad_stag,cm_private_data,cm_reject,send_no_recv,recv_too_small,mw_send_with_inv}
fpdu=${CAPTURE_MAX_FPDU:-8192}

fail=0
say() { echo "capture_check: $*"; }
bad() { say "FAIL: $*"; fail=1; }

tshark -i lo -f "tcp portrange $base-$last" -w "$pcap" -q \
	>"$dir/tshark-capture.out" 2>"$dir/tshark-capture.err" &
cap=$!
# Wait until the capture is live (tshark says so on stderr).
i=0
while ! grep -q "Capturing on" "$dir/tshark-capture.err" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 150 ] || ! kill -0 $cap 2>/dev/null; then
		cat "$dir/tshark-capture.err"
		kill $cap 2>/dev/null
		say "FAIL: tshark could not start capturing on lo"
		exit 1
	fi
	sleep 0.1
done
sleep 0.5

say "running: $bin --addr 127.0.0.1 --port $base --mpa-crc --max-fpdu $fpdu --filter $cases"
"$bin" --addr 127.0.0.1 --port "$base" --mpa-crc --max-fpdu "$fpdu" \
	--filter "$cases" >"$dir/conformance.out" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP)|passed' "$dir/conformance.out"
# Failed cases are provider_conformance's to report; this check judges the
# wire, so only a run that produced no traffic at all is fatal here.
[ $rc -eq 0 ] || say "note: the conformance subset exited $rc (see above)"

sleep 1
kill -INT $cap 2>/dev/null
wait $cap 2>/dev/null
if [ ! -s "$pcap" ]; then
	say "FAIL: no capture file"
	exit 1
fi

# The suite's Send payloads are test patterns, not RPC-over-RDMA: keep
# tshark's rpcordma dissector from parsing them (a 4-byte pattern makes it
# throw "Malformed Packet: RPCoRDMA").  The iWARP layers are what we judge.
# The options of every tshark run on our captures: tests/tshark_mpa.sh.
. "$(dirname "$0")/../tshark_mpa.sh"
ts() { tshark $tshark_mpa_opts --disable-protocol rpcordma -r "$pcap" "$@" 2>/dev/null; }
count() { ts -Y "$1" | wc -l; }

frames=$(ts | wc -l)
req=$(count iwarp_mpa.req)
rep=$(count iwarp_mpa.rep)
crcreq=$(count 'iwarp_mpa.req && iwarp_mpa.crc_flag == 1')
fpdus=$(count iwarp_mpa.fpdu)
malformed=$(count _ws.malformed)
badlen=$(count iwarp_mpa.bad_length)
experr=$(count '_ws.expert.severity == error')
crc_good=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Good CRC32')
crc_bad=$(ts -Y iwarp_mpa.crc_check -V | grep -c 'Bad CRC32')
opcodes=$(ts -T fields -e iwarp_rdma.opcode |
	tr ',' '\n' | grep -v '^$' | while read -r v; do
		printf '%d\n' "$v"
	done | sort -n | uniq -c | awk '{printf "%s:%s ", $2, $1}')

say "frames $frames, MPA requests $req (CRC asked: $crcreq), replies $rep, FPDUs $fpdus"
say "malformed $malformed, MPA bad length $badlen, expert errors $experr"
say "CRC good $crc_good, bad $crc_bad"
say "RDMAP opcodes (opcode:frames) $opcodes"

[ "$req" -ge 1 ] || bad "no MPA Request recognised"
[ "$rep" -ge 1 ] || bad "no MPA Reply recognised"
[ "$crcreq" -ge 1 ] || bad "no MPA Request with the CRC flag"
[ "$malformed" -eq 0 ] || bad "$malformed malformed frames"
[ "$badlen" -eq 0 ] || bad "$badlen MPA frames with a bad length"
[ "$crc_bad" -eq 0 ] || bad "$crc_bad FPDUs with a bad CRC"
[ "$crc_good" -ge 1 ] || bad "no FPDU CRC verified good"
case " $opcodes" in
*" "[89]:*|*" "1[0-9]:*) bad "RDMAP opcodes outside 0..7 decoded (misframed FPDUs?)" ;;
esac
for op in 0:Write 1:ReadRequest 2:ReadResponse 3:Send 4:SendInvalidate \
	5:SendSE 6:SendSEInvalidate 7:Terminate; do
	n=${op%%:*}
	case " $opcodes" in
	*" $n:"*) ;;
	*) bad "RDMAP opcode $n (${op#*:}) not seen" ;;
	esac
done

if [ $fail -ne 0 ]; then
	say "capture kept in $pcap"
	say "malformed frames, if any:"
	ts -Y '_ws.malformed || iwarp_mpa.bad_length' | head -n 10
	exit 1
fi
say "PASS"
exit 0
