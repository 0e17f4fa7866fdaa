/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* RFC 8797 CM private data: known answers, receiver fallback rules,
 * format identifier search and inline threshold derivation. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/cm_private_data.h"

/* RFC 8797 §4 layout: identifier (4), Version, Reserved|R, Send, Receive. */

/* Both sizes 1 KiB (code 0), no remote invalidation. */
static const uint8_t v_1k[8] = {
	0xf6, 0xab, 0x0e, 0x18, /* Format Identifier */
	0x01,                   /* Version 1 */
	0x00,                   /* Reserved 0, R 0 */
	0x00,                   /* Send Size 1024 / 1024 - 1 = 0 */
	0x00,                   /* Receive Size 0 */
};

/* What the Linux kernel typically sends: {magic, 1, R, 4096, 4096}. */
static const uint8_t v_linux[8] = {
	0xf6, 0xab, 0x0e, 0x18, /* Format Identifier */
	0x01,                   /* Version 1 */
	0x01,                   /* R = 1: Send With Invalidate OK */
	0x03,                   /* Send Size 4096 / 1024 - 1 = 3 */
	0x03,                   /* Receive Size 3 */
};

/* Both 256 KiB (code 255), R set. */
static const uint8_t v_256k[8] = {
	0xf6, 0xab, 0x0e, 0x18, /* Format Identifier */
	0x01,                   /* Version 1 */
	0x01,                   /* R = 1 */
	0xff,                   /* Send Size 262144 / 1024 - 1 = 255 */
	0xff,                   /* Receive Size 255 */
};

/* Asymmetric: send 8 KiB, receive 32 KiB, R clear. */
static const uint8_t v_8k_32k[8] = {
	0xf6, 0xab, 0x0e, 0x18, /* Format Identifier */
	0x01,                   /* Version 1 */
	0x00,                   /* R = 0 */
	0x07,                   /* Send Size 8192 / 1024 - 1 = 7 */
	0x1f,                   /* Receive Size 32768 / 1024 - 1 = 31 */
};

static void check_defaults(const struct rpcrdma_cm_pdata *pd, int status)
{
	CHECK(!pd->present);
	CHECK_EQ(pd->status, status);
	CHECK(!pd->remote_inv);
	CHECK_EQ(pd->max_send, 1024);
	CHECK_EQ(pd->max_recv, 1024);
	CHECK_EQ(pd->version, 0);
	CHECK_EQ(pd->flags, 0);
	CHECK_EQ(pd->send_code, 0);
	CHECK_EQ(pd->recv_code, 0);
}

static void check_encode(const uint8_t want[8], size_t snd, size_t rcv,
			 bool r)
{
	uint8_t buf[8];
	memset(buf, 0xee, sizeof buf);
	CHECK_EQ(rpcrdma_cm_pdata_encode(buf, sizeof buf, snd, rcv, r), 8);
	CHECK_MEM(buf, want, 8);
}

/* Decode from an exact-size heap copy so ASan sees any over-read. */
static bool decode_exact(const uint8_t *src, size_t n,
			 struct rpcrdma_cm_pdata *pd)
{
	uint8_t *b = malloc(n ? n : 1);
	if (n)
		memcpy(b, src, n);
	bool ok = rpcrdma_cm_pdata_decode(n ? b : NULL, n, pd);
	free(b);
	return ok;
}

static void test_known_answers(void)
{
	struct rpcrdma_cm_pdata pd;

	check_encode(v_1k, 1024, 1024, false);
	check_encode(v_linux, 4096, 4096, true);
	check_encode(v_256k, 262144, 262144, true);
	check_encode(v_8k_32k, 8192, 32768, false);

	CHECK(decode_exact(v_1k, 8, &pd));
	CHECK(pd.present);
	CHECK_EQ(pd.status, 0);
	CHECK_EQ(pd.version, 1);
	CHECK(!pd.remote_inv);
	CHECK_EQ(pd.max_send, 1024);
	CHECK_EQ(pd.max_recv, 1024);

	CHECK(decode_exact(v_linux, 8, &pd));
	CHECK(pd.remote_inv);
	CHECK_EQ(pd.flags, 1);
	CHECK_EQ(pd.send_code, 3);
	CHECK_EQ(pd.recv_code, 3);
	CHECK_EQ(pd.max_send, 4096);
	CHECK_EQ(pd.max_recv, 4096);

	CHECK(decode_exact(v_256k, 8, &pd));
	CHECK(pd.remote_inv);
	CHECK_EQ(pd.max_send, 262144);
	CHECK_EQ(pd.max_recv, 262144);

	CHECK(decode_exact(v_8k_32k, 8, &pd));
	CHECK(!pd.remote_inv);
	CHECK_EQ(pd.max_send, 8192);
	CHECK_EQ(pd.max_recv, 32768);
}

static void test_size_codes(void)
{
	/* RFC 8797 §4.2 encoding; we round down and clamp. */
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(0), 0);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(1), 0);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(1023), 0);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(1024), 0);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(2047), 0);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(2048), 1);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(4095), 2);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(4096), 3);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(5000), 3);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(262143), 254);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(262144), 255);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(262145), 255);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(1u << 30), 255);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(UINT32_MAX), 255);
	CHECK_EQ(rpcrdma_cm_pdata_size_to_code(SIZE_MAX), 255);
	int bad = 0;
	for (unsigned c = 0; c < 256; c++) {
		uint32_t s = rpcrdma_cm_pdata_code_to_size((uint8_t)c);
		if (s != (c + 1) * 1024 ||
		    rpcrdma_cm_pdata_size_to_code(s) != c ||
		    rpcrdma_cm_pdata_size_to_code(s + 1023) != c)
			bad++;
	}
	CHECK_EQ(bad, 0);

	/* Encoder clamps: below 1 KiB advertises 1 KiB, above 256 KiB
	 * advertises 256 KiB, in-between rounds down. */
	uint8_t buf[8];
	CHECK_EQ(rpcrdma_cm_pdata_encode(buf, 8, 100, SIZE_MAX, false), 8);
	CHECK_EQ(buf[6], 0);
	CHECK_EQ(buf[7], 255);
	CHECK_EQ(rpcrdma_cm_pdata_encode(buf, 8, 4097, 9215, false), 8);
	CHECK_EQ(buf[6], 3);
	CHECK_EQ(buf[7], 7);
}

static void test_encode_errors(void)
{
	uint8_t buf[16];
	memset(buf, 0xee, sizeof buf);
	for (size_t cap = 0; cap < 8; cap++)
		CHECK_EQ(rpcrdma_cm_pdata_encode(buf, cap, 4096, 4096, true),
			 RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(buf[0], 0xee);
	CHECK_EQ(rpcrdma_cm_pdata_encode(NULL, 8, 4096, 4096, true),
		 RPCRDMA_ERR_INVAL);
	/* A larger buffer: only 8 octets written. */
	CHECK_EQ(rpcrdma_cm_pdata_encode(buf, sizeof buf, 4096, 4096, true), 8);
	CHECK_MEM(buf, v_linux, 8);
	CHECK_EQ(buf[8], 0xee);
}

static void test_fallback(void)
{
	struct rpcrdma_cm_pdata pd;
	uint8_t b[8];

	/* 0 bytes and NULL: no private data (§5.1). */
	CHECK(!decode_exact(NULL, 0, &pd));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);
	CHECK(!rpcrdma_cm_pdata_decode(NULL, 8, &pd));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);

	/* Every truncation of every vector: defaults, never a crash. */
	const uint8_t *vecs[] = {v_1k, v_linux, v_256k, v_8k_32k};
	for (size_t v = 0; v < 4; v++)
		for (size_t n = 0; n < 8; n++) {
			CHECK(!decode_exact(vecs[v], n, &pd));
			check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);
		}

	/* Wrong magic (one bit off, byte-swapped). */
	memcpy(b, v_linux, 8);
	b[3] ^= 0x01;
	CHECK(!decode_exact(b, 8, &pd));
	check_defaults(&pd, RPCRDMA_ERR_BAD_MAGIC);
	static const uint8_t swapped[8] = {0x18, 0x0e, 0xab, 0xf6, 1, 1, 3, 3};
	CHECK(!decode_exact(swapped, 8, &pd));
	check_defaults(&pd, RPCRDMA_ERR_BAD_MAGIC);
	/* Wrong magic and only 4..7 bytes: still "not ours". */
	CHECK(!decode_exact(swapped, 5, &pd));
	check_defaults(&pd, RPCRDMA_ERR_BAD_MAGIC);

	/* Version 2, 0 and 255: unknown format, defaults. */
	static const uint8_t vers[] = {0, 2, 255};
	for (size_t i = 0; i < sizeof vers; i++) {
		memcpy(b, v_linux, 8);
		b[4] = vers[i];
		CHECK(!decode_exact(b, 8, &pd));
		check_defaults(&pd, RPCRDMA_ERR_BAD_VERSION);
	}

	/* 7 bytes of otherwise valid data. */
	CHECK(!decode_exact(v_256k, 7, &pd));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);
}

static void test_reserved_and_trailing(void)
{
	struct rpcrdma_cm_pdata pd;
	uint8_t b[64];

	/* §4: receivers MUST ignore reserved bits. */
	memcpy(b, v_linux, 8);
	b[5] = 0xfe; /* all reserved bits, R clear */
	CHECK(decode_exact(b, 8, &pd));
	CHECK(!pd.remote_inv);
	CHECK_EQ(pd.flags, 0xfe);
	b[5] = 0xff; /* all reserved bits, R set */
	CHECK(decode_exact(b, 8, &pd));
	CHECK(pd.remote_inv);
	CHECK_EQ(pd.max_send, 4096);

	/* Trailing octets (e.g. a 56-byte CM private data field). */
	memset(b, 0xa5, sizeof b);
	memcpy(b, v_8k_32k, 8);
	for (size_t n = 9; n <= sizeof b; n += 7) {
		CHECK(decode_exact(b, n, &pd));
		CHECK_EQ(pd.max_send, 8192);
		CHECK_EQ(pd.max_recv, 32768);
	}
}

static void test_find(void)
{
	struct rpcrdma_cm_pdata pd;
	uint8_t b[40];
	size_t off = 99;

	/* §5.2: identifier at an unaligned offset after other data. */
	memset(b, 0x11, sizeof b);
	memcpy(b + 3, v_linux, 8);
	CHECK(rpcrdma_cm_pdata_find(b, 11, &pd, &off));
	CHECK_EQ(off, 3);
	CHECK(pd.remote_inv);
	CHECK_EQ(pd.max_recv, 4096);
	/* decode() looks at offset 0 only. */
	CHECK(!rpcrdma_cm_pdata_decode(b, 11, &pd));
	check_defaults(&pd, RPCRDMA_ERR_BAD_MAGIC);
	/* Same but one octet short: not found. */
	CHECK(!rpcrdma_cm_pdata_find(b, 10, &pd, &off));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);

	/* A candidate with version 2 is skipped; a later good one wins. */
	memset(b, 0, sizeof b);
	memcpy(b, v_linux, 8);
	b[4] = 2;
	memcpy(b + 17, v_8k_32k, 8);
	CHECK(rpcrdma_cm_pdata_find(b, sizeof b, &pd, &off));
	CHECK_EQ(off, 17);
	CHECK_EQ(pd.max_send, 8192);
	CHECK_EQ(pd.status, 0);
	/* Only the bad one: defaults with the reason. */
	CHECK(!rpcrdma_cm_pdata_find(b, 17, &pd, NULL));
	check_defaults(&pd, RPCRDMA_ERR_BAD_VERSION);

	/* Nothing there at all. */
	memset(b, 0, sizeof b);
	CHECK(!rpcrdma_cm_pdata_find(b, sizeof b, &pd, &off));
	check_defaults(&pd, RPCRDMA_ERR_BAD_MAGIC);
	CHECK(!rpcrdma_cm_pdata_find(b, 3, &pd, &off));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);
	CHECK(!rpcrdma_cm_pdata_find(NULL, 0, &pd, &off));
	check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);

	/* Identifier in the last 4..7 octets, every length: never found,
	 * never over-read (exact heap copies). */
	for (size_t tail = 4; tail < 8; tail++) {
		size_t n = 5 + tail;
		uint8_t *h = malloc(n);
		memset(h, 0, n);
		memcpy(h + 5, v_1k, tail);
		CHECK(!rpcrdma_cm_pdata_find(h, n, &pd, &off));
		check_defaults(&pd, RPCRDMA_ERR_TRUNCATED);
		free(h);
	}
}

static void test_thresholds(void)
{
	struct rpcrdma_cm_pdata peer;
	struct rpcrdma_inline_thresholds t;

	/* Peer is a Linux kernel {1, R, 4096, 4096}; we are 4K/4K with R. */
	CHECK(rpcrdma_cm_pdata_decode(v_linux, 8, &peer));
	rpcrdma_cm_pdata_thresholds(4096, 4096, true, &peer, &t);
	CHECK_EQ(t.send, 4096);
	CHECK_EQ(t.recv, 4096);
	CHECK(t.send_with_inv);
	/* We do not support it: §4.1 "When either peer ... clears this
	 * flag, the responder MUST use only RDMA Send". */
	rpcrdma_cm_pdata_thresholds(4096, 4096, false, &peer, &t);
	CHECK(!t.send_with_inv);
	/* Large local buffers are limited by the peer's sizes. */
	rpcrdma_cm_pdata_thresholds(65536, 65536, true, &peer, &t);
	CHECK_EQ(t.send, 4096);
	CHECK_EQ(t.recv, 4096);

	/* Asymmetric peer: send 8K, receive 32K, R clear.
	 * §4.2: our send = min(our send, peer receive); and the peer sends
	 * to us at most min(peer send, our receive). */
	CHECK(rpcrdma_cm_pdata_decode(v_8k_32k, 8, &peer));
	rpcrdma_cm_pdata_thresholds(65536, 65536, true, &peer, &t);
	CHECK_EQ(t.send, 32768);
	CHECK_EQ(t.recv, 8192);
	CHECK(!t.send_with_inv);
	rpcrdma_cm_pdata_thresholds(16384, 2048, true, &peer, &t);
	CHECK_EQ(t.send, 16384);
	CHECK_EQ(t.recv, 2048);
	/* Our odd sizes are rounded down like the encoder's. */
	rpcrdma_cm_pdata_thresholds(20000, 5000, false, &peer, &t);
	CHECK_EQ(t.send, 19456);
	CHECK_EQ(t.recv, 4096);

	/* Peer at the 256 KiB maximum; we have 1 MiB: clamp to 256 KiB. */
	CHECK(rpcrdma_cm_pdata_decode(v_256k, 8, &peer));
	rpcrdma_cm_pdata_thresholds(1u << 20, 1u << 20, true, &peer, &t);
	CHECK_EQ(t.send, 262144);
	CHECK_EQ(t.recv, 262144);
	CHECK(t.send_with_inv);

	/* No private data (NULL) or an unrecognised one: §5.1 defaults. */
	rpcrdma_cm_pdata_thresholds(65536, 65536, true, NULL, &t);
	CHECK_EQ(t.send, 1024);
	CHECK_EQ(t.recv, 1024);
	CHECK(!t.send_with_inv);
	static const uint8_t v2[8] = {0xf6, 0xab, 0x0e, 0x18, 2, 1, 255, 255};
	CHECK(!rpcrdma_cm_pdata_decode(v2, 8, &peer));
	rpcrdma_cm_pdata_thresholds(65536, 65536, true, &peer, &t);
	CHECK_EQ(t.send, 1024);
	CHECK_EQ(t.recv, 1024);
	CHECK(!t.send_with_inv);
	/* A struct whose present flag is false is ignored even if its
	 * fields were tampered with. */
	peer.max_send = peer.max_recv = 262144;
	peer.remote_inv = true;
	rpcrdma_cm_pdata_thresholds(65536, 65536, true, &peer, &t);
	CHECK_EQ(t.send, 1024);
	CHECK(!t.send_with_inv);
}

static void test_round_trip(void)
{
	/* Every (send, recv) code pair with both R values: encode ->
	 * decode -> encode is byte-identical. */
	int bad = 0;
	for (unsigned s = 0; s < 256; s++)
		for (unsigned r = 0; r < 256; r += 5)
			for (int inv = 0; inv < 2; inv++) {
				uint8_t a[8], b[8];
				struct rpcrdma_cm_pdata pd;
				size_t ss = (s + 1) * 1024 + (s * 7) % 1024;
				size_t rs = (r + 1) * 1024;
				if (rpcrdma_cm_pdata_encode(a, 8, ss, rs,
							    inv) != 8 ||
				    !rpcrdma_cm_pdata_decode(a, 8, &pd) ||
				    pd.send_code != s || pd.recv_code != r ||
				    pd.remote_inv != (inv != 0) ||
				    rpcrdma_cm_pdata_encode(b, 8, pd.max_send,
							    pd.max_recv,
							    pd.remote_inv) != 8 ||
				    memcmp(a, b, 8) != 0)
					bad++;
			}
	CHECK_EQ(bad, 0);
}

int main(void)
{
	test_known_answers();
	test_size_codes();
	test_encode_errors();
	test_fallback();
	test_reserved_and_trailing();
	test_find();
	test_thresholds();
	test_round_trip();
	TEST_MAIN_END();
}
