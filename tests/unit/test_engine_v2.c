/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 2 in the engine (draft-cel-nfsv4-rpcrdma-version-
 * two-09), from scripted inputs: version negotiation (§7), RDMA2_CONNPROP
 * and its properties (§4, §5.3.4), RPCRDMA2_F_RESPONSE (§3.2),
 * rdma_inv_handle (§3.3, §8.4), every RDMA2_ERROR the responder sends and
 * every recovery the requester makes (§5.3.3), Reverse Request Support
 * (§4.2.2).  Then two engines back to back: v2 to v2 for every shape and
 * both directions, and v2 against a v1-only peer.
 *
 * Expected headers are written out as XDR words from the draft's XDR
 * (§6.3, §6.4), not produced by our encoder.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_engine_fake.h"
#include "engine/engine_internal.h" /* test_server_first_receive looks inside */
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"

#define F_RESP RPCRDMA_V2_F_RESPONSE

static struct fake *F;
static struct side S;
static struct rpcrdma_engine_config C;
static uint64_t NOW;

/* What the engine sent, from the last drain(). */
struct sent {
	enum rpcrdma_wr_opcode op;
	uint32_t inv_rkey;
	bool signaled;
	uint8_t bytes[16384];
	size_t len;
};
static struct sent sent[32];
static int nsent, nreads, nwrites, nlinv;

/* Events from the last drain(). */
static struct rpcrdma_engine_event evs[64];
static int nev;

static struct rpcrdma_v2_hdr H2;
static struct rpcrdma_v1_hdr H1;

/* Pop every work request, complete each at once (successfully), keep
 * Sends' bytes, collect events; repeat until quiet. */
static void drain(void)
{
	struct rpcrdma_engine_wr w;
	nsent = nreads = nwrites = nlinv = nev = 0;
	for (int round = 0; round < 16; round++) {
		bool moved = false;
		while (rpcrdma_engine_pop_wr(S.e, &w)) {
			moved = true;
			if (w.is_recv)
				continue;
			if (w.send.opcode == RPCRDMA_WR_SEND ||
			    w.send.opcode == RPCRDMA_WR_SEND_WITH_INV) {
				if (nsent < 32) {
					struct sent *s = &sent[nsent++];
					s->op = w.send.opcode;
					s->inv_rkey = w.send.invalidate_rkey;
					s->signaled = (w.send.send_flags &
						       RPCRDMA_SEND_SIGNALED) != 0;
					s->len = fake_send_gather(&w.send, s->bytes);
				}
			} else if (w.send.opcode == RPCRDMA_WR_RDMA_READ) {
				nreads++;
			} else if (w.send.opcode == RPCRDMA_WR_RDMA_WRITE) {
				nwrites++;
			} else if (w.send.opcode == RPCRDMA_WR_LOCAL_INV) {
				nlinv++;
				struct fake_mr *r = &F->mr[w.send.invalidate_rkey];
				r->rvalid = false;
			}
			fake_send_done(S.e, &w.send, NOW);
		}
		while (nev < 64 && rpcrdma_engine_poll_event(S.e, &evs[nev])) {
			moved = true;
			nev++;
		}
		if (!moved)
			break;
	}
}

static void cfg_reset(void)
{
	rpcrdma_engine_config_default(&C);
	C.max_calls = 8;
	C.credits = 16;
	C.xid_seed = 0x100;
}

/* Create and connect S with C; pdata NULL: the peer sent none. */
static void start(bool with_pdata)
{
	if (!F)
		F = calloc(1, sizeof *F);
	memset(F, 0, sizeof *F);
	side_init(&S, F, 0);
	NOW = 1000;
	CHECK_EQ(side_create(&S, &C), 0);
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	CHECK_EQ(rpcrdma_engine_established(S.e, with_pdata ? pd : NULL,
					    with_pdata ? sizeof pd : 0, 4, NOW),
		 0);
	drain();
}

static void teardown(void)
{
	F->conn_down = true;
	rpcrdma_engine_destroy(S.e);
	S.e = NULL;
}

static void feed_bytes(const void *b, size_t len)
{
	CHECK_EQ(rpcrdma_engine_recv(S.e, b, len, false, 0, NOW), 0);
	drain();
}

static void feed(const uint32_t *w, size_t n)
{
	uint8_t b[1024];
	feed_bytes(b, xdr_words(b, w, n));
}

static void check_sent_words(int i, const uint32_t *w, size_t n)
{
	uint8_t b[1024];
	size_t len = xdr_words(b, w, n);
	CHECK_EQ(sent[i].len, len);
	CHECK_MEM(sent[i].bytes, b, len);
}

static struct rpcrdma_engine_info info(void)
{
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(S.e, &in);
	return in;
}

static struct rpcrdma_engine_counters ctrs(void)
{
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	return c;
}

static uint32_t word(int i, int k)
{
	return rpcrdma_be32_get(sent[i].bytes + 4 * k);
}

/* ---------------------------------------------------------------------
 * Calls
 */
static uint8_t hdrs[8][64];
static uint8_t big[8][16384];
static uint8_t rbuf[8][8192];
static uint8_t res[8][4][4096];

/* A call: 40-byte RPC header, then a non-DDP body of `body` bytes, then
 * (ddp_len > 0) a DDP-eligible argument; nres results of res_len each. */
static uint32_t submit(int i, size_t body, size_t ddp_len, unsigned nres,
		       size_t res_len, size_t reply_max)
{
	rpc_call_hdr(hdrs[i], 100003, 3, 1);
	struct rpcrdma_iov v[3];
	unsigned n = 0;
	v[n++] = (struct rpcrdma_iov){hdrs[i], 40, false};
	fill_pattern(big[i], sizeof big[i], (uint32_t)i);
	if (body)
		v[n++] = (struct rpcrdma_iov){big[i], body, false};
	if (ddp_len)
		v[n++] = (struct rpcrdma_iov){big[i] + 8192, ddp_len, true};
	struct rpcrdma_iov r[4];
	for (unsigned k = 0; k < nres; k++)
		r[k] = (struct rpcrdma_iov){res[i][k], res_len, true};
	struct rpcrdma_call_req q = {v, n, rbuf[i], reply_max, r, nres,
				     (void *)(uintptr_t)(i + 1), false};
	uint32_t xid = 0;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &q, &xid, NOW), 0);
	drain();
	return xid;
}

static const struct rpcrdma_engine_event *done_event(uint32_t xid)
{
	for (int i = 0; i < nev; i++)
		if (evs[i].type == RPCRDMA_EV_CALL_DONE && evs[i].xid == xid)
			return &evs[i];
	return NULL;
}

/* A v2 client past negotiation: opener answered with our grant. */
static uint32_t OPENER;
static void client_v2(void)
{
	C.client = true;
	start(true);
	CHECK_EQ(nsent, 1);
	OPENER = word(0, 0);
	uint32_t resp[] = {OPENER, 2, 16, 5, F_RESP, 0};
	feed(resp, 6);
	CHECK_EQ(info().version, 2);
}

/* ---------------------------------------------------------------------
 * §7 negotiation, client side
 */

/* §7, §5.3.4: the client's first message is one RDMA2_CONNPROP of at
 * most 1024 bytes; calls wait until a non-error answer grants credits. */
static void test_opener_then_v2(void)
{
	cfg_reset();
	C.client = true;
	C.max_inline_send = 8192;
	C.max_inline_recv = 4096;
	start(false); /* no private data: v1 would say 1024 */
	CHECK_EQ(nsent, 1);
	CHECK(sent[0].len <= 1024);
	uint32_t x = word(0, 0);
	/* xid, vers 2, credit request 8, CONNPROP, no F_RESPONSE, two
	 * properties: RBSIZ 4096 and BRS GENL, each a 4-byte rdma_data. */
	uint32_t want[] = {x, 2, 8, 5, 0, 2, 1, 4, 4096, 2, 4, 2};
	check_sent_words(0, want, 12);
	CHECK(info().negotiating);
	CHECK_EQ(info().version, 0);
	/* A call now is held: nothing more goes out. */
	uint32_t xid = submit(0, 6000, 0, 0, 0, 1024);
	CHECK_EQ(nsent, 0);
	/* The server's answer: same xid, F_RESPONSE, grant 5, its receive
	 * buffers are 8 KiB, BRS NONE, plus an unknown property 77. */
	uint32_t ans[] = {x, 2, 5, 5, F_RESP, 3, 77, 3, 0xaabbccdd, 1, 4, 8192,
			  2, 4, 0};
	feed(ans, 15);
	const struct rpcrdma_engine_info in = info();
	CHECK_EQ(in.version, 2);
	CHECK(!in.negotiating);
	CHECK(in.peer_props);
	CHECK_EQ(in.peer_rbsiz, 8192);
	CHECK_EQ(in.peer_brs, RPCRDMA_V2_RVREQSUP_NONE);
	CHECK_EQ(in.send_threshold, 8192); /* §4.2.1: RBSIZ sets it */
	CHECK_EQ(in.credits_granted, 5);
	/* The held 6 KiB call went out Short, in v2, F_RESPONSE clear,
	 * rdma_inv_handle 0 (no chunks). */
	CHECK_EQ(nsent, 1);
	CHECK(sent[0].len > 6000);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.xid, xid);
	CHECK_EQ(H2.htype, RPCRDMA_V2_MSG);
	CHECK_EQ(H2.flags, 0);
	CHECK_EQ(H2.inv_handle, 0);
	CHECK_EQ(ctrs().short_calls, 1);
	CHECK_EQ(ctrs().connprop_sent, 1);
	CHECK_EQ(ctrs().connprop_recv, 1);
	/* §5.3.4: properties do not change later; a second CONNPROP is
	 * ignored and never answered. */
	uint32_t again[] = {0x999, 2, 5, 5, 0, 1, 1, 4, 1024};
	feed(again, 9);
	CHECK_EQ(nsent, 0);
	CHECK_EQ(info().peer_rbsiz, 8192);
	/* The reply, v2 with F_RESPONSE: completes the call. */
	uint8_t m[256];
	uint32_t rh[] = {xid, 2, 7, 0, F_RESP, 0, 0, 0, 0};
	size_t n = xdr_words(m, rh, 9);
	rpc_reply_hdr(m + n, xid);
	feed_bytes(m, n + 24);
	const struct rpcrdma_engine_event *ev = done_event(xid);
	CHECK(ev != NULL);
	CHECK_EQ(ev ? ev->status : -1, 0);
	CHECK_EQ(ev ? ev->reply_len : 0, 24);
	CHECK_EQ(info().credits_granted, 7);
	teardown();
}

/* §7.2 with the layout Linux svcrdma uses: a v1 RDMA_ERROR that echoes
 * rdma_vers 2 (seven words).  The client continues in v1 on the same
 * connection and remembers the server. */
static void test_fallback_linux_layout(void)
{
	cfg_reset();
	C.client = true;
	start(true);
	uint32_t x = word(0, 0);
	uint32_t xid = submit(0, 0, 0, 0, 0, 256);
	CHECK_EQ(nsent, 0);
	uint32_t err[] = {x, 2, 32, 4, 1, 1, 1};
	feed(err, 7);
	CHECK_EQ(info().version, 1);
	CHECK(info().peer_v1_only);
	CHECK_EQ(ctrs().vers_fallbacks, 1);
	CHECK_EQ(ctrs().err_vers_recv, 1);
	/* The held call went out as v1 RDMA_MSG; one credit until a v1
	 * reply grants more (RFC 8166 §3.3.3). */
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v1_decode(sent[0].bytes, sent[0].len, NULL, &H1), 0);
	CHECK_EQ(H1.vers, 1);
	CHECK_EQ(H1.xid, xid);
	CHECK_EQ(info().credits_granted, 1);
	CHECK(done_event(xid) == NULL); /* not failed: no call lost */
	/* Reconnect: no opener this time (§7.2), v1 at once. */
	F->conn_down = true;
	rpcrdma_engine_conn_lost(S.e, NOW);
	drain();
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	F->conn_down = false;
	CHECK_EQ(rpcrdma_engine_established(S.e, pd, 8, 4, NOW), 0);
	drain();
	CHECK_EQ(info().version, 1);
	CHECK(!info().negotiating);
	CHECK_EQ(ctrs().connprop_sent, 1);
	teardown();
}

/* §7.2: a real RDMA2_ERR_VERS (eight words, F_RESPONSE) and a v1 peer
 * answering with rdma_vers 1 both lead to v1. */
static void test_fallback_other_layouts(void)
{
	for (int k = 0; k < 2; k++) {
		cfg_reset();
		C.client = true;
		start(true);
		uint32_t x = word(0, 0);
		uint32_t xid = submit(0, 0, 0, 0, 0, 256);
		if (k == 0) {
			uint32_t err[] = {x, 2, 32, 4, F_RESP, 1, 1, 1};
			feed(err, 8);
		} else {
			uint32_t err[] = {x, 1, 32, 4, 1, 1, 1};
			feed(err, 7);
		}
		CHECK_EQ(info().version, 1);
		CHECK_EQ(nsent, 1);
		CHECK_EQ(rpcrdma_v1_decode(sent[0].bytes, sent[0].len, NULL, &H1),
			 0);
		CHECK_EQ(H1.xid, xid);
		teardown();
	}
}

/* §7.2: "if the initial negotiation message is lost or dropped": no
 * answer within neg_timeout_ms means v1. */
static void test_lost_opener(void)
{
	cfg_reset();
	C.client = true;
	C.neg_timeout_ms = 500;
	C.max_retries = 1;
	start(true);
	uint32_t xid = submit(0, 0, 0, 0, 0, 256);
	/* The opener's time-out is when the next tick must come. */
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, NOW), NOW + 500);
	rpcrdma_engine_tick(S.e, NOW + 499);
	drain();
	CHECK_EQ(nsent, 0);
	CHECK(info().negotiating);
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, NOW + 499), NOW + 500);
	rpcrdma_engine_tick(S.e, NOW + 500);
	drain();
	/* Not v1 on this connection: a slow server got the opener and
	 * follows it (§7.1).  The engine asks for a new connection, for
	 * the call it never sent. */
	CHECK_EQ(nsent, 0);
	CHECK(info().peer_v1_only);
	CHECK_EQ(ctrs().vers_fallbacks, 1);
	bool close = false;
	for (int i = 0; i < nev; i++)
		if (evs[i].type == RPCRDMA_EV_CLOSE) {
			close = true;
			CHECK(evs[i].reconnect);
			CHECK_EQ(evs[i].reason, RPCRDMA_ERR_TIMEOUT);
		}
	CHECK(close);
	CHECK(!done_event(xid));
	rpcrdma_engine_conn_lost(S.e, NOW + 501);
	drain();
	CHECK(!done_event(xid)); /* held for the next connection */
	/* The next connection starts in v1 and sends it. */
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	CHECK_EQ(rpcrdma_engine_established(S.e, pd, sizeof pd, 4, NOW + 600),
		 0);
	drain();
	CHECK_EQ(info().version, 1);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v1_decode(sent[0].bytes, sent[0].len, NULL, &H1), 0);
	CHECK_EQ(H1.xid, xid);
	teardown();
}

/* V2_ONLY against a v1-only server: the calls fail with a clear error,
 * exactly once, and the engine asks to close. */
static void test_v2_only_refused(void)
{
	cfg_reset();
	C.client = true;
	C.versions = RPCRDMA_ENGINE_V2_ONLY;
	start(true);
	uint32_t x = word(0, 0);
	uint32_t a = submit(0, 0, 0, 0, 0, 256);
	uint32_t b = submit(1, 0, 0, 0, 0, 256);
	uint32_t err[] = {x, 2, 32, 4, 1, 1, 1};
	feed(err, 7);
	CHECK_EQ(nsent, 0);
	const struct rpcrdma_engine_event *ea = done_event(a), *eb = done_event(b);
	CHECK(ea && ea->status == RPCRDMA_ERR_PEER_ERR_VERS);
	CHECK(eb && eb->status == RPCRDMA_ERR_PEER_ERR_VERS);
	bool close = false;
	int dones = 0;
	for (int i = 0; i < nev; i++) {
		if (evs[i].type == RPCRDMA_EV_CLOSE) {
			close = true;
			/* The reason travels with CLOSE: the driver fails
			 * later calls with it and does not reconnect. */
			CHECK_EQ(evs[i].reason, RPCRDMA_ERR_PEER_ERR_VERS);
			CHECK(!evs[i].reconnect);
		}
		dones += evs[i].type == RPCRDMA_EV_CALL_DONE;
	}
	CHECK(close);
	CHECK_EQ(dones, 2);
	/* A later call fails at once, too. */
	uint32_t c = submit(2, 0, 0, 0, 0, 256);
	CHECK(done_event(c) && done_event(c)->status == RPCRDMA_ERR_PEER_ERR_VERS);
	teardown();
}

/* ---------------------------------------------------------------------
 * §7.1, §7.3: the server side
 */

/* A v2 call (RDMA2_MSG, no chunks) of NFSv3 NULL, taken as one. */
static void feed_v2_call(uint32_t xid)
{
	uint8_t m[256];
	uint32_t ch[] = {xid, 2, 8, 0, 0, 0, 0, 0, 0};
	size_t n = xdr_words(m, ch, 9);
	rpc_call_hdr(m + n, 100003, 3, 0);
	rpcrdma_be32_put(m + n, xid);
	feed_bytes(m, n + 40);
	CHECK_EQ(nev, 1);
	CHECK_EQ(evs[0].type, RPCRDMA_EV_INCOMING_CALL);
}

/* A v2 opener gets our CONNPROP as its answer (F_RESPONSE, its xid, our
 * grant); calls are answered in v2 with F_RESPONSE; a v1 message later
 * gets ERR_VERS 2..2 (never switch mid-connection). */
static void test_server_v2(void)
{
	cfg_reset();
	start(true);
	CHECK_EQ(nsent, 0); /* a server speaks second */
	CHECK_EQ(info().version, 0);
	uint32_t op[] = {0x51, 2, 8, 5, 0, 1, 1, 4, 8192};
	feed(op, 9);
	CHECK_EQ(info().version, 2);
	CHECK_EQ(nsent, 1);
	uint32_t want[] = {0x51, 2, 16, 5, F_RESP, 2, 1, 4, 4096, 2, 4, 2};
	check_sent_words(0, want, 12);
	/* Signalled, so that its Responder slot comes back at once. */
	CHECK(sent[0].signaled);
	CHECK_EQ(info().peer_rbsiz, 8192);
	CHECK_EQ(info().send_threshold, 4096); /* our own Sends' limit */
	/* A v2 call. */
	feed_v2_call(0x61);
	/* The call takes the slot the answer used (the first, 0): an idle
	 * connection holds one slot's pages, not two. */
	CHECK_EQ(evs[0].call_id, 0);
	uint8_t rep[24];
	rpc_reply_hdr(rep, 0x61);
	struct rpcrdma_iov rv = {rep, 24, false};
	struct rpcrdma_reply_req rr = {&rv, 1, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, evs[0].call_id, &rr, NOW), 0);
	drain();
	CHECK_EQ(nsent, 1);
	uint32_t rw[] = {0x61, 2, 16, 0, F_RESP, 0, 0, 0, 0, 0x61, 1, 0, 0, 0, 0};
	check_sent_words(0, rw, 15);
	/* A v1 call on this v2 connection: ERR_VERS in v1's layout (the
	 * sender spoke v1), xid and vers echoed, range 2..2. */
	uint32_t v1c[] = {0x71, 1, 8, 0, 0, 0, 0, 0x71, 0, 2, 100003, 3, 0, 0, 0,
			  0, 0};
	feed(v1c, 17);
	CHECK_EQ(nsent, 1);
	uint32_t ev[] = {0x71, 1, 16, 4, 1, 2, 2};
	check_sent_words(0, ev, 7);
	teardown();
}

/* RFC 8166 §3.3.3 and the draft's §7: a client sends one message and
 * waits for its answer, so a server posts one receive until the first
 * message comes, and the rest at the end of that input, before the Send
 * of the answer that grants them (engine/recv_buffers.c).  The first
 * message's buffer is posted again first, so the client's next message
 * lands in it: an idle connection holds one buffer's pages, not two. */
static void check_all_posted(void)
{
	struct rpcrdma_engine_info in = info();
	CHECK_EQ(in.recvs_posted, in.grant + C.max_calls);
}

static void test_server_first_receive(void)
{
	cfg_reset();
	start(true);
	CHECK_EQ(info().recvs_posted, 1);
	const uint32_t first = S.e->recv_posted[S.e->recv_posted_head];
	uint32_t op[] = {0xa1, 2, 8, 5, 0, 1, 1, 4, 8192};
	feed(op, 9);
	const struct rpcrdma_engine_info in = info();
	CHECK_EQ(in.version, 2);
	CHECK_EQ(in.recvs_posted, in.grant + C.max_calls);
	/* The answer grants what is posted now (§3.3.1). */
	CHECK_EQ(nsent, 1);
	CHECK_EQ(word(0, 2), in.grant);
	CHECK(in.grant > 1);
	/* The next message lands where the opener did. */
	CHECK_EQ(S.e->recv_posted[S.e->recv_posted_head], first);
	feed_v2_call(0xa2);
	const uint8_t *b = rpcrdma_rbuf_ptr(S.e, first);
	const uint8_t *at = (const uint8_t *)evs[0].call;
	CHECK(at >= b && at < b + S.e->rsize);
	teardown();

	/* A v1 client's first call: held in its buffer until its reply
	 * (engine/recv_buffers.c), with the whole grant posted beside it. */
	cfg_reset();
	start(true);
	CHECK_EQ(info().recvs_posted, 1);
	uint32_t v1c[] = {0xa3, 1, 8, 0, 0, 0, 0, 0xa3, 0, 2, 100003, 3, 0, 0, 0,
			  0, 0};
	feed(v1c, 17);
	CHECK_EQ(nev, 1);
	CHECK_EQ(info().version, 1);
	check_all_posted();
	teardown();

	/* Whatever the first message is, even one that gets an error: the
	 * error's credit value is backed too. */
	cfg_reset();
	start(true);
	uint32_t bad[] = {0xa4, 7, 8, 0};
	feed(bad, 4);
	CHECK_EQ(nsent, 1);
	check_all_posted();
	CHECK(word(0, 2) <= info().grant);
	teardown();

	/* A server of version 1 only knows the version at once and may call
	 * first, and a client may be called as soon as it has a grant:
	 * both post them all at once. */
	for (int client = 0; client < 2; client++) {
		cfg_reset();
		C.client = client;
		if (!client)
			C.versions = RPCRDMA_ENGINE_V1_ONLY;
		start(true);
		check_all_posted();
		teardown();
	}
}

/* A v1 client's first message fixes v1 (§7.3); a v2 message later gets
 * RDMA2_ERR_VERS 1..1 in v2's layout. */
static void test_server_follows_v1(void)
{
	cfg_reset();
	start(true);
	uint32_t v1c[] = {0x81, 1, 8, 0, 0, 0, 0, 0x81, 0, 2, 100003, 3, 0, 0, 0,
			  0, 0};
	feed(v1c, 17);
	CHECK_EQ(info().version, 1);
	CHECK_EQ(nsent, 0);
	CHECK_EQ(nev, 1);
	uint32_t op[] = {0x82, 2, 8, 5, 0, 0};
	feed(op, 6);
	CHECK_EQ(nsent, 1);
	uint32_t want[] = {0x82, 2, 16, 4, F_RESP, 1, 1, 1};
	check_sent_words(0, want, 8);
	teardown();
}

/* A V1_ONLY server answers a v2 opener exactly as Linux does. */
static void test_v1_only_server(void)
{
	cfg_reset();
	C.versions = RPCRDMA_ENGINE_V1_ONLY;
	start(true);
	uint32_t op[] = {0x91, 2, 8, 5, 0, 0};
	feed(op, 6);
	CHECK_EQ(nsent, 1);
	uint32_t want[] = {0x91, 2, 16, 4, 1, 1, 1};
	check_sent_words(0, want, 7);
	CHECK_EQ(info().version, 1);
	teardown();
}

/* ---------------------------------------------------------------------
 * §5.3.3: errors the responder sends
 */
static void server_v2(void)
{
	start(true);
	uint32_t op[] = {0x11, 2, 8, 5, 0, 0};
	feed(op, 6);
	CHECK_EQ(info().version, 2);
}

static void test_server_errors(void)
{
	cfg_reset();
	C.limits.max_write_chunks = 2;
	C.limits.max_chunk_segments = 2;
	C.max_read_chunks = 1;
	server_v2();
	/* Unknown header type: RDMA2_ERR_INVAL_HTYPE (§5.2 MUST). */
	uint32_t ht[] = {0x21, 2, 8, 9, 0, 0, 0};
	feed(ht, 7);
	uint32_t w1[] = {0x21, 2, 16, 4, F_RESP, 3};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w1, 6);
	/* ... but never to a response (errors never flow to a responder). */
	uint32_t htr[] = {0x22, 2, 8, 9, F_RESP, 0, 0};
	feed(htr, 7);
	CHECK_EQ(nsent, 0);
	/* Undecodable: a bad optional-data word -> RDMA2_ERR_BAD_XDR. */
	uint32_t bx[] = {0x23, 2, 8, 0, 0, 0, 7, 0, 0};
	feed(bx, 9);
	uint32_t w2[] = {0x23, 2, 16, 4, F_RESP, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w2, 6);
	/* A known property that does not fit its typedef (§4.1). */
	uint32_t bp[] = {0x24, 2, 8, 5, 0, 1, 2, 4, 9};
	feed(bp, 9);
	uint32_t w3[] = {0x24, 2, 16, 4, F_RESP, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w3, 6);
	/* Three Write chunks, we take two: RDMA2_ERR_WRITE_CHUNKS 2. */
	uint32_t wc[] = {0x25, 2, 8, 0, 0, 0, 0,
			 1, 1, 5, 8, 0, 0x1000,
			 1, 1, 5, 8, 0, 0x2000,
			 1, 1, 5, 8, 0, 0x3000, 0, 0,
			 0x25, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	feed(wc, 37);
	uint32_t w4[] = {0x25, 2, 16, 4, F_RESP, 5, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w4, 7);
	/* A Write chunk of three segments, we take two: ERR_SEGMENTS 2. */
	uint32_t sg[] = {0x26, 2, 8, 0, 0, 0, 0,
			 1, 3, 5, 8, 0, 0x1000, 5, 8, 0, 0x2000, 5, 8, 0, 0x3000, 0,
			 0, 0x26, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	feed(sg, 33);
	uint32_t w5[] = {0x26, 2, 16, 4, F_RESP, 6, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w5, 7);
	/* Two Read chunks, we take one: RDMA2_ERR_READ_CHUNKS 1. */
	uint32_t rc[] = {0x27, 2, 8, 0, 0, 0,
			 1, 40, 5, 4, 0, 0x1000,
			 1, 44, 6, 4, 0, 0x2000, 0, 0, 0,
			 0x27, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	feed(rc, 31);
	uint32_t w6[] = {0x27, 2, 16, 4, F_RESP, 4, 1};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w6, 7);
	/* rdma_inv_handle naming no handle of the header: BAD_XDR. */
	uint32_t ih[] = {0x28, 2, 8, 0, 0, 0x4242, 0, 0, 0,
			 0x28, 0, 2, 100003, 3, 0, 0, 0, 0, 0};
	feed(ih, 19);
	uint32_t w7[] = {0x28, 2, 16, 4, F_RESP, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w7, 6);
	/* §3.2 MUST: F_RESPONSE clear but the RPC message is a REPLY. */
	uint32_t fr[] = {0x29, 2, 8, 0, 0, 0, 0, 0, 0, 0x29, 1, 0, 0, 0, 0};
	feed(fr, 15);
	uint32_t w8[] = {0x29, 2, 16, 4, F_RESP, 2};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w8, 6);
	/* An RDMA2_ERROR for no call of ours: never answered. */
	uint32_t er[] = {0x2a, 2, 8, 4, F_RESP, 9};
	feed(er, 6);
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_counters c = ctrs();
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_INVAL_HTYPE], 1);
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_BAD_XDR], 4);
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_WRITE_CHUNKS], 1);
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_SEGMENTS], 1);
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_READ_CHUNKS], 1);
	teardown();
}

/* Deliver a v2 call with the given chunk words (after rdma_inv_handle)
 * and answer it with `result` bytes DDP-eligible + a body of body_len. */
/* The status of the one REPLY_SENT event drain() saw (1: none, or more
 * than one). */
static int reply_sent_status(void)
{
	int st = 1, n = 0;
	for (int i = 0; i < nev; i++)
		if (evs[i].type == RPCRDMA_EV_REPLY_SENT) {
			st = evs[i].status;
			n++;
		}
	return n == 1 ? st : 1;
}

static void call_and_reply(uint32_t xid, uint32_t inv, const uint32_t *lists,
			   size_t nl, size_t result, size_t body_len)
{
	uint8_t m[1024];
	uint32_t pre[] = {xid, 2, 8, 0, 0, inv};
	size_t n = xdr_words(m, pre, 6);
	n += xdr_words(m + n, lists, nl);
	rpc_call_hdr(m + n, 100003, 3, 6);
	rpcrdma_be32_put(m + n, xid);
	feed_bytes(m, n + 40);
	CHECK_EQ(nev, 1);
	if (nev != 1)
		return;
	static uint8_t rep[24], data[8192], body[8192];
	rpc_reply_hdr(rep, xid);
	struct rpcrdma_iov rv[3] = {{rep, 24, false}, {data, result, true},
				    {body, body_len, false}};
	struct rpcrdma_reply_req rr = {rv, 3, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, evs[0].call_id, &rr, NOW), 0);
	drain();
}

/* Errors decided while replying: a result larger than its Write chunk
 * (WRITE_RESOURCE: which chunk, how much), a Long Reply without a big
 * enough Reply chunk (REPLY_RESOURCE: how much), more work requests than
 * the send queue can ever hold (SYSTEM). */
static void test_reply_errors(void)
{
	cfg_reset();
	C.sq_depth = 8;
	server_v2();
	/* Write list: one chunk of one 100-byte segment; result 300. */
	uint32_t l1[] = {0, 1, 1, 7, 100, 0, 0x1000, 0, 0};
	call_and_reply(0x31, 0, l1, 9, 300, 0);
	CHECK_EQ(nsent, 1);
	uint32_t w1[] = {0x31, 2, 16, 4, F_RESP, 7, 1, 300};
	check_sent_words(0, w1, 8);
	CHECK_EQ(nwrites, 0);
	CHECK_EQ(reply_sent_status(), RPCRDMA_ERR_PEER_ERR_RESOURCE);
	/* No chunks; a 6000-byte body cannot go inline. */
	uint32_t l2[] = {0, 0, 0};
	call_and_reply(0x32, 0, l2, 3, 0, 6000);
	uint32_t w2[] = {0x32, 2, 16, 4, F_RESP, 8, 6024};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w2, 7);
	CHECK_EQ(reply_sent_status(), RPCRDMA_ERR_PEER_ERR_RESOURCE);
	/* Ten 4-byte segments for a 40-byte result with sq_depth 8. */
	uint32_t l3[3 + 4 * 10 + 3];
	size_t k = 0;
	l3[k++] = 0;
	l3[k++] = 1;
	l3[k++] = 10;
	for (int i = 0; i < 10; i++) {
		l3[k++] = 9;
		l3[k++] = 4;
		l3[k++] = 0;
		l3[k++] = 0x1000u + 4u * (uint32_t)i;
	}
	l3[k++] = 0;
	l3[k++] = 0;
	call_and_reply(0x33, 0, l3, k, 40, 0);
	uint32_t w3[] = {0x33, 2, 16, 4, F_RESP, 9};
	CHECK_EQ(nsent, 1);
	check_sent_words(0, w3, 6);
	CHECK_EQ(reply_sent_status(), RPCRDMA_ERR_PEER_ERR_SYSTEM);
	teardown();
}

/* §3.3, §8.4: the responder Sends With Invalidate exactly the handle the
 * call named, and not at all when it named none. */
static void test_inv_handle_responder(void)
{
	cfg_reset();
	server_v2();
	uint32_t l[] = {0, 1, 1, 0x77, 100, 0, 0x1000, 0, 1, 1, 0x78, 4096, 0,
			0x9000};
	call_and_reply(0x41, 0x78, l, 14, 50, 0);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND_WITH_INV);
	CHECK_EQ(sent[0].inv_rkey, 0x78);
	CHECK_EQ(nwrites, 1);
	call_and_reply(0x42, 0, l, 14, 50, 0);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND);
	teardown();
	/* Not allowed to Send With Invalidate ourselves: plain Send. */
	cfg_reset();
	C.remote_inv = false;
	server_v2();
	call_and_reply(0x43, 0x78, l, 14, 50, 0);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND);
	teardown();
}

/* §3.3: the requester names one handle of the call: the first Write
 * chunk's; none with remote invalidation off. */
static void test_inv_handle_requester(void)
{
	cfg_reset();
	client_v2();
	uint32_t xid = submit(0, 0, 0, 2, 1000, 256);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 2);
	CHECK(H2.inv_handle != 0);
	CHECK_EQ(H2.inv_handle, H2.chunks.writes[0].segs[0].handle);
	/* The reply invalidated it: only the other chunk is LOCAL_INV'd. */
	uint8_t m[256];
	uint32_t rh[] = {xid, 2, 8, 0, F_RESP, 0, 0, 1, 1,
			 H2.chunks.writes[0].segs[0].handle, 10, 0,
			 (uint32_t)H2.chunks.writes[0].segs[0].offset,
			 1, 1, H2.chunks.writes[1].segs[0].handle, 0, 0,
			 (uint32_t)H2.chunks.writes[1].segs[0].offset, 0, 0};
	/* offsets: 64-bit, high word first */
	rh[11] = (uint32_t)(H2.chunks.writes[0].segs[0].offset >> 32);
	rh[17] = (uint32_t)(H2.chunks.writes[1].segs[0].offset >> 32);
	size_t n = xdr_words(m, rh, 21);
	rpc_reply_hdr(m + n, xid);
	F->mr[H2.chunks.writes[0].segs[0].handle].rvalid = false;
	CHECK_EQ(rpcrdma_engine_recv(S.e, m, n + 24, true,
				     H2.chunks.writes[0].segs[0].handle, NOW),
		 0);
	drain();
	CHECK_EQ(nlinv, 1);
	CHECK(done_event(xid) && done_event(xid)->status == 0);
	CHECK_EQ(ctrs().remote_invs, 1);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
	cfg_reset();
	C.remote_inv = false;
	client_v2();
	submit(0, 0, 0, 1, 1000, 256);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.inv_handle, 0);
	teardown();
}

/* ---------------------------------------------------------------------
 * §5.3.3: the requester's recoveries, same XID
 */
static void feed_err(uint32_t xid, const uint32_t *body, size_t nb)
{
	uint8_t m[128];
	uint32_t pre[] = {xid, 2, 1, 4, F_RESP};
	size_t n = xdr_words(m, pre, 5);
	n += xdr_words(m + n, body, nb);
	feed_bytes(m, n);
}

static void test_recover_read_chunks(void)
{
	cfg_reset();
	client_v2();
	/* 5000-byte DDP argument: a Chunked call with one Read chunk. */
	uint32_t xid = submit(0, 0, 6000, 0, 0, 256);
	CHECK_EQ(ctrs().chunked_calls, 1);
	uint32_t e1[] = {RPCRDMA_V2_ERR_READ_CHUNKS, 0};
	feed_err(xid, e1, 2);
	/* Invalidated, then resent as a Long Call (Position-Zero). */
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.xid, xid);
	CHECK_EQ(H2.htype, RPCRDMA_V2_NOMSG);
	CHECK(H2.chunks.nreads >= 1);
	for (uint32_t i = 0; i < H2.chunks.nreads; i++)
		CHECK_EQ(H2.chunks.reads[i].position, 0);
	CHECK(done_event(xid) == NULL);
	CHECK_EQ(ctrs().recoveries, 1);
	/* The same error for a Long Call: "MUST terminate". */
	feed_err(xid, e1, 2);
	CHECK_EQ(nsent, 0);
	CHECK(done_event(xid) &&
	      done_event(xid)->status == RPCRDMA_ERR_PEER_ERR_RESOURCE);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
}

static void test_recover_write_chunks(void)
{
	cfg_reset();
	client_v2();
	uint32_t xid = submit(0, 0, 0, 3, 1000, 2048);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 3);
	CHECK(!H2.chunks.has_reply);
	uint32_t e1[] = {RPCRDMA_V2_ERR_WRITE_CHUNKS, 1};
	feed_err(xid, e1, 2);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.xid, xid);
	CHECK_EQ(H2.chunks.nwrites, 1);
	CHECK(H2.chunks.has_reply); /* the other results come inline */
	teardown();
}

/* A v2 reply (RDMA2_MSG) to xid whose Write list holds nw chunks of one
 * segment each (a segment of length ~0u: an empty chunk), no Reply
 * chunk, then a 24-byte RPC reply.  Fed as received; true when the
 * engine took it (it completed the call). */
static bool feed_reply_writes(uint32_t xid, const struct rpcrdma_segment *w,
			      unsigned nw)
{
	uint32_t h[6 + 1 + 8 * 6 + 2];
	size_t k = 0;
	uint32_t pre[] = {xid, 2, 8, 0, F_RESP, 0, 0 /* no Read list */};
	for (unsigned i = 0; i < 7; i++)
		h[k++] = pre[i];
	for (unsigned i = 0; i < nw; i++) {
		h[k++] = 1;
		if (w[i].length == ~0u) {
			h[k++] = 0;
			continue;
		}
		h[k++] = 1;
		h[k++] = w[i].handle;
		h[k++] = w[i].length;
		h[k++] = (uint32_t)(w[i].offset >> 32);
		h[k++] = (uint32_t)w[i].offset;
	}
	h[k++] = 0; /* end of the Write list */
	h[k++] = 0; /* no Reply chunk */
	uint8_t m[512];
	size_t n = xdr_words(m, h, k);
	rpc_reply_hdr(m + n, xid);
	uint64_t before = ctrs().bad_replies;
	feed_bytes(m, n + 24);
	return ctrs().bad_replies == before;
}

/* RFC 8166 §3.4.6, §4.3.2.3, §4.5; draft §5.3.3: after a recovery the
 * reply's Write list is checked against what the attempt it answers
 * offered, not against the caller's results: more Write chunks than that
 * attempt offered, a chunk longer than offered, a segment the attempt
 * did not offer (an earlier attempt's handle, already invalidated) or
 * data in a chunk offered empty is a header error, silently discarded;
 * the call stays outstanding for its real reply. */
static void test_recover_write_list_checked(void)
{
	cfg_reset();
	client_v2();
	uint32_t xid = submit(0, 0, 0, 2, 1000, 2048);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 2);
	struct rpcrdma_segment first1 = H2.chunks.writes[1].segs[0];
	uint32_t e1[] = {RPCRDMA_V2_ERR_WRITE_CHUNKS, 1};
	feed_err(xid, e1, 2);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 1);
	struct rpcrdma_segment cur = H2.chunks.writes[0].segs[0];
	CHECK_EQ(cur.length, 1000);
	/* Two Write chunks back; the second names the first attempt's
	 * handle with 1200 bytes nobody wrote. */
	struct rpcrdma_segment two[2] = {cur, first1};
	two[0].length = 10;
	two[1].length = 1200;
	CHECK(!feed_reply_writes(xid, two, 2));
	CHECK(done_event(xid) == NULL);
	/* The same with the second chunk empty: still one too many. */
	two[1].length = ~0u;
	CHECK(!feed_reply_writes(xid, two, 2));
	/* One chunk, longer than offered. */
	struct rpcrdma_segment one = cur;
	one.length = 1001;
	CHECK(!feed_reply_writes(xid, &one, 1));
	/* One chunk, not the segment offered (another handle, or an offset
	 * moved). */
	one = first1;
	one.length = 10;
	CHECK(!feed_reply_writes(xid, &one, 1));
	one = cur;
	one.offset += 8;
	one.length = 10;
	CHECK(!feed_reply_writes(xid, &one, 1));
	CHECK(done_event(xid) == NULL);
	/* The real reply: 10 bytes in the one chunk offered, the second
	 * result inline (no Write chunk for it). */
	one = cur;
	one.length = 10;
	CHECK(feed_reply_writes(xid, &one, 1));
	const struct rpcrdma_engine_event *d = done_event(xid);
	CHECK(d != NULL);
	if (d) {
		CHECK_EQ(d->status, 0);
		CHECK_EQ(d->result_len[0], 10);
		CHECK_EQ(d->result_len[1], 0);
	}
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();

	/* WRITE_RESOURCE: chunk 2 resent empty (§4.3.2.3): a reply putting
	 * a segment (any length) in it is discarded; an empty one is the
	 * reply. */
	cfg_reset();
	C.resend_after_reply = true;
	client_v2();
	xid = submit(0, 0, 0, 2, 1000, 2048);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	first1 = H2.chunks.writes[1].segs[0];
	uint32_t e2[] = {RPCRDMA_V2_ERR_WRITE_RESOURCE, 2, 3000};
	feed_err(xid, e2, 3);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 2);
	CHECK_EQ(H2.chunks.writes[1].nsegs, 0);
	cur = H2.chunks.writes[0].segs[0];
	two[0] = cur;
	two[0].length = 5;
	two[1] = first1;
	two[1].length = 700;
	CHECK(!feed_reply_writes(xid, two, 2));
	two[1].length = 0;
	CHECK(!feed_reply_writes(xid, two, 2));
	CHECK(done_event(xid) == NULL);
	two[1].length = ~0u;
	CHECK(feed_reply_writes(xid, two, 2));
	d = done_event(xid);
	CHECK(d && d->status == 0 && d->result_len[0] == 5 &&
	      d->result_len[1] == 0);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
}

/* By default a call whose results did not fit is not sent again: the
 * Responder has run it already (issue: never executed twice). */
static void test_no_resend_after_reply(void)
{
	cfg_reset();
	client_v2();
	uint32_t xid = submit(0, 0, 0, 2, 1000, 2048);
	uint32_t e1[] = {RPCRDMA_V2_ERR_WRITE_RESOURCE, 2, 3000};
	feed_err(xid, e1, 3);
	CHECK_EQ(nsent, 0);
	CHECK(done_event(xid) &&
	      done_event(xid)->status == RPCRDMA_ERR_PEER_ERR_RESOURCE);
	uint32_t x2 = submit(1, 0, 0, 0, 0, 2000);
	uint32_t e2[] = {RPCRDMA_V2_ERR_REPLY_RESOURCE, 1500};
	feed_err(x2, e2, 2);
	CHECK_EQ(nsent, 0);
	CHECK(done_event(x2) &&
	      done_event(x2)->status == RPCRDMA_ERR_PEER_ERR_RESOURCE);
	CHECK_EQ(ctrs().recoveries, 0);
	teardown();
}

static void test_recover_write_resource(void)
{
	cfg_reset();
	C.resend_after_reply = true;
	client_v2();
	uint32_t xid = submit(0, 0, 0, 2, 1000, 2048);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK(!H2.chunks.has_reply);
	uint32_t e1[] = {RPCRDMA_V2_ERR_WRITE_RESOURCE, 2, 3000};
	feed_err(xid, e1, 3);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nwrites, 2);
	CHECK_EQ(H2.chunks.writes[0].nsegs, 1);
	CHECK_EQ(H2.chunks.writes[1].nsegs, 0); /* §4.3.2.3: inline */
	CHECK(H2.chunks.has_reply);
	/* Index 0 ("could not tell which") cannot be helped. */
	feed_err(xid, (const uint32_t[]){RPCRDMA_V2_ERR_WRITE_RESOURCE, 0, 0},
		 3);
	CHECK(done_event(xid) &&
	      done_event(xid)->status == RPCRDMA_ERR_PEER_ERR_RESOURCE);
	teardown();
}

static void test_recover_reply_resource(void)
{
	cfg_reset();
	C.resend_after_reply = true;
	client_v2();
	/* reply_max 2000 fits the 4096 threshold: no Reply chunk. */
	uint32_t xid = submit(0, 0, 0, 0, 0, 2000);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK(!H2.chunks.has_reply);
	uint32_t e1[] = {RPCRDMA_V2_ERR_REPLY_RESOURCE, 1500};
	feed_err(xid, e1, 2);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK(H2.chunks.has_reply);
	CHECK_EQ(H2.chunks.reply.segs[0].length, 2000);
	/* More than the caller's buffer: fail, clearly. */
	uint32_t x2 = submit(1, 0, 0, 0, 0, 2000);
	uint32_t e2[] = {RPCRDMA_V2_ERR_REPLY_RESOURCE, 3000};
	feed_err(x2, e2, 2);
	CHECK(done_event(x2) &&
	      done_event(x2)->status == RPCRDMA_ERR_PEER_ERR_RESOURCE);
	teardown();
}

static void test_recover_segments(void)
{
	cfg_reset();
	C.max_inline_send = 1024;
	client_v2();
	/* An unaligned 2001-byte body is a Long Call of several segments
	 * (pieces and pads); after ERR_SEGMENTS it is one. */
	uint32_t xid = submit(0, 2000, 1, 0, 0, 256);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.htype, RPCRDMA_V2_NOMSG);
	CHECK(H2.chunks.nreads > 1);
	uint32_t e1[] = {RPCRDMA_V2_ERR_SEGMENTS, 1};
	feed_err(xid, e1, 2);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(rpcrdma_v2_decode(sent[0].bytes, sent[0].len, NULL, &H2), 0);
	CHECK_EQ(H2.chunks.nreads, 1);
	CHECK_EQ(H2.chunks.reads[0].position, 0);
	CHECK_EQ(H2.chunks.reads[0].target.length, 40 + 2000 + 4);
	/* The one segment holds the whole stream, padding zeroed. */
	const uint8_t *p = fake_remote(F, 0, H2.chunks.reads[0].target.offset,
				       2044, H2.chunks.reads[0].target.handle,
				       RPCRDMA_ACCESS_REMOTE_READ);
	CHECK(p != NULL);
	if (p) {
		CHECK_MEM(p + 40, big[0], 2000);
		CHECK_EQ(p[2040], big[0][8192]);
		CHECK(p[2041] == 0 && p[2042] == 0 && p[2043] == 0);
	}
	teardown();
}

/* Permanent and unknown errors end the call with their own status; an
 * RDMA2_ERROR's credit value is ignored (§5.3.3). */
static void test_final_errors(void)
{
	cfg_reset();
	client_v2();
	uint32_t g = info().credits_granted;
	static const struct {
		uint32_t code;
		int status;
	} t[] = {{RPCRDMA_V2_ERR_SYSTEM, RPCRDMA_ERR_PEER_ERR_SYSTEM},
		 {RPCRDMA_V2_ERR_BAD_XDR, RPCRDMA_ERR_PEER_ERR_CHUNK},
		 {RPCRDMA_V2_ERR_INVAL_HTYPE, RPCRDMA_ERR_PEER_ERROR},
		 {RPCRDMA_V2_ERR_VERS, RPCRDMA_ERR_PEER_ERR_VERS},
		 {77, RPCRDMA_ERR_PEER_ERROR}};
	for (int i = 0; i < 5; i++) {
		uint32_t xid = submit(i, 0, 0, 0, 0, 256);
		uint32_t b[] = {t[i].code, 1, 2};
		feed_err(xid, b, t[i].code == RPCRDMA_V2_ERR_VERS ? 3 : 1);
		const struct rpcrdma_engine_event *ev = done_event(xid);
		CHECK(ev != NULL);
		CHECK_EQ(ev ? ev->status : 0, t[i].status);
		CHECK_EQ(ev ? ev->peer_err : 0, t[i].code);
	}
	CHECK_EQ(info().credits_granted, g); /* feed_err says credit 1 */
	teardown();
}

/* §4.2.2: a server sends reverse-direction calls only as the client's
 * Reverse Request Support allows: none, inline only, or any shape. */
static void test_reverse_request_support(void)
{
	for (uint32_t brs = 0; brs < 4; brs++) {
		cfg_reset();
		start(true);
		if (brs < 3) {
			uint32_t op[] = {0x11, 2, 8, 5, 0, 1, 2, 4, brs};
			feed(op, 9);
		} else {
			/* No BRS property: the default, INLINE (Table 1). */
			uint32_t op[] = {0x11, 2, 8, 5, 0, 0};
			feed(op, 6);
		}
		bool any = brs == RPCRDMA_V2_RVREQSUP_GENL;
		bool none = brs == RPCRDMA_V2_RVREQSUP_NONE;
		/* A call that needs chunks (a Read chunk argument), then a
		 * Short one (which waits for the one credit if the first
		 * went out). */
		uint32_t chunked = submit(1, 0, 6000, 0, 0, 256);
		CHECK_EQ(nsent, any ? 1 : 0);
		if (!any)
			CHECK(done_event(chunked) &&
			      done_event(chunked)->status ==
				      RPCRDMA_ERR_PEER_NO_REVERSE);
		uint32_t small = submit(0, 0, 0, 0, 0, 256);
		CHECK_EQ(nsent, any || none ? 0 : 1);
		if (none)
			CHECK(done_event(small) && done_event(small)->status ==
							   RPCRDMA_ERR_PEER_NO_REVERSE);
		CHECK_EQ(ctrs().reverse_refused, any ? 0u : none ? 2u : 1u);
		teardown();
	}
}

/* ---------------------------------------------------------------------
 * Two engines back to back
 */
static struct side A, B;

static void pair(uint32_t va, uint32_t vb)
{
	memset(F, 0, sizeof *F);
	side_init(&A, F, 0);
	side_init(&B, F, 1);
	struct rpcrdma_engine_config c;
	rpcrdma_engine_config_default(&c);
	c.max_calls = 8;
	c.credits = 8;
	c.client = true;
	c.versions = va;
	c.xid_seed = 0x1000;
	CHECK_EQ(side_create(&A, &c), 0);
	c.client = false;
	c.versions = vb;
	c.xid_seed = 0x8000;
	CHECK_EQ(side_create(&B, &c), 0);
	connect_pair(&A, &B, 4);
}

/* One call from `from` to `to` of the given shape; the callee echoes the
 * argument as a DDP-eligible result plus a body of body bytes.  Returns
 * true when the bytes came back intact. */
static bool roundtrip(struct side *from, struct side *to, size_t arg,
		      size_t body, size_t res_max, size_t reply_max)
{
	static uint8_t h[40], a[70000], out[70000], rb[70000];
	rpc_call_hdr(h, 100003, 3, 6);
	fill_pattern(a, arg, (uint32_t)(arg + body));
	memset(out, 0, sizeof out);
	struct rpcrdma_iov v[2] = {{h, 40, false}, {a, arg, res_max != 0}};
	struct rpcrdma_iov r = {out, res_max, true};
	struct rpcrdma_call_req q = {v, 2, rb, reply_max, &r, res_max ? 1 : 0,
				     (void *)0x1, false};
	uint32_t xid;
	int src = rpcrdma_engine_submit_call(from->e, &q, &xid, 0);
	if (src) {
		fprintf(stderr, "submit failed %d (arg %zu)\n", src, arg);
		return false;
	}
	pump(&A, &B);
	struct rpcrdma_engine_event ev;
	bool got = false;
	while (rpcrdma_engine_poll_event(to->e, &ev))
		if (ev.type == RPCRDMA_EV_INCOMING_CALL) {
			got = true;
			break;
		}
	if (!got) {
		fprintf(stderr, "no incoming call (arg %zu)\n", arg);
		return false;
	}
	/* The rebuilt call ends with the argument (XDR-padded). */
	if (ev.call_len < 40 + arg ||
	    memcmp((const uint8_t *)ev.call + 40, a, arg)) {
		fprintf(stderr, "call bytes differ (arg %zu)\n", arg);
		return false;
	}
	static uint8_t rep[24], body_b[70000];
	rpc_reply_hdr(rep, xid);
	fill_pattern(body_b, body, 9);
	struct rpcrdma_iov rv[3] = {{rep, 24, false},
				    {(uint8_t *)ev.call + 40, arg, true},
				    {body_b, body, false}};
	struct rpcrdma_reply_req rr = {rv, 3, NULL, false};
	if (rpcrdma_engine_submit_reply(to->e, ev.call_id, &rr, 0)) {
		fprintf(stderr, "submit_reply failed (arg %zu)\n", arg);
		return false;
	}
	pump(&A, &B);
	while (rpcrdma_engine_poll_event(to->e, &ev))
		;
	bool ok = false;
	while (rpcrdma_engine_poll_event(from->e, &ev)) {
		if (ev.type != RPCRDMA_EV_CALL_DONE || ev.xid != xid)
			continue;
		ok = ev.status == 0;
		if (ok && res_max)
			ok = ev.result_len[0] == arg && !memcmp(out, a, arg) &&
			     ev.reply_len == 24 + body;
		else if (ok)
			ok = ev.reply_len == 24 + arg + (4 - arg % 4) % 4 + body;
		if (!ok)
			fprintf(stderr, "arg %zu body %zu: status %d res %zu "
				"reply %zu\n", arg, body, ev.status,
				ev.result_len[0], ev.reply_len);
	}
	return ok;
}

static void shapes(const char *what)
{
	/* Short; Chunked call + Write chunk; Long Call; Long Reply; and
	 * the same from the server to the client (reverse direction). */
	struct side *dirs[2][2] = {{&A, &B}, {&B, &A}};
	for (int d = 0; d < 2; d++) {
		struct side *f = dirs[d][0], *t = dirs[d][1];
		int bad = 0;
		bad += !roundtrip(f, t, 100, 0, 4096, 256);
		bad += !roundtrip(f, t, 60000, 0, 65536, 256);
		bad += !roundtrip(f, t, 20000, 0, 0, 30000);
		bad += !roundtrip(f, t, 100, 20000, 4096, 30000);
		for (size_t n = 4000; n < 4200; n += 13)
			bad += !roundtrip(f, t, n, n & ~(size_t)3, 8192, 8192);
		if (bad)
			fprintf(stderr, "%s dir %d: %d bad round trips\n", what, d,
				bad);
		CHECK_EQ(bad, 0);
	}
	CHECK_EQ(F->violations, 0);
	CHECK_EQ(fake_credit_violations, 0);
}

static void test_pair_v2(void)
{
	pair(RPCRDMA_ENGINE_PREFER_V2, RPCRDMA_ENGINE_PREFER_V2);
	struct rpcrdma_engine_info ia, ib;
	rpcrdma_engine_get_info(A.e, &ia);
	rpcrdma_engine_get_info(B.e, &ib);
	CHECK_EQ(ia.version, 2);
	CHECK_EQ(ib.version, 2);
	shapes("v2");
	struct rpcrdma_engine_counters ca, cb;
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK(ca.short_calls && ca.chunked_calls && ca.long_calls);
	CHECK(cb.short_calls && cb.chunked_calls && cb.long_calls);
	CHECK(ca.replies_long && cb.replies_long);
	CHECK(ca.remote_invs > 0 && cb.send_with_inv > 0);
	CHECK(cb.remote_invs > 0 && ca.send_with_inv > 0);
	CHECK_EQ(ca.connprop_sent, 1);
	CHECK_EQ(cb.connprop_sent, 1);
	CHECK_EQ(ca.vers_fallbacks, 0);
	F->conn_down = true;
	rpcrdma_engine_destroy(A.e);
	rpcrdma_engine_destroy(B.e);
	CHECK_EQ(F->live_remote[0], 0);
	CHECK_EQ(F->live_remote[1], 0);
}

static void test_pair_v2_against_v1(void)
{
	pair(RPCRDMA_ENGINE_PREFER_V2, RPCRDMA_ENGINE_V1_ONLY);
	struct rpcrdma_engine_info ia;
	rpcrdma_engine_get_info(A.e, &ia);
	CHECK_EQ(ia.version, 1);
	shapes("v2 vs v1");
	struct rpcrdma_engine_counters ca, cb;
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(ca.err_vers_recv, 1);
	CHECK_EQ(cb.err_vers_sent, 1);
	CHECK_EQ(ca.vers_fallbacks, 1);
	F->conn_down = true;
	rpcrdma_engine_destroy(A.e);
	rpcrdma_engine_destroy(B.e);
	/* A v1 client against a v2-capable server: v1, no error at all. */
	pair(RPCRDMA_ENGINE_V1_ONLY, RPCRDMA_ENGINE_PREFER_V2);
	shapes("v1 vs v2");
	struct rpcrdma_engine_info ib;
	rpcrdma_engine_get_info(B.e, &ib);
	CHECK_EQ(ib.version, 1);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.err_vers_sent, 0);
	CHECK_EQ(cb.connprop_sent, 0);
	F->conn_down = true;
	rpcrdma_engine_destroy(A.e);
	rpcrdma_engine_destroy(B.e);
}

static void test_pair_v1(void)
{
	pair(RPCRDMA_ENGINE_V1_ONLY, RPCRDMA_ENGINE_V1_ONLY);
	shapes("v1");
	F->conn_down = true;
	rpcrdma_engine_destroy(A.e);
	rpcrdma_engine_destroy(B.e);
}

int main(void)
{
	test_opener_then_v2();
	test_fallback_linux_layout();
	test_fallback_other_layouts();
	test_lost_opener();
	test_v2_only_refused();
	test_server_v2();
	test_server_first_receive();
	test_server_follows_v1();
	test_v1_only_server();
	test_server_errors();
	test_reply_errors();
	test_inv_handle_responder();
	test_inv_handle_requester();
	test_recover_read_chunks();
	test_recover_write_chunks();
	test_recover_write_list_checked();
	test_no_resend_after_reply();
	test_recover_write_resource();
	test_recover_reply_resource();
	test_recover_segments();
	test_final_errors();
	test_reverse_request_support();
	test_pair_v2();
	test_pair_v2_against_v1();
	test_pair_v1();
	free(F);
	TEST_MAIN_END();
}
