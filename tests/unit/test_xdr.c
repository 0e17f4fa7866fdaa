/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* XDR cursor (RFC 4506) and CRC-32C known answers. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/crc32c.h"
#include "wire/xdr.h"

static void test_u32_u64(void)
{
	uint8_t buf[12];
	struct rpcrdma_xdr_enc e;
	rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
	CHECK_EQ(rpcrdma_xdr_put_u32(&e, 0x01020304), 0);
	CHECK_EQ(rpcrdma_xdr_put_u64(&e, 0x1122334455667788ull), 0);
	CHECK_EQ(rpcrdma_xdr_put_u32(&e, 1), RPCRDMA_ERR_NOSPACE);
	static const uint8_t want[12] = {1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44,
					 0x55, 0x66, 0x77, 0x88};
	CHECK_MEM(buf, want, 12);

	struct rpcrdma_xdr_dec d;
	/* Initialised: a failed CHECK_EQ goes on to read them. */
	uint32_t a = 0;
	uint64_t b = 0;
	rpcrdma_xdr_dec_init(&d, buf, sizeof buf);
	CHECK_EQ(rpcrdma_xdr_get_u32(&d, &a), 0);
	CHECK_EQ(a, 0x01020304);
	CHECK_EQ(rpcrdma_xdr_get_u64(&d, &b), 0);
	CHECK(b == 0x1122334455667788ull);
	CHECK_EQ(rpcrdma_xdr_get_u32(&d, &a), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(d.pos, 12);
}

static void test_opaque(void)
{
	uint8_t buf[16];
	struct rpcrdma_xdr_enc e;
	rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
	memset(buf, 0xee, sizeof buf);
	CHECK_EQ(rpcrdma_xdr_put_opaque(&e, "abcde", 5), 0);
	/* RFC 4506 §4.10: length, bytes, then zero pad to 4 */
	static const uint8_t want[12] = {0, 0, 0, 5, 'a', 'b', 'c', 'd',
					 'e', 0, 0, 0};
	CHECK_MEM(buf, want, 12);
	CHECK_EQ(e.pos, 12);
	CHECK_EQ(rpcrdma_xdr_put_opaque(&e, "abcde", 5), RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(e.pos, 12);

	struct rpcrdma_xdr_dec d;
	const uint8_t *p;
	uint32_t n;
	rpcrdma_xdr_dec_init(&d, buf, 12);
	CHECK_EQ(rpcrdma_xdr_get_opaque(&d, 4, &p, &n), RPCRDMA_ERR_BAD_LENGTH);
	CHECK_EQ(d.pos, 0);
	CHECK_EQ(rpcrdma_xdr_get_opaque(&d, 5, &p, &n), 0);
	CHECK_EQ(n, 5);
	CHECK_MEM(p, "abcde", 5);
	CHECK_EQ(d.pos, 12);
	/* truncated in the pad */
	rpcrdma_xdr_dec_init(&d, buf, 11);
	CHECK_EQ(rpcrdma_xdr_get_opaque(&d, 100, &p, &n), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(d.pos, 0);
	/* a length near UINT32_MAX must not wrap */
	static const uint8_t huge[8] = {0xff, 0xff, 0xff, 0xfd, 0, 0, 0, 0};
	rpcrdma_xdr_dec_init(&d, huge, sizeof huge);
	CHECK_EQ(rpcrdma_xdr_get_opaque(&d, UINT32_MAX, &p, &n),
		 RPCRDMA_ERR_TRUNCATED);
	size_t r;
	CHECK(!rpcrdma_xdr_roundup(SIZE_MAX - 1, &r));
}

static void test_bool(void)
{
	static const uint8_t words[12] = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
	struct rpcrdma_xdr_dec d;
	bool b;
	rpcrdma_xdr_dec_init(&d, words, sizeof words);
	CHECK_EQ(rpcrdma_xdr_get_bool(&d, &b), 0);
	CHECK(b);
	CHECK_EQ(rpcrdma_xdr_get_bool(&d, &b), 0);
	CHECK(!b);
	CHECK_EQ(rpcrdma_xdr_get_bool(&d, &b), RPCRDMA_ERR_BAD_BOOL);
	CHECK_EQ(d.pos, 8);
}

static void test_crc32c(void)
{
	/* Standard check value for CRC-32C ("123456789"), and the iSCSI
	 * test vector of 32 zero bytes (RFC 3720 B.4). */
	CHECK_EQ(rpcrdma_crc32c("123456789", 9), 0xE3069283u);
	uint8_t z[32] = {0};
	CHECK_EQ(rpcrdma_crc32c(z, 32), 0x8A9136AAu);
	uint8_t ff[32];
	memset(ff, 0xff, sizeof ff);
	CHECK_EQ(rpcrdma_crc32c(ff, 32), 0x62A8AB43u);
	/* incremental over odd splits equals one shot */
	uint8_t big[1000];
	for (int i = 0; i < 1000; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	uint32_t one = rpcrdma_crc32c(big, sizeof big);
	uint32_t c = rpcrdma_crc32c_init();
	c = rpcrdma_crc32c_update(c, big, 3);
	c = rpcrdma_crc32c_update(c, big + 3, 501);
	c = rpcrdma_crc32c_update(c, big + 504, 496);
	CHECK_EQ(rpcrdma_crc32c_final(c), one);
}

static void test_strerror(void)
{
	CHECK(strcmp(rpcrdma_strerror(RPCRDMA_ERR_TRUNCATED), "message truncated") == 0);
	CHECK(strcmp(rpcrdma_strerror(12345), "unknown error") == 0);
}

int main(void)
{
	test_u32_u64();
	test_opaque();
	test_bool();
	test_crc32c();
	test_strerror();
	TEST_MAIN_END();
}
