/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Our server (the Responder) under a hand-made client: the iWARP peer of
 * tests/iwpeer.h connects and sends RPC-over-RDMA messages written word
 * by word (tests/peer_proto.h): calls with Read, Write and Reply chunks
 * it serves and receives itself, and what our client never sends:
 * private data behind other bytes, undecodable headers, RFC 5666
 * RDMA_MSGP and RDMA_DONE, Read chunks past the limits, Write lists no
 * send queue can carry, v2 headers of every kind with errors expected.
 * Each case is named after what it checks and cites the sections.
 *
 *   test_peer_client [CASE...]     every case, or those named
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iwpeer.h"
#include "peer_proto.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"

#define PROG 0x20000280u
#define TMO 10000
#define QUIET_MS 300
/* Our server's first grant (rpc/xprt.c, RPC_GRANT_START) and its
 * credits option at the default: the grant doubles from the one to the
 * other while the peer keeps all of it in use (case_grant_grows), and
 * stays at the first for a peer with one call at a time. */
#define GRANT_START 8
#define GRANT_MAX 32

enum {
	P_ECHO = 1,  /* results = arguments (inline or a Long Reply) */
	P_DDP = 2,   /* u32 n -> u32 n, opaque of n bytes (DDP-eligible) */
	P_BIG = 3,   /* u32 n -> n bytes, no DDP */
	P_DDPN = 4,  /* u32 k, u32 n -> k results of n bytes (DDP-eligible) */
};

static struct iwpeer P;
static struct iwpeer_msg M;
static struct rpcrdma_svc *srv; /* the case's server */
static atomic_int handled;

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
}

/* ---------------------------------------------------------------------
 * Our server
 */
static enum rpcrdma_svc_stat h_echo(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const void *args = rpcrdma_svc_req_args(r, &len);
	atomic_fetch_add(&handled, 1);
	uint8_t *out = rpcrdma_svc_req_alloc(r, len ? len : 1);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	memcpy(out, args, len);
	struct rpcrdma_iov v = {out, len, false};
	return rpcrdma_svc_req_reply(r, &v, 1) ? RPCRDMA_SVC_GARBAGE_ARGS
					       : RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_ddp(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *args = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = pp_get32(args);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4 + n);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	pp_put32(out, n);
	fill(out + 4, n, n);
	struct rpcrdma_iov v[2] = {{out, 4, false}, {out + 4, n, true}};
	atomic_fetch_add(&handled, 1);
	return rpcrdma_svc_req_reply(r, v, 2) ? RPCRDMA_SVC_SYSTEM_ERR
					      : RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_ddpn(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *args = rpcrdma_svc_req_args(r, &len);
	if (len != 8 || pp_get32(args) > 8 || pp_get32(args + 4) > 4096)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t k = pp_get32(args), n = pp_get32(args + 4);
	uint8_t *out = rpcrdma_svc_req_alloc(r, k * (4 + n) + 1);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	struct rpcrdma_iov v[16];
	for (uint32_t i = 0; i < k; i++) {
		uint8_t *p = out + i * (4 + n);
		pp_put32(p, n);
		fill(p + 4, n, i);
		v[2 * i] = (struct rpcrdma_iov){p, 4, false};
		v[2 * i + 1] = (struct rpcrdma_iov){p + 4, n, true};
	}
	atomic_fetch_add(&handled, 1);
	return rpcrdma_svc_req_reply(r, v, 2 * k) ? RPCRDMA_SVC_SYSTEM_ERR
						  : RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_big(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *args = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = pp_get32(args) & ~3u;
	uint8_t *out = rpcrdma_svc_req_alloc(r, n ? n : 1);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	fill(out, n, n);
	struct rpcrdma_iov v = {out, n, false};
	atomic_fetch_add(&handled, 1);
	return rpcrdma_svc_req_reply(r, &v, 1) ? RPCRDMA_SVC_SYSTEM_ERR
					       : RPCRDMA_SVC_OK;
}

static struct rpcrdma_svc *server(unsigned versions, bool msgp,
				   unsigned credit_budget, char *addr)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.versions = versions;
	o.accept_msgp = msgp;
	o.credit_budget = credit_budget;
	struct rpcrdma_svc *s = NULL;
	CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", &o, &s), 0);
	if (!s)
		return NULL;
	rpcrdma_svc_register(s, PROG, 1, P_ECHO, h_echo, NULL, 0);
	rpcrdma_svc_register(s, PROG, 1, P_DDP, h_ddp, NULL,
			     RPCRDMA_ULB_DDP_RESULT);
	rpcrdma_svc_register(s, PROG, 1, P_BIG, h_big, NULL, 0);
	rpcrdma_svc_register(s, PROG, 1, P_DDPN, h_ddpn, NULL,
			     RPCRDMA_ULB_DDP_RESULT);
	snprintf(addr, 64, "127.0.0.1:%u", rpcrdma_svc_port(s));
	return s;
}

/* ---------------------------------------------------------------------
 * The hand-made client
 */
static uint8_t pd_ours[8]; /* RFC 8797 message: v1, R, 4 KiB each way */

static bool connect_peer(const char *addr, const void *pd, size_t len,
			 uint16_t ird)
{
	int rc = iwpeer_connect_ird(&P, addr, pd, len, ird, TMO);
	CHECK_EQ(rc, 0);
	return rc == 0;
}

/* A header h followed by the bytes of msg. */
static void send_msg(const struct pp_hdr *h, const void *msg, size_t len)
{
	static uint8_t b[1 << 16];
	size_t n = pp_build(b, h);
	if (len)
		memcpy(b + n, msg, len);
	CHECK_EQ(iwpeer_send(&P, b, n + len), 0);
}

/* A call: header h (its xid), RPC call header for proc, then args. */
static void send_call(struct pp_hdr *h, uint32_t proc, const void *args,
		      size_t len)
{
	static uint8_t m[1 << 16];
	size_t n = pp_rpc_call(m, h->xid, PROG, 1, proc);
	if (len)
		memcpy(m + n, args, len);
	send_msg(h, m, n + len);
}

/* What our server wrote by RDMA Write, by STag (the peer's made-up
 * handles 0x7000 + k), and whether a Write came after the Send. */
#define NREG 8
static uint8_t regmem[NREG][1 << 17];
static size_t written[NREG];

/* The next Send, collecting RDMA Writes into regmem first. */
static bool next_send(struct pp_hdr *h)
{
	for (;;) {
		int rc = iwpeer_recv(&P, &M, TMO);
		if (rc || M.kind == IWPEER_EOF || M.kind == IWPEER_RESET ||
		    M.kind == IWPEER_TERMINATE) {
			fprintf(stderr, "next_send: rc %d kind %d\n", rc, M.kind);
			return false;
		}
		if (M.kind == IWPEER_WRITE) {
			uint32_t k = M.stag - 0x7000u;
			if (M.len && k < NREG && M.to + M.len <= sizeof regmem[0]) {
				memcpy(regmem[k] + M.to, M.msg, M.len);
				written[k] += M.len;
			}
			continue;
		}
		if (M.kind != IWPEER_SEND)
			continue;
		return pp_parse(M.msg, M.len, h) == 0;
	}
}

static bool quiet(void)
{
	return iwpeer_recv_send(&P, &M, QUIET_MS) == RPCRDMA_ERR_TIMEOUT;
}

/* A reply to xid: accepted, SUCCESS; results after 24 bytes. */
static bool is_success(const struct pp_hdr *h, uint32_t xid)
{
	const uint8_t *r = M.msg + h->hdr_len;
	return h->xid == xid && h->proc == PP_MSG &&
	       M.len >= h->hdr_len + 24 && pp_get32(r) == xid &&
	       pp_get32(r + 4) == 1 && pp_get32(r + 8) == 0 &&
	       pp_get32(r + 20) == 0;
}

static bool is_error(const struct pp_hdr *h, uint32_t xid, uint32_t vers,
		     uint32_t code)
{
	return h->xid == xid && h->vers == vers && h->proc == PP_ERROR &&
	       h->err == code && (vers != 2 || h->flags == PP_F_RESPONSE);
}

static void seg(struct pp_seg *s, uint32_t handle, uint32_t len, uint64_t off)
{
	s->handle = handle;
	s->length = len;
	s->offset = off;
}

static void v1(struct pp_hdr *h, uint32_t xid)
{
	pp_init(h, xid, 1, 32, PP_MSG);
}

/* Six results of 120 bytes into six Write chunks of 30 four-byte
 * segments: a reply of 180 RDMA Writes, more than our send queue (160)
 * holds, in a header that still fits a receive buffer. */
static void call_180_writes(struct pp_hdr *h)
{
	h->nwrites = 6;
	for (uint32_t i = 0; i < 6; i++) {
		h->writes[i].nsegs = 30;
		for (uint32_t j = 0; j < 30; j++)
			seg(&h->writes[i].segs[j], 0x7000, 4, 4 * j);
	}
	uint8_t kn[8];
	pp_put32(kn, 6);
	pp_put32(kn + 4, 120);
	send_call(h, P_DDPN, kn, 8);
}

/* =====================================================================
 * RFC 8797 §4, §4.1, §5.2 in the server role: our MPA Reply carries our
 * message byte for byte (identifier, version 1, R, 4 KiB codes 3); the
 * client's message is found behind 3 bytes of other data (8 KiB, R):
 * a 3000-byte reply then goes inline without a Reply chunk, and a reply
 * with a Write chunk is a Send With Invalidate of that chunk's handle.
 * With no conforming message: 1024-byte thresholds (the same call gets
 * ERR_CHUNK: no Reply chunk to carry its reply, RFC 8166 §4.5.3) and a
 * plain Send.  Octets after the message are ignored (§6).
 */
static void case_pdata(const char *addr, bool found)
{
	uint8_t pd[3 + 8 + 5] = {0xde, 0xad, 0xbe};
	pp_put32(pd + 3, 0xf6ab0e18u);
	pd[7] = found ? 1 : 2; /* version 2: nothing conforms */
	pd[8] = 0xfe | 1;      /* reserved bits set (ignored, §4), R */
	pd[9] = 7;             /* 8 KiB */
	pd[10] = 7;
	memset(pd + 11, 0x55, 5); /* trailing octets (§6) */
	if (!connect_peer(addr, pd, sizeof pd, 0))
		return;
	static const uint8_t want[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3};
	CHECK_EQ(P.peer_pd_len, 8);
	CHECK_MEM(P.peer_pd, want, 8);
	struct pp_hdr h, r;
	v1(&h, 0x101);
	uint8_t n[4];
	pp_put32(n, 3000);
	send_call(&h, P_BIG, n, 4);
	CHECK(next_send(&r));
	if (found) {
		CHECK(is_success(&r, 0x101));
		CHECK_EQ(M.len, r.hdr_len + 24 + 3000);
	} else {
		CHECK(is_error(&r, 0x101, 1, PP_ERR_CHUNK));
		CHECK_EQ(M.len, 20); /* ERR_CHUNK has no body (§4.2.3) */
	}
	/* A Write chunk: the reply invalidates its handle when both R. */
	v1(&h, 0x102);
	h.nwrites = 1;
	h.writes[0].nsegs = 1;
	seg(&h.writes[0].segs[0], 0x7000, 4096, 0);
	pp_put32(n, 100);
	written[0] = 0;
	send_call(&h, P_DDP, n, 4);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x102));
	CHECK_EQ(M.opcode, found ? 4 /* Send With Invalidate */ : 3);
	if (found)
		CHECK_EQ(M.inv_stag, 0x7000);
	CHECK_EQ(written[0], 100);
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 8166 §3.4.6, §3.4.6.2, §4.3.2, §4.3.2.2: a DDP-eligible result is
 * pushed by RDMA Write into the Write chunk before the Send; the reply
 * copies the segment count and every segment, only lengths changed, and
 * the returned length is the bytes written, without XDR padding (a
 * 1001-byte result); a second chunk that no result used comes back
 * unused (same segments, length 0).  §4.3.3: an offered Reply chunk is
 * copied into the reply with length 0 when the reply goes inline.
 * RFC 4506 §4.10: an opaque returned inline is padded with zeros.
 */
static void case_write_chunk(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	v1(&h, 0x201);
	h.nwrites = 2;
	h.writes[0].nsegs = 2;
	seg(&h.writes[0].segs[0], 0x7000, 600, 0x1000);
	seg(&h.writes[0].segs[1], 0x7001, 1000, 0x2000);
	h.writes[1].nsegs = 1;
	seg(&h.writes[1].segs[0], 0x7002, 500, 0x3000);
	h.has_reply = true;
	h.reply.nsegs = 1;
	seg(&h.reply.segs[0], 0x7003, 8192, 0x4000);
	uint8_t n[4];
	pp_put32(n, 1001);
	written[0] = written[1] = written[2] = 0;
	send_call(&h, P_DDP, n, 4);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x201));
	CHECK_EQ(r.nreads, 0); /* §4.3.1 */
	CHECK_EQ(r.nwrites, 2);
	CHECK_EQ(r.writes[0].nsegs, 2);
	CHECK(r.writes[0].segs[0].handle == 0x7000 &&
	      r.writes[0].segs[0].offset == 0x1000 &&
	      r.writes[0].segs[0].length == 600);
	CHECK(r.writes[0].segs[1].handle == 0x7001 &&
	      r.writes[0].segs[1].offset == 0x2000 &&
	      r.writes[0].segs[1].length == 401);
	CHECK(r.writes[1].nsegs == 1 && r.writes[1].segs[0].handle == 0x7002 &&
	      r.writes[1].segs[0].length == 0);
	CHECK(r.has_reply && r.reply.nsegs == 1 &&
	      r.reply.segs[0].handle == 0x7003 && r.reply.segs[0].length == 0);
	CHECK_EQ(written[0] + written[1], 1001);
	CHECK_EQ(written[2], 0);
	uint8_t want[1001];
	fill(want, sizeof want, 1001);
	/* The data landed at each segment's offset, in array order. */
	CHECK_MEM(regmem[0] + 0x1000, want, 600);
	CHECK_MEM(regmem[1] + 0x2000, want + 600, 401);
	/* Inline: the length word, no data (it went by DDP). */
	CHECK_EQ(M.len, r.hdr_len + 24 + 4);
	/* Without a Write chunk the same result comes inline, padded. */
	v1(&h, 0x202);
	pp_put32(n, 5);
	send_call(&h, P_DDP, n, 4);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x202));
	CHECK_EQ(M.len, r.hdr_len + 24 + 4 + 8);
	if (M.len == r.hdr_len + 36) {
		fill(want, 5, 5);
		CHECK_MEM(M.msg + r.hdr_len + 28, want, 5);
		static const uint8_t zeros[3];
		CHECK_MEM(M.msg + r.hdr_len + 33, zeros, 3);
	}
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 8166 §3.5.3, §4.3.3, §4.5.3: a reply larger than the inline
 * threshold goes through the Reply chunk as RDMA_NOMSG (byte-exact, the
 * returned length its size); with a Reply chunk too small, ERR_CHUNK.
 */
static void case_long_reply(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	v1(&h, 0x301);
	h.has_reply = true;
	h.reply.nsegs = 2;
	seg(&h.reply.segs[0], 0x7000, 6000, 0);
	seg(&h.reply.segs[1], 0x7001, 20000, 0x100);
	uint8_t n[4];
	pp_put32(n, 20000);
	written[0] = written[1] = 0;
	send_call(&h, P_BIG, n, 4);
	CHECK(next_send(&r));
	CHECK(r.xid == 0x301 && r.proc == PP_NOMSG && r.has_reply);
	CHECK_EQ(pp_chunk_len(&r.reply), 24 + 20000);
	CHECK(r.reply.nsegs == 2 && r.reply.segs[0].length == 6000 &&
	      r.reply.segs[1].length == 24 + 20000 - 6000);
	CHECK_EQ(written[0] + written[1], 24 + 20000);
	static uint8_t want[20000], got[20024];
	fill(want, sizeof want, 20000);
	memcpy(got, regmem[0], 6000);
	memcpy(got + 6000, regmem[1] + 0x100, 24 + 20000 - 6000);
	CHECK_EQ(pp_get32(got), 0x301);
	CHECK_MEM(got + 24, want, sizeof want);
	/* A Reply chunk of 1000 bytes for the same reply: ERR_CHUNK. */
	v1(&h, 0x302);
	h.has_reply = true;
	h.reply.nsegs = 1;
	seg(&h.reply.segs[0], 0x7000, 1000, 0);
	send_call(&h, P_BIG, n, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x302, 1, PP_ERR_CHUNK));
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 8166 §3.5.2, §3.4.5, §3.4.5.2, §3.5.3: a Chunked call (a Read chunk
 * of 1001 bytes at XDR position 44, no roundup) and a Long Call (the
 * whole message in a Position-Zero Read chunk of six segments): our
 * server pulls them with RDMA Reads of the peer's memory and the handler
 * gets the arguments whole, the chunk's roundup reinserted as zeros.
 * RFC 8166 §3.3.1 with RFC 6581 §7.1: Reads outstanding never exceed the
 * ORD the peer's IRD allowed (2 here).
 */
/* Deferred RDMA Read Requests, answered once nothing more came while
 * they waited. */
static void answer_reads(struct rpcrdma_iwarp_read_req *pend, unsigned *npend,
			 unsigned *served)
{
	for (unsigned i = 0; i < *npend; i++)
		iwpeer_answer_read(&P, &pend[i]);
	*served += *npend;
	*npend = 0;
}

static void case_read_chunks(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 2))
		return;
	static uint8_t data[3000], call[3200];
	fill(data, sizeof data, 9);
	iwpeer_expose(&P, 0x6000, 0x10000, data, sizeof data);
	struct pp_hdr h, r;
	v1(&h, 0x401);
	h.nreads = 1;
	h.reads[0].pos = 40 + 4;
	seg(&h.reads[0].seg, 0x6000, 1001, 0x10000);
	uint8_t lenw[4];
	pp_put32(lenw, 1001);
	/* Reduced: header, the opaque's length; the data and roundup are
	 * in the chunk; nothing after. */
	send_call(&h, P_ECHO, lenw, 4);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x401));
	/* The echo: length word, 1001 bytes, 3 zeros of roundup. */
	size_t res = r.hdr_len + 24;
	CHECK_EQ(M.len, res + 4 + 1004);
	if (M.len == res + 1008) {
		CHECK_EQ(pp_get32(M.msg + res), 1001);
		CHECK_MEM(M.msg + res + 4, data, 1001);
		static const uint8_t zeros[3];
		CHECK_MEM(M.msg + res + 1005, zeros, 3);
	}
	CHECK_EQ(P.reads_served, 1);
	/* Long Call from three segments, Read Requests answered late: at
	 * most 2 outstanding. */
	size_t n = pp_rpc_call(call, 0x402, PROG, 1, P_ECHO);
	memcpy(call + n, data, 2400);
	n += 2400;
	iwpeer_expose(&P, 0x6001, 0, call, n);
	pp_init(&h, 0x402, 1, 32, PP_NOMSG);
	h.nreads = 6;
	for (uint32_t i = 0; i < 6; i++) {
		h.reads[i].pos = 0;
		uint32_t l = (uint32_t)(i < 5 ? n / 6 : n - 5 * (n / 6));
		seg(&h.reads[i].seg, 0x6001, l, i * (n / 6));
	}
	P.defer_reads = true;
	send_msg(&h, NULL, 0);
	struct rpcrdma_iwarp_read_req pend[8];
	unsigned npend = 0, most = 0, served = 0;
	while (served < 6) {
		int rc = iwpeer_recv(&P, &M, npend ? QUIET_MS : TMO);
		if (rc == RPCRDMA_ERR_TIMEOUT && npend) {
			answer_reads(pend, &npend, &served);
			continue;
		}
		if (rc || M.kind != IWPEER_READ_REQ)
			break;
		if (npend < 8)
			pend[npend++] = M.rr;
		if (npend > most)
			most = npend;
	}
	P.defer_reads = false;
	CHECK_EQ(served, 6);
	CHECK(most >= 1 && most <= 2);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x402));
	CHECK_EQ(M.len, r.hdr_len + 24 + 2400);
	if (M.len == r.hdr_len + 2424)
		CHECK_MEM(M.msg + r.hdr_len + 24, data, 2400);
	iwpeer_close(&P);
}

/* An echo call with no arguments; its reply must grant `want`. */
static void echo_grant(uint32_t xid, uint32_t want)
{
	struct pp_hdr h, r;
	v1(&h, xid);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, xid));
	CHECK_EQ(r.credit, want);
}

/* P connected (our private data, IRD 64), 3000 bytes of data exposed at
 * 0x6000 for held calls' Read chunks, and a first echo call answered
 * with the first grant.  False if it could not connect. */
static bool grant_peer(const char *addr, uint32_t seed, uint32_t xid)
{
	static uint8_t data[3000];
	if (!connect_peer(addr, pd_ours, 8, 64))
		return false;
	fill(data, sizeof data, seed);
	iwpeer_expose(&P, 0x6000, 0x10000, data, sizeof data);
	echo_grant(xid, GRANT_START);
	return true;
}

/* n calls at once, each with its argument in a Read chunk whose RDMA
 * Read Request the peer does not answer yet: the server has them all
 * open.  The Read Requests that came until none came for QUIET_MS go
 * to pend (64 at most); how many. */
static unsigned calls_open(uint32_t xid0, unsigned n,
			   struct rpcrdma_iwarp_read_req *pend)
{
	struct pp_hdr h;
	uint8_t lenw[4];
	pp_put32(lenw, 1001);
	P.defer_reads = true;
	for (unsigned i = 0; i < n; i++) {
		v1(&h, xid0 + i);
		h.nreads = 1;
		h.reads[0].pos = 40 + 4;
		seg(&h.reads[0].seg, 0x6000, 1001, 0x10000);
		send_call(&h, P_ECHO, lenw, 4);
	}
	unsigned npend = 0;
	while (npend < 64 && iwpeer_recv(&P, &M, QUIET_MS) == 0 &&
	       M.kind == IWPEER_READ_REQ)
		pend[npend++] = M.rr;
	return npend;
}

/* The calls calls_open(xid0, n) left open (npend of their Read Requests
 * in pend) answered: the Read Requests are answered once no more come,
 * and every reply is collected.  Returns the grant every reply carried,
 * or 0 (said on stderr) when they differ or a call was not answered
 * right. */
static uint32_t calls_finish(uint32_t xid0, unsigned n,
			     struct rpcrdma_iwarp_read_req *pend, unsigned npend)
{
	struct pp_hdr r;
	unsigned served = 0, replies = 0, right = 0;
	uint32_t grant = UINT32_MAX;
	answer_reads(pend, &npend, &served);
	while (replies < n) {
		int rc = iwpeer_recv(&P, &M, npend ? QUIET_MS : TMO);
		if (rc == RPCRDMA_ERR_TIMEOUT && npend) {
			answer_reads(pend, &npend, &served);
			continue;
		}
		if (rc)
			break;
		if (M.kind == IWPEER_READ_REQ && npend < 64) {
			pend[npend++] = M.rr;
		} else if (M.kind == IWPEER_SEND) {
			replies++;
			if (pp_parse(M.msg, M.len, &r) == 0 &&
			    r.xid - xid0 < n && is_success(&r, r.xid) &&
			    (grant == UINT32_MAX || r.credit == grant)) {
				grant = r.credit;
				right++;
			} else {
				fprintf(stderr, "held_calls: xid %#x credit %u, "
					"the others' %u\n", r.xid, r.credit,
					grant);
			}
		} else if (M.kind != IWPEER_WRITE) {
			break;
		}
	}
	P.defer_reads = false;
	CHECK_EQ(served, n);
	CHECK_EQ(replies, n);
	return served == n && replies == n && right == n ? grant : 0;
}

/* n calls open on the server together (calls_open), then answered
 * (calls_finish): the grant every reply carried, or 0. */
static uint32_t held_calls_grant(uint32_t xid0, unsigned n)
{
	static struct rpcrdma_iwarp_read_req pend[64];
	unsigned npend = calls_open(xid0, n, pend);
	return calls_finish(xid0, n, pend, npend);
}

/* The same; every reply must carry grant `want`. */
static void held_calls(uint32_t xid0, unsigned n, uint32_t want)
{
	CHECK_EQ(held_calls_grant(xid0, n), want);
}

/* The peer calls nothing for 1.5 s, then makes one echo call; again, up
 * to 6 times, until that call's reply grants `want` (the grant our
 * server brings down after a second with no call, at a tick of its
 * loop, which a loaded machine may run late).  Returns the last grant
 * seen. */
static uint32_t grant_after_idle(uint32_t xid, uint32_t want)
{
	uint32_t got = 0;
	for (int i = 0; i < 6 && got != want; i++) {
		struct timespec t = {1, 500000000L};
		nanosleep(&t, NULL);
		struct pp_hdr h, r;
		v1(&h, xid + (uint32_t)i);
		send_call(&h, P_ECHO, NULL, 0);
		if (!next_send(&r) || !is_success(&r, xid + (uint32_t)i))
			return 0;
		got = r.credit;
	}
	return got;
}

/* RFC 8166 §3.3.1, §3.3.3; docs/SCALE.md "Shared receives and credits":
 * our server grants GRANT_START at first, and doubles the grant each
 * time a call arrives with all of it in use, up to its credits option.
 * The peer always sends as many calls as it was granted and keeps them
 * open (their Read chunks unanswered): a grant the server's posted
 * receives did not back would make one of them land in no receive,
 * which is fatal to the connection (RFC 5040 §7.2; the peer would see a
 * Terminate and no replies). */
static void case_grant_grows(const char *addr)
{
	if (!grant_peer(addr, 9, 0xb00)) /* one open of 8: no growth */
		return;
	held_calls(0xb10, GRANT_START, 2 * GRANT_START);
	held_calls(0xb40, 2 * GRANT_START, GRANT_MAX);
	held_calls(0xb80, GRANT_MAX, GRANT_MAX); /* never past credits */
	/* One call at a time keeps the grant ... */
	echo_grant(0xbf0, GRANT_MAX);
	/* ... and a second with no call brings it down to the first
	 * (§3.3.1: "a Responder may reduce the granted credit value"); a
	 * peer that keeps it all in use grows it again. */
	CHECK_EQ(grant_after_idle(0xbf1, GRANT_START), GRANT_START);
	held_calls(0xc10, GRANT_START, 2 * GRANT_START);
	iwpeer_close(&P);
}

/* The connection of P set aside in *first (its state kept, nothing
 * pending on it), a second one to addr in P, data exposed to it as to the
 * first, and its first reply granting GRANT_START.  False (and the first
 * closed) if it could not connect. */
static bool second_peer(const char *addr, const uint8_t *data, size_t len,
			struct iwpeer *first)
{
	memset(&P, 0, sizeof P);
	P.fd = -1;
	if (!connect_peer(addr, pd_ours, 8, 64)) {
		iwpeer_close(first);
		return false;
	}
	iwpeer_expose(&P, 0x6000, 0x10000, data, len);
	echo_grant(0xe00, GRANT_START);
	return true;
}

/* Bursts of GRANT_START calls on P (XIDs from xid0, 0x10 apart), up to
 * 6, until one's replies grant `want`; pause_ms before each burst (but
 * the first when pause_first is false), for a tick of the server's other
 * connection to give budget back.  A burst may also find the grant still
 * at GRANT_START (nothing given back yet) or at GRANT_START + 4 (the
 * share of two connections in a budget of 8).  The last grant seen. */
static uint32_t burst_until(uint32_t xid0, uint32_t want, bool pause_first,
			    long pause_ms)
{
	uint32_t g = 0;
	for (int i = 0; i < 6 && g != want; i++) {
		if (i || pause_first) {
			struct timespec t = {pause_ms / 1000,
					     pause_ms % 1000 * 1000000L};
			nanosleep(&t, NULL);
		}
		g = held_calls_grant(xid0 + 0x10 * (uint32_t)i, GRANT_START);
		CHECK(g == GRANT_START || g == GRANT_START + 4 || g == want);
	}
	return g;
}

/* RFC 8166 §3.3.1 with the server's credit_budget (8 here, set by the
 * case table): credits beyond each connection's first 8, all of them
 * together.  The first connection grows to 16 and takes all of it, so
 * its next burst stays at 16 and a second connection's at 8.  When the
 * first has made no call for a second, its grant comes down and the
 * budget is the second's to grow with.  Both connections' calls keep
 * landing in posted receives throughout (a Send into none would end the
 * connection with a Terminate, and the replies would not come). */
static void case_grant_budget(const char *addr)
{
	static uint8_t data[3000];
	fill(data, sizeof data, 11);
	if (!connect_peer(addr, pd_ours, 8, 64))
		return;
	iwpeer_expose(&P, 0x6000, 0x10000, data, sizeof data);
	echo_grant(0xd00, GRANT_START);
	held_calls(0xd10, GRANT_START, 2 * GRANT_START);
	held_calls(0xd20, 2 * GRANT_START, 2 * GRANT_START); /* spent */
	struct iwpeer first = P;
	if (!second_peer(addr, data, sizeof data, &first))
		return;
	held_calls(0xe10, GRANT_START, GRANT_START); /* the first has it */
	/* The first calls nothing now: the second grows once its grant came
	 * down (12 on the way: a tick of the first brought it down to its
	 * share of the two, grant_share, before its idle second was over). */
	CHECK_EQ(burst_until(0xe20, 2 * GRANT_START, true, 1500),
		 2 * GRANT_START);
	struct iwpeer second = P;
	P = first;
	echo_grant(0xd80, GRANT_START); /* it came down */
	held_calls(0xd90, GRANT_START, GRANT_START); /* the second has it */
	/* What the server counted (rpcrdma_stats): each connection's grant
	 * raised once, bursts refused by the spent budget (at least the
	 * first's second one, the second's first one and this one), and
	 * the first's grant lowered. */
	struct rpcrdma_stats st;
	CHECK_EQ(rpcrdma_svc_stats(srv, &st), 0);
	CHECK_EQ(st.grants_raised, 2);
	CHECK(st.grants_refused >= 3);
	CHECK(st.grants_lowered >= 1);
	iwpeer_close(&P);
	P = second;
	iwpeer_close(&P);
}

/* The budget's share (credit_budget 8, as grant_budget): the first
 * connection grows to 16 and takes all of it, then keeps 16 calls open
 * (their Read chunks unanswered).  A second connection's burst is
 * refused, so two connections want the budget and each one's share is
 * 4: the first comes down to 8 + 4 while its calls are still open, and
 * the second grows to 12.  The first's open calls all complete, their
 * replies granting 12.  RFC 8166 §3.3.1: a Responder may reduce its
 * grant; the receives posted for the larger one stay posted. */
static void case_grant_share(const char *addr)
{
	static uint8_t data[3000];
	static struct rpcrdma_iwarp_read_req pend[64];
	fill(data, sizeof data, 13);
	if (!connect_peer(addr, pd_ours, 8, 64))
		return;
	iwpeer_expose(&P, 0x6000, 0x10000, data, sizeof data);
	echo_grant(0xf00, GRANT_START);
	held_calls(0xf10, GRANT_START, 2 * GRANT_START);
	unsigned npend = calls_open(0xf20, 2 * GRANT_START, pend);
	struct iwpeer first = P;
	if (!second_peer(addr, data, sizeof data, &first))
		return;
	/* Refused at first (the first holds it all); it grows once the
	 * first's next tick has brought it down to its share. */
	CHECK_EQ(burst_until(0xe10, GRANT_START + 4, false, 1000),
		 GRANT_START + 4);
	struct iwpeer second = P;
	P = first;
	CHECK_EQ(calls_finish(0xf20, 2 * GRANT_START, pend, npend),
		 GRANT_START + 4);
	struct rpcrdma_stats st;
	CHECK_EQ(rpcrdma_svc_stats(srv, &st), 0);
	CHECK(st.grants_trimmed >= 1);
	CHECK(st.grants_refused >= 2);
	iwpeer_close(&P);
	P = second;
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 8166 §4.5.2, §4.2.4, RFC 4506 §4.19: headers that do not parse are
 * answered ERR_CHUNK (xid and rdma_vers echoed, no body, our grant):
 * an unknown rdma_proc, RDMA_NOMSG with no list, a list discriminator of
 * 2, an RPC XID that is not the transport XID, a segment count near
 * 2^32 (§4.3), 65 Read segments (over what we take), an unaligned Read
 * position (§3.4.5), a truncated header.  §4.6.1, §4.6.2, §4.5: RDMA_MSGP
 * is answered ERR_CHUNK, RDMA_DONE and a 20-byte message are dropped.
 * The connection stays up and the next call is answered.
 */
static void case_err_chunk(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	uint8_t b[2048], rpc[40];
	struct pp_hdr r;
	uint32_t xid = 0x500;
	/* Raw headers: (words, count). */
	const uint32_t bad_proc[] = {0x501, 1, 32, 7, 0, 0, 0};
	const uint32_t nomsg_none[] = {0x502, 1, 32, 1, 0, 0, 0};
	const uint32_t bad_bool[] = {0x503, 1, 32, 0, 2, 0, 0};
	const uint32_t huge_count[] = {0x505, 1, 32, 0, 0, 1, 0xffffffffu, 0};
	const uint32_t unaligned[] = {0x507, 1, 32, 0, 1, 42, 9, 100, 0, 0,
				      0, 0, 0};
	const uint32_t msgp[] = {0x509, 1, 32, 2, 8, 1024, 0, 0, 0};
	const struct {
		const uint32_t *w;
		size_t n;
		bool rpc;
	} cases[] = {
		{bad_proc, 7, true}, {nomsg_none, 7, false}, {bad_bool, 7, true},
		{huge_count, 8, true}, {unaligned, 13, true}, {msgp, 9, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		xid = cases[i].w[0];
		size_t n = 0;
		for (size_t k = 0; k < cases[i].n; k++, n += 4)
			pp_put32(b + n, cases[i].w[k]);
		if (cases[i].rpc) {
			n += pp_rpc_call(b + n, xid, PROG, 1, 0);
		}
		CHECK_EQ(iwpeer_send(&P, b, n), 0);
		CHECK(next_send(&r));
		if (!is_error(&r, xid, 1, PP_ERR_CHUNK) || M.len != 20)
			fprintf(stderr, "err_chunk case %zu: xid %x proc %u err %u "
				"len %zu\n", i, r.xid, r.proc, r.err, M.len);
		CHECK(is_error(&r, xid, 1, PP_ERR_CHUNK) && M.len == 20);
		CHECK_EQ(r.credit, GRANT_START);
	}
	/* RPC XID not the transport XID. */
	struct pp_hdr h;
	v1(&h, 0x504);
	pp_rpc_call(rpc, 0x9999, PROG, 1, 0);
	send_msg(&h, rpc, 40);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x504, 1, PP_ERR_CHUNK));
	/* 65 Read segments. */
	v1(&h, 0x506);
	h.nreads = 64;
	for (uint32_t i = 0; i < 64; i++) {
		h.reads[i].pos = 40;
		seg(&h.reads[i].seg, 0x6000, 4, 4 * i);
	}
	size_t n = pp_build(b, &h);
	/* one more segment spliced before the list's end */
	memmove(b + n - 12 + 24, b + n - 12, 12);
	const uint32_t extra[6] = {1, 40, 0x6000, 4, 0, 256};
	for (int k = 0; k < 6; k++)
		pp_put32(b + n - 12 + 4 * k, extra[k]);
	n += 24;
	n += pp_rpc_call(b + n, 0x506, PROG, 1, 0);
	CHECK_EQ(iwpeer_send(&P, b, n), 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x506, 1, PP_ERR_CHUNK));
	/* Truncated: the Write list cut off. */
	const uint32_t trunc[] = {0x508, 1, 32, 0, 0, 1, 1};
	n = 0;
	for (size_t k = 0; k < 7; k++, n += 4)
		pp_put32(b + n, trunc[k]);
	CHECK_EQ(iwpeer_send(&P, b, n), 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x508, 1, PP_ERR_CHUNK));
	/* RDMA_DONE and 20 bytes: nothing. */
	const uint32_t done[] = {0x50a, 1, 32, 3};
	n = 0;
	for (size_t k = 0; k < 4; k++, n += 4)
		pp_put32(b + n, done[k]);
	CHECK_EQ(iwpeer_send(&P, b, n), 0);
	CHECK_EQ(iwpeer_send(&P, b, 20), 0);
	CHECK(quiet());
	/* Still serving. */
	v1(&h, 0x50b);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x50b));
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 5666 §3.7, §4.3 with accept_msgp: an RDMA_MSGP call (rdma_align
 * 16, rdma_thresh 8) is taken and answered; one whose rdma_align is not
 * a power of two (12) gets ERR_CHUNK.
 */
static void case_msgp_accepted(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	pp_init(&h, 0x601, 1, 32, PP_MSGP);
	h.align = 16;
	h.thresh = 8;
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x601));
	/* §4.3: rdma_align must be a power of two. */
	h.xid = 0x602;
	h.align = 12;
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x602, 1, PP_ERR_CHUNK));
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 6581 §9.2 in the server role: a Request offering peer-to-peer
 * set-up with a zero-length RDMA Write RTR gets a Reply that takes it
 * (P2P and the Write RTR, no other RTR); after the RTR, a call is
 * answered.  Our own clients offer no peer-to-peer set-up
 * (provider/iwarp/iwarp_cm.c says why), so this peer keeps the
 * responder's side of it tested.
 */
static void case_p2p(const char *addr)
{
	int rc = iwpeer_connect_p2p(&P, addr, pd_ours, 8, 16, TMO);
	CHECK_EQ(rc, 0);
	if (rc)
		return;
	CHECK(P.peer.enhanced && P.peer.irdord.p2p);
	CHECK(P.peer.irdord.rtr_write);
	CHECK(!P.peer.irdord.rtr_read && !P.peer.irdord.rtr_send);
	struct pp_hdr h, r;
	v1(&h, 0x701);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x701));
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 8166 §3.4.4, §4.5.3, §3.3.1: limits checked before any RDMA: a Read
 * chunk over the largest call we take and a Write segment whose offset
 * wraps get ERR_CHUNK with no Read Request; a reply that would need more
 * RDMA Writes than the send queue holds (six results in 180 four-byte
 * segments) gets ERR_CHUNK, never waits; the
 * replies grant our credits (32).
 */
static void case_limits(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	v1(&h, 0x701);
	h.nreads = 1;
	h.reads[0].pos = 44;
	seg(&h.reads[0].seg, 0x6000, 0x7fffffffu, 0);
	uint8_t n[4];
	pp_put32(n, 0x7fffffffu);
	send_call(&h, P_ECHO, n, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x701, 1, PP_ERR_CHUNK));
	CHECK_EQ(P.reads_served, 0);
	v1(&h, 0x702);
	h.nwrites = 1;
	h.writes[0].nsegs = 1;
	seg(&h.writes[0].segs[0], 0x7000, 4096, 0xfffffffffffff000ull + 16);
	pp_put32(n, 100);
	send_call(&h, P_DDP, n, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x702, 1, PP_ERR_CHUNK));
	/* Six results of 120 bytes into six chunks of 30 four-byte
	 * segments: 180 Writes, more than the send queue (160) holds; the
	 * header still fits the receive buffer. */
	v1(&h, 0x703);
	call_180_writes(&h);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x703, 1, PP_ERR_CHUNK));
	echo_grant(0x704, GRANT_START);
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 5531 §9, §8.2, App. A: a call with rpcvers 3 is answered
 * RPC_MISMATCH (2..2); a credential body over 400 bytes leaves the header
 * undecodable (GARBAGE_ARGS), and so does a length near 2^32 (it cannot
 * wrap); a malformed AUTH_SYS body AUTH_BADCRED; an AUTH_NONE credential
 * with a body is tolerated (§10.1); an unknown program PROG_UNAVAIL; a
 * message that is not a CALL (msg_type 5) gets ERR_CHUNK.
 */
static void case_rpc(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	uint8_t m[600];
	v1(&h, 0x801);
	size_t n = pp_rpc_call(m, 0x801, PROG, 1, 0);
	pp_put32(m + 8, 3);
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	const uint8_t *p = M.msg + r.hdr_len;
	/* xid, REPLY, MSG_DENIED, RPC_MISMATCH, low 2, high 2 */
	CHECK(r.xid == 0x801 && M.len == r.hdr_len + 24 && pp_get32(p + 4) == 1 &&
	      pp_get32(p + 8) == 1 && pp_get32(p + 12) == 0 &&
	      pp_get32(p + 16) == 2 && pp_get32(p + 20) == 2);
	/* A credential body over 400 bytes: the header does not decode
	 * (GARBAGE_ARGS, dispatch.c). */
	v1(&h, 0x802);
	n = pp_rpc_call(m, 0x802, PROG, 1, 0);
	pp_put32(m + 24, 1);   /* AUTH_SYS */
	pp_put32(m + 28, 401); /* body over 400 */
	memset(m + 32, 0, 404);
	pp_put32(m + 32 + 404, 0);
	pp_put32(m + 36 + 404, 0);
	n = 40 + 404;
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	p = M.msg + r.hdr_len;
	CHECK(r.xid == 0x802 && M.len == r.hdr_len + 24 &&
	      pp_get32(p + 8) == 0 && pp_get32(p + 20) == 4);
	/* An AUTH_SYS body whose machine name claims 300 bytes (App. A:
	 * string machinename<255>): MSG_DENIED, AUTH_ERROR, AUTH_BADCRED. */
	v1(&h, 0x805);
	n = pp_rpc_call(m, 0x805, PROG, 1, 0);
	pp_put32(m + 24, 1);
	pp_put32(m + 28, 20);
	const uint32_t body[5] = {0, 300, 0, 0, 0};
	for (int k = 0; k < 5; k++)
		pp_put32(m + 32 + 4 * k, body[k]);
	pp_put32(m + 52, 0);
	pp_put32(m + 56, 0);
	n = 60;
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	p = M.msg + r.hdr_len;
	CHECK(r.xid == 0x805 && pp_get32(p + 8) == 1 && pp_get32(p + 12) == 1 &&
	      pp_get32(p + 16) == 1);
	v1(&h, 0x803);
	n = pp_rpc_call(m, 0x803, PROG + 7, 1, 0);
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	p = M.msg + r.hdr_len;
	CHECK(r.xid == 0x803 && pp_get32(p + 8) == 0 && pp_get32(p + 20) == 1);
	v1(&h, 0x804);
	n = pp_rpc_call(m, 0x804, PROG, 1, 0);
	pp_put32(m + 4, 5);
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x804, 1, PP_ERR_CHUNK));
	/* A credential length near 2^32 cannot wrap: GARBAGE_ARGS. */
	v1(&h, 0x806);
	n = pp_rpc_call(m, 0x806, PROG, 1, 0);
	pp_put32(m + 28, 0xfffffff0u);
	send_msg(&h, m, n);
	CHECK(next_send(&r));
	p = M.msg + r.hdr_len;
	CHECK(r.xid == 0x806 && pp_get32(p + 8) == 0 && pp_get32(p + 20) == 4);
	/* AUTH_NONE with a body (RFC 5531 §10.1): tolerated, served. */
	v1(&h, 0x807);
	n = pp_rpc_call(m, 0x807, PROG, 1, 0);
	pp_put32(m + 28, 8);
	memmove(m + 40, m + 32, 8);
	memset(m + 32, 0x11, 8);
	send_msg(&h, m, n + 8);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x807));
	iwpeer_close(&P);
}

/* =====================================================================
 * Draft v2 in the server role.  §7, §7.1, §5.3.4: the client's
 * RDMA2_CONNPROP opener (with an unknown property, ignored, §4.1) is
 * answered first, same XID, F_RESPONSE, our grant, our Receive Buffer
 * Size and Reverse Request Support; §3.2: a reply has F_RESPONSE, and a
 * call with reserved flag bits is served; §5.2, §5.3.3: an unknown
 * header type gets RDMA2_ERR_INVAL_HTYPE, RDMA2_MSG without
 * rdma_rpc_first_word RDMA2_ERR_BAD_XDR (§5.3.1), a message with
 * F_RESPONSE or an RDMA2_ERROR nothing; more Read chunks than we take
 * RDMA2_ERR_READ_CHUNKS (max 16), more Write chunks
 * RDMA2_ERR_WRITE_CHUNKS (max 8), more segments RDMA2_ERR_SEGMENTS
 * (max 32); a result larger than its Write chunk
 * RDMA2_ERR_WRITE_RESOURCE (chunk 1, length needed), a reply larger than
 * inline with no Reply chunk RDMA2_ERR_REPLY_RESOURCE (length needed),
 * one needing more Writes than the send queue RDMA2_ERR_SYSTEM; §3.2: a
 * message whose F_RESPONSE is not its RPC msg_type gets BAD_XDR;
 * §3.3, §8.4: the reply is a Send With Invalidate of exactly the handle
 * the call named, and rdma_inv_handle naming no handle of the header is
 * BAD_XDR; §5.3.4: a second RDMA2_CONNPROP changes no property; §7.3: a
 * v1 message on the v2 connection gets ERR_VERS 2..2.
 */
static void v2h(struct pp_hdr *h, uint32_t xid, uint32_t proc)
{
	pp_init(h, xid, 2, 32, proc);
}

static void case_v2_server(const char *addr)
{
	if (!connect_peer(addr, NULL, 0, 0))
		return;
	struct pp_hdr h, r;
	v2h(&h, 0x901, PP_CONNPROP);
	const uint32_t props[] = {2, 99, 4, 0x12345678, PP_PROP_RBSIZ, 4, 8192};
	for (unsigned i = 0; i < 7; i++)
		h.body[h.nbody++] = props[i];
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	CHECK(r.xid == 0x901 && r.vers == 2 && r.proc == PP_CONNPROP &&
	      r.flags == PP_F_RESPONSE && r.credit == GRANT_START);
	/* props: count, then (id, len, value)... */
	bool rbsiz = false, brs = false;
	for (uint32_t i = 1; i + 2 < r.nbody + 0u; i += 3) {
		if (r.body[i] == PP_PROP_RBSIZ && r.body[i + 1] == 4)
			rbsiz = r.body[i + 2] == 4096;
		if (r.body[i] == PP_PROP_BRS && r.body[i + 1] == 4)
			brs = r.body[i + 2] == 2; /* GENL */
	}
	CHECK(rbsiz && brs);
	CHECK(M.len <= 1024);
	/* A call with reserved flag bits: served, F_RESPONSE. */
	v2h(&h, 0x902, PP_MSG);
	h.flags = 0x80000000u;
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x902) && r.flags == PP_F_RESPONSE);
	/* Unknown header type. */
	v2h(&h, 0x903, 6);
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x903, 2, PP_ERR_INVAL_HTYPE));
	/* RDMA2_MSG ending after its lists. */
	v2h(&h, 0x904, PP_MSG);
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x904, 2, PP_ERR_CHUNK));
	/* Responses and errors are never answered. */
	v2h(&h, 0x905, 6);
	h.flags = PP_F_RESPONSE;
	send_msg(&h, NULL, 0);
	v2h(&h, 0x906, PP_ERROR);
	h.flags = PP_F_RESPONSE;
	h.err = PP_ERR_SYSTEM;
	send_msg(&h, NULL, 0);
	CHECK(quiet());
	/* 17 Read chunks. */
	static uint8_t data[4096];
	iwpeer_expose(&P, 0x6000, 0, data, sizeof data);
	v2h(&h, 0x907, PP_MSG);
	h.nreads = 17;
	for (uint32_t i = 0; i < 17; i++) {
		h.reads[i].pos = 44 + 8 * i;
		seg(&h.reads[i].seg, 0x6000, 4, 4 * i);
	}
	static uint8_t args[256];
	send_call(&h, P_ECHO, args, 4 + 8 * 17);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x907, 2, PP_ERR_READ_CHUNKS) && r.nbody >= 1 &&
	      r.body[0] == 16);
	/* 9 Write chunks. */
	v2h(&h, 0x908, PP_MSG);
	h.nwrites = 8;
	for (uint32_t i = 0; i < 8; i++) {
		h.writes[i].nsegs = 1;
		seg(&h.writes[i].segs[0], 0x7000, 64, 0);
	}
	uint8_t b[4096];
	size_t n = pp_build(b, &h);
	/* a ninth before the list's end (two words: end of list, reply) */
	memmove(b + n - 8 + 24, b + n - 8, 8);
	const uint32_t ninth[6] = {1, 1, 0x7000, 64, 0, 0};
	for (int k = 0; k < 6; k++)
		pp_put32(b + n - 8 + 4 * k, ninth[k]);
	n += 24;
	n += pp_rpc_call(b + n, 0x908, PROG, 1, P_ECHO);
	CHECK_EQ(iwpeer_send(&P, b, n), 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x908, 2, PP_ERR_WRITE_CHUNKS) && r.nbody >= 1 &&
	      r.body[0] == 8);
	/* 33 segments in one chunk. */
	v2h(&h, 0x909, PP_MSG);
	h.nwrites = 1;
	h.writes[0].nsegs = 32;
	for (uint32_t j = 0; j < 32; j++)
		seg(&h.writes[0].segs[j], 0x7000, 4, 4 * j);
	n = pp_build(b, &h);
	/* the 33rd segment: count word at offset 24 + 4 (after prefix,
	 * inv_handle, read list end, write list discriminator) */
	size_t at = 20 + 4 + 4 + 4;
	pp_put32(b + at, 33);
	memmove(b + at + 4 + 32 * 16 + 16, b + at + 4 + 32 * 16,
		n - (at + 4 + 32 * 16));
	const uint32_t s33[4] = {0x7000, 4, 0, 128};
	for (int k = 0; k < 4; k++)
		pp_put32(b + at + 4 + 32 * 16 + 4 * k, s33[k]);
	n += 16;
	n += pp_rpc_call(b + n, 0x909, PROG, 1, P_ECHO);
	CHECK_EQ(iwpeer_send(&P, b, n), 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x909, 2, PP_ERR_SEGMENTS) && r.nbody >= 1 &&
	      r.body[0] == 32);
	/* A 300-byte result for a 100-byte Write chunk. */
	v2h(&h, 0x90a, PP_MSG);
	h.nwrites = 1;
	h.writes[0].nsegs = 1;
	seg(&h.writes[0].segs[0], 0x7000, 100, 0);
	uint8_t nw[4];
	pp_put32(nw, 300);
	send_call(&h, P_DDP, nw, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x90a, 2, PP_ERR_WRITE_RESOURCE) && r.nbody >= 2 &&
	      r.body[0] == 1 && r.body[1] == 300);
	/* A 6000-byte reply, no Reply chunk. */
	v2h(&h, 0x90b, PP_MSG);
	pp_put32(nw, 6000);
	send_call(&h, P_BIG, nw, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x90b, 2, PP_ERR_REPLY_RESOURCE) && r.nbody >= 1 &&
	      r.body[0] == 24 + 6000);
	/* rdma_inv_handle: the second chunk's; then one in no segment. */
	v2h(&h, 0x90c, PP_MSG);
	h.nwrites = 2;
	h.writes[0].nsegs = h.writes[1].nsegs = 1;
	seg(&h.writes[0].segs[0], 0x7000, 200, 0);
	seg(&h.writes[1].segs[0], 0x7001, 200, 0);
	h.inv_handle = 0x7001;
	pp_put32(nw, 50);
	send_call(&h, P_DDP, nw, 4);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0x90c));
	CHECK(M.opcode == 4 && M.inv_stag == 0x7001);
	h.xid = 0x90d;
	h.inv_handle = 0x7777;
	send_call(&h, P_DDP, nw, 4);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x90d, 2, PP_ERR_CHUNK));
	/* Six results in 180 Writes: RDMA2_ERR_SYSTEM. */
	v2h(&h, 0x90f, PP_MSG);
	call_180_writes(&h);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x90f, 2, PP_ERR_SYSTEM) && r.nbody == 0);
	/* §3.2: F_RESPONSE clear on a message carrying an RPC reply. */
	v2h(&h, 0x910, PP_MSG);
	uint8_t rep[24];
	pp_rpc_reply(rep, 0x910);
	send_msg(&h, rep, 24);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0x910, 2, PP_ERR_CHUNK));
	/* §5.3.4: the properties are fixed by the first RDMA2_CONNPROP: a
	 * second one saying RBSIZ 1024 changes nothing, a 2000-byte reply
	 * still goes inline. */
	v2h(&h, 0x911, PP_CONNPROP);
	const uint32_t again[] = {1, PP_PROP_RBSIZ, 4, 1024};
	for (unsigned i = 0; i < 4; i++)
		h.body[h.nbody++] = again[i];
	send_msg(&h, NULL, 0);
	v2h(&h, 0x912, PP_MSG);
	pp_put32(nw, 2000);
	send_call(&h, P_BIG, nw, 4);
	do
		CHECK(next_send(&r));
	while (r.proc == PP_CONNPROP && r.xid == 0x911);
	CHECK(is_success(&r, 0x912));
	/* A v1 call on this v2 connection. */
	v1(&h, 0x90e);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(r.xid == 0x90e && r.proc == PP_ERROR && r.err == PP_ERR_VERS &&
	      r.nbody == 2 && r.body[0] == 2 && r.body[1] == 2);
	iwpeer_close(&P);
	/* §4.1: a known property whose data does not fit its type (RBSIZ
	 * of two bytes) in the opener: RDMA2_ERR_BAD_XDR. */
	if (!connect_peer(addr, NULL, 0, 0))
		return;
	v2h(&h, 0x920, PP_CONNPROP);
	const uint32_t bad[] = {1, PP_PROP_RBSIZ, 2, 0x10000000};
	for (unsigned i = 0; i < 4; i++)
		h.body[h.nbody++] = bad[i];
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	/* Our RDMA2_CONNPROP goes first (§5.3.4), then the error. */
	if (r.proc == PP_CONNPROP)
		CHECK(next_send(&r));
	CHECK(is_error(&r, 0x920, 2, PP_ERR_CHUNK));
	iwpeer_close(&P);
}

/* =====================================================================
 * Draft v2 §7.2, RFC 8166 §4.5.1: a server speaking only version 1
 * answers a v2 opener with ERR_VERS in RFC 8166's layout, rdma_vers 2
 * echoed, range 1..1, and keeps the connection: the next v1 call is
 * served.
 */
static void case_v1_only_server(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	v2h(&h, 0xa01, PP_CONNPROP);
	h.body[h.nbody++] = 0;
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	CHECK(r.xid == 0xa01 && r.vers == 2 && M.len == 28 &&
	      pp_get32(M.msg + 12) == PP_ERROR && pp_get32(M.msg + 16) == 1 &&
	      pp_get32(M.msg + 20) == 1 && pp_get32(M.msg + 24) == 1);
	v1(&h, 0xa02);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0xa02));
	iwpeer_close(&P);
}

/* =====================================================================
 * Draft v2 §7.3: a prefer-v2 server follows the client's first message:
 * after a v1 call the connection is v1, and a v2 message gets
 * RDMA2_ERR_VERS 1..1 in the v2 layout.
 */
static void case_server_follows_v1(const char *addr)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct pp_hdr h, r;
	v1(&h, 0xb01);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_success(&r, 0xb01));
	v2h(&h, 0xb02, PP_MSG);
	send_call(&h, P_ECHO, NULL, 0);
	CHECK(next_send(&r));
	CHECK(is_error(&r, 0xb02, 2, PP_ERR_VERS) && r.nbody == 2 &&
	      r.body[0] == 1 && r.body[1] == 1);
	iwpeer_close(&P);
}

/* RFC 8166 §3.3.3 on a connection: our server posts one receive until
 * the client's first message has come, and the rest before the answer
 * that grants them (engine/recv_buffers.c).  The peer sends its first
 * message alone, as the RFC asks, then at once as many calls as the
 * answer granted: each must land in a posted receive (a Send into none
 * is fatal, RFC 5041 §7.2: a Terminate and no replies).  A v1 client,
 * whose calls are held open (their Read chunks unanswered), then a v2
 * client (draft §7: the opener alone, then calls). */
static void case_first_receive(const char *addr)
{
	if (!grant_peer(addr, 11, 0xd00))
		return;
	held_calls(0xd10, GRANT_START, 2 * GRANT_START);
	iwpeer_close(&P);

	if (!connect_peer(addr, NULL, 0, 0))
		return;
	struct pp_hdr h, r;
	v2h(&h, 0xd40, PP_CONNPROP);
	h.body[h.nbody++] = 0; /* no properties */
	send_msg(&h, NULL, 0);
	CHECK(next_send(&r));
	CHECK(r.xid == 0xd40 && r.proc == PP_CONNPROP &&
	      r.flags == PP_F_RESPONSE && r.credit == GRANT_START);
	for (uint32_t i = 0; i < GRANT_START; i++) {
		v2h(&h, 0xd50 + i, PP_MSG);
		send_call(&h, P_ECHO, NULL, 0);
	}
	unsigned answered = 0;
	for (uint32_t i = 0; i < GRANT_START; i++) {
		if (!next_send(&r))
			break;
		if (r.xid >= 0xd50 && r.xid < 0xd50 + GRANT_START &&
		    is_success(&r, r.xid))
			answered++;
	}
	CHECK_EQ(answered, GRANT_START);
	iwpeer_close(&P);
}

/* =====================================================================
 * RFC 5041 §7.2, RFC 5040 §7: a DDP segment of DDP version 2, or on an
 * untagged queue that does not exist (QN 5), gets a Terminate naming the
 * DDP layer, untagged, with the error code (bad version, invalid QN),
 * then the stream ends.
 */
static void ddp_error(const char *addr, uint8_t dv, uint32_t qn, uint8_t code)
{
	if (!connect_peer(addr, pd_ours, 8, 0))
		return;
	struct rpcrdma_iwarp_ddp_hdr d = {
		.last = true, .dv = dv, .rv = RPCRDMA_IWARP_RDMAP_VERSION,
		.opcode = RPCRDMA_IWARP_OP_SEND, .qn = qn, .msn = 1,
	};
	uint8_t u[64];
	int hl = rpcrdma_iwarp_ddp_build(&d, u, sizeof u);
	CHECK(hl > 0);
	memset(u + hl, 0, 28);
	CHECK_EQ(iwpeer_send_fpdu(&P, u, (size_t)hl + 28), 0);
	int rc = iwpeer_recv(&P, &M, TMO);
	CHECK(rc == 0 && M.kind == IWPEER_TERMINATE);
	if (rc == 0 && M.kind == IWPEER_TERMINATE)
		CHECK(M.term.layer == RPCRDMA_IWARP_LAYER_DDP &&
		      M.term.etype == RPCRDMA_IWARP_DDP_ET_UNTAGGED &&
		      M.term.ecode == code);
	iwpeer_close(&P);
}

static void case_ddp_errors(const char *addr)
{
	ddp_error(addr, 2, RPCRDMA_IWARP_QN_SEND, RPCRDMA_IWARP_DDP_EC_U_BAD_VERSION);
	ddp_error(addr, RPCRDMA_IWARP_DDP_VERSION, 5, RPCRDMA_IWARP_DDP_EC_U_INV_QN);
}

/* ---------------------------------------------------------------------
 */
struct named {
	const char *name;
	unsigned versions;
	bool msgp;
	void (*fn)(const char *addr);
	unsigned credit_budget; /* the server's; 0: none */
};

static void case_pdata_search(const char *a)
{
	case_pdata(a, true);
}

static void case_pdata_none(const char *a)
{
	case_pdata(a, false);
}

static const struct named cases[] = {
	{"pdata_search", RPCRDMA_V1_ONLY, false, case_pdata_search, 0},
	{"pdata_none", RPCRDMA_V1_ONLY, false, case_pdata_none, 0},
	{"write_chunk", RPCRDMA_V1_ONLY, false, case_write_chunk, 0},
	{"long_reply", RPCRDMA_V1_ONLY, false, case_long_reply, 0},
	{"read_chunks", RPCRDMA_V1_ONLY, false, case_read_chunks, 0},
	{"grant_grows", RPCRDMA_V1_ONLY, false, case_grant_grows, 0},
	{"grant_budget", RPCRDMA_V1_ONLY, false, case_grant_budget, 8},
	{"grant_share", RPCRDMA_V1_ONLY, false, case_grant_share, 8},
	{"err_chunk", RPCRDMA_V1_ONLY, false, case_err_chunk, 0},
	{"msgp_accepted", RPCRDMA_V1_ONLY, true, case_msgp_accepted, 0},
	{"p2p", RPCRDMA_V1_ONLY, false, case_p2p, 0},
	{"limits", RPCRDMA_V1_ONLY, false, case_limits, 0},
	{"rpc", RPCRDMA_V1_ONLY, false, case_rpc, 0},
	{"v2_server", RPCRDMA_PREFER_V2, false, case_v2_server, 0},
	{"v1_only_server", RPCRDMA_V1_ONLY, false, case_v1_only_server, 0},
	{"ddp_errors", RPCRDMA_V1_ONLY, false, case_ddp_errors, 0},
	{"server_follows_v1", RPCRDMA_PREFER_V2, false, case_server_follows_v1, 0},
	{"first_receive", RPCRDMA_PREFER_V2, false, case_first_receive, 0},
};

int main(int argc, char **argv)
{
	pp_put32(pd_ours, 0xf6ab0e18u);
	pd_ours[4] = 1;
	pd_ours[5] = 1;
	pd_ours[6] = pd_ours[7] = 3;
	P.fd = -1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool run = argc < 2;
		for (int k = 1; k < argc; k++)
			if (!strcmp(argv[k], cases[i].name))
				run = true;
		if (!run)
			continue;
		char addr[64];
		struct rpcrdma_svc *s = server(cases[i].versions, cases[i].msgp,
					       cases[i].credit_budget, addr);
		if (!s)
			continue;
		srv = s;
		int before = test_failed;
		cases[i].fn(addr);
		rpcrdma_svc_destroy(s);
		printf("%-20s %s\n", cases[i].name,
		       test_failed == before ? "ok" : "FAILED");
		fflush(stdout);
	}
	TEST_MAIN_END();
}
