/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * READDIR and READDIRPLUS (RFC 1813 §3.3.16, §3.3.17).
 *
 * Cookies are the directory offsets the kernel gives (getdents64 d_off),
 * so a listing resumes where the previous reply ended, across server
 * restarts too; the cookie verifier is always zero (§3.3.16 lets a server
 * not use it) and the one a client sends back is not checked.  Replies
 * are sized exactly by their XDR encoding against the client's limits:
 * READDIR's count and READDIRPLUS's maxcount bound the whole resok,
 * READDIRPLUS's dircount the directory information alone (fileid, name,
 * cookie of each entry).  These are the replies that become Long Replies
 * over RDMA (a Reply chunk, RFC 8166 §3.5.3): the client offers one for
 * them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs3d.h"

#define E (&nfs3d->exp)

static uint32_t pad4(size_t n)
{
	return (uint32_t)((n + 3) & ~(size_t)3);
}

/* XDR bytes of the resok without entries: status, dir_attributes,
 * cookieverf, the list's final "no more entries" and eof. */
#define FIXED_BYTES (4u + 4u + 84u + 8u + 4u + 4u)
/* One entry3 (with its "value follows" word). */
static uint32_t entry_bytes(size_t namelen)
{
	return 4u + 8u + 4u + pad4(namelen) + 8u;
}

struct listing {
	bool plus;
	uint32_t max;       /* count / maxcount */
	uint32_t dirmax;    /* READDIRPLUS dircount */
	uint32_t used, dirused;
	unsigned n;
	entry3 *e, **etail;
	entryplus3 *p, **ptail;
};

/* Adds one entry if it fits; false when it does not. */
static bool add(struct listing *l, int dfd, const struct dirent64 *d)
{
	size_t nl = strlen(d->d_name);
	uint32_t dirpart = entry_bytes(nl);
	uint32_t size = dirpart;
	struct stat st;
	post_op_attr attrs = { .attributes_follow = FALSE };
	post_op_fh3 fh = { .handle_follows = FALSE };
	if (l->plus) {
		/* ".." gets no attributes or handle: of the export's root
		 * it would name the directory above the export. */
		bool dotdot = strcmp(d->d_name, "..") == 0;
		bool dot = strcmp(d->d_name, ".") == 0;
		if (!dotdot && fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			nfs3d_post_attr_st(E, &st, &attrs);
			if (nfs3d_fh_of(E, dfd, dot ? "" : d->d_name,
					&fh.post_op_fh3_u.handle) == NFS3_OK)
				fh.handle_follows = TRUE;
		}
		size += attrs.attributes_follow ? 4u + 84u : 4u;
		size += fh.handle_follows
				? 4u + 4u + pad4(fh.post_op_fh3_u.handle.data.data_len)
				: 4u;
	}
	if (l->used + size > l->max ||
	    (l->plus && l->dirused + dirpart > l->dirmax)) {
		nfs3d_fh_free(&fh.post_op_fh3_u.handle);
		return false;
	}
	char *name = strdup(d->d_name);
	void *ent = l->plus ? calloc(1, sizeof(entryplus3)) : calloc(1, sizeof(entry3));
	if (!name || !ent) {
		free(name);
		free(ent);
		nfs3d_fh_free(&fh.post_op_fh3_u.handle);
		return false;
	}
	if (l->plus) {
		entryplus3 *e = ent;
		e->fileid = (fileid3)d->d_ino;
		e->name = name;
		e->cookie = (cookie3)d->d_off;
		e->name_attributes = attrs;
		e->name_handle = fh;
		*l->ptail = e;
		l->ptail = &e->nextentry;
	} else {
		entry3 *e = ent;
		e->fileid = (fileid3)d->d_ino;
		e->name = name;
		e->cookie = (cookie3)d->d_off;
		*l->etail = e;
		l->etail = &e->nextentry;
	}
	l->used += size;
	l->dirused += dirpart;
	l->n++;
	return true;
}

/* Fills l from the directory; *eof when the end was reached. */
static nfsstat3 fill(struct listing *l, int dfd, cookie3 cookie, bool_t *eof)
{
	*eof = FALSE;
	if (l->max < FIXED_BYTES)
		return NFS3ERR_TOOSMALL;
	l->used = FIXED_BYTES;
	int rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return nfs3d_errno(errno);
	if (cookie > (cookie3)INT64_MAX ||
	    (cookie && lseek(rfd, (off_t)cookie, SEEK_SET) == (off_t)-1)) {
		close(rfd);
		return NFS3ERR_BAD_COOKIE;
	}
	static char buf[32768] __attribute__((aligned(8)));
	nfsstat3 s = NFS3_OK;
	bool full = false;
	while (!full) {
		ssize_t n = getdents64(rfd, buf, sizeof(buf));
		if (n < 0) {
			s = nfs3d_errno(errno);
			break;
		}
		if (n == 0) {
			*eof = TRUE;
			break;
		}
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + off);
			if (!add(l, dfd, d)) {
				full = true;
				break;
			}
			off += d->d_reclen;
		}
	}
	close(rfd);
	/* §3.3.16: NFS3ERR_TOOSMALL when not even one entry fits. */
	if (s == NFS3_OK && full && l->n == 0)
		s = NFS3ERR_TOOSMALL;
	return s;
}

/* The client's limit, bounded by what we are willing to build. */
static uint32_t clamp(count3 c)
{
	return c < NFS3D_MAX_IO ? c : NFS3D_MAX_IO;
}

/* READDIR and READDIRPLUS: the directory, the listing, its attributes
 * (first in resok and resfail alike, §3.3.16-17).  reply is the resok's
 * dirlist3 / dirlistplus3, freed again with xfree on failure. */
static nfsstat3 readdir_common(const nfs_fh3 *dir, cookie3 cookie, struct listing *l,
			       bool_t *eof, post_op_attr *dir_attributes,
			       xdrproc_t xfree, void *reply, size_t reply_size)
{
	int dfd;
	struct stat dst;
	nfsstat3 s = nfs3d_fh_open(E, dir, &dfd, &dst);
	if (s != NFS3_OK)
		return s;
	s = S_ISDIR(dst.st_mode) ? fill(l, dfd, cookie, eof) : NFS3ERR_NOTDIR;
	if (s != NFS3_OK) {
		xdr_free(xfree, reply);
		memset(reply, 0, reply_size);
	}
	nfs3d_post_attr(E, dfd, dir_attributes);
	close(dfd);
	return s;
}

bool_t nfsproc3_readdir_3_svc(READDIR3args *a, READDIR3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	READDIR3resok *ok = &r->READDIR3res_u.resok;
	struct listing l = { .plus = false, .max = clamp(a->count) };
	l.etail = &ok->reply.entries;
	r->status = readdir_common(&a->dir, a->cookie, &l, &ok->reply.eof,
				   &ok->dir_attributes, (xdrproc_t)xdr_dirlist3,
				   &ok->reply, sizeof(ok->reply));
	return TRUE;
}

bool_t nfsproc3_readdirplus_3_svc(READDIRPLUS3args *a, READDIRPLUS3res *r,
				  struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
	struct listing l = { .plus = true, .max = clamp(a->maxcount),
			     .dirmax = clamp(a->dircount) };
	l.ptail = &ok->reply.entries;
	r->status = readdir_common(&a->dir, a->cookie, &l, &ok->reply.eof,
				   &ok->dir_attributes, (xdrproc_t)xdr_dirlistplus3,
				   &ok->reply, sizeof(ok->reply));
	return TRUE;
}
