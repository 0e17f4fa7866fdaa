/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * nfs3d_check: rpcrdma-nfs3d against RFC 1813, procedure by procedure,
 * through rpcgen stubs over clnt_rdma_create (run by e2e-nfs3d.sh on the
 * iwarp provider over loopback; any provider works).
 *
 *   nfs3d_check MODE --server A --port P --mount-port M --export DIR
 *               [--provider iwarp|verbs] [--state FILE]
 *
 * Modes:
 *   all           every procedure and its errors, MOUNT's six procedures
 *   drc-ok        CREATE then REMOVE; the server drops the REMOVE's reply
 *                 (its test hook), the client reconnects and sends it
 *                 again with the same XID: it must succeed (the DRC)
 *   drc-noent     the same against a server without a DRC: the REMOVE,
 *                 done twice, must now say NFS3ERR_NOENT (so drc-ok can
 *                 fail)
 *   save FILE     create a file, write its handle and fileid to FILE
 *   load FILE     after a server restart: the handle still names it
 *   squash        a file created as root is owned by the anonymous user
 * Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"
#include "rpcrdma/tirpc.h"

static int failures;
static const char *server = "127.0.0.1", *export_dir, *provider = "iwarp";
static unsigned nfs_port = 20049, mount_port = 20048;

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("nfs3d_check: FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures++;
}

static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("nfs3d_check: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

/* Calls a stub; a transport failure is a failure. */
#define CALL(c, stub, a, r) \
	(memset((r), 0, sizeof(*(r))), call_ok(stub((a), (r), (c)), (c), #stub))

static bool call_ok(enum clnt_stat st, CLIENT *c, const char *what)
{
	if (st == RPC_SUCCESS)
		return true;
	fail("%s: %s", what, clnt_sperror(c, ""));
	return false;
}

#define EXPECT(what, got, want)                                              \
	do {                                                                 \
		long g_ = (long)(got), w_ = (long)(want);                    \
		if (g_ != w_)                                                \
			fail("%s: got %ld, want %ld", what, g_, w_);          \
	} while (0)

static CLIENT *nfs_client(unsigned retries)
{
	char addr[300];
	snprintf(addr, sizeof(addr), "%s:%u", server, nfs_port);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = provider;
	o.max_retries = retries;
	CLIENT *c = clnt_rdma_create(addr, NFS_PROGRAM, NFS_V3, &o);
	if (!c) {
		fail("clnt_rdma_create %s: %s", addr, clnt_spcreateerror(addr));
		return NULL;
	}
	/* RFC 8267 §4: the NFSv3 binding, as the Linux client has it. */
	struct rpcrdma_ulb_proc b[] = {
		{ .proc = NFSPROC3_WRITE, .ddp_arg = true },
		{ .proc = NFSPROC3_SYMLINK, .ddp_arg = true },
		{ .proc = NFSPROC3_READ, .ddp_result_max = 1048576, .reply_max = 1024 },
		{ .proc = NFSPROC3_READLINK, .reply_max = 8192 },
		{ .proc = NFSPROC3_READDIR, .reply_max = 300 * 1024 },
		{ .proc = NFSPROC3_READDIRPLUS, .reply_max = 300 * 1024 },
	};
	clnt_rdma_set_ulb(c, b, sizeof(b) / sizeof(b[0]));
	struct timeval tv = { 30, 0 };
	clnt_control(c, CLSET_TIMEOUT, (char *)&tv);
	auth_destroy(c->cl_auth);
	c->cl_auth = authunix_create_default();
	return c;
}

static void client_free(CLIENT *c)
{
	if (!c)
		return;
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
}

static CLIENT *mount_client(void)
{
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)mount_port);
	inet_pton(AF_INET, server, &sin.sin_addr);
	int sock = RPC_ANYSOCK;
	CLIENT *m = clnttcp_create(&sin, MOUNT_PROGRAM, MOUNT_V3, &sock, 0, 0);
	if (!m) {
		fail("MOUNT client: %s", clnt_spcreateerror(server));
		return NULL;
	}
	auth_destroy(m->cl_auth);
	m->cl_auth = authunix_create_default();
	return m;
}

static void fh_copy(nfs_fh3 *d, const char *data, u_int len)
{
	d->data.data_len = len;
	d->data.data_val = malloc(len ? len : 1);
	memcpy(d->data.data_val, data, len);
}

/* MNT of path; *status the mountstat3. */
static bool mnt(CLIENT *m, const char *path, nfs_fh3 *fh, int *status)
{
	mountres3 r;
	char *p = (char *)path;
	if (!CALL(m, mountproc3_mnt_3, &p, &r))
		return false;
	*status = r.fhs_status;
	if (r.fhs_status == MNT3_OK && fh) {
		mountres3_ok *ok = &r.mountres3_u.mountinfo;
		fh_copy(fh, ok->fhandle.fhandle3_val, ok->fhandle.fhandle3_len);
		bool sys = false;
		for (u_int i = 0; i < ok->auth_flavors.auth_flavors_len; i++)
			sys |= ok->auth_flavors.auth_flavors_val[i] == AUTH_SYS;
		if (!sys)
			fail("MNT: AUTH_SYS not among the flavors");
	}
	clnt_freeres(m, (xdrproc_t)xdr_mountres3, (char *)&r);
	return true;
}

static bool root_handle(nfs_fh3 *root)
{
	CLIENT *m = mount_client();
	if (!m)
		return false;
	int st = -1;
	bool ok = mnt(m, export_dir, root, &st) && st == MNT3_OK;
	if (!ok)
		fail("MNT %s: status %d", export_dir, st);
	auth_destroy(m->cl_auth);
	clnt_destroy(m);
	return ok;
}

/* ------------------------------------------------------------------ */

static nfsstat3 create(CLIENT *c, const nfs_fh3 *dir, const char *n,
		       createmode3 how, const char *verf, nfs_fh3 *out)
{
	CREATE3args a;
	CREATE3res r;
	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	a.where.name = (char *)n;
	a.how.mode = how;
	if (how == EXCLUSIVE) {
		memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	} else {
		a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	}
	if (!CALL(c, nfsproc3_create_3, &a, &r))
		return NFS3ERR_SERVERFAULT;
	nfsstat3 s = r.status;
	if (s == NFS3_OK && out) {
		post_op_fh3 *h = &r.CREATE3res_u.resok.obj;
		if (!h->handle_follows)
			fail("CREATE %s: no handle", n);
		else
			fh_copy(out, h->post_op_fh3_u.handle.data.data_val,
				h->post_op_fh3_u.handle.data.data_len);
	}
	clnt_freeres(c, (xdrproc_t)xdr_CREATE3res, (char *)&r);
	return s;
}

static nfsstat3 lookup(CLIENT *c, const nfs_fh3 *dir, const char *n, nfs_fh3 *out)
{
	LOOKUP3args a = { .what = { .dir = *dir, .name = (char *)n } };
	LOOKUP3res r;
	if (!CALL(c, nfsproc3_lookup_3, &a, &r))
		return NFS3ERR_SERVERFAULT;
	nfsstat3 s = r.status;
	if (s == NFS3_OK && out)
		fh_copy(out, r.LOOKUP3res_u.resok.object.data.data_val,
			r.LOOKUP3res_u.resok.object.data.data_len);
	clnt_freeres(c, (xdrproc_t)xdr_LOOKUP3res, (char *)&r);
	return s;
}

static nfsstat3 getattr(CLIENT *c, const nfs_fh3 *fh, fattr3 *out)
{
	GETATTR3args a = { .object = *fh };
	GETATTR3res r;
	if (!CALL(c, nfsproc3_getattr_3, &a, &r))
		return NFS3ERR_SERVERFAULT;
	if (r.status == NFS3_OK && out)
		*out = r.GETATTR3res_u.resok.obj_attributes;
	return r.status;
}

static nfsstat3 remove_name(CLIENT *c, const nfs_fh3 *dir, const char *n)
{
	REMOVE3args a = { .object = { .dir = *dir, .name = (char *)n } };
	REMOVE3res r;
	if (!CALL(c, nfsproc3_remove_3, &a, &r))
		return NFS3ERR_SERVERFAULT;
	return r.status;
}

static nfsstat3 write_data(CLIENT *c, const nfs_fh3 *fh, uint64_t off,
			   const char *data, u_int len, u_int count,
			   stable_how how, char *verf)
{
	WRITE3args a = { .file = *fh, .offset = off, .count = count,
			 .stable = how, .data = { len, (char *)data } };
	WRITE3res r;
	if (!CALL(c, nfsproc3_write_3, &a, &r))
		return NFS3ERR_SERVERFAULT;
	if (r.status == NFS3_OK) {
		EXPECT("WRITE count", r.WRITE3res_u.resok.count, count);
		if (r.WRITE3res_u.resok.committed < how)
			fail("WRITE committed %d < asked %d", r.WRITE3res_u.resok.committed, how);
		if (verf)
			memcpy(verf, r.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	}
	return r.status;
}

/* READDIR(PLUS) paging: every name, following cookies. */
static unsigned list_dir(CLIENT *c, const nfs_fh3 *dir, bool plus, u_int count,
			 unsigned *calls)
{
	cookie3 cookie = 0;
	cookieverf3 verf;
	memset(verf, 0, sizeof(verf));
	unsigned n = 0;
	*calls = 0;
	for (;;) {
		bool eof;
		(*calls)++;
		if (plus) {
			READDIRPLUS3args a = { .dir = *dir, .cookie = cookie,
					       .dircount = count, .maxcount = count * 4 };
			memcpy(a.cookieverf, verf, sizeof(verf));
			READDIRPLUS3res r;
			if (!CALL(c, nfsproc3_readdirplus_3, &a, &r))
				return n;
			if (r.status != NFS3_OK) {
				fail("READDIRPLUS: %d", r.status);
				return n;
			}
			READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
			memcpy(verf, ok->cookieverf, sizeof(verf));
			for (entryplus3 *e = ok->reply.entries; e; e = e->nextentry) {
				n++;
				cookie = e->cookie;
				if (strcmp(e->name, "..") && !e->name_handle.handle_follows)
					fail("READDIRPLUS %s: no handle", e->name);
			}
			eof = ok->reply.eof;
			clnt_freeres(c, (xdrproc_t)xdr_READDIRPLUS3res, (char *)&r);
		} else {
			READDIR3args a = { .dir = *dir, .cookie = cookie, .count = count };
			memcpy(a.cookieverf, verf, sizeof(verf));
			READDIR3res r;
			if (!CALL(c, nfsproc3_readdir_3, &a, &r))
				return n;
			if (r.status != NFS3_OK) {
				fail("READDIR: %d", r.status);
				return n;
			}
			READDIR3resok *ok = &r.READDIR3res_u.resok;
			memcpy(verf, ok->cookieverf, sizeof(verf));
			for (entry3 *e = ok->reply.entries; e; e = e->nextentry) {
				n++;
				cookie = e->cookie;
			}
			eof = ok->reply.eof;
			clnt_freeres(c, (xdrproc_t)xdr_READDIR3res, (char *)&r);
		}
		if (eof || *calls > 1000)
			return n;
	}
}

static bool same_fh(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val, a->data.data_len) == 0;
}

static void free_fh(nfs_fh3 *f)
{
	free(f->data.data_val);
	f->data.data_val = NULL;
	f->data.data_len = 0;
}

/* ------------------------------------------------------------------ */

/* LOOKUP(root, "ab\0c") encoded by hand; the nfsstat3 answered. */
static int raw_lookup_nul(const nfs_fh3 *root)
{
	char addr[300];
	snprintf(addr, sizeof(addr), "%s:%u", server, nfs_port);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = provider;
	struct rpcrdma_clnt *c = NULL;
	if (rpcrdma_clnt_create(addr, NFS_PROGRAM, NFS_V3, &o, &c) < 0)
		return -1;
	struct rpcrdma_cred cred = { .flavor = RPCRDMA_CRED_AUTH_SYS };
	snprintf(cred.machinename, sizeof(cred.machinename), "check");
	rpcrdma_clnt_set_cred(c, &cred);
	uint8_t a[128];
	u_int fl = root->data.data_len;
	uint32_t be = htonl(fl);
	memcpy(a, &be, 4);
	memcpy(a + 4, root->data.data_val, fl);
	size_t n = 4 + ((fl + 3) & ~3u);
	memset(a + 4 + fl, 0, n - 4 - fl);
	be = htonl(4);
	memcpy(a + n, &be, 4);
	memcpy(a + n + 4, "ab\0c", 4);
	n += 8;
	struct rpcrdma_iov v = { a, n, false };
	struct rpcrdma_call call = { .proc = NFSPROC3_LOOKUP, .args = &v, .nargs = 1,
				     .reply_max = 1024 };
	struct rpcrdma_reply rep;
	int status = -1;
	if (rpcrdma_clnt_call(c, &call, &rep) == 0 && rep.len >= 4) {
		memcpy(&be, rep.data, 4);
		status = (int)ntohl(be);
	}
	rpcrdma_reply_free(&rep);
	rpcrdma_clnt_destroy(c);
	return status;
}

static void check_mount(void)
{
	CLIENT *m = mount_client();
	if (!m)
		return;
	char dummy;
	if (CALL(m, mountproc3_null_3, NULL, &dummy))
		note("MOUNT NULL");
	int st = -1;
	if (mnt(m, "/", NULL, &st))
		EXPECT("MNT / (not exported): MNT3ERR_ACCES", st, MNT3ERR_ACCES);
	char sub[1100];
	snprintf(sub, sizeof(sub), "%s/no-such-dir", export_dir);
	if (mnt(m, sub, NULL, &st))
		EXPECT("MNT of a missing path: MNT3ERR_NOENT", st, MNT3ERR_NOENT);
	nfs_fh3 root = { { 0, NULL } };
	if (mnt(m, export_dir, &root, &st))
		EXPECT("MNT export", st, MNT3_OK);
	exports ex = NULL;
	if (CALL(m, mountproc3_export_3, NULL, &ex)) {
		if (!ex || strcmp(ex->ex_dir, export_dir) || ex->ex_next)
			fail("EXPORT: not exactly our export");
		clnt_freeres(m, (xdrproc_t)xdr_exports, (char *)&ex);
	}
	mountlist ml = NULL;
	if (CALL(m, mountproc3_dump_3, NULL, &ml)) {
		if (!ml || strcmp(ml->ml_directory, export_dir))
			fail("DUMP: our mount not listed");
		clnt_freeres(m, (xdrproc_t)xdr_mountlist, (char *)&ml);
	}
	char *p = (char *)export_dir;
	if (CALL(m, mountproc3_umnt_3, &p, &dummy) &&
	    CALL(m, mountproc3_dump_3, NULL, &ml)) {
		if (ml)
			fail("DUMP after UMNT: still listed");
		clnt_freeres(m, (xdrproc_t)xdr_mountlist, (char *)&ml);
	}
	CALL(m, mountproc3_umntall_3, NULL, &dummy);
	free_fh(&root);
	auth_destroy(m->cl_auth);
	clnt_destroy(m);
	note("MOUNT: NULL, MNT (ok, ACCES, NOENT), EXPORT, DUMP, UMNT, UMNTALL");
}

static void check_all(void)
{
	check_mount();
	nfs_fh3 root = { { 0, NULL } };
	if (!root_handle(&root))
		return;
	CLIENT *c = nfs_client(0);
	if (!c)
		return;
	char dummy;
	CALL(c, nfsproc3_null_3, NULL, &dummy);

	fattr3 fa;
	EXPECT("GETATTR root", getattr(c, &root, &fa), NFS3_OK);
	EXPECT("root is a directory", fa.type, NF3DIR);
	uint64_t fsid = fa.fsid;

	/* Handles the server never made, or of another export. */
	nfs_fh3 bad = { { 3, (char *)"abc" } };
	EXPECT("GETATTR of a 3-byte handle: BADHANDLE", getattr(c, &bad, NULL),
	       NFS3ERR_BADHANDLE);
	nfs_fh3 other;
	fh_copy(&other, root.data.data_val, root.data.data_len);
	other.data.data_val[5] ^= 0x55; /* the export key */
	EXPECT("GETATTR with another export's key: STALE", getattr(c, &other, NULL),
	       NFS3ERR_STALE);
	free_fh(&other);

	/* CREATE, the three modes (§3.3.8). */
	nfs_fh3 fa_fh = { { 0, NULL } }, ex1 = { { 0, NULL } }, ex2 = { { 0, NULL } };
	EXPECT("CREATE GUARDED", create(c, &root, "a", GUARDED, NULL, &fa_fh), NFS3_OK);
	EXPECT("CREATE GUARDED again: EXIST", create(c, &root, "a", GUARDED, NULL, NULL),
	       NFS3ERR_EXIST);
	EXPECT("CREATE UNCHECKED of an existing file", create(c, &root, "a", UNCHECKED,
							      NULL, NULL), NFS3_OK);
	EXPECT("CREATE EXCLUSIVE", create(c, &root, "x", EXCLUSIVE, "verf0001", &ex1), NFS3_OK);
	EXPECT("CREATE EXCLUSIVE again, same verifier (a retransmission)",
	       create(c, &root, "x", EXCLUSIVE, "verf0001", &ex2), NFS3_OK);
	if (ex1.data.data_len && ex2.data.data_len && !same_fh(&ex1, &ex2))
		fail("EXCLUSIVE retransmission: a different handle");
	EXPECT("CREATE EXCLUSIVE, another verifier: EXIST",
	       create(c, &root, "x", EXCLUSIVE, "verf0002", NULL), NFS3ERR_EXIST);
	EXPECT("CREATE of \"..\": INVAL", create(c, &root, "..", GUARDED, NULL, NULL),
	       NFS3ERR_INVAL);
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = 0;
	EXPECT("CREATE of a 256-byte name: NAMETOOLONG",
	       create(c, &root, longname, GUARDED, NULL, NULL), NFS3ERR_NAMETOOLONG);
	EXPECT("CREATE of a name with '/': ACCES",
	       create(c, &root, "p/q", GUARDED, NULL, NULL), NFS3ERR_ACCES);

	/* WRITE, COMMIT, READ (§3.3.6, §3.3.7, §3.3.21). */
	enum { N = 300000 };
	char *data = malloc(N), *wv = calloc(1, 8), *cv = calloc(1, 8);
	for (int i = 0; i < N; i++)
		data[i] = (char)(i * 7 + (i >> 11));
	EXPECT("WRITE 300000 UNSTABLE", write_data(c, &fa_fh, 0, data, N, N, UNSTABLE, wv),
	       NFS3_OK);
	EXPECT("WRITE count beyond the data: INVAL",
	       write_data(c, &fa_fh, 0, data, 10, 20, FILE_SYNC, NULL), NFS3ERR_INVAL);
	COMMIT3args ca = { .file = fa_fh };
	COMMIT3res cr;
	if (CALL(c, nfsproc3_commit_3, &ca, &cr)) {
		EXPECT("COMMIT", cr.status, NFS3_OK);
		memcpy(cv, cr.COMMIT3res_u.resok.verf, 8);
		if (memcmp(wv, cv, 8))
			fail("COMMIT's verifier differs from WRITE's in one server instance");
	}
	READ3args ra = { .file = fa_fh, .offset = 1000, .count = N };
	READ3res rr;
	if (CALL(c, nfsproc3_read_3, &ra, &rr)) {
		READ3resok *ok = &rr.READ3res_u.resok;
		EXPECT("READ", rr.status, NFS3_OK);
		if (rr.status == NFS3_OK) {
			EXPECT("READ count (short at EOF)", ok->count, N - 1000);
			EXPECT("READ eof", ok->eof, TRUE);
			if (ok->data.data_len != N - 1000 ||
			    memcmp(ok->data.data_val, data + 1000, N - 1000))
				fail("READ: wrong bytes");
		}
		clnt_freeres(c, (xdrproc_t)xdr_READ3res, (char *)&rr);
	}
	ra.offset = N + 5;
	ra.count = 100;
	if (CALL(c, nfsproc3_read_3, &ra, &rr)) {
		EXPECT("READ past EOF", rr.status, NFS3_OK);
		EXPECT("READ past EOF: count 0", rr.READ3res_u.resok.count, 0);
		EXPECT("READ past EOF: eof", rr.READ3res_u.resok.eof, TRUE);
		clnt_freeres(c, (xdrproc_t)xdr_READ3res, (char *)&rr);
	}
	ra.file = root;
	if (CALL(c, nfsproc3_read_3, &ra, &rr)) {
		EXPECT("READ of a directory: ISDIR", rr.status, NFS3ERR_ISDIR);
		clnt_freeres(c, (xdrproc_t)xdr_READ3res, (char *)&rr);
	}

	/* SETATTR (§3.3.2): size, mode, the ctime guard. */
	SETATTR3args sa;
	memset(&sa, 0, sizeof(sa));
	sa.object = fa_fh;
	sa.new_attributes.size.set_it = TRUE;
	sa.new_attributes.size.set_size3_u.size = 1234;
	sa.new_attributes.mode.set_it = TRUE;
	sa.new_attributes.mode.set_mode3_u.mode = 0600;
	SETATTR3res sr;
	if (CALL(c, nfsproc3_setattr_3, &sa, &sr))
		EXPECT("SETATTR size and mode", sr.status, NFS3_OK);
	EXPECT("GETATTR", getattr(c, &fa_fh, &fa), NFS3_OK);
	EXPECT("size after SETATTR", fa.size, 1234);
	EXPECT("mode after SETATTR", fa.mode, 0600);
	EXPECT("fsid of a file = the root's", fa.fsid == fsid, 1);
	sa.guard.check = TRUE;
	sa.guard.sattrguard3_u.obj_ctime = fa.ctime;
	sa.guard.sattrguard3_u.obj_ctime.seconds -= 100;
	if (CALL(c, nfsproc3_setattr_3, &sa, &sr))
		EXPECT("SETATTR with a stale ctime guard: NOT_SYNC", sr.status,
		       NFS3ERR_NOT_SYNC);

	/* A name with a NUL inside (§3.2 (5)): sent raw through the native
	 * API, since rpcgen's encoder stops at the NUL. */
	EXPECT("LOOKUP of \"ab\\0c\": ACCES", raw_lookup_nul(&root), NFS3ERR_ACCES);

	/* LOOKUP (§3.3.3). */
	nfs_fh3 l = { { 0, NULL } };
	EXPECT("LOOKUP a", lookup(c, &root, "a", &l), NFS3_OK);
	if (l.data.data_len && !same_fh(&l, &fa_fh))
		fail("LOOKUP a: not CREATE's handle");
	free_fh(&l);
	EXPECT("LOOKUP ..", lookup(c, &root, "..", &l), NFS3_OK);
	if (l.data.data_len && !same_fh(&l, &root))
		fail("LOOKUP .. of the export's root: not the root");
	free_fh(&l);
	EXPECT("LOOKUP of a missing name: NOENT", lookup(c, &root, "nope", NULL),
	       NFS3ERR_NOENT);
	EXPECT("LOOKUP in a file: NOTDIR", lookup(c, &fa_fh, "z", NULL), NFS3ERR_NOTDIR);

	/* MKDIR, SYMLINK, READLINK, MKNOD (§3.3.9-11, §3.3.5). */
	MKDIR3args ma;
	memset(&ma, 0, sizeof(ma));
	ma.where.dir = root;
	ma.where.name = "d";
	ma.attributes.mode.set_it = TRUE;
	ma.attributes.mode.set_mode3_u.mode = 0755;
	MKDIR3res mr;
	nfs_fh3 d = { { 0, NULL } };
	if (CALL(c, nfsproc3_mkdir_3, &ma, &mr)) {
		EXPECT("MKDIR", mr.status, NFS3_OK);
		if (mr.status == NFS3_OK)
			fh_copy(&d, mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle.data.data_val,
				mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle.data.data_len);
		clnt_freeres(c, (xdrproc_t)xdr_MKDIR3res, (char *)&mr);
	}
	if (CALL(c, nfsproc3_mkdir_3, &ma, &mr)) {
		EXPECT("MKDIR again: EXIST", mr.status, NFS3ERR_EXIST);
		clnt_freeres(c, (xdrproc_t)xdr_MKDIR3res, (char *)&mr);
	}
	char target[3000];
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	SYMLINK3args la;
	memset(&la, 0, sizeof(la));
	la.where.dir = d;
	la.where.name = "l";
	la.symlink.symlink_data = target;
	SYMLINK3res lr;
	nfs_fh3 lfh = { { 0, NULL } };
	if (CALL(c, nfsproc3_symlink_3, &la, &lr)) {
		EXPECT("SYMLINK (2999-byte target: a Read chunk)", lr.status, NFS3_OK);
		if (lr.status == NFS3_OK)
			fh_copy(&lfh, lr.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle.data.data_val,
				lr.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle.data.data_len);
		clnt_freeres(c, (xdrproc_t)xdr_SYMLINK3res, (char *)&lr);
	}
	READLINK3args rla = { .symlink = lfh };
	READLINK3res rlr;
	if (CALL(c, nfsproc3_readlink_3, &rla, &rlr)) {
		EXPECT("READLINK", rlr.status, NFS3_OK);
		if (rlr.status == NFS3_OK && strcmp(rlr.READLINK3res_u.resok.data, target))
			fail("READLINK: another target");
		clnt_freeres(c, (xdrproc_t)xdr_READLINK3res, (char *)&rlr);
	}
	rla.symlink = fa_fh;
	if (CALL(c, nfsproc3_readlink_3, &rla, &rlr)) {
		EXPECT("READLINK of a file: INVAL", rlr.status, NFS3ERR_INVAL);
		clnt_freeres(c, (xdrproc_t)xdr_READLINK3res, (char *)&rlr);
	}
	MKNOD3args na;
	memset(&na, 0, sizeof(na));
	na.where.dir = d;
	na.where.name = "fifo";
	na.what.type = NF3FIFO;
	MKNOD3res nr;
	if (CALL(c, nfsproc3_mknod_3, &na, &nr)) {
		EXPECT("MKNOD FIFO", nr.status, NFS3_OK);
		if (nr.status == NFS3_OK &&
		    nr.MKNOD3res_u.resok.obj_attributes.attributes_follow &&
		    nr.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.type != NF3FIFO)
			fail("MKNOD FIFO: not a FIFO");
		clnt_freeres(c, (xdrproc_t)xdr_MKNOD3res, (char *)&nr);
	}
	na.where.name = "reg";
	na.what.type = NF3REG;
	if (CALL(c, nfsproc3_mknod_3, &na, &nr)) {
		EXPECT("MKNOD of a regular file: BADTYPE", nr.status, NFS3ERR_BADTYPE);
		clnt_freeres(c, (xdrproc_t)xdr_MKNOD3res, (char *)&nr);
	}

	/* LINK, RENAME, REMOVE, RMDIR (§3.3.12-15). */
	LINK3args ka = { .file = fa_fh, .link = { .dir = d, .name = "hard" } };
	LINK3res kr;
	if (CALL(c, nfsproc3_link_3, &ka, &kr)) {
		EXPECT("LINK", kr.status, NFS3_OK);
		clnt_freeres(c, (xdrproc_t)xdr_LINK3res, (char *)&kr);
	}
	EXPECT("GETATTR", getattr(c, &fa_fh, &fa), NFS3_OK);
	EXPECT("nlink after LINK", fa.nlink, 2);
	ka.file = d;
	ka.link.name = "dirlink";
	if (CALL(c, nfsproc3_link_3, &ka, &kr)) {
		EXPECT("LINK of a directory: ISDIR", kr.status, NFS3ERR_ISDIR);
		clnt_freeres(c, (xdrproc_t)xdr_LINK3res, (char *)&kr);
	}
	RENAME3args na2 = { .from = { .dir = root, .name = "a" },
			    .to = { .dir = d, .name = "b" } };
	RENAME3res nr2;
	if (CALL(c, nfsproc3_rename_3, &na2, &nr2)) {
		EXPECT("RENAME across directories", nr2.status, NFS3_OK);
		clnt_freeres(c, (xdrproc_t)xdr_RENAME3res, (char *)&nr2);
	}
	EXPECT("LOOKUP the old name: NOENT", lookup(c, &root, "a", NULL), NFS3ERR_NOENT);
	EXPECT("the handle follows the file", getattr(c, &fa_fh, NULL), NFS3_OK);
	EXPECT("REMOVE of a directory: ISDIR", remove_name(c, &root, "d"), NFS3ERR_ISDIR);
	RMDIR3args da = { .object = { .dir = root, .name = "d" } };
	RMDIR3res dr;
	if (CALL(c, nfsproc3_rmdir_3, &da, &dr)) {
		EXPECT("RMDIR of a non-empty directory: NOTEMPTY", dr.status, NFS3ERR_NOTEMPTY);
		clnt_freeres(c, (xdrproc_t)xdr_RMDIR3res, (char *)&dr);
	}
	da.object.name = ".";
	if (CALL(c, nfsproc3_rmdir_3, &da, &dr)) {
		EXPECT("RMDIR of \".\": INVAL", dr.status, NFS3ERR_INVAL);
		clnt_freeres(c, (xdrproc_t)xdr_RMDIR3res, (char *)&dr);
	}
	EXPECT("REMOVE d/b", remove_name(c, &d, "b"), NFS3_OK);
	EXPECT("REMOVE d/hard", remove_name(c, &d, "hard"), NFS3_OK);
	EXPECT("GETATTR of a removed file's handle: STALE", getattr(c, &fa_fh, NULL),
	       NFS3ERR_STALE);
	EXPECT("REMOVE again: NOENT", remove_name(c, &d, "b"), NFS3ERR_NOENT);

	/* READDIR and READDIRPLUS paging (§3.3.16, §3.3.17). */
	char nm[64];
	for (int i = 0; i < 60; i++) {
		snprintf(nm, sizeof(nm), "entry-%02d", i);
		create(c, &d, nm, UNCHECKED, NULL, NULL);
	}
	unsigned calls, n = list_dir(c, &d, false, 400, &calls);
	EXPECT("READDIR: every entry across pages (60 + . .. l fifo)", n, 64);
	if (calls < 3)
		fail("READDIR count 400: %u call(s), expected paging", calls);
	n = list_dir(c, &d, true, 300, &calls);
	EXPECT("READDIRPLUS: every entry across pages", n, 64);
	READDIR3args ta = { .dir = d, .count = 50 };
	READDIR3res tr;
	if (CALL(c, nfsproc3_readdir_3, &ta, &tr)) {
		EXPECT("READDIR count 50: TOOSMALL", tr.status, NFS3ERR_TOOSMALL);
		clnt_freeres(c, (xdrproc_t)xdr_READDIR3res, (char *)&tr);
	}
	n = list_dir(c, &d, true, 64 * 1024, &calls);
	EXPECT("READDIRPLUS in one call (a Reply chunk)", calls, 1);

	/* FSSTAT, FSINFO, PATHCONF, ACCESS (§3.3.18-20, §3.3.4). */
	FSSTAT3args fsa = { .fsroot = root };
	FSSTAT3res fsr;
	if (CALL(c, nfsproc3_fsstat_3, &fsa, &fsr)) {
		EXPECT("FSSTAT", fsr.status, NFS3_OK);
		if (fsr.FSSTAT3res_u.resok.tbytes == 0)
			fail("FSSTAT: no bytes");
	}
	FSINFO3args fia = { .fsroot = root };
	FSINFO3res fir;
	if (CALL(c, nfsproc3_fsinfo_3, &fia, &fir)) {
		EXPECT("FSINFO", fir.status, NFS3_OK);
		EXPECT("FSINFO rtmax", fir.FSINFO3res_u.resok.rtmax, 1048576);
		EXPECT("FSINFO wtmax", fir.FSINFO3res_u.resok.wtmax, 1048576);
	}
	PATHCONF3args pa = { .object = root };
	PATHCONF3res pr;
	if (CALL(c, nfsproc3_pathconf_3, &pa, &pr)) {
		EXPECT("PATHCONF", pr.status, NFS3_OK);
		EXPECT("PATHCONF name_max", pr.PATHCONF3res_u.resok.name_max, 255);
	}
	ACCESS3args aa = { .object = root, .access = 0x3f };
	ACCESS3res ar;
	if (CALL(c, nfsproc3_access_3, &aa, &ar)) {
		EXPECT("ACCESS as root", ar.status, NFS3_OK);
		EXPECT("ACCESS as root on a directory: all", ar.ACCESS3res_u.resok.access, 0x3f);
	}
	/* As uid 4242 on a 0644 file owned by root: READ, nothing more
	 * (the kernel checks the caller's identity, cred.c). */
	nfs_fh3 priv = { { 0, NULL } };
	if (create(c, &root, "private", GUARDED, NULL, &priv) == NFS3_OK) {
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create((char *)"check", 4242, 4242, 0, NULL);
		aa.object = priv;
		aa.access = ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXECUTE;
		sa.object = priv;
		sa.guard.check = FALSE;
		sa.new_attributes.size.set_it = FALSE;
		sa.new_attributes.mode.set_mode3_u.mode = 0600;
		if (CALL(c, nfsproc3_access_3, &aa, &ar)) {
			EXPECT("ACCESS as another user", ar.status, NFS3_OK);
			EXPECT("ACCESS as another user on a 0644 file: READ only",
			       ar.ACCESS3res_u.resok.access, ACCESS3_READ);
		}
		if (CALL(c, nfsproc3_setattr_3, &sa, &sr))
			EXPECT("SETATTR mode by another user: PERM", sr.status, NFS3ERR_PERM);
		EXPECT("WRITE by another user: ACCES",
		       write_data(c, &priv, 0, data, 10, 10, FILE_SYNC, NULL), NFS3ERR_ACCES);
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create_default();
	}
	free_fh(&priv);

	free(data);
	free(wv);
	free(cv);
	free_fh(&fa_fh);
	free_fh(&ex1);
	free_fh(&ex2);
	free_fh(&d);
	free_fh(&lfh);
	free_fh(&root);
	client_free(c);
	note("NFSv3: all 22 procedures and their errors checked");
}

/* REMOVE whose reply the server drops (its hook RPCRDMA_NFS3D_TEST_DROP=
 * REMOVE:1); our client reconnects and resends it, same XID. */
static void check_drc(nfsstat3 want)
{
	nfs_fh3 root = { { 0, NULL } };
	if (!root_handle(&root))
		return;
	CLIENT *c = nfs_client(5);
	if (c) {
		create(c, &root, "victim", UNCHECKED, NULL, NULL);
		EXPECT("REMOVE whose reply was lost, sent again",
		       remove_name(c, &root, "victim"), want);
		struct rpcrdma_stats st;
		if (clnt_rdma_stats(c, &st)) {
			EXPECT("the client reconnected once", st.reconnects, 1);
			EXPECT("and resent one call", st.retransmissions, 1);
		}
	}
	client_free(c);
	free_fh(&root);
}

static void check_save(const char *file, bool load)
{
	nfs_fh3 root = { { 0, NULL } }, fh = { { 0, NULL } };
	if (!root_handle(&root))
		return;
	CLIENT *c = nfs_client(0);
	fattr3 fa;
	if (c && !load) {
		EXPECT("CREATE kept", create(c, &root, "kept", GUARDED, NULL, &fh), NFS3_OK);
		EXPECT("GETATTR kept", getattr(c, &fh, &fa), NFS3_OK);
		FILE *f = fopen(file, "w");
		if (f) {
			fprintf(f, "%llu %u ", (unsigned long long)fa.fileid, fh.data.data_len);
			for (u_int i = 0; i < fh.data.data_len; i++)
				fprintf(f, "%02x", (unsigned char)fh.data.data_val[i]);
			fprintf(f, "\n");
			fclose(f);
		}
	} else if (c) {
		unsigned long long id;
		unsigned len;
		FILE *f = fopen(file, "r");
		if (!f || fscanf(f, "%llu %u ", &id, &len) != 2 || len > 64) {
			fail("cannot read %s", file);
		} else {
			fh.data.data_len = len;
			fh.data.data_val = malloc(len ? len : 1);
			for (unsigned i = 0; i < len; i++) {
				unsigned v = 0;
				if (fscanf(f, "%2x", &v) != 1)
					fail("bad %s", file);
				fh.data.data_val[i] = (char)v;
			}
			EXPECT("a handle from before the restart: GETATTR",
			       getattr(c, &fh, &fa), NFS3_OK);
			EXPECT("names the same file (fileid)", fa.fileid == id, 1);
		}
		if (f)
			fclose(f);
	}
	client_free(c);
	free_fh(&fh);
	free_fh(&root);
}

static void check_squash(void)
{
	nfs_fh3 root = { { 0, NULL } }, fh = { { 0, NULL } };
	if (!root_handle(&root))
		return;
	CLIENT *c = nfs_client(0);
	fattr3 fa;
	if (c && create(c, &root, "squashed", GUARDED, NULL, &fh) == NFS3_OK &&
	    getattr(c, &fh, &fa) == NFS3_OK) {
		EXPECT("--auth squash: root's new file owned by the anonymous uid",
		       fa.uid, 65534);
		EXPECT("and gid", fa.gid, 65534);
	} else {
		fail("CREATE under --auth squash");
	}
	client_free(c);
	free_fh(&fh);
	free_fh(&root);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'P' },
		{ "mount-port", required_argument, NULL, 'M' },
		{ "export", required_argument, NULL, 'e' },
		{ "provider", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "s:P:M:e:p:", lo, NULL)) != -1) {
		switch (ch) {
		case 's': server = optarg; break;
		case 'P': nfs_port = (unsigned)atoi(optarg); break;
		case 'M': mount_port = (unsigned)atoi(optarg); break;
		case 'e': export_dir = optarg; break;
		case 'p': provider = optarg; break;
		default: return 2;
		}
	}
	if (optind >= argc || !export_dir) {
		fprintf(stderr, "usage: nfs3d_check all|drc-ok|drc-noent|save F|load F|squash "
				"--export DIR [--server A] [--port P] [--mount-port M]\n");
		return 2;
	}
	const char *mode = argv[optind];
	const char *arg = optind + 1 < argc ? argv[optind + 1] : "";
	if (strcmp(mode, "all") == 0)
		check_all();
	else if (strcmp(mode, "drc-ok") == 0)
		check_drc(NFS3_OK);
	else if (strcmp(mode, "drc-noent") == 0)
		check_drc(NFS3ERR_NOENT);
	else if (strcmp(mode, "save") == 0)
		check_save(arg, false);
	else if (strcmp(mode, "load") == 0)
		check_save(arg, true);
	else if (strcmp(mode, "squash") == 0)
		check_squash();
	else
		return 2;
	printf("nfs3d_check %s: %s\n", mode, failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
