/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Incoming calls (RFC 5531 §9 reply side): decode the call header, check
 * the credential, find the handler, run it, send the reply.  Used by the
 * server for forward calls and by a client for reverse direction calls
 * (RFC 8167): every connection is both Requester and Responder.
 *
 * Where handlers run: on the thread that took the call from the
 * connection (the loop, a synchronous caller driving the connection, or
 * svc_run() for a libtirpc server), as libtirpc runs its handlers, unless
 * the server was given a worker pool (opts.workers); a handler that blocks
 * then holds up only its worker.
 *
 * Answers given without a handler (RFC 5531 §9):
 *   rpcvers != 2                  MSG_DENIED RPC_MISMATCH (2, 2)
 *   AUTH_SYS body malformed       MSG_DENIED AUTH_ERROR AUTH_BADCRED
 *   other unknown flavor          MSG_DENIED AUTH_ERROR AUTH_REJECTEDCRED
 *   program not registered        PROG_UNAVAIL
 *   version not registered        PROG_MISMATCH (lowest, highest)
 *   NULL procedure (proc 0)       SUCCESS, no results
 *   procedure not registered      PROC_UNAVAIL
 *   header undecodable            GARBAGE_ARGS
 * A request (one per Responder slot of its connection, made with it)
 * holds a reference on its connection until its reply is sent
 * (REPLY_SENT) or could not be (submit_reply failed): the engine keeps the
 * call's bytes valid until then, so handlers read them in place.
 */
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/pages.h"
#include "common/slab.h"
#include "common/usdt.h"
#include "rpc/rpc_internal.h"
#include "rpcrdma/export.h"
#include "wire/auth.h"
#include "wire/rpc_msg.h"
#include "wire/xdr.h"

/* Registrations: a table replaced whole on each registration (rare), so
 * finding a handler takes no lock; old tables live until destroy. */
struct reg_table {
	struct reg_table *older;
	size_t n;
	struct rpc_reg r[];
};

struct rpc_disp {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	_Atomic(struct reg_table *) table;
	struct rpcrdma_svc_req *qhead, *qtail; /* for the workers */
	pthread_t *thr;
	unsigned nthr;
	bool stop;
};

struct req_block {
	struct req_block *next;
	max_align_t data[];
};

/* The Responder side's state on one connection, with a request per
 * Responder slot (call_id).  Slot 0's is in the record itself: the
 * engine hands slot 0 out first and takes a freed slot back first
 * (engine/responder.c), so a connection with one call at a time uses
 * only that one, and the record shares a slab page with another
 * connection's instead of holding a page of its own (docs/SCALE.md).
 * The others are pages, touched only if calls overlap. */
struct rpc_responder {
	struct rpc_disp *disp;        /* NULL: no calls served */
	uint32_t nreqs;               /* call_ids below it have a request */
	struct rpcrdma_svc_req *more; /* call_id 1 and up, nreqs - 1 */
	struct rpcrdma_svc_req first; /* call_id 0 */
};

/* A connection's Responder state, several to a page (common/slab.h). */
static struct rpcrdma_slab responder_slab = RPCRDMA_SLAB(struct rpc_responder);

static struct rpc_responder *resp_of(struct rpc_xprt *x)
{
	return x->up[RPC_RESPONDER].state;
}

/* ---------------------------------------------------------------------
 * Registrations
 */
static void *worker_main(void *arg);

struct rpc_disp *rpcrdma_rpc_disp_create(unsigned workers)
{
	struct rpc_disp *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cv, NULL);
	atomic_init(&d->table, NULL);
	if (!workers)
		return d;
	d->thr = calloc(workers, sizeof(*d->thr));
	if (!d->thr) {
		rpcrdma_rpc_disp_destroy(d);
		return NULL;
	}
	for (unsigned i = 0; i < workers; i++) {
		if (pthread_create(&d->thr[i], NULL, worker_main, d) != 0)
			break;
		d->nthr++;
	}
	if (!d->nthr) {
		rpcrdma_rpc_disp_destroy(d);
		return NULL;
	}
	return d;
}

void rpcrdma_rpc_disp_destroy(struct rpc_disp *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < d->nthr; i++)
		pthread_join(d->thr[i], NULL);
	free(d->thr);
	struct reg_table *t = atomic_load(&d->table);
	while (t) {
		struct reg_table *o = t->older;
		free(t);
		t = o;
	}
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int rpcrdma_rpc_disp_register(struct rpc_disp *d, uint32_t prog, uint32_t vers,
			      uint32_t proc, rpcrdma_svc_handler h, void *arg,
			      unsigned flags)
{
	const unsigned any = RPCRDMA_RPC_REG_ANY_PROC | RPCRDMA_RPC_REG_ANY_PROG;
	if (!d || !h)
		return RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&d->lock);
	struct reg_table *t = atomic_load(&d->table);
	size_t n = t ? t->n : 0;
	for (size_t i = 0; i < n; i++)
		if (t->r[i].prog == prog && t->r[i].vers == vers &&
		    t->r[i].proc == proc &&
		    (t->r[i].flags & any) == (flags & any)) {
			pthread_mutex_unlock(&d->lock);
			return RPCRDMA_ERR_BUSY;
		}
	struct reg_table *nt = malloc(sizeof(*nt) + (n + 1) * sizeof(nt->r[0]));
	if (!nt) {
		pthread_mutex_unlock(&d->lock);
		return RPCRDMA_ERR_NOMEM;
	}
	nt->older = t;
	nt->n = n + 1;
	if (n)
		memcpy(nt->r, t->r, n * sizeof(nt->r[0]));
	nt->r[n] = (struct rpc_reg){prog, vers, proc, h, arg, flags};
	atomic_store(&d->table, nt);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* The requests of call_ids 1 and up, as long-lived as the connection:
 * pages, given back when it goes (common/pages.h).  Left as the pages
 * came (zero, not resident): incoming_locked sets a request up when its
 * slot first takes a call, so a connection that never has two calls at
 * once holds none of them (63 of 1.7 KiB at 32 credits). */
static struct rpcrdma_svc_req *reqs_create(uint32_t n)
{
	return rpcrdma_pages_array(n, sizeof(struct rpcrdma_svc_req));
}

static void reqs_free(struct rpcrdma_svc_req *r, uint32_t n)
{
	rpcrdma_pages_free(r, n * sizeof(*r));
}

/* The request of call_id id (below q->nreqs). */
static struct rpcrdma_svc_req *req_of(struct rpc_responder *q, uint32_t id)
{
	return id ? &q->more[id - 1] : &q->first;
}

/* ---------------------------------------------------------------------
 * Replies
 */
static void blocks_free(struct req_block *b)
{
	while (b) {
		struct req_block *n = b->next;
		free(b);
		b = n;
	}
}

/* With x->lock held: the request is over (its reply sent, or it never
 * will be): its memory goes, and its reference on the connection. */
static void req_release_locked(struct rpcrdma_svc_req *r)
{
	struct rpc_xprt *x = r->x;
	blocks_free(r->blocks);
	r->blocks = NULL;
	r->x = NULL;
	x->refs--;
	if (rpc_xprt_reapable_locked(x) && x->loop)
		rpcrdma_rpc_loop_wake(x->loop); /* it may be reaped now */
}

static size_t encode_accepted_to(uint8_t *buf, size_t cap, uint32_t xid,
				 uint32_t stat, uint32_t low, uint32_t high)
{
	struct rpcrdma_rpc_msg m;
	memset(&m, 0, sizeof(m));
	m.xid = xid;
	m.mtype = RPCRDMA_RPC_REPLY;
	m.reply.stat = RPCRDMA_RPC_MSG_ACCEPTED;
	m.reply.accepted.verf = rpcrdma_auth_none();
	m.reply.accepted.stat = stat;
	m.reply.accepted.mismatch.low = low;
	m.reply.accepted.mismatch.high = high;
	int hl = rpcrdma_rpc_msg_encode(&m, buf, cap);
	return hl > 0 ? (size_t)hl : 0;
}

/* An accepted reply header with an AUTH_NONE verifier: six words, or
 * eight for PROG_MISMATCH (RFC 5531 §9), written directly. */
static size_t encode_accepted(struct rpcrdma_svc_req *r, uint32_t stat,
			      uint32_t low, uint32_t high)
{
	if (stat == RPCRDMA_RPC_PROG_MISMATCH)
		return encode_accepted_to(r->hdr, sizeof(r->hdr), r->xid, stat,
					  low, high);
	uint8_t *p = r->hdr;
	rpcrdma_be32_put(p, r->xid);
	rpcrdma_be32_put(p + 4, RPCRDMA_RPC_REPLY);
	rpcrdma_be32_put(p + 8, RPCRDMA_RPC_MSG_ACCEPTED);
	rpcrdma_be32_put(p + 12, RPCRDMA_AUTH_NONE);
	rpcrdma_be32_put(p + 16, 0);
	rpcrdma_be32_put(p + 20, stat);
	return 24;
}

static size_t encode_denied(struct rpcrdma_svc_req *r, uint32_t stat,
			    uint32_t auth_stat)
{
	struct rpcrdma_rpc_msg m;
	memset(&m, 0, sizeof(m));
	m.xid = r->xid;
	m.mtype = RPCRDMA_RPC_REPLY;
	m.reply.stat = RPCRDMA_RPC_MSG_DENIED;
	m.reply.rejected.stat = stat;
	m.reply.rejected.mismatch.low = RPCRDMA_RPC_VERS;
	m.reply.rejected.mismatch.high = RPCRDMA_RPC_VERS;
	m.reply.rejected.auth_stat = auth_stat;
	int hl = rpcrdma_rpc_msg_encode(&m, r->hdr, sizeof(r->hdr));
	return hl > 0 ? (size_t)hl : 0;
}

/* Sends the reply: r->hdr (hlen bytes) followed by r->iov[1..niov). */
static void req_finish(struct rpcrdma_svc_req *r, size_t hlen)
{
	struct rpc_xprt *x = r->x;
	struct rpc_work w;

	rpc_work_init(&w);
	if (!r->raw) {
		r->iov[0] = (struct rpcrdma_iov){r->hdr, hlen, false};
		if (!r->niov)
			r->niov = 1;
	}
	struct rpcrdma_reply_req rr = {r->iov, r->niov, r, false};
	pthread_mutex_lock(&x->lock);
	int rc = rpcrdma_engine_submit_reply(x->e, r->call_id, &rr, 0);
	if (rc == RPCRDMA_ERR_INVAL) {
		/* A bad results description from the handler: the call
		 * still gets an answer, SYSTEM_ERR, instead of none. */
		r->raw = false;
		r->iov[0] = (struct rpcrdma_iov){r->hdr, 0, false};
		r->iov[0].len = encode_accepted(r, RPCRDMA_RPC_SYSTEM_ERR, 0, 0);
		rr.nmsg = 1;
		rc = rpcrdma_engine_submit_reply(x->e, r->call_id, &rr, 0);
	}
	if (rc < 0)
		req_release_locked(r); /* no REPLY_SENT will come */
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	/* What the pump queued (the next incoming call, let through by the
	 * slot this reply frees) holds its own reference on x; x itself is
	 * not touched after the unlock: another thread may see the reply
	 * sent and reap it. */
	rpcrdma_rpc_xprt_unlock_run(x, &w);
}

static void answer(struct rpcrdma_svc_req *r, uint32_t stat, uint32_t low,
		   uint32_t high)
{
	r->raw = false;
	r->niov = 1;
	req_finish(r, encode_accepted(r, stat, low, high));
}

/* ---------------------------------------------------------------------
 * Handlers
 */
/* The procedure's Upper-Layer Binding allows no DDP (RFC 8166 §6): every
 * result goes in the Payload stream, so a data item the handler marked
 * ddp needs the XDR roundup padding the transport would otherwise have
 * added (§3.4.4.4).  An item whose length is not a multiple of 4 is
 * copied with its padding (inline pieces must be whole XDR words).
 * False when out of memory. */
static bool inline_all(struct rpcrdma_svc_req *r)
{
	for (unsigned i = r->raw ? 0 : 1; i < r->niov; i++) {
		struct rpcrdma_iov *v = &r->iov[i];
		size_t pad = rpcrdma_xdr_pad(v->len);
		if (v->ddp && pad) {
			uint8_t *p = rpcrdma_svc_req_alloc(r, v->len + pad);
			if (!p)
				return false;
			memcpy(p, v->base, v->len);
			memset(p + v->len, 0, pad);
			v->base = p;
			v->len += pad;
		}
		v->ddp = false;
	}
	return true;
}

/* A handler that replied early (rpcrdma_rpc_req_reply_sync) is over:
 * the request and its engine slot go. */
static void early_over(struct rpcrdma_svc_req *r)
{
	struct rpc_xprt *x = r->x;
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	r->early = false;
	rpcrdma_engine_release_reply(x->e, r->call_id);
	req_release_locked(r);
	/* The slot may have been all that held up a new call. */
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
}

void rpcrdma_rpc_req_count_copied(struct rpcrdma_svc_req *r, uint64_t rx)
{
	if (!r->x || !rx)
		return;
	pthread_mutex_lock(&r->x->lock);
	r->x->ddp_copied_rx += rx;
	pthread_mutex_unlock(&r->x->lock);
}

int rpcrdma_rpc_req_reply_sync(struct rpcrdma_svc_req *r,
			       const struct rpcrdma_iov *msg, unsigned n)
{
	int rc = rpcrdma_svc_req_reply_raw(r, msg, n);
	if (rc < 0)
		return rc;
	if (!(r->reg.flags & RPCRDMA_ULB_DDP_RESULT) && !inline_all(r))
		return RPCRDMA_ERR_NOMEM;
	struct rpc_xprt *x = r->x;
	struct rpc_wait s = {.w = rpcrdma_rpc_waiter_self()};
	if (!s.w)
		return RPCRDMA_ERR_NOMEM;
	atomic_init(&s.finished, false);
	struct rpc_work w;
	rpc_work_init(&w);
	struct rpcrdma_reply_req rr = {r->iov, r->niov, r, true};
	pthread_mutex_lock(&x->lock);
	r->sent_wait = &s;
	rc = rpcrdma_engine_submit_reply(x->e, r->call_id, &rr, 0);
	if (rc < 0) {
		/* INVAL: nothing happened; DISCONNECTED: the engine freed
		 * the slot and no REPLY_SENT follows. */
		r->sent_wait = NULL;
		r->early = rc == RPCRDMA_ERR_DISCONNECTED;
		pthread_mutex_unlock(&x->lock);
		return rc;
	}
	r->early = true;
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	if (!rpc_work_empty(&w)) {
		pthread_mutex_unlock(&x->lock);
		rpcrdma_rpc_work_run(&w);
		pthread_mutex_lock(&x->lock);
	}
	/* No deadline: it returns once told, and the teller cleared
	 * r->sent_wait. */
	rpcrdma_rpc_xprt_wait_unlock(x, &s);
	return s.status;
}

/* What follows a handler's return (or a deferred request's answer). */
static void handler_done(struct rpcrdma_svc_req *r, enum rpcrdma_svc_stat st)
{
	if (r->early) {
		early_over(r);
		return;
	}
	if (st == RPCRDMA_SVC_GARBAGE_ARGS) {
		answer(r, RPCRDMA_RPC_GARBAGE_ARGS, 0, 0);
		return;
	}
	if (st != RPCRDMA_SVC_OK) {
		answer(r, RPCRDMA_RPC_SYSTEM_ERR, 0, 0);
		return;
	}
	if (r->raw) {
		/* The handler encoded the whole reply, header included
		 * (rpcrdma_svc_req_reply_raw). */
		if (!(r->reg.flags & RPCRDMA_ULB_DDP_RESULT) && !inline_all(r)) {
			answer(r, RPCRDMA_RPC_SYSTEM_ERR, 0, 0);
			return;
		}
		req_finish(r, 0);
		return;
	}
	if (!r->niov)
		r->niov = 1;
	if (!(r->reg.flags & RPCRDMA_ULB_DDP_RESULT) && !inline_all(r)) {
		answer(r, RPCRDMA_RPC_SYSTEM_ERR, 0, 0);
		return;
	}
	req_finish(r, encode_accepted(r, RPCRDMA_RPC_SUCCESS, 0, 0));
}

void rpcrdma_rpc_req_done(struct rpcrdma_svc_req *r, enum rpcrdma_svc_stat st)
{
	handler_done(r, st);
}

static void run_handler(struct rpcrdma_svc_req *r)
{
	enum rpcrdma_svc_stat st = r->reg.h(r, r->reg.arg);
	if (r->reg.flags & RPCRDMA_RPC_REG_DEFER)
		return; /* answered later, rpcrdma_rpc_req_done() */
	handler_done(r, st);
}

static void *worker_main(void *arg)
{
	struct rpc_disp *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->qhead && !d->stop)
			pthread_cond_wait(&d->cv, &d->lock);
		struct rpcrdma_svc_req *r = d->qhead;
		if (!r)
			break; /* stopping and nothing queued */
		d->qhead = r->next;
		if (!d->qhead)
			d->qtail = NULL;
		pthread_mutex_unlock(&d->lock);
		run_handler(r);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---------------------------------------------------------------------
 * Incoming
 */
static int decode_cred(const struct rpcrdma_opaque_auth *a,
		       struct rpcrdma_cred *c)
{
	struct rpcrdma_authsys_parms p;

	c->flavor = RPCRDMA_CRED_AUTH_NONE;
	c->stamp = c->uid = c->gid = c->ngids = 0;
	c->machinename[0] = 0;
	if (a->flavor == RPCRDMA_AUTH_NONE)
		return 0;
	if (a->flavor != RPCRDMA_AUTH_SYS)
		return RPCRDMA_RPC_AUTH_REJECTEDCRED;
	if (rpcrdma_authsys_decode(a, &p) < 0)
		return RPCRDMA_RPC_AUTH_BADCRED;
	c->flavor = RPCRDMA_CRED_AUTH_SYS;
	c->stamp = p.stamp;
	memcpy(c->machinename, p.machinename, p.machinename_len);
	c->machinename[p.machinename_len] = 0;
	c->uid = p.uid;
	c->gid = p.gid;
	c->ngids = p.ngids;
	memcpy(c->gids, p.gids, sizeof(c->gids));
	return 0;
}

static void run_incoming(struct rpc_work_item *it);

/* RPCRDMA_EV_INCOMING_CALL: the request is queued to be dispatched. */
static void incoming_locked(struct rpc_responder *q, struct rpc_xprt *x,
			    const struct rpcrdma_engine_event *ev,
			    struct rpc_work *w)
{
	struct rpcrdma_svc_req *r =
		ev->call_id < q->nreqs ? req_of(q, ev->call_id) : NULL;
	if (!r || r->x) {
		/* The engine hands out call_ids below call_slots, and a slot
		 * comes back only after REPLY_SENT; never seen. */
		rpcrdma_rpc_trace("%s: call %#x on busy slot %u", x->name,
				  ev->xid, ev->call_id);
		return;
	}
	r->call_id = ev->call_id;
	r->x = x;
	r->next = NULL;
	r->xid = ev->xid;
	r->call = ev->call;
	r->call_len = ev->call_len;
	r->pad.align = ev->msgp.align;
	r->pad.thresh = ev->msgp.thresh;
	r->pad.base = ev->msgp.offset;
	r->ddp_items = ev->ddp_items;
	for (unsigned i = 0; i < r->ddp_items; i++) {
		r->ddp_pos[i] = ev->ddp_pos[i];
		r->ddp_len[i] = ev->ddp_len[i];
	}
	r->nwc = ev->write_chunks;
	for (unsigned i = 0; i < r->nwc && i < RPCRDMA_MAX_WRITE_CHUNKS; i++)
		r->wc_len[i] = ev->write_chunk_len[i];
	r->blocks = NULL;
	r->small_used = 0;
	r->niov = 0;
	r->raw = false;
	r->early = false;
	r->sent_wait = NULL;
	/* svcrdma_decode_rqst: XID, the call's length and the room the
	 * caller offered for the reply (Write chunks, a Reply chunk). */
	RPCRDMA_PROBE4(svc_call, ev->xid, ev->call_len, ev->write_chunks,
		       ev->reply_chunk_len);
	x->refs++;
	rpc_work_add(w, &r->work, run_incoming);
}

/* RPCRDMA_EV_REPLY_SENT. */
static void reply_sent_locked(struct rpc_xprt *x,
			      const struct rpcrdma_engine_event *ev,
			      struct rpc_work *w)
{
	struct rpcrdma_svc_req *r = ev->user;
	if (r && r->early) {
		/* Its handler is still running and waits for this: the
		 * request stays until the handler is over (early_over). */
		struct rpc_wait *s = r->sent_wait;
		/* Cleared first: its waiter may return without the lock. */
		r->sent_wait = NULL;
		if (s)
			rpcrdma_rpc_wait_done_locked(
				x, s,
				ev->status == RPCRDMA_ERR_DISCONNECTED
					? RPCRDMA_ERR_DISCONNECTED : 0,
				w);
		return;
	}
	if (r && r->x)
		req_release_locked(r);
}

/* Decodes one call and answers it or hands it to its handler. */
static void incoming(struct rpc_xprt *x, struct rpcrdma_svc_req *r)
{
	struct rpcrdma_rpc_msg m;
	/* Set before the connection served calls, cleared only once none
	 * can come (destroy). */
	struct rpc_disp *d = resp_of(x)->disp;

	int hl = rpcrdma_rpc_msg_decode(r->call, r->call_len, &m);
	if (hl == RPCRDMA_ERR_BAD_RPCVERS) {
		r->niov = 1;
		req_finish(r, encode_denied(r, RPCRDMA_RPC_RPC_MISMATCH, 0));
		return;
	}
	if (hl < 0 || m.mtype != RPCRDMA_RPC_CALL) {
		answer(r, RPCRDMA_RPC_GARBAGE_ARGS, 0, 0);
		return;
	}
	r->prog = m.call.prog;
	r->vers = m.call.vers;
	r->proc = m.call.proc;
	r->args = r->call + hl;
	r->args_len = r->call_len - (size_t)hl;
	r->pad.base += (size_t)hl;
	r->raw_cred = m.call.cred;
	int as = decode_cred(&m.call.cred, &r->cred);
	if (as) {
		r->niov = 1;
		req_finish(r, encode_denied(r, RPCRDMA_RPC_AUTH_ERROR,
					    (uint32_t)as));
		return;
	}

	bool prog_seen = false, vers_seen = false, found = false;
	uint32_t lo = UINT32_MAX, hi = 0;
	struct reg_table *t = d ? atomic_load(&d->table) : NULL;
	for (size_t i = 0; t && i < t->n; i++) {
		const struct rpc_reg *g = &t->r[i];
		if (g->flags & RPCRDMA_RPC_REG_ANY_PROG) {
			/* Takes every call; the handler answers PROG_UNAVAIL
			 * etc. itself (libtirpc's svc_run does, for
			 * svc_rdma_create). */
			prog_seen = vers_seen = found = true;
			r->reg = *g;
			break;
		}
		if (g->prog != r->prog)
			continue;
		prog_seen = true;
		lo = g->vers < lo ? g->vers : lo;
		hi = g->vers > hi ? g->vers : hi;
		if (g->vers != r->vers)
			continue;
		vers_seen = true;
		if (g->proc == r->proc || (g->flags & RPCRDMA_RPC_REG_ANY_PROC)) {
			r->reg = *g;
			found = true;
		}
	}
	if (!prog_seen) {
		answer(r, RPCRDMA_RPC_PROG_UNAVAIL, 0, 0);
		return;
	}
	if (!vers_seen) {
		answer(r, RPCRDMA_RPC_PROG_MISMATCH, lo, hi);
		return;
	}
	if (!found) {
		/* RFC 5531 §12.1 (by convention, procedure 0 of every
		 * program takes and returns nothing). */
		answer(r, r->proc == 0 ? RPCRDMA_RPC_SUCCESS
				       : RPCRDMA_RPC_PROC_UNAVAIL, 0, 0);
		return;
	}
	if (!d->nthr || (r->reg.flags & RPCRDMA_RPC_REG_DEFER)) {
		run_handler(r); /* right here, on the thread that took it */
		return;
	}
	pthread_mutex_lock(&d->lock);
	r->next = NULL;
	if (d->qtail)
		d->qtail->next = r;
	else
		d->qhead = r;
	d->qtail = r;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->lock);
}

static void run_incoming(struct rpc_work_item *it)
{
	struct rpcrdma_svc_req *r = (struct rpcrdma_svc_req *)(
		(char *)it - offsetof(struct rpcrdma_svc_req, work));
	incoming(r->x, r);
}

/* ---------------------------------------------------------------------
 * The Responder side of a connection (struct rpc_role)
 */
static void responder_event(void *state, struct rpc_xprt *x,
			    const struct rpcrdma_engine_event *ev,
			    struct rpc_work *w)
{
	if (ev->type == RPCRDMA_EV_INCOMING_CALL)
		incoming_locked(state, x, ev, w);
	else if (ev->type == RPCRDMA_EV_REPLY_SENT)
		reply_sent_locked(x, ev, w);
}

static bool responder_busy(const void *state, const struct rpc_xprt *x)
{
	(void)x;
	const struct rpc_responder *q = state;
	return q->disp != NULL;
}

static int responder_attach(struct rpc_xprt *x, void **state)
{
	struct rpc_responder *q = rpcrdma_slab_alloc(&responder_slab);
	if (!q)
		return RPCRDMA_ERR_NOMEM;
	/* A request per Responder slot: taking a call allocates nothing, so
	 * a call that comes in when memory is short is still answered (a
	 * handler's own allocation failing gives SYSTEM_ERR). */
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(x->e, &in);
	q->nreqs = in.call_slots;
	if (q->nreqs > 1 && !(q->more = reqs_create(q->nreqs - 1))) {
		rpcrdma_slab_free(&responder_slab, q);
		return RPCRDMA_ERR_NOMEM;
	}
	*state = q;
	return 0;
}

static void responder_detach(struct rpc_xprt *x, void *state)
{
	(void)x;
	struct rpc_responder *q = state;
	if (!q)
		return;
	if (q->more)
		reqs_free(q->more, q->nreqs - 1);
	rpcrdma_slab_free(&responder_slab, q);
}

const struct rpc_role rpcrdma_rpc_responder_role = {
	.attach = responder_attach,
	.detach = responder_detach,
	.event_locked = responder_event,
	.busy_locked = responder_busy,
};

void rpcrdma_rpc_disp_attach_locked(struct rpc_xprt *x, struct rpc_disp *d)
{
	resp_of(x)->disp = d;
	/* Calls may come at any time now: the loop watches for them. */
	if (d)
		rpcrdma_rpc_xprt_need_attention_locked(x);
}

struct rpc_disp *rpcrdma_rpc_disp_of_locked(struct rpc_xprt *x)
{
	return resp_of(x)->disp;
}

/* ---------------------------------------------------------------------
 * Handler API
 */
RPCRDMA_EXPORT uint32_t rpcrdma_svc_req_prog(const struct rpcrdma_svc_req *r)
{
	return r->prog;
}

RPCRDMA_EXPORT uint32_t rpcrdma_svc_req_vers(const struct rpcrdma_svc_req *r)
{
	return r->vers;
}

RPCRDMA_EXPORT uint32_t rpcrdma_svc_req_proc(const struct rpcrdma_svc_req *r)
{
	return r->proc;
}

RPCRDMA_EXPORT struct rpcrdma_padding
rpcrdma_svc_req_padding(const struct rpcrdma_svc_req *r)
{
	return r->pad;
}

RPCRDMA_EXPORT const void *rpcrdma_svc_req_args(const struct rpcrdma_svc_req *r,
						size_t *len)
{
	if (len)
		*len = r->args_len;
	return r->args;
}

RPCRDMA_EXPORT const struct rpcrdma_cred *
rpcrdma_svc_req_cred(const struct rpcrdma_svc_req *r)
{
	return &r->cred;
}

RPCRDMA_EXPORT unsigned rpcrdma_svc_req_write_chunks(
	const struct rpcrdma_svc_req *r, size_t *len, unsigned max)
{
	for (unsigned i = 0; i < r->nwc && i < max && len; i++)
		len[i] = r->wc_len[i];
	return r->nwc;
}

RPCRDMA_EXPORT void *rpcrdma_svc_req_alloc(struct rpcrdma_svc_req *r,
					   size_t len)
{
	/* Small pieces (a result header) from the request itself. */
	size_t a = len ? (len + 15) & ~(size_t)15 : 16;
	if (a >= len && a <= sizeof(r->small) - r->small_used) {
		void *p = r->small + r->small_used;
		r->small_used += a;
		return p;
	}
	struct req_block *b = malloc(sizeof(*b) + (len ? len : 1));
	if (!b)
		return NULL;
	b->next = r->blocks;
	r->blocks = b;
	return b->data;
}

RPCRDMA_EXPORT int rpcrdma_svc_req_reply(struct rpcrdma_svc_req *r,
					 const struct rpcrdma_iov *res,
					 unsigned n)
{
	if (!r || n > RPCRDMA_MAX_ARGS || (n && !res))
		return RPCRDMA_ERR_INVAL;
	for (unsigned i = 0; i < n; i++)
		if ((!res[i].ddp && (res[i].len & 3)) ||
		    (res[i].len && !res[i].base))
			return RPCRDMA_ERR_INVAL;
	memcpy(&r->iov[1], res, n * sizeof(*res));
	r->niov = n + 1;
	r->raw = false;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_req_clnt(struct rpcrdma_svc_req *r,
					uint32_t prog, uint32_t vers,
					struct rpcrdma_clnt **out)
{
	if (!r || !out)
		return RPCRDMA_ERR_INVAL;
	return rpcrdma_rpc_clnt_on_xprt(r->x, prog, vers, out);
}

RPCRDMA_EXPORT uint32_t rpcrdma_svc_req_xid(const struct rpcrdma_svc_req *r)
{
	return r->xid;
}

RPCRDMA_EXPORT void rpcrdma_svc_req_cred_raw(const struct rpcrdma_svc_req *r,
					     uint32_t *flavor,
					     const void **body, size_t *len)
{
	if (flavor)
		*flavor = r->raw_cred.flavor;
	if (body)
		*body = r->raw_cred.body;
	if (len)
		*len = r->raw_cred.len;
}

RPCRDMA_EXPORT int rpcrdma_svc_req_reply_raw(struct rpcrdma_svc_req *r,
					     const struct rpcrdma_iov *msg,
					     unsigned n)
{
	if (!r || !msg || n == 0 || n > RPCRDMA_ENGINE_MAX_IOV)
		return RPCRDMA_ERR_INVAL;
	/* The XID the engine matches replies by must lead the message. */
	if (msg[0].len < 4 || msg[0].ddp)
		return RPCRDMA_ERR_INVAL;
	for (unsigned i = 0; i < n; i++) {
		if (!msg[i].base && msg[i].len)
			return RPCRDMA_ERR_INVAL;
		if (!msg[i].ddp && (msg[i].len & 3))
			return RPCRDMA_ERR_INVAL;
		r->iov[i] = msg[i];
	}
	r->niov = n;
	r->raw = true;
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_req_peer(const struct rpcrdma_svc_req *r,
					struct sockaddr_storage *addr,
					socklen_t *len)
{
	if (!r || !addr || !len)
		return RPCRDMA_ERR_INVAL;
	struct rpc_xprt *x = r->x;
	bool have;
	if (x->server) {
		/* A server's connection keeps the id it was accepted with
		 * for its whole life (set before any call could come, never
		 * replaced: only a client reconnects), and the request holds
		 * the connection: no lock (svc_run() asks for every call,
		 * rpc/tirpc/svc_rdma.c). */
		*addr = x->id->peer_addr;
		have = true;
	} else {
		pthread_mutex_lock(&x->lock);
		have = x->id != NULL;
		if (have)
			*addr = x->id->peer_addr;
		pthread_mutex_unlock(&x->lock);
	}
	if (!have)
		return RPCRDMA_ERR_DISCONNECTED;
	*len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in);
	return 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_req_drop(struct rpcrdma_svc_req *r)
{
	if (!r)
		return RPCRDMA_ERR_INVAL;
	struct rpc_xprt *x = r->x;
	/* Nothing is posted on a connection asked to close (pump_locked),
	 * so the reply still submitted for it never leaves; the loop
	 * disconnects, and the loss unwinds the engine. */
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_xprt_close_locked(x);
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_trace("%s: call %#x dropped: closing", x->name, r->xid);
	return 0;
}
