/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A server asked for port 0 whose listen finds the port picked in use
 * (iwarp on loopback, bind(2) wrapped with GNU ld --wrap).  An iWARP
 * device's RDMA CM picks the port of a port-0 listen apart from the TCP
 * stack, so it can pick one a TCP socket holds; siw's listen then fails
 * with EADDRINUSE (seen in the lab: lab_siw_e2e, svc_create on
 * 192.0.2.1:0).  The wrapper makes our provider's bind fail the same way:
 *  - twice: rpcrdma_svc_create still listens, on a port of its own, and
 *    a client's NULL call is answered there;
 *  - every time: it gives up after its few attempts with
 *    RPCRDMA_ERR_BUSY, leaking nothing (LeakSanitizer);
 *  - on a port asked for by number: no second attempt, BUSY at once
 *    (another port would not be the one asked for).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>

#include "rpcrdma/rpcrdma.h"
#include "test.h"

#define PROG 0x20001234u

int __real_bind(int fd, const struct sockaddr *a, socklen_t l);
int __wrap_bind(int fd, const struct sockaddr *a, socklen_t l);

static atomic_int busy_left; /* binds still to fail with EADDRINUSE */
static atomic_int binds_failed;

int __wrap_bind(int fd, const struct sockaddr *a, socklen_t l)
{
	if (a && a->sa_family == AF_INET && atomic_load(&busy_left) > 0) {
		atomic_fetch_sub(&busy_left, 1);
		atomic_fetch_add(&binds_failed, 1);
		errno = EADDRINUSE;
		return -1;
	}
	return __real_bind(fd, a, l);
}

static enum rpcrdma_svc_stat unused(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	return RPCRDMA_SVC_SYSTEM_ERR;
}

static struct rpcrdma_svc *svc_on(const char *addr, int *rc)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	struct rpcrdma_svc *s = NULL;
	*rc = rpcrdma_svc_create(addr, &o, &s);
	return s;
}

int main(void)
{
	int rc;

	/* Two picks in use: the third listens. */
	atomic_store(&busy_left, 2);
	atomic_store(&binds_failed, 0);
	struct rpcrdma_svc *s = svc_on("127.0.0.1:0", &rc);
	CHECK_EQ(rc, 0);
	CHECK(s != NULL);
	CHECK_EQ(atomic_load(&binds_failed), 2);
	CHECK_EQ(atomic_load(&busy_left), 0);
	if (s) {
		uint16_t port = rpcrdma_svc_port(s);
		CHECK(port != 0);
		/* The NULL procedure of a registered program is answered
		 * without a handler. */
		CHECK_EQ(rpcrdma_svc_register(s, PROG, 1, 1, unused, NULL, 0),
			 0);
		char addr[64];
		snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
		struct rpcrdma_clnt *c = NULL;
		CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, NULL, &c), 0);
		if (c) {
			struct rpcrdma_call call = {.proc = 0};
			struct rpcrdma_reply rep;
			CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), 0);
			CHECK_EQ(rep.len, 0);
			rpcrdma_reply_free(&rep);
			rpcrdma_clnt_destroy(c);
		}
		rpcrdma_svc_destroy(s);
	}

	/* Every pick in use: BUSY after a few attempts. */
	atomic_store(&busy_left, 1000);
	atomic_store(&binds_failed, 0);
	s = svc_on("127.0.0.1:0", &rc);
	CHECK_EQ(rc, RPCRDMA_ERR_BUSY);
	CHECK(s == NULL);
	int tried = atomic_load(&binds_failed);
	CHECK(tried > 1 && tried <= 8);
	printf("port 0 in use at every pick: BUSY after %d attempts\n", tried);

	/* A port asked for by number is that port or nothing. */
	atomic_store(&busy_left, 1000);
	atomic_store(&binds_failed, 0);
	s = svc_on("127.0.0.1:20999", &rc);
	CHECK_EQ(rc, RPCRDMA_ERR_BUSY);
	CHECK(s == NULL);
	CHECK_EQ(atomic_load(&binds_failed), 1);
	atomic_store(&busy_left, 0);
	TEST_MAIN_END();
}
