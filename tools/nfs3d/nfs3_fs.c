/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * NFSv3 procedures about the file system (RFC 1813 §3.3): NULL, FSSTAT,
 * FSINFO, PATHCONF.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "nfs3d.h"

#define E (&nfs3d->exp)

bool_t nfsproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t nfsproc3_fsstat_3_svc(FSSTAT3args *a, FSSTAT3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->fsroot);
	struct statvfs v;
	if (fstatvfs(fd, &v) < 0) {
		r->status = nfs3d_errno(errno);
		nfs3d_post_attr_st(E, &st, &r->FSSTAT3res_u.resfail.obj_attributes);
		close(fd);
		return TRUE;
	}
	FSSTAT3resok *ok = &r->FSSTAT3res_u.resok;
	nfs3d_post_attr_st(E, &st, &ok->obj_attributes);
	ok->tbytes = (size3)v.f_blocks * v.f_frsize;
	ok->fbytes = (size3)v.f_bfree * v.f_frsize;
	ok->abytes = (size3)v.f_bavail * v.f_frsize;
	ok->tfiles = v.f_files;
	ok->ffiles = v.f_ffree;
	ok->afiles = v.f_favail;
	ok->invarsec = 0; /* §3.3.18: the values may change at any time */
	close(fd);
	return TRUE;
}

bool_t nfsproc3_fsinfo_3_svc(FSINFO3args *a, FSINFO3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->fsroot);
	FSINFO3resok *ok = &r->FSINFO3res_u.resok;
	nfs3d_post_attr_st(E, &st, &ok->obj_attributes);
	/* 1 MiB READ and WRITE: over RDMA the data moves by DDP (RFC 8267
	 * §4), in one Write or Read chunk, and the Linux client's largest
	 * rsize/wsize is 1 MiB. */
	ok->rtmax = ok->rtpref = NFS3D_MAX_IO;
	ok->wtmax = ok->wtpref = NFS3D_MAX_IO;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = NFS3D_DTPREF;
	ok->maxfilesize = (size3)INT64_MAX;
	ok->time_delta = (nfstime3){ 0, 1 };
	ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	close(fd);
	return TRUE;
}

bool_t nfsproc3_pathconf_3_svc(PATHCONF3args *a, PATHCONF3res *r, struct svc_req *rq)
{
	(void)rq;
	NFS3D_OPEN_OBJECT(r, &a->object);
	char path[64];
	nfs3d_fd_path(fd, path, sizeof(path));
	long linkmax = pathconf(path, _PC_LINK_MAX);
	PATHCONF3resok *ok = &r->PATHCONF3res_u.resok;
	nfs3d_post_attr_st(E, &st, &ok->obj_attributes);
	ok->linkmax = linkmax > 0 ? (uint32)linkmax : 1;
	ok->name_max = 255; /* nfs3d_check_name's limit */
	ok->no_trunc = TRUE;
	ok->chown_restricted = TRUE;
	ok->case_insensitive = FALSE;
	ok->case_preserving = TRUE;
	close(fd);
	return TRUE;
}
