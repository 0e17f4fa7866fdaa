#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Stage 2 of the lab guest: PID 1 on the overlay of the host's root.
# Prepares the RDMA device run.sh asked for (labrdma= on the kernel
# command line: rxe, siw or siw-crc) and runs /run/lab/cmd.sh (written by run.sh),
# storing its exit status in /run/lab/rc, then powers off.
#
# Facts this relies on (docs/… and the reference lab): rdma_cm refuses
# loopback netdevs (ENODEV), so rxe or siw sits on a dummy netdev carrying
# 192.0.2.1/24, a documentation prefix that exists only inside the guest.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# /tmp stays the host's (copy-on-write through the overlay): a build or a
# fresh clone under the host's /tmp must be reachable from the guest.
hostname lab
ip link set lo up

uptime_s() { cut -d' ' -f1 /proc/uptime; }
finish() {
	echo "$1" > /run/lab/rc
	echo "lab stage2: uptime $(uptime_s)s, exit status $1"
	sync
	poweroff -f
}

# The dummy netdev every kind of device sits on.
d0_up() {
	ip link add d0 type dummy || return 1
	ip addr add 192.0.2.1/24 dev d0 || return 1
	ip link set d0 up
}

# Waits for DEV and its uverbs node, which appear asynchronously
# (udev-less guest: devtmpfs).
dev_wait() {
	for _ in $(seq 50); do
		[ -e "/sys/class/infiniband/$1" ] && ls /dev/infiniband/uverbs* \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

rxe_up() {
	modprobe -a rdma_rxe ib_uverbs rdma_ucm || return 1
	d0_up || return 1
	rdma link add rxe_d0 type rxe netdev d0 || return 1
	dev_wait rxe_d0
}

# siw as run.sh built it (labcache/siw-KVER); "siw-crc" is the variant
# built with mpa_crc_required.  siw on lo would be created but rdma_cm
# cannot bind or resolve through it (ENODEV), hence the dummy netdev too.
siw_up() {
	modprobe -a ib_uverbs rdma_ucm || return 1
	if [ "$1" = siw-crc ]; then
		modprobe -a ib_core libcrc32c || return 1
		insmod "$labcache/siw-$kver/crc/siw.ko" || return 1
	else
		modprobe siw || return 1
	fi
	d0_up || return 1
	rdma link add siw_d0 type siw netdev d0 || return 1
	dev_wait siw_d0
}

export RPCRDMA_LAB_RDMA=${labrdma:-rxe}
case $RPCRDMA_LAB_RDMA in
rxe) RPCRDMA_LAB_DEV=rxe_d0; rxe_up ;;
siw|siw-crc) RPCRDMA_LAB_DEV=siw_d0; siw_up "$RPCRDMA_LAB_RDMA" ;;
*) false ;;
esac
up=$?
export RPCRDMA_LAB_DEV
echo "lab stage2: uptime $(uptime_s)s, kernel $(uname -r)"
if [ $up != 0 ]; then
	echo "lab stage2: could not create the $RPCRDMA_LAB_RDMA device $RPCRDMA_LAB_DEV"
	dmesg | tail -20
	finish 98
fi
echo "lab stage2: uptime $(uptime_s)s, $RPCRDMA_LAB_DEV on d0 (192.0.2.1/24) ready"
# The ASan runtime wants a core-less, non-interactive environment.
ulimit -c 0
# siw counts pinned pages against RLIMIT_MEMLOCK even for root (siw_mem.c,
# siw_umem_get(): no CAP_IPC_LOCK exemption), and PID 1's default is
# 8 MiB: a few 4 MiB registrations would fail with ENOMEM.
ulimit -l unlimited
bash /run/lab/cmd.sh
finish $?
