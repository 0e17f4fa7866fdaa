/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Data by reference through the libtirpc adapters: an rpcgen program
 * (ddp.x) with an Upper-Layer Binding, clnt_rdma_create / svc_rdma_create
 * + svc_run().
 *
 *   test_ddp HOST        (127.0.0.1; in the lab 192.0.2.1, verbs)
 *
 * Checks, at every size from 0 to 1 MiB, odd ones included (a DDP item
 * travels without its XDR roundup, RFC 8166 §3.4.5.2 / §3.4.6.2):
 *  - DDP_READ's result decoded into a buffer the caller gave the results
 *    structure and lent with clnt_rdma_result_buffer: the bytes are right,
 *    nothing outside it was written, and the client copied no byte
 *    (ddp_copied_rx); into rpcgen's own allocation instead: right too,
 *    and copied exactly once;
 *  - the server's results are scribbled over the moment svc_sendreply
 *    returns (in the freeresult function, before the dispatch function
 *    returns) and the client still gets the bytes as they were: the
 *    reply went from the results, by RDMA Write, before svc_sendreply
 *    returned;
 *  - DDP_WRITE's argument is scribbled over and freed the moment the call
 *    returns, and the server saw it intact; the client copied nothing
 *    (ddp_copied_tx), the server decoded it once (its ddp_copied_rx).
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "ddp.h"
#include "pattern.h"
#include "test.h"

#define MAXSZ (1u << 20)
#define GUARD 64

static u_int sum(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* ---------------------------------------------------------------------
 * The server: an ordinary rpcgen program
 */
bool_t ddp_read_1_svc(ddp_read_args *a, ddp_data *r, struct svc_req *rq)
{
	(void)rq;
	r->ddp_data_len = a->size;
	r->ddp_data_val = malloc(a->size ? a->size : 1);
	if (!r->ddp_data_val)
		return FALSE;
	fill((uint8_t *)r->ddp_data_val, a->size, a->seed);
	return TRUE;
}

bool_t ddp_write_1_svc(ddp_data *a, ddp_write_res *r, struct svc_req *rq)
{
	(void)rq;
	r->size = a->ddp_data_len;
	r->sum = sum((const uint8_t *)a->ddp_data_val, a->ddp_data_len);
	return TRUE;
}

/* rpcgen -M's dispatch calls this right after svc_sendreply: scribble
 * over the results before freeing them.  Had the reply still been
 * reading them, the client would see it. */
int ddp_prog_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	if (xdr_result == (xdrproc_t)xdr_ddp_data) {
		ddp_data *d = (ddp_data *)result;
		if (d->ddp_data_val)
			memset(d->ddp_data_val, 0xFF, d->ddp_data_len);
	}
	xdr_free(xdr_result, result);
	return 1;
}

void ddp_prog_1(struct svc_req *rqstp, SVCXPRT *transp); /* rpcgen's */

static void *serve(void *arg)
{
	(void)arg;
	svc_run();
	return NULL;
}

/* ---------------------------------------------------------------------
 * The client
 */
static CLIENT *C;
static SVCXPRT *X;

static struct rpcrdma_stats cstats(void)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	CHECK(clnt_rdma_stats(C, &s));
	return s;
}

static struct rpcrdma_stats sstats(void)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	CHECK(svc_rdma_stats(X, &s));
	return s;
}

static const u_int sizes[] = {0,    1,     3,     4,     5,     1023,
			      1024, 1025,  4095,  4096,  4097,  65535,
			      65536, 65537, 262147, 999999, MAXSZ};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* DDP_READ of n bytes into a lent buffer of cap bytes. */
static void read_lent(u_int n, size_t cap, uint32_t seed)
{
	uint8_t *mem = malloc(cap + 2 * GUARD);
	if (!mem)
		return;
	memset(mem, 0xEE, cap + 2 * GUARD);
	ddp_read_args a = {n, seed};
	ddp_data r = {0, (char *)mem + GUARD};
	CHECK(clnt_rdma_result_buffer(C, mem + GUARD, cap));
	enum clnt_stat st = ddp_read_1(&a, &r, C);
	if (st != RPC_SUCCESS)
		clnt_perror(C, "DDP_READ (lent buffer)");
	CHECK_EQ(st, RPC_SUCCESS);
	CHECK_EQ(r.ddp_data_len, n);
	CHECK(r.ddp_data_val == (char *)mem + GUARD);
	CHECK(st == RPC_SUCCESS && same(mem + GUARD, n, seed));
	bool guard = true;
	for (size_t i = 0; i < GUARD; i++)
		guard = guard && mem[i] == 0xEE && mem[GUARD + cap + i] == 0xEE;
	for (size_t i = n; i < cap && i < (size_t)n + GUARD; i++)
		guard = guard && mem[GUARD + i] == 0xEE;
	CHECK(guard);
	free(mem);
}

/* DDP_READ of n bytes into rpcgen's allocation. */
static void read_alloc(u_int n, uint32_t seed)
{
	ddp_read_args a = {n, seed};
	ddp_data r = {0, NULL};
	enum clnt_stat st = ddp_read_1(&a, &r, C);
	if (st != RPC_SUCCESS)
		clnt_perror(C, "DDP_READ");
	CHECK_EQ(st, RPC_SUCCESS);
	CHECK_EQ(r.ddp_data_len, n);
	CHECK(st == RPC_SUCCESS && same((uint8_t *)r.ddp_data_val, n, seed));
	clnt_freeres(C, (xdrproc_t)xdr_ddp_data, (caddr_t)&r);
}

/* DDP_WRITE of n bytes from a buffer scribbled over and freed at once. */
static void write_lent(u_int n, uint32_t seed)
{
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return;
	fill(b, n, seed);
	u_int want = sum(b, n);
	ddp_data a = {n, (char *)b};
	ddp_write_res r = {0, 0};
	enum clnt_stat st = ddp_write_1(&a, &r, C);
	memset(b, 0x11, n);
	free(b);
	if (st != RPC_SUCCESS)
		clnt_perror(C, "DDP_WRITE");
	CHECK_EQ(st, RPC_SUCCESS);
	CHECK_EQ(r.size, n);
	CHECK_EQ(r.sum, want);
}

/* Several threads at once on the one CLIENT, each with its own lent
 * buffer: every thread's lending is its own.  (The checks of the
 * harness are not thread-safe: the threads count, main checks.) */
static atomic_int reader_bad;

static void *reader(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	for (int i = 0; i < 20; i++) {
		u_int n = 65536 + (u_int)(k * 4 + (u_int)i % 4);
		uint32_t seed = (uint32_t)(k * 1000 + (uintptr_t)i);
		uint8_t *mem = malloc(65536 + 64);
		if (!mem)
			continue;
		ddp_read_args a = {n, seed};
		ddp_data r = {0, (char *)mem};
		if (!clnt_rdma_result_buffer(C, mem, 65536 + 64) ||
		    ddp_read_1(&a, &r, C) != RPC_SUCCESS ||
		    r.ddp_data_len != n || r.ddp_data_val != (char *)mem ||
		    !same(mem, n, seed))
			atomic_fetch_add(&reader_bad, 1);
		free(mem);
	}
	return NULL;
}

/* Thread cancellation: a thread making DDP_READs of 1 MiB in a loop on a
 * CLIENT of its own, without busy polling, is cancelled (pthread_cancel)
 * while it is inside one, most likely asleep on the CQ.  rpcrdma's entries are not cancellation points (rpc/
 * rpc_internal.h): the call in progress completes with its whole result,
 * and the thread is cancelled at its own pthread_testcancel() after it.
 * Before, the cancelled thread left the connection with a driver that no
 * longer existed: every later call timed out, and clnt_destroy() never
 * returned. */
static atomic_int cancel_calls, cancel_bad;
static CLIENT *Cc;

/* One call, in a frame of its own: the cancellation unwinds only the
 * thread's function, which has no locals in memory (ASan poisons a
 * frame's redzones and does not clean them up on a forced unwind). */
static __attribute__((noinline)) void cancel_read_one(uint32_t i)
{
	ddp_read_args a = {1u << 20, 7000 + i};
	ddp_data r = {0, NULL};
	enum clnt_stat st = ddp_read_1(&a, &r, Cc);
	if (st != RPC_SUCCESS || r.ddp_data_len != a.size ||
	    !same((uint8_t *)r.ddp_data_val, a.size, a.seed))
		atomic_fetch_add(&cancel_bad, 1);
	clnt_freeres(Cc, (xdrproc_t)xdr_ddp_data, (caddr_t)&r);
	atomic_fetch_add(&cancel_calls, 1);
}

static void *cancelled_reader(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < 100000; i++) {
		cancel_read_one(i);
		pthread_testcancel();
	}
	return NULL;
}

static void cancel_caller(const char *addr)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_init(&o, sizeof(o));
	o.busy_poll_us = -1; /* the caller sleeps in poll(2) on its CQ */
	Cc = clnt_rdma_create(addr, DDP_PROG, DDP_V1, &o);
	CHECK(Cc != NULL);
	if (!Cc)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, cancelled_reader, NULL) != 0)
		return;
	while (atomic_load(&cancel_calls) < 3)
		usleep(1000);
	usleep(2000);
	CHECK_EQ(pthread_cancel(t), 0);
	void *ret = NULL;
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&cancel_bad), 0);
	/* The connection goes on, and its CLIENT is destroyed. */
	int before = atomic_load(&cancel_calls);
	for (uint32_t i = 0; i < 3; i++)
		cancel_read_one(100 + i);
	CHECK_EQ(atomic_load(&cancel_calls), before + 3);
	CHECK_EQ(atomic_load(&cancel_bad), 0);
	clnt_destroy(Cc);
	Cc = NULL;
	printf("test_ddp: cancelled a caller after %d calls; its CLIENT went "
	       "on\n", before);
}

/* Small calls beside a greedy client: GREEDY threads on C keep 1 MiB
 * DDP_READs going, while another connection makes NULL calls.  svc_run()
 * serves every connection on one thread and waits for each large reply
 * to go out (rpcrdma_rpc_req_reply_sync): the small calls must still
 * come up in turn (rpc/tirpc/svc_rdma.c, take_own), not wait for the
 * greedy client to stop.  Before, the greedy client's next call, let
 * through while its reply was waited for, was always taken first, and
 * the other connection's calls stayed in its socket (8-87 in 2 s beside
 * such a client, `rpcrdma-perf load --fairness --greedy-mix r1m`). */
#define GREEDY 16
#define SMALL 20
static atomic_bool greedy_stop;
static atomic_int greedy_calls, greedy_bad;

static void *greedy(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	while (!atomic_load(&greedy_stop)) {
		ddp_read_args a = {MAXSZ, (u_int)k};
		ddp_data r = {0, NULL};
		if (ddp_read_1(&a, &r, C) != RPC_SUCCESS ||
		    r.ddp_data_len != MAXSZ)
			atomic_fetch_add(&greedy_bad, 1);
		clnt_freeres(C, (xdrproc_t)xdr_ddp_data, (caddr_t)&r);
		atomic_fetch_add(&greedy_calls, 1);
	}
	return NULL;
}

static void small_beside_greedy(const char *addr)
{
	CLIENT *c2 = clnt_rdma_create(addr, DDP_PROG, DDP_V1, NULL);
	CHECK(c2 != NULL);
	if (!c2)
		return;
	/* Long enough for any fair turn, far short of "until the greedy
	 * client stops" (never, here, without the small calls). */
	struct timeval tmo = {10, 0};
	clnt_control(c2, CLSET_TIMEOUT, (char *)&tmo);
	pthread_t th[GREEDY];
	for (uintptr_t k = 0; k < GREEDY; k++)
		pthread_create(&th[k], NULL, greedy, (void *)k);
	/* In full swing first. */
	while (atomic_load(&greedy_calls) < GREEDY &&
	       !atomic_load(&greedy_bad))
		usleep(1000);
	int before = atomic_load(&greedy_calls), ok = 0;
	for (int i = 0; i < SMALL; i++) {
		enum clnt_stat st = clnt_call(c2, NULLPROC, (xdrproc_t)xdr_void,
					      NULL, (xdrproc_t)xdr_void, NULL,
					      tmo);
		if (st != RPC_SUCCESS) {
			clnt_perror(c2, "NULL beside a greedy client");
			break;
		}
		ok++;
	}
	int during = atomic_load(&greedy_calls) - before;
	atomic_store(&greedy_stop, true);
	for (int k = 0; k < GREEDY; k++)
		pthread_join(th[k], NULL);
	CHECK_EQ(ok, SMALL);
	CHECK_EQ(atomic_load(&greedy_bad), 0);
	/* ...and the greedy client was busy all along: beside it. */
	CHECK(during > 0);
	printf("test_ddp: %d NULL calls beside %d threads of 1 MiB READs "
	       "(%d of those meanwhile)\n", ok, GREEDY, during);
	clnt_destroy(c2);
}

/* Context switches so far of the server's poll-group threads
 * ("rpcrdma-pg*", rpc/svc.c), from /proc; -1 if none is found. */
static long pg_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long sum = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[320], line[128];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		bool pg = f && fgets(line, sizeof line, f) &&
			  !strncmp(line, "rpcrdma-pg", 10);
		if (f)
			fclose(f);
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		if (!pg || !(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof line, f)) {
			long v;
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
				sum = (sum < 0 ? 0 : sum) + v;
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* svc_run() serves the calls; the poll group's thread only watches for
 * what svc_run() does not do (CM events, ticks).  It must not be woken
 * per call: a wake-up is a context switch, tens of microseconds on a
 * small VM, and in the lab it cost rpcrdma-nfs3d a fifth of its create
 * rate.  The calls here come 1 ms apart, as a client's that thinks
 * between them: svc_run()'s spin after each (where it may run on more
 * than one CPU) finds nothing, and it lets the connection go every time
 * (rpc/tirpc/svc_rdma.c, l_stat). */
#define QUIET_CALLS 400
static void loop_stays_asleep(void)
{
	struct timeval tmo = {10, 0};
	for (int i = 0; i < 20; i++)
		clnt_call(C, NULLPROC, (xdrproc_t)xdr_void, NULL,
			  (xdrproc_t)xdr_void, NULL, tmo);
	long before = pg_switches();
	CHECK(before >= 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int ok = 0;
	for (int i = 0; i < QUIET_CALLS; i++) {
		usleep(1000);
		ok += clnt_call(C, NULLPROC, (xdrproc_t)xdr_void, NULL,
				(xdrproc_t)xdr_void, NULL, tmo) == RPC_SUCCESS;
	}
	long woke = pg_switches() - before;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 +
		  (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK_EQ(ok, QUIET_CALLS);
	/* Its own ticks, every 20 ms while a connection moves, and a
	 * wake-up when one that was quiet moves again (rpc/loop.c): two
	 * per 20 ms at most, some 45 here (a slower build takes longer
	 * and is allowed more); with a wake-up per call it was 420. */
	long allowed = QUIET_CALLS / 4 + ms / 10;
	printf("test_ddp: the poll group's thread switched %ld times in "
	       "%d NULL calls 1 ms apart (%ld ms), served by svc_run(); "
	       "allowed %ld\n", woke, QUIET_CALLS, ms, allowed);
	if (allowed >= QUIET_CALLS)
		printf("test_ddp: too slow here to tell a wake-up per call "
		       "from ticks: not judged\n");
	else
		CHECK(woke < allowed);
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	char addr[96];
	snprintf(addr, sizeof addr, "%s:0", host);
	X = svc_rdma_create(addr, NULL);
	if (!X) {
		clnt_pcreateerror("test_ddp: svc_rdma_create");
		return 1;
	}
	/* The same binding on both sides (RFC 8166 §6): any result size
	 * is DDP-eligible (ddp_min 1). */
	const struct rpcrdma_ulb_proc sulb = {.proc = DDP_READ,
					      .ddp_result_max = MAXSZ,
					      .ddp_min = 1};
	CHECK(svc_rdma_set_ulb(X, DDP_PROG, DDP_V1, &sulb, 1));
	CHECK(svc_register(X, DDP_PROG, DDP_V1, ddp_prog_1, 0));
	pthread_t t;
	pthread_create(&t, NULL, serve, NULL);
	pthread_detach(t);

	snprintf(addr, sizeof addr, "%s:%u", host, svc_rdma_port(X));
	C = clnt_rdma_create(addr, DDP_PROG, DDP_V1, NULL);
	if (!C) {
		clnt_pcreateerror("test_ddp: clnt_rdma_create");
		return 1;
	}
	const struct rpcrdma_ulb_proc ulb[2] = {
		{.proc = DDP_READ, .ddp_result_max = MAXSZ, .reply_max = 512,
		 .ddp_min = 1},
		{.proc = DDP_WRITE, .ddp_arg = true, .reply_max = 512,
		 .ddp_min = 1},
	};
	CHECK(clnt_rdma_set_ulb(C, ulb, 2));

	/* Into lent buffers: nothing copied by the client. */
	struct rpcrdma_stats c0 = cstats();
	uint64_t bytes = 0;
	for (size_t i = 0; i < NSIZES; i++) {
		read_lent(sizes[i], sizes[i] ? sizes[i] : 4, (uint32_t)i + 1);
		read_lent(sizes[i], (size_t)sizes[i] + 4093, (uint32_t)i + 50);
		bytes += 2 * (uint64_t)sizes[i];
	}
	struct rpcrdma_stats c1 = cstats();
	/* None by the library; the provider copies small FPDUs (under
	 * 8 KiB) and at most 16 KiB of a large message's first (rpcrdma.h,
	 * ddp_copied_placed). */
	uint64_t placed1 = c1.ddp_copied_placed - c0.ddp_copied_placed;
	CHECK_EQ(c1.ddp_copied_rx - c0.ddp_copied_rx - placed1, 0);
	uint64_t small_bytes = 0;
	for (size_t i = 0; i < NSIZES; i++)
		small_bytes += 2 * (sizes[i] < 8192 ? sizes[i] : 16384);
	CHECK(placed1 <= small_bytes);
	CHECK(c1.rdma_write_bytes == c0.rdma_write_bytes); /* we write none */

	/* Into rpcgen's allocations: the one copy the decoder forces, for
	 * the results that came by DDP (a Write chunk offered and used). */
	for (size_t i = 0; i < NSIZES; i++)
		read_alloc(sizes[i], (uint32_t)i + 100);
	struct rpcrdma_stats c2 = cstats();
	uint64_t alloc_bytes = 0;
	for (size_t i = 0; i < NSIZES; i++)
		alloc_bytes += sizes[i];
	/* The decoder's copies, the provider's apart. */
	uint64_t dec2 = (c2.ddp_copied_rx - c2.ddp_copied_placed) -
			(c1.ddp_copied_rx - c1.ddp_copied_placed);
	CHECK_EQ(dec2, alloc_bytes);
	printf("test_ddp: READ into rpcgen's memory copied %llu of %llu "
	       "bytes; into lent buffers %llu of %llu\n",
	       (unsigned long long)dec2,
	       (unsigned long long)alloc_bytes,
	       (unsigned long long)(c1.ddp_copied_rx - c0.ddp_copied_rx -
				    placed1),
	       (unsigned long long)bytes);

	/* Arguments lent: the client copies none of the ones that go in a
	 * Read chunk (those that fit inline are copied into the Send; on a
	 * device that pins pages, verbs, those up to 64 KiB into registered
	 * memory, docs/DEVICES.md). */
	const char *prov = getenv("RPCRDMA_PROVIDER");
	u_int lent_min = prov && !strcmp(prov, "verbs") ? 65537 : 4096;
	struct rpcrdma_stats s0 = sstats();
	for (size_t i = 0; i < NSIZES; i++)
		if (sizes[i] >= lent_min)
			write_lent(sizes[i], (uint32_t)i + 200);
	struct rpcrdma_stats c3 = cstats(), s1 = sstats();
	CHECK_EQ(c3.ddp_copied_tx - c2.ddp_copied_tx, 0);
	uint64_t wbytes = 0;
	for (size_t i = 0; i < NSIZES; i++)
		if (sizes[i] >= lent_min)
			wbytes += sizes[i];
	/* The server's decode copies each argument out of the call once
	 * (the provider's placement copies apart). */
	CHECK_EQ((s1.ddp_copied_rx - s1.ddp_copied_placed) -
			 (s0.ddp_copied_rx - s0.ddp_copied_placed),
		 wbytes);
	for (size_t i = 0; i < NSIZES; i++)
		if (sizes[i] < lent_min)
			write_lent(sizes[i], (uint32_t)i + 300);

	/* A lent buffer too small for the result: the server cannot deliver
	 * it, the call fails, nothing past the buffer is touched. */
	uint8_t *small = malloc(1024 + 2 * GUARD);
	if (small) {
		memset(small, 0xEE, 1024 + 2 * GUARD);
		ddp_read_args a = {8192, 3};
		ddp_data r = {0, (char *)small + GUARD};
		CHECK(clnt_rdma_result_buffer(C, small + GUARD, 1024));
		enum clnt_stat st = ddp_read_1(&a, &r, C);
		CHECK(st != RPC_SUCCESS);
		bool guard = true;
		for (size_t i = 0; i < GUARD; i++)
			guard = guard && small[i] == 0xEE &&
				small[GUARD + 1024 + i] == 0xEE;
		CHECK(guard);
		free(small);
		/* The connection goes on. */
		read_alloc(100, 4);
	}

	pthread_t th[4];
	for (uintptr_t k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, reader, (void *)k);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	CHECK_EQ(atomic_load(&reader_bad), 0);

	loop_stays_asleep();
	cancel_caller(addr);
	small_beside_greedy(addr);

	/* clnt_rdma_result_buffer on a CLIENT of another kind. */
	CHECK(!clnt_rdma_result_buffer(NULL, small, 4));
	clnt_destroy(C);
	TEST_MAIN_END();
}
