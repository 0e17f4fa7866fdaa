/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Completion queues: an ibv_cq with its own completion channel, whose fd is
 * the pollable fd of provider.h (arm with req_notify, drain, ack). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "provider/verbs/verbs_int.h"

/* How many ibv_wc one ibv_poll_cq call fills; on the stack. */
#define POLL_BATCH 16

/* Every CQ of this provider in the process: an async event names an
 * ibv_cq, which may be another user's on a shared context. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpcrdma_verbs_cq *all_cqs;

void rpcrdma_verbs_cq_error_event(struct ibv_cq *cq)
{
	pthread_mutex_lock(&all_lock);
	for (struct rpcrdma_verbs_cq *c = all_cqs; c; c = c->next_all)
		if (c->cq == cq) {
			atomic_store(&c->lost, true);
			break;
		}
	pthread_mutex_unlock(&all_lock);
}

int rpcrdma_verbs_create_cq(struct rpcrdma_dev *dev, int cqe, void *context,
			    struct rpcrdma_cq **out)
{
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(dev);

	if (!out || cqe <= 0)
		return RPCRDMA_ERR_INVAL;
	/* Size from the device's limits rather than failing. */
	if (d->attr.max_cqe > 0 && cqe > d->attr.max_cqe)
		cqe = d->attr.max_cqe;
	struct rpcrdma_verbs_cq *c = calloc(1, sizeof(*c));
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	int e;
	c->channel = ibv_create_comp_channel(d->ctx);
	if (!c->channel) {
		e = errno;
		goto fail;
	}
	/* Non-blocking so ack_cq_events can drain without sleeping. */
	int fl = fcntl(c->channel->fd, F_GETFL);
	if (fl < 0 || fcntl(c->channel->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		e = errno;
		goto fail;
	}
	c->cq = ibv_create_cq(d->ctx, cqe, c, c->channel, 0);
	if (!c->cq) {
		e = errno;
		goto fail;
	}
	c->base.dev = dev;
	c->base.context = context;
	c->base.cqe = c->cq->cqe;
	pthread_mutex_lock(&all_lock);
	c->next_all = all_cqs;
	all_cqs = c;
	pthread_mutex_unlock(&all_lock);
	*out = &c->base;
	return 0;
fail:
	if (c->channel)
		ibv_destroy_comp_channel(c->channel);
	free(c);
	return rpcrdma_verbs_errno(e ? e : ENOMEM);
}

/* One event, not all: an arm gives at most one, and the consumer arms
 * once before each sleep, so the channel rarely holds a second.  Reading
 * on until EAGAIN cost a failed read(2) on every wake-up (on rxe and siw
 * a system call each, two per round trip of a libtirpc program).  When a
 * second is there after all (armed again before the first was read, by
 * a spin that found the completion), the fd stays readable and the
 * consumer is woken at once to read it: a pass more, rarely. */
static unsigned read_events(struct rpcrdma_verbs_cq *c, bool all)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	unsigned n = 0;

	while (ibv_get_cq_event(c->channel, &ev_cq, &ev_ctx) == 0) {
		n++;
		if (!all)
			break;
	}
	/* Acknowledge at once: ibv_destroy_cq waits for every event read
	 * from the channel to have been acknowledged. */
	if (n)
		ibv_ack_cq_events(c->cq, n);
	return n;
}

int rpcrdma_verbs_ack_cq_events(struct rpcrdma_cq *cq)
{
	struct rpcrdma_verbs_cq *c = (struct rpcrdma_verbs_cq *)cq;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	read_events(c, false);
	return 0;
}

int rpcrdma_verbs_destroy_cq(struct rpcrdma_cq *cq)
{
	struct rpcrdma_verbs_cq *c = (struct rpcrdma_verbs_cq *)cq;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	read_events(c, true);
	/* Out of the list first: ibv_destroy_cq waits for the async events
	 * naming it to be acked, and the reader acks only after looking the
	 * CQ up under all_lock. */
	pthread_mutex_lock(&all_lock);
	for (struct rpcrdma_verbs_cq **pp = &all_cqs; *pp; pp = &(*pp)->next_all)
		if (*pp == c) {
			*pp = c->next_all;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	int rc = ibv_destroy_cq(c->cq);
	if (rc) {
		pthread_mutex_lock(&all_lock);
		c->next_all = all_cqs;
		all_cqs = c;
		pthread_mutex_unlock(&all_lock);
		return rpcrdma_verbs_errno(rc);
	}
	rc = ibv_destroy_comp_channel(c->channel);
	free(c);
	return rc ? rpcrdma_verbs_errno(rc) : 0;
}

int rpcrdma_verbs_req_notify_cq(struct rpcrdma_cq *cq)
{
	struct rpcrdma_verbs_cq *c = (struct rpcrdma_verbs_cq *)cq;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	/* Every completion, not only solicited ones: the consumer decides.
	 * Whether one came before the arm, verbs does not say: poll. */
	int rc = ibv_req_notify_cq(c->cq, 0);
	return rc ? rpcrdma_verbs_errno(rc) : 1;
}

int rpcrdma_verbs_cq_fd(struct rpcrdma_cq *cq)
{
	struct rpcrdma_verbs_cq *c = (struct rpcrdma_verbs_cq *)cq;

	return c ? c->channel->fd : RPCRDMA_ERR_INVAL;
}

static enum rpcrdma_wc_status wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return RPCRDMA_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR: return RPCRDMA_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR: return RPCRDMA_WC_LOC_PROT_ERR;
	/* Local access error is the same fault seen on a different path
	 * (IBA 10.10.2): a local key or buffer the WR may not use. */
	case IBV_WC_LOC_ACCESS_ERR: return RPCRDMA_WC_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR: return RPCRDMA_WC_WR_FLUSH_ERR;
	case IBV_WC_MW_BIND_ERR: return RPCRDMA_WC_MW_BIND_ERR;
	case IBV_WC_REM_ACCESS_ERR: return RPCRDMA_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR: return RPCRDMA_WC_REM_OP_ERR;
	case IBV_WC_REM_INV_REQ_ERR: return RPCRDMA_WC_REM_INV_REQ_ERR;
	case IBV_WC_REM_INV_RD_REQ_ERR: return RPCRDMA_WC_REM_INV_REQ_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR: return RPCRDMA_WC_RNR_RETRY_EXC_ERR;
	case IBV_WC_RETRY_EXC_ERR: return RPCRDMA_WC_RETRY_EXC_ERR;
	case IBV_WC_FATAL_ERR: return RPCRDMA_WC_FATAL_ERR;
	default: return RPCRDMA_WC_GENERAL_ERR;
	}
}

/* The fields of *out every completion has, from *in: status, length,
 * a received invalidation, and the QP (which may be NULL: an SRQ's
 * receive whose QP is gone), marked in error by an error completion. */
static void translate_common(struct rpcrdma_verbs_dev *d, const struct ibv_wc *in,
			     bool recv, struct rpcrdma_verbs_qp *q,
			     struct rpcrdma_wc *out)
{
	out->status = wc_status(in->status);
	out->byte_len = in->status == IBV_WC_SUCCESS ? in->byte_len : 0;
	out->wc_flags = 0;
	out->invalidated_rkey = 0;
	if (in->status == IBV_WC_SUCCESS && recv &&
	    ((in->wc_flags & IBV_WC_WITH_INV) ||
	     (d->rxe_inv_quirk && (in->wc_flags & IBV_WC_IP_CSUM_OK) &&
	      in->invalidated_rkey))) {
		out->wc_flags |= RPCRDMA_WC_WITH_INV;
		out->invalidated_rkey = in->invalidated_rkey;
	}
	out->qp = q ? &q->base : NULL;
	out->vendor_err = in->vendor_err;
	/* An RC QP that completes a WR in error is in the error state. */
	if (q && in->status != IBV_WC_SUCCESS &&
	    !atomic_load_explicit(&q->flushing, memory_order_relaxed))
		atomic_store(&q->flushing, true);
}

/* Fills *out from *in; false when the completion belongs to a QP that no
 * longer exists (verbs leaves such completions in the CQ) or to a WR that
 * already completed.  A shared receive queue's receive is never dropped
 * for its QP: it comes with wc.qp NULL when that QP is gone (provider.h). */
static bool translate(struct rpcrdma_verbs_dev *d, const struct ibv_wc *in,
		      struct rpcrdma_wc *out)
{
	uint32_t uid = (uint32_t)(in->wr_id >> 32);
	uint32_t seq = (uint32_t)in->wr_id;

	if (uid & RPCRDMA_VERBS_UID_SRQ) {
		if (!rpcrdma_verbs_srq_complete(d, uid,
						seq & ~RPCRDMA_VERBS_SLOT_RECV,
						&out->wr_id))
			return false;
		out->opcode = RPCRDMA_WC_RECV;
		translate_common(d, in, true,
				 rpcrdma_verbs_qp_lookup(d, in->qp_num, 0), out);
		return true;
	}
	struct rpcrdma_verbs_qp *q = rpcrdma_verbs_qp_lookup(d, in->qp_num, uid);

	if (!q)
		return false;
	bool recv = seq & RPCRDMA_VERBS_SLOT_RECV;
	seq &= ~RPCRDMA_VERBS_SLOT_RECV;
	struct rpcrdma_verbs_ring *r = recv ? &q->rq : &q->sq;
	struct rpcrdma_verbs_slot *s = &r->slot[seq & r->mask];
	/* siw completes a Read that was taken off the send queue but not
	 * yet sent twice when the stream fails: from the ORQ and as the
	 * WQE in progress (siw_activate_tx() queues it in the ORQ,
	 * siw_qp.c:892, 943-952; siw_sq_flush() completes both,
	 * siw_qp.c:1197-1225).  A WR completes once: drop the second. */
	if (s->done)
		return false;
	s->done = true;

	out->wr_id = s->wr_id;
	out->opcode = recv ? RPCRDMA_WC_RECV : s->opcode;
	translate_common(d, in, recv, q, out);
	/* This slot and every earlier (unsignalled) one are done; never
	 * back: on siw an older Read may complete after newer WRs. */
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint32_t next = (seq + 1) & ~RPCRDMA_VERBS_SLOT_RECV;
	if (((next - tail) & ~RPCRDMA_VERBS_SLOT_RECV) <=
	    ((head - tail) & ~RPCRDMA_VERBS_SLOT_RECV))
		atomic_store_explicit(&r->tail, next, memory_order_release);
	return true;
}

int rpcrdma_verbs_poll_cq(struct rpcrdma_cq *cq, int n, struct rpcrdma_wc *wc)
{
	struct rpcrdma_verbs_cq *c = (struct rpcrdma_verbs_cq *)cq;
	struct rpcrdma_verbs_dev *d;
	struct ibv_wc iwc[POLL_BATCH];
	int got = 0;

	if (!c || n < 0 || (n && !wc))
		return RPCRDMA_ERR_INVAL;
	d = rpcrdma_verbs_dev(cq->dev);
	while (got < n) {
		int want = n - got < POLL_BATCH ? n - got : POLL_BATCH;
		int r = ibv_poll_cq(c->cq, want, iwc);
		if (r < 0)
			return got ? got : RPCRDMA_ERR_SYSTEM;
		if (r == 0) {
			/* Empty.  A CQ that was full at some moment had all
			 * its entries polled since it was last seen empty:
			 * only then can the device have lost one (half, as
			 * several pollers count concurrently).  Reading the
			 * events costs a system call, so not otherwise. */
			unsigned run = atomic_load_explicit(&c->run,
							    memory_order_relaxed);
			if (run)  /* no atomic write for an idle CQ's polls */
				run = atomic_exchange(&c->run, 0);
			if (run && 2 * (uint64_t)run >= (uint64_t)c->cq->cqe)
				rpcrdma_verbs_async_drain(d);
			break;
		}
		atomic_fetch_add_explicit(&c->run, (unsigned)r,
					  memory_order_relaxed);
		/* The lock keeps a concurrently destroyed QP (shared CQ)
		 * alive while its shadow ring is read. */
		pthread_mutex_lock(&d->lock);
		for (int i = 0; i < r; i++)
			if (translate(d, &iwc[i], &wc[got]))
				got++;
		pthread_mutex_unlock(&d->lock);
		if (r < want)
			break;
	}
	/* Drained, and one was lost (provider.h): the consumer disconnects
	 * its QPs instead of waiting for a completion that will not come. */
	if (!got && atomic_load(&c->lost))
		return RPCRDMA_ERR_OVERFLOW;
	return got;
}
