#!/bin/bash
# tests/install/run.sh BUILD_DIR — install the library into a scratch
# prefix, build an rpcgen program the library has never seen (greet.x and
# its two mains) out of tree with `cc $(pkg-config --cflags --libs
# rpcrdma)`, and run its server and client over RDMA (iwarp, loopback).
# EXTRA_CFLAGS: flags the program needs to load the library as built
# (the sanitizer flags of an ASan build).
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma-install.XXXXXX")
srv_pid=""
trap '[ -n "$srv_pid" ] && kill $srv_pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "install test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "cmake --install"; }
pc=$(find "$work/prefix" -name rpcrdma.pc | head -1)
[ -n "$pc" ] || fail "no rpcrdma.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs rpcrdma) || fail "pkg-config rpcrdma"
echo "install test: pkg-config --cflags --libs rpcrdma: $flags"
cd "$work" || exit 1
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
echo "install test: PASS"
