/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Engine driven by scripted, byte-exact inputs: error replies, reserved
 * procedures, credits, thresholds, peer errors.  Each test names the RFC
 * section it checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_engine_fake.h"

static struct fake *F;
static struct side S;

struct sent {
	enum rpcrdma_wr_opcode op;
	uint8_t bytes[8192];
	size_t len;
};
static struct sent sent[64];
static int nsent;

/* Pop every work request; keep Sends' bytes. */
static void drain(void)
{
	struct rpcrdma_engine_wr w;
	nsent = 0;
	while (rpcrdma_engine_pop_wr(S.e, &w)) {
		if (w.is_recv)
			continue;
		if (nsent >= 64)
			continue;
		struct sent *s = &sent[nsent++];
		s->op = w.send.opcode;
		s->len = fake_send_gather(&w.send, s->bytes);
		fake_send_done(S.e, &w.send, 0);
	}
}

/* Send queue depth for the next setup (0: the default). */
static uint32_t cfg_sq_depth;
static bool cfg_accept_msgp;

static void setup_pd(const void *pdata, size_t len, uint32_t max_calls,
		     uint32_t credits)
{
	if (!F)
		F = calloc(1, sizeof *F);
	memset(F, 0, sizeof *F);
	side_init(&S, F, 0);
	struct rpcrdma_engine_config c;
	rpcrdma_engine_config_default(&c);
	c.max_calls = max_calls;
	c.credits = credits;
	c.xid_seed = 0x100;
	c.versions = RPCRDMA_ENGINE_V1_ONLY; /* v1 scripts */
	c.sq_depth = cfg_sq_depth;
	c.accept_msgp = cfg_accept_msgp;
	CHECK_EQ(side_create(&S, &c), 0);
	CHECK_EQ(rpcrdma_engine_established(S.e, pdata, len, 4, 0), 0);
	drain();
}

static void setup(uint32_t max_calls, uint32_t credits)
{
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	setup_pd(pd, sizeof pd, max_calls, credits);
}

static void teardown(void)
{
	F->conn_down = true; /* outstanding calls die with the engine */
	rpcrdma_engine_destroy(S.e);
	S.e = NULL;
}

static void feed(const uint32_t *w, size_t n)
{
	uint8_t b[512];
	size_t len = xdr_words(b, w, n);
	CHECK_EQ(rpcrdma_engine_recv(S.e, b, len, false, 0, 0), 0);
	drain();
}

static void check_sent_words(int i, const uint32_t *w, size_t n)
{
	uint8_t b[512];
	size_t len = xdr_words(b, w, n);
	CHECK_EQ(sent[i].len, len);
	CHECK_MEM(sent[i].bytes, b, len);
}

/* RFC 8166 §4.5, §4.5.1: a version-2 call is answered ERR_VERS with the
 * same XID and version, low = high = 1, our grant in rdma_credit. */
static void test_err_vers(void)
{
	setup(8, 32);
	static const uint32_t in[] = {0xdeadbeef, 2, 5, 0, 0, 0, 0,
				      0xdeadbeef, 0};
	feed(in, 9);
	CHECK_EQ(nsent, 1);
	static const uint32_t want[] = {0xdeadbeef, 2, 32, 4, 1, 1, 1};
	check_sent_words(0, want, 7);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND);
	/* an RDMA_ERROR of an unknown version is never answered */
	static const uint32_t err[] = {0x55, 7, 1, 4, 1, 1, 1};
	feed(err, 7);
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_vers_sent, 1);
	teardown();
}

/* RFC 8166 §4.5.2: undecodable headers -> ERR_CHUNK: unknown rdma_proc,
 * RDMA_NOMSG with no chunk list, a bad list discriminator, RPC XID not
 * matching rdma_xid. */
static void test_err_chunk(void)
{
	setup(8, 32);
	static const uint32_t want[] = {0x11, 1, 32, 4, 2};
	static const uint32_t badproc[] = {0x11, 1, 1, 9, 0, 0, 0};
	feed(badproc, 7);
	CHECK_EQ(nsent, 1);
	check_sent_words(0, want, 5);
	static const uint32_t nomsg[] = {0x11, 1, 1, 1, 0, 0, 0};
	feed(nomsg, 7);
	CHECK_EQ(nsent, 1);
	check_sent_words(0, want, 5);
	static const uint32_t badbool[] = {0x11, 1, 1, 0, 7, 0, 0, 0x11, 0};
	feed(badbool, 9);
	CHECK_EQ(nsent, 1);
	check_sent_words(0, want, 5);
	/* RDMA_MSG CALL whose RPC XID differs from rdma_xid */
	static const uint32_t xidm[] = {0x11, 1, 1, 0, 0, 0, 0, 0x12, 0, 2,
					1, 1, 1, 0, 0, 0, 0};
	feed(xidm, 17);
	CHECK_EQ(nsent, 1);
	check_sent_words(0, want, 5);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_chunk_sent, 4);
	teardown();
}

/* RFC 8166 §4.6.1: RDMA_MSGP is answered ERR_CHUNK; §4.6.2: RDMA_DONE is
 * silently discarded; §4.5: shorter than 28 bytes silently discarded. */
static void test_msgp_done_short(void)
{
	setup(8, 32);
	static const uint32_t msgp[] = {0x21, 1, 1, 2, 64, 1024, 0, 0, 0,
					0x21, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(msgp, 19);
	CHECK_EQ(nsent, 1);
	static const uint32_t want[] = {0x21, 1, 32, 4, 2};
	check_sent_words(0, want, 5);
	static const uint32_t done[] = {0x22, 1, 1, 3, 0, 0, 0};
	feed(done, 7);
	CHECK_EQ(nsent, 0);
	static const uint32_t shortmsg[] = {0x23, 1, 1, 0, 0, 0};
	feed(shortmsg, 6);
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.done_dropped, 1);
	CHECK_EQ(c.short_dropped, 1);
	CHECK_EQ(c.err_chunk_sent, 1);
	teardown();
}

/* A Short call for the credit tests: 40-byte RPC header. */
static uint8_t hdrs[16][40];
static uint8_t rbuf[16][256];

static uint32_t submit(int i)
{
	rpc_call_hdr(hdrs[i], 100003, 3, 0);
	struct rpcrdma_iov v = {hdrs[i], 40, false};
	struct rpcrdma_call_req r = {&v, 1, rbuf[i], 256, NULL, 0,
				     (void *)(uintptr_t)(i + 1), false};
	uint32_t xid = 0;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r, &xid, 0), 0);
	return xid;
}

static void reply(uint32_t xid, uint32_t credit)
{
	uint32_t w[] = {xid, 1, credit, 0, 0, 0, 0, xid, 1, 0, 0, 0, 0};
	feed(w, 13);
}

static int events(struct rpcrdma_engine_event *ev, int max)
{
	int n = 0;
	while (n < max && rpcrdma_engine_poll_event(S.e, &ev[n]))
		n++;
	return n;
}

/* RFC 8166 §3.3.3: one call until a grant; §3.3.1: a grant of 0 counts as
 * 1 (it "MUST NOT be zero"); large grants are clamped to max_calls;
 * never more in flight than granted. */
static void test_credits(void)
{
	setup(4, 32);
	uint32_t x[8];
	for (int i = 0; i < 4; i++)
		x[i] = submit(i);
	drain();
	CHECK_EQ(nsent, 1); /* one credit before the first reply */
	/* the call asks for max_calls credits */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 8), 4);
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 12), 0); /* RDMA_MSG */
	CHECK_EQ(sent[0].len, 28 + 40);
	reply(x[0], 0);                 /* grant 0 -> 1 */
	CHECK_EQ(nsent, 1);
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.credits_granted, 1);
	CHECK_EQ(in.calls_in_flight, 1);
	reply(x[1], 1000);              /* clamp to 4 */
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.credits_granted, 4);
	CHECK_EQ(nsent, 2);             /* x[2], x[3] */
	reply(x[2], 2);
	reply(x[3], 2);
	struct rpcrdma_engine_event ev[8];
	int n = events(ev, 8);
	CHECK_EQ(n, 4);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(ev[i].type, RPCRDMA_EV_CALL_DONE);
		CHECK_EQ(ev[i].status, 0);
		CHECK_EQ(ev[i].reply_len, 24);
	}
	/* grant 2: three submitted, two go */
	for (int i = 4; i < 7; i++)
		x[i] = submit(i);
	drain();
	CHECK_EQ(nsent, 2);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK(c.credit_stalls >= 2);
	/* §3.3.1: receives posted cover what we grant as Responder */
	rpcrdma_engine_get_info(S.e, &in);
	CHECK(in.recvs_posted >= 32);
	teardown();
}

/* RFC 8166 §4.5: RDMA_ERROR completes the call with that XID: ERR_VERS
 * with the peer's range, ERR_CHUNK (a 20-byte message); §4.5 replies that
 * do not decode, or name no call of ours, are silently discarded. */
static void test_peer_errors(void)
{
	setup(4, 32);
	uint32_t x0 = submit(0);
	drain();
	static uint32_t ev_words[7];
	uint32_t e1[] = {x0, 1, 4, 4, 1, 1, 1};
	memcpy(ev_words, e1, sizeof e1);
	feed(ev_words, 7);
	struct rpcrdma_engine_event ev[4];
	CHECK_EQ(events(ev, 4), 1);
	CHECK_EQ(ev[0].status, RPCRDMA_ERR_PEER_ERR_VERS);
	CHECK_EQ(ev[0].peer_vers_low, 1);
	CHECK_EQ(ev[0].peer_vers_high, 1);
	CHECK_EQ(ev[0].xid, x0);
	uint32_t x1 = submit(1);
	drain();
	CHECK_EQ(nsent, 1);
	/* undecodable reply with our XID: discarded, nothing sent */
	uint32_t bad[] = {x1, 1, 4, 0, 9, 0, 0, x1, 1};
	feed(bad, 9);
	CHECK_EQ(nsent, 0);
	/* reply for an XID we never sent: discarded */
	reply(0x999, 4);
	CHECK_EQ(events(ev, 4), 0);
	uint32_t e2[] = {x1, 1, 4, 4, 2};
	feed(e2, 5);
	CHECK_EQ(events(ev, 4), 1);
	CHECK_EQ(ev[0].status, RPCRDMA_ERR_PEER_ERR_CHUNK);
	CHECK_EQ(ev[0].xid, x1);
	/* a second error for the same XID: the call completed once */
	feed(e2, 5);
	CHECK_EQ(events(ev, 4), 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_vers_recv, 1);
	CHECK_EQ(c.err_chunk_recv, 1);
	CHECK_EQ(c.calls_completed, 2);
	CHECK(c.bad_replies >= 3);
	teardown();
}

/* RFC 8797 §4.2, §5.1: thresholds from private data; none or invalid
 * means 1024 each way; the peer's receive size caps our sends. */
static void test_thresholds(void)
{
	struct rpcrdma_engine_info in;
	setup_pd(NULL, 0, 4, 4);
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.send_threshold, 1024);
	CHECK_EQ(in.recv_threshold, 1024);
	CHECK(!in.send_with_inv);
	teardown();
	static const uint8_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	setup_pd(junk, 8, 4, 4);
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.send_threshold, 1024);
	teardown();
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, 8, 65536, 2048, true);
	setup_pd(pd, 8, 4, 4);
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.send_threshold, 2048);
	CHECK_EQ(in.recv_threshold, 4096); /* our default maximum */
	CHECK(in.send_with_inv);
	teardown();
	/* §5.2: the private data is searched for the Format Identifier at
	 * any offset, no alignment: a valid message behind 3 bytes of
	 * another layer's data (and a decoy identifier with version 2
	 * before it) is found; the §5.1 defaults apply only when none
	 * conforms. */
	uint8_t far[3 + 6 + 8 + 5] = {0xf6, 0xab, 0x0e, 0xf6, 0xab, 0x0e,
				      0x18, 2, 0};
	rpcrdma_cm_pdata_encode(far + 9, 8, 65536, 2048, true);
	setup_pd(far, sizeof far, 4, 4);
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.send_threshold, 2048);
	CHECK_EQ(in.recv_threshold, 4096);
	CHECK(in.send_with_inv);
	teardown();
	far[9 + 4] = 7; /* its version: not 1, so nothing conforms */
	setup_pd(far, sizeof far, 4, 4);
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.send_threshold, 1024);
	CHECK_EQ(in.recv_threshold, 1024);
	CHECK(!in.send_with_inv);
	teardown();
	setup_pd(pd, 8, 4, 4);
	/* §3.5.3: a 2048-byte threshold makes a 2100-byte call Long */
	static uint8_t big[2100];
	rpc_call_hdr(big, 1, 1, 1);
	struct rpcrdma_iov v = {big, sizeof big, false};
	struct rpcrdma_call_req r = {&v, 1, rbuf[0], 100, NULL, 0, NULL, false};
	uint32_t xid;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r, &xid, 0), 0);
	drain();
	CHECK_EQ(nsent, 1);
	/* RDMA_NOMSG, Read list: one PZRC segment at position 0, no Write
	 * list, no Reply chunk: 16 + 4 + 20 + 4 + 4 + 4 bytes */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 12), 1);
	CHECK_EQ(sent[0].len, 52);
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 16), 1);  /* read list present */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 20), 0);  /* position zero */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 28), 2100); /* length */
	teardown();
	/* our own private data: RFC 8797 §4 layout */
	setup(4, 4);
	CHECK_EQ(rpcrdma_engine_private_data(S.e, pd, 8), 8);
	static const uint8_t want[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3};
	CHECK_MEM(pd, want, 8);
	teardown();
}

/* RFC 8166 §4.3.3: a Reply chunk is offered exactly when the largest
 * reply may not fit inline: 4096 - 28 (the reply's transport header
 * with empty lists) = 4068 bytes of Payload stream fit. */
static void test_reply_chunk_offer(void)
{
	setup(4, 4);
	static uint8_t h[40], rb[8192];
	rpc_call_hdr(h, 1, 1, 1);
	struct rpcrdma_iov v = {h, 40, false};
	struct rpcrdma_call_req r = {&v, 1, rb, 4068, NULL, 0, NULL, false};
	uint32_t xid;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r, &xid, 0), 0);
	drain();
	CHECK_EQ(sent[0].len, 28 + 40);  /* no Reply chunk */
	reply(xid, 4);
	r.reply_max = 4069;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r, &xid, 0), 0);
	drain();
	CHECK_EQ(sent[0].len, 28 + 20 + 40);  /* Reply chunk, 1 segment */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 24), 1);  /* present */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 28), 1);  /* one segment */
	CHECK_EQ(rpcrdma_be32_get(sent[0].bytes + 36), 4069);
	teardown();
}

/* RFC 5666 §4.3 with accept_msgp: a padded call (no Read list) reaches
 * the upper layer with rdma_align, rdma_thresh and the RPC message's
 * offset; a padded reply completes its call the same way; RDMA_MSGP with
 * a Read list is still refused (positions and padding do not mix). */
static void test_msgp_accepted(void)
{
	cfg_accept_msgp = true;
	setup(8, 32);
	static const uint32_t msgp[] = {0x61, 1, 1, 2, 64, 1024, 0, 0, 0,
					0x61, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(msgp, 19);
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
	CHECK_EQ(ev.msgp.align, 64);
	CHECK_EQ(ev.msgp.thresh, 1024);
	CHECK_EQ(ev.msgp.offset, 36);
	CHECK_EQ(ev.call_len, 40);
	static const uint32_t withread[] = {0x62, 1, 1, 2, 64, 1024, 1, 8, 0x77,
					    4, 0, 0x1000, 0, 0, 0, 0x62, 0, 2,
					    1, 1, 1, 0, 0, 0, 0};
	feed(withread, 25);
	CHECK_EQ(nsent, 1);
	static const uint32_t want[] = {0x62, 1, 32, 4, 2};
	check_sent_words(0, want, 5);
	/* Our call, answered RDMA_MSGP. */
	uint32_t xid = submit(0);
	uint32_t rep[] = {xid, 1, 4, 2, 8, 512, 0, 0, 0, xid, 1, 0, 0, 0, 0};
	feed(rep, 15);
	bool done = false;
	while (rpcrdma_engine_poll_event(S.e, &ev))
		if (ev.type == RPCRDMA_EV_CALL_DONE && ev.xid == xid) {
			done = true;
			CHECK_EQ(ev.status, 0);
			CHECK_EQ(ev.reply_len, 24);
			CHECK_EQ(ev.msgp.align, 8);
			CHECK_EQ(ev.msgp.thresh, 512);
			CHECK_EQ(ev.msgp.offset, 36);
		}
	CHECK(done);
	teardown();
	cfg_accept_msgp = false;
}

/* RFC 8166 §4.3.3: "the Responder MUST copy that chunk into the
 * Transport header of the RPC Reply message", its lengths what it
 * returned: a Short reply echoes the Reply chunk with a zero length. */
static void test_reply_chunk_echoed(void)
{
	setup(4, 4);
	static const uint32_t call[] = {0x41, 1, 1, 0, 0, 0, 1, 1, 0x77, 8192, 0,
					0x1000, 0x41, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(call, 22);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.reply_chunk_len, 8192);
	static uint8_t rep[24];
	rpc_reply_hdr(rep, 0x41);
	struct rpcrdma_iov rv = {rep, 24, false};
	struct rpcrdma_reply_req rr = {&rv, 1, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, ev.call_id, &rr, 0), 0);
	drain();
	CHECK_EQ(nsent, 1);
	/* xid, 1, grant 4, RDMA_MSG, no Read list, no Write list, Reply
	 * chunk present: one segment, handle 0x77, length 0, offset. */
	static const uint32_t want[] = {0x41, 1, 4, 0, 0, 0, 1, 1, 0x77, 0, 0,
					0x1000, 0x41, 1, 0, 0, 0, 0};
	check_sent_words(0, want, 18);
	teardown();
}

/* A call (XID xid) with one Write chunk of 64 bytes, answered with a
 * 64-byte DDP result while the next registration is short: nothing may
 * go out yet (DESIGN: a registration shortage is a queued state). */
static void reply_while_registration_short(uint32_t xid)
{
	setup(4, 4);
	const uint32_t call[] = {xid, 1, 1, 0, 0, 1, 1, 0x78, 64, 0, 0x2000, 0,
				 0, xid, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(call, 23);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	static uint8_t rep[24], data[64];
	rpc_reply_hdr(rep, xid);
	static struct rpcrdma_iov rv[2];
	rv[0] = (struct rpcrdma_iov){rep, 24, false};
	rv[1] = (struct rpcrdma_iov){data, 64, true};
	struct rpcrdma_reply_req rr = {rv, 2, NULL, false};
	F->local_again = 1;
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, ev.call_id, &rr, 0), 0);
	drain();
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.mr_stalls, 1);
	CHECK_EQ(c.err_chunk_sent, 0);
}

/* The reply goes out once the engine next moves. */
static void test_reply_waits_for_registration(void)
{
	reply_while_registration_short(0x51);
	/* Anything that moves the engine retries it (here RDMA_DONE, which
	 * is otherwise discarded). */
	static const uint32_t done[] = {0x52, 1, 1, 3, 0, 0, 0};
	feed(done, 7);
	CHECK_EQ(nsent, 2); /* the RDMA Write, then the Send */
	CHECK_EQ(sent[0].op, RPCRDMA_WR_RDMA_WRITE);
	CHECK(sent[1].op == RPCRDMA_WR_SEND_WITH_INV); /* R set both ways */
	CHECK_EQ(rpcrdma_be32_get(sent[1].bytes), 0x51);
	CHECK_EQ(rpcrdma_be32_get(sent[1].bytes + 12), 0); /* RDMA_MSG */
	CHECK_EQ(rpcrdma_be32_get(sent[1].bytes + 32), 64); /* written */
	teardown();
}

/* With nothing else happening on the connection, the engine's tick
 * retries it: the shortage may be the allocator's or another
 * connection's, so no release here would ever wake it. */
static void test_reply_registration_retried_on_tick(void)
{
	reply_while_registration_short(0x53);
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, 10), 10);
	rpcrdma_engine_tick(S.e, 20);
	drain();
	CHECK_EQ(nsent, 2);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_RDMA_WRITE);
	CHECK_EQ(rpcrdma_be32_get(sent[1].bytes), 0x53);
	teardown();
}

/* RFC 8166 §3.4.4: peer-supplied chunks are checked against limits
 * before use: a Read chunk past max_call_size and a wrapping Write
 * segment are answered ERR_CHUNK without any RDMA operation. */
static void test_segment_limits(void)
{
	setup(4, 4);
	/* RDMA_NOMSG, PZRC of 2 MiB > 1 MiB default */
	static const uint32_t big[] = {0x31, 1, 1, 1, 1, 0, 0x77, 2u << 20, 0,
				       0x1000, 0, 0, 0};
	feed(big, 13);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND);
	static const uint32_t want[] = {0x31, 1, 4, 4, 2};
	check_sent_words(0, want, 5);
	/* RDMA_MSG with a Write chunk segment whose offset wraps */
	static const uint32_t wrap[] = {0x32, 1, 1, 0, 0, 1, 1, 0x77, 100,
					0xffffffff, 0xfffffff0, 0, 0,
					0x32, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(wrap, 23);
	CHECK_EQ(nsent, 1);
	static const uint32_t want2[] = {0x32, 1, 4, 4, 2};
	check_sent_words(0, want2, 5);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.rdma_read_bytes, 0);
	teardown();
}

/* Regression (fuzz_engine_recv): RFC 8166 §4.5.3.  A reply whose Write
 * chunk has more segments than the whole send queue can hold RDMA Writes
 * for used to wait for send queue space forever (no reply, no
 * REPLY_SENT).  It is answered ERR_CHUNK at once. */
static void test_reply_needs_more_than_sq(void)
{
	cfg_sq_depth = 8;
	setup(1, 1);
	cfg_sq_depth = 0;
	uint32_t m[128];
	size_t n = 0;
	uint32_t hd[] = {0x41, 1, 1, 0, 0, 1, 20};
	memcpy(m, hd, sizeof hd);
	n = 7;
	for (uint32_t i = 0; i < 20; i++) {
		m[n++] = 0x500 + i; /* handle */
		m[n++] = 8;         /* length */
		m[n++] = 0;
		m[n++] = 0x10000 + 16 * i;
	}
	uint32_t tl[] = {0, 0, 0x41, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	memcpy(m + n, tl, sizeof tl);
	n += 12;
	feed(m, n);
	CHECK_EQ(nsent, 0);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
	CHECK_EQ(ev.write_chunks, 1);
	CHECK_EQ(ev.write_chunk_len[0], 160);
	static uint8_t rh[24], res[160];
	rpc_reply_hdr(rh, 0x41);
	struct rpcrdma_iov v[2] = {{rh, 24, false}, {res, 160, true}};
	struct rpcrdma_reply_req rep = {v, 2, rh, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, ev.call_id, &rep, 0), 0);
	drain();
	CHECK_EQ(nsent, 1);
	static const uint32_t want[] = {0x41, 1, 1, 4, 2};
	check_sent_words(0, want, 5);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_REPLY_SENT);
	CHECK_EQ(ev.status, RPCRDMA_ERR_PEER_ERR_CHUNK);
	CHECK(ev.user == rh);
	teardown();
}

/* Regression (fuzz_engine_recv): RFC 8166 §4.5.4.  The send queue space a
 * call reserves was an upper bound (pieces x 2 + results + 2); when that
 * bound exceeded the whole send queue the call waited forever, even a
 * Short call that needs a single Send.  Now a Short call of many pieces
 * goes out, and a call that truly needs more (a Send plus one LOCAL_INV
 * per registration) fails with RPCRDMA_ERR_NOSPACE at once. */
static void test_call_needs_more_than_sq(void)
{
	cfg_sq_depth = 8;
	setup(2, 1);
	cfg_sq_depth = 0;
	static uint8_t h[40], a[16], b[16], c[16], rb[64];
	rpc_call_hdr(h, 1, 1, 1);
	struct rpcrdma_iov v[4] = {{h, 40, false}, {a, 16, false},
				   {b, 16, false}, {c, 16, false}};
	struct rpcrdma_call_req r = {v, 4, rb, sizeof rb, NULL, 0, NULL, false};
	uint32_t xid;
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r, &xid, 0), 0);
	drain();
	CHECK_EQ(nsent, 1); /* Short call: one Send */
	CHECK_EQ(sent[0].len, 28 + 88);
	reply(xid, 2);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.status, 0);
	/* eight Write chunks: the Send and eight LOCAL_INVs > 8 entries */
	static uint8_t res[8][8];
	struct rpcrdma_iov rv[8];
	for (int i = 0; i < 8; i++)
		rv[i] = (struct rpcrdma_iov){res[i], 8, true};
	struct rpcrdma_call_req r2 = {v, 1, rb, sizeof rb, rv, 8, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r2, &xid, 0), 0);
	drain();
	CHECK_EQ(nsent, 0);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_CALL_DONE);
	CHECK_EQ(ev.status, RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	/* seven fit exactly */
	struct rpcrdma_call_req r3 = {v, 1, rb, sizeof rb, rv, 7, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_call(S.e, &r3, &xid, 0), 0);
	drain();
	CHECK_EQ(nsent, 1);
	teardown();
}

/* Regression (fuzz_engine_recv): a CLOSE the driver had not polled when
 * the connection was lost used to stay queued and was delivered after the
 * next established(), telling the driver to tear down a healthy
 * connection (and a CLOSE per lost connection could overflow the event
 * ring and drop a CALL_DONE).  conn_lost() drops it. */
static void test_stale_close_dropped(void)
{
	setup(1, 1);
	/* a message longer than our receive buffer: the engine asks to close */
	static uint8_t big[4200];
	CHECK_EQ(rpcrdma_engine_recv(S.e, big, sizeof big, false, 0, 0),
		 RPCRDMA_ERR_NOSPACE);
	rpcrdma_engine_conn_lost(S.e, 0);
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	CHECK_EQ(rpcrdma_engine_established(S.e, pd, sizeof pd, 4, 0), 0);
	drain();
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 0);
	/* a CLOSE asked on this connection is still delivered */
	CHECK_EQ(rpcrdma_engine_recv(S.e, big, sizeof big, false, 0, 0),
		 RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_CLOSE);
	CHECK_EQ(ev.reason, RPCRDMA_ERR_NOSPACE);
	teardown();
}

/* RFC 8166 §3.4.5 "The value in this field [Position] MUST be a multiple
 * of four"; an unaligned Position is an XDR error (the chunk list decoder
 * rejects it), answered ERR_CHUNK (§4.5.2) without any RDMA Read. */
static void test_unaligned_position(void)
{
	setup(4, 4);
	static const uint32_t m[] = {0x51, 1, 1, 0,
				     1, 38, 0x77, 8, 0, 0x1000, 0, /* Read list */
				     0, 0,                          /* no Write, Reply */
				     0x51, 0, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0};
	feed(m, sizeof m / 4);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_SEND);
	static const uint32_t want[] = {0x51, 1, 4, 4, 2};
	check_sent_words(0, want, 5);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.rdma_read_bytes, 0);
	/* the same call at Position 40 is pulled and delivered */
	static const uint32_t ok[] = {0x52, 1, 1, 0,
				      1, 40, 0x77, 8, 0, 0x1000, 0,
				      0, 0,
				      0x52, 0, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0};
	feed(ok, sizeof ok / 4);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent[0].op, RPCRDMA_WR_RDMA_READ);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
	CHECK_EQ(ev.call_len, 56);
	teardown();
}

/* Regression (review): a receive completion whose byte_len exceeds the
 * posted buffer (impossible from a working provider) was parsed as is,
 * reading past the receive buffer and copying more than the call buffer
 * holds.  It is now a protocol error: the connection is closed and
 * nothing is delivered. */
static void test_recv_byte_len_checked(void)
{
	setup(1, 1);
	rpcrdma_engine_conn_lost(S.e, 0);
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	CHECK_EQ(rpcrdma_engine_established(S.e, pd, sizeof pd, 4, 0), 0);
	struct rpcrdma_engine_wr w;
	uint64_t id = 0;
	uint8_t *buf = NULL;
	uint32_t cap = 0;
	while (rpcrdma_engine_pop_wr(S.e, &w))
		if (w.is_recv && !buf) {
			id = w.recv.wr_id;
			buf = (uint8_t *)(uintptr_t)w.sge[0].addr;
			cap = w.sge[0].length;
		}
	CHECK(buf != NULL);
	CHECK_EQ(cap, 4096);
	static const uint32_t m[] = {0x61, 1, 1, 0, 0, 0, 0,
				     0x61, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	xdr_words(buf, m, sizeof m / 4);
	struct rpcrdma_wc wc = {0};
	wc.wr_id = id;
	wc.status = RPCRDMA_WC_SUCCESS;
	wc.opcode = RPCRDMA_WC_RECV;
	wc.byte_len = cap + 64;
	CHECK_EQ(rpcrdma_engine_completion(S.e, &wc), 0);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_CLOSE);
	CHECK_EQ(ev.reason, RPCRDMA_ERR_PROTOCOL);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.calls_received, 0);
	teardown();
}

/* A v1 call the Responder cannot take for want of a registration (its
 * Position-Zero Read chunk needs a sink): version 1 has no error for
 * that, and ERR_CHUNK would say the chunks were wrong.  The call gets the
 * RPC reply made for it instead, MSG_ACCEPTED SYSTEM_ERR (RFC 5531 §9),
 * inline, with its XID; no RDMA Read is posted, nothing is delivered, the
 * slot comes back. */
static void test_call_without_resources(void)
{
	setup(4, 4);
	F->local_again = 1;
	static const uint32_t call[] = {0x71, 1, 1, 1, 1, 0, 0x90, 100, 0,
					0x3000, 0, 0, 0};
	feed(call, 13);
	CHECK_EQ(nsent, 1);
	/* R set both ways: the call's handle may go with it (RFC 8797). */
	CHECK(sent[0].op == RPCRDMA_WR_SEND ||
	      sent[0].op == RPCRDMA_WR_SEND_WITH_INV);
	static const uint32_t want[] = {0x71, 1, 4, 0, 0, 0, 0,
					0x71, 1, 0, 0, 0, 5};
	check_sent_words(0, want, 13);
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_chunk_sent, 0);
	/* The slot is free again: the next call is taken. */
	static const uint32_t next[] = {0x72, 1, 1, 0, 0, 0, 0,
					0x72, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(next, 17);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
	CHECK_EQ(ev.xid, 0x72);
	teardown();
}

/* Answer the call just fed (XID xid) with reply rv[0..n) while the next
 * local registration fails outright (not AGAIN, which queues): version 1
 * has no transport error for a Responder short of resources, and
 * ERR_CHUNK would tell the Requester its chunks were wrong.  The call
 * gets SYSTEM_ERR (RFC 5531 §9) inline, with header want[0..nw): no RDMA
 * Write, the Write and Reply chunks echoed empty (RFC 8166 §4.3.2.2,
 * §4.3.3).  The upper layer still gets its REPLY_SENT, saying so; what
 * was registered or staged goes back, and the slot comes back. */
static void reply_without_resources(uint32_t xid,
				    const struct rpcrdma_iov *rv, unsigned n,
				    const uint32_t *want, size_t nw)
{
	struct rpcrdma_engine_event ev;
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
	int user;
	struct rpcrdma_reply_req rr = {rv, n, &user, false};
	F->local_fail = 1;
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, ev.call_id, &rr, 0), 0);
	drain();
	CHECK_EQ(F->local_fail, 0); /* the failure did happen */
	CHECK_EQ(nsent, 1);
	CHECK(sent[0].op == RPCRDMA_WR_SEND ||
	      sent[0].op == RPCRDMA_WR_SEND_WITH_INV);
	check_sent_words(0, want, nw);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
	CHECK_EQ(ev.type, RPCRDMA_EV_REPLY_SENT);
	CHECK(ev.user == &user);
	CHECK_EQ(ev.status, RPCRDMA_ERR_RPC_SYSTEM_ERR);
	CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_chunk_sent, 0);
	CHECK_EQ(c.rdma_write_bytes, 0);
	CHECK_EQ(c.long_replies, 0);
	CHECK_EQ(F->violations, 0);
	/* The slots are free again: max_calls more calls are taken. */
	for (uint32_t i = 0; i < 4; i++) {
		const uint32_t next[] = {xid + 1 + i, 1, 1, 0, 0, 0, 0,
					 xid + 1 + i, 0, 2, 1, 1, 1, 0, 0, 0, 0};
		feed(next, 17);
		CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
		CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
		CHECK_EQ(ev.xid, xid + 1 + i);
	}
	teardown();
}

/* A DDP-eligible result whose source cannot be registered. */
static void test_reply_write_without_registration(void)
{
	setup(4, 4);
	static const uint32_t call[] = {0x81, 1, 1, 0, 0, 1, 1, 0x78, 64, 0,
					0x2000, 0, 0, 0x81, 0, 2, 1, 1, 1, 0,
					0, 0, 0};
	feed(call, 23);
	static uint8_t rep[24], data[64];
	rpc_reply_hdr(rep, 0x81);
	const struct rpcrdma_iov rv[2] = {{rep, 24, false}, {data, 64, true}};
	/* xid, 1, grant 4, RDMA_MSG, no Read list, the Write chunk's one
	 * segment with length 0, no Reply chunk; then the RPC reply. */
	static const uint32_t want[] = {0x81, 1, 4, 0, 0, 1, 1, 0x78, 0, 0,
					0x2000, 0, 0,
					0x81, 1, 0, 0, 0, 5};
	reply_without_resources(0x81, rv, 2, want, 19);
}

/* A Long Reply whose staging cannot be registered. */
static void test_long_reply_without_registration(void)
{
	setup(4, 4);
	static const uint32_t call[] = {0x91, 1, 1, 0, 0, 0, 1, 1, 0x77, 8192, 0,
					0x1000, 0x91, 0, 2, 1, 1, 1, 0, 0, 0, 0};
	feed(call, 22);
	static uint8_t rep[24], body[5000];
	rpc_reply_hdr(rep, 0x91);
	const struct rpcrdma_iov rv[2] = {{rep, 24, false},
					  {body, sizeof body, false}};
	/* The Reply chunk echoed with length 0 (§4.3.3). */
	static const uint32_t want[] = {0x91, 1, 4, 0, 0, 0, 1, 1, 0x77, 0, 0,
					0x1000, 0x91, 1, 0, 0, 0, 5};
	reply_without_resources(0x91, rv, 2, want, 18);
}

/* An inline call is read where it landed: its slot holds that receive
 * buffer until the reply is sent, and the refill posts a free one in its
 * place (engine/recv_buffers.c).  So the receives the grant counts on
 * stay posted (RFC 8166 §3.3.1) while every slot holds a call, and a
 * call's bytes stay as they came, whatever lands after it, until its
 * REPLY_SENT. */
static void test_call_read_in_place(void)
{
	setup(4, 4);
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(S.e, &in);
	const uint32_t posted = in.recvs_posted;
	CHECK(posted >= in.grant);
	/* The grant's calls, all held by the upper layer. */
	struct rpcrdma_engine_event held[4];
	uint8_t copy[4][68];
	for (uint32_t i = 0; i < 4; i++) {
		const uint32_t call[] = {0xa1 + i, 1, 1, 0, 0, 0, 0,
					 0xa1 + i, 0, 2, 1, 1, 1, 0, 0, 0, 0};
		feed(call, 17);
		CHECK_EQ(rpcrdma_engine_poll_event(S.e, &held[i]), 1);
		CHECK_EQ(held[i].type, RPCRDMA_EV_INCOMING_CALL);
		CHECK_EQ(held[i].call_len, 40);
		memcpy(copy[i], held[i].call, held[i].call_len);
		rpcrdma_engine_get_info(S.e, &in);
		CHECK_EQ(in.recvs_posted, posted);
	}
	/* Many more calls, each answered at once, cycle through every
	 * receive buffer that is free or posted. */
	for (uint32_t i = 0; i < 64; i++) {
		const uint32_t x = 0xb00 + i;
		const uint32_t call[] = {x, 1, 1, 0, 0, 0, 0,
					 x, 0, 2, 1, 1, 1, 0, 0, 0, 0};
		feed(call, 17);
		struct rpcrdma_engine_event ev;
		CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
		CHECK_EQ(ev.type, RPCRDMA_EV_INCOMING_CALL);
		CHECK_EQ(ev.xid, x);
		uint8_t rep[24];
		rpc_reply_hdr(rep, x);
		struct rpcrdma_iov rv = {rep, 24, false};
		struct rpcrdma_reply_req rr = {&rv, 1, NULL, false};
		CHECK_EQ(rpcrdma_engine_submit_reply(S.e, ev.call_id, &rr, 0), 0);
		drain();
		CHECK_EQ(nsent, 1);
		CHECK_EQ(rpcrdma_be32_get(sent[0].bytes), x);
		CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
		CHECK_EQ(ev.type, RPCRDMA_EV_REPLY_SENT);
		rpcrdma_engine_get_info(S.e, &in);
		CHECK_EQ(in.recvs_posted, posted);
	}
	for (uint32_t i = 0; i < 4; i++) {
		CHECK_MEM(held[i].call, copy[i], 40);
		uint8_t rep[24];
		rpc_reply_hdr(rep, 0xa1 + i);
		struct rpcrdma_iov rv = {rep, 24, false};
		struct rpcrdma_reply_req rr = {&rv, 1, NULL, false};
		CHECK_EQ(rpcrdma_engine_submit_reply(S.e, held[i].call_id, &rr,
						     0), 0);
		drain();
		CHECK_EQ(nsent, 1);
		struct rpcrdma_engine_event ev;
		CHECK_EQ(rpcrdma_engine_poll_event(S.e, &ev), 1);
		CHECK_EQ(ev.type, RPCRDMA_EV_REPLY_SENT);
	}
	rpcrdma_engine_get_info(S.e, &in);
	CHECK_EQ(in.recvs_posted, posted);
	CHECK_EQ(F->violations, 0);
	teardown();
}

int main(void)
{
	test_err_vers();
	test_err_chunk();
	test_msgp_done_short();
	test_msgp_accepted();
	test_credits();
	test_peer_errors();
	test_thresholds();
	test_reply_chunk_offer();
	test_reply_chunk_echoed();
	test_reply_waits_for_registration();
	test_reply_registration_retried_on_tick();
	test_segment_limits();
	test_reply_needs_more_than_sq();
	test_call_needs_more_than_sq();
	test_stale_close_dropped();
	test_unaligned_position();
	test_recv_byte_len_checked();
	test_call_without_resources();
	test_reply_write_without_registration();
	test_long_reply_without_registration();
	test_call_read_in_place();
	free(F);
	TEST_MAIN_END();
}
