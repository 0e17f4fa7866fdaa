/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The event loop: one thread per poll group of a server, and per client
 * loop of the process (clnt.c), sleeping in epoll_wait on a wake-up
 * eventfd, the CM channel fds it watches (a server's, or one per client)
 * and the CQ fd of every connection it watches (progress.c says which and
 * when).  A readable CQ fd sends its connection to
 * rpcrdma_rpc_xprt_attend().  A tick drives call time-outs, the engines'
 * ticks and the owner's reaping (a client's reconnection): every 20 ms
 * while a connection changes state (an input came, a close is asked, a
 * registration is short); else at the earliest deadline of its
 * connections (a call's time-out, an opener's, an RDMA operation's:
 * progress.c), and every RPC_QUIET_TICK_MS at the latest, less often the
 * longer it stays idle (up to RPC_QUIET_TICK_MAX_MS).  Whatever moves
 * a connection (rpcrdma_rpc_loop_unquiet) wakes the loop from a long
 * sleep: idle connections, and calls that wait for a slow server, cost
 * no CPU.
 *
 * The CQ fds are registered level-triggered with their connection as
 * data: a connection stays armed while the loop is the one to notice its
 * arrivals, and a synchronous caller driving it disarms it with one
 * epoll_ctl from its own thread, without waking the loop.  A libtirpc
 * server (rpcrdma_rpc_loop_external) keeps the CQ fds in a second set
 * that svc_run() polls, so the thread that reads a call is svc_run's.
 *
 * Between two passes the thread does what other threads handed it
 * (rpcrdma_rpc_loop_call/_post): a client leaving a shared loop lets go
 * of its connection and channel there, where no pass holds them.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/nocancel.h"
#include "rpc/rpc_internal.h"

#define LOOP_TICK_MS 20 /* time-out granularity */
#define LOOP_CM_SLICE_NS 10000000u /* CM events' time per pass (drain_cm) */

/* epoll data of the fds that are not connections or CM channels. */
static char tag_wake, tag_kick;

/* A CM channel's epoll datum: its source with the low bit set (a
 * connection's is its aligned address; the tags above are compared
 * first). */
static uint64_t cm_datum(struct rpc_cm_src *src)
{
	return (uint64_t)(uintptr_t)src | 1u;
}

static struct rpc_cm_src *cm_of(const struct epoll_event *ev)
{
	if (!(ev->data.u64 & 1u))
		return NULL;
	return (struct rpc_cm_src *)(uintptr_t)(ev->data.u64 & ~(uint64_t)1);
}

/* The loop this thread runs, NULL on any other thread. */
static _Thread_local struct rpc_loop *self_loop;

struct rpc_loop *rpcrdma_rpc_loop_self(void)
{
	return self_loop;
}

int rpcrdma_rpc_loop_init(struct rpc_loop *l, struct rpc_dev *rd,
			  void (*on_cm)(void *, struct rpcrdma_cm_event *),
			  void (*on_round)(void *, struct rpc_loop *),
			  void *owner)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->req_lock, NULL);
	pthread_cond_init(&l->req_cv, NULL);
	l->kickfd = -1;
	l->cq_epfd = -1;
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->wakefd < 0 || l->epfd < 0)
		goto fail;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_wake};
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) != 0)
		goto fail;
	l->own_cm = (struct rpc_cm_src){.rd = rd, .on_cm = on_cm,
					.owner = owner};
	if (on_cm && rpcrdma_rpc_loop_watch_cm(l, &l->own_cm) < 0)
		goto fail;
	l->cq_epfd = l->epfd;
	l->rd = rd;
	l->on_round = on_round;
	l->owner = owner;
	return 0;
fail:
	if (l->wakefd >= 0)
		close(l->wakefd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->wakefd = l->epfd = l->cq_epfd = -1;
	pthread_mutex_destroy(&l->req_lock);
	pthread_cond_destroy(&l->req_cv);
	return RPCRDMA_ERR_SYSTEM;
}

int rpcrdma_rpc_loop_watch_cm(struct rpc_loop *l, struct rpc_cm_src *src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = cm_datum(src)};
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, src->rd->ch->fd, &ev) != 0)
		return RPCRDMA_ERR_SYSTEM;
	src->watched = true;
	return 0;
}

void rpcrdma_rpc_loop_unwatch_cm(struct rpc_loop *l, struct rpc_cm_src *src)
{
	if (!src->watched)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, src->rd->ch->fd, NULL);
	src->watched = false;
}

/* ---------------------------------------------------------------------
 * Work handed to the loop's thread, done between two passes: no event
 * of a pass is in hand then, nor a connection being attended or ticked.
 */
static void reqs_add(struct rpc_loop *l, struct rpc_loop_req *r)
{
	r->next = NULL;
	r->done = false;
	pthread_mutex_lock(&l->req_lock);
	*(l->reqs ? &l->reqs_last->next : &l->reqs) = r;
	l->reqs_last = r;
	atomic_store(&l->has_reqs, true);
	pthread_mutex_unlock(&l->req_lock);
	rpcrdma_rpc_loop_wake(l);
}

void rpcrdma_rpc_loop_post(struct rpc_loop *l, struct rpc_loop_req *r)
{
	r->sync = false;
	reqs_add(l, r);
}

void rpcrdma_rpc_loop_call(struct rpc_loop *l, struct rpc_loop_req *r)
{
	r->sync = true;
	reqs_add(l, r);
	pthread_mutex_lock(&l->req_lock);
	while (!r->done)
		pthread_cond_wait(&l->req_cv, &l->req_lock);
	pthread_mutex_unlock(&l->req_lock);
}

static void reqs_run(struct rpc_loop *l)
{
	if (!atomic_load(&l->has_reqs))
		return;
	pthread_mutex_lock(&l->req_lock);
	struct rpc_loop_req *r = l->reqs;
	l->reqs = l->reqs_last = NULL;
	atomic_store(&l->has_reqs, false);
	pthread_mutex_unlock(&l->req_lock);
	while (r) {
		/* A posted one may be freed by its fn; a called one belongs
		 * to its caller once done is seen. */
		struct rpc_loop_req *next = r->next;
		bool sync = r->sync;
		r->fn(l, r);
		if (sync) {
			pthread_mutex_lock(&l->req_lock);
			r->done = true;
			pthread_cond_broadcast(&l->req_cv);
			pthread_mutex_unlock(&l->req_lock);
		}
		r = next;
	}
}

int rpcrdma_rpc_loop_external(struct rpc_loop *l)
{
	if (l->cq_epfd != l->epfd)
		return l->cq_epfd;
	int fd = epoll_create1(EPOLL_CLOEXEC);
	int k = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_kick};
	if (fd < 0 || k < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, k, &ev) != 0) {
		if (fd >= 0)
			close(fd);
		if (k >= 0)
			close(k);
		return RPCRDMA_ERR_SYSTEM;
	}
	l->cq_epfd = fd;
	l->kickfd = k;
	return fd;
}

void rpcrdma_rpc_loop_kick(struct rpc_loop *l)
{
	uint64_t one = 1;
	if (l->kickfd >= 0) {
		ssize_t r = write(l->kickfd, &one, sizeof(one));
		(void)r;
	}
}

void rpcrdma_rpc_loop_wake(struct rpc_loop *l)
{
	uint64_t one = 1;
	ssize_t r = write(l->wakefd, &one, sizeof(one));
	(void)r;
}

static void drain_fd(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));
	(void)r;
}

int rpcrdma_rpc_loop_add(struct rpc_loop *l, struct rpc_xprt *x)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = x};
	int fd = x->rd->ops->cq_fd(x->cq);
	if (fd < 0 || epoll_ctl(l->cq_epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return RPCRDMA_ERR_SYSTEM;
	pthread_mutex_lock(&x->lock);
	x->loop_epfd = l->cq_epfd;
	x->watched = true;
	if (x->driver)
		rpcrdma_rpc_xprt_watch_locked(x, false);
	pthread_mutex_unlock(&x->lock);
	return 0;
}

void rpcrdma_rpc_loop_remove(struct rpc_loop *l, struct rpc_xprt *x)
{
	for (unsigned i = 0; i < l->nhot; i++)
		if (l->hot[i] == x) {
			l->hot[i] = l->hot[--l->nhot];
			break;
		}
	pthread_mutex_lock(&x->lock);
	if (x->loop_epfd >= 0 && x->cq)
		epoll_ctl(l->cq_epfd, EPOLL_CTL_DEL, x->rd->ops->cq_fd(x->cq),
			  NULL);
	x->loop_epfd = -1;
	x->watched = false;
	pthread_mutex_unlock(&x->lock);
}

/* Handles src's CM events for LOOP_CM_SLICE_NS at most, then lets the
 * pass go on; the fd stays readable while more wait (provider.h), so the
 * next pass takes them, after the completions it found.  Draining them
 * all held a storm's server in one call for seconds: 4900 connects from
 * 4 processes came at about 2000 events a second, as fast as it handled
 * them, and one call handled more than 8000.  Its established
 * connections waited meanwhile, and the v2 openers of about a fifth of
 * them went unanswered past the client's time-out (draft v2 §7.2; each
 * is made again in v1: docs/SCALE.md, "Connection storms"). */
static void drain_cm(struct rpc_loop *l, struct rpc_cm_src *src)
{
	const struct rpcrdma_provider_ops *ops = src->rd->ops;

	uint64_t start = rpcrdma_rpc_now_ns();
	for (;;) {
		struct rpcrdma_cm_event *ev = NULL;
		if (ops->get_cm_event(src->rd->ch, &ev) < 0 || !ev)
			return;
		/* The name first (handling a refused request destroys its
		 * id); the line after handling, so that what the connection
		 * had to say (its version) comes before its end. */
		char who[64];
		if (src->x)
			snprintf(who, sizeof who, "%s", src->x->name);
		else if (!src->name ||
			 !src->name(src->owner, ev->id, who, sizeof who))
			rpcrdma_rpc_addr_str(&ev->id->peer_addr, who, sizeof who);
		src->on_cm(src->owner, ev);
		if (ev->status && ev->type != RPCRDMA_CM_EVENT_DISCONNECTED)
			rpcrdma_rpc_trace("%s: %s: %s", who,
					  rpcrdma_rpc_cm_event_name(ev->type),
					  rpcrdma_strerror(ev->status));
		else
			rpcrdma_rpc_trace("%s: %s", who,
					  rpcrdma_rpc_cm_event_name(ev->type));
		ops->ack_cm_event(ev);
		if (rpcrdma_rpc_now_ns() - start >= LOOP_CM_SLICE_NS)
			return;
	}
}

bool rpcrdma_rpc_unarmed_add(const struct rpc_unarmed *u, struct rpc_xprt *x)
{
	for (unsigned i = 0; i < *u->n; i++)
		if (u->v[i] == x)
			return true;
	if (*u->n == u->cap)
		return false;
	if (u->ref)
		rpcrdma_rpc_xprt_get(x);
	u->v[(*u->n)++] = x;
	return true;
}

unsigned rpcrdma_rpc_unarmed_poll(const struct rpc_unarmed *u)
{
	unsigned found = 0;
	for (unsigned i = 0; i < *u->n;) {
		struct rpc_xprt *x = u->v[i];
		int n = rpcrdma_rpc_xprt_attend(x, false, false);
		if (n < 0) {
			/* A driver took it over, and arms it when it
			 * leaves. */
			u->v[i] = u->v[--*u->n];
			if (u->ref)
				rpcrdma_rpc_xprt_put(x);
			continue;
		}
		found += n > 0;
		i++;
	}
	return found;
}

bool rpcrdma_rpc_unarmed_arm(const struct rpc_unarmed *u,
			     const struct rpc_xprt *keep)
{
	bool found = false;
	unsigned kept = 0;
	for (unsigned i = 0; i < *u->n; i++) {
		struct rpc_xprt *x = u->v[i];
		if (x == keep) {
			u->v[kept++] = x;
			continue;
		}
		found |= rpcrdma_rpc_xprt_arm(x) > 0;
		if (u->ref)
			rpcrdma_rpc_xprt_put(x);
	}
	*u->n = kept;
	return found;
}

/* The loop's hot list: the connections that had work lately, polled
 * while the loop spins and armed before it sleeps.  The loop reaps on
 * this thread: no reference. */
static struct rpc_unarmed loop_hot(struct rpc_loop *l)
{
	return (struct rpc_unarmed){l->hot, &l->nhot, LOOP_HOT, false};
}

/* Services what epoll reported in one set.  u: a connection that had
 * work stays unarmed on u's list (the loop spins next, or svc_run() is
 * about to serve its calls); NULL: each is armed at once, after the work
 * its pass found has run (rpcrdma_rpc_xprt_attend). */
static bool handle(struct rpc_loop *l, const struct epoll_event *evs, int n,
		   const struct rpc_unarmed *u, unsigned *conns)
{
	bool woken = false;
	struct rpc_cm_src *cm[64];
	int ncm = 0;
	for (int i = 0; i < n; i++) {
		void *p = evs[i].data.ptr;
		if (p == &tag_wake) {
			drain_fd(l->wakefd);
			woken = true;
		} else if (p == &tag_kick)
			drain_fd(l->kickfd);
		else if (p == &rpcrdma_rpc_stats_tag)
			rpcrdma_rpc_stats_serve();
		else if (cm_of(&evs[i]))
			cm[ncm++] = cm_of(&evs[i]); /* n <= 64 */
		else {
			(*conns)++; /* a connection's CQ */
			if (!u)
				rpcrdma_rpc_xprt_attend(p, true, true);
			else if (rpcrdma_rpc_xprt_attend(p, true, false) <= 0 ||
				 !rpcrdma_rpc_unarmed_add(u, p))
				rpcrdma_rpc_xprt_arm(p); /* just polled */
		}
	}
	/* Completions before CM events: a DISCONNECTED must not overtake
	 * the completions that preceded it (the connection's own handling
	 * drains its CQ first as well). */
	for (int i = 0; i < ncm; i++)
		drain_cm(l, cm[i]);
	return woken || ncm;
}

/* The external set has one attendant at a time: svc_run()'s thread
 * (rpc/tirpc/svc_rdma.c; libtirpc's svc_run is single-threaded), so the
 * pass count has one writer and needs no lock; the reaper only reads it
 * (rpcrdma_rpc_loop_external_quiesce). */
void rpcrdma_rpc_loop_attend_external(struct rpc_loop *l,
				      const struct rpc_unarmed *u)
{
	struct epoll_event evs[64];
	unsigned p = atomic_load_explicit(&l->ext_pass, memory_order_relaxed);
	/* Odd before epoll_wait can hand out a datum (seq_cst: a reaper
	 * whose EPOLL_CTL_DEL this epoll_wait ran before sees it odd). */
	atomic_store(&l->ext_pass, p + 1);
	int n = rpcrdma_epoll_wait_nocancel(l->cq_epfd, evs, 64, 0);
	unsigned conns = 0;
	if (n > 0) {
		handle(l, evs, n, u, &conns);
		atomic_store_explicit(&l->busy_conns, conns,
				      memory_order_relaxed);
	}
	/* Even: nothing of this pass is touched any more. */
	atomic_store_explicit(&l->ext_pass, p + 2, memory_order_release);
}

void rpcrdma_rpc_loop_external_quiesce(struct rpc_loop *l)
{
	/* The datum left the set before this (EPOLL_CTL_DEL, under the
	 * kernel's lock of the set): a pass that starts after it cannot
	 * see it, and one that ran epoll_wait before it made the count odd
	 * first.  So only a pass running now may hold it: wait for that
	 * one to end (a few microseconds; a reap is rare). */
	unsigned p = atomic_load(&l->ext_pass);
	if (!(p & 1))
		return;
	while (atomic_load_explicit(&l->ext_pass, memory_order_acquire) == p)
		sched_yield();
}

void rpcrdma_rpc_loop_reaped(struct rpc_loop *l)
{
	l->reaped = true;
}

/* After connections closed: what a connection holds for its life comes
 * from pages and went back as it was freed (common/pages.h), but its few
 * small records (the connection, its CQ, its role states...) came from
 * malloc, between the blocks of connections still open and of other
 * threads.  glibc gives back only the top of a heap, and only past its
 * trim threshold (which an application tuning for large blocks raises):
 * a thousand closed connections left megabytes free but resident in the
 * middle of the loop thread's heap.  malloc_trim hands back every whole
 * free page inside every heap, and the main heap's top (not the top of
 * another thread's heap: that stays to the trim threshold).  Once per
 * burst of closes, RPC_TRIM_AFTER_MS after the last: never on a call's
 * path, and not while connections are still going (their memory is
 * about to be reused). */
#ifdef __GLIBC__
/* One malloc_trim at a time in the process.  glibc sets its allocator up
 * on first use without a lock; where malloc is someone else's (ASan,
 * TSan), this call is that first use, and two loops trimming at once
 * (the poll groups of a server, the client loops, after the same burst
 * of closes) race in it: mtrim dereferenced NULL in about 1 run of 100
 * of a test of 8 threads, and a lab run aborted with "malloc assertion
 * failure in __malloc_arena_thread_freeres: a->attached_threads > 0".
 * A trim is rare (once per burst of closes), so the lock costs nothing. */
static pthread_mutex_t trim_lock = PTHREAD_MUTEX_INITIALIZER;
#endif

static void trim_after_reaps(struct rpc_loop *l, uint64_t now)
{
	if (l->reaped) {
		l->reaped = false;
		l->trim_at = now + RPC_TRIM_AFTER_MS;
	} else if (l->trim_at && now >= l->trim_at) {
		l->trim_at = 0;
#ifdef __GLIBC__
		pthread_mutex_lock(&trim_lock);
		malloc_trim(0);
		pthread_mutex_unlock(&trim_lock);
#endif
	}
}

/* The connections to tick: the owner's lock (if it has one) orders this
 * read after the insertion of a connection another thread made; the
 * links past it change only on this thread (the owner removes its
 * connections from the loop that ticks them). */
static struct rpc_xprt *loop_xprts(struct rpc_loop *l)
{
	if (!l->xprts_lock)
		return l->xprts;
	pthread_mutex_lock(l->xprts_lock);
	struct rpc_xprt *x = l->xprts;
	pthread_mutex_unlock(l->xprts_lock);
	return x;
}

void rpcrdma_rpc_loop_link_locked(struct rpc_loop *l, struct rpc_xprt *x)
{
	x->next = l->xprts;
	if (x->next)
		x->next->pprev = &x->next;
	x->pprev = &l->xprts;
	l->xprts = x;
	/* Its first tick starts its clocks (an RDMA operation's time-out):
	 * the loop, which may sleep until its other connections' quiet
	 * ticks (up to RPC_QUIET_TICK_MAX_MS), ticks at its usual pace from
	 * its next pass.  After the link: a loop woken before it could tick
	 * without x and sleep long again. */
	rpcrdma_rpc_loop_unquiet(l);
}

void rpcrdma_rpc_loop_unlink_locked(struct rpc_xprt *x)
{
	if (!x->pprev)
		return;
	*x->pprev = x->next;
	if (x->next)
		x->next->pprev = x->pprev;
	x->pprev = NULL;
}

/* The time-outs of every connection that may wait on time, and the
 * owner's round.  Returns when the loop must tick next: LOOP_TICK_MS on
 * while one connection waits on time, else the earliest time a quiet
 * connection is to be looked at again (progress.c): a loop whose
 * connections are all idle sleeps until then, RPC_QUIET_TICK_MAX_MS at
 * most. */
static uint64_t tick(struct rpc_loop *l, uint64_t now)
{
	uint64_t next = now + RPC_QUIET_TICK_MAX_MS;
	/* Registered buffers unused for a while go back to the system (a
	 * client's pool is its own: on_ticked), and while the pool keeps
	 * any, the loop comes back for them in RPC_QUIET_TICK_MS. */
	if (l->rd && rpcrdma_rpc_bufpool_trim(l->rd->pool, now))
		next = now + RPC_QUIET_TICK_MS;
	bool moving = false; /* a connection not quiet */
	for (struct rpc_xprt *x = loop_xprts(l); x; x = x->next) {
		uint64_t q = atomic_load_explicit(&x->quiet_until,
						  memory_order_relaxed);
		if (now >= q) {
			rpcrdma_rpc_xprt_tick(x, now);
			if (l->on_ticked)
				l->on_ticked(x, now);
			q = atomic_load_explicit(&x->quiet_until,
						 memory_order_relaxed);
		}
		if (!q)
			moving = true;
		uint64_t due = q > now ? q : now + LOOP_TICK_MS;
		if (due < next)
			next = due;
	}
	/* The owner's round takes every connection's lock (a server reaps
	 * the dead ones): only when one is not quiet, which a dead one never
	 * is (progress.c), and now and then whatever the case. */
	if (l->on_round && (moving || now >= l->round_at)) {
		l->on_round(l->owner, l);
		l->round_at = now + RPC_QUIET_TICK_MAX_MS;
	}
	trim_after_reaps(l, now);
	if (l->trim_at && l->trim_at < next)
		next = l->trim_at;
	return next;
}

void rpcrdma_rpc_loop_unquiet(struct rpc_loop *l)
{
	/* Sequentially consistent, with the loop's side in loop_main: the
	 * loop either sees the count move before it sleeps long, or this
	 * sees it asleep and wakes it. */
	atomic_fetch_add(&l->unquiets, 1);
	if (atomic_load(&l->sleeping_long))
		rpcrdma_rpc_loop_wake(l);
}

static void *loop_main(void *arg)
{
	struct rpc_loop *l = arg;
	struct epoll_event evs[64];
	/* The clock is read once a pass, after its work: the next pass's
	 * time-out, spin and tick start from it. */
	uint64_t now_ns = rpcrdma_rpc_now_ns();
	uint64_t next_tick = now_ns / 1000000u + LOOP_TICK_MS;
	unsigned seen = atomic_load(&l->unquiets);

	self_loop = l;
	const struct rpc_unarmed hot = loop_hot(l);
	bool worked = false;
	while (!atomic_load(&l->stop)) {
		uint64_t now = now_ns / 1000000u;
		/* A connection that was quiet may wait on time now: tick at
		 * the usual pace again. */
		unsigned uq = atomic_load(&l->unquiets);
		if (uq != seen && next_tick > now + LOOP_TICK_MS)
			next_tick = now + LOOP_TICK_MS;
		seen = uq;
		int timeout = next_tick > now ? (int)(next_tick - now) : 0;
		int n = 0;
		unsigned found = 0; /* hot connections the spin found busy */
		struct rpc_busy busy;
		/* After work, more is likely soon (the next call of a
		 * client, the reply to one just sent): poll a while first,
		 * the connections that just had work by their CQs, the rest
		 * through epoll (busy_poll.c). */
		if ((worked || l->nhot) &&
		    rpcrdma_rpc_busy_start(l->busy_poll_us, &l->spin, &busy,
					   &now_ns)) {
			do {
				found = rpcrdma_rpc_unarmed_poll(&hot);
				n = rpcrdma_epoll_wait_nocancel(l->epfd, evs, 64, 0);
			} while (!found && n == 0 &&
				 rpcrdma_rpc_busy_more(&busy, &now_ns));
			rpcrdma_rpc_busy_end(&l->spin, &busy, found || n > 0,
					     now_ns);
		}
		if (!found && n == 0 &&
		    !(l->nhot && rpcrdma_rpc_unarmed_arm(&hot, NULL))) {
			bool long_sleep = timeout > LOOP_TICK_MS;
			if (long_sleep) {
				atomic_store(&l->sleeping_long, true);
				if (atomic_load(&l->unquiets) != seen)
					timeout = 0; /* look again first */
			}
			n = rpcrdma_epoll_wait_nocancel(l->epfd, evs, 64, timeout);
			if (long_sleep)
				atomic_store(&l->sleeping_long, false);
		}
		worked = found || n > 0;
		if (n < 0 && errno != EINTR) {
			/* Cannot wait: keep the time-outs going by ticking
			 * (a client's calls would otherwise hang). */
			struct timespec t = {0, LOOP_TICK_MS * 1000000L};
			nanosleep(&t, NULL);
			n = 0;
		}
		/* A wake-up or a CM event: a connection may have ended or
		 * been asked to close; tick (and reap) soon.  Whether this
		 * thread may spin looks at the CPU mask every 100 ms
		 * (busy_poll.c): the pass's first time does. */
		unsigned conns = 0;
		bool soon = n > 0 &&
			    handle(l, evs, n,
				   rpcrdma_rpc_busy_possible(l->busy_poll_us,
							     &now_ns)
					   ? &hot : NULL,
				   &conns);
		/* Connections with work in this pass (the hot ones are
		 * unarmed: not among epoll's): each one's share of the
		 * group's RDMA Reads (rpcrdma_rpc_xprt_attend). */
		if (worked)
			atomic_store_explicit(&l->busy_conns,
					      conns + found,
					      memory_order_relaxed);
		now_ns = rpcrdma_rpc_now_ns();
		now = now_ns / 1000000u;
		if (soon && next_tick > now + LOOP_TICK_MS)
			next_tick = now + LOOP_TICK_MS;
		if (now >= next_tick)
			next_tick = tick(l, now);
		reqs_run(l);
		/* After a pass with work, let the CPU go to another thread
		 * that waits for it before the next pass.  Alone on its CPU,
		 * this thread gets it straight back (one system call).  But
		 * where loops, clients and handlers outnumber the CPUs, a
		 * loop with work never sleeps, and the threads a round trip
		 * needs then took turns per scheduler slice, milliseconds:
		 * 64 connections of NULL calls on 2 CPUs had a p99 of
		 * 4.7-7.1 ms against 0.61-0.68 ms with the yield, and 16
		 * connections 0.8-1.0 ms against 0.13-0.16 ms
		 * (`rpcrdma-perf load`, docs/SCALE.md). */
		if (worked)
			sched_yield();
	}
	/* Leave nothing unarmed, and nobody waiting (an owner stops its
	 * loops once nothing of it can ask any more: this is for safety). */
	rpcrdma_rpc_unarmed_arm(&hot, NULL);
	reqs_run(l);
	return NULL;
}

int rpcrdma_rpc_loop_start(struct rpc_loop *l)
{
	atomic_store(&l->stop, 0);
	if (pthread_create(&l->thread, NULL, loop_main, l) != 0)
		return RPCRDMA_ERR_SYSTEM;
	pthread_setname_np(l->thread, l->name[0] ? l->name : "rpcrdma-loop");
	l->started = true;
	return 0;
}

void rpcrdma_rpc_loop_stop(struct rpc_loop *l)
{
	if (!l->started)
		return;
	atomic_store(&l->stop, 1);
	rpcrdma_rpc_loop_wake(l);
	pthread_join(l->thread, NULL);
	l->started = false;
}

void rpcrdma_rpc_loop_fini(struct rpc_loop *l)
{
	rpcrdma_rpc_loop_stop(l);
	if (l->cq_epfd >= 0 && l->cq_epfd != l->epfd)
		close(l->cq_epfd);
	if (l->kickfd >= 0)
		close(l->kickfd);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	l->epfd = l->cq_epfd = l->wakefd = l->kickfd = -1;
	pthread_mutex_destroy(&l->req_lock);
	pthread_cond_destroy(&l->req_cv);
}

int rpcrdma_rpc_wait_cm(struct rpc_dev *rd, int timeout_ms,
			struct rpc_cm_ev *out)
{
	const struct rpcrdma_provider_ops *ops = rd->ops;
	uint64_t end = rpcrdma_rpc_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct rpcrdma_cm_event *ev = NULL;
		if (ops->get_cm_event(rd->ch, &ev) == 0 && ev) {
			memset(out, 0, sizeof(*out));
			out->type = ev->type;
			out->id = ev->id;
			out->status = ev->status;
			out->ird = ev->responder_resources;
			out->ord = ev->initiator_depth;
			if (ev->private_data && ev->private_data_len) {
				out->pdata_len = ev->private_data_len;
				memcpy(out->pdata, ev->private_data,
				       ev->private_data_len);
			}
			ops->ack_cm_event(ev);
			return 0;
		}
		uint64_t now = rpcrdma_rpc_now_ms();
		if (now >= end)
			return RPCRDMA_ERR_TIMEOUT;
		struct pollfd p = {.fd = rd->ch->fd, .events = POLLIN};
		uint64_t left = end - now;
		(void)poll(&p, 1, left > 100 ? 100 : (int)left);
	}
}
