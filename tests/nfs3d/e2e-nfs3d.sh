#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/nfs3d/e2e-nfs3d.sh NFS3D NFS3D_CHECK [PROVIDER] — rpcrdma-nfs3d
# against nfs3d_check (RFC 1813 procedure by procedure) on one machine:
#   1. every procedure and its errors, MOUNT's six; a handle saved, the
#      server restarted, the handle still names the file;
#   2. a REMOVE whose reply the server drops (test hook): the client
#      reconnects, resends it, the duplicate-request cache answers; and
#      without the cache, or with one bounded in bytes below what an
#      entry costs, the same REMOVE fails with NOENT;
#   3. --auth squash: root's new file belongs to the anonymous user.
# Needs root (open_by_handle_at): exit 77 otherwise.
set -uo pipefail
nfs3d=${1:?usage: e2e-nfs3d.sh NFS3D NFS3D_CHECK [PROVIDER]}
check=${2:?usage: e2e-nfs3d.sh NFS3D NFS3D_CHECK [PROVIDER]}
provider=${3:-iwarp}
A=${NFS3D_ADDR:-127.0.0.1}
[ "$(id -u)" = 0 ] || { echo "skip: rpcrdma-nfs3d needs root (open_by_handle_at)"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/nfs3d-e2e.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT
EXP=$W/export
mkdir -p "$EXP"
fails=0
SPID=

start() {  # start TAG [VAR=VALUE...] [-- OPTION...]
	local tag=$1; shift
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	rm -f "$W/ports"
	env "${envs[@]}" "$nfs3d" -l "$A:0" -m 0 -p "$provider" -s "$W/stats.$tag" \
		--port-file "$W/ports" "$@" "$EXP" 2> "$W/log.$tag" &
	SPID=$!
	while [ ! -s "$W/ports" ] && kill -0 $SPID 2>/dev/null; do sleep 0.05; done
	[ -s "$W/ports" ] || { echo "server $tag did not start:"; cat "$W/log.$tag"; exit 1; }
	read -r P M < "$W/ports"
}
stop() {
	kill -TERM $SPID; wait $SPID
	local rc=$?
	[ $rc = 0 ] || { echo "FAIL: server exit status $rc"; cat "$W/log.$1"; fails=$((fails + 1)); }
}
run() {  # run MODE [ARG]
	"$check" "$@" --server "$A" --port "$P" --mount-port "$M" --export "$EXP" \
		--provider "$provider" || fails=$((fails + 1))
}
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$W/stats.$1"; }

start main
run all
run save "$W/handle"
stop main
start again
run load "$W/handle"
stop again

start drc RPCRDMA_NFS3D_TEST_DROP=REMOVE:1
run drc-ok
stop drc
h=$(stat_of drc nfsd.drc_hits); d=$(stat_of drc nfsd.dropped)
echo "e2e-nfs3d: DRC: $d reply dropped, $h answered from the cache"
[ "$h" = 1 ] && [ "$d" = 1 ] || { echo "FAIL: DRC counters"; fails=$((fails + 1)); }
start nodrc RPCRDMA_NFS3D_TEST_DROP=REMOVE:1 -- --drc-entries 0
run drc-noent
stop nodrc
# A cache bounded to 64 bytes holds no results at all (an entry costs
# more): the same as no cache, and it says why.
start drcbytes RPCRDMA_NFS3D_TEST_DROP=REMOVE:1 -- --drc-bytes 64
run drc-noent
stop drcbytes
t=$(stat_of drcbytes nfsd.drc_too_big); e=$(stat_of drcbytes nfsd.drc_entries)
echo "e2e-nfs3d: DRC of 64 bytes: $t results too large for it, $e entries"
[ "${t:-0}" -ge 1 ] && [ "$e" = 0 ] && [ "$(stat_of drcbytes nfsd.drc_hits)" = 0 ] ||
	{ echo "FAIL: DRC byte bound"; fails=$((fails + 1)); }

chmod 1777 "$EXP"
start squash -- --auth squash
run squash
stop squash

echo "e2e-nfs3d: server counters of the main run:"
grep -v ' 0 0$' "$W/stats.main" | grep -E '^(rdma|nfsd)\.' | sed 's/^/  /'
for k in rdma.err_chunk_sent nfsd.garbage_args nfsd.send_failed; do
	[ "$(stat_of main $k)" = 0 ] || { echo "FAIL: $k"; fails=$((fails + 1)); }
done
[ $fails = 0 ] && echo "e2e-nfs3d: all checks passed" || echo "e2e-nfs3d: $fails failure(s)"
[ $fails = 0 ]
