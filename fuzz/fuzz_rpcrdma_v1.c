/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target: RPC-over-RDMA v1 transport header (RFC 8166 §4.1.2,
 * RFC 5666 §4.3).  Decodes arbitrary bytes; on success re-encodes, checks
 * the encoding is byte-identical to the input header (every v1 field is an
 * integer, so it must be), decodes that again and compares the structures.
 * Also exercises version sniffing and tight decode limits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/rpcrdma_v1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rpcrdma_v1_hdr h1, h2;
static uint8_t out[RPCRDMA_DEFAULT_MAX_HEADER + 65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_common c;
	int rc;

	if (rpcrdma_common_decode(data, size, &c) == 0) {
		if (c.vers == RPCRDMA_VERSION_1 && c.proc > RPCRDMA_V1_ERROR &&
		    rpcrdma_v1_decode(data, size, NULL, &h1) !=
			    RPCRDMA_ERR_BAD_PROC)
			abort();
	} else if (rpcrdma_v1_decode(data, size, NULL, &h1) !=
		   RPCRDMA_ERR_TRUNCATED) {
		abort(); /* fewer than four words */
	}

	/* Tight limits: must not crash; success implies default success. */
	struct rpcrdma_limits tight = {2, 1, 2, 64, 1};
	int rc_tight = rpcrdma_v1_decode(data, size, &tight, &h2);

	rc = rpcrdma_v1_decode(data, size, NULL, &h1);
	if (rc_tight == 0 && rc != 0)
		abort();
	if (rc != 0)
		return 0;
	if (h1.hdr_len > size || rpcrdma_v1_size(&h1) != h1.hdr_len)
		abort();
	if (size > sizeof out)
		return 0;
	int n = rpcrdma_v1_encode(out, sizeof out, &h1);
	if (n < 0 || (size_t)n != h1.hdr_len || memcmp(out, data, (size_t)n))
		abort();
	/* Keep the payload so RDMA_MSG still has its RPC XID. */
	memcpy(out + n, data + n, size - (size_t)n);
	if (rpcrdma_v1_decode(out, size, NULL, &h2) != 0 ||
	    !rpcrdma_v1_hdr_equal(&h1, &h2) || h2.hdr_len != h1.hdr_len)
		abort();
	return 0;
}
