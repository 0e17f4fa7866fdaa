/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The demo's baseline: the same rpcgen program over libtirpc's own TCP
 * transport (clnt_vc / svc_vc), so `make demo` prints RPC-over-RDMA next
 * to what the program gets without it, measured in the same run.
 */
#ifndef BLOCKSTORE_TCP_BASELINE_H
#define BLOCKSTORE_TCP_BASELINE_H

#include <rpc/rpc.h>

/* libtirpc's largest record buffers (its default is 64 KiB): the baseline
 * is libtirpc at its best, as in rpcrdma-perf. */
#define TCP_BASELINE_BUFSZ (256u * 1024u)

/* A libtirpc TCP transport listening on "host:port" / "[v6]:port" (port 0:
 * an ephemeral one, returned in *port), for svc_register(..., 0) and
 * svc_run().  NULL with a message on stderr on failure. */
SVCXPRT *tcp_baseline_listen(const char *hostport, unsigned *port);

/* A libtirpc TCP client of (prog, vers) at "host:port" / "[v6]:port",
 * without rpcbind.  NULL with a message on stderr on failure. */
CLIENT *tcp_baseline_client(const char *hostport, rpcprog_t prog, rpcvers_t vers);

#endif
