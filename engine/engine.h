/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The RPC-over-RDMA connection engine (RFC 8166 v1, RFC 8797, RFC 8167),
 * sans-I/O.
 *
 * One struct rpcrdma_engine is one RDMA connection (and survives
 * reconnection: calls can be resent on the next one).  Every connection
 * carries both roles: it is a Requester for the calls submitted with
 * rpcrdma_engine_submit_call() and a Responder for the calls the peer
 * sends, so the reverse direction (RFC 8167) needs no special path.
 *
 * Inputs (all but completion() take the current time as an argument;
 * the engine reads no clock, makes no syscalls and starts no threads):
 *   rpcrdma_engine_established()  the CM reported ESTABLISHED: peer's
 *                                 private data (RFC 8797) and the ORD
 *   rpcrdma_engine_completion()   one work completion from the CQ(s)
 *   rpcrdma_engine_recv()         scripted receive (tests, replay): bytes
 *                                 as if they had arrived in a posted
 *                                 receive buffer
 *   rpcrdma_engine_submit_call()  start an RPC (Requester)
 *   rpcrdma_engine_submit_reply() answer an incoming call (Responder)
 *   rpcrdma_engine_conn_lost()    the connection is gone (DISCONNECTED,
 *                                 or after the engine asked to close)
 * Outputs:
 *   rpcrdma_engine_pop_wr()       work requests in provider terms (SEND,
 *                                 SEND_WITH_INV, RDMA_READ, RDMA_WRITE,
 *                                 LOCAL_INV, and RECV replenishment), in
 *                                 the order they must be posted
 *   rpcrdma_engine_poll_event()   call completed / incoming call /
 *                                 connection must close
 * Memory registration is injected (struct rpcrdma_engine_mem_ops), so the
 * engine works over any provider and tests use a fake.
 *
 * Version 2 (draft-cel-nfsv4-rpcrdma-version-two-09) is the same engine
 * with another header codec, RDMA2_CONNPROP, rdma_inv_handle, the
 * RDMA2_ERROR codes with their recoveries, and version negotiation; the
 * choices on the draft's open points are in docs/v2.md.
 *
 * Wire choices, each from the RFC text:
 *  - Shape of a call (RFC 8166 §3.5): Short (RDMA_MSG, all inline) when
 *    the whole message fits the call inline threshold; otherwise Chunked
 *    (every DDP-eligible argument moved to a Read chunk at its XDR
 *    position, §3.4.5, without roundup padding, §3.4.5.2) when the
 *    reduced message fits; otherwise a Long Call (RDMA_NOMSG, the whole
 *    unreduced Payload stream in a Position-Zero Read chunk, §3.5.3).
 *  - A Reply chunk is offered whenever the largest reply (transport header
 *    echoing our Write list + reply_max) may exceed the reply inline
 *    threshold (§4.3.3).
 *  - As Responder: results go into the Requester's Write chunks in order
 *    (§4.3.2.1), without padding (§3.4.6.2), unused chunks returned with
 *    empty segments (§4.3.2.2), empty chunks honoured (§4.3.2.3); the
 *    reduced reply goes inline when it fits, else through the Reply chunk
 *    as RDMA_NOMSG (§3.5.3), else ERR_CHUNK (§4.5.3).  An offered Reply
 *    chunk is always copied into the reply (§4.3.3 MUST), with zero
 *    lengths when the reply went inline (Linux svcrdma leaves it absent;
 *    the Requester accepts absent or all-empty).
 *  - RDMA_MSGP (RFC 5666) is answered ERR_CHUNK (§4.6.1) unless
 *    accept_msgp: then taken as RDMA_MSG with its padding described to
 *    the upper layer (msgp in the events).
 *  - Messages shorter than 28 bytes are discarded (§4.5) except
 *    RDMA_ERROR, whose ERR_CHUNK form is only 20 bytes long.
 *  - Direction of a received message (RFC 8167 §4.1): RDMA_MSG by the RPC
 *    msg_type word; RDMA_NOMSG with a Read list is a call, without one a
 *    reply; RDMA_ERROR is always a reply.  An undecodable header whose XID
 *    matches a call we have outstanding is treated as a bad reply
 *    (silently discarded, §4.5); any other undecodable header as a bad
 *    call (ERR_CHUNK, §4.5.2).
 */
#ifndef RPCRDMA_ENGINE_ENGINE_H
#define RPCRDMA_ENGINE_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider/provider.h"
#include "rpcrdma/error.h"
#include "rpcrdma/iov.h"
#include "wire/rpcrdma_common.h"

struct rpcrdma_engine;

/* ---------------------------------------------------------------------
 * Memory registration, provided by the driver.
 */

/* One registration.  The engine puts lkey into SGEs and advertises
 * (rkey, remote_addr + i) for byte i when remote access was asked for. */
struct rpcrdma_engine_mr {
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint64_t remote_addr;
	void *cookie; /* the driver's */
	/* Set by the engine just before release(): the rkey was invalidated
	 * (by the peer's Send With Invalidate or a LOCAL_INV that completed),
	 * so the driver may reuse what backed it (a memory window).  False
	 * for a local-only registration and for an rkey whose connection
	 * died while it was exposed: the driver must kill it itself.  True
	 * as well for a window never bound (bind_pending still set): its
	 * rkey was never valid. */
	bool invalidated;
	/* Set by reg() when the rkey becomes valid only once a memory
	 * window is bound over the registration (a type 2 window: a
	 * BIND_MW work request, which mem_ops.bind describes).  The engine
	 * posts that bind itself, in its send queue's order ahead of the
	 * Send that advertises the rkey and within its send-queue
	 * accounting, and clears bind_pending then. */
	bool bind_pending;
};

struct rpcrdma_engine_mem_ops {
	void *ctx;
	/* Register [addr, addr+len) with access (enum rpcrdma_access; 0 or
	 * LOCAL_WRITE for local-only use), posting nothing (a window to
	 * bind is left to the engine: bind_pending).  Returns 0; RPCRDMA_ERR_AGAIN
	 * when no registration resource is free right now (the engine
	 * queues the RPC and retries after its next release); any other
	 * error fails that RPC. */
	int (*reg)(void *ctx, void *addr, size_t len, unsigned access,
		   struct rpcrdma_engine_mr *mr);
	/* Give a registration back.  When it had remote access, the engine
	 * calls this only after the rkey is dead: invalidated by the peer's
	 * Send With Invalidate, by a LOCAL_INV that completed, or because
	 * the connection it was exposed on is gone (the driver must then
	 * make sure the rkey cannot be used again, e.g. deregister) — or,
	 * with cfg.local_inv false, to invalidate it: the driver
	 * deregisters before returning. */
	void (*release)(void *ctx, struct rpcrdma_engine_mr *mr);
	/* Optional (NULL: malloc and free): memory for a Responder's call
	 * rebuilt from Read chunks and for a Long Reply's staging, which
	 * the engine then registers through reg().  The driver may hand out
	 * buffers it keeps registered and reuses (rpc/buf_pool.c).
	 * *cookie is passed back to buf_free. */
	void *(*buf_alloc)(void *ctx, size_t len, void **cookie);
	void (*buf_free)(void *ctx, void *p, void *cookie);
	/* Required if reg() may set bind_pending: fills in w->bind_mw, and
	 * nothing else of w (the engine's), with the bind that makes mr's
	 * rkey valid (provider.h, RPCRDMA_WR_BIND_MW). */
	void (*bind)(void *ctx, const struct rpcrdma_engine_mr *mr,
		     struct rpcrdma_send_wr *w);
};

/* ---------------------------------------------------------------------
 * Configuration
 */

/* Which RPC-over-RDMA versions a connection may speak (draft-cel-nfsv4-
 * rpcrdma-version-two §7; docs/v2.md). */
enum rpcrdma_engine_versions {
	RPCRDMA_ENGINE_V1_ONLY = 1,   /* RFC 8166 only: v2 gets ERR_VERS */
	RPCRDMA_ENGINE_V2_ONLY = 2,   /* v2 only: v1 gets ERR_VERS; a v1-only
					 server fails the calls */
	RPCRDMA_ENGINE_PREFER_V2 = 3, /* client: open in v2, continue in v1
					 after ERR_VERS or a lost opener;
					 server: answer each client in its
					 version (the default) */
};

/* A server's credit budget (docs/SCALE.md, "Shared receives and
 * credits"): the credits its connections may be granted beyond their
 * first grants (credits_start), all of them together.  A grant grows
 * only with what is left of it, and at most to its fair share while
 * other connections want some too; it gives back what it took when it
 * comes down again (an idle connection, or one over its share,
 * recv_buffers.c) or its connection ends.  Shared by the engines of
 * every thread: the counts are atomic, limit is set before the first
 * engine uses it. */
struct rpcrdma_engine_budget {
	uint64_t limit;
	_Atomic uint64_t taken;
	_Atomic uint32_t wanting; /* connections that hold some of it or
				     were refused: the share is
				     limit / wanting */
};

struct rpcrdma_engine_config {
	uint32_t max_calls;        /* Requester: calls in flight at most;
				      credits requested; grants are clamped
				      to it.  Default 64. */
	uint32_t credits;          /* Responder: credits granted (RFC 8166
				      §3.3.1) at most.  Default 64 (as
				      Linux). */
	uint32_t credits_start;    /* Responder: a connection's first grant
				      (at most credits); it doubles, up to
				      credits, each time a call arrives with
				      the whole grant in use (recv_buffers.c).
				      0 (default): credits from the start. */
	struct rpcrdma_engine_budget *budget; /* Responder: the credits
				      its connections share beyond their
				      first grants (a server's,
				      recv_buffers.c).  NULL (default): a
				      grant grows up to credits freely */
	uint32_t max_inline_send;  /* largest Send we can post.  Default
				      4096.  Rounded down to 1 KiB. */
	uint32_t max_inline_recv;  /* receive buffer size.  Default 4096 */
	bool remote_inv;           /* advertise and use remote invalidation
				      (RFC 8797 §4.1) */
	uint32_t max_call_size;    /* Responder: largest rebuilt call accepted
				      from chunks; bigger -> ERR_CHUNK.
				      Default 1 MiB. */
	uint32_t max_chunk_bytes;  /* Responder: largest Write / Reply chunk
				      total accepted.  Default 1 MiB. */
	bool accept_msgp;          /* take RFC 5666 RDMA_MSGP (padded
				      messages) instead of answering
				      ERR_CHUNK (RFC 8166 §4.6.1); the
				      padding is passed up (msgp in the
				      events).  Without a Read list only. */
	uint32_t max_read_chunks;  /* Responder: Read chunks besides a
				      Position-Zero one accepted in a call;
				      more -> RDMA2_ERR_READ_CHUNKS (v1:
				      ERR_CHUNK).  Default 16. */
	uint32_t read_piece;       /* Responder: the largest RDMA Read
				      posted, in bytes; a longer Read
				      segment is read in pieces of this
				      size (0: whole segments).  Default
				      128 KiB. */
	uint32_t read_window;      /* Responder: RDMA Read bytes in flight
				      on the connection at most (0: only
				      the ORD bounds them).  One bulk
				      call then moves in steps the poll
				      group interleaves with other
				      connections' calls.  Default 512 KiB. */
	uint32_t sq_depth;         /* send queue entries the driver created;
				      default 4 * (max_calls + credits) */
	uint32_t max_retries;      /* resends on a new connection before a
				      call fails with ERR_DISCONNECTED.
				      Default 0. */
	uint32_t xid_seed;         /* first XID */
	uint32_t versions;         /* enum rpcrdma_engine_versions; default
				      PREFER_V2 */
	bool client;               /* we opened the connection: we choose
				      the version (§7); the other side
				      follows the first message it gets.
				      Default false. */
	uint32_t neg_timeout_ms;   /* client: a v2 opener unanswered this
				      long counts as lost (§7.2): the
				      engine asks to close, with
				      reconnect, and the next connection
				      starts in v1.
				      Default 2000. */
	bool peer_v1_only;         /* client: this server already answered a
				      v2 opener with ERR_VERS (remembered by
				      the caller, §7.2): start in v1 */
	bool resend_after_reply;   /* after RDMA2_ERR_WRITE_RESOURCE or
				      _REPLY_RESOURCE, send the call again
				      with more reply resources (draft §5.3.3
				      allows it).  The Responder sends these
				      once it has run the call, so a resend
				      runs it again: only for idempotent
				      procedures or a server with a
				      duplicate-request cache.  Default
				      false: the call fails
				      RPCRDMA_ERR_PEER_ERR_RESOURCE. */
	uint32_t v2_brs;           /* RDMA2_PROPID_BRS we advertise
				      (enum rpcrdma_v2_rvreqsup); default
				      GENL: we take chunked reverse calls */
	struct rpcrdma_limits limits; /* decode limits (header size is
					 forced <= max_inline_recv) */
	uint32_t rdma_timeout_ms;  /* Responder: a call's RDMA Reads, or its
				      reply's RDMA Writes and Send, not
				      complete after this long close the
				      connection (RFC 8166 §4.5.5 leaves
				      recovery to reconnection), counted in
				      rdma_timeouts.  Checked by tick().
				      0: never.  Default 30000. */
	bool local_inv;            /* Requester: invalidate a chunk the peer
				      did not with a LOCAL_INV work request
				      (default true).  false: the device has
				      none; mem->release of the chunk
				      invalidates it (deregistration), and
				      it runs before the call completes
				      (RFC 8166 §8.1.3) */
};

/* Fill every field with its default. */
void rpcrdma_engine_config_default(struct rpcrdma_engine_config *cfg);

/*
 * Create / destroy.  Allocates all buffers up front (receive and send
 * buffers are registered once through mem->reg).  Errors: RPCRDMA_ERR_INVAL
 * (NULL or zero sizes, max_inline_* < 1024), RPCRDMA_ERR_NOMEM (also for
 * mem->reg's AGAIN), or another error mem->reg returned.
 */
int rpcrdma_engine_create(const struct rpcrdma_engine_config *cfg,
			  const struct rpcrdma_engine_mem_ops *mem,
			  struct rpcrdma_engine **out);
/* The bytes of receive and send buffers an engine made with cfg
 * allocates and registers (one region, for the life of the engine): what
 * a connection costs before any call (a server's memory budget counts
 * it). */
size_t rpcrdma_engine_buffer_bytes(const struct rpcrdma_engine_config *cfg);
/* Completes every call not yet completed with RPCRDMA_ERR_CANCELLED (no
 * event: the caller is going away), releases all registrations, frees. */
void rpcrdma_engine_destroy(struct rpcrdma_engine *e);
/* Back to the state rpcrdma_engine_create(cfg) would return, keeping the
 * engine's allocations and its buffers' registration: calls and incoming
 * calls are dropped without events (their registrations released, as
 * destroy does), counters, XIDs, connection and version state start
 * again (the buffers' bytes are left as they are).  cfg NULL: the
 * current configuration; another one must need no more slots, buffers
 * or queue entries than the engine was created with
 * (RPCRDMA_ERR_NOSPACE, nothing changed; RPCRDMA_ERR_INVAL as create).
 * For drivers that run many short lives (the fuzz targets,
 * fuzz/engine_harness.h), where a whole create costs more than what
 * they then do. */
int rpcrdma_engine_reset(struct rpcrdma_engine *e,
			 const struct rpcrdma_engine_config *cfg);

/* Our RFC 8797 private data (8 bytes) for connect/accept.  Returns its
 * length or RPCRDMA_ERR_NOSPACE. */
int rpcrdma_engine_private_data(const struct rpcrdma_engine *e, void *buf,
				size_t cap);

/* ---------------------------------------------------------------------
 * Connection inputs
 */

/* The connection is up.  pdata/len: the peer's private data (NULL/0 when
 * none), searched for the RFC 8797 message at any offset (§5.2); none
 * found means 1024-byte thresholds and no remote invalidation (§5.1).  ord:
 * RDMA Reads we may have outstanding (0 is taken as 1).  Posts every
 * receive buffer, then sends any queued and resent calls.  Errors:
 * RPCRDMA_ERR_BUSY if already connected. */
int rpcrdma_engine_established(struct rpcrdma_engine *e, const void *pdata,
			       size_t len, uint32_t ord, uint64_t now);

/* Time passes: a client's unanswered v2 opener times out here (§7.2),
 * registrations that were short (mem->reg's AGAIN) are tried again, and
 * the Responder's RDMA operations that outlived rdma_timeout_ms close the
 * connection.  Call it now and then: a time-out is noticed at the first
 * tick past it.  The RPC loop ticks a connection every 20 ms after an
 * input, then at rpcrdma_engine_next_deadline. */
void rpcrdma_engine_tick(struct rpcrdma_engine *e, uint64_t now);

/* The earliest time tick() has something to do, given that it just ran
 * at now (same clock): the v2 opener's time-out, the Responder's RDMA
 * operations' (rdma_timeout_ms), now while a close is asked or work waits
 * for a registration refused for now, UINT64_MAX when nothing waits on
 * time (a Requester slot in use has no clock here: its call's time-out is
 * the RPC layer's; a wait for a credit or the send queue ends with an
 * input).  Any later input may move it earlier: the caller asks again
 * after one. */
uint64_t rpcrdma_engine_next_deadline(const struct rpcrdma_engine *e,
				      uint64_t now);

/* The Responder's RDMA Read bytes in flight at most from now on
 * (cfg.read_window; 0: only the ORD bounds them).  A poll group shares
 * its time between its connections with it (docs/SCALE.md, fairness):
 * Reads a smaller window holds back start as those in flight complete,
 * and a larger one lets more start from the next input on. */
void rpcrdma_engine_set_read_window(struct rpcrdma_engine *e, uint32_t bytes);

/* The connection is gone.  Every work request the engine handed out is
 * forgotten (their flushed completions may still be fed in; they are
 * ignored).  A CLOSE event not yet polled is dropped (it named this
 * connection).  Per-RPC unwinding is described at enum rpcrdma_rq_state
 * and enum rpcrdma_rs_state. */
void rpcrdma_engine_conn_lost(struct rpcrdma_engine *e, uint64_t now);

/* One work completion.  wr_id must be one the engine handed out.
 * Returns 0; RPCRDMA_ERR_NOENT for an unknown wr_id (ignored).  It takes
 * no time: the time-outs run on tick() (rdma_timeout.c), and a poller
 * need not read the clock for each batch it feeds in. */
int rpcrdma_engine_completion(struct rpcrdma_engine *e,
			      const struct rpcrdma_wc *wc);

/* Scripted receive: as if a Send carrying buf[0..len) had landed in the
 * oldest posted receive buffer (with_inv: the Send invalidated inv_rkey).
 * Errors: RPCRDMA_ERR_NO_RECV if no receive is posted (the engine also
 * asks to close), RPCRDMA_ERR_NOSPACE if len exceeds the buffer. */
int rpcrdma_engine_recv(struct rpcrdma_engine *e, const void *buf,
			size_t len, bool with_inv, uint32_t inv_rkey,
			uint64_t now);

/* ---------------------------------------------------------------------
 * Upper-layer requests
 */

/* struct rpcrdma_iov (a piece of an XDR stream, with its DDP-eligible
 * flag, RFC 8166 §6.1) lives in the public rpcrdma/iov.h so the RPC API
 * hands the caller's descriptions to the engine unchanged. */

#define RPCRDMA_ENGINE_MAX_IOV 32u

struct rpcrdma_call_req {
	/* The whole RPC Call message, unreduced.  The first piece must start
	 * with the 4-byte XID, which the engine writes. */
	const struct rpcrdma_iov *msg;
	unsigned nmsg;
	/* Where the reply's Payload stream goes (RFC 8166 §6.2): reply_max
	 * bytes at most, not counting results placed in Write chunks.  It is
	 * also the Reply chunk's memory when one is offered. */
	void *reply_buf;
	size_t reply_max;
	/* One Write chunk per DDP-eligible result (§4.3.2); len is the
	 * largest the result can be; len 0 offers an empty Write chunk to
	 * force that result inline (§4.3.2.3). */
	const struct rpcrdma_iov *results;
	unsigned nresults;
	void *user; /* returned in the completion event */
	/* The reply is expected inline (reply_max is only the receive
	 * size): no Reply chunk unless an RDMA2_ERROR recovery asks for
	 * one. */
	bool reply_inline;
};

/* Start a call.  The buffers stay the caller's but must not be touched
 * until the completion event.  *xid receives the XID.  Errors:
 * RPCRDMA_ERR_INVAL (bad description: a non-DDP piece not a multiple of 4,
 * too many pieces or results, first piece shorter than 4 bytes),
 * RPCRDMA_ERR_AGAIN (all max_calls slots busy).  A call that cannot be
 * sent completes (CALL_DONE) with an error instead: RPCRDMA_ERR_NOSPACE
 * when it does not fit the inline threshold even as a Long Call, or needs
 * more send queue entries (its Send plus one LOCAL_INV per registration)
 * than sq_depth; the error mem->reg returned. */
int rpcrdma_engine_submit_call(struct rpcrdma_engine *e,
			       const struct rpcrdma_call_req *req,
			       uint32_t *xid, uint64_t now);

/* The submitter of call xid no longer waits for it (a time-out, a
 * destroyed client) and takes back the memory it lent the call: the peer
 * must not reach it any more, and the call is not sent again.  Not an
 * RPC-level cancel (RFC 8166 has none): a call already sent keeps its
 * credit and slot until its reply or the end of the connection
 * (§3.3.1), and completes then (CALL_DONE) with RPCRDMA_ERR_CANCELLED or
 * its reply's status.  Its chunks are invalidated now (§4.4.1), so a
 * Responder that still reads or writes them, or names one in a Send
 * With Invalidate, meets a protection error and the connection closes
 * (§4.5.4).  Returns 0 when nothing of the call is reachable any more (a
 * call not yet sent completes at once), RPCRDMA_ERR_AGAIN when LOCAL_INVs
 * were queued: RPCRDMA_EV_CALL_RELEASED (or CALL_DONE) follows once they
 * completed or the connection is gone, RPCRDMA_ERR_NOENT for an XID with
 * no call. */
int rpcrdma_engine_cancel_call(struct rpcrdma_engine *e, uint32_t xid,
			       uint64_t now);

struct rpcrdma_reply_req {
	/* The whole RPC Reply message, unreduced, starting with the call's
	 * XID.  Pieces marked ddp are DDP-eligible results: each goes into
	 * the next unconsumed Write chunk the Requester offered, or inline
	 * when none is left or that chunk is empty (§4.3.2.3). */
	const struct rpcrdma_iov *msg;
	unsigned nmsg;
	void *user; /* returned in the REPLY_SENT event */
	/* Keep the call's slot, and with it the call message and its
	 * call_id, after REPLY_SENT until rpcrdma_engine_release_reply():
	 * for an upper layer that sends its reply from inside a handler
	 * still running (the libtirpc adapter's svc_sendreply). */
	bool hold;
};

/* Answer incoming call `call_id` (from its INCOMING_CALL event).  Small
 * parts are copied; DDP-eligible results and Long Replies are read by
 * RDMA Write straight from (or staged from) the caller's buffers, so they
 * must stay untouched until the REPLY_SENT event with rep->user; the
 * call message of the INCOMING_CALL event stays valid until then too (a
 * reply may point into it).  Errors:
 * RPCRDMA_ERR_NOENT (no such call awaiting a reply),
 * RPCRDMA_ERR_DISCONNECTED (the call came in on a connection since lost:
 * nothing is sent, no REPLY_SENT follows; the Requester will resend),
 * RPCRDMA_ERR_INVAL (XID mismatch, bad description).  A reply that cannot
 * be delivered (results larger than the offered Write chunk, a Long Reply
 * without a big enough Reply chunk, more RDMA Writes than sq_depth can
 * ever hold) is answered with ERR_CHUNK (RFC 8166 §4.5.3), one the
 * engine has no memory or registration for with SYSTEM_ERR (version 1:
 * the RPC reply; version 2: RDMA2_ERR_SYSTEM), and still returns 0. */
int rpcrdma_engine_submit_reply(struct rpcrdma_engine *e, uint32_t call_id,
				const struct rpcrdma_reply_req *rep,
				uint64_t now);

/* The slot of a reply submitted with hold is free again once its
 * REPLY_SENT was polled (no-op for any other call_id). */
void rpcrdma_engine_release_reply(struct rpcrdma_engine *e, uint32_t call_id);

/* ---------------------------------------------------------------------
 * Outputs
 */

#define RPCRDMA_ENGINE_MAX_SGE 4u

/* A work request to post, in order.  pop_wr sets send.sg_list /
 * recv.sg_list to point at sge[] inside *wr itself. */
struct rpcrdma_engine_wr {
	bool is_recv;
	struct rpcrdma_send_wr send;
	struct rpcrdma_recv_wr recv;
	struct rpcrdma_sge sge[RPCRDMA_ENGINE_MAX_SGE];
};

/* Next work request to post: 1 and *wr filled, or 0 when none. */
int rpcrdma_engine_pop_wr(struct rpcrdma_engine *e,
			  struct rpcrdma_engine_wr *wr);
/* The same without the copy: the engine's own entry (sg_list pointing
 * into it), valid until the next call into the engine; NULL when none.
 * Post it right away. */
struct rpcrdma_engine_wr *rpcrdma_engine_next_wr(struct rpcrdma_engine *e);

enum rpcrdma_engine_event_type {
	RPCRDMA_EV_CALL_DONE,     /* one of our calls completed */
	RPCRDMA_EV_INCOMING_CALL, /* the peer called us */
	RPCRDMA_EV_REPLY_SENT,    /* our reply's buffers are free again */
	RPCRDMA_EV_CLOSE,         /* the driver must disconnect */
	RPCRDMA_EV_CALL_RELEASED, /* a cancelled call's memory is no longer
				     reachable by the peer (user); the call
				     itself completes later (CALL_DONE) */
};

/* RFC 5666 §3.7 padding of a message received as RDMA_MSGP: the upper
 * layer skips padding before every opaque of at least `thresh` bytes so
 * that its data starts at a multiple of `align` counted from the start of
 * the transport header; the RPC message began `offset` bytes into it. */
struct rpcrdma_engine_msgp {
	uint32_t align, thresh, offset;
};

struct rpcrdma_engine_event {
	enum rpcrdma_engine_event_type type;
	uint32_t xid;
	/* CALL_DONE, REPLY_SENT */
	void *user;
	int status;          /* CALL_DONE: 0, RPCRDMA_ERR_PEER_ERR_VERS /
				_ERR_CHUNK / _ERR_SYSTEM / _ERR_RESOURCE /
				_ERROR, _PEER_NO_REVERSE, _DISCONNECTED
				(retries used up), _REPLY_TOO_BIG (an
				inline reply longer than reply_max),
				_CANCELLED
				(rpcrdma_engine_cancel_call).  REPLY_SENT: 0 (for a
				reply that reads none of the caller's
				memory by RDMA Write: handed to the send
				queue; otherwise its Send completed), or
				_DISCONNECTED if the connection died first,
				or _PEER_ERR_CHUNK if ERR_CHUNK went
				instead (v2: _PEER_ERR_SYSTEM for
				RDMA2_ERR_SYSTEM, _PEER_ERR_RESOURCE for
				RDMA2_ERR_WRITE_RESOURCE and
				_REPLY_RESOURCE), or _RPC_SYSTEM_ERR if the
				engine had no memory or registration
				for it and (v1) sent the RPC reply
				SYSTEM_ERR instead */
	size_t reply_len;    /* reply Payload stream bytes in reply_buf */
	unsigned nresults;
	size_t result_len[RPCRDMA_MAX_WRITE_CHUNKS]; /* bytes written into
				each Write chunk (0: unused or empty) */
	uint32_t peer_vers_low, peer_vers_high; /* ERR_VERS */
	uint32_t peer_err;   /* the RDMA_ERROR / RDMA2_ERROR code that
				ended the call (0: none) */
	/* INCOMING_CALL: the whole unreduced RPC Call message, valid until
	 * the REPLY_SENT event of its reply (or submit_reply() failing). */
	uint32_t call_id;
	const void *call;
	size_t call_len;
	unsigned ddp_items;          /* Read chunks (not Position-Zero)
					reinserted into the call, and where:
					call[ddp_pos[i] .. + ddp_len[i]) came
					by RDMA Read (the first
					RPCRDMA_MAX_WRITE_CHUNKS) */
	uint32_t ddp_pos[RPCRDMA_MAX_WRITE_CHUNKS];
	uint32_t ddp_len[RPCRDMA_MAX_WRITE_CHUNKS];
	unsigned write_chunks;       /* Write chunks offered */
	size_t write_chunk_len[RPCRDMA_MAX_WRITE_CHUNKS];
	size_t reply_chunk_len;      /* 0: no Reply chunk */
	/* CALL_DONE, INCOMING_CALL: the message came as RFC 5666 RDMA_MSGP
	 * (accept_msgp); align 0: no padding. */
	struct rpcrdma_engine_msgp msgp;
	/* CLOSE */
	int reason;
	bool reconnect;      /* the calls the engine holds were never sent:
				they go on a new connection, whatever
				their retries (a lost v2 opener falls back
				to v1 there, docs/v2.md) */
};

/* Next event: 1 and *ev filled, or 0 when none.  Pointers in *ev stay
 * valid as documented per field; result_len and write_chunk_len are
 * meaningful up to nresults / write_chunks (entries past them are
 * unspecified). */
int rpcrdma_engine_poll_event(struct rpcrdma_engine *e,
			      struct rpcrdma_engine_event *ev);

/* ---------------------------------------------------------------------
 * State a user can read
 */
struct rpcrdma_engine_counters {
	/* Requester */
	uint64_t calls;            /* calls submitted */
	uint64_t calls_completed;  /* completion events (any status) */
	uint64_t retransmissions;  /* resends on a new connection */
	uint64_t short_calls, chunked_calls, long_calls; /* by shape sent */
	uint64_t replies_inline, replies_long;           /* received */
	uint64_t credit_stalls;    /* a call waited for a credit */
	uint64_t mr_stalls;        /* a call waited for a registration */
	uint64_t local_invs;       /* handles we invalidated: LOCAL_INV
				      posted, or deregistration
				      (cfg.local_inv false) */
	uint64_t remote_invs;      /* rkeys the peer invalidated for us */
	uint64_t bad_replies;      /* replies discarded (§4.5, §4.6.1) */
	/* Responder */
	uint64_t calls_received;
	uint64_t chunked_calls_received; /* with Read chunks (DDP items) */
	uint64_t long_calls_received;    /* Long Calls (Position-Zero chunk) */
	uint64_t short_replies, chunked_replies, long_replies; /* sent */
	uint64_t ord_stalls;       /* RDMA Reads waited for ORD */
	uint64_t read_window_stalls; /* RDMA Reads waited for read_window */
	uint64_t send_with_inv;    /* replies sent With Invalidate */
	uint64_t grant_raised;     /* a connection's grant doubled (it had
				      all of it in use; credits_start) */
	uint64_t grant_refused;    /* it would have, but the budget was
				      spent */
	uint64_t grant_lowered;    /* an idle connection's grant went back
				      to credits_start */
	uint64_t grant_trimmed;    /* a grant came down to its fair share
				      of the budget, others wanting some */
	/* Both */
	uint64_t rdma_read_bytes, rdma_write_bytes;
	uint64_t err_vers_sent, err_chunk_sent;
	uint64_t err_vers_recv, err_chunk_recv;
	uint64_t done_dropped;     /* RDMA_DONE discarded (§4.6.2) */
	uint64_t short_dropped;    /* under 28 bytes (§4.5) */
	uint64_t connections;      /* established() calls */
	/* Version 2 */
	uint64_t connprop_sent, connprop_recv; /* RDMA2_CONNPROP */
	uint64_t vers_fallbacks;   /* v2 opener answered by ERR_VERS or
				      lost: continued in v1 (§7.2) */
	uint64_t recoveries;       /* calls resent (same XID) after an
				      RDMA2_ERROR (§5.3.3) */
	uint64_t v2_err_sent[10], v2_err_recv[10]; /* by rdma_err code;
				      v1 ERR_VERS/ERR_CHUNK count here too
				      as codes 1/2 */
	uint64_t reverse_refused;  /* reverse calls the peer's BRS forbade */
	uint64_t rdma_timeouts;    /* connections closed because a call's
				      RDMA Read/Write did not complete in
				      rdma_timeout_ms */
	uint64_t ddp_inline_tx;    /* bytes of pieces marked DDP-eligible
				      copied into a Send (Short calls,
				      results without a Write chunk) */
};

void rpcrdma_engine_get_counters(const struct rpcrdma_engine *e,
				 struct rpcrdma_engine_counters *c);

struct rpcrdma_engine_info {
	bool connected;
	uint32_t send_threshold;  /* our Sends (calls and replies) */
	uint32_t recv_threshold;  /* peer's Sends */
	bool send_with_inv;       /* we reply With Invalidate */
	uint32_t credits_granted; /* by the peer, as clamped; 1 until the
				     first reply (RFC 8166 §3.3.3) */
	uint32_t calls_in_flight; /* sent, not yet answered */
	uint32_t recvs_posted;
	uint32_t ord;
	/* Version: 0 while unknown (a server before the first message, a
	 * client waiting for the answer to its v2 opener), else 1 or 2. */
	uint32_t version;
	bool negotiating;         /* client: v2 opener not yet answered */
	bool peer_v1_only;        /* a v2 opener got ERR_VERS or was lost;
				     later connections of this engine
				     start in v1 (§7.2) */
	bool peer_props;          /* RDMA2_CONNPROP received */
	uint32_t peer_rbsiz;      /* peer's Receive Buffer Size (4096 when
				     it sent none, §4.2.1) */
	uint32_t peer_brs;        /* peer's Reverse Request Support */
	uint32_t call_slots;      /* every INCOMING_CALL's call_id is below */
	uint32_t grant;           /* Responder: credits we grant now */
};

void rpcrdma_engine_get_info(const struct rpcrdma_engine *e,
			     struct rpcrdma_engine_info *info);

#endif
