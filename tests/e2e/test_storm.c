/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * First calls under a connection storm against a starved server (iwarp
 * on loopback, version 2 preferred, as by default).  The server runs in a
 * child process that this test stops (SIGSTOP) and lets go (SIGCONT), as
 * a server starved of CPU is; clients are several processes with many
 * connections each.
 *
 *  late_openers  the clients reach the server through a relay (a TCP
 *                proxy: the iwarp provider runs over TCP) that passes
 *                the MPA handshake at once and holds everything after it
 *                for 3.5 s, longer than a client waits for the answer to
 *                its v2 opener (the engine's neg_timeout_ms, 2 s): every
 *                opener reaches the server late, as from a server too
 *                busy to read it.  Each client gives its opener up and
 *                falls back to version 1 on a new connection (draft §7.2;
 *                the server, which follows the opener it got late, §7.1,
 *                would answer v1 calls on the first connection with
 *                ERR_VERS: the failure seen under load before).  Every
 *                first call must succeed, and openers must have been
 *                given up (the path was taken).
 *  storm         client processes open their connections all at once,
 *                from several threads each, and make their first call on
 *                each as soon as it is open, while the server is stopped
 *                and let go in bursts.  Every first call on a connection
 *                that opened must succeed; connections that could not be
 *                opened (a connect time-out while the server was
 *                stopped) are counted and printed.
 *
 * What is asserted is correctness (every call ended well); how long
 * anything took is printed, never compared.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "test.h"

#define PROG 0x20000170u
#define NPROC 4                 /* client processes */
#define NCONN 48                /* connections per client process */
#define NTHREAD 8               /* storm: connecting threads per process */
#define MAXKINDS 8

static void nap_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static enum rpcrdma_svc_stat nothing(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	return RPCRDMA_SVC_OK;
}

/* Errors by code, a few kinds. */
struct kinds {
	int code[MAXKINDS];
	unsigned n[MAXKINDS];
	unsigned used;
};

static void kind_add(struct kinds *k, int code)
{
	for (unsigned i = 0; i < k->used; i++)
		if (k->code[i] == code) {
			k->n[i]++;
			return;
		}
	if (k->used < MAXKINDS) {
		k->code[k->used] = code;
		k->n[k->used++] = 1;
	} else {
		k->n[MAXKINDS - 1]++;
	}
}

static void kinds_print(const char *what, const struct kinds *k)
{
	for (unsigned i = 0; i < k->used; i++)
		printf("  %s: %u x %s\n", what, k->n[i],
		       rpcrdma_strerror(k->code[i]));
}

/* What a client process reports. */
struct report {
	unsigned conn_ok, conn_failed, first_ok, first_failed;
	unsigned long long fallbacks, reconnects;
	struct kinds conn_err, first_err;
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t k = read(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * The server, in a process of its own.
 */
static pid_t server_pid;
static char server_addr[64];

static bool server_start(void)
{
	int up[2];
	if (pipe(up))
		return false;
	server_pid = fork();
	if (server_pid < 0)
		return false;
	if (server_pid == 0) {
		close(up[0]);
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = "iwarp";
		struct rpcrdma_svc *s = NULL;
		unsigned port = 0;
		if (rpcrdma_svc_create("127.0.0.1:0", &o, &s) == 0 &&
		    rpcrdma_svc_register(s, PROG, 1, 1, nothing, NULL, 0) == 0)
			port = rpcrdma_svc_port(s);
		if (write_all(up[1], &port, sizeof port) < 0 || !port)
			_exit(2);
		close(up[1]);
		for (;;)
			pause(); /* until SIGTERM */
	}
	close(up[1]);
	unsigned port = 0;
	bool ok = read_all(up[0], &port, sizeof port) == 0 && port;
	close(up[0]);
	snprintf(server_addr, sizeof server_addr, "127.0.0.1:%u", port);
	return ok;
}

static void server_stop(void)
{
	kill(server_pid, SIGCONT);
	kill(server_pid, SIGTERM);
	waitpid(server_pid, NULL, 0);
}

/* ---------------------------------------------------------------------
 * The relay of late_openers, in a process of its own: every connection
 * to it is relayed to the server; the MPA Request (RFC 5044 §7.1: a
 * 16-byte key, flags, revision, a 16-bit private data length, the
 * private data) at once, then the client's bytes held for HOLD_MS from
 * the first of them on, then everything as it comes.  Two threads per
 * connection, blocking I/O.
 */
#define HOLD_MS 3500u
#define MPA_HDR 20u

static pid_t relay_pid;
static char relay_addr[64];

struct pipe_pair {
	int from, to;
	bool client_side;       /* client -> server: the MPA rule */
};

static bool relay_exact(int fd, uint8_t *buf, size_t n)
{
	return read_all(fd, buf, n) == 0;
}

static void *relay_dir(void *arg)
{
	struct pipe_pair *pp = arg;
	uint8_t buf[65536];
	if (pp->client_side) {
		/* The MPA Request, at once. */
		if (!relay_exact(pp->from, buf, MPA_HDR))
			goto out;
		size_t pd = (size_t)buf[18] << 8 | buf[19];
		if (pd > sizeof buf - MPA_HDR ||
		    !relay_exact(pp->from, buf + MPA_HDR, pd) ||
		    write_all(pp->to, buf, MPA_HDR + pd) < 0)
			goto out;
		/* The first bytes after it, and the hold. */
		ssize_t n = read(pp->from, buf, sizeof buf);
		if (n <= 0)
			goto out;
		nap_ms(HOLD_MS);
		if (write_all(pp->to, buf, (size_t)n) < 0)
			goto out;
	}
	for (;;) {
		ssize_t n = read(pp->from, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || write_all(pp->to, buf, (size_t)n) < 0)
			break;
	}
out:
	shutdown(pp->to, SHUT_WR);
	shutdown(pp->from, SHUT_RD);
	return NULL;
}

static void *relay_conn(void *arg)
{
	int c = (int)(intptr_t)arg;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	unsigned port = 0;
	sscanf(strchr(server_addr, ':') + 1, "%u", &port);
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof sa) == 0) {
		struct pipe_pair up = {c, s, true}, down = {s, c, false};
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256 << 10);
		if (pthread_create(&t, &at, relay_dir, &down) == 0) {
			relay_dir(&up);
			pthread_join(t, NULL);
		}
		pthread_attr_destroy(&at);
	}
	if (s >= 0)
		close(s);
	close(c);
	return NULL;
}

static bool relay_start(void)
{
	int up[2];
	if (pipe(up))
		return false;
	fflush(stdout);
	relay_pid = fork();
	if (relay_pid < 0)
		return false;
	if (relay_pid == 0) {
		close(up[0]);
		int l = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t sl = sizeof sa;
		unsigned port = 0;
		if (l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		    listen(l, 1024) == 0 &&
		    getsockname(l, (struct sockaddr *)&sa, &sl) == 0)
			port = ntohs(sa.sin_port);
		if (write_all(up[1], &port, sizeof port) < 0 || !port)
			_exit(2);
		close(up[1]);
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256 << 10);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		for (;;) {
			int c = accept(l, NULL, NULL);
			if (c < 0)
				continue;
			pthread_t t;
			if (pthread_create(&t, &at, relay_conn,
					   (void *)(intptr_t)c) != 0)
				close(c);
		}
	}
	close(up[1]);
	unsigned port = 0;
	bool ok = read_all(up[0], &port, sizeof port) == 0 && port;
	close(up[0]);
	snprintf(relay_addr, sizeof relay_addr, "127.0.0.1:%u", port);
	return ok;
}

static void relay_stop(void)
{
	kill(relay_pid, SIGKILL);
	waitpid(relay_pid, NULL, 0);
}

/* ---------------------------------------------------------------------
 * A client process.
 */
static const char *target; /* the server, or the relay */
static struct rpcrdma_clnt *conns[NCONN];
static struct report rep;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned pending;
static atomic_uint next_conn;

static void open_one(unsigned i)
{
	int rc = rpcrdma_clnt_create(target, PROG, 1, NULL, &conns[i]);
	pthread_mutex_lock(&mu);
	if (rc == 0) {
		rep.conn_ok++;
	} else {
		conns[i] = NULL;
		rep.conn_failed++;
		kind_add(&rep.conn_err, rc);
	}
	pthread_mutex_unlock(&mu);
}

static void first_done(int status)
{
	pthread_mutex_lock(&mu);
	if (status == 0) {
		rep.first_ok++;
	} else {
		rep.first_failed++;
		kind_add(&rep.first_err, status);
	}
	pending--;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void first_cb(void *arg, struct rpcrdma_reply *r)
{
	(void)arg;
	int st = r->status;
	rpcrdma_reply_free(r);
	first_done(st);
}

/* storm: each thread opens the next connection and makes its first call
 * on it at once (synchronous NULL). */
static void *storm_thread(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned i = atomic_fetch_add(&next_conn, 1);
		if (i >= NCONN)
			return NULL;
		open_one(i);
		if (!conns[i])
			continue;
		struct rpcrdma_call call = {.proc = 0};
		struct rpcrdma_reply r;
		int st = rpcrdma_clnt_call(conns[i], &call, &r);
		rpcrdma_reply_free(&r);
		pthread_mutex_lock(&mu);
		pending++; /* first_done takes it off */
		pthread_mutex_unlock(&mu);
		first_done(st);
	}
}

static void close_all(void)
{
	struct rpcrdma_stats s;
	for (unsigned i = 0; i < NCONN; i++) {
		if (!conns[i])
			continue;
		if (rpcrdma_clnt_stats(conns[i], &s) == 0) {
			rep.fallbacks += s.vers_fallbacks;
			rep.reconnects += s.reconnects;
		}
		rpcrdma_clnt_destroy(conns[i]);
	}
}

/* late_openers: opens every connection, says so (one byte), waits for
 * the go (one byte), makes the first call on each (asynchronous, all at
 * once), waits for them, reports. */
static int client_late(int up, int down)
{
	for (unsigned i = 0; i < NCONN; i++)
		open_one(i);
	char b = 'r';
	if (write_all(up, &b, 1) < 0 || read_all(down, &b, 1) < 0)
		return 1;
	struct rpcrdma_call call = {.proc = 0};
	for (unsigned i = 0; i < NCONN; i++) {
		if (!conns[i])
			continue;
		pthread_mutex_lock(&mu);
		pending++;
		pthread_mutex_unlock(&mu);
		int rc = rpcrdma_clnt_call_async(conns[i], &call, first_cb, NULL);
		if (rc)
			first_done(rc);
	}
	pthread_mutex_lock(&mu);
	while (pending)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	close_all();
	return write_all(up, &rep, sizeof rep) < 0;
}

static int client_storm(int up, int down)
{
	(void)down;
	pthread_t th[NTHREAD];
	unsigned n = 0;
	for (unsigned i = 0; i < NTHREAD; i++)
		if (pthread_create(&th[n], NULL, storm_thread, NULL) == 0)
			n++;
	if (!n)
		storm_thread(NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	close_all();
	return write_all(up, &rep, sizeof rep) < 0;
}

/* ---------------------------------------------------------------------
 * The test.
 */
struct client {
	pid_t pid;
	int up, down;
};

static bool clients_start(struct client *c, bool storm)
{
	for (unsigned k = 0; k < NPROC; k++) {
		int up[2], down[2];
		if (pipe(up) || pipe(down))
			return false;
		fflush(stdout);
		c[k].pid = fork();
		if (c[k].pid < 0)
			return false;
		if (c[k].pid == 0) {
			close(up[0]);
			close(down[1]);
			_exit(storm ? client_storm(up[1], down[0])
				    : client_late(up[1], down[0]));
		}
		close(up[1]);
		close(down[0]);
		c[k].up = up[0];
		c[k].down = down[1];
	}
	return true;
}

/* Every client's report, added up; false if one did not report. */
static bool clients_end(struct client *c, struct report *sum)
{
	bool ok = true;
	memset(sum, 0, sizeof *sum);
	for (unsigned k = 0; k < NPROC; k++) {
		struct report r;
		if (read_all(c[k].up, &r, sizeof r) < 0) {
			ok = false;
		} else {
			sum->conn_ok += r.conn_ok;
			sum->conn_failed += r.conn_failed;
			sum->first_ok += r.first_ok;
			sum->first_failed += r.first_failed;
			sum->fallbacks += r.fallbacks;
			sum->reconnects += r.reconnects;
			for (unsigned i = 0; i < r.conn_err.used; i++)
				for (unsigned j = 0; j < r.conn_err.n[i]; j++)
					kind_add(&sum->conn_err, r.conn_err.code[i]);
			for (unsigned i = 0; i < r.first_err.used; i++)
				for (unsigned j = 0; j < r.first_err.n[i]; j++)
					kind_add(&sum->first_err, r.first_err.code[i]);
		}
		close(c[k].up);
		close(c[k].down);
		int st = 0;
		waitpid(c[k].pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			ok = false;
	}
	return ok;
}

static void print_report(const char *name, const struct report *r,
			 uint64_t ms)
{
	printf("%s: %u connections opened, %u not; first calls %u ok, %u "
	       "failed; %llu v2 openers given up (fallback to v1 on a new "
	       "connection), %llu reconnections; %llu ms\n",
	       name, r->conn_ok, r->conn_failed, r->first_ok, r->first_failed,
	       r->fallbacks, r->reconnects, (unsigned long long)ms);
	kinds_print("connect failed", &r->conn_err);
	kinds_print("first call failed", &r->first_err);
}

static void test_late_openers(void)
{
	CHECK(server_start());
	CHECK(relay_start());
	target = relay_addr;
	struct client c[NPROC];
	uint64_t t0 = now_ms();
	CHECK(clients_start(c, false));
	/* Every process has its connections open (their openers held by
	 * the relay); then the first calls, all at once. */
	for (unsigned k = 0; k < NPROC; k++) {
		char b;
		CHECK(read_all(c[k].up, &b, 1) == 0);
	}
	for (unsigned k = 0; k < NPROC; k++)
		CHECK(write_all(c[k].down, "g", 1) == 0);
	struct report r;
	CHECK(clients_end(c, &r));
	print_report("late_openers", &r, now_ms() - t0);
	CHECK_EQ(r.conn_ok, NPROC * NCONN);
	CHECK_EQ(r.first_failed, 0);
	CHECK_EQ(r.first_ok, r.conn_ok);
	/* The openers reached the server 1.5 s after the clients had
	 * given them up: the fallback was taken (how many depends on when
	 * each client looked at its clock; none would mean the path was
	 * not tested). */
	CHECK(r.fallbacks > 0);
	relay_stop();
	server_stop();
}

static void test_storm(void)
{
	CHECK(server_start());
	target = server_addr;
	struct client c[NPROC];
	uint64_t t0 = now_ms();
	CHECK(clients_start(c, true));
	/* Stopped and let go in bursts while the clients storm: stops of
	 * 2.5 s (longer than a v2 opener is waited for) and runs of 0.3 s,
	 * until every client process is done, for 20 s at most. */
	bool done = false;
	for (int burst = 0; !done && now_ms() - t0 < 20000; burst++) {
		kill(server_pid, burst % 2 ? SIGCONT : SIGSTOP);
		uint64_t until = now_ms() + (burst % 2 ? 300 : 2500);
		while (!done && now_ms() < until) {
			/* Done: every client's report is waiting. */
			struct pollfd pf[NPROC];
			for (unsigned k = 0; k < NPROC; k++)
				pf[k] = (struct pollfd){c[k].up, POLLIN, 0};
			int n = poll(pf, NPROC, 50);
			unsigned ready = 0;
			for (unsigned k = 0; n > 0 && k < NPROC; k++)
				ready += (pf[k].revents & (POLLIN | POLLHUP)) != 0;
			done = ready == NPROC;
		}
	}
	kill(server_pid, SIGCONT);
	struct report r;
	CHECK(clients_end(c, &r));
	print_report("storm", &r, now_ms() - t0);
	CHECK(r.conn_ok > 0);
	CHECK_EQ(r.conn_ok + r.conn_failed, NPROC * NCONN);
	CHECK_EQ(r.first_failed, 0);
	CHECK_EQ(r.first_ok, r.conn_ok);
	/* A connection not made is refused or timed out, nothing else. */
	for (unsigned i = 0; i < r.conn_err.used; i++)
		CHECK(r.conn_err.code[i] == RPCRDMA_ERR_TIMEOUT ||
		      r.conn_err.code[i] == RPCRDMA_ERR_CONNREFUSED);
	server_stop();
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	/* Each client has NCONN connections of a few descriptors each. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "late_openers"))
		test_late_openers();
	else if (!strcmp(what, "storm"))
		test_storm();
	else {
		fprintf(stderr, "usage: test_storm late_openers|storm\n");
		return 2;
	}
	TEST_MAIN_END();
}
