/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
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
 * The kernel enforces permissions: a procedure runs with the caller's
 * identity as its thread's file-system uid and gid (setfsuid/setfsgid,
 * which touch only file access checks) and supplementary groups (the raw
 * setgroups system call: per thread, where glibc's setgroups() would
 * signal every thread of the process), and the thread goes back to the
 * server's own (root) afterwards.  That needs root; a server started by
 * another user serves everyone as itself and says so.
 *
 * Not on the thread that runs svc_run(): the adapter posts work requests
 * and polls completions there, and the kernel refuses uverbs and rdma_cm
 * write() commands from a thread whose credentials are no longer the ones
 * the device was opened with ("changed security contexts after opening
 * file descriptor", ib_safe_file_access) — even changed and changed back,
 * it is a new credential — and Soft-RoCE and siw post by write().  So a
 * procedure for anyone but root runs on the identity thread below, and
 * svc_run()'s thread never changes who it is.  Root callers (uid and gid
 * 0: the server's own identity, which may do anything) are served in
 * place, with no hand-off.
 */
#include <grp.h>
#include <pthread.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nfs3d.h"

/* Per thread: the identity being served, and whether the thread's own
 * credentials were changed to it. */
static _Thread_local struct nfs3d_cred current;
static _Thread_local bool switched;

/* The server's own identity: read once.  Nothing here changes it (an
 * identity switch is setfsuid/setfsgid on the identity thread, which
 * leave the effective ids alone), and geteuid()/getegid() are system
 * calls, two per request when they were made for each. */
static uid_t self_uid;
static gid_t self_gid;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_read(void)
{
	self_uid = geteuid();
	self_gid = getegid();
}

/* Who this thread serves as when it serves as itself: bookkeeping only,
 * no system call (this thread's credentials must stay as they are). */
static void as_ourselves(void)
{
	pthread_once(&self_once, self_read);
	memset(&current, 0, sizeof(current));
	current.uid = self_uid;
	current.gid = self_gid;
}

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

static void cred_leave(const struct nfs3d_cred_policy *p);

/* Serve as c on this thread (the identity thread's). */
static void cred_enter(const struct nfs3d_cred_policy *p, const struct nfs3d_cred *c)
{
	if (!p->can_switch) {
		cred_leave(p); /* served as ourselves */
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

/* Back to the server's own identity on this thread. */
static void cred_leave(const struct nfs3d_cred_policy *p)
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
	as_ourselves();
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

/* ---------------------------------------------------------------------
 * The identity thread
 */
struct job {
	bool_t (*fn)(void *, void *, struct svc_req *);
	void *args, *res;
	struct svc_req *rq;
	struct nfs3d_cred cred;
	bool done;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_t thread;
	const struct nfs3d_cred_policy *policy;
	struct job *job;
	bool running, stopping;
} idt = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *identity_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idt.lock);
	for (;;) {
		while (!idt.job && !idt.stopping)
			pthread_cond_wait(&idt.cv, &idt.lock);
		struct job *j = idt.job;
		if (!j)
			break;
		pthread_mutex_unlock(&idt.lock);
		cred_enter(idt.policy, &j->cred);
		j->fn(j->args, j->res, j->rq);
		cred_leave(idt.policy);
		pthread_mutex_lock(&idt.lock);
		j->done = true;
		idt.job = NULL;
		pthread_cond_broadcast(&idt.cv);
	}
	pthread_mutex_unlock(&idt.lock);
	return NULL;
}

int nfs3d_cred_start(const struct nfs3d_cred_policy *p)
{
	as_ourselves();
	if (!p->can_switch)
		return 0; /* everyone is served as ourselves, in place */
	idt.policy = p;
	if (pthread_create(&idt.thread, NULL, identity_main, NULL) != 0)
		return -1;
	idt.running = true;
	return 0;
}

void nfs3d_cred_stop(void)
{
	if (!idt.running)
		return;
	pthread_mutex_lock(&idt.lock);
	idt.stopping = true;
	pthread_cond_broadcast(&idt.cv);
	pthread_mutex_unlock(&idt.lock);
	pthread_join(idt.thread, NULL);
	idt.running = false;
}

void nfs3d_cred_run(const struct nfs3d_cred_policy *p, const struct nfs3d_cred *c,
		    bool_t (*fn)(void *, void *, struct svc_req *),
		    void *args, void *res, struct svc_req *rq)
{
	if (!idt.running || (c->uid == 0 && c->gid == 0)) {
		/* As ourselves, without a system call: root (or, not being
		 * root, whoever we are). */
		if (p->can_switch)
			current = *c;
		else
			as_ourselves();
		fn(args, res, rq);
		as_ourselves();
		return;
	}
	struct job j = { fn, args, res, rq, *c, false };
	pthread_mutex_lock(&idt.lock);
	while (idt.job) /* one serving thread: never, but stay correct */
		pthread_cond_wait(&idt.cv, &idt.lock);
	idt.job = &j;
	pthread_cond_broadcast(&idt.cv);
	while (!j.done)
		pthread_cond_wait(&idt.cv, &idt.lock);
	pthread_mutex_unlock(&idt.lock);
}
