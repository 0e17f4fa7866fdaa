/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 1 transport header codec (RFC 8166 §4.1.2, §4.2;
 * RDMA_MSGP and RDMA_DONE from RFC 5666 §4.3).
 *
 *   rdma_xid, rdma_vers (=1), rdma_credit, rdma_proc, then by rdma_proc:
 *   RDMA_MSG   (0): Read list, Write list, Reply chunk; RPC message follows
 *   RDMA_NOMSG (1): Read list, Write list, Reply chunk
 *   RDMA_MSGP  (2): rdma_align, rdma_thresh, the three lists; RPC message
 *   RDMA_DONE  (3): void
 *   RDMA_ERROR (4): rdma_err; ERR_VERS (1): low, high; ERR_CHUNK (2): void
 *
 * Pure functions over caller buffers; no allocation, no I/O.
 */
#ifndef RPCRDMA_WIRE_RPCRDMA_V1_H
#define RPCRDMA_WIRE_RPCRDMA_V1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/chunk_lists.h"
#include "wire/rpcrdma_common.h"

/* rdma_proc values (RFC 8166 §4.2.4; RFC 5666 §4.3). */
enum rpcrdma_v1_proc {
	RPCRDMA_V1_MSG = 0,
	RPCRDMA_V1_NOMSG = 1,
	RPCRDMA_V1_MSGP = 2,  /* reserved by RFC 8166 §4.6.1: never send */
	RPCRDMA_V1_DONE = 3,  /* reserved by RFC 8166 §4.6.2: never send */
	RPCRDMA_V1_ERROR = 4,
};

/* rpc_rdma_errcode (RFC 8166 §4.1.2, §4.5). */
enum rpcrdma_v1_errcode {
	RPCRDMA_V1_ERR_VERS = 1,
	RPCRDMA_V1_ERR_CHUNK = 2,
};

/* RFC 8166 §4.5: a message shorter than this cannot be trusted, even for
 * its XID, and MUST be silently discarded.  (The decoder itself accepts
 * shorter RDMA_DONE and RDMA_ERROR headers; the policy is the caller's.) */
#define RPCRDMA_V1_MIN_HDR_LEN 28u

/* A decoded (or to-be-encoded) v1 header.  Which members are meaningful
 * depends on proc. */
struct rpcrdma_v1_hdr {
	uint32_t xid;    /* rdma_xid */
	uint32_t vers;   /* rdma_vers */
	uint32_t credit; /* rdma_credit */
	uint32_t proc;   /* rdma_proc (enum rpcrdma_v1_proc) */

	/* RDMA_MSGP only (RFC 5666 §4.3 rpc_rdma_header_padded). */
	uint32_t align;  /* rdma_align */
	uint32_t thresh; /* rdma_thresh */

	/* RDMA_ERROR only. */
	uint32_t err;       /* rdma_err (enum rpcrdma_v1_errcode) */
	uint32_t vers_low;  /* ERR_VERS: rdma_vers_low */
	uint32_t vers_high; /* ERR_VERS: rdma_vers_high */

	/* Decode output: bytes of transport header.  For RDMA_MSG and
	 * RDMA_MSGP the RPC message begins at this offset. */
	size_t hdr_len;

	/* RDMA_MSG, RDMA_NOMSG, RDMA_MSGP. */
	struct rpcrdma_chunk_lists chunks;
};

/* Zero the scalar fields and empty the chunk lists. */
void rpcrdma_v1_hdr_init(struct rpcrdma_v1_hdr *h);

/*
 * Decode a v1 transport header from buf[0..len).  lim may be NULL.
 * Returns 0 and fills h (h->hdr_len = header bytes), or:
 *  RPCRDMA_ERR_TRUNCATED     buffer ends inside the header (or, for
 *                            RDMA_MSG/RDMA_MSGP, before the RPC XID word)
 *  RPCRDMA_ERR_BAD_VERSION   rdma_vers != 1.  xid, vers, credit, proc are
 *                            set (so the engine can send ERR_VERS echoing
 *                            them, RFC 8166 §4.5).  If proc is RDMA_ERROR
 *                            the error body is decoded too when possible
 *                            (ERR_VERS is "fixed for all versions", RFC 8166
 *                            §4.1.2), else err = 0.
 *  RPCRDMA_ERR_BAD_PROC      unknown rdma_proc (the four words are set)
 *  RPCRDMA_ERR_BAD_ERRCODE   RDMA_ERROR with unknown rdma_err (err is set)
 *  RPCRDMA_ERR_BAD_CHUNK     RDMA_NOMSG with all three lists absent
 *                            (RFC 8166 §4.5.2)
 *  RPCRDMA_ERR_BAD_ALIGN     RDMA_MSGP whose rdma_align is not a power of 2
 *  RPCRDMA_ERR_HEADER_TOO_LONG header larger than lim->max_header_size
 *  and the chunk list errors of rpcrdma_chunk_lists_decode().
 */
int rpcrdma_v1_decode(const void *buf, size_t len,
		      const struct rpcrdma_limits *lim,
		      struct rpcrdma_v1_hdr *h);

/*
 * Encode h into buf[0..cap).  Returns the number of bytes written (the
 * header length; append the RPC message after it for RDMA_MSG/MSGP), or:
 *  RPCRDMA_ERR_NOSPACE       cap too small
 *  RPCRDMA_ERR_BAD_VERSION   vers != 1 and proc != RDMA_ERROR (an
 *                            RDMA_ERROR echoes the failing request's
 *                            version, RFC 8166 §4.5)
 *  RPCRDMA_ERR_BAD_PROC      proc unknown
 *  RPCRDMA_ERR_BAD_ERRCODE   RDMA_ERROR with err not ERR_VERS/ERR_CHUNK
 *  RPCRDMA_ERR_BAD_CHUNK     RDMA_NOMSG with no list present
 *  RPCRDMA_ERR_BAD_ALIGN     RDMA_MSGP with align not a power of two
 *  and the errors of rpcrdma_chunk_lists_encode().
 * RDMA_MSGP and RDMA_DONE are encodable for tests and tools, but RFC 8166
 * §4.6 says senders MUST NOT send them.
 */
int rpcrdma_v1_encode(void *buf, size_t cap, const struct rpcrdma_v1_hdr *h);

/* Bytes rpcrdma_v1_encode() would write (0 if proc is unknown). */
size_t rpcrdma_v1_size(const struct rpcrdma_v1_hdr *h);

/* Equality of the fields meaningful for a->proc (hdr_len excluded). */
bool rpcrdma_v1_hdr_equal(const struct rpcrdma_v1_hdr *a,
			  const struct rpcrdma_v1_hdr *b);

/* Names for tools: "RDMA_MSG" ..., "ERR_VERS" ...; NULL when unknown. */
const char *rpcrdma_v1_proc_name(uint32_t proc);
const char *rpcrdma_v1_err_name(uint32_t err);

#endif
