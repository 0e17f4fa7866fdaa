/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Invalidation strategy: how memory exposed to the peer is registered and
 * invalidated on this device, chosen once per device from what the
 * provider says it can do (enum rpcrdma_dev_cap), the way Linux's
 * xprtrdma asks its device (docs/DEVICES.md has the matrix).
 *
 * RFC 8166 §8.1.3: exposed regions are invalidated before the RPC
 * consumer sees the results; §4.5.4: when that is impossible the
 * connection MUST be closed.  RFC 8797 §3.2, §4.1: remote invalidation is
 * offered (the R bit) only when this end can honour it both ways.
 *
 *   windows          an MR and a type-2 window bound over it per chunk;
 *                    the window is invalidated by the peer's Send With
 *                    Invalidate or by our LOCAL_INV (needs MW and
 *                    LOCAL_INV).  The userspace equivalent of the
 *                    kernel's FRWR: registration and invalidation are
 *                    work requests on the send queue.
 *   deregistration   one MR per chunk, invalidated by deregistering it
 *                    before the call completes (no LOCAL_INV posted).
 *
 * Remote invalidation needs Send With Invalidate that works, and chunks
 * the peer may invalidate: windows, or plain MRs on a device whose
 * receive side invalidates any STag of the PD (INV_MR, siw).  Whether
 * our receive completions report it (RECV_INV) only decides whether a
 * chunk the peer invalidated is still invalidated again locally; both
 * are safe.
 */
#include <stdio.h>

#include "rpc/rpc_internal.h"

void rpcrdma_rpc_inv_choose(const struct rpcrdma_dev_attr *a,
			    bool want_remote_inv, struct rpc_inv *out)
{
	unsigned c = a->caps;
	const char *remote_why;

	out->use_mw = (c & RPCRDMA_DEV_CAP_MW) && (c & RPCRDMA_DEV_CAP_LOCAL_INV);
	out->local_inv = out->use_mw;
	out->remote_inv = want_remote_inv && (c & RPCRDMA_DEV_CAP_SEND_WITH_INV) &&
			  (out->use_mw || (c & RPCRDMA_DEV_CAP_INV_MR));
	if (out->remote_inv)
		remote_why = (c & RPCRDMA_DEV_CAP_RECV_INV) ?
			"offered (R) and used" :
			"offered (R) and used; received invalidations are "
			"not reported, so chunks are invalidated here as well";
	else if (!want_remote_inv)
		remote_why = "off (opts.remote_inv)";
	else if (!(c & RPCRDMA_DEV_CAP_SEND_WITH_INV))
		remote_why = "off: the device cannot post Send With Invalidate";
	else
		remote_why = "off: the peer could not invalidate a plain MR";
	rpcrdma_rpc_trace("device %s: chunks: %s; invalidation: %s; remote "
			  "invalidation: %s; RDMA Read sinks: %s (device: %s)",
			  a->name,
			  out->use_mw ? "a type-2 window over an MR per chunk"
				      : "one MR per chunk (no usable windows)",
			  out->local_inv ? "LOCAL_INV before the call completes"
					 : "deregistration before the call "
					   "completes (no LOCAL_INV)",
			  remote_why,
			  (c & RPCRDMA_DEV_CAP_IWARP)
				  ? "per call, READ_SINK (iWARP: remote write "
				    "where the device places Read Responses "
				    "through the sink's STag)"
				  : "per call, local write",
			  a->caps_why[0] ? a->caps_why : "-");
}
