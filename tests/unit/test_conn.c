/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The connection layer (rpc/xprt.c, progress.c, loop.c, work.c) without
 * sockets: two connections back to back over the in-memory provider of
 * fake_provider.c, with the real engine, and above them either the real
 * roles (call.c, dispatch.c) or test roles of our own that record what
 * the connection layer hands them (struct rpc_role).
 *
 * What is tested is who polls, who is told, and when work runs: the
 * routing of engine events to the roles, deferred work (run after the
 * lock is dropped, never re-entered, a synchronous wait running its own),
 * the driver's role and its hand-over, deadlines, the kick, attend against
 * a driver, the arm contract of provider.h, the Requester's time-outs and
 * its unwinding when the connection is lost, and a role that cannot
 * attach.
 *
 * Nothing waits by sleeping for a fixed time: a test that waits for
 * something polls for it with a limit and fails when the limit passes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "fake_provider.h"
#include "rpc/call.h"
#include "rpc/rpc_internal.h"
#include "test.h"
#include "wire/rpc_msg.h"
#include "wire/xdr.h"

#define TPROG 0x20000099u  /* served by the server side */
#define RPROG 0x20000098u  /* reverse direction: served by the client */
#define LIMIT_MS 5000      /* what any one step may take before it fails */

static uint64_t now_ms(void)
{
	return rpcrdma_rpc_now_ms();
}

static void nap(void)
{
	struct timespec t = {0, 200000}; /* 0.2 ms between two looks */
	nanosleep(&t, NULL);
}

/* ok = cond, looked at until it holds or ms pass. */
#define WAIT_FOR(ok, cond, ms)                                             \
	do {                                                               \
		uint64_t end_ = now_ms() + (ms);                           \
		while (!((ok) = (cond)) && now_ms() < end_)                \
			nap();                                             \
	} while (0)

/* The same, attending x (as the loop would) between two looks. */
#define ATTEND_FOR(ok, x, cond, ms)                                        \
	do {                                                               \
		uint64_t end_ = now_ms() + (ms);                           \
		for (;;) {                                                 \
			rpcrdma_rpc_xprt_attend((x), false, false);        \
			if (((ok) = (cond)) || now_ms() >= end_)           \
				break;                                     \
			nap();                                             \
		}                                                          \
	} while (0)

static struct rpc_wait *driver_of(struct rpc_xprt *x)
{
	pthread_mutex_lock(&x->lock);
	struct rpc_wait *d = x->driver;
	pthread_mutex_unlock(&x->lock);
	return d;
}

static int waiters_of(struct rpc_xprt *x)
{
	int n = 0;
	pthread_mutex_lock(&x->lock);
	for (struct rpc_wait *s = x->waiters; s; s = s->next)
		n++;
	pthread_mutex_unlock(&x->lock);
	return n;
}

/* Is the thread asleep in poll(2) (a driver on its CQ fd)? */
static bool thread_in_poll(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	long nr = -1;
	int k = fscanf(f, "%ld", &nr);
	fclose(f);
	if (k != 1)
		return false;
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
	return nr == SYS_ppoll;
}

/* Thread-local depth of deferred work items running, and its peak. */
static _Thread_local int depth, max_depth;

static void depth_enter(void)
{
	if (++depth > max_depth)
		max_depth = depth;
}

static void depth_leave(void)
{
	depth--;
}

/* An order of events recorded by one test (main thread and its helpers
 * one at a time). */
static char order[64];
static atomic_int norder;

static void order_add(char c)
{
	int i = atomic_fetch_add(&norder, 1);
	if (i < (int)sizeof(order) - 1)
		order[i] = c;
}

static void order_reset(void)
{
	memset(order, 0, sizeof order);
	atomic_store(&norder, 0);
}

/* =====================================================================
 * Test roles: record what the connection layer hands up
 */
#define TR_MAX_IN 64

struct trole;

/* An incoming call the test Responder holds until it is answered. */
struct tin {
	struct rpc_work_item work;       /* on_incoming's item */
	struct rpc_work_item sent_work;  /* on_sent's item */
	struct trole *q;
	uint32_t call_id, xid, proc;
	uint8_t rep[28];                 /* reply: header and one word */
	struct rpcrdma_iov iov;
	atomic_int sent;                 /* REPLY_SENT seen */
	int sent_status;
};

struct trole {
	enum rpc_role_kind kind;
	struct rpc_xprt *x;
	atomic_int ev[5];                /* by enum rpcrdma_engine_event_type */
	atomic_int wrong;                /* an event of the other role */
	atomic_int unlocked;             /* a hook ran without x->lock */
	atomic_int pumped, ticks, lost;
	int lost_status;
	/* Responder */
	struct tin in[TR_MAX_IN];
	atomic_int nin;
	bool auto_reply;                 /* answer from deferred work */
	void (*on_incoming)(struct trole *q, struct tin *t, struct rpc_work *w);
	void (*on_sent)(struct trole *q, struct tin *t, struct rpc_work *w);
};

static atomic_int tr_attached, tr_detached;
static int tr_attach_fail; /* NOMEM from this many attaches from now */

/* A call of the test Requester. */
struct tcall {
	struct rpc_work_item work;
	struct rpc_xprt *x;
	uint8_t msg[40];
	struct rpcrdma_iov iov;
	uint8_t reply[256];
	uint32_t xid;
	atomic_int done;                 /* CALL_DONE seen */
	atomic_int ran;                  /* its deferred work ran */
	int status;
	size_t reply_len;
	bool ran_unlocked;               /* ... with x->lock free */
	struct rpc_wait *sync;           /* a thread waits for it */
};

static bool lock_held(struct rpc_xprt *x)
{
	/* Hooks run with the connection's lock held (by this thread or, if
	 * the layer is wrong, by nobody: then trylock takes it). */
	if (pthread_mutex_trylock(&x->lock) == 0) {
		pthread_mutex_unlock(&x->lock);
		return false;
	}
	return true;
}

static void tcall_work(struct rpc_work_item *it)
{
	struct tcall *c = (struct tcall *)it;
	depth_enter();
	c->ran_unlocked = !lock_held(c->x);
	atomic_fetch_add(&c->ran, 1);
	depth_leave();
}

static uint32_t reply_word(const struct tcall *c)
{
	return c->reply_len >= 28 ? rpcrdma_be32_get(c->reply + 24) : 0;
}

static void t_event(void *state, struct rpc_xprt *x,
		    const struct rpcrdma_engine_event *ev, struct rpc_work *w)
{
	struct trole *q = state;
	if (!lock_held(x))
		atomic_fetch_add(&q->unlocked, 1);
	if (ev->type < 5)
		atomic_fetch_add(&q->ev[ev->type], 1);
	bool req = ev->type == RPCRDMA_EV_CALL_DONE ||
		   ev->type == RPCRDMA_EV_CALL_RELEASED;
	if (req != (q->kind == RPC_REQUESTER)) {
		atomic_fetch_add(&q->wrong, 1);
		return;
	}
	if (ev->type == RPCRDMA_EV_CALL_DONE) {
		struct tcall *c = ev->user;
		c->status = ev->status;
		c->reply_len = ev->reply_len;
		atomic_fetch_add(&c->done, 1);
		if (c->sync)
			rpcrdma_rpc_wait_done_locked(x, c->sync, ev->status, NULL);
		else
			rpc_work_add(w, &c->work, tcall_work);
	} else if (ev->type == RPCRDMA_EV_INCOMING_CALL) {
		int i = atomic_load(&q->nin);
		if (i >= TR_MAX_IN)
			return;
		struct tin *t = &q->in[i];
		memset(t, 0, sizeof(*t));
		t->q = q;
		t->call_id = ev->call_id;
		t->xid = ev->xid;
		t->proc = ev->call_len >= 24
				  ? rpcrdma_be32_get((const uint8_t *)ev->call + 20)
				  : 0;
		atomic_store(&q->nin, i + 1);
		if (q->on_incoming)
			q->on_incoming(q, t, w);
	} else if (ev->type == RPCRDMA_EV_REPLY_SENT) {
		struct tin *t = ev->user;
		t->sent_status = ev->status;
		atomic_fetch_add(&t->sent, 1);
		if (q->on_sent)
			q->on_sent(q, t, w);
	}
}

static void t_pumped(void *state, struct rpc_xprt *x, struct rpc_work *w)
{
	(void)w;
	struct trole *q = state;
	if (!lock_held(x))
		atomic_fetch_add(&q->unlocked, 1);
	atomic_fetch_add(&q->pumped, 1);
}

static uint64_t t_tick(void *state, struct rpc_xprt *x, uint64_t now,
		       struct rpc_work *w)
{
	(void)w;
	struct trole *q = state;
	if (!lock_held(x))
		atomic_fetch_add(&q->unlocked, 1);
	atomic_fetch_add(&q->ticks, 1);
	return now; /* always waits on time: ticked at the loop's pace */
}

static void t_lost(void *state, struct rpc_xprt *x, int status,
		   struct rpc_work *w)
{
	(void)w;
	struct trole *q = state;
	if (!lock_held(x))
		atomic_fetch_add(&q->unlocked, 1);
	q->lost_status = status;
	atomic_fetch_add(&q->lost, 1);
}

static bool t_busy(const void *state, const struct rpc_xprt *x)
{
	(void)state;
	(void)x;
	return true;
}

static int t_attach(struct rpc_xprt *x, void **state, enum rpc_role_kind k)
{
	if (tr_attach_fail > 0 && --tr_attach_fail == 0)
		return RPCRDMA_ERR_NOMEM;
	struct trole *q = calloc(1, sizeof(*q));
	if (!q)
		return RPCRDMA_ERR_NOMEM;
	q->kind = k;
	q->x = x;
	*state = q;
	atomic_fetch_add(&tr_attached, 1);
	return 0;
}

static int treq_attach(struct rpc_xprt *x, void **state)
{
	return t_attach(x, state, RPC_REQUESTER);
}

static int tresp_attach(struct rpc_xprt *x, void **state)
{
	return t_attach(x, state, RPC_RESPONDER);
}

static void t_detach(struct rpc_xprt *x, void *state)
{
	(void)x;
	atomic_fetch_add(&tr_detached, 1);
	free(state);
}

static const struct rpc_role treq_role = {
	.attach = treq_attach, .detach = t_detach, .event_locked = t_event,
	.pumped_locked = t_pumped, .tick_locked = t_tick,
	.lost_locked = t_lost, .busy_locked = t_busy,
};

static const struct rpc_role tresp_role = {
	.attach = tresp_attach, .detach = t_detach, .event_locked = t_event,
	.pumped_locked = t_pumped, .tick_locked = t_tick,
	.lost_locked = t_lost, .busy_locked = t_busy,
};

static struct trole *trole_of(struct rpc_xprt *x, enum rpc_role_kind k)
{
	return x->up[k].state;
}

/* With x->lock held: starts c (an RPC call of TPROG, procedure proc,
 * with a reply that fits inline). */
static int tcall_start_locked(struct rpc_xprt *x, struct tcall *c,
			      uint32_t proc, struct rpc_work *w)
{
	c->x = x;
	uint8_t *p = c->msg;
	/* RFC 5531 §9: xid (the engine's), CALL, rpcvers 2, prog, vers,
	 * proc, AUTH_NONE credential and verifier. */
	uint32_t words[10] = {0, RPCRDMA_RPC_CALL, RPCRDMA_RPC_VERS, TPROG, 1,
			      proc, 0, 0, 0, 0};
	for (int i = 0; i < 10; i++)
		rpcrdma_be32_put(p + 4 * i, words[i]);
	c->iov = (struct rpcrdma_iov){c->msg, sizeof c->msg, false};
	struct rpcrdma_call_req r = {
		.msg = &c->iov, .nmsg = 1, .reply_buf = c->reply,
		.reply_max = sizeof c->reply, .reply_inline = true, .user = c,
	};
	int rc = rpcrdma_engine_submit_call(x->e, &r, &c->xid, now_ms());
	if (rc == 0)
		rpcrdma_rpc_xprt_pump_locked(x, w);
	return rc;
}

static int tcall_start(struct rpc_xprt *x, struct tcall *c, uint32_t proc)
{
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	int rc = tcall_start_locked(x, c, proc, &w);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	return rc;
}

/* Starts c and waits for it as rpcrdma_rpc_call_sync does; returns what
 * the wait returned. */
static int tcall_sync(struct rpc_xprt *x, struct tcall *c, uint32_t proc,
		      struct rpc_wait *s, uint64_t deadline)
{
	memset(s, 0, sizeof(*s));
	s->w = rpcrdma_rpc_waiter_self();
	s->deadline = deadline;
	atomic_init(&s->finished, false);
	c->sync = s;
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	int rc = tcall_start_locked(x, c, proc, &w);
	if (rc == 0) {
		if (!rpc_work_empty(&w)) {
			pthread_mutex_unlock(&x->lock);
			rpcrdma_rpc_work_run(&w);
			pthread_mutex_lock(&x->lock);
		}
		return rpcrdma_rpc_xprt_wait_unlock(x, s);
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

/* With the lock held: the test Responder answers t (one result word,
 * proc + 100). */
static void treply_locked(struct trole *q, struct tin *t, struct rpc_work *w)
{
	struct rpc_xprt *x = q->x;
	uint32_t words[7] = {t->xid, RPCRDMA_RPC_REPLY, RPCRDMA_RPC_MSG_ACCEPTED,
			     0, 0, RPCRDMA_RPC_SUCCESS, t->proc + 100};
	for (int i = 0; i < 7; i++)
		rpcrdma_be32_put(t->rep + 4 * i, words[i]);
	t->iov = (struct rpcrdma_iov){t->rep, sizeof t->rep, false};
	struct rpcrdma_reply_req rr = {&t->iov, 1, t, false};
	if (rpcrdma_engine_submit_reply(x->e, t->call_id, &rr, now_ms()) < 0)
		atomic_fetch_add(&q->wrong, 1);
	rpcrdma_rpc_xprt_pump_locked(x, w);
}

static void treply(struct trole *q, struct tin *t)
{
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&q->x->lock);
	treply_locked(q, t, &w);
	rpcrdma_rpc_xprt_unlock_run(q->x, &w);
}

static void auto_reply_run(struct rpc_work_item *it)
{
	struct tin *t = (struct tin *)it;
	treply(t->q, t);
}

static void auto_reply_queue(struct trole *q, struct tin *t,
			     struct rpc_work *w)
{
	(void)q;
	rpc_work_add(w, &t->work, auto_reply_run);
}

/* =====================================================================
 * Two connections back to back
 */
struct side {
	struct rpc_dev rd;
	struct rpc_xprt *x;
};

struct conn {
	struct side c, s;              /* client (active) and server side */
	struct rpcrdma_opts o;
	struct rpc_loop loop;          /* the server's, when started */
	bool loop_on;
	struct rpc_disp *cdisp, *sdisp;
};

static const struct rpc_role *const real_roles[RPC_ROLES] = {
	[RPC_REQUESTER] = &rpcrdma_rpc_requester_role,
	[RPC_RESPONDER] = &rpcrdma_rpc_responder_role,
};

static const struct rpc_role *const test_roles[RPC_ROLES] = {
	[RPC_REQUESTER] = &treq_role,
	[RPC_RESPONDER] = &tresp_role,
};

static int dev_open(struct rpc_dev *rd)
{
	memset(rd, 0, sizeof(*rd));
	int rc = fake_open(&rd->dev, &rd->pd, &rd->ch, &rd->attr);
	if (rc < 0)
		return rc;
	rd->ops = &fake_ops;
	rpcrdma_rpc_inv_choose(&rd->attr, true, &rd->inv);
	rd->cache = rpcrdma_rpc_reg_cache_new(rd);
	rd->pool = rpcrdma_rpc_bufpool_new(rd);
	return 0;
}

static void dev_close(struct rpc_dev *rd)
{
	rpcrdma_rpc_reg_cache_free(rd->cache);
	rpcrdma_rpc_bufpool_close(rd->pool);
	fake_close(rd->dev, rd->pd, rd->ch);
	memset(rd, 0, sizeof(*rd));
}

static void opts_for_test(struct rpcrdma_opts *o)
{
	rpcrdma_rpc_opts_fill(NULL, o);
	o->busy_poll_us = -1;          /* no spinning: sleeps are observable */
	o->max_msg = 256u << 10;
	o->call_timeout_ms = LIMIT_MS;
}

/* Both connections made and established as the CM would: the passive
 * side takes the active side's private data first (it posts its
 * receives before it accepts), then the active side takes the
 * passive's. */
static int conn_open(struct conn *k, const struct rpc_role *const cr[RPC_ROLES],
		     const struct rpc_role *const sr[RPC_ROLES],
		     const struct rpcrdma_opts *o)
{
	memset(k, 0, sizeof(*k));
	k->o = *o;
	if (dev_open(&k->c.rd) < 0 || dev_open(&k->s.rd) < 0)
		return -1;
	struct rpcrdma_cm_id *cid = fake_id_new(k->c.rd.dev, k->c.rd.ch, 20049);
	struct rpcrdma_cm_id *sid = fake_id_new(k->s.rd.dev, k->s.rd.ch, 40000);
	if (!cid || !sid)
		return -1;
	if (rpcrdma_rpc_xprt_create(&k->c.rd, o, false, false, cid, cr,
				    &k->c.x) < 0 ||
	    rpcrdma_rpc_xprt_create(&k->s.rd, o, true, false, sid, sr,
				    &k->s.x) < 0)
		return -1;
	fake_qp_pair(k->c.x->qp, k->s.x->qp);
	uint8_t cpd[16], spd[16];
	int cl = rpcrdma_rpc_xprt_pdata(k->c.x, cpd, sizeof cpd);
	int sl = rpcrdma_rpc_xprt_pdata(k->s.x, spd, sizeof spd);
	if (cl < 0 || sl < 0)
		return -1;
	if (rpcrdma_rpc_xprt_established(k->s.x, cpd, (size_t)cl, k->s.x->ord) < 0 ||
	    rpcrdma_rpc_xprt_established(k->c.x, spd, (size_t)sl, k->c.x->ord) < 0)
		return -1;
	/* The client's version 2 opener (RDMA2_CONNPROP) and its answer go
	 * before any call (draft §7), as the loop of either side would see
	 * them through: a test starts on a connection whose version is
	 * settled. */
	uint64_t end = now_ms() + LIMIT_MS;
	for (;;) {
		struct rpcrdma_engine_info in;
		rpcrdma_rpc_xprt_attend(k->s.x, false, false);
		rpcrdma_rpc_xprt_attend(k->c.x, false, false);
		pthread_mutex_lock(&k->c.x->lock);
		rpcrdma_engine_get_info(k->c.x->e, &in);
		pthread_mutex_unlock(&k->c.x->lock);
		if (in.version && !in.negotiating)
			return 0;
		if (now_ms() >= end)
			return -1;
		nap();
	}
}

static void on_cm_none(void *owner, struct rpcrdma_cm_event *ev)
{
	(void)owner;
	(void)ev;
}

/* The server side attended by the real event loop (rpc/loop.c). */
static int conn_server_loop(struct conn *k)
{
	if (rpcrdma_rpc_loop_init(&k->loop, &k->s.rd, on_cm_none, NULL, k) < 0)
		return -1;
	k->loop.busy_poll_us = k->o.busy_poll_us;
	k->s.x->loop = &k->loop;
	k->loop.xprts = k->s.x;
	if (rpcrdma_rpc_loop_add(&k->loop, k->s.x) < 0 ||
	    rpcrdma_rpc_loop_start(&k->loop) < 0)
		return -1;
	k->loop_on = true;
	return 0;
}

/* A dispatcher for the real Responder role of x. */
static struct rpc_disp *serve(struct rpc_xprt *x)
{
	struct rpc_disp *d = rpcrdma_rpc_disp_create(0);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_disp_attach_locked(x, d);
	pthread_mutex_unlock(&x->lock);
	return d;
}

static void unserve(struct rpc_xprt *x, struct rpc_disp *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_disp_attach_locked(x, NULL);
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_disp_destroy(d);
}

/* Torn down as a client and a server do it: the loop stops, nobody is
 * left inside, the loss fails what is left, then destroy. */
static void conn_close(struct conn *k)
{
	if (k->loop_on) {
		rpcrdma_rpc_loop_stop(&k->loop);
		rpcrdma_rpc_loop_remove(&k->loop, k->s.x);
	}
	struct rpc_xprt *xs[2] = {k->c.x, k->s.x};
	for (int i = 0; i < 2; i++) {
		if (!xs[i])
			continue;
		pthread_mutex_lock(&xs[i]->lock);
		rpcrdma_rpc_xprt_quiesce_locked(xs[i]);
		pthread_mutex_unlock(&xs[i]->lock);
		rpcrdma_rpc_xprt_lost(xs[i], RPCRDMA_ERR_CANCELLED);
	}
	if (k->c.x)
		unserve(k->c.x, k->cdisp);
	if (k->s.x)
		unserve(k->s.x, k->sdisp);
	rpcrdma_rpc_xprt_destroy(k->c.x);
	rpcrdma_rpc_xprt_destroy(k->s.x);
	if (k->loop_on)
		rpcrdma_rpc_loop_fini(&k->loop);
	dev_close(&k->c.rd);
	dev_close(&k->s.rd);
	/* Nothing of either side is left in the provider, and nothing
	 * broke its rules. */
	CHECK_EQ(fake_net.live_mrs, 0);
	CHECK_EQ(fake_net.live_qps, 0);
	CHECK_EQ(fake_net.live_cqs, 0);
	CHECK_EQ(fake_net.live_ids, 0);
	CHECK_EQ(fake_net.violations, 0);
}

/* =====================================================================
 * Deferred work by itself (work.c)
 */
struct witem {
	struct rpc_work_item it;
	char name;
	struct witem *more[2];          /* produced while it runs */
	bool nested;                    /* ... and run nested */
};

static void witem_run(struct rpc_work_item *it)
{
	struct witem *m = (struct witem *)it;
	depth_enter();
	order_add(m->name);
	if (m->more[0]) {
		struct rpc_work w;
		rpc_work_init(&w);
		for (int i = 0; i < 2 && m->more[i]; i++)
			rpc_work_add(&w, &m->more[i]->it, witem_run);
		if (m->nested)
			rpcrdma_rpc_work_run_nested(&w);
		else
			rpcrdma_rpc_work_run(&w);
		/* Either way the queue given was taken. */
		if (!rpc_work_empty(&w))
			order_add('!');
	}
	/* Its end, in capitals' place: a..z for A..Z. */
	order_add((char)(m->name - 'A' + 'a'));
	depth_leave();
}

static void test_work_order(void)
{
	/* A produces C and D: they run after A returns, after B (queued
	 * before them), in order, one deep. */
	struct witem a = {.name = 'A'}, b = {.name = 'B'}, c = {.name = 'C'},
		     d = {.name = 'D'};
	a.more[0] = &c;
	a.more[1] = &d;
	struct rpc_work w;
	rpc_work_init(&w);
	rpc_work_add(&w, &a.it, witem_run);
	rpc_work_add(&w, &b.it, witem_run);
	order_reset();
	max_depth = 0;
	rpcrdma_rpc_work_run(&w);
	CHECK(strcmp(order, "AaBbCcDd") == 0);
	CHECK_EQ(max_depth, 1);
	CHECK(rpc_work_empty(&w));
	CHECK_EQ(depth, 0);

	/* E runs F nested (a synchronous wait's own queue): F runs inside
	 * E, and what F produces (G) runs after F but still inside E;
	 * what E produces after that (H) goes to the outer queue again. */
	struct witem e = {.name = 'E'}, f = {.name = 'F'}, g = {.name = 'G'},
		     h = {.name = 'H'};
	e.more[0] = &f;
	e.nested = true;
	f.more[0] = &g;
	/* H is queued by E after its nested run: model it with a second
	 * producer item queued behind E. */
	struct witem e2 = {.name = 'I'};
	e2.more[0] = &h;
	rpc_work_init(&w);
	rpc_work_add(&w, &e.it, witem_run);
	rpc_work_add(&w, &e2.it, witem_run);
	order_reset();
	max_depth = 0;
	rpcrdma_rpc_work_run(&w);
	CHECK(strcmp(order, "EFfGgeIiHh") == 0);
	CHECK_EQ(max_depth, 2);
	CHECK_EQ(depth, 0);
}

/* =====================================================================
 * Events go to the right role, with the lock held
 */
static void test_pump_routes(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct trole *creq = trole_of(k.c.x, RPC_REQUESTER);
	struct trole *cresp = trole_of(k.c.x, RPC_RESPONDER);
	struct trole *sreq = trole_of(k.s.x, RPC_REQUESTER);
	struct trole *sresp = trole_of(k.s.x, RPC_RESPONDER);

	struct tcall c1;
	memset(&c1, 0, sizeof c1);
	CHECK_EQ(tcall_start(k.c.x, &c1, 5), 0);
	bool ok;
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(atomic_load(&sresp->ev[RPCRDMA_EV_INCOMING_CALL]), 1);
	CHECK_EQ(sresp->in[0].xid, c1.xid);
	CHECK_EQ(sresp->in[0].proc, 5);
	treply(sresp, &sresp->in[0]);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->in[0].sent) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(sresp->in[0].sent_status, 0);
	CHECK_EQ(atomic_load(&sresp->ev[RPCRDMA_EV_REPLY_SENT]), 1);

	ATTEND_FOR(ok, k.c.x, atomic_load(&c1.ran) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(atomic_load(&c1.done), 1);
	CHECK_EQ(c1.status, 0);
	CHECK_EQ(c1.reply_len, 28);
	CHECK_EQ(reply_word(&c1), 105);
	CHECK_EQ(rpcrdma_be32_get(c1.reply), c1.xid);
	/* Its deferred work ran once the lock was dropped. */
	CHECK(c1.ran_unlocked);
	CHECK_EQ(atomic_load(&creq->ev[RPCRDMA_EV_CALL_DONE]), 1);

	/* Nothing went to a role it is not for, nor was anything handed up
	 * without the lock; both roles heard of every pump. */
	struct trole *all[4] = {creq, cresp, sreq, sresp};
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(atomic_load(&all[i]->wrong), 0);
		CHECK_EQ(atomic_load(&all[i]->unlocked), 0);
		CHECK(atomic_load(&all[i]->pumped) > 0);
	}
	for (int t = 0; t < 5; t++) {
		CHECK_EQ(atomic_load(&cresp->ev[t]), 0);
		CHECK_EQ(atomic_load(&sreq->ev[t]), 0);
	}
	CHECK_EQ(atomic_load(&creq->pumped), atomic_load(&cresp->pumped));
	conn_close(&k);
}

/* =====================================================================
 * Deferred work from a connection: after the lock, never re-entered
 */
struct chain {
	struct rpc_work_item b, c, d;
	struct trole *q;
	bool a_unlocked;
	bool queue_taken;
	pthread_t thread;
	bool same_thread;
};
static struct chain chain;

static void chain_d(struct rpc_work_item *it)
{
	(void)it;
	depth_enter();
	order_add('D');
	depth_leave();
}

static void chain_c(struct rpc_work_item *it)
{
	(void)it;
	depth_enter();
	order_add('C');
	depth_leave();
}

static void chain_b(struct rpc_work_item *it)
{
	(void)it;
	depth_enter();
	order_add('B');
	/* More work from inside work, the way a handler's reply does it. */
	struct rpc_xprt *x = chain.q->x;
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	rpc_work_add(&w, &chain.d, chain_d);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	order_add('b');
	depth_leave();
}

static void chain_sent(struct rpc_work_item *it)
{
	(void)it;
	depth_enter();
	order_add('R');
	depth_leave();
}

static void chain_on_sent(struct trole *q, struct tin *t, struct rpc_work *w)
{
	(void)q;
	rpc_work_add(w, &t->sent_work, chain_sent);
}

/* The incoming call's item: it answers (REPLY_SENT queues R) and queues
 * B and C; all of them run after it returns. */
static void chain_a(struct rpc_work_item *it)
{
	struct tin *t = (struct tin *)it;
	struct rpc_xprt *x = t->q->x;
	depth_enter();
	order_add('A');
	chain.a_unlocked = !lock_held(x);
	chain.same_thread = pthread_equal(pthread_self(), chain.thread);
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	treply_locked(t->q, t, &w);
	rpc_work_add(&w, &chain.b, chain_b);
	rpc_work_add(&w, &chain.c, chain_c);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	chain.queue_taken = rpc_work_empty(&w);
	order_add('a');
	depth_leave();
}

static void chain_on_incoming(struct trole *q, struct tin *t, struct rpc_work *w)
{
	chain.q = q;
	rpc_work_add(w, &t->work, chain_a);
}

static void test_work_chain(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct trole *sresp = trole_of(k.s.x, RPC_RESPONDER);
	memset(&chain, 0, sizeof chain);
	chain.thread = pthread_self();
	sresp->on_incoming = chain_on_incoming;
	sresp->on_sent = chain_on_sent;

	struct tcall c1;
	memset(&c1, 0, sizeof c1);
	CHECK_EQ(tcall_start(k.c.x, &c1, 1), 0);
	order_reset();
	max_depth = 0;
	bool ok;
	ATTEND_FOR(ok, k.s.x, strchr(order, 'D') != NULL, LIMIT_MS);
	CHECK(ok);
	/* A ran alone and returned before anything it produced ran: the
	 * reply's REPLY_SENT item (R) first, queued by the pump before B
	 * and C; D, produced by B, after C. */
	if (strcmp(order, "AaRBbCD") != 0)
		fprintf(stderr, "work order: %s\n", order);
	CHECK(strcmp(order, "AaRBbCD") == 0);
	CHECK_EQ(max_depth, 1);
	CHECK(chain.a_unlocked);
	CHECK(chain.queue_taken);
	CHECK(chain.same_thread);
	ATTEND_FOR(ok, k.c.x, atomic_load(&c1.ran) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(reply_word(&c1), 101);
	conn_close(&k);
}

/* =====================================================================
 * A synchronous wait inside running work runs its own queue
 */
static _Thread_local bool in_callback;

struct nested {
	struct rpcrdma_clnt *cl;
	atomic_int outer_done;
	int inner_rc;
	uint32_t inner_word;
	atomic_int h_ran;
	bool h_in_callback;
	pthread_t cb_thread, h_thread;
	int rev_rc;
	uint32_t rev_word;
};

/* The client's handler of the server's reverse-direction call. */
static enum rpcrdma_svc_stat client_handler(struct rpcrdma_svc_req *r, void *arg)
{
	struct nested *n = arg;
	n->h_in_callback = in_callback;
	n->h_thread = pthread_self();
	atomic_fetch_add(&n->h_ran, 1);
	uint8_t *res = rpcrdma_svc_req_alloc(r, 4);
	rpcrdma_be32_put(res, 0xc0ffee);
	struct rpcrdma_iov iov = {res, 4, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

/* A synchronous call of proc on cl: its status, and its reply's first
 * word in *word when it succeeded. */
static int call_word(struct rpcrdma_clnt *cl, uint32_t proc, int timeout_ms,
		     uint32_t *word)
{
	struct rpcrdma_call call = {.proc = proc, .timeout_ms = timeout_ms};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(cl, &call, &rep);
	if (rc == 0 && rep.len >= 4)
		*word = rpcrdma_be32_get(rep.data);
	rpcrdma_reply_free(&rep);
	return rc;
}

/* The server's handler: before it answers it calls the client back (RFC
 * 8167) and waits for that reply, on the loop thread, inside running
 * work. */
static enum rpcrdma_svc_stat server_handler(struct rpcrdma_svc_req *r, void *arg)
{
	struct nested *n = arg;
	struct rpcrdma_clnt *back = NULL;
	n->rev_rc = rpcrdma_svc_req_clnt(r, RPROG, 1, &back);
	if (n->rev_rc == 0) {
		n->rev_rc = call_word(back, 1, LIMIT_MS, &n->rev_word);
		rpcrdma_clnt_destroy(back);
	}
	uint8_t *res = rpcrdma_svc_req_alloc(r, 4);
	rpcrdma_be32_put(res, rpcrdma_svc_req_proc(r) + 200);
	struct rpcrdma_iov iov = {res, 4, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

/* An asynchronous call's callback (deferred work on the thread attending
 * the client) makes a synchronous call. */
static void outer_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct nested *n = arg;
	rpcrdma_reply_free(rep);
	in_callback = true;
	n->cb_thread = pthread_self();
	n->inner_rc = call_word(n->cl, 1, LIMIT_MS, &n->inner_word);
	in_callback = false;
	atomic_store(&n->outer_done, 1);
}

static void test_nested_wait(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, real_roles, real_roles, &o) == 0);
	static struct nested n;
	memset(&n, 0, sizeof n);
	k.sdisp = serve(k.s.x);
	k.cdisp = serve(k.c.x);
	CHECK_EQ(rpcrdma_rpc_disp_register(k.sdisp, TPROG, 1, 1, server_handler,
					   &n, 0), 0);
	CHECK_EQ(rpcrdma_rpc_disp_register(k.cdisp, RPROG, 1, 1, client_handler,
					   &n, 0), 0);
	CHECK_EQ(conn_server_loop(&k), 0);
	CHECK_EQ(rpcrdma_rpc_clnt_on_xprt(k.c.x, TPROG, 1, &n.cl), 0);

	struct rpcrdma_call call = {.proc = 0};
	CHECK_EQ(rpcrdma_clnt_call_async(n.cl, &call, outer_cb, &n), 0);
	/* This thread attends the client: the callback runs here, and its
	 * synchronous call drives the client from inside it. */
	bool ok;
	ATTEND_FOR(ok, k.c.x, atomic_load(&n.outer_done) == 1, 3 * LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(n.inner_rc, 0);
	CHECK_EQ(n.inner_word, 201);
	CHECK_EQ(n.rev_rc, 0);
	CHECK_EQ(n.rev_word, 0xc0ffee);
	/* The reverse call was served by the waiting thread itself, inside
	 * the callback: its wait ran its own queue. */
	CHECK_EQ(atomic_load(&n.h_ran), 1);
	CHECK(n.h_in_callback);
	CHECK(pthread_equal(n.h_thread, n.cb_thread));
	CHECK(pthread_equal(n.cb_thread, pthread_self()));
	rpcrdma_clnt_destroy(n.cl);
	conn_close(&k);
}

/* The real Requester on the client side and the test Responder on the
 * server side, with a client handle on the connection. */
static struct trole *open_tserver(struct conn *k, struct rpcrdma_clnt **cl)
{
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(k, real_roles, test_roles, &o) == 0);
	CHECK_EQ(rpcrdma_rpc_clnt_on_xprt(k->c.x, TPROG, 1, cl), 0);
	return trole_of(k->s.x, RPC_RESPONDER);
}

/* =====================================================================
 * The driver's role passes from one waiter to the next
 */
struct syncer {
	struct rpcrdma_clnt *cl;
	uint32_t proc;
	size_t arg_len;   /* bytes of arguments (0: none) */
	int rc;
	uint32_t word;
	atomic_int done;
	pthread_t t;
};

static void *syncer_main(void *arg)
{
	struct syncer *s = arg;
	if (s->arg_len) {
		uint8_t *a = calloc(1, s->arg_len);
		struct rpcrdma_iov iov = {a, s->arg_len, false};
		struct rpcrdma_call call = {.proc = s->proc, .args = &iov,
					    .nargs = 1,
					    .timeout_ms = 2 * LIMIT_MS};
		struct rpcrdma_reply rep;
		s->rc = a ? rpcrdma_clnt_call(s->cl, &call, &rep)
			  : RPCRDMA_ERR_NOMEM;
		if (a && s->rc == 0 && rep.len >= 4)
			s->word = rpcrdma_be32_get(rep.data);
		if (a)
			rpcrdma_reply_free(&rep);
		free(a);
	} else {
		s->rc = call_word(s->cl, s->proc, 2 * LIMIT_MS, &s->word);
	}
	atomic_store(&s->done, 1);
	return NULL;
}

/* s1's thread makes its call and drives the client; returns its wait
 * once the server has the call. */
static struct rpc_wait *start_driver(struct conn *k, struct trole *sresp,
				     struct syncer *s1)
{
	CHECK_EQ(pthread_create(&s1->t, NULL, syncer_main, s1), 0);
	bool ok;
	ATTEND_FOR(ok, k->s.x, atomic_load(&sresp->nin) >= 1, LIMIT_MS);
	CHECK(ok);
	WAIT_FOR(ok, driver_of(k->c.x) != NULL, LIMIT_MS);
	CHECK(ok);
	return driver_of(k->c.x);
}

/* Nobody waits on x, drives it or is inside it any more. */
static void check_no_waits(struct rpc_xprt *x)
{
	pthread_mutex_lock(&x->lock);
	CHECK(x->driver == NULL);
	CHECK(x->waiters == NULL);
	CHECK_EQ(x->inside, 0);
	pthread_mutex_unlock(&x->lock);
}

static void test_driver_handoff(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);

	struct syncer s1 = {.cl = cl, .proc = 1}, s2 = {.cl = cl, .proc = 2};
	struct rpc_wait *d1 = start_driver(&k, sresp, &s1);
	bool ok;

	/* A second waiter sleeps on its condition variable: one driver. */
	CHECK_EQ(pthread_create(&s2.t, NULL, syncer_main, &s2), 0);
	WAIT_FOR(ok, waiters_of(k.c.x) == 2, LIMIT_MS);
	CHECK(ok);
	CHECK(driver_of(k.c.x) == d1);

	/* The first one's reply: it leaves, and the role passes to the
	 * other, which then sees its own reply through. */
	treply(sresp, &sresp->in[0]);
	WAIT_FOR(ok, atomic_load(&s1.done) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(s1.rc, 0);
	CHECK_EQ(s1.word, 101);
	pthread_mutex_lock(&k.c.x->lock);
	struct rpc_wait *d2 = k.c.x->driver;
	CHECK(d2 != NULL && d2 != d1);
	CHECK(k.c.x->waiters == d2 && d2 && !d2->next);
	pthread_mutex_unlock(&k.c.x->lock);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) >= 2, LIMIT_MS);
	CHECK(ok);
	CHECK(driver_of(k.c.x) == d2);
	treply(sresp, &sresp->in[1]);
	pthread_join(s1.t, NULL);
	pthread_join(s2.t, NULL);
	CHECK_EQ(s2.rc, 0);
	CHECK_EQ(s2.word, 102);
	check_no_waits(k.c.x);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * A synchronous call made while another thread drives, awake, leaves its
 * work requests to the driver's next pass (one post for many callers'
 * calls); with the driver asleep on the CQ fd it posts its own
 */
static bool driver_asleep(struct rpc_xprt *x)
{
	pthread_mutex_lock(&x->lock);
	bool a = x->driver && x->driver_asleep;
	pthread_mutex_unlock(&x->lock);
	return a;
}

/* s's thread ends, its call answered with word. */
static void join_answered(struct syncer *s, uint32_t word)
{
	pthread_join(s->t, NULL);
	CHECK_EQ(s->rc, 0);
	CHECK_EQ(s->word, word);
}

/* s's call is started while stand_in holds the driver's role (awake);
 * returns once its thread waits (parked). */
static void start_beside(struct rpc_xprt *x, struct rpc_wait *stand_in,
			 struct syncer *s)
{
	pthread_mutex_lock(&x->lock);
	x->driver = stand_in;
	pthread_mutex_unlock(&x->lock);
	CHECK_EQ(pthread_create(&s->t, NULL, syncer_main, s), 0);
	bool ok;
	WAIT_FOR(ok, waiters_of(x) == 1, LIMIT_MS);
	CHECK(ok);
}

/* The server gets its nth call, answers it, and the client (attended
 * by this thread: nobody drives) tells s's thread. */
static void answer_parked(struct conn *k, struct trole *sresp, int nth,
			  struct syncer *s, uint32_t word)
{
	bool ok;
	ATTEND_FOR(ok, k->s.x, atomic_load(&sresp->nin) >= nth, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[nth - 1]);
	ATTEND_FOR(ok, k->c.x, atomic_load(&s->done) == 1, LIMIT_MS);
	CHECK(ok);
	join_answered(s, word);
	check_no_waits(k->c.x);
}

static void test_owed_sends(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);
	struct rpc_xprt *x = k.c.x;
	bool ok;

	/* This thread stands in for a driver that is awake (between two
	 * polls of its spin): the call waits for its pass. */
	struct rpc_wait stand_in = {0};
	struct syncer s1 = {.cl = cl, .proc = 1};
	start_beside(x, &stand_in, &s1);
	pthread_mutex_lock(&x->lock);
	CHECK(x->wr_owed);
	pthread_mutex_unlock(&x->lock);
	/* The fake provider delivers a Send when it is posted. */
	rpcrdma_rpc_xprt_attend(k.s.x, false, false);
	CHECK_EQ(atomic_load(&sresp->nin), 0);
	/* The driver's pass posts it. */
	struct rpc_work w;
	rpc_work_init(&w);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	CHECK(!x->wr_owed);
	x->driver = NULL;
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_work_run(&w);
	answer_parked(&k, sresp, 1, &s1, 101);

	/* A call that moves bulk data (a Long Call here) posts its own
	 * even then: left to the driver, its chunk work would slow a
	 * greedy client. */
	struct syncer s4 = {.cl = cl, .proc = 4, .arg_len = 16384};
	start_beside(x, &stand_in, &s4);
	pthread_mutex_lock(&x->lock);
	CHECK(!x->wr_owed);
	x->driver = NULL;
	pthread_mutex_unlock(&x->lock);
	answer_parked(&k, sresp, 2, &s4, 104);

	/* A driver asleep on the CQ fd would not come soon: the next call
	 * is posted by its own thread. */
	struct syncer s2 = {.cl = cl, .proc = 2}, s3 = {.cl = cl, .proc = 3};
	start_driver(&k, sresp, &s2);
	WAIT_FOR(ok, driver_asleep(x), LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(pthread_create(&s3.t, NULL, syncer_main, &s3), 0);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) >= 4, LIMIT_MS);
	CHECK(ok);
	pthread_mutex_lock(&x->lock);
	CHECK(!x->wr_owed);
	pthread_mutex_unlock(&x->lock);
	treply(sresp, &sresp->in[2]);
	treply(sresp, &sresp->in[3]);
	join_answered(&s2, 102);
	join_answered(&s3, 103);
	check_no_waits(x);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * A driver running work keeps nobody waiting: the role is not handed to
 * it (e2e drive_race stalled on that until every call's time-out)
 */
struct busy_cb {
	struct rpcrdma_clnt *cl;
	atomic_int in_cb, go, done;
	pthread_t thread;
	int rc;
	uint32_t word;
};

/* An asynchronous call's callback that waits to be let go, then makes a
 * synchronous call on the same connection. */
static void busy_cb_fn(void *arg, struct rpcrdma_reply *rep)
{
	struct busy_cb *b = arg;
	rpcrdma_reply_free(rep);
	b->thread = pthread_self();
	atomic_store(&b->in_cb, 1);
	bool ok;
	WAIT_FOR(ok, atomic_load(&b->go) == 1, 3 * LIMIT_MS);
	b->rc = ok ? call_word(b->cl, 4, LIMIT_MS, &b->word)
		   : RPCRDMA_ERR_TIMEOUT;
	atomic_store(&b->done, 1);
}

static void test_busy_driver(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);
	static struct busy_cb b;
	memset(&b, 0, sizeof b);
	b.cl = cl;

	/* s1 drives the client while its call (proc 1) is out. */
	struct syncer s1 = {.cl = cl, .proc = 1}, s2 = {.cl = cl, .proc = 2};
	struct rpc_wait *d1 = start_driver(&k, sresp, &s1);
	bool ok;

	/* An asynchronous call's reply: s1's thread polls it and runs its
	 * callback, which holds on. */
	struct rpcrdma_call call = {.proc = 3};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, busy_cb_fn, &b), 0);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) >= 2, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[1]);
	WAIT_FOR(ok, atomic_load(&b.in_cb) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK(pthread_equal(b.thread, s1.t));

	/* Meanwhile a second caller comes: it drives, and sees its reply
	 * through. */
	CHECK_EQ(pthread_create(&s2.t, NULL, syncer_main, &s2), 0);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) >= 3, LIMIT_MS);
	CHECK(ok);
	WAIT_FOR(ok, driver_of(k.c.x) != d1 && driver_of(k.c.x) != NULL,
		 LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[2]);
	WAIT_FOR(ok, atomic_load(&s2.done) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(s2.rc, 0);
	CHECK_EQ(s2.word, 102);
	/* s2 left with s1's thread still in the callback: the role did not
	 * go to s1, which would not drive until the callback returns. */
	CHECK(driver_of(k.c.x) != d1);

	/* The callback's own synchronous call then drives the client. */
	atomic_store(&b.go, 1);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) >= 4, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[3]);
	WAIT_FOR(ok, atomic_load(&b.done) == 1, 2 * LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(b.rc, 0);
	CHECK_EQ(b.word, 104);

	treply(sresp, &sresp->in[0]);
	pthread_join(s1.t, NULL);
	pthread_join(s2.t, NULL);
	CHECK_EQ(s1.rc, 0);
	CHECK_EQ(s1.word, 101);
	static const uint32_t arrived[4] = {1, 3, 2, 4};
	for (int i = 0; i < 4; i++)
		CHECK_EQ(sresp->in[i].proc, arrived[i]);
	check_no_waits(k.c.x);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * A server connection's RDMA Read window is one Read piece while other
 * connections of its loop have work, the whole window when it is alone
 */
static void test_read_share(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, real_roles, real_roles, &o) == 0);
	struct rpc_loop l;
	CHECK_EQ(rpcrdma_rpc_loop_init(&l, &k.s.rd, on_cm_none, NULL, &k), 0);
	struct rpc_xprt *x = k.s.x;
	const uint32_t full = x->opts.read_window;
	CHECK(full > RPC_READ_SHARE_MIN);
	CHECK_EQ(x->e->cfg.read_window, full);
	x->loop = &l;
	k.c.x->loop = &l;

	/* Three connections of the loop had work in its last pass. */
	atomic_store(&l.busy_conns, 3);
	CHECK(rpcrdma_rpc_xprt_attend(x, false, false) >= 0);
	CHECK_EQ(x->e->cfg.read_window, RPC_READ_SHARE_MIN);
	/* A client's connection (its Responder serves reverse calls only)
	 * keeps its window. */
	CHECK(rpcrdma_rpc_xprt_attend(k.c.x, false, false) >= 0);
	CHECK_EQ(k.c.x->e->cfg.read_window, full);

	/* Alone again: the whole window. */
	atomic_store(&l.busy_conns, 1);
	CHECK(rpcrdma_rpc_xprt_attend(x, false, false) >= 0);
	CHECK_EQ(x->e->cfg.read_window, full);

	/* A window set smaller than one piece stays as it was set. */
	x->opts.read_window = 64u << 10;
	atomic_store(&l.busy_conns, 5);
	CHECK(rpcrdma_rpc_xprt_attend(x, false, false) >= 0);
	CHECK_EQ(x->e->cfg.read_window, 64u << 10);

	x->loop = NULL;
	k.c.x->loop = NULL;
	rpcrdma_rpc_loop_fini(&l);
	conn_close(&k);
}

/* =====================================================================
 * Deadlines: TIMEOUT once, and an outcome already there wins
 */
static void test_deadline(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct trole *sresp = trole_of(k.s.x, RPC_RESPONDER);

	/* Nobody answers: the wait returns TIMEOUT at its deadline and
	 * leaves nothing behind. */
	struct tcall c1;
	memset(&c1, 0, sizeof c1);
	struct rpc_wait s;
	uint64_t dl = now_ms() + 30;
	CHECK_EQ(tcall_sync(k.c.x, &c1, 3, &s, dl), RPCRDMA_ERR_TIMEOUT);
	CHECK(now_ms() >= dl);
	CHECK(!atomic_load(&s.finished));
	CHECK_EQ(atomic_load(&c1.done), 0);
	check_no_waits(k.c.x);

	/* The reply comes late and sits in the CQ; waiting again, past the
	 * deadline, sees it first: the outcome wins, no second TIMEOUT. */
	bool ok;
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 1, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[0]);
	struct fake_cq_stats st;
	fake_cq_stats(k.c.x->cq, &st);
	CHECK(st.queued > 0);
	pthread_mutex_lock(&k.c.x->lock);
	int rc = rpcrdma_rpc_xprt_wait_unlock(k.c.x, &s);
	CHECK_EQ(rc, 0);
	CHECK(atomic_load(&s.finished));
	CHECK_EQ(s.status, 0);
	CHECK_EQ(atomic_load(&c1.done), 1);
	CHECK_EQ(reply_word(&c1), 103);
	conn_close(&k);
}

/* The real Requester: a synchronous call whose time runs out returns
 * TIMEOUT; the late reply is dropped and the next call goes through. */
static void test_sync_timeout_real(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);

	struct rpcrdma_call call = {.proc = 4, .timeout_ms = 30};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), RPCRDMA_ERR_TIMEOUT);
	CHECK_EQ(rep.status, RPCRDMA_ERR_TIMEOUT);
	CHECK(rep.xid != 0);
	CHECK(rep.priv == NULL);
	rpcrdma_reply_free(&rep);

	/* Now the server answers everything, from its loop. */
	sresp->on_incoming = auto_reply_queue;
	CHECK_EQ(conn_server_loop(&k), 0);
	call = (struct rpcrdma_call){.proc = 6, .timeout_ms = LIMIT_MS};
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	CHECK(rep.len >= 4 && rpcrdma_be32_get(rep.data) == 106);
	rpcrdma_reply_free(&rep);
	CHECK_EQ(atomic_load(&sresp->nin), 2);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * A driver asleep on its CQ: the kick wakes it; attend and tick keep off
 */
struct bare {
	struct rpc_xprt *x;
	struct rpc_wait s;
	_Atomic pid_t tid;
	int rc;
	atomic_int done;
	pthread_t t;
};

/* The wait's rpc_waiter is its own thread's, set there before it waits. */
static void *bare_main(void *arg)
{
	struct bare *b = arg;
	b->s.w = rpcrdma_rpc_waiter_self();
	atomic_store(&b->tid, gettid());
	pthread_mutex_lock(&b->x->lock);
	b->rc = rpcrdma_rpc_xprt_wait_unlock(b->x, &b->s);
	atomic_store(&b->done, 1);
	return NULL;
}

static void bare_start(struct bare *b, struct rpc_xprt *x, uint64_t deadline)
{
	memset(b, 0, sizeof(*b));
	b->x = x;
	b->s.deadline = deadline;
	atomic_init(&b->s.finished, false);
	pthread_create(&b->t, NULL, bare_main, b);
}

/* Is b's wait parked (asleep without the connection's lock)?  b->s.w is
 * published by b's thread before its tid. */
static bool parked(struct bare *b)
{
	if (!atomic_load(&b->tid))
		return false;
	struct rpc_waiter *w = b->s.w;
	pthread_mutex_lock(&w->m);
	bool p = b->s.park == PARK_SLEEPING;
	pthread_mutex_unlock(&w->m);
	return p;
}

/* A waiter that does not drive sleeps without the connection's lock, and
 * once told it returns without taking it again: the teller takes it off
 * the list.  So many threads on one connection do not queue for the lock
 * the poller holds (the rdma-tirpc 32-thread case). */
static void test_parked_waiters(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct rpc_xprt *x = k.c.x;
	struct bare d, p;
	bool ok;
	bare_start(&d, x, now_ms() + 4 * LIMIT_MS);
	WAIT_FOR(ok, driver_of(x) == &d.s, LIMIT_MS);
	CHECK(ok);

	/* Told while parked: it returns while this thread holds the lock. */
	bare_start(&p, x, now_ms() + 4 * LIMIT_MS);
	WAIT_FOR(ok, parked(&p), LIMIT_MS);
	CHECK(ok);
	pthread_mutex_lock(&x->lock);
	CHECK_EQ(x->inside, 2);
	rpcrdma_rpc_wait_done_locked(x, &p.s, 7, NULL);
	WAIT_FOR(ok, atomic_load(&p.done) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK(x->waiters == &d.s && !d.s.next);
	CHECK(x->driver == &d.s);
	CHECK_EQ(x->inside, 1);
	pthread_mutex_unlock(&x->lock);
	pthread_join(p.t, NULL);
	CHECK_EQ(p.rc, 0);
	CHECK_EQ(p.s.status, 7);

	/* Told with a work queue (as a poller tells): off the list at once,
	 * woken by the queue's first item once the lock is dropped. */
	bare_start(&p, x, now_ms() + 4 * LIMIT_MS);
	WAIT_FOR(ok, parked(&p), LIMIT_MS);
	CHECK(ok);
	struct rpc_work wk;
	rpc_work_init(&wk);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &p.s, 5, &wk);
	CHECK(wk.wakes == &p.s.tell);
	CHECK(x->waiters == &d.s && !d.s.next);
	CHECK_EQ(x->inside, 1);
	pthread_mutex_unlock(&x->lock);
	usleep(20000);
	CHECK_EQ(atomic_load(&p.done), 0);
	rpcrdma_rpc_work_run(&wk);
	CHECK(rpc_work_empty(&wk));
	pthread_join(p.t, NULL);
	CHECK_EQ(p.rc, 0);
	CHECK_EQ(p.s.status, 5);

	/* Its deadline passes while parked: it comes back for the lock,
	 * returns TIMEOUT and leaves the list. */
	bare_start(&p, x, now_ms() + 300);
	WAIT_FOR(ok, parked(&p), LIMIT_MS);
	CHECK(ok);
	pthread_join(p.t, NULL);
	CHECK_EQ(p.rc, RPCRDMA_ERR_TIMEOUT);
	pthread_mutex_lock(&x->lock);
	CHECK(x->waiters == &d.s && !d.s.next);
	CHECK_EQ(x->inside, 1);
	pthread_mutex_unlock(&x->lock);

	/* The driver is told and leaves: a parked waiter gets the role and
	 * drives, with the lock again. */
	bare_start(&p, x, now_ms() + 4 * LIMIT_MS);
	WAIT_FOR(ok, parked(&p), LIMIT_MS);
	CHECK(ok);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &d.s, 0, NULL);
	pthread_mutex_unlock(&x->lock);
	pthread_join(d.t, NULL);
	CHECK_EQ(d.rc, 0);
	WAIT_FOR(ok, driver_of(x) == &p.s, LIMIT_MS);
	CHECK(ok);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &p.s, 0, NULL);
	pthread_mutex_unlock(&x->lock);
	pthread_join(p.t, NULL);
	CHECK_EQ(p.rc, 0);
	pthread_mutex_lock(&x->lock);
	CHECK(x->waiters == NULL);
	CHECK(x->driver == NULL);
	CHECK_EQ(x->inside, 0);
	pthread_mutex_unlock(&x->lock);
	conn_close(&k);
}

static void test_kick_attend(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct rpc_xprt *x = k.c.x;
	/* A notification left from the set-up would wake the driver at
	 * once: consume it, as the loop would. */
	rpcrdma_rpc_xprt_attend(x, true, false);

	struct bare b;
	bare_start(&b, x, now_ms() + 2 * LIMIT_MS);
	bool ok;
	WAIT_FOR(ok, driver_of(x) == &b.s, LIMIT_MS);
	CHECK(ok);
	WAIT_FOR(ok, atomic_load(&b.tid) && thread_in_poll(atomic_load(&b.tid)),
		 LIMIT_MS);
	CHECK(ok);

	/* A driver attends x: the loop's attend and the tick keep off its
	 * CQ. */
	struct fake_cq_stats before, after;
	fake_cq_stats(x->cq, &before);
	CHECK_EQ(rpcrdma_rpc_xprt_attend(x, false, true), -1);
	rpcrdma_rpc_xprt_tick(x, now_ms());
	fake_cq_stats(x->cq, &after);
	CHECK_EQ(after.polls, before.polls);
	CHECK_EQ(after.notifies, before.notifies);

	/* Its outcome, told from this thread: the kick wakes it (no
	 * completion came: its CQ fd stays quiet). */
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &b.s, 7, NULL);
	pthread_mutex_unlock(&x->lock);
	WAIT_FOR(ok, atomic_load(&b.done) == 1, LIMIT_MS);
	CHECK(ok);
	pthread_join(b.t, NULL);
	CHECK_EQ(b.rc, 0);
	CHECK_EQ(b.s.status, 7);
	fake_cq_stats(x->cq, &after);
	CHECK_EQ(after.pushed, before.pushed);
	CHECK(driver_of(x) == NULL);
	/* Nobody drives now: attend polls again. */
	CHECK_EQ(rpcrdma_rpc_xprt_attend(x, false, false), 0);
	fake_cq_stats(x->cq, &after);
	CHECK_EQ(after.polls, before.polls + 1);
	conn_close(&k);
}

/* =====================================================================
 * Arming costs no poll when the provider says nothing is queued
 */
/* A wait's first pass, as a synchronous caller makes it right after
 * posting its call: it arms at once and polls only when the arm says
 * something may be queued.  Returns the polls made before the waiter
 * slept (the outcome is then told from here: the kick ends it). */
static long wait_polls_before_sleep(struct rpc_xprt *x, bool always)
{
	rpcrdma_rpc_xprt_attend(x, true, false); /* no stale notification */
	fake_net.notify_always = always;
	struct fake_cq_stats before, asleep;
	fake_cq_stats(x->cq, &before);
	struct bare b;
	bare_start(&b, x, now_ms() + 2 * LIMIT_MS);
	bool ok;
	WAIT_FOR(ok, driver_of(x) == &b.s && atomic_load(&b.tid) &&
			     thread_in_poll(atomic_load(&b.tid)),
		 LIMIT_MS);
	CHECK(ok);
	fake_cq_stats(x->cq, &asleep);
	CHECK_EQ(asleep.notifies - before.notifies, 1);
	CHECK(asleep.armed);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &b.s, 0, NULL);
	pthread_mutex_unlock(&x->lock);
	pthread_join(b.t, NULL);
	CHECK_EQ(b.rc, 0);
	fake_net.notify_always = false;
	return (long)(asleep.polls - before.polls);
}

/* A synchronous call whose reply comes while it sleeps: the CQ fd wakes
 * it (an event, no kick needed). */
struct tsync {
	struct rpc_xprt *x;
	struct tcall c;
	struct rpc_wait s;
	uint32_t proc;
	_Atomic pid_t tid;
	int rc;
	pthread_t t;
};

static void *tsync_main(void *arg)
{
	struct tsync *t = arg;
	atomic_store(&t->tid, gettid());
	t->rc = tcall_sync(t->x, &t->c, t->proc, &t->s, now_ms() + 2 * LIMIT_MS);
	return NULL;
}

/* Starts call c (proc) on k's client and has the server answer it, the
 * reply left on the client's CQ, unpolled; *a: the CQ's stats then. */
static void reply_queued(struct conn *k, struct tcall *c, uint32_t proc,
			 struct fake_cq_stats *a)
{
	struct trole *sresp = trole_of(k->s.x, RPC_RESPONDER);
	int nin = atomic_load(&sresp->nin);
	bool ok;
	memset(c, 0, sizeof *c);
	CHECK_EQ(tcall_start(k->c.x, c, proc), 0);
	ATTEND_FOR(ok, k->s.x, atomic_load(&sresp->nin) == nin + 1, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[nin]);
	rpcrdma_rpc_xprt_attend(k->s.x, false, false);
	fake_cq_stats(k->c.x->cq, a);
	CHECK(a->queued > 0);
}

static void test_arm_contract(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct rpc_xprt *x = k.c.x;
	struct trole *sresp = trole_of(k.s.x, RPC_RESPONDER);
	struct fake_cq_stats a, b;
	bool ok;

	/* The loop attends an empty CQ and arms it: one poll, one arm that
	 * says 0, no poll after it. */
	fake_cq_stats(x->cq, &a);
	CHECK_EQ(rpcrdma_rpc_xprt_attend(x, false, true), 0);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.polls - a.polls, 1);
	CHECK_EQ(b.notifies - a.notifies, 1);
	CHECK_EQ(b.notify_said_1, a.notify_said_1);
	/* A provider that cannot tell (verbs: always 1) costs one more. */
	fake_net.notify_always = true;
	fake_cq_stats(x->cq, &a);
	CHECK_EQ(rpcrdma_rpc_xprt_attend(x, false, true), 0);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.polls - a.polls, 2);
	/* Arming a connection polled since its work ran: no poll before
	 * the arm, and none after it when the arm says 0; one when the
	 * provider cannot tell. */
	fake_cq_stats(x->cq, &a);
	CHECK_EQ(rpcrdma_rpc_xprt_arm(x), 0);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.polls - a.polls, 1);
	CHECK_EQ(b.notifies - a.notifies, 1);
	fake_net.notify_always = false;
	fake_cq_stats(x->cq, &a);
	CHECK_EQ(rpcrdma_rpc_xprt_arm(x), 0);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.polls - a.polls, 0);
	CHECK_EQ(b.notifies - a.notifies, 1);

	/* A wait's first pass: no poll before its sleep when the arm says
	 * 0; one when it says 1. */
	CHECK_EQ(wait_polls_before_sleep(x, false), 0);
	CHECK_EQ(wait_polls_before_sleep(x, true), 1);

	/* A completion queued before the arm: the arm says 1 and the poll
	 * after it takes the completion (a reply is never left behind the
	 * waiter's sleep). */
	struct tcall c1;
	reply_queued(&k, &c1, 9, &a);
	struct bare w;
	bare_start(&w, x, now_ms() + 2 * LIMIT_MS);
	WAIT_FOR(ok, driver_of(x) == &w.s && atomic_load(&w.tid) &&
			     thread_in_poll(atomic_load(&w.tid)),
		 LIMIT_MS);
	CHECK(ok);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.queued, 0);
	CHECK(b.notify_said_1 > a.notify_said_1);
	CHECK_EQ(atomic_load(&c1.ran), 1);
	CHECK_EQ(reply_word(&c1), 109);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_wait_done_locked(x, &w.s, 0, NULL);
	pthread_mutex_unlock(&x->lock);
	pthread_join(w.t, NULL);
	CHECK_EQ(w.rc, 0);

	/* A synchronous call asleep on its CQ is woken by its reply through
	 * the CQ fd. */
	rpcrdma_rpc_xprt_attend(x, true, false);
	static struct tsync t;
	memset(&t, 0, sizeof t);
	t.x = x;
	t.proc = 8;
	pthread_create(&t.t, NULL, tsync_main, &t);
	WAIT_FOR(ok, driver_of(x) == &t.s && atomic_load(&t.tid) &&
			     thread_in_poll(atomic_load(&t.tid)),
		 LIMIT_MS);
	CHECK(ok);
	fake_cq_stats(x->cq, &a);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 2, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[1]);
	pthread_join(t.t, NULL);
	CHECK_EQ(t.rc, 0);
	CHECK_EQ(reply_word(&t.c), 108);
	fake_cq_stats(x->cq, &b);
	CHECK(b.events > a.events);

	/* A reply queued on the CQ since its last poll: the arm without a
	 * poll says 1, polls, and the call completes there. */
	rpcrdma_rpc_xprt_attend(x, true, false);
	struct tcall c3;
	reply_queued(&k, &c3, 7, &a);
	CHECK(rpcrdma_rpc_xprt_arm(x) > 0);
	fake_cq_stats(x->cq, &b);
	CHECK_EQ(b.queued, 0);
	CHECK_EQ(b.notify_said_1 - a.notify_said_1, 1);
	CHECK_EQ(atomic_load(&c3.ran), 1);
	CHECK_EQ(reply_word(&c3), 107);
	conn_close(&k);
}

/* =====================================================================
 * The Requester's time-out comes with the tick, exactly once
 */
struct acall {
	atomic_int n;
	int status;
	uint32_t xid, word;
};

static void acall_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct acall *a = arg;
	a->status = rep->status;
	a->xid = rep->xid;
	if (rep->status == 0 && rep->len >= 4)
		a->word = rpcrdma_be32_get(rep->data);
	rpcrdma_reply_free(rep);
	atomic_fetch_add(&a->n, 1);
}

static void test_tick_timeout(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);

	/* A first call answered: the version is settled (its opener can
	 * no longer time out on a tick far ahead). */
	struct acall a0 = {0}, a1 = {0}, a2 = {0};
	struct rpcrdma_call call = {.proc = 1};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a0), 0);
	bool ok;
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 1, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[0]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a0.n) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(a0.status, 0);
	CHECK_EQ(a0.word, 101);

	/* The server holds the next one; time passes by the tick's clock. */
	uint64_t t0 = now_ms();
	call = (struct rpcrdma_call){.proc = 2, .timeout_ms = 1000};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a1), 0);
	uint64_t t1 = now_ms();
	rpcrdma_rpc_xprt_tick(k.c.x, t0 + 999);
	CHECK_EQ(atomic_load(&a1.n), 0);
	rpcrdma_rpc_xprt_tick(k.c.x, t1 + 1000);
	CHECK_EQ(atomic_load(&a1.n), 1);
	CHECK_EQ(a1.status, RPCRDMA_ERR_TIMEOUT);
	CHECK(a1.xid != 0);
	rpcrdma_rpc_xprt_tick(k.c.x, t1 + 2000);
	CHECK_EQ(atomic_load(&a1.n), 1);

	/* Its late reply is dropped; the callback does not run again, and
	 * the next call goes through. */
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 2, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(sresp->in[1].xid, a1.xid);
	treply(sresp, &sresp->in[1]);
	call = (struct rpcrdma_call){.proc = 3};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a2), 0);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 3, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[2]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a2.n) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(a2.status, 0);
	CHECK_EQ(a2.word, 103);
	CHECK_EQ(atomic_load(&a1.n), 1);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * Quiet: a connection on which nothing waits on time is ticked rarely
 * (RPC_QUIET_TICK_MS), and any work makes it ticked again at once
 */
static bool quiet_after(struct rpc_xprt *x, uint64_t now)
{
	return atomic_load(&x->quiet_until) > now;
}

/* Ticks x at now until the tick leaves it skipped (quiet_until set): a
 * tick that polled a completion just in (the Send of a call, say) has
 * work to run, and leaves x at the loop's pace until the next, as the
 * loop would tick it 20 ms later.  Returns quiet_until. */
static uint64_t tick_settled(struct rpc_xprt *x, uint64_t now)
{
	for (int i = 0; i < 500; i++) {
		rpcrdma_rpc_xprt_tick(x, now);
		if (atomic_load(&x->quiet_until))
			break;
		usleep(1000);
	}
	return atomic_load(&x->quiet_until);
}

static void test_quiet(void)
{
	struct conn k;
	struct rpcrdma_clnt *cl = NULL;
	struct trole *sresp = open_tserver(&k, &cl);

	/* A call answered: the version is settled, nothing is out. */
	struct acall a0 = {0}, a1 = {0};
	struct rpcrdma_call call = {.proc = 1};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a0), 0);
	bool ok;
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 1, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[0]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a0.n) == 1, LIMIT_MS);
	CHECK(ok);
	/* Early in a quiet-tick period (whole multiples of
	 * RPC_QUIET_TICK_MS), so that the 300 ms deadline below comes before
	 * the next quiet tick. */
	while (now_ms() % RPC_QUIET_TICK_MS >= 500)
		usleep(10000);
	uint64_t t = now_ms();
	rpcrdma_rpc_xprt_tick(k.c.x, t);
	CHECK(quiet_after(k.c.x, t));
	CHECK(atomic_load(&k.c.x->quiet_until) <= t + RPC_QUIET_TICK_MS);
	/* (The server here has test roles, always busy: never quiet.) */
	rpcrdma_rpc_xprt_tick(k.s.x, t);
	CHECK(!quiet_after(k.s.x, t));

	/* A call out: ticked at once, then not before its deadline.  A
	 * deadline past the quiet tick's leaves the quiet tick. */
	call = (struct rpcrdma_call){.proc = 2, .timeout_ms = 60000};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a1), 0);
	CHECK_EQ(atomic_load(&k.c.x->quiet_until), 0);
	tick_settled(k.c.x, t + 1);
	CHECK(quiet_after(k.c.x, t + 1));
	CHECK(atomic_load(&k.c.x->quiet_until) <= t + 1 + RPC_QUIET_TICK_MS);
	/* A second one with a short time-out: its deadline is the next
	 * tick, and that tick times it out; the first stays out. */
	struct acall a2 = {0};
	uint64_t t2 = now_ms();
	call = (struct rpcrdma_call){.proc = 3, .timeout_ms = 300};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a2), 0);
	uint64_t t3 = now_ms();
	CHECK_EQ(atomic_load(&k.c.x->quiet_until), 0);
	uint64_t due = tick_settled(k.c.x, t + 2);
	CHECK(due >= t2 + 300 && due <= t3 + 300);
	CHECK_EQ(tick_settled(k.c.x, due - 1), due);
	CHECK_EQ(atomic_load(&a2.n), 0);
	rpcrdma_rpc_xprt_tick(k.c.x, due);
	CHECK_EQ(atomic_load(&a2.n), 1);
	CHECK_EQ(a2.status, RPCRDMA_ERR_TIMEOUT);
	/* (That tick had a callback to run: the next one comes at the
	 * loop's pace.)  a1 left: the quiet tick. */
	tick_settled(k.c.x, due + 1);
	CHECK(quiet_after(k.c.x, due + 1));
	CHECK(atomic_load(&k.c.x->quiet_until) <= due + 1 + RPC_QUIET_TICK_MS);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 3, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[1]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a1.n) == 1, LIMIT_MS);
	CHECK(ok);
	CHECK_EQ(a1.status, 0);
	rpcrdma_rpc_xprt_tick(k.c.x, t + 2);
	CHECK(quiet_after(k.c.x, t + 2));

	/* Idle: every tick that finds x as it was doubles its quiet
	 * period, up to RPC_QUIET_TICK_MAX_MS, each due at a whole multiple
	 * of the period.  (The loop trims a client's pool after each tick:
	 * buffers it keeps hold the period at RPC_QUIET_TICK_MS.) */
	uint64_t at = atomic_load(&k.c.x->quiet_until);
	unsigned level = 0;
	for (int i = 0; i < 8 * RPC_QUIET_LEVELS; i++) {
		rpcrdma_rpc_xprt_tick(k.c.x, at);
		rpcrdma_rpc_bufpool_trim(k.c.x->rd->pool, at);
		uint64_t q = atomic_load(&k.c.x->quiet_until);
		CHECK(q > at && q - at <= RPC_QUIET_TICK_MAX_MS);
		if (q <= at)
			break;
		CHECK(k.c.x->quiet_level <= level + 1);
		level = k.c.x->quiet_level;
		CHECK_EQ(q % ((uint64_t)RPC_QUIET_TICK_MS << level), 0);
		at = q;
		if (level == RPC_QUIET_LEVELS &&
		    q % RPC_QUIET_TICK_MAX_MS == 0)
			break;
	}
	CHECK_EQ(level, RPC_QUIET_LEVELS);
	rpcrdma_rpc_xprt_tick(k.c.x, at);
	CHECK_EQ(atomic_load(&k.c.x->quiet_until), at + RPC_QUIET_TICK_MAX_MS);
	/* A call moves x: ticked at once, then every RPC_QUIET_TICK_MS
	 * again. */
	struct acall a3 = {0};
	call = (struct rpcrdma_call){.proc = 4};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a3), 0);
	CHECK_EQ(atomic_load(&k.c.x->quiet_until), 0);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 4, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[3]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a3.n) == 1, LIMIT_MS);
	CHECK(ok);
	at += 1;
	uint64_t q3 = tick_settled(k.c.x, at);
	CHECK_EQ(k.c.x->quiet_level, 0);
	CHECK(q3 > at && q3 <= at + RPC_QUIET_TICK_MS);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* =====================================================================
 * Lost: every outstanding call completes exactly once, with the status
 */
static void test_lost(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	o.credits = 2; /* two calls in the engine, the rest queued */
	CHECK(conn_open(&k, real_roles, test_roles, &o) == 0);
	struct trole *sresp = trole_of(k.s.x, RPC_RESPONDER);
	struct rpcrdma_clnt *cl = NULL;
	CHECK_EQ(rpcrdma_rpc_clnt_on_xprt(k.c.x, TPROG, 1, &cl), 0);

	struct acall a0 = {0};
	struct rpcrdma_call call = {.proc = 1};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a0), 0);
	bool ok;
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 1, LIMIT_MS);
	CHECK(ok);
	treply(sresp, &sresp->in[0]);
	ATTEND_FOR(ok, k.c.x, atomic_load(&a0.n) == 1, LIMIT_MS);
	CHECK(ok);

	/* Five asynchronous calls and a synchronous one; the server takes
	 * them in but answers none. */
	struct acall a[5];
	memset(a, 0, sizeof a);
	for (int i = 0; i < 5; i++) {
		call = (struct rpcrdma_call){.proc = 10 + (uint32_t)i};
		CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a[i]), 0);
	}
	struct syncer s = {.cl = cl, .proc = 20};
	CHECK_EQ(pthread_create(&s.t, NULL, syncer_main, &s), 0);
	WAIT_FOR(ok, waiters_of(k.c.x) == 1, LIMIT_MS);
	CHECK(ok);
	ATTEND_FOR(ok, k.s.x, atomic_load(&sresp->nin) == 3, LIMIT_MS);
	CHECK(ok);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(atomic_load(&a[i].n), 0);

	/* The connection breaks (its work requests flush), and the CM says
	 * so. */
	fake_qp_break(k.c.x->qp);
	rpcrdma_rpc_xprt_lost(k.c.x, RPCRDMA_ERR_DISCONNECTED);
	pthread_join(s.t, NULL);
	CHECK_EQ(s.rc, RPCRDMA_ERR_DISCONNECTED);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(atomic_load(&a[i].n), 1);
		CHECK_EQ(a[i].status, RPCRDMA_ERR_DISCONNECTED);
	}
	/* Nothing more comes, whatever attends it; a new call fails at
	 * once without its callback. */
	rpcrdma_rpc_xprt_attend(k.c.x, false, true);
	rpcrdma_rpc_xprt_tick(k.c.x, now_ms() + 60000);
	struct acall late = {0};
	call = (struct rpcrdma_call){.proc = 30};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &late),
		 RPCRDMA_ERR_DISCONNECTED);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(atomic_load(&a[i].n), 1);
	CHECK_EQ(atomic_load(&late.n), 0);
	CHECK_EQ(atomic_load(&a0.n), 1);
	rpcrdma_clnt_destroy(cl);
	conn_close(&k);
}

/* The test Requester role hears of the loss with its status, once. */
static void test_lost_role(void)
{
	struct conn k;
	struct rpcrdma_opts o;
	opts_for_test(&o);
	CHECK(conn_open(&k, test_roles, test_roles, &o) == 0);
	struct trole *creq = trole_of(k.c.x, RPC_REQUESTER);
	struct tcall c1;
	memset(&c1, 0, sizeof c1);
	CHECK_EQ(tcall_start(k.c.x, &c1, 1), 0);
	rpcrdma_rpc_xprt_lost(k.c.x, RPCRDMA_ERR_DISCONNECTED);
	CHECK_EQ(atomic_load(&creq->lost), 1);
	CHECK_EQ(creq->lost_status, RPCRDMA_ERR_DISCONNECTED);
	/* The engine completed the call it had, with the loss. */
	CHECK_EQ(atomic_load(&c1.done), 1);
	CHECK_EQ(c1.status, RPCRDMA_ERR_DISCONNECTED);
	CHECK_EQ(atomic_load(&c1.ran), 1);
	CHECK_EQ(atomic_load(&creq->unlocked), 0);
	conn_close(&k);
	/* conn_close's loss comes on a dead connection: the roles hear of
	 * it again (no connection will follow), the engine has nothing left
	 * to complete. */
	CHECK_EQ(atomic_load(&c1.done), 1);
}

/* =====================================================================
 * A role that cannot attach: create fails cleanly
 */
static void test_attach_nomem(void)
{
	struct rpcrdma_opts o;
	opts_for_test(&o);
	struct rpc_dev rd;
	CHECK_EQ(dev_open(&rd), 0);
	struct rpcrdma_cm_id *id = fake_id_new(rd.dev, rd.ch, 1);
	int mrs = fake_net.live_mrs;

	/* The Responder fails after the Requester attached: the Requester
	 * is detached, everything made is gone, the id is still ours. */
	static const struct rpc_role *const roles1[RPC_ROLES] = {
		[RPC_REQUESTER] = &treq_role, [RPC_RESPONDER] = &tresp_role};
	int att = atomic_load(&tr_attached), det = atomic_load(&tr_detached);
	int ids = fake_net.ids_destroyed;
	struct rpc_xprt *x = (struct rpc_xprt *)&rd; /* must stay untouched */
	tr_attach_fail = 2;
	CHECK_EQ(rpcrdma_rpc_xprt_create(&rd, &o, false, false, id, roles1, &x),
		 RPCRDMA_ERR_NOMEM);
	CHECK(x == (struct rpc_xprt *)&rd);
	CHECK_EQ(atomic_load(&tr_attached) - att, 1);
	CHECK_EQ(atomic_load(&tr_detached) - det, 1);
	CHECK_EQ(fake_net.ids_destroyed, ids);
	CHECK_EQ(fake_net.live_mrs, mrs);
	CHECK_EQ(fake_net.live_qps, 0);
	CHECK_EQ(fake_net.live_cqs, 0);
	CHECK(id->qp == NULL);

	/* The real Requester's state goes too (ASan's leak check), and a
	 * first role that fails leaves the second unattached. */
	static const struct rpc_role *const roles2[RPC_ROLES] = {
		[RPC_REQUESTER] = &rpcrdma_rpc_requester_role,
		[RPC_RESPONDER] = &tresp_role};
	tr_attach_fail = 1;
	CHECK_EQ(rpcrdma_rpc_xprt_create(&rd, &o, true, false, id, roles2, &x),
		 RPCRDMA_ERR_NOMEM);
	static const struct rpc_role *const roles3[RPC_ROLES] = {
		[RPC_REQUESTER] = &treq_role,
		[RPC_RESPONDER] = &rpcrdma_rpc_responder_role};
	att = atomic_load(&tr_attached);
	tr_attach_fail = 1;
	CHECK_EQ(rpcrdma_rpc_xprt_create(&rd, &o, false, false, id, roles3, &x),
		 RPCRDMA_ERR_NOMEM);
	CHECK_EQ(atomic_load(&tr_attached), att);
	CHECK_EQ(fake_net.ids_destroyed, ids);
	CHECK_EQ(fake_net.live_mrs, mrs);
	CHECK_EQ(fake_net.live_qps, 0);
	CHECK_EQ(fake_net.live_cqs, 0);

	/* The same id then makes a connection. */
	tr_attach_fail = 0;
	CHECK_EQ(rpcrdma_rpc_xprt_create(&rd, &o, false, false, id, roles1, &x),
		 0);
	rpcrdma_rpc_xprt_destroy(x);
	CHECK_EQ(fake_net.ids_destroyed, ids + 1);
	dev_close(&rd);
	CHECK_EQ(fake_net.live_mrs, 0);
	CHECK_EQ(fake_net.live_ids, 0);
	CHECK_EQ(fake_net.violations, 0);
}

/* =====================================================================
 * A burst of CM events does not hold its loop: one pass handles them for
 * a slice of time (rpc/loop.c drain_cm), and what else the loop's thread
 * has to do (here a request; the completions of its connections alike)
 * comes between two slices.  A storm's server drained them all in one
 * pass, for seconds, and the v2 openers of its established connections
 * went unanswered past the client's time-out.
 */
#define CM_BURST 200u
static atomic_uint cm_seen;

static void on_cm_slow(void *owner, struct rpcrdma_cm_event *ev)
{
	(void)owner;
	(void)ev;
	usleep(1000); /* an accept's work, at least */
	atomic_fetch_add(&cm_seen, 1);
}

struct seen_req {
	struct rpc_loop_req r;
	unsigned at; /* CM events handled when the request ran */
};

static void note_seen(struct rpc_loop *l, struct rpc_loop_req *r)
{
	(void)l;
	((struct seen_req *)r)->at = atomic_load(&cm_seen);
}

static void test_cm_slice(void)
{
	struct rpc_dev rd;
	CHECK_EQ(dev_open(&rd), 0);
	struct rpcrdma_cm_id *id = fake_id_new(rd.dev, rd.ch, 20049);
	CHECK(id != NULL);
	static struct rpcrdma_cm_event evs[CM_BURST];
	atomic_store(&cm_seen, 0);
	for (unsigned i = 0; i < CM_BURST; i++) {
		evs[i] = (struct rpcrdma_cm_event){
			.type = RPCRDMA_CM_EVENT_CONNECT_REQUEST, .id = id};
		CHECK_EQ(fake_cm_post(rd.ch, &evs[i]), 0);
	}
	struct rpc_loop l;
	CHECK_EQ(rpcrdma_rpc_loop_init(&l, &rd, on_cm_slow, NULL, NULL), 0);
	CHECK_EQ(rpcrdma_rpc_loop_start(&l), 0);
	/* Runs at the end of the pass the loop is in: each event takes a
	 * millisecond or more, a slice is 10 ms, so after 22 events at most
	 * (two slices, if the first pass began before the request came);
	 * after all 200 when a pass drains them all. */
	struct seen_req q = {.r.fn = note_seen};
	rpcrdma_rpc_loop_call(&l, &q.r);
	CHECK(q.at <= 22);
	/* The rest follow, none lost: the fd stayed readable. */
	for (int i = 0; i < 30000 && atomic_load(&cm_seen) < CM_BURST; i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&cm_seen), CM_BURST);
	rpcrdma_rpc_loop_stop(&l);
	rpcrdma_rpc_loop_fini(&l);
	rd.ops->destroy_id(id);
	dev_close(&rd);
	CHECK_EQ(fake_net.live_ids, 0);
}

int main(void)
{
	struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{"work_order", test_work_order},
		{"pump_routes", test_pump_routes},
		{"work_chain", test_work_chain},
		{"nested_wait", test_nested_wait},
		{"driver_handoff", test_driver_handoff},
		{"owed_sends", test_owed_sends},
		{"busy_driver", test_busy_driver},
		{"read_share", test_read_share},
		{"deadline", test_deadline},
		{"sync_timeout_real", test_sync_timeout_real},
		{"kick_attend", test_kick_attend},
		{"arm_contract", test_arm_contract},
		{"parked_waiters", test_parked_waiters},
		{"tick_timeout", test_tick_timeout},
		{"quiet", test_quiet},
		{"lost", test_lost},
		{"lost_role", test_lost_role},
		{"attach_nomem", test_attach_nomem},
		{"cm_slice", test_cm_slice},
	};
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		int failed = test_failed;
		uint64_t t = now_ms();
		fake_net_reset();
		tests[i].fn();
		printf("%-20s %s (%llu ms)\n", tests[i].name,
		       test_failed == failed ? "ok" : "FAILED",
		       (unsigned long long)(now_ms() - t));
	}
	TEST_MAIN_END();
}
