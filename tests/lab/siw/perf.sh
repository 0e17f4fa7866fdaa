#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/siw/perf.sh BUILD/bench/rpcrdma-perf — inside a siw lab guest
# (RPCRDMA_LAB_RDMA=siw tests/lab/run.sh bash tests/lab/siw/perf.sh ...):
# RPC NULL latency and 1 MiB READ/WRITE throughput of rpcrdma on the
# kernel's siw, next to perftest on the same siw device in the same boot:
#
#   iwarp -> siw     our iwarp provider (client) against the verbs
#                    provider on siw_d0 (server)
#   siw -> iwarp     the verbs provider on siw_d0 (client) against our
#                    iwarp provider (server)
#   siw <-> siw      the verbs provider on both sides (rpcrdma-perf rpc)
#   perftest         ib_send_lat 64 B, ib_write_bw / ib_read_bw 1 MiB
#
# The NULL round trip is set against twice ib_send_lat's typical one-way
# latency, the 1 MiB READ (its data moves by RDMA Write into the Write
# chunk) against ib_write_bw, the 1 MiB WRITE (by RDMA Read from the Read
# chunk) against ib_read_bw.  Under TCG only the ratios mean anything, and
# only roughly.  Exit status 0 when every tool ran and every number was
# parsed; no number is asserted.
#
# Environment: RPCRDMA_LAB_PERF_ITERS (NULL calls and perftest iterations,
# 500), RPCRDMA_LAB_PERF_MIB (MiB moved per READ/WRITE size, 16).
set -uo pipefail
perf=${1:?usage: perf.sh PATH/TO/rpcrdma-perf}
addr=192.0.2.1
iters=${RPCRDMA_LAB_PERF_ITERS:-500}
mib=${RPCRDMA_LAB_PERF_MIB:-16}
dev=${RPCRDMA_LAB_DEV:-siw_d0}
port=18700
status=0

say() { echo "siw-perf: $*"; }
bad() { say "$*"; status=1; }
. "$(dirname "${BASH_SOURCE[0]}")/../perftest-lib.sh"

for t in ib_send_lat ib_write_bw ib_read_bw; do
	command -v "$t" >/dev/null ||
		{ say "$t not found: install Debian package perftest"; exit 1; }
done
[ -x "$perf" ] || { say "no executable $perf"; exit 1; }

# The rpcrdma numbers of one rpcrdma-perf JSON output into NAME_null,
# NAME_read, NAME_write.
rpc_numbers() {  # NAME JSON
	local j
	j=$(grep -o '"rpcrdma": {[^}]*' <<<"$2" | head -1)
	printf -v "$1_null" '%s' "$(js "$j" '"null_p50_us": ')"
	printf -v "$1_read" '%s' "$(js "$j" '"read_1048576_mibs": ')"
	printf -v "$1_write" '%s' "$(js "$j" '"write_1048576_mibs": ')"
}

# A server of PROVIDER on PORT, a client of PROVIDER2 against it.
cross() {  # NAME SERVER_PROVIDER CLIENT_PROVIDER PORT
	local name=$1 sp=$2 cp=$3 p=$4 spid out i
	say "$name: server --provider $sp, client --provider $cp"
	"$perf" server --listen "$addr:$p" --provider "$sp" >/dev/null 2>&1 &
	spid=$!
	# Its libtirpc listener (PORT+1) comes up after the RDMA one.
	for i in $(seq 100); do
		ss -ltn 2>/dev/null | grep -q ":$((p + 1)) " && break
		sleep 0.1
	done
	out=$(timeout 300 "$perf" client "$addr:$p" --provider "$cp" \
		--iters "$iters" --mib "$mib" --json --quiet 2>&1)
	[ $? = 0 ] || bad "$name: rpcrdma-perf client failed"
	echo "$out" | sed 's/^/    /'
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	rpc_numbers "$name" "$out"
}

t0=$(date +%s.%N)
cross iw_siw verbs iwarp 18620
cross siw_iw iwarp verbs 18630
say "siw_siw: rpcrdma-perf rpc --provider verbs"
out=$(timeout 300 "$perf" rpc --provider verbs --addr "$addr" --iters "$iters" \
	--mib "$mib" --json --quiet 2>&1)
[ $? = 0 ] || bad "siw_siw: rpcrdma-perf rpc failed"
echo "$out" | sed 's/^/    /'
rpc_numbers siw_siw "$out"

run_pt p_lat ib_send_lat 5 -s 64 -n "$iters"
run_pt p_wbw ib_write_bw 4 -s 1048576 -n 100 -t 4
run_pt p_rbw ib_read_bw 4 -s 1048576 -n 100 -t 4 -o 4

ratio() { is_num "${1:-}" && is_num "${2:-}" &&
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }' ||
	echo "-"; }
p_rtt=$(is_num "${p_lat:-}" && awk -v v="$p_lat" 'BEGIN { printf "%.2f", 2 * v }')
echo
echo "rpcrdma on siw vs perftest on $dev (TCG, same boot; ratio = rpcrdma / perftest)"
printf '%-14s %16s %16s %16s\n' "" "NULL p50 us" "READ 1 MiB MiB/s" "WRITE 1 MiB MiB/s"
for n in iw_siw siw_iw siw_siw; do
	nl=${n}_null rd=${n}_read wr=${n}_write
	printf '%-14s %16s %16s %16s\n' "$n" "${!nl:--}" "${!rd:--}" "${!wr:--}"
	for v in "${!nl:-}" "${!rd:-}" "${!wr:-}"; do
		is_num "$v" || bad "$n: a number is missing"
	done
done
printf '%-14s %16s %16s %16s\n' "perftest" "${p_rtt:--}" "${p_wbw:--}" "${p_rbw:--}"
printf '%-14s %16s %16s %16s\n' "" "(2 x send_lat)" "(ib_write_bw)" "(ib_read_bw)"
for n in iw_siw siw_iw siw_siw; do
	nl=${n}_null rd=${n}_read wr=${n}_write
	printf '%-14s %16s %16s %16s\n' "$n ratio" "$(ratio "${!nl:-}" "$p_rtt")" \
		"$(ratio "${!rd:-}" "${p_wbw:-}")" "$(ratio "${!wr:-}" "${p_rbw:-}")"
done
for v in "$p_rtt" "${p_wbw:-}" "${p_rbw:-}"; do
	is_num "$v" || bad "perftest: a number is missing"
done
[ -n "$pt_clock_warn" ] &&
	echo "(perftest's CPU clock calibration failed in:$pt_clock_warn)"
echo "(latency ratio > 1: rpcrdma slower; throughput ratio < 1: rpcrdma slower)"
say "done in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s, status $status"
exit $status
