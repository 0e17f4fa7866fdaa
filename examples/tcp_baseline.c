/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The demo's libtirpc/TCP baseline transports (tcp_baseline.h). */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_baseline.h"

/* "host:port" or "[v6]:port" -> one numeric address. */
static int resolve(const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *colon = strrchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof(host)) {
		fprintf(stderr, "tcp baseline: %s: expected HOST:PORT\n", hostport);
		return -1;
	}
	const char *h = hostport;
	size_t hl = (size_t)(colon - hostport);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc) {
		fprintf(stderr, "tcp baseline: %s: %s\n", hostport, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* Small calls must not wait for Nagle's algorithm (accepted sockets
 * inherit the option from the listener on Linux). */
static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

SVCXPRT *tcp_baseline_listen(const char *hostport, unsigned *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (resolve(hostport, &ss, &len) < 0)
		return NULL;
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0) {
		perror("tcp baseline: listen");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	nodelay(fd);
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					       : ((struct sockaddr_in *)&ss)->sin_port);
	SVCXPRT *x = svc_vc_create(fd, TCP_BASELINE_BUFSZ, TCP_BASELINE_BUFSZ);
	if (!x) {
		fprintf(stderr, "tcp baseline: svc_vc_create failed\n");
		close(fd);
	}
	return x;
}

CLIENT *tcp_baseline_client(const char *hostport, rpcprog_t prog, rpcvers_t vers)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (resolve(hostport, &ss, &len) < 0)
		return NULL;
	int fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0) {
		perror("tcp baseline: connect");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	nodelay(fd);
	struct netbuf nb = { .maxlen = len, .len = len, .buf = &ss };
	CLIENT *c = clnt_vc_create(fd, &nb, prog, vers, TCP_BASELINE_BUFSZ,
				   TCP_BASELINE_BUFSZ);
	if (!c) {
		clnt_pcreateerror("tcp baseline: clnt_vc_create");
		close(fd);
		return NULL;
	}
	clnt_control(c, CLSET_FD_CLOSE, NULL);
	return c;
}
