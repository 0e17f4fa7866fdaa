/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ONC RPC version 2 message headers (RFC 5531 §9).
 *
 *   struct rpc_msg { unsigned int xid;
 *                    union switch (msg_type mtype) {
 *                    case CALL:  call_body cbody;
 *                    case REPLY: reply_body rbody; } body; };
 *
 * Only the header is handled: the decoder returns the offset where the
 * procedure parameters (CALL) or results (accepted SUCCESS reply) begin;
 * the encoder writes the header and returns its length, and the caller
 * appends the arguments or results.
 *
 * Choices where RFC 5531 leaves room (each justified in rpc_msg.c):
 *  - rpcvers != 2 in a CALL is RPCRDMA_ERR_BAD_RPCVERS, but xid, mtype and
 *    rpcvers are still filled in so a server can answer RPC_MISMATCH.
 *  - unknown msg_type -> RPCRDMA_ERR_BAD_MSG_TYPE (xid still filled in);
 *    unknown reply_stat, accept_stat or reject_stat -> RPCRDMA_ERR_BAD_STAT.
 *  - unknown auth_stat values are decoded as numbers, not rejected:
 *    IANA hands out new auth_stat numbers (§9, §13.5).
 *  - any auth flavor number is accepted (IANA registry, §13.4).
 *
 * Pure functions: no I/O, no allocation, no global state.  Decoded
 * opaque_auth bodies point into the caller's buffer.
 */
#ifndef RPCRDMA_WIRE_RPC_MSG_H
#define RPCRDMA_WIRE_RPC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/error.h"
#include "wire/auth.h"

#define RPCRDMA_RPC_VERS 2u /* RFC 5531 §9: rpcvers MUST be 2 */

enum rpcrdma_rpc_msg_type {          /* msg_type */
	RPCRDMA_RPC_CALL = 0,
	RPCRDMA_RPC_REPLY = 1,
};

enum rpcrdma_rpc_reply_stat {        /* reply_stat */
	RPCRDMA_RPC_MSG_ACCEPTED = 0,
	RPCRDMA_RPC_MSG_DENIED = 1,
};

enum rpcrdma_rpc_accept_stat {       /* accept_stat */
	RPCRDMA_RPC_SUCCESS = 0,
	RPCRDMA_RPC_PROG_UNAVAIL = 1,
	RPCRDMA_RPC_PROG_MISMATCH = 2,
	RPCRDMA_RPC_PROC_UNAVAIL = 3,
	RPCRDMA_RPC_GARBAGE_ARGS = 4,
	RPCRDMA_RPC_SYSTEM_ERR = 5,
};

enum rpcrdma_rpc_reject_stat {       /* reject_stat */
	RPCRDMA_RPC_RPC_MISMATCH = 0,
	RPCRDMA_RPC_AUTH_ERROR = 1,
};

enum rpcrdma_rpc_auth_stat {         /* auth_stat (open-ended) */
	RPCRDMA_RPC_AUTH_OK = 0,
	RPCRDMA_RPC_AUTH_BADCRED = 1,
	RPCRDMA_RPC_AUTH_REJECTEDCRED = 2,
	RPCRDMA_RPC_AUTH_BADVERF = 3,
	RPCRDMA_RPC_AUTH_REJECTEDVERF = 4,
	RPCRDMA_RPC_AUTH_TOOWEAK = 5,
	RPCRDMA_RPC_AUTH_INVALIDRESP = 6,
	RPCRDMA_RPC_AUTH_FAILED = 7,
	RPCRDMA_RPC_AUTH_KERB_GENERIC = 8,
	RPCRDMA_RPC_AUTH_TIMEEXPIRE = 9,
	RPCRDMA_RPC_AUTH_TKT_FILE = 10,
	RPCRDMA_RPC_AUTH_DECODE = 11,
	RPCRDMA_RPC_AUTH_NET_ADDR = 12,
	RPCRDMA_RPC_RPCSEC_GSS_CREDPROBLEM = 13,
	RPCRDMA_RPC_RPCSEC_GSS_CTXPROBLEM = 14,
};

struct rpcrdma_rpc_mismatch {
	uint32_t low;
	uint32_t high;
};

struct rpcrdma_rpc_call {             /* call_body */
	uint32_t rpcvers;  /* decode: as received; encode: ignored, 2 sent */
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	struct rpcrdma_opaque_auth cred;
	struct rpcrdma_opaque_auth verf;
};

struct rpcrdma_rpc_accepted {         /* accepted_reply */
	struct rpcrdma_opaque_auth verf;
	uint32_t stat;                        /* accept_stat */
	struct rpcrdma_rpc_mismatch mismatch; /* PROG_MISMATCH only */
};

struct rpcrdma_rpc_rejected {         /* rejected_reply */
	uint32_t stat;                        /* reject_stat */
	struct rpcrdma_rpc_mismatch mismatch; /* RPC_MISMATCH only */
	uint32_t auth_stat;                   /* AUTH_ERROR only */
};

struct rpcrdma_rpc_reply {            /* reply_body */
	uint32_t stat;                        /* reply_stat */
	struct rpcrdma_rpc_accepted accepted; /* MSG_ACCEPTED only */
	struct rpcrdma_rpc_rejected rejected; /* MSG_DENIED only */
};

struct rpcrdma_rpc_msg {              /* rpc_msg */
	uint32_t xid;
	uint32_t mtype;                       /* msg_type */
	struct rpcrdma_rpc_call call;         /* CALL only */
	struct rpcrdma_rpc_reply reply;       /* REPLY only */
};

/*
 * Decode an RPC message header from buf[0..len).  *m is zeroed first;
 * only the arms selected by the discriminants are filled in.
 * Returns the header length in bytes (offset of the procedure parameters
 * or results; for replies other than SUCCESS nothing should follow), or:
 *   RPCRDMA_ERR_TRUNCATED    the buffer ends inside the header
 *   RPCRDMA_ERR_BAD_MSG_TYPE msg_type not CALL/REPLY (m->xid, m->mtype set)
 *   RPCRDMA_ERR_BAD_RPCVERS  CALL with rpcvers != 2 (m->xid, m->mtype and
 *                            m->call.rpcvers set; answer RPC_MISMATCH)
 *   RPCRDMA_ERR_BAD_AUTH     an opaque_auth body over 400 bytes
 *   RPCRDMA_ERR_BAD_STAT     unknown reply_stat/accept_stat/reject_stat
 *   RPCRDMA_ERR_INVAL        buf NULL with len > 0, or m NULL
 * Headers are at most a few hundred bytes, so the int result cannot
 * overflow.
 */
int rpcrdma_rpc_msg_decode(const void *buf, size_t len,
			   struct rpcrdma_rpc_msg *m);

/*
 * Encode the header of *m into buf.  rpcvers 2 is always written.
 * Returns the number of bytes written, or:
 *   RPCRDMA_ERR_NOSPACE      cap too small (buf contents unspecified)
 *   RPCRDMA_ERR_BAD_MSG_TYPE / _BAD_STAT / _BAD_AUTH  for values the
 *                            decoder would reject
 *   RPCRDMA_ERR_INVAL        NULL argument
 */
int rpcrdma_rpc_msg_encode(const struct rpcrdma_rpc_msg *m, void *buf,
			   size_t cap);

/* Encoded header length of *m, or the same validation errors as
 * rpcrdma_rpc_msg_encode() (never NOSPACE). */
int rpcrdma_rpc_msg_size(const struct rpcrdma_rpc_msg *m);

/* Short names for tools; "unknown" for values outside the enums. */
const char *rpcrdma_rpc_msg_type_name(uint32_t mtype);
const char *rpcrdma_rpc_reply_stat_name(uint32_t stat);
const char *rpcrdma_rpc_accept_stat_name(uint32_t stat);
const char *rpcrdma_rpc_reject_stat_name(uint32_t stat);
const char *rpcrdma_rpc_auth_stat_name(uint32_t stat);

#endif
