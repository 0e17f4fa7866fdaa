/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Per-connection memory by the page: why in common/pages.h. */
#include "common/pages.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

static void *block_alloc(size_t len)
{
	if (len == 0 || len > SIZE_MAX / 2)
		return NULL;
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	return calloc(1, len);
#else
	/* Anonymous pages are zero until written: nothing to clear, and
	 * nothing resident until used. */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
#endif
}

void *rpcrdma_pages_alloc_at(size_t len, const char *site)
{
	void *p = block_alloc(len);
	if (p && rpcrdma_pages_census_on())
		rpcrdma_pages_census_add(p, p, len, site, -1);
	return p;
}

void rpcrdma_pages_free(void *p, size_t len)
{
	if (!p)
		return;
	if (rpcrdma_pages_census_on())
		rpcrdma_pages_census_del(p);
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	(void)len;
	free(p);
#else
	munmap(p, len);
#endif
}

void *rpcrdma_pages_array_at(size_t n, size_t size, const char *site)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return rpcrdma_pages_alloc_at(n * size, site);
}

#define PART_ALIGN 64 /* a cache line: no two arrays share one */
#define PART_PAGE 4096 /* what on_page asks for: a page (or more) */

/* Where part i starts, given where the previous one ended. */
static size_t part_start(size_t off, unsigned i, uint32_t on_page)
{
	size_t a = i < 32 && (on_page >> i & 1) ? PART_PAGE : PART_ALIGN;
	return (off + a - 1) & ~(a - 1);
}

/* The block's length into *total; false if it overflows. */
static bool parts_total(const size_t *len, unsigned n, uint32_t on_page,
			size_t *total)
{
	*total = 0;
	for (unsigned i = 0; i < n; i++) {
		if (len[i] > SIZE_MAX / 4 || *total > SIZE_MAX / 4)
			return false;
		if (len[i])
			*total = part_start(*total, i, on_page) + len[i];
	}
	*total = (*total + PART_ALIGN - 1) & ~(size_t)(PART_ALIGN - 1);
	return true;
}

int rpcrdma_pages_parts_alloc_at(const size_t *len, void **out, unsigned n,
				 uint32_t on_page, const char *site)
{
	for (unsigned i = 0; i < n; i++)
		out[i] = NULL;
	size_t total;
	if (!parts_total(len, n, on_page, &total))
		return -1;
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	/* One block each, so that each has its red zones. */
	(void)site; /* no census of malloc's blocks */
	for (unsigned i = 0; i < n; i++)
		if (len[i] && !(out[i] = calloc(1, len[i]))) {
			for (unsigned j = 0; j < i; j++) {
				free(out[j]);
				out[j] = NULL;
			}
			return -1;
		}
	return 0;
#else
	if (total == 0)
		return 0;
	uint8_t *base = block_alloc(total);
	if (!base)
		return -1;
	bool census = rpcrdma_pages_census_on();
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!len[i])
			continue;
		off = part_start(off, i, on_page);
		out[i] = base + off;
		off += len[i];
		if (census)
			rpcrdma_pages_census_add(base, out[i], len[i], site,
						 (int)i);
	}
	return 0;
#endif
}

void rpcrdma_pages_parts_free(void *const *p, const size_t *len, unsigned n,
			      uint32_t on_page)
{
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	(void)len;
	(void)on_page;
	for (unsigned i = 0; i < n; i++)
		free(p[i]);
#else
	/* The block starts at the first part that has bytes. */
	for (unsigned i = 0; i < n; i++)
		if (len[i]) {
			size_t total;
			if (parts_total(len, n, on_page, &total))
				rpcrdma_pages_free(p[i], total);
			return;
		}
#endif
}
