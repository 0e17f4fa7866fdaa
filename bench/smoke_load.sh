#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# bench_load_smoke: `rpcrdma-perf load` for a second or so per contender.
#   smoke_load.sh RPCRDMA_PERF
# Checks that every contender ran against the server process the command
# started (connections made, first calls made, a load with a mix of NULL,
# WRITE and READ calls), that no call failed or was left without an end
# (calls never completed must be 0: that is correctness, not speed), that
# --reopen, --fairness and --census run, and that --json is valid JSON
# with the same fields.  The numbers are printed, never compared with anything.
set -u
perf=$1
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

common="--procs 2 --conns 2 --duration 1 --idle 0.3 --settle 0.5"
out=$("$perf" load $common --depth 2 --mix null:80,4k:10,r4k:8,1m:1,r1m:1 \
	--with rpcrdma,rdma-tirpc,libtirpc 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "exit status $rc"
printf '%s\n' "$out" | grep -q 'Sanitizer\|runtime error' &&
	fail "sanitizer report"
for c in rpcrdma rdma-tirpc libtirpc; do
	printf '%s\n' "$out" | grep -q "^  $c: 2 processes" ||
		fail "$c did not run"
done
n=$(printf '%s\n' "$out" | grep -c '    connect: 4 of 4 ')
[ "$n" -eq 3 ] || fail "$n contenders made their 4 connections, want 3"
n=$(printf '%s\n' "$out" | grep -c 'first call (NULL on each): 4 ok, 0 failed')
[ "$n" -eq 3 ] || fail "$n contenders made 4 first calls, want 3"
n=$(printf '%s\n' "$out" | grep -c ' 0 failed, 0 never completed')
[ "$n" -eq 3 ] || fail "calls failed or never completed"
printf '%s\n' "$out" | grep -q 'server CPU: .* us per call' ||
	fail "no server CPU per call"
# Making calls takes the clients CPU: each contender's clients report
# some (their own getrusage, threads that ended with the load included).
n=$(printf '%s\n' "$out" | grep -c 'the clients [1-9][0-9]* %)')
[ "$n" -eq 3 ] || fail "$n contenders' clients used CPU, want 3"
printf '%s\n' "$out" | grep -q 'KiB per connection' ||
	fail "no server RSS per connection"

# --reopen: connections closed and opened again during the load.
out=$("$perf" load $common --reopen 3 --with rpcrdma,libtirpc --quiet 2>&1)
printf '%s\n' "$out"
n=$(printf '%s\n' "$out" | grep -c 'connections made (4 at a time)')
[ "$n" -eq 2 ] || fail "--reopen: $n contenders reopened, want 2"
n=$(printf '%s\n' "$out" | grep -c ' 0 failed, 0 never completed')
[ "$n" -eq 2 ] || fail "--reopen: calls failed or never completed"

# --json, and the fairness mode.
json=$("$perf" load $common --with rpcrdma --json --quiet 2>/dev/null)
printf '%s\n' "$json"
printf '%s\n' "$json" | jq -e '
	.benchmark == "load" and (.runs | length) == 1 and
	.runs[0].group.contender == "rpcrdma" and
	.runs[0].group.connected == 4 and
	.runs[0].group.never_completed == 0 and
	.runs[0].group.calls_per_s != null and
	.runs[0].group.p99_us != null and
	.runs[0].server.rss_per_connection_kib != null' >/dev/null ||
	fail "--json output"
json=$("$perf" load --fairness --fair-conns 2 --greedy-depth 4 --duration 1 \
	--settle 0.5 --json --quiet 2>/dev/null)
printf '%s\n' "$json"
printf '%s\n' "$json" | jq -e '
	.benchmark == "load-fairness" and
	.alone.never_completed == 0 and .beside.never_completed == 0 and
	.greedy.never_completed == 0 and .greedy.mib_per_s != null and
	.ratios.small_p99_beside_vs_alone != null' >/dev/null ||
	fail "--fairness --json output"

# --census: the server's resident pages by allocating function, while
# its connections are held (none under AddressSanitizer, which says so).
out=$("$perf" load $common --duration 0 --with rpcrdma --census --quiet 2>&1)
printf '%s\n' "$out"
if ! printf '%s\n' "$out" | grep -q 'page census: none in this build'; then
	printf '%s\n' "$out" |
		grep -Eq '^    page census: [1-9][0-9]* pages .* resident' ||
		fail "--census: no census of resident pages"
	printf '%s\n' "$out" |
		grep -Eq '^ +[1-9][0-9]* +4 +[0-9.]+  rpcrdma_engine_create \[0\]$' ||
		fail "--census: no engine arena line for the 4 connections"
fi

if [ "$fails" -eq 0 ]; then
	echo "bench_load_smoke: every check passed"
	exit 0
fi
echo "bench_load_smoke: $fails checks failed"
exit 1
