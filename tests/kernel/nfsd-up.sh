#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/kernel/nfsd-up.sh CMD [ARG...] — runs INSIDE the lab guest
# (tests/lab/run.sh tests/kernel/nfsd-up.sh CMD ...).
#
# Starts the kernel's NFS server on the guest's Soft-RoCE device: nfsd and
# rpcrdma modules, a tmpfs export, rpcbind + rpc.mountd (MOUNT over TCP),
# nfsd on TCP 2049 and on "rdma 20049" (the RFC 8267 port), then runs CMD
# with NFS_SERVER, NFS_EXPORT and NFSD_STATS (a file holding
# /proc/net/rpc/nfsd as it was before CMD) in the environment.  After CMD,
# it prints the server's view (nfsstat, dmesg lines from the RPC/RDMA code)
# and fails if the kernel logged RPC-over-RDMA errors or warnings.
set -u
A=192.0.2.1
say() { echo "nfsd-up: $*" >&2; }
die() { say "$*"; dmesg | tail -20; exit 2; }

modprobe -a nfsd rpcrdma || die "modprobe nfsd rpcrdma failed"
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || die "mount nfsd fs"
mkdir -p /export /run/rpcbind /var/lib/nfs/v4recovery
mount -t tmpfs -o size=256m tmpfs /export || die "tmpfs /export"
mount -t tmpfs tmpfs /var/lib/nfs 2>/dev/null
mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/rpc_pipefs
: > /var/lib/nfs/etab
: > /var/lib/nfs/rmtab
# /etc is the host's, read-only under a writable overlay: safe to replace.
echo '/export *(rw,insecure,no_root_squash,no_subtree_check,fsid=0)' > /etc/exports
# Short v4 lease and grace so NFSv4.1 work is not held back 90 s.
echo 10 > /proc/fs/nfsd/nfsv4leasetime
echo 10 > /proc/fs/nfsd/nfsv4gracetime
# lockd's grace (50 s by default) also holds back v4 delegations.
modprobe lockd 2>/dev/null
[ -w /proc/sys/fs/nfs/nlm_grace_period ] && echo 10 > /proc/sys/fs/nfs/nlm_grace_period
# nfsd sizes its largest READ/WRITE from the guest's memory (256 KiB at
# 2 GiB); RFC 8267 transfers of 1 MiB need it raised before nfsd starts.
echo 1048576 > /proc/fs/nfsd/max_block_size || die "max_block_size"
rpcbind -w || die "rpcbind"
exportfs -ra || die "exportfs"
rpc.mountd || die "rpc.mountd"
rpc.nfsd 4 || die "rpc.nfsd"
echo 'rdma 20049' > /proc/fs/nfsd/portlist || die "nfsd rdma listener"
say "portlist: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)"
say "versions: $(cat /proc/fs/nfsd/versions)"

dmesg -c > /dev/null  # only what CMD provokes is judged below
cp /proc/net/rpc/nfsd /tmp/nfsd.before
export NFS_SERVER=$A NFS_EXPORT=/export NFSD_STATS=/tmp/nfsd.before
"$@"
rc=$?

say "server view after the client:"
nfsstat -s -3 2>/dev/null | head -20
grep -E '^(rpc|proc3) ' /proc/net/rpc/nfsd
bad=$(dmesg | grep -iE 'rpcrdma|svcrdma|rdma|nfsd' | grep -iE 'err|warn|fail|bad|invalid|drop')
if [ -n "$bad" ]; then
	say "kernel logged RPC/RDMA trouble:"
	echo "$bad"
	[ $rc -eq 0 ] && rc=1
fi
dmesg | tail -10
exit $rc
