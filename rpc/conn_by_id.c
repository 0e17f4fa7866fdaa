/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A server's connections by their CM id: see conn_by_id.h.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rpc/conn_by_id.h"
#include "rpc/rpc_internal.h"

/* Chains of about two on average before the array doubles; it halves
 * when they fall under one in eight, so that closing thousands of
 * connections gives the array back too (issue 24's memory after close). */
#define BY_ID_GROW_LOAD 2
#define BY_ID_SHRINK_LOAD 8
#define BY_ID_MIN 16

static size_t slot(const void *id, size_t nb)
{
	/* Fibonacci hashing of the address: the low bits of allocations
	 * are mostly zero, the product's high ones are not. */
	uint64_t h = (uint64_t)(uintptr_t)id * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (nb - 1);
}

void rpcrdma_rpc_conn_by_id_init(struct rpc_conn_by_id *t)
{
	t->one = NULL;
	t->bucket = &t->one;
	t->nb = 1;
	t->n = 0;
}

void rpcrdma_rpc_conn_by_id_fini(struct rpc_conn_by_id *t)
{
	if (t->bucket != &t->one)
		free(t->bucket);
	rpcrdma_rpc_conn_by_id_init(t);
}

/* Moves every chain to an array of nb buckets; keeps the old array
 * (longer chains, still right) when the new one cannot be had. */
static void resize(struct rpc_conn_by_id *t, size_t nb)
{
	struct rpc_xprt **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < t->nb; i++) {
		struct rpc_xprt *x = t->bucket[i];
		while (x) {
			struct rpc_xprt *next = x->by_id_next;
			size_t k = slot(x->id, nb);
			x->by_id_next = b[k];
			b[k] = x;
			x = next;
		}
	}
	if (t->bucket != &t->one)
		free(t->bucket);
	t->one = NULL;
	t->bucket = b;
	t->nb = nb;
}

void rpcrdma_rpc_conn_by_id_add(struct rpc_conn_by_id *t, struct rpc_xprt *x)
{
	if (t->n + 1 > t->nb * BY_ID_GROW_LOAD)
		resize(t, t->nb < BY_ID_MIN ? BY_ID_MIN : t->nb * 2);
	size_t k = slot(x->id, t->nb);
	x->by_id_next = t->bucket[k];
	t->bucket[k] = x;
	t->n++;
}

void rpcrdma_rpc_conn_by_id_del(struct rpc_conn_by_id *t, struct rpc_xprt *x)
{
	struct rpc_xprt **pp = &t->bucket[slot(x->id, t->nb)];
	while (*pp && *pp != x)
		pp = &(*pp)->by_id_next;
	if (!*pp)
		return;
	*pp = x->by_id_next;
	x->by_id_next = NULL;
	t->n--;
	if (t->nb > BY_ID_MIN && t->n < t->nb / BY_ID_SHRINK_LOAD)
		resize(t, t->nb / 2);
	else if (t->n == 0 && t->bucket != &t->one)
		rpcrdma_rpc_conn_by_id_fini(t);
}

struct rpc_xprt *rpcrdma_rpc_conn_by_id_find(const struct rpc_conn_by_id *t,
					     const void *id)
{
	struct rpc_xprt *x = t->bucket[slot(id, t->nb)];
	while (x && (const void *)x->id != id)
		x = x->by_id_next;
	return x;
}
