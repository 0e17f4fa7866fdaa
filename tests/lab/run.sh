#!/bin/bash
# tests/lab/run.sh — run one command inside a Soft-RoCE guest and return its
# exit status.
#
#   tests/lab/run.sh CMD [ARG...]
#
# Boots Debian's current kernel (the one package linux-image-amd64 depends
# on) under qemu with TCG and no network card.  The guest's root is the
# host's / (read-only, virtio-9p) under a tmpfs overlay, so CMD can be any
# host program, e.g. a binary from a build directory; the current directory
# is kept.  Before CMD runs, the guest has rdma_rxe loaded and an rxe device
# "rxe_d0" on a dummy netdev with 192.0.2.1/24.
#
# The kernel .deb, its extracted tree and the initramfs are cached outside
# the source tree in ${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-lab.
#
# Environment:
#   RPCRDMA_LAB_TIMEOUT  seconds before the guest is killed (default 840)
#   RPCRDMA_LAB_SMP      vCPUs (2)          RPCRDMA_LAB_MEM  memory (2G)
#   RPCRDMA_LAB_ACCEL    qemu accelerator (tcg)
#   RPCRDMA_LAB_KVER     kernel version (default: what linux-image-amd64
#                        depends on; offline: the newest one cached)
#   RPCRDMA_LAB_CACHE    cache directory
#   RPCRDMA_LAB_KEEP=1   keep the per-run directory (console.log, cmd.sh)
# ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and RPCRDMA_* are passed to CMD.
#
# Exit status: CMD's, or 2 when the lab cannot be prepared, 3 when the guest
# did not report a status (crash or time-out).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${RPCRDMA_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-lab}
timeout_s=${RPCRDMA_LAB_TIMEOUT:-840}

say() { echo "lab: $*" >&2; }
fail() { say "$*"; exit 2; }

[ $# -gt 0 ] || { echo "usage: $0 CMD [ARG...]" >&2; exit 2; }

# --- host tools ---------------------------------------------------------
# Named by the Debian package that provides them; scripts/deps.sh lab
# installs all of them.
need() {  # need COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 ||
		fail "'$1' not found: install Debian package $2 (scripts/deps.sh lab)"
}
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need depmod kmod
need modprobe kmod
need timeout coreutils
# The initramfs has no libc: its busybox must be the static one.
[ -x /bin/busybox ] ||
	fail "/bin/busybox not found: install Debian package busybox-static"
ldd /bin/busybox >/dev/null 2>&1 &&
	fail "/bin/busybox is dynamically linked: install busybox-static"
# Used inside the guest (it runs the host's userspace).
need rdma iproute2
ls /usr/lib/*/libibverbs/librxe-* >/dev/null 2>&1 ||
	fail "the rxe userspace driver is missing: install ibverbs-providers"

mkdir -p "$cache" || fail "cannot create $cache"

# --- kernel -------------------------------------------------------------
# Preparation is serialised: ctest may start several lab tests at once.
exec 9>"$cache/lock"
flock 9

kver=${RPCRDMA_LAB_KVER:-}
if [ -z "$kver" ]; then
	kver=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -1)
fi
if [ -z "$kver" ]; then
	# Offline or no apt lists: fall back to the newest kernel prepared.
	kver=$(ls -d "$cache"/kernel-*/ 2>/dev/null | sed 's,.*/kernel-,,; s,/$,,' |
		sort -V | tail -1)
fi
[ -n "$kver" ] || fail "cannot tell which kernel linux-image-amd64 wants (apt-get update?)"
kdir=$cache/kernel-$kver
if [ ! -f "$kdir/boot/vmlinuz-$kver" ]; then
	need apt-get apt
	need dpkg-deb dpkg
	say "fetching linux-image-$kver into $cache"
	deb=$(ls "$cache"/linux-image-"$kver"_*.deb 2>/dev/null | head -1)
	if [ -z "$deb" ]; then
		(cd "$cache" && apt-get download "linux-image-$kver" >&2) ||
			fail "apt-get download linux-image-$kver failed"
		deb=$(ls "$cache"/linux-image-"$kver"_*.deb | head -1)
	fi
	rm -rf "$kdir.tmp"
	dpkg-deb -x "$deb" "$kdir.tmp" || fail "cannot extract $deb"
	mv "$kdir.tmp" "$kdir"
fi
# The .deb ships no modules.dep: modprobe needs one, in the guest and here.
if [ ! -f "$kdir/lib/modules/$kver/modules.dep" ]; then
	depmod -b "$kdir" -F "$kdir/boot/System.map-$kver" "$kver" ||
		fail "depmod failed for $kver"
fi

# --- initramfs ------------------------------------------------------------
initrd=$cache/initramfs-$kver.cpio.gz
if [ ! -f "$initrd" ] || [ "$here/stage1-init.sh" -nt "$initrd" ] ||
   [ "$here/run.sh" -nt "$initrd" ]; then
	root=$(mktemp -d) || fail "mktemp"
	mkdir -p "$root"/{bin,dev,proc,sys,lower,rw,root,modules}
	cp /bin/busybox "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	# Only what it takes to reach the host's root: virtio PCI transport,
	# 9p over virtio, overlayfs; modprobe --show-depends gives load order.
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$kdir" -S "$kver" --show-depends "$m" |
			awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' > "$root/modules/paths"
	while read -r ko; do
		cp "$ko" "$root/modules/" && basename "$ko"
	done < "$root/modules/paths" > "$root/modules/order"
	rm "$root/modules/paths"
	cp "$here/stage1-init.sh" "$root/init"
	chmod 755 "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.tmp" &&
		mv "$initrd.tmp" "$initrd" || fail "cannot build the initramfs"
	rm -rf "$root"
fi
flock -u 9

# --- the run --------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-lab.XXXXXX") || fail "mktemp"
chmod 755 "$run"
cleanup() { [ "${RPCRDMA_LAB_KEEP:-0}" = 1 ] && say "run directory kept: $run" || rm -rf "$run"; }
trap cleanup EXIT
{
	echo "cd $(printf '%q' "$PWD") || exit 97"
	for v in $(compgen -e); do
		case $v in
		ASAN_OPTIONS|UBSAN_OPTIONS|LSAN_OPTIONS|RPCRDMA_*)
			echo "export $v=$(printf '%q' "${!v}")" ;;
		esac
	done
	printf '%q ' "$@"
	echo
} > "$run/cmd.sh"

accel=${RPCRDMA_LAB_ACCEL:-tcg}
[ "$accel" = tcg ] && accel=tcg,thread=multi
t0=$(date +%s.%N)
say "booting $kver (${RPCRDMA_LAB_SMP:-2} vCPUs, $accel, time-out ${timeout_s}s)"
timeout -k 5 "$timeout_s" qemu-system-x86_64 \
	-accel "$accel" -M pc -cpu max -smp "${RPCRDMA_LAB_SMP:-2}" \
	-m "${RPCRDMA_LAB_MEM:-2G}" \
	-nic none -display none -vga none -monitor none -serial stdio \
	-no-reboot \
	-kernel "$kdir/boot/vmlinuz-$kver" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 loglevel=4 kdir=$kdir kver=$kver labdir=$here" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$run,mount_tag=labrun,security_model=none,multidevs=remap" \
	</dev/null 2>&1 | tr -d '\r' | tee "$run/console.log"
qrc=${PIPESTATUS[0]}
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
if [ -f "$run/rc" ]; then
	rc=$(cat "$run/rc")
	say "guest command exit status $rc, wall ${wall}s"
	exit "$rc"
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	say "the guest did not finish within ${timeout_s}s (wall ${wall}s)"
else
	say "qemu exited with status $qrc before the guest reported a result (wall ${wall}s)"
fi
exit 3
