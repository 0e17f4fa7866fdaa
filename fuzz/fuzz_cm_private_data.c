/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Fuzz the RFC 8797 CM private data decoders: decode() and find() on
 * arbitrary bytes must never fail hard, must give the §5.1 defaults when
 * nothing is recognised, and a recognised message must re-encode to the
 * same octets (reserved bits aside) and re-decode to the same values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cm_private_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_pd(const struct rpcrdma_cm_pdata *pd)
{
	if (pd->max_send < 1024 || pd->max_send > 262144 ||
	    pd->max_recv < 1024 || pd->max_recv > 262144)
		abort();
	if (!pd->present && (pd->remote_inv || pd->max_send != 1024 ||
			     pd->max_recv != 1024 || pd->status == 0))
		abort();
	if (pd->present && pd->status != 0)
		abort();
}

static void round_trip(const struct rpcrdma_cm_pdata *pd, const uint8_t *src)
{
	uint8_t out[8];
	struct rpcrdma_cm_pdata again;

	if (rpcrdma_cm_pdata_encode(out, sizeof out, pd->max_send,
				    pd->max_recv, pd->remote_inv) != 8)
		abort();
	/* Same octets except reserved bits, which we always send as 0. */
	if (memcmp(out, src, 5) != 0 || out[5] != (src[5] & 1) ||
	    out[6] != src[6] || out[7] != src[7])
		abort();
	if (!rpcrdma_cm_pdata_decode(out, sizeof out, &again) ||
	    again.max_send != pd->max_send || again.max_recv != pd->max_recv ||
	    again.remote_inv != pd->remote_inv)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_cm_pdata pd;
	struct rpcrdma_inline_thresholds t;
	size_t off = 0;

	bool ok = rpcrdma_cm_pdata_decode(data, size, &pd);
	check_pd(&pd);
	if (ok != pd.present)
		abort();
	if (ok)
		round_trip(&pd, data);

	/* Thresholds never exceed either side's maxima, never below 1 KiB. */
	size_t ours = size ? (size_t)data[0] * 2048u : 0;
	rpcrdma_cm_pdata_thresholds(ours, ours + 1024, size & 1, &pd, &t);
	if (t.send < 1024 || t.recv < 1024 || t.send > pd.max_recv ||
	    t.recv > pd.max_send || (t.send_with_inv && !pd.remote_inv))
		abort();

	ok = rpcrdma_cm_pdata_find(data, size, &pd, &off);
	check_pd(&pd);
	if (ok) {
		if (off > size || size - off < 8)
			abort();
		round_trip(&pd, data + off);
	}
	return 0;
}
