/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf baselines: the RPC workloads over libtirpc/TCP and their
 * raw-TCP equivalents, so every rpcrdma number has a neighbour measured in
 * the same run, on the same machine, with the same pinning.
 *
 * libtirpc: a svc_vc_create() server registered without rpcbind (protocol
 * 0) and served by the process's svc_run()-style loop (perf_svc.c), so it
 * can stop; clients are clnt_vc_create() on a socket we connect
 * ourselves; the workloads are perf_tirpc_client.c's.  Both sides use
 * 256 KiB record buffers (libtirpc's maximum; its default is 64 KiB), so
 * the baseline is libtirpc at its best, not its default.  The server is
 * single-threaded, as svc_run() is.
 *
 * raw TCP: one thread serving one connection at a time with blocking
 * calls: 64-byte ping-pong, a client->server stream ended by a 64-byte
 * ACK, and a server->client stream.  Every socket has TCP_NODELAY.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include "perf_tirpc.h"

#define TIRPC_BUFSZ (256u * 1024u)
#define MSG 64

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

struct listen_arg {
	const struct sockaddr_storage *addr;
	socklen_t len;
};

static SVCXPRT *tirpc_create(void *arg)
{
	const struct listen_arg *a = arg;
	int fd = listen_on(a->addr, a->len);
	if (fd < 0) {
		perror("rpcrdma-perf: libtirpc listen");
		return NULL;
	}
	SVCXPRT *x = svc_vc_create(fd, TIRPC_BUFSZ, TIRPC_BUFSZ);
	if (!x) {
		fprintf(stderr, "rpcrdma-perf: libtirpc server setup failed\n");
		close(fd);
	}
	return x;
}

static SVCXPRT *tirpc_server_start(const struct sockaddr_storage *addr,
				   socklen_t len, const struct rpcrdma_opts *o)
{
	(void)o;
	struct listen_arg a = {addr, len};
	return pr_svc_start(tirpc_create, &a);
}

static uint16_t tirpc_server_port(SVCXPRT *x)
{
	return bound_port(x->xp_fd);
}

static CLIENT *tirpc_connect(const struct sockaddr_storage *addr,
			     socklen_t len, const struct rpcrdma_opts *o)
{
	(void)o;
	int fd = connect_to(addr, len);
	if (fd < 0) {
		perror("rpcrdma-perf: libtirpc connect");
		return NULL;
	}
	struct netbuf nb = {.maxlen = len, .len = len, .buf = (void *)addr};
	CLIENT *c = clnt_vc_create(fd, &nb, PR_PROG, PR_VERS, TIRPC_BUFSZ,
				   TIRPC_BUFSZ);
	if (!c) {
		clnt_pcreateerror("rpcrdma-perf: clnt_vc_create");
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

static int tirpc_write(CLIENT *c, uint8_t *buf, size_t sz)
{
	struct pr_blob a = {buf, (u_int)sz, PR_MAXSZ};
	u_int got = 0;
	if (clnt_call(c, PR_WRITE, XDRPROC(pr_xdr_blob), (char *)&a,
		      XDRPROC(xdr_u_int), (char *)&got,
		      tirpc_timeout) != RPC_SUCCESS)
		return -1;
	return got == sz ? 0 : -1;
}

static int tirpc_read(CLIENT *c, uint8_t *buf, size_t sz)
{
	u_int want = (u_int)sz;
	struct pr_blob res = {buf, 0, PR_MAXSZ};
	if (clnt_call(c, PR_READ, XDRPROC(xdr_u_int), (char *)&want,
		      XDRPROC(pr_xdr_blob), (char *)&res,
		      tirpc_timeout) != RPC_SUCCESS)
		return -1;
	return res.len == sz ? 0 : -1;
}

const struct pr_clnt_ops pr_tirpc_tcp_ops = {
	.name = "libtirpc",
	.server_start = tirpc_server_start,
	.server_port = tirpc_server_port,
	.connect = tirpc_connect,
	.null = tirpc_null,
	.write = tirpc_write,
	.read = tirpc_read,
	.inflight_note = "32 threads x 1 connection",
};

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
