/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA common prefix and decode limits (see rpcrdma_common.h).
 */
#include "wire/rpcrdma_common.h"

#include "wire/xdr.h"

struct rpcrdma_limits rpcrdma_limits_default(void)
{
	struct rpcrdma_limits l = {
		.max_read_segments = RPCRDMA_MAX_READ_SEGMENTS,
		.max_write_chunks = RPCRDMA_MAX_WRITE_CHUNKS,
		.max_chunk_segments = RPCRDMA_MAX_CHUNK_SEGMENTS,
		.max_header_size = RPCRDMA_DEFAULT_MAX_HEADER,
		.max_properties = RPCRDMA_V2_MAX_PROPS,
	};
	return l;
}

/* RFC 8166 §4.2 / draft §3.1: the first four words keep their meaning and
 * position in every version, so they can be read before the version is
 * known. */
int rpcrdma_common_decode(const void *buf, size_t len,
			  struct rpcrdma_common *c)
{
	struct rpcrdma_xdr_dec d;

	if (!c || (!buf && len))
		return RPCRDMA_ERR_INVAL;
	if (len < RPCRDMA_COMMON_LEN)
		return RPCRDMA_ERR_TRUNCATED;
	rpcrdma_xdr_dec_init(&d, buf, len);
	(void)rpcrdma_xdr_get_u32(&d, &c->xid);
	(void)rpcrdma_xdr_get_u32(&d, &c->vers);
	(void)rpcrdma_xdr_get_u32(&d, &c->credit);
	(void)rpcrdma_xdr_get_u32(&d, &c->proc);
	return 0;
}
