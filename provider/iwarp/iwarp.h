/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Internal types of the userspace soft-iWARP provider ("iwarp").
 *
 * PROGRESS AND THREADING MODEL
 * ----------------------------
 * Run to completion on the caller's thread, with one per-device progress
 * thread as a backstop, because every cross-thread wake-up costs tens of
 * microseconds on small VMs (README.md, benchmarks):
 *
 *  - TX: post_send() appends to the send queue and runs the TX engine
 *    right there (non-blocking sendmsg of whole FPDUs, as many ready
 *    messages per call as fit one batch: iwarp_qp_tx.c).  Only when TCP
 *    pushes back (EAGAIN) does the QP ask the progress thread for EPOLLOUT;
 *    poll_cq() also retries a blocked TX inline.
 *  - RX: poll_cq() and ack_cq_events() run inline (poll_cq tries the QP's
 *    RX lock, ack_cq_events waits for it) the RX engine of every QP of the CQ whose socket has data,
 *    before returning, so a busy-polling consumer never waits for another
 *    thread.  One pass takes apart everything the socket holds; large
 *    payloads are received straight into place (iwarp_qp_rx.c).
 *  - cq_fd() is an epoll fd holding the CQ's eventfd (signalled by
 *    completions produced on other threads while armed) AND the sockets of
 *    the QPs attached to it (EPOLLIN; EPOLLOUT too on the send CQ of a QP
 *    whose TX waits for room): a consumer sleeping on cq_fd wakes directly
 *    on socket data and processes it inline in ack_cq_events()/poll_cq().
 *    The same epoll set, asked without waiting, tells poll_cq which QPs
 *    have work: its cost follows the QPs with data, not the QPs attached
 *    (a poll group's thousand idle connections cost one epoll_wait).
 *  - Unless the consumer asked for manual progress (rpcrdma_dev_params),
 *    the progress thread watches every socket with EPOLLONESHOT.  When a
 *    socket is readable and a consumer of that QP's CQs is armed and was
 *    active within IW_ACTIVE_NS (asleep on cq_fd, which holds the socket),
 *    it defers for IW_DEFER_NS (the consumer will almost surely process
 *    the data itself) and only then processes whatever is left; otherwise
 *    (nobody there, or a consumer busy elsewhere, such as one spinning
 *    on memory an RDMA Write fills) it processes immediately.  So remote RDMA Read/Write
 *    targets complete with no help from the target application, and a
 *    ping-pong costs the progress thread about one wake-up per deferral.
 *    With manual progress it watches only for the peer's close
 *    (EPOLLRDHUP), so a consumer that polls pays no wake-up of it.
 *  - The progress thread also runs connection set-up (TCP connect/accept,
 *    MPA Request/Reply), handshake time-outs and EPOLLOUT.
 *
 * Locks (acquire in this order; none is held across a blocking call):
 *   cq->qps_lock -> qp->rx_lock -> qp->tx_lock -> qp->rq_lock / srq->lock
 *   -> dev->mem_lock / cq->lock / ch->lock;  dev->lock -> qp->ep_lock.
 * cq->qps_lock is held by an inline progress pass over the CQ's ready
 * QPs; destroy_qp takes it to take the QP out of the CQ's epoll set, so
 * no pass can still name a QP once that returns.  A shared receive queue
 * (iwarp_srq.c) is one lock: QPs progressed by different threads take
 * receives from it under their own rx_lock, and posting takes only it.
 * A serialized QP (rpcrdma_qp_attr.serial_lock, manual progress): its
 * consumer holds that lock for every call on the QP and its CQ, so the
 * data path takes none of the QP's and CQ's locks (iw_lock); the progress
 * thread, holding rx_lock, tries that lock and runs the QP only if it got
 * it (else the consumer is there, and it tries again IW_DEFER_NS later):
 *   consumer's lock -> qp->rx_lock ...; the progress thread never waits
 * for the consumer's lock, so holding rx_lock while trying it is safe.
 * Object lifetime: an endpoint (cm_id + its embedded QP) that the progress
 * thread may reference is freed only by that thread, at the top of its
 * loop, after destroy_id() moved it to the graveyard and removed its fds
 * from every epoll set: no event batch can still name it then.
 */
#ifndef RPCRDMA_IWARP_H
#define RPCRDMA_IWARP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/nocancel.h"
#include "provider/iwarp/iwarp_wire.h"
#include "provider/provider.h"

#define IW_MAX_SGE 16
#define IW_MAX_INLINE 256
#define IW_MAX_WR 4096
#define IW_DEFAULT_WR 128
#define IW_MAX_CQE (1 << 20)
#define IW_MAX_RD 16          /* IRD and ORD we support */
#define IW_MAX_MSG (1u << 31) /* largest Send / RDMA op */
#define IW_ACTIVE_NS 2000000ull /* consumer counts as active for 2 ms */
#define IW_DEFER_NS 1000000ull  /* progress thread waits 1 ms for it */
#define IW_RXBUF 16384          /* RX staging buffer (one per thread) */
#define IW_RXBUF_LOW 2048       /* ... on the stack, when a thread has none */
/* Bytes one RX pass of a QP reads before it lets the caller go on to
 * other QPs and connections (iwarp_qp_rx.c): a bulk transfer is taken in
 * pieces, so a thread serving many connections interleaves small
 * messages with it.  64 KiB: svc_run() (rdma-tirpc) serves every
 * connection on one thread, and with 256 KiB a pass of one client's
 * 1 MiB WRITEs held 8 connections of NULL calls to 27 k calls/s against
 * 150 k alone; with 64 KiB, 76-111 k, while a lone connection's 1 MiB
 * WRITEs and READs kept their rate (`rpcrdma-perf load --fairness`,
 * `rpcrdma-perf rpc --only write,read`, docs/SCALE.md). */
#define IW_RX_BUDGET (64u << 10)
#define IW_DIRECT_MIN 2048      /* recv straight into memory from here */
#define IW_BULK_FPDU 8192       /* an FPDU this long or longer makes RX
				   careful (iwarp_qp_rx.c) */
#define IW_CALM_FPDUS 16        /* ...for this many smaller FPDUs after it */
#define IW_PEEK 16              /* a careful read takes at most this much
				   of an FPDU whose header it has not seen:
				   2 + the tagged DDP header, and no FPDU
				   is shorter than 20 bytes */
#define IW_TX_FPDUS 64          /* FPDUs in one sendmsg */
#define IW_TX_IOV 512           /* iovecs in one sendmsg (<= IOV_MAX) */
/* The small batch every QP starts with (struct iw_tx): one FPDU, with
 * room for its header, each of a WR's SGEs and its trailer. */
#define IW_TX_FPDUS_SMALL 1
#define IW_TX_IOV_SMALL (2 + IW_MAX_SGE)
#define IW_TX_BYTES (64u << 10) /* wire bytes in one sendmsg */
/* Wire bytes one TX pass of a QP writes before it lets the caller go on
 * to other QPs and connections (iwarp_qp_tx.c), as IW_RX_BUDGET does for
 * RX: a bulk transfer goes out in pieces, so a thread serving many
 * connections interleaves small messages with it.  A pass is a poll of
 * the consumer (or an event of the progress thread); the posts made
 * within it share its budget.  Server on one CPU, 8 connections of NULL
 * calls beside one of 32 x 1 MiB READs (`rpcrdma-perf load --fairness
 * --greedy-mix r1m`): without a budget 0.9-1.2 k calls/s, p99 24 ms;
 * 64 KiB 63-66 k, 219-244 us; 128 KiB 54-64 k, 244-274 us; 256 KiB
 * 43-51 k, 299-356 us.  A lone connection's 1 MiB READs lost 3-5 % at
 * 64 KiB, 1-3 % at 128 KiB (docs/SCALE.md, "A TX pass's share"). */
#define IW_TX_PASS (128u << 10)
#define IW_ACCEPT_RETRY_NS 100000000ull /* accept() after EMFILE: 100 ms */
#define IW_MAX_SRQ 65536        /* shared receive queues per device, as
				   reported (memory is the real limit) */
#define IW_MAX_SRQ_WR (16 * IW_MAX_WR) /* receives one of them holds */
#define IW_POLL_QPS 64          /* ready QPs one inline pass takes from
				   the CQ's epoll set (the rest, next
				   pass: level-triggered, round robin) */

struct iw_ep;
struct iw_qp;

struct iw_dev {
	struct rpcrdma_dev base;
	unsigned connect_timeout_ms;
	bool mpa_crc;
	bool mpa_require_crc;
	unsigned max_fpdu;
	bool manual_progress;  /* rpcrdma_dev_params.manual_progress */

	pthread_t thread;
	int epfd;             /* progress thread's epoll */
	int wakefd;           /* eventfd: wake the progress thread */
	atomic_bool stop;
	pthread_mutex_t lock; /* eps list, timed list, graveyard */
	struct iw_ep *eps;    /* every live endpoint */
	/* The endpoints that may have a timer (deadline_ns, or a deferred
	 * QP): what run_deferred (iwarp_dev.c) walks after each batch of
	 * events, instead of every endpoint.  An endpoint joins when a
	 * timer is set (rpcrdma_iwarp_ep_timed) and leaves when the walk
	 * finds none left, or when it is buried. */
	struct iw_ep *timed;
	struct iw_ep *grave;  /* destroyed endpoints awaiting free */

	pthread_mutex_t mem_lock; /* STag table */
	_Atomic uint32_t mr_gen;  /* bumped (under mem_lock) when an MR goes:
				     a struct iw_lkey_cache of an older
				     generation is stale */
	struct iw_stag *stags;
	uint32_t nstags;      /* slots in use or freed (index < nstags) */
	uint32_t stag_cap;
	uint32_t free_head;   /* free list through iw_stag.next_free; 0 = none */
};

struct iw_pd {
	struct rpcrdma_pd base;
};

enum iw_stag_type { IW_STAG_FREE = 0, IW_STAG_MR, IW_STAG_MW };

struct iw_stag {
	uint8_t type;
	bool valid;           /* MR: registered; MW: bound and not invalidated */
	uint8_t key;
	struct iw_pd *pd;
	uint64_t addr;        /* VA of byte 0 = tagged offset base */
	uint64_t length;
	unsigned access;
	uint32_t next_free;
};

struct iw_mr {
	struct rpcrdma_mr base;
	uint32_t index;
};

struct iw_mw {
	struct rpcrdma_mw base;
	uint32_t index;
};

/* The region of the last lkey a queue resolved, valid while no MR of
 * the device has gone since (dev->mr_gen): the send and receive queues
 * resolve the same few lkeys for every message, and this spares them the
 * STag table's lock. */
struct iw_lkey_cache {
	bool valid;
	uint32_t lkey, gen;
	uint64_t addr, len;
	unsigned access;
};

/* Why a memory access was refused (RFC 5040 §8, RFC 5042 §5). */
enum iw_access_err {
	IW_MEM_OK = 0,
	IW_MEM_INV_STAG,  /* no such STag, wrong key, or invalidated */
	IW_MEM_BOUNDS,    /* offset + length outside the region */
	IW_MEM_ACCESS,    /* access right not granted */
	IW_MEM_PD,        /* STag belongs to another protection domain */
	IW_MEM_TO_WRAP,   /* offset + length overflows 64 bits */
};

#define IW_CQ_NEAR 8 /* completions the CQ record holds itself */

struct iw_cq {
	struct rpcrdma_cq base;
	pthread_mutex_t lock;    /* ring and armed */
	/* The ring in use: near, or far once more completions wait than
	 * near holds, until it empties again (rpcrdma_iwarp_cq_push, pop).
	 * far holds the cqe entries the CQ was made with (pages, untouched
	 * until used), and grows past them rather than lose one. */
	struct rpcrdma_wc *ring;
	uint32_t cap, head;
	struct rpcrdma_wc *far;
	uint32_t far_cap;
	struct rpcrdma_wc near[IW_CQ_NEAR];
	/* count is written under lock, read without it to skip an empty
	 * ring; armed is set by the consumer without the lock.  A push
	 * stores count then takes armed, the consumer stores armed then
	 * reads count (both sequentially consistent): one of them always
	 * sees the other, so no completion is left without a wake-up. */
	_Atomic uint32_t count;
	_Atomic bool armed;
	_Atomic bool overflow;   /* a completion was lost (no memory) */
	_Atomic bool efd_set;    /* efd was written since the last ack
				    (written under lock; ack reads it
				    first without, to skip the lock when
				    nothing was written) */
	_Atomic bool sleeping;   /* armed, and no ack or fruitful poll since:
				    the consumer is (about to be) asleep on
				    cq_fd */
	int efd;                 /* eventfd: completions while armed */
	int epfd;                /* what cq_fd returns */
	pthread_mutex_t qps_lock; /* held by an inline progress pass */
	size_t nqps;             /* QPs attached (under qps_lock) */
	struct iw_qp *solo;      /* the QP, while it was attached alone
				    (under qps_lock): a pass runs it
				    directly, a recv() rather than an
				    epoll_wait() and a recv() */
	_Atomic uint64_t last_active_ns;
	bool serial;             /* its QP's consumer serializes every call
				    (iw_qp.serial): lock and qps_lock are
				    not taken; set while that QP is
				    attached, alone */
};

/* A posted receive of a shared receive queue; its SGEs are the max_sge
 * entries of srq->sges at its index. */
struct iw_srqe {
	uint64_t wr_id;
	int num_sge;
};

struct iw_srq {
	struct rpcrdma_srq base;
	pthread_mutex_t lock;    /* everything below but posted */
	struct iw_srqe *q;
	struct rpcrdma_sge *sges;
	uint32_t cap, head, count;
	uint32_t limit;          /* armed limit, 0: not armed */
	bool event;              /* limit reached, not yet queried */
	uint32_t nqps;           /* QPs created on it */
	_Atomic uint32_t posted; /* posted, not completed */
	int efd;                 /* base.fd: readable while event */
};

enum iw_qp_state {
	IW_QP_IDLE = 0,  /* created, not connected */
	IW_QP_RTS,       /* connected, full MPA/DDP operation */
	IW_QP_ERROR,     /* failed or disconnected; WRs flushed */
};

/* Send gather lists of up to this many entries live in the entry
 * itself (the RPC layer's engine posts at most 4, RPCRDMA_ENGINE_MAX_SGE):
 * entry and list then share a page, where a separate array of lists put
 * the first list on a page of its own. */
#define IW_SWQE_SGE 4

struct iw_swqe {
	uint64_t wr_id;
	enum rpcrdma_wr_opcode opcode;
	unsigned flags;
	bool signaled;
	int num_sge;
	struct rpcrdma_sge *sge; /* sge_near, or its max_send_sge slots of
				    qp->sq_sge */
	uint64_t len;
	uint32_t inval_rkey;
	uint64_t raddr;
	uint32_t rkey;
	struct iw_mw *bind_mw;
	struct rpcrdma_mr *bind_mr;
	uint64_t bind_addr, bind_len;
	unsigned bind_access;
	uint32_t bind_rkey;
	bool in_orq;          /* RDMA Read whose ORQ entry exists: leaves
				 the SQ without a completion of its own */
	uint8_t *inl;         /* INLINE payload copied at post: its
				 max_inline_data bytes of qp->sq_inl (NULL
				 without) */
	struct rpcrdma_sge sge_near[IW_SWQE_SGE];
};

struct iw_rwqe {
	uint64_t wr_id;
	int num_sge;
	struct rpcrdma_sge *sge; /* its rq_max_sge slots of qp->rq_sge */
};

/* Outstanding RDMA Read we issued (ORQ, depth = negotiated ORD). */
struct iw_orqe {
	uint64_t wr_id;     /* of the Read's WR */
	uint64_t len;
	bool signaled;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint64_t got;       /* response bytes placed */
	struct iovec seg[IW_MAX_SGE];
	int nseg;
};

/* Inbound RDMA Read we owe a response for (IRQ, depth = our IRD). */
struct iw_irqe {
	const uint8_t *src;
	uint32_t size;
	uint32_t sink_stag;
	uint64_t sink_to;
};

/* Recently transmitted Sends/Writes, to give a refused one its error
 * completion when the peer's Terminate names it (iWARP has no ACK). */
#define IW_HIST 64
struct iw_hist {
	uint64_t wr_id;
	enum rpcrdma_wc_opcode op;
	bool tagged;
	bool signaled;   /* already completed with SUCCESS */
	uint32_t stag;   /* tagged: STag */
	uint32_t msn;    /* untagged: MSN */
};

/* A scatter list in local memory with a cursor. */
struct iw_place {
	struct iovec seg[IW_MAX_SGE];
	int nseg;
	uint64_t off;
};

enum iw_tx_kind { IW_TX_NONE = 0, IW_TX_MSG };

/* What an FPDU finishes once TCP took the whole of it. */
enum iw_retire {
	IW_RET_NONE = 0,  /* not a message's last FPDU, or the RTR */
	IW_RET_SQ,        /* a Send or Write: history, completion, SQ pop */
	IW_RET_SQ_READ,   /* a Read Request: SQ pop (it lives in the ORQ) */
	IW_RET_IRQ,       /* a Read Response: IRQ pop */
};

/* One FPDU of the batch being sent. */
struct iw_txf {
	uint8_t hdr[2 + RPCRDMA_IWARP_DDP_UNTAGGED_HLEN +
		    RPCRDMA_IWARP_READ_REQ_LEN];
	uint8_t trailer[8];
	uint8_t retire;       /* enum iw_retire */
	bool inl;             /* payload copied at post (INLINE) */
	bool tagged;          /* IW_RET_SQ: for the history */
	uint16_t iov_end;     /* one past its last iovec in the batch */
	uint32_t end;         /* one past its last byte in the batch */
	uint32_t payload;
	uint32_t stag, msn;   /* IW_RET_SQ: for the history */
};

struct iw_tx {
	/* The message being cut into FPDUs. */
	enum iw_tx_kind kind;
	struct rpcrdma_iwarp_ddp_hdr ddp;   /* template for each segment */
	uint8_t extra[RPCRDMA_IWARP_READ_REQ_LEN]; /* Read Request header */
	size_t extra_len;
	struct iw_place src;
	uint64_t total, done;
	uint32_t msn;
	bool inl;
	uint8_t retire;       /* what its last FPDU finishes */
	/* The batch: whole FPDUs, of one or more messages in order, for
	 * one sendmsg (iwarp_qp_tx.c). */
	int nf, niov;         /* built */
	int rf;               /* next FPDU to retire */
	int iovidx;           /* next iovec to send */
	size_t bytes, sent;   /* wire bytes built, sent */
	size_t pass_sent;     /* wire bytes of this pass's batches before */
	/* The batch's arrays, f_cap FPDUs and iov_cap iovecs: the small ones
	 * below until a batch fills them (one FPDU), the QP block's large
	 * ones (IW_TX_FPDUS, IW_TX_IOV: 13 KiB) from the next batch on
	 * (iwarp_qp_tx.c, batch_reset).  A QP that only ever sends one
	 * message at a time, as an idle or lightly used connection does,
	 * never touches the large ones, and its endpoint fits one page. */
	struct iw_txf *f;
	struct iovec *iov;
	int f_cap, iov_cap;
	bool large;           /* a batch filled the small arrays */
	struct iw_txf *f_large;
	struct iovec *iov_large;
	/* Last, and never read past nf and niov: create_qp clears the
	 * fields above only. */
	struct iw_txf f_small[IW_TX_FPDUS_SMALL];
	struct iovec iov_small[IW_TX_IOV_SMALL];
};

/* Placement and copy counters (struct rpcrdma_qp_counters): each has one
 * writer, the holder of the lock named, and is read by anyone. */
struct iw_ctr {
	_Atomic uint64_t tagged, tagged_copied;      /* rx_lock */
	_Atomic uint64_t untagged, untagged_copied;  /* rx_lock */
	_Atomic uint64_t tx, tx_copied;              /* tx_lock */
};

static inline void iw_ctr_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

enum iw_rx_state { IW_RX_HDR = 0, IW_RX_PAYLOAD, IW_RX_TRAILER, IW_RX_DEAD };

struct iw_rx {
	enum iw_rx_state st;
	uint8_t *buf;            /* staging of the pass running now: its
				    thread's (iwarp_qp_rx.c), cap bytes;
				    NULL between passes */
	size_t cap;
	size_t rd, wr;
	uint8_t hdr[2 + RPCRDMA_IWARP_DDP_UNTAGGED_HLEN + RPCRDMA_IWARP_TERM_MAX_LEN];
	size_t have, need;
	size_t ulpdu_len;
	struct rpcrdma_iwarp_ddp_hdr ddp;
	uint64_t left;           /* payload bytes of this FPDU still to come */
	uint32_t crc;
	uint8_t trailer[8];
	size_t tr_have, tr_need;
	/* placement of the current segment */
	enum { IW_PL_NONE, IW_PL_TAGGED, IW_PL_RECV, IW_PL_RRESP } pl;
	uint8_t *dst;            /* IW_PL_TAGGED: next byte */
	struct iw_place place;   /* IW_PL_RECV / IW_PL_RRESP */
	/* Send message in progress (QN 0) */
	bool recv_active;
	struct iw_rwqe recv;     /* its sge: recv_sge */
	struct rpcrdma_sge recv_sge[IW_MAX_SGE];
	uint64_t recv_cap, recv_got;
	uint32_t msn[3];         /* next expected MSN per queue */
	bool first_seen;         /* at least one FPDU validated */
	uint32_t calm;           /* FPDUs since the last one of IW_BULK_FPDU
				    bytes or more (up to IW_CALM_FPDUS);
				    below IW_CALM_FPDUS RX is careful */
	bool kick_tx;            /* TX has new work (Read Responses, an ORD
				    slot): run it after this batch */
};

struct iw_qp {
	struct rpcrdma_qp base;
	struct iw_ep *ep;
	struct iw_dev *dev;
	struct iw_srq *srq;      /* receives come from it; no rq then */
	/* created and fd are written under rx_lock+tx_lock (qp_start,
	 * destroy_qp) but read by the progress thread under ep->lock only,
	 * as a filter before it takes rx_lock: atomics keep that read
	 * defined (ThreadSanitizer reported it). */
	_Atomic bool created;
	bool sq_sig_all;
	_Atomic int state;       /* enum iw_qp_state */
	_Atomic int fd;          /* connected socket, -1 before RTS */
	bool crc;
	size_t mulpdu;
	size_t emss;             /* TCP segment size: FPDUs of one sendmsg
				    never straddle its multiples */
	struct iw_ctr ctr;
	uint32_t ird, ord;       /* negotiated */

	pthread_mutex_t tx_lock; /* SQ, ORQ, IRQ, TX engine, hist, term */
	struct iw_lkey_cache tx_lkc; /* under tx_lock */
	/* The send queue: entries sized by what the QP was created with
	 * (a QP of 4 SGEs and no inline data does not carry room for 16
	 * SGEs and 256 bytes in each of thousands of entries). */
	struct iw_swqe *sq;
	struct rpcrdma_sge *sq_sge;   /* sq_cap x sq_max_sge; NULL when
					 sq_max_sge <= IW_SWQE_SGE */
	uint8_t *sq_inl;              /* sq_cap x sq_max_inline, or NULL */
	uint32_t sq_max_sge, sq_max_inline;
	uint32_t sq_cap, sq_head, sq_count;
	uint32_t sq_built;       /* SQ entries from sq_head taken into the
				    TX batch, not yet sent */
	struct iw_orqe *orq;
	uint32_t orq_head, orq_count;
	struct iw_irqe *irq;
	uint32_t irq_head, irq_count;
	uint32_t irq_built;      /* IRQ entries taken into the TX batch */
	bool tx_stopped;         /* a Terminate went or came: send nothing
				    more, the QP is going to error */
	bool tx_hold;            /* responder: no FPDU before the first one
				    received (RFC 5044 §7.1.2 rule 4) */
	bool rtr_pending;        /* initiator: send the RTR first */
	uint32_t tx_msn[3];
	struct iw_hist *hist;    /* IW_HIST, with the queues (iwarp_qp.c) */
	uint32_t hist_n;
	struct rpcrdma_terminate_info term;

	pthread_mutex_t rq_lock;
	struct iw_rwqe *rq;
	struct rpcrdma_sge *rq_sge;   /* rq_cap x rq_max_sge */
	uint32_t rq_max_sge;
	uint32_t rq_cap, rq_head, rq_count;

	pthread_mutex_t rx_lock;
	struct iw_rx rx;
	struct iw_lkey_cache rx_lkc; /* under rx_lock */

	/* rpcrdma_qp_attr.serial_lock (with manual progress only): the
	 * consumer holds it for every call on the QP and its CQ, so the
	 * data path takes none of tx_lock, rx_lock, rq_lock (iw_lock below);
	 * the progress thread takes it with trylock, under rx_lock (which
	 * pins the QP against destroy_qp), before it runs the QP. */
	pthread_mutex_t *serial;
	bool rx_running;         /* serial: the RX engine is on the stack
				    (what rx_lock being held tells
				    otherwise) */

	pthread_mutex_t ep_lock; /* progress-thread epoll registration,
				    and want_out with the socket's
				    registration in the CQs' sets */
	bool in_armed, deferred;
	_Atomic bool want_out;   /* written under ep_lock, read without */
	_Atomic bool out_room;   /* want_out with room in the socket: TX
				    stopped at its pass's share (IW_TX_PASS);
				    ep_lock */
	uint64_t defer_until;
	bool flushed;
	/* Last: the batch's small arrays after every field above
	 * (struct iw_ep). */
	struct iw_tx tx;
};

/* CM endpoint = cm_id.  Its QP lives inside it so the progress thread
 * can reach both through one pointer with one lifetime. */
enum iw_ep_state {
	IW_EP_IDLE = 0,
	IW_EP_RESOLVED,
	IW_EP_LISTEN,
	IW_EP_CONNECTING,    /* TCP connect in progress */
	IW_EP_WAIT_REPLY,    /* MPA Request sent */
	IW_EP_WAIT_REQUEST,  /* accepted TCP, reading MPA Request */
	IW_EP_REQ_PENDING,   /* CONNECT_REQUEST delivered, app to decide */
	IW_EP_ESTABLISHED,
	IW_EP_CLOSED,
};

struct iw_event {
	struct rpcrdma_cm_event base;
	struct iw_event *next;
	struct iw_channel *owner;
	int slot;                /* in owner->reserve, or -1: malloc'd */
	uint8_t pd[RPCRDMA_IWARP_MPA_MAX_PD_RECV];
};

/* Events set aside per channel for when malloc fails: a lost ESTABLISHED
 * or DISCONNECTED would leave its connection waiting for a time-out (or
 * for ever), so one failed allocation must not lose one. */
#define IW_CM_RESERVE 8

struct iw_channel {
	struct rpcrdma_cm_channel base;
	pthread_mutex_t lock;
	struct iw_event *head, *tail;
	struct iw_event reserve[IW_CM_RESERVE];
	bool reserve_used[IW_CM_RESERVE];
};

struct iw_ep {
	struct rpcrdma_cm_id base;
	struct iw_dev *dev;
	/* CM events that name it (as id or listen_id), queued or delivered
	 * and not yet acknowledged: a destroyed ep waits in the graveyard
	 * until none is left, as rdma_destroy_id(3) waits for them (the
	 * event's reader may be another thread, another poll group). */
	atomic_uint events_held;
	pthread_mutex_t lock;    /* state, handshake buffers */
	int state;               /* enum iw_ep_state */
	int fd;
	bool registered;         /* fd in dev->epfd */
	bool dead;
	bool disc_reported;
	bool listened;           /* listen() made it a listener: only then
				    may eps name it as theirs (destroy_id) */
	/* child: the listening ep.  Atomic: a destroy_id on any thread scans
	 * every ep of the device for its children (under dev->lock) while the
	 * progress thread sets and clears this under the child's own lock. */
	_Atomic(struct iw_ep *) listener;
	_Atomic uint64_t deadline_ns; /* 0 = none */
	uint8_t mpa[RPCRDMA_IWARP_MPA_MAX_FRAME];
	size_t mpa_have, mpa_need;
	struct rpcrdma_iwarp_mpa_rr peer;   /* parsed peer frame */
	uint8_t peer_pd[RPCRDMA_IWARP_MPA_MAX_PD_RECV];
	uint16_t peer_pd_len;
	uint8_t my_pd[RPCRDMA_IWARP_MPA_MAX_PD];
	uint8_t my_pd_len;
	uint8_t my_ird, my_ord;
	struct iw_ep *next_all, *next_grave;
	struct iw_ep **pprev_all;    /* what points at it in dev->eps (NULL:
					unlinked): ep_bury unlinks in O(1) */
	/* Its place in dev->timed (NULL: not in it), under dev->lock;
	 * on_timed says the same without the lock, for a setter's fast
	 * path (rpcrdma_iwarp_ep_timed). */
	struct iw_ep *next_timed, **pprev_timed;
	_Atomic bool on_timed;
	/* Listener: accept() is failing for want of descriptors or memory
	 * (logged once per episode), and the attempts since. */
	bool accept_starved;
	uint64_t accept_retries;
	/* Last, and its TX batch last in it (struct iw_qp): the fields every
	 * connection writes, then the small batch's arrays, in one page
	 * (iwarp_cm.c, ep_new). */
	struct iw_qp qp;
};

static inline struct iw_dev *iw_dev(struct rpcrdma_dev *d)
{
	return (struct iw_dev *)d;
}

/* iwarp_dev.c */
uint64_t rpcrdma_iwarp_now_ns(void);
void rpcrdma_iwarp_wake(struct iw_dev *dev);
int rpcrdma_iwarp_ep_register(struct iw_ep *ep, uint32_t events);
void rpcrdma_iwarp_ep_unregister(struct iw_ep *ep);

/* iwarp_mem.c */
int rpcrdma_iwarp_reg_mr(struct rpcrdma_pd *pd, void *addr, size_t length,
			 unsigned access, struct rpcrdma_mr **out);
int rpcrdma_iwarp_dereg_mr(struct rpcrdma_mr *mr);
int rpcrdma_iwarp_alloc_mw(struct rpcrdma_pd *pd, struct rpcrdma_mw **out);
int rpcrdma_iwarp_dealloc_mw(struct rpcrdma_mw *mw);
enum iw_access_err rpcrdma_iwarp_mem_check(struct iw_dev *dev,
					   struct iw_pd *pd, uint32_t stag,
					   uint64_t to, uint64_t len,
					   unsigned access, bool allow_mr_lkey);
int rpcrdma_iwarp_sge_resolve(struct iw_dev *dev, struct iw_pd *pd,
			      const struct rpcrdma_sge *sge, int n,
			      bool need_write, struct iw_place *out,
			      uint64_t *total, struct iw_lkey_cache *cache);
int rpcrdma_iwarp_bind_mw(struct iw_dev *dev, struct iw_pd *pd,
			  struct iw_swqe *w);
/* Invalidate an STag (local or remote); remote = only MWs, same PD. */
enum iw_access_err rpcrdma_iwarp_invalidate(struct iw_dev *dev,
					    struct iw_pd *pd, uint32_t stag,
					    bool remote);
void rpcrdma_iwarp_mem_init(struct iw_dev *dev);
void rpcrdma_iwarp_mem_fini(struct iw_dev *dev);

/* iwarp_cq.c */
int rpcrdma_iwarp_create_cq(struct rpcrdma_dev *dev, int cqe, void *context,
			    struct rpcrdma_cq **out);
int rpcrdma_iwarp_destroy_cq(struct rpcrdma_cq *cq);
int rpcrdma_iwarp_poll_cq(struct rpcrdma_cq *cq, int n, struct rpcrdma_wc *wc);
int rpcrdma_iwarp_req_notify_cq(struct rpcrdma_cq *cq);
int rpcrdma_iwarp_cq_fd(struct rpcrdma_cq *cq);
int rpcrdma_iwarp_ack_cq_events(struct rpcrdma_cq *cq);
void rpcrdma_iwarp_cq_push(struct iw_cq *cq, const struct rpcrdma_wc *wc);
void rpcrdma_iwarp_cq_attach(struct iw_qp *qp);
void rpcrdma_iwarp_cq_detach(struct iw_qp *qp);
/* The QP's socket in (on) or out of its CQs' epoll sets; _out updates
 * the send CQ's EPOLLOUT from qp->want_out. */
void rpcrdma_iwarp_cq_watch(struct iw_qp *qp, bool on);
void rpcrdma_iwarp_cq_watch_out(struct iw_qp *qp);
/* May a QP (serialized by `serial`, or not: NULL) be created on cq. */
bool rpcrdma_iwarp_cq_may_attach(struct iw_cq *cq, const pthread_mutex_t *serial);
bool rpcrdma_iwarp_cq_active(struct iw_qp *qp, uint64_t now);

/* iwarp_srq.c */
int rpcrdma_iwarp_create_srq(struct rpcrdma_pd *pd,
			     const struct rpcrdma_srq_attr *attr,
			     struct rpcrdma_srq **out);
int rpcrdma_iwarp_destroy_srq(struct rpcrdma_srq *srq);
int rpcrdma_iwarp_post_srq_recv(struct rpcrdma_srq *srq,
				struct rpcrdma_recv_wr *wr,
				struct rpcrdma_recv_wr **bad);
int rpcrdma_iwarp_modify_srq(struct rpcrdma_srq *srq, uint32_t limit);
int rpcrdma_iwarp_query_srq(struct rpcrdma_srq *srq,
			    struct rpcrdma_srq_state *out);
/* Takes the oldest receive into *out; false when there is none. */
bool rpcrdma_iwarp_srq_take(struct iw_srq *srq, struct iw_rwqe *out);
void rpcrdma_iwarp_srq_attach(struct iw_srq *srq, bool on);

/* iwarp_qp.c */
int rpcrdma_iwarp_create_qp(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
			    const struct rpcrdma_qp_attr *attr,
			    struct rpcrdma_qp **out);
int rpcrdma_iwarp_destroy_qp(struct rpcrdma_qp *qp);
int rpcrdma_iwarp_post_recv(struct rpcrdma_qp *qp, struct rpcrdma_recv_wr *wr,
			    struct rpcrdma_recv_wr **bad);
int rpcrdma_iwarp_get_terminate(struct rpcrdma_qp *qp,
				struct rpcrdma_terminate_info *info);
int rpcrdma_iwarp_qp_counters(struct rpcrdma_qp *qp,
			      struct rpcrdma_qp_counters *out);
void rpcrdma_iwarp_qp_start(struct iw_qp *qp, int fd, bool crc, uint32_t ird,
			    uint32_t ord, bool responder, bool rtr);
void rpcrdma_iwarp_qp_error(struct iw_qp *qp, int status);
void rpcrdma_iwarp_qp_terminate(struct iw_qp *qp, uint8_t layer,
				uint8_t etype, uint8_t ecode,
				const uint8_t *seg, size_t seg_len,
				bool with_rdma_hdr);
void rpcrdma_iwarp_qp_update_arm(struct iw_qp *qp);
void rpcrdma_iwarp_complete(struct iw_qp *qp, bool send_side, uint64_t wr_id,
			    enum rpcrdma_wc_opcode op,
			    enum rpcrdma_wc_status st, uint32_t byte_len,
			    unsigned flags, uint32_t inv_rkey, uint32_t vendor);

/* A QP lock on the data path: not taken when the consumer serializes
 * the QP (iw_qp.serial), whose lock then orders everything these would. */
static inline void iw_lock(const struct iw_qp *qp, pthread_mutex_t *m)
{
	if (!qp->serial)
		pthread_mutex_lock(m);
}

static inline void iw_unlock(const struct iw_qp *qp, pthread_mutex_t *m)
{
	if (!qp->serial)
		pthread_mutex_unlock(m);
}

/* iwarp_qp_tx.c */
int rpcrdma_iwarp_post_send(struct rpcrdma_qp *qp, struct rpcrdma_send_wr *wr,
			    struct rpcrdma_send_wr **bad);
/* A pass of TX: at most IW_TX_PASS bytes, then want_out for the rest. */
void rpcrdma_iwarp_tx_progress(struct iw_qp *qp);
/* More TX within the caller's pass (RX answering a Read Request). */
void rpcrdma_iwarp_tx_more(struct iw_qp *qp);
void rpcrdma_iwarp_tx_progress_locked(struct iw_qp *qp); /* tx_lock held */
/* TX has work it could not run now: the consumer's poll, or the progress
 * thread on EPOLLOUT, runs it. */
void rpcrdma_iwarp_tx_want_out(struct iw_qp *qp);
void rpcrdma_iwarp_tx_flush(struct iw_qp *qp, const struct rpcrdma_terminate_info *t);
/* With tx_lock: the send queue's oldest entry leaves it (iwarp_qp_tx.c). */
void rpcrdma_iwarp_sq_pop(struct iw_qp *qp);
/* The completion opcode of a send-queue work request's opcode. */
enum rpcrdma_wc_opcode rpcrdma_iwarp_wc_op(enum rpcrdma_wr_opcode op);
int rpcrdma_iwarp_tx_raw(struct iw_qp *qp, const struct rpcrdma_iwarp_ddp_hdr *h,
			 const void *payload, size_t len);

/* iwarp_qp_rx.c */
void rpcrdma_iwarp_rx_progress(struct iw_qp *qp, bool blocking_lock);
void rpcrdma_iwarp_rx_progress_locked(struct iw_qp *qp); /* rx_lock held */
void rpcrdma_iwarp_rx_init(struct iw_rx *rx);

/* iwarp_cm.c */
int rpcrdma_iwarp_create_channel(struct rpcrdma_dev *dev,
				 struct rpcrdma_cm_channel **out);
int rpcrdma_iwarp_destroy_channel(struct rpcrdma_cm_channel *ch);
int rpcrdma_iwarp_get_cm_event(struct rpcrdma_cm_channel *ch,
			       struct rpcrdma_cm_event **ev);
int rpcrdma_iwarp_ack_cm_event(struct rpcrdma_cm_event *ev);
int rpcrdma_iwarp_create_id(struct rpcrdma_cm_channel *ch, void *context,
			    struct rpcrdma_cm_id **out);
int rpcrdma_iwarp_destroy_id(struct rpcrdma_cm_id *id);
int rpcrdma_iwarp_resolve(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			  socklen_t addrlen);
int rpcrdma_iwarp_listen(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
			 socklen_t addrlen, int backlog);
int rpcrdma_iwarp_connect(struct rpcrdma_cm_id *id,
			  const struct rpcrdma_conn_param *param);
int rpcrdma_iwarp_accept(struct rpcrdma_cm_id *id,
			 const struct rpcrdma_conn_param *param);
int rpcrdma_iwarp_reject(struct rpcrdma_cm_id *id, const void *private_data,
			 uint8_t private_data_len);
int rpcrdma_iwarp_disconnect(struct rpcrdma_cm_id *id);
void rpcrdma_iwarp_ep_event(struct iw_ep *ep, uint32_t events);
void rpcrdma_iwarp_ep_timer(struct iw_ep *ep, uint64_t now);
/* After setting ep->deadline_ns or deferring its QP: puts ep on the
 * device's timed list if it is not there.  Takes dev->lock; call it
 * without ep_lock. */
void rpcrdma_iwarp_ep_timed(struct iw_ep *ep);
/* Takes ep off the timed list (dev->lock held). */
void rpcrdma_iwarp_ep_untimed_locked(struct iw_ep *ep);
/* The progress thread's work on a serialized QP (events: what epoll said,
 * or EPOLLIN | EPOLLOUT when it comes back to a deferred one).  Returns
 * when to try again (its consumer was inside), or 0 when it ran. */
uint64_t rpcrdma_iwarp_serial_event(struct iw_qp *qp, uint32_t events);
void rpcrdma_iwarp_post_cm_event(struct iw_ep *ep,
				 enum rpcrdma_cm_event_type type, int status,
				 const void *pd, size_t pd_len, uint8_t ird,
				 uint8_t ord, struct iw_ep *listener);
void rpcrdma_iwarp_ep_free(struct iw_ep *ep);

#endif
