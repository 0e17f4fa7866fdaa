/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* RPC-over-RDMA version 2 header codec (draft-cel-nfsv4-rpcrdma-version-
 * two-09 §3, §4, §5, §6): hand-written known answers for every header
 * type, all nine error codes, an unknown one, CONNPROP with RBSIZ, BRS
 * and an unknown property; every truncation, malformed input, limits and
 * a seeded random round trip. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/rpcrdma_hdr.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

#define W(x)                                                           \
	(uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	    (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(uint32_t)(x)

/* RDMA2_MSG with rdma_inv_handle, two Read chunks and a 2-segment Write
 * chunk (§5.3.1, §3.3). */
static const uint8_t v_msg[] = {
	W(0x0a0b0c0d), /* rdma_xid */
	W(2),          /* rdma_vers */
	W(32),         /* rdma_credit */
	W(0),          /* rdma_htype = RDMA2_MSG */
	W(0),          /* rdma_flags: call */
	W(0x22222222), /* rdma_inv_handle */
	W(1),          /* Read list: entry */
	W(0x40),       /*  position 64 */
	W(0x22222222), W(0x1000), W(0x0), W(0x10000), /*  HLOO */
	W(1),          /* Read list: entry */
	W(0x80),       /*  position 128 */
	W(0x33333333), W(0x0100), W(0x0), W(0x20000), /*  HLOO */
	W(0),          /* Read list: end */
	W(1),          /* Write list: chunk */
	W(2),          /*  2 segments */
	W(0x44444444), W(0x8000), W(0x1), W(0x0),     /*  HLOO */
	W(0x44444445), W(0x8000), W(0x1), W(0x8000),  /*  HLOO */
	W(0),          /* Write list: end */
	W(0),          /* Reply chunk: absent */
	W(0x0a0b0c0d), /* rdma_rpc_first_word: RPC xid (hdr_len = 124) */
};

/* RDMA2_NOMSG reply direction with a Reply chunk (§5.3.2). */
static const uint8_t v_nomsg[] = {
	W(0x0000abcd), /* rdma_xid */
	W(2),          /* rdma_vers */
	W(1),          /* rdma_credit */
	W(1),          /* rdma_htype = RDMA2_NOMSG */
	W(1),          /* rdma_flags = RPCRDMA2_F_RESPONSE */
	W(0),          /* rdma_inv_handle: none */
	W(0),          /* Read list: empty */
	W(0),          /* Write list: empty */
	W(1),          /* Reply chunk: present */
	W(1),          /*  1 segment */
	W(0x5555), W(0x4000), W(0x0), W(0xabc000), /*  HLOO */
};

#define ERR_PREFIX                                                       \
	W(0x11223344), /* rdma_xid (copied from the failing request) */  \
	W(2),          /* rdma_vers */                                   \
	W(10),         /* rdma_credit */                                 \
	W(4),          /* rdma_htype = RDMA2_ERROR */                    \
	W(1)           /* rdma_flags = RPCRDMA2_F_RESPONSE (MUST, §3.2) */

static const uint8_t v_err_vers[] = {ERR_PREFIX,
	W(1),    /* rdma_err = RDMA2_ERR_VERS */
	W(1),    /* rdma_vers_low */
	W(2),    /* rdma_vers_high */
};
static const uint8_t v_err_bad_xdr[] = {ERR_PREFIX,
	W(2),    /* rdma_err = RDMA2_ERR_BAD_XDR (void) */
};
static const uint8_t v_err_inval_htype[] = {ERR_PREFIX,
	W(3),    /* rdma_err = RDMA2_ERR_INVAL_HTYPE (void) */
};
static const uint8_t v_err_read_chunks[] = {ERR_PREFIX,
	W(4),    /* rdma_err = RDMA2_ERR_READ_CHUNKS */
	W(2),    /* rdma_max_chunks */
};
static const uint8_t v_err_write_chunks[] = {ERR_PREFIX,
	W(5),    /* rdma_err = RDMA2_ERR_WRITE_CHUNKS */
	W(3),    /* rdma_max_chunks */
};
static const uint8_t v_err_segments[] = {ERR_PREFIX,
	W(6),    /* rdma_err = RDMA2_ERR_SEGMENTS */
	W(16),   /* rdma_max_segments */
};
static const uint8_t v_err_write_resource[] = {ERR_PREFIX,
	W(7),    /* rdma_err = RDMA2_ERR_WRITE_RESOURCE */
	W(2),    /* rdma_chunk_index (1-based) */
	W(8192), /* rdma_length_needed */
};
static const uint8_t v_err_reply_resource[] = {ERR_PREFIX,
	W(8),    /* rdma_err = RDMA2_ERR_REPLY_RESOURCE */
	W(65536), /* rdma_length_needed */
};
static const uint8_t v_err_system[] = {ERR_PREFIX,
	W(9),    /* rdma_err = RDMA2_ERR_SYSTEM (void) */
};
static const uint8_t v_err_unknown[] = {ERR_PREFIX,
	W(10),   /* rdma_err = 10, unknown: "default: void" */
};

/* RDMA2_CONNPROP (§5.3.4) with RBSIZ, BRS and an unknown property. */
static const uint8_t v_connprop[] = {
	W(0x00000000), /* rdma_xid */
	W(2),          /* rdma_vers */
	W(128),        /* rdma_credit */
	W(5),          /* rdma_htype = RDMA2_CONNPROP */
	W(0),          /* rdma_flags */
	W(3),          /* rdma_props: 3 entries */
	W(1),          /*  rdma_which = RDMA2_PROPID_RBSIZ */
	W(4),          /*  rdma_data length */
	W(8192),       /*  rpcrdma2_prop_rbsiz */
	W(2),          /*  rdma_which = RDMA2_PROPID_BRS */
	W(4),          /*  rdma_data length */
	W(2),          /*  RDMA2_RVREQSUP_GENL */
	W(0xabcd0001), /*  rdma_which: unknown */
	W(5),          /*  rdma_data length */
	'h', 'e', 'l', 'l', /*  data */
	'o', 0, 0, 0,  /*  data + XDR pad */
};

/* RDMA2_CONNPROP with zero-length (default, §4.1) values. */
static const uint8_t v_connprop_defaults[] = {
	W(0x00000001), /* rdma_xid */
	W(2),          /* rdma_vers */
	W(1),          /* rdma_credit */
	W(5),          /* rdma_htype = RDMA2_CONNPROP */
	W(1),          /* rdma_flags = RPCRDMA2_F_RESPONSE */
	W(2),          /* rdma_props: 2 entries */
	W(2),          /*  rdma_which = RDMA2_PROPID_BRS */
	W(0),          /*  empty: default */
	W(7),          /*  rdma_which: unknown */
	W(0),          /*  empty */
};

static const uint8_t v_connprop_empty[] = {
	W(0x00000002), /* rdma_xid */
	W(2),          /* rdma_vers */
	W(1),          /* rdma_credit */
	W(5),          /* rdma_htype = RDMA2_CONNPROP */
	W(0),          /* rdma_flags */
	W(0),          /* rdma_props: empty */
};

struct vec {
	const char *name;
	const uint8_t *buf;
	size_t len;
	size_t hdr_len;
	size_t min_len;
};
#define VEC(v, h, m) {#v, v, sizeof v, h, m}
#define VECX(v) {#v, v, sizeof v, sizeof v, sizeof v}
static const struct vec vecs[] = {
	VEC(v_msg, 124, 128),
	VECX(v_nomsg),
	VECX(v_err_vers),
	VECX(v_err_bad_xdr),
	VECX(v_err_inval_htype),
	VECX(v_err_read_chunks),
	VECX(v_err_write_chunks),
	VECX(v_err_segments),
	VECX(v_err_write_resource),
	VECX(v_err_reply_resource),
	VECX(v_err_system),
	VECX(v_err_unknown),
	VECX(v_connprop),
	VECX(v_connprop_defaults),
	VECX(v_connprop_empty),
};
#define NVECS (sizeof vecs / sizeof vecs[0])

static struct rpcrdma_v2_hdr h, h2;
static uint8_t out[4096];

static void put_word(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void test_vectors_generic(void)
{
	for (size_t i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		int rc = rpcrdma_v2_decode(v->buf, v->len, NULL, &h);
		if (rc)
			fprintf(stderr, "%s: %s\n", v->name, rpcrdma_strerror(rc));
		CHECK_EQ(rc, 0);
		CHECK_EQ(h.hdr_len, v->hdr_len);
		CHECK_EQ(rpcrdma_v2_size(&h), v->hdr_len);
		CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), (int)v->hdr_len);
		CHECK_MEM(out, v->buf, v->hdr_len);
		int nospace = 0;
		for (size_t cap = 0; cap < v->hdr_len; cap++)
			nospace += rpcrdma_v2_encode(out, cap, &h) ==
				   RPCRDMA_ERR_NOSPACE;
		CHECK_EQ(nospace, v->hdr_len);
		memcpy(out + v->hdr_len, v->buf + v->hdr_len, v->len - v->hdr_len);
		CHECK_EQ(rpcrdma_v2_decode(out, v->len, NULL, &h2), 0);
		CHECK(rpcrdma_v2_hdr_equal(&h, &h2, false));
		/* Version sniffing (§3.1 rpcrdma_common). */
		struct rpcrdma_common c;
		CHECK_EQ(rpcrdma_common_decode(v->buf, v->len, &c), 0);
		CHECK_EQ(c.vers, 2);
		CHECK_EQ(c.proc, h.htype);
		CHECK_EQ(c.xid, h.xid);
	}
}

static void test_fields(void)
{
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, NULL, &h), 0);
	CHECK_EQ(h.xid, 0x0a0b0c0d);
	CHECK_EQ(h.vers, 2);
	CHECK_EQ(h.credit, 32);
	CHECK_EQ(h.htype, RPCRDMA_V2_MSG);
	CHECK_EQ(h.flags, 0);
	CHECK_EQ(h.inv_handle, 0x22222222);
	CHECK_EQ(h.chunks.nreads, 2);
	CHECK_EQ(rpcrdma_read_list_chunks(&h.chunks), 2);
	CHECK_EQ(h.chunks.reads[1].position, 0x80);
	CHECK_EQ(h.chunks.reads[1].target.handle, 0x33333333);
	CHECK_EQ(h.chunks.nwrites, 1);
	CHECK_EQ(h.chunks.writes[0].nsegs, 2);
	CHECK(h.chunks.writes[0].segs[1].offset == 0x100008000ull);
	CHECK(!h.chunks.has_reply);

	CHECK_EQ(rpcrdma_v2_decode(v_nomsg, sizeof v_nomsg, NULL, &h), 0);
	CHECK_EQ(h.htype, RPCRDMA_V2_NOMSG);
	CHECK_EQ(h.flags, RPCRDMA_V2_F_RESPONSE);
	CHECK_EQ(h.inv_handle, 0);
	CHECK(h.chunks.has_reply);
	CHECK_EQ(h.chunks.reply.segs[0].handle, 0x5555);

	struct {
		const uint8_t *buf;
		size_t len;
		uint32_t code, a, b;
	} errs[] = {
		{v_err_vers, sizeof v_err_vers, 1, 1, 2},
		{v_err_bad_xdr, sizeof v_err_bad_xdr, 2, 0, 0},
		{v_err_inval_htype, sizeof v_err_inval_htype, 3, 0, 0},
		{v_err_read_chunks, sizeof v_err_read_chunks, 4, 2, 0},
		{v_err_write_chunks, sizeof v_err_write_chunks, 5, 3, 0},
		{v_err_segments, sizeof v_err_segments, 6, 16, 0},
		{v_err_write_resource, sizeof v_err_write_resource, 7, 2, 8192},
		{v_err_reply_resource, sizeof v_err_reply_resource, 8, 65536, 0},
		{v_err_system, sizeof v_err_system, 9, 0, 0},
		{v_err_unknown, sizeof v_err_unknown, 10, 0, 0},
	};
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		CHECK_EQ(rpcrdma_v2_decode(errs[i].buf, errs[i].len, NULL, &h), 0);
		CHECK_EQ(h.htype, RPCRDMA_V2_ERROR);
		CHECK_EQ(h.xid, 0x11223344);
		CHECK_EQ(h.error.code, errs[i].code);
		const struct rpcrdma_v2_error *e = &h.error;
		switch (errs[i].code) {
		case 1:
			CHECK_EQ(e->vers_low, errs[i].a);
			CHECK_EQ(e->vers_high, errs[i].b);
			break;
		case 4:
		case 5:
			CHECK_EQ(e->max_chunks, errs[i].a);
			break;
		case 6:
			CHECK_EQ(e->max_segments, errs[i].a);
			break;
		case 7:
			CHECK_EQ(e->chunk_index, errs[i].a);
			CHECK_EQ(e->length_needed, errs[i].b);
			break;
		case 8:
			CHECK_EQ(e->length_needed, errs[i].a);
			break;
		default:
			CHECK(e->vers_low == 0 && e->max_chunks == 0 &&
			      e->length_needed == 0);
			break;
		}
	}

	CHECK_EQ(rpcrdma_v2_decode(v_connprop, sizeof v_connprop, NULL, &h), 0);
	CHECK_EQ(h.htype, RPCRDMA_V2_CONNPROP);
	CHECK_EQ(h.nprops, 3);
	CHECK_EQ(h.props[0].propid, RPCRDMA_V2_PROPID_RBSIZ);
	CHECK(h.props[0].has_value);
	CHECK_EQ(h.props[0].value, 8192);
	CHECK_EQ(h.props[1].propid, RPCRDMA_V2_PROPID_BRS);
	CHECK(h.props[1].has_value);
	CHECK_EQ(h.props[1].value, RPCRDMA_V2_RVREQSUP_GENL);
	CHECK_EQ(h.props[2].propid, 0xabcd0001);
	CHECK(!h.props[2].has_value);
	CHECK_EQ(h.props[2].len, 5);
	CHECK(h.props[2].data == v_connprop + 56); /* zero copy */
	CHECK_MEM(h.props[2].data, "hello", 5);

	CHECK_EQ(rpcrdma_v2_decode(v_connprop_defaults,
				   sizeof v_connprop_defaults, NULL, &h), 0);
	CHECK_EQ(h.nprops, 2);
	CHECK(!h.props[0].has_value);
	CHECK_EQ(h.props[1].propid, 7);
	CHECK_EQ(h.props[1].len, 0);
	CHECK_EQ(rpcrdma_v2_decode(v_connprop_empty, sizeof v_connprop_empty,
				   NULL, &h), 0);
	CHECK_EQ(h.nprops, 0);
}

static void test_encode_from_scratch(void)
{
	static const uint8_t hello[5] = {'h', 'e', 'l', 'l', 'o'};
	rpcrdma_v2_hdr_init(&h);
	h.vers = 2;
	h.credit = 128;
	h.htype = RPCRDMA_V2_CONNPROP;
	h.nprops = 3;
	h.props[0].propid = RPCRDMA_V2_PROPID_RBSIZ;
	h.props[0].has_value = true;
	h.props[0].value = 8192;
	h.props[1].propid = RPCRDMA_V2_PROPID_BRS;
	h.props[1].has_value = true;
	h.props[1].value = RPCRDMA_V2_RVREQSUP_GENL;
	h.props[2].propid = 0xabcd0001;
	h.props[2].data = hello;
	h.props[2].len = 5;
	CHECK_EQ(rpcrdma_v2_size(&h), sizeof v_connprop);
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), sizeof v_connprop);
	CHECK_MEM(out, v_connprop, sizeof v_connprop);

	rpcrdma_v2_hdr_init(&h);
	h.xid = 0x11223344;
	h.vers = 2;
	h.credit = 10;
	h.htype = RPCRDMA_V2_ERROR;
	h.flags = RPCRDMA_V2_F_RESPONSE;
	h.error.code = RPCRDMA_V2_ERR_WRITE_RESOURCE;
	h.error.chunk_index = 2;
	h.error.length_needed = 8192;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), sizeof v_err_write_resource);
	CHECK_MEM(out, v_err_write_resource, sizeof v_err_write_resource);
	/* Unknown code: written code-only. */
	h.error.code = 10;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), sizeof v_err_unknown);
	CHECK_MEM(out, v_err_unknown, sizeof v_err_unknown);
}

static void test_truncations(void)
{
	for (size_t i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		int trunc = 0;
		for (size_t n = 0; n < v->min_len; n++) {
			uint8_t *p = malloc(n ? n : 1);
			memcpy(p, v->buf, n);
			trunc += rpcrdma_v2_decode(p, n, NULL, &h) ==
				 RPCRDMA_ERR_TRUNCATED;
			free(p);
		}
		if (trunc != (int)v->min_len)
			fprintf(stderr, "%s\n", v->name);
		CHECK_EQ(trunc, v->min_len);
	}
}

static void test_bad_version_and_htype(void)
{
	uint8_t buf[sizeof v_msg];
	static const uint32_t vers[] = {0, 1, 3, 0xffffffffu};
	for (size_t i = 0; i < 4; i++) {
		memcpy(buf, v_msg, sizeof buf);
		put_word(buf + 4, vers[i]);
		CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_BAD_VERSION);
		CHECK_EQ(h.xid, 0x0a0b0c0d);
		CHECK_EQ(h.vers, vers[i]);
		CHECK_EQ(h.credit, 32);
		CHECK_EQ(rpcrdma_v2_decode(buf, 16, NULL, &h),
			 RPCRDMA_ERR_BAD_VERSION);
	}
	static const uint32_t htypes[] = {2, 3, 6, 0x100, 0xffffffffu};
	for (size_t i = 0; i < 5; i++) {
		memcpy(buf, v_msg, sizeof buf);
		put_word(buf + 12, htypes[i]);
		put_word(buf + 16, 0x80000001u);
		/* §5.2: engine answers RDMA2_ERR_INVAL_HTYPE; prefix kept. */
		CHECK_EQ(rpcrdma_v2_decode(buf, 20, NULL, &h),
			 RPCRDMA_ERR_BAD_PROC);
		CHECK_EQ(h.htype, htypes[i]);
		CHECK_EQ(h.flags, 0x80000001u);
		CHECK_EQ(h.xid, 0x0a0b0c0d);
		CHECK_EQ(rpcrdma_v2_decode(buf, 16, NULL, &h),
			 RPCRDMA_ERR_TRUNCATED);
		rpcrdma_v2_hdr_init(&h);
		h.vers = 2;
		h.htype = htypes[i];
		CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h),
			 RPCRDMA_ERR_BAD_PROC);
		CHECK_EQ(rpcrdma_v2_size(&h), 0);
	}
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, NULL, &h), 0);
	h.vers = 1;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_VERSION);
}

static void test_flags(void)
{
	uint8_t buf[sizeof v_msg];
	/* Reserved bits are reported, not rejected (§9.4) ... */
	memcpy(buf, v_msg, sizeof buf);
	put_word(buf + 16, 0xfffffffeu);
	CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h), 0);
	CHECK_EQ(h.flags, 0xfffffffeu);
	CHECK(h.flags & RPCRDMA_V2_F_RESERVED);
	CHECK(!(h.flags & RPCRDMA_V2_F_RESPONSE));
	/* ... and written as zero (§3.2: the sender MUST set them to 0). */
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), 124);
	CHECK_MEM(out, v_msg, 124);
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, NULL, &h2), 0);
	CHECK(rpcrdma_v2_hdr_equal(&h, &h2, true));
	CHECK(!rpcrdma_v2_hdr_equal(&h, &h2, false));

	/* RDMA2_ERROR MUST have F_RESPONSE (§3.2). */
	uint8_t eb[sizeof v_err_segments];
	memcpy(eb, v_err_segments, sizeof eb);
	put_word(eb + 16, 0);
	CHECK_EQ(rpcrdma_v2_decode(eb, sizeof eb, NULL, &h), RPCRDMA_ERR_BAD_FLAGS);
	CHECK_EQ(h.error.code, RPCRDMA_V2_ERR_SEGMENTS);
	CHECK_EQ(h.error.max_segments, 16);
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_FLAGS);
	put_word(eb + 16, 0xfffffffeu);
	CHECK_EQ(rpcrdma_v2_decode(eb, sizeof eb, NULL, &h), RPCRDMA_ERR_BAD_FLAGS);
	put_word(eb + 16, 0x80000001u);
	CHECK_EQ(rpcrdma_v2_decode(eb, sizeof eb, NULL, &h), 0);
	CHECK_EQ(h.flags, 0x80000001u);
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), sizeof v_err_segments);
	CHECK_MEM(out, v_err_segments, sizeof v_err_segments);
}

static void test_properties(void)
{
	uint8_t buf[sizeof v_connprop];
	/* RBSIZ with a 2-byte / 8-byte value: BAD_PROPERTY (§4.1). */
	static const uint8_t rbsiz_short[] = {
		W(0), W(2), W(1), W(5), W(0), /* prefix, CONNPROP */
		W(1),          /* 1 property */
		W(1),          /*  RBSIZ */
		W(2),          /*  length 2: too short for uint32 */
		0x10, 0x00, 0, 0, /* data + pad */
	};
	CHECK_EQ(rpcrdma_v2_decode(rbsiz_short, sizeof rbsiz_short, NULL, &h),
		 RPCRDMA_ERR_BAD_PROPERTY);
	static const uint8_t rbsiz_long[] = {
		W(0), W(2), W(1), W(5), W(0), /* prefix, CONNPROP */
		W(1),          /* 1 property */
		W(1),          /*  RBSIZ */
		W(8),          /*  length 8 */
		W(0), W(4096), /*  data */
	};
	CHECK_EQ(rpcrdma_v2_decode(rbsiz_long, sizeof rbsiz_long, NULL, &h),
		 RPCRDMA_ERR_BAD_PROPERTY);
	/* BRS outside the enum (§4.2.2). */
	memcpy(buf, v_connprop, sizeof buf);
	put_word(buf + 44, 3);
	CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
		 RPCRDMA_ERR_BAD_PROPERTY);
	rpcrdma_v2_hdr_init(&h);
	h.vers = 2;
	h.htype = RPCRDMA_V2_CONNPROP;
	h.nprops = 1;
	h.props[0].propid = RPCRDMA_V2_PROPID_BRS;
	h.props[0].has_value = true;
	h.props[0].value = 3;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_PROPERTY);
	h.props[0].propid = 99;
	h.props[0].len = 4;
	h.props[0].data = NULL;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_PROPERTY);
	h.nprops = RPCRDMA_V2_MAX_PROPS + 1;
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h),
		 RPCRDMA_ERR_TOO_MANY_PROPERTIES);
	/* Property counts near UINT32_MAX and just over storage. */
	static const uint32_t counts[] = {0xffffffffu, 0x80000000u,
					  RPCRDMA_V2_MAX_PROPS + 1};
	for (size_t i = 0; i < 3; i++) {
		memcpy(buf, v_connprop, sizeof buf);
		put_word(buf + 20, counts[i]);
		CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_TOO_MANY_PROPERTIES);
	}
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	lim.max_properties = 2;
	CHECK_EQ(rpcrdma_v2_decode(v_connprop, sizeof v_connprop, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_PROPERTIES);
	lim.max_properties = 3;
	CHECK_EQ(rpcrdma_v2_decode(v_connprop, sizeof v_connprop, &lim, &h), 0);
	/* Property data length past the end (§4.1: BAD_XDR). */
	static const uint32_t lens[] = {0xffffffffu, 0xfffffffcu, 0x7fffffffu, 9};
	for (size_t i = 0; i < 4; i++) {
		memcpy(buf, v_connprop, sizeof buf);
		put_word(buf + 52, lens[i]);
		CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_TRUNCATED);
	}
	/* Nonzero pad on decode is accepted; re-encode pads with zero and
	 * keeps the data bytes exact. */
	memcpy(buf, v_connprop, sizeof buf);
	buf[sizeof buf - 1] = 0xee;
	CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h), 0);
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), sizeof v_connprop);
	CHECK_MEM(out, v_connprop, sizeof v_connprop);
	/* names */
	CHECK(strcmp(rpcrdma_v2_propid_name(1), "RDMA2_PROPID_RBSIZ") == 0);
	CHECK(strcmp(rpcrdma_v2_propid_name(2), "RDMA2_PROPID_BRS") == 0);
	CHECK(rpcrdma_v2_propid_name(3) == NULL);
	CHECK(strcmp(rpcrdma_v2_htype_name(5), "RDMA2_CONNPROP") == 0);
	CHECK(rpcrdma_v2_htype_name(2) == NULL);
	CHECK(strcmp(rpcrdma_v2_err_name(9), "RDMA2_ERR_SYSTEM") == 0);
	CHECK(strcmp(rpcrdma_v2_err_name(7), "RDMA2_ERR_WRITE_RESOURCE") == 0);
	CHECK(rpcrdma_v2_err_name(10) == NULL);
}

static void test_chunk_errors(void)
{
	uint8_t buf[sizeof v_msg];
	/* NOMSG with nothing present. */
	static const uint8_t nomsg_empty[] = {
		W(1), W(2), W(1), W(1), W(0), /* prefix, RDMA2_NOMSG */
		W(0),                         /* rdma_inv_handle */
		W(0), W(0), W(0),             /* three empty lists */
	};
	CHECK_EQ(rpcrdma_v2_decode(nomsg_empty, sizeof nomsg_empty, NULL, &h),
		 RPCRDMA_ERR_BAD_CHUNK);
	CHECK_EQ(rpcrdma_v2_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_CHUNK);
	/* Bool of 2 at each list discriminator of v_msg. */
	static const size_t disc[] = {24, 48, 72, 76, 116, 120};
	for (size_t i = 0; i < 6; i++) {
		memcpy(buf, v_msg, sizeof buf);
		put_word(buf + disc[i], 2);
		CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_BAD_BOOL);
	}
	/* Write chunk count near UINT32_MAX. */
	memcpy(buf, v_msg, sizeof buf);
	put_word(buf + 80, 0xfffffff0u);
	CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	lim.max_read_segments = 1;
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	lim = rpcrdma_limits_default();
	lim.max_write_chunks = 0;
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_CHUNKS);
	lim = rpcrdma_limits_default();
	lim.max_chunk_segments = 1;
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	lim = rpcrdma_limits_default();
	lim.max_header_size = 124;
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, &lim, &h), 0);
	lim.max_header_size = 123;
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, &lim, &h),
		 RPCRDMA_ERR_HEADER_TOO_LONG);
	memcpy(buf, v_msg, sizeof buf);
	put_word(buf + 28, 0x42);
	CHECK_EQ(rpcrdma_v2_decode(buf, sizeof buf, NULL, &h),
		 RPCRDMA_ERR_BAD_POSITION);
	CHECK_EQ(rpcrdma_v2_decode(NULL, 1, NULL, &h), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, NULL, NULL),
		 RPCRDMA_ERR_INVAL);
}

static uint64_t rng_state = 0x13198a2e03707344ull;
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void rand_seg(struct rpcrdma_segment *s)
{
	s->handle = rnd();
	s->length = rnd();
	s->offset = (uint64_t)rnd() << 32 | rnd();
}

static void rand_chunks(struct rpcrdma_chunk_lists *cl)
{
	rpcrdma_chunk_lists_init(cl);
	cl->nreads = rnd() % 6;
	for (uint32_t i = 0; i < cl->nreads; i++) {
		cl->reads[i].position =
			i && rnd() % 2 ? cl->reads[i - 1].position : rnd() & ~3u;
		rand_seg(&cl->reads[i].target);
	}
	cl->nwrites = rnd() % (RPCRDMA_MAX_WRITE_CHUNKS + 1);
	for (uint32_t i = 0; i < cl->nwrites; i++) {
		cl->writes[i].nsegs = rnd() % 9;
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++)
			rand_seg(&cl->writes[i].segs[j]);
	}
	cl->has_reply = rnd() & 1;
	cl->reply.nsegs = cl->has_reply ? rnd() % (RPCRDMA_MAX_CHUNK_SEGMENTS + 1) : 0;
	for (uint32_t j = 0; j < cl->reply.nsegs; j++)
		rand_seg(&cl->reply.segs[j]);
}

static void test_random_round_trip(void)
{
	static uint8_t a[16384], b[16384], pool[256];
	static const uint32_t htypes[] = {0, 1, 4, 5};
	for (size_t i = 0; i < sizeof pool; i++)
		pool[i] = (uint8_t)rnd();
	const int iters = 5000;
	int ok = 0;
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	lim.max_header_size = sizeof a;
	for (int it = 0; it < iters; it++) {
		rpcrdma_v2_hdr_init(&h);
		h.xid = rnd();
		h.vers = 2;
		h.credit = rnd();
		h.htype = htypes[rnd() % 4];
		h.flags = rnd() % 2;
		switch (h.htype) {
		case RPCRDMA_V2_MSG:
		case RPCRDMA_V2_NOMSG:
			h.inv_handle = rnd();
			do
				rand_chunks(&h.chunks);
			while (h.htype == RPCRDMA_V2_NOMSG &&
			       rpcrdma_chunk_lists_empty(&h.chunks));
			break;
		case RPCRDMA_V2_ERROR:
			h.flags = RPCRDMA_V2_F_RESPONSE;
			h.error.code = rnd() % 12;
			h.error.vers_low = h.error.code == 1 ? rnd() : 0;
			h.error.vers_high = h.error.code == 1 ? rnd() : 0;
			h.error.max_chunks = h.error.code == 4 || h.error.code == 5 ? rnd() : 0;
			h.error.max_segments = h.error.code == 6 ? rnd() : 0;
			h.error.chunk_index = h.error.code == 7 ? rnd() : 0;
			h.error.length_needed = h.error.code == 7 || h.error.code == 8 ? rnd() : 0;
			break;
		default:
			h.nprops = rnd() % (RPCRDMA_V2_MAX_PROPS + 1);
			for (uint32_t i = 0; i < h.nprops; i++) {
				struct rpcrdma_v2_prop *p = &h.props[i];
				p->propid = rnd() % 2 ? 1 + rnd() % 2 : rnd();
				if (p->propid == 1 || p->propid == 2) {
					p->has_value = rnd() % 4 != 0;
					p->value = p->has_value
						? (p->propid == 2 ? rnd() % 3 : rnd()) : 0;
				} else {
					p->len = rnd() % 64;
					p->data = pool + rnd() % 128;
				}
			}
			break;
		}
		/* Reserved flag bits are dropped by the encoder. */
		uint32_t junk = rnd() & RPCRDMA_V2_F_RESERVED;
		h.flags |= junk;
		int n = rpcrdma_v2_encode(a, sizeof a, &h);
		if (n <= 0 || (size_t)n != rpcrdma_v2_size(&h))
			continue;
		put_word(a + n, h.xid);
		int rc = rpcrdma_v2_decode(a, (size_t)n + 4, &lim, &h2);
		int n2 = rpcrdma_v2_encode(b, sizeof b, &h2);
		ok += rc == 0 && h2.hdr_len == (size_t)n &&
		      (h2.flags & RPCRDMA_V2_F_RESERVED) == 0 &&
		      rpcrdma_v2_hdr_equal(&h, &h2, true) && n2 == n &&
		      memcmp(a, b, (size_t)n) == 0;
	}
	CHECK_EQ(ok, iters);
}

/* The bridge (wire/rpcrdma_hdr.h): v_msg's lists described in v1 terms
 * and written in version 2 give v_msg's header to the byte (its rdma_flags
 * and rdma_inv_handle from the arguments); in version 1 exactly what the
 * v1 encoder writes; the size function agrees with both. */
static void test_bridge_from_v1(void)
{
	static struct rpcrdma_v2_hdr dec;
	static struct rpcrdma_v1_hdr h1;
	uint8_t buf[512], ref[512];
	CHECK_EQ(rpcrdma_v2_decode(v_msg, sizeof v_msg, NULL, &dec), 0);
	rpcrdma_v1_hdr_init(&h1);
	h1.xid = dec.xid;
	h1.vers = RPCRDMA_VERSION_1;
	h1.credit = dec.credit;
	h1.proc = RPCRDMA_V1_MSG;
	rpcrdma_chunk_lists_copy(&h1.chunks, &dec.chunks);
	int n = rpcrdma_hdr_encode(buf, sizeof buf, RPCRDMA_VERSION_2, &h1,
				   false, 0x22222222);
	CHECK_EQ(n, (int)sizeof v_msg - 4); /* the RPC first word is not ours */
	CHECK(memcmp(buf, v_msg, (size_t)n) == 0);
	CHECK_EQ(rpcrdma_hdr_size(RPCRDMA_VERSION_2, &h1), (size_t)n);
	/* A reply: RPCRDMA2_F_RESPONSE, and no handle. */
	n = rpcrdma_hdr_encode(buf, sizeof buf, RPCRDMA_VERSION_2, &h1, true, 0);
	CHECK_EQ(n, (int)sizeof v_msg - 4);
	CHECK_EQ(rpcrdma_be32_get(buf + 16), RPCRDMA_V2_F_RESPONSE);
	CHECK_EQ(rpcrdma_be32_get(buf + 20), 0);
	CHECK(memcmp(buf + 24, v_msg + 24, (size_t)n - 24) == 0);
	/* Version 1: the v1 encoder's bytes, flags and handle unused. */
	int m = rpcrdma_v1_encode(ref, sizeof ref, &h1);
	CHECK(m > 0);
	n = rpcrdma_hdr_encode(buf, sizeof buf, RPCRDMA_VERSION_1, &h1, true,
			       0x22222222);
	CHECK_EQ(n, m);
	CHECK(memcmp(buf, ref, (size_t)m) == 0);
	CHECK_EQ(rpcrdma_hdr_size(RPCRDMA_VERSION_1, &h1), (size_t)m);
	/* The same refusals as rpcrdma_v2_encode(): too small a buffer,
	 * another header type, RDMA2_NOMSG without a chunk. */
	CHECK_EQ(rpcrdma_hdr_encode(buf, 40, RPCRDMA_VERSION_2, &h1, false, 0),
		 RPCRDMA_ERR_NOSPACE);
	h1.proc = RPCRDMA_V1_ERROR;
	CHECK_EQ(rpcrdma_hdr_encode(buf, sizeof buf, RPCRDMA_VERSION_2, &h1,
				    true, 0),
		 RPCRDMA_ERR_BAD_PROC);
	h1.proc = RPCRDMA_V1_NOMSG;
	rpcrdma_chunk_lists_init(&h1.chunks);
	CHECK_EQ(rpcrdma_hdr_encode(buf, sizeof buf, RPCRDMA_VERSION_2, &h1,
				    false, 0),
		 RPCRDMA_ERR_BAD_CHUNK);
}

int main(void)
{
	test_vectors_generic();
	test_fields();
	test_encode_from_scratch();
	test_truncations();
	test_bad_version_and_htype();
	test_flags();
	test_properties();
	test_chunk_errors();
	test_random_round_trip();
	test_bridge_from_v1();
	TEST_MAIN_END();
}
