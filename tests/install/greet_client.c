/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Out-of-tree client: rpcgen's stub over clnt_rdma_create. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rpcrdma/tirpc.h>
#include "greet.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	CLIENT *c = clnt_rdma_create(argv[1], GREET_PROG, GREET_V1, NULL);
	if (!c) {
		clnt_pcreateerror("clnt_rdma_create");
		return 1;
	}
	static char payload[100000]; /* past any inline threshold */
	memset(payload, 'x', sizeof(payload));
	greet_args a = { .name = "rdma", .payload = { sizeof(payload), payload } };
	greet_res r;
	memset(&r, 0, sizeof(r));
	if (greet_1(&a, &r, c) != RPC_SUCCESS) {
		clnt_perror(c, "greet");
		return 1;
	}
	int ok = strcmp(r.text, "hello, rdma") == 0 && r.payload_len == sizeof(payload);
	printf("%s (payload %u)\n", r.text, r.payload_len);
	clnt_freeres(c, (xdrproc_t)xdr_greet_res, (caddr_t)&r);
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	return ok ? 0 : 1;
}
