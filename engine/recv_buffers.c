/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Receive buffers (RFC 8166 §3.3.1, RFC 8167 §4.3).
 *
 * A Send can only land in a receive posted before it arrives, so a
 * Responder keeps posted at least as many receives as the credits it
 * grants (RFC 8166 §3.3.1), and a Requester one for the reply of each
 * call it has outstanding (RFC 8167 §4.3: with reverse-direction calls
 * both roles share the connection's receives).  The engine keeps
 * recv_target = grant + max_calls posted while connected (the grant:
 * credits, or less while the connection uses less, below).  A Requester
 * slot may hold the buffer of an inline reply while its call's
 * LOCAL_INVs complete, so there are max_calls more buffers for those
 * (rpcrdma_engine_create sizes them, in the front of the arena).  Every
 * buffer is always exactly one of: free (recv_free, a stack), posted
 * (recv_posted, a ring in posting order) or held by a call
 * (requester_slot.held_rbuf).
 */
#include "engine/engine_internal.h"

void rpcrdma_recv_init(struct rpcrdma_engine *e)
{
	e->rbufs = e->arena;
	/* Lowest buffers first, as a scan would have given them. */
	for (uint32_t i = 0; i < e->nrbuf; i++)
		e->recv_free[e->nrecv_free++] = e->nrbuf - 1 - i;
}

void rpcrdma_recv_put(struct rpcrdma_engine *e, uint32_t idx)
{
	e->recv_free[e->nrecv_free++] = idx;
}

void rpcrdma_recv_refill(struct rpcrdma_engine *e)
{
	while (e->connected && e->nrecv_posted < e->recv_target &&
	       e->nrecv_free) {
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
		if (!w)
			return;
		uint32_t idx = e->recv_free[--e->nrecv_free];
		w->is_recv = true;
		w->recv.wr_id = rpcrdma_wr_id(e, WRK_RECV, WRO_RECV, idx);
		w->recv.num_sge = 1;
		w->sge[0].addr = rpcrdma_addr(rpcrdma_rbuf_ptr(e, idx));
		w->sge[0].length = e->rsize;
		w->sge[0].lkey = e->arena_mr.lkey;
		uint32_t at = (e->recv_posted_head + e->nrecv_posted++) %
			      e->nrbuf;
		e->recv_posted[at] = idx;
	}
	/* RFC 8166 §3.3.1: every credit granted is backed by a posted
	 * receive.  The buffers and the work-request queue are sized so that
	 * the refill always reaches its target; if it ever fell short, the
	 * next replies would grant receives that are not there, and the
	 * peer's Send into none is fatal to the connection anyway: close
	 * now, with the reason. */
	if (e->connected && e->nrecv_posted < e->recv_target)
		rpcrdma_ask_close(e, RPCRDMA_ERR_OVERFLOW);
}

/* Receives complete in posting order on a reliable connection; any order
 * is tolerated anyway. */
bool rpcrdma_recv_unpost(struct rpcrdma_engine *e, uint32_t idx)
{
	for (uint32_t i = 0; i < e->nrecv_posted; i++) {
		uint32_t at = (e->recv_posted_head + i) % e->nrbuf;
		if (e->recv_posted[at] != idx)
			continue;
		for (uint32_t j = i; j > 0; j--) {
			uint32_t to = (e->recv_posted_head + j) % e->nrbuf;
			uint32_t from = (e->recv_posted_head + j - 1) % e->nrbuf;
			e->recv_posted[to] = e->recv_posted[from];
		}
		e->recv_posted_head = (e->recv_posted_head + 1) % e->nrbuf;
		e->nrecv_posted--;
		return true;
	}
	return false;
}

void rpcrdma_recv_conn_lost(struct rpcrdma_engine *e)
{
	while (e->nrecv_posted) {
		rpcrdma_recv_put(e, e->recv_posted[e->recv_posted_head]);
		e->recv_posted_head = (e->recv_posted_head + 1) % e->nrbuf;
		e->nrecv_posted--;
	}
	e->recv_posted_head = 0;
}

uint32_t rpcrdma_recv_grant(const struct rpcrdma_engine *e)
{
	/* Every receive the grant counts on is posted before the Send that
	 * carries it: recv_target follows the grant, the refill ends every
	 * input, and the driver posts receives before sends. */
	return e->grant;
}

/*
 * The grant adapts to the connection's use (docs/SCALE.md, "Shared
 * receives and credits").  A connection starts at credits_start, and
 * posts that many receives for calls (beside max_calls for the replies
 * of its own calls): an idle connection does not hold the work requests
 * and queue entries of the whole grant.  When a call arrives with every
 * credit of the grant in use (the peer has as many calls unanswered as
 * it may), the grant doubles, up to credits.  The receives are posted at
 * the end of that input, before the Send of any reply that carries the
 * larger grant, so a grant is never more than posted receives back (RFC
 * 8166 §3.3.1).  It never shrinks on a connection: the receives posted
 * stay posted (a receive queue cannot take one back), so a smaller grant
 * would save nothing until receives are shared between connections.
 */
void rpcrdma_recv_grant_reset(struct rpcrdma_engine *e)
{
	uint32_t g = e->cfg.credits_start;
	e->grant = g && g < e->cfg.credits ? g : e->cfg.credits;
	e->recv_target = e->grant + e->cfg.max_calls;
}

void rpcrdma_recv_grant_used(struct rpcrdma_engine *e)
{
	if (e->rs_open < e->grant || e->grant >= e->cfg.credits)
		return;
	e->grant = e->grant > e->cfg.credits / 2 ? e->cfg.credits
						 : 2 * e->grant;
	e->recv_target = e->grant + e->cfg.max_calls;
	e->ctr.grant_raised++;
}
