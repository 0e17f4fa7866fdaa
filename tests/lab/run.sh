#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/lab/run.sh — run one command inside a Soft-RoCE guest and return its
# exit status.
#
#   tests/lab/run.sh CMD [ARG...]
#
# Boots Debian's current kernel (the one package linux-image-amd64 depends
# on) under qemu with TCG and no network card.  The guest's root is the
# host's / (read-only, virtio-9p) under a tmpfs overlay, so CMD can be any
# host program, e.g. a binary from a build directory; the current directory
# is kept.  Before CMD runs, the guest has one RDMA device on a dummy
# netdev "d0" with 192.0.2.1/24, chosen by RPCRDMA_LAB_RDMA:
#
#   RPCRDMA_LAB_RDMA=rxe      (default) Soft-RoCE: rdma_rxe, device "rxe_d0"
#   RPCRDMA_LAB_RDMA=siw      soft-iWARP: siw, device "siw_d0"
#   RPCRDMA_LAB_RDMA=siw-crc  the same siw built with mpa_crc_required:
#                             it asks for MPA CRC as initiator and refuses
#                             replies without it (RFC 5044 §7.1)
#
# CMD sees RPCRDMA_LAB_RDMA and RPCRDMA_LAB_DEV (the device name) in its
# environment.  Debian builds its kernel without siw, so for the siw kinds
# run.sh builds siw.ko out of tree from the same Debian version of
# linux-source, linux-headers and linux-kbuild as the kernel image, checks
# its vermagic against the kernel's own modules, and caches it beside the
# kernel (~40 s once; both variants).  Inside the guest,
# tests/lab/siw/swap.sh switches between the two variants without a
# reboot.
#
# The kernel .deb, its extracted tree and the initramfs are cached outside
# the source tree in ${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-lab.
#
# Environment:
#   RPCRDMA_LAB_RDMA     rxe | siw | siw-crc (above; default rxe)
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
rdma_kind=${RPCRDMA_LAB_RDMA:-rxe}
case $rdma_kind in
rxe) ;;
siw|siw-crc)
	# siw.ko is built here: the compiler and make of build-essential,
	# xz for the kernel source tarball.
	need make build-essential
	need xz xz-utils
	ls /usr/lib/*/libibverbs/libsiw-* >/dev/null 2>&1 ||
		fail "the siw userspace driver is missing: install ibverbs-providers" ;;
*) fail "RPCRDMA_LAB_RDMA=$rdma_kind: want rxe, siw or siw-crc" ;;
esac
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

# --- siw.ko ----------------------------------------------------------------
# Debian's kernel has CONFIG_RDMA_SIW unset; the driver builds out of tree
# against linux-headers-$kver from linux-source of the very same Debian
# version (another version gives a module whose symbol CRCs or vermagic
# do not match).  Cached as $cache/siw-$kver/{siw.ko,crc/siw.ko}; the
# plain one is installed in the kernel tree (extra/) so modprobe finds it.
# The version of package $1 to fetch for Debian version $2: $2 itself if
# the archive has it, else the newest it has of the same upstream version
# (6.1.192-2 -> 6.1.192-*); empty if none.
archive_version() {
	local all
	all=$(apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}')
	if printf '%s\n' "$all" | grep -qxF "$2"; then
		echo "$2"
		return
	fi
	printf '%s\n' "$all" | awk -v p="${2%-*}-" 'index($0, p) == 1' |
		sort -V | tail -1
}

siw_build() {  # builds into $sdir; everything else it fetches is removed
	local sdir=$1 ver series w H common
	local deb
	deb=$(ls "$cache"/linux-image-"$kver"_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ]; then
		ver=$(dpkg-deb -f "$deb" Version)
	else
		ver=$(apt-cache show "linux-image-$kver" 2>/dev/null |
			sed -n 's/^Version: //p' | head -1)
	fi
	[ -n "$ver" ] || { say "cannot tell the Debian version of linux-image-$kver"; return 1; }
	series=$(echo "$kver" | cut -d. -f1-2)      # 6.1.0-56-amd64 -> 6.1
	common=${kver%-*}-common                    # -> 6.1.0-56-common
	# linux-kbuild (fixdep, modpost: tools, no symbol CRCs) is its own
	# package, and a security update may replace it in the archive while
	# the image and headers of $ver stay: take $ver when the archive still
	# has it, else its newest build of the same upstream version.
	local kb
	kb=$(archive_version "linux-kbuild-$series" "$ver")
	[ -n "$kb" ] || { say "no linux-kbuild-$series for Debian $ver"; return 1; }
	w=$(mktemp -d "$cache/siw-build.XXXXXX") || return 1
	say "building siw.ko for $kver (Debian $ver, linux-kbuild $kb)"
	(
		set -e
		cd "$w"
		apt-get download "linux-source-$series=$ver" "linux-kbuild-$series=$kb" \
			"linux-headers-$kver=$ver" "linux-headers-$common=$ver" >&2
		for d in linux-headers-*.deb linux-kbuild-*.deb; do
			dpkg-deb -x "$d" root
		done
		H=$w/root/usr/src/linux-headers-$kver
		# The headers' Makefile includes the -common tree by its
		# installed path (/usr/src/...); point it at the extracted one.
		echo "include $w/root/usr/src/linux-headers-$common/Makefile" > "$H/Makefile"
		dpkg-deb --fsys-tarfile linux-source-"$series"_*.deb |
			tar -xO "./usr/src/linux-source-$series.tar.xz" |
			tar -xJ --wildcards "linux-source-$series/drivers/infiniband/sw/siw/*"
		rm -f ./*.deb
		for v in plain crc; do
			cp -r "linux-source-$series/drivers/infiniband/sw/siw" "$v"
			rm "$v/Makefile"
			printf '%s\n' 'obj-m += siw.o' \
				'siw-y := siw_cm.o siw_cq.o siw_main.o siw_mem.o siw_qp.o siw_qp_tx.o siw_qp_rx.o siw_verbs.o' \
				> "$v/Kbuild"
		done
		# siw_main.c: "const bool mpa_crc_required;" is a compile-time
		# switch, no module parameter.
		grep -q '^const bool mpa_crc_required;' crc/siw_main.c
		sed -i 's/^const bool mpa_crc_required;/const bool mpa_crc_required = true;/' \
			crc/siw_main.c
		for v in plain crc; do
			make -s -C "$H" M="$w/$v" -j"$(nproc)" modules >&2
		done
	) || { rm -rf "$w"; say "building siw.ko failed"; return 1; }
	# The kernel refuses a module whose vermagic differs from its own.
	local want got
	want=$(modinfo -F vermagic "$(find "$kdir/lib/modules/$kver/kernel/drivers/infiniband/core" \
		-name 'ib_core.ko*' | head -1)")
	for v in plain crc; do
		got=$(modinfo -F vermagic "$w/$v/siw.ko")
		if [ "$got" != "$want" ]; then
			say "siw.ko vermagic \"$got\" is not the kernel's \"$want\""
			rm -rf "$w"
			return 1
		fi
	done
	rm -rf "$sdir"
	mkdir -p "$sdir/crc"
	cp "$w/plain/siw.ko" "$sdir/siw.ko"
	cp "$w/crc/siw.ko" "$sdir/crc/siw.ko"
	echo "$ver" > "$sdir/version"
	rm -rf "$w"
}
if [ "$rdma_kind" != rxe ]; then
	sdir=$cache/siw-$kver
	if [ ! -f "$sdir/crc/siw.ko" ]; then
		need apt-get apt
		need dpkg-deb dpkg
		siw_build "$sdir" || fail "cannot build siw.ko for $kver"
	fi
	extra=$kdir/lib/modules/$kver/extra
	if ! cmp -s "$sdir/siw.ko" "$extra/siw.ko"; then
		mkdir -p "$extra" && cp "$sdir/siw.ko" "$extra/siw.ko.tmp" &&
			mv "$extra/siw.ko.tmp" "$extra/siw.ko" ||
			fail "cannot install siw.ko in $kdir"
		depmod -b "$kdir" -F "$kdir/boot/System.map-$kver" "$kver" ||
			fail "depmod failed for $kver"
	fi
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

# no_timer_check: on a loaded host the kernel's check that the IO-APIC
# delivers the timer can miss under TCG and panic the boot ("IO-APIC +
# timer doesn't work"); the check is for real chipsets.
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
	-append "console=ttyS0 panic=-1 loglevel=4 no_timer_check kdir=$kdir kver=$kver labdir=$here labrdma=$rdma_kind labcache=$cache" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-virtfs "local,path=$run,mount_tag=labrun,security_model=none,multidevs=remap" \
	</dev/null 2>&1 | stdbuf -oL tr -d '\r' | tee "$run/console.log"
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
