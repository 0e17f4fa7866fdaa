/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Provider test helpers ("tp"): the small layer the provider conformance
 * suite is written on.  Everything here uses provider.h only, so the suite
 * runs unchanged on every provider.
 *
 * - A case runs with a global time budget enforced by a watchdog thread, and
 *   every wait below takes its own time-out, so a broken provider makes a
 *   case fail; it never hangs the run.
 * - A "pair" is one connected server/client QP pair inside this process:
 *   each side has its own device handle, CM channel, PD, send and receive
 *   CQs and QP, as two processes would.
 * - Failures are recorded with TP_CHECK(); a case passes when no check in it
 *   failed.
 */
#ifndef RPCRDMA_TESTS_PROVIDER_TP_H
#define RPCRDMA_TESTS_PROVIDER_TP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "provider/provider.h"

/* ------------------------------------------------------------------ */
/* Run-wide environment                                                 */

struct tp_env {
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_dev_params params;
	struct rpcrdma_dev *dev_srv;   /* the server side's device handle */
	struct rpcrdma_dev *dev_cli;   /* the client side's device handle */
	struct rpcrdma_dev_attr attr;  /* queried on dev_srv */
	const char *addr_str;
	struct sockaddr_storage addr;  /* port filled per listener */
	socklen_t addrlen;
	uint16_t port_base;            /* first port used */
	uint16_t port_next;            /* next port to try */
	uint16_t port_limit;           /* one past the last port to use */
	bool verbose;
	size_t max_rdma;               /* cap on RDMA Write/Read sizes
					  (--max-rdma; 0: 64 MiB) */
};

extern struct tp_env tp;

/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t tp_now_ms(void);

/* ------------------------------------------------------------------ */
/* Checks                                                               */

/* Records a failed check of the current case; printf-style detail.
 * Returns false so it can end a condition. */
bool tp_check_fail(const char *file, int line, const char *expr,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Informational line under the current case (shown with -v or on FAIL). */
void tp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool tp_case_failed(void);

/* TP_CHECK(cond, fmt, ...): true when cond holds, else records the
 * failure with the message and returns false. */
static inline bool tp_checked(bool v)
{
	return v;
}
#define TP_CHECK(cond, ...)                                                \
	tp_checked((cond) ||                                               \
		   tp_check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))

/* Calls a provider op and fails the case when it returns < 0. */
#define TP_OK(call)                                                        \
	tp_ok_at(__FILE__, __LINE__, #call, (call))
int tp_ok_at(const char *file, int line, const char *what, int rc);

const char *tp_wc_status_str(enum rpcrdma_wc_status s);
const char *tp_wc_opcode_str(enum rpcrdma_wc_opcode o);
const char *tp_cm_event_str(enum rpcrdma_cm_event_type t);

/* ------------------------------------------------------------------ */
/* Waiting with time-outs                                               */

/* A CM event copied out (and already acked). */
struct tp_cm_ev {
	enum rpcrdma_cm_event_type type;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cm_id *listen_id;
	int status;
	uint8_t private_data[512];
	uint16_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

/* Waits up to timeout_ms for the next event on ch (poll() on ch->fd,
 * non-blocking get_cm_event), copies and acks it.  0, or
 * RPCRDMA_ERR_TIMEOUT, or the provider's error. */
int tp_wait_cm(struct rpcrdma_cm_channel *ch, int timeout_ms,
	       struct tp_cm_ev *out);
/* As tp_wait_cm, and fails the case unless the event has type `type`. */
int tp_expect_cm(struct rpcrdma_cm_channel *ch,
		 enum rpcrdma_cm_event_type type, int timeout_ms,
		 struct tp_cm_ev *out);

/* Collects exactly n completions from cq into wc[] within timeout_ms using
 * the CQ fd (arm, drain, ack).  Returns how many were collected (< n on
 * time-out; never more than n). */
int tp_wait_wc(struct rpcrdma_cq *cq, int n, int timeout_ms,
	       struct rpcrdma_wc *wc);
/* Drains cq for quiet_ms and returns how many completions appeared
 * (stored into wc[] up to max). */
int tp_drain_wc(struct rpcrdma_cq *cq, int quiet_ms, struct rpcrdma_wc *wc,
		int max);
/* Waits for one completion and checks its status, opcode and wr_id. */
bool tp_expect_wc(struct rpcrdma_cq *cq, int timeout_ms, uint64_t wr_id,
		  enum rpcrdma_wc_opcode op, enum rpcrdma_wc_status st,
		  struct rpcrdma_wc *out);

/* ------------------------------------------------------------------ */
/* Memory                                                               */

/* A registered buffer with guard bytes on both sides: the MR covers
 * [mem + guard, mem + guard + len).  Guards and (when wanted) the region
 * are filled with a canary pattern so tests can prove nothing was
 * touched. */
struct tp_buf {
	uint8_t *mem;     /* whole allocation */
	size_t guard;
	uint8_t *p;       /* the registered region */
	size_t len;
	struct rpcrdma_mr *mr;
};

int tp_buf_alloc(struct rpcrdma_pd *pd, size_t len, unsigned access,
		 size_t guard, struct tp_buf *b);
void tp_buf_free(struct tp_buf *b);
/* Deterministic pattern byte for (seed, offset). */
static inline uint8_t tp_pat(uint32_t seed, size_t off)
{
	uint32_t x = (uint32_t)off * 2654435761u ^ seed * 40503u;
	x ^= x >> 13;
	return (uint8_t)(x + (off >> 8) + seed);
}
void tp_fill(void *p, size_t len, uint32_t seed, size_t base_off);
/* The canary is the pattern of this seed at the allocation's offset. */
#define TP_CANARY_SEED 0xC0FFEEu
/* True when bytes [from, from + n) of the allocation (offsets from
 * b->mem) still hold the canary. */
bool tp_canary_range(const struct tp_buf *b, size_t from, size_t n);
/* Offset of the first byte that differs from the pattern, or SIZE_MAX. */
size_t tp_verify(const void *p, size_t len, uint32_t seed, size_t base_off);
/* Fills the whole allocation (guards and region) with the canary. */
void tp_canary_fill(struct tp_buf *b);
/* True when the whole allocation still holds the canary. */
bool tp_canary_intact(const struct tp_buf *b);

static inline uint64_t tp_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ------------------------------------------------------------------ */
/* Connected pairs                                                      */

struct tp_side {
	struct rpcrdma_dev *dev;
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cq *scq;
	struct rpcrdma_cq *rcq;
	struct rpcrdma_qp *qp;
	struct tp_cm_ev ev;   /* CONNECT_REQUEST (server) / ESTABLISHED
				 (client) as received */
	bool disconnected;    /* DISCONNECTED seen */
};

struct tp_conn_opts {
	const void *cli_pd;       /* private data in connect */
	uint8_t cli_pd_len;
	const void *srv_pd;       /* private data in accept */
	uint8_t srv_pd_len;
	uint8_t cli_ird, cli_ord; /* conn_param of connect (0: default,
				     min(device limit, 16)) */
	uint8_t srv_ird, srv_ord; /* conn_param of accept */
	uint32_t max_send_wr;     /* 0: 64 */
	uint32_t max_recv_wr;     /* 0: 64 */
	uint32_t max_sge;         /* 0: min(4, dev max_sge) */
	int cqe;                  /* 0: 256 */
	int srv_recvs;            /* receives to pre-post on the server
				     before accept, on srv_recv_buf */
	int cli_recvs;
};

struct tp_pair {
	struct tp_side srv, cli;
	struct rpcrdma_cm_id *listen_id;
	uint16_t port;
	uint32_t max_sge;
	/* buffers of each side, freed by tp_pair_close */
	struct tp_buf bufs[32];
	int nbufs;
	/* receive buffers for pre-posted receives: 4 KiB slots */
	struct tp_buf srv_recv_buf, cli_recv_buf;
};

/* Opens both sides' channels, PDs and CQs and a listener on the next free
 * port.  Returns 0 or fails the case. */
int tp_pair_open(struct tp_pair *p, const struct tp_conn_opts *o);
/* Client connects, server accepts; both sides see ESTABLISHED. */
int tp_pair_connect(struct tp_pair *p, const struct tp_conn_opts *o);
/* open + connect with default options. */
int tp_pair_up(struct tp_pair *p, const struct tp_conn_opts *o);
/* Disconnects (if still connected), destroys everything.  Never fails the
 * case; bounded by short time-outs. */
void tp_pair_close(struct tp_pair *p);
/* tp_wait_wc() on cq that meanwhile reads both sides' CM events (noting
 * DISCONNECTED), as a consumer's event loop does: on the verbs provider a
 * QP the kernel did not move to the error state itself (iWARP) flushes
 * once its consumer reads DISCONNECTED (provider.h, verbs_cm.c). */
int tp_pair_wait_wc(struct tp_pair *p, struct rpcrdma_cq *cq, int n,
		    int timeout_ms, struct rpcrdma_wc *wc);
/* A buffer registered on one side's PD and owned by the pair. */
struct tp_buf *tp_pair_buf(struct tp_pair *p, struct tp_side *s,
			   size_t len, unsigned access, size_t guard);
/* Creates the QP of a side on its cm_id.  */
int tp_side_create_qp(struct tp_pair *p, struct tp_side *s,
		      const struct tp_conn_opts *o);
/* min(device IRD / ORD, 16): the conn_param defaults. */
uint8_t tp_default_ird(void);
uint8_t tp_default_ord(void);
/* Sets the port in tp.addr; returns a sockaddr pointer. */
const struct sockaddr *tp_addr_with_port(uint16_t port,
					 struct sockaddr_storage *ss);

/* ------------------------------------------------------------------ */
/* Posting shorthands (each fails the case when the post fails)          */

int tp_post_recv1(struct rpcrdma_qp *qp, uint64_t wr_id, void *addr,
		  uint32_t len, uint32_t lkey);
int tp_post_send1(struct rpcrdma_qp *qp, uint64_t wr_id,
		  enum rpcrdma_wr_opcode op, unsigned flags, void *addr,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint32_t inv_rkey);
/* post_send without failing the case: returns the provider's result. */
int tp_try_send1(struct rpcrdma_qp *qp, uint64_t wr_id,
		 enum rpcrdma_wr_opcode op, unsigned flags, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 uint32_t inv_rkey);

/* Binds mw (server side of p) to [b->p + off, + len) for remote read and
 * write with the given key; waits for the bind's completion. */
int tp_bind_mw(struct tp_pair *p, struct rpcrdma_mw *mw, struct tp_buf *b,
	       size_t off, size_t len, uint8_t key, uint64_t wr_id);

/* Waits until get_terminate() on qp reports a valid Terminate (up to
 * timeout_ms).  Returns 1 with *ti filled, 0 if the provider does not
 * support it (NOTSUP), -1 on time-out. */
int tp_wait_terminate(struct rpcrdma_qp *qp, int timeout_ms,
		      struct rpcrdma_terminate_info *ti);

/* ------------------------------------------------------------------ */
/* Case registry                                                        */

enum tp_result { TP_PASS, TP_FAIL, TP_SKIP };

struct tp_case {
	const char *name;
	void (*fn)(void);
	int timeout_s;      /* watchdog budget */
	const char *what;   /* one line: what it checks */
};

/* Marks the running case skipped with a reason (capability missing).  A
 * case that also failed a check is reported FAIL. */
void tp_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True when the run uses the "verbs" provider on a Linux Soft-RoCE (rxe)
 * device, told by sysfs (/sys/class/infiniband/NAME: rxe's node_desc is
 * "rxe" and it has a "parent" netdev attribute).  For the few cases where
 * rxe itself deviates from the verbs semantics; each such case says which
 * check it cannot make and reports SKIP, never PASS. */
bool tp_device_is_rxe(void);
/* The kernel's soft-iWARP through the verbs provider (rdma-core libsiw). */
bool tp_device_is_siw(void);

extern const struct tp_case tp_cases_data[];
extern const struct tp_case tp_cases_access[];
extern const struct tp_case tp_cases_cm[];
extern const struct tp_case tp_cases_place[];
extern const struct tp_case tp_cases_srq[];

#endif
