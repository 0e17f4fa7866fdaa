/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf cost: what one synchronous NULL call costs the machine,
 * client and server in one process, for rpcrdma (native API), rdma-tirpc
 * (rpcrdma through the libtirpc adapters) and libtirpc over TCP, side by
 * side, pinned to one CPU and not.
 *
 *   instructions      user-space instructions per call, counted by
 *                     valgrind --tool=callgrind (every thread, every
 *                     library): a run of warm-up + 2N calls minus a run of
 *                     warm-up + N calls, over N, so connection set-up,
 *                     warm-up and teardown cancel out.  Other load
 *                     does not change it; a single-threaded program's
 *                     count is exact (libtirpc's), a multi-threaded one's
 *                     moves by a few percent from run to run, because
 *                     how often a thread polls and finds nothing depends
 *                     on how valgrind (which runs one thread at a time)
 *                     schedules them.
 *   context switches  per call: getrusage(RUSAGE_SELF) ru_nvcsw +
 *                     ru_nivcsw (all threads) around the N timed calls in
 *                     this process; and `perf stat -e context-switches`
 *                     over the same 2N - N runs as callgrind, when perf
 *                     works.  Both count the switches the process's
 *                     threads make; the machine's other load shows up as
 *                     involuntary ones.
 *   CPU and wall time per call, from the same getrusage and clock.
 *
 * The runs under valgrind and perf are this program again, as the hidden
 * subcommand `cost-run CONTENDER CALLS`: warm-up, CALLS NULL calls, exit.
 * Callgrind needs a build without AddressSanitizer (valgrind cannot run
 * one): the sanitized build says so instead of a number.
 *
 * The goals of the fast-path issue are printed with MET / MISSED, never
 * asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sanitizers.h"
#include "perf.h"
#include "perf_rpc.h"
#include "perf_tirpc.h"

#ifdef RPCRDMA_ASAN
#define BUILT_WITH_ASAN 1
#else
#define BUILT_WITH_ASAN 0
#endif

enum { K_RDMA, K_RTIRPC, K_TIRPC, K_N };
static const char *const kname[K_N] = {"rpcrdma", "rdma-tirpc", "libtirpc"};

/* Goals (issue: fast path): instructions <= 1.5x libtirpc's (stretch:
 * 2 k); context switches <= libtirpc's.  Counts of switches are read to
 * 0.05 per call: the same machine's other load moves them that much. */
#define GOAL_INSTR_RATIO 1.5
#define GOAL_INSTR_STRETCH 2000.0
#define CSW_SLACK 0.05

struct copts {
	unsigned long iters;        /* N */
	unsigned long warmup;
	struct rpcrdma_opts ro;
	const char *ip;
	int pin;                    /* 0 no, 1 yes, 2 both */
	int cpu;
	unsigned who;               /* 1 << K_* */
	bool callgrind, perf, json, quiet;
	bool goals;           /* --goals: targets and MET / MISSED too */
};

/* One contender's costs in one pinning; NAN: not measured. */
struct cost {
	bool ran;
	double instr;               /* callgrind */
	double csw_perf;            /* perf stat */
	double csw_vol, csw_invol;  /* getrusage */
	double cpu_us, wall_us;     /* getrusage, clock */
	char note[200];
};

struct cpass {
	bool pinned;
	struct cost c[K_N];
};

/* Why a tool gave no numbers ("" when it did), for the whole run. */
static char callgrind_why[160], perf_why[160];

/* ------------------------------------------------------------------ */
/* The session: this process, or the hidden subcommand                  */

static int open_session(int k, const struct sockaddr_storage *ip,
			socklen_t len, const struct rpcrdma_opts *ro,
			struct pr_nullsess **s)
{
	switch (k) {
	case K_RDMA:
		return pr_rdma_nullsess(ip, len, ro, s);
	case K_RTIRPC:
		return pr_clnt_nullsess(&pr_tirpc_rdma_ops, ip, len, ro, s);
	default:
		return pr_clnt_nullsess(&pr_tirpc_tcp_ops, ip, len, ro, s);
	}
}

/* What each measured call is (--op): NULL (size 0), or a synchronous
 * READ or WRITE of size bytes with DDP, as `rpc` makes them. */
static struct {
	bool write;
	size_t size;
	char spec[32];              /* as given, passed to cost-run */
} op = {false, 0, "null"};

static int parse_op(const char *s)
{
	char *end;
	unsigned long v = 0;
	bool w = false;
	if (!strcmp(s, "null")) {
		v = 0;
	} else if (!strncmp(s, "read:", 5) || (w = !strncmp(s, "write:", 6))) {
		const char *n = s + (w ? 6 : 5);
		errno = 0;
		v = strtoul(n, &end, 10);
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (errno || end == n || *end || !v || v > PR_MAXSZ)
			return -1;
	} else {
		return -1;
	}
	op.write = w;
	op.size = v;
	snprintf(op.spec, sizeof(op.spec), "%s", s);
	return 0;
}

static int calls(struct pr_nullsess *s, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (op.size ? s->xfer(s, op.write, op.size) < 0
			    : s->call(s) < 0) {
			fprintf(stderr, "rpcrdma-perf: a %s call failed\n",
				op.spec);
			return -1;
		}
	return 0;
}

static int contender_index(const char *name)
{
	for (int k = 0; k < K_N; k++)
		if (!strcmp(name, kname[k]))
			return k;
	return -1;
}

/* cost-run CONTENDER CALLS [--warmup N] [--addr IP] [--provider P]
 *          [--device D] */
int perf_cmd_cost_run(int argc, char **argv)
{
	static const struct option lo[] = {
		{"warmup", required_argument, NULL, 'w'},
		{"addr", required_argument, NULL, 'a'},
		{"provider", required_argument, NULL, 'P'},
		{"device", required_argument, NULL, 'D'},
		{"op", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	struct rpcrdma_opts ro;
	rpcrdma_opts_default(&ro);
	unsigned long warmup = 100, n;
	const char *ip = "127.0.0.1";
	optind = 1;
	for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
		char *end;
		switch (ch) {
		case 'w':
			warmup = strtoul(optarg, &end, 10);
			if (*end || end == optarg)
				return 2;
			break;
		case 'a':
			ip = optarg;
			break;
		case 'P':
			ro.provider = optarg;
			break;
		case 'D':
			ro.device = optarg;
			break;
		case 'o':
			if (parse_op(optarg) < 0)
				return 2;
			break;
		default:
			return 2;
		}
	}
	char *end = NULL;
	int k = optind + 2 == argc ? contender_index(argv[optind]) : -1;
	if (k >= 0)
		n = strtoul(argv[optind + 1], &end, 10);
	if (k < 0 || !end || *end) {
		fprintf(stderr, "usage: rpcrdma-perf cost-run rpcrdma|rdma-tirpc|"
				"libtirpc CALLS [--warmup N] [--addr IP] "
				"[--provider P] [--device D]\n");
		return 2;
	}
	struct sockaddr_storage ss;
	socklen_t len;
	if (pr_parse_addr(ip, 0, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf: bad address '%s'\n", ip);
		return 2;
	}
	struct pr_nullsess *s;
	if (open_session(k, &ss, len, &ro, &s) < 0)
		return 1;
	int rc = calls(s, warmup) < 0 || calls(s, n) < 0;
	s->close(s);
	return rc;
}

/* In this process: getrusage and the clock around N calls. */
static void measure_inproc(const struct copts *o, int k,
			   const struct sockaddr_storage *ip, socklen_t len,
			   struct cost *c)
{
	struct pr_nullsess *s;
	if (open_session(k, ip, len, &o->ro, &s) < 0) {
		snprintf(c->note, sizeof(c->note), "%s: cannot start",
			 kname[k]);
		return;
	}
	struct rusage r0, r1;
	uint64_t t0 = 0, t1 = 0;
	int rc = calls(s, o->warmup);
	if (rc == 0) {
		getrusage(RUSAGE_SELF, &r0);
		t0 = perf_now_ns();
		rc = calls(s, o->iters);
		t1 = perf_now_ns();
		getrusage(RUSAGE_SELF, &r1);
	}
	s->close(s);
	if (rc < 0) {
		snprintf(c->note, sizeof(c->note), "%s: a call failed",
			 kname[k]);
		return;
	}
	double n = (double)o->iters;
	c->csw_vol = (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n;
	c->csw_invol = (double)(r1.ru_nivcsw - r0.ru_nivcsw) / n;
	c->cpu_us = (double)(perf_cpu_ns(&r1) - perf_cpu_ns(&r0)) / 1000.0 / n;
	c->wall_us = (double)(t1 - t0) / 1000.0 / n;
	c->ran = true;
}

/* ------------------------------------------------------------------ */
/* Running ourselves under valgrind / perf                              */

static bool on_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	char dir[4096];
	while (*path) {
		size_t n = strcspn(path, ":");
		if (n && n < sizeof(dir) - strlen(prog) - 2) {
			memcpy(dir, path, n);
			snprintf(dir + n, sizeof(dir) - n, "/%s", prog);
			if (access(dir, X_OK) == 0)
				return true;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

/* A file for a tool's output; its name in buf.  fd or -1. */
static int temp_file(char *buf, size_t cap)
{
	const char *dir = getenv("TMPDIR");
	snprintf(buf, cap, "%s/rpcrdma-perf-XXXXXX", dir && *dir ? dir : "/tmp");
	return mkstemp(buf);
}

/* The first line of file f that starts with `key` ("" if none). */
static void first_line(const char *f, char *out, size_t cap)
{
	out[0] = 0;
	FILE *fp = fopen(f, "r");
	if (!fp)
		return;
	char line[512];
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] && strncmp(line, "==", 2)) {
			size_t n = strlen(line) < cap ? strlen(line) : cap - 1;
			memcpy(out, line, n);
			out[n] = 0;
			break;
		}
	}
	fclose(fp);
}

/* Runs tool... SELF cost-run CONTENDER CALLS ... with stdout to /dev/null
 * and stderr to a file (shown in *why on failure).  0 or -1. */
static int run_child(const char *const *tool, const struct copts *o, int k,
		     unsigned long n, char *why, size_t cap)
{
	static char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0) {
		snprintf(why, cap, "cannot find this program (/proc/self/exe)");
		return -1;
	}
	self[sl] = 0;
	char ncalls[24], nwarm[24], errf[4096];
	snprintf(ncalls, sizeof(ncalls), "%lu", n);
	snprintf(nwarm, sizeof(nwarm), "%lu", o->warmup);
	const char *argv[40];
	int a = 0;
	for (int i = 0; tool[i]; i++)
		argv[a++] = tool[i];
	argv[a++] = self;
	argv[a++] = "cost-run";
	argv[a++] = kname[k];
	argv[a++] = ncalls;
	argv[a++] = "--warmup";
	argv[a++] = nwarm;
	argv[a++] = "--addr";
	argv[a++] = o->ip;
	if (o->ro.provider) {
		argv[a++] = "--provider";
		argv[a++] = o->ro.provider;
	}
	if (o->ro.device) {
		argv[a++] = "--device";
		argv[a++] = o->ro.device;
	}
	argv[a++] = "--op";
	argv[a++] = op.spec;
	argv[a] = NULL;

	int efd = temp_file(errf, sizeof(errf));
	if (efd < 0) {
		snprintf(why, cap, "cannot make a temporary file: %s",
			 strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		if (dn >= 0)
			dup2(dn, 1);
		dup2(efd, 2);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(efd);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		snprintf(why, cap, "fork: %s", strerror(errno));
		unlink(errf);
		return -1;
	}
	int rc = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char line[256];
		first_line(errf, line, sizeof(line));
		/* The tool's first line of complaint, cut to fit the
		 * one-line reason (gcc -Os warns on a possibly cut %s). */
		snprintf(why, cap, "%s %s failed (%s %d)%s%.100s", tool[0],
			 kname[k],
			 WIFEXITED(st) ? "exit" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
			 line[0] ? ": " : "", line);
		rc = -1;
	}
	unlink(errf);
	return rc;
}

enum tool { T_CALLGRIND, T_PERF };

/* The count in a tool's output file f: callgrind's "totals:" (or
 * "summary:") line, Ir over every thread; perf stat -x,'s
 * "<count>,<unit>,context-switches,..." line.  NAN if none. */
static double tool_total(enum tool t, const char *f)
{
	FILE *fp = fopen(f, "r");
	if (!fp)
		return NAN;
	char line[512];
	double v = NAN;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long x;
		char *end;
		if (t == T_CALLGRIND) {
			if (sscanf(line, "totals: %llu", &x) == 1 ||
			    (isnan(v) && sscanf(line, "summary: %llu", &x) == 1))
				v = (double)x;
		} else if (strstr(line, "context-switches")) {
			errno = 0;
			x = strtoull(line, &end, 10);
			if (!errno && end != line && *end == ',')
				v = (double)x;
		}
	}
	fclose(fp);
	return v;
}


/* One count of a tool over warm-up + n calls of contender k. */
static double tool_count(enum tool t, const struct copts *o, int k,
			 unsigned long n, char *why, size_t cap)
{
	char out[4096], opt[4200];
	int fd = temp_file(out, sizeof(out));
	if (fd < 0) {
		snprintf(why, cap, "cannot make a temporary file: %s",
			 strerror(errno));
		return NAN;
	}
	close(fd);
	const char *cg[] = {"valgrind", "--tool=callgrind", opt, NULL};
	const char *pf[] = {"perf", "stat", "-x,", "-e", "context-switches",
			    "-o", out, "--", NULL};
	snprintf(opt, sizeof(opt), "--callgrind-out-file=%s", out);
	double v = NAN;
	if (run_child(t == T_CALLGRIND ? cg : pf, o, k, n, why, cap) == 0) {
		v = tool_total(t, out);
		if (isnan(v))
			snprintf(why, cap, "no count in %s's output",
				 t == T_CALLGRIND ? "callgrind" : "perf");
	}
	unlink(out);
	return v;
}

/* (count(2N) - count(N)) / N, or NAN with why set. */
static double per_call(enum tool t, const struct copts *o, int k,
		       char *why, size_t cap)
{
	double a = tool_count(t, o, k, o->iters, why, cap);
	if (isnan(a))
		return NAN;
	double b = tool_count(t, o, k, 2 * o->iters, why, cap);
	if (isnan(b))
		return NAN;
	/* The difference cancels what a run costs besides its calls when
	 * that is the same in both runs: so it is for callgrind's
	 * instructions, not for perf's context switches of an unpinned
	 * process, whose set-up (connecting, threads starting) can switch
	 * more in one run than N calls do.  Fewer over 2N calls than over N
	 * says that, and is no count per call (it printed as a negative
	 * one). */
	if (b < a) {
		snprintf(why, cap, "%.0f over %lu calls but %.0f over %lu: "
			 "the runs' set-up varied more than the calls cost",
			 b, 2 * o->iters, a, o->iters);
		return NAN;
	}
	return (b - a) / (double)o->iters;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

static void fmt_num(char *buf, size_t cap, double v, const char *fmt)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else if (!strcmp(fmt, "instr") && fabs(v) >= 10000)
		snprintf(buf, cap, "%.1f k", v / 1000);
	else if (!strcmp(fmt, "instr"))
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, fmt, v);
}

/* a / b for the ratio columns (NAN when either is missing). */
static double ratio_of(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : pr_ratio(a, b) > 0 ? a / b : NAN;
}

typedef double (*field_fn)(const struct cost *c);

static double f_instr(const struct cost *c) { return c->instr; }
static double f_csw_perf(const struct cost *c) { return c->csw_perf; }
static double f_csw(const struct cost *c)
{
	return c->ran ? c->csw_vol + c->csw_invol : NAN;
}
static double f_vol(const struct cost *c) { return c->ran ? c->csw_vol : NAN; }
static double f_invol(const struct cost *c)
{
	return c->ran ? c->csw_invol : NAN;
}
static double f_cpu(const struct cost *c) { return c->ran ? c->cpu_us : NAN; }
static double f_wall(const struct cost *c)
{
	return c->ran ? c->wall_us : NAN;
}

/* The verdict of contender k on a goal of measure f. */
static const char *goal(const struct cost *C, int k, field_fn f, bool stretch)
{
	double v = f(&C[k]), base = f(&C[K_TIRPC]);
	if (f == f_instr) {
		if (stretch)
			return pr_verdict(!isnan(v), v <= GOAL_INSTR_STRETCH);
		return pr_verdict(!isnan(v) && !isnan(base),
				  v <= GOAL_INSTR_RATIO * base);
	}
	return pr_verdict(!isnan(v) && !isnan(base), v <= base + CSW_SLACK);
}

/* --goals (hidden by default: the table shows measurements). */
static bool show_goals;

static void row(const struct cost *C, const char *name, field_fn f,
		const char *fmt, const char *target, bool stretch)
{
	char v[K_N][24] = {""}, r[2][16] = {""}, t[128] = "";
	if (stretch && !show_goals)
		return; /* a row for a verdict only */
	if (!show_goals)
		target = NULL;
	/* The stretch goal's row only adds a verdict to the row above. */
	for (int k = 0; k < K_N && !stretch; k++)
		fmt_num(v[k], sizeof(v[k]), f(&C[k]), fmt);
	for (int k = 0; k < 2 && !stretch; k++) {
		double x = ratio_of(f(&C[k]), f(&C[K_TIRPC]));
		fmt_num(r[k], sizeof(r[k]), x, "%.2f");
	}
	if (target)
		snprintf(t, sizeof(t), "%s: %s / %s", target,
			 goal(C, K_RDMA, f, stretch),
			 goal(C, K_RTIRPC, f, stretch));
	printf("%-30s %10s %10s %10s %10s %8s  %s\n", name, v[0], v[1], v[2],
	       r[0], r[1], t);
}

static void print_cpass(const struct copts *o, const struct cpass *p)
{
	const struct cost *C = p->c;
	printf("\n== cost per synchronous %s call, %s (%s) ==\n"
	       "   provider %s, client + server in one process, %lu calls "
	       "after %lu warm-up\n",
	       op.size ? op.spec : "NULL", p->pinned ? "pinned" : "unpinned",
	       p->pinned ? "all threads on one CPU" : "free to use every CPU",
	       o->ro.provider ? o->ro.provider : "iwarp", o->iters, o->warmup);
	printf("%-30s %10s %10s %10s %10s %8s  %s\n", "per call", kname[0],
	       kname[1], kname[2], "rdma/tirpc", "rt/tirpc",
	       show_goals ? "target: rpcrdma / rdma-tirpc" : "");
	row(C, "instructions (callgrind)", f_instr, "instr", "<=1.5x tirpc",
	    false);
	row(C, "  (stretch)", f_instr, "instr", "<=2 k", true);
	row(C, "context switches (perf stat)", f_csw_perf, "%.2f",
	    "<=tirpc", false);
	row(C, "context switches (getrusage)", f_csw, "%.2f", "<=tirpc",
	    false);
	row(C, "  voluntary", f_vol, "%.2f", NULL, false);
	row(C, "  involuntary", f_invol, "%.2f", NULL, false);
	row(C, "CPU us, user+sys (getrusage)", f_cpu, "%.2f", NULL, false);
	row(C, "wall us", f_wall, "%.2f", NULL, false);
	if (o->quiet)
		return; /* --quiet: the table alone */
	printf("callgrind: %s\n", callgrind_why[0] ? callgrind_why
			   : "instructions of every thread, (2N - N) / N runs");
	printf("perf: %s\n", perf_why[0] ? perf_why
			     : "context-switches of every thread, "
			       "(2N - N) / N runs");
	printf("notes: rt = rdma-tirpc (clnt_rdma_create + rpcgen stubs, "
	       "svc_rdma_create + a svc_run() loop).\n"
	       "       Switch counts are read to %.2f per call; time and "
	       "switches vary with the machine's load;\n"
	       "       instruction counts do not, but move by a few %% "
	       "between runs for threaded code\n"
	       "       (polls that find nothing depend on scheduling).\n",
	       CSW_SLACK);
	for (int k = 0; k < K_N; k++)
		if (C[k].note[0])
			printf("note: %s\n", C[k].note);
}

static void json_val(const char *key, double v, bool comma)
{
	if (isnan(v))
		printf("\"%s\": null%s", key, comma ? ", " : "");
	else
		printf("\"%s\": %.4f%s", key, v, comma ? ", " : "");
}

static void json_str(const char *key, const char *s, bool comma)
{
	printf("\"%s\": \"", key);
	for (; *s; s++)
		if (*s != '"' && *s != '\\')
			putchar(*s);
	printf("\"%s", comma ? ", " : "");
}

static void print_cjson(const struct copts *o, const struct cpass *ps, int n)
{
	printf("{\"benchmark\": \"cost\", \"provider\": \"%s\", "
	       "\"iters\": %lu, \"warmup\": %lu, ",
	       o->ro.provider ? o->ro.provider : "iwarp", o->iters, o->warmup);
	json_str("op", op.spec, true);
	json_str("callgrind", callgrind_why[0] ? callgrind_why : "ok", true);
	json_str("perf", perf_why[0] ? perf_why : "ok", true);
	printf("\"passes\": [");
	for (int i = 0; i < n; i++) {
		const struct cost *C = ps[i].c;
		printf("%s{\"pinned\": %s", i ? ", " : "",
		       ps[i].pinned ? "true" : "false");
		for (int k = 0; k < K_N; k++) {
			printf(", \"%s\": {", kname[k]);
			json_val("instructions", f_instr(&C[k]), true);
			json_val("csw_perf", f_csw_perf(&C[k]), true);
			json_val("csw_rusage", f_csw(&C[k]), true);
			json_val("csw_voluntary", f_vol(&C[k]), true);
			json_val("csw_involuntary", f_invol(&C[k]), true);
			json_val("cpu_us", f_cpu(&C[k]), true);
			json_val("wall_us", f_wall(&C[k]), true);
			json_str("note", C[k].note, false);
			printf("}");
		}
		for (int k = 0; k < 2; k++) {
			printf(", \"%s\": {",
			       k ? "ratios_rdma_tirpc" : "ratios");
			json_val("instructions_vs_tirpc",
				 ratio_of(f_instr(&C[k]), f_instr(&C[K_TIRPC])),
				 true);
			json_val("csw_perf_vs_tirpc",
				 ratio_of(f_csw_perf(&C[k]),
					  f_csw_perf(&C[K_TIRPC])),
				 true);
			json_val("csw_rusage_vs_tirpc",
				 ratio_of(f_csw(&C[k]), f_csw(&C[K_TIRPC])),
				 true);
			json_str("goal_instructions",
				 goal(C, k, f_instr, false), true);
			json_str("goal_instructions_stretch",
				 goal(C, k, f_instr, true), true);
			json_str("goal_csw_perf", goal(C, k, f_csw_perf, false),
				 true);
			json_str("goal_csw_rusage", goal(C, k, f_csw, false),
				 false);
			printf("}");
		}
		printf("}");
	}
	printf("]}\n");
}

/* ------------------------------------------------------------------ */
/* The subcommand                                                       */

static void cost_usage(void)
{
	fprintf(stderr,
		"usage: rpcrdma-perf cost [--iters N] [--warmup N] "
		"[--provider iwarp|verbs] [--addr IP]\n"
		"       [--pin[=both|yes|no]] [--cpu N] "
		"[--with rpcrdma,rdma-tirpc,libtirpc]\n"
		"       [--no-callgrind] [--no-perf] [--json] [--quiet]\n"
		"       [--op null|read:SIZE|write:SIZE]  (SIZE in bytes, "
		"or with k/m; default null)\n");
}

static int parse_copts(int argc, char **argv, struct copts *o)
{
	static const struct option lo[] = {
		{"iters", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'w'},
		{"provider", required_argument, NULL, 'P'},
		{"device", required_argument, NULL, 'D'},
		{"addr", required_argument, NULL, 'a'},
		{"pin", optional_argument, NULL, 'p'},
		{"cpu", required_argument, NULL, 'c'},
		{"with", required_argument, NULL, 'W'},
		{"no-callgrind", no_argument, NULL, 'G'},
		{"no-perf", no_argument, NULL, 'F'},
		{"json", no_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"op", required_argument, NULL, 'o'},
		{"goals", no_argument, NULL, 'g'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	rpcrdma_opts_default(&o->ro);
	o->iters = 2000;
	o->warmup = 100;
	o->ip = "127.0.0.1";
	o->pin = 2;
	o->who = (1u << K_N) - 1;
	o->callgrind = o->perf = true;
	optind = 1;
	for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
		char *end;
		unsigned long v;
		switch (ch) {
		case 'i':
		case 'w':
		case 'c':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg ||
			    (ch == 'i' && !v) || (ch == 'c' && v >= CPU_SETSIZE))
				return -1;
			if (ch == 'i')
				o->iters = v;
			else if (ch == 'w')
				o->warmup = v;
			else
				o->cpu = (int)v;
			break;
		case 'P':
			o->ro.provider = optarg;
			break;
		case 'D':
			o->ro.device = optarg;
			break;
		case 'a':
			o->ip = optarg;
			break;
		case 'p':
			if (!optarg || !strcmp(optarg, "yes"))
				o->pin = 1;
			else if (!strcmp(optarg, "both"))
				o->pin = 2;
			else if (!strcmp(optarg, "no"))
				o->pin = 0;
			else
				return -1;
			break;
		case 'W': {
			char buf[128];
			o->who = 0;
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t;
			     t = strtok_r(NULL, ",", &sv)) {
				int k = contender_index(t);
				if (k < 0)
					return -1;
				o->who |= 1u << k;
			}
			break;
		}
		case 'G':
			o->callgrind = false;
			break;
		case 'F':
			o->perf = false;
			break;
		case 'j':
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'o':
			if (parse_op(optarg) < 0)
				return -1;
			break;
		case 'g':
			o->goals = show_goals = true;
			break;
		default:
			return -1;
		}
	}
	return optind == argc && o->who ? 0 : -1;
}

static void progress(const struct copts *o, const char *fmt, const char *a,
		     const char *b)
{
	if (o->quiet)
		return;
	fprintf(stderr, "rpcrdma-perf: cost: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

static void run_cpass(const struct copts *o, const struct sockaddr_storage *ip,
		      socklen_t len, struct cpass *p)
{
	const char *pin = p->pinned ? "pinned" : "unpinned";
	for (int k = 0; k < K_N; k++) {
		struct cost *c = &p->c[k];
		c->instr = c->csw_perf = NAN;
		if (!(o->who & 1u << k))
			continue;
		progress(o, "%s %s: in-process (getrusage)", pin, kname[k]);
		measure_inproc(o, k, ip, len, c);
		if (!c->ran)
			continue;
		char why[160];
		if (!perf_why[0]) {
			progress(o, "%s %s: perf stat", pin, kname[k]);
			c->csw_perf = per_call(T_PERF, o, k, why, sizeof(why));
			if (isnan(c->csw_perf))
				snprintf(c->note, sizeof(c->note),
					 "perf stat: %s", why);
		}
		if (!callgrind_why[0]) {
			progress(o, "%s %s: callgrind", pin, kname[k]);
			c->instr = per_call(T_CALLGRIND, o, k, why, sizeof(why));
			if (isnan(c->instr))
				snprintf(c->note, sizeof(c->note),
					 "callgrind: %s", why);
		}
	}
}

int perf_cmd_cost(int argc, char **argv)
{
	struct copts o;
	if (parse_copts(argc, argv, &o) < 0) {
		cost_usage();
		return 2;
	}
	struct sockaddr_storage ss;
	socklen_t len;
	if (pr_parse_addr(o.ip, 0, &ss, &len) < 0) {
		fprintf(stderr, "rpcrdma-perf: bad address '%s'\n", o.ip);
		return 2;
	}
	if (!o.callgrind)
		snprintf(callgrind_why, sizeof(callgrind_why),
			 "not measured: --no-callgrind");
	else if (BUILT_WITH_ASAN)
		snprintf(callgrind_why, sizeof(callgrind_why),
			 "not measured: built with ASan, which valgrind "
			 "cannot run (use a Release build)");
	else if (!on_path("valgrind"))
		snprintf(callgrind_why, sizeof(callgrind_why),
			 "not measured: valgrind not found");
	if (!o.perf)
		snprintf(perf_why, sizeof(perf_why), "n/a: --no-perf");
	else if (!on_path("perf"))
		snprintf(perf_why, sizeof(perf_why), "n/a: perf not found");

	cpu_set_t orig;
	sched_getaffinity(0, sizeof(orig), &orig);
	struct cpass ps[2];
	memset(ps, 0, sizeof(ps));
	int n = 0, fails = 0;
	for (int pinned = 0; pinned < 2; pinned++) {
		if ((pinned && o.pin == 0) || (!pinned && o.pin == 1))
			continue;
		/* Threads and children made from now on inherit the mask. */
		if (pinned ? perf_pin_process(o.cpu) < 0
			   : sched_setaffinity(0, sizeof(orig), &orig) < 0) {
			perror("rpcrdma-perf: sched_setaffinity");
			return 1;
		}
		ps[n].pinned = pinned;
		run_cpass(&o, &ss, len, &ps[n]);
		for (int k = 0; k < K_N; k++)
			fails += (o.who & 1u << k) && !ps[n].c[k].ran;
		n++;
	}
	sched_setaffinity(0, sizeof(orig), &orig);
	if (o.json) {
		print_cjson(&o, ps, n);
	} else {
		for (int i = 0; i < n; i++)
			print_cpass(&o, &ps[i]);
	}
	fflush(stdout);
	return fails ? 1 : 0;
}
