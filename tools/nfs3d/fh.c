/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * File handles (RFC 1813 §2.5 nfs_fh3, opaque to the client, at most
 * NFS3_FHSIZE bytes) that survive a restart of the server.
 *
 * The handle carries the kernel's own handle of the object
 * (name_to_handle_at(2)): for the file systems one exports (ext4, xfs,
 * btrfs, tmpfs) that is the inode number and its generation, so it names
 * the same object across server restarts and stops naming anything once
 * the object is deleted and its inode reused (ESTALE).  open_by_handle_at
 * opens it again; that needs CAP_DAC_READ_SEARCH, which the server has as
 * root (main.c refuses to start otherwise, with the reason).
 *
 * Layout (16-byte header, then the kernel handle):
 *   0      'N'            1  version (1)   2  kernel handle length
 *   3      0              4  export key (64 bits, big-endian)
 *   12     kernel handle type (32 bits, big-endian)
 *   16...  kernel handle bytes (at most 48)
 * The export key is derived from the export's path, so a handle of
 * another export (or another server's) is refused as stale.
 *
 * A limit shared with Linux nfsd's no_subtree_check: the kernel resolves
 * a handle anywhere in the exported file system, so a client that forges
 * handles reaches files of that file system outside the exported
 * directory.  Export a file system's root (main.c warns otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs3d.h"

#define FH_MAGIC 'N'
#define FH_VERSION 1

/* struct file_handle with room for the largest handle we keep. */
union kernel_fh {
	struct file_handle h;
	uint8_t room[sizeof(struct file_handle) + MAX_HANDLE_SZ];
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

nfsstat3 nfs3d_fh_parse(const void *data, size_t len, struct nfs3d_fh *out)
{
	const uint8_t *p = data;
	if (!p || len < NFS3D_FH_HDR || len > NFS3_FHSIZE)
		return NFS3ERR_BADHANDLE;
	if (p[0] != FH_MAGIC || p[1] != FH_VERSION || p[3] != 0)
		return NFS3ERR_BADHANDLE;
	uint32_t klen = p[2];
	if (klen == 0 || klen > NFS3D_FH_MAX_KERNEL || len != NFS3D_FH_HDR + klen)
		return NFS3ERR_BADHANDLE;
	out->key = get64(p + 4);
	out->type = (int32_t)((uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 |
			      (uint32_t)p[14] << 8 | p[15]);
	out->len = klen;
	memcpy(out->bytes, p + NFS3D_FH_HDR, klen);
	return NFS3_OK;
}

size_t nfs3d_fh_format(const struct nfs3d_fh *fh, uint8_t *out)
{
	out[0] = FH_MAGIC;
	out[1] = FH_VERSION;
	out[2] = (uint8_t)fh->len;
	out[3] = 0;
	put64(out + 4, fh->key);
	uint32_t t = (uint32_t)fh->type;
	out[12] = (uint8_t)(t >> 24);
	out[13] = (uint8_t)(t >> 16);
	out[14] = (uint8_t)(t >> 8);
	out[15] = (uint8_t)t;
	memcpy(out + NFS3D_FH_HDR, fh->bytes, fh->len);
	return NFS3D_FH_HDR + fh->len;
}

void nfs3d_fh_free(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

void nfs3d_fd_path(int fd, char *buf, size_t cap)
{
	snprintf(buf, cap, "/proc/self/fd/%d", fd);
}

/* The kernel handle of dirfd/name, and the mount it lives on. */
static int kernel_handle(int dirfd, const char *name, union kernel_fh *k,
			 int *mount_id)
{
	k->h.handle_bytes = MAX_HANDLE_SZ;
	/* No AT_SYMLINK_FOLLOW: a symbolic link is an object of its own
	 * (RFC 1813 §3.3.3: LOOKUP does not follow it). */
	if (name_to_handle_at(dirfd, name, &k->h, mount_id,
			      name[0] ? 0 : AT_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

static uint64_t export_key(const char *path)
{
	/* FNV-1a: stable across runs and machines. */
	uint64_t h = 14695981039346656037ull;
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		h ^= *s;
		h *= 1099511628211ull;
	}
	return h;
}

nfsstat3 nfs3d_fh_of(const struct nfs3d_export *e, int dirfd,
		     const char *name, nfs_fh3 *out)
{
	union kernel_fh k;
	int mid;
	out->data.data_len = 0;
	out->data.data_val = NULL;
	int rc = kernel_handle(dirfd, name, &k, &mid);
	if (rc == -EOVERFLOW)
		return NFS3ERR_SERVERFAULT; /* a handle over 48 bytes */
	if (rc < 0)
		return nfs3d_errno(-rc);
	if (mid != e->mount_id)
		/* Another file system mounted inside the export: its
		 * handles cannot be opened through ours, and we do not
		 * cross mount points. */
		return NFS3ERR_ACCES;
	if (k.h.handle_bytes > NFS3D_FH_MAX_KERNEL)
		return NFS3ERR_SERVERFAULT;
	struct nfs3d_fh fh = { .key = e->fsid, .type = k.h.handle_type,
			       .len = k.h.handle_bytes };
	memcpy(fh.bytes, k.h.f_handle, fh.len);
	uint8_t *buf = malloc(NFS3_FHSIZE);
	if (!buf)
		return NFS3ERR_SERVERFAULT;
	out->data.data_len = (u_int)nfs3d_fh_format(&fh, buf);
	out->data.data_val = (char *)buf;
	return NFS3_OK;
}

nfsstat3 nfs3d_fh_open(const struct nfs3d_export *e, const nfs_fh3 *fh,
		       int *fd, struct stat *st)
{
	struct nfs3d_fh f;
	*fd = -1;
	nfsstat3 s = nfs3d_fh_parse(fh->data.data_val, fh->data.data_len, &f);
	if (s != NFS3_OK)
		return s;
	if (f.key != e->fsid)
		return NFS3ERR_STALE;
	union kernel_fh k;
	k.h.handle_bytes = f.len;
	k.h.handle_type = f.type;
	memcpy(k.h.f_handle, f.bytes, f.len);
	/* O_PATH: no permission is checked here, and a symbolic link is
	 * opened itself, not followed (open_by_handle_at(2)). */
	nfs3d_cred_suspend();
	int d = open_by_handle_at(e->mount_fd, &k.h, O_PATH | O_CLOEXEC);
	int err = errno;
	nfs3d_cred_resume();
	if (d < 0) {
		errno = err;
		switch (errno) {
		case ESTALE:
		case ENOENT:
			return NFS3ERR_STALE;
		case EINVAL:
		case EOVERFLOW:
			return NFS3ERR_BADHANDLE;
		default:
			return NFS3ERR_SERVERFAULT;
		}
	}
	if (fstat(d, st) < 0 || st->st_dev != e->dev ||
	    (!S_ISDIR(st->st_mode) && st->st_nlink == 0)) {
		/* Deleted (a descriptor elsewhere kept the inode alive) or
		 * not on the exported file system. */
		close(d);
		return NFS3ERR_STALE;
	}
	*fd = d;
	return NFS3_OK;
}

int nfs3d_export_open(struct nfs3d_export *e, const char *path)
{
	memset(e, 0, sizeof(*e));
	e->mount_fd = -1;
	e->path = realpath(path, NULL);
	if (!e->path) {
		int err = errno;
		fprintf(stderr, "rpcrdma-nfs3d: %s: %s\n", path, strerror(err));
		return -err;
	}
	e->mount_fd = open(e->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st, up;
	if (e->mount_fd < 0 || fstat(e->mount_fd, &st) < 0) {
		int err = errno;
		fprintf(stderr, "rpcrdma-nfs3d: %s: %s\n", e->path, strerror(err));
		nfs3d_export_close(e);
		return -err;
	}
	e->dev = st.st_dev;
	e->fsid = export_key(e->path);
	e->mount_root = fstatat(e->mount_fd, "..", &up, 0) < 0 ||
			up.st_dev != st.st_dev || up.st_ino == st.st_ino;
	union kernel_fh k;
	int rc = kernel_handle(e->mount_fd, "", &k, &e->mount_id);
	if (rc < 0) {
		fprintf(stderr, "rpcrdma-nfs3d: %s: the file system gives no "
				"file handles (name_to_handle_at: %s)\n",
			e->path, strerror(-rc));
		nfs3d_export_close(e);
		return rc;
	}
	nfsstat3 s = nfs3d_fh_of(e, e->mount_fd, "", &e->root);
	int fd;
	if (s == NFS3_OK)
		s = nfs3d_fh_open(e, &e->root, &fd, &st);
	if (s != NFS3_OK) {
		fprintf(stderr, "rpcrdma-nfs3d: %s: cannot open a file handle "
				"again (%s): open_by_handle_at needs "
				"CAP_DAC_READ_SEARCH (run as root)\n",
			e->path, s == NFS3ERR_SERVERFAULT ? strerror(errno)
							  : "stale");
		nfs3d_export_close(e);
		return -EPERM;
	}
	close(fd);
	return 0;
}

void nfs3d_export_close(struct nfs3d_export *e)
{
	if (e->mount_fd >= 0)
		close(e->mount_fd);
	e->mount_fd = -1;
	nfs3d_fh_free(&e->root);
	free(e->path);
	e->path = NULL;
}
