/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RX engine: MPA FPDUs -> DDP segments -> RDMAP messages, with direct
 * placement.
 *
 * State machine (all under qp->rx_lock):
 *   HDR      collect ULPDU_Length + DDP header (+ Read Request header, or
 *            the whole Terminate); validate it completely -- STag, PD,
 *            access, bounds, MSN, MO, receive buffer -- BEFORE any byte of
 *            payload is placed (RFC 5040 §8, RFC 5041 §7): a violation
 *            sends a Terminate and touches no memory.  A Send's receive
 *            is taken when its first segment is: from the QP's queue or
 *            its shared receive queue (iwarp_srq.c).
 *   PAYLOAD  receive straight from the socket into the target buffer (the
 *            tagged region, the posted receive, or the Read's sink), or
 *            copy there what a staging read already holds; never into an
 *            intermediate whole-message buffer.
 *   TRAILER  pad + CRC; verify (RFC 5044 §4.4), then act on the segment:
 *            complete a receive/Read, queue a Read Response, process a
 *            Terminate.
 *   DEAD     the QP failed; input is ignored.
 *
 * Reading the socket.  Two kinds of read, chosen before each recv:
 *  - direct: in PAYLOAD with nothing staged, one recvmsg whose iovec is
 *    [the rest of the payload, in place | this FPDU's pad + CRC | the
 *    first IW_PEEK bytes of the next FPDU], the last two into the staging
 *    buffer (when RX is not careful, see below: the whole staging buffer
 *    instead).  IW_PEEK is exactly a tagged FPDU's length and DDP
 *    header, and no FPDU is shorter, so no byte of the next FPDU's
 *    payload is read before its header is validated: a stream of tagged
 *    FPDUs (a large RDMA Write or Read Response, or several back to back)
 *    is placed with no copy at all, one recvmsg per FPDU.
 *  - staged: a recv into the staging buffer, whose FPDUs are then taken
 *    apart in place (headers, trailers) and whose payload bytes are
 *    copied to their target.  Normally it asks for IW_RXBUF bytes, so a
 *    burst of small FPDUs costs one recv.  RX is careful while it
 *    receives an FPDU of IW_BULK_FPDU bytes or more and for the next
 *    IW_CALM_FPDUS FPDUs after one: a staged read then never goes more
 *    than IW_PEEK bytes past the end of the FPDU it is in (or, between
 *    FPDUs, asks for IW_PEEK bytes), and a payload is always received
 *    directly.  So the next large message after a large one is not read
 *    into staging either.
 * What remains copied: payload that a normal staged read already held,
 * i.e. FPDUs under IW_BULK_FPDU bytes (a recv per FPDU would cost more
 * than the copy: a 1448-byte MSS, a --max-fpdu below 8 KiB, 4 KiB
 * Writes), and at most IW_RXBUF - IW_PEEK bytes of the first FPDU of a
 * large message that arrives after IW_CALM_FPDUS small ones (or first on
 * the connection).  struct iw_ctr counts every byte placed and copied.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "common/pages.h"
#include "common/thread_key.h"
#include "provider/iwarp/iwarp.h"
#include "wire/crc32c.h"

/*
 * The staging buffer.  A pass (rpcrdma_iwarp_rx_progress_locked) takes
 * apart everything it reads before it returns: an FPDU cut short by the
 * end of a read leaves its header bytes in rx->hdr and its trailer bytes
 * in rx->trailer, and its payload is placed as it comes, so nothing
 * stays staged from one pass to the next (only a QP that failed drops
 * what it had read).  So the thread running the pass lends it one buffer
 * for all the QPs it runs, instead of each QP keeping IW_RXBUF bytes of
 * its own: an idle connection held the page its first message was read
 * into (docs/SCALE.md, "Idle connections hold what they touched"), and a
 * busy thread reads every connection's messages into pages that stay in
 * its caches.  The buffer is made at the thread's first pass and goes
 * with the thread.  A thread that cannot have one (no memory, or no
 * pthread key left in the process, common/thread_key.h), or a pass
 * that would find it in use (none can: a pass calls nothing that runs
 * another), stages through IW_RXBUF_LOW bytes of its stack: smaller
 * reads, nothing lost.
 */
static _Thread_local uint8_t *scratch;
static _Thread_local bool scratch_busy;

/* At the thread's exit, which may still run passes after this (another
 * key's destructor closing a connection): such a pass makes a new
 * buffer, and the key frees that one in turn. */
static void scratch_free(void *p)
{
	if (scratch == p)
		scratch = NULL;
	rpcrdma_pages_free(p, IW_RXBUF);
}

static struct rpcrdma_thread_key scratch_key =
	RPCRDMA_THREAD_KEY_INIT(scratch_free);

/* The thread's buffer into rx, or false (the caller lends its stack). */
static bool scratch_take(struct iw_rx *rx)
{
	if (scratch_busy)
		return false;
	if (!scratch) {
		if (!rpcrdma_thread_key_usable(&scratch_key))
			return false;
		uint8_t *b = rpcrdma_pages_alloc(IW_RXBUF);
		if (!b)
			return false;
		if (!rpcrdma_thread_key_set(&scratch_key, b)) {
			rpcrdma_pages_free(b, IW_RXBUF);
			return false;
		}
		scratch = b;
	}
	scratch_busy = true;
	rx->buf = scratch;
	rx->cap = IW_RXBUF;
	return true;
}

void rpcrdma_iwarp_rx_init(struct iw_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
	rx->recv.sge = rx->recv_sge;
	rx->st = IW_RX_HDR;
	rx->need = 4;
	rx->calm = IW_CALM_FPDUS;
	for (int i = 0; i < 3; i++)
		rx->msn[i] = 1;
}

static void hdr_reset(struct iw_rx *rx)
{
	rx->st = IW_RX_HDR;
	rx->have = 0;
	rx->need = 4; /* ULPDU_Length + DDP/RDMAP control bytes */
	rx->pl = IW_PL_NONE;
}

static void term(struct iw_qp *qp, uint8_t layer, uint8_t etype, uint8_t ecode,
		 bool rdma_hdr)
{
	struct iw_rx *rx = &qp->rx;
	rpcrdma_iwarp_qp_terminate(qp, layer, etype, ecode, rx->hdr, rx->have,
				   rdma_hdr);
	rx->st = IW_RX_DEAD;
}

static uint8_t ddp_tagged_code(enum iw_access_err e)
{
	switch (e) {
	case IW_MEM_BOUNDS:
		return RPCRDMA_IWARP_DDP_EC_T_BOUNDS;
	case IW_MEM_PD:
		return RPCRDMA_IWARP_DDP_EC_T_NOT_ASSOC;
	case IW_MEM_TO_WRAP:
		return RPCRDMA_IWARP_DDP_EC_T_TO_WRAP;
	default:
		/* RFC 5041 has no "access rights" code for tagged buffers;
		 * like siw, report an invalid STag. */
		return RPCRDMA_IWARP_DDP_EC_T_INV_STAG;
	}
}

static uint8_t rdmap_prot_code(enum iw_access_err e)
{
	switch (e) {
	case IW_MEM_BOUNDS:
		return RPCRDMA_IWARP_RDMAP_EC_BOUNDS;
	case IW_MEM_ACCESS:
		return RPCRDMA_IWARP_RDMAP_EC_ACCESS;
	case IW_MEM_PD:
		return RPCRDMA_IWARP_RDMAP_EC_NOT_ASSOC;
	case IW_MEM_TO_WRAP:
		return RPCRDMA_IWARP_RDMAP_EC_TO_WRAP;
	default:
		return RPCRDMA_IWARP_RDMAP_EC_INV_STAG;
	}
}

/* How a peer's Terminate shows up in the refused WR's completion. */
static enum rpcrdma_wc_status term_status(uint8_t layer, uint8_t etype,
					  uint8_t ecode)
{
	if (layer == RPCRDMA_IWARP_LAYER_RDMAP && etype == RPCRDMA_IWARP_RDMAP_ET_PROT)
		return RPCRDMA_WC_REM_ACCESS_ERR;
	if (layer == RPCRDMA_IWARP_LAYER_DDP && etype == RPCRDMA_IWARP_DDP_ET_TAGGED)
		return RPCRDMA_WC_REM_ACCESS_ERR;
	if (layer == RPCRDMA_IWARP_LAYER_DDP && etype == RPCRDMA_IWARP_DDP_ET_UNTAGGED) {
		if (ecode == RPCRDMA_IWARP_DDP_EC_U_NO_BUF)
			return RPCRDMA_WC_RNR_RETRY_EXC_ERR;
		return RPCRDMA_WC_REM_INV_REQ_ERR;
	}
	return RPCRDMA_WC_REM_OP_ERR;
}

static size_t payload_len(const struct iw_rx *rx)
{
	size_t hl = rpcrdma_iwarp_ddp_hlen(rx->ddp.tagged);
	return rx->ulpdu_len - hl;
}

/* Takes the oldest receive of the QP's own queue into *out. */
static bool rq_take(struct iw_qp *qp, struct iw_rwqe *out)
{
	iw_lock(qp, &qp->rq_lock);
	bool have = qp->rq_count > 0;
	if (have) {
		/* The SGEs in use only, into the RX's own room. */
		const struct iw_rwqe *q = &qp->rq[qp->rq_head];
		out->wr_id = q->wr_id;
		out->num_sge = q->num_sge;
		memcpy(out->sge, q->sge, (size_t)q->num_sge * sizeof(q->sge[0]));
		qp->rq_head = (qp->rq_head + 1) % qp->rq_cap;
		qp->rq_count--;
	}
	iw_unlock(qp, &qp->rq_lock);
	return have;
}

/* Validates the complete header and chooses where the payload goes.
 * Returns false if the QP was terminated. */
static bool start_segment(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	struct rpcrdma_iwarp_ddp_hdr *h = &rx->ddp;
	struct iw_pd *pd = (struct iw_pd *)qp->base.pd;
	uint64_t plen = payload_len(rx);
	rx->left = 0;
	rx->pl = IW_PL_NONE;
	if (h->tagged && h->opcode == RPCRDMA_IWARP_OP_WRITE) {
		/* A zero-length Write (e.g. the RFC 6581 RTR) names no
		 * memory, so there is nothing to validate. */
		if (plen) {
			enum iw_access_err e = rpcrdma_iwarp_mem_check(
				qp->dev, pd, h->stag, h->to, plen,
				RPCRDMA_ACCESS_REMOTE_WRITE, false);
			if (e != IW_MEM_OK) {
				term(qp, RPCRDMA_IWARP_LAYER_DDP,
				     RPCRDMA_IWARP_DDP_ET_TAGGED, ddp_tagged_code(e), false);
				return false;
			}
			rx->pl = IW_PL_TAGGED;
			rx->dst = (uint8_t *)(uintptr_t)h->to;
		}
		rx->left = plen;
		return true;
	}
	if (h->tagged) { /* Read Response: must answer our oldest Read */
		iw_lock(qp, &qp->tx_lock);
		if (!qp->orq_count) {
			iw_unlock(qp, &qp->tx_lock);
			term(qp, RPCRDMA_IWARP_LAYER_RDMAP, RPCRDMA_IWARP_RDMAP_ET_OP,
			     RPCRDMA_IWARP_RDMAP_EC_BAD_OPCODE, false);
			return false;
		}
		struct iw_orqe *o = &qp->orq[qp->orq_head];
		bool bad_stag = h->stag != o->sink_stag;
		uint64_t off = h->to - o->sink_to;
		bool bad_bounds = h->to < o->sink_to || off != o->got ||
				  plen > o->len - o->got;
		if (!bad_stag && !bad_bounds) {
			rx->place.nseg = o->nseg;
			memcpy(rx->place.seg, o->seg, sizeof(o->seg));
			rx->place.off = off;
		}
		iw_unlock(qp, &qp->tx_lock);
		if (bad_stag || bad_bounds) {
			term(qp, RPCRDMA_IWARP_LAYER_DDP, RPCRDMA_IWARP_DDP_ET_TAGGED,
			     bad_stag ? RPCRDMA_IWARP_DDP_EC_T_INV_STAG
				      : RPCRDMA_IWARP_DDP_EC_T_BOUNDS, false);
			return false;
		}
		rx->pl = IW_PL_RRESP;
		rx->left = plen;
		return true;
	}
	/* Untagged: RFC 5041 §5.1 MSN sequencing per queue. */
	if (h->msn != rx->msn[h->qn]) {
		term(qp, RPCRDMA_IWARP_LAYER_DDP, RPCRDMA_IWARP_DDP_ET_UNTAGGED,
		     RPCRDMA_IWARP_DDP_EC_U_MSN_RANGE, false);
		return false;
	}
	if (h->qn == RPCRDMA_IWARP_QN_SEND) {
		if (!rx->recv_active) {
			if (h->mo != 0) {
				term(qp, RPCRDMA_IWARP_LAYER_DDP,
				     RPCRDMA_IWARP_DDP_ET_UNTAGGED,
				     RPCRDMA_IWARP_DDP_EC_U_INV_MO, false);
				return false;
			}
			/* The message's receive: the oldest posted, of the
			 * QP or of its shared receive queue (then validated
			 * against the SRQ's PD: provider.h). */
			bool have = qp->srq ? rpcrdma_iwarp_srq_take(qp->srq, &rx->recv)
					    : rq_take(qp, &rx->recv);
			if (!have) {
				/* No RNR retry in iWARP: fatal (RFC 5041 §7.2). */
				term(qp, RPCRDMA_IWARP_LAYER_DDP,
				     RPCRDMA_IWARP_DDP_ET_UNTAGGED,
				     RPCRDMA_IWARP_DDP_EC_U_NO_BUF, false);
				return false;
			}
			rx->recv_active = true;
			rx->recv_got = 0;
			struct iw_pd *rpd = qp->srq ? (struct iw_pd *)qp->srq->base.pd : pd;
			if (rpcrdma_iwarp_sge_resolve(qp->dev, rpd, rx->recv.sge,
						      rx->recv.num_sge, true,
						      &rx->place, &rx->recv_cap,
						      &qp->rx_lkc) != 0) {
				rx->recv_active = false;
				rpcrdma_iwarp_complete(qp, false, rx->recv.wr_id,
						       RPCRDMA_WC_RECV,
						       RPCRDMA_WC_LOC_PROT_ERR, 0, 0, 0, 0);
				term(qp, RPCRDMA_IWARP_LAYER_RDMAP,
				     RPCRDMA_IWARP_RDMAP_ET_CATASTROPHIC, 0, false);
				return false;
			}
		}
		if (h->mo != rx->recv_got) {
			term(qp, RPCRDMA_IWARP_LAYER_DDP, RPCRDMA_IWARP_DDP_ET_UNTAGGED,
			     RPCRDMA_IWARP_DDP_EC_U_INV_MO, false);
			return false;
		}
		if (plen > rx->recv_cap - rx->recv_got) {
			rx->recv_active = false;
			rpcrdma_iwarp_complete(qp, false, rx->recv.wr_id, RPCRDMA_WC_RECV,
					       RPCRDMA_WC_LOC_LEN_ERR, 0, 0, 0, 0);
			term(qp, RPCRDMA_IWARP_LAYER_DDP, RPCRDMA_IWARP_DDP_ET_UNTAGGED,
			     RPCRDMA_IWARP_DDP_EC_U_TOO_LONG, false);
			return false;
		}
		rx->place.off = h->mo;
		rx->pl = IW_PL_RECV;
		rx->left = plen;
		return true;
	}
	if (h->qn == RPCRDMA_IWARP_QN_READ_REQ) {
		struct rpcrdma_iwarp_read_req rr;
		size_t hl = RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
		rpcrdma_iwarp_read_req_parse(rx->hdr + 2 + hl, rx->have - 2 - hl, &rr);
		iw_lock(qp, &qp->tx_lock);
		bool full = qp->irq_count >= qp->ird || qp->irq_count >= IW_MAX_RD;
		iw_unlock(qp, &qp->tx_lock);
		if (full) {
			/* Peer exceeded the IRD it was given (RFC 6581 §9.1). */
			term(qp, RPCRDMA_IWARP_LAYER_DDP, RPCRDMA_IWARP_DDP_ET_UNTAGGED,
			     RPCRDMA_IWARP_DDP_EC_U_NO_BUF, false);
			return false;
		}
		if (rr.size) {
			enum iw_access_err e = rpcrdma_iwarp_mem_check(
				qp->dev, pd, rr.src_stag, rr.src_to, rr.size,
				RPCRDMA_ACCESS_REMOTE_READ, false);
			if (e != IW_MEM_OK) {
				term(qp, RPCRDMA_IWARP_LAYER_RDMAP,
				     RPCRDMA_IWARP_RDMAP_ET_PROT, rdmap_prot_code(e), true);
				return false;
			}
		}
		return true;
	}
	return true; /* Terminate: all of it is in rx->hdr */
}

static void complete_read(struct iw_qp *qp, struct iw_orqe *o,
			  enum rpcrdma_wc_status st, uint32_t vendor)
{
	if (st != RPCRDMA_WC_SUCCESS || o->signaled)
		rpcrdma_iwarp_complete(qp, true, o->wr_id, RPCRDMA_WC_RDMA_READ, st,
				       st == RPCRDMA_WC_SUCCESS ? (uint32_t)o->got : 0,
				       0, 0, vendor);
	qp->orq_head = (qp->orq_head + 1) % IW_MAX_RD;
	qp->orq_count--;
}

static void got_terminate(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	size_t hl = RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
	struct rpcrdma_iwarp_term t;
	if (rpcrdma_iwarp_term_parse(rx->hdr + 2 + hl, rx->ulpdu_len - hl, &t) < 0)
		memset(&t, 0, sizeof(t));
	enum rpcrdma_wc_status st = term_status(t.layer, t.etype, t.ecode);
	uint32_t vendor = (uint32_t)t.layer << 12 | (uint32_t)t.etype << 8 | t.ecode;
	iw_lock(qp, &qp->tx_lock);
	qp->term.valid = true;
	qp->term.sent = false;
	qp->term.layer = t.layer;
	qp->term.etype = t.etype;
	qp->term.ecode = t.ecode;
	/* Give the refused request an error completion carrying the
	 * Terminate.  iWARP has no ACKs: a Send or Write completed when TCP
	 * took it, so if it was signaled it already reported SUCCESS and may
	 * not complete twice; then the oldest WR still outstanding carries
	 * the error instead of a plain flush. */
	struct rpcrdma_iwarp_ddp_hdr th;
	bool matched = false;
	if (t.d && rpcrdma_iwarp_ddp_parse(t.ddp_hdr, t.ddp_hdr_len, &th) > 0) {
		if (!th.tagged && th.qn == RPCRDMA_IWARP_QN_READ_REQ && qp->orq_count) {
			complete_read(qp, &qp->orq[qp->orq_head], st, vendor);
			matched = true;
		} else if (!(th.tagged && th.opcode == RPCRDMA_IWARP_OP_READ_RESP)) {
			uint32_t n = qp->hist_n < IW_HIST ? qp->hist_n : IW_HIST;
			for (uint32_t i = 1; i <= n; i++) {
				struct iw_hist *e = &qp->hist[(qp->hist_n - i) % IW_HIST];
				if (e->tagged != th.tagged)
					continue;
				if (th.tagged ? e->stag == th.stag
					      : (th.qn == RPCRDMA_IWARP_QN_SEND &&
						 e->msn == th.msn)) {
					if (!e->signaled) {
						rpcrdma_iwarp_complete(qp, true, e->wr_id,
								       e->op, st, 0, 0,
								       0, vendor);
						matched = true;
					}
					break;
				}
			}
		}
	}
	if (!matched && qp->orq_count) {
		complete_read(qp, &qp->orq[qp->orq_head], st, vendor);
	} else if (!matched && qp->sq_count) {
		struct iw_swqe *w = &qp->sq[qp->sq_head];
		if (!w->in_orq)
			rpcrdma_iwarp_complete(qp, true, w->wr_id,
					       rpcrdma_iwarp_wc_op(w->opcode), st,
					       0, 0, 0, vendor);
		rpcrdma_iwarp_sq_pop(qp);
	}
	/* Nothing more goes out (the batch in flight may name the WR just
	 * completed); the flush below takes the rest. */
	qp->tx_stopped = true;
	iw_unlock(qp, &qp->tx_lock);
	/* RFC 5040 §6.9: after a Terminate the stream is closed; it is never
	 * answered with another Terminate. */
	rx->st = IW_RX_DEAD;
	rpcrdma_iwarp_qp_error(qp, st);
}

/* Acts on a segment whose CRC checked. Returns false if the QP failed. */
static bool segment_done(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	struct rpcrdma_iwarp_ddp_hdr *h = &rx->ddp;
	if (!rx->first_seen) {
		rx->first_seen = true;
		iw_lock(qp, &qp->tx_lock);
		bool held = qp->tx_hold;
		qp->tx_hold = false;
		iw_unlock(qp, &qp->tx_lock);
		if (held)
			rx->kick_tx = true;
	}
	uint64_t plen = payload_len(rx);
	if (h->tagged && h->opcode == RPCRDMA_IWARP_OP_READ_RESP) {
		iw_lock(qp, &qp->tx_lock);
		bool more = false;
		if (qp->orq_count) {
			struct iw_orqe *o = &qp->orq[qp->orq_head];
			o->got += plen;
			if (h->last) {
				complete_read(qp, o, RPCRDMA_WC_SUCCESS, 0);
				more = qp->sq_count > 0;
			}
		}
		iw_unlock(qp, &qp->tx_lock);
		if (more) /* ORD slot or fence released */
			rx->kick_tx = true;
		return true;
	}
	if (h->tagged)
		return true; /* RDMA Write: placed; no completion at target */
	if (h->qn == RPCRDMA_IWARP_QN_SEND) {
		rx->recv_got += plen;
		if (!h->last)
			return true;
		rx->msn[RPCRDMA_IWARP_QN_SEND]++;
		unsigned flags = 0;
		uint32_t inv = 0;
		if (h->opcode == RPCRDMA_IWARP_OP_SEND_SE ||
		    h->opcode == RPCRDMA_IWARP_OP_SEND_SE_INV)
			flags |= RPCRDMA_WC_SOLICITED;
		if (h->opcode == RPCRDMA_IWARP_OP_SEND_INV ||
		    h->opcode == RPCRDMA_IWARP_OP_SEND_SE_INV) {
			/* RFC 5040 §5.3: invalidate before the receive
			 * completes; a bad STag is a protection error. */
			enum iw_access_err e = rpcrdma_iwarp_invalidate(
				qp->dev, (struct iw_pd *)qp->base.pd, h->inval_stag, true);
			if (e != IW_MEM_OK) {
				term(qp, RPCRDMA_IWARP_LAYER_RDMAP,
				     RPCRDMA_IWARP_RDMAP_ET_PROT,
				     e == IW_MEM_ACCESS ? RPCRDMA_IWARP_RDMAP_EC_CANT_INVALIDATE
							: rdmap_prot_code(e), false);
				return false;
			}
			flags |= RPCRDMA_WC_WITH_INV;
			inv = h->inval_stag;
		}
		rx->recv_active = false;
		rpcrdma_iwarp_complete(qp, false, rx->recv.wr_id, RPCRDMA_WC_RECV,
				       RPCRDMA_WC_SUCCESS, (uint32_t)rx->recv_got,
				       flags, inv, 0);
		return true;
	}
	if (h->qn == RPCRDMA_IWARP_QN_READ_REQ) {
		rx->msn[RPCRDMA_IWARP_QN_READ_REQ]++;
		struct rpcrdma_iwarp_read_req rr;
		size_t hl = RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
		rpcrdma_iwarp_read_req_parse(rx->hdr + 2 + hl, rx->have - 2 - hl, &rr);
		iw_lock(qp, &qp->tx_lock);
		struct iw_irqe *e = &qp->irq[(qp->irq_head + qp->irq_count) % IW_MAX_RD];
		e->src = (const uint8_t *)(uintptr_t)rr.src_to;
		e->size = rr.size;
		e->sink_stag = rr.sink_stag;
		e->sink_to = rr.sink_to;
		qp->irq_count++;
		iw_unlock(qp, &qp->tx_lock);
		/* Answered once this batch of input is taken apart, so the
		 * responses to a burst of requests leave in one sendmsg. */
		rx->kick_tx = true;
		return true;
	}
	rx->msn[RPCRDMA_IWARP_QN_TERMINATE]++;
	got_terminate(qp);
	return false;
}

/* Header bytes collected: decide how many more the header needs, or
 * validate it.  Returns false if the QP failed. */
static bool header_step(struct iw_qp *qp, bool *complete)
{
	struct iw_rx *rx = &qp->rx;
	*complete = false;
	if (rx->need == 4) {
		rx->ulpdu_len = (size_t)rx->hdr[0] << 8 | rx->hdr[1];
		size_t hl = rpcrdma_iwarp_ddp_hlen((rx->hdr[2] & 0x80) != 0);
		if (rx->ulpdu_len < hl) {
			/* Too short to hold its own DDP header. */
			term(qp, RPCRDMA_IWARP_LAYER_DDP,
			     RPCRDMA_IWARP_DDP_ET_CATASTROPHIC, 0, false);
			return false;
		}
		rx->need = 2 + hl;
		return true;
	}
	size_t hl = rpcrdma_iwarp_ddp_hlen((rx->hdr[2] & 0x80) != 0);
	if (rx->need == 2 + hl) {
		rpcrdma_iwarp_ddp_parse(rx->hdr + 2, hl, &rx->ddp);
		uint8_t l, t, c;
		if (rpcrdma_iwarp_ddp_check(&rx->ddp, &l, &t, &c) != 0) {
			term(qp, l, t, c, false);
			return false;
		}
		if (!rx->ddp.tagged && rx->ddp.qn == RPCRDMA_IWARP_QN_READ_REQ) {
			/* RFC 5040 §4.4: a Read Request is exactly its header. */
			if (rx->ulpdu_len != hl + RPCRDMA_IWARP_READ_REQ_LEN || !rx->ddp.last) {
				term(qp, RPCRDMA_IWARP_LAYER_RDMAP, RPCRDMA_IWARP_RDMAP_ET_OP,
				     RPCRDMA_IWARP_RDMAP_EC_UNSPECIFIED, false);
				return false;
			}
			rx->need = 2 + hl + RPCRDMA_IWARP_READ_REQ_LEN;
			return true;
		}
		if (!rx->ddp.tagged && rx->ddp.qn == RPCRDMA_IWARP_QN_TERMINATE) {
			if (rx->ulpdu_len - hl > RPCRDMA_IWARP_TERM_MAX_LEN ||
			    rx->ulpdu_len - hl < RPCRDMA_IWARP_TERM_CTRL_LEN) {
				term(qp, RPCRDMA_IWARP_LAYER_RDMAP, RPCRDMA_IWARP_RDMAP_ET_OP,
				     RPCRDMA_IWARP_RDMAP_EC_UNSPECIFIED, false);
				return false;
			}
			rx->need = 2 + rx->ulpdu_len;
			if (rx->need > rx->have)
				return true;
		}
	}
	*complete = true;
	return true;
}

/* Places n bytes at the current destination and folds them into the
 * CRC.  src NULL: the bytes are already there (direct recv). */
static void place(struct iw_qp *qp, const uint8_t *src, size_t n)
{
	struct iw_rx *rx = &qp->rx;
	bool untagged = rx->pl == IW_PL_RECV;
	iw_ctr_add(untagged ? &qp->ctr.untagged : &qp->ctr.tagged, n);
	if (src)
		iw_ctr_add(untagged ? &qp->ctr.untagged_copied
				    : &qp->ctr.tagged_copied, n);
	if (rx->pl == IW_PL_TAGGED) {
		if (src)
			memcpy(rx->dst, src, n);
		if (qp->crc)
			rx->crc = rpcrdma_crc32c_update(rx->crc, rx->dst, n);
		rx->dst += n;
		return;
	}
	struct iw_place *p = &rx->place;
	uint64_t skip = p->off;
	size_t left = n;
	for (int i = 0; i < p->nseg && left; i++) {
		uint64_t sl = p->seg[i].iov_len;
		if (skip >= sl) {
			skip -= sl;
			continue;
		}
		size_t take = (size_t)(sl - skip) < left ? (size_t)(sl - skip) : left;
		uint8_t *d = (uint8_t *)p->seg[i].iov_base + skip;
		if (src) {
			memcpy(d, src, take);
			src += take;
		}
		if (qp->crc)
			rx->crc = rpcrdma_crc32c_update(rx->crc, d, take);
		left -= take;
		skip = 0;
	}
	p->off += n;
}

static int direct_iov(struct iw_rx *rx, struct iovec *iov, size_t max)
{
	if (rx->pl == IW_PL_TAGGED) {
		iov[0].iov_base = rx->dst;
		iov[0].iov_len = max;
		return 1;
	}
	int n = 0;
	uint64_t skip = rx->place.off;
	for (int i = 0; i < rx->place.nseg && max; i++) {
		uint64_t sl = rx->place.seg[i].iov_len;
		if (skip >= sl) {
			skip -= sl;
			continue;
		}
		size_t take = (size_t)(sl - skip) < max ? (size_t)(sl - skip) : max;
		iov[n].iov_base = (uint8_t *)rx->place.seg[i].iov_base + skip;
		iov[n].iov_len = take;
		n++;
		max -= take;
		skip = 0;
	}
	return n;
}

static void enter_trailer(struct iw_rx *rx)
{
	rx->st = IW_RX_TRAILER;
	rx->tr_have = 0;
	rx->tr_need = rpcrdma_iwarp_fpdu_pad(rx->ulpdu_len) + 4;
}

/* Consumes staged bytes.  Returns false once the QP failed. */
static bool consume(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	while (rx->rd < rx->wr) {
		size_t avail = rx->wr - rx->rd;
		if (rx->st == IW_RX_HDR) {
			size_t take = rx->need - rx->have;
			if (take > avail)
				take = avail;
			memcpy(rx->hdr + rx->have, rx->buf + rx->rd, take);
			rx->have += take;
			rx->rd += take;
			if (rx->have < rx->need)
				continue;
			bool complete;
			if (!header_step(qp, &complete))
				return false;
			if (!complete)
				continue;
			if (qp->crc)
				rx->crc = rpcrdma_crc32c_update(rpcrdma_crc32c_init(),
								rx->hdr, rx->have);
			if (!start_segment(qp))
				return false;
			if (rx->left)
				rx->st = IW_RX_PAYLOAD;
			else
				enter_trailer(rx);
		} else if (rx->st == IW_RX_PAYLOAD) {
			size_t take = rx->left < avail ? (size_t)rx->left : avail;
			place(qp, rx->buf + rx->rd, take);
			rx->rd += take;
			rx->left -= take;
			if (!rx->left)
				enter_trailer(rx);
		} else if (rx->st == IW_RX_TRAILER) {
			size_t take = rx->tr_need - rx->tr_have;
			if (take > avail)
				take = avail;
			memcpy(rx->trailer + rx->tr_have, rx->buf + rx->rd, take);
			rx->tr_have += take;
			rx->rd += take;
			if (rx->tr_have < rx->tr_need)
				continue;
			if (qp->crc) {
				size_t pad = rx->tr_need - 4;
				uint32_t c = rpcrdma_crc32c_final(
					rpcrdma_crc32c_update(rx->crc, rx->trailer, pad));
				const uint8_t *p = rx->trailer + pad;
				uint32_t got = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
					       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
				if (c != got) {
					/* RFC 5044 §7.2: CRC error -> Terminate */
					term(qp, RPCRDMA_IWARP_LAYER_LLP, 0,
					     RPCRDMA_IWARP_MPA_EC_CRC, false);
					return false;
				}
			}
			/* A large FPDU makes the reads after it careful. */
			if (rpcrdma_iwarp_fpdu_size(rx->ulpdu_len) >= IW_BULK_FPDU)
				rx->calm = 0;
			else if (rx->calm < IW_CALM_FPDUS)
				rx->calm++;
			if (!segment_done(qp))
				return false;
			hdr_reset(rx);
		} else {
			rx->rd = rx->wr; /* dead: discard */
			return false;
		}
	}
	return true;
}

void rpcrdma_iwarp_rx_progress(struct iw_qp *qp, bool blocking_lock)
{
	if (qp->serial) {
		/* The caller holds the consumer's lock: nobody else can be
		 * in the RX engine.  rx_running tells qp_error it is. */
		qp->rx_running = true;
		rpcrdma_iwarp_rx_progress_locked(qp);
		qp->rx_running = false;
		return;
	}
	if (blocking_lock)
		pthread_mutex_lock(&qp->rx_lock);
	else if (pthread_mutex_trylock(&qp->rx_lock) != 0)
		return;
	rpcrdma_iwarp_rx_progress_locked(qp);
	pthread_mutex_unlock(&qp->rx_lock);
}

/* Careful reads (see the top of the file): a large FPDU came lately, or
 * the one being received is large (its length is known once its header
 * has 4 bytes). */
static bool careful(const struct iw_rx *rx)
{
	if (rx->calm < IW_CALM_FPDUS)
		return true;
	bool known = rx->st != IW_RX_HDR || rx->have >= 4;
	return known && rpcrdma_iwarp_fpdu_size(rx->ulpdu_len) >= IW_BULK_FPDU;
}

/* How many bytes a staged read may take. */
static size_t staged_max(const struct iw_rx *rx)
{
	if (!careful(rx))
		return rx->cap;
	/* Careful: HDR or TRAILER (a payload is received directly). */
	size_t n;
	if (rx->st == IW_RX_TRAILER) {
		n = rx->tr_need - rx->tr_have + IW_PEEK;
	} else if (rx->have < IW_PEEK) {
		n = IW_PEEK - rx->have;
	} else {
		/* An untagged header (a tagged one is whole at IW_PEEK).  A
		 * small payload is staged with the rest of its FPDU and the
		 * next one's first bytes; a large one is received in place
		 * once its header is whole. */
		size_t hl = RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
		if (rx->ulpdu_len - hl < IW_DIRECT_MIN)
			n = rpcrdma_iwarp_fpdu_size(rx->ulpdu_len) - rx->have + IW_PEEK;
		else
			n = rx->need - rx->have;
	}
	return n < rx->cap ? n : rx->cap;
}

/* One read from the socket: into the staging buffer, or straight into the
 * payload's destination with the trailer and the next FPDU's first bytes
 * staged.  Returns the bytes read, 0 when the socket had none (EAGAIN),
 * negative when the stream ended or failed; *asked what it asked for. */
static ssize_t rx_read(struct iw_qp *qp, size_t *asked)
{
	struct iw_rx *rx = &qp->rx;
	bool wary = careful(rx);
	rx->rd = rx->wr = 0;
	if (rx->st == IW_RX_PAYLOAD && (wary || rx->left >= IW_DIRECT_MIN)) {
		struct iovec iov[IW_MAX_SGE + 1];
		/* At most a pass's share (IW_RX_BUDGET) in one read. */
		size_t max = rx->left > IW_RX_BUDGET ? IW_RX_BUDGET
						     : (size_t)rx->left;
		int cnt = direct_iov(rx, iov, max);
		size_t tail = 0;
		if (max == rx->left) {
			/* Careful: up to the next FPDU's first IW_PEEK bytes;
			 * else a whole staging buffer, as a staged read. */
			tail = wary ? rpcrdma_iwarp_fpdu_pad(rx->ulpdu_len) + 4 + IW_PEEK
				    : rx->cap;
			iov[cnt].iov_base = rx->buf;
			iov[cnt].iov_len = tail;
			cnt++;
		}
		*asked = max + tail;
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };
		ssize_t n;
		do
			n = rpcrdma_recvmsg_nocancel(qp->fd, &m, MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
		size_t placed = (size_t)n < max ? (size_t)n : max;
		place(qp, NULL, placed);
		rx->left -= placed;
		if (!rx->left)
			enter_trailer(rx);
		rx->wr = (size_t)n - placed;
		return n;
	}
	*asked = staged_max(rx);
	ssize_t n;
	do
		n = rpcrdma_recv_nocancel(qp->fd, rx->buf, *asked, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	rx->wr = (size_t)n;
	return n;
}

void rpcrdma_iwarp_rx_progress_locked(struct iw_qp *qp)
{
	struct iw_rx *rx = &qp->rx;
	uint8_t low[IW_RXBUF_LOW];
	bool lent = scratch_take(rx);
	if (!lent) {
		rx->buf = low;
		rx->cap = sizeof low;
	}
	/* A read that returned less than asked for emptied the socket: stop
	 * after consuming it instead of asking again for an EAGAIN.  Bytes
	 * that arrive later make the socket (part of cq_fd, and watched by
	 * the progress thread) readable again.  Every complete message read
	 * is taken apart in this one pass. */
	bool drained = false;
	size_t taken = 0;
	while (!drained && qp->created && atomic_load(&qp->state) == IW_QP_RTS &&
	       rx->st != IW_RX_DEAD) {
		if (rx->rd == rx->wr) {
			/* Nothing staged: a good place to stop when this pass
			 * has had its share (IW_RX_BUDGET).  What is left in
			 * the socket keeps it readable (the CQ's epoll set is
			 * level-triggered), so the next pass goes on. */
			if (taken >= IW_RX_BUDGET)
				break;
			size_t asked;
			ssize_t n = rx_read(qp, &asked);
			if (n == 0)
				break;
			if (n < 0) {
				/* LLP closed (RFC 5044 error 1): disconnect. */
				rx->st = IW_RX_DEAD;
				rpcrdma_iwarp_qp_error(qp, RPCRDMA_WC_WR_FLUSH_ERR);
				break;
			}
			drained = (size_t)n < asked;
			taken += (size_t)n;
		}
		bool ok = consume(qp);
		if (rx->kick_tx) {
			rx->kick_tx = false;
			rpcrdma_iwarp_tx_more(qp);
		}
		if (!ok)
			break;
	}
	if (qp->created && atomic_load(&qp->state) == IW_QP_ERROR) {
		rx->st = IW_RX_DEAD;
		if (rx->recv_active) {
			rx->recv_active = false;
			rpcrdma_iwarp_complete(qp, false, rx->recv.wr_id, RPCRDMA_WC_RECV,
					       RPCRDMA_WC_WR_FLUSH_ERR, 0, 0, 0, 0);
		}
	}
	/* Nothing staged is left but a failed QP's (the top of the file):
	 * the buffer goes back to the thread. */
	rx->rd = rx->wr = 0;
	rx->buf = NULL;
	if (lent)
		scratch_busy = false;
}
