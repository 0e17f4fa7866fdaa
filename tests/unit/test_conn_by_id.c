/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A server's table of connections by CM id (rpc/conn_by_id.c): every
 * connection added is found by its id and by nothing else, through the
 * table's growth and shrinking; one taken out is not found; the bucket
 * array grows with the connections and goes when they do.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rpc/conn_by_id.h"
#include "rpc/rpc_internal.h"
#include "test.h"

#define N 5000

/* Ids are only keys: addresses in an array stand for the providers'
 * cm_id allocations, 64 bytes apart as theirs are at least. */
static char ids[N + 1][64];

static void all_found(const struct rpc_conn_by_id *t, struct rpc_xprt *x,
		      unsigned n, unsigned step, unsigned first)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < n; i++) {
		bool in = i >= first && (i - first) % step == 0;
		struct rpc_xprt *f = rpcrdma_rpc_conn_by_id_find(t, ids[i]);
		if (f != (in ? &x[i] : NULL))
			bad++;
	}
	CHECK_EQ(bad, 0u);
}

int main(void)
{
	struct rpc_xprt *x = calloc(N, sizeof(*x));
	CHECK(x != NULL);
	if (!x)
		TEST_MAIN_END();
	struct rpc_conn_by_id t;
	rpcrdma_rpc_conn_by_id_init(&t);
	CHECK(rpcrdma_rpc_conn_by_id_find(&t, ids[0]) == NULL);

	size_t nb_max = 0;
	for (unsigned i = 0; i < N; i++) {
		x[i].id = (struct rpcrdma_cm_id *)(void *)ids[i];
		rpcrdma_rpc_conn_by_id_add(&t, &x[i]);
		if (t.nb > nb_max)
			nb_max = t.nb;
		/* Chains stay short: the array keeps up with the count. */
		if (t.n > 2 * t.nb) {
			CHECK(t.n <= 2 * t.nb);
			break;
		}
	}
	CHECK_EQ(t.n, (size_t)N);
	CHECK(nb_max >= N / 2);
	all_found(&t, x, N, 1, 0);
	CHECK(rpcrdma_rpc_conn_by_id_find(&t, ids[N]) == NULL);

	/* Every odd one out: the others are still found, those are not. */
	for (unsigned i = 1; i < N; i += 2)
		rpcrdma_rpc_conn_by_id_del(&t, &x[i]);
	CHECK_EQ(t.n, (size_t)N / 2);
	all_found(&t, x, N, 2, 0);
	/* Taking out one that is not in changes nothing. */
	rpcrdma_rpc_conn_by_id_del(&t, &x[1]);
	CHECK_EQ(t.n, (size_t)N / 2);
	all_found(&t, x, N, 2, 0);

	/* All but the last: the array shrinks as they go. */
	for (unsigned i = 0; i < N - 2; i += 2)
		rpcrdma_rpc_conn_by_id_del(&t, &x[i]);
	CHECK_EQ(t.n, (size_t)1);
	CHECK(t.nb <= 16);
	all_found(&t, x, N, N, N - 2);
	rpcrdma_rpc_conn_by_id_del(&t, &x[N - 2]);
	CHECK_EQ(t.n, (size_t)0);
	/* Empty: no array left (the inline bucket). */
	CHECK(t.bucket == &t.one && t.nb == 1);
	CHECK(rpcrdma_rpc_conn_by_id_find(&t, ids[N - 2]) == NULL);

	/* Used again after emptying. */
	rpcrdma_rpc_conn_by_id_add(&t, &x[7]);
	CHECK(rpcrdma_rpc_conn_by_id_find(&t, ids[7]) == &x[7]);
	rpcrdma_rpc_conn_by_id_fini(&t);
	CHECK(rpcrdma_rpc_conn_by_id_find(&t, ids[7]) == NULL);
	free(x);
	TEST_MAIN_END();
}
