/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Connection manager: event channels, ids, TCP connect/accept and the MPA
 * Request/Reply exchange (RFC 5044 §7.1, RFC 6581).
 *
 * Active side:  RESOLVED -connect-> CONNECTING -TCP up, send Request->
 *               WAIT_REPLY -Reply-> ESTABLISHED (or REJECTED / error)
 * Passive side: LISTEN -accept()-> child WAIT_REQUEST -Request->
 *               REQ_PENDING (CONNECT_REQUEST) -accept/reject-> ...
 * We initiate revision 2 with the enhanced IRD/ORD block and without
 * peer-to-peer set-up (the Request's comment says why); as responder we take
 * revisions 1 and 2 and peer-to-peer set-up when offered (the RFC 6581
 * RTR).  We never use markers, and read exactly the frame's bytes so no
 * FPDU is consumed early.
 * Handshake steps run on the progress thread, bounded by the connect
 * time-out (RFC 5044 §7.1.2 rules 8 and 10).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/pages.h"
#include "common/slab.h"
#include "provider/iwarp/iwarp.h"

/* CM events come in bursts (a connection storm queues one per connection
 * until the consumer takes them): from a slab, whose pages go back to the
 * system when the burst is acknowledged, not from a thread's heap, which
 * keeps its top under a raised M_TRIM_THRESHOLD (common/slab.h). */
static struct rpcrdma_slab event_slab = RPCRDMA_SLAB(struct iw_event);

/* ------------------------------------------------------------ channel */

int rpcrdma_iwarp_create_channel(struct rpcrdma_dev *dev,
				 struct rpcrdma_cm_channel **out)
{
	if (!dev || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_channel *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return RPCRDMA_ERR_NOMEM;
	ch->base.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->base.fd < 0) {
		free(ch);
		return RPCRDMA_ERR_SYSTEM;
	}
	ch->base.dev = dev;
	pthread_mutex_init(&ch->lock, NULL);
	*out = &ch->base;
	return 0;
}

/* e is acknowledged or dropped: the eps it names may be freed.  The
 * device is read first: an ep whose count reaches 0 may be freed at once
 * by the progress thread, which the wake-up sends to its graveyard. */
static void event_release(struct iw_event *e)
{
	struct iw_ep *ids[2] = {(struct iw_ep *)e->base.id,
				(struct iw_ep *)e->base.listen_id};
	for (int i = 0; i < 2; i++) {
		if (!ids[i])
			continue;
		struct iw_dev *dev = ids[i]->dev;
		if (atomic_fetch_sub(&ids[i]->events_held, 1) == 1)
			rpcrdma_iwarp_wake(dev);
	}
}

int rpcrdma_iwarp_destroy_channel(struct rpcrdma_cm_channel *c)
{
	if (!c)
		return RPCRDMA_ERR_INVAL;
	struct iw_channel *ch = (struct iw_channel *)c;
	struct iw_event *e = ch->head;
	while (e) {
		struct iw_event *n = e->next;
		event_release(e);
		if (e->slot < 0)
			rpcrdma_slab_free(&event_slab, e);
		e = n;
	}
	close(c->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

void rpcrdma_iwarp_post_cm_event(struct iw_ep *ep,
				 enum rpcrdma_cm_event_type type, int status,
				 const void *pd, size_t pd_len, uint8_t ird,
				 uint8_t ord, struct iw_ep *listener)
{
	struct iw_channel *ch = (struct iw_channel *)ep->base.channel;
	if (!ch)
		return;
	struct iw_event *e = rpcrdma_slab_alloc(&event_slab);
	int slot = -1;
	if (!e) {
		pthread_mutex_lock(&ch->lock);
		for (int i = 0; i < IW_CM_RESERVE && !e; i++)
			if (!ch->reserve_used[i]) {
				ch->reserve_used[i] = true;
				e = &ch->reserve[i];
				slot = i;
			}
		pthread_mutex_unlock(&ch->lock);
		if (!e)
			return; /* memory short for good: the event is lost */
		memset(e, 0, sizeof(*e));
	}
	e->owner = ch;
	e->slot = slot;
	if (pd_len > sizeof(e->pd))
		pd_len = sizeof(e->pd);
	e->base.type = type;
	e->base.id = &ep->base;
	e->base.listen_id = listener ? &listener->base : NULL;
	e->base.status = status;
	if (pd_len) {
		memcpy(e->pd, pd, pd_len);
		e->base.private_data = e->pd;
	}
	e->base.private_data_len = (uint16_t)pd_len;
	e->base.responder_resources = ird;
	e->base.initiator_depth = ord;
	atomic_fetch_add(&ep->events_held, 1);
	if (listener)
		atomic_fetch_add(&listener->events_held, 1);
	pthread_mutex_lock(&ch->lock);
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	uint64_t one = 1;
	ssize_t r = write(ch->base.fd, &one, sizeof(one));
	(void)r;
	pthread_mutex_unlock(&ch->lock);
}

int rpcrdma_iwarp_get_cm_event(struct rpcrdma_cm_channel *c,
			       struct rpcrdma_cm_event **ev)
{
	if (!c || !ev)
		return RPCRDMA_ERR_INVAL;
	struct iw_channel *ch = (struct iw_channel *)c;
	pthread_mutex_lock(&ch->lock);
	struct iw_event *e = ch->head;
	if (e) {
		ch->head = e->next;
		if (!ch->head)
			ch->tail = NULL;
	}
	if (!ch->head) {
		/* Queue empty: the fd stops being readable. */
		uint64_t v;
		ssize_t r = read(c->fd, &v, sizeof(v));
		(void)r;
	}
	pthread_mutex_unlock(&ch->lock);
	if (!e)
		return RPCRDMA_ERR_AGAIN;
	e->next = NULL;
	*ev = &e->base;
	return 0;
}

int rpcrdma_iwarp_ack_cm_event(struct rpcrdma_cm_event *ev)
{
	if (!ev)
		return RPCRDMA_ERR_INVAL;
	struct iw_event *e = (struct iw_event *)ev;
	event_release(e);
	if (e->slot < 0) {
		rpcrdma_slab_free(&event_slab, e);
		return 0;
	}
	pthread_mutex_lock(&e->owner->lock);
	e->owner->reserve_used[e->slot] = false;
	pthread_mutex_unlock(&e->owner->lock);
	return 0;
}

/* ------------------------------------------------------------ ids */

static struct iw_ep *ep_new(struct iw_dev *dev, struct rpcrdma_cm_channel *ch,
			    void *context)
{
	/* An endpoint (with its QP, 18 KiB) lives as long as its
	 * connection: pages, given back when it goes (common/pages.h). */
	struct iw_ep *ep = rpcrdma_pages_alloc(sizeof(*ep));
	if (!ep)
		return NULL;
	ep->base.dev = &dev->base;
	ep->base.channel = ch;
	ep->base.context = context;
	ep->dev = dev;
	ep->fd = -1;
	ep->qp.fd = -1;
	ep->qp.dev = dev;
	ep->qp.ep = ep;
	pthread_mutex_init(&ep->lock, NULL);
	pthread_mutexattr_t ra;
	pthread_mutexattr_init(&ra);
	pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
	/* TX and RQ locks are re-entered on the error path (a failing
	 * send flushes its own queue). */
	pthread_mutex_init(&ep->qp.tx_lock, &ra);
	pthread_mutex_init(&ep->qp.rq_lock, &ra);
	pthread_mutexattr_destroy(&ra);
	pthread_mutex_init(&ep->qp.rx_lock, NULL);
	pthread_mutex_init(&ep->qp.ep_lock, NULL);
	pthread_mutex_lock(&dev->lock);
	ep->next_all = dev->eps;
	if (dev->eps)
		dev->eps->pprev_all = &ep->next_all;
	ep->pprev_all = &dev->eps;
	dev->eps = ep;
	pthread_mutex_unlock(&dev->lock);
	return ep;
}

void rpcrdma_iwarp_ep_free(struct iw_ep *ep)
{
	if (ep->qp.created)
		rpcrdma_iwarp_destroy_qp(&ep->qp.base);
	if (ep->fd >= 0)
		close(ep->fd);
	pthread_mutex_destroy(&ep->lock);
	pthread_mutex_destroy(&ep->qp.tx_lock);
	pthread_mutex_destroy(&ep->qp.rq_lock);
	pthread_mutex_destroy(&ep->qp.rx_lock);
	pthread_mutex_destroy(&ep->qp.ep_lock);
	rpcrdma_pages_free(ep, sizeof(*ep));
}

/* Unlinks ep from the live list and hands it to the progress thread,
 * which frees it once no event batch can name it. */
static void ep_bury(struct iw_ep *ep)
{
	struct iw_dev *dev = ep->dev;
	pthread_mutex_lock(&ep->lock);
	ep->dead = true;
	ep->state = IW_EP_CLOSED;
	rpcrdma_iwarp_ep_unregister(ep);
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_lock(&dev->lock);
	/* Without a walk of the list: a server's teardown buries thousands. */
	if (ep->pprev_all) {
		*ep->pprev_all = ep->next_all;
		if (ep->next_all)
			ep->next_all->pprev_all = ep->pprev_all;
		ep->pprev_all = NULL;
	}
	rpcrdma_iwarp_ep_untimed_locked(ep);
	ep->next_grave = dev->grave;
	dev->grave = ep;
	pthread_mutex_unlock(&dev->lock);
	rpcrdma_iwarp_wake(dev);
}

int rpcrdma_iwarp_create_id(struct rpcrdma_cm_channel *ch, void *context,
			    struct rpcrdma_cm_id **out)
{
	if (!ch || !out)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = ep_new(iw_dev(ch->dev), ch, context);
	if (!ep)
		return RPCRDMA_ERR_NOMEM;
	*out = &ep->base;
	return 0;
}

int rpcrdma_iwarp_destroy_id(struct rpcrdma_cm_id *id)
{
	if (!id)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	struct iw_dev *dev = ep->dev;
	if (ep->qp.created)
		rpcrdma_iwarp_destroy_qp(&ep->qp.base);
	/* Undelivered children of a listener die with it.  Only a listener
	 * has any: the scan walks every ep of the device, and done for each
	 * connection's id it made a server's teardown of N connections cost
	 * N² steps under dev->lock (a sixth of a 4900-connection server's
	 * time through its storm and close, docs/SCALE.md). */
	pthread_mutex_lock(&ep->lock);
	bool listened = ep->listened;
	pthread_mutex_unlock(&ep->lock);
	while (listened) {
		struct iw_ep *kids[64];
		size_t nk = 0;
		pthread_mutex_lock(&dev->lock);
		for (struct iw_ep *c = dev->eps; c && nk < 64; c = c->next_all)
			if (c->listener == ep)
				kids[nk++] = c;
		pthread_mutex_unlock(&dev->lock);
		for (size_t i = 0; i < nk; i++) {
			kids[i]->listener = NULL;
			ep_bury(kids[i]);
		}
		if (nk < 64)
			break;
	}
	ep_bury(ep);
	return 0;
}

static socklen_t addr_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

int rpcrdma_iwarp_resolve(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			  socklen_t addrlen)
{
	if (!id || !addr)
		return RPCRDMA_ERR_INVAL;
	socklen_t need = addr_len(addr);
	if (!need || addrlen < need)
		return RPCRDMA_ERR_ADDR;
	struct iw_ep *ep = (struct iw_ep *)id;
	pthread_mutex_lock(&ep->lock);
	if (ep->state != IW_EP_IDLE && ep->state != IW_EP_RESOLVED) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_QP_STATE;
	}
	memset(&id->peer_addr, 0, sizeof(id->peer_addr));
	memcpy(&id->peer_addr, addr, need);
	ep->state = IW_EP_RESOLVED;
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

int rpcrdma_iwarp_listen(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			 socklen_t addrlen, int backlog)
{
	if (!id || !addr)
		return RPCRDMA_ERR_INVAL;
	socklen_t need = addr_len(addr);
	if (!need || addrlen < need)
		return RPCRDMA_ERR_ADDR;
	struct iw_ep *ep = (struct iw_ep *)id;
	if (ep->state != IW_EP_IDLE)
		return RPCRDMA_ERR_QP_STATE;
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RPCRDMA_ERR_SYSTEM;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, addr, need) != 0) {
		int e = errno;
		close(fd);
		return e == EADDRINUSE ? RPCRDMA_ERR_BUSY : RPCRDMA_ERR_ADDR;
	}
	if (listen(fd, backlog > 0 ? backlog : 128) != 0) {
		close(fd);
		return RPCRDMA_ERR_SYSTEM;
	}
	socklen_t sl = sizeof(id->local_addr);
	getsockname(fd, (struct sockaddr *)&id->local_addr, &sl);
	pthread_mutex_lock(&ep->lock);
	ep->fd = fd;
	ep->state = IW_EP_LISTEN;
	ep->listened = true;
	int rc = rpcrdma_iwarp_ep_register(ep, EPOLLIN);
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

static uint8_t rd_default(uint8_t v)
{
	if (!v || v > IW_MAX_RD)
		return IW_MAX_RD; /* 0 = provider default, like dev params */
	return v;
}

int rpcrdma_iwarp_connect(struct rpcrdma_cm_id *id,
			  const struct rpcrdma_conn_param *param)
{
	if (!id)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	if (!ep->qp.created)
		return RPCRDMA_ERR_INVAL;
	size_t pdl = param ? param->private_data_len : 0;
	if (pdl > RPCRDMA_IWARP_MPA_MAX_PD - RPCRDMA_IWARP_MPA_IRDORD_LEN ||
	    (pdl && !param->private_data))
		return RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&ep->lock);
	if (ep->state != IW_EP_RESOLVED) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_QP_STATE;
	}
	const struct sockaddr *sa = (const struct sockaddr *)&id->peer_addr;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_SYSTEM;
	}
	if (pdl)
		memcpy(ep->my_pd, param->private_data, pdl);
	ep->my_pd_len = (uint8_t)pdl;
	ep->my_ird = rd_default(param ? param->responder_resources : 0);
	ep->my_ord = rd_default(param ? param->initiator_depth : 0);
	ep->fd = fd;
	ep->state = IW_EP_CONNECTING;
	atomic_store(&ep->deadline_ns, rpcrdma_iwarp_now_ns() +
			     (uint64_t)ep->dev->connect_timeout_ms * 1000000ull);
	int r = connect(fd, sa, addr_len(sa));
	int rc = 0;
	if (r != 0 && errno != EINPROGRESS) {
		int e = errno;
		ep->state = IW_EP_CLOSED;
		atomic_store(&ep->deadline_ns, 0);
		pthread_mutex_unlock(&ep->lock);
		rpcrdma_iwarp_post_cm_event(ep, e == ECONNREFUSED ? RPCRDMA_CM_EVENT_REJECTED
							     : RPCRDMA_CM_EVENT_UNREACHABLE,
					    e == ECONNREFUSED ? RPCRDMA_ERR_CONNREFUSED
							      : RPCRDMA_ERR_ADDR,
					    NULL, 0, 0, 0, NULL);
		return 0;
	}
	rc = rpcrdma_iwarp_ep_register(ep, EPOLLOUT);
	pthread_mutex_unlock(&ep->lock);
	rpcrdma_iwarp_ep_timed(ep);
	rpcrdma_iwarp_wake(ep->dev); /* pick up the new deadline */
	return rc;
}

/* Writes a whole handshake frame; it is small and the socket is fresh. */
static int send_frame(int fd, const uint8_t *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return RPCRDMA_ERR_DISCONNECTED;
		off += (size_t)n;
	}
	return 0;
}

/* Active side failed before ESTABLISHED. ep->lock held. */
static void connect_failed(struct iw_ep *ep, enum rpcrdma_cm_event_type type,
			   int status, const void *pd, size_t pdl,
			   uint8_t ird, uint8_t ord)
{
	ep->state = IW_EP_CLOSED;
	atomic_store(&ep->deadline_ns, 0);
	rpcrdma_iwarp_ep_unregister(ep);
	if (ep->fd >= 0)
		shutdown(ep->fd, SHUT_RDWR);
	rpcrdma_iwarp_post_cm_event(ep, type, status, pd, pdl, ird, ord, NULL);
}

static void tcp_connected(struct iw_ep *ep)
{
	int err = 0;
	socklen_t sl = sizeof(err);
	getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &sl);
	if (err) {
		if (err == ECONNREFUSED)
			connect_failed(ep, RPCRDMA_CM_EVENT_REJECTED,
				       RPCRDMA_ERR_CONNREFUSED, NULL, 0, 0, 0);
		else if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH)
			connect_failed(ep, RPCRDMA_CM_EVENT_UNREACHABLE,
				       RPCRDMA_ERR_ADDR, NULL, 0, 0, 0);
		else
			connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR,
				       RPCRDMA_ERR_SYSTEM, NULL, 0, 0, 0);
		return;
	}
	sl = sizeof(ep->base.local_addr);
	getsockname(ep->fd, (struct sockaddr *)&ep->base.local_addr, &sl);
	/* RFC 6581 §6/§9: revision 2, enhanced, IRD/ORD.  No peer-to-peer
	 * set-up: it exists so that a responder may send first (RFC 6581
	 * §4.3), and an RPC-over-RDMA server never does: it answers calls,
	 * and its backward calls (RFC 8167) follow the client's first
	 * message.  Offering it cost an RTR per connection, and it crashed
	 * a Linux 6.1 siw server (seen in the lab): siw tells the kernel's
	 * iWARP CM that the connection is established only once it has
	 * read the RTR, so a connection closed before that (a client
	 * killed, or our v2 opener unanswered because siw had not yet read
	 * the socket) hit a BUG() in iw_cm's close handler.  siw's own
	 * initiator offers none either. */
	struct rpcrdma_iwarp_mpa_rr rr = {
		.reply = false,
		.crc = ep->dev->mpa_crc,
		.enhanced = true,
		.rev = 2,
		.irdord = { .ird = ep->my_ird, .ord = ep->my_ord },
	};
	uint8_t f[RPCRDMA_IWARP_MPA_MAX_FRAME];
	int n = rpcrdma_iwarp_mpa_rr_build(&rr, ep->my_pd, ep->my_pd_len, f, sizeof(f));
	if (n < 0 || send_frame(ep->fd, f, (size_t)n) != 0) {
		connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR,
			       RPCRDMA_ERR_DISCONNECTED, NULL, 0, 0, 0);
		return;
	}
	ep->state = IW_EP_WAIT_REPLY;
	ep->mpa_have = 0;
	ep->mpa_need = RPCRDMA_IWARP_MPA_HDR_LEN;
	rpcrdma_iwarp_ep_register(ep, EPOLLIN | EPOLLRDHUP);
}

/* Reads exactly the frame's bytes (FPDUs may follow it).  Returns 1 when
 * the frame is complete, 0 to wait, negative on failure. */
static int read_frame(struct iw_ep *ep)
{
	for (;;) {
		ssize_t n = recv(ep->fd, ep->mpa + ep->mpa_have,
				 ep->mpa_need - ep->mpa_have, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return RPCRDMA_ERR_DISCONNECTED;
		ep->mpa_have += (size_t)n;
		if (ep->mpa_have < ep->mpa_need)
			continue;
		if (ep->mpa_need == RPCRDMA_IWARP_MPA_HDR_LEN) {
			int t = rpcrdma_iwarp_mpa_rr_parse_hdr(ep->mpa, ep->mpa_have,
							       &ep->peer);
			if (t < 0)
				return t;
			ep->mpa_need = (size_t)t;
			if (ep->mpa_have < ep->mpa_need)
				continue;
		}
		int t = rpcrdma_iwarp_mpa_rr_parse(ep->mpa, ep->mpa_have, &ep->peer);
		if (t < 0)
			return t;
		ep->peer_pd_len = ep->peer.ulp_pd_len;
		if (ep->peer.ulp_pd_len)
			memcpy(ep->peer_pd, ep->peer.ulp_pd, ep->peer.ulp_pd_len);
		ep->peer.ulp_pd = NULL;
		return 1;
	}
}

static uint8_t peer_rd(const struct rpcrdma_iwarp_mpa_rr *rr, bool ird)
{
	if (!rr->enhanced)
		return IW_MAX_RD; /* revision 1 carries none: assume ours */
	uint16_t v = ird ? rr->irdord.ird : rr->irdord.ord;
	return v > 255 ? 255 : (uint8_t)v;
}

static void got_reply(struct iw_ep *ep)
{
	const struct rpcrdma_iwarp_mpa_rr *rr = &ep->peer;
	uint8_t pird = peer_rd(rr, true), pord = peer_rd(rr, false);
	if (!rr->reply || rr->markers || (rr->rev != 1 && rr->rev != 2)) {
		/* Initiator/initiator start-up (RFC 5044 §7.1.2 rule 8), or
		 * markers, which we never use. */
		connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR,
			       RPCRDMA_ERR_PROTOCOL, NULL, 0, 0, 0);
		return;
	}
	if (rr->reject) {
		connect_failed(ep, RPCRDMA_CM_EVENT_REJECTED, RPCRDMA_ERR_CONNREFUSED,
			       ep->peer_pd, ep->peer_pd_len, pird, pord);
		return;
	}
	bool rtr = false;
	if (rr->enhanced && rr->irdord.p2p) {
		if (!rr->irdord.rtr_write) {
			/* RFC 6581 §9.2: no RTR we can generate. */
			connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR,
				       RPCRDMA_ERR_PROTOCOL, NULL, 0, 0, 0);
			return;
		}
		rtr = true;
	}
	/* RFC 5044 §7.1: CRC if either side asked. */
	bool crc = ep->dev->mpa_crc || rr->crc;
	/* RFC 6581 §9.1: initiator ORD at most the responder IRD; 0x3FFF
	 * means "leave ours unchanged". */
	uint32_t ord = ep->my_ord;
	if (rr->enhanced && rr->irdord.ird != RPCRDMA_IWARP_IRDORD_MAX &&
	    rr->irdord.ird < ord)
		ord = rr->irdord.ird;
	ep->state = IW_EP_ESTABLISHED;
	atomic_store(&ep->deadline_ns, 0);
	int fd = ep->fd;
	pthread_mutex_unlock(&ep->lock);
	rpcrdma_iwarp_qp_start(&ep->qp, fd, crc, ep->my_ird, ord, false, rtr);
	rpcrdma_iwarp_post_cm_event(ep, RPCRDMA_CM_EVENT_ESTABLISHED, 0, ep->peer_pd,
				    ep->peer_pd_len, pird, pord, NULL);
	pthread_mutex_lock(&ep->lock);
}

static int send_reply(struct iw_ep *ep, bool reject, bool crc, uint8_t ird,
		      uint8_t ord, const void *pd, size_t pdl)
{
	const struct rpcrdma_iwarp_mpa_rr *req = &ep->peer;
	struct rpcrdma_iwarp_mpa_rr rr = {
		.reply = true,
		.reject = reject,
		.crc = crc,
		.enhanced = req->enhanced,
		.rev = req->rev,   /* answer in the revision we were asked */
		.irdord = { .ird = ird, .ord = ord },
	};
	if (req->enhanced && req->irdord.p2p && !reject) {
		/* RFC 6581 §9.2: A mirrors the request; offer what the
		 * initiator offered, or both we support if none matches. */
		rr.irdord.p2p = true;
		rr.irdord.rtr_write = req->irdord.rtr_write;
		rr.irdord.rtr_read = req->irdord.rtr_read;
		if (!rr.irdord.rtr_write && !rr.irdord.rtr_read)
			rr.irdord.rtr_write = rr.irdord.rtr_read = true;
	}
	uint8_t f[RPCRDMA_IWARP_MPA_MAX_FRAME];
	int n = rpcrdma_iwarp_mpa_rr_build(&rr, pd, pdl, f, sizeof(f));
	if (n < 0)
		return n;
	return send_frame(ep->fd, f, (size_t)n);
}

static void got_request(struct iw_ep *ep)
{
	const struct rpcrdma_iwarp_mpa_rr *rr = &ep->peer;
	if (rr->reply || (rr->rev != 1 && rr->rev != 2)) {
		/* Responder/responder or unknown revision: close
		 * (RFC 5044 §7.1.2 rule 2: improperly formatted). */
		ep->listener = NULL;
		pthread_mutex_unlock(&ep->lock);
		ep_bury(ep);
		pthread_mutex_lock(&ep->lock);
		return;
	}
	if (rr->markers) {
		/* Like siw: we never do markers; refuse with a reject Reply. */
		send_reply(ep, true, rr->crc, 0, 0, NULL, 0);
		ep->listener = NULL;
		pthread_mutex_unlock(&ep->lock);
		ep_bury(ep);
		pthread_mutex_lock(&ep->lock);
		return;
	}
	struct iw_ep *l = ep->listener;
	ep->listener = NULL;
	ep->state = IW_EP_REQ_PENDING;
	atomic_store(&ep->deadline_ns, 0);
	/* Nothing to read until we reply: stop watching (one-shot, no
	 * events). */
	rpcrdma_iwarp_ep_register(ep, EPOLLONESHOT);
	rpcrdma_iwarp_post_cm_event(ep, RPCRDMA_CM_EVENT_CONNECT_REQUEST, 0,
				    ep->peer_pd, ep->peer_pd_len,
				    peer_rd(rr, true), peer_rd(rr, false), l);
}

/* Out of descriptors (or memory) for accept(): the connection stays in
 * the backlog and the listener stays readable, so watching it would wake
 * the progress thread at once, forever (it spun at 67-101 % of a core).
 * Stop watching it and try again after IW_ACCEPT_RETRY_NS (the timer,
 * rpcrdma_iwarp_ep_timer), by when a descriptor may have been freed:
 * ten attempts a second, and the backlog waits in the kernel. */
static void accept_pause(struct iw_ep *l)
{
	rpcrdma_iwarp_ep_register(l, EPOLLONESHOT);
	atomic_store(&l->deadline_ns,
		     rpcrdma_iwarp_now_ns() + IW_ACCEPT_RETRY_NS);
	rpcrdma_iwarp_ep_timed(l);
}

/* "a.b.c.d:port" / "[v6]:port" of the listener, for its log lines. */
static void listener_name(const struct iw_ep *l, char *buf, size_t cap)
{
	const struct sockaddr_storage *ss = &l->base.local_addr;
	char ip[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		snprintf(buf, cap, "%s:%u", ip, ntohs(a->sin_port));
	}
}

/* A resource limit the server hits: one line on stderr when the episode
 * starts, one when it ends (a server silent at its open-file limit
 * leaves its clients timing out with no clue). */
static void accept_starved(struct iw_ep *l, int err)
{
	l->accept_retries++;
	if (l->accept_starved)
		return;
	l->accept_starved = true;
	l->accept_retries = 0;
	char name[80];
	struct rlimit rl = {0, 0};
	getrlimit(RLIMIT_NOFILE, &rl);
	listener_name(l, name, sizeof name);
	fprintf(stderr,
		"rpcrdma: iwarp: listener %s: accept: %s (open-file limit "
		"%llu): connections wait in the backlog, accept tried again "
		"every %llu ms (said once, until one is accepted)\n",
		name, strerror(err), (unsigned long long)rl.rlim_cur,
		(unsigned long long)(IW_ACCEPT_RETRY_NS / 1000000ull));
}

static void accept_fed(struct iw_ep *l)
{
	if (!l->accept_starved)
		return;
	l->accept_starved = false;
	char name[80];
	listener_name(l, name, sizeof name);
	fprintf(stderr,
		"rpcrdma: iwarp: listener %s: accepting again (after %llu "
		"attempts that failed)\n",
		name, (unsigned long long)l->accept_retries + 1);
}

static void accept_conns(struct iw_ep *l)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				accept_starved(l, errno);
				accept_pause(l);
			}
			return;
		}
		accept_fed(l);
		struct iw_ep *c = ep_new(l->dev, l->base.channel, l->base.context);
		if (!c) {
			close(fd);
			continue;
		}
		memcpy(&c->base.peer_addr, &ss, sizeof(ss));
		sl = sizeof(c->base.local_addr);
		getsockname(fd, (struct sockaddr *)&c->base.local_addr, &sl);
		pthread_mutex_lock(&c->lock);
		c->fd = fd;
		c->listener = l;
		c->state = IW_EP_WAIT_REQUEST;
		c->mpa_have = 0;
		c->mpa_need = RPCRDMA_IWARP_MPA_HDR_LEN;
		/* RFC 5044 §7.1.2 rule 8: time out a silent initiator. */
		atomic_store(&c->deadline_ns, rpcrdma_iwarp_now_ns() +
				     (uint64_t)l->dev->connect_timeout_ms * 1000000ull);
		rpcrdma_iwarp_ep_register(c, EPOLLIN | EPOLLRDHUP);
		pthread_mutex_unlock(&c->lock);
		rpcrdma_iwarp_ep_timed(c);
	}
}

/* qp_event for a serialized QP: the progress thread runs it only under
 * its consumer's lock, which it tries without waiting (iwarp.h, Locks).
 * rx_lock first: destroy_qp takes it, so the QP, and the consumer that
 * owns the lock, are still there while it is held.  When the consumer is
 * inside, its own pass may well take care of it; if not, the QP is
 * deferred (IW_DEFER_NS) and run_deferred (iwarp_dev.c) comes back, rather
 * than a registration re-armed at once that would fire again and again
 * while the consumer holds its lock. */
uint64_t rpcrdma_iwarp_serial_event(struct iw_qp *qp, uint32_t events)
{
	pthread_mutex_lock(&qp->rx_lock);
	bool ran = !qp->created;
	if (!ran && pthread_mutex_trylock(qp->serial) == 0) {
		if (events & EPOLLOUT)
			rpcrdma_iwarp_tx_progress(qp);
		if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			rpcrdma_iwarp_rx_progress(qp, true);
		pthread_mutex_unlock(qp->serial);
		ran = true;
	}
	pthread_mutex_unlock(&qp->rx_lock);
	uint64_t again = ran ? 0 : rpcrdma_iwarp_now_ns() + IW_DEFER_NS;
	pthread_mutex_lock(&qp->ep_lock);
	qp->deferred = !ran;
	qp->defer_until = again;
	qp->in_armed = ran;
	pthread_mutex_unlock(&qp->ep_lock);
	rpcrdma_iwarp_qp_update_arm(qp);
	if (!ran)
		rpcrdma_iwarp_ep_timed(qp->ep);
	return again;
}

static void qp_event(struct iw_ep *ep, uint32_t events)
{
	struct iw_qp *qp = &ep->qp;
	if (qp->serial) {
		(void)rpcrdma_iwarp_serial_event(qp, events);
		return;
	}
	if (events & EPOLLOUT)
		rpcrdma_iwarp_tx_progress(qp);
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		uint64_t now = rpcrdma_iwarp_now_ns();
		/* rx_lock pins the QP (and so its CQs) against destroy_qp. */
		pthread_mutex_lock(&qp->rx_lock);
		if (!qp->created) {
			pthread_mutex_unlock(&qp->rx_lock);
			return;
		}
		if (!qp->dev->manual_progress &&
		    rpcrdma_iwarp_cq_active(qp, now)) {
			/* A consumer is polling: let it take the data on its
			 * own thread; come back if it does not. */
			pthread_mutex_lock(&qp->ep_lock);
			qp->deferred = true;
			qp->defer_until = now + IW_DEFER_NS;
			pthread_mutex_unlock(&qp->ep_lock);
		} else {
			rpcrdma_iwarp_rx_progress_locked(qp);
		}
		pthread_mutex_unlock(&qp->rx_lock);
	}
	pthread_mutex_lock(&qp->ep_lock);
	bool deferred = qp->deferred;
	qp->in_armed = !deferred;
	pthread_mutex_unlock(&qp->ep_lock);
	rpcrdma_iwarp_qp_update_arm(qp);
	if (deferred)
		rpcrdma_iwarp_ep_timed(ep);
}

void rpcrdma_iwarp_ep_event(struct iw_ep *ep, uint32_t events)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->dead) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	switch (ep->state) {
	case IW_EP_LISTEN:
		accept_conns(ep);
		break;
	case IW_EP_CONNECTING:
		tcp_connected(ep);
		break;
	case IW_EP_WAIT_REPLY:
	case IW_EP_WAIT_REQUEST: {
		int r = read_frame(ep);
		if (r == 0)
			break;
		bool active = ep->state == IW_EP_WAIT_REPLY;
		if (r < 0) {
			if (active) {
				/* Bytes that are not the MPA key: whatever
				 * listens there does not speak MPA (a plain
				 * TCP service).  A close before any byte may
				 * be an RDMA server that failed as well, and
				 * a bad frame after the key a broken peer. */
				size_t k = ep->mpa_have < RPCRDMA_IWARP_MPA_KEY_LEN
						   ? ep->mpa_have
						   : RPCRDMA_IWARP_MPA_KEY_LEN;
				bool mpa = !k || !memcmp(ep->mpa,
							 RPCRDMA_IWARP_MPA_KEY_REP, k);
				connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR,
					       !mpa ? RPCRDMA_ERR_NOT_RDMA
					       : r == RPCRDMA_ERR_DISCONNECTED
						       ? RPCRDMA_ERR_DISCONNECTED
						       : RPCRDMA_ERR_PROTOCOL,
					       NULL, 0, 0, 0);
			} else {
				ep->listener = NULL;
				pthread_mutex_unlock(&ep->lock);
				ep_bury(ep);
				return;
			}
			break;
		}
		if (active)
			got_reply(ep);
		else
			got_request(ep);
		break;
	}
	case IW_EP_ESTABLISHED:
	case IW_EP_CLOSED:
		if (ep->qp.created && ep->qp.fd >= 0) {
			pthread_mutex_unlock(&ep->lock);
			qp_event(ep, events);
			return;
		}
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&ep->lock);
}

void rpcrdma_iwarp_ep_timer(struct iw_ep *ep, uint64_t now)
{
	pthread_mutex_lock(&ep->lock);
	uint64_t d = atomic_load(&ep->deadline_ns);
	if (ep->dead || !d || d > now) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	atomic_store(&ep->deadline_ns, 0);
	if (ep->state == IW_EP_CONNECTING || ep->state == IW_EP_WAIT_REPLY) {
		connect_failed(ep, RPCRDMA_CM_EVENT_CONNECT_ERROR, RPCRDMA_ERR_TIMEOUT,
			       NULL, 0, 0, 0);
	} else if (ep->state == IW_EP_WAIT_REQUEST) {
		ep->listener = NULL;
		pthread_mutex_unlock(&ep->lock);
		ep_bury(ep);
		return;
	} else if (ep->state == IW_EP_LISTEN) {
		/* accept_pause() is over: watch the listener again. */
		rpcrdma_iwarp_ep_register(ep, EPOLLIN);
	}
	pthread_mutex_unlock(&ep->lock);
}

int rpcrdma_iwarp_accept(struct rpcrdma_cm_id *id,
			 const struct rpcrdma_conn_param *param)
{
	if (!id)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	if (!ep->qp.created)
		return RPCRDMA_ERR_INVAL;
	size_t pdl = param ? param->private_data_len : 0;
	if ((pdl && !param->private_data) ||
	    pdl > RPCRDMA_IWARP_MPA_MAX_PD -
			  (ep->peer.enhanced ? RPCRDMA_IWARP_MPA_IRDORD_LEN : 0))
		return RPCRDMA_ERR_INVAL;
	pthread_mutex_lock(&ep->lock);
	if (ep->state != IW_EP_REQ_PENDING) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_QP_STATE;
	}
	const struct rpcrdma_iwarp_mpa_rr *req = &ep->peer;
	bool crc = req->crc || ep->dev->mpa_crc;
	uint8_t ird = rd_default(param ? param->responder_resources : 0);
	uint8_t ord = rd_default(param ? param->initiator_depth : 0);
	/* RFC 6581 §9.1: responder ORD at most the initiator IRD. */
	if (req->enhanced && req->irdord.ird != RPCRDMA_IWARP_IRDORD_MAX &&
	    req->irdord.ird < ord)
		ord = (uint8_t)req->irdord.ird;
	int rc = send_reply(ep, false, crc, ird, ord,
			    param ? param->private_data : NULL, pdl);
	if (rc) {
		ep->state = IW_EP_CLOSED;
		pthread_mutex_unlock(&ep->lock);
		return rc;
	}
	ep->state = IW_EP_ESTABLISHED;
	int fd = ep->fd;
	uint8_t pird = peer_rd(req, true), pord = peer_rd(req, false);
	pthread_mutex_unlock(&ep->lock);
	rpcrdma_iwarp_qp_start(&ep->qp, fd, crc, ird, ord, true, false);
	rpcrdma_iwarp_post_cm_event(ep, RPCRDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0,
				    pird, pord, NULL);
	return 0;
}

int rpcrdma_iwarp_reject(struct rpcrdma_cm_id *id, const void *private_data,
			 uint8_t private_data_len)
{
	if (!id || (private_data_len && !private_data))
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	pthread_mutex_lock(&ep->lock);
	if (ep->state != IW_EP_REQ_PENDING) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_QP_STATE;
	}
	if (private_data_len > RPCRDMA_IWARP_MPA_MAX_PD -
				       (ep->peer.enhanced ? RPCRDMA_IWARP_MPA_IRDORD_LEN : 0)) {
		pthread_mutex_unlock(&ep->lock);
		return RPCRDMA_ERR_INVAL;
	}
	/* RFC 5044 §7.1.2 rule 2: Reply with R set, with private data. */
	int rc = send_reply(ep, true, ep->peer.crc || ep->dev->mpa_crc, 0, 0,
			    private_data, private_data_len);
	ep->state = IW_EP_CLOSED;
	shutdown(ep->fd, SHUT_WR);
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

int rpcrdma_iwarp_disconnect(struct rpcrdma_cm_id *id)
{
	if (!id)
		return RPCRDMA_ERR_INVAL;
	struct iw_ep *ep = (struct iw_ep *)id;
	pthread_mutex_lock(&ep->lock);
	int st = ep->state;
	if (st == IW_EP_CONNECTING || st == IW_EP_WAIT_REPLY) {
		ep->state = IW_EP_CLOSED;
		atomic_store(&ep->deadline_ns, 0);
		rpcrdma_iwarp_ep_unregister(ep);
		shutdown(ep->fd, SHUT_RDWR);
		pthread_mutex_unlock(&ep->lock);
		return 0;
	}
	pthread_mutex_unlock(&ep->lock);
	if (ep->qp.created) {
		/* Let a receive step in progress finish first.  The RX engine
		 * may have just published a receive's error completion and be
		 * about to send the Terminate that explains it (RFC 5040
		 * §6.9, RFC 5041 §7): a consumer that disconnects on seeing
		 * that completion must not shut the stream under it, or the
		 * peer gets a FIN with no Terminate.  The RX engine holds
		 * rx_lock from the completion to the Terminate's send. */
		pthread_mutex_lock(&ep->qp.rx_lock);
		pthread_mutex_unlock(&ep->qp.rx_lock);
	}
	if (ep->qp.created && atomic_load(&ep->qp.state) == IW_QP_RTS)
		rpcrdma_iwarp_qp_error(&ep->qp, RPCRDMA_WC_WR_FLUSH_ERR);
	else if (st != IW_EP_ESTABLISHED && st != IW_EP_CLOSED)
		return RPCRDMA_ERR_QP_STATE;
	return 0;
}
