/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Shared receive queues (provider.h, "Shared receive queue").
 *
 * A ring of posted receives under srq->lock.  A QP created on the SRQ has
 * no receive ring of its own; its RX engine takes the oldest receive when
 * an untagged Send message starts (iwarp_qp_rx.c start_segment, RFC 5041
 * §5.3: a Send's buffer is chosen by its first DDP segment, and none left
 * is a Terminate, §7.2), under the QP's rx_lock.  Several QPs on the SRQ
 * may be progressed by different threads at once; the SRQ's lock is the
 * only one they share, taken for the pop alone (lock order in iwarp.h:
 * qp->rx_lock -> srq->lock).  Everything after the pop -- validating the
 * SGEs (against the SRQ's PD), placing the payload straight from the
 * socket, completing -- runs under the QP's own locks as for a receive of
 * its own queue, so one QP's large message never holds up another's.
 *
 * The limit event: a flag and an eventfd (the SRQ's fd), set when a pop
 * leaves fewer receives than the armed limit, cleared by query_srq.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "provider/iwarp/iwarp.h"

int rpcrdma_iwarp_create_srq(struct rpcrdma_pd *pd,
			     const struct rpcrdma_srq_attr *attr,
			     struct rpcrdma_srq **out)
{
	if (!pd || !attr || !out || attr->max_wr > IW_MAX_SRQ_WR ||
	    attr->max_sge > IW_MAX_SGE)
		return RPCRDMA_ERR_INVAL;
	uint32_t cap = attr->max_wr ? attr->max_wr : IW_DEFAULT_WR;
	uint32_t sge = attr->max_sge ? attr->max_sge : 1;
	if (attr->limit > cap)
		return RPCRDMA_ERR_INVAL;
	struct iw_srq *srq = calloc(1, sizeof(*srq));
	if (!srq)
		return RPCRDMA_ERR_NOMEM;
	srq->q = calloc(cap, sizeof(*srq->q));
	srq->sges = calloc((size_t)cap * sge, sizeof(*srq->sges));
	srq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!srq->q || !srq->sges || srq->efd < 0) {
		int rc = srq->efd < 0 && srq->q && srq->sges ? RPCRDMA_ERR_SYSTEM
							     : RPCRDMA_ERR_NOMEM;
		if (srq->efd >= 0)
			close(srq->efd);
		free(srq->q);
		free(srq->sges);
		free(srq);
		return rc;
	}
	pthread_mutex_init(&srq->lock, NULL);
	srq->cap = cap;
	srq->limit = attr->limit;
	srq->base.dev = pd->dev;
	srq->base.pd = pd;
	srq->base.context = attr->context;
	srq->base.max_wr = cap;
	srq->base.max_sge = sge;
	srq->base.fd = srq->efd;
	*out = &srq->base;
	return 0;
}

int rpcrdma_iwarp_destroy_srq(struct rpcrdma_srq *b)
{
	if (!b)
		return RPCRDMA_ERR_INVAL;
	struct iw_srq *srq = (struct iw_srq *)b;
	pthread_mutex_lock(&srq->lock);
	uint32_t n = srq->nqps;
	pthread_mutex_unlock(&srq->lock);
	if (n)
		return RPCRDMA_ERR_BUSY; /* verbs: EBUSY while QPs use it */
	close(srq->efd);
	pthread_mutex_destroy(&srq->lock);
	free(srq->q);
	free(srq->sges);
	free(srq);
	return 0;
}

void rpcrdma_iwarp_srq_attach(struct iw_srq *srq, bool on)
{
	pthread_mutex_lock(&srq->lock);
	if (on)
		srq->nqps++;
	else
		srq->nqps--;
	pthread_mutex_unlock(&srq->lock);
}

int rpcrdma_iwarp_post_srq_recv(struct rpcrdma_srq *b, struct rpcrdma_recv_wr *wr,
				struct rpcrdma_recv_wr **bad)
{
	if (!b || !wr)
		return RPCRDMA_ERR_INVAL;
	struct iw_srq *srq = (struct iw_srq *)b;
	uint32_t msge = srq->base.max_sge;
	int rc = 0;
	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > msge ||
		    (wr->num_sge && !wr->sg_list)) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		if (srq->count == srq->cap) {
			rc = RPCRDMA_ERR_NOMEM;
			break;
		}
		uint32_t i = (srq->head + srq->count) % srq->cap;
		srq->q[i].wr_id = wr->wr_id;
		srq->q[i].num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(srq->sges + (size_t)i * msge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(*wr->sg_list));
		srq->count++;
		atomic_fetch_add(&srq->posted, 1);
	}
	pthread_mutex_unlock(&srq->lock);
	if (rc && bad)
		*bad = wr;
	return rc;
}

bool rpcrdma_iwarp_srq_take(struct iw_srq *srq, struct iw_rwqe *out)
{
	pthread_mutex_lock(&srq->lock);
	bool have = srq->count > 0;
	if (have) {
		const struct iw_srqe *e = &srq->q[srq->head];
		out->wr_id = e->wr_id;
		out->num_sge = e->num_sge;
		memcpy(out->sge, srq->sges + (size_t)srq->head * srq->base.max_sge,
		       (size_t)e->num_sge * sizeof(out->sge[0]));
		srq->head = (srq->head + 1) % srq->cap;
		srq->count--;
		/* The low watermark: fewer than the limit remain. */
		if (srq->limit && srq->count < srq->limit) {
			srq->limit = 0;
			if (!srq->event) {
				uint64_t one = 1;
				ssize_t r = write(srq->efd, &one, sizeof(one));
				(void)r;
			}
			srq->event = true;
		}
	}
	pthread_mutex_unlock(&srq->lock);
	return have;
}

int rpcrdma_iwarp_modify_srq(struct rpcrdma_srq *b, uint32_t limit)
{
	if (!b)
		return RPCRDMA_ERR_INVAL;
	struct iw_srq *srq = (struct iw_srq *)b;
	if (limit > srq->cap)
		return RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&srq->lock);
	srq->limit = limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int rpcrdma_iwarp_query_srq(struct rpcrdma_srq *b, struct rpcrdma_srq_state *out)
{
	if (!b || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_srq *srq = (struct iw_srq *)b;
	pthread_mutex_lock(&srq->lock);
	out->posted = atomic_load(&srq->posted);
	out->limit = srq->limit;
	out->limit_reached = srq->event;
	if (srq->event) {
		uint64_t v;
		ssize_t r = read(srq->efd, &v, sizeof(v));
		(void)r;
		srq->event = false;
	}
	pthread_mutex_unlock(&srq->lock);
	return 0;
}
