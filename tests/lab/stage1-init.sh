#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Stage 1 of the lab guest: /init inside the initramfs built by run.sh.
# Runs under busybox-static (no libc, no host files yet).  Its one job is to
# build the root the real test runs in:
#   host /  (virtio-9p tag "hostroot", read-only)   -> lower layer
#   tmpfs                                           -> upper layer
# so the guest executes the host's freshly built binaries and libraries while
# still being free to write anywhere (writes vanish at power-off).  The
# per-run directory (tag "labrun") is the only writable share; results go
# there.  kdir/kver/labdir arrive as environment variables because the kernel
# hands unknown key=value boot parameters to init that way.
PATH=/bin
export PATH
/bin/busybox --install -s /bin
mount -t proc none /proc
mount -t sysfs none /sys
mount -t devtmpfs none /dev

die() {
	echo "lab stage1: $*"
	# No shell to fall back to in batch mode: power off so the host's
	# time-out does not have to fire.
	poweroff -f
}

while read -r ko; do
	insmod "/modules/$ko" || echo "lab stage1: insmod $ko failed"
done < /modules/order

opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts,ro,cache=loose" hostroot /lower || die "cannot mount host root over 9p"
mount -t tmpfs -o size=1536m none /rw || die "tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work none /root ||
	die "overlay"
mkdir -p /root/run/lab
mount -t 9p -o "$opts" labrun /root/run/lab || die "cannot mount the run directory"
# Debian's kernel modules live in the host's cache, not in /lib/modules of
# the host: bind them where modprobe looks.
mkdir -p "/root/lib/modules/$kver"
mount -o bind "/root$kdir/lib/modules/$kver" "/root/lib/modules/$kver" ||
	die "cannot bind the guest kernel's modules"
umount /proc /sys
mount --move /dev /root/dev || umount /dev
exec switch_root /root /bin/bash "$labdir/stage2-init.sh"
