#!/bin/bash
# Stage 2 of the lab guest: PID 1 on the overlay of the host's root.
# Prepares a Soft-RoCE device and runs /run/lab/cmd.sh (written by run.sh),
# storing its exit status in /run/lab/rc, then powers off.
#
# Facts this relies on (docs/… and the reference lab): rdma_cm refuses
# loopback netdevs (ENODEV), so rxe sits on a dummy netdev carrying
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

rxe_up() {
	modprobe -a rdma_rxe ib_uverbs rdma_ucm || return 1
	ip link add d0 type dummy || return 1
	ip addr add 192.0.2.1/24 dev d0 || return 1
	ip link set d0 up || return 1
	rdma link add rxe_d0 type rxe netdev d0 || return 1
	# The uverbs node appears asynchronously (udev-less guest: devtmpfs).
	for _ in $(seq 50); do
		[ -e /sys/class/infiniband/rxe_d0 ] && ls /dev/infiniband/uverbs* \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

echo "lab stage2: uptime $(uptime_s)s, kernel $(uname -r)"
if ! rxe_up; then
	echo "lab stage2: could not create the rxe device rxe_d0"
	dmesg | tail -20
	finish 98
fi
echo "lab stage2: uptime $(uptime_s)s, rxe_d0 on d0 (192.0.2.1/24) ready"
# The ASan runtime wants a core-less, non-interactive environment.
ulimit -c 0
bash /run/lab/cmd.sh
finish $?
