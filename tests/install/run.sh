#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/install/run.sh BUILD_DIR [pkgconfig|cmake] — install the library
# into a scratch prefix, build an rpcgen program the library has never seen
# (greet.x and its two mains) out of tree, and run its server and client
# over RDMA (iwarp, loopback).  pkgconfig (default): built with
# `cc $(pkg-config --cflags --libs rpcrdma)`; cmake: built by the CMake
# project in cmake/ with find_package(rpcrdma) and rpcrdma::rpcrdma.
# EXTRA_CFLAGS: flags the program needs to load the library as built
# (the sanitizer flags of an ASan build).
set -u
build=$1
how=${2:-pkgconfig}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-install.XXXXXX")
srv_pid=""
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "install test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "cmake --install"; }
cd "$work" || exit 1
case $how in
pkgconfig)
	pc=$(find "$work/prefix" -name rpcrdma.pc | head -1)
	[ -n "$pc" ] || fail "no rpcrdma.pc installed"
	export PKG_CONFIG_PATH=$(dirname "$pc")
	flags=$(pkg-config --cflags --libs rpcrdma) || fail "pkg-config rpcrdma"
	echo "install test: pkg-config --cflags --libs rpcrdma: $flags"
	cp "$here"/greet.x "$here"/greet_server.c "$here"/greet_client.c .
	rpcgen -M -h -o greet.h greet.x && rpcgen -M -c -o greet_xdr.c greet.x &&
		rpcgen -M -l -o greet_clnt.c greet.x && rpcgen -M -m -o greet_svc.c greet.x ||
		fail "rpcgen"
	libdir=$(pkg-config --variable=libdir rpcrdma)
	# shellcheck disable=SC2086
	cc -o greet_server greet_server.c greet_xdr.c greet_svc.c ${EXTRA_CFLAGS:-} $flags \
		-Wl,-rpath,"$libdir" || fail "building the server against the installed library"
	# shellcheck disable=SC2086
	cc -o greet_client greet_client.c greet_xdr.c greet_clnt.c ${EXTRA_CFLAGS:-} $flags \
		-Wl,-rpath,"$libdir" || fail "building the client against the installed library"
	;;
cmake)
	cfg=$(find "$work/prefix" -name rpcrdmaConfig.cmake | head -1)
	[ -n "$cfg" ] || fail "no rpcrdmaConfig.cmake installed"
	libdir=$(cd "$(dirname "$cfg")/../.." && pwd)
	echo "install test: find_package(rpcrdma) from $cfg"
	cmake -S "$here/cmake" -B greet-build -DCMAKE_PREFIX_PATH="$work/prefix" \
		-DCMAKE_C_FLAGS="${EXTRA_CFLAGS:-}" \
		-DCMAKE_EXE_LINKER_FLAGS="${EXTRA_CFLAGS:-}" >cmake.log 2>&1 ||
		{ cat cmake.log; fail "configuring with find_package(rpcrdma)"; }
	cmake --build greet-build >>cmake.log 2>&1 ||
		{ cat cmake.log; fail "building with rpcrdma::rpcrdma"; }
	mv greet-build/greet_server greet-build/greet_client .
	;;
example)
	# The README's path with the installed example service: its
	# Makefile, pkg-config from the prefix, then the program runs only
	# once the library's directory is on the loader's path.
	pc=$(find "$work/prefix" -name rpcrdma.pc | head -1)
	[ -n "$pc" ] || fail "no rpcrdma.pc installed"
	export PKG_CONFIG_PATH=$(dirname "$pc")
	libdir=$(pkg-config --variable=libdir rpcrdma)
	ex=$(find "$work/prefix/share/doc" -type d -name examples | head -1)
	[ -n "$ex" ] || fail "no example service under share/doc"
	cp -r "$ex" bs && cd bs || exit 1
	make CFLAGS="-O1 -g ${EXTRA_CFLAGS:-}" LDFLAGS="${EXTRA_CFLAGS:-}" \
		>make.log 2>&1 || { cat make.log; fail "make in the installed examples"; }
	out=$(./blockstore_client 127.0.0.1:1 2>&1)
	echo "$out" | grep -q 'librpcrdma.so.0: cannot open shared object file' ||
		fail "without LD_LIBRARY_PATH: '$out'"
	export LD_LIBRARY_PATH=$libdir
	./blockstore_server --listen 127.0.0.1:0 --port-file port >server.out 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
	./blockstore_client "127.0.0.1:$(cat port)" >client.out 2>&1 ||
		{ cat client.out server.out; fail "the example client failed"; }
	tail -3 client.out
	echo "install test: PASS ($how)"
	exit 0
	;;
*) fail "unknown way to build: $how" ;;
esac
ldd ./greet_client | grep -q "$libdir/librpcrdma" ||
	fail "the client is not linked to the installed shared library"

./greet_server 127.0.0.1:0 >server.out 2>&1 &
srv_pid=$!
for _ in $(seq 100); do grep -q '^port' server.out 2>/dev/null && break; sleep 0.05; done
port=$(awk '/^port/ { print $2 }' server.out)
[ -n "$port" ] || { cat server.out; fail "the server did not start"; }
out=$(./greet_client "127.0.0.1:$port") || { echo "$out"; cat server.out; fail "the client failed"; }
echo "install test: client said: $out"
[ "$out" = "hello, rdma (payload 100000)" ] || fail "unexpected answer"
echo "install test: PASS ($how)"
