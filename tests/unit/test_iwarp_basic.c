/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Loopback smoke test of the iwarp provider through its ops table:
 * connect/accept with private data (IPv4 and IPv6), Send/Recv, RDMA Write
 * and Read, then one access violation that must end in a Terminate;
 * and the handshake's time-outs on both sides.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "provider/iwarp/iwarp.h" /* the TX batch's arrays */
#include "provider/provider.h"
#include "test.h"
#include "unit/iwarp_loopback.h"
#include "unit/resident_pages.h"


#if defined(__SANITIZE_THREAD__)
/* The dynamic annotations the ThreadSanitizer runtime exports. */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
static void tsan_reads_begin(void) { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
static void tsan_reads_end(void) { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#else
static void tsan_reads_begin(void) {}
static void tsan_reads_end(void) {}
#endif

/* True when every byte of got equals want's, reading each byte once.
 * Not memcmp on memory that another thread is still placing into:
 * glibc's vector memcmp, having found a differing block, reads the
 * differing bytes again to compute its sign, and returns 0 when they
 * were placed in between, with later bytes still unplaced (CI saw this
 * wait end early, then the check after it fail).  Placement only ever
 * turns a byte into its final value, so a pass that finds them all
 * equal saw the whole transfer placed. */
static bool placed_all(const volatile uint8_t *got, const uint8_t *want,
		       size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			return false;
	return true;
}

static const struct rpcrdma_provider_ops *ops;

static int wait_wc(struct rpcrdma_cq *cq, struct rpcrdma_wc *wc)
{
	uint64_t end = now_ms() + 5000;
	while (now_ms() < end) {
		int n = ops->poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(100);
	}
	return 0;
}


#define BUFSZ (256 * 1024)

static void make_qp(struct rpcrdma_dev *dev, struct iwl_side *s)
{
	CHECK_EQ(ops->alloc_pd(dev, &s->pd), 0);
	CHECK_EQ(ops->create_cq(dev, 64, NULL, &s->cq), 0);
	struct rpcrdma_qp_attr a = { .send_cq = s->cq, .recv_cq = s->cq,
				     .max_send_wr = 16, .max_recv_wr = 16,
				     .max_send_sge = 2, .max_recv_sge = 2 };
	CHECK_EQ(ops->create_qp(s->id, s->pd, &a, &s->qp), 0);
	s->buf = calloc(1, BUFSZ);
	CHECK_EQ(ops->reg_mr(s->pd, s->buf, BUFSZ,
			     RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
				     RPCRDMA_ACCESS_REMOTE_READ, &s->mr), 0);
}

static void free_side(struct iwl_side *s)
{
	iwl_side_free(ops, s);
}

static int post(struct rpcrdma_qp *qp, uint64_t id, enum rpcrdma_wr_opcode op,
		void *p, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	return iwl_post_send(ops, qp, id, op, RPCRDMA_SEND_SIGNALED, p, len,
			     lkey, raddr, rkey);
}

/* A QP sends one message at a time from its endpoint's small batch and
 * never touches the large one (iwarp_qp_tx.c, batch_reset); a chain of
 * Sends posted at once fills the small batch with its first FPDU and
 * goes on in the large one, every message whole and in order. */
static void send_chain(struct iwl_side *c, struct iwl_side *s)
{
	struct iw_tx *tx = &((struct iw_ep *)c->id)->qp.tx;
	CHECK(tx->f == tx->f_small && tx->iov == tx->iov_small);
	long r = resident_pages(tx->f_large, IW_TX_FPDUS * sizeof *tx->f);
	if (r >= 0)
		CHECK_EQ(r, 0);
#if defined(__x86_64__)
	/* The fields every connection writes and the small batch: one
	 * page an idle connection holds, not two (docs/SCALE.md). */
	CHECK(sizeof(struct iw_ep) <= 4096);
#endif
	enum { N = 8, SZ = 64 };
	for (int i = 0; i < N; i++)
		CHECK_EQ(iwl_post_recv(ops, s->qp, 200 + (uint64_t)i,
				       s->buf + SZ * i, SZ, s->mr->lkey), 0);
	struct rpcrdma_sge sge[N];
	struct rpcrdma_send_wr wr[N];
	memset(wr, 0, sizeof wr);
	for (int i = 0; i < N; i++) {
		uint8_t *p = c->buf + 1024 + SZ * i;
		memset(p, 'a' + i, (size_t)i + 1);
		sge[i] = (struct rpcrdma_sge){ (uint64_t)(uintptr_t)p,
					       (uint32_t)i + 1, c->mr->lkey };
		wr[i].wr_id = 10 + (uint64_t)i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = RPCRDMA_WR_SEND;
		wr[i].send_flags = RPCRDMA_SEND_SIGNALED;
		wr[i].next = i + 1 < N ? &wr[i + 1] : NULL;
	}
	struct rpcrdma_send_wr *bad;
	CHECK_EQ(ops->post_send(c->qp, wr, &bad), 0);
	struct rpcrdma_wc wc;
	for (int i = 0; i < N; i++) {
		CHECK_EQ(wait_wc(c->cq, &wc), 1);
		CHECK(wc.wr_id == 10 + (uint64_t)i &&
		      wc.status == RPCRDMA_WC_SUCCESS);
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(wait_wc(s->cq, &wc), 1);
		CHECK(wc.wr_id == 200 + (uint64_t)i &&
		      wc.status == RPCRDMA_WC_SUCCESS &&
		      wc.opcode == RPCRDMA_WC_RECV);
		CHECK_EQ(wc.byte_len, (uint32_t)i + 1);
		const uint8_t *got = s->buf + SZ * i;
		bool same = true;
		for (int k = 0; k <= i; k++)
			same &= got[k] == 'a' + i;
		CHECK(same);
	}
	CHECK(tx->f == tx->f_large && tx->iov == tx->iov_large);
}

static void run(const char *addr, bool crc)
{
	struct rpcrdma_dev_params prm = { .mpa_crc = crc, .connect_timeout_ms = 3000 };
	struct rpcrdma_dev *dev;
	if (ops->open(&prm, &dev) != 0) {
		CHECK(0);
		return;
	}
	struct iwl_side c = { 0 }, s = { 0 }, l = { 0 };
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t sl;
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, addr, &a6->sin6_addr);
		sl = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
		a4->sin_family = AF_INET;
		inet_pton(AF_INET, addr, &a4->sin_addr);
		sl = sizeof(*a4);
	}
	CHECK_EQ(ops->create_channel(dev, &l.ch), 0);
	CHECK_EQ(ops->create_id(l.ch, NULL, &l.id), 0);
	CHECK_EQ(ops->listen(l.id, (struct sockaddr *)&ss, sl, 8), 0);
	/* port chosen by the OS */
	memcpy(&ss, &l.id->local_addr, sizeof(ss));

	CHECK_EQ(ops->create_channel(dev, &c.ch), 0);
	CHECK_EQ(ops->create_id(c.ch, NULL, &c.id), 0);
	CHECK_EQ(ops->resolve(c.id, (struct sockaddr *)&ss, sl), 0);
	make_qp(dev, &c);
	struct rpcrdma_conn_param cp = { .private_data = "hello", .private_data_len = 5,
					 .responder_resources = 4, .initiator_depth = 4 };
	CHECK_EQ(ops->connect(c.id, &cp), 0);

	struct rpcrdma_cm_event *ev = iwl_wait_event(ops, l.ch, RPCRDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev != NULL);
	if (!ev)
		goto out;
	CHECK_EQ(ev->private_data_len, 5);
	CHECK(ev->private_data && memcmp(ev->private_data, "hello", 5) == 0);
	CHECK_EQ(ev->responder_resources, 4);
	CHECK_EQ(ev->initiator_depth, 4);
	CHECK(ev->listen_id == l.id);
	s.id = ev->id;
	ops->ack_cm_event(ev);
	make_qp(dev, &s);
	CHECK_EQ(iwl_post_recv(ops, s.qp, 100, s.buf, 4096, s.mr->lkey), 0);
	struct rpcrdma_conn_param ap = { .private_data = "world!", .private_data_len = 6,
					 .responder_resources = 2, .initiator_depth = 2 };
	CHECK_EQ(ops->accept(s.id, &ap), 0);
	ev = iwl_wait_event(ops, c.ch, RPCRDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev != NULL);
	if (!ev)
		goto out;
	CHECK_EQ(ev->private_data_len, 6);
	CHECK(ev->private_data && memcmp(ev->private_data, "world!", 6) == 0);
	CHECK_EQ(ev->responder_resources, 2);
	ops->ack_cm_event(ev);
	ev = iwl_wait_event(ops, l.ch, RPCRDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev && ev->id == s.id);
	if (ev)
		ops->ack_cm_event(ev);

	/* Send / Recv */
	struct rpcrdma_wc wc;
	memcpy(c.buf, "ping", 4);
	CHECK_EQ(post(c.qp, 1, RPCRDMA_WR_SEND, c.buf, 4, c.mr->lkey, 0, 0), 0);
	CHECK_EQ(wait_wc(c.cq, &wc), 1);
	CHECK(wc.wr_id == 1 && wc.status == RPCRDMA_WC_SUCCESS && wc.opcode == RPCRDMA_WC_SEND);
	CHECK_EQ(wait_wc(s.cq, &wc), 1);
	CHECK(wc.wr_id == 100 && wc.status == RPCRDMA_WC_SUCCESS && wc.opcode == RPCRDMA_WC_RECV);
	CHECK_EQ(wc.byte_len, 4);
	CHECK(memcmp(s.buf, "ping", 4) == 0);

	send_chain(&c, &s);

	/* RDMA Write of 200 KiB: several FPDUs, placed directly. */
	const uint32_t wl = 200 * 1024;
	for (uint32_t i = 0; i < wl; i++)
		c.buf[i] = (uint8_t)(i * 7 + 1);
	CHECK_EQ(post(c.qp, 2, RPCRDMA_WR_RDMA_WRITE, c.buf, wl, c.mr->lkey,
		      (uint64_t)(uintptr_t)s.buf + 16, s.mr->rkey), 0);
	CHECK_EQ(wait_wc(c.cq, &wc), 1);
	CHECK(wc.wr_id == 2 && wc.status == RPCRDMA_WC_SUCCESS);
	/* The target never polls: placement must still happen.  Nothing
	 * orders these reads after the progress thread's placement (an RDMA
	 * Write completes nothing at its target), so ThreadSanitizer is
	 * told to look away from them. */
	uint64_t end = now_ms() + 5000;
	tsan_reads_begin();
	while (!placed_all(s.buf + 16, c.buf, wl) && now_ms() < end)
		usleep(1000);
	CHECK(memcmp(s.buf + 16, c.buf, wl) == 0);
	tsan_reads_end();

	/* RDMA Read back 100 KiB into a fresh area. */
	memset(c.buf, 0, wl);
	CHECK_EQ(post(c.qp, 3, RPCRDMA_WR_RDMA_READ, c.buf, 100 * 1024, c.mr->lkey,
		      (uint64_t)(uintptr_t)s.buf + 16, s.mr->rkey), 0);
	CHECK_EQ(wait_wc(c.cq, &wc), 1);
	CHECK(wc.wr_id == 3 && wc.status == RPCRDMA_WC_SUCCESS &&
	      wc.opcode == RPCRDMA_WC_RDMA_READ);
	CHECK(memcmp(c.buf, s.buf + 16, 100 * 1024) == 0);

	/* Access violation: Write one byte past the end of the region. */
	uint8_t before = s.buf[BUFSZ - 1];
	CHECK_EQ(post(c.qp, 4, RPCRDMA_WR_RDMA_WRITE, c.buf, 2, c.mr->lkey,
		      (uint64_t)(uintptr_t)s.buf + BUFSZ - 1, s.mr->rkey), 0);
	struct rpcrdma_terminate_info ti = { 0 };
	end = now_ms() + 5000;
	while (now_ms() < end) {
		ops->poll_cq(s.cq, 1, &wc); /* drive it; may flush */
		ops->get_terminate(s.qp, &ti);
		if (ti.valid)
			break;
		usleep(1000);
	}
	CHECK(ti.valid && ti.sent);
	CHECK(ti.layer == 1 && ti.etype == 1 && ti.ecode == 1); /* DDP bounds */
	CHECK_EQ(s.buf[BUFSZ - 1], before);
	end = now_ms() + 5000;
	struct rpcrdma_terminate_info ci = { 0 };
	while (now_ms() < end) {
		ops->poll_cq(c.cq, 1, &wc);
		ops->get_terminate(c.qp, &ci);
		if (ci.valid)
			break;
		usleep(1000);
	}
	CHECK(ci.valid && !ci.sent && ci.layer == 1 && ci.etype == 1 && ci.ecode == 1);
	ev = iwl_wait_event(ops, c.ch, RPCRDMA_CM_EVENT_DISCONNECTED);
	CHECK(ev != NULL);
	if (ev)
		ops->ack_cm_event(ev);
out:
	free_side(&c);
	free_side(&s);
	free_side(&l);
	ops->close(dev);
}

/* The handshake's deadlines, which the progress thread runs from its
 * list of timed endpoints (run_deferred, iwarp_dev.c): one set on the
 * consumer's thread (connect), one on the progress thread (an accepted
 * socket).  Each must fire on its own, with nothing else to wake the
 * thread. */
static void timeouts(void)
{
	struct rpcrdma_dev_params prm = { .connect_timeout_ms = 300 };
	struct rpcrdma_dev *dev;
	if (ops->open(&prm, &dev) != 0) {
		CHECK(0);
		return;
	}
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	socklen_t al = sizeof(a);

	/* A peer that accepts TCP (the kernel's backlog) and says nothing:
	 * the active side gives up (RFC 5044 §7.1.2 leaves the time to
	 * the implementation) with CONNECT_ERROR, not never. */
	int quiet = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(quiet >= 0);
	CHECK_EQ(bind(quiet, (struct sockaddr *)&a, al), 0);
	CHECK_EQ(listen(quiet, 4), 0);
	struct sockaddr_in qa;
	socklen_t ql = sizeof(qa);
	CHECK_EQ(getsockname(quiet, (struct sockaddr *)&qa, &ql), 0);
	struct iwl_side c = { 0 }, l = { 0 };
	CHECK_EQ(ops->create_channel(dev, &c.ch), 0);
	CHECK_EQ(ops->create_id(c.ch, NULL, &c.id), 0);
	CHECK_EQ(ops->resolve(c.id, (struct sockaddr *)&qa, ql), 0);
	make_qp(dev, &c);
	struct rpcrdma_conn_param cp = { .responder_resources = 1,
					 .initiator_depth = 1 };
	uint64_t t0 = now_ms();
	CHECK_EQ(ops->connect(c.id, &cp), 0);
	struct rpcrdma_cm_event *ev =
		iwl_wait_event(ops, c.ch, RPCRDMA_CM_EVENT_CONNECT_ERROR);
	uint64_t took = now_ms() - t0;
	CHECK(ev != NULL);
	if (ev) {
		CHECK_EQ(ev->status, RPCRDMA_ERR_TIMEOUT);
		ops->ack_cm_event(ev);
	}
	CHECK(took >= 250);
	printf("  silent responder: CONNECT_ERROR after %llu ms (time-out "
	       "300 ms)\n", (unsigned long long)took);
	close(quiet);

	/* A TCP initiator that sends no MPA request: the listener's side
	 * closes the socket (RFC 5044 §7.1.2 rule 8) and reports nothing. */
	CHECK_EQ(ops->create_channel(dev, &l.ch), 0);
	CHECK_EQ(ops->create_id(l.ch, NULL, &l.id), 0);
	CHECK_EQ(ops->listen(l.id, (struct sockaddr *)&a, al, 8), 0);
	int mute = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(mute >= 0);
	struct timeval tv = { 5, 0 };
	setsockopt(mute, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	t0 = now_ms();
	CHECK_EQ(connect(mute, (struct sockaddr *)&l.id->local_addr, al), 0);
	char b;
	ssize_t r = recv(mute, &b, 1, 0);
	took = now_ms() - t0;
	CHECK(r == 0 || (r < 0 && errno == ECONNRESET));
	CHECK(took >= 250 && took < 5000);
	printf("  silent initiator: closed after %llu ms\n",
	       (unsigned long long)took);
	close(mute);
	struct rpcrdma_cm_event *none = NULL;
	CHECK(ops->get_cm_event(l.ch, &none) != 0 || !none);
	free_side(&c);
	free_side(&l);
	ops->close(dev);
}

int main(void)
{
	ops = rpcrdma_provider_find("iwarp");
	CHECK(ops != NULL);
	if (!ops)
		TEST_MAIN_END();
	run("127.0.0.1", false);
	run("127.0.0.1", true);
	run("::1", false);
	timeouts();
	TEST_MAIN_END();
}
