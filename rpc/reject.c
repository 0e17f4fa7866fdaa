/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Why a server refused a connection, in the private data of its reject.
 *
 * RFC 8797 defines the private data of a connection request and of its
 * acceptance, not of a reject; a reject may carry private data all the
 * same (iWARP: the MPA Reply with R set, RFC 5044 §7.1.2; InfiniBand and
 * RoCE: the REJ message, up to 148 bytes).  Ours: a 4-byte magic,
 * "rrej" (no RFC 8797 Format Identifier, 0xf6ab0e18, can be taken for
 * it), then the reason as ASCII text, at most RPC_REJECT_TEXT_MAX bytes,
 * so that a capture shows it as it is.  Peers that do not know it
 * ignore it (the Linux client logs the reject and retries).
 */
#include <string.h>

#include "rpc/rpc_internal.h"

static const uint8_t magic[4] = {'r', 'r', 'e', 'j'};

int rpcrdma_rpc_reject_pdata(const char *why, uint8_t *buf, size_t cap)
{
	size_t n = strlen(why);
	if (n > RPC_REJECT_TEXT_MAX)
		n = RPC_REJECT_TEXT_MAX;
	if (cap < sizeof magic + n)
		return RPCRDMA_ERR_NOSPACE;
	memcpy(buf, magic, sizeof magic);
	memcpy(buf + sizeof magic, why, n);
	return (int)(sizeof magic + n);
}

bool rpcrdma_rpc_reject_reason(const void *pdata, size_t len, char *out,
			       size_t cap)
{
	const uint8_t *p = pdata;
	if (!p || len <= sizeof magic || cap == 0 ||
	    memcmp(p, magic, sizeof magic) != 0)
		return false;
	size_t n = len - sizeof magic, k = 0;
	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		uint8_t c = p[sizeof magic + i];
		/* A peer's bytes: printable ASCII only. */
		out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[k] = 0;
	return true;
}
