/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The duplicate-request cache (see nfs3d.h for what it keys on and why it
 * stores results without framing).  A hash table over the key, with the
 * entries also on a list from least to most recently used: a store or a
 * hit makes an entry the most recent, and the least recent goes first
 * when the cache is over either of its bounds, entries or bytes.  Bytes
 * are what an entry costs: its results and its bookkeeping.
 *
 * Over RDMA a retransmission only follows a reconnection (RFC 8166
 * §4.5.5), so the calls worth remembering are the last few hundred per
 * client; with thousands of clients the byte bound is what keeps a
 * server's memory in hand.  One lock: the service loop and (with poll
 * groups) several threads may use it; a hit is copied out under it, so
 * no entry is used after its eviction.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nfs3d.h"

struct drc_entry {
	struct nfs3d_drc_key key;
	uint8_t *res;
	size_t len;
	struct drc_entry *hnext;           /* hash chain */
	struct drc_entry *older, *newer;   /* use list */
};

struct nfs3d_drc {
	pthread_mutex_t lock;
	struct drc_entry **bucket;
	unsigned nbucket;
	struct drc_entry *oldest, *newest;
	struct nfs3d_drc_stats st;         /* entries, bytes, bounds too */
};

/* What one entry costs against max_bytes. */
static size_t entry_cost(size_t len)
{
	return sizeof(struct drc_entry) + len;
}

static unsigned key_hash(const struct nfs3d_drc *d, const struct nfs3d_drc_key *k)
{
	uint32_t h = k->xid * 2654435761u;
	h ^= k->args_crc + 0x9e3779b9u + (h << 6) + (h >> 2);
	h ^= k->proc * 40503u;
	for (unsigned i = 0; i < sizeof(k->addr); i++)
		h = h * 31u + k->addr[i];
	return h % d->nbucket;
}

static bool key_eq(const struct nfs3d_drc_key *a, const struct nfs3d_drc_key *b)
{
	return a->xid == b->xid && a->prog == b->prog && a->vers == b->vers &&
	       a->proc == b->proc && a->args_len == b->args_len &&
	       a->args_crc == b->args_crc && a->family == b->family &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

struct nfs3d_drc *nfs3d_drc_create(unsigned max_entries, size_t max_bytes)
{
	struct nfs3d_drc *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->st.max_entries = max_entries;
	d->st.max_bytes = max_bytes;
	d->nbucket = max_entries ? max_entries : 1;
	d->bucket = calloc(d->nbucket, sizeof(*d->bucket));
	if (!d->bucket) {
		free(d);
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

/* Off the use list (not the hash chain). */
static void list_unlink(struct nfs3d_drc *d, struct drc_entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		d->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		d->newest = e->older;
	e->older = e->newer = NULL;
}

/* The most recently used. */
static void list_push(struct nfs3d_drc *d, struct drc_entry *e)
{
	e->older = d->newest;
	e->newer = NULL;
	if (d->newest)
		d->newest->newer = e;
	else
		d->oldest = e;
	d->newest = e;
}

static void remove_entry(struct nfs3d_drc *d, struct drc_entry *e)
{
	struct drc_entry **pp = &d->bucket[key_hash(d, &e->key)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	list_unlink(d, e);
	d->st.entries--;
	d->st.bytes -= entry_cost(e->len);
	free(e->res);
	free(e);
}

void nfs3d_drc_destroy(struct nfs3d_drc *d)
{
	if (!d)
		return;
	while (d->oldest)
		remove_entry(d, d->oldest);
	free(d->bucket);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static struct drc_entry *lookup(struct nfs3d_drc *d, const struct nfs3d_drc_key *k)
{
	for (struct drc_entry *e = d->bucket[key_hash(d, k)]; e; e = e->hnext)
		if (key_eq(&e->key, k))
			return e;
	return NULL;
}

bool nfs3d_drc_get(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		   uint8_t **res, size_t *len)
{
	*res = NULL;
	*len = 0;
	if (!d || !d->st.max_entries)
		return false;
	pthread_mutex_lock(&d->lock);
	struct drc_entry *e = lookup(d, k);
	uint8_t *copy = e ? malloc(e->len ? e->len : 1) : NULL;
	if (e && copy) {
		memcpy(copy, e->res, e->len);
		*res = copy;
		*len = e->len;
		/* Used again: the last to go. */
		list_unlink(d, e);
		list_push(d, e);
		d->st.hits++;
	} else if (e) {
		d->st.nomem++; /* a hit we cannot hand out */
	} else {
		d->st.misses++;
	}
	pthread_mutex_unlock(&d->lock);
	return copy != NULL;
}

bool nfs3d_drc_put(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		   const void *res, size_t len)
{
	if (!d || !d->st.max_entries)
		return false;
	size_t cost = entry_cost(len);
	pthread_mutex_lock(&d->lock);
	bool ok = true;
	struct drc_entry *old = lookup(d, k);
	if (old) {
		/* The same call done again: the same results. */
		list_unlink(d, old);
		list_push(d, old);
		goto out;
	}
	if (cost > d->st.max_bytes) {
		/* Alone over the byte bound: kept out rather than emptying
		 * the cache for it. */
		d->st.too_big++;
		ok = false;
		goto out;
	}
	struct drc_entry *e = calloc(1, sizeof(*e));
	uint8_t *copy = malloc(len ? len : 1);
	if (!e || !copy) {
		free(e);
		free(copy);
		d->st.nomem++;
		ok = false;
		goto out;
	}
	while (d->oldest && d->st.entries >= d->st.max_entries) {
		remove_entry(d, d->oldest);
		d->st.evicted_entries++;
	}
	while (d->oldest && d->st.bytes + cost > d->st.max_bytes) {
		remove_entry(d, d->oldest);
		d->st.evicted_bytes++;
	}
	memcpy(copy, res, len);
	e->key = *k;
	e->res = copy;
	e->len = len;
	unsigned b = key_hash(d, k);
	e->hnext = d->bucket[b];
	d->bucket[b] = e;
	list_push(d, e);
	d->st.entries++;
	d->st.bytes += cost;
	d->st.stored++;
out:
	pthread_mutex_unlock(&d->lock);
	return ok;
}

void nfs3d_drc_stats(struct nfs3d_drc *d, struct nfs3d_drc_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	*out = d->st;
	pthread_mutex_unlock(&d->lock);
}

unsigned nfs3d_drc_count(struct nfs3d_drc *d)
{
	struct nfs3d_drc_stats s;
	nfs3d_drc_stats(d, &s);
	return s.entries;
}
