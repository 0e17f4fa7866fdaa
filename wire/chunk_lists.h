/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Chunk lists: the Read list, Write list and Reply chunk of an
 * RPC-over-RDMA transport header.  One codec for both versions: the XDR
 * of RFC 8166 §4.1.2 (xdr_read_list, xdr_write_list, xdr_write_chunk) and
 * of draft-cel-nfsv4-rpcrdma-version-two-09 §3.3/§6.3 (rpcrdma2_read_list,
 * rpcrdma2_write_list, rpcrdma2_write_chunk) is the same; v2 only puts
 * rdma_inv_handle in front, which the v2 header codec handles.
 *
 * Wire form (RFC 8166 §4.7):
 *   Read list   1 PHLOO 1 PHLOO ... 0        (XDR optional-data list)
 *   Write list  1 n HLOO*n 1 m HLOO*m ... 0  (list of counted arrays)
 *   Reply chunk 0 | 1 n HLOO*n               (optional counted array)
 * where a segment HLOO is handle, length (uint32) and offset (uint64), and
 * P is a read segment's position.
 *
 * Decoding fills the caller's struct (embedded arrays, no allocation) and
 * checks every count against struct rpcrdma_limits before reading.
 */
#ifndef RPCRDMA_WIRE_CHUNK_LISTS_H
#define RPCRDMA_WIRE_CHUNK_LISTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/rpcrdma_common.h"
#include "wire/xdr.h"

/* Plain RDMA segment (RFC 8166 §3.4.3): 16 bytes on the wire. */
struct rpcrdma_segment {
	uint32_t handle; /* registered memory handle (R_key / STag) */
	uint32_t length; /* bytes */
	uint64_t offset; /* virtual address or offset */
};

/* RDMA read segment (RFC 8166 §3.4.5): position + segment, 20 bytes. */
struct rpcrdma_read_segment {
	uint32_t position; /* byte offset in the unreduced Payload stream */
	struct rpcrdma_segment target;
};

/* Write chunk (RFC 8166 §3.4.6): a counted array of plain segments.  The
 * Reply chunk (§4.3.3) has the same form. */
struct rpcrdma_write_chunk {
	uint32_t nsegs;
	struct rpcrdma_segment segs[RPCRDMA_MAX_CHUNK_SEGMENTS];
};

/* The three chunk lists (RFC 8166 §4.3; draft §3.3 without inv_handle). */
struct rpcrdma_chunk_lists {
	/* The counts first, together, and the Reply chunk (init clears its
	 * count) before the long arrays: a message without chunks (most of
	 * them) touches the first lines only, not 6 KiB. */
	uint32_t nreads; /* Read list entries (read segments, not chunks) */
	uint32_t nwrites; /* Write chunks in the Write list */
	bool has_reply; /* Reply chunk present */
	struct rpcrdma_write_chunk reply;
	struct rpcrdma_read_segment reads[RPCRDMA_MAX_READ_SEGMENTS];
	struct rpcrdma_write_chunk writes[RPCRDMA_MAX_WRITE_CHUNKS];
};

/* The bytes a Write chunk (or the Reply chunk) covers: the sum of its
 * segments' lengths (RFC 8166 §3.4.6); as returned by a Responder, the
 * bytes it wrote. */
static inline uint64_t rpcrdma_write_chunk_len(const struct rpcrdma_write_chunk *c)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < c->nsegs; i++)
		t += c->segs[i].length;
	return t;
}

/* Empty lists (all three "not present").  Touches only the counts, so it
 * is cheap despite the embedded storage. */
void rpcrdma_chunk_lists_init(struct rpcrdma_chunk_lists *cl);

/* Copies the entries in use only (the embedded storage is ~6 KB). */
void rpcrdma_chunk_lists_copy(struct rpcrdma_chunk_lists *dst,
			      const struct rpcrdma_chunk_lists *src);

/*
 * Decode Read list, Write list and Reply chunk at the cursor.  lim may be
 * NULL (defaults).  On success the cursor is past the Reply chunk.
 * Errors: RPCRDMA_ERR_TRUNCATED; RPCRDMA_ERR_BAD_BOOL (a list or Reply
 * discriminator not 0/1); RPCRDMA_ERR_TOO_MANY_SEGMENTS (Read list or a
 * chunk's segment count over the limit); RPCRDMA_ERR_TOO_MANY_CHUNKS
 * (Write list over the limit); RPCRDMA_ERR_BAD_POSITION (a Read position
 * not a multiple of four, RFC 8166 §3.4.5).  On error the cursor position
 * is unspecified and cl holds what was decoded so far.
 */
int rpcrdma_chunk_lists_decode(struct rpcrdma_xdr_dec *d,
			       const struct rpcrdma_limits *lim,
			       struct rpcrdma_chunk_lists *cl);

/*
 * Encode the three lists at the cursor.  Errors: RPCRDMA_ERR_NOSPACE;
 * RPCRDMA_ERR_TOO_MANY_SEGMENTS / RPCRDMA_ERR_TOO_MANY_CHUNKS (a count
 * over the storage maximum); RPCRDMA_ERR_BAD_POSITION (position not a
 * multiple of four).  Validation happens before anything is written, but
 * NOSPACE may leave a partial encoding behind the cursor's start.
 */
int rpcrdma_chunk_lists_encode(struct rpcrdma_xdr_enc *e,
			       const struct rpcrdma_chunk_lists *cl);

/* Bytes rpcrdma_chunk_lists_encode() writes for cl (counts assumed
 * within storage). */
size_t rpcrdma_chunk_lists_size(const struct rpcrdma_chunk_lists *cl);

/* Number of Read chunks: runs of consecutive read segments sharing one
 * position (RFC 8166 §3.4.5, §4.3.1). */
uint32_t rpcrdma_read_list_chunks(const struct rpcrdma_chunk_lists *cl);

/* True when no list is present (the RDMA_NOMSG error case of RFC 8166
 * §4.5.2). */
bool rpcrdma_chunk_lists_empty(const struct rpcrdma_chunk_lists *cl);

/* Field-by-field equality over the used entries only. */
bool rpcrdma_chunk_lists_equal(const struct rpcrdma_chunk_lists *a,
			       const struct rpcrdma_chunk_lists *b);

#endif
