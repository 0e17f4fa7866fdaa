/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Out-of-tree server: rpcgen's dispatch, svc_rdma_create, svc_run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rpcrdma/tirpc.h>
#include "greet.h"

bool_t greet_1_svc(greet_args *a, greet_res *r, struct svc_req *rq)
{
	(void)rq;
	r->text = malloc(128);
	snprintf(r->text, 128, "hello, %s", a->name);
	r->payload_len = a->payload.payload_len;
	return TRUE;
}

int greet_prog_1_freeresult(SVCXPRT *t, xdrproc_t f, caddr_t p)
{
	(void)t;
	xdr_free(f, p);
	return 1;
}

void greet_prog_1(struct svc_req *, SVCXPRT *);

int main(int argc, char **argv)
{
	SVCXPRT *x = svc_rdma_create(argc > 1 ? argv[1] : "127.0.0.1:0", NULL);
	if (!x) {
		clnt_pcreateerror("svc_rdma_create");
		return 1;
	}
	if (!svc_register(x, GREET_PROG, GREET_V1, greet_prog_1, 0))
		return 1;
	printf("port %u\n", svc_rdma_port(x));
	fflush(stdout);
	svc_run();
	return 0;
}
