/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The transport driver: one engine over one provider connection.
 *
 * It owns the connection's CQ (send and receive completions) and QP,
 * registers memory for the engine (struct rpcrdma_engine_mem_ops; see
 * mem_reg() for how exposed memory is made invalidatable), feeds
 * completions to the engine, posts the work requests the engine pops in
 * their order; progress.c says which thread does it when.  A work
 * request that cannot be posted, or the engine's CLOSE event, makes the
 * loop disconnect; DISCONNECTED then unwinds the engine, which completes
 * or fails every RPC.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/slab.h"
#include "common/usdt.h"
#include "rpc/rpc_internal.h"

/* A server connection's first grant (RFC 8166 §3.3.1): it doubles, up
 * to the credits option, whenever a call arrives with all of it in use,
 * so a busy client reaches 32 credits after a few round trips.  Eight
 * posted receives' work requests fit the engine's first page of its
 * work-request queue with the backchannel's beside them. */
#define RPC_GRANT_START 8u

/* Connection records, several to a page (common/slab.h). */
static struct rpcrdma_slab xprt_slab = RPCRDMA_SLAB(struct rpc_xprt);

/* ---------------------------------------------------------------------
 * Create / destroy
 */
int rpcrdma_rpc_xprt_create(struct rpc_dev *rd, const struct rpcrdma_opts *o,
			    bool server, bool peer_v1_only,
			    struct rpcrdma_cm_id *id,
			    const struct rpc_role *const roles[RPC_ROLES],
			    struct rpc_xprt **out)
{
	struct rpcrdma_engine_config cfg;
	struct rpcrdma_qp_attr qa;
	struct rpc_xprt *x;
	int rc;

	x = rpcrdma_slab_alloc(&xprt_slab);
	if (!x)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->inside_cv, NULL);
	x->loop_epfd = -1;
	x->server = server;
	x->kickfd = -1; /* made by the first driver to sleep (progress.c) */
	x->rd = rd;
	for (int i = 0; i < RPC_ROLES; i++)
		x->up[i].ops = roles[i];
	x->opts = *o;
	x->id = id;
	rpcrdma_rpc_addr_str(&id->peer_addr, x->name, sizeof x->name);

	rpcrdma_engine_config_default(&cfg);
	cfg.max_calls = server ? o->backchannel_credits : o->credits;
	cfg.credits = server ? o->credits : o->backchannel_credits;
	/* A server's grant starts small and grows with the client's use
	 * (engine/recv_buffers.c): an idle connection posts the receives of
	 * RPC_GRANT_START credits, not of all of them. */
	if (server)
		cfg.credits_start = RPC_GRANT_START;
	/* Past it, within what the server's credit budget has left. */
	if (server && rd->budget.limit)
		cfg.budget = &rd->budget;
	cfg.max_inline_send = o->inline_send;
	cfg.max_inline_recv = o->inline_recv;
	cfg.remote_inv = o->remote_inv && rd->inv.remote_inv;
	cfg.local_inv = rd->inv.local_inv;
	cfg.versions = o->versions;
	cfg.max_retries = server ? 0 : o->max_retries;
	cfg.accept_msgp = o->accept_msgp;
	cfg.client = !server;
	cfg.peer_v1_only = peer_v1_only;
	cfg.max_call_size = o->max_msg;
	cfg.max_chunk_bytes = o->max_msg;
	cfg.rdma_timeout_ms = o->rdma_timeout_ms;
	cfg.read_window = o->read_window;
	cfg.xid_seed = (uint32_t)rpcrdma_rpc_now_ms() * 2654435761u ^
		       (uint32_t)(uintptr_t)x;
	/* Engine: receives = credits + 2 * max_calls; sends bounded by
	 * sq_depth.  Size the QP and the CQ to hold all of them. */
	uint32_t nrecv = cfg.credits + 2 * cfg.max_calls;
	uint32_t nsend = 4 * (cfg.max_calls + cfg.credits);
	if (rd->attr.max_qp_wr && nsend > rd->attr.max_qp_wr)
		nsend = rd->attr.max_qp_wr;
	if (rd->attr.max_qp_wr && nrecv > rd->attr.max_qp_wr) {
		rc = RPCRDMA_ERR_INVAL;
		goto fail;
	}
	cfg.sq_depth = nsend;
	/* RDMA Reads in flight each way (RFC 5040 IRD/ORD), capped like
	 * librdmacm users usually do; the peer's offer lowers our ORD at
	 * connection time. */
	x->ord = rd->attr.max_qp_init_rd_atom ? rd->attr.max_qp_init_rd_atom
					      : 1;
	if (x->ord > 16)
		x->ord = 16;
	x->ird = rd->attr.max_qp_rd_atom ? rd->attr.max_qp_rd_atom : 1;
	if (x->ird > 16)
		x->ird = 16;

	rc = rd->ops->create_cq(rd->dev, (int)(2 * nsend + nrecv) + 4096, x,
				&x->cq);
	if (rc < 0)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = x->cq;
	qa.recv_cq = x->cq;
	/* Every work request on the send queue is the engine's, BIND_MWs
	 * included, and its sq_depth accounting bounds them. */
	qa.max_send_wr = nsend;
	qa.max_recv_wr = nrecv;
	qa.max_send_sge = RPCRDMA_ENGINE_MAX_SGE;
	if (rd->attr.max_sge && qa.max_send_sge > rd->attr.max_sge)
		qa.max_send_sge = rd->attr.max_sge;
	qa.max_recv_sge = 1;
	qa.context = x;
	/* Every call on the QP and its CQ is made under x->lock (progress.c
	 * runs the connection under it; create, destroy, reconnect and
	 * disconnect take it too): a software provider need not lock again. */
	qa.serial_lock = &x->lock;
	x->qa = qa;
	x->client = !server;
	pthread_mutex_lock(&x->lock); /* qa.serial_lock */
	rc = rd->ops->create_qp(id, rd->pd, &qa, &x->qp);
	pthread_mutex_unlock(&x->lock);
	if (rc < 0)
		goto fail;
	struct rpcrdma_engine_mem_ops mem = {
		.ctx = x, .reg = rpcrdma_rpc_mem_reg,
		.release = rpcrdma_rpc_mem_release,
		.bind = rpcrdma_rpc_mem_bind,
		.buf_alloc = rpcrdma_rpc_mem_buf_alloc,
		.buf_free = rpcrdma_rpc_mem_buf_free,
	};
	rc = rpcrdma_engine_create(&cfg, &mem, &x->e);
	if (rc < 0)
		goto fail;
	for (int i = 0; i < RPC_ROLES; i++) {
		rc = roles[i]->attach(x, &x->up[i].state);
		if (rc < 0)
			goto fail;
	}
	x->rr = rpcrdma_rpc_region_new(rd, o->max_msg);
	rd->ops->req_notify_cq(x->cq);
	*out = x;
	return 0;
fail:
	x->id = NULL; /* the caller still owns the id */
	rpcrdma_rpc_xprt_destroy(x);
	return rc;
}

void rpcrdma_rpc_xprt_note_version(struct rpc_xprt *x)
{
	if (!x->peer_key[0] || x->vers_noted || !x->e)
		return;
	/* Remember a v1-only server as soon as the engine learns it (the
	 * pump looks while the version is not settled: a second client may
	 * connect while this one is still up), not when the client goes
	 * (draft §7.2); once the version is settled there is nothing more
	 * to learn on this connection. */
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(x->e, &in);
	if (in.peer_v1_only)
		rpcrdma_rpc_v1_server_remember(x->peer_key);
	x->vers_noted = in.version && !in.negotiating;
}

void rpcrdma_rpc_xprt_destroy(struct rpc_xprt *x)
{
	if (!x)
		return;
	const struct rpcrdma_provider_ops *ops = x->rd->ops;

	/* A connection gone before its pumps saw the version settled must
	 * not forget what it learnt. */
	rpcrdma_rpc_xprt_note_version(x);

	/* Engine first: it releases (deregisters) every registration while
	 * the PD is alive; then the QP, whose CQ can only go after it. */
	if (x->e)
		rpcrdma_engine_destroy(x->e);
	for (int i = 0; i < RPC_ROLES; i++)
		if (x->up[i].state)
			x->up[i].ops->detach(x, x->up[i].state);
	rpcrdma_rpc_reg_conn_free(x);
	rpcrdma_rpc_region_close(x->rr);
	if (x->qp) {
		pthread_mutex_lock(&x->lock); /* qa.serial_lock */
		ops->destroy_qp(x->qp);
		pthread_mutex_unlock(&x->lock);
	}
	if (x->id)
		ops->destroy_id(x->id);
	if (x->cq)
		ops->destroy_cq(x->cq);
	if (x->kickfd >= 0)
		close(x->kickfd);
	pthread_cond_destroy(&x->inside_cv);
	pthread_mutex_destroy(&x->lock);
	rpcrdma_slab_free(&xprt_slab, x);
}

int rpcrdma_rpc_xprt_pdata(struct rpc_xprt *x, uint8_t *buf, size_t cap)
{
	return rpcrdma_engine_private_data(x->e, buf, cap);
}

int rpcrdma_rpc_xprt_established(struct rpc_xprt *x, const void *pdata,
				 size_t len, uint32_t ord)
{
	struct rpc_work w;
	rpc_work_init(&w);
	int rc;

	pthread_mutex_lock(&x->lock);
	rc = rpcrdma_engine_established(x->e, pdata, len, ord, rpcrdma_rpc_now_ms());
	if (rc == 0)
		x->connected = true;
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	rpcrdma_rpc_xprt_need_attention_locked(x);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
	return rc;
}

/* Reconnection attempts back off 50 ms, 100 ms ... up to 2 s. */
static uint64_t backoff_ms(unsigned attempts)
{
	uint64_t ms = 50;
	for (unsigned i = 0; i < attempts && ms < 2000; i++)
		ms *= 2;
	return ms < 2000 ? ms : 2000;
}

/* With x->lock held, after a loss or a failed attempt: schedule the next
 * connection, or give up and fail everything still waiting. */
static void lost_locked(struct rpc_xprt *x, int status, struct rpc_work *w)
{
	x->connect_pending = false;
	/* One new connection, whatever max_retries, for calls the engine
	 * never sent (its v2 opener was lost: the fallback to v1). */
	bool once = x->fallback_reconnect;
	x->fallback_reconnect = false;
	if (x->client && !x->no_reconnect &&
	    (once || (x->opts.max_retries &&
		      x->attempts < x->opts.max_retries))) {
		/* RFC 8166 §4.5.5: the engine keeps the calls that have
		 * retries left for the next connection. */
		x->reconnecting = true;
		x->retry_at = rpcrdma_rpc_now_ms() + backoff_ms(x->attempts);
		rpcrdma_rpc_trace("%s: reconnecting in %llu ms", x->name,
			  (unsigned long long)backoff_ms(x->attempts));
		return;
	}
	/* Calls the engine keeps queued for a next connection, and those
	 * waiting for a slot, fail now: no connection will come. */
	x->reconnecting = false;
	for (int i = 0; i < RPC_ROLES; i++)
		if (x->up[i].ops->lost_locked)
			x->up[i].ops->lost_locked(x->up[i].state, x,
						  x->refused ? x->refused
							     : status, w);
}

void rpcrdma_rpc_xprt_lost(struct rpc_xprt *x, int status)
{
	struct rpc_work w;
	rpc_work_init(&w);

	pthread_mutex_lock(&x->lock);
	if (!x->dead && x->connected) {
		/* A connection too short for the loop's tick still says
		 * what it was. */
		rpcrdma_rpc_note_version_locked(x);
		RPCRDMA_PROBE2(disconnect, x->name, status);
		if (status != RPCRDMA_ERR_DISCONNECTED &&
		    status != RPCRDMA_ERR_CANCELLED)
			rpcrdma_rpc_trace("%s: connection lost: %s", x->name,
					  rpcrdma_strerror(status));
	}
	if (!x->dead) {
		/* Completions that preceded the loss still count (a reply
		 * that came in before the peer closed); a thread polling
		 * right now feeds its own. */
		rpcrdma_rpc_xprt_drain_locked(x, &w);
		x->dead = true;
		x->connected = false;
		rpcrdma_engine_conn_lost(x->e, rpcrdma_rpc_now_ms());
	}
	rpcrdma_rpc_xprt_pump_locked(x, &w);
	lost_locked(x, status, &w);
	/* A driver asleep on the CQ learns of it now; the loop watches what
	 * is left (flushed completions, a reconnection). */
	if (x->driver)
		rpcrdma_rpc_xprt_kick(x);
	rpcrdma_rpc_xprt_need_attention_locked(x);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
}

void rpcrdma_rpc_xprt_set_peer(struct rpc_xprt *x, const struct sockaddr *sa,
			       socklen_t len)
{
	if (len > sizeof(x->peer))
		len = sizeof(x->peer);
	memcpy(&x->peer, sa, len);
	x->peer_len = len;
	rpcrdma_rpc_addr_str(&x->peer, x->name, sizeof x->name);
}

/* One reconnection attempt failed before or at connect(). */
static void attempt_failed(struct rpc_xprt *x, int rc)
{
	struct rpc_work w;
	rpc_work_init(&w);

	rpcrdma_rpc_trace("%s: reconnection failed: %s", x->name,
		  rpcrdma_strerror(rc));
	pthread_mutex_lock(&x->lock);
	x->attempts++;
	lost_locked(x, RPCRDMA_ERR_DISCONNECTED, &w);
	rpcrdma_rpc_xprt_unlock_run(x, &w);
}

/* Tagged payload the provider copied on its way into place (RDMA Write
 * and Read Response data: chunks) counts as DDP data copied on receive. */
static uint64_t placed_copies(struct rpcrdma_qp *qp)
{
	struct rpcrdma_qp_counters qc;
	if (!qp || rpcrdma_qp_counters(qp, &qc) < 0)
		return 0;
	return qc.rx_tagged_copied;
}

/* A QP about to go: its counts stay with the connection. */
static void placed_copies_add(struct rpc_xprt *x, struct rpcrdma_qp *qp)
{
	uint64_t n = placed_copies(qp);
	pthread_mutex_lock(&x->lock);
	x->ddp_placed_copied += n;
	pthread_mutex_unlock(&x->lock);
}

void rpcrdma_rpc_xprt_reconnect_due(struct rpc_xprt *x, uint64_t now)
{
	const struct rpcrdma_provider_ops *ops = x->rd->ops;

	pthread_mutex_lock(&x->lock);
	bool go = x->reconnecting && !x->connect_pending && !x->no_reconnect &&
		  now >= x->retry_at;
	struct rpcrdma_qp *oqp = go ? x->qp : NULL;
	struct rpcrdma_cm_id *oid = go ? x->id : NULL;
	if (go) {
		x->qp = NULL;
		x->id = NULL;
		x->connect_pending = true;
	}
	pthread_mutex_unlock(&x->lock);
	if (!go)
		return;
	/* The old QP's work is over (the engine forgot it at conn_lost and
	 * ignores its flushed completions by epoch); its id's events have
	 * all been acknowledged by the loop. */
	if (oqp) {
		placed_copies_add(x, oqp);
		pthread_mutex_lock(&x->lock); /* qa.serial_lock */
		ops->destroy_qp(oqp);
		pthread_mutex_unlock(&x->lock);
	}
	if (oid)
		ops->destroy_id(oid);
	struct rpcrdma_cm_id *id = NULL;
	struct rpcrdma_qp *qp = NULL;
	int rc = ops->create_id(x->rd->ch, x, &id);
	if (rc >= 0)
		rc = ops->resolve(id, (struct sockaddr *)&x->peer, x->peer_len);
	if (rc >= 0) {
		pthread_mutex_lock(&x->lock); /* qa.serial_lock */
		rc = ops->create_qp(id, x->rd->pd, &x->qa, &qp);
		pthread_mutex_unlock(&x->lock);
	}
	if (rc < 0) {
		if (id)
			ops->destroy_id(id);
		attempt_failed(x, rc);
		return;
	}
	uint8_t pd[16];
	pthread_mutex_lock(&x->lock);
	x->id = id;
	x->qp = qp;
	x->close_req = false;
	x->disconnect_sent = false;
	int pl = rpcrdma_engine_private_data(x->e, pd, sizeof(pd));
	pthread_mutex_unlock(&x->lock);
	struct rpcrdma_conn_param cp = {
		.private_data = pd, .private_data_len = (uint8_t)(pl > 0 ? pl : 0),
		.responder_resources = (uint8_t)x->ird,
		.initiator_depth = (uint8_t)x->ord,
	};
	rc = ops->connect(id, &cp);
	if (rc < 0)
		attempt_failed(x, rc);
}

bool rpcrdma_rpc_xprt_reconnect_event(struct rpc_xprt *x,
				      const struct rpcrdma_cm_event *ev)
{
	pthread_mutex_lock(&x->lock);
	bool ours = x->reconnecting && x->connect_pending && ev->id == x->id;
	pthread_mutex_unlock(&x->lock);
	if (!ours)
		return false;
	if (ev->type != RPCRDMA_CM_EVENT_ESTABLISHED) {
		if (ev->type == RPCRDMA_CM_EVENT_REJECTED ||
		    ev->type == RPCRDMA_CM_EVENT_UNREACHABLE ||
		    ev->type == RPCRDMA_CM_EVENT_CONNECT_ERROR ||
		    ev->type == RPCRDMA_CM_EVENT_DISCONNECTED)
			attempt_failed(x, RPCRDMA_ERR_CONNREFUSED);
		return true;
	}
	uint32_t ord = x->ord;
	if (ev->responder_resources && ev->responder_resources < ord)
		ord = ev->responder_resources;
	pthread_mutex_lock(&x->lock);
	x->dead = false;
	x->reconnecting = false;
	x->connect_pending = false;
	x->attempts = 0;
	x->reconnects++;
	x->vers_noted = false; /* a new connection negotiates again */
	x->vers_logged = false;
	pthread_mutex_unlock(&x->lock);
	rpcrdma_rpc_trace("%s: reconnected", x->name);
	/* The engine resends its calls, same XIDs (RFC 8166 §4.5.5). */
	rpcrdma_rpc_xprt_established(x, ev->private_data_len ? ev->private_data
							     : NULL,
				     ev->private_data_len, ord);
	return true;
}

void rpcrdma_rpc_note_version_locked(struct rpc_xprt *x)
{
	if (x->vers_logged || !x->e || !x->connected || x->dead)
		return;
	/* Once per connection, when the version is settled: what the two
	 * sides agreed (RFC 8797 §4.2, draft §4). */
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(x->e, &in);
	if (!in.version || in.negotiating)
		return;
	x->vers_logged = true;
	uint32_t credits = x->server ? x->opts.credits : in.credits_granted;
	rpcrdma_rpc_trace("%s: version %u, credits %u granted, inline send %u "
			  "receive %u, remote invalidation %s", x->name,
			  in.version, credits, in.send_threshold,
			  in.recv_threshold, in.send_with_inv ? "yes" : "no");
	/* xprtrdma_connect / svcrdma accept: the peer, the version
	 * negotiated, the inline thresholds both ways, the credits. */
	RPCRDMA_PROBE6(connect, x->name, in.version, in.send_threshold,
		       in.recv_threshold, credits, x->server);
}

void rpcrdma_rpc_xprt_get(struct rpc_xprt *x)
{
	pthread_mutex_lock(&x->lock);
	x->refs++;
	pthread_mutex_unlock(&x->lock);
}

void rpcrdma_rpc_xprt_put(struct rpc_xprt *x)
{
	pthread_mutex_lock(&x->lock);
	x->refs--;
	/* No wake-up for a live connection: svc_run() takes and drops a
	 * reference on the connection of every call it serves
	 * (rpc/tirpc/svc_rdma.c, l_stat), and a wake-up there cost the
	 * loop thread a pass, and the server a context switch, per call.
	 * Once the lock is dropped the loop may reap x: read what the
	 * wake-up needs first. */
	struct rpc_loop *loop = rpc_xprt_reapable_locked(x) ? x->loop : NULL;
	pthread_mutex_unlock(&x->lock);
	if (loop)
		rpcrdma_rpc_loop_wake(loop);
}

void rpcrdma_rpc_xprt_add_stats(struct rpc_xprt *x, struct rpcrdma_stats *s)
{
	struct rpcrdma_engine_counters k;
	struct rpcrdma_engine_info in;

	pthread_mutex_lock(&x->lock);
	rpcrdma_engine_get_counters(x->e, &k);
	rpcrdma_engine_get_info(x->e, &in);
	pthread_mutex_unlock(&x->lock);
	s->calls += k.calls;
	s->calls_completed += k.calls_completed;
	s->short_calls += k.short_calls;
	s->chunked_calls += k.chunked_calls;
	s->long_calls += k.long_calls;
	s->replies_inline += k.replies_inline;
	s->replies_long += k.replies_long;
	s->credit_stalls += k.credit_stalls;
	s->remote_invs += k.remote_invs;
	s->local_invs += k.local_invs;
	s->calls_received += k.calls_received;
	s->chunked_calls_received += k.chunked_calls_received;
	s->long_calls_received += k.long_calls_received;
	s->short_replies += k.short_replies;
	s->chunked_replies += k.chunked_replies;
	s->long_replies += k.long_replies;
	s->send_with_inv += k.send_with_inv;
	s->err_chunk_sent += k.err_chunk_sent;
	s->rdma_read_bytes += k.rdma_read_bytes;
	s->rdma_write_bytes += k.rdma_write_bytes;
	s->connections += k.connections;
	s->bad_replies += k.bad_replies;
	s->err_vers_recv += k.err_vers_recv;
	s->err_chunk_recv += k.err_chunk_recv;
	s->credits_granted = in.credits_granted;
	s->send_threshold = in.send_threshold;
	s->recv_threshold = in.recv_threshold;
	s->peer_remote_inv = in.send_with_inv;
	s->version = in.version;
	s->peer_v1_only = in.peer_v1_only;
	s->peer_rbsiz = in.peer_rbsiz;
	s->peer_brs = in.peer_brs;
	s->vers_fallbacks += k.vers_fallbacks;
	s->err_vers_sent += k.err_vers_sent;
	s->connprop_sent += k.connprop_sent;
	s->connprop_recv += k.connprop_recv;
	s->recoveries += k.recoveries;
	s->retransmissions += k.retransmissions;
	s->rdma_timeouts += k.rdma_timeouts;
	s->ord_stalls += k.ord_stalls;
	s->read_window_stalls += k.read_window_stalls;
	s->grants_raised += k.grant_raised;
	s->grants_refused += k.grant_refused;
	s->grants_lowered += k.grant_lowered;
	s->grants_trimmed += k.grant_trimmed;
	pthread_mutex_lock(&x->lock);
	s->reconnects += x->reconnects;
	s->registrations += x->registrations +
			    rpcrdma_rpc_region_registrations(x->rr);
	s->ddp_copied_tx += x->ddp_copied_tx + k.ddp_inline_tx;
	uint64_t placed = x->ddp_placed_copied + placed_copies(x->qp);
	s->ddp_copied_rx += x->ddp_copied_rx + placed;
	s->ddp_copied_placed += placed;
	s->windows_reused += x->mw_reuses;
	pthread_mutex_unlock(&x->lock);
	for (int i = 0; i < 10; i++) {
		s->v2_err_sent[i] += k.v2_err_sent[i];
		s->v2_err_recv[i] += k.v2_err_recv[i];
	}
}
