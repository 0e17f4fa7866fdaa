/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The connection engine (see engine.h): its configuration and memory,
 * the connection inputs, the event queue, the pending queues and the
 * progress loop over them, and the dispatch of completions.  Each other
 * concept has its own file: the Requester role (requester.c), the
 * Responder role (responder.c), received messages (receive.c), receive
 * buffers (recv_buffers.c), invalidation (invalidation.c), the
 * work-request queue and its wr_id (work_queue.c), the send queue
 * (send_queue.c), credits, negotiation and the RDMA time-out; the v1/v2
 * header bridge is wire/rpcrdma_hdr.c.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/pages.h"
#include "engine/engine_internal.h"
#include "wire/rpc_msg.h"
#include "wire/xdr.h"

#define DEFAULT_CALLS 64u
#define DEFAULT_CREDITS 64u   /* Linux svcrdma's default grant */
#define DEFAULT_INLINE 4096u
#define DEFAULT_MAX_CALL (1u << 20)

void rpcrdma_engine_config_default(struct rpcrdma_engine_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->max_calls = DEFAULT_CALLS;
	cfg->credits = DEFAULT_CREDITS;
	cfg->max_inline_send = DEFAULT_INLINE;
	cfg->max_inline_recv = DEFAULT_INLINE;
	cfg->remote_inv = true;
	cfg->max_call_size = DEFAULT_MAX_CALL;
	cfg->max_chunk_bytes = DEFAULT_MAX_CALL;
	cfg->sq_depth = 0; /* computed at create */
	cfg->max_retries = 0;
	cfg->xid_seed = 1;
	cfg->limits = rpcrdma_limits_default();
	cfg->versions = RPCRDMA_ENGINE_PREFER_V2;
	cfg->client = false;
	cfg->neg_timeout_ms = 2000;
	cfg->v2_brs = RPCRDMA_V2_RVREQSUP_GENL;
	cfg->max_read_chunks = 16;
	cfg->read_piece = 128u << 10;
	cfg->read_window = 512u << 10;
	cfg->rdma_timeout_ms = 30000;
	cfg->local_inv = true;
}

/* ---------------------------------------------------------------------
 * The event queue, close requests and the pending queues
 */

static bool ev_grow(struct rpcrdma_engine *e)
{
	uint32_t cap = e->evq_cap * 2;
	struct evq_ent *q = malloc(cap * sizeof *q);
	if (!q)
		return false;
	for (uint32_t i = 0; i < e->evq_count; i++)
		q[i] = e->evq[(e->evq_head + i) % e->evq_cap];
	if (e->evq != e->evq0)
		free(e->evq);
	e->evq = q;
	e->evq_cap = cap;
	e->cap.evq = cap; /* what a reset clears */
	e->evq_head = 0;
	return true;
}

void rpcrdma_ev_push(struct rpcrdma_engine *e, uint8_t kind, uint32_t idx,
		     int reason)
{
	if (e->evq_count == e->evq_cap && !ev_grow(e)) {
		/* One event per slot plus one CLOSE fit from the start, so
		 * this is an engine bug meeting a failed allocation: never
		 * lose it silently, the driver hears CLOSE (OVERFLOW) first
		 * (poll_event). */
		e->ev_lost = true;
		return;
	}
	struct evq_ent *v = &e->evq[(e->evq_head + e->evq_count++) % e->evq_cap];
	v->kind = kind;
	v->idx = idx;
	v->reason = reason;
}

void rpcrdma_ask_close(struct rpcrdma_engine *e, int reason)
{
	if (e->close_asked || !e->connected)
		return;
	e->close_asked = true;
	rpcrdma_ev_push(e, EVK_CLOSE, 0, reason);
}

void rpcrdma_rq_enqueue(struct rpcrdma_engine *e, struct requester_slot *q)
{
	q->next = RPCRDMA_NIL;
	if (e->rq_pending.tail == RPCRDMA_NIL)
		e->rq_pending.head = q->idx;
	else
		e->rq[e->rq_pending.tail].next = q->idx;
	e->rq_pending.tail = q->idx;
	e->rq_pending.n++;
}

void rpcrdma_rs_enqueue(struct rpcrdma_engine *e, struct responder_slot *s)
{
	/* Once: a Reading slot may stall again on its own completion while
	 * it still waits in the list (the list would loop). */
	if (s->queued)
		return;
	s->queued = true;
	s->next = RPCRDMA_NIL;
	if (e->rs_pending.tail == RPCRDMA_NIL)
		e->rs_pending.head = s->idx;
	else
		e->rs[e->rs_pending.tail].next = s->idx;
	e->rs_pending.tail = s->idx;
	e->rs_pending.n++;
}

/* ---------------------------------------------------------------------
 * Create / destroy
 */
/* The arena holds, after the receive buffers, a Send buffer per
 * Requester slot, then one per Responder slot (derive). */
void rpcrdma_rq_first_use(struct rpcrdma_engine *e, uint32_t i)
{
	struct requester_slot *q = &e->rq[i];
	q->idx = i;
	q->sbuf = e->arena + (size_t)e->nrbuf * e->rsize +
		  (size_t)i * e->ssize;
	q->held_rbuf = RPCRDMA_NIL;
	if (i >= e->rq_used)
		e->rq_used = i + 1; /* what a reset must clear */
}

void rpcrdma_rs_first_use(struct rpcrdma_engine *e, uint32_t i)
{
	struct responder_slot *s = &e->rs[i];
	uint8_t *p = e->arena + (size_t)e->nrbuf * e->rsize +
		     (size_t)e->nrq * e->ssize;
	s->idx = i;
	s->sbuf = p + (size_t)i * e->ssize;
	s->rbuf = RPCRDMA_NIL;
	if (i >= e->rs_used)
		e->rs_used = i + 1;
}

/* The state of a new engine, over allocations in place and every other
 * field zero: create's last step, and all of reset. */
static void engine_init(struct rpcrdma_engine *e)
{
	e->sq_avail = e->cfg.sq_depth;
	e->next_xid = e->cfg.xid_seed;
	e->peer_v1_only = e->cfg.peer_v1_only;
	rpcrdma_credits_reset(e);
	e->ord = 1;
	rpcrdma_recv_init(e);
	/* The slots themselves are left untouched: a slot is set up when it
	 * is first taken (rpcrdma_rq_first_use, rpcrdma_rs_first_use).  A
	 * Responder slot is 9 KiB, and writing every slot here made an idle
	 * server connection hold 64 of them, most of its 698 KiB. */
	/* Lowest slots first, as a scan would have given them. */
	for (uint32_t i = 0; i < e->nrq; i++)
		e->rq_free[e->nrq_free++] = e->nrq - 1 - i;
	for (uint32_t i = 0; i < e->nrs; i++)
		e->rs_free[e->nrs_free++] = e->nrs - 1 - i;
	e->rq_pending.head = e->rq_pending.tail = RPCRDMA_NIL;
	e->rs_pending.head = e->rs_pending.tail = RPCRDMA_NIL;
	e->rq_pending.n = e->rs_pending.n = 0;
}

/* The sizes cfg gives, after create's checks on it. */
static int derive(const struct rpcrdma_engine_config *cfg,
		  struct rpcrdma_engine_sizes *z)
{
	if (!cfg->max_calls || !cfg->credits ||
	    cfg->max_inline_send < RPCRDMA_V1_DEFAULT_INLINE ||
	    cfg->max_inline_recv < RPCRDMA_V1_DEFAULT_INLINE ||
	    cfg->max_calls > (1u << 20) || cfg->credits > (1u << 20) ||
	    cfg->versions < RPCRDMA_ENGINE_V1_ONLY ||
	    cfg->versions > RPCRDMA_ENGINE_PREFER_V2 ||
	    cfg->v2_brs > RPCRDMA_V2_RVREQSUP_GENL)
		return RPCRDMA_ERR_INVAL;
	/* Buffers exactly as large as what we advertise (RFC 8797 §4.2). */
	z->rsize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(cfg->max_inline_recv));
	z->ssize = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(cfg->max_inline_send));
	z->max_header = cfg->limits.max_header_size;
	if (z->max_header == 0 || z->max_header > z->rsize)
		z->max_header = z->rsize;
	z->nrq = cfg->max_calls;
	/* A Responder slot is busy until its reply's Send completes, which a
	 * fast Requester may overtake with its next call: twice the grant. */
	z->nrs = 2 * cfg->credits;
	z->recv_target = cfg->credits + cfg->max_calls;
	/* Beside the receives posted, a receive buffer may be held by each
	 * Requester slot (an inline reply while its invalidations complete)
	 * and each Responder slot (an inline call, read in place until its
	 * reply is sent): recv_buffers.c. */
	z->nrbuf = z->recv_target + z->nrq + z->nrs;
	z->sq_depth = cfg->sq_depth ? cfg->sq_depth
				    : 4 * (cfg->max_calls + cfg->credits);
	for (z->xid_map = 1; z->xid_map < 4 * z->nrq; z->xid_map <<= 1)
		;
	z->wrq = z->sq_depth + z->recv_target + z->nrq;
	z->evq = z->nrq + z->nrs + 1;
	z->sqe = z->sq_depth + 1;
	z->arena = (size_t)z->nrbuf * z->rsize +
		   (size_t)(z->nrq + z->nrs) * z->ssize;
	return 0;
}

/* The arena of rpcrdma_engine_create: receive buffers (credits, the
 * replies of our calls, and one per slot that may hold one) and a Send
 * buffer per Requester and Responder slot, each as large as what we
 * advertise (RFC 8797 §4.2).  0 for a
 * configuration create refuses. */
size_t rpcrdma_engine_buffer_bytes(const struct rpcrdma_engine_config *cfg)
{
	struct rpcrdma_engine_sizes z;
	return derive(cfg, &z) == 0 ? z.arena : 0;
}

/* The configuration and the sizes it gives, into e. */
static void apply(struct rpcrdma_engine *e,
		  const struct rpcrdma_engine_config *cfg,
		  const struct rpcrdma_engine_sizes *z)
{
	e->cfg = *cfg;
	e->cfg.limits.max_header_size = z->max_header;
	e->cfg.sq_depth = z->sq_depth;
	e->rsize = z->rsize;
	e->ssize = z->ssize;
	e->nrq = z->nrq;
	e->nrs = z->nrs;
	rpcrdma_recv_grant_reset(e); /* recv_target with the grant */
	e->nrbuf = z->nrbuf;
	e->xid_mask = z->xid_map - 1;
	e->wrq_cap = z->wrq;
	e->evq_cap = z->evq;
	e->sqe_cap = z->sqe;
	e->arena_len = z->arena;
}

/* The engine of sizes z, its arrays (and an event queue of evq
 * entries), in one block of pages: the arena first (page-aligned, as
 * registration likes it), then the engine itself and the small arrays
 * together (they share the pages every connection touches; the send
 * queue's entries last among them, as only its first few are used
 * while few requests are out), then the
 * slots and the work-request queue, each from a page of its own (a slot
 * or a queue entry is set up when first used, and the first ones are
 * the ones used: they then take one page, not two across a boundary),
 * in the order rpcrdma_engine_create and rpcrdma_engine_destroy name
 * them. */
#define ENGINE_PARTS 12
#define ENGINE_ON_PAGE (1u << 9 | 1u << 10 | 1u << 11)
static void parts_len(const struct rpcrdma_engine_sizes *z, uint32_t evq,
		      size_t *len)
{
	const struct rpcrdma_engine *e = NULL; /* for sizeof only */
	len[0] = z->arena;
	len[1] = sizeof *e;
	len[2] = (size_t)evq * sizeof *e->evq;
	len[3] = (size_t)z->nrq * sizeof *e->rq_free;
	len[4] = (size_t)z->nrs * sizeof *e->rs_free;
	len[5] = (size_t)z->xid_map * sizeof *e->xid_map;
	len[6] = (size_t)z->nrbuf * sizeof *e->recv_free;
	len[7] = (size_t)z->nrbuf * sizeof *e->recv_posted;
	len[8] = (size_t)z->sqe * sizeof *e->sqe;
	len[9] = (size_t)z->nrq * sizeof *e->rq;
	len[10] = (size_t)z->nrs * sizeof *e->rs;
	len[11] = (size_t)z->wrq * sizeof *e->wrq;
}

int rpcrdma_engine_create(const struct rpcrdma_engine_config *cfg,
			  const struct rpcrdma_engine_mem_ops *mem,
			  struct rpcrdma_engine **out)
{
	struct rpcrdma_engine_sizes z;
	if (!cfg || !mem || !mem->reg || !mem->release || !out)
		return RPCRDMA_ERR_INVAL;
	int rc = derive(cfg, &z);
	if (rc)
		return rc;
	/* The engine, its slots and its buffers are most of what a
	 * connection holds: pages, so that they go back to the system when
	 * it closes (common/pages.h). */
	size_t len[ENGINE_PARTS];
	void *p[ENGINE_PARTS];
	parts_len(&z, z.evq, len);
	if (rpcrdma_pages_parts_alloc(len, p, ENGINE_PARTS, ENGINE_ON_PAGE))
		return RPCRDMA_ERR_NOMEM;
	struct rpcrdma_engine *e = p[1];
	e->mem = *mem;
	apply(e, cfg, &z);
	e->cap = z;
	e->arena = p[0];
	e->evq = e->evq0 = p[2];
	e->rq_free = p[3];
	e->rs_free = p[4];
	e->xid_map = p[5];
	e->recv_free = p[6];
	e->recv_posted = p[7];
	e->sqe = p[8];
	e->rq = p[9];
	e->rs = p[10];
	e->wrq = p[11];
	e->evq0_cap = z.evq;
	rpcrdma_sq_config(e);
	rc = mem->reg(mem->ctx, e->arena, z.arena, RPCRDMA_ACCESS_LOCAL_WRITE,
		      &e->arena_mr);
	if (rc) {
		e->arena_mr.addr = NULL;
		rpcrdma_engine_destroy(e);
		/* AGAIN means "registrations are short, retry later" to the
		 * roles, which queue; here nothing will retry. */
		return rc == RPCRDMA_ERR_AGAIN ? RPCRDMA_ERR_NOMEM : rc;
	}
	engine_init(e);
	*out = e;
	return 0;
}

/* Slots' registrations and memory, as destroy releases them. */
static void release_slots(struct rpcrdma_engine *e)
{
	if (e->rq)
		for (uint32_t i = 0; i < e->rq_used; i++) {
			rpcrdma_rq_release_mrs(e, &e->rq[i]);
			free(e->rq[i].bounce);
			e->rq[i].bounce = NULL;
		}
	if (e->rs)
		for (uint32_t i = 0; i < e->rs_used; i++)
			if (e->rs[i].state != RS_FREE)
				rpcrdma_rs_free(e, &e->rs[i]);
}

void rpcrdma_engine_destroy(struct rpcrdma_engine *e)
{
	if (!e)
		return;
	rpcrdma_recv_grant_release(e); /* the budget outlives engines */
	release_slots(e);
	if (e->arena_mr.addr)
		e->mem.release(e->mem.ctx, &e->arena_mr);
	if (e->evq != e->evq0)
		free(e->evq);
	/* The engine is one of the parts: what freeing them needs is read
	 * from it first. */
	size_t len[ENGINE_PARTS];
	void *const p[ENGINE_PARTS] = {
		e->arena, e, e->evq0, e->rq_free, e->rs_free, e->xid_map,
		e->recv_free, e->recv_posted, e->sqe, e->rq, e->rs, e->wrq,
	};
	parts_len(&e->cap, e->evq0_cap, len);
	rpcrdma_pages_parts_free(p, len, ENGINE_PARTS, ENGINE_ON_PAGE);
}

int rpcrdma_engine_reset(struct rpcrdma_engine *e,
			 const struct rpcrdma_engine_config *cfg)
{
	struct rpcrdma_engine_sizes z;
	if (!cfg)
		cfg = &e->cfg;
	int rc = derive(cfg, &z);
	if (rc)
		return rc;
	const struct rpcrdma_engine_sizes *c = &e->cap;
	if (z.nrq > c->nrq || z.nrs > c->nrs || z.nrbuf > c->nrbuf ||
	    z.xid_map > c->xid_map || z.wrq > c->wrq || z.evq > c->evq ||
	    z.sqe > c->sqe || z.arena > c->arena)
		return RPCRDMA_ERR_NOSPACE;
	rpcrdma_recv_grant_release(e); /* to the budget it was taken from */
	release_slots(e);
	/* Keep what create allocated and registered (and how large it is);
	 * every other field goes back to zero, as create left it,
	 * and so does the content of every array but the buffers' (and the
	 * scratch headers').  Slots never taken are still zero, as the
	 * pages came; a slot is set up when first taken. */
	struct rpcrdma_engine_mem_ops mem = e->mem;
	struct rpcrdma_engine_sizes cap = e->cap;
	struct rpcrdma_engine_mr arena_mr = e->arena_mr;
	struct requester_slot *rq = e->rq;
	struct responder_slot *rs = e->rs;
	uint32_t rq_used = e->rq_used, rs_used = e->rs_used;
	uint32_t *rq_free = e->rq_free, *rs_free = e->rs_free;
	uint32_t *xid_map = e->xid_map, *recv_free = e->recv_free;
	uint32_t *recv_posted = e->recv_posted;
	struct rpcrdma_engine_wr *wrq = e->wrq;
	struct evq_ent *evq = e->evq, *evq0 = e->evq0;
	uint32_t evq0_cap = e->evq0_cap;
	struct sq_ent *sqe = e->sqe;
	uint8_t *arena = e->arena;
	struct rpcrdma_engine_config keep = *cfg; /* cfg may be &e->cfg */
	memset(e, 0, sizeof *e);
	e->mem = mem;
	e->cap = cap;
	e->arena_mr = arena_mr;
	e->rq = rq;
	e->rs = rs;
	e->rq_free = rq_free;
	e->rs_free = rs_free;
	e->xid_map = xid_map;
	e->recv_free = recv_free;
	e->recv_posted = recv_posted;
	e->wrq = wrq;
	e->evq = evq;
	e->evq0 = evq0;
	e->evq0_cap = evq0_cap;
	e->sqe = sqe;
	e->arena = arena;
	apply(e, &keep, &z);
	memset(rq, 0, rq_used * sizeof *rq);
	memset(rs, 0, rs_used * sizeof *rs);
	memset(rq_free, 0, cap.nrq * sizeof *rq_free);
	memset(rs_free, 0, cap.nrs * sizeof *rs_free);
	memset(xid_map, 0, cap.xid_map * sizeof *xid_map);
	memset(recv_free, 0, cap.nrbuf * sizeof *recv_free);
	memset(recv_posted, 0, cap.nrbuf * sizeof *recv_posted);
	memset(wrq, 0, cap.wrq * sizeof *wrq);
	memset(evq, 0, cap.evq * sizeof *evq);
	memset(sqe, 0, cap.sqe * sizeof *sqe);
	/* The buffers keep their bytes (zeroing them was a sixth of a fuzz
	 * input's time): nothing reads a buffer byte that was not written
	 * in the same life, and the fuzz targets' replay build checks that
	 * a reset engine does exactly what a new one does. */
	rpcrdma_sq_config(e);
	engine_init(e);
	return 0;
}

int rpcrdma_engine_private_data(const struct rpcrdma_engine *e, void *buf,
				size_t cap)
{
	return rpcrdma_cm_pdata_encode(buf, cap, e->ssize, e->rsize,
				       e->cfg.remote_inv);
}

/* ---------------------------------------------------------------------
 * Pending queues ("starvation is a state with a queue")
 */
void rpcrdma_progress(struct rpcrdma_engine *e)
{
	/* Until no progress: a pass that leaves fewer slots waiting may
	 * have freed what the others wait for (send queue entries, an ORD
	 * slot, a credit).  Responder first: replies free the peer's
	 * credits.  Each pass takes the whole list; a slot still starved
	 * puts itself back.  The count falls on every pass that loops, so
	 * this ends. */
	for (;;) {
		uint32_t before = e->rs_pending.n + e->rq_pending.n;
		if (!before)
			break;
		uint32_t i = pending_take(&e->rs_pending);
		while (i != RPCRDMA_NIL) {
			struct responder_slot *s = &e->rs[i];
			i = s->next;
			s->next = RPCRDMA_NIL;
			s->queued = false;
			rpcrdma_rs_run(e, s);
		}
		i = pending_take(&e->rq_pending);
		while (i != RPCRDMA_NIL) {
			struct requester_slot *q = &e->rq[i];
			i = q->next;
			q->next = RPCRDMA_NIL;
			rpcrdma_rq_run(e, q);
		}
		if (e->rs_pending.n + e->rq_pending.n >= before)
			break;
	}
	rpcrdma_recv_refill(e);
}

/* ---------------------------------------------------------------------
 * Connection inputs
 */

int rpcrdma_engine_established(struct rpcrdma_engine *e, const void *pdata,
			       size_t len, uint32_t ord, uint64_t now)
{
	if (e->connected)
		return RPCRDMA_ERR_BUSY;
	/* RFC 8797 §5.2: "the buffer containing the received Private Data
	 * is searched for the Format Identifier word", at any offset (other
	 * layers may put their own private data first); only when no
	 * conforming message is found do the §5.1 defaults apply.  Both
	 * roles come through here. */
	rpcrdma_cm_pdata_find(pdata, pdata ? len : 0, &e->peer_pdata, NULL);
	e->connected = true;
	e->close_asked = false;
	e->ord = ord ? ord : 1;
	e->reads_inflight = 0;
	e->read_bytes_inflight = 0;
	e->sq_avail = e->cfg.sq_depth;
	rpcrdma_sq_reset(e);
	rpcrdma_credits_reset(e); /* RFC 8166 §3.3.3 */
	rpcrdma_recv_grant_reset(e);
	e->await_first = !e->cfg.client; /* recv_buffers.c */
	e->ctr.connections++;
	rpcrdma_recv_refill(e);
	rpcrdma_neg_start(e, now);
	/* A server learns the version from the client's first message. */
	rpcrdma_progress(e);
	return 0;
}

void rpcrdma_engine_set_read_window(struct rpcrdma_engine *e, uint32_t bytes)
{
	e->cfg.read_window = bytes;
}

void rpcrdma_engine_tick(struct rpcrdma_engine *e, uint64_t now)
{
	if (!e->connected)
		return;
	rpcrdma_recv_grant_tick(e, now);
	if (rpcrdma_neg_tick(e, now)) {
		rpcrdma_progress(e);
		return;
	}
	if (rpcrdma_rs_rdma_timed_out(e, now))
		return;
	/* A registration refused for now (AGAIN: memory or MRs short) is
	 * tried again on every tick, not only when another registration of
	 * this connection goes: there may be none, and the shortage may be
	 * another connection's or the allocator's.  Other waiters (credit,
	 * send queue) just queue themselves again. */
	if (e->rq_pending.head != RPCRDMA_NIL ||
	    e->rs_pending.head != RPCRDMA_NIL)
		rpcrdma_progress(e);
}

/* Is work queued for a registration refused for now (AGAIN)? */
static bool waits_for_mr(const struct rpcrdma_engine *e)
{
	for (uint32_t i = e->rq_pending.head; i != RPCRDMA_NIL; i = e->rq[i].next)
		if (e->rq[i].wait == WAIT_MR)
			return true;
	for (uint32_t i = e->rs_pending.head; i != RPCRDMA_NIL; i = e->rs[i].next)
		if (e->rs[i].mr_stalled)
			return true;
	return false;
}

uint64_t rpcrdma_engine_next_deadline(const struct rpcrdma_engine *e,
				      uint64_t now)
{
	if (!e->connected)
		return UINT64_MAX; /* ticks do nothing until it is */
	/* A close asked is carried out by the connection's owner on its next
	 * tick, and work queued for a registration is retried on every tick
	 * (a shortage has no clock of its own): tick at once.  Work queued
	 * for a credit, the send queue or the opener's answer moves on the
	 * next input, which makes the loop tick the connection anyway. */
	if (e->close_asked || waits_for_mr(e))
		return now;
	uint64_t next = rpcrdma_rs_rdma_next_deadline(e, now);
	if (e->negotiating && e->neg_deadline < next)
		next = e->neg_deadline; /* §7.2: the opener's time-out */
	uint64_t g = rpcrdma_recv_grant_deadline(e); /* an idle grant */
	return g < next ? g : next;
}

void rpcrdma_engine_conn_lost(struct rpcrdma_engine *e, uint64_t now)
{
	(void)now;
	e->connected = false;
	e->close_asked = false;
	e->epoch++;
	rpcrdma_wr_forget(e); /* never posted */
	/* A CLOSE not yet polled named this connection: drop it, or the
	 * driver would take it for the next connection (and a CLOSE per
	 * lost connection could overflow the event ring, which holds one
	 * event per slot plus one CLOSE). */
	uint32_t kept = 0;
	for (uint32_t i = 0; i < e->evq_count; i++) {
		struct evq_ent v = e->evq[(e->evq_head + i) % e->evq_cap];
		if (v.kind != EVK_CLOSE)
			e->evq[(e->evq_head + kept++) % e->evq_cap] = v;
	}
	e->evq_count = kept;
	rpcrdma_recv_conn_lost(e);
	rpcrdma_credits_reset(e);
	e->reads_inflight = 0;
	e->read_bytes_inflight = 0;
	e->sq_avail = e->cfg.sq_depth;
	rpcrdma_sq_reset(e);
	rpcrdma_neg_conn_lost(e);
	/* Queued work waits for the next connection; the rest unwinds. */
	e->rs_pending.head = e->rs_pending.tail = RPCRDMA_NIL;
	e->rs_pending.n = 0;
	for (uint32_t i = 0; i < e->rs_used; i++)
		rpcrdma_rs_conn_lost(e, &e->rs[i]);
	uint32_t keep = pending_take(&e->rq_pending);
	while (keep != RPCRDMA_NIL) {
		struct requester_slot *q = &e->rq[keep];
		keep = q->next;
		q->wait = WAIT_CONN;
		rpcrdma_rq_enqueue(e, q);
	}
	for (uint32_t i = 0; i < e->rq_used; i++)
		rpcrdma_rq_conn_lost(e, &e->rq[i]);
}

/* ---------------------------------------------------------------------
 * Received messages (classified and dispatched in receive.c)
 */

static void received(struct rpcrdma_engine *e, uint32_t idx, size_t len,
		     bool with_inv, uint32_t inv_rkey)
{
	e->await_first = false; /* the rest are posted at this input's end */
	if (!rpcrdma_rx_message(e, idx, len, with_inv, inv_rkey))
		rpcrdma_recv_put(e, idx);
	rpcrdma_progress(e);
}

int rpcrdma_engine_recv(struct rpcrdma_engine *e, const void *buf,
			size_t len, bool with_inv, uint32_t inv_rkey,
			uint64_t now)
{
	(void)now;
	if (!e->connected || !e->nrecv_posted) {
		rpcrdma_ask_close(e, RPCRDMA_ERR_NO_RECV);
		return RPCRDMA_ERR_NO_RECV;
	}
	uint32_t idx = e->recv_posted[e->recv_posted_head];
	if (len > e->rsize) {
		rpcrdma_ask_close(e, RPCRDMA_ERR_NOSPACE);
		return RPCRDMA_ERR_NOSPACE;
	}
	rpcrdma_recv_unpost(e, idx);
	memcpy(rpcrdma_rbuf_ptr(e, idx), buf, len);
	received(e, idx, len, with_inv, inv_rkey);
	return 0;
}

int rpcrdma_engine_completion(struct rpcrdma_engine *e,
			      const struct rpcrdma_wc *wc)
{
	const struct wr_tag t = rpcrdma_wr_tag(wc->wr_id);
	const enum wr_kind kind = t.kind;
	const enum wr_op op = t.op;
	const uint32_t idx = t.idx;

	if (t.epoch != e->epoch || !e->connected)
		return 0; /* flushed from a connection already unwound */
	switch (kind) {
	case WRK_RECV:
		if (idx >= e->nrbuf || !rpcrdma_recv_unpost(e, idx))
			return RPCRDMA_ERR_NOENT;
		/* A byte_len past the buffer cannot come from a working
		 * provider; never parse beyond the receive buffer on it. */
		if (wc->status != RPCRDMA_WC_SUCCESS || wc->byte_len > e->rsize) {
			rpcrdma_recv_put(e, idx);
			rpcrdma_ask_close(e,
					  wc->status == RPCRDMA_WC_WR_FLUSH_ERR
						     ? RPCRDMA_ERR_FLUSHED
						     : RPCRDMA_ERR_PROTOCOL);
			return 0;
		}
		received(e, idx, wc->byte_len,
			 (wc->wc_flags & RPCRDMA_WC_WITH_INV) != 0,
			 wc->invalidated_rkey);
		return 0;
	case WRK_RQ:
	case WRK_RS:
		break;
	default:
		return RPCRDMA_ERR_NOENT;
	}
	if ((kind == WRK_RQ && idx >= e->nrq) || (kind == WRK_RS && idx >= e->nrs))
		return RPCRDMA_ERR_NOENT;
	if (wc->status != RPCRDMA_WC_SUCCESS) {
		/* RFC 8166 §4.5.3-§4.5.5: RDMA errors are fatal to the
		 * connection; conn_lost() unwinds every RPC. */
		rpcrdma_ask_close(e, wc->status == RPCRDMA_WC_WR_FLUSH_ERR
					     ? RPCRDMA_ERR_FLUSHED
					     : wc->status == RPCRDMA_WC_REM_ACCESS_ERR
					     ? RPCRDMA_ERR_PROTECTION
					     : RPCRDMA_ERR_PROTOCOL);
		return 0;
	}
	/* Unsignalled requests before it are done too (send_queue.c). */
	if (!rpcrdma_sq_complete(e, wc->wr_id))
		return 0;
	e->sq_avail++;
	if (kind == WRK_RQ)
		rpcrdma_rq_wc(e, &e->rq[idx], op, wc);
	else
		rpcrdma_rs_wc(e, &e->rs[idx], op, wc);
	rpcrdma_progress(e);
	return 0;
}

/* ---------------------------------------------------------------------
 * Outputs (the work requests: work_queue.c)
 */
int rpcrdma_engine_poll_event(struct rpcrdma_engine *e,
			      struct rpcrdma_engine_event *ev)
{
	if (e->ev_lost) {
		/* An event could not be queued (ev_push): the connection's
		 * state can no longer be trusted to the driver. */
		e->ev_lost = false;
		memset(ev, 0, sizeof *ev);
		ev->type = RPCRDMA_EV_CLOSE;
		ev->reason = RPCRDMA_ERR_OVERFLOW;
		return 1;
	}
	if (!e->evq_count)
		return 0;
	struct evq_ent v = e->evq[e->evq_head];
	e->evq_head = (e->evq_head + 1) % e->evq_cap;
	e->evq_count--;
	/* Every scalar field; the arrays only up to their counts. */
	ev->xid = 0;
	ev->user = NULL;
	ev->status = 0;
	ev->reply_len = 0;
	ev->nresults = 0;
	ev->peer_vers_low = ev->peer_vers_high = 0;
	ev->peer_err = 0;
	ev->call_id = 0;
	ev->call = NULL;
	ev->call_len = 0;
	ev->write_chunks = 0;
	ev->ddp_items = 0;
	ev->reply_chunk_len = 0;
	ev->msgp = (struct rpcrdma_engine_msgp){0, 0, 0};
	ev->reason = 0;
	ev->reconnect = false;
	switch (v.kind) {
	case EVK_CLOSE:
		ev->type = RPCRDMA_EV_CLOSE;
		ev->reason = v.reason;
		ev->reconnect = e->fallback_reconnect;
		return 1;
	case EVK_RQ_RELEASED: {
		/* Queued before the call's CALL_DONE, so the slot is still
		 * the call's. */
		struct requester_slot *q = &e->rq[v.idx];
		ev->type = RPCRDMA_EV_CALL_RELEASED;
		ev->xid = q->xid;
		ev->user = q->req.user;
		return 1;
	}
	case EVK_RQ: {
		struct requester_slot *q = &e->rq[v.idx];
		ev->type = RPCRDMA_EV_CALL_DONE;
		ev->xid = q->xid;
		ev->user = q->req.user;
		ev->status = q->status;
		ev->reply_len = q->reply_len;
		ev->nresults = q->nresults;
		memcpy(ev->result_len, q->result_len, sizeof ev->result_len);
		ev->peer_vers_low = q->vers_low;
		ev->peer_vers_high = q->vers_high;
		ev->peer_err = q->peer_err;
		ev->msgp = q->msgp;
		rpcrdma_rq_put(e, q);
		return 1;
	}
	default: {
		struct responder_slot *s = &e->rs[v.idx];
		ev->xid = s->xid;
		ev->call_id = s->idx;
		if (s->state == RS_DONE) {
			ev->type = RPCRDMA_EV_REPLY_SENT;
			ev->user = s->user;
			ev->status = s->reply_status;
			s->event_pending = false;
			rpcrdma_rs_done_maybe_free(e, s);
			return 1;
		}
		ev->type = RPCRDMA_EV_INCOMING_CALL;
		ev->call = s->callbuf;
		ev->call_len = s->call_len;
		ev->msgp = s->msgp;
		ev->ddp_items = 0;
		for (uint32_t i = 0; i < s->cl.nreads;) {
			uint32_t pos = s->cl.reads[i].position;
			uint64_t len = 0;
			for (; i < s->cl.nreads && s->cl.reads[i].position == pos;
			     i++)
				len += s->cl.reads[i].target.length;
			if (pos && ev->ddp_items < RPCRDMA_MAX_WRITE_CHUNKS) {
				ev->ddp_pos[ev->ddp_items] = pos;
				ev->ddp_len[ev->ddp_items++] = (uint32_t)len;
			}
		}
		ev->write_chunks = s->cl.nwrites;
		for (uint32_t i = 0; i < s->cl.nwrites; i++)
			ev->write_chunk_len[i] =
				(size_t)rpcrdma_write_chunk_len(&s->cl.writes[i]);
		if (s->cl.has_reply)
			ev->reply_chunk_len =
				(size_t)rpcrdma_write_chunk_len(&s->cl.reply);
		return 1;
	}
	}
}

void rpcrdma_engine_get_counters(const struct rpcrdma_engine *e,
				 struct rpcrdma_engine_counters *c)
{
	*c = e->ctr;
}

void rpcrdma_engine_get_info(const struct rpcrdma_engine *e,
			     struct rpcrdma_engine_info *info)
{
	memset(info, 0, sizeof *info);
	info->connected = e->connected;
	info->send_threshold = e->thr.send;
	info->recv_threshold = e->thr.recv;
	info->send_with_inv = e->thr.send_with_inv;
	info->credits_granted = e->granted;
	info->calls_in_flight = e->in_flight;
	info->recvs_posted = e->nrecv_posted;
	info->ord = e->ord;
	info->version = e->vers;
	info->negotiating = e->negotiating;
	info->peer_v1_only = e->peer_v1_only;
	info->peer_props = e->peer_props;
	info->peer_rbsiz = e->peer_rbsiz;
	info->peer_brs = e->peer_brs;
	info->call_slots = e->nrs;
	info->grant = rpcrdma_recv_grant(e);
}
