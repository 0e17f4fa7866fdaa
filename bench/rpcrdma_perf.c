/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: benchmarks, one subcommand each.
 *
 *   rpcrdma-perf provider [--provider iwarp|verbs] [--addr IP] [--iters N]
 *                         [--max-size BYTES] [--spin-us N] [--pin] [--json]
 *   rpcrdma-perf rpc | server | client ...   (perf_rpc.c)
 *   rpcrdma-perf cost ...                    (perf_cost.c)
 *   rpcrdma-perf load ...                    (perf_load.c)
 *
 * Every subcommand measures its baseline in the same run, on the same
 * address, with the same threads and wake-up pattern, and prints ratios.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "perf.h"

uint64_t perf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t perf_cpu_ns(const struct rusage *r)
{
	return ((uint64_t)r->ru_utime.tv_sec + (uint64_t)r->ru_stime.tv_sec) *
		       1000000000ull +
	       ((uint64_t)r->ru_utime.tv_usec + (uint64_t)r->ru_stime.tv_usec) *
		       1000ull;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

double perf_quantile_us(uint64_t *samples, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(samples, n, sizeof(*samples), cmp_u64);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	if (i >= n)
		i = n - 1;
	return (double)samples[i] / 1000.0;
}

int perf_pin_process(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static const struct perf_cmd cmds[] = {
	{ "provider", perf_cmd_provider,
	  "provider [--provider iwarp|verbs] [--addr IP] [--iters N] "
	  "[--max-size BYTES] [--spin-us N] [--pin] [--json]\n"
	  "      64 B Send/Recv and RDMA Write ping-pong latency and RDMA "
	  "Write/Read throughput\n"
	  "      (4 KiB .. 4 MiB), side by side with raw TCP on the same "
	  "address" },
	{ "rpc", perf_cmd_rpc,
	  "rpc [--addr IP] [--provider iwarp|verbs] [--iters N] [--mib N] "
	  "[--depth N]\n"
	  "      [--pin[=both]] [--cpu N] [--json] [--quiet]\n"
	  "      NULL latency, calls/s (1 and 32 in flight), READ/WRITE "
	  "4 KiB..1 MiB with DDP,\n"
	  "      server and client in one process: rpcrdma and rdma-tirpc "
	  "(the libtirpc\n"
	  "      adapters) against libtirpc/TCP and raw TCP" },
	{ "server", perf_cmd_server,
	  "server --listen HOST:PORT [--provider iwarp|verbs] [--pin] [--cpu N]\n"
	  "      rpcrdma on PORT, libtirpc on PORT+1, raw TCP on PORT+2, "
	  "rdma-tirpc on PORT+3" },
	{ "client", perf_cmd_client,
	  "client HOST:PORT [rpc options]\n"
	  "      the rpc workloads against a `server`" },
	{ "cost", perf_cmd_cost,
	  "cost [--iters N] [--warmup N] [--provider iwarp|verbs] [--addr IP] "
	  "[--pin[=both|yes|no]]\n"
	  "      [--cpu N] [--with rpcrdma,rdma-tirpc,libtirpc] "
	  "[--no-callgrind] [--no-perf] [--json] [--op OP]\n"
	  "      per synchronous NULL (or READ/WRITE) call: user-space instructions "
	  "(callgrind), context switches\n"
	  "      (getrusage, perf stat), CPU time; rpcrdma, rdma-tirpc and "
	  "libtirpc side by side" },
	{ "soak", perf_cmd_soak,
	  "soak [--seconds N] [--clients N] [--depth N] [--max-retries N] "
	  "[--timeout-ms N]\n"
	  "      [--kill-every S] [--stop-every S] [--churn N] [--port N] "
	  "[--seed N] [--keep]\n"
	  "      a server and client processes through SIGKILL + restart, "
	  "SIGSTOP and a faulty\n"
	  "      TCP proxy; every call accounted for (perf_soak.c)" },
	{ "load", perf_cmd_load,
	  "load [--procs P] [--conns C | --connections N] [--depth D] "
	  "[--duration S] [--mix SPEC]\n"
	  "      [--with rpcrdma,rdma-tirpc,libtirpc] [--reopen N] [--idle S] "
	  "[--fairness] [--json] ...\n"
	  "      P client processes x C connections x D calls in flight "
	  "against a server in another\n"
	  "      process: calls/s, p50/p99/p999, errors by kind, calls never "
	  "completed, the server's\n"
	  "      RSS per connection and CPU per call; --fairness: small calls "
	  "beside a greedy client" },
	/* What cost runs under valgrind and perf: warm-up + CALLS calls. */
	{ "cost-run", perf_cmd_cost_run, NULL },
	{ NULL, NULL, NULL },
};

/* SUBCOMMAND --help: one line per option, with its meaning. */
#define RPC_OPTS_HELP \
	"  --provider NAME          iwarp (default) or verbs\n" \
	"  --device NAME            the verbs device (default: the first)\n" \
	"  --iters N                NULL calls per latency measurement " \
	"(default 20000)\n" \
	"  --mib N                  MiB moved per READ/WRITE size (default 256)\n" \
	"  --depth N                rpcrdma READ/WRITE calls in flight " \
	"(default 4)\n" \
	"  --window BYTES           rpcrdma READ/WRITE bytes in flight at most\n" \
	"  --pin[=yes|no|both]      all threads on one CPU; both: a pass each " \
	"way\n" \
	"  --cpu N                  the CPU --pin uses (default 0)\n" \
	"  --only LIST              workloads among null,rate,write,read\n" \
	"  --with LIST              contenders among rpcrdma,rdma-tirpc," \
	"libtirpc,tcp\n" \
	"  --sizes LIST             READ/WRITE sizes among 4k,64k,1m\n" \
	"  --repeat N               runs per pinning, medians reported\n" \
	"  --workers N              server handler threads (default 0: " \
	"inline)\n" \
	"  --issue callback|thread  how rpcrdma keeps calls in flight\n" \
	"  --malloc tuned|default   glibc's large-block thresholds " \
	"(default tuned)\n" \
	"  --goals                  the project's targets, MET / MISSED, " \
	"beside the numbers\n" \
	"  --quiet                  the table alone\n" \
	"  --json                   JSON instead of tables\n"

static const struct {
	const char *name, *help;
} helps[] = {
	{"provider",
	 "  --provider NAME          iwarp (default) or verbs\n"
	 "  --addr IP                the local address both ends use "
	 "(default 127.0.0.1)\n"
	 "  --port P                 the port (default: one the kernel picks)\n"
	 "  --iters N                round trips per latency test "
	 "(default 10000)\n"
	 "  --max-size BYTES         the largest throughput transfer "
	 "(default 4 MiB)\n"
	 "  --spin-us N              poll this long before sleeping for a "
	 "completion\n"
	 "  --pin                    all threads on one CPU\n"
	 "  --json                   JSON instead of tables\n"},
	{"rpc",
	 "  --addr IP                the loopback address both ends use "
	 "(default 127.0.0.1)\n" RPC_OPTS_HELP},
	{"client",
	 "  HOST:PORT                the `rpcrdma-perf server` to measure\n"
	 RPC_OPTS_HELP},
	{"server",
	 "  --listen HOST:PORT       where to serve (required)\n"
	 "  --provider NAME          iwarp (default) or verbs\n"
	 "  --device NAME            the verbs device (default: the first)\n"
	 "  --workers N              handler threads (default 0: inline)\n"
	 "  --pin                    all threads on one CPU\n"
	 "  --cpu N                  the CPU --pin uses (default 0)\n"
	 "  --census FILE            keep a page census (common/pages.h) and "
	 "write it to FILE\n"
	 "                           on each SIGUSR2\n"},
	{"cost",
	 "  --iters N                measured calls, N (default 2000)\n"
	 "  --warmup N               calls before measuring (default 100)\n"
	 "  --provider NAME          iwarp (default) or verbs\n"
	 "  --device NAME            the verbs device (default: the first)\n"
	 "  --addr IP                the loopback address (default 127.0.0.1)\n"
	 "  --pin[=both|yes|no]      all threads on one CPU, or not, or a pass "
	 "each way\n"
	 "  --cpu N                  the CPU --pin uses (default 0)\n"
	 "  --with LIST              contenders among rpcrdma,rdma-tirpc,"
	 "libtirpc\n"
	 "  --no-callgrind           do not count instructions\n"
	 "  --no-perf                do not run perf stat\n"
	 "  --op null|read:SIZE|write:SIZE  what each call is: NULL "
	 "(default), or a READ / WRITE of SIZE bytes (k, m) with DDP\n"
	 "  --goals                  the project's targets, MET / MISSED\n"
	 "  --quiet                  the table alone\n"
	 "  --json                   JSON instead of tables\n"},
	{"load",
	 "  --procs P                client processes (default 2)\n"
	 "  --conns C                connections per process (default 4)\n"
	 "  --connections N          N connections in all, spread over the "
	 "processes (instead of --conns)\n"
	 "  --depth D                calls in flight per connection "
	 "(default 1)\n"
	 "  --duration S             seconds of load (default 5; 0: connect, "
	 "hold, one call each)\n"
	 "  --mix SPEC               kinds of call and their shares, "
	 "e.g. null:90,4k:9,1m:1 (default null);\n"
	 "                           null, SIZE or wSIZE (a WRITE), rSIZE (a "
	 "READ), SIZE up to 1m\n"
	 "  --with LIST              contenders, in turn, among rpcrdma (native "
	 "async API),\n"
	 "                           rdma-tirpc (rpcgen stubs, D threads per "
	 "connection), libtirpc\n"
	 "                           (TCP, the same way) (default "
	 "rpcrdma,libtirpc)\n"
	 "  --reopen N               close and open each connection again "
	 "after N calls\n"
	 "  --idle S                 hold the connections idle S seconds "
	 "before the load: the\n"
	 "                           server's CPU then (default 1)\n"
	 "  --drain S                how long calls may take to end after the "
	 "duration (default 40)\n"
	 "  --settle S               wait after the close before the server's "
	 "RSS (default 3)\n"
	 "  --connect-threads N      threads opening connections per process "
	 "(default 8)\n"
	 "  --addr IP                where the server this command starts "
	 "listens (default 127.0.0.1)\n"
	 "  --server-workers N       that server's handler threads (default 0: "
	 "inline)\n"
	 "  --server HOST:PORT       an `rpcrdma-perf server` already running "
	 "instead\n"
	 "  --server-pid PID         its process, for its memory and CPU\n"
	 "  --provider NAME          iwarp (default) or verbs\n"
	 "  --fairness               N small callers alone, then beside one "
	 "greedy connection\n"
	 "  --fair-conns N           the small callers (default 8)\n"
	 "  --greedy-depth D         the greedy connection's calls in flight "
	 "(default 32)\n"
	 "  --greedy-mix SPEC        its calls (default w1m)\n"
	 "  --quiet                  no progress lines\n"
	 "  --json                   JSON instead of text\n"
	 "  --census                 the server's page census while the "
	 "connections are held:\n"
	 "                           its resident pages by the function that "
	 "allocated them\n"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rpcrdma-perf SUBCOMMAND [options]\n"
		   "       rpcrdma-perf SUBCOMMAND --help\n"
		   "       rpcrdma-perf --version\n\n");
	for (const struct perf_cmd *c = cmds; c->name; c++)
		if (c->usage)
			fprintf(f, "  %s\n", c->usage);
}

static bool is_opt(const char *a, const char *s, const char *l)
{
	return !strcmp(a, s) || !strcmp(a, l);
}

/* SUBCOMMAND --help or --version, wherever they stand (no option takes
 * "-h" or "--help" as its value): exit 0. */
static bool help_or_version(const struct perf_cmd *c, int argc, char **argv)
{
	for (int i = 2; i < argc && c->usage; i++) {
		if (is_opt(argv[i], "-h", "--help")) {
			printf("usage: rpcrdma-perf %s\n\n", c->usage);
			for (size_t k = 0; k < sizeof helps / sizeof helps[0]; k++)
				if (!strcmp(helps[k].name, c->name))
					fputs(helps[k].help, stdout);
			return true;
		}
		if (is_opt(argv[i], "-V", "--version")) {
			printf("rpcrdma-perf %s\n", RPCRDMA_VERSION_STRING);
			return true;
		}
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 2 || is_opt(argv[1], "-h", "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (is_opt(argv[1], "-V", "--version")) {
		printf("rpcrdma-perf %s\n", RPCRDMA_VERSION_STRING);
		return 0;
	}
	for (const struct perf_cmd *c = cmds; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return help_or_version(c, argc, argv)
				       ? 0
				       : c->run(argc - 1, argv + 1);
	fprintf(stderr, "rpcrdma-perf: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
