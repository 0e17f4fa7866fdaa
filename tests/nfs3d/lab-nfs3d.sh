#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/nfs3d/lab-nfs3d.sh NFS3D NFS3_INTEROP — runs INSIDE the lab guest;
# for the numbers, under tests/kernel/nfsd-up.sh (so the kernel's own nfsd
# serves /export on "rdma 20049" in the same boot):
#
#   tests/lab/run.sh tests/kernel/nfsd-up.sh tests/nfs3d/lab-nfs3d.sh \
#       BUILD/tools/nfs3d/rpcrdma-nfs3d BUILD/tests/kernel/nfs3_interop
#
# The guest's Linux NFS client mounts rpcrdma-nfs3d (running here too, on
# the RDMA device's address) with
#   mount -t nfs -o vers=3,proto=rdma,port=P,mountport=M,mountproto=tcp,nolock
# and runs, every byte checked on the client and on the server's disk:
#   workload  files of 0 B .. 64 MiB written with dd and read back (cmp),
#             a directory of 2000 entries listed (ls -l: READDIRPLUS Long
#             Replies), symbolic links (one of 4000 bytes: a Long Call to
#             make, a Long Reply to read), rename, remove, truncate, hard
#             link, chmod/chown/touch, a FIFO, concurrent writers (which
#             grow the credit grant; after an idle second it comes down,
#             and direct reads on the same mount must go on), rsync -a
#             of a real tree (part of /usr/share/doc) and diff -r, umount;
#             then the server's counters must show every message shape
#             (Read chunk, Write chunk, Reply chunk, Long Call, Send With
#             Invalidate) and no error, and dmesg nothing from the RPC/NFS
#             client.  The Linux NFSv3 client never sends a Long Call (its
#             only large arguments, WRITE data and SYMLINK paths, are
#             DDP-eligible, RFC 8267 §4, and go in Read chunks; every other
#             call is far below the 1024-byte minimum threshold), so our
#             rpcgen client (tests/kernel/nfs3_interop, no Upper-Layer
#             Binding on its second connection) sends one to the same
#             server, on the same device;
#   faults    a server restart under a mounted client (file handles
#             survive); a reply lost after the call was done (test hook):
#             the client retransmits and the duplicate-request cache
#             answers, and the same without the cache fails (the check
#             can fail); kill -9 during a 64 MiB write under the hard mount:
#             the file ends complete; a READ answered with ERR_CHUNK (test
#             hook): what the kernel does is recorded;
#   numbers   dd write/read of 64 MiB and a small-file create rate against
#             rpcrdma-nfs3d and against the kernel's nfsd, same boot
#             (printed with their ratio, never asserted).
#
# Environment (run.sh passes RPCRDMA_* in):
#   RPCRDMA_NFS3D_PROVIDER  our server's provider: verbs (rxe, default) or
#                           iwarp (no RDMA device on our side: the kernel
#                           client on siw, RPCRDMA_LAB_RDMA=siw)
#   RPCRDMA_NFS3D_BIG       the largest file of the workload, MiB (64)
#   RPCRDMA_NFS3D_BENCH     the file written across kill -9 and by the
#                           numbers, MiB (16)
#   RPCRDMA_NFS3D_CREATES   files created for the create rate (100)
#   RPCRDMA_NFS3D_DOC       what of /usr/share/doc rsync copies (a glob of
#                           top-level names, "a*")
#   RPCRDMA_NFS3D_PHASES    which phases run ("workload faults numbers";
#                           CI runs "workload faults", `make demo-nfs`
#                           "workload numbers")
# Sizes are chosen for TCG and an ASan build (the whole lab label has to
# stay within its CI budget): about 3 minutes for workload and faults.
# Exit status 0 when every check passed.
set -uo pipefail

nfs3d=${1:?usage: lab-nfs3d.sh PATH/TO/rpcrdma-nfs3d PATH/TO/nfs3_interop}
interop=${2:?usage: lab-nfs3d.sh PATH/TO/rpcrdma-nfs3d PATH/TO/nfs3_interop}
A=${NFS_SERVER:-192.0.2.1}
P=20050                      # NFS on RPC-over-RDMA (nfsd has 20049)
M=20051                      # MOUNT on TCP
provider=${RPCRDMA_NFS3D_PROVIDER:-verbs}
big=${RPCRDMA_NFS3D_BIG:-64}
benchmb=${RPCRDMA_NFS3D_BENCH:-16}
docglob=${RPCRDMA_NFS3D_DOC:-a*}
creates=${RPCRDMA_NFS3D_CREATES:-100}
phases=${RPCRDMA_NFS3D_PHASES:-workload faults numbers}
phase() { case " $phases " in *" $1 "*) return 0 ;; esac; return 1; }
EXP=/srv/nfs3d
MNT=/mnt/nfs3d
W=/tmp/nfs3d-lab
opts="vers=3,proto=rdma,port=$P,mountport=$M,mountproto=tcp,nolock"

fails=0
say() { echo "lab-nfs3d: $*"; }
fail() { say "FAIL: $*"; fails=$((fails + 1)); }
ok() { say "ok: $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
refused() { ! "$@"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

rm -rf "$W"
mkdir -p "$W" "$EXP" "$MNT" /mnt/knfs
# The guest's /dev is a bare devtmpfs: bash's <(...) needs /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
mount -t tmpfs -o size=900m tmpfs "$EXP" || { say "tmpfs $EXP"; exit 2; }
modprobe -a rpcrdma nfsv3 || { say "modprobe rpcrdma nfsv3 failed"; exit 2; }

# --- our server -----------------------------------------------------------
SPID=
start_server() {  # start_server TAG [VAR=VALUE...] [-- SERVER_OPTION...]
	local tag=$1; shift
	local envs=() sopts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	sopts=("$@")
	rm -f "$W/ports"
	env "${envs[@]}" "$nfs3d" -l "$A:$P" -m "$M" -p "$provider" -s "$W/stats.$tag" \
		--port-file "$W/ports" "${sopts[@]}" "$EXP" 2>>"$W/server.$tag.log" &
	SPID=$!
	# Ready when it has written its ports (or dead).
	while [ ! -s "$W/ports" ] && kill -0 "$SPID" 2>/dev/null; do sleep 0.1; done
	[ -s "$W/ports" ] || { fail "server $tag did not start"; cat "$W/server.$tag.log"; return 1; }
}
stop_server() {  # TERM: the server writes its counters and leaves
	[ -n "$SPID" ] || return 0
	kill -TERM "$SPID" 2>/dev/null
	wait "$SPID"
	local rc=$?
	SPID=
	return $rc
}
stat_of() { awk -v k="$2" '$1 == k { print $2; exit }' "$W/stats.$1"; }
nfs_calls() { awk -v k="nfs.$2" '$1 == k { print $2; exit }' "$W/stats.$1"; }

do_mount() { mount -t nfs -o "$opts" "$A:$EXP" "$MNT"; }
remount() { umount "$MNT" && do_mount; }  # nothing cached on the client
kmsgs() { dmesg | grep -iE 'rpcrdma|xprtrdma|rpc-rdma|svcrdma|sunrpc|nfs'; }

# --- sources --------------------------------------------------------------
sizes="0 1 4095 4096 4097 65537 1048575 1048576 1048577 8388611 $((big * 1048576))"
max=$((big > benchmb ? big : benchmb))
head -c $((max * 1048576)) /dev/urandom > "$W/rand"
for n in $sizes $((benchmb * 1048576)); do head -c "$n" "$W/rand" > "$W/src.$n"; done
bigf="src.$((benchmb * 1048576))"

dmesg -c > /dev/null
t0=$(now)
start_server main || exit 1
if phase workload; then
say "== workload (provider $provider, $A ports $P/$M)"
check "mount -o $opts" do_mount
grep " $MNT " /proc/mounts

# Files of every size, written with dd and compared on the server's disk,
# then read back through a fresh mount.
for n in $sizes; do
	dd if="$W/src.$n" of="$MNT/f.$n" bs=1M conv=fsync status=none ||
		fail "dd write f.$n"
	cmp -s "$W/src.$n" "$EXP/f.$n" || fail "f.$n differs on the server's disk"
done
remount || fail remount
for n in $sizes; do
	cmp -s "$W/src.$n" "$MNT/f.$n" || fail "f.$n read back differs"
done
ok "files $sizes written and read back, every byte compared"
t1=$(now)

# 2000 entries, listed from a fresh mount (READDIRPLUS, Reply chunks).
# The first 200 are created through NFS, the rest on the server's disk
# (what is judged is the listing; 1800 more CREATEs cost a minute of TCG).
mkdir "$MNT/many"
for i in $(seq -f '%04g' 1 200); do
	: > "$MNT/many/entry-$i-of-a-big-directory" || { fail "creating entry $i"; break; }
done
for i in $(seq -f '%04g' 201 2000); do : > "$EXP/many/entry-$i-of-a-big-directory"; done
remount || fail remount
ls -l "$MNT/many" > "$W/ls.out" || fail "ls -l"
check "ls -l lists 2000 entries" test "$(grep -c '^-' "$W/ls.out")" = 2000
check "the names are the ones made" \
	cmp -s <(ls "$MNT/many") <(seq -f 'entry-%04g-of-a-big-directory' 1 2000 | sort)
check "2000 entries on the server's disk" test "$(ls "$EXP/many" | wc -l)" = 2000
t2=$(now)

# Symbolic links; 4000 bytes of target is a Long Call to SYMLINK and a
# Long Reply from READLINK (beyond the 4096-byte inline threshold).
long=$(head -c 4000 /dev/zero | tr '\0' 'L')
ln -s short-target "$MNT/sl.short" || fail "ln -s short"
ln -s "$long" "$MNT/sl.long" || fail "ln -s long"
remount || fail remount
check "readlink of a short symlink" test "$(readlink "$MNT/sl.short")" = short-target
check "readlink of a 4000-byte symlink" test "$(readlink "$MNT/sl.long")" = "$long"
check "the 4000-byte symlink on the server's disk" test "$(readlink "$EXP/sl.long")" = "$long"

# Rename, remove, truncate, hard link, attributes, FIFO, directories.
mv "$MNT/f.4096" "$MNT/renamed.4096" && mkdir "$MNT/sub" &&
	mv "$MNT/f.4097" "$MNT/sub/" || fail "mv"
check "rename in a directory" cmp -s "$W/src.4096" "$EXP/renamed.4096"
check "rename across directories" cmp -s "$W/src.4097" "$EXP/sub/f.4097"
check "the old names are gone" test ! -e "$EXP/f.4096" -a ! -e "$EXP/f.4097"
rm "$MNT/f.1" || fail rm
check "remove" test ! -e "$EXP/f.1" -a ! -e "$MNT/f.1"
truncate -s 1000 "$MNT/f.1048576" && truncate -s 3000000 "$MNT/f.65537" ||
	fail truncate
remount || fail remount
check "truncate shorter" cmp -s "$MNT/f.1048576" <(head -c 1000 "$W/src.1048576")
check "truncate longer (zeros)" cmp -s "$MNT/f.65537" \
	<(cat "$W/src.65537"; head -c $((3000000 - 65537)) /dev/zero)
ln "$MNT/f.4095" "$MNT/hard.4095" || fail "ln"
check "hard link: 2 links, same bytes" test "$(stat -c %h "$MNT/hard.4095")" = 2 -a \
	"$(stat -c %i "$EXP/hard.4095")" = "$(stat -c %i "$EXP/f.4095")"
chmod 0640 "$MNT/f.0" && chown 1234:5678 "$MNT/f.0" &&
	touch -d '2001-02-03 04:05:06 UTC' "$MNT/f.0" || fail "chmod/chown/touch"
check "mode, owner and mtime set" test "$(stat -c '%a %u %g %Y' "$EXP/f.0")" = \
	"640 1234 5678 981173106"
# Another user (AUTH_SYS uid 4242): served on the server's identity
# thread, its file is its own, and a second user may not write it.
mkdir "$MNT/users" && chmod 1777 "$MNT/users" || fail "mkdir users"
check "a user creates a file" setpriv --reuid=4242 --regid=4242 --clear-groups \
	sh -c "echo mine > $MNT/users/u4242 && chmod 0644 $MNT/users/u4242"
check "owned by that user on the server's disk, mode 0644" \
	test "$(stat -c '%u %g %a' "$EXP/users/u4242" 2>/dev/null)" = "4242 4242 644"
check "another user may not write it" refused setpriv --reuid=4343 --regid=4343 \
	--clear-groups sh -c "echo theirs >> $MNT/users/u4242" 2>/dev/null
mkfifo "$MNT/fifo" || fail mkfifo
check "a FIFO (MKNOD)" test -p "$EXP/fifo"
mkdir -p "$MNT/tree/a/b/c" && touch "$MNT/tree/a/b/c/x" && rm -r "$MNT/tree" ||
	fail "mkdir -p / rm -r"
check "rmdir" test ! -e "$EXP/tree"

# Concurrent writers: four files at once, and four regions of one file.
writers=()
for i in 1 2 3 4; do
	dd if="$W/rand" of="$MNT/conc.$i" bs=1M count=4 skip=$i conv=fsync status=none &
	writers+=($!)
	dd if="$W/rand" of="$MNT/shared" bs=1M count=2 skip=$((2 * i)) seek=$((2 * i)) \
		conv=notrunc,fsync status=none &
	writers+=($!)
done
for w in "${writers[@]}"; do wait "$w" || fail "a concurrent writer failed"; done
for i in 1 2 3 4; do
	dd if="$W/rand" of="$W/conc.$i" bs=1M count=4 skip=$i status=none
	dd if="$W/rand" of="$W/shared" bs=1M count=2 skip=$((2 * i)) seek=$((2 * i)) \
		conv=notrunc status=none
done
# RFC 8166 §3.3.1: the writers kept more than the first 8 credits in use,
# so the connection's grant grew; a second with no call brings it back to
# 8 (engine/recv_buffers.c), and the kernel client must go on under the
# smaller grant on the same mount: direct reads (no page cache), checked.
sleep 2.5
for i in 1 2; do
	check "O_DIRECT read of writer $i after the connection idled" \
		cmp -s <(dd if="$MNT/conc.$i" bs=256K iflag=direct status=none) "$W/conc.$i"
done
rm -f "$W/stats.main"
kill -USR1 "$SPID"
while [ ! -s "$W/stats.main" ]; do sleep 0.1; done
say "grants: raised $(stat_of main rdma.grants_raised), lowered" \
	"$(stat_of main rdma.grants_lowered), refused $(stat_of main rdma.grants_refused)"
check "the grant grew under the writers" test "$(stat_of main rdma.grants_raised)" -gt 0
check "and came down after an idle second" test "$(stat_of main rdma.grants_lowered)" -gt 0
remount || fail remount
for i in 1 2 3 4; do
	cmp -s "$W/conc.$i" "$MNT/conc.$i" || fail "concurrent writer $i"
done
check "four concurrent writers, and four into one file" cmp -s "$W/shared" "$MNT/shared"
t3=$(now)

# rsync -a of a real tree, then diff -r (content) and a listing of type,
# mode, owner, size, mtime and link target (what -a preserves).
mkdir -p "$W/doc"
(cd /usr/share/doc && eval "cp -a -- $docglob \"$W/doc/\"") 2>/dev/null
check "a tree to copy ($(find "$W/doc" | wc -l) entries, $(du -sh "$W/doc" | cut -f1))" \
	test "$(find "$W/doc" | wc -l)" -gt 10
rsync -a "$W/doc/" "$MNT/doc/" || fail "rsync -a"
remount || fail remount
listing() { (cd "$1" && find . -printf '%p %y %m %u %g %s %T@ %l\n' | sort); }
check "diff -r of the rsync'd tree" diff -r --no-dereference "$W/doc" "$MNT/doc"
# The top directory's own mtime is left out: rsync sets it last, racing
# its receiver's rename of the last file into it, and the mtime ends up
# that of the rename now and then with the kernel's nfsd too (seen in
# this guest: 0.87 s later than the source's on nfsd; ours matched).
listing "$W/doc" | sed '/^\. d /s/ [0-9.]* $/ -/' >"$W/listing.src"
listing "$MNT/doc" | sed '/^\. d /s/ [0-9.]* $/ -/' >"$W/listing.nfs"
if cmp -s "$W/listing.src" "$W/listing.nfs"; then
	ok "rsync -a kept types, modes, owners, sizes, times, targets"
else
	fail "rsync -a kept types, modes, owners, sizes, times, targets"
	diff "$W/listing.src" "$W/listing.nfs" | head -20 | sed 's/^/    /'
fi
check "the same tree on the server's disk" diff -r --no-dereference "$W/doc" "$EXP/doc"
t4=$(now)
check "umount" umount "$MNT"
# What the kernel client alone made the server see.
rm -f "$W/stats.main"
kill -USR1 "$SPID"
while [ ! -s "$W/stats.main" ]; do sleep 0.1; done
cp "$W/stats.main" "$W/stats.kernel"
say "the kernel client sent $(stat_of kernel rdma.calls_received) calls:" \
	"$(stat_of kernel rdma.chunked_calls_received) with Read chunks," \
	"$(stat_of kernel rdma.long_calls_received) Long Calls; got" \
	"$(stat_of kernel rdma.chunked_replies) replies through Write chunks," \
	"$(stat_of kernel rdma.long_replies) through Reply chunks," \
	"$(stat_of kernel rdma.send_with_inv) with Send With Invalidate"
fi
# The Long Call, from our client: MNT, WRITE 1 MiB (Read chunk), READ
# 1 MiB (Write chunk), READDIRPLUS (Reply chunk), an 8 KiB WRITE with no
# binding (Long Call), every answer checked.  In version 1: nfs3_interop
# judges the version negotiation as against a v1-only server.
mkdir -p "$EXP/interop"
env -u NFSD_STATS RPCRDMA_VERSIONS=1 "$interop" --transport rdma --provider "$provider" \
	--server "$A" --export "$EXP/interop" --port "$P" --mount-port "$M" --files 150 \
	> "$W/interop.log" 2>&1
check "nfs3_interop (our rpcgen client) against the server" test $? = 0
grep -E 'Long Call|all checks|FAIL|fail' "$W/interop.log" | sed 's/^/  /'
stop_server || fail "server exit status"
if phase workload; then
say "times: files $(secs "$t0" "$t1") s, 2000 entries $(secs "$t1" "$t2") s," \
	"small ops and concurrent writers $(secs "$t2" "$t3") s, rsync+diff $(secs "$t3" "$t4") s"

# The server's counters: every message shape seen, and no error.
fi
say "server counters:"; grep -v ' 0 0$' "$W/stats.main" | sed 's/^/  /'
for k in rdma.chunked_calls_received rdma.long_calls_received rdma.chunked_replies \
	rdma.long_replies rdma.send_with_inv rdma.short_replies; do
	v=$(stat_of main "$k")
	check "$k = ${v:-?} > 0" test "${v:-0}" -gt 0
done
for k in rdma.err_chunk_sent rdma.err_vers_sent rdma.bad_replies nfsd.garbage_args \
	nfsd.server_faults nfsd.send_failed nfsd.dropped; do
	v=$(stat_of main "$k")
	check "$k = ${v:-?}" test "${v:-1}" = 0
done
for p in GETATTR SETATTR LOOKUP ACCESS READLINK READ WRITE CREATE MKDIR SYMLINK \
	MKNOD REMOVE RMDIR RENAME LINK READDIRPLUS FSINFO PATHCONF COMMIT; do
	v=$(nfs_calls main "$p")
	phase workload && { [ "${v:-0}" -gt 0 ] || fail "no $p call reached the server"; }
done
k=$(kmsgs)
if [ -n "$k" ]; then fail "the kernel logged:"; echo "$k"; else ok "nothing in dmesg from the RPC/NFS client"; fi

# --- faults -----------------------------------------------------------------
if phase faults; then
phase workload || { mkdir -p "$MNT"; start_server prep && do_mount &&
	cp "$W/src.8388611" "$MNT/f.8388611" && mkdir -p "$MNT/many" && umount "$MNT"; stop_server; }
say "== faults"
# 1. A restart under a mounted client, with a file held open: its handle
#    (and the root's) must still name the same files.
dmesg -c > /dev/null
start_server restart1 || exit 1
do_mount || fail mount
exec 7< "$MNT/f.8388611"
head -c 1 <&7 > /dev/null
stop_server || fail "server exit status"
start_server restart2 || exit 1
echo 3 > /proc/sys/vm/drop_caches
check "a file opened before a server restart reads back after it" \
	cmp -s "$W/src.8388611" /proc/self/fd/7
exec 7<&-
check "ls after the restart" ls "$MNT/many" > /dev/null
stop_server || fail "server exit status"
say "restart: kernel said: $(kmsgs | tr '\n' '|')"

# 2. A reply lost after REMOVE was done: the client reconnects and sends
#    it again (same XID); the duplicate-request cache must answer it.
dmesg -c > /dev/null
start_server drc RPCRDMA_NFS3D_TEST_DROP=REMOVE:1 || exit 1
touch "$MNT/drc.victim" || fail touch
if rm "$MNT/drc.victim" 2> "$W/rm.err"; then
	ok "REMOVE whose reply was lost: the retransmission got the cached reply"
else
	fail "rm after a lost reply: $(cat "$W/rm.err")"
fi
stop_server || fail "server exit status"
say "drc: $(grep -E 'hook_drops|drc_hits|dropped|rdma.connections' "$W/stats.drc" | tr '\n' ' ')"
check "the reply was dropped, the connection closed and re-made" \
	test "$(stat_of drc nfsd.hook_drops)" = 1 -a "$(stat_of drc rdma.connections)" -ge 2
check "the retransmitted REMOVE was answered from the cache" \
	test "$(stat_of drc nfsd.drc_hits)" -ge 1
# ... and without the cache the same retransmission fails: the check
# above can fail.
start_server nodrc RPCRDMA_NFS3D_TEST_DROP=REMOVE:1 -- --drc-entries 0 || exit 1
touch "$MNT/drc.victim2" || fail touch
if rm "$MNT/drc.victim2" 2> "$W/rm.err"; then
	fail "without the DRC the retransmitted REMOVE succeeded: the DRC check proves nothing"
else
	ok "without the DRC the retransmitted REMOVE fails ($(cat "$W/rm.err"))"
fi
stop_server || fail "server exit status"
say "lost reply: kernel said: $(kmsgs | tr '\n' '|')"

# 3. kill -9 during a large write on the hard mount, restart: the client
#    reconnects, resends, and (new write verifier) writes its unstable
#    data again; the file must end complete.
dmesg -c > /dev/null
start_server kill1 || exit 1
tk=$(now)
dd if="$W/$bigf" of="$MNT/big.killed" bs=1M conv=fsync status=none &
DD=$!
while [ "$(stat -c %s "$EXP/big.killed" 2>/dev/null || echo 0)" -lt $((benchmb * 1048576 / 4)) ] &&
	kill -0 $DD 2>/dev/null; do sleep 0.1; done
at=$(stat -c %s "$EXP/big.killed" 2>/dev/null || echo 0)
kill -KILL "$SPID"; wait "$SPID" 2>/dev/null; SPID=
say "killed the server with $at bytes of big.killed on its disk"
sleep 1
start_server kill2 || exit 1
wait $DD
rc=$?
tk2=$(now)
check "dd across kill -9 and restart exits 0 (rc $rc, $(secs "$tk" "$tk2") s)" test $rc = 0
check "the file is complete on the server's disk" cmp -s "$W/$bigf" "$EXP/big.killed"
remount || fail remount
check "and reads back complete" cmp -s "$W/$bigf" "$MNT/big.killed"
stop_server || fail "server exit status"
say "kill -9: server after restart: $(grep -E 'nfs.WRITE|nfs.COMMIT|rdma.connections' "$W/stats.kill2" | tr '\n' ' ')"
say "kill -9: kernel said: $(kmsgs | tr '\n' '|')"

# 4. A READ answered with RDMA_ERROR/ERR_CHUNK: recorded, not judged.
dmesg -c > /dev/null
start_server errchunk RPCRDMA_NFS3D_TEST_ERR_CHUNK=1 -- -v -v || exit 1
echo 3 > /proc/sys/vm/drop_caches
dd if="$MNT/f.8388611" of=/dev/null bs=1M status=none 2> "$W/dd.err"
rc1=$?
dd if="$MNT/f.8388611" of="$W/after" bs=1M status=none 2> "$W/dd2.err"
rc2=$?
stop_server || fail "server exit status"
check "the server sent the ERR_CHUNK" test "$(stat_of errchunk rdma.err_chunk_sent)" = 1
say "ERR_CHUNK: reading the file: exit $rc1 ($(tr '\n' ' ' < "$W/dd.err")); reading it again: exit $rc2" \
	"($(tr '\n' ' ' < "$W/dd2.err")), $(cmp -s "$W/after" "$W/src.8388611" && echo "right bytes" || echo "WRONG bytes")"
say "ERR_CHUNK: kernel said: $(kmsgs | tr '\n' '|')"
say "ERR_CHUNK: server connections $(stat_of errchunk rdma.connections)," \
	"READ calls $(nfs_calls errchunk READ), by count asked:" \
	"$(awk '$2 == "xid" && $4 == "READ" { n[$8]++ } END { for (c in n) printf "%s x %s B; ", n[c], c }' \
		"$W/server.errchunk.log")"
check "the file is read right once the fault has passed" cmp -s "$W/after" "$W/src.8388611"
umount "$MNT" || fail umount
fi

# --- numbers ------------------------------------------------------------------
if phase numbers; then
say "== numbers ($benchmb MiB; TCG; the rpcrdma-nfs3d binary given: build/ is ASan, build-release/ is not)"
bench() {  # bench NAME MOUNTPOINT
	local m=$2 a b c d
	a=$(now); dd if="$W/$bigf" of="$m/bench" bs=1M conv=fsync status=none || fail "$1 dd write"
	b=$(now)
	umount "$m" && mount_again "$m" || fail "$1 remount"
	c=$(now); dd if="$m/bench" of=/dev/null bs=1M status=none || fail "$1 dd read"
	d=$(now)
	mkdir "$m/small" || fail "$1 mkdir"
	local e f; e=$(now)
	for i in $(seq "$creates"); do : > "$m/small/f$i"; done
	f=$(now)
	echo "$1 $(awk -v s="$(secs "$a" "$b")" -v n="$benchmb" 'BEGIN { printf "%.1f", n / s }')" \
		"$(awk -v s="$(secs "$c" "$d")" -v n="$benchmb" 'BEGIN { printf "%.1f", n / s }')" \
		"$(awk -v s="$(secs "$e" "$f")" -v n="$creates" 'BEGIN { printf "%.0f", n / s }')" >> "$W/bench"
}
start_server bench || exit 1
mount_again() { mount -t nfs -o "$opts" "$A:$EXP" "$1"; }
mount_again "$MNT" && bench rpcrdma-nfs3d "$MNT"
umount "$MNT"
stop_server || fail "server exit status"
if [ -n "${NFS_EXPORT:-}" ]; then
	mount_again() { mount -t nfs -o vers=3,proto=rdma,port=20049,mountproto=tcp,nolock "$A:$NFS_EXPORT" "$1"; }
	mount_again /mnt/knfs && bench "kernel-nfsd" /mnt/knfs
	umount /mnt/knfs
fi
awk 'BEGIN { printf "lab-nfs3d: %-14s %12s %12s %14s\n", "server", "write MiB/s", "read MiB/s", "creates/s" }
     { printf "lab-nfs3d: %-14s %12s %12s %14s\n", $1, $2, $3, $4; w[NR] = $2; r[NR] = $3; c[NR] = $4 }
     END { if (NR == 2 && w[2] > 0 && r[2] > 0 && c[2] > 0)
             printf "lab-nfs3d: %-14s %12.2f %12.2f %14.2f\n", "ratio", w[1] / w[2], r[1] / r[2], c[1] / c[2] }' "$W/bench"
fi

# What the fault phases made the client log was recorded above; the
# workload's dmesg was judged.  Leave nothing for nfsd-up.sh's check,
# which is about nfsd.
dmesg -c > /dev/null
say "total $(secs "$t0" "$(now)") s"
if [ $fails -gt 0 ]; then
	say "$fails check(s) FAILED"
	for f in "$W"/server.*.log; do echo "--- $f"; tail -5 "$f"; done
	exit 1
fi
say "all checks passed"
exit 0
