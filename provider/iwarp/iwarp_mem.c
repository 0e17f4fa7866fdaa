/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Memory registration and STag checks (RFC 5040 §8, RFC 5042 §5).
 *
 * STag = 24-bit index << 8 | 8-bit key (the layout siw and verbs use).
 * One table per device, guarded by dev->mem_lock; lookups copy what they
 * need under the lock, so a concurrent dereg never leaves a dangling entry
 * pointer (placing into memory the application deregistered while a peer
 * still targets it is the application's error, as with any RNIC).
 * Index 0 is never handed out, so STag 0 (RTR and zero-length messages)
 * is always invalid.
 */
#include <stdlib.h>
#include <string.h>

#include "common/slab.h"
#include "provider/iwarp/iwarp.h"

/* MR and MW records: a connection's registrations, made and gone with it
 * (common/slab.h). */
static struct rpcrdma_slab mr_slab = RPCRDMA_SLAB(struct iw_mr);
static struct rpcrdma_slab mw_slab = RPCRDMA_SLAB(struct iw_mw);

#define IW_STAG_MAX_INDEX 0xFFFFFFu

void rpcrdma_iwarp_mem_init(struct iw_dev *dev)
{
	dev->stags = NULL;
	dev->nstags = 1; /* index 0 reserved */
	dev->stag_cap = 0;
	dev->free_head = 0;
}

void rpcrdma_iwarp_mem_fini(struct iw_dev *dev)
{
	free(dev->stags);
	dev->stags = NULL;
}

/* Returns a fresh index or 0 when the table is full. mem_lock held. */
static uint32_t stag_alloc(struct iw_dev *dev)
{
	if (dev->free_head) {
		uint32_t i = dev->free_head;
		dev->free_head = dev->stags[i].next_free;
		return i;
	}
	if (dev->nstags > IW_STAG_MAX_INDEX)
		return 0;
	if (dev->nstags >= dev->stag_cap) {
		uint32_t cap = dev->stag_cap ? dev->stag_cap * 2 : 256;
		struct iw_stag *s = realloc(dev->stags, cap * sizeof(*s));
		if (!s)
			return 0;
		memset(s + dev->stag_cap, 0, (cap - dev->stag_cap) * sizeof(*s));
		dev->stags = s;
		dev->stag_cap = cap;
	}
	return dev->nstags++;
}

static void stag_free(struct iw_dev *dev, uint32_t i)
{
	struct iw_stag *s = &dev->stags[i];
	uint8_t key = s->key;
	if (s->type == IW_STAG_MR)
		atomic_fetch_add(&dev->mr_gen, 1); /* lkey caches are stale */
	memset(s, 0, sizeof(*s));
	s->key = (uint8_t)(key + 1); /* a stale STag must not match again */
	s->next_free = dev->free_head;
	dev->free_head = i;
}

int rpcrdma_iwarp_reg_mr(struct rpcrdma_pd *pd, void *addr, size_t length,
			 unsigned access, struct rpcrdma_mr **out)
{
	if (!pd || !out || (!addr && length))
		return RPCRDMA_ERR_INVAL;
	/* Read Responses are placed through the outstanding Read's own
	 * SGE (iwarp_qp_rx.c), so a sink needs local write only. */
	if (access & RPCRDMA_ACCESS_READ_SINK)
		access |= RPCRDMA_ACCESS_LOCAL_WRITE;
	/* verbs rule: remote write needs local write too. */
	if ((access & RPCRDMA_ACCESS_REMOTE_WRITE) &&
	    !(access & RPCRDMA_ACCESS_LOCAL_WRITE))
		return RPCRDMA_ERR_INVAL;
	if ((uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr)
		return RPCRDMA_ERR_OVERFLOW;
	struct iw_dev *dev = iw_dev(pd->dev);
	struct iw_mr *mr = rpcrdma_slab_alloc(&mr_slab);
	if (!mr)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_lock(&dev->mem_lock);
	uint32_t i = stag_alloc(dev);
	if (!i) {
		pthread_mutex_unlock(&dev->mem_lock);
		rpcrdma_slab_free(&mr_slab, mr);
		return RPCRDMA_ERR_NOMEM;
	}
	struct iw_stag *s = &dev->stags[i];
	s->type = IW_STAG_MR;
	s->valid = true;
	s->pd = (struct iw_pd *)pd;
	s->addr = (uint64_t)(uintptr_t)addr;
	s->length = length;
	s->access = access;
	uint8_t key = s->key;
	pthread_mutex_unlock(&dev->mem_lock);
	mr->index = i;
	mr->base.pd = pd;
	mr->base.addr = addr;
	mr->base.length = length;
	mr->base.access = access;
	mr->base.lkey = rpcrdma_stag(i, key);
	mr->base.rkey = mr->base.lkey;
	*out = &mr->base;
	return 0;
}

int rpcrdma_iwarp_dereg_mr(struct rpcrdma_mr *m)
{
	if (!m)
		return RPCRDMA_ERR_INVAL;
	struct iw_mr *mr = (struct iw_mr *)m;
	struct iw_dev *dev = iw_dev(m->pd->dev);
	pthread_mutex_lock(&dev->mem_lock);
	stag_free(dev, mr->index);
	pthread_mutex_unlock(&dev->mem_lock);
	rpcrdma_slab_free(&mr_slab, mr);
	return 0;
}

int rpcrdma_iwarp_alloc_mw(struct rpcrdma_pd *pd, struct rpcrdma_mw **out)
{
	if (!pd || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_dev *dev = iw_dev(pd->dev);
	struct iw_mw *mw = rpcrdma_slab_alloc(&mw_slab);
	if (!mw)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_lock(&dev->mem_lock);
	uint32_t i = stag_alloc(dev);
	if (!i) {
		pthread_mutex_unlock(&dev->mem_lock);
		rpcrdma_slab_free(&mw_slab, mw);
		return RPCRDMA_ERR_NOMEM;
	}
	struct iw_stag *s = &dev->stags[i];
	s->type = IW_STAG_MW;
	s->valid = false; /* unbound until BIND_MW */
	s->pd = (struct iw_pd *)pd;
	uint8_t key = s->key;
	pthread_mutex_unlock(&dev->mem_lock);
	mw->index = i;
	mw->base.pd = pd;
	mw->base.rkey = rpcrdma_stag(i, key);
	*out = &mw->base;
	return 0;
}

int rpcrdma_iwarp_dealloc_mw(struct rpcrdma_mw *m)
{
	if (!m)
		return RPCRDMA_ERR_INVAL;
	struct iw_mw *mw = (struct iw_mw *)m;
	struct iw_dev *dev = iw_dev(m->pd->dev);
	pthread_mutex_lock(&dev->mem_lock);
	stag_free(dev, mw->index);
	pthread_mutex_unlock(&dev->mem_lock);
	rpcrdma_slab_free(&mw_slab, mw);
	return 0;
}

/* mem_lock held.  Order of checks follows RFC 5040 §8 / siw: STag valid,
 * owned by the stream's PD, access right, then base and bounds. */
static enum iw_access_err check_locked(struct iw_dev *dev, struct iw_pd *pd,
				       uint32_t stag, uint64_t to,
				       uint64_t len, unsigned access,
				       bool local)
{
	uint32_t i = stag >> 8;
	if (i == 0 || i >= dev->nstags)
		return IW_MEM_INV_STAG;
	const struct iw_stag *s = &dev->stags[i];
	if (s->type == IW_STAG_FREE || !s->valid || s->key != (stag & 0xFF))
		return IW_MEM_INV_STAG;
	if (local && s->type != IW_STAG_MR)
		return IW_MEM_INV_STAG; /* a window is never an lkey */
	if (s->pd != pd)
		return IW_MEM_PD;
	if ((s->access & access) != access)
		return IW_MEM_ACCESS;
	if (len && to + len < to)
		return IW_MEM_TO_WRAP;
	/* Overflow-safe containment of [to, to + len) in the region. */
	if (to < s->addr)
		return IW_MEM_BOUNDS;
	uint64_t off = to - s->addr;
	if (off > s->length || len > s->length - off)
		return IW_MEM_BOUNDS;
	return IW_MEM_OK;
}

enum iw_access_err rpcrdma_iwarp_mem_check(struct iw_dev *dev,
					   struct iw_pd *pd, uint32_t stag,
					   uint64_t to, uint64_t len,
					   unsigned access, bool local)
{
	pthread_mutex_lock(&dev->mem_lock);
	enum iw_access_err e = check_locked(dev, pd, stag, to, len, access, local);
	pthread_mutex_unlock(&dev->mem_lock);
	return e;
}

/* Every SGE inside the cached region, with the access asked for? */
static bool cache_hit(const struct iw_lkey_cache *c, uint32_t gen,
		      const struct rpcrdma_sge *sge, int n, bool need_write)
{
	if (!c || !c->valid || c->gen != gen ||
	    (need_write && !(c->access & RPCRDMA_ACCESS_LOCAL_WRITE)))
		return false;
	for (int i = 0; i < n; i++) {
		if (!sge[i].length)
			continue;
		if (sge[i].lkey != c->lkey || sge[i].addr < c->addr)
			return false;
		uint64_t off = sge[i].addr - c->addr;
		if (off > c->len || sge[i].length > c->len - off)
			return false;
	}
	return true;
}

int rpcrdma_iwarp_sge_resolve(struct iw_dev *dev, struct iw_pd *pd,
			      const struct rpcrdma_sge *sge, int n,
			      bool need_write, struct iw_place *out,
			      uint64_t *total, struct iw_lkey_cache *cache)
{
	uint64_t sum = 0;
	out->nseg = 0;
	out->off = 0;
	bool hit = cache_hit(cache, atomic_load(&dev->mr_gen), sge, n, need_write);
	if (!hit)
		pthread_mutex_lock(&dev->mem_lock);
	for (int i = 0; i < n; i++) {
		if (!sge[i].length)
			continue;
		if (!hit && check_locked(dev, pd, sge[i].lkey, sge[i].addr,
					 sge[i].length,
					 need_write ? RPCRDMA_ACCESS_LOCAL_WRITE : 0,
					 true) != IW_MEM_OK) {
			pthread_mutex_unlock(&dev->mem_lock);
			return RPCRDMA_ERR_PROTECTION;
		}
		out->seg[out->nseg].iov_base = (void *)(uintptr_t)sge[i].addr;
		out->seg[out->nseg].iov_len = sge[i].length;
		out->nseg++;
		sum += sge[i].length;
	}
	if (!hit) {
		if (cache && out->nseg) {
			/* Remember the first SGE's region (checked above,
			 * so its entry is a valid MR of this PD). */
			int k = 0;
			while (!sge[k].length)
				k++;
			const struct iw_stag *s = &dev->stags[sge[k].lkey >> 8];
			*cache = (struct iw_lkey_cache){
				.valid = true,
				.lkey = sge[k].lkey,
				.gen = atomic_load(&dev->mr_gen),
				.addr = s->addr, .len = s->length,
				.access = s->access};
		}
		pthread_mutex_unlock(&dev->mem_lock);
	}
	if (total)
		*total = sum;
	return 0;
}

int rpcrdma_iwarp_bind_mw(struct iw_dev *dev, struct iw_pd *pd,
			  struct iw_swqe *w)
{
	if (!w->bind_mw || !w->bind_mr)
		return RPCRDMA_ERR_INVAL;
	struct iw_mr *mr = (struct iw_mr *)w->bind_mr;
	uint32_t wi = w->bind_mw->index;
	int rc = 0;
	pthread_mutex_lock(&dev->mem_lock);
	struct iw_stag *ms = &dev->stags[mr->index];
	struct iw_stag *ws = &dev->stags[wi];
	if (ms->type != IW_STAG_MR || !ms->valid || ws->type != IW_STAG_MW ||
	    ms->pd != pd || ws->pd != pd) {
		rc = RPCRDMA_ERR_PROTECTION;
	} else if (!(ms->access & RPCRDMA_ACCESS_MW_BIND)) {
		rc = RPCRDMA_ERR_PROTECTION;
	} else if ((w->bind_access & RPCRDMA_ACCESS_REMOTE_WRITE) &&
		   !(ms->access & RPCRDMA_ACCESS_LOCAL_WRITE)) {
		rc = RPCRDMA_ERR_PROTECTION;
	} else if (w->bind_addr < ms->addr ||
		   w->bind_addr - ms->addr > ms->length ||
		   w->bind_len > ms->length - (w->bind_addr - ms->addr)) {
		rc = RPCRDMA_ERR_PROTECTION;
	} else {
		ws->valid = true;
		ws->key = (uint8_t)w->bind_rkey;
		ws->addr = w->bind_addr;
		ws->length = w->bind_len;
		ws->access = w->bind_access &
			(RPCRDMA_ACCESS_REMOTE_READ | RPCRDMA_ACCESS_REMOTE_WRITE);
	}
	pthread_mutex_unlock(&dev->mem_lock);
	return rc;
}

enum iw_access_err rpcrdma_iwarp_invalidate(struct iw_dev *dev,
					    struct iw_pd *pd, uint32_t stag,
					    bool remote)
{
	enum iw_access_err e = IW_MEM_OK;
	uint32_t i = stag >> 8;
	pthread_mutex_lock(&dev->mem_lock);
	if (i == 0 || i >= dev->nstags) {
		e = IW_MEM_INV_STAG;
	} else {
		struct iw_stag *s = &dev->stags[i];
		if (s->type == IW_STAG_FREE || s->key != (stag & 0xFF) || !s->valid)
			e = IW_MEM_INV_STAG;
		else if (s->pd != pd)
			e = IW_MEM_PD;
		else if (s->type != IW_STAG_MW)
			e = IW_MEM_ACCESS; /* RFC 5040 §5.4: only windows here */
		else
			s->valid = false;
	}
	(void)remote;
	pthread_mutex_unlock(&dev->mem_lock);
	return e;
}
