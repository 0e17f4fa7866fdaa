#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# rpcrdma-stat and rpcrdma-ping against a live, unmodified rpcgen server
# (examples/blockstore_server, svc_run()):
#  - rpcrdma-ping against it (replies, summary, exit 0), against a closed
#    port (a clear error, exit 1) and a program it does not serve;
#  - rpcrdma-stat reads the server's counters from outside and sees them
#    move: totals after a ping, a live connection's while pings run;
#  - rpcrdma-stat -l lists it; a process without the library is told so.
#   stat_ping.sh BUILD_DIR
set -u
B=$1
SERVER=$B/examples/blockstore_server
STAT=$B/tools/rpcrdma-stat
PING=$B/tools/rpcrdma-ping
PROG=0x20049001
T=$(mktemp -d)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok; else bad "$2"; fi; }
cleanup() { [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

"$SERVER" --listen 127.0.0.1:0 --port-file "$T/port" >"$T/server.out" 2>&1 &
SPID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")
A=127.0.0.1:$PORT
echo "server pid $SPID at $A"

# One counter of one entry from rpcrdma-stat -r -a.
counter() { awk -v k="$1" -v n="$2" -v f="$3" \
	'$1 == k && $2 == n && $3 == f { print $4; found = 1 } END { if (!found) print -1 }' "$4"; }

"$STAT" -r -a "$SPID" >"$T/s0"; rc=$?
check "[ $rc -eq 0 ]" "rpcrdma-stat exit $rc"
c0=$(counter server "$A" calls_received "$T/s0")
k0=$(counter server "$A" connections "$T/s0")
check "[ $c0 -ge 0 ]" "no server entry for $A in: $(head -3 "$T/s0")"

# Ping: three replies and the summary.
"$PING" -c 3 -i 0 "$A" $PROG 1 >"$T/ping" 2>&1; rc=$?
cat "$T/ping"
check "[ $rc -eq 0 ]" "ping exit $rc"
check "[ $(grep -c '^reply from' "$T/ping") -eq 3 ]" "three reply lines"
check "grep -q '^3 calls, 3 replies, 0% failed' '$T/ping'" "summary line"
check "grep -q '^rtt min/avg/max/mdev' '$T/ping'" "rtt line"

"$STAT" -r -a "$SPID" >"$T/s1"
c1=$(counter server "$A" calls_received "$T/s1")
k1=$(counter server "$A" connections "$T/s1")
echo "server calls_received $c0 -> $c1, connections $k0 -> $k1"
check "[ $c1 -ge $((c0 + 3)) ]" "calls_received did not move by 3"
check "[ $k1 -eq $((k0 + 1)) ]" "connections did not move by 1"

# While pings run: the connection's own counters, moving.
"$PING" -q -c 60 -i 0.05 "$A" $PROG 1 >"$T/ping2" 2>&1 &
PPID2=$!
sleep 1
"$STAT" -r "$SPID" >"$T/s2"
sleep 1
"$STAT" -r "$SPID" >"$T/s3"
"$STAT" "$SPID" >"$T/human"
wait $PPID2
cat "$T/human"
n2=$(awk '$1 == "connection" && $3 == "calls_received" { print $4 }' "$T/s2" | head -1)
n3=$(awk '$1 == "connection" && $3 == "calls_received" { print $4 }' "$T/s3" | head -1)
echo "live connection calls_received $n2 -> $n3"
check "[ -n '$n2' ] && [ -n '$n3' ] && [ ${n3:-0} -gt ${n2:-0} ]" "connection counters did not move"
check "grep -q '^server $A (iwarp)' '$T/human'" "human output names the server"
check "grep -q 'connection from 127.0.0.1:' '$T/human'" "human output lists the connection"
check "grep -q '^60 calls, 60 replies' '$T/ping2'" "60 pings answered"

# -l lists the server; a process without the library is told so.
"$STAT" -l >"$T/list"
check "grep -q '^$SPID ' '$T/list'" "rpcrdma-stat -l lists $SPID"
"$STAT" $$ >"$T/none" 2>&1; rc=$?
cat "$T/none"
check "[ $rc -eq 1 ] && grep -q 'no RPC-over-RDMA client or server' '$T/none'" "process without rpcrdma"

# A program the server does not serve: each call says so.
"$PING" -c 2 -i 0 "$A" 0x20049999 1 >"$T/ping3" 2>&1; rc=$?
cat "$T/ping3"
check "[ $rc -eq 1 ] && grep -q 'program unavailable' '$T/ping3'" "unserved program"

# A closed port: a clear error, exit 1.
kill "$SPID"; wait "$SPID" 2>/dev/null; SPID=
"$PING" -c 1 "$A" $PROG 1 >"$T/ping4" 2>&1; rc=$?
cat "$T/ping4"
check "[ $rc -eq 1 ] && grep -q 'connection refused' '$T/ping4'" "closed port"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
