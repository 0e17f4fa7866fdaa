/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The "verbs" provider's ops table (rdma-core: libibverbs + librdmacm) and
 * its errno translation. */
#include <errno.h>

#include "provider/verbs/verbs_int.h"

int rpcrdma_verbs_errno(int err)
{
	switch (err) {
	case 0: return RPCRDMA_OK;
	case EINVAL: return RPCRDMA_ERR_INVAL;
	case ENOMEM: return RPCRDMA_ERR_NOMEM;
	case EAGAIN: return RPCRDMA_ERR_AGAIN;
	case ETIMEDOUT: return RPCRDMA_ERR_TIMEOUT;
	case EBUSY: return RPCRDMA_ERR_BUSY;
	case EADDRINUSE: return RPCRDMA_ERR_BUSY;
	case ENOENT: return RPCRDMA_ERR_NOENT;
	case EOPNOTSUPP: return RPCRDMA_ERR_NOTSUP;
	case ENOSYS: return RPCRDMA_ERR_NOTSUP;
	case ENODEV: return RPCRDMA_ERR_NO_DEVICE;
	case ENXIO: return RPCRDMA_ERR_NO_DEVICE;
	case EADDRNOTAVAIL: return RPCRDMA_ERR_ADDR;
	case EAFNOSUPPORT: return RPCRDMA_ERR_ADDR;
	case ENETUNREACH: return RPCRDMA_ERR_ADDR;
	case EHOSTUNREACH: return RPCRDMA_ERR_ADDR;
	case ECONNREFUSED: return RPCRDMA_ERR_CONNREFUSED;
	case ECONNRESET: return RPCRDMA_ERR_DISCONNECTED;
	case ENOTCONN: return RPCRDMA_ERR_DISCONNECTED;
	case EPERM: return RPCRDMA_ERR_PROTECTION;
	case EACCES: return RPCRDMA_ERR_PROTECTION;
	case EOVERFLOW: return RPCRDMA_ERR_OVERFLOW;
	default: return RPCRDMA_ERR_SYSTEM;
	}
}

const struct rpcrdma_provider_ops rpcrdma_verbs_ops = {
	.name = "verbs",
	.open = rpcrdma_verbs_open,
	.close = rpcrdma_verbs_close,
	.query = rpcrdma_verbs_query,
	.alloc_pd = rpcrdma_verbs_alloc_pd,
	.dealloc_pd = rpcrdma_verbs_dealloc_pd,
	.reg_mr = rpcrdma_verbs_reg_mr,
	.dereg_mr = rpcrdma_verbs_dereg_mr,
	.alloc_mw = rpcrdma_verbs_alloc_mw,
	.dealloc_mw = rpcrdma_verbs_dealloc_mw,
	.create_cq = rpcrdma_verbs_create_cq,
	.destroy_cq = rpcrdma_verbs_destroy_cq,
	.poll_cq = rpcrdma_verbs_poll_cq,
	.req_notify_cq = rpcrdma_verbs_req_notify_cq,
	.cq_fd = rpcrdma_verbs_cq_fd,
	.ack_cq_events = rpcrdma_verbs_ack_cq_events,
	.create_qp = rpcrdma_verbs_create_qp,
	.destroy_qp = rpcrdma_verbs_destroy_qp,
	.post_send = rpcrdma_verbs_post_send,
	.post_recv = rpcrdma_verbs_post_recv,
	.get_terminate = rpcrdma_verbs_get_terminate,
	.create_channel = rpcrdma_verbs_create_channel,
	.destroy_channel = rpcrdma_verbs_destroy_channel,
	.get_cm_event = rpcrdma_verbs_get_cm_event,
	.ack_cm_event = rpcrdma_verbs_ack_cm_event,
	.create_id = rpcrdma_verbs_create_id,
	.destroy_id = rpcrdma_verbs_destroy_id,
	.resolve = rpcrdma_verbs_resolve,
	.listen = rpcrdma_verbs_listen,
	.connect = rpcrdma_verbs_connect,
	.accept = rpcrdma_verbs_accept,
	.reject = rpcrdma_verbs_reject,
	.disconnect = rpcrdma_verbs_disconnect,
	.create_srq = rpcrdma_verbs_create_srq,
	.destroy_srq = rpcrdma_verbs_destroy_srq,
	.post_srq_recv = rpcrdma_verbs_post_srq_recv,
	.modify_srq = rpcrdma_verbs_modify_srq,
	.query_srq = rpcrdma_verbs_query_srq,
	/* qp_counters: NULL.  The device places the data itself; nothing
	 * here copies payload. */
};
