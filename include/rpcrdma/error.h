/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma error codes: one negative enum for the whole library.
 *
 * Every function that can fail returns 0 (or a non-negative count) on
 * success and one of these negative codes on failure.  rpcrdma_strerror()
 * gives a short English description of any code.  Codes are stable: new
 * ones are appended within their block, never renumbered.
 */
#ifndef RPCRDMA_ERROR_H
#define RPCRDMA_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum rpcrdma_error {
	RPCRDMA_OK = 0,

	/* General (-1 .. -99) */
	RPCRDMA_ERR_INVAL = -1,        /* invalid argument */
	RPCRDMA_ERR_NOMEM = -2,        /* out of memory */
	RPCRDMA_ERR_NOSPACE = -3,      /* encode buffer too small */
	RPCRDMA_ERR_NOTSUP = -4,       /* not supported by this build/provider */
	RPCRDMA_ERR_AGAIN = -5,        /* try again later (would block) */
	RPCRDMA_ERR_TIMEOUT = -6,      /* time-out expired */
	RPCRDMA_ERR_SYSTEM = -7,       /* system call failed (see errno) */
	RPCRDMA_ERR_BUSY = -8,         /* resource in use */
	RPCRDMA_ERR_NOENT = -9,        /* no such object */
	RPCRDMA_ERR_OVERFLOW = -10,    /* length arithmetic would overflow */
	RPCRDMA_ERR_CONFIG = -11,      /* an RPCRDMA_* environment variable
					  holds a value that is refused (one
					  line on stderr names it) */

	/* XDR and decoding (-100 .. -199): each maps to a distinct protocol
	 * error reply in the engine (ERR_VERS, ERR_CHUNK, RDMA2_ERR_BAD_XDR,
	 * RDMA2_ERR_INVAL_HTYPE ...). */
	RPCRDMA_ERR_TRUNCATED = -100,     /* message ends before a field */
	RPCRDMA_ERR_BAD_VERSION = -101,   /* unknown rdma_vers */
	RPCRDMA_ERR_BAD_PROC = -102,      /* unknown rdma_proc / rdma_htype */
	RPCRDMA_ERR_BAD_BOOL = -103,      /* XDR optional-data word not 0 or 1 */
	RPCRDMA_ERR_TOO_MANY_SEGMENTS = -104, /* over the segment limit */
	RPCRDMA_ERR_TOO_MANY_CHUNKS = -105,   /* over the chunk limit */
	RPCRDMA_ERR_HEADER_TOO_LONG = -106,   /* header over the size limit */
	RPCRDMA_ERR_BAD_LENGTH = -107,    /* length field impossible */
	RPCRDMA_ERR_BAD_POSITION = -108,  /* Read chunk position invalid */
	RPCRDMA_ERR_BAD_ALIGN = -109,     /* RDMA_MSGP align/thresh invalid */
	RPCRDMA_ERR_BAD_ERRCODE = -110,   /* unknown RDMA_ERROR code (v1) */
	RPCRDMA_ERR_BAD_FLAGS = -111,     /* reserved flag bits set */
	RPCRDMA_ERR_BAD_PROPERTY = -112,  /* malformed transport property */
	RPCRDMA_ERR_BAD_MAGIC = -113,     /* CM private data magic wrong */
	RPCRDMA_ERR_BAD_MSG_TYPE = -114,  /* ONC RPC msg_type not CALL/REPLY */
	RPCRDMA_ERR_BAD_RPCVERS = -115,   /* ONC RPC rpcvers != 2 */
	RPCRDMA_ERR_BAD_AUTH = -116,      /* malformed credential/verifier */
	RPCRDMA_ERR_BAD_STAT = -117,      /* unknown reply/accept/reject stat */
	RPCRDMA_ERR_TRAILING = -118,      /* unexpected bytes after a message */
	RPCRDMA_ERR_BAD_CHUNK = -119,     /* chunk inconsistent with message */
	RPCRDMA_ERR_TOO_MANY_PROPERTIES = -120, /* over the v2 property limit */

	/* Transport and provider (-200 .. -299) */
	RPCRDMA_ERR_NO_DEVICE = -200,     /* no RDMA device for this provider */
	RPCRDMA_ERR_ADDR = -201,          /* address cannot be parsed/resolved */
	RPCRDMA_ERR_CONNREFUSED = -202,   /* peer refused or rejected */
	RPCRDMA_ERR_DISCONNECTED = -203,  /* connection lost */
	RPCRDMA_ERR_PROTECTION = -204,    /* memory protection violation */
	RPCRDMA_ERR_NO_RECV = -205,       /* Send arrived with no posted receive */
	RPCRDMA_ERR_QP_STATE = -206,      /* queue pair not in a usable state */
	RPCRDMA_ERR_PROTOCOL = -207,      /* peer violated the wire protocol */
	RPCRDMA_ERR_FLUSHED = -208,       /* work request flushed */
	RPCRDMA_ERR_TERMINATED = -209,    /* peer sent an RDMAP Terminate */
	RPCRDMA_ERR_NOT_RDMA = -210,      /* the peer answered, but not as an
					     RDMA endpoint (a plain TCP
					     service on an iWARP port) */

	/* RPC-over-RDMA / RPC layer (-300 .. -399) */
	RPCRDMA_ERR_PEER_ERR_VERS = -300,  /* peer answered ERR_VERS */
	RPCRDMA_ERR_PEER_ERR_CHUNK = -301, /* peer answered ERR_CHUNK */
	RPCRDMA_ERR_PEER_ERROR = -302,     /* peer answered another RDMA_ERROR */
	RPCRDMA_ERR_NO_CREDIT = -303,      /* no credit available */
	RPCRDMA_ERR_CANCELLED = -304,      /* call cancelled (shutdown) */
	RPCRDMA_ERR_PEER_ERR_SYSTEM = -305, /* peer answered RDMA2_ERR_SYSTEM */
	RPCRDMA_ERR_PEER_ERR_RESOURCE = -306, /* peer answered
				RDMA2_ERR_READ_CHUNKS / _WRITE_CHUNKS /
				_SEGMENTS / _WRITE_RESOURCE /
				_REPLY_RESOURCE and no resend can help */
	RPCRDMA_ERR_PEER_NO_REVERSE = -307, /* the peer does not accept this
				reverse-direction call (RDMA2_PROPID_BRS) */
	/* ONC RPC reply outcomes (RFC 5531 §9), one code each so a caller
	 * can tell them apart; the rpc/ layer starts at -310. */
	RPCRDMA_ERR_RPC_PROG_UNAVAIL = -310,  /* accepted, PROG_UNAVAIL */
	RPCRDMA_ERR_RPC_PROG_MISMATCH = -311, /* accepted, PROG_MISMATCH */
	RPCRDMA_ERR_RPC_PROC_UNAVAIL = -312,  /* accepted, PROC_UNAVAIL */
	RPCRDMA_ERR_RPC_GARBAGE_ARGS = -313,  /* accepted, GARBAGE_ARGS */
	RPCRDMA_ERR_RPC_SYSTEM_ERR = -314,    /* accepted, SYSTEM_ERR */
	RPCRDMA_ERR_RPC_MISMATCH = -315,      /* denied, RPC_MISMATCH */
	RPCRDMA_ERR_RPC_AUTH = -316,          /* denied, AUTH_ERROR */
	RPCRDMA_ERR_RPC_BAD_REPLY = -317,     /* reply header undecodable */
	/* Sizes (struct rpcrdma_opts.max_msg, rpcrdma_call.reply_max). */
	RPCRDMA_ERR_CALL_TOO_BIG = -318,  /* call larger than our max_msg:
					     not sent */
	RPCRDMA_ERR_PEER_CALL_TOO_BIG = -319, /* the peer refused a call
					     sent through chunks: larger than
					     its max_msg */
	RPCRDMA_ERR_REPLY_TOO_BIG = -320, /* the reply did not fit the room
					     the call offered: reply_max, or
					     max_msg with RPCRDMA_REPLY_ANY */
};

/* A short, static, English description of an rpcrdma error code.  Never
 * returns NULL; unknown codes give "unknown error". */
const char *rpcrdma_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
