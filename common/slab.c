/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Records several to a page: why in common/slab.h. */
#include "common/slab.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/pages.h"

#define SLAB_PAGE 4096u
#define SLAB_ALIGN 16u

/* At the front of each page; the records follow it. */
struct slab_page {
	struct slab_page *next, *prev; /* in the partial list */
	void *free;                    /* freed records, linked through
					  their first bytes */
	unsigned used;                 /* records taken */
	unsigned fresh;                /* records never taken: from here on */
	unsigned cap;
	size_t size;                   /* one record, aligned */
};

#ifdef RPCRDMA_PAGES_FROM_MALLOC
/* Under AddressSanitizer, malloc's red zones and leak reports are worth
 * more than the pages (as in common/pages.h). */
void *rpcrdma_slab_alloc(struct rpcrdma_slab *s)
{
	return calloc(1, s->size ? s->size : 1);
}

void rpcrdma_slab_free(struct rpcrdma_slab *s, void *p)
{
	(void)s;
	free(p);
}

size_t rpcrdma_slab_pages(struct rpcrdma_slab *s)
{
	(void)s;
	return 0;
}
#else
static size_t hdr_len(void)
{
	return (sizeof(struct slab_page) + SLAB_ALIGN - 1) &
	       ~(size_t)(SLAB_ALIGN - 1);
}

static size_t rec_len(const struct rpcrdma_slab *s)
{
	size_t n = s->size < sizeof(void *) ? sizeof(void *) : s->size;
	return (n + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1);
}

/* Whether records of s share pages (else each has pages of its own). */
static bool shared(const struct rpcrdma_slab *s)
{
	return rec_len(s) <= (SLAB_PAGE - hdr_len()) / 2;
}

static void list_del(struct rpcrdma_slab *s, struct slab_page *pg)
{
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		s->partial = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	pg->next = pg->prev = NULL;
}

static void list_add(struct rpcrdma_slab *s, struct slab_page *pg)
{
	pg->prev = NULL;
	pg->next = s->partial;
	if (s->partial)
		s->partial->prev = pg;
	s->partial = pg;
}

static struct slab_page *page_new(struct rpcrdma_slab *s)
{
	struct slab_page *pg = s->spare;
	if (pg) {
		s->spare = NULL;
	} else {
		pg = rpcrdma_pages_alloc_at(SLAB_PAGE, s->name);
		if (!pg)
			return NULL;
		s->npages++;
	}
	memset(pg, 0, sizeof *pg);
	pg->size = rec_len(s);
	pg->cap = (unsigned)((SLAB_PAGE - hdr_len()) / pg->size);
	return pg;
}

void *rpcrdma_slab_alloc(struct rpcrdma_slab *s)
{
	if (!shared(s))
		return rpcrdma_pages_alloc_at(s->size, s->name);
	pthread_mutex_lock(&s->lock);
	struct slab_page *pg = s->partial;
	if (!pg) {
		pg = page_new(s);
		if (!pg) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		list_add(s, pg);
	}
	uint8_t *r;
	if (pg->free) {
		r = pg->free;
		memcpy(&pg->free, r, sizeof pg->free);
	} else {
		r = (uint8_t *)pg + hdr_len() + (size_t)pg->fresh++ * pg->size;
	}
	if (++pg->used == pg->cap)
		list_del(s, pg);
	pthread_mutex_unlock(&s->lock);
	/* Cleared whatever it held: a freed record its link and its last
	 * life, and the records of a page reused as the spare theirs. */
	memset(r, 0, s->size);
	return r;
}

void rpcrdma_slab_free(struct rpcrdma_slab *s, void *p)
{
	if (!p)
		return;
	if (!shared(s)) {
		rpcrdma_pages_free(p, s->size);
		return;
	}
	struct slab_page *pg =
		(struct slab_page *)((uintptr_t)p & ~(uintptr_t)(SLAB_PAGE - 1));
	pthread_mutex_lock(&s->lock);
	bool was_full = pg->used == pg->cap;
	memcpy(p, &pg->free, sizeof pg->free);
	pg->free = p;
	pg->used--;
	if (was_full)
		list_add(s, pg);
	struct slab_page *unmap = NULL;
	if (pg->used == 0) {
		/* Empty: back to the system, but for one page kept so that
		 * a connection that comes and goes does not map and unmap
		 * a page each time. */
		list_del(s, pg);
		if (!s->spare) {
			s->spare = pg;
		} else {
			unmap = pg;
			s->npages--;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (unmap)
		rpcrdma_pages_free(unmap, SLAB_PAGE);
}

size_t rpcrdma_slab_pages(struct rpcrdma_slab *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->npages;
	pthread_mutex_unlock(&s->lock);
	return n;
}
#endif
