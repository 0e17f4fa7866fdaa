/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Memory registration for the engine (struct rpcrdma_engine_mem_ops): the
 * one place that decides how a range of memory gets its lkey, the rkey the
 * peer is given, and how both go away again (the job xprtrdma's frwr_ops.c
 * does in the kernel).  The engine asks for a registration per chunk it
 * exposes (RFC 8166 §3.4: Read, Write and Reply chunks) and per local
 * source or sink of an RDMA operation, and gives each back once its rkey
 * is dead (§4.4.1; engine.h, struct rpcrdma_engine_mem_ops).
 *
 * Exposure (remote access).  On a device with type-2 memory windows and
 * LOCAL_INV (rpc/invalidate.c) a chunk is a window bound over a local
 * registration for exactly that chunk, invalidated before its call
 * completes.  Windows come from a pool per connection: a window the
 * engine saw invalidated (engine_mr.invalidated) is bound again for the
 * next chunk, so a call allocates none; one whose connection died while
 * it was exposed is deallocated instead, which kills its rkey.  A device
 * without windows gets an MR of its own per chunk, with remote access,
 * deregistered to invalidate it.
 *
 * Local registrations (what a window binds over, and the lkeys of RDMA
 * Read sinks and RDMA Write sources) are found, in this order:
 *  1. in the connection's reply region (reply_region.c);
 *  2. in the registered buffers of the library's (buf_pool.c: a call's
 *     result and reply buffers, a Responder's Read sink and staging);
 *  3. in the registration cache of the client's or server's protection
 *     domain, on a device whose registrations follow virtual addresses
 *     (RPCRDMA_DEV_CAP_REG_VIRTUAL: our iwarp provider reads and writes
 *     the process's memory by address and pins nothing);
 *  4. otherwise in a registration made for this use and dropped after it.
 * The cache holds RPC_CACHE_ENTRIES registrations of whole pages, the
 * least recently used one given up for a new one; an entry in use is
 * never given up.  It is not used on a device that pins pages (an RDMA
 * NIC: rxe, siw, mlx5): memory freed and mapped again at the same address
 * is other pages behind the same address, and a registration cached by
 * address would let the device read and write the old ones.  There the
 * library's own buffers come registered (2.) and the caller's memory is
 * registered per call (docs/DEVICES.md).
 *
 * Threads: the engine calls these with its connection's lock held; the
 * cache has a lock of its own, as the connections of a server share it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/slab.h"
#include "common/usdt.h"
#include "rpc/rpc_internal.h"

#define RPC_CACHE_ENTRIES 64u
#define RPC_MW_POOL_MAX 256u

struct rpc_cache_ent {
	uintptr_t start, end;       /* whole pages */
	struct rpcrdma_mr *mr;
	unsigned refs;              /* registrations using it now */
};

struct rpc_reg_cache {
	pthread_mutex_t lock;
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_pd *pd;
	uintptr_t page;
	uint64_t hits, misses, evictions;
	unsigned n;                 /* entries in use, e[0..n) */
	struct rpc_cache_ent *e[RPC_CACHE_ENTRIES]; /* most recent first */
	unsigned nfree;             /* entries unused, free[0..nfree) */
	struct rpc_cache_ent *free[RPC_CACHE_ENTRIES];
	struct rpc_cache_ent slab[RPC_CACHE_ENTRIES];
};

/* One registration handed to the engine (its cookie). */
struct rpc_mreg {
	struct rpc_mreg *next_free;
	struct rpcrdma_mr *mr;      /* made for this use, or NULL */
	struct rpc_cache_ent *ent;  /* cache entry used, or NULL */
	struct rpcrdma_mw *mw;      /* window exposing it, or NULL */
	/* The window's bind, posted by the engine (rpcrdma_rpc_mem_bind). */
	struct rpcrdma_mr *base;    /* the registration it covers part of */
	unsigned access;            /* REMOTE_READ / REMOTE_WRITE */
	uint8_t key;                /* its new 8-bit key */
};

/* Registration records: a connection keeps those it used (reg_free), so
 * they live about as long as it does (common/slab.h). */
static struct rpcrdma_slab mreg_slab = RPCRDMA_SLAB(struct rpc_mreg);

/* ---------------------------------------------------------------------
 * The cache (one per protection domain)
 */
struct rpc_reg_cache *rpcrdma_rpc_reg_cache_new(struct rpc_dev *rd)
{
	if (!(rd->attr.caps & RPCRDMA_DEV_CAP_REG_VIRTUAL) || !rd->inv.use_mw)
		return NULL;
	struct rpc_reg_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->ops = rd->ops;
	c->pd = rd->pd;
	for (unsigned i = 0; i < RPC_CACHE_ENTRIES; i++)
		c->free[c->nfree++] = &c->slab[i];
	long pg = sysconf(_SC_PAGESIZE);
	c->page = pg > 0 ? (uintptr_t)pg : 4096u;
	return c;
}

void rpcrdma_rpc_reg_cache_free(struct rpc_reg_cache *c)
{
	if (!c)
		return;
	/* Every connection is gone: nothing uses an entry any more. */
	for (unsigned i = 0; i < c->n; i++)
		c->ops->dereg_mr(c->e[i]->mr);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void rpcrdma_rpc_reg_cache_stats(struct rpc_reg_cache *c, uint64_t *hits,
				 uint64_t *misses)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	*hits += c->hits;
	*misses += c->misses;
	pthread_mutex_unlock(&c->lock);
}

/* The entry covering [a, a+len), registered now if none does; NULL when
 * it cannot be cached (every entry in use, or registration failed: the
 * caller then registers for this use alone).  Entries are kept most
 * recently used first (a hit moves one place up), so the usual lookup
 * of a buffer used again and again stops at the first entry or two. */
static struct rpc_cache_ent *cache_get(struct rpc_reg_cache *c, uintptr_t a,
				       size_t len)
{
	if (!c || !len || a + len < a)
		return NULL;
	uintptr_t end = a + len;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->n; i++) {
		struct rpc_cache_ent *e = c->e[i];
		if (e->start <= a && end <= e->end) {
			if (i) {
				c->e[i] = c->e[i - 1];
				c->e[i - 1] = e;
			}
			e->refs++;
			c->hits++;
			pthread_mutex_unlock(&c->lock);
			return e;
		}
	}
	c->misses++;
	/* The least recently used entry nobody uses makes room. */
	unsigned v = c->n;
	if (v == RPC_CACHE_ENTRIES) {
		while (v > 0 && c->e[v - 1]->refs)
			v--;
		if (!v) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		v--;
	}
	uintptr_t s = a & ~(c->page - 1);
	uintptr_t e_ = (end + c->page - 1) & ~(c->page - 1);
	if (e_ < end)
		e_ = end; /* the last page of the address space */
	if (v < c->n) {
		struct rpc_cache_ent *old = c->e[v];
		c->ops->dereg_mr(old->mr);
		c->evictions++;
		memmove(&c->e[v], &c->e[v + 1], (c->n - v - 1) * sizeof(c->e[0]));
		c->n--;
		c->free[c->nfree++] = old;
	}
	struct rpc_cache_ent *ent = c->free[c->nfree - 1];
	/* Never exposed itself: windows give the peer access, so the MR
	 * needs only what a window bound over it and local use require. */
	unsigned acc = RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_MW_BIND |
		       RPCRDMA_ACCESS_READ_SINK;
	struct rpcrdma_mr *mr;
	if (c->ops->reg_mr(c->pd, (void *)s, (size_t)(e_ - s), acc, &mr) < 0) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	c->nfree--;
	*ent = (struct rpc_cache_ent){s, e_, mr, 1};
	/* New entries start in the middle: one use does not push out the
	 * buffers used all the time. */
	unsigned at = c->n / 2;
	memmove(&c->e[at + 1], &c->e[at], (c->n - at) * sizeof(c->e[0]));
	c->e[at] = ent;
	c->n++;
	pthread_mutex_unlock(&c->lock);
	return ent;
}

static void cache_put(struct rpc_reg_cache *c, struct rpc_cache_ent *e)
{
	pthread_mutex_lock(&c->lock);
	e->refs--;
	pthread_mutex_unlock(&c->lock);
}

/* ---------------------------------------------------------------------
 * Windows and cookies of a connection (under its lock)
 */
static struct rpc_mreg *reg_alloc(struct rpc_xprt *x)
{
	struct rpc_mreg *r = x->reg_free;
	if (r) {
		x->reg_free = r->next_free;
		r->next_free = NULL;
		return r;
	}
	return rpcrdma_slab_alloc(&mreg_slab);
}

static void reg_free(struct rpc_xprt *x, struct rpc_mreg *r)
{
	r->mr = NULL;
	r->ent = NULL;
	r->mw = NULL;
	r->next_free = x->reg_free;
	x->reg_free = r;
}

static int mw_get(struct rpc_xprt *x, struct rpcrdma_mw **out)
{
	if (x->nmw_pool) {
		*out = x->mw_pool[--x->nmw_pool];
		x->mw_reuses++;
		return 0;
	}
	return x->rd->ops->alloc_mw(x->rd->pd, out);
}

/* A window whose rkey is dead goes back to the pool; one that may still
 * be valid (its connection died with it exposed) is deallocated, which
 * invalidates it. */
static void mw_put(struct rpc_xprt *x, struct rpcrdma_mw *mw, bool invalidated)
{
	if (!x->mw_pool && invalidated)
		x->mw_pool = calloc(RPC_MW_POOL_MAX, sizeof(*x->mw_pool));
	if (invalidated && x->mw_pool && x->nmw_pool < RPC_MW_POOL_MAX) {
		x->mw_pool[x->nmw_pool++] = mw;
		return;
	}
	x->rd->ops->dealloc_mw(mw);
}

void rpcrdma_rpc_reg_conn_free(struct rpc_xprt *x)
{
	while (x->nmw_pool)
		x->rd->ops->dealloc_mw(x->mw_pool[--x->nmw_pool]);
	free(x->mw_pool);
	x->mw_pool = NULL;
	while (x->reg_free) {
		struct rpc_mreg *r = x->reg_free;
		x->reg_free = r->next_free;
		rpcrdma_slab_free(&mreg_slab, r);
	}
}

/* ---------------------------------------------------------------------
 * The engine's hooks
 */
int rpcrdma_rpc_mem_reg(void *ctx, void *addr, size_t len, unsigned access,
			struct rpcrdma_engine_mr *mr)
{
	struct rpc_xprt *x = ctx;
	const struct rpcrdma_provider_ops *ops = x->rd->ops;
	unsigned remote = access & (RPCRDMA_ACCESS_REMOTE_READ |
				    RPCRDMA_ACCESS_REMOTE_WRITE);
	bool use_mw = remote && x->rd->inv.use_mw;
	struct rpc_mreg *r = reg_alloc(x);
	struct rpcrdma_mr *base = NULL;
	int rc = 0;

	if (!r)
		return RPCRDMA_ERR_AGAIN;
	/* 1. The reply region: registered already; only the window is per
	 * call. */
	if (use_mw)
		base = rpcrdma_rpc_region_mr(x->rr, addr, len);
	/* 2. Registered buffers of the library's (buf_pool.c), and 3. the
	 * cache, for whatever needs no remote access of the MR itself (a
	 * window exposes it, or it stays local). */
	if (!base && (use_mw || !remote))
		base = rpcrdma_rpc_bufpool_mr(x->rd->pool, addr, len,
					      use_mw ? RPCRDMA_ACCESS_LOCAL_WRITE
						     : access);
	if (!base && (use_mw || !remote)) {
		r->ent = cache_get(x->rd->cache, (uintptr_t)addr, len);
		if (r->ent)
			base = r->ent->mr;
	}
	/* 4. Registered for this use alone. */
	if (!base) {
		/* Local write always: RDMA Read results and receives land
		 * here. */
		unsigned acc = access | RPCRDMA_ACCESS_LOCAL_WRITE;
		if (use_mw)
			acc |= RPCRDMA_ACCESS_MW_BIND;
		rc = ops->reg_mr(x->rd->pd, addr, len, acc, &r->mr);
		if (rc < 0)
			goto fail;
		base = r->mr;
		if (remote)
			x->registrations++;
	}
	mr->rkey = remote ? base->rkey : 0;
	if (use_mw) {
		rc = mw_get(x, &r->mw);
		if (rc < 0)
			goto fail;
		/* The bind is the engine's to post, in its send queue ahead
		 * of the Send that advertises the window (engine.h,
		 * bind_pending).  Its rkey is known now: the window's index
		 * with a fresh 8-bit key, as both providers form it at post,
		 * when they set mw->rkey (provider.h, RPCRDMA_WR_BIND_MW). */
		mr->bind_pending = true;
		r->base = base;
		r->access = remote;
		r->key = ++x->mw_key;
		mr->rkey = (r->mw->rkey & ~0xFFu) | r->key;
	}
	/* xprtrdma_mr_map: what the peer may now reach, through which
	 * handle (a window's or the region's own). */
	RPCRDMA_PROBE4(mr_reg, addr, len, mr->rkey, use_mw);
	mr->addr = addr;
	mr->length = len;
	mr->lkey = base->lkey;
	mr->remote_addr = (uint64_t)(uintptr_t)addr;
	mr->cookie = r;
	mr->invalidated = false;
	return 0;
fail:
	if (r->ent)
		cache_put(x->rd->cache, r->ent);
	if (r->mr)
		ops->dereg_mr(r->mr);
	reg_free(x, r);
	return rc == RPCRDMA_ERR_NOMEM ? RPCRDMA_ERR_AGAIN : rc;
}

void rpcrdma_rpc_mem_bind(void *ctx, const struct rpcrdma_engine_mr *mr,
			  struct rpcrdma_send_wr *w)
{
	(void)ctx;
	const struct rpc_mreg *r = mr->cookie;
	w->bind_mw.mw = r->mw;
	w->bind_mw.mr = r->base;
	w->bind_mw.addr = (uint64_t)(uintptr_t)mr->addr;
	w->bind_mw.length = mr->length;
	w->bind_mw.access = r->access;
	w->bind_mw.key = r->key;
}

void rpcrdma_rpc_mem_release(void *ctx, struct rpcrdma_engine_mr *mr)
{
	struct rpc_xprt *x = ctx;
	struct rpc_mreg *r = mr->cookie;

	mr->cookie = NULL;
	if (!r)
		return;
	/* xprtrdma_mr_unmap: the handle is dead (invalidated by the peer
	 * or a LOCAL_INV, or by the deregistration below). */
	RPCRDMA_PROBE2(mr_inv, mr->rkey, x->rd->inv.local_inv);
	/* The engine calls this once the rkey is dead, or its connection
	 * is (then the window is deallocated: it can never be used again). */
	if (r->mw)
		mw_put(x, r->mw, mr->invalidated);
	/* Without LOCAL_INV this is the invalidation of an exposed MR; if
	 * it fails, RFC 8166 §4.5.4: close the connection. */
	if (r->mr && x->rd->ops->dereg_mr(r->mr) < 0 && !r->mw && mr->rkey &&
	    !x->rd->inv.local_inv) {
		x->close_req = true;
		rpc_xprt_unquiet(x);
	}
	if (r->ent)
		cache_put(x->rd->cache, r->ent);
	reg_free(x, r);
}

/* The engine's buffers (a Responder's rebuilt call, a Long Reply's
 * staging) from the registered pool; malloc when it has none. */
void *rpcrdma_rpc_mem_buf_alloc(void *ctx, size_t len, void **cookie)
{
	struct rpc_xprt *x = ctx;
	struct rpc_buf *b = rpcrdma_rpc_buf_get(x->rd->pool, len);
	*cookie = b;
	return b ? rpcrdma_rpc_buf_base(b) : malloc(len);
}

void rpcrdma_rpc_mem_buf_free(void *ctx, void *p, void *cookie)
{
	struct rpc_xprt *x = ctx;
	if (cookie)
		rpcrdma_rpc_buf_put(x->rd->pool, cookie, rpcrdma_rpc_now_ms());
	else
		free(p);
}
