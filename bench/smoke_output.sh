#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# rpcrdma-perf's output policy (never a timing threshold): by default the
# measurements without the project's goals; --goals adds the target
# column with MET / MISSED / n/a; --quiet prints the table alone.
#   smoke_output.sh RPCRDMA_PERF
set -u
perf=$1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
args="rpc --addr 127.0.0.1 --iters 50 --mib 2 --only null --with rpcrdma,tcp"
out=$($perf $args 2>/dev/null)
echo "$out"
echo "$out" | grep -q '^NULL p50 (us)' && ok || bad "default: no table"
echo "$out" | grep -qE 'MET|MISSED|target' && bad "default shows goals" || ok
out=$($perf $args --goals 2>/dev/null)
echo "$out" | grep -q 'target: rpcrdma / rdma-tirpc' && ok || bad "--goals: no target column"
echo "$out" | grep -qE '(MET|MISSED|n/a) / (MET|MISSED|n/a)' && ok || bad "--goals: no verdicts"
out=$($perf $args --quiet 2>&1)
echo "$out"
echo "$out" | grep -qE 'histogram|notes|malloc|MET|MISSED' && bad "--quiet prints more than the table" || ok
n=$(echo "$out" | grep -c .)
[ "$n" -le 14 ] && ok || bad "--quiet: $n lines"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
