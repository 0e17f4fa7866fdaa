/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Progress of a connection: who polls its CQ, and what is done with what
 * comes out (DESIGN.md, "run to completion").
 *
 * The thread that polls a completion finishes the work it enables: it
 * feeds the engine, posts what the engine asks for, and after dropping the
 * lock completes the calls that ended (a synchronous caller's reply is
 * decoded for it, an asynchronous one's callback runs) and dispatches the
 * incoming calls (handlers run right there unless the server has a worker
 * pool).  Three kinds of thread attend a connection:
 *
 *  - its driver: a synchronous caller whose call is out polls the CQ
 *    itself, arms it and sleeps on its fd (with the connection's kick
 *    eventfd beside it) until its reply is in.  Other synchronous callers
 *    of the connection sleep on their own condition variables; the driver
 *    delivers their calls as it finds them and, when its own is done,
 *    hands the role to one of them.  While it drives, the loop's
 *    registration of the CQ fd is disarmed, so an arrival wakes exactly
 *    one thread;
 *  - the event loop (loop.c), for everything nobody else waits for:
 *    asynchronous calls, incoming calls on a server, late replies;
 *  - svc_run() for a libtirpc server (rpc/tirpc/svc_rdma.c), through the
 *    same attend path.
 *
 * Only one thread polls at a time (x->polling, the token: taken under the
 * lock, held without it while the provider polls, which for the iwarp
 * provider is where socket data is read).  A client connection nobody
 * needs to watch (no call out, no callbacks served) stays unregistered
 * from the loop: a synchronous caller then pays no epoll_ctl per call; the
 * loop's 20 ms tick polls it anyway, for stray traffic.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"

#define POLL_BATCH 32

/* ---------------------------------------------------------------------
 * Posting and events
 */
static void post_failed(struct rpc_xprt *x)
{
	/* A work request the engine produced could not be posted, or the CQ
	 * lost a completion: the connection is broken.  Disconnect; the
	 * loss then unwinds every RPC with a clear error. */
	if (!x->close_req) {
		x->close_req = true;
		if (x->loop)
			rpcrdma_rpc_loop_wake(x->loop);
	}
}

void rpcrdma_rpc_xprt_pump_locked(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	struct rpcrdma_engine_wr *w;
	/* Every work request the engine has goes out in one chain per queue
	 * (a provider can then send several messages in one system call:
	 * the iwarp provider batches their FPDUs).  The engine's entries
	 * stay valid until its next input, and nothing here gives it one.
	 * Receives first: one must never come after the Send whose reply
	 * it is for (an iWARP Send with no receive posted is fatal). */
	struct rpcrdma_send_wr *sh = NULL, **st = &sh;
	struct rpcrdma_recv_wr *rh = NULL, **rt = &rh;
	while ((w = rpcrdma_engine_next_wr(x->e))) {
		if (x->dead || x->close_req)
			continue; /* nothing may go out any more */
		if (w->is_recv) {
			*rt = &w->recv;
			rt = &w->recv.next;
		} else {
			*st = &w->send;
			st = &w->send.next;
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
		switch (ev.type) {
		case RPCRDMA_EV_CALL_DONE:
			/* Bookkeeping needs the lock; the caller's completion
			 * happens after it is dropped. */
			rpcrdma_rpc_call_engine_done_locked(x, &ev, b);
			break;
		case RPCRDMA_EV_CALL_RELEASED:
			rpcrdma_rpc_call_released_locked(x, &ev, b);
			break;
		case RPCRDMA_EV_INCOMING_CALL:
			rpcrdma_rpc_disp_incoming_locked(x, &ev, b);
			break;
		case RPCRDMA_EV_REPLY_SENT:
			rpcrdma_rpc_disp_reply_sent_locked(x, &ev, b);
			break;
		case RPCRDMA_EV_CLOSE:
			/* Flushed work requests are how every connection
			 * ends (the QP goes to error after a disconnect):
			 * nothing to report then. */
			if (ev.reason != RPCRDMA_ERR_FLUSHED &&
			    ev.reason != RPCRDMA_ERR_DISCONNECTED)
				rpcrdma_rpc_trace("%s: closing: %s", x->name,
						  rpcrdma_strerror(ev.reason));
			if (ev.reconnect && x->client && !x->no_reconnect) {
				/* The engine's calls were never sent: a new
				 * connection takes them (a lost v2 opener
				 * falls back to v1 there, docs/v2.md). */
				x->fallback_reconnect = true;
				rpcrdma_rpc_trace("%s: version 2 opener not "
						  "answered in time: "
						  "reconnecting in version 1",
						  x->name);
			}
			if (ev.reason == RPCRDMA_ERR_PEER_ERR_VERS) {
				/* The v2 opener was refused and we may not
				 * fall back (V2_ONLY): another connection
				 * would be refused the same way. */
				x->refused = ev.reason;
				x->no_reconnect = true;
			}
			post_failed(x);
			break;
		}
	}
	if (!x->dead && x->waitq_head)
		rpcrdma_rpc_calls_submit_waiting_locked(x, b);
}

void rpcrdma_rpc_xprt_deliver(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	if (b->to_free) {
		rpcrdma_rpc_blocks_free(b->to_free);
		b->to_free = NULL;
	}
	if (b->done)
		rpcrdma_rpc_calls_deliver(x, b);
	if (b->in_head)
		rpcrdma_rpc_disp_deliver(x, b);
}

void rpcrdma_rpc_xprt_unlock_deliver(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_xprt_deliver(x, b);
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
	return x->server || x->disp || x->in_engine || x->waitq_head ||
	       x->reconnecting || !x->connected || x->dead;
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
 */
/* The token: one thread polls the CQ at a time. */
static bool token_take_locked(struct rpc_xprt *x)
{
	if (x->polling)
		return false;
	x->polling = true;
	x->inside++;
	return true;
}

static void inside_leave_locked(struct rpc_xprt *x)
{
	if (--x->inside == 0)
		pthread_cond_broadcast(&x->inside_cv);
}

static void token_release_locked(struct rpc_xprt *x)
{
	x->polling = false;
	inside_leave_locked(x);
	/* A driver that found the token taken waits for it. */
	if (x->driver)
		pthread_cond_signal(&x->driver->cv);
}

/* With the token and the lock held: feeds n polled completions to the
 * engine and posts what it asks for. */
static void feed_locked(struct rpc_xprt *x, const struct rpcrdma_wc *wc, int n,
			struct rpc_evbuf *b)
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
	if (n == 0)
		return;
	uint64_t now = rpcrdma_rpc_now_ms();
	for (int i = 0; i < n; i++) {
		if (wc[i].status && wc[i].status != RPCRDMA_WC_WR_FLUSH_ERR)
			rpcrdma_rpc_trace("%s: work completion status %d "
					  "opcode %d vendor_err %#x", x->name,
					  wc[i].status, wc[i].opcode,
					  wc[i].vendor_err);
		rpcrdma_engine_completion(x->e, &wc[i], now);
	}
	rpcrdma_rpc_xprt_pump_locked(x, b);
}

/* With the token and the lock held: one batch of completions polled
 * without the lock, then fed to the engine.  Returns how many. */
static int poll_batch_locked(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	struct rpcrdma_wc wc[POLL_BATCH];

	pthread_mutex_unlock(&x->lock);
	int n = x->rd->ops->poll_cq(x->cq, POLL_BATCH, wc);
	pthread_mutex_lock(&x->lock);
	feed_locked(x, wc, n, b);
	return n > 0 ? n : 0;
}

/* With the token and the lock held: arm the CQ, then drain it (rping's
 * order, provider.h: a completion after the arm wakes the fd, one before
 * it is polled here).  woken: the fd was readable; consume its
 * notification first.  Draining stops at the first batch that left the
 * queue empty; data the provider has not turned into completions yet
 * keeps the fd readable.  The provider calls run without the lock. */
static void drain_arm_locked(struct rpc_xprt *x, bool woken,
			     struct rpc_evbuf *b)
{
	const struct rpcrdma_provider_ops *ops = x->rd->ops;
	struct rpcrdma_wc wc[POLL_BATCH];

	pthread_mutex_unlock(&x->lock);
	if (woken)
		ops->ack_cq_events(x->cq);
	ops->req_notify_cq(x->cq);
	int n = ops->poll_cq(x->cq, POLL_BATCH, wc);
	pthread_mutex_lock(&x->lock);
	feed_locked(x, wc, n, b);
	if (n == POLL_BATCH)
		while (poll_batch_locked(x, b) == POLL_BATCH)
			;
}

bool rpcrdma_rpc_xprt_drain_locked(struct rpc_xprt *x, struct rpc_evbuf *b)
{
	if (!x->cq || !token_take_locked(x))
		return false;
	while (poll_batch_locked(x, b) > 0)
		;
	token_release_locked(x);
	return true;
}

/* ---------------------------------------------------------------------
 * The loop's side
 */
void rpcrdma_rpc_xprt_attend(struct rpc_xprt *x)
{
	struct rpc_evbuf b = RPC_EVBUF_INIT;

	pthread_mutex_lock(&x->lock);
	if ((x->driver && !x->driver_busy) || !x->cq) {
		/* Its driver attends it (and arms the loop again when it
		 * leaves); this wake-up raced the disarm. */
		rpcrdma_rpc_xprt_watch_locked(x, false);
		pthread_mutex_unlock(&x->lock);
		return;
	}
	if (!token_take_locked(x)) {
		/* Someone is polling right now and will deliver what comes;
		 * stop this fd from waking us until the tick looks again. */
		rpcrdma_rpc_xprt_watch_locked(x, false);
		pthread_mutex_unlock(&x->lock);
		return;
	}
	drain_arm_locked(x, true, &b);
	token_release_locked(x);
	rpcrdma_rpc_xprt_unlock_deliver(x, &b);
}

void rpcrdma_rpc_xprt_tick(struct rpc_xprt *x, uint64_t now)
{
	const struct rpcrdma_provider_ops *ops = x->rd->ops;
	struct rpc_evbuf b = RPC_EVBUF_INIT;
	bool lost = false;

	pthread_mutex_lock(&x->lock);
	if (x->close_req && !x->disconnect_sent && x->id && !x->dead) {
		x->disconnect_sent = true;
		/* DISCONNECTED follows and unwinds the engine; if the
		 * provider cannot even start the disconnect, unwind now. */
		lost = ops->disconnect(x->id) < 0;
	}
	if (x->e && x->connected && !x->dead)
		rpcrdma_engine_tick(x->e, now); /* v2 opener, short MRs */
	rpcrdma_rpc_xprt_note_version(x);
	rpcrdma_rpc_note_version_locked(x);
	rpcrdma_rpc_calls_fail_locked(x, RPCRDMA_ERR_TIMEOUT, now, NULL, &b);
	rpcrdma_rpc_xprt_pump_locked(x, &b);
	if (x->cq && (!x->driver || x->driver_busy) && token_take_locked(x)) {
		/* Attended by nobody, or its wake-ups were turned off while
		 * another thread polled: look now, and watch again if it
		 * should be watched. */
		drain_arm_locked(x, false, &b);
		token_release_locked(x);
		rpcrdma_rpc_xprt_need_attention_locked(x);
	}
	rpcrdma_rpc_xprt_unlock_deliver(x, &b);
	if (lost)
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
}

/* ---------------------------------------------------------------------
 * A synchronous caller's side
 */
static void take_role_locked(struct rpc_xprt *x, struct rpc_waiter *w)
{
	x->driver = w;
	x->driver_busy = false;
	rpcrdma_rpc_xprt_watch_locked(x, false);
}

static void leave_role_locked(struct rpc_xprt *x, struct rpc_waiter *w)
{
	if (x->driver != w)
		return;
	x->driver = NULL;
	x->driver_busy = false;
	struct rpc_waiter *o = x->sync_out
		? rpcrdma_rpc_calls_other_waiter_locked(x, w) : NULL;
	if (o) {
		/* It waits anyway: it drives from here, no other wake-up. */
		x->driver = o;
		pthread_cond_signal(&o->cv);
		return;
	}
	rpcrdma_rpc_xprt_need_attention_locked(x);
}

/* Sleeps on cv until deadline (ms, 0: none). */
static void cv_wait_until(struct rpc_waiter *w, pthread_mutex_t *m,
			  uint64_t deadline)
{
	if (!deadline) {
		pthread_cond_wait(&w->cv, m);
		return;
	}
	struct timespec ts = {(time_t)(deadline / 1000),
			      (long)(deadline % 1000) * 1000000L};
	pthread_cond_timedwait(&w->cv, m, &ts);
}

/* Sleeps on the CQ fd and the kick fd until deadline (after polling them
 * for busy_poll_us); true when the CQ fd was readable.  Called without
 * the lock. */
static bool sleep_on_cq(struct rpc_xprt *x, uint64_t deadline)
{
	struct pollfd p[2] = {
		{.fd = x->rd->ops->cq_fd(x->cq), .events = POLLIN},
		{.fd = x->kickfd, .events = POLLIN},
	};
	int rc = 0;
	struct rpc_busy busy;
	if (rpcrdma_rpc_busy_start(x->opts.busy_poll_us, &busy))
		do
			rc = poll(p, 2, 0);
		while (rc == 0 && rpcrdma_rpc_busy_more(&busy));
	if (rc == 0) {
		int timeout = -1;
		if (deadline) {
			uint64_t now = rpcrdma_rpc_now_ms();
			timeout = deadline > now ? (int)(deadline - now) : 0;
		}
		rc = poll(p, 2, timeout);
	}
	if (rc > 0 && p[1].revents) {
		uint64_t v;
		ssize_t r = read(x->kickfd, &v, sizeof(v));
		(void)r;
	}
	return rc > 0 && p[0].revents;
}

void rpcrdma_rpc_xprt_wait_call(struct rpc_xprt *x, struct rpc_call *c,
				struct rpc_sync *s)
{
	struct rpc_waiter *w = s->w;
	bool armed = false, woken = false;

	x->inside++;
	while (!atomic_load(&s->finished)) {
		struct rpc_evbuf b = RPC_EVBUF_INIT;
		if (c && !s->queued && s->deadline &&
		    rpcrdma_rpc_now_ms() >= s->deadline) {
			/* Exactly once: a reply queued meanwhile wins (and
			 * the record is then no longer ours to touch). */
			rpcrdma_rpc_call_fail_one_locked(x, c, RPCRDMA_ERR_TIMEOUT,
							 &b);
			pthread_mutex_unlock(&x->lock);
			rpcrdma_rpc_xprt_deliver(x, &b);
			pthread_mutex_lock(&x->lock);
			continue;
		}
		if (s->queued) {
			/* Being delivered by another thread: it signals. */
			cv_wait_until(w, &x->lock, 0);
			continue;
		}
		if (x->driver != w && (!x->driver || x->driver_busy) && x->cq)
			take_role_locked(x, w);
		if (x->driver != w || !token_take_locked(x)) {
			/* Another thread drives or is polling: it delivers our
			 * call, or passes the role (or the token) to us. */
			cv_wait_until(w, &x->lock, s->deadline);
			continue;
		}
		if (woken || !armed) {
			drain_arm_locked(x, woken, &b);
			woken = false;
			armed = true;
		} else {
			while (poll_batch_locked(x, &b) == POLL_BATCH)
				;
		}
		token_release_locked(x);
		if (!rpc_evbuf_empty(&b)) {
			/* Deliver without the lock; meanwhile another waiter
			 * may take the role (its call may need a poll that
			 * our delivery would hold up). */
			x->driver_busy = true;
			pthread_mutex_unlock(&x->lock);
			rpcrdma_rpc_xprt_deliver(x, &b);
			pthread_mutex_lock(&x->lock);
			if (x->driver == w)
				x->driver_busy = false;
			armed = false;
			continue;
		}
		/* Armed and drained: sleep until the CQ or a kick. */
		pthread_mutex_unlock(&x->lock);
		woken = sleep_on_cq(x, s->deadline);
		pthread_mutex_lock(&x->lock);
	}
	leave_role_locked(x, w);
	inside_leave_locked(x);
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
static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;

static void waiter_free(void *p)
{
	struct rpc_waiter *w = p;
	if (w) {
		pthread_cond_destroy(&w->cv);
		free(w);
	}
}

static void waiter_key_make(void)
{
	pthread_key_create(&waiter_key, waiter_free);
}

static _Thread_local struct rpc_waiter *self_waiter;

struct rpc_waiter *rpcrdma_rpc_waiter_self(void)
{
	if (self_waiter)
		return self_waiter;
	pthread_once(&waiter_once, waiter_key_make);
	struct rpc_waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	/* Deadlines are CLOCK_MONOTONIC milliseconds (the engine's clock). */
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &a);
	pthread_condattr_destroy(&a);
	w->init = true;
	pthread_setspecific(waiter_key, w);
	self_waiter = w;
	return w;
}
