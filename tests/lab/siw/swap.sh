#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/siw/swap.sh plain|crc [CMD ARG...] — runs INSIDE a siw lab
# guest (RPCRDMA_LAB_RDMA=siw or siw-crc): replaces the loaded siw.ko by
# the other build run.sh made (crc: built with mpa_crc_required, which asks
# for MPA CRC as initiator and refuses an MPA Reply without it, RFC 5044
# §7.1) and recreates siw_d0 on d0, so one boot can test both.  Then runs
# CMD with RPCRDMA_LAB_RDMA updated, if given.  Nothing may hold the
# device (no process with a verbs context, no kernel nfsd on rdma).
set -u
want=${1:?usage: swap.sh plain|crc [CMD...]}
shift
say() { echo "siw-swap: $*" >&2; }
case $want in
plain) ko="" ; kind=siw ;;
crc) ko=$labcache/siw-$kver/crc/siw.ko; kind=siw-crc ;;
*) say "want plain or crc"; exit 2 ;;
esac
rdma link delete siw_d0 2>/dev/null
for _ in $(seq 50); do
	rmmod siw 2>/dev/null && break
	sleep 0.1
done
if lsmod | grep -q '^siw '; then
	say "siw is still in use:"
	lsmod | grep -E '^(siw|ib_core|iw_cm) ' >&2
	exit 2
fi
if [ -n "$ko" ]; then
	insmod "$ko" || { say "insmod $ko failed"; exit 2; }
else
	modprobe siw || { say "modprobe siw failed"; exit 2; }
fi
rdma link add siw_d0 type siw netdev d0 || { say "rdma link add failed"; exit 2; }
for _ in $(seq 50); do
	[ -e /sys/class/infiniband/siw_d0 ] && break
	sleep 0.1
done
[ -e /sys/class/infiniband/siw_d0 ] || { say "siw_d0 did not appear"; exit 2; }
export RPCRDMA_LAB_RDMA=$kind
say "siw_d0 is now the $want build"
[ $# -gt 0 ] || exit 0
exec "$@"
