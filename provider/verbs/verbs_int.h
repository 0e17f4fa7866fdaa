/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The "verbs" provider's private types: each wraps one rdma-core object and
 * embeds the provider.h base struct first so the generic pointer can be
 * downcast (provider.h, "Object model").
 */
#ifndef RPCRDMA_VERBS_INT_H
#define RPCRDMA_VERBS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "provider/provider.h"

/* Completions carry our own wr_id: the QP's 32-bit unique id in the high
 * half, the shadow slot in the low half (bit 31 = receive queue).  That
 * gives every completion — including flushed ones, where libibverbs leaves
 * wc.opcode undefined — its QP, its opcode and the consumer's wr_id, and
 * lets completions of an already destroyed QP be recognised and dropped.
 * A shared receive queue's receives carry the SRQ's id instead (bit 31
 * of the high half set: RPCRDMA_VERBS_UID_SRQ) and the slot of its
 * shadow table; their QP is found by qp_num. */
#define RPCRDMA_VERBS_SLOT_RECV 0x80000000u
#define RPCRDMA_VERBS_UID_SRQ 0x80000000u

struct rpcrdma_verbs_slot {
	uint64_t wr_id;                 /* the consumer's */
	enum rpcrdma_wc_opcode opcode;
	bool done;                      /* its completion was delivered */
};

/* One work queue's shadow ring.  head is advanced by the poster, tail by
 * the poller of the CQ the queue completes to: a completion for slot i
 * retires every slot before it (RC queues complete in order, except on
 * siw, whose RDMA Read completes when its response is in, after later
 * Writes and Sends: tail only ever moves forward). */
struct rpcrdma_verbs_ring {
	struct rpcrdma_verbs_slot *slot;
	uint32_t mask;
	_Atomic uint32_t head;
	_Atomic uint32_t tail;
};

/* The QP table by qp_num starts with this many buckets and doubles when it
 * holds twice as many QPs (a poll group puts thousands on one CQ, and
 * every completion looks its QP up). */
#define RPCRDMA_VERBS_QP_BUCKETS 64u

struct rpcrdma_verbs_qp;
struct rpcrdma_verbs_srq;

struct rpcrdma_verbs_dev {
	struct rpcrdma_dev base;
	struct ibv_context **list;      /* rdma_get_devices(): librdmacm's own
					   contexts, the ones cm_ids use */
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	unsigned connect_timeout_ms;
	atomic_bool removed;            /* DEVICE_REMOVAL seen */
	atomic_bool async_nonblock;     /* ctx->async_fd made non-blocking
					   (verbs_async.c) */
	/* Linux rxe (seen on 6.1) writes the kernel's IB_WC_WITH_INVALIDATE
	 * (1 << 2) into user CQEs, which libibverbs reads as
	 * IBV_WC_IP_CSUM_OK; IBV_WC_WITH_INV (1 << 3) never shows.  Only
	 * trusted on rxe, where checksum offload flags are never set. */
	bool rxe_inv_quirk;
	/* The device is the kernel's siw, so its userspace driver is
	 * rdma-core's libsiw (providers/siw/siw.c, v44.0), whose quirks
	 * the provider works around (verbs_dev.c device_caps()):
	 *  - every send queue entry's STag comes from wr.rdma.rkey (line
	 *    530), also for IBV_WR_SEND_WITH_INV, whose STag verbs puts in
	 *    invalidate_rkey, and the kernel sends that entry's STag as the
	 *    Invalidate STag (siw_qp_tx.c:185): the rkey goes in both;
	 *  - a receive without SGEs is refused (lines 654-663): it gets one
	 *    empty SGE, which siw skips (siw_qp_rx.c:462). */
	bool libsiw;
	uint32_t caps;                  /* enum rpcrdma_dev_cap, see open */
	char caps_why[256];
	pthread_mutex_t lock;           /* guards qps, srqs and the uids */
	uint32_t next_uid;              /* QPs: below RPCRDMA_VERBS_UID_SRQ */
	uint32_t next_srq_uid;
	struct rpcrdma_verbs_qp **qps;  /* by qp_num, qp_buckets chains */
	uint32_t qp_buckets, nqps;
	struct rpcrdma_verbs_srq *srqs; /* this device's */
};

struct rpcrdma_verbs_pd {
	struct rpcrdma_pd base;
	struct ibv_pd *pd;
};

struct rpcrdma_verbs_mr {
	struct rpcrdma_mr base;
	struct ibv_mr *mr;
};

struct rpcrdma_verbs_mw {
	struct rpcrdma_mw base;
	struct ibv_mw *mw;
};

struct rpcrdma_verbs_cq {
	struct rpcrdma_cq base;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	/* Completions polled since the CQ was last seen empty: when they
	 * reach half its size it may have been full, and the device's
	 * async events are read for a CQ error (verbs_cq.c). */
	atomic_uint run;
	atomic_bool lost;               /* IBV_EVENT_CQ_ERR seen */
	struct rpcrdma_verbs_cq *next_all; /* the process's list */
};

/* A receive posted to an SRQ: its completion may come on any QP of the
 * SRQ, in any order, so the shadow is a table with a free list, not a
 * ring. */
struct rpcrdma_verbs_srq_slot {
	uint64_t wr_id;                 /* the consumer's */
	uint32_t next_free;
	bool used;
};

struct rpcrdma_verbs_srq {
	struct rpcrdma_srq base;
	struct ibv_srq *srq;
	uint32_t uid;                   /* with RPCRDMA_VERBS_UID_SRQ */
	pthread_mutex_t lock;           /* slots, posted, limit, event */
	struct rpcrdma_verbs_srq_slot *slot;
	uint32_t nslots, free_head;     /* free_head == nslots: full */
	uint32_t posted;                /* slots in use */
	uint32_t limit;                 /* armed limit, 0: not armed */
	bool event;                     /* limit reached, not yet queried */
	int efd;                        /* written when event is set */
	int epfd;                       /* base.fd: efd + the async fd */
	struct rpcrdma_verbs_srq *next;     /* in the device's list */
	struct rpcrdma_verbs_srq *next_all; /* in the process's (verbs_srq.c) */
};

struct rpcrdma_verbs_qp {
	struct rpcrdma_qp base;
	struct ibv_qp *qp;
	struct rpcrdma_verbs_srq *srq;  /* receives come from it */
	uint32_t uid;
	uint32_t qp_num;
	uint32_t max_inline;            /* what the device granted */
	struct rpcrdma_verbs_qp *next;  /* hash chain in the device */
	struct rpcrdma_verbs_ring sq;
	struct rpcrdma_verbs_ring rq;
	/* The QP is (or is going) to the error state: set before we move it
	 * there and when poll_cq returns one of its error completions.  A
	 * WR posted from then on is followed by another move to ERR, because
	 * rxe's userspace receive queue has no doorbell: a receive posted to
	 * an errored QP would otherwise never complete (the kernel flushes
	 * the queue only when the QP's responder task runs, which the
	 * transition does). */
	atomic_bool flushing;
};

struct rpcrdma_verbs_channel {
	struct rpcrdma_cm_channel base;
	struct rdma_event_channel *ech;
};

struct rpcrdma_verbs_id {
	struct rpcrdma_cm_id base;
	struct rdma_cm_id *id;
	atomic_bool disconnected;       /* rdma_disconnect() already called */
};

struct rpcrdma_verbs_event {
	struct rpcrdma_cm_event base;
	struct rdma_cm_event *ev;
};

static inline struct rpcrdma_verbs_dev *rpcrdma_verbs_dev(const struct rpcrdma_dev *d)
{
	return (struct rpcrdma_verbs_dev *)d;
}

/* errno (positive) -> enum rpcrdma_error */
int rpcrdma_verbs_errno(int err);

/* verbs_dev.c */
int rpcrdma_verbs_open(const struct rpcrdma_dev_params *params,
		       struct rpcrdma_dev **out);
void rpcrdma_verbs_close(struct rpcrdma_dev *dev);
int rpcrdma_verbs_query(struct rpcrdma_dev *dev, struct rpcrdma_dev_attr *attr);

/* verbs_mem.c */
int rpcrdma_verbs_alloc_pd(struct rpcrdma_dev *dev, struct rpcrdma_pd **out);
int rpcrdma_verbs_dealloc_pd(struct rpcrdma_pd *pd);
int rpcrdma_verbs_reg_mr(struct rpcrdma_pd *pd, void *addr, size_t length,
			 unsigned access, struct rpcrdma_mr **out);
int rpcrdma_verbs_dereg_mr(struct rpcrdma_mr *mr);
int rpcrdma_verbs_alloc_mw(struct rpcrdma_pd *pd, struct rpcrdma_mw **out);
int rpcrdma_verbs_dealloc_mw(struct rpcrdma_mw *mw);
unsigned rpcrdma_verbs_access(const struct rpcrdma_verbs_dev *d, unsigned access);

/* verbs_cq.c */
int rpcrdma_verbs_create_cq(struct rpcrdma_dev *dev, int cqe, void *context,
			    struct rpcrdma_cq **out);
int rpcrdma_verbs_destroy_cq(struct rpcrdma_cq *cq);
int rpcrdma_verbs_poll_cq(struct rpcrdma_cq *cq, int n, struct rpcrdma_wc *wc);
int rpcrdma_verbs_req_notify_cq(struct rpcrdma_cq *cq);
int rpcrdma_verbs_cq_fd(struct rpcrdma_cq *cq);
int rpcrdma_verbs_ack_cq_events(struct rpcrdma_cq *cq);

/* verbs_qp.c */
int rpcrdma_verbs_create_qp(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
			    const struct rpcrdma_qp_attr *attr,
			    struct rpcrdma_qp **out);
int rpcrdma_verbs_destroy_qp(struct rpcrdma_qp *qp);
int rpcrdma_verbs_post_send(struct rpcrdma_qp *qp, struct rpcrdma_send_wr *wr,
			    struct rpcrdma_send_wr **bad);
int rpcrdma_verbs_post_recv(struct rpcrdma_qp *qp, struct rpcrdma_recv_wr *wr,
			    struct rpcrdma_recv_wr **bad);
int rpcrdma_verbs_get_terminate(struct rpcrdma_qp *qp,
				struct rpcrdma_terminate_info *info);
/* The ibv_recv_wr of wr with our wr_id (empty_sge for libsiw's quirk). */
void rpcrdma_verbs_recv_wr(const struct rpcrdma_verbs_dev *d,
			   const struct rpcrdma_recv_wr *wr, uint64_t wr_id,
			   struct ibv_sge *empty_sge, struct ibv_recv_wr *iw);
/* Moves the QP to the error state so its outstanding WRs flush. */
void rpcrdma_verbs_qp_to_error(struct rpcrdma_qp *qp);
/* Finds the live QP a completion belongs to; call with dev->lock held.
 * uid 0: any QP of that number (an SRQ's completion). */
struct rpcrdma_verbs_qp *rpcrdma_verbs_qp_lookup(struct rpcrdma_verbs_dev *dev,
						 uint32_t qp_num, uint32_t uid);
/* The QP table: set up at open, freed at close. */
int rpcrdma_verbs_qp_table_init(struct rpcrdma_verbs_dev *dev);

/* verbs_async.c: reads the context's pending events without blocking. */
void rpcrdma_verbs_async_drain(struct rpcrdma_verbs_dev *d);
/* verbs_cq.c: IBV_EVENT_CQ_ERR named cq (ignored when not ours). */
void rpcrdma_verbs_cq_error_event(struct ibv_cq *cq);

/* verbs_srq.c */
void rpcrdma_verbs_srq_limit_event(struct ibv_srq *srq);
int rpcrdma_verbs_create_srq(struct rpcrdma_pd *pd,
			     const struct rpcrdma_srq_attr *attr,
			     struct rpcrdma_srq **out);
int rpcrdma_verbs_destroy_srq(struct rpcrdma_srq *srq);
int rpcrdma_verbs_post_srq_recv(struct rpcrdma_srq *srq,
				struct rpcrdma_recv_wr *wr,
				struct rpcrdma_recv_wr **bad);
int rpcrdma_verbs_modify_srq(struct rpcrdma_srq *srq, uint32_t limit);
int rpcrdma_verbs_query_srq(struct rpcrdma_srq *srq,
			    struct rpcrdma_srq_state *out);
/* The consumer's wr_id of an SRQ receive's completion (uid, slot of its
 * wr_id), releasing the slot; false when it is not one of a live SRQ
 * of the device.  Call with dev->lock held. */
bool rpcrdma_verbs_srq_complete(struct rpcrdma_verbs_dev *dev, uint32_t uid,
				uint32_t slot, uint64_t *wr_id);

/* verbs_cm.c */
int rpcrdma_verbs_create_channel(struct rpcrdma_dev *dev,
				 struct rpcrdma_cm_channel **out);
int rpcrdma_verbs_destroy_channel(struct rpcrdma_cm_channel *ch);
int rpcrdma_verbs_get_cm_event(struct rpcrdma_cm_channel *ch,
			       struct rpcrdma_cm_event **ev);
int rpcrdma_verbs_ack_cm_event(struct rpcrdma_cm_event *ev);
int rpcrdma_verbs_create_id(struct rpcrdma_cm_channel *ch, void *context,
			    struct rpcrdma_cm_id **out);
int rpcrdma_verbs_destroy_id(struct rpcrdma_cm_id *id);
int rpcrdma_verbs_resolve(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			  socklen_t addrlen);
int rpcrdma_verbs_listen(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			 socklen_t addrlen, int backlog);
int rpcrdma_verbs_connect(struct rpcrdma_cm_id *id,
			  const struct rpcrdma_conn_param *param);
int rpcrdma_verbs_accept(struct rpcrdma_cm_id *id,
			 const struct rpcrdma_conn_param *param);
int rpcrdma_verbs_reject(struct rpcrdma_cm_id *id, const void *private_data,
			 uint8_t private_data_len);
int rpcrdma_verbs_disconnect(struct rpcrdma_cm_id *id);

#endif
