/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * nfs3_interop: drive the Linux kernel's NFSv3 server (RFC 1813) with
 * rpcgen-generated stubs, over plain TCP (libtirpc) or over RPC-over-RDMA
 * (clnt_rdma_create), and check every answer and the server's own
 * per-procedure counters afterwards.
 *
 *   nfs3_interop [--transport tcp|rdma] [--server A] [--export PATH]
 *                [--provider verbs|iwarp] [--files N] [--port P]
 *                [--mount-port M]
 *
 * Runs inside the lab guest under tests/kernel/nfsd-up.sh, which exports
 * a tmpfs and sets NFS_SERVER / NFS_EXPORT / NFSD_STATS.  The MOUNT
 * protocol always goes over TCP (rpc.mountd does not listen on RDMA).
 *
 * The sequence: MNT, NULL, FSINFO, GETATTR, CREATE, WRITE of 1 MiB in one
 * call (RFC 8267 §4.1: WRITE data is DDP-eligible, so over RDMA it travels
 * in a Read chunk), COMMIT, READ of 1 MiB in one call (READ data goes into
 * a Write chunk) with every byte compared, CREATE of N files and a
 * READDIRPLUS big enough that its reply exceeds any inline threshold (a
 * Reply chunk), LOOKUP, REMOVE of everything, UMNT.  Afterwards the
 * server's proc3 counters (from /proc/net/rpc/nfsd, before and after) must
 * have grown by exactly the calls we made, and its bad-call counters not
 * at all.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpc/rpc.h>

#include "mount3.h"
#include "nfs3.h"
#define REPORT_NAME "nfs3_interop"
#include "interop_report.h"
#include "rpcrdma/tirpc.h"

#define MiB (1024u * 1024u)
#define NPROC3 22

static unsigned ncalls[NPROC3];
static unsigned call_errors;   /* calls that did not get RPC_SUCCESS */
static unsigned rdma_versions; /* enum rpcrdma_versions our RDMA clients use */
static unsigned nfs_port = 20049; /* RPC-over-RDMA port (RFC 8267 §4.2) */
static unsigned mount_port;       /* MOUNT on TCP; 0: ask rpcbind */

/* One call through a generated stub: counts it (for the server-counter
 * check) and reports transport errors with clnt_sperror's text. */
#define CALL(clnt, proc, stub, args, res)                                   \
	({                                                                  \
		memset((res), 0, sizeof(*(res)));                           \
		ncalls[proc]++;                                             \
		enum clnt_stat st_ = stub((args), (res), (clnt));           \
		if (st_ != RPC_SUCCESS) {                                   \
			call_errors++;                                      \
			fail("%s: %s", #stub,                               \
			     clnt_sperror((clnt), "call"));                 \
		}                                                           \
		st_;                                                        \
	})

static CLIENT *nfs_client(const char *transport, const char *server,
			  const char *provider, bool ulb)
{
	CLIENT *c = NULL;
	if (strcmp(transport, "tcp") == 0) {
		c = clnt_create(server, NFS_PROGRAM, NFS_V3, "tcp");
		if (!c)
			fail("clnt_create tcp: %s", clnt_spcreateerror(server));
	} else if (strcmp(transport, "rdma") == 0) {
		char addr[300];
		snprintf(addr, sizeof(addr), "%s:%u", server, nfs_port);
		struct rpcrdma_opts o;
		rpcrdma_opts_default(&o);
		o.provider = provider;
		rdma_versions = o.versions;
		c = clnt_rdma_create(addr, NFS_PROGRAM, NFS_V3, &o);
		if (!c) {
			fail("clnt_rdma_create %s: %s", addr,
			     clnt_spcreateerror(addr));
		} else if (ulb) {
			/* RFC 8267 §4.1: the NFSv3 Upper-Layer Binding.
			 * READDIRPLUS replies may exceed the inline
			 * threshold: offer a Reply chunk big enough for
			 * our maxcount. */
			struct rpcrdma_ulb_proc b[] = {
				{ .proc = NFSPROC3_WRITE, .ddp_arg = true },
				/* Without its data, a READ reply is a few
				 * hundred bytes: no Reply chunk (as the Linux
				 * client's READ). */
				{ .proc = NFSPROC3_READ, .ddp_result_max = 1048576,
				  .reply_max = 1024 },
				{ .proc = NFSPROC3_READDIRPLUS, .reply_max = 300 * 1024 },
			};
			if (!clnt_rdma_set_ulb(c, b, 3))
				fail("clnt_rdma_set_ulb");
		}
	} else {
		fail("unknown transport %s", transport);
	}
	if (c) {
		struct timeval tv = { 60, 0 };
		clnt_control(c, CLSET_TIMEOUT, (char *)&tv);
		auth_destroy(c->cl_auth);
		c->cl_auth = authunix_create_default();
	}
	return c;
}

/* MOUNT over TCP: through rpcbind, or straight to mount_port. */
static CLIENT *mount_client(const char *server)
{
	if (!mount_port)
		return clnt_create(server, MOUNT_PROGRAM, MOUNT_V3, "tcp");
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)mount_port);
	if (inet_pton(AF_INET, server, &sin.sin_addr) != 1)
		return NULL;
	int sock = RPC_ANYSOCK;
	return clnttcp_create(&sin, MOUNT_PROGRAM, MOUNT_V3, &sock, 0, 0);
}

static int mount_root(const char *server, const char *export, nfs_fh3 *root)
{
	CLIENT *m = mount_client(server);
	if (!m) {
		fail("MOUNT clnt_create: %s", clnt_spcreateerror(server));
		return -1;
	}
	auth_destroy(m->cl_auth);
	m->cl_auth = authunix_create_default();
	mountres3 res;
	memset(&res, 0, sizeof(res));
	char *path = (char *)export;
	if (mountproc3_mnt_3(&path, &res, m) != RPC_SUCCESS) {
		fail("MNT: %s", clnt_sperror(m, "mnt"));
		auth_destroy(m->cl_auth);
		clnt_destroy(m);
		return -1;
	}
	int rc = -1;
	if (res.fhs_status != MNT3_OK) {
		fail("MNT %s: status %d", export, res.fhs_status);
	} else {
		fhandle3 *fh = &res.mountres3_u.mountinfo.fhandle;
		root->data.data_len = fh->fhandle3_len;
		root->data.data_val = malloc(fh->fhandle3_len);
		memcpy(root->data.data_val, fh->fhandle3_val, fh->fhandle3_len);
		note("MNT %s: root handle %u bytes", export, fh->fhandle3_len);
		rc = 0;
	}
	clnt_freeres(m, (xdrproc_t)xdr_mountres3, (char *)&res);
	auth_destroy(m->cl_auth); /* clnt_destroy leaves it to us */
	clnt_destroy(m);
	return rc;
}

static void unmount_root(const char *server, const char *export)
{
	CLIENT *m = mount_client(server);
	if (!m)
		return;
	char *path = (char *)export;
	char dummy;
	mountproc3_umnt_3(&path, &dummy, m);
	auth_destroy(m->cl_auth);
	clnt_destroy(m);
}

static void fh_copy(nfs_fh3 *dst, const nfs_fh3 *src)
{
	dst->data.data_len = src->data.data_len;
	dst->data.data_val = malloc(src->data.data_len ? src->data.data_len : 1);
	memcpy(dst->data.data_val, src->data.data_val, src->data.data_len);
}

static int create_file(CLIENT *c, const nfs_fh3 *dir, const char *fname,
		       nfs_fh3 *out)
{
	CREATE3args a;
	CREATE3res r;
	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	a.where.name = (char *)fname;
	a.how.mode = UNCHECKED;
	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	if (CALL(c, NFSPROC3_CREATE, nfsproc3_create_3, &a, &r) != RPC_SUCCESS)
		return -1;
	int rc = -1;
	if (r.status != NFS3_OK)
		fail("CREATE %s: nfsstat3 %d", fname, r.status);
	else if (!r.CREATE3res_u.resok.obj.handle_follows)
		fail("CREATE %s: no handle returned", fname);
	else {
		if (out)
			fh_copy(out, &r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
		rc = 0;
	}
	clnt_freeres(c, (xdrproc_t)xdr_CREATE3res, (char *)&r);
	return rc;
}

static void remove_file(CLIENT *c, const nfs_fh3 *dir, const char *fname)
{
	REMOVE3args a = { .object = { .dir = *dir, .name = (char *)fname } };
	REMOVE3res r;
	if (CALL(c, NFSPROC3_REMOVE, nfsproc3_remove_3, &a, &r) != RPC_SUCCESS)
		return;
	if (r.status != NFS3_OK)
		fail("REMOVE %s: nfsstat3 %d", fname, r.status);
	clnt_freeres(c, (xdrproc_t)xdr_REMOVE3res, (char *)&r);
}

/* Reads /proc/net/rpc/nfsd (or a saved copy): "rpc calls badcalls badfmt
 * badauth badclnt" and "proc3 22 n0 .. n21". */
static void check_server_counters(const char *before_path)
{
	unsigned long rb[5], ra[5], pb[NPROC3] = { 0 }, pa[NPROC3] = { 0 };
	if (!before_path) {
		note("NFSD_STATS not set: server counters not checked");
		return;
	}
	if (nfsd_stats(before_path, "proc3", rb, pb, NPROC3) < 0 ||
	    nfsd_stats("/proc/net/rpc/nfsd", "proc3", ra, pa, NPROC3) < 0) {
		fail("cannot read nfsd statistics");
		return;
	}
	static const char *names[NPROC3] = {
		"null", "getattr", "setattr", "lookup", "access", "readlink",
		"read", "write", "create", "mkdir", "symlink", "mknod",
		"remove", "rmdir", "rename", "link", "readdir", "readdirplus",
		"fsstat", "fsinfo", "pathconf", "commit"
	};
	for (int i = 0; i < NPROC3; i++) {
		unsigned long d = pa[i] - pb[i];
		if (d != ncalls[i])
			fail("server counted %lu %s calls, we made %u", d,
			     names[i], ncalls[i]);
		else if (d)
			note("server counter %-11s +%lu (matches)", names[i], d);
	}
	const char *rn[5] = { "calls", "badcalls", "badfmt", "badauth", "badclnt" };
	for (int i = 1; i < 5; i++)
		if (ra[i] != rb[i])
			fail("server rpc %s grew by %lu", rn[i], ra[i] - rb[i]);
	note("server rpc calls +%lu, bad calls +%lu", ra[0] - rb[0], ra[1] - rb[1]);
}

/*
 * Version negotiation with a v1-only server (draft-cel-nfsv4-rpcrdma-
 * version-two §7.2).  Linux svcrdma speaks only RFC 8166: it answers the
 * v2 RDMA2_CONNPROP our PREFER_V2 client opens with by ERR_VERS (rdma_vers
 * 2 echoed, v1 error layout), and the client goes on in v1 on the same
 * connection.  first: the first connection to this server in the process
 * (later ones start in v1 straight away, the server being remembered).
 */
static void check_versions(const char *who, const struct rpcrdma_stats *st,
			   bool first)
{
	note("%s: RPC-over-RDMA version %u; v2 opener: CONNPROP sent %llu, "
	     "ERR_VERS received %llu, fallbacks to v1 %llu, peer v1-only %s; "
	     "RDMA2_CONNPROP received %llu; calls %llu, completed %llu, "
	     "bad replies %llu", who, st->version,
	     (unsigned long long)st->connprop_sent,
	     (unsigned long long)st->err_vers_recv,
	     (unsigned long long)st->vers_fallbacks,
	     st->peer_v1_only ? "yes" : "no",
	     (unsigned long long)st->connprop_recv,
	     (unsigned long long)st->calls,
	     (unsigned long long)st->calls_completed,
	     (unsigned long long)st->bad_replies);
	/* RPCRDMA_VERSIONS=1: no negotiation at all. */
	bool negotiates = rdma_versions != RPCRDMA_V1_ONLY && first;
	uint64_t want = negotiates ? 1 : 0;
	if (st->version != 1)
		fail("%s: version %u, expected 1 (nfsd is v1-only)", who,
		     st->version);
	if (st->err_vers_recv != want)
		fail("%s: %llu ERR_VERS received, expected %llu", who,
		     (unsigned long long)st->err_vers_recv,
		     (unsigned long long)want);
	if (st->vers_fallbacks != want)
		fail("%s: %llu fallbacks to v1, expected %llu", who,
		     (unsigned long long)st->vers_fallbacks,
		     (unsigned long long)want);
	if (st->connprop_sent != want)
		fail("%s: %llu RDMA2_CONNPROP sent, expected %llu", who,
		     (unsigned long long)st->connprop_sent,
		     (unsigned long long)want);
	if (rdma_versions != RPCRDMA_V1_ONLY && !st->peer_v1_only)
		fail("%s: the server is not marked v1-only", who);
	if (st->connprop_recv != 0)
		fail("%s: an RDMA2_CONNPROP from a v1 server?", who);
	if (st->calls_completed != st->calls)
		fail("%s: %llu calls, %llu completed", who,
		     (unsigned long long)st->calls,
		     (unsigned long long)st->calls_completed);
	if (st->bad_replies)
		fail("%s: %llu replies discarded", who,
		     (unsigned long long)st->bad_replies);
}

int main(int argc, char **argv)
{
	const char *transport = "rdma", *provider = "verbs";
	const char *server = getenv("NFS_SERVER");
	const char *export = getenv("NFS_EXPORT");
	unsigned nfiles = 150;
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "server", required_argument, NULL, 's' },
		{ "export", required_argument, NULL, 'e' },
		{ "provider", required_argument, NULL, 'p' },
		{ "files", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'P' },
		{ "mount-port", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 }
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "t:s:e:p:n:P:M:", lo, NULL)) != -1) {
		switch (ch) {
		case 't': transport = optarg; break;
		case 's': server = optarg; break;
		case 'e': export = optarg; break;
		case 'p': provider = optarg; break;
		case 'n': nfiles = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'P': nfs_port = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'M': mount_port = (unsigned)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [--transport tcp|rdma] [--server A] "
					"[--export PATH] [--provider P] [--files N] "
					"[--port P] [--mount-port M]\n",
				argv[0]);
			return 2;
		}
	}
	if (!server)
		server = "192.0.2.1";
	if (!export)
		export = "/export";
	note("transport %s, server %s, export %s", transport, server, export);

	nfs_fh3 root = { { 0, NULL } };
	if (mount_root(server, export, &root) < 0)
		return 1;
	CLIENT *c = nfs_client(transport, server, provider, true);
	if (!c)
		return 1;
	bool rdma = strcmp(transport, "rdma") == 0;

	/* NULL and FSINFO: what the server will take in one READ/WRITE. */
	char nul;
	CALL(c, NFSPROC3_NULL, nfsproc3_null_3, NULL, &nul);
	FSINFO3args fa = { .fsroot = root };
	FSINFO3res fr;
	uint32_t rtmax = MiB, wtmax = MiB;
	if (CALL(c, NFSPROC3_FSINFO, nfsproc3_fsinfo_3, &fa, &fr) == RPC_SUCCESS) {
		if (fr.status != NFS3_OK) {
			fail("FSINFO: nfsstat3 %d", fr.status);
		} else {
			rtmax = fr.FSINFO3res_u.resok.rtmax;
			wtmax = fr.FSINFO3res_u.resok.wtmax;
			note("FSINFO rtmax %u wtmax %u", rtmax, wtmax);
		}
		clnt_freeres(c, (xdrproc_t)xdr_FSINFO3res, (char *)&fr);
	}

	GETATTR3args ga = { .object = root };
	GETATTR3res gr;
	if (CALL(c, NFSPROC3_GETATTR, nfsproc3_getattr_3, &ga, &gr) == RPC_SUCCESS) {
		if (gr.status != NFS3_OK)
			fail("GETATTR root: nfsstat3 %d", gr.status);
		else if (gr.GETATTR3res_u.resok.obj_attributes.type != NF3DIR)
			fail("GETATTR root: type %d, not a directory",
			     gr.GETATTR3res_u.resok.obj_attributes.type);
		clnt_freeres(c, (xdrproc_t)xdr_GETATTR3res, (char *)&gr);
	}

	/* One 1 MiB WRITE (FILE_SYNC), then COMMIT anyway. */
	nfs_fh3 fh = { { 0, NULL } };
	uint32_t len = MiB;
	if (wtmax < len || rtmax < len) {
		fail("server limits rtmax %u / wtmax %u below 1 MiB", rtmax, wtmax);
		len = wtmax < rtmax ? wtmax : rtmax;
	}
	char *data = malloc(len), *back = NULL;
	srandom(1813);
	for (uint32_t i = 0; i < len; i++)
		data[i] = (char)(random() >> 7);
	if (create_file(c, &root, "big", &fh) == 0) {
		WRITE3args wa = { .file = fh, .offset = 0, .count = len,
				  .stable = FILE_SYNC,
				  .data = { len, data } };
		WRITE3res wr;
		double t0 = now_ms();
		if (CALL(c, NFSPROC3_WRITE, nfsproc3_write_3, &wa, &wr) == RPC_SUCCESS) {
			double t1 = now_ms();
			if (wr.status != NFS3_OK)
				fail("WRITE: nfsstat3 %d", wr.status);
			else if (wr.WRITE3res_u.resok.count != len)
				fail("WRITE: server wrote %u of %u",
				     wr.WRITE3res_u.resok.count, len);
			else
				note("WRITE %u bytes in one call: %.1f ms", len, t1 - t0);
			clnt_freeres(c, (xdrproc_t)xdr_WRITE3res, (char *)&wr);
		}
		COMMIT3args ca = { .file = fh, .offset = 0, .count = 0 };
		COMMIT3res cr;
		if (CALL(c, NFSPROC3_COMMIT, nfsproc3_commit_3, &ca, &cr) == RPC_SUCCESS) {
			if (cr.status != NFS3_OK)
				fail("COMMIT: nfsstat3 %d", cr.status);
			clnt_freeres(c, (xdrproc_t)xdr_COMMIT3res, (char *)&cr);
		}
		READ3args ra = { .file = fh, .offset = 0, .count = len };
		READ3res rr;
		double t0r = now_ms();
		if (CALL(c, NFSPROC3_READ, nfsproc3_read_3, &ra, &rr) == RPC_SUCCESS) {
			double t1r = now_ms();
			READ3resok *ok = &rr.READ3res_u.resok;
			if (rr.status != NFS3_OK)
				fail("READ: nfsstat3 %d", rr.status);
			else if (ok->count != len || ok->data.data_len != len)
				fail("READ: %u bytes (data %u) of %u", ok->count,
				     ok->data.data_len, len);
			else if (memcmp(ok->data.data_val, data, len) != 0)
				fail("READ: data differs from what was written");
			else
				note("READ %u bytes in one call, all verified: %.1f ms",
				     len, t1r - t0r);
			if (rr.status == NFS3_OK && !ok->eof)
				fail("READ of the whole file without eof");
			clnt_freeres(c, (xdrproc_t)xdr_READ3res, (char *)&rr);
		}
	}
	free(back);

	/* A directory whose READDIRPLUS reply cannot be inline. */
	char fname[64]; /* ("name" is a MOUNT typedef) */
	unsigned made = 0;
	for (unsigned i = 0; i < nfiles; i++) {
		snprintf(fname, sizeof(fname), "entry-%04u-with-a-longish-name", i);
		if (create_file(c, &root, fname, NULL) == 0)
			made++;
	}
	READDIRPLUS3args da;
	memset(&da, 0, sizeof(da));
	da.dir = root;
	da.dircount = 65536;
	da.maxcount = 262144;
	READDIRPLUS3res dr;
	if (CALL(c, NFSPROC3_READDIRPLUS, nfsproc3_readdirplus_3, &da, &dr) == RPC_SUCCESS) {
		if (dr.status != NFS3_OK) {
			fail("READDIRPLUS: nfsstat3 %d", dr.status);
		} else {
			unsigned n = 0;
			for (entryplus3 *e = dr.READDIRPLUS3res_u.resok.reply.entries;
			     e; e = e->nextentry)
				n++;
			/* ".", "..", "big" and ours */
			if (n != made + 3 || !dr.READDIRPLUS3res_u.resok.reply.eof)
				fail("READDIRPLUS: %u entries (eof %d), expected %u",
				     n, dr.READDIRPLUS3res_u.resok.reply.eof, made + 3);
			else
				note("READDIRPLUS: %u entries in one reply", n);
		}
		clnt_freeres(c, (xdrproc_t)xdr_READDIRPLUS3res, (char *)&dr);
	}

	LOOKUP3args la = { .what = { .dir = root, .name = "big" } };
	LOOKUP3res lr;
	if (CALL(c, NFSPROC3_LOOKUP, nfsproc3_lookup_3, &la, &lr) == RPC_SUCCESS) {
		if (lr.status != NFS3_OK)
			fail("LOOKUP big: nfsstat3 %d", lr.status);
		else if (lr.LOOKUP3res_u.resok.object.data.data_len != fh.data.data_len ||
			 memcmp(lr.LOOKUP3res_u.resok.object.data.data_val,
				fh.data.data_val, fh.data.data_len) != 0)
			fail("LOOKUP big: a different handle than CREATE gave");
		clnt_freeres(c, (xdrproc_t)xdr_LOOKUP3res, (char *)&lr);
	}
	LOOKUP3args la2 = { .what = { .dir = root, .name = "no-such-file" } };
	if (CALL(c, NFSPROC3_LOOKUP, nfsproc3_lookup_3, &la2, &lr) == RPC_SUCCESS) {
		if (lr.status != NFS3ERR_NOENT)
			fail("LOOKUP of a missing name: nfsstat3 %d, not NOENT",
			     lr.status);
		clnt_freeres(c, (xdrproc_t)xdr_LOOKUP3res, (char *)&lr);
	}

	/* A Long Call (RFC 8166 §3.5.3): an 8 KiB WRITE from a client whose
	 * binding moves nothing by DDP, so the whole call exceeds the
	 * inline threshold and goes through a Position-Zero Read chunk. */
	if (rdma && fh.data.data_len) {
		CLIENT *lc = nfs_client(transport, server, provider, false);
		if (lc) {
			WRITE3args wa = { .file = fh, .offset = 0, .count = 8192,
					  .stable = FILE_SYNC, .data = { 8192, data } };
			WRITE3res wr;
			if (CALL(lc, NFSPROC3_WRITE, nfsproc3_write_3, &wa, &wr) == RPC_SUCCESS) {
				if (wr.status != NFS3_OK || wr.WRITE3res_u.resok.count != 8192)
					fail("Long Call WRITE: nfsstat3 %d", wr.status);
				clnt_freeres(lc, (xdrproc_t)xdr_WRITE3res, (char *)&wr);
			}
			struct rpcrdma_stats ls;
			if (clnt_rdma_stats(lc, &ls)) {
				note("Long Call client: %llu Long Call(s) sent",
				     (unsigned long long)ls.long_calls);
				if (ls.long_calls < 1)
					fail("the 8 KiB WRITE without DDP was not a Long Call");
				/* The second connection: v1 from the start. */
				check_versions("Long Call client", &ls, false);
			} else {
				fail("clnt_rdma_stats of the Long Call client");
			}
			auth_destroy(lc->cl_auth);
			clnt_destroy(lc);
		}
	}

	for (unsigned i = 0; i < nfiles; i++) {
		snprintf(fname, sizeof(fname), "entry-%04u-with-a-longish-name", i);
		remove_file(c, &root, fname);
	}
	remove_file(c, &root, "big");

	struct rpcrdma_stats st;
	if (rdma && clnt_rdma_stats(c, &st)) {
		/* RFC 8797 §4.1: the kernel sets no R bit (it takes no
		 * Send With Invalidate for its callbacks' replies), so ours
		 * is "no" while it invalidates our rkeys (we set R). */
		note("RPC-over-RDMA: inline thresholds send %u / receive %u, "
		     "our replies Send With Invalidate %s, credits granted %u",
		     st.send_threshold, st.recv_threshold,
		     st.peer_remote_inv ? "yes" : "no", st.credits_granted);
		note("RPC-over-RDMA: calls %llu: %llu Short, %llu Chunked, %llu Long; "
		     "replies %llu inline, %llu Long; %llu rkeys invalidated "
		     "by the server, %llu locally",
		     (unsigned long long)st.calls, (unsigned long long)st.short_calls,
		     (unsigned long long)st.chunked_calls,
		     (unsigned long long)st.long_calls,
		     (unsigned long long)st.replies_inline,
		     (unsigned long long)st.replies_long,
		     (unsigned long long)st.remote_invs,
		     (unsigned long long)st.local_invs);
		/* Linux svcrdma advertises 4096-byte sends and receives in
		 * its RFC 8797 private data; ours are 4096 too, so both
		 * thresholds must come out at 4096 (1024 would mean the
		 * private data was missing or not understood, §5.1). */
		if (st.send_threshold != 4096 || st.recv_threshold != 4096)
			fail("inline thresholds %u/%u, expected 4096/4096 (RFC 8797 §4.2)",
			     st.send_threshold, st.recv_threshold);
		if (st.chunked_calls < 1)
			fail("the 1 MiB WRITE did not travel in a Read chunk");
		if (st.replies_long < 1)
			fail("no Long Reply: READDIRPLUS fit inline?");
		if (st.credits_granted < 1)
			fail("no credit granted");
		check_versions("main client", &st, true);
	} else if (rdma) {
		fail("clnt_rdma_stats");
	}
	if (call_errors)
		fail("%u call(s) failed", call_errors);
	else
		note("every call succeeded");
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	unmount_root(server, export);
	check_server_counters(getenv("NFSD_STATS"));
	free(data);
	free(fh.data.data_val);
	free(root.data.data_val);
	if (failures) {
		note("%d failure(s)", failures);
		return 1;
	}
	note("all checks passed");
	return 0;
}
