/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: benchmarks, one subcommand each.
 *
 *   rpcrdma-perf provider [--provider iwarp|verbs] [--addr IP] [--iters N]
 *                         [--max-size BYTES] [--spin-us N] [--pin] [--json]
 *   rpcrdma-perf rpc | server | client ...   (perf_rpc.c)
 *   rpcrdma-perf cost ...                    (perf_cost.c)
 *
 * Every subcommand measures its baseline in the same run, on the same
 * address, with the same threads and wake-up pattern, and prints ratios.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

uint64_t perf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
	  "[--no-callgrind] [--no-perf] [--json]\n"
	  "      per synchronous NULL call: user-space instructions "
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
	/* What cost runs under valgrind and perf: warm-up + CALLS calls. */
	{ "cost-run", perf_cmd_cost_run, NULL },
	{ NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rpcrdma-perf SUBCOMMAND [options]\n\n");
	for (const struct perf_cmd *c = cmds; c->name; c++)
		if (c->usage)
			fprintf(f, "  %s\n", c->usage);
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (const struct perf_cmd *c = cmds; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "rpcrdma-perf: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
