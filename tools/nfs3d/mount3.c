/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The MOUNT protocol, version 3 (RFC 1813 Appendix I), served over TCP by
 * plain libtirpc with rpcgen's own dispatch function (mount_program_3 from
 * mount3_svc.c); these are its procedures.
 *
 * One export.  MNT accepts its path or any directory below it (the
 * client then starts there), answers with AUTH_SYS as the flavor
 * (§5.2.1) and records the client for DUMP; UMNT and UMNTALL forget it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount3.h"
#include "nfs3d.h"

struct mounted {
	char *host, *dir;
	struct mounted *next;
};
static struct mounted *mounts;

static void caller(struct svc_req *rq, char *buf, size_t cap)
{
	const struct netbuf *nb = svc_getrpccaller(rq->rq_xprt);
	const struct sockaddr *sa = nb && nb->buf ? nb->buf : NULL;
	snprintf(buf, cap, "unknown");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)nb->buf)->sin_addr,
			  buf, (socklen_t)cap);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)nb->buf)->sin6_addr,
			  buf, (socklen_t)cap);
}

static void forget(const char *host, const char *dir)
{
	for (struct mounted **pp = &mounts; *pp;) {
		struct mounted *m = *pp;
		if (strcmp(m->host, host) == 0 && (!dir || strcmp(m->dir, dir) == 0)) {
			*pp = m->next;
			free(m->host);
			free(m->dir);
			free(m);
		} else {
			pp = &m->next;
		}
	}
}

bool_t mountproc3_null_3_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	(void)rq;
	return TRUE;
}

bool_t mountproc3_mnt_3_svc(dirpath *a, mountres3 *r, struct svc_req *rq)
{
	memset(r, 0, sizeof(*r));
	const struct nfs3d_export *e = &nfs3d->exp;
	char *real = realpath(*a, NULL);
	if (!real) {
		r->fhs_status = errno == ENAMETOOLONG ? MNT3ERR_NAMETOOLONG : MNT3ERR_NOENT;
		return TRUE;
	}
	size_t n = strlen(e->path);
	bool inside = strncmp(real, e->path, n) == 0 &&
		      (real[n] == 0 || real[n] == '/' || strcmp(e->path, "/") == 0);
	nfs_fh3 fh = { { 0, NULL } };
	nfsstat3 s = inside ? nfs3d_fh_of(e, AT_FDCWD, real, &fh) : NFS3ERR_ACCES;
	struct stat st;
	if (s == NFS3_OK && (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)))
		s = NFS3ERR_NOTDIR;
	switch (s) {
	case NFS3_OK:
		break;
	case NFS3ERR_ACCES:
		/* §5.2.1: MNT3ERR_ACCES, not exported to anyone. */
		r->fhs_status = MNT3ERR_ACCES;
		break;
	case NFS3ERR_NOTDIR:
		r->fhs_status = MNT3ERR_NOTDIR;
		break;
	default:
		r->fhs_status = MNT3ERR_SERVERFAULT;
		break;
	}
	if (s != NFS3_OK) {
		nfs3d_fh_free(&fh);
		free(real);
		return TRUE;
	}
	mountres3_ok *ok = &r->mountres3_u.mountinfo;
	ok->fhandle.fhandle3_len = fh.data.data_len;
	ok->fhandle.fhandle3_val = fh.data.data_val;
	ok->auth_flavors.auth_flavors_val = malloc(sizeof(int));
	if (ok->auth_flavors.auth_flavors_val) {
		ok->auth_flavors.auth_flavors_len = 1;
		ok->auth_flavors.auth_flavors_val[0] = AUTH_SYS;
	}
	char host[INET6_ADDRSTRLEN];
	caller(rq, host, sizeof(host));
	forget(host, real);
	struct mounted *m = calloc(1, sizeof(*m));
	if (m && (m->host = strdup(host)) && (m->dir = strdup(real))) {
		m->next = mounts;
		mounts = m;
	} else if (m) {
		free(m->host);
		free(m);
	}
	nfs3d->ctr.mnt++;
	free(real);
	return TRUE;
}

bool_t mountproc3_dump_3_svc(void *a, mountlist *r, struct svc_req *rq)
{
	(void)a;
	(void)rq;
	*r = NULL;
	mountlist *tail = r;
	for (struct mounted *m = mounts; m; m = m->next) {
		struct mountbody *b = calloc(1, sizeof(*b));
		if (!b)
			break;
		b->ml_hostname = strdup(m->host);
		b->ml_directory = strdup(m->dir);
		*tail = b;
		tail = &b->ml_next;
		if (!b->ml_hostname || !b->ml_directory)
			break;
	}
	return TRUE;
}

bool_t mountproc3_umnt_3_svc(dirpath *a, void *r, struct svc_req *rq)
{
	(void)r;
	char host[INET6_ADDRSTRLEN];
	caller(rq, host, sizeof(host));
	char *real = realpath(*a, NULL);
	forget(host, real ? real : *a);
	free(real);
	nfs3d->ctr.umnt++;
	return TRUE;
}

bool_t mountproc3_umntall_3_svc(void *a, void *r, struct svc_req *rq)
{
	(void)a;
	(void)r;
	char host[INET6_ADDRSTRLEN];
	caller(rq, host, sizeof(host));
	forget(host, NULL);
	return TRUE;
}

bool_t mountproc3_export_3_svc(void *a, exports *r, struct svc_req *rq)
{
	(void)a;
	(void)rq;
	/* One export, to every host: an empty group list (§5.2.5). */
	struct exportnode *n = calloc(1, sizeof(*n));
	if (n && !(n->ex_dir = strdup(nfs3d->exp.path))) {
		free(n);
		n = NULL;
	}
	*r = n;
	return TRUE;
}

int mount_program_3_freeresult(SVCXPRT *x, xdrproc_t f, caddr_t res)
{
	(void)x;
	xdr_free(f, res);
	return 1;
}

void nfs3d_mount_forget_all(void)
{
	while (mounts) {
		struct mounted *m = mounts;
		mounts = m->next;
		free(m->host);
		free(m->dir);
		free(m);
	}
}
