/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * End to end: an rpcrdma server and client in one process (a forked child
 * for the server-killed case) over the soft-iWARP provider on loopback.
 *
 *   test_e2e ADDR          every case, server on ADDR (127.0.0.1 or ::1)
 *   test_e2e ADDR kill     the server process dies mid-call
 *   test_e2e ADDR chaos    ... at a different moment in each of 10 rounds
 *                          of chunked calls of every shape
 *
 * RPCRDMA_PROVIDER picks the clients' provider, RPCRDMA_E2E_SERVER_PROVIDER
 * (when set) the servers'.
 *
 * Each case checks the data byte for byte and the client's transport
 * counters, so a case proves which RPC-over-RDMA shape was used (RFC 8166
 * §3.5: Short, Chunked, Long Call; §3.5.3/§4.3.3 Long Reply).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "wire/xdr.h"
#include "test.h"

#define PROG 0x20000099u
#define CB_PROG 0x40000099u

enum {
	P_ECHO = 1,    /* results = arguments */
	P_CHECK = 2,   /* u32 len, opaque<> (DDP) -> u32 ok, u32 len */
	P_READ = 3,    /* u32 len, u32 seed -> u32 len, opaque<> (DDP) */
	P_BIG = 4,     /* u32 len -> len bytes, no DDP */
	P_GARBAGE = 5, /* handler says the arguments are garbage */
	P_WHOAMI = 6,  /* -> flavor, uid, gid, ngids, gids..., namelen */
	P_SLEEP = 7,   /* u32 ms -> u32 ms */
	P_CALLBACK = 8, /* u32 v -> u32 (v + 1) * 2 via a callback */
	P_SUM = 9,     /* any -> u32 sum of bytes, u32 len */
	P_READ_NODDP = 10, /* P_READ whose ULB allows no DDP */
};

static char addr_host[64];
static const char *family = "127.0.0.1";
static uint16_t port;

/* The loopback address of the run with an ephemeral port. */
static void listen_addr(char *buf, size_t cap)
{
	snprintf(buf, cap, strchr(addr_host, ':') ? "[%s]:0" : "%s:0", addr_host);
}

static uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;
	x ^= x >> 13;
	return (uint8_t)(x + (i >> 8) + seed);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Server procedures                                                    */

static enum rpcrdma_svc_stat h_echo(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const void *args = rpcrdma_svc_req_args(r, &len);
	struct rpcrdma_iov iov = {(void *)args, len, false};
	return rpcrdma_svc_req_reply(r, &iov, 1) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_check(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len < 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p);
	if (len < 4 + (size_t)n)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t ok = 1;
	for (uint32_t i = 0; i < n; i++)
		if (p[4 + i] != pat(7, i)) {
			ok = 0;
			break;
		}
	/* A DDP item comes back into the stream with its XDR roundup, as
	 * zeros (RFC 8166 §3.4.5.2 / RFC 4506 §4.10). */
	size_t pad = (4 - (n & 3)) & 3;
	if (len != 4 + (size_t)n + pad)
		ok = 0;
	for (size_t i = 0; ok && i < pad; i++)
		if (p[4 + n + i] != 0)
			ok = 0;
	uint8_t *out = rpcrdma_svc_req_alloc(r, 8);
	rpcrdma_be32_put(out, ok);
	rpcrdma_be32_put(out + 4, n);
	struct rpcrdma_iov iov = {out, 8, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_read(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 8)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p), seed = rpcrdma_be32_get(p + 4);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 8 + n);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, n);
	for (uint32_t i = 0; i < n; i++)
		out[4 + i] = pat(seed, i);
	struct rpcrdma_iov iov[2] = {{out, 4, false}, {out + 4, n, true}};
	rpcrdma_svc_req_reply(r, iov, 2);
	return RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_big(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p) & ~3u;
	uint8_t *out = rpcrdma_svc_req_alloc(r, n);
	for (uint32_t i = 0; i < n; i++)
		out[i] = pat(3, i);
	struct rpcrdma_iov iov = {out, n, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_garbage(struct rpcrdma_svc_req *r, void *a)
{
	(void)r;
	(void)a;
	return RPCRDMA_SVC_GARBAGE_ARGS;
}

static enum rpcrdma_svc_stat h_whoami(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	const struct rpcrdma_cred *c = rpcrdma_svc_req_cred(r);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4 * 24);
	size_t k = 0;
	rpcrdma_be32_put(out + 4 * k++, c->flavor);
	rpcrdma_be32_put(out + 4 * k++, c->uid);
	rpcrdma_be32_put(out + 4 * k++, c->gid);
	rpcrdma_be32_put(out + 4 * k++, c->ngids);
	for (uint32_t i = 0; i < c->ngids && i < 16; i++)
		rpcrdma_be32_put(out + 4 * k++, c->gids[i]);
	rpcrdma_be32_put(out + 4 * k++, (uint32_t)strlen(c->machinename));
	struct rpcrdma_iov iov = {out, 4 * k, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

static atomic_int sleepers; /* P_SLEEP handlers started */

static enum rpcrdma_svc_stat h_sleep(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	atomic_fetch_add(&sleepers, 1);
	usleep(rpcrdma_be32_get(p) * 1000u);
	struct rpcrdma_iov iov = {(void *)p, 4, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_sum(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	uint32_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum += p[i];
	uint8_t *out = rpcrdma_svc_req_alloc(r, 8);
	rpcrdma_be32_put(out, sum);
	rpcrdma_be32_put(out + 4, (uint32_t)len);
	struct rpcrdma_iov iov = {out, 8, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

/* RFC 8167: call the client's callback program on this connection. */
static enum rpcrdma_svc_stat h_callback(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	struct rpcrdma_clnt *cb;
	if (rpcrdma_svc_req_clnt(r, CB_PROG, 1, &cb))
		return RPCRDMA_SVC_SYSTEM_ERR;
	uint8_t arg[4];
	rpcrdma_be32_put(arg, rpcrdma_be32_get(p) + 1);
	struct rpcrdma_iov iov = {arg, 4, false};
	struct rpcrdma_call call = {.proc = 1, .args = &iov, .nargs = 1,
				    .timeout_ms = 5000};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(cb, &call, &rep);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 8);
	rpcrdma_be32_put(out, rc == 0 && rep.len == 4 ? rpcrdma_be32_get(rep.data) : 0xdeadu);
	rpcrdma_be32_put(out + 4, (uint32_t)-rc);
	rpcrdma_reply_free(&rep);
	rpcrdma_clnt_destroy(cb);
	struct rpcrdma_iov res = {out, 8, false};
	rpcrdma_svc_req_reply(r, &res, 1);
	return RPCRDMA_SVC_OK;
}

static atomic_int cb_calls;

/* The client's callback procedure: v -> v * 2. */
static enum rpcrdma_svc_stat h_cb_double(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	atomic_fetch_add(&cb_calls, 1);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4);
	rpcrdma_be32_put(out, rpcrdma_be32_get(p) * 2);
	struct rpcrdma_iov iov = {out, 4, false};
	rpcrdma_svc_req_reply(r, &iov, 1);
	return RPCRDMA_SVC_OK;
}

/* The RPC-over-RDMA version connections of this run must come out at:
 * the default client (PREFER_V2) against the default server speaks v2,
 * RPCRDMA_VERSIONS=1 makes both sides v1-only (docs/v2.md). */
static uint32_t expected_version(void)
{
	const char *v = getenv("RPCRDMA_VERSIONS");
	return v && strcmp(v, "1") == 0 ? 1 : 2;
}

/* Handler threads of the servers: the library's default (handlers run
 * on the thread that takes the call), or a pool when the run says so
 * (E2E_WORKERS=N: e2e_ipv4_pool). */
static unsigned test_workers(void)
{
	const char *w = getenv("E2E_WORKERS");
	return w ? (unsigned)atoi(w) : 0;
}

/* opts NULL: the defaults (the environment's versions). */
static struct rpcrdma_svc *start_server_opts(const char *listen,
					     const struct rpcrdma_opts *opts)
{
	struct rpcrdma_opts o;
	struct rpcrdma_svc *s = NULL;
	if (opts)
		o = *opts;
	else
		rpcrdma_opts_default(&o);
	o.workers = test_workers();
	/* The server on another provider than the clients (which take
	 * RPCRDMA_PROVIDER): the siw lab runs the suite with the verbs
	 * provider on one side and the iwarp provider on the other. */
	const char *sp = getenv("RPCRDMA_E2E_SERVER_PROVIDER");
	if (sp && *sp)
		o.provider = sp;
	int rc = rpcrdma_svc_create(listen, &o, &s);
	if (rc) {
		fprintf(stderr, "svc_create(%s): %s\n", listen,
			rpcrdma_strerror(rc));
		return NULL;
	}
	static const struct {
		uint32_t proc;
		rpcrdma_svc_handler h;
		unsigned flags;
	} procs[] = {
		{P_ECHO, h_echo, 0}, {P_CHECK, h_check, 0},
		{P_READ, h_read, RPCRDMA_ULB_DDP_RESULT}, {P_BIG, h_big, 0},
		{P_GARBAGE, h_garbage, 0}, {P_WHOAMI, h_whoami, 0},
		{P_SLEEP, h_sleep, 0}, {P_CALLBACK, h_callback, 0},
		{P_SUM, h_sum, 0}, {P_READ_NODDP, h_read, 0},
	};
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		rpcrdma_svc_register(s, PROG, 1, procs[i].proc, procs[i].h,
				     NULL, procs[i].flags);
		rpcrdma_svc_register(s, PROG, 3, procs[i].proc, procs[i].h,
				     NULL, procs[i].flags);
	}
	return s;
}

static struct rpcrdma_svc *start_server(const char *listen)
{
	return start_server_opts(listen, NULL);
}

/* Without CHECK: callable from any thread (the harness counters are
 * not atomic).  opts NULL: the defaults. */
static int open_client_opts(uint32_t prog, uint32_t vers,
			    const struct rpcrdma_opts *opts,
			    struct rpcrdma_clnt **c)
{
	char a[96];
	*c = NULL;
	if (strchr(addr_host, ':'))
		snprintf(a, sizeof(a), "[%s]:%u", addr_host, port);
	else
		snprintf(a, sizeof(a), "%s:%u", addr_host, port);
	int rc = rpcrdma_clnt_create(a, prog, vers, opts, c);
	if (rc)
		fprintf(stderr, "clnt_create(%s): %s\n", a, rpcrdma_strerror(rc));
	return rc;
}

static int open_client(uint32_t prog, uint32_t vers, struct rpcrdma_clnt **c)
{
	return open_client_opts(prog, vers, NULL, c);
}

static struct rpcrdma_clnt *connect_client(uint32_t prog, uint32_t vers)
{
	struct rpcrdma_clnt *c;
	CHECK_EQ(open_client(prog, vers, &c), 0);
	return c;
}

static struct rpcrdma_svc *srv; /* in-process server (not "kill") */

static struct rpcrdma_stats stats(struct rpcrdma_clnt *c)
{
	struct rpcrdma_stats s;
	CHECK_EQ(rpcrdma_clnt_stats(c, &s), 0);
	return s;
}

static struct rpcrdma_stats svc_stats(void)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	if (srv)
		CHECK_EQ(rpcrdma_svc_stats(srv, &s), 0);
	return s;
}

/* ------------------------------------------------------------------ */
/* Cases                                                                */

static void case_null(struct rpcrdma_clnt *c)
{
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 0);
	CHECK_EQ(rep.accept_stat, 0);
	rpcrdma_reply_free(&rep);
}

static void case_echo(struct rpcrdma_clnt *c)
{
	uint8_t buf[100];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pat(1, i);
	struct rpcrdma_stats s0 = stats(c);
	struct rpcrdma_iov iov[2] = {{buf, 60, false}, {buf + 60, 40, false}};
	struct rpcrdma_call call = {.proc = P_ECHO, .args = iov, .nargs = 2};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, sizeof(buf));
	if (rep.len == sizeof(buf))
		CHECK_MEM(rep.data, buf, sizeof(buf));
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s1 = stats(c);
	CHECK_EQ(s1.short_calls - s0.short_calls, 1);    /* §3.5.1 */
	CHECK_EQ(s1.replies_inline - s0.replies_inline, 1);
}

static void case_ddp_arg(struct rpcrdma_clnt *c)
{
	const uint32_t n = 1u << 20;
	uint8_t *data = malloc(n), hdr[4];
	for (uint32_t i = 0; i < n; i++)
		data[i] = pat(7, i);
	rpcrdma_be32_put(hdr, n);
	struct rpcrdma_stats s0 = stats(c), v0 = svc_stats();
	struct rpcrdma_iov iov[2] = {{hdr, 4, false}, {data, n, true}};
	struct rpcrdma_call call = {.proc = P_CHECK, .args = iov, .nargs = 2};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 8);
	if (rep.len == 8) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), 1); /* server saw every byte */
		CHECK_EQ(rpcrdma_be32_get(rep.data + 4), n);
	}
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s1 = stats(c);
	CHECK_EQ(s1.chunked_calls - s0.chunked_calls, 1); /* §3.5.2 */
	/* The server pulled the Read chunk (§3.4.5), and the rkey was
	 * invalidated before the call completed (§4.4.1). */
	struct rpcrdma_stats v1 = svc_stats();
	CHECK(v1.rdma_read_bytes - v0.rdma_read_bytes >= n);
	CHECK(s1.remote_invs + s1.local_invs > s0.remote_invs + s0.local_invs);
	free(data);
}

static void case_write_chunk(struct rpcrdma_clnt *c)
{
	const uint32_t n = 1u << 20;
	uint8_t args[8];
	rpcrdma_be32_put(args, n);
	rpcrdma_be32_put(args + 4, 11);
	size_t max = n;
	struct rpcrdma_iov iov = {args, 8, false};
	struct rpcrdma_call call = {.proc = P_READ, .args = &iov, .nargs = 1,
				    .ddp_result_max = &max, .nddp_results = 1};
	struct rpcrdma_reply rep;
	struct rpcrdma_stats v0 = svc_stats();
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	/* The length word stays inline; the data went by Write chunk
	 * (RFC 8166 §4.3.2), so the inline stream is 4 bytes. */
	CHECK_EQ(rep.len, 4);
	CHECK_EQ(rep.nddp, 1);
	CHECK_EQ(rep.ddp_len[0], n);
	if (rep.len == 4 && rep.ddp_len[0] == n) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), n);
		size_t bad = SIZE_MAX;
		for (uint32_t i = 0; i < n && bad == SIZE_MAX; i++)
			if (rep.ddp[0][i] != pat(11, i))
				bad = i;
		CHECK(bad == SIZE_MAX);
	}
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats v1 = svc_stats();
	CHECK_EQ(v1.chunked_replies - v0.chunked_replies, 1);
	CHECK(v1.rdma_write_bytes - v0.rdma_write_bytes >= n);

	/* The same result from a procedure whose Upper-Layer Binding allows
	 * no DDP: it comes inline, XDR-padded (RFC 8166 §6), and the Write
	 * chunk is returned unused. */
	rpcrdma_be32_put(args, 1001);
	call.proc = P_READ_NODDP;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 4 + 1004);
	CHECK_EQ(rep.ddp_len[0], 0);
	if (rep.len == 1008) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), 1001);
		size_t bad = SIZE_MAX;
		for (uint32_t i = 0; i < 1001 && bad == SIZE_MAX; i++)
			if (rep.data[4 + i] != pat(11, i))
				bad = i;
		CHECK(bad == SIZE_MAX);
	}
	rpcrdma_reply_free(&rep);

	/* An empty Write chunk forces a DDP-eligible result inline
	 * (RFC 8166 §4.3.2.3). */
	size_t zero = 0;
	call.proc = P_READ;
	call.ddp_result_max = &zero;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 4 + 1004);
	CHECK_EQ(rep.ddp_len[0], 0);
	if (rep.len == 1008)
		CHECK_EQ(rep.data[4 + 1000], pat(11, 1000));
	rpcrdma_reply_free(&rep);
}

static void case_long_reply(struct rpcrdma_clnt *c)
{
	const uint32_t n = 64u << 10;
	uint8_t args[4];
	rpcrdma_be32_put(args, n);
	struct rpcrdma_stats s0 = stats(c), v0 = svc_stats();
	struct rpcrdma_iov iov = {args, 4, false};
	struct rpcrdma_call call = {.proc = P_BIG, .args = &iov, .nargs = 1,
				    .reply_max = n};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, n);
	if (rep.len == n) {
		size_t bad = SIZE_MAX;
		for (uint32_t i = 0; i < n && bad == SIZE_MAX; i++)
			if (rep.data[i] != pat(3, i))
				bad = i;
		CHECK(bad == SIZE_MAX);
	}
	rpcrdma_reply_free(&rep);
	struct rpcrdma_stats s1 = stats(c);
	CHECK_EQ(s1.replies_long - s0.replies_long, 1); /* §3.5.3 */
	struct rpcrdma_stats v1 = svc_stats();
	CHECK_EQ(v1.long_replies - v0.long_replies, 1);
	CHECK(v1.rdma_write_bytes - v0.rdma_write_bytes >= n);
	/* Without reply_max a reply over the inline threshold cannot come
	 * back: the server answers ERR_CHUNK (RFC 8166 §4.5.3); v2 has a
	 * code of its own for it, RDMA2_ERR_REPLY_RESOURCE (draft-cel-
	 * nfsv4-rpcrdma-version-two §5.3.3); either way the client tells
	 * the caller the reply did not fit its reply_max. */
	call.reply_max = 0;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_REPLY_TOO_BIG);
	rpcrdma_reply_free(&rep);
}

/* P_SUM over n pattern bytes (seed), no DDP: checks the sum and length
 * the server computed. */
static void sum_call(struct rpcrdma_clnt *c, unsigned seed, size_t n)
{
	uint8_t *buf = malloc(n);
	uint32_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		buf[i] = pat(seed, i);
		sum += buf[i];
	}
	struct rpcrdma_iov iov = {buf, n, false};
	struct rpcrdma_call call = {.proc = P_SUM, .args = &iov, .nargs = 1};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 8);
	if (rep.len == 8) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), sum);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 4), n);
	}
	rpcrdma_reply_free(&rep);
	free(buf);
}

static void case_long_call(struct rpcrdma_clnt *c)
{
	const size_t n = 16u << 10;
	struct rpcrdma_stats s0 = stats(c), v0 = svc_stats();
	sum_call(c, 5, n);
	struct rpcrdma_stats s1 = stats(c);
	CHECK_EQ(s1.long_calls - s0.long_calls, 1); /* §3.5.3 Long Call */
	/* The whole call came by RDMA Read (Position-Zero Read chunk). */
	struct rpcrdma_stats v1 = svc_stats();
	CHECK(v1.rdma_read_bytes - v0.rdma_read_bytes >= n);
}

/* Random sizes around every threshold (RFC 8166 §3.5, RFC 8797 §4.2):
 * whole-call and whole-reply sizes straddling the 4096-byte inline
 * thresholds (Short vs Long Call, inline vs Long Reply), and DDP items of
 * every length modulo 4 from 1 byte to past 8 KiB (Read chunk roundup,
 * Write chunk returned lengths), each checked byte for byte. */
static void case_threshold_sweep(struct rpcrdma_clnt *c)
{
	unsigned seed = 8166;
	struct rpcrdma_stats s0 = stats(c);
	unsigned bad = 0, calls = 0;
	uint8_t *buf = malloc(9000), hdr[8];
	for (int k = 0; k < 120; k++) {
		/* 1. Echo: arguments = results, multiples of 4 around 4 KiB. */
		size_t n = 3800 + 4 * (size_t)(rand_r(&seed) % 150);
		for (size_t i = 0; i < n; i++)
			buf[i] = pat((uint32_t)k, i);
		struct rpcrdma_iov iov = {buf, n, false};
		struct rpcrdma_call call = {.proc = P_ECHO, .args = &iov, .nargs = 1,
					    .reply_max = n + 64};
		struct rpcrdma_reply rep;
		calls++;
		if (rpcrdma_clnt_call(c, &call, &rep) != 0 || rep.len != n ||
		    memcmp(rep.data, buf, n) != 0)
			bad++;
		rpcrdma_reply_free(&rep);

		/* 2. A DDP argument of any length (Read chunk). */
		uint32_t m = 1 + (uint32_t)(rand_r(&seed) % 9000);
		for (uint32_t i = 0; i < m; i++)
			buf[i] = pat(7, i);
		rpcrdma_be32_put(hdr, m);
		struct rpcrdma_iov v2[2] = {{hdr, 4, false}, {buf, m, true}};
		struct rpcrdma_call c2 = {.proc = P_CHECK, .args = v2, .nargs = 2};
		calls++;
		if (rpcrdma_clnt_call(c, &c2, &rep) != 0 || rep.len != 8 ||
		    rpcrdma_be32_get(rep.data) != 1 || rpcrdma_be32_get(rep.data + 4) != m)
			bad++;
		rpcrdma_reply_free(&rep);

		/* 3. A DDP result of any length (Write chunk). */
		uint32_t r = 1 + (uint32_t)(rand_r(&seed) % 9000);
		rpcrdma_be32_put(hdr, r);
		rpcrdma_be32_put(hdr + 4, (uint32_t)k);
		size_t max = 9000;
		struct rpcrdma_iov v3 = {hdr, 8, false};
		struct rpcrdma_call c3 = {.proc = P_READ, .args = &v3, .nargs = 1,
					  .ddp_result_max = &max, .nddp_results = 1};
		calls++;
		bool ok = rpcrdma_clnt_call(c, &c3, &rep) == 0 && rep.len == 4 &&
			  rep.nddp == 1 && rep.ddp_len[0] == r;
		for (uint32_t i = 0; ok && i < r; i++)
			if (rep.ddp[0][i] != pat((uint32_t)k, i))
				ok = false;
		if (!ok)
			bad++;
		rpcrdma_reply_free(&rep);
	}
	free(buf);
	struct rpcrdma_stats s1 = stats(c);
	CHECK_EQ(bad, 0);
	/* Both sides of each threshold were exercised. */
	CHECK(s1.short_calls > s0.short_calls);
	CHECK(s1.long_calls > s0.long_calls);
	CHECK(s1.chunked_calls > s0.chunked_calls);
	CHECK(s1.replies_long > s0.replies_long);
	CHECK(s1.replies_inline > s0.replies_inline);
	printf("threshold sweep: %u calls; %llu Short, %llu Chunked, %llu Long calls; "
	       "%llu inline, %llu Long replies\n", calls,
	       (unsigned long long)(s1.short_calls - s0.short_calls),
	       (unsigned long long)(s1.chunked_calls - s0.chunked_calls),
	       (unsigned long long)(s1.long_calls - s0.long_calls),
	       (unsigned long long)(s1.replies_inline - s0.replies_inline),
	       (unsigned long long)(s1.replies_long - s0.replies_long));
}

/* 64 calls in flight from 8 threads: more than the 32 credits. */
struct conc {
	struct rpcrdma_clnt *c;
	int id;
	atomic_int done, ok;
};

struct conc_call {
	struct conc *k;
	uint8_t args[64];
};

static void conc_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct conc_call *cc = arg;
	if (rep->status == 0 && rep->len == sizeof(cc->args) &&
	    memcmp(rep->data, cc->args, sizeof(cc->args)) == 0)
		atomic_fetch_add(&cc->k->ok, 1);
	rpcrdma_reply_free(rep);
	atomic_fetch_add(&cc->k->done, 1);
}

static void *conc_thread(void *arg)
{
	struct conc *k = arg;
	struct conc_call calls[8];
	for (int i = 0; i < 8; i++) {
		calls[i].k = k;
		for (size_t j = 0; j < sizeof(calls[i].args); j++)
			calls[i].args[j] = pat((uint32_t)(k->id * 8 + i), j);
		struct rpcrdma_iov iov = {calls[i].args, sizeof(calls[i].args),
					  false};
		struct rpcrdma_call call = {.proc = P_ECHO, .args = &iov,
					    .nargs = 1};
		if (rpcrdma_clnt_call_async(k->c, &call, conc_cb, &calls[i]))
			atomic_fetch_add(&k->done, 1);
	}
	while (atomic_load(&k->done) < 8)
		usleep(1000);
	return NULL;
}

static void case_concurrent(struct rpcrdma_clnt *c)
{
	pthread_t t[8];
	struct conc k[8];
	for (int i = 0; i < 8; i++) {
		k[i].c = c;
		k[i].id = i;
		atomic_init(&k[i].done, 0);
		atomic_init(&k[i].ok, 0);
		pthread_create(&t[i], NULL, conc_thread, &k[i]);
	}
	int ok = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(atomic_load(&k[i].done), 8);
		ok += atomic_load(&k[i].ok);
	}
	CHECK_EQ(ok, 64);
	struct rpcrdma_stats s = stats(c);
	CHECK(s.credits_granted > 1); /* the server's grant (§3.3) */
}

/* Callbacks that start the next call, and now and then make a
 * synchronous one first: the callback's thread (the loop, or a caller
 * driving the connection) then drives the connection itself until that
 * reply is in, so the call must succeed, not deadlock or be refused. */
struct chain {
	struct rpcrdma_clnt *c;
	atomic_int left, done, sync_ok, errors;
};

static void chain_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct chain *ch = arg;
	if (rep->status)
		atomic_fetch_add(&ch->errors, 1);
	rpcrdma_reply_free(rep);
	struct rpcrdma_call call = {.proc = 0};
	if (atomic_load(&ch->left) % 50 == 0) {
		struct rpcrdma_reply r2;
		int rc = rpcrdma_clnt_call(ch->c, &call, &r2);
		if (rc == 0) {
			atomic_fetch_add(&ch->sync_ok, 1);
		} else {
			fprintf(stderr, "chain: synchronous call from a "
				"callback: %s\n", rpcrdma_strerror(rc));
			atomic_fetch_add(&ch->errors, 1);
		}
		rpcrdma_reply_free(&r2);
	}
	if (atomic_fetch_sub(&ch->left, 1) > 1) {
		if (rpcrdma_clnt_call_async(ch->c, &call, chain_cb, ch))
			atomic_fetch_add(&ch->errors, 1);
	} else {
		atomic_store(&ch->done, 1);
	}
}

static void case_async_chain(struct rpcrdma_clnt *c)
{
	static struct chain ch[4];
	for (int i = 0; i < 4; i++) {
		ch[i].c = c;
		atomic_init(&ch[i].left, 200);
		atomic_init(&ch[i].done, 0);
		atomic_init(&ch[i].sync_ok, 0);
		atomic_init(&ch[i].errors, 0);
		struct rpcrdma_call call = {.proc = 0};
		CHECK_EQ(rpcrdma_clnt_call_async(c, &call, chain_cb, &ch[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		for (int k = 0; k < 1000 && !atomic_load(&ch[i].done); k++)
			usleep(10000);
		CHECK_EQ(atomic_load(&ch[i].done), 1);
		CHECK_EQ(atomic_load(&ch[i].errors), 0);
	}
	int ok = 0;
	for (int i = 0; i < 4; i++)
		ok += atomic_load(&ch[i].sync_ok);
	/* left runs 200..1: each chain's callbacks at left 200, 150, 100
	 * and 50 made one synchronous call. */
	printf("synchronous calls made from completion callbacks: %d, all "
	       "answered\n", ok);
	CHECK_EQ(ok, 4 * 4);
}

/* Run to completion under contention: on one connection at once, four
 * threads make synchronous calls (each drives the connection itself or
 * sleeps while another caller drives it and delivers its call), an
 * asynchronous chain runs (the loop attends it, racing the drivers for
 * the CQ), and some calls go to a server handler that calls back into
 * this client (a reverse call served by whichever thread polls, run
 * inline there; with the default server the handler itself runs inline
 * on the server's loop thread).  Every call completes once, with its own
 * bytes. */
struct racer {
	struct rpcrdma_clnt *c;
	int id;
	atomic_int bad, calls;
};

static void *race_sync(void *arg)
{
	struct racer *r = arg;
	uint8_t buf[64];
	for (int i = 0; i < 150; i++) {
		struct rpcrdma_reply rep;
		if (i % 15 == 7) {
			uint32_t v = (uint32_t)(r->id * 1000 + i);
			uint8_t a[4];
			rpcrdma_be32_put(a, v);
			struct rpcrdma_iov iov = {a, 4, false};
			struct rpcrdma_call call = {.proc = P_CALLBACK,
						    .args = &iov, .nargs = 1};
			int rc = rpcrdma_clnt_call(r->c, &call, &rep);
			if (rc || rep.len != 8 ||
			    rpcrdma_be32_get(rep.data) != (v + 1) * 2) {
				fprintf(stderr, "race_sync %d: callback call %d: %s\n",
					r->id, i, rpcrdma_strerror(rc));
				atomic_fetch_add(&r->bad, 1);
			}
		} else {
			for (size_t j = 0; j < sizeof(buf); j++)
				buf[j] = pat((uint32_t)(r->id * 1000 + i), j);
			struct rpcrdma_iov iov = {buf, sizeof(buf), false};
			struct rpcrdma_call call = {.proc = P_ECHO, .args = &iov,
						    .nargs = 1};
			int rc = rpcrdma_clnt_call(r->c, &call, &rep);
			if (rc || rep.len != sizeof(buf) ||
			    memcmp(rep.data, buf, sizeof(buf))) {
				fprintf(stderr, "race_sync %d: call %d: %s\n",
					r->id, i, rpcrdma_strerror(rc));
				atomic_fetch_add(&r->bad, 1);
			}
		}
		rpcrdma_reply_free(&rep);
		atomic_fetch_add(&r->calls, 1);
	}
	return NULL;
}

static void case_drive_race(struct rpcrdma_clnt *c)
{
	static struct chain ch;
	ch.c = c;
	atomic_init(&ch.left, 400);
	atomic_init(&ch.done, 0);
	atomic_init(&ch.sync_ok, 0);
	atomic_init(&ch.errors, 0);
	int cb0 = atomic_load(&cb_calls);
	struct rpcrdma_call null = {.proc = 0};
	CHECK_EQ(rpcrdma_clnt_call_async(c, &null, chain_cb, &ch), 0);
	pthread_t t[4];
	struct racer r[4];
	for (int i = 0; i < 4; i++) {
		r[i].c = c;
		r[i].id = i;
		atomic_init(&r[i].bad, 0);
		atomic_init(&r[i].calls, 0);
		pthread_create(&t[i], NULL, race_sync, &r[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(atomic_load(&r[i].bad), 0);
		CHECK_EQ(atomic_load(&r[i].calls), 150);
	}
	for (int k = 0; k < 1000 && !atomic_load(&ch.done); k++)
		usleep(10000);
	CHECK_EQ(atomic_load(&ch.done), 1);
	CHECK_EQ(atomic_load(&ch.errors), 0);
	CHECK_EQ(atomic_load(&ch.sync_ok), 400 / 50);
	CHECK_EQ(atomic_load(&cb_calls) - cb0, 4 * 10);
}

/* A client destroyed while a synchronous caller of it is asleep on its
 * CQ, driving it: the caller returns CANCELLED, once, and nothing of the
 * connection is touched after it is freed (ASan). */
struct poller {
	struct rpcrdma_clnt *c;
	atomic_int status, done;
};

/* A P_SLEEP call of 300 ms on p's client: its status (and -1000 for a
 * reply that is not the argument echoed); done counts it.  In a frame of
 * its own, so that a cancellation after it unwinds no frame with locals
 * in memory (ASan poisons a frame's redzones and does not clean them up
 * on a forced unwind). */
static __attribute__((noinline)) void sleep_call(struct poller *p)
{
	uint8_t args[4];
	rpcrdma_be32_put(args, 300);
	struct rpcrdma_iov iov = {args, 4, false};
	struct rpcrdma_call call = {.proc = P_SLEEP, .args = &iov, .nargs = 1};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(p->c, &call, &rep);
	atomic_store(&p->status, rc);
	if (rc == 0 && (rep.len != 4 || rpcrdma_be32_get(rep.data) != 300))
		atomic_store(&p->status, -1000);
	rpcrdma_reply_free(&rep);
	atomic_fetch_add(&p->done, 1);
}

static void *poller_main(void *arg)
{
	sleep_call(arg);
	return NULL;
}

/* A client whose thread t (running fn) is asleep on its CQ, driving it,
 * waiting for a P_SLEEP call; NULL when it could not start. */
static struct rpcrdma_clnt *start_sleeper(struct poller *p,
					  void *(*fn)(void *), pthread_t *t)
{
	struct rpcrdma_clnt *c = connect_client(PROG, 1);
	if (!c)
		return NULL;
	p->c = c;
	atomic_init(&p->status, 1);
	atomic_init(&p->done, 0);
	int before = atomic_load(&sleepers);
	if (pthread_create(t, NULL, fn, p) != 0) {
		CHECK(0);
		rpcrdma_clnt_destroy(c);
		return NULL;
	}
	for (int i = 0; i < 5000 && atomic_load(&sleepers) == before; i++)
		usleep(1000);
	CHECK(atomic_load(&sleepers) > before);
	usleep(20000); /* the caller is asleep on the CQ by now */
	return c;
}

static void case_destroy_while_polling(void)
{
	struct poller p;
	pthread_t t;
	struct rpcrdma_clnt *c = start_sleeper(&p, poller_main, &t);
	if (!c)
		return;
	rpcrdma_clnt_destroy(c);
	pthread_join(t, NULL);
	CHECK_EQ(atomic_load(&p.done), 1);
	CHECK_EQ(atomic_load(&p.status), RPCRDMA_ERR_CANCELLED);
	usleep(350000); /* the handler ends; its reply meets no connection */
}

/* A thread cancelled (pthread_cancel) while it waits in a synchronous
 * call, asleep on the CQ and driving it.  rpcrdma's calls are not
 * cancellation points (rpcrdma(7)): the call runs to its end and returns
 * its result, and the thread is cancelled at its next cancellation point
 * after it.  The connection goes on serving other callers, and nothing
 * of the cancelled thread's stack is touched after it is gone (ASan).
 * Before, the cancelled thread stayed the connection's driver: every
 * later call timed out, and rpcrdma_clnt_destroy never returned. */
static void *cancelled_main(void *arg)
{
	struct poller *p = arg;
	sleep_call(p);
	pthread_testcancel();
	atomic_fetch_add(&p->done, 1); /* not reached once cancelled */
	return NULL;
}

static void case_cancel_caller(void)
{
	struct poller p;
	pthread_t t;
	struct rpcrdma_clnt *c = start_sleeper(&p, cancelled_main, &t);
	if (!c)
		return;
	CHECK_EQ(pthread_cancel(t), 0);
	void *ret = NULL;
	pthread_join(t, &ret);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&p.done), 1);
	CHECK_EQ(atomic_load(&p.status), 0);
	/* The connection still serves, a synchronous call and a sleeper. */
	for (int i = 0; i < 3; i++) {
		struct rpcrdma_call null = {.proc = 0};
		struct rpcrdma_reply rep;
		CHECK_EQ(rpcrdma_clnt_call(c, &null, &rep), 0);
		rpcrdma_reply_free(&rep);
	}
	sleep_call(&p);
	CHECK_EQ(atomic_load(&p.done), 2);
	CHECK_EQ(atomic_load(&p.status), 0);
	rpcrdma_clnt_destroy(c);
}

/* A synchronous call from a thread's exit: a thread-specific data
 * destructor of the application closes or uses a connection after the
 * library's own destructors of that thread ran.  The iwarp provider's RX
 * staging is the thread's (provider/iwarp/iwarp_qp_rx.c), freed by a
 * key's destructor; a pass after it must not use the freed buffer (ASan:
 * heap-use-after-free; Release: the pages are unmapped).  glibc runs the
 * destructors of a round in the order the keys were made, and the
 * provider's key was made at this process's first RX pass, long before
 * this case's, so the library's runs first. */
struct exit_call {
	struct rpcrdma_clnt *c;
	atomic_int first, keyed;  /* the thread's own call; its setspecific */
	atomic_int status, ran;   /* the destructor's call */
};

static pthread_key_t exit_key;

static void exit_call_run(void *arg)
{
	struct exit_call *x = arg;
	struct rpcrdma_call null = {.proc = 0};
	struct rpcrdma_reply rep;
	atomic_store(&x->status, rpcrdma_clnt_call(x->c, &null, &rep));
	rpcrdma_reply_free(&rep);
	atomic_fetch_add(&x->ran, 1);
}

/* The test's CHECKs are the main thread's: this one records. */
static void *exit_call_main(void *arg)
{
	struct exit_call *x = arg;
	struct rpcrdma_call null = {.proc = 0};
	struct rpcrdma_reply rep;
	atomic_store(&x->first, rpcrdma_clnt_call(x->c, &null, &rep));
	rpcrdma_reply_free(&rep);
	atomic_store(&x->keyed, pthread_setspecific(exit_key, x));
	return NULL;
}

static void case_call_at_thread_exit(void)
{
	struct rpcrdma_clnt *c = connect_client(PROG, 1);
	if (!c)
		return;
	struct exit_call x = {.c = c};
	atomic_init(&x.first, 1);
	atomic_init(&x.keyed, 1);
	atomic_init(&x.status, 1);
	atomic_init(&x.ran, 0);
	CHECK_EQ(pthread_key_create(&exit_key, exit_call_run), 0);
	for (int round = 0; round < 2; round++) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, exit_call_main, &x);
		CHECK_EQ(rc, 0);
		if (rc)
			break;
		pthread_join(t, NULL);
		CHECK_EQ(atomic_load(&x.first), 0);
		CHECK_EQ(atomic_load(&x.keyed), 0);
		CHECK_EQ(atomic_load(&x.ran), round + 1);
		CHECK_EQ(atomic_load(&x.status), 0);
	}
	pthread_key_delete(exit_key);
	rpcrdma_clnt_destroy(c);
}

static void case_errors(struct rpcrdma_clnt *c)
{
	struct rpcrdma_reply rep;
	struct rpcrdma_call call = {.proc = 99};
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_RPC_PROC_UNAVAIL);
	CHECK_EQ(rep.accept_stat, 3);
	uint8_t junk[4] = {0};
	struct rpcrdma_iov iov = {junk, 4, false};
	call = (struct rpcrdma_call){.proc = P_GARBAGE, .args = &iov,
				     .nargs = 1};
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_RPC_GARBAGE_ARGS);

	struct rpcrdma_clnt *c2 = connect_client(PROG + 1, 1);
	if (c2) {
		call = (struct rpcrdma_call){.proc = 0};
		CHECK_EQ(rpcrdma_clnt_call(c2, &call, &rep),
			 RPCRDMA_ERR_RPC_PROG_UNAVAIL);
		rpcrdma_clnt_destroy(c2);
	}
	struct rpcrdma_clnt *c3 = connect_client(PROG, 2);
	if (c3) {
		call = (struct rpcrdma_call){.proc = 0};
		CHECK_EQ(rpcrdma_clnt_call(c3, &call, &rep),
			 RPCRDMA_ERR_RPC_PROG_MISMATCH);
		CHECK_EQ(rep.low, 1);
		CHECK_EQ(rep.high, 3);
		rpcrdma_clnt_destroy(c3);
	}
}

static void case_auth(struct rpcrdma_clnt *c)
{
	struct rpcrdma_cred cr;
	memset(&cr, 0, sizeof(cr));
	cr.flavor = RPCRDMA_CRED_AUTH_SYS;
	cr.stamp = 42;
	strcpy(cr.machinename, "e2e-host");
	cr.uid = 1001;
	cr.gid = 100;
	cr.ngids = 3;
	cr.gids[0] = 4;
	cr.gids[1] = 24;
	cr.gids[2] = 27;
	CHECK_EQ(rpcrdma_clnt_set_cred(c, &cr), 0);
	struct rpcrdma_call call = {.proc = P_WHOAMI};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 4 * 8);
	if (rep.len == 32) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), RPCRDMA_CRED_AUTH_SYS);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 4), 1001);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 8), 100);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 12), 3);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 20), 24);
		CHECK_EQ(rpcrdma_be32_get(rep.data + 28), 8);
	}
	rpcrdma_reply_free(&rep);
	/* A malformed AUTH_SYS body: RFC 5531 §9 AUTH_ERROR/AUTH_BADCRED. */
	uint8_t bad[8] = {0, 0, 0, 1, 0, 0, 1, 0}; /* name length 256 */
	CHECK_EQ(rpcrdma_clnt_set_cred_raw(c, RPCRDMA_CRED_AUTH_SYS, bad, 8), 0);
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_RPC_AUTH);
	CHECK_EQ(rep.auth_stat, 1);
	CHECK_EQ(rpcrdma_clnt_set_cred(c, NULL), 0);
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	if (rep.len >= 4)
		CHECK_EQ(rpcrdma_be32_get(rep.data), RPCRDMA_CRED_AUTH_NONE);
	rpcrdma_reply_free(&rep);
}

static void case_timeout(struct rpcrdma_clnt *c)
{
	uint8_t args[4];
	rpcrdma_be32_put(args, 800);
	struct rpcrdma_iov iov = {args, 4, false};
	struct rpcrdma_call call = {.proc = P_SLEEP, .args = &iov, .nargs = 1,
				    .timeout_ms = 100};
	struct rpcrdma_reply rep;
	double t0 = now_s();
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_TIMEOUT);
	double dt = now_s() - t0;
	CHECK(dt >= 0.09 && dt < 0.7);
	/* The connection is still good and the late reply is dropped. */
	case_null(c);
	usleep(800000);
	case_null(c);
}

static void case_reverse(struct rpcrdma_clnt *c)
{
	uint8_t args[4];
	rpcrdma_be32_put(args, 20);
	struct rpcrdma_iov iov = {args, 4, false};
	struct rpcrdma_call call = {.proc = P_CALLBACK, .args = &iov,
				    .nargs = 1};
	struct rpcrdma_reply rep;
	int before = atomic_load(&cb_calls);
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
	CHECK_EQ(rep.len, 8);
	if (rep.len == 8) {
		CHECK_EQ(rpcrdma_be32_get(rep.data), 42); /* (20 + 1) * 2 */
		CHECK_EQ(rpcrdma_be32_get(rep.data + 4), 0);
	}
	rpcrdma_reply_free(&rep);
	CHECK_EQ(atomic_load(&cb_calls) - before, 1);
	struct rpcrdma_stats s = stats(c);
	CHECK(s.calls_received >= 1); /* RFC 8167: we were the Responder */
}

/* Several connections at once, each mixing Short and Chunked calls. */
static void *multi_thread(void *arg)
{
	atomic_int *ok = arg;
	struct rpcrdma_clnt *c;
	if (open_client(PROG, 1, &c))
		return NULL;
	static const uint32_t sizes[] = {4, 4001, 12000, 63999};
	uint8_t *data = malloc(64000), hdr[4];
	for (size_t i = 0; i < 64000; i++)
		data[i] = pat(7, i);
	for (int i = 0; i < 20; i++) {
		uint32_t n = sizes[i % 4];
		rpcrdma_be32_put(hdr, n);
		struct rpcrdma_iov iov[2] = {{hdr, 4, false},
					     {data, n, (i & 1) != 0}};
		struct rpcrdma_call call = {.proc = P_CHECK, .args = iov,
					    .nargs = 2};
		struct rpcrdma_reply rep;
		if (rpcrdma_clnt_call(c, &call, &rep) == 0 && rep.len == 8 &&
		    rpcrdma_be32_get(rep.data) == 1 && rpcrdma_be32_get(rep.data + 4) == n)
			atomic_fetch_add(ok, 1);
		rpcrdma_reply_free(&rep);
	}
	free(data);
	rpcrdma_clnt_destroy(c);
	return NULL;
}

static void case_multi_conn(void)
{
	pthread_t t[4];
	atomic_int ok;
	atomic_init(&ok, 0);
	struct rpcrdma_stats v0 = svc_stats();
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, multi_thread, &ok);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&ok), 80);
	struct rpcrdma_stats v1 = svc_stats();
	CHECK_EQ(v1.connections - v0.connections, 4);
}

static atomic_int cancel_cbs, cancel_status;

static void cancel_cb(void *arg, struct rpcrdma_reply *rep)
{
	(void)arg;
	atomic_fetch_add(&cancel_cbs, 1);
	atomic_store(&cancel_status, rep->status);
	rpcrdma_reply_free(rep);
}

/* Destroy with a call outstanding: its callback runs once. */
static void case_destroy_outstanding(void)
{
	struct rpcrdma_clnt *c = connect_client(PROG, 1);
	if (!c)
		return;
	uint8_t args[4];
	rpcrdma_be32_put(args, 300);
	struct rpcrdma_iov iov = {args, 4, false};
	struct rpcrdma_call call = {.proc = P_SLEEP, .args = &iov, .nargs = 1};
	CHECK_EQ(rpcrdma_clnt_call_async(c, &call, cancel_cb, NULL), 0);
	usleep(50000);
	rpcrdma_clnt_destroy(c);
	CHECK_EQ(atomic_load(&cancel_cbs), 1);
	CHECK_EQ(atomic_load(&cancel_status), RPCRDMA_ERR_CANCELLED);
	usleep(400000); /* the server's late reply meets a dead connection */
	CHECK_EQ(atomic_load(&cancel_cbs), 1);
}

/* A second server destroyed while a handler runs: the client's call
 * completes once (DISCONNECTED with a worker pool, its reply with the
 * handler on the loop thread); destroy waits for the handler. */
static void case_svc_destroy_midcall(void)
{
	char listen[96];
	uint16_t keep = port;
	listen_addr(listen, sizeof(listen));
	struct rpcrdma_svc *s2 = start_server(listen);
	CHECK(s2 != NULL);
	if (!s2)
		return;
	port = rpcrdma_svc_port(s2);
	struct rpcrdma_clnt *c = connect_client(PROG, 1);
	port = keep;
	if (c) {
		atomic_store(&cancel_cbs, 0);
		uint8_t args[4];
		rpcrdma_be32_put(args, 300);
		struct rpcrdma_iov iov = {args, 4, false};
		struct rpcrdma_call call = {.proc = P_SLEEP, .args = &iov,
					    .nargs = 1};
		int before = atomic_load(&sleepers);
		CHECK_EQ(rpcrdma_clnt_call_async(c, &call, cancel_cb, NULL), 0);
		for (int i = 0; i < 5000 && atomic_load(&sleepers) == before; i++)
			usleep(1000);
		CHECK(atomic_load(&sleepers) > before);
		double t0 = now_s();
		rpcrdma_svc_destroy(s2);
		s2 = NULL;
		CHECK(now_s() - t0 >= 0.25); /* the handler ran to its end */
		for (int i = 0; i < 200 && !atomic_load(&cancel_cbs); i++)
			usleep(10000);
		CHECK_EQ(atomic_load(&cancel_cbs), 1);
		/* A pool's handler outlives the disconnect, so its reply
		 * finds the connection gone; a handler on the loop thread
		 * holds destroy up until its reply is out. */
		CHECK_EQ(atomic_load(&cancel_status),
			 test_workers() ? RPCRDMA_ERR_DISCONNECTED : 0);
		rpcrdma_clnt_destroy(c);
		CHECK_EQ(atomic_load(&cancel_cbs), 1);
	}
	if (s2)
		rpcrdma_svc_destroy(s2);
	/* Nobody listens there any more: connecting fails cleanly. */
	struct rpcrdma_clnt *c2 = NULL;
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.connect_timeout_ms = 2000;
	int rc = rpcrdma_clnt_create(strchr(addr_host, ':') ? "[::1]:1"
							    : "127.0.0.1:1",
				     PROG, 1, &o, &c2);
	CHECK(rc < 0 && c2 == NULL);
	printf("connect to a closed port: %s\n", rpcrdma_strerror(rc));
	CHECK_EQ(rpcrdma_clnt_create("no:such:[addr", PROG, 1, NULL, &c2),
		 RPCRDMA_ERR_ADDR);
	o.provider = "no-such-provider";
	CHECK_EQ(rpcrdma_clnt_create("127.0.0.1:1", PROG, 1, &o, &c2),
		 RPCRDMA_ERR_NOTSUP);
}

/* ------------------------------------------------------------------ */
/* Version negotiation (draft-cel-nfsv4-rpcrdma-version-two §7)         */

/* One call of a batch started right after connecting, while the v2
 * opener may still be unanswered: whatever the negotiation does, each
 * must complete exactly once with its bytes intact. */
enum { VK_SHORT, VK_READ_CHUNK, VK_WRITE_CHUNK, VK_LONG_CALL,
       VK_LONG_REPLY, VK_KINDS };

struct vcall {
	int kind;
	uint32_t expect;  /* VK_LONG_CALL: the sum */
	atomic_int done, ok, status;
};

enum { V_DDP = 256u << 10, V_LONG = 16u << 10, V_REPLY = 64u << 10,
       V_SHORT = 100 };

static bool vcall_good(const struct vcall *k, const struct rpcrdma_reply *rep)
{
	if (rep->status != 0)
		return false;
	switch (k->kind) {
	case VK_SHORT:
		if (rep->len != V_SHORT)
			return false;
		for (size_t i = 0; i < V_SHORT; i++)
			if (rep->data[i] != pat(1, i))
				return false;
		return true;
	case VK_READ_CHUNK:
		return rep->len == 8 && rpcrdma_be32_get(rep->data) == 1 &&
		       rpcrdma_be32_get(rep->data + 4) == V_DDP;
	case VK_WRITE_CHUNK:
		if (rep->len != 4 || rep->nddp != 1 || rep->ddp_len[0] != V_DDP)
			return false;
		for (size_t i = 0; i < V_DDP; i++)
			if (rep->ddp[0][i] != pat(11, i))
				return false;
		return true;
	case VK_LONG_CALL:
		return rep->len == 8 && rpcrdma_be32_get(rep->data) == k->expect &&
		       rpcrdma_be32_get(rep->data + 4) == V_LONG;
	default:
		if (rep->len != V_REPLY)
			return false;
		for (size_t i = 0; i < V_REPLY; i++)
			if (rep->data[i] != pat(3, i))
				return false;
		return true;
	}
}

static void vcall_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct vcall *k = arg;
	if (vcall_good(k, rep))
		atomic_fetch_add(&k->ok, 1);
	atomic_store(&k->status, rep->status);
	rpcrdma_reply_free(rep);
	atomic_fetch_add(&k->done, 1);
}

/* Starts 2 * VK_KINDS calls of every shape at once and waits for them:
 * how many completed with the right bytes (each exactly once). */
static int version_batch(struct rpcrdma_clnt *c)
{
	enum { N = 2 * VK_KINDS };
	struct vcall k[N];
	uint8_t *data = malloc(V_DDP), hdr[N][8];
	uint32_t sum = 0;
	for (size_t i = 0; i < V_DDP; i++)
		data[i] = pat(7, i);
	for (size_t i = 0; i < V_LONG; i++)
		sum += data[i];
	uint8_t shortbuf[V_SHORT];
	for (size_t i = 0; i < V_SHORT; i++)
		shortbuf[i] = pat(1, i);
	size_t wmax = V_DDP;
	int started = 0;
	for (int i = 0; i < N; i++) {
		k[i].kind = i % VK_KINDS;
		k[i].expect = sum;
		atomic_init(&k[i].done, 0);
		atomic_init(&k[i].ok, 0);
		atomic_init(&k[i].status, 0);
		struct rpcrdma_iov v[2];
		struct rpcrdma_call call;
		memset(&call, 0, sizeof(call));
		switch (k[i].kind) {
		case VK_SHORT:
			v[0] = (struct rpcrdma_iov){shortbuf, V_SHORT, false};
			call = (struct rpcrdma_call){.proc = P_ECHO, .args = v,
						     .nargs = 1};
			break;
		case VK_READ_CHUNK:
			rpcrdma_be32_put(hdr[i], V_DDP);
			v[0] = (struct rpcrdma_iov){hdr[i], 4, false};
			v[1] = (struct rpcrdma_iov){data, V_DDP, true};
			call = (struct rpcrdma_call){.proc = P_CHECK, .args = v,
						     .nargs = 2};
			break;
		case VK_WRITE_CHUNK:
			rpcrdma_be32_put(hdr[i], V_DDP);
			rpcrdma_be32_put(hdr[i] + 4, 11);
			v[0] = (struct rpcrdma_iov){hdr[i], 8, false};
			call = (struct rpcrdma_call){.proc = P_READ, .args = v,
						     .nargs = 1,
						     .ddp_result_max = &wmax,
						     .nddp_results = 1};
			break;
		case VK_LONG_CALL:
			v[0] = (struct rpcrdma_iov){data, V_LONG, false};
			call = (struct rpcrdma_call){.proc = P_SUM, .args = v,
						     .nargs = 1};
			break;
		default:
			rpcrdma_be32_put(hdr[i], V_REPLY);
			v[0] = (struct rpcrdma_iov){hdr[i], 4, false};
			call = (struct rpcrdma_call){.proc = P_BIG, .args = v,
						     .nargs = 1,
						     .reply_max = V_REPLY};
			break;
		}
		if (rpcrdma_clnt_call_async(c, &call, vcall_cb, &k[i]) == 0)
			started++;
		else
			atomic_store(&k[i].done, 1); /* cb will not run */
	}
	CHECK_EQ(started, N);
	int ok = 0;
	for (int i = 0; i < N; i++) {
		for (int w = 0; w < 1000 && !atomic_load(&k[i].done); w++)
			usleep(10000);
		CHECK_EQ(atomic_load(&k[i].done), 1);
		if (atomic_load(&k[i].ok) != 1)
			fprintf(stderr, "versions: call %d (kind %d): %s\n", i,
				k[i].kind,
				rpcrdma_strerror(atomic_load(&k[i].status)));
		ok += atomic_load(&k[i].ok);
	}
	usleep(20000); /* a second completion would show up by now */
	for (int i = 0; i < N; i++)
		CHECK_EQ(atomic_load(&k[i].done), 1);
	free(data);
	return ok;
}

static struct rpcrdma_svc *version_server(unsigned versions,
					  uint32_t inline_recv)
{
	char listen[96];
	struct rpcrdma_opts o;
	listen_addr(listen, sizeof(listen));
	rpcrdma_opts_default(&o);
	o.versions = versions;
	if (inline_recv)
		o.inline_recv = inline_recv;
	struct rpcrdma_svc *s = start_server_opts(listen, &o);
	CHECK(s != NULL);
	return s;
}

static struct rpcrdma_clnt *version_client(struct rpcrdma_svc *s,
					   unsigned versions,
					   uint32_t inline_send)
{
	struct rpcrdma_opts o;
	struct rpcrdma_clnt *c = NULL;
	uint16_t keep = port;
	rpcrdma_opts_default(&o);
	o.versions = versions;
	if (inline_send)
		o.inline_send = inline_send;
	port = rpcrdma_svc_port(s);
	CHECK_EQ(open_client_opts(PROG, 1, &o, &c), 0);
	port = keep;
	return c;
}

static struct rpcrdma_stats svc_stats_of(struct rpcrdma_svc *s)
{
	struct rpcrdma_stats st;
	memset(&st, 0, sizeof(st));
	CHECK_EQ(rpcrdma_svc_stats(s, &st), 0);
	return st;
}

/* The shapes of the main suite once more, on client c of server s (their
 * server-side counter checks read srv). */
static void version_shapes(struct rpcrdma_clnt *c, struct rpcrdma_svc *s)
{
	struct rpcrdma_svc *keep = srv;
	srv = s;
	case_null(c);
	case_echo(c);
	case_ddp_arg(c);
	case_write_chunk(c);
	case_long_reply(c);
	case_long_call(c);
	srv = keep;
}

/*
 * Every pairing of versions, each with servers and clients of its own
 * (explicit opts, so RPCRDMA_VERSIONS does not change this case):
 *  a) PREFER_V2 client, V1_ONLY server: one ERR_VERS, the client goes on
 *     in v1 on the same connection and loses no call; a second client to
 *     the same address starts in v1 without asking again (§7.2);
 *  b) V1_ONLY client, PREFER_V2 server: v1 both sides, no ERR_VERS;
 *  c) V2_ONLY client, V1_ONLY server: the call fails with ERR_VERS, once;
 *  d) v2 both sides: CONNPROP each way (§5.3.4), the peer's Receive
 *     Buffer Size raises the inline threshold, callbacks work.
 * The servers live until the end, so no later server in this process can
 * inherit a port remembered as v1-only.
 */
static void case_versions(void)
{
	struct rpcrdma_svc *sv1 = version_server(RPCRDMA_V1_ONLY, 0);
	struct rpcrdma_svc *sv2 = version_server(RPCRDMA_PREFER_V2, 0);
	struct rpcrdma_svc *sbig = version_server(RPCRDMA_PREFER_V2, 8192);
	if (!sv1 || !sv2 || !sbig)
		goto out;

	/* a) */
	struct rpcrdma_clnt *c = version_client(sv1, RPCRDMA_PREFER_V2, 0);
	struct rpcrdma_stats a1, a2, sa;
	memset(&a1, 0, sizeof(a1));
	memset(&a2, 0, sizeof(a2));
	memset(&sa, 0, sizeof(sa));
	int a_ok = 0;
	uint32_t a_live_vers = 0;
	uint64_t a_live_err = 0;
	if (c) {
		a_ok = version_batch(c);
		CHECK_EQ(a_ok, 2 * VK_KINDS);
		/* A second connection while the first is still up (as an
		 * NFS client opens more): the fallback is already known,
		 * before anyone read the first one's counters. */
		struct rpcrdma_clnt *live = version_client(sv1,
							   RPCRDMA_PREFER_V2, 0);
		if (live) {
			case_null(live);
			struct rpcrdma_stats l = stats(live);
			CHECK_EQ(l.version, 1);
			CHECK_EQ(l.err_vers_recv, 0);
			CHECK_EQ(l.connprop_sent, 0);
			a_live_vers = l.version;
			a_live_err = l.err_vers_recv;
			rpcrdma_clnt_destroy(live);
		}
		a1 = stats(c);
		CHECK_EQ(a1.err_vers_recv, 1);
		CHECK_EQ(a1.vers_fallbacks, 1);
		CHECK_EQ(a1.version, 1);
		CHECK(a1.peer_v1_only);
		CHECK_EQ(a1.connprop_sent, 1); /* the opener, and only it */
		CHECK_EQ(a1.connprop_recv, 0);
		version_shapes(c, sv1);
		struct rpcrdma_stats a1b = stats(c);
		CHECK_EQ(a1b.err_vers_recv, 1);
		CHECK_EQ(a1b.calls_completed, a1b.calls);
		rpcrdma_clnt_destroy(c);
	}
	sa = svc_stats_of(sv1);
	CHECK_EQ(sa.err_vers_sent, 1);
	CHECK_EQ(sa.version, 1);
	CHECK_EQ(sa.connprop_sent, 0);
	c = version_client(sv1, RPCRDMA_PREFER_V2, 0);
	if (c) {
		a2 = stats(c); /* before any call: no negotiation to wait for */
		CHECK_EQ(a2.version, 1);
		case_null(c);
		a2 = stats(c);
		CHECK_EQ(a2.version, 1);
		CHECK_EQ(a2.err_vers_recv, 0);
		CHECK_EQ(a2.vers_fallbacks, 0);
		CHECK_EQ(a2.connprop_sent, 0);
		case_echo(c);
		rpcrdma_clnt_destroy(c);
	}
	CHECK_EQ(svc_stats_of(sv1).err_vers_sent, 1);

	/* b) */
	struct rpcrdma_stats b1, sb;
	memset(&b1, 0, sizeof(b1));
	memset(&sb, 0, sizeof(sb));
	int b_ok = 0;
	c = version_client(sv2, RPCRDMA_V1_ONLY, 0);
	if (c) {
		b_ok = version_batch(c);
		CHECK_EQ(b_ok, 2 * VK_KINDS);
		b1 = stats(c);
		CHECK_EQ(b1.version, 1);
		CHECK_EQ(b1.err_vers_recv, 0);
		CHECK_EQ(b1.vers_fallbacks, 0);
		CHECK_EQ(b1.connprop_sent, 0);
		CHECK_EQ(b1.connprop_recv, 0);
		sb = svc_stats_of(sv2);
		CHECK_EQ(sb.version, 1);
		CHECK_EQ(sb.err_vers_sent, 0);
		CHECK_EQ(sb.connprop_recv, 0);
		CHECK_EQ(sb.connprop_sent, 0);
		rpcrdma_clnt_destroy(c);
	}

	/* c) The opener goes out at connect time, so ERR_VERS can be back
	 * before the first call is made: the call then fails at once, with
	 * the same status.  Either way it fails once, with PEER_ERR_VERS;
	 * a later call on the same client fails at once, with it too. */
	int c_status = 0, c_cbs = 0, c_late = 0;
	c = version_client(sv1, RPCRDMA_V2_ONLY, 0);
	if (c) {
		struct vcall k = {.kind = VK_SHORT};
		atomic_init(&k.done, 0);
		atomic_init(&k.ok, 0);
		atomic_init(&k.status, 0);
		uint8_t buf[V_SHORT];
		for (size_t i = 0; i < V_SHORT; i++)
			buf[i] = pat(1, i);
		struct rpcrdma_iov iov = {buf, V_SHORT, false};
		struct rpcrdma_call call = {.proc = P_ECHO, .args = &iov,
					    .nargs = 1, .timeout_ms = 5000};
		int rc = rpcrdma_clnt_call_async(c, &call, vcall_cb, &k);
		if (rc) {
			CHECK_EQ(rc, RPCRDMA_ERR_PEER_ERR_VERS);
			atomic_store(&k.status, rc);
			atomic_store(&k.done, 1);
		}
		for (int w = 0; w < 1000 && !atomic_load(&k.done); w++)
			usleep(10000);
		usleep(20000);
		c_cbs = atomic_load(&k.done);
		c_status = atomic_load(&k.status);
		CHECK_EQ(c_cbs, 1);
		CHECK_EQ(c_status, RPCRDMA_ERR_PEER_ERR_VERS);
		c_late = rpcrdma_clnt_call_async(c, &call, vcall_cb, &k);
		CHECK_EQ(c_late, RPCRDMA_ERR_PEER_ERR_VERS);
		struct rpcrdma_stats c1 = stats(c);
		CHECK_EQ(c1.err_vers_recv, 1);
		CHECK_EQ(c1.vers_fallbacks, 0);
		rpcrdma_clnt_destroy(c);
		CHECK_EQ(atomic_load(&k.done), 1);
	}
	CHECK_EQ(svc_stats_of(sv1).err_vers_sent, 2);

	/* d) */
	struct rpcrdma_stats d0, d1, sd;
	memset(&d0, 0, sizeof(d0));
	memset(&d1, 0, sizeof(d1));
	memset(&sd, 0, sizeof(sd));
	int d_ok = 0;
	uint64_t d_short = 0, d_long = 0;
	c = version_client(sbig, RPCRDMA_PREFER_V2, 8192);
	if (c) {
		CHECK_EQ(rpcrdma_clnt_register(c, CB_PROG, 1, 1, h_cb_double,
					       NULL, 0), 0);
		d_ok = version_batch(c);
		CHECK_EQ(d_ok, 2 * VK_KINDS);
		d0 = stats(c);
		CHECK_EQ(d0.version, 2);
		CHECK_EQ(d0.err_vers_recv, 0);
		CHECK_EQ(d0.vers_fallbacks, 0);
		CHECK(!d0.peer_v1_only);
		CHECK_EQ(d0.connprop_sent, 1);
		CHECK_EQ(d0.connprop_recv, 1);
		CHECK_EQ(d0.peer_rbsiz, 8192);   /* the server's inline_recv */
		CHECK_EQ(d0.send_threshold, 8192);
		/* ~6 KiB without DDP: over v1's 4096 but under the
		 * threshold the server's CONNPROP allowed, so Short. */
		sum_call(c, 9, 6000);
		d1 = stats(c);
		d_short = d1.short_calls - d0.short_calls;
		d_long = d1.long_calls - d0.long_calls;
		CHECK_EQ(d_short, 1);
		CHECK_EQ(d_long, 0);
		/* The reverse direction in v2 (RFC 8167 over §4.2's BRS). */
		struct rpcrdma_svc *keep = srv;
		srv = sbig;
		case_reverse(c);
		srv = keep;
		d1 = stats(c);
		CHECK_EQ(d1.version, 2);
		CHECK_EQ(d1.connprop_sent, 1);
		CHECK_EQ(d1.connprop_recv, 1);
		sd = svc_stats_of(sbig);
		CHECK_EQ(sd.version, 2);
		CHECK_EQ(sd.connprop_sent, 1);
		CHECK_EQ(sd.connprop_recv, 1);
		CHECK_EQ(sd.peer_rbsiz, 4096);   /* the client's inline_recv */
		CHECK_EQ(sd.err_vers_sent, 0);
		rpcrdma_clnt_destroy(c);
	}
	printf("versions: a) v2->v1-only: version %u, ERR_VERS recv %llu, "
	       "fallbacks %llu, %d/%d batch calls ok, server ERR_VERS sent %llu; "
	       "concurrent client version %u, ERR_VERS recv %llu; "
	       "later client version %u, ERR_VERS recv %llu | b) v1->v2 server: "
	       "version %u/%u, %d/%d ok | c) v2-only->v1-only: %d completion(s), "
	       "%s | d) v2: version %u/%u, CONNPROP sent/recv %llu/%llu "
	       "(server %llu/%llu), peer rbsiz %u/%u, send threshold %u, "
	       "%d/%d ok, short +%llu long +%llu, callbacks served %llu\n",
	       a1.version, (unsigned long long)a1.err_vers_recv,
	       (unsigned long long)a1.vers_fallbacks, a_ok, 2 * VK_KINDS,
	       (unsigned long long)sa.err_vers_sent, a_live_vers,
	       (unsigned long long)a_live_err, a2.version,
	       (unsigned long long)a2.err_vers_recv, b1.version, sb.version,
	       b_ok, 2 * VK_KINDS, c_cbs, rpcrdma_strerror(c_status),
	       d1.version, sd.version, (unsigned long long)d1.connprop_sent,
	       (unsigned long long)d1.connprop_recv,
	       (unsigned long long)sd.connprop_sent,
	       (unsigned long long)sd.connprop_recv, d1.peer_rbsiz,
	       sd.peer_rbsiz, d1.send_threshold, d_ok, 2 * VK_KINDS,
	       (unsigned long long)d_short, (unsigned long long)d_long,
	       (unsigned long long)d1.calls_received);
out:
	if (sbig)
		rpcrdma_svc_destroy(sbig);
	if (sv2)
		rpcrdma_svc_destroy(sv2);
	if (sv1)
		rpcrdma_svc_destroy(sv1);
}

static void null_rate(struct rpcrdma_clnt *c)
{
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	int n = 0;
	double t0 = now_s();
	while (now_s() - t0 < 1.0) {
		int rc = rpcrdma_clnt_call(c, &call, &rep);
		rpcrdma_reply_free(&rep);
		if (rc != 0)
			break;
		n++;
	}
	printf("NULL calls (sync, 1 thread): %.0f calls/s\n",
	       n / (now_s() - t0));
	CHECK(n > 10);
}

static atomic_int rate_stop;

static void *rate_thread(void *arg)
{
	struct rpcrdma_clnt *c = arg;
	struct rpcrdma_call call = {.proc = 0};
	long n = 0;
	while (!atomic_load(&rate_stop)) {
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call(c, &call, &rep);
		rpcrdma_reply_free(&rep);
		if (rc)
			break;
		n++;
	}
	return (void *)n;
}

/* Rough numbers (ASan build): NULL calls from 8 threads, 1 MiB Write
 * chunk results. */
static void rates(struct rpcrdma_clnt *c)
{
	pthread_t t[8];
	atomic_store(&rate_stop, 0);
	double t0 = now_s();
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, rate_thread, c);
	usleep(1000000);
	atomic_store(&rate_stop, 1);
	long total = 0;
	for (int i = 0; i < 8; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("NULL calls (sync, 8 threads): %.0f calls/s\n",
	       total / (now_s() - t0));
	CHECK(total > 10);

	const uint32_t n = 1u << 20;
	uint8_t args[8];
	rpcrdma_be32_put(args, n);
	rpcrdma_be32_put(args + 4, 11);
	size_t max = n;
	struct rpcrdma_iov iov = {args, 8, false};
	struct rpcrdma_call call = {.proc = P_READ, .args = &iov, .nargs = 1,
				    .ddp_result_max = &max, .nddp_results = 1};
	int k = 0;
	t0 = now_s();
	while (now_s() - t0 < 1.0) {
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call(c, &call, &rep);
		bool good = rc == 0 && rep.ddp_len[0] == n;
		rpcrdma_reply_free(&rep);
		if (!good)
			break;
		k++;
	}
	printf("1 MiB Write-chunk results (sync, 1 thread): %.1f MiB/s\n",
	       k / (now_s() - t0));
	CHECK(k > 0);
}

#define RUN(name, ...)                                                      \
	do {                                                                \
		double _t = now_s();                                        \
		int _f = test_failed;                                       \
		__VA_ARGS__;                                                \
		printf("%-22s %s %.3f s\n", name,                           \
		       test_failed == _f ? "ok  " : "FAIL", now_s() - _t);  \
		fflush(stdout);                                             \
	} while (0)

static int run_all(void)
{
	char listen[96];
	listen_addr(listen, sizeof(listen));
	struct rpcrdma_svc *s = start_server(listen);
	CHECK(s != NULL);
	if (!s)
		TEST_MAIN_END();
	srv = s;
	port = rpcrdma_svc_port(s);
	CHECK(port != 0);
	struct rpcrdma_clnt *c = connect_client(PROG, 1);
	if (!c) {
		rpcrdma_svc_destroy(s);
		TEST_MAIN_END();
	}
	CHECK_EQ(rpcrdma_clnt_register(c, CB_PROG, 1, 1, h_cb_double, NULL, 0),
		 0);
	RUN("null", case_null(c));
	/* After the first reply the version is settled (0 only while the
	 * client's v2 opener is unanswered). */
	uint32_t want = expected_version();
	CHECK_EQ(stats(c).version, want);
	CHECK_EQ(svc_stats().version, want);
	printf("RPC-over-RDMA version %u (RPCRDMA_VERSIONS=%s)\n", want,
	       getenv("RPCRDMA_VERSIONS") ? getenv("RPCRDMA_VERSIONS")
					  : "unset");
	RUN("echo", case_echo(c));
	RUN("ddp_arg_1MiB", case_ddp_arg(c));
	RUN("write_chunk_1MiB", case_write_chunk(c));
	RUN("long_reply", case_long_reply(c));
	RUN("long_call", case_long_call(c));
	RUN("threshold_sweep", case_threshold_sweep(c));
	RUN("concurrent_64x8", case_concurrent(c));
	RUN("async_chain", case_async_chain(c));
	RUN("multi_connection_4", case_multi_conn());
	RUN("rpc_errors", case_errors(c));
	RUN("auth_sys", case_auth(c));
	RUN("reverse_direction", case_reverse(c));
	RUN("timeout", case_timeout(c));
	RUN("drive_race", case_drive_race(c));
	RUN("destroy_outstanding", case_destroy_outstanding());
	RUN("destroy_while_polling", case_destroy_while_polling());
	RUN("cancel_caller", case_cancel_caller());
	RUN("call_at_thread_exit", case_call_at_thread_exit());
	RUN("svc_destroy_midcall", case_svc_destroy_midcall());
	RUN("versions", case_versions());
	RUN("null_rate", null_rate(c));
	RUN("rates", rates(c));
	rpcrdma_clnt_destroy(c);
	srv = NULL;
	rpcrdma_svc_destroy(s);
	TEST_MAIN_END();
}

/* A server in a child process (so it can be SIGKILLed); sets port.
 * Returns the child's pid, or -1 (port 0) when it could not start. */
static pid_t fork_server(void)
{
	int pfd[2];
	char listen[96];
	listen_addr(listen, sizeof(listen));
	port = 0;
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		struct rpcrdma_svc *s = start_server(listen);
		uint16_t p = s ? rpcrdma_svc_port(s) : 0;
		ssize_t w = write(pfd[1], &p, sizeof(p));
		(void)w;
		for (;;)
			pause();
	}
	close(pfd[1]);
	uint16_t p = 0;
	ssize_t r = pid > 0 ? read(pfd[0], &p, sizeof(p)) : -1;
	close(pfd[0]);
	CHECK(r == sizeof(p) && p != 0);
	port = p;
	return pid;
}

/* The server lives in a child process that is SIGKILLed mid-call. */
static int run_kill(void)
{
	pid_t pid = fork_server();
	if (pid < 0)
		return 1;
	struct rpcrdma_clnt *c = port ? connect_client(PROG, 1) : NULL;
	if (c) {
		case_null(c);
		/* One sync call in flight and one async call. */
		uint8_t args[4];
		rpcrdma_be32_put(args, 20000);
		struct rpcrdma_iov iov = {args, 4, false};
		struct rpcrdma_call call = {.proc = P_SLEEP, .args = &iov,
					    .nargs = 1};
		CHECK_EQ(rpcrdma_clnt_call_async(c, &call, cancel_cb, NULL), 0);
		struct rpcrdma_reply rep;
		double t0 = now_s();
		pid_t killer = fork();
		if (killer == 0) {
			usleep(300000);
			kill(pid, SIGKILL);
			_exit(0);
		}
		int rc = rpcrdma_clnt_call(c, &call, &rep);
		double dt = now_s() - t0;
		printf("call after server kill: %s after %.3f s\n",
		       rpcrdma_strerror(rc), dt);
		CHECK_EQ(rc, RPCRDMA_ERR_DISCONNECTED);
		CHECK(dt < 10.0);
		usleep(100000);
		CHECK_EQ(atomic_load(&cancel_cbs), 1);
		CHECK_EQ(atomic_load(&cancel_status), RPCRDMA_ERR_DISCONNECTED);
		/* Later calls fail at once, the same way. */
		struct rpcrdma_call nc = {.proc = 0};
		CHECK_EQ(rpcrdma_clnt_call(c, &nc, &rep),
			 RPCRDMA_ERR_DISCONNECTED);
		rpcrdma_clnt_destroy(c);
		CHECK_EQ(atomic_load(&cancel_cbs), 1);
		waitpid(killer, NULL, 0);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	TEST_MAIN_END();
}

/* The server process dies at a different moment in each round while
 * chunked calls of every shape are in flight (Read chunk, Write chunk,
 * Reply chunk, Long Call): during RDMA Reads of arguments, in handlers,
 * during RDMA Writes of results, before or after the Send.  Every call
 * must complete exactly once, with its result or DISCONNECTED. */
struct chaos_call {
	atomic_int done;
	atomic_int *doubles, *completed, *succeeded;
	uint8_t args[8];
	uint8_t *big;
};

static void chaos_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct chaos_call *k = arg;
	if (atomic_fetch_add(&k->done, 1) != 0)
		atomic_fetch_add(k->doubles, 1);
	atomic_fetch_add(k->completed, 1);
	if (rep->status == 0)
		atomic_fetch_add(k->succeeded, 1);
	else if (rep->status != RPCRDMA_ERR_DISCONNECTED &&
		 rep->status != RPCRDMA_ERR_CANCELLED)
		printf("chaos: unexpected status %s\n", rpcrdma_strerror(rep->status));
	rpcrdma_reply_free(rep);
}

static int run_chaos(void)
{
	const uint32_t big = 256u << 10;
	uint8_t *data = malloc(big);
	for (uint32_t i = 0; i < big; i++)
		data[i] = pat(7, i);
	unsigned total = 0, ok_total = 0;
	for (int round = 0; round < 10; round++) {
		pid_t pid = fork_server();
		if (pid < 0)
			break;
		struct rpcrdma_clnt *c = port ? connect_client(PROG, 1) : NULL;
		if (!c) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			continue;
		}
		atomic_int doubles = 0, completed = 0, succeeded = 0;
		enum { N = 24 };
		struct chaos_call *k = calloc(N, sizeof(*k));
		pid_t killer = fork();
		if (killer == 0) {
			usleep((useconds_t)(1000 + round * 3000));
			kill(pid, SIGKILL);
			_exit(0);
		}
		unsigned started = 0;
		size_t wmax = big;
		for (int i = 0; i < N; i++) {
			k[i].doubles = &doubles;
			k[i].completed = &completed;
			k[i].succeeded = &succeeded;
			struct rpcrdma_iov v[2];
			struct rpcrdma_call call;
			memset(&call, 0, sizeof(call));
			switch (i % 4) {
			case 0: /* Read chunk */
				rpcrdma_be32_put(k[i].args, big);
				v[0] = (struct rpcrdma_iov){k[i].args, 4, false};
				v[1] = (struct rpcrdma_iov){data, big, true};
				call = (struct rpcrdma_call){.proc = P_CHECK, .args = v, .nargs = 2};
				break;
			case 1: /* Write chunk */
				rpcrdma_be32_put(k[i].args, big);
				rpcrdma_be32_put(k[i].args + 4, 11);
				v[0] = (struct rpcrdma_iov){k[i].args, 8, false};
				call = (struct rpcrdma_call){.proc = P_READ, .args = v, .nargs = 1,
							     .ddp_result_max = &wmax,
							     .nddp_results = 1};
				break;
			case 2: /* Reply chunk */
				rpcrdma_be32_put(k[i].args, 64u << 10);
				v[0] = (struct rpcrdma_iov){k[i].args, 4, false};
				call = (struct rpcrdma_call){.proc = P_BIG, .args = v, .nargs = 1,
							     .reply_max = 64u << 10};
				break;
			default: /* Long Call */
				v[0] = (struct rpcrdma_iov){data, 16u << 10, false};
				call = (struct rpcrdma_call){.proc = P_SUM, .args = v, .nargs = 1};
				break;
			}
			if (rpcrdma_clnt_call_async(c, &call, chaos_cb, &k[i]) == 0)
				started++;
		}
		/* Every started call completes (result or DISCONNECTED). */
		for (int w = 0; w < 1000 && (unsigned)atomic_load(&completed) < started; w++)
			usleep(10000);
		CHECK_EQ((unsigned)atomic_load(&completed), started);
		rpcrdma_clnt_destroy(c);
		CHECK_EQ((unsigned)atomic_load(&completed), started);
		CHECK_EQ(atomic_load(&doubles), 0);
		total += started;
		ok_total += (unsigned)atomic_load(&succeeded);
		printf("chaos round %d: server killed after %d ms: %u calls, %d completed "
		       "with results, %u with DISCONNECTED\n", round, 1 + round * 3,
		       started, atomic_load(&succeeded),
		       started - (unsigned)atomic_load(&succeeded));
		waitpid(killer, NULL, 0);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		free(k);
	}
	free(data);
	printf("chaos: %u calls, %u with results, every one completed exactly once\n",
	       total, ok_total);
	TEST_MAIN_END();
}

/* True when a TCP socket can bind the loopback address of this family
 * (some containers have no ::1). */
static bool loopback_usable(const char *host)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		return false;
	bool ok = bind(fd, (struct sockaddr *)&ss, len) == 0;
	close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		family = argv[1];
	snprintf(addr_host, sizeof(addr_host), "%s", family);
	if (!loopback_usable(addr_host)) {
		printf("skip: %s not usable here\n", addr_host);
		return 77;
	}
	if (argc > 2 && strcmp(argv[2], "kill") == 0)
		return run_kill();
	if (argc > 2 && strcmp(argv[2], "chaos") == 0)
		return run_chaos();
	return run_all();
}
