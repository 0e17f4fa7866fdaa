/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * NFSv3 procedures on one object (RFC 1813 §3.3): GETATTR, SETATTR,
 * ACCESS, READLINK, READ, WRITE, COMMIT.
 *
 * Each runs with the caller's file-system identity (cred.c, entered by
 * dispatch.c); the handle is opened O_PATH first and the object reopened
 * through /proc/self/fd for I/O, so the kernel checks the caller's
 * permission on every READ and WRITE (§4.4: a stateless server "must do
 * permission checking on each read and write call").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs3d.h"

#define E (&nfs3d->exp)

/* Reopens an O_PATH descriptor for I/O as the caller.  RFC 1813 §4.4:
 * "the server's permission checking algorithm should allow the owner of
 * a file to access it regardless of the permission setting", and a read
 * by a caller who may execute the file (demand paging); both are done
 * with the server's own identity once the caller's open was refused. */
static int reopen(int fd, const struct stat *st, int flags)
{
	char path[64];
	nfs3d_fd_path(fd, path, sizeof(path));
	int r = open(path, flags | O_CLOEXEC);
	if (r >= 0 || errno != EACCES)
		return r;
	const struct nfs3d_cred *c = nfs3d_cred_current();
	bool owner = c->uid == st->st_uid;
	bool exec_read = (flags & O_ACCMODE) == O_RDONLY &&
			 nfs3d_access(st, ACCESS3_EXECUTE);
	if (!owner && !exec_read)
		return r;
	nfs3d_cred_suspend();
	r = open(path, flags | O_CLOEXEC);
	int err = errno;
	nfs3d_cred_resume();
	errno = err;
	return r;
}

bool_t nfsproc3_getattr_3_svc(GETATTR3args *a, GETATTR3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->object);
	nfs3d_fattr(E, &st, &r->GETATTR3res_u.resok.obj_attributes);
	close(fd);
	return TRUE;
}

static bool same_time(const nfstime3 *t, const struct timespec *ts)
{
	return t->seconds == (uint32)ts->tv_sec && t->nseconds == (uint32)ts->tv_nsec;
}

bool_t nfsproc3_setattr_3_svc(SETATTR3args *a, SETATTR3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->object);
	/* §3.3.2: the guard makes the change conditional on the ctime the
	 * client saw (NFS3ERR_NOT_SYNC otherwise). */
	if (a->guard.check && !same_time(&a->guard.sattrguard3_u.obj_ctime, &st.st_ctim))
		r->status = NFS3ERR_NOT_SYNC;
	else
		r->status = nfs3d_sattr_apply(fd, &st, &a->new_attributes);
	/* Only the owner truncates a file it may not write: §4.4's
	 * override, for the SETATTR of size that follows an open(O_TRUNC)
	 * or a CREATE with a read-only mode. */
	if (r->status == NFS3ERR_ACCES && a->new_attributes.size.set_it &&
	    nfs3d_cred_current()->uid == st.st_uid) {
		nfs3d_cred_suspend();
		r->status = nfs3d_sattr_apply(fd, &st, &a->new_attributes);
		nfs3d_cred_resume();
	}
	/* Same wcc_data on success and failure (§3.3.2). */
	nfs3d_wcc(E, &st, fd, r->status == NFS3_OK ? &r->SETATTR3res_u.resok.obj_wcc
						   : &r->SETATTR3res_u.resfail.obj_wcc);
	close(fd);
	return TRUE;
}

bool_t nfsproc3_access_3_svc(ACCESS3args *a, ACCESS3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->object);
	nfs3d_post_attr_st(E, &st, &r->ACCESS3res_u.resok.obj_attributes);
	r->ACCESS3res_u.resok.access = nfs3d_access(&st, a->access);
	close(fd);
	return TRUE;
}

bool_t nfsproc3_readlink_3_svc(READLINK3args *a, READLINK3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->symlink);
	if (!S_ISLNK(st.st_mode)) {
		/* §2.6 NFS3ERR_INVAL: "attempting a READLINK on an object
		 * other than a symbolic link". */
		r->status = NFS3ERR_INVAL;
		nfs3d_post_attr_st(E, &st, &r->READLINK3res_u.resfail.symlink_attributes);
		close(fd);
		return TRUE;
	}
	char *buf = malloc(PATH_MAX + 1);
	ssize_t n = buf ? readlinkat(fd, "", buf, PATH_MAX) : -1;
	if (n < 0) {
		r->status = buf ? nfs3d_errno(errno) : NFS3ERR_SERVERFAULT;
		free(buf);
		nfs3d_post_attr_st(E, &st, &r->READLINK3res_u.resfail.symlink_attributes);
	} else {
		buf[n] = 0;
		r->READLINK3res_u.resok.data = buf;
		nfs3d_post_attr_st(E, &st, &r->READLINK3res_u.resok.symlink_attributes);
	}
	close(fd);
	return TRUE;
}

/* The object of a READ, WRITE or COMMIT, which must be a regular file.
 * *fd is open (the caller closes it) unless the handle itself failed. */
static nfsstat3 open_regular(const nfs_fh3 *fh, int *fd, struct stat *st)
{
	nfsstat3 s = nfs3d_fh_open(E, fh, fd, st);
	if (s != NFS3_OK)
		return s;
	if (S_ISDIR(st->st_mode))
		return NFS3ERR_ISDIR;
	return S_ISREG(st->st_mode) ? NFS3_OK : NFS3ERR_INVAL;
}

bool_t nfsproc3_read_3_svc(READ3args *a, READ3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int fd, io = -1;
	struct stat st;
	r->status = open_regular(&a->file, &fd, &st);
	if (fd < 0)
		return TRUE;
	if (r->status == NFS3_OK && a->offset > (uint64)LLONG_MAX)
		r->status = NFS3ERR_INVAL;
	if (r->status == NFS3_OK && (io = reopen(fd, &st, O_RDONLY)) < 0)
		r->status = nfs3d_errno(errno);
	if (r->status != NFS3_OK) {
		nfs3d_post_attr_st(E, &st, &r->READ3res_u.resfail.file_attributes);
		close(fd);
		return TRUE;
	}
	/* §3.3.6: "If greater [than rtmax], the server may return only
	 * rtmax bytes, resulting in a short read." */
	uint32_t want = a->count < NFS3D_MAX_IO ? a->count : NFS3D_MAX_IO;
	/* Test hook (nfs3d.h): data far beyond any Write chunk offered. */
	bool hook = nfs3d->hooks.err_chunk_nth &&
		    ++nfs3d->hooks.reads_seen == nfs3d->hooks.err_chunk_nth;
	size_t extra = hook ? 8192 : 0;
	char *buf = malloc((size_t)want + extra + 1);
	size_t got = 0;
	while (buf && got < want) {
		ssize_t n = pread(io, buf + got, want - got, (off_t)(a->offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->status = nfs3d_errno(errno);
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (!buf)
		r->status = NFS3ERR_SERVERFAULT;
	struct stat now;
	bool have_now = fstat(io, &now) == 0;
	close(io);
	if (r->status != NFS3_OK) {
		free(buf);
		nfs3d_post_attr(E, fd, &r->READ3res_u.resfail.file_attributes);
		close(fd);
		return TRUE;
	}
	READ3resok *ok = &r->READ3res_u.resok;
	if (hook) {
		memset(buf + got, 0, extra);
		got += extra;
		nfs3d->ctr.hook_err_chunk++;
	}
	ok->count = (count3)got;
	/* §3.3.6: eof "if READ3args.offset plus READ3resok.count is equal
	 * to the size of the file". */
	ok->eof = have_now && a->offset + got >= (uint64)now.st_size;
	ok->data.data_len = (u_int)got;
	ok->data.data_val = buf;
	if (have_now)
		nfs3d_post_attr_st(E, &now, &ok->file_attributes);
	close(fd);
	return TRUE;
}

bool_t nfsproc3_write_3_svc(WRITE3args *a, WRITE3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int fd, io = -1;
	struct stat st;
	r->status = open_regular(&a->file, &fd, &st);
	if (fd < 0)
		return TRUE;
	/* §3.3.7: count is the number of bytes in data; data beyond wtmax
	 * may be cut short, but the two must agree. */
	if (r->status == NFS3_OK &&
	    (a->data.data_len < a->count || a->offset > (uint64)LLONG_MAX))
		r->status = NFS3ERR_INVAL;
	if (r->status == NFS3_OK && a->offset + a->count > (uint64)LLONG_MAX)
		r->status = NFS3ERR_FBIG;
	if (r->status == NFS3_OK && (io = reopen(fd, &st, O_WRONLY)) < 0)
		r->status = nfs3d_errno(errno);
	size_t done = 0;
	while (r->status == NFS3_OK && done < a->count) {
		ssize_t n = pwrite(io, a->data.data_val + done, a->count - done,
				   (off_t)(a->offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* Bytes already written are reported; an error only
			 * when nothing was (§3.3.7 allows a short write). */
			if (!done)
				r->status = nfs3d_errno(errno);
			break;
		}
		done += (size_t)n;
	}
	if (r->status == NFS3_OK && a->stable != UNSTABLE &&
	    (a->stable == FILE_SYNC ? fsync(io) : fdatasync(io)) < 0)
		r->status = nfs3d_errno(errno);
	if (io >= 0)
		close(io);
	/* resok and resfail both start with file_wcc (§3.3.7, §3.3.21). */
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	nfs3d_wcc(E, &st, fd, &ok->file_wcc);
	if (r->status != NFS3_OK) {
		close(fd);
		return TRUE;
	}
	ok->count = (count3)done;
	/* §3.3.7: committed at least as strongly as asked, and exactly
	 * so here. */
	ok->committed = a->stable;
	memcpy(ok->verf, nfs3d->write_verf, sizeof(ok->verf));
	close(fd);
	return TRUE;
}

bool_t nfsproc3_commit_3_svc(COMMIT3args *a, COMMIT3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int fd, io = -1;
	struct stat st;
	r->status = open_regular(&a->file, &fd, &st);
	if (fd < 0)
		return TRUE;
	/* Flushing is not an access to the data: the server's own
	 * descriptor does it (a write-only file has no O_RDONLY for its
	 * writer). */
	if (r->status == NFS3_OK) {
		char path[64];
		nfs3d_fd_path(fd, path, sizeof(path));
		nfs3d_cred_suspend();
		io = open(path, O_RDONLY | O_CLOEXEC);
		if (io < 0 || fsync(io) < 0)
			r->status = nfs3d_errno(errno);
		nfs3d_cred_resume();
	}
	if (io >= 0)
		close(io);
	nfs3d_wcc(E, &st, fd, &r->COMMIT3res_u.resok.file_wcc);
	if (r->status == NFS3_OK) {
		/* §3.3.21: the verifier of this instance of the server;
		 * after a restart it differs and the client writes its
		 * uncommitted data again. */
		memcpy(r->COMMIT3res_u.resok.verf, nfs3d->write_verf,
		       NFS3_WRITEVERFSIZE);
	}
	close(fd);
	return TRUE;
}
