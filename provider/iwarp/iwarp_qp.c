/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Queue pair life cycle: creation, the receive queue (its own, or a shared
 * one: iwarp_srq.c), moving to RTS after the MPA handshake, and the error
 * path (Terminate, flush, DISCONNECTED).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/pages.h"
#include "provider/iwarp/iwarp.h"

void rpcrdma_iwarp_complete(struct iw_qp *qp, bool send_side, uint64_t wr_id,
			    enum rpcrdma_wc_opcode op,
			    enum rpcrdma_wc_status st, uint32_t byte_len,
			    unsigned flags, uint32_t inv_rkey, uint32_t vendor)
{
	struct rpcrdma_wc wc = {
		.wr_id = wr_id,
		.status = st,
		.opcode = op,
		.byte_len = byte_len,
		.wc_flags = flags,
		.invalidated_rkey = inv_rkey,
		.qp = &qp->base,
		.vendor_err = vendor,
	};
	struct rpcrdma_cq *cq = send_side ? qp->base.send_cq : qp->base.recv_cq;
	/* Every receive completion of such a QP is one of its SRQ's.  The
	 * count comes down before the completion is visible: a consumer that
	 * polls it on another thread and then queries the SRQ must not see
	 * the receive still counted as posted. */
	if (!send_side && qp->srq)
		atomic_fetch_sub(&qp->srq->posted, 1);
	rpcrdma_iwarp_cq_push((struct iw_cq *)cq, &wc);
}

/* The queues of a QP with sq send WRs of ssge SGEs and inl inline bytes
 * and rq receive WRs, in one block of pages (it lives as long as its
 * connection: given back when it goes, common/pages.h), in the order
 * create_qp and queues_free name them. */
#define QP_PARTS 10
#define QP_ON_PAGE (1u << 8)
static void queues_len(size_t *len, uint32_t sq, uint32_t ssge, uint32_t inl,
		       uint32_t rq, uint32_t rsge)
{
	const struct iw_qp *qp = NULL; /* for sizeof only */
	/* The entries every connection uses first (queues start again at
	 * the front when they empty): the receive ring and its gather
	 * lists, the history of sent messages (a ring of 1.5 KiB, every
	 * entry of which a connection writes in time), then the send queue
	 * with its short gather lists in its entries, in the first page;
	 * the long gather lists, the ORQ and IRQ, which only RDMA Reads
	 * use, then the TX batch's large arrays (struct iw_tx), from a page
	 * of their own, which only a QP that sends several messages at once
	 * touches. */
	len[0] = (size_t)rq * sizeof(*qp->rq);
	len[1] = (size_t)rq * rsge * sizeof(*qp->rq_sge);
	len[2] = IW_HIST * sizeof(*qp->hist);
	len[3] = (size_t)sq * sizeof(*qp->sq);
	len[4] = ssge > IW_SWQE_SGE ? (size_t)sq * ssge * sizeof(*qp->sq_sge)
				    : 0;
	len[5] = (size_t)sq * inl;
	len[6] = IW_MAX_RD * sizeof(*qp->orq);
	len[7] = IW_MAX_RD * sizeof(*qp->irq);
	len[8] = IW_TX_FPDUS * sizeof(*qp->tx.f);
	len[9] = IW_TX_IOV * sizeof(*qp->tx.iov);
}

static void queues_free(struct iw_qp *qp, uint32_t sq, uint32_t ssge,
			uint32_t inl, uint32_t rq, uint32_t rsge)
{
	size_t len[QP_PARTS];
	void *const p[QP_PARTS] = {
		qp->rq, qp->rq_sge, qp->hist, qp->sq, qp->sq_sge, qp->sq_inl,
		qp->orq, qp->irq, qp->tx.f_large, qp->tx.iov_large,
	};
	queues_len(len, sq, ssge, inl, rq, rsge);
	rpcrdma_pages_parts_free(p, len, QP_PARTS, QP_ON_PAGE);
	qp->sq = NULL;
	qp->sq_sge = NULL;
	qp->sq_inl = NULL;
	qp->rq = NULL;
	qp->rq_sge = NULL;
	qp->hist = NULL;
	qp->orq = NULL;
	qp->irq = NULL;
	qp->tx.f = qp->tx.f_large = NULL;
	qp->tx.iov = qp->tx.iov_large = NULL;
}

int rpcrdma_iwarp_create_qp(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
			    const struct rpcrdma_qp_attr *attr,
			    struct rpcrdma_qp **out)
{
	if (!id || !pd || !attr || !out || !attr->send_cq || !attr->recv_cq)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	struct iw_qp *qp = &ep->qp;
	if (qp->created)
		return RPCRDMA_ERR_BUSY;
	struct iw_srq *srq = (struct iw_srq *)attr->srq;
	if (attr->max_send_wr > IW_MAX_WR || attr->max_send_sge > IW_MAX_SGE ||
	    attr->max_inline_data > IW_MAX_INLINE ||
	    (!srq && (attr->max_recv_wr > IW_MAX_WR ||
		      attr->max_recv_sge > IW_MAX_SGE)) ||
	    (srq && srq->base.dev != id->dev))
		return RPCRDMA_ERR_INVAL;
	/* A serialized QP's CQs serve it alone (provider.h); without manual
	 * progress the progress thread places data on its own, so the
	 * consumer's lock cannot stand for the QP's. */
	pthread_mutex_t *serial = ep->dev->manual_progress ? attr->serial_lock
							   : NULL;
	if (!rpcrdma_iwarp_cq_may_attach((struct iw_cq *)attr->send_cq, serial) ||
	    !rpcrdma_iwarp_cq_may_attach((struct iw_cq *)attr->recv_cq, serial))
		return RPCRDMA_ERR_INVAL;
	uint32_t sq = attr->max_send_wr ? attr->max_send_wr : IW_DEFAULT_WR;
	uint32_t ssge = attr->max_send_sge ? attr->max_send_sge : IW_MAX_SGE;
	uint32_t inl = attr->max_inline_data;
	/* On a shared receive queue the QP has no ring of its own. */
	uint32_t rq = srq ? 0
			  : attr->max_recv_wr ? attr->max_recv_wr : IW_DEFAULT_WR;
	/* Receive gather lists as long as asked (verbs' max_recv_sge): the
	 * RPC layer posts one buffer per receive, so its ring of 48 takes
	 * 2 KiB instead of 13. */
	uint32_t rsge = srq ? 0
			    : attr->max_recv_sge ? attr->max_recv_sge
						 : IW_MAX_SGE;
	pthread_mutex_lock(&qp->rx_lock);
	pthread_mutex_lock(&qp->tx_lock);
	size_t len[QP_PARTS];
	void *p[QP_PARTS];
	queues_len(len, sq, ssge, inl, rq, rsge);
	if (rpcrdma_pages_parts_alloc(len, p, QP_PARTS, QP_ON_PAGE)) {
		pthread_mutex_unlock(&qp->tx_lock);
		pthread_mutex_unlock(&qp->rx_lock);
		return RPCRDMA_ERR_NOMEM;
	}
	qp->rq = p[0];
	qp->rq_sge = p[1];
	qp->hist = p[2];
	qp->sq = p[3];
	qp->sq_sge = p[4];
	qp->sq_inl = p[5];
	qp->orq = p[6];
	qp->irq = p[7];
	qp->rq_max_sge = rsge;
	qp->sq_cap = sq;
	qp->sq_max_sge = ssge;
	qp->sq_max_inline = inl;
	/* The entries stay untouched until posted to (post_send sets their
	 * gather lists): a QP sized for many BIND_MWs has a deep queue. */
	qp->rq_cap = rq;
	qp->sq_head = qp->sq_count = qp->sq_built = 0;
	qp->rq_head = qp->rq_count = 0;
	qp->orq_head = qp->orq_count = 0;
	qp->irq_head = qp->irq_count = qp->irq_built = 0;
	memset(&qp->tx, 0, offsetof(struct iw_tx, f_small));
	qp->tx.f = qp->tx.f_small;
	qp->tx.iov = qp->tx.iov_small;
	qp->tx.f_cap = IW_TX_FPDUS_SMALL;
	qp->tx.iov_cap = IW_TX_IOV_SMALL;
	qp->tx.f_large = p[8];
	qp->tx.iov_large = p[9];
	qp->tx_stopped = false;
	atomic_store(&qp->ctr.tagged, 0);
	atomic_store(&qp->ctr.tagged_copied, 0);
	atomic_store(&qp->ctr.untagged, 0);
	atomic_store(&qp->ctr.untagged_copied, 0);
	atomic_store(&qp->ctr.tx, 0);
	atomic_store(&qp->ctr.tx_copied, 0);
	qp->tx_lkc.valid = false;
	qp->rx_lkc.valid = false;
	memset(&qp->term, 0, sizeof(qp->term));
	qp->hist_n = 0;
	rpcrdma_iwarp_rx_init(&qp->rx);
	qp->dev = ep->dev;
	qp->ep = ep;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->fd = -1;
	qp->flushed = false;
	qp->serial = serial;
	qp->rx_running = false;
	atomic_store(&qp->state, IW_QP_IDLE);
	qp->base.dev = id->dev;
	qp->base.pd = pd;
	qp->base.id = id;
	qp->base.send_cq = attr->send_cq;
	qp->base.recv_cq = attr->recv_cq;
	qp->base.context = attr->context;
	qp->base.max_send_wr = sq;
	qp->base.max_recv_wr = rq;
	qp->base.max_send_sge = ssge;
	qp->base.max_recv_sge = srq ? srq->base.max_sge : rsge;
	qp->base.srq = attr->srq;
	qp->srq = srq;
	if (srq)
		rpcrdma_iwarp_srq_attach(srq, true);
	qp->created = true;
	pthread_mutex_unlock(&qp->tx_lock);
	pthread_mutex_unlock(&qp->rx_lock);
	rpcrdma_iwarp_cq_attach(qp);
	id->qp = &qp->base;
	*out = &qp->base;
	return 0;
}

int rpcrdma_iwarp_destroy_qp(struct rpcrdma_qp *b)
{
	if (!b)
		return RPCRDMA_ERR_INVAL;
	struct iw_qp *qp = (struct iw_qp *)b;
	if (!qp->created)
		return RPCRDMA_ERR_INVAL;
	if (atomic_load(&qp->state) == IW_QP_RTS)
		rpcrdma_iwarp_qp_error(qp, RPCRDMA_WC_WR_FLUSH_ERR);
	/* The receive a message was filling completes, whoever held the RX
	 * side when the QP went down (qp_error could only try for it): on a
	 * shared receive queue nobody else would ever complete it. */
	pthread_mutex_lock(&qp->rx_lock);
	atomic_store(&qp->state, IW_QP_ERROR);
	if (qp->rx.recv_active) {
		qp->rx.recv_active = false;
		rpcrdma_iwarp_complete(qp, false, qp->rx.recv.wr_id,
				       RPCRDMA_WC_RECV, RPCRDMA_WC_WR_FLUSH_ERR,
				       0, 0, 0, 0);
	}
	pthread_mutex_unlock(&qp->rx_lock);
	/* Under the CQs' qps_lock: waits out any inline progress. */
	rpcrdma_iwarp_cq_detach(qp);
	pthread_mutex_lock(&qp->rx_lock);
	pthread_mutex_lock(&qp->tx_lock);
	pthread_mutex_lock(&qp->rq_lock);
	qp->created = false;
	if (qp->srq)
		rpcrdma_iwarp_srq_attach(qp->srq, false);
	qp->srq = NULL;
	queues_free(qp, qp->sq_cap, qp->sq_max_sge, qp->sq_max_inline,
		    qp->rq_cap, qp->rq_max_sge);
	qp->sq_count = qp->rq_count = qp->orq_count = qp->irq_count = 0;
	pthread_mutex_unlock(&qp->rq_lock);
	pthread_mutex_unlock(&qp->tx_lock);
	pthread_mutex_unlock(&qp->rx_lock);
	if (qp->ep)
		qp->ep->base.qp = NULL;
	return 0;
}

int rpcrdma_iwarp_post_recv(struct rpcrdma_qp *b, struct rpcrdma_recv_wr *wr,
			    struct rpcrdma_recv_wr **bad)
{
	if (!b || !wr)
		return RPCRDMA_ERR_INVAL;
	struct iw_qp *qp = (struct iw_qp *)b;
	int rc = 0;
	iw_lock(qp, &qp->rq_lock);
	for (; wr; wr = wr->next) {
		/* A QP on a shared receive queue has none of its own. */
		if (!qp->created || qp->srq || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->rq_max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		if (atomic_load(&qp->state) == IW_QP_ERROR) {
			/* verbs: posting to an errored QP flushes at once. */
			rpcrdma_iwarp_complete(qp, false, wr->wr_id, RPCRDMA_WC_RECV,
					       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
			continue;
		}
		if (qp->rq_count == qp->rq_cap) {
			rc = RPCRDMA_ERR_NOMEM;
			break;
		}
		uint32_t slot = (qp->rq_head + qp->rq_count) % qp->rq_cap;
		struct iw_rwqe *r = &qp->rq[slot];
		r->sge = qp->rq_sge + (size_t)slot * qp->rq_max_sge;
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
		qp->rq_count++;
	}
	iw_unlock(qp, &qp->rq_lock);
	if (rc && bad)
		*bad = wr;
	return rc;
}

int rpcrdma_iwarp_get_terminate(struct rpcrdma_qp *b,
				struct rpcrdma_terminate_info *info)
{
	if (!b || !info)
		return RPCRDMA_ERR_INVAL;
	struct iw_qp *qp = (struct iw_qp *)b;
	iw_lock(qp, &qp->tx_lock);
	*info = qp->term;
	iw_unlock(qp, &qp->tx_lock);
	return 0;
}

int rpcrdma_iwarp_qp_counters(struct rpcrdma_qp *b,
			      struct rpcrdma_qp_counters *out)
{
	if (!b || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_ctr *c = &((struct iw_qp *)b)->ctr;
	out->rx_tagged_bytes = atomic_load_explicit(&c->tagged, memory_order_relaxed);
	out->rx_tagged_copied =
		atomic_load_explicit(&c->tagged_copied, memory_order_relaxed);
	out->rx_untagged_bytes =
		atomic_load_explicit(&c->untagged, memory_order_relaxed);
	out->rx_untagged_copied =
		atomic_load_explicit(&c->untagged_copied, memory_order_relaxed);
	out->tx_bytes = atomic_load_explicit(&c->tx, memory_order_relaxed);
	out->tx_copied = atomic_load_explicit(&c->tx_copied, memory_order_relaxed);
	return 0;
}

/* Re-arms the progress thread's one-shot registration of the socket from
 * what the QP currently needs. */
void rpcrdma_iwarp_qp_update_arm(struct iw_qp *qp)
{
	pthread_mutex_lock(&qp->ep_lock);
	if (qp->fd >= 0 && atomic_load(&qp->state) == IW_QP_ERROR) {
		/* A dead socket reports EPOLLHUP whatever the mask, so a
		 * re-armed registration would wake this thread for ever
		 * (until the endpoint is destroyed): take it out. */
		epoll_ctl(qp->dev->epfd, EPOLL_CTL_DEL, qp->fd, NULL);
	} else if (qp->fd >= 0) {
		uint32_t ev = EPOLLONESHOT;
		if (atomic_load(&qp->state) == IW_QP_RTS) {
			/* Manual progress: the consumer reads the data; we
			 * only notice the peer closing. */
			if (qp->in_armed)
				ev |= qp->dev->manual_progress
					      ? EPOLLRDHUP
					      : EPOLLIN | EPOLLRDHUP;
			/* A serialized QP deferred waits for its retry
			 * (rpcrdma_iwarp_serial_event), not for room.  One
			 * whose TX stopped at its pass's share, with room in
			 * the socket, is its consumer's to go on with: cq_fd
			 * reports it (rpcrdma_iwarp_cq_watch_out), and this
			 * thread, woken at once by the room, would only
			 * compete with the consumer for its lock and its
			 * CPU, running the bulk transfer that the share is
			 * there to interleave with other connections. */
			if (qp->want_out &&
			    !(qp->serial && (qp->deferred || qp->out_room)))
				ev |= EPOLLOUT;
		}
		struct epoll_event e = { .events = ev, .data.ptr = qp->ep };
		epoll_ctl(qp->dev->epfd, EPOLL_CTL_MOD, qp->fd, &e);
	}
	pthread_mutex_unlock(&qp->ep_lock);
}

void rpcrdma_iwarp_qp_start(struct iw_qp *qp, int fd, bool crc, uint32_t ird,
			    uint32_t ord, bool responder, bool rtr)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int mss = 0;
	socklen_t sl = sizeof(mss);
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) != 0 || mss <= 0)
		mss = 1460;
	pthread_mutex_lock(&qp->rx_lock);
	pthread_mutex_lock(&qp->tx_lock);
	qp->fd = fd;
	qp->crc = crc;
	/* FPDUs are a multiple of four bytes (RFC 5044 §4.1 pad): rounding
	 * the limits down first keeps a whole FPDU within them. */
	unsigned cap = qp->dev->max_fpdu;
	qp->mulpdu = rpcrdma_iwarp_mulpdu((size_t)mss & ~(size_t)3,
					  cap > 3 ? cap & ~3u : cap);
	qp->emss = (size_t)mss;
	qp->ird = ird;
	qp->ord = ord;
	/* RFC 5044 §7.1.2 rule 4: the responder sends no FPDU before it
	 * received and validated one. */
	qp->tx_hold = responder;
	qp->rtr_pending = rtr;
	for (int i = 0; i < 3; i++) {
		qp->tx_msn[i] = 1; /* RFC 5041 §5.1: MSN starts at one */
		qp->rx.msn[i] = 1;
	}
	atomic_store(&qp->state, IW_QP_RTS);
	pthread_mutex_unlock(&qp->tx_lock);
	pthread_mutex_unlock(&qp->rx_lock);
	pthread_mutex_lock(&qp->ep_lock);
	qp->in_armed = true;
	qp->want_out = false;
	qp->out_room = false;
	qp->deferred = false;
	/* Its events from want_out, under the lock that orders every change
	 * of want_out with the registration that follows it (set_want_out,
	 * iwarp_qp_tx.c). */
	rpcrdma_iwarp_cq_watch(qp, true);
	pthread_mutex_unlock(&qp->ep_lock);
	rpcrdma_iwarp_qp_update_arm(qp);
	/* Anything posted before the connection completed goes out now (the
	 * RTR first).  A serialized QP's TX runs only under its consumer's
	 * lock, which this thread (holding the endpoint's lock) must not
	 * wait for: EPOLLOUT, which the socket reports at once, brings it
	 * to rpcrdma_iwarp_serial_event, or the consumer's poll runs it. */
	if (qp->serial)
		rpcrdma_iwarp_tx_want_out(qp);
	else
		rpcrdma_iwarp_tx_progress(qp);
}

static void flush_rq(struct iw_qp *qp)
{
	iw_lock(qp, &qp->rq_lock);
	while (qp->rq && qp->rq_count) {
		struct iw_rwqe *r = &qp->rq[qp->rq_head];
		rpcrdma_iwarp_complete(qp, false, r->wr_id, RPCRDMA_WC_RECV,
				       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
		qp->rq_head = (qp->rq_head + 1) % qp->rq_cap;
		qp->rq_count--;
	}
	iw_unlock(qp, &qp->rq_lock);
}

void rpcrdma_iwarp_qp_error(struct iw_qp *qp, int status)
{
	(void)status;
	int old = atomic_exchange(&qp->state, IW_QP_ERROR);
	if (old == IW_QP_RTS && qp->fd >= 0) {
		/* FIN to the peer (it sees DISCONNECTED); no RST, so bytes
		 * already queued, such as our Terminate, still arrive. */
		shutdown(qp->fd, SHUT_RDWR);
		/* An fd at EOF would keep cq_fd readable forever. */
		rpcrdma_iwarp_cq_watch(qp, false);
		rpcrdma_iwarp_qp_update_arm(qp);
	}
	iw_lock(qp, &qp->tx_lock);
	rpcrdma_iwarp_tx_flush(qp, NULL);
	iw_unlock(qp, &qp->tx_lock);
	/* The receive in progress belongs to the RX engine: flush it here if
	 * the engine is idle, else it flushes it itself before unlocking. */
	bool rx_idle = qp->serial ? !qp->rx_running
				  : pthread_mutex_trylock(&qp->rx_lock) == 0;
	if (rx_idle) {
		if (qp->rx.recv_active) {
			qp->rx.recv_active = false;
			rpcrdma_iwarp_complete(qp, false, qp->rx.recv.wr_id,
					       RPCRDMA_WC_RECV,
					       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
		}
		qp->rx.st = IW_RX_DEAD;
		iw_unlock(qp, &qp->rx_lock);
	}
	flush_rq(qp);
	if (old == IW_QP_RTS && qp->ep) {
		struct iw_ep *ep = qp->ep;
		pthread_mutex_lock(&ep->lock);
		bool report = !ep->disc_reported;
		ep->disc_reported = true;
		ep->state = IW_EP_CLOSED;
		pthread_mutex_unlock(&ep->lock);
		if (report)
			rpcrdma_iwarp_post_cm_event(ep, RPCRDMA_CM_EVENT_DISCONNECTED,
						    0, NULL, 0, 0, 0, NULL);
	}
}

void rpcrdma_iwarp_qp_terminate(struct iw_qp *qp, uint8_t layer,
				uint8_t etype, uint8_t ecode,
				const uint8_t *seg, size_t seg_len,
				bool with_rdma_hdr)
{
	struct rpcrdma_iwarp_term t;
	memset(&t, 0, sizeof(t));
	t.layer = layer;
	t.etype = etype;
	t.ecode = ecode;
	/* RFC 5040 §4.8 Figure 10: DDP and RDMAP errors carry the DDP
	 * segment length and header; protection errors on a Read Request
	 * also the RDMA header; LLP errors and catastrophic ones nothing. */
	bool catastrophic = (layer == RPCRDMA_IWARP_LAYER_RDMAP &&
			     etype == RPCRDMA_IWARP_RDMAP_ET_CATASTROPHIC) ||
			    (layer == RPCRDMA_IWARP_LAYER_DDP &&
			     etype == RPCRDMA_IWARP_DDP_ET_CATASTROPHIC);
	if (seg && seg_len >= 2 + 2 && layer != RPCRDMA_IWARP_LAYER_LLP &&
	    !catastrophic) {
		size_t hl = rpcrdma_iwarp_ddp_hlen((seg[2] & 0x80) != 0);
		if (seg_len >= 2 + hl) {
			t.m = true;
			t.d = true;
			t.seg_len = (uint16_t)(seg[0] << 8 | seg[1]);
			memcpy(t.ddp_hdr, seg + 2, hl);
			t.ddp_hdr_len = hl;
			if (with_rdma_hdr &&
			    seg_len >= 2 + hl + RPCRDMA_IWARP_READ_REQ_LEN) {
				t.r = true;
				memcpy(t.rdma_hdr, seg + 2 + hl,
				       RPCRDMA_IWARP_READ_REQ_LEN);
			}
		}
	}
	uint8_t body[RPCRDMA_IWARP_TERM_MAX_LEN];
	int bl = rpcrdma_iwarp_term_build(&t, body, sizeof(body));
	iw_lock(qp, &qp->tx_lock);
	qp->term.valid = true;
	qp->term.sent = true;
	qp->term.layer = layer;
	qp->term.etype = etype;
	qp->term.ecode = ecode;
	if (bl > 0 && atomic_load(&qp->state) == IW_QP_RTS && qp->created) {
		struct rpcrdma_iwarp_ddp_hdr h = {
			.tagged = false,
			.last = true,
			.dv = RPCRDMA_IWARP_DDP_VERSION,
			.rv = RPCRDMA_IWARP_RDMAP_VERSION,
			.opcode = RPCRDMA_IWARP_OP_TERMINATE,
			.qn = RPCRDMA_IWARP_QN_TERMINATE,
			.msn = qp->tx_msn[RPCRDMA_IWARP_QN_TERMINATE]++,
			.mo = 0,
		};
		rpcrdma_iwarp_tx_raw(qp, &h, body, (size_t)bl);
	}
	iw_unlock(qp, &qp->tx_lock);
	rpcrdma_iwarp_qp_error(qp, RPCRDMA_WC_FATAL_ERR);
}
