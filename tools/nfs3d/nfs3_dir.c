/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * NFSv3 procedures on directory entries (RFC 1813 §3.3): LOOKUP, CREATE,
 * MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK.  (READDIR and
 * READDIRPLUS are in nfs3_readdir.c.)
 *
 * Names are one component (nfs3d_check_name) and every call is an *at()
 * call relative to the directory's descriptor, so a request never walks
 * a path and never follows a symbolic link it names (O_NOFOLLOW where
 * a call would).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs3d.h"

#define E (&nfs3d->exp)

nfsstat3 nfs3d_check_name(const char *name, bool allow_dots)
{
	/* §3.2 "Filenames": a component, at most NAME_MAX bytes here (the
	 * server's limit, PATHCONF name_max), never containing '/'. */
	if (!name || !name[0])
		return NFS3ERR_ACCES;
	size_t n = strlen(name);
	if (n > 255)
		return NFS3ERR_NAMETOOLONG;
	if (strchr(name, '/'))
		return NFS3ERR_ACCES;
	if (!allow_dots && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0))
		/* §3.3.12 and friends: "." and ".." are never created,
		 * removed or renamed. */
		return NFS3ERR_INVAL;
	return NFS3_OK;
}

/* The directory a handle names (O_PATH), or why not. */
static nfsstat3 dir_open(const nfs_fh3 *fh, int *fd, struct stat *st)
{
	nfsstat3 s = nfs3d_fh_open(E, fh, fd, st);
	if (s == NFS3_OK && !S_ISDIR(st->st_mode)) {
		close(*fd);
		*fd = -1;
		return NFS3ERR_NOTDIR;
	}
	return s;
}

static bool is_root(const struct stat *st)
{
	struct stat r;
	return fstat(E->mount_fd, &r) == 0 && r.st_ino == st->st_ino &&
	       r.st_dev == st->st_dev;
}

bool_t nfsproc3_lookup_3_svc(LOOKUP3args *a, LOOKUP3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int dfd;
	struct stat dst;
	r->status = dir_open(&a->what.dir, &dfd, &dst);
	if (r->status != NFS3_OK)
		return TRUE;
	const char *name = a->what.name;
	r->status = nfs3d_check_name(name, true);
	/* ".." of the export's root is the root: the client never climbs
	 * out of the export. */
	if (r->status == NFS3_OK && strcmp(name, "..") == 0 && is_root(&dst))
		name = ".";
	LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
	struct stat st;
	if (r->status == NFS3_OK)
		r->status = nfs3d_fh_of(E, dfd, strcmp(name, ".") ? name : "",
					&ok->object);
	if (r->status == NFS3_OK &&
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r->status = nfs3d_errno(errno);
	/* The directory's attributes as dir_open read them: a lookup
	 * changes nothing in it (not even its atime, which only reading
	 * the entries touches), and another fstat would be one more
	 * system call per LOOKUP, the most frequent procedure. */
	if (r->status != NFS3_OK) {
		nfs3d_fh_free(&ok->object);
		nfs3d_post_attr_st(E, &dst, &r->LOOKUP3res_u.resfail.dir_attributes);
	} else {
		nfs3d_post_attr_st(E, &st, &ok->obj_attributes);
		nfs3d_post_attr_st(E, &dst, &ok->dir_attributes);
	}
	close(dfd);
	return TRUE;
}

/* What CREATE, MKDIR, SYMLINK and MKNOD return on success: the new
 * object's handle and attributes and the directory's wcc_data. */
static nfsstat3 made(int dfd, const char *name, const struct stat *before,
		     post_op_fh3 *obj, post_op_attr *attrs, wcc_data *wcc)
{
	struct stat st;
	nfsstat3 s = nfs3d_fh_of(E, dfd, name, &obj->post_op_fh3_u.handle);
	/* §3.3.8: the handle and attributes are optional in the reply;
	 * the object exists now, so the call succeeded either way. */
	obj->handle_follows = s == NFS3_OK;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		nfs3d_post_attr_st(E, &st, attrs);
	nfs3d_wcc(E, before, dfd, wcc);
	return NFS3_OK;
}

/* sattr3 without the mode (given to the creating call itself). */
static nfsstat3 set_after_create(int dfd, const char *name, const sattr3 *a)
{
	sattr3 rest = *a;
	rest.mode.set_it = FALSE;
	if (!rest.uid.set_it && !rest.gid.set_it && !rest.size.set_it &&
	    rest.atime.set_it == DONT_CHANGE && rest.mtime.set_it == DONT_CHANGE)
		return NFS3_OK;
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		nfsstat3 s = nfs3d_errno(errno);
		if (fd >= 0)
			close(fd);
		return s;
	}
	nfsstat3 s = nfs3d_sattr_apply(fd, &st, &rest);
	close(fd);
	return s;
}

static mode_t mode_of(const sattr3 *a, mode_t dflt)
{
	return a->mode.set_it ? (mode_t)(a->mode.set_mode3_u.mode & 07777) : dflt;
}

/* RFC 1813 §3.3.8 EXCLUSIVE: the verifier is kept in the new file's
 * metadata, atime and mtime seconds (as Linux nfsd does), so that a
 * retransmitted CREATE finds it and succeeds instead of EXIST. */
static void verf_times(const createverf3 v, struct timespec ts[2])
{
	uint32_t a = (uint32_t)(uint8_t)v[0] << 24 | (uint32_t)(uint8_t)v[1] << 16 |
		     (uint32_t)(uint8_t)v[2] << 8 | (uint8_t)v[3];
	uint32_t m = (uint32_t)(uint8_t)v[4] << 24 | (uint32_t)(uint8_t)v[5] << 16 |
		     (uint32_t)(uint8_t)v[6] << 8 | (uint8_t)v[7];
	ts[0] = (struct timespec){ (time_t)a, 0 };
	ts[1] = (struct timespec){ (time_t)m, 0 };
}

static nfsstat3 create_file(int dfd, const char *name, const createhow3 *how)
{
	mode_t mode = how->mode == EXCLUSIVE ? 0
					     : mode_of(&how->createhow3_u.obj_attributes, 0666);
	int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
			mode);
	if (fd >= 0) {
		nfsstat3 s = NFS3_OK;
		if (how->mode == EXCLUSIVE) {
			struct timespec ts[2];
			verf_times(how->createhow3_u.verf, ts);
			if (futimens(fd, ts) < 0)
				s = nfs3d_errno(errno);
		}
		close(fd);
		if (s == NFS3_OK && how->mode != EXCLUSIVE)
			s = set_after_create(dfd, name, &how->createhow3_u.obj_attributes);
		return s;
	}
	if (errno != EEXIST)
		return errno == ELOOP ? NFS3ERR_EXIST : nfs3d_errno(errno);
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return nfs3d_errno(errno);
	switch (how->mode) {
	case UNCHECKED: {
		/* §3.3.8: no check for a duplicate; only a regular file
		 * can be "created" again, and of its attributes only the
		 * size is applied (as Linux nfsd does: the rest belong to
		 * the file's owner, not to whoever creates it again). */
		if (!S_ISREG(st.st_mode))
			return NFS3ERR_EXIST;
		sattr3 size_only;
		memset(&size_only, 0, sizeof(size_only));
		size_only.size = how->createhow3_u.obj_attributes.size;
		return set_after_create(dfd, name, &size_only);
	}
	case EXCLUSIVE: {
		struct timespec ts[2];
		verf_times(how->createhow3_u.verf, ts);
		bool ours = S_ISREG(st.st_mode) && st.st_atim.tv_sec == ts[0].tv_sec &&
			    st.st_mtim.tv_sec == ts[1].tv_sec;
		return ours ? NFS3_OK : NFS3ERR_EXIST;
	}
	default:
		return NFS3ERR_EXIST;
	}
}

/* What CREATE, MKDIR, SYMLINK and MKNOD share: the directory, the name,
 * the object made by `make`, the attributes it could not take at birth,
 * and the replies, whose resok (obj, obj_attributes, dir_wcc) and
 * resfail (dir_wcc) have the same layout in all four (§3.3.8-11). */
struct made_res {
	post_op_fh3 *obj;
	post_op_attr *attrs;
	wcc_data *ok_wcc, *fail_wcc;
};

static nfsstat3 make_entry(const diropargs3 *where,
			   nfsstat3 (*make)(int dfd, const char *name, const void *how),
			   const void *how, const sattr3 *after, struct made_res out)
{
	int dfd;
	struct stat dst;
	nfsstat3 s = dir_open(&where->dir, &dfd, &dst);
	if (s != NFS3_OK)
		return s;
	s = nfs3d_check_name(where->name, false);
	if (s == NFS3_OK)
		s = make(dfd, where->name, how);
	if (s == NFS3_OK && after)
		s = set_after_create(dfd, where->name, after);
	if (s == NFS3_OK)
		made(dfd, where->name, &dst, out.obj, out.attrs, out.ok_wcc);
	else
		nfs3d_wcc(E, &dst, dfd, out.fail_wcc);
	close(dfd);
	return s;
}

static nfsstat3 do_create(int dfd, const char *name, const void *how)
{
	const createhow3 *h = how;
	if (h->mode != UNCHECKED && h->mode != GUARDED && h->mode != EXCLUSIVE)
		return NFS3ERR_INVAL;
	return create_file(dfd, name, h);
}

#define MADE(R, res) \
	((struct made_res){ &(R)->res##_u.resok.obj, &(R)->res##_u.resok.obj_attributes, \
			    &(R)->res##_u.resok.dir_wcc, &(R)->res##_u.resfail.dir_wcc })

bool_t nfsproc3_create_3_svc(CREATE3args *a, CREATE3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	/* create_file applies the attributes itself (EXCLUSIVE has none). */
	r->status = make_entry(&a->where, do_create, &a->how, NULL, MADE(r, CREATE3res));
	return TRUE;
}

static nfsstat3 do_mkdir(int dfd, const char *name, const void *how)
{
	return mkdirat(dfd, name, mode_of(how, 0777)) < 0 ? nfs3d_errno(errno) : NFS3_OK;
}

bool_t nfsproc3_mkdir_3_svc(MKDIR3args *a, MKDIR3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	r->status = make_entry(&a->where, do_mkdir, &a->attributes, &a->attributes,
			       MADE(r, MKDIR3res));
	return TRUE;
}

static nfsstat3 do_symlink(int dfd, const char *name, const void *how)
{
	/* The target is data, never resolved here (§3.3.10). */
	const symlinkdata3 *sl = how;
	return symlinkat(sl->symlink_data, dfd, name) < 0 ? nfs3d_errno(errno) : NFS3_OK;
}

bool_t nfsproc3_symlink_3_svc(SYMLINK3args *a, SYMLINK3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	r->status = make_entry(&a->where, do_symlink, &a->symlink,
			       &a->symlink.symlink_attributes, MADE(r, SYMLINK3res));
	return TRUE;
}

/* MKNOD's attributes, by type; NULL for types MKNOD does not make. */
static const sattr3 *mknod_attrs(const mknoddata3 *w)
{
	switch (w->type) {
	case NF3CHR:
	case NF3BLK:
		return &w->mknoddata3_u.device.dev_attributes;
	case NF3SOCK:
	case NF3FIFO:
		return &w->mknoddata3_u.pipe_attributes;
	default:
		return NULL;
	}
}

static nfsstat3 do_mknod(int dfd, const char *name, const void *how)
{
	const mknoddata3 *w = how;
	const sattr3 *attrs = mknod_attrs(w);
	if (!attrs)
		/* §3.3.11: regular files, directories and links have
		 * procedures of their own. */
		return NFS3ERR_BADTYPE;
	mode_t type = w->type == NF3CHR ? S_IFCHR : w->type == NF3BLK ? S_IFBLK
		    : w->type == NF3SOCK ? S_IFSOCK : S_IFIFO;
	dev_t dev = 0;
	if (w->type == NF3CHR || w->type == NF3BLK)
		dev = makedev(w->mknoddata3_u.device.spec.specdata1,
			      w->mknoddata3_u.device.spec.specdata2);
	return mknodat(dfd, name, type | mode_of(attrs, 0666), dev) < 0 ? nfs3d_errno(errno)
									: NFS3_OK;
}

bool_t nfsproc3_mknod_3_svc(MKNOD3args *a, MKNOD3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	r->status = make_entry(&a->where, do_mknod, &a->what, mknod_attrs(&a->what),
			       MADE(r, MKNOD3res));
	return TRUE;
}

/* REMOVE and RMDIR. */
static nfsstat3 unlink_entry(const diropargs3 *o, int flags, wcc_data *wcc)
{
	int dfd;
	struct stat dst;
	nfsstat3 s = dir_open(&o->dir, &dfd, &dst);
	if (s != NFS3_OK)
		return s;
	s = nfs3d_check_name(o->name, false);
	/* Linux says EISDIR for unlink() of a directory (§3.3.12's
	 * NFS3ERR_ISDIR) and ENOTDIR for rmdir() of anything else. */
	if (s == NFS3_OK && unlinkat(dfd, o->name, flags) < 0)
		s = nfs3d_errno(errno);
	nfs3d_wcc(E, &dst, dfd, wcc);
	close(dfd);
	return s;
}

bool_t nfsproc3_remove_3_svc(REMOVE3args *a, REMOVE3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	wcc_data w;
	memset(&w, 0, sizeof(w));
	r->status = unlink_entry(&a->object, 0, &w);
	if (r->status == NFS3_OK)
		r->REMOVE3res_u.resok.dir_wcc = w;
	else
		r->REMOVE3res_u.resfail.dir_wcc = w;
	return TRUE;
}

bool_t nfsproc3_rmdir_3_svc(RMDIR3args *a, RMDIR3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	wcc_data w;
	memset(&w, 0, sizeof(w));
	r->status = unlink_entry(&a->object, AT_REMOVEDIR, &w);
	if (r->status == NFS3_OK)
		r->RMDIR3res_u.resok.dir_wcc = w;
	else
		r->RMDIR3res_u.resfail.dir_wcc = w;
	return TRUE;
}

bool_t nfsproc3_rename_3_svc(RENAME3args *a, RENAME3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int ffd = -1, tfd = -1;
	struct stat fst, tst;
	r->status = dir_open(&a->from.dir, &ffd, &fst);
	if (r->status == NFS3_OK)
		r->status = dir_open(&a->to.dir, &tfd, &tst);
	if (r->status == NFS3_OK)
		r->status = nfs3d_check_name(a->from.name, false);
	if (r->status == NFS3_OK)
		r->status = nfs3d_check_name(a->to.name, false);
	if (r->status == NFS3_OK &&
	    renameat(ffd, a->from.name, tfd, a->to.name) < 0)
		r->status = nfs3d_errno(errno);
	/* resok and resfail have the same two wcc_data (§3.3.14). */
	RENAME3resok *w = &r->RENAME3res_u.resok;
	if (ffd >= 0)
		nfs3d_wcc(E, &fst, ffd, &w->fromdir_wcc);
	if (tfd >= 0)
		nfs3d_wcc(E, &tst, tfd, &w->todir_wcc);
	if (ffd >= 0)
		close(ffd);
	if (tfd >= 0)
		close(tfd);
	return TRUE;
}

bool_t nfsproc3_link_3_svc(LINK3args *a, LINK3res *r, struct svc_req *rq)
{
	(void)rq;
	memset(r, 0, sizeof(*r));
	int fd = -1, dfd = -1;
	struct stat st, dst;
	r->status = nfs3d_fh_open(E, &a->file, &fd, &st);
	if (r->status == NFS3_OK)
		r->status = dir_open(&a->link.dir, &dfd, &dst);
	if (r->status == NFS3_OK)
		r->status = nfs3d_check_name(a->link.name, false);
	if (r->status == NFS3_OK && S_ISDIR(st.st_mode))
		r->status = NFS3ERR_ISDIR; /* §3.3.15: no links to directories */
	if (r->status == NFS3_OK) {
		/* Through /proc/self/fd: linkat(AT_EMPTY_PATH) would need
		 * CAP_DAC_READ_SEARCH, which the caller's identity lacks. */
		char path[64];
		nfs3d_fd_path(fd, path, sizeof(path));
		if (linkat(AT_FDCWD, path, dfd, a->link.name, AT_SYMLINK_FOLLOW) < 0)
			r->status = nfs3d_errno(errno);
	}
	/* resok and resfail have the same layout (§3.3.15). */
	LINK3resok *ok = &r->LINK3res_u.resok;
	if (fd >= 0)
		nfs3d_post_attr(E, fd, &ok->file_attributes);
	if (dfd >= 0)
		nfs3d_wcc(E, &dst, dfd, &ok->linkdir_wcc);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return TRUE;
}
