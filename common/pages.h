/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Memory a connection holds for its life (the engine's buffers and slots,
 * the provider's queues, the server's request records), taken from the
 * system by the page and given back to it when the connection goes.
 *
 * Why not malloc: a server's connections come and go, and what malloc
 * frees stays in the process unless it lies at the top of a heap.  Blocks
 * of a connection allocated between the long-lived blocks of others, in
 * the heaps of whichever thread accepted it, or under an application's
 * raised M_MMAP_THRESHOLD / M_TRIM_THRESHOLD (the usual tuning for large
 * per-call buffers), stay resident after every connection closed.  Pages
 * from mmap go back on munmap, whatever the application's malloc does,
 * and are page-aligned, which registration wants anyway.
 *
 * Not for anything allocated per call: an mmap and an munmap are two
 * system calls and a page fault per page touched.
 */
#ifndef RPCRDMA_COMMON_PAGES_H
#define RPCRDMA_COMMON_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/sanitizers.h"

/* Under AddressSanitizer the blocks come from its malloc instead: it
 * puts red zones around each one (an overrun of one array of a
 * connection into the next is caught) and LeakSanitizer reports a
 * connection's memory never freed; neither sees an mmap.  Its allocator
 * does not hand memory to glibc's heaps, so what this file is for does
 * not arise there. */
#ifdef RPCRDMA_ASAN
#define RPCRDMA_PAGES_FROM_MALLOC 1
#endif

/* Each allocation below is a macro that names its caller (__func__) for
 * the page census at the end of this file; the functions behind them
 * (*_at) take that name as site. */

/* len bytes (rounded up to whole pages), zeroed, page-aligned; NULL if
 * the system has none (or len is 0 or too large). */
void *rpcrdma_pages_alloc_at(size_t len, const char *site);
#define rpcrdma_pages_alloc(len) rpcrdma_pages_alloc_at((len), __func__)

/* Frees what rpcrdma_pages_alloc(len) gave, with the same len; p NULL is
 * nothing. */
void rpcrdma_pages_free(void *p, size_t len);

/* rpcrdma_pages_alloc(n * size), NULL if the product overflows. */
void *rpcrdma_pages_array_at(size_t n, size_t size, const char *site);
#define rpcrdma_pages_array(n, size) \
	rpcrdma_pages_array_at((n), (size), __func__)

/* n arrays of one object in one block of pages: out[i] gets len[i]
 * bytes (zeroed; NULL when len[i] is 0), the first at the start of the
 * block (page-aligned), the others after it at 64-byte boundaries, or at
 * the next 4 KiB one for those whose bit is set in on_page (i < 32): a
 * large array used from its front (slots, queues that start again at the
 * front) then keeps its first entries in one page instead of two.  Not
 * under sanitizers (RPCRDMA_PAGES_FROM_MALLOC: each part is calloc'd).
 * 0, or -1 with every out[i] NULL. */
int rpcrdma_pages_parts_alloc_at(const size_t *len, void **out, unsigned n,
				 uint32_t on_page, const char *site);
#define rpcrdma_pages_parts_alloc(len, out, n, on_page) \
	rpcrdma_pages_parts_alloc_at((len), (out), (n), (on_page), __func__)

/* Frees what rpcrdma_pages_parts_alloc gave: p[i] its out[i], with the
 * same len, n and on_page. */
void rpcrdma_pages_parts_free(void *const *p, const size_t *len, unsigned n,
			      uint32_t on_page);

/*
 * The page census: which blocks hold the pages a process has resident,
 * the profile of an idle connection's memory (docs/SCALE.md, "How it is
 * measured"; rpcrdma-perf server --census).  Once started, every block
 * allocated here is recorded (block, part, the site that allocated it)
 * until it is freed; rpcrdma_pages_census_print looks each one up in
 * /proc/self/pagemap and prints, per site and part, the blocks and the
 * pages resident (present and mapped by this process alone: a written
 * page, not the shared zero page).  A page that two parts of a block
 * share counts for the first.  Off unless started: then each allocation
 * and free pays one atomic load.  Not under AddressSanitizer, whose
 * malloc gives the blocks (RPCRDMA_PAGES_FROM_MALLOC): print says so.
 */
void rpcrdma_pages_census_start(void);

/* The census so far, to out, one line per site and part, most pages
 * first, then the total.  0, or -1 (census not started, pagemap
 * unreadable, no memory) with a line saying why. */
int rpcrdma_pages_census_print(FILE *out);

/* Internal to common/: the census's records, when started. */
void rpcrdma_pages_census_add(const void *block, const void *start,
			      size_t len, const char *site, int part);
void rpcrdma_pages_census_del(const void *block);
bool rpcrdma_pages_census_on(void);

#endif
