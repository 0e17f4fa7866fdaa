/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target: the connection engine (engine/) speaking RPC-over-RDMA
 * version 2 (draft-cel-nfsv4-rpcrdma-version-two-09) and negotiating the
 * version (§7) against a hostile peer.
 *
 * The harness plays driver, RDMA hardware and peer around one engine, as
 * fuzz_engine_recv.c does for v1, but the peer's messages are mostly
 * built with the codecs (rpcrdma_v2_encode / rpcrdma_v1_encode) from a
 * few fuzzer choices, so negotiation, RDMA2_CONNPROP, RDMA2_MSG/NOMSG and
 * every RDMA2_ERROR code with its recovery are reached quickly.  XIDs are
 * picked from our outstanding calls, from the opener (the RDMA2_CONNPROP
 * the engine sent as a client), from what the engine sent, or at random.
 *
 * Invariants checked (abort on violation):
 *  - every submitted call gets at most one CALL_DONE, with its own XID,
 *    for a user pointer we gave; reply_len <= reply_max; results within
 *    the offered lengths;
 *  - every registration is released exactly once, only registrations
 *    that exist, and none is left after destroy; every SGE lies in a live
 *    registration with the access needed;
 *  - no Send is larger than our max_inline_send; no call is larger than
 *    the send threshold (RFC 8166 §3.3.2; v2: the peer's RBSIZ, §4.2.1);
 *    the opener is at most 1024 bytes (§7);
 *  - while info.negotiating, the opener is the only Send posted on the
 *    connection (§7: one v2 message, then nothing until the answer);
 *  - every Send decodes: rdma_vers 2 with rpcrdma_v2_decode, 1 with
 *    rpcrdma_v1_decode; an ERR_VERS may echo another version in the v1
 *    layout; calls go in the connection's version; errors are responses;
 *  - credits_granted within [1, max_calls], calls_in_flight <= max_calls,
 *    recvs_posted equals the receives handed out;
 *  - INCOMING_CALL / REPLY_SENT name live, consistent call_ids.
 *
 * Input layout (reads past the end yield zeros):
 *   config  8 bytes (see LLVMFuzzerTestOneInput) + xid_seed (4)
 *   connect mode (& 0x80: a valid RFC 8797 message from 3 bytes, else
 *           mode & 15 raw bytes), ord
 *   ops...  one byte each (mod 16) plus operands, at most 300; see
 *           run_op().
 * FUZZ_ENGINE_TRACE=1 traces every step.  Seeds:
 * fuzz/corpus_gen/gen_engine_v2.py.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_NAME "fuzz_engine_v2"
#include "engine/engine.h"
#include "fuzz/engine_harness.h"
#include "wire/cm_private_data.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"


/* ---------------------------------------------------------------------
 * Queues (completed in posting order) and peer segments
 */
#define MAX_PEND 4096u
struct pend {
	uint64_t wr_id;
	bool signaled;
	enum rpcrdma_wr_opcode op;
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
	uint32_t read_xid;
};
static struct pend sq[MAX_PEND];
static uint32_t sq_head, sq_count;
/* Unsignalled requests done but not yet acknowledged by a signalled
 * completion: like a real send queue, they still take an entry. */
static uint32_t sq_unacked;
static struct pend rq_[MAX_PEND];
static uint32_t rq_head, rq_count;
static bool qp_err;

/* handle -> XID of the peer message that advertised it (RDMA Read data
 * is made to look like that call). */
#define MAX_PSEG 512u
static struct {
	uint32_t handle, xid;
} psegs[MAX_PSEG];
static uint32_t npseg;

static void add_pseg(uint32_t handle, uint32_t xid)
{
	psegs[npseg % MAX_PSEG].handle = handle;
	psegs[npseg % MAX_PSEG].xid = xid;
	npseg++;
}

static uint32_t pseg_xid(uint32_t handle)
{
	uint32_t n = npseg < MAX_PSEG ? npseg : MAX_PSEG;
	for (uint32_t i = 0; i < n; i++)
		if (psegs[i].handle == handle)
			return psegs[i].xid;
	return 0;
}

/* ---------------------------------------------------------------------
 * Upper layer bookkeeping
 */
#define MAX_CALLS 24u
static struct call calls[MAX_CALLS];
static unsigned ncalls;

#define MAX_RS 128u
static struct inc incs[MAX_RS];

/* Chunk lists of the calls the engine sent, by XID, so replies can echo
 * them (and reach the deep reply paths). */
#define MAX_SENT 8u
struct sent {
	uint32_t xid;
	uint32_t vers;
	struct rpcrdma_chunk_lists cl;
};
static struct sent sent[MAX_SENT];
static uint32_t nsent;
static uint32_t sent_xids[16];
static uint32_t nsent_xids;

static struct rpcrdma_engine *E;
static struct rpcrdma_engine_config C;
static uint8_t flags;
static uint64_t now;
static bool connected;
static bool close_seen; /* the engine asked to close this connection */
static uint32_t opener_xid;
static bool have_opener;
static uint32_t sends_this_conn;
static uint32_t last_rx_xid;
static uint32_t peer_xid = 0x7000;

enum {
	F_AUTOCOMPLETE = 1,
	F_AUTOANSWER = 2,
	F_ABRUPT = 4,
	F_BIGREPLY = 8,
};

/* ---------------------------------------------------------------------
 * Answering an incoming call
 */
static void answer(uint32_t call_id, uint8_t shape, struct in *in)
{
	struct inc *ic = &incs[call_id];
	struct rpcrdma_iov v[5];
	unsigned n = 0;
	uint8_t *h = inc_alloc(incs, ic, 24);
	uint32_t w[6] = {ic->xid, RPCRDMA_RPC_REPLY, 0, 0, 0, 0};
	for (int i = 0; i < 6; i++)
		rpcrdma_be32_put(h + 4 * i, w[i]);
	ic->bufs[ic->nbufs++] = h;
	v[n++] = (struct rpcrdma_iov){h, 24, false};
	unsigned nddp = shape & 3;
	for (unsigned i = 0; i < nddp; i++) {
		size_t len = in ? u16(in) % 9000u : 100u + 37u * i;
		uint8_t *b = inc_alloc(incs, ic, len);
		memset(b, 0xd0 + (int)i, len);
		ic->bufs[ic->nbufs++] = b;
		v[n++] = (struct rpcrdma_iov){b, len, true};
	}
	if (shape & 4) {
		size_t len = in ? (u16(in) % 12000u) & ~(size_t)3 : 5000u;
		uint8_t *b = inc_alloc(incs, ic, len);
		memset(b, 0x5a, len);
		ic->bufs[ic->nbufs++] = b;
		v[n++] = (struct rpcrdma_iov){b, len, false};
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

/* ---------------------------------------------------------------------
 * Checking what the engine sends
 */
static struct rpcrdma_v1_hdr h1;
static struct rpcrdma_v2_hdr h2;

static void remember_sent_call(uint32_t xid, uint32_t vers,
			       const struct rpcrdma_chunk_lists *cl)
{
	for (uint32_t i = 0; i < MAX_SENT && i < nsent; i++)
		if (sent[i].xid == xid) {
			sent[i].vers = vers;
			sent[i].cl = *cl;
			return;
		}
	struct sent *s = &sent[nsent++ % MAX_SENT];
	s->xid = xid;
	s->vers = vers;
	s->cl = *cl;
}

static const struct sent *find_sent(uint32_t xid)
{
	for (uint32_t i = 0; i < MAX_SENT && i < nsent; i++)
		if (sent[i].xid == xid)
			return &sent[i];
	return NULL;
}

/* A v1-layout RDMA_ERROR ERR_VERS (RFC 8166 §4.1.2: fixed for all
 * versions), whatever rdma_vers it echoes. */
static bool v1_layout_err_vers(const uint8_t *m, size_t n)
{
	return n == 28 && rpcrdma_be32_get(m + 12) == RPCRDMA_V1_ERROR &&
	       rpcrdma_be32_get(m + 16) == RPCRDMA_V1_ERR_VERS;
}

static void check_send(const struct rpcrdma_engine_wr *w)
{
	const struct rpcrdma_send_wr *sw = &w->send;
	if (sw->num_sge < 1 || sw->num_sge > (int)RPCRDMA_ENGINE_MAX_SGE)
		FAIL("send with %d SGEs", sw->num_sge);
	static uint8_t msg[1u << 18];
	size_t n = 0;
	for (int i = 0; i < sw->num_sge; i++) {
		const uint8_t *p = check_sge(&sw->sg_list[i], 0, "Send");
		if (n + sw->sg_list[i].length > sizeof msg)
			FAIL("send too large");
		memcpy(msg + n, p, sw->sg_list[i].length);
		n += sw->sg_list[i].length;
	}
	uint32_t smax = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_send));
	if (n > smax)
		FAIL("Send of %zu bytes over max_inline_send %u", n, smax);
	if (n < 16)
		FAIL("Send of %zu bytes: no transport header", n);
	dig(n);
	dig((uint64_t)rpcrdma_be32_get(msg + 4) << 32 ^ rpcrdma_be32_get(msg + 12));
	sends_this_conn++;
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	uint32_t xid = rpcrdma_be32_get(msg);
	uint32_t vers = rpcrdma_be32_get(msg + 4);
	sent_xids[nsent_xids++ % 16] = xid;
	TRACE("  send len %zu xid %#x vers %u proc %u\n", n, xid, vers,
	      rpcrdma_be32_get(msg + 12));

	if (info.negotiating) {
		/* §7: exactly one v2 message until the answer. */
		if (sends_this_conn > 1)
			FAIL("Send #%u posted while negotiating (only the "
			     "opener may be, draft §7)", sends_this_conn);
		if (vers != RPCRDMA_VERSION_2 || n > 1024)
			FAIL("opener is not a v2 message of <= 1024 bytes");
	}
	if (vers != RPCRDMA_VERSION_1 && vers != RPCRDMA_VERSION_2) {
		if (!v1_layout_err_vers(msg, n))
			FAIL("Send with rdma_vers %u that is not ERR_VERS", vers);
		return;
	}
	if (vers == RPCRDMA_VERSION_1) {
		int rc = rpcrdma_v1_decode(msg, n, NULL, &h1);
		if (rc)
			FAIL("engine sent an undecodable v1 header (%d)", rc);
		if (h1.proc == RPCRDMA_V1_MSGP || h1.proc == RPCRDMA_V1_DONE)
			FAIL("engine sent a reserved procedure");
		if (h1.proc == RPCRDMA_V1_ERROR)
			return;
		bool is_call = (h1.proc == RPCRDMA_V1_NOMSG && h1.chunks.nreads) ||
			       (h1.proc == RPCRDMA_V1_MSG && n >= h1.hdr_len + 8 &&
				rpcrdma_be32_get(msg + h1.hdr_len + 4) ==
					RPCRDMA_RPC_CALL);
		if (is_call) {
			if (info.version != RPCRDMA_VERSION_1)
				FAIL("v1 call on a connection of version %u",
				     info.version);
			if (sw->opcode == RPCRDMA_WR_SEND_WITH_INV)
				FAIL("call sent With Invalidate");
			remember_sent_call(xid, 1, &h1.chunks);
			/* Built on this drain, under the current threshold
			 * (RFC 8166 §3.3.2; v2: the peer's RBSIZ, §4.2.1). */
			if (n > info.send_threshold)
				FAIL("v1 call of %zu bytes over the send threshold "
				     "%u", n, info.send_threshold);
		}
		return;
	}
	/* rdma_vers 2 */
	int rc = rpcrdma_v2_decode(msg, n, NULL, &h2);
	if (rc) {
		/* A v1-only engine answers v2 with the v1 layout. */
		if (C.versions == RPCRDMA_ENGINE_V1_ONLY &&
		    v1_layout_err_vers(msg, n))
			return;
		FAIL("engine sent an undecodable v2 header (%d)", rc);
	}
	if (h2.flags & RPCRDMA_V2_F_RESERVED)
		FAIL("reserved rdma_flags bits set (§3.2)");
	switch (h2.htype) {
	case RPCRDMA_V2_CONNPROP:
		if (!(h2.flags & RPCRDMA_V2_F_RESPONSE) && C.client &&
		    info.negotiating) {
			opener_xid = xid;
			have_opener = true;
		}
		break;
	case RPCRDMA_V2_ERROR:
		if (!(h2.flags & RPCRDMA_V2_F_RESPONSE))
			FAIL("RDMA2_ERROR without F_RESPONSE (§3.2)");
		break;
	default: {
		bool is_call = !(h2.flags & RPCRDMA_V2_F_RESPONSE);
		if (h2.htype == RPCRDMA_V2_MSG && n >= h2.hdr_len + 8) {
			uint32_t mt = rpcrdma_be32_get(msg + h2.hdr_len + 4);
			if (mt != (is_call ? RPCRDMA_RPC_CALL : RPCRDMA_RPC_REPLY))
				FAIL("F_RESPONSE does not match msg_type (§3.2)");
		}
		if (is_call) {
			if (info.version != RPCRDMA_VERSION_2)
				FAIL("v2 call on a connection of version %u",
				     info.version);
			if (sw->opcode == RPCRDMA_WR_SEND_WITH_INV)
				FAIL("call sent With Invalidate");
			remember_sent_call(xid, 2, &h2.chunks);
			/* Built on this drain, under the current threshold
			 * (RFC 8166 §3.3.2; v2: the peer's RBSIZ, §4.2.1). */
			if (n > info.send_threshold)
				FAIL("v2 call of %zu bytes over the send threshold "
				     "%u", n, info.send_threshold);
		} else if (h2.chunks.nreads) {
			FAIL("reply with a Read list");
		}
		break;
	}
	}
}

static void execute(const struct rpcrdma_engine_wr *w)
{
	dig(w->is_recv ? 1 : 2 + (uint64_t)w->send.opcode);
	dig(w->is_recv ? w->recv.sg_list[0].length : (uint32_t)w->send.num_sge);
	if (!connected)
		FAIL("work request handed out while disconnected");
	if (w->is_recv) {
		if (w->recv.num_sge != 1)
			FAIL("recv with %d SGEs", w->recv.num_sge);
		check_sge(&w->recv.sg_list[0], RPCRDMA_ACCESS_LOCAL_WRITE, "Recv");
		if (rq_count >= MAX_PEND)
			FAIL("receive queue overflow");
		struct pend *p = &rq_[(rq_head + rq_count++) % MAX_PEND];
		memset(p, 0, sizeof *p);
		p->wr_id = w->recv.wr_id;
		p->addr = w->recv.sg_list[0].addr;
		p->len = w->recv.sg_list[0].length;
		p->lkey = w->recv.sg_list[0].lkey;
		return;
	}
	const struct rpcrdma_send_wr *sw = &w->send;
	struct pend pe;
	memset(&pe, 0, sizeof pe);
	pe.wr_id = sw->wr_id;
	pe.op = sw->opcode;
	switch (sw->opcode) {
	case RPCRDMA_WR_SEND:
	case RPCRDMA_WR_SEND_WITH_INV:
		check_send(w);
		break;
	case RPCRDMA_WR_RDMA_WRITE:
	case RPCRDMA_WR_RDMA_READ: {
		bool rd = sw->opcode == RPCRDMA_WR_RDMA_READ;
		if (sw->num_sge != 1)
			FAIL("RDMA op with %d SGEs", sw->num_sge);
		const struct rpcrdma_sge *g = &sw->sg_list[0];
		check_sge(g, rd ? RPCRDMA_ACCESS_LOCAL_WRITE : 0,
			  rd ? "RDMA Read" : "RDMA Write");
		if (!g->length)
			FAIL("zero-length RDMA op");
		pe.addr = g->addr;
		pe.len = g->length;
		pe.lkey = g->lkey;
		pe.read_xid = pseg_xid(sw->rdma.rkey);
		break;
	}
	case RPCRDMA_WR_LOCAL_INV: {
		struct fmr *r = key_mr(sw->invalidate_rkey);
		if (!r || !r->used || !r->remote)
			FAIL("LOCAL_INV of %#x, not a live registration of ours",
			     sw->invalidate_rkey);
		break;
	}
	default:
		FAIL("unexpected opcode %d", (int)sw->opcode);
	}
	pe.signaled = (sw->send_flags & RPCRDMA_SEND_SIGNALED) != 0;
	/* The engine waits for these completions (send_queue.c). */
	if (!pe.signaled && (sw->opcode == RPCRDMA_WR_RDMA_READ ||
			     sw->opcode == RPCRDMA_WR_LOCAL_INV))
		FAIL("unsignaled %s", sw->opcode == RPCRDMA_WR_RDMA_READ
					      ? "RDMA Read" : "LOCAL_INV");
	if (sq_count >= MAX_PEND)
		FAIL("send queue overflow");
	sq[(sq_head + sq_count++) % MAX_PEND] = pe;
	uint32_t depth = C.sq_depth ? C.sq_depth : 4 * (C.max_calls + C.credits);
	if (sq_count + sq_unacked > depth)
		FAIL("%u send work requests outstanding, send queue holds %u",
		     sq_count + sq_unacked, depth);
}

static bool handle_event(const struct rpcrdma_engine_event *ev)
{
	TRACE("  event %d xid %#x status %d call_id %u\n", (int)ev->type,
	      ev->xid, ev->status, ev->call_id);
	dig((uint64_t)ev->type << 32 ^ (uint32_t)ev->status);
	dig((uint64_t)ev->xid << 32 ^ ev->reply_len);
	switch (ev->type) {
	case RPCRDMA_EV_CALL_DONE: {
		struct call *c = ev->user;
		if (c < calls || c >= calls + ncalls || !c->used)
			FAIL("CALL_DONE for an unknown user pointer");
		if (++c->done > 1)
			FAIL("call %#x completed twice", c->xid);
		if (ev->xid != c->xid)
			FAIL("CALL_DONE xid %#x for call %#x", ev->xid, c->xid);
		if (ev->status > 0)
			FAIL("positive status");
		if (ev->reply_len > c->reply_max)
			FAIL("reply_len %zu > reply_max %zu", ev->reply_len,
			     c->reply_max);
		if (ev->nresults > RPCRDMA_MAX_WRITE_CHUNKS)
			FAIL("nresults");
		for (unsigned i = 0; i < RPCRDMA_MAX_WRITE_CHUNKS; i++) {
			size_t cap = i < c->nres &&
						     i < sizeof c->res_len / sizeof c->res_len[0]
					     ? c->res_len[i]
					     : 0;
			if (ev->result_len[i] > cap)
				FAIL("result %u: %zu bytes > offered %zu", i,
				     ev->result_len[i], cap);
		}
		/* What the engine says it delivered is there to read. */
		if (!readable(c->reply, ev->reply_len))
			FAIL("reply_len %zu runs past the reply buffer",
			     ev->reply_len);
		free_call(c);
		return false;
	}
	case RPCRDMA_EV_INCOMING_CALL:
		harness_incoming(incs, MAX_RS, ev);
		return (flags & F_AUTOANSWER) != 0;
	case RPCRDMA_EV_REPLY_SENT:
		harness_reply_sent(incs, MAX_RS, ev);
		return false;
	case RPCRDMA_EV_CLOSE:
		if (!connected)
			FAIL("CLOSE delivered while disconnected");
		close_seen = true;
		return false;
	default:
		FAIL("unknown event type %d", (int)ev->type);
	}
	return false;
}

static void check_info(void)
{
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	if (info.credits_granted < 1 || info.credits_granted > C.max_calls)
		FAIL("credits_granted %u outside [1, %u]", info.credits_granted,
		     C.max_calls);
	if (info.calls_in_flight > C.max_calls)
		FAIL("calls_in_flight %u > max_calls", info.calls_in_flight);
	if (info.recvs_posted != rq_count)
		FAIL("recvs_posted %u but %u receives handed out",
		     info.recvs_posted, rq_count);
	if (info.connected != connected)
		FAIL("connected state");
	if (info.version > 2)
		FAIL("version %u", info.version);
	if (info.negotiating && (!C.client || info.version != 0))
		FAIL("negotiating with version %u (client %d)", info.version,
		     C.client);
	if (connected && C.versions == RPCRDMA_ENGINE_V1_ONLY &&
	    info.version != 1)
		FAIL("V1_ONLY engine at version %u", info.version);
	if (C.versions == RPCRDMA_ENGINE_V2_ONLY && info.version == 1)
		FAIL("V2_ONLY engine at version 1");
	if (connected && C.client && !info.negotiating && info.version == 0 &&
	    !close_seen)
		FAIL("PREFER_V2 client connected, not negotiating, no version");
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
			if (handle_event(&ev))
				answer(ev.call_id, (flags & F_BIGREPLY) ? 5 : 1,
				       NULL);
		}
		if ((flags & F_AUTOCOMPLETE) && sq_count && connected) {
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
			/* Done, but no completion until a signalled one. */
			sq_unacked++;
			continue;
		}
		if (!qp_err)
			sq_unacked = 0;
		struct rpcrdma_wc wc;
		harness_wc(&wc, p.wr_id, p.op, qp_err);
		switch (p.op) {
		case RPCRDMA_WR_RDMA_READ:
			wc.opcode = RPCRDMA_WC_RDMA_READ;
			if (!qp_err) {
				struct rpcrdma_sge g = {p.addr, p.len, p.lkey};
				uint8_t *d = check_sge(&g, RPCRDMA_ACCESS_LOCAL_WRITE,
						       "RDMA Read completion");
				memset(d, 0, p.len);
				if (p.len >= 8) {
					rpcrdma_be32_put(d, p.read_xid);
					rpcrdma_be32_put(d + 4, RPCRDMA_RPC_CALL);
				}
				if (p.len >= 12)
					rpcrdma_be32_put(d + 8, 2);
			}
			break;
		case RPCRDMA_WR_RDMA_WRITE:
			wc.opcode = RPCRDMA_WC_RDMA_WRITE;
			break;
		case RPCRDMA_WR_LOCAL_INV:
			wc.opcode = RPCRDMA_WC_LOCAL_INV;
			break;
		default:
			wc.opcode = RPCRDMA_WC_SEND;
			break;
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
	size_t plen;
	if (mode & 0x80) {
		uint8_t s = u8(in), r = u8(in), f = u8(in);
		plen = (size_t)rpcrdma_cm_pdata_encode(
			pd, sizeof pd, ((size_t)s + 1) * 1024,
			((size_t)r + 1) * 1024, f & 1);
	} else {
		plen = mode & 15;
		bytes(in, pd, plen);
	}
	uint8_t ord = u8(in);
	connected = true;
	close_seen = false;
	qp_err = false;
	npseg = 0;
	sends_this_conn = 0;
	have_opener = false;
	TRACE("established plen %zu\n", plen);
	int rc = rpcrdma_engine_established(E, plen ? pd : NULL, plen, ord, now);
	if (rc)
		FAIL("established = %d", rc);
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	if (info.credits_granted != 1)
		FAIL("a new connection starts with one credit");
	drain();
}

static void lose_connection(void)
{
	TRACE("conn_lost\n");
	connected = false;
	sq_head = sq_count = sq_unacked = 0;
	rq_head = rq_count = 0;
	npseg = 0;
	rpcrdma_engine_conn_lost(E, now);
	drain();
}

/* ---------------------------------------------------------------------
 * Upper-layer calls
 */
static void submit(struct in *in)
{
	if (ncalls < MAX_CALLS &&
	    harness_submit(E, in, &calls[ncalls], ncalls, 4, now))
		ncalls++;
}

/* ---------------------------------------------------------------------
 * The peer
 */
static uint8_t pmsg[1u << 17];

/* An XID for a peer message. */
static uint32_t pick_xid(struct in *in, uint8_t sel)
{
	switch (sel % 8) {
	case 0:
	case 1:
	case 2: { /* an outstanding call of ours (else any call of ours) */
		uint32_t live[MAX_CALLS], nl = 0;
		for (unsigned i = 0; i < ncalls; i++)
			if (!calls[i].done)
				live[nl++] = calls[i].xid;
		uint8_t k = u8(in);
		if (nl)
			return live[k % nl];
		if (ncalls)
			return calls[k % ncalls].xid;
		return have_opener ? opener_xid : C.xid_seed;
	}
	case 3:
	case 4: /* the opener */
		return have_opener ? opener_xid : C.xid_seed;
	case 5: /* something the engine sent */
		return nsent_xids ? sent_xids[u8(in) % (nsent_xids < 16 ? nsent_xids : 16)]
				  : C.xid_seed;
	case 6:
		return last_rx_xid;
	default:
		return u32(in);
	}
}

static void deliver(const uint8_t *msg, size_t len, bool via_cq, bool with_inv,
		    uint32_t inv)
{
	if (len > 0xffff)
		return;
	uint32_t rsize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_recv));
	if (len >= 4)
		last_rx_xid = rpcrdma_be32_get(msg);
	TRACE("  peer msg len %zu cq %d words %#x %#x %#x %#x %#x\n", len, via_cq,
	      len >= 4 ? rpcrdma_be32_get(msg) : 0,
	      len >= 8 ? rpcrdma_be32_get(msg + 4) : 0,
	      len >= 12 ? rpcrdma_be32_get(msg + 8) : 0,
	      len >= 16 ? rpcrdma_be32_get(msg + 12) : 0,
	      len >= 20 ? rpcrdma_be32_get(msg + 16) : 0);
	if (!via_cq) {
		if (qp_err)
			return;
		int rc = rpcrdma_engine_recv(E, msg, len, with_inv, inv, now);
		if (rc == RPCRDMA_ERR_NO_RECV) {
			if (connected && rq_count)
				FAIL("NO_RECV with receives posted");
		} else if (rc == RPCRDMA_ERR_NOSPACE) {
			if (len <= rsize)
				FAIL("NOSPACE for a message that fits");
		} else if (rc) {
			FAIL("recv = %d", rc);
		} else {
			if (!rq_count)
				FAIL("recv accepted with nothing posted");
			rq_head = (rq_head + 1) % MAX_PEND;
			rq_count--;
		}
		return;
	}
	if (!rq_count)
		return;
	struct pend p = rq_[rq_head];
	rq_head = (rq_head + 1) % MAX_PEND;
	rq_count--;
	struct rpcrdma_wc wc;
	memset(&wc, 0, sizeof wc);
	wc.wr_id = p.wr_id;
	wc.opcode = RPCRDMA_WC_RECV;
	if (qp_err) {
		wc.status = RPCRDMA_WC_WR_FLUSH_ERR;
	} else if (len > p.len) {
		wc.status = RPCRDMA_WC_LOC_LEN_ERR;
		qp_err = true;
	} else {
		struct rpcrdma_sge g = {p.addr, p.len, p.lkey};
		uint8_t *d = check_sge(&g, RPCRDMA_ACCESS_LOCAL_WRITE, "Recv use");
		memcpy(d, msg, len);
		wc.status = RPCRDMA_WC_SUCCESS;
		wc.byte_len = (uint32_t)len;
		if (with_inv) {
			wc.wc_flags = RPCRDMA_WC_WITH_INV;
			wc.invalidated_rkey = inv;
		}
	}
	if (rpcrdma_engine_completion(E, &wc))
		FAIL("receive completion rejected");
}

/* With Invalidate: one of our live remote keys or junk. */
static uint32_t pick_inv(uint8_t k)
{
	uint32_t seen = 0;
	for (uint32_t i = nkeys; i-- > 0;)
		if (mrs[i].used && mrs[i].remote && seen++ == k % 4u)
			return KEY_BASE + i;
	return k;
}

/* Chunk lists for a reply to one of our calls: echo what we sent
 * (lengths chosen by the fuzzer, sometimes too large), or junk. */
static void reply_lists(struct in *in, uint32_t xid, uint8_t fl, bool nomsg,
			struct rpcrdma_chunk_lists *cl, size_t *reply_bytes)
{
	const struct sent *s = find_sent(xid);
	rpcrdma_chunk_lists_init(cl);
	*reply_bytes = 0;
	if (!s)
		return;
	cl->nwrites = s->cl.nwrites;
	for (uint32_t i = 0; i < cl->nwrites; i++) {
		cl->writes[i] = s->cl.writes[i];
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++) {
			uint32_t l = s->cl.writes[i].segs[j].length;
			cl->writes[i].segs[j].length =
				u16(in) % (l + 1 + ((fl & 0x40) ? 1 : 0));
		}
	}
	if (s->cl.has_reply && (nomsg || (fl & 0x20))) {
		cl->has_reply = true;
		cl->reply = s->cl.reply;
		for (uint32_t j = 0; j < cl->reply.nsegs; j++) {
			uint32_t l = s->cl.reply.segs[j].length;
			cl->reply.segs[j].length =
				nomsg ? u16(in) % (l + 1 + ((fl & 0x40) ? 1 : 0)) : 0;
			*reply_bytes += cl->reply.segs[j].length;
		}
	}
}

/* Lists for a call from the peer. */
static bool call_lists(struct in *in, uint32_t xid, uint8_t fl, bool nomsg,
		       struct rpcrdma_chunk_lists *cl)
{
	rpcrdma_chunk_lists_init(cl);
	uint32_t n = 0;
	if (nomsg) {
		unsigned k = 1 + (fl & 3);
		for (unsigned i = 0; i < k; i++) {
			cl->reads[n].position = 0;
			gen_seg(in, &cl->reads[n].target, 600);
			add_pseg(cl->reads[n].target.handle, xid);
			n++;
		}
	}
	if (fl & 4) { /* further Read chunks, 1..4 */
		unsigned nch = 1 + ((fl >> 3) & 3);
		uint32_t pos = 40;
		for (unsigned c = 0; c < nch && n < 60; c++) {
			pos += 4u * (u8(in) % 8u);
			cl->reads[n].position = pos;
			gen_seg(in, &cl->reads[n].target, 3000);
			add_pseg(cl->reads[n].target.handle, xid);
			n++;
		}
	}
	cl->nreads = n;
	uint8_t wl = u8(in);
	cl->nwrites = wl & 3;
	for (uint32_t i = 0; i < cl->nwrites; i++) {
		struct rpcrdma_write_chunk *w = &cl->writes[i];
		w->nsegs = u8(in) % 5u;
		for (uint32_t j = 0; j < w->nsegs; j++)
			gen_seg(in, &w->segs[j], 5000);
	}
	if (wl & 4) {
		cl->has_reply = true;
		cl->reply.nsegs = 1 + u8(in) % 3u;
		for (uint32_t j = 0; j < cl->reply.nsegs; j++)
			gen_seg(in, &cl->reply.segs[j], 9000);
	}
	return !(nomsg && !n);
}

static const uint32_t rbsiz_vals[16] = {
	0, 1, 27, 28, 512, 1023, 1024, 1025, 2048, 4095, 4096, 4097, 8192,
	65536, 0x7fffffff, 0xffffffffu,
};
static const uint8_t junk[16] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff,
				 0xde, 0xad, 0xbe, 0xef, 0, 0, 0x10, 0};

/* The RPC message after a header: payload bytes, zero but for the XID,
 * the message type and (a call) rpcvers 2. */
static void rpc_payload(uint8_t *p, size_t payload, uint32_t xid, bool call)
{
	memset(p, 0, payload);
	if (!payload)
		return;
	rpcrdma_be32_put(p, xid);
	rpcrdma_be32_put(p + 4, call ? RPCRDMA_RPC_CALL : RPCRDMA_RPC_REPLY);
	if (call)
		rpcrdma_be32_put(p + 8, 2);
}

static void v2_message(struct in *in, bool via_cq)
{
	uint8_t kind = u8(in), fl = u8(in), xsel = u8(in);
	rpcrdma_v2_hdr_init(&h2);
	h2.vers = 2;
	h2.credit = u8(in) % 8u;
	size_t payload = 0;
	bool call_payload = false;
	uint32_t xid;
	switch (kind % 5) {
	case 0: { /* RDMA2_CONNPROP */
		xid = (xsel & 0x80) ? pick_xid(in, xsel) : peer_xid++;
		h2.htype = RPCRDMA_V2_CONNPROP;
		h2.flags = (fl & 1) ? RPCRDMA_V2_F_RESPONSE : 0;
		h2.nprops = (fl >> 1) & 7;
		for (uint32_t i = 0; i < h2.nprops; i++) {
			struct rpcrdma_v2_prop *p = &h2.props[i];
			uint8_t b = u8(in);
			switch (b & 3) {
			case 0:
				p->propid = RPCRDMA_V2_PROPID_RBSIZ;
				p->has_value = !(b & 4);
				p->value = (b & 8) ? u32(in) : rbsiz_vals[(b >> 4) & 15];
				break;
			case 1:
				p->propid = RPCRDMA_V2_PROPID_BRS;
				p->has_value = !(b & 4);
				p->value = (b >> 4) % 3u;
				break;
			default:
				p->propid = (b & 8) ? u32(in) : 3u + (b >> 4);
				p->len = (b >> 4) & 15;
				p->data = junk;
				break;
			}
		}
		break;
	}
	case 1:
	case 2: { /* MSG / NOMSG reply to one of our calls (or a stray one) */
		xid = pick_xid(in, xsel);
		bool nomsg = kind % 5 == 2;
		h2.htype = nomsg ? RPCRDMA_V2_NOMSG : RPCRDMA_V2_MSG;
		h2.flags = (fl & 1) ? 0 : RPCRDMA_V2_F_RESPONSE;
		h2.inv_handle = (fl & 2) ? pick_inv(u8(in)) : 0;
		size_t rb;
		reply_lists(in, xid, fl, nomsg, &h2.chunks, &rb);
		if (nomsg && rpcrdma_chunk_lists_empty(&h2.chunks)) {
			h2.chunks.has_reply = true; /* zero-length Reply chunk */
			h2.chunks.reply.nsegs = 0;
		}
		if (!nomsg)
			payload = 24 + 4u * (u8(in) % 64u);
		break;
	}
	case 3: { /* a call from the peer */
		xid = (xsel & 0x80) ? pick_xid(in, xsel) : peer_xid++;
		bool nomsg = fl & 0x80;
		h2.htype = nomsg ? RPCRDMA_V2_NOMSG : RPCRDMA_V2_MSG;
		h2.flags = (fl & 0x40) ? RPCRDMA_V2_F_RESPONSE : 0;
		h2.inv_handle = (fl & 0x20) ? u32(in) : 0;
		if (!call_lists(in, xid, fl, nomsg, &h2.chunks))
			return;
		if (!nomsg) {
			call_payload = true;
			payload = 40 + 4u * (u8(in) % 32u);
		}
		break;
	}
	default: { /* RDMA2_ERROR */
		xid = pick_xid(in, xsel);
		h2.htype = RPCRDMA_V2_ERROR;
		h2.flags = RPCRDMA_V2_F_RESPONSE;
		uint8_t cb = u8(in);
		h2.error.code = (cb & 0x80) ? u32(in) : 1u + cb % 10u;
		uint8_t vb = u8(in);
		h2.error.vers_low = vb & 3;
		h2.error.vers_high = (vb >> 2) & 3;
		h2.error.max_chunks = (vb >> 4) & 7;
		h2.error.max_segments = (vb >> 4) & 3;
		h2.error.chunk_index = (fl >> 4) & 7;
		h2.error.length_needed = (fl & 8) ? u32(in) : u16(in);
		break;
	}
	}
	h2.xid = xid;
	int hl = rpcrdma_v2_encode(pmsg, sizeof pmsg, &h2);
	if (hl < 0)
		return;
	rpc_payload(pmsg + hl, payload, xid, call_payload);
	size_t len = (size_t)hl + payload;
	/* Mutations the encoder refuses: reserved flag bits, an error
	 * without F_RESPONSE, truncation. */
	uint8_t mut = u8(in);
	if ((mut & 3) == 1)
		rpcrdma_be32_put(pmsg + 16, rpcrdma_be32_get(pmsg + 16) |
						    ((uint32_t)mut << 24));
	else if ((mut & 3) == 2)
		rpcrdma_be32_put(pmsg + 16, 0);
	else if ((mut & 3) == 3 && len > 16)
		len -= 4u * (1u + (mut >> 2) % 4u) < len - 16
			       ? 4u * (1u + (mut >> 2) % 4u)
			       : 0;
	bool with_inv = (kind & 0x80) != 0;
	deliver(pmsg, len, via_cq, with_inv, with_inv ? pick_inv(u8(in)) : 0);
}

static void v1_message(struct in *in, bool via_cq)
{
	uint8_t kind = u8(in), fl = u8(in), xsel = u8(in);
	rpcrdma_v1_hdr_init(&h1);
	h1.vers = 1;
	h1.credit = u8(in) % 8u;
	size_t payload = 0;
	bool call_payload = false;
	uint32_t xid;
	switch (kind % 4) {
	case 0:
	case 1: { /* a reply */
		xid = pick_xid(in, xsel);
		bool nomsg = kind % 4 == 1;
		h1.proc = nomsg ? RPCRDMA_V1_NOMSG : RPCRDMA_V1_MSG;
		size_t rb;
		reply_lists(in, xid, fl, nomsg, &h1.chunks, &rb);
		if (nomsg && rpcrdma_chunk_lists_empty(&h1.chunks))
			return;
		if (!nomsg)
			payload = 24 + 4u * (u8(in) % 64u);
		break;
	}
	case 2: /* RDMA_ERROR */
		xid = pick_xid(in, xsel);
		h1.proc = RPCRDMA_V1_ERROR;
		h1.err = (fl & 1) ? RPCRDMA_V1_ERR_VERS : RPCRDMA_V1_ERR_CHUNK;
		h1.vers_low = (fl >> 1) & 3;
		h1.vers_high = (fl >> 3) & 3;
		break;
	default: { /* a call */
		xid = (xsel & 0x80) ? pick_xid(in, xsel) : peer_xid++;
		bool nomsg = fl & 0x80;
		h1.proc = nomsg ? RPCRDMA_V1_NOMSG : RPCRDMA_V1_MSG;
		if (!call_lists(in, xid, fl, nomsg, &h1.chunks))
			return;
		if (!nomsg) {
			call_payload = true;
			payload = 40 + 4u * (u8(in) % 32u);
		}
		break;
	}
	}
	h1.xid = xid;
	int hl = rpcrdma_v1_encode(pmsg, sizeof pmsg, &h1);
	if (hl < 0)
		return;
	rpc_payload(pmsg + hl, payload, xid, call_payload);
	bool with_inv = (kind & 0x80) != 0;
	deliver(pmsg, (size_t)hl + payload, via_cq, with_inv,
		with_inv ? pick_inv(u8(in)) : 0);
}

/* Linux svcrdma's answer to a v2 message: the v1 RDMA_ERROR layout
 * echoing rdma_vers 2, seven words. */
static void linux_err_vers(struct in *in)
{
	uint8_t xsel = u8(in), b = u8(in);
	uint32_t xid = pick_xid(in, xsel);
	uint32_t w[7] = {xid, (b & 0x80) ? 1u : 2u, b & 7, RPCRDMA_V1_ERROR,
			 RPCRDMA_V1_ERR_VERS, 1, 1};
	if (b & 0x40) {
		w[5] = (b >> 3) & 3;
		w[6] = (b >> 4) & 3;
	}
	size_t len = (b & 0x20) ? 32 : 28;
	uint8_t m[32] = {0};
	for (int i = 0; i < 7; i++)
		rpcrdma_be32_put(m + 4 * i, w[i]);
	deliver(m, len, (b & 8) != 0, false, 0);
}

static void raw_message(struct in *in, bool via_cq)
{
	uint16_t len = u16(in);
	uint8_t fl = u8(in);
	uint32_t rsize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_recv));
	len = (uint16_t)(len % (rsize + 9));
	bytes(in, pmsg, len);
	if ((fl & 1) && len >= 4)
		rpcrdma_be32_put(pmsg, pick_xid(in, fl >> 1));
	if ((fl & 0x10) && len >= 8)
		rpcrdma_be32_put(pmsg + 4, 2);
	deliver(pmsg, len, via_cq, false, 0);
}

static void run_op(struct in *in)
{
	uint8_t op = u8(in);
	TRACE("op %u now %llu\n", op % 16, (unsigned long long)now);
	switch (op % 16) {
	case 0:
	case 1:
		v2_message(in, op & 16);
		break;
	case 2:
		v1_message(in, op & 16);
		break;
	case 3:
		linux_err_vers(in);
		break;
	case 4:
		raw_message(in, op & 16);
		break;
	case 5:
		complete_sends((uint32_t)(u8(in) % 8) + 1);
		break;
	case 6: { /* one failed completion: the QP is in error from then on */
		uint8_t st = u8(in);
		if (!sq_count)
			break;
		struct pend p = sq[sq_head];
		sq_head = (sq_head + 1) % MAX_PEND;
		sq_count--;
		struct rpcrdma_wc wc;
		memset(&wc, 0, sizeof wc);
		wc.wr_id = p.wr_id;
		wc.status = (enum rpcrdma_wc_status)(1 + st % 11);
		qp_err = true;
		if (rpcrdma_engine_completion(E, &wc))
			FAIL("error completion rejected");
		break;
	}
	case 7:
	case 8:
		submit(in);
		break;
	case 9: {
		uint8_t idx = u8(in), shape = u8(in);
		uint32_t waiting[MAX_RS], nw = 0;
		for (uint32_t i = 0; i < MAX_RS; i++)
			if (incs[i].state == 1)
				waiting[nw++] = i;
		if (nw)
			answer(waiting[idx % nw], shape, in);
		break;
	}
	case 10:
		if (connected)
			lose_connection();
		break;
	case 11:
		if (!connected)
			establish(in);
		break;
	case 12: {
		static const uint32_t steps[8] = {1, 10, 500, 1999, 2000, 2001,
						  5000, 0};
		uint8_t b = u8(in);
		uint64_t d = steps[b & 7];
		if (!d)
			d = u16(in);
		if (b & 8)
			d = C.neg_timeout_ms + (b >> 4);
		now += d;
		TRACE("tick %llu\n", (unsigned long long)now);
		rpcrdma_engine_tick(E, now);
		break;
	}
	case 13:
		complete_sends(sq_count);
		break;
	case 14: {
		uint8_t b = u8(in);
		again_budget = b & 3;
		fail_budget = (b >> 4) & 1;
		break;
	}
	default:
		/* several v2 messages in a row, the common case */
		v2_message(in, false);
		drain();
		v2_message(in, false);
		break;
	}
	drain();
}

/* ---------------------------------------------------------------------
 * One input
 */
static void reset(void)
{
	memset(mrs, 0, nkeys * sizeof mrs[0]);
	nkeys = 0;
	live_regs = 0;
	nreg = nrel = 0;
	again_budget = fail_budget = 0;
	/* Faults always armed; NOMEM only for remote registrations. */
	faults_armed = fail_remote_only = true;
	connected = false;
	npseg = 0;
	sq_head = sq_count = sq_unacked = rq_head = rq_count = 0;
	qp_err = false;
	memset(calls, 0, sizeof calls);
	ncalls = 0;
	memset(incs, 0, sizeof incs);
	nsent = 0;
	nsent_xids = 0;
	opener_xid = 0;
	have_opener = false;
	sends_this_conn = 0;
	last_rx_xid = 0;
	peer_xid = 0x7000;
	now = 1000;
}

static void run_input(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	reset();
	rpcrdma_engine_config_default(&C);
	/* byte 0: role and versions */
	uint8_t role = u8(&in);
	C.client = role & 1;
	C.versions = 1u + ((role >> 1) & 3u) % 3u; /* 1..3 */
	C.peer_v1_only = (role & 8) != 0;
	C.v2_brs = ((role >> 4) & 3u) % 3u;
	C.remote_inv = (role & 0x40) != 0;
	flags = (role & 0x80) ? 0 : F_AUTOCOMPLETE;
	/* byte 1: max_calls, credits */
	uint8_t mc = u8(&in);
	C.max_calls = 1u + (mc & 7u);
	C.credits = 1u + ((mc >> 3) & 7u);
	C.max_retries = mc >> 6;
	/* The resend after a RESOURCE error shares that bit (the input's
	 * layout predates it; the corpus keeps its meaning). */
	C.resend_after_reply = (mc & 0x40) != 0;
	/* byte 2: inline sizes */
	uint8_t sz = u8(&in);
	C.max_inline_recv = 1024u * (1u + (sz & 3u));
	C.max_inline_send = 1024u * (1u + ((sz >> 2) & 3u));
	if (sz & 0x10)
		C.max_inline_send += 100; /* rounded down by the engine */
	static const uint32_t tmo[4] = {2000, 0, 1, 100};
	C.neg_timeout_ms = tmo[(sz >> 5) & 3];
	if (sz & 0x80)
		flags |= F_AUTOANSWER;
	/* byte 3: responder limits */
	uint8_t lim = u8(&in);
	static const uint32_t callsz[4] = {256, 4096, 65536, 1u << 20};
	C.max_call_size = callsz[lim & 3];
	C.max_chunk_bytes = callsz[(lim >> 2) & 3];
	C.max_read_chunks = (lim >> 4) & 3; /* 0..3 */
	if (lim & 0x40)
		C.max_read_chunks = 16;
	if (lim & 0x80)
		flags |= F_BIGREPLY;
	/* byte 4: decode limits */
	uint8_t dl = u8(&in);
	if (dl & 1) {
		C.limits.max_write_chunks = 1u + ((dl >> 1) & 3u);
		C.limits.max_chunk_segments = 1u + ((dl >> 3) & 3u);
		C.limits.max_properties = (dl >> 5) & 7u;
		C.limits.max_read_segments = 2u + (dl >> 5);
	}
	/* byte 5: sq depth, faults */
	uint8_t sqd = u8(&in);
	if (sqd & 1)
		C.sq_depth = 4u + ((sqd >> 1) & 7u) * 3u;
	if (sqd & 0x10)
		flags |= F_ABRUPT;
	C.xid_seed = u32(&in);

	static const struct rpcrdma_engine_mem_ops ops = {
		NULL, fake_reg, fake_release, NULL, NULL, NULL,
	};
	int rc = harness_engine(&C, &ops, &E);
	if (rc)
		FAIL("create = %d", rc);
	again_budget = (sqd >> 5) & 3;
	fail_budget = (sqd >> 7) & 1;
	establish(&in);

	for (int ops_run = 0; in.n && ops_run < 300; ops_run++)
		run_op(&in);

	/* Teardown: lose the connection (calls wait or fail), then
	 * destroy (cancels the rest silently). */
	again_budget = fail_budget = 0;
	drain();
	if (!(flags & F_ABRUPT) && connected)
		lose_connection();
	for (uint32_t i = 0; i < MAX_RS; i++)
		if (incs[i].state == 1 && !(flags & F_ABRUPT)) {
			answer(i, 0, NULL);
			if (incs[i].state == 2)
				FAIL("call from a lost connection accepted a "
				     "reply");
		}
	if (!(flags & F_ABRUPT))
		drain();
	if (getenv("FUZZ_ENGINE_DEBUG")) {
		struct rpcrdma_engine_counters k;
		struct rpcrdma_engine_info info;
		rpcrdma_engine_get_counters(E, &k);
		rpcrdma_engine_get_info(E, &info);
		fprintf(stderr,
			"calls %llu done %llu received %llu connprop sent/recv "
			"%llu/%llu fallbacks %llu recoveries %llu bad %llu "
			"short/chunked/long %llu/%llu/%llu v2err recv",
			(unsigned long long)k.calls,
			(unsigned long long)k.calls_completed,
			(unsigned long long)k.calls_received,
			(unsigned long long)k.connprop_sent,
			(unsigned long long)k.connprop_recv,
			(unsigned long long)k.vers_fallbacks,
			(unsigned long long)k.recoveries,
			(unsigned long long)k.bad_replies,
			(unsigned long long)k.short_calls,
			(unsigned long long)k.chunked_calls,
			(unsigned long long)k.long_calls);
		for (int i = 1; i < 10; i++)
			fprintf(stderr, " %llu", (unsigned long long)k.v2_err_recv[i]);
		fprintf(stderr, " sent");
		for (int i = 1; i < 10; i++)
			fprintf(stderr, " %llu", (unsigned long long)k.v2_err_sent[i]);
		fprintf(stderr, " | version %u peer_v1_only %d\n", info.version,
			info.peer_v1_only);
		for (unsigned i = 0; i < ncalls; i++)
			fprintf(stderr, "  call %#x done %d\n", calls[i].xid,
				calls[i].done);
	}
	harness_engine_done(E);
	E = NULL;
	if (live_regs || nreg != nrel)
		FAIL("%u registrations leaked after destroy (%llu reg, %llu "
		     "released)", live_regs, (unsigned long long)nreg,
		     (unsigned long long)nrel);
	for (unsigned i = 0; i < ncalls; i++)
		if (calls[i].done > 1)
			FAIL("call %#x completed %d times", calls[i].xid,
			     calls[i].done);
	for (unsigned i = 0; i < ncalls; i++)
		free_call(&calls[i]);
	for (uint32_t i = 0; i < MAX_RS; i++)
		free_inc_in(incs, &incs[i]);
}
