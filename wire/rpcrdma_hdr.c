/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * An RDMA_MSG / RDMA_NOMSG header in either version (rpcrdma_hdr.h).
 */
#include "wire/rpcrdma_hdr.h"

#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

size_t rpcrdma_hdr_size(uint32_t vers, const struct rpcrdma_v1_hdr *h)
{
	/* Version 2 adds rdma_flags and rdma_inv_handle (draft §3.2, §3.3). */
	return rpcrdma_v1_size(h) + (vers == RPCRDMA_VERSION_2 ? 8 : 0);
}

int rpcrdma_hdr_encode(void *buf, size_t cap, uint32_t vers,
		       const struct rpcrdma_v1_hdr *h, bool response,
		       uint32_t inv_handle)
{
	if (vers != RPCRDMA_VERSION_2)
		return rpcrdma_v1_encode(buf, cap, h);
	if (h->proc != RPCRDMA_V2_MSG && h->proc != RPCRDMA_V2_NOMSG)
		return RPCRDMA_ERR_BAD_PROC;
	/* RDMA2_NOMSG carries its Payload stream in a chunk, so it has
	 * one (rpcrdma_v2_encode() refuses it likewise). */
	if (h->proc == RPCRDMA_V2_NOMSG && rpcrdma_chunk_lists_empty(&h->chunks))
		return RPCRDMA_ERR_BAD_CHUNK;
	struct rpcrdma_xdr_enc e;
	int rc;
	rpcrdma_xdr_enc_init(&e, buf, cap);
	if ((rc = rpcrdma_xdr_put_u32(&e, h->xid)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, RPCRDMA_VERSION_2)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->credit)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->proc)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, response ? RPCRDMA_V2_F_RESPONSE : 0)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, inv_handle)) ||
	    (rc = rpcrdma_chunk_lists_encode(&e, &h->chunks)))
		return rc;
	return (int)e.pos;
}
