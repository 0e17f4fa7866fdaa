/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The size convention of the public structs that grow (rpcrdma.h,
 * "Binary compatibility"), through the shared library as a program sees
 * it: a program built against an older header (a smaller struct) and one
 * built against a newer header (a larger one) are played with buffers of
 * those sizes around the real struct.
 *
 *   test_abi_sizes HOST      (loopback address of the iwarp provider)
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpcrdma/rpcrdma.h"
#include "test.h"

#define CANARY 0xa5
#define EXTRA 24 /* bytes a newer header has appended */
/* The first published layouts (what the library takes as the smallest). */
#define OPTS_V0 (offsetof(struct rpcrdma_opts, accept_msgp) + sizeof(bool))
#define STATS_V0 (offsetof(struct rpcrdma_stats, v2_err_recv) + \
		  sizeof(((struct rpcrdma_stats *)0)->v2_err_recv))

/* Storage for a struct of up to sizeof(T) + EXTRA bytes, plus room past
 * it to see whether the library wrote there. */
union opts_buf {
	struct rpcrdma_opts o;
	unsigned char b[sizeof(struct rpcrdma_opts) + EXTRA + 32];
};
union stats_buf {
	struct rpcrdma_stats s;
	unsigned char b[sizeof(struct rpcrdma_stats) + EXTRA + 32];
};

static int all_eq(const unsigned char *p, size_t from, size_t to, unsigned char v)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static const char *host;
static char listen_addr[96]; /* host, port 0: an ephemeral port */

static void test_opts_init(void)
{
	union opts_buf u;

	/* This header: the defaults, the size recorded. */
	memset(u.b, CANARY, sizeof(u.b));
	rpcrdma_opts_default(&u.o);
	CHECK_EQ(u.o.size, sizeof(struct rpcrdma_opts));
	CHECK_EQ(u.o.credits, 32);
	CHECK_EQ(u.o.inline_send, 4096);
	CHECK(u.o.remote_inv);
	CHECK(all_eq(u.b, sizeof(u.o), sizeof(u.b), CANARY));

	/* busy_poll_us: 50 by default; RPCRDMA_BUSY_POLL_US sets it, 0
	 * turns it off (negative); a value refused (too large, not a
	 * number) keeps the default here, and fails every create call
	 * (tests/e2e/test_errors.c). */
	static const struct {
		const char *env;
		int want;
	} bp[] = {{NULL, 50}, {"0", -1}, {"70", 70}, {"1000000", 1000000},
		  {"5000000", 50}, {"abc", 50}};
	for (size_t i = 0; i < sizeof(bp) / sizeof(bp[0]); i++) {
		if (bp[i].env)
			setenv("RPCRDMA_BUSY_POLL_US", bp[i].env, 1);
		else
			unsetenv("RPCRDMA_BUSY_POLL_US");
		rpcrdma_opts_default(&u.o);
		CHECK_EQ(u.o.busy_poll_us, bp[i].want);
	}
	unsetenv("RPCRDMA_BUSY_POLL_US");

	/* An older header: nothing written past its size. */
	size_t old = offsetof(struct rpcrdma_opts, credits) + sizeof(uint32_t);
	memset(u.b, CANARY, sizeof(u.b));
	rpcrdma_opts_init(&u.o, old);
	CHECK_EQ(u.o.size, old);
	CHECK_EQ(u.o.credits, 32);
	CHECK(all_eq(u.b, old, sizeof(u.b), CANARY));

	/* A newer header: the options we do not know are zero. */
	memset(u.b, CANARY, sizeof(u.b));
	rpcrdma_opts_init(&u.o, sizeof(u.o) + EXTRA);
	CHECK_EQ(u.o.size, sizeof(u.o) + EXTRA);
	CHECK(all_eq(u.b, sizeof(u.o), sizeof(u.o) + EXTRA, 0));
	CHECK(all_eq(u.b, sizeof(u.o) + EXTRA, sizeof(u.b), CANARY));
}

static int try_svc(const struct rpcrdma_opts *o)
{
	struct rpcrdma_svc *s = NULL;
	int rc = rpcrdma_svc_create(listen_addr, o, &s);
	if (rc == 0) {
		CHECK(s != NULL);
		rpcrdma_svc_destroy(s);
	}
	return rc;
}

static void test_opts_taken(void)
{
	union opts_buf u;

	rpcrdma_opts_default(&u.o);
	CHECK_EQ(try_svc(&u.o), 0);

	/* Never initialised, or a pointer's size: refused. */
	u.o.size = 0;
	CHECK_EQ(try_svc(&u.o), RPCRDMA_ERR_INVAL);
	u.o.size = sizeof(void *);
	CHECK_EQ(try_svc(&u.o), RPCRDMA_ERR_INVAL);
	u.o.size = OPTS_V0 - 1;
	CHECK_EQ(try_svc(&u.o), RPCRDMA_ERR_INVAL);

	/* The first layout is taken. */
	memset(u.b, 0, sizeof(u.b));
	rpcrdma_opts_init(&u.o, OPTS_V0);
	CHECK_EQ(try_svc(&u.o), 0);

	/* A newer program that left its new options alone is served; one
	 * that set one of them is told this library cannot honour it. */
	memset(u.b, CANARY, sizeof(u.b));
	rpcrdma_opts_init(&u.o, sizeof(u.o) + EXTRA);
	CHECK_EQ(try_svc(&u.o), 0);
	u.b[sizeof(u.o) + EXTRA - 1] = 1;
	CHECK_EQ(try_svc(&u.o), RPCRDMA_ERR_NOTSUP);
	u.b[sizeof(u.o) + EXTRA - 1] = 0;
	u.b[sizeof(u.o)] = 1;
	CHECK_EQ(try_svc(&u.o), RPCRDMA_ERR_NOTSUP);

	/* The client path checks the same way (before any connecting). */
	struct rpcrdma_clnt *c = NULL;
	CHECK_EQ(rpcrdma_clnt_create(listen_addr, 1, 1, &u.o, &c), RPCRDMA_ERR_NOTSUP);
	CHECK(c == NULL);
	u.o.size = 0;
	CHECK_EQ(rpcrdma_clnt_create(listen_addr, 1, 1, &u.o, &c), RPCRDMA_ERR_INVAL);
}

static void test_stats(void)
{
	struct rpcrdma_opts o;
	struct rpcrdma_svc *s = NULL;
	struct rpcrdma_clnt *c = NULL;
	union stats_buf u;
	char addr[96];

	rpcrdma_opts_default(&o);
	int rc = rpcrdma_svc_create(listen_addr, &o, &s);
	CHECK_EQ(rc, 0);
	if (rc)
		return;
	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%u" : "%s:%u",
		 host, rpcrdma_svc_port(s));
	rc = rpcrdma_clnt_create(addr, 0x20000099, 1, &o, &c);
	CHECK_EQ(rc, 0);
	if (rc) {
		rpcrdma_svc_destroy(s);
		return;
	}

	/* This header. */
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_clnt_stats(c, &u.s), 0);
	CHECK_EQ(u.s.connections, 1);
	CHECK(all_eq(u.b, sizeof(u.s), sizeof(u.b), CANARY));

	/* An older header: only its size is written.  (While the struct
	 * has not grown since its first layout, STATS_V0 is its size.) */
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_clnt_stats_sized(c, &u.s, STATS_V0), 0);
	CHECK_EQ(u.s.connections, 1);
	CHECK(all_eq(u.b, STATS_V0, sizeof(u.b), CANARY));

	/* A newer header: the counters we do not have read 0. */
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_clnt_stats_sized(c, &u.s, sizeof(u.s) + EXTRA), 0);
	CHECK_EQ(u.s.connections, 1);
	CHECK(all_eq(u.b, sizeof(u.s), sizeof(u.s) + EXTRA, 0));
	CHECK(all_eq(u.b, sizeof(u.s) + EXTRA, sizeof(u.b), CANARY));

	/* Too small to be any version of the struct. */
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_clnt_stats_sized(c, &u.s, sizeof(void *)),
		 RPCRDMA_ERR_INVAL);
	CHECK_EQ(rpcrdma_clnt_stats_sized(c, &u.s, STATS_V0 - 1),
		 RPCRDMA_ERR_INVAL);
	CHECK(all_eq(u.b, 0, sizeof(u.b), CANARY));
	CHECK_EQ(rpcrdma_clnt_stats_sized(c, NULL, sizeof(u.s)), RPCRDMA_ERR_INVAL);

	/* The server's, the same way (its count of connections may lag
	 * the client's: not checked). */
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_svc_stats_sized(s, &u.s, sizeof(u.s) + EXTRA), 0);
	CHECK(all_eq(u.b, sizeof(u.s), sizeof(u.s) + EXTRA, 0));
	CHECK(all_eq(u.b, sizeof(u.s) + EXTRA, sizeof(u.b), CANARY));
	memset(u.b, CANARY, sizeof(u.b));
	CHECK_EQ(rpcrdma_svc_stats_sized(s, &u.s, STATS_V0), 0);
	CHECK(all_eq(u.b, STATS_V0, sizeof(u.b), CANARY));
	CHECK_EQ(rpcrdma_svc_stats_sized(s, &u.s, 0), RPCRDMA_ERR_INVAL);

	rpcrdma_clnt_destroy(c);
	rpcrdma_svc_destroy(s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s HOST\n", argv[0]);
		return 2;
	}
	host = argv[1];
	snprintf(listen_addr, sizeof(listen_addr),
		 strchr(host, ':') ? "[%s]:0" : "%s:0", host);
	test_opts_init();
	test_opts_taken();
	test_stats();
	TEST_MAIN_END();
}
