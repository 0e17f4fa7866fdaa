/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: the two contenders that are libtirpc programs, and what
 * they share.  Private to bench/.
 *
 *   libtirpc     clnt_vc_create / svc_vc_create over TCP (perf_baseline.c)
 *   rdma-tirpc   clnt_rdma_create + rpcgen stubs / svc_rdma_create
 *                (perf_tirpc_rdma.c): how an rpcgen program meets rpcrdma
 *
 * Both servers register the benchmark program with libtirpc's
 * svc_register() and are served by one svc_run()-style loop per process
 * (perf_svc.c), with one dispatch function: libtirpc keeps one dispatch
 * per (prog, vers) for the whole process, whatever the transport, and a
 * program serving TCP and RDMA at once runs one svc_run().  The client
 * workloads are the same code for both (perf_tirpc_client.c).
 */
#ifndef RPCRDMA_BENCH_PERF_TIRPC_H
#define RPCRDMA_BENCH_PERF_TIRPC_H

#include <rpc/rpc.h>

#include "perf_rpc.h"
#include "rpcrdma/rpcrdma.h"

/* libtirpc declares xdrproc_t variadic; going through void (*)(void)
 * is the documented way to convert without -Wcast-function-type. */
#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

/* opaque data<> with a caller-owned buffer, so neither side allocates
 * per call (as the rpcrdma side does not either).  Same bytes on the wire
 * as rpcgen's xdr_bytes for `opaque data<>`. */
struct pr_blob {
	uint8_t *buf;
	u_int len;
	u_int cap;
};
bool_t pr_xdr_blob(XDR *x, struct pr_blob *b);

/* ---- the service side (perf_svc.c) ---- */

/* Makes a listening transport while the loop is paused; NULL on error
 * (message printed). */
typedef SVCXPRT *(*pr_svc_create_fn)(void *arg);

/* Creates a transport with `create`, registers the benchmark program on it
 * (protocol 0: no rpcbind) and serves it from the process's service loop
 * (started with the first transport).  NULL on failure. */
SVCXPRT *pr_svc_start(pr_svc_create_fn create, void *arg);
/* Stops serving x: lets the connections that closed be reaped (2 s at
 * most), destroys x, and goes on serving the other transports. */
void pr_svc_stop(SVCXPRT *x);

/* ---- a CLIENT-based contender ---- */

struct pr_clnt_ops {
	const char *name;
	/* Server: start on addr (port 0: ephemeral); NULL on failure. */
	SVCXPRT *(*server_start)(const struct sockaddr_storage *addr,
				 socklen_t len, const struct rpcrdma_opts *o);
	uint16_t (*server_port)(SVCXPRT *x);
	/* Client: connect to addr; NULL on failure (message printed). */
	CLIENT *(*connect)(const struct sockaddr_storage *addr, socklen_t len,
			   const struct rpcrdma_opts *o);
	/* One call each; 0 or -1. */
	int (*null)(CLIENT *c);
	int (*write)(CLIENT *c, uint8_t *buf, size_t size);
	int (*read)(CLIENT *c, uint8_t *buf, size_t size);
	/* Before the calls of one transfer size (NULL: nothing to do). */
	int (*set_size)(CLIENT *c, size_t size);
	/* RDMA transport counters (NULL: not RDMA, nothing to check), of the
	 * client and of the server. */
	bool_t (*stats)(CLIENT *c, struct rpcrdma_stats *s);
	bool_t (*server_stats)(SVCXPRT *x, struct rpcrdma_stats *s);
	/* One CLIENT takes calls from several threads at once (ours; a
	 * libtirpc CLIENT serializes them): READ/WRITE then run with as
	 * many calls in flight as the native contender, one thread each. */
	bool concurrent;
	/* What "N in flight" means for this contender, for the notes. */
	const char *inflight_note;
};

extern const struct pr_clnt_ops pr_tirpc_tcp_ops;  /* libtirpc */
extern const struct pr_clnt_ops pr_tirpc_rdma_ops; /* rdma-tirpc */

/* Every workload of p against the server at addr (perf_tirpc_client.c);
 * 0 or -1 (message printed, r->note set). */
int pr_clnt_run(const struct pr_clnt_ops *ops,
		const struct sockaddr_storage *addr, socklen_t len,
		const struct rpcrdma_opts *o, const struct pr_params *p,
		struct pr_result *r);

/* The cost subcommand's session (see struct pr_nullsess) for a
 * CLIENT-based contender; 0 or -1 (message printed). */
int pr_clnt_nullsess(const struct pr_clnt_ops *ops,
		     const struct sockaddr_storage *ip, socklen_t len,
		     const struct rpcrdma_opts *o, struct pr_nullsess **out);

#endif
