/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The hand-made peer's own RPC-over-RDMA header reader and writer, for
 * the tests that put tests/iwpeer.h on the other end of a connection
 * from our client or our server.  Written from the XDR of RFC 8166 §4.1.2
 * / §4.7 and draft-cel-nfsv4-rpcrdma-version-two-09 §6.3 word by word,
 * sharing nothing with wire/: what our side sends is read by code we did
 * not use to write it, and what we send it is built the same way.
 *
 * v1 header:  xid vers credit proc [MSGP: align thresh] lists | error
 * v2 header:  xid vers credit htype flags [inv_handle lists | error |
 *             propset]
 * lists:      Read list (1 pos HLOO)* 0, Write list (1 n HLOO*n)* 0,
 *             Reply chunk 0 | 1 n HLOO*n        (HLOO: handle length
 *             offset-hi offset-lo)
 */
#ifndef RPCRDMA_TESTS_PEER_PROTO_H
#define RPCRDMA_TESTS_PEER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PP_MSG 0u      /* RDMA_MSG / RDMA2_MSG */
#define PP_NOMSG 1u
#define PP_MSGP 2u     /* RFC 5666 */
#define PP_DONE 3u     /* RFC 5666 */
#define PP_ERROR 4u
#define PP_CONNPROP 5u /* v2 */
#define PP_F_RESPONSE 1u
/* Error codes: RFC 8166 §4.2.3 (v1: 1 ERR_VERS, 2 ERR_CHUNK) and draft
 * v2 §6.4 (the same two, then the rest). */
#define PP_ERR_VERS 1u
#define PP_ERR_CHUNK 2u /* v2: RDMA2_ERR_BAD_XDR */
#define PP_ERR_INVAL_HTYPE 3u
#define PP_ERR_READ_CHUNKS 4u
#define PP_ERR_WRITE_CHUNKS 5u
#define PP_ERR_SEGMENTS 6u
#define PP_ERR_WRITE_RESOURCE 7u
#define PP_ERR_REPLY_RESOURCE 8u
#define PP_ERR_SYSTEM 9u
/* Transport properties (draft v2 §4.2, Table 1). */
#define PP_PROP_RBSIZ 1u
#define PP_PROP_BRS 2u

#define PP_MAX_READS 64u
#define PP_MAX_WRITES 8u
#define PP_MAX_SEGS 32u

struct pp_seg {
	uint32_t handle, length;
	uint64_t offset;
};

struct pp_chunk {
	uint32_t nsegs;
	struct pp_seg segs[PP_MAX_SEGS];
};

struct pp_hdr {
	uint32_t xid, vers, credit, proc; /* proc: v2 htype */
	uint32_t flags, inv_handle;       /* v2 */
	uint32_t align, thresh;           /* v1 RDMA_MSGP */
	uint32_t nreads;
	struct {
		uint32_t pos;
		struct pp_seg seg;
	} reads[PP_MAX_READS];
	uint32_t nwrites;
	struct pp_chunk writes[PP_MAX_WRITES];
	bool has_reply;
	struct pp_chunk reply;
	/* PP_ERROR: the code and up to 4 words of its body; PP_CONNPROP:
	 * the property words as they came (propid, length, data...). */
	uint32_t err;
	uint32_t body[64];
	uint32_t nbody;
	size_t hdr_len;   /* bytes before the RPC message */
};

/* Reads a header of either version.  0, or -1 when it does not parse
 * (the reason in the test's output is the caller's). */
int pp_parse(const uint8_t *b, size_t len, struct pp_hdr *h);

/* Writes h (xid, vers, credit, proc and for v2 flags / inv_handle, the
 * lists; for PP_ERROR err + body; for PP_CONNPROP body as the propset)
 * into b; returns its length.  b must hold 4 KiB. */
size_t pp_build(uint8_t *b, const struct pp_hdr *h);

/* An empty header of version vers for proc. */
void pp_init(struct pp_hdr *h, uint32_t xid, uint32_t vers, uint32_t credit,
	     uint32_t proc);

/* Total bytes a chunk describes. */
uint64_t pp_chunk_len(const struct pp_chunk *c);

/* Big-endian words. */
void pp_put32(uint8_t *p, uint32_t v);
uint32_t pp_get32(const uint8_t *p);

/* An accepted, successful RPC reply header for xid (RFC 5531 §9: xid,
 * REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS): 24 bytes. */
size_t pp_rpc_reply(uint8_t *b, uint32_t xid);

/* An RPC call header (AUTH_NONE both): 40 bytes. */
size_t pp_rpc_call(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t vers,
		   uint32_t proc);

#endif
