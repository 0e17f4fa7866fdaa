/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf load: P client processes x C connections x D calls in
 * flight, for a duration, against a server in another process, for each
 * contender in turn (rpcrdma through the native asynchronous API,
 * rdma-tirpc through rpcgen stubs and threads, libtirpc over TCP the same
 * way) against the same server; and a fairness mode.
 *
 * The server is an `rpcrdma-perf server` (perf_rpc.c): one this command
 * starts (the same executable, a process of its own), or one given with
 * --server HOST:PORT and --server-pid PID.  Its numbers come from /proc of
 * its process: resident memory (VmRSS of /proc/PID/status) before the
 * connections, while they are held, and after they closed; CPU time (the
 * run time of every thread, /proc/PID/task/T/schedstat, in ns) while the
 * connections are idle and during the load.  The client processes' CPU
 * during the load is what each measured of itself (getrusage), threads
 * that ended included.
 *
 * One run of a contender:
 *   1. fork the client processes (perf_load_client.c); each opens its
 *      connections, then makes one NULL call on each (the first call),
 *      and says READY
 *   2. the connections are held idle for --idle seconds: the server's CPU
 *      then, and its RSS per connection (RSS held - RSS before, over the
 *      connections open)
 *   3. the load, for --duration seconds: calls/s (calls that ended well
 *      within the duration), latency quantiles, errors by kind, calls
 *      never completed (still out --drain seconds after the duration),
 *      the server's CPU per call
 *   4. every connection closes; the server's RSS some seconds later
 * Nothing is asserted: numbers are printed (text, or --json).
 *
 * Fairness (--fairness): N connections making small calls (NULL, one in
 * flight each) alone, then the same beside one greedy connection (32 x
 * 1 MiB WRITEs in flight, from a process of its own): the small calls'
 * rate and p99 in both runs and their ratio, for each contender of
 * --with in turn (the greedy one speaks the same API), then side by
 * side.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "perf.h"
#include "perf_load.h"
#include "perf_rpc.h"
#include "rpcrdma/rpcrdma.h"

const char *const ld_api_name[LD_NAPI] = {"rpcrdma", "rdma-tirpc",
					  "libtirpc"};
/* The `server` subcommand's port of each contender, from its PORT. */
static const uint16_t api_port[LD_NAPI] = {0, 3, 1};

/* ------------------------------------------------------------------ */
/* Histograms, errors, mixes                                            */

unsigned ld_bucket(uint64_t ns)
{
	if (ns < LD_SUB)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* >= 5 */
	unsigned b = LD_SUB + (e - 5u) * LD_SUB +
		     (unsigned)((ns >> (e - 5u)) & (LD_SUB - 1));
	return b < LD_NBUCKET ? b : LD_NBUCKET - 1;
}

/* The middle of bucket b, in ns. */
static double bucket_mid_ns(unsigned b)
{
	if (b < LD_SUB)
		return b;
	unsigned e = (b - LD_SUB) / LD_SUB + 5u, m = (b - LD_SUB) % LD_SUB;
	double lo = ldexp((double)(LD_SUB + m), (int)e - 5);
	return lo + ldexp(1.0, (int)e - 5) / 2;
}

uint64_t ld_hist_count(const uint64_t *h)
{
	uint64_t n = 0;
	for (unsigned b = 0; b < LD_NBUCKET; b++)
		n += h[b];
	return n;
}

double ld_hist_quantile_us(const uint64_t *h, double q)
{
	uint64_t n = ld_hist_count(h);
	if (!n)
		return 0;
	/* The sample of rank ceil(q n), as perf_quantile_us picks. */
	uint64_t rank = (uint64_t)(q * (double)(n - 1) + 0.5) + 1, seen = 0;
	for (unsigned b = 0; b < LD_NBUCKET; b++) {
		seen += h[b];
		if (seen >= rank)
			return bucket_mid_ns(b) / 1000.0;
	}
	return bucket_mid_ns(LD_NBUCKET - 1) / 1000.0;
}

void ld_err_add(struct ld_errs *e, int code, uint64_t n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < e->used; i++)
		if (e->code[i] == code) {
			e->n[i] += n;
			return;
		}
	if (e->used < LD_NERR) {
		e->code[e->used] = code;
		e->n[e->used++] = n;
		return;
	}
	e->n[LD_NERR - 1] += n; /* too many kinds: the last one takes it */
}

static void errs_merge(struct ld_errs *to, const struct ld_errs *from)
{
	for (unsigned i = 0; i < from->used && i < LD_NERR; i++)
		ld_err_add(to, from->code[i], from->n[i]);
}

void ld_err_name(int code, char *buf, size_t cap)
{
	if (code >= LD_ERR_ERRNO) {
		const char *n = strerrorname_np(code - LD_ERR_ERRNO);
		snprintf(buf, cap, "%s", n ? n : "errno?");
	} else if (code >= LD_ERR_TIRPC) {
		/* "RPC: Timed out" -> "Timed out" */
		const char *t = clnt_sperrno((enum clnt_stat)(code - LD_ERR_TIRPC));
		if (!strncmp(t, "RPC: ", 5))
			t += 5;
		snprintf(buf, cap, "%s", t);
	} else {
		snprintf(buf, cap, "%s", rpcrdma_strerror(code));
	}
}

static int parse_size(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (*end || !v || v > PR_MAXSZ)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int ld_mix_parse(const char *s, struct ld_mix *m)
{
	char buf[128];
	memset(m, 0, sizeof(*m));
	if (strlen(s) >= sizeof(buf) || strlen(s) >= sizeof(m->text))
		return -1;
	snprintf(m->text, sizeof(m->text), "%s", s);
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (m->n == LD_MAX_MIX)
			return -1;
		struct ld_mix_ent *e = &m->e[m->n];
		char *colon = strchr(t, ':');
		e->weight = 1;
		if (colon) {
			*colon = 0;
			char *end;
			errno = 0;
			unsigned long w = strtoul(colon + 1, &end, 10);
			if (errno || *end || end == colon + 1 || !w || w > 1000000)
				return -1;
			e->weight = (unsigned)w;
		}
		if (!strcmp(t, "null")) {
			e->op = LD_NULL;
		} else if (t[0] == 'r' || t[0] == 'w') {
			e->op = t[0] == 'r' ? LD_READ : LD_WRITE;
			if (parse_size(t + 1, &e->size) < 0)
				return -1;
		} else {
			e->op = LD_WRITE;
			if (parse_size(t, &e->size) < 0)
				return -1;
		}
		m->total += e->weight;
		m->n++;
	}
	return m->n ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* The server's process                                                 */

/* VmRSS of pid in KiB; 0 when unknown. */
static uint64_t proc_rss_kib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	uint64_t kib = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6)) {
			kib = strtoull(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/* CPU time of every thread of pid, in ns: the run time of each task
 * (schedstat), or utime + stime (ticks) when schedstat is missing;
 * 0 when unknown.  Threads that ended are not counted by schedstat: the
 * server's threads live as long as it does, and the client processes
 * report their load's CPU themselves (clients_cpu_reported). */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	uint64_t sum = 0;
	bool any = false;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char p2[320];
			snprintf(p2, sizeof(p2), "/proc/%d/task/%.255s/schedstat",
				 (int)pid, de->d_name);
			FILE *f = fopen(p2, "r");
			unsigned long long run = 0;
			if (f) {
				if (fscanf(f, "%llu", &run) == 1) {
					sum += run;
					any = true;
				}
				fclose(f);
			}
		}
		closedir(d);
	}
	if (any)
		return sum;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* Fields after the command name, which may hold spaces: 14 and 15
	 * are utime and stime. */
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
				"%llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

struct server {
	pid_t pid;                 /* whose /proc we read; 0: unknown */
	bool ours;                 /* started here: stop it at the end */
	char host[128];            /* address the contenders connect to */
	uint16_t port;             /* its PORT */
	bool v6;
	char census[64];           /* ours with --census: where it writes
				      its page census; "" for none */
};

/* Four TCP ports from base free on host (the server takes them). */
static bool ports_free(const struct sockaddr_storage *ss, socklen_t len,
		       uint16_t base)
{
	for (unsigned k = 0; k < 4; k++) {
		struct sockaddr_storage a = *ss;
		pr_set_port(&a, (uint16_t)(base + k));
		int fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return false;
		bool ok = bind(fd, (struct sockaddr *)&a, len) == 0;
		close(fd);
		if (!ok)
			return false;
	}
	return true;
}

/* Starts `rpcrdma-perf server` (this executable) on host, waits for its
 * line saying it serves.  0 or -1 (message printed). */
static int server_start(struct server *s, const char *host,
			const char *provider, unsigned workers, bool census)
{
	if (census)
		snprintf(s->census, sizeof(s->census),
			 "/tmp/rpcrdma-perf-census.%d", (int)getpid());
	struct sockaddr_storage ss;
	socklen_t len;
	if (pr_parse_addr(host, 0, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf load: bad address '%s'\n", host);
		return -1;
	}
	s->v6 = ss.ss_family == AF_INET6;
	snprintf(s->host, sizeof(s->host), "%s", host);
	srand((unsigned)(perf_now_ns() ^ (uint64_t)getpid()));
	for (int attempt = 0; attempt < 5; attempt++) {
		uint16_t base = 0;
		for (int k = 0; k < 200 && !base; k++) {
			uint16_t b = (uint16_t)(21000 + rand() % 30000);
			if (ports_free(&ss, len, b))
				base = b;
		}
		if (!base)
			break;
		char listen[96], wk[16];
		pr_set_port(&ss, base);
		pr_addr_string(&ss, listen, sizeof(listen));
		snprintf(wk, sizeof(wk), "%u", workers);
		int out[2];
		if (pipe(out) < 0)
			return -1;
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			dup2(out[1], 1);
			close(out[0]);
			close(out[1]);
			char *argv[12];
			int n = 0;
			argv[n++] = (char *)"rpcrdma-perf";
			argv[n++] = (char *)"server";
			argv[n++] = (char *)"--listen";
			argv[n++] = listen;
			if (provider) {
				argv[n++] = (char *)"--provider";
				argv[n++] = (char *)provider;
			}
			if (workers) {
				argv[n++] = (char *)"--workers";
				argv[n++] = wk;
			}
			if (s->census[0]) {
				argv[n++] = (char *)"--census";
				argv[n++] = s->census;
			}
			argv[n] = NULL;
			execv("/proc/self/exe", argv);
			perror("rpcrdma-perf load: exec server");
			_exit(127);
		}
		close(out[1]);
		/* Its first line says it serves; EOF: it failed. */
		char line[512];
		size_t have = 0;
		bool up = false;
		uint64_t until = perf_now_ns() + 20000000000ull;
		while (perf_now_ns() < until && have < sizeof(line) - 1) {
			struct pollfd pf = {out[0], POLLIN, 0};
			if (poll(&pf, 1, 200) <= 0)
				continue;
			ssize_t r = read(out[0], line + have, sizeof(line) - 1 - have);
			if (r <= 0)
				break;
			have += (size_t)r;
			line[have] = 0;
			if (strchr(line, '\n')) {
				up = strstr(line, "Ctrl-C stops") != NULL;
				break;
			}
		}
		close(out[0]);
		if (up) {
			s->pid = pid;
			s->ours = true;
			s->port = base;
			return 0;
		}
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	fprintf(stderr, "rpcrdma-perf load: cannot start a server on %s\n",
		host);
	return -1;
}

static void server_stop(struct server *s)
{
	if (!s->ours || s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	int st;
	for (int i = 0; i < 100; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid)
			return;
		struct timespec t = {0, 50000000};
		nanosleep(&t, NULL);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
}

static void server_target(const struct server *s, enum ld_api api, char *buf,
			  size_t cap)
{
	unsigned port = s->port + api_port[api];
	if (s->v6)
		snprintf(buf, cap, "[%s]:%u", s->host, port);
	else
		snprintf(buf, cap, "%s:%u", s->host, port);
}

/* ------------------------------------------------------------------ */
/* One run: groups of client processes against the server               */

struct group_result {
	struct ld_report sum;        /* READY's and DONE's numbers, summed */
	uint64_t conn_done_ns;       /* the last process's connections made */
	unsigned procs_ready, procs_done;
};

struct run_result {
	uint64_t t0_ns;              /* the processes forked */
	uint64_t rss_before, rss_held, rss_loaded, rss_after; /* KiB */
	uint64_t conns_held;
	double idle_s, idle_cpu_pct;
	double idle_clients_pct;     /* the client processes, meanwhile */
	double load_s;               /* the duration as the parent timed it */
	uint64_t load_cpu_ns;
	double load_clients_pct;
	struct group_result g[2];
	unsigned ngroups;
	bool failed;                 /* a process died or did not answer */
	char *census;                /* the server's page census while the
				        connections were held (--census) */
};

struct child {
	pid_t pid;
	int rd, wr;                  /* its reports; our orders */
	unsigned group;
	struct ld_report rep;
	size_t have;
};

/* CPU time of every client process, in ns. */
static uint64_t clients_cpu_ns(const struct child *ch, unsigned n)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += proc_cpu_ns(ch[i].pid);
	return sum;
}

/* The clients' CPU during the load as they measured it themselves
 * (ld_report.cpu_ns, over their windows), in place of the parent's
 * reading of their threads (clients_cpu_ns), which misses the threads
 * that ended before it read: the tirpc APIs' threads end with the
 * window, and under a full CPU the parent reads late.  Kept when no
 * process reported. */
static void clients_cpu_reported(struct run_result *rr, unsigned ng)
{
	uint64_t cpu = 0, win = 0;
	for (unsigned k = 0; k < ng; k++) {
		cpu += rr->g[k].sum.cpu_ns;
		if (rr->g[k].sum.window_ns > win)
			win = rr->g[k].sum.window_ns;
	}
	if (cpu && win)
		rr->load_clients_pct = 100.0 * (double)cpu / (double)win;
}

static void sleep_s(double s)
{
	if (s <= 0)
		return;
	struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static void order_all(struct child *ch, unsigned n, char c)
{
	for (unsigned i = 0; i < n; i++)
		if (ch[i].wr >= 0 && write(ch[i].wr, &c, 1) != 1) {
			close(ch[i].wr);
			ch[i].wr = -1;
		}
}

static void sum_report(struct group_result *gr, const struct ld_report *r,
		       bool ready)
{
	struct ld_report *s = &gr->sum;
	if (ready) {
		s->conn_ok += r->conn_ok;
		s->conn_failed += r->conn_failed;
		errs_merge(&s->conn_err, &r->conn_err);
		for (unsigned b = 0; b < LD_NBUCKET; b++)
			s->conn_hist[b] += r->conn_hist[b];
		s->first_ok += r->first_ok;
		s->first_failed += r->first_failed;
		errs_merge(&s->first_err, &r->first_err);
		if (r->conn_done_ns > gr->conn_done_ns)
			gr->conn_done_ns = r->conn_done_ns;
		s->vers_fallbacks += r->vers_fallbacks;
		gr->procs_ready++;
		return;
	}
	/* DONE: the load's numbers; connection counters now include the
	 * reopened ones (READY's were counted already). */
	s->issued += r->issued;
	s->ok += r->ok;
	s->failed += r->failed;
	s->never += r->never;
	s->in_window += r->in_window;
	s->bytes += r->bytes;
	if (r->window_ns > s->window_ns)
		s->window_ns = r->window_ns;
	s->cpu_ns += r->cpu_ns;
	errs_merge(&s->err, &r->err);
	for (unsigned b = 0; b < LD_NBUCKET; b++)
		s->hist[b] += r->hist[b];
	s->reconnects += r->reconnects;
	gr->procs_done++;
}

/* Reads reports until every child has sent msg (or died, or the time is
 * up); false when one did not. */
static bool collect(struct child *ch, unsigned n, struct run_result *rr,
		    uint32_t msg, uint64_t until_ns,
		    struct ld_report *ready_copy)
{
	unsigned want = n, got = 0;
	struct pollfd *pf = calloc(n, sizeof(*pf));
	bool *fin = calloc(n, sizeof(*fin));
	bool ok = pf && fin;
	while (ok && got < want) {
		uint64_t now = perf_now_ns();
		if (now >= until_ns) {
			ok = false;
			break;
		}
		for (unsigned i = 0; i < n; i++)
			pf[i] = (struct pollfd){fin[i] ? -1 : ch[i].rd, POLLIN, 0};
		int r = poll(pf, n, 500);
		if (r <= 0)
			continue;
		for (unsigned i = 0; i < n; i++) {
			if (fin[i] || !(pf[i].revents & (POLLIN | POLLHUP)))
				continue;
			uint8_t *p = (uint8_t *)&ch[i].rep;
			ssize_t k = read(ch[i].rd, p + ch[i].have,
					 sizeof(ch[i].rep) - ch[i].have);
			if (k <= 0) {
				fprintf(stderr, "rpcrdma-perf load: client "
						"process %d went away\n",
					(int)ch[i].pid);
				ok = false;
				fin[i] = true;
				continue;
			}
			ch[i].have += (size_t)k;
			if (ch[i].have < sizeof(ch[i].rep))
				continue;
			ch[i].have = 0;
			if (ch[i].rep.msg != msg) {
				ok = false;
				fin[i] = true;
				continue;
			}
			if (msg == LD_DONE && ready_copy) {
				/* Connections of --reopen: DONE counts all;
				 * READY's share was added already. */
				struct ld_report d = ch[i].rep;
				const struct ld_report *a = &ready_copy[i];
				d.conn_ok -= a->conn_ok;
				d.conn_failed -= a->conn_failed;
				for (unsigned b = 0; b < LD_NBUCKET; b++)
					d.conn_hist[b] -= a->conn_hist[b];
				struct group_result *gr = &rr->g[ch[i].group];
				gr->sum.conn_ok += d.conn_ok;
				gr->sum.conn_failed += d.conn_failed;
				for (unsigned b = 0; b < LD_NBUCKET; b++)
					gr->sum.conn_hist[b] += d.conn_hist[b];
				/* Connection errors: only those past READY's. */
				for (unsigned e = 0; e < d.conn_err.used; e++) {
					uint64_t before = 0;
					for (unsigned f = 0; f < a->conn_err.used; f++)
						if (a->conn_err.code[f] ==
						    d.conn_err.code[e])
							before = a->conn_err.n[f];
					ld_err_add(&gr->sum.conn_err,
						   d.conn_err.code[e],
						   d.conn_err.n[e] - before);
				}
				/* The fallbacks, as of the end. */
				gr->sum.vers_fallbacks +=
					d.vers_fallbacks - a->vers_fallbacks;
			}
			if (msg == LD_READY && ready_copy)
				ready_copy[i] = ch[i].rep;
			sum_report(&rr->g[ch[i].group], &ch[i].rep,
				   msg == LD_READY);
			fin[i] = true;
			got++;
		}
	}
	free(pf);
	free(fin);
	return ok;
}

struct run_params {
	double idle_s;               /* hold the connections idle */
	double settle_s;             /* after the close, before RSS */
	bool quiet;
	bool census;                 /* ask the server for its page census */
};

static void progress(const struct run_params *rp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void progress(const struct run_params *rp, const char *fmt, ...)
{
	if (rp->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "rpcrdma-perf load: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The server's page census, now (SIGUSR2 asks for it: rpcrdma-perf
 * server --census); NULL if it did not come within 10 s. */
static char *census_take(const struct server *srv)
{
	unlink(srv->census);
	if (kill(srv->pid, SIGUSR2) < 0)
		return NULL;
	uint64_t until = perf_now_ns() + 10000000000ull;
	FILE *f = NULL;
	while (!(f = fopen(srv->census, "r")) && perf_now_ns() < until) {
		struct timespec t = {0, 20000000};
		nanosleep(&t, NULL);
	}
	if (!f) {
		fprintf(stderr, "rpcrdma-perf load: no page census from the "
				"server\n");
		return NULL;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			fprintf(m, "    %s", line);
		fclose(m);
	}
	fclose(f);
	unlink(srv->census);
	return text;
}

static int run_groups(const struct server *srv, const struct ld_group *gs,
		      unsigned ng, const struct run_params *rp,
		      struct run_result *rr)
{
	unsigned n = 0;
	memset(rr, 0, sizeof(*rr));
	rr->ngroups = ng;
	for (unsigned k = 0; k < ng; k++)
		n += gs[k].procs;
	struct child *ch = calloc(n, sizeof(*ch));
	struct ld_report *ready = calloc(n, sizeof(*ready));
	if (!ch || !ready) {
		free(ch);
		free(ready);
		return -1;
	}
	double duration = 0, drain = 0;
	for (unsigned k = 0; k < ng; k++) {
		if (gs[k].duration_s > duration)
			duration = gs[k].duration_s;
		if (gs[k].drain_s > drain)
			drain = gs[k].drain_s;
	}
	rr->rss_before = srv->pid ? proc_rss_kib(srv->pid) : 0;
	fflush(stdout);
	fflush(stderr);
	rr->t0_ns = perf_now_ns();
	unsigned made = 0;
	for (unsigned k = 0; k < ng; k++)
		for (unsigned i = 0; i < gs[k].procs; i++) {
			int up[2], down[2];
			if (pipe(up) < 0 || pipe(down) < 0)
				goto fail;
			pid_t pid = fork();
			if (pid < 0)
				goto fail;
			if (pid == 0) {
				close(up[0]);
				close(down[1]);
				for (unsigned j = 0; j < made; j++) {
					close(ch[j].rd);
					close(ch[j].wr);
				}
				_exit(ld_client_main(&gs[k], i, up[1], down[0]));
			}
			close(up[1]);
			close(down[0]);
			ch[made] = (struct child){pid, up[0], down[1], k, {0}, 0};
			made++;
		}
	uint64_t conns = 0;
	for (unsigned k = 0; k < ng; k++)
		conns += (uint64_t)gs[k].procs * gs[k].conns + gs[k].conns_extra;
	progress(rp, "%u processes opening %llu connections", n,
		 (unsigned long long)conns);
	/* Connecting may take long with thousands (the issue saw 55 s for
	 * 4000); a process that dies is seen at once. */
	if (!collect(ch, n, rr, LD_READY,
		     perf_now_ns() + 600000000000ull, ready))
		goto fail;
	for (unsigned k = 0; k < ng; k++)
		rr->conns_held += rr->g[k].sum.conn_ok;
	progress(rp, "%llu connections open, first calls made",
		 (unsigned long long)rr->conns_held);

	if (rp->idle_s > 0 && srv->pid) {
		uint64_t k0 = clients_cpu_ns(ch, n);
		uint64_t c0 = proc_cpu_ns(srv->pid), t0 = perf_now_ns();
		sleep_s(rp->idle_s);
		uint64_t c1 = proc_cpu_ns(srv->pid), t1 = perf_now_ns();
		uint64_t k1 = clients_cpu_ns(ch, n);
		rr->idle_s = (double)(t1 - t0) / 1e9;
		rr->idle_cpu_pct = 100.0 * (double)(c1 - c0) / (double)(t1 - t0);
		rr->idle_clients_pct = 100.0 * (double)(k1 - k0) /
				       (double)(t1 - t0);
	}
	rr->rss_held = srv->pid ? proc_rss_kib(srv->pid) : 0;
	if (rp->census && srv->census[0])
		rr->census = census_take(srv);

	if (duration > 0) {
		progress(rp, "load for %.1f s", duration);
		uint64_t k0 = clients_cpu_ns(ch, n);
		uint64_t c0 = srv->pid ? proc_cpu_ns(srv->pid) : 0;
		uint64_t t0 = perf_now_ns();
		order_all(ch, n, 'g');
		sleep_s(duration);
		uint64_t c1 = srv->pid ? proc_cpu_ns(srv->pid) : 0;
		uint64_t k1 = clients_cpu_ns(ch, n);
		rr->load_s = (double)(perf_now_ns() - t0) / 1e9;
		rr->load_cpu_ns = c1 - c0;
		rr->load_clients_pct = 100.0 * (double)(k1 - k0) / 1e9 /
				       rr->load_s;
		if (!collect(ch, n, rr, LD_DONE,
			     perf_now_ns() + (uint64_t)((drain + 30) * 1e9),
			     ready))
			goto fail;
		clients_cpu_reported(rr, ng);
		rr->rss_loaded = srv->pid ? proc_rss_kib(srv->pid) : 0;
	}
	order_all(ch, n, 'c');
	for (unsigned i = 0; i < n; i++) {
		close(ch[i].rd);
		if (ch[i].wr >= 0)
			close(ch[i].wr);
		waitpid(ch[i].pid, NULL, 0);
	}
	progress(rp, "connections closed");
	sleep_s(rp->settle_s);
	rr->rss_after = srv->pid ? proc_rss_kib(srv->pid) : 0;
	free(ch);
	free(ready);
	return 0;
fail:
	rr->failed = true;
	for (unsigned i = 0; i < made; i++) {
		kill(ch[i].pid, SIGKILL);
		close(ch[i].rd);
		if (ch[i].wr >= 0)
			close(ch[i].wr);
		waitpid(ch[i].pid, NULL, 0);
	}
	free(ch);
	free(ready);
	fprintf(stderr, "rpcrdma-perf load: the run failed\n");
	return -1;
}

/* ------------------------------------------------------------------ */
/* Options                                                              */

struct lopts {
	struct ld_group g;           /* the template of every contender's */
	unsigned total_conns;        /* --connections (0: procs x conns) */
	unsigned who;                /* 1 << enum ld_api */
	const char *addr;            /* where a server of ours listens */
	const char *server;          /* --server HOST:PORT */
	pid_t server_pid;
	unsigned server_workers;
	struct run_params rp;
	bool json;
	bool fairness;
	unsigned fair_conns, greedy_depth;
	struct ld_mix greedy_mix;
};

static void load_usage(void)
{
	fprintf(stderr, "usage: rpcrdma-perf load [--procs P] [--conns C | "
			"--connections N] [--depth D]\n"
			"       [--duration S] [--mix SPEC] [--with LIST] "
			"[--reopen N] [--idle S]\n"
			"       [--server HOST:PORT --server-pid PID | --addr IP "
			"--server-workers N]\n"
			"       [--fairness [--fair-conns N] [--greedy-depth D] "
			"[--greedy-mix SPEC]] [--json] [--quiet] [--census]\n"
			"       rpcrdma-perf load --help\n");
}

static int parse_uint(const char *s, unsigned long lo, unsigned long hi,
		      unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static int parse_secs(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= lo) || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_load_opts(int argc, char **argv, struct lopts *o)
{
	static const struct option lo[] = {
		{"procs", required_argument, NULL, 'P'},
		{"conns", required_argument, NULL, 'C'},
		{"connections", required_argument, NULL, 'N'},
		{"depth", required_argument, NULL, 'D'},
		{"duration", required_argument, NULL, 't'},
		{"mix", required_argument, NULL, 'm'},
		{"with", required_argument, NULL, 'w'},
		{"reopen", required_argument, NULL, 'R'},
		{"idle", required_argument, NULL, 'i'},
		{"drain", required_argument, NULL, 'd'},
		{"settle", required_argument, NULL, 's'},
		{"connect-threads", required_argument, NULL, 'T'},
		{"server", required_argument, NULL, 'S'},
		{"server-pid", required_argument, NULL, 'p'},
		{"server-workers", required_argument, NULL, 'W'},
		{"addr", required_argument, NULL, 'a'},
		{"provider", required_argument, NULL, 'v'},
		{"fairness", no_argument, NULL, 'f'},
		{"fair-conns", required_argument, NULL, 'F'},
		{"greedy-depth", required_argument, NULL, 'g'},
		{"greedy-mix", required_argument, NULL, 'G'},
		{"json", no_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"census", no_argument, NULL, 'K'},
		{NULL, 0, NULL, 0},
	};
	unsigned u;
	memset(o, 0, sizeof(*o));
	o->g.procs = 2;
	o->g.conns = 4;
	o->g.depth = 1;
	o->g.duration_s = 5;
	o->g.drain_s = 40;
	o->g.connect_threads = 8;
	ld_mix_parse("null", &o->g.mix);
	/* Every contender: the rdma-tirpc column is what rpcgen programs
	 * get, and most users run those. */
	o->who = 1u << LD_NATIVE | 1u << LD_RTIRPC | 1u << LD_TIRPC;
	o->addr = "127.0.0.1";
	o->rp.idle_s = 1;
	o->rp.settle_s = 3;
	o->fair_conns = 8;
	o->greedy_depth = 32;
	ld_mix_parse("w1m", &o->greedy_mix);
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "", lo, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'P':
			if (parse_uint(optarg, 1, 256, &o->g.procs) < 0)
				return -1;
			break;
		case 'C':
			if (parse_uint(optarg, 1, 100000, &o->g.conns) < 0)
				return -1;
			break;
		case 'N':
			if (parse_uint(optarg, 1, 1000000, &o->total_conns) < 0)
				return -1;
			break;
		case 'D':
			if (parse_uint(optarg, 1, 1024, &o->g.depth) < 0)
				return -1;
			break;
		case 't':
			if (parse_secs(optarg, 0, 86400, &o->g.duration_s) < 0)
				return -1;
			break;
		case 'm':
			if (ld_mix_parse(optarg, &o->g.mix) < 0)
				return -1;
			break;
		case 'w': {
			unsigned m = 0;
			char buf[96];
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (char *save = NULL, *t = strtok_r(buf, ",", &save);
			     t; t = strtok_r(NULL, ",", &save)) {
				unsigned k = 0;
				while (k < LD_NAPI && strcmp(t, ld_api_name[k]))
					k++;
				if (k == LD_NAPI)
					return -1;
				m |= 1u << k;
			}
			if (!m)
				return -1;
			o->who = m;
			break;
		}
		case 'R':
			if (parse_uint(optarg, 0, 1000000000, &o->g.reopen) < 0)
				return -1;
			break;
		case 'i':
			if (parse_secs(optarg, 0, 3600, &o->rp.idle_s) < 0)
				return -1;
			break;
		case 'd':
			if (parse_secs(optarg, 0, 3600, &o->g.drain_s) < 0)
				return -1;
			break;
		case 's':
			if (parse_secs(optarg, 0, 3600, &o->rp.settle_s) < 0)
				return -1;
			break;
		case 'T':
			if (parse_uint(optarg, 1, 1024, &o->g.connect_threads) < 0)
				return -1;
			break;
		case 'S':
			o->server = optarg;
			break;
		case 'p':
			if (parse_uint(optarg, 1, 0x7fffffff, &u) < 0)
				return -1;
			o->server_pid = (pid_t)u;
			break;
		case 'W':
			if (parse_uint(optarg, 0, 64, &o->server_workers) < 0)
				return -1;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'v':
			o->g.provider = optarg;
			break;
		case 'f':
			o->fairness = true;
			break;
		case 'K':
			o->rp.census = true;
			break;
		case 'F':
			if (parse_uint(optarg, 1, 4096, &o->fair_conns) < 0)
				return -1;
			break;
		case 'g':
			if (parse_uint(optarg, 1, 1024, &o->greedy_depth) < 0)
				return -1;
			break;
		case 'G':
			if (ld_mix_parse(optarg, &o->greedy_mix) < 0)
				return -1;
			break;
		case 'j':
			o->json = true;
			break;
		case 'q':
			o->rp.quiet = true;
			break;
		default:
			return -1;
		}
	}
	if (optind != argc)
		return -1;
	if (o->total_conns) {
		if (o->total_conns < o->g.procs)
			o->g.procs = o->total_conns;
		o->g.conns = o->total_conns / o->g.procs;
		o->g.conns_extra = o->total_conns % o->g.procs;
	}
	if (o->g.reopen && (o->who & ~(1u << LD_NATIVE)) && o->g.depth > 1) {
		fprintf(stderr, "rpcrdma-perf load: --reopen with rdma-tirpc "
				"or libtirpc needs --depth 1\n");
		return -1;
	}
	if (o->rp.census && (o->server || o->fairness || o->json)) {
		fprintf(stderr, "rpcrdma-perf load: --census needs a server of "
				"its own, text output and no --fairness\n");
		return -1;
	}
	if (o->server && !o->server_pid)
		fprintf(stderr, "rpcrdma-perf load: no --server-pid: the "
				"server's memory and CPU are not measured\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

struct load_nums {
	double cps, p50, p99, p999, mibs;
	double cpu_us_per_call, cpu_pct;
	double rss_per_conn_kib;
	double establish_s, conn_p50, conn_p99;
};

static void nums_of(const struct run_result *rr, unsigned k,
		    struct load_nums *n)
{
	const struct group_result *gr = &rr->g[k];
	const struct ld_report *s = &gr->sum;
	memset(n, 0, sizeof(*n));
	double win = s->window_ns ? (double)s->window_ns / 1e9 : rr->load_s;
	if (win > 0) {
		n->cps = (double)s->in_window / win;
		n->mibs = (double)s->bytes / win / (1024.0 * 1024.0);
	}
	n->p50 = ld_hist_quantile_us(s->hist, 0.50);
	n->p99 = ld_hist_quantile_us(s->hist, 0.99);
	n->p999 = ld_hist_quantile_us(s->hist, 0.999);
	uint64_t calls = 0;
	for (unsigned j = 0; j < rr->ngroups; j++)
		calls += rr->g[j].sum.in_window;
	if (calls && rr->load_cpu_ns)
		n->cpu_us_per_call = (double)rr->load_cpu_ns / 1000.0 /
				     (double)calls;
	if (rr->load_s > 0)
		n->cpu_pct = 100.0 * (double)rr->load_cpu_ns / 1e9 / rr->load_s;
	if (rr->conns_held && rr->rss_held && rr->rss_before)
		n->rss_per_conn_kib = ((double)rr->rss_held -
				       (double)rr->rss_before) /
				      (double)rr->conns_held;
	if (gr->conn_done_ns > rr->t0_ns)
		n->establish_s = (double)(gr->conn_done_ns - rr->t0_ns) / 1e9;
	n->conn_p50 = ld_hist_quantile_us(s->conn_hist, 0.50);
	n->conn_p99 = ld_hist_quantile_us(s->conn_hist, 0.99);
}

static void errs_text(const struct ld_errs *e, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < e->used && o < cap; i++) {
		char nm[96];
		ld_err_name(e->code[i], nm, sizeof(nm));
		o += (size_t)snprintf(buf + o, cap - o, "%s%s x%llu",
				      i ? ", " : "", nm,
				      (unsigned long long)e->n[i]);
	}
	if (!e->used)
		snprintf(buf, cap, "none");
}

static void us_text(char *b, size_t cap, double us)
{
	if (us <= 0)
		snprintf(b, cap, "-");
	else if (us >= 10000)
		snprintf(b, cap, "%.1f ms", us / 1000);
	else
		snprintf(b, cap, "%.0f us", us);
}

static void print_group(const struct ld_group *g, const struct run_result *rr,
			unsigned k, bool load)
{
	const struct group_result *gr = &rr->g[k];
	const struct ld_report *s = &gr->sum;
	struct load_nums n;
	char a[32], b[32], c[32], e[512];
	nums_of(rr, k, &n);
	unsigned total = g->procs * g->conns + g->conns_extra;
	printf("  %s%s%s: %u processes x %u%s connections x %u in flight, "
	       "mix %s",
	       ld_api_name[g->api], g->label ? " " : "",
	       g->label ? g->label : "", g->procs, g->conns,
	       g->conns_extra ? "+" : "", g->depth, g->mix.text);
	if (g->reopen)
		printf(", each connection reopened after %u calls", g->reopen);
	printf("\n");
	us_text(a, sizeof(a), n.conn_p50);
	us_text(b, sizeof(b), n.conn_p99);
	errs_text(&s->conn_err, e, sizeof(e));
	if (g->reopen && load)
		printf("    connect: %llu connections made (%u at a time), the "
		       "first %u in %.2f s (each: p50 %s, p99 %s); failed "
		       "%llu: %s\n",
		       (unsigned long long)s->conn_ok, total, total,
		       n.establish_s, a, b,
		       (unsigned long long)s->conn_failed, e);
	else
		printf("    connect: %llu of %u in %.2f s (each: p50 %s, p99 "
		       "%s); failed %llu: %s\n",
		       (unsigned long long)s->conn_ok, total, n.establish_s, a,
		       b, (unsigned long long)s->conn_failed, e);
	errs_text(&s->first_err, e, sizeof(e));
	printf("    first call (NULL on each): %llu ok, %llu failed: %s; "
	       "version 2 openers lost: %llu\n",
	       (unsigned long long)s->first_ok,
	       (unsigned long long)s->first_failed, e,
	       (unsigned long long)s->vers_fallbacks);
	if (!load)
		return;
	us_text(a, sizeof(a), n.p50);
	us_text(b, sizeof(b), n.p99);
	us_text(c, sizeof(c), n.p999);
	printf("    load: %.0f calls/s", n.cps);
	if (n.mibs > 0.05)
		printf(" (%.1f MiB/s)", n.mibs);
	printf(", latency p50 %s, p99 %s, p999 %s\n", a, b, c);
	errs_text(&s->err, e, sizeof(e));
	printf("    calls: %llu started, %llu ok, %llu failed, %llu never "
	       "completed; errors: %s\n",
	       (unsigned long long)s->issued, (unsigned long long)s->ok,
	       (unsigned long long)s->failed, (unsigned long long)s->never, e);
}

static void print_server(const struct run_result *rr, bool load)
{
	struct load_nums n;
	nums_of(rr, 0, &n);
	printf("    server: RSS %.1f MiB before, %.1f MiB held (%.0f KiB per "
	       "connection), ",
	       (double)rr->rss_before / 1024, (double)rr->rss_held / 1024,
	       n.rss_per_conn_kib);
	if (load)
		printf("%.1f MiB after the load, ",
		       (double)rr->rss_loaded / 1024);
	printf("%.1f MiB after close", (double)rr->rss_after / 1024);
	if (rr->idle_s > 0)
		printf("; CPU %.1f %% of a core while idle (%.1f s; the "
		       "clients %.1f %%)",
		       rr->idle_cpu_pct, rr->idle_s, rr->idle_clients_pct);
	printf("\n");
	if (load && n.cpu_us_per_call > 0)
		printf("    server CPU: %.1f us per call (%.0f %% of a core "
		       "during the load; the clients %.0f %%)\n",
		       n.cpu_us_per_call, n.cpu_pct, rr->load_clients_pct);
}

static void json_errs(const char *key, const struct ld_errs *e)
{
	printf("\"%s\": {", key);
	for (unsigned i = 0; i < e->used; i++) {
		char nm[96];
		ld_err_name(e->code[i], nm, sizeof(nm));
		printf("%s\"%s\": %llu", i ? ", " : "", nm,
		       (unsigned long long)e->n[i]);
	}
	printf("}");
}

static void json_num(const char *key, double v)
{
	if (v > 0 && isfinite(v))
		printf("\"%s\": %.3f, ", key, v);
	else
		printf("\"%s\": null, ", key);
}

static void json_group(const struct ld_group *g, const struct run_result *rr,
		       unsigned k)
{
	const struct ld_report *s = &rr->g[k].sum;
	struct load_nums n;
	nums_of(rr, k, &n);
	printf("{\"contender\": \"%s\", \"label\": \"%s\", \"procs\": %u, "
	       "\"connections\": %u, \"depth\": %u, \"mix\": \"%s\", "
	       "\"reopen\": %u, ",
	       ld_api_name[g->api], g->label ? g->label : "", g->procs,
	       g->procs * g->conns + g->conns_extra, g->depth, g->mix.text,
	       g->reopen);
	printf("\"connected\": %llu, \"connect_failed\": %llu, ",
	       (unsigned long long)s->conn_ok,
	       (unsigned long long)s->conn_failed);
	json_num("establish_s", n.establish_s);
	json_num("connect_p50_us", n.conn_p50);
	json_num("connect_p99_us", n.conn_p99);
	json_errs("connect_errors", &s->conn_err);
	printf(", \"first_ok\": %llu, \"first_failed\": %llu, ",
	       (unsigned long long)s->first_ok,
	       (unsigned long long)s->first_failed);
	json_errs("first_errors", &s->first_err);
	printf(", \"vers_fallbacks\": %llu, ",
	       (unsigned long long)s->vers_fallbacks);
	json_num("calls_per_s", n.cps);
	json_num("mib_per_s", n.mibs);
	json_num("p50_us", n.p50);
	json_num("p99_us", n.p99);
	json_num("p999_us", n.p999);
	printf("\"started\": %llu, \"ok\": %llu, \"failed\": %llu, "
	       "\"never_completed\": %llu, ",
	       (unsigned long long)s->issued, (unsigned long long)s->ok,
	       (unsigned long long)s->failed, (unsigned long long)s->never);
	json_errs("errors", &s->err);
	printf("}");
}

static void json_server(const struct run_result *rr)
{
	struct load_nums n;
	nums_of(rr, 0, &n);
	printf("\"server\": {");
	json_num("rss_before_kib", (double)rr->rss_before);
	json_num("rss_held_kib", (double)rr->rss_held);
	json_num("rss_loaded_kib", (double)rr->rss_loaded);
	json_num("rss_after_kib", (double)rr->rss_after);
	json_num("rss_per_connection_kib", n.rss_per_conn_kib);
	json_num("idle_cpu_pct", rr->idle_s > 0 ? rr->idle_cpu_pct + 1e-9 : 0);
	json_num("cpu_us_per_call", n.cpu_us_per_call);
	json_num("load_cpu_pct", n.cpu_pct);
	json_num("idle_clients_cpu_pct", rr->idle_clients_pct);
	json_num("load_clients_cpu_pct", rr->load_clients_pct);
	printf("\"connections_held\": %llu}",
	       (unsigned long long)rr->conns_held);
}

/* ------------------------------------------------------------------ */
/* The subcommand                                                       */

static int setup_server(const struct lopts *o, struct server *srv)
{
	memset(srv, 0, sizeof(*srv));
	if (!o->server)
		return server_start(srv, o->addr, o->g.provider,
				    o->server_workers, o->rp.census);
	struct sockaddr_storage ss;
	socklen_t len;
	if (pr_parse_addr(o->server, RPCRDMA_DEFAULT_PORT, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf load: bad server address '%s'\n",
			o->server);
		return -1;
	}
	char a[96];
	pr_addr_string(&ss, a, sizeof(a));
	/* "[v6]:port" or "a.b.c.d:port": the host part. */
	char *colon = strrchr(a, ':');
	*colon = 0;
	if (a[0] == '[') {
		a[strlen(a) - 1] = 0;
		snprintf(srv->host, sizeof(srv->host), "%s", a + 1);
		srv->v6 = true;
	} else {
		snprintf(srv->host, sizeof(srv->host), "%s", a);
	}
	srv->port = pr_get_port(&ss);
	srv->pid = o->server_pid;
	return 0;
}

static int cmd_contenders(struct lopts *o, const struct server *srv)
{
	struct run_result rr[LD_NAPI];
	struct ld_group gs[LD_NAPI];
	bool ran[LD_NAPI] = {false};
	int rc = 0;
	bool load = o->g.duration_s > 0;
	for (unsigned a = 0; a < LD_NAPI; a++) {
		if (!(o->who & 1u << a))
			continue;
		gs[a] = o->g;
		gs[a].api = (enum ld_api)a;
		server_target(srv, (enum ld_api)a, gs[a].target,
			      sizeof(gs[a].target));
		progress(&o->rp, "%s against %s", ld_api_name[a], gs[a].target);
		if (run_groups(srv, &gs[a], 1, &o->rp, &rr[a]) < 0)
			rc = 1;
		ran[a] = !rr[a].failed;
	}
	if (o->json) {
		printf("{\"benchmark\": \"load\", \"duration_s\": %.3f, "
		       "\"idle_s\": %.3f, \"server_workers\": %u, "
		       "\"provider\": \"%s\", \"runs\": [",
		       o->g.duration_s, o->rp.idle_s, o->server_workers,
		       o->g.provider ? o->g.provider : "iwarp");
		bool first = true;
		for (unsigned a = 0; a < LD_NAPI; a++) {
			if (!ran[a])
				continue;
			printf("%s{\"group\": ", first ? "" : ", ");
			json_group(&gs[a], &rr[a], 0);
			printf(", ");
			json_server(&rr[a]);
			printf("}");
			first = false;
		}
		printf("], \"ratios_vs_libtirpc\": {");
		first = true;
		for (unsigned a = 0; a < LD_TIRPC && ran[LD_TIRPC]; a++) {
			if (!ran[a])
				continue;
			struct load_nums x, t;
			nums_of(&rr[a], 0, &x);
			nums_of(&rr[LD_TIRPC], 0, &t);
			printf("%s\"%s\": {", first ? "" : ", ", ld_api_name[a]);
			json_num("calls_per_s", pr_ratio(x.cps, t.cps));
			json_num("p99", pr_ratio(x.p99, t.p99));
			json_num("cpu_per_call", pr_ratio(x.cpu_us_per_call,
							  t.cpu_us_per_call));
			printf("\"rss_per_connection\": ");
			double r = pr_ratio(x.rss_per_conn_kib,
					    t.rss_per_conn_kib);
			if (r > 0)
				printf("%.3f}", r);
			else
				printf("null}");
			first = false;
		}
		printf("}}\n");
		return rc;
	}
	printf("== load: %s%s, %.1f s%s ==\n",
	       o->server ? "server " : "server (its own process) ",
	       srv->host, o->g.duration_s,
	       o->server_workers ? ", server with worker threads" : "");
	for (unsigned a = 0; a < LD_NAPI; a++) {
		if (!ran[a])
			continue;
		print_group(&gs[a], &rr[a], 0, load);
		print_server(&rr[a], load);
		if (rr[a].census)
			fputs(rr[a].census, stdout);
	}
	for (unsigned a = 0; a < LD_NAPI; a++)
		if (o->who & 1u << a)
			free(rr[a].census);
	if (load && ran[LD_TIRPC] && (ran[LD_NATIVE] || ran[LD_RTIRPC]) &&
	    !o->rp.quiet) {
		printf("  ratios to libtirpc (calls/s: higher is better; p99, "
		       "CPU per call: lower):\n");
		for (unsigned a = 0; a < LD_TIRPC; a++) {
			if (!ran[a])
				continue;
			struct load_nums x, t;
			nums_of(&rr[a], 0, &x);
			nums_of(&rr[LD_TIRPC], 0, &t);
			printf("    %-10s calls/s %.2f, p99 %.2f, server CPU "
			       "per call %.2f\n",
			       ld_api_name[a], pr_ratio(x.cps, t.cps),
			       pr_ratio(x.p99, t.p99),
			       pr_ratio(x.cpu_us_per_call, t.cpu_us_per_call));
		}
	}
	fflush(stdout);
	return rc;
}

/* Fairness for one contender: its small callers alone, then beside its
 * greedy one (both through the same API, against the same server). */
struct fair_result {
	enum ld_api api;
	struct ld_group gs[2];
	struct run_result alone, beside;
	struct load_nums a, b, gr;
};

static int fair_one(struct lopts *o, const struct server *srv,
		    enum ld_api api, struct fair_result *f)
{
	struct ld_group *gs = f->gs;
	f->api = api;
	gs[0] = o->g;
	gs[0].api = api;
	gs[0].procs = 1;
	gs[0].conns = o->fair_conns;
	gs[0].conns_extra = 0;
	gs[0].depth = 1;
	gs[0].reopen = 0;
	gs[0].label = "small";
	ld_mix_parse("null", &gs[0].mix);
	gs[1] = gs[0];
	gs[1].conns = 1;
	gs[1].depth = o->greedy_depth;
	gs[1].mix = o->greedy_mix;
	gs[1].label = "greedy";
	server_target(srv, api, gs[0].target, sizeof(gs[0].target));
	server_target(srv, api, gs[1].target, sizeof(gs[1].target));
	if (o->g.duration_s <= 0)
		gs[0].duration_s = gs[1].duration_s = 5;
	struct run_params rp = o->rp;
	rp.idle_s = 0;
	progress(&rp, "fairness, %s: %u small connections alone",
		 ld_api_name[api], o->fair_conns);
	if (run_groups(srv, gs, 1, &rp, &f->alone) < 0)
		return -1;
	progress(&rp, "fairness, %s: beside one greedy connection",
		 ld_api_name[api]);
	if (run_groups(srv, gs, 2, &rp, &f->beside) < 0)
		return -1;
	nums_of(&f->alone, 0, &f->a);
	nums_of(&f->beside, 0, &f->b);
	nums_of(&f->beside, 1, &f->gr);
	return 0;
}

static void fair_json(const struct fair_result *f)
{
	printf("\"contender\": \"%s\", \"duration_s\": %.3f, \"alone\": ",
	       ld_api_name[f->api], f->gs[0].duration_s);
	json_group(&f->gs[0], &f->alone, 0);
	printf(", \"beside\": ");
	json_group(&f->gs[0], &f->beside, 0);
	printf(", \"greedy\": ");
	json_group(&f->gs[1], &f->beside, 1);
	printf(", \"ratios\": {");
	json_num("small_p99_beside_vs_alone", pr_ratio(f->b.p99, f->a.p99));
	printf("\"small_rate_beside_vs_alone\": ");
	double r = pr_ratio(f->b.cps, f->a.cps);
	if (r > 0)
		printf("%.3f}", r);
	else
		printf("null}");
}

static void fair_text(const struct lopts *o, const struct fair_result *f)
{
	char x[32], y[32];
	printf("== fairness: %u connections x NULL (1 in flight), alone and "
	       "beside 1 connection x %u x %s in flight; %s, %.1f s each ==\n",
	       o->fair_conns, o->greedy_depth, o->greedy_mix.text,
	       ld_api_name[f->api], f->gs[0].duration_s);
	printf("  %-24s %14s %14s %8s\n", "", "alone", "beside greedy",
	       "ratio");
	printf("  %-24s %14.0f %14.0f %8.2f\n", "small calls/s", f->a.cps,
	       f->b.cps, pr_ratio(f->b.cps, f->a.cps));
	us_text(x, sizeof(x), f->a.p50);
	us_text(y, sizeof(y), f->b.p50);
	printf("  %-24s %14s %14s %8.2f\n", "small p50", x, y,
	       pr_ratio(f->b.p50, f->a.p50));
	us_text(x, sizeof(x), f->a.p99);
	us_text(y, sizeof(y), f->b.p99);
	printf("  %-24s %14s %14s %8.2f\n", "small p99", x, y,
	       pr_ratio(f->b.p99, f->a.p99));
	us_text(x, sizeof(x), f->a.p999);
	us_text(y, sizeof(y), f->b.p999);
	printf("  %-24s %14s %14s %8.2f\n", "small p999", x, y,
	       pr_ratio(f->b.p999, f->a.p999));
	printf("  %-24s %14s %11.0f/s\n", "greedy calls", "-", f->gr.cps);
	printf("  %-24s %14s %9.0f MiB/s\n", "greedy data", "-", f->gr.mibs);
	if (!o->rp.quiet) {
		print_group(&f->gs[0], &f->alone, 0, true);
		print_group(&f->gs[0], &f->beside, 0, true);
		print_group(&f->gs[1], &f->beside, 1, true);
	}
}

/* Fairness: small callers alone, then beside a greedy one, for each
 * contender of --with in turn (the same server), and a summary when
 * there are several. */
static int cmd_fairness(struct lopts *o, const struct server *srv)
{
	struct fair_result *fr = calloc(LD_NAPI, sizeof(*fr));
	if (!fr)
		return 1;
	unsigned n = 0;
	int rc = 0;
	for (unsigned a = 0; a < LD_NAPI; a++) {
		if (!(o->who & 1u << a))
			continue;
		if (fair_one(o, srv, (enum ld_api)a, &fr[n]) < 0) {
			rc = 1;
			break;
		}
		if (fr[n].alone.failed || fr[n].beside.failed)
			rc = 1;
		n++;
	}
	if (o->json) {
		/* The first contender's numbers at the top level (the
		 * layout of one contender), all of them in "contenders". */
		printf("{\"benchmark\": \"load-fairness\", ");
		if (n)
			fair_json(&fr[0]);
		printf("%s\"contenders\": [", n ? ", " : "");
		for (unsigned i = 0; i < n; i++) {
			printf("%s{", i ? ", " : "");
			fair_json(&fr[i]);
			printf("}");
		}
		printf("]}\n");
		free(fr);
		return rc;
	}
	for (unsigned i = 0; i < n; i++)
		fair_text(o, &fr[i]);
	if (n > 1) {
		printf("== fairness, contenders side by side (beside greedy / "
		       "alone) ==\n");
		printf("  %-12s %10s %10s %8s %10s %10s %8s %12s\n",
		       "contender", "p99 alone", "beside", "ratio",
		       "calls/s", "beside", "ratio", "greedy MiB/s");
		for (unsigned i = 0; i < n; i++) {
			const struct fair_result *f = &fr[i];
			char x[32], y[32];
			us_text(x, sizeof(x), f->a.p99);
			us_text(y, sizeof(y), f->b.p99);
			printf("  %-12s %10s %10s %8.2f %10.0f %10.0f %8.2f "
			       "%12.0f\n",
			       ld_api_name[f->api], x, y,
			       pr_ratio(f->b.p99, f->a.p99), f->a.cps,
			       f->b.cps, pr_ratio(f->b.cps, f->a.cps),
			       f->gr.mibs);
		}
	}
	fflush(stdout);
	free(fr);
	return rc;
}

int perf_cmd_load(int argc, char **argv)
{
	struct lopts o;
	if (parse_load_opts(argc, argv, &o) < 0) {
		load_usage();
		return 2;
	}
	ld_raise_nofile();
	/* A child's exit must not stop us; our writes to a child that died
	 * must not either. */
	signal(SIGPIPE, SIG_IGN);
	struct server srv;
	if (setup_server(&o, &srv) < 0)
		return 1;
	int rc = o.fairness ? cmd_fairness(&o, &srv) : cmd_contenders(&o, &srv);
	server_stop(&srv);
	return rc;
}
