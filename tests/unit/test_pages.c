/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Per-connection memory by the page (common/pages.h): blocks are zeroed
 * and as long as asked, the parts of one block are disjoint and keep
 * what is written to each, and (outside AddressSanitizer, where the
 * blocks come from its malloc) a freed block is no longer mapped: its
 * memory went back to the system.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/pages.h"
#include "test.h"

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool all_byte(const uint8_t *p, size_t n, uint8_t b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

#ifndef RPCRDMA_PAGES_FROM_MALLOC
/* Whether [p, p + n) is mapped: mincore fails with ENOMEM where not. */
static bool mapped(void *p, size_t n)
{
	long ps = sysconf(_SC_PAGESIZE);
	unsigned char vec[64];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	size_t len = (uintptr_t)p + n - a;
	if (len / (size_t)ps + 1 > sizeof vec)
		len = sizeof vec * (size_t)ps - (size_t)ps;
	return mincore((void *)a, len, vec) == 0 || errno != ENOMEM;
}
#endif

static void test_block(void)
{
	CHECK(rpcrdma_pages_alloc(0) == NULL);
	CHECK(rpcrdma_pages_alloc(SIZE_MAX) == NULL);
	CHECK(rpcrdma_pages_array(SIZE_MAX / 2, 4) == NULL);

	size_t n = 10000;
	uint8_t *p = rpcrdma_pages_alloc(n);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK(all_zero(p, n));
	memset(p, 0xa5, n);
	CHECK(all_byte(p, n, 0xa5));
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	CHECK((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE) == 0);
	CHECK(mapped(p, n));
#endif
	rpcrdma_pages_free(p, n);
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	CHECK(!mapped(p, n));
#endif
	rpcrdma_pages_free(NULL, 123); /* nothing */

	uint32_t *a = rpcrdma_pages_array(1000, sizeof *a);
	CHECK(a != NULL);
	if (a) {
		CHECK(all_zero((const uint8_t *)a, 1000 * sizeof *a));
		a[999] = 7;
		CHECK_EQ(a[999], 7);
		rpcrdma_pages_free(a, 1000 * sizeof *a);
	}
}

static void test_parts(void)
{
	enum { N = 6 };
	const size_t len[N] = {5000, 0, 100, 3, 64, 70000};
	void *out[N];
	CHECK_EQ(rpcrdma_pages_parts_alloc(len, out, N, 0), 0);
	CHECK(out[1] == NULL);
	for (unsigned i = 0; i < N; i++) {
		if (!len[i])
			continue;
		CHECK(out[i] != NULL);
		if (!out[i])
			return;
		CHECK(all_zero(out[i], len[i]));
#ifndef RPCRDMA_PAGES_FROM_MALLOC
		CHECK((uintptr_t)out[i] % 64 == 0);
#endif
	}
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	CHECK((uintptr_t)out[0] % (uintptr_t)sysconf(_SC_PAGESIZE) == 0);
#endif
	/* Disjoint: each part keeps its own bytes after all were written,
	 * and no two ranges overlap. */
	for (unsigned i = 0; i < N; i++)
		if (len[i])
			memset(out[i], 0x10 + (int)i, len[i]);
	for (unsigned i = 0; i < N; i++) {
		if (!len[i])
			continue;
		CHECK(all_byte(out[i], len[i], (uint8_t)(0x10 + i)));
		for (unsigned j = 0; j < N; j++)
			if (j != i && len[j])
				CHECK((uintptr_t)out[i] + len[i] <=
					      (uintptr_t)out[j] ||
				      (uintptr_t)out[j] + len[j] <=
					      (uintptr_t)out[i]);
	}
	rpcrdma_pages_parts_free(out, len, N, 0);
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	for (unsigned i = 0; i < N; i++)
		if (len[i])
			CHECK(!mapped(out[i], len[i]));
#endif

	/* Nothing to allocate: success, every part NULL. */
	const size_t none[2] = {0, 0};
	void *o2[2] = {&o2, &o2};
	CHECK_EQ(rpcrdma_pages_parts_alloc(none, o2, 2, 0), 0);
	CHECK(o2[0] == NULL && o2[1] == NULL);
	rpcrdma_pages_parts_free(o2, none, 2, 0);

	/* Too large: refused, every part NULL. */
	const size_t huge[2] = {16, SIZE_MAX / 2};
	void *o3[2] = {&o3, &o3};
	CHECK(rpcrdma_pages_parts_alloc(huge, o3, 2, 0) != 0);
	CHECK(o3[0] == NULL && o3[1] == NULL);
}

/* Parts asked to start on a page do, the others pack after them at
 * 64-byte boundaries; none overlap, and the block goes back whole. */
static void test_parts_on_page(void)
{
	enum { N = 5 };
	const size_t len[N] = {5000, 100, 9000, 3, 200};
	const uint32_t on_page = 1u << 2 | 1u << 4;
	void *out[N];
	CHECK_EQ(rpcrdma_pages_parts_alloc(len, out, N, on_page), 0);
	for (unsigned i = 0; i < N; i++) {
		CHECK(out[i] != NULL);
		if (!out[i])
			return;
		CHECK(all_zero(out[i], len[i]));
		memset(out[i], 0x20 + (int)i, len[i]);
	}
	for (unsigned i = 0; i < N; i++)
		CHECK(all_byte(out[i], len[i], (uint8_t)(0x20 + i)));
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	uintptr_t base = (uintptr_t)out[0];
	CHECK(base % 4096 == 0);
	/* 1 packs after 0; 2 starts on the next page, 3 right after it,
	 * 4 on a page again: 4096-aligned offsets, not 64-aligned ones. */
	CHECK_EQ((uintptr_t)out[1] - base, (uintptr_t)5056);
	CHECK_EQ((uintptr_t)out[2] - base, (uintptr_t)8192);
	CHECK_EQ((uintptr_t)out[3] - base, (uintptr_t)(8192 + 9024));
	CHECK_EQ((uintptr_t)out[4] - base, (uintptr_t)20480);
#endif
	rpcrdma_pages_parts_free(out, len, N, on_page);
#ifndef RPCRDMA_PAGES_FROM_MALLOC
	for (unsigned i = 0; i < N; i++)
		CHECK(!mapped(out[i], len[i]));
#endif
}

#ifndef RPCRDMA_PAGES_FROM_MALLOC
/* The pages-resident and blocks columns of the census line of site
 * (with " [part]" when part >= 0) in the census printed now; false if
 * the census has no such line. */
static bool census_row(const char *site, int part, unsigned long long *pages,
		       unsigned long long *blocks)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return false;
	int rc = rpcrdma_pages_census_print(f);
	fclose(f);
	char want[96];
	if (part >= 0)
		snprintf(want, sizeof want, "%s [%d]", site, part);
	else
		snprintf(want, sizeof want, "%s", site);
	bool found = false;
	for (char *line = strtok(buf, "\n"); rc == 0 && line && !found;
	     line = strtok(NULL, "\n")) {
		unsigned long long p, b;
		double per;
		char name[96];
		if (sscanf(line, "%llu %llu %lf %95[^\n]", &p, &b, &per,
			   name) == 4 &&
		    !strcmp(name, want)) {
			*pages = p;
			*blocks = b;
			found = true;
		}
	}
	free(buf);
	return found;
}
#endif

/* The page census counts, per allocating function and part, the pages
 * written, each page once (a page two parts share is the first's), and
 * forgets a block once freed. */
static void test_census(void)
{
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	rpcrdma_pages_census_start();
	FILE *f = fopen("/dev/null", "w");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(rpcrdma_pages_census_print(f), -1); /* says none */
		fclose(f);
	}
#else
	unsigned long long pages = 0, blocks = 0;
	FILE *f = fopen("/dev/null", "w");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(rpcrdma_pages_census_print(f), -1); /* not started */
		fclose(f);
	}
	rpcrdma_pages_census_start();
	/* Part 0 at 0 (100 bytes), part 1 at 128 to 12416, part 2 on the
	 * page at 16384, two pages long. */
	const size_t len[3] = {100, 3 * 4096, 8192};
	void *out[3];
	CHECK_EQ(rpcrdma_pages_parts_alloc(len, out, 3, 1u << 2), 0);
	uint8_t *a = rpcrdma_pages_alloc(5 * 4096);
	CHECK(a != NULL);
	if (!a || !out[0])
		return;
	/* Nothing written yet: no line (those with no page resident are
	 * only counted). */
	CHECK(!census_row("test_census", 0, &pages, &blocks));
	CHECK(!census_row("test_census", -1, &pages, &blocks));
	((uint8_t *)out[0])[0] = 1;      /* page 0 */
	((uint8_t *)out[1])[0] = 1;      /* page 0 too: part 0's */
	((uint8_t *)out[1])[5000] = 1;   /* page 1 */
	((uint8_t *)out[1])[12287] = 1;  /* page 3 */
	((uint8_t *)out[2])[8191] = 1;   /* page 5 */
	a[0] = a[4 * 4096] = a[4 * 4096 + 1] = 1; /* pages 0 and 4 */
	CHECK(census_row("test_census", 0, &pages, &blocks));
	CHECK_EQ(pages, 1ull);
	CHECK_EQ(blocks, 1ull);
	CHECK(census_row("test_census", 1, &pages, &blocks));
	CHECK_EQ(pages, 2ull);
	CHECK(census_row("test_census", 2, &pages, &blocks));
	CHECK_EQ(pages, 1ull);
	CHECK(census_row("test_census", -1, &pages, &blocks));
	CHECK_EQ(pages, 2ull);
	CHECK_EQ(blocks, 1ull);
	rpcrdma_pages_parts_free(out, len, 3, 1u << 2);
	CHECK(!census_row("test_census", 1, &pages, &blocks));
	CHECK(census_row("test_census", -1, &pages, &blocks));
	rpcrdma_pages_free(a, 5 * 4096);
	CHECK(!census_row("test_census", -1, &pages, &blocks));
#endif
}

int main(void)
{
	test_block();
	test_parts();
	test_parts_on_page();
	test_census();
	TEST_MAIN_END();
}
