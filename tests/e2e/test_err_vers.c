/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ERR_VERS over real iwarp connections (RFC 8166 §4.5.1, §7; draft v2
 * §7.2, §7.3): a hand-made peer (tests/iwpeer.h) sends RPC-over-RDMA
 * messages of versions 0, 3, 7 and 0xFFFFFFFF to our server and to our
 * client, as the connection's first message and after v1 or v2 traffic.
 * Each gets one ERR_VERS in RFC 8166's fixed layout echoing its XID and
 * version with the range the connection accepts; the connection stays up
 * and the next call in a version it speaks is answered.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwpeer.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"
#include "wire/cm_private_data.h"
#include "wire/xdr.h"

#define PROG 0x20000150u
#define CBPROG 0x20000151u
#define TMO 10000
#define F_RESP 1u /* RPCRDMA2_F_RESPONSE */

static const uint32_t BAD[] = {0, 3, 7, 0xFFFFFFFFu};
#define NBAD 4

static struct iwpeer_msg M;

static size_t words(uint8_t *p, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rpcrdma_be32_put(p + 4 * i, w[i]);
	return 4 * n;
}

static uint32_t word(const struct iwpeer_msg *m, size_t i)
{
	return m->len >= 4 * (i + 1) ? rpcrdma_be32_get(m->msg + 4 * i) : 0xdead;
}

/* A NULL call (RFC 5531 §9, AUTH_NONE) of prog in RDMA_MSG, in v1's
 * header layout with rdma_vers = vers (any version but 2), or v2's. */
static int send_call(struct iwpeer *p, uint32_t xid, uint32_t vers,
		     uint32_t prog, bool reply)
{
	uint8_t b[128];
	size_t n;
	if (vers == 2) {
		uint32_t h[] = {xid, 2, 8, 0, reply ? F_RESP : 0, 0, 0, 0, 0};
		n = words(b, h, 9);
	} else {
		uint32_t h[] = {xid, vers, 8, 0, 0, 0, 0};
		n = words(b, h, 7);
	}
	if (reply) {
		uint32_t r[] = {xid, 1, 0, 0, 0, 0};
		n += words(b + n, r, 6);
	} else {
		uint32_t c[] = {xid, 0, 2, prog, 1, 0, 0, 0, 0, 0};
		n += words(b + n, c, 10);
	}
	return iwpeer_send(p, b, n);
}

/* The transport header in front of an RPC message is 7 words in v1 and
 * 9 in v2 (empty chunk lists). */
static size_t hdr_words(uint32_t vers)
{
	return vers == 2 ? 9 : 7;
}

/* An answer to xid carrying an accepted RPC reply, in version vers. */
static bool is_reply(const struct iwpeer_msg *m, uint32_t xid, uint32_t vers)
{
	size_t h = hdr_words(vers);
	return m->kind == IWPEER_SEND && word(m, 0) == xid && word(m, 1) == vers &&
	       word(m, 3) == 0 && word(m, h) == xid && word(m, h + 1) == 1 &&
	       word(m, h + 2) == 0 && word(m, h + 5) == 0 &&
	       (vers != 2 || word(m, 4) == F_RESP);
}

/* Our server's first grant (rpc/xprt.c, RPC_GRANT_START): a peer with
 * one call at a time never makes it grow. */
#define GRANT_START 8

static bool is_err_vers(const struct iwpeer_msg *m, uint32_t xid,
			uint32_t vers, uint32_t grant, uint32_t lo, uint32_t hi)
{
	return m->kind == IWPEER_SEND && m->len == 28 && word(m, 0) == xid &&
	       word(m, 1) == vers && word(m, 2) == grant && word(m, 3) == 4 &&
	       word(m, 4) == 1 && word(m, 5) == lo && word(m, 6) == hi;
}

/* ---------------------------------------------------------------------
 * Server role
 */
static void server_case(const char *addr, unsigned versions, int after,
			uint32_t bad)
{
	struct iwpeer p;
	uint8_t pd[8];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, false);
	CHECK_EQ(iwpeer_connect(&p, addr, pd, sizeof pd, TMO), 0);
	uint32_t v = after ? (uint32_t)after : 1; /* version to go on in */
	if (after == 2) {
		/* draft §7: our opener, their RDMA2_CONNPROP answer. */
		uint8_t b[64];
		uint32_t op[] = {0x70, 2, 8, 5, 0, 0};
		CHECK_EQ(iwpeer_send(&p, b, words(b, op, 6)), 0);
		CHECK_EQ(iwpeer_recv_send(&p, &M, TMO), 0);
		CHECK(word(&M, 0) == 0x70 && word(&M, 3) == 5 &&
		      word(&M, 4) == F_RESP);
	}
	if (after) {
		CHECK_EQ(send_call(&p, 0x71, v, PROG, false), 0);
		CHECK_EQ(iwpeer_recv_send(&p, &M, TMO), 0);
		CHECK(is_reply(&M, 0x71, v));
	}
	uint32_t lo = versions == RPCRDMA_V1_ONLY ? 1 : after ? v : 1;
	uint32_t hi = versions == RPCRDMA_V1_ONLY ? 1 : after ? v : 2;
	CHECK_EQ(send_call(&p, 0x72, bad, PROG, false), 0);
	CHECK_EQ(iwpeer_recv_send(&p, &M, TMO), 0);
	if (!is_err_vers(&M, 0x72, bad, GRANT_START, lo, hi))
		fprintf(stderr, "server versions %u after v%d, vers %u: got kind "
			"%d len %zu words %x %x %x %x %x %x %x\n", versions,
			after, bad, M.kind, M.len, word(&M, 0), word(&M, 1),
			word(&M, 2), word(&M, 3), word(&M, 4), word(&M, 5),
			word(&M, 6));
	CHECK(is_err_vers(&M, 0x72, bad, GRANT_START, lo, hi));
	/* The connection is still there and serves the next call. */
	CHECK_EQ(send_call(&p, 0x73, v, PROG, false), 0);
	CHECK_EQ(iwpeer_recv_send(&p, &M, TMO), 0);
	CHECK(is_reply(&M, 0x73, v));
	iwpeer_close(&p);
}

static enum rpcrdma_svc_stat nothing(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	return RPCRDMA_SVC_OK;
}

static void server_role(void)
{
	for (unsigned vs = RPCRDMA_V1_ONLY; vs <= RPCRDMA_PREFER_V2; vs += 2) {
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = "iwarp";
		o.versions = vs;
		struct rpcrdma_svc *s = NULL;
		CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", &o, &s), 0);
		if (!s)
			return;
		rpcrdma_svc_register(s, PROG, 1, 1, nothing, NULL, 0);
		char addr[64];
		snprintf(addr, sizeof addr, "127.0.0.1:%u", rpcrdma_svc_port(s));
		for (int after = 0; after <= (vs == RPCRDMA_V1_ONLY ? 1 : 2);
		     after++)
			for (int b = 0; b < NBAD; b++)
				server_case(addr, vs, after, BAD[b]);
		struct rpcrdma_stats st;
		rpcrdma_svc_stats(s, &st);
		CHECK_EQ(st.err_vers_sent,
			 NBAD * (vs == RPCRDMA_V1_ONLY ? 2 : 3));
		rpcrdma_svc_destroy(s);
	}
}

/* ---------------------------------------------------------------------
 * Client role: the hand-made peer is the server; our client answers its
 * messages (RFC 8167 reverse direction) from the Requester's connection.
 */
enum cmode { C_V1_ONLY, C_V2, C_FALLBACK };

static int lfds[4 * NBAD];
static unsigned nlfds;

struct script {
	int lfd;
	enum cmode mode;
	bool first;          /* the bad message before any other traffic */
	uint32_t bad;
	sem_t ready, step;
	const char *fail;    /* first failed expectation, or NULL */
};

#define EXPECT(s, c)                                                       \
	do {                                                               \
		if (!(c) && !(s)->fail)                                    \
			(s)->fail = #c;                                    \
	} while (0)

/* The peer's side: answer the opener, answer a call, send a bad message
 * and a reverse call, answer one more call. */
static void *peer_server(void *arg)
{
	struct script *s = arg;
	struct iwpeer p;
	static struct iwpeer_msg m;
	uint8_t pd[8], b[64];
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, false);
	int rc = iwpeer_accept(&p, s->lfd, pd, sizeof pd, TMO);
	EXPECT(s, rc == 0);
	if (rc) {
		sem_post(&s->step);
		return NULL;
	}
	uint32_t v = s->mode == C_V2 ? 2 : 1;
	if (s->mode != C_V1_ONLY) {
		EXPECT(s, iwpeer_recv_send(&p, &m, TMO) == 0);
		uint32_t nx = word(&m, 0);
		EXPECT(s, word(&m, 1) == 2 && word(&m, 3) == 5);
		if (s->mode == C_V2) {
			uint32_t a[] = {nx, 2, 8, 5, F_RESP, 0};
			iwpeer_send(&p, b, words(b, a, 6));
		} else {
			/* Linux svcrdma's answer (docs/v2.md). */
			uint32_t a[] = {nx, 2, 8, 4, 1, 1, 1};
			iwpeer_send(&p, b, words(b, a, 7));
		}
	}
	sem_wait(&s->ready);
	if (!s->first) {
		EXPECT(s, iwpeer_recv_send(&p, &m, TMO) == 0);
		EXPECT(s, word(&m, 1) == v);
		send_call(&p, word(&m, 0), v, 0, true);
	}
	send_call(&p, 0x90, s->bad, CBPROG, false);
	EXPECT(s, iwpeer_recv_send(&p, &m, TMO) == 0);
	EXPECT(s, is_err_vers(&m, 0x90, s->bad, 8, v, v));
	/* A reverse call in the connection's version is served. */
	send_call(&p, 0x91, v, CBPROG, false);
	EXPECT(s, iwpeer_recv_send(&p, &m, TMO) == 0);
	EXPECT(s, is_reply(&m, 0x91, v));
	sem_post(&s->step);
	/* And the client's next call goes through. */
	EXPECT(s, iwpeer_recv_send(&p, &m, TMO) == 0);
	EXPECT(s, word(&m, 1) == v);
	send_call(&p, word(&m, 0), v, 0, true);
	/* Wait for the client to go. */
	iwpeer_recv(&p, &m, TMO);
	iwpeer_close(&p);
	return NULL;
}

static void client_case(enum cmode mode, bool first, uint32_t bad)
{
	struct script s = {.mode = mode, .first = first, .bad = bad};
	uint16_t port;
	/* A fresh port per case, kept until the end: the client remembers
	 * servers that answered its opener with ERR_VERS by address (draft
	 * §7.2), so a port must not come back as another case's server. */
	CHECK_EQ(iwpeer_listen(&s.lfd, &port), 0);
	if (nlfds < sizeof lfds / sizeof lfds[0])
		lfds[nlfds++] = s.lfd;
	sem_init(&s.ready, 0, 0);
	sem_init(&s.step, 0, 0);
	pthread_t t;
	pthread_create(&t, NULL, peer_server, &s);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.versions = mode == C_V1_ONLY ? RPCRDMA_V1_ONLY : RPCRDMA_PREFER_V2;
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	struct rpcrdma_clnt *c = NULL;
	CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, &o, &c), 0);
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	if (c) {
		CHECK_EQ(rpcrdma_clnt_register(c, CBPROG, 1, 1, nothing, NULL, 0),
			 0);
		sem_post(&s.ready);
		if (!first) {
			CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
			rpcrdma_reply_free(&rep);
		}
		sem_wait(&s.step);
		CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
		rpcrdma_reply_free(&rep);
		struct rpcrdma_stats st;
		rpcrdma_clnt_stats(c, &st);
		CHECK_EQ(st.err_vers_sent, 1);
		CHECK_EQ(st.version, mode == C_V2 ? 2 : 1);
		rpcrdma_clnt_destroy(c);
	} else {
		sem_post(&s.ready);
	}
	pthread_join(t, NULL);
	if (s.fail)
		fprintf(stderr, "client mode %d first %d vers %u: %s\n", mode,
			first, bad, s.fail);
	CHECK(s.fail == NULL);
	sem_destroy(&s.ready);
	sem_destroy(&s.step);
}

static void client_role(void)
{
	for (int b = 0; b < NBAD; b++) {
		client_case(C_V1_ONLY, true, BAD[b]);
		client_case(C_V1_ONLY, false, BAD[b]);
		client_case(C_V2, false, BAD[b]);
		client_case(C_FALLBACK, false, BAD[b]);
	}
	for (unsigned i = 0; i < nlfds; i++)
		close(lfds[i]);
}

int main(void)
{
	server_role();
	client_role();
	TEST_MAIN_END();
}
