/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Busy polling: a thread about to sleep until a completion first polls
 * for a while (opts.busy_poll_us), when polling has lately paid.
 *
 * A sleeping thread costs a wake-up when its completion comes, and a
 * wake-up on another CPU costs tens of microseconds on small VMs (more
 * than a whole NULL call), so a round trip between two threads on two
 * CPUs costs two of them.  When the answer comes within the busy-poll
 * time, no thread sleeps.  The price is CPU, paid for nothing when the
 * answer comes later (a slow handler, an idle connection, a client that
 * thinks between calls).
 *
 * So each poller (a connection's driver, a loop, svc_run) keeps a record
 * of whether its spins found anything (struct rpc_spin), in the manner of
 * NAPI's busy-poll budget: a spin that found work keeps the next one
 * going; one that found nothing skips the next one, two in a row the next
 * three, and so on up to 63 (a probe every 64 sleeps, so spinning comes
 * back when the peer speeds up).  A thread that serves idle connections
 * thus stops spinning after its first few empty spins, and a slow server
 * costs its clients a spin in 64 calls, not one per call.
 *
 * Only a thread that may run on more than one CPU polls: on a single CPU
 * the peer it waits for needs that CPU, and polling only delays it.
 * Between two polls the thread yields, so a peer that shares its CPU
 * runs anyway.  The CPU mask is looked at again every 100 ms (programs
 * change it: rpcrdma-perf does between its passes).
 */
#include <sched.h>

#include "rpc/rpc_internal.h"

#define SKIP_MAX 63u

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

bool rpcrdma_rpc_busy_possible(int us, uint64_t *now)
{
	return us > 0 && several_cpus(rpc_clock(now));
}

bool rpcrdma_rpc_busy_start(int us, struct rpc_spin *sp, struct rpc_busy *b,
			    uint64_t *now)
{
	if (us <= 0)
		return false;
	if (sp && sp->skip) {
		sp->skip--;
		sp->skipped++;
		return false;
	}
	uint64_t t = rpc_clock(now);
	if (!several_cpus(t))
		return false;
	b->end_ns = t + (uint64_t)us * 1000u;
	return true;
}

bool rpcrdma_rpc_busy_more(struct rpc_busy *b, uint64_t *now)
{
	sched_yield();
	*now = rpcrdma_rpc_now_ns();
	return *now < b->end_ns;
}

void rpcrdma_rpc_busy_end(struct rpc_spin *sp, bool found)
{
	if (!sp)
		return;
	if (found) {
		sp->misses = 0;
		sp->hits++;
		return;
	}
	/* 1, 3, 7, ... sleeps without a spin after 1, 2, 3 ... misses. */
	sp->skip = (1u << (sp->misses < 6 ? sp->misses + 1 : 6)) - 1;
	if (sp->skip > SKIP_MAX)
		sp->skip = SKIP_MAX;
	if (sp->misses < 255)
		sp->misses++;
	sp->fruitless++;
}
