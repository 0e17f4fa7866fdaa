/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Attributes: struct stat -> fattr3 / wcc_data (RFC 1813 §2.5, §2.6),
 * sattr3 -> the file system (§3.3.2), ACCESS bits (§3.3.4), and errno ->
 * nfsstat3 (§2.6: "Servers are expected to make a best effort mapping of
 * error conditions to the set of error codes defined").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nfs3d.h"

nfsstat3 nfs3d_errno(int err)
{
	switch (err) {
	case 0: return NFS3_OK;
	case EPERM: return NFS3ERR_PERM;
	case ENOENT: return NFS3ERR_NOENT;
	case ENXIO: return NFS3ERR_NXIO;
	case EACCES: return NFS3ERR_ACCES;
	case EEXIST: return NFS3ERR_EXIST;
	case EXDEV: return NFS3ERR_XDEV;
	case ENODEV: return NFS3ERR_NODEV;
	case ENOTDIR: return NFS3ERR_NOTDIR;
	case EISDIR: return NFS3ERR_ISDIR;
	case EINVAL: return NFS3ERR_INVAL;
	case EFBIG: return NFS3ERR_FBIG;
	case ENOSPC: return NFS3ERR_NOSPC;
	case EROFS: return NFS3ERR_ROFS;
	case EMLINK: return NFS3ERR_MLINK;
	case ENAMETOOLONG: return NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY: return NFS3ERR_NOTEMPTY;
	case EDQUOT: return NFS3ERR_DQUOT;
	case ESTALE: return NFS3ERR_STALE;
	case EOPNOTSUPP: return NFS3ERR_NOTSUPP;
	case ELOOP: return NFS3ERR_INVAL; /* a symbolic link where none may be */
	case ENOMEM: return NFS3ERR_JUKEBOX; /* §2.6: "try again later" */
	default: return NFS3ERR_IO;
	}
}

static ftype3 ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR: return NF3DIR;
	case S_IFBLK: return NF3BLK;
	case S_IFCHR: return NF3CHR;
	case S_IFLNK: return NF3LNK;
	case S_IFSOCK: return NF3SOCK;
	case S_IFIFO: return NF3FIFO;
	default: return NF3REG;
	}
}

static nfstime3 ntime(const struct timespec *t)
{
	/* nfstime3 seconds are unsigned 32 bits (§2.5): times before 1970
	 * or after 2106 do not fit, as in every NFSv3 server. */
	return (nfstime3){ (uint32)t->tv_sec, (uint32)t->tv_nsec };
}

void nfs3d_fattr(const struct nfs3d_export *e, const struct stat *st,
		 fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = ftype(st->st_mode);
	a->mode = st->st_mode & 07777;
	a->nlink = (uint32)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64)st->st_size;
	a->used = (uint64)st->st_blocks * 512u;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		a->rdev.specdata1 = major(st->st_rdev);
		a->rdev.specdata2 = minor(st->st_rdev);
	}
	/* Not st_dev: device numbers of tmpfs and the like change from one
	 * mount to the next, and the client takes a new fsid for a new
	 * file system. */
	a->fsid = e->fsid;
	a->fileid = (uint64)st->st_ino;
	a->atime = ntime(&st->st_atim);
	a->mtime = ntime(&st->st_mtim);
	a->ctime = ntime(&st->st_ctim);
}

void nfs3d_post_attr_st(const struct nfs3d_export *e, const struct stat *st,
			post_op_attr *out)
{
	out->attributes_follow = TRUE;
	nfs3d_fattr(e, st, &out->post_op_attr_u.attributes);
}

void nfs3d_post_attr(const struct nfs3d_export *e, int fd, post_op_attr *out)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		out->attributes_follow = FALSE;
		return;
	}
	nfs3d_post_attr_st(e, &st, out);
}

void nfs3d_pre_attr(const struct stat *st, pre_op_attr *out)
{
	out->attributes_follow = TRUE;
	wcc_attr *w = &out->pre_op_attr_u.attributes;
	w->size = (uint64)st->st_size;
	w->mtime = ntime(&st->st_mtim);
	w->ctime = ntime(&st->st_ctim);
}

void nfs3d_wcc(const struct nfs3d_export *e, const struct stat *before,
	       int fd, wcc_data *out)
{
	if (before)
		nfs3d_pre_attr(before, &out->before);
	else
		out->before.attributes_follow = FALSE;
	nfs3d_post_attr(e, fd, &out->after);
}

static struct timespec set_time(time_how how, const nfstime3 *t)
{
	switch (how) {
	case SET_TO_SERVER_TIME:
		return (struct timespec){ 0, UTIME_NOW };
	case SET_TO_CLIENT_TIME:
		return (struct timespec){ (time_t)t->seconds, (long)t->nseconds };
	default:
		return (struct timespec){ 0, UTIME_OMIT };
	}
}

nfsstat3 nfs3d_sattr_apply(int fd, const struct stat *st, const sattr3 *a)
{
	char path[64];
	nfs3d_fd_path(fd, path, sizeof(path));
	/* Linux has no modes on symbolic links: a mode for one (SYMLINK's
	 * attributes carry one) is ignored, as chmod -h would. */
	if (a->mode.set_it && !S_ISLNK(st->st_mode) &&
	    chmod(path, a->mode.set_mode3_u.mode & 07777) < 0)
		return nfs3d_errno(errno);
	if (a->uid.set_it || a->gid.set_it) {
		uid_t u = a->uid.set_it ? a->uid.set_uid3_u.uid : (uid_t)-1;
		gid_t g = a->gid.set_it ? a->gid.set_gid3_u.gid : (gid_t)-1;
		if (fchownat(fd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return nfs3d_errno(errno);
	}
	if (a->size.set_it) {
		/* §3.3.2: size is for regular files only. */
		if (S_ISDIR(st->st_mode))
			return NFS3ERR_ISDIR;
		if (!S_ISREG(st->st_mode))
			return NFS3ERR_INVAL;
		if (a->size.set_size3_u.size > (uint64)LLONG_MAX)
			return NFS3ERR_FBIG;
		if (truncate(path, (off_t)a->size.set_size3_u.size) < 0)
			return nfs3d_errno(errno);
	}
	if (a->atime.set_it != DONT_CHANGE || a->mtime.set_it != DONT_CHANGE) {
		struct timespec ts[2] = {
			set_time(a->atime.set_it, &a->atime.set_atime_u.atime),
			set_time(a->mtime.set_it, &a->mtime.set_mtime_u.mtime),
		};
		/* AT_EMPTY_PATH: the object itself, a symbolic link too. */
		if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return nfs3d_errno(errno);
	}
	return NFS3_OK;
}

static bool in_group(const struct nfs3d_cred *c, gid_t g)
{
	if (c->gid == g)
		return true;
	for (unsigned i = 0; i < c->ngids; i++)
		if (c->gids[i] == g)
			return true;
	return false;
}

uint32_t nfs3d_access(const struct stat *st, uint32_t want)
{
	const struct nfs3d_cred *c = nfs3d_cred_current();
	bool dir = S_ISDIR(st->st_mode);
	uint32_t got;
	if (c->uid == 0) {
		/* Root may do anything but execute a file nobody may. */
		got = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
		      ACCESS3_EXTEND | ACCESS3_DELETE;
		if (dir || (st->st_mode & 0111))
			got |= ACCESS3_EXECUTE;
	} else {
		mode_t m = st->st_mode;
		unsigned bits = c->uid == st->st_uid   ? (m >> 6) & 7
				: in_group(c, st->st_gid) ? (m >> 3) & 7
							  : m & 7;
		got = 0;
		if (bits & 4)
			got |= ACCESS3_READ;
		if (bits & 2)
			got |= ACCESS3_MODIFY | ACCESS3_EXTEND |
			       (dir ? ACCESS3_DELETE : 0);
		if (bits & 1)
			got |= dir ? ACCESS3_LOOKUP | ACCESS3_EXECUTE
				   : ACCESS3_EXECUTE;
	}
	/* §3.3.4: on a non-directory, "the bit mask returned for such a
	 * request will have the ACCESS3_DELETE bit set to 0" (deleting is
	 * the directory's permission). */
	if (!dir)
		got &= ~(uint32_t)ACCESS3_DELETE;
	return got & want;
}
