/* The provider objects a client or server shares among its connections:
 * device, protection domain and CM event channel. */
#include <string.h>

#include "rpc/rpc_internal.h"

int rpcrdma_rpc_dev_open(const struct rpcrdma_opts *o, struct rpc_dev *rd)
{
	struct rpcrdma_dev_params p;
	int rc;

	memset(rd, 0, sizeof(*rd));
	rd->ops = rpcrdma_provider_find(o->provider);
	if (!rd->ops)
		return RPCRDMA_ERR_NOTSUP;
	memset(&p, 0, sizeof(p));
	p.device = o->device;
	p.connect_timeout_ms = o->connect_timeout_ms;
	/* Every CQ of ours is attended whenever work may be pending (the
	 * caller driving it, the loop, svc_run(): progress.c). */
	p.manual_progress = true;
	rc = rd->ops->open(&p, &rd->dev);
	if (rc < 0)
		return rc;
	rc = rd->ops->query(rd->dev, &rd->attr);
	if (rc == 0)
		rc = rd->ops->alloc_pd(rd->dev, &rd->pd);
	if (rc == 0)
		rc = rd->ops->create_channel(rd->dev, &rd->ch);
	if (rc < 0) {
		rpcrdma_rpc_dev_close(rd);
		return rc;
	}
	return 0;
}

void rpcrdma_rpc_dev_close(struct rpc_dev *rd)
{
	if (!rd->ops)
		return;
	if (rd->ch)
		rd->ops->destroy_channel(rd->ch);
	if (rd->pd)
		rd->ops->dealloc_pd(rd->pd);
	if (rd->dev)
		rd->ops->close(rd->dev);
	memset(rd, 0, sizeof(*rd));
}
