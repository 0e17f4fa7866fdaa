/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * blockstore_server: the example rpcgen service over RPC-over-RDMA.
 *
 *   blockstore_server [--listen HOST:PORT] [--provider iwarp|verbs]
 *                     [--port-file FILE] [--tcp-listen HOST:PORT]
 *
 * The dispatch function and the XDR routines are rpcgen's, unedited; the
 * only RDMA-specific lines are svc_rdma_create() and the Upper-Layer
 * Binding (svc_rdma_set_ulb).  It serves with plain svc_run() until
 * killed.  --tcp-listen also serves the program over libtirpc's TCP
 * transport (the demo's baseline, tcp_baseline.h), in the same svc_run().
 */
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "blockstore.h"
#include "blockstore_cb.h"
#include "tcp_baseline.h"

#define MAXBLOCKS 64

static struct block {
	bool used;
	u_int id;
	char *data;
	u_int len;
	u_int sum;
} blocks[MAXBLOCKS];
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;

static u_int fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static struct block *find(u_int id, bool create)
{
	for (int i = 0; i < MAXBLOCKS; i++)
		if (blocks[i].used && blocks[i].id == id)
			return &blocks[i];
	if (!create)
		return NULL;
	for (int i = 0; i < MAXBLOCKS; i++)
		if (!blocks[i].used) {
			blocks[i].used = true;
			blocks[i].id = id;
			return &blocks[i];
		}
	return NULL;
}

bool_t bs_null_1_svc(void *argp, void *result, struct svc_req *rq)
{
	(void)argp;
	(void)result;
	(void)rq;
	return TRUE;
}

bool_t bs_write_1_svc(bs_write_args *a, bs_write_res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&blocks_lock);
	struct block *b = find(a->id, true);
	if (!b) {
		r->status = 28; /* ENOSPC */
	} else {
		free(b->data);
		b->len = a->data.bs_data_len;
		b->data = malloc(b->len ? b->len : 1);
		memcpy(b->data, a->data.bs_data_val, b->len);
		b->sum = fnv1a(b->data, b->len);
		r->count = b->len;
		r->checksum = b->sum;
	}
	pthread_mutex_unlock(&blocks_lock);
	return TRUE;
}

bool_t bs_read_1_svc(bs_read_args *a, bs_read_res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&blocks_lock);
	struct block *b = find(a->id, false);
	if (!b) {
		r->status = 2; /* ENOENT */
	} else {
		u_int n = a->count < b->len ? a->count : b->len;
		r->bs_read_res_u.data.bs_data_len = n;
		r->bs_read_res_u.data.bs_data_val = malloc(n ? n : 1);
		memcpy(r->bs_read_res_u.data.bs_data_val, b->data, n);
	}
	pthread_mutex_unlock(&blocks_lock);
	return TRUE;
}

bool_t bs_list_1_svc(bs_list_args *a, bs_list_res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	bs_entry **tail = &r->entries;
	pthread_mutex_lock(&blocks_lock);
	u_int n = 0;
	for (int i = 0; i < MAXBLOCKS && n < a->count; i++) {
		if (!blocks[i].used)
			continue;
		bs_entry *e = calloc(1, sizeof(*e));
		e->id = blocks[i].id;
		e->name = malloc(32);
		snprintf(e->name, 32, "block-%u", blocks[i].id);
		e->size = blocks[i].len;
		e->checksum = blocks[i].sum;
		*tail = e;
		tail = &e->next;
		n++;
	}
	pthread_mutex_unlock(&blocks_lock);
	/* Synthetic entries make the listing as long as asked. */
	for (; n < a->count; n++) {
		bs_entry *e = calloc(1, sizeof(*e));
		e->id = 1000000 + n;
		e->name = malloc(48);
		snprintf(e->name, 48, "synthetic-entry-%07u", n);
		e->size = n;
		e->checksum = fnv1a(e->name, strlen(e->name));
		*tail = e;
		tail = &e->next;
	}
	return TRUE;
}

bool_t bs_tag_1_svc(bs_tag_args *a, bs_tag_res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	r->meta_len = a->meta.meta_len;
	r->checksum = fnv1a(a->meta.meta_val, a->meta.meta_len);
	return TRUE;
}

/* Calls the client back on its own connection (RFC 8167), while its
 * BS_SUBSCRIBE call is still being served. */
bool_t bs_subscribe_1_svc(u_int *id, int *r, struct svc_req *rq)
{
	*r = -1;
	CLIENT *cb = svc_rdma_callback_client(rq, BLOCKSTORE_CB, BS_CB_V1);
	if (!cb)
		return TRUE;
	bs_notify n = { .id = *id, .size = 0,
			.msg = "block stored; this is the server calling back" };
	pthread_mutex_lock(&blocks_lock);
	struct block *b = find(*id, false);
	if (b)
		n.size = b->len;
	pthread_mutex_unlock(&blocks_lock);
	int res = -1;
	if (bscb_notify_1(&n, &res, cb) == RPC_SUCCESS)
		*r = res;
	else
		clnt_perror(cb, "blockstore_server: callback");
	clnt_destroy(cb);
	return TRUE;
}

int blockstore_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	xdr_free(xdr_result, result);
	return 1;
}

void blockstore_1(struct svc_req *rqstp, SVCXPRT *transp); /* rpcgen's */

int main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:20049", *port_file = NULL, *tcp = NULL;
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "provider", required_argument, NULL, 'p' },
		{ "port-file", required_argument, NULL, 'f' },
		{ "tcp-listen", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "l:p:f:t:", lo, NULL)) != -1) {
		switch (ch) {
		case 'l': listen = optarg; break;
		case 'p': o.provider = optarg; break;
		case 'f': port_file = optarg; break;
		case 't': tcp = optarg; break;
		default:
			fprintf(stderr, "usage: %s [--listen HOST:PORT] [--provider P] "
					"[--port-file F] [--tcp-listen HOST:PORT]\n", argv[0]);
			return 2;
		}
	}
	SVCXPRT *x = svc_rdma_create(listen, &o);
	if (!x) {
		clnt_pcreateerror("blockstore_server: svc_rdma_create");
		return 1;
	}
	/* Upper-Layer Binding: BS_READ's data may go in a Write chunk. */
	struct rpcrdma_ulb_proc ulb[] = {
		{ .proc = BS_READ, .ddp_result_max = BS_MAXBLOCK },
	};
	svc_rdma_set_ulb(x, BLOCKSTORE, BS_V1, ulb, 1);
	if (!svc_register(x, BLOCKSTORE, BS_V1, blockstore_1, 0)) {
		fprintf(stderr, "blockstore_server: svc_register failed\n");
		return 1;
	}
	printf("blockstore_server: listening on %s (port %u, provider %s)\n",
	       listen, svc_rdma_port(x), o.provider ? o.provider : "iwarp");
	if (tcp) {
		unsigned tport;
		SVCXPRT *t = tcp_baseline_listen(tcp, &tport);
		if (!t || !svc_register(t, BLOCKSTORE, BS_V1, blockstore_1, 0)) {
			fprintf(stderr, "blockstore_server: no libtirpc/TCP transport\n");
			return 1;
		}
		printf("blockstore_server: libtirpc/TCP baseline on port %u\n", tport);
	}
	fflush(stdout);
	if (port_file) {
		FILE *f = fopen(port_file, "w");
		if (f) {
			fprintf(f, "%u\n", svc_rdma_port(x));
			fclose(f);
		}
	}
	svc_run();
	return 0;
}
