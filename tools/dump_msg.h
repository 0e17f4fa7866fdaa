/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-dump: decode ONE message and emit it (text or JSON).
 *
 * A message is one of
 *  - an RPC-over-RDMA version 1 transport header (RFC 8166; RDMA_MSGP and
 *    RDMA_DONE from RFC 5666), followed by an ONC RPC message (RFC 5531)
 *    for RDMA_MSG and RDMA_MSGP;
 *  - a version 2 header (draft-cel-nfsv4-rpcrdma-version-two-09),
 *    followed by an RPC message for RDMA2_MSG;
 *  - RFC 8797 CM private data (first word 0xf6ab0e18).
 * Transport headers are told apart by the version word (the 2nd word).
 *
 * Values come from the library's wire decoders, so the dump shows what the
 * engine would see.  When a decoder rejects the input, a structural walk
 * over the same XDR finds the byte offset of the first bad item and says
 * what was expected there.
 */
#ifndef RPCRDMA_TOOLS_DUMP_MSG_H
#define RPCRDMA_TOOLS_DUMP_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "dump_out.h"

struct dump_error {
	size_t offset;  /* byte offset of the bad or missing item */
	int code;       /* library error code (enum rpcrdma_error), or 0 */
	char msg[256];  /* "offset N: ..." */
};

/*
 * Decode buf[0..len) and, only when all of it decodes, emit one object
 * (under key, NULL at the top level or inside an array).  Returns 0, or
 * -1 with *err filled and nothing emitted.
 */
int dump_message(struct dump_out *o, const char *key, const uint8_t *buf,
		 size_t len, struct dump_error *err);

#endif
