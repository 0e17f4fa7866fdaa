/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Responder role: validate the Requester's chunks against our limits,
 * pull Read chunks with RDMA Read within the ORD and rebuild the call
 * (RFC 8166 §3.4.5), push results into Write chunks and the Reply chunk
 * with RDMA Write before the Send (§3.5.2, §3.5.3), answer errors with
 * RDMA_ERROR (§4.5).
 */
#include <stdlib.h>
#include <string.h>

#include "common/usdt.h"
#include "engine/engine_internal.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_hdr.h"
#include "wire/xdr.h"

static struct responder_slot *rs_alloc(struct rpcrdma_engine *e)
{
	if (e->nrs_free) {
		uint32_t i = e->rs_free[--e->nrs_free];
		struct responder_slot *s = &e->rs[i];
		if (!s->sbuf) /* never taken since create or reset */
			rpcrdma_rs_first_use(e, i);
		/* Taken: the caller sets its real state next.  Open until
		 * its Send is built (the grant's use, recv_buffers.c). */
		s->open = true;
		e->rs_open++;
		s->state = RS_WAIT_SQ;
		s->epoch = e->epoch;
		s->ulp = false;
		s->own_reply = false;
		s->sys_reply = false;
		s->send_pending = false;
		s->callbuf = NULL;
		s->rbuf = RPCRDMA_NIL;
		s->call_malloced = false;
		s->mr_stalled = false;
		s->callmr_valid = false;
		s->call_len = 0;
		s->nmr = 0;
		s->staging = NULL;
		s->event_pending = false;
		s->hold = false;
		s->err = 0;
		s->err_v2 = false;
		memset(&s->ebody, 0, sizeof s->ebody);
		s->vers = e->vers;
		s->inv_handle = 0;
		s->connprop = s->connprop_resp = false;
		s->rdma_deadline = 0;
		s->reply_status = 0;
		s->next_read = s->reads_inflight = 0;
		s->read_off = s->done_read = s->done_off = 0;
		s->queued = false;
		s->next = RPCRDMA_NIL;
		s->cl.nreads = s->cl.nwrites = 0;
		s->cl.has_reply = false;
		return s;
	}
	return NULL;
}

void *rpcrdma_buf_get(struct rpcrdma_engine *e, size_t len, void **cookie)
{
	*cookie = NULL;
	if (e->mem.buf_alloc)
		return e->mem.buf_alloc(e->mem.ctx, len, cookie);
	return malloc(len);
}

void rpcrdma_buf_put(struct rpcrdma_engine *e, void *p, void *cookie)
{
	if (!p)
		return;
	if (e->mem.buf_free)
		e->mem.buf_free(e->mem.ctx, p, cookie);
	else
		free(p);
}

/* s's answer is on its way (or never will be): the peer's credit comes
 * back with it. */
static void rs_close(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (!s->open)
		return;
	s->open = false;
	if (e->rs_open)
		e->rs_open--;
}

/* The local registrations of s's reply go back. */
static void reply_regs_release(struct rpcrdma_engine *e,
			       struct responder_slot *s)
{
	for (uint32_t i = 0; i < s->nmr; i++)
		e->mem.release(e->mem.ctx, &s->mr[i]);
	s->nmr = 0;
}

/* ... and a Long Reply's staging buffer with them. */
static void reply_memory_release(struct rpcrdma_engine *e,
				 struct responder_slot *s)
{
	reply_regs_release(e, s);
	rpcrdma_buf_put(e, s->staging, s->staging_cookie);
	s->staging = NULL;
}

/* The call's memory: its receive buffer (an inline call, read in
 * place), or the buffer its Read chunks were pulled into and that
 * buffer's registration. */
static void call_memory_release(struct rpcrdma_engine *e,
				struct responder_slot *s)
{
	if (s->callmr_valid)
		e->mem.release(e->mem.ctx, &s->callmr);
	s->callmr_valid = false;
	if (s->call_malloced)
		rpcrdma_buf_put(e, s->callbuf, s->call_cookie);
	s->call_malloced = false;
	s->callbuf = NULL;
	if (s->rbuf != RPCRDMA_NIL) /* posted again by the next refill */
		rpcrdma_recv_put(e, s->rbuf);
	s->rbuf = RPCRDMA_NIL;
}

void rpcrdma_rs_free(struct rpcrdma_engine *e, struct responder_slot *s)
{
	rs_close(e, s);
	reply_memory_release(e, s);
	call_memory_release(e, s);
	if (s->state != RS_FREE) {
		s->state = RS_FREE;
		s->rdma_deadline = 0; /* rdma_timeout.c skips free slots */
		e->rs_free[e->nrs_free++] = s->idx;
	}
}

/* Queue an RDMA_ERROR / RDMA2_ERROR for xid on slot s (or a fresh
 * slot); v2: the v2 layout. */
static void send_error_body(struct rpcrdma_engine *e, struct responder_slot *s,
			    uint32_t xid, uint32_t vers, bool v2,
			    const struct rpcrdma_v2_error *body)
{
	s->xid = xid;
	s->err_vers = vers;
	s->err_v2 = v2;
	s->ebody = *body;
	RPCRDMA_PROBE3(err_send, xid, vers, body->code);
	s->err = body->code;
	if (s->err == RPCRDMA_V2_ERR_VERS && !s->ebody.vers_low)
		rpcrdma_vers_range(e, &s->ebody.vers_low, &s->ebody.vers_high);
	s->state = RS_WAIT_SQ;
	rpcrdma_rs_run(e, s);
}

/* The same with a bare code (its body fields 0, ERR_VERS our range). */
static void send_error(struct rpcrdma_engine *e, struct responder_slot *s,
		       uint32_t xid,
		       uint32_t code)
{
	struct rpcrdma_v2_error er = {0};
	er.code = code;
	send_error_body(e, s, xid, s->vers ? s->vers : RPCRDMA_VERSION_1,
			s->vers == RPCRDMA_VERSION_2, &er);
}

void rpcrdma_rs_error(struct rpcrdma_engine *e, uint32_t xid, uint32_t vers,
		      bool v2, const struct rpcrdma_v2_error *body)
{
	struct responder_slot *s = rs_alloc(e);
	if (!s) {
		/* More calls than we granted: the peer broke §3.3.1. */
		rpcrdma_ask_close(e, RPCRDMA_ERR_PROTOCOL);
		return;
	}
	send_error_body(e, s, xid, vers, v2, body);
}

void rpcrdma_rs_error_code(struct rpcrdma_engine *e, uint32_t xid,
			   uint32_t vers, bool v2, uint32_t code)
{
	struct rpcrdma_v2_error er = {0};
	er.code = code;
	rpcrdma_rs_error(e, xid, vers, v2, &er);
}

void rpcrdma_rs_connprop(struct rpcrdma_engine *e, uint32_t xid, bool resp)
{
	struct responder_slot *s = rs_alloc(e);
	if (!s) {
		rpcrdma_ask_close(e, RPCRDMA_ERR_PROTOCOL);
		return;
	}
	s->xid = xid;
	s->connprop = true;
	s->connprop_resp = resp;
	s->state = RS_WAIT_SQ;
	rpcrdma_rs_run(e, s);
}

static bool seg_ok(const struct rpcrdma_segment *g)
{
	return g->offset <= UINT64_MAX - g->length; /* no wrap */
}

/* §3.4.4: "The Responder can use such limits to sanity check chunk
 * sizes before using them in RDMA operations." */
static bool chunk_ok(const struct rpcrdma_engine *e,
		     const struct rpcrdma_write_chunk *c)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < c->nsegs; i++) {
		if (!seg_ok(&c->segs[i]))
			return false;
		t += c->segs[i].length;
	}
	return t <= e->cfg.max_chunk_bytes;
}

/*
 * Rebuild plan for the Read list (§3.4.5): the base stream (inline
 * payload, or the Position-Zero Read chunk of a Long Call) with every
 * other Read chunk reinserted at its position, followed by XDR padding.
 * Validates positions and sizes; when dst is not NULL also copies the
 * base pieces from base and zeroes the pads.  Returns the unreduced
 * length, or 0 when the list is invalid.
 */
static uint64_t layout(const struct rpcrdma_engine *e,
		       const struct rpcrdma_chunk_lists *cl, bool nomsg,
		       uint64_t base_len, const uint8_t *base, uint8_t *dst,
		       uint32_t *read_dst, uint64_t scratch)
{
	uint64_t u = 0, r = 0, cum = 0;
	uint32_t i = 0;
	if (nomsg) {
		/* The PZRC: every leading segment at position zero. */
		for (; i < cl->nreads && cl->reads[i].position == 0; i++) {
			if (!seg_ok(&cl->reads[i].target))
				return 0;
			if (read_dst)
				read_dst[i] = (uint32_t)(scratch + cum);
			cum += cl->reads[i].target.length;
		}
	}
	while (i < cl->nreads) {
		uint32_t pos = cl->reads[i].position;
		if (pos == 0 || pos < u) /* §3.4.5: P0 only in Long Calls; */
			return 0;        /* chunks in order, not overlapping */
		uint64_t gap = pos - u;
		if (r + gap > base_len)
			return 0;
		if (dst && gap)
			memmove(dst + u, base + r, (size_t)gap);
		r += gap;
		uint64_t c = 0;
		for (; i < cl->nreads && cl->reads[i].position == pos; i++) {
			if (!seg_ok(&cl->reads[i].target))
				return 0;
			if (read_dst)
				read_dst[i] = (uint32_t)(pos + c);
			c += cl->reads[i].target.length;
			if (c > e->cfg.max_call_size)
				return 0;
		}
		if (dst)
			memset(dst + pos + c, 0, rpcrdma_xdr_pad((size_t)c));
		u = pos + c + rpcrdma_xdr_pad((size_t)c);
		if (u > e->cfg.max_call_size)
			return 0;
	}
	if (dst && base_len > r)
		memmove(dst + u, base + r, (size_t)(base_len - r));
	u += base_len - r;
	if (u > e->cfg.max_call_size)
		return 0;
	return u;
}

static void deliver(struct rpcrdma_engine *e, struct responder_slot *s)
{
	/* RFC 8166 §4.5.2: the RPC XID must match rdma_xid; RFC 8167 §5.1:
	 * a call's msg_type is CALL. */
	if (s->call_len < 8 || rpcrdma_be32_get(s->callbuf) != s->xid ||
	    rpcrdma_be32_get(s->callbuf + 4) != RPCRDMA_RPC_CALL) {
		send_error(e, s, s->xid, RPCRDMA_V2_ERR_BAD_XDR);
		return;
	}
	s->state = RS_IN_ULP;
	rpcrdma_ev_push(e, EVK_RS, s->idx, 0);
}

/* Read chunks in the list besides a Position-Zero one (segments with the
 * same position form one chunk, RFC 8166 §3.4.5). */
static uint32_t read_chunks(const struct rpcrdma_chunk_lists *cl)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < cl->nreads; i++)
		if (cl->reads[i].position &&
		    (i == 0 || cl->reads[i].position != cl->reads[i - 1].position))
			n++;
	return n;
}

/* s's message becomes the RPC reply made for a call the Responder has no
 * memory or registration for: MSG_ACCEPTED with SYSTEM_ERR (RFC 5531 §9:
 * "errors like memory allocation failure"), AUTH_NONE verifier.  Its XID
 * is kept in the slot, the rest is the same for every call. */
static void sys_reply_msg(struct responder_slot *s)
{
	static const uint8_t rest[20] = {
		0, 0, 0, 1,  /* REPLY */
		0, 0, 0, 0,  /* MSG_ACCEPTED */
		0, 0, 0, 0,  /* verifier: AUTH_NONE, empty */
		0, 0, 0, 0,
		0, 0, 0, 5,  /* SYSTEM_ERR */
	};
	rpcrdma_be32_put(s->sys_xid, s->xid);
	s->msg[0] = (struct rpcrdma_iov){s->sys_xid, 4, false};
	s->msg[1] = (struct rpcrdma_iov){(void *)rest, sizeof rest, false};
	s->nmsg = 2;
	s->sys_reply = true;
	s->err = 0;
	s->state = RS_WAIT_SQ;
}

/* The call cannot be taken for want of memory or a registration (its
 * chunk lists are copied into s).  Version 2 says so in the transport
 * (RDMA2_ERR_SYSTEM, draft §5.3.3).  Version 1 has no such error:
 * ERR_CHUNK would tell the Requester its chunks were wrong, which they
 * were not.  So the call gets the RPC reply made for it (sys_reply_msg),
 * sent inline by the engine alone: the Requester's call completes with
 * a clear error, and its Write chunks come back empty. */
static void no_resources(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (s->vers == RPCRDMA_VERSION_2) {
		send_error(e, s, s->xid, RPCRDMA_V2_ERR_SYSTEM);
		return;
	}
	if (s->call_malloced)
		rpcrdma_buf_put(e, s->callbuf, s->call_cookie);
	s->call_malloced = false;
	s->callbuf = NULL;
	sys_reply_msg(s);
	s->user = NULL;
	s->own_reply = true;  /* freed once sent, no REPLY_SENT */
	s->reply_status = 0;
	rpcrdma_rs_run(e, s);
}

bool rpcrdma_rs_call(struct rpcrdma_engine *e, const struct rx_view *h,
		     uint32_t idx, const uint8_t *msg, size_t len)
{
	e->ctr.calls_received++;
	struct responder_slot *s = rs_alloc(e);
	if (!s) {
		rpcrdma_ask_close(e, RPCRDMA_ERR_PROTOCOL);
		return false;
	}
	rpcrdma_recv_grant_used(e);
	s->xid = h->xid;
	s->vers = h->vers;
	s->inv_handle = h->inv_handle;
	s->msgp = h->msgp;
	const struct rpcrdma_chunk_lists *cl = h->cl;
	bool nomsg = h->proc == RPCRDMA_V1_NOMSG;
	/* Draft §3.3: the handle must be one of this header's; anything
	 * else would let the Requester make us invalidate a handle it
	 * never exposed for this call. */
	if (s->inv_handle && !rpcrdma_inv_named(cl, s->inv_handle)) {
		send_error(e, s, h->xid, RPCRDMA_V2_ERR_BAD_XDR);
		return false;
	}
	if (read_chunks(cl) > e->cfg.max_read_chunks) {
		/* Draft §5.3.3 RDMA2_ERR_READ_CHUNKS (v1: ERR_CHUNK). */
		struct rpcrdma_v2_error er = {0};
		er.code = s->vers == RPCRDMA_VERSION_2 ? RPCRDMA_V2_ERR_READ_CHUNKS
						       : RPCRDMA_V2_ERR_BAD_XDR;
		er.max_chunks = e->cfg.max_read_chunks;
		send_error_body(e, s, h->xid, s->vers,
				s->vers == RPCRDMA_VERSION_2, &er);
		return false;
	}
	bool ok = true;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		ok = ok && chunk_ok(e, &cl->writes[i]);
	if (cl->has_reply)
		ok = ok && chunk_ok(e, &cl->reply);
	uint64_t base_len = len;
	if (nomsg) {
		base_len = 0;
		if (!cl->nreads || cl->reads[0].position != 0)
			ok = false; /* nothing carries the call */
		for (uint32_t i = 0; i < cl->nreads && cl->reads[i].position == 0; i++)
			base_len += cl->reads[i].target.length;
		if (base_len > e->cfg.max_call_size)
			ok = false;
	}
	uint64_t total = ok ? layout(e, cl, nomsg, base_len, NULL, NULL, NULL,
				     0) : 0;
	if (!ok || (!total && cl->nreads)) {
		send_error(e, s, h->xid, RPCRDMA_V2_ERR_BAD_XDR);
		return false;
	}
	/* By shape (RFC 8166 §3.5): the counters say which ones a peer
	 * actually sent. */
	if (nomsg)
		e->ctr.long_calls_received++;
	if (read_chunks(cl))
		e->ctr.chunked_calls_received++;
	rpcrdma_chunk_lists_copy(&s->cl, cl);
	if (!cl->nreads) {
		/* Short or Chunked-for-the-reply call: all inline.  The
		 * upper layer reads it where it landed, and the slot holds
		 * that receive buffer until the reply is sent (there is one
		 * buffer more per slot for that, recv_buffers.c): no copy,
		 * and no buffer of the slot's own to touch. */
		uint8_t *rb = rpcrdma_rbuf_ptr(e, idx);
		s->rbuf = idx;
		s->callbuf = rb + (msg - rb);
		s->call_len = len;
		deliver(e, s);
		return true;
	}
	/* A Long Call with further Read chunks reads its PZRC to scratch
	 * space past the rebuilt message, then spreads it. */
	bool inserts = nomsg && (s->cl.nreads &&
		s->cl.reads[s->cl.nreads - 1].position != 0);
	s->scratch = inserts ? (size_t)total : 0;
	s->base_len = (size_t)base_len;
	size_t cap = (size_t)total + (inserts ? (size_t)base_len : 0);
	s->callbuf = rpcrdma_buf_get(e, cap ? cap : 1, &s->call_cookie);
	if (!s->callbuf) {
		no_resources(e, s);
		return false;
	}
	s->call_malloced = true;
	if (e->mem.reg(e->mem.ctx, s->callbuf, cap ? cap : 1,
		       RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_READ_SINK,
		       &s->callmr)) {
		no_resources(e, s);
		return false;
	}
	s->callmr_valid = true;
	s->call_len = (size_t)total;
	layout(e, &s->cl, nomsg, base_len, nomsg ? NULL : msg,
	       nomsg ? NULL : s->callbuf, s->read_dst, s->scratch);
	s->state = RS_READING;
	rpcrdma_rs_run(e, s);
	return false;
}

static void reads_done(struct rpcrdma_engine *e, struct responder_slot *s)
{
	/* A Long Call with further chunks: spread the PZRC (the reduced
	 * stream) around them.  Otherwise everything is in place. */
	if (s->scratch)
		layout(e, &s->cl, true, s->base_len, s->callbuf + s->scratch,
		       s->callbuf, NULL, 0);
	deliver(e, s);
}

/* The next piece of a Read segment of len bytes of which off are read
 * or posted: at most cfg.read_piece.  RFC 8166 §4.5.3 has the Responder
 * move a chunk with "RDMA Read operations", not one per segment, and
 * §3.3.1 leaves limits on Reads in progress to each implementation:
 * reading a long segment in pieces lets other calls' small Reads and
 * other connections' work run between them (docs/SCALE.md, fairness). */
static uint32_t read_piece(const struct rpcrdma_engine *e, uint32_t len,
			   uint32_t off)
{
	uint32_t left = len - off;
	return e->cfg.read_piece && left > e->cfg.read_piece
		       ? e->cfg.read_piece : left;
}

/* Whether a Read of len bytes must wait: the ORD (RFC 8166 §3.3.1, the
 * peer's IRD), a send queue entry, or the connection's read_window.  The
 * window never holds back a Read when none is in flight, so a piece
 * larger than the window still moves. */
static bool read_must_wait(struct rpcrdma_engine *e, uint32_t len)
{
	if (e->reads_inflight >= e->ord) {
		e->ctr.ord_stalls++;
		return true;
	}
	if (!e->sq_avail)
		return true;
	if (e->cfg.read_window && e->read_bytes_inflight &&
	    e->read_bytes_inflight + len > e->cfg.read_window) {
		e->ctr.read_window_stalls++;
		return true;
	}
	return false;
}

static void run_reads(struct rpcrdma_engine *e, struct responder_slot *s)
{
	while (s->next_read < s->cl.nreads) {
		const struct rpcrdma_read_segment *rd = &s->cl.reads[s->next_read];
		if (s->read_off >= rd->target.length) {
			s->next_read++;
			s->read_off = 0;
			continue;
		}
		uint32_t len = read_piece(e, rd->target.length, s->read_off);
		if (read_must_wait(e, len)) {
			rpcrdma_rs_enqueue(e, s);
			return;
		}
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
		if (!w) {
			rpcrdma_ask_close(e, RPCRDMA_ERR_NOSPACE);
			return;
		}
		w->send.wr_id = rpcrdma_wr_id(e, WRK_RS, WRO_READ, s->idx);
		w->send.opcode = RPCRDMA_WR_RDMA_READ;
		w->send.send_flags = RPCRDMA_SEND_SIGNALED;
		w->send.num_sge = 1;
		w->send.rdma.remote_addr = rd->target.offset + s->read_off;
		w->send.rdma.rkey = rd->target.handle;
		w->sge[0].addr = rpcrdma_addr(s->callbuf +
					      s->read_dst[s->next_read] +
					      s->read_off);
		w->sge[0].length = len;
		w->sge[0].lkey = s->callmr.lkey;
		e->sq_avail--;
		e->reads_inflight++;
		e->read_bytes_inflight += len;
		s->reads_inflight++;
		e->ctr.rdma_read_bytes += len;
		s->read_off += len;
	}
	if (!s->reads_inflight)
		reads_done(e, s);
}

/* The length of s's oldest Read in flight, taken off its completion
 * cursor: the pieces complete in the order run_reads posted them. */
static uint32_t read_completed(const struct rpcrdma_engine *e,
			       struct responder_slot *s)
{
	while (s->done_read < s->cl.nreads &&
	       s->done_off >= s->cl.reads[s->done_read].target.length) {
		s->done_read++;
		s->done_off = 0;
	}
	if (s->done_read >= s->cl.nreads)
		return 0;
	uint32_t len = read_piece(e, s->cl.reads[s->done_read].target.length,
				  s->done_off);
	s->done_off += len;
	return len;
}

/* Emit RDMA Writes of src[0..len) filling chunk c in order (§3.4.6);
 * records the bytes written per segment in out.  Returns WRs emitted. */
static uint32_t write_chunk(struct rpcrdma_engine *e, struct responder_slot *s,
			    const uint8_t *src, size_t len, uint32_t lkey,
			    const struct rpcrdma_write_chunk *c,
			    struct rpcrdma_write_chunk *out, bool emit)
{
	uint32_t n = 0;
	size_t done = 0;
	*out = *c;
	for (uint32_t j = 0; j < c->nsegs; j++) {
		size_t k = len - done;
		if (k > c->segs[j].length)
			k = c->segs[j].length;
		out->segs[j].length = (uint32_t)k;
		if (!k)
			continue;
		n++;
		if (emit) {
			struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
			if (!w)
				return n;
			w->send.wr_id = rpcrdma_wr_id(e, WRK_RS, WRO_WRITE,
						      s->idx);
			w->send.opcode = RPCRDMA_WR_RDMA_WRITE;
			/* The Send after it says when it is done. */
			w->send.send_flags = 0;
			w->send.num_sge = 1;
			w->send.rdma.remote_addr = c->segs[j].offset;
			w->send.rdma.rkey = c->segs[j].handle;
			w->sge[0].addr = rpcrdma_addr(src + done);
			w->sge[0].length = (uint32_t)k;
			w->sge[0].lkey = lkey;
			e->ctr.rdma_write_bytes += k;
		}
		done += k;
	}
	return n;
}

/* need: the upper layer's memory is read by the Writes before it, so
 * REPLY_SENT waits for the Send's completion; otherwise the reply is
 * sent as far as the upper layer is concerned (send_queue.c). */
static void emit_send(struct rpcrdma_engine *e, struct responder_slot *s,
		      size_t len,
		      bool may_inv, bool need)
{
	struct rpcrdma_engine_wr *w = rpcrdma_wr_push(e);
	if (!w) {
		rpcrdma_ask_close(e, RPCRDMA_ERR_NOSPACE);
		return;
	}
	uint32_t rkey;
	w->send.wr_id = rpcrdma_wr_id(e, WRK_RS, WRO_SEND, s->idx);
	w->send.opcode = RPCRDMA_WR_SEND;
	if (may_inv && rpcrdma_inv_for_reply(e, s, &rkey)) {
		w->send.opcode = RPCRDMA_WR_SEND_WITH_INV;
		w->send.invalidate_rkey = rkey;
		e->ctr.send_with_inv++;
	}
	w->send.send_flags = need ? RPCRDMA_SEND_SIGNALED : 0;
	s->send_waited = need;
	rs_close(e, s);
	w->send.num_sge = 1;
	w->sge[0].addr = rpcrdma_addr(s->sbuf);
	w->sge[0].length = (uint32_t)len;
	w->sge[0].lkey = e->arena_mr.lkey;
	e->sq_avail--;
	s->send_pending = true;
	s->state = RS_SENDING;
	if (!need && s->ulp) {
		s->state = RS_DONE;
		s->event_pending = true;
		rpcrdma_ev_push(e, EVK_RS, s->idx, 0);
	}
}

static void run_error(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (!e->sq_avail) {
		rpcrdma_rs_enqueue(e, s);
		return;
	}
	int n;
	uint32_t code = s->err;
	if (s->err_v2) {
		/* Draft §5.3.3: xid and vers copied, our grant, F_RESPONSE
		 * (§3.2 MUST), the code's body. */
		struct rpcrdma_v2_hdr hdr; /* why in engine_internal.h */
		struct rpcrdma_v2_hdr *h = &hdr;
		rpcrdma_v2_hdr_init(h);
		h->xid = s->xid;
		h->vers = s->err_vers;
		h->credit = rpcrdma_recv_grant(e);
		h->htype = RPCRDMA_V2_ERROR;
		h->flags = RPCRDMA_V2_F_RESPONSE;
		h->error = s->ebody;
		n = rpcrdma_v2_encode_lists(s->sbuf, e->ssize, h, &h->chunks);
	} else {
		/* RFC 8166 §4.5: v1 knows ERR_VERS and ERR_CHUNK only. */
		if (code != RPCRDMA_V1_ERR_VERS)
			code = RPCRDMA_V1_ERR_CHUNK;
		struct rpcrdma_v1_hdr hdr;
		struct rpcrdma_v1_hdr *h = &hdr;
		rpcrdma_v1_hdr_init(h);
		h->xid = s->xid;
		h->vers = s->err_vers; /* §4.5: echo the failing request's */
		h->credit = rpcrdma_recv_grant(e);
		h->proc = RPCRDMA_V1_ERROR;
		h->err = code;
		h->vers_low = s->ebody.vers_low;   /* §4.5.1 */
		h->vers_high = s->ebody.vers_high;
		n = rpcrdma_v1_encode(s->sbuf, e->ssize, h);
	}
	if (n < 0) {
		rpcrdma_ask_close(e, n);
		return;
	}
	if (code == RPCRDMA_V1_ERR_VERS)
		e->ctr.err_vers_sent++;
	else if (code == RPCRDMA_V1_ERR_CHUNK)
		e->ctr.err_chunk_sent++;
	if (code < 10)
		e->ctr.v2_err_sent[code]++;
	emit_send(e, s, (size_t)n, false, false);
}

/* Our RDMA2_CONNPROP (draft §5.3.4): Receive Buffer Size and Reverse
 * Request Support.  About 48 bytes: it fits a 1024-byte receiver. */
static void run_connprop(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (!e->sq_avail) {
		rpcrdma_rs_enqueue(e, s);
		return;
	}
	struct rpcrdma_v2_hdr hdr; /* on the stack: why in engine_internal.h */
	struct rpcrdma_v2_hdr *h = &hdr;
	rpcrdma_v2_hdr_init(h);
	h->xid = s->xid;
	h->vers = RPCRDMA_VERSION_2;
	/* Open point (docs/v2.md): an answer carries our grant, an opener
	 * our request, as F_RESPONSE says (§3.2). */
	h->credit = s->connprop_resp ? rpcrdma_recv_grant(e) : e->cfg.max_calls;
	h->htype = RPCRDMA_V2_CONNPROP;
	h->flags = s->connprop_resp ? RPCRDMA_V2_F_RESPONSE : 0;
	h->nprops = 2;
	memset(h->props, 0, 2 * sizeof h->props[0]);
	h->props[0].propid = RPCRDMA_V2_PROPID_RBSIZ;
	h->props[0].has_value = true;
	h->props[0].value = e->rsize;
	h->props[1].propid = RPCRDMA_V2_PROPID_BRS;
	h->props[1].has_value = true;
	h->props[1].value = e->cfg.v2_brs;
	int n = rpcrdma_v2_encode_lists(s->sbuf, e->ssize, h, &h->chunks);
	if (n < 0) {
		rpcrdma_ask_close(e, n);
		return;
	}
	e->ctr.connprop_sent++;
	/* Signalled, unlike other replies: its completion gives the slot
	 * back at once, so the first call after the exchange takes the same
	 * slot (rs_free is a stack) instead of a second one.  An idle
	 * connection then holds the pages of one slot, not two; the one
	 * completion more per connection costs nothing that matters. */
	emit_send(e, s, (size_t)n, false, true);
}

/* Build and emit a ULP reply.  Falls back to ERR_CHUNK when the reply
 * cannot be delivered with the chunks the Requester offered. */
static void run_reply(struct rpcrdma_engine *e, struct responder_slot *s)
{
	struct rpcrdma_v1_hdr hdr; /* on the stack: why in engine_internal.h */
	struct rpcrdma_v1_hdr *h = &hdr;
	const struct rpcrdma_chunk_lists *cl = &s->cl;
	uint32_t w = 0, nwr = 0;
	uint64_t reduced = 0;
	bool reduce[RPCRDMA_ENGINE_MAX_IOV];

	struct rpcrdma_v2_error er = {0};

	rpcrdma_v1_hdr_init(h);
	h->xid = s->xid;
	h->vers = RPCRDMA_VERSION_1;
	h->credit = rpcrdma_recv_grant(e);
	h->proc = RPCRDMA_V1_MSG;
	/* Plan: each DDP-eligible result takes the next Write chunk
	 * (§4.3.2.1); an empty chunk forces it inline (§4.3.2.3). */
	for (unsigned i = 0; i < s->nmsg; i++) {
		const struct rpcrdma_iov *v = &s->msg[i];
		reduce[i] = false;
		if (v->ddp && w < cl->nwrites) {
			const struct rpcrdma_write_chunk *c = &cl->writes[w];
			if (c->nsegs) {
				if (rpcrdma_write_chunk_len(c) < v->len) {
					/* Draft §5.3.3 RDMA2_ERR_WRITE_RESOURCE:
					 * which chunk (1-based), how much. */
					er.code = RPCRDMA_V2_ERR_WRITE_RESOURCE;
					er.chunk_index = w + 1;
					er.length_needed = (uint32_t)v->len;
					goto err_chunk;
				}
				reduce[i] = true;
				nwr += write_chunk(e, s, v->base, v->len, 0, c,
						   &h->chunks.writes[w], false);
			} else {
				h->chunks.writes[w].nsegs = 0;
			}
			w++;
		}
		if (!reduce[i])
			reduced += v->len + rpcrdma_xdr_pad(v->len);
	}
	/* §4.3.2.2: unconsumed chunks go back unused (same count, empty
	 * segments). */
	for (; w < cl->nwrites; w++)
		write_chunk(e, s, NULL, 0, 0, &cl->writes[w],
			    &h->chunks.writes[w], false);
	h->chunks.nwrites = cl->nwrites;
	if (cl->has_reply) {
		/* §4.3.3: "the Responder MUST copy that chunk into the
		 * Transport header of the RPC Reply message", its lengths
		 * the bytes returned in it: zero for a Short reply. */
		h->chunks.has_reply = true;
		write_chunk(e, s, NULL, 0, 0, &cl->reply, &h->chunks.reply,
			    false);
	}
	bool long_reply = rpcrdma_hdr_size(e->vers, h) + reduced > e->thr.send;
	if (long_reply) {
		/* §3.5.3: Long Reply through the Reply chunk, or ERR_CHUNK
		 * when there is none or it is too small (§4.5.3); v2 says
		 * how large it must be (RDMA2_ERR_REPLY_RESOURCE). */
		if (!cl->has_reply || rpcrdma_write_chunk_len(&cl->reply) < reduced) {
			er.code = RPCRDMA_V2_ERR_REPLY_RESOURCE;
			er.length_needed = reduced > UINT32_MAX ? UINT32_MAX
								 : (uint32_t)reduced;
			goto err_chunk;
		}
		if (s->sys_reply)
			goto err_system; /* it goes inline or not at all */
		h->proc = RPCRDMA_V1_NOMSG;
		h->chunks.has_reply = true;
		nwr += write_chunk(e, s, NULL, (size_t)reduced, 0, &cl->reply,
				   &h->chunks.reply, false);
		if (rpcrdma_hdr_size(e->vers, h) > e->thr.send)
			goto err_system;
	}
	/* A reply needing more work requests than the whole send queue
	 * (a hostile Requester can offer 8 x 32 tiny segments) would wait
	 * forever: no RPC-level reply is possible (§4.5.3). */
	if (nwr + 1 > e->cfg.sq_depth)
		goto err_system;
	if (e->sq_avail < nwr + 1) {
		rpcrdma_rs_enqueue(e, s);
		return;
	}
	/* Register every source first: a registration shortage (AGAIN)
	 * is a queued state like the send queue's (DESIGN: starvation is
	 * a state with a queue), and nothing may be emitted before. */
	uint32_t lkey[RPCRDMA_ENGINE_MAX_IOV] = {0};
	if (long_reply && !s->staging) {
		s->staging = rpcrdma_buf_get(e, reduced ? (size_t)reduced : 1,
					     &s->staging_cookie);
		if (!s->staging)
			goto err_resources;
	}
	for (unsigned i = 0; i <= s->nmsg; i++) {
		bool stage = i == s->nmsg;
		if (stage ? !long_reply : !reduce[i] || !s->msg[i].len)
			continue;
		struct rpcrdma_engine_mr *mr = &s->mr[s->nmr];
		int rc = stage ? e->mem.reg(e->mem.ctx, s->staging,
					    reduced ? (size_t)reduced : 1, 0,
						       mr)
			       : e->mem.reg(e->mem.ctx, s->msg[i].base,
					    s->msg[i].len, 0, mr);
		if (rc == RPCRDMA_ERR_AGAIN) {
			reply_regs_release(e, s);
			if (!s->mr_stalled)
				e->ctr.mr_stalls++;
			s->mr_stalled = true;
			rpcrdma_rs_enqueue(e, s);
			return;
		}
		if (rc)
			goto err_resources;
		s->nmr++;
		if (!stage)
			lkey[i] = mr->lkey;
	}
	/* Reserve the Writes now; the Send (or an error's) takes the one
	 * entry left.  Emit: Writes first, the Send last (the Send's
	 * arrival tells the Requester the data is in place). */
	e->sq_avail -= nwr;
	bool ulp_writes = false;
	w = 0;
	for (unsigned i = 0; i < s->nmsg; i++) {
		const struct rpcrdma_iov *v = &s->msg[i];
		if (v->ddp && w < cl->nwrites) {
			if (reduce[i]) {
				write_chunk(e, s, v->base, v->len, lkey[i],
					    &cl->writes[w], &h->chunks.writes[w], true);
				ulp_writes = true;
			}
			w++;
		}
	}
	uint8_t *dst;
	int hlen;
	if (long_reply) {
		dst = s->staging;
	} else {
		/* Fits: size(h) + reduced <= thr.send <= ssize. */
		dst = s->sbuf + rpcrdma_hdr_size(e->vers, h);
	}
	uint8_t *p = dst;
	for (unsigned i = 0; i < s->nmsg; i++) {
		const struct rpcrdma_iov *v = &s->msg[i];
		if (reduce[i])
			continue; /* removed with its padding, §3.4.4.4 */
		if (v->len)
			memcpy(p, v->base, v->len);
		if (v->ddp)
			e->ctr.ddp_inline_tx += v->len;
		p += v->len;
		memset(p, 0, rpcrdma_xdr_pad(v->len));
		p += rpcrdma_xdr_pad(v->len);
	}
	if (long_reply)
		write_chunk(e, s, s->staging, (size_t)reduced,
			    s->mr[s->nmr - 1].lkey, &cl->reply, &h->chunks.reply,
			    true);
	hlen = rpcrdma_hdr_encode(s->sbuf, e->ssize, e->vers, h, true, 0);
	if (hlen < 0) {
		rpcrdma_ask_close(e, hlen);
		return;
	}
	if (long_reply)
		e->ctr.long_replies++;
	else if (h->chunks.nwrites)
		e->ctr.chunked_replies++;
	else
		e->ctr.short_replies++;
	/* svcrdma_send_reply: XID, shape (0 Short, 1 Write chunks, 2 Reply
	 * chunk), the credits granted with it. */
	RPCRDMA_PROBE3(svc_reply, s->xid,
		       long_reply ? 2 : h->chunks.nwrites ? 1 : 0,
		       h->credit);
	emit_send(e, s,
		  long_reply ? (size_t)hlen : (size_t)hlen + (size_t)reduced,
				true,
		  ulp_writes || s->own_reply);
	return;

err_resources:
	if (s->vers != RPCRDMA_VERSION_2 && !s->sys_reply) {
		/* Version 1 has no transport error for a Responder short of
		 * memory or registrations, and ERR_CHUNK would tell the
		 * Requester its chunks were wrong (it maps that to a call or
		 * reply too large for a limit).  The call gets the RPC reply
		 * made for it, SYSTEM_ERR, as no_resources() gives a call,
		 * inline with no RDMA Write: the upper layer's reply is not
		 * read, so what was taken for it goes back first.  Its
		 * REPLY_SENT still comes, with RPCRDMA_ERR_RPC_SYSTEM_ERR. */
		reply_memory_release(e, s);
		sys_reply_msg(s);
		s->reply_status = RPCRDMA_ERR_RPC_SYSTEM_ERR;
		run_reply(e, s);
		return;
	}
err_system:
	/* Registrations made so far are dropped when the error's Send
	 * completes (rs_finish / rs_free). */
	memset(&er, 0, sizeof er);
	er.code = RPCRDMA_V2_ERR_SYSTEM;
err_chunk:
	if (s->vers != RPCRDMA_VERSION_2 || !er.code)
		er.code = RPCRDMA_V2_ERR_BAD_XDR; /* v1: ERR_CHUNK */
	/* REPLY_SENT says which error went in the reply's place, in the
	 * terms a Requester's CALL_DONE uses for it. */
	s->reply_status = er.code == RPCRDMA_V2_ERR_SYSTEM
				  ? RPCRDMA_ERR_PEER_ERR_SYSTEM
			  : er.code == RPCRDMA_V2_ERR_WRITE_RESOURCE ||
					  er.code == RPCRDMA_V2_ERR_REPLY_RESOURCE
				  ? RPCRDMA_ERR_PEER_ERR_RESOURCE
				  : RPCRDMA_ERR_PEER_ERR_CHUNK;
	s->err = er.code;
	s->ebody = er;
	s->err_vers = s->vers;
	s->err_v2 = s->vers == RPCRDMA_VERSION_2;
	run_error(e, s);
}

void rpcrdma_rs_run(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (!e->connected || s->epoch != e->epoch)
		return;
	switch (s->state) {
	case RS_READING:
		run_reads(e, s);
		break;
	case RS_WAIT_SQ:
		if (s->connprop)
			run_connprop(e, s);
		else if ((s->ulp || s->own_reply) && !s->err)
			run_reply(e, s);
		else
			run_error(e, s);
		break;
	default:
		break;
	}
}

int rpcrdma_engine_submit_reply(struct rpcrdma_engine *e, uint32_t call_id,
				const struct rpcrdma_reply_req *rep,
				uint64_t now)
{
	(void)now;
	if (call_id >= e->nrs || e->rs[call_id].state != RS_IN_ULP)
		return RPCRDMA_ERR_NOENT;
	struct responder_slot *s = &e->rs[call_id];
	if (s->epoch != e->epoch) {
		rpcrdma_rs_free(e, s);
		return RPCRDMA_ERR_DISCONNECTED;
	}
	if (!rep || !rep->msg || !rep->nmsg || rep->nmsg > RPCRDMA_ENGINE_MAX_IOV ||
	    rep->msg[0].ddp || rep->msg[0].len < 4 || !rep->msg[0].base ||
	    rpcrdma_be32_get(rep->msg[0].base) != s->xid)
		return RPCRDMA_ERR_INVAL;
	for (unsigned i = 0; i < rep->nmsg; i++)
		if ((!rep->msg[i].base && rep->msg[i].len) ||
		    (!rep->msg[i].ddp && (rep->msg[i].len & 3)) ||
		    rep->msg[i].len > UINT32_MAX)
			return RPCRDMA_ERR_INVAL;
	memcpy(s->msg, rep->msg, rep->nmsg * sizeof *s->msg);
	s->nmsg = rep->nmsg;
	s->user = rep->user;
	s->hold = rep->hold;
	s->ulp = true;
	s->err = 0;
	s->reply_status = 0;
	s->state = RS_WAIT_SQ;
	rpcrdma_rs_run(e, s);
	return 0;
}


/* The reply is over (sent, or its connection is gone).  One the ULP
 * answered keeps its slot until the REPLY_SENT event, its registrations
 * given back; one the engine answered alone (an error reply) is freed. */
static void rs_finish(struct rpcrdma_engine *e, struct responder_slot *s)
{
	if (!s->ulp) {
		rpcrdma_rs_free(e, s);
		return;
	}
	reply_regs_release(e, s);
	s->state = RS_DONE;
	s->event_pending = true;
	rpcrdma_ev_push(e, EVK_RS, s->idx, 0);
}

/* The Send of a reply that had its REPLY_SENT at once is over: the
 * slot's own memory (a Long Reply's staging) was in use until now; the
 * slot is free once the event is polled too. */
static void send_done_after_reply_sent(struct rpcrdma_engine *e,
				       struct responder_slot *s)
{
	reply_regs_release(e, s);
	rpcrdma_rs_done_maybe_free(e, s);
}

void rpcrdma_rs_done_maybe_free(struct rpcrdma_engine *e,
				struct responder_slot *s)
{
	if (s->state != RS_DONE || s->event_pending || s->hold)
		return;
	if (!s->send_pending) {
		rpcrdma_rs_free(e, s);
		return;
	}
	/* Only the Send is out, one the upper layer did not wait for
	 * (emit_send, send_queue.c).  It reads the slot's send buffer and
	 * nothing of the call, which the upper layer is done with: the
	 * call's memory goes back now, not with the slot at a later
	 * completion, so a connection with one call in flight reuses the
	 * receive buffers at the top of the free stack (recv_buffers.c). */
	call_memory_release(e, s);
}

void rpcrdma_engine_release_reply(struct rpcrdma_engine *e, uint32_t call_id)
{
	if (call_id >= e->nrs || !e->rs[call_id].hold)
		return;
	e->rs[call_id].hold = false;
	rpcrdma_rs_done_maybe_free(e, &e->rs[call_id]);
}

void rpcrdma_rs_wc(struct rpcrdma_engine *e, struct responder_slot *s,
		   enum wr_op op,
		   const struct rpcrdma_wc *wc)
{
	(void)wc;
	switch (op) {
	case WRO_READ: {
		uint32_t len = read_completed(e, s);
		e->read_bytes_inflight = e->read_bytes_inflight > len
					 ? e->read_bytes_inflight - len : 0;
		if (e->reads_inflight)
			e->reads_inflight--;
		if (s->reads_inflight)
			s->reads_inflight--;
		if (s->state == RS_READING)
			run_reads(e, s);
		break;
	}
	case WRO_SEND:
		s->send_pending = false;
		if (s->state == RS_SENDING) {
			rs_finish(e, s);
		} else if (s->state == RS_DONE) {
			send_done_after_reply_sent(e, s);
		}
		break;
	default:
		break;
	}
}

void rpcrdma_rs_conn_lost(struct rpcrdma_engine *e, struct responder_slot *s)
{
	bool sending = s->send_pending;
	s->reads_inflight = 0;
	s->queued = false; /* the pending list was emptied */
	s->send_pending = false;
	switch (s->state) {
	case RS_READING:
		rpcrdma_rs_free(e, s);
		break;
	case RS_IN_ULP:
		break; /* stale: submit_reply() reports it */
	case RS_WAIT_SQ:
	case RS_SENDING:
		if (s->ulp)
			s->reply_status = RPCRDMA_ERR_DISCONNECTED;
		rs_finish(e, s);
		break;
	case RS_DONE:
		/* REPLY_SENT went at once and the Send will never complete
		 * now. */
		if (sending)
			send_done_after_reply_sent(e, s);
		break;
	default:
		break;
	}
}
