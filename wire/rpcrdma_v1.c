/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 1 transport header codec (see rpcrdma_v1.h).
 */
#include "wire/rpcrdma_v1.h"

#include "wire/xdr.h"

/* Never clamp the header below this, so the prefix and the small error
 * bodies always decode whatever limit the caller configured. */
#define MIN_HEADER_LIMIT 32u

void rpcrdma_v1_hdr_init(struct rpcrdma_v1_hdr *h)
{
	h->xid = 0;
	h->vers = 0;
	h->credit = 0;
	h->proc = 0;
	h->align = 0;
	h->thresh = 0;
	h->err = 0;
	h->vers_low = 0;
	h->vers_high = 0;
	h->hdr_len = 0;
	rpcrdma_chunk_lists_init(&h->chunks);
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* union rpc_rpcrdma_error (RFC 8166 §4.1.2).  Errors other than ERR_VERS
 * and ERR_CHUNK are not in RFC 8166's union (RFC 5666 §4.3 had a
 * "default: uint32 rdma_extra[8]" arm, never used); we report the code. */
static int decode_error_body(struct rpcrdma_xdr_dec *d, struct rpcrdma_v1_hdr *h)
{
	int rc;

	if ((rc = rpcrdma_xdr_get_u32(d, &h->err)))
		return rc;
	switch (h->err) {
	case RPCRDMA_V1_ERR_VERS:
		if ((rc = rpcrdma_xdr_get_u32(d, &h->vers_low)) ||
		    (rc = rpcrdma_xdr_get_u32(d, &h->vers_high)))
			return rc;
		return 0;
	case RPCRDMA_V1_ERR_CHUNK:
		return 0;
	default:
		return RPCRDMA_ERR_BAD_ERRCODE;
	}
}

static int decode_body(struct rpcrdma_xdr_dec *d,
		       const struct rpcrdma_limits *lim,
		       struct rpcrdma_v1_hdr *h)
{
	int rc;

	if ((rc = rpcrdma_xdr_get_u32(d, &h->xid)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->vers)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->credit)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &h->proc)))
		return rc;

	if (h->vers != RPCRDMA_VERSION_1) {
		/* RFC 8166 §4.2.2: rdma_vers MUST be 1.  The prefix stays
		 * valid so the responder can answer ERR_VERS with the same
		 * XID and version (RFC 8166 §4.5, §4.5.1).  The ERR_VERS
		 * body is "fixed for all versions" (§4.1.2), so decode it
		 * when this is an RDMA_ERROR (a v1 peer's answer to a v2
		 * probe carries the prober's version). */
		if (h->proc == RPCRDMA_V1_ERROR &&
		    (decode_error_body(d, h) ||
		     h->err != RPCRDMA_V1_ERR_VERS)) {
			h->err = 0;
			h->vers_low = 0;
			h->vers_high = 0;
		}
		return RPCRDMA_ERR_BAD_VERSION;
	}

	switch (h->proc) {
	case RPCRDMA_V1_MSG:
		return rpcrdma_chunk_lists_decode(d, lim, &h->chunks);
	case RPCRDMA_V1_NOMSG:
		if ((rc = rpcrdma_chunk_lists_decode(d, lim, &h->chunks)))
			return rc;
		/* RFC 8166 §4.2.4: of the three lists "one MUST be present";
		 * §4.5.2 lists an RDMA_NOMSG with none as an XDR error. */
		if (rpcrdma_chunk_lists_empty(&h->chunks))
			return RPCRDMA_ERR_BAD_CHUNK;
		return 0;
	case RPCRDMA_V1_MSGP:
		/* RFC 5666 §4.3 rpc_rdma_header_padded: rdma_align and
		 * rdma_thresh come BEFORE the chunk lists (§4.1: "inserted
		 * prior to the Read and Write chunk lists"). */
		if ((rc = rpcrdma_xdr_get_u32(d, &h->align)) ||
		    (rc = rpcrdma_xdr_get_u32(d, &h->thresh)))
			return rc;
		if ((rc = rpcrdma_chunk_lists_decode(d, lim, &h->chunks)))
			return rc;
		/* The padding alignment must be usable as one (RFC 5666
		 * §3.9: the decoder skips padding "as indicated by
		 * rdma_align"). */
		if (!is_pow2(h->align))
			return RPCRDMA_ERR_BAD_ALIGN;
		return 0;
	case RPCRDMA_V1_DONE:
		return 0; /* RFC 5666 §4.3: case RDMA_DONE: void */
	case RPCRDMA_V1_ERROR:
		return decode_error_body(d, h);
	default:
		/* RFC 8166 §4.5.2: an invalid rdma_proc is an XDR error. */
		return RPCRDMA_ERR_BAD_PROC;
	}
}

int rpcrdma_v1_decode(const void *buf, size_t len,
		      const struct rpcrdma_limits *lim,
		      struct rpcrdma_v1_hdr *h)
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
	rpcrdma_v1_hdr_init(h);
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
	/* RFC 8166 §4.2.4: after an RDMA_MSG header "the Payload stream then
	 * follows, beginning with its XID field" (likewise RDMA_MSGP, RFC
	 * 5666 §4.1), so at least that word must be there. */
	if ((h->proc == RPCRDMA_V1_MSG || h->proc == RPCRDMA_V1_MSGP) &&
	    len - h->hdr_len < RPCRDMA_XDR_UNIT)
		return RPCRDMA_ERR_TRUNCATED;
	return 0;
}

static int validate(const struct rpcrdma_v1_hdr *h)
{
	switch (h->proc) {
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
	case RPCRDMA_V1_MSGP:
	case RPCRDMA_V1_DONE:
		break;
	case RPCRDMA_V1_ERROR:
		/* RFC 8166 §4.5: rdma_vers MUST echo the failing request, so
		 * any version is allowed for RDMA_ERROR. */
		if (h->err != RPCRDMA_V1_ERR_VERS &&
		    h->err != RPCRDMA_V1_ERR_CHUNK)
			return RPCRDMA_ERR_BAD_ERRCODE;
		return 0;
	default:
		return RPCRDMA_ERR_BAD_PROC;
	}
	/* RFC 8166 §4.2.2: this field MUST contain the value one (1). */
	if (h->vers != RPCRDMA_VERSION_1)
		return RPCRDMA_ERR_BAD_VERSION;
	/* RFC 8166 §4.2.4: an RDMA_NOMSG needs a list to carry the message. */
	if (h->proc == RPCRDMA_V1_NOMSG && rpcrdma_chunk_lists_empty(&h->chunks))
		return RPCRDMA_ERR_BAD_CHUNK;
	if (h->proc == RPCRDMA_V1_MSGP && !is_pow2(h->align))
		return RPCRDMA_ERR_BAD_ALIGN;
	return 0;
}

size_t rpcrdma_v1_size(const struct rpcrdma_v1_hdr *h)
{
	switch (h->proc) {
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
		return RPCRDMA_COMMON_LEN + rpcrdma_chunk_lists_size(&h->chunks);
	case RPCRDMA_V1_MSGP:
		return RPCRDMA_COMMON_LEN + 8 +
		       rpcrdma_chunk_lists_size(&h->chunks);
	case RPCRDMA_V1_DONE:
		return RPCRDMA_COMMON_LEN;
	case RPCRDMA_V1_ERROR:
		return RPCRDMA_COMMON_LEN + 4 +
		       (h->err == RPCRDMA_V1_ERR_VERS ? 8 : 0);
	default:
		return 0;
	}
}

int rpcrdma_v1_encode(void *buf, size_t cap, const struct rpcrdma_v1_hdr *h)
{
	struct rpcrdma_xdr_enc e;
	int rc;

	if (!h || (!buf && cap))
		return RPCRDMA_ERR_INVAL;
	if ((rc = validate(h)))
		return rc;
	rpcrdma_xdr_enc_init(&e, buf, cap);
	if ((rc = rpcrdma_xdr_put_u32(&e, h->xid)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->vers)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->credit)) ||
	    (rc = rpcrdma_xdr_put_u32(&e, h->proc)))
		return rc;
	switch (h->proc) {
	case RPCRDMA_V1_MSGP:
		if ((rc = rpcrdma_xdr_put_u32(&e, h->align)) ||
		    (rc = rpcrdma_xdr_put_u32(&e, h->thresh)))
			return rc;
		/* fall through */
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
		if ((rc = rpcrdma_chunk_lists_encode(&e, &h->chunks)))
			return rc;
		break;
	case RPCRDMA_V1_ERROR:
		if ((rc = rpcrdma_xdr_put_u32(&e, h->err)))
			return rc;
		if (h->err == RPCRDMA_V1_ERR_VERS &&
		    ((rc = rpcrdma_xdr_put_u32(&e, h->vers_low)) ||
		     (rc = rpcrdma_xdr_put_u32(&e, h->vers_high))))
			return rc;
		break;
	default: /* RDMA_DONE: void */
		break;
	}
	return (int)e.pos;
}

bool rpcrdma_v1_hdr_equal(const struct rpcrdma_v1_hdr *a,
			  const struct rpcrdma_v1_hdr *b)
{
	if (a->xid != b->xid || a->vers != b->vers || a->credit != b->credit ||
	    a->proc != b->proc)
		return false;
	switch (a->proc) {
	case RPCRDMA_V1_MSGP:
		if (a->align != b->align || a->thresh != b->thresh)
			return false;
		/* fall through */
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
		return rpcrdma_chunk_lists_equal(&a->chunks, &b->chunks);
	case RPCRDMA_V1_ERROR:
		if (a->err != b->err)
			return false;
		if (a->err == RPCRDMA_V1_ERR_VERS)
			return a->vers_low == b->vers_low &&
			       a->vers_high == b->vers_high;
		return true;
	default:
		return true;
	}
}

const char *rpcrdma_v1_proc_name(uint32_t proc)
{
	switch (proc) {
	case RPCRDMA_V1_MSG: return "RDMA_MSG";
	case RPCRDMA_V1_NOMSG: return "RDMA_NOMSG";
	case RPCRDMA_V1_MSGP: return "RDMA_MSGP";
	case RPCRDMA_V1_DONE: return "RDMA_DONE";
	case RPCRDMA_V1_ERROR: return "RDMA_ERROR";
	default: return NULL;
	}
}

const char *rpcrdma_v1_err_name(uint32_t err)
{
	switch (err) {
	case RPCRDMA_V1_ERR_VERS: return "ERR_VERS";
	case RPCRDMA_V1_ERR_CHUNK: return "ERR_CHUNK";
	default: return NULL;
	}
}
