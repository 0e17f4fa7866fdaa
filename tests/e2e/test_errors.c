/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Error messages, one case per row of what a new user met (issue 25):
 * each case does what they did and checks the text they now get from
 * clnt_spcreateerror / clnt_sperror (libtirpc's own wording around the
 * clnt_stat and errno the adapters choose), from rpcrdma_strerror, and
 * the one line the library prints on stderr where it prints one.
 *
 *   test_errors CASE      CASE: addr_in_use stopped provider_foo
 *                         no_device tcp_port bad_port over_max_msg
 *                         reply_max env debug
 *
 * Every message is printed, so the test log shows what a user reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "rpcrdma/tirpc.h"
#include "test.h"

#define PROG 0x20000190u
#define VERS 1u

/* ------------------------------------------------------------------ */
/* stderr capture: what the library prints during one call. */
static char errbuf[4096];
static int saved_fd = -1;
static FILE *cap;

static void cap_begin(void)
{
	fflush(stderr);
	cap = tmpfile();
	saved_fd = dup(2);
	dup2(fileno(cap), 2);
}

static const char *cap_end(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(cap);
	size_t n = fread(errbuf, 1, sizeof(errbuf) - 1, cap);
	errbuf[n] = 0;
	fclose(cap);
	if (n)
		fprintf(stderr, "  stderr: %s", errbuf);
	return errbuf;
}

#define CHECK_HAS(s, sub)                                                  \
	do {                                                               \
		const char *_s = (s);                                      \
		bool _h = strstr(_s, (sub)) != NULL;                       \
		CHECK(_h);                                                 \
		if (!_h)                                                   \
			fprintf(stderr, "  wanted \"%s\" in \"%s\"\n", (sub), \
				_s);                                       \
	} while (0)

static const char *create_err(void)
{
	const char *m = clnt_spcreateerror("create");
	printf("  clnt_pcreateerror: %s", m);
	if (!strchr(m, '\n'))
		printf("\n");
	return m;
}

/* ------------------------------------------------------------------ */
/* A server in a child process (its own environment, SIGSTOP-able). */
static enum rpcrdma_svc_stat echo_size(struct rpcrdma_svc_req *r, void *arg)
{
	(void)arg;
	/* Results: as many bytes as the 4-byte argument asks for. */
	size_t len;
	const uint8_t *a = rpcrdma_svc_req_args(r, &len);
	uint32_t n = len >= 4 ? ((uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
				 (uint32_t)a[2] << 8 | a[3])
			      : 0;
	uint8_t *p = n ? rpcrdma_svc_req_alloc(r, n) : NULL;
	if (n && !p)
		return RPCRDMA_SVC_SYSTEM_ERR;
	if (n)
		memset(p, 0x5a, n);
	struct rpcrdma_iov iov = {p, n, false};
	rpcrdma_svc_req_reply(r, &iov, n ? 1 : 0);
	return RPCRDMA_SVC_OK;
}

static int pipe_fd[2];

static pid_t fork_server(uint32_t max_msg, uint16_t *port)
{
	if (pipe(pipe_fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.max_msg = max_msg;
		struct rpcrdma_svc *s;
		uint16_t p = 0;
		if (rpcrdma_svc_create("127.0.0.1:0", &o, &s) == 0 &&
		    rpcrdma_svc_register(s, PROG, VERS, 1, echo_size, NULL, 0) == 0)
			p = rpcrdma_svc_port(s);
		if (write(pipe_fd[1], &p, sizeof(p)) != sizeof(p))
			_exit(1);
		for (;;)
			pause();
	}
	close(pipe_fd[1]);
	if (read(pipe_fd[0], port, sizeof(*port)) != sizeof(*port))
		*port = 0;
	close(pipe_fd[0]);
	return pid;
}

static void stop_server(pid_t pid)
{
	kill(pid, SIGCONT);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* svc_rdma_create on a port already in use. */
static void case_addr_in_use(void)
{
	struct rpcrdma_svc *s;
	CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", NULL, &s), 0);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", rpcrdma_svc_port(s));
	cap_begin();
	SVCXPRT *x = svc_rdma_create(addr, NULL);
	const char *err = cap_end();
	CHECK(x == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	CHECK_EQ(rpc_createerr.cf_error.re_errno, EADDRINUSE);
	CHECK_HAS(create_err(), "Address already in use");
	/* The address is named on stderr, as libtirpc's svc_tli_create
	 * does when it cannot bind. */
	CHECK_HAS(err, addr);
	CHECK_HAS(err, "svc_rdma_create");
	/* The native API: RPCRDMA_ERR_BUSY, "address in use". */
	struct rpcrdma_svc *s2 = NULL;
	int rc = rpcrdma_svc_create(addr, NULL, &s2);
	printf("  rpcrdma_svc_create: %s\n", rpcrdma_strerror(rc));
	CHECK_EQ(rc, RPCRDMA_ERR_BUSY);
	CHECK_HAS(rpcrdma_strerror(rc), "address already in use");
	rpcrdma_svc_destroy(s);
}

/* A server stopped with SIGSTOP: a new client times out connecting, an
 * established one's call times out. */
static void case_stopped(void)
{
	uint16_t port;
	pid_t pid = fork_server(0, &port);
	CHECK(port != 0);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.connect_timeout_ms = 1000;
	CLIENT *c = clnt_rdma_create(addr, PROG, VERS, &o);
	CHECK(c != NULL);
	kill(pid, SIGSTOP);
	/* kill() only sends it: on another CPU the server may still answer
	 * a call before it stops.  Wait until it has. */
	int wst = 0;
	CHECK(waitpid(pid, &wst, WUNTRACED) == pid && WIFSTOPPED(wst));
	if (c) {
		struct timeval tv = {1, 0};
		uint32_t n = 0;
		enum clnt_stat st = clnt_call(c, 1, (xdrproc_t)xdr_u_int,
					      (char *)&n, (xdrproc_t)xdr_void,
					      NULL, tv);
		CHECK_EQ(st, RPC_TIMEDOUT);
		const char *m = clnt_sperror(c, "call");
		printf("  clnt_perror: %s", m);
		CHECK_HAS(m, "RPC: Timed out");
		clnt_destroy(c);
	}
	c = clnt_rdma_create(addr, PROG, VERS, &o);
	CHECK(c == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_TIMEDOUT);
	CHECK_HAS(create_err(), "RPC: Timed out");
	struct rpcrdma_clnt *nc = NULL;
	int rc = rpcrdma_clnt_create(addr, PROG, VERS, &o, &nc);
	printf("  rpcrdma_clnt_create: %s\n", rpcrdma_strerror(rc));
	CHECK_EQ(rc, RPCRDMA_ERR_TIMEOUT);
	stop_server(pid);
}

/* RPCRDMA_PROVIDER=foo: refused, with the one line on stderr. */
static void case_provider_foo(void)
{
	setenv("RPCRDMA_PROVIDER", "foo", 1);
	cap_begin();
	CLIENT *c = clnt_rdma_create("127.0.0.1:1", PROG, VERS, NULL);
	const char *err = cap_end();
	CHECK(c == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	CHECK_EQ(rpc_createerr.cf_error.re_errno, EINVAL);
	CHECK_HAS(create_err(), "Invalid argument");
	CHECK_HAS(err, "RPCRDMA_PROVIDER=foo");
	CHECK_HAS(err, "iwarp");
	/* An unknown provider set in the options (not the environment) is
	 * an unknown protocol. */
	unsetenv("RPCRDMA_PROVIDER");
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "foo";
	c = clnt_rdma_create("127.0.0.1:1", PROG, VERS, &o);
	CHECK(c == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_UNKNOWNPROTO);
	CHECK_HAS(create_err(), "Unknown protocol");
}

/* RPCRDMA_PROVIDER=verbs on a machine without an RDMA device. */
static void case_no_device(void)
{
	setenv("RPCRDMA_PROVIDER", "verbs", 1);
	cap_begin();
	CLIENT *c = clnt_rdma_create("127.0.0.1:1", PROG, VERS, NULL);
	const char *log = cap_end();
	unsetenv("RPCRDMA_PROVIDER");
	if (c) {
		printf("  an RDMA device is present: nothing to check\n");
		clnt_destroy(c);
		CHECK(1);
		return;
	}
	const char *m = create_err();
	if (strstr(log, "RPCRDMA_PROVIDER=verbs refused")) {
		/* Built without rdma-core: no verbs provider at all, and
		 * the environment's choice is refused like any other bad
		 * value (rpc/opts.c), with the line that says what is
		 * accepted. */
		CHECK_HAS(log, "accepted: iwarp");
		CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
		CHECK_EQ(rpc_createerr.cf_error.re_errno, EINVAL);
		CHECK_HAS(m, "Invalid argument");
		return;
	}
	if (rpc_createerr.cf_error.re_errno == ECONNREFUSED) {
		/* A device exists (rxe, siw) and nothing listens. */
		CHECK_HAS(m, "Connection refused");
		return;
	}
	CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	CHECK_EQ(rpc_createerr.cf_error.re_errno, ENODEV);
	CHECK_HAS(m, "No such device");
}

/* An RDMA client pointed at a plain TCP service: one that closes after
 * reading, and one that answers with bytes that are not MPA. */
static pid_t tcp_service(int lfd, bool answer)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			_exit(0);
		char b[512];
		ssize_t n = read(fd, b, sizeof b);
		(void)n;
		if (answer) {
			static const char banner[] =
				"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"
				"0123456789012345678901234567890123456789\r\n";
			n = write(fd, banner, sizeof banner - 1);
			(void)n;
		}
		close(fd);
	}
}

static void case_tcp_port(void)
{
	for (int answer = 0; answer < 2; answer++) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t al = sizeof a;
		CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
		CHECK_EQ(listen(lfd, 8), 0);
		getsockname(lfd, (struct sockaddr *)&a, &al);
		pid_t svc = tcp_service(lfd, answer);
		char addr[64];
		snprintf(addr, sizeof addr, "127.0.0.1:%u", ntohs(a.sin_port));
		printf(" %s TCP service at %s\n",
		       answer ? "an answering" : "a closing", addr);
		/* One that answers with something else is not RDMA; one
		 * that closes at once might be an RDMA server that failed
		 * too: the connection was reset. */
		CLIENT *c = clnt_rdma_create(addr, PROG, VERS, NULL);
		CHECK(c == NULL);
		CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
		CHECK_EQ(rpc_createerr.cf_error.re_errno,
			 answer ? EPROTO : ECONNRESET);
		CHECK_HAS(create_err(), answer ? "Protocol error"
					       : "Connection reset by peer");
		struct rpcrdma_clnt *nc = NULL;
		int rc = rpcrdma_clnt_create(addr, PROG, VERS, NULL, &nc);
		printf("  rpcrdma_clnt_create: %s\n", rpcrdma_strerror(rc));
		CHECK_EQ(rc, answer ? RPCRDMA_ERR_NOT_RDMA
				    : RPCRDMA_ERR_DISCONNECTED);
		close(lfd);
		kill(svc, SIGKILL);
		waitpid(svc, NULL, 0);
	}
}

/* A port that is not a number. */
static void case_bad_port(void)
{
	CLIENT *c = clnt_rdma_create("127.0.0.1:notaport", PROG, VERS, NULL);
	CHECK(c == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	CHECK_EQ(rpc_createerr.cf_error.re_errno, EINVAL);
	const char *m = create_err();
	CHECK_HAS(m, "Invalid argument");
	c = clnt_rdma_create("no-such-host.invalid:20049", PROG, VERS, NULL);
	CHECK(c == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_UNKNOWNHOST);
	CHECK_HAS(create_err(), "Unknown host");
	struct rpcrdma_clnt *nc;
	int rc = rpcrdma_clnt_create("127.0.0.1:notaport", PROG, VERS, NULL,
				     &nc);
	printf("  rpcrdma_clnt_create: %s\n", rpcrdma_strerror(rc));
	CHECK_EQ(rc, RPCRDMA_ERR_ADDR);
}

/* Arguments over max_msg: refused here (this side's max_msg), or by the
 * server (its max_msg smaller than ours). */
struct big {
	u_int len;
	char *val;
};

static bool_t xdr_big(XDR *x, struct big *b)
{
	return xdr_bytes(x, &b->val, &b->len, ~0u);
}

static void big_args(CLIENT *c, size_t n, enum clnt_stat want,
		     const char *text)
{
	char *buf = calloc(1, n);
	struct big arg = {(u_int)n, buf};
	struct timeval tv = {10, 0};
	enum clnt_stat st = clnt_call(c, 1, (xdrproc_t)xdr_big, (char *)&arg,
				      (xdrproc_t)xdr_void, NULL, tv);
	(void)arg;
	const char *m = clnt_sperror(c, "call");
	printf("  clnt_perror: %s", m);
	CHECK_EQ(st, want);
	CHECK_HAS(m, text);
	free(buf);
}

static void case_over_max_msg(void)
{
	uint16_t port;
	pid_t pid = fork_server(1u << 20, &port); /* server: 1 MiB */
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	/* Our own max_msg (default 4 MiB + 64 KiB): refused before sending. */
	CLIENT *c = clnt_rdma_create(addr, PROG, VERS, NULL);
	CHECK(c != NULL);
	if (c) {
		big_args(c, 5u << 20, RPC_CANTSEND,
			 "Unable to send; errno = Message too long");
		/* The server's 1 MiB: refused there. */
		big_args(c, 2u << 20, RPC_CANTDECODEARGS,
			 "Server can't decode arguments");
		struct rpc_err e;
		clnt_geterr(c, &e);
		CHECK_EQ(e.re_errno, EMSGSIZE);
		clnt_destroy(c);
	}
	/* The native API names max_msg and the side. */
	struct rpcrdma_clnt *nc = NULL;
	CHECK_EQ(rpcrdma_clnt_create(addr, PROG, VERS, NULL, &nc), 0);
	if (nc) {
		uint8_t *b = calloc(1, 5u << 20);
		struct rpcrdma_iov iov = {b, 2u << 20, false};
		struct rpcrdma_call call = {.proc = 1, .args = &iov, .nargs = 1};
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call(nc, &call, &rep);
		printf("  server refuses: %s\n", rpcrdma_strerror(rc));
		CHECK_EQ(rc, RPCRDMA_ERR_PEER_CALL_TOO_BIG);
		CHECK_HAS(rpcrdma_strerror(rc), "max_msg");
		rpcrdma_reply_free(&rep);
		iov.len = 5u << 20;
		rc = rpcrdma_clnt_call(nc, &call, &rep);
		printf("  client refuses: %s\n", rpcrdma_strerror(rc));
		CHECK_EQ(rc, RPCRDMA_ERR_CALL_TOO_BIG);
		CHECK_HAS(rpcrdma_strerror(rc), "max_msg");
		rpcrdma_reply_free(&rep);
		free(b);
		rpcrdma_clnt_destroy(nc);
	}
	stop_server(pid);
}

/* A native call without reply_max whose reply is 1 MiB, in each
 * version: the error points at reply_max. */
static void case_reply_max(void)
{
	uint16_t port;
	pid_t pid = fork_server(0, &port);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	for (unsigned v = 1; v <= 2; v++) {
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.versions = v;
		struct rpcrdma_clnt *nc = NULL;
		CHECK_EQ(rpcrdma_clnt_create(addr, PROG, VERS, &o, &nc), 0);
		if (!nc)
			continue;
		uint8_t n[4] = {0, 0x10, 0, 0}; /* 1 MiB of results */
		struct rpcrdma_iov iov = {n, 4, false};
		struct rpcrdma_call call = {.proc = 1, .args = &iov, .nargs = 1};
		struct rpcrdma_reply rep;
		int rc = rpcrdma_clnt_call(nc, &call, &rep);
		printf("  v%u, reply_max 0: %s\n", v, rpcrdma_strerror(rc));
		CHECK_EQ(rc, RPCRDMA_ERR_REPLY_TOO_BIG);
		CHECK_HAS(rpcrdma_strerror(rc), "reply_max");
		rpcrdma_reply_free(&rep);
		call.reply_max = RPCRDMA_REPLY_ANY;
		rc = rpcrdma_clnt_call(nc, &call, &rep);
		CHECK_EQ(rc, 0);
		CHECK_EQ(rep.len, 1u << 20);
		rpcrdma_reply_free(&rep);
		rpcrdma_clnt_destroy(nc);
	}
	stop_server(pid);
}

/* RPCRDMA_DEBUG=1 reads like a log: the peer's address and the events
 * by name, the version and thresholds once settled, and a normal close
 * without an error-sounding line. */
static void case_debug(void)
{
	uint16_t port;
	pid_t pid = fork_server(0, &port);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
	setenv("RPCRDMA_DEBUG", "1", 1);
	cap_begin();
	struct rpcrdma_clnt *nc = NULL;
	int rc = rpcrdma_clnt_create(addr, PROG, VERS, NULL, &nc);
	for (int i = 0; rc == 0 && i < 3; i++) {
		uint8_t n[4] = {0, 0, 0, 16};
		struct rpcrdma_iov iov = {n, 4, false};
		struct rpcrdma_call call = {.proc = 1, .args = &iov, .nargs = 1};
		struct rpcrdma_reply rep;
		CHECK_EQ(rpcrdma_clnt_call(nc, &call, &rep), 0);
		rpcrdma_reply_free(&rep);
		/* the version line comes with the loop's next tick */
		struct timespec t = {0, 30000000};
		nanosleep(&t, NULL);
	}
	rpcrdma_clnt_destroy(nc);
	const char *log = cap_end();
	CHECK_EQ(rc, 0);
	char want[128];
	snprintf(want, sizeof want, "%s: connecting (iwarp provider, prog %#x "
		 "vers %u)", addr, PROG, VERS);
	CHECK_HAS(log, want);
	snprintf(want, sizeof want, "%s: established", addr);
	CHECK_HAS(log, want);
	snprintf(want, sizeof want, "%s: version 2, credits ", addr);
	CHECK_HAS(log, want);
	CHECK_HAS(log, "inline send 4096 receive 4096, remote invalidation");
	snprintf(want, sizeof want, "%s: closing", addr);
	CHECK_HAS(log, want);
	/* Every line is "rpcrdma[PID] HH:MM:SS.uuuuuu ..." */
	CHECK(strncmp(log, "rpcrdma[", 8) == 0);
	/* A normal close: nothing that reads as an error. */
	static const char *const alarming[] = {"error", "fail", "flushed",
					       "lost", "refused", "cm event"};
	for (size_t i = 0; i < sizeof alarming / sizeof alarming[0]; i++) {
		bool clean = !strstr(log, alarming[i]);
		CHECK(clean);
		if (!clean)
			fprintf(stderr, "  \"%s\" in the log of a normal "
				"close\n", alarming[i]);
	}
	unsetenv("RPCRDMA_DEBUG");
	stop_server(pid);
}

/* Every variable, a value of each kind it refuses: the create call
 * fails with RPCRDMA_ERR_CONFIG and one line names the variable, the
 * value and what is accepted. */
static void case_env(void)
{
	static const struct {
		const char *var, *val, *accepted;
	} bad[] = {
		{"RPCRDMA_VERSIONS", "5", "1, 2 or prefer"},
		{"RPCRDMA_VERSIONS", "v1", "1, 2 or prefer"},
		{"RPCRDMA_BUSY_POLL_US", "abc", "0 to 1000000"},
		{"RPCRDMA_BUSY_POLL_US", "-5", "0 to 1000000"},
		{"RPCRDMA_WORKERS", "5000", "0 to 1024"},
		{"RPCRDMA_WORKERS", "4x", "0 to 1024"},
		{"RPCRDMA_MPA_CRC", "yes", "0 or 1"},
		{"RPCRDMA_MAX_CONNECTIONS", "-1", "0 to"},
		{"RPCRDMA_RDMA_TIMEOUT_MS", "30s", "1 to"},
		{"RPCRDMA_RDMA_TIMEOUT_MS", "0", "1 to"},
		{"RPCRDMA_MAX_MSG", "huge", "bytes"},
		{"RPCRDMA_MAX_MSG", "100", "bytes"},
		{"RPCRDMA_MAX_MSG", "8G", "bytes"},
		{"RPCRDMA_MAX_MEMORY", "lots", "0 (no budget) or bytes"},
		{"RPCRDMA_MAX_MEMORY", "-1", "0 (no budget) or bytes"},
		{"RPCRDMA_MAX_MEMORY", "2P", "0 (no budget) or bytes"},
		{"RPCRDMA_MAX_MEMORY", "2000T", "0 (no budget) or bytes"},
		{"RPCRDMA_CREDIT_BUDGET", "many", "0 to 4294967295 (credits"},
		{"RPCRDMA_CREDIT_BUDGET", "-8", "0 to 4294967295 (credits"},
		{"RPCRDMA_PROVIDER", "foo", "iwarp"},
		{"RPCRDMA_DEVICE",
		 "a-device-name-longer-than-sixty-three-characters-is-no-device-name",
		 "device name"},
		{"RPCRDMA_DEBUG", "yes", "0 or 1"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv(bad[i].var, bad[i].val, 1);
		printf(" %s=%s\n", bad[i].var, bad[i].val);
		struct rpcrdma_clnt *nc = NULL;
		cap_begin();
		int rc = rpcrdma_clnt_create("127.0.0.1:1", PROG, VERS, NULL, &nc);
		const char *err = cap_end();
		CHECK_EQ(rc, RPCRDMA_ERR_CONFIG);
		char want[128];
		snprintf(want, sizeof want, "%s=%s", bad[i].var, bad[i].val);
		CHECK_HAS(err, want);
		CHECK_HAS(err, bad[i].accepted);
		/* One line. */
		CHECK(strchr(err, '\n') == err + strlen(err) - 1);
		/* The same for a server, and through the libtirpc
		 * adapters: RPC_SYSTEMERROR, EINVAL. */
		struct rpcrdma_svc *s = NULL;
		cap_begin();
		rc = rpcrdma_svc_create("127.0.0.1:0", NULL, &s);
		cap_end();
		CHECK_EQ(rc, RPCRDMA_ERR_CONFIG);
		cap_begin();
		SVCXPRT *x = svc_rdma_create("127.0.0.1:0", NULL);
		cap_end();
		CHECK(x == NULL);
		CHECK_EQ(rpc_createerr.cf_error.re_errno, EINVAL);
		unsetenv(bad[i].var);
	}
	/* Values that are taken. */
	static const struct {
		const char *var, *val;
	} good[] = {
		{"RPCRDMA_VERSIONS", "prefer"}, {"RPCRDMA_VERSIONS", "1"},
		{"RPCRDMA_WORKERS", "4"},       {"RPCRDMA_MPA_CRC", "0"},
		{"RPCRDMA_MAX_MSG", "1M"},      {"RPCRDMA_MAX_MSG", "65536"},
		{"RPCRDMA_BUSY_POLL_US", "0"},  {"RPCRDMA_DEBUG", "0"},
		{"RPCRDMA_MAX_MEMORY", "0"},    {"RPCRDMA_MAX_MEMORY", "512M"},
		{"RPCRDMA_CREDIT_BUDGET", "0"}, {"RPCRDMA_CREDIT_BUDGET", "256"},
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		setenv(good[i].var, good[i].val, 1);
		struct rpcrdma_svc *s = NULL;
		int rc = rpcrdma_svc_create("127.0.0.1:0", NULL, &s);
		CHECK_EQ(rc, 0);
		rpcrdma_svc_destroy(s);
		unsetenv(good[i].var);
	}
	/* RPCRDMA_MAX_MSG and RPCRDMA_MAX_MEMORY reach the options. */
	setenv("RPCRDMA_MAX_MSG", "2M", 1);
	setenv("RPCRDMA_MAX_MEMORY", "3G", 1);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	CHECK_EQ(o.max_msg, 2u << 20);
	CHECK(o.max_memory == 3ull << 30);
	unsetenv("RPCRDMA_MAX_MSG");
	setenv("RPCRDMA_MAX_MEMORY", "1099511627776", 1);
	rpcrdma_opts_default(&o);
	CHECK(o.max_memory == 1ull << 40);
	unsetenv("RPCRDMA_MAX_MEMORY");
	setenv("RPCRDMA_CREDIT_BUDGET", "96", 1);
	rpcrdma_opts_default(&o);
	CHECK_EQ(o.credit_budget, 96u);
	unsetenv("RPCRDMA_CREDIT_BUDGET");
	rpcrdma_opts_default(&o);
	CHECK_EQ(o.credit_budget, 0u);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{"addr_in_use", case_addr_in_use},
		{"stopped", case_stopped},
		{"provider_foo", case_provider_foo},
		{"no_device", case_no_device},
		{"tcp_port", case_tcp_port},
		{"bad_port", case_bad_port},
		{"over_max_msg", case_over_max_msg},
		{"reply_max", case_reply_max},
		{"env", case_env},
		{"debug", case_debug},
	};
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	bool any = false;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cases[i].name)) {
			printf("%s\n", cases[i].name);
			cases[i].fn();
			any = true;
		}
	if (!any) {
		fprintf(stderr, "unknown case %s\n", argv[1]);
		return 2;
	}
	TEST_MAIN_END();
}
