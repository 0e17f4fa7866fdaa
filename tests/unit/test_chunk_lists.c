/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Chunk list codec (RFC 8166 §3.4, §4.3, §4.7; v2 draft §3.3): known
 * answers written by hand from the XDR, malformed input, limits, and a
 * seeded random round trip. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/chunk_lists.h"

/* One XDR word, big-endian. */
#define W(x)                                                           \
	(uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	    (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(uint32_t)(x)

/* Read list: 3 read segments in 2 Read chunks (positions 0 and 0x40);
 * Write list: 2 Write chunks of 3 and 2 segments; Reply chunk: 2
 * segments.  RFC 8166 §4.7: 1 PHLOO 1 PHLOO 1 PHLOO 0 / 1 3 HLOO HLOO HLOO
 * 1 2 HLOO HLOO 0 / 1 2 HLOO HLOO. */
static const uint8_t kat_full[] = {
	/* Read list */
	W(1),          /* entry follows */
	W(0x00000000), /*  position 0 */
	W(0x11111111), /*  handle */
	W(0x00001000), /*  length 4096 */
	W(0x00000001), W(0x00002000), /*  offset 0x0000000100002000 */
	W(1),          /* entry follows */
	W(0x00000040), /*  position 64 */
	W(0x22222222), /*  handle */
	W(0x00000800), /*  length 2048 */
	W(0xffffffff), W(0x00000000), /*  offset 0xffffffff00000000 */
	W(1),          /* entry follows */
	W(0x00000040), /*  position 64 (same Read chunk) */
	W(0x33333333), /*  handle */
	W(0x000007fd), /*  length 2045 (unaligned is allowed) */
	W(0x00000000), W(0x00000010), /*  offset 0x10 */
	W(0),          /* end of Read list */
	/* Write list */
	W(1),          /* Write chunk follows */
	W(3),          /*  3 segments */
	W(0x44440001), W(0x00010000), W(0x00000000), W(0x10000000), /* HLOO */
	W(0x44440002), W(0x00010000), W(0x00000000), W(0x20000000), /* HLOO */
	W(0x44440003), W(0x00000100), W(0x00000000), W(0x30000000), /* HLOO */
	W(1),          /* Write chunk follows */
	W(2),          /*  2 segments */
	W(0x55550001), W(0x00002000), W(0x12345678), W(0x9abcdef0), /* HLOO */
	W(0x55550002), W(0x00000004), W(0x00000000), W(0x00000000), /* HLOO */
	W(0),          /* end of Write list */
	/* Reply chunk */
	W(1),          /* present */
	W(2),          /*  2 segments */
	W(0x66660001), W(0x00001000), W(0x00000000), W(0x00400000), /* HLOO */
	W(0x66660002), W(0x00000ff0), W(0x00000000), W(0x00401000), /* HLOO */
};

static const uint8_t kat_empty[] = {
	W(0), /* Read list: not present */
	W(0), /* Write list: not present */
	W(0), /* Reply chunk: not present */
};

static void check_seg(const struct rpcrdma_segment *s, uint32_t h, uint32_t l,
		      uint64_t o)
{
	CHECK_EQ(s->handle, h);
	CHECK_EQ(s->length, l);
	CHECK(s->offset == o);
}

static int decode_buf(const uint8_t *buf, size_t len,
		      const struct rpcrdma_limits *lim,
		      struct rpcrdma_chunk_lists *cl, size_t *pos)
{
	struct rpcrdma_xdr_dec d;
	rpcrdma_xdr_dec_init(&d, buf, len);
	int rc = rpcrdma_chunk_lists_decode(&d, lim, cl);
	if (pos)
		*pos = d.pos;
	return rc;
}

static struct rpcrdma_chunk_lists cl, cl2;

static void test_kat_full(void)
{
	size_t pos;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, NULL, &cl, &pos), 0);
	CHECK_EQ(pos, sizeof kat_full);
	CHECK_EQ(cl.nreads, 3);
	CHECK_EQ(cl.reads[0].position, 0);
	check_seg(&cl.reads[0].target, 0x11111111, 4096, 0x0000000100002000ull);
	CHECK_EQ(cl.reads[1].position, 64);
	check_seg(&cl.reads[1].target, 0x22222222, 2048, 0xffffffff00000000ull);
	CHECK_EQ(cl.reads[2].position, 64);
	check_seg(&cl.reads[2].target, 0x33333333, 2045, 0x10);
	CHECK_EQ(rpcrdma_read_list_chunks(&cl), 2);
	CHECK_EQ(cl.nwrites, 2);
	CHECK_EQ(cl.writes[0].nsegs, 3);
	check_seg(&cl.writes[0].segs[0], 0x44440001, 0x10000, 0x10000000);
	check_seg(&cl.writes[0].segs[1], 0x44440002, 0x10000, 0x20000000);
	check_seg(&cl.writes[0].segs[2], 0x44440003, 0x100, 0x30000000);
	CHECK_EQ(cl.writes[1].nsegs, 2);
	check_seg(&cl.writes[1].segs[0], 0x55550001, 0x2000, 0x123456789abcdef0ull);
	check_seg(&cl.writes[1].segs[1], 0x55550002, 4, 0);
	CHECK(cl.has_reply);
	CHECK_EQ(cl.reply.nsegs, 2);
	check_seg(&cl.reply.segs[0], 0x66660001, 0x1000, 0x400000);
	check_seg(&cl.reply.segs[1], 0x66660002, 0xff0, 0x401000);
	CHECK(!rpcrdma_chunk_lists_empty(&cl));

	uint8_t out[sizeof kat_full];
	struct rpcrdma_xdr_enc e;
	CHECK_EQ(rpcrdma_chunk_lists_size(&cl), sizeof kat_full);
	rpcrdma_xdr_enc_init(&e, out, sizeof out);
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), 0);
	CHECK_EQ(e.pos, sizeof kat_full);
	CHECK_MEM(out, kat_full, sizeof kat_full);

	/* Every smaller encode buffer: NOSPACE. */
	int nospace = 0;
	for (size_t cap = 0; cap < sizeof kat_full; cap++) {
		rpcrdma_xdr_enc_init(&e, out, cap);
		nospace += rpcrdma_chunk_lists_encode(&e, &cl) == RPCRDMA_ERR_NOSPACE;
	}
	CHECK_EQ(nospace, sizeof kat_full);
}

static void test_kat_empty(void)
{
	size_t pos;
	CHECK_EQ(decode_buf(kat_empty, sizeof kat_empty, NULL, &cl, &pos), 0);
	CHECK_EQ(pos, 12);
	CHECK(rpcrdma_chunk_lists_empty(&cl));
	CHECK_EQ(rpcrdma_read_list_chunks(&cl), 0);
	uint8_t out[12];
	struct rpcrdma_xdr_enc e;
	rpcrdma_chunk_lists_init(&cl2);
	rpcrdma_xdr_enc_init(&e, out, sizeof out);
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl2), 0);
	CHECK_MEM(out, kat_empty, 12);
	CHECK_EQ(rpcrdma_chunk_lists_size(&cl2), 12);
}

/* Every strict prefix of a valid encoding is TRUNCATED. */
static void test_truncation(void)
{
	int trunc = 0;
	for (size_t n = 0; n < sizeof kat_full; n++)
		trunc += decode_buf(kat_full, n, NULL, &cl, NULL) ==
			 RPCRDMA_ERR_TRUNCATED;
	CHECK_EQ(trunc, sizeof kat_full);
	trunc = 0;
	for (size_t n = 0; n < sizeof kat_empty; n++)
		trunc += decode_buf(kat_empty, n, NULL, &cl, NULL) ==
			 RPCRDMA_ERR_TRUNCATED;
	CHECK_EQ(trunc, sizeof kat_empty);
}

static void put_word(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A discriminator word of 2 (RFC 4506 §4.19 allows only 0 and 1). */
static void test_bad_bool(void)
{
	/* Offsets of every discriminator in kat_full. */
	static const size_t disc[] = {0, 24, 48, 72, 76, 132, 172, 176};
	uint8_t buf[sizeof kat_full];
	for (size_t i = 0; i < sizeof disc / sizeof disc[0]; i++) {
		memcpy(buf, kat_full, sizeof buf);
		CHECK_EQ(buf[disc[i] + 3], disc[i] == 72 || disc[i] == 172 ? 0 : 1);
		put_word(buf + disc[i], 2);
		CHECK_EQ(decode_buf(buf, sizeof buf, NULL, &cl, NULL),
			 RPCRDMA_ERR_BAD_BOOL);
		put_word(buf + disc[i], 0x80000001u);
		CHECK_EQ(decode_buf(buf, sizeof buf, NULL, &cl, NULL),
			 RPCRDMA_ERR_BAD_BOOL);
	}
}

static void test_huge_counts(void)
{
	static const uint32_t counts[] = {0xffffffffu, 0xfffffffeu, 0x80000000u,
					  0x10000000u, 0x10000001u, 33};
	uint8_t buf[sizeof kat_full];
	struct rpcrdma_limits big = rpcrdma_limits_default();
	big.max_read_segments = big.max_write_chunks = UINT32_MAX;
	big.max_chunk_segments = UINT32_MAX;
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		/* first Write chunk's count (offset 80) */
		memcpy(buf, kat_full, sizeof buf);
		put_word(buf + 80, counts[i]);
		CHECK_EQ(decode_buf(buf, sizeof buf, &big, &cl, NULL),
			 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
		/* Reply chunk's count (offset 180) */
		memcpy(buf, kat_full, sizeof buf);
		put_word(buf + 180, counts[i]);
		CHECK_EQ(decode_buf(buf, sizeof buf, NULL, &cl, NULL),
			 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	}
	/* A count within the limit but past the buffer end: TRUNCATED. */
	memcpy(buf, kat_full, sizeof buf);
	put_word(buf + 180, 3);
	CHECK_EQ(decode_buf(buf, sizeof buf, NULL, &cl, NULL),
		 RPCRDMA_ERR_TRUNCATED);
}

static void test_limits(void)
{
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	CHECK_EQ(lim.max_read_segments, RPCRDMA_MAX_READ_SEGMENTS);
	CHECK_EQ(lim.max_write_chunks, RPCRDMA_MAX_WRITE_CHUNKS);
	CHECK_EQ(lim.max_chunk_segments, RPCRDMA_MAX_CHUNK_SEGMENTS);

	lim.max_read_segments = 3;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL), 0);
	lim.max_read_segments = 2;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	lim = rpcrdma_limits_default();
	lim.max_write_chunks = 1;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_CHUNKS);
	lim.max_write_chunks = 0;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_CHUNKS);
	lim = rpcrdma_limits_default();
	lim.max_chunk_segments = 2;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	lim.max_chunk_segments = 3;
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, &lim, &cl, NULL), 0);

	/* A limit above storage is clamped to storage: one more Read list
	 * entry than RPCRDMA_MAX_READ_SEGMENTS must be refused. */
	static uint8_t many[(RPCRDMA_MAX_READ_SEGMENTS + 1) * 24 + 12];
	size_t p = 0;
	for (uint32_t i = 0; i <= RPCRDMA_MAX_READ_SEGMENTS; i++) {
		put_word(many + p, 1);
		put_word(many + p + 4, 4 * i);
		put_word(many + p + 8, i);
		put_word(many + p + 12, 4);
		put_word(many + p + 16, 0);
		put_word(many + p + 20, i);
		p += 24;
	}
	put_word(many + p, 0);
	put_word(many + p + 4, 0);
	put_word(many + p + 8, 0);
	lim = rpcrdma_limits_default();
	lim.max_read_segments = UINT32_MAX;
	CHECK_EQ(decode_buf(many, sizeof many, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	CHECK_EQ(cl.nreads, RPCRDMA_MAX_READ_SEGMENTS);
	/* The same list minus the first entry fits exactly. */
	CHECK_EQ(decode_buf(many + 24, sizeof many - 24, &lim, &cl, NULL), 0);
	CHECK_EQ(cl.nreads, RPCRDMA_MAX_READ_SEGMENTS);
	CHECK_EQ(rpcrdma_read_list_chunks(&cl), RPCRDMA_MAX_READ_SEGMENTS);

	/* Write list with RPCRDMA_MAX_WRITE_CHUNKS + 1 empty chunks. */
	static uint8_t wl[4 + (RPCRDMA_MAX_WRITE_CHUNKS + 1) * 8 + 8];
	p = 0;
	put_word(wl + p, 0);
	p += 4;
	for (uint32_t i = 0; i <= RPCRDMA_MAX_WRITE_CHUNKS; i++) {
		put_word(wl + p, 1);
		put_word(wl + p + 4, 0);
		p += 8;
	}
	put_word(wl + p, 0);
	put_word(wl + p + 4, 0);
	lim.max_write_chunks = UINT32_MAX;
	CHECK_EQ(decode_buf(wl, sizeof wl, &lim, &cl, NULL),
		 RPCRDMA_ERR_TOO_MANY_CHUNKS);
}

static void test_bad_position(void)
{
	uint8_t buf[sizeof kat_full];
	static const uint32_t bad[] = {1, 2, 3, 0x41, 0xffffffffu};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(buf, kat_full, sizeof buf);
		put_word(buf + 28, bad[i]); /* second read segment's position */
		CHECK_EQ(decode_buf(buf, sizeof buf, NULL, &cl, NULL),
			 RPCRDMA_ERR_BAD_POSITION);
	}
	/* The encoder refuses it too (RFC 8166 §3.4.5 MUST). */
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, NULL, &cl, NULL), 0);
	cl.reads[1].position = 6;
	uint8_t out[sizeof kat_full];
	struct rpcrdma_xdr_enc e;
	rpcrdma_xdr_enc_init(&e, out, sizeof out);
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), RPCRDMA_ERR_BAD_POSITION);
	CHECK_EQ(e.pos, 0);
}

static void test_encode_invalid(void)
{
	uint8_t out[64];
	struct rpcrdma_xdr_enc e;
	rpcrdma_chunk_lists_init(&cl);
	cl.nreads = RPCRDMA_MAX_READ_SEGMENTS + 1;
	rpcrdma_xdr_enc_init(&e, out, sizeof out);
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	rpcrdma_chunk_lists_init(&cl);
	cl.nwrites = RPCRDMA_MAX_WRITE_CHUNKS + 1;
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), RPCRDMA_ERR_TOO_MANY_CHUNKS);
	rpcrdma_chunk_lists_init(&cl);
	cl.nwrites = 1;
	cl.writes[0].nsegs = RPCRDMA_MAX_CHUNK_SEGMENTS + 1;
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	rpcrdma_chunk_lists_init(&cl);
	cl.has_reply = true;
	cl.reply.nsegs = UINT32_MAX;
	CHECK_EQ(rpcrdma_chunk_lists_encode(&e, &cl), RPCRDMA_ERR_TOO_MANY_SEGMENTS);
	CHECK_EQ(e.pos, 0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	/* xorshift64* */
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

static void test_random_round_trip(void)
{
	static uint8_t buf[8192], buf2[8192];
	int ok = 0;
	const int iters = 3000;
	for (int it = 0; it < iters; it++) {
		rpcrdma_chunk_lists_init(&cl);
		cl.nreads = rnd() % (RPCRDMA_MAX_READ_SEGMENTS + 1);
		for (uint32_t i = 0; i < cl.nreads; i++) {
			cl.reads[i].position = (rnd() % 4 == 0 && i)
				? cl.reads[i - 1].position : rnd() & ~3u;
			rand_seg(&cl.reads[i].target);
		}
		cl.nwrites = rnd() % (RPCRDMA_MAX_WRITE_CHUNKS + 1);
		for (uint32_t i = 0; i < cl.nwrites; i++) {
			cl.writes[i].nsegs = rnd() % (RPCRDMA_MAX_CHUNK_SEGMENTS + 1);
			for (uint32_t j = 0; j < cl.writes[i].nsegs; j++)
				rand_seg(&cl.writes[i].segs[j]);
		}
		cl.has_reply = rnd() & 1;
		if (cl.has_reply) {
			cl.reply.nsegs = rnd() % (RPCRDMA_MAX_CHUNK_SEGMENTS + 1);
			for (uint32_t j = 0; j < cl.reply.nsegs; j++)
				rand_seg(&cl.reply.segs[j]);
		}
		struct rpcrdma_xdr_enc e;
		struct rpcrdma_xdr_dec d;
		rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
		int rc1 = rpcrdma_chunk_lists_encode(&e, &cl);
		size_t n = e.pos;
		rpcrdma_xdr_dec_init(&d, buf, n);
		int rc2 = rpcrdma_chunk_lists_decode(&d, NULL, &cl2);
		rpcrdma_xdr_enc_init(&e, buf2, sizeof buf2);
		int rc3 = rpcrdma_chunk_lists_encode(&e, &cl2);
		ok += rc1 == 0 && rc2 == 0 && rc3 == 0 && d.pos == n &&
		      n == rpcrdma_chunk_lists_size(&cl) && e.pos == n &&
		      rpcrdma_chunk_lists_equal(&cl, &cl2) &&
		      memcmp(buf, buf2, n) == 0;
	}
	CHECK_EQ(ok, iters);
}

static void test_equal(void)
{
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, NULL, &cl, NULL), 0);
	CHECK_EQ(decode_buf(kat_full, sizeof kat_full, NULL, &cl2, NULL), 0);
	CHECK(rpcrdma_chunk_lists_equal(&cl, &cl2));
	cl2.writes[1].segs[1].offset ^= 1;
	CHECK(!rpcrdma_chunk_lists_equal(&cl, &cl2));
	cl2.writes[1].segs[1].offset ^= 1;
	cl2.reply.segs[0].handle++;
	CHECK(!rpcrdma_chunk_lists_equal(&cl, &cl2));
	cl2.reply.segs[0].handle--;
	cl2.reads[2].position = 0;
	CHECK(!rpcrdma_chunk_lists_equal(&cl, &cl2));
	CHECK_EQ(rpcrdma_read_list_chunks(&cl2), 3);
}

int main(void)
{
	test_kat_full();
	test_kat_empty();
	test_truncation();
	test_bad_bool();
	test_huge_counts();
	test_limits();
	test_bad_position();
	test_encode_invalid();
	test_random_round_trip();
	test_equal();
	TEST_MAIN_END();
}
