/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The page census (common/pages.h): which of the blocks allocated by
 * common/pages.c hold the pages a process has resident.
 *
 * RSS says how much an idle connection holds, not where.  A page-fault
 * profile says which code first touched a page, but not which array the
 * page belongs to, nor whether it is still resident.  The census keeps
 * every block (and each part of a parts block) with the function that
 * allocated it, and asks the kernel, page by page, what is resident:
 * /proc/self/pagemap gives per page whether it is present (bit 63) and
 * whether this process alone maps it (bit 56, "page exclusively mapped",
 * proc(5) on /proc/pid/pagemap), which a page written here
 * is and the shared zero page, which a read of an untouched page may
 * map, is not.  Neither bit needs privileges.
 *
 * Records live in one array under one mutex, removed by a scan: a
 * diagnostic for a run with a census asked for, not for every run.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pages.h"

#define PAGE 4096u
#define PM_PRESENT (1ull << 63)
#define PM_EXCLUSIVE (1ull << 56)

struct census_rec {
	uintptr_t block;  /* the block's start: what free is given */
	uintptr_t start;  /* this part's */
	size_t len;
	const char *site; /* the allocating function (a literal) */
	int part;         /* -1: a block of one part */
};

static atomic_bool census_started;
static pthread_mutex_t census_lock = PTHREAD_MUTEX_INITIALIZER;
static struct census_rec *recs;
static size_t nrecs, caprecs;
static bool census_lost; /* a record could not be kept (no memory) */

bool rpcrdma_pages_census_on(void)
{
	return atomic_load_explicit(&census_started, memory_order_relaxed);
}

void rpcrdma_pages_census_start(void)
{
	atomic_store(&census_started, true);
}

void rpcrdma_pages_census_add(const void *block, const void *start,
			      size_t len, const char *site, int part)
{
	pthread_mutex_lock(&census_lock);
	if (nrecs == caprecs) {
		size_t ncap = caprecs ? 2 * caprecs : 1024;
		struct census_rec *n = realloc(recs, ncap * sizeof(*n));
		if (!n) {
			census_lost = true;
			pthread_mutex_unlock(&census_lock);
			return;
		}
		recs = n;
		caprecs = ncap;
	}
	recs[nrecs++] = (struct census_rec){(uintptr_t)block,
					    (uintptr_t)start, len, site,
					    part};
	pthread_mutex_unlock(&census_lock);
}

void rpcrdma_pages_census_del(const void *block)
{
	pthread_mutex_lock(&census_lock);
	for (size_t i = 0; i < nrecs;)
		if (recs[i].block == (uintptr_t)block)
			recs[i] = recs[--nrecs]; /* look at the moved one */
		else
			i++;
	pthread_mutex_unlock(&census_lock);
}

#ifndef RPCRDMA_PAGES_FROM_MALLOC
/* A site and part with its totals. */
struct census_row {
	const char *site;
	int part;
	uint64_t blocks, pages;
};

/* Resident pages of [a, a + len), each page's entry read from fd. */
static int resident(int fd, uintptr_t a, size_t len, uint64_t *pages)
{
	uint64_t e[64];
	uintptr_t first = a / PAGE, end = (a + len + PAGE - 1) / PAGE;
	*pages = 0;
	while (first < end) {
		size_t k = end - first < 64 ? (size_t)(end - first) : 64;
		ssize_t r = pread(fd, e, k * sizeof(e[0]),
				  (off_t)(first * sizeof(e[0])));
		if (r != (ssize_t)(k * sizeof(e[0])))
			return -1;
		for (size_t i = 0; i < k; i++)
			if ((e[i] & PM_PRESENT) && (e[i] & PM_EXCLUSIVE))
				(*pages)++;
		first += k;
	}
	return 0;
}

static int by_pages(const void *a, const void *b)
{
	const struct census_row *x = a, *y = b;
	if (x->pages != y->pages)
		return x->pages < y->pages ? 1 : -1;
	int c = strcmp(x->site, y->site);
	return c ? c : x->part - y->part;
}

#endif

int rpcrdma_pages_census_print(FILE *out)
{
#ifdef RPCRDMA_PAGES_FROM_MALLOC
	fprintf(out, "page census: none in this build (its blocks come from "
		     "malloc)\n");
	return -1;
#else
	if (!rpcrdma_pages_census_on()) {
		fprintf(out, "page census: not started\n");
		return -1;
	}
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(out, "page census: cannot read /proc/self/pagemap\n");
		return -1;
	}
	pthread_mutex_lock(&census_lock);
	struct census_row *rows = calloc(nrecs ? nrecs : 1, sizeof(*rows));
	size_t nrows = 0;
	uint64_t total = 0, blocks = 0;
	int rc = rows ? 0 : -1;
	for (size_t i = 0; i < nrecs && rc == 0; i++) {
		const struct census_rec *r = &recs[i];
		/* A page the previous part of its block ends on is that
		 * part's: count from the first page this one starts. */
		uintptr_t a = r->start;
		if (r->start != r->block && a % PAGE)
			a += PAGE - a % PAGE;
		uint64_t pg = 0;
		if (a < r->start + r->len &&
		    resident(fd, a, r->start + r->len - a, &pg) != 0)
			rc = -1;
		size_t k = 0;
		while (k < nrows && (rows[k].part != r->part ||
				     strcmp(rows[k].site, r->site)))
			k++;
		if (k == nrows)
			rows[nrows++] = (struct census_row){r->site, r->part,
							    0, 0};
		rows[k].blocks++;
		rows[k].pages += pg;
		total += pg;
		if (r->start == r->block) /* its block's first record */
			blocks++;
	}
	bool lost = census_lost;
	pthread_mutex_unlock(&census_lock);
	close(fd);
	if (rc) {
		fprintf(out, "page census: %s\n",
			rows ? "pagemap unreadable" : "no memory");
		free(rows);
		return -1;
	}
	qsort(rows, nrows, sizeof(*rows), by_pages);
	fprintf(out, "page census: %llu pages (%llu KiB) resident in %llu "
		     "blocks of common/pages.c%s\n",
		(unsigned long long)total, (unsigned long long)total * 4,
		(unsigned long long)blocks,
		lost ? " (some blocks not counted: no memory for records)"
		     : "");
	fprintf(out, "  %10s %8s %10s  %s\n", "pages", "blocks", "per block",
		"allocated by [part]");
	size_t empty = 0;
	for (size_t k = 0; k < nrows; k++) {
		if (!rows[k].pages) { /* sorted: the rest hold none either */
			empty = nrows - k;
			break;
		}
		char part[16] = "";
		if (rows[k].part >= 0)
			snprintf(part, sizeof(part), " [%d]", rows[k].part);
		fprintf(out, "  %10llu %8llu %10.2f  %s%s\n",
			(unsigned long long)rows[k].pages,
			(unsigned long long)rows[k].blocks,
			(double)rows[k].pages / (double)rows[k].blocks,
			rows[k].site, part);
	}
	if (empty)
		fprintf(out, "  (and %zu more, with no page resident)\n",
			empty);
	free(rows);
	return 0;
#endif
}
