/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The duplicate-request cache of rpcrdma-nfs3d (tools/nfs3d/drc.c): a hit
 * needs every part of the key (XID, client address without port,
 * program, version, procedure, argument length and checksum), results
 * are copied, the oldest entry goes first, size 0 stores nothing.
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

int main(void)
{
	struct nfs3d_drc *d = nfs3d_drc_create(3);
	CHECK(d != NULL);
	uint8_t res[12] = "results-abc";
	struct nfs3d_drc_key k = key(7);
	size_t len = 0;
	CHECK(nfs3d_drc_find(d, &k, &len) == NULL);
	CHECK(nfs3d_drc_put(d, &k, res, sizeof(res)));
	res[0] = 'X'; /* the cache kept a copy */
	const uint8_t *hit = nfs3d_drc_find(d, &k, &len);
	CHECK(hit != NULL);
	CHECK_EQ(len, sizeof(res));
	if (hit)
		CHECK_MEM(hit, "results-abc", 12);

	/* Every field of the key matters. */
	struct nfs3d_drc_key m;
	m = k; m.xid++;           CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.prog++;          CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.vers++;          CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.proc++;          CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.args_len++;      CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.args_crc ^= 1;   CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.addr[3] = 2;     CHECK(!nfs3d_drc_find(d, &m, &len));
	m = k; m.family = 10;     CHECK(!nfs3d_drc_find(d, &m, &len));
	CHECK_EQ(nfs3d_drc_count(d), 1);

	/* The same call stored again stays one entry. */
	CHECK(nfs3d_drc_put(d, &k, res, sizeof(res)));
	CHECK_EQ(nfs3d_drc_count(d), 1);

	/* Full: the oldest goes. */
	struct nfs3d_drc_key k8 = key(8), k9 = key(9), k10 = key(10);
	CHECK(nfs3d_drc_put(d, &k8, "eight", 5));
	CHECK(nfs3d_drc_put(d, &k9, "nine", 4));
	CHECK_EQ(nfs3d_drc_count(d), 3);
	CHECK(nfs3d_drc_put(d, &k10, "ten", 3));
	CHECK_EQ(nfs3d_drc_count(d), 3);
	CHECK(!nfs3d_drc_find(d, &k, &len));
	CHECK(nfs3d_drc_find(d, &k8, &len) && len == 5);
	CHECK(nfs3d_drc_find(d, &k10, &len) && len == 3);
	/* Empty results are results too (a void reply). */
	struct nfs3d_drc_key k11 = key(11);
	CHECK(nfs3d_drc_put(d, &k11, "", 0));
	CHECK(nfs3d_drc_find(d, &k11, &len) != NULL && len == 0);
	nfs3d_drc_destroy(d);

	/* Size 0: a cache that never holds anything. */
	struct nfs3d_drc *z = nfs3d_drc_create(0);
	CHECK(z != NULL);
	CHECK(!nfs3d_drc_put(z, &k, res, sizeof(res)));
	CHECK(!nfs3d_drc_find(z, &k, &len));
	CHECK_EQ(nfs3d_drc_count(z), 0);
	nfs3d_drc_destroy(z);

	/* Many entries through a small table: nothing lost or leaked. */
	struct nfs3d_drc *big = nfs3d_drc_create(64);
	for (uint32_t i = 0; i < 1000; i++) {
		struct nfs3d_drc_key ki = key(i);
		CHECK(nfs3d_drc_put(big, &ki, &i, sizeof(i)));
	}
	unsigned found = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		struct nfs3d_drc_key ki = key(i);
		const uint8_t *p = nfs3d_drc_find(big, &ki, &len);
		if (p && len == sizeof(i) && memcmp(p, &i, 4) == 0)
			found++;
	}
	CHECK_EQ(found, 64); /* exactly the last 64 */
	struct nfs3d_drc_key last = key(999);
	CHECK(nfs3d_drc_find(big, &last, &len) != NULL);
	nfs3d_drc_destroy(big);
	TEST_MAIN_END();
}
