/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: the RPC workloads through a libtirpc CLIENT, whatever its
 * transport (libtirpc/TCP, rdma-tirpc): the same loops, so the two differ
 * only by what the contender's ops do.
 *
 * A CLIENT has one call at a time from its caller's point of view, so
 * "32 in flight" is 32 threads with a CLIENT (and a connection) each, as
 * a libtirpc program would do it; a concurrent CLIENT (rdma-tirpc's) is
 * measured both that way and with the 32 threads sharing one CLIENT.
 * READ/WRITE run one call at a time.
 * Over RDMA, the transport counters prove the data moved by DDP: every
 * WRITE a Chunked call (Read chunk), every READ's reply an RDMA_MSG
 * without a Reply chunk although its data does not fit inline (so it
 * came in the Write chunk).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "perf_tirpc.h"

struct par {
	const struct pr_clnt_ops *ops;
	const struct sockaddr_storage *addr;
	socklen_t len;
	const struct rpcrdma_opts *o;
	pthread_barrier_t *bar, *done;
	atomic_long *left;
	CLIENT *shared;
	int err;
};

/* One of PR_INFLIGHT threads: NULL calls until the shared budget runs
 * out, on its own CLIENT, or on the one CLIENT all threads share (shared:
 * a concurrent CLIENT, one connection).  Connecting and destroying happen
 * outside the timed part (between the barriers): an RDMA connection
 * costs much more to set up and tear down than a TCP one, and that is not
 * what is measured. */
static void *par_main(void *arg)
{
	struct par *t = arg;
	CLIENT *c = t->shared ? t->shared
			      : t->ops->connect(t->addr, t->len, t->o);
	if (!c)
		t->err = -1;
	pthread_barrier_wait(t->bar);
	if (c) {
		while (atomic_fetch_sub(t->left, 1) > 0)
			if (t->ops->null(c) < 0) {
				t->err = -1;
				break;
			}
	}
	pthread_barrier_wait(t->done);
	if (c && !t->shared)
		clnt_destroy(c);
	return NULL;
}

static double parallel(const struct pr_clnt_ops *ops,
		       const struct sockaddr_storage *addr, socklen_t len,
		       const struct rpcrdma_opts *o, unsigned long calls,
		       CLIENT *shared)
{
	pthread_t th[PR_INFLIGHT];
	struct par t[PR_INFLIGHT];
	pthread_barrier_t bar, done;
	atomic_long left = (long)calls;
	unsigned started = 0;
	int err = 0;

	pthread_barrier_init(&bar, NULL, PR_INFLIGHT + 1);
	pthread_barrier_init(&done, NULL, PR_INFLIGHT + 1);
	for (unsigned i = 0; i < PR_INFLIGHT; i++) {
		t[i] = (struct par){ops, addr, len, o, &bar, &done, &left,
				    shared, 0};
		if (pthread_create(&th[i], NULL, par_main, &t[i]) != 0)
			break;
		started++;
	}
	if (started < PR_INFLIGHT) {
		/* The barrier can never open: give up loudly. */
		fprintf(stderr, "rpcrdma-perf: cannot start threads\n");
		exit(1);
	}
	pthread_barrier_wait(&bar);
	uint64_t t0 = perf_now_ns();
	pthread_barrier_wait(&done);
	uint64_t ns = perf_now_ns() - t0;
	for (unsigned i = 0; i < PR_INFLIGHT; i++) {
		pthread_join(th[i], NULL);
		err |= t[i].err;
	}
	pthread_barrier_destroy(&bar);
	pthread_barrier_destroy(&done);
	return err || !ns ? 0 : (double)calls * 1e9 / (double)ns;
}

/* Calls of the last size that did not use DDP, from the counters before
 * (s0) and after. */
static unsigned long ddp_misses(const struct pr_clnt_ops *ops, CLIENT *c,
				const struct rpcrdma_stats *s0, bool write,
				size_t size, unsigned long cnt)
{
	struct rpcrdma_stats s1;
	if (!ops->stats || !ops->stats(c, &s1))
		return 0;
	uint64_t got;
	if (write) {
		got = s1.chunked_calls - s0->chunked_calls;
	} else {
		/* A result that could have come inline proves nothing. */
		if (size < s1.recv_threshold)
			return 0;
		got = s1.replies_inline - s0->replies_inline;
		if (s1.replies_long != s0->replies_long)
			got = 0;
	}
	return got >= cnt ? 0 : cnt - (unsigned long)got;
}

/* One thread of a transfer with several calls in flight on one CLIENT. */
struct xfer_thread {
	const struct pr_clnt_ops *ops;
	CLIENT *c;
	bool write;
	size_t size;
	uint8_t *buf;               /* its own (READ results land there) */
	atomic_long *left;
	int err;
};

static void *xfer_main(void *arg)
{
	struct xfer_thread *t = arg;
	while (atomic_fetch_sub(t->left, 1) > 0)
		if ((t->write ? t->ops->write(t->c, t->buf, t->size)
			      : t->ops->read(t->c, t->buf, t->size)) < 0) {
			t->err = -1;
			break;
		}
	return NULL;
}

/* cnt calls by depth threads on one CLIENT (the calling thread is one
 * of them).  0 or -1. */
static int transfer_threads(const struct pr_clnt_ops *ops, CLIENT *c,
			    bool write, size_t size, unsigned long cnt,
			    uint8_t *buf, unsigned depth)
{
	pthread_t th[16];
	struct xfer_thread t[16];
	atomic_long left = (long)cnt;
	unsigned n = depth > 16 ? 16 : depth, started = 0;
	int err = 0;
	for (unsigned i = 1; i < n; i++) {
		uint8_t *b = write ? buf : malloc(size);
		if (!b)
			break;
		t[i] = (struct xfer_thread){ops, c, write, size, b, &left, 0};
		if (pthread_create(&th[i], NULL, xfer_main, &t[i]) != 0) {
			if (!write)
				free(b);
			break;
		}
		started = i;
	}
	t[0] = (struct xfer_thread){ops, c, write, size, buf, &left, 0};
	xfer_main(&t[0]);
	err |= t[0].err;
	for (unsigned i = 1; i <= started; i++) {
		pthread_join(th[i], NULL);
		err |= t[i].err;
		if (!write)
			free(t[i].buf);
	}
	return err;
}

/* cnt WRITEs (write) or READs of size bytes, one at a time (or as many
 * in flight as the native contender, for a concurrent CLIENT): MiB/s in
 * *mibs, the calls that did not use DDP added to *bad_ddp.  0 or -1 (a
 * call failed). */
static int transfer(const struct pr_clnt_ops *ops, CLIENT *c,
		    const struct pr_params *p, bool write, size_t size,
		    unsigned long cnt, uint8_t *buf, double *mibs,
		    double *cp_tx, double *cp_rx, unsigned long *bad_ddp)
{
	const char *dir = write ? "WRITE" : "READ";
	char what[48];
	snprintf(what, sizeof(what), "%s %s", ops->name, dir);
	pr_progress(p, "%s %zu B x %lu, %u in flight", what, size, cnt,
		    ops->concurrent ? pr_depth_for(p, size) : 1);
	struct rpcrdma_stats s0, s1;
	struct pr_cp_snap cp0, cp1;
	bool have = ops->stats && ops->stats(c, &s0);
	pr_cp_take(p, have, &s0, &cp0);
	unsigned depth = ops->concurrent ? pr_depth_for(p, size) : 1;
	uint64_t t0 = perf_now_ns();
	if (depth > 1) {
		if (transfer_threads(ops, c, write, size, cnt, buf, depth) < 0)
			return -1;
	} else {
		for (unsigned long i = 0; i < cnt; i++) {
			if ((write ? ops->write(c, buf, size)
				   : ops->read(c, buf, size)) < 0)
				return -1;
			pr_tick(p, what, i, cnt);
		}
	}
	*mibs = pr_mibs(size, cnt, perf_now_ns() - t0);
	have = ops->stats && ops->stats(c, &s1);
	pr_cp_take(p, have, &s1, &cp1);
	pr_cp_result(&cp0, &cp1, write, (uint64_t)size * cnt,
		     cp_tx, cp_rx);
	*bad_ddp += ddp_misses(ops, c, &s0, write, size, cnt);
	return 0;
}

int pr_clnt_run(const struct pr_clnt_ops *ops,
		const struct sockaddr_storage *addr, socklen_t len,
		const struct rpcrdma_opts *o, const struct pr_params *p,
		struct pr_result *r)
{
	const char *nm = ops->name;
	char what[48];
	snprintf(what, sizeof(what), "%s NULL latency", nm);
	CLIENT *c = ops->connect(addr, len, o);
	if (!c) {
		snprintf(r->note, sizeof(r->note), "%s: cannot connect", nm);
		fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
		return -1;
	}
	uint64_t *lat = calloc(p->iters, sizeof(*lat));
	uint8_t *buf = malloc(PR_MAXSZ);
	unsigned long bad_ddp = 0;
	int rc = -1;
	if (!lat || !buf)
		goto out;
	memset(buf, 0x5a, PR_MAXSZ);

	/* Warm-up: connection, page faults, caches. */
	for (int i = 0; i < 100; i++)
		if (ops->null(c) < 0)
			goto fail;

	if (p->workloads & PR_W_NULL) {
		pr_progress(p, "%s NULL latency, %lu calls", nm, p->iters);
		for (unsigned long i = 0; i < p->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if (ops->null(c) < 0)
				goto fail;
			lat[i] = perf_now_ns() - t0;
			pr_tick(p, what, i, p->iters);
		}
		pr_latency(r, lat, p->iters);
	}

	if (p->workloads & PR_W_RATE) {
		pr_progress(p, "%s calls/s, 1 in flight", nm);
		uint64_t t0 = perf_now_ns();
		for (unsigned long i = 0; i < p->iters; i++)
			if (ops->null(c) < 0)
				goto fail;
		uint64_t ns = perf_now_ns() - t0;
		r->cps1 = ns ? (double)p->iters * 1e9 / (double)ns : 0;

		pr_progress(p, "%s calls/s, %s", nm, ops->inflight_note);
		r->cpsN = parallel(ops, addr, len, o, p->iters,
				   ops->concurrent ? c : NULL);
		/* The shape of a libtirpc program, whose CLIENT serializes
		 * its calls: a CLIENT per thread.  A concurrent CLIENT is
		 * measured that way too, so that one row compares the same
		 * program over both transports. */
		if (ops->concurrent) {
			pr_progress(p, "%s calls/s, %u threads with a CLIENT "
				    "each", nm, PR_INFLIGHT);
			r->cpsT = parallel(ops, addr, len, o, p->iters, NULL);
		} else {
			r->cpsT = r->cpsN;
		}
	}

	for (int k = 0; k < PR_NSIZES; k++) {
		if (!(p->sizes & 1u << k))
			continue;
		size_t sz = pr_sizes[k];
		unsigned long cnt = pr_count_for(p, sz);
		if (ops->set_size && ops->set_size(c, sz) < 0)
			goto fail;
		if ((p->workloads & PR_W_WRITE) &&
		    transfer(ops, c, p, true, sz, cnt, buf, &r->wr_mibs[k],
			     &r->cp_wr_tx[k], &r->cp_wr_rx[k], &bad_ddp) < 0)
			goto fail;
		if ((p->workloads & PR_W_READ) &&
		    transfer(ops, c, p, false, sz, cnt, buf, &r->rd_mibs[k],
			     &r->cp_rd_tx[k], &r->cp_rd_rx[k], &bad_ddp) < 0)
			goto fail;
	}
	if (bad_ddp)
		snprintf(r->note, sizeof(r->note),
			 "%s: %lu READ/WRITE calls did not use DDP", nm,
			 bad_ddp);
	rc = 0;
	goto out;
fail:
	snprintf(r->note, sizeof(r->note), "%s: a call failed", nm);
	fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
out:
	clnt_destroy(c);
	free(lat);
	free(buf);
	return rc;
}

/* The cost subcommand's session: the contender's server and a CLIENT. */
struct clnt_nullsess {
	struct pr_nullsess s;
	const struct pr_clnt_ops *ops;
	SVCXPRT *x;
	CLIENT *c;
	size_t size;                /* the binding's READ size */
	uint8_t *buf;
};

static int cns_call(struct pr_nullsess *s)
{
	struct clnt_nullsess *n = (struct clnt_nullsess *)s;
	return n->ops->null(n->c);
}

static int cns_xfer(struct pr_nullsess *s, bool write, size_t size)
{
	struct clnt_nullsess *n = (struct clnt_nullsess *)s;
	if (!n->buf && !(n->buf = calloc(1, PR_MAXSZ)))
		return -1;
	if (!write && n->ops->set_size && n->size != size) {
		if (n->ops->set_size(n->c, size) < 0)
			return -1;
		n->size = size;
	}
	return write ? n->ops->write(n->c, n->buf, size)
		     : n->ops->read(n->c, n->buf, size);
}

static void cns_close(struct pr_nullsess *s)
{
	struct clnt_nullsess *n = (struct clnt_nullsess *)s;
	clnt_destroy(n->c);
	pr_svc_stop(n->x);
	free(n->buf);
	free(n);
}

int pr_clnt_nullsess(const struct pr_clnt_ops *ops,
		     const struct sockaddr_storage *ip, socklen_t len,
		     const struct rpcrdma_opts *o, struct pr_nullsess **out)
{
	struct clnt_nullsess *n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	struct sockaddr_storage a = *ip;
	pr_set_port(&a, 0);
	n->ops = ops;
	if (!(n->x = ops->server_start(&a, len, o))) {
		free(n);
		return -1;
	}
	pr_set_port(&a, ops->server_port(n->x));
	if (!(n->c = ops->connect(&a, len, o))) {
		pr_svc_stop(n->x);
		free(n);
		return -1;
	}
	n->s.call = cns_call;
	n->s.close = cns_close;
	n->s.xfer = cns_xfer;
	*out = &n->s;
	return 0;
}
