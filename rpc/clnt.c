/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The RPC client (RFC 5531 §9 call side): call records, the RPC call
 * header, reply header decoding, synchronous and asynchronous calls.
 *
 * A call record owns a copy of the arguments, the reply buffer and the
 * Write chunk buffers, so a caller that timed out may go away while the
 * engine still holds the record (the engine has no cancel: RFC 8166 gives
 * a Requester no way to take back a Send).  A record is freed when the
 * engine is done with it and its completion has been delivered; on a
 * successful reply its buffers pass to the caller's rpcrdma_reply.
 * Records of the usual size come from a small per-thread cache, so a call
 * allocates nothing in the steady state.
 *
 * A synchronous caller waits for its own call: it drives the connection
 * (progress.c) or sleeps until the thread that does delivers the call.
 * Its outcome is written straight into the caller's struct rpcrdma_reply.
 *
 * Exactly-once delivery: `delivered` is set under the connection lock by
 * whichever of reply, time-out, disconnection or destroy comes first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/usdt.h"
#include "rpc/rpc_internal.h"
#include "rpc/stats_export.h"
#include "rpcrdma/export.h"
#include "wire/auth.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v2.h"

struct rpc_call {
	struct rpc_call *prev, *next;  /* x->calls */
	struct rpc_call *wnext;        /* x->waitq */
	struct rpc_call *dnext;        /* delivery list */
	const void *owner;             /* the rpcrdma_clnt */
	bool in_engine, in_waitq, delivered;
	bool held;           /* the engine held it when delivery began */
	bool dpending;       /* delivery (of a held record) under way */
	bool engine_finished; /* ...and the engine completed it meanwhile */
	/* The arguments are the caller's memory, borrowed until delivery
	 * (synchronous calls, opts.borrow_args): a call given up before
	 * its reply (time-out, destroy) is delivered only once the engine
	 * says the peer can no longer reach that memory (cancelling). */
	bool borrowed;
	bool cancelling;
	int cancel_status;             /* delivered with it then */
	uint64_t ddp_copied;           /* DDP-eligible bytes build_call
					  copied (rpcrdma_stats) */
	int status;                    /* delivery status (0: decode) */
	uint64_t deadline;             /* 0: none */
	rpcrdma_call_cb cb;            /* asynchronous */
	void *cb_arg;
	struct rpc_sync *sync;         /* synchronous */
	uint32_t xid;
	/* CALL_DONE as received. */
	int ev_status;
	size_t reply_len;
	unsigned ev_nresults;
	size_t result_len[RPCRDMA_MAX_DDP_RESULTS];
	struct rpcrdma_engine_msgp msgp;
	struct rpcrdma_iov iov[RPCRDMA_ENGINE_MAX_IOV];
	unsigned niov;
	struct rpcrdma_iov results[RPCRDMA_MAX_DDP_RESULTS];
	unsigned nresults;
	uint8_t *reply_buf;
	size_t reply_max;
	size_t msg_len;                /* the call message, DDP items too */
	bool reply_inline;             /* no Reply chunk (reply_max 0) */
	struct rpc_reply_region *region; /* reply_buf is the connection's
					    reply region, borrowed */
	struct rpc_buf *big;           /* reply and result buffers from the
					  registered pool (buf_pool.c) */
	struct rpc_bufpool *pool;
	size_t cap;                    /* bytes of mem[] */
	_Alignas(8) uint8_t mem[];     /* header, args, reply, results */
};

struct rpcrdma_clnt {
	struct rpc_xprt *x;
	bool owns_xprt;                /* false: reverse-direction handle */
	uint32_t prog, vers;
	/* Owning client only. */
	struct rpc_dev rd;
	struct rpc_loop loop;
	/* The call header after the procedure number (credential and
	 * verifier), encoded once per credential change.  Calls read the
	 * current one without a lock; replaced ones stay until destroy
	 * (a caller may be copying one). */
	pthread_mutex_t cred_lock;
	_Atomic(struct hdr_tail *) tail;
	struct rpc_stat_src stat_src;  /* exported (stats_export.c) */
	bool exported;
};

struct hdr_tail {
	struct hdr_tail *older;
	size_t len;
	uint8_t bytes[8 + RPCRDMA_AUTH_MAX_BODY + 8]; /* cred, verf */
};

/* ---------------------------------------------------------------------
 * Servers known to speak only version 1 (draft §7.2: "a client can avoid
 * a possible version negotiation loop when re-establishing another
 * connection by assuming that particular server does not support
 * RPC-over-RDMA version 2").  Process-wide, by address; a handful is
 * plenty, the oldest entry makes room.
 */
#define V1_SERVERS 32
static pthread_mutex_t v1_lock = PTHREAD_MUTEX_INITIALIZER;
static char v1_servers[V1_SERVERS][64];
static unsigned v1_next;

static void peer_key(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		port = ntohs(a->sin6_port);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		port = ntohs(a->sin_port);
	}
	snprintf(out, cap, "%s/%u", host, port);
}

bool rpcrdma_rpc_v1_server_known(const char *key)
{
	bool hit = false;
	pthread_mutex_lock(&v1_lock);
	for (unsigned i = 0; i < V1_SERVERS && !hit; i++)
		hit = !strcmp(v1_servers[i], key);
	pthread_mutex_unlock(&v1_lock);
	return hit;
}

void rpcrdma_rpc_v1_server_remember(const char *key)
{
	if (!*key || rpcrdma_rpc_v1_server_known(key))
		return;
	pthread_mutex_lock(&v1_lock);
	snprintf(v1_servers[v1_next++ % V1_SERVERS], sizeof v1_servers[0],
		 "%s", key);
	pthread_mutex_unlock(&v1_lock);
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

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static _Thread_local struct call_cache *my_cache;

static void cache_free(void *p)
{
	struct call_cache *k = p;
	if (!k)
		return;
	for (unsigned i = 0; i < k->n; i++)
		free(k->c[i]);
	free(k);
}

static void cache_key_make(void)
{
	pthread_key_create(&cache_key, cache_free);
}

static struct call_cache *cache_self(void)
{
	if (my_cache)
		return my_cache;
	pthread_once(&cache_once, cache_key_make);
	struct call_cache *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	pthread_setspecific(cache_key, k);
	my_cache = k;
	return k;
}

static struct rpc_call *call_alloc(size_t need)
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

static void call_free(struct rpc_call *c)
{
	/* A borrowed reply region goes back with the record, and so do
	 * its pooled buffers. */
	rpcrdma_rpc_region_put(c->region);
	c->region = NULL;
	if (c->big)
		rpcrdma_rpc_buf_put(c->pool, c->big, rpcrdma_rpc_now_ms());
	c->big = NULL;
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
 * Records
 */
static void link_call(struct rpc_xprt *x, struct rpc_call *c)
{
	c->prev = NULL;
	c->next = x->calls;
	if (x->calls)
		x->calls->prev = c;
	x->calls = c;
}

static void unlink_call(struct rpc_xprt *x, struct rpc_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		x->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void waitq_remove(struct rpc_xprt *x, struct rpc_call *c)
{
	struct rpc_call **pp = &x->waitq_head, *prev = NULL;
	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->wnext;
	}
	if (!*pp)
		return;
	*pp = c->wnext;
	if (x->waitq_tail == c)
		x->waitq_tail = prev;
	c->wnext = NULL;
	c->in_waitq = false;
}

static void deliver_later(struct rpc_xprt *x, struct rpc_evbuf *b,
			  struct rpc_call *c, int status)
{
	c->delivered = true;
	c->status = status;
	c->held = c->in_engine;
	c->dpending = c->in_engine;
	c->dnext = b->done;
	b->done = c;
	if (c->sync) {
		c->sync->queued = true;
		x->sync_out--;
	}
}

/* Hands the call to the engine; RPCRDMA_ERR_AGAIN when every slot is
 * busy. */
static int submit_locked(struct rpc_xprt *x, struct rpc_call *c)
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
		c->in_engine = true;
		x->in_engine++;
		/* The call's XID, program, version, procedure (from its
		 * header, RFC 5531 §9) and size; call_done ends it. */
		RPCRDMA_PROBE5(call_start, c->xid, rpcrdma_be32_get(c->mem + 12),
			       rpcrdma_be32_get(c->mem + 16),
			       rpcrdma_be32_get(c->mem + 20), c->msg_len);
	}
	return rc;
}

void rpcrdma_rpc_calls_submit_waiting_locked(struct rpc_xprt *x,
					     struct rpc_evbuf *b)
{
	while (x->waitq_head && !x->dead) {
		struct rpc_call *c = x->waitq_head;
		int rc = submit_locked(x, c);
		if (rc == RPCRDMA_ERR_AGAIN)
			return;
		waitq_remove(x, c);
		if (rc < 0) {
			unlink_call(x, c);
			deliver_later(x, b, c, rc);
		}
	}
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

void rpcrdma_rpc_call_engine_done_locked(struct rpc_xprt *x,
					 const struct rpcrdma_engine_event *ev,
					 struct rpc_evbuf *b)
{
	struct rpc_call *c = ev->user;

	if (!c || !c->in_engine)
		return;
	c->in_engine = false;
	x->in_engine--;
	unlink_call(x, c);
	if (c->cancelling) {
		/* Given up and now over: nothing of it is reachable. */
		c->cancelling = false;
		deliver_later(x, b, c, c->cancel_status);
		return;
	}
	if (c->delivered) {
		/* Its caller already had a time-out or an error; if that
		 * delivery is still running, it frees the record. */
		if (c->dpending)
			c->engine_finished = true;
		else
			call_free(c);
		return;
	}
	c->ev_status = size_status(x, c, ev);
	c->reply_len = ev->reply_len;
	c->ev_nresults = ev->nresults;
	for (unsigned i = 0; i < c->nresults && i < ev->nresults; i++)
		c->result_len[i] = ev->result_len[i];
	c->msgp = ev->msgp;
	deliver_later(x, b, c, 0);
}

void rpcrdma_rpc_call_released_locked(struct rpc_xprt *x,
				      const struct rpcrdma_engine_event *ev,
				      struct rpc_evbuf *b)
{
	struct rpc_call *c = ev->user;
	if (!c || !c->cancelling)
		return;
	/* The engine keeps the record until the reply or the end of the
	 * connection (RFC 8166 §3.3.1): delivered now, freed then. */
	c->cancelling = false;
	deliver_later(x, b, c, c->cancel_status);
}

static void fail_call_locked(struct rpc_xprt *x, struct rpc_call *c,
			     int status, struct rpc_evbuf *b)
{
	if (c->cancelling)
		return; /* delivered once the engine released it */
	if (c->borrowed && c->in_engine && !x->dead) {
		/* The caller takes its memory back: first make sure the peer
		 * cannot reach it (engine.h, rpcrdma_engine_cancel_call). */
		int rc = rpcrdma_engine_cancel_call(x->e, c->xid,
						    rpcrdma_rpc_now_ms());
		if (rc == RPCRDMA_ERR_AGAIN) {
			c->cancelling = true;
			c->cancel_status = status;
			if (c->sync)
				c->sync->deadline = 0; /* wait for it */
			rpcrdma_rpc_xprt_pump_locked(x, b);
			return;
		}
		/* 0: nothing reachable (a call not sent yet completed at
		 * once: its CALL_DONE finds it delivered). */
	}
	if (c->in_waitq)
		waitq_remove(x, c);
	if (!c->in_engine)
		unlink_call(x, c);
	/* A record still in the engine stays linked: freed when the engine
	 * completes it or is destroyed. */
	deliver_later(x, b, c, status);
}

void rpcrdma_rpc_calls_fail_locked(struct rpc_xprt *x, int status, uint64_t now,
				   const void *owner, struct rpc_evbuf *b)
{
	struct rpc_call *c = x->calls, *n;

	for (; c; c = n) {
		n = c->next;
		if (c->delivered || c->cancelling ||
		    (owner && c->owner != owner))
			continue;
		if (now && (!c->deadline || c->deadline > now))
			continue;
		fail_call_locked(x, c, status, b);
	}
}

void rpcrdma_rpc_call_fail_one_locked(struct rpc_xprt *x, struct rpc_call *c,
				      int status, struct rpc_evbuf *b)
{
	if (!c->delivered)
		fail_call_locked(x, c, status, b);
}

bool rpcrdma_rpc_calls_cancelling_locked(const struct rpc_xprt *x,
					 const void *owner)
{
	for (const struct rpc_call *c = x->calls; c; c = c->next)
		if (c->cancelling && (!owner || c->owner == owner))
			return true;
	return false;
}

struct rpc_waiter *rpcrdma_rpc_calls_other_waiter_locked(
	struct rpc_xprt *x, const struct rpc_waiter *w)
{
	for (struct rpc_call *c = x->calls; c; c = c->next)
		if (c->sync && !c->sync->queued && c->sync->w != w)
			return c->sync->w;
	return NULL;
}

void rpcrdma_rpc_calls_free_all(struct rpc_xprt *x)
{
	while (x->calls) {
		struct rpc_call *c = x->calls;
		unlink_call(x, c);
		call_free(c);
	}
}

/* ---------------------------------------------------------------------
 * Reply decoding (RFC 5531 §9)
 */
static void decode_reply(struct rpc_call *c, struct rpcrdma_reply *rep)
{
	struct rpcrdma_rpc_msg m;

	rep->xid = c->xid;
	if (c->ev_status) {
		rep->status = c->ev_status;
		return;
	}
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

/* Tells a synchronous caller its outcome is in.  The record may be gone
 * already; s (on the caller's stack) lives until finished is seen. */
static void finish_sync(struct rpc_xprt *x, struct rpc_sync *s)
{
	struct rpc_waiter *w = s->w;
	if (w == rpcrdma_rpc_waiter_self()) {
		atomic_store(&s->finished, true);
		return;
	}
	/* The store under the lock: the caller checks it under the lock
	 * before it sleeps. */
	pthread_mutex_lock(&x->lock);
	atomic_store(&s->finished, true);
	pthread_cond_signal(&w->cv);
	if (x->driver == w)
		rpcrdma_rpc_xprt_kick(x); /* it may sleep on the CQ fd */
	pthread_mutex_unlock(&x->lock);
}

void rpcrdma_rpc_calls_deliver(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	struct rpc_call *c = b->done;

	b->done = NULL;
	while (c) {
		struct rpc_call *n = c->dnext;
		struct rpcrdma_reply local;
		struct rpc_sync *s = c->sync;
		struct rpcrdma_reply *rep = s ? s->rep : &local;
		rpcrdma_call_cb cb = c->cb;
		void *arg = c->cb_arg;

		if (!s)
			memset(rep, 0, sizeof(*rep));
		uint32_t xid = c->xid;
		if (c->held) {
			/* The engine may complete the record at any moment
			 * now: take what we need, then settle who frees. */
			rep->status = c->status;
			pthread_mutex_lock(&x->lock);
			c->dpending = false;
			bool free_now = c->engine_finished;
			pthread_mutex_unlock(&x->lock);
			if (free_now)
				call_free(c);
		} else {
			if (c->status)
				rep->status = c->status;
			else
				decode_reply(c, rep);
			/* Unless the reply owns the buffers now, nothing
			 * in rep points into the record. */
			if (!rep->priv)
				call_free(c);
		}
		RPCRDMA_PROBE3(call_done, xid, rep->status, x->name);
		if (s)
			finish_sync(x, s);
		else
			cb(arg, rep);
		c = n;
	}
}

/* ---------------------------------------------------------------------
 * Calls
 */
static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* The fixed part of every call header after the procedure number:
 * credential and AUTH_NONE verifier (RFC 5531 §9).  NOMEM. */
static int set_hdr_tail(struct rpcrdma_clnt *cl, uint32_t flavor,
			const void *body, size_t len)
{
	struct hdr_tail *t = malloc(sizeof(*t));
	if (!t)
		return RPCRDMA_ERR_NOMEM;
	uint8_t *p = t->bytes;
	rpcrdma_be32_put(p, flavor);
	rpcrdma_be32_put(p + 4, (uint32_t)len);
	size_t o = 8;
	if (len) {
		memcpy(p + o, body, len);
		size_t pad = (4 - (len & 3)) & 3;
		memset(p + o + len, 0, pad);
		o += len + pad;
	}
	rpcrdma_be32_put(p + o, RPCRDMA_AUTH_NONE);
	rpcrdma_be32_put(p + o + 4, 0);
	t->len = o + 8;
	pthread_mutex_lock(&cl->cred_lock);
	t->older = atomic_load(&cl->tail);
	atomic_store(&cl->tail, t);
	pthread_mutex_unlock(&cl->cred_lock);
	return 0;
}

static void free_hdr_tails(struct rpcrdma_clnt *cl)
{
	struct hdr_tail *t = atomic_load(&cl->tail);
	while (t) {
		struct hdr_tail *o = t->older;
		free(t);
		t = o;
	}
}

/* A piece a borrowing call references instead of copying: DDP-eligible
 * ones (they go by RDMA Read from where they are), and pieces large
 * enough that a Long Call is better off reading them in place than
 * copying them; smaller ones are gathered behind the call header, where
 * the Send copies them anyway. */
#define BORROW_MIN 1024u

/* On a device that pins pages, exposing the caller's memory costs a
 * registration (a system call and page pinning) per call: a DDP-eligible
 * piece up to this size is cheaper copied into the registered pool
 * (docs/DEVICES.md); beyond it, it is lent. */
#define PINNED_COPY_MAX 65536u

static bool referenced(const struct rpcrdma_iov *a, bool borrow, bool pins)
{
	if (!borrow || !a->len)
		return false;
	if (a->ddp)
		return !pins || a->len > PINNED_COPY_MAX;
	return a->len >= BORROW_MIN && !(a->len & 3);
}

/* res (nres of them): the caller's own buffers for the DDP-eligible
 * results (rpcrdma_clnt_call_into), borrowed like the arguments; NULL:
 * the record's memory holds them. */
static int build_call(struct rpcrdma_clnt *cl, const struct rpcrdma_call *call,
		      bool borrow, const struct rpcrdma_iov *res, unsigned nres,
		      struct rpc_call **out)
{
	size_t args_len = 0, res_len = 0, reply_max;

	if (!call || call->nargs > RPCRDMA_MAX_ARGS ||
	    (call->nargs && !call->args) ||
	    call->nddp_results > RPCRDMA_MAX_DDP_RESULTS ||
	    (call->nddp_results && !call->ddp_result_max && !res) ||
	    nres > RPCRDMA_MAX_DDP_RESULTS || (nres && !res) ||
	    (res && call->nddp_results && call->nddp_results != nres))
		return RPCRDMA_ERR_INVAL;
	for (unsigned i = 0; res && i < nres; i++)
		if (res[i].len && !res[i].base)
			return RPCRDMA_ERR_INVAL;
	/* Each piece is lent (referenced), or copied: a DDP-eligible one
	 * into the registered pool (the peer reads it from there by RDMA
	 * Read), the rest behind the call header in the record. */
	bool pins = !(cl->x->rd->attr.caps & RPCRDMA_DEV_CAP_REG_VIRTUAL);
	/* A call that fits the inline threshold goes Short and its Send
	 * copies every piece anyway: copying one into the pool first
	 * would copy it twice. */
	size_t whole = 0;
	for (unsigned i = 0; i < call->nargs; i++)
		whole += call->args[i].len + 3;
	if (whole + 512 <= cl->x->opts.inline_send)
		pins = false;
	size_t pool_args = 0;
	for (unsigned i = 0; i < call->nargs; i++) {
		const struct rpcrdma_iov *a = &call->args[i];
		if (a->len && !a->base)
			return RPCRDMA_ERR_INVAL;
		if (referenced(a, borrow, pins))
			continue;
		if (a->ddp && a->len)
			pool_args += round8(a->len);
		else
			args_len += round8(a->len);
	}
	size_t msg_len = 0;
	for (unsigned i = 0; i < call->nargs; i++)
		msg_len += call->args[i].len;
	for (unsigned i = 0; !res && i < call->nddp_results; i++)
		res_len += round8(call->ddp_result_max[i]);
	/* Without a stated maximum the reply must fit inline, so no Reply
	 * chunk is offered (RFC 8166 §4.3.3 leaves the choice to us).  An
	 * unknown one may be anything up to max_msg. */
	bool reply_inline = !call->reply_max;
	if (call->reply_max == RPCRDMA_REPLY_ANY)
		reply_max = cl->x->opts.max_msg & ~(size_t)7;
	else if (call->reply_max)
		reply_max = round8(call->reply_max + 32 + RPCRDMA_AUTH_MAX_BODY);
	else
		reply_max = cl->x->opts.inline_recv;

	/* RFC 5531 §9: xid, CALL, rpcvers 2, prog, vers, proc, then the
	 * credential and verifier encoded at the last credential change. */
	const struct hdr_tail *tail = atomic_load(&cl->tail);
	size_t hl = 24 + tail->len;
	msg_len += hl;
	if (msg_len > cl->x->opts.max_msg) {
		/* The peer would refuse it (its max_msg is ours, or it
		 * should be); say so before registering megabytes. */
		rpcrdma_rpc_trace("%s: call of %zu bytes over max_msg %u: not "
				  "sent", cl->x->name, msg_len,
				  cl->x->opts.max_msg);
		return RPCRDMA_ERR_CALL_TOO_BIG;
	}
	/* A reply that may need a Reply chunk lands in the connection's
	 * reply region when it is free: no registration for this call
	 * (reply_region.c). */
	bool may_chunk = reply_max > cl->x->opts.inline_recv;
	uint8_t *region = may_chunk
		? rpcrdma_rpc_region_get(cl->x->rr, reply_max) : NULL;
	/* Memory the peer reaches (Write chunks, a Reply chunk, copied
	 * Read chunk data) comes from the registered pool: no allocation,
	 * page faults or registration per call (buf_pool.c).  The record
	 * keeps the rest. */
	size_t reply_pool = region || !may_chunk ? 0 : reply_max;
	size_t big_len = reply_pool + res_len + pool_args;
	struct rpc_bufpool *pool = cl->x->rd->pool;
	struct rpc_buf *big = big_len ? rpcrdma_rpc_buf_get(pool, big_len)
				      : NULL;
	size_t total = round8(hl) + args_len + pool_args +
		       (region ? 0 : reply_max) + res_len;
	if (big)
		total -= big_len;
	uint8_t *bp = big ? rpcrdma_rpc_buf_base(big) : NULL;
	uint8_t *bp_args = bp ? bp + reply_pool + res_len : NULL;
	/* Only the bookkeeping is initialised: the reply and Write chunk
	 * areas (up to megabytes) are written by the peer and read only up
	 * to the lengths the engine reports, and they are exposed for
	 * remote write only, never for remote read. */
	struct rpc_call *c = call_alloc(total);
	if (!c) {
		if (region)
			rpcrdma_rpc_region_put(cl->x->rr);
		if (big)
			rpcrdma_rpc_buf_put(pool, big, rpcrdma_rpc_now_ms());
		return RPCRDMA_ERR_NOMEM;
	}
	c->region = region ? cl->x->rr : NULL;
	c->big = big;
	c->pool = pool;
	c->in_engine = c->in_waitq = c->delivered = false;
	c->held = c->dpending = c->engine_finished = false;
	c->borrowed = borrow || res;
	c->cancelling = false;
	c->cancel_status = 0;
	c->ddp_copied = 0;
	c->status = 0;
	c->sync = NULL;
	c->cb = NULL;
	c->xid = 0;
	uint8_t *p = c->mem;
	rpcrdma_be32_put(p, 0); /* the engine writes the XID */
	rpcrdma_be32_put(p + 4, RPCRDMA_RPC_CALL);
	rpcrdma_be32_put(p + 8, RPCRDMA_RPC_VERS);
	rpcrdma_be32_put(p + 12, cl->prog);
	rpcrdma_be32_put(p + 16, cl->vers);
	rpcrdma_be32_put(p + 20, call->proc);
	memcpy(p + 24, tail->bytes, tail->len);
	/* Consecutive non-DDP pieces are copied back to back into one
	 * piece; each DDP item gets a piece of its own. */
	struct rpcrdma_iov *cur = &c->iov[0];
	*cur = (struct rpcrdma_iov){p, hl, false};
	c->niov = 1;
	uint8_t *run_end = c->mem + hl;
	bool in_run = true; /* cur is a run of copied non-DDP pieces */
	for (unsigned i = 0; i < call->nargs; i++) {
		const struct rpcrdma_iov *a = &call->args[i];
		if (referenced(a, borrow, pins)) {
			/* Borrowed: the engine reads it where it is (a Read
			 * chunk, or the Send gathers it). */
			if (c->niov >= RPCRDMA_ENGINE_MAX_IOV) {
				call_free(c);
				return RPCRDMA_ERR_INVAL;
			}
			cur = &c->iov[c->niov++];
			*cur = (struct rpcrdma_iov){a->base, a->len, a->ddp};
			in_run = false;
			continue;
		}
		if (!a->ddp) {
			if (in_run) {
				if (a->len)
					memcpy(run_end, a->base, a->len);
				cur->len += a->len;
				run_end += a->len;
				continue;
			}
		}
		if (c->niov >= RPCRDMA_ENGINE_MAX_IOV) {
			call_free(c);
			return RPCRDMA_ERR_INVAL;
		}
		if (a->ddp && a->len && bp_args) {
			/* Into registered memory the Read chunk exposes. */
			memcpy(bp_args, a->base, a->len);
			c->ddp_copied += a->len;
			cur = &c->iov[c->niov++];
			*cur = (struct rpcrdma_iov){bp_args, a->len, true};
			bp_args += round8(a->len);
			in_run = false;
			continue;
		}
		/* Past everything written so far, 8-aligned. */
		p = c->mem + round8((size_t)(run_end - c->mem));
		if (a->len)
			memcpy(p, a->base, a->len);
		if (a->ddp)
			c->ddp_copied += a->len;
		cur = &c->iov[c->niov++];
		*cur = (struct rpcrdma_iov){p, a->len, a->ddp};
		run_end = p + a->len;
		in_run = !a->ddp;
	}
	for (unsigned i = 0; i < c->niov; i++)
		if (!c->iov[i].ddp && (c->iov[i].len & 3)) {
			call_free(c);
			return RPCRDMA_ERR_INVAL;
		}
	p = c->mem + round8((size_t)(run_end - c->mem));
	if (region) {
		c->reply_buf = region;
	} else if (bp && reply_pool) {
		c->reply_buf = bp;
		bp += reply_pool;
	} else {
		c->reply_buf = p;
		p += reply_max;
	}
	c->reply_max = reply_max;
	c->reply_inline = reply_inline;
	c->msg_len = msg_len;
	if (bp)
		p = bp; /* the results follow in the pooled buffer */
	c->nresults = res ? nres : call->nddp_results;
	for (unsigned i = 0; i < c->nresults; i++) {
		if (res) {
			/* The server writes straight into the caller's
			 * buffer (a Write chunk over it, RFC 8166 §4.3.2). */
			c->results[i] = (struct rpcrdma_iov){res[i].base,
							     res[i].len, true};
			continue;
		}
		c->results[i] = (struct rpcrdma_iov){p, call->ddp_result_max[i],
						     true};
		p += round8(call->ddp_result_max[i]);
	}
	c->owner = cl;
	unsigned to = call->timeout_ms ? call->timeout_ms
				       : cl->x->opts.call_timeout_ms;
	c->deadline = to ? rpcrdma_rpc_now_ms() + to : 0;
	*out = c;
	return 0;
}

/* Starts call c on x.  Returns 0 with x->lock held (s, for a synchronous
 * call, is then linked to it), or an error with the lock dropped and c
 * freed. */
static int start_locked(struct rpc_xprt *x, struct rpc_call *c,
			struct rpc_evbuf *b)
{
	pthread_mutex_lock(&x->lock);
	if (x->refused || ((x->dead || !x->connected) && !x->reconnecting)) {
		/* A refused version is the reason, whether or not the
		 * disconnect it caused has happened yet. */
		int rc = x->refused ? x->refused : RPCRDMA_ERR_DISCONNECTED;
		pthread_mutex_unlock(&x->lock);
		call_free(c);
		return rc;
	}
	link_call(x, c);
	x->ddp_copied_tx += c->ddp_copied;
	/* FIFO: nobody overtakes calls already waiting for a slot. */
	int rc = x->waitq_head ? RPCRDMA_ERR_AGAIN : submit_locked(x, c);
	if (rc == RPCRDMA_ERR_AGAIN) {
		c->in_waitq = true;
		if (x->waitq_tail)
			x->waitq_tail->wnext = c;
		else
			x->waitq_head = c;
		x->waitq_tail = c;
		c->wnext = NULL;
		rc = 0;
	} else if (rc < 0) {
		unlink_call(x, c);
		pthread_mutex_unlock(&x->lock);
		call_free(c);
		return rc;
	}
	if (c->sync)
		x->sync_out++;
	rpcrdma_rpc_xprt_pump_locked(x, b);
	return 0;
}

static int call_async(struct rpcrdma_clnt *cl, const struct rpcrdma_call *call,
		      const struct rpcrdma_iov *res, unsigned nres,
		      rpcrdma_call_cb cb, void *arg)
{
	struct rpc_evbuf b = RPC_EVBUF_INIT;
	struct rpc_call *c;

	if (!cl || !cb)
		return RPCRDMA_ERR_INVAL;
	int rc = build_call(cl, call, cl->x->opts.borrow_args || res, res,
			    nres, &c);
	if (rc < 0)
		return rc;
	c->cb = cb;
	c->cb_arg = arg;
	struct rpc_xprt *x = cl->x;
	rc = start_locked(x, c, &b);
	if (rc < 0)
		return rc;
	/* Nobody waits for this one: the loop watches for its reply. */
	rpcrdma_rpc_xprt_need_attention_locked(x);
	rpcrdma_rpc_xprt_unlock_deliver(x, &b);
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_clnt_call_async(struct rpcrdma_clnt *cl,
					   const struct rpcrdma_call *call,
					   rpcrdma_call_cb cb, void *arg)
{
	return call_async(cl, call, NULL, 0, cb, arg);
}

RPCRDMA_EXPORT int rpcrdma_clnt_call_async_into(struct rpcrdma_clnt *cl,
						const struct rpcrdma_call *call,
						const struct rpcrdma_iov *res,
						unsigned nres, rpcrdma_call_cb cb,
						void *arg)
{
	if (!res && nres)
		return RPCRDMA_ERR_INVAL;
	return call_async(cl, call, res, nres, cb, arg);
}

static int call_sync(struct rpcrdma_clnt *cl, const struct rpcrdma_call *call,
		     const struct rpcrdma_iov *res, unsigned nres,
		     struct rpcrdma_reply *rep)
{
	struct rpc_evbuf b = RPC_EVBUF_INIT;
	struct rpc_call *c;

	if (!rep)
		return RPCRDMA_ERR_INVAL;
	memset(rep, 0, sizeof(*rep));
	if (!cl) {
		rep->status = RPCRDMA_ERR_INVAL;
		return rep->status;
	}
	struct rpc_sync s = {.rep = rep, .w = rpcrdma_rpc_waiter_self()};
	if (!s.w) {
		rep->status = RPCRDMA_ERR_NOMEM;
		return rep->status;
	}
	/* The caller waits: its memory is borrowed, not copied. */
	int rc = build_call(cl, call, true, res, nres, &c);
	if (rc < 0) {
		rep->status = rc;
		return rc;
	}
	c->sync = &s;
	s.deadline = c->deadline;
	struct rpc_xprt *x = cl->x;
	rc = start_locked(x, c, &b);
	if (rc < 0) {
		rep->status = rc;
		return rc;
	}
	if (!rpc_evbuf_empty(&b)) {
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_xprt_deliver(x, &b);
		pthread_mutex_lock(&x->lock);
	}
	rpcrdma_rpc_xprt_wait_call(x, c, &s);
	pthread_mutex_unlock(&x->lock);
	return rep->status;
}

RPCRDMA_EXPORT int rpcrdma_clnt_call(struct rpcrdma_clnt *cl,
				     const struct rpcrdma_call *call,
				     struct rpcrdma_reply *rep)
{
	return call_sync(cl, call, NULL, 0, rep);
}

RPCRDMA_EXPORT int rpcrdma_clnt_call_into(struct rpcrdma_clnt *cl,
					  const struct rpcrdma_call *call,
					  const struct rpcrdma_iov *res,
					  unsigned nres,
					  struct rpcrdma_reply *rep)
{
	if (!res && nres) {
		if (rep) {
			memset(rep, 0, sizeof(*rep));
			rep->status = RPCRDMA_ERR_INVAL;
		}
		return RPCRDMA_ERR_INVAL;
	}
	return call_sync(cl, call, res, nres, rep);
}

void rpcrdma_rpc_clnt_count_copied(struct rpcrdma_clnt *cl, uint64_t rx)
{
	if (!cl || !rx)
		return;
	pthread_mutex_lock(&cl->x->lock);
	cl->x->ddp_copied_rx += rx;
	pthread_mutex_unlock(&cl->x->lock);
}

RPCRDMA_EXPORT void rpcrdma_reply_free(struct rpcrdma_reply *rep)
{
	if (!rep)
		return;
	if (rep->priv)
		call_free(rep->priv);
	rep->priv = NULL;
	rep->data = NULL;
	rep->len = 0;
	rep->nddp = 0;
}

/* ---------------------------------------------------------------------
 * Credentials
 */
RPCRDMA_EXPORT int rpcrdma_clnt_set_cred(struct rpcrdma_clnt *c,
					 const struct rpcrdma_cred *cred)
{
	uint8_t body[RPCRDMA_AUTHSYS_MAX_BODY];
	int len = 0;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	if (cred && cred->flavor == RPCRDMA_CRED_AUTH_SYS) {
		struct rpcrdma_authsys_parms p;
		size_t nl = strnlen(cred->machinename,
				    sizeof(cred->machinename));
		if (nl > RPCRDMA_AUTHSYS_MAX_NAME ||
		    cred->ngids > RPCRDMA_AUTHSYS_MAX_GIDS)
			return RPCRDMA_ERR_INVAL;
		memset(&p, 0, sizeof(p));
		p.stamp = cred->stamp;
		p.machinename_len = (uint32_t)nl;
		p.machinename = cred->machinename;
		p.uid = cred->uid;
		p.gid = cred->gid;
		p.ngids = cred->ngids;
		memcpy(p.gids, cred->gids, sizeof(p.gids));
		len = rpcrdma_authsys_encode(&p, body, sizeof(body));
		if (len < 0)
			return RPCRDMA_ERR_INVAL;
		return rpcrdma_clnt_set_cred_raw(c, RPCRDMA_AUTH_SYS, body,
						 (size_t)len);
	}
	if (cred && cred->flavor != RPCRDMA_CRED_AUTH_NONE)
		return RPCRDMA_ERR_INVAL;
	return rpcrdma_clnt_set_cred_raw(c, RPCRDMA_AUTH_NONE, NULL, 0);
}

RPCRDMA_EXPORT int rpcrdma_clnt_set_cred_raw(struct rpcrdma_clnt *c,
					     uint32_t flavor,
					     const void *body, size_t len)
{
	if (!c || len > RPCRDMA_AUTH_MAX_BODY || (len && !body))
		return RPCRDMA_ERR_INVAL;
	return set_hdr_tail(c, flavor, body, len);
}

/* ---------------------------------------------------------------------
 * Create / destroy
 */
static void clnt_on_cm(void *owner, struct rpcrdma_cm_event *ev)
{
	struct rpcrdma_clnt *c = owner;

	if (rpcrdma_rpc_xprt_reconnect_event(c->x, ev))
		return;
	switch (ev->type) {
	case RPCRDMA_CM_EVENT_DISCONNECTED:
	case RPCRDMA_CM_EVENT_DEVICE_REMOVAL:
	case RPCRDMA_CM_EVENT_CONNECT_ERROR:
	case RPCRDMA_CM_EVENT_UNREACHABLE:
	case RPCRDMA_CM_EVENT_REJECTED:
		if (ev->id == c->x->id)
			rpcrdma_rpc_xprt_lost(c->x, RPCRDMA_ERR_DISCONNECTED);
		break;
	default:
		break;
	}
}

/* After each loop round: a reconnection that is due starts here, where
 * no CM event is held unacknowledged (destroying an id waits for those). */
static void clnt_on_round(void *owner)
{
	struct rpcrdma_clnt *c = owner;
	rpcrdma_rpc_xprt_reconnect_due(c->x, rpcrdma_rpc_now_ms());
}

static struct rpcrdma_clnt *clnt_alloc(uint32_t prog, uint32_t vers)
{
	struct rpcrdma_clnt *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->prog = prog;
	c->vers = vers;
	pthread_mutex_init(&c->cred_lock, NULL);
	c->loop.wakefd = -1;
	if (set_hdr_tail(c, RPCRDMA_AUTH_NONE, NULL, 0) < 0) {
		pthread_mutex_destroy(&c->cred_lock);
		free(c);
		return NULL;
	}
	return c;
}

static int cm_to_err(const struct rpc_cm_ev *ev)
{
	switch (ev->type) {
	case RPCRDMA_CM_EVENT_REJECTED:
		return RPCRDMA_ERR_CONNREFUSED;
	case RPCRDMA_CM_EVENT_UNREACHABLE:
		return RPCRDMA_ERR_ADDR;
	default:
		return ev->status < 0 ? ev->status : RPCRDMA_ERR_CONNREFUSED;
	}
}

static int clnt_connect(const struct sockaddr_storage *ss, socklen_t sl,
			uint32_t prog, uint32_t vers,
			const struct rpcrdma_opts *opts, struct rpcrdma_clnt **out);

/* The client's counters for the export (stats_export.c). */
static unsigned clnt_total(void *obj, struct rpcrdma_stats *s)
{
	struct rpcrdma_clnt *c = obj;
	rpcrdma_rpc_xprt_add_stats(c->x, s);
	pthread_mutex_lock(&c->x->lock);
	unsigned live = c->x->connected && !c->x->dead;
	pthread_mutex_unlock(&c->x->lock);
	return live;
}

RPCRDMA_EXPORT int rpcrdma_clnt_create(const char *addr, uint32_t prog,
				       uint32_t vers,
				       const struct rpcrdma_opts *opts,
				       struct rpcrdma_clnt **out)
{
	struct rpcrdma_opts o;
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc;

	if (!addr || !out)
		return RPCRDMA_ERR_INVAL;
	*out = NULL;
	rc = rpcrdma_rpc_opts_fill(opts, &o);
	if (rc < 0)
		return rc;
	rc = rpcrdma_rpc_parse_addr(addr, &ss, &sl);
	if (rc < 0)
		return rc;
	/* A connection attempt refused with the local address in use (an
	 * RDMA CM that picks its local port apart from the TCP stack, as
	 * iWARP devices do, can pick one a TCP socket holds: siw's
	 * connect then fails with EADDRINUSE) is worth another attempt
	 * with a new port; a few, as each picks at random. */
	for (int attempt = 0;; attempt++) {
		rc = clnt_connect(&ss, sl, prog, vers, &o, out);
		if (rc != RPCRDMA_ERR_BUSY || attempt == 3)
			return rc;
		rpcrdma_rpc_trace("%s: local address in use, trying again",
				  addr);
	}
}

static int clnt_connect(const struct sockaddr_storage *ss, socklen_t sl,
			uint32_t prog, uint32_t vers,
			const struct rpcrdma_opts *opts, struct rpcrdma_clnt **out)
{
	const struct rpcrdma_opts o = *opts;
	struct rpcrdma_cm_id *id = NULL;
	struct rpc_cm_ev ev;
	int rc;

	struct rpcrdma_clnt *c = clnt_alloc(prog, vers);
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	c->owns_xprt = true;
	rc = rpcrdma_rpc_dev_open(&o, &c->rd);
	if (rc < 0)
		goto fail;
	const struct rpcrdma_provider_ops *ops = c->rd.ops;
	rc = ops->create_id(c->rd.ch, c, &id);
	if (rc < 0)
		goto fail;
	rc = ops->resolve(id, (struct sockaddr *)ss, sl);
	if (rc < 0)
		goto fail;
	char key[sizeof c->x->peer_key];
	peer_key(ss, key, sizeof key);
	rc = rpcrdma_rpc_xprt_create(&c->rd, &o, false,
				     rpcrdma_rpc_v1_server_known(key), id, &c->x);
	if (rc < 0)
		goto fail;
	id = NULL; /* the connection owns it */
	memcpy(c->x->peer_key, key, sizeof key);
	rpcrdma_rpc_xprt_set_peer(c->x, (struct sockaddr *)ss, sl);
	rpcrdma_rpc_trace("%s: connecting (%s provider, prog %#x vers %u)",
			  c->x->name, o.provider, prog, vers);
	uint8_t pd[16];
	int pl = rpcrdma_rpc_xprt_pdata(c->x, pd, sizeof(pd));
	if (pl < 0) {
		rc = pl;
		goto fail;
	}
	/* RFC 8797 §4: our inline sizes and remote invalidation go in the
	 * connect private data. */
	struct rpcrdma_conn_param cp = {
		.private_data = pd, .private_data_len = (uint8_t)pl,
		.responder_resources = (uint8_t)c->x->ird,
		.initiator_depth = (uint8_t)c->x->ord,
	};
	rc = ops->connect(c->x->id, &cp);
	if (rc < 0)
		goto fail;
	rc = rpcrdma_rpc_wait_cm(&c->rd, (int)o.connect_timeout_ms + 1000, &ev);
	if (rc < 0) {
		rpcrdma_rpc_trace("%s: no answer in %u ms", c->x->name,
				  o.connect_timeout_ms + 1000);
		goto fail;
	}
	if (ev.type != RPCRDMA_CM_EVENT_ESTABLISHED) {
		rc = cm_to_err(&ev);
		char why[RPC_REJECT_TEXT_MAX + 1];
		/* A server of ours says why it refused (reject.c). */
		if (ev.type == RPCRDMA_CM_EVENT_REJECTED &&
		    rpcrdma_rpc_reject_reason(ev.pdata, ev.pdata_len, why,
					      sizeof why))
			rpcrdma_rpc_trace("%s: refused by the server: %s",
					  c->x->name, why);
		else
			rpcrdma_rpc_trace("%s: %s: %s", c->x->name,
					  rpcrdma_rpc_cm_event_name(ev.type),
					  rpcrdma_strerror(rc));
		goto fail;
	}
	rpcrdma_rpc_trace("%s: established", c->x->name);
	/* Our ORD is bounded by the IRD the peer offered. */
	uint32_t ord = c->x->ord;
	if (ev.ird && ev.ird < ord)
		ord = ev.ird;
	rc = rpcrdma_rpc_loop_init(&c->loop, &c->rd, clnt_on_cm, clnt_on_round,
				   c);
	if (rc < 0)
		goto fail;
	c->loop.busy_poll_us = o.busy_poll_us;
	c->x->loop = &c->loop;
	c->loop.xprts = c->x;
	rc = rpcrdma_rpc_loop_add(&c->loop, c->x);
	if (rc < 0)
		goto fail;
	rc = rpcrdma_rpc_xprt_established(c->x, ev.pdata_len ? ev.pdata : NULL,
					  ev.pdata_len, ord);
	if (rc < 0)
		goto fail;
	rc = rpcrdma_rpc_loop_start(&c->loop);
	if (rc < 0)
		goto fail;
	c->stat_src = (struct rpc_stat_src){
		.kind = RPCRDMA_STATX_CLIENT, .obj = c, .loop = &c->loop,
		.total = clnt_total, .prog = prog, .vers = vers,
	};
	memcpy(c->stat_src.name, c->x->name, sizeof c->stat_src.name);
	snprintf(c->stat_src.provider, sizeof c->stat_src.provider, "%s",
		 o.provider);
	rpcrdma_rpc_stats_register(&c->stat_src);
	c->exported = true;
	*out = c;
	return 0;
fail:
	if (id)
		c->rd.ops->destroy_id(id);
	rpcrdma_clnt_destroy(c);
	return rc;
}

int rpcrdma_rpc_clnt_on_xprt(struct rpc_xprt *x, uint32_t prog, uint32_t vers,
			     struct rpcrdma_clnt **out)
{
	struct rpcrdma_clnt *c = clnt_alloc(prog, vers);
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_lock(&x->lock);
	if (x->dead) {
		pthread_mutex_unlock(&x->lock);
		free_hdr_tails(c);
		pthread_mutex_destroy(&c->cred_lock);
		free(c);
		return RPCRDMA_ERR_DISCONNECTED;
	}
	x->refs++;
	pthread_mutex_unlock(&x->lock);
	c->x = x;
	*out = c;
	return 0;
}

RPCRDMA_EXPORT void rpcrdma_clnt_destroy(struct rpcrdma_clnt *c)
{
	struct rpc_evbuf b = RPC_EVBUF_INIT;

	if (!c)
		return;
	struct rpc_xprt *x = c->x;
	if (x) {
		/* Every call of this handle completes now, exactly once. */
		pthread_mutex_lock(&x->lock);
		rpcrdma_rpc_calls_fail_locked(x, RPCRDMA_ERR_CANCELLED, 0, c, &b);
		rpcrdma_rpc_xprt_unlock_deliver(x, &b);
	}
	if (!c->owns_xprt) {
		if (x)
			rpcrdma_rpc_xprt_put(x);
		free_hdr_tails(c);
		pthread_mutex_destroy(&c->cred_lock);
		free(c);
		return;
	}
	if (c->exported)
		rpcrdma_rpc_stats_unregister(&c->stat_src);
	if (x) {
		pthread_mutex_lock(&x->lock);
		x->no_reconnect = true;
		pthread_mutex_unlock(&x->lock);
	}
	rpcrdma_rpc_loop_stop(&c->loop);
	if (x) {
		/* Callers woken by the cancellation above leave; nothing may
		 * still poll the CQ or sleep on it when it goes. */
		pthread_mutex_lock(&x->lock);
		rpcrdma_rpc_xprt_quiesce_locked(x);
		pthread_mutex_unlock(&x->lock);
	}
	if (x && x->connected && !x->dead) {
		/* Orderly close: wait (briefly) for DISCONNECTED so the peer
		 * sees the end before the QP goes. */
		struct rpc_cm_ev ev;
		rpcrdma_rpc_trace("%s: closing", x->name);
		c->rd.ops->disconnect(x->id);
		uint64_t end = rpcrdma_rpc_now_ms() + 1000;
		while (rpcrdma_rpc_now_ms() < end &&
		       rpcrdma_rpc_wait_cm(&c->rd, 100, &ev) == 0)
			if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED &&
			    ev.id == x->id)
				break;
	}
	if (x) {
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_CANCELLED);
		if (x->disp) {
			rpcrdma_rpc_disp_destroy(x->disp);
			x->disp = NULL;
		}
		rpcrdma_rpc_xprt_destroy(x);
	}
	if (c->loop.wakefd >= 0)
		rpcrdma_rpc_loop_fini(&c->loop);
	rpcrdma_rpc_dev_close(&c->rd);
	free_hdr_tails(c);
	pthread_mutex_destroy(&c->cred_lock);
	free(c);
}

/* The client's incoming-call dispatcher (reverse direction), created on
 * first use.  NULL when out of memory. */
static struct rpc_disp *clnt_disp(struct rpcrdma_clnt *c)
{
	struct rpc_xprt *x = c->x;
	pthread_mutex_lock(&x->lock);
	if (!x->disp)
		x->disp = rpcrdma_rpc_disp_create(x->opts.workers);
	struct rpc_disp *d = x->disp;
	/* Calls may come at any time now: the loop watches for them. */
	rpcrdma_rpc_xprt_need_attention_locked(x);
	pthread_mutex_unlock(&x->lock);
	return d;
}

RPCRDMA_EXPORT int rpcrdma_clnt_register(struct rpcrdma_clnt *c,
					 uint32_t prog, uint32_t vers,
					 uint32_t proc,
					 rpcrdma_svc_handler handler,
					 void *arg, unsigned flags)
{
	if (!c || !handler || !c->owns_xprt)
		return RPCRDMA_ERR_INVAL;
	struct rpc_disp *d = clnt_disp(c);
	if (!d)
		return RPCRDMA_ERR_NOMEM;
	return rpcrdma_rpc_disp_register(d, prog, vers, proc, handler, arg, flags);
}

RPCRDMA_EXPORT int rpcrdma_clnt_register_any(struct rpcrdma_clnt *c,
					     uint32_t prog, uint32_t vers,
					     rpcrdma_svc_handler handler,
					     void *arg)
{
	if (!c || !handler || !c->owns_xprt)
		return RPCRDMA_ERR_INVAL;
	struct rpc_disp *d = clnt_disp(c);
	if (!d)
		return RPCRDMA_ERR_NOMEM;
	return rpcrdma_rpc_disp_register(d, prog, vers, 0, handler, arg,
					 RPCRDMA_ULB_DDP_RESULT |
						 RPCRDMA_RPC_REG_ANY_PROC);
}

RPCRDMA_EXPORT int rpcrdma_clnt_stats_sized(struct rpcrdma_clnt *c,
					    struct rpcrdma_stats *s,
					    size_t size)
{
	struct rpcrdma_stats all;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	memset(&all, 0, sizeof(all));
	rpcrdma_rpc_xprt_add_stats(c->x, &all);
	rpcrdma_rpc_reg_cache_stats(c->x->rd->cache, &all.reg_cache_hits,
				    &all.reg_cache_misses);
	return rpcrdma_rpc_stats_out(&all, s, size);
}
