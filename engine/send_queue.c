/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The send queue: which work requests are signalled, and what a
 * completion says about the ones that were not.
 *
 * A completion costs the consumer a poll and, when it sleeps, a wake-up,
 * so only the work requests whose completion the engine waits for are
 * signalled: RDMA Reads (their data), LOCAL_INVs (the memory they fence,
 * RFC 8166 §4.4.1), and a reply's Send when the upper layer's memory is
 * read by its RDMA Writes (REPLY_SENT must wait for it).  A call's Send is
 * not: the reply to it proves the Responder received it (xprtrdma signals
 * one Send in a batch the same way).  One work request in every
 * `signal_every` is signalled anyway, so that entries come back.
 *
 * And one reply Send in every REPLY_SIGNAL_EVERY: an unsignalled reply
 * keeps its Responder slot (9 KiB, most of it chunk lists) and the
 * reply's send buffer until a later completion, where a call's Send
 * keeps only its queue entry.  With one call in flight and a reply
 * signalled in 16, a server connection under load cycled through 16
 * slots and their buffers: 224 KiB resident per connection over idle
 * (`rpcrdma-perf load --connections 64`, RSS after the load).  One in 4
 * keeps 96 KiB, for a completion per 4 replies (10.1 -> 10.3 k
 * instructions per NULL call) and no wake-up: the CQ is armed after the
 * reply is posted (rpc/progress.c, rpc/tirpc/svc_rdma.c; docs/SCALE.md).
 *
 * A reliable connection executes its send queue in posting order, so a
 * signalled completion also completes every unsignalled request before
 * it: the engine records every send-queue request it hands out, in
 * order, and returns their send-queue entries (and a responder Send's
 * slot) when a signalled one after them completes.  Hardware reports
 * completions in posting order too; the iwarp provider reports an RDMA
 * Read when its response has arrived, after Sends posted behind it, so a
 * signalled request still outstanding before the one completing stays
 * recorded until its own completion.
 */

#include "engine/engine_internal.h"

#define REPLY_SIGNAL_EVERY 4u

/* signal_every from the configuration (create, reset). */
void rpcrdma_sq_config(struct rpcrdma_engine *e)
{
	/* At most signal_every - 1 unsignalled requests wait behind the last
	 * signalled one: well inside the send queue, and inside the spare
	 * responder slots (twice the grant, engine.c) that unsignalled reply
	 * Sends keep busy until then. */
	uint32_t n = e->cfg.sq_depth / 4;
	if (n > e->cfg.credits / 2)
		n = e->cfg.credits / 2;
	if (n > 16)
		n = 16;
	e->signal_every = n ? n : 1;
}

void rpcrdma_sq_reset(struct rpcrdma_engine *e)
{
	e->sqe_head = e->sqe_count = 0;
	e->unsignaled = e->unsignaled_replies = 0;
}

void rpcrdma_sq_post(struct rpcrdma_engine *e, struct rpcrdma_send_wr *w)
{
	bool need = (w->send_flags & RPCRDMA_SEND_SIGNALED) != 0;
	if (!need) {
		const struct wr_tag t = rpcrdma_wr_tag(w->wr_id);
		bool reply = t.kind == WRK_RS && t.op == WRO_SEND;
		if (++e->unsignaled >= e->signal_every ||
		    (reply && ++e->unsignaled_replies >= REPLY_SIGNAL_EVERY))
			w->send_flags |= RPCRDMA_SEND_SIGNALED;
	}
	/* A signalled completion completes every request before it. */
	if (w->send_flags & RPCRDMA_SEND_SIGNALED)
		e->unsignaled = e->unsignaled_replies = 0;
	if (e->sqe_count == e->sqe_cap) {
		/* More outstanding than sq_avail allows: cannot happen. */
		rpcrdma_ask_close(e, RPCRDMA_ERR_OVERFLOW);
		return;
	}
	struct sq_ent *s = &e->sqe[(e->sqe_head + e->sqe_count++) % e->sqe_cap];
	s->wr_id = w->wr_id;
	s->signaled = (w->send_flags & RPCRDMA_SEND_SIGNALED) != 0;
	s->done = false;
}

/* An unsignalled request is done: its entry comes back, and a reply's
 * Send frees its slot. */
static void implicit(struct rpcrdma_engine *e, uint64_t wr_id)
{
	const struct wr_tag t = rpcrdma_wr_tag(wr_id);

	e->sq_avail++;
	if (t.kind == WRK_RS && t.op == WRO_SEND && t.idx < e->nrs)
		rpcrdma_rs_wc(e, &e->rs[t.idx], t.op, NULL);
}

bool rpcrdma_sq_complete(struct rpcrdma_engine *e, uint64_t wr_id)
{
	bool found = false;
	for (uint32_t i = 0; i < e->sqe_count && !found; i++) {
		struct sq_ent *s = &e->sqe[(e->sqe_head + i) % e->sqe_cap];
		if (s->done)
			continue;
		if (!s->signaled)
			implicit(e, s->wr_id);
		else if (s->wr_id == wr_id)
			found = true;
		else
			continue; /* an earlier RDMA Read, still outstanding */
		s->done = true;
	}
	while (e->sqe_count && e->sqe[e->sqe_head].done) {
		e->sqe_head = (e->sqe_head + 1) % e->sqe_cap;
		e->sqe_count--;
	}
	/* Empty: start again at the front, so that a connection with a
	 * request or two out keeps using the first entries (the page it
	 * shares with the engine) instead of walking the ring. */
	if (!e->sqe_count)
		e->sqe_head = 0;
	if (!found) {
		/* A completion of nothing outstanding: the provider broke
		 * the reliable connection's semantics. */
		rpcrdma_ask_close(e, RPCRDMA_ERR_PROTOCOL);
	}
	return found;
}
