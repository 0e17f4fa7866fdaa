/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: the rdma-tirpc contender, rpcrdma as an rpcgen program
 * meets it: a client made with clnt_rdma_create() calling the rpcgen
 * stubs of perf_prog.x, and a server made with svc_rdma_create() +
 * svc_register() served by a svc_run()-style loop (perf_svc.c).
 *
 * The Upper-Layer Binding (RFC 8166 §6) is declared on both sides, so the
 * data moves as it does for the native contender: WRITE's data in a Read
 * chunk, READ's result in a Write chunk the size of the request (as an
 * NFS client sizes its Write chunk to the READ's count).  The other
 * results are a word or two, so no Reply chunk is offered (reply_max),
 * which would cost a registration per call.
 */
#include <stdio.h>

#include "perf.h"
#include "perf_prog.h"
#include "perf_tirpc.h"
#include "rpcrdma/tirpc.h"

_Static_assert(PERF_PROG == PR_PROG && PERF_VERS == PR_VERS,
	       "perf_prog.x and perf_rpc.h name the same program");
_Static_assert(PERF_NULL == PR_NULL && PERF_WRITE == PR_WRITE &&
		       PERF_READ == PR_READ,
	       "perf_prog.x and perf_rpc.h number the procedures alike");
_Static_assert(PERF_MAXDATA == PR_MAXSZ, "same largest transfer");

/* Results besides the DDP item: a length word, inline. */
#define SMALL_REPLY 512

struct create_arg {
	const char *listen;
	const struct rpcrdma_opts *o;
};

static SVCXPRT *rt_create(void *arg)
{
	const struct create_arg *a = arg;
	SVCXPRT *x = svc_rdma_create(a->listen, a->o);
	if (!x) {
		clnt_pcreateerror("rpcrdma-perf: svc_rdma_create");
		return NULL;
	}
	const struct rpcrdma_ulb_proc ulb = {.proc = PR_READ,
					     .ddp_result_max = PR_MAXSZ};
	if (!svc_rdma_set_ulb(x, PR_PROG, PR_VERS, &ulb, 1)) {
		fprintf(stderr, "rpcrdma-perf: svc_rdma_set_ulb failed\n");
		svc_destroy(x);
		return NULL;
	}
	return x;
}

static SVCXPRT *rt_server_start(const struct sockaddr_storage *addr,
				socklen_t len, const struct rpcrdma_opts *o)
{
	(void)len;
	char listen[96];
	pr_addr_string(addr, listen, sizeof(listen));
	struct create_arg a = {listen, o};
	return pr_svc_start(rt_create, &a);
}

static uint16_t rt_server_port(SVCXPRT *x)
{
	return svc_rdma_port(x);
}

/* The binding for READ results of at most `size` bytes. */
static bool_t set_ulb(CLIENT *c, size_t size)
{
	const struct rpcrdma_ulb_proc ulb[2] = {
		{.proc = PR_WRITE, .ddp_arg = true, .reply_max = SMALL_REPLY},
		{.proc = PR_READ, .ddp_result_max = size,
		 .reply_max = SMALL_REPLY},
	};
	return clnt_rdma_set_ulb(c, ulb, 2);
}

static CLIENT *rt_connect(const struct sockaddr_storage *addr, socklen_t len,
			  const struct rpcrdma_opts *o)
{
	(void)len;
	char target[96];
	pr_addr_string(addr, target, sizeof(target));
	CLIENT *c = clnt_rdma_create(target, PR_PROG, PR_VERS, o);
	if (!c) {
		clnt_pcreateerror("rpcrdma-perf: clnt_rdma_create");
		return NULL;
	}
	if (!set_ulb(c, PR_MAXSZ)) {
		fprintf(stderr, "rpcrdma-perf: clnt_rdma_set_ulb failed\n");
		clnt_destroy(c);
		return NULL;
	}
	return c;
}

static int rt_null(CLIENT *c)
{
	return perf_null_1(NULL, NULL, c) == RPC_SUCCESS ? 0 : -1;
}

static int rt_write(CLIENT *c, uint8_t *buf, size_t size)
{
	perf_data d = {.perf_data_len = (u_int)size,
		       .perf_data_val = (char *)buf};
	u_int got = 0;
	if (perf_write_1(&d, &got, c) != RPC_SUCCESS)
		return -1;
	return got == size ? 0 : -1;
}

static int rt_read(CLIENT *c, uint8_t *buf, size_t size)
{
	u_int want = (u_int)size;
	/* A buffer of PERF_MAXDATA bytes given to xdr_bytes: the result is
	 * decoded into it, not into memory allocated per call. */
	perf_data res = {.perf_data_len = 0, .perf_data_val = (char *)buf};
	/* ... and lent to the call as its Write chunk, so the server's RDMA
	 * Write lands where xdr_bytes decodes: nothing is copied. */
	if (!clnt_rdma_result_buffer(c, buf, size) ||
	    perf_read_1(&want, &res, c) != RPC_SUCCESS)
		return -1;
	return res.perf_data_len == size && res.perf_data_val == (char *)buf
		       ? 0
		       : -1;
}

static int rt_set_size(CLIENT *c, size_t size)
{
	return set_ulb(c, size) ? 0 : -1;
}

const struct pr_clnt_ops pr_tirpc_rdma_ops = {
	.name = "rdma-tirpc",
	.server_start = rt_server_start,
	.server_port = rt_server_port,
	.connect = rt_connect,
	.null = rt_null,
	.write = rt_write,
	.read = rt_read,
	.set_size = rt_set_size,
	.stats = clnt_rdma_stats,
	.server_stats = svc_rdma_stats,
	.concurrent = true,
	.inflight_note = "32 threads on one CLIENT (connection)",
};
