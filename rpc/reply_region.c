/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The reply region: one Reply chunk's worth of memory per connection,
 * registered once and lent to one call at a time.
 *
 * Why: a libtirpc client (rpcgen stubs) cannot say how large a result may
 * be, yet any result up to max_msg must come through (RFC 8166 §3.5.3: a
 * reply too large for the inline threshold needs a Reply chunk offered
 * with the call, §4.3.3), and a call must never be run twice to get its
 * reply through (no resend after ERR_CHUNK).  So every such call offers a
 * Reply chunk of max_msg.  Registering max_msg per call would make every
 * small call pay a registration (on an RDMA NIC: pinning megabytes); this
 * region is registered once, when the connection first needs it, and each
 * call exposes it through a memory window bound for that call only and
 * invalidated before the call completes (engine: RFC 8166 §4.4.1, no rkey
 * open after completion).  A call that finds the region lent out, or a
 * device without memory windows, falls back to memory of its own
 * registered for the call, as before.
 *
 * Cost: max_msg bytes (4 MiB + 64 KiB by default) registered per
 * connection that ever makes such a call; nothing for the others.
 *
 * Threads: lending (get / put) is an atomic flag, the lazy set-up takes
 * the region's own mutex, never the connection's lock; the region
 * outlives its connection while a reply handed to the caller still points
 * into it (reference count).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/pages.h"
#include "common/slab.h"
#include "rpc/rpc_internal.h"

struct rpc_reply_region {
	pthread_mutex_t lock;       /* set-up and close */
	atomic_int refs;            /* the connection's, and the borrower's */
	atomic_bool lent;
	atomic_bool registered;     /* buf and mr set (and the statistics) */
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_pd *pd;
	bool mw;                    /* the device has memory windows */
	bool closed;                /* the connection is gone */
	size_t len;
	uint8_t *buf;               /* NULL until first lent */
	struct rpcrdma_mr *mr;      /* LOCAL_WRITE | MW_BIND over buf */
};

/* One per connection (common/slab.h). */
static struct rpcrdma_slab region_slab = RPCRDMA_SLAB(struct rpc_reply_region);

struct rpc_reply_region *rpcrdma_rpc_region_new(struct rpc_dev *rd, size_t len)
{
	struct rpc_reply_region *r = rpcrdma_slab_alloc(&region_slab);
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	atomic_init(&r->refs, 1);
	atomic_init(&r->lent, false);
	atomic_init(&r->registered, false);
	r->ops = rd->ops;
	r->pd = rd->pd;
	r->mw = (rd->attr.caps & RPCRDMA_DEV_CAP_MW) != 0;
	r->len = len & ~(size_t)7;
	return r;
}

static void region_unref(struct rpc_reply_region *r)
{
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	rpcrdma_pages_free(r->buf, r->len);
	pthread_mutex_destroy(&r->lock);
	rpcrdma_slab_free(&region_slab, r);
}

void *rpcrdma_rpc_region_get(struct rpc_reply_region *r, size_t need)
{
	if (!r || need > r->len || atomic_exchange(&r->lent, true))
		return NULL;
	pthread_mutex_lock(&r->lock);
	void *buf = NULL;
	if (!r->closed && !r->buf) {
		/* Pages, as long-lived as the connection and given back
		 * when it goes, whatever the application's malloc does
		 * (common/pages.h); page-aligned for registration, and
		 * nothing to clear: the peer writes it and we read only
		 * what the engine says was written. */
		void *p = rpcrdma_pages_alloc(r->len);
		if (p) {
			unsigned acc = RPCRDMA_ACCESS_LOCAL_WRITE |
				       (r->mw ? RPCRDMA_ACCESS_MW_BIND : 0);
			if (r->ops->reg_mr(r->pd, p, r->len, acc, &r->mr) == 0) {
				r->buf = p;
				atomic_store(&r->registered, true);
			} else {
				r->mr = NULL;
				rpcrdma_pages_free(p, r->len);
			}
		}
	}
	if (!r->closed && r->buf) {
		buf = r->buf;
		atomic_fetch_add(&r->refs, 1);
	}
	pthread_mutex_unlock(&r->lock);
	if (!buf)
		atomic_store(&r->lent, false); /* retried by the next call */
	return buf;
}

void rpcrdma_rpc_region_put(struct rpc_reply_region *r)
{
	if (!r)
		return;
	atomic_store(&r->lent, false);
	region_unref(r);
}

struct rpcrdma_mr *rpcrdma_rpc_region_mr(struct rpc_reply_region *r,
					 const void *addr, size_t len)
{
	/* Called by the engine's mem_reg under the connection lock, for
	 * any call's memory, while another thread may be setting the
	 * region up (rpcrdma_rpc_region_get, under the region's own mutex):
	 * buf and mr are read only once `registered` says they are set
	 * (release by that store, acquire here; ThreadSanitizer saw the
	 * plain read race the set-up).  They stay until the connection is
	 * destroyed, after its engine. */
	if (!r || !r->mw ||
	    !atomic_load_explicit(&r->registered, memory_order_acquire) ||
	    !r->mr || !r->buf)
		return NULL;
	const uint8_t *a = addr;
	if (a < r->buf || len > r->len || (size_t)(a - r->buf) > r->len - len)
		return NULL;
	return r->mr;
}

unsigned rpcrdma_rpc_region_registrations(struct rpc_reply_region *r)
{
	return r && atomic_load(&r->registered) ? 1 : 0;
}

void rpcrdma_rpc_region_close(struct rpc_reply_region *r)
{
	if (!r)
		return;
	/* The engine is gone, and every window it bound with it; the
	 * registration goes while the PD lives.  A reply still held by a
	 * caller keeps the memory (reference count). */
	pthread_mutex_lock(&r->lock);
	r->closed = true;
	if (r->mr)
		r->ops->dereg_mr(r->mr);
	r->mr = NULL;
	pthread_mutex_unlock(&r->lock);
	region_unref(r);
}
