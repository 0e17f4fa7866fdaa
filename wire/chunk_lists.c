/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Chunk list codec shared by RPC-over-RDMA v1 and v2 (see chunk_lists.h).
 */
#include "wire/chunk_lists.h"

#include <string.h>

/* XDR sizes of the pieces (RFC 8166 §4.7). */
#define SEGMENT_LEN 16u      /* HLOO */
#define READ_SEGMENT_LEN 20u /* PHLOO */

static uint32_t clamp_limit(uint32_t want, uint32_t storage)
{
	return want < storage ? want : storage;
}

void rpcrdma_chunk_lists_init(struct rpcrdma_chunk_lists *cl)
{
	cl->nreads = 0;
	cl->nwrites = 0;
	cl->has_reply = false;
	cl->reply.nsegs = 0;
}

void rpcrdma_chunk_lists_copy(struct rpcrdma_chunk_lists *dst,
			      const struct rpcrdma_chunk_lists *src)
{
	dst->nreads = src->nreads;
	if (src->nreads)
		memcpy(dst->reads, src->reads, src->nreads * sizeof(src->reads[0]));
	dst->nwrites = src->nwrites;
	for (uint32_t i = 0; i < src->nwrites; i++) {
		dst->writes[i].nsegs = src->writes[i].nsegs;
		memcpy(dst->writes[i].segs, src->writes[i].segs,
		       src->writes[i].nsegs * sizeof(src->writes[i].segs[0]));
	}
	dst->has_reply = src->has_reply;
	dst->reply.nsegs = src->has_reply ? src->reply.nsegs : 0;
	if (src->has_reply)
		memcpy(dst->reply.segs, src->reply.segs,
		       src->reply.nsegs * sizeof(src->reply.segs[0]));
}

/* struct xdr_rdma_segment (RFC 8166 §4.1.2). */
static int decode_segment(struct rpcrdma_xdr_dec *d, struct rpcrdma_segment *s)
{
	int rc;

	if ((rc = rpcrdma_xdr_get_u32(d, &s->handle)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &s->length)) ||
	    (rc = rpcrdma_xdr_get_u64(d, &s->offset)))
		return rc;
	return 0;
}

/* struct xdr_write_chunk: segment count, then the segments.  The count is
 * range-checked before any segment is read. */
static int decode_write_chunk(struct rpcrdma_xdr_dec *d, uint32_t max_segs,
			      struct rpcrdma_write_chunk *wc)
{
	uint32_t n;
	int rc;

	wc->nsegs = 0;
	if ((rc = rpcrdma_xdr_get_u32(d, &n)))
		return rc;
	if (n > max_segs)
		return RPCRDMA_ERR_TOO_MANY_SEGMENTS;
	if (rpcrdma_xdr_dec_remaining(d) / SEGMENT_LEN < n)
		return RPCRDMA_ERR_TRUNCATED;
	for (uint32_t i = 0; i < n; i++) {
		if ((rc = decode_segment(d, &wc->segs[i])))
			return rc;
		wc->nsegs = i + 1;
	}
	return 0;
}

int rpcrdma_chunk_lists_decode(struct rpcrdma_xdr_dec *d,
			       const struct rpcrdma_limits *lim,
			       struct rpcrdma_chunk_lists *cl)
{
	struct rpcrdma_limits def;
	uint32_t max_reads, max_writes, max_segs;
	bool more;
	int rc;

	rpcrdma_chunk_lists_init(cl);
	/* Every Short message: three absent lists, three zero words. */
	if (d->len - d->pos >= 12 && !rpcrdma_be32_get(d->base + d->pos) &&
	    !rpcrdma_be32_get(d->base + d->pos + 4) &&
	    !rpcrdma_be32_get(d->base + d->pos + 8)) {
		d->pos += 12;
		return 0;
	}
	if (!lim) {
		def = rpcrdma_limits_default();
		lim = &def;
	}
	max_reads = clamp_limit(lim->max_read_segments, RPCRDMA_MAX_READ_SEGMENTS);
	max_writes = clamp_limit(lim->max_write_chunks, RPCRDMA_MAX_WRITE_CHUNKS);
	max_segs = clamp_limit(lim->max_chunk_segments, RPCRDMA_MAX_CHUNK_SEGMENTS);

	/* Read list: XDR optional-data list of read segments (RFC 8166
	 * §4.3.1; RFC 4506 §4.19: discriminator MUST be 0 or 1). */
	for (;;) {
		struct rpcrdma_read_segment *rs;

		if ((rc = rpcrdma_xdr_get_bool(d, &more)))
			return rc;
		if (!more)
			break;
		if (cl->nreads >= max_reads)
			return RPCRDMA_ERR_TOO_MANY_SEGMENTS;
		rs = &cl->reads[cl->nreads];
		if ((rc = rpcrdma_xdr_get_u32(d, &rs->position)))
			return rc;
		/* RFC 8166 §3.4.5: the Position "MUST be a multiple of
		 * four". */
		if (rs->position % RPCRDMA_XDR_UNIT)
			return RPCRDMA_ERR_BAD_POSITION;
		if ((rc = decode_segment(d, &rs->target)))
			return rc;
		cl->nreads++;
	}

	/* Write list: optional-data list of Write chunks (RFC 8166
	 * §4.3.2). */
	for (;;) {
		if ((rc = rpcrdma_xdr_get_bool(d, &more)))
			return rc;
		if (!more)
			break;
		if (cl->nwrites >= max_writes)
			return RPCRDMA_ERR_TOO_MANY_CHUNKS;
		rc = decode_write_chunk(d, max_segs, &cl->writes[cl->nwrites]);
		cl->nwrites++; /* keep the partial chunk visible on error */
		if (rc)
			return rc;
	}

	/* Reply chunk: optional Write chunk (RFC 8166 §4.3.3). */
	if ((rc = rpcrdma_xdr_get_bool(d, &more)))
		return rc;
	if (more) {
		cl->has_reply = true;
		if ((rc = decode_write_chunk(d, max_segs, &cl->reply)))
			return rc;
	}
	return 0;
}

static int encode_segment(struct rpcrdma_xdr_enc *e,
			  const struct rpcrdma_segment *s)
{
	int rc;

	if ((rc = rpcrdma_xdr_put_u32(e, s->handle)) ||
	    (rc = rpcrdma_xdr_put_u32(e, s->length)) ||
	    (rc = rpcrdma_xdr_put_u64(e, s->offset)))
		return rc;
	return 0;
}

static int encode_write_chunk(struct rpcrdma_xdr_enc *e,
			      const struct rpcrdma_write_chunk *wc)
{
	int rc;

	if ((rc = rpcrdma_xdr_put_u32(e, wc->nsegs)))
		return rc;
	for (uint32_t i = 0; i < wc->nsegs; i++)
		if ((rc = encode_segment(e, &wc->segs[i])))
			return rc;
	return 0;
}

static int validate(const struct rpcrdma_chunk_lists *cl)
{
	if (cl->nreads > RPCRDMA_MAX_READ_SEGMENTS)
		return RPCRDMA_ERR_TOO_MANY_SEGMENTS;
	if (cl->nwrites > RPCRDMA_MAX_WRITE_CHUNKS)
		return RPCRDMA_ERR_TOO_MANY_CHUNKS;
	for (uint32_t i = 0; i < cl->nreads; i++)
		/* RFC 8166 §3.4.5: Position MUST be a multiple of four. */
		if (cl->reads[i].position % RPCRDMA_XDR_UNIT)
			return RPCRDMA_ERR_BAD_POSITION;
	for (uint32_t i = 0; i < cl->nwrites; i++)
		if (cl->writes[i].nsegs > RPCRDMA_MAX_CHUNK_SEGMENTS)
			return RPCRDMA_ERR_TOO_MANY_SEGMENTS;
	if (cl->has_reply && cl->reply.nsegs > RPCRDMA_MAX_CHUNK_SEGMENTS)
		return RPCRDMA_ERR_TOO_MANY_SEGMENTS;
	return 0;
}

int rpcrdma_chunk_lists_encode(struct rpcrdma_xdr_enc *e,
			       const struct rpcrdma_chunk_lists *cl)
{
	int rc;

	if (!cl->nreads && !cl->nwrites && !cl->has_reply) {
		/* Three absent lists (every Short message). */
		if (e->cap - e->pos < 12)
			return RPCRDMA_ERR_NOSPACE;
		memset(e->base + e->pos, 0, 12);
		e->pos += 12;
		return 0;
	}
	if ((rc = validate(cl)))
		return rc;
	if (e->cap - e->pos < rpcrdma_chunk_lists_size(cl))
		return RPCRDMA_ERR_NOSPACE;
	for (uint32_t i = 0; i < cl->nreads; i++) {
		if ((rc = rpcrdma_xdr_put_u32(e, 1)) ||
		    (rc = rpcrdma_xdr_put_u32(e, cl->reads[i].position)) ||
		    (rc = encode_segment(e, &cl->reads[i].target)))
			return rc;
	}
	if ((rc = rpcrdma_xdr_put_u32(e, 0)))
		return rc;
	for (uint32_t i = 0; i < cl->nwrites; i++) {
		if ((rc = rpcrdma_xdr_put_u32(e, 1)) ||
		    (rc = encode_write_chunk(e, &cl->writes[i])))
			return rc;
	}
	if ((rc = rpcrdma_xdr_put_u32(e, 0)))
		return rc;
	if ((rc = rpcrdma_xdr_put_u32(e, cl->has_reply ? 1 : 0)))
		return rc;
	if (cl->has_reply && (rc = encode_write_chunk(e, &cl->reply)))
		return rc;
	return 0;
}

size_t rpcrdma_chunk_lists_size(const struct rpcrdma_chunk_lists *cl)
{
	/* Read list: one discriminator + PHLOO per entry, then a 0. */
	size_t n = (size_t)cl->nreads * (4 + READ_SEGMENT_LEN) + 4;

	/* Write list: 1 + count + HLOO*count per chunk, then a 0. */
	for (uint32_t i = 0; i < cl->nwrites; i++)
		n += 8 + (size_t)cl->writes[i].nsegs * SEGMENT_LEN;
	n += 4;
	/* Reply chunk: discriminator, and when present count + HLOO*count. */
	n += 4;
	if (cl->has_reply)
		n += 4 + (size_t)cl->reply.nsegs * SEGMENT_LEN;
	return n;
}

uint32_t rpcrdma_read_list_chunks(const struct rpcrdma_chunk_lists *cl)
{
	uint32_t chunks = 0;

	for (uint32_t i = 0; i < cl->nreads; i++)
		if (i == 0 || cl->reads[i].position != cl->reads[i - 1].position)
			chunks++;
	return chunks;
}

bool rpcrdma_chunk_lists_empty(const struct rpcrdma_chunk_lists *cl)
{
	return cl->nreads == 0 && cl->nwrites == 0 && !cl->has_reply;
}

static bool segment_equal(const struct rpcrdma_segment *a,
			  const struct rpcrdma_segment *b)
{
	return a->handle == b->handle && a->length == b->length &&
	       a->offset == b->offset;
}

static bool write_chunk_equal(const struct rpcrdma_write_chunk *a,
			      const struct rpcrdma_write_chunk *b)
{
	if (a->nsegs != b->nsegs || a->nsegs > RPCRDMA_MAX_CHUNK_SEGMENTS)
		return false;
	for (uint32_t i = 0; i < a->nsegs; i++)
		if (!segment_equal(&a->segs[i], &b->segs[i]))
			return false;
	return true;
}

bool rpcrdma_chunk_lists_equal(const struct rpcrdma_chunk_lists *a,
			       const struct rpcrdma_chunk_lists *b)
{
	if (a->nreads != b->nreads || a->nreads > RPCRDMA_MAX_READ_SEGMENTS ||
	    a->nwrites != b->nwrites || a->nwrites > RPCRDMA_MAX_WRITE_CHUNKS ||
	    a->has_reply != b->has_reply)
		return false;
	for (uint32_t i = 0; i < a->nreads; i++)
		if (a->reads[i].position != b->reads[i].position ||
		    !segment_equal(&a->reads[i].target, &b->reads[i].target))
			return false;
	for (uint32_t i = 0; i < a->nwrites; i++)
		if (!write_chunk_equal(&a->writes[i], &b->writes[i]))
			return false;
	if (a->has_reply && !write_chunk_equal(&a->reply, &b->reply))
		return false;
	return true;
}
