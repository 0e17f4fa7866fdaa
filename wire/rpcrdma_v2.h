/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 2 transport header codec
 * (draft-cel-nfsv4-rpcrdma-version-two-09 §3, §5, §6).
 *
 *   rpcrdma2_hdr_prefix: rdma_xid, rdma_vers (=2), rdma_credit,
 *                        rdma_htype, rdma_flags                    (§3.2)
 *   RDMA2_MSG      (0): rpcrdma2_chunk_lists; RPC message follows (§5.3.1)
 *   RDMA2_NOMSG    (1): rpcrdma2_chunk_lists                      (§5.3.2)
 *   RDMA2_ERROR    (4): rpcrdma2_error union                      (§5.3.3)
 *   RDMA2_CONNPROP (5): rpcrdma2_propset                          (§5.3.4)
 * where rpcrdma2_chunk_lists = rdma_inv_handle + the v1 lists (§3.3).
 *
 * Pure functions over caller buffers; no allocation, no I/O.  Decoded
 * property data points into the decoded buffer.
 */
#ifndef RPCRDMA_WIRE_RPCRDMA_V2_H
#define RPCRDMA_WIRE_RPCRDMA_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/chunk_lists.h"
#include "wire/rpcrdma_common.h"

/* Header types (§6.4). */
enum rpcrdma_v2_htype {
	RPCRDMA_V2_MSG = 0,
	RPCRDMA_V2_NOMSG = 1,
	RPCRDMA_V2_ERROR = 4,
	RPCRDMA_V2_CONNPROP = 5,
};

/* rdma_flags (§3.2).  Every other bit is reserved (§9.4). */
#define RPCRDMA_V2_F_RESPONSE 0x00000001u
#define RPCRDMA_V2_F_RESERVED (~RPCRDMA_V2_F_RESPONSE)

/* rpcrdma2_errcode values (§6.4). */
enum rpcrdma_v2_errcode {
	RPCRDMA_V2_ERR_VERS = 1,
	RPCRDMA_V2_ERR_BAD_XDR = 2,
	RPCRDMA_V2_ERR_INVAL_HTYPE = 3,
	RPCRDMA_V2_ERR_READ_CHUNKS = 4,
	RPCRDMA_V2_ERR_WRITE_CHUNKS = 5,
	RPCRDMA_V2_ERR_SEGMENTS = 6,
	RPCRDMA_V2_ERR_WRITE_RESOURCE = 7,
	RPCRDMA_V2_ERR_REPLY_RESOURCE = 8,
	RPCRDMA_V2_ERR_SYSTEM = 9,
};

/* Transport property ids (§4.2) and the BRS enum (§4.2.2). */
#define RPCRDMA_V2_PROPID_RBSIZ 1u /* uint32, default 4096 (§4.2.1) */
#define RPCRDMA_V2_PROPID_BRS 2u   /* enum rpcrdma_v2_rvreqsup (§4.2.2) */
#define RPCRDMA_V2_RBSIZ_DEFAULT 4096u

enum rpcrdma_v2_rvreqsup {
	RPCRDMA_V2_RVREQSUP_NONE = 0,
	RPCRDMA_V2_RVREQSUP_INLINE = 1, /* the default (§4.2, Table 1) */
	RPCRDMA_V2_RVREQSUP_GENL = 2,
};

/* One rpcrdma2_propval (§4.1). */
struct rpcrdma_v2_prop {
	uint32_t propid; /* rdma_which */
	/* Known properties (RBSIZ, BRS): has_value is false when rdma_data
	 * is empty, which means "the default value" (§4.1); otherwise value
	 * is the decoded uint32 / enum.  Unknown properties: unused. */
	bool has_value;
	uint32_t value;
	/* rdma_data as received (decode: points into the buffer).  For
	 * unknown properties the encoder writes exactly these bytes; for
	 * known ones it encodes has_value/value and ignores data/len. */
	const uint8_t *data;
	uint32_t len;
};

/* The rpcrdma2_error union (§5.3.3, §6.4).  Which members are meaningful
 * depends on code; unknown codes have a void body ("default: void"). */
struct rpcrdma_v2_error {
	uint32_t code;          /* rdma_err */
	uint32_t vers_low;      /* ERR_VERS */
	uint32_t vers_high;     /* ERR_VERS */
	uint32_t max_chunks;    /* ERR_READ_CHUNKS, ERR_WRITE_CHUNKS */
	uint32_t max_segments;  /* ERR_SEGMENTS */
	uint32_t chunk_index;   /* ERR_WRITE_RESOURCE (1-based, 0 = unknown) */
	uint32_t length_needed; /* ERR_WRITE_RESOURCE, ERR_REPLY_RESOURCE */
};

struct rpcrdma_v2_hdr {
	uint32_t xid;    /* rdma_start.rdma_xid */
	uint32_t vers;   /* rdma_start.rdma_vers */
	uint32_t credit; /* rdma_start.rdma_credit */
	uint32_t htype;  /* rdma_start.rdma_htype */
	uint32_t flags;  /* rdma_flags, reserved bits as received */

	/* Decode output: bytes of transport header.  For RDMA2_MSG the RPC
	 * message begins at this offset. */
	size_t hdr_len;

	/* RDMA2_ERROR */
	struct rpcrdma_v2_error error;

	/* RDMA2_CONNPROP */
	uint32_t nprops;
	struct rpcrdma_v2_prop props[RPCRDMA_V2_MAX_PROPS];

	/* RDMA2_MSG, RDMA2_NOMSG: rpcrdma2_chunk_lists (§3.3) */
	uint32_t inv_handle; /* rdma_inv_handle, 0 = none */
	struct rpcrdma_chunk_lists chunks;
};

/* Zero the scalar fields, empty lists, no properties. */
void rpcrdma_v2_hdr_init(struct rpcrdma_v2_hdr *h);

/*
 * Decode a v2 transport header from buf[0..len).  lim may be NULL.
 * Returns 0 and fills h, or:
 *  RPCRDMA_ERR_TRUNCATED     buffer ends inside the header (or, for
 *                            RDMA2_MSG, before rdma_rpc_first_word)
 *  RPCRDMA_ERR_BAD_VERSION   rdma_vers != 2; the four common words are set
 *  RPCRDMA_ERR_BAD_PROC      unknown rdma_htype; the prefix (five words)
 *                            is set.  The engine answers
 *                            RDMA2_ERR_INVAL_HTYPE (§5.2, §5.3.3).
 *  RPCRDMA_ERR_BAD_FLAGS     RDMA2_ERROR without RPCRDMA2_F_RESPONSE
 *                            (§3.2 MUST); all fields are set.
 *  RPCRDMA_ERR_BAD_CHUNK     RDMA2_NOMSG with no list present
 *  RPCRDMA_ERR_BAD_PROPERTY  a known property whose rdma_data does not
 *                            fit its typedef (§4.1: RDMA2_ERR_BAD_XDR)
 *  RPCRDMA_ERR_TOO_MANY_PROPERTIES  propset over lim->max_properties
 *  RPCRDMA_ERR_BAD_LENGTH    a property length impossible for the buffer
 *  RPCRDMA_ERR_HEADER_TOO_LONG header larger than lim->max_header_size
 *  and the chunk list errors of rpcrdma_chunk_lists_decode().
 * Reserved flag bits are NOT an error: they are kept in h->flags for the
 * caller to see (h->flags & RPCRDMA_V2_F_RESERVED), since an extension
 * may define them (§9.4).  An unknown error code decodes with a void body
 * and returns 0.  Unknown properties are kept verbatim and skipped
 * (§4.1, §5.3.4).
 */
int rpcrdma_v2_decode(const void *buf, size_t len,
		      const struct rpcrdma_limits *lim,
		      struct rpcrdma_v2_hdr *h);

/*
 * Encode h into buf[0..cap).  Returns the number of bytes written (append
 * the RPC message after it for RDMA2_MSG), or:
 *  RPCRDMA_ERR_NOSPACE, RPCRDMA_ERR_BAD_VERSION (vers != 2),
 *  RPCRDMA_ERR_BAD_PROC (htype unknown), RPCRDMA_ERR_BAD_FLAGS
 *  (RDMA2_ERROR without F_RESPONSE), RPCRDMA_ERR_BAD_CHUNK (NOMSG with no
 *  list), RPCRDMA_ERR_BAD_PROPERTY (BRS value > 2, or an unknown property
 *  with len but no data), RPCRDMA_ERR_TOO_MANY_PROPERTIES (nprops over
 *  storage), and the errors of rpcrdma_chunk_lists_encode().
 * Reserved flag bits are written as zero (§3.2: "The sender MUST set
 * these to zero").  The error body written is the one for error.code;
 * unknown codes are written code-only.
 */
int rpcrdma_v2_encode(void *buf, size_t cap, const struct rpcrdma_v2_hdr *h);

/* The same, with the chunk lists of RDMA2_MSG / RDMA2_NOMSG taken from
 * cl instead of h->chunks (the engine builds its lists once, in a
 * version-neutral struct, and encodes them in the connection's version
 * without copying them). */
int rpcrdma_v2_encode_lists(void *buf, size_t cap,
			    const struct rpcrdma_v2_hdr *h,
			    const struct rpcrdma_chunk_lists *cl);

/* Bytes rpcrdma_v2_encode() would write (0 if htype is unknown). */
size_t rpcrdma_v2_size(const struct rpcrdma_v2_hdr *h);

/* Equality of the fields meaningful for a->htype (hdr_len excluded;
 * flags compared with reserved bits masked when mask_reserved). */
bool rpcrdma_v2_hdr_equal(const struct rpcrdma_v2_hdr *a,
			  const struct rpcrdma_v2_hdr *b, bool mask_reserved);

/* Names for tools; NULL when unknown. */
const char *rpcrdma_v2_htype_name(uint32_t htype);
const char *rpcrdma_v2_err_name(uint32_t code);
const char *rpcrdma_v2_propid_name(uint32_t propid);

#endif
