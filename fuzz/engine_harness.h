/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What fuzz_engine_recv.c (v1) and fuzz_engine_v2.c share around one
 * engine: the input reader, fake memory registrations that check every
 * registration, release and SGE, and the call / incoming-call records.
 * Header-only (each target is one translation unit); define HARNESS_NAME
 * before including it.
 */
#ifndef RPCRDMA_FUZZ_ENGINE_HARNESS_H
#define RPCRDMA_FUZZ_ENGINE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "wire/chunk_lists.h"
#include "wire/rpc_msg.h"

#define FAIL(...)                                                        \
	do {                                                             \
		fprintf(stderr, HARNESS_NAME ": invariant broken: ");     \
		fprintf(stderr, __VA_ARGS__);                            \
		fputc('\n', stderr);                                     \
		abort();                                                 \
	} while (0)

/* FUZZ_ENGINE_TRACE=1 in the environment prints every step (for
 * reproducing a finding by hand). */
static int trace = -1;
#define TRACE(...)                                                       \
	do {                                                             \
		if (trace)                                               \
			fprintf(stderr, __VA_ARGS__);                    \
	} while (0)

/* ---------------------------------------------------------------------
 * Input reader (every read past the end yields zeros)
 */
struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t u16(struct in *in)
{
	uint16_t hi = u8(in);
	return (uint16_t)(hi << 8 | u8(in));
}

static uint32_t u32(struct in *in)
{
	uint32_t hi = u16(in);
	return hi << 16 | u16(in);
}

/* Copy up to len bytes into dst, zero the rest. */
static void bytes(struct in *in, uint8_t *dst, size_t len)
{
	size_t k = len < in->n ? len : in->n;
	memcpy(dst, in->p, k);
	memset(dst + k, 0, len - k);
	in->p += k;
	in->n -= k;
}

/* ---------------------------------------------------------------------
 * Fake registrations: key = KEY_BASE + index, never reused in a run.
 */
#define KEY_BASE 0x1000u
#define MAX_KEYS 2048u

struct fmr {
	bool used;
	bool remote;   /* registered with remote access */
	bool exposed;  /* advertised to the peer in a call we sent */
	bool rvalid;   /* rkey still usable by the peer */
	uint8_t *addr;
	size_t len;
	unsigned access;
};

static struct fmr mrs[MAX_KEYS];
static uint32_t nkeys;
static uint32_t live_regs;
static uint64_t nreg, nrel;
/* Faults injected while armed: the next again_budget remote
 * registrations return AGAIN, the next fail_budget (remote only when
 * fail_remote_only) NOMEM. */
static int again_budget, fail_budget;
static bool faults_armed, fail_remote_only;
static bool conn_up; /* the harness's view: a QP the peer can reach */

static struct fmr *key_mr(uint32_t key)
{
	if (key < KEY_BASE || key - KEY_BASE >= nkeys)
		return NULL;
	return &mrs[key - KEY_BASE];
}

static int fake_reg(void *ctx, void *addr, size_t len, unsigned access,
		    struct rpcrdma_engine_mr *mr)
{
	(void)ctx;
	bool remote = access & (RPCRDMA_ACCESS_REMOTE_READ |
				RPCRDMA_ACCESS_REMOTE_WRITE);
	if (!addr || !len)
		FAIL("registration of an empty range");
	if (faults_armed && remote && again_budget > 0) {
		again_budget--;
		return RPCRDMA_ERR_AGAIN;
	}
	if (faults_armed && (remote || !fail_remote_only) && fail_budget > 0) {
		fail_budget--;
		return RPCRDMA_ERR_NOMEM;
	}
	if (nkeys >= MAX_KEYS)
		return RPCRDMA_ERR_NOMEM;
	struct fmr *r = &mrs[nkeys];
	uint32_t key = KEY_BASE + nkeys++;
	memset(r, 0, sizeof *r);
	r->used = true;
	r->remote = remote;
	r->rvalid = remote;
	r->addr = addr;
	r->len = len;
	r->access = access;
	live_regs++;
	nreg++;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = key;
	mr->rkey = remote ? key : 0;
	mr->remote_addr = (uint64_t)(uintptr_t)addr;
	mr->cookie = r;
	return 0;
}

static void fake_release(void *ctx, struct rpcrdma_engine_mr *mr)
{
	(void)ctx;
	struct fmr *r = key_mr(mr->lkey);
	if (!r || !r->used || r->addr != mr->addr || r->len != mr->length ||
	    mr->cookie != r)
		FAIL("release of an unknown or released registration %#x",
		     mr->lkey);
	if (r->exposed && r->rvalid && conn_up)
		FAIL("registration %#x released while the peer can still "
		     "use its rkey (RFC 8166 §4.4.1)", mr->lkey);
	r->used = false;
	live_regs--;
	nrel++;
}

/* The SGE lies inside a live registration with the access needed. */
static uint8_t *check_sge(const struct rpcrdma_sge *g, unsigned need,
			  const char *what)
{
	struct fmr *r = key_mr(g->lkey);
	if (!r || !r->used)
		FAIL("%s SGE uses dead or unknown lkey %#x", what, g->lkey);
	uint8_t *p = (uint8_t *)(uintptr_t)g->addr;
	if (p < r->addr || (size_t)(p - r->addr) > r->len ||
	    r->len - (size_t)(p - r->addr) < g->length)
		FAIL("%s SGE [%p,+%u) outside registration %#x [%p,+%zu)", what,
		     (void *)p, g->length, g->lkey, (void *)r->addr, r->len);
	if ((r->access & need) != need)
		FAIL("%s SGE lacks access %#x on %#x", what, need, g->lkey);
	return p;
}

/* ---------------------------------------------------------------------
 * Records: our calls and the peer's calls to us.
 */
struct call {
	bool used;
	int done;
	uint32_t xid;
	uint8_t *hdr, *ddp, *tail, *reply;
	size_t reply_max;
	unsigned nres;
	uint8_t *res[3];
	size_t res_len[3];
};

struct inc {
	int state; /* 0 none, 1 awaiting reply, 2 reply submitted */
	uint32_t xid;
	uint8_t *bufs[5];
	unsigned nbufs;
};

static uint8_t *xmalloc(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

static void free_call(struct call *c)
{
	free(c->hdr);
	free(c->ddp);
	free(c->tail);
	free(c->reply);
	for (unsigned i = 0; i < c->nres; i++)
		free(c->res[i]);
	c->hdr = c->ddp = c->tail = c->reply = NULL;
	c->nres = 0;
}

static void free_inc(struct inc *ic)
{
	for (unsigned i = 0; i < ic->nbufs; i++)
		free(ic->bufs[i]);
	ic->nbufs = 0;
	ic->state = 0;
}

/* A call of the upper layer, shaped by the input: a header of 40 bytes
 * and more, optionally a DDP argument and an inline tail, up to three
 * DDP results (the first maybe empty, RFC 8166 §4.3.2.3) and a reply
 * buffer (large ones need a Reply chunk anyway).  nfs_vers goes into the
 * header's version word.  Returns whether the engine took it (into c,
 * XID set); AGAIN frees it; any other error fails the run. */
static bool harness_submit(struct rpcrdma_engine *e, struct in *in,
			   struct call *c, uint32_t nfs_vers, uint64_t now)
{
	uint8_t s = u8(in);
	memset(c, 0, sizeof *c);
	struct rpcrdma_iov v[4];
	unsigned n = 0;
	size_t hlen = 40 + ((s & 16) ? (size_t)u8(in) * 32u : 0);
	c->hdr = xmalloc(hlen);
	memset(c->hdr, 0, hlen);
	uint32_t w[6] = {0, RPCRDMA_RPC_CALL, 2, 100003, nfs_vers, 1};
	for (int i = 0; i < 6; i++)
		rpcrdma_be32_put(c->hdr + 4 * i, w[i]);
	v[n++] = (struct rpcrdma_iov){c->hdr, hlen, false};
	if (s & 1) {
		size_t len = u16(in) % 12000u;
		c->ddp = xmalloc(len);
		memset(c->ddp, 0xab, len);
		v[n++] = (struct rpcrdma_iov){len ? c->ddp : NULL, len, true};
	}
	if (s & 2) {
		size_t len = (size_t)u8(in) * 16u;
		c->tail = xmalloc(len);
		memset(c->tail, 0xcd, len);
		v[n++] = (struct rpcrdma_iov){len ? c->tail : NULL, len, false};
	}
	struct rpcrdma_iov res[3];
	c->nres = (s >> 2) & 3;
	for (unsigned i = 0; i < c->nres; i++) {
		size_t len = u16(in) % 9000u;
		if ((s & 0x80) && i == 0)
			len = 0; /* empty Write chunk (§4.3.2.3) */
		c->res[i] = xmalloc(len);
		c->res_len[i] = len;
		res[i] = (struct rpcrdma_iov){len ? c->res[i] : NULL, len, true};
	}
	c->reply_max = u16(in) % 10000u;
	if (s & 0x40)
		c->reply_max += 60000u; /* needs a Reply chunk anyway */
	c->reply = xmalloc(c->reply_max);
	struct rpcrdma_call_req req = {v, n, c->reply_max ? c->reply : NULL,
				       c->reply_max, res, c->nres, c, false};
	uint32_t xid = 0;
	int rc = rpcrdma_engine_submit_call(e, &req, &xid, now);
	TRACE("submit s %#x -> %d xid %#x\n", s, rc, xid);
	if (rc == RPCRDMA_ERR_AGAIN) {
		free_call(c);
		return false;
	}
	if (rc)
		FAIL("submit_call = %d", rc);
	if (rpcrdma_be32_get(c->hdr) != xid)
		FAIL("XID not written into the call");
	c->used = true;
	c->xid = xid;
	return true;
}

/* INCOMING_CALL: a free slot, a message starting with its XID and CALL,
 * every byte readable.  The slot then awaits a reply. */
static void harness_incoming(struct inc *incs, uint32_t nincs,
			     const struct rpcrdma_engine_event *ev)
{
	if (ev->call_id >= nincs)
		FAIL("call_id %u out of range", ev->call_id);
	struct inc *ic = &incs[ev->call_id];
	if (ic->state != 0)
		FAIL("INCOMING_CALL on busy call_id %u", ev->call_id);
	if (ev->call_len < 8 || rpcrdma_be32_get(ev->call) != ev->xid ||
	    rpcrdma_be32_get((const uint8_t *)ev->call + 4) != RPCRDMA_RPC_CALL)
		FAIL("delivered call does not start with XID, CALL");
	if (ev->write_chunks > RPCRDMA_MAX_WRITE_CHUNKS)
		FAIL("write_chunks");
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < ev->call_len; i++)
		sink ^= ((const uint8_t *)ev->call)[i];
	(void)sink;
	ic->state = 1;
	ic->xid = ev->xid;
}

/* REPLY_SENT: only for a slot whose reply was submitted, with its tag. */
static void harness_reply_sent(struct inc *incs, uint32_t nincs,
			       const struct rpcrdma_engine_event *ev)
{
	if (ev->call_id >= nincs)
		FAIL("call_id %u out of range", ev->call_id);
	struct inc *ic = &incs[ev->call_id];
	if (ic->state != 2 || ev->user != ic)
		FAIL("REPLY_SENT for call_id %u without a reply", ev->call_id);
	free_inc(ic);
}

/* A segment for a peer-built header: small handles, bounded length. */
static void gen_seg(struct in *in, struct rpcrdma_segment *g, uint32_t maxlen)
{
	g->handle = 0x100u + u8(in);
	g->length = maxlen ? u16(in) % (maxlen + 1) : 0;
	g->offset = (uint64_t)u16(in) << 12;
}

#endif
