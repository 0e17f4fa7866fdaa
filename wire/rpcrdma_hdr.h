/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The bridge between the versions for the headers that carry RPC
 * messages: an RDMA_MSG or RDMA_NOMSG header described once, in version 1
 * terms (struct rpcrdma_v1_hdr, RFC 8166 §4.2), written in either
 * version.
 *
 * Version 2 (draft-cel-nfsv4-rpcrdma-version-two) keeps what these two
 * carry: the four-word prefix (draft §3.1), the header type numbers
 * (RDMA2_MSG 0, RDMA2_NOMSG 1) and the chunk lists (§3.3); it adds
 * rdma_flags after the prefix (§3.2) and rdma_inv_handle before the
 * lists (§3.3).  So a sender builds its lists once and writes them in
 * the connection's version without copying them.
 *
 * Pure functions over caller buffers; no allocation, no I/O.
 */
#ifndef RPCRDMA_WIRE_RPCRDMA_HDR_H
#define RPCRDMA_WIRE_RPCRDMA_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/rpcrdma_v1.h"

/* Bytes rpcrdma_hdr_encode() writes for h in version vers (anything but
 * RPCRDMA_VERSION_2 is version 1). */
size_t rpcrdma_hdr_size(uint32_t vers, const struct rpcrdma_v1_hdr *h);

/*
 * Encode h (proc RDMA_MSG or RDMA_NOMSG) into buf[0..cap) in version
 * vers.  Not version 2: exactly rpcrdma_v1_encode(buf, cap, h).  Version
 * 2: rdma_vers 2 (h->vers is not read), rdma_flags RPCRDMA2_F_RESPONSE
 * when response (§3.2: it equals the RPC msg_type, so it is set exactly
 * on replies), rdma_inv_handle inv_handle (0: none), then h's lists.
 * Returns the bytes written, or a negative enum rpcrdma_error as
 * rpcrdma_v2_encode() does (NOSPACE, BAD_PROC for another proc,
 * BAD_CHUNK for an RDMA_NOMSG without chunks).
 */
int rpcrdma_hdr_encode(void *buf, size_t cap, uint32_t vers,
		       const struct rpcrdma_v1_hdr *h, bool response,
		       uint32_t inv_handle);

#endif
