/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target: the engine in the Requester role (a client, RFC 8166
 * and draft-cel-nfsv4-rpcrdma-version-two-09) with calls of every shape
 * outstanding, under a server that answers them as the input says:
 * honest replies, Write lists that name what the attempt did not offer
 * (more chunks, longer ones, another call's or an earlier attempt's
 * handles, data in a chunk offered empty), Long Replies, RDMA_ERRORs and
 * every RDMA2_ERROR with its recovery (and the replies to the resent
 * call), grants from 0 up, Send With Invalidate of any handle, reverse
 * calls (RFC 8167), raw bytes, lost connections and resends (max_retries),
 * the v2 opener answered, refused or lost.
 *
 * The server side is simulated as the hardware would have it: its RDMA
 * Writes land in our memory only through a handle that is registered,
 * not invalidated, writable and in bounds; any other Write is a remote
 * access error and the connection dies before the Send behind it (an
 * iWARP Terminate).  What it writes is a pattern that never contains the
 * byte 0xEE; every result and reply buffer of a call is filled with 0xEE
 * whenever an attempt of the call is sent.
 *
 * Invariants, checked after every input step (abort on violation):
 *  - no completion with data nobody wrote: a call completing with status
 *    0 has no 0xEE in the bytes it reports (each result's result_len, the
 *    reply's reply_len), so every reported byte was written during the
 *    attempt it answers, through a handle that attempt exposed;
 *  - every call completes exactly once (with the connection lost and
 *    re-established until its retries are used up at the end), with its
 *    XID and user pointer, reply_len <= reply_max, result_len <= offered;
 *  - no handle is exposed after its call completed: at CALL_DONE no
 *    registration the call ever advertised is still usable by the peer
 *    (RFC 8166 §4.4.1), and none is released while the peer may use it;
 *  - what we send: every Send decodes in the connection's version, fits
 *    the thresholds (RFC 8166 §3.3.2; draft §4.2.1, §7: the opener alone
 *    and within 1024 bytes), never more calls in flight than granted
 *    (RFC 8166 §3.3.1), handles advertised are live registrations;
 *  - every SGE lies in a live registration (engine_harness.h); nothing
 *    leaks once the engine is reset.
 *
 * Input layout (reads past the end yield zeros):
 *   config  versions / flags, max_calls / backchannel credits, inline
 *           sizes, xid seed choice
 *   connect private data choice, ord
 *   ops...  one byte each plus operands, at most 400; see run_op().
 * FUZZ_ENGINE_TRACE=1 traces every step.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_NAME "fuzz_engine_requester"
#include "engine/engine.h"
#include "fuzz/engine_harness.h"
#include "wire/cm_private_data.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

#define POISON 0xEEu

/* ---------------------------------------------------------------------
 * State
 */
#define MAX_CALLS 24u
static struct call calls[MAX_CALLS];
static unsigned ncalls;
/* The last attempt each call sent: its version and chunk lists. */
static struct attempt {
	bool sent;
	uint32_t vers;
	uint32_t inv_handle;
	struct rpcrdma_chunk_lists cl;
} att[MAX_CALLS];

#define MAX_RS 32u
static struct inc incs[MAX_RS];

/* Handles our calls advertised, with the call that did (index + 1). */
static uint16_t owner[MAX_KEYS];

/* Handles of earlier attempts and of other calls, for lying replies. */
#define MAX_OLD 64u
static struct rpcrdma_segment old[MAX_OLD];
static uint32_t nold;

#define MAX_PEND 4096u
struct pend {
	uint64_t wr_id;
	bool signaled;
	enum rpcrdma_wr_opcode op;
	uint32_t inv_rkey;
};
static struct pend sq[MAX_PEND];
static uint32_t sq_head, sq_count, sq_unacked;
static struct pend rq_[MAX_PEND];
static struct rpcrdma_sge rq_sge[MAX_PEND];
static uint32_t rq_head, rq_count;

static struct rpcrdma_engine *E;
static struct rpcrdma_engine_config C;
static uint64_t now;
static bool connected, qp_err, auto_complete, auto_answer;
static bool call_sent;
static uint32_t opener_xid;
static bool opener_seen;
static uint32_t sends_this_conn;
static uint32_t nonce;
static uint32_t peer_xid;

static struct rpcrdma_v1_hdr h1;
static struct rpcrdma_v2_hdr h2;
static uint8_t pmsg[1u << 16];

/* What the server writes: never the byte 0xEE. */
static uint8_t wpat[1u << 17];

static void init_wpat(void)
{
	if (wpat[1])
		return;
	for (uint32_t i = 0; i < sizeof wpat; i++)
		wpat[i] = (uint8_t)((i * 7u + 3u) % 0xE0u);
}

static void fill_pat(uint8_t *d, size_t n)
{
	size_t off = (nonce++ * 131u) % 0x8000u;
	while (n) {
		size_t k = n < sizeof wpat - off ? n : sizeof wpat - off;
		memcpy(d, wpat + off, k);
		d += k;
		n -= k;
		off = 0;
	}
}

static int call_of(uint32_t xid)
{
	for (unsigned i = 0; i < ncalls; i++)
		if (calls[i].used && calls[i].xid == xid)
			return (int)i;
	return -1;
}

/* ---------------------------------------------------------------------
 * Our Sends
 */
static void remember_old(const struct rpcrdma_segment *g)
{
	old[nold++ % MAX_OLD] = *g;
}

/* A call's attempt went out: its buffers are poisoned again (what the
 * reply reports must be written from now on), its handles recorded. */
static void attempt_sent(int ci, uint32_t vers, uint32_t inv,
			 const struct rpcrdma_chunk_lists *cl)
{
	struct call *c = &calls[ci];
	struct attempt *a = &att[ci];
	if (a->sent) {
		for (uint32_t i = 0; i < a->cl.nwrites; i++)
			for (uint32_t j = 0; j < a->cl.writes[i].nsegs; j++)
				remember_old(&a->cl.writes[i].segs[j]);
		if (a->cl.has_reply)
			for (uint32_t j = 0; j < a->cl.reply.nsegs; j++)
				remember_old(&a->cl.reply.segs[j]);
	}
	a->sent = true;
	a->vers = vers;
	a->inv_handle = inv;
	rpcrdma_chunk_lists_copy(&a->cl, cl);
	for (unsigned i = 0; i < c->nres; i++)
		if (c->res_len[i])
			memset(c->res[i], POISON, c->res_len[i]);
	if (c->reply_max)
		memset(c->reply, POISON, c->reply_max);
	/* Every handle: a live registration of ours, in bounds. */
	struct rpcrdma_segment segs[RPCRDMA_MAX_READ_SEGMENTS +
				    RPCRDMA_MAX_WRITE_CHUNKS *
					    RPCRDMA_MAX_CHUNK_SEGMENTS +
				    RPCRDMA_MAX_CHUNK_SEGMENTS];
	uint32_t ns = 0;
	for (uint32_t i = 0; i < cl->nreads; i++)
		segs[ns++] = cl->reads[i].target;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++)
			segs[ns++] = cl->writes[i].segs[j];
	if (cl->has_reply)
		for (uint32_t j = 0; j < cl->reply.nsegs; j++)
			segs[ns++] = cl->reply.segs[j];
	for (uint32_t i = 0; i < ns; i++) {
		struct fmr *r = key_mr(segs[i].handle);
		if (!r || !r->used || !r->remote || !r->rvalid)
			FAIL("call %#x advertises dead handle %#x", c->xid,
			     segs[i].handle);
		uint8_t *p = (uint8_t *)(uintptr_t)segs[i].offset;
		if (p < r->addr || (size_t)(p - r->addr) > r->len ||
		    r->len - (size_t)(p - r->addr) < segs[i].length)
			FAIL("call advertises a segment outside its registration");
		r->exposed = true;
		owner[segs[i].handle - KEY_BASE] = (uint16_t)(ci + 1);
	}
	if (inv && !key_mr(inv))
		FAIL("rdma_inv_handle %#x is none of ours", inv);
}

static void check_send(const struct rpcrdma_send_wr *sw)
{
	static uint8_t msg[1u << 18];
	size_t n = 0;
	if (sw->num_sge < 1 || sw->num_sge > (int)RPCRDMA_ENGINE_MAX_SGE)
		FAIL("send with %d SGEs", sw->num_sge);
	for (int i = 0; i < sw->num_sge; i++) {
		const uint8_t *p = check_sge(&sw->sg_list[i], 0, "Send");
		if (n + sw->sg_list[i].length > sizeof msg)
			FAIL("send too large");
		memcpy(msg + n, p, sw->sg_list[i].length);
		n += sw->sg_list[i].length;
	}
	if (n < 16)
		FAIL("Send of %zu bytes", n);
	dig(n);
	dig((uint64_t)rpcrdma_be32_get(msg + 4) << 32 ^ rpcrdma_be32_get(msg + 12));
	sends_this_conn++;
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	uint32_t vers = rpcrdma_be32_get(msg + 4);
	/* ERR_VERS in RFC 8166's fixed layout echoes the version it
	 * answers, whatever it is (§4.5.1). */
	if (n == 28 && rpcrdma_be32_get(msg + 12) == RPCRDMA_V1_ERROR &&
	    rpcrdma_be32_get(msg + 16) == RPCRDMA_V1_ERR_VERS)
		return;
	bool call = false;
	uint32_t inv = 0;
	const struct rpcrdma_chunk_lists *cl = NULL;
	if (vers == 2) {
		int rc = rpcrdma_v2_decode(msg, n, NULL, &h2);
		if (rc)
			FAIL("engine sent an undecodable v2 header (%d)", rc);
		if (h2.htype == RPCRDMA_V2_CONNPROP && !h2.flags) {
			/* Draft §7: the opener, the first Send, small. */
			if (sends_this_conn != 1 || n > 1024)
				FAIL("v2 opener: Send %u of the connection, %zu "
				     "bytes", sends_this_conn, n);
			opener_xid = h2.xid;
			opener_seen = true;
			return;
		}
		if ((h2.htype == RPCRDMA_V2_MSG || h2.htype == RPCRDMA_V2_NOMSG) &&
		    !(h2.flags & RPCRDMA_V2_F_RESPONSE)) {
			call = true;
			inv = h2.inv_handle;
			cl = &h2.chunks;
		}
	} else if (vers == 1) {
		int rc = rpcrdma_v1_decode(msg, n, NULL, &h1);
		if (rc)
			FAIL("engine sent an undecodable v1 header (%d)", rc);
		call = (h1.proc == RPCRDMA_V1_NOMSG && h1.chunks.nreads) ||
		       (h1.proc == RPCRDMA_V1_MSG && n >= h1.hdr_len + 8 &&
			rpcrdma_be32_get(msg + h1.hdr_len + 4) == RPCRDMA_RPC_CALL);
		cl = &h1.chunks;
	} else {
		FAIL("engine sent rdma_vers %u", vers);
	}
	if (!call)
		return;
	if (info.negotiating)
		FAIL("a call sent while the v2 opener is unanswered (§7)");
	if (sw->opcode != RPCRDMA_WR_SEND)
		FAIL("call sent With Invalidate");
	if (n > info.send_threshold)
		FAIL("call of %zu bytes over the send threshold %u", n,
		     info.send_threshold);
	int ci = call_of(rpcrdma_be32_get(msg));
	if (ci < 0)
		FAIL("a call with an XID none of ours");
	call_sent = true;
	TRACE("  call %#x sent: v%u %u Write chunks, Reply chunk %d, %u reads\n",
	      calls[ci].xid, vers, cl->nwrites, cl->has_reply, cl->nreads);
	attempt_sent(ci, vers, inv, cl);
}

static void execute(const struct rpcrdma_engine_wr *w)
{
	dig(w->is_recv ? 1 : 2 + (uint64_t)w->send.opcode);
	if (!connected)
		FAIL("work request handed out while disconnected");
	if (w->is_recv) {
		if (w->recv.num_sge != 1)
			FAIL("recv with %d SGEs", w->recv.num_sge);
		check_sge(&w->recv.sg_list[0], RPCRDMA_ACCESS_LOCAL_WRITE, "Recv");
		if (rq_count >= MAX_PEND)
			FAIL("receive queue overflow");
		uint32_t at = (rq_head + rq_count++) % MAX_PEND;
		rq_[at].wr_id = w->recv.wr_id;
		rq_sge[at] = w->recv.sg_list[0];
		return;
	}
	const struct rpcrdma_send_wr *sw = &w->send;
	struct pend pe = {sw->wr_id, (sw->send_flags & RPCRDMA_SEND_SIGNALED) != 0,
			  sw->opcode, sw->invalidate_rkey};
	switch (sw->opcode) {
	case RPCRDMA_WR_SEND:
	case RPCRDMA_WR_SEND_WITH_INV:
		check_send(sw);
		break;
	case RPCRDMA_WR_RDMA_WRITE:
		/* A reply to a reverse call: into the peer's chunks. */
		check_sge(&sw->sg_list[0], 0, "RDMA Write");
		break;
	case RPCRDMA_WR_RDMA_READ:
		check_sge(&sw->sg_list[0], RPCRDMA_ACCESS_LOCAL_WRITE, "RDMA Read");
		break;
	case RPCRDMA_WR_LOCAL_INV: {
		struct fmr *r = key_mr(sw->invalidate_rkey);
		if (!r || !r->used || !r->remote)
			FAIL("LOCAL_INV of %#x, not a live registration",
			     sw->invalidate_rkey);
		if (!pe.signaled)
			FAIL("unsignalled LOCAL_INV");
		break;
	}
	default:
		FAIL("unexpected opcode %d", (int)sw->opcode);
	}
	if (sq_count >= MAX_PEND)
		FAIL("send queue overflow");
	sq[(sq_head + sq_count++) % MAX_PEND] = pe;
	uint32_t depth = C.sq_depth ? C.sq_depth : 4 * (C.max_calls + C.credits);
	if (sq_count + sq_unacked > depth)
		FAIL("%u send work requests outstanding, send queue holds %u",
		     sq_count + sq_unacked, depth);
}

/* ---------------------------------------------------------------------
 * Events
 */
static void answer(uint32_t call_id, uint8_t shape);

static void call_done(const struct rpcrdma_engine_event *ev)
{
	struct call *c = ev->user;
	if (c < calls || c >= calls + ncalls || !c->used)
		FAIL("CALL_DONE for an unknown call");
	unsigned ci = (unsigned)(c - calls);
	if (++c->done > 1)
		FAIL("call %#x completed twice", c->xid);
	if (ev->xid != c->xid)
		FAIL("CALL_DONE xid %#x for call %#x", ev->xid, c->xid);
	if (ev->status > 0)
		FAIL("positive status");
	if (ev->reply_len > c->reply_max)
		FAIL("reply_len %zu > reply_max %zu", ev->reply_len, c->reply_max);
	for (unsigned i = 0; i < RPCRDMA_MAX_WRITE_CHUNKS; i++) {
		/* c->nres never exceeds the array, but say so: gcc's
		 * -Warray-bounds cannot see it at -O2. */
		size_t cap = i < c->nres && i < sizeof c->res_len /
						   sizeof c->res_len[0]
				     ? c->res_len[i] : 0;
		if (ev->nresults > i && ev->result_len[i] > cap)
			FAIL("result %u: %zu bytes > offered %zu", i,
			     ev->result_len[i], cap);
	}
	if (ev->status == 0) {
		/* No completion with data nobody wrote. */
		for (unsigned i = 0; i < c->nres && i < ev->nresults; i++)
			if (ev->result_len[i] &&
			    memchr(c->res[i], POISON, ev->result_len[i]))
				FAIL("call %#x completed with %zu bytes in result "
				     "%u, some never written in its attempt",
				     c->xid, ev->result_len[i], i);
		if (ev->reply_len && memchr(c->reply, POISON, ev->reply_len))
			FAIL("call %#x completed with a %zu-byte reply, some "
			     "never written in its attempt", c->xid,
			     ev->reply_len);
	}
	/* No handle exposed after its call completed (RFC 8166 §4.4.1). */
	for (uint32_t k = 0; k < nkeys; k++)
		if (owner[k] == ci + 1 && mrs[k].used && mrs[k].rvalid)
			FAIL("call %#x completed with its handle %#x still "
			     "usable by the peer", c->xid, KEY_BASE + k);
	free_call(c);
	att[ci].sent = false;
}

static void check_info(void)
{
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	if (info.credits_granted < 1 || info.credits_granted > C.max_calls)
		FAIL("credits_granted %u outside [1, %u] (RFC 8166 §3.3)",
		     info.credits_granted, C.max_calls);
	if (call_sent && info.calls_in_flight > info.credits_granted)
		FAIL("call sent with %u in flight for %u credits (§3.3.1)",
		     info.calls_in_flight, info.credits_granted);
	call_sent = false;
	if (info.recvs_posted != rq_count)
		FAIL("recvs_posted %u but %u receives handed out",
		     info.recvs_posted, rq_count);
}

static void complete_sends(uint32_t n);

static void drain(void)
{
	for (int guard = 0;; guard++) {
		if (guard > 10000)
			FAIL("engine never settles");
		bool moved = false;
		/* The engine's own entry, as the driver posts it (valid
		 * until the next call that changes the engine). */
		const struct rpcrdma_engine_wr *w;
		while ((w = rpcrdma_engine_next_wr(E)) != NULL) {
			moved = true;
			execute(w);
		}
		struct rpcrdma_engine_event ev;
		while (rpcrdma_engine_poll_event(E, &ev)) {
			moved = true;
			dig((uint64_t)ev.type << 32 ^ (uint32_t)ev.status);
			dig((uint64_t)ev.xid << 32 ^ ev.reply_len);
			TRACE("  event %d xid %#x status %d\n", (int)ev.type,
			      ev.xid, ev.status);
			switch (ev.type) {
			case RPCRDMA_EV_CALL_DONE:
				call_done(&ev);
				break;
			case RPCRDMA_EV_INCOMING_CALL:
				harness_incoming(incs, MAX_RS, &ev);
				if (auto_answer)
					answer(ev.call_id, (uint8_t)ev.xid);
				break;
			case RPCRDMA_EV_REPLY_SENT:
				harness_reply_sent(incs, MAX_RS, &ev);
				break;
			case RPCRDMA_EV_CLOSE:
				if (!connected)
					FAIL("CLOSE delivered while disconnected");
				break;
			default:
				FAIL("unknown event %d", (int)ev.type);
			}
		}
		if (auto_complete && sq_count && connected) {
			moved = true;
			complete_sends(sq_count);
		}
		if (!moved)
			break;
	}
	check_info();
}

static void complete_sends(uint32_t n)
{
	while (n-- && sq_count) {
		struct pend p = sq[sq_head];
		sq_head = (sq_head + 1) % MAX_PEND;
		sq_count--;
		if (!qp_err && !p.signaled) {
			sq_unacked++;
			continue;
		}
		if (!qp_err)
			sq_unacked = 0;
		struct rpcrdma_wc wc;
		harness_wc(&wc, p.wr_id, p.op, qp_err);
		/* A LOCAL_INV kills its rkey when it executes (RFC 8166
		 * §4.4.1: the memory is the Requester's again). */
		if (p.op == RPCRDMA_WR_LOCAL_INV && !qp_err) {
			struct fmr *r = key_mr(p.inv_rkey);
			if (r && r->used)
				r->rvalid = false;
		}
		int rc = rpcrdma_engine_completion(E, &wc);
		if (rc)
			FAIL("completion of a live work request returned %d", rc);
	}
}

/* ---------------------------------------------------------------------
 * Connection
 */
static void establish(struct in *in)
{
	uint8_t mode = u8(in);
	uint8_t pd[16];
	size_t plen = 0;
	if (mode & 0x80) {
		static const uint32_t sz[4] = {1024, 2048, 4096, 8192};
		size_t at = (mode >> 4) & 3; /* RFC 8797 §5.2: any offset */
		memset(pd, 0x5a, at);
		plen = at + (size_t)rpcrdma_cm_pdata_encode(
			pd + at, sizeof pd - at, sz[mode & 3], sz[(mode >> 2) & 3],
			(mode & 0x40) != 0);
	} else {
		plen = mode & 15;
		bytes(in, pd, plen);
	}
	uint8_t ord = u8(in);
	connected = true;
	qp_err = false;
	sends_this_conn = 0;
	opener_seen = false;
	int rc = rpcrdma_engine_established(E, plen ? pd : NULL, plen, ord, now);
	if (rc)
		FAIL("established = %d", rc);
	drain();
}

/* The QP failed: the peer reaches none of our memory any more. */
static void qp_error(void)
{
	qp_err = true;
	for (uint32_t k = 0; k < nkeys; k++)
		mrs[k].rvalid = false;
}

static void lose_connection(void)
{
	TRACE("conn_lost\n");
	connected = false;
	sq_head = sq_count = sq_unacked = 0;
	rq_head = rq_count = 0;
	qp_error();
	qp_err = false;
	rpcrdma_engine_conn_lost(E, now);
	drain();
}

/* ---------------------------------------------------------------------
 * The server
 */
static void deliver(uint8_t *msg, size_t len, bool with_inv, uint32_t inv)
{
	if (!connected || qp_err || !rq_count)
		return;
	/* Remote invalidation: the hardware kills the rkey on arrival, if
	 * it is one of ours that may be invalidated. */
	if (with_inv) {
		struct fmr *r = key_mr(inv);
		if (r && r->used && r->remote)
			r->rvalid = false;
	}
	uint32_t at = rq_head;
	struct pend p = rq_[at];
	struct rpcrdma_sge g = rq_sge[at];
	rq_head = (rq_head + 1) % MAX_PEND;
	rq_count--;
	struct rpcrdma_wc wc;
	memset(&wc, 0, sizeof wc);
	wc.wr_id = p.wr_id;
	wc.opcode = RPCRDMA_WC_RECV;
	if (len > g.length) {
		wc.status = RPCRDMA_WC_LOC_LEN_ERR;
		qp_error();
	} else {
		uint8_t *d = check_sge(&g, RPCRDMA_ACCESS_LOCAL_WRITE, "Recv use");
		memcpy(d, msg, len);
		wc.status = RPCRDMA_WC_SUCCESS;
		wc.byte_len = (uint32_t)len;
		if (with_inv) {
			wc.wc_flags = RPCRDMA_WC_WITH_INV;
			wc.invalidated_rkey = inv;
		}
	}
	TRACE("  deliver %zu bytes inv %d:%#x\n", len, with_inv, inv);
	int rc = rpcrdma_engine_completion(E, &wc);
	if (rc)
		FAIL("receive completion = %d", rc);
}

/* The server's RDMA Write into our memory: only through a live, writable
 * handle, inside it; anything else is a remote access error that ends
 * the connection before the Send behind it (false). */
static bool peer_write(const struct rpcrdma_segment *g)
{
	if (!g->length)
		return true;
	struct fmr *r = key_mr(g->handle);
	uint8_t *p = (uint8_t *)(uintptr_t)g->offset;
	if (!r || !r->used || !r->remote || !r->rvalid ||
	    !(r->access & RPCRDMA_ACCESS_REMOTE_WRITE) || p < r->addr ||
	    (size_t)(p - r->addr) > r->len ||
	    r->len - (size_t)(p - r->addr) < g->length) {
		TRACE("  RDMA Write to %#x refused: connection dies\n", g->handle);
		lose_connection();
		return false;
	}
	fill_pat(p, g->length);
	return true;
}

/* g is the offered segment with no more than its length. */
static bool seg_within(const struct rpcrdma_segment *g,
		       const struct rpcrdma_segment *offered)
{
	return g->handle == offered->handle && g->offset == offered->offset &&
	       g->length <= offered->length;
}

/* A segment for chunk position i of a reply to attempt a, as the input
 * says: the offered one (length up to offered, or one more), an earlier
 * attempt's or another call's handle, or junk. */
static void reply_seg(struct in *in, const struct rpcrdma_segment *offered,
		      struct rpcrdma_segment *g, uint8_t how)
{
	uint16_t v = u16(in);
	switch (how & 7) {
	default: /* honest */
		*g = *offered;
		g->length = offered->length ? v % (offered->length + 1u) : 0;
		break;
	case 5: /* one byte more than offered */
		*g = *offered;
		g->length = offered->length + 1u;
		break;
	case 6: /* another attempt's or call's handle */
		if (nold) {
			*g = old[v % (nold < MAX_OLD ? nold : MAX_OLD)];
			g->length = g->length ? (v >> 4) % (g->length + 1u) : 0;
		} else {
			*g = *offered;
			g->offset += 4;
			g->length = 1;
		}
		break;
	case 7: /* junk */
		g->handle = 0x100u + (v & 0xff);
		g->offset = (uint64_t)(v >> 8) << 12;
		g->length = v % 600u;
		break;
	}
}

/* A MSG or NOMSG header with lists cl in version vers, into pmsg; its
 * length, or 0 when it does not encode. */
static size_t encode_hdr(uint32_t vers, uint32_t xid, uint32_t credit,
			 bool nomsg, uint32_t flags,
			 const struct rpcrdma_chunk_lists *cl)
{
	int n;
	if (vers == 2) {
		rpcrdma_v2_hdr_init(&h2);
		h2.xid = xid;
		h2.vers = 2;
		h2.credit = credit;
		h2.htype = nomsg ? RPCRDMA_V2_NOMSG : RPCRDMA_V2_MSG;
		h2.flags = flags;
		rpcrdma_chunk_lists_copy(&h2.chunks, cl);
		n = rpcrdma_v2_encode(pmsg, sizeof pmsg, &h2);
	} else {
		rpcrdma_v1_hdr_init(&h1);
		h1.xid = xid;
		h1.vers = 1;
		h1.credit = credit;
		h1.proc = nomsg ? RPCRDMA_V1_NOMSG : RPCRDMA_V1_MSG;
		rpcrdma_chunk_lists_copy(&h1.chunks, cl);
		n = rpcrdma_v1_encode(pmsg, sizeof pmsg, &h1);
	}
	return n < 0 ? 0 : (size_t)n;
}

/* A reply (MSG or NOMSG) to call ci's last attempt. */
static void reply(struct in *in, int ci, uint8_t fl)
{
	const struct attempt *a = &att[ci];
	struct call *c = &calls[ci];
	uint8_t how = u8(in), nw_sel = u8(in);
	bool nomsg = fl & 1;
	struct rpcrdma_chunk_lists cl;
	rpcrdma_chunk_lists_init(&cl);
	/* The Write list: as offered, or with more chunks (nw_sel & 0x80),
	 * or fewer; a chunk offered empty maybe given a segment. */
	uint32_t nw = a->cl.nwrites;
	if (nw_sel & 0x80)
		nw = nw + 1u + (nw_sel & 1u);
	else if (nw_sel & 0x40)
		nw = nw ? nw - 1 : 0;
	if (nw > RPCRDMA_MAX_WRITE_CHUNKS)
		nw = RPCRDMA_MAX_WRITE_CHUNKS;
	cl.nwrites = nw;
	for (uint32_t i = 0; i < nw; i++) {
		struct rpcrdma_write_chunk *w = &cl.writes[i];
		struct rpcrdma_segment none = {0, 0, 0};
		bool offered = i < a->cl.nwrites && a->cl.writes[i].nsegs;
		uint8_t seg_how = (uint8_t)(how >> (i % 4) * 2);
		if (!offered && !(seg_how & 2) && i < a->cl.nwrites) {
			w->nsegs = 0; /* empty as offered */
			continue;
		}
		w->nsegs = 1;
		reply_seg(in, offered ? &a->cl.writes[i].segs[0] : &none,
			  &w->segs[0], offered ? (uint8_t)(seg_how & 7)
					       : (uint8_t)(6 + (seg_how & 1)));
	}
	/* The Reply chunk. */
	size_t body = 24 + 4u * (u8(in) % 48u);
	if (a->cl.has_reply || (fl & 2)) {
		cl.has_reply = true;
		cl.reply.nsegs = 1;
		struct rpcrdma_segment none = {0, 0, 0};
		reply_seg(in, a->cl.has_reply ? &a->cl.reply.segs[0] : &none,
			  &cl.reply.segs[0], (uint8_t)((fl >> 2) & 7));
		if (!nomsg)
			cl.reply.segs[0].length = 0;
		else if (!(fl & 0x20) && a->cl.has_reply)
			cl.reply.segs[0].length = (uint32_t)(
				body < a->cl.reply.segs[0].length
					? body : a->cl.reply.segs[0].length);
	}
	if (nomsg && !cl.has_reply && !cl.nwrites)
		return;
	/* The server writes what it returns in the segments this attempt
	 * offered (the engine cannot tell a Responder that claims more than
	 * it wrote there).  What it names beyond them it may write, through
	 * whatever handle (the hardware decides), or only claim: the
	 * engine must tell those from the offered ones by the header. */
	uint8_t wr = u8(in);
	for (uint32_t i = 0; i < cl.nwrites; i++)
		for (uint32_t j = 0; j < cl.writes[i].nsegs; j++) {
			const struct rpcrdma_segment *g = &cl.writes[i].segs[j];
			bool mine = i < a->cl.nwrites && j < a->cl.writes[i].nsegs &&
				    seg_within(g, &a->cl.writes[i].segs[j]);
			if ((mine || (wr >> (i % 8) & 1)) && !peer_write(g))
				return;
		}
	if (nomsg && cl.has_reply) {
		bool mine = a->cl.has_reply && a->cl.reply.nsegs &&
			    seg_within(&cl.reply.segs[0], &a->cl.reply.segs[0]);
		if ((mine || (wr & 0x80)) && !peer_write(&cl.reply.segs[0]))
			return;
	}
	uint32_t xid = c->xid;
	size_t hl = encode_hdr(a->vers, xid, u8(in), nomsg,
			       RPCRDMA_V2_F_RESPONSE, &cl);
	if (!hl)
		return;
	size_t len = hl;
	if (!nomsg) {
		if (hl + body > sizeof pmsg)
			return;
		fill_pat(pmsg + hl, body);
		rpcrdma_be32_put(pmsg + hl, xid);
		rpcrdma_be32_put(pmsg + hl + 4, RPCRDMA_RPC_REPLY);
		len += body;
	}
	/* Send With Invalidate: the handle the call named, or any. */
	uint8_t sw = u8(in);
	bool with_inv = sw & 1;
	uint32_t inv = a->inv_handle;
	if (with_inv && (!inv || (sw & 2))) {
		uint32_t k = sw >> 2;
		inv = nkeys ? KEY_BASE + k % nkeys : 0;
	}
	deliver(pmsg, len, with_inv, inv);
}

/* An RDMA_ERROR in RFC 8166's layout into pmsg; rdma_vers 2 gives the
 * layout Linux answers a v2 message with.  Its length (0: none). */
static size_t v1_error(uint32_t xid, uint32_t vers, uint32_t credit,
		       uint32_t err, uint32_t lo, uint32_t hi)
{
	rpcrdma_v1_hdr_init(&h1);
	h1.xid = xid;
	h1.vers = 1;
	h1.credit = credit;
	h1.proc = RPCRDMA_V1_ERROR;
	h1.err = err;
	h1.vers_low = lo;
	h1.vers_high = hi;
	int n = rpcrdma_v1_encode(pmsg, sizeof pmsg, &h1);
	if (n < 0)
		return 0;
	rpcrdma_be32_put(pmsg + 4, vers);
	return (size_t)n;
}

static void error_reply(struct in *in, int ci, uint8_t fl)
{
	uint32_t xid = ci >= 0 ? calls[ci].xid : u32(in);
	uint32_t vers = ci >= 0 && att[ci].sent ? att[ci].vers : 1;
	uint8_t code = u8(in), v = u8(in);
	size_t len;
	if (vers == 2 && !(fl & 1)) {
		rpcrdma_v2_hdr_init(&h2);
		h2.xid = xid;
		h2.vers = 2;
		h2.credit = u8(in);
		h2.htype = RPCRDMA_V2_ERROR;
		h2.flags = RPCRDMA_V2_F_RESPONSE;
		h2.error.code = (code & 0x80) ? u32(in) : 1u + code % 9u;
		h2.error.vers_low = v & 3;
		h2.error.vers_high = (v >> 2) & 3;
		h2.error.max_chunks = (v >> 4) & 3;
		h2.error.max_segments = (v >> 4) & 3;
		h2.error.chunk_index = (v >> 6) & 3;
		h2.error.length_needed = u16(in);
		int n = rpcrdma_v2_encode(pmsg, sizeof pmsg, &h2);
		if (n < 0)
			return;
		len = (size_t)n;
	} else {
		len = v1_error(xid, vers, u8(in),
			       (code & 1) ? RPCRDMA_V1_ERR_VERS : RPCRDMA_V1_ERR_CHUNK,
			       v & 3, (v >> 2) & 3);
	}
	deliver(pmsg, len, false, 0);
}

/* The answer to our v2 opener: a CONNPROP (RBSIZ, BRS maybe), or
 * ERR_VERS in the v2 or the Linux layout. */
static void answer_opener(struct in *in)
{
	if (!opener_seen)
		return;
	uint8_t k = u8(in), p = u8(in);
	size_t len;
	if (k % 4 == 0 || k % 4 == 3) {
		rpcrdma_v2_hdr_init(&h2);
		h2.xid = opener_xid;
		h2.vers = 2;
		h2.credit = u8(in);
		h2.htype = RPCRDMA_V2_CONNPROP;
		h2.flags = RPCRDMA_V2_F_RESPONSE;
		static const uint32_t rb[4] = {1024, 4096, 2048, 65536};
		if (p & 1) {
			struct rpcrdma_v2_prop *q = &h2.props[h2.nprops++];
			q->propid = RPCRDMA_V2_PROPID_RBSIZ;
			q->has_value = !(p & 2);
			q->value = rb[(p >> 2) & 3];
		}
		if (p & 0x10) {
			struct rpcrdma_v2_prop *q = &h2.props[h2.nprops++];
			q->propid = RPCRDMA_V2_PROPID_BRS;
			q->has_value = true;
			q->value = (p >> 5) % 3u;
		}
		int n = rpcrdma_v2_encode(pmsg, sizeof pmsg, &h2);
		if (n < 0)
			return;
		len = (size_t)n;
	} else {
		len = v1_error(opener_xid, k % 4 == 1 ? 2 : 1, u8(in),
			       RPCRDMA_V1_ERR_VERS, 1, 1);
	}
	opener_seen = false;
	deliver(pmsg, len, false, 0);
}

/* A reverse call from the server (RFC 8167): Short, maybe offering a
 * Write chunk or a Reply chunk of its own. */
static void reverse_call(struct in *in)
{
	uint8_t fl = u8(in);
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	uint32_t vers = info.version ? info.version : 1;
	struct rpcrdma_chunk_lists cl;
	rpcrdma_chunk_lists_init(&cl);
	if (fl & 1) {
		cl.nwrites = 1;
		cl.writes[0].nsegs = 1;
		gen_seg(in, &cl.writes[0].segs[0], 5000);
	}
	if (fl & 2) {
		cl.has_reply = true;
		cl.reply.nsegs = 1;
		gen_seg(in, &cl.reply.segs[0], 9000);
	}
	uint32_t xid = (fl & 4) && ncalls ? calls[u8(in) % ncalls].xid
					  : peer_xid++;
	size_t hl = encode_hdr(vers, xid, 1, false,
			       (fl & 8) ? RPCRDMA_V2_F_RESPONSE : 0, &cl);
	if (!hl)
		return;
	size_t body = 40 + 4u * (fl >> 4);
	memset(pmsg + hl, 0, body);
	rpcrdma_be32_put(pmsg + hl, xid);
	rpcrdma_be32_put(pmsg + hl + 4, RPCRDMA_RPC_CALL);
	rpcrdma_be32_put(pmsg + hl + 8, 2);
	deliver(pmsg, hl + body, false, 0);
}

/* Our client answers a reverse call: a small reply, maybe a DDP result
 * (into the server's Write chunk, if it offered one). */
static void answer(uint32_t call_id, uint8_t shape)
{
	struct inc *ic = &incs[call_id];
	if (ic->state != 1)
		return;
	struct rpcrdma_iov v[3];
	unsigned n = 0;
	uint8_t *h = inc_alloc(incs, ic, 24);
	uint32_t w[6] = {ic->xid, RPCRDMA_RPC_REPLY, 0, 0, 0, 0};
	for (int i = 0; i < 6; i++)
		rpcrdma_be32_put(h + 4 * i, w[i]);
	v[n++] = (struct rpcrdma_iov){h, 24, false};
	if (shape & 1) {
		size_t len = 100u + 37u * (shape >> 4);
		uint8_t *b = inc_alloc(incs, ic, len);
		memset(b, 0xd0, len);
		v[n++] = (struct rpcrdma_iov){b, len, true};
	}
	struct rpcrdma_reply_req rep = {v, n, ic, false};
	int rc = rpcrdma_engine_submit_reply(E, call_id, &rep, now);
	if (rc == 0)
		ic->state = 2;
	else if (rc == RPCRDMA_ERR_DISCONNECTED)
		free_inc_in(incs, ic);
	else
		FAIL("submit_reply(%u) = %d", call_id, rc);
}

/* Raw bytes from the input (0xEE replaced: the payload of an inline
 * reply is "written" by the server). */
static void raw_message(struct in *in)
{
	uint16_t len = u16(in) % 1100u;
	uint8_t sel = u8(in);
	bytes(in, pmsg, len);
	for (uint16_t i = 0; i < len; i++)
		if (pmsg[i] == POISON)
			pmsg[i] = 0xED;
	if (len >= 4 && ncalls && (sel & 1))
		rpcrdma_be32_put(pmsg, calls[(sel >> 1) % ncalls].xid);
	deliver(pmsg, len, false, 0);
}

/* ---------------------------------------------------------------------
 * Operations
 */
static int pick_call(uint8_t sel)
{
	/* A call with an attempt out, else any of ours. */
	unsigned nout = 0;
	for (unsigned i = 0; i < ncalls; i++)
		if (calls[i].used && !calls[i].done && att[i].sent)
			nout++;
	if (!nout)
		return ncalls ? (int)(sel % ncalls) : -1;
	unsigned k = sel % nout;
	for (unsigned i = 0; i < ncalls; i++)
		if (calls[i].used && !calls[i].done && att[i].sent && !k--)
			return (int)i;
	return -1;
}

static void run_op(struct in *in)
{
	uint8_t op = u8(in);
	TRACE("op %u\n", op % 12);
	switch (op % 12) {
	case 0:
	case 1:
	case 2: { /* a reply */
		uint8_t fl = u8(in);
		int ci = pick_call(u8(in));
		if (ci >= 0 && att[ci].sent && connected)
			reply(in, ci, fl);
		break;
	}
	case 3: { /* an error */
		uint8_t fl = u8(in);
		int ci = (fl & 0x80) ? -1 : pick_call(u8(in));
		if (connected)
			error_reply(in, ci, fl);
		break;
	}
	case 4:
		if (ncalls < MAX_CALLS &&
		    harness_submit(E, in, &calls[ncalls], ncalls, 3, now)) {
			memset(&att[ncalls], 0, sizeof att[ncalls]);
			ncalls++;
		}
		break;
	case 5:
		complete_sends((uint32_t)(u8(in) % 8) + 1);
		break;
	case 6:
		answer_opener(in);
		break;
	case 7:
		reverse_call(in);
		break;
	case 8: {
		uint8_t idx = u8(in), shape = u8(in);
		for (uint32_t i = 0; i < MAX_RS; i++)
			if (incs[(i + idx) % MAX_RS].state == 1) {
				answer((i + idx) % MAX_RS, shape);
				break;
			}
		break;
	}
	case 9: { /* the connection: lost, back, or an error completion */
		uint8_t k = u8(in);
		if (connected && (k & 1)) {
			lose_connection();
		} else if (!connected) {
			establish(in);
		} else if (sq_count) {
			struct pend p = sq[sq_head];
			sq_head = (sq_head + 1) % MAX_PEND;
			sq_count--;
			struct rpcrdma_wc wc;
			memset(&wc, 0, sizeof wc);
			wc.wr_id = p.wr_id;
			wc.status = (enum rpcrdma_wc_status)(1 + k % 11);
			qp_error();
			if (rpcrdma_engine_completion(E, &wc))
				FAIL("error completion rejected");
		}
		break;
	}
	case 10: /* time passes: an opener unanswered, registrations */
		now += 1u + u16(in) * 16u;
		rpcrdma_engine_tick(E, now);
		break;
	default:
		raw_message(in);
		break;
	}
	drain();
}

/* ---------------------------------------------------------------------
 * One input
 */
static void reset_state(void)
{
	memset(mrs, 0, nkeys * sizeof mrs[0]);
	memset(owner, 0, nkeys * sizeof owner[0]);
	nkeys = 0;
	live_regs = 0;
	nreg = nrel = 0;
	again_budget = fail_budget = 0;
	faults_armed = fail_remote_only = true;
	conn_up = true;
	connected = qp_err = false;
	sq_head = sq_count = sq_unacked = rq_head = rq_count = 0;
	memset(calls, 0, sizeof calls);
	memset(att, 0, sizeof att);
	ncalls = 0;
	memset(incs, 0, sizeof incs);
	nold = 0;
	opener_seen = false;
	opener_xid = 0;
	call_sent = false;
	nonce = 0;
	peer_xid = 0x7000;
	now = 1000;
}

static void run_input(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	init_wpat();
	reset_state();
	rpcrdma_engine_config_default(&C);
	C.client = true;
	uint8_t b0 = u8(&in);
	static const uint32_t vs[4] = {RPCRDMA_ENGINE_V1_ONLY,
				       RPCRDMA_ENGINE_PREFER_V2,
				       RPCRDMA_ENGINE_V2_ONLY,
				       RPCRDMA_ENGINE_PREFER_V2};
	C.versions = vs[b0 & 3];
	C.remote_inv = (b0 & 4) != 0;
	C.resend_after_reply = (b0 & 8) != 0;
	C.local_inv = !(b0 & 0x10);
	release_invalidates = !C.local_inv;
	C.max_retries = (b0 >> 5) & 3u;
	auto_complete = !(b0 & 0x80);
	uint8_t b1 = u8(&in);
	C.max_calls = 1u + (b1 & 7u);
	C.credits = 1u + ((b1 >> 3) & 3u); /* reverse direction */
	auto_answer = (b1 & 0x20) != 0;
	C.neg_timeout_ms = (b1 & 0x40) ? 100 : 2000;
	uint8_t b2 = u8(&in);
	C.max_inline_recv = 1024u * (1u + (b2 & 3u));
	C.max_inline_send = 1024u * (1u + ((b2 >> 2) & 3u));
	static const uint32_t seeds[8] = {1, 0x100, 0x7ffffffe, 0xfffffff0,
					  0xffffffff, 0x80000000, 0xdead0000, 7};
	C.xid_seed = seeds[(b2 >> 4) & 7];
	static const struct rpcrdma_engine_mem_ops ops = {
		NULL, fake_reg, fake_release, NULL, NULL, NULL,
	};
	int rc = harness_engine(&C, &ops, &E);
	if (rc)
		FAIL("engine = %d", rc);
	again_budget = (b2 >> 7) & 1;
	establish(&in);
	for (int n = 0; in.n && n < 400; n++)
		run_op(&in);

	/* Teardown: every call completes exactly once.  The connection is
	 * lost and comes back (the opener unanswered: time runs out) until
	 * each call has used its retries. */
	again_budget = fail_budget = 0;
	auto_complete = true;
	drain();
	for (int round = 0; round < 40; round++) {
		bool pending = false;
		for (unsigned i = 0; i < ncalls; i++)
			if (!calls[i].done)
				pending = true;
		if (!pending)
			break;
		if (connected)
			lose_connection();
		connected = true;
		qp_err = false;
		sends_this_conn = 0;
		opener_seen = false;
		if (rpcrdma_engine_established(E, NULL, 0, 1, now))
			FAIL("re-establish");
		drain();
		now += 10000;
		rpcrdma_engine_tick(E, now);
		drain();
	}
	if (connected)
		lose_connection();
	for (unsigned i = 0; i < ncalls; i++)
		if (calls[i].done != 1)
			FAIL("call %#x completed %d times", calls[i].xid,
			     calls[i].done);
	for (uint32_t i = 0; i < MAX_RS; i++)
		if (incs[i].state == 1)
			answer(i, 0);
	drain();
	for (uint32_t i = 0; i < MAX_RS; i++)
		if (incs[i].state == 2)
			FAIL("reply to a reverse call never got REPLY_SENT");
	harness_engine_done(E);
	E = NULL;
	if (live_regs || nreg != nrel)
		FAIL("%u registrations leaked (%llu made, %llu released)",
		     live_regs, (unsigned long long)nreg, (unsigned long long)nrel);
	for (unsigned i = 0; i < ncalls; i++)
		free_call(&calls[i]);
	for (uint32_t i = 0; i < MAX_RS; i++)
		free_inc_in(incs, &incs[i]);
}
