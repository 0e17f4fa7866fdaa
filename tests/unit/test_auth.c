/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* opaque_auth, AUTH_NONE and AUTH_SYS (RFC 5531 §8.2, §10.1, App. A). */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/auth.h"

#define W(x) (uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	     (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(x)

/* authsys_parms, 0 gids. */
static const uint8_t v_sys0[] = {
	W(0x12345678),          /* stamp */
	W(7),                   /* machinename length 7 */
	'k', 'r', 'y', 'p',     /* "kryp" */
	't', 'o', 'n', 0,       /* "ton" + 1 pad byte */
	W(1000),                /* uid */
	W(100),                 /* gid */
	W(0),                   /* gids<16>: count 0 */
};

/* authsys_parms, 16 gids, empty machine name. */
static const uint8_t v_sys16[] = {
	W(0),                   /* stamp */
	W(0),                   /* machinename length 0 (no bytes, no pad) */
	W(0),                   /* uid 0 */
	W(0),                   /* gid 0 */
	W(16),                  /* gids count 16 */
	W(1), W(2), W(3), W(4), /* gids[0..3] */
	W(5), W(6), W(7), W(8), /* gids[4..7] */
	W(9), W(10), W(11), W(12),  /* gids[8..11] */
	W(13), W(14), W(15), W(0xfffffffe), /* gids[12..15] */
};

/* opaque_auth AUTH_SYS carrying v_sys0 (for the cursor decoder). */
static const uint8_t v_cred_sys0[] = {
	W(1),                   /* flavor AUTH_SYS */
	W(28),                  /* body length */
	W(0x12345678),          /* stamp */
	W(7),                   /* machinename length */
	'k', 'r', 'y', 'p',
	't', 'o', 'n', 0,
	W(1000),                /* uid */
	W(100),                 /* gid */
	W(0),                   /* gids count */
};

/* opaque_auth AUTH_NONE, empty body. */
static const uint8_t v_none[] = {
	W(0),                   /* flavor AUTH_NONE */
	W(0),                   /* body length 0 */
};

/* opaque_auth with flavor 390004 (unknown to us) and a 5-byte body. */
static const uint8_t v_other[] = {
	W(390004),              /* flavor */
	W(5),                   /* body length 5 */
	'a', 'b', 'c', 'd',     /* body */
	'e', 0, 0, 0,           /* body + 3 pad bytes */
};

static struct rpcrdma_opaque_auth sys_cred(const uint8_t *b, size_t n)
{
	struct rpcrdma_opaque_auth a = {RPCRDMA_AUTH_SYS, (uint32_t)n, b};
	return a;
}

/* Run authsys_decode on an exact heap copy of the first n bytes. */
static int sys_decode_exact(const uint8_t *src, size_t n,
			    struct rpcrdma_authsys_parms *p)
{
	uint8_t *b = malloc(n ? n : 1);
	if (n)
		memcpy(b, src, n);
	struct rpcrdma_opaque_auth a = sys_cred(n ? b : NULL, n);
	int rc = rpcrdma_authsys_decode(&a, p);
	free(b);
	return rc;
}

static void test_authsys_known(void)
{
	struct rpcrdma_authsys_parms p;
	uint8_t buf[RPCRDMA_AUTHSYS_MAX_BODY];

	struct rpcrdma_opaque_auth a = sys_cred(v_sys0, sizeof v_sys0);
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), 0);
	CHECK_EQ(p.stamp, 0x12345678);
	CHECK_EQ(p.machinename_len, 7);
	CHECK(p.machinename && memcmp(p.machinename, "krypton", 7) == 0);
	CHECK(p.machinename == (const char *)v_sys0 + 8); /* zero copy */
	CHECK_EQ(p.uid, 1000);
	CHECK_EQ(p.gid, 100);
	CHECK_EQ(p.ngids, 0);
	memset(buf, 0xee, sizeof buf);
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf), sizeof v_sys0);
	CHECK_MEM(buf, v_sys0, sizeof v_sys0);

	a = sys_cred(v_sys16, sizeof v_sys16);
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), 0);
	CHECK_EQ(p.machinename_len, 0);
	CHECK(p.machinename == NULL);
	CHECK_EQ(p.ngids, 16);
	CHECK_EQ(p.gids[0], 1);
	CHECK_EQ(p.gids[14], 15);
	CHECK_EQ(p.gids[15], 0xfffffffe);
	memset(buf, 0xee, sizeof buf);
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf), sizeof v_sys16);
	CHECK_MEM(buf, v_sys16, sizeof v_sys16);

	/* Encoding from a hand-filled struct. */
	struct rpcrdma_authsys_parms q = {0};
	q.stamp = 0x12345678;
	q.machinename = "krypton";
	q.machinename_len = 7;
	q.uid = 1000;
	q.gid = 100;
	memset(buf, 0xee, sizeof buf);
	CHECK_EQ(rpcrdma_authsys_encode(&q, buf, sizeof buf), 28);
	CHECK_MEM(buf, v_sys0, 28);
}

static void test_authsys_max(void)
{
	/* 255-byte name and 16 gids: the largest body, 340 bytes. */
	char name[255];
	uint8_t buf[RPCRDMA_AUTHSYS_MAX_BODY + 8];
	struct rpcrdma_authsys_parms p = {0}, q;
	memset(name, 'n', sizeof name);
	p.machinename = name;
	p.machinename_len = 255;
	p.ngids = 16;
	for (uint32_t i = 0; i < 16; i++)
		p.gids[i] = 0x01000000u * i + i;
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_AUTHSYS_MAX_BODY);
	CHECK_EQ(buf[4 + 4 + 255], 0); /* the one pad byte */
	for (size_t cap = 0; cap < RPCRDMA_AUTHSYS_MAX_BODY; cap++)
		CHECK_EQ(rpcrdma_authsys_encode(&p, buf, cap),
			 RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_AUTHSYS_MAX_BODY);
	CHECK_EQ(sys_decode_exact(buf, RPCRDMA_AUTHSYS_MAX_BODY, &q), 0);
	CHECK_EQ(q.machinename_len, 255);
	CHECK_EQ(q.ngids, 16);
	CHECK_EQ(q.gids[15], 0x0f00000f);

	/* Encoder refuses what the decoder would reject. */
	p.machinename_len = 256;
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	p.machinename_len = 255;
	p.ngids = 17;
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	p.ngids = UINT32_MAX;
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	p.ngids = 0;
	p.machinename = NULL;
	CHECK_EQ(rpcrdma_authsys_encode(&p, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
}

static void test_authsys_malformed(void)
{
	struct rpcrdma_authsys_parms p;
	uint8_t b[400];

	/* Every truncation of both vectors is a bad credential. */
	for (size_t n = 0; n < sizeof v_sys0; n++)
		CHECK_EQ(sys_decode_exact(v_sys0, n, &p), RPCRDMA_ERR_BAD_AUTH);
	for (size_t n = 0; n < sizeof v_sys16; n++)
		CHECK_EQ(sys_decode_exact(v_sys16, n, &p),
			 RPCRDMA_ERR_BAD_AUTH);

	/* Name of 256 bytes (body otherwise complete). */
	static const uint8_t hdr256[] = {W(0), W(256)};
	memset(b, 'x', sizeof b);
	memcpy(b, hdr256, 8);
	memset(b + 8 + 256, 0, 16); /* uid, gid, 0 gids, + 4 spare */
	CHECK_EQ(sys_decode_exact(b, 8 + 256 + 12, &p), RPCRDMA_ERR_BAD_AUTH);
	/* Name length near UINT32_MAX. */
	static const uint8_t hdrmax[] = {W(0), W(0xffffffff), W(0), W(0), W(0)};
	CHECK_EQ(sys_decode_exact(hdrmax, sizeof hdrmax, &p),
		 RPCRDMA_ERR_BAD_AUTH);
	static const uint8_t hdrmax4[] = {W(0), W(0xfffffffc), W(0), W(0), W(0)};
	CHECK_EQ(sys_decode_exact(hdrmax4, sizeof hdrmax4, &p),
		 RPCRDMA_ERR_BAD_AUTH);

	/* 17 gids. */
	static const uint8_t g17[] = {
		W(0), W(0), W(0), W(0), /* stamp, name len 0, uid, gid */
		W(17),                  /* gids count 17: over <16> */
		W(1), W(2), W(3), W(4), W(5), W(6), W(7), W(8), W(9),
		W(10), W(11), W(12), W(13), W(14), W(15), W(16), W(17),
	};
	CHECK_EQ(sys_decode_exact(g17, sizeof g17, &p), RPCRDMA_ERR_BAD_AUTH);
	/* gids count near UINT32_MAX. */
	static const uint8_t gmax[] = {W(0), W(0), W(0), W(0), W(0xffffffff)};
	CHECK_EQ(sys_decode_exact(gmax, sizeof gmax, &p), RPCRDMA_ERR_BAD_AUTH);

	/* Bytes after the structure inside the body. */
	memcpy(b, v_sys0, sizeof v_sys0);
	memset(b + sizeof v_sys0, 0, 4);
	CHECK_EQ(sys_decode_exact(b, sizeof v_sys0 + 4, &p),
		 RPCRDMA_ERR_BAD_AUTH);

	/* Wrong flavor; over-long body length in the struct. */
	struct rpcrdma_opaque_auth a = {RPCRDMA_AUTH_NONE, sizeof v_sys0,
					v_sys0};
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), RPCRDMA_ERR_BAD_AUTH);
	a.flavor = RPCRDMA_AUTH_SHORT;
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), RPCRDMA_ERR_BAD_AUTH);
	a.flavor = RPCRDMA_AUTH_SYS;
	a.len = 401;
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), RPCRDMA_ERR_BAD_AUTH);
	a.len = 4;
	a.body = NULL;
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), RPCRDMA_ERR_BAD_AUTH);
}

/* Decode one opaque_auth from an exact heap copy. */
static int oa_decode_exact(const uint8_t *src, size_t n,
			   struct rpcrdma_opaque_auth *a, size_t *pos)
{
	uint8_t *b = malloc(n ? n : 1);
	if (n)
		memcpy(b, src, n);
	struct rpcrdma_xdr_dec d;
	rpcrdma_xdr_dec_init(&d, b, n);
	int rc = rpcrdma_opaque_auth_dec(&d, a);
	*pos = d.pos;
	/* body points into b: compare before freeing */
	if (rc == 0 && a->len && a->body &&
	    memcmp(a->body, src + 8, a->len) != 0)
		rc = 1;
	a->body = NULL;
	free(b);
	return rc;
}

static void test_opaque_auth(void)
{
	struct rpcrdma_opaque_auth a;
	struct rpcrdma_xdr_enc e;
	struct rpcrdma_xdr_dec d;
	uint8_t buf[512];
	size_t pos;

	CHECK_EQ(oa_decode_exact(v_none, sizeof v_none, &a, &pos), 0);
	CHECK_EQ(a.flavor, RPCRDMA_AUTH_NONE);
	CHECK_EQ(a.len, 0);
	CHECK_EQ(pos, 8);
	CHECK_EQ(oa_decode_exact(v_other, sizeof v_other, &a, &pos), 0);
	CHECK_EQ(a.flavor, 390004);
	CHECK_EQ(a.len, 5);
	CHECK_EQ(pos, 16);
	CHECK_EQ(oa_decode_exact(v_cred_sys0, sizeof v_cred_sys0, &a, &pos), 0);
	CHECK_EQ(pos, sizeof v_cred_sys0);

	/* The AUTH_SYS body decoded via the cursor. */
	rpcrdma_xdr_dec_init(&d, v_cred_sys0, sizeof v_cred_sys0);
	CHECK_EQ(rpcrdma_opaque_auth_dec(&d, &a), 0);
	struct rpcrdma_authsys_parms p;
	CHECK_EQ(rpcrdma_authsys_decode(&a, &p), 0);
	CHECK_EQ(p.uid, 1000);

	/* Encode: byte-exact; NOSPACE for every short cap, cursor unmoved. */
	struct rpcrdma_opaque_auth none = rpcrdma_auth_none();
	struct rpcrdma_opaque_auth other = {390004, 5,
					    (const uint8_t *)"abcde"};
	struct rpcrdma_opaque_auth sys = {RPCRDMA_AUTH_SYS, 28, v_sys0};
	const struct {
		const struct rpcrdma_opaque_auth *a;
		const uint8_t *want;
		size_t len;
	} enc[] = {
		{&none, v_none, sizeof v_none},
		{&other, v_other, sizeof v_other},
		{&sys, v_cred_sys0, sizeof v_cred_sys0},
	};
	for (size_t i = 0; i < 3; i++) {
		memset(buf, 0xee, sizeof buf);
		rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
		CHECK_EQ(rpcrdma_opaque_auth_enc(&e, enc[i].a), 0);
		CHECK_EQ(e.pos, enc[i].len);
		CHECK_EQ(rpcrdma_opaque_auth_size(enc[i].a), enc[i].len);
		CHECK_MEM(buf, enc[i].want, enc[i].len);
		for (size_t cap = 0; cap < enc[i].len; cap++) {
			rpcrdma_xdr_enc_init(&e, buf, cap);
			CHECK_EQ(rpcrdma_opaque_auth_enc(&e, enc[i].a),
				 RPCRDMA_ERR_NOSPACE);
			CHECK_EQ(e.pos, 0);
		}
		/* Every truncation: TRUNCATED and the cursor is unmoved. */
		for (size_t n = 0; n < enc[i].len; n++) {
			CHECK_EQ(oa_decode_exact(enc[i].want, n, &a, &pos),
				 RPCRDMA_ERR_TRUNCATED);
			CHECK_EQ(pos, 0);
		}
	}

	/* Body of exactly 400 is fine; 401 is BAD_AUTH both ways. */
	uint8_t body[401];
	memset(body, 0x5a, sizeof body);
	struct rpcrdma_opaque_auth big = {RPCRDMA_AUTH_RPCSEC_GSS, 400, body};
	rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
	CHECK_EQ(rpcrdma_opaque_auth_enc(&e, &big), 0);
	CHECK_EQ(e.pos, 408);
	CHECK_EQ(oa_decode_exact(buf, 408, &a, &pos), 0);
	CHECK_EQ(a.len, 400);
	big.len = 401;
	rpcrdma_xdr_enc_init(&e, buf, sizeof buf);
	CHECK_EQ(rpcrdma_opaque_auth_enc(&e, &big), RPCRDMA_ERR_BAD_AUTH);
	CHECK_EQ(e.pos, 0);
	struct rpcrdma_opaque_auth nul = {RPCRDMA_AUTH_NONE, 4, NULL};
	CHECK_EQ(rpcrdma_opaque_auth_enc(&e, &nul), RPCRDMA_ERR_BAD_AUTH);

	/* Lengths over 400, including near UINT32_MAX: BAD_AUTH, not a
	 * read past the end, whether or not the bytes are there. */
	static const uint32_t lens[] = {401, 404, 0x7fffffff, 0xfffffffc,
					0xfffffffd, 0xffffffff};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		uint8_t h[8 + 420] = {W(6), W(lens[i])};
		CHECK_EQ(oa_decode_exact(h, 8, &a, &pos), RPCRDMA_ERR_BAD_AUTH);
		CHECK_EQ(pos, 0);
		CHECK_EQ(oa_decode_exact(h, sizeof h, &a, &pos),
			 RPCRDMA_ERR_BAD_AUTH);
	}
	/* Length 400 but only 399 bytes: truncated. */
	uint8_t h[8 + 399] = {W(6), W(400)};
	CHECK_EQ(oa_decode_exact(h, sizeof h, &a, &pos), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(pos, 0);
	/* AUTH_NONE with a non-empty body is accepted (§10.1). */
	uint8_t hn[12] = {W(0), W(4), W(0xdeadbeef)};
	CHECK_EQ(oa_decode_exact(hn, sizeof hn, &a, &pos), 0);
	CHECK_EQ(a.len, 4);
}

static void test_names(void)
{
	CHECK(strcmp(rpcrdma_auth_flavor_name(0), "AUTH_NONE") == 0);
	CHECK(strcmp(rpcrdma_auth_flavor_name(1), "AUTH_SYS") == 0);
	CHECK(strcmp(rpcrdma_auth_flavor_name(6), "RPCSEC_GSS") == 0);
	CHECK(strcmp(rpcrdma_auth_flavor_name(4), "unknown") == 0);
	CHECK(strcmp(rpcrdma_auth_flavor_name(UINT32_MAX), "unknown") == 0);
}

static void test_round_trip(void)
{
	/* Generated credentials: encode -> decode -> encode is identical. */
	uint32_t seed = 12345;
	char name[255];
	int bad = 0;
	for (int iter = 0; iter < 2000; iter++) {
		struct rpcrdma_authsys_parms p = {0}, q;
		uint8_t a[RPCRDMA_AUTHSYS_MAX_BODY], b[RPCRDMA_AUTHSYS_MAX_BODY];
		seed = seed * 1103515245u + 12345u;
		p.stamp = seed;
		p.machinename_len = (seed >> 8) % 256;
		for (uint32_t i = 0; i < p.machinename_len; i++)
			name[i] = (char)('a' + (seed + i) % 26);
		p.machinename = name;
		p.uid = seed ^ 0xa5a5a5a5u;
		p.gid = seed >> 3;
		p.ngids = (seed >> 20) % 17;
		for (uint32_t i = 0; i < p.ngids; i++)
			p.gids[i] = seed * (i + 1);
		int n = rpcrdma_authsys_encode(&p, a, sizeof a);
		struct rpcrdma_opaque_auth c = {RPCRDMA_AUTH_SYS, (uint32_t)n, a};
		if (n <= 0 || n % 4 || rpcrdma_authsys_decode(&c, &q) != 0 ||
		    q.ngids != p.ngids || q.uid != p.uid ||
		    q.machinename_len != p.machinename_len ||
		    rpcrdma_authsys_encode(&q, b, sizeof b) != n ||
		    memcmp(a, b, (size_t)n) != 0)
			bad++;
	}
	CHECK_EQ(bad, 0);
}

int main(void)
{
	test_authsys_known();
	test_authsys_max();
	test_authsys_malformed();
	test_opaque_auth();
	test_names();
	test_round_trip();
	TEST_MAIN_END();
}
