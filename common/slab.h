/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Small records that live as long as a connection (the connection record,
 * a role's state, its reply region, the provider's CQ, MR and MW
 * records) or come in bursts with connections (the provider's CM
 * events), several to a page, each page given back to the system when
 * its last record goes.
 *
 * Why: common/pages.h gives a connection's large blocks back when it
 * closes, but its small records came from malloc.  Allocated between the
 * records of other connections, in the heap of whichever thread accepted
 * it, their space stays resident after every connection closed: glibc
 * trims the top of a thread's heap only past M_TRIM_THRESHOLD, which
 * applications that keep large buffers raise (rpcrdma-perf server does),
 * and malloc_trim never trims it.  After 4900 connections closed a
 * server kept 2.7 MiB more than before they opened.  A page of its own
 * per record would cost 4 KiB per connection instead of about 1.
 *
 * One slab per record type, declared with RPCRDMA_SLAB(type); its pages
 * hold as many records as fit after a small header.  Taking or freeing
 * one takes the slab's lock: this is for records made once per
 * connection, not per call.
 */
#ifndef RPCRDMA_COMMON_SLAB_H
#define RPCRDMA_COMMON_SLAB_H

#include <pthread.h>
#include <stddef.h>

struct slab_page;

struct rpcrdma_slab {
	size_t size;               /* of one record */
	pthread_mutex_t lock;
	struct slab_page *partial; /* pages with a free record */
	struct slab_page *spare;   /* one empty page kept, not unmapped */
	size_t npages;             /* mapped, the spare among them */
	const char *name;          /* the type, for the page census */
};

#define RPCRDMA_SLAB(type) \
	{ sizeof(type), PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, "slab " #type }

/* A zeroed record of s->size bytes, 16-byte aligned; NULL when the system
 * has no memory.  Records larger than half a page get pages of their own
 * (rpcrdma_pages_alloc). */
void *rpcrdma_slab_alloc(struct rpcrdma_slab *s);

/* Gives back what rpcrdma_slab_alloc(s) gave; NULL is nothing. */
void rpcrdma_slab_free(struct rpcrdma_slab *s, void *p);

/* Pages the slab holds now (for tests): those with records, and the
 * spare.  0 under AddressSanitizer, where records come from malloc. */
size_t rpcrdma_slab_pages(struct rpcrdma_slab *s);

#endif
