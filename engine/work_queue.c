/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The work requests the engine hands out (engine.h, rpcrdma_engine_next_wr
 * and rpcrdma_engine_pop_wr): one queue for both of the QP's queues, in
 * the order they must be posted.  The roles push at the tail as they
 * decide (a call's Send, a reply's RDMA Writes before its Send, RDMA
 * Reads, LOCAL_INVs, receives to replenish); the driver takes from the
 * head.  Every entry carries a wr_id of the one definition in
 * engine_internal.h (rpcrdma_wr_id, rpcrdma_wr_tag), which the
 * completions are decoded with (engine.c, send_queue.c).
 *
 * Capacity: sends are bounded by the send queue reservation (sq_avail),
 * receives by the buffer count, so the queue never overflows; a push
 * that finds it full is an engine bug, which its caller answers by
 * asking to close rather than writing past.
 */
#include <string.h>

#include "engine/engine_internal.h"

/* The entry at the tail, taken; NULL when the queue is full. */
static struct rpcrdma_engine_wr *tail_take(struct rpcrdma_engine *e,
					   bool is_recv)
{
	if (e->wrq_count == e->wrq_cap)
		return NULL;
	struct rpcrdma_engine_wr *w =
		&e->wrq[(e->wrq_head + e->wrq_count++) % e->wrq_cap];
	w->is_recv = is_recv;
	return w;
}

struct rpcrdma_engine_wr *rpcrdma_wr_push(struct rpcrdma_engine *e)
{
	struct rpcrdma_engine_wr *w = tail_take(e, false);
	/* The roles set what they use: the SGEs up to num_sge, the recv
	 * fields whole; only the send part needs zeroing. */
	if (w)
		memset(&w->send, 0, sizeof w->send);
	return w;
}

struct rpcrdma_engine_wr *rpcrdma_wr_push_recv(struct rpcrdma_engine *e)
{
	/* A receive sets its recv part whole and one SGE; every reader of
	 * an entry looks at is_recv first, so the send part, half of a
	 * refill's work when it was zeroed for each receive, is left as it
	 * was. */
	return tail_take(e, true);
}

bool rpcrdma_wr_room(const struct rpcrdma_engine *e, uint32_t n)
{
	return e->wrq_cap - e->wrq_count >= n;
}

void rpcrdma_wr_forget(struct rpcrdma_engine *e)
{
	e->wrq_count = 0;
	e->wrq_head = 0;
}

struct rpcrdma_engine_wr *rpcrdma_engine_next_wr(struct rpcrdma_engine *e)
{
	if (!e->wrq_count)
		return NULL;
	struct rpcrdma_engine_wr *wr = &e->wrq[e->wrq_head];
	e->wrq_head = (e->wrq_head + 1) % e->wrq_cap;
	/* Empty: the next push starts at the front again, so the entries
	 * touched are as many as were ever queued at once (an idle or
	 * lightly used connection keeps its first pages only).  What was
	 * handed out stays valid until the next input, as before. */
	if (!--e->wrq_count)
		e->wrq_head = 0;
	wr->send.next = NULL;
	wr->recv.next = NULL;
	if (wr->is_recv) {
		wr->recv.sg_list = wr->sge;
	} else {
		wr->send.sg_list = wr->send.num_sge ? wr->sge : NULL;
		rpcrdma_sq_post(e, &wr->send);
	}
	return wr;
}

int rpcrdma_engine_pop_wr(struct rpcrdma_engine *e,
			  struct rpcrdma_engine_wr *wr)
{
	const struct rpcrdma_engine_wr *p = rpcrdma_engine_next_wr(e);
	if (!p)
		return 0;
	*wr = *p;
	if (wr->is_recv)
		wr->recv.sg_list = wr->sge;
	else
		wr->send.sg_list = wr->send.num_sge ? wr->sge : NULL;
	return 1;
}
