/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Data movement cases: Send/Receive sizes and scatter/gather, RDMA Write and
 * Read with data verification, outstanding Reads up to the negotiated ORD,
 * and the CQ fd (arm, drain, ack) semantics.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp.h"

#define MiB (1024u * 1024u)
#define TO_MS 15000

static size_t max_send_size(void)
{
	size_t m = tp.attr.max_msg_size;
	return m > 16 * MiB ? 16 * MiB : m;
}

static size_t max_rdma_size(void)
{
	size_t m = tp.attr.max_msg_size;
	if (tp.attr.max_mr_size && tp.attr.max_mr_size < m)
		m = (size_t)tp.attr.max_mr_size;
	size_t cap = tp.max_rdma ? tp.max_rdma : 64 * MiB;
	return m > cap ? cap : m;
}

/* Splits [0, len) into up to n nonempty pieces of uneven sizes. */
static int split(size_t len, int n, size_t *off, size_t *plen)
{
	if (len == 0)
		return 0;
	if ((size_t)n > len)
		n = (int)len;
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		size_t rest = len - at;
		size_t piece = i == n - 1 ? rest : rest / (size_t)(n - i + 1) + 1;
		if (piece > rest - (size_t)(n - 1 - i))
			piece = rest - (size_t)(n - 1 - i);
		off[i] = at;
		plen[i] = piece;
		at += piece;
	}
	return n;
}

/* ------------------------------------------------------------------ */

static void case_send_recv_sizes(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	size_t maxsz = max_send_size();
	size_t sizes[] = { 0, 1, 3, 4095, 4096, 4097, 65535, 65536,
			   65537, 1 * MiB + 3, maxsz };
	struct rpcrdma_wc wc;

	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct tp_buf *src = tp_pair_buf(&p, &p.cli, maxsz, 0, 0);
	struct tp_buf *dst = tp_pair_buf(&p, &p.srv, maxsz + 1,
					 RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!src || !dst)
		goto out;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint32_t seed = (uint32_t)(100 + i);
		if (n > maxsz)
			continue;
		tp_fill(src->p, n, seed, 0);
		memset(dst->p, 0xA5, n + 1);
		if (tp_post_recv1(p.srv.qp, 0x100 + i, dst->p,
				  (uint32_t)(maxsz + 1), dst->mr->lkey) < 0)
			break;
		/* Zero bytes go with no SGE at all. */
		if (tp_post_send1(p.cli.qp, 0x200 + i, RPCRDMA_WR_SEND,
				  RPCRDMA_SEND_SIGNALED, n ? src->p : NULL,
				  (uint32_t)n, src->mr->lkey, 0, 0, 0) < 0)
			break;
		tp_expect_wc(p.cli.scq, TO_MS, 0x200 + i, RPCRDMA_WC_SEND,
			     RPCRDMA_WC_SUCCESS, NULL);
		if (!tp_expect_wc(p.srv.rcq, TO_MS, 0x100 + i,
				  RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc))
			break;
		TP_CHECK(wc.byte_len == n, "size %zu: byte_len %u", n,
			 wc.byte_len);
		TP_CHECK(wc.qp == p.srv.qp, "size %zu: wc.qp wrong", n);
		TP_CHECK(!(wc.wc_flags & RPCRDMA_WC_WITH_INV),
			 "size %zu: WITH_INV set on a plain Send", n);
		size_t bad = tp_verify(dst->p, n, seed, 0);
		TP_CHECK(bad == SIZE_MAX, "size %zu: data differs at %zu", n,
			 bad);
		TP_CHECK(dst->p[n] == 0xA5,
			 "size %zu: byte after the message overwritten", n);
	}
	/* A zero-byte Send into a receive that has no SGE either. */
	{
		struct rpcrdma_recv_wr rw = { .wr_id = 0x300, .num_sge = 0 };
		struct rpcrdma_recv_wr *bad = NULL;
		if (TP_OK(rpcrdma_post_recv(p.srv.qp, &rw, &bad)) == 0 &&
		    tp_post_send1(p.cli.qp, 0x301, RPCRDMA_WR_SEND,
				  RPCRDMA_SEND_SIGNALED, NULL, 0, 0, 0, 0,
				  0) == 0) {
			tp_expect_wc(p.cli.scq, TO_MS, 0x301, RPCRDMA_WC_SEND,
				     RPCRDMA_WC_SUCCESS, NULL);
			if (tp_expect_wc(p.srv.rcq, TO_MS, 0x300,
					 RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS,
					 &wc))
				TP_CHECK(wc.byte_len == 0, "byte_len %u",
					 wc.byte_len);
		}
	}
	TP_CHECK(tp_drain_wc(p.srv.rcq, 50, NULL, 0) == 0 &&
		 tp_drain_wc(p.cli.scq, 10, NULL, 0) == 0,
		 "extra completions");
out:
	tp_pair_close(&p);
}

static void case_send_recv_multi_sge(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	struct rpcrdma_wc wc;

	if (tp_pair_up(&p, &o) < 0)
		goto out;
	int nsge = (int)p.max_sge < 3 ? (int)p.max_sge : 3;
	if (nsge < 2) {
		tp_skip("max_sge %u", p.max_sge);
		goto out;
	}
	/* Sender: pieces from two different MRs. */
	static const uint32_t slen[3] = { 1, 4095, 70000 };
	static const uint32_t rlen[2][3] = { { 100, 50000, 30000 },
					     { 1, 4095, 70000 } };
	struct tp_buf *s1 = tp_pair_buf(&p, &p.cli, 8192, 0, 0);
	struct tp_buf *s2 = tp_pair_buf(&p, &p.cli, 70000, 0, 0);
	struct tp_buf *r = tp_pair_buf(&p, &p.srv, 3 * 70001 + 64,
				       RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!s1 || !s2 || !r)
		goto out;
	for (int round = 0; round < 2; round++) {
		uint32_t seed = 7 + (uint32_t)round;
		size_t total = 0;
		struct rpcrdma_sge ss[3], rs[3];
		uint8_t *sp[3] = { s1->p, s1->p + 4096, s2->p };
		uint32_t sk[3] = { s1->mr->lkey, s1->mr->lkey, s2->mr->lkey };
		size_t rcap = 0;
		for (int i = 0; i < nsge; i++) {
			tp_fill(sp[i], slen[i], seed, total);
			ss[i].addr = tp_addr(sp[i]);
			ss[i].length = slen[i];
			ss[i].lkey = sk[i];
			total += slen[i];
		}
		/* Receive pieces spread out with gaps of 0xEE between. */
		memset(r->p, 0xEE, r->len);
		size_t roff[3];
		for (int i = 0; i < nsge; i++) {
			uint32_t l = rlen[round][i];
			if (i == nsge - 1 && rcap + l < total)
				l = (uint32_t)(total - rcap);
			roff[i] = (size_t)i * 70001 + 3;
			rs[i].addr = tp_addr(r->p + roff[i]);
			rs[i].length = l;
			rs[i].lkey = r->mr->lkey;
			rcap += l;
		}
		struct rpcrdma_recv_wr rw = { .wr_id = 0x10 + (uint64_t)round,
					      .sg_list = rs,
					      .num_sge = nsge };
		struct rpcrdma_recv_wr *rbad = NULL;
		struct rpcrdma_send_wr sw;
		struct rpcrdma_send_wr *sbad = NULL;
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = 0x20 + (uint64_t)round;
		sw.sg_list = ss;
		sw.num_sge = nsge;
		sw.opcode = RPCRDMA_WR_SEND;
		sw.send_flags = RPCRDMA_SEND_SIGNALED;
		if (TP_OK(rpcrdma_post_recv(p.srv.qp, &rw, &rbad)) < 0 ||
		    TP_OK(rpcrdma_post_send(p.cli.qp, &sw, &sbad)) < 0)
			break;
		tp_expect_wc(p.cli.scq, TO_MS, sw.wr_id, RPCRDMA_WC_SEND,
			     RPCRDMA_WC_SUCCESS, NULL);
		if (!tp_expect_wc(p.srv.rcq, TO_MS, rw.wr_id,
				  RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc))
			break;
		TP_CHECK(wc.byte_len == total, "byte_len %u, sent %zu",
			 wc.byte_len, total);
		/* Walk the receive SGEs and compare. */
		size_t at = 0;
		for (int i = 0; i < nsge && at < total; i++) {
			size_t n = rs[i].length;
			if (n > total - at)
				n = total - at;
			size_t bad = tp_verify(r->p + roff[i], n, seed, at);
			TP_CHECK(bad == SIZE_MAX,
				 "round %d sge %d differs at %zu", round, i,
				 bad);
			size_t after = roff[i] + n;
			if (after < r->len)
				TP_CHECK(r->p[after] == 0xEE,
					 "round %d: byte after sge %d written",
					 round, i);
			at += n;
		}
		TP_CHECK(r->p[roff[0] - 1] == 0xEE,
			 "byte before the first receive SGE written");
	}
out:
	tp_pair_close(&p);
}

/* Sends with as many gather entries as the QP was made for, and with
 * few, posted together so they take different send queue entries: our
 * iwarp provider keeps short gather lists in the entry and long ones in
 * an array beside the queue (provider/iwarp/iwarp.h, IW_SWQE_SGE), and
 * both must gather every byte in order. */
static void case_send_gather_wide(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	struct rpcrdma_wc wc;
	enum { ROUNDS = 6, PIECE = 700, MAXG = 16 };

	o.max_sge = MAXG;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	int wide = (int)p.max_sge < MAXG ? (int)p.max_sge : MAXG;
	if (wide < 2) {
		tp_skip("max_sge %u", p.max_sge);
		goto out;
	}
	/* Gather counts: the widest, 1, short, the widest again... */
	int ng[ROUNDS] = { wide, 1, wide < 4 ? wide : 4, wide, 2, wide };
	size_t stride = (size_t)MAXG * (PIECE + 64);
	struct tp_buf *s = tp_pair_buf(&p, &p.cli, ROUNDS * stride, 0, 0);
	struct tp_buf *r = tp_pair_buf(&p, &p.srv, ROUNDS * stride,
				       RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!s || !r)
		goto out;
	memset(r->p, 0xEE, r->len);
	struct rpcrdma_sge ss[ROUNDS][MAXG], rs[ROUNDS];
	struct rpcrdma_send_wr sw[ROUNDS];
	struct rpcrdma_recv_wr rw[ROUNDS];
	size_t total[ROUNDS];
	for (int k = 0; k < ROUNDS; k++) {
		uint8_t *base = s->p + (size_t)k * stride;
		total[k] = 0;
		/* Pieces of different lengths, with gaps between them. */
		for (int i = 0; i < ng[k]; i++) {
			uint32_t len = PIECE - 37u * (uint32_t)i;
			uint8_t *at = base + (size_t)i * (PIECE + 64);
			tp_fill(at, len, 100u + (uint32_t)k, total[k]);
			ss[k][i].addr = tp_addr(at);
			ss[k][i].length = len;
			ss[k][i].lkey = s->mr->lkey;
			total[k] += len;
		}
		rs[k].addr = tp_addr(r->p + (size_t)k * stride);
		rs[k].length = (uint32_t)stride;
		rs[k].lkey = r->mr->lkey;
		rw[k] = (struct rpcrdma_recv_wr){ .wr_id = 0x100 + (uint64_t)k,
						  .sg_list = &rs[k],
						  .num_sge = 1 };
		rw[k].next = k + 1 < ROUNDS ? &rw[k + 1] : NULL;
		memset(&sw[k], 0, sizeof(sw[k]));
		sw[k].wr_id = 0x200 + (uint64_t)k;
		sw[k].sg_list = ss[k];
		sw[k].num_sge = ng[k];
		sw[k].opcode = RPCRDMA_WR_SEND;
		sw[k].send_flags = RPCRDMA_SEND_SIGNALED;
		sw[k].next = k + 1 < ROUNDS ? &sw[k + 1] : NULL;
	}
	struct rpcrdma_recv_wr *rbad = NULL;
	struct rpcrdma_send_wr *sbad = NULL;
	if (TP_OK(rpcrdma_post_recv(p.srv.qp, &rw[0], &rbad)) < 0 ||
	    TP_OK(rpcrdma_post_send(p.cli.qp, &sw[0], &sbad)) < 0)
		goto out;
	for (int k = 0; k < ROUNDS; k++) {
		if (!tp_expect_wc(p.cli.scq, TO_MS, sw[k].wr_id,
				  RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL))
			goto out;
		if (!tp_expect_wc(p.srv.rcq, TO_MS, rw[k].wr_id,
				  RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc))
			goto out;
		TP_CHECK(wc.byte_len == total[k], "send %d (%d SGEs): byte_len "
			 "%u, sent %zu", k, ng[k], wc.byte_len, total[k]);
		const uint8_t *got = r->p + (size_t)k * stride;
		size_t bad = tp_verify(got, total[k], 100u + (uint32_t)k, 0);
		TP_CHECK(bad == SIZE_MAX, "send %d (%d SGEs) differs at %zu",
			 k, ng[k], bad);
		TP_CHECK(got[total[k]] == 0xEE,
			 "send %d: byte after the message written", k);
	}
out:
	tp_pair_close(&p);
}

static void case_send_recv_ordering(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	enum { N = 128, SLOT = 8192 };
	uint32_t depth = tp.attr.max_qp_wr < 2 * N ? tp.attr.max_qp_wr : 2 * N;

	o.max_send_wr = depth;
	o.max_recv_wr = depth;
	o.cqe = 2 * N;
	if (depth < N) {
		tp_skip("max_qp_wr %u < %d", tp.attr.max_qp_wr, N);
		return;
	}
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct tp_buf *src = tp_pair_buf(&p, &p.cli, (size_t)N * SLOT, 0, 0);
	struct tp_buf *dst = tp_pair_buf(&p, &p.srv, (size_t)N * SLOT,
					 RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!src || !dst)
		goto out;
	for (int i = 0; i < N; i++)
		if (tp_post_recv1(p.srv.qp, (uint64_t)i,
				  dst->p + (size_t)i * SLOT, SLOT,
				  dst->mr->lkey) < 0)
			goto out;
	/* Unsignaled except every 16th: only those complete. */
	for (int i = 0; i < N; i++) {
		uint32_t n = (uint32_t)((i * 997) % SLOT);
		uint8_t *s = src->p + (size_t)i * SLOT;
		tp_fill(s, n, (uint32_t)i, 0);
		unsigned fl = i % 16 == 15 ? RPCRDMA_SEND_SIGNALED : 0;
		if (tp_post_send1(p.cli.qp, 0x1000 + (uint64_t)i,
				  RPCRDMA_WR_SEND, fl, n ? s : NULL, n,
				  src->mr->lkey, 0, 0, 0) < 0)
			goto out;
	}
	struct rpcrdma_wc wc[N];
	int got = tp_wait_wc(p.srv.rcq, N, TO_MS, wc);
	TP_CHECK(got == N, "%d of %d receives completed", got, N);
	for (int i = 0; i < got; i++) {
		uint32_t n = (uint32_t)((i * 997) % SLOT);
		if (!TP_CHECK(wc[i].wr_id == (uint64_t)i &&
			      wc[i].status == RPCRDMA_WC_SUCCESS &&
			      wc[i].byte_len == n,
			      "recv %d: wr_id %llu status %s byte_len %u", i,
			      (unsigned long long)wc[i].wr_id,
			      tp_wc_status_str(wc[i].status),
			      wc[i].byte_len))
			break;
		size_t bad = tp_verify(dst->p + (size_t)i * SLOT, n,
				       (uint32_t)i, 0);
		TP_CHECK(bad == SIZE_MAX, "message %d differs at %zu", i, bad);
	}
	got = tp_wait_wc(p.cli.scq, N / 16, TO_MS, wc);
	TP_CHECK(got == N / 16, "%d of %d signaled sends completed", got,
		 N / 16);
	for (int i = 0; i < got; i++)
		TP_CHECK(wc[i].wr_id == 0x1000u + (uint64_t)(i * 16 + 15) &&
			 wc[i].status == RPCRDMA_WC_SUCCESS,
			 "send completion %d: wr_id %#llx %s", i,
			 (unsigned long long)wc[i].wr_id,
			 tp_wc_status_str(wc[i].status));
	TP_CHECK(tp_drain_wc(p.cli.scq, 50, NULL, 0) == 0,
		 "unsignaled sends generated completions");
out:
	tp_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* RDMA Write / Read                                                    */

static void rdma_sizes(bool write)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	size_t maxsz = max_rdma_size();
	size_t sizes[] = { 0, 1, 4096, 65536 + 7, 1 * MiB + 5, 4 * MiB,
			   maxsz };
	const size_t off = 8;     /* unaligned start inside the region */
	const size_t guard = 4096;

	o.srv_recvs = 4;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	/* Remote (server) region, canary everywhere. */
	struct tp_buf *rem = tp_pair_buf(
		&p, &p.srv, maxsz + 64,
		RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
			RPCRDMA_ACCESS_REMOTE_READ,
		guard);
	/* Local (client) buffer: the Write source / Read sink. */
	struct tp_buf *loc = tp_pair_buf(&p, &p.cli, maxsz + 64,
					 RPCRDMA_ACCESS_LOCAL_WRITE |
						 RPCRDMA_ACCESS_READ_SINK,
					 guard);
	struct tp_buf *msg = tp_pair_buf(&p, &p.cli, 64, 0, 0);
	if (!rem || !loc || !msg)
		goto out;
	int nsge = (int)p.max_sge < 3 ? (int)p.max_sge : 3;
	/* An RDMA Read places into one Tagged Buffer on iWARP (RFC 5040
	 * §5.2.2): such devices say max_sge_rd 1 (siw: SIW_MAX_SGE_RD,
	 * drivers/infiniband/sw/siw/siw.h:27), and the provider refuses
	 * more. */
	if (!write && tp.attr.max_sge_rd && nsge > (int)tp.attr.max_sge_rd)
		nsge = (int)tp.attr.max_sge_rd;
	unsigned rcv = 0;   /* server receives consumed */

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint32_t seed = (uint32_t)(1000 + i);
		if (n > maxsz || (i && n == sizes[i - 1]))
			continue;
		/* The data starts at `off` in both buffers. */
		tp_canary_fill(rem);
		tp_canary_fill(loc);
		if (write)
			tp_fill(loc->p + off, n, seed, 0);
		else
			tp_fill(rem->p + off, n, seed, 0);

		struct rpcrdma_sge sge[3];
		size_t po[3], pl[3];
		int k = split(n, nsge, po, pl);
		for (int j = 0; j < k; j++) {
			sge[j].addr = tp_addr(loc->p + off + po[j]);
			sge[j].length = (uint32_t)pl[j];
			sge[j].lkey = loc->mr->lkey;
		}
		struct rpcrdma_send_wr wr;
		struct rpcrdma_send_wr *bad = NULL;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x700 + i;
		wr.sg_list = k ? sge : NULL;
		wr.num_sge = k;
		wr.opcode = write ? RPCRDMA_WR_RDMA_WRITE : RPCRDMA_WR_RDMA_READ;
		wr.send_flags = RPCRDMA_SEND_SIGNALED;
		wr.rdma.remote_addr = tp_addr(rem->p + off);
		wr.rdma.rkey = rem->mr->rkey;
		if (TP_OK(rpcrdma_post_send(p.cli.qp, &wr, &bad)) < 0)
			break;
		if (!tp_expect_wc(p.cli.scq, 60000, wr.wr_id,
				  write ? RPCRDMA_WC_RDMA_WRITE
					: RPCRDMA_WC_RDMA_READ,
				  RPCRDMA_WC_SUCCESS, NULL))
			break;
		if (write) {
			/* A Send after the Write arrives after its data is
			 * placed: then the target may look. */
			if (tp_post_send1(p.cli.qp, 0x800 + i, RPCRDMA_WR_SEND,
					  RPCRDMA_SEND_SIGNALED, msg->p, 4,
					  msg->mr->lkey, 0, 0, 0) < 0)
				break;
			tp_expect_wc(p.cli.scq, TO_MS, 0x800 + i,
				     RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL);
			struct rpcrdma_wc wc;
			unsigned slot = rcv++ % 4;
			if (!tp_expect_wc(p.srv.rcq, TO_MS, 0x5000u + slot,
					  RPCRDMA_WC_RECV,
					  RPCRDMA_WC_SUCCESS, &wc))
				break;
			tp_post_recv1(p.srv.qp, 0x5000u + slot,
				      p.srv_recv_buf.p + slot * 4096, 4096,
				      p.srv_recv_buf.mr->lkey);
		}
		struct tp_buf *dst = write ? rem : loc;
		size_t badoff = tp_verify(dst->p + off, n, seed, 0);
		TP_CHECK(badoff == SIZE_MAX, "%s %zu bytes: data differs at %zu",
			 write ? "write" : "read", n, badoff);
		TP_CHECK(tp_canary_range(dst, 0, guard + off) &&
			 tp_canary_range(dst, guard + off + n,
					 dst->len + guard - off - n),
			 "%s %zu bytes: bytes around the target changed",
			 write ? "write" : "read", n);
		if (!write)
			TP_CHECK(tp_canary_range(rem, 0, guard + off) &&
				 tp_canary_range(rem, guard + off + n,
						 rem->len + guard - off - n),
				 "read changed the source region");
		if (tp_case_failed())
			break;
	}
	TP_CHECK(tp_drain_wc(p.cli.scq, 20, NULL, 0) == 0,
		 "extra completions");
out:
	tp_pair_close(&p);
}

static void case_rdma_write_sizes(void)
{
	rdma_sizes(true);
}

static void case_rdma_read_sizes(void)
{
	rdma_sizes(false);
}

/* Several RDMA Reads outstanding at once, up to (and past) the ORD the
 * connection negotiated: a provider must queue the excess rather than
 * overrun the peer's IRD. */
static void case_rdma_read_ord(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	uint8_t ord = tp_default_ord();
	uint8_t ird = tp_default_ird();
	enum { SZ = 65536 };

	if (ord == 0 || ird == 0) {
		TP_CHECK(ord && ird, "device reports IRD %u ORD %u",
			 tp.attr.max_qp_rd_atom, tp.attr.max_qp_init_rd_atom);
		return;
	}
	o.cli_ord = ord;
	o.cli_ird = ird;
	o.srv_ird = ird;
	o.srv_ord = ord;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	TP_CHECK(p.srv.ev.initiator_depth == ord,
		 "CONNECT_REQUEST carries the peer's ORD %u, sent %u",
		 p.srv.ev.initiator_depth, ord);
	TP_CHECK(p.srv.ev.responder_resources == ird,
		 "CONNECT_REQUEST carries the peer's IRD %u, sent %u",
		 p.srv.ev.responder_resources, ird);
	TP_CHECK(p.cli.ev.responder_resources == ird,
		 "ESTABLISHED carries the peer's IRD %u, sent %u",
		 p.cli.ev.responder_resources, ird);
	unsigned neg = ord < ird ? ord : ird;
	if (p.cli.ev.responder_resources &&
	    p.cli.ev.responder_resources < neg)
		neg = p.cli.ev.responder_resources;
	unsigned n = 2 * neg;
	if (n > 60)
		n = 60;
	tp_note("negotiated ORD %u; posting %u reads", neg, n);
	struct tp_buf *src = tp_pair_buf(&p, &p.srv, (size_t)n * SZ,
					 RPCRDMA_ACCESS_REMOTE_READ, 0);
	struct tp_buf *dst = tp_pair_buf(&p, &p.cli, (size_t)n * SZ,
					 RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!src || !dst)
		goto out;
	for (unsigned i = 0; i < n; i++)
		tp_fill(src->p + (size_t)i * SZ, SZ, 50 + i, 0);
	memset(dst->p, 0, dst->len);
	/* Post all at once in one chain. */
	struct rpcrdma_send_wr wr[60];
	struct rpcrdma_sge sge[60];
	memset(wr, 0, sizeof(wr));
	for (unsigned i = 0; i < n; i++) {
		sge[i].addr = tp_addr(dst->p + (size_t)i * SZ);
		sge[i].length = SZ;
		sge[i].lkey = dst->mr->lkey;
		wr[i].wr_id = 0x900 + i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = RPCRDMA_WR_RDMA_READ;
		wr[i].send_flags = RPCRDMA_SEND_SIGNALED;
		wr[i].rdma.remote_addr = tp_addr(src->p + (size_t)i * SZ);
		wr[i].rdma.rkey = src->mr->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	struct rpcrdma_send_wr *bad = NULL;
	if (TP_OK(rpcrdma_post_send(p.cli.qp, wr, &bad)) < 0)
		goto out;
	struct rpcrdma_wc wc[60];
	int got = tp_wait_wc(p.cli.scq, (int)n, 30000, wc);
	TP_CHECK(got == (int)n, "%d of %u reads completed", got, n);
	for (int i = 0; i < got; i++)
		TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS &&
			 wc[i].opcode == RPCRDMA_WC_RDMA_READ &&
			 wc[i].wr_id == 0x900u + (unsigned)i,
			 "read completion %d: wr_id %#llx %s", i,
			 (unsigned long long)wc[i].wr_id,
			 tp_wc_status_str(wc[i].status));
	for (unsigned i = 0; i < n; i++) {
		size_t b = tp_verify(dst->p + (size_t)i * SZ, SZ, 50 + i, 0);
		if (!TP_CHECK(b == SIZE_MAX, "read %u differs at %zu", i, b))
			break;
	}
out:
	tp_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* CQ fd                                                                */

struct delayed_send {
	struct rpcrdma_qp *qp;
	struct tp_buf *b;
	int delay_ms;
	uint64_t posted_at;
	int rc;
};

static void *delayed_send_fn(void *arg)
{
	struct delayed_send *d = arg;
	usleep((useconds_t)d->delay_ms * 1000);
	d->posted_at = tp_now_ms();
	d->rc = tp_try_send1(d->qp, 0xD0, RPCRDMA_WR_SEND,
			     RPCRDMA_SEND_SIGNALED, d->b->p, 16,
			     d->b->mr->lkey, 0, 0, 0);
	return NULL;
}

static int readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc = poll(&pfd, 1, ms);
	return rc > 0 && (pfd.revents & POLLIN);
}

/* Collects n completions by polling only: the CQ is never armed. */
static int poll_noarm(struct rpcrdma_cq *cq, int n, int ms,
		      struct rpcrdma_wc *wc)
{
	uint64_t end = tp_now_ms() + (uint64_t)ms;
	int got = 0;
	while (got < n && tp_now_ms() < end) {
		int r = tp.ops->poll_cq(cq, n - got, wc + got);
		if (r < 0)
			break;
		if (r == 0)
			usleep(1000);
		got += r;
	}
	return got;
}

static void case_cq_fd(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	const struct rpcrdma_provider_ops *ops = tp.ops;
	struct rpcrdma_wc wc[4];

	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct rpcrdma_cq *cq = p.srv.rcq;
	int fd = ops->cq_fd(cq);
	TP_CHECK(fd >= 0, "cq_fd %d", fd);
	struct tp_buf *sb = tp_pair_buf(&p, &p.cli, 64, 0, 0);
	struct tp_buf *rb = tp_pair_buf(&p, &p.srv, 4 * 64,
					RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	if (!sb || !rb || fd < 0)
		goto out;
	for (int i = 0; i < 4; i++)
		tp_post_recv1(p.srv.qp, 0xE0 + (uint64_t)i, rb->p + i * 64, 64,
			      rb->mr->lkey);

	/* Connection start-up traffic (the RFC 6581 RTR, whose arrival races
	 * with ESTABLISHED) may still sit on the socket, and a provider may
	 * expose socket readability through the fd until it has processed
	 * it.  Let the provider consume it: polling an empty CQ makes
	 * progress but must never consume an eventfd-style notification, so
	 * a spurious notification still fails the check below. */
	for (int i = 0; i < 100 && readable(fd, 0); i++) {
		TP_CHECK(ops->poll_cq(cq, 4, wc) == 0, "completion before any post");
		usleep(10 * 1000);
	}
	/* 1. Not armed: a completion does not make the fd readable. */
	TP_CHECK(!readable(fd, 0), "fresh CQ fd readable");
	tp_post_send1(p.cli.qp, 0xC0, RPCRDMA_WR_SEND, RPCRDMA_SEND_SIGNALED,
		      sb->p, 16, sb->mr->lkey, 0, 0, 0);
	tp_expect_wc(p.cli.scq, TO_MS, 0xC0, RPCRDMA_WC_SEND,
		     RPCRDMA_WC_SUCCESS, NULL);
	usleep(100 * 1000);   /* the receive has certainly landed */
	TP_CHECK(!readable(fd, 0), "unarmed CQ fd became readable");
	int n = ops->poll_cq(cq, 4, wc);
	TP_CHECK(n == 1 && wc[0].wr_id == 0xE0, "poll_cq %d", n);

	/* 2. Armed, empty: stays quiet. */
	TP_OK(ops->req_notify_cq(cq));
	TP_CHECK(!readable(fd, 150), "armed empty CQ fd readable");

	/* 3. Block in poll() on the fd; another thread posts a Send later;
	 *    the fd wakes us. */
	struct delayed_send d = { .qp = p.cli.qp, .b = sb, .delay_ms = 200 };
	pthread_t th;
	uint64_t t0 = tp_now_ms();
	pthread_create(&th, NULL, delayed_send_fn, &d);
	int woke = readable(fd, 5000);
	uint64_t t1 = tp_now_ms();
	pthread_join(th, NULL);
	TP_CHECK(d.rc == 0, "delayed post_send %d", d.rc);
	TP_CHECK(woke, "poll() on the armed CQ fd did not wake in 5 s");
	TP_CHECK(!woke || t1 + 5 >= d.posted_at,
		 "woke %llu ms before the Send was posted",
		 (unsigned long long)(d.posted_at - t1));
	tp_note("woke %llu ms after poll(), send posted at +%llu ms",
		(unsigned long long)(t1 - t0),
		(unsigned long long)(d.posted_at - t0));
	/* 4. Ack consumes the notification; the completion is there. */
	TP_OK(ops->ack_cq_events(cq));
	TP_CHECK(!readable(fd, 0), "fd still readable after ack_cq_events");
	n = poll_noarm(cq, 1, 2000, wc);
	TP_CHECK(n == 1 && wc[0].wr_id == 0xE1 &&
		 wc[0].status == RPCRDMA_WC_SUCCESS,
		 "completion after wake-up: %d", n);
	TP_CHECK(ops->poll_cq(cq, 4, wc) == 0, "CQ not empty after drain");
	tp_wait_wc(p.cli.scq, 1, TO_MS, wc);

	/* 5. Re-armed, two completions: one wake-up, both completions. */
	while (readable(fd, 0))
		ops->ack_cq_events(cq);
	TP_OK(ops->req_notify_cq(cq));
	TP_CHECK(ops->poll_cq(cq, 4, wc) == 0, "CQ not empty after arm");
	tp_post_send1(p.cli.qp, 0xC2, 0, 0, sb->p, 8, sb->mr->lkey, 0, 0, 0);
	tp_post_send1(p.cli.qp, 0xC3, 0, RPCRDMA_SEND_SIGNALED, sb->p, 8,
		      sb->mr->lkey, 0, 0, 0);
	TP_CHECK(readable(fd, 5000), "armed fd did not wake for 2 sends");
	TP_OK(ops->ack_cq_events(cq));
	n = poll_noarm(cq, 2, 5000, wc);
	TP_CHECK(n == 2 && wc[0].wr_id == 0xE2 && wc[1].wr_id == 0xE3,
		 "got %d completions", n);
	/* Not re-armed: further completions must not wake the fd. */
	TP_CHECK(!readable(fd, 100), "fd readable after ack without re-arm");
	tp_wait_wc(p.cli.scq, 1, TO_MS, wc);
out:
	tp_pair_close(&p);
}

/* A CQ given more completions than it holds, unpolled meanwhile.  A
 * provider keeps them all (ours grows the CQ), or, where the device loses
 * one, poll_cq answers RPCRDMA_ERR_OVERFLOW once the CQ is drained
 * (provider.h), so the consumer disconnects.  What must not happen is
 * the silent loss: polls finding nothing for ever, as on rxe when nobody
 * reads its IBV_EVENT_CQ_ERR (docs/DEVICES.md, "A CQ that overflows"). */
static void case_cq_full(void)
{
	enum { SMALL = 16, EXTRA = 8, MSG = 16 };
	struct tp_conn_opts o = { .max_send_wr = 128, .max_recv_wr = 128 };
	struct tp_pair p;
	const struct rpcrdma_provider_ops *ops = tp.ops;
	struct rpcrdma_wc wc[16];

	if (tp_pair_open(&p, &o) < 0)
		goto out;
	/* The client's send CQ only is small; the server's keep room. */
	ops->destroy_cq(p.cli.scq);
	p.cli.scq = NULL;
	if (TP_OK(ops->create_cq(p.cli.dev, SMALL, &p.cli, &p.cli.scq)) < 0)
		goto out;
	int cap = p.cli.scq->cqe;
	int n = cap + EXTRA;
	if (!TP_CHECK(n <= 128, "the device made a CQ of %d for %d", cap,
		      SMALL))
		goto out;
	o.srv_recvs = n;
	if (tp_pair_connect(&p, &o) < 0)
		goto out;
	struct tp_buf *sb = tp_pair_buf(&p, &p.cli, MSG, 0, 0);
	if (!sb)
		goto out;
	for (int i = 0; i < n; i++)
		if (TP_OK(tp_post_send1(p.cli.qp, (uint64_t)i, RPCRDMA_WR_SEND,
					RPCRDMA_SEND_SIGNALED, sb->p, MSG,
					sb->mr->lkey, 0, 0, 0)) < 0)
			goto out;
	/* Let the Sends complete while nobody polls the client's CQ: the
	 * server's receives say they arrived (as many as will). */
	struct rpcrdma_wc rw[128];
	int arrived = tp_wait_wc(p.srv.rcq, n, 3000, rw);
	usleep(200 * 1000); /* their ACKs, on a device that needs them */
	bool seen[128] = { false };
	int got = 0, flushed = 0, rc = 0;
	uint64_t end = tp_now_ms() + 3000;
	while (got < n && tp_now_ms() < end) {
		rc = ops->poll_cq(p.cli.scq, 16, wc);
		if (rc < 0)
			break;
		if (rc == 0) {
			usleep(1000);
			continue;
		}
		for (int j = 0; j < rc; j++) {
			uint64_t id = wc[j].wr_id;
			TP_CHECK(id < (uint64_t)n && !seen[id],
				 "completion of wr_id %llu twice or unknown",
				 (unsigned long long)id);
			if (id < (uint64_t)n)
				seen[id] = true;
			/* A QP the device failed flushes what was left. */
			TP_CHECK(wc[j].status == RPCRDMA_WC_SUCCESS ||
					 wc[j].status == RPCRDMA_WC_WR_FLUSH_ERR,
				 "send %llu: %s", (unsigned long long)id,
				 tp_wc_status_str(wc[j].status));
			flushed += wc[j].status == RPCRDMA_WC_WR_FLUSH_ERR;
		}
		got += rc;
	}
	if (got == n) {
		tp_note("CQ of %d: all %d completions kept (%d flushed), %d "
			"messages arrived", cap, n, flushed, arrived);
	} else if (TP_CHECK(rc == RPCRDMA_ERR_OVERFLOW,
			    "CQ of %d: %d of %d completions, then poll_cq %d, "
			    "not RPCRDMA_ERR_OVERFLOW", cap, got, n, rc)) {
		tp_note("CQ of %d: %d of %d completions, then OVERFLOW; %d "
			"messages arrived", cap, got, n, arrived);
	}
out:
	tp_pair_close(&p);
}

const struct tp_case tp_cases_data[] = {
	{ "send_recv_sizes", case_send_recv_sizes, 120,
	  "Send/Recv 0 B .. max_msg_size (cap 16 MiB), byte_len and data" },
	{ "send_recv_multi_sge", case_send_recv_multi_sge, 60,
	  "multi-SGE Send gathered into multi-SGE Receive" },
	{ "send_gather_wide", case_send_gather_wide, 60,
	  "Sends of max_sge (up to 16) and of 1-4 gather entries, posted "
	  "together: every byte, in order" },
	{ "send_recv_ordering", case_send_recv_ordering, 60,
	  "128 pipelined Sends in order; unsignaled Sends do not complete" },
	{ "rdma_write_sizes", case_rdma_write_sizes, 240,
	  "RDMA Write 0 B .. 64 MiB, multi-SGE source, data and canaries" },
	{ "rdma_read_sizes", case_rdma_read_sizes, 240,
	  "RDMA Read 0 B .. 64 MiB, multi-SGE sink, data and canaries" },
	{ "rdma_read_ord", case_rdma_read_ord, 60,
	  "IRD/ORD exchanged; 2 x negotiated ORD Reads posted at once" },
	{ "cq_fd", case_cq_fd, 60,
	  "CQ fd: quiet unarmed, wakes a blocked poll() when armed, ack" },
	{ "cq_full", case_cq_full, 60,
	  "more completions than a CQ holds: all kept, or poll_cq says "
	  "OVERFLOW once drained; never a silent loss" },
	{ NULL, NULL, 0, NULL },
};
