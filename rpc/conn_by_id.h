/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A server's connections by their CM id (conn_by_id.c): what a CM event
 * names is an id, and the server finds its connection in O(1) instead of
 * walking every poll group's list for each event (a storm of 4900
 * connects delivers some 15000 of them, docs/SCALE.md).
 *
 * A hash table of chains through the connections themselves
 * (rpc_xprt.by_id_next), so adding one never fails: when a larger bucket
 * array cannot be had, the chains grow longer instead.  The ids are keys
 * only, never dereferenced, so an event naming an id whose connection
 * is gone finds nothing.  The caller serializes (the server's
 * list_lock).
 */
#ifndef RPCRDMA_RPC_CONN_BY_ID_H
#define RPCRDMA_RPC_CONN_BY_ID_H

#include <stddef.h>

struct rpc_xprt;

struct rpc_conn_by_id {
	struct rpc_xprt **bucket;    /* nb chains, or &one when nb is 1 */
	struct rpc_xprt *one;
	size_t nb;                   /* a power of two */
	size_t n;                    /* connections in the table */
};

void rpcrdma_rpc_conn_by_id_init(struct rpc_conn_by_id *t);
void rpcrdma_rpc_conn_by_id_fini(struct rpc_conn_by_id *t);
/* x, under its key x->id (it must not be in the table already). */
void rpcrdma_rpc_conn_by_id_add(struct rpc_conn_by_id *t, struct rpc_xprt *x);
/* Takes x out, if it is in. */
void rpcrdma_rpc_conn_by_id_del(struct rpc_conn_by_id *t, struct rpc_xprt *x);
struct rpc_xprt *rpcrdma_rpc_conn_by_id_find(const struct rpc_conn_by_id *t,
					     const void *id);

#endif
