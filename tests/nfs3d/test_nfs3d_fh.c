/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-nfs3d's file handles (tools/nfs3d/fh.c): the codec refuses
 * every handle it did not make (NFS3ERR_BADHANDLE, RFC 1813 §2.6), and
 * on a real directory (root only: open_by_handle_at) a handle names the
 * same file after the export is closed and opened again (a server
 * restart), is refused as stale once the file is gone or under another
 * export key, and never crosses into another export.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "nfs3d.h"
#include "test.h"

struct nfs3d *nfs3d;

static void codec(void)
{
	struct nfs3d_fh f = { .key = 0x0123456789abcdefull, .type = -2, .len = 12 };
	for (unsigned i = 0; i < f.len; i++)
		f.bytes[i] = (uint8_t)(i * 17);
	uint8_t b[NFS3_FHSIZE + 8];
	size_t n = nfs3d_fh_format(&f, b);
	CHECK_EQ(n, NFS3D_FH_HDR + 12);
	struct nfs3d_fh g;
	CHECK_EQ(nfs3d_fh_parse(b, n, &g), NFS3_OK);
	CHECK(g.key == f.key && g.type == f.type && g.len == f.len);
	CHECK_MEM(g.bytes, f.bytes, f.len);

	/* The largest kernel handle that fits, then every malformation. */
	f.len = NFS3D_FH_MAX_KERNEL;
	n = nfs3d_fh_format(&f, b);
	CHECK_EQ(n, NFS3_FHSIZE);
	CHECK_EQ(nfs3d_fh_parse(b, n, &g), NFS3_OK);
	CHECK_EQ(nfs3d_fh_parse(b, n + 1, &g), NFS3ERR_BADHANDLE);  /* > 64 */
	CHECK_EQ(nfs3d_fh_parse(b, n - 1, &g), NFS3ERR_BADHANDLE);  /* length */
	CHECK_EQ(nfs3d_fh_parse(b, 0, &g), NFS3ERR_BADHANDLE);
	CHECK_EQ(nfs3d_fh_parse(NULL, 20, &g), NFS3ERR_BADHANDLE);
	CHECK_EQ(nfs3d_fh_parse(b, NFS3D_FH_HDR - 1, &g), NFS3ERR_BADHANDLE);
	f.len = 8;
	n = nfs3d_fh_format(&f, b);
	uint8_t c[NFS3_FHSIZE];
	memcpy(c, b, n); c[0] ^= 1;  CHECK_EQ(nfs3d_fh_parse(c, n, &g), NFS3ERR_BADHANDLE);
	memcpy(c, b, n); c[1] = 2;   CHECK_EQ(nfs3d_fh_parse(c, n, &g), NFS3ERR_BADHANDLE);
	memcpy(c, b, n); c[2] = 0;   CHECK_EQ(nfs3d_fh_parse(c, NFS3D_FH_HDR, &g), NFS3ERR_BADHANDLE);
	memcpy(c, b, n); c[2] = 49;  CHECK_EQ(nfs3d_fh_parse(c, n, &g), NFS3ERR_BADHANDLE);
	memcpy(c, b, n); c[3] = 1;   CHECK_EQ(nfs3d_fh_parse(c, n, &g), NFS3ERR_BADHANDLE);
	memcpy(c, b, n); c[2] = 9;   CHECK_EQ(nfs3d_fh_parse(c, n, &g), NFS3ERR_BADHANDLE);
}

static void live(void)
{
	char dir[] = "/tmp/nfs3d-fh.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	static struct nfs3d d;
	nfs3d = &d;
	d.auth.can_switch = false;
	nfs3d_cred_start(&d.auth); /* not switching: no thread */
	CHECK_EQ(nfs3d_export_open(&d.exp, dir), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	int fd = openat(dfd, "file", O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0);
	close(fd);
	mkdirat(dfd, "sub", 0755);
	nfs_fh3 h = { { 0, NULL } }, h2 = { { 0, NULL } };
	CHECK_EQ(nfs3d_fh_of(&d.exp, dfd, "file", &h), NFS3_OK);
	CHECK_EQ(nfs3d_fh_of(&d.exp, dfd, "file", &h2), NFS3_OK);
	CHECK(h.data.data_len == h2.data.data_len &&
	      memcmp(h.data.data_val, h2.data.data_val, h.data.data_len) == 0);
	struct stat st, want;
	fstatat(dfd, "file", &want, 0);
	int o;
	CHECK_EQ(nfs3d_fh_open(&d.exp, &h, &o, &st), NFS3_OK);
	CHECK(st.st_ino == want.st_ino);
	if (o >= 0)
		close(o);

	/* A restart: the export closed and opened again. */
	nfs3d_export_close(&d.exp);
	CHECK_EQ(nfs3d_export_open(&d.exp, dir), 0);
	CHECK_EQ(nfs3d_fh_open(&d.exp, &h, &o, &st), NFS3_OK);
	CHECK(st.st_ino == want.st_ino);
	if (o >= 0)
		close(o);

	/* Another export (key) refuses it as stale. */
	char sub[64];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	struct nfs3d_export other;
	CHECK_EQ(nfs3d_export_open(&other, sub), 0);
	CHECK_EQ(nfs3d_fh_open(&other, &h, &o, &st), NFS3ERR_STALE);
	nfs3d_export_close(&other);

	/* Gone: stale. */
	unlinkat(dfd, "file", 0);
	CHECK_EQ(nfs3d_fh_open(&d.exp, &h, &o, &st), NFS3ERR_STALE);
	nfs3d_fh_free(&h2);
	CHECK_EQ(nfs3d_fh_of(&d.exp, dfd, "file", &h2), NFS3ERR_NOENT);
	nfs3d_fh_free(&h);
	nfs3d_fh_free(&h2);
	nfs3d_export_close(&d.exp);
	unlinkat(dfd, "sub", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

int main(void)
{
	codec();
	if (geteuid() == 0)
		live();
	else
		printf("not root: the open_by_handle_at part is skipped\n");
	TEST_MAIN_END();
}
