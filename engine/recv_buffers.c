/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Receive buffers (RFC 8166 §3.3.1, RFC 8167 §4.3).
 *
 * A Send can only land in a receive posted before it arrives, so a
 * Responder keeps posted at least as many receives as the credits it
 * grants (RFC 8166 §3.3.1), and a Requester one for the reply of each
 * call it has outstanding (RFC 8167 §4.3: with reverse-direction calls
 * both roles share the connection's receives).  The engine keeps
 * recv_target = grant + max_calls posted while connected (a server
 * posts one until the first message comes, rpcrdma_recv_refill; the grant:
 * credits, or less while the connection uses less, below).  A Requester
 * slot may hold the buffer of an inline reply while its call's
 * LOCAL_INVs complete, so there are max_calls more buffers for those,
 * and a Responder slot holds the buffer of an inline call, which the
 * upper layer reads in place, until the upper layer is done with the
 * call and its reply is out, so there is one more per Responder slot
 * (rpcrdma_engine_create sizes them, in the front of the arena).  A
 * reply whose Send is out unsignalled gives the buffer back before the
 * Send's completion frees its slot (rpcrdma_rs_done_maybe_free).
 * Every buffer is always exactly one of: free
 * (recv_free, a stack), posted (recv_posted, a ring in posting order),
 * held by a call (requester_slot.held_rbuf) or held by a call received
 * (responder_slot.rbuf).
 */
#include "engine/engine_internal.h"

void rpcrdma_recv_init(struct rpcrdma_engine *e)
{
	e->rbufs = e->arena;
	/* Lowest buffers first, as a scan would have given them. */
	for (uint32_t i = 0; i < e->nrbuf; i++)
		e->recv_free[e->nrecv_free++] = e->nrbuf - 1 - i;
}

void rpcrdma_recv_put(struct rpcrdma_engine *e, uint32_t idx)
{
	e->recv_free[e->nrecv_free++] = idx;
}

/*
 * A server's first receive (RFC 8166 §3.3.3).  Until the client's first
 * message has come, a server posts one receive only: the client "MUST
 * NOT assume more than one credit is available and MUST receive a valid
 * reply ... prior to sending its next request" (the v2 draft's §7 says
 * the same of its opener: one message, then nothing until an answer),
 * and a server sends no call of its own before it knows the client's
 * version (requester.c).  The rest are posted at the end of the input
 * that took the first message, before the Send of any reply that
 * grants them (the driver posts receives first).
 *
 * Why: the first message's buffer is then the first one posted again,
 * and the client's next message lands in it.  With every receive posted
 * up front, the v2 opener took the first buffer and the first call the
 * second, so an idle connection held two pages of receive buffers where
 * one does; and a connection that never sends holds one receive, not
 * the whole grant's.  A client that breaks the MUST finds no receive
 * for its second message: fatal to the connection on iWARP (RFC 5041
 * §7.2), an RNR NAK on InfiniBand and RoCE, where only the sender's RNR
 * retries can save it.  Linux's xprtrdma starts every connection at one
 * credit, as §3.3.3 asks.
 * A server that speaks only version 1 knows the version at once and
 * may call first, so it posts them all (!e->vers).
 */
static uint32_t refill_target(const struct rpcrdma_engine *e)
{
	return e->await_first && !e->vers ? 1 : e->recv_target;
}

void rpcrdma_recv_refill(struct rpcrdma_engine *e)
{
	const uint32_t target = refill_target(e);
	while (e->connected && e->nrecv_posted < target && e->nrecv_free) {
		struct rpcrdma_engine_wr *w = rpcrdma_wr_push_recv(e);
		if (!w)
			return;
		uint32_t idx = e->recv_free[--e->nrecv_free];
		w->recv.wr_id = rpcrdma_wr_id(e, WRK_RECV, WRO_RECV, idx);
		w->recv.num_sge = 1;
		w->sge[0].addr = rpcrdma_addr(rpcrdma_rbuf_ptr(e, idx));
		w->sge[0].length = e->rsize;
		w->sge[0].lkey = e->arena_mr.lkey;
		uint32_t at = (e->recv_posted_head + e->nrecv_posted++) %
			      e->nrbuf;
		e->recv_posted[at] = idx;
	}
	/* RFC 8166 §3.3.1: every credit granted is backed by a posted
	 * receive.  The buffers and the work-request queue are sized so that
	 * the refill always reaches its target; if it ever fell short, the
	 * next replies would grant receives that are not there, and the
	 * peer's Send into none is fatal to the connection anyway: close
	 * now, with the reason. */
	if (e->connected && e->nrecv_posted < target)
		rpcrdma_ask_close(e, RPCRDMA_ERR_OVERFLOW);
}

/* Receives complete in posting order on a reliable connection; any order
 * is tolerated anyway. */
bool rpcrdma_recv_unpost(struct rpcrdma_engine *e, uint32_t idx)
{
	for (uint32_t i = 0; i < e->nrecv_posted; i++) {
		uint32_t at = (e->recv_posted_head + i) % e->nrbuf;
		if (e->recv_posted[at] != idx)
			continue;
		for (uint32_t j = i; j > 0; j--) {
			uint32_t to = (e->recv_posted_head + j) % e->nrbuf;
			uint32_t from = (e->recv_posted_head + j - 1) % e->nrbuf;
			e->recv_posted[to] = e->recv_posted[from];
		}
		e->recv_posted_head = (e->recv_posted_head + 1) % e->nrbuf;
		e->nrecv_posted--;
		return true;
	}
	return false;
}

void rpcrdma_recv_conn_lost(struct rpcrdma_engine *e)
{
	while (e->nrecv_posted) {
		rpcrdma_recv_put(e, e->recv_posted[e->recv_posted_head]);
		e->recv_posted_head = (e->recv_posted_head + 1) % e->nrbuf;
		e->nrecv_posted--;
	}
	e->recv_posted_head = 0;
	rpcrdma_recv_grant_reset(e); /* its share of the budget goes back */
}

uint32_t rpcrdma_recv_grant(const struct rpcrdma_engine *e)
{
	/* Every receive the grant counts on is posted before the Send that
	 * carries it: recv_target follows the grant, the refill ends every
	 * input, and the driver posts receives before sends. */
	return e->grant;
}

/*
 * The grant adapts to the connection's use (docs/SCALE.md, "Shared
 * receives and credits").  A connection starts at credits_start, and
 * posts that many receives for calls (beside max_calls for the replies
 * of its own calls): an idle connection does not hold the work requests
 * and queue entries of the whole grant.  When a call arrives with every
 * credit of the grant in use (the peer has as many calls unanswered as
 * it may), the grant doubles, up to credits, and within what is left of
 * the server's budget (cfg.budget) when it has one.  The receives are
 * posted at the end of that input, before the Send of any reply that
 * carries the larger grant, so a grant is never more than posted
 * receives back (RFC 8166 §3.3.1).
 *
 * A connection with none of its calls open and none arrived for
 * GRANT_IDLE_MS goes back to its first grant, and gives the budget back
 * what it took, for busy connections to grow with: §3.3.1 lets the
 * Responder reduce its grant ("to match the needs or policies in
 * effect").  The smaller grant goes out with the next reply.  Until the
 * peer has seen it, it may send as many calls as the larger one allowed:
 * the receives posted for that stay posted (a receive queue cannot take
 * one back) and are only not posted again as calls use them, while the
 * target is lower, so every call the peer may send still finds one.  A
 * burst that finds the grant in use grows it again on the way.
 *
 * While several connections want some of the budget (each holds some,
 * or was refused), each grows to its share of it at most, limit /
 * wanting; one that holds more since others came comes down to its
 * share at its next tick, calls open or not (the same reasoning holds:
 * its receives stay posted), so a client that came first and keeps its
 * grant in use cannot hold all of it.
 */
#define GRANT_IDLE_MS 1000u

static uint32_t grant_first(const struct rpcrdma_engine *e)
{
	uint32_t g = e->cfg.credits_start;
	return g && g < e->cfg.credits ? g : e->cfg.credits;
}

static void grant_set(struct rpcrdma_engine *e, uint32_t g)
{
	e->grant = g;
	e->recv_target = g + e->cfg.max_calls;
}

/* Whether this connection counts among those that want some of the
 * budget (it holds some, or was refused). */
static void budget_wants(struct rpcrdma_engine *e, bool on)
{
	struct rpcrdma_engine_budget *b = e->cfg.budget;
	if (!b || e->grant_wants == on)
		return;
	e->grant_wants = on;
	if (on)
		atomic_fetch_add_explicit(&b->wanting, 1, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&b->wanting, 1, memory_order_relaxed);
}

/* A connection's share of the budget while others want some too. */
static uint64_t budget_share(const struct rpcrdma_engine_budget *b)
{
	uint32_t n = atomic_load_explicit(&b->wanting, memory_order_relaxed);
	return b->limit / (n ? n : 1);
}

/* Up to want credits of the budget, for the grant, within the share;
 * how many it got. */
static uint32_t budget_take(struct rpcrdma_engine *e, uint32_t want)
{
	struct rpcrdma_engine_budget *b = e->cfg.budget;
	if (!b)
		return want;
	budget_wants(e, true);
	uint64_t share = budget_share(b);
	if (e->grant_taken >= share)
		return 0;
	if (want > share - e->grant_taken)
		want = (uint32_t)(share - e->grant_taken);
	uint64_t cur = atomic_load_explicit(&b->taken, memory_order_relaxed);
	uint32_t take;
	do {
		uint64_t room = b->limit > cur ? b->limit - cur : 0;
		take = room < want ? (uint32_t)room : want;
		if (!take)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(
		&b->taken, &cur, cur + take, memory_order_relaxed,
		memory_order_relaxed));
	e->grant_taken += take;
	return take;
}

static void budget_give(struct rpcrdma_engine *e, uint32_t n)
{
	if (n && e->cfg.budget)
		atomic_fetch_sub_explicit(&e->cfg.budget->taken, n,
					  memory_order_relaxed);
	e->grant_taken -= n;
}

void rpcrdma_recv_grant_release(struct rpcrdma_engine *e)
{
	budget_give(e, e->grant_taken);
	budget_wants(e, false);
}

void rpcrdma_recv_grant_reset(struct rpcrdma_engine *e)
{
	rpcrdma_recv_grant_release(e);
	grant_set(e, grant_first(e));
}

void rpcrdma_recv_grant_used(struct rpcrdma_engine *e)
{
	e->grant_calls++;
	if (e->rs_open < e->grant || e->grant >= e->cfg.credits)
		return;
	uint32_t want = e->grant > e->cfg.credits / 2 ? e->cfg.credits
						     : 2 * e->grant;
	uint32_t got = budget_take(e, want - e->grant);
	if (!got) {
		e->ctr.grant_refused++;
		return;
	}
	grant_set(e, e->grant + got);
	e->ctr.grant_raised++;
}

void rpcrdma_recv_grant_tick(struct rpcrdma_engine *e, uint64_t now)
{
	/* Over its share since other connections came to want some (a
	 * greedy client that came first): down to it, open calls or not,
	 * and the rest back to the budget, for them. */
	if (e->grant_taken) {
		uint64_t share = budget_share(e->cfg.budget);
		if (e->grant_taken > share) {
			uint32_t over = e->grant_taken - (uint32_t)share;
			grant_set(e, e->grant - over);
			budget_give(e, over);
			e->ctr.grant_trimmed++;
		}
	}
	/* Idle: a grant above the first comes down, and a connection that
	 * was only refused stops counting among those that want some. */
	uint32_t first = grant_first(e);
	if ((e->grant <= first && !e->grant_wants) || e->rs_open ||
	    e->grant_calls != e->grant_calls_seen) {
		e->grant_calls_seen = e->grant_calls;
		e->grant_quiet_since = now;
		return;
	}
	if (now - e->grant_quiet_since < GRANT_IDLE_MS)
		return;
	if (e->grant > first) {
		grant_set(e, first);
		e->ctr.grant_lowered++;
	}
	rpcrdma_recv_grant_release(e);
}

uint64_t rpcrdma_recv_grant_deadline(const struct rpcrdma_engine *e)
{
	if ((e->grant <= grant_first(e) && !e->grant_wants) || e->rs_open)
		return UINT64_MAX;
	/* A call since the last tick: that tick starts the quiet time (a
	 * deadline already past ticks the connection once more). */
	return e->grant_quiet_since + GRANT_IDLE_MS;
}
