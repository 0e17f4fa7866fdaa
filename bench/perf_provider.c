/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf provider: a provider against raw TCP on the same address.
 *
 * Both measurements use the same shape: a server thread and the client on
 * the calling thread; every wait first looks (poll_cq / recv MSG_DONTWAIT)
 * and then sleeps in poll() on an fd (the CQ fd / the socket), so each
 * side pays the same wake-ups.
 *
 *   ping-pong: the client sends 64 bytes, the server answers 64 bytes;
 *              latency per round trip, p50 and p99.
 *   write:     RDMA Write of SIZE bytes, DEPTH in flight, COUNT times, then
 *              a 64-byte DONE Send answered by an ACK (so the data is
 *              placed); TCP: a stream of COUNT x SIZE bytes client->server,
 *              then the ACK.
 *   read:      RDMA Read of SIZE bytes, DEPTH in flight, COUNT times;
 *              TCP: the client asks, the server streams COUNT x SIZE bytes.
 *   write ping-pong (provider only, what perftest's ib_write_lat does):
 *              the client RDMA-Writes 64 bytes ending in a sequence number
 *              into the server's memory, the server spins on that memory
 *              and writes the same back; no completion is waited for on
 *              the path, both sides busy-poll memory.  TCP has no
 *              counterpart, so it has no ratio.
 *   burst:     32 messages of 64 bytes in flight: the client posts 32
 *              Sends as one chain, the server answers every message it
 *              polled with one chain of Sends, the client waits for the
 *              32 answers; messages per second each way.  TCP: 32
 *              messages in one send(), 32 answers in one send().
 *
 *   scale (only with --only scale: thousands of sockets): --conns N
 *              connections (1000) whose server QPs share one CQ; the
 *              cost of poll_cq on that CQ while they are all idle, with
 *              one connection and with N (the ratio is the baseline);
 *              and heap and resident bytes per cm_id + QP (128 send and
 *              128 receive WRs), from N of them created on unconnected
 *              ids, with receive queues of their own and on one shared
 *              receive queue (where the device has them; the server's
 *              QPs of the poll measurement share one too).
 *
 * Copies: where the provider counts them (provider.h qp_counters), the
 * receiver's user-space copies per payload byte placed are printed next
 * to each workload ("copied"): Writes at the server, Read Responses at the
 * client, Sends at the client.  --only LIST (pingpong, wlat, burst, write,
 * read) and --min-size / --max-size pick workloads, --no-tcp skips the
 * TCP runs: for counting syscalls or instructions of one workload.
 *
 * --max-size limits the Write/Read sizes (the Soft-RoCE lab under TCG
 * keeps to 64 KiB to stay fast).  --spin-us N makes every wait, provider
 * and TCP alike, poll for N microseconds before it sleeps (perftest's
 * tools busy-poll; a wake-up through an fd costs milliseconds under TCG).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"
#include "provider/provider.h"

#define MSG 64
#define NRECV 64
#define BURST 32
#define DEPTH 8
#define MAXSZ (4u << 20)
#define WAIT_MS 20000

enum msg_type { M_PING = 1, M_PONG, M_DONE, M_ACK, M_QUIT, M_STREAM, M_PULL,
		M_WLAT, M_BURST, M_BURSTACK };
/* Write ping-pong slot: past the burst area of each side's data buffer. */
#define WLAT_OFF MAXSZ
#define DATA_LEN (MAXSZ + 4096)

struct msg {
	uint32_t type;
	uint32_t size;
	uint64_t count;
	uint8_t pad[MSG - 16];
};

static const size_t sizes[] = { 4096, 65536, 1u << 20, 4u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct opts {
	const char *provider;
	const char *addr;
	unsigned long iters;
	size_t max_size;           /* largest Write/Read size measured */
	size_t min_size;           /* smallest */
	unsigned only;             /* W_* bits of the workloads to run */
	bool no_tcp;
	bool json;
	bool pin;
	unsigned conns;            /* scale: connections on one CQ */
	uint16_t port;
	struct sockaddr_storage ss;
	socklen_t sslen;
};

enum { W_PINGPONG = 1, W_WLAT = 2, W_BURST = 4, W_WRITE = 8, W_READ = 16,
       W_ALL = 31, W_SCALE = 32 /* not in W_ALL: thousands of sockets */ };

struct results {
	double lat_p50[2], lat_p99[2];      /* [0] provider, [1] tcp */
	double wlat_p50, wlat_p99;          /* provider write ping-pong */
	double burst_rate[2];               /* messages/s each way */
	double wr_mibs[2][NSIZES];
	double rd_mibs[2][NSIZES];
	/* receiver's copied bytes per payload byte placed; < 0: not
	 * counted (the provider has no counters) */
	double pp_cp, burst_cp, wr_cp[NSIZES], rd_cp[NSIZES];
	char devname[64];
};

static bool size_on(const struct opts *o, size_t size)
{
	return size >= o->min_size && size <= o->max_size;
}

/* --spin-us, in ns: how long a wait polls before it sleeps. */
static uint64_t spin_ns;

static unsigned long count_for(const struct opts *o, size_t size)
{
	unsigned long cap = (unsigned long)((256u << 20) / size);
	unsigned long n = o->iters < cap ? o->iters : cap;
	return n ? n : 1;
}

static double mibs(size_t size, unsigned long count, uint64_t ns)
{
	if (!ns)
		return 0;
	return (double)size * (double)count / (1024.0 * 1024.0) /
	       ((double)ns / 1e9);
}

static const struct sockaddr *with_port(const struct opts *o, uint16_t port,
					struct sockaddr_storage *ss)
{
	*ss = o->ss;
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	return (const struct sockaddr *)ss;
}

#define FAIL(...)                                                          \
	do {                                                               \
		fprintf(stderr, "rpcrdma-perf: " __VA_ARGS__);             \
		fprintf(stderr, "\n");                                     \
		goto fail;                                                 \
	} while (0)

/* ------------------------------------------------------------------ */
/* Provider side                                                        */

struct pend {
	const struct rpcrdma_provider_ops *ops;
	struct rpcrdma_dev *dev;
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_cm_id *id, *listen;
	struct rpcrdma_pd *pd;
	struct rpcrdma_cq *scq, *rcq;
	struct rpcrdma_qp *qp;
	uint8_t *rbuf, *sbuf, *data;
	struct rpcrdma_mr *rmr, *smr, *dmr;
	uint64_t peer_addr;
	uint32_t peer_rkey;
};

struct remote_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static int p_wait_cm(struct pend *e, enum rpcrdma_cm_event_type want,
		     struct rpcrdma_cm_id **id, struct remote_info *ri)
{
	uint64_t end = perf_now_ns() + (uint64_t)WAIT_MS * 1000000u;

	while (perf_now_ns() < end) {
		struct rpcrdma_cm_event *ev;
		int rc = e->ops->get_cm_event(e->ch, &ev);
		if (rc == RPCRDMA_ERR_AGAIN) {
			struct pollfd pfd = { e->ch->fd, POLLIN, 0 };
			poll(&pfd, 1, 100);
			continue;
		}
		if (rc < 0)
			return rc;
		enum rpcrdma_cm_event_type t = ev->type;
		if (id)
			*id = ev->id;
		if (ri && ev->private_data_len >= sizeof(*ri))
			memcpy(ri, ev->private_data, sizeof(*ri));
		e->ops->ack_cm_event(ev);
		if (t != want) {
			fprintf(stderr, "rpcrdma-perf: CM event %d, wanted %d\n",
				t, want);
			return RPCRDMA_ERR_PROTOCOL;
		}
		return 0;
	}
	return RPCRDMA_ERR_TIMEOUT;
}

/* Waits for at least one completion on cq; returns how many (<= max). */
static int p_wait_wc(struct pend *e, struct rpcrdma_cq *cq,
		     struct rpcrdma_wc *wc, int max)
{
	uint64_t end = perf_now_ns() + (uint64_t)WAIT_MS * 1000000u;
	int fd = e->ops->cq_fd(cq);

	if (spin_ns) {
		uint64_t until = perf_now_ns() + spin_ns;
		do {
			int n = e->ops->poll_cq(cq, max, wc);
			if (n != 0)
				return n;
		} while (perf_now_ns() < until);
	}
	for (;;) {
		int n = e->ops->poll_cq(cq, max, wc);
		if (n != 0)
			return n;
		e->ops->req_notify_cq(cq);
		n = e->ops->poll_cq(cq, max, wc);
		if (n != 0)
			return n;
		if (perf_now_ns() > end)
			return RPCRDMA_ERR_TIMEOUT;
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (poll(&pfd, 1, 1000) > 0)
			e->ops->ack_cq_events(cq);
	}
}

/* Device, channel, PD, the receive CQ (of cqe entries) and the receive
 * buffer of one side. */
static int p_open(struct pend *e, const struct opts *o, int cqe)
{
	struct rpcrdma_dev_params dp;
	memset(&dp, 0, sizeof(dp));
	e->ops = rpcrdma_provider_find(o->provider);
	if (!e->ops)
		return RPCRDMA_ERR_NOENT;
	int rc = e->ops->open(&dp, &e->dev);
	if (rc == 0)
		rc = e->ops->create_channel(e->dev, &e->ch);
	if (rc == 0)
		rc = e->ops->alloc_pd(e->dev, &e->pd);
	if (rc == 0)
		rc = e->ops->create_cq(e->dev, cqe, e, &e->rcq);
	if (rc < 0)
		return rc;
	e->rbuf = calloc(NRECV, MSG);
	if (!e->rbuf)
		return RPCRDMA_ERR_NOMEM;
	return e->ops->reg_mr(e->pd, e->rbuf, NRECV * MSG,
			      RPCRDMA_ACCESS_LOCAL_WRITE, &e->rmr);
}

static int p_setup_common(struct pend *e, const struct opts *o)
{
	int rc = p_open(e, o, 256);
	if (rc == 0)
		rc = e->ops->create_cq(e->dev, 256, e, &e->scq);
	if (rc < 0)
		return rc;
	e->sbuf = calloc(BURST, MSG);
	e->data = calloc(1, DATA_LEN);
	if (!e->sbuf || !e->data)
		return RPCRDMA_ERR_NOMEM;
	rc = e->ops->reg_mr(e->pd, e->sbuf, BURST * MSG, 0, &e->smr);
	if (rc == 0)
		rc = e->ops->reg_mr(e->pd, e->data, DATA_LEN,
				    RPCRDMA_ACCESS_LOCAL_WRITE |
					    RPCRDMA_ACCESS_REMOTE_WRITE |
					    RPCRDMA_ACCESS_REMOTE_READ,
				    &e->dmr);
	return rc;
}

/* Posts n receives to qp, or (qp NULL) to srq: wr_id i in slot
 * i % NRECV of the receive buffer. */
static int p_post_recvs(struct pend *e, struct rpcrdma_qp *qp,
			struct rpcrdma_srq *srq, int n)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		struct rpcrdma_sge sge = {
			(uint64_t)(uintptr_t)(e->rbuf + (i % NRECV) * MSG), MSG,
			e->rmr->lkey };
		struct rpcrdma_recv_wr wr = { .wr_id = (uint64_t)i,
					      .sg_list = &sge, .num_sge = 1 };
		struct rpcrdma_recv_wr *bad;
		rc = qp ? rpcrdma_post_recv(qp, &wr, &bad)
			: rpcrdma_post_srq_recv(srq, &wr, &bad);
	}
	return rc;
}

static int p_create_qp(struct pend *e)
{
	struct rpcrdma_qp_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->scq;
	qa.recv_cq = e->rcq;
	qa.max_send_wr = 64;
	qa.max_recv_wr = NRECV;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.max_inline_data = MSG; /* the ping-pongs' messages go INLINE */
	int rc = e->ops->create_qp(e->id, e->pd, &qa, &e->qp);
	return rc ? rc : p_post_recvs(e, e->qp, NULL, NRECV);
}

static int p_repost(struct pend *e, uint64_t slot)
{
	struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)(e->rbuf + slot * MSG),
				   MSG, e->rmr->lkey };
	struct rpcrdma_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				      .num_sge = 1 };
	struct rpcrdma_recv_wr *bad;
	return rpcrdma_post_recv(e->qp, &wr, &bad);
}

/* Sends a 64-byte message (type, count); reaps send completions without
 * waiting. */
static int p_send_msg2(struct pend *e, uint32_t type, uint64_t count)
{
	struct rpcrdma_wc wc[16];
	while (e->ops->poll_cq(e->scq, 16, wc) > 0)
		;
	memset(e->sbuf, 0, MSG);
	memcpy(e->sbuf, &type, sizeof(type));
	memcpy(e->sbuf + offsetof(struct msg, count), &count, sizeof(count));
	struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)e->sbuf, MSG,
				   e->smr->lkey };
	struct rpcrdma_send_wr wr;
	struct rpcrdma_send_wr *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xFFFF;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = RPCRDMA_WR_SEND;
	wr.send_flags = RPCRDMA_SEND_SIGNALED | RPCRDMA_SEND_INLINE;
	return rpcrdma_post_send(e->qp, &wr, &bad);
}

static int p_send_msg(struct pend *e, uint32_t type)
{
	return p_send_msg2(e, type, 0);
}

/* Posts n 64-byte messages of type as one chain, each from its own slot
 * of the send buffer (by reference, not INLINE), only the last signalled
 * (the slots are reused once the peer answered, so all went out). */
static int p_send_chain(struct pend *e, uint32_t type, int n)
{
	struct rpcrdma_wc wc[16];
	struct rpcrdma_sge sge[BURST];
	struct rpcrdma_send_wr wr[BURST];
	struct rpcrdma_send_wr *bad;
	while (e->ops->poll_cq(e->scq, 16, wc) > 0)
		;
	if (n > BURST)
		return RPCRDMA_ERR_INVAL;
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		uint8_t *m = e->sbuf + (size_t)i * MSG;
		memset(m, 0, MSG);
		memcpy(m, &type, sizeof(type));
		sge[i] = (struct rpcrdma_sge){ (uint64_t)(uintptr_t)m, MSG,
					       e->smr->lkey };
		wr[i].wr_id = 0xFFFF;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = RPCRDMA_WR_SEND;
		wr[i].send_flags = i == n - 1 ? RPCRDMA_SEND_SIGNALED : 0;
		wr[i].next = i == n - 1 ? NULL : &wr[i + 1];
	}
	return rpcrdma_post_send(e->qp, wr, &bad);
}

/* The QP's counters, or all zero when it has none. */
static bool p_counters(struct rpcrdma_qp *qp, struct rpcrdma_qp_counters *c)
{
	memset(c, 0, sizeof(*c));
	return qp && rpcrdma_qp_counters(qp, c) == 0;
}

static double copied_per_byte(bool ok, uint64_t copied0, uint64_t copied1,
			      uint64_t bytes0, uint64_t bytes1)
{
	if (!ok)
		return -1;
	return bytes1 > bytes0 ? (double)(copied1 - copied0) /
					 (double)(bytes1 - bytes0)
			       : 0;
}

/* Waits for the next message; returns its type or a negative error. */
static int p_recv_msg(struct pend *e)
{
	struct rpcrdma_wc wc;
	int n = p_wait_wc(e, e->rcq, &wc, 1);
	if (n < 0)
		return n;
	if (wc.status != RPCRDMA_WC_SUCCESS)
		return RPCRDMA_ERR_DISCONNECTED;
	uint32_t type;
	memcpy(&type, e->rbuf + wc.wr_id * MSG, sizeof(type));
	int rc = p_repost(e, wc.wr_id);
	return rc < 0 ? rc : (int)type;
}

static void p_teardown(struct pend *e)
{
	if (!e->ops)
		return;
	if (e->qp)
		e->ops->destroy_qp(e->qp);
	if (e->id)
		e->ops->destroy_id(e->id);
	if (e->listen)
		e->ops->destroy_id(e->listen);
	if (e->rmr)
		e->ops->dereg_mr(e->rmr);
	if (e->smr)
		e->ops->dereg_mr(e->smr);
	if (e->dmr)
		e->ops->dereg_mr(e->dmr);
	if (e->scq)
		e->ops->destroy_cq(e->scq);
	if (e->rcq)
		e->ops->destroy_cq(e->rcq);
	if (e->pd)
		e->ops->dealloc_pd(e->pd);
	if (e->ch)
		e->ops->destroy_channel(e->ch);
	if (e->dev)
		e->ops->close(e->dev);
	free(e->rbuf);
	free(e->sbuf);
	free(e->data);
	memset(e, 0, sizeof(*e));
}

/* Spins until the sequence number at the end of this side's write
 * ping-pong slot equals seq; RPCRDMA_ERR_TIMEOUT after WAIT_MS. */
static int wlat_spin(struct pend *e, uint64_t seq)
{
	const uint64_t *at = (const uint64_t *)(e->data + WLAT_OFF + MSG - 8);
	uint64_t end = 0;

	for (unsigned n = 0;; n++) {
		if (__atomic_load_n(at, __ATOMIC_ACQUIRE) == seq)
			return 0;
		/* A software provider needs CPU time to place the data:
		 * yield now and then, or two spinners starve it on a small
		 * machine. */
		if ((n & 255) == 255)
			sched_yield();
		if ((n & 4095) == 4095) {
			uint64_t now = perf_now_ns();
			if (!end)
				end = now + (uint64_t)WAIT_MS * 1000000u;
			else if (now > end)
				return RPCRDMA_ERR_TIMEOUT;
		}
	}
}

/* RDMA-Writes 64 bytes ending in seq into the peer's slot; reaps earlier
 * Write completions without waiting. */
static int wlat_write(struct pend *e, uint64_t seq)
{
	struct rpcrdma_wc wc[16];
	int n;

	while ((n = e->ops->poll_cq(e->scq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			if (wc[i].status != RPCRDMA_WC_SUCCESS)
				return RPCRDMA_ERR_DISCONNECTED;
	uint8_t *src = e->data + WLAT_OFF + MSG;
	memcpy(src + MSG - 8, &seq, sizeof(seq));
	struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)src, MSG, e->dmr->lkey };
	struct rpcrdma_send_wr wr;
	struct rpcrdma_send_wr *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xFFFE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = RPCRDMA_WR_RDMA_WRITE;
	wr.send_flags = RPCRDMA_SEND_SIGNALED | RPCRDMA_SEND_INLINE;
	wr.rdma.remote_addr = e->peer_addr + WLAT_OFF;
	wr.rdma.rkey = e->peer_rkey;
	return rpcrdma_post_send(e->qp, &wr, &bad);
}

/* Server half of the write ping-pong: count rounds, seq 1..count. */
static int wlat_serve(struct pend *e, uint64_t count)
{
	for (uint64_t seq = 1; seq <= count; seq++) {
		int rc = wlat_spin(e, seq);
		if (rc == 0)
			rc = wlat_write(e, seq);
		if (rc < 0)
			return rc;
	}
	return 0;
}

struct server_arg {
	const struct opts *o;
	sem_t ready;
	int rc;
	uint16_t port;   /* where it listens */
	struct rpcrdma_qp *_Atomic qp; /* once connected: for its counters */
};

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6
			     ? ((const struct sockaddr_in6 *)ss)->sin6_port
			     : ((const struct sockaddr_in *)ss)->sin_port);
}

static void *p_server(void *arg)
{
	struct server_arg *sa = arg;
	struct pend e;
	struct sockaddr_storage ss;
	bool posted_ready = false;

	memset(&e, 0, sizeof(e));
	int rc = p_setup_common(&e, sa->o);
	if (rc == 0)
		rc = e.ops->create_id(e.ch, NULL, &e.listen);
	if (rc == 0)
		rc = e.ops->listen(e.listen, with_port(sa->o, sa->o->port, &ss),
				   sa->o->sslen, 4);
	/* Port 0 (the default) lets the kernel pick a free one: a fixed
	 * number can be any other connection's local port. */
	if (rc == 0)
		sa->port = port_of(&e.listen->local_addr);
	sa->rc = rc;
	sem_post(&sa->ready);
	posted_ready = true;
	if (rc < 0)
		goto out;
	struct remote_info cri = { 0, 0, 0 };
	rc = p_wait_cm(&e, RPCRDMA_CM_EVENT_CONNECT_REQUEST, &e.id, &cri);
	e.peer_addr = cri.addr;
	e.peer_rkey = cri.rkey;
	if (rc == 0)
		rc = p_create_qp(&e);
	if (rc == 0)
		atomic_store(&sa->qp, e.qp); /* before the client can start */
	if (rc == 0) {
		struct remote_info ri = { (uint64_t)(uintptr_t)e.data,
					  e.dmr->rkey, DATA_LEN };
		struct rpcrdma_dev_attr attr;
		e.ops->query(e.dev, &attr);
		struct rpcrdma_conn_param cp = {
			.private_data = &ri,
			.private_data_len = sizeof(ri),
			.responder_resources =
				(uint8_t)(attr.max_qp_rd_atom > 16
						  ? 16 : attr.max_qp_rd_atom),
			.initiator_depth =
				(uint8_t)(attr.max_qp_init_rd_atom > 16
						  ? 16
						  : attr.max_qp_init_rd_atom),
		};
		rc = e.ops->accept(e.id, &cp);
	}
	if (rc == 0)
		rc = p_wait_cm(&e, RPCRDMA_CM_EVENT_ESTABLISHED, NULL, NULL);
	bool quit = false;
	while (rc == 0 && !quit) {
		/* Everything that came, in one go: a burst is answered with
		 * one chain. */
		struct rpcrdma_wc wc[NRECV];
		int n = p_wait_wc(&e, e.rcq, wc, NRECV);
		if (n < 0) {
			rc = n;
			break;
		}
		int burst = 0;
		for (int i = 0; i < n && rc == 0 && !quit; i++) {
			if (wc[i].status != RPCRDMA_WC_SUCCESS) {
				rc = RPCRDMA_ERR_DISCONNECTED;
				break;
			}
			uint32_t t;
			uint64_t count;
			const uint8_t *m = e.rbuf + wc[i].wr_id * MSG;
			memcpy(&t, m, sizeof(t));
			memcpy(&count, m + offsetof(struct msg, count),
			       sizeof(count));
			rc = p_repost(&e, wc[i].wr_id);
			if (rc < 0)
				break;
			if (t == M_PING)
				rc = p_send_msg(&e, M_PONG);
			else if (t == M_BURST)
				burst++;
			else if (t == M_DONE)
				rc = p_send_msg(&e, M_ACK);
			else if (t == M_WLAT)
				rc = cri.len >= DATA_LEN ? wlat_serve(&e, count)
							 : RPCRDMA_ERR_PROTOCOL;
			else if (t == M_QUIT)
				quit = true;
		}
		if (rc == 0 && burst)
			rc = p_send_chain(&e, M_BURSTACK, burst);
	}
	if (rc == 0)
		p_wait_cm(&e, RPCRDMA_CM_EVENT_DISCONNECTED, NULL, NULL);
out:
	if (!posted_ready)
		sem_post(&sa->ready);
	if (rc < 0)
		fprintf(stderr, "rpcrdma-perf: provider server: %s\n",
			rpcrdma_strerror(rc));
	sa->rc = rc;
	p_teardown(&e);
	return NULL;
}

static int p_rdma_burst(struct pend *e, enum rpcrdma_wr_opcode op,
			size_t size, unsigned long count)
{
	unsigned long posted = 0, done = 0;
	struct rpcrdma_wc wc[DEPTH];

	while (done < count) {
		while (posted < count && posted - done < DEPTH) {
			struct rpcrdma_sge sge = { (uint64_t)(uintptr_t)e->data,
						   (uint32_t)size,
						   e->dmr->lkey };
			struct rpcrdma_send_wr wr;
			struct rpcrdma_send_wr *bad;
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = (uint64_t)posted | 1ull << 40;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = op;
			wr.send_flags = RPCRDMA_SEND_SIGNALED;
			wr.rdma.remote_addr = e->peer_addr;
			wr.rdma.rkey = e->peer_rkey;
			int rc = rpcrdma_post_send(e->qp, &wr, &bad);
			if (rc < 0)
				return rc;
			posted++;
		}
		int n = p_wait_wc(e, e->scq, wc, DEPTH);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RPCRDMA_WC_SUCCESS)
				return RPCRDMA_ERR_DISCONNECTED;
			if (wc[i].wr_id != 0xFFFF)
				done++;
		}
	}
	/* DONE / ACK: when it returns, the data is placed at the target. */
	int rc = p_send_msg(e, M_DONE);
	if (rc == 0)
		rc = p_recv_msg(e);
	return rc < 0 ? rc : (rc == M_ACK ? 0 : RPCRDMA_ERR_PROTOCOL);
}

/* count RDMA ops of size bytes: MiB/s, and the copies per byte placed
 * where `target` (the QP that places the data) counts them. */
static int p_measure(struct pend *e, enum rpcrdma_wr_opcode op, size_t size,
		     unsigned long count, struct rpcrdma_qp *target,
		     double *mib_s, double *cp)
{
	struct rpcrdma_qp_counters c0, c1;
	bool ok = p_counters(target, &c0);
	uint64_t t0 = perf_now_ns();
	int rc = p_rdma_burst(e, op, size, count);
	if (rc < 0)
		return rc;
	*mib_s = mibs(size, count, perf_now_ns() - t0);
	ok = ok && p_counters(target, &c1);
	*cp = copied_per_byte(ok, c0.rx_tagged_copied, c1.rx_tagged_copied,
			      c0.rx_tagged_bytes, c1.rx_tagged_bytes);
	return 0;
}

static int run_provider(const struct opts *o, struct results *r)
{
	struct server_arg sa = { .o = o };
	struct pend e;
	struct sockaddr_storage ss;
	pthread_t th;
	uint64_t *lat = NULL;
	unsigned long warm = o->iters / 10 < 100 ? o->iters / 10 : 100;
	int rc;

	memset(&e, 0, sizeof(e));
	sem_init(&sa.ready, 0, 0);
	pthread_create(&th, NULL, p_server, &sa);
	sem_wait(&sa.ready);
	if (sa.rc < 0) {
		pthread_join(th, NULL);
		fprintf(stderr, "rpcrdma-perf: provider listen failed: %s\n",
			rpcrdma_strerror(sa.rc));
		return -1;
	}
	rc = p_setup_common(&e, o);
	if (rc < 0)
		FAIL("provider %s: %s", o->provider, rpcrdma_strerror(rc));
	struct rpcrdma_dev_attr attr;
	if (e.ops->query(e.dev, &attr) == 0)
		snprintf(r->devname, sizeof(r->devname), "%s", attr.name);
	if ((rc = e.ops->create_id(e.ch, NULL, &e.id)) < 0 ||
	    (rc = e.ops->resolve(e.id, with_port(o, sa.port, &ss), o->sslen)) <
		    0 ||
	    (rc = p_create_qp(&e)) < 0)
		FAIL("client setup: %s", rpcrdma_strerror(rc));
	struct rpcrdma_conn_param cp = {
		.responder_resources = (uint8_t)(attr.max_qp_rd_atom > 16
							 ? 16
							 : attr.max_qp_rd_atom),
		.initiator_depth = (uint8_t)(attr.max_qp_init_rd_atom > 16
						     ? 16
						     : attr.max_qp_init_rd_atom),
	};
	struct remote_info mine = { (uint64_t)(uintptr_t)e.data, e.dmr->rkey,
				    DATA_LEN };
	cp.private_data = &mine;
	cp.private_data_len = sizeof(mine);
	struct remote_info ri = { 0, 0, 0 };
	if ((rc = e.ops->connect(e.id, &cp)) < 0 ||
	    (rc = p_wait_cm(&e, RPCRDMA_CM_EVENT_ESTABLISHED, NULL, &ri)) < 0)
		FAIL("connect: %s", rpcrdma_strerror(rc));
	e.peer_addr = ri.addr;
	e.peer_rkey = ri.rkey;
	if (ri.len < DATA_LEN)
		FAIL("server advertised %u bytes", ri.len);

	lat = calloc(o->iters, sizeof(*lat));
	if (!lat)
		FAIL("out of memory");
	struct rpcrdma_qp_counters c0, c1;
	bool ok;
	if (o->only & W_PINGPONG) {
		ok = p_counters(e.qp, &c0);
		for (unsigned long i = 0; i < warm + o->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if ((rc = p_send_msg(&e, M_PING)) < 0 ||
			    (rc = p_recv_msg(&e)) < 0)
				FAIL("ping-pong: %s", rpcrdma_strerror(rc));
			if (rc != M_PONG)
				FAIL("ping-pong: unexpected message %d", rc);
			if (i >= warm)
				lat[i - warm] = perf_now_ns() - t0;
		}
		r->lat_p50[0] = perf_quantile_us(lat, o->iters, 0.50);
		r->lat_p99[0] = perf_quantile_us(lat, o->iters, 0.99);
		ok = ok && p_counters(e.qp, &c1);
		r->pp_cp = copied_per_byte(ok, c0.rx_untagged_copied,
					   c1.rx_untagged_copied,
					   c0.rx_untagged_bytes,
					   c1.rx_untagged_bytes);
	}

	if (o->only & W_WLAT) {
		/* Write ping-pong: seq 1..warm+iters, the first warm not
		 * timed. */
		if ((rc = p_send_msg2(&e, M_WLAT, warm + o->iters)) < 0)
			FAIL("write ping-pong: %s", rpcrdma_strerror(rc));
		for (unsigned long i = 0; i < warm + o->iters; i++) {
			uint64_t t0 = perf_now_ns();
			if ((rc = wlat_write(&e, i + 1)) < 0 ||
			    (rc = wlat_spin(&e, i + 1)) < 0)
				FAIL("write ping-pong: %s",
				     rpcrdma_strerror(rc));
			if (i >= warm)
				lat[i - warm] = perf_now_ns() - t0;
		}
		r->wlat_p50 = perf_quantile_us(lat, o->iters, 0.50);
		r->wlat_p99 = perf_quantile_us(lat, o->iters, 0.99);
	}

	if (o->only & W_BURST) {
		unsigned long rounds = o->iters / BURST ? o->iters / BURST : 1;
		ok = p_counters(e.qp, &c0);
		uint64_t t0 = perf_now_ns();
		for (unsigned long i = 0; i < rounds; i++) {
			if ((rc = p_send_chain(&e, M_BURST, BURST)) < 0)
				FAIL("burst: %s", rpcrdma_strerror(rc));
			for (int got = 0; got < BURST;) {
				struct rpcrdma_wc wc[NRECV];
				int n = p_wait_wc(&e, e.rcq, wc, NRECV);
				if (n < 0)
					FAIL("burst: %s", rpcrdma_strerror(n));
				for (int k = 0; k < n; k++, got++) {
					uint32_t t;
					if (wc[k].status != RPCRDMA_WC_SUCCESS)
						FAIL("burst: %s",
						     rpcrdma_strerror(
							     RPCRDMA_ERR_DISCONNECTED));
					memcpy(&t, e.rbuf + wc[k].wr_id * MSG,
					       sizeof(t));
					if (t != M_BURSTACK)
						FAIL("burst: unexpected message %u",
						     t);
					if ((rc = p_repost(&e, wc[k].wr_id)) < 0)
						FAIL("burst: %s",
						     rpcrdma_strerror(rc));
				}
			}
		}
		uint64_t ns = perf_now_ns() - t0;
		r->burst_rate[0] = ns ? (double)rounds * BURST * 1e9 / (double)ns
				      : 0;
		ok = ok && p_counters(e.qp, &c1);
		r->burst_cp = copied_per_byte(ok, c0.rx_untagged_copied,
					      c1.rx_untagged_copied,
					      c0.rx_untagged_bytes,
					      c1.rx_untagged_bytes);
	}

	for (size_t s = 0; s < NSIZES; s++) {
		if (!size_on(o, sizes[s]))
			continue;
		unsigned long n = count_for(o, sizes[s]);
		if (o->only & W_WRITE) {
			/* The Writes are placed at the server. */
			rc = p_measure(&e, RPCRDMA_WR_RDMA_WRITE, sizes[s], n,
				       atomic_load(&sa.qp), &r->wr_mibs[0][s],
				       &r->wr_cp[s]);
			if (rc < 0)
				FAIL("RDMA Write %zu: %s", sizes[s],
				     rpcrdma_strerror(rc));
		}
		if (o->only & W_READ) {
			/* The Read Responses are placed here. */
			rc = p_measure(&e, RPCRDMA_WR_RDMA_READ, sizes[s], n,
				       e.qp, &r->rd_mibs[0][s], &r->rd_cp[s]);
			if (rc < 0)
				FAIL("RDMA Read %zu: %s", sizes[s],
				     rpcrdma_strerror(rc));
		}
	}
	p_send_msg(&e, M_QUIT);
	usleep(10000);
	e.ops->disconnect(e.id);
	pthread_join(th, NULL);
	free(lat);
	p_teardown(&e);
	sem_destroy(&sa.ready);
	return 0;
fail:
	if (e.id)
		e.ops->disconnect(e.id);
	pthread_join(th, NULL);
	free(lat);
	p_teardown(&e);
	sem_destroy(&sa.ready);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Scale: many connections on one CQ                                    */

/* Send and receive WRs of a scale QP: what a server connection of the
 * rpc layer asks for, roughly (credits plus calls). */
#define SCALE_SEND_WR 128
#define SCALE_RECV_WR 128
/* Receives posted per server QP while connections sit idle. */
#define SCALE_IDLE_RECVS 4

struct scale_res {
	unsigned conns;
	double poll_ns_1, poll_ns_n;  /* poll_cq of an idle CQ, per call */
	double qp_heap, qp_rss;       /* per cm_id + QP with its own receive
					 queue; < 0: not measured */
	double srq_qp_heap, srq_qp_rss; /* ...on a shared receive queue */
	double srq_heap;              /* the shared receive queue itself */
	bool srq;                     /* the device has shared receives */
};

/* Bytes the allocator handed out (0 under a sanitizer, whose allocator
 * glibc's counters do not see). */
static size_t heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

static size_t rss_bytes(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* A scale side: one CQ (rcq) for every QP. */
static int scale_open(struct pend *e, const struct opts *o, int cqe)
{
	memset(e, 0, sizeof(*e));
	return p_open(e, o, cqe);
}

/* A QP on e's one CQ, with nrecv receives of its own (post of them
 * posted), or on srq. */
static int scale_qp(struct pend *e, struct rpcrdma_cm_id *id, uint32_t nsend,
		    uint32_t nrecv, int post, struct rpcrdma_srq *srq,
		    struct rpcrdma_qp **qp)
{
	struct rpcrdma_qp_attr qa;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e->rcq;
	qa.recv_cq = e->rcq;
	qa.max_send_wr = nsend;
	qa.max_recv_wr = nrecv;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.srq = srq;
	int rc = e->ops->create_qp(id, e->pd, &qa, qp);
	return rc || srq ? rc : p_post_recvs(e, *qp, NULL, post);
}

/* A shared receive queue of SCALE_SRQ_WR receives on e's PD, all posted
 * (so its ring is resident, as it would be serving connections). */
#define SCALE_SRQ_WR 4096
static int scale_srq(struct pend *e, struct rpcrdma_srq **srq)
{
	struct rpcrdma_srq_attr sa = { .max_wr = SCALE_SRQ_WR, .max_sge = 1 };
	int rc = e->ops->create_srq ? e->ops->create_srq(e->pd, &sa, srq)
				    : RPCRDMA_ERR_NOTSUP;
	return rc ? rc : p_post_recvs(e, NULL, *srq, SCALE_SRQ_WR);
}

/* Heap and resident bytes per cm_id + QP, from n of them created on
 * unconnected ids (nothing else of the process moves meanwhile); with
 * use_srq, the QPs share a receive queue, whose own bytes go to *srq_heap
 * (< 0 when the device has none: then nothing is measured). */
static int scale_memory(const struct opts *o, unsigned n, bool use_srq,
			double *heap, double *rss, double *srq_heap)
{
	struct pend e;
	struct sockaddr_storage ss;
	struct rpcrdma_srq *srq = NULL;
	struct rpcrdma_cm_id **ids = calloc(n, sizeof(*ids));
	struct rpcrdma_qp **qps = calloc(n, sizeof(*qps));
	int rc = ids && qps ? scale_open(&e, o, 64) : RPCRDMA_ERR_NOMEM;
	if (rc == 0 && use_srq) {
		size_t s0 = heap_bytes();
		rc = scale_srq(&e, &srq);
		size_t s1 = heap_bytes();
		if (rc == RPCRDMA_ERR_NOTSUP) {
			n = 0; /* nothing to measure */
			rc = 0;
		} else if (rc == 0) {
			*srq_heap = s1 > s0 ? (double)(s1 - s0) : -1;
		}
	}
	size_t h0 = heap_bytes(), r0 = rss_bytes();
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		rc = e.ops->create_id(e.ch, NULL, &ids[i]);
		if (rc == 0)
			rc = e.ops->resolve(ids[i], with_port(o, 9, &ss),
					    o->sslen);
		if (rc == 0)
			rc = scale_qp(&e, ids[i], SCALE_SEND_WR, SCALE_RECV_WR,
				      SCALE_RECV_WR, srq, &qps[i]);
	}
	size_t h1 = heap_bytes(), r1 = rss_bytes();
	if (rc == 0 && n) {
		*heap = h1 > h0 ? (double)(h1 - h0) / n : -1;
		*rss = r1 > r0 ? (double)(r1 - r0) / n : -1;
	}
	for (unsigned i = 0; ids && i < n; i++) {
		if (qps[i])
			e.ops->destroy_qp(qps[i]);
		if (ids[i])
			e.ops->destroy_id(ids[i]);
	}
	if (srq)
		e.ops->destroy_srq(srq);
	p_teardown(&e);
	free(ids);
	free(qps);
	if (rc < 0)
		fprintf(stderr, "rpcrdma-perf: scale memory: %s\n",
			rpcrdma_strerror(rc));
	return rc;
}

/* poll_cq on an idle CQ, in ns per call (0.2 s of calls). */
static double scale_poll_cost(struct pend *s)
{
	struct rpcrdma_wc wc[16];
	unsigned long k = 0;
	uint64_t t0 = perf_now_ns(), t;
	do {
		for (int i = 0; i < 16; i++, k++)
			if (s->ops->poll_cq(s->rcq, 16, wc) != 0)
				return -1;
		t = perf_now_ns();
	} while (t - t0 < 200000000ull);
	return (double)(t - t0) / (double)k;
}

struct scale_conn {
	struct rpcrdma_cm_id *cid, *sid;
	struct rpcrdma_qp *cqp, *sqp;
};

/* Connects conns [from, to): the server's QPs on its one CQ, and on srq
 * when there is one. */
static int scale_connect(const struct opts *o, struct pend *s, struct pend *c,
			 struct rpcrdma_srq *srq, uint16_t port,
			 struct scale_conn *k, unsigned from, unsigned to)
{
	struct sockaddr_storage ss;
	unsigned next = from, req = 0, cest = 0, sest = 0, want = to - from;
	uint64_t end = perf_now_ns() + (uint64_t)WAIT_MS * 1000000u;
	while ((cest < want || sest < want) && perf_now_ns() < end) {
		/* At most 64 handshakes in flight, as a listen backlog. */
		while (next < to && next - from - cest < 64) {
			struct scale_conn *x = &k[next];
			int rc = c->ops->create_id(c->ch, x, &x->cid);
			if (rc == 0)
				rc = c->ops->resolve(x->cid,
						     with_port(o, port, &ss),
						     o->sslen);
			if (rc == 0)
				rc = scale_qp(c, x->cid, 4, 1, 0, NULL, &x->cqp);
			struct rpcrdma_conn_param cp = {
				.private_data = &next,
				.private_data_len = sizeof(next),
				.responder_resources = 1,
				.initiator_depth = 1 };
			if (rc == 0)
				rc = c->ops->connect(x->cid, &cp);
			if (rc < 0)
				return rc;
			next++;
		}
		struct rpcrdma_cm_event *ev;
		bool any = false;
		while (s->ops->get_cm_event(s->ch, &ev) == 0) {
			any = true;
			int rc = 0;
			if (ev->type == RPCRDMA_CM_EVENT_CONNECT_REQUEST) {
				unsigned i = UINT32_MAX;
				if (ev->private_data_len >= sizeof(i))
					memcpy(&i, ev->private_data, sizeof(i));
				if (i < from || i >= to || k[i].sid)
					rc = RPCRDMA_ERR_PROTOCOL;
				struct rpcrdma_conn_param cp = {
					.responder_resources = 1,
					.initiator_depth = 1 };
				if (rc == 0) {
					k[i].sid = ev->id;
					rc = scale_qp(s, ev->id, 4,
						      SCALE_IDLE_RECVS,
						      SCALE_IDLE_RECVS, srq,
						      &k[i].sqp);
				}
				if (rc == 0)
					rc = s->ops->accept(ev->id, &cp);
				req++;
			} else if (ev->type == RPCRDMA_CM_EVENT_ESTABLISHED) {
				sest++;
			} else {
				rc = RPCRDMA_ERR_PROTOCOL;
			}
			s->ops->ack_cm_event(ev);
			if (rc < 0)
				return rc;
		}
		while (c->ops->get_cm_event(c->ch, &ev) == 0) {
			any = true;
			bool ok = ev->type == RPCRDMA_CM_EVENT_ESTABLISHED;
			c->ops->ack_cm_event(ev);
			if (!ok)
				return RPCRDMA_ERR_CONNREFUSED;
			cest++;
		}
		if (!any) {
			struct pollfd pfd[2] = { { s->ch->fd, POLLIN, 0 },
						 { c->ch->fd, POLLIN, 0 } };
			poll(pfd, 2, 10);
		}
	}
	return cest == want && sest == want ? 0 : RPCRDMA_ERR_TIMEOUT;
}

/* poll_cq cost with 1 and n idle connections; the server's QPs share a
 * receive queue where the device has them (*srq_used says). */
static int scale_poll(const struct opts *o, unsigned n, double *ns1,
		      double *nsn, bool *srq_used)
{
	struct pend s, c;
	struct sockaddr_storage ss;
	struct rpcrdma_srq *srq = NULL;
	struct scale_conn *k = calloc(n, sizeof(*k));
	int rc = k ? scale_open(&s, o, (int)(8 * n + 64)) : RPCRDMA_ERR_NOMEM;
	if (rc == 0)
		rc = scale_open(&c, o, (int)(8 * n + 64));
	if (rc == 0 && scale_srq(&s, &srq) < 0 && srq) {
		s.ops->destroy_srq(srq); /* none: own receive queues */
		srq = NULL;
	}
	*srq_used = srq != NULL;
	if (rc == 0)
		rc = s.ops->create_id(s.ch, NULL, &s.listen);
	if (rc == 0)
		rc = s.ops->listen(s.listen, with_port(o, o->port, &ss),
				   o->sslen, 1024);
	uint16_t port = 0;
	if (rc == 0)
		port = port_of(&s.listen->local_addr);
	if (rc == 0)
		rc = scale_connect(o, &s, &c, srq, port, k, 0, 1);
	if (rc == 0)
		*ns1 = scale_poll_cost(&s);
	if (rc == 0)
		rc = scale_connect(o, &s, &c, srq, port, k, 1, n);
	if (rc == 0)
		*nsn = scale_poll_cost(&s);
	if (rc == 0 && (*ns1 < 0 || *nsn < 0))
		rc = RPCRDMA_ERR_PROTOCOL; /* an idle CQ had completions */
	for (unsigned i = 0; k && i < n; i++) {
		if (k[i].cqp)
			c.ops->destroy_qp(k[i].cqp);
		if (k[i].cid)
			c.ops->destroy_id(k[i].cid);
		if (k[i].sqp)
			s.ops->destroy_qp(k[i].sqp);
		if (k[i].sid)
			s.ops->destroy_id(k[i].sid);
	}
	if (srq)
		s.ops->destroy_srq(srq);
	free(k);
	p_teardown(&c);
	p_teardown(&s);
	if (rc < 0)
		fprintf(stderr, "rpcrdma-perf: scale with %u connections: %s\n",
			n, rpcrdma_strerror(rc));
	return rc;
}

static int run_scale(const struct opts *o, struct scale_res *r)
{
	/* Two sockets per connection in this process, and a few more. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r->conns = o->conns;
	r->qp_heap = r->qp_rss = r->srq_qp_heap = r->srq_qp_rss = -1;
	r->srq_heap = -1;
	if (scale_memory(o, o->conns, false, &r->qp_heap, &r->qp_rss,
			 &r->srq_heap) < 0 ||
	    scale_memory(o, o->conns, true, &r->srq_qp_heap, &r->srq_qp_rss,
			 &r->srq_heap) < 0)
		return -1;
	return scale_poll(o, o->conns, &r->poll_ns_1, &r->poll_ns_n, &r->srq);
}

/* ------------------------------------------------------------------ */
/* TCP side: the same pattern on a socket                               */

/* Reads exactly n bytes: tries without blocking, then sleeps in poll(). */
static int t_read(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	uint64_t until = 0;
	while (n) {
		ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (spin_ns) {
			uint64_t now = perf_now_ns();
			if (!until)
				until = now + spin_ns;
			if (now < until)
				continue;
		}
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (poll(&pfd, 1, WAIT_MS) <= 0)
			return -1;
	}
	return 0;
}

static int t_write(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		return -1;
	}
	return 0;
}

static int t_msg(int fd, uint32_t type, uint32_t size, uint64_t count)
{
	struct msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.size = size;
	m.count = count;
	return t_write(fd, &m, sizeof(m));
}

struct tserver_arg {
	const struct opts *o;
	int lfd;
	int rc;
};

static void *t_server(void *arg)
{
	struct tserver_arg *ta = arg;
	uint8_t *buf = malloc(MAXSZ);
	int fd = accept(ta->lfd, NULL, NULL);
	int one = 1;
	struct msg m;

	ta->rc = -1;
	if (fd < 0 || !buf)
		goto out;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(buf, 0x5a, MAXSZ);
	for (;;) {
		if (t_read(fd, &m, sizeof(m)) < 0)
			goto out;
		if (m.type == M_PING) {
			if (t_msg(fd, M_PONG, 0, 0) < 0)
				goto out;
		} else if (m.type == M_STREAM) {
			for (uint64_t i = 0; i < m.count; i++)
				if (t_read(fd, buf, m.size) < 0)
					goto out;
			if (t_msg(fd, M_ACK, 0, 0) < 0)
				goto out;
		} else if (m.type == M_PULL) {
			for (uint64_t i = 0; i < m.count; i++)
				if (t_write(fd, buf, m.size) < 0)
					goto out;
		} else if (m.type == M_BURST) {
			/* The other BURST - 1 came in the same send(). */
			struct msg b[BURST];
			if (t_read(fd, b, (BURST - 1) * sizeof(m)) < 0)
				goto out;
			memset(b, 0, sizeof(b));
			for (int i = 0; i < BURST; i++)
				b[i].type = M_BURSTACK;
			if (t_write(fd, b, sizeof(b)) < 0)
				goto out;
		} else if (m.type == M_QUIT) {
			ta->rc = 0;
			goto out;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static int run_tcp(const struct opts *o, struct results *r)
{
	struct sockaddr_storage ss;
	const struct sockaddr *sa =
		with_port(o, o->port ? (uint16_t)(o->port + 1) : 0, &ss);
	struct tserver_arg ta = { .o = o, .lfd = -1 };
	int fd = -1, one = 1;
	uint64_t *lat = NULL;
	uint8_t *buf = NULL;
	pthread_t th;
	bool started = false;
	unsigned long warm = o->iters / 10 < 100 ? o->iters / 10 : 100;
	struct msg m;

	ta.lfd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (ta.lfd < 0)
		FAIL("socket: %s", strerror(errno));
	setsockopt(ta.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ta.lfd, sa, o->sslen) < 0 || listen(ta.lfd, 4) < 0)
		FAIL("tcp listen: %s", strerror(errno));
	socklen_t bl = sizeof(ss);
	if (getsockname(ta.lfd, (struct sockaddr *)&ss, &bl) < 0)
		FAIL("tcp getsockname: %s", strerror(errno));
	pthread_create(&th, NULL, t_server, &ta);
	started = true;
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, sa, o->sslen) < 0)
		FAIL("tcp connect: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	lat = calloc(o->iters, sizeof(*lat));
	buf = malloc(MAXSZ);
	if (!lat || !buf)
		FAIL("out of memory");
	memset(buf, 0xa5, MAXSZ);
	for (unsigned long i = 0; (o->only & W_PINGPONG) && i < warm + o->iters;
	     i++) {
		uint64_t t0 = perf_now_ns();
		if (t_msg(fd, M_PING, 0, 0) < 0 || t_read(fd, &m, sizeof(m)) < 0 ||
		    m.type != M_PONG)
			FAIL("tcp ping-pong failed");
		if (i >= warm)
			lat[i - warm] = perf_now_ns() - t0;
	}
	if (o->only & W_PINGPONG) {
		r->lat_p50[1] = perf_quantile_us(lat, o->iters, 0.50);
		r->lat_p99[1] = perf_quantile_us(lat, o->iters, 0.99);
	}
	if (o->only & W_BURST) {
		unsigned long rounds = o->iters / BURST ? o->iters / BURST : 1;
		struct msg b[BURST];
		uint64_t t0 = perf_now_ns();
		for (unsigned long i = 0; i < rounds; i++) {
			memset(b, 0, sizeof(b));
			for (int k = 0; k < BURST; k++)
				b[k].type = M_BURST;
			if (t_write(fd, b, sizeof(b)) < 0 ||
			    t_read(fd, b, sizeof(b)) < 0 ||
			    b[BURST - 1].type != M_BURSTACK)
				FAIL("tcp burst failed");
		}
		uint64_t ns = perf_now_ns() - t0;
		r->burst_rate[1] = ns ? (double)rounds * BURST * 1e9 / (double)ns
				      : 0;
	}
	for (size_t s = 0; s < NSIZES; s++) {
		if (!size_on(o, sizes[s]) || !(o->only & (W_WRITE | W_READ)))
			continue;
		unsigned long n = count_for(o, sizes[s]);
		uint64_t t0 = perf_now_ns();
		if (t_msg(fd, M_STREAM, (uint32_t)sizes[s], n) < 0)
			FAIL("tcp stream");
		for (unsigned long i = 0; i < n; i++)
			if (t_write(fd, buf, sizes[s]) < 0)
				FAIL("tcp stream write");
		if (t_read(fd, &m, sizeof(m)) < 0 || m.type != M_ACK)
			FAIL("tcp stream ack");
		r->wr_mibs[1][s] = mibs(sizes[s], n, perf_now_ns() - t0);
		t0 = perf_now_ns();
		if (t_msg(fd, M_PULL, (uint32_t)sizes[s], n) < 0)
			FAIL("tcp pull");
		for (unsigned long i = 0; i < n; i++)
			if (t_read(fd, buf, sizes[s]) < 0)
				FAIL("tcp pull read");
		r->rd_mibs[1][s] = mibs(sizes[s], n, perf_now_ns() - t0);
	}
	t_msg(fd, M_QUIT, 0, 0);
	pthread_join(th, NULL);
	close(fd);
	close(ta.lfd);
	free(lat);
	free(buf);
	return ta.rc;
fail:
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	if (started) {
		if (fd < 0)
			shutdown(ta.lfd, SHUT_RDWR);
		pthread_join(th, NULL);
	}
	if (fd >= 0)
		close(fd);
	if (ta.lfd >= 0)
		close(ta.lfd);
	free(lat);
	free(buf);
	return -1;
}

/* ------------------------------------------------------------------ */

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static const char *size_str(size_t s, char *b, size_t n)
{
	if (s >= (1u << 20))
		snprintf(b, n, "%zu MiB", s >> 20);
	else
		snprintf(b, n, "%zu KiB", s >> 10);
	return b;
}

/* v with `decimals`, or `none` when it was not measured (< 0). */
static const char *num_str(double v, int decimals, const char *none, char *b,
			   size_t n)
{
	if (v < 0)
		snprintf(b, n, "%s", none);
	else
		snprintf(b, n, "%.*f", decimals, v);
	return b;
}

/* Copied bytes per payload byte, or "-" when not counted. */
static const char *cp_str(double v, char *b, size_t n)
{
	return num_str(v, 4, "-", b, n);
}

static void print_text(const struct opts *o, const struct results *r)
{
	char sb[32], cb[32];
	printf("rpcrdma-perf provider: %s (device %s) vs tcp, addr %s, %s, "
	       "%lu iterations, waits poll %llu us before sleeping\n",
	       o->provider, r->devname, o->addr,
	       o->pin ? "pinned to CPU 0" : "unpinned", o->iters,
	       (unsigned long long)(spin_ns / 1000u));
	printf("(copied: the receiver's user-space copies per payload byte "
	       "placed, from the provider's counters; - where it has none)\n");
	if (o->only & W_PINGPONG) {
		printf("ping-pong 64 B       p50 us    p99 us   copied\n");
		printf("  %-16s %9.1f %9.1f %8s\n", o->provider, r->lat_p50[0],
		       r->lat_p99[0], cp_str(r->pp_cp, cb, sizeof(cb)));
		printf("  %-16s %9.1f %9.1f\n", "tcp", r->lat_p50[1],
		       r->lat_p99[1]);
		printf("  %-16s %9.2f %9.2f\n", "ratio",
		       ratio(r->lat_p50[0], r->lat_p50[1]),
		       ratio(r->lat_p99[0], r->lat_p99[1]));
	}
	if (o->only & W_WLAT) {
		printf("write ping-pong 64 B p50 us    p99 us  (busy-polled "
		       "memory; no tcp counterpart)\n");
		printf("  %-16s %9.1f %9.1f\n", o->provider, r->wlat_p50,
		       r->wlat_p99);
	}
	if (o->only & W_BURST) {
		printf("burst %d x 64 B in flight   msgs/s   copied\n", BURST);
		printf("  %-16s %13.0f %8s\n", o->provider, r->burst_rate[0],
		       cp_str(r->burst_cp, cb, sizeof(cb)));
		printf("  %-16s %13.0f\n", "tcp", r->burst_rate[1]);
		printf("  %-16s %13.2f\n", "ratio",
		       ratio(r->burst_rate[0], r->burst_rate[1]));
	}
	const char *names[2] = { "RDMA Write", "RDMA Read" };
	for (int k = 0; k < 2; k++) {
		if (!(o->only & (k ? W_READ : W_WRITE)))
			continue;
		printf("%-10s  size      %8s MiB/s   tcp MiB/s   ratio   copied\n",
		       names[k], o->provider);
		for (size_t s = 0; s < NSIZES; s++) {
			const double *v = k ? r->rd_mibs[0] : r->wr_mibs[0];
			const double *t = k ? r->rd_mibs[1] : r->wr_mibs[1];
			const double *c = k ? r->rd_cp : r->wr_cp;
			if (!size_on(o, sizes[s]))
				continue;
			printf("            %-8s %14.1f %11.1f %7.2f %8s\n",
			       size_str(sizes[s], sb, sizeof(sb)), v[s], t[s],
			       ratio(v[s], t[s]), cp_str(c[s], cb, sizeof(cb)));
		}
	}
}

static void print_json(const struct opts *o, const struct results *r)
{
	printf("{\"subcommand\":\"provider\",\"provider\":\"%s\","
	       "\"device\":\"%s\",\"addr\":\"%s\",\"pinned\":%s,"
	       "\"iters\":%lu,\"spin_us\":%llu,",
	       o->provider, r->devname, o->addr, o->pin ? "true" : "false",
	       o->iters, (unsigned long long)(spin_ns / 1000u));
	printf("\"pingpong_64\":{\"provider\":{\"p50_us\":%.2f,\"p99_us\":%.2f},"
	       "\"tcp\":{\"p50_us\":%.2f,\"p99_us\":%.2f},"
	       "\"ratio_p50\":%.3f,\"ratio_p99\":%.3f,\"copied\":%.4f},",
	       r->lat_p50[0], r->lat_p99[0], r->lat_p50[1], r->lat_p99[1],
	       ratio(r->lat_p50[0], r->lat_p50[1]),
	       ratio(r->lat_p99[0], r->lat_p99[1]), r->pp_cp);
	printf("\"write_pingpong_64\":{\"p50_us\":%.2f,\"p99_us\":%.2f},",
	       r->wlat_p50, r->wlat_p99);
	printf("\"burst_%d\":{\"provider_msgs_s\":%.0f,\"tcp_msgs_s\":%.0f,"
	       "\"ratio\":%.3f,\"copied\":%.4f},",
	       BURST, r->burst_rate[0], r->burst_rate[1],
	       ratio(r->burst_rate[0], r->burst_rate[1]), r->burst_cp);
	const char *names[2] = { "rdma_write", "rdma_read" };
	for (int k = 0; k < 2; k++) {
		printf("\"%s\":[", names[k]);
		bool first = true;
		for (size_t s = 0; s < NSIZES; s++) {
			const double *v = k ? r->rd_mibs[0] : r->wr_mibs[0];
			const double *t = k ? r->rd_mibs[1] : r->wr_mibs[1];
			const double *c = k ? r->rd_cp : r->wr_cp;
			if (!size_on(o, sizes[s]))
				continue;
			printf("%s{\"size\":%zu,\"provider_mib_s\":%.1f,"
			       "\"tcp_mib_s\":%.1f,\"ratio\":%.3f,\"copied\":%.4f}",
			       first ? "" : ",", sizes[s], v[s], t[s],
			       ratio(v[s], t[s]), c[s]);
			first = false;
		}
		printf("]%s", k ? "" : ",");
	}
	printf("}\n");
}

static const char *bytes_str(double v, char *b, size_t n)
{
	return num_str(v, 0, "n/a", b, n);
}

static void print_scale(const struct opts *o, const struct scale_res *r)
{
	char b1[32], b2[32], b3[32];
	printf("scale: %s, %u connections, every server QP on one CQ%s\n",
	       o->provider, r->conns,
	       r->srq ? " and one shared receive queue" : "");
	printf("  poll_cq on the idle CQ  ns/call: 1 connection %.0f, %u "
	       "connections %.0f, ratio %.2f\n",
	       r->poll_ns_1, r->conns, r->poll_ns_n,
	       ratio(r->poll_ns_n, r->poll_ns_1));
	printf("  per cm_id + QP (%d send, %d receive WRs)   heap bytes   "
	       "RSS bytes\n", SCALE_SEND_WR, SCALE_RECV_WR);
	printf("    own receive queue       %12s %11s\n",
	       bytes_str(r->qp_heap, b1, sizeof(b1)),
	       bytes_str(r->qp_rss, b2, sizeof(b2)));
	printf("    shared receive queue    %12s %11s   (ratio %.2f; the "
	       "queue itself, %d receives: %s heap bytes)\n",
	       bytes_str(r->srq_qp_heap, b1, sizeof(b1)),
	       bytes_str(r->srq_qp_rss, b2, sizeof(b2)),
	       ratio(r->srq_qp_heap, r->qp_heap), SCALE_SRQ_WR,
	       bytes_str(r->srq_heap, b3, sizeof(b3)));
	printf("  (heap: glibc's counters, n/a under a sanitizer)\n");
}

static void print_scale_json(const struct opts *o, const struct scale_res *r)
{
	printf("{\"subcommand\":\"provider\",\"workload\":\"scale\","
	       "\"provider\":\"%s\",\"conns\":%u,\"poll_ns_1\":%.1f,"
	       "\"poll_ns_n\":%.1f,\"poll_ratio\":%.3f,\"srq\":%s,"
	       "\"qp_heap\":%.0f,\"qp_rss\":%.0f,\"srq_qp_heap\":%.0f,"
	       "\"srq_qp_rss\":%.0f,\"srq_heap\":%.0f}\n",
	       o->provider, r->conns, r->poll_ns_1, r->poll_ns_n,
	       ratio(r->poll_ns_n, r->poll_ns_1), r->srq ? "true" : "false",
	       r->qp_heap, r->qp_rss, r->srq_qp_heap, r->srq_qp_rss,
	       r->srq_heap);
}

/* --only LIST: comma-separated workload names; 0 when one is unknown. */
static unsigned parse_only(const char *v)
{
	static const struct {
		const char *name;
		unsigned bit;
	} w[] = { { "pingpong", W_PINGPONG }, { "wlat", W_WLAT },
		  { "burst", W_BURST }, { "write", W_WRITE },
		  { "read", W_READ }, { "scale", W_SCALE } };
	char buf[128];
	char *save = NULL;
	unsigned bits = 0;
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		size_t i = 0;
		while (i < sizeof(w) / sizeof(w[0]) && strcmp(w[i].name, t))
			i++;
		if (i == sizeof(w) / sizeof(w[0]))
			return 0;
		bits |= w[i].bit;
	}
	return bits;
}

int perf_cmd_provider(int argc, char **argv)
{
	struct opts o = { .provider = "iwarp", .addr = "127.0.0.1",
			  .iters = 10000, .max_size = MAXSZ, .only = W_ALL,
			  .conns = 1000 };
	struct results r;
	long port = 0;

	memset(&r, 0, sizeof(r));
	r.pp_cp = r.burst_cp = -1;
	for (size_t s = 0; s < NSIZES; s++)
		r.wr_cp[s] = r.rd_cp[s] = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--provider") && v) {
			o.provider = v;
			i++;
		} else if (!strcmp(a, "--addr") && v) {
			o.addr = v;
			i++;
		} else if (!strcmp(a, "--iters") && v) {
			o.iters = strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--port") && v) {
			port = strtol(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--max-size") && v) {
			o.max_size = strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--min-size") && v) {
			o.min_size = strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--only") && v) {
			o.only = parse_only(v);
			i++;
			if (!o.only) {
				fprintf(stderr, "rpcrdma-perf: --only takes "
					"pingpong,wlat,burst,write,read,scale\n");
				return 2;
			}
		} else if (!strcmp(a, "--conns") && v) {
			o.conns = (unsigned)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--no-tcp")) {
			o.no_tcp = true;
		} else if (!strcmp(a, "--spin-us") && v) {
			spin_ns = strtoull(v, NULL, 0) * 1000u;
			i++;
		} else if (!strcmp(a, "--json")) {
			o.json = true;
		} else if (!strcmp(a, "--pin")) {
			o.pin = true;
		} else {
			fprintf(stderr,
				"usage: rpcrdma-perf provider [--provider NAME] "
				"[--addr IP] [--iters N] [--min-size BYTES] "
				"[--max-size BYTES] [--spin-us N] [--port P] "
				"[--only pingpong,wlat,burst,write,read,scale] "
				"[--conns N] [--no-tcp] [--pin] [--json]\n");
			return 2;
		}
	}
	if (o.iters == 0)
		o.iters = 1;
	if (o.max_size < sizes[0]) {
		fprintf(stderr, "rpcrdma-perf: --max-size below %zu\n", sizes[0]);
		return 2;
	}
	memset(&o.ss, 0, sizeof(o.ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&o.ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&o.ss;
	if (inet_pton(AF_INET, o.addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		o.sslen = sizeof(*a4);
	} else if (inet_pton(AF_INET6, o.addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		o.sslen = sizeof(*a6);
	} else {
		fprintf(stderr, "rpcrdma-perf: bad address %s\n", o.addr);
		return 2;
	}
	o.port = (uint16_t)(port > 0 && port < 65535 ? port : 0);
	if (o.pin && perf_pin_process(0) < 0) {
		perror("rpcrdma-perf: sched_setaffinity");
		return 1;
	}
	if (!rpcrdma_provider_find(o.provider)) {
		fprintf(stderr, "rpcrdma-perf: unknown provider %s\n",
			o.provider);
		return 2;
	}
	if (o.only & W_SCALE) {
		struct scale_res sr;
		memset(&sr, 0, sizeof(sr));
		if (o.conns < 2 || run_scale(&o, &sr) < 0)
			return 1;
		if (o.json)
			print_scale_json(&o, &sr);
		else
			print_scale(&o, &sr);
		o.only &= ~(unsigned)W_SCALE;
		if (!o.only)
			return 0;
	}
	if (run_provider(&o, &r) < 0)
		return 1;
	if (!o.no_tcp && run_tcp(&o, &r) < 0)
		return 1;
	if (o.json)
		print_json(&o, &r);
	else
		print_text(&o, &r);
	return 0;
}
