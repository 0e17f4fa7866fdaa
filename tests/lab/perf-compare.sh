#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/perf-compare.sh — inside the Soft-RoCE guest (tests/lab/run.sh):
# our `rpcrdma-perf provider --provider verbs` and perftest's own tools on
# the same rxe device in the same boot, then one table with both numbers
# and their ratio.
#
#   tests/lab/run.sh tests/lab/perf-compare.sh BUILD/bench/rpcrdma-perf
#
# Environment (run.sh passes RPCRDMA_* into the guest):
#   RPCRDMA_LAB_PERF_ADDR   address (192.0.2.1)
#   RPCRDMA_LAB_PERF_ITERS  iterations of every test (200)
#   RPCRDMA_LAB_PERF_SIZE   bandwidth message size (65536)
#   RPCRDMA_LAB_PERF_DEPTH  work requests in flight (8, what rpcrdma-perf
#                           keeps; perftest's -t / -o)
#   RPCRDMA_LAB_PERF_ROUNDS rounds, ours and perftest interleaved; the best
#                           number of each side is kept (1: the whole lab
#                           label must stay under 10 minutes on 2 cores;
#                           ask for 3 when the numbers matter)
#   RPCRDMA_LAB_PERF_SPIN_US rpcrdma-perf --spin-us: how long each wait
#                           polls before sleeping on the CQ fd (1000).
#                           perftest busy-polls; a wake-up through the
#                           completion channel costs milliseconds under
#                           TCG (rxe notifies from a tasklet), so without
#                           it the Send/Recv row compares wake-ups, not
#                           the providers.  0 measures the sleeping path.
#
# What is compared with what (perftest's latency tools report half the
# round trip, so our round trips are halved too):
#   Send/Recv 64 B    rpcrdma-perf ping-pong p50 / 2   ib_send_lat t_typical
#                     (ours polls for SPIN_US, then sleeps on the CQ fd;
#                     perftest busy-polls.  perftest's -e, its event mode,
#                     is not used: under rdma_cm on rxe 4.5 prints "inf")
#   RDMA Write 64 B   rpcrdma-perf write ping-pong p50 / 2
#                                                      ib_write_lat t_typical
#   RDMA Write BW     rpcrdma-perf RDMA Write MiB/s    ib_write_bw BW average
#   RDMA Read BW      rpcrdma-perf RDMA Read MiB/s     ib_read_bw BW average
# perftest's MB/sec are MiB/s (it divides by 0x100000).  perftest runs
# server (background) and client (foreground) against the address over
# rdma_cm (-R).
#
# No timing is asserted: the exit status is 0 when every tool ran and
# every number was parsed, 1 otherwise.  TCG makes all of these slow; only
# the ratios mean anything, and even they only roughly.
set -uo pipefail

perf=${1:?usage: perf-compare.sh PATH/TO/rpcrdma-perf}
addr=${RPCRDMA_LAB_PERF_ADDR:-192.0.2.1}
iters=${RPCRDMA_LAB_PERF_ITERS:-200}
size=${RPCRDMA_LAB_PERF_SIZE:-65536}
depth=${RPCRDMA_LAB_PERF_DEPTH:-8}
rounds=${RPCRDMA_LAB_PERF_ROUNDS:-1}
spin=${RPCRDMA_LAB_PERF_SPIN_US:-1000}
dev=$(ls /sys/class/infiniband 2>/dev/null | head -1)
status=0
port=18600

say() { echo "perf-compare: $*"; }
bad() { say "$*"; status=1; }

for t in ib_send_lat ib_write_lat ib_write_bw ib_read_bw; do
	command -v "$t" >/dev/null ||
		{ say "$t not found: install Debian package perftest"; exit 1; }
done
[ -x "$perf" ] || { say "no executable $perf"; exit 1; }
[ -n "$dev" ] || { say "no RDMA device in /sys/class/infiniband"; exit 1; }

# perftest_run, wait_pid, pt_field, js, is_num, run_pt:
. "$(dirname "${BASH_SOURCE[0]}")/perftest-lib.sh"
# best VAR VALUE lower|higher: keeps the better of VAR and VALUE (numbers
# only).  A latency of 0 is no measurement, so it never wins.
best() {
	local var=$1 v=$2 how=$3 cur=${!1:-}
	is_num "$v" || return 0
	if ! is_num "$cur" || awk -v a="$v" -v b="$cur" -v h="$how" \
		'BEGIN { exit !(h == "lower" ? (a > 0 && (a < b || b == 0)) : a > b) }'
	then
		printf -v "$var" '%s' "$v"
	fi
}

t0=$(date +%s.%N)
say "device $dev, addr $addr, $iters iterations, bandwidth size $size," \
	"depth $depth, $rounds round(s), best of each kept, rpcrdma-perf" \
	"polls ${spin} us before sleeping"

# Host load shows up as huge outliers under TCG; rounds interleave ours and
# perftest so a busy spell does not hit only one of them.
o_send= o_wlat= o_tcp= o_wbw= o_rbw= p_send= p_wlat= p_wbw= p_rbw=
pt_clock_warn=
for round in $(seq "$rounds"); do
	say "round $round: rpcrdma-perf provider --provider verbs"
	ours_json=$("$perf" provider --provider verbs --addr "$addr" \
		--iters "$iters" --max-size "$size" --spin-us "$spin" --json 2>&1)
	rc=$?
	[ $rc = 0 ] || bad "rpcrdma-perf failed (status $rc)"
	echo "$ours_json" | sed 's/^/    /'
	best o_send "$(js "$ours_json" '"pingpong_64":{"provider":{"p50_us":')" lower
	best o_wlat "$(js "$ours_json" '"write_pingpong_64":{"p50_us":')" lower
	best o_tcp "$(js "$ours_json" '"tcp":{"p50_us":')" lower
	best o_wbw "$(grep -o '"rdma_write":\[[^]]*' <<<"$ours_json" |
		grep -o "{\"size\":$size,\"provider_mib_s\":[0-9.]*" |
		sed 's/.*://')" higher
	best o_rbw "$(grep -o '"rdma_read":\[[^]]*' <<<"$ours_json" |
		grep -o "{\"size\":$size,\"provider_mib_s\":[0-9.]*" |
		sed 's/.*://')" higher

	# Latency tables: #bytes #iterations t_min t_max t_typical ...
	# Bandwidth tables: #bytes #iterations BW-peak BW-average MsgRate
	run_pt v ib_send_lat 5 -s 64 -n "$iters"; best p_send "$v" lower
	run_pt v ib_write_lat 5 -s 64 -n "$iters"; best p_wlat "$v" lower
	run_pt v ib_write_bw 4 -s "$size" -n "$iters" -t "$depth"
	best p_wbw "$v" higher
	run_pt v ib_read_bw 4 -s "$size" -n "$iters" -t "$depth" -o "$depth"
	best p_rbw "$v" higher
done

# The RPC layer on the same device: a synchronous NULL call, native API
# and libtirpc adapters (rpcgen stubs), server and client in one process;
# the caller polls the CQ itself and sleeps on its fd (no spin), so each
# round trip pays the device's completion-channel wake-ups.
say "rpcrdma-perf rpc --provider verbs --only null"
rpc_json=$("$perf" rpc --provider verbs --addr "$addr" --only null \
	--with rpcrdma,rdma-tirpc --iters "$iters" --json 2>&1)
rc=$?
[ $rc = 0 ] || bad "rpcrdma-perf rpc failed (status $rc)"
echo "$rpc_json" | sed 's/^/    /'
o_null=$(js "$rpc_json" '"rpcrdma": {"null_p50_us": ')
o_tnull=$(js "$rpc_json" '"rdma-tirpc": {"null_p50_us": ')

# 1 MiB through rpcgen stubs (rdma-tirpc) against perftest at 1 MiB: a READ
# is the server's RDMA Write into the client's buffer (ib_write_bw), a
# WRITE the server's RDMA Read of the client's (ib_read_bw).  One call at
# a time on each side of ours (its READ/WRITE depth for 1 MiB), perftest
# with one request in flight too.
big=1048576
bigmib=${RPCRDMA_LAB_PERF_BIG_MIB:-16}
say "rpcrdma-perf rpc --provider verbs --only read,write --sizes 1m"
big_json=$("$perf" rpc --provider verbs --addr "$addr" --only read,write \
	--sizes 1m --with rpcrdma,rdma-tirpc --mib "$bigmib" --json 2>&1)
rc=$?
[ $rc = 0 ] || bad "rpcrdma-perf rpc 1 MiB failed (status $rc)"
echo "$big_json" | sed 's/^/    /'
o_trd=$(js "$big_json" '"rdma-tirpc": {[^}]*"read_1048576_mibs": ')
o_twr=$(js "$big_json" '"rdma-tirpc": {[^}]*"write_1048576_mibs": ')
run_pt v ib_write_bw 4 -s "$big" -n "$bigmib" -t 1; p_wbig=$v
run_pt v ib_read_bw 4 -s "$big" -n "$bigmib" -t 1 -o 1; p_rbig=$v

# --- the table ---------------------------------------------------------------
half() { is_num "$1" && awk -v v="$1" 'BEGIN { printf "%.2f", v / 2 }'; }
ratio() { is_num "$1" && is_num "$2" &&
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }' ||
	echo "-"; }
row() {  # LABEL OURS PERFTEST
	local r
	r=$(ratio "$2" "$3")
	printf '%-44s %12s %12s %8s\n' "$1" "${2:--}" "${3:--}" "$r"
	is_num "$2" || bad "no number for \"$1\" (rpcrdma-perf)"
	is_num "$3" || bad "no number for \"$1\" (perftest)"
}
o_send_h=$(half "$o_send")
o_wlat_h=$(half "$o_wlat")
echo
echo "rpcrdma verbs provider vs perftest on $dev (Soft-RoCE under TCG, same boot," \
	"best of $rounds)"
printf '%-44s %12s %12s %8s\n' "metric" "rpcrdma" "perftest" "ratio"
row "Send/Recv 64 B one-way p50 us (ib_send_lat)" "$o_send_h" "$p_send"
row "RDMA Write 64 B one-way p50 us (ib_write_lat)" "$o_wlat_h" "$p_wlat"
row "RDMA Write $size B MiB/s (ib_write_bw)" "$o_wbw" "$p_wbw"
row "RDMA Read $size B MiB/s (ib_read_bw)" "$o_rbw" "$p_rbw"
p_send_rt=$(is_num "$p_send" && awk -v v="$p_send" 'BEGIN { printf "%.2f", v * 2 }')
row "RPC NULL round trip p50 us (2 x ib_send_lat)" "$o_null" "$p_send_rt"
row "rpcgen NULL round trip p50 us (2 x ib_send_lat)" "$o_tnull" "$p_send_rt"
row "rpcgen READ 1 MiB MiB/s (ib_write_bw 1 MiB)" "$o_trd" "$p_wbig"
row "rpcgen WRITE 1 MiB MiB/s (ib_read_bw 1 MiB)" "$o_twr" "$p_rbig"
[ -n "$pt_clock_warn" ] &&
	echo "(perftest's CPU clock calibration failed in:$pt_clock_warn; a 0 or" \
		"odd perftest number there is that, not a measurement)"
echo "(latency ratio > 1: we are slower; bandwidth ratio < 1: we are slower."
echo " rpcrdma-perf's TCP baseline in the same runs: 64 B ping-pong p50 ${o_tcp:--} us round trip)"
t1=$(date +%s.%N)
say "done in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s, status $status"
exit $status
