/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Connection management over librdmacm: one rdma_event_channel per
 * rpcrdma_cm_channel (its fd is the channel's fd), one rdma_cm_id per
 * rpcrdma_cm_id, events translated one for one. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "provider/verbs/verbs_int.h"

/* Transport retries before RETRY_EXC_ERR: the IB maximum, so only a
 * really dead peer fails a connection. */
#define TRANSPORT_RETRIES 7
/* RNR retries: none.  RPC-over-RDMA's credits guarantee a posted receive
 * for every Send (RFC 8166 §3.3.1); with retries a credit bug would only
 * show up as latency, with 0 it fails the connection at once. */
#define RNR_RETRIES 0

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return RPCRDMA_ERR_SYSTEM;
	return 0;
}

static void copy_addr(struct sockaddr_storage *to, const struct sockaddr *from)
{
	memset(to, 0, sizeof(*to));
	if (!from)
		return;
	if (from->sa_family == AF_INET)
		memcpy(to, from, sizeof(struct sockaddr_in));
	else if (from->sa_family == AF_INET6)
		memcpy(to, from, sizeof(struct sockaddr_in6));
	else
		memcpy(to, from, sizeof(*to));
}

static void fill_addrs(struct rpcrdma_verbs_id *v)
{
	copy_addr(&v->base.local_addr, rdma_get_local_addr(v->id));
	copy_addr(&v->base.peer_addr, rdma_get_peer_addr(v->id));
}

int rpcrdma_verbs_create_channel(struct rpcrdma_dev *dev,
				 struct rpcrdma_cm_channel **out)
{
	if (!dev || !out)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_channel *c = calloc(1, sizeof(*c));
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		int e = errno;
		free(c);
		return rpcrdma_verbs_errno(e ? e : ENODEV);
	}
	/* get_cm_event must not block (provider.h). */
	if (set_nonblock(c->ech->fd)) {
		rdma_destroy_event_channel(c->ech);
		free(c);
		return RPCRDMA_ERR_SYSTEM;
	}
	c->base.dev = dev;
	c->base.fd = c->ech->fd;
	*out = &c->base;
	return 0;
}

int rpcrdma_verbs_destroy_channel(struct rpcrdma_cm_channel *ch)
{
	struct rpcrdma_verbs_channel *c = (struct rpcrdma_verbs_channel *)ch;

	if (!c)
		return RPCRDMA_ERR_INVAL;
	rdma_destroy_event_channel(c->ech);
	free(c);
	return 0;
}

int rpcrdma_verbs_create_id(struct rpcrdma_cm_channel *ch, void *context,
			    struct rpcrdma_cm_id **out)
{
	struct rpcrdma_verbs_channel *c = (struct rpcrdma_verbs_channel *)ch;

	if (!c || !out)
		return RPCRDMA_ERR_INVAL;
	struct rpcrdma_verbs_id *v = calloc(1, sizeof(*v));
	if (!v)
		return RPCRDMA_ERR_NOMEM;
	if (rdma_create_id(c->ech, &v->id, v, RDMA_PS_TCP)) {
		int e = errno;
		free(v);
		return rpcrdma_verbs_errno(e);
	}
	v->base.dev = ch->dev;
	v->base.channel = ch;
	v->base.context = context;
	*out = &v->base;
	return 0;
}

int rpcrdma_verbs_destroy_id(struct rpcrdma_cm_id *id)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;

	if (!v)
		return RPCRDMA_ERR_INVAL;
	if (id->qp)
		rpcrdma_verbs_destroy_qp(id->qp);
	/* Blocks until every event reported for this id has been acked. */
	if (rdma_destroy_id(v->id))
		return rpcrdma_verbs_errno(errno);
	free(v);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int resolve_status(int status, int fallback)
{
	if (status == -ETIMEDOUT)
		return RPCRDMA_ERR_TIMEOUT;
	if (status == -ENODEV)
		return RPCRDMA_ERR_NO_DEVICE;
	return fallback;
}

/* Waits on a private channel for the outcome of one resolution step. */
static int wait_step(struct rdma_event_channel *ech, enum rdma_cm_event_type ok,
		     int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return RPCRDMA_ERR_TIMEOUT;
		struct pollfd pfd = { .fd = ech->fd, .events = POLLIN };
		int n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return RPCRDMA_ERR_SYSTEM;
		if (n == 0)
			return RPCRDMA_ERR_TIMEOUT;
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(ech, &ev))
			return rpcrdma_verbs_errno(errno);
		enum rdma_cm_event_type t = ev->event;
		int status = ev->status;
		rdma_ack_cm_event(ev);
		if (t == ok)
			return 0;
		if (t == RDMA_CM_EVENT_ADDR_ERROR || t == RDMA_CM_EVENT_ROUTE_ERROR)
			return resolve_status(status, RPCRDMA_ERR_ADDR);
		if (t == RDMA_CM_EVENT_DEVICE_REMOVAL)
			return RPCRDMA_ERR_NO_DEVICE;
		/* Anything else cannot belong to a fresh id; keep waiting. */
	}
}

int rpcrdma_verbs_resolve(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			  socklen_t addrlen)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;
	struct rpcrdma_verbs_channel *c;

	if (!v || !addr || addrlen < sizeof(struct sockaddr_in))
		return RPCRDMA_ERR_INVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return RPCRDMA_ERR_ADDR;
	c = (struct rpcrdma_verbs_channel *)id->channel;
	struct rpcrdma_verbs_dev *d = rpcrdma_verbs_dev(id->dev);
	int timeout = (int)d->connect_timeout_ms;

	/* Resolution is asynchronous in librdmacm, its results arrive as
	 * events.  To make it synchronous without reading — and losing —
	 * the consumer's events for other ids, move this id to a private
	 * channel for the duration, then back. */
	struct rdma_event_channel *priv = rdma_create_event_channel();
	if (!priv)
		return rpcrdma_verbs_errno(errno);
	if (rdma_migrate_id(v->id, priv)) {
		int e = errno;
		rdma_destroy_event_channel(priv);
		return rpcrdma_verbs_errno(e);
	}
	int64_t deadline = now_ms() + timeout;
	int rc;
	if (rdma_resolve_addr(v->id, NULL, (struct sockaddr *)addr, timeout))
		rc = errno == ENODEV ? RPCRDMA_ERR_NO_DEVICE : RPCRDMA_ERR_ADDR;
	else
		rc = wait_step(priv, RDMA_CM_EVENT_ADDR_RESOLVED, deadline);
	if (!rc) {
		if (rdma_resolve_route(v->id, timeout))
			rc = rpcrdma_verbs_errno(errno);
		else
			rc = wait_step(priv, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline);
	}
	/* After a time-out a late ADDR/ROUTE event may still come; it then
	 * lands on the consumer's channel, where get_cm_event skips it. */
	if (rdma_migrate_id(v->id, c->ech) && !rc)
		rc = rpcrdma_verbs_errno(errno);
	rdma_destroy_event_channel(priv);
	if (rc)
		return rc;
	/* The PD, CQs and QP must all live on the device opened. */
	if (v->id->verbs != d->ctx)
		return RPCRDMA_ERR_NO_DEVICE;
	fill_addrs(v);
	return 0;
}

int rpcrdma_verbs_listen(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			 socklen_t addrlen, int backlog)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;

	if (!v || !addr || addrlen < sizeof(struct sockaddr_in))
		return RPCRDMA_ERR_INVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return RPCRDMA_ERR_ADDR;
	/* Like SO_REUSEADDR on a TCP listener: restarting a server must not
	 * wait for old connections' time-wait. */
	int one = 1;
	(void)rdma_set_option(v->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
			      &one, sizeof(one));
	if (rdma_bind_addr(v->id, (struct sockaddr *)addr)) {
		int e = errno;
		return e == EADDRINUSE ? RPCRDMA_ERR_BUSY :
		       e == ENODEV ? RPCRDMA_ERR_NO_DEVICE : RPCRDMA_ERR_ADDR;
	}
	/* A specific address binds the id to its device; a wildcard one
	 * leaves verbs NULL and requests may come from any device. */
	if (v->id->verbs && v->id->verbs != rpcrdma_verbs_dev(id->dev)->ctx)
		return RPCRDMA_ERR_NO_DEVICE;
	if (rdma_listen(v->id, backlog > 0 ? backlog : 16))
		return rpcrdma_verbs_errno(errno);
	fill_addrs(v);
	return 0;
}

/* 0 in provider.h's conn_param means "whatever the device and the peer
 * allow", which librdmacm spells RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH. */
static uint8_t rd_atom(uint8_t want, int dev_max, uint8_t dflt)
{
	if (!want)
		return dflt;
	if (dev_max >= 0 && want > dev_max)
		return (uint8_t)dev_max;
	return want;
}

/* provider.h promises max_private_data; librdmacm and the CM of some
 * transports take more (iWARP's MPA allows 512 bytes, RFC 5044 §7.1), so
 * the limit is ours to enforce. */
static bool pdata_fits(struct rpcrdma_cm_id *id,
		       const struct rpcrdma_conn_param *param)
{
	struct rpcrdma_dev_attr a;

	if (!param || !param->private_data_len)
		return true;
	if (rpcrdma_verbs_query(id->dev, &a) < 0)
		return false;
	return param->private_data_len <= a.max_private_data;
}

static void conn_param(struct rpcrdma_verbs_dev *d,
		       const struct rpcrdma_conn_param *p,
		       struct rdma_conn_param *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->responder_resources = rd_atom(p ? p->responder_resources : 0,
					  d->attr.max_qp_rd_atom, RDMA_MAX_RESP_RES);
	cp->initiator_depth = rd_atom(p ? p->initiator_depth : 0,
				      d->attr.max_qp_init_rd_atom,
				      RDMA_MAX_INIT_DEPTH);
	cp->retry_count = TRANSPORT_RETRIES;
	cp->rnr_retry_count = RNR_RETRIES;
	if (p && p->private_data_len) {
		cp->private_data = p->private_data;
		cp->private_data_len = p->private_data_len;
	}
}

int rpcrdma_verbs_connect(struct rpcrdma_cm_id *id,
			  const struct rpcrdma_conn_param *param)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;
	struct rdma_conn_param cp;

	if (!v)
		return RPCRDMA_ERR_INVAL;
	if (param && param->private_data_len && !param->private_data)
		return RPCRDMA_ERR_INVAL;
	if (!pdata_fits(id, param))
		return RPCRDMA_ERR_INVAL;
	conn_param(rpcrdma_verbs_dev(id->dev), param, &cp);
	if (rdma_connect(v->id, &cp))
		return rpcrdma_verbs_errno(errno);
	return 0;
}

int rpcrdma_verbs_accept(struct rpcrdma_cm_id *id,
			 const struct rpcrdma_conn_param *param)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;
	struct rdma_conn_param cp;

	if (!v)
		return RPCRDMA_ERR_INVAL;
	if (param && param->private_data_len && !param->private_data)
		return RPCRDMA_ERR_INVAL;
	if (!pdata_fits(id, param))
		return RPCRDMA_ERR_INVAL;
	conn_param(rpcrdma_verbs_dev(id->dev), param, &cp);
	if (rdma_accept(v->id, &cp))
		return rpcrdma_verbs_errno(errno);
	return 0;
}

int rpcrdma_verbs_reject(struct rpcrdma_cm_id *id, const void *private_data,
			 uint8_t private_data_len)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;

	if (!v || (private_data_len && !private_data))
		return RPCRDMA_ERR_INVAL;
	if (rdma_reject(v->id, private_data_len ? private_data : NULL,
			private_data_len))
		return rpcrdma_verbs_errno(errno);
	return 0;
}

int rpcrdma_verbs_disconnect(struct rpcrdma_cm_id *id)
{
	struct rpcrdma_verbs_id *v = (struct rpcrdma_verbs_id *)id;

	if (!v)
		return RPCRDMA_ERR_INVAL;
	/* librdmacm moves an IB QP to error itself, but not on every
	 * transport; provider.h promises flushed WRs, so do it here too. */
	if (id->qp)
		rpcrdma_verbs_qp_to_error(id->qp);
	/* Idempotent: the DREQ may already have been answered for us when
	 * the peer disconnected first (see get_cm_event). */
	if (atomic_exchange(&v->disconnected, true))
		return 0;
	if (rdma_disconnect(v->id))
		return rpcrdma_verbs_errno(errno);
	return 0;
}

static int event_status(int status)
{
	if (status == 0)
		return 0;
	return status < 0 ? rpcrdma_verbs_errno(-status) : RPCRDMA_ERR_CONNREFUSED;
}

/* A new rpcrdma id for the rdma_cm_id of a CONNECT_REQUEST. */
static struct rpcrdma_verbs_id *adopt(struct rpcrdma_verbs_channel *c,
				      struct rdma_cm_event *ev)
{
	struct rpcrdma_verbs_id *listener = ev->listen_id->context;
	struct rpcrdma_verbs_id *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->id = ev->id;
	v->base.dev = c->base.dev;
	v->base.channel = &c->base;
	/* librdmacm gives the new id the listener's context; do the same. */
	v->base.context = listener ? listener->base.context : NULL;
	ev->id->context = v;
	fill_addrs(v);
	return v;
}

int rpcrdma_verbs_get_cm_event(struct rpcrdma_cm_channel *ch,
			       struct rpcrdma_cm_event **out)
{
	struct rpcrdma_verbs_channel *c = (struct rpcrdma_verbs_channel *)ch;

	if (!c || !out)
		return RPCRDMA_ERR_INVAL;
	*out = NULL;
	for (;;) {
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(c->ech, &ev))
			return errno == EAGAIN || errno == EWOULDBLOCK ?
				RPCRDMA_ERR_AGAIN : rpcrdma_verbs_errno(errno);

		struct rpcrdma_verbs_event *e = calloc(1, sizeof(*e));
		if (!e) {
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				/* Nobody will ever see this request. */
				rdma_reject(ev->id, NULL, 0);
				struct rdma_cm_id *nid = ev->id;
				rdma_ack_cm_event(ev);
				rdma_destroy_id(nid);
			} else {
				rdma_ack_cm_event(ev);
			}
			return RPCRDMA_ERR_NOMEM;
		}
		e->ev = ev;
		struct rpcrdma_cm_event *b = &e->base;
		struct rpcrdma_verbs_id *v = ev->id ? ev->id->context : NULL;
		bool deliver = true;

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			b->type = RPCRDMA_CM_EVENT_CONNECT_REQUEST;
			v = adopt(c, ev);
			if (!v) {
				rdma_reject(ev->id, NULL, 0);
				struct rdma_cm_id *nid = ev->id;
				rdma_ack_cm_event(ev);
				rdma_destroy_id(nid);
				free(e);
				return RPCRDMA_ERR_NOMEM;
			}
			b->listen_id = ev->listen_id ?
				&((struct rpcrdma_verbs_id *)ev->listen_id->context)->base :
				NULL;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			b->type = RPCRDMA_CM_EVENT_ESTABLISHED;
			break;
		case RDMA_CM_EVENT_REJECTED:
			b->type = RPCRDMA_CM_EVENT_REJECTED;
			break;
		case RDMA_CM_EVENT_CONNECT_ERROR:
			b->type = RPCRDMA_CM_EVENT_CONNECT_ERROR;
			break;
		case RDMA_CM_EVENT_UNREACHABLE:
			b->type = RPCRDMA_CM_EVENT_UNREACHABLE;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			b->type = RPCRDMA_CM_EVENT_DISCONNECTED;
			/* The peer's DREQ does not touch our (userspace) QP;
			 * flush it so outstanding receives complete.  So on
			 * this provider the passive side's WRs flush once its
			 * consumer reads this event (as with any librdmacm
			 * program): event loops must watch the CM fd as well
			 * as the CQ fds. */
			if (v && v->base.qp)
				rpcrdma_verbs_qp_to_error(v->base.qp);
			/* Answer the DREQ now (a DREP): the side that called
			 * disconnect() hears DISCONNECTED only then, or after
			 * the CM's DREQ time-out, and must not depend on our
			 * consumer calling disconnect() too.  On the active
			 * side this is a no-op. */
			if (v && !atomic_exchange(&v->disconnected, true))
				(void)rdma_disconnect(v->id);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			b->type = RPCRDMA_CM_EVENT_DEVICE_REMOVAL;
			atomic_store(&rpcrdma_verbs_dev(ch->dev)->removed, true);
			if (v && v->base.qp)
				rpcrdma_verbs_qp_to_error(v->base.qp);
			break;
		default:
			/* Resolution results that arrive after resolve() gave
			 * up, TIMEWAIT_EXIT, ADDR_CHANGE, ...: nothing a
			 * provider.h consumer is told about. */
			deliver = false;
			break;
		}
		if (!deliver || !v) {
			rdma_ack_cm_event(ev);
			free(e);
			continue;
		}
		b->id = &v->base;
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			b->status = RPCRDMA_ERR_CONNREFUSED;
		else
			b->status = event_status(ev->status);
		if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
			b->private_data = ev->param.conn.private_data;
			b->private_data_len = ev->param.conn.private_data_len;
		}
		/* The IB CM reports these from the receiver's point of view
		 * (IBA 12.7.9: what it should offer / may use), which is the
		 * peer's ORD and IRD respectively. */
		b->responder_resources = ev->param.conn.initiator_depth;
		b->initiator_depth = ev->param.conn.responder_resources;
		*out = b;
		return 0;
	}
}

int rpcrdma_verbs_ack_cm_event(struct rpcrdma_cm_event *ev)
{
	struct rpcrdma_verbs_event *e = (struct rpcrdma_verbs_event *)ev;

	if (!e)
		return RPCRDMA_ERR_INVAL;
	int rc = rdma_ack_cm_event(e->ev);
	free(e);
	return rc ? rpcrdma_verbs_errno(errno) : 0;
}
