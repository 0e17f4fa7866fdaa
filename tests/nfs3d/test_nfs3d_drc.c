/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The duplicate-request cache of rpcrdma-nfs3d (tools/nfs3d/drc.c): a hit
 * needs every part of the key (XID, client address without port,
 * program, version, procedure, argument length and checksum), results
 * are copied in and out, the least recently used entry goes first when
 * either bound (entries, bytes) would be passed, results too large for
 * the byte bound alone are not kept, the counters say all of it, size 0
 * stores nothing.
 */
#include <stdlib.h>

#include "nfs3d.h"
#include "test.h"

struct nfs3d *nfs3d;

static struct nfs3d_drc_key key(uint32_t xid)
{
	struct nfs3d_drc_key k;
	memset(&k, 0, sizeof(k));
	k.xid = xid;
	k.prog = 100003;
	k.vers = 3;
	k.proc = 12;
	k.args_len = 40;
	k.args_crc = 0xdeadbeef;
	k.family = 2;
	k.addr[0] = 192;
	k.addr[3] = 1;
	return k;
}

/* A hit: its length, and its bytes compared with want (NULL: any). */
static bool find(struct nfs3d_drc *d, const struct nfs3d_drc_key *k,
		 size_t *len, const void *want)
{
	uint8_t *r;
	if (!nfs3d_drc_get(d, k, &r, len))
		return false;
	bool same = !want || memcmp(r, want, *len) == 0;
	free(r);
	return same;
}

/* Size in bytes of the cache with n entries of len bytes of results
 * each, from what it says it holds. */
static size_t bytes_of(struct nfs3d_drc *d)
{
	struct nfs3d_drc_stats st;
	nfs3d_drc_stats(d, &st);
	return st.bytes;
}

int main(void)
{
	struct nfs3d_drc *d = nfs3d_drc_create(3, 1u << 20);
	CHECK(d != NULL);
	uint8_t res[12] = "results-abc";
	struct nfs3d_drc_key k = key(7);
	size_t len = 0;
	uint8_t *hit = (uint8_t *)"x";
	CHECK(!nfs3d_drc_get(d, &k, &hit, &len));
	CHECK(hit == NULL);
	CHECK(nfs3d_drc_put(d, &k, res, sizeof(res)));
	res[0] = 'X'; /* the cache kept a copy */
	CHECK(nfs3d_drc_get(d, &k, &hit, &len));
	CHECK(hit != NULL);
	CHECK_EQ(len, sizeof(res));
	if (hit) {
		CHECK_MEM(hit, "results-abc", 12);
		hit[0] = 'Y'; /* ... and hands out copies */
		free(hit);
	}
	CHECK(find(d, &k, &len, "results-abc"));

	/* Every field of the key matters. */
	struct nfs3d_drc_key m;
	m = k; m.xid++;           CHECK(!find(d, &m, &len, NULL));
	m = k; m.prog++;          CHECK(!find(d, &m, &len, NULL));
	m = k; m.vers++;          CHECK(!find(d, &m, &len, NULL));
	m = k; m.proc++;          CHECK(!find(d, &m, &len, NULL));
	m = k; m.args_len++;      CHECK(!find(d, &m, &len, NULL));
	m = k; m.args_crc ^= 1;   CHECK(!find(d, &m, &len, NULL));
	m = k; m.addr[3] = 2;     CHECK(!find(d, &m, &len, NULL));
	m = k; m.family = 10;     CHECK(!find(d, &m, &len, NULL));
	CHECK_EQ(nfs3d_drc_count(d), 1);

	/* The same call stored again stays one entry. */
	CHECK(nfs3d_drc_put(d, &k, res, sizeof(res)));
	CHECK_EQ(nfs3d_drc_count(d), 1);

	/* Full: the least recently used goes.  k was used last before k8
	 * and k9 came, but k8 is used again after: k goes, then k9. */
	struct nfs3d_drc_key k8 = key(8), k9 = key(9), k10 = key(10);
	CHECK(nfs3d_drc_put(d, &k8, "eight", 5));
	CHECK(nfs3d_drc_put(d, &k9, "nine", 4));
	CHECK_EQ(nfs3d_drc_count(d), 3);
	CHECK(find(d, &k8, &len, "eight"));
	CHECK(nfs3d_drc_put(d, &k10, "ten", 3));
	CHECK_EQ(nfs3d_drc_count(d), 3);
	CHECK(!find(d, &k, &len, NULL));
	CHECK(find(d, &k8, &len, "eight") && len == 5);
	CHECK(find(d, &k9, &len, "nine") && len == 4);
	CHECK(find(d, &k10, &len, "ten") && len == 3);
	/* Now k8 is the least recently used. */
	struct nfs3d_drc_key k11 = key(11);
	CHECK(nfs3d_drc_put(d, &k11, "", 0)); /* empty results are results */
	CHECK(find(d, &k11, &len, NULL) && len == 0);
	CHECK(!find(d, &k8, &len, NULL));
	struct nfs3d_drc_stats st;
	nfs3d_drc_stats(d, &st);
	CHECK_EQ(st.evicted_entries, 2);
	CHECK_EQ(st.evicted_bytes, 0);
	CHECK_EQ(st.entries, 3);
	CHECK_EQ(st.stored, 5);
	CHECK_EQ(st.too_big, 0);
	CHECK(st.hits >= 7 && st.misses >= 10);
	nfs3d_drc_destroy(d);

	/* The byte bound: what one entry of 100 bytes costs, measured; a
	 * cache with room for three of them holds three, whatever its
	 * entry bound, and evicts by bytes (least recently used first). */
	struct nfs3d_drc *one = nfs3d_drc_create(8, 1u << 20);
	uint8_t blob[400];
	memset(blob, 0xab, sizeof(blob));
	struct nfs3d_drc_key b0 = key(100);
	CHECK(nfs3d_drc_put(one, &b0, blob, 100));
	size_t cost = bytes_of(one);
	CHECK(cost > 100);
	nfs3d_drc_destroy(one);
	struct nfs3d_drc *by = nfs3d_drc_create(1000, 3 * cost + cost / 2);
	for (uint32_t i = 0; i < 3; i++) {
		struct nfs3d_drc_key ki = key(200 + i);
		CHECK(nfs3d_drc_put(by, &ki, blob, 100));
	}
	CHECK_EQ(nfs3d_drc_count(by), 3);
	CHECK_EQ(bytes_of(by), 3 * cost);
	struct nfs3d_drc_key k200 = key(200), k201 = key(201), k203 = key(203);
	CHECK(find(by, &k200, &len, blob)); /* 201 is now the least recent */
	CHECK(nfs3d_drc_put(by, &k203, blob, 100));
	CHECK_EQ(nfs3d_drc_count(by), 3);
	CHECK(!find(by, &k201, &len, NULL));
	CHECK(find(by, &k200, &len, blob));
	/* Results of 300 bytes need the room of three small ones. */
	struct nfs3d_drc_key k204 = key(204);
	CHECK(nfs3d_drc_put(by, &k204, blob, 300));
	CHECK(bytes_of(by) <= 3 * cost + cost / 2);
	CHECK(find(by, &k204, &len, blob) && len == 300);
	nfs3d_drc_stats(by, &st);
	CHECK(st.evicted_bytes >= 2);
	CHECK_EQ(st.evicted_entries, 0);
	/* Larger than the whole byte bound: refused, and the cache kept. */
	unsigned before = nfs3d_drc_count(by);
	struct nfs3d_drc_key k205 = key(205);
	uint8_t *huge = calloc(1, 4 * cost);
	CHECK(huge != NULL);
	CHECK(!nfs3d_drc_put(by, &k205, huge, 4 * cost));
	free(huge);
	CHECK(!find(by, &k205, &len, NULL));
	CHECK_EQ(nfs3d_drc_count(by), before);
	nfs3d_drc_stats(by, &st);
	CHECK_EQ(st.too_big, 1);
	CHECK(st.bytes <= st.max_bytes);
	nfs3d_drc_destroy(by);

	/* Size 0: a cache that never holds anything. */
	struct nfs3d_drc *z = nfs3d_drc_create(0, 1u << 20);
	CHECK(z != NULL);
	CHECK(!nfs3d_drc_put(z, &k, res, sizeof(res)));
	CHECK(!find(z, &k, &len, NULL));
	CHECK_EQ(nfs3d_drc_count(z), 0);
	nfs3d_drc_destroy(z);

	/* Many entries through a small table: nothing lost or leaked, and
	 * the bounds hold all the way. */
	struct nfs3d_drc *big = nfs3d_drc_create(64, 1u << 20);
	for (uint32_t i = 0; i < 1000; i++) {
		struct nfs3d_drc_key ki = key(i);
		CHECK(nfs3d_drc_put(big, &ki, &i, sizeof(i)));
	}
	unsigned found = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		struct nfs3d_drc_key ki = key(i);
		if (find(big, &ki, &len, &i) && len == sizeof(i))
			found++;
	}
	CHECK_EQ(found, 64); /* exactly the last 64 */
	struct nfs3d_drc_key last = key(999);
	CHECK(find(big, &last, &len, NULL));
	nfs3d_drc_stats(big, &st);
	CHECK_EQ(st.evicted_entries, 1000 - 64);
	CHECK_EQ(st.entries, 64);
	nfs3d_drc_destroy(big);
	TEST_MAIN_END();
}
