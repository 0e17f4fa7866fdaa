/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: the libtirpc service side shared by the libtirpc/TCP and
 * rdma-tirpc servers: the benchmark program's dispatch function and one
 * svc_run()-style loop for every transport of the process.
 *
 * Why one loop: libtirpc's service state (svc_pollfd, the transports by
 * fd, the callouts by (prog, vers)) is global to the process, and
 * svc_getreq_poll() is not meant to run on two threads at once; a program
 * serving TCP and RDMA runs one svc_run() for both, and so do we (the
 * `server` subcommand serves both at once).  Transports are created and
 * destroyed only while the loop is paused, because that changes
 * svc_pollfd under it.
 *
 * Why not svc_run() itself: it never returns; svc_exit() frees the poll
 * set of every transport.  Ours is svc_run()'s loop with a stop flag,
 * and like svc_run() it sleeps until an fd is ready: an eventfd tells it
 * to look at the flag.  (It used to look every 50 ms, and those wake-ups
 * were most of the server's CPU while 4900 connections idled: 0.3 % of
 * a core, more than its poll groups.)
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "perf.h"
#include "perf_tirpc.h"

bool_t pr_xdr_blob(XDR *x, struct pr_blob *b)
{
	if (!xdr_u_int(x, &b->len))
		return FALSE;
	if (x->x_op == XDR_DECODE && b->len > b->cap)
		return FALSE;
	return xdr_opaque(x, (char *)b->buf, b->len);
}

/* The loop dispatches one call at a time, so one buffer serves. */
static uint8_t srv_buf[PR_MAXSZ];

/* Written by hand rather than by rpcgen: rpcgen's dispatch decodes WRITE's
 * data into memory it allocates per call, which the native rpcrdma
 * handler does not do; with one dispatch for both transports, the
 * libtirpc/TCP and rdma-tirpc numbers differ only by transport. */
static void dispatch(struct svc_req *rq, SVCXPRT *x)
{
	switch (rq->rq_proc) {
	case PR_NULL:
		svc_sendreply(x, XDRPROC(xdr_void), NULL);
		return;
	case PR_WRITE: {
		struct pr_blob b = {srv_buf, 0, PR_MAXSZ};
		if (!svc_getargs(x, XDRPROC(pr_xdr_blob), (char *)&b)) {
			svcerr_decode(x);
			return;
		}
		u_int len = b.len;
		svc_sendreply(x, XDRPROC(xdr_u_int), (char *)&len);
		return;
	}
	case PR_READ: {
		u_int len = 0;
		if (!svc_getargs(x, XDRPROC(xdr_u_int), (char *)&len) ||
		    len > PR_MAXSZ) {
			svcerr_decode(x);
			return;
		}
		struct pr_blob b = {srv_buf, len, PR_MAXSZ};
		svc_sendreply(x, XDRPROC(pr_xdr_blob), (char *)&b);
		return;
	}
	default:
		svcerr_noproc(x);
	}
}

static struct {
	pthread_mutex_t mu;     /* start/stop callers */
	pthread_t th;
	bool running;
	atomic_int stop;
	atomic_bool drain;      /* on stop: wait for closed connections */
	int listeners;          /* transports made by pr_svc_start */
	int stop_fd;            /* eventfd: stop was set (-1: none yet) */
} loop = {.mu = PTHREAD_MUTEX_INITIALIZER, .stop_fd = -1};

static int live_svc_fds(void)
{
	int n = 0;
	for (int i = 0; i < svc_max_pollfd; i++)
		if (svc_pollfd[i].fd >= 0)
			n++;
	return n;
}

/* svc_run() without its endless loop: the poll set is copied each round
 * because svc_getreq_poll() may grow svc_pollfd (new connections). */
static void *loop_main(void *arg)
{
	(void)arg;
	struct pollfd *pf = NULL;
	int cap = 0;
	uint64_t stop_at = 0;

	for (;;) {
		if (atomic_load(&loop.stop)) {
			if (!atomic_load(&loop.drain))
				break;
			/* Let closed connections be seen and destroyed
			 * (no leaks), but not forever. */
			if (!stop_at)
				stop_at = perf_now_ns() + 2000000000ull;
			if (live_svc_fds() <= loop.listeners ||
			    perf_now_ns() > stop_at)
				break;
		}
		int n = svc_max_pollfd;
		if (n + 1 > cap) {
			struct pollfd *np = realloc(pf, (size_t)(n + 1) *
							    sizeof(*pf));
			if (!np)
				break;
			pf = np;
			cap = n + 1;
		}
		memcpy(pf, svc_pollfd, (size_t)n * sizeof(*pf));
		/* The stop eventfd last, so the svc set's entries keep their
		 * places for svc_getreq_poll(). */
		pf[n] = (struct pollfd){.fd = loop.stop_fd, .events = POLLIN};
		/* Draining: look at the connections left every 50 ms. */
		int rc = poll(pf, (nfds_t)n + 1, stop_at ? 50 : -1);
		if (rc > 0 && pf[n].revents) {
			uint64_t v;
			(void)!read(loop.stop_fd, &v, sizeof(v));
			rc--;
		}
		if (rc > 0)
			svc_getreq_poll(pf, rc);
	}
	free(pf);
	return NULL;
}

/* Called with loop.mu held. */
static void loop_pause(bool drain)
{
	if (!loop.running)
		return;
	atomic_store(&loop.drain, drain);
	atomic_store(&loop.stop, 1);
	uint64_t one = 1;
	if (write(loop.stop_fd, &one, sizeof(one)) < 0)
		perror("rpcrdma-perf: svc loop stop");
	pthread_join(loop.th, NULL);
	loop.running = false;
}

static void loop_resume(void)
{
	if (loop.running || loop.listeners == 0)
		return;
	atomic_store(&loop.stop, 0);
	if (loop.stop_fd < 0)
		loop.stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop.stop_fd < 0) {
		perror("rpcrdma-perf: svc loop eventfd");
		return;
	}
	if (pthread_create(&loop.th, NULL, loop_main, NULL) != 0) {
		fprintf(stderr, "rpcrdma-perf: cannot start the svc loop\n");
		return;
	}
	loop.running = true;
}

SVCXPRT *pr_svc_start(pr_svc_create_fn create, void *arg)
{
	pthread_mutex_lock(&loop.mu);
	loop_pause(false);
	SVCXPRT *x = create(arg);
	/* The same dispatch for every transport, so registering it again
	 * (another transport, or a server started after one stopped: the
	 * callout outlives svc_destroy) succeeds. */
	if (x && !svc_register(x, PR_PROG, PR_VERS, dispatch, 0)) {
		fprintf(stderr, "rpcrdma-perf: svc_register failed\n");
		svc_destroy(x);
		x = NULL;
	}
	if (x)
		loop.listeners++;
	loop_resume();
	pthread_mutex_unlock(&loop.mu);
	return x;
}

void pr_svc_stop(SVCXPRT *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&loop.mu);
	loop_pause(true);
	/* The (prog, vers) callout stays: svc_unregister would ask rpcbind. */
	svc_destroy(x);
	loop.listeners--;
	loop_resume();
	pthread_mutex_unlock(&loop.mu);
}
