/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf rpc | server | client: ONC RPC over rpcrdma against
 * libtirpc/TCP and raw TCP, measured in the same run.
 *
 *   rpc     server and client in this process (threads) on loopback; each
 *           contender's server runs only while its client does
 *   server  rpcrdma on HOST:PORT, libtirpc on PORT+1, raw TCP on PORT+2,
 *           rdma-tirpc on PORT+3, until SIGINT/SIGTERM
 *   client  every workload against such a server
 *
 * Contenders: rpcrdma (the native API), rdma-tirpc (rpcrdma through the
 * libtirpc adapters: clnt_rdma_create + rpcgen stubs, svc_rdma_create +
 * svc_run; perf_tirpc_rdma.c), libtirpc over TCP, raw TCP.
 *
 * Workloads (perf_rpc.h has the program):
 *   NULL latency   synchronous NULL calls one after another: p50, p99 and
 *                  a histogram (raw TCP: a 64-byte ping-pong)
 *   calls/s        NULL calls with 1 and 32 in flight: rpcrdma keeps 32
 *                  asynchronous calls going on one connection; libtirpc,
 *                  whose CLIENT has one call at a time, uses 32 threads
 *                  with a CLIENT (connection) each; rdma-tirpc's CLIENT
 *                  takes concurrent calls, so its 32 threads share one,
 *                  and the "32 CLIENTs" row has it with a CLIENT per
 *                  thread as well, libtirpc's shape
 *   WRITE / READ   4 KiB, 64 KiB, 1 MiB of opaque data to / from the
 *                  server.  rpcrdma: the data is a DDP-eligible argument
 *                  (Read chunk) / result (Write chunk), up to --depth
 *                  calls and --window bytes in flight (more 1 MiB calls
 *                  in flight overflow the TCP socket buffers under the
 *                  soft-iWARP provider and cost CPU per byte: measured
 *                  twice the CPU per MiB at 4 x 1 MiB than at 1);
 *                  libtirpc, rdma-tirpc: one call at a time (a CLIENT
 *                  allows no more; rdma-tirpc with DDP too); raw TCP:
 *                  one stream of the same bytes.
 *
 * Knobs for profiling one thing at a time: --only, --with, --sizes,
 * --issue, --workers, --malloc, --repeat (medians).
 *
 * Targets are printed next to the numbers with MET / MISSED; nothing here
 * asserts them (a loaded CI machine must not fail a build).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "common/pages.h"
#include "perf_rpc.h"
#include "perf_tirpc.h"
#include "rpcrdma/rpcrdma.h"
#include "wire/xdr.h"

const size_t pr_sizes[PR_NSIZES] = {4096, 65536, 1u << 20};
const double pr_hist_us[PR_NHIST - 1] = {10, 15, 20, 30, 50, 100, 200, 1000};

enum { C_RDMA, C_RTIRPC, C_TIRPC, C_TCP, C_N };
static const char *const cname[C_N] = {"rpcrdma", "rdma-tirpc", "libtirpc",
				       "tcp"};
/* The CLIENT-based contenders, by index (NULL: not one). */
static const struct pr_clnt_ops *const cops[C_N] = {
	[C_RTIRPC] = &pr_tirpc_rdma_ops,
	[C_TIRPC] = &pr_tirpc_tcp_ops,
};
/* The `server` subcommand's port for each, from PORT. */
static const uint16_t cport[C_N] = {
	[C_RDMA] = 0, [C_TIRPC] = 1, [C_TCP] = 2, [C_RTIRPC] = 3,
};

/* ------------------------------------------------------------------ */
/* Shared helpers                                                       */

static const char *pass_label = "";

unsigned pr_depth_for(const struct pr_params *p, size_t size)
{
	size_t fit = p->window / size;
	if (fit > p->depth)
		fit = p->depth;
	return fit ? (unsigned)fit : 1;
}

unsigned long pr_count_for(const struct pr_params *p, size_t size)
{
	unsigned long n = (unsigned long)(((uint64_t)p->mib << 20) / size);
	return n < 2 ? 2 : n;
}

double pr_mibs(size_t size, unsigned long count, uint64_t ns)
{
	if (!ns)
		return 0;
	return (double)size * (double)count / (1024.0 * 1024.0) /
	       ((double)ns / 1e9);
}

void pr_latency(struct pr_result *r, uint64_t *samples, size_t n)
{
	double sum = 0;
	memset(r->hist, 0, sizeof(r->hist));
	for (size_t i = 0; i < n; i++) {
		sum += (double)samples[i];
		double us = (double)samples[i] / 1000.0;
		int b = 0;
		while (b < PR_NHIST - 1 && us >= pr_hist_us[b])
			b++;
		r->hist[b]++;
	}
	r->p50_us = perf_quantile_us(samples, n, 0.50);
	r->p99_us = perf_quantile_us(samples, n, 0.99);
	r->mean_us = n ? sum / (double)n / 1000.0 : 0;
}

static uint64_t last_tick_ns;

void pr_progress(const struct pr_params *p, const char *fmt, ...)
{
	if (p->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rpcrdma-perf: %s", pass_label);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	last_tick_ns = perf_now_ns();
}

void pr_tick(const struct pr_params *p, const char *what, unsigned long done,
	     unsigned long total)
{
	/* Looking at the clock every 256 iterations keeps this off the
	 * measured path. */
	if (p->quiet || (done & 255u) != 255u)
		return;
	uint64_t now = perf_now_ns();
	if (now - last_tick_ns < 1000000000ull)
		return;
	last_tick_ns = now;
	fprintf(stderr, "rpcrdma-perf: %s  %s: %lu/%lu (%.0f%%)\n", pass_label,
		what, done + 1, total, 100.0 * (double)(done + 1) / (double)total);
}

int pr_parse_addr(const char *s, uint16_t def, struct sockaddr_storage *ss,
		  socklen_t *len)
{
	char host[256], port[8];
	snprintf(port, sizeof(port), "%u", def);
	if (!s || !*s || strlen(s) >= sizeof(host))
		return -1;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end)
			return -1;
		memcpy(host, s + 1, (size_t)(end - s - 1));
		host[end - s - 1] = 0;
		if (end[1] == ':')
			snprintf(port, sizeof(port), "%s", end + 2);
		else if (end[1])
			return -1;
	} else {
		const char *c = strchr(s, ':');
		snprintf(host, sizeof(host), "%s", s);
		if (c && !strchr(c + 1, ':')) { /* one colon: host:port */
			host[c - s] = 0;
			snprintf(port, sizeof(port), "%s", c + 1);
		}
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return -1;
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -1;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = (socklen_t)res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void pr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

uint16_t pr_get_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

void pr_addr_string(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
			  ip, sizeof(ip));
		snprintf(buf, cap, "[%s]:%u", ip, pr_get_port(ss));
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  ip, sizeof(ip));
		snprintf(buf, cap, "%s:%u", ip, pr_get_port(ss));
	}
}

/* ------------------------------------------------------------------ */
/* rpcrdma server                                                       */

/* READ results point here: memory that outlives every server, so the
 * handler neither allocates nor copies (as libtirpc's does not). */
static uint8_t rdma_srv_buf[PR_MAXSZ];

static enum rpcrdma_svc_stat h_write(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len < 4 || len < 4 + (size_t)rpcrdma_be32_get(p))
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, rpcrdma_be32_get(p));
	struct rpcrdma_iov iov = {out, 4, false};
	return rpcrdma_svc_req_reply(r, &iov, 1) ? RPCRDMA_SVC_SYSTEM_ERR
						 : RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat h_read(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len != 4 || rpcrdma_be32_get(p) > PR_MAXSZ)
		return RPCRDMA_SVC_GARBAGE_ARGS;
	uint32_t n = rpcrdma_be32_get(p);
	uint8_t *out = rpcrdma_svc_req_alloc(r, 4);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, n);
	struct rpcrdma_iov iov[2] = {{out, 4, false}, {rdma_srv_buf, n, true}};
	return rpcrdma_svc_req_reply(r, iov, 2) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static int rdma_server_start(const char *listen, const struct rpcrdma_opts *o,
			     struct rpcrdma_svc **out)
{
	struct rpcrdma_svc *s;
	int rc = rpcrdma_svc_create(listen, o, &s);
	if (rc < 0) {
		fprintf(stderr, "rpcrdma-perf: rpcrdma server on %s: %s\n",
			listen, rpcrdma_strerror(rc));
		return -1;
	}
	if ((rc = rpcrdma_svc_register(s, PR_PROG, PR_VERS, PR_WRITE, h_write,
				       NULL, 0)) < 0 ||
	    (rc = rpcrdma_svc_register(s, PR_PROG, PR_VERS, PR_READ, h_read,
				       NULL, RPCRDMA_ULB_DDP_RESULT)) < 0) {
		fprintf(stderr, "rpcrdma-perf: register: %s\n",
			rpcrdma_strerror(rc));
		rpcrdma_svc_destroy(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* ------------------------------------------------------------------ */
/* rpcrdma client                                                       */

/* Keeps up to `depth` asynchronous calls going until `total` are done.
 * Two ways to start the next call:
 *  from_cb:   the completion callback starts it (the library allows
 *             asynchronous calls there): no wake-up of ours per call, but
 *             building the call (for WRITE: copying its data) happens on
 *             the client's event-loop thread;
 *  from main: the callback only counts and signals, the calling thread
 *             starts calls while fewer than depth are in flight: one
 *             wake-up per call, but the copy overlaps the loop's work on
 *             a second CPU. */
struct aflow {
	struct rpcrdma_clnt *c;
	const struct rpcrdma_call *call;
	size_t expect_ddp;          /* READ: bytes the Write chunk must get */
	bool from_cb;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned long issued, done, total, noddp;
	int err;
};

static void aflow_issue(struct aflow *f);

static void aflow_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct aflow *f = arg;
	int st = rep->status;
	bool ddp_ok = !f->expect_ddp ||
		      (rep->nddp >= 1 && rep->ddp_len[0] == f->expect_ddp);
	rpcrdma_reply_free(rep);

	pthread_mutex_lock(&f->mu);
	f->done++;
	if (st && !f->err)
		f->err = st;
	if (!ddp_ok)
		f->noddp++;
	bool more = f->from_cb && !f->err && f->issued < f->total;
	if (more)
		f->issued++;
	if (!f->from_cb)
		pthread_cond_signal(&f->cv); /* a slot is free */
	/* done == issued only when nothing more will start: the waiter may
	 * free f as soon as it sees that. */
	if (f->done == f->issued)
		pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	if (more)
		aflow_issue(f);
}

static void aflow_issue(struct aflow *f)
{
	int rc = rpcrdma_clnt_call_async(f->c, f->call, aflow_cb, f);
	if (rc == 0)
		return;
	pthread_mutex_lock(&f->mu);
	f->issued--;
	if (!f->err)
		f->err = rc;
	if (f->done == f->issued)
		pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Runs `total` calls, `depth` in flight; returns elapsed ns or 0. */
static uint64_t aflow_run(struct rpcrdma_clnt *c,
			  const struct rpcrdma_call *call, size_t expect_ddp,
			  unsigned depth, unsigned long total, bool from_cb,
			  unsigned long *noddp)
{
	struct aflow f = {.c = c, .call = call, .expect_ddp = expect_ddp,
			  .total = total, .from_cb = from_cb};
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	unsigned long first = depth < total ? depth : total;

	uint64_t t0 = perf_now_ns();
	pthread_mutex_lock(&f.mu);
	if (from_cb) {
		f.issued = first;
		pthread_mutex_unlock(&f.mu);
		for (unsigned long i = 0; i < first; i++)
			aflow_issue(&f);
		pthread_mutex_lock(&f.mu);
	} else {
		while (f.issued < total && !f.err) {
			while (f.issued - f.done >= depth && !f.err)
				pthread_cond_wait(&f.cv, &f.mu);
			if (f.err)
				break;
			f.issued++;
			pthread_mutex_unlock(&f.mu);
			aflow_issue(&f);
			pthread_mutex_lock(&f.mu);
		}
	}
	while (f.done < f.issued)
		pthread_cond_wait(&f.cv, &f.mu);
	pthread_mutex_unlock(&f.mu);
	uint64_t ns = perf_now_ns() - t0;

	pthread_mutex_destroy(&f.mu);
	pthread_cond_destroy(&f.cv);
	if (noddp)
		*noddp = f.noddp;
	if (f.err || f.done != total) {
		fprintf(stderr, "rpcrdma-perf: rpcrdma call failed: %s\n",
			rpcrdma_strerror(f.err));
		return 0;
	}
	return ns ? ns : 1;
}

static int rdma_null(struct rpcrdma_clnt *c)
{
	struct rpcrdma_call call = {.proc = PR_NULL};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(c, &call, &rep);
	rpcrdma_reply_free(&rep);
	return rc;
}

static int rdma_client_run(const char *addr, const struct rpcrdma_opts *o,
			   const struct pr_params *p, struct pr_result *r)
{
	struct rpcrdma_clnt *c;
	/* The asynchronous calls lend their WRITE data instead of having it
	 * copied (the buffer stays untouched while they are out), as a
	 * program that cares about copies would. */
	struct rpcrdma_opts bo = *o;
	bo.borrow_args = true;
	int rc = rpcrdma_clnt_create(addr, PR_PROG, PR_VERS, &bo, &c);
	if (rc < 0) {
		snprintf(r->note, sizeof(r->note), "rpcrdma: connect %s: %s",
			 addr, rpcrdma_strerror(rc));
		fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
		return -1;
	}
	uint64_t *lat = calloc(p->iters, sizeof(*lat));
	uint8_t *buf = malloc(PR_MAXSZ);
	rc = -1;
	if (!lat || !buf)
		goto out;
	memset(buf, 0x5a, PR_MAXSZ);

	for (int i = 0; i < 100; i++)
		if (rdma_null(c) < 0)
			goto fail;

	if (p->workloads & PR_W_NULL) {
		pr_progress(p, "rpcrdma NULL latency, %lu calls", p->iters);
		for (unsigned long i = 0; i < p->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if (rdma_null(c) < 0)
				goto fail;
			lat[i] = perf_now_ns() - t0;
			pr_tick(p, "rpcrdma NULL latency", i, p->iters);
		}
		pr_latency(r, lat, p->iters);
	}

	uint64_t ns;
	if (p->workloads & PR_W_RATE) {
		pr_progress(p, "rpcrdma calls/s, 1 in flight");
		uint64_t t0 = perf_now_ns();
		for (unsigned long i = 0; i < p->iters; i++)
			if (rdma_null(c) < 0)
				goto fail;
		ns = perf_now_ns() - t0;
		r->cps1 = ns ? (double)p->iters * 1e9 / (double)ns : 0;

		pr_progress(p, "rpcrdma calls/s, %u in flight (async)",
			    PR_INFLIGHT);
		struct rpcrdma_call nc = {.proc = PR_NULL};
		ns = aflow_run(c, &nc, 0, PR_INFLIGHT, p->iters, p->issue_cb,
			       NULL);
		if (!ns)
			goto fail;
		r->cpsN = (double)p->iters * 1e9 / (double)ns;
	}

	unsigned long bad_ddp = 0;
	for (int k = 0; k < PR_NSIZES; k++) {
		if (!(p->sizes & 1u << k))
			continue;
		size_t sz = pr_sizes[k];
		unsigned long cnt = pr_count_for(p, sz), noddp = 0;
		unsigned depth = pr_depth_for(p, sz);
		uint8_t hdr[4];
		rpcrdma_be32_put(hdr, (uint32_t)sz);
		if (!(p->workloads & PR_W_WRITE))
			goto read;

		pr_progress(p, "rpcrdma WRITE %zu B x %lu, %u in flight", sz,
			    cnt, depth);
		struct rpcrdma_iov wa[2] = {{hdr, 4, false}, {buf, sz, true}};
		struct rpcrdma_call wc = {.proc = PR_WRITE, .args = wa,
					  .nargs = 2};
		struct rpcrdma_stats s0, s1;
		struct pr_cp_snap cp0, cp1;
		rpcrdma_clnt_stats(c, &s0);
		pr_cp_take(p, true, &s0, &cp0);
		ns = aflow_run(c, &wc, 0, depth, cnt, p->issue_cb, NULL);
		if (!ns)
			goto fail;
		rpcrdma_clnt_stats(c, &s1);
		pr_cp_take(p, true, &s1, &cp1);
		pr_cp_result(&cp0, &cp1, true, (uint64_t)sz * cnt,
			     &r->cp_wr_tx[k], &r->cp_wr_rx[k]);
		r->wr_mibs[k] = pr_mibs(sz, cnt, ns);
		/* Every WRITE must have been a Chunked call (Read chunk). */
		if (s1.chunked_calls - s0.chunked_calls < cnt)
			bad_ddp += cnt - (s1.chunked_calls - s0.chunked_calls);
read:
		if (!(p->workloads & PR_W_READ))
			continue;
		pr_progress(p, "rpcrdma READ %zu B x %lu, %u in flight", sz,
			    cnt, depth);
		size_t max = sz;
		struct rpcrdma_iov ra = {hdr, 4, false};
		struct rpcrdma_call rc_ = {.proc = PR_READ, .args = &ra,
					   .nargs = 1, .ddp_result_max = &max,
					   .nddp_results = 1};
		struct rpcrdma_stats r0, r1;
		struct pr_cp_snap rp0, rp1;
		rpcrdma_clnt_stats(c, &r0);
		pr_cp_take(p, true, &r0, &rp0);
		ns = aflow_run(c, &rc_, sz, depth, cnt, p->issue_cb,
			       &noddp);
		if (!ns)
			goto fail;
		rpcrdma_clnt_stats(c, &r1);
		pr_cp_take(p, true, &r1, &rp1);
		pr_cp_result(&rp0, &rp1, false, (uint64_t)sz * cnt,
			     &r->cp_rd_tx[k], &r->cp_rd_rx[k]);
		r->rd_mibs[k] = pr_mibs(sz, cnt, ns);
		bad_ddp += noddp;
	}
	if (bad_ddp)
		snprintf(r->note, sizeof(r->note),
			 "rpcrdma: %lu READ/WRITE calls did not use DDP",
			 bad_ddp);
	rc = 0;
	goto out;
fail:
	snprintf(r->note, sizeof(r->note), "rpcrdma: a call failed");
out:
	rpcrdma_clnt_destroy(c);
	free(lat);
	free(buf);
	return rc;
}

/* The cost subcommand's session: server and client of this file. */
struct rdma_nullsess {
	struct pr_nullsess s;
	struct rpcrdma_svc *svc;
	struct rpcrdma_clnt *c;
};

static int rns_call(struct pr_nullsess *s)
{
	return rdma_null(((struct rdma_nullsess *)s)->c) < 0 ? -1 : 0;
}

static int rns_xfer(struct pr_nullsess *s, bool write, size_t size)
{
	struct rdma_nullsess *n = (struct rdma_nullsess *)s;
	static uint8_t buf[PR_MAXSZ];
	uint8_t hdr[4];
	rpcrdma_be32_put(hdr, (uint32_t)size);
	struct rpcrdma_iov a[2] = {{hdr, 4, false}, {buf, size, true}};
	size_t max = size;
	struct rpcrdma_call call = {.proc = write ? PR_WRITE : PR_READ,
				    .args = a, .nargs = write ? 2 : 1,
				    .ddp_result_max = write ? NULL : &max,
				    .nddp_results = write ? 0 : 1};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(n->c, &call, &rep);
	if (rc == 0 && !write && (rep.nddp != 1 || rep.ddp_len[0] != size))
		rc = -1;
	rpcrdma_reply_free(&rep);
	return rc < 0 ? -1 : 0;
}

static void rns_close(struct pr_nullsess *s)
{
	struct rdma_nullsess *n = (struct rdma_nullsess *)s;
	rpcrdma_clnt_destroy(n->c);
	rpcrdma_svc_destroy(n->svc);
	free(n);
}

int pr_rdma_nullsess(const struct sockaddr_storage *ip, socklen_t len,
		     const struct rpcrdma_opts *o, struct pr_nullsess **out)
{
	(void)len;
	struct rdma_nullsess *n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	char listen[96], target[96];
	struct sockaddr_storage a = *ip;
	pr_set_port(&a, 0);
	pr_addr_string(&a, listen, sizeof(listen));
	if (rdma_server_start(listen, o, &n->svc) < 0) {
		free(n);
		return -1;
	}
	pr_set_port(&a, rpcrdma_svc_port(n->svc));
	pr_addr_string(&a, target, sizeof(target));
	int rc = rpcrdma_clnt_create(target, PR_PROG, PR_VERS, o, &n->c);
	if (rc < 0) {
		fprintf(stderr, "rpcrdma-perf: rpcrdma: connect %s: %s\n",
			target, rpcrdma_strerror(rc));
		rpcrdma_svc_destroy(n->svc);
		free(n);
		return -1;
	}
	n->s.call = rns_call;
	n->s.close = rns_close;
	n->s.xfer = rns_xfer;
	*out = &n->s;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                              */

enum pin_mode { PIN_NO, PIN_YES, PIN_BOTH };

#define MAX_REPEAT 15

struct ropts {
	struct pr_params p;
	struct rpcrdma_opts ro;
	const char *addr;           /* rpc: loopback IP; server: listen;
				       client: server */
	enum pin_mode pin;
	unsigned who;               /* 1 << C_*: contenders to run */
	int repeat;                 /* runs per pinning; medians reported */
	int cpu;
	bool json;
	bool malloc_tune;
	bool goals;                 /* --goals: the project's targets too */
	const char *census;         /* server --census FILE: the page census
				       (common/pages.h) to FILE on SIGUSR2 */
};

/* --goals: the project's targets and MET / MISSED beside the numbers
 * (hidden by default: the table shows measurements). */
static bool show_goals;

static void rpc_usage(const char *cmd)
{
	fprintf(stderr,
		"usage: rpcrdma-perf %s%s [--provider iwarp|verbs] "
		"[--iters N] [--mib N]\n"
		"       [--depth N] [--pin[=both]] [--cpu N] [--json] "
		"[--quiet]\n"
		"       [--only null,rate,write,read] "
		"[--with rpcrdma,rdma-tirpc,libtirpc,tcp]\n"
		"       [--repeat N] [--workers N]"
		" [--issue callback|thread] [--sizes 4k,64k,1m]\n"
		"       [--malloc tuned|default] [--window BYTES]"
		" [--census FILE (server)]\n",
		cmd,
		!strcmp(cmd, "server")   ? " --listen HOST:PORT"
		: !strcmp(cmd, "client") ? " HOST:PORT"
					 : " [--addr IP]");
}

static int parse_ul(const char *s, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s)
		return -1;
	*out = v;
	return 0;
}

/* The library allocates each call's buffers (a 1 MiB WRITE copies its
 * data into a fresh 1 MiB block, a READ gets a 1 MiB result block, the
 * server a 1 MiB argument block).  With glibc's defaults, blocks that
 * large come from mmap() once several are alive at a time, so every call
 * pays ~256 page faults and the kernel's zeroing, which measured as the
 * largest single CPU cost of 1 MiB WRITEs.  Keeping them in the heap is
 * the usual deployment tuning; --malloc default measures without it. */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

/* Comma-separated names -> bit mask (bit i: names[i]); 0 on error. */
static unsigned parse_list(const char *s, const char *const *names, int n)
{
	unsigned m = 0;
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		int i = 0;
		while (i < n && strcmp(t, names[i]))
			i++;
		if (i == n)
			return 0;
		m |= 1u << i;
	}
	return m;
}

static int parse_opts(int argc, char **argv, struct ropts *o)
{
	static const char *const wl_names[] = {"null", "rate", "write",
					       "read"};
	static const char *const sz_names[] = {"4k", "64k", "1m"};
	static const struct option lo[] = {
		{"provider", required_argument, NULL, 'P'},
		{"device", required_argument, NULL, 'D'},
		{"addr", required_argument, NULL, 'a'},
		{"listen", required_argument, NULL, 'l'},
		{"iters", required_argument, NULL, 'i'},
		{"mib", required_argument, NULL, 'm'},
		{"depth", required_argument, NULL, 'd'},
		{"pin", optional_argument, NULL, 'p'},
		{"cpu", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"only", required_argument, NULL, 'o'},
		{"with", required_argument, NULL, 'w'},
		{"repeat", required_argument, NULL, 'r'},
		{"workers", required_argument, NULL, 'W'},
		{"issue", required_argument, NULL, 'I'},
		{"sizes", required_argument, NULL, 'S'},
		{"malloc", required_argument, NULL, 'M'},
		{"window", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{"goals", no_argument, NULL, 'G'},
		{"census", required_argument, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	unsigned long v;

	memset(o, 0, sizeof(*o));
	rpcrdma_opts_default(&o->ro);
	o->p.iters = 20000;
	o->p.mib = 256;
	o->p.depth = 4;
	o->p.window = 1u << 20;
	o->p.workloads = PR_W_ALL;
	o->p.sizes = (1u << PR_NSIZES) - 1;
	o->p.issue_cb = true;
	o->malloc_tune = true;
	o->who = (1u << C_N) - 1;
	o->repeat = 1;
	optind = 1;
	for (;;) {
		int ch = getopt_long(argc, argv, "", lo, NULL);
		if (ch == -1)
			break;
		switch (ch) {
		case 'P':
			o->ro.provider = optarg;
			break;
		case 'D':
			o->ro.device = optarg;
			break;
		case 'a':
		case 'l':
			o->addr = optarg;
			break;
		case 'i':
			if (parse_ul(optarg, &v) || !v)
				return -1;
			o->p.iters = v;
			break;
		case 'm':
			if (parse_ul(optarg, &v) || !v || v > (1ul << 20))
				return -1;
			o->p.mib = v;
			break;
		case 'd':
			if (parse_ul(optarg, &v) || !v || v > 1024)
				return -1;
			o->p.depth = (unsigned)v;
			break;
		case 'p':
			if (!optarg || !strcmp(optarg, "yes") ||
			    !strcmp(optarg, "only"))
				o->pin = PIN_YES;
			else if (!strcmp(optarg, "both"))
				o->pin = PIN_BOTH;
			else if (!strcmp(optarg, "no"))
				o->pin = PIN_NO;
			else
				return -1;
			break;
		case 'c':
			if (parse_ul(optarg, &v) || v >= CPU_SETSIZE)
				return -1;
			o->cpu = (int)v;
			break;
		case 'j':
			o->json = true;
			break;
		case 'q':
			o->p.quiet = true;
			break;
		case 'C':
			o->census = optarg;
			break;
		case 'G':
			o->goals = show_goals = true;
			break;
		case 'o':
			if (!(o->p.workloads = parse_list(optarg, wl_names, 4)))
				return -1;
			break;
		case 'N':
			if (parse_ul(optarg, &v) || !v)
				return -1;
			o->p.window = v;
			break;
		case 'M':
			if (!strcmp(optarg, "tuned"))
				o->malloc_tune = true;
			else if (!strcmp(optarg, "default"))
				o->malloc_tune = false;
			else
				return -1;
			break;
		case 'S':
			if (!(o->p.sizes = parse_list(optarg, sz_names,
						      PR_NSIZES)))
				return -1;
			break;
		case 'I':
			if (!strcmp(optarg, "callback"))
				o->p.issue_cb = true;
			else if (!strcmp(optarg, "thread"))
				o->p.issue_cb = false;
			else
				return -1;
			break;
		case 'W':
			if (parse_ul(optarg, &v) || !v || v > 64)
				return -1;
			o->ro.workers = (unsigned)v;
			break;
		case 'r':
			if (parse_ul(optarg, &v) || !v || v > MAX_REPEAT)
				return -1;
			o->repeat = (int)v;
			break;
		case 'w':
			if (!(o->who = parse_list(optarg, cname, C_N)))
				return -1;
			break;
		default:
			return -1;
		}
	}
	if (optind < argc)
		o->addr = argv[optind++];
	if (optind != argc)
		return -1;
	if (o->malloc_tune)
		tune_malloc();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

struct pass {
	bool pinned;
	bool ran[C_N];
	struct pr_result r[C_N];
};

void pr_cp_clear(struct pr_result *r)
{
	for (int k = 0; k < PR_NSIZES; k++)
		r->cp_wr_tx[k] = r->cp_wr_rx[k] = r->cp_rd_tx[k] =
			r->cp_rd_rx[k] = -1;
}

void pr_cp_take(const struct pr_params *p, bool have_c,
		const struct rpcrdma_stats *cs, struct pr_cp_snap *out)
{
	struct rpcrdma_stats ss;
	memset(out, 0, sizeof(*out));
	if (have_c) {
		out->have_c = true;
		out->c_tx = cs->ddp_copied_tx;
		out->c_rx = cs->ddp_copied_rx;
	}
	if (p->srv_stats && p->srv_stats(p->srv_arg, &ss)) {
		out->have_s = true;
		out->s_tx = ss.ddp_copied_tx;
		out->s_rx = ss.ddp_copied_rx;
	}
}

void pr_cp_result(const struct pr_cp_snap *a, const struct pr_cp_snap *b,
		  bool write, uint64_t payload, double *tx, double *rx)
{
	double n = payload ? (double)payload : 1;
	/* WRITE: the client sends, the server receives; READ: the other
	 * way round. */
	bool c = a->have_c && b->have_c, sv = a->have_s && b->have_s;
	double ctx = c ? (double)(b->c_tx - a->c_tx) / n : -1;
	double crx = c ? (double)(b->c_rx - a->c_rx) / n : -1;
	double stx = sv ? (double)(b->s_tx - a->s_tx) / n : -1;
	double srx = sv ? (double)(b->s_rx - a->s_rx) / n : -1;
	*tx = write ? ctx : stx;
	*rx = write ? srx : crx;
}

double pr_ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : 0;
}

const char *pr_verdict(bool have, bool ok)
{
	return !have ? "n/a" : ok ? "MET" : "MISSED";
}

static void cell(char *buf, size_t cap, double v, const char *fmt)
{
	if (v > 0)
		snprintf(buf, cap, fmt, v);
	else
		snprintf(buf, cap, "-");
}

/* The two RDMA contenders, whose goals are the same (issue: "the same
 * through the libtirpc adapters"), and the ratios printed for each. */
static const int rdma_side[2] = {C_RDMA, C_RTIRPC};

static void print_row(const char *name, const double v[C_N], const char *fmt,
		      const char *target)
{
	char c[C_N][24], r[4][16];
	for (int i = 0; i < C_N; i++)
		cell(c[i], sizeof(c[i]), v[i], fmt);
	for (int k = 0; k < 2; k++) {
		cell(r[2 * k], sizeof(r[0]),
		     pr_ratio(v[rdma_side[k]], v[C_TIRPC]), "%.2f");
		cell(r[2 * k + 1], sizeof(r[0]),
		     pr_ratio(v[rdma_side[k]], v[C_TCP]), "%.2f");
	}
	printf("%-22s %10s %10s %10s %10s %8s %8s %8s %8s  %s\n", name, c[0],
	       c[1], c[2], c[3], r[0], r[1], r[2], r[3], target);
}

/* Which numbers a goal looks at: the data goals, one size and direction. */
struct goal_at {
	int size;               /* index into pr_sizes */
	bool write;
};

typedef bool (*goal_fn)(const struct pr_result *R, int c,
			const struct goal_at *at, bool *have);

/* "goal: rpcrdma's verdict / rdma-tirpc's verdict" */
static void goal_text(char *t, size_t cap, const char *goal,
		      const struct pr_result *R, goal_fn f,
		      const struct goal_at *at)
{
	bool have[2], ok[2];
	if (!show_goals) {
		t[0] = 0;
		return;
	}
	for (int k = 0; k < 2; k++)
		ok[k] = f(R, rdma_side[k], at, &have[k]);
	snprintf(t, cap, "%s: %s / %s", goal, pr_verdict(have[0], ok[0]),
		 pr_verdict(have[1], ok[1]));
}

/* The goals of the fast-path issue, for contender c. */
static bool goal_p50(const struct pr_result *R, int c,
		     const struct goal_at *at, bool *have)
{
	*have = R[c].p50_us > 0 && R[C_TCP].p50_us > 0 && R[C_TIRPC].p50_us > 0;
	return R[c].p50_us <= 1.25 * R[C_TCP].p50_us &&
	       R[c].p50_us < R[C_TIRPC].p50_us;
}

static bool goal_p99(const struct pr_result *R, int c,
		     const struct goal_at *at, bool *have)
{
	*have = R[c].p50_us > 0 && R[c].p99_us > 0;
	return R[c].p99_us <= 2 * R[c].p50_us;
}

static bool goal_pipeline(const struct pr_result *R, int c,
			  const struct goal_at *at, bool *have)
{
	*have = R[c].cpsN > 0 && R[C_TIRPC].cps1 > 0;
	return R[c].cpsN >= 4 * R[C_TIRPC].cps1;
}

static double data_of(const struct pr_result *r, const struct goal_at *at)
{
	return at->write ? r->wr_mibs[at->size] : r->rd_mibs[at->size];
}

static bool goal_small(const struct pr_result *R, int c,
		       const struct goal_at *at, bool *have)
{
	double v = data_of(&R[c], at), tirpc = data_of(&R[C_TIRPC], at);
	*have = v > 0 && tirpc > 0;
	return v >= tirpc;
}

static bool goal_large(const struct pr_result *R, int c,
		       const struct goal_at *at, bool *have)
{
	double v = data_of(&R[c], at), tcp = data_of(&R[C_TCP], at),
	       tirpc = data_of(&R[C_TIRPC], at);
	*have = v > 0 && tcp > 0 && tirpc > 0;
	return v >= 0.9 * tcp && v >= 2 * tirpc;
}

static const char *size_name(size_t sz)
{
	return sz >= (1u << 20) ? "1 MiB" : sz >= 65536 ? "64 KiB" : "4 KiB";
}

static void cp_cell(char *buf, size_t cap, double tx, double rx)
{
	char a[16] = "-", b[16] = "-";
	if (tx >= 0)
		snprintf(a, sizeof(a), "%.2f", tx);
	if (rx >= 0)
		snprintf(b, sizeof(b), "%.2f", rx);
	snprintf(buf, cap, "%s / %s", a, b);
}

/* Bytes of DDP-eligible data our library copied per payload byte, at the
 * sending and the receiving end (rpcrdma_stats.ddp_copied_tx / _rx):
 * "zero copy" measured, not claimed.  libtirpc and raw TCP are not ours
 * to count (libtirpc's record streams copy every byte into and out of
 * their buffers on both sides). */
static void print_copies(const struct pass *ps)
{
	const struct pr_result *R = ps->r;
	if (!ps->ran[C_RDMA] && !ps->ran[C_RTIRPC])
		return;
	printf("copies of DDP-eligible data per payload byte, sender / "
	       "receiver (user space, by the library):\n");
	printf("  %-14s %16s %16s\n", "workload", cname[C_RDMA],
	       cname[C_RTIRPC]);
	for (int dir = 0; dir < 2; dir++)
		for (int k = 0; k < PR_NSIZES; k++) {
			char name[32], c0[40], c1[40];
			snprintf(name, sizeof(name), "%s %s",
				 dir ? "WRITE" : "READ", size_name(pr_sizes[k]));
			const struct pr_result *a = &R[C_RDMA], *b = &R[C_RTIRPC];
			if (dir) {
				cp_cell(c0, sizeof(c0), a->cp_wr_tx[k], a->cp_wr_rx[k]);
				cp_cell(c1, sizeof(c1), b->cp_wr_tx[k], b->cp_wr_rx[k]);
			} else {
				cp_cell(c0, sizeof(c0), a->cp_rd_tx[k], a->cp_rd_rx[k]);
				cp_cell(c1, sizeof(c1), b->cp_rd_tx[k], b->cp_rd_rx[k]);
			}
			printf("  %-14s %16s %16s\n", name, c0, c1);
		}
}

static void print_pass(const struct ropts *o, const struct pass *ps)
{
	const struct pr_result *R = ps->r;
	char t[160];
	double v[C_N];

	printf("\n== %s (%s) ==  provider %s, %lu calls, %lu MiB per size, "
	       "rpcrdma depth %u/%u/%u%s\n",
	       ps->pinned ? "pinned" : "unpinned",
	       ps->pinned ? "all threads on one CPU" : "free to use every CPU",
	       o->ro.provider ? o->ro.provider : "iwarp", o->p.iters, o->p.mib,
	       pr_depth_for(&o->p, pr_sizes[0]), pr_depth_for(&o->p, pr_sizes[1]),
	       pr_depth_for(&o->p, pr_sizes[2]),
	       o->repeat > 1 ? ", medians of repeated runs" : "");
	printf("%-22s %10s %10s %10s %10s %8s %8s %8s %8s  %s\n", "workload",
	       cname[0], cname[1], cname[2], "raw tcp", "rdma/tirpc",
	       "rdma/tcp", "rt/tirpc", "rt/tcp",
	       o->goals ? "target: rpcrdma / rdma-tirpc" : "");

	for (int i = 0; i < C_N; i++)
		v[i] = R[i].p50_us;
	goal_text(t, sizeof(t), "<=1.25x tcp, <tirpc", R, goal_p50, NULL);
	print_row("NULL p50 (us)", v, "%.1f", t);
	for (int i = 0; i < C_N; i++)
		v[i] = R[i].p99_us;
	goal_text(t, sizeof(t), "<=2x p50", R, goal_p99, NULL);
	print_row("NULL p99 (us)", v, "%.1f", t);
	for (int i = 0; i < C_N; i++)
		v[i] = R[i].mean_us;
	print_row("NULL mean (us)", v, "%.1f", "");
	for (int i = 0; i < C_N; i++)
		v[i] = R[i].cps1;
	print_row("calls/s, 1 in flight", v, "%.0f", "");
	for (int i = 0; i < C_N; i++)
		v[i] = R[i].cpsN;
	goal_text(t, sizeof(t), ">=4x tirpc@1", R, goal_pipeline, NULL);
	print_row("calls/s, 32 in flight", v, "%.0f", t);
	for (int i = 0; i < C_N; i++)
		v[i] = R[i].cpsT;
	print_row("calls/s, 32 CLIENTs", v, "%.0f", "");
	for (int dir = 0; dir < 2; dir++) {
		for (int k = 0; k < PR_NSIZES; k++) {
			char name[40];
			snprintf(name, sizeof(name), "%s %s (MiB/s)",
				 dir ? "WRITE" : "READ", size_name(pr_sizes[k]));
			for (int i = 0; i < C_N; i++)
				v[i] = dir ? R[i].wr_mibs[k] : R[i].rd_mibs[k];
			struct goal_at at = {k, dir == 1};
			t[0] = 0;
			if (pr_sizes[k] == PR_MAXSZ)
				goal_text(t, sizeof(t), ">=0.9x tcp, >=2x tirpc",
					  R, goal_large, &at);
			else if (k == 0)
				goal_text(t, sizeof(t), ">=tirpc", R,
					  goal_small, &at);
			print_row(name, v, "%.0f", t);
		}
	}
	if (o->p.quiet)
		return; /* --quiet: the table alone */
	print_copies(ps);
	printf("NULL latency histogram (%% of calls; tcp: 64 B ping-pong):\n");
	printf("  %-10s", "us");
	for (int b = 0; b < PR_NHIST; b++) {
		char lbl[16];
		if (b < PR_NHIST - 1)
			snprintf(lbl, sizeof(lbl), "<%g", pr_hist_us[b]);
		else
			snprintf(lbl, sizeof(lbl), ">=%g", pr_hist_us[b - 1]);
		printf(" %6s", lbl);
	}
	printf("\n");
	for (int i = 0; i < C_N; i++) {
		uint64_t tot = 0;
		for (int b = 0; b < PR_NHIST; b++)
			tot += R[i].hist[b];
		printf("  %-10s", cname[i]);
		for (int b = 0; b < PR_NHIST; b++)
			printf(" %6.1f",
			       tot ? 100.0 * (double)R[i].hist[b] / (double)tot
				   : 0.0);
		printf("\n");
	}
	printf("malloc: %s\n",
	       o->malloc_tune ? "tuned (mmap threshold 64 MiB, trim threshold "
				"256 MiB; --malloc default to compare)"
			      : "glibc defaults");
	printf("notes: rpcrdma: the native API; rdma-tirpc: rpcrdma through "
	       "the libtirpc adapters (clnt_rdma_create +\n"
	       "       rpcgen stubs, svc_rdma_create + a svc_run() loop).\n"
	       "       calls/s 32 in flight: rpcrdma 32 async calls on one "
	       "connection; rdma-tirpc 32 threads on\n"
	       "       one CLIENT (connection); libtirpc 32 threads x 1 CLIENT "
	       "(connection) each (its CLIENT\n"
	       "       serializes calls).  32 CLIENTs: both libtirpc "
	       "contenders as a libtirpc program does it,\n"
	       "       32 threads x 1 CLIENT (connection) each.\n"
	       "       READ/WRITE: rpcrdma with DDP, up to %u calls and %zu KiB "
	       "in flight (depth per size above);\n"
	       "       rdma-tirpc with DDP, as many calls in flight from as "
	       "many threads on one CLIENT\n"
	       "       (READ results decoded into buffers lent with "
	       "clnt_rdma_result_buffer);\n"
	       "       libtirpc (256 KiB record buffers) one call at a time "
	       "(its CLIENT serializes calls);\n"
	       "       raw tcp one stream.  Ratios: rdma = rpcrdma, rt = "
	       "rdma-tirpc, over the baseline\n"
	       "       (latency: lower is better; rates: higher).\n",
	       o->p.depth, o->p.window / 1024);
	for (int i = 0; i < C_N; i++)
		if (R[i].note[0])
			printf("note: %s\n", R[i].note);
}

static void json_num(const char *key, double v, bool comma)
{
	if (v > 0)
		printf("\"%s\": %.3f%s", key, v, comma ? ", " : "");
	else
		printf("\"%s\": null%s", key, comma ? ", " : "");
}

static void json_result(const struct pr_result *r)
{
	printf("{");
	json_num("null_p50_us", r->p50_us, true);
	json_num("null_p99_us", r->p99_us, true);
	json_num("null_mean_us", r->mean_us, true);
	printf("\"null_hist\": [");
	for (int b = 0; b < PR_NHIST; b++)
		printf("%llu%s", (unsigned long long)r->hist[b],
		       b + 1 < PR_NHIST ? ", " : "");
	printf("], ");
	json_num("calls_per_s_1", r->cps1, true);
	json_num("calls_per_s_32", r->cpsN, true);
	json_num("calls_per_s_32_clients", r->cpsT, true);
	for (int k = 0; k < PR_NSIZES; k++) {
		char key[40];
		snprintf(key, sizeof(key), "read_%zu_mibs", pr_sizes[k]);
		json_num(key, r->rd_mibs[k], true);
		snprintf(key, sizeof(key), "write_%zu_mibs", pr_sizes[k]);
		json_num(key, r->wr_mibs[k], true);
		/* Copies per payload byte; null: not measured. */
		const double cp[4] = {r->cp_rd_tx[k], r->cp_rd_rx[k],
				      r->cp_wr_tx[k], r->cp_wr_rx[k]};
		static const char *const cpk[4] = {"read_%zu_copied_tx",
			"read_%zu_copied_rx", "write_%zu_copied_tx",
			"write_%zu_copied_rx"};
		for (int j = 0; j < 4; j++) {
			snprintf(key, sizeof(key), cpk[j], pr_sizes[k]);
			if (cp[j] >= 0)
				printf("\"%s\": %.4f, ", key, cp[j]);
			else
				printf("\"%s\": null, ", key);
		}
	}
	printf("\"note\": \"");
	for (const char *s = r->note; *s; s++)
		if (*s != '"' && *s != '\\')
			putchar(*s);
	printf("\"}");
}

/* Contender c's ratios to the baselines. */
static void json_ratios(const struct pr_result *R, int c)
{
	printf("{");
	json_num("null_p50_vs_tcp", pr_ratio(R[c].p50_us, R[C_TCP].p50_us),
		 true);
	json_num("null_p50_vs_tirpc", pr_ratio(R[c].p50_us, R[C_TIRPC].p50_us),
		 true);
	json_num("calls32_vs_tirpc1", pr_ratio(R[c].cpsN, R[C_TIRPC].cps1),
		 true);
	json_num("calls32_vs_tirpc32", pr_ratio(R[c].cpsN, R[C_TIRPC].cpsN),
		 true);
	json_num("calls32_clients_vs_tirpc32",
		 pr_ratio(R[c].cpsT, R[C_TIRPC].cpsT), true);
	for (int k = 0; k < PR_NSIZES; k++) {
		char key[48];
		snprintf(key, sizeof(key), "read_%zu_vs_tcp", pr_sizes[k]);
		json_num(key, pr_ratio(R[c].rd_mibs[k], R[C_TCP].rd_mibs[k]),
			 true);
		snprintf(key, sizeof(key), "read_%zu_vs_tirpc", pr_sizes[k]);
		json_num(key, pr_ratio(R[c].rd_mibs[k], R[C_TIRPC].rd_mibs[k]),
			 true);
		snprintf(key, sizeof(key), "write_%zu_vs_tcp", pr_sizes[k]);
		json_num(key, pr_ratio(R[c].wr_mibs[k], R[C_TCP].wr_mibs[k]),
			 true);
		snprintf(key, sizeof(key), "write_%zu_vs_tirpc", pr_sizes[k]);
		json_num(key, pr_ratio(R[c].wr_mibs[k], R[C_TIRPC].wr_mibs[k]),
			 k + 1 < PR_NSIZES);
	}
	printf("}");
}

static void print_json(const struct ropts *o, const struct pass *ps, int n)
{
	printf("{\"benchmark\": \"rpc\", \"provider\": \"%s\", \"iters\": %lu, "
	       "\"mib\": %lu, \"depth\": %u, \"window\": %zu, "
	       "\"repeat\": %d, "
	       "\"malloc_tuned\": %s, \"hist_bounds_us\": [",
	       o->ro.provider ? o->ro.provider : "iwarp", o->p.iters, o->p.mib,
	       o->p.depth, o->p.window, o->repeat,
	       o->malloc_tune ? "true" : "false");
	for (int b = 0; b < PR_NHIST - 1; b++)
		printf("%g%s", pr_hist_us[b], b + 2 < PR_NHIST ? ", " : "");
	printf("], \"passes\": [");
	for (int i = 0; i < n; i++) {
		const struct pr_result *R = ps[i].r;
		printf("%s{\"pinned\": %s", i ? ", " : "",
		       ps[i].pinned ? "true" : "false");
		for (int c = 0; c < C_N; c++) {
			printf(", \"%s\": ", cname[c]);
			json_result(&R[c]);
		}
		/* "ratios": rpcrdma's (the key predates rdma-tirpc). */
		printf(", \"ratios\": ");
		json_ratios(R, C_RDMA);
		printf(", \"ratios_rdma_tirpc\": ");
		json_ratios(R, C_RTIRPC);
		printf("}");
	}
	printf("]}\n");
}

/* ------------------------------------------------------------------ */
/* Passes                                                               */

static cpu_set_t orig_mask;

static int set_pinned(const struct ropts *o, bool pinned)
{
	if (pinned) {
		if (perf_pin_process(o->cpu) < 0) {
			perror("rpcrdma-perf: sched_setaffinity");
			return -1;
		}
		return 0;
	}
	/* Threads created from now on inherit the caller's mask. */
	return sched_setaffinity(0, sizeof(orig_mask), &orig_mask);
}

/* Each contender's server lives only while its client runs, so idle
 * threads of the others never compete for the CPU. */
static bool svc_stats_rdma(void *arg, struct rpcrdma_stats *s)
{
	return rpcrdma_svc_stats(arg, s) == 0;
}

struct tirpc_srv {
	const struct pr_clnt_ops *ops;
	SVCXPRT *x;
};

static bool svc_stats_tirpc(void *arg, struct rpcrdma_stats *s)
{
	const struct tirpc_srv *t = arg;
	return t->ops->server_stats(t->x, s);
}

static int run_pass_local(const struct ropts *o, struct pass *ps)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fails = 0;
	struct pr_params p = o->p;

	if (pr_parse_addr(o->addr ? o->addr : "127.0.0.1", 0, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf: bad address '%s'\n", o->addr);
		return -1;
	}

	struct pr_tcp_server *ts;
	if (!(o->who & 1u << C_TCP)) {
		/* not asked for */
	} else if (pr_tcp_server_start(&ss, len, &ts) == 0) {
		struct sockaddr_storage a = ss;
		pr_set_port(&a, pr_tcp_server_port(ts));
		ps->ran[C_TCP] = true;
		fails += pr_tcp_client_run(&a, len, &o->p, &ps->r[C_TCP]) < 0;
		pr_tcp_server_stop(ts);
	} else {
		fails++;
	}

	for (int k = 0; k < C_N; k++) {
		const struct pr_clnt_ops *ops = cops[k];
		if (!ops || !(o->who & 1u << k))
			continue;
		struct sockaddr_storage a = ss;
		pr_set_port(&a, 0);
		SVCXPRT *x = ops->server_start(&a, len, &o->ro);
		if (!x) {
			fails++;
			continue;
		}
		pr_set_port(&a, ops->server_port(x));
		ps->ran[k] = true;
		/* The rdma-tirpc server's counters (libtirpc has none). */
		struct tirpc_srv ts_ = {ops, x};
		p.srv_stats = ops->server_stats ? svc_stats_tirpc : NULL;
		p.srv_arg = &ts_;
		fails += pr_clnt_run(ops, &a, len, &o->ro, &p, &ps->r[k]) < 0;
		pr_svc_stop(x);
	}

	char listen[96], target[96];
	struct sockaddr_storage a = ss;
	pr_set_port(&a, 0);
	pr_addr_string(&a, listen, sizeof(listen));
	struct rpcrdma_svc *rs;
	if (!(o->who & 1u << C_RDMA)) {
		/* not asked for */
	} else if (rdma_server_start(listen, &o->ro, &rs) == 0) {
		pr_set_port(&a, rpcrdma_svc_port(rs));
		pr_addr_string(&a, target, sizeof(target));
		ps->ran[C_RDMA] = true;
		p.srv_stats = svc_stats_rdma;
		p.srv_arg = rs;
		fails += rdma_client_run(target, &o->ro, &p,
					 &ps->r[C_RDMA]) < 0;
		rpcrdma_svc_destroy(rs);
	} else {
		fails++;
	}
	return fails ? -1 : 0;
}

static int run_pass_remote(const struct ropts *o, struct pass *ps)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fails = 0;

	if (!o->addr || pr_parse_addr(o->addr, RPCRDMA_DEFAULT_PORT, &ss,
				      &len) < 0) {
		fprintf(stderr, "rpcrdma-perf: bad server address '%s'\n",
			o->addr ? o->addr : "");
		return -1;
	}
	uint16_t port = pr_get_port(&ss);
	struct sockaddr_storage a = ss;

	if (o->who & 1u << C_TCP) {
		pr_set_port(&a, (uint16_t)(port + cport[C_TCP]));
		ps->ran[C_TCP] = true;
		fails += pr_tcp_client_run(&a, len, &o->p,
					   &ps->r[C_TCP]) < 0;
	}
	for (int k = 0; k < C_N; k++) {
		if (!cops[k] || !(o->who & 1u << k))
			continue;
		pr_set_port(&a, (uint16_t)(port + cport[k]));
		ps->ran[k] = true;
		fails += pr_clnt_run(cops[k], &a, len, &o->ro, &o->p,
				     &ps->r[k]) < 0;
	}
	if (o->who & 1u << C_RDMA) {
		char target[96];
		pr_addr_string(&ss, target, sizeof(target));
		ps->ran[C_RDMA] = true;
		fails += rdma_client_run(target, &o->ro, &o->p,
					 &ps->r[C_RDMA]) < 0;
	}
	return fails ? -1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of the measured (positive) values; 0 when none was. */
static double median(const double *v, int n)
{
	double t[MAX_REPEAT];
	int k = 0;
	for (int i = 0; i < n; i++)
		if (v[i] > 0)
			t[k++] = v[i];
	if (!k)
		return 0;
	qsort(t, (size_t)k, sizeof(*t), cmp_double);
	return k % 2 ? t[k / 2] : (t[k / 2 - 1] + t[k / 2]) / 2;
}

/* Every number of out is the median over the n runs; histograms add up. */
static void merge_runs(const struct pass *runs, int n, struct pass *out)
{
	double v[MAX_REPEAT];
	*out = runs[0];
#define MED(field)                                                         \
	do {                                                               \
		for (int i = 0; i < n; i++)                                \
			v[i] = runs[i].field;                              \
		out->field = median(v, n);                                 \
	} while (0)
	for (int c = 0; c < C_N; c++) {
		MED(r[c].p50_us);
		MED(r[c].p99_us);
		MED(r[c].mean_us);
		MED(r[c].cps1);
		MED(r[c].cpsN);
		MED(r[c].cpsT);
		for (int k = 0; k < PR_NSIZES; k++) {
			MED(r[c].rd_mibs[k]);
			MED(r[c].wr_mibs[k]);
		}
		/* Copies: the most any run saw (0 is a measurement). */
		for (int k = 0; k < PR_NSIZES; k++)
			for (int i = 1; i < n; i++) {
				const struct pr_result *a = &runs[i].r[c];
				struct pr_result *m = &out->r[c];
				m->cp_wr_tx[k] = fmax(m->cp_wr_tx[k], a->cp_wr_tx[k]);
				m->cp_wr_rx[k] = fmax(m->cp_wr_rx[k], a->cp_wr_rx[k]);
				m->cp_rd_tx[k] = fmax(m->cp_rd_tx[k], a->cp_rd_tx[k]);
				m->cp_rd_rx[k] = fmax(m->cp_rd_rx[k], a->cp_rd_rx[k]);
			}
		for (int b = 0; b < PR_NHIST; b++)
			for (int i = 1; i < n; i++)
				out->r[c].hist[b] += runs[i].r[c].hist[b];
		for (int i = 1; i < n && !out->r[c].note[0]; i++)
			memcpy(out->r[c].note, runs[i].r[c].note,
			       sizeof(out->r[c].note));
	}
#undef MED
}

static int run_passes(const struct ropts *o, bool local)
{
	static struct pass runs[2][MAX_REPEAT];
	struct pass ps[2];
	int n = 0, rc = 0;
	memset(ps, 0, sizeof(ps));
	memset(runs, 0, sizeof(runs));
	sched_getaffinity(0, sizeof(orig_mask), &orig_mask);

	/* Repeats alternate between the pinnings, so a burst of load from
	 * elsewhere on the machine spreads over both. */
	for (int rep = 0; rep < o->repeat; rep++) {
		for (int k = 0; k < 2; k++) {
			bool pinned = k == 1;
			if ((pinned && o->pin == PIN_NO) ||
			    (!pinned && o->pin == PIN_YES))
				continue;
			if (set_pinned(o, pinned) < 0)
				return 1;
			static char label[48];
			snprintf(label, sizeof(label), "[%s %d/%d] ",
				 pinned ? "pinned" : "unpinned", rep + 1,
				 o->repeat);
			pass_label = label;
			runs[k][rep].pinned = pinned;
			for (int c = 0; c < C_N; c++)
				pr_cp_clear(&runs[k][rep].r[c]);
			if ((local ? run_pass_local(o, &runs[k][rep])
				   : run_pass_remote(o, &runs[k][rep])) < 0)
				rc = 1;
		}
	}
	set_pinned(o, false);
	for (int k = 0; k < 2; k++) {
		if ((k == 1 && o->pin == PIN_NO) || (k == 0 && o->pin == PIN_YES))
			continue;
		merge_runs(runs[k], o->repeat, &ps[n++]);
	}
	if (o->json) {
		print_json(o, ps, n);
	} else {
		for (int i = 0; i < n; i++)
			print_pass(o, &ps[i]);
	}
	fflush(stdout);
	return rc;
}

int perf_cmd_rpc(int argc, char **argv)
{
	struct ropts o;
	if (parse_opts(argc, argv, &o) < 0) {
		rpc_usage("rpc");
		return 2;
	}
	return run_passes(&o, true);
}

int perf_cmd_client(int argc, char **argv)
{
	struct ropts o;
	if (parse_opts(argc, argv, &o) < 0 || !o.addr) {
		rpc_usage("client");
		return 2;
	}
	if (o.pin == PIN_BOTH) {
		fprintf(stderr, "rpcrdma-perf: client: --pin=both needs a "
				"server pinned each way; run twice\n");
		return 2;
	}
	return run_passes(&o, false);
}

/* The page census to path, whole or not at all: written beside it and
 * renamed, so a reader waiting for path never sees half of it. */
static void census_write(const char *path)
{
	if (!path)
		return;
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.part", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		perror("rpcrdma-perf server: census");
		return;
	}
	rpcrdma_pages_census_print(f);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}

int perf_cmd_server(int argc, char **argv)
{
	struct ropts o;
	if (parse_opts(argc, argv, &o) < 0 || !o.addr || o.pin == PIN_BOTH) {
		rpc_usage("server");
		return 2;
	}
	struct sockaddr_storage ss;
	socklen_t len;
	if (pr_parse_addr(o.addr, RPCRDMA_DEFAULT_PORT, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf: bad address '%s'\n", o.addr);
		return 2;
	}
	if (o.pin == PIN_YES && perf_pin_process(o.cpu) < 0) {
		perror("rpcrdma-perf: sched_setaffinity");
		return 1;
	}
	/* Block the signals before any thread starts, so every thread
	 * inherits the mask and sigwait() below is the one that gets them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* Every connection's blocks from the start (rpcrdma-perf load
	 * --census asks for the census while its connections idle). */
	if (o.census)
		rpcrdma_pages_census_start();

	uint16_t port = pr_get_port(&ss);
	char listen[96];
	pr_addr_string(&ss, listen, sizeof(listen));
	struct rpcrdma_svc *rs = NULL;
	SVCXPRT *tx[C_N] = {NULL};
	struct pr_tcp_server *ts = NULL;
	struct sockaddr_storage a = ss;
	int rc = 1;
	if (rdma_server_start(listen, &o.ro, &rs) < 0)
		goto out;
	for (int k = 0; k < C_N; k++) {
		if (!cops[k])
			continue;
		pr_set_port(&a, (uint16_t)(port + cport[k]));
		if (!(tx[k] = cops[k]->server_start(&a, len, &o.ro)))
			goto out;
	}
	pr_set_port(&a, (uint16_t)(port + cport[C_TCP]));
	if (pr_tcp_server_start(&a, len, &ts) < 0)
		goto out;
	printf("rpcrdma-perf server: rpcrdma (%s) on %s, libtirpc on port %u, "
	       "raw tcp on port %u, rdma-tirpc on port %u%s; Ctrl-C stops\n",
	       o.ro.provider ? o.ro.provider : "iwarp", listen,
	       (unsigned)(port + cport[C_TIRPC]), (unsigned)(port + cport[C_TCP]),
	       (unsigned)(port + cport[C_RTIRPC]),
	       o.pin == PIN_YES ? " (pinned)" : "");
	fflush(stdout);
	int sig;
	while (sigwait(&set, &sig) == 0 && sig == SIGUSR2)
		census_write(o.census);
	rc = 0;
out:
	if (ts)
		pr_tcp_server_stop(ts);
	for (int k = 0; k < C_N; k++)
		pr_svc_stop(tx[k]);
	if (rs)
		rpcrdma_svc_destroy(rs);
	return rc;
}
