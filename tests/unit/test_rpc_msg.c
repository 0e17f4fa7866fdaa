/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* ONC RPC v2 call/reply headers (RFC 5531 §9): known answers written
 * from the XDR, every truncation, malformed values and round trips. */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"
#include "wire/rpc_msg.h"

#define W(x) (uint8_t)((uint32_t)(x) >> 24), (uint8_t)((uint32_t)(x) >> 16), \
	     (uint8_t)((uint32_t)(x) >> 8), (uint8_t)(x)

/* CALL NFSv3 NULL, AUTH_NONE cred and verf, then 4 bytes of "args". */
static const uint8_t v_call_none[] = {
	W(0xdeadbeef),  /* xid */
	W(0),           /* msg_type CALL */
	W(2),           /* rpcvers 2 */
	W(100003),      /* prog NFS */
	W(3),           /* vers 3 */
	W(0),           /* proc NULL */
	W(0),           /* cred.flavor AUTH_NONE */
	W(0),           /* cred.body length 0 */
	W(0),           /* verf.flavor AUTH_NONE */
	W(0),           /* verf.body length 0 */
	/* header ends at 40 */
	W(0x01020304),  /* procedure parameters (not part of the header) */
};

/* CALL with an AUTH_SYS credential (Appendix A), 1 gid. */
static const uint8_t v_call_sys[] = {
	W(0x00000001),  /* xid */
	W(0),           /* CALL */
	W(2),           /* rpcvers */
	W(100005),      /* prog MOUNT */
	W(3),           /* vers */
	W(1),           /* proc MNT */
	W(1),           /* cred.flavor AUTH_SYS */
	W(32),          /* cred.body length 32 */
	W(0x5f5e0f00),  /*   stamp */
	W(5),           /*   machinename length 5 */
	'h', 'o', 's', 't',  /* "host" */
	'1', 0, 0, 0,   /*   "1" + 3 pad */
	W(0),           /*   uid 0 */
	W(0),           /*   gid 0 */
	W(1),           /*   gids count 1 */
	W(10),          /*   gids[0] */
	W(0),           /* verf.flavor AUTH_NONE */
	W(0),           /* verf.body length 0 */
};

/* CALL with RPCSEC_GSS-numbered cred (flavor 6, 5-byte body) and a
 * 12-byte verifier. */
static const uint8_t v_call_gss[] = {
	W(0x80000000),  /* xid */
	W(0),           /* CALL */
	W(2),           /* rpcvers */
	W(100003),      /* prog */
	W(4),           /* vers */
	W(1),           /* proc COMPOUND */
	W(6),           /* cred.flavor RPCSEC_GSS */
	W(5),           /* cred.body length 5 */
	'a', 'b', 'c', 'd',
	'e', 0, 0, 0,   /* + 3 pad */
	W(6),           /* verf.flavor */
	W(12),          /* verf.body length 12 */
	W(0x11111111), W(0x22222222), W(0x33333333), /* verf.body */
};

/* REPLY MSG_ACCEPTED SUCCESS, AUTH_NONE verifier, then results. */
static const uint8_t v_acc_success[] = {
	W(0xdeadbeef),  /* xid */
	W(1),           /* msg_type REPLY */
	W(0),           /* reply_stat MSG_ACCEPTED */
	W(0),           /* verf.flavor AUTH_NONE */
	W(0),           /* verf.body length 0 */
	W(0),           /* accept_stat SUCCESS */
	/* header ends at 24 */
	W(0xcafef00d),  /* results */
};

#define ACC_VOID(stat) {                                                    \
	W(7),           /* xid */                                           \
	W(1),           /* REPLY */                                         \
	W(0),           /* MSG_ACCEPTED */                                  \
	W(0),           /* verf.flavor AUTH_NONE */                         \
	W(0),           /* verf.body length 0 */                            \
	W(stat),        /* accept_stat */                                   \
}
static const uint8_t v_acc_prog_unavail[] = ACC_VOID(1); /* PROG_UNAVAIL */
static const uint8_t v_acc_proc_unavail[] = ACC_VOID(3); /* PROC_UNAVAIL */
static const uint8_t v_acc_garbage[] = ACC_VOID(4);      /* GARBAGE_ARGS */
static const uint8_t v_acc_system_err[] = ACC_VOID(5);   /* SYSTEM_ERR */

/* PROG_MISMATCH {2, 3}, with a 4-byte AUTH_SHORT-style verifier. */
static const uint8_t v_acc_prog_mismatch[] = {
	W(0x12345678),  /* xid */
	W(1),           /* REPLY */
	W(0),           /* MSG_ACCEPTED */
	W(2),           /* verf.flavor AUTH_SHORT */
	W(4),           /* verf.body length 4 */
	W(0xabcdef01),  /* verf.body */
	W(2),           /* accept_stat PROG_MISMATCH */
	W(2),           /* mismatch_info.low */
	W(3),           /* mismatch_info.high */
};

/* MSG_DENIED RPC_MISMATCH {2, 2}. */
static const uint8_t v_rej_rpc_mismatch[] = {
	W(0xffffffff),  /* xid */
	W(1),           /* REPLY */
	W(1),           /* reply_stat MSG_DENIED */
	W(0),           /* reject_stat RPC_MISMATCH */
	W(2),           /* mismatch_info.low */
	W(2),           /* mismatch_info.high */
};

/* MSG_DENIED AUTH_ERROR AUTH_TOOWEAK. */
static const uint8_t v_rej_auth_tooweak[] = {
	W(0x00000042),  /* xid */
	W(1),           /* REPLY */
	W(1),           /* MSG_DENIED */
	W(1),           /* reject_stat AUTH_ERROR */
	W(5),           /* auth_stat AUTH_TOOWEAK */
};

struct vec {
	const char *name;
	const uint8_t *b;
	size_t len;  /* bytes in the array */
	int hdr;     /* expected header length */
};

#define V(a, h) {#a, a, sizeof a, h}
static const struct vec vecs[] = {
	V(v_call_none, 40),
	V(v_call_sys, 72),
	V(v_call_gss, 60),
	V(v_acc_success, 24),
	V(v_acc_prog_unavail, 24),
	V(v_acc_proc_unavail, 24),
	V(v_acc_garbage, 24),
	V(v_acc_system_err, 24),
	V(v_acc_prog_mismatch, 36),
	V(v_rej_rpc_mismatch, 24),
	V(v_rej_auth_tooweak, 20),
};
#define NVECS (sizeof vecs / sizeof vecs[0])

/* Decode from an exact-size heap copy so ASan sees any over-read.
 * Opaque bodies are checked against src and then cleared. */
static int decode_exact(const uint8_t *src, size_t n, struct rpcrdma_rpc_msg *m)
{
	uint8_t *b = malloc(n ? n : 1);
	if (n)
		memcpy(b, src, n);
	int rc = rpcrdma_rpc_msg_decode(b, n, m);
	const struct rpcrdma_opaque_auth *as[] = {
		&m->call.cred, &m->call.verf, &m->reply.accepted.verf};
	for (size_t i = 0; i < 3; i++) {
		if (as[i]->body) {
			size_t off = (size_t)(as[i]->body - b);
			if (off > n || memcmp(as[i]->body, src + off,
					      as[i]->len) != 0)
				rc = 1000; /* body outside the buffer */
		}
	}
	free(b);
	return rc;
}

static void test_known_calls(void)
{
	struct rpcrdma_rpc_msg m;
	uint8_t buf[128];

	CHECK_EQ(decode_exact(v_call_none, sizeof v_call_none, &m), 40);
	CHECK_EQ(m.xid, 0xdeadbeef);
	CHECK_EQ(m.mtype, RPCRDMA_RPC_CALL);
	CHECK_EQ(m.call.rpcvers, 2);
	CHECK_EQ(m.call.prog, 100003);
	CHECK_EQ(m.call.vers, 3);
	CHECK_EQ(m.call.proc, 0);
	CHECK_EQ(m.call.cred.flavor, RPCRDMA_AUTH_NONE);
	CHECK_EQ(m.call.cred.len, 0);
	CHECK_EQ(m.call.verf.flavor, RPCRDMA_AUTH_NONE);
	/* Also without the trailing args: header alone is complete. */
	CHECK_EQ(decode_exact(v_call_none, 40, &m), 40);

	/* Build the same from a struct; rpcvers in the struct is ignored. */
	struct rpcrdma_rpc_msg c = {0};
	c.xid = 0xdeadbeef;
	c.mtype = RPCRDMA_RPC_CALL;
	c.call.rpcvers = 99;
	c.call.prog = 100003;
	c.call.vers = 3;
	c.call.cred = rpcrdma_auth_none();
	c.call.verf = rpcrdma_auth_none();
	CHECK_EQ(rpcrdma_rpc_msg_encode(&c, buf, sizeof buf), 40);
	CHECK_MEM(buf, v_call_none, 40);

	CHECK_EQ(decode_exact(v_call_sys, sizeof v_call_sys, &m), 72);
	CHECK_EQ(m.call.prog, 100005);
	CHECK_EQ(m.call.proc, 1);
	CHECK_EQ(m.call.cred.flavor, RPCRDMA_AUTH_SYS);
	CHECK_EQ(m.call.cred.len, 32);
	/* The credential decodes as AUTH_SYS. */
	struct rpcrdma_rpc_msg m2;
	CHECK_EQ(rpcrdma_rpc_msg_decode(v_call_sys, sizeof v_call_sys, &m2), 72);
	struct rpcrdma_authsys_parms p;
	CHECK_EQ(rpcrdma_authsys_decode(&m2.call.cred, &p), 0);
	CHECK_EQ(p.stamp, 0x5f5e0f00);
	CHECK_EQ(p.machinename_len, 5);
	CHECK(memcmp(p.machinename, "host1", 5) == 0);
	CHECK_EQ(p.ngids, 1);
	CHECK_EQ(p.gids[0], 10);

	/* Encode the AUTH_SYS call from parts. */
	uint8_t cred[RPCRDMA_AUTHSYS_MAX_BODY];
	int clen = rpcrdma_authsys_encode(&p, cred, sizeof cred);
	CHECK_EQ(clen, 32);
	c.xid = 1;
	c.call.prog = 100005;
	c.call.proc = 1;
	c.call.cred.flavor = RPCRDMA_AUTH_SYS;
	c.call.cred.len = (uint32_t)clen;
	c.call.cred.body = cred;
	CHECK_EQ(rpcrdma_rpc_msg_size(&c), 72);
	CHECK_EQ(rpcrdma_rpc_msg_encode(&c, buf, sizeof buf), 72);
	CHECK_MEM(buf, v_call_sys, 72);

	CHECK_EQ(decode_exact(v_call_gss, sizeof v_call_gss, &m), 60);
	CHECK_EQ(m.xid, 0x80000000);
	CHECK_EQ(m.call.cred.flavor, 6);
	CHECK_EQ(m.call.cred.len, 5);
	CHECK_EQ(m.call.verf.len, 12);
}

static void test_known_replies(void)
{
	struct rpcrdma_rpc_msg m;

	CHECK_EQ(decode_exact(v_acc_success, sizeof v_acc_success, &m), 24);
	CHECK_EQ(m.mtype, RPCRDMA_RPC_REPLY);
	CHECK_EQ(m.reply.stat, RPCRDMA_RPC_MSG_ACCEPTED);
	CHECK_EQ(m.reply.accepted.verf.flavor, RPCRDMA_AUTH_NONE);
	CHECK_EQ(m.reply.accepted.stat, RPCRDMA_RPC_SUCCESS);

	static const struct {
		const uint8_t *b;
		uint32_t stat;
	} voids[] = {
		{v_acc_prog_unavail, RPCRDMA_RPC_PROG_UNAVAIL},
		{v_acc_proc_unavail, RPCRDMA_RPC_PROC_UNAVAIL},
		{v_acc_garbage, RPCRDMA_RPC_GARBAGE_ARGS},
		{v_acc_system_err, RPCRDMA_RPC_SYSTEM_ERR},
	};
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(decode_exact(voids[i].b, 24, &m), 24);
		CHECK_EQ(m.xid, 7);
		CHECK_EQ(m.reply.accepted.stat, voids[i].stat);
	}

	CHECK_EQ(decode_exact(v_acc_prog_mismatch, sizeof v_acc_prog_mismatch,
			      &m), 36);
	CHECK_EQ(m.reply.accepted.verf.flavor, RPCRDMA_AUTH_SHORT);
	CHECK_EQ(m.reply.accepted.verf.len, 4);
	CHECK_EQ(m.reply.accepted.stat, RPCRDMA_RPC_PROG_MISMATCH);
	CHECK_EQ(m.reply.accepted.mismatch.low, 2);
	CHECK_EQ(m.reply.accepted.mismatch.high, 3);

	CHECK_EQ(decode_exact(v_rej_rpc_mismatch, sizeof v_rej_rpc_mismatch,
			      &m), 24);
	CHECK_EQ(m.xid, 0xffffffff);
	CHECK_EQ(m.reply.stat, RPCRDMA_RPC_MSG_DENIED);
	CHECK_EQ(m.reply.rejected.stat, RPCRDMA_RPC_RPC_MISMATCH);
	CHECK_EQ(m.reply.rejected.mismatch.low, 2);
	CHECK_EQ(m.reply.rejected.mismatch.high, 2);

	CHECK_EQ(decode_exact(v_rej_auth_tooweak, sizeof v_rej_auth_tooweak,
			      &m), 20);
	CHECK_EQ(m.reply.rejected.stat, RPCRDMA_RPC_AUTH_ERROR);
	CHECK_EQ(m.reply.rejected.auth_stat, RPCRDMA_RPC_AUTH_TOOWEAK);

	/* Every auth_stat of §9 (0..14), plus unknown numbers decoded as
	 * numbers (IANA assigns new ones, §13.5). */
	static const uint32_t stats[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
					 11, 12, 13, 14, 15, 99, 0xffffffff};
	for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
		uint8_t v[20] = {
			W(0x42),        /* xid */
			W(1),           /* REPLY */
			W(1),           /* MSG_DENIED */
			W(1),           /* AUTH_ERROR */
			W(stats[i]),    /* auth_stat */
		};
		uint8_t out[20];
		CHECK_EQ(decode_exact(v, 20, &m), 20);
		CHECK_EQ(m.reply.rejected.auth_stat, stats[i]);
		CHECK_EQ(rpcrdma_rpc_msg_encode(&m, out, sizeof out), 20);
		CHECK_MEM(out, v, 20);
		CHECK((strcmp(rpcrdma_rpc_auth_stat_name(stats[i]),
			      "unknown") == 0) == (stats[i] > 14));
	}
	CHECK(strcmp(rpcrdma_rpc_auth_stat_name(13),
		     "RPCSEC_GSS_CREDPROBLEM") == 0);
	CHECK(strcmp(rpcrdma_rpc_auth_stat_name(14),
		     "RPCSEC_GSS_CTXPROBLEM") == 0);
	CHECK(strcmp(rpcrdma_rpc_auth_stat_name(15), "unknown") == 0);
}

static void test_encode_vectors(void)
{
	/* Every vector: decode -> encode gives the header bytes; every
	 * short capacity is NOSPACE; size() agrees. */
	uint8_t buf[128];
	for (size_t i = 0; i < NVECS; i++) {
		struct rpcrdma_rpc_msg m;
		int hl = rpcrdma_rpc_msg_decode(vecs[i].b, vecs[i].len, &m);
		CHECK_EQ(hl, vecs[i].hdr);
		CHECK_EQ(rpcrdma_rpc_msg_size(&m), vecs[i].hdr);
		memset(buf, 0xee, sizeof buf);
		CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf), vecs[i].hdr);
		CHECK_MEM(buf, vecs[i].b, (size_t)vecs[i].hdr);
		CHECK_EQ(buf[vecs[i].hdr], 0xee);
		int bad = 0;
		for (size_t cap = 0; cap < (size_t)vecs[i].hdr; cap++)
			if (rpcrdma_rpc_msg_encode(&m, buf, cap) !=
			    RPCRDMA_ERR_NOSPACE)
				bad++;
		CHECK_EQ(bad, 0);
	}
}

static void test_truncations(void)
{
	/* Every proper prefix of every header is TRUNCATED. */
	for (size_t i = 0; i < NVECS; i++) {
		int bad = 0;
		struct rpcrdma_rpc_msg m;
		for (size_t n = 0; n < (size_t)vecs[i].hdr; n++)
			if (decode_exact(vecs[i].b, n, &m) !=
			    RPCRDMA_ERR_TRUNCATED) {
				bad++;
				fprintf(stderr, "%s: prefix %zu\n", vecs[i].name, n);
			}
		CHECK_EQ(bad, 0);
	}
	struct rpcrdma_rpc_msg m;
	CHECK_EQ(rpcrdma_rpc_msg_decode(NULL, 0, &m), RPCRDMA_ERR_TRUNCATED);
	CHECK_EQ(rpcrdma_rpc_msg_decode(NULL, 4, &m), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_rpc_msg_decode(v_call_none, 40, NULL),
		 RPCRDMA_ERR_INVAL);
}

static void test_malformed(void)
{
	struct rpcrdma_rpc_msg m;
	uint8_t b[64];

	/* msg_type 2 and UINT32_MAX: BAD_MSG_TYPE, xid still returned. */
	static const uint8_t mt2[] = {W(0x77), W(2), W(2), W(0)};
	CHECK_EQ(decode_exact(mt2, sizeof mt2, &m), RPCRDMA_ERR_BAD_MSG_TYPE);
	CHECK_EQ(m.xid, 0x77);
	CHECK_EQ(m.mtype, 2);
	static const uint8_t mtmax[] = {W(0x78), W(0xffffffff)};
	CHECK_EQ(decode_exact(mtmax, sizeof mtmax, &m),
		 RPCRDMA_ERR_BAD_MSG_TYPE);
	CHECK_EQ(m.xid, 0x78);

	/* rpcvers 3, 1, 0: BAD_RPCVERS with xid (answer RPC_MISMATCH). */
	static const uint32_t vers[] = {0, 1, 3, 0xffffffff};
	for (size_t i = 0; i < 4; i++) {
		memcpy(b, v_call_none, 40);
		b[8] = (uint8_t)(vers[i] >> 24);
		b[9] = (uint8_t)(vers[i] >> 16);
		b[10] = (uint8_t)(vers[i] >> 8);
		b[11] = (uint8_t)vers[i];
		CHECK_EQ(decode_exact(b, 40, &m), RPCRDMA_ERR_BAD_RPCVERS);
		CHECK_EQ(m.xid, 0xdeadbeef);
		CHECK_EQ(m.mtype, RPCRDMA_RPC_CALL);
		CHECK_EQ(m.call.rpcvers, vers[i]);
		/* Even with nothing after rpcvers. */
		CHECK_EQ(decode_exact(b, 12, &m), RPCRDMA_ERR_BAD_RPCVERS);
		CHECK_EQ(m.xid, 0xdeadbeef);
	}

	/* reply_stat 2 */
	static const uint8_t rs2[] = {W(1), W(1), W(2), W(0), W(0), W(0)};
	CHECK_EQ(decode_exact(rs2, sizeof rs2, &m), RPCRDMA_ERR_BAD_STAT);
	/* accept_stat 6 and UINT32_MAX */
	static const uint8_t as6[] = ACC_VOID(6);
	CHECK_EQ(decode_exact(as6, sizeof as6, &m), RPCRDMA_ERR_BAD_STAT);
	static const uint8_t asmax[] = ACC_VOID(0xffffffff);
	CHECK_EQ(decode_exact(asmax, sizeof asmax, &m), RPCRDMA_ERR_BAD_STAT);
	/* reject_stat 2 */
	static const uint8_t rj2[] = {W(1), W(1), W(1), W(2), W(0), W(0)};
	CHECK_EQ(decode_exact(rj2, sizeof rj2, &m), RPCRDMA_ERR_BAD_STAT);

	/* cred body length 401, near UINT32_MAX: BAD_AUTH. */
	static const uint32_t lens[] = {401, 0x7fffffff, 0xfffffffc,
					0xffffffff};
	for (size_t i = 0; i < 4; i++) {
		memcpy(b, v_call_none, 40);
		b[28] = (uint8_t)(lens[i] >> 24);
		b[29] = (uint8_t)(lens[i] >> 16);
		b[30] = (uint8_t)(lens[i] >> 8);
		b[31] = (uint8_t)lens[i];
		CHECK_EQ(decode_exact(b, 40, &m), RPCRDMA_ERR_BAD_AUTH);
		/* and in the reply verifier */
		memcpy(b, v_acc_success, 24);
		b[16] = (uint8_t)(lens[i] >> 24);
		b[17] = (uint8_t)(lens[i] >> 16);
		b[18] = (uint8_t)(lens[i] >> 8);
		b[19] = (uint8_t)lens[i];
		CHECK_EQ(decode_exact(b, 24, &m), RPCRDMA_ERR_BAD_AUTH);
	}
	/* cred body length 400 but the buffer ends: TRUNCATED. */
	memcpy(b, v_call_none, 40);
	b[30] = 0x01;
	b[31] = 0x90;
	CHECK_EQ(decode_exact(b, 40, &m), RPCRDMA_ERR_TRUNCATED);
}

static void test_encode_invalid(void)
{
	struct rpcrdma_rpc_msg m = {0};
	uint8_t buf[64];
	uint8_t body[401] = {0};

	m.mtype = 2;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_MSG_TYPE);
	CHECK_EQ(rpcrdma_rpc_msg_size(&m), RPCRDMA_ERR_BAD_MSG_TYPE);
	m.mtype = RPCRDMA_RPC_REPLY;
	m.reply.stat = 2;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_STAT);
	m.reply.stat = RPCRDMA_RPC_MSG_ACCEPTED;
	m.reply.accepted.stat = 6;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_STAT);
	m.reply.accepted.stat = RPCRDMA_RPC_SUCCESS;
	m.reply.accepted.verf.len = 401;
	m.reply.accepted.verf.body = body;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	m.reply.accepted.verf.len = 4;
	m.reply.accepted.verf.body = NULL;
	CHECK_EQ(rpcrdma_rpc_msg_size(&m), RPCRDMA_ERR_BAD_AUTH);
	m.reply.stat = RPCRDMA_RPC_MSG_DENIED;
	m.reply.rejected.stat = 2;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_STAT);
	m.mtype = RPCRDMA_RPC_CALL;
	m.call.cred.len = 0xffffffff;
	m.call.cred.body = body;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	m.call.cred.len = 0;
	m.call.verf.len = 401;
	m.call.verf.body = body;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, buf, sizeof buf),
		 RPCRDMA_ERR_BAD_AUTH);
	m.call.verf.len = 0;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, NULL, 4), RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_rpc_msg_encode(NULL, buf, sizeof buf),
		 RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, NULL, 0), RPCRDMA_ERR_NOSPACE);
	CHECK_EQ(rpcrdma_rpc_msg_size(NULL), RPCRDMA_ERR_INVAL);
	/* Largest header: CALL with two 400-byte opaque_auths. */
	uint8_t big[840];
	m.call.cred.len = m.call.verf.len = 400;
	m.call.cred.body = m.call.verf.body = body;
	CHECK_EQ(rpcrdma_rpc_msg_encode(&m, big, sizeof big), 840);
	CHECK_EQ(rpcrdma_rpc_msg_decode(big, sizeof big, &m), 840);
}

static void test_names(void)
{
	CHECK(strcmp(rpcrdma_rpc_msg_type_name(0), "CALL") == 0);
	CHECK(strcmp(rpcrdma_rpc_msg_type_name(1), "REPLY") == 0);
	CHECK(strcmp(rpcrdma_rpc_msg_type_name(2), "unknown") == 0);
	CHECK(strcmp(rpcrdma_rpc_reply_stat_name(1), "MSG_DENIED") == 0);
	CHECK(strcmp(rpcrdma_rpc_accept_stat_name(2), "PROG_MISMATCH") == 0);
	CHECK(strcmp(rpcrdma_rpc_accept_stat_name(5), "SYSTEM_ERR") == 0);
	CHECK(strcmp(rpcrdma_rpc_accept_stat_name(6), "unknown") == 0);
	CHECK(strcmp(rpcrdma_rpc_reject_stat_name(1), "AUTH_ERROR") == 0);
	CHECK(strcmp(rpcrdma_rpc_reject_stat_name(2), "unknown") == 0);
}

/* Deterministic generator for the round-trip test. */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void gen_auth(uint32_t *s, struct rpcrdma_opaque_auth *a,
		     const uint8_t *pool)
{
	a->flavor = rnd(s) % 4 == 0 ? rnd(s) : rnd(s) % 7;
	a->len = rnd(s) % 3 == 0 ? 0 : rnd(s) % 401;
	a->body = a->len ? pool + rnd(s) % 64 : NULL;
}

static void test_round_trip(void)
{
	uint8_t pool[512];
	uint8_t a[1024], b[1024];
	uint32_t s = 0x9e3779b9u;
	int bad = 0;

	for (size_t i = 0; i < sizeof pool; i++)
		pool[i] = (uint8_t)(i * 31 + 7);
	for (int iter = 0; iter < 20000; iter++) {
		struct rpcrdma_rpc_msg m = {0}, d;
		m.xid = rnd(&s);
		m.mtype = rnd(&s) % 2;
		if (m.mtype == RPCRDMA_RPC_CALL) {
			m.call.prog = rnd(&s);
			m.call.vers = rnd(&s);
			m.call.proc = rnd(&s);
			gen_auth(&s, &m.call.cred, pool);
			gen_auth(&s, &m.call.verf, pool);
		} else {
			m.reply.stat = rnd(&s) % 2;
			if (m.reply.stat == RPCRDMA_RPC_MSG_ACCEPTED) {
				gen_auth(&s, &m.reply.accepted.verf, pool);
				m.reply.accepted.stat = rnd(&s) % 6;
				if (m.reply.accepted.stat ==
				    RPCRDMA_RPC_PROG_MISMATCH) {
					m.reply.accepted.mismatch.low = rnd(&s);
					m.reply.accepted.mismatch.high = rnd(&s);
				}
			} else {
				m.reply.rejected.stat = rnd(&s) % 2;
				if (m.reply.rejected.stat ==
				    RPCRDMA_RPC_RPC_MISMATCH) {
					m.reply.rejected.mismatch.low = rnd(&s);
					m.reply.rejected.mismatch.high = rnd(&s);
				} else {
					m.reply.rejected.auth_stat = rnd(&s) % 20;
				}
			}
		}
		int n = rpcrdma_rpc_msg_encode(&m, a, sizeof a);
		if (n <= 0 || n != rpcrdma_rpc_msg_size(&m) ||
		    rpcrdma_rpc_msg_decode(a, (size_t)n, &d) != n ||
		    d.xid != m.xid || d.mtype != m.mtype ||
		    rpcrdma_rpc_msg_encode(&d, b, sizeof b) != n ||
		    memcmp(a, b, (size_t)n) != 0) {
			bad++;
			continue;
		}
		if (m.mtype == RPCRDMA_RPC_CALL &&
		    (d.call.prog != m.call.prog ||
		     d.call.cred.len != m.call.cred.len ||
		     d.call.verf.flavor != m.call.verf.flavor ||
		     (m.call.cred.len &&
		      memcmp(d.call.cred.body, m.call.cred.body,
			     m.call.cred.len) != 0)))
			bad++;
	}
	CHECK_EQ(bad, 0);
}

int main(void)
{
	test_known_calls();
	test_known_replies();
	test_encode_vectors();
	test_truncations();
	test_malformed();
	test_encode_invalid();
	test_names();
	test_round_trip();
	TEST_MAIN_END();
}
