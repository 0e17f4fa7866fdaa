/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 2 transport header codec (see rpcrdma_v2.h).
 * Section numbers refer to draft-cel-nfsv4-rpcrdma-version-two-09.
 */
#include "wire/rpcrdma_v2.h"

#include <string.h>

#include "wire/xdr.h"

#define MIN_HEADER_LIMIT 32u

void rpcrdma_v2_hdr_init(struct rpcrdma_v2_hdr *h)
{
	h->xid = 0;
	h->vers = 0;
	h->credit = 0;
	h->htype = 0;
	h->flags = 0;
	h->hdr_len = 0;
	memset(&h->error, 0, sizeof h->error);
	h->nprops = 0;
	h->inv_handle = 0;
	rpcrdma_chunk_lists_init(&h->chunks);
}

static bool is_known_prop(uint32_t propid)
{
	return propid == RPCRDMA_V2_PROPID_RBSIZ ||
	       propid == RPCRDMA_V2_PROPID_BRS;
}

/* Interpret a known property's rdma_data with its typedef (§4.1, §4.2).
 * An empty rdma_data means the default value.  §4.1: data that is not
 * valid for the typedef, or too short for it, MUST be reported as
 * RDMA2_ERR_BAD_XDR; we also refuse trailing bytes beyond the typedef. */
static int interpret_prop(struct rpcrdma_v2_prop *p)
{
	p->has_value = false;
	p->value = 0;
	if (!is_known_prop(p->propid) || p->len == 0)
		return 0;
	if (p->len != 4)
		return RPCRDMA_ERR_BAD_PROPERTY;
	p->value = (uint32_t)p->data[0] << 24 | (uint32_t)p->data[1] << 16 |
		   (uint32_t)p->data[2] << 8 | (uint32_t)p->data[3];
	/* §4.2.2: enum rpcrdma2_rvreqsup has values 0..2 only. */
	if (p->propid == RPCRDMA_V2_PROPID_BRS &&
	    p->value > RPCRDMA_V2_RVREQSUP_GENL)
		return RPCRDMA_ERR_BAD_PROPERTY;
	p->has_value = true;
	return 0;
}

/* rpcrdma2_propset: a counted array of rpcrdma2_propval (§4.1). */
static int decode_propset(struct rpcrdma_xdr_dec *d,
			  const struct rpcrdma_limits *lim,
			  struct rpcrdma_v2_hdr *h)
{
	uint32_t n, max;
	int rc;

	max = lim->max_properties < RPCRDMA_V2_MAX_PROPS ? lim->max_properties
							 : RPCRDMA_V2_MAX_PROPS;
	if ((rc = rpcrdma_xdr_get_u32(d, &n)))
		return rc;
	if (n > max)
		return RPCRDMA_ERR_TOO_MANY_PROPERTIES;
	for (uint32_t i = 0; i < n; i++) {
		struct rpcrdma_v2_prop *p = &h->props[i];

		if ((rc = rpcrdma_xdr_get_u32(d, &p->propid)))
			return rc;
		/* §4.1: rdma_data extending beyond the message is
		 * RDMA2_ERR_BAD_XDR; the cursor reports it as truncation. */
		if ((rc = rpcrdma_xdr_get_opaque(d, UINT32_MAX, &p->data,
						 &p->len)))
			return rc;
		h->nprops = i + 1;
		/* §4.1 / §5.3.4: unknown properties are not an error; they
		 * stay in props[] verbatim. */
		if ((rc = interpret_prop(p)))
			return rc;
	}
	return 0;
}

/* union rpcrdma2_error (§6.4). */
static int decode_error(struct rpcrdma_xdr_dec *d, struct rpcrdma_v2_error *e)
{
	int rc;

	if ((rc = rpcrdma_xdr_get_u32(d, &e->code)))
		return rc;
	switch (e->code) {
	case RPCRDMA_V2_ERR_VERS:
		if ((rc = rpcrdma_xdr_get_u32(d, &e->vers_low)) ||
		    (rc = rpcrdma_xdr_get_u32(d, &e->vers_high)))
			return rc;
		return 0;
	case RPCRDMA_V2_ERR_READ_CHUNKS:
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
		return rpcrdma_xdr_get_u32(d, &e->max_chunks);
	case RPCRDMA_V2_ERR_SEGMENTS:
		return rpcrdma_xdr_get_u32(d, &e->max_segments);
	case RPCRDMA_V2_ERR_WRITE_RESOURCE:
		if ((rc = rpcrdma_xdr_get_u32(d, &e->chunk_index)) ||
		    (rc = rpcrdma_xdr_get_u32(d, &e->length_needed)))
			return rc;
		return 0;
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		return rpcrdma_xdr_get_u32(d, &e->length_needed);
	default:
		/* BAD_XDR, INVAL_HTYPE, SYSTEM and any code added later
		 * (§9.3): "default: void". */
		return 0;
	}
}

static int decode_body(struct rpcrdma_xdr_dec *d,
		       const struct rpcrdma_limits *lim,
		       struct rpcrdma_v2_hdr *h)
{
	int rc;

	/* rpcrdma_common (§3.1). */
	if ((rc = rpcrdma_xdr_get_u32(d, &h->xid)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->vers)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->credit)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->htype)))
		return rc;
	if (h->vers != RPCRDMA_VERSION_2)
		return RPCRDMA_ERR_BAD_VERSION;
	/* rdma_flags (§3.2).  Reserved bits are kept, not rejected: an
	 * extension may assign them (§9.4). */
	if ((rc = rpcrdma_xdr_get_u32(d, &h->flags)))
		return rc;

	switch (h->htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		/* rpcrdma2_chunk_lists (§3.3): rdma_inv_handle, then the
		 * same three lists as version 1. */
		if ((rc = rpcrdma_xdr_get_u32(d, &h->inv_handle)) ||
		    (rc = rpcrdma_chunk_lists_decode(d, lim, &h->chunks)))
			return rc;
		/* §5.3.2: RDMA2_NOMSG conveys the whole RPC message with
		 * explicit RDMA, so some list must be present (as in RFC 8166
		 * §4.2.4, §4.5.2). */
		if (h->htype == RPCRDMA_V2_NOMSG &&
		    rpcrdma_chunk_lists_empty(&h->chunks))
			return RPCRDMA_ERR_BAD_CHUNK;
		return 0;
	case RPCRDMA_V2_ERROR:
		if ((rc = decode_error(d, &h->error)))
			return rc;
		/* §3.2: for RDMA2_ERROR "the RPCRDMA2_F_RESPONSE flag MUST be
		 * set". */
		if (!(h->flags & RPCRDMA_V2_F_RESPONSE))
			return RPCRDMA_ERR_BAD_FLAGS;
		return 0;
	case RPCRDMA_V2_CONNPROP:
		return decode_propset(d, lim, h);
	default:
		/* §5.2: an unsupported header type is answered with
		 * RDMA2_ERR_INVAL_HTYPE; MSGP (2) and DONE (3) are not
		 * version 2 header types. */
		return RPCRDMA_ERR_BAD_PROC;
	}
}

int rpcrdma_v2_decode(const void *buf, size_t len,
		      const struct rpcrdma_limits *lim,
		      struct rpcrdma_v2_hdr *h)
{
	struct rpcrdma_limits def;
	struct rpcrdma_xdr_dec d;
	size_t cap;
	int rc;

	if (!h || (!buf && len))
		return RPCRDMA_ERR_INVAL;
	if (!lim) {
		def = rpcrdma_limits_default();
		lim = &def;
	}
	rpcrdma_v2_hdr_init(h);
	cap = lim->max_header_size < MIN_HEADER_LIMIT ? MIN_HEADER_LIMIT
						      : lim->max_header_size;
	if (cap > len)
		cap = len;
	rpcrdma_xdr_dec_init(&d, buf, cap);
	rc = decode_body(&d, lim, h);
	h->hdr_len = d.pos;
	if (rc == RPCRDMA_ERR_TRUNCATED && len > cap)
		return RPCRDMA_ERR_HEADER_TOO_LONG;
	if (rc)
		return rc;
	/* §5.3.1: struct rpcrdma2_msg ends with rdma_rpc_first_word, the
	 * start of the RPC message, which must therefore be present. */
	if (h->htype == RPCRDMA_V2_MSG && len - h->hdr_len < RPCRDMA_XDR_UNIT)
		return RPCRDMA_ERR_TRUNCATED;
	return 0;
}

static size_t error_body_size(uint32_t code)
{
	switch (code) {
	case RPCRDMA_V2_ERR_VERS:
	case RPCRDMA_V2_ERR_WRITE_RESOURCE:
		return 8;
	case RPCRDMA_V2_ERR_READ_CHUNKS:
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
	case RPCRDMA_V2_ERR_SEGMENTS:
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		return 4;
	default:
		return 0;
	}
}

static size_t prop_data_len(const struct rpcrdma_v2_prop *p)
{
	if (is_known_prop(p->propid))
		return p->has_value ? 4 : 0;
	return p->len;
}

size_t rpcrdma_v2_size(const struct rpcrdma_v2_hdr *h)
{
	const size_t prefix = RPCRDMA_COMMON_LEN + 4; /* + rdma_flags */
	size_t n;

	switch (h->htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		return prefix + 4 + rpcrdma_chunk_lists_size(&h->chunks);
	case RPCRDMA_V2_ERROR:
		return prefix + 4 + error_body_size(h->error.code);
	case RPCRDMA_V2_CONNPROP:
		n = prefix + 4;
		for (uint32_t i = 0; i < h->nprops && i < RPCRDMA_V2_MAX_PROPS;
		     i++)
			n += 8 + ((prop_data_len(&h->props[i]) + 3) & ~(size_t)3);
		return n;
	default:
		return 0;
	}
}

static int validate(const struct rpcrdma_v2_hdr *h,
		    const struct rpcrdma_chunk_lists *cl)
{
	if (h->vers != RPCRDMA_VERSION_2)
		return RPCRDMA_ERR_BAD_VERSION;
	switch (h->htype) {
	case RPCRDMA_V2_MSG:
		return 0;
	case RPCRDMA_V2_NOMSG:
		if (rpcrdma_chunk_lists_empty(cl))
			return RPCRDMA_ERR_BAD_CHUNK;
		return 0;
	case RPCRDMA_V2_ERROR:
		/* §3.2: RDMA2_ERROR MUST carry RPCRDMA2_F_RESPONSE. */
		if (!(h->flags & RPCRDMA_V2_F_RESPONSE))
			return RPCRDMA_ERR_BAD_FLAGS;
		return 0;
	case RPCRDMA_V2_CONNPROP:
		if (h->nprops > RPCRDMA_V2_MAX_PROPS)
			return RPCRDMA_ERR_TOO_MANY_PROPERTIES;
		for (uint32_t i = 0; i < h->nprops; i++) {
			const struct rpcrdma_v2_prop *p = &h->props[i];

			if (p->propid == RPCRDMA_V2_PROPID_BRS && p->has_value &&
			    p->value > RPCRDMA_V2_RVREQSUP_GENL)
				return RPCRDMA_ERR_BAD_PROPERTY;
			if (!is_known_prop(p->propid) && p->len && !p->data)
				return RPCRDMA_ERR_BAD_PROPERTY;
		}
		return 0;
	default:
		return RPCRDMA_ERR_BAD_PROC;
	}
}

static int encode_prop(struct rpcrdma_xdr_enc *e, const struct rpcrdma_v2_prop *p)
{
	int rc;

	if ((rc = rpcrdma_xdr_put_u32(e, p->propid)))
		return rc;
	if (!is_known_prop(p->propid))
		return rpcrdma_xdr_put_opaque(e, p->data, p->len);
	if (!p->has_value)
		return rpcrdma_xdr_put_u32(e, 0); /* default value (§4.1) */
	if ((rc = rpcrdma_xdr_put_u32(e, 4)))
		return rc;
	return rpcrdma_xdr_put_u32(e, p->value);
}

static int encode_error(struct rpcrdma_xdr_enc *e, const struct rpcrdma_v2_error *er)
{
	int rc;

	if ((rc = rpcrdma_xdr_put_u32(e, er->code)))
		return rc;
	switch (er->code) {
	case RPCRDMA_V2_ERR_VERS:
		if ((rc = rpcrdma_xdr_put_u32(e, er->vers_low)))
			return rc;
		return rpcrdma_xdr_put_u32(e, er->vers_high);
	case RPCRDMA_V2_ERR_READ_CHUNKS:
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
		return rpcrdma_xdr_put_u32(e, er->max_chunks);
	case RPCRDMA_V2_ERR_SEGMENTS:
		return rpcrdma_xdr_put_u32(e, er->max_segments);
	case RPCRDMA_V2_ERR_WRITE_RESOURCE:
		if ((rc = rpcrdma_xdr_put_u32(e, er->chunk_index)))
			return rc;
		return rpcrdma_xdr_put_u32(e, er->length_needed);
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		return rpcrdma_xdr_put_u32(e, er->length_needed);
	default:
		return 0;
	}
}

int rpcrdma_v2_encode_lists(void *buf, size_t cap,
			    const struct rpcrdma_v2_hdr *h,
			    const struct rpcrdma_chunk_lists *cl)
{
	struct rpcrdma_xdr_enc e;
	int rc;

	if (!h || !cl || (!buf && cap))
		return RPCRDMA_ERR_INVAL;
	if ((rc = validate(h, cl)))
		return rc;
	rpcrdma_xdr_enc_init(&e, buf, cap);
	/* §3.2: reserved flag bits: "The sender MUST set these to zero." */
	if ((rc = rpcrdma_xdr_put_u32(&e, h->xid)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->vers)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->credit)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->htype)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->flags & RPCRDMA_V2_F_RESPONSE)))
		return rc;
	switch (h->htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		if ((rc = rpcrdma_xdr_put_u32(&e, h->inv_handle)) ||
		    (rc = rpcrdma_chunk_lists_encode(&e, cl)))
			return rc;
		break;
	case RPCRDMA_V2_ERROR:
		if ((rc = encode_error(&e, &h->error)))
			return rc;
		break;
	default: /* RPCRDMA_V2_CONNPROP */
		if ((rc = rpcrdma_xdr_put_u32(&e, h->nprops)))
			return rc;
		for (uint32_t i = 0; i < h->nprops; i++)
			if ((rc = encode_prop(&e, &h->props[i])))
				return rc;
		break;
	}
	return (int)e.pos;
}

int rpcrdma_v2_encode(void *buf, size_t cap, const struct rpcrdma_v2_hdr *h)
{
	return rpcrdma_v2_encode_lists(buf, cap, h, h ? &h->chunks : NULL);
}

static bool error_equal(const struct rpcrdma_v2_error *a,
			const struct rpcrdma_v2_error *b)
{
	if (a->code != b->code)
		return false;
	switch (a->code) {
	case RPCRDMA_V2_ERR_VERS:
		return a->vers_low == b->vers_low && a->vers_high == b->vers_high;
	case RPCRDMA_V2_ERR_READ_CHUNKS:
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
		return a->max_chunks == b->max_chunks;
	case RPCRDMA_V2_ERR_SEGMENTS:
		return a->max_segments == b->max_segments;
	case RPCRDMA_V2_ERR_WRITE_RESOURCE:
		return a->chunk_index == b->chunk_index &&
		       a->length_needed == b->length_needed;
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		return a->length_needed == b->length_needed;
	default:
		return true;
	}
}

static bool prop_equal(const struct rpcrdma_v2_prop *a,
		       const struct rpcrdma_v2_prop *b)
{
	if (a->propid != b->propid)
		return false;
	if (is_known_prop(a->propid))
		return a->has_value == b->has_value &&
		       (!a->has_value || a->value == b->value);
	if (a->len != b->len)
		return false;
	return a->len == 0 || memcmp(a->data, b->data, a->len) == 0;
}

bool rpcrdma_v2_hdr_equal(const struct rpcrdma_v2_hdr *a,
			  const struct rpcrdma_v2_hdr *b, bool mask_reserved)
{
	uint32_t mask = mask_reserved ? RPCRDMA_V2_F_RESPONSE : UINT32_MAX;

	if (a->xid != b->xid || a->vers != b->vers || a->credit != b->credit ||
	    a->htype != b->htype || (a->flags & mask) != (b->flags & mask))
		return false;
	switch (a->htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		return a->inv_handle == b->inv_handle &&
		       rpcrdma_chunk_lists_equal(&a->chunks, &b->chunks);
	case RPCRDMA_V2_ERROR:
		return error_equal(&a->error, &b->error);
	case RPCRDMA_V2_CONNPROP:
		if (a->nprops != b->nprops || a->nprops > RPCRDMA_V2_MAX_PROPS)
			return false;
		for (uint32_t i = 0; i < a->nprops; i++)
			if (!prop_equal(&a->props[i], &b->props[i]))
				return false;
		return true;
	default:
		return true;
	}
}

const char *rpcrdma_v2_htype_name(uint32_t htype)
{
	switch (htype) {
	case RPCRDMA_V2_MSG: return "RDMA2_MSG";
	case RPCRDMA_V2_NOMSG: return "RDMA2_NOMSG";
	case RPCRDMA_V2_ERROR: return "RDMA2_ERROR";
	case RPCRDMA_V2_CONNPROP: return "RDMA2_CONNPROP";
	default: return NULL;
	}
}

const char *rpcrdma_v2_err_name(uint32_t code)
{
	switch (code) {
	case RPCRDMA_V2_ERR_VERS: return "RDMA2_ERR_VERS";
	case RPCRDMA_V2_ERR_BAD_XDR: return "RDMA2_ERR_BAD_XDR";
	case RPCRDMA_V2_ERR_INVAL_HTYPE: return "RDMA2_ERR_INVAL_HTYPE";
	case RPCRDMA_V2_ERR_READ_CHUNKS: return "RDMA2_ERR_READ_CHUNKS";
	case RPCRDMA_V2_ERR_WRITE_CHUNKS: return "RDMA2_ERR_WRITE_CHUNKS";
	case RPCRDMA_V2_ERR_SEGMENTS: return "RDMA2_ERR_SEGMENTS";
	case RPCRDMA_V2_ERR_WRITE_RESOURCE: return "RDMA2_ERR_WRITE_RESOURCE";
	case RPCRDMA_V2_ERR_REPLY_RESOURCE: return "RDMA2_ERR_REPLY_RESOURCE";
	case RPCRDMA_V2_ERR_SYSTEM: return "RDMA2_ERR_SYSTEM";
	default: return NULL;
	}
}

const char *rpcrdma_v2_propid_name(uint32_t propid)
{
	switch (propid) {
	case RPCRDMA_V2_PROPID_RBSIZ: return "RDMA2_PROPID_RBSIZ";
	case RPCRDMA_V2_PROPID_BRS: return "RDMA2_PROPID_BRS";
	default: return NULL;
	}
}
