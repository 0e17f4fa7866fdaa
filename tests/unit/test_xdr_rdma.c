/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The libtirpc adapters' XDR streams.
 * - The scatter stream's RFC 5666 RDMA_MSGP padding (§3.7): an opaque at
 *   or above rdma_thresh has its data at the next multiple of rdma_align
 *   counted from the start of the transport header; smaller ones are not
 *   padded.  Buffers written out by hand from the RFC's rule.
 * - The gather stream: a small message in its own bytes, a large one
 *   moved to the heap whole, a DDP item left where it is.
 * - svc_rdma's reply encoder against libtirpc's own xdr_replymsg() on a
 *   memory stream, byte for byte.
 */
#include <stdint.h>
#include <stdlib.h>
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

/* The gather stream's bytes as one buffer (DDP item excluded); its
 * length. */
static size_t gathered(const struct xdr_gather *g, uint8_t *out, size_t cap)
{
	struct rpcrdma_iov iov[3];
	unsigned n = xdr_gather_iov(g, iov);
	size_t len = 0;
	for (unsigned i = 0; i < n; i++) {
		if (iov[i].ddp)
			continue;
		if (len + iov[i].len > cap)
			return 0;
		memcpy(out + len, iov[i].base, iov[i].len);
		len += iov[i].len;
	}
	return len;
}

static void test_gather(void)
{
	XDR x;
	struct xdr_gather g;
	static uint8_t out[8192];

	/* Small: stays in the stream's own bytes. */
	xdr_gather_create(&x, &g, false, 0);
	u_int v = 0x01020304;
	CHECK(xdr_u_int(&x, &v));
	char s3[3] = {'a', 'b', 'c'};
	char *sp = s3;
	u_int sl = 3;
	CHECK(xdr_bytes(&x, &sp, &sl, 16));
	CHECK(g.buf == g.first);
	size_t n = gathered(&g, out, sizeof out);
	CHECK_EQ(n, 12);
	const uint8_t want[12] = {1, 2, 3, 4, 0, 0, 0, 3, 'a', 'b', 'c', 0};
	CHECK(memcmp(out, want, 12) == 0);
	xdr_gather_free(&g);
	CHECK(g.buf == g.first);

	/* Larger than its own bytes: moved to the heap with what was
	 * written so far, then grown again; every word where it belongs. */
	xdr_gather_create(&x, &g, false, 0);
	for (u_int i = 0; i < 1500; i++)
		CHECK(xdr_u_int(&x, &i));
	CHECK(g.buf != g.first);
	n = gathered(&g, out, sizeof out);
	CHECK_EQ(n, 6000);
	bool same = true;
	for (uint32_t i = 0; i < 1500; i++)
		same = same && rpcrdma_be32_get(out + 4 * i) == i;
	CHECK(same);
	xdr_gather_free(&g); /* ASan: the heap copy goes, once */
	CHECK(g.buf == g.first);

	/* A DDP item is left in the caller's memory, its roundup dropped;
	 * the words around it stay inline, in order. */
	static char item[2001];
	memset(item, 0x5a, sizeof item);
	xdr_gather_create(&x, &g, true, 1024);
	CHECK(xdr_u_int(&x, &v));
	char *ip = item;
	u_int il = sizeof item;
	CHECK(xdr_bytes(&x, &ip, &il, sizeof item));
	u_int after = 9;
	CHECK(xdr_u_int(&x, &after));
	struct rpcrdma_iov iov[3];
	CHECK_EQ(xdr_gather_iov(&g, iov), 3);
	CHECK(iov[1].ddp && iov[1].base == item && iov[1].len == sizeof item);
	CHECK_EQ(iov[0].len, 8); /* the word, and the item's length */
	CHECK_EQ(iov[2].len, 4);
	CHECK_EQ(rpcrdma_be32_get(iov[2].base), 9);
	xdr_gather_free(&g);
}

/* The results of the reply tests: a counted array of words. */
static bool_t xdr_words(XDR *x, void *p)
{
	u_int *w = p;
	for (int i = 0; i < 3; i++)
		if (!xdr_u_int(x, &w[i]))
			return FALSE;
	return TRUE;
}

/* void results (libtirpc's xdr_void takes no arguments). */
static bool_t xdr_nothing(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

/* Encodes m with libtirpc's xdr_replymsg on a memory stream and with
 * tirpc_encode_reply on a gather stream: the same bytes. */
static void same_reply(struct rpc_msg *m, size_t want_len)
{
	static uint8_t a[1024], b[1024];
	XDR xm;
	xdrmem_create(&xm, (char *)a, sizeof a, XDR_ENCODE);
	CHECK(xdr_replymsg(&xm, m));
	size_t alen = xdr_getpos(&xm);
	XDR_DESTROY(&xm);
	XDR xg;
	struct xdr_gather g;
	xdr_gather_create(&xg, &g, false, 0);
	CHECK(tirpc_encode_reply(&xg, m));
	size_t blen = gathered(&g, b, sizeof b);
	xdr_gather_free(&g);
	CHECK_EQ(alen, want_len);
	CHECK_EQ(blen, alen);
	CHECK(memcmp(a, b, alen) == 0);
}

static void test_reply_encoding(void)
{
	u_int res[3] = {7, 8, 0xffffffffu};
	struct rpc_msg m;
	memset(&m, 0, sizeof m);
	m.rm_xid = 0x8badf00d;
	m.rm_direction = REPLY;
	m.rm_reply.rp_stat = MSG_ACCEPTED;
	m.acpted_rply.ar_verf.oa_flavor = AUTH_NONE;
	m.acpted_rply.ar_stat = SUCCESS;
	m.acpted_rply.ar_results.where = (caddr_t)res;
	m.acpted_rply.ar_results.proc = (xdrproc_t)xdr_words;
	same_reply(&m, 24 + 12);                 /* the common reply */
	m.acpted_rply.ar_results.proc = (xdrproc_t)xdr_nothing;
	same_reply(&m, 24);                      /* a NULL reply */
	/* A verifier with a body (RPCSEC_GSS, AUTH_SHORT) is libtirpc's. */
	char verf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	m.acpted_rply.ar_verf.oa_flavor = AUTH_SHORT;
	m.acpted_rply.ar_verf.oa_base = verf;
	m.acpted_rply.ar_verf.oa_length = sizeof verf;
	same_reply(&m, 24 + 8);
	m.acpted_rply.ar_verf.oa_flavor = AUTH_NONE;
	m.acpted_rply.ar_verf.oa_base = NULL;
	m.acpted_rply.ar_verf.oa_length = 0;
	/* Other accept statuses, and a denied reply. */
	m.acpted_rply.ar_stat = PROG_MISMATCH;
	m.acpted_rply.ar_vers.low = 2;
	m.acpted_rply.ar_vers.high = 4;
	same_reply(&m, 24 + 8);
	m.acpted_rply.ar_stat = PROC_UNAVAIL;
	same_reply(&m, 24);
	memset(&m.rm_reply, 0, sizeof m.rm_reply);
	m.rm_reply.rp_stat = MSG_DENIED;
	m.rjcted_rply.rj_stat = AUTH_ERROR;
	m.rjcted_rply.rj_why = AUTH_TOOWEAK;
	same_reply(&m, 20);
}

int main(void)
{
	test_padding_skipped();
	test_gather();
	test_reply_encoding();
	TEST_MAIN_END();
}
