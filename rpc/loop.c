/*
 * The event loop: one thread per client or server, sleeping in poll() on a
 * wake-up eventfd, the CM channel fd and every connection's CQ fd.  Each
 * round it hands CM events to its owner, services every connection (CQ
 * drained with arm/drain/ack, disconnect requests, call time-outs) and lets
 * the owner reap dead connections.  A bounded poll() time-out drives call
 * time-outs without a timer structure.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"

#define LOOP_TICK_MS 20 /* time-out granularity */

int rpcrdma_rpc_loop_init(struct rpc_loop *l, struct rpc_dev *rd,
			  void (*on_cm)(void *, struct rpcrdma_cm_event *),
			  void (*on_round)(void *), void *owner)
{
	memset(l, 0, sizeof(*l));
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wakefd < 0)
		return RPCRDMA_ERR_SYSTEM;
	l->rd = rd;
	l->on_cm = on_cm;
	l->on_round = on_round;
	l->owner = owner;
	return 0;
}

void rpcrdma_rpc_loop_wake(struct rpc_loop *l)
{
	uint64_t one = 1;
	ssize_t r = write(l->wakefd, &one, sizeof(one));
	(void)r;
}

struct rpc_xprt *rpcrdma_rpc_loop_find(struct rpc_loop *l,
				       const struct rpcrdma_cm_id *id)
{
	for (struct rpc_xprt *x = l->xprts; x; x = x->next)
		if (x->id == id)
			return x;
	return NULL;
}

static void drain_cm(struct rpc_loop *l)
{
	const struct rpcrdma_provider_ops *ops = l->rd->ops;

	for (;;) {
		struct rpcrdma_cm_event *ev = NULL;
		if (ops->get_cm_event(l->rd->ch, &ev) < 0 || !ev)
			return;
		rpcrdma_rpc_trace("cm event %d status %d id %p", ev->type,
				  ev->status, (void *)ev->id);
		l->on_cm(l->owner, ev);
		ops->ack_cm_event(ev);
	}
}

/* Room for ncap entries in both poll arrays; false (and nothing changed
 * but a larger *pfd) when memory is short. */
static bool grow(struct pollfd **pfd, struct rpc_xprt ***px, size_t *cap,
		 size_t ncap)
{
	struct pollfd *np = realloc(*pfd, ncap * sizeof(*np));
	if (!np)
		return false;
	*pfd = np;
	struct rpc_xprt **nx = realloc(*px, ncap * sizeof(*nx));
	if (!nx)
		return false;
	*px = nx;
	*cap = ncap;
	return true;
}

static void *loop_main(void *arg)
{
	struct rpc_loop *l = arg;
	const struct rpcrdma_provider_ops *ops = l->rd->ops;
	struct pollfd *pfd = NULL;
	struct rpc_xprt **px = NULL;
	size_t cap = 0;

	while (!atomic_load(&l->stop)) {
		size_t n = 0;
		for (struct rpc_xprt *x = l->xprts; x; x = x->next)
			n++;
		if (n + 2 > cap && !grow(&pfd, &px, &cap, (n + 2) * 2)) {
			/* No memory for the poll set.  Leaving the loop would
			 * stop every call of this client or server, time-outs
			 * included; instead sleep a tick and service every
			 * connection as if its CQ had fired (polling an empty
			 * CQ is harmless), until memory comes back. */
			struct timespec t = {0, LOOP_TICK_MS * 1000000L};
			nanosleep(&t, NULL);
			uint64_t now = rpcrdma_rpc_now_ms();
			for (struct rpc_xprt *x = l->xprts; x; x = x->next)
				rpcrdma_rpc_xprt_service(x, true, now);
			drain_cm(l);
			if (l->on_round)
				l->on_round(l->owner);
			continue;
		}
		pfd[0] = (struct pollfd){.fd = l->wakefd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = l->rd->ch->fd, .events = POLLIN};
		size_t k = 2;
		for (struct rpc_xprt *x = l->xprts; x; x = x->next) {
			px[k] = x;
			pfd[k] = (struct pollfd){
				.fd = x->cq ? ops->cq_fd(x->cq) : -1,
				.events = POLLIN};
			k++;
		}
		int rc = poll(pfd, k, LOOP_TICK_MS);
		if (rc < 0 && errno != EINTR)
			break;
		if (pfd[0].revents) {
			uint64_t v;
			ssize_t r = read(l->wakefd, &v, sizeof(v));
			(void)r;
		}
		uint64_t now = rpcrdma_rpc_now_ms();
		/* Completions before CM events: a DISCONNECTED must not
		 * overtake the completions that preceded it. */
		for (size_t i = 2; i < k; i++)
			rpcrdma_rpc_xprt_service(px[i], pfd[i].revents != 0, now);
		drain_cm(l);
		if (l->on_round)
			l->on_round(l->owner);
	}
	free(pfd);
	free(px);
	return NULL;
}

int rpcrdma_rpc_loop_start(struct rpc_loop *l)
{
	atomic_store(&l->stop, 0);
	if (pthread_create(&l->thread, NULL, loop_main, l) != 0)
		return RPCRDMA_ERR_SYSTEM;
	l->started = true;
	return 0;
}

void rpcrdma_rpc_loop_stop(struct rpc_loop *l)
{
	if (!l->started)
		return;
	atomic_store(&l->stop, 1);
	rpcrdma_rpc_loop_wake(l);
	pthread_join(l->thread, NULL);
	l->started = false;
}

void rpcrdma_rpc_loop_fini(struct rpc_loop *l)
{
	rpcrdma_rpc_loop_stop(l);
	if (l->wakefd >= 0)
		close(l->wakefd);
	l->wakefd = -1;
}

int rpcrdma_rpc_wait_cm(struct rpc_dev *rd, int timeout_ms,
			struct rpc_cm_ev *out)
{
	const struct rpcrdma_provider_ops *ops = rd->ops;
	uint64_t end = rpcrdma_rpc_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct rpcrdma_cm_event *ev = NULL;
		if (ops->get_cm_event(rd->ch, &ev) == 0 && ev) {
			memset(out, 0, sizeof(*out));
			out->type = ev->type;
			out->id = ev->id;
			out->status = ev->status;
			out->ird = ev->responder_resources;
			out->ord = ev->initiator_depth;
			if (ev->private_data && ev->private_data_len) {
				out->pdata_len = ev->private_data_len;
				memcpy(out->pdata, ev->private_data,
				       ev->private_data_len);
			}
			ops->ack_cm_event(ev);
			return 0;
		}
		uint64_t now = rpcrdma_rpc_now_ms();
		if (now >= end)
			return RPCRDMA_ERR_TIMEOUT;
		struct pollfd p = {.fd = rd->ch->fd, .events = POLLIN};
		uint64_t left = end - now;
		(void)poll(&p, 1, left > 100 ? 100 : (int)left);
	}
}
