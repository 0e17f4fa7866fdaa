/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Invalidation: the handles (rkeys) a call exposes die before the call
 * completes (RFC 8166 §4.4.1), so that neither the Responder nor anyone
 * who learned them can reach the Requester's memory afterwards.
 *
 *  - Remote invalidation: the Responder may kill one handle with its
 *    reply's Send With Invalidate.  In version 1 it chooses among the
 *    call's handles, when the Requester said in its private data that it
 *    takes remote invalidation (RFC 8797 §4.1); in version 2 the
 *    Requester names the one handle (rdma_inv_handle, draft §3.3), and
 *    the Responder may invalidate that one only, which must be one of
 *    the call's.
 *  - Local invalidation: every exposed handle the peer did not
 *    invalidate gets a LOCAL_INV, in send queue entries reserved with the
 *    call's Send; the call completes when the last one has.  Without
 *    LOCAL_INV (cfg.local_inv false), releasing the registration
 *    (deregistration) is the invalidation.
 */
#include "engine/engine_internal.h"

/* The one handle a reply may invalidate: the first Write chunk's, else
 * the Reply chunk's, else the first Read segment's (the registration the
 * Requester is most likely still to hold when the reply lands). */
static bool pick(const struct rpcrdma_chunk_lists *cl, uint32_t *rkey)
{
	for (uint32_t i = 0; i < cl->nwrites; i++)
		if (cl->writes[i].nsegs) {
			*rkey = cl->writes[i].segs[0].handle;
			return true;
		}
	if (cl->has_reply && cl->reply.nsegs) {
		*rkey = cl->reply.segs[0].handle;
		return true;
	}
	if (cl->nreads) {
		*rkey = cl->reads[0].target.handle;
		return true;
	}
	return false;
}

uint32_t rpcrdma_inv_for_call(const struct rpcrdma_engine *e,
			      const struct rpcrdma_chunk_lists *cl)
{
	uint32_t rkey;
	/* Draft §3.3: name the one handle the Responder may invalidate. */
	if (e->vers == RPCRDMA_VERSION_2 && e->cfg.remote_inv && pick(cl,
	    &rkey))
		return rkey;
	return 0;
}

bool rpcrdma_inv_named(const struct rpcrdma_chunk_lists *cl, uint32_t h)
{
	for (uint32_t i = 0; i < cl->nreads; i++)
		if (cl->reads[i].target.handle == h)
			return true;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++)
			if (cl->writes[i].segs[j].handle == h)
				return true;
	if (cl->has_reply)
		for (uint32_t j = 0; j < cl->reply.nsegs; j++)
			if (cl->reply.segs[j].handle == h)
				return true;
	return false;
}

bool rpcrdma_inv_for_reply(const struct rpcrdma_engine *e,
			   const struct responder_slot *s, uint32_t *rkey)
{
	if (s->vers == RPCRDMA_VERSION_2) {
		/* Draft §3.3, §8.4: exactly the handle the call named. */
		*rkey = s->inv_handle;
		return *rkey && e->cfg.remote_inv;
	}
	/* RFC 8797 §4.1: the peer said it takes remote invalidation; pick
	 * one of the call's handles. */
	return e->thr.send_with_inv && pick(&s->cl, rkey);
}

void rpcrdma_inv_remote(struct rpcrdma_engine *e, struct requester_slot *q,
			uint32_t inv_rkey)
{
	/* RFC 8797 §4.1 / RFC 5040 §5.3: a Send With Invalidate killed the
	 * handle before its receive completed, whatever the message says:
	 * it must never be invalidated again (a LOCAL_INV on it would fail
	 * and take the connection down), even if the reply is discarded. */
	for (uint32_t i = 0; i < q->nmr; i++) {
		if (!q->mr_remote[i] || q->mr_dead[i] ||
		    q->mr[i].rkey != inv_rkey)
			continue;
		q->mr_dead[i] = true;
		e->ctr.remote_invs++;
	}
}

/* §4.4.1: every handle q exposed that is not dead yet (the peer's Send
 * With Invalidate killed one) is invalidated: a LOCAL_INV each, in the
 * send queue entries reserved with the call's Send, or, without
 * LOCAL_INV, by the deregistration in rpcrdma_rq_release_mrs.  Handles
 * covered by LOCAL_INVs already out (a cancelled call's, inv_pending)
 * are not invalidated twice. */
void rpcrdma_inv_exposed(struct rpcrdma_engine *e, struct requester_slot *q)
{
	uint32_t posted_rkeys[RPCRDMA_RQ_MAX_MR];
	uint32_t nposted = 0;
	for (uint32_t i = 0; i < q->nmr; i++) {
		if (!q->mr_remote[i] || q->mr_dead[i] || q->mr_linv[i])
			continue;
		bool dup = false; /* the pad may back several segments */
		for (uint32_t j = 0; j < nposted; j++)
			if (posted_rkeys[j] == q->mr[i].rkey)
				dup = true;
		q->mr_linv[i] = e->cfg.local_inv;
		if (dup)
			continue;
		posted_rkeys[nposted++] = q->mr[i].rkey;
		e->ctr.local_invs++;
		if (!e->cfg.local_inv)
			continue; /* deregistered when released */
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
		if (!w) {
			rpcrdma_ask_close(e, RPCRDMA_ERR_NOSPACE);
			break;
		}
		w->send.wr_id = rpcrdma_wr_id(e, WRK_RQ, WRO_LINV, q->idx);
		w->send.opcode = RPCRDMA_WR_LOCAL_INV;
		w->send.send_flags = RPCRDMA_SEND_SIGNALED;
		w->send.invalidate_rkey = q->mr[i].rkey;
		q->inv_pending++;
		if (q->sq_held)
			q->sq_held--; /* reserved at the Send, posted now */
		else if (e->sq_avail)
			e->sq_avail--;
	}
}

void rpcrdma_inv_local_done(struct requester_slot *q)
{
	/* Every LOCAL_INV of the call completed (in order: the last one's
	 * completion is the last to come). */
	for (uint32_t i = 0; i < q->nmr; i++)
		if (q->mr_linv[i])
			q->mr_dead[i] = true;
}
