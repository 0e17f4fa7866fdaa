/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Fuzz the ONC RPC header decoder (RFC 5531 §9) and the AUTH_SYS decoder
 * (Appendix A).  On success the header must re-encode to exactly the
 * bytes it was decoded from (XDR has one encoding per value, except for
 * opaque pad bytes, which we do not check on decode) and decode again to
 * the same length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/rpc_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Zero the pad bytes after an opaque body inside copy[], so a faithful
 * re-encoding compares equal. */
static void zero_pad(uint8_t *copy, const uint8_t *data,
		     const struct rpcrdma_opaque_auth *a)
{
	if (!a->len)
		return;
	size_t off = (size_t)(a->body - data) + a->len;
	while (off % 4)
		copy[off++] = 0;
}

static void check_authsys(const struct rpcrdma_opaque_auth *a)
{
	struct rpcrdma_authsys_parms p;
	uint8_t out[RPCRDMA_AUTHSYS_MAX_BODY];
	struct rpcrdma_opaque_auth b;
	struct rpcrdma_authsys_parms q;

	if (rpcrdma_authsys_decode(a, &p) != 0)
		return;
	if (p.machinename_len > 255 || p.ngids > 16)
		abort();
	int n = rpcrdma_authsys_encode(&p, out, sizeof out);
	if (n < 0 || (uint32_t)n != a->len)
		abort();
	b.flavor = RPCRDMA_AUTH_SYS;
	b.len = (uint32_t)n;
	b.body = out;
	if (rpcrdma_authsys_decode(&b, &q) != 0 || q.ngids != p.ngids ||
	    q.uid != p.uid || q.gid != p.gid || q.stamp != p.stamp ||
	    q.machinename_len != p.machinename_len ||
	    memcmp(q.gids, p.gids, sizeof q.gids) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcrdma_rpc_msg m, m2;
	int n = rpcrdma_rpc_msg_decode(data, size, &m);

	if (n < 0) {
		if (n != RPCRDMA_ERR_TRUNCATED && n != RPCRDMA_ERR_BAD_MSG_TYPE &&
		    n != RPCRDMA_ERR_BAD_RPCVERS && n != RPCRDMA_ERR_BAD_AUTH &&
		    n != RPCRDMA_ERR_BAD_STAT)
			abort();
		return 0;
	}
	if ((size_t)n > size || n % 4)
		abort();

	uint8_t *copy = malloc(size ? size : 1);
	uint8_t *out = malloc((size_t)n ? (size_t)n : 1);
	if (!copy || !out)
		abort();
	if (size)
		memcpy(copy, data, size);
	if (m.mtype == RPCRDMA_RPC_CALL) {
		zero_pad(copy, data, &m.call.cred);
		zero_pad(copy, data, &m.call.verf);
		if (m.call.cred.flavor == RPCRDMA_AUTH_SYS)
			check_authsys(&m.call.cred);
	} else if (m.reply.stat == RPCRDMA_RPC_MSG_ACCEPTED) {
		zero_pad(copy, data, &m.reply.accepted.verf);
	}
	if (rpcrdma_rpc_msg_size(&m) != n ||
	    rpcrdma_rpc_msg_encode(&m, out, (size_t)n) != n ||
	    memcmp(out, copy, (size_t)n) != 0 ||
	    rpcrdma_rpc_msg_decode(out, (size_t)n, &m2) != n ||
	    m2.xid != m.xid || m2.mtype != m.mtype)
		abort();
	/* One byte short must be reported as truncated. */
	if (n > 0 && rpcrdma_rpc_msg_decode(out, (size_t)n - 1, &m2) !=
		     RPCRDMA_ERR_TRUNCATED)
		abort();
	free(copy);
	free(out);
	return 0;
}
