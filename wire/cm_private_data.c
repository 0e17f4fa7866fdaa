/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 1 CM Private Data (RFC 8797).  See the header for
 * the layout.  Compared with draft-cel-nfsv4-rpcrdma-cm-pvt-msg-00, which
 * this RFC replaced:
 *  - the draft said reserved flag bits "must be clear"; RFC 8797 §4 says
 *    "Senders MUST set these bits to zero, and receivers MUST ignore
 *    their value", so we write zero and ignore them on receipt;
 *  - the draft named the remote-invalidation flag both "bit 15" (§3.1.1)
 *    and "bit 8" (§4); RFC 8797 §4 fixes it as R, the last bit of octet 5
 *    (bit 15 of the second word, §5.1), which is what Linux sends as 0x01;
 *  - RFC 8797 §5.2 adds searching the buffer for the Format Identifier.
 */
#include "wire/cm_private_data.h"

#include <string.h>

#include "wire/xdr.h"

uint8_t rpcrdma_cm_pdata_size_to_code(size_t bytes)
{
	/* RFC 8797 §4.2: "a sender computes the encoded value by dividing
	 * its actual buffer size, in octets, by 1024 and subtracting one".
	 * Integer division rounds down, so we never advertise more than the
	 * buffer holds; out-of-range sizes are clamped to 1 KiB..256 KiB. */
	if (bytes < RPCRDMA_CM_PDATA_MIN_SIZE)
		return 0;
	if (bytes > RPCRDMA_CM_PDATA_MAX_SIZE)
		return 255;
	return (uint8_t)(bytes / 1024u - 1u);
}

uint32_t rpcrdma_cm_pdata_code_to_size(uint8_t code)
{
	/* RFC 8797 §4.2: "it adds one to the encoded value and then
	 * multiplies that result by 1024". */
	return ((uint32_t)code + 1u) * 1024u;
}

int rpcrdma_cm_pdata_encode(void *buf, size_t cap, size_t max_send,
			    size_t max_recv, bool remote_inv)
{
	if (!buf)
		return RPCRDMA_ERR_INVAL;
	if (cap < RPCRDMA_CM_PDATA_LEN)
		return RPCRDMA_ERR_NOSPACE;
	uint8_t *p = buf;
	/* §4: Format Identifier "always 0xf6ab0e18, in network byte order" */
	p[0] = (uint8_t)(RPCRDMA_CM_PDATA_MAGIC >> 24);
	p[1] = (uint8_t)(RPCRDMA_CM_PDATA_MAGIC >> 16);
	p[2] = (uint8_t)(RPCRDMA_CM_PDATA_MAGIC >> 8);
	p[3] = (uint8_t)RPCRDMA_CM_PDATA_MAGIC;
	p[4] = RPCRDMA_CM_PDATA_VERSION;
	/* §4: "Reserved: ... Senders MUST set these bits to zero" */
	p[5] = remote_inv ? RPCRDMA_CM_PDATA_FLAG_REMOTE_INV : 0;
	p[6] = rpcrdma_cm_pdata_size_to_code(max_send);
	p[7] = rpcrdma_cm_pdata_size_to_code(max_recv);
	return (int)RPCRDMA_CM_PDATA_LEN;
}

void rpcrdma_cm_pdata_defaults(struct rpcrdma_cm_pdata *pd)
{
	/* RFC 8797 §5.1: "the peer MUST behave as if a Private Data message
	 * was received in which (1) bit 15 of the Flags field is zero and
	 * (2) both Size fields contain the value zero." */
	memset(pd, 0, sizeof(*pd));
	pd->max_send = rpcrdma_cm_pdata_code_to_size(0);
	pd->max_recv = rpcrdma_cm_pdata_code_to_size(0);
}

/* Check and decode the 8 octets at p, of which avail are readable. */
static int decode_at(const uint8_t *p, size_t avail,
		     struct rpcrdma_cm_pdata *pd)
{
	/* §4: "If the capacity of the Private Data field is too small to
	 * contain this message format ... the CM Private Data field cannot
	 * be used"; §5.2: check "the size of the content does not overrun
	 * the length of the buffer". */
	if (avail < 4)
		return RPCRDMA_ERR_TRUNCATED;
	/* §5.2: "If the RPC-over-RDMA version 1 CM Private Data Format
	 * Identifier is not present, an RPC-over-RDMA version 1 receiver
	 * MUST behave as if no RPC-over-RDMA version 1 CM Private Data has
	 * been provided." */
	if (rpcrdma_be32_get(p) != RPCRDMA_CM_PDATA_MAGIC)
		return RPCRDMA_ERR_BAD_MAGIC;
	if (avail < RPCRDMA_CM_PDATA_LEN)
		return RPCRDMA_ERR_TRUNCATED;
	/* §5.2: "the receiver should check that the format version number
	 * field contains a valid and recognized version number".  Only 1 is
	 * defined (§4); a later version with the same identifier (§6) is
	 * not understood, so it counts as no private data (§5.1), as Linux
	 * does. */
	if (p[4] != RPCRDMA_CM_PDATA_VERSION)
		return RPCRDMA_ERR_BAD_VERSION;
	pd->present = true;
	pd->status = 0;
	pd->version = p[4];
	pd->flags = p[5];
	/* §4: reserved bits: "receivers MUST ignore their value" */
	pd->remote_inv = (p[5] & RPCRDMA_CM_PDATA_FLAG_REMOTE_INV) != 0;
	pd->send_code = p[6];
	pd->recv_code = p[7];
	pd->max_send = rpcrdma_cm_pdata_code_to_size(p[6]);
	pd->max_recv = rpcrdma_cm_pdata_code_to_size(p[7]);
	return 0;
}

bool rpcrdma_cm_pdata_decode(const void *buf, size_t len,
			     struct rpcrdma_cm_pdata *pd)
{
	rpcrdma_cm_pdata_defaults(pd);
	if (!buf || len == 0) {
		pd->status = RPCRDMA_ERR_TRUNCATED;
		return false;
	}
	int rc = decode_at(buf, len, pd);
	if (rc) {
		/* Never a connection failure: defaults apply (§5.1). */
		rpcrdma_cm_pdata_defaults(pd);
		pd->status = rc;
		return false;
	}
	/* Octets past the eighth are ignored: §6 says new formats would add
	 * "fields starting at byte eight", and the field may be a larger
	 * buffer (the CM pads private data to a fixed length). */
	return true;
}

bool rpcrdma_cm_pdata_find(const void *buf, size_t len,
			   struct rpcrdma_cm_pdata *pd, size_t *offset)
{
	const uint8_t *p = buf;
	int first = 0;

	rpcrdma_cm_pdata_defaults(pd);
	if (!buf)
		len = 0;
	/* §5.2: "The offset of the Format Identifier is not restricted to
	 * any alignment." */
	for (size_t i = 0; len >= 4 && i <= len - 4; i++) {
		if (rpcrdma_be32_get(p + i) != RPCRDMA_CM_PDATA_MAGIC)
			continue;
		int rc = decode_at(p + i, len - i, pd);
		if (rc == 0) {
			if (offset)
				*offset = i;
			return true;
		}
		/* A candidate with an unknown version or running off the end
		 * may be someone else's bytes that happen to match (§7); keep
		 * looking. */
		rpcrdma_cm_pdata_defaults(pd);
		if (!first)
			first = rc;
	}
	pd->status = first ? first :
		     (len < 4 ? RPCRDMA_ERR_TRUNCATED : RPCRDMA_ERR_BAD_MAGIC);
	return false;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void rpcrdma_cm_pdata_thresholds(size_t our_max_send, size_t our_max_recv,
				 bool our_remote_inv,
				 const struct rpcrdma_cm_pdata *peer,
				 struct rpcrdma_inline_thresholds *out)
{
	struct rpcrdma_cm_pdata dflt;
	/* Our values as advertised, i.e. after the encoder's rounding. */
	uint32_t send = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(our_max_send));
	uint32_t recv = rpcrdma_cm_pdata_code_to_size(
		rpcrdma_cm_pdata_size_to_code(our_max_recv));

	if (!peer || !peer->present) {
		/* §5.1: act as if R = 0 and both sizes were code 0. */
		rpcrdma_cm_pdata_defaults(&dflt);
		peer = &dflt;
	}
	/* §4.2: "The client uses the smaller of its own send size and the
	 * server's reported receive size as the client-to-server inline
	 * threshold.  The server uses the smaller of its own send size and
	 * the client's reported receive size as the server-to-client inline
	 * threshold."  The rule is the same for both roles; the threshold
	 * for what we receive is the one the peer computes for its sends. */
	out->send = min_u32(send, peer->max_recv);
	out->recv = min_u32(recv, peer->max_send);
	/* §4.1: "When both connection peers have set this bit flag in their
	 * CM Private Data, the responder MAY use RDMA Send with Invalidate
	 * operations"; "When either peer on a connection clears this flag,
	 * the responder MUST use only RDMA Send". */
	out->send_with_inv = our_remote_inv && peer->remote_inv;
}
