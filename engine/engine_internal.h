/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Engine internals shared by engine.c (configuration, connection inputs,
 * event and pending queues, dispatch of completions), its concepts'
 * files (receive buffers, invalidation, the work-request queue, the
 * send queue, credits, negotiation), requester.c and responder.c.  Not
 * installed.
 *
 * Habits (docs/ARCHITECTURE.md, engine/): an explicit per-RPC state enum, every state saying
 * how it unwinds when the connection dies; starvation is a state with a
 * queue (the pending FIFOs), never a busy loop; wr_id names a typed tag.
 */
#ifndef RPCRDMA_ENGINE_INTERNAL_H
#define RPCRDMA_ENGINE_INTERNAL_H

#include "engine/engine.h"
#include "wire/cm_private_data.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"

#define RPCRDMA_NIL UINT32_MAX
/* Registrations one call can hold: a Read chunk or PZRC segment per
 * message piece, one pad, one per Write chunk, one Reply chunk. */
#define RPCRDMA_RQ_MAX_MR (RPCRDMA_ENGINE_MAX_IOV + RPCRDMA_MAX_WRITE_CHUNKS + 2)
#define RPCRDMA_RS_MAX_MR (RPCRDMA_ENGINE_MAX_IOV + 2)

/*
 * Requester per-RPC state.  A call's slot owns its send buffer, its
 * registrations and (at most) one held receive buffer.
 */
enum rpcrdma_rq_state {
	/* Slot unused. */
	RQ_FREE = 0,
	/* Submitted (or to be resent) and waiting on the requester pending
	 * FIFO; rq->wait says for what: the connection, a credit (RFC 8166
	 * §3.3.1), a registration (mem->reg returned AGAIN) or send queue
	 * space.  Holds nothing: a failed attempt releases what it took.
	 * Connection loss: stays queued; sent on the next connection. */
	RQ_QUEUED,
	/* Marshalled and its Send handed out: one credit in use, its
	 * chunks exposed to the peer.  Waiting for the reply (RDMA_MSG,
	 * RDMA_NOMSG or RDMA_ERROR with this XID).
	 * Connection loss: registrations released (the QP is dead, so the
	 * peer can no longer reach them; release() must kill the rkeys);
	 * then resent with the same XID if retries remain (-> RQ_QUEUED,
	 * counted as a retransmission), else completed with
	 * RPCRDMA_ERR_DISCONNECTED. */
	RQ_SENT,
	/* Reply matched and decoded; LOCAL_INV posted for every handle the
	 * peer did not invalidate; waiting for those completions before
	 * the upper layer may touch the memory (RFC 8166 §4.4.1).  May hold
	 * the receive buffer of an inline reply (copied out at the end).
	 * Connection loss: the peer cannot reach the memory any more, so
	 * registrations are released and the call completes with the
	 * reply's status. */
	RQ_INVALIDATING,
	/* Completion event queued; the slot is free once it is polled
	 * (its Send is done: the reply, or the lost connection, says so).
	 * Connection loss: nothing to do.  A call completes exactly once:
	 * only complete_call() enters this state, and only from the states
	 * above. */
	RQ_COMPLETE,
};

enum rpcrdma_rq_wait {
	WAIT_NONE = 0,
	WAIT_CONN,
	WAIT_CREDIT,
	WAIT_MR,
	WAIT_SQ,
};

/* A received transport header, version-neutral: what the roles need from
 * a v1 or a v2 header (the two share chunk lists, header type numbers
 * 0/1/4 and error codes 1/2). */
struct rx_view {
	uint32_t vers, xid, credit, proc;
	bool response;        /* v2 RPCRDMA2_F_RESPONSE; v1: by direction */
	uint32_t inv_handle;  /* v2 rdma_inv_handle; 0 in v1 */
	const struct rpcrdma_chunk_lists *cl;
	struct rpcrdma_v2_error err; /* proc == RDMA_ERROR: code and body */
	struct rpcrdma_engine_msgp msgp; /* RFC 5666 RDMA_MSGP */
};

/* How a call went (RFC 8166 §3.5): a Short message (all inline), a
 * Chunked message (DDP-eligible arguments in Read chunks) or a Long
 * message (the whole Payload stream in a Position-Zero Read chunk). */
enum message_shape { SHAPE_SHORT, SHAPE_CHUNKED, SHAPE_LONG };

/*
 * Responder per-RPC state.  A slot owns its send buffer, the receive
 * buffer of an inline call (read in place) or a registered one it was
 * rebuilt in (from Read chunks), and the local registrations of its
 * reply.
 */
enum rpcrdma_rs_state {
	/* Slot unused. */
	RS_FREE = 0,
	/* Pulling Read chunks with RDMA Read: reads in flight up to the ORD,
	 * the rest queued (on the responder pending FIFO when the ORD or the
	 * send queue is exhausted, counted as a stall).
	 * Connection loss: everything freed; the Requester resends. */
	RS_READING,
	/* INCOMING_CALL event queued or delivered; waiting for
	 * submit_reply().  Connection loss: the slot is marked stale;
	 * submit_reply() then returns RPCRDMA_ERR_DISCONNECTED and frees
	 * it. */
	RS_IN_ULP,
	/* Reply (or RDMA_ERROR) built but waiting on the responder pending
	 * FIFO for send queue space.  Connection loss: dropped, REPLY_SENT
	 * with RPCRDMA_ERR_DISCONNECTED for a ULP reply. */
	RS_WAIT_SQ,
	/* RDMA Writes and the Send handed out; waiting for the Send
	 * completion (then REPLY_SENT).  Connection loss: as RS_WAIT_SQ. */
	RS_SENDING,
	/* REPLY_SENT event queued (event_pending) and/or the Send not yet
	 * known complete (send_pending: a reply that reads nothing of the
	 * upper layer's gets REPLY_SENT at once, send_queue.c); freed when
	 * both are over.  Connection loss: the Send will not complete. */
	RS_DONE,
};

/* What a work request is for, named by its wr_id (rpcrdma_wr_id): the
 * kind of slot (or a receive buffer) and the operation. */
enum wr_kind { WRK_RECV = 1, WRK_RQ = 2, WRK_RS = 3 };
enum wr_op { WRO_RECV = 1, WRO_SEND, WRO_LINV, WRO_READ, WRO_WRITE, WRO_BIND };

/* A Requester's call slot: one RPC call from submission to completion. */
struct requester_slot {
	enum rpcrdma_rq_state state;
	enum rpcrdma_rq_wait wait;
	uint32_t idx;
	uint32_t xid;
	uint32_t next; /* pending FIFO link */
	uint16_t epoch; /* connection the Send went out on */
	struct rpcrdma_call_req req;
	struct rpcrdma_iov msg[RPCRDMA_ENGINE_MAX_IOV];
	struct rpcrdma_iov results[RPCRDMA_MAX_WRITE_CHUNKS];
	uint8_t *sbuf;
	bool retransmit;     /* next send is a retransmission */
	bool in_flight;      /* holds a credit */
	bool reply_offered;  /* a Reply chunk went with the call */
	uint32_t retries;
	uint32_t nmr;
	struct rpcrdma_engine_mr mr[RPCRDMA_RQ_MAX_MR];
	bool mr_remote[RPCRDMA_RQ_MAX_MR];
	bool mr_dead[RPCRDMA_RQ_MAX_MR];  /* rkey invalidated */
	bool mr_linv[RPCRDMA_RQ_MAX_MR];  /* covered by a LOCAL_INV posted */
	uint32_t inv_pending;
	uint32_t sq_held;    /* send queue entries reserved, not posted
				yet (its LOCAL_INVs) */
	uint8_t pad[4];      /* zero roundup for Long Call pieces */
	/* Reply as decoded. */
	int status;
	size_t reply_len;
	unsigned nresults;
	size_t result_len[RPCRDMA_MAX_WRITE_CHUNKS];
	uint32_t vers_low, vers_high;
	uint32_t held_rbuf;  /* inline reply awaiting copy, or NIL */
	size_t held_off;
	struct rpcrdma_engine_msgp msgp; /* padded reply */
	/* Version 2. */
	uint32_t inv_handle; /* rdma_inv_handle named in the call (§3.3) */
	enum message_shape shape;    /* shape of the last attempt */
	uint32_t offered_writes; /* Write chunks in the last attempt */
	/* What the last attempt offered, segment by segment (each of our
	 * chunks has at most one): a reply is checked against these, not
	 * against the caller's results (RFC 8166 §3.4.6, §4.5; draft
	 * §5.3.3: a recovery offers fewer chunks, or some empty). */
	uint8_t off_w_nsegs[RPCRDMA_MAX_WRITE_CHUNKS];
	struct rpcrdma_segment off_w[RPCRDMA_MAX_WRITE_CHUNKS];
	struct rpcrdma_segment off_reply; /* when reply_offered */
	uint32_t peer_err;   /* error code that ended the call */
	/* Recovery after an RDMA2_ERROR (§5.3.3): how the resend differs. */
	bool resend;         /* resend once invalidation is done */
	uint32_t recoveries;
	bool force_long;     /* Position-Zero Read chunk (ERR_READ_CHUNKS) */
	bool force_reply;    /* offer a Reply chunk (ERR_REPLY_RESOURCE...) */
	uint32_t max_writes; /* Write chunks at most (ERR_WRITE_CHUNKS) */
	uint32_t empty_mask; /* Write chunks offered empty (WRITE_RESOURCE) */
	bool want_bounce;    /* one-segment Long Call (ERR_SEGMENTS) */
	bool cancelled;      /* its submitter left (cancel_call): never
				sent again, its chunks invalidated */
	uint8_t *bounce;     /* the whole Payload stream, contiguous */
};

/* A Responder's slot: one received RPC call until its reply is sent. */
struct responder_slot {
	enum rpcrdma_rs_state state;
	uint32_t idx;
	uint32_t xid;
	uint32_t next;
	uint16_t epoch;      /* connection the call came in on */
	bool stale;
	bool ulp;            /* a ULP reply (REPLY_SENT due), not an error */
	bool own_reply;      /* an RPC reply the engine made (SYSTEM_ERR):
				sent like a ULP's, freed without REPLY_SENT */
	bool sys_reply;      /* msg is the engine's SYSTEM_ERR (sys_xid) */
	uint8_t sys_xid[4];  /* its XID, the first word of msg[0] */
	bool send_pending;   /* its Send not completed (send_queue.c) */
	bool open;           /* counted in rs_open: taken, no Send built */
	bool event_pending;  /* REPLY_SENT queued, not polled */
	bool hold;           /* kept after REPLY_SENT until the upper
				layer releases it (reply_req.hold) */
	uint8_t *sbuf;
	uint32_t rbuf;       /* receive buffer the inline call is read
				from in place (RPCRDMA_NIL: none) */
	uint8_t *callbuf;    /* the call: in rbuf, or rebuilt in memory
				from buf_get */
	bool call_malloced;
	void *call_cookie, *staging_cookie; /* buf_alloc's */
	bool mr_stalled;     /* waiting for registrations (counted once) */
	size_t call_len;
	struct rpcrdma_engine_mr callmr; /* LOCAL_WRITE on callbuf */
	bool callmr_valid;
	uint32_t next_read, reads_inflight;
	/* Pieces (cfg.read_piece): bytes of reads[next_read] posted, and
	 * the same cursor for completions, which come in posting order
	 * (one send queue), so a completion's length needs no record. */
	uint32_t read_off;
	uint32_t done_read, done_off;
	bool queued;         /* in rs_pending */
	/* NOMSG with further chunks: PZRC read to callbuf+scratch, then
	 * its pieces are moved between the chunks. */
	size_t scratch;
	size_t base_len;
	/* Reply (the call message stays valid until REPLY_SENT). */
	void *user;
	int reply_status;
	struct rpcrdma_iov msg[RPCRDMA_ENGINE_MAX_IOV];
	unsigned nmsg;
	uint32_t nmr;
	uint8_t *staging;    /* Long Reply's reduced stream */
	uint32_t err;        /* RDMA_ERROR to send: v2 code numbering
				(1 ERR_VERS, 2 BAD_XDR = v1 ERR_CHUNK ...);
				a v1 connection gets ERR_CHUNK for 3..9 */
	uint32_t err_vers;   /* rdma_vers to echo */
	bool err_v2;         /* the error goes out in the v2 layout */
	struct rpcrdma_v2_error ebody;
	uint32_t vers;       /* version of the call */
	uint32_t inv_handle; /* the call's rdma_inv_handle (v2) */
	struct rpcrdma_engine_msgp msgp; /* padded call */
	bool connprop;       /* this slot sends our RDMA2_CONNPROP */
	bool connprop_resp;  /* ... as the answer to the peer's (xid) */
	/* RDMA time-out (rdma_timeout.c): the state the deadline was set
	 * for; 0 when not running.  send_waited: the Send is signalled
	 * because its Writes read the upper layer's memory (emit_send's
	 * need); an unsignalled one completes only with a later request,
	 * which on an idle connection may be long in coming. */
	uint64_t rdma_deadline;
	enum rpcrdma_rs_state rdma_timed;
	bool send_waited;
	/* The arrays last, after every field a call sets when it takes the
	 * slot (rs_alloc): a call without chunks touches the slot's first
	 * page only, and a slot never taken none (9 KiB each, 64 per
	 * server connection at 32 credits). */
	/* Chunks the Requester offered (from the call header); its counts
	 * come first. */
	struct rpcrdma_chunk_lists cl;
	struct rpcrdma_engine_mr mr[RPCRDMA_RS_MAX_MR];
	/* Reads: destination offset in callbuf of each read segment. */
	uint32_t read_dst[RPCRDMA_MAX_READ_SEGMENTS];
};

/* Slots waiting for a resource (the pending queues: a slot's `next` is
 * its link), in arrival order. */
struct pending_queue {
	uint32_t head, tail;
	uint32_t n;    /* entries */
};

/* A send-queue work request handed out (send_queue.c). */
struct sq_ent {
	uint64_t wr_id;
	bool signaled;
	bool done;     /* completed, not yet at the head */
};

/* Take the whole list (its head; RPCRDMA_NIL when empty), leaving it
 * empty: a slot run from the taken list may queue itself again. */
static inline uint32_t pending_take(struct pending_queue *f)
{
	uint32_t h = f->head;
	f->head = f->tail = RPCRDMA_NIL;
	f->n = 0;
	return h;
}

/* What a configuration makes of an engine: its buffer and slot counts
 * (engine.c derives them for create and reset). */
struct rpcrdma_engine_sizes {
	uint32_t rsize, ssize, nrq, nrs, recv_target, nrbuf, sq_depth;
	uint32_t xid_map, wrq, evq, sqe; /* array entries */
	uint32_t max_header;
	size_t arena;
};

struct rpcrdma_engine {
	struct rpcrdma_engine_config cfg;
	/* What create allocated for (a reset may use less). */
	struct rpcrdma_engine_sizes cap;
	struct rpcrdma_engine_mem_ops mem;
	struct rpcrdma_engine_counters ctr;

	/* Connection. */
	bool connected;
	bool close_asked;
	uint16_t epoch;
	struct rpcrdma_inline_thresholds thr;
	uint32_t ord;
	uint32_t reads_inflight;
	uint64_t read_bytes_inflight; /* bounded by cfg.read_window */
	uint32_t sq_avail;
	/* Send-queue requests out, in posting order (send_queue.c). */
	struct sq_ent *sqe;
	uint32_t sqe_cap, sqe_head, sqe_count;
	uint32_t unsignaled, signal_every;
	uint32_t unsignaled_replies; /* reply Sends since the last signalled */
	struct rpcrdma_cm_pdata peer_pdata;

	/* Version (draft §7).  vers 0: not known yet. */
	uint32_t vers;
	bool negotiating;      /* client: v2 opener out, no answer yet */
	uint32_t neg_xid;
	uint64_t neg_deadline;
	bool peer_v1_only;     /* remembered across connections (§7.2) */
	bool fallback_reconnect; /* the opener was lost: the calls held go
				    on a new connection, in v1 */
	bool vers_failed;      /* V2_ONLY against a v1 server */
	bool neg_lost;         /* our opener timed out on this connection:
				  v1 on a guess (§7.2) */
	bool rx_closing;       /* the ends disagree on the version: every
				  message dropped until the close */
	bool peer_props;       /* RDMA2_CONNPROP received */
	uint32_t peer_rbsiz, peer_brs;

	/* Requester role. */
	uint32_t granted;      /* clamped grant, >= 1 */
	uint32_t in_flight;
	uint32_t next_xid;
	uint32_t nrq;
	struct requester_slot *rq;
	uint32_t rq_used;      /* slots from this on were never taken since
				  create or reset, and are zero (rs_used
				  likewise) */
	struct pending_queue rq_pending;
	uint32_t *rq_free;     /* stack of free slots */
	uint32_t nrq_free;
	/* XID -> slot of a call sent, direct-mapped (XIDs are sequential, so
	 * outstanding ones rarely share an entry; a miss falls back to a
	 * scan). */
	uint32_t *xid_map;
	uint32_t xid_mask;

	/* Responder role. */
	uint32_t nrs;
	struct responder_slot *rs;
	uint32_t rs_used;
	struct pending_queue rs_pending;
	uint32_t *rs_free;     /* stack of free slots */
	uint32_t nrs_free;

	/* Buffers: one registered arena (receive buffers, send
	 * buffers). */
	uint8_t *arena;
	size_t arena_len;
	struct rpcrdma_engine_mr arena_mr;
	uint32_t rsize, ssize;     /* receive / send buffer bytes */
	uint32_t nrbuf;
	uint8_t *rbufs;
	uint32_t *recv_free;           /* stack of free receive buffers */
	uint32_t nrecv_free;
	uint32_t *recv_posted;         /* ring: posted, oldest first */
	uint32_t recv_posted_head, nrecv_posted;
	uint32_t recv_target;
	bool await_first;              /* a server before the first message */
	uint32_t grant;                /* credits granted now (recv_buffers.c) */
	uint32_t grant_taken;          /* of cfg.budget, for the grant */
	bool grant_wants;              /* counted in cfg.budget->wanting */
	uint64_t grant_calls;          /* calls that came, for the idle test */
	uint64_t grant_calls_seen;     /* ... at the last tick */
	uint64_t grant_quiet_since;    /* since when none came, none open */
	uint32_t rs_open;              /* Responder slots taken, Send not yet
					  built: the peer's calls unanswered */

	/* Output queues. */
	struct rpcrdma_engine_wr *wrq;
	uint32_t wrq_cap, wrq_head, wrq_count;
	struct evq_ent { uint8_t kind; uint32_t idx; int reason; } *evq;
	uint32_t evq_cap, evq_head, evq_count;
	/* The queue create made, in the engine's block of pages (evq is
	 * another, malloc'd, once it grew), and its entries. */
	struct evq_ent *evq0;
	uint32_t evq0_cap;
	bool ev_lost;          /* an event could not be queued */

	/* No scratch headers here: a transport header being decoded or
	 * built (6-7 KiB with its embedded chunk lists) lives on the stack
	 * of the function that decodes or builds it, and is never used
	 * after it returns.  As four members they were most of this struct
	 * and four pages of every connection, where a thread's stack pages
	 * serve all its connections.  rpcrdma_engine_reset() zeroes the
	 * whole struct: a new allocation must be kept there by name. */
};

enum ev_kind { EVK_RQ = 1, EVK_RS, EVK_CLOSE, EVK_RQ_RELEASED };

/* The one definition of a wr_id: epoch (16) | kind (8) | op (8) |
 * index (32).  The epoch is the connection's (a completion flushed from
 * a connection already unwound names an old one); the index is a slot's
 * or a receive buffer's. */
static inline uint64_t rpcrdma_wr_id(const struct rpcrdma_engine *e,
				     enum wr_kind k, enum wr_op op,
				     uint32_t idx)
{
	return (uint64_t)e->epoch << 48 | (uint64_t)k << 40 |
	       (uint64_t)op << 32 | idx;
}

/* A wr_id taken apart again (completions: engine.c, send_queue.c). */
struct wr_tag {
	uint16_t epoch;
	enum wr_kind kind;
	enum wr_op op;
	uint32_t idx;
};

static inline struct wr_tag rpcrdma_wr_tag(uint64_t wr_id)
{
	struct wr_tag t;
	t.epoch = (uint16_t)(wr_id >> 48);
	t.kind = (enum wr_kind)((wr_id >> 40) & 0xff);
	t.op = (enum wr_op)((wr_id >> 32) & 0xff);
	t.idx = (uint32_t)wr_id;
	return t;
}

/* The address a work request's SGE gives for p: the engine's buffers are
 * registered at their virtual addresses (rpcrdma_engine_mem_ops). */
static inline uint64_t rpcrdma_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static inline uint8_t *rpcrdma_rbuf_ptr(const struct rpcrdma_engine *e,
					uint32_t idx)
{
	return e->rbufs + (size_t)idx * e->rsize;
}

/* work_queue.c */
/* A new work request at the tail, its send part zeroed; NULL when the
 * queue is full (an engine bug: the caller asks to close). */
struct rpcrdma_engine_wr *rpcrdma_wr_push(struct rpcrdma_engine *e);
/* The same for a receive: is_recv set, nothing else touched. */
struct rpcrdma_engine_wr *rpcrdma_wr_push_recv(struct rpcrdma_engine *e);
/* Room for n more work requests (a call's binds and Send go in
 * together or not at all). */
bool rpcrdma_wr_room(const struct rpcrdma_engine *e, uint32_t n);
/* The connection is lost: what was never handed out is forgotten. */
void rpcrdma_wr_forget(struct rpcrdma_engine *e);

/* engine.c */
void rpcrdma_ev_push(struct rpcrdma_engine *e, uint8_t kind, uint32_t idx,
		     int reason);
void rpcrdma_ask_close(struct rpcrdma_engine *e, int reason);
void rpcrdma_rq_enqueue(struct rpcrdma_engine *e, struct requester_slot *q);
void rpcrdma_rs_enqueue(struct rpcrdma_engine *e, struct responder_slot *s);
void rpcrdma_progress(struct rpcrdma_engine *e);
void rpcrdma_vers_range(const struct rpcrdma_engine *e, uint32_t *lo,
			uint32_t *hi);

/* recv_buffers.c */
/* Every buffer free, lowest first (create, reset). */
void rpcrdma_recv_init(struct rpcrdma_engine *e);
/* Buffer idx is free again (its message handled, or copied out). */
void rpcrdma_recv_put(struct rpcrdma_engine *e, uint32_t idx);
/* Post receives up to recv_target (the end of every input). */
void rpcrdma_recv_refill(struct rpcrdma_engine *e);
/* Buffer idx completed: off the posted ring; false if it was not on it. */
bool rpcrdma_recv_unpost(struct rpcrdma_engine *e, uint32_t idx);
/* The connection is lost: every posted buffer is free again. */
void rpcrdma_recv_conn_lost(struct rpcrdma_engine *e);
/* The credits a Responder grants (rdma_credit, RFC 8166 §3.3.1). */
uint32_t rpcrdma_recv_grant(const struct rpcrdma_engine *e);
/* A connection's first grant, and the receives it needs (established). */
void rpcrdma_recv_grant_reset(struct rpcrdma_engine *e);
/* A call arrived (rs_open counts it with the peer's other calls not yet
 * answered): the grant grows when they are all of it. */
void rpcrdma_recv_grant_used(struct rpcrdma_engine *e);
/* Engine tick: an idle connection's grant comes back to its first. */
void rpcrdma_recv_grant_tick(struct rpcrdma_engine *e, uint64_t now);
/* When that tick is due (UINT64_MAX: no grant to bring down). */
uint64_t rpcrdma_recv_grant_deadline(const struct rpcrdma_engine *e);
/* The connection ended, or the engine goes: its grant's share of the
 * budget goes back. */
void rpcrdma_recv_grant_release(struct rpcrdma_engine *e);

/* invalidation.c */
/* The rdma_inv_handle a call names (draft §3.3): 0 for none, always in
 * version 1. */
uint32_t rpcrdma_inv_for_call(const struct rpcrdma_engine *e,
			      const struct rpcrdma_chunk_lists *cl);
/* Draft §3.3: is h one of the handles of cl? */
bool rpcrdma_inv_named(const struct rpcrdma_chunk_lists *cl, uint32_t h);
/* May the reply of s go as a Send With Invalidate, and of which handle? */
bool rpcrdma_inv_for_reply(const struct rpcrdma_engine *e,
			   const struct responder_slot *s, uint32_t *rkey);
/* q's reply came with Send With Invalidate of inv_rkey. */
void rpcrdma_inv_remote(struct rpcrdma_engine *e, struct requester_slot *q,
			uint32_t inv_rkey);
/* A LOCAL_INV for every handle q exposed that is still alive. */
void rpcrdma_inv_exposed(struct rpcrdma_engine *e, struct requester_slot *q);
/* Every LOCAL_INV of q completed: its handles are dead. */
void rpcrdma_inv_local_done(struct requester_slot *q);

/* receive.c */
/* A message landed in receive buffer idx: classify and dispatch.  True
 * when a call now holds the buffer. */
bool rpcrdma_rx_message(struct rpcrdma_engine *e, uint32_t idx, size_t len,
			bool with_inv, uint32_t inv_rkey);

/* negotiation.c */
/* A new connection: its version (a client may open in v2) and the v2
 * state it starts from. */
void rpcrdma_neg_start(struct rpcrdma_engine *e, uint64_t now);
/* The opener's answer is overdue (§7.2): true when that was handled. */
bool rpcrdma_neg_tick(struct rpcrdma_engine *e, uint64_t now);
void rpcrdma_neg_conn_lost(struct rpcrdma_engine *e);
/* The connection speaks vers from now on (§7.3: never switched). */
void rpcrdma_neg_fix(struct rpcrdma_engine *e, uint32_t vers);
/* The opener was answered ERR_VERS (range lo..hi). */
void rpcrdma_neg_refused(struct rpcrdma_engine *e, uint32_t lo, uint32_t hi);
/* The opener was answered without an error: v2 it is. */
void rpcrdma_neg_answered(struct rpcrdma_engine *e,
			  const struct rpcrdma_v2_hdr *h);
/* Linux svcrdma's answer to a v2 message: a v1-layout ERR_VERS. */
bool rpcrdma_neg_v1_err_vers(const uint8_t *buf, size_t len, uint32_t *lo,
			     uint32_t *hi);
/* The peer's RDMA2_CONNPROP (§5.3.4). */
void rpcrdma_neg_apply_props(struct rpcrdma_engine *e,
			     const struct rpcrdma_v2_hdr *h);

/* credits.c */
/* One credit, nothing in flight (a new connection, §3.3.3). */
void rpcrdma_credits_reset(struct rpcrdma_engine *e);
/* A reply's rdma_credit (0 counts as 1, clamped to max_calls). */
void rpcrdma_credits_grant(struct rpcrdma_engine *e, uint32_t credit);
/* May one more call be sent (§3.3.1)? */
bool rpcrdma_credits_free(const struct rpcrdma_engine *e);
/* q, being sent, holds a credit until its reply. */
void rpcrdma_credits_take(struct rpcrdma_engine *e, struct requester_slot *q);
/* q's credit comes back (its reply arrived, or it completed). */
void rpcrdma_credits_put(struct rpcrdma_engine *e, struct requester_slot *q);

/* send_queue.c */
void rpcrdma_sq_config(struct rpcrdma_engine *e);
void rpcrdma_sq_reset(struct rpcrdma_engine *e);
/* A send-queue request is handed out: record it, choose signalling. */
void rpcrdma_sq_post(struct rpcrdma_engine *e, struct rpcrdma_send_wr *w);
/* A successful send-queue completion: the requests before it are done
 * too.  False (and the connection closing) when it is not the oldest
 * signalled one. */
bool rpcrdma_sq_complete(struct rpcrdma_engine *e, uint64_t wr_id);

/* requester.c */
void rpcrdma_rq_run(struct rpcrdma_engine *e, struct requester_slot *q);
bool rpcrdma_rq_reply(struct rpcrdma_engine *e, const struct rx_view *v,
		      uint32_t rbuf, const uint8_t *msg, size_t len,
		      bool with_inv, uint32_t inv_rkey);
void rpcrdma_rq_fail_queued(struct rpcrdma_engine *e, int status);
void rpcrdma_rq_wc(struct rpcrdma_engine *e, struct requester_slot *q,
		   enum wr_op op,
		   const struct rpcrdma_wc *wc);
void rpcrdma_rq_conn_lost(struct rpcrdma_engine *e, struct requester_slot *q);
void rpcrdma_rq_release_mrs(struct rpcrdma_engine *e, struct requester_slot *q);
/* The call sent on this connection with XID xid (RQ_SENT, this epoch), or
 * NULL: what a reply, or an undecodable message, is matched against. */
/* Sets up slot i of an engine the first time it is taken (engine.c):
 * its index, its buffers in the arena, and rq_used/rs_used. */
void rpcrdma_rq_first_use(struct rpcrdma_engine *e, uint32_t i);
void rpcrdma_rs_first_use(struct rpcrdma_engine *e, uint32_t i);
struct requester_slot *rpcrdma_rq_find(const struct rpcrdma_engine *e,
				       uint32_t xid);
/* The slot is free again (its state set to RQ_FREE here). */
void rpcrdma_rq_put(struct rpcrdma_engine *e, struct requester_slot *q);

/* responder.c */
/* Returns true when the receive buffer idx (msg is in it) is now held
 * by the call's slot. */
bool rpcrdma_rs_call(struct rpcrdma_engine *e, const struct rx_view *v,
		     uint32_t idx, const uint8_t *msg, size_t len);
/* Answer xid (whose header carried rdma_vers vers) with an RDMA_ERROR /
 * RDMA2_ERROR: in the v2 layout when v2, else v1's (codes above 2
 * become ERR_CHUNK).  body: the code and its fields. */
void rpcrdma_rs_error(struct rpcrdma_engine *e, uint32_t xid, uint32_t vers,
		      bool v2, const struct rpcrdma_v2_error *body);
void rpcrdma_rs_error_code(struct rpcrdma_engine *e, uint32_t xid,
			   uint32_t vers, bool v2, uint32_t code);
/* Send our RDMA2_CONNPROP: as the answer to the peer's (resp, with its
 * xid) or on our own (a fresh xid). */
void rpcrdma_rs_connprop(struct rpcrdma_engine *e, uint32_t xid, bool resp);
void rpcrdma_rs_run(struct rpcrdma_engine *e, struct responder_slot *s);
void rpcrdma_rs_wc(struct rpcrdma_engine *e, struct responder_slot *s,
		   enum wr_op op,
		   const struct rpcrdma_wc *wc);
void rpcrdma_rs_conn_lost(struct rpcrdma_engine *e, struct responder_slot *s);
void rpcrdma_rs_free(struct rpcrdma_engine *e, struct responder_slot *s);
/* Memory for a rebuilt call or a staged Long Reply (mem.buf_alloc, or
 * malloc), and back. */
void *rpcrdma_buf_get(struct rpcrdma_engine *e, size_t len, void **cookie);
void rpcrdma_buf_put(struct rpcrdma_engine *e, void *p, void *cookie);
/* An RS_DONE slot is free once its REPLY_SENT was polled, its Send
 * completed and the upper layer no longer holds it. */
void rpcrdma_rs_done_maybe_free(struct rpcrdma_engine *e,
				struct responder_slot *s);

/* rdma_timeout.c: true when a Responder slot's RDMA Reads, or its reply's
 * Writes and Send, have been outstanding longer than rdma_timeout_ms; the
 * engine has then asked to close. */
bool rpcrdma_rs_rdma_timed_out(struct rpcrdma_engine *e, uint64_t now);
/* When the next tick must come for the watched operations: the earliest
 * deadline; now for an operation no tick has timed yet (its deadline is
 * set by the next); UINT64_MAX when none is watched. */
uint64_t rpcrdma_rs_rdma_next_deadline(const struct rpcrdma_engine *e,
				       uint64_t now);

#endif
