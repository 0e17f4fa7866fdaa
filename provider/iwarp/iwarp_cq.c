/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Completion queues.  poll_cq/ack_cq_events run inline the RX (and a
 * blocked TX) of the attached QPs whose sockets the CQ's epoll set reports
 * ready: see the threading model in iwarp.h.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/slab.h"
#include "common/pages.h"
#include "provider/iwarp/iwarp.h"

/* CQ records: one per connection in the RPC layer (common/slab.h). */
static struct rpcrdma_slab cq_slab = RPCRDMA_SLAB(struct iw_cq);

int rpcrdma_iwarp_create_cq(struct rpcrdma_dev *d, int cqe, void *context,
			    struct rpcrdma_cq **out)
{
	if (!d || !out || cqe <= 0 || cqe > IW_MAX_CQE)
		return RPCRDMA_ERR_INVAL;
	struct iw_cq *cq = rpcrdma_slab_alloc(&cq_slab);
	if (!cq)
		return RPCRDMA_ERR_NOMEM;
	/* The ring of cqe entries lives as long as the connection: pages,
	 * given back when it goes (common/pages.h), and not touched while
	 * the few completions a connection with a call or two in flight
	 * has waiting fit in the record's own (an idle connection held the
	 * page of its first completions). */
	cq->far_cap = (uint32_t)cqe;
	cq->far = rpcrdma_pages_array(cq->far_cap, sizeof(*cq->far));
	cq->ring = cq->near;
	cq->cap = IW_CQ_NEAR;
	cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	cq->epfd = epoll_create1(EPOLL_CLOEXEC);
	int rc = RPCRDMA_ERR_SYSTEM;
	if (!cq->far)
		rc = RPCRDMA_ERR_NOMEM;
	if (!cq->far || cq->efd < 0 || cq->epfd < 0)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, cq->efd, &ev) != 0)
		goto fail;
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->qps_lock, NULL);
	cq->base.dev = d;
	cq->base.context = context;
	cq->base.cqe = cqe;
	*out = &cq->base;
	return 0;
fail:
	if (cq->efd >= 0)
		close(cq->efd);
	if (cq->epfd >= 0)
		close(cq->epfd);
	rpcrdma_pages_free(cq->far, cq->far_cap * sizeof(*cq->far));
	rpcrdma_slab_free(&cq_slab, cq);
	return rc;
}

int rpcrdma_iwarp_destroy_cq(struct rpcrdma_cq *c)
{
	if (!c)
		return RPCRDMA_ERR_INVAL;
	struct iw_cq *cq = (struct iw_cq *)c;
	pthread_mutex_lock(&cq->qps_lock);
	size_t n = cq->nqps;
	pthread_mutex_unlock(&cq->qps_lock);
	if (n)
		return RPCRDMA_ERR_BUSY; /* verbs: QPs still use it */
	close(cq->efd);
	close(cq->epfd);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->qps_lock);
	rpcrdma_pages_free(cq->far, cq->far_cap * sizeof(*cq->far));
	rpcrdma_slab_free(&cq_slab, cq);
	return 0;
}

/* The CQ whose consumer is running inline progress on this thread (in
 * poll_cq or ack_cq_events): its completions need no wake-up, the
 * consumer polls them right after. */
static _Thread_local struct iw_cq *consuming;
static _Thread_local bool consuming_ack; /* ...inside ack_cq_events */

/* The CQ's own locks: none when its QP's consumer serializes it. */
static void cq_lock(struct iw_cq *cq, pthread_mutex_t *m)
{
	if (!cq->serial)
		pthread_mutex_lock(m);
}

static void cq_unlock(struct iw_cq *cq, pthread_mutex_t *m)
{
	if (!cq->serial)
		pthread_mutex_unlock(m);
}

/* The ring in use is full (count entries from head), lock held: the
 * waiting completions move to the far ring, or to a larger one when
 * that is the full one (or smaller than what waits).  Overrun is a CQ
 * error in verbs; growing instead keeps every completion, as a lost one
 * would hang the consumer forever.  False: no memory to grow. */
static bool ring_move(struct iw_cq *cq, uint32_t count)
{
	struct rpcrdma_wc *r = cq->far;
	uint32_t ncap = cq->far_cap;
	bool grown = false;
	if (cq->ring == cq->far || ncap <= count) {
		ncap = (cq->cap > ncap ? cq->cap : ncap) * 2;
		r = rpcrdma_pages_array(ncap, sizeof(*r));
		if (!r)
			return false;
		grown = true;
	}
	for (uint32_t i = 0; i < count; i++)
		r[i] = cq->ring[(cq->head + i) % cq->cap];
	if (grown) {
		rpcrdma_pages_free(cq->far, cq->far_cap * sizeof(*cq->far));
		cq->far = r;
		cq->far_cap = ncap;
	}
	cq->ring = r;
	cq->cap = ncap;
	cq->head = 0;
	return true;
}

void rpcrdma_iwarp_cq_push(struct iw_cq *cq, const struct rpcrdma_wc *wc)
{
	cq_lock(cq, &cq->lock);
	uint32_t count = atomic_load_explicit(&cq->count, memory_order_relaxed);
	bool room = count < cq->cap || ring_move(cq, count);
	if (!room) {
		/* No memory to grow: the completion is lost; poll says so
		 * once the ring is drained, so the consumer (woken below)
		 * disconnects instead of waiting. */
		atomic_store(&cq->overflow, true);
	}
	if (room) {
		cq->ring[(cq->head + count) % cq->cap] = *wc;
		atomic_store(&cq->count, count + 1);
	}
	/* After the store of count (see struct iw_cq).  The CQ's own consumer
	 * running inline progress polls what it pushes right after, so it
	 * needs no wake-up: inside ack_cq_events such a push is the
	 * notification being acknowledged and takes the arm (a later push
	 * must not wake an fd nobody re-armed); inside poll_cq, after the
	 * consumer armed, it leaves the arm for completions of other
	 * threads (arm, drain, sleep).  Under the lock, so ack_cq_events
	 * never reads the eventfd between the flag and the write. */
	bool local = consuming == cq;
	if ((!local || consuming_ack) && atomic_exchange(&cq->armed, false) &&
	    !local) {
		uint64_t one = 1;
		ssize_t r = write(cq->efd, &one, sizeof(one));
		(void)r;
		atomic_store_explicit(&cq->efd_set, true,
				      memory_order_relaxed);
	}
	cq_unlock(cq, &cq->lock);
}

static int pop(struct iw_cq *cq, int n, struct rpcrdma_wc *wc)
{
	if (!atomic_load(&cq->count))
		return 0;
	int got = 0;
	cq_lock(cq, &cq->lock);
	uint32_t count = atomic_load_explicit(&cq->count, memory_order_relaxed);
	while (got < n && count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		count--;
	}
	/* Empty: start again at the front of the near ring, so that a
	 * connection with a call or two in flight keeps using its record
	 * instead of walking through the far ring (thousands of entries,
	 * sized for the worst case) and holding every page afterwards. */
	if (!count) {
		cq->head = 0;
		cq->ring = cq->near;
		cq->cap = IW_CQ_NEAR;
	}
	atomic_store(&cq->count, count);
	cq_unlock(cq, &cq->lock);
	return got;
}

/* Runs on this thread the engines of the attached QPs whose sockets are
 * ready, as the CQ's epoll set reports them without waiting: with many
 * QPs on the CQ, a pass costs what the QPs with data cost (one
 * epoll_wait, not a recv per QP).  A poll never blocks on a QP lock
 * another thread holds: that thread is already making progress; an
 * acknowledgement does (below).  Level-triggered,
 * so a socket a pass leaves readable (its RX engine busy elsewhere, or
 * beyond IW_POLL_QPS ready ones) is reported again by the next pass;
 * the RX engine leaves nothing staged when it returns (iwarp_qp_rx.c), so
 * a socket with nothing to read means a QP with nothing to do.  A CQ with
 * one QP (a connection's own) runs it without asking. */
static void inline_progress(struct iw_cq *cq, bool ack)
{
	struct iw_cq *outer = consuming;
	bool outer_ack = consuming_ack;
	struct epoll_event ev[IW_POLL_QPS];
	consuming = cq;
	consuming_ack = ack;
	cq_lock(cq, &cq->qps_lock);
	int n = 0;
	if (cq->solo) {
		/* A connection's own CQ: asking epoll first would cost a
		 * system call more per message. */
		ev[0].data.ptr = cq->solo;
		ev[0].events = EPOLLIN;
		n = 1;
	} else if (cq->nqps) {
		n = rpcrdma_epoll_wait_nocancel(cq->epfd, ev, IW_POLL_QPS, 0);
	}
	for (int i = 0; i < n; i++) {
		struct iw_qp *qp = ev[i].data.ptr;
		if (!qp || atomic_load(&qp->state) != IW_QP_RTS)
			continue; /* the eventfd, or a QP going down */
		/* ack_cq_events waits for the RX side: the progress thread
		 * may hold it for a moment (woken by the same socket, it
		 * takes the lock to decide whether to defer to us), and a
		 * pass that skipped the QP then would leave the socket, and
		 * so cq_fd, readable after the acknowledgement. */
		if (ev[i].events & ~(uint32_t)EPOLLOUT)
			rpcrdma_iwarp_rx_progress(qp, ack);
		if (atomic_load(&qp->want_out))
			rpcrdma_iwarp_tx_progress(qp);
	}
	cq_unlock(cq, &cq->qps_lock);
	consuming = outer;
	consuming_ack = outer_ack;
}

int rpcrdma_iwarp_poll_cq(struct rpcrdma_cq *c, int n, struct rpcrdma_wc *wc)
{
	if (!c || n < 0 || (n && !wc))
		return RPCRDMA_ERR_INVAL;
	struct iw_cq *cq = (struct iw_cq *)c;
	int got = pop(cq, n, wc);
	if (got) {
		atomic_store_explicit(&cq->sleeping, false, memory_order_relaxed);
		return got;
	}
	atomic_store_explicit(&cq->last_active_ns, rpcrdma_iwarp_now_ns(),
			      memory_order_relaxed);
	inline_progress(cq, false);
	got = pop(cq, n, wc);
	if (!got && atomic_load(&cq->overflow))
		return RPCRDMA_ERR_OVERFLOW; /* drained, one was lost */
	return got;
}

int rpcrdma_iwarp_req_notify_cq(struct rpcrdma_cq *c)
{
	if (!c)
		return RPCRDMA_ERR_INVAL;
	struct iw_cq *cq = (struct iw_cq *)c;
	/* Before the consumer's next read of count (see struct iw_cq): a
	 * push after this store sees the arm and writes the eventfd; one
	 * before it is in count, read after the store. */
	atomic_store(&cq->armed, true);
	atomic_store_explicit(&cq->sleeping, true, memory_order_relaxed);
	return atomic_load(&cq->count) || atomic_load(&cq->overflow) ? 1 : 0;
}

int rpcrdma_iwarp_cq_fd(struct rpcrdma_cq *c)
{
	if (!c)
		return RPCRDMA_ERR_INVAL;
	return ((struct iw_cq *)c)->epfd;
}

int rpcrdma_iwarp_ack_cq_events(struct rpcrdma_cq *c)
{
	if (!c)
		return RPCRDMA_ERR_INVAL;
	struct iw_cq *cq = (struct iw_cq *)c;
	atomic_store_explicit(&cq->last_active_ns, rpcrdma_iwarp_now_ns(),
			      memory_order_relaxed);
	atomic_store_explicit(&cq->sleeping, false, memory_order_relaxed);
	/* Socket readability is part of cq_fd: consume it here so the fd
	 * stops being readable, as the interface promises; then drain the
	 * eventfd if a completion wrote it. */
	inline_progress(cq, true);
	/* Most wake-ups come from the socket, not the eventfd: look at the
	 * flag first and take the lock only when it is set.  A push that
	 * writes the eventfd after the look is one that came after this
	 * ack, as if it had taken the lock after us. */
	if (!atomic_load_explicit(&cq->efd_set, memory_order_relaxed))
		return 0;
	cq_lock(cq, &cq->lock);
	if (atomic_load_explicit(&cq->efd_set, memory_order_relaxed)) {
		uint64_t v;
		ssize_t r = read(cq->efd, &v, sizeof(v));
		(void)r;
		atomic_store_explicit(&cq->efd_set, false,
				      memory_order_relaxed);
	}
	cq_unlock(cq, &cq->lock);
	return 0;
}

/* The QP's CQs: the send CQ, and the receive CQ when it is another. */
static int qp_cqs(struct iw_qp *qp, struct iw_cq *cqs[2])
{
	cqs[0] = (struct iw_cq *)qp->base.send_cq;
	cqs[1] = (struct iw_cq *)qp->base.recv_cq;
	return cqs[1] != cqs[0] ? 2 : 1;
}

bool rpcrdma_iwarp_cq_may_attach(struct iw_cq *cq, const pthread_mutex_t *serial)
{
	/* A serialized QP's consumer lock orders only that QP's work: a CQ
	 * it shares with another QP would be polled under the wrong lock. */
	pthread_mutex_lock(&cq->qps_lock);
	bool ok = !cq->nqps || (!serial && !cq->serial);
	pthread_mutex_unlock(&cq->qps_lock);
	return ok;
}

void rpcrdma_iwarp_cq_attach(struct iw_qp *qp)
{
	struct iw_cq *cqs[2];
	for (int i = 0, n = qp_cqs(qp, cqs); i < n; i++) {
		pthread_mutex_lock(&cqs[i]->qps_lock);
		cqs[i]->nqps++;
		cqs[i]->solo = cqs[i]->nqps == 1 ? qp : NULL;
		/* create_qp refused a serialized QP beside another.  Written
		 * only when it changes: the data path reads it unlocked. */
		if (cqs[i]->serial != (qp->serial != NULL))
			cqs[i]->serial = qp->serial != NULL;
		pthread_mutex_unlock(&cqs[i]->qps_lock);
	}
}

/* Takes the QP out of its CQs: out of their epoll sets under qps_lock, so
 * no inline pass names it after this; its completions still queued lose
 * their QP pointer (provider.h: wc.qp NULL once the QP is destroyed). */
void rpcrdma_iwarp_cq_detach(struct iw_qp *qp)
{
	struct iw_cq *cqs[2];
	int fd = atomic_load(&qp->fd);
	for (int i = 0, n = qp_cqs(qp, cqs); i < n; i++) {
		struct iw_cq *cq = cqs[i];
		pthread_mutex_lock(&cq->qps_lock);
		if (fd >= 0)
			epoll_ctl(cq->epfd, EPOLL_CTL_DEL, fd, NULL);
		cq->nqps--;
		/* Which QP is left is not known here: epoll tells. */
		cq->solo = NULL;
		pthread_mutex_unlock(&cq->qps_lock);
		pthread_mutex_lock(&cq->lock);
		uint32_t count = atomic_load_explicit(&cq->count,
						      memory_order_relaxed);
		for (uint32_t k = 0; k < count; k++) {
			struct rpcrdma_wc *wc = &cq->ring[(cq->head + k) % cq->cap];
			if (wc->qp == &qp->base)
				wc->qp = NULL;
		}
		pthread_mutex_unlock(&cq->lock);
	}
}

/* What the QP's socket is watched for in cq's epoll set: data, and room
 * on the send CQ while TX waits for it (TCP pushed back). */
static uint32_t watch_events(struct iw_qp *qp, struct iw_cq *cq)
{
	uint32_t ev = EPOLLIN;
	if (cq == (struct iw_cq *)qp->base.send_cq && atomic_load(&qp->want_out))
		ev |= EPOLLOUT;
	return ev;
}

void rpcrdma_iwarp_cq_watch(struct iw_qp *qp, bool on)
{
	struct iw_cq *cqs[2];
	int fd = atomic_load(&qp->fd);
	if (fd < 0)
		return;
	for (int i = 0, n = qp_cqs(qp, cqs); i < n; i++) {
		if (on) {
			struct epoll_event ev = {
				.events = watch_events(qp, cqs[i]),
				.data.ptr = qp };
			epoll_ctl(cqs[i]->epfd, EPOLL_CTL_ADD, fd, &ev);
		} else {
			epoll_ctl(cqs[i]->epfd, EPOLL_CTL_DEL, fd, NULL);
		}
	}
}

void rpcrdma_iwarp_cq_watch_out(struct iw_qp *qp)
{
	struct iw_cq *cq = (struct iw_cq *)qp->base.send_cq;
	int fd = atomic_load(&qp->fd);
	if (fd < 0)
		return;
	/* MOD, never ADD: a QP that went down (its socket out of the set)
	 * stays out. */
	struct epoll_event ev = { .events = watch_events(qp, cq),
				  .data.ptr = qp };
	epoll_ctl(cq->epfd, EPOLL_CTL_MOD, fd, &ev);
}

bool rpcrdma_iwarp_cq_active(struct iw_qp *qp, uint64_t now)
{
	/* A consumer armed and asleep on cq_fd wakes on this very socket
	 * (part of cq_fd) and takes the data itself; one that only polled
	 * lately may be busy elsewhere (spinning on memory an RDMA Write
	 * fills, say), so placement must not wait for it. */
	struct iw_cq *s = (struct iw_cq *)qp->base.send_cq;
	struct iw_cq *r = (struct iw_cq *)qp->base.recv_cq;
	bool armed = (s && atomic_load(&s->sleeping)) ||
		     (r && atomic_load(&r->sleeping));
	uint64_t a = s ? atomic_load(&s->last_active_ns) : 0;
	uint64_t b = r ? atomic_load(&r->last_active_ns) : 0;
	uint64_t last = a > b ? a : b;
	return armed && last && now - last < IW_ACTIVE_NS;
}
