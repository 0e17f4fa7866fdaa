/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Engine back to back: two engines joined by the fake wire of
 * test_engine_fake.h, every message shape with its data checked.
 * Each test names the RFC section it checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "test.h"
#include "test_engine_fake.h"
#include "unit/resident_pages.h"
#include "engine/engine_internal.h" /* test_untouched_slots looks inside */

static struct fake *F;
static struct side A, B; /* A: client (forward Requester), B: server */

/* What the server's upper layer does with a call. */
enum serve_mode {
	SERVE_ECHO,      /* reply = header + the call's args, inline */
	SERVE_RESULT,    /* reply = header + count + DDP result of res_len */
	SERVE_BIG,       /* reply = header + big_len bytes, no DDP */
	SERVE_HOLD,      /* do not answer */
};
static enum serve_mode mode;
static size_t res_len, big_len;
static uint8_t res_data[70000], big_data[70000];
static uint8_t reply_hdr[64];
static uint8_t last_call[300000];
static size_t last_call_len;
static uint32_t held_calls[64], held_xids[64];
static unsigned nheld;
static int reply_sent_events, reply_sent_status;

static struct rpcrdma_iov rep_iov[4];

static void serve(struct side *srv, struct side *cli)
{
	struct rpcrdma_engine_event ev;
	for (int round = 0; round < 64; round++) {
		bool any = false;
		pump(cli, srv);
		while (rpcrdma_engine_poll_event(srv->e, &ev)) {
			any = true;
			if (ev.type == RPCRDMA_EV_REPLY_SENT) {
				reply_sent_events++;
				reply_sent_status = ev.status;
				continue;
			}
			if (ev.type != RPCRDMA_EV_INCOMING_CALL)
				continue;
			last_call_len = ev.call_len;
			memcpy(last_call, ev.call, ev.call_len);
			if (mode == SERVE_HOLD) {
				held_xids[nheld] = ev.xid;
				held_calls[nheld++] = ev.call_id;
				continue;
			}
			rpc_reply_hdr(reply_hdr, ev.xid);
			struct rpcrdma_reply_req rr = {rep_iov, 0, NULL, false};
			rep_iov[0] = (struct rpcrdma_iov){reply_hdr, 24, false};
			if (mode == SERVE_ECHO) {
				rep_iov[1] = (struct rpcrdma_iov){
					(uint8_t *)ev.call + 40, ev.call_len - 40, false};
				rr.nmsg = 2;
			} else if (mode == SERVE_RESULT) {
				rpcrdma_be32_put(reply_hdr + 24, (uint32_t)res_len);
				rep_iov[0].len = 28;
				rep_iov[1] = (struct rpcrdma_iov){res_data, res_len, true};
				/* a trailing 4-byte item after the result */
				rpcrdma_be32_put(reply_hdr + 28, 0xabcdef01);
				rep_iov[2] = (struct rpcrdma_iov){reply_hdr + 28, 4, false};
				rr.nmsg = 3;
			} else {
				rep_iov[1] = (struct rpcrdma_iov){big_data, big_len, false};
				rr.nmsg = 2;
			}
			CHECK_EQ(rpcrdma_engine_submit_reply(srv->e, ev.call_id, &rr, 0), 0);
		}
		pump(cli, srv);
		if (!any)
			return;
	}
}

static struct rpcrdma_engine_event done[256];
static int ndone;

static void collect(struct side *cli)
{
	struct rpcrdma_engine_event ev;
	while (rpcrdma_engine_poll_event(cli->e, &ev))
		if (ev.type == RPCRDMA_EV_CALL_DONE && ndone < 256)
			done[ndone++] = ev;
}

/* Side B's cfg.read_piece and cfg.read_window when not 0 (test_read_pieces),
 * and its cfg.credits_start (test_grant_grows). */
static uint32_t b_read_piece, b_read_window, b_credits_start;
/* Side B's cfg.budget (test_grant_budget). */
static struct rpcrdma_engine_budget *b_budget;

/* local_inv_a: side A's cfg.local_inv. */
static void setup_inv(uint32_t calls, uint32_t credits, bool rinv_a,
		      bool rinv_b, uint32_t ord, bool local_inv_a)
{
	if (!F)
		F = calloc(1, sizeof *F);
	memset(F, 0, sizeof *F);
	side_init(&A, F, 0);
	side_init(&B, F, 1);
	struct rpcrdma_engine_config c;
	rpcrdma_engine_config_default(&c);
	c.max_calls = calls;
	c.credits = credits;
	c.remote_inv = rinv_a;
	c.xid_seed = 0x1000;
	c.versions = RPCRDMA_ENGINE_V1_ONLY; /* v1 scripts */
	c.local_inv = local_inv_a;
	CHECK_EQ(side_create(&A, &c), 0);
	c.local_inv = true;
	c.remote_inv = rinv_b;
	c.xid_seed = 0x8000;
	if (b_read_piece)
		c.read_piece = b_read_piece;
	if (b_read_window)
		c.read_window = b_read_window;
	c.credits_start = b_credits_start;
	c.budget = b_budget;
	CHECK_EQ(side_create(&B, &c), 0);
	connect_pair(&A, &B, ord);
	ndone = 0;
	nheld = 0;
	reply_sent_events = 0;
	mode = SERVE_ECHO;
	fake_credit_violations = 0;
}

static void setup(uint32_t calls, uint32_t credits, bool rinv_a, bool rinv_b,
		  uint32_t ord)
{
	setup_inv(calls, credits, rinv_a, rinv_b, ord, true);
}

static void teardown(void)
{
	CHECK_EQ(F->violations, 0);
	CHECK_EQ(fake_credit_violations, 0);
	rpcrdma_engine_destroy(A.e);
	rpcrdma_engine_destroy(B.e);
	A.e = B.e = NULL;
}

/* A call of args_len bytes of arguments (+ optional DDP argument). */
static uint8_t call_hdrs[16][64], *call_hdr, args[70000], ddp_arg[300000], reply_buf[300000];
static struct rpcrdma_iov call_iov[4];

static int start_call(struct side *cli, size_t args_len, size_t ddp_len,
		      size_t reply_max, struct rpcrdma_iov *results,
		      unsigned nres, uint32_t *xid)
{
	static unsigned ncalls;
	call_hdr = call_hdrs[ncalls++ % 16];
	rpc_call_hdr(call_hdr, 100003, 3, 7);
	fill_pattern(args, args_len, 1);
	fill_pattern(ddp_arg, ddp_len, 2);
	unsigned n = 0;
	call_iov[n++] = (struct rpcrdma_iov){call_hdr, 40, false};
	if (args_len)
		call_iov[n++] = (struct rpcrdma_iov){args, args_len, false};
	if (ddp_len) {
		/* the count word stays inline (§3.4.4.1) */
		rpcrdma_be32_put(call_hdr + 40, (uint32_t)ddp_len);
		call_iov[n++] = (struct rpcrdma_iov){call_hdr + 40, 4, false};
		call_iov[n++] = (struct rpcrdma_iov){ddp_arg, ddp_len, true};
	}
	struct rpcrdma_call_req r = {call_iov, n, reply_buf, reply_max,
				     results, nres, (void *)(uintptr_t)0x77, false};
	return rpcrdma_engine_submit_call(cli->e, &r, xid, 0);
}

/* The call the server saw equals the unreduced stream we submitted. */
static void check_call_seen(size_t args_len, size_t ddp_len, uint32_t xid)
{
	size_t want = 40 + args_len + (ddp_len ? 4 + ddp_len + ((4 - ddp_len % 4) % 4) : 0);
	CHECK_EQ(last_call_len, want);
	CHECK_EQ(rpcrdma_be32_get(last_call), xid);
	CHECK_MEM(last_call + 4, call_hdr + 4, 36);
	CHECK_MEM(last_call + 40, args, args_len);
	if (ddp_len) {
		CHECK_EQ(rpcrdma_be32_get(last_call + 40 + args_len), ddp_len);
		CHECK_MEM(last_call + 44 + args_len, ddp_arg, ddp_len);
		static const uint8_t z[4];
		CHECK_MEM(last_call + 44 + args_len + ddp_len, z, want - (44 + args_len + ddp_len));
	}
}

/* RFC 8166 §3.5.1 Short call and reply; §3.3.3 one credit first. */
static void test_short(void)
{
	setup(16, 8, true, true, 4);
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(A.e, &in);
	CHECK_EQ(in.credits_granted, 1);
	CHECK_EQ(in.send_threshold, 4096);
	CHECK_EQ(in.recv_threshold, 4096);
	CHECK(in.send_with_inv);
	uint32_t xid;
	CHECK_EQ(start_call(&A, 100, 0, 1000, NULL, 0, &xid), 0);
	CHECK_EQ(xid, 0x1000);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].xid, xid);
	CHECK(done[0].user == (void *)(uintptr_t)0x77);
	CHECK_EQ(done[0].reply_len, 24 + 100);
	CHECK_MEM(reply_buf + 24, args, 100);
	check_call_seen(100, 0, xid);
	CHECK_EQ(reply_sent_events, 1);
	rpcrdma_engine_get_info(A.e, &in);
	CHECK_EQ(in.credits_granted, 8); /* B grants 8 */
	CHECK_EQ(in.calls_in_flight, 0);
	struct rpcrdma_engine_counters ca, cb;
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(ca.short_calls, 1);
	CHECK_EQ(ca.calls, 1);
	CHECK_EQ(ca.calls_completed, 1);
	CHECK_EQ(ca.replies_inline, 1);
	CHECK_EQ(cb.calls_received, 1);
	CHECK_EQ(cb.short_replies, 1);
	CHECK_EQ(ca.local_invs + ca.remote_invs, 0); /* nothing exposed */
	teardown();
}

/* RFC 8166 §3.5.1/§3.5.3 at the call inline threshold: a header of 28
 * bytes + 4068 payload bytes is exactly 4096 -> Short; 4 more -> Long
 * Call via the Position-Zero Read chunk. */
static void test_call_threshold(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	/* reply_max 100 -> no Reply chunk, header is 28 bytes */
	CHECK_EQ(start_call(&A, 4068 - 40, 0, 100, NULL, 0, &xid), 0);
	mode = SERVE_BIG;
	big_len = 0;
	serve(&B, &A);
	collect(&A);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(A.e, &c);
	CHECK_EQ(c.short_calls, 1);
	CHECK_EQ(c.long_calls, 0);
	check_call_seen(4068 - 40, 0, xid);
	CHECK_EQ(start_call(&A, 4072 - 40, 0, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	rpcrdma_engine_get_counters(A.e, &c);
	CHECK_EQ(c.long_calls, 1);
	check_call_seen(4072 - 40, 0, xid);
	CHECK_EQ(ndone, 2);
	CHECK_EQ(done[1].status, 0);
	CHECK_EQ(fake_open_rkeys(F, 0), 0); /* §4.4.1 nothing left open */
	struct rpcrdma_engine_counters cb;
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.rdma_read_bytes, 4072);
	teardown();
}

/* RFC 8166 §3.5.2 Chunked call: a DDP-eligible argument reduced into a
 * Read chunk at its XDR position (§4.3.1.1) without roundup (§3.4.5.2),
 * reinserted with padding by the Responder. */
static void test_chunked_call(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 0;
	CHECK_EQ(start_call(&A, 200, 10001, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	struct rpcrdma_engine_counters c, cb;
	rpcrdma_engine_get_counters(A.e, &c);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(c.chunked_calls, 1);
	CHECK_EQ(cb.rdma_read_bytes, 10001); /* no padding in the chunk */
	check_call_seen(200, 10001, xid);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
}

/* B answers with a DDP result of len bytes (pattern seed), A collects. */
static void serve_result(size_t len, uint32_t seed)
{
	mode = SERVE_RESULT;
	res_len = len;
	fill_pattern(res_data, res_len, seed);
	serve(&B, &A);
	collect(&A);
}

/* The opcodes side A hands out, in order (fake_on_wr). */
static enum rpcrdma_wr_opcode a_ops[64];
static int na_ops;

static void log_a_ops(const struct side *s, const struct rpcrdma_engine_wr *w)
{
	if (s == &A && !w->is_recv && na_ops < 64)
		a_ops[na_ops++] = w->send.opcode;
}

/* RFC 8166 §4.4.1 with memory windows: a registration whose rkey needs a
 * BIND_MW gets it from the engine's own send queue, in order before the
 * Send that advertises the rkey, counted in its send-queue accounting
 * (rpc/registration.c posted it itself before, outside both).  The fake
 * validates each rkey only once its bind has run, and counts a peer's
 * access through an rkey not bound as a violation. */
static void test_bind_before_send(void)
{
	setup(16, 8, true, true, 4);
	F->bind_mode[0] = true;
	static uint8_t result[8192];
	struct rpcrdma_iov res = {result, sizeof result, false};
	na_ops = 0;
	fake_on_wr = log_a_ops;
	uint32_t xid;
	/* A Read chunk (the 10001-byte argument) and a Write chunk. */
	CHECK_EQ(start_call(&A, 200, 10001, 200, &res, 1, &xid), 0);
	serve_result(5001, 3);
	fake_on_wr = NULL;
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].result_len[0], 5001);
	CHECK_MEM(result, res_data, 5001);
	check_call_seen(200, 10001, xid);
	/* Two windows, bound first, then the Send. */
	CHECK_EQ(F->binds[0], 2);
	CHECK(na_ops >= 3);
	CHECK_EQ(a_ops[0], RPCRDMA_WR_BIND_MW);
	CHECK_EQ(a_ops[1], RPCRDMA_WR_BIND_MW);
	CHECK_EQ(a_ops[2], RPCRDMA_WR_SEND);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	F->bind_mode[0] = false;
	teardown();
}

/* RFC 8166 §3.5.3 Long Call whose reduced form is still too large: the
 * whole stream (DDP item and its padding included) in the PZRC. */
static void test_long_call_with_ddp(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 0;
	CHECK_EQ(start_call(&A, 6000, 3001, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	struct rpcrdma_engine_counters c, cb;
	rpcrdma_engine_get_counters(A.e, &c);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(c.long_calls, 1);
	CHECK_EQ(cb.rdma_read_bytes, 40 + 6000 + 4 + 3004);
	check_call_seen(6000, 3001, xid);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
}

/* RFC 8166 §3.4.6, §3.4.6.2, §4.3.2: a DDP-eligible result pushed into
 * the Write chunk by RDMA Write before the Send; the returned length is
 * the bytes written (no padding). */
static void test_write_chunk(void)
{
	setup(16, 8, true, true, 4);
	static uint8_t result[8192];
	memset(result, 0xee, sizeof result);
	struct rpcrdma_iov res = {result, sizeof result, false};
	uint32_t xid;
	CHECK_EQ(start_call(&A, 8, 0, 200, &res, 1, &xid), 0);
	serve_result(5001, 9);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].nresults, 1);
	CHECK_EQ(done[0].result_len[0], 5001);
	CHECK_MEM(result, res_data, 5001);
	CHECK_EQ(result[5001], 0xee); /* §3.4.6.2: no roundup written */
	/* reduced reply: header + count + trailing item */
	CHECK_EQ(done[0].reply_len, 32);
	CHECK_EQ(rpcrdma_be32_get(reply_buf + 24), 5001);
	CHECK_EQ(rpcrdma_be32_get(reply_buf + 28), 0xabcdef01);
	struct rpcrdma_engine_counters cb;
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.chunked_replies, 1);
	CHECK_EQ(cb.rdma_write_bytes, 5001);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);

	/* §4.3.2.2 unused Write chunk: the result went another arm. */
	mode = SERVE_ECHO;
	CHECK_EQ(start_call(&A, 8, 0, 200, &res, 1, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 2);
	CHECK_EQ(done[1].status, 0);
	CHECK_EQ(done[1].result_len[0], 0);
	CHECK_EQ(done[1].reply_len, 32);

	/* §4.3.2.3 empty Write chunk: the result must come inline. */
	struct rpcrdma_iov empty = {NULL, 0, false};
	mode = SERVE_RESULT;
	res_len = 301;
	CHECK_EQ(start_call(&A, 8, 0, 1000, &empty, 1, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 3);
	CHECK_EQ(done[2].status, 0);
	CHECK_EQ(done[2].result_len[0], 0);
	CHECK_EQ(done[2].reply_len, 28 + 304 + 4);
	CHECK_MEM(reply_buf + 28, res_data, 301);
	CHECK_EQ(rpcrdma_be32_get(reply_buf + 28 + 304), 0xabcdef01);
	teardown();
}

/* RFC 8166 §3.5.3, §4.3.3: Long Reply through the Reply chunk as
 * RDMA_NOMSG; §4.5.3 Reply chunk too small -> ERR_CHUNK. */
static void test_long_reply(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 10000;
	fill_pattern(big_data, big_len, 5);
	CHECK_EQ(start_call(&A, 8, 0, 20000, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].reply_len, 10024);
	CHECK_EQ(rpcrdma_be32_get(reply_buf), xid);
	CHECK_MEM(reply_buf + 24, big_data, 10000);
	struct rpcrdma_engine_counters ca, cb;
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.long_replies, 1);
	CHECK_EQ(ca.replies_long, 1);
	CHECK_EQ(cb.rdma_write_bytes, 10024);
	/* Reply chunk offered but a short reply may still come inline. */
	big_len = 100;
	CHECK_EQ(start_call(&A, 8, 0, 20000, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 2);
	CHECK_EQ(done[1].status, 0);
	CHECK_EQ(done[1].reply_len, 124);
	CHECK_MEM(reply_buf + 24, big_data, 100);
	/* Too small: reply_max 6000 (> threshold, chunk offered), reply 8000 */
	big_len = 8000;
	CHECK_EQ(start_call(&A, 8, 0, 6000, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 3);
	CHECK_EQ(done[2].status, RPCRDMA_ERR_PEER_ERR_CHUNK);
	CHECK_EQ(reply_sent_status, RPCRDMA_ERR_PEER_ERR_CHUNK);
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.err_chunk_sent, 1);
	CHECK_EQ(ca.err_chunk_recv, 1);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	teardown();
}

/* One call with a Write chunk, a Reply chunk and a Read chunk (three
 * handles) on a fresh pair whose server allows remote invalidation or
 * not; A posts LOCAL_INVs or, without (local_inv false), deregisters.
 * Checks the result, that no handle is open at the completion (RFC 8166
 * §8.1.3) and how each handle was invalidated. */
static void three_handle_call(bool allow, bool local_inv)
{
	setup_inv(16, 8, true, allow, 4, local_inv);
	F->release_invalidates[0] = !local_inv;
	static uint8_t result[8192];
	struct rpcrdma_iov res = {result, sizeof result, false};
	uint32_t xid;
	mode = SERVE_RESULT;
	res_len = 2000;
	CHECK_EQ(start_call(&A, 8, 9000, 9000, &res, 1, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].result_len[0], 2000);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	CHECK_EQ(F->live_remote[0], 0);
	struct rpcrdma_engine_counters ca, cb;
	rpcrdma_engine_get_counters(A.e, &ca);
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK_EQ(cb.send_with_inv, allow ? 1 : 0);
	CHECK_EQ(B.last_send_op, allow ? RPCRDMA_WR_SEND_WITH_INV
				       : RPCRDMA_WR_SEND);
	CHECK_EQ(ca.remote_invs, allow ? 1 : 0);
	int others = allow ? 2 : 3;
	CHECK_EQ(ca.local_invs, others);
	CHECK_EQ(F->local_inv_wrs[0], local_inv ? others : 0);
	CHECK_EQ(F->dereg_invs[0], local_inv ? 0 : others);
	teardown();
}

/* RFC 8797 §4.1: Send With Invalidate when both sides allow it; the
 * Requester invalidates the rest locally; otherwise all locally.
 * RFC 8166 §4.4.1: no rkey stays open after completion. */
static void test_remote_invalidation(void)
{
	three_handle_call(false, true);
	three_handle_call(true, true);
}

/* A device without LOCAL_INV (siw's userspace driver, docs/DEVICES.md):
 * cfg.local_inv false, so the Requester posts no LOCAL_INV and releasing
 * a chunk (deregistering it) is its invalidation, before the call
 * completes, with or without the peer's Send With Invalidate for one of
 * the handles. */
static void test_invalidation_by_deregistration(void)
{
	three_handle_call(false, false);
	three_handle_call(true, false);
}

/* RFC 8167: the server calls the client on the same connection; the
 * reverse-direction credits are accounted separately (§4.1). */
static void test_reverse_direction(void)
{
	setup(16, 4, true, true, 4);
	uint32_t xid;
	/* forward call first so A's grant becomes 4 */
	CHECK_EQ(start_call(&A, 16, 0, 200, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	/* reverse: B is the Requester now, A the Responder */
	CHECK_EQ(start_call(&B, 64, 0, 200, NULL, 0, &xid), 0);
	CHECK_EQ(xid, 0x8000);
	serve(&A, &B);
	ndone = 0;
	collect(&B);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[0].reply_len, 24 + 64);
	CHECK_MEM(reply_buf + 24, args, 64);
	struct rpcrdma_engine_info ia, ib;
	rpcrdma_engine_get_info(A.e, &ia);
	rpcrdma_engine_get_info(B.e, &ib);
	CHECK_EQ(ia.credits_granted, 4);  /* granted by B */
	CHECK_EQ(ib.credits_granted, 4);  /* granted by A */
	CHECK(ia.recvs_posted >= 4);      /* §3.3.1 receives >= grant */
	teardown();
}

/* RFC 8166 §3.3.1/§3.3.3: one call until the first grant, then never
 * more than granted (checked at every step by the fake). */
static void test_credit_limit(void)
{
	setup(16, 2, true, true, 4);
	uint32_t xid;
	mode = SERVE_HOLD;
	for (int i = 0; i < 5; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 1); /* only one before any grant */
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(A.e, &c);
	CHECK(c.credit_stalls >= 1);
	mode = SERVE_ECHO;
	/* release the held one by answering it properly */
	rpc_reply_hdr(reply_hdr, 0x1000);
	struct rpcrdma_iov v = {reply_hdr, 24, false};
	struct rpcrdma_reply_req rr = {&v, 1, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(B.e, held_calls[0], &rr, 0), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 5);
	for (int i = 0; i < ndone; i++)
		CHECK_EQ(done[i].status, 0);
	teardown();
}

static struct rpcrdma_engine_info info_of(const struct side *s)
{
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(s->e, &in);
	return in;
}

/* B answers every call it holds (SERVE_HOLD), then serves what that lets
 * through. */
static void answer_held(void)
{
	unsigned n = nheld;
	nheld = 0;
	for (unsigned i = 0; i < n; i++) {
		rpc_reply_hdr(reply_hdr, held_xids[i]);
		struct rpcrdma_iov v = {reply_hdr, 24, false};
		struct rpcrdma_reply_req rr = {&v, 1, NULL, false};
		CHECK_EQ(rpcrdma_engine_submit_reply(B.e, held_calls[i], &rr, 0),
			 0);
	}
	serve(&B, &A);
}

/* 30 calls held by B (SERVE_HOLD), in rounds: each round the client
 * sends as many as it was granted, want[r], and B's grant after it is
 * want[r + 1] (want[4] after the last); every grant is backed by posted
 * receives beside B's 32 for its own calls.  Ends with all 30 answered. */
static void grant_rounds(const uint32_t want[5])
{
	mode = SERVE_HOLD;
	uint32_t xid;
	for (int i = 0; i < 30; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 1); /* §3.3.3: one until the first reply */
	CHECK_EQ(info_of(&B).grant, want[0]); /* 1 open: not all of it */
	unsigned sent = 1;
	for (unsigned r = 0; r < 5 && sent < 30; r++) {
		answer_held();
		collect(&A);
		CHECK_EQ(info_of(&A).credits_granted, want[r]);
		unsigned got = nheld;
		CHECK_EQ(got, want[r] < 30 - sent ? want[r] : 30 - sent);
		sent += got;
		struct rpcrdma_engine_info b = info_of(&B);
		CHECK_EQ(b.grant, want[r + 1 < 5 ? r + 1 : 4]);
		CHECK(b.recvs_posted >= b.grant + 32);
	}
	answer_held();
	collect(&A);
	CHECK_EQ(ndone, 30);
	for (int i = 0; i < ndone; i++)
		CHECK_EQ(done[i].status, 0);
}

/* RFC 8166 §3.3.1 with credits_start: the server's grant starts small,
 * doubles each time a call comes with all of it in use, never passes
 * credits, and is always backed by posted receives (the fake counts a
 * Send with no receive posted as a violation, and a Requester over its
 * grant as a credit violation).  A new connection starts small again. */
static void test_grant_grows(void)
{
	b_credits_start = 2;
	setup(32, 16, true, true, 4);
	b_credits_start = 0;
	/* B's max_calls (32) receives for its own calls' replies beside. */
	CHECK_EQ(info_of(&B).grant, 2);
	CHECK_EQ(info_of(&B).recvs_posted, 2 + 32);
	/* Each round the client sends as many as it was granted; the server
	 * sees all of the grant in use and doubles it: 2, 4, 8, 16, 16. */
	const uint32_t want[] = {2, 4, 8, 16, 16};
	grant_rounds(want);
	uint32_t xid;
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(B.e, &c);
	CHECK_EQ(c.grant_raised, 3); /* 2 -> 4 -> 8 -> 16 */
	/* A new connection starts at credits_start again. */
	disconnect_pair(&A, &B);
	connect_pair(&A, &B, 4);
	CHECK_EQ(info_of(&B).grant, 2);
	CHECK_EQ(info_of(&B).recvs_posted, 2 + 32);
	mode = SERVE_ECHO;
	CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 31);
	CHECK_EQ(info_of(&A).credits_granted, 2);
	teardown();
}

/* setup(32, 16, ...) with B's first grant 2 and its credits drawn from
 * budget beyond it. */
static void setup_budget(struct rpcrdma_engine_budget *budget)
{
	b_credits_start = 2;
	b_budget = budget;
	setup(32, 16, true, true, 4);
	b_credits_start = 0;
	b_budget = NULL;
}

/* RFC 8166 §3.3.1 ("a Responder may reduce the granted credit value"),
 * with a server's budget: the grant grows only with what the budget has
 * left; one with none of its calls open and none arrived for a second
 * comes back to credits_start and gives the budget back; the peer, which
 * has not seen the smaller grant yet, may still send as many calls as the
 * larger one allowed, and each lands in a posted receive (the fake
 * counts a Send into none as a violation); its burst grows the grant
 * again.  A lost connection and a destroyed engine give the budget back. */
static void test_grant_budget(void)
{
	struct rpcrdma_engine_budget budget = {.limit = 6};
	setup_budget(&budget);
	CHECK_EQ(info_of(&B).grant, 2);
	CHECK_EQ(atomic_load(&budget.taken), 0);
	/* 2 -> 4 -> 8 takes 2 + 4 of the budget's 6: 16 is refused. */
	const uint32_t want[] = {2, 4, 8, 8, 8};
	grant_rounds(want);
	uint32_t xid;
	CHECK_EQ(atomic_load(&budget.taken), 6);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(B.e, &c);
	CHECK_EQ(c.grant_raised, 2);
	CHECK(c.grant_refused >= 1);
	CHECK_EQ(c.grant_lowered, 0);
	/* Idle: the first tick starts the quiet time, the grant comes down
	 * a second later (the deadline says when), not before. */
	const uint64_t t = 100000;
	rpcrdma_engine_tick(B.e, t);
	CHECK_EQ(rpcrdma_engine_next_deadline(B.e, t), t + 1000);
	rpcrdma_engine_tick(B.e, t + 999);
	CHECK_EQ(info_of(&B).grant, 8);
	rpcrdma_engine_tick(B.e, t + 1000);
	struct rpcrdma_engine_info b = info_of(&B);
	CHECK_EQ(b.grant, 2);
	CHECK_EQ(atomic_load(&budget.taken), 0);
	CHECK(b.recvs_posted >= 8 + 32); /* posted stay posted */
	CHECK_EQ(rpcrdma_engine_next_deadline(B.e, t + 1000), UINT64_MAX);
	rpcrdma_engine_get_counters(B.e, &c);
	CHECK_EQ(c.grant_lowered, 1);
	/* A burst of the old grant: all 8 land, and grow it on the way. */
	CHECK_EQ(info_of(&A).credits_granted, 8);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 8);
	CHECK_EQ(info_of(&B).grant, 8);
	CHECK_EQ(atomic_load(&budget.taken), 6);
	answer_held();
	collect(&A);
	CHECK_EQ(ndone, 38);
	for (int i = 0; i < ndone; i++)
		CHECK_EQ(done[i].status, 0);
	/* A call with the grant half used keeps it from coming down. */
	mode = SERVE_HOLD;
	CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	rpcrdma_engine_tick(B.e, t + 5000);
	rpcrdma_engine_tick(B.e, t + 9000);
	CHECK_EQ(info_of(&B).grant, 8);
	answer_held();
	collect(&A);
	CHECK_EQ(ndone, 39);
	/* Down again, and this time the budget is spent elsewhere (other
	 * connections took it): the burst of the old grant still lands
	 * whole, the grant stays down, and once the peer has seen it, it
	 * sends no more than 2 at a time. */
	rpcrdma_engine_tick(B.e, t + 20000);
	rpcrdma_engine_tick(B.e, t + 21000);
	CHECK_EQ(info_of(&B).grant, 2);
	atomic_store(&budget.taken, budget.limit);
	for (int i = 0; i < 12; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 8);
	CHECK_EQ(info_of(&B).grant, 2);
	rpcrdma_engine_get_counters(B.e, &c);
	CHECK(c.grant_refused >= 2);
	answer_held();
	collect(&A);
	CHECK_EQ(info_of(&A).credits_granted, 2);
	CHECK_EQ(nheld, 2); /* of the 4 that waited */
	/* Calls the peer sent under the larger grant stood over the smaller
	 * one until answered, which §3.3.1 allows (it "MAY" reduce it); the
	 * fake's step check counts those, and what the peer sent after
	 * seeing it is checked just above. */
	fake_credit_violations = 0;
	answer_held();
	collect(&A);
	CHECK_EQ(nheld, 2);
	answer_held();
	collect(&A);
	CHECK_EQ(ndone, 51);
	for (int i = 0; i < ndone; i++)
		CHECK_EQ(done[i].status, 0);
	CHECK_EQ(fake_credit_violations, 0);
	/* Refused, B counts among the connections that want some (halving
	 * the others' share) until it has been idle a second too. */
	CHECK_EQ(atomic_load(&budget.wanting), 1);
	rpcrdma_engine_tick(B.e, t + 30000);
	CHECK_EQ(rpcrdma_engine_next_deadline(B.e, t + 30000), t + 31000);
	rpcrdma_engine_tick(B.e, t + 31000);
	CHECK_EQ(atomic_load(&budget.wanting), 0);
	CHECK_EQ(info_of(&B).grant, 2);
	atomic_store(&budget.taken, 0);
	/* The connection's end, and the engine's, give back what it took. */
	for (int round = 0; round < 2; round++) {
		disconnect_pair(&A, &B);
		CHECK_EQ(atomic_load(&budget.taken), 0);
		connect_pair(&A, &B, 4);
		CHECK_EQ(info_of(&B).grant, 2);
		mode = SERVE_HOLD;
		for (int i = 0; i < 4; i++)
			CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
		pump(&A, &B);
		serve(&B, &A);
		answer_held(); /* 1, then all of the grant of 2 in use: 4 */
		collect(&A);
		CHECK_EQ(info_of(&B).grant, 4);
		CHECK_EQ(atomic_load(&budget.taken), 2);
		answer_held(); /* 2, which lets the fourth go */
		collect(&A);
		answer_held();
		collect(&A);
		CHECK_EQ(ndone, 55 + 4 * (unsigned)round);
	}
	teardown();
	CHECK_EQ(atomic_load(&budget.taken), 0); /* destroy gave it back */
}

/* The budget's share: while another connection wants some of it (here
 * one that was refused, counted in wanting as its engine would), B grows
 * to limit / 2 at most, and B, which took all of it first, comes down to
 * that share at its next tick with its calls open; the calls its client
 * sent under the larger grant all land.  When the other is gone, B grows
 * to the whole budget again. */
static void test_grant_share(void)
{
	struct rpcrdma_engine_budget budget = {.limit = 6};
	setup_budget(&budget);
	const uint32_t want[] = {2, 4, 8, 8, 8};
	grant_rounds(want); /* all 6 taken, B alone wants */
	CHECK_EQ(atomic_load(&budget.taken), 6);
	CHECK_EQ(atomic_load(&budget.wanting), 1);
	/* Eight calls open on B, then another connection is refused. */
	mode = SERVE_HOLD;
	uint32_t xid;
	for (int i = 0; i < 8; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 8);
	atomic_fetch_add(&budget.wanting, 1);
	rpcrdma_engine_tick(B.e, 100000);
	struct rpcrdma_engine_info b = info_of(&B);
	CHECK_EQ(b.grant, 2 + 3);
	CHECK(b.recvs_posted >= 8 + 32); /* posted stay posted */
	CHECK_EQ(atomic_load(&budget.taken), 3);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(B.e, &c);
	CHECK_EQ(c.grant_trimmed, 1);
	CHECK_EQ(c.grant_lowered, 0);
	/* The replies carry 5; the client keeps to it, and B does not grow
	 * past its share however busy. */
	answer_held();
	collect(&A);
	CHECK_EQ(info_of(&A).credits_granted, 5);
	for (int i = 0; i < 12; i++)
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	pump(&A, &B);
	serve(&B, &A);
	CHECK_EQ(nheld, 5);
	CHECK_EQ(info_of(&B).grant, 5);
	/* Calls sent under the larger grant stood over the smaller one
	 * until answered (§3.3.1 lets a Responder reduce it); what the
	 * client sent after seeing it is checked just above. */
	fake_credit_violations = 0;
	/* The other connection is gone: B may grow to all of it again. */
	atomic_fetch_sub(&budget.wanting, 1);
	answer_held();
	collect(&A);
	CHECK_EQ(nheld, 5);
	CHECK_EQ(info_of(&B).grant, 8);
	CHECK_EQ(atomic_load(&budget.taken), 6);
	answer_held();
	collect(&A);
	answer_held();
	collect(&A);
	CHECK_EQ(ndone, 50);
	for (int i = 0; i < ndone; i++)
		CHECK_EQ(done[i].status, 0);
	CHECK_EQ(fake_credit_violations, 0);
	teardown();
	CHECK_EQ(atomic_load(&budget.taken), 0);
	CHECK_EQ(atomic_load(&budget.wanting), 0);
}

/* RFC 8166 §3.3.1: RDMA Reads within the ORD; more segments than the
 * ORD queue (a stall), the call still arrives intact. */
static void test_ord(void)
{
	setup(16, 8, true, true, 1);
	/* Long Call with an unaligned DDP piece: 5 PZRC segments, ORD 1 */
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 0;
	CHECK_EQ(start_call(&A, 6000, 3001, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	struct rpcrdma_engine_counters cb;
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK(cb.ord_stalls >= 1);
	check_call_seen(6000, 3001, xid);
	CHECK_EQ(done[0].status, 0);
	teardown();
}

/* Side B's RDMA Reads in the current pump_step(): those it posts
 * before any of their completions is taken are the ones in flight at
 * once. */
static uint64_t step_bytes;
static uint32_t reads_max_wr, reads_nwr;

static void count_reads(const struct side *s, const struct rpcrdma_engine_wr *w)
{
	if (s != &B || w->send.opcode != RPCRDMA_WR_RDMA_READ)
		return;
	step_bytes += w->sge[0].length;
	reads_nwr++;
	if (w->sge[0].length > reads_max_wr)
		reads_max_wr = w->sge[0].length;
}

/* A long Read segment is read in pieces of cfg.read_piece, with at most
 * cfg.read_window bytes of Reads in flight on the connection (RFC 8166
 * §3.3.1 leaves limits on Reads in progress to the implementation;
 * §4.5.3: "RDMA Read operations").  Two calls' chunks at once: a slot
 * that stalls on the window while its own Reads are in flight, then has
 * one complete, must wait in the pending queue once (twice would make
 * the queue a loop).  Both calls arrive intact. */
static void test_read_pieces(void)
{
	b_read_piece = 4096;
	b_read_window = 10000; /* two pieces fit, a third does not */
	setup(16, 8, true, true, 16);
	b_read_piece = b_read_window = 0;
	/* A first call and its reply grant the client more than the one
	 * credit it starts with (RFC 8166 §3.3.3). */
	uint32_t xid1, xid2;
	CHECK_EQ(start_call(&A, 100, 0, 100, NULL, 0, &xid1), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	mode = SERVE_HOLD;
	CHECK_EQ(start_call(&A, 100, 50001, 100, NULL, 0, &xid1), 0);
	CHECK_EQ(start_call(&A, 100, 9000, 100, NULL, 0, &xid2), 0);
	uint64_t most = 0, total = 0;
	reads_max_wr = reads_nwr = 0;
	fake_on_wr = count_reads;
	for (int i = 0; i < 200; i++) {
		step_bytes = 0;
		pump_step(&A, &B);
		total += step_bytes;
		if (step_bytes > most)
			most = step_bytes;
	}
	fake_on_wr = NULL;
	CHECK_EQ(total, 50001 + 9000);
	CHECK(most <= 10000);
	CHECK(most > 4096); /* the window, not one Read at a time */
	CHECK_EQ(reads_max_wr, 4096);
	/* ceil(50001 / 4096) + ceil(9000 / 4096) */
	CHECK_EQ(reads_nwr, 13 + 3);
	struct rpcrdma_engine_counters cb;
	rpcrdma_engine_get_counters(B.e, &cb);
	CHECK(cb.read_window_stalls >= 1);
	CHECK_EQ(cb.rdma_read_bytes, 50001 + 9000);
	/* Both calls were delivered; the second one's copy is the last. */
	struct rpcrdma_engine_event ev;
	unsigned calls = 0;
	while (rpcrdma_engine_poll_event(B.e, &ev))
		if (ev.type == RPCRDMA_EV_INCOMING_CALL) {
			calls++;
			last_call_len = ev.call_len;
			memcpy(last_call, ev.call, ev.call_len);
			CHECK(ev.xid == xid1 || ev.xid == xid2);
			if (ev.xid == xid1) {
				CHECK_EQ(ev.call_len, 40 + 100 + 4 + 50004);
				CHECK_MEM((const uint8_t *)ev.call + 144, ddp_arg,
					  50001);
			}
		}
	CHECK_EQ(calls, 2);
	check_call_seen(100, 9000, xid2);
	teardown();
}

/* Connection loss (RFC 8166 §4.5.5, RFC 8167 §5.4): outstanding calls
 * are resent with the same XID on the new connection or completed with
 * a clear error; never twice. */
static void test_conn_loss(void)
{
	for (int retries = 0; retries < 2; retries++) {
		if (!F)
			F = calloc(1, sizeof *F);
		memset(F, 0, sizeof *F);
		side_init(&A, F, 0);
		side_init(&B, F, 1);
		struct rpcrdma_engine_config c;
		rpcrdma_engine_config_default(&c);
		c.max_calls = 8;
		c.credits = 8;
		c.max_retries = (uint32_t)retries;
		c.xid_seed = 0x1000;
		c.versions = RPCRDMA_ENGINE_V1_ONLY; /* v1 scripts */
		CHECK_EQ(side_create(&A, &c), 0);
		CHECK_EQ(side_create(&B, &c), 0);
		connect_pair(&A, &B, 4);
		ndone = 0;
		nheld = 0;
		fake_credit_violations = 0;
		/* grant 8 first */
		mode = SERVE_ECHO;
		uint32_t xid;
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
		serve(&B, &A);
		collect(&A);
		CHECK_EQ(ndone, 1);
		/* three calls the server holds; one with a Long Call */
		mode = SERVE_HOLD;
		uint32_t x[3];
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &x[0]), 0);
		CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &x[1]), 0);
		CHECK_EQ(start_call(&A, 8000, 0, 100, NULL, 0, &x[2]), 0);
		serve(&B, &A);
		CHECK_EQ(nheld, 3);
		disconnect_pair(&A, &B);
		collect(&A);
		/* stale reply from the old connection is refused */
		rpc_reply_hdr(reply_hdr, x[0]);
		struct rpcrdma_iov v = {reply_hdr, 24, false};
		struct rpcrdma_reply_req rr = {&v, 1, NULL, false};
		CHECK_EQ(rpcrdma_engine_submit_reply(B.e, held_calls[0], &rr, 0),
			 RPCRDMA_ERR_DISCONNECTED);
		if (!retries) {
			CHECK_EQ(ndone, 4);
			for (int i = 1; i < 4; i++)
				CHECK_EQ(done[i].status, RPCRDMA_ERR_DISCONNECTED);
			CHECK_EQ(fake_open_rkeys(F, 0), 0);
		} else {
			CHECK_EQ(ndone, 1);
			nheld = 0;
			mode = SERVE_BIG;
			big_len = 0;
			connect_pair(&A, &B, 4);
			serve(&B, &A);
			collect(&A);
			CHECK_EQ(ndone, 4);
			for (int i = 1; i < 4; i++) {
				CHECK_EQ(done[i].status, 0);
				CHECK(done[i].xid == x[0] || done[i].xid == x[1] ||
				      done[i].xid == x[2]);
			}
			struct rpcrdma_engine_counters ca;
			rpcrdma_engine_get_counters(A.e, &ca);
			CHECK_EQ(ca.retransmissions, 3);
		}
		/* exactly once: nothing more ever comes */
		disconnect_pair(&A, &B);
		connect_pair(&A, &B, 4);
		serve(&B, &A);
		int before = ndone;
		collect(&A);
		CHECK_EQ(ndone, before);
		struct rpcrdma_engine_counters ca;
		rpcrdma_engine_get_counters(A.e, &ca);
		CHECK_EQ(ca.calls_completed, 4);
		CHECK_EQ(F->violations, 0);
		rpcrdma_engine_destroy(A.e);
		rpcrdma_engine_destroy(B.e);
	}
}

/* Whether n bytes at p are all zero. */
static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* A call of len argument bytes from A, echoed by B: served, completed,
 * its reply checked. */
static void echo_call(size_t len)
{
	uint32_t xid;
	ndone = 0;
	CHECK_EQ(start_call(&A, len, 0, 1000, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	CHECK_MEM(reply_buf + 24, args, len);
}

/* A slot is set up when first taken, and a slot never taken is never
 * written: its pages stay as they came (not resident).  An idle server
 * connection then holds the one or two slots its calls used, not all of
 * them (a Responder slot is 9 KiB, and there are twice the credits). */
static void test_untouched_slots(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	CHECK_EQ(start_call(&A, 100, 0, 1000, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	/* Losing the connection unwinds the slots taken only. */
	disconnect_pair(&A, &B);
	/* First (reading a page maps it): of B's 16 Responder slots of
	 * 9 KiB (36 pages), only those of the one or two taken are in
	 * memory; the rest were not even written with zeros. */
	long r = resident_pages(B.e->rs, B.e->nrs * sizeof *B.e->rs);
	if (r >= 0)
		CHECK(r <= 6);
	CHECK_EQ(A.e->rq_used, 1);
	CHECK(B.e->rs_used >= 1 && B.e->rs_used <= 2);
	CHECK(B.e->nrs == 16);
	for (uint32_t i = A.e->rq_used; i < A.e->nrq; i++)
		CHECK(all_zero(&A.e->rq[i], sizeof A.e->rq[i]));
	for (uint32_t i = B.e->rs_used; i < B.e->nrs; i++)
		CHECK(all_zero(&B.e->rs[i], sizeof B.e->rs[i]));
	/* Nor the Responder side's Requester slots (the reverse direction),
	 * nor the client's Responder slots. */
	CHECK_EQ(B.e->rq_used, 0);
	for (uint32_t i = 0; i < B.e->nrq; i++)
		CHECK(all_zero(&B.e->rq[i], sizeof B.e->rq[i]));
	CHECK_EQ(A.e->rs_used, 0);
	for (uint32_t i = 0; i < A.e->nrs; i++)
		CHECK(all_zero(&A.e->rs[i], sizeof A.e->rs[i]));
	/* A slot taken after the loss works as a new one. */
	connect_pair(&A, &B, 4);
	echo_call(200);
	teardown();
}

/* B's Responder slots whose unsignalled reply Send is still out (their
 * REPLY_SENT polled); how many of them still hold the call's memory. */
static unsigned sends_out(unsigned *holding)
{
	unsigned n = 0;
	*holding = 0;
	for (uint32_t i = 0; i < B.e->rs_used; i++) {
		const struct responder_slot *s = &B.e->rs[i];
		if (s->state != RS_DONE || !s->send_pending || s->event_pending)
			continue;
		n++;
		if (s->rbuf != RPCRDMA_NIL || s->callbuf)
			(*holding)++;
	}
	return n;
}

/* RFC 8166 §3.3.1 keeps as many receives posted as the grant; what a
 * reply no longer needs goes back at once.  A reply's Send is left
 * unsignalled (engine/send_queue.c) and keeps its slot until a later
 * completion, but once the upper layer is done with the call (REPLY_SENT
 * polled, nothing held) the call's receive buffer is free again, to be
 * posted at the next refill; one the upper layer holds
 * (rpcrdma_reply_req.hold) stays until rpcrdma_engine_release_reply. */
static void test_call_memory_back(void)
{
	setup(16, 8, true, true, 4);
	uint32_t xid;
	unsigned holding;
	/* One signalled in signal_every (4 here): two calls leave two
	 * Sends out. */
	echo_call(100);
	echo_call(100);
	CHECK_EQ(sends_out(&holding), 2);
	CHECK_EQ(holding, 0);
	/* Posted again: what is posted, free and held adds up to every
	 * buffer, none held by the slots whose Sends are out. */
	CHECK_EQ(B.e->nrecv_posted + B.e->nrecv_free, B.e->nrbuf);

	/* Held by the upper layer past its reply. */
	ndone = 0;
	CHECK_EQ(start_call(&A, 100, 0, 1000, NULL, 0, &xid), 0);
	pump(&A, &B);
	struct rpcrdma_engine_event ev;
	uint32_t call_id = UINT32_MAX;
	while (rpcrdma_engine_poll_event(B.e, &ev))
		if (ev.type == RPCRDMA_EV_INCOMING_CALL)
			call_id = ev.call_id;
	CHECK(call_id != UINT32_MAX);
	if (call_id == UINT32_MAX) {
		teardown();
		return;
	}
	rpc_reply_hdr(reply_hdr, xid);
	rep_iov[0] = (struct rpcrdma_iov){reply_hdr, 24, false};
	struct rpcrdma_reply_req rr = {rep_iov, 1, NULL, true};
	CHECK_EQ(rpcrdma_engine_submit_reply(B.e, call_id, &rr, 0), 0);
	pump(&A, &B);
	int sent = 0;
	while (rpcrdma_engine_poll_event(B.e, &ev))
		sent += ev.type == RPCRDMA_EV_REPLY_SENT;
	CHECK_EQ(sent, 1);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	const struct responder_slot *h = &B.e->rs[call_id];
	CHECK(h->send_pending);
	CHECK(h->rbuf != RPCRDMA_NIL);
	rpcrdma_engine_release_reply(B.e, call_id);
	CHECK(h->send_pending);
	CHECK(h->rbuf == RPCRDMA_NIL);
	CHECK_EQ(sends_out(&holding), 3);
	CHECK_EQ(holding, 0);
	teardown();
}

/* One reply Send in 4 is signalled whatever signal_every is
 * (engine/send_queue.c): a connection with one call in flight keeps at
 * most 3 Responder slots busy behind unsignalled replies, not
 * signal_every - 1 (15 at the defaults), each with its send buffer. */
static void test_reply_signal_interval(void)
{
	setup(64, 32, true, true, 4);
	CHECK(B.e->signal_every > 4);
	unsigned holding, most = 0;
	for (int i = 0; i < 12; i++) {
		echo_call(100);
		unsigned n = sends_out(&holding);
		CHECK_EQ(holding, 0);
		if (n > most)
			most = n;
	}
	CHECK_EQ(most, 3);
	teardown();
}

/* A registration shortage (mem->reg AGAIN) is a queued state, not a
 * failure: starvation is a state with a queue (engine/engine_internal.h). */
static void test_mr_starvation(void)
{
	setup(16, 8, true, true, 4);
	F->again_budget = 1;
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 0;
	CHECK_EQ(start_call(&A, 200, 10001, 100, NULL, 0, &xid), 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(A.e, &c);
	CHECK_EQ(c.mr_stalls, 1);
	/* a completion elsewhere retries it: do a short call */
	CHECK_EQ(start_call(&A, 8, 0, 100, NULL, 0, &xid), 0);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 2);
	CHECK_EQ(done[0].status, 0);
	CHECK_EQ(done[1].status, 0);
	teardown();
}

/* The same with nothing else to do: no completion will come, so the
 * engine's tick retries the registration and the call goes out. */
static void test_mr_starvation_tick(void)
{
	setup(16, 8, true, true, 4);
	F->again_budget = 1; /* the submit's progress pass (a slot still
				 * starved is not retried in the same pass) */
	uint32_t xid;
	mode = SERVE_BIG;
	big_len = 0;
	CHECK_EQ(start_call(&A, 200, 10001, 100, NULL, 0, &xid), 0);
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(A.e, &in);
	CHECK_EQ(in.calls_in_flight, 0); /* waiting, not failed */
	CHECK_EQ(ndone, 0);
	/* A shortage has no clock: the next tick must come at once. */
	CHECK_EQ(rpcrdma_engine_next_deadline(A.e, 10), 10);
	rpcrdma_engine_tick(A.e, 20); /* nothing else has moved A */
	rpcrdma_engine_get_info(A.e, &in);
	CHECK_EQ(in.calls_in_flight, 1);
	/* Sent: its reply is an input; nothing waits on time. */
	CHECK_EQ(rpcrdma_engine_next_deadline(A.e, 20), UINT64_MAX);
	pump(&A, &B);
	serve(&B, &A);
	collect(&A);
	CHECK_EQ(ndone, 1);
	CHECK_EQ(done[0].status, 0);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(A.e, &c);
	CHECK_EQ(c.mr_stalls, 1);
	CHECK_EQ(F->violations, 0);
	teardown();
}

int main(void)
{
	test_short();
	test_call_threshold();
	test_chunked_call();
	test_bind_before_send();
	test_long_call_with_ddp();
	test_write_chunk();
	test_long_reply();
	test_remote_invalidation();
	test_invalidation_by_deregistration();
	test_reverse_direction();
	test_credit_limit();
	test_grant_grows();
	test_grant_budget();
	test_grant_share();
	test_ord();
	test_read_pieces();
	test_conn_loss();
	test_untouched_slots();
	test_call_memory_back();
	test_reply_signal_interval();
	test_mr_starvation();
	test_mr_starvation_tick();
	free(F);
	TEST_MAIN_END();
}
