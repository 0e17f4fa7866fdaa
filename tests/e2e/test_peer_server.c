/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Our client (the Requester) under a hand-made server: the iWARP peer of
 * tests/iwpeer.h accepts the connection and plays an RPC-over-RDMA
 * server written word by word (tests/peer_proto.h), so it can answer
 * what our server never would: private data behind another layer's
 * bytes, a Write list that names what the call did not offer, grants of
 * 0, RDMA2_ERRORs of every kind, replies that must be discarded, a
 * connection cut mid-call.  Each case is named after what it checks and
 * cites the sections; the peer checks our bytes on the wire (it reads
 * our Read chunks with RDMA Reads and writes our Write and Reply chunks
 * with RDMA Writes), the client side checks what the application gets.
 *
 *   test_peer_server [CASE...]     every case, or those named
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
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

#define PROG 0x20000260u
#define CBPROG 0x20000261u
#define TMO 10000
#define QUIET_MS 300 /* "nothing else comes": how long the peer listens */

/* RFC 8797 §4 message: identifier, version 1, R, sizes (code = KiB - 1). */
static size_t pdata(uint8_t *b, uint32_t send, uint32_t recv, bool r)
{
	pp_put32(b, 0xf6ab0e18u);
	b[4] = 1;
	b[5] = r ? 1 : 0;
	b[6] = (uint8_t)(send / 1024 - 1);
	b[7] = (uint8_t)(recv / 1024 - 1);
	return 8;
}

/* ---------------------------------------------------------------------
 * A case: the peer's thread and ours, stepping in turn.
 */
struct pcase {
	int lfd;
	char addr[64];
	struct iwpeer p;
	struct iwpeer_msg m;      /* the last message the peer received */
	uint32_t vers;            /* the version the peer answers in */
	uint32_t grant;           /* credits the peer grants */
	sem_t to_peer, to_main;
	void (*script)(struct pcase *);
	int fail_line;
	const char *fail;
	uint8_t call[1 << 20];    /* the last call, rebuilt */
	size_t call_len;
	void *arg;                /* the case's own */
};

#define EXPECT(c, cond)                                                     \
	do {                                                                \
		if (!(cond) && !(c)->fail) {                                \
			(c)->fail = #cond;                                  \
			(c)->fail_line = __LINE__;                          \
		}                                                           \
	} while (0)

static void timed_wait(sem_t *s)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 30;
	while (sem_timedwait(s, &t) != 0 && errno == EINTR)
		;
}

/* Peer side: hand over to the main thread and wait for it. */
static void peer_step(struct pcase *c)
{
	sem_post(&c->to_main);
	timed_wait(&c->to_peer);
}

/* Main side: let the peer run to its next step. */
static void main_step(struct pcase *c)
{
	sem_post(&c->to_peer);
	timed_wait(&c->to_main);
}

static void *peer_main(void *arg)
{
	struct pcase *c = arg;
	timed_wait(&c->to_peer);
	c->script(c);
	iwpeer_close(&c->p);
	sem_post(&c->to_main);
	return NULL;
}

/* arg is the script's, set before its thread starts. */
static struct pcase *case_start_arg(void (*script)(struct pcase *), void *arg,
				    pthread_t *t)
{
	struct pcase *c = calloc(1, sizeof *c);
	uint16_t port;
	if (!c || iwpeer_listen(&c->lfd, &port))
		abort();
	c->p.fd = -1;
	c->vers = 1;
	c->grant = 8;
	snprintf(c->addr, sizeof c->addr, "127.0.0.1:%u", port);
	sem_init(&c->to_peer, 0, 0);
	sem_init(&c->to_main, 0, 0);
	c->script = script;
	c->arg = arg;
	pthread_create(t, NULL, peer_main, c);
	sem_post(&c->to_peer); /* the peer starts accepting */
	return c;
}

static struct pcase *case_start(void (*script)(struct pcase *), pthread_t *t)
{
	return case_start_arg(script, NULL, t);
}

static void case_end(struct pcase *c, pthread_t t, const char *name)
{
	sem_post(&c->to_peer);
	pthread_join(t, NULL);
	if (c->fail)
		fprintf(stderr, "%s: peer: line %d: %s\n", name, c->fail_line,
			c->fail);
	CHECK(c->fail == NULL);
	if (c->lfd >= 0)
		close(c->lfd);
	sem_destroy(&c->to_peer);
	sem_destroy(&c->to_main);
	free(c);
}

static bool want_msgp; /* the next client takes RFC 5666 RDMA_MSGP */

static struct rpcrdma_clnt *client_opts(struct pcase *c, unsigned versions,
					unsigned max_retries, uint32_t credits,
					uint32_t inline_send)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.versions = versions;
	o.max_retries = max_retries;
	o.call_timeout_ms = 20000;
	if (credits)
		o.credits = credits;
	if (inline_send)
		o.inline_send = inline_send;
	o.accept_msgp = want_msgp;
	struct rpcrdma_clnt *cl = NULL;
	CHECK_EQ(rpcrdma_clnt_create(c->addr, PROG, 1, &o, &cl), 0);
	return cl;
}

static struct rpcrdma_clnt *client(struct pcase *c, unsigned versions,
				   unsigned max_retries)
{
	return client_opts(c, versions, max_retries, 0, 0);
}

static struct rpcrdma_stats stats(struct rpcrdma_clnt *cl)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof s);
	rpcrdma_clnt_stats(cl, &s);
	return s;
}

/* ---------------------------------------------------------------------
 * The peer's server side
 */
static void accept_conn(struct pcase *c, const void *pd, size_t pd_len)
{
	int rc = iwpeer_accept(&c->p, c->lfd, pd, pd_len, TMO);
	if (rc)
		fprintf(stderr, "accept: %d\n", rc);
	EXPECT(c, rc == 0);
	/* Our client's Request offers no peer-to-peer set-up, so no RTR
	 * (provider/iwarp/iwarp_cm.c: Linux 6.1's siw BUGs when such a
	 * connection closes before its RTR is read). */
	EXPECT(c, rc || !(c->p.peer.enhanced && c->p.peer.irdord.p2p));
}

/* The next Send (RDMA Write RTRs skipped), parsed. */
static bool next_send(struct pcase *c, struct pp_hdr *h)
{
	int rc = iwpeer_recv_send(&c->p, &c->m, TMO);
	EXPECT(c, rc == 0 && c->m.kind == IWPEER_SEND);
	if (rc || c->m.kind != IWPEER_SEND)
		return false;
	bool ok = pp_parse(c->m.msg, c->m.len, h) == 0;
	EXPECT(c, ok);
	return ok;
}

/* Nothing arrives for QUIET_MS. */
static bool quiet(struct pcase *c)
{
	int rc = iwpeer_recv_send(&c->p, &c->m, QUIET_MS);
	return rc == RPCRDMA_ERR_TIMEOUT;
}

/* The client's v2 opener (draft §7: the first message, one
 * RDMA2_CONNPROP, within 1024 bytes), answered with ours (same XID,
 * F_RESPONSE, our grant) carrying nprops property words. */
static void v2_open(struct pcase *c, const uint32_t *props, uint32_t nprops)
{
	struct pp_hdr h, a;
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.vers == 2 && h.proc == PP_CONNPROP && h.flags == 0);
	EXPECT(c, c->m.len <= 1024);
	pp_init(&a, h.xid, 2, c->grant, PP_CONNPROP);
	a.flags = PP_F_RESPONSE;
	a.body[a.nbody++] = nprops ? props[0] : 0; /* property count */
	for (uint32_t i = 1; i < nprops; i++)
		a.body[a.nbody++] = props[i];
	uint8_t b[4096];
	EXPECT(c, iwpeer_send(&c->p, b, pp_build(b, &a)) == 0);
	c->vers = 2;
}

/* The RPC call of the Send just received, rebuilt from the inline part
 * and the Read chunks (RDMA Reads of the peer's own): a Position-Zero
 * chunk is the whole message (RFC 8166 §3.5.3), another is inserted at
 * its position with its XDR roundup (§3.4.5). */
static bool pull_call(struct pcase *c, const struct pp_hdr *h)
{
	const uint8_t *inl = c->m.msg + h->hdr_len;
	size_t inl_len = c->m.len - h->hdr_len, n = 0, taken = 0;
	uint32_t i = 0;
	if (h->proc == PP_NOMSG) {
		for (; i < h->nreads && h->reads[i].pos == 0; i++) {
			const struct pp_seg *s = &h->reads[i].seg;
			if (n + s->length > sizeof c->call)
				return false;
			EXPECT(c, iwpeer_rdma_read(&c->p, s->handle, s->offset,
						   c->call + n, s->length,
						   TMO) == 0);
			n += s->length;
		}
		EXPECT(c, i > 0 && inl_len == 0);
	}
	while (i < h->nreads) {
		uint32_t pos = h->reads[i].pos;
		EXPECT(c, pos % 4 == 0);           /* §3.4.5 */
		EXPECT(c, pos >= n && pos - n <= inl_len - taken);
		if (pos < n || pos - n > inl_len - taken)
			return false;
		memcpy(c->call + n, inl + taken, pos - n);
		taken += pos - n;
		n = pos;
		size_t chunk = 0;
		for (; i < h->nreads && h->reads[i].pos == pos; i++) {
			const struct pp_seg *s = &h->reads[i].seg;
			if (n + s->length + 3 > sizeof c->call)
				return false;
			EXPECT(c, iwpeer_rdma_read(&c->p, s->handle, s->offset,
						   c->call + n, s->length,
						   TMO) == 0);
			n += s->length;
			chunk += s->length;
		}
		for (; chunk % 4; chunk++) /* §3.4.5.2: no roundup sent */
			c->call[n++] = 0;
	}
	if (n + inl_len - taken > sizeof c->call)
		return false;
	memcpy(c->call + n, inl + taken, inl_len - taken);
	c->call_len = n + inl_len - taken;
	EXPECT(c, c->call_len >= 40 && pp_get32(c->call) == h->xid);
	return c->call_len >= 40;
}

/* A reply to call h: results[i] go into Write chunk i by RDMA Write (as
 * many as the call offered; the rest inline after body), the RPC reply
 * inline when it fits inline_max, else through the Reply chunk
 * (RDMA_NOMSG).  inv: Send With Invalidate of that handle (0: Send). */
struct result {
	const uint8_t *data;
	size_t len;
};

static size_t inline_max = 4096;

static void reply(struct pcase *c, const struct pp_hdr *call,
		  const uint8_t *body, size_t body_len, const struct result *res,
		  unsigned nres, uint32_t inv)
{
	struct pp_hdr h;
	pp_init(&h, call->xid, c->vers, c->grant, PP_MSG);
	if (c->vers == 2)
		h.flags = PP_F_RESPONSE;
	static uint8_t msg[1 << 20];
	size_t n = pp_rpc_reply(msg, call->xid);
	if (body_len)
		memcpy(msg + n, body, body_len);
	n += body_len;
	h.nwrites = call->nwrites;
	for (uint32_t i = 0; i < call->nwrites; i++) {
		const struct pp_chunk *w = &call->writes[i];
		h.writes[i] = *w;
		size_t left = i < nres ? res[i].len : 0, off = 0;
		for (uint32_t j = 0; j < w->nsegs; j++) {
			size_t k = left < w->segs[j].length ? left : w->segs[j].length;
			if (k)
				EXPECT(c, iwpeer_rdma_write(&c->p, w->segs[j].handle,
							    w->segs[j].offset,
							    res[i].data + off, k) == 0);
			h.writes[i].segs[j].length = (uint32_t)k;
			left -= k;
			off += k;
		}
		EXPECT(c, left == 0);
	}
	for (unsigned i = call->nwrites; i < nres; i++) {
		/* not offered a chunk: inline, XDR-padded */
		memcpy(msg + n, res[i].data, res[i].len);
		n += res[i].len;
		while (n % 4)
			msg[n++] = 0;
	}
	h.has_reply = call->has_reply;
	if (h.has_reply) {
		h.reply = call->reply;
		for (uint32_t j = 0; j < h.reply.nsegs; j++)
			h.reply.segs[j].length = 0;
	}
	static uint8_t b[1 << 16];
	size_t hl = pp_build(b, &h);
	if (hl + n > inline_max) {
		EXPECT(c, call->has_reply && pp_chunk_len(&call->reply) >= n);
		if (!call->has_reply)
			return;
		h.proc = PP_NOMSG;
		size_t off = 0;
		for (uint32_t j = 0; j < h.reply.nsegs && off < n; j++) {
			size_t k = n - off < call->reply.segs[j].length
				? n - off : call->reply.segs[j].length;
			EXPECT(c, iwpeer_rdma_write(&c->p, call->reply.segs[j].handle,
						    call->reply.segs[j].offset,
						    msg + off, k) == 0);
			h.reply.segs[j].length = (uint32_t)k;
			off += k;
		}
		hl = pp_build(b, &h);
		n = 0;
	} else {
		memcpy(b + hl, msg, n);
	}
	int rc = inv ? iwpeer_send_inv(&c->p, b, hl + n, inv)
		     : iwpeer_send(&c->p, b, hl + n);
	EXPECT(c, rc == 0);
}

/* An RDMA_ERROR / RDMA2_ERROR for xid. */
static void send_error(struct pcase *c, uint32_t xid, uint32_t vers,
		       uint32_t code, const uint32_t *body, uint32_t nbody)
{
	struct pp_hdr h;
	pp_init(&h, xid, vers, c->grant, PP_ERROR);
	if (vers == 2)
		h.flags = PP_F_RESPONSE;
	h.err = code;
	for (uint32_t i = 0; i < nbody; i++)
		h.body[h.nbody++] = body[i];
	uint8_t b[256];
	EXPECT(c, iwpeer_send(&c->p, b, pp_build(b, &h)) == 0);
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

/* ---------------------------------------------------------------------
 * Calls from our side
 */
struct acall {
	struct rpcrdma_reply rep;
	atomic_int done;
};

static void acall_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct acall *a = arg;
	a->rep = *rep; /* freed by the case */
	atomic_fetch_add(&a->done, 1);
}

static void wait_done(struct acall *a, int n)
{
	for (int i = 0; i < 3000 && atomic_load(&a->done) < n; i++)
		usleep(10000);
}

/* A callback program handler: a DDP-eligible result of 100 bytes. */
static uint8_t cb_result[100];

static enum rpcrdma_svc_stat cb_ddp(struct rpcrdma_svc_req *r, void *arg)
{
	(void)arg;
	fill(cb_result, sizeof cb_result, 77);
	uint8_t len[4];
	pp_put32(len, sizeof cb_result);
	struct rpcrdma_iov res[2] = {{len, 4, false},
				     {cb_result, sizeof cb_result, true}};
	uint8_t *keep = rpcrdma_svc_req_alloc(r, 4);
	if (!keep)
		return RPCRDMA_SVC_SYSTEM_ERR;
	memcpy(keep, len, 4);
	res[0].base = keep;
	rpcrdma_svc_req_reply(r, res, 2);
	return RPCRDMA_SVC_OK;
}

/* The peer calls our client back (RFC 8167) offering one Write chunk of
 * 4 KiB at handle 0x4444 for the DDP result; returns the Send that
 * carried the reply (its opcode and invalidated STag in c->m). */
static bool reverse_call_ddp(struct pcase *c, uint32_t xid)
{
	struct pp_hdr h;
	pp_init(&h, xid, c->vers, 8, PP_MSG);
	h.nwrites = 1;
	h.writes[0].nsegs = 1;
	h.writes[0].segs[0] = (struct pp_seg){0x4444, 4096, 0x10000};
	uint8_t b[512];
	size_t n = pp_build(b, &h);
	n += pp_rpc_call(b + n, xid, CBPROG, 1, 1);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	/* Our client pushes the result by RDMA Write, then Sends. */
	size_t written = 0;
	for (;;) {
		int rc = iwpeer_recv(&c->p, &c->m, TMO);
		EXPECT(c, rc == 0);
		if (rc)
			return false;
		if (c->m.kind == IWPEER_WRITE && c->m.len) {
			EXPECT(c, c->m.stag == 0x4444 && c->m.to >= 0x10000);
			written += c->m.len;
			continue;
		}
		if (c->m.kind == IWPEER_WRITE)
			continue;
		break;
	}
	EXPECT(c, c->m.kind == IWPEER_SEND);
	struct pp_hdr r;
	EXPECT(c, pp_parse(c->m.msg, c->m.len, &r) == 0 && r.xid == xid &&
		   r.proc == PP_MSG && r.nwrites == 1 &&
		   r.writes[0].nsegs == 1 &&
		   r.writes[0].segs[0].handle == 0x4444 &&
		   r.writes[0].segs[0].length == 100);
	EXPECT(c, written == 100);
	return c->m.kind == IWPEER_SEND;
}

/* =====================================================================
 * RFC 8797 §5.2, §5.1: the private data is searched for the Format
 * Identifier at any offset.  A valid message (v1, R set, 8 KiB each way)
 * behind 3 bytes of another layer's data sets the thresholds and remote
 * invalidation; a 2000-byte call with a 1900-byte DDP-eligible argument
 * then goes inline (Short, §3.5.1) with no Reply chunk for a 2000-byte
 * reply (§4.3.3), and our reply to a reverse call with a Write chunk
 * is a Send With Invalidate of that chunk (§4.1).  With no conforming
 * message (identifier with version 2, then none): 1024-byte thresholds,
 * the argument goes as a Read chunk, a Reply chunk is offered, and the
 * reverse reply is a plain Send.
 */
struct pd_case {
	bool found;
};

static void script_pdata(struct pcase *c)
{
	struct pd_case *pc = c->arg;
	uint8_t pd[3 + 8 + 8];
	size_t n = 0;
	pd[n++] = 0xde;
	pd[n++] = 0xad;
	pd[n++] = 0xbe;
	if (pc->found) {
		n += pdata(pd + n, 8192, 8192, true);
	} else {
		n += pdata(pd + n, 8192, 8192, true);
		pd[3 + 4] = 2; /* version 2: not conforming (§5.2) */
	}
	accept_conn(c, pd, n);
	peer_step(c);
	struct pp_hdr h;
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	if (pc->found) {
		EXPECT(c, h.proc == PP_MSG && h.nreads == 0 && !h.has_reply);
		EXPECT(c, c->m.len == h.hdr_len + 40 + 2000);
	} else {
		EXPECT(c, h.proc == PP_MSG && h.nreads == 1 && h.has_reply);
		EXPECT(c, h.nreads == 1 && h.reads[0].seg.length == 1900 &&
			   h.reads[0].pos == 40 + 100);
		EXPECT(c, c->m.len <= 1024);
	}
	/* The argument arrived whole either way. */
	uint8_t want[2000];
	fill(want, sizeof want, 5);
	EXPECT(c, c->call_len == 40 + 2000 &&
		   !memcmp(c->call + 40, want, 2000));
	uint8_t body[4] = {0, 0, 0, 7};
	reply(c, &h, body, 4, NULL, 0, 0);
	peer_step(c);
	/* A reverse call with a Write chunk: with both R bits our client
	 * replies With Invalidate of that chunk's handle (RFC 8797 §4.1). */
	if (!reverse_call_ddp(c, 0x5001))
		return;
	if (pc->found)
		EXPECT(c, c->m.opcode == 4 /* Send With Invalidate */ &&
			   c->m.inv_stag == 0x4444);
	else
		EXPECT(c, c->m.opcode == 3 /* Send */);
	peer_step(c);
}

static void case_pdata(bool found)
{
	const char *name = found ? "pdata_search" : "pdata_none";
	struct pd_case pc = {found};
	pthread_t t;
	struct pcase *c = case_start_arg(script_pdata, &pc, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_V1_ONLY, 0);
	if (!cl) {
		case_end(c, t, name);
		return;
	}
	CHECK_EQ(rpcrdma_clnt_register(cl, CBPROG, 1, 1, cb_ddp, NULL,
				       RPCRDMA_ULB_DDP_RESULT), 0);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.send_threshold, found ? 4096 : 1024);
	CHECK_EQ(s.recv_threshold, found ? 4096 : 1024);
	CHECK_EQ(s.peer_remote_inv, found);
	timed_wait(&c->to_main); /* accepted */
	uint8_t arg[2000];
	fill(arg, sizeof arg, 5);
	struct rpcrdma_iov iov[2] = {{arg, 100, false},
				     {arg + 100, 1900, true}};
	struct rpcrdma_call call = {.proc = 1, .args = iov, .nargs = 2,
				    .reply_max = 2000};
	struct rpcrdma_reply rep;
	sem_post(&c->to_peer);
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	CHECK_EQ(rep.len, 4);
	rpcrdma_reply_free(&rep);
	s = stats(cl);
	CHECK_EQ(s.short_calls, found ? 1 : 0);
	CHECK_EQ(s.chunked_calls, found ? 0 : 1);
	main_step(c); /* the reverse call */
	main_step(c);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, name);
}

static void case_pdata_search(void)
{
	case_pdata(true);
}

static void case_pdata_none(void)
{
	case_pdata(false);
}

/* =====================================================================
 * Draft v2 §5.3.3 with RFC 8166 §3.4.6, §4.5: a call offering two Write
 * chunks is answered RDMA2_ERR_WRITE_CHUNKS (max 1); our client resends
 * it (same XID) with one Write chunk and a Reply chunk.  A reply whose
 * Write list then holds two chunks, the second naming the first
 * attempt's (invalidated) handle with 1200 bytes, is a header error:
 * discarded, the call stays outstanding.  So is one chunk longer than
 * offered, and one naming another handle.  The real reply completes the
 * call: 10 bytes by DDP, the second result inline.  After the call, an
 * RDMA Write to the handle it exposed is refused by our side (a
 * Terminate): no handle stays open once the call completed (RFC 8166
 * §4.4.1).
 */
static void script_write_list(struct pcase *c)
{
	accept_conn(c, NULL, 0);
	uint32_t props[] = {1, PP_PROP_RBSIZ, 4, 4096};
	v2_open(c, props, 4);
	peer_step(c);
	struct pp_hdr h1, h2;
	if (!next_send(c, &h1))
		return;
	EXPECT(c, h1.vers == 2 && h1.nwrites == 2 && h1.writes[0].nsegs == 1 &&
		   h1.writes[1].nsegs == 1);
	EXPECT(c, h1.inv_handle == h1.writes[0].segs[0].handle); /* §3.3 */
	uint32_t max1 = 1;
	send_error(c, h1.xid, 2, PP_ERR_WRITE_CHUNKS, &max1, 1);
	if (!next_send(c, &h2))
		return;
	EXPECT(c, h2.xid == h1.xid && h2.nwrites == 1 && h2.has_reply);
	struct pp_seg cur = h2.writes[0].segs[0], old = h1.writes[1].segs[0];
	EXPECT(c, cur.handle != old.handle);
	uint8_t data[1200];
	fill(data, sizeof data, 9);
	/* Bad 1: two chunks, the second the first attempt's. */
	struct pp_hdr r;
	pp_init(&r, h2.xid, 2, c->grant, PP_MSG);
	r.flags = PP_F_RESPONSE;
	r.nwrites = 2;
	r.writes[0].nsegs = r.writes[1].nsegs = 1;
	r.writes[0].segs[0] = cur;
	r.writes[0].segs[0].length = 10;
	r.writes[1].segs[0] = old;
	r.writes[1].segs[0].length = 1200;
	EXPECT(c, iwpeer_rdma_write(&c->p, cur.handle, cur.offset, data, 10) == 0);
	uint8_t b[1024];
	size_t n = pp_build(b, &r);
	n += pp_rpc_reply(b + n, h2.xid);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	/* Bad 2: one chunk, longer than offered. */
	r.nwrites = 1;
	r.writes[0].segs[0].length = cur.length + 1;
	n = pp_build(b, &r);
	n += pp_rpc_reply(b + n, h2.xid);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	/* Bad 3: one chunk naming the old handle. */
	r.writes[0].segs[0] = old;
	r.writes[0].segs[0].length = 10;
	n = pp_build(b, &r);
	n += pp_rpc_reply(b + n, h2.xid);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	peer_step(c); /* our side: still outstanding */
	/* The real reply: result 1 by DDP (10 bytes), result 2 inline as
	 * opaque<> (length, 8 bytes). */
	uint8_t body[12] = {0, 0, 0, 8};
	memcpy(body + 4, data + 100, 8);
	struct result res[1] = {{data, 10}};
	reply(c, &h2, body, 12, res, 1, 0);
	peer_step(c);
	/* The call is complete: its handle is dead (a Terminate). */
	EXPECT(c, iwpeer_rdma_write(&c->p, cur.handle, cur.offset, data, 4) == 0);
	int rc = iwpeer_recv(&c->p, &c->m, TMO);
	EXPECT(c, rc == 0 && (c->m.kind == IWPEER_TERMINATE ||
			      c->m.kind == IWPEER_EOF ||
			      c->m.kind == IWPEER_RESET));
	peer_step(c);
}

static void case_write_list_recovery(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_write_list, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_PREFER_V2, 0);
	if (!cl) {
		case_end(c, t, "write_list_recovery");
		return;
	}
	timed_wait(&c->to_main); /* opener answered */
	size_t maxes[2] = {1000, 1200};
	struct rpcrdma_call call = {.proc = 2, .reply_max = 512,
				    .ddp_result_max = maxes, .nddp_results = 2};
	struct acall a = {0};
	sem_post(&c->to_peer);
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a), 0);
	timed_wait(&c->to_main); /* three bad replies sent */
	usleep(200000);
	CHECK_EQ(atomic_load(&a.done), 0);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.bad_replies, 3);
	CHECK_EQ(s.recoveries, 1);
	main_step(c); /* the real reply */
	wait_done(&a, 1);
	CHECK_EQ(atomic_load(&a.done), 1);
	CHECK_EQ(a.rep.status, 0);
	CHECK_EQ(a.rep.nddp, 2);
	CHECK_EQ(a.rep.ddp_len[0], 10);
	CHECK_EQ(a.rep.ddp_len[1], 0);
	uint8_t data[1200];
	fill(data, sizeof data, 9);
	if (a.rep.ddp_len[0] == 10)
		CHECK_MEM(a.rep.ddp[0], data, 10);
	CHECK_EQ(a.rep.len, 12);
	if (a.rep.len == 12)
		CHECK_MEM(a.rep.data + 4, data + 100, 8);
	rpcrdma_reply_free(&a.rep);
	main_step(c); /* the dead handle */
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "write_list_recovery");
}

/* Our private data in the MPA Request (RFC 8797 §4): identifier,
 * version 1, R, sizes 4 KiB (code 3) each way, reserved bits zero. */
static void check_our_pdata(struct pcase *c)
{
	static const uint8_t want[8] = {0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3};
	EXPECT(c, c->p.peer_pd_len == 8 && !memcmp(c->p.peer_pd, want, 8));
}

static uint8_t pd4k[8];

/* =====================================================================
 * RFC 8166 §3.5.1, §3.5.3: a call whose Send is exactly the send
 * threshold (4096) goes Short; 4 bytes more, a Long Call (RDMA_NOMSG,
 * the whole message in a Position-Zero Read chunk, read back byte for
 * byte).  §3.5.2, §3.4.5, §3.4.5.2: a DDP-eligible argument of 5001
 * bytes becomes a Read chunk at its XDR position (48), its roundup not
 * sent; a reduced message still too large goes whole in the
 * Position-Zero chunk, the DDP item's padding with it.  §4.3.3: a Reply
 * chunk is offered for an 8000-byte reply and not for a 100-byte one; a
 * Reply chunk returned empty with an inline reply is accepted.  §3.5.3:
 * a Long Reply through it arrives byte for byte.  §3.4.6: a result of
 * 2999 bytes written into the Write chunk is handed over at that length.
 */
static uint8_t big_args[8192];

static void script_shapes(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	check_our_pdata(c);
	peer_step(c);
	struct pp_hdr h;
	uint8_t body[8000];
	/* 1: exactly 4096 bytes. */
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	EXPECT(c, h.proc == PP_MSG && h.nreads == 0 && c->m.len == 4096);
	EXPECT(c, !memcmp(c->call + 40, big_args, 4028));
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* 2: 4100 bytes: Long Call. */
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	EXPECT(c, h.proc == PP_NOMSG && h.nreads >= 1 && h.reads[0].pos == 0 &&
		   c->m.len == h.hdr_len);
	EXPECT(c, c->call_len == 40 + 4032 &&
		   !memcmp(c->call + 40, big_args, 4032));
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* 3: Chunked: 8 bytes, then 5001 DDP-eligible. */
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	EXPECT(c, h.proc == PP_MSG && h.nreads == 1 && h.reads[0].pos == 48 &&
		   h.reads[0].seg.length == 5001);
	EXPECT(c, c->call_len == 48 + 5004 &&
		   !memcmp(c->call + 40, big_args, 8 + 5001) &&
		   c->call[48 + 5001] == 0 && c->call[48 + 5003] == 0);
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* 4: 4040 + 101 DDP: still too large reduced: all in the PZRC. */
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	EXPECT(c, h.proc == PP_NOMSG && h.reads[0].pos == 0);
	EXPECT(c, c->call_len == 40 + 4040 + 104 &&
		   !memcmp(c->call + 40, big_args, 4141) &&
		   c->call[40 + 4141] == 0);
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* 5: a 100-byte reply: no Reply chunk; inline answer. */
	if (!next_send(c, &h))
		return;
	EXPECT(c, !h.has_reply);
	fill(body, 100, 3);
	reply(c, &h, body, 100, NULL, 0, 0);
	/* 6: an 8000-byte reply: a Reply chunk; a Long Reply through it. */
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.has_reply && pp_chunk_len(&h.reply) >= 8024);
	fill(body, 8000, 4);
	reply(c, &h, body, 8000, NULL, 0, 0);
	/* 7: the same, answered inline (Reply chunk returned empty). */
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.has_reply);
	fill(body, 64, 5);
	reply(c, &h, body, 64, NULL, 0, 0);
	/* 8: a 2999-byte result in the Write chunk. */
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.nwrites == 1 && h.writes[0].nsegs == 1 &&
		   h.writes[0].segs[0].length == 3000);
	static uint8_t res[2999];
	fill(res, sizeof res, 6);
	struct result rr = {res, sizeof res};
	uint8_t len4[4];
	pp_put32(len4, 2999);
	reply(c, &h, len4, 4, &rr, 1, 0);
	peer_step(c);
}

static void case_shapes(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_shapes, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_V1_ONLY, 0);
	if (!cl) {
		case_end(c, t, "shapes");
		return;
	}
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	fill(big_args, sizeof big_args, 2);
	struct rpcrdma_reply rep;
	struct rpcrdma_iov one = {big_args, 4028, false};
	struct rpcrdma_call call = {.proc = 1, .args = &one, .nargs = 1};
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	one.len = 4032;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	struct rpcrdma_iov two[2] = {{big_args, 8, false},
				     {big_args + 8, 5001, true}};
	call.args = two;
	call.nargs = 2;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	two[0].len = 4040;
	two[1] = (struct rpcrdma_iov){big_args + 4040, 101, true};
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.short_calls, 1);
	CHECK_EQ(s.long_calls, 2);
	CHECK_EQ(s.chunked_calls, 1);
	uint8_t want[8000];
	struct rpcrdma_call small = {.proc = 2, .reply_max = 100};
	CHECK_EQ(rpcrdma_clnt_call(cl, &small, &rep), 0);
	fill(want, 100, 3);
	CHECK(rep.len == 100 && !memcmp(rep.data, want, 100));
	rpcrdma_reply_free(&rep);
	small.reply_max = 8000;
	CHECK_EQ(rpcrdma_clnt_call(cl, &small, &rep), 0);
	fill(want, 8000, 4);
	CHECK(rep.len == 8000 && !memcmp(rep.data, want, 8000));
	rpcrdma_reply_free(&rep);
	CHECK_EQ(rpcrdma_clnt_call(cl, &small, &rep), 0);
	fill(want, 64, 5);
	CHECK(rep.len == 64 && !memcmp(rep.data, want, 64));
	rpcrdma_reply_free(&rep);
	size_t dmax = 3000;
	struct rpcrdma_call ddp = {.proc = 3, .reply_max = 16,
				   .ddp_result_max = &dmax, .nddp_results = 1};
	CHECK_EQ(rpcrdma_clnt_call(cl, &ddp, &rep), 0);
	CHECK_EQ(rep.nddp, 1);
	CHECK_EQ(rep.ddp_len[0], 2999);
	static uint8_t res[2999];
	fill(res, sizeof res, 6);
	if (rep.ddp_len[0] == 2999)
		CHECK_MEM(rep.ddp[0], res, 2999);
	rpcrdma_reply_free(&rep);
	s = stats(cl);
	CHECK_EQ(s.replies_long, 1);
	CHECK_EQ(s.bad_replies, 0);
	main_step(c);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "shapes");
}

/* =====================================================================
 * RFC 8166 §3.3.1, §3.3.3: one call outstanding until the first grant,
 * never more than granted: a grant of 2 lets two out, 0 counts as 1,
 * 1000 is clamped to our credits (4).  Six calls in all, each answered
 * once.
 */
static void script_credits(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	peer_step(c);
	struct pp_hdr h[6];
	static const uint32_t grants[4] = {2, 0, 1000, 8};
	static const unsigned expect[4] = {1, 2, 1, 2};
	for (int round = 0; round < 4; round++) {
		unsigned got = 0;
		while (got < expect[round] && next_send(c, &h[got]))
			got++;
		EXPECT(c, got == expect[round]);
		EXPECT(c, quiet(c)); /* and no more than granted */
		c->grant = grants[round];
		for (unsigned i = 0; i < got; i++)
			reply(c, &h[i], NULL, 0, NULL, 0, 0);
	}
	peer_step(c);
}

static void case_credits(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_credits, &t);
	struct rpcrdma_clnt *cl = client_opts(c, RPCRDMA_V1_ONLY, 0, 4, 0);
	if (!cl) {
		case_end(c, t, "credits");
		return;
	}
	timed_wait(&c->to_main);
	struct acall a[6];
	memset(a, 0, sizeof a);
	struct rpcrdma_call call = {.proc = 1};
	for (int i = 0; i < 6; i++)
		CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a[i]), 0);
	main_step(c);
	for (int i = 0; i < 6; i++) {
		wait_done(&a[i], 1);
		CHECK_EQ(atomic_load(&a[i].done), 1);
		CHECK_EQ(a[i].rep.status, 0);
		rpcrdma_reply_free(&a[i].rep);
	}
	CHECK(stats(cl).credit_stalls >= 1);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "credits");
}

/* =====================================================================
 * RFC 8166 §4.5, §4.5.1, §4.6: RDMA_ERROR ends the call with that XID
 * (ERR_CHUNK: PEER_ERR_CHUNK; ERR_VERS: PEER_ERR_VERS); an RDMA_ERROR
 * with an unknown code, a reply to an XID we never sent, a reply with a
 * list discriminator of 2, an RDMA_DONE and a message under 28 bytes are
 * discarded and the call completes with its real reply.  With remote
 * invalidation (RFC 8797 §4.1) the reply's Send With Invalidate of the
 * Write chunk's handle is counted and the rest invalidated locally; after
 * the call an RDMA Write to that handle is refused (RFC 8166 §4.4.1).
 */
static void script_peer_errors(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	peer_step(c);
	struct pp_hdr h;
	if (!next_send(c, &h))
		return;
	send_error(c, h.xid, 1, PP_ERR_CHUNK, NULL, 0);
	if (!next_send(c, &h))
		return;
	uint32_t range[2] = {1, 1};
	send_error(c, h.xid, 1, PP_ERR_VERS, range, 2);
	if (!next_send(c, &h))
		return;
	send_error(c, h.xid, 1, 7, NULL, 0);
	uint8_t b[256];
	struct pp_hdr r;
	pp_init(&r, h.xid ^ 0x5555u, 1, c->grant, PP_MSG);
	size_t n = pp_build(b, &r);
	n += pp_rpc_reply(b + n, r.xid);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	pp_init(&r, h.xid, 1, c->grant, PP_MSG);
	n = pp_build(b, &r);
	pp_put32(b + 20, 2); /* the Write list's discriminator */
	n += pp_rpc_reply(b + n, r.xid);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	pp_init(&r, h.xid, 1, c->grant, PP_DONE);
	EXPECT(c, iwpeer_send(&c->p, b, pp_build(b, &r)) == 0);
	EXPECT(c, iwpeer_send(&c->p, b, 20) == 0);
	peer_step(c);
	/* The real reply, With Invalidate of the Write chunk's handle. */
	static uint8_t res[100];
	fill(res, sizeof res, 8);
	struct result rr = {res, sizeof res};
	uint8_t len4[4];
	pp_put32(len4, 100);
	struct pp_seg w = h.writes[0].segs[0];
	reply(c, &h, len4, 4, &rr, 1, w.handle);
	peer_step(c);
	EXPECT(c, iwpeer_rdma_write(&c->p, w.handle, w.offset, res, 4) == 0);
	int rc = iwpeer_recv(&c->p, &c->m, TMO);
	EXPECT(c, rc == 0 && c->m.kind != IWPEER_SEND);
	peer_step(c);
}

static void case_peer_errors(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_peer_errors, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_V1_ONLY, 0);
	if (!cl) {
		case_end(c, t, "peer_errors");
		return;
	}
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	struct rpcrdma_call call = {.proc = 1};
	struct rpcrdma_reply rep;
	/* ERR_CHUNK to a Short call with no Reply chunk: the reply did not
	 * fit the room the call offered (rpc/call.c, size_status). */
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), RPCRDMA_ERR_REPLY_TOO_BIG);
	rpcrdma_reply_free(&rep);
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), RPCRDMA_ERR_PEER_ERR_VERS);
	rpcrdma_reply_free(&rep);
	size_t dmax = 100;
	struct rpcrdma_call ddp = {.proc = 3, .reply_max = 16,
				   .ddp_result_max = &dmax, .nddp_results = 1};
	struct acall a = {0};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &ddp, acall_cb, &a), 0);
	timed_wait(&c->to_main); /* the discarded ones went */
	usleep(200000);
	CHECK_EQ(atomic_load(&a.done), 0);
	main_step(c);
	wait_done(&a, 1);
	CHECK_EQ(a.rep.status, 0);
	CHECK_EQ(a.rep.ddp_len[0], 100);
	rpcrdma_reply_free(&a.rep);
	struct rpcrdma_stats s = stats(cl);
	CHECK(s.bad_replies >= 3);
	CHECK_EQ(s.remote_invs, 1);
	CHECK_EQ(s.err_chunk_recv, 1);
	CHECK_EQ(s.err_vers_recv, 1);
	main_step(c);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "peer_errors");
}

/* =====================================================================
 * RFC 8167 §4.1, §4.3: while our call waits for its reply, the server
 * makes 8 reverse calls (our backchannel credits) on the same connection
 * and gets 8 replies; then our call's reply comes.  RFC 8166 §4.5.5: the
 * connection is lost with a call outstanding: the client reconnects
 * (max_retries) and sends it again with the same XID; answered there, it
 * completes once, and the new connection's private data (2 KiB, no R)
 * sets its thresholds (RFC 8797 §4).  A call whose server never comes back fails once with
 * DISCONNECTED.
 */
static enum rpcrdma_svc_stat cb_null(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	return RPCRDMA_SVC_OK;
}

static void script_reverse_loss(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	peer_step(c);
	struct pp_hdr h, r;
	if (!next_send(c, &h))
		return;
	uint8_t b[256];
	for (uint32_t i = 0; i < 8; i++) {
		pp_init(&r, 0x6000 + i, 1, 8, PP_MSG);
		size_t n = pp_build(b, &r);
		n += pp_rpc_call(b + n, 0x6000 + i, CBPROG, 1, 1);
		EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	}
	unsigned answered = 0;
	for (uint32_t i = 0; i < 8; i++) {
		struct pp_hdr a;
		if (next_send(c, &a) && a.xid >= 0x6000 && a.xid < 0x6008 &&
		    a.proc == PP_MSG && pp_get32(c->m.msg + a.hdr_len + 4) == 1)
			answered++;
	}
	EXPECT(c, answered == 8);
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* The next call: the connection goes away under it. */
	if (!next_send(c, &h))
		return;
	uint32_t xid = h.xid;
	iwpeer_close(&c->p);
	/* The next connection's private data differs (RFC 8797 §4: the
	 * settings may change on reconnection): 2 KiB, no R. */
	uint8_t pd2k[8];
	pdata(pd2k, 2048, 2048, false);
	accept_conn(c, pd2k, 8);
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.xid == xid);
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* And once more, for good. */
	if (!next_send(c, &h))
		return;
	close(c->lfd);
	c->lfd = -1;
	iwpeer_close(&c->p);
	peer_step(c);
}

static void case_reverse_loss(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_reverse_loss, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_V1_ONLY, 2);
	if (!cl) {
		case_end(c, t, "reverse_loss");
		return;
	}
	CHECK_EQ(rpcrdma_clnt_register(cl, CBPROG, 1, 1, cb_null, NULL, 0), 0);
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	struct rpcrdma_call call = {.proc = 1};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	CHECK_EQ(stats(cl).calls_received, 8);
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s = stats(cl);
	CHECK(s.retransmissions >= 1 && s.reconnects >= 1);
	CHECK_EQ(s.send_threshold, 2048);
	CHECK_EQ(s.peer_remote_inv, false);
	struct acall a = {0};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a), 0);
	timed_wait(&c->to_main);
	wait_done(&a, 1);
	CHECK_EQ(atomic_load(&a.done), 1);
	CHECK_EQ(a.rep.status, RPCRDMA_ERR_DISCONNECTED);
	rpcrdma_reply_free(&a.rep);
	usleep(100000);
	CHECK_EQ(atomic_load(&a.done), 1);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "reverse_loss");
}

/* =====================================================================
 * Draft v2 §7, §5.3.4, §4.2.1, §4.2.2: the client's first message is one
 * RDMA2_CONNPROP of at most 1024 bytes with its Receive Buffer Size and
 * Reverse Request Support (GENL); nothing follows while it is not
 * answered, though a call waits.  The answer's RBSIZ of 8192 (and an
 * unknown property, ignored, §4.1) make a 6000-byte call Short; RBSIZ
 * with empty data means the default, 4096 (§4.1, §4.2.1), and the same
 * call goes Long.  §3.2: calls carry no F_RESPONSE, our reply to the server's
 * reverse call does.
 */
struct v2open {
	bool rbsiz;
};

static void script_v2_opener(struct pcase *c)
{
	struct v2open *o = c->arg;
	accept_conn(c, NULL, 0);
	struct pp_hdr h;
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.vers == 2 && h.proc == PP_CONNPROP && h.flags == 0 &&
		   c->m.len <= 1024);
	bool rb = false, brs = false;
	for (uint32_t i = 1; i + 2 < h.nbody; i += 3) {
		if (h.body[i] == PP_PROP_RBSIZ && h.body[i + 1] == 4)
			rb = h.body[i + 2] == 4096;
		if (h.body[i] == PP_PROP_BRS && h.body[i + 1] == 4)
			brs = h.body[i + 2] == 2;
	}
	EXPECT(c, rb && brs);
	peer_step(c); /* a call is waiting on our side */
	EXPECT(c, quiet(c));
	/* An unknown property, then RBSIZ 8192 (or RBSIZ with empty data:
	 * the default, §4.1). */
	uint32_t props[7] = {2, 77, 4, 0xabcdef01, PP_PROP_RBSIZ, 4, 8192};
	struct pp_hdr a;
	pp_init(&a, h.xid, 2, c->grant, PP_CONNPROP);
	a.flags = PP_F_RESPONSE;
	for (int i = 0; i < (o->rbsiz ? 7 : 6); i++)
		a.body[a.nbody++] = props[i];
	if (!o->rbsiz)
		a.body[5] = 0;
	uint8_t b[256];
	EXPECT(c, iwpeer_send(&c->p, b, pp_build(b, &a)) == 0);
	c->vers = 2;
	if (!next_send(c, &h) || !pull_call(c, &h))
		return;
	EXPECT(c, h.vers == 2 && h.flags == 0);
	if (o->rbsiz)
		EXPECT(c, h.proc == PP_MSG && h.nreads == 0 && c->m.len > 6000 &&
			   c->m.len <= 8192);
	else
		EXPECT(c, h.proc == PP_NOMSG && c->m.len <= 4096);
	EXPECT(c, c->call_len == 40 + 6000);
	reply(c, &h, NULL, 0, NULL, 0, 0);
	/* A reverse call: our reply has F_RESPONSE. */
	pp_init(&a, 0x7100, 2, 8, PP_MSG);
	size_t n = pp_build(b, &a);
	n += pp_rpc_call(b + n, 0x7100, CBPROG, 1, 1);
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	if (next_send(c, &h))
		EXPECT(c, h.xid == 0x7100 && h.vers == 2 &&
			   h.flags == PP_F_RESPONSE && h.proc == PP_MSG);
	peer_step(c);
}

static void case_v2_opener_with(bool rbsiz)
{
	const char *name = rbsiz ? "v2_opener_rbsiz" : "v2_opener_default";
	struct v2open o = {rbsiz};
	pthread_t t;
	struct pcase *c = case_start_arg(script_v2_opener, &o, &t);
	struct rpcrdma_clnt *cl = client_opts(c, RPCRDMA_PREFER_V2, 0, 0, 8192);
	if (!cl) {
		case_end(c, t, name);
		return;
	}
	CHECK_EQ(rpcrdma_clnt_register(cl, CBPROG, 1, 1, cb_null, NULL, 0), 0);
	timed_wait(&c->to_main); /* the opener came */
	static uint8_t args[6000];
	fill(args, sizeof args, 11);
	struct rpcrdma_iov v = {args, sizeof args, false};
	struct rpcrdma_call call = {.proc = 1, .args = &v, .nargs = 1};
	struct acall a = {0};
	CHECK_EQ(rpcrdma_clnt_call_async(cl, &call, acall_cb, &a), 0);
	main_step(c);
	wait_done(&a, 1);
	CHECK_EQ(a.rep.status, 0);
	rpcrdma_reply_free(&a.rep);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.version, 2);
	CHECK_EQ(s.send_threshold, rbsiz ? 8192 : 4096);
	CHECK_EQ(s.short_calls, rbsiz ? 1 : 0);
	main_step(c);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, name);
}

static void case_v2_opener_rbsiz(void)
{
	case_v2_opener_with(true);
}

static void case_v2_opener_default(void)
{
	case_v2_opener_with(false);
}

/* =====================================================================
 * Draft v2 §7.2: the opener answered RDMA2_ERR_VERS (v2 layout), or
 * RDMA_ERROR ERR_VERS with rdma_vers 1: the waiting call goes in version
 * 1 on the same connection, none lost.  Not answered at all (2 s): the
 * client closes that connection (a server only slow would follow the
 * opener it got late, §7.1) and the call goes in version 1 on a new one.
 * Either way the next client to the same server starts in version 1 at
 * once (remembered).
 * §7: a V2_ONLY client refused so fails its call once with
 * PEER_ERR_VERS and closes the connection.
 */
enum fallback { FB_V2_LAYOUT, FB_VERS1, FB_LOST, FB_V2_ONLY };

static void script_fallback(struct pcase *c)
{
	enum fallback *how = c->arg;
	accept_conn(c, pd4k, 8);
	struct pp_hdr h;
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.vers == 2 && h.proc == PP_CONNPROP);
	uint32_t range[2] = {1, 1};
	if (*how == FB_V2_LAYOUT || *how == FB_V2_ONLY)
		send_error(c, h.xid, 2, PP_ERR_VERS, range, 2);
	else if (*how == FB_VERS1)
		send_error(c, h.xid, 1, PP_ERR_VERS, range, 2);
	peer_step(c);
	if (*how == FB_V2_ONLY) {
		int rc = iwpeer_recv(&c->p, &c->m, TMO);
		EXPECT(c, rc == 0 && (c->m.kind == IWPEER_EOF ||
				      c->m.kind == IWPEER_RESET ||
				      c->m.kind == IWPEER_TERMINATE));
		peer_step(c);
		return;
	}
	if (*how == FB_LOST) {
		/* Nothing more on this connection: the client closes it at
		 * the opener's time-out and comes back in v1. */
		int rc = iwpeer_recv(&c->p, &c->m, TMO);
		EXPECT(c, rc == 0 && (c->m.kind == IWPEER_EOF ||
				      c->m.kind == IWPEER_RESET ||
				      c->m.kind == IWPEER_TERMINATE));
		iwpeer_close(&c->p);
		accept_conn(c, pd4k, 8);
	}
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.vers == 1 && h.proc == PP_MSG);
	c->vers = 1;
	reply(c, &h, NULL, 0, NULL, 0, 0);
	peer_step(c);
	/* The next client: version 1 from its first message. */
	iwpeer_close(&c->p);
	accept_conn(c, pd4k, 8);
	if (next_send(c, &h)) {
		EXPECT(c, h.vers == 1 && h.proc == PP_MSG);
		reply(c, &h, NULL, 0, NULL, 0, 0);
	}
	peer_step(c);
}

static void case_fallback_with(enum fallback how, const char *name)
{
	pthread_t t;
	struct pcase *c = case_start_arg(script_fallback, &how, &t);
	struct rpcrdma_clnt *cl = client(c, how == FB_V2_ONLY ? RPCRDMA_V2_ONLY
							     : RPCRDMA_PREFER_V2, 0);
	if (!cl) {
		case_end(c, t, name);
		return;
	}
	struct rpcrdma_call call = {.proc = 1};
	struct rpcrdma_reply rep;
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	int rc = rpcrdma_clnt_call(cl, &call, &rep);
	rpcrdma_reply_free(&rep);
	if (how == FB_V2_ONLY) {
		CHECK_EQ(rc, RPCRDMA_ERR_PEER_ERR_VERS);
		main_step(c);
		rpcrdma_clnt_destroy(cl);
		case_end(c, t, name);
		return;
	}
	CHECK_EQ(rc, 0);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.version, 1);
	CHECK_EQ(s.vers_fallbacks, 1);
	timed_wait(&c->to_main);
	rpcrdma_clnt_destroy(cl);
	sem_post(&c->to_peer); /* the peer accepts the next connection */
	cl = client(c, RPCRDMA_PREFER_V2, 0);
	if (cl) {
		CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
		rpcrdma_reply_free(&rep);
		CHECK_EQ(stats(cl).version, 1);
		timed_wait(&c->to_main);
		rpcrdma_clnt_destroy(cl);
	}
	case_end(c, t, name);
}

static void case_v2_fallback(void)
{
	case_fallback_with(FB_V2_LAYOUT, "v2_fallback");
}

static void case_v2_fallback_vers1(void)
{
	case_fallback_with(FB_VERS1, "v2_fallback_vers1");
}

static void case_v2_lost_opener(void)
{
	case_fallback_with(FB_LOST, "v2_lost_opener");
}

static void case_v2_only_refused(void)
{
	case_fallback_with(FB_V2_ONLY, "v2_only_refused");
}

/* =====================================================================
 * Draft v2 §5.3.3, the Requester's recoveries, same XID each time:
 * READ_CHUNKS resends a Chunked call as a Long Call (read back whole),
 * and the same error for that Long Call ends it (PEER_ERR_RESOURCE);
 * SEGMENTS resends a Long Call of several pieces from one contiguous
 * segment (read back whole, padding zero); WRITE_RESOURCE and
 * REPLY_RESOURCE come after the server ran the call, so the library does
 * not send it again: PEER_ERR_RESOURCE, nothing resent.  SYSTEM,
 * BAD_XDR, INVAL_HTYPE and an unknown code end a call with distinct
 * statuses; an RDMA2_ERROR's credit field (0 here) is not a grant.
 */
static void script_recoveries(struct pcase *c)
{
	accept_conn(c, NULL, 0);
	uint32_t props[] = {1, PP_PROP_RBSIZ, 4, 4096};
	v2_open(c, props, 4);
	peer_step(c);
	struct pp_hdr h, h2;
	uint32_t zero = 0, one = 1;
	/* READ_CHUNKS */
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.proc == PP_MSG && h.nreads == 1 && h.reads[0].pos != 0);
	send_error(c, h.xid, 2, PP_ERR_READ_CHUNKS, &zero, 1);
	if (!next_send(c, &h2) || !pull_call(c, &h2))
		return;
	EXPECT(c, h2.xid == h.xid && h2.proc == PP_NOMSG &&
		   h2.reads[0].pos == 0 && c->call_len == 40 + 8 + 5000);
	send_error(c, h2.xid, 2, PP_ERR_READ_CHUNKS, &zero, 1);
	/* SEGMENTS */
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.proc == PP_NOMSG && h.nreads > 1);
	send_error(c, h.xid, 2, PP_ERR_SEGMENTS, &one, 1);
	if (!next_send(c, &h2) || !pull_call(c, &h2))
		return;
	EXPECT(c, h2.xid == h.xid && h2.proc == PP_NOMSG && h2.nreads == 1 &&
		   c->call_len == 40 + 4092 + 104);
	EXPECT(c, c->call[40 + 4092 + 101] == 0 && c->call[40 + 4092 + 103] == 0);
	reply(c, &h2, NULL, 0, NULL, 0, 0);
	/* WRITE_RESOURCE, REPLY_RESOURCE: no resend (the next message is
	 * the next call, another XID). */
	uint32_t wr[2] = {1, 5000}, last;
	if (!next_send(c, &h))
		return;
	send_error(c, h.xid, 2, PP_ERR_WRITE_RESOURCE, wr, 2);
	last = h.xid;
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.xid != last);
	send_error(c, h.xid, 2, PP_ERR_REPLY_RESOURCE, &wr[1], 1);
	last = h.xid;
	/* Final errors, with a credit of 0 in each. */
	static const uint32_t finals[4] = {PP_ERR_SYSTEM, PP_ERR_CHUNK,
					   PP_ERR_INVAL_HTYPE, 42};
	for (int i = 0; i < 4; i++) {
		if (!next_send(c, &h))
			return;
		EXPECT(c, h.xid != last);
		last = h.xid;
		c->grant = 0;
		send_error(c, h.xid, 2, finals[i], NULL, 0);
		c->grant = 8;
	}
	peer_step(c);
}

static void case_v2_recoveries(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_recoveries, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_PREFER_V2, 0);
	if (!cl) {
		case_end(c, t, "v2_recoveries");
		return;
	}
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	static uint8_t args[6000];
	fill(args, sizeof args, 12);
	struct rpcrdma_reply rep;
	struct rpcrdma_iov chunked[2] = {{args, 8, false}, {args + 8, 5000, true}};
	struct rpcrdma_call call = {.proc = 1, .args = chunked, .nargs = 2};
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), RPCRDMA_ERR_PEER_ERR_RESOURCE);
	rpcrdma_reply_free(&rep);
	/* A Long Call of pieces: 4092 bytes, then 101 DDP-eligible (its
	 * padding a segment of its own). */
	struct rpcrdma_iov pieces[2] = {{args, 4092, false}, {args + 4092, 101, true}};
	call.args = pieces;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	size_t dmax = 100;
	struct rpcrdma_call ddp = {.proc = 3, .reply_max = 16,
				   .ddp_result_max = &dmax, .nddp_results = 1};
	/* WRITE_RESOURCE and REPLY_RESOURCE say the reply did not fit
	 * (rpc/call.c, size_status); so does BAD_XDR to a call that went
	 * inline. */
	CHECK_EQ(rpcrdma_clnt_call(cl, &ddp, &rep), RPCRDMA_ERR_REPLY_TOO_BIG);
	rpcrdma_reply_free(&rep);
	struct rpcrdma_call plain = {.proc = 2, .reply_max = 100};
	CHECK_EQ(rpcrdma_clnt_call(cl, &plain, &rep), RPCRDMA_ERR_REPLY_TOO_BIG);
	rpcrdma_reply_free(&rep);
	static const int want[4] = {RPCRDMA_ERR_PEER_ERR_SYSTEM,
				    RPCRDMA_ERR_REPLY_TOO_BIG,
				    RPCRDMA_ERR_PEER_ERROR,
				    RPCRDMA_ERR_PEER_ERROR};
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(rpcrdma_clnt_call(cl, &plain, &rep), want[i]);
		rpcrdma_reply_free(&rep);
	}
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.recoveries, 2);
	CHECK_EQ(s.credits_granted, 8);
	main_step(c);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "v2_recoveries");
}

/* =====================================================================
 * Draft v2 §7.2, §7.3: the server was stalled and gets to the opener
 * only after the client took it for lost.  Had the client gone on in v1
 * on that connection, the server (speaking v2 there, §7.3) would refuse
 * every call with ERR_VERS 2..2 (found by rpcrdma-perf soak: a SIGSTOP
 * longer than the 2 s opener time-out at the moment a client
 * connected).  The client sends nothing but the opener on it and closes
 * it at the time-out; the server's late answer goes nowhere; the call
 * goes, once, on a new connection in v1 (no opener: the server is
 * remembered).
 */
static void script_late_opener(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	struct pp_hdr h, op;
	if (!next_send(c, &op))
		return;
	EXPECT(c, op.vers == 2 && op.proc == PP_CONNPROP);
	peer_step(c); /* the call is made; the opener's time-out runs */
	/* Nothing but the close comes on this connection. */
	int rc = iwpeer_recv(&c->p, &c->m, TMO);
	EXPECT(c, rc == 0 && (c->m.kind == IWPEER_EOF ||
			      c->m.kind == IWPEER_RESET ||
			      c->m.kind == IWPEER_TERMINATE));
	/* The stalled server's answer, too late (it may not even go). */
	struct pp_hdr a;
	pp_init(&a, op.xid, 2, c->grant, PP_CONNPROP);
	a.flags = PP_F_RESPONSE;
	a.body[a.nbody++] = 0;
	uint8_t b[256];
	(void)iwpeer_send(&c->p, b, pp_build(b, &a));
	iwpeer_close(&c->p);
	accept_conn(c, pd4k, 8);
	if (!next_send(c, &h))
		return;
	EXPECT(c, h.vers == 1 && h.proc == PP_MSG);
	c->vers = 1;
	reply(c, &h, NULL, 0, NULL, 0, 0);
	peer_step(c);
}

static void case_v2_late_opener(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_late_opener, &t);
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_PREFER_V2, 2);
	if (!cl) {
		case_end(c, t, "v2_late_opener");
		return;
	}
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	struct rpcrdma_call call = {.proc = 1};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s = stats(cl);
	CHECK_EQ(s.version, 1);
	CHECK(s.reconnects >= 1);
	CHECK_EQ(s.err_vers_recv, 0);
	timed_wait(&c->to_main);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "v2_late_opener");
}

/* =====================================================================
 * RFC 5666 §3.7, §4.3 with accept_msgp: an RDMA_MSGP reply (rdma_align
 * 16, rdma_thresh 8) whose opaque was padded to start 16-aligned from
 * the transport header is taken, and the padding rule and the message's
 * offset are handed up with the bytes as they came.
 */
static void script_msgp_reply(struct pcase *c)
{
	accept_conn(c, pd4k, 8);
	peer_step(c);
	struct pp_hdr h, r;
	if (!next_send(c, &h))
		return;
	pp_init(&r, h.xid, 1, c->grant, PP_MSGP);
	r.align = 16;
	r.thresh = 8;
	uint8_t b[256];
	size_t n = pp_build(b, &r); /* 36 bytes */
	n += pp_rpc_reply(b + n, h.xid);
	pp_put32(b + n, 7);
	pp_put32(b + n + 4, 20); /* opaque<20> at 68: its data padded to 80 */
	memset(b + n + 8, 0, 12);
	fill(b + n + 20, 20, 13);
	n += 40;
	EXPECT(c, iwpeer_send(&c->p, b, n) == 0);
	peer_step(c);
}

static void case_msgp_reply(void)
{
	pthread_t t;
	struct pcase *c = case_start(script_msgp_reply, &t);
	want_msgp = true;
	struct rpcrdma_clnt *cl = client(c, RPCRDMA_V1_ONLY, 0);
	want_msgp = false;
	if (!cl) {
		case_end(c, t, "msgp_reply");
		return;
	}
	timed_wait(&c->to_main);
	sem_post(&c->to_peer);
	struct rpcrdma_call call = {.proc = 1, .reply_max = 64};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(cl, &call, &rep), 0);
	CHECK_EQ(rep.len, 40);
	CHECK(rep.pad.align == 16 && rep.pad.thresh == 8 && rep.pad.base == 60);
	uint8_t want[20];
	fill(want, 20, 13);
	if (rep.len == 40)
		CHECK_MEM(rep.data + 20, want, 20);
	rpcrdma_reply_free(&rep);
	timed_wait(&c->to_main);
	rpcrdma_clnt_destroy(cl);
	case_end(c, t, "msgp_reply");
}

/* ---------------------------------------------------------------------
 */
struct named {
	const char *name;
	void (*fn)(void);
};

static const struct named cases[] = {
	{"pdata_search", case_pdata_search},
	{"pdata_none", case_pdata_none},
	{"write_list_recovery", case_write_list_recovery},
	{"shapes", case_shapes},
	{"credits", case_credits},
	{"peer_errors", case_peer_errors},
	{"reverse_loss", case_reverse_loss},
	{"v2_opener_rbsiz", case_v2_opener_rbsiz},
	{"v2_opener_default", case_v2_opener_default},
	{"v2_fallback", case_v2_fallback},
	{"v2_fallback_vers1", case_v2_fallback_vers1},
	{"v2_lost_opener", case_v2_lost_opener},
	{"v2_only_refused", case_v2_only_refused},
	{"v2_recoveries", case_v2_recoveries},
	{"msgp_reply", case_msgp_reply},
	{"v2_late_opener", case_v2_late_opener},
};

int main(int argc, char **argv)
{
	pdata(pd4k, 4096, 4096, true);
	size_t ncases = sizeof cases / sizeof cases[0];
	for (size_t i = 0; i < ncases; i++) {
		bool run = argc < 2;
		for (int k = 1; k < argc; k++)
			if (!strcmp(argv[k], cases[i].name))
				run = true;
		if (!run)
			continue;
		int before = test_failed;
		cases[i].fn();
		printf("%-28s %s\n", cases[i].name,
		       test_failed == before ? "ok" : "FAILED");
		fflush(stdout);
	}
	TEST_MAIN_END();
}
