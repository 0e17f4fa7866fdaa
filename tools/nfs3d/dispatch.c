/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The NFS program's dispatch function: what rpcgen's -m output does
 * (decode the arguments with the generated XDR routine, call the
 * procedure's *_svc function, send its results, free both), plus the
 * duplicate-request cache, the caller's identity, the counters and the
 * test hooks.
 *
 * Which calls go through the cache: the non-idempotent ones, whose
 * repetition would not give the same answer (RFC 1813 §4.5: "a file can
 * be removed only once"; CREATE, MKDIR, RENAME ... answer with an error
 * the second time).  READ, READDIR and
 * the other idempotent procedures are simply done again, as Linux nfsd
 * does; WRITE is cached too (the client compares its verifier).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpcrdma/tirpc.h>

#include "nfs3d.h"
#include "wire/crc32c.h"

/* Typed wrappers, so every procedure is called through its own type. */
#define WRAP(fn, A, R)                                                     \
	static bool_t w_##fn(void *a, void *r, struct svc_req *rq)         \
	{                                                                  \
		return nfsproc3_##fn##_3_svc((A *)a, (R *)r, rq);          \
	}
WRAP(getattr, GETATTR3args, GETATTR3res)
WRAP(setattr, SETATTR3args, SETATTR3res)
WRAP(lookup, LOOKUP3args, LOOKUP3res)
WRAP(access, ACCESS3args, ACCESS3res)
WRAP(readlink, READLINK3args, READLINK3res)
WRAP(read, READ3args, READ3res)
WRAP(write, WRITE3args, WRITE3res)
WRAP(create, CREATE3args, CREATE3res)
WRAP(mkdir, MKDIR3args, MKDIR3res)
WRAP(symlink, SYMLINK3args, SYMLINK3res)
WRAP(mknod, MKNOD3args, MKNOD3res)
WRAP(remove, REMOVE3args, REMOVE3res)
WRAP(rmdir, RMDIR3args, RMDIR3res)
WRAP(rename, RENAME3args, RENAME3res)
WRAP(link, LINK3args, LINK3res)
WRAP(readdir, READDIR3args, READDIR3res)
WRAP(readdirplus, READDIRPLUS3args, READDIRPLUS3res)
WRAP(fsstat, FSSTAT3args, FSSTAT3res)
WRAP(fsinfo, FSINFO3args, FSINFO3res)
WRAP(pathconf, PATHCONF3args, PATHCONF3res)
WRAP(commit, COMMIT3args, COMMIT3res)

struct proc {
	const char *name;
	xdrproc_t args, res;
	bool_t (*fn)(void *, void *, struct svc_req *);
	bool cached;        /* non-idempotent: through the DRC */
	bool names;         /* takes file names (RFC 1813 §3.2) */
};

#define P(NAME, fn, A, R, c, n) \
	{ NAME, (xdrproc_t)xdr_##A, (xdrproc_t)xdr_##R, w_##fn, c, n }
static const struct proc procs[NFS3D_NPROC] = {
	{ "NULL", (xdrproc_t)xdr_void, (xdrproc_t)xdr_void, NULL, false, false },
	P("GETATTR", getattr, GETATTR3args, GETATTR3res, false, false),
	P("SETATTR", setattr, SETATTR3args, SETATTR3res, true, false),
	P("LOOKUP", lookup, LOOKUP3args, LOOKUP3res, false, true),
	P("ACCESS", access, ACCESS3args, ACCESS3res, false, false),
	P("READLINK", readlink, READLINK3args, READLINK3res, false, false),
	P("READ", read, READ3args, READ3res, false, false),
	P("WRITE", write, WRITE3args, WRITE3res, true, false),
	P("CREATE", create, CREATE3args, CREATE3res, true, true),
	P("MKDIR", mkdir, MKDIR3args, MKDIR3res, true, true),
	P("SYMLINK", symlink, SYMLINK3args, SYMLINK3res, true, true),
	P("MKNOD", mknod, MKNOD3args, MKNOD3res, true, true),
	P("REMOVE", remove, REMOVE3args, REMOVE3res, true, true),
	P("RMDIR", rmdir, RMDIR3args, RMDIR3res, true, true),
	P("RENAME", rename, RENAME3args, RENAME3res, true, true),
	P("LINK", link, LINK3args, LINK3res, true, true),
	P("READDIR", readdir, READDIR3args, READDIR3res, false, false),
	P("READDIRPLUS", readdirplus, READDIRPLUS3args, READDIRPLUS3res, false, false),
	P("FSSTAT", fsstat, FSSTAT3args, FSSTAT3res, false, false),
	P("FSINFO", fsinfo, FSINFO3args, FSINFO3res, false, false),
	P("PATHCONF", pathconf, PATHCONF3args, PATHCONF3res, false, false),
	P("COMMIT", commit, COMMIT3args, COMMIT3res, false, false),
};

const char *nfs3d_proc_name(unsigned proc)
{
	return proc < NFS3D_NPROC ? procs[proc].name : NULL;
}

bool nfs3d_proc_xdr(unsigned proc, xdrproc_t *args, xdrproc_t *res)
{
	if (proc >= NFS3D_NPROC)
		return false;
	*args = procs[proc].args;
	*res = procs[proc].res;
	return true;
}

int nfs3d_proc_number(const char *name)
{
	for (unsigned i = 0; i < NFS3D_NPROC; i++)
		if (strcasecmp(procs[i].name, name) == 0)
			return (int)i;
	return -1;
}

union nfs3_args {
	GETATTR3args getattr;
	SETATTR3args setattr;
	LOOKUP3args lookup;
	ACCESS3args access;
	READLINK3args readlink;
	READ3args read;
	WRITE3args write;
	CREATE3args create;
	MKDIR3args mkdir;
	SYMLINK3args symlink;
	MKNOD3args mknod;
	REMOVE3args remove;
	RMDIR3args rmdir;
	RENAME3args rename;
	LINK3args link;
	READDIR3args readdir;
	READDIRPLUS3args readdirplus;
	FSSTAT3args fsstat;
	FSINFO3args fsinfo;
	PATHCONF3args pathconf;
	COMMIT3args commit;
};

_Static_assert(sizeof(union nfs3_args) <= NFS3D_ARGS_MAX, "NFS3D_ARGS_MAX");

union nfs3_res {
	nfsstat3 status; /* every result union starts with it */
	GETATTR3res getattr;
	SETATTR3res setattr;
	LOOKUP3res lookup;
	ACCESS3res access;
	READLINK3res readlink;
	READ3res read;
	WRITE3res write;
	CREATE3res create;
	MKDIR3res mkdir;
	SYMLINK3res symlink;
	MKNOD3res mknod;
	REMOVE3res remove;
	RMDIR3res rmdir;
	RENAME3res rename;
	LINK3res link;
	READDIR3res readdir;
	READDIRPLUS3res readdirplus;
	FSSTAT3res fsstat;
	FSINFO3res fsinfo;
	PATHCONF3res pathconf;
	COMMIT3res commit;
};

/* ---------------------------------------------------------------------
 * Decoding with checks: for the DRC key, the length of the arguments and
 * a checksum of their first 256 bytes (read first, then the stream is
 * rewound); for the procedures that take names (RFC 1813 §3.2 lists
 * them), whether the decoded arguments encode back to the very bytes
 * that came: libtirpc's xdr_string silently cuts a string at a NUL, and a
 * name "ab\0c" would otherwise be served as "ab".
 */
#define DIGEST_BYTES 256u

struct digest {
	xdrproc_t real;
	void *args;
	bool want_crc, check_exact;
	uint32_t len, crc;
	bool rewind_failed, inexact;
};

/* The decoded arguments encode to exactly raw[0..len). */
static bool encodes_to(xdrproc_t f, void *args, const char *raw, u_int len)
{
	char *b = malloc(len ? len : 1);
	if (!b)
		return true; /* cannot tell: not refused for it */
	XDR e;
	xdrmem_create(&e, b, len, XDR_ENCODE);
	bool same = f(&e, args) && XDR_GETPOS(&e) == len && memcmp(b, raw, len) == 0;
	XDR_DESTROY(&e);
	free(b);
	return same;
}

static bool_t xdr_digest(XDR *x, void *p)
{
	struct digest *d = p;
	u_int pos0 = XDR_GETPOS(x);
	if (d->want_crc) {
		uint8_t head[DIGEST_BYTES];
		size_t got = 0;
		long v;
		while (got < sizeof(head) && XDR_GETLONG(x, &v)) {
			uint32_t be = htonl((uint32_t)v);
			memcpy(head + got, &be, 4);
			got += 4;
		}
		if (!XDR_SETPOS(x, pos0)) {
			d->rewind_failed = true;
			return FALSE;
		}
		d->crc = rpcrdma_crc32c(head, got);
	}
	if (!d->real(x, d->args))
		return FALSE;
	d->len = XDR_GETPOS(x) - pos0;
	if (d->check_exact && XDR_SETPOS(x, pos0)) {
		const char *raw = (const char *)XDR_INLINE(x, (int)d->len);
		/* A stream that will not show its bytes is not checked. */
		d->inexact = raw && !encodes_to(d->real, d->args, raw, d->len);
	}
	return TRUE;
}

/* Sends cached results as they were encoded. */
struct blob {
	const uint8_t *p;
	size_t len;
};

static bool_t xdr_blob(XDR *x, void *p)
{
	const struct blob *b = p;
	return XDR_PUTBYTES(x, (char *)(uintptr_t)b->p, (u_int)b->len);
}

static void drc_key(const struct svc_req *rq, const struct digest *dg,
		    struct nfs3d_drc_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prog = (uint32_t)rq->rq_prog;
	k->vers = (uint32_t)rq->rq_vers;
	k->proc = (uint32_t)rq->rq_proc;
	k->args_len = dg->len;
	k->args_crc = dg->crc;
	const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
	const struct sockaddr *sa = nb && nb->buf ? nb->buf : NULL;
	if (sa && sa->sa_family == AF_INET && nb->len >= sizeof(struct sockaddr_in)) {
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)nb->buf)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6 &&
		   nb->len >= sizeof(struct sockaddr_in6)) {
		k->family = AF_INET6;
		memcpy(k->addr, &((const struct sockaddr_in6 *)nb->buf)->sin6_addr, 16);
	}
}

/* The results, encoded, into the cache. */
static void drc_store(const struct proc *p, const struct nfs3d_drc_key *k,
		      void *res)
{
	u_int len = xdr_sizeof(p->res, res);
	char *buf = malloc(len ? len : 1);
	if (!buf)
		return;
	XDR x;
	xdrmem_create(&x, buf, len, XDR_ENCODE);
	if (p->res(&x, res) && nfs3d_drc_put(nfs3d->drc, k, buf, len))
		nfs3d->ctr.drc_stored++;
	XDR_DESTROY(&x);
	free(buf);
}

static bool hook_drop(unsigned proc)
{
	struct nfs3d_hooks *h = &nfs3d->hooks;
	static uint64_t seen;
	return h->drop_proc == (int)proc && ++seen == h->drop_nth;
}

void nfs3d_nfs_dispatch(struct svc_req *rq, SVCXPRT *x)
{
	struct nfs3d *d = nfs3d;
	unsigned proc = (unsigned)rq->rq_proc;
	if (proc >= NFS3D_NPROC) {
		svcerr_noproc(x);
		return;
	}
	const struct proc *p = &procs[proc];
	d->ctr.calls[proc]++;
	if (proc == 0) {
		/* §3.3.0: NULL does no work (and takes AUTH_NONE). */
		if (!svc_sendreply(x, (xdrproc_t)xdr_void, NULL))
			d->ctr.send_failed++;
		return;
	}
	union nfs3_args args;
	union nfs3_res res;
	memset(&args, 0, sizeof(args));
	memset(&res, 0, sizeof(res));

	struct digest dg = { .real = p->args, .args = &args,
			     .want_crc = p->cached && d->drc,
			     .check_exact = p->names };
	bool decoded = svc_getargs(x, (xdrproc_t)xdr_digest, (caddr_t)&dg);
	bool keyed = decoded && dg.want_crc;
	if (!decoded && dg.rewind_failed) {
		/* A stream that cannot rewind: decode once more, without the
		 * cache or the measure. */
		svc_freeargs(x, p->args, (caddr_t)&args);
		memset(&args, 0, sizeof(args));
		decoded = svc_getargs(x, p->args, (caddr_t)&args);
	}
	if (!decoded) {
		d->ctr.garbage_args++;
		svc_freeargs(x, p->args, (caddr_t)&args);
		svcerr_decode(x);
		return;
	}
	if (dg.inexact) {
		/* A name or path with a NUL in it (or another non-canonical
		 * encoding): RFC 1813 §3.2 (5), "characters that it can not
		 * handle" get NFS3ERR_ACCES.  Every result union encodes its
		 * failure arm with all-zero attributes (none follow). */
		res.status = NFS3ERR_ACCES;
		d->ctr.errors[proc]++;
		if (!svc_sendreply(x, p->res, (caddr_t)&res))
			d->ctr.send_failed++;
		svc_freeargs(x, p->args, (caddr_t)&args);
		return;
	}

	struct nfs3d_drc_key key;
	if (keyed) {
		drc_key(rq, &dg, &key);
		/* svc_req has no XID; the adapter keeps it. */
		keyed = svc_rdma_xid(rq, &key.xid);
	}
	if (keyed) {
		size_t len;
		uint8_t *hit;
		if (nfs3d_drc_get(d->drc, &key, &hit, &len)) {
			/* A retransmission of a call already done: the same
			 * results again, framed for the new connection. */
			struct blob b = { hit, len };
			d->ctr.drc_hits++;
			if (!svc_sendreply(x, (xdrproc_t)xdr_blob, (caddr_t)&b))
				d->ctr.send_failed++;
			free(hit);
			svc_freeargs(x, p->args, (caddr_t)&args);
			return;
		}
	}

	if (d->verbose >= 2) {
		uint32_t xid = 0;
		svc_rdma_xid(rq, &xid);
		if (proc == NFSPROC3_READ || proc == NFSPROC3_WRITE) {
			const READ3args *io = proc == NFSPROC3_READ ? &args.read : NULL;
			fprintf(stderr, "rpcrdma-nfs3d: xid %#x %s offset %llu count %u\n",
				xid, p->name,
				(unsigned long long)(io ? io->offset : args.write.offset),
				io ? io->count : args.write.count);
		} else {
			fprintf(stderr, "rpcrdma-nfs3d: xid %#x %s\n", xid, p->name);
		}
	}
	struct nfs3d_cred c;
	nfs3d_cred_of(&d->auth, rq, &c);
	nfs3d_cred_run(&d->auth, &c, p->fn, &args, &res, rq);

	if (res.status != NFS3_OK) {
		d->ctr.errors[proc]++;
		if (res.status == NFS3ERR_SERVERFAULT || res.status == NFS3ERR_IO)
			d->ctr.server_faults++;
		if (d->verbose)
			fprintf(stderr, "rpcrdma-nfs3d: %s: nfsstat3 %d\n", p->name,
				res.status);
	}
	if (keyed)
		drc_store(p, &key, &res);
	if (hook_drop(proc)) {
		/* Test hook: done, cached, and then the reply is lost. */
		d->ctr.hook_drops++;
		if (svc_rdma_drop(rq))
			d->ctr.dropped++;
	} else if (!svc_sendreply(x, p->res, (caddr_t)&res)) {
		d->ctr.send_failed++;
	}
	svc_freeargs(x, p->args, (caddr_t)&args);
	xdr_free(p->res, (char *)&res);
}
