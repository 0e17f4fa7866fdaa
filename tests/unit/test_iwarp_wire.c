/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Known-answer tests for the iWARP wire codecs (provider/iwarp/iwarp_wire.h).
 * Expected bytes are written by hand from the RFC figures, not produced by
 * the code under test.
 */
#include <stdint.h>
#include <string.h>

#include "provider/iwarp/iwarp_wire.h"
#include "rpcrdma/error.h"
#include "test.h"
#include "wire/crc32c.h"

/* RFC 5044 Figure 5: Send, L set, QN 0, MSN 1, MO 0, 24 bytes of zeros. */
static const uint8_t fig5_ulpdu[42] = {
	0x41, 0x43,             /* DDP control (L, DV=1), RDMAP (RV=1, Send) */
	0x00, 0x00, 0x00, 0x00, /* reserved / Invalidate STag */
	0x00, 0x00, 0x00, 0x00, /* QN 0 */
	0x00, 0x00, 0x00, 0x01, /* MSN 1 */
	0x00, 0x00, 0x00, 0x00, /* MO 0 */
	/* 24 zero bytes follow (static storage) */
};

static void test_crc_rfc5044_figure5(void)
{
	/* Figure 5 includes a leading Marker; its CRC covers marker + FPDU
	 * and is shown on the wire as 52 23 99 83, least-significant byte
	 * first. */
	uint8_t buf[4 + 2 + 42];
	memset(buf, 0, sizeof(buf));
	buf[5] = 0x2a;
	memcpy(buf + 6, fig5_ulpdu, sizeof(fig5_ulpdu));
	uint32_t c = rpcrdma_crc32c(buf, sizeof(buf));
	CHECK_EQ(c, 0x83992352u);
}

static void test_fpdu_known_answer(void)
{
	/* The same FPDU without the Marker: 2+42 = 44, no pad; CRC32c over
	 * the 44 bytes computed independently = 0xC33E24B7 (sent b7 24 3e c3). */
	static const uint8_t want_head[2] = { 0x00, 0x2a };
	static const uint8_t want_crc[4] = { 0xb7, 0x24, 0x3e, 0xc3 };
	uint8_t out[64];
	int n = rpcrdma_iwarp_fpdu_build(fig5_ulpdu, sizeof(fig5_ulpdu), true, out,
					 sizeof(out));
	CHECK_EQ(n, 48);
	CHECK_MEM(out, want_head, 2);
	CHECK_MEM(out + 2, fig5_ulpdu, sizeof(fig5_ulpdu));
	CHECK_MEM(out + 44, want_crc, 4);

	const uint8_t *u;
	size_t ul;
	CHECK_EQ(rpcrdma_iwarp_fpdu_parse(out, (size_t)n, true, &u, &ul), 48);
	CHECK_EQ(ul, 42);
	CHECK(u == out + 2);
	/* CRC off: field present and zero. */
	n = rpcrdma_iwarp_fpdu_build(fig5_ulpdu, sizeof(fig5_ulpdu), false, out,
				     sizeof(out));
	static const uint8_t zero[4];
	CHECK_EQ(n, 48);
	CHECK_MEM(out + 44, zero, 4);
	/* A flipped bit is caught when CRCs are on, ignored when off. */
	rpcrdma_iwarp_fpdu_build(fig5_ulpdu, sizeof(fig5_ulpdu), true, out, sizeof(out));
	out[30] ^= 1;
	CHECK_EQ(rpcrdma_iwarp_fpdu_parse(out, 48, true, &u, &ul), RPCRDMA_ERR_PROTOCOL);
	CHECK_EQ(rpcrdma_iwarp_fpdu_parse(out, 48, false, &u, &ul), 48);
	/* Truncation and capacity. */
	CHECK_EQ(rpcrdma_iwarp_fpdu_parse(out, 47, false, &u, &ul), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(rpcrdma_iwarp_fpdu_parse(out, 1, false, &u, &ul), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(rpcrdma_iwarp_fpdu_build(fig5_ulpdu, 42, true, out, 47), RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(rpcrdma_iwarp_fpdu_build(fig5_ulpdu, 70000, true, out, 64), RPCRDMA_ERR_INVAL);
}

static void test_fpdu_pad(void)
{
	/* RFC 5044 §4.1: 2 + ULPDU + pad is a multiple of 4. */
	CHECK_EQ(rpcrdma_iwarp_fpdu_pad(18), 0);
	CHECK_EQ(rpcrdma_iwarp_fpdu_pad(19), 3);
	CHECK_EQ(rpcrdma_iwarp_fpdu_pad(20), 2);
	CHECK_EQ(rpcrdma_iwarp_fpdu_pad(21), 1);
	CHECK_EQ(rpcrdma_iwarp_fpdu_size(19), 2 + 19 + 3 + 4);
	uint8_t u[19], out[64];
	memset(u, 0xAB, sizeof(u));
	CHECK_EQ(rpcrdma_iwarp_fpdu_build(u, 19, true, out, sizeof(out)), 28);
	CHECK_EQ(out[21], 0);
	CHECK_EQ(out[23], 0);
	uint32_t c = rpcrdma_crc32c(out, 24); /* length + ULPDU + pad */
	CHECK_EQ(out[24] | out[25] << 8 | out[26] << 16 | (uint32_t)out[27] << 24, c);
	/* MULPDU from the MSS, never over the 16-bit length. */
	CHECK_EQ(rpcrdma_iwarp_mulpdu(1460, 0), 1452);
	CHECK_EQ(rpcrdma_iwarp_mulpdu(65483, 0), 65476);
	CHECK_EQ(rpcrdma_iwarp_mulpdu(200000, 0), 65532);
	CHECK_EQ(rpcrdma_iwarp_mulpdu(65483, 1024), 1016);
}

static void test_mpa_request(void)
{
	/* RFC 6581 §6 and §9: rev 2, C and S set, IRD 16 with A (P2P),
	 * ORD 16 with C (zero-length Write RTR), ULP data "abc". */
	static const uint8_t want[] = {
		0x4D, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, /* MPA ID R */
		0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6D, 0x65, /* eq Frame */
		0x50, 0x02, 0x00, 0x07,                         /* C|S, rev, PD 7 */
		0x80, 0x10, 0x80, 0x10,                         /* A|IRD, C|ORD */
		'a', 'b', 'c',
	};
	struct rpcrdma_iwarp_mpa_rr rr = {
		.crc = true, .enhanced = true, .rev = 2,
		.irdord = { .p2p = true, .rtr_write = true, .ird = 16, .ord = 16 },
	};
	uint8_t out[RPCRDMA_IWARP_MPA_MAX_FRAME];
	int n = rpcrdma_iwarp_mpa_rr_build(&rr, "abc", 3, out, sizeof(out));
	CHECK_EQ(n, (int)sizeof(want));
	CHECK_MEM(out, want, sizeof(want));

	struct rpcrdma_iwarp_mpa_rr p;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(want, sizeof(want), &p), (int)sizeof(want));
	CHECK(!p.reply);
	CHECK(p.crc);
	CHECK(!p.markers);
	CHECK(p.enhanced);
	CHECK_EQ(p.rev, 2);
	CHECK_EQ(p.pd_len, 7);
	CHECK(p.irdord.p2p);
	CHECK(p.irdord.rtr_write);
	CHECK(!p.irdord.rtr_read);
	CHECK(!p.irdord.rtr_send);
	CHECK_EQ(p.irdord.ird, 16);
	CHECK_EQ(p.irdord.ord, 16);
	CHECK_EQ(p.ulp_pd_len, 3);
	CHECK(p.ulp_pd && memcmp(p.ulp_pd, "abc", 3) == 0);
	/* Truncated anywhere: TRUNCATED, never a read past the end. */
	for (size_t l = 0; l < sizeof(want); l++)
		CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(want, l, &p), RPCRDMA_ERR_TRUNCATED);
}

static void test_mpa_reply_reject_rev1(void)
{
	/* Rev 1 reject Reply with 2 bytes of private data, M set. */
	static const uint8_t want[] = {
		0x4D, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
		0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6D, 0x65, /* "Rep" */
		0xA0, 0x01, 0x00, 0x02, 'n', 'o',
	};
	struct rpcrdma_iwarp_mpa_rr rr = { .reply = true, .reject = true,
					   .markers = true, .rev = 1 };
	uint8_t out[64];
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_build(&rr, "no", 2, out, sizeof(out)), 22);
	CHECK_MEM(out, want, sizeof(want));
	struct rpcrdma_iwarp_mpa_rr p;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(want, sizeof(want), &p), 22);
	CHECK(p.reply);
	CHECK(p.reject);
	CHECK(p.markers);
	CHECK(!p.enhanced);
	CHECK_EQ(p.ulp_pd_len, 2);
	/* S in a rev-1 frame is reserved: ignored, data stays ULP data. */
	uint8_t s1[sizeof(want)];
	memcpy(s1, want, sizeof(want));
	s1[16] |= 0x10;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(s1, sizeof(s1), &p), 22);
	CHECK(!p.enhanced);
	CHECK_EQ(p.ulp_pd_len, 2);
	/* R is "not checked" in a Request. */
	memcpy(s1, want, sizeof(want));
	memcpy(s1, RPCRDMA_IWARP_MPA_KEY_REQ, 16);
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(s1, sizeof(s1), &p), 22);
	CHECK(!p.reject);
}

static void test_mpa_malformed(void)
{
	uint8_t f[RPCRDMA_IWARP_MPA_MAX_FRAME + 8];
	memset(f, 0, sizeof(f));
	memcpy(f, RPCRDMA_IWARP_MPA_KEY_REQ, 16);
	struct rpcrdma_iwarp_mpa_rr p;
	/* Bad key (RFC 5044 §7.1.2 rule 5). */
	f[3] = 'X';
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, 20, &p), RPCRDMA_ERR_PROTOCOL);
	f[3] = ' ';
	/* PD_Length over RFC 5044's 512 (§7.1.1: MUST close). */
	f[17] = 2;
	f[18] = 0x02;
	f[19] = 0x01;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, sizeof(f), &p), RPCRDMA_ERR_PROTOCOL);
	/* Exactly 512 is fine, and 257 (over what we send). */
	f[18] = 0x02;
	f[19] = 0x00;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, sizeof(f), &p), 532);
	CHECK_EQ(p.ulp_pd_len, 512);
	f[18] = 0x01;
	f[19] = 0x01;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, sizeof(f), &p), 277);
	f[19] = 0x00;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, sizeof(f), &p), 276);
	/* Enhanced but shorter than the IRD/ORD block. */
	f[16] = 0x10;
	f[18] = 0;
	f[19] = 3;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_parse(f, sizeof(f), &p), RPCRDMA_ERR_PROTOCOL);
	/* Build limits: 253 ULP bytes + 4 > 256; enhanced needs rev 2. */
	uint8_t pd[260] = { 0 };
	struct rpcrdma_iwarp_mpa_rr rr = { .enhanced = true, .rev = 2 };
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_build(&rr, pd, 253, f, sizeof(f)), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_build(&rr, pd, 252, f, sizeof(f)), 276);
	rr.rev = 1;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_build(&rr, pd, 1, f, sizeof(f)), RPCRDMA_ERR_INVAL);
	rr.rev = 2;
	CHECK_EQ(rpcrdma_iwarp_mpa_rr_build(&rr, pd, 1, f, 24), RPCRDMA_ERR_NOSPACE);
}

static void test_ddp_tagged(void)
{
	/* RDMA Write, L set, STag 0x00123456, TO 0x0102030405060708. */
	static const uint8_t want[14] = {
		0xC1, 0x40, 0x00, 0x12, 0x34, 0x56,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	struct rpcrdma_iwarp_ddp_hdr h = {
		.tagged = true, .last = true, .dv = 1, .rv = 1,
		.opcode = RPCRDMA_IWARP_OP_WRITE, .stag = 0x00123456,
		.to = 0x0102030405060708ull,
	};
	uint8_t out[32];
	CHECK_EQ(rpcrdma_iwarp_ddp_build(&h, out, sizeof(out)), 14);
	CHECK_MEM(out, want, 14);
	struct rpcrdma_iwarp_ddp_hdr p;
	CHECK_EQ(rpcrdma_iwarp_ddp_parse(want, 14, &p), 14);
	CHECK(p.tagged && p.last);
	CHECK_EQ(p.stag, 0x00123456);
	CHECK_EQ(p.to, 0x0102030405060708ull);
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, NULL, NULL, NULL), 0);
	CHECK_EQ(rpcrdma_iwarp_ddp_parse(want, 13, &p), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(rpcrdma_iwarp_ddp_build(&h, out, 13), RPCRDMA_ERR_NOSPACE);
	/* Read Response, not last. */
	static const uint8_t rresp[2] = { 0x81, 0x42 };
	h.last = false;
	h.opcode = RPCRDMA_IWARP_OP_READ_RESP;
	rpcrdma_iwarp_ddp_build(&h, out, sizeof(out));
	CHECK_MEM(out, rresp, 2);
}

static void test_ddp_untagged_and_checks(void)
{
	/* Send with SE and Invalidate, QN 0, MSN 7, MO 0x100, inv STag. */
	static const uint8_t want[18] = {
		0x41, 0x46, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 0,
		0, 0, 0, 7, 0, 0, 1, 0,
	};
	struct rpcrdma_iwarp_ddp_hdr h = {
		.last = true, .dv = 1, .rv = 1,
		.opcode = RPCRDMA_IWARP_OP_SEND_SE_INV, .inval_stag = 0xAABBCCDD,
		.qn = 0, .msn = 7, .mo = 0x100,
	};
	uint8_t out[32];
	CHECK_EQ(rpcrdma_iwarp_ddp_build(&h, out, sizeof(out)), 18);
	CHECK_MEM(out, want, 18);
	struct rpcrdma_iwarp_ddp_hdr p;
	CHECK_EQ(rpcrdma_iwarp_ddp_parse(want, 18, &p), 18);
	CHECK_EQ(p.inval_stag, 0xAABBCCDD);
	CHECK_EQ(p.msn, 7);
	CHECK_EQ(p.mo, 0x100);
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, NULL, NULL, NULL), 0);
	uint8_t l, t, c;
	/* Bad DDP version: DDP layer, untagged, code 6 (RFC 5041 §7.2). */
	p.dv = 2;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 1 && t == 2 && c == 6);
	p.dv = 1;
	/* Queue 3 does not exist: DDP 1/2/1. */
	p.qn = 3;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 1 && t == 2 && c == 1);
	/* Send on queue 1: unexpected opcode, RDMAP 0/2/6. */
	p.qn = 1;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 0 && t == 2 && c == 6);
	/* RDMAP version 0: 0/2/5. */
	p.qn = 0;
	p.rv = 0;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 0 && t == 2 && c == 5);
	/* Opcode 8 does not exist. */
	p.rv = 1;
	p.opcode = 8;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 0 && t == 2 && c == 6);
	/* A tagged Send is an unexpected opcode too. */
	p.opcode = RPCRDMA_IWARP_OP_SEND;
	p.tagged = true;
	CHECK_EQ(rpcrdma_iwarp_ddp_check(&p, &l, &t, &c), RPCRDMA_ERR_PROTOCOL);
	CHECK(l == 0 && t == 2 && c == 6);
}

static void test_read_request(void)
{
	static const uint8_t want[28] = {
		0x00, 0x00, 0x01, 0x02,                         /* sink STag */
		0x00, 0x00, 0x7f, 0xff, 0x00, 0x00, 0x10, 0x00, /* sink TO */
		0x00, 0x10, 0x00, 0x00,                         /* 1 MiB */
		0x00, 0x00, 0x03, 0x04,                         /* src STag */
		0x00, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef, /* src TO */
	};
	struct rpcrdma_iwarp_read_req r = {
		.sink_stag = 0x102, .sink_to = 0x7fff00001000ull, .size = 1u << 20,
		.src_stag = 0x304, .src_to = 0xdeadbeef,
	};
	uint8_t out[32];
	CHECK_EQ(rpcrdma_iwarp_read_req_build(&r, out, sizeof(out)), 28);
	CHECK_MEM(out, want, 28);
	struct rpcrdma_iwarp_read_req p;
	CHECK_EQ(rpcrdma_iwarp_read_req_parse(want, 28, &p), 28);
	CHECK_EQ(p.sink_to, 0x7fff00001000ull);
	CHECK_EQ(p.size, 1u << 20);
	CHECK_EQ(p.src_stag, 0x304);
	CHECK_EQ(rpcrdma_iwarp_read_req_parse(want, 27, &p), RPCRDMA_ERR_TRUNCATED);
}

static void test_terminate(void)
{
	/* DDP tagged-buffer error, invalid STag (1/1/0), with M and D and the
	 * offending tagged header (RFC 5040 §4.8 Figures 7-8). */
	static const uint8_t want[4 + 2 + 14] = {
		0x11, 0x00, 0xC0, 0x00,
		0x00, 0x2e,
		0xC1, 0x40, 0x00, 0x00, 0x04, 0x11,
		0, 0, 0, 0, 0, 0, 0x10, 0x00,
	};
	struct rpcrdma_iwarp_term t = {
		.layer = 1, .etype = 1, .ecode = 0, .m = true, .d = true,
		.seg_len = 0x2e, .ddp_hdr_len = 14,
		.ddp_hdr = { 0xC1, 0x40, 0x00, 0x00, 0x04, 0x11, 0, 0, 0, 0, 0, 0,
			     0x10, 0x00 },
	};
	uint8_t out[RPCRDMA_IWARP_TERM_MAX_LEN];
	CHECK_EQ(rpcrdma_iwarp_term_build(&t, out, sizeof(out)), 20);
	CHECK_MEM(out, want, 20);
	struct rpcrdma_iwarp_term p;
	CHECK_EQ(rpcrdma_iwarp_term_parse(want, sizeof(want), &p), 20);
	CHECK(p.layer == 1 && p.etype == 1 && p.ecode == 0 && p.m && p.d && !p.r);
	CHECK_EQ(p.seg_len, 0x2e);
	CHECK_EQ(p.ddp_hdr_len, 14);
	for (size_t l = 0; l < sizeof(want); l++)
		CHECK_EQ(rpcrdma_iwarp_term_parse(want, l, &p), RPCRDMA_ERR_TRUNCATED);
	/* RDMAP protection error on a Read Request: D and R. */
	struct rpcrdma_iwarp_term r = { .layer = 0, .etype = 1, .ecode = 2,
					.d = true, .r = true, .ddp_hdr_len = 18 };
	r.ddp_hdr[0] = 0x41;
	CHECK_EQ(rpcrdma_iwarp_term_build(&r, out, sizeof(out)), 4 + 2 + 18 + 28);
	CHECK_EQ(out[0], 0x01);
	CHECK_EQ(out[1], 0x02);
	CHECK_EQ(out[2], 0x60);
	CHECK_EQ(rpcrdma_iwarp_term_parse(out, 52, &p), 52);
	CHECK(p.r && p.d && !p.m);
	/* LLP error, no headers. */
	struct rpcrdma_iwarp_term m = { .layer = 2, .etype = 0, .ecode = 2 };
	CHECK_EQ(rpcrdma_iwarp_term_build(&m, out, sizeof(out)), 4);
	CHECK_EQ(out[0], 0x20);
	CHECK_EQ(out[1], 0x02);
	/* D with a bogus header length is refused. */
	struct rpcrdma_iwarp_term b = { .d = true, .ddp_hdr_len = 5 };
	CHECK_EQ(rpcrdma_iwarp_term_build(&b, out, sizeof(out)), RPCRDMA_ERR_INVAL);
}

int main(void)
{
	test_crc_rfc5044_figure5();
	test_fpdu_known_answer();
	test_fpdu_pad();
	test_mpa_request();
	test_mpa_reply_reject_rev1();
	test_mpa_malformed();
	test_ddp_tagged();
	test_ddp_untagged_and_checks();
	test_read_request();
	test_terminate();
	CHECK(strcmp(rpcrdma_iwarp_opcode_name(7), "Terminate") == 0);
	CHECK(strcmp(rpcrdma_iwarp_opcode_name(99), "unknown") == 0);
	TEST_MAIN_END();
}
