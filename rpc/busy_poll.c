/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Busy polling: a thread about to sleep until a completion first polls
 * for a while (opts.busy_poll_us).
 *
 * A sleeping thread costs a wake-up when its completion comes, and a
 * wake-up on another CPU costs tens of microseconds on small VMs (more
 * than a whole NULL call: ../shared/specs/README.md), so a round trip
 * between two threads on two CPUs costs two of them.  When the answer
 * comes within the busy-poll time, no thread sleeps.  The price is CPU:
 * at most busy_poll_us per time a thread runs out of work, which RDMA
 * stacks and Linux's own busy polling (net.core.busy_read, 50 µs
 * recommended) pay for the same reason.
 *
 * Only a thread that may run on more than one CPU polls: on a single CPU
 * the peer it waits for needs that CPU, and polling only delays it.
 * Between two polls the thread yields, so a peer that shares its CPU
 * runs anyway.  The CPU mask is looked at again every 100 ms (programs
 * change it: rpcrdma-perf does between its passes).
 */
#include <sched.h>

#include "rpc/rpc_internal.h"

/* May this thread poll: more than one CPU in its mask.  Cached per
 * thread, refreshed every 100 ms. */
static bool several_cpus(uint64_t now)
{
	static _Thread_local uint64_t checked;
	static _Thread_local bool several;
	if (!checked || now - checked > 100000000u) {
		cpu_set_t set;
		several = sched_getaffinity(0, sizeof(set), &set) == 0 &&
			  CPU_COUNT(&set) > 1;
		checked = now;
	}
	return several;
}

bool rpcrdma_rpc_busy_start(int us, struct rpc_busy *b)
{
	if (us <= 0)
		return false;
	uint64_t now = rpcrdma_rpc_now_ns();
	if (!several_cpus(now))
		return false;
	b->end_ns = now + (uint64_t)us * 1000u;
	return true;
}

bool rpcrdma_rpc_busy_more(struct rpc_busy *b)
{
	sched_yield();
	return rpcrdma_rpc_now_ns() < b->end_ns;
}
