/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * TX engine: send queue -> RDMAP messages -> DDP segments -> MPA FPDUs.
 *
 * All under qp->tx_lock.  Messages are picked in order and cut into
 * FPDUs, which go into a batch: one iovec array handed to one sendmsg.
 *   fill:  pick a message, append its FPDUs, pick the next one, ... until
 *          nothing is ready or the batch is full (IW_TX_FPDUS FPDUs,
 *          IW_TX_IOV iovecs, IW_TX_BYTES bytes; a QP's batches are one
 *          FPDU until one more was ready, batch_reset);
 *   push:  sendmsg the rest of the batch; each FPDU TCP took whole is
 *          retired in order: its message's last FPDU completes the WR
 *          (a Send/Write completes once TCP owns its bytes, like siw),
 *          pops the Read Response owed, or lets a Read Request's WR go;
 *   EAGAIN: wait for EPOLLOUT (progress thread or the next poll_cq);
 *   share: a pass (a poll_cq, an event of the progress thread, and the
 *          posts within the pass) pushes batches until IW_TX_PASS bytes
 *          went, then leaves the next batch built for the next pass
 *          (want_out with out_room: the consumer's cq_fd reports it at
 *          once), so that one QP's bulk transfer does not hold a thread
 *          that serves other QPs for as long as TCP takes its bytes.
 * So many small messages ready at once (a chain of WRs, Read Responses
 * for a burst of Read Requests, a queue TCP held back) cost one syscall,
 * not one per FPDU.  An FPDU of IW_BULK_FPDU bytes or more goes alone,
 * as before: the syscall is cheap next to its copies, and one sendmsg of
 * several such FPDUs was measured slower on loopback (rpcrdma-perf rpc
 * 1 MiB READ/WRITE, one CPU: 25-50 % more CPU time with 256 KiB
 * batches).  The FPDUs of one sendmsg are laid out so that none
 * straddles a multiple of the TCP segment size from its start (RFC 5044
 * §5.1: FPDUs packed into a segment are entirely contained in it): when
 * the next one would, the batch ends there.
 * Pick order: the RTR (RFC 6581 §9.2, once), then Read Responses owed to
 * the peer (RFC 5040 §5.2: responses leave in request order), then the
 * send queue in order.  Whole messages are never interleaved, which keeps
 * DDP's in-order MO/TO simple for the receiver.  Work that acts on local
 * memory (LOCAL_INV, BIND_MW) waits until the batch before it went out;
 * it alone goes on while a responder's wire is held for the initiator's
 * first FPDU.
 * Data is gathered straight from registered memory into sendmsg (no copy)
 * unless the WR asked for INLINE, which copied it at post time.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "provider/iwarp/iwarp.h"
#include "wire/crc32c.h"

static bool sq_op_valid(enum rpcrdma_wr_opcode op)
{
	switch (op) {
	case RPCRDMA_WR_SEND:
	case RPCRDMA_WR_SEND_WITH_INV:
	case RPCRDMA_WR_RDMA_WRITE:
	case RPCRDMA_WR_RDMA_READ:
	case RPCRDMA_WR_LOCAL_INV:
	case RPCRDMA_WR_BIND_MW:
		return true;
	}
	return false;
}

enum rpcrdma_wc_opcode rpcrdma_iwarp_wc_op(enum rpcrdma_wr_opcode op)
{
	switch (op) {
	case RPCRDMA_WR_RDMA_WRITE:
		return RPCRDMA_WC_RDMA_WRITE;
	case RPCRDMA_WR_RDMA_READ:
		return RPCRDMA_WC_RDMA_READ;
	case RPCRDMA_WR_LOCAL_INV:
		return RPCRDMA_WC_LOCAL_INV;
	case RPCRDMA_WR_BIND_MW:
		return RPCRDMA_WC_BIND_MW;
	default:
		return RPCRDMA_WC_SEND;
	}
}

int rpcrdma_iwarp_post_send(struct rpcrdma_qp *b, struct rpcrdma_send_wr *wr,
			    struct rpcrdma_send_wr **bad)
{
	if (!b || !wr)
		return RPCRDMA_ERR_INVAL;
	struct iw_qp *qp = (struct iw_qp *)b;
	int rc = 0;
	iw_lock(qp, &qp->tx_lock);
	for (; wr; wr = wr->next) {
		if (!qp->created || !sq_op_valid(wr->opcode) || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->sq_max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > IW_MAX_MSG) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		if (wr->opcode == RPCRDMA_WR_BIND_MW &&
		    (!wr->bind_mw.mw || !wr->bind_mw.mr)) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		bool sig = qp->sq_sig_all || (wr->send_flags & RPCRDMA_SEND_SIGNALED);
		if (atomic_load(&qp->state) == IW_QP_ERROR) {
			rpcrdma_iwarp_complete(qp, true, wr->wr_id, rpcrdma_iwarp_wc_op(wr->opcode),
					       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
			continue;
		}
		if (qp->sq_count == qp->sq_cap) {
			rc = RPCRDMA_ERR_NOMEM;
			break;
		}
		uint32_t slot = (qp->sq_head + qp->sq_count) % qp->sq_cap;
		struct iw_swqe *w = &qp->sq[slot];
		/* Its gather list and inline room, set here rather than at
		 * create: an entry's page is touched only once the queue is
		 * that deep (an idle connection's QP holds none of them). */
		w->sge = qp->sq_sge ? qp->sq_sge + (size_t)slot * qp->sq_max_sge
				    : w->sge_near;
		w->inl = qp->sq_max_inline
				 ? qp->sq_inl + (size_t)slot * qp->sq_max_inline
				 : NULL;
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->send_flags;
		w->signaled = sig;
		w->len = len;
		w->inval_rkey = wr->invalidate_rkey;
		w->raddr = wr->rdma.remote_addr;
		w->rkey = wr->rdma.rkey;
		w->num_sge = wr->num_sge;
		w->in_orq = false;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
		/* INLINE is a hint (provider.h): taken up to the QP's
		 * max_inline_data. */
		if ((wr->send_flags & RPCRDMA_SEND_INLINE) && w->inl &&
		    len <= qp->sq_max_inline &&
		    (wr->opcode == RPCRDMA_WR_SEND ||
		     wr->opcode == RPCRDMA_WR_SEND_WITH_INV ||
		     wr->opcode == RPCRDMA_WR_RDMA_WRITE)) {
			size_t off = 0;
			for (int i = 0; i < wr->num_sge; i++) {
				memcpy(w->inl + off,
				       (const void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				off += wr->sg_list[i].length;
			}
		} else {
			w->flags &= ~(unsigned)RPCRDMA_SEND_INLINE;
		}
		if (wr->opcode == RPCRDMA_WR_BIND_MW) {
			struct rpcrdma_mw *mw = wr->bind_mw.mw;
			w->bind_mw = (struct iw_mw *)mw;
			w->bind_mr = wr->bind_mw.mr;
			w->bind_addr = wr->bind_mw.addr;
			w->bind_len = wr->bind_mw.length;
			w->bind_access = wr->bind_mw.access;
			/* provider.h: mw->rkey is updated at post. */
			w->bind_rkey = (mw->rkey & ~0xFFu) | wr->bind_mw.key;
			mw->rkey = w->bind_rkey;
		}
		qp->sq_count++;
	}
	if (rc && bad)
		*bad = wr;
	/* The poster's thread writes the socket, up to the pass's share. */
	rpcrdma_iwarp_tx_progress_locked(qp);
	iw_unlock(qp, &qp->tx_lock);
	return rc;
}

void rpcrdma_iwarp_sq_pop(struct iw_qp *qp)
{
	qp->sq_head = (qp->sq_head + 1) % qp->sq_cap;
	/* Empty: start again at the front (as the CQ does), so that the
	 * entries touched are as many as were ever in the queue at once,
	 * not all of a queue sized for the worst case. */
	if (!--qp->sq_count)
		qp->sq_head = 0;
}

/* room: TX stopped with room in the socket (its pass's share), not
 * because TCP pushed back. */
static void set_want_out(struct iw_qp *qp, bool on, bool room)
{
	room = on && room;
	/* Nearly always unchanged: no lock then. */
	if (atomic_load(&qp->want_out) == on && qp->out_room == room)
		return;
	pthread_mutex_lock(&qp->ep_lock);
	bool changed = qp->want_out != on || qp->out_room != room;
	qp->want_out = on;
	qp->out_room = room;
	/* The consumer sleeping on cq_fd wakes when there is room again,
	 * and its poll finds this QP ready.  The socket's registration is
	 * changed in the same section as want_out: two threads that change
	 * it one after the other (a serialized QP's consumer, and the
	 * thread that starts the QP, rpcrdma_iwarp_qp_start) then change
	 * the registration in that order too.  Outside it, the first one's
	 * EPOLLOUT, read before the second one cleared want_out, could land
	 * last: a socket with room keeps cq_fd readable, nothing is left to
	 * send, and the consumer's loop found cq_fd ready on every pass (a
	 * poll group at 80-100 % of a core while idle, in about one run of
	 * six of 4900 connections, docs/SCALE.md). */
	if (changed)
		rpcrdma_iwarp_cq_watch_out(qp);
	pthread_mutex_unlock(&qp->ep_lock);
	if (changed)
		rpcrdma_iwarp_qp_update_arm(qp);
}

/* An empty batch.  Its arrays change here only, when nothing points
 * into them (an iovec points at its FPDU's header): the small ones until
 * a batch found them full, the large ones from then on.  So a QP that
 * sends one message at a time keeps the endpoint's page only, and one
 * that has many ready at once sends them in one sendmsg, as before,
 * after a single batch of one FPDU. */
static void batch_reset(struct iw_tx *tx)
{
	tx->nf = tx->niov = tx->rf = tx->iovidx = 0;
	tx->bytes = tx->sent = 0;
	if (tx->large && tx->f != tx->f_large) {
		tx->f = tx->f_large;
		tx->iov = tx->iov_large;
		tx->f_cap = IW_TX_FPDUS;
		tx->iov_cap = IW_TX_IOV;
	}
}

static void msg_init(struct iw_qp *qp, bool tagged, uint8_t opcode,
		     enum iw_retire retire)
{
	struct iw_tx *tx = &qp->tx;
	memset(&tx->ddp, 0, sizeof(tx->ddp));
	tx->kind = IW_TX_MSG;
	tx->retire = (uint8_t)retire;
	tx->inl = false;
	tx->ddp.tagged = tagged;
	tx->ddp.dv = RPCRDMA_IWARP_DDP_VERSION;
	tx->ddp.rv = RPCRDMA_IWARP_RDMAP_VERSION;
	tx->ddp.opcode = opcode;
	tx->extra_len = 0;
	tx->src.nseg = 0;
	tx->src.off = 0;
	tx->total = tx->done = 0;
}

/* Local failure of the WR at the head of the SQ: error completion and the
 * QP goes down (verbs: a local protection error moves the QP to error). */
static void local_fail(struct iw_qp *qp, struct iw_swqe *w,
		       enum rpcrdma_wc_status st)
{
	rpcrdma_iwarp_complete(qp, true, w->wr_id, rpcrdma_iwarp_wc_op(w->opcode), st, 0, 0, 0, 0);
	rpcrdma_iwarp_sq_pop(qp);
	rpcrdma_iwarp_qp_error(qp, st);
}

/* Chooses the next message into qp->tx; false when nothing can go now. */
static bool pick(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	struct iw_dev *dev = qp->dev;
	struct iw_pd *pd = (struct iw_pd *)qp->base.pd;
	if (qp->rtr_pending) {
		/* RFC 6581 §9.2: zero-length RDMA Write as the RTR. */
		qp->rtr_pending = false;
		msg_init(qp, true, RPCRDMA_IWARP_OP_WRITE, IW_RET_NONE);
		return true;
	}
	/* A responder's TX is held until the initiator's first FPDU (RFC
	 * 5044 §7.1.2 rule 4); local operations at the head of the send
	 * queue put nothing on the wire and go on meanwhile. */
	if (qp->irq_count > qp->irq_built && !qp->tx_hold) {
		struct iw_irqe *e = &qp->irq[(qp->irq_head + qp->irq_built) % IW_MAX_RD];
		msg_init(qp, true, RPCRDMA_IWARP_OP_READ_RESP, IW_RET_IRQ);
		tx->ddp.stag = e->sink_stag;
		tx->ddp.to = e->sink_to;
		if (e->size) {
			tx->src.seg[0].iov_base = (void *)e->src;
			tx->src.seg[0].iov_len = e->size;
			tx->src.nseg = 1;
		}
		tx->total = e->size;
		qp->irq_built++;
		return true;
	}
	while (qp->sq_count > qp->sq_built && atomic_load(&qp->state) == IW_QP_RTS) {
		struct iw_swqe *w = &qp->sq[(qp->sq_head + qp->sq_built) % qp->sq_cap];
		/* Everything before it went out: only then may it act on
		 * local memory or fail the QP with a completion of its own. */
		bool alone = !qp->sq_built && !tx->nf;
		/* RFC 5040 §5.5 fence: wait until prior Reads completed. */
		if ((w->flags & RPCRDMA_SEND_FENCE) && qp->orq_count)
			return false;
		if (w->opcode == RPCRDMA_WR_LOCAL_INV) {
			if (!alone)
				return false;
			enum iw_access_err e = rpcrdma_iwarp_invalidate(dev, pd, w->inval_rkey, false);
			if (e != IW_MEM_OK) {
				local_fail(qp, w, RPCRDMA_WC_LOC_PROT_ERR);
				return false;
			}
			if (w->signaled)
				rpcrdma_iwarp_complete(qp, true, w->wr_id, RPCRDMA_WC_LOCAL_INV,
						       RPCRDMA_WC_SUCCESS, 0, 0, 0, 0);
			rpcrdma_iwarp_sq_pop(qp);
			continue;
		}
		if (w->opcode == RPCRDMA_WR_BIND_MW) {
			if (!alone)
				return false;
			if (rpcrdma_iwarp_bind_mw(dev, pd, w) != 0) {
				local_fail(qp, w, RPCRDMA_WC_MW_BIND_ERR);
				return false;
			}
			if (w->signaled)
				rpcrdma_iwarp_complete(qp, true, w->wr_id, RPCRDMA_WC_BIND_MW,
						       RPCRDMA_WC_SUCCESS, 0, 0, 0, 0);
			rpcrdma_iwarp_sq_pop(qp);
			continue;
		}
		if (qp->tx_hold)
			return false;
		if (w->opcode == RPCRDMA_WR_RDMA_READ) {
			/* Honour the negotiated ORD (RFC 6581 §9.1). */
			if (qp->orq_count >= qp->ord || qp->orq_count >= IW_MAX_RD)
				return false;
			struct iw_orqe *o = &qp->orq[(qp->orq_head + qp->orq_count) % IW_MAX_RD];
			struct iw_place pl;
			uint64_t tot;
			if (rpcrdma_iwarp_sge_resolve(dev, pd, w->sge, w->num_sge, true,
						      &pl, &tot, NULL) != 0) {
				if (alone)
					local_fail(qp, w, RPCRDMA_WC_LOC_PROT_ERR);
				return false;
			}
			o->wr_id = w->wr_id;
			o->len = w->len;
			o->signaled = w->signaled;
			o->got = 0;
			o->nseg = pl.nseg;
			memcpy(o->seg, pl.seg, sizeof(pl.seg));
			o->sink_stag = w->num_sge ? w->sge[0].lkey : 0;
			o->sink_to = w->num_sge ? w->sge[0].addr : 0;
			/* In the ORQ before any byte of the request leaves: the
			 * response may be read on another thread at once. */
			qp->orq_count++;
			w->in_orq = true;
			struct rpcrdma_iwarp_read_req rr = {
				.sink_stag = o->sink_stag,
				.sink_to = o->sink_to,
				.size = (uint32_t)w->len,
				.src_stag = w->rkey,
				.src_to = w->raddr,
			};
			msg_init(qp, false, RPCRDMA_IWARP_OP_READ_REQ, IW_RET_SQ_READ);
			tx->ddp.qn = RPCRDMA_IWARP_QN_READ_REQ;
			tx->msn = tx->ddp.msn = qp->tx_msn[RPCRDMA_IWARP_QN_READ_REQ]++;
			rpcrdma_iwarp_read_req_build(&rr, tx->extra, sizeof(tx->extra));
			tx->extra_len = RPCRDMA_IWARP_READ_REQ_LEN;
			qp->sq_built++;
			return true;
		}
		/* Send variants and RDMA Write. */
		bool is_write = w->opcode == RPCRDMA_WR_RDMA_WRITE;
		uint8_t op;
		if (is_write)
			op = RPCRDMA_IWARP_OP_WRITE;
		else if (w->opcode == RPCRDMA_WR_SEND_WITH_INV)
			op = (w->flags & RPCRDMA_SEND_SOLICITED) ? RPCRDMA_IWARP_OP_SEND_SE_INV
								 : RPCRDMA_IWARP_OP_SEND_INV;
		else
			op = (w->flags & RPCRDMA_SEND_SOLICITED) ? RPCRDMA_IWARP_OP_SEND_SE
								 : RPCRDMA_IWARP_OP_SEND;
		msg_init(qp, is_write, op, IW_RET_SQ);
		if (w->flags & RPCRDMA_SEND_INLINE) {
			tx->inl = true;
			if (w->len) {
				tx->src.seg[0].iov_base = w->inl;
				tx->src.seg[0].iov_len = w->len;
				tx->src.nseg = 1;
			}
		} else if (rpcrdma_iwarp_sge_resolve(dev, pd, w->sge, w->num_sge, false,
						     &tx->src, NULL, &qp->tx_lkc) != 0) {
			tx->kind = IW_TX_NONE;
			if (alone)
				local_fail(qp, w, RPCRDMA_WC_LOC_PROT_ERR);
			return false;
		}
		tx->total = w->len;
		if (is_write) {
			tx->ddp.stag = w->rkey;
			tx->ddp.to = w->raddr;
		} else {
			tx->ddp.qn = RPCRDMA_IWARP_QN_SEND;
			tx->msn = tx->ddp.msn = qp->tx_msn[RPCRDMA_IWARP_QN_SEND]++;
			if (w->opcode == RPCRDMA_WR_SEND_WITH_INV)
				tx->ddp.inval_stag = w->inval_rkey;
		}
		qp->sq_built++;
		return true;
	}
	return false;
}

/* Appends the next FPDU of the current message to the batch; false when
 * the batch has no room for it. */
static bool add_fpdu(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	size_t hl = rpcrdma_iwarp_ddp_hlen(tx->ddp.tagged);
	/* FPDU sized from the path (RFC 5044 §8.1 MULPDU), never over the
	 * 16-bit ULPDU_Length. */
	size_t room = qp->mulpdu - hl - tx->extra_len;
	uint64_t chunk = tx->total - tx->done;
	if (chunk > room)
		chunk = room;
	size_t ulpdu = hl + tx->extra_len + chunk;
	size_t wire = rpcrdma_iwarp_fpdu_size(ulpdu);
	if (tx->nf) {
		/* A large FPDU goes alone, as one went before it: batching
		 * saves nothing there, and on loopback a large sendmsg
		 * costs more than several (the receiver's copy no longer
		 * finds the data in cache). */
		size_t pos = tx->bytes % qp->emss;
		uint32_t prev = tx->nf > 1 ? tx->f[tx->nf - 2].end : 0;
		if (tx->bytes + wire > IW_TX_BYTES || wire >= IW_BULK_FPDU ||
		    tx->f[tx->nf - 1].end - prev >= IW_BULK_FPDU ||
		    (pos && pos + wire > qp->emss))
			return false;
		if (tx->nf == tx->f_cap ||
		    tx->niov + 2 + tx->src.nseg > tx->iov_cap) {
			/* Full for its arrays alone: the large ones next. */
			tx->large = true;
			return false;
		}
	}
	/* The first FPDU of a batch always fits: its header, a piece of
	 * each SGE and its trailer. */
	_Static_assert(IW_TX_IOV_SMALL >= 2 + IW_MAX_SGE,
		       "a small batch holds one FPDU of any WR");
	struct iw_txf *f = &tx->f[tx->nf];
	struct rpcrdma_iwarp_ddp_hdr h = tx->ddp;
	if (h.tagged)
		h.to = tx->ddp.to + tx->done;
	else
		h.mo = (uint32_t)tx->done;
	h.last = tx->done + chunk == tx->total;
	f->hdr[0] = (uint8_t)(ulpdu >> 8);
	f->hdr[1] = (uint8_t)ulpdu;
	rpcrdma_iwarp_ddp_build(&h, f->hdr + 2, sizeof(f->hdr) - 2);
	if (tx->extra_len)
		memcpy(f->hdr + 2 + hl, tx->extra, tx->extra_len);
	struct iovec *iov = tx->iov + tx->niov;
	int n = 0;
	iov[n].iov_base = f->hdr;
	iov[n].iov_len = 2 + hl + tx->extra_len;
	n++;
	uint32_t crc = 0;
	if (qp->crc)
		crc = rpcrdma_crc32c_update(rpcrdma_crc32c_init(), f->hdr,
					    iov[0].iov_len);
	/* Walk the source scatter list from offset tx->done. */
	uint64_t skip = tx->done, want = chunk;
	for (int i = 0; i < tx->src.nseg && want; i++) {
		uint64_t sl = tx->src.seg[i].iov_len;
		if (skip >= sl) {
			skip -= sl;
			continue;
		}
		uint64_t take = sl - skip;
		if (take > want)
			take = want;
		iov[n].iov_base = (uint8_t *)tx->src.seg[i].iov_base + skip;
		iov[n].iov_len = take;
		if (qp->crc)
			crc = rpcrdma_crc32c_update(crc, iov[n].iov_base, take);
		n++;
		want -= take;
		skip = 0;
	}
	iov[n].iov_base = f->trailer;
	iov[n].iov_len = rpcrdma_iwarp_fpdu_trailer(crc, ulpdu, qp->crc, f->trailer);
	n++;
	tx->niov += n;
	tx->bytes += wire;
	f->iov_end = (uint16_t)tx->niov;
	f->end = (uint32_t)tx->bytes;
	f->payload = (uint32_t)chunk;
	f->inl = tx->inl;
	f->retire = h.last ? tx->retire : IW_RET_NONE;
	f->tagged = tx->ddp.tagged;
	f->stag = tx->ddp.stag;
	f->msn = tx->msn;
	tx->nf++;
	tx->done += chunk;
	if (h.last)
		tx->kind = IW_TX_NONE; /* whole message in the batch */
	return true;
}

/* Fills the batch with the FPDUs of whatever messages are ready. */
static void fill(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	while (atomic_load(&qp->state) == IW_QP_RTS) {
		if (tx->kind == IW_TX_NONE && !pick(qp))
			return;
		if (!add_fpdu(qp))
			return;
	}
}

static void hist_add(struct iw_qp *qp, const struct iw_swqe *w,
		     const struct iw_txf *f)
{
	struct iw_hist *h = &qp->hist[qp->hist_n++ % IW_HIST];
	h->wr_id = w->wr_id;
	h->op = rpcrdma_iwarp_wc_op(w->opcode);
	h->tagged = f->tagged;
	h->signaled = w->signaled;
	h->stag = f->stag;
	h->msn = f->msn;
}

/* An FPDU is all in TCP's hands: count it, finish what it finishes. */
static void retire(struct iw_qp *qp, const struct iw_txf *f)
{
	iw_ctr_add(&qp->ctr.tx, f->payload);
	if (f->inl)
		iw_ctr_add(&qp->ctr.tx_copied, f->payload);
	switch (f->retire) {
	case IW_RET_SQ:
		if (qp->sq_count) {
			struct iw_swqe *w = &qp->sq[qp->sq_head];
			hist_add(qp, w, f);
			if (w->signaled)
				rpcrdma_iwarp_complete(qp, true, w->wr_id, rpcrdma_iwarp_wc_op(w->opcode),
						       RPCRDMA_WC_SUCCESS, (uint32_t)w->len,
						       0, 0, 0);
			rpcrdma_iwarp_sq_pop(qp);
			qp->sq_built--;
		}
		break;
	case IW_RET_SQ_READ:
		if (qp->sq_count) {
			rpcrdma_iwarp_sq_pop(qp);
			qp->sq_built--;
		}
		break;
	case IW_RET_IRQ:
		if (qp->irq_count) {
			qp->irq_head = (qp->irq_head + 1) % IW_MAX_RD;
			qp->irq_count--;
			qp->irq_built--;
		}
		break;
	default:
		break;
	}
}

/* Sends the rest of the batch up to iovec `upto`; returns 1 done, 0 would
 * block, negative on a socket error. */
static int push_upto(struct iw_qp *qp, int upto)
{
	struct iw_tx *tx = &qp->tx;
	while (tx->iovidx < upto) {
		struct msghdr m = {
			.msg_iov = tx->iov + tx->iovidx,
			.msg_iovlen = (size_t)(upto - tx->iovidx),
		};
		ssize_t n = rpcrdma_sendmsg_nocancel(qp->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return RPCRDMA_ERR_DISCONNECTED;
		}
		size_t left = (size_t)n;
		tx->sent += left;
		while (left && tx->iovidx < upto) {
			struct iovec *v = &tx->iov[tx->iovidx];
			if (left >= v->iov_len) {
				left -= v->iov_len;
				tx->iovidx++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + left;
				v->iov_len -= left;
				left = 0;
			}
		}
		while (tx->rf < tx->nf && tx->f[tx->rf].end <= tx->sent)
			retire(qp, &tx->f[tx->rf++]);
	}
	return 1;
}

void rpcrdma_iwarp_tx_progress(struct iw_qp *qp)
{
	iw_lock(qp, &qp->tx_lock);
	qp->tx.pass_sent = 0; /* a new pass: its own share */
	rpcrdma_iwarp_tx_progress_locked(qp);
	iw_unlock(qp, &qp->tx_lock);
}

void rpcrdma_iwarp_tx_more(struct iw_qp *qp)
{
	iw_lock(qp, &qp->tx_lock);
	rpcrdma_iwarp_tx_progress_locked(qp);
	iw_unlock(qp, &qp->tx_lock);
}

void rpcrdma_iwarp_tx_want_out(struct iw_qp *qp)
{
	set_want_out(qp, true, false);
}

void rpcrdma_iwarp_tx_progress_locked(struct iw_qp *qp)
{
	struct iw_tx *tx = &qp->tx;
	while (qp->created && atomic_load(&qp->state) == IW_QP_RTS &&
	       !qp->tx_stopped) {
		if (tx->iovidx == tx->niov) {
			tx->pass_sent += tx->sent;
			batch_reset(tx);
			fill(qp);
			if (!tx->nf) {
				tx->pass_sent = 0; /* idle: nothing owed */
				break;
			}
			if (tx->pass_sent >= IW_TX_PASS) {
				/* This pass has had its share: the batch just
				 * built waits, and want_out brings the next
				 * pass (the consumer's poll, woken by cq_fd,
				 * or the progress thread).  The socket has
				 * room, so that is at once, after whatever
				 * else the caller has to do. */
				set_want_out(qp, true, true);
				return;
			}
		}
		int r = push_upto(qp, tx->niov);
		if (r == 0) {
			set_want_out(qp, true, false);
			return;
		}
		if (r < 0) {
			rpcrdma_iwarp_qp_error(qp, RPCRDMA_WC_WR_FLUSH_ERR);
			break;
		}
	}
	if (qp->created && atomic_load(&qp->state) == IW_QP_RTS)
		set_want_out(qp, false, false);
}

void rpcrdma_iwarp_tx_flush(struct iw_qp *qp, const struct rpcrdma_terminate_info *t)
{
	(void)t;
	if (!qp->created)
		return;
	while (qp->sq_count) {
		struct iw_swqe *w = &qp->sq[qp->sq_head];
		/* A Read already in the ORQ is flushed from there. */
		if (!w->in_orq)
			rpcrdma_iwarp_complete(qp, true, w->wr_id, rpcrdma_iwarp_wc_op(w->opcode),
					       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
		rpcrdma_iwarp_sq_pop(qp);
	}
	while (qp->orq_count) {
		struct iw_orqe *o = &qp->orq[qp->orq_head];
		rpcrdma_iwarp_complete(qp, true, o->wr_id, RPCRDMA_WC_RDMA_READ,
				       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
		qp->orq_head = (qp->orq_head + 1) % IW_MAX_RD;
		qp->orq_count--;
	}
	qp->irq_count = 0;
	qp->sq_built = qp->irq_built = 0;
	qp->tx.kind = IW_TX_NONE;
	batch_reset(&qp->tx);
}

/* Blocking (bounded) write up to iovec `upto`: used only for the
 * Terminate, which must follow the FPDU in flight and precede the
 * close. */
static int push_wait(struct iw_qp *qp, int upto)
{
	for (int tries = 0; tries < 100; tries++) {
		int r = push_upto(qp, upto);
		if (r != 0)
			return r < 0 ? r : 0;
		struct pollfd p = { .fd = qp->fd, .events = POLLOUT };
		poll(&p, 1, 10);
	}
	return RPCRDMA_ERR_TIMEOUT;
}

int rpcrdma_iwarp_tx_raw(struct iw_qp *qp, const struct rpcrdma_iwarp_ddp_hdr *h,
			 const void *payload, size_t len)
{
	struct iw_tx *tx = &qp->tx;
	/* Nothing more after this frame: the QP is going to error. */
	qp->tx_stopped = true;
	if (tx->rf < tx->nf) {
		/* TCP may hold part of an FPDU of the batch: finish that one
		 * (the stream must stay framed), drop the rest; their WRs are
		 * flushed. */
		uint32_t start = tx->rf ? tx->f[tx->rf - 1].end : 0;
		if (tx->sent > start &&
		    push_wait(qp, tx->f[tx->rf].iov_end) != 0)
			return RPCRDMA_ERR_DISCONNECTED;
	}
	batch_reset(tx);
	tx->kind = IW_TX_NONE;
	uint8_t ulpdu[RPCRDMA_IWARP_DDP_UNTAGGED_HLEN + RPCRDMA_IWARP_TERM_MAX_LEN];
	int hl = rpcrdma_iwarp_ddp_build(h, ulpdu, sizeof(ulpdu));
	if (hl < 0 || len > sizeof(ulpdu) - (size_t)hl)
		return RPCRDMA_ERR_INVAL;
	memcpy(ulpdu + hl, payload, len);
	uint8_t frame[sizeof(ulpdu) + 12];
	int fl = rpcrdma_iwarp_fpdu_build(ulpdu, (size_t)hl + len, qp->crc, frame,
					  sizeof(frame));
	if (fl < 0)
		return fl;
	tx->iov[0].iov_base = frame;
	tx->iov[0].iov_len = (size_t)fl;
	tx->niov = 1;
	int r = push_wait(qp, 1);
	batch_reset(tx);
	return r;
}
