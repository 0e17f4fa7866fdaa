/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The duplicate-request cache (see nfs3d.h for what it keys on and why it
 * stores results without framing).  A hash table over the key with the
 * entries also on a list in insertion order: when full, the oldest goes.
 * Over RDMA a retransmission only follows a reconnection (RFC 8166
 * §4.5.5), so the calls worth remembering are the last few hundred.
 */
#include <stdlib.h>
#include <string.h>

#include "nfs3d.h"

struct drc_entry {
	struct nfs3d_drc_key key;
	uint8_t *res;
	size_t len;
	struct drc_entry *hnext;           /* hash chain */
	struct drc_entry *older, *newer;   /* age list */
};

struct nfs3d_drc {
	struct drc_entry **bucket;
	unsigned nbucket, n, max;
	struct drc_entry *oldest, *newest;
};

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

struct nfs3d_drc *nfs3d_drc_create(unsigned max_entries)
{
	struct nfs3d_drc *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->max = max_entries;
	d->nbucket = max_entries ? max_entries : 1;
	d->bucket = calloc(d->nbucket, sizeof(*d->bucket));
	if (!d->bucket) {
		free(d);
		return NULL;
	}
	return d;
}

static void unlink_entry(struct nfs3d_drc *d, struct drc_entry *e)
{
	struct drc_entry **pp = &d->bucket[key_hash(d, &e->key)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->older)
		e->older->newer = e->newer;
	else
		d->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		d->newest = e->older;
	d->n--;
	free(e->res);
	free(e);
}

void nfs3d_drc_destroy(struct nfs3d_drc *d)
{
	if (!d)
		return;
	while (d->oldest)
		unlink_entry(d, d->oldest);
	free(d->bucket);
	free(d);
}

const uint8_t *nfs3d_drc_find(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
			      size_t *len)
{
	if (!d || !d->max)
		return NULL;
	for (struct drc_entry *e = d->bucket[key_hash(d, k)]; e; e = e->hnext)
		if (key_eq(&e->key, k)) {
			*len = e->len;
			return e->res;
		}
	return NULL;
}

bool nfs3d_drc_put(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		   const void *res, size_t len)
{
	if (!d || !d->max)
		return false;
	size_t old;
	if (nfs3d_drc_find(d, k, &old))
		return true; /* the same call done again: same results */
	struct drc_entry *e = calloc(1, sizeof(*e));
	uint8_t *copy = malloc(len ? len : 1);
	if (!e || !copy) {
		free(e);
		free(copy);
		return false;
	}
	if (d->n == d->max)
		unlink_entry(d, d->oldest);
	memcpy(copy, res, len);
	e->key = *k;
	e->res = copy;
	e->len = len;
	unsigned b = key_hash(d, k);
	e->hnext = d->bucket[b];
	d->bucket[b] = e;
	e->older = d->newest;
	if (d->newest)
		d->newest->newer = e;
	else
		d->oldest = e;
	d->newest = e;
	d->n++;
	return true;
}

unsigned nfs3d_drc_count(const struct nfs3d_drc *d)
{
	return d ? d->n : 0;
}
