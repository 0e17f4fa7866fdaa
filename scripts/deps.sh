#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# deps.sh [build|test|lab|all] — install, with apt-get, only the Debian
# packages this project needs that are missing.  Safe to run repeatedly;
# does nothing when everything is present.  Needs root (or sudo) only when
# something is missing.
set -eu
what=${1:-test}

# Building the library, tools and tests (gcc and clang, CMake).
PKGS_BUILD="build-essential cmake pkg-config clang libclang-rt-14-dev rpcsvc-proto
            libtirpc-dev libibverbs-dev librdmacm-dev python3 jq systemtap-sdt-dev"
# Interop checks: tshark dissects our captures.  `rpcrdma-perf cost`
# counts instructions per call with valgrind's callgrind.  Manual pages:
# mandoc and man-db lint them.  Debian packages: dpkg-buildpackage
# (dpkg-dev, debhelper) builds them, lintian judges them.
PKGS_TEST="tshark valgrind mandoc man-db dpkg-dev debhelper lintian"
# Soft-RoCE lab: Debian's kernel under qemu with rdma_rxe; the guest runs
# the host's userspace over virtio-9p, so these tools are host packages.
# The siw kinds of the lab also build siw.ko (build-essential, xz-utils).
PKGS_LAB="qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-utils
          rdmacm-utils ibverbs-providers perftest iproute2 bc
          nfs-kernel-server nfs-common rpcbind xz-utils rsync"

case $what in
build) want=$PKGS_BUILD ;;
test) want="$PKGS_BUILD $PKGS_TEST $PKGS_LAB" ;;
lab) want=$PKGS_LAB ;;
all) want="$PKGS_BUILD $PKGS_TEST $PKGS_LAB" ;;
*) echo "usage: $0 [build|test|lab|all]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	# dpkg -s reports "install ok installed" only for a fully installed package
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "deps.sh: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# tshark asks whether non-root users may capture; the default (no) is fine.
$SUDO apt-get install -y -qq --no-install-recommends $missing
