/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
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
/* The kernel's soft-iWARP: SIW_VENDOR_ID, "bmt" (drivers/infiniband/sw/
 * siw/siw.h:20 in Linux 6.1). */
#define RPCRDMA_VERBS_SIW_VENDOR_ID 0x626d74u

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

/* What this device does for registration and invalidation, asked of the
 * device (ibv_query_device_ex, transport type) the way Linux's xprtrdma
 * does (net/sunrpc/xprtrdma/frwr_ops.c, frwr_query_device()), corrected
 * by what its userspace driver is known to do (docs/DEVICES.md):
 *
 *   MW          type-2 windows (device_cap_flags MEM_WINDOW_TYPE_2A/2B
 *               and max_mw > 0): the per-RPC registration.
 *   LOCAL_INV   from userspace LOCAL_INV invalidates windows (an MR of
 *               ibv_reg_mr is no fast-registration MR: rxe refuses to
 *               invalidate it, rxe_mr.c rxe_invalidate_mr()), so it
 *               comes with MW.
 *   SEND_WITH_INV, RECV_INV  the "memory management extensions"
 *               (MEM_MGT_EXTENSIONS, IBA 10.6.3.4 base memory
 *               management).
 *   IWARP       the transport (RDMA Read sinks, rpcrdma_verbs_access).
 *
 * libsiw (rdma-core providers/siw/siw.c, v44.0), against what the kernel
 * driver claims (MEM_MGT_EXTENSIONS, siw_verbs.c:135):
 *   - IBV_WR_LOCAL_INV and IBV_WR_BIND_MW map to an invalid opcode
 *     (lines 497-498) and fail at post (533-536); max_mw is 0 (siw.h:32):
 *     no windows, no local invalidation;
 *   - SEND_WITH_INV sends wr.rdma.rkey (line 530): works with the
 *     libsiw;
 *   - poll_cq sets wc_flags to 0 (line 788): a received invalidation is
 *     never reported, although the kernel did it;
 *   - the kernel invalidates any STag of the PD named by a Send With
 *     Invalidate, MRs included (siw_mem.c:292-311, siw_invalidate_stag).
 */
static void device_caps(struct rpcrdma_verbs_dev *d)
{
	const struct ibv_device_attr *a = &d->attr;
	uint64_t f = (uint64_t)a->device_cap_flags;
	bool iwarp = d->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	bool siw = iwarp && a->vendor_id == RPCRDMA_VERBS_SIW_VENDOR_ID;
	bool mw = (f & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
			IBV_DEVICE_MEM_WINDOW_TYPE_2B)) && a->max_mw > 0;
	bool mgt = (f & IBV_DEVICE_MEM_MGT_EXTENSIONS) != 0;
	size_t at = 0;

	d->caps = 0;
	if (iwarp)
		d->caps |= RPCRDMA_DEV_CAP_IWARP;
	if (mw && !siw)
		d->caps |= RPCRDMA_DEV_CAP_MW | RPCRDMA_DEV_CAP_LOCAL_INV;
	if (mgt)
		d->caps |= RPCRDMA_DEV_CAP_SEND_WITH_INV;
	if (mgt && !siw)
		d->caps |= RPCRDMA_DEV_CAP_RECV_INV;
	d->libsiw = siw;
	if (siw)
		d->caps |= RPCRDMA_DEV_CAP_INV_MR;
	/* Shared receive queues where the device has them (rxe, and siw
	 * with libsiw's SRQ of rdma-core v44: siw.c:211-288, 711-748). */
	if (a->max_srq > 0 && a->max_srq_wr > 0 && a->max_srq_sge > 0)
		d->caps |= RPCRDMA_DEV_CAP_SRQ;
	at += (size_t)snprintf(d->caps_why + at, sizeof(d->caps_why) - at,
			       "%s, vendor 0x%x, max_mw %d, %s%s, max_srq %d",
			       iwarp ? "iWARP" : "InfiniBand/RoCE",
			       (unsigned)a->vendor_id, a->max_mw,
			       mw ? "type-2 windows, " : "",
			       mgt ? "MEM_MGT_EXTENSIONS" : "no MEM_MGT_EXTENSIONS",
			       a->max_srq);
	if (siw && at < sizeof(d->caps_why))
		snprintf(d->caps_why + at, sizeof(d->caps_why) - at,
			 "; siw (libsiw): no windows and LOCAL_INV refused "
			 "(providers/siw/siw.c:497-498), Send With Invalidate "
			 "STag from wr.rdma.rkey (:530), no WC_WITH_INV (:788)");
	else if (d->rxe_inv_quirk && at < sizeof(d->caps_why))
		snprintf(d->caps_why + at, sizeof(d->caps_why) - at,
			 "; rxe: WITH_INV read from the kernel's flag");
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
	/* The extended query falls back to the plain one in libibverbs
	 * for drivers without it. */
	struct ibv_device_attr_ex ex;
	memset(&ex, 0, sizeof(ex));
	int qrc = ibv_query_device_ex(ctx, NULL, &ex);
	if (qrc == 0)
		d->attr = ex.orig_attr;
	if (qrc || ibv_query_port(ctx, 1, &d->port)) {
		int e = errno;
		rdma_free_devices(list);
		free(d);
		no_device(ibv_get_device_name(ctx->device), "cannot be queried");
		return e ? rpcrdma_verbs_errno(e) : RPCRDMA_ERR_NO_DEVICE;
	}
	d->rxe_inv_quirk = d->attr.vendor_id == RPCRDMA_VERBS_RXE_VENDOR_ID;
	device_caps(d);
	if (rpcrdma_verbs_qp_table_init(d) < 0) {
		rdma_free_devices(list);
		free(d);
		return RPCRDMA_ERR_NOMEM;
	}
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
	free(d->qps);
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
	attr->max_sge_rd = a->max_sge_rd > 0 ? clamp_u32(a->max_sge_rd) : attr->max_sge;
	attr->max_cqe = clamp_u32(a->max_cqe);
	attr->max_mr_size = a->max_mr_size;
	attr->max_msg_size = d->port.max_msg_sz;
	attr->max_qp_rd_atom = clamp_u32(a->max_qp_rd_atom);
	attr->max_qp_init_rd_atom = clamp_u32(a->max_qp_init_rd_atom);
	attr->max_private_data = d->ctx->device->transport_type == IBV_TRANSPORT_IWARP ?
		RPCRDMA_VERBS_IWARP_PRIVATE_DATA : RPCRDMA_VERBS_IB_PRIVATE_DATA;
	attr->caps = d->caps;
	attr->vendor_id = a->vendor_id;
	if (d->caps & RPCRDMA_DEV_CAP_SRQ) {
		attr->max_srq = clamp_u32(a->max_srq);
		attr->max_srq_wr = clamp_u32(a->max_srq_wr);
		attr->max_srq_sge = clamp_u32(a->max_srq_sge);
	}
	snprintf(attr->caps_why, sizeof(attr->caps_why), "%s", d->caps_why);
	/* iWARP reads into one Tagged Buffer per Read (RFC 5040 §5.2.2):
	 * max_sge_rd is 1 there; our Reads have one SGE anyway. */
	return 0;
}
