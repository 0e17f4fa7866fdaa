/*
 * Who a request is served as (RFC 1813 §4.4 "Permission issues"; AUTH_SYS
 * is RFC 5531 Appendix A).
 *
 * A simple userspace server's choice, made with --auth:
 *   trust        the AUTH_SYS uid, gid and groups as the client sent them,
 *                root included (Linux exports' no_root_squash);
 *   root-squash  the same, but uid 0 becomes the anonymous user (the
 *                Linux default, root_squash);
 *   squash       every caller is the anonymous user (all_squash).
 * AUTH_NONE callers are anonymous under every policy.  The anonymous user
 * is --anonuid/--anongid (default 65534, "nobody").
 *
 * The kernel enforces permissions: for each request the serving thread
 * takes the caller's identity as its file-system uid and gid
 * (setfsuid/setfsgid, which touch only file access checks) and its
 * supplementary groups (the raw setgroups system call: per thread, where
 * glibc's setgroups() would signal every thread of the process), and goes
 * back to the server's own (root) afterwards.  That needs root; a server
 * started by another user serves everyone as itself and says so.
 */
#include <grp.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nfs3d.h"

static struct nfs3d_cred current;
static bool switched; /* serving as current (not as ourselves) */

static void anon(const struct nfs3d_cred_policy *p, struct nfs3d_cred *out)
{
	memset(out, 0, sizeof(*out));
	out->uid = p->anon_uid;
	out->gid = p->anon_gid;
}

void nfs3d_cred_of(const struct nfs3d_cred_policy *p, const struct svc_req *rq,
		   struct nfs3d_cred *out)
{
	const struct authunix_parms *a = rq->rq_cred.oa_flavor == AUTH_SYS
						 ? (const struct authunix_parms *)rq->rq_clntcred
						 : NULL;
	if (!a || p->policy == NFS3D_AUTH_SQUASH ||
	    (p->policy == NFS3D_AUTH_ROOT_SQUASH && a->aup_uid == 0)) {
		anon(p, out);
		return;
	}
	memset(out, 0, sizeof(*out));
	out->uid = a->aup_uid;
	out->gid = a->aup_gid;
	/* RFC 5531 Appendix A: at most 16 groups (libtirpc refused more). */
	out->ngids = a->aup_len < 16 ? a->aup_len : 16;
	for (unsigned i = 0; i < out->ngids; i++)
		out->gids[i] = a->aup_gids[i];
}

void nfs3d_cred_enter(const struct nfs3d_cred_policy *p, const struct nfs3d_cred *c)
{
	if (!p->can_switch) {
		nfs3d_cred_leave(p); /* served as ourselves */
		return;
	}
	current = *c;
	syscall(SYS_setgroups, (int)c->ngids, c->gids);
	setfsgid(c->gid);
	setfsuid(c->uid);
	switched = true;
}

void nfs3d_cred_suspend(void)
{
	if (switched) {
		setfsuid(0);
		setfsgid(0);
	}
}

void nfs3d_cred_resume(void)
{
	if (switched) {
		setfsgid(current.gid);
		setfsuid(current.uid);
	}
}

void nfs3d_cred_leave(const struct nfs3d_cred_policy *p)
{
	if (p->can_switch) {
		/* Back to uid 0 first: the file-system capabilities come
		 * back with it (capabilities(7), "Effect of user ID
		 * changes"), then the groups may change again. */
		setfsuid(0);
		setfsgid(0);
		syscall(SYS_setgroups, 0, NULL);
	}
	switched = false;
	memset(&current, 0, sizeof(current));
	current.uid = geteuid();
	current.gid = getegid();
}

const struct nfs3d_cred *nfs3d_cred_current(void)
{
	return &current;
}

int nfs3d_auth_policy_parse(const char *s, enum nfs3d_auth_policy *out)
{
	if (strcmp(s, "trust") == 0)
		*out = NFS3D_AUTH_TRUST;
	else if (strcmp(s, "root-squash") == 0)
		*out = NFS3D_AUTH_ROOT_SQUASH;
	else if (strcmp(s, "squash") == 0)
		*out = NFS3D_AUTH_SQUASH;
	else
		return -1;
	return 0;
}
