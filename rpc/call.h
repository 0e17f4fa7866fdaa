/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Call records (call.c): one RPC call of ours from the moment the client
 * built it (clnt.c) until its caller has its outcome and the engine has
 * let go of it.
 */
#ifndef RPCRDMA_RPC_CALL_H
#define RPCRDMA_RPC_CALL_H

#include "rpc/rpc_internal.h"

/* Where a record is in its life.  Two parties hold it: the connection
 * (its wait queue, then the engine, RFC 8166 §3.3.1: a Requester cannot
 * take back a Send) and the caller (a waiting thread, or a callback
 * queued to run).  The record goes when both are done with it. */
enum rpc_call_state {
	CALL_QUEUED,      /* waiting for an engine slot (the wait queue) */
	CALL_SENT,        /* the engine has it; the caller waits */
	CALL_CANCELLING,  /* given up while the peer may still reach memory
			     it borrowed: the caller is told once the engine
			     says it cannot (RPCRDMA_EV_CALL_RELEASED) */
	CALL_DONE,        /* the engine let go; the outcome (a reply, or
			     status) is the caller's alone, and so is the
			     record */
	CALL_TELLING,     /* failed while the engine still has it: a
			     callback is queued with the status */
	CALL_OVER,        /* ...and the engine let go meanwhile: the
			     callback frees the record when it has run */
	CALL_TOLD,        /* the caller has its status; the engine still has
			     the record and frees it when it lets go */
};

struct rpc_call {
	struct rpc_call *prev, *next;  /* the connection's records */
	struct rpc_call *wnext;        /* its wait queue */
	struct rpc_work_item work;     /* an asynchronous caller's callback */
	struct rpc_xprt *x;
	enum rpc_call_state state;
	const void *owner;             /* the rpcrdma_clnt */
	/* The arguments are the caller's memory, borrowed until the caller
	 * is told (synchronous calls, opts.borrow_args): a call given up
	 * before its reply (time-out, destroy) is told only once the engine
	 * says the peer can no longer reach that memory (CANCELLING). */
	bool borrowed;
	int status;                    /* the outcome when it is not a reply
					  to decode (0: decode reply_buf) */
	uint64_t ddp_copied;           /* DDP-eligible bytes build_call
					  copied (rpcrdma_stats) */
	uint64_t deadline;             /* ms, 0: none */
	rpcrdma_call_cb cb;            /* asynchronous */
	void *cb_arg;
	struct rpc_wait *sync;         /* synchronous: the caller's wait */
	uint32_t xid;
	/* From CALL_DONE. */
	size_t reply_len;
	unsigned ev_nresults;
	size_t result_len[RPCRDMA_MAX_DDP_RESULTS];
	struct rpcrdma_engine_msgp msgp;
	/* Built by clnt.c. */
	struct rpcrdma_iov iov[RPCRDMA_ENGINE_MAX_IOV];
	unsigned niov;
	struct rpcrdma_iov results[RPCRDMA_MAX_DDP_RESULTS];
	unsigned nresults;
	uint8_t *reply_buf;
	size_t reply_max;
	size_t msg_len;                /* the call message, DDP items too */
	bool reply_inline;             /* no Reply chunk (reply_max 0) */
	struct rpc_reply_region *region; /* reply_buf is the connection's
					    reply region, borrowed */
	struct rpc_buf *big;           /* reply and result buffers from the
					  registered pool (buf_pool.c) */
	struct rpc_bufpool *pool;
	size_t cap;                    /* bytes of mem[] */
	_Alignas(8) uint8_t mem[];     /* header, args, reply, results */
};

/* Starts c on x and waits for its outcome, decoded into rep (whose
 * status it returns).  c is the caller's no more. */
int rpcrdma_rpc_call_sync(struct rpc_xprt *x, struct rpc_call *c,
			  struct rpcrdma_reply *rep);
/* Starts c on x; cb(arg, reply) runs once with its outcome.  0, or an
 * error with c freed and cb never run. */
int rpcrdma_rpc_call_async(struct rpc_xprt *x, struct rpc_call *c,
			   rpcrdma_call_cb cb, void *arg);

#endif
