#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# bench_cost_smoke: `rpcrdma-perf cost` with tiny counts, both pinnings.
#   smoke_cost.sh RPCRDMA_PERF asan|plain
# Checks that every contender was measured in both pinnings, that
# callgrind and perf either gave numbers or said why not (a sanitized build
# must say why not: valgrind cannot run it; a plain one with valgrind on
# PATH must count), and that --json is valid JSON with the same numbers.
# Never a threshold on a number: this is a smoke test, not a benchmark.
set -u
perf=$1
build=$2
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

out=$("$perf" cost --iters 20 --warmup 10 --pin=both 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "exit status $rc"
printf '%s\n' "$out" | grep -q 'Sanitizer\|runtime error' &&
	fail "sanitizer report"

passes=$(printf '%s\n' "$out" | grep -c '^== cost per synchronous NULL call')
[ "$passes" -eq 2 ] || fail "$passes passes printed, want 2 (pinned, unpinned)"

# "numbers ROW": the row has a number (not "-") for all three contenders.
numbers() {
	printf '%s\n' "$out" | grep "^$1 " | awk -v row="$1" '
		{ n++; sub("^" row " *", "");
		  if ($1 == "-" || $2 == "-" || $3 == "-") bad = 1 }
		END { exit !(n == 2 && !bad) }'
}
numbers 'context switches (getrusage)' ||
	fail "getrusage context switches missing"
numbers 'CPU us, user+sys (getrusage)' || fail "CPU time missing"

if [ "$build" = asan ]; then
	printf '%s\n' "$out" | grep -q '^callgrind: not measured: .*ASan' ||
		fail "sanitized build: callgrind should say why it did not run"
elif command -v valgrind >/dev/null 2>&1; then
	numbers 'instructions (callgrind)' ||
		fail "valgrind is on PATH but no instruction counts"
else
	printf '%s\n' "$out" | grep -q '^callgrind: not measured: valgrind not found' ||
		fail "no valgrind: callgrind should say so"
fi

if ! command -v perf >/dev/null 2>&1; then
	printf '%s\n' "$out" | grep -q '^perf: n/a: perf not found' ||
		fail "no perf: should say so"
elif ! numbers 'context switches (perf stat)'; then
	# perf exists but cannot count here (no perf events): it must say why.
	printf '%s\n' "$out" | grep -q '^note: .*perf stat: ' ||
		fail "perf gave no numbers and no reason"
fi

# --json: parseable, and the in-process numbers are there.
json=$("$perf" cost --iters 10 --warmup 5 --pin=no --no-callgrind --no-perf \
	--json 2>/dev/null)
printf '%s\n' "$json"
printf '%s\n' "$json" | jq -e '
	(.passes | length) == 1 and
	([.passes[0]["rpcrdma", "rdma-tirpc", "libtirpc"].csw_rusage] |
	 all(. != null)) and
	.passes[0].ratios.goal_csw_rusage != null and
	.callgrind == "not measured: --no-callgrind"' >/dev/null ||
	fail "--json output"

if [ "$fails" -eq 0 ]; then
	echo "bench_cost_smoke: every check passed"
	exit 0
fi
echo "bench_cost_smoke: $fails checks failed"
exit 1
