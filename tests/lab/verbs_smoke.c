/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * verbs_smoke: end-to-end check of the "verbs" provider on a real device
 * (Soft-RoCE in the lab guest).  One process plays client and server over
 * two CM channels: connect with private data both ways, Send/Recv, RDMA
 * Write/Read, type-2 window bind + Send With Invalidate (remote
 * invalidation), Local Invalidate, rejection with private data, and
 * disconnect with flushed receives.  Every wait is bounded.
 *
 *   verbs_smoke [--addr A] [--port P] [--device NAME]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "provider/provider.h"
#include "test.h"

#define WAIT_MS 10000
#define BUF 4096

static const struct rpcrdma_provider_ops *ops;

struct side {
	struct rpcrdma_cm_channel *ch;
	struct rpcrdma_cm_id *id;
	struct rpcrdma_cq *scq, *rcq;
	struct rpcrdma_qp *qp;
	struct rpcrdma_mr *mr;
	char *buf;
};

static struct rpcrdma_cm_event *wait_cm(struct rpcrdma_cm_channel *ch)
{
	struct rpcrdma_cm_event *ev = NULL;

	for (int waited = 0; waited < WAIT_MS;) {
		int rc = ops->get_cm_event(ch, &ev);
		if (rc == 0)
			return ev;
		if (rc != RPCRDMA_ERR_AGAIN) {
			fprintf(stderr, "get_cm_event: %s\n", rpcrdma_strerror(rc));
			return NULL;
		}
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		if (poll(&p, 1, 100) == 0)
			waited += 100;
	}
	fprintf(stderr, "no CM event within %d ms\n", WAIT_MS);
	return NULL;
}

/* One completion, by the consumer loop of provider.h: poll, arm, poll
 * again (the race), then sleep on the fd and ack. */
static int wait_wc(struct rpcrdma_cq *cq, struct rpcrdma_wc *wc)
{
	for (int waited = 0; waited < WAIT_MS;) {
		int n = ops->poll_cq(cq, 1, wc);
		if (n)
			return n;
		ops->req_notify_cq(cq);
		n = ops->poll_cq(cq, 1, wc);
		if (n)
			return n;
		struct pollfd p = { .fd = ops->cq_fd(cq), .events = POLLIN };
		if (poll(&p, 1, 100) == 0)
			waited += 100;
		ops->ack_cq_events(cq);
	}
	fprintf(stderr, "no completion within %d ms\n", WAIT_MS);
	return 0;
}

static void setup_side(struct rpcrdma_dev *dev, struct rpcrdma_pd *pd,
		       struct side *s)
{
	s->buf = calloc(1, BUF);
	CHECK_EQ(ops->create_cq(dev, 64, s, &s->scq), 0);
	CHECK_EQ(ops->create_cq(dev, 64, s, &s->rcq), 0);
	CHECK_EQ(ops->reg_mr(pd, s->buf, BUF,
			     RPCRDMA_ACCESS_LOCAL_WRITE | RPCRDMA_ACCESS_REMOTE_WRITE |
			     RPCRDMA_ACCESS_REMOTE_READ | RPCRDMA_ACCESS_MW_BIND,
			     &s->mr), 0);
}

static void make_qp(struct rpcrdma_pd *pd, struct side *s)
{
	struct rpcrdma_qp_attr a = {
		.send_cq = s->scq, .recv_cq = s->rcq,
		.max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 2, .max_recv_sge = 1,
	};
	CHECK_EQ(ops->create_qp(s->id, pd, &a, &s->qp), 0);
	CHECK(s->qp && s->id->qp == s->qp);
}

static void post_recv(struct side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	struct rpcrdma_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct rpcrdma_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	CHECK_EQ(ops->post_recv(s->qp, &wr, NULL), 0);
}

static void post(struct side *s, struct rpcrdma_send_wr *wr)
{
	struct rpcrdma_send_wr *bad = NULL;
	CHECK_EQ(ops->post_send(s->qp, wr, &bad), 0);
	CHECK(bad == NULL);
}

static void send_msg(struct side *s, uint64_t wr_id, size_t off, uint32_t len,
		     enum rpcrdma_wr_opcode op, uint32_t inv)
{
	struct rpcrdma_sge sge = { (uintptr_t)(s->buf + off), len, s->mr->lkey };
	struct rpcrdma_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = RPCRDMA_SEND_SIGNALED, .invalidate_rkey = inv,
	};
	post(s, &wr);
}

static void expect_wc(struct rpcrdma_cq *cq, uint64_t wr_id,
		      enum rpcrdma_wc_opcode op, enum rpcrdma_wc_status st,
		      struct rpcrdma_wc *out)
{
	struct rpcrdma_wc wc;
	memset(&wc, 0, sizeof(wc));
	CHECK_EQ(wait_wc(cq, &wc), 1);
	CHECK_EQ(wc.wr_id, wr_id);
	CHECK_EQ(wc.status, st);
	CHECK_EQ(wc.opcode, op);
	if (out)
		*out = wc;
}

int main(int argc, char **argv)
{
	const char *addr_s = "192.0.2.1", *device = NULL;
	int port = 20079;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--addr"))
			addr_s = argv[i + 1];
		else if (!strcmp(argv[i], "--port"))
			port = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--device"))
			device = argv[i + 1];
	}
	ops = rpcrdma_provider_find("verbs");
	if (!ops) {
		fprintf(stderr, "verbs provider not built\n");
		return 1;
	}
	struct rpcrdma_dev_params params = { .device = device };
	struct rpcrdma_dev *dev = NULL;
	int rc = ops->open(&params, &dev);
	CHECK_EQ(rc, 0);
	if (rc)
		TEST_MAIN_END();
	struct rpcrdma_dev_attr attr;
	CHECK_EQ(ops->query(dev, &attr), 0);
	printf("device %s: max_qp_wr %u max_sge %u max_cqe %u max_msg %u "
	       "rd_atom %u/%u private %u caps %#x\n", attr.name, attr.max_qp_wr,
	       attr.max_sge, attr.max_cqe, attr.max_msg_size, attr.max_qp_rd_atom,
	       attr.max_qp_init_rd_atom, attr.max_private_data, attr.caps);
	CHECK(attr.caps & RPCRDMA_DEV_CAP_MW);
	CHECK(attr.caps & RPCRDMA_DEV_CAP_SEND_WITH_INV);

	struct rpcrdma_dev *nodev = NULL;
	struct rpcrdma_dev_params bogus = { .device = "no_such_dev" };
	CHECK_EQ(ops->open(&bogus, &nodev), RPCRDMA_ERR_NO_DEVICE);

	struct rpcrdma_pd *pd;
	CHECK_EQ(ops->alloc_pd(dev, &pd), 0);
	struct side srv = { 0 }, cli = { 0 }, conn = { 0 };
	setup_side(dev, pd, &cli);
	setup_side(dev, pd, &conn);

	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, addr_s, &sin.sin_addr);

	/* listener */
	CHECK_EQ(ops->create_channel(dev, &srv.ch), 0);
	CHECK_EQ(ops->create_id(srv.ch, &srv, &srv.id), 0);
	CHECK_EQ(ops->listen(srv.id, (struct sockaddr *)&sin, sizeof(sin), 8), 0);

	/* client: resolve, QP, receives, connect */
	CHECK_EQ(ops->create_channel(dev, &cli.ch), 0);
	CHECK_EQ(ops->create_id(cli.ch, &cli, &cli.id), 0);
	CHECK_EQ(ops->resolve(cli.id, (struct sockaddr *)&sin, sizeof(sin)), 0);
	make_qp(pd, &cli);
	for (int i = 0; i < 4; i++)
		post_recv(&cli, 100 + i, 1024 + 256 * i, 256);
	static const char hello_c[] = "client-private-data";
	static const char hello_s[] = "server-private-data";
	struct rpcrdma_conn_param cp = {
		.private_data = hello_c, .private_data_len = sizeof(hello_c),
		.responder_resources = 4, .initiator_depth = 2,
	};
	CHECK_EQ(ops->connect(cli.id, &cp), 0);

	struct rpcrdma_cm_event *ev = wait_cm(srv.ch);
	CHECK(ev != NULL);
	if (!ev)
		TEST_MAIN_END();
	CHECK_EQ(ev->type, RPCRDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == srv.id);
	CHECK(ev->private_data_len >= sizeof(hello_c));
	if (ev->private_data_len >= sizeof(hello_c))
		CHECK_MEM(ev->private_data, hello_c, sizeof(hello_c));
	printf("CONNECT_REQUEST: private_data_len %u (sent %zu), peer IRD %u ORD %u "
	       "(sent 4, 2)\n", ev->private_data_len, sizeof(hello_c),
	       ev->responder_resources, ev->initiator_depth);
	conn.id = ev->id;
	conn.ch = srv.ch;
	CHECK(conn.id->channel == srv.ch);
	CHECK_EQ(ops->ack_cm_event(ev), 0);
	make_qp(pd, &conn);
	for (int i = 0; i < 4; i++)
		post_recv(&conn, 200 + i, 1024 + 256 * i, 256);
	struct rpcrdma_conn_param ap = {
		.private_data = hello_s, .private_data_len = sizeof(hello_s),
	};
	CHECK_EQ(ops->accept(conn.id, &ap), 0);

	ev = wait_cm(cli.ch);
	CHECK(ev && ev->type == RPCRDMA_CM_EVENT_ESTABLISHED && ev->id == cli.id);
	if (ev && ev->private_data_len >= sizeof(hello_s))
		CHECK_MEM(ev->private_data, hello_s, sizeof(hello_s));
	else
		CHECK(!"accept private data missing");
	if (ev) {
		printf("ESTABLISHED (client): private_data_len %u, peer IRD %u ORD %u\n",
		       ev->private_data_len, ev->responder_resources,
		       ev->initiator_depth);
		ops->ack_cm_event(ev);
	}
	ev = wait_cm(srv.ch);
	CHECK(ev && ev->type == RPCRDMA_CM_EVENT_ESTABLISHED && ev->id == conn.id);
	if (ev)
		ops->ack_cm_event(ev);

	/* Send / Recv, both ways */
	struct rpcrdma_wc wc;
	memcpy(cli.buf, "ping", 5);
	send_msg(&cli, 1, 0, 5, RPCRDMA_WR_SEND, 0);
	expect_wc(cli.scq, 1, RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL);
	expect_wc(conn.rcq, 200, RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc);
	CHECK_EQ(wc.byte_len, 5);
	CHECK(wc.qp == conn.qp);
	CHECK_MEM(conn.buf + 1024, "ping", 5);
	memcpy(conn.buf, "pong", 5);
	send_msg(&conn, 2, 0, 5, RPCRDMA_WR_SEND, 0);
	expect_wc(conn.scq, 2, RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL);
	expect_wc(cli.rcq, 100, RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc);
	CHECK_MEM(cli.buf + 1024, "pong", 5);

	/* RDMA Write into the server's MR, then read it back */
	memset(cli.buf, 'W', 512);
	struct rpcrdma_sge sge = { (uintptr_t)cli.buf, 512, cli.mr->lkey };
	struct rpcrdma_send_wr w = {
		.wr_id = 3, .sg_list = &sge, .num_sge = 1,
		.opcode = RPCRDMA_WR_RDMA_WRITE, .send_flags = RPCRDMA_SEND_SIGNALED,
		.rdma = { (uintptr_t)conn.buf + 2048, conn.mr->rkey },
	};
	post(&cli, &w);
	expect_wc(cli.scq, 3, RPCRDMA_WC_RDMA_WRITE, RPCRDMA_WC_SUCCESS, NULL);
	CHECK(conn.buf[2048] == 'W' && conn.buf[2048 + 511] == 'W');
	memset(conn.buf + 2048, 'R', 100);
	struct rpcrdma_sge rsge = { (uintptr_t)cli.buf + 3072, 100, cli.mr->lkey };
	struct rpcrdma_send_wr r = {
		.wr_id = 4, .sg_list = &rsge, .num_sge = 1,
		.opcode = RPCRDMA_WR_RDMA_READ, .send_flags = RPCRDMA_SEND_SIGNALED,
		.rdma = { (uintptr_t)conn.buf + 2048, conn.mr->rkey },
	};
	post(&cli, &r);
	expect_wc(cli.scq, 4, RPCRDMA_WC_RDMA_READ, RPCRDMA_WC_SUCCESS, NULL);
	CHECK(cli.buf[3072] == 'R' && cli.buf[3072 + 99] == 'R');

	/* Remote invalidation: the client binds a type-2 window over part of
	 * its buffer, the server writes through it and answers with Send With
	 * Invalidate naming the window's rkey. */
	struct rpcrdma_mw *mw = NULL;
	CHECK_EQ(ops->alloc_mw(pd, &mw), 0);
	if (mw) {
		uint32_t old = mw->rkey;
		struct rpcrdma_send_wr b = {
			.wr_id = 5, .opcode = RPCRDMA_WR_BIND_MW,
			.send_flags = RPCRDMA_SEND_SIGNALED,
			.bind_mw = { mw, cli.mr, (uintptr_t)cli.buf + 512, 256,
				     RPCRDMA_ACCESS_REMOTE_WRITE | RPCRDMA_ACCESS_REMOTE_READ,
				     (uint8_t)(old + 1) },
		};
		post(&cli, &b);
		CHECK_EQ(mw->rkey, (old & ~0xffu) | (uint8_t)(old + 1));
		expect_wc(cli.scq, 5, RPCRDMA_WC_BIND_MW, RPCRDMA_WC_SUCCESS, NULL);
		memset(conn.buf + 2048, 'M', 256);
		struct rpcrdma_sge ms = { (uintptr_t)conn.buf + 2048, 256, conn.mr->lkey };
		struct rpcrdma_send_wr mwr = {
			.wr_id = 6, .sg_list = &ms, .num_sge = 1,
			.opcode = RPCRDMA_WR_RDMA_WRITE, .send_flags = RPCRDMA_SEND_SIGNALED,
			.rdma = { (uintptr_t)cli.buf + 512, mw->rkey },
		};
		post(&conn, &mwr);
		expect_wc(conn.scq, 6, RPCRDMA_WC_RDMA_WRITE, RPCRDMA_WC_SUCCESS, NULL);
		CHECK(cli.buf[512] == 'M' && cli.buf[767] == 'M');
		send_msg(&conn, 7, 0, 5, RPCRDMA_WR_SEND_WITH_INV, mw->rkey);
		expect_wc(conn.scq, 7, RPCRDMA_WC_SEND, RPCRDMA_WC_SUCCESS, NULL);
		expect_wc(cli.rcq, 101, RPCRDMA_WC_RECV, RPCRDMA_WC_SUCCESS, &wc);
		CHECK(wc.wc_flags & RPCRDMA_WC_WITH_INV);
		CHECK_EQ(wc.invalidated_rkey, mw->rkey);
		/* Rebind with a fresh key (a type-2 window must be invalid to
		 * bind again), then invalidate it locally. */
		b.wr_id = 8;
		b.bind_mw.key = (uint8_t)(mw->rkey + 1);
		post(&cli, &b);
		expect_wc(cli.scq, 8, RPCRDMA_WC_BIND_MW, RPCRDMA_WC_SUCCESS, NULL);
		struct rpcrdma_send_wr li = {
			.wr_id = 9, .opcode = RPCRDMA_WR_LOCAL_INV,
			.send_flags = RPCRDMA_SEND_SIGNALED, .invalidate_rkey = mw->rkey,
		};
		post(&cli, &li);
		expect_wc(cli.scq, 9, RPCRDMA_WC_LOCAL_INV, RPCRDMA_WC_SUCCESS, NULL);
	}

	/* Rejection with private data: a second client is turned away. */
	struct side rej = { 0 };
	setup_side(dev, pd, &rej);
	CHECK_EQ(ops->create_channel(dev, &rej.ch), 0);
	CHECK_EQ(ops->create_id(rej.ch, NULL, &rej.id), 0);
	CHECK_EQ(ops->resolve(rej.id, (struct sockaddr *)&sin, sizeof(sin)), 0);
	make_qp(pd, &rej);
	CHECK_EQ(ops->connect(rej.id, &cp), 0);
	ev = wait_cm(srv.ch);
	CHECK(ev && ev->type == RPCRDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev) {
		struct rpcrdma_cm_id *nid = ev->id;
		ops->ack_cm_event(ev);
		static const char no[] = "go-away";
		CHECK_EQ(ops->reject(nid, no, sizeof(no)), 0);
		CHECK_EQ(ops->destroy_id(nid), 0);
		ev = wait_cm(rej.ch);
		CHECK(ev && ev->type == RPCRDMA_CM_EVENT_REJECTED);
		if (ev && ev->private_data_len >= sizeof(no))
			CHECK_MEM(ev->private_data, no, sizeof(no));
		else
			CHECK(!"reject private data missing");
		if (ev) {
			printf("REJECTED: status %d private_data_len %u\n",
			       ev->status, ev->private_data_len);
			ops->ack_cm_event(ev);
		}
	}

	/* Disconnect: both sides hear DISCONNECTED, posted receives flush
	 * with their own wr_id and the RECV opcode.  Both channels are
	 * watched at once, as any consumer with an event loop does: over the
	 * kernel CM the initiator's DISCONNECTED follows the peer's DREP,
	 * which the provider sends when the peer reads its event. */
	CHECK_EQ(ops->disconnect(cli.id), 0);
	bool cli_disc = false, srv_disc = false;
	for (int waited = 0; waited < WAIT_MS && !(cli_disc && srv_disc); waited += 10) {
		struct rpcrdma_cm_channel *chs[2] = { cli.ch, srv.ch };
		for (int i = 0; i < 2; i++) {
			if (ops->get_cm_event(chs[i], &ev) != 0)
				continue;
			if (ev->type == RPCRDMA_CM_EVENT_DISCONNECTED) {
				CHECK(ev->id == (i ? conn.id : cli.id));
				*(i ? &srv_disc : &cli_disc) = true;
			}
			ops->ack_cm_event(ev);
		}
		struct pollfd p[2] = { { cli.ch->fd, POLLIN, 0 }, { srv.ch->fd, POLLIN, 0 } };
		poll(p, 2, 10);
	}
	CHECK(cli_disc);
	CHECK(srv_disc);
	for (int i = 2; i < 4; i++)
		expect_wc(cli.rcq, 100 + i, RPCRDMA_WC_RECV, RPCRDMA_WC_WR_FLUSH_ERR, NULL);
	for (int i = 1; i < 4; i++)
		expect_wc(conn.rcq, 200 + i, RPCRDMA_WC_RECV, RPCRDMA_WC_WR_FLUSH_ERR, NULL);
	/* A send posted after the flush completes in error too. */
	send_msg(&cli, 10, 0, 5, RPCRDMA_WR_SEND, 0);
	expect_wc(cli.scq, 10, RPCRDMA_WC_SEND, RPCRDMA_WC_WR_FLUSH_ERR, NULL);

	/* Tear-down in the order verbs requires. */
	if (mw)
		CHECK_EQ(ops->dealloc_mw(mw), 0);
	struct side *all[] = { &cli, &conn, &rej };
	for (size_t i = 0; i < 3; i++) {
		struct side *s = all[i];
		if (s->qp)
			CHECK_EQ(ops->destroy_qp(s->qp), 0);
		CHECK_EQ(ops->destroy_id(s->id), 0);
		CHECK_EQ(ops->destroy_cq(s->scq), 0);
		CHECK_EQ(ops->destroy_cq(s->rcq), 0);
		CHECK_EQ(ops->dereg_mr(s->mr), 0);
		free(s->buf);
	}
	CHECK_EQ(ops->destroy_id(srv.id), 0);
	CHECK_EQ(ops->destroy_channel(srv.ch), 0);
	CHECK_EQ(ops->destroy_channel(cli.ch), 0);
	CHECK_EQ(ops->destroy_channel(rej.ch), 0);
	CHECK_EQ(ops->dealloc_pd(pd), 0);
	ops->close(dev);
	TEST_MAIN_END();
}
