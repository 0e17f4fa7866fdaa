/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A server under resource pressure (iwarp on loopback):
 *
 *  emfile           the server runs with an open-file limit of 64 and 100
 *                   half-open TCP connections (no MPA Request) arrive:
 *                   accept() fails with EMFILE.  The server must not spin
 *                   on its listener meanwhile: over 1.5 s its threads
 *                   are runnable (running or waiting for a CPU) less
 *                   than a quarter of the time, summed; a spinning
 *                   thread is runnable all of it, however loaded the
 *                   machine.  Once the descriptors are free again, a
 *                   client connects and is served.
 *  max_connections  RPCRDMA_MAX_CONNECTIONS=10 in the server's
 *                   environment: ten clients are served, the eleventh is
 *                   refused with RPCRDMA_ERR_CONNREFUSED (an rpcgen
 *                   client: RPC_SYSTEMERROR, ECONNREFUSED), and a place
 *                   freed is taken again.  Prints the server's memory per
 *                   idle connection (RSS and address space).
 *  max_memory       RPCRDMA_MAX_MEMORY: a budget too small for one
 *                   connection refuses the first, and the server's log
 *                   says what one needs; a budget for two connections
 *                   serves two and refuses the next ones (the client
 *                   gets RPCRDMA_ERR_CONNREFUSED, and under
 *                   RPCRDMA_DEBUG the reason the reject carried); the
 *                   server logs the limit once for all those refusals,
 *                   then that it accepts again once a connection has
 *                   closed, and once more when the budget is spent again.
 *                   The iwarp provider's open-file limit (emfile above)
 *                   is logged once the same way.
 *  rdma_timeout     RPCRDMA_RDMA_TIMEOUT_MS=300: a hand-made peer sends a
 *                   Long Call and never answers the server's RDMA Read.
 *                   The server closes that connection (counted in
 *                   rdma_timeouts) and frees it; a second client is
 *                   served before, during and after.
 *
 * The servers of the first two run in a child process, so that its limit,
 * its environment and its memory are its own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iwpeer.h"
#include "rpcrdma/rpcrdma.h"
#include "test.h"
#include "wire/cm_private_data.h"
#include "wire/xdr.h"
#ifdef LIMITS_TIRPC
#include "rpcrdma/tirpc.h"
#endif

#define PROG 0x20000160u

static void nap_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
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

/* One NULL call on a new client; its rpcrdma_clnt_create status. */
static int null_call(const char *addr, struct rpcrdma_clnt **keep)
{
	struct rpcrdma_clnt *c = NULL;
	int rc = rpcrdma_clnt_create(addr, PROG, 1, NULL, &c);
	if (rc)
		return rc;
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	rc = rpcrdma_clnt_call(c, &call, &rep);
	rpcrdma_reply_free(&rep);
	if (keep && !rc)
		*keep = c;
	else
		rpcrdma_clnt_destroy(c);
	return rc;
}

/* ---------------------------------------------------------------------
 * A server in a child process: started with `nofile` descriptors at most
 * (0: unchanged), it reports its port on a pipe and runs until its
 * control pipe closes.
 */
struct child {
	pid_t pid;
	int ctl;        /* write end: closing it stops the server */
	char addr[64];
};

/* log: the server's stderr goes there (NULL: ours). */
static bool child_start(struct child *ch, unsigned nofile,
			unsigned connect_timeout_ms, const char *log)
{
	int up[2], ctl[2];
	if (pipe(up) || pipe(ctl))
		return false;
	fflush(stdout);
	fflush(stderr);
	ch->pid = fork();
	if (ch->pid < 0)
		return false;
	if (ch->pid == 0) {
		close(up[0]);
		close(ctl[1]);
		if (log) {
			int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd >= 0) {
				dup2(fd, 2);
				close(fd);
			}
		}
		if (nofile) {
			struct rlimit rl = {nofile, nofile};
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = "iwarp";
		if (connect_timeout_ms)
			o.connect_timeout_ms = connect_timeout_ms;
		struct rpcrdma_svc *s = NULL;
		unsigned port = 0;
		if (rpcrdma_svc_create("127.0.0.1:0", &o, &s) == 0) {
			rpcrdma_svc_register(s, PROG, 1, 1, nothing, NULL, 0);
			port = rpcrdma_svc_port(s);
		}
		if (write(up[1], &port, sizeof port) != sizeof port)
			_exit(3);
		char b;
		while (read(ctl[0], &b, 1) > 0)
			;
		rpcrdma_svc_destroy(s);
		_exit(port ? 0 : 2);
	}
	close(up[1]);
	close(ctl[0]);
	ch->ctl = ctl[1];
	unsigned port = 0;
	bool ok = read(up[0], &port, sizeof port) == sizeof port && port;
	close(up[0]);
	snprintf(ch->addr, sizeof ch->addr, "127.0.0.1:%u", port);
	return ok;
}

/* Lines of the file at path that start with `start` and hold `has`. */
static unsigned log_lines(const char *path, const char *start,
			  const char *has)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		n += !strncmp(line, start, strlen(start)) && strstr(line, has);
	fclose(f);
	return n;
}

static int child_stop(struct child *ch)
{
	close(ch->ctl);
	int st = 0;
	waitpid(ch->pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* How long the threads of a process were running or waiting for a CPU
 * (runnable), in ms, summed: /proc/PID/task/TID/schedstat (proc(5)), its
 * first two fields.  A thread that spins is runnable all the time however
 * busy the machine is; one that sleeps is not.  -1 if unreadable. */
static long runnable_ms(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	unsigned long long total = 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char f[sizeof path + 256 + 16];
		snprintf(f, sizeof f, "%s/%s/schedstat", path, de->d_name);
		FILE *fp = fopen(f, "r");
		unsigned long long run = 0, wait = 0;
		if (fp && fscanf(fp, "%llu %llu", &run, &wait) == 2) {
			total += run + wait;
			n++;
		}
		if (fp)
			fclose(fp);
	}
	closedir(d);
	return n ? (long)(total / 1000000) : -1;
}

/* VmRSS and VmSize of a process, in KiB. */
static void mem_kib(pid_t pid, long *rss, long *vsz)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	*rss = *vsz = -1;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		sscanf(line, "VmRSS: %ld", rss);
		sscanf(line, "VmSize: %ld", vsz);
	}
	fclose(f);
}

/* ---------------------------------------------------------------------
 * EMFILE
 */
#define HALF_OPEN 100

static void test_emfile(void)
{
	struct child ch;
	char log[] = "/tmp/rpcrdma-emfile-XXXXXX";
	int lfd = mkstemp(log);
	CHECK(lfd >= 0);
	close(lfd);
	/* Half-open connections are not timed out during the test. */
	CHECK(child_start(&ch, 64, 60000, log));
	int fds[HALF_OPEN];
	int n = 0;
	for (int i = 0; i < HALF_OPEN; i++) {
		struct iwpeer p;
		if (iwpeer_tcp_connect(&p, ch.addr, 5000) == 0)
			fds[n++] = p.fd;
	}
	CHECK_EQ(n, HALF_OPEN); /* the kernel completes them (backlog) */
	nap_ms(500);            /* the server accepts until EMFILE */
	long t0 = runnable_ms(ch.pid);
	uint64_t w0 = now_ms();
	const char *starved = "rpcrdma: iwarp: listener ";
	unsigned said0 = log_lines(log, starved, "accept: ");
	nap_ms(1500);
	long t1 = runnable_ms(ch.pid);
	uint64_t wall = now_ms() - w0;
	/* The limit was said, once: not again on each of the ~15 attempts
	 * of those 1.5 s. */
	unsigned said1 = log_lines(log, starved, "accept: ");
	printf("emfile: the server said %u time(s) that accept() fails\n",
	       said1);
	CHECK_EQ(said0, 1);
	CHECK_EQ(said1, 1);
	CHECK(log_lines(log, starved, "open-file limit 64") == 1);
	printf("emfile: the server's threads were runnable %ld ms in %llu ms "
	       "at its descriptor limit\n", t1 - t0, (unsigned long long)wall);
	CHECK(t0 >= 0 && t1 >= 0);
	CHECK((t1 - t0) * 4 < (long)wall);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* Descriptors come back as the server sees those connections end;
	 * then a real client is served.  Bounded wait, not a measurement. */
	int rc = -1;
	for (uint64_t end = now_ms() + 20000; rc && now_ms() < end;) {
		rc = null_call(ch.addr, NULL);
		if (rc)
			nap_ms(100);
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(child_stop(&ch), 0);
	/* ... and said when it accepted again (every episode ends so). */
	unsigned starts = log_lines(log, starved, "accept: ");
	unsigned ends = log_lines(log, starved, "accepting again");
	printf("emfile: %u episode(s) at the limit, %u end(s) said\n", starts,
	       ends);
	CHECK(ends >= 1 && ends == starts);
	unlink(log);
}

/* A server at one of its limits: `served` keeps working, and once
 * `*freed` is closed (and the server has seen it: bounded wait) a new
 * connection takes its place, in *freed. */
static void place_freed(const struct child *ch, struct rpcrdma_clnt *served,
			struct rpcrdma_clnt **freed)
{
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(served, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	rpcrdma_clnt_destroy(*freed);
	*freed = NULL;
	int rc = -1;
	for (uint64_t end = now_ms() + 10000; rc && now_ms() < end;) {
		rc = null_call(ch->addr, freed);
		if (rc)
			nap_ms(50);
	}
	CHECK_EQ(rc, 0);
}

/* ---------------------------------------------------------------------
 * max_connections
 */
#define MAXC 10

static void test_max_connections(void)
{
	setenv("RPCRDMA_MAX_CONNECTIONS", "10", 1);
	struct child ch;
	char log[] = "/tmp/rpcrdma-maxconn-XXXXXX";
	int lfd = mkstemp(log);
	CHECK(lfd >= 0);
	close(lfd);
	CHECK(child_start(&ch, 0, 0, log));
	unsetenv("RPCRDMA_MAX_CONNECTIONS");
	/* Memory per idle connection: the server's growth from its first
	 * connection to its tenth (the first one also pays for things made
	 * once, such as the allocator's per-thread arenas). */
	struct rpcrdma_clnt *c[MAXC] = {0};
	CHECK_EQ(null_call(ch.addr, &c[0]), 0);
	nap_ms(200);
	long rss0, vsz0, rss1, vsz1;
	mem_kib(ch.pid, &rss0, &vsz0);
	for (int i = 1; i < MAXC; i++)
		CHECK_EQ(null_call(ch.addr, &c[i]), 0);
	nap_ms(200);
	mem_kib(ch.pid, &rss1, &vsz1);
	printf("max_connections: server memory per idle connection (default "
	       "options): RSS %ld KiB, address space %ld KiB\n",
	       (rss1 - rss0) / (MAXC - 1), (vsz1 - vsz0) / (MAXC - 1));
	struct rpcrdma_clnt *x = NULL;
	CHECK_EQ(rpcrdma_clnt_create(ch.addr, PROG, 1, NULL, &x),
		 RPCRDMA_ERR_CONNREFUSED);
	CHECK(x == NULL);
#ifdef LIMITS_TIRPC
	CLIENT *t = clnt_rdma_create(ch.addr, PROG, 1, NULL);
	CHECK(t == NULL);
	CHECK_EQ(rpc_createerr.cf_stat, RPC_SYSTEMERROR);
	CHECK_EQ(rpc_createerr.cf_error.re_errno, ECONNREFUSED);
	if (t)
		clnt_destroy(t);
#endif
	place_freed(&ch, c[3], &c[0]);
	for (int i = 0; i < MAXC; i++)
		rpcrdma_clnt_destroy(c[i]);
	CHECK_EQ(child_stop(&ch), 0);
	/* The limit was said on stderr, once, and its end. */
	const char *said = "rpcrdma: server ";
	CHECK_EQ(log_lines(log, said, "10 connections open (max_connections "
			   "10); refusing connections"), 1);
	CHECK_EQ(log_lines(log, said, "accepting connections again"), 1);
	unlink(log);
}

/* ---------------------------------------------------------------------
 * rdma_timeout
 */
static void test_rdma_timeout(void)
{
	setenv("RPCRDMA_RDMA_TIMEOUT_MS", "300", 1);
	struct rpcrdma_svc *s = NULL;
	CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", NULL, &s), 0);
	unsetenv("RPCRDMA_RDMA_TIMEOUT_MS");
	if (!s)
		return;
	rpcrdma_svc_register(s, PROG, 1, 1, nothing, NULL, 0);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", rpcrdma_svc_port(s));
	struct rpcrdma_clnt *b = NULL;
	CHECK_EQ(null_call(addr, &b), 0);

	struct iwpeer p;
	uint8_t pd[8];
	static struct iwpeer_msg m;
	rpcrdma_cm_pdata_encode(pd, sizeof pd, 4096, 4096, false);
	CHECK_EQ(iwpeer_connect(&p, addr, pd, sizeof pd, 5000), 0);
	/* RFC 8166 §3.5.3 Long Call: RDMA_NOMSG, a Position-Zero Read chunk
	 * of 100 bytes behind handle 0x1234 (which we never serve). */
	uint32_t w[] = {0x55, 1, 8, 1, 1, 0, 0x1234, 100, 0, 0x10000, 0, 0, 0};
	uint8_t buf[64];
	for (int i = 0; i < 13; i++)
		rpcrdma_be32_put(buf + 4 * i, w[i]);
	CHECK_EQ(iwpeer_send(&p, buf, 52), 0);
	CHECK_EQ(iwpeer_recv(&p, &m, 5000), 0);
	CHECK_EQ(m.kind, IWPEER_READ_REQ);
	CHECK_EQ(m.rr.src_stag, 0x1234);
	CHECK_EQ(m.rr.size, 100);
	/* Meanwhile the other client is served. */
	struct rpcrdma_call call = {.proc = 0};
	struct rpcrdma_reply rep;
	CHECK_EQ(rpcrdma_clnt_call(b, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	/* The server gives up on us: the stream ends.  Soon: this
	 * connection went to the poll group with none (b is on the other),
	 * whose loop sleeps up to RPC_QUIET_TICK_MAX_MS (32 s) when it has
	 * nothing to tick; a new connection must wake it
	 * (rpcrdma_rpc_loop_link_locked), or its RDMA Read is not timed
	 * until then. */
	uint64_t t0 = now_ms();
	int rc = iwpeer_recv(&p, &m, 20000);
	CHECK(now_ms() - t0 < 8000);
	CHECK_EQ(rc, 0);
	CHECK(m.kind == IWPEER_EOF || m.kind == IWPEER_RESET);
	iwpeer_close(&p);
	struct rpcrdma_stats st;
	rpcrdma_svc_stats(s, &st);
	CHECK_EQ(st.rdma_timeouts, 1);
	CHECK_EQ(rpcrdma_clnt_call(b, &call, &rep), 0);
	rpcrdma_reply_free(&rep);
	rpcrdma_clnt_destroy(b);
	rpcrdma_svc_destroy(s); /* LeakSanitizer: nothing of it is left */
}

/* ---------------------------------------------------------------------
 * max_memory
 */
static void test_max_memory(void)
{
	char slog[] = "/tmp/rpcrdma-budget-XXXXXX";
	char clog[] = "/tmp/rpcrdma-budget-client-XXXXXX";
	int fd = mkstemp(slog);
	CHECK(fd >= 0);
	close(fd);
	int cfd = mkstemp(clog);
	CHECK(cfd >= 0);
	/* Our traces (the client's reason for a refusal) go to clog; the
	 * server children inherit RPCRDMA_DEBUG and trace every refusal. */
	setenv("RPCRDMA_DEBUG", "1", 1);
	fflush(stderr);
	int saved = dup(2);
	dup2(cfd, 2);
	close(cfd);
	const char *said = "rpcrdma: server ";

	/* 1. A budget smaller than one connection: refused, and the log
	 * says what a connection needs. */
	struct child ch;
	setenv("RPCRDMA_MAX_MEMORY", "1", 1);
	CHECK(child_start(&ch, 0, 0, slog));
	unsetenv("RPCRDMA_MAX_MEMORY");
	struct rpcrdma_clnt *x = NULL;
	CHECK_EQ(rpcrdma_clnt_create(ch.addr, PROG, 1, NULL, &x),
		 RPCRDMA_ERR_CONNREFUSED);
	CHECK(x == NULL);
	CHECK_EQ(child_stop(&ch), 0);
	unsigned long long need = 0;
	FILE *f = fopen(slog, "r");
	char line[1024];
	while (f && fgets(line, sizeof line, f)) {
		const char *p = strstr(line, "a new one needs ");
		if (!strncmp(line, said, strlen(said)) && p)
			need = strtoull(p + strlen("a new one needs "), NULL, 10);
	}
	if (f)
		fclose(f);
	CHECK(need > 0);
	CHECK_EQ(log_lines(slog, said, "memory budget reached (max_memory 1 "
			   "bytes)"), 1);

	/* 2. Room for two connections: two served, the next three refused,
	 * the limit said once for the three. */
	char budget[32];
	snprintf(budget, sizeof budget, "%llu", need * 2 + need / 2);
	setenv("RPCRDMA_MAX_MEMORY", budget, 1);
	CHECK(child_start(&ch, 0, 0, slog));
	unsetenv("RPCRDMA_MAX_MEMORY");
	struct rpcrdma_clnt *c[2] = {NULL, NULL};
	CHECK_EQ(null_call(ch.addr, &c[0]), 0);
	CHECK_EQ(null_call(ch.addr, &c[1]), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(null_call(ch.addr, NULL), RPCRDMA_ERR_CONNREFUSED);
	unsigned reached = log_lines(slog, said, "memory budget reached");
	CHECK_EQ(reached, 1);
	/* Every refusal traced (RPCRDMA_DEBUG), with its numbers. */
	CHECK(log_lines(slog, "rpcrdma[", "refused: memory budget reached") >= 3);
	/* A connection closes; the episode's end is said. */
	place_freed(&ch, c[1], &c[0]);
	CHECK_EQ(log_lines(slog, said, "accepting connections again"), 1);
	CHECK_EQ(log_lines(slog, said, "refused: max_memory)"), 1);
	/* Spent again: a new episode, said again. */
	CHECK_EQ(null_call(ch.addr, NULL), RPCRDMA_ERR_CONNREFUSED);
	CHECK_EQ(log_lines(slog, said, "memory budget reached"), 2);
	for (int i = 0; i < 2; i++)
		rpcrdma_clnt_destroy(c[i]);
	CHECK_EQ(child_stop(&ch), 0);

	/* The client was told why. */
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	unsetenv("RPCRDMA_DEBUG");
	unsigned told = log_lines(clog, "rpcrdma[",
				  "refused by the server: max_memory: the "
				  "server's memory budget");
	printf("max_memory: a connection needs %llu bytes as the server "
	       "counts them; budget %s: 2 served, refusals logged once per "
	       "episode; the client was told why %u times\n",
	       need, budget, told);
	CHECK(told >= 5);
	printf("server log:\n");
	f = fopen(slog, "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, said, strlen(said)))
			printf("  %s", line);
	if (f)
		fclose(f);
	unlink(slog);
	unlink(clog);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "emfile"))
		test_emfile();
	else if (!strcmp(what, "max_connections"))
		test_max_connections();
	else if (!strcmp(what, "max_memory"))
		test_max_memory();
	else if (!strcmp(what, "rdma_timeout"))
		test_rdma_timeout();
	else
		fprintf(stderr, "usage: test_limits emfile|max_connections|"
				"max_memory|rdma_timeout\n");
	TEST_MAIN_END();
}
