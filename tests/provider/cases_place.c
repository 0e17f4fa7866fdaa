/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Placement cases: where payload goes, and what a provider that counts
 * its copies (provider.h qp_counters) says about them.
 *
 *  - place_write_nocopy / place_read_nocopy: large RDMA Writes and Reads
 *    (1 MiB, and every size within 8 bytes of one and two FPDUs' worth of
 *    payload when --max-fpdu fixes the FPDU size) land intact, and once
 *    one large message went (the first may be partly copied, see
 *    provider.h), the receiver copies none of their bytes.
 *  - place_mixed: chains of small and not so small Sends, RDMA Writes and
 *    Reads posted at once from both sides (Sends from the server mixed
 *    into the client's Read Responses on the wire), several rounds; every
 *    byte lands where it should, in order, and the counters account for
 *    every payload byte sent and placed.
 * A provider without counters (verbs: the device places the data) runs
 * the same transfers and checks; only the counter checks are skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp.h"

#define MiB (1024u * 1024u)
#define TO_MS 30000
/* The iwarp provider copies at most this much of the first FPDU of a
 * large tagged message that follows small ones (provider.h,
 * provider/iwarp/iwarp_qp_rx.c). */
#define IWARP_FIRST_FPDU_COPY 16384u

static bool counters(struct rpcrdma_qp *qp, struct rpcrdma_qp_counters *c)
{
	memset(c, 0, sizeof(*c));
	int rc = rpcrdma_qp_counters(qp, c);
	if (rc != RPCRDMA_ERR_NOTSUP)
		TP_CHECK(rc == 0, "qp_counters: %d (%s)", rc,
			 rpcrdma_strerror(rc));
	return rc == 0;
}

#define ULL(x) ((unsigned long long)(x))

/* b - a, counter by counter. */
static struct rpcrdma_qp_counters delta(const struct rpcrdma_qp_counters *a,
					const struct rpcrdma_qp_counters *b)
{
	return (struct rpcrdma_qp_counters){
		.rx_tagged_bytes = b->rx_tagged_bytes - a->rx_tagged_bytes,
		.rx_tagged_copied = b->rx_tagged_copied - a->rx_tagged_copied,
		.rx_untagged_bytes = b->rx_untagged_bytes - a->rx_untagged_bytes,
		.rx_untagged_copied =
			b->rx_untagged_copied - a->rx_untagged_copied,
		.tx_bytes = b->tx_bytes - a->tx_bytes,
		.tx_copied = b->tx_copied - a->tx_copied,
	};
}

static bool is_iwarp(void)
{
	return strcmp(tp.attr.name, "iwarp") == 0;
}

/* Payload bytes one FPDU of a tagged message carries when the FPDU size
 * is capped at max_fpdu: the two MULPDU rules of RFC 5044 §4.5 (the exact
 * one and the one rounded to a multiple of four) minus the 14-byte tagged
 * DDP header.  The sizes tried go 8 bytes either side of each. */
static size_t tagged_payload(size_t max_fpdu, int rule)
{
	size_t m = rule ? ((max_fpdu & ~(size_t)3) - 6) & ~(size_t)3
			: max_fpdu - (6 + max_fpdu % 4);
	return m - 14;
}

/* The sizes of a no-copy case: 1 MiB first (the warm-up), then the
 * steady state.  Returns how many. */
static size_t nocopy_sizes(size_t *out, size_t cap)
{
	size_t n = 0;
	out[n++] = MiB;
	out[n++] = MiB;
	out[n++] = MiB + 1;
	out[n++] = 2 * MiB - 3;
	if (tp.params.max_fpdu >= 8192) {
		/* Only messages of 8 KiB or more: iwarp copies smaller
		 * FPDUs by design (provider.h). */
		for (int rule = 0; rule < 2; rule++)
			for (size_t k = 1; k <= 2; k++)
				for (int d = -8; d <= 8 && n < cap; d++) {
					size_t sz = (size_t)((ptrdiff_t)(
						k * tagged_payload(
							tp.params.max_fpdu,
							rule)) + d);
					if (sz >= 8192)
						out[n++] = sz;
				}
	} else {
		tp_note("no --max-fpdu: FPDU boundaries not swept");
	}
	out[n++] = 3 * MiB + 7;
	return n;
}

static void nocopy(bool write)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	size_t sizes[128];
	size_t nsizes = nocopy_sizes(sizes, sizeof(sizes) / sizeof(sizes[0]) - 1);
	const size_t maxsz = 3 * MiB + 64;
	const size_t off = 8;

	o.srv_recvs = 4;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	struct tp_buf *rem = tp_pair_buf(
		&p, &p.srv, maxsz,
		RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
			RPCRDMA_ACCESS_REMOTE_READ,
		64);
	struct tp_buf *loc = tp_pair_buf(&p, &p.cli, maxsz,
					 RPCRDMA_ACCESS_LOCAL_WRITE |
						 RPCRDMA_ACCESS_READ_SINK,
					 64);
	struct tp_buf *msg = tp_pair_buf(&p, &p.cli, 64, 0, 0);
	if (!rem || !loc || !msg)
		goto out;
	tp_canary_fill(rem);
	tp_canary_fill(loc);
	/* Writes are placed at the server, Read Responses at the client. */
	struct rpcrdma_qp *target = write ? p.srv.qp : p.cli.qp;
	struct rpcrdma_qp_counters c0, c1, w0;
	bool have = counters(target, &c0);
	unsigned rcv = 0;
	uint64_t steady_bytes = 0;

	for (size_t i = 0; i < nsizes; i++) {
		size_t n = sizes[i];
		uint32_t seed = (uint32_t)(7000 + i);
		struct tp_buf *src = write ? loc : rem;
		struct tp_buf *dst = write ? rem : loc;
		tp_fill(src->p + off, n, seed, 0);
		memset(dst->p + off, 0, n);
		if (i == 1 && have)
			counters(target, &w0); /* after the warm-up */
		if (tp_post_send1(p.cli.qp, 0x900 + i,
				  write ? RPCRDMA_WR_RDMA_WRITE
					: RPCRDMA_WR_RDMA_READ,
				  RPCRDMA_SEND_SIGNALED, loc->p + off,
				  (uint32_t)n, loc->mr->lkey,
				  tp_addr(rem->p + off), rem->mr->rkey, 0) < 0)
			break;
		if (!tp_expect_wc(p.cli.scq, TO_MS, 0x900 + i,
				  write ? RPCRDMA_WC_RDMA_WRITE
					: RPCRDMA_WC_RDMA_READ,
				  RPCRDMA_WC_SUCCESS, NULL))
			break;
		if (write) {
			/* The Send after the Write arrives after its data. */
			if (tp_post_send1(p.cli.qp, 0xa00 + i, RPCRDMA_WR_SEND,
					  RPCRDMA_SEND_SIGNALED, msg->p, 4,
					  msg->mr->lkey, 0, 0, 0) < 0)
				break;
			tp_expect_wc(p.cli.scq, TO_MS, 0xa00 + i,
				     RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL);
			unsigned slot = rcv++ % 4;
			if (!tp_expect_wc(p.srv.rcq, TO_MS, 0x5000u + slot,
					  RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS,
					  NULL))
				break;
			tp_post_recv1(p.srv.qp, 0x5000u + slot,
				      p.srv_recv_buf.p + slot * 4096, 4096,
				      p.srv_recv_buf.mr->lkey);
		}
		size_t bad = tp_verify(dst->p + off, n, seed, 0);
		TP_CHECK(bad == SIZE_MAX, "%s %zu bytes: data differs at %zu",
			 write ? "write" : "read", n, bad);
		TP_CHECK(tp_canary_range(dst, 0, 64),
			 "%s %zu bytes: the guard before the target changed",
			 write ? "write" : "read", n);
		if (i)
			steady_bytes += n;
		if (tp_case_failed())
			break;
	}
	if (!have || tp_case_failed())
		goto out;
	counters(target, &c1);
	struct rpcrdma_qp_counters first = delta(&c0, &w0), then = delta(&w0, &c1);
	tp_note("%s: first 1 MiB copied %llu bytes; then %llu of %llu",
		write ? "write" : "read", ULL(first.rx_tagged_copied),
		ULL(then.rx_tagged_copied), ULL(then.rx_tagged_bytes));
	TP_CHECK(first.rx_tagged_bytes == MiB,
		 "the first message placed %llu tagged bytes, not %u",
		 ULL(first.rx_tagged_bytes), MiB);
	TP_CHECK(then.rx_tagged_bytes == steady_bytes,
		 "counted %llu tagged bytes placed, %llu were sent",
		 ULL(then.rx_tagged_bytes), ULL(steady_bytes));
	/* iwarp copies what comes in FPDUs under 8 KiB (provider.h). */
	if (is_iwarp() && tp.params.max_fpdu && tp.params.max_fpdu < 8192) {
		tp_note("--max-fpdu %u: FPDUs under 8 KiB are copied",
			tp.params.max_fpdu);
		goto out;
	}
	TP_CHECK(then.rx_tagged_copied == 0,
		 "%llu of %llu tagged bytes copied after the first message",
		 ULL(then.rx_tagged_copied), ULL(then.rx_tagged_bytes));
	if (is_iwarp())
		TP_CHECK(first.rx_tagged_copied <= IWARP_FIRST_FPDU_COPY,
			 "first message: %llu bytes copied, more than %u",
			 ULL(first.rx_tagged_copied), IWARP_FIRST_FPDU_COPY);
	/* Nothing went INLINE, so nothing was copied to be sent. */
	struct rpcrdma_qp_counters s;
	counters(write ? p.cli.qp : p.srv.qp, &s);
	TP_CHECK(s.tx_copied == 0, "sender copied %llu bytes", ULL(s.tx_copied));
out:
	tp_pair_close(&p);
}

static void case_place_write_nocopy(void)
{
	nocopy(true);
}

static void case_place_read_nocopy(void)
{
	nocopy(false);
}

/* ------------------------------------------------------------------ */

#define MIX_SENDS 36     /* client Sends per round, <= receives posted */
#define MIX_SRV_SENDS 12 /* server Sends per round */
#define MIX_RECVS 48
#define MIX_RDMA 3       /* Writes and Reads per round, each */
#define MIX_ROUNDS 6
#define SLOT 4096

struct mix_round {
	size_t send_len[MIX_SENDS];
	size_t srv_send_len[MIX_SRV_SENDS];
	size_t wlen[MIX_RDMA], rlen[MIX_RDMA];
	size_t woff[MIX_RDMA], roff[MIX_RDMA]; /* in the server regions */
};

/* Sizes per round: Sends from 0 bytes to a whole slot, Writes and Reads
 * from a few bytes to several MiB (the largest fill the socket buffers,
 * so a chain is sent in several parts). */
static void mix_plan(int r, struct mix_round *m)
{
	static const size_t send_sizes[] = { 0, 1, 4, 100, 200, 1023, 2048,
					     3001, SLOT };
	static const size_t rdma_sizes[] = { 5, 4096, 70003, 300001, MiB,
					     4 * MiB + 3 };
	for (int i = 0; i < MIX_SENDS; i++)
		m->send_len[i] = send_sizes[(size_t)(i * 5 + r) %
					    (sizeof(send_sizes) /
					     sizeof(send_sizes[0]))];
	for (int i = 0; i < MIX_SRV_SENDS; i++)
		m->srv_send_len[i] = send_sizes[(size_t)(i * 3 + r + 1) %
						(sizeof(send_sizes) /
						 sizeof(send_sizes[0]))];
	size_t woff = 0, roff = 0;
	for (int i = 0; i < MIX_RDMA; i++) {
		size_t nr = sizeof(rdma_sizes) / sizeof(rdma_sizes[0]);
		m->wlen[i] = rdma_sizes[(size_t)(r + i * 2) % nr];
		m->rlen[i] = rdma_sizes[(size_t)(r * 2 + i + 1) % nr];
		m->woff[i] = woff;
		m->roff[i] = roff;
		woff += (m->wlen[i] + 4095) & ~(size_t)4095;
		roff += (m->rlen[i] + 4095) & ~(size_t)4095;
	}
}

static void case_place_mixed(void)
{
	struct tp_conn_opts o = { 0 };
	struct tp_pair p;
	const size_t region = 3 * (4 * MiB + 4096);

	o.srv_recvs = MIX_RECVS;
	o.cli_recvs = MIX_RECVS;
	o.max_send_wr = 64;
	o.max_recv_wr = 64;
	o.max_sge = 1;
	if (tp_pair_up(&p, &o) < 0)
		goto out;
	unsigned rw = RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
		      RPCRDMA_ACCESS_REMOTE_READ;
	struct tp_buf *wdst = tp_pair_buf(&p, &p.srv, region, rw, 64);
	struct tp_buf *rsrc = tp_pair_buf(&p, &p.srv, region, rw, 64);
	struct tp_buf *wsrc = tp_pair_buf(&p, &p.cli, region,
					  RPCRDMA_ACCESS_LOCAL_WRITE, 0);
	struct tp_buf *rdst = tp_pair_buf(&p, &p.cli, region,
					  RPCRDMA_ACCESS_LOCAL_WRITE |
						  RPCRDMA_ACCESS_READ_SINK,
					  64);
	struct tp_buf *csend = tp_pair_buf(&p, &p.cli, MIX_SENDS * SLOT, 0, 0);
	struct tp_buf *ssend =
		tp_pair_buf(&p, &p.srv, MIX_SRV_SENDS * SLOT, 0, 0);
	if (!wdst || !rsrc || !wsrc || !rdst || !csend || !ssend)
		goto out;
	tp_canary_fill(wdst);
	tp_canary_fill(rdst);
	struct rpcrdma_qp_counters cc0, sc0, cc1, sc1;
	bool have = counters(p.cli.qp, &cc0);
	have = counters(p.srv.qp, &sc0) && have;
	uint64_t sent_c = 0, sent_s = 0, wbytes = 0, rbytes = 0;
	uint64_t csends = 0, ssends = 0;
	unsigned srv_slot = 0, cli_slot = 0; /* next receive to complete */

	for (int r = 0; r < MIX_ROUNDS && !tp_case_failed(); r++) {
		struct mix_round m;
		mix_plan(r, &m);
		/* The client's chain: Sends with the Writes and Reads among
		 * them, every WR signalled. */
		struct rpcrdma_send_wr wr[MIX_SENDS + 2 * MIX_RDMA];
		struct rpcrdma_sge sge[MIX_SENDS + 2 * MIX_RDMA];
		int n = 0, s = 0, k = 0;
		memset(wr, 0, sizeof(wr));
		for (int i = 0; i < MIX_SENDS + 2 * MIX_RDMA; i++) {
			bool rdma = i % 7 == 3 && k < 2 * MIX_RDMA;
			if (!rdma && s == MIX_SENDS) {
				rdma = true;
			}
			if (rdma) {
				int j = k / 2;
				bool w = k % 2 == 0;
				size_t len = w ? m.wlen[j] : m.rlen[j];
				size_t at = w ? m.woff[j] : m.roff[j];
				uint32_t seed = (uint32_t)(r * 100 + k);
				if (w) {
					tp_fill(wsrc->p + at, len, seed, 0);
					memset(wdst->p + at, 0, len);
				} else {
					tp_fill(rsrc->p + at, len, seed, 0);
					memset(rdst->p + at, 0, len);
				}
				sge[n] = (struct rpcrdma_sge){
					tp_addr((w ? wsrc : rdst)->p + at),
					(uint32_t)len,
					(w ? wsrc : rdst)->mr->lkey
				};
				wr[n].opcode = w ? RPCRDMA_WR_RDMA_WRITE
						 : RPCRDMA_WR_RDMA_READ;
				wr[n].rdma.remote_addr =
					tp_addr((w ? wdst : rsrc)->p + at);
				wr[n].rdma.rkey = (w ? wdst : rsrc)->mr->rkey;
				if (w) {
					wbytes += len;
					sent_c += len;
				} else {
					rbytes += len;
					sent_s += len;
				}
				k++;
			} else {
				uint8_t *b = csend->p + (size_t)s * SLOT;
				size_t len = m.send_len[s];
				tp_fill(b, len, (uint32_t)(50000 + csends), 0);
				sge[n] = (struct rpcrdma_sge){ tp_addr(b),
							       (uint32_t)len,
							       csend->mr->lkey };
				wr[n].opcode = RPCRDMA_WR_SEND;
				sent_c += len;
				csends++;
				s++;
			}
			wr[n].wr_id = (uint64_t)r << 16 | (uint64_t)n;
			wr[n].sg_list = &sge[n];
			wr[n].num_sge = 1;
			wr[n].send_flags = RPCRDMA_SEND_SIGNALED;
			if (n)
				wr[n - 1].next = &wr[n];
			n++;
		}
		/* The server's Sends, posted while the client's chain (and
		 * so the server's Read Responses) is under way. */
		struct rpcrdma_send_wr swr[MIX_SRV_SENDS];
		struct rpcrdma_sge ssge[MIX_SRV_SENDS];
		memset(swr, 0, sizeof(swr));
		for (int i = 0; i < MIX_SRV_SENDS; i++) {
			uint8_t *b = ssend->p + (size_t)i * SLOT;
			size_t len = m.srv_send_len[i];
			tp_fill(b, len, (uint32_t)(90000 + ssends + (uint64_t)i),
				0);
			ssge[i] = (struct rpcrdma_sge){ tp_addr(b), (uint32_t)len,
							ssend->mr->lkey };
			swr[i].wr_id = 0x10000u + (unsigned)i;
			swr[i].sg_list = &ssge[i];
			swr[i].num_sge = 1;
			swr[i].opcode = RPCRDMA_WR_SEND;
			swr[i].send_flags = RPCRDMA_SEND_SIGNALED;
			swr[i].next = i + 1 < MIX_SRV_SENDS ? &swr[i + 1] : NULL;
			sent_s += len;
		}
		struct rpcrdma_send_wr *bad = NULL;
		if (TP_OK(rpcrdma_post_send(p.cli.qp, wr, &bad)) < 0 ||
		    TP_OK(rpcrdma_post_send(p.srv.qp, swr, &bad)) < 0)
			break;
		/* Client: every WR completes once, successfully (a Read
		 * completes when its response is in, after the Sends posted
		 * behind it may have). */
		struct rpcrdma_wc wc[MIX_SENDS + 2 * MIX_RDMA];
		int got = tp_pair_wait_wc(&p, p.cli.scq, n, TO_MS, wc);
		if (!TP_CHECK(got == n, "round %d: %d of %d client completions",
			      r, got, n))
			break;
		bool seen[MIX_SENDS + 2 * MIX_RDMA] = { false };
		for (int i = 0; i < n; i++) {
			uint64_t at = wc[i].wr_id & 0xffff;
			bool fresh = wc[i].wr_id >> 16 == (uint64_t)r &&
				     at < (uint64_t)n && !seen[at];
			if (fresh)
				seen[at] = true;
			TP_CHECK(fresh && wc[i].status == RPCRDMA_WC_SUCCESS,
				 "round %d: completion %d: wr_id %#llx status %s",
				 r, i, (unsigned long long)wc[i].wr_id,
				 tp_wc_status_str(wc[i].status));
		}
		got = tp_pair_wait_wc(&p, p.srv.scq, MIX_SRV_SENDS, TO_MS, wc);
		TP_CHECK(got == MIX_SRV_SENDS,
			 "round %d: %d of %d server Send completions", r, got,
			 MIX_SRV_SENDS);
		/* Server: the client's Sends in order, intact. */
		got = tp_pair_wait_wc(&p, p.srv.rcq, MIX_SENDS, TO_MS, wc);
		if (!TP_CHECK(got == MIX_SENDS, "round %d: %d of %d receives",
			      r, got, MIX_SENDS))
			break;
		for (int i = 0; i < MIX_SENDS; i++) {
			unsigned slot = srv_slot++ % MIX_RECVS;
			uint64_t seq = csends - MIX_SENDS + (uint64_t)i;
			size_t len = m.send_len[i];
			TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS &&
					 wc[i].wr_id == 0x5000u + slot &&
					 wc[i].byte_len == len,
				 "round %d: receive %d: wr_id %#llx len %u "
				 "(want %#x, %zu) status %s",
				 r, i, (unsigned long long)wc[i].wr_id,
				 wc[i].byte_len, 0x5000u + slot, len,
				 tp_wc_status_str(wc[i].status));
			uint8_t *b = p.srv_recv_buf.p + (size_t)slot * 4096;
			TP_CHECK(tp_verify(b, len, (uint32_t)(50000 + seq), 0) ==
					 SIZE_MAX,
				 "round %d: Send %d (%zu bytes) differs", r, i,
				 len);
			tp_post_recv1(p.srv.qp, 0x5000u + slot, b, 4096,
				      p.srv_recv_buf.mr->lkey);
		}
		/* Client: the server's Sends in order, intact. */
		got = tp_pair_wait_wc(&p, p.cli.rcq, MIX_SRV_SENDS, TO_MS, wc);
		if (!TP_CHECK(got == MIX_SRV_SENDS,
			      "round %d: %d of %d client receives", r, got,
			      MIX_SRV_SENDS))
			break;
		for (int i = 0; i < MIX_SRV_SENDS; i++) {
			unsigned slot = cli_slot++ % MIX_RECVS;
			size_t len = m.srv_send_len[i];
			uint8_t *b = p.cli_recv_buf.p + (size_t)slot * 4096;
			TP_CHECK(wc[i].status == RPCRDMA_WC_SUCCESS &&
					 wc[i].wr_id == 0x5000u + slot &&
					 wc[i].byte_len == len &&
					 tp_verify(b, len,
						   (uint32_t)(90000 + ssends +
							      (uint64_t)i),
						   0) == SIZE_MAX,
				 "round %d: server Send %d wrong", r, i);
			tp_post_recv1(p.cli.qp, 0x5000u + slot, b, 4096,
				      p.cli_recv_buf.mr->lkey);
		}
		ssends += MIX_SRV_SENDS;
		/* The Writes were placed before the Sends after them
		 * completed; the Reads before their completions. */
		for (int j = 0; j < MIX_RDMA; j++) {
			size_t bw = tp_verify(wdst->p + m.woff[j], m.wlen[j],
					      (uint32_t)(r * 100 + 2 * j), 0);
			size_t br = tp_verify(rdst->p + m.roff[j], m.rlen[j],
					      (uint32_t)(r * 100 + 2 * j + 1), 0);
			TP_CHECK(bw == SIZE_MAX && br == SIZE_MAX,
				 "round %d: Write %d (%zu bytes) differs at %zd, "
				 "Read %d (%zu bytes) at %zd",
				 r, j, m.wlen[j], (ssize_t)bw, j, m.rlen[j],
				 (ssize_t)br);
		}
		TP_CHECK(tp_canary_range(wdst, 0, 64) &&
			 tp_canary_range(rdst, 0, 64),
			 "round %d: a guard changed", r);
	}
	if (!have || tp_case_failed())
		goto out;
	counters(p.cli.qp, &cc1);
	counters(p.srv.qp, &sc1);
	struct rpcrdma_qp_counters c = delta(&cc0, &cc1), s = delta(&sc0, &sc1);
	uint64_t cs_bytes = sent_c - wbytes, ss_bytes = sent_s - rbytes;
	TP_CHECK(s.rx_tagged_bytes == wbytes && c.rx_tagged_bytes == rbytes,
		 "tagged bytes placed: server %llu (Writes %llu), client %llu "
		 "(Reads %llu)", ULL(s.rx_tagged_bytes), ULL(wbytes),
		 ULL(c.rx_tagged_bytes), ULL(rbytes));
	TP_CHECK(s.rx_untagged_bytes == cs_bytes &&
			 c.rx_untagged_bytes == ss_bytes,
		 "untagged bytes placed: server %llu of %llu, client %llu of "
		 "%llu", ULL(s.rx_untagged_bytes), ULL(cs_bytes),
		 ULL(c.rx_untagged_bytes), ULL(ss_bytes));
	TP_CHECK(c.tx_bytes == sent_c && s.tx_bytes == sent_s,
		 "payload sent: client %llu of %llu, server %llu of %llu",
		 ULL(c.tx_bytes), ULL(sent_c), ULL(s.tx_bytes), ULL(sent_s));
	TP_CHECK(!c.tx_copied && !s.tx_copied,
		 "nothing was INLINE, yet the senders copied");
	TP_CHECK(c.rx_tagged_copied <= rbytes && s.rx_tagged_copied <= wbytes &&
			 c.rx_untagged_copied <= ss_bytes &&
			 s.rx_untagged_copied <= cs_bytes,
		 "more copied than placed");
	tp_note("copied: Writes %llu of %llu, Reads %llu of %llu, Sends %llu "
		"of %llu / %llu of %llu", ULL(s.rx_tagged_copied), ULL(wbytes),
		ULL(c.rx_tagged_copied), ULL(rbytes), ULL(s.rx_untagged_copied),
		ULL(cs_bytes), ULL(c.rx_untagged_copied), ULL(ss_bytes));
out:
	tp_pair_close(&p);
}

const struct tp_case tp_cases_place[] = {
	{ "place_write_nocopy", case_place_write_nocopy, 240,
	  "large RDMA Writes (1 MiB, FPDU boundaries) intact; no copy after the first" },
	{ "place_read_nocopy", case_place_read_nocopy, 240,
	  "large RDMA Reads (1 MiB, FPDU boundaries) intact; no copy after the first" },
	{ "place_mixed", case_place_mixed, 240,
	  "chains of Sends, Writes and Reads both ways: order, data, counters" },
	{ NULL, NULL, 0, NULL },
};
