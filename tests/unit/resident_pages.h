/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Whether memory a test expects untouched is resident: the unit tests
 * of pages that must stay as they came (common/pages.h).
 */
#ifndef RPCRDMA_TESTS_RESIDENT_PAGES_H
#define RPCRDMA_TESTS_RESIDENT_PAGES_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/pages.h" /* RPCRDMA_PAGES_FROM_MALLOC */

/* Resident pages of [p, p + n), or -1 where this cannot be told: under
 * AddressSanitizer the pages come from malloc (common/pages.h), which
 * may have touched them. */
static inline long resident_pages(const void *p, size_t n)
{
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	(void)p;
	(void)n;
	return -1;
#else
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	size_t len = (uintptr_t)p + n - a;
	size_t np = (len + (size_t)pg - 1) / (size_t)pg;
	unsigned char *vec = calloc(np, 1);
	if (!vec || mincore((void *)a, len, vec) != 0) {
		free(vec);
		return -1;
	}
	long r = 0;
	for (size_t i = 0; i < np; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
#endif
}

#endif
