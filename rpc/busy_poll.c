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
 * How long a spin lasts adapts too.  busy_poll_us suits a machine where
 * the peer's answer, when it comes soon, comes within it; on a slower
 * one (a TCG guest runs some ten times slower than its host) the answer
 * comes just after the spin gave up, every time, and the record above
 * then stops spinning altogether: both ends of a round trip sleep and
 * wake for each call (the lab, rdma-tirpc NULL on rxe: 185 us with
 * busy_poll_us at 50, 59 us at 200).  So when a poller that went to sleep
 * without finding work is back within 4 spins' time (its answer came soon
 * after it gave up, plus its wake-up), its spin doubles, up to 4 times
 * busy_poll_us; a spin that finds work within its first quarter halves
 * it again, down to busy_poll_us; and one back only after 64 spins' time
 * or more (an idle connection, a client that thinks) starts again at
 * busy_poll_us.  A longer spin is spent only where it found work: the
 * skips above apply to it as to any.
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
#define WIN_GROW_MAX 4u   /* a spin grows to 4 x busy_poll_us at most */
#define WIN_SOON 4u       /* back within 4 spins' time: grow */
#define WIN_IDLE 64u      /* back after 64 spins' time: start again */

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

/* sp went to sleep at slept_at without finding work and is back at t:
 * the length of its spin follows how soon (comment at the top). */
static void adapt(struct rpc_spin *sp, uint64_t t)
{
	uint64_t gap = t > sp->slept_at ? t - sp->slept_at : 0;
	uint64_t win = (uint64_t)sp->win_us * 1000u;
	sp->slept_at = 0;
	if (gap >= WIN_IDLE * win) {
		sp->win_us = sp->base_us;
	} else if (gap < WIN_SOON * win &&
		   sp->win_us < sp->base_us * WIN_GROW_MAX) {
		sp->win_us *= 2;
		if (sp->win_us > sp->base_us * WIN_GROW_MAX)
			sp->win_us = sp->base_us * WIN_GROW_MAX;
		/* The longer spin gets its chance at once. */
		sp->skip = 0;
		sp->misses = 0;
		sp->grown++;
	}
}

bool rpcrdma_rpc_busy_start(int us, struct rpc_spin *sp, struct rpc_busy *b,
			    uint64_t *now)
{
	if (us <= 0)
		return false;
	unsigned win = (unsigned)us;
	if (sp) {
		if (sp->base_us != win) {
			/* First use, or busy_poll_us changed. */
			sp->base_us = sp->win_us = win;
			sp->slept_at = 0;
		}
		if (sp->slept_at)
			adapt(sp, rpc_clock(now));
		if (sp->skip) {
			sp->skip--;
			sp->skipped++;
			sp->slept_at = rpc_clock(now);
			return false;
		}
		win = sp->win_us;
	}
	uint64_t t = rpc_clock(now);
	if (!several_cpus(t))
		return false;
	b->start_ns = t;
	b->end_ns = t + (uint64_t)win * 1000u;
	return true;
}

bool rpcrdma_rpc_busy_more(struct rpc_busy *b, uint64_t *now)
{
	sched_yield();
	*now = rpcrdma_rpc_now_ns();
	return *now < b->end_ns;
}

void rpcrdma_rpc_busy_end(struct rpc_spin *sp, const struct rpc_busy *b,
			  bool found, uint64_t now)
{
	if (!sp)
		return;
	if (found) {
		sp->misses = 0;
		sp->hits++;
		/* Found early: the spin need not be as long. */
		uint64_t quarter = (b->end_ns - b->start_ns) / 4;
		if (sp->win_us > sp->base_us && now - b->start_ns < quarter) {
			sp->win_us /= 2;
			if (sp->win_us < sp->base_us)
				sp->win_us = sp->base_us;
		}
		return;
	}
	sp->slept_at = now;
	/* 1, 3, 7, ... sleeps without a spin after 1, 2, 3 ... misses. */
	sp->skip = (1u << (sp->misses < 6 ? sp->misses + 1 : 6)) - 1;
	if (sp->skip > SKIP_MAX)
		sp->skip = SKIP_MAX;
	if (sp->misses < 255)
		sp->misses++;
	sp->fruitless++;
}
