/*
 * Internal types of the rpc/ layer: the transport driver that runs one
 * engine over one provider connection (xprt.c), the event loop (loop.c),
 * incoming-call dispatch and worker pool (dispatch.c), the client
 * (clnt.c) and the server (svc.c).
 *
 * Locking: one mutex per connection (rpc_xprt.lock) guards its engine, its
 * QP posting and its call bookkeeping; the provider allows one poller per
 * CQ and one poster per QP at a time, and the engine is single-threaded,
 * so every touch of them happens under it.  Engine events are collected
 * under the lock and acted on after it is dropped, so completion callbacks
 * and handlers may start new calls.  The event-loop thread is the only one
 * that makes CM calls and polls CQs while the loop runs.
 */
#ifndef RPCRDMA_RPC_INTERNAL_H
#define RPCRDMA_RPC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine/engine.h"
#include "provider/provider.h"
#include "rpcrdma/rpcrdma.h"

/* An accepted reply with AUTH_NONE and SYSTEM_ERR: 6 XDR words (RFC 5531
 * §9). */
#define RPCRDMA_RPC_OOM_REPLY_LEN 24

/* Milliseconds on CLOCK_MONOTONIC (the engine's "now"). */
uint64_t rpcrdma_rpc_now_ms(void);

/* "host", "host:port", "[v6]:port" -> sockaddr.  RPCRDMA_ERR_ADDR. */
int rpcrdma_rpc_parse_addr(const char *s, struct sockaddr_storage *ss,
			   socklen_t *len);

/* A line on stderr when RPCRDMA_DEBUG is set in the environment (read
 * once): connection events and failures, for diagnosing a broken peer. */
void rpcrdma_rpc_trace(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Options with every zero field replaced by its default. */
void rpcrdma_rpc_opts_fill(const struct rpcrdma_opts *in,
			   struct rpcrdma_opts *out);

/* ---------------------------------------------------------------------
 * Device objects shared by a client's or a server's connections.
 */
struct rpc_dev {
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_dev *dev;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_dev_attr attr;
};

int rpcrdma_rpc_dev_open(const struct rpcrdma_opts *o, struct rpc_dev *rd);
void rpcrdma_rpc_dev_close(struct rpc_dev *rd);

/* ---------------------------------------------------------------------
 * One client call (clnt.c).
 */
struct rpc_call;

/* ---------------------------------------------------------------------
 * One connection (xprt.c).
 */
struct rpc_disp;
struct rpc_loop;

struct rpc_xprt {
	pthread_mutex_t lock;
	struct rpc_dev *rd;          /* not owned */
	struct rpcrdma_opts opts;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cq *cq;       /* send and receive completions */
	struct rpcrdma_qp *qp;
	struct rpcrdma_engine *e;
	struct rpc_loop *loop;
	struct rpc_disp *disp;       /* incoming calls; NULL: none served */
	bool connected;              /* ESTABLISHED seen */
	bool dead;                   /* conn_lost() done: no more traffic */
	bool close_req;              /* the engine or a post failure asked
					to disconnect */
	bool disconnect_sent;
	int refs;                    /* svc requests and reverse-direction
					client handles still using it */
	uint32_t ord, ird;           /* RDMA Reads out / in we allow */
	uint8_t mw_key;              /* last memory window key used */
	/* Client calls: every record the engine or a caller still holds. */
	struct rpc_call *calls;      /* doubly linked */
	struct rpc_call *waitq_head, *waitq_tail; /* waiting for a slot */
	unsigned in_engine;
	struct rpc_xprt *next;       /* in its loop's list */
	/* Client reconnection (opts.max_retries > 0). */
	bool client;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct rpcrdma_qp_attr qa;   /* to create the next QP alike */
	bool reconnecting;           /* lost; a new connection is due */
	bool connect_pending;        /* connect() out on id, no answer yet */
	bool no_reconnect;           /* being destroyed, or refused for good */
	int refused;                 /* 0, or why the peer will never serve
					us (PEER_ERR_VERS): later calls fail
					with it, no reconnection */
	unsigned attempts;           /* failed attempts in a row */
	uint64_t retry_at;
	uint64_t reconnects;         /* connections re-established */
	char peer_key[64];           /* client: server address, "" on a
					server; see rpcrdma_rpc_v1_server_* */
	bool vers_noted;             /* this connection's version is known
					(and a v1-only server remembered) */
	/* One SYSTEM_ERR reply header per responder slot, set aside at
	 * creation: a call that comes in when no memory is left for its
	 * request still gets an answer (rpcrdma_rpc_disp_incoming). */
	uint8_t (*oom_reply)[RPCRDMA_RPC_OOM_REPLY_LEN];
	uint32_t oom_slots;
	/* The reply region (reply_region.c); registrations made for calls
	 * and replies besides it and the engine's buffers (under lock). */
	struct rpc_reply_region *rr;
	uint64_t registrations;
};

/* ---------------------------------------------------------------------
 * The reply region (reply_region.c): max_msg bytes per connection,
 * registered once on first use, lent to one call at a time as its
 * Reply chunk (exposed through a memory window per call).
 */
struct rpc_reply_region;
/* Made with the connection; no memory or registration yet.  NULL when
 * out of memory (calls then use memory of their own). */
struct rpc_reply_region *rpcrdma_rpc_region_new(struct rpc_dev *rd, size_t len);
/* Borrow it for a reply of need bytes: its memory, or NULL when it is
 * lent out, too small, gone, or cannot be set up now. */
void *rpcrdma_rpc_region_get(struct rpc_reply_region *r, size_t need);
/* Give it back (the borrower's reply is no longer read). */
void rpcrdma_rpc_region_put(struct rpc_reply_region *r);
/* For mem_reg: the region's registration when [addr, addr+len) lies in
 * it and windows can be bound over it; NULL otherwise. */
struct rpcrdma_mr *rpcrdma_rpc_region_mr(struct rpc_reply_region *r,
					 const void *addr, size_t len);
/* 1 once the region is registered (statistics). */
unsigned rpcrdma_rpc_region_registrations(struct rpc_reply_region *r);
/* The connection is destroyed: deregister, drop its reference. */
void rpcrdma_rpc_region_close(struct rpc_reply_region *r);

/* Servers that answered a v2 opener with ERR_VERS (or lost it): later
 * clients to them start in v1 (draft §7.2).  Keys are "addr/port". */
bool rpcrdma_rpc_v1_server_known(const char *key);
void rpcrdma_rpc_v1_server_remember(const char *key);

/* Creates CQ, QP (on id) and engine.  server: the engine grants
 * opts.credits and calls back with backchannel_credits; client: the
 * reverse. */
int rpcrdma_rpc_xprt_create(struct rpc_dev *rd, const struct rpcrdma_opts *o,
			    bool server, bool peer_v1_only,
			    struct rpcrdma_cm_id *id,
			    struct rpc_xprt **out);
/* Everything torn down; no thread may use x any more. */
void rpcrdma_rpc_xprt_destroy(struct rpc_xprt *x);

/* Our RFC 8797 private data for connect/accept. */
int rpcrdma_rpc_xprt_pdata(struct rpc_xprt *x, uint8_t *buf, size_t cap);
/* The connection is up (peer's private data, our ORD). */
int rpcrdma_rpc_xprt_established(struct rpc_xprt *x, const void *pdata,
				 size_t len, uint32_t ord);
/* The connection is gone: unwind the engine, fail every call not yet
 * completed with status (each exactly once). */
void rpcrdma_rpc_xprt_lost(struct rpc_xprt *x, int status);

/* Client: the peer's address, for reconnection. */
void rpcrdma_rpc_xprt_set_peer(struct rpc_xprt *x, const struct sockaddr *sa,
			       socklen_t len);
/* Client, from its loop thread between CM event batches: start the next
 * connection if one is due (a new CM id and QP over the same engine and
 * CQ).  The ESTABLISHED that follows goes to _xprt_reestablished. */
void rpcrdma_rpc_xprt_reconnect_due(struct rpc_xprt *x, uint64_t now);
/* ESTABLISHED (or a failure) for the id of a reconnection: returns true
 * when the event was about it. */
bool rpcrdma_rpc_xprt_reconnect_event(struct rpc_xprt *x,
				      const struct rpcrdma_cm_event *ev);

/* Collected engine events, acted on after the lock is dropped. */
struct rpc_evbuf {
	struct rpcrdma_engine_event ev[64];
	unsigned n;
	struct rpc_call *done;       /* calls to deliver (linked by dnext) */
};

/* With x->lock held: post every work request the engine has, move its
 * events into b. */
void rpcrdma_rpc_xprt_pump_locked(struct rpc_xprt *x, struct rpc_evbuf *b);
/* Unlocks x and acts on b (repeating while more events come). */
void rpcrdma_rpc_xprt_unlock_deliver(struct rpc_xprt *x, struct rpc_evbuf *b);
/* Loop thread: drain the CQ (fd_ready: its fd was readable), service
 * close requests and call time-outs. */
void rpcrdma_rpc_xprt_service(struct rpc_xprt *x, bool fd_ready, uint64_t now);
/* Adds the engine's counters to *s (under the lock). */
void rpcrdma_rpc_xprt_add_stats(struct rpc_xprt *x, struct rpcrdma_stats *s);
/* Take / drop a reference; the loop reaps a dead connection when the
 * last one goes. */
void rpcrdma_rpc_xprt_get(struct rpc_xprt *x);
void rpcrdma_rpc_xprt_put(struct rpc_xprt *x);

/* ---------------------------------------------------------------------
 * Client side of a connection (clnt.c), called by xprt.c.
 */
/* With x->lock held: the engine completed a call. */
void rpcrdma_rpc_call_engine_done_locked(struct rpc_xprt *x,
					 const struct rpcrdma_engine_event *ev,
					 struct rpc_evbuf *b);
/* With x->lock held: submit waiting calls while slots are free. */
void rpcrdma_rpc_calls_submit_waiting_locked(struct rpc_xprt *x,
					     struct rpc_evbuf *b);
/* With x->lock held: fail every undelivered call whose deadline passed
 * (now != 0) or all of them (now == 0) with status; only those of owner
 * when owner is not NULL. */
void rpcrdma_rpc_calls_fail_locked(struct rpc_xprt *x, int status, uint64_t now,
				   const void *owner, struct rpc_evbuf *b);
/* Without the lock: run the completion of every call on b->done. */
void rpcrdma_rpc_calls_deliver(struct rpc_xprt *x, struct rpc_evbuf *b);
/* At teardown (engine destroyed): free the remaining records. */
void rpcrdma_rpc_calls_free_all(struct rpc_xprt *x);

/* ---------------------------------------------------------------------
 * Event loop (loop.c): one thread polling the CM channel, a wake-up fd and
 * every connection's CQ fd.
 */
struct rpc_loop {
	pthread_t thread;
	bool started;
	int wakefd;
	atomic_int stop;             /* set by rpcrdma_rpc_loop_stop() */
	struct rpc_dev *rd;
	struct rpc_xprt *xprts;      /* touched by the loop thread only once
					it runs */
	/* A CM event for the owner (listener events, connection ends). */
	void (*on_cm)(void *owner, struct rpcrdma_cm_event *ev);
	/* Called each round: reap dead connections etc. */
	void (*on_round)(void *owner);
	void *owner;
};

int rpcrdma_rpc_loop_init(struct rpc_loop *l, struct rpc_dev *rd,
			  void (*on_cm)(void *, struct rpcrdma_cm_event *),
			  void (*on_round)(void *), void *owner);
int rpcrdma_rpc_loop_start(struct rpc_loop *l);
void rpcrdma_rpc_loop_wake(struct rpc_loop *l);
/* Stops and joins the thread (from any other thread). */
void rpcrdma_rpc_loop_stop(struct rpc_loop *l);
void rpcrdma_rpc_loop_fini(struct rpc_loop *l);
/* Finds the connection of a cm_id. */
struct rpc_xprt *rpcrdma_rpc_loop_find(struct rpc_loop *l,
				       const struct rpcrdma_cm_id *id);
/* Waits (poll) for the next CM event on rd->ch up to timeout_ms and
 * copies what callers need; acks it.  RPCRDMA_ERR_TIMEOUT. */
struct rpc_cm_ev {
	enum rpcrdma_cm_event_type type;
	struct rpcrdma_cm_id *id;
	int status;
	uint8_t pdata[512];
	uint16_t pdata_len;
	uint8_t ird, ord;
};
int rpcrdma_rpc_wait_cm(struct rpc_dev *rd, int timeout_ms,
			struct rpc_cm_ev *out);

/* ---------------------------------------------------------------------
 * Dispatch of incoming calls (dispatch.c).
 */
struct rpc_disp *rpcrdma_rpc_disp_create(unsigned workers);
/* Runs queued handlers to the end, joins the workers, frees. */
void rpcrdma_rpc_disp_destroy(struct rpc_disp *d);
/* Internal registration flags (beside enum rpcrdma_ulb_flags): the
 * handler takes every procedure of (prog, vers), or every call at all
 * (rpcrdma_clnt_register_any / rpcrdma_svc_register_any). */
#define RPCRDMA_RPC_REG_ANY_PROC (1u << 30)
#define RPCRDMA_RPC_REG_ANY_PROG (1u << 31)

int rpcrdma_rpc_disp_register(struct rpc_disp *d, uint32_t prog, uint32_t vers,
			      uint32_t proc, rpcrdma_svc_handler h, void *arg,
			      unsigned flags);
/* An INCOMING_CALL event of x (called without the lock). */
void rpcrdma_rpc_disp_incoming(struct rpc_xprt *x,
			       const struct rpcrdma_engine_event *ev);
/* A REPLY_SENT event (without the lock). */
void rpcrdma_rpc_disp_reply_sent(struct rpc_xprt *x,
				 const struct rpcrdma_engine_event *ev);

/* A reverse-direction client handle on x (clnt.c). */
int rpcrdma_rpc_clnt_on_xprt(struct rpc_xprt *x, uint32_t prog, uint32_t vers,
			     struct rpcrdma_clnt **out);

#endif
