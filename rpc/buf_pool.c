/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Registered buffers: memory the library exposes to the peer or places
 * data into (a call's Write chunk and Reply chunk targets, a Responder's
 * Read chunk sink and Long Reply staging, RFC 8166 §3.4), kept registered
 * and reused from one RPC to the next, per protection domain.
 *
 * Why: allocating that memory per call costs twice.  A large malloc is an
 * mmap: fresh pages the kernel zeroes and the device faults in, then an
 * munmap (a 1 MiB call paid ~1 ms of it on these machines, more than its
 * transfer).  And on an RDMA NIC each registration pins pages through a
 * system call.  Buffers here are allocated once, registered once
 * (LOCAL_WRITE | MW_BIND: a chunk over one is a memory window bound for
 * that call, registration.c), and go back to a free list per size class
 * (powers of two, 4 KiB up) when the call is over.  The pool owns the
 * memory and never unmaps a buffer while its registration lives, so the
 * registration can never name pages that changed (docs/DEVICES.md).
 *
 * Bounds: the free lists hold at most RPC_POOL_KEEP bytes, or the most
 * lent out at once in the last RPC_POOL_IDLE_MS if that is more; a
 * buffer given back beyond that, or unused for RPC_POOL_IDLE_MS, is
 * deregistered and unmapped (rpcrdma_rpc_bufpool_trim, from the loop's
 * tick), so memory comes back once the traffic stops.  Why the lent
 * bytes: a connection with 32 1 MiB calls in flight lends 64 MiB (2 MiB
 * classes); when a burst of its replies gave more than half of them back
 * before the next calls arrived, a fixed bound unmapped the rest and the
 * next calls faulted fresh pages in again (a sixth of a poll group's time
 * in page faults and zeroing, `rpcrdma-perf load --fairness`).
 *
 * Lookup: registration.c finds the buffer that holds an address (the
 * engine registers by address) in a table sorted by address.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rpc/rpc_internal.h"

#define RPC_POOL_MIN_SHIFT 12u                 /* 4 KiB */
#define RPC_POOL_CLASSES 12u                   /* ... 8 MiB */
#define RPC_POOL_KEEP (32u << 20)              /* idle bytes kept */
#define RPC_POOL_IDLE_MS 2000u

struct rpc_buf {
	struct rpc_buf *next;       /* free list */
	uint8_t *base;
	size_t cap;                 /* class size */
	unsigned cls;
	struct rpcrdma_mr *mr;      /* NULL: registration failed */
	uint64_t freed_ms;          /* when it went back */
};

struct rpc_bufpool {
	pthread_mutex_t lock;
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_pd *pd;
	unsigned access;
	struct rpc_buf *free[RPC_POOL_CLASSES];
	size_t idle_bytes;
	size_t lent_bytes;          /* of buffers lent now */
	size_t peak_lent;           /* the most lent since peak_ms */
	uint64_t peak_ms;
	/* Every buffer alive (free or lent), sorted by base. */
	struct rpc_buf **tab;
	size_t ntab, captab;
	uint64_t gets, allocs;      /* statistics */
	/* The owner's reference and one per buffer lent: a reply the
	 * application still holds may outlive its client (and its
	 * protection domain: registrations go at close). */
	unsigned refs;
	bool closed;
};

struct rpc_bufpool *rpcrdma_rpc_bufpool_new(struct rpc_dev *rd)
{
	struct rpc_bufpool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	p->refs = 1;
	p->ops = rd->ops;
	p->pd = rd->pd;
	p->access = RPCRDMA_ACCESS_LOCAL_WRITE;
	if (rd->inv.use_mw)
		p->access |= RPCRDMA_ACCESS_MW_BIND;
	/* A Read sink: only where it stays local (our iwarp provider places
	 * Read Responses through the outstanding Read's SGE); an iWARP NIC
	 * would need remote write on the whole buffer, for as long as it
	 * lives, so there sinks are registered per call. */
	if (rd->attr.caps & RPCRDMA_DEV_CAP_REG_VIRTUAL)
		p->access |= RPCRDMA_ACCESS_READ_SINK;
	return p;
}

static void buf_destroy(struct rpc_bufpool *p, struct rpc_buf *b)
{
	if (b->mr)
		p->ops->dereg_mr(b->mr);
	munmap(b->base, b->cap);
	free(b);
}

/* The table: insert / remove b (lock held). */
static size_t tab_find(const struct rpc_bufpool *p, uintptr_t a)
{
	/* The number of buffers whose base is <= a. */
	size_t lo = 0, hi = p->ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((uintptr_t)p->tab[mid]->base <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool tab_insert(struct rpc_bufpool *p, struct rpc_buf *b)
{
	if (p->ntab == p->captab) {
		size_t cap = p->captab ? p->captab * 2 : 64;
		struct rpc_buf **t = realloc(p->tab, cap * sizeof(*t));
		if (!t)
			return false;
		p->tab = t;
		p->captab = cap;
	}
	size_t i = tab_find(p, (uintptr_t)b->base);
	memmove(&p->tab[i + 1], &p->tab[i], (p->ntab - i) * sizeof(*p->tab));
	p->tab[i] = b;
	p->ntab++;
	return true;
}

static void tab_remove(struct rpc_bufpool *p, struct rpc_buf *b)
{
	size_t i = tab_find(p, (uintptr_t)b->base);
	if (!i || p->tab[i - 1] != b)
		return;
	i--;
	memmove(&p->tab[i], &p->tab[i + 1], (p->ntab - i - 1) * sizeof(*p->tab));
	p->ntab--;
}

static void pool_unref_locked(struct rpc_bufpool *p, bool *gone)
{
	*gone = --p->refs == 0;
}

static void pool_free(struct rpc_bufpool *p)
{
	free(p->tab);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void rpcrdma_rpc_bufpool_close(struct rpc_bufpool *p)
{
	if (!p)
		return;
	/* Every connection is gone, the protection domain goes next: no
	 * registration may outlive it.  Free buffers go now; one an
	 * application still holds (a reply) goes when it gives it back. */
	pthread_mutex_lock(&p->lock);
	p->closed = true;
	for (size_t i = 0; i < p->ntab; i++)
		if (p->tab[i]->mr) {
			p->ops->dereg_mr(p->tab[i]->mr);
			p->tab[i]->mr = NULL;
		}
	for (unsigned c = 0; c < RPC_POOL_CLASSES; c++)
		while (p->free[c]) {
			struct rpc_buf *b = p->free[c];
			p->free[c] = b->next;
			tab_remove(p, b);
			buf_destroy(p, b);
		}
	p->idle_bytes = 0;
	bool gone;
	pool_unref_locked(p, &gone);
	pthread_mutex_unlock(&p->lock);
	if (gone)
		pool_free(p);
}

static unsigned class_of(size_t len)
{
	unsigned c = 0;
	while (c + 1 < RPC_POOL_CLASSES &&
	       ((size_t)1 << (RPC_POOL_MIN_SHIFT + c)) < len)
		c++;
	return c;
}

struct rpc_buf *rpcrdma_rpc_buf_get(struct rpc_bufpool *p, size_t len)
{
	if (!p || !len || len > ((size_t)1 << (RPC_POOL_MIN_SHIFT +
					       RPC_POOL_CLASSES - 1)))
		return NULL;
	unsigned c = class_of(len);
	pthread_mutex_lock(&p->lock);
	p->gets++;
	struct rpc_buf *b = p->free[c];
	if (b) {
		p->free[c] = b->next;
		p->idle_bytes -= b->cap;
		p->lent_bytes += b->cap;
		b->next = NULL;
		p->refs++;
		pthread_mutex_unlock(&p->lock);
		return b;
	}
	bool closed = p->closed;
	pthread_mutex_unlock(&p->lock);
	if (closed)
		return NULL;
	/* A new one, outside the lock (mmap and registration are system
	 * calls on a NIC).  Untouched pages: the peer or the copy writes
	 * them; nothing reads beyond what was written. */
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cls = c;
	b->cap = (size_t)1 << (RPC_POOL_MIN_SHIFT + c);
	void *m = mmap(NULL, b->cap, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		free(b);
		return NULL;
	}
	b->base = m;
	if (p->ops->reg_mr(p->pd, b->base, b->cap, p->access, &b->mr) < 0)
		b->mr = NULL; /* still usable: registered per use then */
	pthread_mutex_lock(&p->lock);
	bool ok = !p->closed && tab_insert(p, b);
	if (ok) {
		p->allocs++;
		p->lent_bytes += b->cap;
		p->refs++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!ok) {
		buf_destroy(p, b);
		return NULL;
	}
	return b;
}

void *rpcrdma_rpc_buf_base(const struct rpc_buf *b)
{
	return b->base;
}

void rpcrdma_rpc_buf_put(struct rpc_bufpool *p, struct rpc_buf *b,
			 uint64_t now_ms)
{
	if (!b)
		return;
	bool gone;
	pthread_mutex_lock(&p->lock);
	if (p->lent_bytes > p->peak_lent)
		p->peak_lent = p->lent_bytes;
	p->lent_bytes -= b->cap;
	size_t keep = p->peak_lent > RPC_POOL_KEEP ? p->peak_lent
						   : RPC_POOL_KEEP;
	if (p->closed || p->idle_bytes + b->cap > keep) {
		tab_remove(p, b);
		buf_destroy(p, b); /* its registration went at close */
	} else {
		b->freed_ms = now_ms;
		b->next = p->free[b->cls];
		p->free[b->cls] = b;
		p->idle_bytes += b->cap;
	}
	pool_unref_locked(p, &gone);
	pthread_mutex_unlock(&p->lock);
	if (gone)
		pool_free(p);
}

bool rpcrdma_rpc_bufpool_holds_idle(struct rpc_bufpool *p)
{
	if (!p)
		return false;
	pthread_mutex_lock(&p->lock);
	bool idle = p->idle_bytes > 0;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

bool rpcrdma_rpc_bufpool_trim(struct rpc_bufpool *p, uint64_t now_ms)
{
	if (!p)
		return false;
	struct rpc_buf *gone = NULL;
	pthread_mutex_lock(&p->lock);
	if (now_ms - p->peak_ms >= RPC_POOL_IDLE_MS) {
		p->peak_lent = p->lent_bytes;
		p->peak_ms = now_ms;
	}
	for (unsigned c = 0; c < RPC_POOL_CLASSES; c++) {
		/* Newest first: the old ones are at the end of the list. */
		struct rpc_buf **pp = &p->free[c];
		while (*pp) {
			struct rpc_buf *b = *pp;
			if (now_ms - b->freed_ms < RPC_POOL_IDLE_MS) {
				pp = &b->next;
				continue;
			}
			*pp = b->next;
			p->idle_bytes -= b->cap;
			tab_remove(p, b);
			b->next = gone;
			gone = b;
		}
	}
	bool kept = p->idle_bytes > 0;
	pthread_mutex_unlock(&p->lock);
	while (gone) {
		struct rpc_buf *n = gone->next;
		buf_destroy(p, gone);
		gone = n;
	}
	return kept;
}

struct rpcrdma_mr *rpcrdma_rpc_bufpool_mr(struct rpc_bufpool *p,
					  const void *addr, size_t len,
					  unsigned access)
{
	if (!p || (access & ~p->access))
		return NULL;
	uintptr_t a = (uintptr_t)addr;
	struct rpcrdma_mr *mr = NULL;
	pthread_mutex_lock(&p->lock);
	size_t i = tab_find(p, a);
	if (i) {
		const struct rpc_buf *b = p->tab[i - 1];
		uintptr_t s = (uintptr_t)b->base;
		if (a - s <= b->cap && len <= b->cap - (a - s))
			mr = b->mr;
	}
	pthread_mutex_unlock(&p->lock);
	return mr;
}

void rpcrdma_rpc_bufpool_stats(struct rpc_bufpool *p, uint64_t *gets,
			       uint64_t *allocs)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*gets += p->gets;
	*allocs += p->allocs;
	pthread_mutex_unlock(&p->lock);
}
