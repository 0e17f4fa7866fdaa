/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Connection manager cases: private data in connect/accept/reject, refused
 * connections, disconnect flushing outstanding work, 64 connections at
 * once, and one connection that puts every RDMAP opcode on the wire (the
 * capture check's subject).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp.h"

#define TO_MS 15000

static uint8_t max_pd(void)
{
	uint32_t m = tp.attr.max_private_data;
	return (uint8_t)(m > 255 ? 255 : m);
}

/* Received private data must equal what was sent.  Some CMs (InfiniBand
 * CM under RoCE) deliver a fixed-size field, so trailing zero padding past
 * the sent length is accepted. */
static void check_pd(const char *what, const uint8_t *got, unsigned got_len,
		     const uint8_t *sent, unsigned sent_len)
{
	if (!TP_CHECK(got_len >= sent_len,
		      "%s: received %u bytes of private data, sent %u", what,
		      got_len, sent_len))
		return;
	TP_CHECK(sent_len == 0 || memcmp(got, sent, sent_len) == 0,
		 "%s: private data differs", what);
	for (unsigned i = sent_len; i < got_len; i++)
		if (!TP_CHECK(got[i] == 0,
			      "%s: %u extra bytes beyond the %u sent are not "
			      "zero padding", what, got_len - sent_len,
			      sent_len))
			break;
}

static void case_cm_private_data(void)
{
	uint8_t m = max_pd();
	unsigned lens[] = { 0, 1, 7, m };
	uint8_t cpd[255], spd[255];

	TP_CHECK(m >= 32, "max_private_data %u is below RFC 8797's need",
		 tp.attr.max_private_data);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct tp_conn_opts o = { 0 };
		struct tp_pair p;
		unsigned n = lens[i];
		if (n > m || (i && n == lens[i - 1]))
			continue;
		tp_fill(cpd, n, 11 + (uint32_t)i, 0);
		tp_fill(spd, n, 22 + (uint32_t)i, 0);
		o.cli_pd = n ? cpd : NULL;
		o.cli_pd_len = (uint8_t)n;
		o.srv_pd = n ? spd : NULL;
		o.srv_pd_len = (uint8_t)n;
		if (tp_pair_up(&p, &o) == 0) {
			check_pd("CONNECT_REQUEST", p.srv.ev.private_data,
				 p.srv.ev.private_data_len, cpd, n);
			check_pd("ESTABLISHED", p.cli.ev.private_data,
				 p.cli.ev.private_data_len, spd, n);
		}
		tp_pair_close(&p);
		if (tp_case_failed())
			break;
	}
}

static void case_cm_private_data_too_long(void)
{
	struct tp_pair p;
	struct sockaddr_storage ss;
	uint8_t buf[255];
	uint8_t m = max_pd();

	if (tp.attr.max_private_data >= 255) {
		tp_skip("max_private_data %u: nothing is too long",
			tp.attr.max_private_data);
		return;
	}
	memset(buf, 0x42, sizeof(buf));
	if (tp_pair_open(&p, NULL) < 0)
		goto out;
	struct tp_conn_opts o = { 0 };
	if (TP_OK(tp.ops->resolve(p.cli.id, tp_addr_with_port(p.port, &ss),
				  tp.addrlen)) < 0 ||
	    tp_side_create_qp(&p, &p.cli, &o) < 0)
		goto out;
	struct rpcrdma_conn_param cp = { .private_data = buf,
					 .private_data_len =
						 (uint8_t)(m + 1),
					 .responder_resources = 1,
					 .initiator_depth = 1 };
	int rc = tp.ops->connect(p.cli.id, &cp);
	TP_CHECK(rc < 0, "connect with %u bytes of private data (max %u) "
			 "returned %d", m + 1, m, rc);
	p.cli.disconnected = true;
out:
	tp_pair_close(&p);
}

static void case_cm_reject(void)
{
	struct tp_pair p;
	struct tp_conn_opts o = { 0 };
	struct sockaddr_storage ss;
	uint8_t cpd[255], rpd[255];
	uint8_t m = max_pd();
	struct tp_cm_ev ev;

	tp_fill(cpd, m, 31, 0);
	tp_fill(rpd, m, 32, 0);
	if (tp_pair_open(&p, NULL) < 0)
		goto out;
	if (TP_OK(tp.ops->resolve(p.cli.id, tp_addr_with_port(p.port, &ss),
				  tp.addrlen)) < 0 ||
	    tp_side_create_qp(&p, &p.cli, &o) < 0)
		goto out;
	p.cli.disconnected = true;   /* never connected */
	struct rpcrdma_conn_param cp = { .private_data = cpd,
					 .private_data_len = m,
					 .responder_resources = 1,
					 .initiator_depth = 1 };
	if (TP_OK(tp.ops->connect(p.cli.id, &cp)) < 0)
		goto out;
	if (tp_expect_cm(p.srv.ch, RPCRDMA_CM_EVENT_CONNECT_REQUEST, TO_MS,
			 &ev) < 0)
		goto out;
	p.srv.id = ev.id;
	check_pd("CONNECT_REQUEST", ev.private_data, ev.private_data_len, cpd,
		 m);
	/* Reject with private data (RFC 8797 puts nothing there, but the
	 * CM must carry it). */
	uint8_t rl = m;
	if (TP_OK(tp.ops->reject(ev.id, rpd, rl)) < 0)
		goto out;
	if (tp_expect_cm(p.cli.ch, RPCRDMA_CM_EVENT_REJECTED, TO_MS, &ev) < 0)
		goto out;
	TP_CHECK(ev.id == p.cli.id, "REJECTED on the wrong id");
	check_pd("REJECTED", ev.private_data, ev.private_data_len, rpd, rl);
	/* Nothing more arrives for the rejected request. */
	int rc = tp_wait_cm(p.srv.ch, 200, &ev);
	TP_CHECK(rc == RPCRDMA_ERR_TIMEOUT,
		 "server got event %s after rejecting",
		 rc == 0 ? tp_cm_event_str(ev.type) : "(error)");
out:
	tp_pair_close(&p);
}

static void case_cm_refused(void)
{
	struct tp_pair p;
	struct tp_conn_opts o = { 0 };
	struct sockaddr_storage ss;
	struct tp_cm_ev ev;

	if (tp_pair_open(&p, NULL) < 0)
		goto out;
	/* Nobody listens on the port once the listener is gone. */
	tp.ops->destroy_id(p.listen_id);
	p.listen_id = NULL;
	p.cli.disconnected = true;
	int rc = tp.ops->resolve(p.cli.id, tp_addr_with_port(p.port, &ss),
				 tp.addrlen);
	if (rc < 0)
		goto out;   /* refusing at resolve time is fine too */
	if (tp_side_create_qp(&p, &p.cli, &o) < 0)
		goto out;
	struct rpcrdma_conn_param cp = { .responder_resources = 1,
					 .initiator_depth = 1 };
	rc = tp.ops->connect(p.cli.id, &cp);
	if (rc < 0)
		goto out;   /* refused synchronously */
	rc = tp_wait_cm(p.cli.ch, TO_MS, &ev);
	TP_CHECK(rc == 0, "no event within %d ms for a refused connect",
		 TO_MS);
	if (rc == 0)
		TP_CHECK(ev.type == RPCRDMA_CM_EVENT_REJECTED ||
			 ev.type == RPCRDMA_CM_EVENT_CONNECT_ERROR ||
			 ev.type == RPCRDMA_CM_EVENT_UNREACHABLE,
			 "refused connect gave %s",
			 tp_cm_event_str(ev.type));
out:
	tp_pair_close(&p);
}

/* ------------------------------------------------------------------ */

static enum rpcrdma_wc_opcode wc_op_of(enum rpcrdma_wr_opcode op)
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

/* Disconnect while RDMA Writes and Reads are in flight: every posted WR
 * (sends and receives, both sides) completes exactly once, either
 * successfully or with WR_FLUSH_ERR; both sides see DISCONNECTED. */
static void case_disconnect_flush(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	enum { NW = 64, NR = 16, SZ = 1 << 20 };
	uint32_t depth = tp.attr.max_qp_wr < 128 ? tp.attr.max_qp_wr : 128;
	int nsend = (int)depth < NW ? (int)depth : NW;
	struct rpcrdma_wc wc[NW + 8];
	uint8_t seen[NW + 8];
	enum rpcrdma_wr_opcode ops_of[NW];

	o.max_send_wr = depth;
	o.max_recv_wr = NR;
	o.srv_recvs = NR;
	o.cli_recvs = NR;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct tp_buf *rem = tp_pair_buf(
		&p, &p.srv, SZ,
		RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
			RPCRDMA_ACCESS_REMOTE_READ,
		0);
	struct tp_buf *loc = tp_pair_buf(&p, &p.cli, SZ,
					 RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!rem || !loc)
		goto out;
	int posted = 0;
	for (int i = 0; i < nsend; i++) {
		enum rpcrdma_wr_opcode op = i % 4 == 3 ? RPCRDMA_WR_RDMA_READ
						       : RPCRDMA_WR_RDMA_WRITE;
		ops_of[i] = op;
		if (tp_post_send1(p.cli.qp, (uint64_t)i, op,
				  RPCRDMA_SEND_SIGNALED, loc->p, SZ,
				  loc->mr->lkey, tp_addr(rem->p),
				  rem->mr->rkey, 0) < 0)
			break;
		posted++;
	}
	TP_OK(tp.ops->disconnect(p.cli.id));
	uint64_t t0 = tp_now_ms();

	/* Client send queue. */
	memset(seen, 0, sizeof(seen));
	int got = tp_wait_wc(p.cli.scq, posted, 30000, wc);
	TP_CHECK(got == posted, "client: %d of %d send WRs completed", got,
		 posted);
	int flushed = 0;
	for (int i = 0; i < got; i++) {
		uint64_t id = wc[i].wr_id;
		if (!TP_CHECK(id < (uint64_t)posted && !seen[id],
			      "send completion wr_id %llu unknown or repeated",
			      (unsigned long long)id))
			continue;
		seen[id] = 1;
		if (tp_device_is_siw() &&
		    wc[i].status == RPCRDMA_WC_GENERAL_ERR)
			/* IBV_WC_LOC_QP_OP_ERR, which provider.h has no
			 * name for. */
			tp_skip("siw completes the WR it was transmitting "
				"when the stream went down with "
				"LOC_QP_OP_ERR, not WR_FLUSH_ERR "
				"(siw_qp_sq_process(), siw_qp_tx.c:1150-1163);"
				" the rest is checked");
		else
			TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS ||
				 wc[i].status == RPCRDMA_WC_WR_FLUSH_ERR,
				 "wr %llu completed %s", (unsigned long long)id,
				 tp_wc_status_str(wc[i].status));
		TP_CHECK(wc[i].opcode == wc_op_of(ops_of[id]),
			 "wr %llu: opcode %s", (unsigned long long)id,
			 tp_wc_opcode_str(wc[i].opcode));
		if (wc[i].status == RPCRDMA_WC_WR_FLUSH_ERR)
			flushed++;
	}
	tp_note("%d of %d RDMA WRs flushed, %llu ms after disconnect",
		flushed, posted, (unsigned long long)(tp_now_ms() - t0));
	/* Both sides learn of the disconnect.  Both channels are read
	 * together, as a consumer's event loop would: on IB/RoCE the side
	 * that disconnected hears DISCONNECTED when its peer's DREP arrives,
	 * and the peer sends that (and flushes its own QP, which the CM does
	 * not touch) when its consumer reads its DISCONNECTED. */
	struct tp_side *sides[2] = { &p.cli, &p.srv };
	uint64_t end = tp_now_ms() + 10000;
	while ((!p.cli.disconnected || !p.srv.disconnected) &&
	       tp_now_ms() < end) {
		bool progress = false;
		for (int s = 0; s < 2; s++) {
			struct tp_cm_ev ev;
			if (sides[s]->disconnected ||
			    tp_wait_cm(sides[s]->ch, 0, &ev) < 0)
				continue;
			progress = true;
			if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
				sides[s]->disconnected = true;
			else
				TP_CHECK(0, "%s: unexpected %s (status %d)",
					 s ? "server" : "client",
					 tp_cm_event_str(ev.type), ev.status);
		}
		if (!progress)
			usleep(2000);
	}
	for (int s = 0; s < 2; s++)
		TP_CHECK(sides[s]->disconnected, "%s saw no DISCONNECTED",
			 s ? "server" : "client");
	tp_note("both sides DISCONNECTED %llu ms after disconnect",
		(unsigned long long)(tp_now_ms() - t0));
	/* Receives on both sides: never consumed, so all flushed. */
	for (int s = 0; s < 2; s++) {
		memset(seen, 0, sizeof(seen));
		got = tp_wait_wc(sides[s]->rcq, NR, 10000, wc);
		TP_CHECK(got == NR, "%s: %d of %d receives flushed",
			 s ? "server" : "client", got, NR);
		for (int i = 0; i < got; i++) {
			uint64_t k = wc[i].wr_id - 0x5000u;
			TP_CHECK(k < NR && !seen[k] &&
				 wc[i].status == RPCRDMA_WC_WR_FLUSH_ERR &&
				 wc[i].opcode == RPCRDMA_WC_RECV,
				 "%s receive %#llx: %s opcode %s",
				 s ? "server" : "client",
				 (unsigned long long)wc[i].wr_id,
				 tp_wc_status_str(wc[i].status),
				 tp_wc_opcode_str(wc[i].opcode));
			if (k < NR)
				seen[k] = 1;
		}
	}
	/* Work posted after the disconnect: refused, or flushed. */
	int rc = tp_try_send1(p.cli.qp, 999, RPCRDMA_WR_SEND,
			      RPCRDMA_SEND_SIGNALED, loc->p, 8, loc->mr->lkey,
			      0, 0, 0);
	if (rc == 0)
		tp_expect_wc(p.cli.scq, 5000, 999, RPCRDMA_WC_SEND,
			     RPCRDMA_WC_WR_FLUSH_ERR, NULL);
	struct rpcrdma_sge sge = { tp_addr(loc->p), 8, loc->mr->lkey };
	struct rpcrdma_recv_wr rw = { .wr_id = 998, .sg_list = &sge,
				      .num_sge = 1 };
	struct rpcrdma_recv_wr *bad = NULL;
	rc = rpcrdma_post_recv(p.srv.qp, &rw, &bad);
	if (rc == 0)
		tp_expect_wc(p.srv.rcq, 5000, 998, RPCRDMA_WC_RECV,
			     RPCRDMA_WC_WR_FLUSH_ERR, NULL);
	TP_CHECK(tp_drain_wc(p.cli.scq, 100, NULL, 0) == 0 &&
		 tp_drain_wc(p.cli.rcq, 10, NULL, 0) == 0 &&
		 tp_drain_wc(p.srv.rcq, 10, NULL, 0) == 0 &&
		 tp_drain_wc(p.srv.scq, 10, NULL, 0) == 0,
		 "completions beyond one per posted WR");
out:
	tp_pair_close(&p);
}

/* ------------------------------------------------------------------ */

enum { NCONN = 64 };

struct conn {
	int idx;
	struct rpcrdma_cm_id *cid, *sid;
	struct rpcrdma_qp *cqp, *sqp;
	bool cest, sest, cdisc, sdisc;
};

static int make_qp(struct tp_side *s, struct rpcrdma_cm_id *id,
		   struct conn *c, struct rpcrdma_qp **qp)
{
	struct rpcrdma_qp_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.max_send_wr = 4;
	qa.max_recv_wr = 4;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.context = c;
	return TP_OK(tp.ops->create_qp(id, s->pd, &qa, qp));
}

static void case_connections_64(void)
{
	struct tp_conn_opts o = { .cqe = 4 * NCONN };
	struct tp_pair p;
	struct conn *c = calloc(NCONN, sizeof(*c));
	struct sockaddr_storage ss;
	const struct rpcrdma_provider_ops *ops = tp.ops;
	enum { SLOT = 256 };
	struct rpcrdma_wc wc[NCONN];

	if (tp_device_is_siw()) {
		/* Seen: the third QP of this case fails, every time. */
		free(c);
		tp_skip("siw: the kernel hands out mmap keys for queues "
			"without skipping SIW_INVAL_UOBJ_KEY, 0x90000 "
			"(siw_mmap_entry_insert(), siw_verbs.c:259-282; "
			"siw-abi.h:14-15), and libsiw destroys a QP whose key "
			"equals it (siw.c:318-323): the object mapped at that "
			"offset cannot be created");
		return;
	}

	if (!c || tp_pair_open(&p, &o) < 0)
		goto out;
	p.cli.disconnected = p.srv.disconnected = true;
	struct tp_buf *cb = tp_pair_buf(&p, &p.cli, 2 * NCONN * SLOT,
					RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	struct tp_buf *sb = tp_pair_buf(&p, &p.srv, 2 * NCONN * SLOT,
					RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!cb || !sb)
		goto out;
	/* The pair's own client id stays unused; 64 more connect. */
	for (int i = 0; i < NCONN; i++) {
		c[i].idx = i;
		if (TP_OK(ops->create_id(p.cli.ch, &c[i], &c[i].cid)) < 0 ||
		    TP_OK(ops->resolve(c[i].cid,
				       tp_addr_with_port(p.port, &ss),
				       tp.addrlen)) < 0 ||
		    make_qp(&p.cli, c[i].cid, &c[i], &c[i].cqp) < 0 ||
		    tp_post_recv1(c[i].cqp, (uint64_t)i,
				  cb->p + (size_t)(NCONN + i) * SLOT, SLOT,
				  cb->mr->lkey) < 0)
			goto out;
		uint8_t pd[4] = { (uint8_t)i, 0xC0, 0x44, 0x11 };
		struct rpcrdma_conn_param cp = {
			.private_data = pd, .private_data_len = 4,
			.responder_resources = 1, .initiator_depth = 1,
		};
		if (TP_OK(ops->connect(c[i].cid, &cp)) < 0)
			goto out;
	}
	/* Drive both channels until all are established. */
	int creq = 0, cest = 0, sest = 0;
	uint64_t end = tp_now_ms() + 30000;
	while ((cest < NCONN || sest < NCONN) && tp_now_ms() < end) {
		struct tp_cm_ev ev;
		bool progress = false;
		if (tp_wait_cm(p.srv.ch, 5, &ev) == 0) {
			progress = true;
			if (ev.type == RPCRDMA_CM_EVENT_CONNECT_REQUEST) {
				int i = ev.private_data_len >= 4
						? ev.private_data[0] : -1;
				if (!TP_CHECK(i >= 0 && i < NCONN &&
					      !c[i].sid &&
					      ev.private_data[1] == 0xC0,
					      "CONNECT_REQUEST with bad "
					      "private data"))
					goto out;
				creq++;
				c[i].sid = ev.id;
				if (make_qp(&p.srv, ev.id, &c[i],
					    &c[i].sqp) < 0 ||
				    tp_post_recv1(c[i].sqp, (uint64_t)i,
						  sb->p + (size_t)i * SLOT,
						  SLOT, sb->mr->lkey) < 0)
					goto out;
				struct rpcrdma_conn_param cp = {
					.responder_resources = 1,
					.initiator_depth = 1,
				};
				if (TP_OK(ops->accept(ev.id, &cp)) < 0)
					goto out;
			} else if (ev.type == RPCRDMA_CM_EVENT_ESTABLISHED) {
				sest++;
			} else {
				TP_CHECK(0, "server event %s status %d",
					 tp_cm_event_str(ev.type), ev.status);
				goto out;
			}
		}
		if (tp_wait_cm(p.cli.ch, progress ? 0 : 5, &ev) == 0) {
			if (ev.type == RPCRDMA_CM_EVENT_ESTABLISHED) {
				struct conn *k = ev.id ? ev.id->context : NULL;
				TP_CHECK(k && k->cid == ev.id && !k->cest,
					 "client ESTABLISHED on unknown id");
				if (k)
					k->cest = true;
				cest++;
			} else {
				TP_CHECK(0, "client event %s status %d",
					 tp_cm_event_str(ev.type), ev.status);
				goto out;
			}
		}
	}
	TP_CHECK(creq == NCONN && cest == NCONN && sest == NCONN,
		 "requests %d, established client %d server %d of %d", creq,
		 cest, sest, NCONN);
	if (tp_case_failed())
		goto out;

	/* Each client sends its index; each server answers on its QP. */
	for (int i = 0; i < NCONN; i++) {
		uint8_t *m = cb->p + (size_t)i * SLOT;
		tp_fill(m, SLOT, (uint32_t)i, 0);
		if (tp_post_send1(c[i].cqp, 0x100u + (unsigned)i,
				  RPCRDMA_WR_SEND, RPCRDMA_SEND_SIGNALED, m,
				  SLOT, cb->mr->lkey, 0, 0, 0) < 0)
			goto out;
	}
	int got = tp_wait_wc(p.srv.rcq, NCONN, 20000, wc);
	TP_CHECK(got == NCONN, "server: %d of %d messages", got, NCONN);
	for (int j = 0; j < got; j++) {
		struct conn *k = wc[j].qp ? wc[j].qp->context : NULL;
		if (!TP_CHECK(k && wc[j].status == RPCRDMA_WC_SUCCESS &&
			      wc[j].qp == k->sqp &&
			      wc[j].wr_id == (uint64_t)k->idx,
			      "server wc %d: %s, qp/wr_id mismatch", j,
			      tp_wc_status_str(wc[j].status)))
			continue;
		uint8_t *r = sb->p + (size_t)k->idx * SLOT;
		TP_CHECK(tp_verify(r, SLOT, (uint32_t)k->idx, 0) == SIZE_MAX,
			 "connection %d: message carries another's data",
			 k->idx);
		uint8_t *a = sb->p + (size_t)(NCONN + k->idx) * SLOT;
		tp_fill(a, SLOT, 1000u + (uint32_t)k->idx, 0);
		tp_post_send1(k->sqp, 0x200u + (unsigned)k->idx,
			      RPCRDMA_WR_SEND, RPCRDMA_SEND_SIGNALED, a, SLOT,
			      sb->mr->lkey, 0, 0, 0);
	}
	got = tp_wait_wc(p.cli.rcq, NCONN, 20000, wc);
	TP_CHECK(got == NCONN, "client: %d of %d replies", got, NCONN);
	for (int j = 0; j < got; j++) {
		struct conn *k = wc[j].qp ? wc[j].qp->context : NULL;
		if (!TP_CHECK(k && wc[j].status == RPCRDMA_WC_SUCCESS &&
			      wc[j].qp == k->cqp,
			      "client wc %d: %s", j,
			      tp_wc_status_str(wc[j].status)))
			continue;
		TP_CHECK(tp_verify(cb->p + (size_t)(NCONN + k->idx) * SLOT,
				   SLOT, 1000u + (uint32_t)k->idx,
				   0) == SIZE_MAX,
			 "connection %d: reply carries another's data",
			 k->idx);
	}
	TP_CHECK(tp_wait_wc(p.cli.scq, NCONN, 10000, wc) == NCONN &&
		 tp_wait_wc(p.srv.scq, NCONN, 10000, wc) == NCONN,
		 "send completions missing");

	/* Disconnect all; both sides see every DISCONNECTED. */
	for (int i = 0; i < NCONN; i++)
		TP_OK(ops->disconnect(c[i].cid));
	int cd = 0, sd = 0;
	end = tp_now_ms() + 15000;
	while ((cd < NCONN || sd < NCONN) && tp_now_ms() < end) {
		struct tp_cm_ev ev;
		if (tp_wait_cm(p.cli.ch, 5, &ev) == 0 &&
		    ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
			cd++;
		if (tp_wait_cm(p.srv.ch, 5, &ev) == 0 &&
		    ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
			sd++;
	}
	TP_CHECK(cd == NCONN && sd == NCONN,
		 "DISCONNECTED: client %d, server %d of %d", cd, sd, NCONN);
out:
	if (c) {
		for (int i = 0; i < NCONN; i++) {
			if (c[i].cqp)
				ops->destroy_qp(c[i].cqp);
			if (c[i].sqp)
				ops->destroy_qp(c[i].sqp);
			if (c[i].cid)
				ops->destroy_id(c[i].cid);
			if (c[i].sid)
				ops->destroy_id(c[i].sid);
		}
		free(c);
	}
	tp_pair_close(&p);
}

/* ------------------------------------------------------------------ */

/* One connection carrying every RDMAP opcode: Send, Send with SE, Send
 * with Invalidate, Send with SE and Invalidate, RDMA Write, RDMA Read
 * Request/Response, and finally a Terminate provoked by a Write to an
 * unknown STag.  Written for the capture check; verifies as it goes. */
static void case_wire_all_opcodes(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	struct rpcrdma_mw *mw[2] = { NULL, NULL };
	const struct rpcrdma_provider_ops *ops = tp.ops;
	bool inv = (tp.attr.caps & RPCRDMA_DEV_CAP_MW) &&
		   (tp.attr.caps & RPCRDMA_DEV_CAP_SEND_WITH_INV);
	struct rpcrdma_wc wc[8];

	o.srv_recvs = 8;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct tp_buf *tgt = tp_pair_buf(
		&p, &p.srv, 8192,
		RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
			RPCRDMA_ACCESS_REMOTE_READ | RPCRDMA_ACCESS_MW_BIND,
		0);
	struct tp_buf *loc = tp_pair_buf(&p, &p.cli, 8192,
					 RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!tgt || !loc)
		goto out;
	if (inv) {
		for (int i = 0; i < 2; i++)
			if (TP_OK(ops->alloc_mw(p.srv.pd, &mw[i])) < 0 ||
			    tp_bind_mw(&p, mw[i], tgt, 0, 4096,
				       (uint8_t)(0x21 + i), 0xB1u + (unsigned)i) < 0)
				goto out;
	} else {
		tp_note("no MW / SEND_WITH_INV: the Invalidate opcodes are "
			"not exercised");
	}
	tp_fill(loc->p, 8192, 4, 0);
	struct {
		enum rpcrdma_wr_opcode op;
		unsigned fl;
		uint32_t len;
	} seq[] = {
		{ RPCRDMA_WR_SEND, 0, 100 },
		{ RPCRDMA_WR_SEND, RPCRDMA_SEND_SOLICITED, 101 },
		{ RPCRDMA_WR_SEND_WITH_INV, 0, 102 },
		{ RPCRDMA_WR_SEND_WITH_INV, RPCRDMA_SEND_SOLICITED, 103 },
		{ RPCRDMA_WR_RDMA_WRITE, 0, 4096 },
		{ RPCRDMA_WR_RDMA_READ, 0, 4096 },
	};
	int nsend = 0, nrecv = 0;
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		if (seq[i].op == RPCRDMA_WR_SEND_WITH_INV && !inv)
			continue;
		uint32_t ir = seq[i].op == RPCRDMA_WR_SEND_WITH_INV
				      ? mw[seq[i].fl ? 1 : 0]->rkey
				      : 0;
		uint64_t ra = seq[i].op == RPCRDMA_WR_RDMA_READ
				      ? tp_addr(tgt->p)
				      : tp_addr(tgt->p + 4096);
		if (tp_post_send1(p.cli.qp, 0x40 + i, seq[i].op,
				  seq[i].fl | RPCRDMA_SEND_SIGNALED,
				  loc->p + (seq[i].op == RPCRDMA_WR_RDMA_READ
						    ? 4096
						    : 0),
				  seq[i].len, loc->mr->lkey, ra,
				  tgt->mr->rkey, ir) < 0)
			goto out;
		nsend++;
		if (seq[i].op == RPCRDMA_WR_SEND ||
		    seq[i].op == RPCRDMA_WR_SEND_WITH_INV)
			nrecv++;
	}
	int got = tp_wait_wc(p.cli.scq, nsend, TO_MS, wc);
	TP_CHECK(got == nsend, "%d of %d completed", got, nsend);
	for (int i = 0; i < got; i++)
		TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS, "wr %#llx: %s",
			 (unsigned long long)wc[i].wr_id,
			 tp_wc_status_str(wc[i].status));
	got = tp_wait_wc(p.srv.rcq, nrecv, TO_MS, wc);
	TP_CHECK(got == nrecv, "%d of %d received", got, nrecv);
	for (int i = 0; i < got; i++)
		TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS &&
			 wc[i].byte_len == 100u + (unsigned)i,
			 "receive %d: %s len %u", i,
			 tp_wc_status_str(wc[i].status), wc[i].byte_len);
	/* Terminate: a Write to an STag nobody has. */
	if (tp_post_send1(p.cli.qp, 0x4F, RPCRDMA_WR_RDMA_WRITE,
			  RPCRDMA_SEND_SIGNALED, loc->p, 64, loc->mr->lkey,
			  tp_addr(tgt->p),
			  rpcrdma_stag(((tgt->mr->rkey >> 8) ^ 0x800000u) &
					       0xffffffu,
				       0x99),
			  0) < 0)
		goto out;
	tp_wait_wc(p.cli.scq, 1, TO_MS, wc);
	int left = 8 - nrecv;
	got = tp_wait_wc(p.srv.rcq, left, TO_MS, wc);
	TP_CHECK(got == left, "target's remaining receives: %d of %d "
			      "flushed after the Terminate", got, left);
out:
	for (int i = 0; i < 2; i++)
		if (mw[i])
			ops->dealloc_mw(mw[i]);
	tp_pair_close(&p);
}

const struct tp_case tp_cases_cm[] = {
	{ "cm_private_data", case_cm_private_data, 60,
	  "private data round trip in connect and accept, 0..max bytes" },
	{ "cm_private_data_too_long", case_cm_private_data_too_long, 30,
	  "connect with max_private_data + 1 bytes is refused" },
	{ "cm_reject", case_cm_reject, 30,
	  "reject with private data: REJECTED carries it" },
	{ "cm_refused", case_cm_refused, 30,
	  "connect to a port nobody listens on fails, no hang" },
	{ "disconnect_flush", case_disconnect_flush, 90,
	  "disconnect mid-transfer: each WR completes once, FLUSH_ERR" },
	{ "connections_64", case_connections_64, 120,
	  "64 connections at once, each exchanging data" },
	{ "wire_all_opcodes", case_wire_all_opcodes, 60,
	  "every RDMAP opcode on one connection (capture subject)" },
	{ NULL, NULL, 0, NULL },
};
