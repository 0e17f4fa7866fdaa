/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A provider (struct rpcrdma_provider_ops, provider/provider.h) entirely
 * in memory, for testing the connection layer (rpc/xprt.c, progress.c,
 * loop.c, work.c) without sockets.
 *
 * Two QPs are wired back to back with fake_qp_pair(): a Send lands in the
 * peer's oldest posted receive at once (on the posting thread) and gives
 * a receive completion on the peer's CQ and, when signalled, a send
 * completion on the sender's; RDMA Write and Read copy between fake
 * registrations after checking the rkey, its access and its bounds.  A
 * CQ's fd is an eventfd made readable when a completion is pushed while
 * the CQ is armed, and req_notify_cq honours the contract of provider.h:
 * 0 when the CQ is empty at the arm, 1 when something is queued (or
 * always 1, as verbs, when fake_net.notify_always is set).
 *
 * Everything the fake does is under one mutex of its own, taken inside
 * the connection's lock and never around a call back into the library.
 * What a test may want to look at is counted in struct fake_net: calls
 * per op, objects alive, and protocol violations (a Send with no receive
 * posted, a bad lkey or rkey), which a test checks are zero.
 */
#ifndef TEST_FAKE_PROVIDER_H
#define TEST_FAKE_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "provider/provider.h"

struct fake_net {
	pthread_mutex_t lock;
	/* Arming says 1 whatever the CQ holds (what verbs does). */
	bool notify_always;
	/* Objects alive: every test ends with all of them zero. */
	int live_mrs, live_cqs, live_qps, live_ids;
	/* Protocol and key violations: every test ends with none. */
	int violations;
	/* How often each id was destroyed (for ownership checks). */
	int ids_destroyed;
	int disconnects;
};

extern struct fake_net fake_net;
extern const struct rpcrdma_provider_ops fake_ops;

/* Per-CQ counters (read them with fake_cq_stats). */
struct fake_cq_stats {
	uint64_t polls;          /* poll_cq calls */
	uint64_t notifies;       /* req_notify_cq calls */
	uint64_t notify_said_1;  /* ... that returned 1 */
	uint64_t pushed;         /* completions queued */
	uint64_t events;         /* fd made readable */
	unsigned queued;         /* completions waiting now */
	bool armed;
};

/* Resets the counters of fake_net (objects alive must be zero). */
void fake_net_reset(void);
void fake_cq_stats(struct rpcrdma_cq *cq, struct fake_cq_stats *out);

/* A device, its protection domain and a CM channel (whose fd is
 * readable only while events a test posted wait: there is no CM here). */
int fake_open(struct rpcrdma_dev **dev, struct rpcrdma_pd **pd,
	      struct rpcrdma_cm_channel **ch, struct rpcrdma_dev_attr *attr);
void fake_close(struct rpcrdma_dev *dev, struct rpcrdma_pd *pd,
		struct rpcrdma_cm_channel *ch);
/* Queues ev (the caller's; ack_cm_event leaves it) for get_cm_event.
 * Returns -1 when 256 wait already. */
int fake_cm_post(struct rpcrdma_cm_channel *ch, struct rpcrdma_cm_event *ev);

/* A cm_id as rpcrdma_rpc_xprt_create wants it (a peer address for the
 * connection's name). */
struct rpcrdma_cm_id *fake_id_new(struct rpcrdma_dev *dev,
				  struct rpcrdma_cm_channel *ch, uint16_t port);

/* Wires two QPs back to back. */
void fake_qp_pair(struct rpcrdma_qp *a, struct rpcrdma_qp *b);
/* The connection breaks: both QPs go to error, their posted receives
 * complete flushed, later work requests too. */
void fake_qp_break(struct rpcrdma_qp *qp);

#endif
