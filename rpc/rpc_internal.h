/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Internal types of the rpc/ layer: the transport driver that runs one
 * engine over one provider connection (xprt.c), the progress of a
 * connection (progress.c), the event loop (loop.c), incoming-call
 * dispatch (dispatch.c), the client (clnt.c) and the server (svc.c).
 *
 * Locking: one mutex per connection (rpc_xprt.lock) guards its engine, its
 * QP posting and its call bookkeeping; the engine is single-threaded, so
 * every touch of it happens under the lock.  Engine events are collected
 * under the lock and acted on after it is dropped, so completion callbacks
 * and handlers may start new calls.
 *
 * Progress ("run to completion", work.c): the thread that polls a
 * completion finishes the work it enables.  Whoever attends a connection
 * polls its CQ: a synchronous caller whose call is out (the connection's
 * driver, progress.c), the event loop for idle connections, asynchronous
 * calls and time-outs, or svc_run() for a libtirpc server.  One thread at
 * a time polls: it holds the connection's lock for the pass; the loop's
 * registration of the CQ fd is disarmed while a driver sleeps on it, so
 * one arrival wakes one thread.
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
#include "wire/auth.h"

/* Milliseconds on CLOCK_MONOTONIC (the engine's "now"), and nanoseconds. */
uint64_t rpcrdma_rpc_now_ms(void);
uint64_t rpcrdma_rpc_now_ns(void);
/* A pass of a poller reads the clock at most once and hands the time
 * down: *now is nanoseconds, 0 until this pass first needs it.  The same
 * milliseconds as rpcrdma_rpc_now_ms() (a second holds whole ms). */
static inline uint64_t rpc_clock(uint64_t *now)
{
	if (!*now)
		*now = rpcrdma_rpc_now_ns();
	return *now;
}
static inline uint64_t rpc_clock_ms(uint64_t *now)
{
	return rpc_clock(now) / 1000000u;
}

/* Busy polling before sleeping for a completion (busy_poll.c).  A
 * poller's record of whether spinning paid (NULL: spin every time). */
struct rpc_spin {
	unsigned skip;               /* sleeps left without a spin */
	unsigned misses;             /* fruitless spins in a row */
	unsigned win_us;             /* this poller's spin (0: not yet) */
	unsigned base_us;            /* the busy_poll_us it was given */
	uint64_t slept_at;           /* when it last went to sleep without
					finding work (0: it did not) */
	uint64_t hits, fruitless, skipped, grown; /* for the curious */
};
struct rpc_busy {
	uint64_t start_ns, end_ns;
};
/* Whether to poll at all before this sleep (us > 0, more than one CPU,
 * spinning paid lately); then more yields and says whether the time is
 * not over yet, and end says whether the spin found work.  now: the
 * pass's time (rpc_clock), read only when needed; more leaves in it the
 * time it last read. */
bool rpcrdma_rpc_busy_start(int us, struct rpc_spin *sp, struct rpc_busy *b,
			    uint64_t *now);
bool rpcrdma_rpc_busy_more(struct rpc_busy *b, uint64_t *now);
/* us > 0 and this thread may run on more than one CPU. */
bool rpcrdma_rpc_busy_possible(int us, uint64_t *now);
/* now: the time the spin ended (busy_more leaves it in its *now). */
void rpcrdma_rpc_busy_end(struct rpc_spin *sp, const struct rpc_busy *b,
			  bool found, uint64_t now);

/* "host", "host:port", "[v6]:port" -> sockaddr.  RPCRDMA_ERR_ADDR. */
int rpcrdma_rpc_parse_addr(const char *s, struct sockaddr_storage *ss,
			   socklen_t *len);

/* "addr:port" or "[v6addr]:port" of a socket address ("?" if none). */
void rpcrdma_rpc_addr_str(const struct sockaddr_storage *ss, char *out,
			  size_t cap);

/* The name of a CM event, for messages. */
const char *rpcrdma_rpc_cm_event_name(int type);

/* s has a port that is not a number from 0 to 65535 ("host:notaport"). */
bool rpcrdma_rpc_addr_bad_port(const char *s);

/* The port of an AF_INET or AF_INET6 address, host order (0: any). */
uint16_t rpcrdma_rpc_addr_port(const struct sockaddr_storage *ss);

/* Local ports an RDMA CM picks that turn out to be in use: an iWARP
 * device's CM picks in a port space of its own, apart from the TCP
 * stack, so it can pick one a TCP socket holds, and siw's connect or
 * listen then fails with EADDRINUSE.  The picks are random, so a few
 * more are worth it (a client's connect, rpc/clnt.c; a server's port-0
 * listen, rpc/svc.c). */
#define RPC_PORT_PICKS 4

/* A line on stderr when RPCRDMA_DEBUG is set in the environment (read
 * once): connection events and failures, for diagnosing a broken peer. */
void rpcrdma_rpc_trace(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* A line on stderr whatever RPCRDMA_DEBUG says, "rpcrdma: " first: what
 * an operator must see (a server at one of its limits, svc.c). */
void rpcrdma_rpc_log(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Options with every zero field replaced by its default; in NULL: the
 * defaults.  in->size is the caller's struct size (rpcrdma.h, "Binary
 * compatibility").  Errors: RPCRDMA_ERR_INVAL (size too small),
 * RPCRDMA_ERR_NOTSUP (an option this library does not know is set). */
int rpcrdma_rpc_opts_fill(const struct rpcrdma_opts *in,
			  struct rpcrdma_opts *out);

/* Copies counters to a caller's struct of size bytes: what fits, zeroes
 * past our own.  Errors: RPCRDMA_ERR_INVAL (s NULL, size too small). */
int rpcrdma_rpc_stats_out(const struct rpcrdma_stats *all,
			  struct rpcrdma_stats *s, size_t size);

/* ---------------------------------------------------------------------
 * Device objects shared by a client's or a server's connections.
 */
/* How chunks are registered and invalidated on a device (invalidate.c). */
struct rpc_inv {
	bool use_mw;      /* a type-2 window per chunk */
	bool local_inv;   /* the engine posts LOCAL_INV; false: releasing a
			     chunk deregisters it, which invalidates it */
	bool remote_inv;  /* offer and use remote invalidation (RFC 8797) */
};

void rpcrdma_rpc_inv_choose(const struct rpcrdma_dev_attr *a,
			    bool want_remote_inv, struct rpc_inv *out);

struct rpc_reg_cache;
struct rpc_bufpool;

struct rpc_dev {
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_dev *dev;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_dev_attr attr;
	struct rpc_inv inv;
	struct rpc_reg_cache *cache; /* registration.c; NULL: none */
	struct rpc_bufpool *pool;    /* buf_pool.c; NULL: out of memory */
	/* A server's credit budget (opts.credit_budget; limit 0: none),
	 * shared by its connections' engines (engine/recv_buffers.c). */
	struct rpcrdma_engine_budget budget;
};

int rpcrdma_rpc_dev_open(const struct rpcrdma_opts *o, struct rpc_dev *rd);
void rpcrdma_rpc_dev_close(struct rpc_dev *rd);

/* ---------------------------------------------------------------------
 * Thread cancellation.  What the library does on a caller's thread
 * reaches cancellation points (POSIX.1-2017 XSH 2.9.5.2: poll, read,
 * write, pthread_cond_wait, pthread_join, ...) with a connection's state
 * half changed: a driver asleep on its CQ is on the waiters' list, a
 * verbs post on rxe or siw is a write(2) made under the connection's
 * lock.  A thread cancelled there (pthread_cancel) would leave that
 * state behind, and its connection would wait for it for ever.  So each
 * public entry that may reach one holds cancellation off for its
 * duration: a cancel that comes meanwhile acts at the thread's next
 * cancellation point after the entry returned, and the call it made
 * completes, exactly once, as if nobody had cancelled it.  Handlers and
 * callbacks that such an entry runs on the caller's thread run with
 * cancellation held off too (rpcrdma(7), "Threads and cancellation").
 */
static inline int rpcrdma_rpc_cancel_hold(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

/* An inner hold (an entry that calls another) restores "held off". */
static inline void rpcrdma_rpc_cancel_restore(int old)
{
	int prev;
	pthread_setcancelstate(old, &prev);
}

/* ---------------------------------------------------------------------
 * Deferred work (work.c): what progress hands up is queued under a
 * connection's lock and run once it is dropped, never re-entered.
 */
struct rpc_work_item {
	struct rpc_work_item *next;
	void (*run)(struct rpc_work_item *it);
};

struct rpc_work {
	struct rpc_work_item *head, **tail;
	/* Wake-ups of parked waiters (progress.c): run before the items,
	 * and at once even inside running work, so that a waiter never
	 * waits behind a handler. */
	struct rpc_work_item *wakes;
};

static inline void rpc_work_init(struct rpc_work *w)
{
	w->head = NULL;
	w->tail = &w->head;
	w->wakes = NULL;
}

static inline bool rpc_work_empty(const struct rpc_work *w)
{
	return !w->head && !w->wakes;
}

static inline void rpc_work_add(struct rpc_work *w, struct rpc_work_item *it,
				void (*run)(struct rpc_work_item *))
{
	it->run = run;
	it->next = NULL;
	*w->tail = it;
	w->tail = &it->next;
}

/* A wake-up: w runs it before its items (struct rpc_work). */
static inline void rpc_work_add_wake(struct rpc_work *w,
				     struct rpc_work_item *it,
				     void (*run)(struct rpc_work_item *))
{
	it->run = run;
	it->next = w->wakes;
	w->wakes = it;
}

/* Runs w's items in order; called from inside running work, appends
 * them to the queue this thread runs instead (after the current item). */
void rpcrdma_rpc_work_run(struct rpc_work *w);
/* Runs w's items here even inside running work: for a synchronous
 * wait, which must run what its own polling finds. */
void rpcrdma_rpc_work_run_nested(struct rpc_work *w);

/* ---------------------------------------------------------------------
 * Synchronous waits (progress.c): a thread waiting on a connection for
 * an outcome of its own (a synchronous call's, a reply sent) drives the
 * connection or sleeps on its own condition variable, parked: it holds
 * no lock of the connection while it sleeps.  The connection keeps the
 * list of them; whoever sees the outcome (under the lock) tells the
 * waiter with rpcrdma_rpc_wait_done_locked, which takes a parked waiter
 * off the list itself, so that its thread wakes and returns without the
 * connection's lock (many threads on one connection would otherwise
 * queue for the lock the poller holds, one wake-up each).
 */
struct rpc_waiter {
	pthread_mutex_t m;            /* park and the wake-ups below */
	pthread_cond_t cv;            /* one per thread, made on first use */
};

struct rpc_waiter *rpcrdma_rpc_waiter_self(void);

/* Where a waiter is (rpc_wait.park, under its thread's w->m). */
enum rpc_park {
	PARK_NONE,      /* in the wait's loop, under or about to take the
			   connection's lock */
	PARK_SLEEPING,  /* asleep on w->cv without the connection's lock */
	PARK_TELLING,   /* off the list, told once the teller's lock is
			   dropped (its work's wake-ups run wait_tell) */
	PARK_TOLD,      /* told while asleep: off the list, done with x */
	PARK_DRIVE,     /* given the driver's role while asleep */
	PARK_RETURNING, /* woke by its deadline; coming back to the lock */
};

struct rpc_wait {
	struct rpc_wait *next;        /* x->waiters */
	struct rpc_waiter *w;         /* the waiting thread */
	_Atomic bool finished;        /* set under the connection lock */
	int status;                   /* the outcome, with finished */
	bool owns_record;             /* set by the role with the outcome:
					 the record (call.c) is now the
					 waiter's */
	enum rpc_park park;           /* under w->m */
	bool working;                 /* under the connection's lock: its
					 thread runs work it polled
					 (progress.c run_unlocked), and
					 comes back to the wait only when
					 that work returns */
	struct rpc_work_item tell;    /* PARK_TELLING: the wake-up */
	uint64_t deadline;            /* ms (rpcrdma_rpc_now_ms), 0: none */
};

/* ---------------------------------------------------------------------
 * What sits above a connection (its roles): the Requester side, call
 * records (call.c), and the Responder side, incoming calls (dispatch.c).
 * The connection layer (xprt.c, progress.c, loop.c) calls them only
 * through this table and never names a call or a request.  Every hook
 * but detach runs with the connection's lock held and queues what is to
 * be done without it on w.  NULL hooks are skipped.
 */
struct rpc_xprt;

enum rpc_role_kind {
	RPC_REQUESTER,                /* CALL_DONE, CALL_RELEASED */
	RPC_RESPONDER,                /* INCOMING_CALL, REPLY_SENT */
	RPC_ROLES
};

struct rpc_role {
	/* The connection is made (its engine exists): per-connection
	 * state in *state.  Errors: RPCRDMA_ERR_NOMEM. */
	int (*attach)(struct rpc_xprt *x, void **state);
	/* The engine is destroyed: free what is left. */
	void (*detach)(struct rpc_xprt *x, void *state);
	/* One engine event of this role. */
	void (*event_locked)(void *state, struct rpc_xprt *x,
			     const struct rpcrdma_engine_event *ev,
			     struct rpc_work *w);
	/* After the events of a pump (calls waiting for an engine slot). */
	void (*pumped_locked)(void *state, struct rpc_xprt *x,
			      struct rpc_work *w);
	/* The loop's tick (time-outs).  Returns the earliest time it must
	 * come again (ms, the tick's clock; UINT64_MAX: nothing waits on
	 * time). */
	uint64_t (*tick_locked)(void *state, struct rpc_xprt *x, uint64_t now,
				struct rpc_work *w);
	/* The connection is gone and no other will follow: fail what
	 * waits with status. */
	void (*lost_locked)(void *state, struct rpc_xprt *x, int status,
			    struct rpc_work *w);
	/* Does the role need a thread to notice arrivals when nobody
	 * waits synchronously (calls out, incoming calls served)? */
	bool (*busy_locked)(const void *state, const struct rpc_xprt *x);
};

extern const struct rpc_role rpcrdma_rpc_requester_role; /* call.c */
extern const struct rpc_role rpcrdma_rpc_responder_role; /* dispatch.c */

/* ---------------------------------------------------------------------
 * One incoming call (dispatch.c).  A connection has one per Responder
 * slot of its engine, made with it: the engine's call_id indexes them, so
 * taking a call allocates nothing.
 */
struct req_block;
struct rpc_reg {
	uint32_t prog, vers, proc;
	rpcrdma_svc_handler h;
	void *arg;
	unsigned flags;
};

#define RPCRDMA_RPC_REQ_SMALL 256 /* rpcrdma_svc_req_alloc() without malloc */

struct rpcrdma_svc_req {
	struct rpc_xprt *x;
	struct rpc_work_item work;    /* queued for dispatch (work.c) */
	struct rpcrdma_svc_req *next; /* a worker pool's queue */
	struct rpc_reg reg;
	uint32_t call_id, xid;
	uint32_t prog, vers, proc;
	const uint8_t *call;          /* the whole call message */
	size_t call_len;
	const uint8_t *args;
	size_t args_len;
	struct rpcrdma_padding pad;
	struct rpcrdma_cred cred;     /* AUTH_SYS decoded */
	struct rpcrdma_opaque_auth raw_cred; /* body points into the call */
	bool raw;          /* the handler gave the whole reply message */
	unsigned nwc;
	size_t wc_len[RPCRDMA_MAX_WRITE_CHUNKS];
	/* Where DDP items came into the call by RDMA Read (engine event). */
	unsigned ddp_items;
	uint32_t ddp_pos[RPCRDMA_MAX_WRITE_CHUNKS];
	uint32_t ddp_len[RPCRDMA_MAX_WRITE_CHUNKS];
	struct req_block *blocks;
	size_t small_used;
	_Alignas(16) uint8_t small[RPCRDMA_RPC_REQ_SMALL];
	uint8_t hdr[64];
	struct rpcrdma_iov iov[RPCRDMA_ENGINE_MAX_IOV];
	unsigned niov;
	/* Replied from inside the handler (rpcrdma_rpc_req_reply_sync):
	 * its engine slot is held until the handler is over. */
	bool early;
	struct rpc_wait *sent_wait;     /* the thread waiting for REPLY_SENT */
};

/* ---------------------------------------------------------------------
 * One connection (xprt.c, progress.c).
 */
struct rpc_disp;
struct rpc_loop;

/* A role's hooks and its state on one connection. */
struct rpc_up {
	const struct rpc_role *ops;
	void *state;
};

struct rpc_xprt {
	pthread_mutex_t lock;
	struct rpc_dev *rd;          /* not owned */
	struct rpcrdma_opts opts;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cq *cq;       /* send and receive completions */
	struct rpcrdma_qp *qp;
	struct rpcrdma_engine *e;
	struct rpc_loop *loop;
	struct rpc_xprt *by_id_next; /* a server's table (conn_by_id.h) */
	struct rpc_up up[RPC_ROLES]; /* the Requester and Responder sides */
	bool server;
	bool connected;              /* ESTABLISHED seen */
	bool dead;                   /* conn_lost() done: no more traffic */
	bool close_req;              /* the engine or a post failure asked
					to disconnect */
	bool disconnect_sent;
	int refs;                    /* requests in handlers and reverse-
					direction client handles using it */
	uint32_t ord, ird;           /* RDMA Reads out / in we allow */
	uint8_t mw_key;              /* last memory window key used */
	unsigned tirpc_turn;         /* the svc_run() turn that last took a
					call of x (rpc/tirpc/svc_rdma.c,
					next_call); svc_run()'s thread only */

	/* Progress (progress.c). */
	struct rpc_spin spin;        /* whether its drivers' spins paid */
	struct rpc_wait *waiters;    /* synchronous waits on x */
	struct rpc_wait *driver;     /* the one of them attending x */
	bool driver_busy;            /* ... now running work: another
					waiter may take the role over */
	bool driver_asleep;          /* ... asleep on the CQ fd */
	bool wr_owed;                /* the engine holds work requests a
					synchronous caller left for the
					driver's next pass (progress.c,
					rpcrdma_rpc_xprt_pump_sync_locked) */
	unsigned inside;             /* threads inside progress or a wait:
					destroy waits for none */
	pthread_cond_t inside_cv;
	int kickfd;                  /* eventfd: wakes a driver asleep on the
					CQ when another thread finished its
					call; made (under lock) by the first
					driver about to sleep, -1 before: a
					server's connection, or an
					asynchronous client's, holds one
					descriptor fewer */
	int loop_epfd;               /* epoll set holding the CQ fd, -1 */
	bool watched;                /* armed in it */
	struct rpc_xprt *next;       /* in its loop's list */
	struct rpc_xprt **pprev;     /* what points at it there: a client
					leaves its loop in O(1) */
	/* Client reconnection (opts.max_retries > 0). */
	bool client;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	struct rpcrdma_qp_attr qa;   /* to create the next QP alike */
	bool reconnecting;           /* lost; a new connection is due */
	bool connect_pending;        /* connect() out on id, no answer yet */
	bool no_reconnect;           /* being destroyed, or refused for good */
	bool fallback_reconnect;     /* the engine asked for a new connection
					for calls it never sent (a lost v2
					opener): one, whatever max_retries */
	int refused;                 /* 0, or why the peer will never serve
					us (PEER_ERR_VERS): later calls fail
					with it, no reconnection */
	unsigned attempts;           /* failed attempts in a row */
	uint64_t retry_at;
	uint64_t reconnects;         /* connections re-established */
	char name[64];               /* the peer, "addr:port", for messages
					(rpcrdma_rpc_trace, the counters) */
	bool vers_logged;            /* version and thresholds traced */
	char peer_key[64];           /* client: server address, "" on a
					server; see rpcrdma_rpc_v1_server_* */
	bool vers_noted;             /* this connection's version is known
					(and a v1-only server remembered) */
	/* The loop skips its ticks until then (ms; 0: every tick): set by
	 * a tick to x's earliest deadline (a call's time-out, the engine's)
	 * or its next quiet tick, cleared by every pass of the engine
	 * (progress.c, loop.c). */
	_Atomic uint64_t quiet_until;
	/* How long x has been idle, in quiet ticks: it is ticked every
	 * RPC_QUIET_TICK_MS << quiet_level (under lock, by the tick). */
	unsigned quiet_level;
	/* The reply region (reply_region.c); registrations made for calls
	 * and replies besides it and the engine's buffers (under lock). */
	struct rpc_reply_region *rr;
	uint64_t registrations;
	/* Registration (registration.c), under the lock: windows whose
	 * rkey was invalidated, ready to be bound again, and free cookies. */
	struct rpcrdma_mw **mw_pool;
	unsigned nmw_pool;
	uint64_t mw_reuses;
	struct rpc_mreg *reg_free;
	/* DDP-eligible bytes copied in user space (rpcrdma_stats): sending
	 * (arguments copied into a call), receiving (chunk data decoded into
	 * memory of the caller's by the libtirpc adapters). */
	uint64_t ddp_copied_tx, ddp_copied_rx;
	uint64_t ddp_placed_copied;  /* by the provider, of QPs gone */
};

/* ---------------------------------------------------------------------
 * Memory registration (registration.c): the engine's mem ops, a
 * registration cache per protection domain on devices whose
 * registrations follow virtual addresses, and windows pooled per
 * connection.
 */
struct rpc_mreg;
/* NULL when the device pins pages (no cache there) or out of memory. */
struct rpc_reg_cache *rpcrdma_rpc_reg_cache_new(struct rpc_dev *rd);
/* Every connection of the domain is gone. */
void rpcrdma_rpc_reg_cache_free(struct rpc_reg_cache *c);
/* Adds the cache's hits and misses (c may be NULL). */
void rpcrdma_rpc_reg_cache_stats(struct rpc_reg_cache *c, uint64_t *hits,
				 uint64_t *misses);
/* struct rpcrdma_engine_mem_ops, ctx the connection (its lock held). */
int rpcrdma_rpc_mem_reg(void *ctx, void *addr, size_t len, unsigned access,
			struct rpcrdma_engine_mr *mr);
void rpcrdma_rpc_mem_release(void *ctx, struct rpcrdma_engine_mr *mr);
/* The BIND_MW of a window mem_reg left to the engine (bind_pending). */
void rpcrdma_rpc_mem_bind(void *ctx, const struct rpcrdma_engine_mr *mr,
			  struct rpcrdma_send_wr *w);
void *rpcrdma_rpc_mem_buf_alloc(void *ctx, size_t len, void **cookie);
void rpcrdma_rpc_mem_buf_free(void *ctx, void *p, void *cookie);
/* The engine is destroyed: free the connection's pooled windows. */
void rpcrdma_rpc_reg_conn_free(struct rpc_xprt *x);

/* ---------------------------------------------------------------------
 * Registered buffers (buf_pool.c): chunk targets and sinks, registered
 * once and reused, per protection domain.
 */
struct rpc_buf;
struct rpc_bufpool *rpcrdma_rpc_bufpool_new(struct rpc_dev *rd);
/* The domain goes: registrations now, memory once the last buffer an
 * application holds comes back. */
void rpcrdma_rpc_bufpool_close(struct rpc_bufpool *p);
/* A buffer of at least len bytes (up to 8 MiB), or NULL (p NULL, too
 * large, out of memory). */
struct rpc_buf *rpcrdma_rpc_buf_get(struct rpc_bufpool *p, size_t len);
void *rpcrdma_rpc_buf_base(const struct rpc_buf *b);
void rpcrdma_rpc_buf_put(struct rpc_bufpool *p, struct rpc_buf *b,
			 uint64_t now_ms);
/* Buffers unused for a while go back to the system.  True when p still
 * keeps some, which a later trim may free: its owner then ticks within
 * RPC_QUIET_TICK_MS (false for NULL). */
bool rpcrdma_rpc_bufpool_trim(struct rpc_bufpool *p, uint64_t now_ms);
/* The same question without a trim. */
bool rpcrdma_rpc_bufpool_holds_idle(struct rpc_bufpool *p);
/* The registration of the buffer holding [addr, addr+len) when it has
 * access (for a window over it: LOCAL_WRITE), else NULL. */
struct rpcrdma_mr *rpcrdma_rpc_bufpool_mr(struct rpc_bufpool *p,
					  const void *addr, size_t len,
					  unsigned access);
void rpcrdma_rpc_bufpool_stats(struct rpc_bufpool *p, uint64_t *gets,
			       uint64_t *allocs);

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

/* Creates CQ, QP (on id) and engine.  server: the engine grants
 * opts.credits and calls back with backchannel_credits; client: the
 * reverse. */
int rpcrdma_rpc_xprt_create(struct rpc_dev *rd, const struct rpcrdma_opts *o,
			    bool server, bool peer_v1_only,
			    struct rpcrdma_cm_id *id,
			    const struct rpc_role *const roles[RPC_ROLES],
			    struct rpc_xprt **out);
/* Everything torn down; no thread may use x any more. */
void rpcrdma_rpc_xprt_destroy(struct rpc_xprt *x);
/* A client that learnt its server speaks only v1 remembers it for the
 * next connection (draft §7.2); from the loop's tick and at destroy. */
void rpcrdma_rpc_xprt_note_version(struct rpc_xprt *x);

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
/* With x->lock held: once the version is settled, log it and fire the
 * connect probe (once per connection). */
void rpcrdma_rpc_note_version_locked(struct rpc_xprt *x);
/* Adds the engine's counters to *s (under the lock). */
void rpcrdma_rpc_xprt_add_stats(struct rpc_xprt *x, struct rpcrdma_stats *s);
/* Take / drop a reference; the loop reaps a dead connection when the
 * last one goes. */
void rpcrdma_rpc_xprt_get(struct rpc_xprt *x);
void rpcrdma_rpc_xprt_put(struct rpc_xprt *x);

/* ---------------------------------------------------------------------
 * Progress (progress.c).
 */
/* With x->lock held: post every work request the engine has, hand its
 * events to the roles (their deferred work goes on w). */
void rpcrdma_rpc_xprt_pump_locked(struct rpc_xprt *x, struct rpc_work *w);
/* The same for a synchronous caller about to wait on x: while another
 * thread drives x and is awake, the work requests are left for the
 * driver's next pass, which posts them with its own and everybody
 * else's (one system call for many calls, and the caller's hold of the
 * lock is short); otherwise they are posted at once. */
void rpcrdma_rpc_xprt_pump_sync_locked(struct rpc_xprt *x, struct rpc_work *w);
/* Unlocks x and runs w. */
void rpcrdma_rpc_xprt_unlock_run(struct rpc_xprt *x, struct rpc_work *w);
/* The loop (or svc_run) attends x, unless a driver does (-1): after its
 * CQ fd was readable (woken: the notification is consumed first), or
 * while spinning over connections that just had work.  Polls the CQ and
 * runs what it gave; arm: arms it for the poller's sleep.  Returns how
 * many completions came. */
int rpcrdma_rpc_xprt_attend(struct rpc_xprt *x, bool woken, bool arm);
/* Arms x for the poller's sleep without polling it first, unless a
 * driver attends it (-1): for a connection polled since its work last
 * ran, whose poller looks at the fds next (epoll) or sleeps on them.
 * Polls only when the provider says completions may be queued already;
 * returns how many came. */
int rpcrdma_rpc_xprt_arm(struct rpc_xprt *x);
/* With x->lock held: poll what the CQ holds now (before a loss is
 * handled, so completions that preceded it count).  False when another
 * thread is polling. */
bool rpcrdma_rpc_xprt_drain_locked(struct rpc_xprt *x, struct rpc_work *w);
/* A loop tick (loop.c): the roles' time-outs, the engine's tick, a
 * disconnect asked for, and a poll of a connection nobody attends; sets
 * when x is to be ticked next (quiet_until). */
/* How often, at the least, the loop ticks a connection that is not
 * changing state: at its earliest deadline (a call's time-out, an RDMA
 * operation's, an opener's) if that comes sooner.  Such a connection
 * costs the loop nothing between two ticks.
 * Its arrivals wake the loop through its CQ fd as ever; the tick only
 * looks at its CQ once more, in case a wake-up was lost. */
/* The default read_window (struct rpcrdma_opts): with 128 KiB Reads,
 * four in flight keep a loopback 1 MiB WRITE stream at its rate while a
 * poll group still gets round to its other connections between them
 * (`rpcrdma-perf load --fairness`, docs/SCALE.md). */
#define RPC_READ_WINDOW (512u << 10)
/* The least a connection's share of it comes to while others of its
 * poll group have work: one 128 KiB Read piece (progress.c). */
#define RPC_READ_SHARE_MIN (128u << 10)
#define RPC_QUIET_TICK_MS 2000
/* A connection that stays idle (no deadline, nothing polled, nothing in
 * its pool to trim) is ticked half as often each time, up to this: a
 * server's 4900 idle connections cost the loop 0.7-2.1 % of a core at
 * one tick each per 2 s, each tick 4 us of locks and cache misses
 * (docs/SCALE.md).  Any pass of its engine brings it back to
 * RPC_QUIET_TICK_MS.  A multiple of it by a power of two, so that the
 * quiet ticks of a loop still come due together. */
#define RPC_QUIET_LEVELS 4
#define RPC_QUIET_TICK_MAX_MS (RPC_QUIET_TICK_MS << RPC_QUIET_LEVELS)

/* Something on x may wait on time now (the engine moved, a close was
 * asked): the loop ticks it again from its next tick. */
void rpcrdma_rpc_loop_unquiet(struct rpc_loop *l);
static inline void rpc_xprt_unquiet(struct rpc_xprt *x)
{
	/* With x->lock held (the tick sets it under the lock too).  Only
	 * the change from quiet costs anything: the loop may be asleep
	 * until the next quiet tick. */
	if (!atomic_load_explicit(&x->quiet_until, memory_order_relaxed))
		return;
	atomic_store(&x->quiet_until, 0);
	if (x->loop)
		rpcrdma_rpc_loop_unquiet(x->loop);
}

/* With x->lock held: the loop may reap x (svc.c, svc_round): it is dead
 * and nothing refers to it.  Only then does dropping a reference need to
 * wake the loop; a live connection is never reaped. */
static inline bool rpc_xprt_reapable_locked(const struct rpc_xprt *x)
{
	return x->dead && x->refs == 0;
}

void rpcrdma_rpc_xprt_tick(struct rpc_xprt *x, uint64_t now);

/* With x->lock: asks for x to be disconnected (by the loop's next tick)
 * and wakes the loop; once. */
void rpcrdma_rpc_xprt_close_locked(struct rpc_xprt *x);
/* With x->lock held: wait until s->finished (rpcrdma_rpc_wait_done_locked
 * by whoever sees the outcome), driving x meanwhile when no other thread
 * does.  0, or RPCRDMA_ERR_TIMEOUT once s->deadline passed first.
 * s->w is the calling thread's (rpcrdma_rpc_waiter_self), set before the
 * outcome can come.  Returns WITHOUT the lock: a waiter told while it
 * slept never takes it again. */
int rpcrdma_rpc_xprt_wait_unlock(struct rpc_xprt *x, struct rpc_wait *s);
/* With x->lock held: s's outcome is in (status); wakes its thread.  With
 * w, a parked thread is woken by w's work, once the lock is dropped, so
 * the poller makes no wake-up system call while it holds the lock (w
 * runs it first, even inside running work). */
void rpcrdma_rpc_wait_done_locked(struct rpc_xprt *x, struct rpc_wait *s,
				  int status, struct rpc_work *w);
/* With x->lock held: the loop should (or need not) watch x's CQ fd. */
void rpcrdma_rpc_xprt_watch_locked(struct rpc_xprt *x, bool on);
/* With x->lock held: after a change that may need the loop's attention
 * (an asynchronous call started, a dispatcher set), arm it unless a
 * driver attends x. */
void rpcrdma_rpc_xprt_need_attention_locked(struct rpc_xprt *x);
/* Wakes a driver of x asleep on its CQ (destroy is waiting). */
void rpcrdma_rpc_xprt_kick(struct rpc_xprt *x);
/* With x->lock held: waits until no thread is inside x's progress or a
 * wait on it (destroy). */
void rpcrdma_rpc_xprt_quiesce_locked(struct rpc_xprt *x);

/* ---------------------------------------------------------------------
 * Call records (call.c): the Requester side of a connection.
 */
struct rpc_call;
/* A record with room for need bytes (header, arguments, reply, results),
 * or NULL. */
struct rpc_call *rpcrdma_rpc_call_alloc(size_t need);
void rpcrdma_rpc_call_free(struct rpc_call *c);
/* With x->lock held: fail every call of owner (NULL: any) not yet
 * completed with status. */
void rpcrdma_rpc_calls_fail_locked(struct rpc_xprt *x, int status,
				   const void *owner, struct rpc_work *w);

/* ---------------------------------------------------------------------
 * Servers known to speak only version 1 (v1_servers.c, draft §7.2).
 */
/* The key of a server address: "addr/port". */
void rpcrdma_rpc_v1_server_key(const struct sockaddr_storage *ss, char *out,
			       size_t cap);
bool rpcrdma_rpc_v1_server_known(const char *key);
void rpcrdma_rpc_v1_server_remember(const char *key);

/* ---------------------------------------------------------------------
 * Event loop (loop.c): one thread per server poll group and per client
 * loop of the process (clnt.c), sleeping in epoll_wait on a wake-up
 * eventfd, the CM channel fds it watches (a server's group 0: the
 * server's; a client loop: each of its clients') and the CQ fd of every
 * connection it watches; ticks every 20 ms while one of its connections
 * changes state, else sleeps until the earliest deadline or quiet tick
 * of its connections.
 */
#define LOOP_HOT 16
/* A server's poll groups, or the process's client loops, at most
 * (opts.threads). */
#define RPCRDMA_RPC_MAX_THREADS 256u
/* opts.threads, or one per CPU this process may run on (at most
 * RPCRDMA_RPC_MAX_THREADS). */
unsigned rpcrdma_rpc_threads(const struct rpcrdma_opts *o);

/* A CM event channel a loop watches, and whom its events go to. */
struct rpc_cm_src {
	struct rpc_dev *rd;          /* its channel: rd->ch */
	void (*on_cm)(void *owner, struct rpcrdma_cm_event *ev);
	void *owner;
	struct rpc_xprt *x;          /* its events' one connection (a
					client), for messages; NULL: a
					server's, named by name() */
	/* The name of id's connection into buf, for messages; NULL or
	 * false: none (the peer's address is used). */
	bool (*name)(void *owner, const struct rpcrdma_cm_id *id, char *buf,
		     size_t cap);
	bool watched;                /* in the loop's epoll set */
};

/* Work for a loop's thread between two of its passes (nothing of a pass
 * in hand: no event, no connection being attended or ticked). */
struct rpc_loop_req {
	struct rpc_loop_req *next;
	void (*fn)(struct rpc_loop *l, struct rpc_loop_req *r);
	bool sync, done;             /* rpcrdma_rpc_loop_call: req_lock */
};

struct rpc_loop {
	pthread_t thread;
	bool started;
	int epfd;                    /* the loop's own epoll set */
	int cq_epfd;                 /* where CQ fds are registered: epfd,
					or a set of its own attended from
					outside (rpcrdma_rpc_loop_external) */
	int wakefd;
	int kickfd;                  /* external set: wakes its attendant */
	/* External set: odd while its attendant (svc_run's one thread)
	 * is in a pass over it, with epoll data in hand; a connection is
	 * reaped once no pass that may have seen its datum is running
	 * (rpcrdma_rpc_loop_external_quiesce). */
	atomic_uint ext_pass;
	atomic_int stop;             /* set by rpcrdma_rpc_loop_stop() */
	struct rpc_spin spin;        /* whether its spins paid */
	/* Connections that just had work, left unarmed while the loop
	 * spins over their CQs (loop thread only). */
	struct rpc_xprt *hot[LOOP_HOT];
	unsigned nhot;
	/* How many of its connections had work in the loop's last pass
	 * that had any (written by its thread, read by attends): each
	 * one's RDMA Read window is its share (progress.c). */
	atomic_uint busy_conns;
	struct rpc_dev *rd;
	struct rpc_xprt *xprts;      /* the connections it ticks; linked and
					unlinked under *xprts_lock when
					set, unlinked by this loop's thread
					only once it runs */
	pthread_mutex_t *xprts_lock; /* the owner's, or NULL (one thread) */
	/* The owner's CM channel when rpcrdma_rpc_loop_init was given an
	 * on_cm (listener events, connection ends; a server's group 0);
	 * others are added with rpcrdma_rpc_loop_watch_cm (clients). */
	struct rpc_cm_src own_cm;
	/* Called in a tick that found a connection not quiet (a dead one
	 * is never quiet), and at least every RPC_QUIET_TICK_MAX_MS: reap
	 * dead connections etc. */
	void (*on_round)(void *owner, struct rpc_loop *l);
	/* Called after each connection's tick (a client's reconnection,
	 * its buffer pool's trim); NULL: none. */
	void (*on_ticked)(struct rpc_xprt *x, uint64_t now);
	void *owner;
	/* The owner's opts.busy_poll_us (a client loop: the largest of its
	 * clients'; changed under xprts_lock, read by the thread). */
	_Atomic int busy_poll_us;
	unsigned busy_poll_at_max;   /* clients with that busy_poll_us, so
					that one leaving does not walk the
					others (clnt.c, xprts_lock) */
	/* Work handed to the thread (rpcrdma_rpc_loop_post/_call). */
	pthread_mutex_t req_lock;
	pthread_cond_t req_cv;
	struct rpc_loop_req *reqs, *reqs_last;
	atomic_bool has_reqs;
	/* Stats export owners that made it watch the export's socket
	 * (stats_export.c, under its lock). */
	unsigned stat_watchers;
	/* A connection stopped being quiet (rpcrdma_rpc_loop_unquiet), and
	 * whether the loop sleeps past its next 20 ms tick. */
	atomic_uint unquiets;
	atomic_bool sleeping_long;
	char name[16];               /* its thread's (top -H, /proc): the
					owner's, else "rpcrdma-loop" */
	/* Connections were reaped in this round / the heap is trimmed at
	 * this time (loop thread only: rpcrdma_rpc_loop_reaped). */
	bool reaped;
	uint64_t trim_at;
	uint64_t round_at;           /* on_round by then at the latest */
};

/* With the loop's xprts_lock held (if it has one): x joins l's list of
 * connections, and l ticks at its usual pace from its next pass. */
void rpcrdma_rpc_loop_link_locked(struct rpc_loop *l, struct rpc_xprt *x);
/* With the same lock: x leaves its loop's list, without a walk (a
 * process with thousands of clients, or a server's teardown, unlinks
 * them one by one); nothing if it is not in one. */
void rpcrdma_rpc_loop_unlink_locked(struct rpc_xprt *x);

/* rd: the owner's device (its buffer pool is trimmed each tick; NULL:
 * none, a client loop); on_cm: watch rd's channel (NULL: do not). */
int rpcrdma_rpc_loop_init(struct rpc_loop *l, struct rpc_dev *rd,
			  void (*on_cm)(void *, struct rpcrdma_cm_event *),
			  void (*on_round)(void *, struct rpc_loop *),
			  void *owner);
/* Watches / stops watching src's channel (its events go to src->on_cm
 * on the loop's thread, after the completions of the same pass).  Stop
 * watching on the loop's thread, or once it has stopped: a pass may
 * hold src's datum.  Errors: RPCRDMA_ERR_SYSTEM. */
int rpcrdma_rpc_loop_watch_cm(struct rpc_loop *l, struct rpc_cm_src *src);
void rpcrdma_rpc_loop_unwatch_cm(struct rpc_loop *l, struct rpc_cm_src *src);
/* r->fn runs on l's thread between two passes.  _post returns at once
 * (r stays valid until fn runs; fn may free it); _call returns once fn
 * has run, and must not be called from a loop thread (two loops waiting
 * on each other would hang).  l must be started and not stopping. */
void rpcrdma_rpc_loop_post(struct rpc_loop *l, struct rpc_loop_req *r);
void rpcrdma_rpc_loop_call(struct rpc_loop *l, struct rpc_loop_req *r);
/* The loop whose thread this is, or NULL. */
struct rpc_loop *rpcrdma_rpc_loop_self(void);
/* Before start: CQs are attended from outside (svc_run), through the fd
 * this returns (readable when a connection has work, or after
 * rpcrdma_rpc_loop_kick); rpcrdma_rpc_loop_attend_external services it.
 * Returns the fd or a negative error. */
int rpcrdma_rpc_loop_external(struct rpc_loop *l);
/* Where a pass leaves a connection that had work unarmed: its keeper
 * polls it while it comes straight back and arms it before it may sleep
 * (rpcrdma_rpc_unarmed_poll, rpcrdma_rpc_unarmed_arm), so that a reply posted meanwhile
 * completes on an unarmed CQ (no wake-up of its fd).  The list is v, *n
 * long, room for cap; ref: each on it holds a reference (a keeper on
 * another thread than the loop's, which reaps). */
struct rpc_unarmed {
	struct rpc_xprt **v;
	unsigned *n, cap;
	bool ref;
};
/* Puts x on u unless it is there; false when u is full (x is then to be
 * armed at once). */
bool rpcrdma_rpc_unarmed_add(const struct rpc_unarmed *u, struct rpc_xprt *x);
/* Polls every connection on u once (rpcrdma_rpc_xprt_attend without
 * the arm); one a driver took over leaves u (its driver arms it).
 * Returns how many had work. */
unsigned rpcrdma_rpc_unarmed_poll(const struct rpc_unarmed *u);
/* Arms every connection on u but keep (NULL: none) and takes it off u
 * (rpcrdma_rpc_xprt_arm: each was polled since its work ran).  True
 * when one had work after all. */
bool rpcrdma_rpc_unarmed_arm(const struct rpc_unarmed *u,
			     const struct rpc_xprt *keep);
/* u: the attendant's list of connections left unarmed; NULL arms every
 * one at once. */
void rpcrdma_rpc_loop_attend_external(struct rpc_loop *l,
				      const struct rpc_unarmed *u);
/* After the CQ fd of a connection left the external set: returns once
 * no pass of its attendant can still hold the connection's datum. */
void rpcrdma_rpc_loop_external_quiesce(struct rpc_loop *l);
void rpcrdma_rpc_loop_kick(struct rpc_loop *l);
int rpcrdma_rpc_loop_start(struct rpc_loop *l);
/* From on_round (loop thread): it freed connections.  Once none has been
 * for RPC_TRIM_AFTER_MS, the loop gives the free memory of malloc's heaps
 * back to the system (loop.c). */
void rpcrdma_rpc_loop_reaped(struct rpc_loop *l);
#define RPC_TRIM_AFTER_MS 1000
void rpcrdma_rpc_loop_wake(struct rpc_loop *l);
/* Stops and joins the thread (from any other thread). */
void rpcrdma_rpc_loop_stop(struct rpc_loop *l);
void rpcrdma_rpc_loop_fini(struct rpc_loop *l);
/* Registers x's CQ fd (armed); x->loop must be l.  Errors: _SYSTEM. */
int rpcrdma_rpc_loop_add(struct rpc_loop *l, struct rpc_xprt *x);
/* Unregisters x's CQ fd. */
void rpcrdma_rpc_loop_remove(struct rpc_loop *l, struct rpc_xprt *x);
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
 * Counters exported to other processes (stats_export.c, stats_export.h).
 */
struct rpc_stat_src {
	struct rpc_stat_src *next;
	/* What points at it in the list (NULL: not in it): unregistering
	 * is O(1), since a process with thousands of clients destroys them
	 * one by one (rpc/stats_export.c). */
	struct rpc_stat_src **pprev;
	uint32_t kind;               /* RPCRDMA_STATX_SERVER / _CLIENT */
	void *obj;                   /* the server or client */
	struct rpc_loop *loop;       /* whose thread may serve readers */
	/* Totals into *s (zeroed); returns the connections up. */
	unsigned (*total)(void *obj, struct rpcrdma_stats *s);
	/* Server: fn on every connection (under the server's list lock). */
	void (*each)(void *obj, void (*fn)(void *ctx, struct rpc_xprt *x),
		     void *ctx);
	char name[64];
	char provider[16];
	uint32_t prog, vers;
};
/* After the loop is initialised / before anything is torn down. */
void rpcrdma_rpc_stats_register(struct rpc_stat_src *src);
void rpcrdma_rpc_stats_unregister(struct rpc_stat_src *src);
/* A loop thread found the socket readable (epoll datum
 * &rpcrdma_rpc_stats_tag): answer every waiting reader. */
void rpcrdma_rpc_stats_serve(void);
extern char rpcrdma_rpc_stats_tag;

/* ---------------------------------------------------------------------
 * Dispatch of incoming calls (dispatch.c).
 */
/* workers 0: handlers run on the thread that takes the call from the
 * connection (the loop, a driving caller, svc_run()); else on a pool of
 * that many threads. */
struct rpc_disp *rpcrdma_rpc_disp_create(unsigned workers);
/* Runs queued handlers to the end, joins the workers, frees. */
void rpcrdma_rpc_disp_destroy(struct rpc_disp *d);
/* Internal registration flags (beside enum rpcrdma_ulb_flags): the
 * handler takes every procedure of (prog, vers), or every call at all
 * (rpcrdma_clnt_register_any / rpcrdma_svc_register_any); DEFER: the
 * handler only takes the request, whose reply is given later with
 * rpcrdma_rpc_req_done() (svc_run() dispatches it). */
#define RPCRDMA_RPC_REG_DEFER (1u << 29)
#define RPCRDMA_RPC_REG_ANY_PROC (1u << 30)
#define RPCRDMA_RPC_REG_ANY_PROG (1u << 31)

int rpcrdma_rpc_disp_register(struct rpc_disp *d, uint32_t prog, uint32_t vers,
			      uint32_t proc, rpcrdma_svc_handler h, void *arg,
			      unsigned flags);
/* The dispatcher of x's incoming calls (NULL: none served): a server's
 * for its connections, a client's for reverse-direction calls. */
void rpcrdma_rpc_disp_attach_locked(struct rpc_xprt *x, struct rpc_disp *d);
struct rpc_disp *rpcrdma_rpc_disp_of_locked(struct rpc_xprt *x);
/* A deferred request (RPCRDMA_RPC_REG_DEFER) is answered: st as a
 * handler would return it. */
void rpcrdma_rpc_req_done(struct rpcrdma_svc_req *r, enum rpcrdma_svc_stat st);
/* From inside r's handler: sends the whole reply message msg (as
 * rpcrdma_svc_req_reply_raw gives it) now, and returns once it is sent
 * (REPLY_SENT): the memory it points at is the caller's again, so it is
 * neither copied nor kept (the libtirpc adapter's svc_sendreply, whose
 * results rpcgen's dispatch frees as soon as it returns).  r, its call
 * message and its call_id stay the handler's until the handler is over;
 * what the handler returns then is ignored.  0, or RPCRDMA_ERR_INVAL (a
 * bad description; nothing was sent, the handler may still answer),
 * RPCRDMA_ERR_DISCONNECTED (the connection is gone: the reply was not
 * sent, the client will send the call again). */
int rpcrdma_rpc_req_reply_sync(struct rpcrdma_svc_req *r,
			       const struct rpcrdma_iov *msg, unsigned n);
/* The libtirpc adapter copied rx bytes of r's DDP items out of the call
 * (rpcrdma_stats.ddp_copied_rx). */
void rpcrdma_rpc_req_count_copied(struct rpcrdma_svc_req *r, uint64_t rx);
/* The libtirpc adapter copied rx bytes of DDP results out of their
 * chunks (rpcrdma_stats.ddp_copied_rx). */
void rpcrdma_rpc_clnt_count_copied(struct rpcrdma_clnt *cl, uint64_t rx);

/* Whether c's calls carry this credential now (the last one set with
 * rpcrdma_clnt_set_cred_raw); no lock (clnt.c). */
bool rpcrdma_rpc_clnt_cred_is(struct rpcrdma_clnt *c, uint32_t flavor,
			      const void *body, size_t len);

/* A reverse-direction client handle on x (clnt.c). */
int rpcrdma_rpc_clnt_on_xprt(struct rpc_xprt *x, uint32_t prog, uint32_t vers,
			     struct rpcrdma_clnt **out);

/* Server internals for the libtirpc adapter (svc.c): a server whose
 * connections svc_run() attends (rpcrdma_rpc_loop_external). */
int rpcrdma_rpc_svc_create(const char *listen_addr,
			   const struct rpcrdma_opts *opts, bool external,
			   struct rpcrdma_svc **out);
struct rpc_loop *rpcrdma_rpc_svc_loop(struct rpcrdma_svc *s);
/* rpcrdma_svc_register_any with internal flags (RPCRDMA_RPC_REG_DEFER). */
int rpcrdma_rpc_svc_register_any_flags(struct rpcrdma_svc *s,
				       rpcrdma_svc_handler handler, void *arg,
				       unsigned flags);

/* Why a server refused a connection, carried in its reject's private
 * data (reject.c): the encoding (its length, or RPCRDMA_ERR_NOSPACE), and
 * the reason a client found in a reject (false: none of ours). */
#define RPC_REJECT_TEXT_MAX 120u
int rpcrdma_rpc_reject_pdata(const char *why, uint8_t *buf, size_t cap);
bool rpcrdma_rpc_reject_reason(const void *pdata, size_t len, char *out,
			       size_t cap);

#endif
