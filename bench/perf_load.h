/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf load: many client processes against one server in another
 * process.  Shared between perf_load.c (the orchestrating parent: options,
 * the server it starts, /proc readings, output) and perf_load_client.c
 * (one client process: its connections and their calls).  Private to
 * bench/.
 *
 * A client process gets its orders (struct ld_group) when it is forked,
 * and talks to the parent over two pipes:
 *   child -> parent  struct ld_report: READY (connections made, first call
 *                    made on each), then DONE (the load's numbers)
 *   parent -> child  one byte: 'g' starts the load, 'c' closes everything
 *                    and exits
 */
#ifndef RPCRDMA_BENCH_PERF_LOAD_H
#define RPCRDMA_BENCH_PERF_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* How calls are made (the contenders). */
enum ld_api {
	LD_NATIVE,      /* rpcrdma's asynchronous API, calls issued from the
			   completion callbacks */
	LD_RTIRPC,      /* rdma-tirpc: clnt_rdma_create + rpcgen stubs, one
			   thread per call in flight */
	LD_TIRPC,       /* libtirpc over TCP (clnt_vc_create), the same */
	LD_NAPI
};
extern const char *const ld_api_name[LD_NAPI];

/* One kind of call of a mix. */
enum ld_op { LD_NULL, LD_WRITE, LD_READ };
struct ld_mix_ent {
	enum ld_op op;
	uint32_t size;          /* WRITE / READ bytes */
	unsigned weight;        /* share, out of the mix's total */
};
#define LD_MAX_MIX 8
struct ld_mix {
	struct ld_mix_ent e[LD_MAX_MIX];
	unsigned n, total;
	char text[96];          /* as given, for output */
};
/* "null:90,4k:9,1m:1": NAME[:WEIGHT] with NAME null, SIZE (a WRITE of
 * SIZE bytes: 4k, 64k, 1m or a number with k/m), wSIZE, rSIZE (a READ).
 * 0 or -1. */
int ld_mix_parse(const char *s, struct ld_mix *m);

/* Latency histogram, log-linear: 32 sub-buckets per power of two (at
 * most 3 % between a sample and its bucket), 1 ns .. 2^41 ns.  Client
 * processes send theirs; the parent adds them up. */
#define LD_SUB 32u
#define LD_NBUCKET (LD_SUB + 37u * LD_SUB)
unsigned ld_bucket(uint64_t ns);
/* The quantile q (0..1) of h in µs (the middle of its bucket); 0 when
 * empty. */
double ld_hist_quantile_us(const uint64_t *h, double q);
uint64_t ld_hist_count(const uint64_t *h);

/* Errors by kind, as (code, count) pairs: rpcrdma's error codes as they
 * are (negative), libtirpc's clnt_stat at LD_ERR_TIRPC + stat, an errno
 * of a connection's own making (libtirpc's connect) at LD_ERR_ERRNO +
 * errno.  Kinds past LD_NERR distinct ones add to the last slot. */
#define LD_ERR_TIRPC 1000
#define LD_ERR_ERRNO 2000
#define LD_NERR 24
struct ld_errs {
	int32_t code[LD_NERR];
	uint64_t n[LD_NERR];
	unsigned used;
};
void ld_err_add(struct ld_errs *e, int code, uint64_t n);
/* Its name: "TIMEOUT (time-out expired)", "RPC_TIMEDOUT", "ECONNREFUSED". */
void ld_err_name(int code, char *buf, size_t cap);

/* What one group of client processes does. */
struct ld_group {
	enum ld_api api;
	unsigned procs;              /* processes */
	unsigned conns;              /* connections per process (the first
					conns_extra processes one more) */
	unsigned conns_extra;
	unsigned depth;              /* calls in flight per connection */
	struct ld_mix mix;
	unsigned reopen;             /* close and open a connection again
					after this many calls; 0: never */
	unsigned connect_threads;    /* per process, for connecting */
	double duration_s;           /* of the load; 0: none */
	double drain_s;              /* how long calls may take to end */
	char target[160];            /* "addr:port" of the server for api */
	const char *provider;        /* NULL: the default */
	const char *label;           /* for output ("small", "greedy") */
};

/* A client process's numbers (one message, fixed size). */
enum ld_msg { LD_READY = 1, LD_DONE = 2 };
struct ld_report {
	uint32_t msg;                /* enum ld_msg */
	uint32_t proc;               /* process index in its group */
	/* Connecting (first connections, and --reopen's). */
	uint64_t conn_ok, conn_failed;
	uint64_t conn_done_ns;       /* when its connections were all made
					(CLOCK_MONOTONIC, perf_now_ns) */
	struct ld_errs conn_err;
	uint64_t conn_hist[LD_NBUCKET];
	/* The first call on each first connection (a NULL). */
	uint64_t first_ok, first_failed;
	struct ld_errs first_err;
	/* The load. */
	uint64_t issued, ok, failed; /* calls started; ended well, badly */
	uint64_t never;              /* started and not ended within drain */
	uint64_t in_window;          /* ended well within the duration */
	uint64_t bytes;              /* WRITE + READ payload in the window */
	uint64_t window_ns;          /* the duration as this process ran it */
	uint64_t cpu_ns;             /* this process's CPU time (user and
					system, every thread's, those that
					ended too) over window_ns */
	struct ld_errs err;
	uint64_t hist[LD_NBUCKET];   /* latency of calls that ended well */
	uint64_t vers_fallbacks;     /* native: v2 openers lost (the
					client counters, summed) */
	uint64_t reconnects;
};

/* The body of a client process (perf_load_client.c): runs the group's
 * process `index`, talking on the two pipe fds; returns the exit status. */
int ld_client_main(const struct ld_group *g, unsigned index, int to_parent,
		   int from_parent);

/* The process's open-file limit raised to its hard limit. */
void ld_raise_nofile(void);

#endif
