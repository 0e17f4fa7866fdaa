/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The Responder's time-out on its RDMA operations.
 *
 * A Requester that never answers our RDMA Read (or whose end stops taking
 * our RDMA Writes and Send) would hold the call, its credit, its receive
 * buffer and its registrations for as long as the connection lives.  RFC
 * 8166 gives the Responder no message to abandon one call (§4.5.3: RDMA
 * errors are connection errors; §4.5.5: recovery is by reconnection), so
 * a call whose RDMA operations outlive rdma_timeout_ms closes the
 * connection; conn_lost() then frees everything.  Other connections are
 * other engines and see nothing of it.
 *
 * Time comes only from tick(): a slot's deadline is set at the first tick
 * that sees it reading or sending, and set again whenever it moves from
 * one of those states to the other.  The RPC loop asks when to tick next
 * (rpcrdma_engine_next_deadline); any pass of the engine makes it tick the
 * connection at once (rpc/loop.c), so a slot that starts waiting is timed
 * from its first tick after the change, as before.
 */
#include "engine/engine_internal.h"

/* RDMA Reads outstanding, or a reply's RDMA Writes and the signalled
 * Send behind them (send_queue.c): operations the peer's end must take
 * part in.  A Send left unsignalled completes only with a later request,
 * so its slot waiting says nothing about the peer. */
static bool timed(const struct responder_slot *s)
{
	return s->state == RS_READING ||
	       (s->state == RS_SENDING && s->send_waited);
}

/* Is anything to be timed at all: the time-out on, connected, no close
 * asked already, and a slot taken (an idle connection has none). */
static bool watching(const struct rpcrdma_engine *e)
{
	return e->cfg.rdma_timeout_ms && e->connected && !e->close_asked &&
	       e->nrs_free != e->nrs;
}

/* A slot whose operations the time-out watches on this connection. */
static bool watched(const struct rpcrdma_engine *e,
		    const struct responder_slot *s)
{
	return timed(s) && s->epoch == e->epoch;
}

uint64_t rpcrdma_rs_rdma_next_deadline(const struct rpcrdma_engine *e,
				       uint64_t now)
{
	uint64_t next = UINT64_MAX;
	if (!watching(e))
		return next;
	for (uint32_t i = 0; i < e->rs_used; i++) {
		const struct responder_slot *s = &e->rs[i];
		if (!watched(e, s))
			continue;
		/* Not timed yet, or timed in the state it has left: the
		 * next tick starts its clock, so it must come at once. */
		if (!s->rdma_deadline || s->rdma_timed != s->state)
			return now;
		if (s->rdma_deadline < next)
			next = s->rdma_deadline;
	}
	return next;
}

bool rpcrdma_rs_rdma_timed_out(struct rpcrdma_engine *e, uint64_t now)
{
	/* A free slot has no deadline (rpcrdma_rs_free clears it): with
	 * every slot free there is nothing to look at. */
	if (!watching(e))
		return false;
	for (uint32_t i = 0; i < e->rs_used; i++) {
		struct responder_slot *s = &e->rs[i];
		if (!watched(e, s)) {
			s->rdma_deadline = 0;
			continue;
		}
		if (!s->rdma_deadline || s->rdma_timed != s->state) {
			s->rdma_timed = s->state;
			s->rdma_deadline = now + e->cfg.rdma_timeout_ms;
			continue;
		}
		if (now >= s->rdma_deadline) {
			e->ctr.rdma_timeouts++;
			rpcrdma_ask_close(e, RPCRDMA_ERR_TIMEOUT);
			return true;
		}
	}
	return false;
}
