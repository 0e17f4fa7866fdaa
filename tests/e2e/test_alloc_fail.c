/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Failing allocations, end to end (docs/CONFORMANCE.md, the
 * failing-allocation row).  The library's malloc, calloc, realloc, strdup,
 * posix_memalign and mmap are wrapped at link time (-Wl,--wrap=..., see
 * CMakeLists.txt): references from our own objects go through the
 * wrappers, libc's own allocations do not.  Each round builds a server and
 * a client over the iwarp provider on loopback and runs one call of every
 * shape (Short, Long Call, Read chunk, Write chunk, Long Reply) plus a
 * reverse-direction call (RFC 8167), while the Nth allocation made by the
 * library, on any of its threads, fails:
 *   single   only the Nth allocation fails, for N = 1, 2, ... until a
 *            round runs with no failure left to inject;
 *   from     every allocation from the Nth on fails (memory stays short),
 *            for a stride of N.
 * What must hold in every round:
 *   - each API call returns 0 or a clear error (a listed code);
 *   - each call started completes exactly once; a success carries exactly
 *     the right bytes; a failure is a clear error, never corrupt data;
 *   - nothing hangs (every call has a time-out, destroy returns);
 *   - nothing leaks (LeakSanitizer, at exit, in the ASan build) and
 *     nothing touches freed memory (AddressSanitizer).
 * The numbers printed say how many rounds injected a failure and which
 * outcomes the calls had.  Debugging: ALLOC_FAIL_TRACE=1 prints a
 * backtrace of each injected failure and each round's outcomes;
 * ALLOC_FAIL_ONLY=N runs one round with the Nth allocation failing;
 * ALLOC_FAIL_WORKERS=N gives the server a pool of N handler threads
 * (default 0: handlers run inline).
 */
#include <execinfo.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "provider/iwarp/iwarp.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"
#include "wire/xdr.h"

/* ------------------------------------------------------------------ */
/* The allocation wrappers                                              */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);

static atomic_bool armed;
static atomic_bool sticky;        /* fail every allocation from fail_at */
static atomic_ulong seen;         /* allocations counted while armed */
static atomic_ulong fail_at;      /* 0: none */
static atomic_ulong injected;     /* failures injected this round */

static bool fail_now(void)
{
	if (!atomic_load(&armed))
		return false;
	unsigned long k = atomic_fetch_add(&seen, 1) + 1;
	unsigned long at = atomic_load(&fail_at);
	if (!at || k < at || (k > at && !atomic_load(&sticky)))
		return false;
	atomic_fetch_add(&injected, 1);
	if (getenv("ALLOC_FAIL_TRACE")) {
		void *bt[16];
		int nbt = backtrace(bt, 16);
		fprintf(stderr, "-- allocation %lu fails:\n", k);
		backtrace_symbols_fd(bt, nbt, 2);
	}
	return true;
}

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n);
void *__wrap_calloc(size_t k, size_t n)
{
	return fail_now() ? NULL : __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	/* realloc(p, 0) frees: never fail that. */
	return n && fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	return fail_now() ? 12 /* ENOMEM */ : __real_posix_memalign(p, align, n);
}

/* The registered buffers (rpc/buf_pool.c) are mmap'd. */
void *__wrap_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
	return fail_now() ? MAP_FAILED : __real_mmap(a, n, prot, flags, fd, off);
}

/* ------------------------------------------------------------------ */
/* The workload                                                         */

#define PROG 0x20000099u
#define VERS 1u
#define CB_PROG 0x40000099u
#define P_ECHO 1u
#define P_READ 2u     /* results: a DDP-eligible opaque (Write chunk) */
#define P_CALLBACK 3u /* the server calls the client back (RFC 8167) */

#define LONG_LEN 12000u   /* over the 4 KiB threshold: Long Call/Reply */
#define DDP_LEN 65536u

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 151u + i * 13u + (i >> 9));
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static enum rpcrdma_svc_stat h_echo(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const void *args = rpcrdma_svc_req_args(r, &len);
	struct rpcrdma_iov iov = {(void *)(uintptr_t)args, len, false};
	return rpcrdma_svc_req_reply(r, &iov, 1) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_read(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 8)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p), seed = rpcrdma_be32_get(p + 4);
	if (n > DDP_LEN)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4 + n);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, n);
	for (uint32_t i = 0; i < n; i++)
		out[4 + i] = pat(seed, i);
	struct rpcrdma_iov iov[2] = {{out, 4, false}, {out + 4, n, true}};
	return rpcrdma_svc_req_reply(r, iov, 2) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static atomic_int cb_ran;

/* Results: one XDR unsigned int. */
static enum rpcrdma_svc_stat reply_u32(struct rpcrdma_svc_req *r, uint32_t v)
{
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, v);
	struct rpcrdma_iov res = {out, 4, false};
	return rpcrdma_svc_req_reply(r, &res, 1) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

/* Calls the client's callback program: v -> v + 1; answers v + 1, or 0
 * when the callback failed (cleanly). */
static enum rpcrdma_svc_stat h_callback(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t answer = 0;
	struct rpcrdma_clnt *cb;
	if (rpcrdma_svc_req_clnt(r, CB_PROG, 1, &cb) == 0) {
		struct rpcrdma_iov iov = {(void *)(uintptr_t)p, 4, false};
		struct rpcrdma_call call = {.proc = 1, .args = &iov,
					    .nargs = 1, .timeout_ms = 3000};
		struct rpcrdma_reply rep;
		if (rpcrdma_clnt_call(cb, &call, &rep) == 0 && rep.len == 4)
			answer = rpcrdma_be32_get(rep.data);
		rpcrdma_reply_free(&rep);
		rpcrdma_clnt_destroy(cb);
	}
	return reply_u32(r, answer);
}

static enum rpcrdma_svc_stat h_cb_inc(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	atomic_fetch_add(&cb_ran, 1);
	return reply_u32(r, rpcrdma_be32_get(p) + 1);
}

enum shape { S_SHORT, S_LONG, S_DDP_ARG, S_WRITE_CHUNK, S_CALLBACK,
	     S_INTO, S_N };
static const char *const shape_name[S_N] = {
	"short", "long call+reply", "read chunk", "write chunk", "reverse",
	"write chunk into the caller's buffer"};

struct pending {
	enum shape shape;
	atomic_int done;
	atomic_int status;
	atomic_int bad;   /* success with wrong bytes */
};

/* The caller's buffer S_INTO's result is placed in (lent to the call). */
static const uint8_t *into_buf;

static bool reply_right(enum shape s, const struct rpcrdma_reply *rep)
{
	switch (s) {
	case S_SHORT:
		if (rep->len != 100)
			return false;
		for (size_t i = 0; i < 100; i++)
			if (rep->data[i] != pat(1, i))
				return false;
		return true;
	case S_LONG:
		if (rep->len != LONG_LEN)
			return false;
		for (size_t i = 0; i < LONG_LEN; i++)
			if (rep->data[i] != pat(2, i))
				return false;
		return true;
	case S_DDP_ARG:
		/* The echo of a 4-byte length and the DDP item, which comes
		 * back in the reply stream (a Long Reply). */
		if (rep->len != 4 + DDP_LEN ||
		    rpcrdma_be32_get(rep->data) != DDP_LEN)
			return false;
		for (size_t i = 0; i < DDP_LEN; i++)
			if (rep->data[4 + i] != pat(3, i))
				return false;
		return true;
	case S_WRITE_CHUNK:
		if (rep->len < 4 || rpcrdma_be32_get(rep->data) != DDP_LEN ||
		    rep->nddp != 1 || rep->ddp_len[0] != DDP_LEN)
			return false;
		for (size_t i = 0; i < DDP_LEN; i++)
			if (rep->ddp[0][i] != pat(4, i))
				return false;
		return true;
	case S_INTO:
		if (rep->len < 4 || rpcrdma_be32_get(rep->data) != DDP_LEN ||
		    rep->nddp != 1 || rep->ddp_len[0] != DDP_LEN ||
		    rep->ddp[0] != into_buf)
			return false;
		for (size_t i = 0; i < DDP_LEN; i++)
			if (rep->ddp[0][i] != pat(5, i))
				return false;
		return true;
	case S_CALLBACK:
		/* 0: the reverse call failed cleanly inside the handler. */
		return rep->len == 4 && (rpcrdma_be32_get(rep->data) == 42 ||
					 rpcrdma_be32_get(rep->data) == 0);
	default:
		return false;
	}
}

static void call_done(void *arg, struct rpcrdma_reply *rep)
{
	struct pending *p = arg;
	if (rep->status == 0 && !reply_right(p->shape, rep))
		atomic_store(&p->bad, 1);
	atomic_store(&p->status, rep->status);
	rpcrdma_reply_free(rep);
	atomic_fetch_add(&p->done, 1);
}

/* Outcomes an allocation failure may lead to: the error itself, or the
 * connection it made the library close, or the call's time-out. */
static bool clear_error(int rc)
{
	switch (rc) {
	case RPCRDMA_ERR_NOMEM:
	case RPCRDMA_ERR_SYSTEM:
	case RPCRDMA_ERR_TIMEOUT:
	case RPCRDMA_ERR_CONNREFUSED:
	case RPCRDMA_ERR_DISCONNECTED:
	case RPCRDMA_ERR_FLUSHED:
	case RPCRDMA_ERR_CANCELLED:
	case RPCRDMA_ERR_PEER_ERR_SYSTEM:
	case RPCRDMA_ERR_RPC_SYSTEM_ERR:
		return true;
	default:
		return false;
	}
}

static struct {
	unsigned rounds, injected_rounds, svc_failed, clnt_failed;
	unsigned start_failed, ok[S_N], err[S_N], timeouts, cb_ran;
	unsigned single_timeouts;
	double slowest;
	unsigned long slowest_at;
	bool slowest_from;
	int unclear[8];
	unsigned nunclear;
} tally;

static unsigned long cur_at;
/* Single failures must never reach it; with memory short for good, it is
 * how calls end, so keep it short. */
static unsigned call_timeout_ms = 3000;
static bool cur_from;

static void note_unclear_at(int rc, const char *what)
{
	if (tally.nunclear < 8)
		tally.unclear[tally.nunclear] = rc;
	tally.nunclear++;
	fprintf(stderr, "unclear: %s -> %d (%s), %s N=%lu\n", what, rc,
		rpcrdma_strerror(rc), cur_from ? "from" : "single", cur_at);
}
#define note_unclear(rc) note_unclear_at((rc), __func__)

static void start_call(struct rpcrdma_clnt *c, struct pending *p,
		       enum shape s, uint8_t *buf)
{
	memset(p, 0, sizeof *p);
	p->shape = s;
	struct rpcrdma_iov iov[2];
	size_t max = 0;
	struct rpcrdma_call call = {.args = iov, .nargs = 1,
				    .timeout_ms = call_timeout_ms};
	switch (s) {
	case S_SHORT:
		for (size_t i = 0; i < 100; i++)
			buf[i] = pat(1, i);
		iov[0] = (struct rpcrdma_iov){buf, 100, false};
		call.proc = P_ECHO;
		call.reply_max = 128;
		break;
	case S_LONG:
		for (size_t i = 0; i < LONG_LEN; i++)
			buf[i] = pat(2, i);
		iov[0] = (struct rpcrdma_iov){buf, LONG_LEN, false};
		call.proc = P_ECHO;
		call.reply_max = LONG_LEN;
		break;
	case S_DDP_ARG:
		rpcrdma_be32_put(buf, DDP_LEN);
		for (size_t i = 0; i < DDP_LEN; i++)
			buf[4 + i] = pat(3, i);
		iov[0] = (struct rpcrdma_iov){buf, 4, false};
		iov[1] = (struct rpcrdma_iov){buf + 4, DDP_LEN, true};
		call.nargs = 2;
		call.proc = P_ECHO;
		call.reply_max = 4 + DDP_LEN;
		break;
	case S_WRITE_CHUNK:
		rpcrdma_be32_put(buf, DDP_LEN);
		rpcrdma_be32_put(buf + 4, 4);
		iov[0] = (struct rpcrdma_iov){buf, 8, false};
		call.proc = P_READ;
		call.reply_max = 64;
		max = DDP_LEN;
		call.ddp_result_max = &max;
		call.nddp_results = 1;
		break;
	case S_INTO:
		/* Its arguments first, its result after them in buf. */
		rpcrdma_be32_put(buf, DDP_LEN);
		rpcrdma_be32_put(buf + 4, 5);
		iov[0] = (struct rpcrdma_iov){buf, 8, false};
		call.proc = P_READ;
		call.reply_max = 64;
		into_buf = buf + 8;
		break;
	default:
		rpcrdma_be32_put(buf, 41);
		iov[0] = (struct rpcrdma_iov){buf, 4, false};
		call.proc = P_CALLBACK;
		call.reply_max = 64;
		break;
	}
	struct rpcrdma_iov into = {buf + 8, DDP_LEN, true};
	int rc = s == S_INTO ? rpcrdma_clnt_call_async_into(c, &call, &into, 1,
							    call_done, p)
			     : rpcrdma_clnt_call_async(c, &call, call_done, p);
	if (rc) {
		tally.start_failed++;
		if (!clear_error(rc))
			note_unclear(rc);
		atomic_store(&p->status, rc);
		atomic_store(&p->done, 1); /* cb will not run: count it here */
	}
}

/* One round; returns whether a failure was injected. */
static bool round_run(const char *host, unsigned long at, bool from,
		      uint8_t *bufs[S_N])
{
	struct pending p[S_N];
	atomic_store(&seen, 0);
	atomic_store(&injected, 0);
	atomic_store(&fail_at, at);
	atomic_store(&sticky, from);
	double t0 = now_s();
	atomic_store(&armed, true);
	cur_at = at;
	cur_from = from;
	call_timeout_ms = from ? 1000 : 3000;
	tally.rounds++;

	char addr[128];
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:0" : "%s:0",
		 host);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	/* Handlers run where the call is taken (the default: the loop,
	 * or a caller driving the connection), or on a pool of
	 * ALLOC_FAIL_WORKERS threads (e2e_alloc_fail_pool). */
	const char *nw = getenv("ALLOC_FAIL_WORKERS");
	o.workers = nw ? (unsigned)strtoul(nw, NULL, 0) : 0;
	/* Two poll groups whatever the CPU count, so that connections are
	 * served by a second group's thread in every round too (a group's
	 * set-up allocates nothing of its own through malloc: the loops
	 * are one array, made with the server). */
	o.threads = 2;
	o.connect_timeout_ms = 3000;
	struct rpcrdma_svc *s = NULL;
	int rc = rpcrdma_svc_create(addr, &o, &s);
	if (rc) {
		CHECK(s == NULL);
		if (!clear_error(rc))
			note_unclear(rc);
		tally.svc_failed++;
		goto out;
	}
	int r1 = rpcrdma_svc_register(s, PROG, VERS, P_ECHO, h_echo, NULL, 0);
	int r2 = rpcrdma_svc_register(s, PROG, VERS, P_READ, h_read, NULL,
				      RPCRDMA_ULB_DDP_RESULT);
	int r3 = rpcrdma_svc_register(s, PROG, VERS, P_CALLBACK, h_callback,
				      NULL, 0);
	if (r1 || r2 || r3) {
		CHECK((!r1 || r1 == RPCRDMA_ERR_NOMEM) &&
		      (!r2 || r2 == RPCRDMA_ERR_NOMEM) &&
		      (!r3 || r3 == RPCRDMA_ERR_NOMEM));
		tally.svc_failed++;
		rpcrdma_svc_destroy(s);
		goto out;
	}
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%u" : "%s:%u",
		 host, rpcrdma_svc_port(s));
	struct rpcrdma_clnt *c = NULL;
	/* Every other round the asynchronous calls lend their arguments
	 * (borrow_args): given up under a failure, they are delivered only
	 * once nothing can reach them. */
	o.borrow_args = at % 2 == 1;
	rc = rpcrdma_clnt_create(addr, PROG, VERS, &o, &c);
	if (rc) {
		CHECK(c == NULL);
		if (!clear_error(rc))
			note_unclear(rc);
		tally.clnt_failed++;
		if (getenv("ALLOC_FAIL_TRACE"))
			fprintf(stderr, "clnt_create: %d, %s N=%lu\n", rc,
				from ? "from" : "single", at);
		rpcrdma_svc_destroy(s);
		goto out;
	}
	rc = rpcrdma_clnt_register(c, CB_PROG, 1, 1, h_cb_inc, NULL, 0);
	if (rc && rc != RPCRDMA_ERR_NOMEM)
		note_unclear(rc);
	for (int k = 0; k < S_N; k++)
		start_call(c, &p[k], (enum shape)k, bufs[k]);
	/* Every call has a time-out; give them all that and more. */
	for (int w = 0; w < 600; w++) {
		int all = 1;
		for (int k = 0; k < S_N; k++)
			all &= atomic_load(&p[k].done) > 0;
		if (all)
			break;
		nap_ms(10);
	}
	double t1 = now_s();
	/* Each call ended on its own (result, error or time-out), not by
	 * destroy's CANCELLED. */
	for (int k = 0; k < S_N; k++) {
		CHECK_EQ(atomic_load(&p[k].done), 1);
		if (!atomic_load(&p[k].done))
			fprintf(stderr, "%s call still open, %s N=%lu\n",
				shape_name[k], from ? "from" : "single", at);
	}
	rpcrdma_clnt_destroy(c);
	double t2 = now_s();
	rpcrdma_svc_destroy(s);
	if (getenv("ALLOC_FAIL_TRACE") && now_s() - t0 > 1.0)
		fprintf(stderr, "slow round %s N=%lu: calls %.2f s, clnt_destroy "
			"%.2f s, svc_destroy %.2f s\n", from ? "from" : "single",
			at, t1 - t0, t2 - t1, now_s() - t2);
	for (int k = 0; k < S_N; k++) {
		/* Exactly once, even counting what destroy cancelled. */
		CHECK_EQ(atomic_load(&p[k].done), 1);
		CHECK_EQ(atomic_load(&p[k].bad), 0);
		int st = atomic_load(&p[k].status);
		if (getenv("ALLOC_FAIL_TRACE"))
			fprintf(stderr, "%s: %d\n", shape_name[k], st);
		if (st == 0) {
			tally.ok[k]++;
		} else {
			tally.err[k]++;
			tally.timeouts += st == RPCRDMA_ERR_TIMEOUT;
			tally.single_timeouts += st == RPCRDMA_ERR_TIMEOUT &&
						 !from;
			if (st == RPCRDMA_ERR_TIMEOUT && getenv("ALLOC_FAIL_TRACE"))
				fprintf(stderr, "time-out: %s, %s N=%lu\n",
					shape_name[k], from ? "from" : "single",
					at);
			if (!clear_error(st))
				note_unclear(st);
		}
	}
out:
	atomic_store(&armed, false);
	if (now_s() - t0 > tally.slowest) {
		tally.slowest = now_s() - t0;
		tally.slowest_at = at;
		tally.slowest_from = from;
	}
	bool hit = atomic_load(&injected) > 0;
	tally.injected_rounds += hit;
	return hit;
}

#ifdef ALLOC_FAIL_TIRPC
/* ------------------------------------------------------------------ */
/* The libtirpc client adapter (rpcgen programs), against our server    */

#include "rpcrdma/tirpc.h"

struct blob {
	char *data;
	u_int len;
};

static bool_t xdr_blob(XDR *x, void *p)
{
	struct blob *b = p;
	return xdr_bytes(x, &b->data, &b->len, ~0u);
}

struct read_args {
	u_int n, seed;
};

static bool_t xdr_read_args(XDR *x, void *p)
{
	struct read_args *a = p;
	return xdr_u_int(x, &a->n) && xdr_u_int(x, &a->seed);
}

static struct {
	unsigned rounds, create_failed, ok, failed, bad;
	unsigned stat[32];
} tt;

/* One round: clnt_rdma_create, then a Short echo, a 12000-byte and a
 * 64 KiB echo (Read chunks by the ULB) and a 64 KiB Write-chunk result,
 * with clnt_call; each returns RPC_SUCCESS with the right bytes or an
 * error status.  Returns whether a failure was injected. */
static bool tirpc_round(const char *addr, unsigned long at)
{
	atomic_store(&seen, 0);
	atomic_store(&injected, 0);
	atomic_store(&fail_at, at);
	atomic_store(&sticky, false);
	atomic_store(&armed, true);
	cur_at = at;
	cur_from = false;
	tt.rounds++;
	CLIENT *c = clnt_rdma_create(addr, PROG, VERS, NULL);
	if (!c) {
		tt.create_failed++;
		goto out;
	}
	static const struct rpcrdma_ulb_proc ulb[] = {
		{.proc = P_ECHO, .ddp_arg = true, .reply_max = 4 + DDP_LEN + 64},
		{.proc = P_READ, .ddp_result_max = DDP_LEN},
	};
	if (!clnt_rdma_set_ulb(c, ulb, 2))
		tt.failed++; /* out of memory: the calls go without DDP */
	struct timeval tmo = {3, 0};
	static const u_int sizes[] = {100, LONG_LEN, DDP_LEN};
	static char data[DDP_LEN];
	for (size_t i = 0; i < DDP_LEN; i++)
		data[i] = (char)pat(5, i);
	static char lent[DDP_LEN];
	for (unsigned k = 0; k < 5; k++) {
		struct blob res = {NULL, 0};
		enum clnt_stat st;
		u_int want = k < 3 ? sizes[k] : DDP_LEN;
		if (k == 4) {
			/* The result straight into a lent buffer. */
			res.data = lent;
			if (!clnt_rdma_result_buffer(c, lent, sizeof lent))
				tt.failed++;
		}
		if (k < 3) {
			struct blob arg = {data, sizes[k]};
			st = clnt_call(c, P_ECHO, (xdrproc_t)xdr_blob, (char *)&arg,
				       (xdrproc_t)xdr_blob,
				       (char *)&res, tmo);
		} else {
			struct read_args a = {DDP_LEN, 6};
			st = clnt_call(c, P_READ, (xdrproc_t)xdr_read_args,
				       (char *)&a,
				       (xdrproc_t)xdr_blob, (char *)&res, tmo);
		}
		tt.stat[(unsigned)st < 32 ? (unsigned)st : 31]++;
		if (st == RPC_SUCCESS) {
			bool right = res.len == want;
			for (u_int i = 0; right && i < want; i++)
				right = (uint8_t)res.data[i] ==
					(k < 3 ? pat(5, i) : pat(6, i));
			right = right && (k != 4 || res.data == lent);
			tt.ok++;
			tt.bad += !right;
			if (!right)
				fprintf(stderr, "tirpc: wrong bytes, call %u N=%lu\n",
					k, at);
		} else {
			tt.failed++;
		}
		if (k != 4) /* the lent buffer is ours, not rpcgen's */
			clnt_freeres(c, (xdrproc_t)xdr_blob, (char *)&res);
	}
	clnt_destroy(c);
out:
	atomic_store(&armed, false);
	return atomic_load(&injected) > 0;
}

/* The sweep over the tirpc round, against one server made unarmed. */
static void tirpc_sweep(const char *host, unsigned long max_n)
{
	char addr[128];
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:0" : "%s:0", host);
	struct rpcrdma_svc *s = NULL;
	CHECK_EQ(rpcrdma_svc_create(addr, NULL, &s), 0);
	if (!s)
		return;
	CHECK_EQ(rpcrdma_svc_register(s, PROG, VERS, P_ECHO, h_echo, NULL, 0), 0);
	CHECK_EQ(rpcrdma_svc_register(s, PROG, VERS, P_READ, h_read, NULL,
				      RPCRDMA_ULB_DDP_RESULT), 0);
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%u" : "%s:%u",
		 host, rpcrdma_svc_port(s));
	CHECK(!tirpc_round(addr, 0));
	CHECK_EQ(tt.ok, 5); /* the workload runs without failures */
	unsigned long per_round = atomic_load(&seen), n, misses = 0;
	for (n = 1; n <= max_n && misses < 3; n++)
		misses = tirpc_round(addr, n) ? 0 : misses + 1;
	rpcrdma_svc_destroy(s);
	printf("tirpc client: %lu allocations a round, %u rounds, create "
	       "failed %u, calls ok %u, failed %u (", per_round, tt.rounds,
	       tt.create_failed, tt.ok, tt.failed);
	for (unsigned i = 0; i < 32; i++)
		if (tt.stat[i] && i != RPC_SUCCESS)
			printf(" %s: %u", clnt_sperrno((enum clnt_stat)i), tt.stat[i]);
	printf(" )\n");
	CHECK(n <= max_n);
	CHECK_EQ(tt.bad, 0);
	/* A call that fails does so as a transport or system error, never
	 * as a decoding one that would hide corrupt data. */
	CHECK_EQ(tt.stat[RPC_CANTDECODERES], 0);
	CHECK_EQ(tt.stat[RPC_CANTDECODEARGS], 0);
	CHECK_EQ(tt.stat[RPC_TIMEDOUT], 0);
}
#endif

/* The soft-iWARP CQ grows when full (verbs would make an overrun a CQ
 * error); when it cannot grow, the completion is lost, and poll_cq must
 * say so (RPCRDMA_ERR_OVERFLOW) once drained, or its consumer would wait
 * for that completion for ever.  A CQ of one entry holds the IW_CQ_NEAR
 * of its record without allocating; the next one needs a larger ring. */
static void cq_overflow_case(void)
{
	const struct rpcrdma_provider_ops *ops = rpcrdma_provider_find("iwarp");
	struct rpcrdma_dev *dev = NULL;
	struct rpcrdma_cq *cq = NULL;
	CHECK(ops != NULL);
	if (!ops || ops->open(NULL, &dev) || ops->create_cq(dev, 1, NULL, &cq)) {
		CHECK(0);
		return;
	}
	struct rpcrdma_wc wc = {.wr_id = 0}, out[IW_CQ_NEAR + 4];
	for (unsigned i = 1; i <= IW_CQ_NEAR; i++) {
		wc.wr_id = i;
		rpcrdma_iwarp_cq_push((struct iw_cq *)cq, &wc);
	}
	atomic_store(&seen, 0);
	atomic_store(&fail_at, 1);
	atomic_store(&sticky, false);
	atomic_store(&armed, true);
	wc.wr_id = IW_CQ_NEAR + 1;
	rpcrdma_iwarp_cq_push((struct iw_cq *)cq, &wc); /* cannot grow */
	atomic_store(&armed, false);
	CHECK_EQ(atomic_load(&injected), 1);
	/* Those that fitted, in order; then the loss is reported. */
	CHECK_EQ(ops->poll_cq(cq, IW_CQ_NEAR + 4, out), IW_CQ_NEAR);
	for (unsigned i = 0; i < IW_CQ_NEAR; i++)
		CHECK_EQ(out[i].wr_id, (uint64_t)i + 1);
	CHECK_EQ(ops->poll_cq(cq, 4, out), RPCRDMA_ERR_OVERFLOW);
	CHECK_EQ(ops->destroy_cq(cq), 0);
	ops->close(dev);
}

/* Completions past the record's own go on to the ring of cqe entries
 * (no allocation: it was made with the CQ), past that to a larger one,
 * and come back in order each time; the record's own serve again once
 * the CQ is empty. */
static void cq_rings_case(void)
{
	const struct rpcrdma_provider_ops *ops = rpcrdma_provider_find("iwarp");
	struct rpcrdma_dev *dev = NULL;
	struct rpcrdma_cq *cq = NULL;
	CHECK(ops != NULL);
	if (!ops || ops->open(NULL, &dev) ||
	    ops->create_cq(dev, 3 * IW_CQ_NEAR, NULL, &cq)) {
		CHECK(0);
		return;
	}
	struct iw_cq *c = (struct iw_cq *)cq;
	struct rpcrdma_wc wc = {.wr_id = 0}, out[8 * IW_CQ_NEAR];
	for (unsigned round = 0; round < 2; round++) {
		/* 2 x NEAR fit the cqe ring; 5 x NEAR need a larger one. */
		unsigned n = round ? 5 * IW_CQ_NEAR : 2 * IW_CQ_NEAR;
		for (unsigned i = 0; i < n; i++) {
			wc.wr_id = 100 * round + i;
			rpcrdma_iwarp_cq_push(c, &wc);
			if (i == IW_CQ_NEAR - 1)
				CHECK(c->ring == c->near);
		}
		CHECK(c->ring == c->far);
		CHECK(c->far_cap >= n);
		int got = 0, k;
		while ((k = ops->poll_cq(cq, 3, out + got)) > 0)
			got += k;
		CHECK_EQ(got, (int)n);
		for (int i = 0; i < got; i++)
			CHECK_EQ(out[i].wr_id, (uint64_t)(100 * round + (unsigned)i));
		CHECK(c->ring == c->near);
	}
	CHECK_EQ(ops->destroy_cq(cq), 0);
	ops->close(dev);
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	unsigned long max_n = argc > 2 ? strtoul(argv[2], NULL, 0) : 4000;
	cq_overflow_case();
	cq_rings_case();
	uint8_t *bufs[S_N];
	for (int k = 0; k < S_N; k++)
		bufs[k] = malloc(8 + DDP_LEN);

	/* A round with no failure first: the workload itself must pass,
	 * and it tells how many allocations a round makes. */
	bool hit = round_run(host, 0, false, bufs);
	CHECK(!hit);
	unsigned long per_round = atomic_load(&seen);
	for (int k = 0; k < S_N; k++)
		CHECK_EQ(tally.ok[k], 1);
	if (tally.ok[S_SHORT] != 1) {
		printf("SKIP: the workload does not run here\n");
		return 77;
	}
	printf("allocations in a round without failures: %lu\n", per_round);
	CHECK(per_round > 0); /* the wrappers are in the link */

	if (getenv("ALLOC_FAIL_ONLY")) {
		/* Debugging: one round, the Nth allocation failing. */
		round_run(host, strtoul(getenv("ALLOC_FAIL_ONLY"), NULL, 0),
			  false, bufs);
		for (int k = 0; k < S_N; k++)
			free(bufs[k]);
		TEST_MAIN_END();
	}
	/* single: the Nth allocation fails, N = 1, 2, ... */
	unsigned long n;
	unsigned long misses = 0;
	for (n = 1; n <= max_n; n++) {
		if (!round_run(host, n, false, bufs)) {
			/* The round made fewer than N allocations: done,
			 * once a few in a row agree (threads vary). */
			if (++misses == 3)
				break;
		} else {
			misses = 0;
		}
	}
	unsigned single_rounds = tally.rounds - 1;
	/* from: memory stays short from the Nth allocation on. */
	unsigned long stride = per_round / 40 ? per_round / 40 : 1;
	for (unsigned long m = 1; m <= per_round + stride; m += stride)
		round_run(host, m, true, bufs);

	printf("rounds: %u (single: %u up to N=%lu, from: %u); with a failure "
	       "injected: %u\n", tally.rounds, single_rounds, n,
	       tally.rounds - 1 - single_rounds, tally.injected_rounds);
	printf("server failed to start: %u, client failed to connect: %u, "
	       "calls refused at start: %u, time-outs: %u\n",
	       tally.svc_failed, tally.clnt_failed, tally.start_failed,
	       tally.timeouts);
	for (int k = 0; k < S_N; k++)
		printf("  %-16s ok %4u  failed clearly %4u\n", shape_name[k],
		       tally.ok[k], tally.err[k]);
#ifdef ALLOC_FAIL_TIRPC
	tirpc_sweep(host, max_n);
#endif
	printf("slowest round: %.2f s (%s N=%lu)\n", tally.slowest,
	       tally.slowest_from ? "from" : "single", tally.slowest_at);
	/* One failed allocation loses no message: each call ends with its
	 * result or an error at once, never by its time-out (a registration
	 * that was short is tried again on the next tick, a call with no
	 * memory for its request is answered SYSTEM_ERR).  With memory short
	 * for good, a time-out is the clear error left. */
	CHECK_EQ(tally.single_timeouts, 0);
	for (unsigned i = 0; i < tally.nunclear && i < 8; i++)
		printf("unclear outcome: %d (%s)\n", tally.unclear[i],
		       rpcrdma_strerror(tally.unclear[i]));
	CHECK_EQ(tally.nunclear, 0);
	/* The sweep reached past the last allocation of a round. */
	CHECK(n <= max_n);
	CHECK(tally.injected_rounds > 0);
	for (int k = 0; k < S_N; k++)
		free(bufs[k]);
	TEST_MAIN_END();
}
