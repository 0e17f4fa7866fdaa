/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma: ONC RPC (RFC 5531) over RPC-over-RDMA version 1 (RFC 8166,
 * RFC 8797, RFC 8167) and version 2 (draft-cel-nfsv4-rpcrdma-version-two;
 * a client prefers version 2 and falls back to version 1, see
 * struct rpcrdma_opts.versions) — the API applications use.
 *
 * A client (struct rpcrdma_clnt) is one RDMA connection to one server,
 * bound to one program and version.  Calls are thread-safe; many may be in
 * flight up to the credit limit (more wait in a queue, in order).  A
 * server (struct rpcrdma_svc) listens on one address, accepts any number
 * of connections and runs registered procedure handlers on the thread
 * that takes each call, or on a worker pool (struct rpcrdma_opts.workers).
 *
 * Arguments and results are XDR streams the caller encodes and decodes
 * itself, described as rpcrdma_iov pieces.  A piece marked ddp is a
 * DDP-eligible data item (RFC 8166 §6.1); which items are eligible is the
 * Upper-Layer Binding of the program (§6): the client marks arguments and
 * asks for Write chunks for results (struct rpcrdma_call), the server says
 * per procedure whether its results may go by DDP (RPCRDMA_ULB_DDP_RESULT).
 *
 * Threads: each client and each server runs one event-loop thread that
 * drives the connection(s); a server adds its worker threads.  Call
 * completion callbacks and handlers run on library threads and may start
 * new calls, but must not destroy the client or server they run under.
 *
 * Errors are negative enum rpcrdma_error codes (rpcrdma/error.h); each
 * function lists the ones it returns.  Setting RPCRDMA_DEBUG in the
 * environment traces connection events and failures on stderr.
 *
 * Binary compatibility.  A program built against this header keeps
 * working with every later librpcrdma.so.0:
 *  - functions are only added, never changed or removed; the shared
 *    library exports exactly the functions declared in the rpcrdma/ headers, each
 *    under a symbol version (RPCRDMA_0.1 for this first set);
 *  - the two structs that grow with the library, struct rpcrdma_opts
 *    (options in) and struct rpcrdma_stats (counters out), only get new
 *    fields appended at their end, and every call that takes one is told
 *    the size the program was compiled with: rpcrdma_opts_default()
 *    stores sizeof(struct rpcrdma_opts) in opts->size, and
 *    rpcrdma_clnt_stats() / rpcrdma_svc_stats() are inline wrappers that
 *    pass sizeof(struct rpcrdma_stats).  A library newer than the program
 *    reads (options) or fills (counters) only that many bytes and uses the
 *    defaults for options the program does not know; a library older than
 *    the program leaves the counters it does not know at 0 and refuses
 *    (RPCRDMA_ERR_NOTSUP) options it does not know that were set to
 *    anything but 0;
 *  - the other structs (rpcrdma_call, rpcrdma_reply, rpcrdma_cred,
 *    rpcrdma_iov, rpcrdma_padding, rpcrdma_ulb_proc) and the enums' values
 *    are fixed: changing one means a new soname.
 */
#ifndef RPCRDMA_RPCRDMA_H
#define RPCRDMA_RPCRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rpcrdma/error.h"
#include "rpcrdma/iov.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RPCRDMA_DEFAULT_PORT 20049 /* RFC 8166 §9.1 (nfsrdma) */
#define RPCRDMA_MAX_ARGS 31u       /* iovec pieces per call or reply */
#define RPCRDMA_MAX_DDP_RESULTS 8u /* Write chunks per call */
#define RPCRDMA_REPLY_ANY ((size_t)-1) /* struct rpcrdma_call.reply_max */

/* ---------------------------------------------------------------------
 * Options.  Fill with rpcrdma_opts_default(), then change fields; a zero
 * number field means its default.  New fields are appended at the end
 * (after accept_msgp) and RPCRDMA_OPTS_LAST_FIELD below names the last
 * one: the library treats bytes past it as options it does not know
 * (see "Binary compatibility" above).
 */
struct rpcrdma_opts {
	size_t size;                /* sizeof(struct rpcrdma_opts) the program
				       was built with; set by
				       rpcrdma_opts_default().  Smaller than
				       the first version of this struct (0:
				       never initialised): RPCRDMA_ERR_INVAL */
	const char *provider;       /* "iwarp" (default) or "verbs" */
	const char *device;         /* verbs device name; NULL: the first */
	uint32_t inline_send;       /* largest Send we post (default 4096) */
	uint32_t inline_recv;       /* our receive buffers (default 4096) */
	uint32_t credits;           /* client: calls in flight at most;
				       server: credits granted per
				       connection (default 32) */
	uint32_t backchannel_credits; /* reverse direction (RFC 8167): calls
				       in flight / credits granted the
				       other way (default 8) */
	uint32_t max_msg;           /* largest call or reply moved through
				       chunks (default 4 MiB + 64 KiB) */
	unsigned connect_timeout_ms; /* default 5000 */
	unsigned call_timeout_ms;   /* default per-call time-out; 0: none
				       (default 30000) */
	unsigned workers;           /* server (and client callback) handler
				       threads; 0 (the default): handlers
				       run on the thread that takes the
				       call */
	bool remote_inv;            /* offer and use Send With Invalidate
				       (RFC 8797 §4.1; default true) */
	unsigned versions;          /* RPC-over-RDMA versions, enum
				       rpcrdma_versions; 0: the default,
				       RPCRDMA_PREFER_V2 */
	unsigned max_retries;       /* client: when the connection drops,
				       reconnect and send each outstanding
				       call again (same XID, RFC 8166
				       §4.5.5) up to this many times before
				       it fails with RPCRDMA_ERR_DISCONNECTED;
				       reconnection attempts back off from
				       50 ms to 2 s, and stop after
				       max_retries failed attempts in a row.
				       Default 0: no reconnection (as
				       libtirpc's clnt_vc). */
	bool accept_msgp;           /* take RFC 5666 RDMA_MSGP (padded)
				       messages from old peers instead of
				       answering ERR_CHUNK (RFC 8166
				       §4.6.1); see rpcrdma_padding */
	unsigned max_connections;   /* server: connections open at once;
				       more are refused (the client sees
				       RPCRDMA_ERR_CONNREFUSED).  0: no
				       limit (default).  Each costs memory,
				       see README "Memory per connection" */
	unsigned rdma_timeout_ms;   /* a call's RDMA Reads (and its reply's
				       RDMA Writes and Send) not done after
				       this long close that connection, as
				       a peer that never answers an RDMA
				       Read would otherwise hold the call
				       and its memory forever (RFC 8166
				       §4.5.5: recovery is reconnection);
				       counted in rdma_timeouts.  Default
				       30000 */
	bool mpa_crc;               /* iwarp provider: ask for MPA CRC-32c
				       with the C bit of the MPA Request
				       (RFC 5044 §7.1); CRC is then on if
				       either side asks.  Default false;
				       RPCRDMA_MPA_CRC=1 turns it on */
	int busy_poll_us;           /* a thread about to sleep until a
				       completion (a caller waiting for its
				       reply, the event loop after work,
				       svc_run() after a call) polls for
				       this long first, when it may run on
				       more than one CPU: a peer's answer
				       within it costs no wake-up.  0: the
				       default, 50; negative: never */
	bool borrow_args;           /* client: an asynchronous call borrows
				       the memory its argument pieces
				       describe until its callback has run
				       (the peer reads DDP-eligible pieces
				       from there by RDMA Read, RFC 8166
				       §3.4.5), instead of copying them
				       before rpcrdma_clnt_call_async()
				       returns: the caller must not change
				       or free it before then.  Synchronous
				       calls always borrow it until they
				       return.  Default false */
	uint64_t max_memory;        /* server: a memory budget, in bytes,
				       for what its connections hold as the
				       library counts it (each: its receive
				       and send buffers and request
				       records, about 850 KiB at the default
				       credits and inline sizes; its reply
				       region, max_msg, once registered).
				       A connection that would take it past
				       is refused (the client sees
				       RPCRDMA_ERR_CONNREFUSED; the reject
				       says why).  0: no budget (default);
				       RPCRDMA_MAX_MEMORY */
	unsigned threads;           /* server: poll groups, each an event-
				       loop thread that attends its share
				       of the connections (a new one goes
				       to the group with the fewest) and
				       runs their handlers when workers is
				       0.  0: one per CPU the process may
				       run on (default; at most 256);
				       RPCRDMA_THREADS.  A server whose
				       connections svc_run() attends
				       (libtirpc) has one */
	unsigned read_window;       /* server: bytes of RDMA Read in flight
				       on a connection at most, pulling its
				       calls' Read chunks (RFC 8166 §3.3.1
				       leaves such limits to us); a chunk
				       is read in Reads of at most 128 KiB.
				       So one client moving bulk data
				       cannot fill a poll group's time, and
				       small calls of other connections
				       interleave.  0: the default, 512 KiB
				       (4 KiB at least);
				       RPCRDMA_READ_WINDOW */
	unsigned credit_budget;     /* server: credits its connections may
				       be granted beyond their first 8, all
				       of them together.  A connection's
				       grant (RFC 8166 §3.3.1) starts at 8
				       and doubles up to credits while its
				       client keeps it all in use, within
				       what is left of this, and while
				       other connections want some too, to
				       its share of it (one that holds more
				       comes down to it); one idle for a
				       second goes back to 8 and gives its
				       share back.  So a few busy clients
				       cannot take every credit of a server
				       that serves many.  0: no budget
				       (default); RPCRDMA_CREDIT_BUDGET */
	/* Append new options here and update RPCRDMA_OPTS_LAST_FIELD. */
};
#define RPCRDMA_OPTS_LAST_FIELD credit_budget

/* RFC 5666 §3.7 padding of a message that came as RDMA_MSGP: before the
 * data of every opaque of at least `thresh` bytes the sender inserted
 * zero bytes so that the data starts at a multiple of `align` counted
 * from the start of its transport header; byte i of the stream we hand
 * out was byte `base + i` of that message.  align 0: no padding.  The
 * libtirpc adapters skip it while decoding. */
struct rpcrdma_padding {
	uint32_t align, thresh;
	size_t base;
};

/* Which protocol versions a connection may use (docs/v2.md). */
enum rpcrdma_versions {
	RPCRDMA_V1_ONLY = 1,    /* RFC 8166 only */
	RPCRDMA_V2_ONLY = 2,    /* draft-cel-nfsv4-rpcrdma-version-two only */
	RPCRDMA_PREFER_V2 = 3,  /* client: try v2, fall back to v1 on
				   ERR_VERS (and remember that server);
				   server: answer each client in its
				   version */
};

/* Fills the first size bytes of *o with the defaults above and sets
 * o->size = size; the environment variables RPCRDMA_PROVIDER and
 * RPCRDMA_DEVICE, when set, override provider and device,
 * RPCRDMA_VERSIONS ("1", "2" or "prefer") the versions,
 * RPCRDMA_WORKERS (0 to 1024) the workers, RPCRDMA_MAX_CONNECTIONS and
 * RPCRDMA_RDMA_TIMEOUT_MS (decimal) the fields of the same names,
 * RPCRDMA_MAX_MSG (bytes, "4M") max_msg, RPCRDMA_MPA_CRC (0 or 1)
 * mpa_crc, RPCRDMA_BUSY_POLL_US (decimal, 0: never) busy_poll_us,
 * RPCRDMA_MAX_MEMORY (bytes, "512M"; 0: none) max_memory,
 * RPCRDMA_THREADS (0 to 256; 0: one per CPU) threads,
 * RPCRDMA_READ_WINDOW (bytes) read_window, RPCRDMA_CREDIT_BUDGET
 * (decimal; 0: none) credit_budget.
 * Options whose number fields are 0 take these defaults too, so rpcgen
 * programs and every example honour them.  A value a variable does not
 * accept is refused: it is not taken here, and every create call fails
 * with RPCRDMA_ERR_CONFIG after one line on stderr naming it
 * (rpcrdma(7), ENVIRONMENT).  Call it through rpcrdma_opts_default(). */
void rpcrdma_opts_init(struct rpcrdma_opts *o, size_t size);

static inline void rpcrdma_opts_default(struct rpcrdma_opts *o)
{
	rpcrdma_opts_init(o, sizeof(*o));
}

/* ---------------------------------------------------------------------
 * Credentials (RFC 5531 §8.2, Appendix A)
 */
#define RPCRDMA_CRED_AUTH_NONE 0u
#define RPCRDMA_CRED_AUTH_SYS 1u

struct rpcrdma_cred {
	uint32_t flavor;            /* RPCRDMA_CRED_AUTH_NONE / _SYS */
	/* AUTH_SYS (authsys_parms) */
	uint32_t stamp;
	char machinename[256];      /* NUL-terminated, at most 255 octets */
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;             /* at most 16 */
	uint32_t gids[16];
};

/* ---------------------------------------------------------------------
 * Client
 */
struct rpcrdma_clnt;

/*
 * Connects to addr ("host", "host:port", "[v6addr]:port"; numeric
 * addresses or names; default port 20049) and binds the client to
 * (prog, vers).  opts NULL: defaults.  Blocks until connected or the
 * connect time-out.  Errors: RPCRDMA_ERR_INVAL, RPCRDMA_ERR_CONFIG (an
 * RPCRDMA_* variable refused), RPCRDMA_ERR_ADDR, RPCRDMA_ERR_NOTSUP
 * (unknown provider), RPCRDMA_ERR_NO_DEVICE, RPCRDMA_ERR_CONNREFUSED,
 * RPCRDMA_ERR_NOT_RDMA (the peer is not an RDMA endpoint),
 * RPCRDMA_ERR_DISCONNECTED (closed during set-up), RPCRDMA_ERR_TIMEOUT,
 * RPCRDMA_ERR_NOMEM, RPCRDMA_ERR_SYSTEM, or the provider's error.
 */
int rpcrdma_clnt_create(const char *addr, uint32_t prog, uint32_t vers,
			const struct rpcrdma_opts *opts,
			struct rpcrdma_clnt **out);

/* Fails every call not yet completed with RPCRDMA_ERR_CANCELLED (each
 * exactly once: callbacks run before this returns), disconnects, frees.
 * For a handle from rpcrdma_svc_req_clnt() the connection stays up. */
void rpcrdma_clnt_destroy(struct rpcrdma_clnt *c);

/* Credential for the following calls: NULL or flavor AUTH_NONE gives
 * AUTH_NONE.  Errors: RPCRDMA_ERR_INVAL (machinename over 255 octets,
 * ngids over 16, unknown flavor). */
int rpcrdma_clnt_set_cred(struct rpcrdma_clnt *c,
			  const struct rpcrdma_cred *cred);

/* Sends an arbitrary opaque_auth credential (any flavor number, body up
 * to 400 bytes, encoded by the caller) with an AUTH_NONE verifier.
 * Errors: RPCRDMA_ERR_INVAL. */
int rpcrdma_clnt_set_cred_raw(struct rpcrdma_clnt *c, uint32_t flavor,
			      const void *body, size_t len);

/* One call. */
struct rpcrdma_call {
	uint32_t proc;
	/* The XDR-encoded arguments; DDP-eligible items marked ddp.  A
	 * synchronous call reads them where they are, until it returns: a
	 * DDP-eligible piece goes to the server from there by RDMA Read
	 * (a Read chunk), and so does any piece of 1 KiB or more of a Long
	 * Call, with no copy.  An asynchronous call copies them before
	 * rpcrdma_clnt_call_async() returns, unless opts.borrow_args: then
	 * they are read where they are until the callback has run. */
	const struct rpcrdma_iov *args;
	unsigned nargs;                  /* <= RPCRDMA_MAX_ARGS */
	/* Largest results stream expected, not counting DDP results; a Reply
	 * chunk is offered when it may exceed the inline threshold (RFC 8166
	 * §4.3.3).  0: what fits inline.  RPCRDMA_REPLY_ANY: unknown, any
	 * size up to max_msg (the whole reply message): the Reply chunk is
	 * the connection's reply region, registered once (README, "Memory
	 * per connection"), or memory of the call's own when another call
	 * has it. */
	size_t reply_max;
	/* One Write chunk per DDP-eligible result (§4.3.2): its largest
	 * length (0 offers an empty chunk, forcing that result inline,
	 * §4.3.2.3). */
	const size_t *ddp_result_max;
	unsigned nddp_results;           /* <= RPCRDMA_MAX_DDP_RESULTS */
	unsigned timeout_ms;             /* 0: the client's default */
};
/* Time-outs: the caller gets RPCRDMA_ERR_TIMEOUT, but RPC-over-RDMA has no
 * way to take back a call that was sent, so its credit and buffers stay
 * held (by the library) until the late reply arrives or the connection
 * ends; a late reply is discarded. */

/* The outcome of a call. */
struct rpcrdma_reply {
	int status;            /* 0 (SUCCESS) or a negative error: the
				  RPCRDMA_ERR_RPC_* outcome of the reply,
				  RPCRDMA_ERR_TIMEOUT, _DISCONNECTED,
				  _CANCELLED, _CALL_TOO_BIG (over our
				  max_msg, not sent), _PEER_CALL_TOO_BIG
				  (over the peer's), _REPLY_TOO_BIG (over
				  reply_max, or max_msg), _PEER_ERR_CHUNK
				  / _VERS ... */
	uint32_t accept_stat;  /* accepted replies: RFC 5531 accept_stat */
	uint32_t auth_stat;    /* RPCRDMA_ERR_RPC_AUTH: auth_stat */
	uint32_t low, high;    /* PROG_MISMATCH / RPC_MISMATCH range */
	/* SUCCESS: the results stream after the reply header, as it arrived
	 * (a result moved by DDP is absent from it, RFC 8166 §3.4.5). */
	const uint8_t *data;
	size_t len;
	/* Bytes each Write chunk received (0: the result went inline or was
	 * empty) and where they are. */
	unsigned nddp;
	const uint8_t *ddp[RPCRDMA_MAX_DDP_RESULTS];
	size_t ddp_len[RPCRDMA_MAX_DDP_RESULTS];
	uint32_t xid;          /* the call's XID (0 if it was never sent) */
	struct rpcrdma_padding pad; /* of data (accept_msgp) */
	void *priv;            /* library's; free with rpcrdma_reply_free */
};

/* Releases the memory behind rep->data and rep->ddp (idempotent). */
void rpcrdma_reply_free(struct rpcrdma_reply *rep);

/*
 * Synchronous call: blocks until the reply, the time-out or the end of
 * the connection.  Returns rep->status.  rep is always filled in; free it
 * with rpcrdma_reply_free().  Errors, besides the outcomes listed at
 * struct rpcrdma_reply: RPCRDMA_ERR_INVAL (bad description: a non-DDP
 * piece not a multiple of 4, too many pieces), RPCRDMA_ERR_NOMEM.
 * It may be made from any thread, a completion callback or a handler
 * included: a caller that waits polls the connection itself (and
 * delivers what else it finds) whenever no other thread is polling it.
 */
int rpcrdma_clnt_call(struct rpcrdma_clnt *c, const struct rpcrdma_call *call,
		      struct rpcrdma_reply *rep);

/* Completion of an asynchronous call: runs exactly once, on a library
 * thread (the client's event loop, or a caller of the same connection
 * that was polling it: keep it short, as the connection's other replies
 * wait while it runs; a synchronous call made here is allowed).  *rep
 * is valid during the callback; to keep its data, copy the struct and
 * call rpcrdma_reply_free() on the copy later, else free it before
 * returning. */
typedef void (*rpcrdma_call_cb)(void *arg, struct rpcrdma_reply *rep);

/* Asynchronous call.  Returns 0 when started (cb will run exactly once),
 * or RPCRDMA_ERR_INVAL / _NOMEM / _DISCONNECTED (cb will not run). */
int rpcrdma_clnt_call_async(struct rpcrdma_clnt *c,
			    const struct rpcrdma_call *call,
			    rpcrdma_call_cb cb, void *arg);

/*
 * The same calls with the DDP-eligible results placed straight into the
 * caller's memory: res[i] is the buffer of result i, and the Write chunk
 * offered for it (RFC 8166 §4.3.2) is that buffer itself, res[i].len bytes
 * (0 offers an empty chunk, forcing the result inline, §4.3.2.3), so the
 * server's RDMA Write lands there and nothing is copied.  nres <=
 * RPCRDMA_MAX_DDP_RESULTS; call->ddp_result_max is not read (its count,
 * call->nddp_results, must be 0 or nres).  On success rep->ddp[i] is
 * res[i].base and rep->ddp_len[i] the bytes written into it.  The buffers
 * are lent to the library until the synchronous call returns, or until
 * the asynchronous call's callback has run (its arguments are borrowed
 * likewise, as with opts.borrow_args); a call given up (time-out,
 * rpcrdma_clnt_destroy) returns or calls back only once the server can no
 * longer reach them: its chunks are invalidated first, so a server that
 * still writes one, later, meets a protection error and the connection
 * closes (RFC 8166 §4.5.4; calls then fail or are sent again, see
 * opts.max_retries).  Errors as rpcrdma_clnt_call() and
 * rpcrdma_clnt_call_async(), and RPCRDMA_ERR_INVAL for res NULL with nres
 * > 0 or a count that does not match.
 */
int rpcrdma_clnt_call_into(struct rpcrdma_clnt *c,
			   const struct rpcrdma_call *call,
			   const struct rpcrdma_iov *res, unsigned nres,
			   struct rpcrdma_reply *rep);
int rpcrdma_clnt_call_async_into(struct rpcrdma_clnt *c,
				 const struct rpcrdma_call *call,
				 const struct rpcrdma_iov *res, unsigned nres,
				 rpcrdma_call_cb cb, void *arg);

/* Transport counters (the engine's, RFC 8166 names): how calls and
 * replies went (Short / Chunked / Long), bytes moved by RDMA Read and
 * Write, invalidations.  A server's are summed over all its connections,
 * past and present.  New counters are appended at the end (see "Binary
 * compatibility" above). */
struct rpcrdma_stats {
	/* as Requester */
	uint64_t calls, calls_completed, short_calls, chunked_calls,
		long_calls, replies_inline, replies_long, credit_stalls,
		remote_invs, local_invs;
	/* as Responder */
	uint64_t calls_received, short_replies, chunked_replies,
		long_replies, send_with_inv, err_chunk_sent;
	/* both */
	uint64_t rdma_read_bytes, rdma_write_bytes, connections;
	uint64_t bad_replies;     /* replies discarded (RFC 8166 §4.5) */
	uint64_t err_vers_recv, err_chunk_recv;
	uint32_t credits_granted; /* client: the server's current grant */
	/* Inline thresholds in force (RFC 8797 §4.2): our Sends and the
	 * peer's; with several connections, the last one's. */
	uint32_t send_threshold, recv_threshold;
	bool peer_remote_inv;     /* our replies may Send With Invalidate:
				     both sides set R (RFC 8797 §4.1); the
				     peer may still invalidate ours (see
				     remote_invs) when only we set it */
	/* Version (the last connection's): 1, 2, or 0 while negotiating. */
	uint32_t version;
	bool peer_v1_only;        /* our v2 opener got ERR_VERS or no answer */
	uint32_t peer_rbsiz;      /* v2: peer's Receive Buffer Size */
	uint32_t peer_brs;        /* v2: peer's Reverse Request Support */
	uint64_t vers_fallbacks;  /* connections that fell back to v1 */
	uint64_t err_vers_sent;
	uint64_t connprop_sent, connprop_recv;
	uint64_t recoveries;      /* calls resent after an RDMA2_ERROR */
	uint64_t retransmissions; /* calls resent on a new connection */
	uint64_t reconnects;      /* client: connections re-established */
	uint64_t v2_err_sent[10], v2_err_recv[10]; /* by error code */
	uint64_t rdma_timeouts;   /* connections closed by rdma_timeout_ms */
	uint64_t connections_refused; /* server: over max_connections or
					 max_memory, or out of resources */
	uint64_t registrations;   /* memory registrations made for calls'
				     and replies' chunks (a connection's own
				     buffers not counted; its reply region
				     counts once) */
	/* as Responder, by shape (RFC 8166 §3.5) */
	uint64_t chunked_calls_received; /* calls with Read chunks (DDP) */
	uint64_t long_calls_received;    /* Long Calls received */
	/* Copies of DDP-eligible data (RFC 8166 §6.1) in user space by the
	 * library, in bytes.  Sending: arguments an asynchronous call
	 * copied (without opts.borrow_args), DDP-eligible items sent inline
	 * (copied into a Send).  Receiving: data that came by RDMA Read or
	 * Write copied on its way to the application: by the iwarp
	 * provider through its staging buffer, and by the libtirpc adapters
	 * decoding it into memory other than where it landed (rpcgen's
	 * allocating decoders; clnt_rdma_result_buffer avoids it). */
	uint64_t ddp_copied_tx, ddp_copied_rx;
	/* Registration (docs/DEVICES.md): local registrations found in the
	 * cache of the protection domain, and made for it (devices whose
	 * registrations follow addresses); memory windows bound again
	 * instead of allocated. */
	uint64_t reg_cache_hits, reg_cache_misses, windows_reused;
	/* Of ddp_copied_rx, what the provider copied placing RDMA Write
	 * and Read Response payload (the iwarp provider: payload in FPDUs
	 * under 8 KiB, where a copy costs less than a system call per
	 * FPDU, and at most 16 KiB of the first FPDU of a large message
	 * after small ones; hardware copies nothing). */
	uint64_t ddp_copied_placed;
	/* As Responder: RDMA Reads of Read chunks that waited, for the ORD
	 * (the peer's IRD, RFC 8166 §3.3.1) and for opts.read_window. */
	uint64_t ord_stalls, read_window_stalls;
	/* Server: a connection's credit grant (RFC 8166 §3.3.1) doubled
	 * (its client had all of it in use), would have but the
	 * credit_budget was spent (or its share of it), came back to its
	 * first after a second with no call, and came down to its share
	 * of the budget when other connections wanted some
	 * (opts.credit_budget). */
	uint64_t grants_raised, grants_refused, grants_lowered, grants_trimmed;
	/* Append new counters here, and to RPCRDMA_STATS_FIELDS below. */
};

/* Every field of struct rpcrdma_stats, in order, as X(name, count)
 * (count: the elements of an array field, else 1): programs that show
 * every counter by name expand it, as the library does for the counters
 * it exports to rpcrdma-stat(1).  Append with the struct. */
#define RPCRDMA_STATS_FIELDS(X)                                             \
	X(calls, 1) X(calls_completed, 1) X(short_calls, 1)                  \
	X(chunked_calls, 1) X(long_calls, 1) X(replies_inline, 1)            \
	X(replies_long, 1) X(credit_stalls, 1) X(remote_invs, 1)             \
	X(local_invs, 1) X(calls_received, 1) X(short_replies, 1)            \
	X(chunked_replies, 1) X(long_replies, 1) X(send_with_inv, 1)         \
	X(err_chunk_sent, 1) X(rdma_read_bytes, 1) X(rdma_write_bytes, 1)    \
	X(connections, 1) X(bad_replies, 1) X(err_vers_recv, 1)              \
	X(err_chunk_recv, 1) X(credits_granted, 1) X(send_threshold, 1)      \
	X(recv_threshold, 1) X(peer_remote_inv, 1) X(version, 1)             \
	X(peer_v1_only, 1) X(peer_rbsiz, 1) X(peer_brs, 1)                   \
	X(vers_fallbacks, 1) X(err_vers_sent, 1) X(connprop_sent, 1)         \
	X(connprop_recv, 1) X(recoveries, 1) X(retransmissions, 1)           \
	X(reconnects, 1) X(v2_err_sent, 10) X(v2_err_recv, 10)               \
	X(rdma_timeouts, 1) X(connections_refused, 1) X(registrations, 1)    \
	X(chunked_calls_received, 1) X(long_calls_received, 1)             \
	X(ddp_copied_tx, 1) X(ddp_copied_rx, 1) X(reg_cache_hits, 1)         \
	X(reg_cache_misses, 1) X(windows_reused, 1) X(ddp_copied_placed, 1) \
	X(ord_stalls, 1) X(read_window_stalls, 1) X(grants_raised, 1)        \
	X(grants_refused, 1) X(grants_lowered, 1) X(grants_trimmed, 1)

/* Fills the first size bytes of *s: the counters this library has, 0 in
 * those it does not know.  Call it through rpcrdma_clnt_stats().  Errors:
 * RPCRDMA_ERR_INVAL (size smaller than the first version of the
 * struct). */
int rpcrdma_clnt_stats_sized(struct rpcrdma_clnt *c, struct rpcrdma_stats *s,
			     size_t size);

static inline int rpcrdma_clnt_stats(struct rpcrdma_clnt *c,
				     struct rpcrdma_stats *s)
{
	return rpcrdma_clnt_stats_sized(c, s, sizeof(*s));
}

/* ---------------------------------------------------------------------
 * Server
 */
struct rpcrdma_svc;
struct rpcrdma_svc_req; /* one incoming call, valid inside its handler */

/* What a handler returns. */
enum rpcrdma_svc_stat {
	RPCRDMA_SVC_OK = 0,           /* results set with _req_reply (none:
					 empty results) */
	RPCRDMA_SVC_GARBAGE_ARGS = 4, /* arguments undecodable */
	RPCRDMA_SVC_SYSTEM_ERR = 5,   /* e.g. memory allocation failure */
};

/* A handler runs on the thread that took its call (workers 0) or on a
 * worker; either may poll the device and post to it.  It must not change
 * its thread's credentials (setfsuid, setgroups...): on devices whose
 * posts go through the kernel's uverbs file (Soft-RoCE, siw) the kernel
 * refuses every later post from a thread whose credentials changed since
 * the device was opened.  Work under another identity belongs on a
 * thread that does not call the library. */
typedef enum rpcrdma_svc_stat (*rpcrdma_svc_handler)(
	struct rpcrdma_svc_req *req, void *arg);

/* Per-procedure Upper-Layer Binding (RFC 8166 §6). */
enum rpcrdma_ulb_flags {
	/* Results pieces marked ddp may be placed in the client's Write
	 * chunks.  Without it every ddp flag of the reply is cleared (the
	 * results travel inline or in a Reply chunk). */
	RPCRDMA_ULB_DDP_RESULT = 1u << 0,
};

/*
 * Listens on listen_addr ("host[:port]", "[v6]:port"; port 0 picks an
 * ephemeral one, see rpcrdma_svc_port()) and starts the event loop and
 * opts->workers handler threads.  Errors: RPCRDMA_ERR_INVAL, _CONFIG,
 * _ADDR, _BUSY (address in use), _NOTSUP, _NO_DEVICE, _NOMEM, _SYSTEM.
 */
int rpcrdma_svc_create(const char *listen_addr,
		       const struct rpcrdma_opts *opts,
		       struct rpcrdma_svc **out);

/* The port the server listens on. */
uint16_t rpcrdma_svc_port(const struct rpcrdma_svc *s);

/*
 * Registers handler for (prog, vers, proc).  The NULL procedure (proc 0)
 * of every registered (prog, vers) is answered without a handler unless
 * one is registered for it.  flags: enum rpcrdma_ulb_flags.  Errors:
 * RPCRDMA_ERR_INVAL, RPCRDMA_ERR_BUSY (already registered),
 * RPCRDMA_ERR_NOMEM.
 */
int rpcrdma_svc_register(struct rpcrdma_svc *s, uint32_t prog, uint32_t vers,
			 uint32_t proc, rpcrdma_svc_handler handler, void *arg,
			 unsigned flags);

/* Counters summed over every connection, filled as by
 * rpcrdma_clnt_stats_sized().  Call it through rpcrdma_svc_stats().
 * Errors: RPCRDMA_ERR_INVAL. */
int rpcrdma_svc_stats_sized(struct rpcrdma_svc *s, struct rpcrdma_stats *st,
			    size_t size);

static inline int rpcrdma_svc_stats(struct rpcrdma_svc *s,
				    struct rpcrdma_stats *st)
{
	return rpcrdma_svc_stats_sized(s, st, sizeof(*st));
}

/* Stops accepting, disconnects every connection, waits for running
 * handlers, frees.  Client handles from rpcrdma_svc_req_clnt() must be
 * destroyed first. */
void rpcrdma_svc_destroy(struct rpcrdma_svc *s);

/* ---- inside a handler ---- */

uint32_t rpcrdma_svc_req_prog(const struct rpcrdma_svc_req *r);
uint32_t rpcrdma_svc_req_vers(const struct rpcrdma_svc_req *r);
uint32_t rpcrdma_svc_req_proc(const struct rpcrdma_svc_req *r);
/* The RFC 5666 padding of the arguments (accept_msgp); align 0: none. */
struct rpcrdma_padding rpcrdma_svc_req_padding(const struct rpcrdma_svc_req *r);
/* The XDR-encoded arguments (DDP items reinserted with their padding). */
const void *rpcrdma_svc_req_args(const struct rpcrdma_svc_req *r,
				 size_t *len);
/* The caller's credential (AUTH_NONE or decoded AUTH_SYS). */
const struct rpcrdma_cred *rpcrdma_svc_req_cred(const struct rpcrdma_svc_req *r);
/* Write chunk space the caller offered: how many chunks and each one's
 * length (lets a handler size a DDP result). */
unsigned rpcrdma_svc_req_write_chunks(const struct rpcrdma_svc_req *r,
				      size_t *len, unsigned max);

/* Memory that lives until the reply has been sent (results may point
 * into it, the arguments, or memory that outlives the server).  NULL when
 * out of memory. */
void *rpcrdma_svc_req_alloc(struct rpcrdma_svc_req *r, size_t len);

/* Sets the results: XDR pieces, DDP-eligible results marked ddp.  The
 * pieces are referenced, not copied.  Errors: RPCRDMA_ERR_INVAL (too
 * many pieces, a non-DDP piece not a multiple of 4). */
int rpcrdma_svc_req_reply(struct rpcrdma_svc_req *r,
			  const struct rpcrdma_iov *res, unsigned n);

/*
 * Reverse direction (RFC 8167): a client handle on the connection the call
 * came in on, bound to (prog, vers) — the peer's callback program.  Valid
 * after the handler returns; destroy it with rpcrdma_clnt_destroy() (the
 * connection stays up).  Errors: RPCRDMA_ERR_DISCONNECTED, _NOMEM.
 */
int rpcrdma_svc_req_clnt(struct rpcrdma_svc_req *r, uint32_t prog,
			 uint32_t vers, struct rpcrdma_clnt **out);

/* The call's XID (RFC 5531 §9). */
uint32_t rpcrdma_svc_req_xid(const struct rpcrdma_svc_req *r);

/* The credential exactly as it arrived: flavor and opaque body (valid
 * until the reply has been sent).  For adapters that authenticate
 * themselves (libtirpc's _authenticate). */
void rpcrdma_svc_req_cred_raw(const struct rpcrdma_svc_req *r,
			      uint32_t *flavor, const void **body,
			      size_t *len);

/*
 * Sets the whole reply message instead of results: the caller encodes the
 * RPC reply header itself (starting with the call's XID, any reply_stat,
 * accept_stat or reject_stat), then the results; pieces marked ddp go in
 * the Requester's Write chunks when the registration allows DDP results.
 * Pieces are referenced, not copied.  The handler then returns
 * RPCRDMA_SVC_OK.  Errors: RPCRDMA_ERR_INVAL (first piece shorter than the
 * XID or marked ddp, too many pieces, a non-DDP piece not a multiple of 4).
 */
int rpcrdma_svc_req_reply_raw(struct rpcrdma_svc_req *r,
			      const struct rpcrdma_iov *msg, unsigned n);

/* The address of the peer the call came from (its connection's).
 * Errors: RPCRDMA_ERR_INVAL, RPCRDMA_ERR_DISCONNECTED. */
int rpcrdma_svc_req_peer(const struct rpcrdma_svc_req *r,
			 struct sockaddr_storage *addr, socklen_t *len);

/*
 * Drops the call: no reply will be sent, and the connection it came in
 * on is closed, so the Requester sends the call again (same XID) once it
 * has reconnected, as after any connection loss (RFC 8166 §4.5.5).  An
 * unanswered call would keep its credit for as long as the connection
 * lasts (RFC 8166 §3.3.1), so dropping one means closing the
 * connection; calls of that connection not yet answered are dropped
 * with it.  The handler still returns (what it returns is discarded).
 * For servers that cannot answer a call now (a duplicate of a call still
 * in progress) and for fault injection.  Errors: RPCRDMA_ERR_INVAL.
 */
int rpcrdma_svc_req_drop(struct rpcrdma_svc_req *r);

/* Registers handler for every call the server receives, whatever its
 * program, version or procedure; the handler must answer each (with
 * rpcrdma_svc_req_reply_raw, for PROG_UNAVAIL and the like).  Used by
 * svc_rdma_create (rpcrdma/tirpc.h).  Errors: RPCRDMA_ERR_INVAL,
 * RPCRDMA_ERR_BUSY (already registered), RPCRDMA_ERR_NOMEM. */
int rpcrdma_svc_register_any(struct rpcrdma_svc *s,
			     rpcrdma_svc_handler handler, void *arg);

/* A client answers calls from its server (RFC 8167 callbacks): same
 * semantics as rpcrdma_svc_register(). */
int rpcrdma_clnt_register(struct rpcrdma_clnt *c, uint32_t prog,
			  uint32_t vers, uint32_t proc,
			  rpcrdma_svc_handler handler, void *arg,
			  unsigned flags);

/* Every procedure of the callback program (prog, vers) goes to handler,
 * which may answer with rpcrdma_svc_req_reply_raw (DDP results allowed).
 * Errors as rpcrdma_clnt_register(). */
int rpcrdma_clnt_register_any(struct rpcrdma_clnt *c, uint32_t prog,
			      uint32_t vers, rpcrdma_svc_handler handler,
			      void *arg);

#ifdef __cplusplus
}
#endif
#endif
