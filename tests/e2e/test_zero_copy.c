/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Data by reference, native API, over the iwarp provider on loopback (and
 * the verbs provider in the lab):
 *
 *  - lent arguments: a synchronous call reads its DDP-eligible argument
 *    where it is (a Read chunk, RFC 8166 §3.4.5); the caller scribbles
 *    over it and frees it the moment the call returns, and the server must
 *    have seen the bytes as they were (it checks them in its handler);
 *    ddp_copied_tx stays 0.  An asynchronous call with opts.borrow_args
 *    likewise until its callback; without it, the argument is copied
 *    (ddp_copied_tx counts it);
 *  - results into the caller's memory (rpcrdma_clnt_call_into / _async_
 *    into): every size from 0 to the largest, odd ones included (the
 *    Write chunk carries no XDR roundup, RFC 8166 §3.4.6.2), land in the
 *    caller's buffer and nowhere else (guard bytes on both sides stay);
 *    ddp_copied_rx stays 0 in the library (the provider's placement is
 *    counted too);
 *  - the library's registered buffers and the registration cache under
 *    pressure: more calls in flight than buffers kept, more distinct
 *    caller buffers than cache entries, and memory freed and allocated
 *    again at the same address with other contents between calls;
 *  - all of it again with RPCRDMA_READ_WINDOW=4096 (e2e_zero_copy_window):
 *    the server's Reads one at a time, in pieces.
 *
 * No timing is asserted anywhere.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "wire/xdr.h"
#include "pattern.h"
#include "test.h"

#define PROG 0x2000009au

enum {
	P_CHECK = 1, /* u32 len, u32 seed, opaque<> (DDP) -> u32 ok */
	P_READ = 2,  /* u32 len, u32 seed -> u32 len, opaque<> (DDP) */
};

#define GUARD 64
#define MAX_LEN (1u << 20)

static char addr_host[64];

/* On a device that pins pages (the verbs provider: rxe, siw), a lent
 * DDP-eligible argument up to 64 KiB is copied into the library's
 * registered buffers instead of registered per call (docs/DEVICES.md):
 * the bytes a size contributes to ddp_copied_tx when lent. */
static bool pinning(void)
{
	const char *p = getenv("RPCRDMA_PROVIDER");
	return p && !strcmp(p, "verbs");
}

static size_t lent_copy(size_t n)
{
	return n < 4096 || (pinning() && n <= 65536) ? n : 0;
}

/* ------------------------------------------------------------------ */
/* Server                                                               */

static enum rpcrdma_svc_stat h_check(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len < 8)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p), seed = rpcrdma_be32_get(p + 4);
	size_t pad = (4 - (n & 3)) & 3;
	uint32_t ok = len == 8 + (size_t)n + pad && same(p + 8, n, seed);
	for (size_t i = 0; ok && i < pad; i++)
		ok = p[8 + n + i] == 0;
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, ok);
	struct rpcrdma_iov iov = {out, 4, false};
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
	if (n > MAX_LEN)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4 + (size_t)n);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, n);
	fill(out + 4, n, seed);
	struct rpcrdma_iov iov[2] = {{out, 4, false}, {out + 4, n, true}};
	return rpcrdma_svc_req_reply(r, iov, 2) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static struct rpcrdma_svc *server(void)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	const char *sp = getenv("RPCRDMA_E2E_SERVER_PROVIDER");
	if (sp)
		o.provider = sp;
	char la[96];
	snprintf(la, sizeof(la), strchr(addr_host, ':') ? "[%s]:0" : "%s:0",
		 addr_host);
	struct rpcrdma_svc *s = NULL;
	int rc = rpcrdma_svc_create(la, &o, &s);
	CHECK_EQ(rc, 0);
	if (rc)
		return NULL;
	CHECK_EQ(rpcrdma_svc_register(s, PROG, 1, P_CHECK, h_check, NULL, 0), 0);
	CHECK_EQ(rpcrdma_svc_register(s, PROG, 1, P_READ, h_read, NULL,
				      RPCRDMA_ULB_DDP_RESULT), 0);
	return s;
}

static struct rpcrdma_clnt *client(struct rpcrdma_svc *s, bool borrow)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.borrow_args = borrow;
	o.credits = 64;
	char target[96];
	snprintf(target, sizeof(target),
		 strchr(addr_host, ':') ? "[%s]:%u" : "%s:%u", addr_host,
		 rpcrdma_svc_port(s));
	struct rpcrdma_clnt *c = NULL;
	int rc = rpcrdma_clnt_create(target, PROG, 1, &o, &c);
	CHECK_EQ(rc, 0);
	return rc ? NULL : c;
}

static struct rpcrdma_stats stats(struct rpcrdma_clnt *c)
{
	struct rpcrdma_stats st;
	memset(&st, 0, sizeof(st));
	CHECK_EQ(rpcrdma_clnt_stats(c, &st), 0);
	return st;
}

/* ------------------------------------------------------------------ */
/* Lent arguments                                                       */

static const size_t sizes[] = {0,    1,     3,     4,     5,      1023,
			       1024, 4095,  4096,  4097,  65535,  65536,
			       65539, 262147, 1000003, MAX_LEN};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* A synchronous CHECK of n bytes from a fresh buffer, scribbled over
 * and freed as soon as the call returns. */
static void check_sync(struct rpcrdma_clnt *c, size_t n, uint32_t seed)
{
	uint8_t hdr[8];
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return;
	fill(buf, n, seed);
	rpcrdma_be32_put(hdr, (uint32_t)n);
	rpcrdma_be32_put(hdr + 4, seed);
	struct rpcrdma_iov a[2] = {{hdr, 8, false}, {buf, n, true}};
	struct rpcrdma_call call = {.proc = P_CHECK, .args = a, .nargs = 2,
				    .reply_max = 64};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(c, &call, &rep);
	/* The call is over: the memory is ours again. */
	memset(buf, 0xA5, n);
	free(buf);
	CHECK_EQ(rc, 0);
	CHECK(rc == 0 && rep.len == 4 && rpcrdma_be32_get(rep.data) == 1);
	rpcrdma_reply_free(&rep);
}

static void test_sync_args(struct rpcrdma_svc *s)
{
	struct rpcrdma_clnt *c = client(s, false);
	if (!c)
		return;
	uint64_t small = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		/* Those that fit inline go in a Short call: copied into its
		 * Send, and counted (RFC 8166 §3.5.1); on a pinning device
		 * those up to 64 KiB are copied into registered memory. */
		if (lent_copy(sizes[i])) {
			check_sync(c, sizes[i], (uint32_t)i + 1);
			small += sizes[i];
		}
	}
	struct rpcrdma_stats s0 = stats(c);
	CHECK(s0.ddp_copied_tx <= small);
	for (size_t i = 0; i < NSIZES; i++)
		if (!lent_copy(sizes[i]))
			check_sync(c, sizes[i], (uint32_t)i + 1);
	struct rpcrdma_stats s1 = stats(c);
	/* The others went as Read chunks straight from the caller's
	 * buffer: nothing copied. */
	CHECK_EQ(s1.ddp_copied_tx - s0.ddp_copied_tx, 0);
	CHECK(s1.chunked_calls > s0.chunked_calls);
	rpcrdma_clnt_destroy(c);
}

/* Asynchronous CHECKs, several in flight, each from its own buffer that
 * the callback scribbles over and frees. */
struct async_arg {
	uint8_t *buf;
	size_t n;
	uint8_t hdr[8];
	atomic_int *left;
	atomic_int *bad;
};

static void async_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct async_arg *a = arg;
	if (rep->status || rep->len != 4 || rpcrdma_be32_get(rep->data) != 1)
		atomic_fetch_add(a->bad, 1);
	rpcrdma_reply_free(rep);
	memset(a->buf, 0x5A, a->n);
	free(a->buf);
	atomic_fetch_sub(a->left, 1);
	free(a);
}

static void async_args(struct rpcrdma_svc *s, bool borrow, uint64_t *copied,
		       uint64_t *bytes)
{
	struct rpcrdma_clnt *c = client(s, borrow);
	if (!c)
		return;
	atomic_int left = 0, bad = 0;
	struct rpcrdma_stats s0 = stats(c);
	*bytes = 0;
	for (int round = 0; round < 4; round++)
		for (size_t i = 0; i < NSIZES; i++) {
			struct async_arg *a = calloc(1, sizeof(*a));
			size_t n = sizes[i];
			uint8_t *buf = malloc(n ? n : 1);
			if (!a || !buf) {
				free(a);
				free(buf);
				continue;
			}
			fill(buf, n, (uint32_t)(round * 100 + i));
			rpcrdma_be32_put(a->hdr, (uint32_t)n);
			rpcrdma_be32_put(a->hdr + 4, (uint32_t)(round * 100 + i));
			a->buf = buf;
			a->n = n;
			a->left = &left;
			a->bad = &bad;
			struct rpcrdma_iov v[2] = {{a->hdr, 8, false},
						   {buf, n, true}};
			struct rpcrdma_call call = {.proc = P_CHECK, .args = v,
						    .nargs = 2,
						    .reply_max = 64};
			atomic_fetch_add(&left, 1);
			int rc = rpcrdma_clnt_call_async(c, &call, async_cb, a);
			CHECK_EQ(rc, 0);
			if (rc) {
				atomic_fetch_sub(&left, 1);
				free(buf);
				free(a);
				continue;
			}
			*bytes += n;
			/* Without borrow_args the pieces were copied: the
			 * caller may reuse its description (not the buffer:
			 * the callback frees that). */
			memset(v, 0, sizeof(v));
		}
	for (int i = 0; i < 30000 && atomic_load(&left); i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&left), 0);
	CHECK_EQ(atomic_load(&bad), 0);
	struct rpcrdma_stats s1 = stats(c);
	*copied = s1.ddp_copied_tx - s0.ddp_copied_tx;
	rpcrdma_clnt_destroy(c);
}

static void test_async_args(struct rpcrdma_svc *s)
{
	uint64_t copied = 0, bytes = 0;
	async_args(s, true, &copied, &bytes);
	/* Lent: no byte copied by the call itself (DDP pieces small enough
	 * for a Short call are copied into its Send, and counted: the sizes
	 * below the inline threshold). */
	uint64_t small = 0;
	for (size_t i = 0; i < NSIZES; i++)
		small += lent_copy(sizes[i]) * 4;
	CHECK(copied <= small);
	async_args(s, false, &copied, &bytes);
	/* Copied when the call starts: every DDP byte at least once. */
	CHECK(copied >= bytes);
}

/* ------------------------------------------------------------------ */
/* Results into the caller's memory                                     */

static void read_into(struct rpcrdma_clnt *c, size_t n, size_t cap,
		      uint32_t seed)
{
	uint8_t *mem = malloc(cap + 2 * GUARD);
	if (!mem)
		return;
	memset(mem, 0xEE, cap + 2 * GUARD);
	uint8_t args[8];
	rpcrdma_be32_put(args, (uint32_t)n);
	rpcrdma_be32_put(args + 4, seed);
	struct rpcrdma_iov a = {args, 8, false};
	struct rpcrdma_iov res = {mem + GUARD, cap, true};
	struct rpcrdma_call call = {.proc = P_READ, .args = &a, .nargs = 1,
				    .reply_max = 64};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call_into(c, &call, &res, 1, &rep);
	CHECK_EQ(rc, 0);
	if (rc == 0) {
		CHECK_EQ(rep.nddp, 1);
		CHECK(rep.ddp[0] == mem + GUARD);
		/* An empty result may come inline (no bytes in the chunk). */
		if (n) {
			CHECK_EQ(rep.ddp_len[0], n);
			CHECK(same(mem + GUARD, n, seed));
		}
		CHECK(rep.len >= 4 && rpcrdma_be32_get(rep.data) == n);
		bool guard = true;
		for (size_t i = 0; i < GUARD; i++)
			guard = guard && mem[i] == 0xEE &&
				mem[GUARD + cap + i] == 0xEE;
		/* Beyond the result, inside the buffer: untouched too. */
		for (size_t i = n; i < cap && i < n + GUARD; i++)
			guard = guard && mem[GUARD + i] == 0xEE;
		CHECK(guard);
	}
	rpcrdma_reply_free(&rep);
	free(mem);
}

static void test_results_into(struct rpcrdma_svc *s)
{
	struct rpcrdma_clnt *c = client(s, false);
	if (!c)
		return;
	struct rpcrdma_stats s0 = stats(c);
	uint64_t bytes = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		read_into(c, sizes[i], sizes[i] ? sizes[i] : 4, (uint32_t)i + 9);
		/* A buffer larger than the result. */
		read_into(c, sizes[i], sizes[i] + 4096, (uint32_t)i + 99);
		bytes += 2 * sizes[i];
	}
	struct rpcrdma_stats s1 = stats(c);
	/* Placed where the caller wants it: no copy by the library; the
	 * provider copies only small FPDUs (under 8 KiB) and at most 16 KiB
	 * of the first FPDU of a large message (rpcrdma.h). */
	uint64_t placed = s1.ddp_copied_placed - s0.ddp_copied_placed;
	CHECK_EQ(s1.ddp_copied_rx - s0.ddp_copied_rx - placed, 0);
	uint64_t small_bytes = 0;
	for (size_t i = 0; i < NSIZES; i++)
		small_bytes += 2 * (sizes[i] < 8192 ? sizes[i] : 16384);
	CHECK(placed <= small_bytes);
	printf("zero_copy: results into caller buffers: the provider copied "
	       "%llu bytes placing them (small FPDUs)\n",
	       (unsigned long long)placed);
	(void)bytes;
	/* A result larger than the buffer lent: the server cannot deliver
	 * it (RFC 8166 §4.5.3, ERR_CHUNK / RDMA2_ERR_WRITE_RESOURCE) and the
	 * bytes past the buffer are never written. */
	uint8_t *mem = malloc(4096 + 2 * GUARD);
	if (mem) {
		memset(mem, 0xEE, 4096 + 2 * GUARD);
		uint8_t args[8];
		rpcrdma_be32_put(args, 8192);
		rpcrdma_be32_put(args + 4, 5);
		struct rpcrdma_iov a = {args, 8, false};
		struct rpcrdma_iov res = {mem + GUARD, 4096, true};
		struct rpcrdma_call call = {.proc = P_READ, .args = &a,
					    .nargs = 1, .reply_max = 64};
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call_into(c, &call, &res, 1, &rep);
		CHECK(rc < 0);
		bool guard = true;
		for (size_t i = 0; i < GUARD; i++)
			guard = guard && mem[i] == 0xEE &&
				mem[GUARD + 4096 + i] == 0xEE;
		CHECK(guard);
		rpcrdma_reply_free(&rep);
		free(mem);
	}
	/* Bad descriptions are refused before anything is sent. */
	struct rpcrdma_reply rep;
	struct rpcrdma_call call = {.proc = P_READ};
	CHECK_EQ(rpcrdma_clnt_call_into(c, &call, NULL, 1, &rep),
		 RPCRDMA_ERR_INVAL);
	rpcrdma_clnt_destroy(c);
}

/* ------------------------------------------------------------------ */
/* Pressure                                                             */

struct into_arg {
	uint8_t *mem;
	size_t n;
	uint32_t seed;
	uint8_t args[8];
	atomic_int *left, *bad;
};

static void into_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct into_arg *a = arg;
	if (rep->status || rep->nddp != 1 || rep->ddp[0] != a->mem ||
	    rep->ddp_len[0] != a->n || !same(a->mem, a->n, a->seed))
		atomic_fetch_add(a->bad, 1);
	rpcrdma_reply_free(rep);
	free(a->mem);
	atomic_fetch_sub(a->left, 1);
	free(a);
}

/* Native calls whose results land in the library's registered buffers
 * (more in flight than it keeps idle), and calls into caller buffers at
 * ever new addresses (more than the registration cache holds), mixed. */
static void test_pressure(struct rpcrdma_svc *s)
{
	struct rpcrdma_clnt *c = client(s, true);
	if (!c)
		return;
	atomic_int left = 0, bad = 0;
	for (int i = 0; i < 200; i++) {
		struct into_arg *a = calloc(1, sizeof(*a));
		size_t n = (i % 3 == 0) ? MAX_LEN : (size_t)4096 * (1 + i % 17);
		uint8_t *m = malloc(n);
		if (!a || !m) {
			free(a);
			free(m);
			continue;
		}
		a->mem = m;
		a->n = n;
		a->seed = (uint32_t)i;
		a->left = &left;
		a->bad = &bad;
		rpcrdma_be32_put(a->args, (uint32_t)n);
		rpcrdma_be32_put(a->args + 4, (uint32_t)i);
		struct rpcrdma_iov av = {a->args, 8, false};
		struct rpcrdma_iov res = {m, n, true};
		struct rpcrdma_call call = {.proc = P_READ, .args = &av,
					    .nargs = 1, .reply_max = 64};
		atomic_fetch_add(&left, 1);
		int rc = rpcrdma_clnt_call_async_into(c, &call, &res, 1,
						      into_cb, a);
		CHECK_EQ(rc, 0);
		if (rc) {
			atomic_fetch_sub(&left, 1);
			free(m);
			free(a);
		}
		/* Results in the library's buffers, 48 MiB in flight at
		 * times: beyond what the pool keeps idle. */
		if (i % 4 == 0) {
			uint8_t args[8];
			rpcrdma_be32_put(args, MAX_LEN);
			rpcrdma_be32_put(args + 4, 77);
			struct rpcrdma_iov av2 = {args, 8, false};
			size_t max = MAX_LEN;
			struct rpcrdma_call c2 = {.proc = P_READ, .args = &av2,
						  .nargs = 1, .reply_max = 64,
						  .ddp_result_max = &max,
						  .nddp_results = 1};
			struct rpcrdma_reply rep;
			int r2 = rpcrdma_clnt_call(c, &c2, &rep);
			CHECK(r2 == 0 && rep.nddp == 1 &&
			      rep.ddp_len[0] == MAX_LEN &&
			      same(rep.ddp[0], MAX_LEN, 77));
			rpcrdma_reply_free(&rep);
		}
	}
	for (int i = 0; i < 60000 && atomic_load(&left); i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&left), 0);
	CHECK_EQ(atomic_load(&bad), 0);
	rpcrdma_clnt_destroy(c);
}

/* The same address over and over with other contents (malloc hands a
 * freed block back): what a registration cache must never get wrong. */
static void test_same_address(struct rpcrdma_svc *s)
{
	struct rpcrdma_clnt *c = client(s, false);
	if (!c)
		return;
	/* mmap, use, munmap, then map new pages at the very same address
	 * (MAP_FIXED_NOREPLACE): the pages behind the address change, as
	 * when malloc gives back an address it unmapped. */
	const size_t span = 65536 + 4096;
	void *first = mmap(NULL, span, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(first != MAP_FAILED);
	if (first == MAP_FAILED) {
		rpcrdma_clnt_destroy(c);
		return;
	}
	int same_addr = 0;
	for (uint32_t i = 0; i < 64; i++) {
		size_t n = 65536 + 8 * (i % 5);
		uint8_t *b = first;
		if (i) {
			b = mmap(first, span, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS |
					 MAP_FIXED_NOREPLACE, -1, 0);
			if (b == MAP_FAILED)
				break;
			if ((void *)b == first)
				same_addr++;
		}
		/* Argument from it, result into it, contents differ each
		 * time. */
		check_sync(c, 100 + i, i); /* another allocation between */
		uint8_t hdr[8];
		fill(b, n, 500 + i);
		rpcrdma_be32_put(hdr, (uint32_t)n);
		rpcrdma_be32_put(hdr + 4, 500 + i);
		struct rpcrdma_iov a[2] = {{hdr, 8, false}, {b, n, true}};
		struct rpcrdma_call call = {.proc = P_CHECK, .args = a,
					    .nargs = 2, .reply_max = 64};
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call(c, &call, &rep);
		CHECK(rc == 0 && rep.len == 4 && rpcrdma_be32_get(rep.data) == 1);
		rpcrdma_reply_free(&rep);
		memset(b, 0, n);
		uint8_t ra[8];
		rpcrdma_be32_put(ra, (uint32_t)n);
		rpcrdma_be32_put(ra + 4, 900 + i);
		struct rpcrdma_iov av = {ra, 8, false};
		struct rpcrdma_iov res = {b, n, true};
		struct rpcrdma_call rc_ = {.proc = P_READ, .args = &av,
					   .nargs = 1, .reply_max = 64};
		rc = rpcrdma_clnt_call_into(c, &rc_, &res, 1, &rep);
		CHECK(rc == 0 && rep.ddp_len[0] == n && same(b, n, 900 + i));
		rpcrdma_reply_free(&rep);
		munmap(b, span);
	}
	CHECK_EQ(same_addr, 63);
	rpcrdma_clnt_destroy(c);
}

int main(int argc, char **argv)
{
	snprintf(addr_host, sizeof(addr_host), "%s",
		 argc > 1 ? argv[1] : "127.0.0.1");
	struct rpcrdma_svc *s = server();
	if (!s)
		TEST_MAIN_END();
	test_sync_args(s);
	test_async_args(s);
	test_results_into(s);
	test_pressure(s);
	test_same_address(s);
	/* e2e_zero_copy_window: the server pulled every Read chunk above
	 * through a 4 KiB read_window, one RDMA Read in flight at a time in
	 * pieces of at most 128 KiB (RFC 8166 §3.3.1), with several calls
	 * in flight waiting for it; every byte still arrived as it was sent
	 * (the P_CHECK handler), and the window did hold Reads back. */
	if (getenv("RPCRDMA_READ_WINDOW")) {
		struct rpcrdma_stats st;
		CHECK_EQ(rpcrdma_svc_stats(s, &st), 0);
		CHECK(st.read_window_stalls > 0);
		printf("read_window_stalls %llu, ord_stalls %llu\n",
		       (unsigned long long)st.read_window_stalls,
		       (unsigned long long)st.ord_stalls);
	}
	rpcrdma_svc_destroy(s);
	TEST_MAIN_END();
}
