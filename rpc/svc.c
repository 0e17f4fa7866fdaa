/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The RPC server: a listener, any number of connections (one engine
 * each) spread over poll groups (opts.threads; one per CPU by default):
 * an event-loop thread each, which attends, ticks and reaps its own
 * connections, none of them on a timer of its own.  A new connection
 * goes to the group with the fewest.  Handlers run on the thread that
 * takes each call, or on a worker pool (dispatch.c).
 *
 * Accepting: on CONNECT_REQUEST the connection's QP and engine are created
 * and the engine is told the connection is up (with the client's RFC 8797
 * private data) BEFORE accept, so its receives are posted before the
 * client can send: a Send arriving with no posted receive is fatal to an
 * RDMA connection (RFC 8166 §3.3.1 and the rdma-core habit).
 * A connection that ends is reaped by the loop once no request or
 * reverse-direction handle refers to it.
 *
 * Limits (rpcrdma(7), DIAGNOSTICS): a connection beyond max_connections,
 * one that would take the memory the connections hold past max_memory,
 * and one the server has no resources for (file descriptors, memory) is
 * refused with a reject whose private data says why (reject.c).  Each
 * limit is logged on stderr once per episode: when it is first hit, and
 * when a connection is accepted again (with how many were refused
 * meanwhile); RPCRDMA_DEBUG traces every refusal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "rpc/conn_by_id.h"
#include "rpc/rpc_internal.h"
#include "rpc/stats_export.h"
#include "rpcrdma/export.h"

struct rpcrdma_svc {
	struct rpcrdma_opts opts;
	struct rpc_dev rd;
	/* The poll groups (opts.threads): one loop thread each, with the
	 * connections it attends, ticks and reaps.  loops[0] also takes
	 * the CM events (the listener's and every connection's). */
	struct rpc_loop *loops;
	unsigned nloops;
	unsigned *nconns;            /* connections in each (list_lock) */
	struct rpcrdma_cm_id *listen_id;
	char name[64];               /* the listening address */
	uint16_t port;
	struct rpc_disp *disp;
	/* Guards every loop's list of connections (loops[0]'s thread
	 * links, each loop's thread unlinks its own) against the readers
	 * (rpcrdma_svc_stats(), CM events), and the counters of reaped
	 * connections. */
	pthread_mutex_t list_lock;
	struct rpc_conn_by_id by_id;  /* every listed connection (list_lock) */
	struct rpcrdma_stats reaped;
	struct rpc_stat_src stat_src; /* exported (stats_export.c) */
	bool exported;
	/* Limits being hit (the loop thread's: svc_accept): an episode
	 * starts at the first refusal and ends at the next accept. */
	bool lim_on[3];
	uint64_t lim_refused[3];
};

/* Every connection of every poll group: with list_lock held, or on the
 * destroying thread once the loops have stopped. */
#define SVC_FOR_EACH_XPRT(s, x)                                           \
	for (unsigned g_ = 0; g_ < (s)->nloops; g_++)                      \
		for (struct rpc_xprt *x = (s)->loops[g_].xprts; x; x = x->next)

enum svc_limit { LIM_CONNECTIONS, LIM_MEMORY, LIM_RESOURCES };
static const char *const lim_name[] = {
	"max_connections", "max_memory", "out of resources",
};

static unsigned svc_total(void *obj, struct rpcrdma_stats *all);
static void svc_each(void *obj, void (*fn)(void *, struct rpc_xprt *),
		     void *ctx);

/* What a connection of this server holds, as max_memory counts it: the
 * engine's receive and send buffers (allocated and registered for its
 * whole life: rpcrdma_engine_buffer_bytes, configured as
 * rpcrdma_rpc_xprt_create configures a server's) and its request records
 * (one per Responder slot, twice the credits).  Not counted: the QP and
 * CQ of the provider (and what the kernel holds for them), the
 * registered buffers shared by every connection (buf_pool.c), the
 * arguments and results of calls in progress. */
static uint64_t conn_bytes(const struct rpcrdma_opts *o)
{
	struct rpcrdma_engine_config cfg;
	rpcrdma_engine_config_default(&cfg);
	cfg.max_calls = o->backchannel_credits;
	cfg.credits = o->credits;
	cfg.max_inline_send = o->inline_send;
	cfg.max_inline_recv = o->inline_recv;
	return rpcrdma_engine_buffer_bytes(&cfg) +
	       2ull * o->credits * sizeof(struct rpcrdma_svc_req);
}

/* The connections up, and the bytes every connection not yet reaped
 * holds (conn_bytes, and its reply region, max_msg, once registered: a
 * callback with results was made on it).  (list_lock then x->lock, as
 * rpcrdma_svc_stats takes them.) */
static void svc_count(struct rpcrdma_svc *s, unsigned *live, uint64_t *bytes)
{
	uint64_t per = conn_bytes(&s->opts);
	*live = 0;
	*bytes = 0;
	pthread_mutex_lock(&s->list_lock);
	SVC_FOR_EACH_XPRT(s, x) {
		pthread_mutex_lock(&x->lock);
		*live += !x->dead;
		pthread_mutex_unlock(&x->lock);
		*bytes += per + (uint64_t)rpcrdma_rpc_region_registrations(x->rr) *
					s->opts.max_msg;
	}
	pthread_mutex_unlock(&s->list_lock);
}

/* One line on stderr, whatever RPCRDMA_DEBUG says: a server at a limit
 * must say so. */
static void svc_log(const struct rpcrdma_svc *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void svc_log(const struct rpcrdma_svc *s, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	rpcrdma_rpc_log("server %s: %s", s->name, msg);
}

/* Refuses the connection request of ev because of limit lim: a reject
 * whose private data says `why` (short: it travels), the limit logged
 * if this starts its episode (`detail`: the numbers), every refusal
 * traced, counted in connections_refused. */
static void svc_refuse(struct rpcrdma_svc *s, struct rpcrdma_cm_id *id,
		       enum svc_limit lim, const char *why, const char *detail)
{
	char who[64];
	uint8_t pd[4 + RPC_REJECT_TEXT_MAX];
	rpcrdma_rpc_addr_str(&id->peer_addr, who, sizeof who);
	if (!s->lim_on[lim]) {
		s->lim_on[lim] = true;
		s->lim_refused[lim] = 0;
		svc_log(s, "%s; refusing connections (said once, until one is "
			   "accepted again)", detail);
	}
	s->lim_refused[lim]++;
	rpcrdma_rpc_trace("%s: refused: %s", who, detail);
	int pl = rpcrdma_rpc_reject_pdata(why, pd, sizeof pd);
	s->rd.ops->reject(id, pl > 0 ? pd : NULL, pl > 0 ? (uint8_t)pl : 0);
	pthread_mutex_lock(&s->list_lock);
	s->reaped.connections_refused++;
	pthread_mutex_unlock(&s->list_lock);
}

/* A connection was accepted: every limit's episode is over. */
static void svc_limits_clear(struct rpcrdma_svc *s)
{
	for (unsigned k = 0; k < sizeof s->lim_on / sizeof s->lim_on[0]; k++)
		if (s->lim_on[k]) {
			s->lim_on[k] = false;
			svc_log(s, "accepting connections again (%llu refused: "
				   "%s)",
				(unsigned long long)s->lim_refused[k],
				lim_name[k]);
		}
}

/* The server could not set up a connection (rc): why, with the
 * open-file limit when it is out of descriptors. */
static void svc_refuse_resources(struct rpcrdma_svc *s,
				 struct rpcrdma_cm_id *id, int rc, int err)
{
	char why[RPC_REJECT_TEXT_MAX + 1], detail[256];
	if (rc == RPCRDMA_ERR_SYSTEM && (err == EMFILE || err == ENFILE)) {
		struct rlimit rl = {0, 0};
		getrlimit(RLIMIT_NOFILE, &rl);
		snprintf(why, sizeof why, "server out of file descriptors");
		snprintf(detail, sizeof detail,
			 "cannot set up a connection: out of file descriptors "
			 "(%s; open-file limit %llu)",
			 err == EMFILE ? "EMFILE" : "ENFILE",
			 (unsigned long long)rl.rlim_cur);
	} else {
		snprintf(why, sizeof why, "server out of resources: %s",
			 rpcrdma_strerror(rc));
		snprintf(detail, sizeof detail,
			 "cannot set up a connection: %s%s%s",
			 rpcrdma_strerror(rc), rc == RPCRDMA_ERR_SYSTEM ? ": " : "",
			 rc == RPCRDMA_ERR_SYSTEM ? strerror(err) : "");
	}
	svc_refuse(s, id, LIM_RESOURCES, why, detail);
}

/* Unregisters x from its loop and frees it: on that loop's thread, or
 * once it has stopped (epoll data and the loop's hot list name x until
 * then).  svc_run() may be attending the loop's set with x's datum in
 * hand: wait for that pass to end. */
static void reap(struct rpc_xprt *x)
{
	struct rpc_loop *l = x->loop;
	rpcrdma_rpc_loop_remove(l, x);
	rpcrdma_rpc_loop_external_quiesce(l);
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_xprt_quiesce_locked(x);
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_xprt_destroy(x);
}

/* A server's connection is Responder and, for reverse-direction calls
 * (RFC 8167), Requester. */
static const struct rpc_role *const roles[RPC_ROLES] = {
	[RPC_REQUESTER] = &rpcrdma_rpc_requester_role,
	[RPC_RESPONDER] = &rpcrdma_rpc_responder_role,
};

static void svc_accept(struct rpcrdma_svc *s, struct rpcrdma_cm_event *ev)
{
	const struct rpcrdma_provider_ops *ops = s->rd.ops;
	struct rpc_xprt *x = NULL;
	uint8_t pd[16];
	int rc;

	/* A reject, not a silent close: the client reports
	 * RPCRDMA_ERR_CONNREFUSED at once (iwarp: an MPA Reply with R set,
	 * RFC 5044 §7.1.2 rule 2; verbs: rdma_reject), and the reason. */
	unsigned live = 0;
	uint64_t held = 0;
	char why[RPC_REJECT_TEXT_MAX + 1], detail[256];
	if (s->opts.max_connections || s->opts.max_memory)
		svc_count(s, &live, &held);
	if (s->opts.max_connections && live >= s->opts.max_connections) {
		snprintf(why, sizeof why,
			 "max_connections: the server has %u connections open",
			 live);
		snprintf(detail, sizeof detail,
			 "%u connections open (max_connections %u)", live,
			 s->opts.max_connections);
		svc_refuse(s, ev->id, LIM_CONNECTIONS, why, detail);
		ops->destroy_id(ev->id);
		return;
	}
	uint64_t need = conn_bytes(&s->opts);
	if (s->opts.max_memory && held + need > s->opts.max_memory) {
		snprintf(why, sizeof why,
			 "max_memory: the server's memory budget (%llu bytes) "
			 "is spent",
			 (unsigned long long)s->opts.max_memory);
		snprintf(detail, sizeof detail,
			 "memory budget reached (max_memory %llu bytes): %u "
			 "connections hold %llu bytes, a new one needs %llu",
			 (unsigned long long)s->opts.max_memory, live,
			 (unsigned long long)held, (unsigned long long)need);
		svc_refuse(s, ev->id, LIM_MEMORY, why, detail);
		ops->destroy_id(ev->id);
		return;
	}

	errno = 0;
	rc = rpcrdma_rpc_xprt_create(&s->rd, &s->opts, true, false, ev->id,
				     roles, &x);
	if (rc < 0) {
		svc_refuse_resources(s, ev->id, rc, errno);
		ops->destroy_id(ev->id);
		return;
	}
	pthread_mutex_lock(&x->lock);
	rpcrdma_rpc_disp_attach_locked(x, s->disp);
	pthread_mutex_unlock(&x->lock);
	/* The poll group with the fewest connections: its thread attends
	 * x from now on, and its handlers run there (workers 0). */
	unsigned g = 0;
	pthread_mutex_lock(&s->list_lock);
	for (unsigned k = 1; k < s->nloops; k++)
		if (s->nconns[k] < s->nconns[g])
			g = k;
	pthread_mutex_unlock(&s->list_lock);
	x->loop = &s->loops[g];
	errno = 0;
	if (rpcrdma_rpc_loop_add(x->loop, x) < 0) {
		svc_refuse_resources(s, x->id, RPCRDMA_ERR_SYSTEM, errno);
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
		rpcrdma_rpc_xprt_destroy(x);
		return;
	}
	/* Listed before the accept: from then on its group's thread may
	 * serve it (and the stats must count it) while this thread is
	 * still here; the reference keeps that thread from reaping it. */
	rpcrdma_rpc_xprt_get(x);
	pthread_mutex_lock(&s->list_lock);
	rpcrdma_rpc_loop_link_locked(&s->loops[g], x);
	rpcrdma_rpc_conn_by_id_add(&s->by_id, x);
	s->nconns[g]++;
	pthread_mutex_unlock(&s->list_lock);
	uint32_t ord = x->ord;
	if (ev->responder_resources && ev->responder_resources < ord)
		ord = ev->responder_resources;
	int pl = rpcrdma_rpc_xprt_pdata(x, pd, sizeof(pd));
	rc = pl < 0 ? pl
		    : rpcrdma_rpc_xprt_established(x, ev->private_data,
						   ev->private_data_len, ord);
	if (rc == 0) {
		struct rpcrdma_conn_param cp = {
			.private_data = pd, .private_data_len = (uint8_t)pl,
			.responder_resources = (uint8_t)x->ird,
			.initiator_depth = (uint8_t)ord,
		};
		rc = ops->accept(x->id, &cp);
	}
	if (rc < 0) {
		/* Its group's thread reaps it (it may be looking at it). */
		ops->reject(x->id, NULL, 0);
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
	}
	rpcrdma_rpc_xprt_put(x);
	if (rc == 0)
		svc_limits_clear(s);
}

/* The connection of a cm_id in any poll group, with a reference (its
 * loop cannot reap it meanwhile), or NULL. */
static struct rpc_xprt *svc_find(struct rpcrdma_svc *s,
				 const struct rpcrdma_cm_id *id)
{
	struct rpc_xprt *x = NULL;
	pthread_mutex_lock(&s->list_lock);
	x = rpcrdma_rpc_conn_by_id_find(&s->by_id, id);
	if (x)
		rpcrdma_rpc_xprt_get(x);
	pthread_mutex_unlock(&s->list_lock);
	return x;
}

/* The name of id's connection, for the loop's lines about its CM
 * events (rpc_cm_src.name). */
static bool svc_cm_name(void *owner, const struct rpcrdma_cm_id *id,
			char *buf, size_t cap)
{
	struct rpcrdma_svc *s = owner;
	pthread_mutex_lock(&s->list_lock);
	struct rpc_xprt *x = rpcrdma_rpc_conn_by_id_find(&s->by_id, id);
	if (x)
		snprintf(buf, cap, "%s", x->name);
	pthread_mutex_unlock(&s->list_lock);
	return x != NULL;
}

static void svc_on_cm(void *owner, struct rpcrdma_cm_event *ev)
{
	struct rpcrdma_svc *s = owner;
	struct rpc_xprt *x;

	if (ev->type == RPCRDMA_CM_EVENT_CONNECT_REQUEST) {
		svc_accept(s, ev);
		return;
	}
	x = svc_find(s, ev->id);
	if (!x)
		return;
	switch (ev->type) {
	case RPCRDMA_CM_EVENT_ESTABLISHED:
		break;
	case RPCRDMA_CM_EVENT_DISCONNECTED:
	case RPCRDMA_CM_EVENT_DEVICE_REMOVAL:
	case RPCRDMA_CM_EVENT_CONNECT_ERROR:
	case RPCRDMA_CM_EVENT_UNREACHABLE:
	case RPCRDMA_CM_EVENT_REJECTED:
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
		break;
	default:
		break;
	}
	rpcrdma_rpc_xprt_put(x);
}

/* Reap the connections of loop l (on its thread) that are gone and no
 * longer referenced.  Under list_lock: a CM event's lookup (svc_find)
 * takes its reference under it too. */
static void svc_round(void *owner, struct rpc_loop *l)
{
	struct rpcrdma_svc *s = owner;
	struct rpc_xprt **pp = &l->xprts;

	pthread_mutex_lock(&s->list_lock);
	while (*pp) {
		struct rpc_xprt *x = *pp;
		pthread_mutex_lock(&x->lock);
		bool gone = rpc_xprt_reapable_locked(x);
		pthread_mutex_unlock(&x->lock);
		if (gone) {
			rpcrdma_rpc_loop_unlink_locked(x); /* *pp is now its next */
			rpcrdma_rpc_conn_by_id_del(&s->by_id, x);
			s->nconns[l - s->loops]--;
			rpcrdma_rpc_xprt_add_stats(x, &s->reaped);
			pthread_mutex_unlock(&s->list_lock);
			reap(x);
			rpcrdma_rpc_loop_reaped(l);
			pthread_mutex_lock(&s->list_lock);
		} else {
			pp = &x->next;
		}
	}
	pthread_mutex_unlock(&s->list_lock);
}

RPCRDMA_EXPORT int rpcrdma_svc_create(const char *listen_addr,
				      const struct rpcrdma_opts *opts,
				      struct rpcrdma_svc **out)
{
	return rpcrdma_rpc_svc_create(listen_addr, opts, false, out);
}

struct rpc_loop *rpcrdma_rpc_svc_loop(struct rpcrdma_svc *s)
{
	return &s->loops[0];
}

/* The listening id of s, on ss.  For port 0 the RDMA CM picks the port,
 * and may pick one in use (RPC_PORT_PICKS): any port will do, so it
 * picks again, each time with a new id (one whose listen failed is not
 * bound again).  A port asked for by number is that one or none. */
static int listen_on(struct rpcrdma_svc *s, const struct sockaddr_storage *ss,
		     socklen_t sl)
{
	for (int attempt = 0;; attempt++) {
		int rc = s->rd.ops->create_id(s->rd.ch, s, &s->listen_id);
		if (rc < 0)
			return rc;
		rc = s->rd.ops->listen(s->listen_id,
				       (const struct sockaddr *)ss, sl, 128);
		if (rc != RPCRDMA_ERR_BUSY || rpcrdma_rpc_addr_port(ss) ||
		    attempt + 1 == RPC_PORT_PICKS)
			return rc;
		s->rd.ops->destroy_id(s->listen_id);
		s->listen_id = NULL;
		rpcrdma_rpc_trace("listen on port 0: the port picked is in use, "
				  "trying again");
	}
}

static int svc_create(const char *listen_addr, const struct rpcrdma_opts *opts,
		      bool external, struct rpcrdma_svc **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc;

	if (!listen_addr || !out)
		return RPCRDMA_ERR_INVAL;
	*out = NULL;
	struct rpcrdma_svc *s = calloc(1, sizeof(*s));
	if (!s)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_init(&s->list_lock, NULL);
	rpcrdma_rpc_conn_by_id_init(&s->by_id);
	rc = rpcrdma_rpc_opts_fill(opts, &s->opts);
	if (rc < 0)
		goto fail;
	/* One poll group when svc_run() attends the connections. */
	unsigned nl = external ? 1 : rpcrdma_rpc_threads(&s->opts);
	s->loops = calloc(nl, sizeof(*s->loops));
	s->nconns = calloc(nl, sizeof(*s->nconns));
	if (!s->loops || !s->nconns) {
		rc = RPCRDMA_ERR_NOMEM;
		goto fail;
	}
	for (unsigned g = 0; g < nl; g++)
		s->loops[g].wakefd = -1;
	s->nloops = nl;
	rc = rpcrdma_rpc_parse_addr(listen_addr, &ss, &sl);
	if (rc < 0)
		goto fail;
	rc = rpcrdma_rpc_dev_open(&s->opts, &s->rd);
	if (rc < 0)
		goto fail;
	s->rd.budget.limit = s->opts.credit_budget;
	rc = listen_on(s, &ss, sl);
	if (rc < 0)
		goto fail;
	const struct sockaddr_storage *la = &s->listen_id->local_addr;
	rpcrdma_rpc_addr_str(la, s->name, sizeof s->name);
	rpcrdma_rpc_trace("%s: listening (%s provider, version%s %s)",
			  s->name, s->opts.provider,
			  s->opts.versions == RPCRDMA_PREFER_V2 ? "s" : "",
			  s->opts.versions == RPCRDMA_V1_ONLY ? "1"
			  : s->opts.versions == RPCRDMA_V2_ONLY ? "2" : "1 and 2");
	s->port = rpcrdma_rpc_addr_port(la);
	s->disp = rpcrdma_rpc_disp_create(s->opts.workers);
	if (!s->disp) {
		rc = RPCRDMA_ERR_NOMEM;
		goto fail;
	}
	for (unsigned g = 0; g < nl; g++) {
		struct rpc_loop *l = &s->loops[g];
		rc = rpcrdma_rpc_loop_init(l, &s->rd, g ? NULL : svc_on_cm,
					   svc_round, s);
		if (rc < 0)
			goto fail;
		l->xprts_lock = &s->list_lock;
		l->own_cm.name = svc_cm_name; /* before its thread starts */
		snprintf(l->name, sizeof l->name, "rpcrdma-pg%u", g % 1000);
		l->busy_poll_us = s->opts.busy_poll_us;
	}
	if (external && (rc = rpcrdma_rpc_loop_external(&s->loops[0])) < 0)
		goto fail;
	for (unsigned g = 0; g < nl; g++)
		if ((rc = rpcrdma_rpc_loop_start(&s->loops[g])) < 0)
			goto fail;
	rpcrdma_rpc_trace("%s: %u poll group%s", s->name, nl,
			  nl == 1 ? "" : "s");
	s->stat_src = (struct rpc_stat_src){
		.kind = RPCRDMA_STATX_SERVER, .obj = s, .loop = &s->loops[0],
		.total = svc_total, .each = svc_each,
	};
	snprintf(s->stat_src.name, sizeof s->stat_src.name, "%s", s->name);
	snprintf(s->stat_src.provider, sizeof s->stat_src.provider, "%s",
		 s->opts.provider);
	rpcrdma_rpc_stats_register(&s->stat_src);
	s->exported = true;
	*out = s;
	return 0;
fail:
	rpcrdma_svc_destroy(s);
	return rc;
}

/* Both servers' (rpcrdma_svc_create, svc_rdma_create): it starts and may
 * join threads, with cancellation held off (rpc_internal.h). */
int rpcrdma_rpc_svc_create(const char *listen_addr,
			   const struct rpcrdma_opts *opts, bool external,
			   struct rpcrdma_svc **out)
{
	int cancel = rpcrdma_rpc_cancel_hold();
	int rc = svc_create(listen_addr, opts, external, out);
	rpcrdma_rpc_cancel_restore(cancel);
	return rc;
}

RPCRDMA_EXPORT uint16_t rpcrdma_svc_port(const struct rpcrdma_svc *s)
{
	return s ? s->port : 0;
}

RPCRDMA_EXPORT int rpcrdma_svc_register(struct rpcrdma_svc *s, uint32_t prog,
					uint32_t vers, uint32_t proc,
					rpcrdma_svc_handler handler, void *arg,
					unsigned flags)
{
	if (!s)
		return RPCRDMA_ERR_INVAL;
	return rpcrdma_rpc_disp_register(s->disp, prog, vers, proc, handler, arg,
				 flags);
}

RPCRDMA_EXPORT int rpcrdma_svc_register_any(struct rpcrdma_svc *s,
					    rpcrdma_svc_handler handler,
					    void *arg)
{
	return rpcrdma_rpc_svc_register_any_flags(s, handler, arg, 0);
}

int rpcrdma_rpc_svc_register_any_flags(struct rpcrdma_svc *s,
				       rpcrdma_svc_handler handler, void *arg,
				       unsigned flags)
{
	if (!s || !handler)
		return RPCRDMA_ERR_INVAL;
	return rpcrdma_rpc_disp_register(s->disp, 0, 0, 0, handler, arg,
					 RPCRDMA_ULB_DDP_RESULT |
						 RPCRDMA_RPC_REG_ANY_PROG | flags);
}

static void svc_destroy(struct rpcrdma_svc *s)
{
	if (!s)
		return;
	const struct rpcrdma_provider_ops *ops = s->rd.ops;
	if (s->exported)
		rpcrdma_rpc_stats_unregister(&s->stat_src);
	for (unsigned g = 0; g < s->nloops; g++)
		rpcrdma_rpc_loop_stop(&s->loops[g]);
	if (s->listen_id)
		ops->destroy_id(s->listen_id);
	s->listen_id = NULL;
	/* Disconnect everything, give the peers a moment to see it, then
	 * unwind every engine so waiting handlers' replies fail fast. */
	unsigned live = 0;
	SVC_FOR_EACH_XPRT(s, x)
		if (!x->dead) {
			pthread_mutex_lock(&x->lock); /* qa.serial_lock */
			ops->disconnect(x->id);
			pthread_mutex_unlock(&x->lock);
			live++;
		}
	uint64_t end = rpcrdma_rpc_now_ms() + 1000;
	while (live && rpcrdma_rpc_now_ms() < end) {
		struct rpc_cm_ev ev;
		if (rpcrdma_rpc_wait_cm(&s->rd, 100, &ev) < 0)
			continue;
		struct rpc_xprt *x = svc_find(s, ev.id);
		if (!x)
			continue;
		if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED && !x->dead) {
			rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
			live--;
		}
		rpcrdma_rpc_xprt_put(x);
	}
	SVC_FOR_EACH_XPRT(s, x)
		rpcrdma_rpc_xprt_lost(x, RPCRDMA_ERR_DISCONNECTED);
	/* Handlers still queued run now; their replies find the
	 * connection gone. */
	rpcrdma_rpc_disp_destroy(s->disp);
	s->disp = NULL;
	for (unsigned g = 0; g < s->nloops; g++) {
		struct rpc_loop *l = &s->loops[g];
		while (l->xprts) {
			struct rpc_xprt *x = l->xprts;
			rpcrdma_rpc_loop_unlink_locked(x);
			rpcrdma_rpc_conn_by_id_del(&s->by_id, x);
			reap(x);
		}
		if (l->wakefd >= 0)
			rpcrdma_rpc_loop_fini(l);
	}
	rpcrdma_rpc_dev_close(&s->rd);
	rpcrdma_rpc_conn_by_id_fini(&s->by_id);
	pthread_mutex_destroy(&s->list_lock);
	free(s->loops);
	free(s->nconns);
	free(s);
}

RPCRDMA_EXPORT void rpcrdma_svc_destroy(struct rpcrdma_svc *s)
{
	/* It joins the loop and worker threads. */
	int cancel = rpcrdma_rpc_cancel_hold();
	svc_destroy(s);
	rpcrdma_rpc_cancel_restore(cancel);
}

/* Totals and connections for the export (stats_export.c). */
static unsigned svc_total(void *obj, struct rpcrdma_stats *all)
{
	struct rpcrdma_svc *s = obj;
	unsigned live = 0;
	pthread_mutex_lock(&s->list_lock);
	*all = s->reaped;
	SVC_FOR_EACH_XPRT(s, x) {
		rpcrdma_rpc_xprt_add_stats(x, all);
		pthread_mutex_lock(&x->lock);
		live += x->connected && !x->dead;
		pthread_mutex_unlock(&x->lock);
	}
	pthread_mutex_unlock(&s->list_lock);
	all->credits_granted = 0;
	return live;
}

static void svc_each(void *obj, void (*fn)(void *, struct rpc_xprt *),
		     void *ctx)
{
	struct rpcrdma_svc *s = obj;
	pthread_mutex_lock(&s->list_lock);
	SVC_FOR_EACH_XPRT(s, x)
		fn(ctx, x);
	pthread_mutex_unlock(&s->list_lock);
}

RPCRDMA_EXPORT int rpcrdma_svc_stats_sized(struct rpcrdma_svc *s,
					   struct rpcrdma_stats *st,
					   size_t size)
{
	struct rpcrdma_stats all;

	if (!s)
		return RPCRDMA_ERR_INVAL;
	svc_total(s, &all);
	rpcrdma_rpc_reg_cache_stats(s->rd.cache, &all.reg_cache_hits,
				    &all.reg_cache_misses);
	return rpcrdma_rpc_stats_out(&all, st, size);
}
