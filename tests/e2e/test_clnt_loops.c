/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The client loops of a process (rpc/clnt.c): every client connection of
 * the process is attended by one of a few shared event-loop threads
 * ("rpcrdma-clntN"), not a thread of its own.  iwarp on loopback; the
 * server runs in another process (this program, "serve"), so every loop
 * thread of this one is a client's.
 *
 *  share     64 clients with threads 4: at most 4 client loop threads
 *            (counted in /proc/self/task), 16 clients on each (a new
 *            client goes to the loop with the fewest: the thread an
 *            asynchronous callback runs on says which); each client's
 *            calls, synchronous and asynchronous, get their own answers.
 *            Half destroyed: the rest still work.  All destroyed: no
 *            client loop thread is left.  A client made after that gets
 *            a loop again.
 *  callback  clients destroyed from inside asynchronous callbacks, on
 *            their loop's thread: a client by the callback of another on
 *            the same loop (its call in progress completes once, with
 *            RPCRDMA_ERR_CANCELLED), a client by its own callback, two
 *            loops each destroying a client of the other at once (no
 *            loop waits for another), and the last client by its own
 *            callback: the loop threads are gone soon after.
 *  stats     two clients on one loop, one destroyed: the counters are
 *            still served to a reader (the loop still watches the
 *            export's socket for the other).
 *  reconnect six clients on two loops, max_retries: the server process
 *            goes and another comes on the same port; every client
 *            reconnects on its own and its next call is served.
 *  fork      a child forked while clients are open makes a client of its
 *            own (loops of its own), calls and destroys it; the parent's
 *            clients still work.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpc/stats_export.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"
#include "threads.h"

/* The fork test runs in the builds without a sanitizer (Release in CI).
 * ThreadSanitizer does not follow a threaded process's child that makes
 * threads.  AddressSanitizer (gcc 12's) does not hold its allocator's
 * locks across fork(): a child whose parent had a thread inside malloc
 * at that instant inherits the lock held, and its first allocation of
 * that size waits for ever.  Seen in CI94 (1 run in 4 on that machine):
 * the child's new loop thread blocked in asan_calloc, in
 * SizeClassAllocator64::GetFromAllocator, its main thread on the
 * connection lock that thread held.  glibc's malloc, which the Release
 * build uses, takes its arenas' locks around fork (and so do our own
 * pthread_atfork handlers, rpc/dev.c, rpc/clnt.c, for the library's). */
#include "common/sanitizers.h"
#if defined(RPCRDMA_TSAN) || defined(RPCRDMA_ASAN)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

#define PROG 0x20000778u
#define NCLNT 64
#define NLOOPS 4

static char addr[64];
static int life = -1; /* the server process ends when it is closed */
static pid_t srv;

/* ---------------------------------------------------------------------
 * The server (a child process)
 */
/* Procedure 1 answers with its arguments. */
static enum rpcrdma_svc_stat echo(struct rpcrdma_svc_req *r, void *arg)
{
	(void)arg;
	size_t len = 0;
	const void *a = rpcrdma_svc_req_args(r, &len);
	uint8_t *res = rpcrdma_svc_req_alloc(r, len ? len : 4);
	if (!res)
		return RPCRDMA_SVC_SYSTEM_ERR;
	if (len)
		memcpy(res, a, len);
	struct rpcrdma_iov iov = {.base = res, .len = len};
	return rpcrdma_svc_req_reply(r, &iov, 1) == 0 ? RPCRDMA_SVC_OK
						       : RPCRDMA_SVC_SYSTEM_ERR;
}

/* Procedure 2 answers after a second (on a worker). */
static enum rpcrdma_svc_stat late(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	sleep_ms(1000);
	return RPCRDMA_SVC_OK;
}

/* The server process (this program run as "serve PORT"): writes its
 * port on fd 3, ends when fd 4 reaches its end. */
static int serve(unsigned port_wanted)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.workers = 2;
	struct rpcrdma_svc *s = NULL;
	char where[64];
	snprintf(where, sizeof where, "127.0.0.1:%u", port_wanted);
	if (rpcrdma_svc_create(where, &o, &s) != 0 ||
	    rpcrdma_svc_register(s, PROG, 1, 1, echo, NULL, 0) != 0 ||
	    rpcrdma_svc_register(s, PROG, 1, 2, late, NULL, 0) != 0)
		return 2;
	uint16_t port = rpcrdma_svc_port(s);
	if (write(3, &port, sizeof port) != sizeof port)
		return 2;
	close(3);
	char b;
	while (read(4, &b, 1) > 0)
		;
	rpcrdma_svc_destroy(s);
	return 0;
}

/* Starts the server process on port (0: any), a new program image (this
 * process has threads once clients exist); its address in addr.  It ends
 * when *wfd is closed. */
static pid_t server_start(unsigned port_wanted, int *wfd)
{
	int port_pipe[2], lp[2];
	if (pipe(port_pipe) || pipe(lp))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* Fds 3 and 4, and nothing else of this process (the other
		 * ends, the clients' sockets). */
		int w = fcntl(port_pipe[1], F_DUPFD, 5);
		int r = fcntl(lp[0], F_DUPFD, 5);
		if (w < 0 || r < 0 || dup2(w, 3) < 0 || dup2(r, 4) < 0)
			_exit(2);
		long most = sysconf(_SC_OPEN_MAX);
		for (long fd = 5; fd < (most > 0 && most < 65536 ? most : 65536);
		     fd++)
			close((int)fd);
		char arg[16];
		snprintf(arg, sizeof arg, "%u", port_wanted);
		execl("/proc/self/exe", "test_clnt_loops", "serve", arg,
		      (char *)NULL);
		_exit(2);
	}
	close(port_pipe[1]);
	close(lp[0]);
	uint16_t port = 0;
	if (pid < 0 || read(port_pipe[0], &port, sizeof port) != sizeof port) {
		close(port_pipe[0]);
		close(lp[1]);
		return -1;
	}
	close(port_pipe[0]);
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	*wfd = lp[1];
	return pid;
}

/* ---------------------------------------------------------------------
 * Helpers
 */
/* Threads of this process whose name starts with "rpcrdma-clnt". */
static int clnt_threads(void)
{
	return thread_switches("rpcrdma-clnt", NULL, 0);
}

/* Waits up to ms for the client loop threads to be n. */
static int clnt_threads_become(int n, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	int k;
	while ((k = clnt_threads()) != n && now_ms() < end)
		sleep_ms(10);
	return k;
}

static struct rpcrdma_clnt *mk(unsigned threads)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.threads = threads;
	struct rpcrdma_clnt *c = NULL;
	CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, &o, &c), 0);
	return c;
}

/* A synchronous echo of v: true when v came back. */
static bool echo_ok(struct rpcrdma_clnt *c, uint32_t v)
{
	uint8_t a[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16),
			(uint8_t)(v >> 8), (uint8_t)v};
	struct rpcrdma_iov iov = {.base = a, .len = 4};
	struct rpcrdma_call call = {.proc = 1, .args = &iov, .nargs = 1,
				    .reply_max = 64};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(c, &call, &rep);
	bool ok = rc == 0 && rep.len == 4 && memcmp(rep.data, a, 4) == 0;
	rpcrdma_reply_free(&rep);
	return ok;
}

/* An asynchronous call's outcome, and the thread its callback ran on. */
struct outcome {
	uint8_t arg[4];
	_Atomic int done;          /* callbacks run */
	int status;
	bool echoed;
	char thread[16];
	struct rpcrdma_clnt *destroy; /* the callback destroys it */
};

static void on_reply(void *arg, struct rpcrdma_reply *rep)
{
	struct outcome *o = arg;
	o->status = rep->status;
	o->echoed = rep->status == 0 && rep->len == 4 &&
		    memcmp(rep->data, o->arg, 4) == 0;
	pthread_getname_np(pthread_self(), o->thread, sizeof o->thread);
	rpcrdma_reply_free(rep);
	if (o->destroy)
		rpcrdma_clnt_destroy(o->destroy);
	atomic_fetch_add(&o->done, 1);
}

static int start(struct rpcrdma_clnt *c, uint32_t proc, uint32_t v,
		 struct outcome *o)
{
	o->arg[0] = (uint8_t)(v >> 24);
	o->arg[1] = (uint8_t)(v >> 16);
	o->arg[2] = (uint8_t)(v >> 8);
	o->arg[3] = (uint8_t)v;
	struct rpcrdma_iov io = {.base = o->arg, .len = 4};
	struct rpcrdma_call call = {.proc = proc, .args = &io, .nargs = 1,
				    .reply_max = 64};
	return rpcrdma_clnt_call_async(c, &call, on_reply, o);
}

static bool wait_done(struct outcome *o, int n, unsigned ms)
{
	uint64_t end = now_ms() + ms;
	while (atomic_load(&o->done) < n && now_ms() < end)
		sleep_ms(1);
	return atomic_load(&o->done) == n;
}

/* ---------------------------------------------------------------------
 * Tests
 */
static void share(void)
{
	static struct rpcrdma_clnt *c[NCLNT];
	static struct outcome o[NCLNT];
	CHECK_EQ(clnt_threads(), 0);
	for (int i = 0; i < NCLNT; i++)
		c[i] = mk(NLOOPS);
	int nt = clnt_threads();
	printf("%d clients: %d client loop threads\n", NCLNT, nt);
	CHECK_EQ(nt, NLOOPS);
	/* Calls of every client at once, then each one's own. */
	memset(o, 0, sizeof o);
	for (int i = 0; i < NCLNT; i++)
		if (c[i])
			CHECK_EQ(start(c[i], 1, 1000u + (unsigned)i, &o[i]), 0);
	int per[NLOOPS] = {0};
	for (int i = 0; i < NCLNT; i++) {
		if (!c[i])
			continue;
		CHECK(wait_done(&o[i], 1, 10000));
		CHECK_EQ(o[i].status, 0);
		CHECK(o[i].echoed);
		CHECK(strncmp(o[i].thread, "rpcrdma-clnt", 12) == 0);
		int g = atoi(o[i].thread + 12);
		CHECK(g >= 0 && g < NLOOPS);
		if (g >= 0 && g < NLOOPS)
			per[g]++;
		CHECK(echo_ok(c[i], 2000u + (unsigned)i));
	}
	for (int g = 0; g < NLOOPS; g++)
		CHECK_EQ(per[g], NCLNT / NLOOPS);

	/* Half go; the others still work, on the same threads. */
	for (int i = 0; i < NCLNT; i += 2) {
		rpcrdma_clnt_destroy(c[i]);
		c[i] = NULL;
	}
	CHECK_EQ(clnt_threads(), NLOOPS);
	memset(o, 0, sizeof o);
	for (int i = 1; i < NCLNT; i += 2)
		if (c[i])
			CHECK_EQ(start(c[i], 1, 3000u + (unsigned)i, &o[i]), 0);
	for (int i = 1; i < NCLNT; i += 2) {
		if (!c[i])
			continue;
		CHECK(wait_done(&o[i], 1, 10000));
		CHECK(o[i].echoed);
		CHECK(echo_ok(c[i], 4000u + (unsigned)i));
	}
	for (int i = 1; i < NCLNT; i += 2) {
		rpcrdma_clnt_destroy(c[i]);
		c[i] = NULL;
	}
	/* The last destroy, on this thread, stopped them. */
	CHECK_EQ(clnt_threads(), 0);
	struct rpcrdma_clnt *d = mk(NLOOPS);
	CHECK_EQ(clnt_threads(), 1); /* one client: one loop started */
	if (d)
		CHECK(echo_ok(d, 5));
	rpcrdma_clnt_destroy(d);
	CHECK_EQ(clnt_threads(), 0);
}

static void callback(void)
{
	/* One loop: destroys from callbacks on the thread that attends
	 * the client destroyed. */
	struct rpcrdma_clnt *a = mk(1), *b = mk(1), *c = mk(1), *d = mk(1);
	CHECK_EQ(clnt_threads(), 1);
	if (!a || !b || !c || !d)
		return;
	/* a has a call in progress (answered in a second); b's callback
	 * destroys a: a's call completes once, cancelled. */
	struct outcome oa, ob, oc;
	memset(&oa, 0, sizeof oa);
	memset(&ob, 0, sizeof ob);
	memset(&oc, 0, sizeof oc);
	CHECK_EQ(start(a, 2, 1, &oa), 0);
	ob.destroy = a;
	CHECK_EQ(start(b, 1, 2, &ob), 0);
	CHECK(wait_done(&ob, 1, 10000));
	CHECK(wait_done(&oa, 1, 10000));
	CHECK_EQ(oa.status, RPCRDMA_ERR_CANCELLED);
	CHECK(ob.echoed);
	/* c's own callback destroys c. */
	oc.destroy = c;
	CHECK_EQ(start(c, 1, 3, &oc), 0);
	CHECK(wait_done(&oc, 1, 10000));
	CHECK(oc.echoed);
	sleep_ms(1200); /* a's late answer comes to nobody */
	CHECK_EQ(atomic_load(&oa.done), 1);
	CHECK(echo_ok(b, 4));
	CHECK(echo_ok(d, 5));
	CHECK_EQ(clnt_threads(), 1);
	rpcrdma_clnt_destroy(b);
	rpcrdma_clnt_destroy(d);
	CHECK_EQ(clnt_threads(), 0);

	/* Two loops, each destroying a client of the other at the same
	 * time (the fewest, the running one among equals: x0 and x2 on
	 * one loop, x1 and x3 on the other). */
	struct rpcrdma_clnt *x[4];
	for (int i = 0; i < 4; i++)
		x[i] = mk(2);
	CHECK_EQ(clnt_threads(), 2);
	if (!x[0] || !x[1] || !x[2] || !x[3])
		return;
	struct outcome ox[4];
	memset(ox, 0, sizeof ox);
	ox[0].destroy = x[3];
	ox[1].destroy = x[2];
	CHECK_EQ(start(x[0], 1, 10, &ox[0]), 0);
	CHECK_EQ(start(x[1], 1, 11, &ox[1]), 0);
	CHECK(wait_done(&ox[0], 1, 10000));
	CHECK(wait_done(&ox[1], 1, 10000));
	CHECK(ox[0].echoed && ox[1].echoed);
	CHECK(strcmp(ox[0].thread, ox[1].thread) != 0);
	CHECK(echo_ok(x[0], 12));
	CHECK(echo_ok(x[1], 13));
	rpcrdma_clnt_destroy(x[1]);
	/* The last one by its own callback: its loop cannot join itself;
	 * the loops still go. */
	ox[2].destroy = x[0];
	CHECK_EQ(start(x[0], 1, 14, &ox[2]), 0);
	CHECK(wait_done(&ox[2], 1, 10000));
	CHECK(ox[2].echoed);
	CHECK_EQ(clnt_threads_become(0, 5000), 0);
}

/* The number of client entries in this process's exported counters, or
 * -1 when nobody answers within 2 s. */
static int exported_clients(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s%ld",
			 RPCRDMA_STATX_SOCKET, (long)getpid());
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    (size_t)n);
	struct timeval tv = {2, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, len) != 0) {
		close(fd);
		return -1;
	}
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof u.buf};
	ssize_t r = recvmsg(fd, &m, 0);
	close(fd);
	struct cmsghdr *cm = r > 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	int mfd;
	memcpy(&mfd, CMSG_DATA(cm), sizeof mfd);
	struct rpcrdma_statx_hdr h;
	int clients = -1;
	if (pread(mfd, &h, sizeof h, 0) == (ssize_t)sizeof h) {
		clients = 0;
		off_t off = h.hdr_size + (off_t)h.nfields * h.field_size;
		for (uint32_t i = 0; i < h.nentries; i++) {
			struct rpcrdma_statx_entry e;
			if (pread(mfd, &e, sizeof e, off) != (ssize_t)sizeof e)
				break;
			clients += e.kind == RPCRDMA_STATX_CLIENT;
			off += h.entry_size + h.stats_size;
		}
	}
	close(mfd);
	return clients;
}

static void stats(void)
{
	struct rpcrdma_clnt *a = mk(1), *b = mk(1);
	CHECK_EQ(clnt_threads(), 1);
	CHECK_EQ(exported_clients(), 2);
	rpcrdma_clnt_destroy(a);
	CHECK_EQ(exported_clients(), 1);
	if (b)
		CHECK(echo_ok(b, 1));
	rpcrdma_clnt_destroy(b);
	CHECK_EQ(clnt_threads(), 0);
}

/* The server process ends (an orderly close of every connection) and
 * another comes on the same port: the clients of a shared loop reconnect
 * on their own (max_retries) and their next calls are served. */
static void reconnect(void)
{
	struct rpcrdma_clnt *c[6];
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.threads = 2;
	o.max_retries = 20;
	for (int i = 0; i < 6; i++) {
		c[i] = NULL;
		CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, &o, &c[i]), 0);
		if (c[i])
			CHECK(echo_ok(c[i], 20u + (unsigned)i));
	}
	CHECK_EQ(clnt_threads(), 2);
	unsigned port = (unsigned)atoi(strrchr(addr, ':') + 1);
	close(life);
	waitpid(srv, NULL, 0);
	srv = server_start(port, &life);
	CHECK(srv > 0);
	for (int i = 0; i < 6; i++) {
		if (!c[i])
			continue;
		CHECK(echo_ok(c[i], 30u + (unsigned)i));
		struct rpcrdma_stats st;
		CHECK_EQ(rpcrdma_clnt_stats(c[i], &st), 0);
		CHECK(st.reconnects >= 1);
	}
	CHECK_EQ(clnt_threads(), 2);
	for (int i = 0; i < 6; i++)
		rpcrdma_clnt_destroy(c[i]);
	CHECK_EQ(clnt_threads(), 0);
}

static void forked(void)
{
	struct rpcrdma_clnt *a = mk(2), *b = mk(2);
	CHECK_EQ(clnt_threads(), 2);
	pid_t pid = fork();
	if (pid == 0) {
		/* None of the parent's threads came along. */
		int ok = clnt_threads() == 0;
		struct rpcrdma_clnt *c = NULL;
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = "iwarp";
		ok &= rpcrdma_clnt_create(addr, PROG, 1, &o, &c) == 0;
		ok &= c && clnt_threads() == 1;
		ok &= c && echo_ok(c, 7);
		rpcrdma_clnt_destroy(c);
		ok &= clnt_threads() == 0;
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0);
	int st = -1;
	uint64_t end = now_ms() + 20000;
	while (pid > 0 && waitpid(pid, &st, WNOHANG) == 0 && now_ms() < end)
		sleep_ms(10);
	if (pid > 0 && now_ms() >= end) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (a)
		CHECK(echo_ok(a, 8));
	if (b)
		CHECK(echo_ok(b, 9));
	rpcrdma_clnt_destroy(a);
	rpcrdma_clnt_destroy(b);
	CHECK_EQ(clnt_threads(), 0);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	if (!strcmp(what, "serve"))
		return serve(argc > 2 ? (unsigned)atoi(argv[2]) : 0);
	signal(SIGPIPE, SIG_IGN);
	life = -1;
	srv = server_start(0, &life);
	CHECK(srv > 0);
	if (srv <= 0)
		TEST_MAIN_END();
	if (!strcmp(what, "share") || !strcmp(what, "all"))
		share();
	if (!strcmp(what, "callback") || !strcmp(what, "all"))
		callback();
	if (!strcmp(what, "stats") || !strcmp(what, "all"))
		stats();
	if (!strcmp(what, "reconnect") || !strcmp(what, "all"))
		reconnect();
	if (!strcmp(what, "fork") && UNDER_SANITIZER) {
		printf("fork: not under ThreadSanitizer or "
		       "AddressSanitizer (see UNDER_SANITIZER)\n");
		close(life);
		waitpid(srv, NULL, 0);
		return 77;
	}
	if ((!strcmp(what, "fork") || !strcmp(what, "all")) && !UNDER_SANITIZER)
		forked();
	close(life);
	int st;
	waitpid(srv, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	TEST_MAIN_END();
}
