/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf: shared pieces of the benchmark subcommands.
 */
#ifndef RPCRDMA_BENCH_PERF_H
#define RPCRDMA_BENCH_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t perf_now_ns(void);

struct rusage;
/* The user and system CPU time of a getrusage(2) result, in ns. */
uint64_t perf_cpu_ns(const struct rusage *r);

/* Sorts samples (ns) and returns the value at quantile q (0..1). */
double perf_quantile_us(uint64_t *samples, size_t n, double q);

/* Restricts the calling process (and the threads it creates later) to
 * CPU `cpu`.  0 or -1 with errno. */
int perf_pin_process(int cpu);

/* A subcommand: argv[0] is the subcommand's name. */
struct perf_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
};

int perf_cmd_provider(int argc, char **argv);
/* perf_rpc.c: ONC RPC over rpcrdma vs libtirpc and raw TCP. */
int perf_cmd_rpc(int argc, char **argv);
int perf_cmd_server(int argc, char **argv);
int perf_cmd_client(int argc, char **argv);
/* perf_cost.c: instructions and context switches per NULL call; the
 * hidden subcommand it runs itself as under valgrind and perf. */
int perf_cmd_cost(int argc, char **argv);
int perf_cmd_cost_run(int argc, char **argv);
/* perf_soak.c: a server and clients in separate processes through real
 * faults (SIGKILL, SIGSTOP, a faulty TCP proxy). */
int perf_cmd_soak(int argc, char **argv);
/* perf_load.c: many client processes against a server process. */
int perf_cmd_load(int argc, char **argv);

#endif
