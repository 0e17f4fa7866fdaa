/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target: the RPC-over-RDMA v1 connection engine (engine/)
 * against a hostile peer.
 *
 * The input is a small configuration followed by a script of operations.
 * The harness plays the driver and the RDMA hardware around one engine:
 * a fake memory registrar (every registration gets a fresh key, never
 * reused), a send queue and a receive queue completed in posting order
 * (as a reliable connection does), and the peer, whose messages are
 * fuzzer bytes (with optional help: the XID of one of our calls patched
 * in).  After every step it pops all work requests and events, answers
 * incoming calls when asked, and checks what must always hold:
 *
 *  - every SGE of every work request lies inside a live registration with
 *    the access the operation needs (no wild or stale local access);
 *  - every RDMA Read/Write targets a segment the peer advertised on this
 *    connection, inside its bounds (RFC 8166 §3.4.4); Send With
 *    Invalidate names a handle the peer advertised (RFC 8797 §4.1);
 *    LOCAL_INV names one of our live registrations;
 *  - every Send decodes as a v1 header and fits the peer's inline
 *    threshold (RFC 8166 §3.3.2); thresholds follow RFC 8797 (invalid
 *    private data -> 1024 both ways, §5.1);
 *  - a registration exposed to the peer is never released while its rkey
 *    is still valid on a live connection (RFC 8166 §4.4.1);
 *  - credits_granted stays within [1, max_calls]; calls_in_flight <=
 *    max_calls; recvs_posted equals the receives handed out and never
 *    exceeds credits + max_calls;
 *  - every submitted call gets exactly one CALL_DONE (after the final
 *    disconnect), with reply_len <= reply_max and result lengths within
 *    the offered Write chunks; every accepted submit_reply gets exactly
 *    one REPLY_SENT; events name live slots;
 *  - our replies copy the segment count and every segment of the call's
 *    Write chunks and Reply chunk, changing only lengths (RFC 8166
 *    §3.4.6, §4.3.3), return lengths equal to the bytes RDMA-written, and
 *    carry no Read list (§4.3.1); ERR_VERS says low = high = 1 (§4.5.1);
 *  - an error completion makes the engine ask to close (§4.5.5), and no
 *    CLOSE is delivered for a connection already lost;
 *  - after conn_lost + destroy every registration is released and (ASan /
 *    LSan) nothing leaks.
 *
 * Input layout (every read past the end yields zeros):
 *   config  max_calls, credits (1..6 each); inline sizes / remote_inv /
 *           max_retries; limits (max_call_size, max_chunk_bytes,
 *           sq_depth); xid_seed (4 bytes); flags (auto-complete sends,
 *           auto-answer calls, plausible RDMA Read data, abrupt destroy,
 *           big auto-replies, lazy event polling); registration faults
 *   connect mode (& 0x80: 3 bytes -> a valid RFC 8797 message, else
 *           mode & 15 raw private-data bytes), ord
 *   ops...  one byte each (mod 14) plus operands, at most 400; see
 *           run_op(): raw peer message (via rpcrdma_engine_recv or via a
 *           receive completion), complete sends, fail a send, submit a
 *           call, answer an incoming call, lose / re-establish the
 *           connection, stale and bogus completions, registration
 *           faults, poll events, structured peer message.
 * FUZZ_ENGINE_TRACE=1 traces every step, FUZZ_ENGINE_DEBUG=1 prints the
 * engine counters of each input.  Seeds: fuzz/corpus_gen/gen_engine_recv.py.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_NAME "fuzz_engine_recv"
#include "engine/engine.h"
#include "fuzz/engine_harness.h"
#include "wire/cm_private_data.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v1.h"
#include "wire/xdr.h"


/* ---------------------------------------------------------------------
 * Segments the peer advertised on this connection.
 */
#define MAX_PSEG 4096u
struct pseg {
	uint32_t handle, len, xid;
	uint64_t off;
};
static struct pseg psegs[MAX_PSEG];
static uint32_t npseg;

static void add_pseg(const struct rpcrdma_segment *g, uint32_t xid)
{
	if (npseg < MAX_PSEG)
		psegs[npseg++] = (struct pseg){g->handle, g->length, xid, g->offset};
}

static const struct pseg *find_pseg(uint32_t rkey, uint64_t addr, uint32_t len)
{
	for (uint32_t i = 0; i < npseg; i++) {
		const struct pseg *s = &psegs[i];
		if (s->handle != rkey || addr < s->off)
			continue;
		if (addr - s->off <= s->len && s->len - (addr - s->off) >= len)
			return s;
	}
	return NULL;
}

static bool handle_advertised(uint32_t rkey)
{
	for (uint32_t i = 0; i < npseg; i++)
		if (psegs[i].handle == rkey)
			return true;
	return false;
}

static struct rpcrdma_v1_hdr hx;

/* Chunk lists of the calls the peer sent on this connection, by XID, so
 * our replies can be checked against them (RFC 8166 §3.4.6, §4.3.3: the
 * Responder copies the segment count and every segment, updating only
 * the lengths). */
#define MAX_PCALL 16u
struct pcall {
	uint32_t xid;
	bool ambiguous; /* the XID was used twice: skip the checks */
	struct rpcrdma_chunk_lists cl;
};
static struct pcall pcalls[MAX_PCALL];
static uint32_t npcall;
static uint64_t write_bytes; /* RDMA Writes popped since the last Send */

static const struct pcall *find_pcall(uint32_t xid)
{
	for (uint32_t i = 0; i < npcall && i < MAX_PCALL; i++)
		if (pcalls[i].xid == xid)
			return &pcalls[i];
	return NULL;
}

static void record_peer_segments(const uint8_t *buf, size_t len)
{
	if (rpcrdma_v1_decode(buf, len, NULL, &hx))
		return;
	const struct rpcrdma_chunk_lists *cl = &hx.chunks;
	bool call = (hx.proc == RPCRDMA_V1_NOMSG && cl->nreads) ||
		    (hx.proc == RPCRDMA_V1_MSG && len >= hx.hdr_len + 8 &&
		     rpcrdma_be32_get(buf + hx.hdr_len + 4) == RPCRDMA_RPC_CALL);
	if (call) {
		struct pcall *pc = (struct pcall *)find_pcall(hx.xid);
		if (pc) {
			pc->ambiguous = true;
		} else {
			pc = &pcalls[npcall++ % MAX_PCALL];
			pc->xid = hx.xid;
			pc->ambiguous = false;
			pc->cl = *cl;
		}
	}
	for (uint32_t i = 0; i < cl->nreads; i++)
		add_pseg(&cl->reads[i].target, hx.xid);
	for (uint32_t i = 0; i < cl->nwrites; i++)
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++)
			add_pseg(&cl->writes[i].segs[j], hx.xid);
	if (cl->has_reply)
		for (uint32_t j = 0; j < cl->reply.nsegs; j++)
			add_pseg(&cl->reply.segs[j], hx.xid);
}

/* ---------------------------------------------------------------------
 * Queues: send queue and receive queue, completed in order.
 */
#define MAX_PEND 4096u
struct pend {
	uint64_t wr_id;
	bool signaled;
	enum rpcrdma_wr_opcode op;
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
	uint32_t inv_rkey;
	uint32_t read_xid;
};

static struct pend sq[MAX_PEND];
static uint32_t sq_head, sq_count;
/* Unsignalled requests done but not yet acknowledged by a signalled
 * completion: like a real send queue, they still take an entry. */
static uint32_t sq_unacked;
static struct pend rq_[MAX_PEND];
static uint32_t rq_head, rq_count;
static uint64_t stale[64];
static uint32_t nstale;
static bool qp_err;

static void forget_queues(void)
{
	for (uint32_t i = 0; i < sq_count && nstale < 64; i++)
		stale[nstale++] = sq[(sq_head + i) % MAX_PEND].wr_id;
	for (uint32_t i = 0; i < rq_count && nstale < 64; i++)
		stale[nstale++] = rq_[(rq_head + i) % MAX_PEND].wr_id;
	sq_head = sq_count = sq_unacked = 0;
	rq_head = rq_count = 0;
}

/* ---------------------------------------------------------------------
 * Upper layer bookkeeping
 */
#define MAX_CALLS 16u
static struct call calls[MAX_CALLS];
static unsigned ncalls;

#define MAX_RS 64u
static struct inc incs[MAX_RS];

static struct rpcrdma_engine *E;
static struct rpcrdma_engine_config C;
static uint8_t flags;
static uint32_t last_rx_xid;
static bool connected;
static struct rpcrdma_cm_pdata peer_pd;
/* An error completion was fed on this connection / a CLOSE was polled. */
static bool err_injected, close_polled;

enum {
	F_AUTOCOMPLETE = 1,
	F_AUTOANSWER = 2,
	F_PLAUSIBLE = 4,
	F_ABRUPT = 8,
	F_BIGREPLY = 16,
	F_LAZY = 32, /* events are polled only by an explicit operation */
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
	int rc = rpcrdma_engine_submit_reply(E, call_id, &rep, 0);
	if (rc == 0) {
		ic->state = 2;
	} else if (rc == RPCRDMA_ERR_DISCONNECTED) {
		free_inc_in(incs, ic);
	} else {
		FAIL("submit_reply(%u) = %d", call_id, rc);
	}
}

/* ---------------------------------------------------------------------
 * Draining outputs, checking every work request and event
 */
static uint64_t seg_total(const struct rpcrdma_write_chunk *c)
{
	uint64_t t = 0;
	for (uint32_t j = 0; j < c->nsegs; j++)
		t += c->segs[j].length;
	return t;
}

/* One of our replies (hx) against the call it answers. */
static void same_chunk(const struct rpcrdma_write_chunk *got,
		       const struct rpcrdma_write_chunk *offered, const char *what)
{
	if (got->nsegs != offered->nsegs)
		FAIL("%s returned with %u segments, offered %u (RFC 8166 "
		     "§3.4.6)", what, got->nsegs, offered->nsegs);
	for (uint32_t j = 0; j < got->nsegs; j++) {
		const struct rpcrdma_segment *a = &got->segs[j],
					     *b = &offered->segs[j];
		if (a->handle != b->handle || a->offset != b->offset ||
		    a->length > b->length)
			FAIL("%s segment %u not copied from the call", what, j);
	}
}

static void check_reply_chunks(uint64_t written)
{
	if (hx.chunks.nreads)
		FAIL("reply with a Read list (RFC 8166 §4.3.1)");
	uint64_t returned = 0;
	for (uint32_t i = 0; i < hx.chunks.nwrites; i++)
		returned += seg_total(&hx.chunks.writes[i]);
	if (hx.chunks.has_reply)
		returned += seg_total(&hx.chunks.reply);
	if (returned != written)
		FAIL("reply returns %llu chunk bytes but %llu were written",
		     (unsigned long long)returned, (unsigned long long)written);
	if (hx.proc == RPCRDMA_V1_MSG && hx.chunks.has_reply &&
	    seg_total(&hx.chunks.reply))
		FAIL("inline reply with data in the Reply chunk");
	if (hx.proc == RPCRDMA_V1_NOMSG && !hx.chunks.has_reply)
		FAIL("RDMA_NOMSG reply without a Reply chunk");
	const struct pcall *pc = find_pcall(hx.xid);
	if (!pc || pc->ambiguous)
		return;
	if (hx.chunks.nwrites != pc->cl.nwrites)
		FAIL("reply returns %u Write chunks, call offered %u",
		     hx.chunks.nwrites, pc->cl.nwrites);
	for (uint32_t i = 0; i < hx.chunks.nwrites; i++)
		same_chunk(&hx.chunks.writes[i], &pc->cl.writes[i], "Write chunk");
	if (hx.chunks.has_reply) {
		if (!pc->cl.has_reply)
			FAIL("reply returns a Reply chunk never offered");
		same_chunk(&hx.chunks.reply, &pc->cl.reply, "Reply chunk");
	}
}

static bool call_sent; /* a call's Send was handed out in this drain */

/* The chunk lists of our last calls (their latest attempt), by XID. */
#define MAX_OURS 8u
static struct ourcall {
	uint32_t xid;
	struct rpcrdma_chunk_lists cl;
} ours[MAX_OURS];
static uint32_t nours;

static const struct rpcrdma_chunk_lists *our_lists(uint32_t xid)
{
	uint32_t n = nours < MAX_OURS ? nours : MAX_OURS;
	for (uint32_t k = 0; k < n; k++) {
		const struct ourcall *oc = &ours[(nours - 1 - k) % MAX_OURS];
		if (oc->xid == xid)
			return &oc->cl;
	}
	return NULL;
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
	dig(n);
	if (n >= 16)
		dig((uint64_t)rpcrdma_be32_get(msg + 4) << 32 ^
		    rpcrdma_be32_get(msg + 12));
	uint64_t written = write_bytes;
	write_bytes = 0;
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	if (n > info.send_threshold)
		FAIL("Send of %zu bytes over the peer's inline threshold %u "
		     "(RFC 8166 §3.3.2)", n, info.send_threshold);
	int rc = rpcrdma_v1_decode(msg, n, NULL, &hx);
	if (rc == RPCRDMA_ERR_BAD_VERSION && hx.proc == RPCRDMA_V1_ERROR)
		return; /* ERR_VERS echoes the peer's version */
	if (rc)
		FAIL("engine sent an undecodable header (%d)", rc);
	if (hx.proc == RPCRDMA_V1_MSGP || hx.proc == RPCRDMA_V1_DONE)
		FAIL("engine sent a reserved procedure (RFC 8166 §4.6)");
	if (hx.proc == RPCRDMA_V1_ERROR) {
		if (hx.err == RPCRDMA_V1_ERR_VERS &&
		    (hx.vers_low != 1 || hx.vers_high != 1))
			FAIL("ERR_VERS low/high not 1/1 (RFC 8166 §4.5.1)");
		return;
	}
	bool is_call = (hx.proc == RPCRDMA_V1_NOMSG && hx.chunks.nreads) ||
		       (hx.proc == RPCRDMA_V1_MSG && n >= hx.hdr_len + 8 &&
			rpcrdma_be32_get(msg + hx.hdr_len + 4) == RPCRDMA_RPC_CALL);
	if (sw->opcode == RPCRDMA_WR_SEND_WITH_INV) {
		if (is_call)
			FAIL("call sent With Invalidate");
		if (!handle_advertised(sw->invalidate_rkey))
			FAIL("Send With Invalidate of handle %#x the peer "
			     "never advertised", sw->invalidate_rkey);
		if (!peer_pd.present || !peer_pd.remote_inv || !C.remote_inv)
			FAIL("Send With Invalidate without both R bits "
			     "(RFC 8797 §4.1)");
	}
	if (!is_call) {
		check_reply_chunks(written);
		return;
	}
	if (written)
		FAIL("RDMA Writes before a call's Send");
	call_sent = true;
	/* Kept so that structured replies can return its segments. */
	struct ourcall *oc = &ours[nours++ % MAX_OURS];
	oc->xid = hx.xid;
	rpcrdma_chunk_lists_copy(&oc->cl, &hx.chunks);
	if (hx.credit == 0)
		FAIL("call asks for 0 credits");
	/* Our handles are now exposed to the peer. */
	const struct rpcrdma_chunk_lists *cl = &hx.chunks;
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
			FAIL("call advertises dead handle %#x", segs[i].handle);
		uint8_t *p = (uint8_t *)(uintptr_t)segs[i].offset;
		if (p < r->addr || (size_t)(p - r->addr) > r->len ||
		    r->len - (size_t)(p - r->addr) < segs[i].length)
			FAIL("call advertises a segment outside its registration");
		r->exposed = true;
	}
}

static void execute(const struct rpcrdma_engine_wr *w)
{
	dig(w->is_recv ? 1 : 2 + (uint64_t)w->send.opcode);
	dig(w->is_recv ? w->recv.sg_list[0].length : (uint32_t)w->send.num_sge);
	TRACE("  wr %s op %d id %#llx len %u\n", w->is_recv ? "recv" : "send",
	      w->is_recv ? -1 : (int)w->send.opcode,
	      (unsigned long long)(w->is_recv ? w->recv.wr_id : w->send.wr_id),
	      w->is_recv ? w->recv.sg_list[0].length
			 : w->send.num_sge ? w->send.sg_list[0].length : 0);
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
		const struct pseg *s =
			find_pseg(sw->rdma.rkey, sw->rdma.remote_addr, g->length);
		if (!s)
			FAIL("RDMA %s of %u bytes at %#x:%#llx outside every "
			     "segment the peer advertised", rd ? "Read" : "Write",
			     g->length, sw->rdma.rkey,
			     (unsigned long long)sw->rdma.remote_addr);
		pe.addr = g->addr;
		pe.len = g->length;
		pe.lkey = g->lkey;
		pe.read_xid = s->xid;
		if (!rd)
			write_bytes += g->length;
		break;
	}
	case RPCRDMA_WR_LOCAL_INV: {
		struct fmr *r = key_mr(sw->invalidate_rkey);
		if (!r || !r->used || !r->remote)
			FAIL("LOCAL_INV of %#x, not a live registration of ours",
			     sw->invalidate_rkey);
		pe.inv_rkey = sw->invalidate_rkey;
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
	/* The driver sized its send queue to sq_depth: never more work
	 * requests outstanding than that. */
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
			FAIL("CALL_DONE for an unknown call");
		if (++c->done > 1)
			FAIL("call %#x completed twice", c->xid);
		if (ev->xid != c->xid)
			FAIL("CALL_DONE xid mismatch");
		if (ev->status > 0)
			FAIL("positive status");
		if (ev->reply_len > c->reply_max)
			FAIL("reply_len %zu > reply_max %zu", ev->reply_len,
			     c->reply_max);
		if (ev->nresults > RPCRDMA_MAX_WRITE_CHUNKS)
			FAIL("nresults");
		for (unsigned i = 0; i < RPCRDMA_MAX_WRITE_CHUNKS; i++) {
			size_t cap = i < c->nres && i < sizeof(c->res_len) / sizeof(c->res_len[0])
				     ? c->res_len[i] : 0;
			if (ev->result_len[i] > cap)
				FAIL("result %u: %zu bytes > offered %zu", i,
				     ev->result_len[i], cap);
		}
		/* Touch what the engine says it wrote. */
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
			FAIL("CLOSE delivered while disconnected (stale)");
		close_polled = true;
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
		FAIL("credits_granted %u outside [1, %u] (RFC 8166 §3.3)",
		     info.credits_granted, C.max_calls);
	if (info.calls_in_flight > C.max_calls)
		FAIL("calls_in_flight %u > max_calls", info.calls_in_flight);
	/* A grant may shrink below what is in flight, but no call may be
	 * sent beyond it (RFC 8166 §3.3.1). */
	if (call_sent && info.calls_in_flight > info.credits_granted)
		FAIL("call sent with %u in flight for %u credits",
		     info.calls_in_flight, info.credits_granted);
	call_sent = false;
	if (info.recvs_posted > C.credits + C.max_calls)
		FAIL("recvs_posted %u > created %u", info.recvs_posted,
		     C.credits + C.max_calls);
	if (info.recvs_posted != rq_count)
		FAIL("recvs_posted %u but %u receives handed out",
		     info.recvs_posted, rq_count);
	if (info.connected != connected)
		FAIL("connected state");
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
		while (!(flags & F_LAZY) && rpcrdma_engine_poll_event(E, &ev)) {
			moved = true;
			if (handle_event(&ev))
				answer(ev.call_id,
				       (flags & F_BIGREPLY) ? 5 : 1, NULL);
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

/* Complete the n oldest send-queue entries successfully (flushed if the
 * QP is in error). */
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
				for (uint32_t i = 0; i < p.len;) {
					uint32_t k = p.len - i;
					if (k > sizeof read_pattern)
						k = sizeof read_pattern;
					memcpy(d + i, read_pattern, k);
					i += k;
				}
				if ((flags & F_PLAUSIBLE) && p.len >= 8) {
					rpcrdma_be32_put(d, p.read_xid);
					rpcrdma_be32_put(d + 4, RPCRDMA_RPC_CALL);
				}
			}
			break;
		case RPCRDMA_WR_RDMA_WRITE:
			wc.opcode = RPCRDMA_WC_RDMA_WRITE;
			break;
		case RPCRDMA_WR_LOCAL_INV: {
			wc.opcode = RPCRDMA_WC_LOCAL_INV;
			struct fmr *r = key_mr(p.inv_rkey);
			if (!qp_err && r)
				r->rvalid = false;
			break;
		}
		default:
			wc.opcode = RPCRDMA_WC_SEND;
			break;
		}
		TRACE("  complete %#llx status %d\n",
		      (unsigned long long)wc.wr_id, (int)wc.status);
		int rc = rpcrdma_engine_completion(E, &wc);
		if (rc)
			FAIL("completion of a live work request returned %d", rc);
	}
}

/* ---------------------------------------------------------------------
 * Operations
 */
static void establish(struct in *in)
{
	uint8_t mode = u8(in);
	uint8_t pd[16];
	size_t plen;
	if (mode & 0x80) {
		uint8_t s = u8(in), r = u8(in), f = u8(in);
		plen = (size_t)rpcrdma_cm_pdata_encode(
			pd, sizeof pd, ((size_t)s + 1) * 1024, ((size_t)r + 1) * 1024,
			f & 1);
	} else {
		plen = mode & 15;
		bytes(in, pd, plen);
	}
	uint8_t ord = u8(in);
	rpcrdma_cm_pdata_find(plen ? pd : NULL, plen, &peer_pd, NULL); /* RFC 8797 §5.2 */
	conn_up = true;
	connected = true;
	qp_err = false;
	err_injected = close_polled = false;
	call_sent = false;
	npseg = 0;
	npcall = 0;
	nstale = 0;
	int rc = rpcrdma_engine_established(E, plen ? pd : NULL, plen, ord, 0);
	if (rc)
		FAIL("established = %d", rc);
	/* RFC 8797 §4.2, §5.1: thresholds. */
	struct rpcrdma_engine_info info;
	rpcrdma_engine_get_info(E, &info);
	uint32_t ours_s = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_send));
	uint32_t ours_r = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_recv));
	uint32_t ps = peer_pd.present ? peer_pd.max_send : 1024;
	uint32_t pr = peer_pd.present ? peer_pd.max_recv : 1024;
	if (info.send_threshold != (ours_s < pr ? ours_s : pr) ||
	    info.recv_threshold != (ours_r < ps ? ours_r : ps))
		FAIL("thresholds %u/%u do not follow RFC 8797 §4.2/§5.1",
		     info.send_threshold, info.recv_threshold);
	if (info.send_with_inv !=
	    (C.remote_inv && peer_pd.present && peer_pd.remote_inv))
		FAIL("send_with_inv does not follow RFC 8797 §4.1");
	if (info.credits_granted != 1)
		FAIL("a new connection starts with one credit (RFC 8166 §3.3.3)");
	drain();
}

static void lose_connection(void)
{
	if (connected && err_injected && !close_polled && !(flags & F_LAZY))
		FAIL("an error completion did not make the engine ask to "
		     "close (RFC 8166 §4.5.5)");
	conn_up = false;
	connected = false;
	write_bytes = 0;
	forget_queues();
	npseg = 0;
	npcall = 0;
	rpcrdma_engine_conn_lost(E, 0);
	drain();
}

static void submit(struct in *in)
{
	if (ncalls < MAX_CALLS &&
	    harness_submit(E, in, &calls[ncalls], ncalls, 3, 0))
		ncalls++;
}

/* A message from the peer. */
/* With Invalidate: an rkey of ours the peer could have seen, or junk.
 * The hardware invalidates it on arrival. */
static uint32_t pick_inv(uint8_t kidx)
{
	uint32_t cand = 0, seen = 0;
	for (uint32_t k = 0; k < nkeys; k++)
		if (mrs[k].used && mrs[k].exposed && mrs[k].rvalid &&
		    seen++ == kidx % 8u)
			cand = KEY_BASE + k;
	uint32_t inv = cand ? cand : (uint32_t)kidx;
	struct fmr *r = key_mr(inv);
	if (r && r->used && r->remote)
		r->rvalid = false;
	return inv;
}

static void deliver_peer(uint8_t *msg, uint16_t len, bool with_inv,
			 uint32_t inv, bool via_cq)
{
	uint32_t rsize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_recv));
	if (len >= 4)
		last_rx_xid = rpcrdma_be32_get(msg);
	record_peer_segments(msg, len);
	TRACE("  peer msg len %u cq %d inv %d:%#x words %#x %#x %#x %#x\n", len,
	      via_cq, with_inv, inv, len >= 4 ? rpcrdma_be32_get(msg) : 0,
	      len >= 8 ? rpcrdma_be32_get(msg + 4) : 0, len >= 12 ? rpcrdma_be32_get(msg + 8) : 0,
	      len >= 16 ? rpcrdma_be32_get(msg + 12) : 0);
	if (!via_cq) {
		if (qp_err)
			return;
		int rc = rpcrdma_engine_recv(E, msg, len, with_inv, inv, 0);
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
		err_injected = true;
	} else {
		struct rpcrdma_sge g = {p.addr, p.len, p.lkey};
		uint8_t *d = check_sge(&g, RPCRDMA_ACCESS_LOCAL_WRITE, "Recv use");
		memcpy(d, msg, len);
		wc.status = RPCRDMA_WC_SUCCESS;
		wc.byte_len = len;
		if (with_inv) {
			wc.wc_flags = RPCRDMA_WC_WITH_INV;
			wc.invalidated_rkey = inv;
		}
	}
	int rc = rpcrdma_engine_completion(E, &wc);
	if (rc)
		FAIL("receive completion = %d", rc);
}

static uint8_t pmsg[1u << 17];

/* A message from the peer: fuzzer bytes. */
static void peer_message(struct in *in, bool via_cq)
{
	uint16_t len = u16(in);
	uint8_t fl = u8(in);
	uint8_t kidx = u8(in);
	uint32_t rsize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(C.max_inline_recv));
	len = (uint16_t)(len % (rsize + 9));
	bytes(in, pmsg, len);
	unsigned pick = (fl >> 1) & 7;
	if (pick && len >= 4) {
		uint32_t xid = last_rx_xid;
		if (pick < 7 && ncalls)
			xid = calls[(pick - 1) % ncalls].xid;
		rpcrdma_be32_put(pmsg, xid);
		/* and the RPC XID after the header, when it decodes */
		if ((fl & 0x10) && !rpcrdma_v1_decode(pmsg, len, NULL, &hx) &&
		    hx.hdr_len + 4 <= len)
			rpcrdma_be32_put(pmsg + hx.hdr_len, xid);
	}
	bool with_inv = fl & 1;
	uint32_t inv = with_inv ? pick_inv(kidx) : 0;
	if (fl & 0x20)
		len = (uint16_t)(len & ~3u);
	deliver_peer(pmsg, len, with_inv, inv, via_cq);
}

/* A message from the peer built from a few fuzzer choices, so deep
 * states (replies that match our calls and mirror their chunks, calls
 * with plausible chunk lists) are reached quickly. */
static struct rpcrdma_v1_hdr hb;

static void structured_message(struct in *in)
{
	uint8_t kind = u8(in), fl = u8(in);
	rpcrdma_v1_hdr_init(&hb);
	hb.vers = 1;
	hb.credit = u8(in);
	size_t payload = 0;
	uint32_t xid;
	bool call_payload = false;
	switch (kind % 4) {
	case 0:   /* a reply to one of our calls */
	case 1: { /* an RDMA_ERROR for one of our calls */
		if (!ncalls)
			return;
		struct call *c = &calls[u8(in) % ncalls];
		xid = c->xid;
		hb.xid = xid;
		if (kind % 4 == 1) {
			hb.proc = RPCRDMA_V1_ERROR;
			hb.err = (fl & 1) ? RPCRDMA_V1_ERR_VERS : RPCRDMA_V1_ERR_CHUNK;
			hb.vers_low = 1;
			hb.vers_high = u8(in);
			break;
		}
		hb.proc = (fl & 1) ? RPCRDMA_V1_NOMSG : RPCRDMA_V1_MSG;
		/* Echo the segments the call's last attempt offered (RFC
		 * 8166 §3.4.6), lengths up to what was offered (+1 when
		 * fl & 2: a lying Responder; fl & 8: a foreign handle). */
		const struct rpcrdma_chunk_lists *off = our_lists(xid);
		hb.chunks.nwrites = c->nres;
		for (unsigned i = 0; i < c->nres; i++) {
			struct rpcrdma_write_chunk *w = &hb.chunks.writes[i];
			w->nsegs = c->res_len[i] ? 1 : 0;
			if (off && i < off->nwrites)
				w->nsegs = off->writes[i].nsegs ? 1 : 0;
			if (w->nsegs) {
				w->segs[0].handle = 0x100;
				w->segs[0].offset = 0;
				if (off && i < off->nwrites && !(fl & 8))
					w->segs[0] = off->writes[i].segs[0];
				w->segs[0].length = u16(in) %
					(uint32_t)(c->res_len[i] + 1 + ((fl & 2) ? 1 : 0));
			}
		}
		if (hb.proc == RPCRDMA_V1_NOMSG || (fl & 4)) {
			hb.chunks.has_reply = true;
			hb.chunks.reply.nsegs = 1;
			hb.chunks.reply.segs[0].handle = 0x101;
			hb.chunks.reply.segs[0].offset = 0;
			if (off && off->has_reply && off->reply.nsegs && !(fl & 8))
				hb.chunks.reply.segs[0] = off->reply.segs[0];
			hb.chunks.reply.segs[0].length =
				hb.proc == RPCRDMA_V1_NOMSG
					? u16(in) % (uint32_t)(c->reply_max + 2)
					: 0;
		}
		if (hb.proc == RPCRDMA_V1_MSG)
			payload = 24 + 4u * (u8(in) % 64u);
		break;
	}
	default: { /* a call from the peer */
		xid = 0x7000u + u8(in);
		hb.xid = xid;
		bool nomsg = kind % 4 == 3;
		hb.proc = nomsg ? RPCRDMA_V1_NOMSG : RPCRDMA_V1_MSG;
		uint32_t n = 0;
		if (nomsg) {
			/* a Position-Zero Read chunk of 1..4 segments */
			unsigned k = 1 + (fl & 3);
			for (unsigned i = 0; i < k; i++) {
				hb.chunks.reads[n].position = 0;
				gen_seg(in, &hb.chunks.reads[n].target, 600);
				n++;
			}
		} else {
			call_payload = true;
			payload = 40 + 4u * (u8(in) % 32u);
		}
		if (fl & 4) { /* a further Read chunk */
			uint32_t pos = 4u * (u8(in) % 24u);
			unsigned k = 1 + ((fl >> 3) & 1);
			for (unsigned i = 0; i < k; i++) {
				hb.chunks.reads[n].position = pos ? pos : 40;
				gen_seg(in, &hb.chunks.reads[n].target, 3000);
				n++;
			}
		}
		hb.chunks.nreads = n;
		hb.chunks.nwrites = (fl >> 4) & 3;
		for (uint32_t i = 0; i < hb.chunks.nwrites; i++) {
			struct rpcrdma_write_chunk *w = &hb.chunks.writes[i];
			w->nsegs = u8(in) % 5u;
			for (uint32_t j = 0; j < w->nsegs; j++)
				gen_seg(in, &w->segs[j], 5000);
		}
		if (fl & 0x40) {
			hb.chunks.has_reply = true;
			hb.chunks.reply.nsegs = 1 + u8(in) % 3u;
			for (uint32_t j = 0; j < hb.chunks.reply.nsegs; j++)
				gen_seg(in, &hb.chunks.reply.segs[j], 9000);
		}
		if (nomsg && !n)
			return;
		break;
	}
	}
	int h = rpcrdma_v1_encode(pmsg, sizeof pmsg, &hb);
	if (h < 0)
		return;
	uint8_t *p = pmsg + h;
	memset(p, 0, payload);
	if (payload) {
		rpcrdma_be32_put(p, xid);
		rpcrdma_be32_put(p + 4, call_payload ? RPCRDMA_RPC_CALL : RPCRDMA_RPC_REPLY);
		if (call_payload)
			rpcrdma_be32_put(p + 8, 2);
	}
	size_t len = (size_t)h + payload;
	if (len > 0xffff)
		return;
	bool with_inv = (fl & 0x80) != 0;
	uint32_t inv = with_inv ? pick_inv(u8(in)) : 0;
	deliver_peer(pmsg, (uint16_t)len, with_inv, inv, (kind & 4) != 0);
}

static void run_op(struct in *in)
{
	uint8_t op = u8(in);
	TRACE("op %u\n", op % 12);
	switch (op % 14) {
	case 0:
		peer_message(in, false);
		break;
	case 1:
		peer_message(in, true);
		break;
	case 2:
		complete_sends((uint32_t)(u8(in) % 8) + 1);
		break;
	case 3: {
		/* One failed completion: the QP is in error from then on. */
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
		err_injected = true;
		if (rpcrdma_engine_completion(E, &wc))
			FAIL("error completion rejected");
		break;
	}
	case 4:
		submit(in);
		break;
	case 5: {
		uint8_t idx = u8(in), shape = u8(in);
		uint32_t waiting[MAX_RS], nw = 0;
		for (uint32_t i = 0; i < MAX_RS; i++)
			if (incs[i].state == 1)
				waiting[nw++] = i;
		if (nw)
			answer(waiting[idx % nw], shape, in);
		break;
	}
	case 6:
		lose_connection();
		break;
	case 7:
		if (!connected)
			establish(in);
		break;
	case 8: {
		uint8_t k = u8(in);
		if (!nstale)
			break;
		struct rpcrdma_wc wc;
		memset(&wc, 0, sizeof wc);
		wc.wr_id = stale[k % nstale];
		wc.status = (enum rpcrdma_wc_status)(u8(in) % 12);
		wc.byte_len = 64;
		rpcrdma_engine_completion(E, &wc);
		break;
	}
	case 9:
		complete_sends(sq_count);
		break;
	case 10: {
		/* A wr_id that names nothing: must be ignored. */
		struct rpcrdma_wc wc;
		memset(&wc, 0, sizeof wc);
		uint64_t id = (uint64_t)u32(in) << 32 | u32(in);
		uint8_t kind = (uint8_t)(id >> 40);
		if (kind >= 1 && kind <= 3)
			id |= (uint64_t)0xff << 40;
		wc.wr_id = id;
		rpcrdma_engine_completion(E, &wc);
		break;
	}
	case 11: {
		uint8_t b = u8(in);
		again_budget = b & 7;
		fail_budget = (b >> 4) & 3;
		break;
	}
	case 13:
		structured_message(in);
		break;
	default: {
		/* 12: poll the events now (they pile up with F_LAZY). */
		uint8_t keep = flags;
		flags &= (uint8_t)~F_LAZY;
		drain();
		flags = keep;
		break;
	}
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
	again_budget = fail_budget = 0;
	faults_armed = false;
	conn_up = connected = false;
	npseg = 0;
	npcall = 0;
	sq_head = sq_count = sq_unacked = rq_head = rq_count = 0;
	nstale = 0;
	write_bytes = 0;
	qp_err = false;
	memset(calls, 0, sizeof calls);
	ncalls = 0;
	memset(incs, 0, sizeof incs);
	last_rx_xid = 0;
	err_injected = close_polled = false;
	call_sent = false;
	nours = 0;
	memset(&peer_pd, 0, sizeof peer_pd);
}

static void run_input(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	reset();
	rpcrdma_engine_config_default(&C);
	C.max_calls = 1u + u8(&in) % 6u;
	C.credits = 1u + u8(&in) % 6u;
	uint8_t sz = u8(&in);
	C.max_inline_recv = 1024u * (1u + (sz & 3u));
	C.max_inline_send = 1024u * (1u + ((sz >> 2) & 3u));
	C.remote_inv = (sz & 16) != 0;
	C.max_retries = (sz >> 5) & 3u;
	C.accept_msgp = (sz & 0x80) != 0; /* RFC 5666 RDMA_MSGP taken */
	uint8_t lim = u8(&in);
	static const uint32_t callsz[4] = {256, 4096, 65536, 1u << 20};
	C.max_call_size = callsz[lim & 3];
	C.max_chunk_bytes = callsz[(lim >> 2) & 3];
	if (lim & 16)
		C.sq_depth = 8u + ((lim >> 5) & 7u) * 3u;
	C.xid_seed = u32(&in);
	C.versions = RPCRDMA_ENGINE_V1_ONLY; /* v1 scripts */
	flags = u8(&in);
	uint8_t faults = u8(&in);

	static const struct rpcrdma_engine_mem_ops ops = {
		NULL, fake_reg, fake_release, NULL, NULL, NULL,
	};
	int rc = harness_engine(&C, &ops, &E);
	if (rc)
		FAIL("create = %d", rc);
	again_budget = faults & 7;
	fail_budget = (faults >> 4) & 3;
	faults_armed = true;
	establish(&in);

	for (int ops_run = 0; in.n && ops_run < 400; ops_run++)
		run_op(&in);

	/* Teardown. */
	flags &= (uint8_t)~F_LAZY;
	drain();
	again_budget = fail_budget = 0;
	if (flags & F_ABRUPT) {
		/* The driver destroys the QP, then the engine: no events. */
		conn_up = false;
	} else {
		lose_connection();
		for (int round = 0; round < 80; round++) {
			bool pending = false;
			for (unsigned i = 0; i < ncalls; i++)
				if (!calls[i].done)
					pending = true;
			if (!pending)
				break;
			connected = conn_up = true;
			qp_err = false;
			err_injected = close_polled = false;
			rpcrdma_cm_pdata_decode(NULL, 0, &peer_pd);
			if (rpcrdma_engine_established(E, NULL, 0, 1, 0))
				FAIL("re-establish");
			drain();
			lose_connection();
		}
		for (unsigned i = 0; i < ncalls; i++)
			if (calls[i].done != 1)
				FAIL("call %#x completed %d times", calls[i].xid,
				     calls[i].done);
		for (uint32_t i = 0; i < MAX_RS; i++) {
			if (incs[i].state == 1) {
				answer(i, 0, NULL);
				if (incs[i].state != 0)
					FAIL("stale call accepted a reply");
			} else if (incs[i].state == 2) {
				FAIL("reply on call_id %u never got REPLY_SENT", i);
			}
		}
		drain();
	}
	if (getenv("FUZZ_ENGINE_DEBUG")) {
		struct rpcrdma_engine_counters k;
		rpcrdma_engine_get_counters(E, &k);
		fprintf(stderr,
			"calls %llu done %llu short/chunked/long %llu/%llu/%llu "
			"inline/long replies %llu/%llu bad %llu | received %llu "
			"short/chunked/long %llu/%llu/%llu read %llu write %llu "
			"errv/c sent %llu/%llu recv %llu/%llu linv %llu rinv %llu "
			"swi %llu\n",
			(unsigned long long)k.calls,
			(unsigned long long)k.calls_completed,
			(unsigned long long)k.short_calls,
			(unsigned long long)k.chunked_calls,
			(unsigned long long)k.long_calls,
			(unsigned long long)k.replies_inline,
			(unsigned long long)k.replies_long,
			(unsigned long long)k.bad_replies,
			(unsigned long long)k.calls_received,
			(unsigned long long)k.short_replies,
			(unsigned long long)k.chunked_replies,
			(unsigned long long)k.long_replies,
			(unsigned long long)k.rdma_read_bytes,
			(unsigned long long)k.rdma_write_bytes,
			(unsigned long long)k.err_vers_sent,
			(unsigned long long)k.err_chunk_sent,
			(unsigned long long)k.err_vers_recv,
			(unsigned long long)k.err_chunk_recv,
			(unsigned long long)k.local_invs,
			(unsigned long long)k.remote_invs,
			(unsigned long long)k.send_with_inv);
	}
	harness_engine_done(E);
	E = NULL;
	if (live_regs)
		FAIL("%u registrations leaked after destroy", live_regs);
	for (unsigned i = 0; i < ncalls; i++)
		free_call(&calls[i]);
	for (uint32_t i = 0; i < MAX_RS; i++)
		free_inc_in(incs, &incs[i]);
}
