/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Records several to a page (common/slab.h): each record is zeroed,
 * aligned and its own (what is written to one is not in another), freed
 * records are taken again, and (outside AddressSanitizer, where records
 * come from its malloc) the slab maps about as many pages as its records
 * need and gives every page but one back when they are all freed, in
 * whatever order.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pages.h"
#include "common/slab.h"
#include "test.h"

struct rec832 { uint8_t b[832]; };  /* as large as a connection record */
struct rec24 { uint8_t b[24]; };
struct rec3000 { uint8_t b[3000]; }; /* larger than half a page */

static struct rpcrdma_slab big = RPCRDMA_SLAB(struct rec832);
static struct rpcrdma_slab small = RPCRDMA_SLAB(struct rec24);
static struct rpcrdma_slab huge = RPCRDMA_SLAB(struct rec3000);

#define N 1000

static bool all_byte(const uint8_t *p, size_t n, uint8_t b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

/* Takes N records, writes each its own byte, checks them all, frees them
 * in a shuffled order, and takes N again (zeroed again). */
static void run(struct rpcrdma_slab *s, size_t size)
{
	static uint8_t *r[N];
	static unsigned order[N];
	for (int round = 0; round < 2; round++) {
		for (unsigned i = 0; i < N; i++) {
			r[i] = rpcrdma_slab_alloc(s);
			CHECK(r[i] != NULL);
			if (!r[i])
				return;
			CHECK(((uintptr_t)r[i] & 15) == 0);
			CHECK(all_byte(r[i], size, 0));
			memset(r[i], (int)(i % 251) + 1, size);
		}
		for (unsigned i = 0; i < N; i++)
			CHECK(all_byte(r[i], size, (uint8_t)(i % 251 + 1)));
#ifndef RPCRDMA_PAGES_FROM_MALLOC
		if (size <= 2000) {
			/* Shared pages: at most one more than the records
			 * fill (the spare), and several records to a page. */
			size_t per = (4096 - 64) / ((size + 15) & ~(size_t)15);
			size_t pages = rpcrdma_slab_pages(s);
			CHECK(pages <= (N + per - 1) / per + 1);
			CHECK(pages < N);
		}
#endif
		for (unsigned i = 0; i < N; i++)
			order[i] = i;
		srand(42 + (unsigned)round);
		for (unsigned i = N - 1; i > 0; i--) {
			unsigned j = (unsigned)rand() % (i + 1);
			unsigned t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		/* Free half, take them back (freed records are reused),
		 * then free all. */
		for (unsigned i = 0; i < N / 2; i++)
			rpcrdma_slab_free(s, r[order[i]]);
		for (unsigned i = 0; i < N / 2; i++) {
			r[order[i]] = rpcrdma_slab_alloc(s);
			CHECK(r[order[i]] != NULL);
			CHECK(all_byte(r[order[i]], size, 0));
			memset(r[order[i]], (int)(order[i] % 251) + 1, size);
		}
		for (unsigned i = 0; i < N; i++)
			CHECK(all_byte(r[i], size, (uint8_t)(i % 251 + 1)));
		for (unsigned i = 0; i < N; i++)
			rpcrdma_slab_free(s, r[order[i]]);
#ifndef RPCRDMA_PAGES_FROM_MALLOC
		/* Every page but the spare went back to the system. */
		if (size <= 2000)
			CHECK(rpcrdma_slab_pages(s) <= 1);
#endif
	}
	rpcrdma_slab_free(s, NULL); /* nothing */
}

int main(void)
{
	run(&big, sizeof(struct rec832));
	run(&small, sizeof(struct rec24));
	run(&huge, sizeof(struct rec3000));
	TEST_MAIN_END();
}
