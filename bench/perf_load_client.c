/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf load: one client process (forked by perf_load.c).
 *
 * It opens its connections (a few connecting threads), makes one NULL
 * call on each (the first call, where a v2 opener goes out), reports
 * READY, waits for the parent's go, keeps `depth` calls in flight on
 * every connection for the duration, waits for the calls still out
 * (at most drain seconds), reports DONE, and closes everything when the
 * parent says so.
 *
 * How calls are kept in flight, by contender:
 *   rpcrdma      the native asynchronous API: `depth` calls per
 *                connection, the next one started from the completion
 *                callback of the last (on the client's own threads); no
 *                thread of ours per connection.  Arguments are lent
 *                (opts.borrow_args), as a program that cares would.
 *   rdma-tirpc   clnt_rdma_create + the rpcgen stubs of perf_prog.x
 *                (with the Upper-Layer Binding: WRITE data in a Read
 *                chunk, READ results into a buffer lent with
 *                clnt_rdma_result_buffer), `depth` threads per CLIENT
 *                (ours takes concurrent calls)
 *   libtirpc     clnt_vc_create over TCP, `depth` threads per CLIENT:
 *                libtirpc's CLIENT has one call out at a time, so its
 *                threads queue on it (depth 1 is the fair comparison)
 * With --reopen N, each connection is closed and opened again after N
 * calls, by a thread of its own (tirpc contenders: depth 1).
 *
 * Counting: a call started is ended exactly once, well (ok) or with an
 * error (by kind); one not ended within the drain time is `never`
 * (which must stay 0).  Only calls that ended well within the duration
 * make the rate; latencies are of every call that ended well.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "perf.h"
#include "perf_load.h"
#include "perf_prog.h"
#include "perf_rpc.h"
#include "perf_tirpc.h"
#include "rpcrdma/rpcrdma.h"
#include "rpcrdma/tirpc.h"
#include "wire/xdr.h"

/* Bytes WRITE calls send (never changed: every call lends it). */
static uint8_t wbuf[PR_MAXSZ];

/* ------------------------------------------------------------------ */
/* The process's counters                                               */

static struct {
	const struct ld_group *g;
	struct ld_report rep;        /* counters below folded in at the end */
	pthread_mutex_t mu;          /* rep's error tables, cv */
	pthread_cond_t cv;           /* a connection went idle, a thread
					ended */
	atomic_int phase;            /* 0 connecting, 1 load, 2 stopping */
	uint64_t deadline_ns;        /* end of the load */
	atomic_uint_fast64_t issued, ok, failed, in_window, bytes;
	atomic_uint_fast64_t conn_ok, conn_failed;
	atomic_uint_fast64_t fallbacks, reconnects;
	atomic_int busy;             /* connections (native) or threads
					(tirpc) with calls out */
	struct rpcrdma_opts o;
} P;

static void hist_add(uint64_t *h, uint64_t ns)
{
	__atomic_fetch_add(&h[ld_bucket(ns)], 1, __ATOMIC_RELAXED);
}

static void err_add(struct ld_errs *e, int code)
{
	pthread_mutex_lock(&P.mu);
	ld_err_add(e, code, 1);
	pthread_mutex_unlock(&P.mu);
}

/* A call that ended (well: status 0). */
static void call_ended(int status, int code, uint64_t t0, uint32_t bytes)
{
	uint64_t now = perf_now_ns();
	if (status == 0) {
		atomic_fetch_add(&P.ok, 1);
		hist_add(P.rep.hist, now - t0);
		if (now <= P.deadline_ns) {
			atomic_fetch_add(&P.in_window, 1);
			atomic_fetch_add(&P.bytes, bytes);
		}
	} else {
		atomic_fetch_add(&P.failed, 1);
		err_add(&P.rep.err, code);
	}
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: every caller its own state, no lock. */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ull;
}

static const struct ld_mix_ent *mix_pick(uint64_t *rng)
{
	const struct ld_mix *m = &P.g->mix;
	unsigned r = (unsigned)(rng_next(rng) >> 33) % m->total;
	for (unsigned i = 0; i < m->n; i++) {
		if (r < m->e[i].weight)
			return &m->e[i];
		r -= m->e[i].weight;
	}
	return &m->e[m->n - 1];
}

static bool loading(void)
{
	return atomic_load(&P.phase) == 1 && perf_now_ns() < P.deadline_ns;
}

/* ------------------------------------------------------------------ */
/* rpcrdma, the native asynchronous API                                 */

struct nconn;
struct ncall {
	struct nconn *nc;
	uint64_t t0, rng;
	uint32_t bytes;
	uint8_t hdr[4];
	size_t max;
	struct rpcrdma_iov args[2];
	struct rpcrdma_call call;
};

struct nconn {
	struct rpcrdma_clnt *c;
	unsigned idx;
	atomic_uint out;             /* calls of this connection out */
	atomic_uint started;         /* since it was opened (--reopen) */
	struct ncall *calls;
	bool stopped;                /* a call could not start: no more */
};

static void ncall_cb(void *arg, struct rpcrdma_reply *rep);

/* Starts ncall's next call; false when it did not start (counted). */
static bool ncall_issue(struct ncall *k)
{
	struct nconn *nc = k->nc;
	const struct ld_mix_ent *m = mix_pick(&k->rng);
	memset(&k->call, 0, sizeof(k->call));
	k->bytes = 0;
	if (m->op != LD_NULL) {
		rpcrdma_be32_put(k->hdr, m->size);
		k->args[0] = (struct rpcrdma_iov){k->hdr, 4, false};
		k->call.args = k->args;
		k->bytes = m->size;
	}
	if (m->op == LD_WRITE) {
		k->args[1] = (struct rpcrdma_iov){wbuf, m->size, true};
		k->call.proc = PR_WRITE;
		k->call.nargs = 2;
	} else if (m->op == LD_READ) {
		k->max = m->size;
		k->call.proc = PR_READ;
		k->call.nargs = 1;
		k->call.ddp_result_max = &k->max;
		k->call.nddp_results = 1;
	}
	atomic_fetch_add(&P.issued, 1);
	atomic_fetch_add(&nc->started, 1);
	k->t0 = perf_now_ns();
	int rc = rpcrdma_clnt_call_async(nc->c, &k->call, ncall_cb, k);
	if (rc == 0)
		return true;
	atomic_fetch_add(&P.failed, 1);
	err_add(&P.rep.err, rc);
	return false;
}

/* One call of nc is over for good: the connection may now be idle. */
static void nconn_put(struct nconn *nc)
{
	if (atomic_fetch_sub(&nc->out, 1) == 1) {
		pthread_mutex_lock(&P.mu);
		atomic_fetch_sub(&P.busy, 1);
		pthread_cond_broadcast(&P.cv);
		pthread_mutex_unlock(&P.mu);
	}
}

static void ncall_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct ncall *k = arg;
	struct nconn *nc = k->nc;
	int st = rep->status;
	if (st == 0 && k->call.proc == PR_READ &&
	    (rep->nddp != 1 || rep->ddp_len[0] != k->max))
		st = RPCRDMA_ERR_RPC_BAD_REPLY; /* the data did not come */
	rpcrdma_reply_free(rep);
	call_ended(st, st, k->t0, k->bytes);
	/* The next call from here, while the load lasts and this
	 * connection has calls left before it is reopened. */
	unsigned lim = P.g->reopen;
	if (st == 0 && loading() && (!lim || atomic_load(&nc->started) < lim) &&
	    ncall_issue(k))
		return;
	nconn_put(nc);
}

/* A connection about to close: its version fallbacks and reconnections
 * (of a CLIENT t or a native client n). */
static void add_counters(CLIENT *t, struct rpcrdma_clnt *n)
{
	struct rpcrdma_stats s;
	memset(&s, 0, sizeof(s));
	if (t)
		clnt_rdma_stats(t, &s);
	else
		rpcrdma_clnt_stats(n, &s);
	atomic_fetch_add(&P.fallbacks, s.vers_fallbacks);
	atomic_fetch_add(&P.reconnects, s.reconnects);
}

static int native_open(struct nconn *nc)
{
	uint64_t t0 = perf_now_ns();
	int rc = rpcrdma_clnt_create(P.g->target, PR_PROG, PR_VERS, &P.o,
				     &nc->c);
	if (rc < 0) {
		nc->c = NULL;
		atomic_fetch_add(&P.conn_failed, 1);
		err_add(&P.rep.conn_err, rc);
		return rc;
	}
	hist_add(P.rep.conn_hist, perf_now_ns() - t0);
	atomic_fetch_add(&P.conn_ok, 1);
	atomic_store(&nc->started, 0);
	return 0;
}

static void native_close(struct nconn *nc)
{
	if (!nc->c)
		return;
	add_counters(NULL, nc->c);
	rpcrdma_clnt_destroy(nc->c);
	nc->c = NULL;
}

/* The first `depth` calls of a connection; the callbacks go on. */
static void native_start(struct nconn *nc)
{
	if (!nc->c || nc->stopped)
		return;
	unsigned d = P.g->depth;
	if (P.g->reopen && P.g->reopen < d)
		d = P.g->reopen;
	atomic_fetch_add(&nc->out, 1); /* holds it busy while starting */
	pthread_mutex_lock(&P.mu);
	atomic_fetch_add(&P.busy, 1);
	pthread_mutex_unlock(&P.mu);
	for (unsigned i = 0; i < d; i++) {
		atomic_fetch_add(&nc->out, 1);
		if (!ncall_issue(&nc->calls[i])) {
			nconn_put(nc);
			nc->stopped = true;
			break;
		}
	}
	nconn_put(nc);
}

/* --reopen: a thread per connection opens it, runs `reopen` calls,
 * waits for them, closes it, and again, while the load lasts. */
static void *native_reopen_main(void *arg)
{
	struct nconn *nc = arg;
	while (loading()) {
		if (!nc->c && native_open(nc) < 0) {
			/* Counted; do not spin on a refusing server. */
			struct timespec t = {0, 10000000};
			nanosleep(&t, NULL);
			continue;
		}
		nc->stopped = false;
		native_start(nc);
		pthread_mutex_lock(&P.mu);
		while (atomic_load(&nc->out) > 0)
			pthread_cond_wait(&P.cv, &P.mu);
		pthread_mutex_unlock(&P.mu);
		native_close(nc);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* rdma-tirpc and libtirpc: threads making synchronous calls            */

static const struct timeval tirpc_timeout = {30, 0};

struct tconn {
	CLIENT *c;
	unsigned idx;
};

/* rdma-tirpc's binding: WRITE data in a Read chunk, READ's result in a
 * Write chunk (perf_tirpc_rdma.c does the same). */
static bool_t rt_ulb(CLIENT *c)
{
	const struct rpcrdma_ulb_proc ulb[2] = {
		{.proc = PR_WRITE, .ddp_arg = true, .reply_max = 512},
		{.proc = PR_READ, .ddp_result_max = PR_MAXSZ,
		 .reply_max = 512},
	};
	return clnt_rdma_set_ulb(c, ulb, 2);
}

/* The kind of a failed CLIENT creation. */
static int createerr_code(void)
{
	if (rpc_createerr.cf_stat == RPC_SYSTEMERROR &&
	    rpc_createerr.cf_error.re_errno)
		return LD_ERR_ERRNO + rpc_createerr.cf_error.re_errno;
	return LD_ERR_TIRPC + (int)rpc_createerr.cf_stat;
}

static int tirpc_open(struct tconn *tc)
{
	uint64_t t0 = perf_now_ns();
	int code = 0;
	tc->c = NULL;
	if (P.g->api == LD_RTIRPC) {
		tc->c = clnt_rdma_create(P.g->target, PR_PROG, PR_VERS, &P.o);
		if (!tc->c)
			code = createerr_code();
		else if (!rt_ulb(tc->c))
			code = LD_ERR_TIRPC + RPC_FAILED;
	} else {
		struct sockaddr_storage ss;
		socklen_t len;
		int fd = -1;
		if (pr_parse_addr(P.g->target, 0, &ss, &len) < 0)
			code = LD_ERR_TIRPC + RPC_UNKNOWNHOST;
		else if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC,
				      0)) < 0 ||
			 connect(fd, (struct sockaddr *)&ss, len) < 0)
			code = LD_ERR_ERRNO + errno;
		if (!code) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
			struct netbuf nb = {.maxlen = len, .len = len,
					    .buf = &ss};
			/* 256 KiB record buffers, libtirpc at its best (as
			 * perf_baseline.c). */
			tc->c = clnt_vc_create(fd, &nb, PR_PROG, PR_VERS,
					       256u << 10, 256u << 10);
			if (!tc->c)
				code = createerr_code();
			else
				clnt_control(tc->c, CLSET_FD_CLOSE, NULL);
		}
		if (!tc->c && fd >= 0)
			close(fd);
	}
	if (code) {
		if (tc->c)
			clnt_destroy(tc->c);
		tc->c = NULL;
		atomic_fetch_add(&P.conn_failed, 1);
		err_add(&P.rep.conn_err, code);
		return -1;
	}
	hist_add(P.rep.conn_hist, perf_now_ns() - t0);
	atomic_fetch_add(&P.conn_ok, 1);
	return 0;
}

static void tirpc_close(struct tconn *tc)
{
	if (!tc->c)
		return;
	if (P.g->api == LD_RTIRPC)
		add_counters(tc->c, NULL);
	clnt_destroy(tc->c);
	tc->c = NULL;
}

/* One synchronous call of kind m on c; its clnt_stat.  buf: the thread's
 * own (READ results land in it). */
static enum clnt_stat tirpc_call(CLIENT *c, const struct ld_mix_ent *m,
				 uint8_t *buf)
{
	if (P.g->api == LD_RTIRPC) {
		switch (m->op) {
		case LD_NULL:
			return perf_null_1(NULL, NULL, c);
		case LD_WRITE: {
			perf_data d = {.perf_data_len = m->size,
				       .perf_data_val = (char *)wbuf};
			u_int got = 0;
			enum clnt_stat st = perf_write_1(&d, &got, c);
			return st == RPC_SUCCESS && got != m->size ? RPC_CANTDECODERES
								   : st;
		}
		case LD_READ: {
			u_int want = m->size;
			perf_data res = {.perf_data_len = 0,
					 .perf_data_val = (char *)buf};
			if (!clnt_rdma_result_buffer(c, buf, m->size))
				return RPC_FAILED;
			enum clnt_stat st = perf_read_1(&want, &res, c);
			return st == RPC_SUCCESS && res.perf_data_len != m->size
				       ? RPC_CANTDECODERES
				       : st;
		}
		}
		return RPC_FAILED;
	}
	switch (m->op) {
	case LD_NULL:
		return clnt_call(c, PR_NULL, XDRPROC(xdr_void), NULL,
				 XDRPROC(xdr_void), NULL, tirpc_timeout);
	case LD_WRITE: {
		struct pr_blob a = {wbuf, m->size, PR_MAXSZ};
		u_int got = 0;
		enum clnt_stat st = clnt_call(c, PR_WRITE, XDRPROC(pr_xdr_blob),
					      (char *)&a, XDRPROC(xdr_u_int),
					      (char *)&got, tirpc_timeout);
		return st == RPC_SUCCESS && got != m->size ? RPC_CANTDECODERES : st;
	}
	case LD_READ: {
		u_int want = m->size;
		struct pr_blob res = {buf, 0, PR_MAXSZ};
		enum clnt_stat st = clnt_call(c, PR_READ, XDRPROC(xdr_u_int),
					      (char *)&want,
					      XDRPROC(pr_xdr_blob), (char *)&res,
					      tirpc_timeout);
		return st == RPC_SUCCESS && res.len != m->size ? RPC_CANTDECODERES
							      : st;
	}
	}
	return RPC_FAILED;
}

struct tthread {
	struct tconn *tc;
	uint64_t rng;
	atomic_bool in_call;
	bool done;
	pthread_t th;
};

/* Waits for the go, then calls until the load is over; with --reopen it
 * owns its connection and opens it again after every `reopen` calls. */
static void *tirpc_thread(void *arg)
{
	struct tthread *t = arg;
	uint8_t *buf = malloc(PR_MAXSZ);
	pthread_mutex_lock(&P.mu);
	while (atomic_load(&P.phase) == 0)
		pthread_cond_wait(&P.cv, &P.mu);
	pthread_mutex_unlock(&P.mu);
	unsigned since = 0;
	while (buf && loading()) {
		if (P.g->reopen && (!t->tc->c || since >= P.g->reopen)) {
			tirpc_close(t->tc);
			since = 0;
			if (tirpc_open(t->tc) < 0) {
				struct timespec ts = {0, 10000000};
				nanosleep(&ts, NULL);
				continue;
			}
		}
		if (!t->tc->c)
			break;
		const struct ld_mix_ent *m = mix_pick(&t->rng);
		atomic_fetch_add(&P.issued, 1);
		atomic_store(&t->in_call, true);
		uint64_t t0 = perf_now_ns();
		enum clnt_stat st = tirpc_call(t->tc->c, m, buf);
		atomic_store(&t->in_call, false);
		call_ended(st == RPC_SUCCESS ? 0 : -1, LD_ERR_TIRPC + (int)st,
			   t0, m->op == LD_NULL ? 0 : m->size);
		since++;
		if (st != RPC_SUCCESS && !P.g->reopen)
			break; /* as the native contender: that connection
				  stops */
	}
	free(buf);
	pthread_mutex_lock(&P.mu);
	t->done = true;
	atomic_fetch_sub(&P.busy, 1);
	pthread_cond_broadcast(&P.cv);
	pthread_mutex_unlock(&P.mu);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The process                                                          */

static unsigned nconns;
static struct nconn *ncs;
static struct tconn *tcs;
static atomic_uint next_conn;

/* Connecting threads, in two passes over the connections: first each
 * takes the next connection and opens it; then (pass 2, once all are
 * open) makes its first call, a synchronous NULL, where the version 2
 * opener goes out. */
static void *connector(void *arg)
{
	bool first_calls = arg != NULL;
	for (;;) {
		unsigned i = atomic_fetch_add(&next_conn, 1);
		if (i >= nconns)
			return NULL;
		if (!first_calls) {
			if (P.g->api == LD_NATIVE)
				native_open(&ncs[i]);
			else
				tirpc_open(&tcs[i]);
			continue;
		}
		int rc;
		if (P.g->api == LD_NATIVE) {
			if (!ncs[i].c)
				continue;
			struct rpcrdma_call call = {.proc = PR_NULL};
			struct rpcrdma_reply rep;
			rc = rpcrdma_clnt_call(ncs[i].c, &call, &rep);
			rpcrdma_reply_free(&rep);
		} else {
			if (!tcs[i].c)
				continue;
			enum clnt_stat st =
				P.g->api == LD_RTIRPC
					? perf_null_1(NULL, NULL, tcs[i].c)
					: clnt_call(tcs[i].c, PR_NULL,
						    XDRPROC(xdr_void), NULL,
						    XDRPROC(xdr_void), NULL,
						    tirpc_timeout);
			rc = st == RPC_SUCCESS ? 0 : LD_ERR_TIRPC + (int)st;
		}
		pthread_mutex_lock(&P.mu);
		if (rc == 0) {
			P.rep.first_ok++;
		} else {
			P.rep.first_failed++;
			ld_err_add(&P.rep.first_err, rc, 1);
		}
		pthread_mutex_unlock(&P.mu);
	}
}

/* Runs connector's pass on nth threads (and this one when none starts). */
static void connect_pass(unsigned nth, bool first_calls)
{
	pthread_t *th = calloc(nth, sizeof(*th));
	unsigned started = 0;
	void *arg = first_calls ? (void *)1 : NULL;
	atomic_store(&next_conn, 0);
	for (unsigned i = 0; th && i < nth; i++)
		if (pthread_create(&th[i], NULL, connector, arg) == 0)
			started++;
	if (!started)
		connector(arg);
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

/* The version fallbacks and reconnections of the connections open now
 * (those closed already were added up as they closed). */
static void open_counters(uint64_t *fallbacks, uint64_t *reconnects)
{
	struct rpcrdma_stats s;
	for (unsigned i = 0; i < nconns; i++) {
		bool got = false;
		if (ncs[i].c)
			got = rpcrdma_clnt_stats(ncs[i].c, &s) == 0;
		else if (tcs[i].c && P.g->api == LD_RTIRPC)
			got = clnt_rdma_stats(tcs[i].c, &s);
		if (got) {
			*fallbacks += s.vers_fallbacks;
			*reconnects += s.reconnects;
		}
	}
}

static int send_report(int fd, uint32_t msg, bool open_now)
{
	P.rep.msg = msg;
	P.rep.conn_ok = atomic_load(&P.conn_ok);
	P.rep.conn_failed = atomic_load(&P.conn_failed);
	P.rep.issued = atomic_load(&P.issued);
	P.rep.ok = atomic_load(&P.ok);
	P.rep.failed = atomic_load(&P.failed);
	P.rep.in_window = atomic_load(&P.in_window);
	P.rep.bytes = atomic_load(&P.bytes);
	P.rep.vers_fallbacks = atomic_load(&P.fallbacks);
	P.rep.reconnects = atomic_load(&P.reconnects);
	if (open_now)
		open_counters(&P.rep.vers_fallbacks, &P.rep.reconnects);
	const uint8_t *p = (const uint8_t *)&P.rep;
	size_t left = sizeof(P.rep);
	while (left) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

/* CPU time of this process, every thread's, those that ended too
 * (getrusage(2) RUSAGE_SELF): the load's threads of the tirpc APIs end
 * with the window, and the parent, reading the threads it finds in
 * /proc, missed those that ended before it looked. */
static uint64_t self_cpu_ns(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? perf_cpu_ns(&ru) : 0;
}

/* The parent's next order ('g', 'c'), or 0 when it went away. */
static char get_order(int fd)
{
	char c;
	for (;;) {
		ssize_t n = read(fd, &c, 1);
		if (n == 1)
			return c;
		if (n < 0 && errno == EINTR)
			continue;
		return 0;
	}
}

/* Waits until busy is 0 or the time is up; true when it is 0. */
static bool wait_idle(uint64_t until_ns)
{
	pthread_mutex_lock(&P.mu);
	while (atomic_load(&P.busy) > 0) {
		uint64_t now = perf_now_ns();
		if (now >= until_ns)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t step = until_ns - now < 100000000ull ? until_ns - now
							      : 100000000ull;
		ts.tv_nsec += (long)step;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&P.cv, &P.mu, &ts);
	}
	bool idle = atomic_load(&P.busy) == 0;
	pthread_mutex_unlock(&P.mu);
	return idle;
}

int ld_client_main(const struct ld_group *g, unsigned index, int to_parent,
		   int from_parent)
{
	signal(SIGPIPE, SIG_IGN); /* libtirpc writes to closed sockets */
	memset(&P, 0, sizeof(P));
	P.g = g;
	P.rep.proc = index;
	pthread_mutex_init(&P.mu, NULL);
	pthread_cond_init(&P.cv, NULL);
	rpcrdma_opts_default(&P.o);
	if (g->provider)
		P.o.provider = g->provider;
	P.o.borrow_args = true;
	memset(wbuf, 0x5a, sizeof(wbuf));
	nconns = g->conns + (index < g->conns_extra);
	uint64_t seed = perf_now_ns() ^ ((uint64_t)getpid() << 32);

	ncs = calloc(nconns ? nconns : 1, sizeof(*ncs));
	tcs = calloc(nconns ? nconns : 1, sizeof(*tcs));
	if (!ncs || !tcs)
		return 1;
	for (unsigned i = 0; i < nconns; i++) {
		ncs[i].idx = tcs[i].idx = i;
		ncs[i].calls = calloc(g->depth, sizeof(struct ncall));
		if (!ncs[i].calls)
			return 1;
		for (unsigned k = 0; k < g->depth; k++) {
			ncs[i].calls[k].nc = &ncs[i];
			ncs[i].calls[k].rng = seed + i * 7919u + k * 104729u + 1;
		}
	}

	/* Connecting, then the first calls. */
	unsigned nth = g->connect_threads ? g->connect_threads : 1;
	if (nth > nconns)
		nth = nconns ? nconns : 1;
	connect_pass(nth, false);
	P.rep.conn_done_ns = perf_now_ns();
	connect_pass(nth, true);
	if (send_report(to_parent, LD_READY, true) < 0)
		return 1;

	char order = get_order(from_parent);
	if (order == 'g') {
		/* The load. */
		struct tthread *tt = NULL;
		unsigned ntt = 0;
		pthread_t *rth = NULL;
		unsigned nrth = 0;
		if (g->api == LD_NATIVE && g->reopen)
			rth = calloc(nconns ? nconns : 1, sizeof(*rth));
		if (g->api != LD_NATIVE) {
			tt = calloc((size_t)nconns * g->depth + 1, sizeof(*tt));
			for (unsigned i = 0; tt && i < nconns; i++) {
				if (!tcs[i].c && !g->reopen)
					continue;
				for (unsigned k = 0; k < g->depth; k++) {
					struct tthread *t = &tt[ntt];
					t->tc = &tcs[i];
					t->rng = seed + i * 7919u + k * 104729u + 1;
					atomic_fetch_add(&P.busy, 1);
					if (pthread_create(&t->th, NULL,
							   tirpc_thread, t)) {
						atomic_fetch_sub(&P.busy, 1);
						break;
					}
					ntt++;
				}
			}
		}
		pthread_mutex_lock(&P.mu);
		P.deadline_ns = perf_now_ns() +
				(uint64_t)(g->duration_s * 1e9);
		atomic_store(&P.phase, 1);
		pthread_cond_broadcast(&P.cv);
		pthread_mutex_unlock(&P.mu);
		uint64_t start = perf_now_ns();
		uint64_t cpu0 = self_cpu_ns();
		if (g->api == LD_NATIVE) {
			for (unsigned i = 0; i < nconns; i++) {
				if (rth) {
					atomic_fetch_add(&P.busy, 1);
					if (pthread_create(&rth[i], NULL,
							   native_reopen_main,
							   &ncs[i]) == 0)
						nrth++;
					else
						atomic_fetch_sub(&P.busy, 1);
					/* A reopen thread counts as busy
					 * until it ends (below). */
				} else {
					native_start(&ncs[i]);
				}
			}
		}
		/* The duration, then the calls still out. */
		uint64_t end = P.deadline_ns;
		while (perf_now_ns() < end) {
			uint64_t left = end - perf_now_ns();
			struct timespec ts = {(time_t)(left / 1000000000ull),
					      (long)(left % 1000000000ull)};
			if (left > 1000000000ull)
				ts = (struct timespec){1, 0};
			nanosleep(&ts, NULL);
		}
		P.rep.window_ns = perf_now_ns() - start;
		P.rep.cpu_ns = self_cpu_ns() - cpu0;
		atomic_store(&P.phase, 2);
		uint64_t until = perf_now_ns() + (uint64_t)(g->drain_s * 1e9);
		if (rth) {
			/* Each reopen thread ends after its connection's
			 * calls; then it is not busy any more. */
			for (unsigned i = 0; i < nrth; i++) {
				pthread_join(rth[i], NULL);
				atomic_fetch_sub(&P.busy, 1);
			}
		}
		bool idle = wait_idle(until);
		/* Calls started and not ended. */
		uint64_t iss = atomic_load(&P.issued);
		uint64_t end_ok = atomic_load(&P.ok), end_bad = atomic_load(&P.failed);
		P.rep.never = iss > end_ok + end_bad ? iss - end_ok - end_bad : 0;
		for (unsigned i = 0; i < ntt; i++)
			if (tt[i].done)
				pthread_join(tt[i].th, NULL);
		if (send_report(to_parent, LD_DONE, idle && !P.rep.never) < 0)
			return 1;
		if (!idle || P.rep.never) {
			/* Something still holds calls (or a thread of ours
			 * is stuck): closing would wait for them.  The
			 * parent has the numbers. */
			get_order(from_parent);
			_exit(0);
		}
		free(tt);
		free(rth);
		order = get_order(from_parent);
	}
	(void)order; /* 'c', or the parent is gone: close all the same */
	for (unsigned i = 0; i < nconns; i++) {
		native_close(&ncs[i]);
		tirpc_close(&tcs[i]);
		free(ncs[i].calls);
	}
	free(ncs);
	free(tcs);
	return 0;
}

void ld_raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}
