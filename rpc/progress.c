/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Progress of a connection: who polls its CQ, and where what comes out
 * goes.  This is the connection layer: it knows the engine and the
 * provider, and above it only the two roles (struct rpc_role: call.c for
 * the Requester side, dispatch.c for the Responder side).
 *
 * The thread that polls a completion finishes the work it enables
 * ("run to completion"): under the connection's lock it feeds the
 * engine, posts what the engine asks for and hands the engine's events to
 * the roles, which settle their bookkeeping there and queue the rest
 * (work.c); after dropping the lock it runs that queue (an asynchronous
 * call's callback, an incoming call's handler unless the server has a
 * worker pool).  A synchronous caller's outcome needs no queue: its role
 * tells the waiting thread under the lock (rpcrdma_rpc_wait_done_locked)
 * and the caller decodes its own reply.  Three kinds of thread attend a
 * connection:
 *
 *  - its driver: one of the threads waiting synchronously on it (their
 *    list is the connection's) polls the CQ itself, arms it and sleeps on
 *    its fd (with the connection's kick eventfd beside it) until its own
 *    outcome is in.  The other waiters park on their own condition
 *    variables without the connection's lock (told, they are taken off
 *    the list for them and never take the lock again; their wake-up
 *    runs after the teller drops it); when the driver is done, or about
 *    to run work it polled (which may take long, or wait itself), the
 *    role passes to one of them that is parked, never to one whose
 *    thread is running work.
 *    While a driver attends it, the loop's registration of the CQ fd is
 *    disarmed, so an arrival wakes exactly one thread;
 *  - the event loop (loop.c), for everything nobody else waits for:
 *    asynchronous calls, incoming calls on a server, late replies;
 *  - svc_run() for a libtirpc server (rpc/tirpc/svc_rdma.c), through the
 *    same attend path.
 *
 * Only one thread polls at a time: it holds the connection's lock for
 * the whole pass (for the iwarp provider that is where socket data is
 * read).  A client connection nobody
 * needs to watch (no call out, no callbacks served) stays unregistered
 * from the loop: a synchronous caller then pays no epoll_ctl per call; the
 * loop's 20 ms tick polls it anyway, for stray traffic.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/nocancel.h"
#include "common/thread_key.h"
#include "rpc/rpc_internal.h"

#define POLL_BATCH 32

/* ---------------------------------------------------------------------
 * Posting and events
 */
void rpcrdma_rpc_xprt_close_locked(struct rpc_xprt *x)
{
	/* The loop's next tick disconnects; the loss then unwinds every
	 * RPC with a clear error. */
	if (!x->close_req) {
		x->close_req = true;
		rpc_xprt_unquiet(x);
		if (x->loop)
			rpcrdma_rpc_loop_wake(x->loop);
	}
}

/* A work request the engine produced could not be posted, or the CQ lost
 * a completion: the connection is broken. */
static void post_failed(struct rpc_xprt *x)
{
	rpcrdma_rpc_xprt_close_locked(x);
}

/* The engine asked to close the connection (RPCRDMA_EV_CLOSE). */
static void close_asked(struct rpc_xprt *x, const struct rpcrdma_engine_event *ev)
{
	/* Flushed work requests are how every connection ends (the QP goes
	 * to error after a disconnect): nothing to report then. */
	if (ev->reason != RPCRDMA_ERR_FLUSHED &&
	    ev->reason != RPCRDMA_ERR_DISCONNECTED)
		rpcrdma_rpc_trace("%s: closing: %s", x->name,
				  rpcrdma_strerror(ev->reason));
	if (ev->reconnect && x->client && !x->no_reconnect) {
		/* The engine's calls were never sent: a new connection takes
		 * them (a lost v2 opener falls back to v1 there, docs/v2.md). */
		x->fallback_reconnect = true;
		rpcrdma_rpc_trace("%s: version 2 opener not answered in time: "
				  "reconnecting in version 1", x->name);
	}
	if (ev->reason == RPCRDMA_ERR_PEER_ERR_VERS) {
		/* The v2 opener was refused and we may not fall back
		 * (V2_ONLY): another connection would be refused the same
		 * way. */
		x->refused = ev->reason;
		x->no_reconnect = true;
	}
	post_failed(x);
}

/* post: the engine's work requests go out now; otherwise they stay in
 * its queue (which is sized for every one it may hold, engine/work_queue.c)
 * until a pump that posts. */
static void pump(struct rpc_xprt *x, struct rpc_work *w, bool post)
{
	struct rpcrdma_engine_wr *wr;
	rpc_xprt_unquiet(x); /* the engine moved, or may have */
	/* Every work request the engine has goes out in one chain per queue
	 * (a provider can then send several messages in one system call:
	 * the iwarp provider batches their FPDUs).  The engine's entries
	 * stay valid until its next input, and nothing here gives it one.
	 * Receives first: one must never come after the Send whose reply
	 * it is for (an iWARP Send with no receive posted is fatal). */
	struct rpcrdma_send_wr *sh = NULL, **st = &sh;
	struct rpcrdma_recv_wr *rh = NULL, **rt = &rh;
	x->wr_owed = !post;
	while (post && (wr = rpcrdma_engine_next_wr(x->e))) {
		if (x->dead || x->close_req)
			continue; /* nothing may go out any more */
		if (wr->is_recv) {
			*rt = &wr->recv;
			rt = &wr->recv.next;
		} else {
			*st = &wr->send;
			st = &wr->send.next;
		}
	}
	if (rh) {
		struct rpcrdma_recv_wr *bad = NULL;
		int rc = rpcrdma_post_recv(x->qp, rh, &bad);
		if (rc < 0) {
			rpcrdma_rpc_trace("%s: post recv failed: %s", x->name,
					  rpcrdma_strerror(rc));
			post_failed(x);
		}
	}
	if (sh && !x->close_req) {
		struct rpcrdma_send_wr *bad = NULL;
		int rc = rpcrdma_post_send(x->qp, sh, &bad);
		if (rc < 0) {
			rpcrdma_rpc_trace("%s: post send failed: %s", x->name,
					  rpcrdma_strerror(rc));
			post_failed(x);
		}
	}
	struct rpcrdma_engine_event ev;
	while (rpcrdma_engine_poll_event(x->e, &ev)) {
		struct rpc_up *up;
		switch (ev.type) {
		case RPCRDMA_EV_CALL_DONE:
		case RPCRDMA_EV_CALL_RELEASED:
			up = &x->up[RPC_REQUESTER];
			break;
		case RPCRDMA_EV_INCOMING_CALL:
		case RPCRDMA_EV_REPLY_SENT:
			up = &x->up[RPC_RESPONDER];
			break;
		case RPCRDMA_EV_CLOSE:
			close_asked(x, &ev);
			continue;
		default:
			continue;
		}
		/* Bookkeeping under the lock; what the caller or handler
		 * does comes after it is dropped (w). */
		up->ops->event_locked(up->state, x, &ev, w);
	}
	if (!x->vers_noted && x->peer_key[0])
		rpcrdma_rpc_xprt_note_version(x);
	if (!x->dead)
		for (int i = 0; i < RPC_ROLES; i++)
			if (x->up[i].ops->pumped_locked)
				x->up[i].ops->pumped_locked(x->up[i].state, x,
							    w);
}

void rpcrdma_rpc_xprt_pump_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	pump(x, w, true);
}

void rpcrdma_rpc_xprt_pump_sync_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	/* The driver takes the lock again before it sleeps, runs work or
	 * leaves the role, and posts what is owed each time
	 * (post_owed_locked); asleep, busy or absent, it would not come
	 * soon. */
	pump(x, w, !x->driver || x->driver_busy || x->driver_asleep);
}

/* With the lock held, by the driver: posts what callers left for it. */
static void post_owed_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	if (x->wr_owed)
		pump(x, w, true);
}

void rpcrdma_rpc_xprt_unlock_run(struct rpc_xprt *x, struct rpc_work *w)
{
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_work_run(w);
}

/* ---------------------------------------------------------------------
 * Watching by the loop
 */
void rpcrdma_rpc_xprt_watch_locked(struct rpc_xprt *x, bool on)
{
	if (x->watched == on || x->loop_epfd < 0 || !x->cq)
		return;
	struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = x};
	if (epoll_ctl(x->loop_epfd, EPOLL_CTL_MOD,
		      x->rd->ops->cq_fd(x->cq), &ev) == 0)
		x->watched = on;
}

/* Does anything on x need a thread to notice arrivals when no caller
 * drives it?  A client with nothing out and no callbacks served does not:
 * whatever comes (a stray reply) waits for its next call or the tick. */
static bool needs_watch(const struct rpc_xprt *x)
{
	if (x->server || x->reconnecting || !x->connected || x->dead)
		return true;
	for (int i = 0; i < RPC_ROLES; i++)
		if (x->up[i].ops->busy_locked(x->up[i].state, x))
			return true;
	return false;
}

void rpcrdma_rpc_xprt_need_attention_locked(struct rpc_xprt *x)
{
	if (!x->driver && needs_watch(x))
		rpcrdma_rpc_xprt_watch_locked(x, true);
}

void rpcrdma_rpc_xprt_kick(struct rpc_xprt *x)
{
	uint64_t one = 1;
	if (x->kickfd >= 0) {
		ssize_t r = write(x->kickfd, &one, sizeof(one));
		(void)r;
	}
}

/* ---------------------------------------------------------------------
 * Polling
 *
 * One pass holds the connection's lock throughout: poll the CQ, feed the
 * engine, post what it asks for, hand its events to the roles.  Nothing
 * else may touch the QP and the CQ meanwhile, so the provider sees one
 * consumer at a time (provider.h).  The CQ is armed only before its
 * poller sleeps, then polled once more: a completion after the arm wakes
 * the fd, one before it is polled here (rping's order).
 */
/* With the lock held: feeds n polled completions to the engine and posts
 * what it asks for. */
static void feed_locked(struct rpc_xprt *x, const struct rpcrdma_wc *wc, int n,
			struct rpc_work *w)
{
	if (n < 0) {
		if (!x->close_req) {
			/* The CQ lost a completion: some call or reply would
			 * wait for it for ever. */
			rpcrdma_rpc_trace("%s: poll_cq: %s", x->name,
					  rpcrdma_strerror(n));
			post_failed(x);
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status && wc[i].status != RPCRDMA_WC_WR_FLUSH_ERR)
			rpcrdma_rpc_trace("%s: work completion status %d "
					  "opcode %d vendor_err %#x", x->name,
					  wc[i].status, wc[i].opcode,
					  wc[i].vendor_err);
		rpcrdma_engine_completion(x->e, &wc[i]);
	}
	rpcrdma_rpc_xprt_pump_locked(x, w);
}

/* With the lock held: polls until a batch leaves the CQ empty.  Returns
 * how many completions came. */
static int poll_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	struct rpcrdma_wc wc[POLL_BATCH];
	int n, total = 0;
	do {
		n = x->rd->ops->poll_cq(x->cq, POLL_BATCH, wc);
		if (n != 0)
			feed_locked(x, wc, n, w);
		if (n > 0)
			total += n;
	} while (n == POLL_BATCH);
	return total;
}

/* With the lock held: arm, then poll what came before the arm (when the
 * provider says something may have). */
static int arm_poll_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	if (x->rd->ops->req_notify_cq(x->cq) == 0)
		return 0;
	return poll_locked(x, w);
}

bool rpcrdma_rpc_xprt_drain_locked(struct rpc_xprt *x, struct rpc_work *w)
{
	if (!x->cq)
		return false;
	poll_locked(x, w);
	return true;
}

/* ---------------------------------------------------------------------
 * The loop's side
 */
/* With the lock held, by x's loop: x's RDMA Read window is its share of
 * the window while other connections of the loop have work, down to one
 * Read piece (RFC 8166 §3.3.1 leaves Reads in progress to the
 * implementation).  One client moving bulk data then cannot keep its
 * poll group placing Read responses while small calls of other
 * connections wait behind them; alone, it has the whole window, which
 * its rate needs (docs/SCALE.md, fairness). */
static void share_read_window_locked(struct rpc_xprt *x)
{
	uint32_t want = x->opts.read_window;
	unsigned busy = atomic_load_explicit(&x->loop->busy_conns,
					     memory_order_relaxed);
	if (busy > 1 && want > RPC_READ_SHARE_MIN)
		want = RPC_READ_SHARE_MIN;
	rpcrdma_engine_set_read_window(x->e, want);
}

/* With the lock held: does a driver attend x (and arm the loop again
 * when it leaves), or has x no CQ?  A loop's wake-up then raced the
 * disarm: the loop stops watching it. */
static bool attended_elsewhere_locked(struct rpc_xprt *x)
{
	if ((!x->driver || x->driver_busy) && x->cq)
		return false;
	rpcrdma_rpc_xprt_watch_locked(x, false);
	return true;
}

int rpcrdma_rpc_xprt_attend(struct rpc_xprt *x, bool woken, bool arm)
{
	struct rpc_work w;
	rpc_work_init(&w);

	pthread_mutex_lock(&x->lock);
	if (x->loop && x->e && x->server)
		share_read_window_locked(x);
	if (attended_elsewhere_locked(x)) {
		pthread_mutex_unlock(&x->lock);
		return -1;
	}
	if (woken)
		x->rd->ops->ack_cq_events(x->cq);
	/* A driver posts what callers left for it before it gives up the
	 * role; whoever attends x next posts it too, should any be left. */
	post_owed_locked(x, &w);
	int n = poll_locked(x, &w);
	if (arm && !rpc_work_empty(&w)) {
		/* The work first, then the arm: a handler run here posts its
		 * reply, and a Send completion on an armed CQ costs the
		 * provider a wake-up of the fd (an eventfd write on iwarp)
		 * and this thread a wake-up, an ack and a read for what it
		 * polls below anyway (docs/SCALE.md, what a reply holds). */
		rpcrdma_rpc_xprt_unlock_run(x, &w);
		int m = rpcrdma_rpc_xprt_arm(x);
		return m > 0 ? n + m : n;
	}
	if (arm)
		n += arm_poll_locked(x, &w);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	return n;
}

int rpcrdma_rpc_xprt_arm(struct rpc_xprt *x)
{
	struct rpc_work w;
	rpc_work_init(&w);

	pthread_mutex_lock(&x->lock);
	if (attended_elsewhere_locked(x)) {
		pthread_mutex_unlock(&x->lock);
		return -1;
	}
	post_owed_locked(x, &w);
	/* No poll before the arm: what came since x's last poll is either
	 * queued on the CQ, and the arm says so (then it is polled), or
	 * not yet taken off the wire, and the fd the poller sleeps on
	 * reports it (the provider's req_notify_cq contract).  A poll
	 * here would cost an iwarp connection a recvfrom that finds
	 * nothing most of the time (docs/SCALE.md, arming without a
	 * poll). */
	int n = arm_poll_locked(x, &w);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	return n;
}

void rpcrdma_rpc_xprt_tick(struct rpc_xprt *x, uint64_t now)
{
	const struct rpcrdma_provider_ops *ops = x->rd->ops;
	struct rpc_work w;
	bool lost = false;

	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	/* 0: x moved since its last tick (rpc_xprt_unquiet), or was not
	 * quiet then. */
	bool was_quiet = atomic_load_explicit(&x->quiet_until,
					      memory_order_relaxed) != 0;
	if (x->close_req && !x->disconnect_sent && x->id && !x->dead) {
		x->disconnect_sent = true;
		/* DISCONNECTED follows and unwinds the engine; if the
		 * provider cannot even start the disconnect, unwind now. */
		lost = ops->disconnect(x->id) < 0;
	}
	if (x->e && x->connected && !x->dead)
		rpcrdma_engine_tick(x->e, now); /* v2 opener, short MRs,
						  an idle grant */
	rpcrdma_rpc_xprt_note_version(x);
	rpcrdma_rpc_note_version_locked(x);
	uint64_t next = UINT64_MAX; /* the earliest deadline on x */
	for (int i = 0; i < RPC_ROLES; i++) {
		if (!x->up[i].ops->tick_locked)
			continue;
		uint64_t d = x->up[i].ops->tick_locked(x->up[i].state, x,
							now, &w);
		if (d < next)
			next = d;
	}
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	int polled = 0;
	if (x->cq && (!x->driver || x->driver_busy)) {
		/* Attended by nobody, or its wake-ups were turned off while
		 * another thread polled: look now, and watch again if it
		 * should be watched. */
		polled = arm_poll_locked(x, &w);
		rpcrdma_rpc_xprt_need_attention_locked(x);
	}
	/* The loop skips x until its earliest deadline: a call's time-out,
	 * the engine's (the v2 opener, the Responder's RDMA operations, an
	 * idle grant: rpcrdma_engine_next_deadline), and at the latest the
	 * next whole multiple of its quiet period, so that the quiet
	 * connections of a loop come due together, one wake-up for all of
	 * them.  Any pass of the engine ends the skip (rpc_xprt_unquiet).
	 * A connection that is changing state (connecting, closing, its
	 * version not settled, work left) is ticked at the loop's pace. */
	bool settled = x->e && x->connected && !x->dead && !x->close_req &&
		       !x->reconnecting && x->vers_logged &&
		       (!x->peer_key[0] || x->vers_noted) && rpc_work_empty(&w);
	if (settled) {
		uint64_t d = rpcrdma_engine_next_deadline(x->e, now);
		if (d < next)
			next = d;
	}
	/* The quiet period: RPC_QUIET_TICK_MS after x moved, doubled by
	 * every tick that finds x as it was (quiet until now, nothing
	 * polled, no deadline, no buffer of its pool to trim), up to
	 * RPC_QUIET_TICK_MAX_MS.  This tick's look at the CQ is only in
	 * case a wake-up was lost (the CQ fd wakes the loop); an idle
	 * connection's ticks are then its only cost, and they fall from one
	 * per 2 s to one per 32 s. */
	if (!settled || !was_quiet || polled > 0)
		x->quiet_level = 0;
	else if (next == UINT64_MAX && x->quiet_level < RPC_QUIET_LEVELS &&
		 !rpcrdma_rpc_bufpool_holds_idle(x->rd->pool))
		x->quiet_level++;
	uint64_t period = (uint64_t)RPC_QUIET_TICK_MS << x->quiet_level;
	uint64_t until = (now + period) / period * period;
	if (next < until)
		until = next;
	atomic_store_explicit(&x->quiet_until,
			      settled && until > now ? until : 0,
			      memory_order_relaxed);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	if (lost)
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
}

/* ---------------------------------------------------------------------
 * Synchronous waits
 */
static void inside_leave_locked(struct rpc_xprt *x)
{
	if (--x->inside == 0)
		pthread_cond_broadcast(&x->inside_cv);
}

static void take_role_locked(struct rpc_xprt *x, struct rpc_wait *s)
{
	x->driver = s;
	x->driver_busy = false;
	rpcrdma_rpc_xprt_watch_locked(x, false);
}

/* With the driver s leaving the role: gives it to another waiter that
 * will drive, if there is one (true). */
static bool hand_role_locked(struct rpc_xprt *x, struct rpc_wait *s)
{
	for (struct rpc_wait *o = x->waiters; o; o = o->next) {
		/* Not to a waiter whose thread runs work: it would not drive
		 * until that work returns, and the work may itself wait on
		 * x (a synchronous call from a callback, parked as another
		 * waiter of this list), so nobody would drive meanwhile.  It
		 * takes the role back, if nobody has it, when its work
		 * returns. */
		if (o == s || atomic_load(&o->finished) || o->working)
			continue;
		/* It waits anyway: it drives from here, no other wake-up.
		 * Asleep, it comes back for the lock. */
		x->driver = o;
		x->driver_busy = false;
		pthread_mutex_lock(&o->w->m);
		if (o->park == PARK_SLEEPING) {
			o->park = PARK_DRIVE;
			pthread_cond_signal(&o->w->cv);
		}
		pthread_mutex_unlock(&o->w->m);
		return true;
	}
	return false;
}

static void leave_role_locked(struct rpc_xprt *x, struct rpc_wait *s)
{
	if (x->driver != s)
		return;
	x->driver = NULL;
	x->driver_busy = false;
	if (!hand_role_locked(x, s))
		rpcrdma_rpc_xprt_need_attention_locked(x);
}

static void waiters_remove(struct rpc_xprt *x, struct rpc_wait *s)
{
	struct rpc_wait **pp = &x->waiters;
	while (*pp && *pp != s)
		pp = &(*pp)->next;
	if (*pp)
		*pp = s->next;
	s->next = NULL;
}

/* A parked waiter's deferred wake-up (rpcrdma_rpc_wait_done_locked). */
static void wait_tell(struct rpc_work_item *it)
{
	struct rpc_wait *s = (struct rpc_wait *)((char *)it -
						 offsetof(struct rpc_wait, tell));
	struct rpc_waiter *w = s->w;
	pthread_mutex_lock(&w->m);
	s->park = PARK_TOLD;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m); /* s may be gone from here on */
}

/* The thread's waiter (rpcrdma_rpc_waiter_self), NULL until it needs one. */
static _Thread_local struct rpc_waiter *self_waiter;

void rpcrdma_rpc_wait_done_locked(struct rpc_xprt *x, struct rpc_wait *s,
				  int status, struct rpc_work *work)
{
	s->status = status;
	/* Under the lock: the waiter checks it under the lock before it
	 * parks. */
	atomic_store(&s->finished, true);
	/* It is this thread: it looks when it returns.  (Compared with the
	 * pointer itself, so a loop thread makes no waiter here.) */
	if (s->w == self_waiter)
		return;
	bool driver = x->driver == s;
	pthread_mutex_lock(&s->w->m);
	if (s->park == PARK_SLEEPING) {
		/* Its thread will not come back to x: what it would do
		 * under the lock on its way out is done here.  s lives on
		 * that thread's stack, so nothing touches s once w->m is
		 * dropped. */
		waiters_remove(x, s);
		inside_leave_locked(x);
		if (work) {
			s->park = PARK_TELLING;
			rpc_work_add_wake(work, &s->tell, wait_tell);
			pthread_mutex_unlock(&s->w->m);
			return; /* not the driver: it parked */
		}
		s->park = PARK_TOLD;
	}
	pthread_cond_signal(&s->w->cv);
	pthread_mutex_unlock(&s->w->m);
	if (driver)
		rpcrdma_rpc_xprt_kick(x); /* it may sleep on the CQ fd */
}

/* With x->lock held, by a waiter s that does not drive: parks without
 * the lock until it is told (true: then it is off x's list, and returns
 * without the lock), given the driver's role, or its deadline (ms, 0:
 * none) passes (false: with the lock again). */
static bool park(struct rpc_xprt *x, struct rpc_wait *s)
{
	struct rpc_waiter *w = s->w;
	pthread_mutex_lock(&w->m);
	s->park = PARK_SLEEPING;
	pthread_mutex_unlock(&x->lock);
	struct timespec ts = {(time_t)(s->deadline / 1000),
			      (long)(s->deadline % 1000) * 1000000L};
	while (s->park == PARK_SLEEPING || s->park == PARK_TELLING) {
		if (!s->deadline || s->park == PARK_TELLING) {
			pthread_cond_wait(&w->cv, &w->m);
		} else if (pthread_cond_timedwait(&w->cv, &w->m, &ts) ==
				   ETIMEDOUT &&
			   s->park == PARK_SLEEPING) {
			/* From here on the tellers leave s on the list for
			 * this thread to take off. */
			s->park = PARK_RETURNING;
		}
	}
	bool told = s->park == PARK_TOLD;
	s->park = PARK_NONE;
	pthread_mutex_unlock(&w->m);
	if (told)
		return true;
	pthread_mutex_lock(&x->lock);
	return false;
}

/* Sleeps on the CQ fd and the kick fd until deadline (now: the pass's
 * time); true when the CQ fd was readable.  Called without the lock, by
 * the driver, which made x->kickfd.  Without one (out of descriptors)
 * it looks again every 20 ms instead of being kicked. */
static bool sleep_on_cq(struct rpc_xprt *x, uint64_t deadline, uint64_t *now)
{
	struct pollfd p[2] = {
		{.fd = x->rd->ops->cq_fd(x->cq), .events = POLLIN},
		{.fd = x->kickfd, .events = POLLIN},
	};
	int timeout = -1;
	if (deadline) {
		uint64_t ms = rpc_clock_ms(now);
		timeout = deadline > ms ? (int)(deadline - ms) : 0;
	}
	if (x->kickfd < 0 && (timeout < 0 || timeout > 20))
		timeout = 20;
	int rc = rpcrdma_poll_nocancel(p, x->kickfd < 0 ? 1 : 2, timeout);
	if (rc > 0 && p[1].revents) {
		uint64_t v;
		ssize_t r = read(x->kickfd, &v, sizeof(v));
		(void)r;
	}
	return rc > 0 && p[0].revents;
}

/* With the lock held, the driver s found nothing: polls the CQ (unarmed,
 * as perftest does) for busy_poll_us when spinning has paid lately
 * (busy_poll.c).  The lock is dropped between polls, so other threads
 * may start calls meanwhile.  True when the spin found something. */
static bool spin_locked(struct rpc_xprt *x, struct rpc_wait *s,
			struct rpc_work *w, uint64_t *now)
{
	struct rpc_busy b;
	if (!rpcrdma_rpc_busy_start(x->opts.busy_poll_us, &x->spin, &b, now))
		return false;
	bool found = false, more;
	do {
		pthread_mutex_unlock(&x->lock);
		more = rpcrdma_rpc_busy_more(&b, now);
		pthread_mutex_lock(&x->lock);
		post_owed_locked(x, w);
		found = atomic_load(&s->finished) || x->driver != s ||
			poll_locked(x, w) > 0 || !rpc_work_empty(w);
	} while (!found && more);
	rpcrdma_rpc_busy_end(&x->spin, &b, found, *now);
	return found;
}

/* With the lock held: runs w without it.  A driver hands its role to a
 * parked waiter first: that waiter's outcome may need a poll this work
 * would hold up, for as long as the work takes (a callback may block, or
 * wait for a call of its own). */
static void run_unlocked(struct rpc_xprt *x, struct rpc_wait *s,
			 struct rpc_work *w)
{
	s->working = true;
	/* What callers left for this driver goes before the work: whoever
	 * drives next may not be running soon. */
	post_owed_locked(x, w);
	if (x->driver == s && !hand_role_locked(x, s)) {
		/* Nobody else waits to drive: the role stays, marked busy,
		 * so that a synchronous call this work makes on x drives it
		 * and the loop attends it meanwhile (rpcrdma_rpc_xprt_attend;
		 * take_role_locked stops that again). */
		x->driver_busy = true;
		if (needs_watch(x))
			rpcrdma_rpc_xprt_watch_locked(x, true);
	}
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_work_run_nested(w);
	pthread_mutex_lock(&x->lock);
	s->working = false;
	if (x->driver == s) {
		x->driver_busy = false;
		rpcrdma_rpc_xprt_watch_locked(x, false);
	}
}

/* True when s's deadline has passed (now: the pass's time). */
static bool past_deadline(const struct rpc_wait *s, uint64_t *now)
{
	return s->deadline && rpc_clock_ms(now) >= s->deadline;
}

int rpcrdma_rpc_xprt_wait_unlock(struct rpc_xprt *x, struct rpc_wait *s)
{
	bool woken = false, first = true;
	/* The caller just posted what it waits for: nothing can have come
	 * yet, so the first pass goes straight to spinning or arming (the
	 * arm says if anything is queued after all). */
	bool look = false;
	int rc = 0;

	s->next = x->waiters;
	x->waiters = s;
	x->inside++;
	while (!atomic_load(&s->finished)) {
		/* The clock is read at most once a pass, when the pass needs
		 * it (the deadline, a spin, a sleep's time-out). */
		uint64_t now = 0;
		bool was_woken = woken;
		woken = false;
		/* The deadline is seen after a first look at the CQ: an
		 * outcome already there wins.  A pass the CQ fd woke looks
		 * first and sees the deadline below when it finds nothing. */
		if (!first && !was_woken && past_deadline(s, &now)) {
			rc = RPCRDMA_ERR_TIMEOUT;
			break;
		}
		first = false;
		if (x->driver != s && (!x->driver || x->driver_busy) && x->cq)
			take_role_locked(x, s);
		if (x->driver != s) {
			/* Another thread drives: it tells us, or passes the
			 * role to us. */
			if (park(x, s))
				return 0;
			look = true;
			continue;
		}
		struct rpc_work w;
		rpc_work_init(&w);
		if (was_woken)
			x->rd->ops->ack_cq_events(x->cq);
		post_owed_locked(x, &w);
		if ((!look && !was_woken) ||
		    (poll_locked(x, &w) == 0 && rpc_work_empty(&w) &&
		     !atomic_load(&s->finished))) {
			if (was_woken && past_deadline(s, &now)) {
				rc = RPCRDMA_ERR_TIMEOUT;
				break;
			}
			look = true;
			if (!spin_locked(x, s, &w, &now) &&
			    arm_poll_locked(x, &w) == 0 && rpc_work_empty(&w) &&
			    !atomic_load(&s->finished)) {
				/* Armed and drained: sleep until the CQ or a
				 * kick (the kick's eventfd made now, under the
				 * lock every kick takes, if this is the first
				 * driver to sleep). */
				if (x->kickfd < 0)
					x->kickfd = eventfd(0, EFD_NONBLOCK |
								   EFD_CLOEXEC);
				/* Nothing is owed here: the lock has been
				 * held since the last post_owed_locked.
				 * Asleep, callers post their own. */
				x->driver_asleep = true;
				pthread_mutex_unlock(&x->lock);
				woken = sleep_on_cq(x, s->deadline, &now);
				pthread_mutex_lock(&x->lock);
				x->driver_asleep = false;
				continue;
			}
		}
		if (!rpc_work_empty(&w))
			run_unlocked(x, s, &w);
	}
	/* A driver leaving posts what callers left for it: the next one
	 * may be parked, or there may be none. */
	struct rpc_work w;
	rpc_work_init(&w);
	if (x->driver == s)
		post_owed_locked(x, &w);
	leave_role_locked(x, s);
	waiters_remove(x, s);
	inside_leave_locked(x);
	pthread_mutex_unlock(&x->lock);
	if (!rpc_work_empty(&w))
		rpcrdma_rpc_work_run(&w);
	return rc;
}

void rpcrdma_rpc_xprt_quiesce_locked(struct rpc_xprt *x)
{
	while (x->inside) {
		if (x->driver)
			rpcrdma_rpc_xprt_kick(x);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&x->inside_cv, &x->lock, &ts);
	}
}

/* ---------------------------------------------------------------------
 * Waiters
 */
/* At the thread's exit; a call after it on this thread (another key's
 * destructor) makes a new waiter rather than use this one freed. */
static void waiter_free(void *p)
{
	struct rpc_waiter *w = p;
	if (w && self_waiter == w)
		self_waiter = NULL;
	if (w) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->m);
		free(w);
	}
}

static struct rpcrdma_thread_key waiter_key =
	RPCRDMA_THREAD_KEY_INIT(waiter_free);

struct rpc_waiter *rpcrdma_rpc_waiter_self(void)
{
	if (self_waiter)
		return self_waiter;
	struct rpc_waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	/* Deadlines are CLOCK_MONOTONIC milliseconds (the engine's clock). */
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &a);
	pthread_condattr_destroy(&a);
	pthread_mutex_init(&w->m, NULL);
	/* In a process with no pthread key left the waiter still serves
	 * the thread's calls, as libtirpc's per-thread state does, but it
	 * is not freed when the thread exits (its size is lost then, once
	 * per thread); said once. */
	if (!rpcrdma_thread_key_set(&waiter_key, w)) {
		static atomic_flag told = ATOMIC_FLAG_INIT;
		if (!atomic_flag_test_and_set(&told))
			rpcrdma_rpc_log("no pthread key left (PTHREAD_KEYS_"
					"MAX): a thread's waiter (%zu bytes) "
					"is not freed when it exits",
					sizeof(*w));
	}
	self_waiter = w;
	return w;
}
