/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf rpc / server / client / cost: the RPC benchmarks and the
 * baselines they are measured against in the same run (libtirpc over TCP,
 * raw TCP).  Shared between perf_rpc.c (rpcrdma side, orchestration,
 * output), perf_baseline.c (the baselines), the libtirpc-based
 * contenders (perf_tirpc.h) and perf_cost.c, and private to them.
 *
 * The benchmark program (same for rpcrdma and libtirpc):
 *   proc 0 NULL
 *   proc 1 WRITE  args: uint len, opaque data[len]  -> res: uint len
 *   proc 2 READ   args: uint len  -> res: uint len, opaque data[len]
 * Over rpcrdma, WRITE's data is a DDP-eligible argument (it travels in a
 * Read chunk) and READ's data a DDP-eligible result (a Write chunk).
 *
 * Ports: a benchmark server listens for rpcrdma on PORT, libtirpc on
 * PORT+1, raw TCP on PORT+2 and rdma-tirpc (rpcrdma through the libtirpc
 * adapters) on PORT+3 (or ephemeral ports in-process).
 */
#ifndef RPCRDMA_BENCH_PERF_RPC_H
#define RPCRDMA_BENCH_PERF_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PR_PROG 0x2000f00du
#define PR_VERS 1u
#define PR_NULL 0u
#define PR_WRITE 1u
#define PR_READ 2u

#define PR_MAXSZ (1u << 20)         /* largest transfer size */
#define PR_NSIZES 3                 /* 4 KiB, 64 KiB, 1 MiB */
#define PR_NHIST 9                  /* latency histogram buckets */
#define PR_INFLIGHT 32              /* "N in flight" */

extern const size_t pr_sizes[PR_NSIZES];
/* Upper bounds (µs) of the histogram buckets; the last is open. */
extern const double pr_hist_us[PR_NHIST - 1];

/* What one contender (rpcrdma, rdma-tirpc, libtirpc or raw TCP) achieved.  Negative
 * or zero numbers mean "not measured". */
struct pr_result {
	double p50_us, p99_us, mean_us; /* NULL call / 64 B ping-pong */
	uint64_t hist[PR_NHIST];
	double cps1, cpsN;              /* calls/s, 1 and PR_INFLIGHT in flight */
	/* calls/s from PR_INFLIGHT threads with a CLIENT (connection) each,
	 * one call at a time on each: a libtirpc program's shape, for both
	 * libtirpc contenders (libtirpc's cpsN is this already; rdma-tirpc's
	 * cpsN is 32 threads sharing one CLIENT). */
	double cpsT;
	double rd_mibs[PR_NSIZES];      /* READ (server -> client) */
	double wr_mibs[PR_NSIZES];      /* WRITE (client -> server) */
	/* Bytes of DDP-eligible data the library copied in user space per
	 * payload byte (rpcrdma_stats.ddp_copied_tx / _rx of the sending and
	 * the receiving end over the transfers of one size); negative: not
	 * measured (not our library, or the other end's counters are out of
	 * reach). */
	double cp_wr_tx[PR_NSIZES], cp_wr_rx[PR_NSIZES];
	double cp_rd_tx[PR_NSIZES], cp_rd_rx[PR_NSIZES];
	char note[160];                 /* e.g. why something is missing */
};

struct rpcrdma_stats;

/* Workload sizes. */
struct pr_params {
	unsigned long iters;            /* latency samples / calls per rate */
	unsigned long mib;              /* MiB moved per throughput size */
	unsigned depth;                 /* rpcrdma calls in flight for
					   READ/WRITE throughput, at most */
	size_t window;                  /* ... and at most this many bytes
					   (but one call) */
	bool quiet;                     /* no progress lines */
	bool issue_cb;                  /* rpcrdma: start the next async
					   call from the completion callback
					   (else from the calling thread) */
	unsigned workloads;             /* PR_W_* to run (for profiling
					   one of them) */
	unsigned sizes;                 /* bit k: pr_sizes[k] is run */
	/* The server's transport counters, for the copy columns (set when
	 * the server runs in this process); false: not available. */
	bool (*srv_stats)(void *arg, struct rpcrdma_stats *s);
	void *srv_arg;
};

/* Counters of both ends before and after the transfers of one size, and
 * the copies per payload byte they give (pr_result.cp_*). */
struct pr_cp_snap {
	bool have_c, have_s;
	uint64_t c_tx, c_rx, s_tx, s_rx;
};
void pr_cp_take(const struct pr_params *p, bool have_c,
		const struct rpcrdma_stats *cs, struct pr_cp_snap *out);
void pr_cp_result(const struct pr_cp_snap *a, const struct pr_cp_snap *b,
		  bool write, uint64_t payload, double *tx, double *rx);
/* Every cp_* of r: not measured. */
void pr_cp_clear(struct pr_result *r);

#define PR_W_NULL 1u    /* NULL latency */
#define PR_W_RATE 2u    /* calls/s */
#define PR_W_WRITE 4u
#define PR_W_READ 8u
#define PR_W_ALL 15u

/* rpcrdma calls in flight for one size: depth, cut to the window. */
unsigned pr_depth_for(const struct pr_params *p, size_t size);
/* Calls for one throughput size: mib MiB worth, at least 2. */
unsigned long pr_count_for(const struct pr_params *p, size_t size);
double pr_mibs(size_t size, unsigned long count, uint64_t ns);
/* Fills p50/p99/hist from samples (ns); sorts them. */
void pr_latency(struct pr_result *r, uint64_t *samples, size_t n);
/* Progress on stderr: a line per workload, and at most one a second from
 * long loops (pr_tick). */
void pr_progress(const struct pr_params *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pr_tick(const struct pr_params *p, const char *what, unsigned long done,
	     unsigned long total);

/* "host:port" / "[v6]:port" / "host" -> sockaddr (port: def when absent). */
int pr_parse_addr(const char *s, uint16_t def, struct sockaddr_storage *ss,
		  socklen_t *len);
void pr_set_port(struct sockaddr_storage *ss, uint16_t port);
uint16_t pr_get_port(const struct sockaddr_storage *ss);

/* a / b, or 0 when either is not measured (<= 0). */
double pr_ratio(double a, double b);
/* "MET", "MISSED", or "n/a" when !have: goals are printed, never
 * asserted. */
const char *pr_verdict(bool have, bool ok);

/* "a.b.c.d:port" or "[v6]:port", as rpcrdma_clnt_create and
 * clnt_rdma_create take it. */
void pr_addr_string(const struct sockaddr_storage *ss, char *buf, size_t cap);

/* ---- raw TCP (perf_baseline.c) ---- */
struct pr_tcp_server;

/* Listen on addr (port 0: ephemeral); a thread serves until _stop. */
int pr_tcp_server_start(const struct sockaddr_storage *addr, socklen_t len,
			struct pr_tcp_server **out);
uint16_t pr_tcp_server_port(const struct pr_tcp_server *s);
void pr_tcp_server_stop(struct pr_tcp_server *s);

/* Run every workload against the server at addr; 0 or -1 (message
 * printed, r->note set). */
int pr_tcp_client_run(const struct sockaddr_storage *addr, socklen_t len,
		      const struct pr_params *p, struct pr_result *r);

/* ---- the cost subcommand (perf_cost.c) ---- */

/* One contender's server and client in this process, connected, for
 * synchronous NULL calls. */
struct pr_nullsess {
	int (*call)(struct pr_nullsess *s);   /* one NULL call: 0 or -1 */
	void (*close)(struct pr_nullsess *s); /* client, then server */
	/* One synchronous WRITE (write) or READ of size bytes (at most
	 * PR_MAXSZ) with DDP, as `rpc` makes them: 0 or -1. */
	int (*xfer)(struct pr_nullsess *s, bool write, size_t size);
};

/* Native rpcrdma (perf_rpc.c); ip: the address to listen on and connect
 * to (its port is ignored).  0 or -1 (message printed). */
struct rpcrdma_opts;
int pr_rdma_nullsess(const struct sockaddr_storage *ip, socklen_t len,
		     const struct rpcrdma_opts *o, struct pr_nullsess **out);

#endif
