/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What the iwarp provider's loopback unit tests (test_iwarp_basic.c,
 * test_iwarp_serial.c) share: waiting for a CM event, one side
 * of a connection and its teardown, and posting one work request through
 * the ops table.
 */
#ifndef RPCRDMA_TESTS_IWARP_LOOPBACK_H
#define RPCRDMA_TESTS_IWARP_LOOPBACK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "e2e/threads.h" /* now_ms */
#include "provider/provider.h"

/* The next event on ch, within 5 s, if it has type `type` (acknowledge
 * it); NULL, and why on stderr, when another comes or none does. */
static inline struct rpcrdma_cm_event *
iwl_wait_event(const struct rpcrdma_provider_ops *ops,
	       struct rpcrdma_cm_channel *ch, enum rpcrdma_cm_event_type type)
{
	uint64_t end = now_ms() + 5000;
	while (now_ms() < end) {
		struct rpcrdma_cm_event *ev;
		if (ops->get_cm_event(ch, &ev) == 0) {
			if (ev->type == type)
				return ev;
			fprintf(stderr, "cm event %d, not %d\n", ev->type, type);
			ops->ack_cm_event(ev);
			return NULL;
		}
		usleep(1000);
	}
	fprintf(stderr, "no cm event %d in 5 s\n", type);
	return NULL;
}

/* One side of a loopback connection (or a listener: ch and id only). */
struct iwl_side {
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cq *cq;
	struct rpcrdma_qp *qp;
	uint8_t *buf;
	struct rpcrdma_mr *mr;
	bool serial;          /* lock is the QP's serial_lock */
	pthread_mutex_t lock;
};

static inline void iwl_side_free(const struct rpcrdma_provider_ops *ops,
				 struct iwl_side *s)
{
	if (s->qp) {
		if (s->serial)
			pthread_mutex_lock(&s->lock);
		ops->destroy_qp(s->qp);
		if (s->serial)
			pthread_mutex_unlock(&s->lock);
	}
	if (s->id)
		ops->destroy_id(s->id);
	if (s->mr)
		ops->dereg_mr(s->mr);
	if (s->cq)
		ops->destroy_cq(s->cq);
	if (s->pd)
		ops->dealloc_pd(s->pd);
	free(s->buf);
	if (s->ch)
		ops->destroy_channel(s->ch);
	if (s->serial)
		pthread_mutex_destroy(&s->lock);
}

/* One send-queue work request of one SGE. */
static inline int iwl_post_send(const struct rpcrdma_provider_ops *ops,
				struct rpcrdma_qp *qp, uint64_t id,
				enum rpcrdma_wr_opcode op, unsigned flags,
				void *p, uint32_t len, uint32_t lkey,
				uint64_t raddr, uint32_t rkey)
{
	struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)p, len, lkey };
	struct rpcrdma_send_wr wr = { .wr_id = id, .sg_list = &sge,
				      .num_sge = 1, .opcode = op,
				      .send_flags = flags };
	wr.rdma.remote_addr = raddr;
	wr.rdma.rkey = rkey;
	struct rpcrdma_send_wr *bad;
	return ops->post_send(qp, &wr, &bad);
}

/* One receive of one SGE. */
static inline int iwl_post_recv(const struct rpcrdma_provider_ops *ops,
				struct rpcrdma_qp *qp, uint64_t id, void *p,
				uint32_t len, uint32_t lkey)
{
	struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)p, len, lkey };
	struct rpcrdma_recv_wr wr = { .wr_id = id, .sg_list = &sge,
				      .num_sge = 1 };
	struct rpcrdma_recv_wr *bad;
	return ops->post_recv(qp, &wr, &bad);
}

#endif
