/*
 * Requester role: marshal calls into Short / Chunked / Long messages
 * (RFC 8166 §3.5), offer Write and Reply chunks, match replies, account
 * credits (§3.3), invalidate before completing (§4.4.1).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "wire/xdr.h"

static size_t pad4(size_t n)
{
	return (4 - (n & 3)) & 3;
}

struct rq *rpcrdma_rq_find(struct rpcrdma_engine *e, uint32_t xid)
{
	for (uint32_t i = 0; i < e->nrq; i++)
		if (e->rq[i].state == RQ_SENT && e->rq[i].xid == xid &&
		    e->rq[i].epoch == e->epoch)
			return &e->rq[i];
	return NULL;
}

void rpcrdma_rq_release_mrs(struct rpcrdma_engine *e, struct rq *q)
{
	for (uint32_t i = 0; i < q->nmr; i++)
		e->mem.release(e->mem.ctx, &q->mr[i]);
	q->nmr = 0;
}

static void maybe_free(struct rq *q)
{
	if (q->state == RQ_COMPLETE && !q->event_pending && !q->send_pending)
		q->state = RQ_FREE;
}

/* The one way a call completes; reachable once per submission. */
static void complete_call(struct rpcrdma_engine *e, struct rq *q, int status)
{
	if (q->state != RQ_QUEUED && q->state != RQ_SENT &&
	    q->state != RQ_INVALIDATING)
		return;
	if (q->in_flight) {
		q->in_flight = false;
		if (e->in_flight)
			e->in_flight--;
	}
	rpcrdma_rq_release_mrs(e, q);
	/* Return the reservation except the pending Send's own entry. */
	uint32_t keep = q->send_pending ? 1 : 0;
	if (q->sq_held > keep) {
		e->sq_avail += q->sq_held - keep;
		q->sq_held = keep;
	}
	q->status = status;
	q->state = RQ_COMPLETE;
	q->event_pending = true;
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
		total += v->len + pad4(v->len);
	}
	for (unsigned i = 0; i < req->nresults; i++)
		if ((!req->results[i].base && req->results[i].len) ||
		    req->results[i].len > UINT32_MAX)
			return RPCRDMA_ERR_INVAL;
	if (total > UINT32_MAX)
		return RPCRDMA_ERR_INVAL;
	struct rq *q = NULL;
	for (uint32_t i = 0; i < e->nrq; i++)
		if (e->rq[i].state == RQ_FREE) {
			q = &e->rq[i];
			break;
		}
	if (!q)
		return RPCRDMA_ERR_AGAIN;
	q->req = *req;
	memcpy(q->msg, req->msg, req->nmsg * sizeof *q->msg);
	if (req->nresults)
		memcpy(q->results, req->results,
		       req->nresults * sizeof *q->results);
	q->req.msg = q->msg;
	q->req.results = q->results;
	q->xid = e->next_xid++;
	q->state = RQ_QUEUED;
	q->wait = WAIT_NONE;
	q->retransmit = false;
	q->retries = 0;
	q->nmr = 0;
	q->in_flight = false;
	q->send_pending = false;
	q->event_pending = false;
	q->sq_held = 0;
	q->inv_pending = 0;
	q->held_rbuf = RPCRDMA_NIL;
	q->status = 0;
	q->reply_len = 0;
	q->nresults = 0;
	q->vers_low = q->vers_high = 0;
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

static void wait_on(struct rpcrdma_engine *e, struct rq *q,
		    enum rpcrdma_rq_wait w)
{
	if (q->wait != w) {
		if (w == WAIT_CREDIT)
			e->ctr.credit_stalls++;
		else if (w == WAIT_MR)
			e->ctr.mr_stalls++;
		else if (w == WAIT_SQ)
			e->ctr.sq_stalls++;
	}
	q->wait = w;
	rpcrdma_rq_enqueue(e, q);
}

/* Register one range for remote access and describe it as a segment. */
static int reg_remote(struct rpcrdma_engine *e, struct rq *q, void *addr,
		      size_t len, unsigned access, struct rpcrdma_segment *seg)
{
	struct rpcrdma_engine_mr *mr = &q->mr[q->nmr];
	int rc = e->mem.reg(e->mem.ctx, addr, len, access, mr);
	if (rc)
		return rc;
	q->mr_remote[q->nmr] = true;
	q->mr_dead[q->nmr] = false;
	q->nmr++;
	seg->handle = mr->rkey;
	seg->length = (uint32_t)len;
	seg->offset = mr->remote_addr;
	return 0;
}

enum shape { SHAPE_SHORT, SHAPE_CHUNKED, SHAPE_LONG };

/* Build the header (registering chunks) for the chosen shape.  Returns 0,
 * AGAIN, or another registration error; on error nothing stays held. */
static int marshal(struct rpcrdma_engine *e, struct rq *q, enum shape *shape,
		   size_t *inline_len)
{
	struct rpcrdma_v1_hdr *h = &e->tx_hdr;
	const struct rpcrdma_call_req *r = &q->req;
	uint64_t unreduced = 0, reduced = 0;
	unsigned nddp = 0;
	int rc;

	for (unsigned i = 0; i < r->nmsg; i++) {
		unreduced += r->msg[i].len + pad4(r->msg[i].len);
		if (r->msg[i].ddp && r->msg[i].len)
			nddp++;
		else
			reduced += r->msg[i].len + pad4(r->msg[i].len);
	}
	rpcrdma_v1_hdr_init(h);
	q->reply_offered = false;
	h->xid = q->xid;
	h->vers = RPCRDMA_VERSION_1;
	h->credit = e->cfg.max_calls; /* credits requested */
	h->proc = RPCRDMA_V1_MSG;

	/* Write list: one chunk per DDP-eligible result (§4.3.2). */
	for (unsigned i = 0; i < r->nresults; i++) {
		struct rpcrdma_write_chunk *wc = &h->chunks.writes[i];
		wc->nsegs = 0;
		if (r->results[i].len) {
			rc = reg_remote(e, q, r->results[i].base, r->results[i].len,
					RPCRDMA_ACCESS_REMOTE_WRITE |
						RPCRDMA_ACCESS_LOCAL_WRITE,
					&wc->segs[0]);
			if (rc)
				goto fail;
			wc->nsegs = 1;
		}
	}
	h->chunks.nwrites = r->nresults;
	/* Reply chunk (§4.3.3) when the largest reply may not fit: the
	 * reply header echoes our Write list, plus an absent Read list and
	 * Reply chunk. */
	h->chunks.has_reply = false;
	size_t reply_hdr = rpcrdma_v1_size(h);
	if (r->reply_max && reply_hdr + r->reply_max > e->thr.recv) {
		rc = reg_remote(e, q, r->reply_buf, r->reply_max,
				RPCRDMA_ACCESS_REMOTE_WRITE |
					RPCRDMA_ACCESS_LOCAL_WRITE,
				&h->chunks.reply.segs[0]);
		if (rc)
			goto fail;
		h->chunks.reply.nsegs = 1;
		h->chunks.has_reply = true;
		q->reply_offered = true;
	}

	if (rpcrdma_v1_size(h) + unreduced <= e->thr.send) {
		*shape = SHAPE_SHORT;
		*inline_len = (size_t)unreduced;
		return 0;
	}
	/* Chunked: each DDP-eligible argument into a Read chunk at its
	 * unreduced XDR position (§4.3.1.1), without roundup (§3.4.5.2). */
	if (nddp) {
		size_t hsz = rpcrdma_v1_size(h) +
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
				pos += v->len + pad4(v->len);
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
	for (unsigned i = 0; i < r->nmsg; i++) {
		const struct rpcrdma_iov *v = &r->msg[i];
		if (!v->len)
			continue;
		struct rpcrdma_read_segment *rs = &h->chunks.reads[n++];
		rs->position = 0;
		rc = reg_remote(e, q, v->base, v->len, RPCRDMA_ACCESS_REMOTE_READ,
				&rs->target);
		if (rc)
			goto fail;
		h->chunks.nreads = n;
		if (pad4(v->len)) {
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
			rs->target.length = (uint32_t)pad4(v->len);
			h->chunks.nreads = n;
		}
	}
	if (rpcrdma_v1_size(h) > e->thr.send) {
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

/* Upper bound of the send queue entries a call needs: its Send and one
 * LOCAL_INV per registration it may expose. */
static uint32_t sq_need(const struct rq *q)
{
	return 1 + q->req.nmsg * 2 + q->req.nresults + 1;
}

void rpcrdma_rq_run(struct rpcrdma_engine *e, struct rq *q)
{
	if (q->state != RQ_QUEUED)
		return;
	if (!e->connected || e->close_asked) {
		q->wait = WAIT_CONN;
		rpcrdma_rq_enqueue(e, q);
		return;
	}
	/* §3.3.1: never more unacknowledged calls than granted. */
	if (e->in_flight >= e->granted) {
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
	enum shape shape;
	size_t inl;
	/* RFC 8166 §4.2.1: the RPC XID is the transport XID (written again
	 * on every attempt: a resend keeps it, §4.5.5). */
	rpcrdma_be32_put(q->msg[0].base, q->xid);
	int rc = marshal(e, q, &shape, &inl);
	if (rc == RPCRDMA_ERR_AGAIN) {
		wait_on(e, q, WAIT_MR);
		return;
	}
	if (rc) {
		complete_call(e, q, rc); /* §4.5.4: fails immediately */
		return;
	}
	/* The Send plus one LOCAL_INV per registration at most.  A call
	 * that can never fit the send queue fails (§4.5.4) instead of
	 * waiting forever. */
	need = 1 + q->nmr;
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
	struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
	int hlen = w ? rpcrdma_v1_encode(q->sbuf, e->ssize, &e->tx_hdr)
		     : RPCRDMA_ERR_NOSPACE;
	if (hlen < 0 || (size_t)hlen + inl > e->thr.send) {
		if (w)
			e->wrq_count--;
		rpcrdma_rq_release_mrs(e, q);
		complete_call(e, q, hlen < 0 ? hlen : RPCRDMA_ERR_NOSPACE);
		return;
	}
	uint8_t *p = q->sbuf + hlen;
	if (inl) {
		for (unsigned i = 0; i < q->req.nmsg; i++) {
			const struct rpcrdma_iov *v = &q->req.msg[i];
			if (shape == SHAPE_CHUNKED && v->ddp && v->len)
				continue; /* reduced, padding dropped too */
			if (v->len)
				memcpy(p, v->base, v->len);
			p += v->len;
			memset(p, 0, pad4(v->len));
			p += pad4(v->len);
		}
	}
	w->send.wr_id = rpcrdma_wr_id(e, WRK_RQ, WRO_SEND, q->idx);
	w->send.opcode = RPCRDMA_WR_SEND;
	w->send.send_flags = RPCRDMA_SEND_SIGNALED;
	w->send.num_sge = 1;
	w->sge[0].addr = rpcrdma_arena_addr(e, q->sbuf);
	w->sge[0].length = (uint32_t)(p - q->sbuf);
	w->sge[0].lkey = e->arena_mr.lkey;
	e->sq_avail -= need;
	q->sq_held = need;
	q->send_pending = true;
	q->in_flight = true;
	e->in_flight++;
	q->epoch = e->epoch;
	q->state = RQ_SENT;
	q->wait = WAIT_NONE;
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
}

/* Copy an inline reply out and complete. */
static void finish(struct rpcrdma_engine *e, struct rq *q)
{
	if (q->held_rbuf != RPCRDMA_NIL) {
		const uint8_t *src = e->rbufs + (size_t)q->held_rbuf * e->rsize +
				     q->held_off;
		if (q->reply_len)
			memcpy(q->req.reply_buf, src, q->reply_len);
		rpcrdma_rbuf_release(e, q->held_rbuf);
		q->held_rbuf = RPCRDMA_NIL;
	}
	complete_call(e, q, q->status);
}

static uint64_t chunk_len(const struct rpcrdma_write_chunk *c)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < c->nsegs; i++)
		t += c->segs[i].length;
	return t;
}

/* Check the returned Write list against what we offered (§3.4.6,
 * §4.3.2.2-3): no more chunks, each no longer than offered. */
static bool check_writes(const struct rq *q, const struct rpcrdma_chunk_lists *cl)
{
	if (cl->nwrites > q->req.nresults)
		return false;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		if (chunk_len(&cl->writes[i]) > q->req.results[i].len)
			return false;
	return true;
}

bool rpcrdma_rq_reply(struct rpcrdma_engine *e, const struct rpcrdma_v1_hdr *h,
		      uint32_t rbuf_idx, const uint8_t *msg, size_t len,
		      bool with_inv, uint32_t inv_rkey)
{
	struct rq *q = rpcrdma_rq_find(e, h->xid);
	if (!q) {
		e->ctr.bad_replies++;
		return false;
	}
	int status = 0;
	size_t reply_len = 0;
	bool offered_reply = q->reply_offered;

	switch (h->proc) {
	case RPCRDMA_V1_ERROR:
		/* §4.5: completes the transaction with this XID. */
		if (h->err == RPCRDMA_V1_ERR_VERS) {
			status = RPCRDMA_ERR_PEER_ERR_VERS;
			e->ctr.err_vers_recv++;
		} else {
			status = RPCRDMA_ERR_PEER_ERR_CHUNK;
			e->ctr.err_chunk_recv++;
		}
		break;
	case RPCRDMA_V1_MSG:
		/* §4.3.1: Responders leave the Read list empty; an inline
		 * reply returns no Reply chunk data (§4.3.3). */
		if (h->chunks.nreads || !check_writes(q, &h->chunks) ||
		    (h->chunks.has_reply && chunk_len(&h->chunks.reply)) ||
		    len > q->req.reply_max) {
			e->ctr.bad_replies++;
			return false; /* §4.5: silently discarded */
		}
		reply_len = len;
		e->ctr.replies_inline++;
		break;
	case RPCRDMA_V1_NOMSG:
		/* Long Reply (§3.5.3): the Payload stream is in our Reply
		 * chunk; its returned length is the reply's. */
		if (!h->chunks.has_reply || !offered_reply ||
		    !check_writes(q, &h->chunks) ||
		    chunk_len(&h->chunks.reply) > q->req.reply_max) {
			e->ctr.bad_replies++;
			return false;
		}
		reply_len = (size_t)chunk_len(&h->chunks.reply);
		e->ctr.replies_long++;
		break;
	default:
		e->ctr.bad_replies++;
		return false;
	}

	/* §3.3.1 and Linux practice: a grant of 0 counts as 1 (0 would
	 * deadlock); a grant above what we can use is clamped. */
	uint32_t g = h->credit ? h->credit : 1;
	e->granted = g > e->cfg.max_calls ? e->cfg.max_calls : g;
	if (q->in_flight) {
		q->in_flight = false;
		e->in_flight--;
	}
	q->status = status;
	q->reply_len = reply_len;
	q->nresults = status ? 0 : q->req.nresults;
	memset(q->result_len, 0, sizeof q->result_len);
	if (!status)
		for (uint32_t i = 0; i < h->chunks.nwrites; i++)
			q->result_len[i] = (size_t)chunk_len(&h->chunks.writes[i]);
	if (h->proc == RPCRDMA_V1_ERROR && h->err == RPCRDMA_V1_ERR_VERS) {
		q->vers_low = h->vers_low;
		q->vers_high = h->vers_high;
	}

	/* Remote invalidation (RFC 8797 §4.1) killed one handle; every
	 * other exposed handle is invalidated here before the call
	 * completes (§4.4.1). */
	for (uint32_t i = 0; i < q->nmr; i++) {
		if (!q->mr_remote[i] || q->mr_dead[i])
			continue;
		if (with_inv && q->mr[i].rkey == inv_rkey) {
			q->mr_dead[i] = true;
			e->ctr.remote_invs++;
			continue;
		}
	}
	q->inv_pending = 0;
	uint32_t posted_rkeys[RPCRDMA_RQ_MAX_MR];
	uint32_t nposted = 0;
	for (uint32_t i = 0; i < q->nmr; i++) {
		if (!q->mr_remote[i] || q->mr_dead[i])
			continue;
		bool dup = false; /* the pad may back several segments */
		for (uint32_t j = 0; j < nposted; j++)
			if (posted_rkeys[j] == q->mr[i].rkey)
				dup = true;
		if (dup)
			continue;
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
		if (!w) {
			rpcrdma_ask_close(e, RPCRDMA_ERR_NOSPACE);
			break;
		}
		posted_rkeys[nposted++] = q->mr[i].rkey;
		w->send.wr_id = rpcrdma_wr_id(e, WRK_RQ, WRO_LINV, q->idx);
		w->send.opcode = RPCRDMA_WR_LOCAL_INV;
		w->send.send_flags = RPCRDMA_SEND_SIGNALED;
		w->send.invalidate_rkey = q->mr[i].rkey;
		q->inv_pending++;
		e->ctr.local_invs++;
	}
	/* Give back the send queue entries reserved for invalidations not
	 * needed (the Send's own entry stays until its completion). */
	uint32_t keep = q->inv_pending + (q->send_pending ? 1 : 0);
	if (q->sq_held > keep) {
		e->sq_avail += q->sq_held - keep;
		q->sq_held = keep;
	}
	bool hold = false;
	if (h->proc == RPCRDMA_V1_MSG && reply_len) {
		q->held_rbuf = rbuf_idx;
		q->held_off = (size_t)(msg - (e->rbufs + (size_t)rbuf_idx * e->rsize));
		hold = true;
	}
	if (q->inv_pending) {
		q->state = RQ_INVALIDATING;
	} else {
		finish(e, q);
	}
	return hold;
}

void rpcrdma_rq_wc(struct rpcrdma_engine *e, struct rq *q, enum wr_op op,
		   const struct rpcrdma_wc *wc)
{
	(void)wc;
	switch (op) {
	case WRO_SEND:
		q->send_pending = false;
		maybe_free(q);
		break;
	case WRO_LINV:
		if (q->inv_pending && --q->inv_pending == 0 &&
		    q->state == RQ_INVALIDATING)
			finish(e, q);
		break;
	default:
		break;
	}
}

void rpcrdma_rq_conn_lost(struct rpcrdma_engine *e, struct rq *q)
{
	q->sq_held = 0;
	q->in_flight = false;
	switch (q->state) {
	case RQ_SENT:
		q->send_pending = false;
		rpcrdma_rq_release_mrs(e, q);
		if (q->retries < e->cfg.max_retries) {
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
		q->send_pending = false;
		q->inv_pending = 0;
		finish(e, q);
		break;
	case RQ_COMPLETE:
		q->send_pending = false;
		maybe_free(q);
		break;
	default:
		break;
	}
}
