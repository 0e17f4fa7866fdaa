/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * svc_rdma_create: a libtirpc SVCXPRT over the native rpcrdma server, so
 * rpcgen dispatch functions registered with svc_register() are served by
 * plain svc_run(); and the same request-side SVCXPRT operations for the
 * reverse-direction callbacks of clnt_rdma_register_callback().
 *
 * svc_run() path: svc_run() itself attends the connections, as it does
 * for libtirpc's own transports.  The transport's file descriptor
 * (registered with xprt_register()) is the epoll set of every
 * connection's CQ (rpcrdma_rpc_loop_external); when it is readable,
 * libtirpc calls SVC_RECV, which polls the connections that have work on
 * svc_run's own thread and takes the calls they bring.  Each call is then
 * handed to libtirpc's svc_getreq_common() — SVC_RECV, authentication,
 * the lookup of the dispatch function (PROG_UNAVAIL / PROG_MISMATCH
 * answered by libtirpc itself), the dispatch — and its reply, set through
 * xp_reply, is sent when the dispatch is over (SVC_STAT).  No thread
 * hand-off on the way; svc_run() stays single-threaded, as libtirpc
 * programs expect.  The native server's loop thread keeps the rest
 * (connections coming and going, time-outs); a call it happens to take
 * is queued and svc_run() woken through the same descriptor.
 */
#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"
#include "rpc/tirpc/tirpc_internal.h"
#include "rpcrdma/export.h"
#include "rpcrdma/tirpc.h"

/* libtirpc keeps per-transport authentication state behind xp_p3 (its
 * SVCXPRT_EXT, svc_mt.h): _authenticate() writes the flavor's ops there
 * for every request.  Same layout. */
struct xprt_ext {
	int flags;
	SVCAUTH xp_auth;
};

/* One incoming call on its way through libtirpc. */
struct tirpc_call {
	struct rpcrdma_svc_req *req;
	bool replied;
};

/* Calls waiting for svc_run(), in order. */
struct req_queue {
	struct rpcrdma_svc_req *head, *tail;
};

/* Connections left unarmed at once, at most (hot_list): as many as one
 * look's epoll_wait hands out (rpcrdma_rpc_loop_attend_external), so
 * every connection a look finds with work stays unarmed until its reply
 * is out.  With 8, at 256 connections most were armed at once, and the
 * signalled completion of their replies cost an eventfd write and read
 * (0.23 of each a call against 0.09; docs/SCALE.md). */
#define SVC_HOT 64

/* Locks on svc_run()'s way (issue: one lock per connection per poll
 * pass): the calls svc_run() takes itself, while it attends the
 * connections, go on a queue only its thread touches (own), and the
 * call being dispatched (cur) is its thread's alone too: libtirpc calls
 * a transport's xp_recv, xp_stat, xp_reply and xp_destroy from the
 * thread running svc_run(), and svc_sendreply() is made from the
 * dispatch function it runs.  Only the native loop's thread, which
 * takes a call now and then, hands calls over through the locked queue
 * (shared); svc_run() looks at it only when `queued` says it holds one.
 * A NULL call then takes no lock of this file: the connection's own
 * lock, once per poll pass and once for the reply, is all. */
struct svc_rdma {
	SVCXPRT *xprt;
	struct xprt_ext ext;
	struct rpcrdma_svc *svc;
	struct rpc_loop *loop;
	pthread_mutex_t lock;           /* shared; writers of ulb */
	struct req_queue shared;        /* taken by another thread */
	atomic_bool queued;             /* shared.head != NULL */
	bool closing;                   /* under lock */
	struct req_queue own;           /* svc_run()'s thread only */
	unsigned turn;                  /* own's round robin (take_own);
					   its thread only */
	uint64_t looked_ns;             /* when l_recv last looked at the
					   connections at a turn's end; its
					   thread only */
	struct tirpc_call cur;          /* being dispatched (req NULL: none);
					   svc_run()'s thread only */
	struct rpc_xprt *hot[SVC_HOT];  /* connections left unarmed while
					   svc_run() comes straight back
					   (hot_list), each with a reference;
					   svc_run()'s thread only */
	unsigned nhot;
	struct ulb_table ulb;
	char *netid;
	struct sockaddr_storage rtaddr; /* the current call's peer */
};

/* The server svc_run() is attending on this thread right now: calls it
 * takes go on its own queue, and need no wake-up. */
static _Thread_local struct svc_rdma *attending;

static void queue_add(struct req_queue *q, struct rpcrdma_svc_req *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
}

static struct rpcrdma_svc_req *queue_take(struct req_queue *q)
{
	struct rpcrdma_svc_req *r = q->head;
	if (r) {
		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
	}
	return r;
}

/* How long a turn may go on without a look at the connections (l_recv). */
#define LOOK_NS 100000ull

/* Whether r's connection has had no call taken in this turn. */
static bool turn_due(const struct svc_rdma *s,
		     const struct rpcrdma_svc_req *r)
{
	return !r->x || r->x->tirpc_turn != s->turn;
}

/* On svc_run()'s thread: the next call of our own queue due in this turn,
 * or NULL: round robin between connections, the oldest call of a
 * connection that has had no call taken in this turn (l_recv starts the
 * next turn).  A connection's own calls keep their order.  In plain
 * arrival order, a client with 32 calls out (each answered with 1 MiB,
 * the reply waited for, rpcrdma_rpc_req_reply_sync) had all of them
 * ahead of the single call of each other connection. */
static struct rpcrdma_svc_req *take_own(struct svc_rdma *s)
{
	struct req_queue *q = &s->own;
	struct rpcrdma_svc_req *prev = NULL, *r = q->head;
	while (r && !turn_due(s, r)) {
		prev = r;
		r = r->next;
	}
	if (!r)
		return NULL;
	if (prev)
		prev->next = r->next;
	else
		q->head = r->next;
	if (q->tail == r)
		q->tail = prev;
	r->next = NULL;
	if (r->x)
		r->x->tirpc_turn = s->turn;
	return r;
}

/* On svc_run()'s thread: the next call for it, first from the shared
 * queue (the older calls, as a rule), then one due in this turn, or
 * NULL. */
static struct rpcrdma_svc_req *next_call(struct svc_rdma *s)
{
	if (atomic_load(&s->queued)) {
		pthread_mutex_lock(&s->lock);
		struct rpcrdma_svc_req *r = queue_take(&s->shared);
		atomic_store(&s->queued, s->shared.head != NULL);
		pthread_mutex_unlock(&s->lock);
		if (r)
			return r;
	}
	return take_own(s);
}

/* Calls that will never be dispatched (the transport goes): each
 * completes once, with an error. */
static void fail_calls(struct rpcrdma_svc_req *r)
{
	while (r) {
		struct rpcrdma_svc_req *n = r->next;
		rpcrdma_rpc_req_done(r, RPCRDMA_SVC_SYSTEM_ERR);
		r = n;
	}
}

static bool more_calls(struct svc_rdma *s)
{
	return s->own.head || atomic_load(&s->queued);
}

/* Whether svc_run's spins paid (busy_poll.c), per thread running it: the
 * loop thread keeps its own. */
static _Thread_local struct rpc_spin run_spin;

/* A transport is either the listening one (xp_p1 = struct svc_rdma) or a
 * per-call one for direct dispatch (xp_p1 = struct tirpc_call); xp_p2
 * tells them apart. */
static char direct_tag;

struct direct_xprt {
	SVCXPRT x;
	struct xprt_ext ext;
	struct tirpc_call *call;
	struct ulb_table *ulb;
};

static struct tirpc_call *cur_call(SVCXPRT *x)
{
	if (x->xp_p2 == &direct_tag)
		return ((struct direct_xprt *)x)->call;
	struct tirpc_call *c = &((struct svc_rdma *)x->xp_p1)->cur;
	return c->req ? c : NULL;
}

static bool ddp_results_allowed(SVCXPRT *x, struct rpcrdma_svc_req *req,
				size_t *ddp_min)
{
	struct ulb_table *t;
	if (x->xp_p2 == &direct_tag)
		t = ((struct direct_xprt *)x)->ulb;
	else
		t = &((struct svc_rdma *)x->xp_p1)->ulb;
	*ddp_min = RPCRDMA_TIRPC_DDP_MIN;
	struct ulb_entry u;
	if (!t || !ulb_lookup(t, rpcrdma_svc_req_prog(req),
			      rpcrdma_svc_req_vers(req),
			      rpcrdma_svc_req_proc(req), &u))
		return false;
	if (u.ddp_min)
		*ddp_min = u.ddp_min;
	return u.ddp_result_max != 0;
}

/* ---------------------------------------------------------------------
 * Request-side operations (both kinds of transport)
 */

static bool_t x_getargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
	struct tirpc_call *c = cur_call(x);
	if (!c)
		return FALSE;
	size_t len;
	const void *args = rpcrdma_svc_req_args(c->req, &len);
	XDR xdrs;
	struct xdr_scatter sc;
	struct rpcrdma_svc_req *r = c->req;
	struct rpcrdma_padding pad = rpcrdma_svc_req_padding(r);
	/* Arguments arrive as one contiguous stream (DDP items already
	 * reinserted where the Read chunks were, RFC 8166 §3.4.5): decoding
	 * copies a DDP item once into the memory the XDR routine gives it
	 * (rpcgen's dispatch allocates it), counted for the statistics. */
	xdr_scatter_create(&xdrs, &sc, args, len, NULL, 0);
	if (pad.align) /* an RFC 5666 RDMA_MSGP call: around its padding */
		xdr_scatter_set_padding(&sc, &pad);
	sc.nranges = r->ddp_items;
	sc.range_pos = r->ddp_pos;
	sc.range_len = r->ddp_len;
	sc.range_base = (size_t)((const uint8_t *)args - r->call);
	bool_t ok = xargs(&xdrs, argsp);
	XDR_DESTROY(&xdrs);
	rpcrdma_rpc_req_count_copied(r, sc.copied);
	return ok;
}

static bool_t x_freeargs(SVCXPRT *x, xdrproc_t xargs, void *argsp)
{
	(void)x;
	XDR xdrs;
	memset(&xdrs, 0, sizeof(xdrs));
	xdrs.x_op = XDR_FREE;
	return xargs(&xdrs, argsp);
}

/* The reply message (RFC 5531 §9): what xdr_replymsg() writes, with the
 * header of the common reply, accepted, SUCCESS, with an AUTH_NONE
 * verifier (every reply to AUTH_NONE and AUTH_SYS calls), written here
 * in one piece: six words, then the results by their XDR routine.
 * xdr_replymsg() spends some 500 instructions on those six words (an
 * XDR call for each, the union's dispatch), a twentieth of a whole
 * rdma-tirpc NULL call.  Any other reply is xdr_replymsg()'s. */
bool_t tirpc_encode_reply(XDR *xdrs, struct rpc_msg *msg)
{
	const struct accepted_reply *ar = &msg->acpted_rply;
	if (msg->rm_direction != REPLY ||
	    msg->rm_reply.rp_stat != MSG_ACCEPTED ||
	    ar->ar_stat != SUCCESS || ar->ar_verf.oa_flavor != AUTH_NONE ||
	    ar->ar_verf.oa_length != 0 || !ar->ar_results.proc)
		return xdr_replymsg(xdrs, msg);
	int32_t *p = XDR_INLINE(xdrs, 6 * BYTES_PER_XDR_UNIT);
	if (!p)
		return FALSE; /* the gather stream could not grow */
	p[0] = (int32_t)htonl(msg->rm_xid);
	p[1] = (int32_t)htonl(REPLY);
	p[2] = (int32_t)htonl(MSG_ACCEPTED);
	p[3] = (int32_t)htonl(AUTH_NONE);
	p[4] = 0;                   /* the verifier's body: none */
	p[5] = (int32_t)htonl(SUCCESS);
	return (*ar->ar_results.proc)(xdrs, ar->ar_results.where);
}

static bool_t send_reply(SVCXPRT *x, struct rpc_msg *msg)
{
	struct tirpc_call *c = cur_call(x);
	if (!c || c->replied)
		return FALSE;
	size_t ddp_min = RPCRDMA_TIRPC_DDP_MIN;
	bool ddp = msg->rm_reply.rp_stat == MSG_ACCEPTED &&
		   msg->acpted_rply.ar_stat == SUCCESS &&
		   ddp_results_allowed(x, c->req, &ddp_min);
	msg->rm_xid = rpcrdma_svc_req_xid(c->req);
	XDR xdrs;
	struct xdr_gather g;
	xdr_gather_create(&xdrs, &g, ddp, ddp_min);
	if (!tirpc_encode_reply(&xdrs, msg)) {
		xdr_gather_free(&g);
		return FALSE;
	}
	/* The results belong to the dispatch function, which frees them as
	 * soon as we return: the reply goes now, from where they are (the
	 * DDP-eligible item by RDMA Write straight from the results, the
	 * rest from the gather stream's buffer), and we return once it is
	 * sent, with nothing copied. */
	struct rpcrdma_iov iov[3];
	unsigned n = xdr_gather_iov(&g, iov);
	int rc = rpcrdma_rpc_req_reply_sync(c->req, iov, n);
	xdr_gather_free(&g);
	if (rc == RPCRDMA_ERR_INVAL || rc == RPCRDMA_ERR_NOMEM)
		return FALSE; /* nothing sent: SYSTEM_ERR after the dispatch */
	/* Sent, or the connection is gone and the client will call again:
	 * either way this call is answered. */
	c->replied = true;
	return TRUE;
}

/* svc_run()'s operations below hold thread cancellation off while they
 * poll, post and wait (rpc/rpc_internal.h, "Thread cancellation"):
 * svc_run() itself stays cancellable in its poll(2) between calls. */
static bool_t x_reply(SVCXPRT *x, struct rpc_msg *msg)
{
	int cancel = rpcrdma_rpc_cancel_hold();
	bool_t ok = send_reply(x, msg);
	rpcrdma_rpc_cancel_restore(cancel);
	return ok;
}

/* Fills the svc_req fields libtirpc's dispatchers read. */
static void fill_cred(struct rpcrdma_svc_req *req, struct opaque_auth *cred,
		      char *area)
{
	uint32_t flavor = 0;
	const void *body = NULL;
	size_t len = 0;
	rpcrdma_svc_req_cred_raw(req, &flavor, &body, &len);
	if (len > MAX_AUTH_BYTES)
		len = MAX_AUTH_BYTES; /* the native layer already refused more */
	cred->oa_flavor = (enum_t)flavor;
	cred->oa_length = (u_int)len;
	if (area && len)
		memcpy(area, body, len);
	if (area)
		cred->oa_base = area;
	else
		cred->oa_base = (caddr_t)(uintptr_t)body;
}

/* ---------------------------------------------------------------------
 * The listening transport, served by svc_run()
 */

/* A connection whose calls svc_run() is about to serve is left unarmed
 * until their replies are likely out: the next look (l_recv), or before
 * svc_run() may sleep (l_stat), as the native loop does with its hot
 * list (rpc/loop.c).  Not polled at each look while it waits: on iwarp
 * each poll is a recvfrom(2), and 8 of them a look cost rdma-tirpc 1.6-1.9
 * system calls a call at 64 connections.  Two reasons:
 * - a reply posted on an armed CQ wakes its fd when its Send is
 *   signalled (every REPLY_SIGNAL_EVERY-th reply, engine/send_queue.c):
 *   on iwarp an eventfd write, then svc_run() wakes, looks and reads the
 *   eventfd, for a completion the arm below polls anyway;
 * - the connection whose call was just served is likely to bring the
 *   next one (the spin polls it).  On verbs, arming is a command to the
 *   device and each wake-up a read of the completion channel: on rxe
 *   both are system calls, two a call.
 * A reference keeps the loop from reaping each meanwhile.  Full: the
 * connection is armed at once, as before. */
static struct rpc_unarmed hot_list(struct svc_rdma *s)
{
	return (struct rpc_unarmed){s->hot, &s->nhot, SVC_HOT, true};
}

static void hot_poll(struct svc_rdma *s)
{
	const struct rpc_unarmed u = hot_list(s);
	rpcrdma_rpc_unarmed_poll(&u);
}

/* Arms the hot connections but keep (the one a spin polls; NULL: none)
 * and lets them go; true if one had work after all (its calls are then
 * on our own queue). */
static bool hot_arm_but(struct svc_rdma *s, const struct rpc_xprt *keep)
{
	const struct rpc_unarmed u = hot_list(s);
	return rpcrdma_rpc_unarmed_arm(&u, keep);
}

static bool hot_arm(struct svc_rdma *s)
{
	return hot_arm_but(s, NULL);
}

/* The others' wake-ups; those with work join the hot ones. */
static void look_external(struct svc_rdma *s)
{
	const struct rpc_unarmed u = hot_list(s);
	rpcrdma_rpc_loop_attend_external(s->loop, &u);
}

static bool_t recv_next(SVCXPRT *x, struct rpc_msg *msg)
{
	struct svc_rdma *s = x->xp_p1;
	struct rpcrdma_svc_req *r = next_call(s);
	if (!r) {
		/* Nothing due in this turn.  Poll the connections with work
		 * on this very thread (their calls land on our own queue,
		 * queue_handler) when nothing waits; and when calls wait but
		 * each of their connections has had one in this turn, once
		 * LOOK_NS has passed since the last such look.  A connection
		 * with more calls out than one at a time, whose calls a
		 * finish lets through at once (a Responder slot freed,
		 * l_stat), would otherwise keep the queue full, and the
		 * calls of other connections would wait in their sockets
		 * until it stopped.  Not at every turn: alone, such a
		 * connection's turns are single calls, and it would pay a
		 * look (epoll_wait, a poll of its CQ) for every call. */
		bool look = !s->own.head;
		if (!look) {
			uint64_t now = rpcrdma_rpc_now_ns();
			look = now - s->looked_ns >= LOOK_NS;
			if (look)
				s->looked_ns = now; /* (read only here) */
		}
		if (look) {
			/* The replies to the hot ones' calls are out but
			 * for those still queued: arm them now. */
			attending = s;
			hot_arm(s);
			look_external(s);
			attending = NULL;
			r = next_call(s);
		}
		if (!r && s->own.head) {
			s->turn++; /* each connection with a call had one */
			r = take_own(s);
		}
	}
	s->cur.req = r;
	s->cur.replied = false;
	if (!r)
		return FALSE;
	/* Until l_stat: calls that come while this one is dispatched (its
	 * reply's wait polls the connection, rpcrdma_rpc_req_reply_sync)
	 * join our own queue behind those waiting already.  On the shared
	 * queue, which next_call takes first, a client with more calls
	 * out than slots had the next one there every time a reply of its
	 * was waited for, and the calls of our own queue never came up. */
	attending = s;
	/* svc_getrpccaller(): the address of the peer this call came from
	 * (a duplicate-request cache keys on it). */
	socklen_t alen = 0;
	if (rpcrdma_svc_req_peer(r, &s->rtaddr, &alen) < 0)
		alen = 0;
	x->xp_rtaddr.buf = &s->rtaddr;
	x->xp_rtaddr.maxlen = sizeof(s->rtaddr);
	x->xp_rtaddr.len = alen;
	msg->rm_xid = rpcrdma_svc_req_xid(r);
	msg->rm_direction = CALL;
	msg->rm_call.cb_rpcvers = 2;
	msg->rm_call.cb_prog = rpcrdma_svc_req_prog(r);
	msg->rm_call.cb_vers = rpcrdma_svc_req_vers(r);
	msg->rm_call.cb_proc = rpcrdma_svc_req_proc(r);
	/* svc_getreq_common() points oa_base at its own areas. */
	fill_cred(r, &msg->rm_call.cb_cred, msg->rm_call.cb_cred.oa_base);
	msg->rm_call.cb_verf.oa_flavor = AUTH_NONE;
	msg->rm_call.cb_verf.oa_length = 0;
	return TRUE;
}

static bool_t l_recv(SVCXPRT *x, struct rpc_msg *msg)
{
	int cancel = rpcrdma_rpc_cancel_hold();
	bool_t ok = recv_next(x, msg);
	rpcrdma_rpc_cancel_restore(cancel);
	return ok;
}

/* Called by svc_getreq_common() after every dispatch: the current call is
 * over, replied or not; its reply goes out now. */
static enum xprt_stat finish_call(SVCXPRT *x)
{
	struct svc_rdma *s = x->xp_p1;
	struct rpcrdma_svc_req *r = s->cur.req;
	bool replied = s->cur.replied;
	s->cur.req = NULL;
	/* A call its finish lets through (the Responder slot it frees) comes
	 * to this thread's own queue, with no wake-up. */
	attending = s;
	/* The call's connection is hot (the spin below polls it), held past
	 * the call's end, which lets it go.  Most often it is already: the
	 * look that found the call left it unarmed.  Not when this thread
	 * cannot spin (one CPU, busy_poll_us 0): a reference costs the
	 * connection's lock twice. */
	uint64_t t = 0;
	struct rpc_xprt *rx = r ? r->x : NULL; /* (r goes below) */
	const struct rpc_unarmed hot = hot_list(s);
	if (r && rpcrdma_rpc_busy_possible(s->loop->busy_poll_us, &t))
		rpcrdma_rpc_unarmed_add(&hot, rx);
	/* A dispatch function that sent nothing: the call must still
	 * complete exactly once (the client would wait forever). */
	if (r)
		rpcrdma_rpc_req_done(r, replied ? RPCRDMA_SVC_OK
						: RPCRDMA_SVC_SYSTEM_ERR);
	enum xprt_stat st = more_calls(s) ? XPRT_MOREREQS : XPRT_IDLE;
	/* A call was just served: its client's next one is likely soon.
	 * Poll for it a while before svc_run() sleeps (busy_poll.c);
	 * XPRT_MOREREQS brings svc_run() straight back to l_recv.  Its
	 * connection is the one the spin polls (hot_poll); no call waits,
	 * so every other reply is out and their connections are armed. */
	struct rpc_busy busy;
	uint64_t now = 0;
	if (r && st == XPRT_IDLE &&
	    rpcrdma_rpc_busy_start(s->loop->busy_poll_us, &run_spin, &busy,
				   &now)) {
		hot_arm_but(s, rx);
		do {
			hot_poll(s);
			look_external(s);
			if (more_calls(s))
				st = XPRT_MOREREQS;
		} while (st == XPRT_IDLE && rpcrdma_rpc_busy_more(&busy, &now));
		rpcrdma_rpc_busy_end(&run_spin, &busy, st != XPRT_IDLE, now);
	}
	/* svc_run() may sleep in poll(2) next: nothing may stay unarmed. */
	if (st == XPRT_IDLE && hot_arm(s) && more_calls(s))
		st = XPRT_MOREREQS;
	attending = NULL;
	return st;
}

static enum xprt_stat l_stat(SVCXPRT *x)
{
	int cancel = rpcrdma_rpc_cancel_hold();
	enum xprt_stat st = finish_call(x);
	rpcrdma_rpc_cancel_restore(cancel);
	return st;
}

static void destroy_listener(SVCXPRT *x)
{
	struct svc_rdma *s = x->xp_p1;
	for (unsigned i = 0; i < s->nhot; i++)
		rpcrdma_rpc_xprt_put(s->hot[i]); /* the server goes, and they */
	s->nhot = 0;
	xprt_unregister(x);
	pthread_mutex_lock(&s->lock);
	s->closing = true;
	struct rpcrdma_svc_req *r = s->shared.head;
	s->shared.head = s->shared.tail = NULL;
	atomic_store(&s->queued, false);
	pthread_mutex_unlock(&s->lock);
	struct rpcrdma_svc_req *cur = s->cur.req;
	bool replied = s->cur.replied;
	s->cur.req = NULL;
	fail_calls(r);
	fail_calls(s->own.head);
	s->own.head = s->own.tail = NULL;
	if (cur)
		rpcrdma_rpc_req_done(cur, replied ? RPCRDMA_SVC_OK
						  : RPCRDMA_SVC_SYSTEM_ERR);
	rpcrdma_svc_destroy(s->svc);
	pthread_mutex_destroy(&s->lock);
	ulb_free(&s->ulb);
	free(s->netid);
	free(s);
	free(x);
}

static void l_destroy(SVCXPRT *x)
{
	int cancel = rpcrdma_rpc_cancel_hold();
	destroy_listener(x);
	rpcrdma_rpc_cancel_restore(cancel);
}

static bool_t x_control(SVCXPRT *x, const u_int req, void *info)
{
	(void)x;
	(void)req;
	(void)info;
	return FALSE;
}

static const struct xp_ops listen_ops = {
	.xp_recv = l_recv,
	.xp_stat = l_stat,
	.xp_getargs = x_getargs,
	.xp_reply = x_reply,
	.xp_freeargs = x_freeargs,
	.xp_destroy = l_destroy,
};

static const struct xp_ops2 ops2 = { .xp_control = x_control };

/* The native handler for every call (deferred: it only takes the
 * request): queue it for svc_run().  On svc_run()'s own thread, polling
 * right now, it goes on that thread's queue, no lock, no wake-up; from
 * any other thread (the native loop's), on the shared queue, waking
 * svc_run(). */
static enum rpcrdma_svc_stat queue_handler(struct rpcrdma_svc_req *req, void *arg)
{
	struct svc_rdma *s = arg;
	if (attending == s) {
		/* closing is set by l_destroy, which libtirpc runs on this
		 * same thread, never while it attends. */
		queue_add(&s->own, req);
		return RPCRDMA_SVC_OK;
	}
	pthread_mutex_lock(&s->lock);
	if (s->closing) {
		pthread_mutex_unlock(&s->lock);
		rpcrdma_rpc_req_done(req, RPCRDMA_SVC_SYSTEM_ERR);
		return RPCRDMA_SVC_OK;
	}
	queue_add(&s->shared, req);
	atomic_store(&s->queued, true);
	pthread_mutex_unlock(&s->lock);
	rpcrdma_rpc_loop_kick(s->loop);
	return RPCRDMA_SVC_OK;
}

RPCRDMA_EXPORT SVCXPRT *svc_rdma_create(const char *listen_addr,
					const struct rpcrdma_opts *opts)
{
	SVCXPRT *x = calloc(1, sizeof(*x));
	struct svc_rdma *s = calloc(1, sizeof(*s));
	if (!x || !s) {
		free(x);
		free(s);
		tirpc_create_error(RPC_SYSTEMERROR, ENOMEM);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	int rc = rpcrdma_rpc_svc_create(listen_addr ? listen_addr : "0.0.0.0",
					opts, true, &s->svc);
	if (rc == 0)
		rc = rpcrdma_rpc_svc_register_any_flags(s->svc, queue_handler, s,
							RPCRDMA_RPC_REG_DEFER);
	if (rc < 0) {
		if (s->svc)
			rpcrdma_svc_destroy(s->svc);
		pthread_mutex_destroy(&s->lock);
		free(x);
		free(s);
		/* Named on stderr, as libtirpc's svc_tli_create does when it
		 * cannot bind; an invalid environment said so already. */
		const char *a = listen_addr ? listen_addr : "0.0.0.0";
		if (rc != RPCRDMA_ERR_CONFIG)
			warnx("svc_rdma_create: cannot listen on %s: %s", a,
			      rc == RPCRDMA_ERR_BUSY ? strerror(EADDRINUSE)
						     : rpcrdma_strerror(rc));
		tirpc_create_fail(rc, a);
		return NULL;
	}
	s->loop = rpcrdma_rpc_svc_loop(s->svc);
	s->xprt = x;
	s->netid = strdup("rdma");
	x->xp_fd = rpcrdma_rpc_loop_external(s->loop);
	x->xp_port = rpcrdma_svc_port(s->svc);
	x->xp_ops = &listen_ops;
	x->xp_ops2 = &ops2;
	x->xp_netid = s->netid;
	x->xp_p1 = s;
	x->xp_p3 = &s->ext;
	xprt_register(x);
	return x;
}

RPCRDMA_EXPORT uint16_t svc_rdma_port(SVCXPRT *x)
{
	if (!x || x->xp_ops != &listen_ops)
		return 0;
	return rpcrdma_svc_port(((struct svc_rdma *)x->xp_p1)->svc);
}

RPCRDMA_EXPORT bool_t svc_rdma_set_ulb(SVCXPRT *x, rpcprog_t prog,
				       rpcvers_t vers,
				       const struct rpcrdma_ulb_proc *procs,
				       unsigned n)
{
	if (!x || x->xp_ops != &listen_ops || (n && !procs))
		return FALSE;
	struct svc_rdma *s = x->xp_p1;
	return ulb_set_procs(&s->ulb, &s->lock, (uint32_t)prog, (uint32_t)vers,
			     procs, n);
}

/* ---------------------------------------------------------------------
 * Direct dispatch (client callbacks, RFC 8167)
 */

static bool_t d_recv(SVCXPRT *x, struct rpc_msg *msg)
{
	(void)x;
	(void)msg;
	return FALSE;
}

static enum xprt_stat d_stat(SVCXPRT *x)
{
	(void)x;
	return XPRT_IDLE;
}

static void d_destroy(SVCXPRT *x)
{
	(void)x; /* lives on the handler's stack */
}

static const struct xp_ops direct_ops = {
	.xp_recv = d_recv,
	.xp_stat = d_stat,
	.xp_getargs = x_getargs,
	.xp_reply = x_reply,
	.xp_freeargs = x_freeargs,
	.xp_destroy = d_destroy,
};

static int svcauth_null_wrap(SVCAUTH *a, XDR *x, xdrproc_t f, caddr_t p)
{
	(void)a;
	return f(x, p);
}

static int svcauth_null_destroy(SVCAUTH *a)
{
	(void)a;
	return 1;
}

static struct svc_auth_ops null_auth_ops = {
	.svc_ah_wrap = svcauth_null_wrap,
	.svc_ah_unwrap = svcauth_null_wrap,
	.svc_ah_destroy = svcauth_null_destroy,
};

enum rpcrdma_svc_stat tirpc_dispatch_direct(
	struct rpcrdma_svc_req *req,
	void (*dispatch)(struct svc_req *, SVCXPRT *),
	struct ulb_table *ulb)
{
	struct tirpc_call c = { .req = req };
	struct direct_xprt d;
	memset(&d, 0, sizeof(d));
	d.call = &c;
	d.ulb = ulb;
	d.x.xp_fd = -1;
	d.x.xp_ops = &direct_ops;
	d.x.xp_ops2 = &ops2;
	d.x.xp_netid = (char *)"rdma";
	d.x.xp_p2 = &direct_tag;
	d.x.xp_p3 = &d.ext;
	d.ext.xp_auth.svc_ah_ops = &null_auth_ops;

	struct svc_req r;
	memset(&r, 0, sizeof(r));
	r.rq_prog = rpcrdma_svc_req_prog(req);
	r.rq_vers = rpcrdma_svc_req_vers(req);
	r.rq_proc = rpcrdma_svc_req_proc(req);
	r.rq_xprt = &d.x;
	fill_cred(req, &r.rq_cred, NULL);
	/* The cooked AUTH_SYS credential, as _svcauth_unix() would give. */
	struct authunix_parms aup;
	gid_t gids[16];
	const struct rpcrdma_cred *cred = rpcrdma_svc_req_cred(req);
	if (cred && cred->flavor == RPCRDMA_CRED_AUTH_SYS) {
		aup.aup_time = cred->stamp;
		aup.aup_machname = (char *)(uintptr_t)cred->machinename;
		aup.aup_uid = cred->uid;
		aup.aup_gid = cred->gid;
		aup.aup_len = cred->ngids > 16 ? 16 : cred->ngids;
		for (u_int i = 0; i < aup.aup_len; i++)
			gids[i] = cred->gids[i];
		aup.aup_gids = gids;
		r.rq_clntcred = &aup;
	}
	dispatch(&r, &d.x);
	return c.replied ? RPCRDMA_SVC_OK : RPCRDMA_SVC_SYSTEM_ERR;
}

RPCRDMA_EXPORT CLIENT *svc_rdma_callback_client(struct svc_req *rq,
						rpcprog_t prog, rpcvers_t vers)
{
	SVCXPRT *x = rq ? rq->rq_xprt : NULL;
	if (!x || (x->xp_ops != &listen_ops && x->xp_ops != &direct_ops)) {
		tirpc_create_error(RPC_UNKNOWNPROTO, RPCRDMA_ERR_INVAL);
		return NULL;
	}
	struct tirpc_call *c = cur_call(x);
	struct rpcrdma_clnt *nc;
	int rc = c ? rpcrdma_svc_req_clnt(c->req, (uint32_t)prog, (uint32_t)vers, &nc)
		   : RPCRDMA_ERR_INVAL;
	if (rc < 0) {
		tirpc_create_fail(rc, NULL);
		return NULL;
	}
	return tirpc_wrap_clnt(nc, (uint32_t)prog, (uint32_t)vers, NULL, 0);
}

RPCRDMA_EXPORT bool_t svc_rdma_stats_sized(SVCXPRT *x,
					   struct rpcrdma_stats *st,
					   size_t size)
{
	if (!x || x->xp_ops != &listen_ops || !st)
		return FALSE;
	return rpcrdma_svc_stats_sized(((struct svc_rdma *)x->xp_p1)->svc, st,
				       size) == 0;
}

RPCRDMA_EXPORT bool_t svc_rdma_drop(struct svc_req *rq)
{
	SVCXPRT *x = rq ? rq->rq_xprt : NULL;
	if (!x || (x->xp_ops != &listen_ops && x->xp_ops != &direct_ops))
		return FALSE;
	struct tirpc_call *c = cur_call(x);
	if (!c || c->replied)
		return FALSE;
	if (rpcrdma_svc_req_drop(c->req) < 0)
		return FALSE;
	/* Counts as the call's one answer: a svc_sendreply() after this
	 * is refused, and whatever the worker then submits is never
	 * posted (the connection is closing). */
	c->replied = true;
	return TRUE;
}

RPCRDMA_EXPORT bool_t svc_rdma_xid(struct svc_req *rq, uint32_t *xid)
{
	SVCXPRT *x = rq ? rq->rq_xprt : NULL;
	if (!x || !xid || (x->xp_ops != &listen_ops && x->xp_ops != &direct_ops))
		return FALSE;
	struct tirpc_call *c = cur_call(x);
	if (!c)
		return FALSE;
	*xid = rpcrdma_svc_req_xid(c->req);
	return TRUE;
}
