/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * blockstore_client: drives the example service and prints what happened
 * on the wire (the report of `make demo`).
 *
 *   blockstore_client [--provider iwarp|verbs] [--nulls N]
 *                     [--tcp HOST:PORT] HOST[:PORT]
 *
 * rpcgen's client stubs, unedited; the RDMA-specific lines are
 * clnt_rdma_create(), the Upper-Layer Binding (clnt_rdma_set_ulb) and the
 * callback registration.  --tcp: the same NULL and 1 MiB WRITE / READ
 * measurements over libtirpc's TCP transport to the server's baseline
 * (blockstore_server --tcp-listen), printed next to the RDMA ones.  Exit
 * status 0 only when every check passed.
 */
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>
#include <rpcrdma/tirpc.h>

#include "blockstore.h"
#include "blockstore_cb.h"
#include "tcp_baseline.h"

#define MiB (1024u * 1024u)

static int failures;
static uint64_t bytes_sent, bytes_received;
static unsigned calls;

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "blockstore_client: FAIL: %s\n", what);
		failures++;
	}
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static u_int fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* 1 MiB WRITE / READ pairs timed; the median is reported. */
#define REPS 5

/* What one transport measured. */
struct measured {
	double null_p50, null_p99; /* us */
	double write_ms, read_ms;  /* medians of REPS */
};

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* NULL round trips, then REPS times a 1 MiB WRITE (over RDMA: a Read
 * chunk) and a READ of it back (a Write chunk), each checked.  false
 * when a call failed. */
static bool measure(CLIENT *c, const char *what, int nulls, char *block,
		    struct measured *m)
{
	double *lat = calloc((size_t)nulls, sizeof(*lat));
	char dummy;
	bool ok = lat != NULL;
	for (int i = 0; ok && i < nulls; i++) {
		double t0 = now_us();
		enum clnt_stat st = bs_null_1(NULL, &dummy, c);
		lat[i] = now_us() - t0;
		calls++;
		if (st != RPC_SUCCESS) {
			fprintf(stderr, "blockstore_client: %s: ", what);
			clnt_perror(c, "BS_NULL");
			ok = false;
		}
	}
	if (ok) {
		qsort(lat, (size_t)nulls, sizeof(*lat), cmp_double);
		m->null_p50 = lat[nulls / 2];
		m->null_p99 = lat[(nulls * 99) / 100];
	}
	free(lat);

	double tw[REPS], tr[REPS];
	for (int i = 0; ok && i < REPS; i++) {
		bs_write_args wa = { .id = 7, .data = { MiB, block } };
		bs_write_res wr;
		memset(&wr, 0, sizeof(wr));
		tw[i] = now_us();
		enum clnt_stat st = bs_write_1(&wa, &wr, c);
		tw[i] = now_us() - tw[i];
		calls++;
		if (st != RPC_SUCCESS) {
			fprintf(stderr, "blockstore_client: %s: ", what);
			clnt_perror(c, "BS_WRITE");
		}
		ok = st == RPC_SUCCESS && wr.status == 0 && wr.count == MiB &&
		     wr.checksum == fnv1a(block, MiB);
		check(ok, "BS_WRITE of 1 MiB arrived intact");
		bytes_sent += MiB;

		bs_read_args ra = { .id = 7, .count = MiB };
		bs_read_res rr;
		memset(&rr, 0, sizeof(rr));
		tr[i] = now_us();
		st = bs_read_1(&ra, &rr, c);
		tr[i] = now_us() - tr[i];
		calls++;
		if (st != RPC_SUCCESS) {
			fprintf(stderr, "blockstore_client: %s: ", what);
			clnt_perror(c, "BS_READ");
		}
		ok = ok && st == RPC_SUCCESS && rr.status == 0 &&
		     rr.bs_read_res_u.data.bs_data_len == MiB &&
		     memcmp(rr.bs_read_res_u.data.bs_data_val, block, MiB) == 0;
		check(ok, "BS_READ of 1 MiB returned the bytes written");
		bytes_received += MiB;
		if (st == RPC_SUCCESS)
			clnt_freeres(c, (xdrproc_t)xdr_bs_read_res, (caddr_t)&rr);
	}
	if (ok) {
		m->write_ms = median(tw, REPS) / 1e3;
		m->read_ms = median(tr, REPS) / 1e3;
	}
	return ok;
}

/* The version the connection should have come out at, given what we
 * asked (docs/v2.md): v1-only and v2-only are what they say; preferring
 * v2 ends in v2 unless the server answered the v2 opener with ERR_VERS or
 * not at all (then the client fell back to v1 and says so). */
static bool version_as_asked(unsigned asked, const struct rpcrdma_stats *s)
{
	switch (asked) {
	case RPCRDMA_V1_ONLY:
		return s->version == 1;
	case RPCRDMA_V2_ONLY:
		return s->version == 2;
	default:
		return s->version == 2 || (s->version == 1 && s->peer_v1_only);
	}
}

/* One row of the RDMA / TCP table for a 1 MiB transfer taking ms (TCP
 * column left empty when tcp_ms is 0). */
static void print_mib_row(const char *what, double rdma_ms, double tcp_ms)
{
	char col[64];
	snprintf(col, sizeof(col), "%.2f ms (%.0f MiB/s)", rdma_ms,
		 rdma_ms > 0 ? 1e3 / rdma_ms : 0.0);
	printf("%-22s%-28s", what, col);
	if (tcp_ms > 0)
		printf("%.2f ms (%.0f MiB/s)", tcp_ms, 1e3 / tcp_ms);
	printf("\n");
}

static const char *versions_name(unsigned v)
{
	return v == RPCRDMA_V1_ONLY ? "version 1 only" :
	       v == RPCRDMA_V2_ONLY ? "version 2 only" : "version 2, else 1";
}

/* ---- the callback program, served on our own connection ---- */
static atomic_int notified;
static char notify_msg[256];
static uint64_t notify_size;

bool_t bscb_null_1_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t bscb_notify_1_svc(bs_notify *n, int *r, struct svc_req *rq)
{
	(void)rq;
	snprintf(notify_msg, sizeof(notify_msg), "%s", n->msg ? n->msg : "");
	notify_size = n->size;
	atomic_fetch_add(&notified, 1);
	*r = 0;
	return TRUE;
}

int blockstore_cb_1_freeresult(SVCXPRT *t, xdrproc_t xdr_result, caddr_t result)
{
	(void)t;
	xdr_free(xdr_result, result);
	return 1;
}

void blockstore_cb_1(struct svc_req *rqstp, SVCXPRT *transp); /* rpcgen's */

int main(int argc, char **argv)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	int nulls = 2000;
	const char *tcp = NULL;
	static const struct option lo[] = {
		{ "provider", required_argument, NULL, 'p' },
		{ "nulls", required_argument, NULL, 'n' },
		{ "tcp", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "p:n:t:", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o.provider = optarg; break;
		case 'n': nulls = atoi(optarg); break;
		case 't': tcp = optarg; break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || nulls < 1) {
usage:
		fprintf(stderr, "usage: %s [--provider P] [--nulls N] [--tcp HOST:PORT] "
			"HOST[:PORT]\n", argv[0]);
		return 2;
	}
	const char *host = argv[optind];

	CLIENT *c = clnt_rdma_create(host, BLOCKSTORE, BS_V1, &o);
	if (!c) {
		clnt_pcreateerror("blockstore_client: clnt_rdma_create");
		return 1;
	}
	auth_destroy(c->cl_auth);
	c->cl_auth = authunix_create_default();
	/* The program's Upper-Layer Binding (RFC 8166 §6). */
	struct rpcrdma_ulb_proc ulb[] = {
		{ .proc = BS_WRITE, .ddp_arg = true },
		{ .proc = BS_READ, .ddp_result_max = BS_MAXBLOCK },
		{ .proc = BS_LIST, .reply_max = 4 * MiB },
	};
	check(clnt_rdma_set_ulb(c, ulb, 3), "clnt_rdma_set_ulb");
	check(clnt_rdma_register_callback(c, BLOCKSTORE_CB, BS_CB_V1, blockstore_cb_1),
	      "clnt_rdma_register_callback");

	/* 1. NULL round trips, 2. WRITE 1 MiB (Read chunk) and 3. READ it
	 * back (Write chunk). */
	char *block = malloc(MiB);
	for (u_int i = 0; i < MiB; i++)
		block[i] = (char)((i * 2654435761u) >> 13);
	struct measured rdma = { 0 };
	check(measure(c, "RPC-over-RDMA", nulls, block, &rdma),
	      "NULL, WRITE and READ over RPC-over-RDMA");

	/* 4. LIST: a reply larger than any inline threshold. */
	bs_list_args la = { .count = 3000 };
	bs_list_res lr;
	memset(&lr, 0, sizeof(lr));
	enum clnt_stat st = bs_list_1(&la, &lr, c);
	calls++;
	unsigned n = 0;
	bool names_ok = true;
	for (bs_entry *e = lr.entries; e; e = e->next) {
		n++;
		if (e->id >= 1000000 &&
		    e->checksum != fnv1a(e->name, strlen(e->name)))
			names_ok = false;
	}
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_LIST");
	check(st == RPC_SUCCESS && n == 3000 && names_ok,
	      "BS_LIST returned 3000 intact entries");
	clnt_freeres(c, (xdrproc_t)xdr_bs_list_res, (caddr_t)&lr);

	/* 5. TAG: arguments larger than any inline threshold, no DDP item. */
	size_t mlen = 64 * 1024;
	char *meta = malloc(mlen);
	for (size_t i = 0; i < mlen; i++)
		meta[i] = (char)(i * 7 + 3);
	bs_tag_args ta = { .id = 7, .note = "a Long Call", .meta = { (u_int)mlen, meta } };
	bs_tag_res tg;
	memset(&tg, 0, sizeof(tg));
	st = bs_tag_1(&ta, &tg, c);
	calls++;
	bytes_sent += mlen;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_TAG");
	check(st == RPC_SUCCESS && tg.meta_len == mlen &&
		      tg.checksum == fnv1a(meta, mlen),
	      "BS_TAG with 64 KiB of inline metadata arrived intact");
	free(meta);

	/* 6. SUBSCRIBE: the server calls us back on this connection. */
	u_int id = 7;
	int sr = -1;
	st = bs_subscribe_1(&id, &sr, c);
	calls++;
	if (st != RPC_SUCCESS)
		clnt_perror(c, "BS_SUBSCRIBE");
	check(st == RPC_SUCCESS && sr == 0 && atomic_load(&notified) == 1 &&
		      notify_size == MiB,
	      "the server's BSCB_NOTIFY callback arrived on our connection");

	/* 7. An RPC-level error as libtirpc reports it: a procedure the
	 * server does not have. */
	struct timeval tv = { 10, 0 };
	st = clnt_call(c, 99, (xdrproc_t)xdr_void, NULL, (xdrproc_t)xdr_void,
		       NULL, tv);
	calls++;
	check(st == RPC_PROCUNAVAIL, "procedure 99 answered PROC_UNAVAIL");
	enum clnt_stat st_proc = st;

	/* Arguments the server cannot decode: svc_getargs fails and the
	 * dispatch answers GARBAGE_ARGS, which libtirpc reports as
	 * RPC_CANTDECODEARGS. */
	u_int junk = 5; /* a BS_WRITE needs id and a data length at least */
	st = clnt_call(c, BS_WRITE, (xdrproc_t)xdr_u_int, (caddr_t)&junk,
		       (xdrproc_t)xdr_void, NULL, tv);
	calls++;
	check(st == RPC_CANTDECODEARGS, "undecodable arguments answered GARBAGE_ARGS");
	enum clnt_stat st_garbage = st;

	/* A version the server does not have: PROG_MISMATCH with the range
	 * it has (RFC 5531 §9), from libtirpc's own svc_getreq. */
	enum clnt_stat st_vers = RPC_SUCCESS, st_prog = RPC_SUCCESS;
	struct rpc_err e;
	memset(&e, 0, sizeof(e));
	CLIENT *c2 = clnt_rdma_create(host, BLOCKSTORE, BS_V1 + 1, &o);
	if (c2) {
		st_vers = clnt_call(c2, 0, (xdrproc_t)xdr_void, NULL,
				    (xdrproc_t)xdr_void, NULL, tv);
		clnt_geterr(c2, &e);
		calls++;
		clnt_destroy(c2);
	}
	check(st_vers == RPC_PROGVERSMISMATCH && e.re_vers.low == BS_V1 &&
		      e.re_vers.high == BS_V1,
	      "version 2 answered PROG_MISMATCH (1..1)");
	/* A program the server does not have: PROG_UNAVAIL. */
	CLIENT *c3 = clnt_rdma_create(host, BLOCKSTORE + 0x100, BS_V1, &o);
	if (c3) {
		st_prog = clnt_call(c3, 0, (xdrproc_t)xdr_void, NULL,
				    (xdrproc_t)xdr_void, NULL, tv);
		calls++;
		clnt_destroy(c3);
	}
	check(st_prog == RPC_PROGUNAVAIL, "an unknown program answered PROG_UNAVAIL");

	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	check(clnt_rdma_stats(c, &s), "clnt_rdma_stats");
	check(version_as_asked(o.versions, &s),
	      "the connection's RPC-over-RDMA version is the one asked for");
	unsigned rdma_calls = calls;
	uint64_t rdma_sent = bytes_sent, rdma_received = bytes_received;

	/* The same program over libtirpc/TCP, in this run. */
	struct measured base = { 0 };
	bool have_base = false;
	if (tcp) {
		CLIENT *t = tcp_baseline_client(tcp, BLOCKSTORE, BS_V1);
		check(t != NULL, "libtirpc/TCP client of the baseline");
		if (t) {
			have_base = measure(t, "libtirpc/TCP", nulls, block, &base);
			check(have_base, "NULL, WRITE and READ over libtirpc/TCP");
			clnt_destroy(t);
		}
	}

	printf("\n== rpcrdma demo: blockstore over RPC-over-RDMA version %u (provider %s) ==\n",
	       (unsigned)s.version, o.provider ? o.provider : "iwarp");
	printf("protocol version      %u, negotiated on the connection (asked: %s)%s\n",
	       (unsigned)s.version, versions_name(o.versions),
	       s.version == 1 && s.peer_v1_only ? "; the server is v1-only" : "");
	printf("calls made            %u (NULL x%d, WRITE x%d, READ x%d, LIST, TAG, SUBSCRIBE,"
	       " 4 errors)\n", rdma_calls, nulls, REPS, REPS);
	printf("%-22s%-28s%s\n", "", "RPC-over-RDMA", have_base ? "libtirpc/TCP" : "");
	char col[64];
	snprintf(col, sizeof(col), "%.1f / %.1f us", rdma.null_p50, rdma.null_p99);
	printf("%-22s%-28s", "NULL latency p50/p99", col);
	if (have_base)
		printf("%.1f / %.1f us", base.null_p50, base.null_p99);
	printf("\n");
	print_mib_row("1 MiB WRITE", rdma.write_ms, have_base ? base.write_ms : 0);
	print_mib_row("1 MiB READ", rdma.read_ms, have_base ? base.read_ms : 0);
	printf("%-22s%s\n", "", have_base ?
	       "(medians of this run, same program and server, loopback; TCP with\n"
	       "                      256 KiB libtirpc records; a benchmark: rpcrdma-perf)" :
	       "(no libtirpc/TCP baseline: run with --tcp)");
	printf("bytes moved           %.2f MiB sent, %.2f MiB received in payloads\n",
	       (double)rdma_sent / MiB, (double)rdma_received / MiB);
	printf("message shapes sent   %llu Short, %llu Chunked (Read chunk), %llu Long Call\n",
	       (unsigned long long)s.short_calls, (unsigned long long)s.chunked_calls,
	       (unsigned long long)s.long_calls);
	printf("replies received      %llu inline, %llu Long Reply (Reply chunk)\n",
	       (unsigned long long)s.replies_inline, (unsigned long long)s.replies_long);
	printf("credits granted       %u\n", s.credits_granted);
	printf("callback received     %s (\"%s\", size %llu)\n",
	       atomic_load(&notified) ? "yes" : "no", notify_msg,
	       (unsigned long long)notify_size);
	printf("RPC errors            proc 99 -> %s; bad args -> %s;\n"
	       "                      version 2 -> %s (%u..%u); program +0x100 -> %s\n",
	       clnt_sperrno(st_proc), clnt_sperrno(st_garbage), clnt_sperrno(st_vers),
	       (unsigned)e.re_vers.low, (unsigned)e.re_vers.high, clnt_sperrno(st_prog));
	check(s.chunked_calls >= 1, "a Chunked call (Read chunk) was sent");
	check(s.long_calls >= 1, "a Long Call was sent");
	check(s.replies_long >= 1, "a Long Reply was received");
	printf("result                %s\n", failures ? "FAILED" : "all checks passed");

	free(block);
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	return failures ? 1 : 0;
}
