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

/* ASan's manual poisoning, so that pooled buffers (below) catch what
 * malloc'd ones would: reads past a buffer, and use after it is given
 * back. */
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_ASAN 1
#endif
#endif
#ifdef HARNESS_ASAN
#include <sanitizer/asan_interface.h>
#define H_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define H_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define H_POISON(p, n) ((void)(p), (void)(n))
#define H_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

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
 * A digest of what the engine did (work requests and events, without
 * addresses): the replay build runs every input on a new engine and
 * again on a reset one and compares (see LLVMFuzzerTestOneInput).
 */
static uint64_t harness_digest;

static void dig(uint64_t v)
{
	harness_digest = (harness_digest ^ v) * 0x100000001b3ull;
}

/* ---------------------------------------------------------------------
 * Pooled buffers: each call and incoming-call slot of a target owns a
 * block, allocated once and poisoned; a buffer handed out is unpoisoned
 * for exactly its length (16-byte poisoned gaps between buffers), and
 * the whole block is poisoned again when the slot is given back.  As
 * strict as malloc under ASan, without an allocation per buffer.
 */
struct pool {
	uint8_t *base;
	size_t cap, used;
};

static uint8_t *pool_alloc(struct pool *p, size_t cap, size_t n)
{
	if (!p->base) {
		p->base = malloc(cap);
		if (!p->base)
			abort();
		p->cap = cap;
		H_POISON(p->base, cap);
	}
	size_t at = (p->used + 15) & ~(size_t)15;
	if (at + n + 16 > p->cap) {
		fprintf(stderr, "harness pool of %zu bytes exhausted\n", p->cap);
		abort();
	}
	p->used = at + n + 16;
	H_UNPOISON(p->base + at, n);
	return p->base + at;
}

static void pool_release(struct pool *p)
{
	if (p->base && p->used)
		H_POISON(p->base, p->used);
	p->used = 0;
}

/* [p, p + n) may be read (ASan: not poisoned, i.e. inside a live
 * buffer); what the engine says it delivered is checked so. */
static bool readable(const void *p, size_t n)
{
#ifdef HARNESS_ASAN
	/* Its first and last byte: an overrun ends in the gap after the
	 * buffer, or past it (a whole-region query cost 5% of a run). */
	const uint8_t *b = p;
	return !n || (!__asan_address_is_poisoned(b) &&
		      !__asan_address_is_poisoned(b + n - 1));
#else
	(void)p; /* nothing to ask without ASan */
	(void)n;
	return true;
#endif
}

/* A byte pattern for RDMA Read completions, copied instead of computed
 * byte by byte. */
static uint8_t read_pattern[1u << 16];

static void init_read_pattern(void)
{
	if (read_pattern[1])
		return;
	for (uint32_t i = 0; i < sizeof read_pattern; i++)
		read_pattern[i] = (uint8_t)(i * 7 + 3);
}

/* ---------------------------------------------------------------------
 * Fake registrations: key = KEY_BASE + index, never reused in an input.
 * The buffers' own registration of the engine kept across inputs
 * (below) has a key of its own, ARENA_KEY_BASE.
 */
#define KEY_BASE 0x1000u
#define MAX_KEYS 2048u
#define ARENA_KEY_BASE 0x100000u

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
static struct fmr arena_mrs[1];
static int arena_slot = -1; /* engine_create registering its buffers */
static uint32_t nkeys;
static uint32_t live_regs;
static uint64_t nreg, nrel;
/* Faults injected while armed: the next again_budget remote
 * registrations return AGAIN, the next fail_budget (remote only when
 * fail_remote_only) NOMEM. */
static int again_budget, fail_budget;
static bool faults_armed, fail_remote_only;
static bool conn_up; /* the harness's view: a QP the peer can reach */
static bool release_invalidates;

static struct fmr *key_mr(uint32_t key)
{
	if (key == ARENA_KEY_BASE)
		return &arena_mrs[key - ARENA_KEY_BASE];
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
	if (arena_slot >= 0) {
		struct fmr *a = &arena_mrs[arena_slot];
		if (a->used || remote)
			FAIL("engine_create registered twice, or remotely");
		memset(a, 0, sizeof *a);
		a->used = true;
		a->addr = addr;
		a->len = len;
		a->access = access;
		mr->addr = addr;
		mr->length = len;
		mr->lkey = ARENA_KEY_BASE + (uint32_t)arena_slot;
		mr->rkey = 0;
		mr->remote_addr = (uint64_t)(uintptr_t)addr;
		mr->cookie = a;
		return 0;
	}
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
	/* Unless deregistration is how the engine invalidates (its
	 * cfg.local_inv false: no LOCAL_INV on the device). */
	if (r->exposed && r->rvalid && conn_up && !release_invalidates)
		FAIL("registration %#x released while the peer can still "
		     "use its rkey (RFC 8166 §4.4.1)", mr->lkey);
	r->used = false;
	r->rvalid = false; /* deregistration kills the rkey */
	if (mr->lkey >= ARENA_KEY_BASE)
		return;
	live_regs--;
	nrel++;
}

/* ---------------------------------------------------------------------
 * One engine kept across inputs.  An input gets it back with its own
 * configuration through rpcrdma_engine_reset(); when that needs more
 * slots or buffers than the engine has, a new one is created with the
 * larger of each size (creating an engine, its allocations, zeroed
 * buffers and their registration, cost more than most inputs do).
 * harness_fresh forces a new engine of exactly the input's configuration
 * (the replay build's comparison, LLVMFuzzerTestOneInput below).
 */
static bool harness_fresh;
static bool h_pad; /* create larger than asked (replay build) */
static struct rpcrdma_engine *h_engine;
static struct rpcrdma_engine_config h_cap;   /* what it was created with */
static struct rpcrdma_engine_config h_cur;   /* what it was reset to */

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static int harness_engine(const struct rpcrdma_engine_config *cfg,
			  const struct rpcrdma_engine_mem_ops *ops,
			  struct rpcrdma_engine **out)
{
	struct rpcrdma_engine_config big = *cfg;
	if (h_engine && !harness_fresh) {
		int rc = 0;
		if (memcmp(&h_cur, cfg, sizeof *cfg))
			rc = rpcrdma_engine_reset(h_engine, cfg);
		if (!rc) {
			h_cur = *cfg;
			*out = h_engine;
			return 0;
		}
		if (rc != RPCRDMA_ERR_NOSPACE)
			return rc;
		big.max_calls = max_u32(cfg->max_calls, h_cap.max_calls);
		big.credits = max_u32(cfg->credits, h_cap.credits);
		big.max_inline_send = max_u32(cfg->max_inline_send,
					      h_cap.max_inline_send);
		big.max_inline_recv = max_u32(cfg->max_inline_recv,
					      h_cap.max_inline_recv);
		uint32_t d1 = cfg->sq_depth ? cfg->sq_depth
					    : 4 * (cfg->max_calls + cfg->credits);
		uint32_t d2 = h_cap.sq_depth ? h_cap.sq_depth
					     : 4 * (h_cap.max_calls + h_cap.credits);
		big.sq_depth = max_u32(d1, d2);
	}
	if (h_pad) {
		big.max_calls += 3;
		big.credits += 2;
		big.max_inline_recv += 4096;
		big.max_inline_send += 1024;
		big.sq_depth = 8 + (big.sq_depth ? big.sq_depth
				    : 4 * (cfg->max_calls + cfg->credits));
	}
	if (h_engine)
		rpcrdma_engine_destroy(h_engine);
	h_engine = NULL;
	arena_slot = 0;
	int rc = rpcrdma_engine_create(&big, ops, out);
	arena_slot = -1;
	if (rc)
		return rc;
	h_engine = *out;
	h_cap = big;
	h_cur = big;
	if (memcmp(&big, cfg, sizeof *cfg)) {
		rc = rpcrdma_engine_reset(h_engine, cfg);
		if (rc)
			FAIL("reset to a configuration within its sizes = %d", rc);
		h_cur = *cfg;
	}
	return 0;
}

/* The end of an input: the engine goes back to its new state (calls
 * dropped, registrations released, which the target then checks). */
static void harness_engine_done(struct rpcrdma_engine *e)
{
	if (rpcrdma_engine_reset(e, NULL))
		FAIL("reset to its own configuration failed");
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

/* The completion of send-queue request wr_id (op): success, or flushed
 * when the QP is in error. */
static void harness_wc(struct rpcrdma_wc *wc, uint64_t wr_id,
		       enum rpcrdma_wr_opcode op, bool flushed)
{
	memset(wc, 0, sizeof *wc);
	wc->wr_id = wr_id;
	wc->status = flushed ? RPCRDMA_WC_WR_FLUSH_ERR : RPCRDMA_WC_SUCCESS;
	wc->opcode = op == RPCRDMA_WR_LOCAL_INV	 ? RPCRDMA_WC_LOCAL_INV
		     : op == RPCRDMA_WR_RDMA_WRITE ? RPCRDMA_WC_RDMA_WRITE
		     : op == RPCRDMA_WR_RDMA_READ  ? RPCRDMA_WC_RDMA_READ
						   : RPCRDMA_WC_SEND;
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
	struct pool *pool;
};

struct inc {
	int state; /* 0 none, 1 awaiting reply, 2 reply submitted */
	uint32_t xid;
	uint8_t *bufs[5];
	unsigned nbufs;
};

/* Blocks: a call's buffers (header, DDP argument, tail, reply, three
 * results) and an incoming call's reply pieces at their largest. */
#define CALL_POOL (128u << 10)
#define INC_POOL (48u << 10)
static struct pool call_pools[32];
static struct pool inc_pools[128];

static uint8_t *inc_alloc(const struct inc *incs, const struct inc *ic,
			  size_t n)
{
	return pool_alloc(&inc_pools[ic - incs], INC_POOL, n);
}

static void free_call(struct call *c)
{
	if (c->pool)
		pool_release(c->pool);
	c->hdr = c->ddp = c->tail = c->reply = NULL;
	c->nres = 0;
}

static void free_inc_in(struct inc *incs, struct inc *ic)
{
	pool_release(&inc_pools[ic - incs]);
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
			   struct call *c, unsigned slot, uint32_t nfs_vers,
			   uint64_t now)
{
	uint8_t s = u8(in);
	memset(c, 0, sizeof *c);
	c->pool = &call_pools[slot];
	struct rpcrdma_iov v[4];
	unsigned n = 0;
	size_t hlen = 40 + ((s & 16) ? (size_t)u8(in) * 32u : 0);
	c->hdr = pool_alloc(c->pool, CALL_POOL, hlen);
	memset(c->hdr, 0, hlen);
	uint32_t w[6] = {0, RPCRDMA_RPC_CALL, 2, 100003, nfs_vers, 1};
	for (int i = 0; i < 6; i++)
		rpcrdma_be32_put(c->hdr + 4 * i, w[i]);
	v[n++] = (struct rpcrdma_iov){c->hdr, hlen, false};
	if (s & 1) {
		size_t len = u16(in) % 12000u;
		c->ddp = pool_alloc(c->pool, CALL_POOL, len);
		memset(c->ddp, 0xab, len);
		v[n++] = (struct rpcrdma_iov){len ? c->ddp : NULL, len, true};
	}
	if (s & 2) {
		size_t len = (size_t)u8(in) * 16u;
		c->tail = pool_alloc(c->pool, CALL_POOL, len);
		memset(c->tail, 0xcd, len);
		v[n++] = (struct rpcrdma_iov){len ? c->tail : NULL, len, false};
	}
	struct rpcrdma_iov res[3];
	c->nres = (s >> 2) & 3;
	for (unsigned i = 0; i < c->nres; i++) {
		size_t len = u16(in) % 9000u;
		if ((s & 0x80) && i == 0)
			len = 0; /* empty Write chunk (§4.3.2.3) */
		c->res[i] = pool_alloc(c->pool, CALL_POOL, len);
		c->res_len[i] = len;
		res[i] = (struct rpcrdma_iov){len ? c->res[i] : NULL, len, true};
	}
	c->reply_max = u16(in) % 10000u;
	if (s & 0x40)
		c->reply_max += 60000u; /* needs a Reply chunk anyway */
	c->reply = pool_alloc(c->pool, CALL_POOL, c->reply_max);
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
	if (!readable(ev->call, ev->call_len))
		FAIL("delivered call of %zu bytes not all readable", ev->call_len);
	dig(ev->call_len);
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
	free_inc_in(incs, ic);
}

/* A segment for a peer-built header: small handles, bounded length. */
static void gen_seg(struct in *in, struct rpcrdma_segment *g, uint32_t maxlen)
{
	g->handle = 0x100u + u8(in);
	g->length = maxlen ? u16(in) % (maxlen + 1) : 0;
	g->offset = (uint64_t)u16(in) << 12;
}

/* ---------------------------------------------------------------------
 * The entry point: the target's run_input() once, or (replay build,
 * FUZZ_REPLAY) on a new engine and again on the same engine reset, with
 * the same digest required of both.
 */
static void run_input(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (trace < 0)
		trace = getenv("FUZZ_ENGINE_TRACE") != NULL;
	init_read_pattern();
#ifdef FUZZ_REPLAY
	/* A new engine of the input's configuration; the same engine reset;
	 * a new engine larger than the input needs, reset to it.  The three
	 * must do the same. */
	uint64_t d[3];
	for (int round = 0; round < 3; round++) {
		harness_fresh = round != 1;
		h_pad = round == 2;
		harness_digest = 0;
		run_input(data, size);
		d[round] = harness_digest;
	}
	harness_fresh = h_pad = false;
	if (d[1] != d[0])
		FAIL("an engine reset with rpcrdma_engine_reset() behaved unlike "
		     "a new one on the same input");
	if (d[2] != d[0])
		FAIL("an engine reset to a smaller configuration than it was "
		     "created with behaved unlike a new one");
#else
	run_input(data, size);
#endif
	return 0;
}

#endif
