/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* iWARP wire codecs: see iwarp_wire.h.  Pure functions, no state. */
#include <string.h>

#include "provider/iwarp/iwarp_wire.h"
#include "rpcrdma/error.h"
#include "wire/crc32c.h"
#include "wire/xdr.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	rpcrdma_be32_put(p, (uint32_t)(v >> 32));
	rpcrdma_be32_put(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)rpcrdma_be32_get(p) << 32 | rpcrdma_be32_get(p + 4);
}

/* ------------------------------------------------------------------ MPA */

void rpcrdma_iwarp_irdord_put(const struct rpcrdma_iwarp_irdord *io,
			      uint8_t out[4])
{
	uint16_t ird = io->ird & RPCRDMA_IWARP_IRDORD_MAX;
	uint16_t ord = io->ord & RPCRDMA_IWARP_IRDORD_MAX;
	if (io->p2p)
		ird |= 0x8000u;
	if (io->rtr_send)
		ird |= 0x4000u;
	if (io->rtr_write)
		ord |= 0x8000u;
	if (io->rtr_read)
		ord |= 0x4000u;
	put16(out, ird);
	put16(out + 2, ord);
}

void rpcrdma_iwarp_irdord_get(const uint8_t in[4],
			      struct rpcrdma_iwarp_irdord *io)
{
	uint16_t ird = get16(in), ord = get16(in + 2);
	io->p2p = (ird & 0x8000u) != 0;
	io->rtr_send = (ird & 0x4000u) != 0;
	io->rtr_write = (ord & 0x8000u) != 0;
	io->rtr_read = (ord & 0x4000u) != 0;
	io->ird = ird & RPCRDMA_IWARP_IRDORD_MAX;
	io->ord = ord & RPCRDMA_IWARP_IRDORD_MAX;
}

int rpcrdma_iwarp_mpa_rr_build(const struct rpcrdma_iwarp_mpa_rr *rr,
			       const void *ulp_pd, size_t ulp_pd_len,
			       uint8_t *out, size_t cap)
{
	if (!rr || !out || (ulp_pd_len && !ulp_pd))
		return RPCRDMA_ERR_INVAL;
	size_t pd = ulp_pd_len + (rr->enhanced ? RPCRDMA_IWARP_MPA_IRDORD_LEN : 0);
	if (pd > RPCRDMA_IWARP_MPA_MAX_PD)
		return RPCRDMA_ERR_INVAL;
	/* RFC 6581 §6: enhanced data needs revision 2 or higher. */
	if (rr->enhanced && rr->rev < 2)
		return RPCRDMA_ERR_INVAL;
	size_t total = RPCRDMA_IWARP_MPA_HDR_LEN + pd;
	if (cap < total)
		return RPCRDMA_ERR_NOSPACE;
	memcpy(out, rr->reply ? RPCRDMA_IWARP_MPA_KEY_REP : RPCRDMA_IWARP_MPA_KEY_REQ,
	       RPCRDMA_IWARP_MPA_KEY_LEN);
	uint8_t flags = 0;
	if (rr->markers)
		flags |= RPCRDMA_IWARP_MPA_FLAG_M;
	if (rr->crc)
		flags |= RPCRDMA_IWARP_MPA_FLAG_C;
	/* RFC 5044 §7.1: R is zero in a Request. */
	if (rr->reject && rr->reply)
		flags |= RPCRDMA_IWARP_MPA_FLAG_R;
	if (rr->enhanced)
		flags |= RPCRDMA_IWARP_MPA_FLAG_S;
	out[16] = flags;
	out[17] = rr->rev;
	put16(out + 18, (uint16_t)pd);
	size_t off = RPCRDMA_IWARP_MPA_HDR_LEN;
	if (rr->enhanced) {
		rpcrdma_iwarp_irdord_put(&rr->irdord, out + off);
		off += RPCRDMA_IWARP_MPA_IRDORD_LEN;
	}
	if (ulp_pd_len)
		memcpy(out + off, ulp_pd, ulp_pd_len);
	return (int)total;
}

int rpcrdma_iwarp_mpa_rr_parse_hdr(const uint8_t *buf, size_t len,
				   struct rpcrdma_iwarp_mpa_rr *rr)
{
	if (!buf || !rr)
		return RPCRDMA_ERR_INVAL;
	if (len < RPCRDMA_IWARP_MPA_HDR_LEN)
		return RPCRDMA_ERR_TRUNCATED;
	memset(rr, 0, sizeof(*rr));
	if (memcmp(buf, RPCRDMA_IWARP_MPA_KEY_REQ, RPCRDMA_IWARP_MPA_KEY_LEN) == 0)
		rr->reply = false;
	else if (memcmp(buf, RPCRDMA_IWARP_MPA_KEY_REP, RPCRDMA_IWARP_MPA_KEY_LEN) == 0)
		rr->reply = true;
	else
		return RPCRDMA_ERR_PROTOCOL; /* RFC 5044 §7.1.2 rule 5 */
	uint8_t flags = buf[16];
	rr->markers = (flags & RPCRDMA_IWARP_MPA_FLAG_M) != 0;
	rr->crc = (flags & RPCRDMA_IWARP_MPA_FLAG_C) != 0;
	/* R "not checked on reception in the MPA Request" (RFC 5044 §7.1). */
	rr->reject = rr->reply && (flags & RPCRDMA_IWARP_MPA_FLAG_R) != 0;
	rr->rev = buf[17];
	/* S only means something from revision 2 on (RFC 6581 §6: the bit
	 * was reserved, not checked, in revision 1). */
	rr->enhanced = rr->rev >= 2 && (flags & RPCRDMA_IWARP_MPA_FLAG_S) != 0;
	rr->pd_len = get16(buf + 18);
	/* RFC 5044 §7.1.1: more than 512 bytes of private data MUST close
	 * the connection; up to 512 is a properly formatted frame. */
	if (rr->pd_len > RPCRDMA_IWARP_MPA_MAX_PD_RECV)
		return RPCRDMA_ERR_PROTOCOL;
	if (rr->enhanced && rr->pd_len < RPCRDMA_IWARP_MPA_IRDORD_LEN)
		return RPCRDMA_ERR_PROTOCOL;
	return RPCRDMA_IWARP_MPA_HDR_LEN + rr->pd_len;
}

int rpcrdma_iwarp_mpa_rr_parse(const uint8_t *buf, size_t len,
			       struct rpcrdma_iwarp_mpa_rr *rr)
{
	int n = rpcrdma_iwarp_mpa_rr_parse_hdr(buf, len, rr);
	if (n < 0)
		return n;
	if (len < (size_t)n)
		return RPCRDMA_ERR_TRUNCATED;
	const uint8_t *pd = buf + RPCRDMA_IWARP_MPA_HDR_LEN;
	size_t pdl = rr->pd_len;
	if (rr->enhanced) {
		rpcrdma_iwarp_irdord_get(pd, &rr->irdord);
		pd += RPCRDMA_IWARP_MPA_IRDORD_LEN;
		pdl -= RPCRDMA_IWARP_MPA_IRDORD_LEN;
	}
	rr->ulp_pd = pdl ? pd : NULL;
	rr->ulp_pd_len = (uint16_t)pdl;
	return n;
}

/* ------------------------------------------------------------------ FPDU */

size_t rpcrdma_iwarp_mulpdu(size_t mss, size_t max_fpdu)
{
	/* RFC 5044 §8.1 without markers: MULPDU = EMSS - 6 - pad; we keep
	 * the whole FPDU (2 + ULPDU + pad + 4) within one segment. */
	size_t fpdu = mss;
	if (max_fpdu && max_fpdu < fpdu)
		fpdu = max_fpdu;
	size_t m = fpdu > 6 ? fpdu - 6 : 0;
	m &= ~(size_t)3;
	if (m > 65532)
		m = 65532; /* 16-bit ULPDU_Length, multiple of four */
	if (m < 64)
		m = 64; /* room for any header plus payload */
	return m;
}

size_t rpcrdma_iwarp_fpdu_trailer(uint32_t crc_state, size_t ulpdu_len,
				  bool crc, uint8_t out[8])
{
	static const uint8_t zero[4];
	size_t pad = rpcrdma_iwarp_fpdu_pad(ulpdu_len);
	memset(out, 0, 8);
	if (crc) {
		uint32_t c = rpcrdma_crc32c_final(
			rpcrdma_crc32c_update(crc_state, zero, pad));
		/* Least-significant byte first: the order tshark and the
		 * Linux siw both use (specs/README.md). */
		out[pad] = (uint8_t)c;
		out[pad + 1] = (uint8_t)(c >> 8);
		out[pad + 2] = (uint8_t)(c >> 16);
		out[pad + 3] = (uint8_t)(c >> 24);
	}
	return pad + 4;
}

int rpcrdma_iwarp_fpdu_build(const void *ulpdu, size_t ulpdu_len, bool crc,
			     uint8_t *out, size_t cap)
{
	if (!out || (ulpdu_len && !ulpdu))
		return RPCRDMA_ERR_INVAL;
	if (ulpdu_len > RPCRDMA_IWARP_MAX_ULPDU)
		return RPCRDMA_ERR_INVAL;
	size_t total = rpcrdma_iwarp_fpdu_size(ulpdu_len);
	if (cap < total)
		return RPCRDMA_ERR_NOSPACE;
	put16(out, (uint16_t)ulpdu_len);
	if (ulpdu_len)
		memcpy(out + 2, ulpdu, ulpdu_len);
	uint32_t st = rpcrdma_crc32c_update(rpcrdma_crc32c_init(), out,
					    2 + ulpdu_len);
	uint8_t tr[8];
	size_t tl = rpcrdma_iwarp_fpdu_trailer(st, ulpdu_len, crc, tr);
	memcpy(out + 2 + ulpdu_len, tr, tl);
	return (int)total;
}

int rpcrdma_iwarp_fpdu_parse(const uint8_t *buf, size_t len, bool check_crc,
			     const uint8_t **ulpdu, size_t *ulpdu_len)
{
	if (!buf || !ulpdu || !ulpdu_len)
		return RPCRDMA_ERR_INVAL;
	if (len < 2)
		return RPCRDMA_ERR_TRUNCATED;
	size_t ul = get16(buf);
	size_t total = rpcrdma_iwarp_fpdu_size(ul);
	if (len < total)
		return RPCRDMA_ERR_TRUNCATED;
	if (check_crc) {
		size_t pad = rpcrdma_iwarp_fpdu_pad(ul);
		uint32_t c = rpcrdma_crc32c(buf, 2 + ul + pad);
		const uint8_t *p = buf + 2 + ul + pad;
		uint32_t got = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		if (c != got)
			return RPCRDMA_ERR_PROTOCOL; /* RFC 5044 §4.4 */
	}
	*ulpdu = buf + 2;
	*ulpdu_len = ul;
	return (int)total;
}

/* ------------------------------------------------------------------ DDP */

int rpcrdma_iwarp_ddp_build(const struct rpcrdma_iwarp_ddp_hdr *h,
			    uint8_t *out, size_t cap)
{
	if (!h || !out)
		return RPCRDMA_ERR_INVAL;
	size_t hl = rpcrdma_iwarp_ddp_hlen(h->tagged);
	if (cap < hl)
		return RPCRDMA_ERR_NOSPACE;
	out[0] = (uint8_t)((h->tagged ? 0x80 : 0) | (h->last ? 0x40 : 0) |
			   (h->dv & 3));
	out[1] = (uint8_t)((h->rv & 3) << 6 | (h->opcode & 0x0F));
	if (h->tagged) {
		rpcrdma_be32_put(out + 2, h->stag);
		put64(out + 6, h->to);
	} else {
		rpcrdma_be32_put(out + 2, h->inval_stag);
		rpcrdma_be32_put(out + 6, h->qn);
		rpcrdma_be32_put(out + 10, h->msn);
		rpcrdma_be32_put(out + 14, h->mo);
	}
	return (int)hl;
}

int rpcrdma_iwarp_ddp_parse(const uint8_t *buf, size_t len,
			    struct rpcrdma_iwarp_ddp_hdr *h)
{
	if (!buf || !h)
		return RPCRDMA_ERR_INVAL;
	if (len < 2)
		return RPCRDMA_ERR_TRUNCATED;
	memset(h, 0, sizeof(*h));
	h->tagged = (buf[0] & 0x80) != 0;
	h->last = (buf[0] & 0x40) != 0;
	h->dv = buf[0] & 3;
	h->rv = buf[1] >> 6;
	h->opcode = buf[1] & 0x0F;
	size_t hl = rpcrdma_iwarp_ddp_hlen(h->tagged);
	if (len < hl)
		return RPCRDMA_ERR_TRUNCATED;
	if (h->tagged) {
		h->stag = rpcrdma_be32_get(buf + 2);
		h->to = get64(buf + 6);
	} else {
		h->inval_stag = rpcrdma_be32_get(buf + 2);
		h->qn = rpcrdma_be32_get(buf + 6);
		h->msn = rpcrdma_be32_get(buf + 10);
		h->mo = rpcrdma_be32_get(buf + 14);
	}
	return (int)hl;
}

int rpcrdma_iwarp_ddp_check(const struct rpcrdma_iwarp_ddp_hdr *h,
			    uint8_t *layer, uint8_t *etype, uint8_t *ecode)
{
	uint8_t l = RPCRDMA_IWARP_LAYER_DDP, t = 0, c = 0;
	if (h->dv != RPCRDMA_IWARP_DDP_VERSION) {
		/* RFC 5041 §7.2: invalid DDP version, per buffer model. */
		t = h->tagged ? RPCRDMA_IWARP_DDP_ET_TAGGED : RPCRDMA_IWARP_DDP_ET_UNTAGGED;
		c = h->tagged ? RPCRDMA_IWARP_DDP_EC_T_BAD_VERSION
			      : RPCRDMA_IWARP_DDP_EC_U_BAD_VERSION;
		goto bad;
	}
	if (!h->tagged && h->qn > RPCRDMA_IWARP_QN_TERMINATE) {
		t = RPCRDMA_IWARP_DDP_ET_UNTAGGED;
		c = RPCRDMA_IWARP_DDP_EC_U_INV_QN;
		goto bad;
	}
	l = RPCRDMA_IWARP_LAYER_RDMAP;
	t = RPCRDMA_IWARP_RDMAP_ET_OP;
	if (h->rv != RPCRDMA_IWARP_RDMAP_VERSION) {
		c = RPCRDMA_IWARP_RDMAP_EC_BAD_VERSION; /* RFC 5040 §4.2 */
		goto bad;
	}
	/* RFC 5040 §4.2 Figure 4: which opcode travels tagged or on which
	 * untagged queue; anything else is an unexpected opcode. */
	bool ok;
	switch (h->opcode) {
	case RPCRDMA_IWARP_OP_WRITE:
	case RPCRDMA_IWARP_OP_READ_RESP:
		ok = h->tagged;
		break;
	case RPCRDMA_IWARP_OP_READ_REQ:
		ok = !h->tagged && h->qn == RPCRDMA_IWARP_QN_READ_REQ;
		break;
	case RPCRDMA_IWARP_OP_SEND:
	case RPCRDMA_IWARP_OP_SEND_INV:
	case RPCRDMA_IWARP_OP_SEND_SE:
	case RPCRDMA_IWARP_OP_SEND_SE_INV:
		ok = !h->tagged && h->qn == RPCRDMA_IWARP_QN_SEND;
		break;
	case RPCRDMA_IWARP_OP_TERMINATE:
		ok = !h->tagged && h->qn == RPCRDMA_IWARP_QN_TERMINATE;
		break;
	default:
		ok = false;
		break;
	}
	if (ok)
		return 0;
	c = RPCRDMA_IWARP_RDMAP_EC_BAD_OPCODE;
bad:
	if (layer)
		*layer = l;
	if (etype)
		*etype = t;
	if (ecode)
		*ecode = c;
	return RPCRDMA_ERR_PROTOCOL;
}

/* ------------------------------------------------------------ RDMAP */

int rpcrdma_iwarp_read_req_build(const struct rpcrdma_iwarp_read_req *r,
				 uint8_t *out, size_t cap)
{
	if (!r || !out)
		return RPCRDMA_ERR_INVAL;
	if (cap < RPCRDMA_IWARP_READ_REQ_LEN)
		return RPCRDMA_ERR_NOSPACE;
	rpcrdma_be32_put(out, r->sink_stag);
	put64(out + 4, r->sink_to);
	rpcrdma_be32_put(out + 12, r->size);
	rpcrdma_be32_put(out + 16, r->src_stag);
	put64(out + 20, r->src_to);
	return RPCRDMA_IWARP_READ_REQ_LEN;
}

int rpcrdma_iwarp_read_req_parse(const uint8_t *buf, size_t len,
				 struct rpcrdma_iwarp_read_req *r)
{
	if (!buf || !r)
		return RPCRDMA_ERR_INVAL;
	if (len < RPCRDMA_IWARP_READ_REQ_LEN)
		return RPCRDMA_ERR_TRUNCATED;
	r->sink_stag = rpcrdma_be32_get(buf);
	r->sink_to = get64(buf + 4);
	r->size = rpcrdma_be32_get(buf + 12);
	r->src_stag = rpcrdma_be32_get(buf + 16);
	r->src_to = get64(buf + 20);
	return RPCRDMA_IWARP_READ_REQ_LEN;
}

int rpcrdma_iwarp_term_build(const struct rpcrdma_iwarp_term *t,
			     uint8_t *out, size_t cap)
{
	if (!t || !out)
		return RPCRDMA_ERR_INVAL;
	if (t->d && t->ddp_hdr_len != RPCRDMA_IWARP_DDP_TAGGED_HLEN &&
	    t->ddp_hdr_len != RPCRDMA_IWARP_DDP_UNTAGGED_HLEN)
		return RPCRDMA_ERR_INVAL;
	size_t need = RPCRDMA_IWARP_TERM_CTRL_LEN;
	/* RFC 5040 §4.8: segment length MUST be present when D is set. */
	if (t->m || t->d)
		need += 2;
	if (t->d)
		need += t->ddp_hdr_len;
	if (t->r)
		need += RPCRDMA_IWARP_READ_REQ_LEN;
	if (cap < need)
		return RPCRDMA_ERR_NOSPACE;
	out[0] = (uint8_t)((t->layer & 0x0F) << 4 | (t->etype & 0x0F));
	out[1] = t->ecode;
	out[2] = (uint8_t)((t->m ? 0x80 : 0) | (t->d ? 0x40 : 0) |
			   (t->r ? 0x20 : 0));
	out[3] = 0; /* reserved: zero on transmit */
	size_t off = 4;
	if (t->m || t->d) {
		put16(out + off, t->m ? t->seg_len : 0);
		off += 2;
	}
	if (t->d) {
		memcpy(out + off, t->ddp_hdr, t->ddp_hdr_len);
		off += t->ddp_hdr_len;
	}
	if (t->r) {
		memcpy(out + off, t->rdma_hdr, RPCRDMA_IWARP_READ_REQ_LEN);
		off += RPCRDMA_IWARP_READ_REQ_LEN;
	}
	return (int)off;
}

int rpcrdma_iwarp_term_parse(const uint8_t *buf, size_t len,
			     struct rpcrdma_iwarp_term *t)
{
	if (!buf || !t)
		return RPCRDMA_ERR_INVAL;
	if (len < RPCRDMA_IWARP_TERM_CTRL_LEN)
		return RPCRDMA_ERR_TRUNCATED;
	memset(t, 0, sizeof(*t));
	t->layer = buf[0] >> 4;
	t->etype = buf[0] & 0x0F;
	t->ecode = buf[1];
	t->m = (buf[2] & 0x80) != 0;
	t->d = (buf[2] & 0x40) != 0;
	t->r = (buf[2] & 0x20) != 0;
	size_t off = 4;
	if (t->m || t->d) {
		if (len < off + 2)
			return RPCRDMA_ERR_TRUNCATED;
		t->seg_len = get16(buf + off);
		off += 2;
	}
	if (t->d) {
		if (len < off + 1)
			return RPCRDMA_ERR_TRUNCATED;
		t->ddp_hdr_len = rpcrdma_iwarp_ddp_hlen((buf[off] & 0x80) != 0);
		if (len < off + t->ddp_hdr_len)
			return RPCRDMA_ERR_TRUNCATED;
		memcpy(t->ddp_hdr, buf + off, t->ddp_hdr_len);
		off += t->ddp_hdr_len;
	}
	if (t->r) {
		if (len < off + RPCRDMA_IWARP_READ_REQ_LEN)
			return RPCRDMA_ERR_TRUNCATED;
		memcpy(t->rdma_hdr, buf + off, RPCRDMA_IWARP_READ_REQ_LEN);
		off += RPCRDMA_IWARP_READ_REQ_LEN;
	}
	return (int)off;
}

const char *rpcrdma_iwarp_opcode_name(unsigned opcode)
{
	static const char *const names[] = {
		"RDMA Write", "RDMA Read Request", "RDMA Read Response",
		"Send", "Send with Invalidate", "Send with SE",
		"Send with SE and Invalidate", "Terminate",
	};
	return opcode < 8 ? names[opcode] : "unknown";
}
