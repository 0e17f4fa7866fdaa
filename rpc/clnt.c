/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The RPC client (RFC 5531 §9 call side): the public client API, the RPC
 * call header (encoded into a call record, call.c, which takes the call
 * from there), credentials, connecting and reverse-direction handles.
 *
 * A synchronous caller's memory is borrowed, not copied: the record
 * references its DDP-eligible pieces and large ones (build_call); the
 * caller waits for its own outcome (call.c, progress.c), which is decoded
 * straight into its struct rpcrdma_reply.
 *
 * The client loops: every client connection of the process is attended
 * by one of a few event-loop threads ("rpcrdma-clntN"), never one of its
 * own: opts.threads of the client that makes them (RPCRDMA_THREADS; 0:
 * one per CPU the process may run on), made on first use, each started
 * when a client first goes to it, all stopped when the last client is
 * destroyed.  A new client goes to the loop with the fewest.  Each client
 * keeps its own device objects and CM event channel (rpc_dev: its
 * options may differ from its neighbours', and it waits for its own
 * connect and disconnect events on the channel while the loop does not
 * watch it); its loop watches the channel's fd beside the CQ fds.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/usdt.h"
#include "rpc/call.h"
#include "rpc/rpc_internal.h"
#include "rpc/stats_export.h"
#include "rpcrdma/export.h"
#include "wire/auth.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

struct rpcrdma_clnt {
	struct rpc_xprt *x;
	bool owns_xprt;                /* false: reverse-direction handle */
	uint32_t prog, vers;
	/* Owning client only. */
	struct rpc_dev rd;
	struct clnt_loops *set;        /* the loops it joined (clnt_join) */
	struct rpc_loop *loop;         /* the one attending it, or NULL */
	struct rpc_cm_src cm;          /* rd's channel, as the loop sees it */
	struct rpc_loop_req leave;     /* clnt_leave / clnt_leave_end */
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
		size_t pad = rpcrdma_xdr_pad(len);
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
	struct rpc_call *c = rpcrdma_rpc_call_alloc(total);
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
	c->state = CALL_QUEUED;
	c->borrowed = borrow || res;
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
				rpcrdma_rpc_call_free(c);
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
			rpcrdma_rpc_call_free(c);
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
			rpcrdma_rpc_call_free(c);
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

static int call_async(struct rpcrdma_clnt *cl, const struct rpcrdma_call *call,
		      const struct rpcrdma_iov *res, unsigned nres,
		      rpcrdma_call_cb cb, void *arg)
{
	struct rpc_call *c;

	if (!cl || !cb)
		return RPCRDMA_ERR_INVAL;
	int cancel = rpcrdma_rpc_cancel_hold();
	int rc = build_call(cl, call, cl->x->opts.borrow_args || res, res,
			    nres, &c);
	if (rc == 0)
		rc = rpcrdma_rpc_call_async(cl->x, c, cb, arg);
	rpcrdma_rpc_cancel_restore(cancel);
	return rc;
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
	struct rpc_call *c;

	if (!rep)
		return RPCRDMA_ERR_INVAL;
	memset(rep, 0, sizeof(*rep));
	if (!cl) {
		rep->status = RPCRDMA_ERR_INVAL;
		return rep->status;
	}
	/* The caller waits: its memory is borrowed, not copied. */
	int cancel = rpcrdma_rpc_cancel_hold();
	int rc = build_call(cl, call, true, res, nres, &c);
	if (rc < 0)
		rep->status = rc;
	else
		rc = rpcrdma_rpc_call_sync(cl->x, c, rep);
	rpcrdma_rpc_cancel_restore(cancel);
	return rc;
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
		rpcrdma_rpc_call_free(rep->priv);
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

bool rpcrdma_rpc_clnt_cred_is(struct rpcrdma_clnt *c, uint32_t flavor,
			      const void *body, size_t len)
{
	/* The current header tail, read as build_call reads it: published
	 * whole and never changed (set_hdr_tail). */
	const struct hdr_tail *t = atomic_load(&c->tail);
	return t->len == 16 + len + rpcrdma_xdr_pad(len) &&
	       rpcrdma_be32_get(t->bytes) == flavor &&
	       rpcrdma_be32_get(t->bytes + 4) == len &&
	       (len == 0 || memcmp(t->bytes + 8, body, len) == 0);
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

/* After each tick of a client's connection on its loop: a reconnection
 * that is due starts here, where no CM event is held unacknowledged
 * (destroying an id waits for those); and the client's registered
 * buffers unused for a while go back to the system. */
static void clnt_ticked(struct rpc_xprt *x, uint64_t now)
{
	rpcrdma_rpc_xprt_reconnect_due(x, now);
	rpcrdma_rpc_bufpool_trim(x->rd->pool, now);
}

/* ---------------------------------------------------------------------
 * The client loops of the process
 */
struct clnt_loops {
	pid_t pid;                     /* the process that made them (fork) */
	unsigned users;                /* clients joined and not yet gone */
	unsigned n;
	struct rpc_loop *loops;
	unsigned *nconns;              /* clients on each */
};

/* Guards clnt_set, every set's users and nconns, the starting of its
 * loops, and each loop's list of connections (their xprts_lock). */
static pthread_mutex_t clnt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct clnt_loops *clnt_set;
static pthread_once_t clnt_fork_once = PTHREAD_ONCE_INIT;

/* A forked child has none of its parent's loop threads: it forgets the
 * set (a client it makes gets loops of its own).  The lock is held over
 * fork so the child finds it consistent. */
static void clnt_fork_prepare(void)
{
	pthread_mutex_lock(&clnt_lock);
}

static void clnt_fork_parent(void)
{
	pthread_mutex_unlock(&clnt_lock);
}

static void clnt_fork_child(void)
{
	clnt_set = NULL;
	pthread_mutex_unlock(&clnt_lock);
}

static void clnt_fork_register(void)
{
	pthread_atfork(clnt_fork_prepare, clnt_fork_parent, clnt_fork_child);
}

/* Stops (joins) and frees the loops: from a thread that is none of
 * them, once no client is on them. */
static void loops_free(struct clnt_loops *s)
{
	for (unsigned g = 0; g < s->n; g++)
		if (s->loops[g].wakefd >= 0)
			rpcrdma_rpc_loop_fini(&s->loops[g]);
	free(s->loops);
	free(s->nconns);
	free(s);
}

static void *loops_end_main(void *arg)
{
	loops_free(arg);
	return NULL;
}

/* With clnt_lock held: a set of n loops, none started. */
static struct clnt_loops *loops_new(unsigned n)
{
	struct clnt_loops *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = getpid();
	s->loops = calloc(n, sizeof(*s->loops));
	s->nconns = calloc(n, sizeof(*s->nconns));
	if (!s->loops || !s->nconns) {
		free(s->loops);
		free(s->nconns);
		free(s);
		return NULL;
	}
	for (unsigned g = 0; g < n; g++)
		s->loops[g].wakefd = -1;
	s->n = n;
	for (unsigned g = 0; g < n; g++) {
		struct rpc_loop *l = &s->loops[g];
		if (rpcrdma_rpc_loop_init(l, NULL, NULL, NULL, s) < 0) {
			loops_free(s);
			return NULL;
		}
		l->xprts_lock = &clnt_lock;
		l->on_ticked = clnt_ticked;
		l->busy_poll_us = -1;
		snprintf(l->name, sizeof l->name, "rpcrdma-clnt%u", g % 1000);
	}
	return s;
}

/* A client is gone from its loops: the last one stops them.  On one of
 * their threads (a client destroyed from a callback ends there) they
 * cannot be joined: a thread of its own does it; if none can be made
 * the set stays, idle, for the next client. */
static void loops_put(struct clnt_loops *s)
{
	pthread_mutex_lock(&clnt_lock);
	if (--s->users > 0) {
		pthread_mutex_unlock(&clnt_lock);
		return;
	}
	if (rpcrdma_rpc_loop_self()) {
		pthread_attr_t a;
		pthread_t t;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		int rc = pthread_create(&t, &a, loops_end_main, s);
		pthread_attr_destroy(&a);
		if (rc == 0 && clnt_set == s)
			clnt_set = NULL;
		pthread_mutex_unlock(&clnt_lock);
		return;
	}
	if (clnt_set == s)
		clnt_set = NULL;
	pthread_mutex_unlock(&clnt_lock);
	loops_free(s);
}

/* The largest busy-poll time of l's clients, and how many have it
 * (with clnt_lock held). */
static void loop_busy_update(struct rpc_loop *l)
{
	int us = -1;
	unsigned n = 0;
	for (struct rpc_xprt *x = l->xprts; x; x = x->next)
		if (x->opts.busy_poll_us > us) {
			us = x->opts.busy_poll_us;
			n = 1;
		} else if (x->opts.busy_poll_us == us) {
			n++;
		}
	l->busy_poll_us = us;
	l->busy_poll_at_max = n;
}

/* c (connected) goes to the loop with the fewest clients of the
 * process's set, made or started if need be: from now on that loop
 * attends its connection and its CM channel.  Once anything is
 * registered c->loop is set, and destroy takes it off again. */
static int clnt_join(struct rpcrdma_clnt *c)
{
	struct rpc_xprt *x = c->x;
	c->cm = (struct rpc_cm_src){.rd = &c->rd, .on_cm = clnt_on_cm,
				    .owner = c, .x = x};
	pthread_once(&clnt_fork_once, clnt_fork_register);
	pthread_mutex_lock(&clnt_lock);
	struct clnt_loops *s = clnt_set;
	if (!s) {
		s = loops_new(rpcrdma_rpc_threads(&x->opts));
		if (!s) {
			pthread_mutex_unlock(&clnt_lock);
			return RPCRDMA_ERR_SYSTEM;
		}
		clnt_set = s;
	}
	/* The fewest; among equals a loop already running. */
	unsigned g = 0;
	for (unsigned k = 1; k < s->n; k++)
		if (s->nconns[k] < s->nconns[g] ||
		    (s->nconns[k] == s->nconns[g] && s->loops[k].started &&
		     !s->loops[g].started))
			g = k;
	struct rpc_loop *l = &s->loops[g];
	int rc = l->started ? 0 : rpcrdma_rpc_loop_start(l);
	if (rc < 0) {
		pthread_mutex_unlock(&clnt_lock);
		return rc;
	}
	s->users++;
	s->nconns[g]++;
	c->set = s;
	c->loop = l;
	pthread_mutex_lock(&x->lock);
	x->loop = l;
	pthread_mutex_unlock(&x->lock);
	/* Listed first: the loop may tick it, attend its CQ and hand its
	 * CM events to clnt_on_cm as soon as each is registered. */
	rpcrdma_rpc_loop_link_locked(l, x);
	if (x->opts.busy_poll_us > l->busy_poll_us) {
		l->busy_poll_us = x->opts.busy_poll_us;
		l->busy_poll_at_max = 1;
	} else if (x->opts.busy_poll_us == l->busy_poll_us) {
		l->busy_poll_at_max++;
	}
	pthread_mutex_unlock(&clnt_lock);
	rc = rpcrdma_rpc_loop_watch_cm(l, &c->cm);
	if (rc == 0)
		rc = rpcrdma_rpc_loop_add(l, x);
	return rc;
}

/* On c's loop's thread, between two passes: the loop lets go of c (its
 * list, its CQ fd, its CM channel), so that no pass can use them again
 * and c's thread may tear them down. */
static void clnt_detach(struct rpc_loop *l, struct rpcrdma_clnt *c)
{
	struct rpc_xprt *x = c->x;
	struct clnt_loops *s = c->set;
	pthread_mutex_lock(&clnt_lock);
	/* Neither step walks the loop's other clients unless x was the
	 * last with the largest busy-poll time: a process with thousands
	 * of clients destroys them one by one (docs/SCALE.md). */
	rpcrdma_rpc_loop_unlink_locked(x);
	s->nconns[l - s->loops]--;
	if (x->opts.busy_poll_us == l->busy_poll_us &&
	    (!l->busy_poll_at_max || --l->busy_poll_at_max == 0))
		loop_busy_update(l);
	pthread_mutex_unlock(&clnt_lock);
	rpcrdma_rpc_loop_unwatch_cm(l, &c->cm);
	rpcrdma_rpc_loop_remove(l, x);
	pthread_mutex_lock(&x->lock);
	x->loop = NULL;
	pthread_mutex_unlock(&x->lock);
	c->loop = NULL;
	rpcrdma_rpc_loop_reaped(l); /* its memory goes: trim after */
}

static void clnt_teardown(struct rpcrdma_clnt *c);

static void clnt_leave(struct rpc_loop *l, struct rpc_loop_req *r)
{
	clnt_detach(l, (struct rpcrdma_clnt *)((char *)r -
					       offsetof(struct rpcrdma_clnt,
							leave)));
}

/* A client destroyed on a loop thread ends on its loop's thread. */
static void clnt_leave_end(struct rpc_loop *l, struct rpc_loop_req *r)
{
	struct rpcrdma_clnt *c =
		(struct rpcrdma_clnt *)((char *)r -
					offsetof(struct rpcrdma_clnt, leave));
	clnt_detach(l, c);
	clnt_teardown(c);
}

static struct rpcrdma_clnt *clnt_alloc(uint32_t prog, uint32_t vers)
{
	struct rpcrdma_clnt *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->prog = prog;
	c->vers = vers;
	pthread_mutex_init(&c->cred_lock, NULL);
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

static int clnt_create(const char *addr, uint32_t prog, uint32_t vers,
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
	/* A connection attempt refused with the local address in use is
	 * worth another with a new local port (RPC_PORT_PICKS). */
	for (int attempt = 0;; attempt++) {
		rc = clnt_connect(&ss, sl, prog, vers, &o, out);
		if (rc != RPCRDMA_ERR_BUSY || attempt + 1 == RPC_PORT_PICKS)
			return rc;
		rpcrdma_rpc_trace("%s: local address in use, trying again",
				  addr);
	}
}

/* A client's connection is Requester and Responder (RFC 8167). */
static const struct rpc_role *const roles[RPC_ROLES] = {
	[RPC_REQUESTER] = &rpcrdma_rpc_requester_role,
	[RPC_RESPONDER] = &rpcrdma_rpc_responder_role,
};

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
	rpcrdma_rpc_v1_server_key(ss, key, sizeof key);
	rc = rpcrdma_rpc_xprt_create(&c->rd, &o, false,
				     rpcrdma_rpc_v1_server_known(key), id, roles,
				     &c->x);
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
	rc = clnt_join(c);
	if (rc < 0)
		goto fail;
	rc = rpcrdma_rpc_xprt_established(c->x, ev.pdata_len ? ev.pdata : NULL,
					  ev.pdata_len, ord);
	if (rc < 0)
		goto fail;
	c->stat_src = (struct rpc_stat_src){
		.kind = RPCRDMA_STATX_CLIENT, .obj = c, .loop = c->loop,
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

RPCRDMA_EXPORT int rpcrdma_clnt_create(const char *addr, uint32_t prog,
				       uint32_t vers,
				       const struct rpcrdma_opts *opts,
				       struct rpcrdma_clnt **out)
{
	/* It waits for the connection (rdma_cm events, a v2 opener). */
	int cancel = rpcrdma_rpc_cancel_hold();
	int rc = clnt_create(addr, prog, vers, opts, out);
	rpcrdma_rpc_cancel_restore(cancel);
	return rc;
}

static void clnt_destroy(struct rpcrdma_clnt *c)
{
	if (!c)
		return;
	struct rpc_xprt *x = c->x;
	if (x) {
		/* Every call of this handle completes now, exactly once. */
		struct rpc_work w;
		rpc_work_init(&w);
		pthread_mutex_lock(&x->lock);
		rpcrdma_rpc_calls_fail_locked(x, RPCRDMA_ERR_CANCELLED, c, &w);
		rpcrdma_rpc_xprt_unlock_run(x, &w);
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
	if (c->loop && c->set->pid != getpid()) {
		/* A forked child's copy: its loop thread is not here. */
		c->loop = NULL;
		c->set = NULL;
	}
	if (c->loop && rpcrdma_rpc_loop_self()) {
		/* On a loop thread (a callback, a handler): that loop is in
		 * the middle of a pass, and a loop never waits for another
		 * (which may be waiting for it).  c's loop ends it. */
		c->leave.fn = clnt_leave_end;
		rpcrdma_rpc_loop_post(c->loop, &c->leave);
		return;
	}
	if (c->loop) {
		c->leave.fn = clnt_leave;
		rpcrdma_rpc_loop_call(c->loop, &c->leave);
	}
	clnt_teardown(c);
}

RPCRDMA_EXPORT void rpcrdma_clnt_destroy(struct rpcrdma_clnt *c)
{
	/* It waits for the loop to let the connection go, and for the
	 * callers still inside it to leave. */
	int cancel = rpcrdma_rpc_cancel_hold();
	clnt_destroy(c);
	rpcrdma_rpc_cancel_restore(cancel);
}

/* What is left of destroying an owning client once no loop attends it. */
static void clnt_teardown(struct rpcrdma_clnt *c)
{
	struct rpc_xprt *x = c->x;
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
		pthread_mutex_lock(&x->lock); /* qa.serial_lock */
		c->rd.ops->disconnect(x->id);
		pthread_mutex_unlock(&x->lock);
		uint64_t end = rpcrdma_rpc_now_ms() + 1000;
		while (rpcrdma_rpc_now_ms() < end &&
		       rpcrdma_rpc_wait_cm(&c->rd, 100, &ev) == 0)
			if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED &&
			    ev.id == x->id)
				break;
	}
	if (x) {
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_CANCELLED);
		pthread_mutex_lock(&x->lock);
		struct rpc_disp *d = rpcrdma_rpc_disp_of_locked(x);
		rpcrdma_rpc_disp_attach_locked(x, NULL);
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_disp_destroy(d);
		rpcrdma_rpc_xprt_destroy(x);
	}
	rpcrdma_rpc_dev_close(&c->rd);
	struct clnt_loops *s = c->set;
	free_hdr_tails(c);
	pthread_mutex_destroy(&c->cred_lock);
	free(c);
	if (s)
		loops_put(s);
}

/* The client's incoming-call dispatcher (reverse direction), created on
 * first use.  NULL when out of memory. */
static struct rpc_disp *clnt_disp(struct rpcrdma_clnt *c)
{
	struct rpc_xprt *x = c->x;
	pthread_mutex_lock(&x->lock);
	struct rpc_disp *d = rpcrdma_rpc_disp_of_locked(x);
	if (!d) {
		d = rpcrdma_rpc_disp_create(x->opts.workers);
		rpcrdma_rpc_disp_attach_locked(x, d);
	}
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
