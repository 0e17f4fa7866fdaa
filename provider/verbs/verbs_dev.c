/* Device: open/close/query over librdmacm's device list. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/verbs/verbs_int.h"

/* Private data that fits in every CM message of an IB/RoCE connection: the
 * IB CM REQ carries 92 bytes, of which the RDMA CM header takes 36 (REP
 * allows 196, REJ 148, so REQ is the limit).  iWARP's MPA carries more, but
 * the kernel iw_cm path caps it; RFC 8797's message needs only 8. */
#define RPCRDMA_VERBS_IB_PRIVATE_DATA 56u
#define RPCRDMA_VERBS_IWARP_PRIVATE_DATA 196u
/* Soft-RoCE reports this vendor id (drivers/infiniband/sw/rxe). */
#define RPCRDMA_VERBS_RXE_VENDOR_ID 0xffffffu

/* One line on stderr naming the device that is missing (or that none is
 * there at all) and what to do.  The iwarp provider is the software
 * fallback that needs no kernel RDMA support, so point at it. */
static void no_device(const char *name, const char *why)
{
	if (name)
		fprintf(stderr,
			"rpcrdma verbs provider: RDMA device \"%s\" %s; "
			"check `rdma link` / `ibv_devices`, or use the \"iwarp\" "
			"provider (software iWARP over TCP)\n", name, why);
	else
		fprintf(stderr,
			"rpcrdma verbs provider: %s (is a driver such as "
			"rdma_rxe loaded and a device created, e.g. "
			"`rdma link add rxe0 type rxe netdev eth0`?); or use the "
			"\"iwarp\" provider (software iWARP over TCP)\n", why);
}

int rpcrdma_verbs_open(const struct rpcrdma_dev_params *params,
		       struct rpcrdma_dev **out)
{
	const char *want = params ? params->device : NULL;
	int n = 0;

	if (!out)
		return RPCRDMA_ERR_INVAL;
	*out = NULL;
	/* librdmacm's list, not ibv_get_device_list(): cm_ids are bound to
	 * librdmacm's own ibv_context of a device, and rdma_create_qp insists
	 * that the PD lives on that same context. */
	struct ibv_context **list = rdma_get_devices(&n);
	if (!list || n <= 0) {
		int e = errno;
		if (list)
			rdma_free_devices(list);
		bool none = e == ENODEV || e == ENOENT || !e;
		if (want)
			no_device(want, none ? "not found: this machine has "
					       "no RDMA device at all" :
					       "cannot be reached: rdma_cm is "
					       "not available");
		else
			no_device(NULL, none ? "no RDMA device found" :
					"no RDMA device can be reached "
					"(rdma_cm not available)");
		return RPCRDMA_ERR_NO_DEVICE;
	}
	struct ibv_context *ctx = NULL;
	for (int i = 0; i < n; i++) {
		if (!want || strcmp(ibv_get_device_name(list[i]->device), want) == 0) {
			ctx = list[i];
			break;
		}
	}
	if (!ctx) {
		char have[256] = "";
		size_t at = 0;
		for (int i = 0; i < n && at < sizeof(have); i++)
			at += (size_t)snprintf(have + at, sizeof(have) - at,
					       "%s%s", i ? ", " : "",
					       ibv_get_device_name(list[i]->device));
		char why[320];
		snprintf(why, sizeof(why), "not found (devices here: %s)", have);
		rdma_free_devices(list);
		no_device(want, why);
		return RPCRDMA_ERR_NO_DEVICE;
	}
	struct rpcrdma_verbs_dev *d = calloc(1, sizeof(*d));
	if (!d) {
		rdma_free_devices(list);
		return RPCRDMA_ERR_NOMEM;
	}
	d->base.ops = &rpcrdma_verbs_ops;
	d->list = list;
	d->ctx = ctx;
	d->connect_timeout_ms = params && params->connect_timeout_ms ?
		params->connect_timeout_ms : 5000;
	if (ibv_query_device(ctx, &d->attr) || ibv_query_port(ctx, 1, &d->port)) {
		int e = errno;
		rdma_free_devices(list);
		free(d);
		no_device(ibv_get_device_name(ctx->device), "cannot be queried");
		return e ? rpcrdma_verbs_errno(e) : RPCRDMA_ERR_NO_DEVICE;
	}
	d->rxe_inv_quirk = d->attr.vendor_id == RPCRDMA_VERBS_RXE_VENDOR_ID;
	pthread_mutex_init(&d->lock, NULL);
	d->next_uid = 1;
	*out = &d->base;
	return 0;
}

void rpcrdma_verbs_close(struct rpcrdma_dev *dev)
{
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(dev);

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	rdma_free_devices(d->list);
	free(d);
}

static uint32_t clamp_u32(int v)
{
	return v < 0 ? 0 : (uint32_t)v;
}

int rpcrdma_verbs_query(struct rpcrdma_dev *dev, struct rpcrdma_dev_attr *attr)
{
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(dev);
	const struct ibv_device_attr *a = &d->attr;

	if (!attr)
		return RPCRDMA_ERR_INVAL;
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->name, sizeof(attr->name), "%s",
		 ibv_get_device_name(d->ctx->device));
	attr->max_qp_wr = clamp_u32(a->max_qp_wr);
	attr->max_sge = clamp_u32(a->max_sge);
	attr->max_cqe = clamp_u32(a->max_cqe);
	attr->max_mr_size = a->max_mr_size;
	attr->max_msg_size = d->port.max_msg_sz;
	attr->max_qp_rd_atom = clamp_u32(a->max_qp_rd_atom);
	attr->max_qp_init_rd_atom = clamp_u32(a->max_qp_init_rd_atom);
	attr->max_private_data = d->ctx->device->transport_type == IBV_TRANSPORT_IWARP ?
		RPCRDMA_VERBS_IWARP_PRIVATE_DATA : RPCRDMA_VERBS_IB_PRIVATE_DATA;
	/* Per-RPC registration needs type-2 windows (2A or 2B both bind
	 * with a post_send); without them upper layers must not advertise
	 * remote invalidation (RFC 8797 §3.2, §4.1 R field). */
	if ((a->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				    IBV_DEVICE_MEM_WINDOW_TYPE_2B)) && a->max_mw > 0)
		attr->caps |= RPCRDMA_DEV_CAP_MW;
	/* Send With Invalidate and Local Invalidate are the IB "memory
	 * management extensions" (base memory management, IBA 10.6.3.4). */
	if (a->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS)
		attr->caps |= RPCRDMA_DEV_CAP_SEND_WITH_INV;
	return 0;
}
