/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Protection domains, memory regions and type-2 memory windows. */
#include <errno.h>
#include <stdlib.h>

#include "provider/verbs/verbs_int.h"

unsigned rpcrdma_verbs_access(const struct rpcrdma_verbs_dev *d, unsigned access)
{
	unsigned a = 0;

	if (access & (RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_READ_SINK))
		a |= IBV_ACCESS_LOCAL_WRITE;
	/* An iWARP RDMA Read Response is a tagged DDP message placed
	 * through the sink's STag (RFC 5040 §4.4), and iWARP hardware
	 * checks remote write on it: Linux asks for it on every iWARP Read
	 * sink (drivers/infiniband/core/rw.c:114-116 in 6.1). */
	if ((access & RPCRDMA_ACCESS_READ_SINK) && (d->caps & RPCRDMA_DEV_CAP_IWARP))
		a |= IBV_ACCESS_REMOTE_WRITE;
	/* Verbs rejects remote write without local write (IBA o10-35.2.x);
	 * the iwarp provider has no such rule, so add it rather than fail. */
	if (access & RPCRDMA_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (access & RPCRDMA_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & RPCRDMA_ACCESS_MW_BIND)
		a |= IBV_ACCESS_MW_BIND;
	return a;
}

int rpcrdma_verbs_alloc_pd(struct rpcrdma_dev *dev, struct rpcrdma_pd **out)
{
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(dev);

	if (!out)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_pd *p = calloc(1, sizeof(*p));
	if (!p)
		return RPCRDMA_ERR_NOMEM;
	p->pd = ibv_alloc_pd(d->ctx);
	if (!p->pd) {
		int e = errno;
		free(p);
		return rpcrdma_verbs_errno(e ? e : ENOMEM);
	}
	p->base.dev = dev;
	*out = &p->base;
	return 0;
}

int rpcrdma_verbs_dealloc_pd(struct rpcrdma_pd *pd)
{
	struct rpcrdma_verbs_pd *p = (struct rpcrdma_verbs_pd *)pd;

	if (!p)
		return RPCRDMA_ERR_INVAL;
	int rc = ibv_dealloc_pd(p->pd);
	if (rc)
		return rpcrdma_verbs_errno(rc);
	free(p);
	return 0;
}

int rpcrdma_verbs_reg_mr(struct rpcrdma_pd *pd, void *addr, size_t length,
			 unsigned access, struct rpcrdma_mr **out)
{
	struct rpcrdma_verbs_pd *p = (struct rpcrdma_verbs_pd *)pd;

	if (!p || !out || !addr || !length)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return RPCRDMA_ERR_NOMEM;
	m->mr = ibv_reg_mr(p->pd, addr, length,
			   (int)rpcrdma_verbs_access(rpcrdma_verbs_dev(pd->dev), access));
	if (!m->mr) {
		int e = errno;
		free(m);
		return rpcrdma_verbs_errno(e ? e : ENOMEM);
	}
	m->base.pd = pd;
	m->base.addr = addr;
	m->base.length = length;
	m->base.lkey = m->mr->lkey;
	m->base.rkey = m->mr->rkey;
	m->base.access = access;
	*out = &m->base;
	return 0;
}

int rpcrdma_verbs_dereg_mr(struct rpcrdma_mr *mr)
{
	struct rpcrdma_verbs_mr *m = (struct rpcrdma_verbs_mr *)mr;

	if (!m)
		return RPCRDMA_ERR_INVAL;
	int rc = ibv_dereg_mr(m->mr);
	if (rc)
		return rpcrdma_verbs_errno(rc);
	free(m);
	return 0;
}

int rpcrdma_verbs_alloc_mw(struct rpcrdma_pd *pd, struct rpcrdma_mw **out)
{
	struct rpcrdma_verbs_pd *p = (struct rpcrdma_verbs_pd *)pd;

	if (!p || !out)
		return RPCRDMA_ERR_INVAL;
	if (!(rpcrdma_verbs_dev(pd->dev)->caps & RPCRDMA_DEV_CAP_MW))
		return RPCRDMA_ERR_NOTSUP;
	struct rpcrdma_verbs_mw *w = calloc(1, sizeof(*w));
	if (!w)
		return RPCRDMA_ERR_NOMEM;
	/* Type 2: bound by a work request on a QP of the same PD and
	 * invalidated by the peer's Send With Invalidate — the only kind that
	 * gives userspace remote invalidation. */
	w->mw = ibv_alloc_mw(p->pd, IBV_MW_TYPE_2);
	if (!w->mw) {
		int e = errno;
		free(w);
		return rpcrdma_verbs_errno(e ? e : ENOMEM);
	}
	w->base.pd = pd;
	w->base.rkey = w->mw->rkey;
	*out = &w->base;
	return 0;
}

int rpcrdma_verbs_dealloc_mw(struct rpcrdma_mw *mw)
{
	struct rpcrdma_verbs_mw *w = (struct rpcrdma_verbs_mw *)mw;

	if (!w)
		return RPCRDMA_ERR_INVAL;
	int rc = ibv_dealloc_mw(w->mw);
	if (rc)
		return rpcrdma_verbs_errno(rc);
	free(w);
	return 0;
}
