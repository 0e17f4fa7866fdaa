/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * USDT probes (statically defined tracepoints, provider "rpcrdma") at the
 * events the Linux kernel's xprtrdma and svcrdma trace: connection up and
 * down, calls marshalled, sent and completed, replies with their credit
 * grant, RDMA_ERROR sent and received, memory registration and
 * invalidation.  Each is a single no-op instruction until a tracer
 * (bpftrace, perf, SystemTap) attaches; rpcrdma(7) lists them with their
 * arguments and tools/rpcrdma-latency.bt uses them.
 *
 * With <sys/sdt.h> (Debian: systemtap-sdt-dev) at build time, CMake
 * defines RPCRDMA_HAVE_SDT; without it the probes compile to nothing.
 */
#ifndef RPCRDMA_COMMON_USDT_H
#define RPCRDMA_COMMON_USDT_H

#ifdef RPCRDMA_HAVE_SDT
#include <sys/sdt.h>
#define RPCRDMA_PROBE1(n, a) DTRACE_PROBE1(rpcrdma, n, a)
#define RPCRDMA_PROBE2(n, a, b) DTRACE_PROBE2(rpcrdma, n, a, b)
#define RPCRDMA_PROBE3(n, a, b, c) DTRACE_PROBE3(rpcrdma, n, a, b, c)
#define RPCRDMA_PROBE4(n, a, b, c, d) DTRACE_PROBE4(rpcrdma, n, a, b, c, d)
#define RPCRDMA_PROBE5(n, a, b, c, d, e) DTRACE_PROBE5(rpcrdma, n, a, b, c, d, e)
#define RPCRDMA_PROBE6(n, a, b, c, d, e, f) \
	DTRACE_PROBE6(rpcrdma, n, a, b, c, d, e, f)
#else
#define RPCRDMA_PROBE1(n, a) ((void)(a))
#define RPCRDMA_PROBE2(n, a, b) ((void)(a), (void)(b))
#define RPCRDMA_PROBE3(n, a, b, c) ((void)(a), (void)(b), (void)(c))
#define RPCRDMA_PROBE4(n, a, b, c, d) \
	((void)(a), (void)(b), (void)(c), (void)(d))
#define RPCRDMA_PROBE5(n, a, b, c, d, e) \
	((void)(a), (void)(b), (void)(c), (void)(d), (void)(e))
#define RPCRDMA_PROBE6(n, a, b, c, d, e, f) \
	((void)(a), (void)(b), (void)(c), (void)(d), (void)(e), (void)(f))
#endif

/* Chunk shapes in probe arguments (RFC 8166 §3.5): calls 0 Short,
 * 1 Chunked (Read chunks), 2 Long; replies 0 Short, 1 Chunked (Write
 * chunks), 2 Long (Reply chunk). */

#endif
