/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Shared receive queues over ibv_srq (provider.h, "Shared receive queue").
 *
 * Receives: each posted receive takes a slot of the SRQ's shadow table,
 * whose index goes in the wr_id the device sees (verbs_int.h), so its
 * completion -- on whichever QP of the SRQ, in whatever order -- gives
 * back the consumer's wr_id and frees the slot; the QP is found by the
 * completion's qp_num.
 *
 * The limit event (IBV_EVENT_SRQ_LIMIT_REACHED) is an asynchronous event
 * of the device context, read when query_srq asks (verbs_async.c) and
 * handed to the SRQ it names -- found in the process's list of our SRQs,
 * since another device of ours on the same context may own it.  The SRQ's
 * fd is an epoll set of its own eventfd, written when an event is handed
 * to it, and of the context's async fd, so a consumer asleep on it wakes
 * for its event whoever reads the context's queue first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "provider/verbs/verbs_int.h"

/* WRs handed to one ibv_post_srq_recv call. */
#define POST_BATCH 16

/* Every SRQ of this provider in the process, for the async events. */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpcrdma_verbs_srq *all_srqs;

/* Marks the limit event on srq; its lock held. */
static void limit_reached(struct rpcrdma_verbs_srq *s)
{
	s->limit = 0; /* the device disarmed it (ibv_modify_srq(3)) */
	if (!s->event) {
		uint64_t one = 1;
		ssize_t r = write(s->efd, &one, sizeof(one));
		(void)r;
	}
	s->event = true;
}

void rpcrdma_verbs_srq_limit_event(struct ibv_srq *srq)
{
	/* Ours only (another user of the context may own it). */
	pthread_mutex_lock(&all_lock);
	for (struct rpcrdma_verbs_srq *s = all_srqs; s; s = s->next_all)
		if (s->srq == srq) {
			pthread_mutex_lock(&s->lock);
			limit_reached(s);
			pthread_mutex_unlock(&s->lock);
			break;
		}
	pthread_mutex_unlock(&all_lock);
}

static void srq_free(struct rpcrdma_verbs_srq *s)
{
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->efd >= 0)
		close(s->efd);
	pthread_mutex_destroy(&s->lock);
	free(s->slot);
	free(s);
}

int rpcrdma_verbs_create_srq(struct rpcrdma_pd *pd,
			     const struct rpcrdma_srq_attr *attr,
			     struct rpcrdma_srq **out)
{
	struct rpcrdma_verbs_pd *p = (struct rpcrdma_verbs_pd *)pd;

	if (!p || !attr || !out)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(pd->dev);
	if (!(d->caps & RPCRDMA_DEV_CAP_SRQ))
		return RPCRDMA_ERR_NOTSUP;
	uint32_t max_wr = attr->max_wr ? attr->max_wr : 128;
	uint32_t max_sge = attr->max_sge ? attr->max_sge : 1;
	if (max_wr > (uint32_t)d->attr.max_srq_wr ||
	    max_sge > (uint32_t)d->attr.max_srq_sge || attr->limit > max_wr)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_srq *s = calloc(1, sizeof(*s));
	if (!s)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u32 = 0 };
	struct epoll_event e2 = { .events = EPOLLIN, .data.u32 = 1 };
	if (s->efd < 0 || s->epfd < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->efd, &e1) < 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, d->ctx->async_fd, &e2) < 0) {
		srq_free(s);
		return RPCRDMA_ERR_SYSTEM;
	}
	struct ibv_srq_init_attr ia = {
		.srq_context = s,
		.attr = { .max_wr = max_wr, .max_sge = max_sge,
			  .srq_limit = attr->limit },
	};
	s->srq = ibv_create_srq(p->pd, &ia);
	if (!s->srq) {
		int e = errno;
		srq_free(s);
		return rpcrdma_verbs_errno(e ? e : ENOMEM);
	}
	/* The device may round the sizes up; the slots hold what it
	 * reports, and posting refuses more. */
	s->nslots = ia.attr.max_wr > max_wr ? ia.attr.max_wr : max_wr;
	s->slot = calloc(s->nslots, sizeof(*s->slot));
	if (!s->slot) {
		ibv_destroy_srq(s->srq);
		srq_free(s);
		return RPCRDMA_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < s->nslots; i++)
		s->slot[i].next_free = i + 1;
	s->free_head = 0;
	s->limit = attr->limit;
	s->base.dev = pd->dev;
	s->base.pd = pd;
	s->base.context = attr->context;
	s->base.max_wr = s->nslots;
	s->base.max_sge = ia.attr.max_sge > max_sge ? ia.attr.max_sge : max_sge;
	s->base.fd = s->epfd;

	pthread_mutex_lock(&d->lock);
	s->uid = RPCRDMA_VERBS_UID_SRQ | d->next_srq_uid++;
	if (d->next_srq_uid >= RPCRDMA_VERBS_UID_SRQ)
		d->next_srq_uid = 0;
	s->next = d->srqs;
	d->srqs = s;
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&all_lock);
	s->next_all = all_srqs;
	all_srqs = s;
	pthread_mutex_unlock(&all_lock);
	*out = &s->base;
	return 0;
}

int rpcrdma_verbs_destroy_srq(struct rpcrdma_srq *srq)
{
	struct rpcrdma_verbs_srq *s = (struct rpcrdma_verbs_srq *)srq;

	if (!s)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(srq->dev);
	/* EBUSY while a QP uses it (provider.h); returns once every
	 * async event read for it was acked (verbs_async.c acks). */
	int rc = ibv_destroy_srq(s->srq);
	if (rc)
		return rpcrdma_verbs_errno(rc < 0 ? -rc : rc);
	/* Its receives' completions left in a CQ are dropped from now on
	 * (rpcrdma_verbs_srq_complete no longer finds it). */
	pthread_mutex_lock(&d->lock);
	for (struct rpcrdma_verbs_srq **pp = &d->srqs; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&all_lock);
	for (struct rpcrdma_verbs_srq **pp = &all_srqs; *pp;
	     pp = &(*pp)->next_all)
		if (*pp == s) {
			*pp = s->next_all;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	srq_free(s);
	return 0;
}

/* Gives back the slots [first .. ] of a batch the device refused. */
static void slots_release(struct rpcrdma_verbs_srq *s, const struct ibv_recv_wr *iw,
			  int from, int n)
{
	for (int i = n - 1; i >= from; i--) {
		uint32_t k = (uint32_t)iw[i].wr_id & ~RPCRDMA_VERBS_SLOT_RECV;
		s->slot[k].used = false;
		s->slot[k].next_free = s->free_head;
		s->free_head = k;
		s->posted--;
	}
}

int rpcrdma_verbs_post_srq_recv(struct rpcrdma_srq *srq,
				struct rpcrdma_recv_wr *wr,
				struct rpcrdma_recv_wr **bad)
{
	struct rpcrdma_verbs_srq *s = (struct rpcrdma_verbs_srq *)srq;
	struct ibv_recv_wr iw[POST_BATCH];
	struct rpcrdma_recv_wr *mine[POST_BATCH];
	struct ibv_sge empty_sge = { 0, 0, 0 };

	if (bad)
		*bad = NULL;
	if (!s)
		return RPCRDMA_ERR_INVAL;
	const struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(srq->dev);
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	while (wr && !rc) {
		int n = 0;
		for (; wr && n < POST_BATCH; wr = wr->next) {
			if (wr->num_sge < 0 ||
			    (uint32_t)wr->num_sge > s->base.max_sge ||
			    (wr->num_sge && !wr->sg_list)) {
				rc = RPCRDMA_ERR_INVAL;
				break;
			}
			if (s->free_head >= s->nslots) {
				rc = RPCRDMA_ERR_NOMEM;
				break;
			}
			uint32_t k = s->free_head;
			s->free_head = s->slot[k].next_free;
			s->slot[k].used = true;
			s->slot[k].wr_id = wr->wr_id;
			s->posted++;
			rpcrdma_verbs_recv_wr(d, wr,
					      (uint64_t)s->uid << 32 |
						      RPCRDMA_VERBS_SLOT_RECV | k,
					      &empty_sge, &iw[n]);
			if (n)
				iw[n - 1].next = &iw[n];
			mine[n++] = wr;
		}
		if (!n)
			break;
		struct ibv_recv_wr *ibad = NULL;
		int e = ibv_post_srq_recv(s->srq, iw, &ibad);
		if (e < 0) /* libsiw returns -errno (siw.c:711-748) */
			e = -e;
		if (e) {
			int k = ibad ? (int)(ibad - iw) : 0;
			slots_release(s, iw, k, n);
			wr = mine[k];
			rc = rpcrdma_verbs_errno(e);
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (rc && bad)
		*bad = wr;
	return rc;
}

bool rpcrdma_verbs_srq_complete(struct rpcrdma_verbs_dev *d, uint32_t uid,
				uint32_t k, uint64_t *wr_id)
{
	struct rpcrdma_verbs_srq *s = d->srqs;

	while (s && s->uid != uid)
		s = s->next;
	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	bool ok = k < s->nslots && s->slot[k].used;
	if (ok) {
		*wr_id = s->slot[k].wr_id;
		s->slot[k].used = false;
		s->slot[k].next_free = s->free_head;
		s->free_head = k;
		s->posted--;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

int rpcrdma_verbs_modify_srq(struct rpcrdma_srq *srq, uint32_t limit)
{
	struct rpcrdma_verbs_srq *s = (struct rpcrdma_verbs_srq *)srq;

	if (!s)
		return RPCRDMA_ERR_INVAL;
	if (limit > s->nslots)
		return RPCRDMA_ERR_INVAL;
	struct ibv_srq_attr a = { .srq_limit = limit };
	pthread_mutex_lock(&s->lock);
	int rc = ibv_modify_srq(s->srq, &a, IBV_SRQ_LIMIT);
	if (rc < 0)
		rc = -rc;
	if (!rc)
		s->limit = limit;
	pthread_mutex_unlock(&s->lock);
	return rc ? rpcrdma_verbs_errno(rc) : 0;
}

int rpcrdma_verbs_query_srq(struct rpcrdma_srq *srq, struct rpcrdma_srq_state *out)
{
	struct rpcrdma_verbs_srq *s = (struct rpcrdma_verbs_srq *)srq;

	if (!s || !out)
		return RPCRDMA_ERR_INVAL;
	rpcrdma_verbs_async_drain(rpcrdma_verbs_dev(srq->dev));
	pthread_mutex_lock(&s->lock);
	out->posted = s->posted;
	out->limit = s->limit;
	out->limit_reached = s->event;
	if (s->event) {
		uint64_t v;
		ssize_t r = read(s->efd, &v, sizeof(v));
		(void)r;
		s->event = false;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}
