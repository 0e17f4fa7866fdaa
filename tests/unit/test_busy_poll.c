/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Busy polling's record of whether spinning pays (rpc/busy_poll.c), on a
 * clock the test sets: skips after fruitless spins, and a spin whose
 * length follows how soon the poller is back after it gave up.
 */
#include "rpc/rpc_internal.h"
#include "test.h"

#define US 1000ull
#define BASE 50

/* A spin at time t that finds nothing and ends when its time is up;
 * whether it spun at all. */
static bool miss(struct rpc_spin *sp, uint64_t t)
{
	struct rpc_busy b;
	uint64_t now = t;
	if (!rpcrdma_rpc_busy_start(BASE, sp, &b, &now))
		return false;
	rpcrdma_rpc_busy_end(sp, &b, false, b.end_ns);
	return true;
}

/* The spin's length at time t (0: no spin), ended by work found `after`
 * ns into it. */
static unsigned spin_hit(struct rpc_spin *sp, uint64_t t, uint64_t after)
{
	struct rpc_busy b;
	uint64_t now = t;
	if (!rpcrdma_rpc_busy_start(BASE, sp, &b, &now))
		return 0;
	unsigned len = (unsigned)((b.end_ns - b.start_ns) / US);
	rpcrdma_rpc_busy_end(sp, &b, true, t + after);
	return len;
}

int main(void)
{
	uint64_t probe = 0;
	if (!rpcrdma_rpc_busy_possible(BASE, &probe)) {
		/* One CPU: nobody spins (busy_poll.c); nothing to see. */
		printf("one CPU: skipped\n");
		CHECK(1);
		TEST_MAIN_END();
	}
	uint64_t t = 1000000000ull;

	/* The answer always comes 40 us after a 50 us spin gave up (a slow
	 * peer): each return within 4 spins' time doubles the spin, up to
	 * 4 x, and once it is long enough the spin finds the answer. */
	struct rpc_spin s = { 0 };
	CHECK(miss(&s, t));                   /* 50 us, nothing */
	CHECK_EQ(s.skip, 1);
	t += 50 * US + 40 * US;               /* back 40 us after sleeping */
	CHECK_EQ(spin_hit(&s, t, 90 * US), 100); /* grown, no skip */
	CHECK_EQ(s.grown, 1);
	CHECK_EQ(s.win_us, 100);              /* found late: stays */

	/* Up to the cap, not beyond. */
	struct rpc_spin c = { 0 };
	t += 10000 * US;
	for (int i = 0; i < 6; i++) {
		miss(&c, t);
		t += (uint64_t)c.win_us * US + 10 * US;
	}
	CHECK_EQ(c.win_us, 4 * BASE);
	CHECK_EQ(c.grown, 2);
	/* At the cap, misses skip as before: 1, then 3 sleeps without a
	 * spin. */
	unsigned spun = 0;
	for (int i = 0; i < 8; i++) {
		spun += miss(&c, t);
		t += 10 * US;
	}
	CHECK(spun < 8);
	CHECK_EQ(c.win_us, 4 * BASE);

	/* Found in the first quarter: halves, down to the base. */
	t += 10 * US;
	unsigned len = spin_hit(&c, t, 5 * US);
	CHECK(len == 0 || len == 4 * BASE);
	while (c.skip) /* let the skips run out */
		miss(&c, t += 10 * US);
	t += 100000 * US; /* a long sleep between: back to the base */
	CHECK(miss(&c, t) || c.win_us == BASE);
	CHECK_EQ(c.win_us, BASE);

	/* A quick answer keeps the base: found at once, nothing grows. */
	struct rpc_spin q = { 0 };
	for (int i = 0; i < 20; i++) {
		CHECK_EQ(spin_hit(&q, t, 3 * US), BASE);
		t += 20 * US;
	}
	CHECK_EQ(q.grown, 0);
	CHECK_EQ(q.hits, 20);

	/* Grown, then answers come early: halves back down to the base. */
	struct rpc_spin h = { 0 };
	for (int i = 0; i < 2; i++) {
		miss(&h, t);
		t += (uint64_t)h.win_us * US + 10 * US;
	}
	CHECK_EQ(h.win_us, 2 * BASE); /* the next start doubles it again */
	CHECK_EQ(spin_hit(&h, t, 5 * US), 4 * BASE);
	CHECK_EQ(h.win_us, 2 * BASE);
	t += 20 * US;
	CHECK_EQ(spin_hit(&h, t, 5 * US), 2 * BASE);
	t += 20 * US;
	CHECK_EQ(spin_hit(&h, t, 5 * US), BASE);
	CHECK_EQ(h.win_us, BASE);

	/* An idle poller (back only after long sleeps) never grows: its
	 * spins stop after a few misses, as before. */
	struct rpc_spin idle = { 0 };
	unsigned spins = 0;
	for (int i = 0; i < 200; i++) {
		spins += miss(&idle, t);
		t += 1000000 * US; /* a second */
	}
	CHECK_EQ(idle.grown, 0);
	CHECK_EQ(idle.win_us, BASE);
	CHECK(spins < 20);
	TEST_MAIN_END();
}
