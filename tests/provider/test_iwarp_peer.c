/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The soft-iWARP provider against a hand-made peer (tests/iwpeer.h), for
 * what our own provider never sends:
 *
 *  - terminate: a Send whose ULPDU_Length is 65535 (65517 payload bytes)
 *    into a 4 KiB receive must be answered with a Terminate (RFC 5041
 *    §7.2 "DDP message too long", RFC 5040 §6.9) before the stream
 *    closes, even when the consumer sees the receive's error completion
 *    and disconnects at once.  That race lost the Terminate now and then:
 *    the error completion was published before the Terminate was sent,
 *    and a disconnect in between left only a FIN.  The consumer here
 *    polls the CQ and disconnects the moment it sees the error, starting
 *    at delays that sweep the race window; the case repeats (300 times
 *    by default, argv[1]; ctest runs 1000).  Before the fix about 1
 *    round in 100-300 lost its Terminate on a 2-CPU machine; a single
 *    CPU cannot show it.
 *  - mpa_pd: MPA Requests carrying 0 ... 512 bytes of private data (RFC
 *    5044 §7.1.1: PD_Length up to 512) are accepted and the private data
 *    reaches the consumer intact; 513 is an improperly formatted frame
 *    (§7.1.1 MUST close, no Reply).  Before the fix 257 and more were
 *    closed like 513, and exactly 256 reached the consumer as none
 *    (the length kept in a uint8_t).
 *  - bad_after_bulk: valid bulk tagged data (RDMA Write FPDUs, or Read
 *    Response FPDUs answering our Read) followed at once by a tagged FPDU
 *    that must be refused: out of bounds, a wrong STag, a wrapping TO, a
 *    Read Response off its place.  The provider receives bulk payload
 *    straight into memory and reads the next FPDU's header with it, so
 *    this is where a header could be trusted too early: the bad FPDU must
 *    get its Terminate (RFC 5040 §8, RFC 5041 §7.1) and place nothing --
 *    every byte outside the valid data keeps its canary -- while the
 *    valid data is intact.  Every variant with the bad FPDU in the same
 *    TCP write as the bulk data (read together) and in a later one (read
 *    on its own), with FPDUs of 16 KB and of 64 KB, with MPA CRC.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iwpeer.h"
#include "provider/provider.h"
#include "test.h"

#define TMO 5000

static const struct rpcrdma_provider_ops *ops;
static struct rpcrdma_dev *dev;
static struct rpcrdma_pd *pd;
static struct rpcrdma_cm_channel *ch;
static struct rpcrdma_cm_id *lid;
static char addr[64];

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The next CM event (copied: type, id, private data); false on time-out. */
struct cm_ev {
	enum rpcrdma_cm_event_type type;
	struct rpcrdma_cm_id *id;
	uint8_t pd[1024];
	size_t pd_len;
};

static bool next_event(struct cm_ev *out, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	while (now_ms() < end) {
		struct rpcrdma_cm_event *ev = NULL;
		if (ops->get_cm_event(ch, &ev) == 0 && ev) {
			out->type = ev->type;
			out->id = ev->id;
			out->pd_len = ev->private_data_len;
			if (out->pd_len)
				memcpy(out->pd, ev->private_data, out->pd_len);
			ops->ack_cm_event(ev);
			return true;
		}
		struct pollfd p = {.fd = ch->fd, .events = POLLIN};
		poll(&p, 1, 50);
	}
	return false;
}

static void setup(void)
{
	ops = rpcrdma_provider_find("iwarp");
	struct rpcrdma_dev_params prm = {0};
	CHECK_EQ(ops->open(&prm, &dev), 0);
	CHECK_EQ(ops->alloc_pd(dev, &pd), 0);
	CHECK_EQ(ops->create_channel(dev, &ch), 0);
	CHECK_EQ(ops->create_id(ch, NULL, &lid), 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_EQ(ops->listen(lid, (struct sockaddr *)&a, sizeof a, 16), 0);
	const struct sockaddr_in *la = (const void *)&lid->local_addr;
	snprintf(addr, sizeof addr, "127.0.0.1:%u", ntohs(la->sin_port));
}

static void teardown(void)
{
	ops->destroy_id(lid);
	ops->destroy_channel(ch);
	ops->dealloc_pd(pd);
	ops->close(dev);
}

/* An MPA Request (revision 1, C set) with pd_len bytes of private data. */
static int send_request(struct iwpeer *p, const uint8_t *data, size_t len)
{
	uint8_t f[RPCRDMA_IWARP_MPA_HDR_LEN + 1024];
	memcpy(f, RPCRDMA_IWARP_MPA_KEY_REQ, RPCRDMA_IWARP_MPA_KEY_LEN);
	f[16] = RPCRDMA_IWARP_MPA_FLAG_C;
	f[17] = 1;
	f[18] = (uint8_t)(len >> 8);
	f[19] = (uint8_t)len;
	memcpy(f + RPCRDMA_IWARP_MPA_HDR_LEN, data, len);
	return iwpeer_write(p, f, RPCRDMA_IWARP_MPA_HDR_LEN + len);
}

/* ---------------------------------------------------------------------
 * Terminate before the close
 */
struct conn {
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cq *cq;
	struct rpcrdma_qp *qp;
	struct rpcrdma_mr *mr;
	uint8_t buf[4096];
};

static void spin_us(long us)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec <
	       us * 1000);
}

/* The consumer, as an RPC transport: poll the CQ and disconnect the
 * moment a completion is an error.  It starts polling delay_us after
 * the frame went out: idle until then (no provider call), so that the
 * provider's progress thread takes the frame (IW_ACTIVE_NS), then busy,
 * so that it sees the error completion as soon as it is published. */
static void consume(struct conn *c, long delay_us)
{
	spin_us(delay_us);
	struct rpcrdma_wc wc;
	int n;
	uint64_t end = now_ms() + TMO;
	while ((n = ops->poll_cq(c->cq, 1, &wc)) == 0 && now_ms() < end)
		;
	if (n > 0 && wc.status != RPCRDMA_WC_SUCCESS)
		ops->disconnect(c->id);
}

static bool accept_conn(struct conn *c, struct iwpeer *p)
{
	uint8_t req_pd[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	if (iwpeer_tcp_connect(p, addr, TMO) || send_request(p, req_pd, 8))
		return false;
	struct cm_ev ev;
	if (!next_event(&ev, TMO) || ev.type != RPCRDMA_CM_EVENT_CONNECT_REQUEST)
		return false;
	c->id = ev.id;
	struct rpcrdma_qp_attr qa = {0};
	if (ops->create_cq(dev, 64, NULL, &c->cq))
		return false;
	qa.send_cq = qa.recv_cq = c->cq;
	qa.max_send_wr = qa.max_recv_wr = 8;
	qa.max_send_sge = qa.max_recv_sge = 1;
	if (ops->create_qp(c->id, pd, &qa, &c->qp) ||
	    ops->reg_mr(pd, c->buf, sizeof c->buf, RPCRDMA_ACCESS_LOCAL_WRITE,
			&c->mr))
		return false;
	struct rpcrdma_sge sge = {(uint64_t)(uintptr_t)c->buf, sizeof c->buf,
				  c->mr->lkey};
	struct rpcrdma_recv_wr rw = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
	struct rpcrdma_recv_wr *bad;
	struct rpcrdma_conn_param cp = {0};
	if (ops->post_recv(c->qp, &rw, &bad) || ops->accept(c->id, &cp))
		return false;
	if (iwpeer_read_mpa(p, TMO) || !p->peer.reply || p->peer.reject)
		return false;
	p->crc = true;
	return true;
}

static void close_conn(struct conn *c)
{
	struct cm_ev ev;
	/* DISCONNECTED, once. */
	for (int i = 0; i < 4 && next_event(&ev, 200); i++)
		if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
			break;
	if (c->qp)
		ops->destroy_qp(c->qp);
	if (c->mr)
		ops->dereg_mr(c->mr);
	if (c->id)
		ops->destroy_id(c->id);
	if (c->cq)
		ops->destroy_cq(c->cq);
}

static void test_terminate(int rounds)
{
	static struct iwpeer_msg m;
	static uint8_t u[65535];
	int lost = 0, ok = 0;
	for (int i = 0; i < rounds; i++) {
		struct conn *c = calloc(1, sizeof *c);
		struct iwpeer p;
		if (!accept_conn(c, &p)) {
			CHECK(!"connection set-up");
			close_conn(c);
			free(c);
			break;
		}
		/* Idle for a while first (IW_ACTIVE_NS is 2 ms). */
		struct timespec nap = {0, 3 * 1000000L};
		nanosleep(&nap, NULL);
		struct rpcrdma_iwarp_ddp_hdr h = {
			.last = true, .dv = RPCRDMA_IWARP_DDP_VERSION,
			.rv = RPCRDMA_IWARP_RDMAP_VERSION,
			.opcode = RPCRDMA_IWARP_OP_SEND,
			.qn = RPCRDMA_IWARP_QN_SEND, .msn = 1};
		rpcrdma_iwarp_ddp_build(&h, u, sizeof u);
		CHECK_EQ(iwpeer_send_fpdu(&p, u, sizeof u), 0);
		/* The window is a few microseconds wide, somewhere within the
		 * first hundred after the send on these machines: sweep it. */
		consume(c, (i % 16) * 8);
		int rc = iwpeer_recv(&p, &m, TMO);
		if (!rc && m.kind == IWPEER_TERMINATE &&
		    m.term.layer == RPCRDMA_IWARP_LAYER_DDP &&
		    m.term.etype == RPCRDMA_IWARP_DDP_ET_UNTAGGED &&
		    m.term.ecode == RPCRDMA_IWARP_DDP_EC_U_TOO_LONG)
			ok++;
		else
			lost++;
		iwpeer_close(&p);
		close_conn(c);
		free(c);
	}
	printf("terminate: %d of %d rounds got the Terminate\n", ok, rounds);
	CHECK_EQ(lost, 0);
	CHECK_EQ(ok, rounds);
}

/* ---------------------------------------------------------------------
 * Private data lengths
 */
static void test_mpa_pd(void)
{
	static const size_t lens[] = {0, 8, 252, 255, 256, 257, 300, 511, 512};
	uint8_t data[513];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		struct iwpeer p;
		CHECK_EQ(iwpeer_tcp_connect(&p, addr, TMO), 0);
		CHECK_EQ(send_request(&p, data, lens[k]), 0);
		struct cm_ev ev;
		bool got = next_event(&ev, TMO);
		CHECK(got && ev.type == RPCRDMA_CM_EVENT_CONNECT_REQUEST);
		if (!got || ev.type != RPCRDMA_CM_EVENT_CONNECT_REQUEST) {
			fprintf(stderr, "PD_Length %zu: no CONNECT_REQUEST\n",
				lens[k]);
			iwpeer_close(&p);
			continue;
		}
		CHECK_EQ(ev.pd_len, lens[k]);
		CHECK_MEM(ev.pd, data, lens[k]);
		/* The consumer's answer goes back as a Reply. */
		uint8_t mine[4] = {9, 8, 7, 6};
		CHECK_EQ(ops->reject(ev.id, mine, sizeof mine), 0);
		CHECK_EQ(iwpeer_read_mpa(&p, TMO), 0);
		CHECK(p.peer.reply && p.peer.reject);
		CHECK_EQ(p.peer_pd_len, 4);
		CHECK_MEM(p.peer_pd, mine, 4);
		ops->destroy_id(ev.id);
		iwpeer_close(&p);
	}
	/* 513: improperly formatted (RFC 5044 §7.1.1): closed, no Reply,
	 * nothing for the consumer. */
	struct iwpeer p;
	CHECK_EQ(iwpeer_tcp_connect(&p, addr, TMO), 0);
	CHECK_EQ(send_request(&p, data, 513), 0);
	int rc = iwpeer_read_mpa(&p, TMO);
	CHECK(rc == RPCRDMA_ERR_DISCONNECTED || rc == RPCRDMA_ERR_FLUSHED);
	struct cm_ev ev;
	CHECK(!next_event(&ev, 100));
	iwpeer_close(&p);
}

/* ---------------------------------------------------------------------
 * A bad tagged FPDU right after valid bulk data
 */
#define REGION (512u << 10)
#define GUARD 4096u
#define CANARY 0xA5
#define BAD_BYTE 0x5A
#define BAD_LEN 4096u

enum bad_kind { BAD_BOUNDS, BAD_STAG, BAD_WRAP, BAD_RRESP_GAP, BAD_RRESP_STAG };

static const char *const bad_name[] = { "bounds", "stag", "wrap",
					"rresp-gap", "rresp-stag" };

/* Appends one FPDU (tagged header h, len payload bytes) to out. */
static size_t put_fpdu(const struct iwpeer *p, uint8_t *out,
		       const struct rpcrdma_iwarp_ddp_hdr *h,
		       const uint8_t *payload, size_t len)
{
	static uint8_t u[0xFFFF];
	int hl = rpcrdma_iwarp_ddp_build(h, u, sizeof u);
	CHECK(hl > 0 && (size_t)hl + len <= sizeof u);
	memcpy(u + hl, payload, len);
	int n = rpcrdma_iwarp_fpdu_build(u, (size_t)hl + len, p->crc, out,
					 rpcrdma_iwarp_fpdu_size((size_t)hl + len));
	CHECK(n > 0);
	return n > 0 ? (size_t)n : 0;
}

static uint8_t valid_byte(size_t i)
{
	return (uint8_t)(i * 131 + 7) | 1; /* never CANARY nor BAD_BYTE */
}

static void bad_after_bulk(enum bad_kind kind, size_t fpdu_payload,
			   int nfpdu, bool split)
{
	static uint8_t stream[8 * 0x10000];
	static uint8_t payload[0xFFFF];
	struct conn *c = calloc(1, sizeof *c);
	struct iwpeer p;
	bool rresp = kind == BAD_RRESP_GAP || kind == BAD_RRESP_STAG;
	size_t valid = fpdu_payload * (size_t)nfpdu;
	uint8_t *mem = aligned_alloc(4096, REGION + 2 * GUARD);
	struct rpcrdma_mr *mr = NULL;
	char what[96];
	snprintf(what, sizeof what, "%s after %d x %zu bytes, %s", bad_name[kind],
		 nfpdu, fpdu_payload, split ? "separate writes" : "one write");
	if (!c || !mem || !accept_conn(c, &p)) {
		CHECK(!"connection set-up");
		goto out;
	}
	memset(mem, CANARY, REGION + 2 * GUARD);
	uint8_t *region = mem + GUARD;
	CHECK_EQ(ops->reg_mr(pd, region, REGION,
			     RPCRDMA_ACCESS_LOCAL_WRITE |
				     RPCRDMA_ACCESS_REMOTE_WRITE |
				     RPCRDMA_ACCESS_READ_SINK,
			     &mr),
		 0);
	if (!mr)
		goto out;
	/* A zero-length Write first: the responder sends nothing before it
	 * received an FPDU (RFC 5044 §7.1.2), and our Read must go out. */
	struct rpcrdma_iwarp_ddp_hdr h = {
		.tagged = true, .last = true, .dv = RPCRDMA_IWARP_DDP_VERSION,
		.rv = RPCRDMA_IWARP_RDMAP_VERSION,
		.opcode = RPCRDMA_IWARP_OP_WRITE};
	size_t n = put_fpdu(&p, stream, &h, payload, 0);
	CHECK_EQ(iwpeer_write(&p, stream, n), 0);
	uint32_t stag = mr->rkey;
	uint64_t to = (uint64_t)(uintptr_t)region;
	if (rresp) {
		struct rpcrdma_sge sge = {to, (uint32_t)(valid + BAD_LEN), mr->lkey};
		struct rpcrdma_send_wr wr = {
			.wr_id = 77, .sg_list = &sge, .num_sge = 1,
			.opcode = RPCRDMA_WR_RDMA_READ,
			.send_flags = RPCRDMA_SEND_SIGNALED,
			.rdma = {.remote_addr = 0x10000, .rkey = 0x1234}};
		struct rpcrdma_send_wr *bad;
		CHECK_EQ(ops->post_send(c->qp, &wr, &bad), 0);
		static struct iwpeer_msg m;
		int rc = iwpeer_recv(&p, &m, TMO);
		CHECK(rc == 0 && m.kind == IWPEER_READ_REQ);
		if (rc || m.kind != IWPEER_READ_REQ)
			goto out;
		CHECK_EQ(m.rr.sink_stag, mr->lkey);
		CHECK_EQ(m.rr.sink_to, to);
		stag = m.rr.sink_stag;
		to = m.rr.sink_to;
		h.opcode = RPCRDMA_IWARP_OP_READ_RESP;
	}
	/* The valid FPDUs: one message, its last FPDU not yet L. */
	n = 0;
	for (int i = 0; i < nfpdu; i++) {
		for (size_t k = 0; k < fpdu_payload; k++)
			payload[k] = valid_byte((size_t)i * fpdu_payload + k);
		h.stag = stag;
		h.to = to + (uint64_t)i * fpdu_payload;
		h.last = false;
		n += put_fpdu(&p, stream + n, &h, payload, fpdu_payload);
	}
	size_t first = n;
	/* The bad one, as the message's last FPDU. */
	memset(payload, BAD_BYTE, BAD_LEN);
	h.last = true;
	h.stag = stag;
	h.to = to + valid;
	uint8_t want = RPCRDMA_IWARP_DDP_EC_T_BOUNDS;
	switch (kind) {
	case BAD_BOUNDS:
		h.to = to + REGION - BAD_LEN / 2;
		break;
	case BAD_STAG:
		h.stag = stag ^ 0x01; /* another key */
		want = RPCRDMA_IWARP_DDP_EC_T_INV_STAG;
		break;
	case BAD_WRAP:
		h.to = UINT64_MAX - BAD_LEN / 2;
		want = RPCRDMA_IWARP_DDP_EC_T_TO_WRAP;
		break;
	case BAD_RRESP_GAP:
		h.to = to + valid + 8; /* not where the response is at */
		break;
	case BAD_RRESP_STAG:
		h.stag = stag ^ 0x01;
		want = RPCRDMA_IWARP_DDP_EC_T_INV_STAG;
		break;
	}
	n += put_fpdu(&p, stream + n, &h, payload, BAD_LEN);
	if (split) {
		CHECK_EQ(iwpeer_write(&p, stream, first), 0);
		/* Until the provider read the valid data (its counter says
		 * so), so that the bad FPDU comes in a read of its own. */
		uint64_t end = now_ms() + TMO;
		struct rpcrdma_qp_counters ctr = {0};
		while (rpcrdma_qp_counters(c->qp, &ctr) == 0 &&
		       ctr.rx_tagged_bytes < valid && now_ms() < end) {
			struct rpcrdma_wc wc;
			ops->poll_cq(c->cq, 1, &wc);
		}
		CHECK(ctr.rx_tagged_bytes == valid);
		CHECK_EQ(iwpeer_write(&p, stream + first, n - first), 0);
	} else {
		CHECK_EQ(iwpeer_write(&p, stream, n), 0);
	}
	static struct iwpeer_msg m;
	int rc = iwpeer_recv(&p, &m, TMO);
	bool term = rc == 0 && m.kind == IWPEER_TERMINATE;
	if (!term || m.term.layer != RPCRDMA_IWARP_LAYER_DDP ||
	    m.term.etype != RPCRDMA_IWARP_DDP_ET_TAGGED ||
	    m.term.ecode != want)
		fprintf(stderr, "%s: rc %d kind %d layer %u etype %u ecode %u "
			"(want %u)\n", what, rc, m.kind, m.term.layer,
			m.term.etype, m.term.ecode, want);
	CHECK(term);
	CHECK_EQ(m.term.layer, RPCRDMA_IWARP_LAYER_DDP);
	CHECK_EQ(m.term.etype, RPCRDMA_IWARP_DDP_ET_TAGGED);
	CHECK_EQ(m.term.ecode, want);
	/* The QP says so too (and its lock orders what its thread placed
	 * before our look at the memory). */
	struct rpcrdma_terminate_info ti = {0};
	uint64_t end = now_ms() + TMO;
	while (ops->get_terminate(c->qp, &ti) == 0 && !ti.valid &&
	       now_ms() < end)
		;
	CHECK(ti.valid && ti.sent);
	/* The valid data in place, nothing else touched. */
	size_t bad_at = SIZE_MAX;
	for (size_t i = 0; i < valid && bad_at == SIZE_MAX; i++)
		if (region[i] != valid_byte(i))
			bad_at = i;
	for (size_t i = valid; i < REGION + GUARD && bad_at == SIZE_MAX; i++)
		if (region[i] != CANARY)
			bad_at = i;
	for (size_t i = 0; i < GUARD && bad_at == SIZE_MAX; i++)
		if (mem[i] != CANARY)
			bad_at = i;
	if (bad_at != SIZE_MAX)
		fprintf(stderr, "%s: memory wrong at offset %zu\n", what, bad_at);
	CHECK(bad_at == SIZE_MAX);
	if (rresp) {
		/* The Read ends with an error completion, not a success. */
		struct rpcrdma_wc wc;
		int got = 0;
		end = now_ms() + TMO;
		while ((got = ops->poll_cq(c->cq, 1, &wc)) == 0 && now_ms() < end)
			;
		CHECK(got == 1 && wc.wr_id == 77 &&
		      wc.status != RPCRDMA_WC_SUCCESS);
	}
out:
	iwpeer_close(&p);
	if (c)
		close_conn(c);
	if (mr)
		ops->dereg_mr(mr);
	free(mem);
	free(c);
}

static void test_bad_after_bulk(void)
{
	static const size_t sizes[] = {16000, 65000};
	int runs = 0;
	for (int kind = BAD_BOUNDS; kind <= BAD_RRESP_STAG; kind++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
			for (int nf = 1; nf <= 4; nf += 3)
				for (int split = 0; split < 2; split++) {
					bad_after_bulk((enum bad_kind)kind, sizes[s],
						       nf, split);
					runs++;
				}
	printf("bad_after_bulk: %d variants\n", runs);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	setup();
	test_mpa_pd();
	test_bad_after_bulk();
	test_terminate(rounds);
	teardown();
	TEST_MAIN_END();
}
