/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * An unchanged rpcgen program (bigres.x) with results of 0 .. 4 MiB -- an
 * opaque, an int array and a linked list (READDIR-like) -- arguments as
 * large, and callbacks both ways as large, with no Upper-Layer Binding:
 * clnt_rdma_create / svc_rdma_create + svc_run() and nothing else.
 *
 *   test_bigres HOST        (127.0.0.1; in the lab 192.0.2.1, verbs)
 *
 * Checks: every result and argument arrives byte-exact at every size
 * (RFC 8166 §3.5.3: Long Calls and Long Replies); small calls make no
 * memory registration once the connection is up (its reply region is
 * registered once: rpc/reply_region.c); the handler of each call runs
 * exactly once; calls from several threads at once come through (one
 * borrows the reply region, the others get their own); a result over
 * max_msg fails that call cleanly and the connection goes on.  Server and client run in this one process.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "bigres.h"
#include "test.h"

#define NODE_DATA 4096u

static atomic_uint handler_runs;

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

static size_t bad_at(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return i;
	return SIZE_MAX;
}

static int ival(uint32_t seed, size_t i)
{
	return (int)(seed * 2654435761u + (uint32_t)i * 40503u);
}

static u_int fnv1a(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static bool blob_make(bigres_blob *b, u_int size, uint32_t seed)
{
	b->bigres_blob_len = size;
	b->bigres_blob_val = malloc(size ? size : 1);
	if (!b->bigres_blob_val)
		return false;
	fill((uint8_t *)b->bigres_blob_val, size, seed);
	return true;
}

/* ---------------------------------------------------------------------
 * The server's procedures (rpcgen -M signatures)
 */
bool_t bigres_opaque_1_svc(bigres_size *a, bigres_blob *r, struct svc_req *rq)
{
	(void)rq;
	atomic_fetch_add(&handler_runs, 1);
	return blob_make(r, a->size, a->seed);
}

bool_t bigres_array_1_svc(bigres_size *a, bigres_ints *r, struct svc_req *rq)
{
	(void)rq;
	atomic_fetch_add(&handler_runs, 1);
	u_int n = a->size / 4;
	r->bigres_ints_len = n;
	r->bigres_ints_val = malloc(n ? n * sizeof(int) : 1);
	if (!r->bigres_ints_val)
		return FALSE;
	for (u_int i = 0; i < n; i++)
		r->bigres_ints_val[i] = ival(a->seed, i);
	return TRUE;
}

bool_t bigres_list_1_svc(bigres_size *a, bigres_list *r, struct svc_req *rq)
{
	(void)rq;
	atomic_fetch_add(&handler_runs, 1);
	*r = NULL;
	bigres_list *tail = r;
	for (u_int off = 0; off < a->size; off += NODE_DATA) {
		u_int k = a->size - off < NODE_DATA ? a->size - off : NODE_DATA;
		struct bigres_node *n = calloc(1, sizeof(*n));
		if (!n)
			return FALSE;
		*tail = n;
		tail = &n->next;
		n->data.data_len = k;
		n->data.data_val = malloc(k);
		if (!n->data.data_val)
			return FALSE;
		for (u_int i = 0; i < k; i++)
			n->data.data_val[i] = (char)pat(a->seed, off + i);
	}
	return TRUE;
}

bool_t bigres_put_1_svc(bigres_blob *a, u_int *r, struct svc_req *rq)
{
	(void)rq;
	atomic_fetch_add(&handler_runs, 1);
	*r = fnv1a(a->bigres_blob_val, a->bigres_blob_len);
	return TRUE;
}

bool_t bigres_echo_1_svc(bigres_blob *a, bigres_blob *r, struct svc_req *rq)
{
	(void)rq;
	atomic_fetch_add(&handler_runs, 1);
	r->bigres_blob_len = a->bigres_blob_len;
	r->bigres_blob_val = malloc(a->bigres_blob_len ? a->bigres_blob_len : 1);
	if (!r->bigres_blob_val)
		return FALSE;
	if (a->bigres_blob_len)
		memcpy(r->bigres_blob_val, a->bigres_blob_val, a->bigres_blob_len);
	return TRUE;
}

/* Reverse direction (RFC 8167), both ways large, on the caller's own
 * connection: 0 when both came through, else which part failed. */
bool_t bigres_callback_1_svc(bigres_size *a, u_int *r, struct svc_req *rq)
{
	atomic_fetch_add(&handler_runs, 1);
	*r = 1;
	CLIENT *cb = svc_rdma_callback_client(rq, BIGRES_CB, BIGRES_CB_V1);
	if (!cb)
		return TRUE;
	bigres_blob res = {0, NULL};
	if (bigres_cb_opaque_1(a, &res, cb) != RPC_SUCCESS) {
		clnt_perror(cb, "test_bigres: callback BIGRES_CB_OPAQUE");
		*r = 2;
	} else if (res.bigres_blob_len != a->size ||
		   bad_at((uint8_t *)res.bigres_blob_val, a->size, a->seed) !=
			   SIZE_MAX) {
		*r = 3;
	} else {
		bigres_blob arg;
		u_int sum = 0;
		if (!blob_make(&arg, a->size, a->seed + 1)) {
			*r = 4;
		} else if (bigres_cb_put_1(&arg, &sum, cb) != RPC_SUCCESS) {
			clnt_perror(cb, "test_bigres: callback BIGRES_CB_PUT");
			*r = 5;
		} else {
			*r = sum == fnv1a(arg.bigres_blob_val, a->size) ? 0 : 6;
		}
		if (arg.bigres_blob_val)
			free(arg.bigres_blob_val);
	}
	xdr_free((xdrproc_t)xdr_bigres_blob, (char *)&res);
	clnt_destroy(cb);
	return TRUE;
}

int bigres_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	xdr_free(xdr_result, result);
	return 1;
}

/* The client's callback procedures. */
bool_t bigres_cb_opaque_1_svc(bigres_size *a, bigres_blob *r,
			      struct svc_req *rq)
{
	(void)rq;
	return blob_make(r, a->size, a->seed);
}

bool_t bigres_cb_put_1_svc(bigres_blob *a, u_int *r, struct svc_req *rq)
{
	(void)rq;
	*r = fnv1a(a->bigres_blob_val, a->bigres_blob_len);
	return TRUE;
}

int bigres_cb_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	xdr_free(xdr_result, result);
	return 1;
}

void bigres_1(struct svc_req *rqstp, SVCXPRT *transp);    /* rpcgen's */
void bigres_cb_1(struct svc_req *rqstp, SVCXPRT *transp); /* rpcgen's */

static void *serve(void *arg)
{
	(void)arg;
	svc_run();
	return NULL;
}

/* ---------------------------------------------------------------------
 * The client
 */
static CLIENT *C;

/* One call's status, checked; true on RPC_SUCCESS. */
static bool ok(enum clnt_stat st, const char *what)
{
	if (st != RPC_SUCCESS)
		clnt_perror(C, what);
	CHECK_EQ(st, RPC_SUCCESS);
	return st == RPC_SUCCESS;
}

static void check_opaque(u_int size, uint32_t seed)
{
	bigres_size a = {size, seed};
	bigres_blob r = {0, NULL};
	enum clnt_stat st = bigres_opaque_1(&a, &r, C);
	ok(st, "BIGRES_OPAQUE");
	CHECK_EQ(r.bigres_blob_len, size);
	if (st == RPC_SUCCESS && r.bigres_blob_len == size)
		CHECK_EQ(bad_at((uint8_t *)r.bigres_blob_val, size, seed),
			 SIZE_MAX);
	clnt_freeres(C, (xdrproc_t)xdr_bigres_blob, (char *)&r);
}

static void check_array(u_int size, uint32_t seed)
{
	bigres_size a = {size, seed};
	bigres_ints r = {0, NULL};
	enum clnt_stat st = bigres_array_1(&a, &r, C);
	ok(st, "BIGRES_ARRAY");
	CHECK_EQ(r.bigres_ints_len, size / 4);
	u_int bad = 0;
	for (u_int i = 0; st == RPC_SUCCESS && i < r.bigres_ints_len; i++)
		bad += r.bigres_ints_val[i] != ival(seed, i);
	CHECK_EQ(bad, 0);
	clnt_freeres(C, (xdrproc_t)xdr_bigres_ints, (char *)&r);
}

static void check_list(u_int size, uint32_t seed)
{
	bigres_size a = {size, seed};
	bigres_list r = NULL;
	enum clnt_stat st = bigres_list_1(&a, &r, C);
	ok(st, "BIGRES_LIST");
	size_t off = 0, bad = 0;
	for (struct bigres_node *n = r; n; n = n->next) {
		for (u_int i = 0; i < n->data.data_len; i++)
			bad += (uint8_t)n->data.data_val[i] != pat(seed, off + i);
		off += n->data.data_len;
	}
	CHECK_EQ(off, size);
	CHECK_EQ(bad, 0);
	clnt_freeres(C, (xdrproc_t)xdr_bigres_list, (char *)&r);
}

static void check_put_echo(u_int size, uint32_t seed)
{
	bigres_blob a;
	if (!blob_make(&a, size, seed)) {
		CHECK(!"out of memory");
		return;
	}
	u_int sum = 0;
	enum clnt_stat st = bigres_put_1(&a, &sum, C);
	ok(st, "BIGRES_PUT");
	CHECK_EQ(sum, fnv1a(a.bigres_blob_val, size));
	bigres_blob r = {0, NULL};
	st = bigres_echo_1(&a, &r, C);
	ok(st, "BIGRES_ECHO");
	CHECK_EQ(r.bigres_blob_len, size);
	if (st == RPC_SUCCESS && r.bigres_blob_len == size)
		CHECK_EQ(bad_at((uint8_t *)r.bigres_blob_val, size, seed),
			 SIZE_MAX);
	clnt_freeres(C, (xdrproc_t)xdr_bigres_blob, (char *)&r);
	free(a.bigres_blob_val);
}

static void check_callback(u_int size, uint32_t seed)
{
	bigres_size a = {size, seed};
	u_int r = 99;
	enum clnt_stat st = bigres_callback_1(&a, &r, C);
	ok(st, "BIGRES_CALLBACK");
	if (r)
		fprintf(stderr, "callback of %u bytes: step %u failed\n", size, r);
	CHECK_EQ(r, 0);
}

/* Calls at once on one connection: one borrows the reply region, the
 * others get memory of their own for their Reply chunk (reply_region.c);
 * every result still byte-exact. */
#define NTHREADS 4
static atomic_uint conc_bad;

static void *concurrent(void *arg)
{
	uint32_t k = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < 8; i++) {
		bigres_size a = {(64u << 10) << ((i + k) % 5), k * 100 + i};
		bigres_blob r = {0, NULL};
		if (bigres_opaque_1(&a, &r, C) != RPC_SUCCESS ||
		    r.bigres_blob_len != a.size ||
		    bad_at((uint8_t *)r.bigres_blob_val, a.size, a.seed) !=
			    SIZE_MAX)
			atomic_fetch_add(&conc_bad, 1);
		clnt_freeres(C, (xdrproc_t)xdr_bigres_blob, (char *)&r);
	}
	return NULL;
}

static void check_concurrent(void)
{
	pthread_t t[NTHREADS];
	for (uintptr_t k = 0; k < NTHREADS; k++)
		pthread_create(&t[k], NULL, concurrent, (void *)k);
	for (int k = 0; k < NTHREADS; k++)
		pthread_join(t[k], NULL);
	CHECK_EQ(atomic_load(&conc_bad), 0);
}

static struct rpcrdma_stats stats(void)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof s);
	CHECK(clnt_rdma_stats(C, &s));
	return s;
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	char addr[96];
	snprintf(addr, sizeof addr, "%s:0", host);
	SVCXPRT *x = svc_rdma_create(addr, NULL);
	if (!x) {
		clnt_pcreateerror("test_bigres: svc_rdma_create");
		return 1;
	}
	CHECK(svc_register(x, BIGRES, BIGRES_V1, bigres_1, 0));
	pthread_t t;
	pthread_create(&t, NULL, serve, NULL);
	pthread_detach(t);

	snprintf(addr, sizeof addr, "%s:%u", host, svc_rdma_port(x));
	C = clnt_rdma_create(addr, BIGRES, BIGRES_V1, NULL);
	if (!C) {
		clnt_pcreateerror("test_bigres: clnt_rdma_create");
		return 1;
	}
	CHECK(clnt_rdma_register_callback(C, BIGRES_CB, BIGRES_CB_V1,
					  bigres_cb_1));

	/* The first call sets the connection up (its reply region); from
	 * then on small calls register nothing. */
	check_opaque(100, 1);
	struct rpcrdma_stats s0 = stats();
	for (unsigned i = 0; i < 20; i++) {
		check_opaque(100 + i, i);
		check_array(64, i);
		check_list(200, i);
		check_put_echo(100, i);
	}
	struct rpcrdma_stats s1 = stats();
	printf("small calls: %llu registrations in %llu calls\n",
	       (unsigned long long)(s1.registrations - s0.registrations),
	       (unsigned long long)(s1.calls - s0.calls));
	CHECK_EQ(s1.registrations, s0.registrations);
	CHECK_EQ(s1.calls - s0.calls, 100);

	static const u_int sizes[] = {0, 1, 3, 4096, 65536, 262144, 262148,
				      1u << 20, 2u << 20, 4u << 20};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		u_int n = sizes[i];
		uint32_t seed = 1000 + (uint32_t)i;
		atomic_store(&handler_runs, 0);
		check_opaque(n, seed);
		check_array(n, seed);
		check_list(n, seed);
		check_put_echo(n, seed);
		check_callback(n, seed);
		/* Exactly one run per call, never a second to get a reply
		 * through. */
		CHECK_EQ(atomic_load(&handler_runs), 6);
		printf("%8u bytes: opaque, array, list, put, echo, callback\n", n);
		fflush(stdout);
	}
	check_concurrent();
	printf("%d threads at once on one connection\n", NTHREADS);
	struct rpcrdma_stats s2 = stats();
	CHECK(s2.replies_long > s1.replies_long); /* Long Replies */
	CHECK(s2.long_calls > s1.long_calls);     /* Long Calls */

	/* A result over max_msg (4 MiB + 64 KiB with the reply header):
	 * a clean error for that call, handled once; the connection goes
	 * on. */
	atomic_store(&handler_runs, 0);
	bigres_size big = {(4u << 20) + (64u << 10), 7};
	bigres_blob r = {0, NULL};
	enum clnt_stat st = bigres_opaque_1(&big, &r, C);
	/* "Unable to receive; errno = Message too long" */
	CHECK_EQ(st, RPC_CANTRECV);
	struct rpc_err e;
	clnt_geterr(C, &e);
	CHECK_EQ(e.re_errno, EMSGSIZE);
	CHECK_EQ(atomic_load(&handler_runs), 1);
	clnt_freeres(C, (xdrproc_t)xdr_bigres_blob, (char *)&r);
	check_opaque(4096, 8);

	clnt_destroy(C);
	TEST_MAIN_END();
}
