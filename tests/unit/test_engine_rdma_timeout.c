/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The Responder's RDMA time-out (engine/rdma_timeout.c): a call whose
 * RDMA Read is never answered, or whose reply's Send never completes,
 * closes the connection after rdma_timeout_ms (RFC 8166 §4.5.3, §4.5.5),
 * counted once; operations that complete in time, and idle slots, never
 * trigger it; 0 turns it off.  Time is what tick() is given, and
 * next_deadline says when the next tick must come.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_engine_fake.h"

static struct fake *F;
static struct side S;
static const uint64_t T0 = 5000;

/* Work requests handed out, kept (not completed) for the test to finish
 * as it likes. */
static struct rpcrdma_engine_wr held[64];
static int nheld;
static int ncalls, ncloses, close_reason;
static uint32_t call_id;

static void pop_all(void)
{
	struct rpcrdma_engine_wr w;
	struct rpcrdma_engine_event ev;
	while (rpcrdma_engine_pop_wr(S.e, &w))
		if (!w.is_recv && nheld < 64)
			held[nheld++] = w;
	while (rpcrdma_engine_poll_event(S.e, &ev)) {
		if (ev.type == RPCRDMA_EV_INCOMING_CALL) {
			ncalls++;
			call_id = ev.call_id;
		} else if (ev.type == RPCRDMA_EV_CLOSE) {
			ncloses++;
			close_reason = ev.reason;
		}
	}
}

static uint32_t cur_xid;

/* Complete every held signalled work request of opcode op (a provider
 * reports no other); a Read "brings" a NULL call of cur_xid padded to 64
 * bytes. */
static void complete(enum rpcrdma_wr_opcode op, uint64_t now)
{
	for (int i = 0; i < nheld; i++) {
		if (held[i].send.opcode != op ||
		    !(held[i].send.send_flags & RPCRDMA_SEND_SIGNALED))
			continue;
		if (op == RPCRDMA_WR_RDMA_READ) {
			uint8_t *d = (uint8_t *)(uintptr_t)held[i].sge[0].addr;
			memset(d, 0, held[i].sge[0].length);
			rpc_call_hdr(d, 100003, 3, 0);
			rpcrdma_be32_put(d, cur_xid);
		}
		struct rpcrdma_wc wc = {0};
		wc.wr_id = held[i].send.wr_id;
		wc.status = RPCRDMA_WC_SUCCESS;
		held[i--] = held[--nheld];
		rpcrdma_engine_completion(S.e, &wc);
	}
	pop_all();
}

static void start(uint32_t timeout_ms)
{
	struct rpcrdma_engine_config c;
	rpcrdma_engine_config_default(&c);
	CHECK_EQ(c.rdma_timeout_ms, 30000); /* the default */
	c.max_calls = 4;
	c.credits = 8;
	c.versions = RPCRDMA_ENGINE_V1_ONLY;
	c.rdma_timeout_ms = timeout_ms;
	CHECK_EQ(fake_single(&F, &S, &c, NULL, 0, T0), 0);
	nheld = ncalls = ncloses = 0;
	close_reason = 0;
	pop_all();
}

static void stop(void)
{
	F->conn_down = true;
	rpcrdma_engine_destroy(S.e);
	S.e = NULL;
}

static uint64_t timeouts(void)
{
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	return c.rdma_timeouts;
}

/* A Long Call (RFC 8166 §3.5.3): RDMA_NOMSG whose Position-Zero Read
 * chunk holds a 64-byte call; the Responder must RDMA Read it.  write:
 * it also offers a 64-byte Write chunk for a DDP-eligible result. */
static void feed_long_call(uint32_t xid, bool write)
{
	cur_xid = xid;
	uint32_t w[] = {xid, 1, 8, 1, 1, 0, 0x4242, 64, 0, 0x10000, 0,
			1, 1, 0x4343, 64, 0, 0x20000, 0, 0};
	if (!write) {
		w[11] = 0; /* no Write list */
		w[12] = 0; /* no Reply chunk */
	}
	uint8_t b[128];
	CHECK_EQ(rpcrdma_engine_recv(S.e, b, xdr_words(b, w, write ? 19 : 13),
				     false, 0, T0),
		 0);
	pop_all();
}

/* Answer the last incoming call: a 24-byte accepted reply header, and
 * with ddp a 64-byte DDP-eligible result (into the Write chunk: an RDMA
 * Write, then a Send that waits for it, send_queue.c). */
static void reply(uint32_t xid, bool ddp, uint64_t now)
{
	static uint8_t rep[24], res[64];
	rpc_reply_hdr(rep, xid);
	struct rpcrdma_iov rv[2] = {{rep, 24, false}, {res, 64, true}};
	struct rpcrdma_reply_req rr = {rv, ddp ? 2 : 1, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, call_id, &rr, now), 0);
	pop_all();
}

static int count(enum rpcrdma_wr_opcode op)
{
	int n = 0;
	for (int i = 0; i < nheld; i++)
		n += held[i].send.opcode == op;
	return n;
}

/* The Read never answered: nothing before the time-out, one CLOSE with
 * RPCRDMA_ERR_TIMEOUT at the first tick past it, counted once. */
static void test_read_never_answered(void)
{
	start(300);
	/* Idle: nothing waits on time. */
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0), UINT64_MAX);
	feed_long_call(0x10, false);
	CHECK_EQ(count(RPCRDMA_WR_RDMA_READ), 1);
	/* A Read out that no tick has timed: the next tick must come now. */
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0), T0);
	rpcrdma_engine_tick(S.e, T0);          /* arms: deadline T0 + 300 */
	pop_all();
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0), T0 + 300);
	rpcrdma_engine_tick(S.e, T0 + 299);
	pop_all();
	CHECK_EQ(ncloses, 0);
	CHECK_EQ(timeouts(), 0);
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0 + 299), T0 + 300);
	rpcrdma_engine_tick(S.e, T0 + 300);
	pop_all();
	/* The close asked is carried out on the next tick: at once. */
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0 + 300), T0 + 300);
	CHECK_EQ(ncloses, 1);
	CHECK_EQ(close_reason, RPCRDMA_ERR_TIMEOUT);
	CHECK_EQ(timeouts(), 1);
	rpcrdma_engine_tick(S.e, T0 + 10000);  /* asked once */
	pop_all();
	CHECK_EQ(ncloses, 1); /* no second CLOSE */
	CHECK_EQ(timeouts(), 1);
	/* The driver disconnects; the call, its buffer and registrations
	 * go (LeakSanitizer and the fake's accounting see the rest). */
	F->conn_down = true;
	rpcrdma_engine_conn_lost(S.e, T0 + 10001);
	CHECK_EQ(fake_open_rkeys(F, 0), 0);
	stop();
}

/* A Read answered in time, a handler slower than the time-out (not an
 * RDMA operation), a reply whose Write and Send complete in time, a reply
 * Send left unsignalled on a connection that then goes idle (it completes
 * only with a later request): no close.  Then a reply whose Write and
 * Send never complete: close. */
static void test_in_time_then_send_stuck(void)
{
	start(300);
	feed_long_call(0x20, true);
	rpcrdma_engine_tick(S.e, T0);
	rpcrdma_engine_tick(S.e, T0 + 200);
	complete(RPCRDMA_WR_RDMA_READ, T0 + 200);
	CHECK_EQ(ncalls, 1);
	/* The handler takes long: the slot waits for the upper layer. */
	rpcrdma_engine_tick(S.e, T0 + 5000);
	pop_all();
	CHECK_EQ(ncloses, 0);
	reply(0x20, true, T0 + 5000);
	CHECK_EQ(count(RPCRDMA_WR_RDMA_WRITE), 1);
	CHECK_EQ(count(RPCRDMA_WR_SEND), 1);
	rpcrdma_engine_tick(S.e, T0 + 5000);   /* Send outstanding: arms */
	rpcrdma_engine_tick(S.e, T0 + 5299);
	pop_all();
	CHECK_EQ(ncloses, 0);
	complete(RPCRDMA_WR_SEND, T0 + 5299);
	rpcrdma_engine_tick(S.e, T0 + 9000);
	pop_all();
	CHECK_EQ(ncloses, 0);
	/* Replies with nothing of the caller's to read: their Sends go out
	 * unsignalled and nothing follows them for a long while.  One from
	 * the upper layer, one the engine makes itself (an ERR_VERS, RFC
	 * 8166 §4.5.1), whose slot stays busy until a later completion. */
	feed_long_call(0x22, false);
	complete(RPCRDMA_WR_RDMA_READ, T0 + 9000);
	reply(0x22, false, T0 + 9000);
	uint32_t bad[] = {0x23, 3, 8, 0, 0, 0, 0};
	uint8_t b[28];
	CHECK_EQ(rpcrdma_engine_recv(S.e, b, xdr_words(b, bad, 7), false, 0,
				     T0 + 9000), 0);
	pop_all();
	CHECK_EQ(count(RPCRDMA_WR_SEND), 2);
	for (uint64_t t = 9000; t <= 100000; t += 1000)
		rpcrdma_engine_tick(S.e, T0 + t);
	pop_all();
	CHECK_EQ(ncloses, 0);
	CHECK_EQ(timeouts(), 0);
	/* Another call; its reply's Write and Send never complete. */
	feed_long_call(0x21, true);
	complete(RPCRDMA_WR_RDMA_READ, T0 + 100000);
	reply(0x21, true, T0 + 100000);
	rpcrdma_engine_tick(S.e, T0 + 100000);
	rpcrdma_engine_tick(S.e, T0 + 100300);
	pop_all();
	CHECK_EQ(ncloses, 1);
	CHECK_EQ(timeouts(), 1);
	F->conn_down = true;
	rpcrdma_engine_conn_lost(S.e, T0 + 100301);
	stop();
}

/* rdma_timeout_ms 0: never. */
static void test_off(void)
{
	start(0);
	feed_long_call(0x30, false);
	CHECK_EQ(rpcrdma_engine_next_deadline(S.e, T0), UINT64_MAX);
	for (uint64_t t = 0; t < 100; t++)
		rpcrdma_engine_tick(S.e, T0 + t * 100000);
	pop_all();
	CHECK_EQ(ncloses, 0);
	CHECK_EQ(timeouts(), 0);
	F->conn_down = true;
	rpcrdma_engine_conn_lost(S.e, T0);
	stop();
}

int main(void)
{
	test_read_never_answered();
	test_in_time_then_send_stuck();
	test_off();
	free(F);
	TEST_MAIN_END();
}
