/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* RPC-over-RDMA version 1 header codec (RFC 8166 §4.1.2, §4.2, §4.5;
 * RFC 5666 §4.3 for RDMA_MSGP/RDMA_DONE): hand-written known answers for
 * every procedure and error code, every truncation, malformed input,
 * limits, version sniffing and a seeded random round trip. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/rpcrdma_v1.h"

#define W(x)                                                           \
	(uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	    (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(uint32_t)(x)

/* RDMA_MSG, no chunks (RFC 8166 §4.7 last paragraph: three zero words). */
static const uint8_t v_msg_plain[] = {
	W(0xdeadbeef), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(32),         /* rdma_credit */
	W(0),          /* rdma_proc = RDMA_MSG */
	W(0),          /* Read list: empty */
	W(0),          /* Write list: empty */
	W(0),          /* Reply chunk: absent */
	W(0xdeadbeef), /* RPC message: xid (hdr_len = 28) */
	W(0),          /* RPC message: msg_type CALL */
};

/* RDMA_MSG with 3 read segments at positions 0x80, 0x80, 0x200, a Write
 * list of 2 chunks (3 and 2 segments) and a 2-segment Reply chunk. */
static const uint8_t v_msg_full[] = {
	W(0x01020304), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(128),        /* rdma_credit */
	W(0),          /* rdma_proc = RDMA_MSG */
	W(1),          /* Read list: entry */
	W(0x80),       /*  position 128 */
	W(0xa0000001), W(0x1000), W(0x0), W(0x7f000000), /*  HLOO */
	W(1),          /* Read list: entry */
	W(0x80),       /*  position 128 (same Read chunk) */
	W(0xa0000002), W(0x0ffd), W(0x0), W(0x7f001000), /*  HLOO */
	W(1),          /* Read list: entry */
	W(0x200),      /*  position 512 (second Read chunk) */
	W(0xa0000003), W(0x40), W(0x1), W(0x00000000), /*  HLOO */
	W(0),          /* Read list: end */
	W(1),          /* Write list: chunk */
	W(3),          /*  3 segments */
	W(0xb0000001), W(0x8000), W(0x0), W(0x10000), /*  HLOO */
	W(0xb0000002), W(0x8000), W(0x0), W(0x18000), /*  HLOO */
	W(0xb0000003), W(0x0004), W(0x0), W(0x20000), /*  HLOO */
	W(1),          /* Write list: chunk */
	W(2),          /*  2 segments */
	W(0xb0000004), W(0x1000), W(0xffffffff), W(0xfffff000), /*  HLOO */
	W(0xb0000005), W(0x0010), W(0x0), W(0x0),     /*  HLOO */
	W(0),          /* Write list: end */
	W(1),          /* Reply chunk: present */
	W(2),          /*  2 segments */
	W(0xc0000001), W(0x1000), W(0x0), W(0x300000), /*  HLOO */
	W(0xc0000002), W(0x0800), W(0x0), W(0x301000), /*  HLOO */
	W(0x01020304), /* RPC message: xid (hdr_len = 232) */
};

/* RDMA_NOMSG, Long Reply: only a Reply chunk (RFC 8166 §3.5.3). */
static const uint8_t v_nomsg_reply[] = {
	W(0xcafef00d), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(1),          /* rdma_credit */
	W(1),          /* rdma_proc = RDMA_NOMSG */
	W(0),          /* Read list: empty */
	W(0),          /* Write list: empty */
	W(1),          /* Reply chunk: present */
	W(1),          /*  1 segment */
	W(0x00abcdef), W(0x00010000), W(0x00000000), W(0xdead0000), /* HLOO */
};

/* RDMA_NOMSG, Long Call: Position-Zero Read chunk of 2 segments. */
static const uint8_t v_nomsg_pz[] = {
	W(0x00000007), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(16),         /* rdma_credit */
	W(1),          /* rdma_proc = RDMA_NOMSG */
	W(1),          /* Read list: entry */
	W(0),          /*  position 0 */
	W(0x11), W(0x1000), W(0x0), W(0x1000), /*  HLOO */
	W(1),          /* Read list: entry */
	W(0),          /*  position 0 */
	W(0x12), W(0x0200), W(0x0), W(0x2000), /*  HLOO */
	W(0),          /* Read list: end */
	W(0),          /* Write list: empty */
	W(0),          /* Reply chunk: absent */
};

/* RDMA_MSGP (RFC 5666 §4.3): align and thresh BEFORE the chunk lists. */
static const uint8_t v_msgp[] = {
	W(0x00001234), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(8),          /* rdma_credit */
	W(2),          /* rdma_proc = RDMA_MSGP */
	W(4096),       /* rdma_align */
	W(512),        /* rdma_thresh */
	W(0),          /* Read list: empty */
	W(1),          /* Write list: chunk */
	W(1),          /*  1 segment */
	W(0x77), W(0x2000), W(0x0), W(0x4000), /*  HLOO */
	W(0),          /* Write list: end */
	W(0),          /* Reply chunk: absent */
	W(0x00001234), /* RPC message: xid (hdr_len = 60) */
};

/* RDMA_DONE (RFC 5666 §4.3): no body. */
static const uint8_t v_done[] = {
	W(0x0badf00d), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(0),          /* rdma_credit */
	W(3),          /* rdma_proc = RDMA_DONE */
};

/* RDMA_ERROR / ERR_VERS (RFC 8166 §4.5.1). */
static const uint8_t v_err_vers[] = {
	W(0x55667788), /* rdma_xid (echoed) */
	W(1),          /* rdma_vers */
	W(64),         /* rdma_credit */
	W(4),          /* rdma_proc = RDMA_ERROR */
	W(1),          /* rdma_err = ERR_VERS */
	W(1),          /* rdma_vers_low */
	W(1),          /* rdma_vers_high */
};

/* RDMA_ERROR / ERR_CHUNK (RFC 8166 §4.5.2). */
static const uint8_t v_err_chunk[] = {
	W(0x99aabbcc), /* rdma_xid */
	W(1),          /* rdma_vers */
	W(64),         /* rdma_credit */
	W(4),          /* rdma_proc = RDMA_ERROR */
	W(2),          /* rdma_err = ERR_CHUNK */
};

struct vec {
	const char *name;
	const uint8_t *buf;
	size_t len;
	size_t hdr_len;
	size_t min_len; /* shortest buffer that decodes */
};

#define VEC(v, h, m) {#v, v, sizeof v, h, m}
static const struct vec vecs[] = {
	VEC(v_msg_plain, 28, 32),
	VEC(v_msg_full, 232, 236),
	VEC(v_nomsg_reply, 48, 48),
	VEC(v_nomsg_pz, 76, 76),
	VEC(v_msgp, 60, 64),
	VEC(v_done, 16, 16),
	VEC(v_err_vers, 28, 28),
	VEC(v_err_chunk, 20, 20),
};
#define NVECS (sizeof vecs / sizeof vecs[0])

static struct rpcrdma_v1_hdr h, h2;
static uint8_t out[4096];

static void check_seg(const struct rpcrdma_segment *s, uint32_t hd, uint32_t l,
		      uint64_t o)
{
	CHECK_EQ(s->handle, hd);
	CHECK_EQ(s->length, l);
	CHECK(s->offset == o);
}

/* Each vector: decode, hdr_len, size, byte-exact encode, NOSPACE below. */
static void test_vectors_generic(void)
{
	for (size_t i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		int rc = rpcrdma_v1_decode(v->buf, v->len, NULL, &h);
		if (rc)
			fprintf(stderr, "%s: %s\n", v->name, rpcrdma_strerror(rc));
		CHECK_EQ(rc, 0);
		CHECK_EQ(h.hdr_len, v->hdr_len);
		CHECK_EQ(rpcrdma_v1_size(&h), v->hdr_len);
		CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), (int)v->hdr_len);
		CHECK_MEM(out, v->buf, v->hdr_len);
		int nospace = 0;
		for (size_t cap = 0; cap < v->hdr_len; cap++)
			nospace += rpcrdma_v1_encode(out, cap, &h) ==
				   RPCRDMA_ERR_NOSPACE;
		CHECK_EQ(nospace, v->hdr_len);
		/* decode(encode(x)) == x */
		memcpy(out + v->hdr_len, v->buf + v->hdr_len, v->len - v->hdr_len);
		CHECK_EQ(rpcrdma_v1_decode(out, v->len, NULL, &h2), 0);
		CHECK(rpcrdma_v1_hdr_equal(&h, &h2));
		/* Sniffing reads just the common words (RFC 8166 §4.2). */
		struct rpcrdma_common c;
		CHECK_EQ(rpcrdma_common_decode(v->buf, v->len, &c), 0);
		CHECK_EQ(c.xid, h.xid);
		CHECK_EQ(c.vers, 1);
		CHECK_EQ(c.credit, h.credit);
		CHECK_EQ(c.proc, h.proc);
	}
}

static void test_fields(void)
{
	CHECK_EQ(rpcrdma_v1_decode(v_msg_plain, sizeof v_msg_plain, NULL, &h), 0);
	CHECK_EQ(h.xid, 0xdeadbeef);
	CHECK_EQ(h.vers, 1);
	CHECK_EQ(h.credit, 32);
	CHECK_EQ(h.proc, RPCRDMA_V1_MSG);
	CHECK(rpcrdma_chunk_lists_empty(&h.chunks));

	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, NULL, &h), 0);
	CHECK_EQ(h.xid, 0x01020304);
	CHECK_EQ(h.credit, 128);
	CHECK_EQ(h.chunks.nreads, 3);
	CHECK_EQ(h.chunks.reads[0].position, 0x80);
	CHECK_EQ(h.chunks.reads[1].position, 0x80);
	CHECK_EQ(h.chunks.reads[2].position, 0x200);
	check_seg(&h.chunks.reads[0].target, 0xa0000001, 0x1000, 0x7f000000);
	check_seg(&h.chunks.reads[1].target, 0xa0000002, 0x0ffd, 0x7f001000);
	check_seg(&h.chunks.reads[2].target, 0xa0000003, 0x40, 0x100000000ull);
	CHECK_EQ(rpcrdma_read_list_chunks(&h.chunks), 2);
	CHECK_EQ(h.chunks.nwrites, 2);
	CHECK_EQ(h.chunks.writes[0].nsegs, 3);
	check_seg(&h.chunks.writes[0].segs[2], 0xb0000003, 4, 0x20000);
	CHECK_EQ(h.chunks.writes[1].nsegs, 2);
	check_seg(&h.chunks.writes[1].segs[0], 0xb0000004, 0x1000,
		  0xfffffffffffff000ull);
	CHECK(h.chunks.has_reply);
	CHECK_EQ(h.chunks.reply.nsegs, 2);
	check_seg(&h.chunks.reply.segs[1], 0xc0000002, 0x800, 0x301000);

	CHECK_EQ(rpcrdma_v1_decode(v_nomsg_reply, sizeof v_nomsg_reply, NULL, &h), 0);
	CHECK_EQ(h.proc, RPCRDMA_V1_NOMSG);
	CHECK_EQ(h.chunks.nreads, 0);
	CHECK_EQ(h.chunks.nwrites, 0);
	CHECK(h.chunks.has_reply);
	check_seg(&h.chunks.reply.segs[0], 0x00abcdef, 0x10000, 0xdead0000);

	CHECK_EQ(rpcrdma_v1_decode(v_nomsg_pz, sizeof v_nomsg_pz, NULL, &h), 0);
	CHECK_EQ(h.chunks.nreads, 2);
	CHECK_EQ(rpcrdma_read_list_chunks(&h.chunks), 1);
	CHECK(!h.chunks.has_reply);

	CHECK_EQ(rpcrdma_v1_decode(v_msgp, sizeof v_msgp, NULL, &h), 0);
	CHECK_EQ(h.proc, RPCRDMA_V1_MSGP);
	CHECK_EQ(h.align, 4096);
	CHECK_EQ(h.thresh, 512);
	CHECK_EQ(h.chunks.nwrites, 1);
	check_seg(&h.chunks.writes[0].segs[0], 0x77, 0x2000, 0x4000);

	CHECK_EQ(rpcrdma_v1_decode(v_done, sizeof v_done, NULL, &h), 0);
	CHECK_EQ(h.proc, RPCRDMA_V1_DONE);
	CHECK_EQ(h.xid, 0x0badf00d);

	CHECK_EQ(rpcrdma_v1_decode(v_err_vers, sizeof v_err_vers, NULL, &h), 0);
	CHECK_EQ(h.proc, RPCRDMA_V1_ERROR);
	CHECK_EQ(h.err, RPCRDMA_V1_ERR_VERS);
	CHECK_EQ(h.vers_low, 1);
	CHECK_EQ(h.vers_high, 1);
	CHECK_EQ(h.xid, 0x55667788);

	CHECK_EQ(rpcrdma_v1_decode(v_err_chunk, sizeof v_err_chunk, NULL, &h), 0);
	CHECK_EQ(h.err, RPCRDMA_V1_ERR_CHUNK);
}

/* Encoding from a struct built by hand gives the hand-written bytes. */
static void test_encode_from_scratch(void)
{
	rpcrdma_v1_hdr_init(&h);
	h.xid = 0x55667788;
	h.vers = 1;
	h.credit = 64;
	h.proc = RPCRDMA_V1_ERROR;
	h.err = RPCRDMA_V1_ERR_VERS;
	h.vers_low = 1;
	h.vers_high = 1;
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), sizeof v_err_vers);
	CHECK_MEM(out, v_err_vers, sizeof v_err_vers);

	rpcrdma_v1_hdr_init(&h);
	h.xid = 0xcafef00d;
	h.vers = 1;
	h.credit = 1;
	h.proc = RPCRDMA_V1_NOMSG;
	h.chunks.has_reply = true;
	h.chunks.reply.nsegs = 1;
	h.chunks.reply.segs[0].handle = 0x00abcdef;
	h.chunks.reply.segs[0].length = 0x10000;
	h.chunks.reply.segs[0].offset = 0xdead0000;
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), sizeof v_nomsg_reply);
	CHECK_MEM(out, v_nomsg_reply, sizeof v_nomsg_reply);

	rpcrdma_v1_hdr_init(&h);
	h.xid = 0x0badf00d;
	h.vers = 1;
	h.proc = RPCRDMA_V1_DONE;
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), 16);
	CHECK_MEM(out, v_done, 16);
}

/* Every strict prefix shorter than the minimum is TRUNCATED. */
static void test_truncations(void)
{
	static uint8_t exact[4096];
	for (size_t i = 0; i < NVECS; i++) {
		const struct vec *v = &vecs[i];
		int trunc = 0;
		for (size_t n = 0; n < v->min_len; n++) {
			/* copy so ASan sees any over-read of the prefix */
			uint8_t *p = malloc(n ? n : 1);
			memcpy(p, v->buf, n);
			trunc += rpcrdma_v1_decode(p, n, NULL, &h) ==
				 RPCRDMA_ERR_TRUNCATED;
			free(p);
		}
		CHECK_EQ(trunc, v->min_len);
		memcpy(exact, v->buf, v->min_len);
		CHECK_EQ(rpcrdma_v1_decode(exact, v->min_len, NULL, &h), 0);
	}
}

static void put_word(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void test_bad_version(void)
{
	static const uint32_t bad[] = {0, 2, 3, 0x100, 0xffffffffu};
	uint8_t buf[sizeof v_msg_full];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(buf, v_msg_full, sizeof buf);
		put_word(buf + 4, bad[i]);
		/* RFC 8166 §4.5: xid and vers are kept so ERR_VERS can echo
		 * them. */
		CHECK_EQ(rpcrdma_v1_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_BAD_VERSION);
		CHECK_EQ(h.xid, 0x01020304);
		CHECK_EQ(h.vers, bad[i]);
		CHECK_EQ(h.credit, 128);
		CHECK_EQ(h.proc, 0);
		/* even when only the four words are there */
		CHECK_EQ(rpcrdma_v1_decode(buf, 16, NULL, &h),
			 RPCRDMA_ERR_BAD_VERSION);
		CHECK_EQ(h.xid, 0x01020304);
	}
	/* A v1-format ERR_VERS echoing version 2 (a v1 peer's answer to a
	 * v2 probe): BAD_VERSION, but the range is decoded. */
	static const uint8_t echo[] = {
		W(0x00000042), /* rdma_xid */
		W(2),          /* rdma_vers (echoed from the v2 probe) */
		W(1),          /* rdma_credit */
		W(4),          /* rdma_proc = RDMA_ERROR */
		W(1),          /* rdma_err = ERR_VERS */
		W(1),          /* rdma_vers_low */
		W(1),          /* rdma_vers_high */
	};
	CHECK_EQ(rpcrdma_v1_decode(echo, sizeof echo, NULL, &h),
		 RPCRDMA_ERR_BAD_VERSION);
	CHECK_EQ(h.xid, 0x42);
	CHECK_EQ(h.err, RPCRDMA_V1_ERR_VERS);
	CHECK_EQ(h.vers_low, 1);
	CHECK_EQ(h.vers_high, 1);
	CHECK_EQ(rpcrdma_v1_decode(echo, 24, NULL, &h), RPCRDMA_ERR_BAD_VERSION);
	CHECK_EQ(h.err, 0);
	/* The encoder may echo any version in an RDMA_ERROR ... */
	CHECK_EQ(rpcrdma_v1_decode(v_err_vers, sizeof v_err_vers, NULL, &h), 0);
	h.vers = 2;
	h.xid = 0x42;
	h.credit = 1;
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), sizeof echo);
	CHECK_MEM(out, echo, sizeof echo);
	/* ... but nothing else. */
	CHECK_EQ(rpcrdma_v1_decode(v_msg_plain, sizeof v_msg_plain, NULL, &h), 0);
	h.vers = 2;
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_VERSION);
}

static void test_bad_proc(void)
{
	static const uint32_t bad[] = {5, 6, 0x80000000u, 0xffffffffu};
	uint8_t buf[sizeof v_msg_plain];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(buf, v_msg_plain, sizeof buf);
		put_word(buf + 12, bad[i]);
		CHECK_EQ(rpcrdma_v1_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_BAD_PROC);
		CHECK_EQ(h.xid, 0xdeadbeef);
		CHECK_EQ(h.proc, bad[i]);
		rpcrdma_v1_hdr_init(&h);
		h.vers = 1;
		h.proc = bad[i];
		CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h),
			 RPCRDMA_ERR_BAD_PROC);
		CHECK_EQ(rpcrdma_v1_size(&h), 0);
	}
}

static void test_bad_errcode(void)
{
	static const uint32_t bad[] = {0, 3, 9, 0xffffffffu};
	uint8_t buf[sizeof v_err_chunk];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(buf, v_err_chunk, sizeof buf);
		put_word(buf + 16, bad[i]);
		CHECK_EQ(rpcrdma_v1_decode(buf, sizeof buf, NULL, &h),
			 RPCRDMA_ERR_BAD_ERRCODE);
		CHECK_EQ(h.err, bad[i]);
		CHECK_EQ(h.xid, 0x99aabbcc);
		CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h),
			 RPCRDMA_ERR_BAD_ERRCODE);
	}
}

static void test_semantic_errors(void)
{
	/* RDMA_NOMSG with no list (RFC 8166 §4.5.2). */
	uint8_t buf[sizeof v_msg_plain];
	memcpy(buf, v_msg_plain, sizeof buf);
	put_word(buf + 12, RPCRDMA_V1_NOMSG);
	CHECK_EQ(rpcrdma_v1_decode(buf, 28, NULL, &h), RPCRDMA_ERR_BAD_CHUNK);
	CHECK_EQ(h.proc, RPCRDMA_V1_NOMSG);
	CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h), RPCRDMA_ERR_BAD_CHUNK);

	/* RDMA_MSGP alignment not a power of two. */
	static const uint32_t bad_align[] = {0, 3, 6, 4097, 0xffffffffu};
	uint8_t mp[sizeof v_msgp];
	for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
		memcpy(mp, v_msgp, sizeof mp);
		put_word(mp + 16, bad_align[i]);
		CHECK_EQ(rpcrdma_v1_decode(mp, sizeof mp, NULL, &h),
			 RPCRDMA_ERR_BAD_ALIGN);
		CHECK_EQ(h.align, bad_align[i]);
		CHECK_EQ(rpcrdma_v1_encode(out, sizeof out, &h),
			 RPCRDMA_ERR_BAD_ALIGN);
	}
	/* Bool of 2 in each of the MSGP lists. */
	static const size_t disc[] = {24, 28, 52, 56};
	for (size_t i = 0; i < 4; i++) {
		memcpy(mp, v_msgp, sizeof mp);
		put_word(mp + disc[i], 2);
		CHECK_EQ(rpcrdma_v1_decode(mp, sizeof mp, NULL, &h),
			 RPCRDMA_ERR_BAD_BOOL);
	}
	/* Read position not a multiple of four (RFC 8166 §3.4.5). */
	uint8_t full[sizeof v_msg_full];
	memcpy(full, v_msg_full, sizeof full);
	put_word(full + 68, 0x201);
	CHECK_EQ(rpcrdma_v1_decode(full, sizeof full, NULL, &h),
		 RPCRDMA_ERR_BAD_POSITION);
	/* Write chunk segment count near UINT32_MAX. */
	memcpy(full, v_msg_full, sizeof full);
	put_word(full + 96, 0xffffffffu);
	CHECK_EQ(rpcrdma_v1_decode(full, sizeof full, NULL, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	/* NULL arguments. */
	CHECK_EQ(rpcrdma_v1_decode(NULL, 4, NULL, &h), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_v1_decode(v_done, 16, NULL, NULL), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_v1_encode(NULL, 4, &h), RPCRDMA_ERR_INVAL);
}

static void test_limits(void)
{
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	lim.max_read_segments = 2;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	lim = rpcrdma_limits_default();
	lim.max_write_chunks = 1;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_CHUNKS);
	lim = rpcrdma_limits_default();
	lim.max_chunk_segments = 2;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	/* Header size: exactly 232 is fine, 231 is too long. */
	lim = rpcrdma_limits_default();
	lim.max_header_size = 232;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h), 0);
	lim.max_header_size = 231;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h),
		 RPCRDMA_ERR_HEADER_TOO_LONG);
	lim.max_header_size = 100;
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, sizeof v_msg_full, &lim, &h),
		 RPCRDMA_ERR_HEADER_TOO_LONG);
	/* ... but a short buffer is still merely truncated. */
	CHECK_EQ(rpcrdma_v1_decode(v_msg_full, 90, &lim, &h),
		 RPCRDMA_ERR_TRUNCATED);
	/* The prefix always decodes, even with an absurd limit. */
	lim.max_header_size = 0;
	CHECK_EQ(rpcrdma_v1_decode(v_err_vers, sizeof v_err_vers, &lim, &h), 0);
}

static void test_sniff_and_names(void)
{
	struct rpcrdma_common c;
	CHECK_EQ(rpcrdma_common_decode(v_done, 15, &c), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(rpcrdma_common_decode(v_done, 16, &c), 0);
	CHECK_EQ(c.proc, 3);
	CHECK_EQ(rpcrdma_common_decode(NULL, 16, &c), RPCRDMA_ERR_INVAL);
	CHECK(strcmp(rpcrdma_v1_proc_name(0), "RDMA_MSG") == 0);
	CHECK(strcmp(rpcrdma_v1_proc_name(2), "RDMA_MSGP") == 0);
	CHECK(strcmp(rpcrdma_v1_proc_name(4), "RDMA_ERROR") == 0);
	CHECK(rpcrdma_v1_proc_name(5) == NULL);
	CHECK(strcmp(rpcrdma_v1_err_name(2), "ERR_CHUNK") == 0);
	CHECK(rpcrdma_v1_err_name(0) == NULL);
	CHECK_EQ(RPCRDMA_V1_MIN_HDR_LEN, 28);
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;
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
	cl->nreads = rnd() % 8 ? rnd() % 5 : rnd() % (RPCRDMA_MAX_READ_SEGMENTS + 1);
	for (uint32_t i = 0; i < cl->nreads; i++) {
		cl->reads[i].position =
			i && rnd() % 2 ? cl->reads[i - 1].position : rnd() & ~3u;
		rand_seg(&cl->reads[i].target);
	}
	cl->nwrites = rnd() % (RPCRDMA_MAX_WRITE_CHUNKS + 1);
	for (uint32_t i = 0; i < cl->nwrites; i++) {
		cl->writes[i].nsegs = rnd() % (RPCRDMA_MAX_CHUNK_SEGMENTS + 1);
		for (uint32_t j = 0; j < cl->writes[i].nsegs; j++)
			rand_seg(&cl->writes[i].segs[j]);
	}
	cl->has_reply = rnd() & 1;
	cl->reply.nsegs = cl->has_reply ? rnd() % 5 : 0;
	for (uint32_t j = 0; j < cl->reply.nsegs; j++)
		rand_seg(&cl->reply.segs[j]);
}

static void test_random_round_trip(void)
{
	static uint8_t a[16384], b[16384];
	const int iters = 5000;
	int ok = 0;
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	lim.max_header_size = sizeof a;
	for (int it = 0; it < iters; it++) {
		rpcrdma_v1_hdr_init(&h);
		h.xid = rnd();
		h.vers = 1;
		h.credit = rnd();
		h.proc = rnd() % 5;
		switch (h.proc) {
		case RPCRDMA_V1_MSGP:
			h.align = 1u << (rnd() % 32);
			h.thresh = rnd();
			/* fall through */
		case RPCRDMA_V1_MSG:
		case RPCRDMA_V1_NOMSG:
			do
				rand_chunks(&h.chunks);
			while (h.proc == RPCRDMA_V1_NOMSG &&
			       rpcrdma_chunk_lists_empty(&h.chunks));
			break;
		case RPCRDMA_V1_ERROR:
			h.vers = rnd() % 3 ? 1 : rnd();
			h.err = 1 + rnd() % 2;
			h.vers_low = h.err == 1 ? rnd() : 0;
			h.vers_high = h.err == 1 ? rnd() : 0;
			break;
		default:
			break;
		}
		int n = rpcrdma_v1_encode(a, sizeof a, &h);
		if (n <= 0 || (size_t)n != rpcrdma_v1_size(&h))
			continue;
		put_word(a + n, h.xid); /* RPC message xid */
		int rc = rpcrdma_v1_decode(a, (size_t)n + 4, &lim, &h2);
		if (h.vers != 1) {
			ok += rc == RPCRDMA_ERR_BAD_VERSION && h2.xid == h.xid &&
			      (h.err != 1 || (h2.vers_low == h.vers_low &&
					      h2.vers_high == h.vers_high));
			continue;
		}
		int n2 = rpcrdma_v1_encode(b, sizeof b, &h2);
		ok += rc == 0 && h2.hdr_len == (size_t)n &&
		      rpcrdma_v1_hdr_equal(&h, &h2) && n2 == n &&
		      memcmp(a, b, (size_t)n) == 0;
	}
	CHECK_EQ(ok, iters);
}

int main(void)
{
	test_vectors_generic();
	test_fields();
	test_encode_from_scratch();
	test_truncations();
	test_bad_version();
	test_bad_proc();
	test_bad_errcode();
	test_semantic_errors();
	test_limits();
	test_sniff_and_names();
	test_random_round_trip();
	TEST_MAIN_END();
}
