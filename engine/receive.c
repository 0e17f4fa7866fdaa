/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Received messages: decode the transport header (v1 or v2), classify the
 * message by direction (RFC 8167 §4.1) and hand it to the role it is for,
 * or answer it with the error the RFC requires.
 *
 *  - RDMA_MSG: a call or a reply by the RPC msg_type word; RDMA_NOMSG with
 *    a Read list is a call, without one a reply; RDMA_ERROR is always a
 *    reply (v2: RPCRDMA2_F_RESPONSE says the direction, §3.2).
 *  - An undecodable header whose XID matches a call we have outstanding
 *    is a bad reply (silently discarded, RFC 8166 §4.5); any other
 *    undecodable header is a bad call (ERR_CHUNK, §4.5.2; v2 codes per
 *    draft §5.3.3).
 *  - A version this connection does not speak gets ERR_VERS (§4.5.1).
 */
#include <string.h>

#include "engine/engine_internal.h"
#include "wire/rpc_msg.h"
#include "wire/xdr.h"

/* Is the payload an RPC CALL whose XID matches the header's? 1 call,
 * 0 reply, -1 neither/undecodable. */
static int payload_direction(const uint8_t *p, size_t len, uint32_t xid)
{
	if (len < 8)
		return -1;
	uint32_t mtype = rpcrdma_be32_get(p + 4);
	if (mtype == RPCRDMA_RPC_CALL)
		return rpcrdma_be32_get(p) == xid ? 1 : -1;
	if (mtype == RPCRDMA_RPC_REPLY)
		return 0;
	return -1;
}

/* An undecodable v1 message: a bad reply to one of our calls is silently
 * discarded, anything else is answered with ERR_CHUNK (RFC 8166 §4.5,
 * §4.5.2). */
static void bad_message(struct rpcrdma_engine *e, uint32_t xid)
{
	if (rpcrdma_rq_find(e, xid))
		e->ctr.bad_replies++;
	else
		rpcrdma_rs_error_code(e, xid, RPCRDMA_VERSION_1, false,
				      RPCRDMA_V2_ERR_BAD_XDR);
}

static void view_v1(struct rx_view *v, const struct rpcrdma_v1_hdr *h)
{
	memset(v, 0, sizeof *v);
	v->vers = h->vers;
	v->xid = h->xid;
	v->credit = h->credit;
	v->proc = h->proc;
	v->cl = &h->chunks;
	v->err.code = h->err;
	v->err.vers_low = h->vers_low;
	v->err.vers_high = h->vers_high;
}

/* A version 1 message on a v1 connection (RFC 8166). */
static bool handle_v1(struct rpcrdma_engine *e, uint32_t idx,
		      const uint8_t *buf, size_t len,
		      const struct rpcrdma_common *c, bool with_inv,
		      uint32_t inv_rkey)
{
	struct rpcrdma_v1_hdr hdr; /* on the stack: why in engine_internal.h */
	struct rpcrdma_v1_hdr *h = &hdr;
	struct rx_view v;

	/* RFC 8166 §4.5: shorter than a minimal header -> the XID cannot be
	 * trusted; discard.  RDMA_ERROR/ERR_CHUNK is 20 bytes by §4.1.2's
	 * XDR, so errors are let through to the decoder. */
	if (len < RPCRDMA_V1_MIN_HDR_LEN && c->proc != RPCRDMA_V1_ERROR) {
		e->ctr.short_dropped++;
		return false;
	}
	int rc = rpcrdma_v1_decode(buf, len, &e->cfg.limits, h);
	if (rc) {
		if (c->proc == RPCRDMA_V1_ERROR)
			e->ctr.bad_replies++; /* §4.5: undecodable error */
		else
			bad_message(e, c->xid);
		return false;
	}
	view_v1(&v, h);
	const uint8_t *payload = buf + h->hdr_len;
	size_t plen = len - h->hdr_len;
	switch (h->proc) {
	case RPCRDMA_V1_DONE:
		e->ctr.done_dropped++; /* §4.6.2 */
		return false;
	case RPCRDMA_V1_MSGP:
		if (e->cfg.accept_msgp && !h->chunks.nreads) {
			/* RFC 5666 §4.3: an RPC message with padding; the
			 * upper layer skips it (the events say how).  The
			 * rest is RDMA_MSG's. */
			v.msgp = (struct rpcrdma_engine_msgp){
				h->align, h->thresh, (uint32_t)h->hdr_len};
			v.proc = RPCRDMA_V1_MSG;
			goto msg;
		}
		/* §4.6.1: Responders SHOULD answer ERR_CHUNK, Requesters
		 * MUST discard. */
		if (payload_direction(payload, plen, h->xid) == 0 ||
		    rpcrdma_rq_find(e, h->xid))
			e->ctr.bad_replies++;
		else
			rpcrdma_rs_error_code(e, h->xid, RPCRDMA_VERSION_1, false,
					      RPCRDMA_V2_ERR_BAD_XDR);
		return false;
	case RPCRDMA_V1_ERROR:
		v.response = true;
		return rpcrdma_rq_reply(e, &v, idx, NULL, 0, with_inv, inv_rkey);
	case RPCRDMA_V1_MSG:
	msg:
		switch (payload_direction(payload, plen, h->xid)) {
		case 1:
			return rpcrdma_rs_call(e, &v, idx, payload, plen);
		case 0:
			v.response = true;
			return rpcrdma_rq_reply(e, &v, idx, payload, plen,
						with_inv, inv_rkey);
		default:
			bad_message(e, h->xid);
			return false;
		}
	case RPCRDMA_V1_NOMSG:
		/* RFC 8167 §4.1: a Read list means the Payload stream is a
		 * Call pulled from the Requester; otherwise it was pushed
		 * into our Reply chunk. */
		if (h->chunks.nreads)
			return rpcrdma_rs_call(e, &v, idx, NULL, 0);
		v.response = true;
		return rpcrdma_rq_reply(e, &v, idx, NULL, 0, with_inv, inv_rkey);
	default:
		bad_message(e, h->xid);
		return false;
	}
}

/* The error a v2 decode failure is reported with (draft §5.3.3). */
static void v2_decode_error(const struct rpcrdma_engine *e, int rc,
			    struct rpcrdma_v2_error *er)
{
	memset(er, 0, sizeof *er);
	switch (rc) {
	case RPCRDMA_ERR_BAD_PROC:
		er->code = RPCRDMA_V2_ERR_INVAL_HTYPE;
		break;
	case RPCRDMA_ERR_TOO_MANY_CHUNKS:
		er->code = RPCRDMA_V2_ERR_WRITE_CHUNKS;
		er->max_chunks = e->cfg.limits.max_write_chunks;
		break;
	case RPCRDMA_ERR_TOO_MANY_SEGMENTS:
		er->code = RPCRDMA_V2_ERR_SEGMENTS;
		er->max_segments = e->cfg.limits.max_chunk_segments;
		break;
	default:
		/* Truncated, bad optional-data word, bad property... "the
		 * incoming transport header cannot be parsed". */
		er->code = RPCRDMA_V2_ERR_BAD_XDR;
		break;
	}
}

/* A version 2 message (draft §3, §5) on a connection that speaks v2 or
 * is negotiating it.  first: a server's first message on the connection
 * (it answers with its own RDMA2_CONNPROP). */
static bool handle_v2(struct rpcrdma_engine *e, uint32_t idx,
		      const uint8_t *buf, size_t len,
		      const struct rpcrdma_common *c, bool with_inv,
		      uint32_t inv_rkey, bool first)
{
	struct rpcrdma_v2_hdr hdr;
	struct rpcrdma_v2_hdr *h = &hdr;
	struct rx_view v;
	uint32_t lo, hi;

	/* §3.2: the flag says who generated the XID, so a receiver never
	 * answers a response with an error (§5.3.3: errors never flow from
	 * requester to responder). */
	bool resp = len >= 20 &&
		    (rpcrdma_be32_get(buf + 16) & RPCRDMA_V2_F_RESPONSE);
	int rc = rpcrdma_v2_decode(buf, len, &e->cfg.limits, h);
	/* Open point (docs/v2.md): an RDMA2_ERROR without F_RESPONSE breaks
	 * a §3.2 MUST, but its meaning is plain; accept it. */
	if (rc == RPCRDMA_ERR_BAD_FLAGS && h->htype == RPCRDMA_V2_ERROR) {
		rc = 0;
		resp = true;
	}
	if (c->proc == RPCRDMA_V2_ERROR)
		resp = true;
	if (rc && e->negotiating && c->xid == e->neg_xid &&
	    rpcrdma_neg_v1_err_vers(buf, len, &lo, &hi)) {
		rpcrdma_neg_refused(e, lo, hi);
		return false;
	}
	if (first) {
		rpcrdma_neg_fix(e, RPCRDMA_VERSION_2);
		/* Our properties go first (§5.3.4); an opener that is an
		 * RDMA2_CONNPROP request gets them as its answer. */
		bool answer = !rc && h->htype == RPCRDMA_V2_CONNPROP && !resp;
		rpcrdma_rs_connprop(e, answer ? h->xid : e->next_xid++, answer);
	}
	if (rc) {
		/* Never an error to a response; nor while our opener waits
		 * for its answer (§7: one message until a grant). */
		if (resp || e->negotiating) {
			e->ctr.bad_replies++;
			return false;
		}
		struct rpcrdma_v2_error er;
		v2_decode_error(e, rc, &er);
		rpcrdma_rs_error(e, c->xid, RPCRDMA_VERSION_2, true, &er);
		return false;
	}
	if (e->negotiating) {
		if (h->htype == RPCRDMA_V2_ERROR && h->xid == e->neg_xid &&
		    h->error.code == RPCRDMA_V2_ERR_VERS) {
			rpcrdma_neg_refused(e, h->error.vers_low, h->error.vers_high);
			return false;
		}
		rpcrdma_neg_answered(e, h);
	}
	memset(&v, 0, sizeof v);
	v.vers = RPCRDMA_VERSION_2;
	v.xid = h->xid;
	v.credit = h->credit;
	v.proc = h->htype;
	v.response = resp;
	v.inv_handle = h->inv_handle;
	v.cl = &h->chunks;
	v.err = h->error;
	const uint8_t *payload = buf + h->hdr_len;
	size_t plen = len - h->hdr_len;
	switch (h->htype) {
	case RPCRDMA_V2_CONNPROP:
		rpcrdma_neg_apply_props(e, h);
		return false;
	case RPCRDMA_V2_ERROR:
		if (e->cfg.client && h->xid == e->neg_xid) {
			/* An error about our opener, not a call: v2 is
			 * spoken (rpcrdma_neg_answered() above); nothing to fail. */
			if (h->error.code < 10)
				e->ctr.v2_err_recv[h->error.code]++;
			return false;
		}
		return rpcrdma_rq_reply(e, &v, idx, NULL, 0, with_inv, inv_rkey);
	case RPCRDMA_V2_MSG: {
		/* §3.2 MUST: F_RESPONSE equals the RPC msg_type. */
		int dir = payload_direction(payload, plen, h->xid);
		if (resp && dir == 0)
			return rpcrdma_rq_reply(e, &v, idx, payload, plen,
						with_inv, inv_rkey);
		if (!resp && dir == 1)
			return rpcrdma_rs_call(e, &v, idx, payload, plen);
		if (resp)
			e->ctr.bad_replies++;
		else
			rpcrdma_rs_error_code(e, h->xid, RPCRDMA_VERSION_2, true,
					      RPCRDMA_V2_ERR_BAD_XDR);
		return false;
	}
	default: /* RPCRDMA_V2_NOMSG: the flag gives the direction */
		if (resp)
			return rpcrdma_rq_reply(e, &v, idx, NULL, 0, with_inv,
						inv_rkey);
		return rpcrdma_rs_call(e, &v, idx, NULL, 0);
	}
}

/* A message whose rdma_vers this connection does not speak (RFC 8166
 * §4.5.1, draft §7). */
static void wrong_version(struct rpcrdma_engine *e, const uint8_t *buf,
			  size_t len, const struct rpcrdma_common *c)
{
	uint32_t lo, hi;

	if (e->neg_lost && c->vers == RPCRDMA_VERSION_2 &&
	    c->proc != RPCRDMA_V2_ERROR) {
		/* §7.2 lets us take an unanswered opener for lost and go on
		 * in v1, but this server got it (late: it was stalled) and
		 * speaks v2 on the connection (§7.3: it never switches), so
		 * each end now refuses the other's version and every call
		 * would fail with ERR_VERS.  Close, dropping what else comes:
		 * the calls go again on a new connection, which opens in v1
		 * (the server is remembered as v1, which it also speaks), or
		 * fail with DISCONNECTED. */
		e->rx_closing = true;
		e->ctr.bad_replies++;
		rpcrdma_ask_close(e, RPCRDMA_ERR_DISCONNECTED);
		return;
	}

	if (c->proc == RPCRDMA_V1_ERROR) {
		/* A v1-format ERR_VERS answering our v2 opener. */
		struct rpcrdma_v1_hdr hdr;
		struct rpcrdma_v1_hdr *h = &hdr;
		if (e->negotiating && c->xid == e->neg_xid &&
		    c->vers == RPCRDMA_VERSION_1 &&
		    !rpcrdma_v1_decode(buf, len, &e->cfg.limits, h) &&
		    h->err == RPCRDMA_V1_ERR_VERS) {
			rpcrdma_neg_refused(e, h->vers_low, h->vers_high);
			return;
		}
		e->ctr.bad_replies++; /* never answer an error */
		return;
	}
	/* RPCRDMA2_F_RESPONSE exists in v2's layout only; in a version we
	 * do not know the fifth word means nothing to us (RFC 8166 §7 fixes
	 * only the first four and the error layout). */
	if (c->vers == RPCRDMA_VERSION_2 && len >= 20 &&
	    (rpcrdma_be32_get(buf + 16) & RPCRDMA_V2_F_RESPONSE)) {
		e->ctr.bad_replies++; /* a response: never answered */
		return;
	}
	if (e->negotiating) {
		/* Nothing but the answer to the opener is expected. */
		e->ctr.bad_replies++;
		return;
	}
	if (c->vers == RPCRDMA_VERSION_1 && rpcrdma_rq_find(e, c->xid)) {
		e->ctr.bad_replies++;
		return;
	}
	rpcrdma_vers_range(e, &lo, &hi);
	struct rpcrdma_v2_error er = {0};
	er.code = RPCRDMA_V2_ERR_VERS;
	er.vers_low = lo;
	er.vers_high = hi;
	/* Layout: v2's RDMA2_ERROR when the sender spoke v2 and we know v2
	 * (draft §7.2); for every other version the fixed layout of RFC 8166
	 * §7 ("the field placement in struct rpc_rdma_errvers must always
	 * remain the same"), the only one a version we do not know is sure
	 * to decode.  docs/v2.md, "ERR_VERS layout". */
	bool v2 = c->vers == RPCRDMA_VERSION_2 &&
		  e->cfg.versions != RPCRDMA_ENGINE_V1_ONLY;
	rpcrdma_rs_error(e, c->xid, c->vers, v2, &er);
}

/* Returns true when the receive buffer is now held by a call. */
bool rpcrdma_rx_message(struct rpcrdma_engine *e, uint32_t idx, size_t len,
			   bool with_inv, uint32_t inv_rkey)
{
	const uint8_t *buf = rpcrdma_rbuf_ptr(e, idx);
	struct rpcrdma_common c;

	if (rpcrdma_common_decode(buf, len, &c)) {
		e->ctr.short_dropped++;
		return false;
	}
	if (e->rx_closing) {
		e->ctr.bad_replies++;
		return false;
	}
	bool ok, first = false;
	if (e->vers) {
		ok = c.vers == e->vers;
	} else if (e->negotiating) {
		ok = c.vers == RPCRDMA_VERSION_2;
	} else if (e->cfg.client) {
		/* A client knows its version from the start, or its v2
		 * opener failed with V2_ONLY (vers_failed: the calls have
		 * failed and the connection is closing).  It never takes the
		 * version from the peer's message, as a server does: that
		 * sent a second RDMA2_CONNPROP (draft §7: one message, then
		 * nothing) and served v1 reverse calls on a V2_ONLY
		 * connection. */
		e->ctr.bad_replies++;
		return false;
	} else {
		/* A server's first message: the client chose (§7.3). */
		ok = (c.vers == RPCRDMA_VERSION_1 &&
		      e->cfg.versions != RPCRDMA_ENGINE_V2_ONLY) ||
		     (c.vers == RPCRDMA_VERSION_2 &&
		      e->cfg.versions != RPCRDMA_ENGINE_V1_ONLY);
		first = ok;
		if (ok && c.vers == RPCRDMA_VERSION_1)
			rpcrdma_neg_fix(e, RPCRDMA_VERSION_1);
	}
	if (!ok) {
		wrong_version(e, buf, len, &c);
		return false;
	}
	if (c.vers == RPCRDMA_VERSION_1)
		return handle_v1(e, idx, buf, len, &c, with_inv, inv_rkey);
	return handle_v2(e, idx, buf, len, &c, with_inv, inv_rkey, first);
}
