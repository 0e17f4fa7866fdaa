/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Device, protection domains, the ops table and the progress thread.
 * The threading model is described at the top of iwarp.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "provider/iwarp/iwarp.h"

uint64_t rpcrdma_iwarp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rpcrdma_iwarp_wake(struct iw_dev *dev)
{
	uint64_t one = 1;
	ssize_t r = write(dev->wakefd, &one, sizeof(one));
	(void)r; /* a full counter still wakes the thread */
}

int rpcrdma_iwarp_ep_register(struct iw_ep *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };
	int op = ep->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(ep->dev->epfd, op, ep->fd, &ev) != 0)
		return RPCRDMA_ERR_SYSTEM;
	ep->registered = true;
	return 0;
}

void rpcrdma_iwarp_ep_unregister(struct iw_ep *ep)
{
	if (ep->registered && ep->fd >= 0)
		epoll_ctl(ep->dev->epfd, EPOLL_CTL_DEL, ep->fd, NULL);
	ep->registered = false;
}

void rpcrdma_iwarp_ep_timed(struct iw_ep *ep)
{
	/* The store of the timer (seq_cst) comes before this load: either
	 * on_timed is seen true and run_deferred, which clears it before
	 * its last look at the timer, sees the timer; or it is seen false
	 * and the endpoint is linked here. */
	if (atomic_load(&ep->on_timed))
		return;
	struct iw_dev *dev = ep->dev;
	pthread_mutex_lock(&dev->lock);
	/* Not once buried (pprev_all NULL): the grave frees it. */
	if (ep->pprev_all && !ep->pprev_timed) {
		ep->next_timed = dev->timed;
		if (dev->timed)
			dev->timed->pprev_timed = &ep->next_timed;
		ep->pprev_timed = &dev->timed;
		dev->timed = ep;
	}
	if (ep->pprev_timed)
		atomic_store(&ep->on_timed, true);
	pthread_mutex_unlock(&dev->lock);
}

void rpcrdma_iwarp_ep_untimed_locked(struct iw_ep *ep)
{
	if (!ep->pprev_timed)
		return;
	*ep->pprev_timed = ep->next_timed;
	if (ep->next_timed)
		ep->next_timed->pprev_timed = ep->pprev_timed;
	ep->pprev_timed = NULL;
	ep->next_timed = NULL;
	atomic_store(&ep->on_timed, false);
}

/* Runs the timers that are due (a deferred QP whose consumer did not
 * come back in time, an endpoint's deadline) and lowers *next to the
 * earliest of the others.  It walks the timed list, not every endpoint:
 * walking them all after each batch of events, with a lock taken for
 * each, cost a 4900-connection server O(N) per batch through a storm
 * (docs/SCALE.md, "Connection storms"). */
static void run_deferred(struct iw_dev *dev, uint64_t now, uint64_t *next)
{
	struct iw_ep *list[64];
	size_t n = 0;
	pthread_mutex_lock(&dev->lock);
	for (struct iw_ep *ep = dev->timed, *nx; ep; ep = nx) {
		nx = ep->next_timed;
		struct iw_qp *qp = &ep->qp;
		/* deferred is set only on this thread (qp_event,
		 * rpcrdma_iwarp_serial_event), so it cannot be set between
		 * this look and the unlink below. */
		pthread_mutex_lock(&qp->ep_lock);
		bool d = qp->deferred;
		uint64_t until = qp->defer_until;
		pthread_mutex_unlock(&qp->ep_lock);
		uint64_t dl = atomic_load(&ep->deadline_ns);
		if (!d && !dl) {
			/* A deadline may be set on another thread (connect):
			 * clear on_timed first, then look again (see
			 * rpcrdma_iwarp_ep_timed). */
			atomic_store(&ep->on_timed, false);
			dl = atomic_load(&ep->deadline_ns);
			if (!dl) {
				rpcrdma_iwarp_ep_untimed_locked(ep);
				continue;
			}
			atomic_store(&ep->on_timed, true);
		}
		if (d) {
			if (until <= now && n < 64)
				list[n++] = ep;
			else if (until < *next)
				*next = until;
		}
		if (dl) {
			if (dl <= now && n < 64)
				list[n++] = ep;
			else if (dl < *next)
				*next = dl;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	/* Endpoints are freed only by this thread, so the pointers stay
	 * valid after dropping dev->lock. */
	for (size_t i = 0; i < n; i++) {
		struct iw_ep *ep = list[i];
		struct iw_qp *qp = &ep->qp;
		pthread_mutex_lock(&qp->ep_lock);
		bool d = qp->deferred && qp->defer_until <= now;
		if (d)
			qp->deferred = false;
		pthread_mutex_unlock(&qp->ep_lock);
		if (d && qp->serial) {
			/* Its consumer was inside: try again, and again
			 * later if it still is. */
			uint64_t again =
				rpcrdma_iwarp_serial_event(qp, EPOLLIN | EPOLLOUT);
			if (again && again < *next)
				*next = again;
		} else if (d) {
			rpcrdma_iwarp_rx_progress(qp, true);
			pthread_mutex_lock(&qp->ep_lock);
			qp->in_armed = true;
			pthread_mutex_unlock(&qp->ep_lock);
			rpcrdma_iwarp_qp_update_arm(qp);
		}
		rpcrdma_iwarp_ep_timer(ep, now);
	}
}

/* Frees the buried eps no unacknowledged CM event names (all of them
 * when the device closes: force); the others stay for a later pass, which
 * the last acknowledgement wakes. */
static void free_grave(struct iw_dev *dev, bool force)
{
	pthread_mutex_lock(&dev->lock);
	struct iw_ep *g = dev->grave, *keep = NULL;
	dev->grave = NULL;
	pthread_mutex_unlock(&dev->lock);
	while (g) {
		struct iw_ep *next = g->next_grave;
		if (!force && atomic_load(&g->events_held)) {
			g->next_grave = keep;
			keep = g;
		} else {
			rpcrdma_iwarp_ep_free(g);
		}
		g = next;
	}
	if (!keep)
		return;
	pthread_mutex_lock(&dev->lock);
	struct iw_ep *t = keep;
	while (t->next_grave)
		t = t->next_grave;
	t->next_grave = dev->grave;
	dev->grave = keep;
	pthread_mutex_unlock(&dev->lock);
}

static void *progress_main(void *arg)
{
	struct iw_dev *dev = arg;
	struct epoll_event evs[64];
	uint64_t next = UINT64_MAX;
	while (!atomic_load(&dev->stop)) {
		free_grave(dev, false);
		int timeout = -1;
		uint64_t now = rpcrdma_iwarp_now_ns();
		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (int)((next - now) / 1000000 + 1);
		int n = rpcrdma_epoll_wait_nocancel(dev->epfd, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr) {
				uint64_t v;
				ssize_t r = read(dev->wakefd, &v, sizeof(v));
				(void)r;
				continue;
			}
			rpcrdma_iwarp_ep_event(evs[i].data.ptr, evs[i].events);
		}
		next = UINT64_MAX;
		run_deferred(dev, rpcrdma_iwarp_now_ns(), &next);
	}
	free_grave(dev, true);
	return NULL;
}

static int iw_open(const struct rpcrdma_dev_params *params,
		   struct rpcrdma_dev **out)
{
	if (!out)
		return RPCRDMA_ERR_INVAL;
	struct iw_dev *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return RPCRDMA_ERR_NOMEM;
	dev->base.ops = &rpcrdma_iwarp_ops;
	dev->connect_timeout_ms = 5000;
	if (params) {
		if (params->connect_timeout_ms)
			dev->connect_timeout_ms = params->connect_timeout_ms;
		dev->mpa_crc = params->mpa_crc || params->mpa_require_crc;
		dev->mpa_require_crc = params->mpa_require_crc;
		dev->max_fpdu = params->max_fpdu;
		dev->manual_progress = params->manual_progress;
	}
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->mem_lock, NULL);
	rpcrdma_iwarp_mem_init(dev);
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	dev->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dev->epfd < 0 || dev->wakefd < 0)
		goto fail;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->wakefd, &ev) != 0)
		goto fail;
	if (pthread_create(&dev->thread, NULL, progress_main, dev) != 0)
		goto fail;
	*out = &dev->base;
	return 0;
fail:
	if (dev->epfd >= 0)
		close(dev->epfd);
	if (dev->wakefd >= 0)
		close(dev->wakefd);
	rpcrdma_iwarp_mem_fini(dev);
	free(dev);
	return RPCRDMA_ERR_SYSTEM;
}

static void iw_close(struct rpcrdma_dev *d)
{
	if (!d)
		return;
	struct iw_dev *dev = iw_dev(d);
	atomic_store(&dev->stop, true);
	rpcrdma_iwarp_wake(dev);
	pthread_join(dev->thread, NULL);
	/* Endpoints the application did not destroy die with the device. */
	pthread_mutex_lock(&dev->lock);
	struct iw_ep *ep = dev->eps;
	dev->eps = NULL;
	pthread_mutex_unlock(&dev->lock);
	while (ep) {
		struct iw_ep *next = ep->next_all;
		rpcrdma_iwarp_ep_free(ep);
		ep = next;
	}
	close(dev->epfd);
	close(dev->wakefd);
	rpcrdma_iwarp_mem_fini(dev);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->mem_lock);
	free(dev);
}

static int iw_query(struct rpcrdma_dev *d, struct rpcrdma_dev_attr *attr)
{
	if (!d || !attr)
		return RPCRDMA_ERR_INVAL;
	memset(attr, 0, sizeof(*attr));
	strcpy(attr->name, "iwarp");
	attr->max_qp_wr = IW_MAX_WR;
	attr->max_sge = IW_MAX_SGE;
	/* Our Read Responses are placed through the Read's own SGE list. */
	attr->max_sge_rd = IW_MAX_SGE;
	attr->max_cqe = IW_MAX_CQE;
	attr->max_mr_size = UINT64_MAX >> 1;
	attr->max_msg_size = IW_MAX_MSG;
	attr->max_qp_rd_atom = IW_MAX_RD;
	attr->max_qp_init_rd_atom = IW_MAX_RD;
	/* 256 bytes of MPA private data minus the RFC 6581 IRD/ORD block. */
	attr->max_private_data = RPCRDMA_IWARP_MPA_MAX_PD - RPCRDMA_IWARP_MPA_IRDORD_LEN;
	attr->caps = RPCRDMA_DEV_CAP_MW | RPCRDMA_DEV_CAP_SEND_WITH_INV |
		     RPCRDMA_DEV_CAP_TERMINATE_INFO | RPCRDMA_DEV_CAP_LOCAL_INV |
		     RPCRDMA_DEV_CAP_RECV_INV | RPCRDMA_DEV_CAP_IWARP |
		     RPCRDMA_DEV_CAP_REG_VIRTUAL | RPCRDMA_DEV_CAP_SRQ;
	attr->max_srq = IW_MAX_SRQ;
	attr->max_srq_wr = IW_MAX_SRQ_WR;
	attr->max_srq_sge = IW_MAX_SGE;
	snprintf(attr->caps_why, sizeof(attr->caps_why),
		 "userspace soft-iWARP: windows, Send With Invalidate and "
		 "Local Invalidate (RFC 5040 §1.2, §5.3)");
	return 0;
}

static int iw_alloc_pd(struct rpcrdma_dev *d, struct rpcrdma_pd **out)
{
	if (!d || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_pd *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return RPCRDMA_ERR_NOMEM;
	pd->base.dev = d;
	*out = &pd->base;
	return 0;
}

static int iw_dealloc_pd(struct rpcrdma_pd *pd)
{
	if (!pd)
		return RPCRDMA_ERR_INVAL;
	free(pd);
	return 0;
}

const struct rpcrdma_provider_ops rpcrdma_iwarp_ops = {
	.name = "iwarp",
	.open = iw_open,
	.close = iw_close,
	.query = iw_query,
	.alloc_pd = iw_alloc_pd,
	.dealloc_pd = iw_dealloc_pd,
	.reg_mr = rpcrdma_iwarp_reg_mr,
	.dereg_mr = rpcrdma_iwarp_dereg_mr,
	.alloc_mw = rpcrdma_iwarp_alloc_mw,
	.dealloc_mw = rpcrdma_iwarp_dealloc_mw,
	.create_cq = rpcrdma_iwarp_create_cq,
	.destroy_cq = rpcrdma_iwarp_destroy_cq,
	.poll_cq = rpcrdma_iwarp_poll_cq,
	.req_notify_cq = rpcrdma_iwarp_req_notify_cq,
	.cq_fd = rpcrdma_iwarp_cq_fd,
	.ack_cq_events = rpcrdma_iwarp_ack_cq_events,
	.create_qp = rpcrdma_iwarp_create_qp,
	.destroy_qp = rpcrdma_iwarp_destroy_qp,
	.post_send = rpcrdma_iwarp_post_send,
	.post_recv = rpcrdma_iwarp_post_recv,
	.get_terminate = rpcrdma_iwarp_get_terminate,
	.create_channel = rpcrdma_iwarp_create_channel,
	.destroy_channel = rpcrdma_iwarp_destroy_channel,
	.get_cm_event = rpcrdma_iwarp_get_cm_event,
	.ack_cm_event = rpcrdma_iwarp_ack_cm_event,
	.create_id = rpcrdma_iwarp_create_id,
	.destroy_id = rpcrdma_iwarp_destroy_id,
	.resolve = rpcrdma_iwarp_resolve,
	.listen = rpcrdma_iwarp_listen,
	.connect = rpcrdma_iwarp_connect,
	.accept = rpcrdma_iwarp_accept,
	.reject = rpcrdma_iwarp_reject,
	.disconnect = rpcrdma_iwarp_disconnect,
	.qp_counters = rpcrdma_iwarp_qp_counters,
	.create_srq = rpcrdma_iwarp_create_srq,
	.destroy_srq = rpcrdma_iwarp_destroy_srq,
	.post_srq_recv = rpcrdma_iwarp_post_srq_recv,
	.modify_srq = rpcrdma_iwarp_modify_srq,
	.query_srq = rpcrdma_iwarp_query_srq,
};
