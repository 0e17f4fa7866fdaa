/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Requester role: marshal calls into Short / Chunked / Long messages
 * (RFC 8166 §3.5), offer Write and Reply chunks, match replies, account
 * credits (§3.3), invalidate before completing (§4.4.1).
 */
#include <stdlib.h>
#include <string.h>

#include "common/usdt.h"
#include "engine/engine_internal.h"
#include "wire/rpcrdma_hdr.h"
#include "wire/xdr.h"

static bool sent_as(const struct rpcrdma_engine *e,
		    const struct requester_slot *q,
		    uint32_t xid)
{
	return q->state == RQ_SENT && q->xid == xid && q->epoch == e->epoch;
}

struct requester_slot *rpcrdma_rq_find(const struct rpcrdma_engine *e,
				       uint32_t xid)
{
	uint32_t i = e->xid_map[xid & e->xid_mask];
	if (i < e->nrq && sent_as(e, &e->rq[i], xid))
		return &e->rq[i];
	/* A newer call took the entry (or a stray XID): look at all that
	 * were ever taken. */
	for (i = 0; i < e->rq_used; i++)
		if (sent_as(e, &e->rq[i], xid))
			return &e->rq[i];
	return NULL;
}

void rpcrdma_rq_put(struct rpcrdma_engine *e, struct requester_slot *q)
{
	q->state = RQ_FREE;
	e->rq_free[e->nrq_free++] = q->idx;
}

void rpcrdma_rq_release_mrs(struct rpcrdma_engine *e, struct requester_slot *q)
{
	for (uint32_t i = 0; i < q->nmr; i++) {
		/* A window never bound never had a valid rkey. */
		q->mr[i].invalidated = (q->mr_remote[i] && q->mr_dead[i]) ||
				       q->mr[i].bind_pending;
		e->mem.release(e->mem.ctx, &q->mr[i]);
	}
	q->nmr = 0;
}

/* The one way a call completes; reachable once per submission. */
static void complete_call(struct rpcrdma_engine *e, struct requester_slot *q,
			  int status)
{
	if (q->state != RQ_QUEUED && q->state != RQ_SENT &&
	    q->state != RQ_INVALIDATING)
		return;
	rpcrdma_credits_put(e, q);
	rpcrdma_rq_release_mrs(e, q);
	free(q->bounce);
	q->bounce = NULL;
	/* Reservations not posted come back (posted ones come back as the
	 * send queue completes them, send_queue.c). */
	e->sq_avail += q->sq_held;
	q->sq_held = 0;
	q->status = status;
	q->state = RQ_COMPLETE;
	e->ctr.calls_completed++;
	rpcrdma_ev_push(e, EVK_RQ, q->idx, 0);
}

int rpcrdma_engine_submit_call(struct rpcrdma_engine *e,
			       const struct rpcrdma_call_req *req,
			       uint32_t *xid, uint64_t now)
{
	(void)now;
	if (!req || !req->msg || !req->nmsg || req->nmsg > RPCRDMA_ENGINE_MAX_IOV ||
	    req->nresults > RPCRDMA_MAX_WRITE_CHUNKS ||
	    (req->nresults && !req->results) ||
	    (req->reply_max && !req->reply_buf) || req->reply_max > UINT32_MAX ||
	    req->msg[0].ddp || req->msg[0].len < 4 || !req->msg[0].base)
		return RPCRDMA_ERR_INVAL;
	uint64_t total = 0;
	for (unsigned i = 0; i < req->nmsg; i++) {
		const struct rpcrdma_iov *v = &req->msg[i];
		if ((!v->base && v->len) || (!v->ddp && (v->len & 3)) ||
		    v->len > UINT32_MAX)
			return RPCRDMA_ERR_INVAL;
		total += v->len + rpcrdma_xdr_pad(v->len);
	}
	for (unsigned i = 0; i < req->nresults; i++)
		if ((!req->results[i].base && req->results[i].len) ||
		    req->results[i].len > UINT32_MAX)
			return RPCRDMA_ERR_INVAL;
	if (total > UINT32_MAX)
		return RPCRDMA_ERR_INVAL;
	if (!e->nrq_free)
		return RPCRDMA_ERR_AGAIN;
	uint32_t slot = e->rq_free[--e->nrq_free];
	struct requester_slot *q = &e->rq[slot];
	if (!q->sbuf) /* never taken since create or reset */
		rpcrdma_rq_first_use(e, slot);
	q->req = *req;
	memcpy(q->msg, req->msg, req->nmsg * sizeof *q->msg);
	if (req->nresults)
		memcpy(q->results, req->results,
		       req->nresults * sizeof *q->results);
	q->req.msg = q->msg;
	q->req.results = q->results;
	q->xid = e->next_xid++;
	e->xid_map[q->xid & e->xid_mask] = q->idx;
	q->state = RQ_QUEUED;
	q->wait = WAIT_NONE;
	q->retransmit = false;
	q->retries = 0;
	q->nmr = 0;
	q->in_flight = false;
	q->sq_held = 0;
	q->inv_pending = 0;
	q->held_rbuf = RPCRDMA_NIL;
	q->status = 0;
	q->reply_len = 0;
	q->nresults = 0;
	q->vers_low = q->vers_high = 0;
	q->inv_handle = 0;
	q->shape = SHAPE_SHORT;
	q->offered_writes = 0;
	q->peer_err = 0;
	q->resend = false;
	q->recoveries = 0;
	q->force_long = false;
	q->force_reply = false;
	q->max_writes = UINT32_MAX;
	q->empty_mask = 0;
	q->want_bounce = false;
	q->cancelled = false;
	q->bounce = NULL;
	memset(q->result_len, 0, sizeof q->result_len);
	memset(q->pad, 0, sizeof q->pad);
	/* RFC 8166 §4.2.1: the RPC XID is the transport XID. */
	rpcrdma_be32_put(q->msg[0].base, q->xid);
	if (xid)
		*xid = q->xid;
	e->ctr.calls++;
	rpcrdma_rq_enqueue(e, q);
	rpcrdma_progress(e);
	return 0;
}

static void wait_on(struct rpcrdma_engine *e, struct requester_slot *q,
		    enum rpcrdma_rq_wait w)
{
	if (q->wait != w) {
		if (w == WAIT_CREDIT)
			e->ctr.credit_stalls++;
		else if (w == WAIT_MR)
			e->ctr.mr_stalls++;
	}
	q->wait = w;
	rpcrdma_rq_enqueue(e, q);
}

/* Register one range for remote access and describe it as a segment. */
static int reg_remote(struct rpcrdma_engine *e, struct requester_slot *q,
		      void *addr,
		      size_t len, unsigned access, struct rpcrdma_segment *seg)
{
	struct rpcrdma_engine_mr *mr = &q->mr[q->nmr];
	mr->bind_pending = false;
	int rc = e->mem.reg(e->mem.ctx, addr, len, access, mr);
	if (rc)
		return rc;
	if (mr->bind_pending && !e->mem.bind) {
		/* A window nobody can bind: its rkey would never be valid. */
		mr->invalidated = true;
		e->mem.release(e->mem.ctx, mr);
		return RPCRDMA_ERR_INVAL;
	}
	q->mr_remote[q->nmr] = true;
	q->mr_dead[q->nmr] = false;
	q->mr_linv[q->nmr] = false;
	q->nmr++;
	seg->handle = mr->rkey;
	seg->length = (uint32_t)len;
	seg->offset = mr->remote_addr;
	return 0;
}

/* Build the header (registering chunks) for the chosen shape.  Returns 0,
 * AGAIN, or another registration error; on error nothing stays held. */
static int marshal(struct rpcrdma_engine *e, struct requester_slot *q,
		   struct rpcrdma_v1_hdr *h, enum message_shape *shape,
		   size_t *inline_len)
{
	const struct rpcrdma_call_req *r = &q->req;
	uint64_t unreduced = 0, reduced = 0;
	unsigned nddp = 0;
	int rc;

	for (unsigned i = 0; i < r->nmsg; i++) {
		unreduced += r->msg[i].len + rpcrdma_xdr_pad(r->msg[i].len);
		if (r->msg[i].ddp && r->msg[i].len)
			nddp++;
		else
			reduced += r->msg[i].len + rpcrdma_xdr_pad(r->msg[i].len);
	}
	rpcrdma_v1_hdr_init(h);
	q->reply_offered = false;
	h->xid = q->xid;
	h->vers = RPCRDMA_VERSION_1;
	h->credit = e->cfg.max_calls; /* credits requested */
	h->proc = RPCRDMA_V1_MSG;
	q->inv_handle = 0;
	/* Draft §4.2.2: a server may send a reverse-direction call with
	 * chunks only to a client that said RDMA2_RVREQSUP_GENL. */
	bool inline_only = e->vers == RPCRDMA_VERSION_2 && !e->cfg.client &&
			   e->peer_brs != RPCRDMA_V2_RVREQSUP_GENL;

	/* Write list: one chunk per DDP-eligible result (§4.3.2); after an
	 * RDMA2_ERR_WRITE_CHUNKS no more than the peer takes, after
	 * RDMA2_ERR_WRITE_RESOURCE the short one offered empty (§4.3.2.3:
	 * its result comes inline). */
	uint32_t nw = r->nresults < q->max_writes ? r->nresults : q->max_writes;
	if (inline_only)
		nw = 0;
	for (unsigned i = 0; i < nw; i++) {
		struct rpcrdma_write_chunk *wc = &h->chunks.writes[i];
		wc->nsegs = 0;
		if (r->results[i].len && !(q->empty_mask & (1u << i))) {
			rc = reg_remote(e, q, r->results[i].base,
					r->results[i].len,
					RPCRDMA_ACCESS_REMOTE_WRITE |
						RPCRDMA_ACCESS_LOCAL_WRITE,
					&wc->segs[0]);
			if (rc)
				goto fail;
			wc->nsegs = 1;
		}
		q->off_w_nsegs[i] = (uint8_t)wc->nsegs;
		q->off_w[i] = wc->segs[0];
	}
	h->chunks.nwrites = nw;
	q->offered_writes = nw;
	/* Reply chunk (§4.3.3) when the largest reply may not fit: the
	 * reply header echoes our Write list, plus an absent Read list and
	 * Reply chunk.  A recovery may ask for one regardless. */
	h->chunks.has_reply = false;
	size_t reply_hdr = rpcrdma_hdr_size(e->vers, h);
	if (r->reply_max && !inline_only &&
	    (q->force_reply ||
	     (!r->reply_inline && reply_hdr + r->reply_max > e->thr.recv))) {
		rc = reg_remote(e, q, r->reply_buf, r->reply_max,
				RPCRDMA_ACCESS_REMOTE_WRITE |
					RPCRDMA_ACCESS_LOCAL_WRITE,
				&h->chunks.reply.segs[0]);
		if (rc)
			goto fail;
		h->chunks.reply.nsegs = 1;
		h->chunks.has_reply = true;
		q->reply_offered = true;
		q->off_reply = h->chunks.reply.segs[0];
	}

	if (!q->force_long && rpcrdma_hdr_size(e->vers,
	    h) + unreduced <= e->thr.send) {
		*shape = SHAPE_SHORT;
		*inline_len = (size_t)unreduced;
		return 0;
	}
	if (inline_only) {
		e->ctr.reverse_refused++;
		rc = RPCRDMA_ERR_PEER_NO_REVERSE;
		goto fail;
	}
	/* Chunked: each DDP-eligible argument into a Read chunk at its
	 * unreduced XDR position (§4.3.1.1), without roundup (§3.4.5.2). */
	if (nddp && !q->force_long) {
		size_t hsz = rpcrdma_hdr_size(e->vers, h) +
			     nddp * (4 + 4 + 16); /* discriminator + P + HLOO */
		if (hsz + reduced <= e->thr.send) {
			uint64_t pos = 0;
			uint32_t n = 0;
			for (unsigned i = 0; i < r->nmsg; i++) {
				const struct rpcrdma_iov *v = &r->msg[i];
				if (v->ddp && v->len) {
					struct rpcrdma_read_segment *rs =
						&h->chunks.reads[n++];
					rs->position = (uint32_t)pos;
					rc = reg_remote(e, q, v->base, v->len,
							RPCRDMA_ACCESS_REMOTE_READ,
							&rs->target);
					if (rc)
						goto fail;
					h->chunks.nreads = n;
				}
				pos += v->len + rpcrdma_xdr_pad(v->len);
			}
			*shape = SHAPE_CHUNKED;
			*inline_len = (size_t)reduced;
			return 0;
		}
	}
	/* Long Call: the whole Payload stream in a Position-Zero Read chunk
	 * (§3.5.3), padding included since it is an XDR stream. */
	h->proc = RPCRDMA_V1_NOMSG;
	uint32_t n = 0;
	struct rpcrdma_segment padseg = {0, 0, 0};
	if (q->bounce) {
		/* One segment over the contiguous copy (RDMA2_ERR_SEGMENTS
		 * recovery). */
		rc = reg_remote(e, q, q->bounce, (size_t)unreduced,
				RPCRDMA_ACCESS_REMOTE_READ,
				&h->chunks.reads[0].target);
		if (rc)
			goto fail;
		h->chunks.reads[0].position = 0;
		h->chunks.nreads = 1;
	}
	for (unsigned i = 0; i < r->nmsg && !q->bounce; i++) {
		const struct rpcrdma_iov *v = &r->msg[i];
		if (!v->len)
			continue;
		struct rpcrdma_read_segment *rs = &h->chunks.reads[n++];
		rs->position = 0;
		rc = reg_remote(e, q, v->base, v->len,
				RPCRDMA_ACCESS_REMOTE_READ,
				&rs->target);
		if (rc)
			goto fail;
		h->chunks.nreads = n;
		if (rpcrdma_xdr_pad(v->len)) {
			if (!padseg.length) {
				rc = reg_remote(e, q, q->pad, sizeof q->pad,
						RPCRDMA_ACCESS_REMOTE_READ,
						&padseg);
				if (rc)
					goto fail;
			}
			rs = &h->chunks.reads[n++];
			rs->position = 0;
			rs->target = padseg;
			rs->target.length = (uint32_t)rpcrdma_xdr_pad(v->len);
			h->chunks.nreads = n;
		}
	}
	if (rpcrdma_hdr_size(e->vers, h) > e->thr.send) {
		rc = RPCRDMA_ERR_NOSPACE;
		goto fail;
	}
	*shape = SHAPE_LONG;
	*inline_len = 0;
	return 0;
fail:
	rpcrdma_rq_release_mrs(e, q);
	return rc;
}

/* Upper bound of the send queue entries a call needs: its Send and, per
 * registration it may expose, a BIND_MW and a LOCAL_INV. */
static uint32_t sq_need(const struct requester_slot *q)
{
	return 1 + 2 * (q->req.nmsg * 2 + q->req.nresults + 1);
}

/* The windows q's registrations wait for (engine_mr.bind_pending). */
static uint32_t binds_of(const struct requester_slot *q)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < q->nmr; i++)
		n += q->mr[i].bind_pending;
	return n;
}

/* Queues q's BIND_MWs, unsignalled, ahead of its Send: a reliable
 * connection runs its send queue in order, so each rkey is valid before
 * the Send that advertises it reaches the peer.  The send queue entries
 * were reserved with the Send's, and the room in the work-request queue
 * checked (rpcrdma_wr_room). */
static void push_binds(struct rpcrdma_engine *e, struct requester_slot *q)
{
	for (uint32_t i = 0; i < q->nmr; i++) {
		struct rpcrdma_engine_mr *mr = &q->mr[i];
		if (!mr->bind_pending)
			continue;
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
		w->send.wr_id = rpcrdma_wr_id(e, WRK_RQ, WRO_BIND, q->idx);
		w->send.opcode = RPCRDMA_WR_BIND_MW;
		e->mem.bind(e->mem.ctx, mr, &w->send);
		mr->bind_pending = false;
	}
}

void rpcrdma_rq_run(struct rpcrdma_engine *e, struct requester_slot *q)
{
	if (q->state != RQ_QUEUED)
		return;
	if (q->cancelled) {
		complete_call(e, q, RPCRDMA_ERR_CANCELLED);
		return;
	}
	if (e->vers_failed) {
		complete_call(e, q, RPCRDMA_ERR_PEER_ERR_VERS);
		return;
	}
	/* §7: nothing but the v2 opener until the server answers it; a
	 * server sends nothing before it knows the client's version. */
	if (!e->connected || e->close_asked || !e->vers) {
		q->wait = WAIT_CONN;
		rpcrdma_rq_enqueue(e, q);
		return;
	}
	if (e->vers == RPCRDMA_VERSION_2 && !e->cfg.client &&
	    e->peer_brs == RPCRDMA_V2_RVREQSUP_NONE) {
		/* Draft §4.2.2: this client takes no reverse calls. */
		e->ctr.reverse_refused++;
		complete_call(e, q, RPCRDMA_ERR_PEER_NO_REVERSE);
		return;
	}
	if (q->want_bounce && !q->bounce) {
		size_t total = 0;
		for (unsigned i = 0; i < q->req.nmsg; i++)
			total += q->req.msg[i].len + rpcrdma_xdr_pad(q->req.msg[i].len);
		q->bounce = calloc(1, total ? total : 1);
		if (!q->bounce) {
			complete_call(e, q, RPCRDMA_ERR_NOMEM);
			return;
		}
	}
	/* §3.3.1: never more unacknowledged calls than granted. */
	if (!rpcrdma_credits_free(e)) {
		wait_on(e, q, WAIT_CREDIT);
		return;
	}
	/* sq_need() is an upper bound that may exceed the whole send queue;
	 * the exact need is known once the chunks are registered. */
	uint32_t need = sq_need(q);
	if (need > e->cfg.sq_depth)
		need = e->cfg.sq_depth;
	if (e->sq_avail < need) {
		wait_on(e, q, WAIT_SQ);
		return;
	}
	enum message_shape shape;
	size_t inl;
	/* RFC 8166 §4.2.1: the RPC XID is the transport XID (written again
	 * on every attempt: a resend keeps it, §4.5.5). */
	rpcrdma_be32_put(q->msg[0].base, q->xid);
	if (q->bounce) {
		uint8_t *b = q->bounce;
		for (unsigned i = 0; i < q->req.nmsg; i++) {
			const struct rpcrdma_iov *v = &q->req.msg[i];
			if (v->len)
				memcpy(b, v->base, v->len);
			b += v->len + rpcrdma_xdr_pad(v->len); /* calloc'd: pads are 0 */
		}
	}
	struct rpcrdma_v1_hdr hdr; /* on the stack: why in engine_internal.h */
	int rc = marshal(e, q, &hdr, &shape, &inl);
	if (rc == RPCRDMA_ERR_AGAIN) {
		wait_on(e, q, WAIT_MR);
		return;
	}
	if (rc) {
		complete_call(e, q, rc); /* §4.5.4: fails immediately */
		return;
	}
	/* The Send, its windows' binds, and one LOCAL_INV per registration
	 * at most.  A call that can never fit the send queue fails (§4.5.4)
	 * instead of waiting forever. */
	uint32_t nbind = binds_of(q);
	need = 1 + nbind + q->nmr;
	if (need > e->cfg.sq_depth) {
		rpcrdma_rq_release_mrs(e, q);
		complete_call(e, q, RPCRDMA_ERR_NOSPACE);
		return;
	}
	if (e->sq_avail < need) {
		rpcrdma_rq_release_mrs(e, q);
		wait_on(e, q, WAIT_SQ);
		return;
	}
	/* Draft §3.3: the one handle the Responder may invalidate. */
	q->inv_handle = rpcrdma_inv_for_call(e, &hdr.chunks);
	int hlen = rpcrdma_hdr_encode(q->sbuf, e->ssize, e->vers, &hdr, false,
				      q->inv_handle);
	if (hlen < 0 || (size_t)hlen + inl > e->thr.send ||
	    !rpcrdma_wr_room(e, nbind + 1)) {
		rpcrdma_rq_release_mrs(e, q);
		complete_call(e, q, hlen < 0 ? hlen : RPCRDMA_ERR_NOSPACE);
		return;
	}
	push_binds(e, q);
	struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
	uint8_t *p = q->sbuf + hlen;
	if (inl) {
		for (unsigned i = 0; i < q->req.nmsg; i++) {
			const struct rpcrdma_iov *v = &q->req.msg[i];
			if (shape == SHAPE_CHUNKED && v->ddp && v->len)
				continue; /* reduced, padding dropped too */
			if (v->len)
				memcpy(p, v->base, v->len);
			if (v->ddp)
				e->ctr.ddp_inline_tx += v->len;
			p += v->len;
			memset(p, 0, rpcrdma_xdr_pad(v->len));
			p += rpcrdma_xdr_pad(v->len);
		}
	}
	w->send.wr_id = rpcrdma_wr_id(e, WRK_RQ, WRO_SEND, q->idx);
	w->send.opcode = RPCRDMA_WR_SEND;
	/* Unsignalled: the reply says the Responder has it (send_queue.c). */
	w->send.send_flags = 0;
	w->send.num_sge = 1;
	w->sge[0].addr = rpcrdma_addr(q->sbuf);
	w->sge[0].length = (uint32_t)(p - q->sbuf);
	w->sge[0].lkey = e->arena_mr.lkey;
	e->sq_avail -= need;
	q->sq_held = q->nmr; /* the LOCAL_INVs to come */
	rpcrdma_credits_take(e, q);
	q->epoch = e->epoch;
	q->state = RQ_SENT;
	q->wait = WAIT_NONE;
	q->shape = shape;
	if (q->retransmit) {
		e->ctr.retransmissions++;
		q->retransmit = false;
	}
	if (shape == SHAPE_SHORT)
		e->ctr.short_calls++;
	else if (shape == SHAPE_CHUNKED)
		e->ctr.chunked_calls++;
	else
		e->ctr.long_calls++;
	/* xprtrdma_marshal: XID, header and Send lengths, the call's shape
	 * and whether Write chunks / a Reply chunk went with it. */
	RPCRDMA_PROBE6(call_marshal, q->xid, hlen, w->sge[0].length,
		       shape == SHAPE_SHORT ? 0 : shape == SHAPE_CHUNKED ? 1 : 2,
		       q->offered_writes, q->reply_offered);
}

/* Send the call again, same XID, reshaped by the recovery flags (draft
 * §5.3.3); its registrations are dead (invalidated) by now. */
static void requeue(struct rpcrdma_engine *e, struct requester_slot *q)
{
	rpcrdma_rq_release_mrs(e, q);
	e->sq_avail += q->sq_held;
	q->sq_held = 0;
	q->resend = false;
	q->state = RQ_QUEUED;
	q->wait = WAIT_NONE;
	e->ctr.recoveries++;
	rpcrdma_rq_enqueue(e, q);
}

/* Copy an inline reply out and complete. */
static void finish(struct rpcrdma_engine *e, struct requester_slot *q)
{
	if (q->resend && !q->cancelled) {
		requeue(e, q);
		return;
	}
	if (q->held_rbuf != RPCRDMA_NIL) {
		const uint8_t *src = rpcrdma_rbuf_ptr(e, q->held_rbuf) +
				     q->held_off;
		if (q->reply_len)
			memcpy(q->req.reply_buf, src, q->reply_len);
		rpcrdma_recv_put(e, q->held_rbuf);
		q->held_rbuf = RPCRDMA_NIL;
	}
	complete_call(e, q, q->status);
}

/* A returned chunk against the noff segments offered for it: "The
 * Responder MUST copy the segment count and all segments from the
 * Requester-provided Write chunk", updating only the lengths (RFC 8166
 * §3.4.6; §4.3.3 for the Reply chunk).  So no more segments than
 * offered, each with the handle and offset offered and no longer.  A
 * chunk returned with fewer segments (an old Responder leaving an unused
 * chunk empty) carries less data, never data nobody could write. */
static bool same_segments(const struct rpcrdma_write_chunk *got,
			  const struct rpcrdma_segment *off, uint32_t noff)
{
	if (got->nsegs > noff)
		return false;
	for (uint32_t j = 0; j < got->nsegs; j++)
		if (got->segs[j].handle != off[j].handle ||
		    got->segs[j].offset != off[j].offset ||
		    got->segs[j].length > off[j].length)
			return false;
	return true;
}

/* Check the returned Write list and Reply chunk against what the attempt
 * being answered offered, not what the caller asked for: a v2 recovery
 * resends with fewer Write chunks (RDMA2_ERR_WRITE_CHUNKS), or with one
 * empty (RDMA2_ERR_WRITE_RESOURCE, RFC 8166 §4.3.2.3: "MUST return an
 * empty Write chunk in that Write list position"), and the handles of
 * the earlier attempt are invalidated.  More Write chunks than offered,
 * a segment not offered, or one longer than offered is a header error
 * the Requester MUST silently discard (§4.5; draft §5.3.3); accepting it
 * would complete the call with result bytes nobody wrote. */
static bool check_chunks(const struct requester_slot *q,
			 const struct rpcrdma_chunk_lists *cl)
{
	if (cl->nwrites > q->offered_writes)
		return false;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		if (!same_segments(&cl->writes[i], &q->off_w[i],
				   q->off_w_nsegs[i]))
			return false;
	return !cl->has_reply ||
	       same_segments(&cl->reply, &q->off_reply,
			     q->reply_offered ? 1 : 0);
}

/* What an RDMA_ERROR / RDMA2_ERROR means for call q (draft §5.3.3):
 * a status to complete with, or 0 with q reshaped and *resend set. */
static int error_outcome(const struct rpcrdma_engine *e,
			 struct requester_slot *q,
			 const struct rpcrdma_v2_error *er, bool *resend)
{
	*resend = false;
	/* These two come after the Responder ran the call: resending runs it
	 * again ("MAY ... send the request again"), so only on request. */
	if ((er->code == RPCRDMA_V2_ERR_WRITE_RESOURCE ||
	     er->code == RPCRDMA_V2_ERR_REPLY_RESOURCE) &&
	    !e->cfg.resend_after_reply)
		return RPCRDMA_ERR_PEER_ERR_RESOURCE;
	switch (er->code) {
	case RPCRDMA_V2_ERR_VERS:
		return RPCRDMA_ERR_PEER_ERR_VERS;
	case RPCRDMA_V2_ERR_BAD_XDR: /* = v1 ERR_CHUNK */
		return RPCRDMA_ERR_PEER_ERR_CHUNK;
	case RPCRDMA_V2_ERR_SYSTEM: /* "a permanent error" */
		return RPCRDMA_ERR_PEER_ERR_SYSTEM;
	case RPCRDMA_V2_ERR_READ_CHUNKS:
		/* "SHOULD resend the request using a Position-Zero Read
		 * chunk"; a Long Call that fails so "MUST terminate". */
		if (q->shape != SHAPE_CHUNKED)
			return RPCRDMA_ERR_PEER_ERR_RESOURCE;
		q->force_long = true;
		break;
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
		/* Fewer Write chunks; the other results come inline, so a
		 * Reply chunk goes along. */
		if (er->max_chunks >= q->offered_writes || !q->req.reply_max)
			return RPCRDMA_ERR_PEER_ERR_RESOURCE;
		q->max_writes = er->max_chunks;
		q->force_reply = true;
		break;
	case RPCRDMA_V2_ERR_SEGMENTS:
		/* Our chunks have one segment each except a Long Call's
		 * Position-Zero chunk: send it from one contiguous copy. */
		if (!er->max_segments || q->want_bounce)
			return RPCRDMA_ERR_PEER_ERR_RESOURCE;
		q->want_bounce = true;
		q->force_long = true;
		break;
	case RPCRDMA_V2_ERR_WRITE_RESOURCE: {
		/* Our chunk is as large as the caller's buffer; "more reply
		 * resources" is that result inline, through a Reply chunk. */
		uint32_t i = er->chunk_index;
		if (!i || i > q->offered_writes || i > 32 ||
		    (q->empty_mask & (1u << (i - 1))) || !q->req.reply_max)
			return RPCRDMA_ERR_PEER_ERR_RESOURCE;
		q->empty_mask |= 1u << (i - 1);
		q->force_reply = true;
		break;
	}
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		/* A Reply chunk of the caller's whole reply buffer, if that
		 * is enough and we did not offer it already. */
		if (q->reply_offered || !q->req.reply_max ||
		    er->length_needed > q->req.reply_max)
			return RPCRDMA_ERR_PEER_ERR_RESOURCE;
		q->force_reply = true;
		break;
	default: /* INVAL_HTYPE, unknown codes */
		return RPCRDMA_ERR_PEER_ERROR;
	}
	/* Bounded: each recovery changes the shape one way only. */
	if (q->recoveries >= 4)
		return RPCRDMA_ERR_PEER_ERR_RESOURCE;
	q->recoveries++;
	*resend = true;
	return 0;
}

bool rpcrdma_rq_reply(struct rpcrdma_engine *e, const struct rx_view *v,
		      uint32_t rbuf_idx, const uint8_t *msg, size_t len,
		      bool with_inv, uint32_t inv_rkey)
{
	struct requester_slot *q = rpcrdma_rq_find(e, v->xid);
	if (!q) {
		e->ctr.bad_replies++;
		return false;
	}
	/* Before anything else: the handle is dead even if the reply is
	 * discarded (invalidation.c). */
	if (with_inv)
		rpcrdma_inv_remote(e, q, inv_rkey);
	int status = 0;
	size_t reply_len = 0;
	bool offered_reply = q->reply_offered;
	bool resend = false;
	const struct rpcrdma_chunk_lists *cl = v->cl;

	switch (v->proc) {
	case RPCRDMA_V1_ERROR:
		/* §4.5: completes the transaction with this XID, unless a
		 * v2 recovery sends it again. */
		if (v->err.code == RPCRDMA_V1_ERR_VERS)
			e->ctr.err_vers_recv++;
		else if (v->err.code == RPCRDMA_V1_ERR_CHUNK)
			e->ctr.err_chunk_recv++;
		if (v->err.code < 10)
			e->ctr.v2_err_recv[v->err.code]++;
		q->peer_err = v->err.code;
		RPCRDMA_PROBE3(err_recv, v->xid, v->vers, v->err.code);
		if (v->vers == RPCRDMA_VERSION_1) {
			status = v->err.code == RPCRDMA_V1_ERR_VERS
					 ? RPCRDMA_ERR_PEER_ERR_VERS
					 : RPCRDMA_ERR_PEER_ERR_CHUNK;
		} else {
			status = error_outcome(e, q, &v->err, &resend);
		}
		break;
	case RPCRDMA_V1_MSG:
		/* §4.3.1: Responders leave the Read list empty; an inline
		 * reply returns no Reply chunk data (§4.3.3). */
		if (cl->nreads || !check_chunks(q, cl) ||
		    (cl->has_reply && rpcrdma_write_chunk_len(&cl->reply))) {
			e->ctr.bad_replies++;
			return false; /* §4.5: silently discarded */
		}
		if (len > q->req.reply_max) {
			/* A sound reply larger than the memory the call set
			 * aside for it (its reply_max, §6.2): the call fails
			 * now with that reason rather than time out. */
			status = RPCRDMA_ERR_REPLY_TOO_BIG;
			e->ctr.bad_replies++;
			break;
		}
		reply_len = len;
		e->ctr.replies_inline++;
		break;
	case RPCRDMA_V1_NOMSG:
		/* Long Reply (§3.5.3): the Payload stream is in our Reply
		 * chunk; its returned length is the reply's. */
		if (!cl->has_reply || !offered_reply || cl->nreads ||
		    !check_chunks(q, cl) ||
		    rpcrdma_write_chunk_len(&cl->reply) > q->req.reply_max) {
			e->ctr.bad_replies++;
			return false;
		}
		reply_len = (size_t)rpcrdma_write_chunk_len(&cl->reply);
		e->ctr.replies_long++;
		break;
	default:
		e->ctr.bad_replies++;
		return false;
	}

	/* Draft §5.3.3: an RDMA2_ERROR's credit field is ignored. */
	if (v->vers == RPCRDMA_VERSION_1 || v->proc != RPCRDMA_V1_ERROR)
		rpcrdma_credits_grant(e, v->credit);
	/* xprtrdma_reply: XID, the credits granted, the reply's shape
	 * (0 inline, 2 Long through the Reply chunk, 3 RDMA_ERROR). */
	RPCRDMA_PROBE4(reply, v->xid, v->credit,
		       v->proc == RPCRDMA_V1_NOMSG ? 2
		       : v->proc == RPCRDMA_V1_ERROR ? 3 : 0,
		       (uint32_t)reply_len);
	rpcrdma_credits_put(e, q);
	/* The Responder answered, so it received our Send: the send buffer
	 * may be reused (a resend, the slot's next call) whether or not the
	 * Send's completion, unsignalled, has come (send_queue.c). */
	q->status = status;
	q->resend = resend;
	q->msgp = v->msgp;
	q->reply_len = reply_len;
	bool is_err = v->proc == RPCRDMA_V1_ERROR;
	q->nresults = is_err ? 0 : q->req.nresults;
	memset(q->result_len, 0, sizeof q->result_len);
	if (!is_err)
		for (uint32_t i = 0; i < cl->nwrites; i++)
			q->result_len[i] = (size_t)rpcrdma_write_chunk_len(&cl->writes[i]);
	if (is_err && v->err.code == RPCRDMA_V1_ERR_VERS) {
		q->vers_low = v->err.vers_low;
		q->vers_high = v->err.vers_high;
	}

	/* Every exposed handle the peer did not invalidate is invalidated
	 * here before the call completes (§4.4.1). */
	rpcrdma_inv_exposed(e, q);
	/* Give back the entries reserved for invalidations not needed. */
	e->sq_avail += q->sq_held;
	q->sq_held = 0;
	bool hold = false;
	if (v->proc == RPCRDMA_V1_MSG && reply_len) {
		q->held_rbuf = rbuf_idx;
		q->held_off = (size_t)(msg - rpcrdma_rbuf_ptr(e, rbuf_idx));
		hold = true;
	}
	if (q->inv_pending) {
		q->state = RQ_INVALIDATING;
	} else {
		finish(e, q);
	}
	return hold;
}

void rpcrdma_rq_wc(struct rpcrdma_engine *e, struct requester_slot *q,
		   enum wr_op op,
		   const struct rpcrdma_wc *wc)
{
	(void)wc;
	switch (op) {
	case WRO_LINV:
		if (!q->inv_pending || --q->inv_pending)
			break;
		rpcrdma_inv_local_done(q);
		if (q->state == RQ_INVALIDATING)
			finish(e, q);
		else if (q->state == RQ_SENT && q->cancelled)
			rpcrdma_ev_push(e, EVK_RQ_RELEASED, q->idx, 0);
		break;
	default:
		break;
	}
}

void rpcrdma_rq_conn_lost(struct rpcrdma_engine *e, struct requester_slot *q)
{
	q->sq_held = 0;
	q->in_flight = false;
	switch (q->state) {
	case RQ_SENT:
		rpcrdma_rq_release_mrs(e, q);
		q->inv_pending = 0;
		if (q->cancelled) {
			complete_call(e, q, RPCRDMA_ERR_CANCELLED);
		} else if (q->retries < e->cfg.max_retries) {
			q->retries++;
			q->retransmit = true;
			q->state = RQ_QUEUED;
			q->wait = WAIT_CONN;
			rpcrdma_rq_enqueue(e, q);
		} else {
			complete_call(e, q, RPCRDMA_ERR_DISCONNECTED);
		}
		break;
	case RQ_INVALIDATING:
		/* The reply arrived; the dead QP protects the memory now. */
		q->inv_pending = 0;
		finish(e, q);
		break;
	default:
		break;
	}
}

/* Every call waiting to be sent completes with status. */
void rpcrdma_rq_fail_queued(struct rpcrdma_engine *e, int status)
{
	/* Empty the FIFO first: a completed slot may be reused and queued
	 * again before the old links would be walked. */
	uint32_t i = pending_take(&e->rq_pending);
	while (i != RPCRDMA_NIL) {
		struct requester_slot *q = &e->rq[i];
		i = q->next;
		q->next = RPCRDMA_NIL;
		complete_call(e, q, status);
	}
	for (uint32_t k = 0; k < e->rq_used; k++)
		if (e->rq[k].state == RQ_QUEUED) /* none should be left */
			complete_call(e, &e->rq[k], status);
}

int rpcrdma_engine_cancel_call(struct rpcrdma_engine *e, uint32_t xid,
			       uint64_t now)
{
	(void)now;
	struct requester_slot *q = NULL;
	for (uint32_t i = 0; i < e->rq_used && !q; i++)
		if (e->rq[i].xid == xid &&
		    (e->rq[i].state == RQ_QUEUED || e->rq[i].state == RQ_SENT ||
		     e->rq[i].state == RQ_INVALIDATING))
			q = &e->rq[i];
	if (!q)
		return RPCRDMA_ERR_NOENT;
	q->cancelled = true;
	if (q->state == RQ_QUEUED) {
		/* Holds nothing (a failed attempt releases what it took):
		 * it completes on this pass of the pending queue. */
		rpcrdma_progress(e);
		return 0;
	}
	if (q->state == RQ_INVALIDATING)
		return RPCRDMA_ERR_AGAIN; /* CALL_DONE follows */
	rpcrdma_inv_exposed(e, q);
	if (!e->cfg.local_inv) {
		/* Deregistration is the invalidation: done right here. */
		rpcrdma_rq_release_mrs(e, q);
		return 0;
	}
	return q->inv_pending ? RPCRDMA_ERR_AGAIN : 0;
}
