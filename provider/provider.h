/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The provider interface: one verbs-shaped ops table per RDMA provider.
 *
 * Two providers implement it: "iwarp" (our userspace soft-iWARP over TCP,
 * provider/iwarp/) and "verbs" (rdma-core: libibverbs + librdmacm,
 * provider/verbs/).  Providers never know RPC.  The semantics are those of
 * verbs and librdmacm, not TCP's: a Send lands in a posted receive buffer
 * or is a fatal error; RDMA Read/Write move registered memory with no help
 * from the target application; completions are polled from CQs.
 *
 * Object model: every object below is a "base" struct that the provider
 * embeds as the FIRST member of its own, larger struct, so the generic
 * fields are readable by consumers and the provider can downcast.  Every
 * call goes through dev->ops; the static inline wrappers at the end do that.
 *
 * Conventions: every int-returning op returns 0 (or a non-negative count)
 * on success and a negative enum rpcrdma_error on failure.  Nothing here
 * blocks unless it says so.  Threads: a QP's post_send/post_recv may be
 * called from any thread but not concurrently for the same QP; a CQ is
 * polled by one thread at a time; CM channel calls likewise; a shared
 * receive queue's calls from any thread at any time (while its QPs take
 * receives on other threads).
 *
 * Connection set-up follows librdmacm:
 *   active:  create_id -> resolve(addr) -> create_qp -> connect
 *            -> event ESTABLISHED (peer's private data) | REJECTED | ...
 *   passive: create_id -> listen -> event CONNECT_REQUEST (new id, peer's
 *            private data) -> create_qp on the new id -> accept | reject
 *            -> event ESTABLISHED on the new id
 *   either:  disconnect -> event DISCONNECTED on both sides; outstanding
 *            work requests complete with RPCRDMA_WC_WR_FLUSH_ERR.
 */
#ifndef RPCRDMA_PROVIDER_H
#define RPCRDMA_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rpcrdma/error.h"

struct rpcrdma_provider_ops;

/* ---------------------------------------------------------------------
 * Device
 */

/* Parameters for opening a device; zero means "provider default". */
struct rpcrdma_dev_params {
	const char *device;        /* verbs: device name (NULL = first);
				      iwarp: ignored */
	unsigned connect_timeout_ms; /* address/route resolution + TCP/MPA
					handshake / CM connect (default 5000) */
	bool mpa_crc;              /* iwarp: ask for MPA CRC32c (RFC 5044
				      §7.1 'C' bit) */
	bool mpa_require_crc;      /* iwarp: reject peers that refuse CRC */
	unsigned max_fpdu;         /* iwarp: cap on FPDU size (0 = from path
				      MSS) */
	bool manual_progress;      /* the consumer polls each CQ (or waits
				      on its fd) whenever work may be
				      pending, as libfabric's
				      FI_PROGRESS_MANUAL: a software provider
				      then runs no data progress of its own
				      (iwarp: its thread no longer wakes per
				      message; it still notices a peer that
				      closes, and a send queue TCP held
				      back).  Hardware ignores it. */
};

/* What a device can do for memory registration and invalidation; the rpc
 * layer chooses its strategy from these (rpc/invalidate.c,
 * docs/DEVICES.md). */
enum rpcrdma_dev_cap {
	RPCRDMA_DEV_CAP_MW = 1u << 0,          /* type-2 memory windows */
	RPCRDMA_DEV_CAP_SEND_WITH_INV = 1u << 1, /* posting SEND_WITH_INV
						    invalidates
						    invalidate_rkey at the
						    peer */
	RPCRDMA_DEV_CAP_TERMINATE_INFO = 1u << 2, /* get_terminate() works */
	RPCRDMA_DEV_CAP_LOCAL_INV = 1u << 3,   /* RPCRDMA_WR_LOCAL_INV works
						  (on a window's rkey) */
	RPCRDMA_DEV_CAP_RECV_INV = 1u << 4,    /* a received SEND_WITH_INV
						  is reported: WC_WITH_INV
						  and invalidated_rkey */
	RPCRDMA_DEV_CAP_INV_MR = 1u << 5,      /* the peer's SEND_WITH_INV
						  may name an MR's own rkey
						  (not only a window's) */
	RPCRDMA_DEV_CAP_IWARP = 1u << 6,       /* iWARP transport (RFC 5040):
						  RDMA Read sinks are placed
						  by tagged DDP (READ_SINK) */
	RPCRDMA_DEV_CAP_REG_VIRTUAL = 1u << 7, /* a registration names
						  virtual addresses, not
						  pages: nothing is pinned,
						  the device reads and writes
						  the process's memory at
						  that address when it is
						  used (a software provider
						  in the same process).  A
						  registration cached by
						  address stays right when
						  the memory behind it is
						  freed and mapped again */
	RPCRDMA_DEV_CAP_SRQ = 1u << 8,         /* shared receive queues
						  (create_srq and the rest;
						  max_srq > 0) */
};

struct rpcrdma_dev_attr {
	char name[64];             /* e.g. "iwarp" or "rxe_d0" */
	uint32_t max_qp_wr;        /* per work queue */
	uint32_t max_sge;          /* per work request */
	uint32_t max_cqe;
	uint64_t max_mr_size;
	uint32_t max_msg_size;     /* largest Send / RDMA op */
	uint32_t max_qp_rd_atom;   /* IRD: inbound RDMA Reads in flight */
	uint32_t max_qp_init_rd_atom; /* ORD: outbound RDMA Reads in flight */
	uint32_t max_private_data; /* usable CM private data bytes */
	uint32_t max_sge_rd;       /* SGEs of an RDMA Read's sink (iWARP:
				      1, RFC 5040 §5.2.2); post_send
				      refuses more */
	uint32_t caps;             /* enum rpcrdma_dev_cap bits */
	char caps_why[256];        /* where caps came from, for the trace:
				      driver quirks and their source */
	uint32_t vendor_id;        /* verbs: the device's (siw 0x626d74,
				      rxe 0xffffff); iwarp: 0 */
	uint32_t max_srq;          /* shared receive queues (0: none) */
	uint32_t max_srq_wr;       /* receives one of them holds */
	uint32_t max_srq_sge;      /* SGEs per receive of one */
};

struct rpcrdma_dev {
	const struct rpcrdma_provider_ops *ops;
};

/* ---------------------------------------------------------------------
 * Protection domain and memory
 */

struct rpcrdma_pd {
	struct rpcrdma_dev *dev;
};

enum rpcrdma_access {
	RPCRDMA_ACCESS_LOCAL_WRITE = 1u << 0,
	RPCRDMA_ACCESS_REMOTE_WRITE = 1u << 1,
	RPCRDMA_ACCESS_REMOTE_READ = 1u << 2,
	RPCRDMA_ACCESS_MW_BIND = 1u << 3, /* memory windows may bind to it */
	RPCRDMA_ACCESS_READ_SINK = 1u << 4, /* RDMA Read results land here
					       (implies LOCAL_WRITE).  On
					       iWARP the Read Response is a
					       tagged DDP message to this
					       STag (RFC 5040 §4.4, §5.2.2),
					       so hardware wants remote
					       write on it */
};

/* A memory region.  The remote address of byte i is addr + i (verbs
 * virtual addressing; iWARP tagged offset = that address). */
struct rpcrdma_mr {
	struct rpcrdma_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;   /* STag: 24-bit index << 8 | 8-bit key */
	unsigned access; /* enum rpcrdma_access */
};

/* A type-2 memory window: the per-RPC registration.  Bound to a range of
 * an MR with a post_send(RPCRDMA_WR_BIND_MW) that also chooses a fresh
 * key; invalidated by the peer's SEND_WITH_INV or a local
 * RPCRDMA_WR_LOCAL_INV.  rkey is the current (last bound) rkey. */
struct rpcrdma_mw {
	struct rpcrdma_pd *pd;
	uint32_t rkey;
};

/* ---------------------------------------------------------------------
 * Work requests and completions
 */

struct rpcrdma_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum rpcrdma_wr_opcode {
	RPCRDMA_WR_SEND,
	RPCRDMA_WR_SEND_WITH_INV,  /* invalidates invalidate_rkey at the peer */
	RPCRDMA_WR_RDMA_WRITE,
	RPCRDMA_WR_RDMA_READ,
	RPCRDMA_WR_LOCAL_INV,      /* invalidates invalidate_rkey locally */
	RPCRDMA_WR_BIND_MW,        /* binds bind_mw.mw to a range */
};

enum rpcrdma_send_flags {
	RPCRDMA_SEND_SIGNALED = 1u << 0,  /* generate a completion */
	RPCRDMA_SEND_SOLICITED = 1u << 1, /* Send with Solicited Event */
	RPCRDMA_SEND_FENCE = 1u << 2,     /* wait for prior RDMA Reads */
	RPCRDMA_SEND_INLINE = 1u << 3,    /* provider may copy data at post */
};

struct rpcrdma_send_wr {
	uint64_t wr_id;
	struct rpcrdma_send_wr *next;
	struct rpcrdma_sge *sg_list;
	int num_sge;
	enum rpcrdma_wr_opcode opcode;
	unsigned send_flags;        /* enum rpcrdma_send_flags */
	uint32_t invalidate_rkey;   /* SEND_WITH_INV, LOCAL_INV */
	struct {
		uint64_t remote_addr;
		uint32_t rkey;
	} rdma;                     /* RDMA_WRITE, RDMA_READ */
	struct {
		struct rpcrdma_mw *mw;
		struct rpcrdma_mr *mr;  /* region the window covers part of */
		uint64_t addr;          /* start, inside mr */
		uint64_t length;
		unsigned access;        /* REMOTE_READ / REMOTE_WRITE */
		uint8_t key;            /* new 8-bit key for the rkey */
	} bind_mw;                  /* BIND_MW: mw->rkey updated at post */
};

struct rpcrdma_recv_wr {
	uint64_t wr_id;
	struct rpcrdma_recv_wr *next;
	struct rpcrdma_sge *sg_list;
	int num_sge;
};

enum rpcrdma_wc_status {
	RPCRDMA_WC_SUCCESS = 0,
	RPCRDMA_WC_LOC_LEN_ERR,     /* message longer than receive buffer */
	RPCRDMA_WC_LOC_PROT_ERR,    /* bad local key / access */
	RPCRDMA_WC_WR_FLUSH_ERR,    /* QP went to error; WR not executed */
	RPCRDMA_WC_REM_ACCESS_ERR,  /* peer rejected our RDMA access */
	RPCRDMA_WC_REM_OP_ERR,      /* peer could not complete the op */
	RPCRDMA_WC_REM_INV_REQ_ERR, /* peer found our request invalid */
	RPCRDMA_WC_RNR_RETRY_EXC_ERR, /* no receive posted at the peer */
	RPCRDMA_WC_RETRY_EXC_ERR,   /* transport retries exhausted */
	RPCRDMA_WC_MW_BIND_ERR,
	RPCRDMA_WC_FATAL_ERR,
	RPCRDMA_WC_GENERAL_ERR,
};

enum rpcrdma_wc_opcode {
	RPCRDMA_WC_SEND,
	RPCRDMA_WC_RDMA_WRITE,
	RPCRDMA_WC_RDMA_READ,
	RPCRDMA_WC_LOCAL_INV,
	RPCRDMA_WC_BIND_MW,
	RPCRDMA_WC_RECV,
};

enum rpcrdma_wc_flags {
	RPCRDMA_WC_WITH_INV = 1u << 0, /* RECV of a SEND_WITH_INV:
					  invalidated_rkey is valid */
	RPCRDMA_WC_SOLICITED = 1u << 1,
};

struct rpcrdma_qp;

struct rpcrdma_wc {
	uint64_t wr_id;
	enum rpcrdma_wc_status status;
	enum rpcrdma_wc_opcode opcode; /* valid for errors too */
	uint32_t byte_len;             /* RECV: bytes placed */
	unsigned wc_flags;             /* enum rpcrdma_wc_flags */
	uint32_t invalidated_rkey;
	struct rpcrdma_qp *qp;
	uint32_t vendor_err;  /* iwarp: Terminate layer<<12|type<<8|code
				 when the failure came from a Terminate */
};

/* ---------------------------------------------------------------------
 * Completion queue: a pollable fd that becomes readable after an armed CQ
 * receives a completion.  Consumer loop (arm, drain, ack — no lost wake-up):
 *     wait until fd readable;  ack_events(cq);
 *     do { n = poll(cq) ... } while (n > 0);
 *     req_notify(cq);
 *     do { n = poll(cq) ... } while (n > 0);   // catch the race
 *
 * Many QPs may complete to one CQ (a poll group: hundreds to thousands of
 * connections, one CQ and one shared receive queue per thread).  poll_cq
 * and ack_cq_events then cost what the QPs with work cost, not what the
 * idle ones would: a software provider runs only the engines of QPs whose
 * sockets have data or room (iwarp: those its CQ's epoll set reports
 * ready), and a QP destroyed leaves the others of its CQ alone.
 */
struct rpcrdma_cq {
	struct rpcrdma_dev *dev;
	void *context;
	int cqe;
};

/* ---------------------------------------------------------------------
 * Shared receive queue (SRQ), as verbs' ibv_srq.
 *
 * One queue of receives feeding every QP created with qp_attr.srq set to
 * it (QPs of its protection domain).  Such a QP has no receive queue of
 * its own: post_recv on it is refused (RPCRDMA_ERR_INVAL, *bad = wr) and
 * max_recv_wr / max_recv_sge of its attr are ignored.
 *
 * Taking: when a Send message starts to arrive on one of those QPs (iWARP:
 *   the first DDP segment of an untagged message on queue 0, RFC 5041
 *   §5.3; IB: the first packet), the QP takes the oldest receive still in
 *   the SRQ: receives are taken in posting order, whatever QP takes them.
 *   The receive is then validated and filled exactly as a QP's own one
 *   (its SGEs against the SRQ's PD) and completes on that QP's recv_cq
 *   with wc.qp the QP (so wc.qp->context names the connection).  One
 *   QP's receive completions come in its message order; those of
 *   different QPs in the order their messages end.
 * Empty: a Send that finds no receive is fatal for the QP it came on, not
 *   for the SRQ or its other QPs (iWARP: Terminate, DDP "no buffer",
 *   RFC 5041 §7.2; IB: RNR NAK, and the verbs provider's senders retry
 *   none, so the sender sees RNR_RETRY_EXC_ERR).
 * A QP that dies (disconnect, Terminate, a failed receive, destroy_qp):
 *   the receive it was filling, a message begun and not ended, completes
 *   with WR_FLUSH_ERR on its recv_cq; receives it had not taken stay in
 *   the SRQ for the other QPs, nothing else is flushed.  Completions of a
 *   QP still in a CQ when the QP is destroyed come with wc.qp NULL (verbs
 *   drops those of the QP's own queues, as before, but never an SRQ
 *   receive's).  Where a device loses the receive of a message in
 *   progress instead, docs/DEVICES.md says so.
 * destroy_srq: refused (RPCRDMA_ERR_BUSY) while a QP uses the SRQ.  The
 *   receives still posted are dropped without completions (verbs: the
 *   device does not flush an SRQ): their buffers are the consumer's again
 *   once it returns.
 * Limit (IBV_EVENT_SRQ_LIMIT_REACHED, the "low watermark"): modify_srq
 *   arms it with a limit (0 disarms; more than max_wr is INVAL).  When a
 *   QP takes a receive and fewer than `limit` remain in the SRQ, the limit
 *   is disarmed (query_srq reports limit 0) and the event is pending: fd
 *   becomes readable and the next query_srq reports limit_reached (once;
 *   that query makes fd unreadable again).  Arm again to hear of the next
 *   one.  No signal, no thread: the consumer polls query_srq (after
 *   polling its CQ, say) or watches fd.  verbs: the device reports it as
 *   an asynchronous event of the device context; query_srq reads those
 *   events (without blocking) and fd is an epoll fd holding the context's
 *   event fd, so it may also wake for another event of the device.
 */
struct rpcrdma_srq_attr {
	uint32_t max_wr;   /* receives it holds (0: provider default) */
	uint32_t max_sge;  /* SGEs per receive (0: 1) */
	uint32_t limit;    /* armed at creation (0: not armed) */
	void *context;
};

struct rpcrdma_srq {
	struct rpcrdma_dev *dev;
	struct rpcrdma_pd *pd;
	void *context;
	uint32_t max_wr;   /* actual sizes after creation */
	uint32_t max_sge;
	int fd;            /* readable while a limit event is pending */
};

struct rpcrdma_srq_state {
	uint32_t posted;     /* receives posted and not completed yet
				(verbs: whose completion was not polled
				yet; the device may hold fewer) */
	uint32_t limit;      /* the armed limit; 0 when not armed */
	bool limit_reached;  /* the limit event came since the last
				query_srq (reported once) */
};

/* ---------------------------------------------------------------------
 * Queue pair (reliable connected)
 */
struct rpcrdma_qp_attr {
	struct rpcrdma_cq *send_cq;
	struct rpcrdma_cq *recv_cq;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	bool sq_sig_all;   /* every send WR generates a completion */
	void *context;
	struct rpcrdma_srq *srq; /* receives come from it (NULL: the QP's
				    own receive queue of max_recv_wr) */
	/* Optional: a mutex the consumer holds around every call it makes
	 * on this QP and on its CQs (create_qp and destroy_qp, post_send,
	 * post_recv, poll_cq, req_notify_cq, ack_cq_events, and disconnect
	 * of its id), the CQs serving this QP alone.  A software provider
	 * then takes no lock of its own on those paths, and takes this one,
	 * never waiting for it, before its own thread does work of the QP
	 * (iwarp: a peer that closed, a send queue TCP held back).  In the
	 * manner of rdma-core's thread domains (ibv_alloc_td), which let a
	 * driver drop the locks its consumer makes redundant.  NULL: the
	 * provider locks as usual.  Hardware, and iwarp without manual
	 * progress, ignore it. */
	pthread_mutex_t *serial_lock;
};

struct rpcrdma_cm_id;

struct rpcrdma_qp {
	struct rpcrdma_dev *dev;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cq *send_cq;
	struct rpcrdma_cq *recv_cq;
	void *context;
	uint32_t max_send_wr;   /* actual sizes after creation */
	uint32_t max_recv_wr;   /* 0 with an SRQ */
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	struct rpcrdma_srq *srq;
};

/* An iWARP Terminate as sent or received (RFC 5040 §7.1, §7.2). */
struct rpcrdma_terminate_info {
	bool valid;
	bool sent;          /* true: we sent it; false: peer sent it */
	uint8_t layer;      /* 0 RDMAP, 1 DDP, 2 LLP (MPA) */
	uint8_t etype;
	uint8_t ecode;
};

/* Where a QP's payload went, for measuring copies (docs: "zero copy" is
 * measured, not claimed).  Bytes since the QP was created.  A software
 * provider moves the data itself and counts the bytes it copied in user
 * space; hardware places data itself, and its provider leaves the
 * qp_counters op NULL (rpcrdma_qp_counters() then says NOTSUP).
 * iwarp: payload in FPDUs of 8 KiB or more (any large message on
 * loopback, where the MSS is 32-64 KiB) is received straight from the
 * socket into the target memory, except at most 16 KiB of the first FPDU
 * of a large message that arrives after a run of small ones; payload in
 * smaller FPDUs is read in batches and copied, which costs less than a
 * recv per FPDU (provider/iwarp/iwarp_qp_rx.c). */
struct rpcrdma_qp_counters {
	uint64_t rx_tagged_bytes;    /* RDMA Write and Read Response payload
					placed */
	uint64_t rx_tagged_copied;   /* ...of which went through a
					user-space copy (staging) */
	uint64_t rx_untagged_bytes;  /* Send payload placed in posted
					receives */
	uint64_t rx_untagged_copied; /* ...of which copied from staging */
	uint64_t tx_bytes;           /* payload sent (all opcodes) */
	uint64_t tx_copied;          /* ...of which copied in user space
					(INLINE sends) */
};

/* ---------------------------------------------------------------------
 * Connection manager
 */
struct rpcrdma_cm_channel {
	struct rpcrdma_dev *dev;
	int fd;     /* readable when an event may be pending, and stays
		       readable while one is (a consumer may take a few
		       per wake-up: rpc/loop.c drain_cm) */
};

struct rpcrdma_cm_id {
	struct rpcrdma_dev *dev;
	struct rpcrdma_cm_channel *channel;
	struct rpcrdma_qp *qp;
	void *context;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage peer_addr;
};

struct rpcrdma_conn_param {
	const void *private_data;
	uint8_t private_data_len;
	uint8_t responder_resources;  /* IRD we offer */
	uint8_t initiator_depth;      /* ORD we want */
};

enum rpcrdma_cm_event_type {
	RPCRDMA_CM_EVENT_CONNECT_REQUEST,  /* on listener: ev->id is new */
	RPCRDMA_CM_EVENT_ESTABLISHED,
	RPCRDMA_CM_EVENT_REJECTED,         /* peer rejected (private data) */
	RPCRDMA_CM_EVENT_CONNECT_ERROR,    /* handshake failed/timed out */
	RPCRDMA_CM_EVENT_UNREACHABLE,
	RPCRDMA_CM_EVENT_DISCONNECTED,
	RPCRDMA_CM_EVENT_DEVICE_REMOVAL,
};

struct rpcrdma_cm_event {
	enum rpcrdma_cm_event_type type;
	struct rpcrdma_cm_id *id;         /* the id the event concerns */
	struct rpcrdma_cm_id *listen_id;  /* CONNECT_REQUEST: the listener */
	int status;                       /* 0 or negative rpcrdma_error */
	const void *private_data;         /* valid until ack_cm_event */
	uint16_t private_data_len;        /* iwarp: up to 512 (RFC 5044
					     §7.1.1); verbs: up to 255 */
	uint8_t responder_resources;      /* peer's IRD (CONNECT_REQUEST,
					     ESTABLISHED) */
	uint8_t initiator_depth;          /* peer's ORD */
};

/* ---------------------------------------------------------------------
 * The ops table.  One `static const` instance per provider.
 */
struct rpcrdma_provider_ops {
	const char *name;

	int (*open)(const struct rpcrdma_dev_params *params,
		    struct rpcrdma_dev **out);
	void (*close)(struct rpcrdma_dev *dev);
	int (*query)(struct rpcrdma_dev *dev, struct rpcrdma_dev_attr *attr);

	int (*alloc_pd)(struct rpcrdma_dev *dev, struct rpcrdma_pd **out);
	int (*dealloc_pd)(struct rpcrdma_pd *pd);

	int (*reg_mr)(struct rpcrdma_pd *pd, void *addr, size_t length,
		      unsigned access, struct rpcrdma_mr **out);
	int (*dereg_mr)(struct rpcrdma_mr *mr);
	int (*alloc_mw)(struct rpcrdma_pd *pd, struct rpcrdma_mw **out);
	int (*dealloc_mw)(struct rpcrdma_mw *mw);

	int (*create_cq)(struct rpcrdma_dev *dev, int cqe, void *context,
			 struct rpcrdma_cq **out);
	int (*destroy_cq)(struct rpcrdma_cq *cq);
	/* Up to n completions into wc[]; returns how many (0 if none), or
	 * RPCRDMA_ERR_OVERFLOW once the CQ has lost a completion (verbs: a
	 * CQ error): its QPs can no longer be trusted, disconnect them. */
	int (*poll_cq)(struct rpcrdma_cq *cq, int n, struct rpcrdma_wc *wc);
	/* Arm: the fd becomes readable at the next completion.  Returns 0
	 * when no completion can be queued already (the consumer may sleep
	 * on the fd at once), 1 when some may be (it polls once more
	 * first: a completion that came before the arm wakes nobody), or a
	 * negative error.  verbs cannot tell and always says 1. */
	int (*req_notify_cq)(struct rpcrdma_cq *cq);
	int (*cq_fd)(struct rpcrdma_cq *cq);
	/* Consume a pending notification, after the fd was seen readable.
	 * The fd may stay readable if another was pending (verbs reads one
	 * event per call, to spare a failed read per wake-up): the consumer
	 * is then woken again and calls this again. */
	int (*ack_cq_events)(struct rpcrdma_cq *cq);

	/* QPs are created on a cm_id (after resolve, or on a new id from
	 * CONNECT_REQUEST), as rdma_create_qp does. */
	int (*create_qp)(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
			 const struct rpcrdma_qp_attr *attr,
			 struct rpcrdma_qp **out);
	int (*destroy_qp)(struct rpcrdma_qp *qp);
	/* Chained WRs are processed in order; on failure *bad points at the
	 * first WR not posted and the WRs before it were posted. */
	int (*post_send)(struct rpcrdma_qp *qp, struct rpcrdma_send_wr *wr,
			 struct rpcrdma_send_wr **bad);
	int (*post_recv)(struct rpcrdma_qp *qp, struct rpcrdma_recv_wr *wr,
			 struct rpcrdma_recv_wr **bad);
	/* Last Terminate sent or received on this QP (iwarp); NOTSUP where
	 * the provider cannot tell. */
	int (*get_terminate)(struct rpcrdma_qp *qp,
			     struct rpcrdma_terminate_info *info);

	int (*create_channel)(struct rpcrdma_dev *dev,
			      struct rpcrdma_cm_channel **out);
	int (*destroy_channel)(struct rpcrdma_cm_channel *ch);
	/* Non-blocking: RPCRDMA_ERR_AGAIN when no event is pending. */
	int (*get_cm_event)(struct rpcrdma_cm_channel *ch,
			    struct rpcrdma_cm_event **ev);
	int (*ack_cm_event)(struct rpcrdma_cm_event *ev);
	int (*create_id)(struct rpcrdma_cm_channel *ch, void *context,
			 struct rpcrdma_cm_id **out);
	int (*destroy_id)(struct rpcrdma_cm_id *id);
	/* Binds the id to the device that reaches addr; may block up to the
	 * connect time-out. */
	int (*resolve)(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
		       socklen_t addrlen);
	int (*listen)(struct rpcrdma_cm_id *id, const struct sockaddr *addr,
		      socklen_t addrlen, int backlog);
	int (*connect)(struct rpcrdma_cm_id *id,
		       const struct rpcrdma_conn_param *param);
	int (*accept)(struct rpcrdma_cm_id *id,
		      const struct rpcrdma_conn_param *param);
	int (*reject)(struct rpcrdma_cm_id *id, const void *private_data,
		      uint8_t private_data_len);
	int (*disconnect)(struct rpcrdma_cm_id *id);

	/* Optional (NULL: RPCRDMA_ERR_NOTSUP through the wrapper): the
	 * QP's placement and copy counters.  Any thread, any time while the
	 * QP exists. */
	int (*qp_counters)(struct rpcrdma_qp *qp,
			   struct rpcrdma_qp_counters *out);

	/* Shared receive queues (struct rpcrdma_srq above); NULL where the
	 * provider has none (the wrappers say NOTSUP); create_srq on a
	 * device without RPCRDMA_DEV_CAP_SRQ says NOTSUP too. */
	int (*create_srq)(struct rpcrdma_pd *pd,
			  const struct rpcrdma_srq_attr *attr,
			  struct rpcrdma_srq **out);
	int (*destroy_srq)(struct rpcrdma_srq *srq);
	/* As post_recv: chained, in order; on failure *bad points at the
	 * first WR not posted (RPCRDMA_ERR_NOMEM: the SRQ is full). */
	int (*post_srq_recv)(struct rpcrdma_srq *srq,
			     struct rpcrdma_recv_wr *wr,
			     struct rpcrdma_recv_wr **bad);
	/* Arms the limit event at `limit` receives (0 disarms). */
	int (*modify_srq)(struct rpcrdma_srq *srq, uint32_t limit);
	int (*query_srq)(struct rpcrdma_srq *srq,
			 struct rpcrdma_srq_state *out);
};

/* Registry: "iwarp" always; "verbs" when built with rdma-core.  NULL if
 * the name is unknown. */
const struct rpcrdma_provider_ops *rpcrdma_provider_find(const char *name);
/* NULL-terminated list of built-in providers. */
const struct rpcrdma_provider_ops *const *rpcrdma_provider_list(void);

extern const struct rpcrdma_provider_ops rpcrdma_iwarp_ops;
#ifdef RPCRDMA_HAVE_VERBS
extern const struct rpcrdma_provider_ops rpcrdma_verbs_ops;
#endif

/* ---------------------------------------------------------------------
 * Wrappers: dispatch through the object's device.
 */
static inline int rpcrdma_post_send(struct rpcrdma_qp *qp,
				    struct rpcrdma_send_wr *wr,
				    struct rpcrdma_send_wr **bad)
{
	return qp->dev->ops->post_send(qp, wr, bad);
}

static inline int rpcrdma_post_recv(struct rpcrdma_qp *qp,
				    struct rpcrdma_recv_wr *wr,
				    struct rpcrdma_recv_wr **bad)
{
	return qp->dev->ops->post_recv(qp, wr, bad);
}

static inline int rpcrdma_post_srq_recv(struct rpcrdma_srq *srq,
					struct rpcrdma_recv_wr *wr,
					struct rpcrdma_recv_wr **bad)
{
	if (!srq->dev->ops->post_srq_recv)
		return RPCRDMA_ERR_NOTSUP;
	return srq->dev->ops->post_srq_recv(srq, wr, bad);
}

static inline int rpcrdma_query_srq(struct rpcrdma_srq *srq,
				    struct rpcrdma_srq_state *out)
{
	if (!srq->dev->ops->query_srq)
		return RPCRDMA_ERR_NOTSUP;
	return srq->dev->ops->query_srq(srq, out);
}

static inline int rpcrdma_poll_cq(struct rpcrdma_cq *cq, int n,
				  struct rpcrdma_wc *wc)
{
	return cq->dev->ops->poll_cq(cq, n, wc);
}

static inline int rpcrdma_qp_counters(struct rpcrdma_qp *qp,
				      struct rpcrdma_qp_counters *out)
{
	if (!qp->dev->ops->qp_counters)
		return RPCRDMA_ERR_NOTSUP;
	return qp->dev->ops->qp_counters(qp, out);
}

/* STag layout (RFC 5040 §8.1 leaves it to the implementation; siw and
 * verbs use index << 8 | key). */
static inline uint32_t rpcrdma_stag(uint32_t index, uint8_t key)
{
	return index << 8 | key;
}

#endif
