/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The libtirpc scatter stream's RFC 5666 RDMA_MSGP padding (§3.7): an
 * opaque at or above rdma_thresh has its data at the next multiple of
 * rdma_align counted from the start of the transport header; smaller ones
 * are not padded.  Buffers written out by hand from the RFC's rule.
 */
#include <stdint.h>
#include <string.h>

#include "rpc/tirpc/tirpc_internal.h"
#include "test.h"
#include "wire/xdr.h"

static void test_padding_skipped(void)
{
	/* Header of 28 bytes (base); the stream: a uint32 7, an opaque<>
	 * of 10 bytes (under the threshold: no padding), an opaque<> of
	 * 200 bytes (padded to a 64-byte boundary of the message). */
	uint8_t buf[512];
	memset(buf, 0xee, sizeof buf);
	size_t pos = 0;
	rpcrdma_be32_put(buf + pos, 7);
	pos += 4;
	rpcrdma_be32_put(buf + pos, 10);
	pos += 4;
	for (int i = 0; i < 10; i++)
		buf[pos + i] = (uint8_t)(i + 1);
	pos += 10;
	buf[pos] = buf[pos + 1] = 0;
	pos += 2;
	rpcrdma_be32_put(buf + pos, 200);
	pos += 4;
	/* 28 + 24 = 52: the data goes to 64, 12 pad bytes. */
	size_t pad = (64 - (28 + pos) % 64) % 64;
	CHECK_EQ(pad, 12);
	memset(buf + pos, 0, pad);
	pos += pad;
	for (int i = 0; i < 200; i++)
		buf[pos + i] = (uint8_t)(0x80 ^ i);
	CHECK_EQ((28 + pos) % 64, 0);
	pos += 200;

	XDR x;
	struct xdr_scatter s;
	xdr_scatter_create(&x, &s, buf, pos, NULL, 0);
	struct rpcrdma_padding p = {64, 100, 28};
	xdr_scatter_set_padding(&s, &p);
	u_int v = 0;
	CHECK(xdr_u_int(&x, &v));
	CHECK_EQ(v, 7);
	char small[16], *sp = small;
	u_int sl = 0;
	CHECK(xdr_bytes(&x, &sp, &sl, sizeof small));
	CHECK_EQ(sl, 10);
	CHECK_EQ(small[9], 10);
	char big[256], *bp = big;
	u_int bl = 0;
	CHECK(xdr_bytes(&x, &bp, &bl, sizeof big));
	CHECK_EQ(bl, 200);
	CHECK_EQ((uint8_t)big[0], 0x80);
	CHECK_EQ((uint8_t)big[199], (uint8_t)(0x80 ^ 199));
	CHECK_EQ(s.pos, pos);

	/* The same bytes without the padding rule decode wrongly: the test
	 * above is not passing by accident. */
	xdr_scatter_create(&x, &s, buf, pos, NULL, 0);
	CHECK(xdr_u_int(&x, &v));
	CHECK(xdr_bytes(&x, &sp, &sl, sizeof small));
	bl = 0;
	CHECK(xdr_bytes(&x, &bp, &bl, sizeof big));
	CHECK((uint8_t)big[0] != 0x80);

	/* Padding that would run past the stream fails cleanly. */
	xdr_scatter_create(&x, &s, buf, 20 + 4 + 4, NULL, 0);
	xdr_scatter_set_padding(&s, &p);
	CHECK(xdr_u_int(&x, &v));
	CHECK(xdr_bytes(&x, &sp, &sl, sizeof small));
	CHECK(!xdr_bytes(&x, &bp, &bl, sizeof big));
}

int main(void)
{
	test_padding_skipped();
	TEST_MAIN_END();
}
