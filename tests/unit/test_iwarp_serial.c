/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The iwarp provider with serialized QPs (rpcrdma_qp_attr.serial_lock,
 * manual progress): each side's consumer holds its own mutex around every
 * call on its QP and CQ, and the provider takes none of its own there.
 *
 * - Echo: a server thread echoes what a client thread sends, with a
 *   4 MiB RDMA Write before every 64th Send, so that TCP pushes back and
 *   the progress thread's EPOLLOUT work (run under the consumer's mutex,
 *   taken with trylock) meets consumers that poll, post and sleep.
 *   ThreadSanitizer (make build-tsan) watches the two.
 * - Peer close while the consumer holds its mutex: the progress thread
 *   must not run the QP (no DISCONNECTED, nothing flushed) until the
 *   mutex is free, and must then run it (DISCONNECTED comes, every
 *   posted receive is flushed once) without anybody polling.
 * - A serialized QP's CQ serves it alone: create_qp refuses a second QP
 *   on it, serialized or not.
 * - A TX pass has its share (IW_TX_PASS): a 4 MiB RDMA Write, posted
 *   while the peer reads as fast as it can, goes out over many of the
 *   poster's polls, none writing more than its share and a batch or two,
 *   and arrives whole.  Without the share, the post itself wrote it all
 *   while TCP took it, and a thread serving other connections too
 *   made them wait for that.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "provider/iwarp/iwarp.h" /* IW_TX_PASS, IW_TX_BYTES */
#include "provider/provider.h"
#include "test.h"
#include "unit/iwarp_loopback.h"

static const struct rpcrdma_provider_ops *ops;


#define BUFSZ (5u << 20)
#define BULK (4u << 20)   /* the RDMA Write: well past a socket buffer */
#define MSG 64            /* each Send */
#define NRECV 16
#define ROUNDS 1000

static int make_qp(struct rpcrdma_dev *dev, struct iwl_side *s)
{
	if (ops->alloc_pd(dev, &s->pd) != 0 ||
	    ops->create_cq(dev, 256, NULL, &s->cq) != 0)
		return -1;
	struct rpcrdma_qp_attr a = { .send_cq = s->cq, .recv_cq = s->cq,
				     .max_send_wr = 64, .max_recv_wr = NRECV,
				     .max_send_sge = 1, .max_recv_sge = 1,
				     .serial_lock = &s->lock };
	pthread_mutex_lock(&s->lock);
	int rc = ops->create_qp(s->id, s->pd, &a, &s->qp);
	pthread_mutex_unlock(&s->lock);
	if (rc != 0)
		return rc;
	s->buf = calloc(1, BUFSZ);
	if (!s->buf)
		return -1;
	return ops->reg_mr(s->pd, s->buf, BUFSZ,
			   RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE,
			   &s->mr);
}

static void free_side(struct iwl_side *s)
{
	iwl_side_free(ops, s);
}

/* With s->lock held. */
static int post_send(struct iwl_side *s, uint64_t id, enum rpcrdma_wr_opcode op,
		     uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	return iwl_post_send(ops, s->qp, id, op, RPCRDMA_SEND_SIGNALED,
			     s->buf + off, len, s->mr->lkey, raddr, rkey);
}

/* With s->lock held: receive i lands in slot i of the buffer's tail. */
static int post_recv(struct iwl_side *s, uint64_t i)
{
	return iwl_post_recv(ops, s->qp, i, s->buf + BULK + i * MSG, MSG,
			     s->mr->lkey);
}

/* One completion of s's CQ, as a consumer of a serialized QP waits for
 * it: poll under the lock, arm under the lock, sleep on the CQ fd
 * without it.  1, or 0 after 10 s. */
static int next_wc(struct iwl_side *s, struct rpcrdma_wc *wc)
{
	uint64_t end = now_ms() + 10000;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int n = ops->poll_cq(s->cq, 1, wc);
		if (n == 0 && ops->req_notify_cq(s->cq) == 1)
			n = ops->poll_cq(s->cq, 1, wc);
		pthread_mutex_unlock(&s->lock);
		if (n != 0)
			return n > 0 ? 1 : 0;
		if (now_ms() > end)
			return 0;
		struct pollfd p = { .fd = ops->cq_fd(s->cq), .events = POLLIN };
		poll(&p, 1, 100);
		pthread_mutex_lock(&s->lock);
		ops->ack_cq_events(s->cq);
		pthread_mutex_unlock(&s->lock);
	}
}

struct echo {
	struct iwl_side *s;
	int echoed, bad; /* read by main after the join */
};

/* The server: every message received goes back as it came. */
static void *echo_main(void *arg)
{
	struct echo *e = arg;
	struct iwl_side *s = e->s;
	struct rpcrdma_wc wc;
	while (e->echoed < ROUNDS && next_wc(s, &wc)) {
		if (wc.status != RPCRDMA_WC_SUCCESS) {
			e->bad++;
			break;
		}
		if (wc.opcode != RPCRDMA_WC_RECV)
			continue; /* a reply's Send completing */
		uint32_t slot = (uint32_t)wc.wr_id;
		pthread_mutex_lock(&s->lock);
		memcpy(s->buf + BULK + NRECV * MSG, s->buf + BULK + slot * MSG,
		       MSG);
		if (post_recv(s, slot) != 0 ||
		    post_send(s, 1000 + slot, RPCRDMA_WR_SEND,
			      BULK + NRECV * MSG, wc.byte_len, 0, 0) != 0)
			e->bad++;
		pthread_mutex_unlock(&s->lock);
		e->echoed++;
	}
	return NULL;
}

/* The client, on this thread: ROUNDS messages, each answered before the
 * next; a 4 MiB RDMA Write into the server's buffer before every 64th. */
static void echo_rounds(struct iwl_side *c, struct iwl_side *s)
{
	int ok = 0, bulk_ok = 0, errors = 0;
	for (int i = 0; i < ROUNDS && !errors; i++) {
		pthread_mutex_lock(&c->lock);
		if (i % 64 == 0 &&
		    post_send(c, 500, RPCRDMA_WR_RDMA_WRITE, 0, BULK,
			      (uint64_t)(uintptr_t)s->buf, s->mr->rkey) != 0)
			errors++;
		snprintf((char *)c->buf + BULK + NRECV * MSG, MSG, "round %d", i);
		if (post_send(c, 600, RPCRDMA_WR_SEND, BULK + NRECV * MSG, MSG,
			      0, 0) != 0)
			errors++;
		pthread_mutex_unlock(&c->lock);
		bool answered = false;
		while (!answered && !errors) {
			struct rpcrdma_wc wc;
			if (!next_wc(c, &wc) || wc.status != RPCRDMA_WC_SUCCESS) {
				errors++;
				break;
			}
			if (wc.opcode == RPCRDMA_WC_RDMA_WRITE)
				bulk_ok++;
			if (wc.opcode != RPCRDMA_WC_RECV)
				continue;
			char want[MSG];
			snprintf(want, sizeof want, "round %d", i);
			uint32_t slot = (uint32_t)wc.wr_id;
			pthread_mutex_lock(&c->lock);
			if (wc.byte_len == MSG &&
			    strcmp((char *)c->buf + BULK + slot * MSG, want) == 0)
				ok++;
			if (post_recv(c, slot) != 0)
				errors++;
			pthread_mutex_unlock(&c->lock);
			answered = true;
		}
	}
	CHECK_EQ(errors, 0);
	CHECK_EQ(ok, ROUNDS);
	CHECK_EQ(bulk_ok, (ROUNDS + 63) / 64);
}

/* Connects c to s (listening on l) on dev; each side's QP serialized. */
static bool connect_pair(struct rpcrdma_dev *dev, struct iwl_side *l,
			 struct iwl_side *c, struct iwl_side *s)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
	if (ops->create_channel(dev, &l->ch) != 0 ||
	    ops->create_id(l->ch, NULL, &l->id) != 0 ||
	    ops->listen(l->id, (struct sockaddr *)&a4, sizeof a4, 8) != 0)
		return false;
	struct sockaddr_storage ss;
	memcpy(&ss, &l->id->local_addr, sizeof ss);
	if (ops->create_channel(dev, &c->ch) != 0 ||
	    ops->create_id(c->ch, NULL, &c->id) != 0 ||
	    ops->resolve(c->id, (struct sockaddr *)&ss, sizeof a4) != 0 ||
	    make_qp(dev, c) != 0)
		return false;
	pthread_mutex_lock(&c->lock);
	for (uint64_t i = 0; i < NRECV; i++)
		post_recv(c, i);
	pthread_mutex_unlock(&c->lock);
	struct rpcrdma_conn_param cp = { .responder_resources = 4,
					 .initiator_depth = 4 };
	if (ops->connect(c->id, &cp) != 0)
		return false;
	struct rpcrdma_cm_event *ev =
		iwl_wait_event(ops, l->ch, RPCRDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return false;
	s->id = ev->id;
	ops->ack_cm_event(ev);
	if (make_qp(dev, s) != 0)
		return false;
	pthread_mutex_lock(&s->lock);
	for (uint64_t i = 0; i < NRECV; i++)
		post_recv(s, i);
	pthread_mutex_unlock(&s->lock);
	if (ops->accept(s->id, &cp) != 0)
		return false;
	ev = iwl_wait_event(ops, c->ch, RPCRDMA_CM_EVENT_ESTABLISHED);
	if (ev)
		ops->ack_cm_event(ev);
	struct rpcrdma_cm_event *ev2 =
		iwl_wait_event(ops, l->ch, RPCRDMA_CM_EVENT_ESTABLISHED);
	if (ev2)
		ops->ack_cm_event(ev2);
	return ev && ev2;
}

/* The server's consumer holds its mutex while the client goes away. */
static void close_while_held(struct iwl_side *l, struct iwl_side *c, struct iwl_side *s)
{
	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&c->lock);
	CHECK_EQ(ops->disconnect(c->id), 0);
	pthread_mutex_unlock(&c->lock);
	/* The peer's FIN is there (the client's stream is shut); the
	 * progress thread sees it and must leave the QP alone. */
	usleep(300 * 1000);
	struct rpcrdma_cm_event *ev;
	int got = ops->get_cm_event(l->ch, &ev);
	CHECK(got != 0); /* no DISCONNECTED while the consumer is inside */
	if (got == 0)
		ops->ack_cm_event(ev);
	pthread_mutex_unlock(&s->lock);
	/* Now it may: nobody polls, it runs the QP itself. */
	ev = iwl_wait_event(ops, l->ch, RPCRDMA_CM_EVENT_DISCONNECTED);
	CHECK(ev != NULL);
	if (ev)
		ops->ack_cm_event(ev);
	/* Every receive the server had posted is flushed, once. */
	struct rpcrdma_wc wc[2 * NRECV];
	int n = 0;
	uint64_t end = now_ms() + 2000;
	while (now_ms() < end) {
		pthread_mutex_lock(&s->lock);
		int k = ops->poll_cq(s->cq, 2 * NRECV - n, wc + n);
		pthread_mutex_unlock(&s->lock);
		if (k > 0)
			n += k;
		else
			usleep(10 * 1000);
	}
	/* (The last echoes' Send completions may be there too.) */
	int flushed = 0, recvs = 0;
	unsigned seen = 0;
	for (int i = 0; i < n; i++) {
		if (wc[i].opcode != RPCRDMA_WC_RECV)
			continue;
		recvs++;
		if (wc[i].status == RPCRDMA_WC_WR_FLUSH_ERR &&
		    wc[i].wr_id < NRECV && !(seen & 1u << wc[i].wr_id)) {
			seen |= 1u << wc[i].wr_id;
			flushed++;
		}
	}
	CHECK_EQ(flushed, NRECV);
	CHECK_EQ(recvs, NRECV);
}

/* create_qp refuses a second QP on a serialized QP's CQ. */
static void cq_alone(struct rpcrdma_dev *dev, struct iwl_side *c)
{
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_cm_id *id;
	CHECK_EQ(ops->create_channel(dev, &ch), 0);
	CHECK_EQ(ops->create_id(ch, NULL, &id), 0);
	pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
	struct rpcrdma_qp_attr a = { .send_cq = c->cq, .recv_cq = c->cq,
				     .max_send_wr = 4, .max_recv_wr = 4,
				     .max_send_sge = 1, .max_recv_sge = 1,
				     .serial_lock = &other };
	struct rpcrdma_qp *qp = NULL;
	pthread_mutex_lock(&c->lock);
	CHECK_EQ(ops->create_qp(id, c->pd, &a, &qp), RPCRDMA_ERR_INVAL);
	a.serial_lock = NULL;
	CHECK_EQ(ops->create_qp(id, c->pd, &a, &qp), RPCRDMA_ERR_INVAL);
	pthread_mutex_unlock(&c->lock);
	CHECK(qp == NULL);
	ops->destroy_id(id);
	ops->destroy_channel(ch);
}

struct reader {
	struct iwl_side *s;
	_Atomic bool stop;
};

/* The peer of tx_share: polls (so places what comes) until told. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	while (!atomic_load(&r->stop)) {
		struct rpcrdma_wc wc;
		pthread_mutex_lock(&r->s->lock);
		(void)ops->poll_cq(r->s->cq, 1, &wc);
		pthread_mutex_unlock(&r->s->lock);
	}
	return NULL;
}

static uint64_t tx_bytes(struct iwl_side *x)
{
	struct rpcrdma_qp_counters k = { 0 };
	CHECK_EQ(rpcrdma_qp_counters(x->qp, &k), 0);
	return k.tx_bytes;
}

static uint64_t rx_tagged(struct iwl_side *x)
{
	struct rpcrdma_qp_counters k = { 0 };
	CHECK_EQ(rpcrdma_qp_counters(x->qp, &k), 0);
	return k.rx_tagged_bytes;
}

static void tx_share(struct iwl_side *c, struct iwl_side *s)
{
	for (uint32_t i = 0; i < BULK; i++)
		c->buf[i] = (uint8_t)(i * 7u + i / 4093u);
	memset(s->buf, 0, BULK);
	uint64_t placed0 = rx_tagged(s);
	struct reader r = { .s = s };
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, reader_main, &r), 0);
	/* The post is the first pass; every poll after it is one more. */
	pthread_mutex_lock(&c->lock);
	uint64_t before = tx_bytes(c);
	CHECK_EQ(post_send(c, 800, RPCRDMA_WR_RDMA_WRITE, 0, BULK,
			   (uint64_t)(uintptr_t)s->buf, s->mr->rkey), 0);
	uint64_t most = tx_bytes(c) - before;
	pthread_mutex_unlock(&c->lock);
	unsigned passes = 1;
	int done = 0, bad = 0;
	uint64_t end = now_ms() + 10000;
	while (!done && now_ms() < end) {
		struct rpcrdma_wc wc;
		pthread_mutex_lock(&c->lock);
		before = tx_bytes(c);
		int n = ops->poll_cq(c->cq, 1, &wc);
		uint64_t d = tx_bytes(c) - before;
		pthread_mutex_unlock(&c->lock);
		passes++;
		if (d > most)
			most = d;
		if (n > 0 && wc.wr_id == 800) {
			done++;
			bad += wc.status != RPCRDMA_WC_SUCCESS;
		}
	}
	/* The completion says TCP has it all; the reader may still be
	 * placing the last of it. */
	while (rx_tagged(s) - placed0 < BULK && now_ms() < end)
		usleep(1000);
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	CHECK_EQ(done, 1);
	CHECK_EQ(bad, 0);
	CHECK_EQ(rx_tagged(s) - placed0, (uint64_t)BULK);
	CHECK(memcmp(s->buf, c->buf, BULK) == 0);
	/* A pass stops at the first batch that takes it to its share; what
	 * it retires may include the end of an FPDU an earlier pass began. */
	CHECK(most <= IW_TX_PASS + 2 * IW_TX_BYTES);
	CHECK(passes >= BULK / (IW_TX_PASS + 2 * IW_TX_BYTES));
	if (most > IW_TX_PASS + 2 * IW_TX_BYTES)
		fprintf(stderr, "a pass wrote %llu bytes\n",
			(unsigned long long)most);
}

int main(void)
{
	ops = rpcrdma_provider_find("iwarp");
	CHECK(ops != NULL);
	if (!ops)
		TEST_MAIN_END();
	struct rpcrdma_dev_params prm = { .connect_timeout_ms = 3000,
					  .manual_progress = true };
	struct rpcrdma_dev *dev;
	CHECK_EQ(ops->open(&prm, &dev), 0);
	struct iwl_side l = { 0 }, c = { .serial = true }, s = { .serial = true };
	pthread_mutex_init(&c.lock, NULL);
	pthread_mutex_init(&s.lock, NULL);
	bool up = connect_pair(dev, &l, &c, &s);
	CHECK(up);
	if (up) {
		struct echo e = { .s = &s };
		pthread_t t;
		CHECK_EQ(pthread_create(&t, NULL, echo_main, &e), 0);
		echo_rounds(&c, &s);
		pthread_join(t, NULL);
		CHECK_EQ(e.echoed, ROUNDS);
		CHECK_EQ(e.bad, 0);
		tx_share(&c, &s);
		cq_alone(dev, &c);
		close_while_held(&l, &c, &s);
	}
	free_side(&c);
	free_side(&s);
	free_side(&l);
	ops->close(dev);
	TEST_MAIN_END();
}
