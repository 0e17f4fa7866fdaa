/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libFuzzer target: RPC-over-RDMA v2 transport header
 * (draft-cel-nfsv4-rpcrdma-version-two-09 §3, §5, §6).  Decodes arbitrary
 * bytes; on success re-encodes (reserved flag bits become zero, property
 * padding becomes zero), decodes that again, compares the structures and
 * checks a second encoding is byte-identical to the first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/rpcrdma_v2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rpcrdma_v2_hdr h1, h2;
static uint8_t out[RPCRDMA_DEFAULT_MAX_HEADER + 65536];
static uint8_t out2[RPCRDMA_DEFAULT_MAX_HEADER + 65536];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_common c;
	int rc;

	(void)rpcrdma_common_decode(data, size, &c);

	struct rpcrdma_limits tight = {2, 1, 2, 64, 1};
	int rc_tight = rpcrdma_v2_decode(data, size, &tight, &h2);

	rc = rpcrdma_v2_decode(data, size, NULL, &h1);
	if (rc_tight == 0 && rc != 0)
		abort();
	if (rc != 0)
		return 0;
	if (h1.hdr_len > size || rpcrdma_v2_size(&h1) != h1.hdr_len)
		abort();
	if (size > sizeof out)
		return 0;
	int n = rpcrdma_v2_encode(out, sizeof out, &h1);
	if (n < 0 || (size_t)n != h1.hdr_len)
		abort();
	/* The common words are copied verbatim (only the flags word and
	 * property padding may differ). */
	if (memcmp(out, data, RPCRDMA_COMMON_LEN))
		abort();
	memcpy(out + n, data + n, size - (size_t)n);
	if (rpcrdma_v2_decode(out, size, NULL, &h2) != 0 ||
	    !rpcrdma_v2_hdr_equal(&h1, &h2, true) || h2.hdr_len != h1.hdr_len ||
	    (h2.flags & RPCRDMA_V2_F_RESERVED))
		abort();
	int n2 = rpcrdma_v2_encode(out2, sizeof out2, &h2);
	if (n2 != n || memcmp(out, out2, (size_t)n))
		abort();
	return 0;
}
