/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Call records: the Requester side of a connection (struct rpc_role).
 *
 * A record owns the call header, whatever arguments were copied, the
 * reply buffer and the Write chunk buffers, so a caller that timed out
 * may go away while the engine still holds the record (RFC 8166 gives a
 * Requester no way to take back a Send).  Its state (enum
 * rpc_call_state, call.h) says who holds it; it is freed when both the
 * engine and its caller are done with it; on a successful reply its
 * buffers pass to the caller's rpcrdma_reply.  Records of the usual size
 * come from a small per-thread cache, so a call allocates nothing in the
 * steady state.
 *
 * Exactly once: the caller is told by whichever of reply, time-out,
 * disconnection or destroy comes first, under the connection's lock.  A
 * synchronous caller is told directly (rpcrdma_rpc_wait_done_locked) and
 * decodes its own reply; an asynchronous one's callback is queued as
 * deferred work (work.c).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/slab.h"
#include "common/thread_key.h"
#include "common/usdt.h"
#include "rpc/call.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

/* The Requester side's state on one connection. */
struct rpc_calls {
	struct rpc_call *all;          /* records the connection holds:
					  queued, in the engine, given up */
	struct rpc_call *wait_head, *wait_tail; /* CALL_QUEUED, FIFO */
	unsigned in_engine;
};

static struct rpc_calls *calls_of(struct rpc_xprt *x)
{
	return x->up[RPC_REQUESTER].state;
}

/* ---------------------------------------------------------------------
 * Record memory: a per-thread cache of records of the usual size (a
 * Short call and an inline reply), returned to whichever thread frees
 * them; larger ones are plain malloc.
 */
#define CALL_SMALL 8192u  /* whole record, header included */
#define CALL_CACHE 8

struct call_cache {
	struct rpc_call *c[CALL_CACHE];
	unsigned n;
};

static _Thread_local struct call_cache *my_cache;

/* At the thread's exit.  A call may still come after it on this thread
 * (another key's destructor closing a connection): it makes a new cache,
 * which the key frees in turn, instead of using this one freed. */
static void cache_free(void *p)
{
	struct call_cache *k = p;
	if (!k)
		return;
	if (my_cache == k)
		my_cache = NULL;
	for (unsigned i = 0; i < k->n; i++)
		free(k->c[i]);
	free(k);
}

static struct rpcrdma_thread_key cache_key = RPCRDMA_THREAD_KEY_INIT(cache_free);

/* The thread's cache, or NULL: then records are not cached (a thread
 * with no memory for one, or a process with no pthread key left). */
static struct call_cache *cache_self(void)
{
	if (my_cache)
		return my_cache;
	if (!rpcrdma_thread_key_usable(&cache_key))
		return NULL;
	struct call_cache *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (!rpcrdma_thread_key_set(&cache_key, k)) {
		free(k);
		return NULL;
	}
	my_cache = k;
	return k;
}

struct rpc_call *rpcrdma_rpc_call_alloc(size_t need)
{
	size_t small = CALL_SMALL - sizeof(struct rpc_call);
	if (need <= small) {
		struct call_cache *k = cache_self();
		if (k && k->n)
			return k->c[--k->n];
		need = small;
	}
	struct rpc_call *c = malloc(sizeof(*c) + need);
	if (c)
		c->cap = need;
	return c;
}

void rpcrdma_rpc_call_free(struct rpc_call *c)
{
	/* A borrowed reply region goes back with the record, and so do
	 * its pooled buffers: rpcrdma_reply_free's, where giving them back
	 * may deregister memory (a system call that is a cancellation
	 * point on some devices, rpc_internal.h). */
	if (c->region || c->big) {
		int cancel = rpcrdma_rpc_cancel_hold();
		rpcrdma_rpc_region_put(c->region);
		c->region = NULL;
		if (c->big)
			rpcrdma_rpc_buf_put(c->pool, c->big,
					    rpcrdma_rpc_now_ms());
		c->big = NULL;
		rpcrdma_rpc_cancel_restore(cancel);
	}
	if (c->cap == CALL_SMALL - sizeof(struct rpc_call)) {
		struct call_cache *k = cache_self();
		if (k && k->n < CALL_CACHE) {
			k->c[k->n++] = c;
			return;
		}
	}
	free(c);
}

/* ---------------------------------------------------------------------
 * The connection's records
 */
static void link_call(struct rpc_calls *q, struct rpc_call *c)
{
	c->prev = NULL;
	c->next = q->all;
	if (q->all)
		q->all->prev = c;
	q->all = c;
}

static void unlink_call(struct rpc_calls *q, struct rpc_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		q->all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void waitq_remove(struct rpc_calls *q, struct rpc_call *c)
{
	struct rpc_call **pp = &q->wait_head, *prev = NULL;
	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->wnext;
	}
	if (!*pp)
		return;
	*pp = c->wnext;
	if (q->wait_tail == c)
		q->wait_tail = prev;
	c->wnext = NULL;
}

/* ---------------------------------------------------------------------
 * Telling the caller
 */
static void decode_reply(struct rpc_call *c, struct rpcrdma_reply *rep);
static void run_done(struct rpc_work_item *it);
static void run_telling(struct rpc_work_item *it);

/* With the lock held: c's outcome is in and the engine is done with it
 * (status 0: decode the reply).  The record is now its caller's. */
static void tell_done(struct rpc_xprt *x, struct rpc_call *c, int status,
		      struct rpc_work *w)
{
	c->state = CALL_DONE;
	c->status = status;
	if (c->sync) {
		c->sync->owns_record = true;
		rpcrdma_rpc_wait_done_locked(x, c->sync, status, w);
	}
	else
		rpc_work_add(w, &c->work, run_done);
}

/* With the lock held: c fails with status while the engine still has it;
 * the engine frees it when it lets go (or the callback does, if that
 * comes first). */
static void tell_held(struct rpc_xprt *x, struct rpc_call *c, int status,
		      struct rpc_work *w)
{
	c->status = status;
	if (c->sync) {
		c->state = CALL_TOLD;
		rpcrdma_rpc_wait_done_locked(x, c->sync, status, w);
	} else {
		c->state = CALL_TELLING;
		rpc_work_add(w, &c->work, run_telling);
	}
}

static void run_done(struct rpc_work_item *it)
{
	struct rpc_call *c = (struct rpc_call *)((char *)it -
						 offsetof(struct rpc_call, work));
	struct rpcrdma_reply rep;
	memset(&rep, 0, sizeof(rep));
	rpcrdma_call_cb cb = c->cb;
	void *arg = c->cb_arg;
	const char *name = c->x->name;
	if (c->status) {
		rep.xid = c->xid;
		rep.status = c->status;
	} else {
		decode_reply(c, &rep);
	}
	/* Unless the reply owns the buffers now, nothing in rep points into
	 * the record. */
	if (!rep.priv)
		rpcrdma_rpc_call_free(c);
	RPCRDMA_PROBE3(call_done, rep.xid, rep.status, name);
	cb(arg, &rep);
}

static void run_telling(struct rpc_work_item *it)
{
	struct rpc_call *c = (struct rpc_call *)((char *)it -
						 offsetof(struct rpc_call, work));
	struct rpcrdma_reply rep;
	memset(&rep, 0, sizeof(rep));
	struct rpc_xprt *x = c->x;
	rpcrdma_call_cb cb = c->cb;
	void *arg = c->cb_arg;
	rep.xid = c->xid;
	rep.status = c->status;
	/* The engine may let go at any moment: settle who frees. */
	pthread_mutex_lock(&x->lock);
	bool free_now = c->state == CALL_OVER;
	if (!free_now)
		c->state = CALL_TOLD;
	pthread_mutex_unlock(&x->lock);
	if (free_now)
		rpcrdma_rpc_call_free(c);
	RPCRDMA_PROBE3(call_done, rep.xid, rep.status, x->name);
	cb(arg, &rep);
}

/* With the lock held: c's caller is told status now (a time-out, a
 * destroy, the connection gone), unless the peer may still reach memory
 * c borrowed: then once the engine says it cannot. */
static void fail_call(struct rpc_xprt *x, struct rpc_calls *q,
		      struct rpc_call *c, int status, struct rpc_work *w)
{
	switch (c->state) {
	case CALL_QUEUED:
		waitq_remove(q, c);
		unlink_call(q, c);
		tell_done(x, c, status, w);
		return;
	case CALL_SENT:
		break;
	default:
		return; /* told already, or being told */
	}
	if (c->borrowed && !x->dead) {
		/* The caller takes its memory back: first make sure the peer
		 * cannot reach it (engine.h, rpcrdma_engine_cancel_call).
		 * 0: nothing reachable (its CALL_DONE follows). */
		int rc = rpcrdma_engine_cancel_call(x->e, c->xid,
						    rpcrdma_rpc_now_ms());
		if (rc == RPCRDMA_ERR_AGAIN) {
			c->state = CALL_CANCELLING;
			c->status = status;
			if (c->sync)
				c->sync->deadline = 0; /* wait for it */
			return;
		}
	}
	tell_held(x, c, status, w);
}

/* ---------------------------------------------------------------------
 * The engine
 */
/* Hands the call to the engine; RPCRDMA_ERR_AGAIN when every slot is
 * busy. */
static int submit(struct rpc_xprt *x, struct rpc_calls *q, struct rpc_call *c)
{
	struct rpcrdma_call_req r = {
		.msg = c->iov, .nmsg = c->niov,
		.reply_buf = c->reply_buf, .reply_max = c->reply_max,
		.reply_inline = c->reply_inline,
		.results = c->nresults ? c->results : NULL,
		.nresults = c->nresults, .user = c,
	};
	int rc = rpcrdma_engine_submit_call(x->e, &r, &c->xid, 0);
	if (rc == 0) {
		c->state = CALL_SENT;
		q->in_engine++;
		/* The call's XID, program, version, procedure (from its
		 * header, RFC 5531 §9) and size; call_done ends it. */
		RPCRDMA_PROBE5(call_start, c->xid, rpcrdma_be32_get(c->mem + 12),
			       rpcrdma_be32_get(c->mem + 16),
			       rpcrdma_be32_get(c->mem + 20), c->msg_len);
	}
	return rc;
}

/* A peer's ERR_CHUNK (v2: RDMA2_ERR_BAD_XDR) or RDMA2_ERR_*_RESOURCE,
 * told as what it almost always means for a call of ours, whose chunks
 * are well formed: a message larger than a limit.  Version 2 says which
 * (REPLY_RESOURCE, WRITE_RESOURCE: the reply); version 1's ERR_CHUNK
 * does not, so the call's shape decides: a call that went through
 * chunks was too large for the peer's max_msg, an inline one had a
 * reply larger than the room it offered. */
static int size_status(struct rpc_xprt *x, const struct rpc_call *c,
		       const struct rpcrdma_engine_event *ev)
{
	if (ev->status == RPCRDMA_ERR_REPLY_TOO_BIG)
		rpcrdma_rpc_trace("%s: call xid 0x%08x: an inline reply larger "
				  "than the %zu bytes set aside (reply_max)",
				  x->name, ev->xid, c->reply_max);
	if (ev->status != RPCRDMA_ERR_PEER_ERR_CHUNK &&
	    ev->status != RPCRDMA_ERR_PEER_ERR_RESOURCE)
		return ev->status;
	if (ev->peer_err == RPCRDMA_V2_ERR_REPLY_RESOURCE ||
	    ev->peer_err == RPCRDMA_V2_ERR_WRITE_RESOURCE) {
		rpcrdma_rpc_trace("%s: call xid 0x%08x: the reply does not fit "
				  "the %zu bytes offered (reply_max)",
				  x->name, ev->xid, c->reply_max);
		return RPCRDMA_ERR_REPLY_TOO_BIG;
	}
	if (ev->peer_err != RPCRDMA_V2_ERR_BAD_XDR)
		return ev->status;
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(x->e, &in);
	if (c->msg_len > in.send_threshold) {
		rpcrdma_rpc_trace("%s: call xid 0x%08x of %zu bytes refused by "
				  "the peer (ERR_CHUNK): over its max_msg?",
				  x->name, ev->xid, c->msg_len);
		return RPCRDMA_ERR_PEER_CALL_TOO_BIG;
	}
	rpcrdma_rpc_trace("%s: call xid 0x%08x: the reply does not fit the %zu "
			  "bytes offered (reply_max)", x->name, ev->xid,
			  c->reply_max);
	return RPCRDMA_ERR_REPLY_TOO_BIG;
}

/* RPCRDMA_EV_CALL_DONE: the engine let go of the record. */
static void engine_done(struct rpc_xprt *x, struct rpc_calls *q,
			struct rpc_call *c,
			const struct rpcrdma_engine_event *ev,
			struct rpc_work *w)
{
	q->in_engine--;
	unlink_call(q, c);
	switch (c->state) {
	case CALL_SENT:
		c->reply_len = ev->reply_len;
		c->ev_nresults = ev->nresults;
		for (unsigned i = 0; i < c->nresults && i < ev->nresults; i++)
			c->result_len[i] = ev->result_len[i];
		c->msgp = ev->msgp;
		tell_done(x, c, size_status(x, c, ev), w);
		break;
	case CALL_CANCELLING:
		/* Given up and now over: nothing of it is reachable. */
		tell_done(x, c, c->status, w);
		break;
	case CALL_TELLING:
		c->state = CALL_OVER; /* its callback frees it */
		break;
	case CALL_TOLD:
		rpcrdma_rpc_call_free(c);
		break;
	default:
		break;
	}
}

static void requester_event(void *state, struct rpc_xprt *x,
			    const struct rpcrdma_engine_event *ev,
			    struct rpc_work *w)
{
	struct rpc_calls *q = state;
	struct rpc_call *c = ev->user;
	if (!c)
		return;
	if (ev->type == RPCRDMA_EV_CALL_DONE) {
		engine_done(x, q, c, ev, w);
	} else if (ev->type == RPCRDMA_EV_CALL_RELEASED &&
		   c->state == CALL_CANCELLING) {
		/* The peer no longer reaches what it borrowed; the engine
		 * keeps the record until the reply or the end of the
		 * connection (RFC 8166 §3.3.1): told now, freed then. */
		tell_held(x, c, c->status, w);
	}
}

/* Calls waiting for a slot go while slots are free. */
static void requester_pumped(void *state, struct rpc_xprt *x,
			     struct rpc_work *w)
{
	struct rpc_calls *q = state;
	while (q->wait_head) {
		struct rpc_call *c = q->wait_head;
		int rc = submit(x, q, c);
		if (rc == RPCRDMA_ERR_AGAIN)
			return;
		q->wait_head = c->wnext;
		if (!q->wait_head)
			q->wait_tail = NULL;
		c->wnext = NULL;
		if (rc < 0) {
			unlink_call(q, c);
			tell_done(x, c, rc, w);
		}
	}
}

/* Fails every call not yet told whose deadline passed (now != 0) or all
 * of them (now == 0), of owner or of anyone (NULL). */
static void fail_some(struct rpc_xprt *x, struct rpc_calls *q, int status,
		      uint64_t now, const void *owner, struct rpc_work *w)
{
	struct rpc_call *c = q->all, *n;
	for (; c; c = n) {
		n = c->next; /* fail_call unlinks at most c */
		if (c->state != CALL_QUEUED && c->state != CALL_SENT)
			continue;
		if (owner && c->owner != owner)
			continue;
		if (now && (!c->deadline || c->deadline > now))
			continue;
		fail_call(x, q, c, status, w);
	}
}

static uint64_t requester_tick(void *state, struct rpc_xprt *x, uint64_t now,
			       struct rpc_work *w)
{
	struct rpc_calls *q = state;
	fail_some(x, q, RPCRDMA_ERR_TIMEOUT, now, NULL, w);
	/* Calls waiting for an engine slot: pumped on the tick too. */
	if (q->wait_head)
		return now;
	/* The earliest deadline of a call still waiting for its outcome. */
	uint64_t next = UINT64_MAX;
	for (const struct rpc_call *c = q->all; c; c = c->next)
		if ((c->state == CALL_QUEUED || c->state == CALL_SENT) &&
		    c->deadline && c->deadline < next)
			next = c->deadline;
	return next;
}

static void requester_lost(void *state, struct rpc_xprt *x, int status,
			   struct rpc_work *w)
{
	fail_some(x, state, status, 0, NULL, w);
}

void rpcrdma_rpc_calls_fail_locked(struct rpc_xprt *x, int status,
				   const void *owner, struct rpc_work *w)
{
	fail_some(x, calls_of(x), status, 0, owner, w);
	/* A cancellation may have work requests to post. */
	rpcrdma_rpc_xprt_pump_locked(x, w);
}

static bool requester_busy(const void *state, const struct rpc_xprt *x)
{
	(void)x;
	const struct rpc_calls *q = state;
	return q->in_engine || q->wait_head;
}

/* A connection's Requester state, several to a page (common/slab.h). */
static struct rpcrdma_slab calls_slab = RPCRDMA_SLAB(struct rpc_calls);

static int requester_attach(struct rpc_xprt *x, void **state)
{
	(void)x;
	*state = rpcrdma_slab_alloc(&calls_slab);
	return *state ? 0 : RPCRDMA_ERR_NOMEM;
}

static void requester_detach(struct rpc_xprt *x, void *state)
{
	(void)x;
	struct rpc_calls *q = state;
	if (!q)
		return;
	/* The engine is gone: what it held, and records whose caller was
	 * told, go now. */
	while (q->all) {
		struct rpc_call *c = q->all;
		unlink_call(q, c);
		rpcrdma_rpc_call_free(c);
	}
	rpcrdma_slab_free(&calls_slab, q);
}

const struct rpc_role rpcrdma_rpc_requester_role = {
	.attach = requester_attach,
	.detach = requester_detach,
	.event_locked = requester_event,
	.pumped_locked = requester_pumped,
	.tick_locked = requester_tick,
	.lost_locked = requester_lost,
	.busy_locked = requester_busy,
};

/* ---------------------------------------------------------------------
 * Reply decoding (RFC 5531 §9)
 */
static void decode_reply(struct rpc_call *c, struct rpcrdma_reply *rep)
{
	struct rpcrdma_rpc_msg m;

	rep->xid = c->xid;
	int hl = rpcrdma_rpc_msg_decode(c->reply_buf, c->reply_len, &m);
	if (hl < 0 || m.mtype != RPCRDMA_RPC_REPLY || m.xid != c->xid) {
		rep->status = RPCRDMA_ERR_RPC_BAD_REPLY;
		return;
	}
	if (m.reply.stat == RPCRDMA_RPC_MSG_DENIED) {
		if (m.reply.rejected.stat == RPCRDMA_RPC_RPC_MISMATCH) {
			rep->status = RPCRDMA_ERR_RPC_MISMATCH;
			rep->low = m.reply.rejected.mismatch.low;
			rep->high = m.reply.rejected.mismatch.high;
		} else {
			rep->status = RPCRDMA_ERR_RPC_AUTH;
			rep->auth_stat = m.reply.rejected.auth_stat;
		}
		return;
	}
	rep->accept_stat = m.reply.accepted.stat;
	switch (m.reply.accepted.stat) {
	case RPCRDMA_RPC_SUCCESS:
		rep->status = 0;
		rep->data = c->reply_buf + hl;
		rep->len = c->reply_len - (size_t)hl;
		rep->pad.align = c->msgp.align;
		rep->pad.thresh = c->msgp.thresh;
		rep->pad.base = (size_t)c->msgp.offset + (size_t)hl;
		rep->nddp = c->nresults;
		for (unsigned i = 0; i < c->nresults; i++) {
			rep->ddp[i] = c->results[i].base;
			rep->ddp_len[i] = i < c->ev_nresults ? c->result_len[i] : 0;
		}
		rep->priv = c; /* the buffers are the caller's now */
		break;
	case RPCRDMA_RPC_PROG_UNAVAIL:
		rep->status = RPCRDMA_ERR_RPC_PROG_UNAVAIL;
		break;
	case RPCRDMA_RPC_PROG_MISMATCH:
		rep->status = RPCRDMA_ERR_RPC_PROG_MISMATCH;
		rep->low = m.reply.accepted.mismatch.low;
		rep->high = m.reply.accepted.mismatch.high;
		break;
	case RPCRDMA_RPC_PROC_UNAVAIL:
		rep->status = RPCRDMA_ERR_RPC_PROC_UNAVAIL;
		break;
	case RPCRDMA_RPC_GARBAGE_ARGS:
		rep->status = RPCRDMA_ERR_RPC_GARBAGE_ARGS;
		break;
	default:
		rep->status = RPCRDMA_ERR_RPC_SYSTEM_ERR;
		break;
	}
}

/* ---------------------------------------------------------------------
 * Starting and waiting
 */
/* A call that moves no bulk data: its message fits the connection's
 * inline Send (RFC 8166 §3.3.2) and no results come by DDP (a Reply chunk
 * in the connection's reply region is no bulk: registered once).  Only
 * such a call is left to an awake driver: bulk calls left to it cost a
 * greedy client of 1 MiB WRITEs 6-13 % of its rate (docs/ARCHITECTURE.md,
 * progress.c). */
static bool small_call(const struct rpc_xprt *x, const struct rpc_call *c)
{
	return c->msg_len <= x->opts.inline_send && !c->nresults;
}

/* Takes x->lock and starts c.  0 with the lock held, or an error with
 * the lock dropped and c freed. */
static int start_locked(struct rpc_xprt *x, struct rpc_call *c,
			struct rpc_work *w)
{
	pthread_mutex_lock(&x->lock);
	if (x->refused || ((x->dead || !x->connected) && !x->reconnecting)) {
		/* A refused version is the reason, whether or not the
		 * disconnect it caused has happened yet. */
		int rc = x->refused ? x->refused : RPCRDMA_ERR_DISCONNECTED;
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_call_free(c);
		return rc;
	}
	struct rpc_calls *q = calls_of(x);
	c->x = x;
	link_call(q, c);
	x->ddp_copied_tx += c->ddp_copied;
	/* FIFO: nobody overtakes calls already waiting for a slot. */
	int rc = q->wait_head ? RPCRDMA_ERR_AGAIN : submit(x, q, c);
	if (rc == RPCRDMA_ERR_AGAIN) {
		c->state = CALL_QUEUED;
		if (q->wait_tail)
			q->wait_tail->wnext = c;
		else
			q->wait_head = c;
		q->wait_tail = c;
		c->wnext = NULL;
	} else if (rc < 0) {
		unlink_call(q, c);
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_call_free(c);
		return rc;
	}
	if (c->sync && small_call(x, c))
		rpcrdma_rpc_xprt_pump_sync_locked(x, w);
	else
		rpcrdma_rpc_xprt_pump_locked(x, w);
	return 0;
}

int rpcrdma_rpc_call_async(struct rpc_xprt *x, struct rpc_call *c,
			   rpcrdma_call_cb cb, void *arg)
{
	struct rpc_work w;
	rpc_work_init(&w);
	c->cb = cb;
	c->cb_arg = arg;
	c->sync = NULL;
	int rc = start_locked(x, c, &w);
	if (rc < 0)
		return rc;
	/* Nobody waits for this one: the loop watches for its reply. */
	rpcrdma_rpc_xprt_need_attention_locked(x);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	return 0;
}

int rpcrdma_rpc_call_sync(struct rpc_xprt *x, struct rpc_call *c,
			  struct rpcrdma_reply *rep)
{
	struct rpc_wait s = {.w = rpcrdma_rpc_waiter_self(),
			     .deadline = c->deadline};
	struct rpc_work w;
	rpc_work_init(&w);
	atomic_init(&s.finished, false);
	if (!s.w) {
		rpcrdma_rpc_call_free(c);
		rep->status = RPCRDMA_ERR_NOMEM;
		return rep->status;
	}
	c->sync = &s;
	c->cb = NULL;
	int rc = start_locked(x, c, &w);
	if (rc < 0) {
		rep->status = rc;
		return rc;
	}
	if (!rpc_work_empty(&w)) {
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_work_run(&w);
		pthread_mutex_lock(&x->lock);
	}
	uint32_t xid = c->xid;
	while (rpcrdma_rpc_xprt_wait_unlock(x, &s) == RPCRDMA_ERR_TIMEOUT) {
		/* Its deadline passed with the outcome not in: told now, or
		 * once the peer cannot reach its memory (the wait goes on
		 * without a deadline then). */
		pthread_mutex_lock(&x->lock);
		if (atomic_load(&s.finished)) {
			/* The outcome came while the lock was free. */
			pthread_mutex_unlock(&x->lock);
			break;
		}
		fail_call(x, calls_of(x), c, RPCRDMA_ERR_TIMEOUT, &w);
		rpcrdma_rpc_xprt_pump_locked(x, &w);
		if (!rpc_work_empty(&w)) {
			pthread_mutex_unlock(&x->lock);
			rpcrdma_rpc_work_run(&w);
			pthread_mutex_lock(&x->lock);
		}
	}
	/* Told: the record is ours when the engine is done with it (DONE,
	 * said with the outcome: once told, this thread may not have the
	 * lock, and a record the engine still holds may be freed by now);
	 * otherwise the engine frees it and only the status is ours. */
	bool own = s.owns_record;
	if (!own || s.status) {
		rep->xid = xid;
		rep->status = s.status;
		if (own)
			rpcrdma_rpc_call_free(c);
	} else {
		decode_reply(c, rep);
		if (!rep->priv)
			rpcrdma_rpc_call_free(c);
	}
	RPCRDMA_PROBE3(call_done, rep->xid, rep->status, x->name);
	return rep->status;
}
