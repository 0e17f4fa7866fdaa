/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ERR_VERS for every RPC-over-RDMA version a connection does not speak
 * (RFC 8166 §4.5, §4.5.1, §7; draft-cel-nfsv4-rpcrdma-version-two-09
 * §5.3.3, §7.2, §7.3), in both roles, as the first message of a
 * connection and after v1 or v2 traffic.
 *
 * For a version other than 1 and 2 the answer is the fixed v1 layout
 * (RFC 8166 §7: the one all versions can decode, docs/v2.md): xid and
 * rdma_vers echoed, our grant, RDMA_ERROR, ERR_VERS, low, high (seven
 * words).  The connection stays up and a following message in a version
 * it speaks is served.  Expected bytes are written out as XDR words.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_engine_fake.h"
#include "wire/rpcrdma_v2.h"

static struct fake *F;
static struct side S;
static struct rpcrdma_engine_config C;
static const uint64_t NOW = 1000;

/* What the engine did in the last drain(). */
static uint8_t sent[8][1024];
static size_t sent_len[8];
static int nsent, ncalls, ncloses;
static uint32_t last_call_id;

static void drain(void)
{
	struct rpcrdma_engine_wr w;
	struct rpcrdma_engine_event ev;
	nsent = ncalls = ncloses = 0;
	for (int round = 0; round < 8; round++) {
		bool moved = false;
		while (rpcrdma_engine_pop_wr(S.e, &w)) {
			moved = true;
			if (w.is_recv)
				continue;
			if ((w.send.opcode == RPCRDMA_WR_SEND ||
			     w.send.opcode == RPCRDMA_WR_SEND_WITH_INV) &&
			    nsent < 8) {
				sent_len[nsent] = fake_send_gather(&w.send, sent[nsent]);
				nsent++;
			}
			fake_send_done(S.e, &w.send, NOW);
		}
		while (rpcrdma_engine_poll_event(S.e, &ev)) {
			moved = true;
			if (ev.type == RPCRDMA_EV_INCOMING_CALL) {
				ncalls++;
				last_call_id = ev.call_id;
			} else if (ev.type == RPCRDMA_EV_CLOSE) {
				ncloses++;
			}
		}
		if (!moved)
			break;
	}
}

static void feed_words(const uint32_t *w, size_t n)
{
	uint8_t b[1024];
	CHECK_EQ(rpcrdma_engine_recv(S.e, b, xdr_words(b, w, n), false, 0, NOW),
		 0);
	drain();
}

static uint32_t sent_word(int i, int k)
{
	return rpcrdma_be32_get(sent[i] + 4 * k);
}

enum role { SERVER, CLIENT };

/* Connect S as `role` with `versions`; a client's v2 opener (if any) is
 * left unanswered. */
static void start(enum role role, uint32_t versions)
{
	rpcrdma_engine_config_default(&C);
	C.max_calls = 8;
	C.credits = 16;
	C.xid_seed = 0x4000;
	C.versions = versions;
	C.client = role == CLIENT;
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, true);
	CHECK_EQ(fake_single(&F, &S, &C, pd, sizeof pd, NOW), 0);
	drain();
}

static void stop(void)
{
	F->conn_down = true;
	rpcrdma_engine_destroy(S.e);
	S.e = NULL;
}

static uint32_t version(void)
{
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(S.e, &in);
	return in.version;
}

/* A CALL (RDMA_MSG, empty chunk lists, a 40-byte RPC call header) in
 * version `vers`, laid out as v1 (a version we do not know has no other
 * layout we could use) or, for vers 2, as v2. */
static void feed_call(uint32_t xid, uint32_t vers)
{
	uint32_t v1[] = {xid, vers, 8, 0, 0, 0, 0,
			 xid, 0, 2, 100003, 3, 1, 0, 0, 0, 0};
	uint32_t v2[] = {xid, 2, 8, 0, 0, 0, 0, 0, 0,
			 xid, 0, 2, 100003, 3, 1, 0, 0, 0, 0};
	if (vers == RPCRDMA_VERSION_2)
		feed_words(v2, 19);
	else
		feed_words(v1, 17);
}

/* The one answer to a message in version `vers`: ERR_VERS in RFC 8166's
 * fixed layout, range lo..hi, the connection kept. */
static void check_err_vers(uint32_t xid, uint32_t vers, uint32_t lo,
			   uint32_t hi)
{
	CHECK_EQ(ncloses, 0);
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent_len[0], 28);
	uint32_t want[] = {xid, vers, 16, 4, 1, lo, hi};
	for (int k = 0; k < 7; k++)
		CHECK_EQ(sent_word(0, k), want[k]);
}

/* Then a call in a version the connection speaks is delivered. */
static void check_served(uint32_t xid, uint32_t vers)
{
	feed_call(xid, vers);
	CHECK_EQ(ncloses, 0);
	CHECK_EQ(ncalls, 1);
	uint8_t rep[24];
	rpc_reply_hdr(rep, xid);
	struct rpcrdma_iov rv = {rep, 24, false};
	struct rpcrdma_reply_req rr = {&rv, 1, NULL, false};
	CHECK_EQ(rpcrdma_engine_submit_reply(S.e, last_call_id, &rr, NOW), 0);
	drain();
	CHECK_EQ(nsent, 1);
	CHECK_EQ(sent_word(0, 0), xid);
	CHECK_EQ(sent_word(0, 1), vers);
	CHECK_EQ(ncloses, 0);
}

static const uint32_t BAD[] = {0, 3, 7, 0xFFFFFFFFu};
#define NBAD (sizeof BAD / sizeof BAD[0])

/* Server, each bad version as the connection's first message: the range
 * is what the configuration allows; the client may then open in a
 * version we speak. */
static void test_server_first(void)
{
	static const struct { uint32_t cfg, lo, hi, ok; } cases[] = {
		{RPCRDMA_ENGINE_V1_ONLY, 1, 1, 1},
		{RPCRDMA_ENGINE_PREFER_V2, 1, 2, 1},
		{RPCRDMA_ENGINE_PREFER_V2, 1, 2, 2},
		{RPCRDMA_ENGINE_V2_ONLY, 2, 2, 2},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (size_t b = 0; b < NBAD; b++) {
			start(SERVER, cases[c].cfg);
			uint32_t xid = 0x100 + (uint32_t)b;
			feed_call(xid, BAD[b]);
			check_err_vers(xid, BAD[b], cases[c].lo, cases[c].hi);
			/* Not decided by it (a V1_ONLY engine is v1 from
			 * the start). */
			CHECK_EQ(version(),
				 cases[c].cfg == RPCRDMA_ENGINE_V1_ONLY ? 1 : 0);
			if (cases[c].ok == RPCRDMA_VERSION_2) {
				/* A v2 opener that is a call: our
				 * RDMA2_CONNPROP goes first, then the call. */
				feed_call(0x200, RPCRDMA_VERSION_2);
				CHECK_EQ(ncalls, 1);
				CHECK_EQ(version(), 2);
				CHECK_EQ(ncloses, 0);
				check_served(0x201, RPCRDMA_VERSION_2);
			} else {
				check_served(0x200, RPCRDMA_VERSION_1);
				CHECK_EQ(version(), 1);
			}
			stop();
		}
}

/* Server, after v1 or v2 traffic fixed the version (draft §7.3): the
 * range is that version alone. */
static void test_server_later(void)
{
	for (uint32_t v = 1; v <= 2; v++)
		for (size_t b = 0; b < NBAD; b++) {
			start(SERVER, RPCRDMA_ENGINE_PREFER_V2);
			check_served(0x300, v);
			CHECK_EQ(version(), v);
			uint32_t xid = 0x310 + (uint32_t)b;
			feed_call(xid, BAD[b]);
			check_err_vers(xid, BAD[b], v, v);
			check_served(0x320, v);
			stop();
		}
}

/* Client: a reverse-direction message (RFC 8167) in a bad version gets
 * the same answer from the Requester's side of the connection: as its
 * first message (V1_ONLY: the version is fixed at once), after the
 * v2 negotiation, and after falling back to v1. */
static void test_client(void)
{
	for (size_t b = 0; b < NBAD; b++) {
		start(CLIENT, RPCRDMA_ENGINE_V1_ONLY);
		CHECK_EQ(nsent, 0);
		uint32_t xid = 0x400 + (uint32_t)b;
		feed_call(xid, BAD[b]);
		check_err_vers(xid, BAD[b], 1, 1);
		check_served(0x410, 1);
		stop();
	}
	for (int fallback = 0; fallback < 2; fallback++)
		for (size_t b = 0; b < NBAD; b++) {
			start(CLIENT, RPCRDMA_ENGINE_PREFER_V2);
			CHECK_EQ(nsent, 1); /* the RDMA2_CONNPROP opener */
			uint32_t nx = sent_word(0, 0);
			if (fallback) {
				/* Linux's answer: v1 layout, rdma_vers 2. */
				uint32_t ev[] = {nx, 2, 16, 4, 1, 1, 1};
				feed_words(ev, 7);
			} else {
				uint32_t ans[] = {nx, 2, 16, 5,
						  RPCRDMA_V2_F_RESPONSE, 0};
				feed_words(ans, 6);
			}
			uint32_t v = fallback ? 1 : 2;
			CHECK_EQ(version(), v);
			uint32_t xid = 0x500 + (uint32_t)b;
			feed_call(xid, BAD[b]);
			check_err_vers(xid, BAD[b], v, v);
			check_served(0x510, v);
			stop();
		}
}

/* The v2 layout's RPCRDMA2_F_RESPONSE bit means nothing in another
 * version: a message of version 3 with that bit set in its fifth word is
 * still answered.  An RDMA_ERROR (rdma_proc 4, the same in every version,
 * RFC 8166 §7) is never answered, whatever its version: two peers must
 * not trade errors forever. */
static void test_flag_and_errors(void)
{
	start(SERVER, RPCRDMA_ENGINE_PREFER_V2);
	uint32_t m[] = {0x600, 3, 8, 0, RPCRDMA_V2_F_RESPONSE, 0, 0,
			0x600, 0, 2, 100003, 3, 1, 0, 0, 0, 0};
	feed_words(m, 17);
	check_err_vers(0x600, 3, 1, 2);
	for (size_t b = 0; b < NBAD; b++) {
		uint32_t e[] = {0x610, BAD[b], 8, 4, 1, 3, 3};
		feed_words(e, 7);
		CHECK_EQ(nsent, 0);
		CHECK_EQ(ncloses, 0);
	}
	check_served(0x620, 1);
	struct rpcrdma_engine_counters c;
	rpcrdma_engine_get_counters(S.e, &c);
	CHECK_EQ(c.err_vers_sent, 1);
	CHECK_EQ(c.v2_err_sent[RPCRDMA_V2_ERR_VERS], 1);
	stop();
}

int main(void)
{
	test_server_first();
	test_server_later();
	test_client();
	test_flag_and_errors();
	free(F);
	TEST_MAIN_END();
}
