/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Credits (RFC 8166 §3.3): the Requester's side of flow control.
 *
 * The Responder grants a number of calls that may be outstanding in each
 * reply (rdma_credit); the Requester never has more unanswered calls than
 * the last grant (§3.3.1).  Until the first reply of a connection only one
 * call may go (§3.3.3).  Linux practice, followed here: a grant of 0 counts
 * as 1 (0 would stop the connection for good), and a grant above what we
 * can use (our max_calls, the credits we asked for) is clamped.
 */
#include "engine/engine_internal.h"

void rpcrdma_credits_reset(struct rpcrdma_engine *e)
{
	e->granted = 1;
	e->in_flight = 0;
}

void rpcrdma_credits_grant(struct rpcrdma_engine *e, uint32_t credit)
{
	uint32_t g = credit ? credit : 1;
	e->granted = g > e->cfg.max_calls ? e->cfg.max_calls : g;
}

bool rpcrdma_credits_free(const struct rpcrdma_engine *e)
{
	return e->in_flight < e->granted;
}

void rpcrdma_credits_take(struct rpcrdma_engine *e, struct requester_slot *q)
{
	if (q->in_flight)
		return;
	q->in_flight = true;
	e->in_flight++;
}

void rpcrdma_credits_put(struct rpcrdma_engine *e, struct requester_slot *q)
{
	if (!q->in_flight)
		return;
	q->in_flight = false;
	if (e->in_flight)
		e->in_flight--;
}
