/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Client reconnection (RFC 8166 §4.5.5; opts.max_retries): the server
 * goes away in the middle of a call and comes back on the same port; the
 * client reconnects on its own, sends the outstanding call again with the
 * same XID, and the call completes exactly once, with the right bytes.
 * Calls made while the connection is down wait for the next one.  When
 * the server never comes back, every call fails once, with
 * RPCRDMA_ERR_DISCONNECTED, after the last attempt.  A server that drops
 * a call (rpcrdma_svc_req_drop) closes the connection without answering;
 * the client resends the call, same XID, on its next connection.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "test.h"

#define PROG 0x20000077u
#define VERS 1u
#define P_ECHO 1u
#define P_SLOW 2u
#define P_DROP 3u

static atomic_int slow_runs;

static void nap_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

static enum rpcrdma_svc_stat echo(struct rpcrdma_svc_req *r, void *arg)
{
	size_t n;
	const void *a = rpcrdma_svc_req_args(r, &n);
	if (arg)
		nap_ms(*(const unsigned *)arg);
	struct rpcrdma_iov v = {(void *)(uintptr_t)a, n, false};
	return rpcrdma_svc_req_reply(r, &v, 1) ? RPCRDMA_SVC_SYSTEM_ERR
					      : RPCRDMA_SVC_OK;
}

static enum rpcrdma_svc_stat slow(struct rpcrdma_svc_req *r, void *arg)
{
	atomic_fetch_add(&slow_runs, 1);
	return echo(r, arg);
}

/* Drops the first call it sees, answers the next; notes XIDs and peers. */
static atomic_uint drop_seen, drop_first_xid, drop_same_xid, drop_peers;

static enum rpcrdma_svc_stat dropper(struct rpcrdma_svc_req *r, void *arg)
{
	uint32_t xid = rpcrdma_svc_req_xid(r);
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	if (rpcrdma_svc_req_peer(r, &ss, &sl) == 0 && sl &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
		atomic_fetch_add(&drop_peers, 1);
	if (atomic_fetch_add(&drop_seen, 1) == 0) {
		atomic_store(&drop_first_xid, xid);
		return rpcrdma_svc_req_drop(r) ? RPCRDMA_SVC_SYSTEM_ERR : RPCRDMA_SVC_OK;
	}
	if (xid == atomic_load(&drop_first_xid))
		atomic_fetch_add(&drop_same_xid, 1);
	return echo(r, arg);
}

static struct rpcrdma_svc *server(const char *addr, unsigned slow_ms)
{
	static unsigned delay;
	delay = slow_ms;
	struct rpcrdma_svc *s = NULL;
	/* Handlers on a worker: the slow one is still running when the
	 * server goes (a handler run on the loop thread would be waited
	 * for, and its reply sent, before the disconnect). */
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.workers = 2;
	/* As in test_e2e: the server may run on another provider. */
	const char *sp = getenv("RPCRDMA_E2E_SERVER_PROVIDER");
	if (sp && *sp)
		o.provider = sp;
	/* The port may take a moment to be free again. */
	for (int i = 0; i < 50 && !s; i++)
		if (rpcrdma_svc_create(addr, &o, &s))
			nap_ms(20);
	if (!s)
		return NULL;
	rpcrdma_svc_register(s, PROG, VERS, P_ECHO, echo, NULL, 0);
	rpcrdma_svc_register(s, PROG, VERS, P_SLOW, slow, &delay, 0);
	rpcrdma_svc_register(s, PROG, VERS, P_DROP, dropper, NULL, 0);
	return s;
}

struct pending {
	atomic_int done;
	int status;
	uint8_t data[64];
	size_t len;
};

static void cb(void *arg, struct rpcrdma_reply *rep)
{
	struct pending *p = arg;
	p->status = rep->status;
	if (!rep->status && rep->len <= sizeof p->data) {
		memcpy(p->data, rep->data, rep->len);
		p->len = rep->len;
	}
	rpcrdma_reply_free(rep);
	atomic_fetch_add(&p->done, 1);
}

static bool wait_done(struct pending *p, unsigned ms)
{
	for (unsigned t = 0; t < ms && !atomic_load(&p->done); t += 10)
		nap_ms(10);
	return atomic_load(&p->done) > 0;
}

static void start(struct rpcrdma_clnt *c, uint32_t proc, uint32_t word,
		  struct pending *p)
{
	static uint32_t args[64];
	uint32_t *a = &args[word % 64];
	*a = word;
	struct rpcrdma_iov v = {a, 4, false};
	struct rpcrdma_call call = {.proc = proc, .args = &v, .nargs = 1,
				    .reply_max = 64};
	memset(p, 0, sizeof *p);
	CHECK_EQ(rpcrdma_clnt_call_async(c, &call, cb, p), 0);
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	char addr[128];
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:0" : "%s:0", host);
	struct rpcrdma_svc *s = server(addr, 300);
	if (!s) {
		printf("SKIP: no server\n");
		return 77;
	}
	uint16_t port = rpcrdma_svc_port(s);
	snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%u" : "%s:%u",
		 host, port);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.max_retries = 4;
	o.call_timeout_ms = 20000;
	struct rpcrdma_clnt *c = NULL;
	CHECK_EQ(rpcrdma_clnt_create(addr, PROG, VERS, &o, &c), 0);
	if (!c)
		TEST_MAIN_END();

	/* 1. A call on the first connection. */
	struct pending p1;
	start(c, P_ECHO, 11, &p1);
	CHECK(wait_done(&p1, 5000));
	CHECK_EQ(p1.status, 0);

	/* 2. The server dies while a slow call is in its handler, and a
	 * new one comes up on the same port. */
	struct pending p2, p3;
	start(c, P_SLOW, 22, &p2);
	for (int i = 0; i < 300 && !atomic_load(&slow_runs); i++)
		nap_ms(5);
	CHECK_EQ(atomic_load(&slow_runs), 1);
	rpcrdma_svc_destroy(s);
	/* A call made while the connection is down waits for the next. */
	start(c, P_ECHO, 33, &p3);
	s = server(addr, 0);
	CHECK(s != NULL);
	CHECK(wait_done(&p2, 10000));
	CHECK(wait_done(&p3, 10000));
	CHECK_EQ(p2.status, 0);
	CHECK_EQ(p3.status, 0);
	uint32_t w;
	memcpy(&w, p2.data, 4);
	CHECK_EQ(p2.len, 4);
	CHECK_EQ(w, 22);
	memcpy(&w, p3.data, 4);
	CHECK_EQ(w, 33);
	nap_ms(100);
	CHECK_EQ(atomic_load(&p2.done), 1); /* exactly once */
	CHECK_EQ(atomic_load(&p3.done), 1);
	/* The slow call ran again on the new server: same XID, resent. */
	CHECK_EQ(atomic_load(&slow_runs), 2);
	struct rpcrdma_stats st;
	CHECK_EQ(rpcrdma_clnt_stats(c, &st), 0);
	CHECK_EQ(st.reconnects, 1);
	CHECK_EQ(st.retransmissions, 1);
	CHECK_EQ(st.connections, 2);
	printf("reconnected: %llu, calls resent: %llu\n",
	       (unsigned long long)st.reconnects,
	       (unsigned long long)st.retransmissions);

	/* 2b. The server drops a call: no reply, the connection closes;
	 * the client reconnects and resends it with the same XID, and the
	 * second time it is answered. */
	struct pending p5;
	start(c, P_DROP, 55, &p5);
	CHECK(wait_done(&p5, 10000));
	CHECK_EQ(p5.status, 0);
	memcpy(&w, p5.data, 4);
	CHECK_EQ(w, 55);
	nap_ms(100);
	CHECK_EQ(atomic_load(&p5.done), 1);
	CHECK_EQ(atomic_load(&drop_seen), 2);
	CHECK_EQ(atomic_load(&drop_same_xid), 1);
	CHECK_EQ(atomic_load(&drop_peers), 2);
	CHECK_EQ(rpcrdma_clnt_stats(c, &st), 0);
	CHECK_EQ(st.reconnects, 2);
	CHECK_EQ(st.retransmissions, 2);

	/* 3. The server goes for good: every call fails once, clearly. */
	struct pending p4;
	rpcrdma_svc_destroy(s);
	s = NULL;
	nap_ms(50);
	start(c, P_ECHO, 44, &p4);
	CHECK(wait_done(&p4, 15000));
	CHECK_EQ(p4.status, RPCRDMA_ERR_DISCONNECTED);
	nap_ms(100);
	CHECK_EQ(atomic_load(&p4.done), 1);
	/* And afterwards the handle says so at once. */
	struct rpcrdma_iov v = {&w, 4, false};
	struct rpcrdma_call call = {.proc = P_ECHO, .args = &v, .nargs = 1,
				    .reply_max = 64};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(c, &call, &rep), RPCRDMA_ERR_DISCONNECTED);
	rpcrdma_reply_free(&rep);
	rpcrdma_clnt_destroy(c);
	TEST_MAIN_END();
}
