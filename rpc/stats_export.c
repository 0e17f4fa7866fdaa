/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The counters of every client and server of the process, for another
 * process to read (rpcrdma-stat(1)); the mechanism and the format are in
 * rpc/stats_export.h.  A client or server registers itself when created
 * and unregisters first thing when destroyed; the first registration
 * opens the socket, the last closes it.  The loop threads serve it
 * (loop.c hands a readable socket to rpcrdma_rpc_stats_serve).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"
#include "rpc/stats_export.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rpc_stat_src *sources;
static int listen_fd = -1;
static pid_t listen_pid;
static uint64_t since_ms;

/* The field table, from the list kept beside the struct. */
#define FIELD(n, cnt)                                                      \
	{#n, offsetof(struct rpcrdma_stats, n),                            \
	 sizeof(((struct rpcrdma_stats *)0)->n) / (cnt), cnt},
static const struct rpcrdma_statx_field fields[] = {
	RPCRDMA_STATS_FIELDS(FIELD)
};
#undef FIELD

const struct rpcrdma_statx_field *rpcrdma_rpc_stats_fields(unsigned *n)
{
	*n = sizeof fields / sizeof fields[0];
	return fields;
}

static int open_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "%s%ld",
			 RPCRDMA_STATX_SOCKET, (long)getpid());
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    (size_t)n);
	if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 8) != 0) {
		/* Taken (another copy of the library in this process):
		 * that one serves; these counters are not exported. */
		rpcrdma_rpc_trace("counters not exported: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A loop serves the socket while one of its owners is registered: the
 * client loops are shared by many clients (clnt.c), so it is counted. */
static void loop_watch(struct rpc_loop *l, bool on)
{
	if (!l || l->epfd < 0 || listen_fd < 0)
		return;
	if (on) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE,
					 .data.ptr = &rpcrdma_rpc_stats_tag};
		if (l->stat_watchers++ == 0)
			epoll_ctl(l->epfd, EPOLL_CTL_ADD, listen_fd, &ev);
	} else if (l->stat_watchers && --l->stat_watchers == 0) {
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, listen_fd, NULL);
	}
}

char rpcrdma_rpc_stats_tag;

void rpcrdma_rpc_stats_register(struct rpc_stat_src *src)
{
	pthread_mutex_lock(&reg_lock);
	if (listen_fd >= 0 && listen_pid != getpid()) {
		/* A forked child: the socket is its parent's. */
		close(listen_fd);
		listen_fd = -1;
		/* The parent's sources are not this process's to list. */
		for (struct rpc_stat_src *p = sources, *nx; p; p = nx) {
			nx = p->next;
			p->pprev = NULL;
		}
		sources = NULL;
	}
	if (listen_fd < 0 && !sources) {
		listen_fd = open_socket();
		listen_pid = getpid();
		since_ms = rpcrdma_rpc_now_ms();
	}
	src->next = sources;
	if (sources)
		sources->pprev = &src->next;
	src->pprev = &sources;
	sources = src;
	loop_watch(src->loop, true);
	pthread_mutex_unlock(&reg_lock);
}

void rpcrdma_rpc_stats_unregister(struct rpc_stat_src *src)
{
	pthread_mutex_lock(&reg_lock);
	/* Without a walk: a process with thousands of clients destroys
	 * them one by one, and a walk for each made its teardown O(N²)
	 * (docs/SCALE.md, "Connection storms"). */
	if (src->pprev) {
		*src->pprev = src->next;
		if (src->next)
			src->next->pprev = src->pprev;
		src->pprev = NULL;
		src->next = NULL;
		loop_watch(src->loop, false);
	}
	if (!sources && listen_fd >= 0) {
		close(listen_fd);
		listen_fd = -1;
	}
	pthread_mutex_unlock(&reg_lock);
}

/* ---------------------------------------------------------------------
 * The snapshot
 */
struct snap {
	FILE *f;
	uint32_t n;
	uint32_t owner;
	const char *provider;
};

static void put_entry(struct snap *sn, uint32_t kind, uint32_t owner,
		      uint32_t prog, uint32_t vers, uint32_t live,
		      const char *name, const struct rpcrdma_stats *st)
{
	struct rpcrdma_statx_entry e;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.owner = owner;
	e.prog = prog;
	e.vers = vers;
	e.live = live;
	snprintf(e.name, sizeof e.name, "%s", name);
	snprintf(e.provider, sizeof e.provider, "%s", sn->provider);
	fwrite(&e, sizeof e, 1, sn->f);
	fwrite(st, sizeof *st, 1, sn->f);
	sn->n++;
}

static void put_conn(void *ctx, struct rpc_xprt *x)
{
	struct snap *sn = ctx;
	struct rpcrdma_stats st;
	memset(&st, 0, sizeof st);
	rpcrdma_rpc_xprt_add_stats(x, &st);
	pthread_mutex_lock(&x->lock);
	bool live = x->connected && !x->dead;
	/* credits_granted is a client's (the server's grant to it), as in
	 * rpcrdma_svc_stats(). */
	if (x->server)
		st.credits_granted = 0;
	char name[64];
	memcpy(name, x->name, sizeof name);
	pthread_mutex_unlock(&x->lock);
	put_entry(sn, RPCRDMA_STATX_CONN, sn->owner, 0, 0, live, name, &st);
}

/* With reg_lock held: the snapshot in a sealed memfd, or -1. */
static int snapshot(void)
{
	int fd = memfd_create("rpcrdma-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(dup(fd), "w");
	if (!f) {
		close(fd);
		return -1;
	}
	unsigned nf;
	const struct rpcrdma_statx_field *tab = rpcrdma_rpc_stats_fields(&nf);
	struct rpcrdma_statx_hdr h;
	memset(&h, 0, sizeof h);
	fwrite(&h, sizeof h, 1, f); /* counts filled in at the end */
	fwrite(tab, sizeof *tab, nf, f);
	struct snap sn = {.f = f};
	for (struct rpc_stat_src *s = sources; s; s = s->next) {
		struct rpcrdma_stats st;
		memset(&st, 0, sizeof st);
		unsigned live = s->total(s->obj, &st);
		sn.owner = sn.n;
		sn.provider = s->provider;
		put_entry(&sn, s->kind, sn.owner, s->prog, s->vers, live,
			  s->name, &st);
		if (s->kind == RPCRDMA_STATX_SERVER)
			s->each(s->obj, put_conn, &sn);
	}
	memcpy(h.magic, RPCRDMA_STATX_MAGIC, sizeof h.magic);
	h.version = RPCRDMA_STATX_VERSION;
	h.hdr_size = sizeof h;
	h.field_size = sizeof *tab;
	h.entry_size = sizeof(struct rpcrdma_statx_entry);
	h.stats_size = sizeof(struct rpcrdma_stats);
	h.nfields = nf;
	h.nentries = sn.n;
	h.pid = (uint32_t)getpid();
	h.uptime_ms = rpcrdma_rpc_now_ms() - since_ms;
	snprintf(h.lib_version, sizeof h.lib_version, "%s", RPCRDMA_VERSION_STRING);
	char comm[17] = "";
	prctl(PR_GET_NAME, comm);
	memcpy(h.comm, comm, sizeof h.comm);
	bool ok = fseek(f, 0, SEEK_SET) == 0 && fwrite(&h, sizeof h, 1, f) == 1;
	ok = fclose(f) == 0 && ok;
	/* The reader sees exactly this: no later write can change it. */
	if (!ok || fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW |
					  F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void rpcrdma_rpc_stats_serve(void)
{
	pthread_mutex_lock(&reg_lock);
	for (;;) {
		int c = listen_fd >= 0 ? accept4(listen_fd, NULL, NULL,
						 SOCK_NONBLOCK | SOCK_CLOEXEC)
				       : -1;
		if (c < 0)
			break;
		/* The same user as the program, or root: counters name
		 * the peers the program talks to. */
		struct ucred cr;
		socklen_t cl = sizeof cr;
		int fd = -1;
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 &&
		    (cr.uid == 0 || cr.uid == geteuid()))
			fd = snapshot();
		if (fd >= 0) {
			char byte = 'S';
			struct iovec iov = {&byte, 1};
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int))];
			} u;
			memset(&u, 0, sizeof u);
			struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
					   .msg_control = u.buf,
					   .msg_controllen = sizeof u.buf};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof fd);
			ssize_t r = sendmsg(c, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
			(void)r;
			close(fd);
		}
		close(c);
	}
	pthread_mutex_unlock(&reg_lock);
}
