/*
 * blockstore_client: drives the example service and prints what happened
 * on the wire (the report of `make demo`).
 *
 *   blockstore_client [--provider iwarp|verbs] [--nulls N] HOST[:PORT]
 *
 * rpcgen's client stubs, unedited; the RDMA-specific lines are
 * clnt_rdma_create(), the Upper-Layer Binding (clnt_rdma_set_ulb) and the
 * callback registration.  Exit status 0 only when every check passed.
 */
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "blockstore.h"
#include "blockstore_cb.h"

#define MiB (1024u * 1024u)

static int failures;
static uint64_t bytes_sent, bytes_received;
static unsigned calls;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "blockstore_client: FAIL: %s\n", what);
		failures++;
	}
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- the callback program, served on our own connection ---- */
static atomic_int notified;
static char notify_msg[256];
static uint64_t notify_size;

bool_t bscb_null_1_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t bscb_notify_1_svc(bs_notify *n, int *r, struct svc_req *rq)
{
	(void)rq;
	snprintf(notify_msg, sizeof(notify_msg), "%s", n->msg ? n->msg : "");
	notify_size = n->size;
	atomic_fetch_add(&notified, 1);
	*r = 0;
	return TRUE;
}

int blockstore_cb_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	xdr_free(xdr_result, result);
	return 1;
}

void blockstore_cb_1(struct svc_req *rqstp, SVCXPRT *transp); /* rpcgen's */

int main(int argc, char **argv)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	int nulls = 2000;
	static const struct option lo[] = {
		{ "provider", required_argument, NULL, 'p' },
		{ "nulls", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "p:n:", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o.provider = optarg; break;
		case 'n': nulls = atoi(optarg); break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || nulls < 1) {
usage:
		fprintf(stderr, "usage: %s [--provider P] [--nulls N] HOST[:PORT]\n",
			argv[0]);
		return 2;
	}
	const char *host = argv[optind];

	CLIENT *c = clnt_rdma_create(host, BLOCKSTORE, BS_V1, &o);
	if (!c) {
		clnt_pcreateerror("blockstore_client: clnt_rdma_create");
		return 1;
	}
	auth_destroy(c->cl_auth);
	c->cl_auth = authunix_create_default();
	/* The program's Upper-Layer Binding (RFC 8166 §6). */
	struct rpcrdma_ulb_proc ulb[] = {
		{ .proc = BS_WRITE, .ddp_arg = true },
		{ .proc = BS_READ, .ddp_result_max = BS_MAXBLOCK },
		{ .proc = BS_LIST, .reply_max = 4 * MiB },
	};
	check(clnt_rdma_set_ulb(c, ulb, 3), "clnt_rdma_set_ulb");
	check(clnt_rdma_register_callback(c, BLOCKSTORE_CB, BS_CB_V1, blockstore_cb_1),
	      "clnt_rdma_register_callback");

	/* 1. NULL round trips. */
	double *lat = calloc((size_t)nulls, sizeof(*lat));
	char dummy;
	for (int i = 0; i < nulls; i++) {
		double t0 = now_us();
		enum clnt_stat st = bs_null_1(NULL, &dummy, c);
		lat[i] = now_us() - t0;
		calls++;
		if (st != RPC_SUCCESS) {
			clnt_perror(c, "BS_NULL");
			failures++;
			break;
		}
	}
	qsort(lat, (size_t)nulls, sizeof(*lat), cmp_double);
	double p50 = lat[nulls / 2], p99 = lat[(nulls * 99) / 100];
	free(lat);

	/* 2. WRITE 1 MiB (Read chunk) and 3. READ it back (Write chunk). */
	char *block = malloc(MiB);
	for (u_int i = 0; i < MiB; i++)
		block[i] = (char)((i * 2654435761u) >> 13);
	bs_write_args wa = { .id = 7, .data = { MiB, block } };
	bs_write_res wr;
	memset(&wr, 0, sizeof(wr));
	double tw = now_us();
	enum clnt_stat st = bs_write_1(&wa, &wr, c);
	tw = now_us() - tw;
	calls++;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_WRITE");
	check(st == RPC_SUCCESS && wr.status == 0 && wr.count == MiB &&
		      wr.checksum == fnv1a(block, MiB),
	      "BS_WRITE of 1 MiB arrived intact");
	bytes_sent += MiB;

	bs_read_args ra = { .id = 7, .count = MiB };
	bs_read_res rr;
	memset(&rr, 0, sizeof(rr));
	double tr = now_us();
	st = bs_read_1(&ra, &rr, c);
	tr = now_us() - tr;
	calls++;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_READ");
	check(st == RPC_SUCCESS && rr.status == 0 &&
		      rr.bs_read_res_u.data.bs_data_len == MiB &&
		      memcmp(rr.bs_read_res_u.data.bs_data_val, block, MiB) == 0,
	      "BS_READ of 1 MiB returned the bytes written");
	bytes_received += MiB;
	clnt_freeres(c, (xdrproc_t)xdr_bs_read_res, (caddr_t)&rr);

	/* 4. LIST: a reply larger than any inline threshold. */
	bs_list_args la = { .count = 3000 };
	bs_list_res lr;
	memset(&lr, 0, sizeof(lr));
	st = bs_list_1(&la, &lr, c);
	calls++;
	unsigned n = 0;
	bool names_ok = true;
	for (bs_entry *e = lr.entries; e; e = e->next) {
		n++;
		if (e->id >= 1000000 &&
		    e->checksum != fnv1a(e->name, strlen(e->name)))
			names_ok = false;
	}
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_LIST");
	check(st == RPC_SUCCESS && n == 3000 && names_ok,
	      "BS_LIST returned 3000 intact entries");
	clnt_freeres(c, (xdrproc_t)xdr_bs_list_res, (caddr_t)&lr);

	/* 5. TAG: arguments larger than any inline threshold, no DDP item. */
	size_t mlen = 64 * 1024;
	char *meta = malloc(mlen);
	for (size_t i = 0; i < mlen; i++)
		meta[i] = (char)(i * 7 + 3);
	bs_tag_args ta = { .id = 7, .note = "a Long Call", .meta = { (u_int)mlen, meta } };
	bs_tag_res tg;
	memset(&tg, 0, sizeof(tg));
	st = bs_tag_1(&ta, &tg, c);
	calls++;
	bytes_sent += mlen;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_TAG");
	check(st == RPC_SUCCESS && tg.meta_len == mlen &&
		      tg.checksum == fnv1a(meta, mlen),
	      "BS_TAG with 64 KiB of inline metadata arrived intact");
	free(meta);

	/* 6. SUBSCRIBE: the server calls us back on this connection. */
	u_int id = 7;
	int sr = -1;
	st = bs_subscribe_1(&id, &sr, c);
	calls++;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_SUBSCRIBE");
	check(st == RPC_SUCCESS && sr == 0 && atomic_load(&notified) == 1 &&
		      notify_size == MiB,
	      "the server's BSCB_NOTIFY callback arrived on our connection");

	/* 7. An RPC-level error as libtirpc reports it: a procedure the
	 * server does not have. */
	struct timeval tv = { 10, 0 };
	st = clnt_call(c, 99, (xdrproc_t)xdr_void, NULL, (xdrproc_t)xdr_void,
		       NULL, tv);
	calls++;
	check(st == RPC_PROCUNAVAIL, "procedure 99 answered PROC_UNAVAIL");
	enum clnt_stat st_proc = st;

	/* Arguments the server cannot decode: svc_getargs fails and the
	 * dispatch answers GARBAGE_ARGS, which libtirpc reports as
	 * RPC_CANTDECODEARGS. */
	u_int junk = 5; /* a BS_WRITE needs id and a data length at least */
	st = clnt_call(c, BS_WRITE, (xdrproc_t)xdr_u_int, (caddr_t)&junk,
		       (xdrproc_t)xdr_void, NULL, tv);
	calls++;
	check(st == RPC_CANTDECODEARGS, "undecodable arguments answered GARBAGE_ARGS");
	enum clnt_stat st_garbage = st;

	/* A version the server does not have: PROG_MISMATCH with the range
	 * it has (RFC 5531 §9), from libtirpc's own svc_getreq. */
	enum clnt_stat st_vers = RPC_SUCCESS, st_prog = RPC_SUCCESS;
	struct rpc_err e;
	memset(&e, 0, sizeof(e));
	CLIENT *c2 = clnt_rdma_create(host, BLOCKSTORE, BS_V1 + 1, &o);
	if (c2) {
		st_vers = clnt_call(c2, 0, (xdrproc_t)xdr_void, NULL,
				    (xdrproc_t)xdr_void, NULL, tv);
		clnt_geterr(c2, &e);
		calls++;
		clnt_destroy(c2);
	}
	check(st_vers == RPC_PROGVERSMISMATCH && e.re_vers.low == BS_V1 &&
		      e.re_vers.high == BS_V1,
	      "version 2 answered PROG_MISMATCH (1..1)");
	/* A program the server does not have: PROG_UNAVAIL. */
	CLIENT *c3 = clnt_rdma_create(host, BLOCKSTORE + 0x100, BS_V1, &o);
	if (c3) {
		st_prog = clnt_call(c3, 0, (xdrproc_t)xdr_void, NULL,
				    (xdrproc_t)xdr_void, NULL, tv);
		calls++;
		clnt_destroy(c3);
	}
	check(st_prog == RPC_PROGUNAVAIL, "an unknown program answered PROG_UNAVAIL");

	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	clnt_rdma_stats(c, &s);
	printf("\n== rpcrdma demo: blockstore over RPC-over-RDMA v1 (provider %s) ==\n",
	       o.provider ? o.provider : "iwarp");
	printf("calls made            %u (NULL x%d, WRITE, READ, LIST, TAG, SUBSCRIBE, 4 errors)\n",
	       calls, nulls);
	printf("NULL latency          p50 %.1f us, p99 %.1f us\n", p50, p99);
	printf("1 MiB WRITE / READ    %.2f ms / %.2f ms (%.0f / %.0f MiB/s)\n",
	       tw / 1e3, tr / 1e3, 1e6 / tw, 1e6 / tr);
	printf("bytes moved           %.2f MiB sent, %.2f MiB received in payloads\n",
	       (double)bytes_sent / MiB, (double)bytes_received / MiB);
	printf("message shapes sent   %llu Short, %llu Chunked (Read chunk), %llu Long Call\n",
	       (unsigned long long)s.short_calls, (unsigned long long)s.chunked_calls,
	       (unsigned long long)s.long_calls);
	printf("replies received      %llu inline, %llu Long Reply (Reply chunk)\n",
	       (unsigned long long)s.replies_inline, (unsigned long long)s.replies_long);
	printf("credits granted       %u\n", s.credits_granted);
	printf("callback received     %s (\"%s\", size %llu)\n",
	       atomic_load(&notified) ? "yes" : "no", notify_msg,
	       (unsigned long long)notify_size);
	printf("RPC errors            proc 99 -> %s; bad args -> %s;\n"
	       "                      version 2 -> %s (%u..%u); program +0x100 -> %s\n",
	       clnt_sperrno(st_proc), clnt_sperrno(st_garbage), clnt_sperrno(st_vers),
	       (unsigned)e.re_vers.low, (unsigned)e.re_vers.high, clnt_sperrno(st_prog));
	check(s.chunked_calls >= 1, "a Chunked call (Read chunk) was sent");
	check(s.long_calls >= 1, "a Long Call was sent");
	check(s.replies_long >= 1, "a Long Reply was received");
	printf("result                %s\n", failures ? "FAILED" : "all checks passed");

	free(block);
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	return failures ? 1 : 0;
}
