/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Reliable-connected queue pairs: creation on a cm_id, posting, and the
 * shadow rings that give completions back their consumer wr_id/opcode. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "provider/verbs/verbs_int.h"

/* provider.h's SGE is laid out exactly like ibv_sge, so SGE lists are
 * handed to libibverbs without copying. */
static_assert(sizeof(struct rpcrdma_sge) == sizeof(struct ibv_sge), "sge size");
static_assert(offsetof(struct rpcrdma_sge, addr) == offsetof(struct ibv_sge, addr),
	      "sge addr");
static_assert(offsetof(struct rpcrdma_sge, length) == offsetof(struct ibv_sge, length),
	      "sge length");
static_assert(offsetof(struct rpcrdma_sge, lkey) == offsetof(struct ibv_sge, lkey),
	      "sge lkey");

/* Shadow ring sequence numbers live in the low 31 bits of wr_id. */
#define SEQ_MASK (~RPCRDMA_VERBS_SLOT_RECV)
/* WRs handed to one ibv_post_send/recv call (one doorbell). */
#define POST_BATCH 16

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static int ring_init(struct rpcrdma_verbs_ring *r, uint32_t cap)
{
	/* Twice the queue: the device frees a WQE when it completes, we free
	 * a slot only when its completion is polled; the device still
	 * enforces the real limit. */
	uint32_t n = 2;
	while (n < 2 * (uint64_t)cap && n < (1u << 30))
		n <<= 1;
	r->slot = calloc(n, sizeof(*r->slot));
	if (!r->slot)
		return RPCRDMA_ERR_NOMEM;
	r->mask = n - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return 0;
}

struct rpcrdma_verbs_qp *rpcrdma_verbs_qp_lookup(struct rpcrdma_verbs_dev *d,
						 uint32_t qp_num, uint32_t uid)
{
	struct rpcrdma_verbs_qp *q = d->qps[qp_num & (d->qp_buckets - 1)];

	while (q && !(q->qp_num == qp_num && (q->uid == uid || !uid)))
		q = q->next;
	return q;
}

int rpcrdma_verbs_qp_table_init(struct rpcrdma_verbs_dev *d)
{
	d->qps = calloc(RPCRDMA_VERBS_QP_BUCKETS, sizeof(*d->qps));
	d->qp_buckets = RPCRDMA_VERBS_QP_BUCKETS;
	d->nqps = 0;
	return d->qps ? 0 : RPCRDMA_ERR_NOMEM;
}

/* Doubles the table once it holds twice as many QPs as buckets, so a
 * lookup stays a short chain with thousands of QPs.  Without memory the
 * table stays as it is: slower, not wrong.  dev->lock held. */
static void qp_table_grow(struct rpcrdma_verbs_dev *d)
{
	if (d->nqps <= 2 * d->qp_buckets || d->qp_buckets >= (1u << 24))
		return;
	uint32_t nb = 2 * d->qp_buckets;
	struct rpcrdma_verbs_qp **t = calloc(nb, sizeof(*t));
	if (!t)
		return;
	for (uint32_t i = 0; i < d->qp_buckets; i++) {
		struct rpcrdma_verbs_qp *q = d->qps[i];
		while (q) {
			struct rpcrdma_verbs_qp *next = q->next;
			struct rpcrdma_verbs_qp **b = &t[q->qp_num & (nb - 1)];
			q->next = *b;
			*b = q;
			q = next;
		}
	}
	free(d->qps);
	d->qps = t;
	d->qp_buckets = nb;
}

int rpcrdma_verbs_create_qp(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
			    const struct rpcrdma_qp_attr *attr,
			    struct rpcrdma_qp **out)
{
	struct rpcrdma_verbs_id *vid = (struct rpcrdma_verbs_id *)id;
	struct rpcrdma_verbs_pd *p = (struct rpcrdma_verbs_pd *)pd;

	if (!vid || !p || !attr || !out || !attr->send_cq || !attr->recv_cq)
		return RPCRDMA_ERR_INVAL;
	if (id->qp)
		return RPCRDMA_ERR_BUSY;
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(id->dev);
	/* rdma_create_qp needs an id bound to a device (resolve() or a
	 * CONNECT_REQUEST), and that device must be the one the PD is on. */
	if (!vid->id->verbs)
		return RPCRDMA_ERR_INVAL;
	if (vid->id->verbs != d->ctx || pd->dev != id->dev)
		return RPCRDMA_ERR_NO_DEVICE;
	struct rpcrdma_verbs_srq *srq = (struct rpcrdma_verbs_srq *)attr->srq;
	if (srq && srq->base.dev != id->dev)
		return RPCRDMA_ERR_INVAL;

	struct ibv_qp_init_attr ia = {
		.qp_context = NULL,
		.send_cq = ((struct rpcrdma_verbs_cq *)attr->send_cq)->cq,
		.recv_cq = ((struct rpcrdma_verbs_cq *)attr->recv_cq)->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = attr->sq_sig_all,
	};
	uint32_t max_wr = d->attr.max_qp_wr > 0 ? (uint32_t)d->attr.max_qp_wr : 1;
	uint32_t max_sge = d->attr.max_sge > 0 ? (uint32_t)d->attr.max_sge : 1;
	/* Size from the device's limits instead of failing on big asks. */
	ia.cap.max_send_wr = min_u32(attr->max_send_wr ? attr->max_send_wr : 1, max_wr);
	ia.cap.max_recv_wr = min_u32(attr->max_recv_wr ? attr->max_recv_wr : 1, max_wr);
	ia.cap.max_send_sge = min_u32(attr->max_send_sge ? attr->max_send_sge : 1, max_sge);
	ia.cap.max_recv_sge = min_u32(attr->max_recv_sge ? attr->max_recv_sge : 1, max_sge);
	ia.cap.max_inline_data = attr->max_inline_data;
	if (srq) {
		/* No receive queue of its own (provider.h). */
		ia.srq = srq->srq;
		ia.cap.max_recv_wr = 0;
		ia.cap.max_recv_sge = 0;
	}

	struct rpcrdma_verbs_qp *q = calloc(1, sizeof(*q));
	if (!q)
		return RPCRDMA_ERR_NOMEM;
	ia.qp_context = q;
	struct ibv_qp_init_attr try = ia;
	int rc = rdma_create_qp(vid->id, p->pd, &try);
	if (rc && ia.cap.max_inline_data) {
		/* Devices do not advertise their inline limit; inline is
		 * only a hint in provider.h, so retry without it. */
		try = ia;
		try.cap.max_inline_data = 0;
		rc = rdma_create_qp(vid->id, p->pd, &try);
	}
	if (rc) {
		int e = errno;
		free(q);
		return rpcrdma_verbs_errno(e ? e : EINVAL);
	}
	q->qp = vid->id->qp;
	q->qp_num = q->qp->qp_num;
	q->max_inline = try.cap.max_inline_data;
	rc = ring_init(&q->sq, try.cap.max_send_wr);
	if (!rc && !srq)
		rc = ring_init(&q->rq, try.cap.max_recv_wr);
	if (rc) {
		free(q->sq.slot);
		free(q->rq.slot);
		rdma_destroy_qp(vid->id);
		free(q);
		return rc;
	}
	q->base.dev = id->dev;
	q->base.pd = pd;
	q->base.id = id;
	q->base.send_cq = attr->send_cq;
	q->base.recv_cq = attr->recv_cq;
	q->base.context = attr->context;
	q->base.max_send_wr = try.cap.max_send_wr;
	q->base.max_recv_wr = try.cap.max_recv_wr;
	q->base.max_send_sge = try.cap.max_send_sge;
	q->base.max_recv_sge = srq ? srq->base.max_sge : try.cap.max_recv_sge;
	q->base.srq = attr->srq;
	q->srq = srq;

	pthread_mutex_lock(&d->lock);
	q->uid = d->next_uid++;
	if (d->next_uid >= RPCRDMA_VERBS_UID_SRQ)
		d->next_uid = 1;
	d->nqps++;
	qp_table_grow(d);
	struct rpcrdma_verbs_qp **b = &d->qps[q->qp_num & (d->qp_buckets - 1)];
	q->next = *b;
	*b = q;
	pthread_mutex_unlock(&d->lock);

	id->qp = &q->base;
	*out = &q->base;
	return 0;
}

int rpcrdma_verbs_destroy_qp(struct rpcrdma_qp *qp)
{
	struct rpcrdma_verbs_qp *q = (struct rpcrdma_verbs_qp *)qp;

	if (!q)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(qp->dev);
	struct rpcrdma_verbs_id *vid = (struct rpcrdma_verbs_id *)qp->id;

	/* Unlink first: completions still queued for this QP are dropped
	 * by poll_cq from now on. */
	pthread_mutex_lock(&d->lock);
	struct rpcrdma_verbs_qp **pp = &d->qps[q->qp_num & (d->qp_buckets - 1)];
	while (*pp && *pp != q)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = q->next;
		d->nqps--;
	}
	pthread_mutex_unlock(&d->lock);

	/* On an SRQ, the receive a message was filling must come back
	 * (provider.h): the move to the error state has the device flush
	 * it (Linux 6.1 siw at once, siw_qp.c:1271-1286; rxe from its
	 * responder task, rxe_resp.c:375-383, scheduled by the move), and
	 * an SRQ receive's completion outlives its QP (verbs_cq.c).  A QP
	 * that went to error before (DISCONNECTED read, an error
	 * completion) was flushed then. */
	if (q->srq && !atomic_load(&q->flushing))
		rpcrdma_verbs_qp_to_error(qp);
	rdma_destroy_qp(vid->id);
	qp->id->qp = NULL;
	free(q->sq.slot);
	free(q->rq.slot);
	free(q);
	return 0;
}

void rpcrdma_verbs_qp_to_error(struct rpcrdma_qp *qp)
{
	struct rpcrdma_verbs_qp *q = (struct rpcrdma_verbs_qp *)qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (!q)
		return;
	atomic_store(&q->flushing, true);
	(void)ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
}

/* After a post to a QP in error: make the device flush what was just
 * posted (see flushing in verbs_int.h).  ERR -> ERR is a legal transition
 * for every QP state (IBA 10.3.1). */
static void kick_flush(struct rpcrdma_verbs_qp *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (atomic_load(&q->flushing))
		(void)ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
}

/* siw flushes a user-mapped queue only on the move to the error state:
 * ERROR -> ERROR does nothing (siw_qp_modify(), siw_qp.c:843-862) and a
 * doorbell in ERROR flushes only the WRs passed in, none for a user QP
 * (siw_post_send(), siw_verbs.c:792-801).  A WR posted to a siw QP in the
 * error state would never complete: refuse it instead.  The kernel moves
 * the QP there on its own (a Terminate, a dropped stream) before any
 * completion tells us, so ask it first; one system call per post on a
 * software device that makes one for the doorbell anyway.  A move to
 * ERROR between the question and the doorbell still loses the WR. */
static bool refuse_post(struct rpcrdma_verbs_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (!rpcrdma_verbs_dev(q->base.dev)->libsiw)
		return false;
	if (atomic_load(&q->flushing))
		return true;
	if (ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia) == 0 &&
	    a.qp_state == IBV_QPS_ERR) {
		atomic_store(&q->flushing, true);
		return true;
	}
	return false;
}

/* Claims the next slot of r or returns false when the ring is full. */
static bool ring_claim(struct rpcrdma_verbs_ring *r, uint32_t seq)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);

	return ((seq - tail) & SEQ_MASK) <= r->mask;
}

static unsigned send_flags(unsigned f)
{
	unsigned v = 0;

	if (f & RPCRDMA_SEND_SIGNALED)
		v |= IBV_SEND_SIGNALED;
	if (f & RPCRDMA_SEND_SOLICITED)
		v |= IBV_SEND_SOLICITED;
	if (f & RPCRDMA_SEND_FENCE)
		v |= IBV_SEND_FENCE;
	if (f & RPCRDMA_SEND_INLINE)
		v |= IBV_SEND_INLINE;
	return v;
}

/* Fills *iw from *wr; a negative error for WRs verbs cannot express. */
static int send_wr(const struct rpcrdma_verbs_qp *q,
		   const struct rpcrdma_send_wr *wr, struct ibv_send_wr *iw,
		   enum rpcrdma_wc_opcode *wc_op)
{
	const struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(q->base.dev);

	iw->sg_list = (struct ibv_sge *)wr->sg_list;
	iw->num_sge = wr->num_sge;
	iw->send_flags = send_flags(wr->send_flags);
	/* INLINE is a hint in provider.h; verbs fails the post (EINVAL on
	 * rxe) when the data exceeds the QP's inline size, so drop it
	 * there. */
	if (iw->send_flags & IBV_SEND_INLINE) {
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge && wr->sg_list; i++)
			len += wr->sg_list[i].length;
		if (len > q->max_inline)
			iw->send_flags &= ~(unsigned)IBV_SEND_INLINE;
	}
	switch (wr->opcode) {
	case RPCRDMA_WR_SEND:
		iw->opcode = IBV_WR_SEND;
		*wc_op = RPCRDMA_WC_SEND;
		break;
	case RPCRDMA_WR_SEND_WITH_INV:
		iw->opcode = IBV_WR_SEND_WITH_INV;
		iw->invalidate_rkey = wr->invalidate_rkey;
		/* libsiw takes the STag from here (verbs_int.h,
		 * libsiw); other drivers ignore it for a Send. */
		if (d->libsiw)
			iw->wr.rdma.rkey = wr->invalidate_rkey;
		*wc_op = RPCRDMA_WC_SEND;
		break;
	case RPCRDMA_WR_RDMA_WRITE:
		iw->opcode = IBV_WR_RDMA_WRITE;
		iw->wr.rdma.remote_addr = wr->rdma.remote_addr;
		iw->wr.rdma.rkey = wr->rdma.rkey;
		*wc_op = RPCRDMA_WC_RDMA_WRITE;
		break;
	case RPCRDMA_WR_RDMA_READ:
		/* libsiw takes a longer sink list and siw then places the
		 * whole Read into the first SGE (the kernel's own verbs
		 * refuse it, siw_verbs.c:872); refuse it for every device
		 * that says so. */
		if (d->attr.max_sge_rd > 0 && wr->num_sge > d->attr.max_sge_rd)
			return RPCRDMA_ERR_INVAL;
		iw->opcode = IBV_WR_RDMA_READ;
		iw->wr.rdma.remote_addr = wr->rdma.remote_addr;
		iw->wr.rdma.rkey = wr->rdma.rkey;
		*wc_op = RPCRDMA_WC_RDMA_READ;
		break;
	case RPCRDMA_WR_LOCAL_INV:
		iw->opcode = IBV_WR_LOCAL_INV;
		iw->invalidate_rkey = wr->invalidate_rkey;
		iw->num_sge = 0;
		*wc_op = RPCRDMA_WC_LOCAL_INV;
		break;
	case RPCRDMA_WR_BIND_MW: {
		struct rpcrdma_verbs_mw *w = (struct rpcrdma_verbs_mw *)wr->bind_mw.mw;
		struct rpcrdma_verbs_mr *m = (struct rpcrdma_verbs_mr *)wr->bind_mw.mr;
		if (!w || !m)
			return RPCRDMA_ERR_INVAL;
		unsigned acc = 0;
		/* Windows grant remote access only. */
		if (wr->bind_mw.access & RPCRDMA_ACCESS_REMOTE_READ)
			acc |= IBV_ACCESS_REMOTE_READ;
		if (wr->bind_mw.access & RPCRDMA_ACCESS_REMOTE_WRITE)
			acc |= IBV_ACCESS_REMOTE_WRITE;
		iw->opcode = IBV_WR_BIND_MW;
		iw->num_sge = 0;
		iw->sg_list = NULL;
		iw->bind_mw.mw = w->mw;
		/* The consumer picks the 8-bit key; the index part stays. */
		iw->bind_mw.rkey = (w->base.rkey & ~0xffu) | wr->bind_mw.key;
		iw->bind_mw.bind_info.mr = m->mr;
		iw->bind_mw.bind_info.addr = wr->bind_mw.addr;
		iw->bind_mw.bind_info.length = wr->bind_mw.length;
		iw->bind_mw.bind_info.mw_access_flags = acc;
		*wc_op = RPCRDMA_WC_BIND_MW;
		break;
	}
	default:
		return RPCRDMA_ERR_INVAL;
	}
	return 0;
}

int rpcrdma_verbs_post_send(struct rpcrdma_qp *qp, struct rpcrdma_send_wr *wr,
			    struct rpcrdma_send_wr **bad)
{
	struct rpcrdma_verbs_qp *q = (struct rpcrdma_verbs_qp *)qp;
	struct ibv_send_wr iw[POST_BATCH];
	struct rpcrdma_send_wr *mine[POST_BATCH];

	if (bad)
		*bad = NULL;
	if (!q)
		return RPCRDMA_ERR_INVAL;
	if (refuse_post(q)) {
		if (bad)
			*bad = wr;
		return RPCRDMA_ERR_DISCONNECTED;
	}
	while (wr) {
		uint32_t seq = atomic_load_explicit(&q->sq.head, memory_order_relaxed);
		uint32_t first = seq;
		int n = 0, err = 0;

		for (; wr && n < POST_BATCH; wr = wr->next) {
			enum rpcrdma_wc_opcode op;
			if (!ring_claim(&q->sq, seq)) {
				err = RPCRDMA_ERR_NOMEM;
				break;
			}
			iw[n] = (struct ibv_send_wr){ 0 };
			err = send_wr(q, wr, &iw[n], &op);
			if (err)
				break;
			q->sq.slot[seq & q->sq.mask] =
				(struct rpcrdma_verbs_slot){ wr->wr_id, op, false };
			iw[n].wr_id = (uint64_t)q->uid << 32 | seq;
			if (n)
				iw[n - 1].next = &iw[n];
			mine[n++] = wr;
			seq = (seq + 1) & SEQ_MASK;
		}
		if (n) {
			struct ibv_send_wr *ibad = NULL;
			/* Published before the device can complete them:
			 * poll_cq takes only [tail, head) as outstanding. */
			atomic_store_explicit(&q->sq.head, seq, memory_order_release);
			int rc = ibv_post_send(q->qp, iw, &ibad);
			if (rc < 0) /* libsiw returns -errno (siw.c:533-536) */
				rc = -rc;
			if (rc) {
				int k = ibad ? (int)(ibad - iw) : 0;
				atomic_store_explicit(&q->sq.head,
						      (first + (uint32_t)k) & SEQ_MASK,
						      memory_order_release);
				if (bad)
					*bad = mine[k];
				return rpcrdma_verbs_errno(rc);
			}
			/* Keys chosen by the binds are current from now on,
			 * in ibv_mw too: libibverbs never updates it for
			 * type-2 binds, and rxe names the window to rebind
			 * by that field (a stale one fails the next bind). */
			for (int i = 0; i < n; i++)
				if (iw[i].opcode == IBV_WR_BIND_MW) {
					mine[i]->bind_mw.mw->rkey = iw[i].bind_mw.rkey;
					iw[i].bind_mw.mw->rkey = iw[i].bind_mw.rkey;
				}
			kick_flush(q);
		}
		if (err) {
			if (bad)
				*bad = wr;
			return err;
		}
	}
	return 0;
}

void rpcrdma_verbs_recv_wr(const struct rpcrdma_verbs_dev *d,
			   const struct rpcrdma_recv_wr *wr, uint64_t wr_id,
			   struct ibv_sge *empty_sge, struct ibv_recv_wr *iw)
{
	*iw = (struct ibv_recv_wr){
		.wr_id = wr_id,
		.sg_list = (struct ibv_sge *)wr->sg_list,
		.num_sge = wr->num_sge,
	};
	/* libsiw refuses a receive without SGEs (push_recv_wqe, siw.c:654-663,
	 * for a QP's queue and an SRQ alike); siw skips an empty one
	 * (siw_qp_rx.c:462), which is the same receive. */
	if (!wr->num_sge && d->libsiw) {
		iw->sg_list = empty_sge;
		iw->num_sge = 1;
	}
}

int rpcrdma_verbs_post_recv(struct rpcrdma_qp *qp, struct rpcrdma_recv_wr *wr,
			    struct rpcrdma_recv_wr **bad)
{
	struct rpcrdma_verbs_qp *q = (struct rpcrdma_verbs_qp *)qp;
	struct ibv_recv_wr iw[POST_BATCH];
	struct rpcrdma_recv_wr *mine[POST_BATCH];
	struct ibv_sge empty_sge = { 0, 0, 0 };

	if (bad)
		*bad = NULL;
	if (!q)
		return RPCRDMA_ERR_INVAL;
	const struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(qp->dev);
	if (q->srq) {
		/* Its receives come from the SRQ (provider.h). */
		if (bad)
			*bad = wr;
		return RPCRDMA_ERR_INVAL;
	}
	if (refuse_post(q)) {
		if (bad)
			*bad = wr;
		return RPCRDMA_ERR_DISCONNECTED;
	}
	while (wr) {
		uint32_t seq = atomic_load_explicit(&q->rq.head, memory_order_relaxed);
		uint32_t first = seq;
		int n = 0, err = 0;

		for (; wr && n < POST_BATCH; wr = wr->next) {
			if (!ring_claim(&q->rq, seq)) {
				err = RPCRDMA_ERR_NOMEM;
				break;
			}
			q->rq.slot[seq & q->rq.mask] =
				(struct rpcrdma_verbs_slot){ wr->wr_id, RPCRDMA_WC_RECV,
							     false };
			rpcrdma_verbs_recv_wr(d, wr,
					      (uint64_t)q->uid << 32 |
						      RPCRDMA_VERBS_SLOT_RECV | seq,
					      &empty_sge, &iw[n]);
			if (n)
				iw[n - 1].next = &iw[n];
			mine[n++] = wr;
			seq = (seq + 1) & SEQ_MASK;
		}
		if (n) {
			struct ibv_recv_wr *ibad = NULL;
			/* Published before the device can complete them:
			 * poll_cq takes only [tail, head) as outstanding. */
			atomic_store_explicit(&q->rq.head, seq, memory_order_release);
			int rc = ibv_post_recv(q->qp, iw, &ibad);
			if (rc < 0) /* libsiw returns -errno (siw.c:688-690) */
				rc = -rc;
			if (rc) {
				int k = ibad ? (int)(ibad - iw) : 0;
				atomic_store_explicit(&q->rq.head,
						      (first + (uint32_t)k) & SEQ_MASK,
						      memory_order_release);
				if (bad)
					*bad = mine[k];
				return rpcrdma_verbs_errno(rc);
			}
			kick_flush(q);
		}
		if (err) {
			if (bad)
				*bad = wr;
			return err;
		}
	}
	return 0;
}

int rpcrdma_verbs_get_terminate(struct rpcrdma_qp *qp,
				struct rpcrdma_terminate_info *info)
{
	/* Terminate messages are an iWARP wire detail verbs does not expose. */
	if (info)
		info->valid = false;
	return RPCRDMA_ERR_NOTSUP;
}
