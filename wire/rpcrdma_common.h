/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA transport header: what every version shares.
 *
 * - The four-word common prefix (rdma_xid, rdma_vers, rdma_credit,
 *   rdma_proc/rdma_htype).  RFC 8166 §4.2: "These four fields must remain
 *   with the same meanings and in the same positions in all subsequent
 *   versions"; draft-cel-nfsv4-rpcrdma-version-two-09 §3.1 names them
 *   struct rpcrdma_common.  rpcrdma_common_decode() reads just these so a
 *   receiver can tell v1 from v2 before choosing a decoder.
 * - Decode limits (struct rpcrdma_limits): runtime bounds on segment,
 *   chunk and property counts and on the header size.  The decoders never
 *   exceed the compile-time storage below, whatever the limits say.
 *
 * Pure functions: no I/O, no allocation, no global state.
 */
#ifndef RPCRDMA_WIRE_RPCRDMA_COMMON_H
#define RPCRDMA_WIRE_RPCRDMA_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/error.h"

/* Protocol version numbers carried in rdma_vers. */
#define RPCRDMA_VERSION_1 1u /* RFC 8166 §4.2.2 */
#define RPCRDMA_VERSION_2 2u /* draft-cel-...-version-two §7 */

/* Size of the common prefix: four XDR words (RFC 8166 §4.2). */
#define RPCRDMA_COMMON_LEN 16u

/* Storage maxima.  Each decoded header embeds arrays of these sizes, so
 * decoding never allocates.  A build may raise them (-D...), at the cost
 * of larger header structures. */
#ifndef RPCRDMA_MAX_READ_SEGMENTS
#define RPCRDMA_MAX_READ_SEGMENTS 64u  /* entries in one Read list */
#endif
#ifndef RPCRDMA_MAX_WRITE_CHUNKS
#define RPCRDMA_MAX_WRITE_CHUNKS 8u    /* Write chunks in one Write list */
#endif
#ifndef RPCRDMA_MAX_CHUNK_SEGMENTS
#define RPCRDMA_MAX_CHUNK_SEGMENTS 32u /* segments in a Write/Reply chunk */
#endif
#ifndef RPCRDMA_V2_MAX_PROPS
#define RPCRDMA_V2_MAX_PROPS 16u       /* properties in one RDMA2_CONNPROP */
#endif

/* Default header size limit: the v2 default inline threshold (draft §7.1,
 * 4096 bytes); a transport header can never be larger than the receive
 * buffer that carried it. */
#define RPCRDMA_DEFAULT_MAX_HEADER 4096u

/*
 * Runtime decode limits.  A value above the storage maximum is treated as
 * the storage maximum.  Exceeding a limit gives:
 *   max_read_segments  -> RPCRDMA_ERR_TOO_MANY_SEGMENTS (Read list entries)
 *   max_write_chunks   -> RPCRDMA_ERR_TOO_MANY_CHUNKS   (Write list entries)
 *   max_chunk_segments -> RPCRDMA_ERR_TOO_MANY_SEGMENTS (per Write/Reply chunk)
 *   max_header_size    -> RPCRDMA_ERR_HEADER_TOO_LONG   (transport header bytes)
 *   max_properties     -> RPCRDMA_ERR_TOO_MANY_PROPERTIES (v2 propset entries)
 */
struct rpcrdma_limits {
	uint32_t max_read_segments;
	uint32_t max_write_chunks;
	uint32_t max_chunk_segments;
	uint32_t max_header_size;
	uint32_t max_properties;
};

/* Safe defaults: every count at its storage maximum, header size
 * RPCRDMA_DEFAULT_MAX_HEADER.  Decoders take NULL to mean these. */
struct rpcrdma_limits rpcrdma_limits_default(void);

/* The common prefix: RFC 8166 §4.2, draft §3.1 (struct rpcrdma_common). */
struct rpcrdma_common {
	uint32_t xid;    /* rdma_xid */
	uint32_t vers;   /* rdma_vers */
	uint32_t credit; /* rdma_credit */
	uint32_t proc;   /* rdma_proc (v1) / rdma_htype (v2) */
};

/*
 * Version sniffing: read just the four common words from buf.
 * Returns 0, or RPCRDMA_ERR_TRUNCATED if len < 16, or RPCRDMA_ERR_INVAL
 * if buf or c is NULL.  Does not judge the values.
 */
int rpcrdma_common_decode(const void *buf, size_t len,
			  struct rpcrdma_common *c);

#endif
