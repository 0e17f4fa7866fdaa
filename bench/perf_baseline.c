/*
 * rpcrdma-perf baselines: the RPC workloads over libtirpc/TCP and their
 * raw-TCP equivalents, so every rpcrdma number has a neighbour measured in
 * the same run, on the same machine, with the same pinning.
 *
 * libtirpc: a svc_vc_create() server registered without rpcbind (protocol
 * 0) and served by our own poll()/svc_getreq_poll() loop, so it can stop;
 * clients are clnt_vc_create() on a socket we connect ourselves.  Both
 * sides use 256 KiB record buffers (libtirpc's maximum; its default is
 * 64 KiB), so the baseline is libtirpc at its best, not its default.  The
 * server is single-threaded, as svc_run() is.
 *
 * raw TCP: one thread serving one connection at a time with blocking
 * calls: 64-byte ping-pong, a client->server stream ended by a 64-byte
 * ACK, and a server->client stream.  Every socket has TCP_NODELAY.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "perf.h"
#include "perf_rpc.h"

#define TIRPC_BUFSZ (256u * 1024u)
#define MSG 64

/* libtirpc declares xdrproc_t variadic; going through void (*)(void)
 * is the documented way to convert without -Wcast-function-type. */
#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

static int listen_on(const struct sockaddr_storage *addr, socklen_t len)
{
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, len) < 0 ||
	    listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
		return 0;
	return pr_get_port(&ss);
}

static int connect_to(const struct sockaddr_storage *addr, socklen_t len)
{
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)addr, len) < 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* libtirpc                                                             */

/* opaque data<> with a caller-owned buffer, so neither side allocates
 * per call (as the rpcrdma side does not either). */
struct blob {
	uint8_t *buf;
	u_int len;
	u_int cap;
};

static bool_t xdr_blob(XDR *x, struct blob *b)
{
	if (!xdr_u_int(x, &b->len))
		return FALSE;
	if (x->x_op == XDR_DECODE && b->len > b->cap)
		return FALSE;
	return xdr_opaque(x, (char *)b->buf, b->len);
}

/* The server is single-threaded (one svc loop), so one buffer serves. */
static uint8_t tirpc_srv_buf[PR_MAXSZ];

static void tirpc_dispatch(struct svc_req *rq, SVCXPRT *x)
{
	switch (rq->rq_proc) {
	case PR_NULL:
		svc_sendreply(x, XDRPROC(xdr_void), NULL);
		return;
	case PR_WRITE: {
		struct blob b = {tirpc_srv_buf, 0, PR_MAXSZ};
		if (!svc_getargs(x, XDRPROC(xdr_blob), (char *)&b)) {
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
		struct blob b = {tirpc_srv_buf, len, PR_MAXSZ};
		svc_sendreply(x, XDRPROC(xdr_blob), (char *)&b);
		return;
	}
	default:
		svcerr_noproc(x);
	}
}

struct pr_tirpc_server {
	int lfd;
	uint16_t port;
	SVCXPRT *xprt;
	pthread_t th;
	atomic_int stop;
};

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
static void *tirpc_server_main(void *arg)
{
	struct pr_tirpc_server *s = arg;
	struct pollfd *pf = NULL;
	int cap = 0;
	uint64_t stop_at = 0;

	for (;;) {
		if (atomic_load(&s->stop)) {
			/* Let closed connections be seen and destroyed
			 * (no leaks), but not forever. */
			if (!stop_at)
				stop_at = perf_now_ns() + 2000000000ull;
			if (live_svc_fds() <= 1 || perf_now_ns() > stop_at)
				break;
		}
		int n = svc_max_pollfd;
		if (n > cap) {
			struct pollfd *np = realloc(pf, (size_t)n * sizeof(*pf));
			if (!np)
				break;
			pf = np;
			cap = n;
		}
		memcpy(pf, svc_pollfd, (size_t)n * sizeof(*pf));
		int rc = poll(pf, (nfds_t)n, 50);
		if (rc > 0)
			svc_getreq_poll(pf, rc);
	}
	free(pf);
	return NULL;
}

int pr_tirpc_server_start(const struct sockaddr_storage *addr, socklen_t len,
			  struct pr_tirpc_server **out)
{
	struct pr_tirpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->lfd = listen_on(addr, len);
	if (s->lfd < 0) {
		perror("rpcrdma-perf: libtirpc listen");
		free(s);
		return -1;
	}
	s->port = bound_port(s->lfd);
	s->xprt = svc_vc_create(s->lfd, TIRPC_BUFSZ, TIRPC_BUFSZ);
	/* protocol 0: no portmapper registration (no rpcbind needed). */
	if (!s->xprt ||
	    !svc_register(s->xprt, PR_PROG, PR_VERS, tirpc_dispatch, 0)) {
		fprintf(stderr, "rpcrdma-perf: libtirpc server setup failed\n");
		if (s->xprt)
			svc_destroy(s->xprt);
		else
			close(s->lfd);
		free(s);
		return -1;
	}
	if (pthread_create(&s->th, NULL, tirpc_server_main, s) != 0) {
		svc_destroy(s->xprt);
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

uint16_t pr_tirpc_server_port(const struct pr_tirpc_server *s)
{
	return s->port;
}

void pr_tirpc_server_stop(struct pr_tirpc_server *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, 1);
	pthread_join(s->th, NULL);
	svc_destroy(s->xprt); /* closes lfd */
	/* The (prog, vers) callout stays registered: svc_unregister would
	 * ask rpcbind; a later server re-registers the same dispatch. */
	free(s);
}

static CLIENT *tirpc_connect(const struct sockaddr_storage *addr,
			     socklen_t len)
{
	int fd = connect_to(addr, len);
	if (fd < 0)
		return NULL;
	struct netbuf nb = {.maxlen = len, .len = len, .buf = (void *)addr};
	CLIENT *c = clnt_vc_create(fd, &nb, PR_PROG, PR_VERS, TIRPC_BUFSZ,
				   TIRPC_BUFSZ);
	if (!c) {
		close(fd);
		return NULL;
	}
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	return c;
}

static const struct timeval tirpc_timeout = {30, 0};

static int tirpc_null(CLIENT *c)
{
	enum clnt_stat st = clnt_call(c, PR_NULL, XDRPROC(xdr_void), NULL,
				      XDRPROC(xdr_void), NULL, tirpc_timeout);
	return st == RPC_SUCCESS ? 0 : -1;
}

struct tirpc_par {
	const struct sockaddr_storage *addr;
	socklen_t len;
	pthread_barrier_t *bar;
	atomic_long *left;
	int err;
};

/* One of PR_INFLIGHT threads: its own connection, NULL calls until the
 * shared budget runs out. */
static void *tirpc_par_main(void *arg)
{
	struct tirpc_par *t = arg;
	CLIENT *c = tirpc_connect(t->addr, t->len);
	if (!c)
		t->err = -1;
	pthread_barrier_wait(t->bar);
	if (c) {
		while (atomic_fetch_sub(t->left, 1) > 0)
			if (tirpc_null(c) < 0) {
				t->err = -1;
				break;
			}
		clnt_destroy(c);
	}
	return NULL;
}

static double tirpc_parallel(const struct sockaddr_storage *addr,
			     socklen_t len, unsigned long calls)
{
	pthread_t th[PR_INFLIGHT];
	struct tirpc_par t[PR_INFLIGHT];
	pthread_barrier_t bar;
	atomic_long left = (long)calls;
	unsigned started = 0;
	int err = 0;

	pthread_barrier_init(&bar, NULL, PR_INFLIGHT + 1);
	for (unsigned i = 0; i < PR_INFLIGHT; i++) {
		t[i] = (struct tirpc_par){addr, len, &bar, &left, 0};
		if (pthread_create(&th[i], NULL, tirpc_par_main, &t[i]) != 0)
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
	for (unsigned i = 0; i < PR_INFLIGHT; i++) {
		pthread_join(th[i], NULL);
		err |= t[i].err;
	}
	uint64_t ns = perf_now_ns() - t0;
	pthread_barrier_destroy(&bar);
	return err || !ns ? 0 : (double)calls * 1e9 / (double)ns;
}

int pr_tirpc_client_run(const struct sockaddr_storage *addr, socklen_t len,
			const struct pr_params *p, struct pr_result *r)
{
	CLIENT *c = tirpc_connect(addr, len);
	if (!c) {
		snprintf(r->note, sizeof(r->note), "libtirpc: cannot connect");
		fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
		return -1;
	}
	uint64_t *lat = calloc(p->iters, sizeof(*lat));
	uint8_t *buf = malloc(PR_MAXSZ);
	int rc = -1;
	if (!lat || !buf)
		goto out;
	memset(buf, 0x5a, PR_MAXSZ);

	/* Warm-up: connection, page faults, caches. */
	for (int i = 0; i < 100; i++)
		if (tirpc_null(c) < 0)
			goto fail;

	if (p->workloads & PR_W_NULL) {
		pr_progress(p, "libtirpc NULL latency, %lu calls", p->iters);
		for (unsigned long i = 0; i < p->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if (tirpc_null(c) < 0)
				goto fail;
			lat[i] = perf_now_ns() - t0;
			pr_tick(p, "libtirpc NULL latency", i, p->iters);
		}
		pr_latency(r, lat, p->iters);
	}

	uint64_t t0, ns;
	if (p->workloads & PR_W_RATE) {
		pr_progress(p, "libtirpc calls/s, 1 in flight");
		t0 = perf_now_ns();
		for (unsigned long i = 0; i < p->iters; i++)
			if (tirpc_null(c) < 0)
				goto fail;
		ns = perf_now_ns() - t0;
		r->cps1 = ns ? (double)p->iters * 1e9 / (double)ns : 0;

		pr_progress(p, "libtirpc calls/s, %u threads x 1 connection "
			       "each", PR_INFLIGHT);
		r->cpsN = tirpc_parallel(addr, len, p->iters);
	}

	for (int k = 0; k < PR_NSIZES; k++) {
		if (!(p->sizes & 1u << k))
			continue;
		size_t sz = pr_sizes[k];
		unsigned long cnt = pr_count_for(p, sz);
		if (!(p->workloads & PR_W_WRITE))
			goto read;
		pr_progress(p, "libtirpc WRITE %zu B x %lu", sz, cnt);
		struct blob a = {buf, (u_int)sz, PR_MAXSZ};
		u_int got = 0;
		t0 = perf_now_ns();
		for (unsigned long i = 0; i < cnt; i++) {
			if (clnt_call(c, PR_WRITE, XDRPROC(xdr_blob), (char *)&a,
				      XDRPROC(xdr_u_int), (char *)&got,
				      tirpc_timeout) != RPC_SUCCESS ||
			    got != sz)
				goto fail;
			pr_tick(p, "libtirpc WRITE", i, cnt);
		}
		r->wr_mibs[k] = pr_mibs(sz, cnt, perf_now_ns() - t0);
read:
		if (!(p->workloads & PR_W_READ))
			continue;
		pr_progress(p, "libtirpc READ %zu B x %lu", sz, cnt);
		u_int want = (u_int)sz;
		t0 = perf_now_ns();
		for (unsigned long i = 0; i < cnt; i++) {
			struct blob res = {buf, 0, PR_MAXSZ};
			if (clnt_call(c, PR_READ, XDRPROC(xdr_u_int),
				      (char *)&want, XDRPROC(xdr_blob),
				      (char *)&res,
				      tirpc_timeout) != RPC_SUCCESS ||
			    res.len != sz)
				goto fail;
			pr_tick(p, "libtirpc READ", i, cnt);
		}
		r->rd_mibs[k] = pr_mibs(sz, cnt, perf_now_ns() - t0);
	}
	rc = 0;
	goto out;
fail:
	snprintf(r->note, sizeof(r->note), "libtirpc: a call failed");
	fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
out:
	clnt_destroy(c);
	free(lat);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* raw TCP                                                              */

enum { T_PING = 1, T_STREAM, T_PULL, T_ACK };

struct tmsg {
	uint32_t type;
	uint32_t size;
	uint64_t count;
	uint8_t pad[MSG - 16];
};

struct pr_tcp_server {
	int lfd;
	atomic_int cfd;       /* connection being served, or -1 */
	uint16_t port;
	pthread_t th;
	atomic_int stop;
};

static void tcp_serve(int fd, uint8_t *buf)
{
	struct tmsg m;
	while (recv_all(fd, &m, sizeof(m)) == 0) {
		if (m.size > PR_MAXSZ)
			return;
		switch (m.type) {
		case T_PING:
			if (send_all(fd, &m, sizeof(m)) < 0)
				return;
			break;
		case T_STREAM: {
			/* Read everything as it comes, then ACK. */
			uint64_t left = (uint64_t)m.size * m.count;
			while (left) {
				size_t want = left < PR_MAXSZ ? (size_t)left
							      : PR_MAXSZ;
				ssize_t n = recv(fd, buf, want, 0);
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					return;
				left -= (uint64_t)n;
			}
			m.type = T_ACK;
			if (send_all(fd, &m, sizeof(m)) < 0)
				return;
			break;
		}
		case T_PULL:
			for (uint64_t i = 0; i < m.count; i++)
				if (send_all(fd, buf, m.size) < 0)
					return;
			break;
		default:
			return;
		}
	}
}

static void *tcp_server_main(void *arg)
{
	struct pr_tcp_server *s = arg;
	uint8_t *buf = calloc(1, PR_MAXSZ);
	if (!buf)
		return NULL;
	while (!atomic_load(&s->stop)) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* listener shut down */
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		atomic_store(&s->cfd, fd);
		if (!atomic_load(&s->stop))
			tcp_serve(fd, buf);
		atomic_store(&s->cfd, -1);
		close(fd);
	}
	free(buf);
	return NULL;
}

int pr_tcp_server_start(const struct sockaddr_storage *addr, socklen_t len,
			struct pr_tcp_server **out)
{
	struct pr_tcp_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->lfd = listen_on(addr, len);
	if (s->lfd < 0) {
		perror("rpcrdma-perf: tcp listen");
		free(s);
		return -1;
	}
	s->port = bound_port(s->lfd);
	atomic_init(&s->cfd, -1);
	if (pthread_create(&s->th, NULL, tcp_server_main, s) != 0) {
		close(s->lfd);
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

uint16_t pr_tcp_server_port(const struct pr_tcp_server *s)
{
	return s->port;
}

void pr_tcp_server_stop(struct pr_tcp_server *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, 1);
	/* Wakes accept(), and a connection still being served (a client
	 * of the server subcommand that did not finish). */
	shutdown(s->lfd, SHUT_RDWR);
	int cfd = atomic_load(&s->cfd);
	if (cfd >= 0)
		shutdown(cfd, SHUT_RDWR);
	pthread_join(s->th, NULL);
	close(s->lfd);
	free(s);
}

int pr_tcp_client_run(const struct sockaddr_storage *addr, socklen_t len,
		      const struct pr_params *p, struct pr_result *r)
{
	int fd = connect_to(addr, len);
	if (fd < 0) {
		snprintf(r->note, sizeof(r->note), "tcp: cannot connect");
		fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
		return -1;
	}
	uint64_t *lat = calloc(p->iters, sizeof(*lat));
	uint8_t *buf = malloc(PR_MAXSZ);
	int rc = -1;
	struct tmsg m;
	memset(&m, 0, sizeof(m));
	if (!lat || !buf)
		goto out;
	memset(buf, 0x5a, PR_MAXSZ);

	m.type = T_PING;
	for (int i = 0; i < 100; i++)
		if (send_all(fd, &m, sizeof(m)) || recv_all(fd, &m, sizeof(m)))
			goto fail;

	if (p->workloads & (PR_W_NULL | PR_W_RATE)) {
		pr_progress(p, "tcp 64 B ping-pong, %lu round trips",
			    p->iters);
		uint64_t start = perf_now_ns();
		for (unsigned long i = 0; i < p->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if (send_all(fd, &m, sizeof(m)) ||
			    recv_all(fd, &m, sizeof(m)))
				goto fail;
			lat[i] = perf_now_ns() - t0;
			pr_tick(p, "tcp ping-pong", i, p->iters);
		}
		uint64_t ns = perf_now_ns() - start;
		r->cps1 = ns ? (double)p->iters * 1e9 / (double)ns : 0;
		pr_latency(r, lat, p->iters);
	}

	for (int k = 0; k < PR_NSIZES; k++) {
		if (!(p->sizes & 1u << k))
			continue;
		size_t sz = pr_sizes[k];
		unsigned long cnt = pr_count_for(p, sz);
		if (!(p->workloads & PR_W_WRITE))
			goto read;
		pr_progress(p, "tcp stream client->server %zu B x %lu", sz,
			    cnt);
		uint64_t t0;
		m = (struct tmsg){.type = T_STREAM, .size = (uint32_t)sz,
				  .count = cnt};
		t0 = perf_now_ns();
		if (send_all(fd, &m, sizeof(m)))
			goto fail;
		for (unsigned long i = 0; i < cnt; i++)
			if (send_all(fd, buf, sz))
				goto fail;
		if (recv_all(fd, &m, sizeof(m)) || m.type != T_ACK)
			goto fail;
		r->wr_mibs[k] = pr_mibs(sz, cnt, perf_now_ns() - t0);
read:
		if (!(p->workloads & PR_W_READ))
			continue;
		pr_progress(p, "tcp stream server->client %zu B x %lu", sz,
			    cnt);
		m = (struct tmsg){.type = T_PULL, .size = (uint32_t)sz,
				  .count = cnt};
		t0 = perf_now_ns();
		if (send_all(fd, &m, sizeof(m)))
			goto fail;
		for (unsigned long i = 0; i < cnt; i++)
			if (recv_all(fd, buf, sz))
				goto fail;
		r->rd_mibs[k] = pr_mibs(sz, cnt, perf_now_ns() - t0);
	}
	rc = 0;
	goto out;
fail:
	snprintf(r->note, sizeof(r->note), "tcp: connection failed");
	fprintf(stderr, "rpcrdma-perf: %s\n", r->note);
out:
	close(fd);
	free(lat);
	free(buf);
	return rc;
}
