/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Provider test helpers: waits with time-outs, buffers, connected pairs. */
#include "tp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tp_env tp;

/* Per-case state, owned by the runner in conformance.c through these. */
int tp_cur_failed;
int tp_cur_skipped;
char tp_cur_skip_reason[400];
static bool fd_bug_reported;

uint64_t tp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void tp_case_reset(void);
void tp_case_reset(void)
{
	tp_cur_failed = 0;
	tp_cur_skipped = 0;
	tp_cur_skip_reason[0] = 0;
	fd_bug_reported = false;
}

bool tp_check_fail(const char *file, int line, const char *expr,
		   const char *fmt, ...)
{
	va_list ap;
	const char *base = strrchr(file, '/');

	tp_cur_failed++;
	printf("    check failed at %s:%d: %s -- ", base ? base + 1 : file,
	       line, expr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return false;
}

void tp_note(const char *fmt, ...)
{
	va_list ap;

	if (!tp.verbose)
		return;
	printf("    note: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void tp_skip(const char *fmt, ...)
{
	va_list ap;

	tp_cur_skipped = 1;
	va_start(ap, fmt);
	vsnprintf(tp_cur_skip_reason, sizeof(tp_cur_skip_reason), fmt, ap);
	va_end(ap);
}

bool tp_device_is_rxe(void)
{
	char path[160], desc[64] = "";
	FILE *f;

	if (!tp.ops || strcmp(tp.ops->name, "verbs") != 0 || !tp.attr.name[0] ||
	    strchr(tp.attr.name, '/'))
		return false;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent",
		 tp.attr.name);
	if (access(path, F_OK) != 0)
		return false;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_desc",
		 tp.attr.name);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(desc, sizeof(desc), f))
		desc[0] = 0;
	fclose(f);
	return strncmp(desc, "rxe", 3) == 0;
}

bool tp_device_is_siw(void)
{
	/* SIW_VENDOR_ID, drivers/infiniband/sw/siw/siw.h:20 (Linux 6.1). */
	return tp.ops && strcmp(tp.ops->name, "verbs") == 0 &&
	       tp.attr.vendor_id == 0x626d74u;
}

bool tp_case_failed(void)
{
	return tp_cur_failed != 0;
}

int tp_ok_at(const char *file, int line, const char *what, int rc)
{
	if (rc < 0)
		tp_check_fail(file, line, what, "returned %d (%s)", rc,
			      rpcrdma_strerror(rc));
	return rc;
}

const char *tp_wc_status_str(enum rpcrdma_wc_status s)
{
	static const char *const names[] = {
		"SUCCESS", "LOC_LEN_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
		"REM_ACCESS_ERR", "REM_OP_ERR", "REM_INV_REQ_ERR",
		"RNR_RETRY_EXC_ERR", "RETRY_EXC_ERR", "MW_BIND_ERR",
		"FATAL_ERR", "GENERAL_ERR",
	};
	if ((unsigned)s < sizeof(names) / sizeof(names[0]))
		return names[s];
	return "?status";
}

const char *tp_wc_opcode_str(enum rpcrdma_wc_opcode o)
{
	static const char *const names[] = {
		"SEND", "RDMA_WRITE", "RDMA_READ", "LOCAL_INV", "BIND_MW",
		"RECV",
	};
	if ((unsigned)o < sizeof(names) / sizeof(names[0]))
		return names[o];
	return "?opcode";
}

const char *tp_cm_event_str(enum rpcrdma_cm_event_type t)
{
	static const char *const names[] = {
		"CONNECT_REQUEST", "ESTABLISHED", "REJECTED",
		"CONNECT_ERROR", "UNREACHABLE", "DISCONNECTED",
		"DEVICE_REMOVAL",
	};
	if ((unsigned)t < sizeof(names) / sizeof(names[0]))
		return names[t];
	return "?event";
}

/* ------------------------------------------------------------------ */

static int poll_fd(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&pfd, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	return rc > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP)) ? 1 : 0;
}

int tp_wait_cm(struct rpcrdma_cm_channel *ch, int timeout_ms,
	       struct tp_cm_ev *out)
{
	const struct rpcrdma_provider_ops *ops = ch->dev->ops;
	uint64_t end = tp_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct rpcrdma_cm_event *ev = NULL;
		int rc = ops->get_cm_event(ch, &ev);

		if (rc == 0 && ev) {
			memset(out, 0, sizeof(*out));
			out->type = ev->type;
			out->id = ev->id;
			out->listen_id = ev->listen_id;
			out->status = ev->status;
			out->private_data_len = ev->private_data_len;
			if (ev->private_data_len && ev->private_data)
				memcpy(out->private_data, ev->private_data,
				       ev->private_data_len);
			else if (ev->private_data_len)
				tp_check_fail(__FILE__, __LINE__,
					      "ev->private_data",
					      "event %s has private_data_len %u "
					      "but no pointer",
					      tp_cm_event_str(ev->type),
					      ev->private_data_len);
			out->responder_resources = ev->responder_resources;
			out->initiator_depth = ev->initiator_depth;
			rc = ops->ack_cm_event(ev);
			if (rc < 0)
				tp_check_fail(__FILE__, __LINE__,
					      "ack_cm_event", "returned %d", rc);
			tp_note("cm event %s status %d pd_len %u ird %u ord %u",
				tp_cm_event_str(out->type), out->status,
				out->private_data_len,
				out->responder_resources,
				out->initiator_depth);
			return 0;
		}
		if (rc != RPCRDMA_ERR_AGAIN)
			return rc < 0 ? rc : RPCRDMA_ERR_INVAL;
		uint64_t now = tp_now_ms();
		if (now >= end)
			return RPCRDMA_ERR_TIMEOUT;
		uint64_t left = end - now;
		/* The fd says "an event may be pending"; slices keep a
		 * provider whose fd misbehaves from costing the whole
		 * time-out. */
		poll_fd(ch->fd, left > 200 ? 200 : (int)left);
	}
}

int tp_expect_cm(struct rpcrdma_cm_channel *ch,
		 enum rpcrdma_cm_event_type type, int timeout_ms,
		 struct tp_cm_ev *out)
{
	struct tp_cm_ev tmp;
	int rc;

	if (!out)
		out = &tmp;
	rc = tp_wait_cm(ch, timeout_ms, out);
	if (rc < 0) {
		tp_check_fail(__FILE__, __LINE__, "tp_wait_cm",
			      "waiting for %s: %s after %d ms",
			      tp_cm_event_str(type), rpcrdma_strerror(rc),
			      timeout_ms);
		return rc;
	}
	if (out->type != type) {
		tp_check_fail(__FILE__, __LINE__, "event type",
			      "expected %s, got %s (status %d)",
			      tp_cm_event_str(type),
			      tp_cm_event_str(out->type), out->status);
		return RPCRDMA_ERR_PROTOCOL;
	}
	return 0;
}

int tp_wait_wc(struct rpcrdma_cq *cq, int n, int timeout_ms,
	       struct rpcrdma_wc *wc)
{
	const struct rpcrdma_provider_ops *ops = cq->dev->ops;
	uint64_t end = tp_now_ms() + (uint64_t)timeout_ms;
	int fd = ops->cq_fd(cq);
	int got = 0;

	while (got < n) {
		int r = ops->poll_cq(cq, n - got, wc + got);
		if (r < 0) {
			tp_check_fail(__FILE__, __LINE__, "poll_cq",
				      "returned %d", r);
			return got;
		}
		if (r > n - got) {
			tp_check_fail(__FILE__, __LINE__, "poll_cq",
				      "returned %d for room %d", r, n - got);
			return got;
		}
		if (r > 0) {
			got += r;
			continue;
		}
		r = ops->req_notify_cq(cq);
		if (r < 0) {
			tp_check_fail(__FILE__, __LINE__, "req_notify_cq",
				      "returned %d", r);
			return got;
		}
		r = ops->poll_cq(cq, n - got, wc + got);
		if (r > 0) {
			got += r;
			continue;
		}
		uint64_t now = tp_now_ms();
		if (now >= end)
			break;
		uint64_t left = end - now;
		int slice = left > 1000 ? 1000 : (int)left;
		if (poll_fd(fd, slice)) {
			r = ops->ack_cq_events(cq);
			if (r < 0)
				tp_check_fail(__FILE__, __LINE__,
					      "ack_cq_events", "returned %d",
					      r);
			continue;
		}
		/* Armed, slept a whole slice: if completions are there, the
		 * fd must turn readable promptly. */
		r = ops->poll_cq(cq, n - got, wc + got);
		if (r > 0) {
			if (!poll_fd(fd, 200) && !fd_bug_reported) {
				fd_bug_reported = true;
				tp_check_fail(__FILE__, __LINE__, "cq_fd",
					      "armed CQ holds completions but "
					      "its fd stayed unreadable");
			}
			got += r;
		}
	}
	return got;
}

int tp_pair_wait_wc(struct tp_pair *p, struct rpcrdma_cq *cq, int n,
		    int timeout_ms, struct rpcrdma_wc *wc)
{
	struct tp_side *sides[2] = { &p->cli, &p->srv };
	uint64_t end = tp_now_ms() + (uint64_t)timeout_ms;
	uint64_t quiet_since = 0;
	int got = 0;

	for (;;) {
		uint64_t now = tp_now_ms();
		int slice = now >= end ? 0 : end - now > 100 ? 100
							 : (int)(end - now);
		int r = tp_wait_wc(cq, n - got, slice, wc + got);
		got += r;
		if (got >= n || now >= end)
			return got;
		/* siw: once a side read DISCONNECTED its QP is flushed
		 * (verbs_cm.c); what has not completed 3 s later never will
		 * (siw_verbs.c:792-801), so do not wait out the time-out. */
		if (tp_device_is_siw() &&
		    (p->cli.disconnected || p->srv.disconnected)) {
			if (r || !quiet_since)
				quiet_since = now;
			else if (now - quiet_since > 3000)
				return got;
		}
		for (int i = 0; i < 2; i++) {
			struct tp_cm_ev ev;
			if (!sides[i]->ch || !sides[i]->id || !sides[i]->qp)
				continue;
			while (tp_wait_cm(sides[i]->ch, 0, &ev) == 0)
				if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
					sides[i]->disconnected = true;
		}
	}
}

int tp_drain_wc(struct rpcrdma_cq *cq, int quiet_ms, struct rpcrdma_wc *wc,
		int max)
{
	const struct rpcrdma_provider_ops *ops = cq->dev->ops;
	uint64_t last = tp_now_ms();
	int got = 0;
	struct rpcrdma_wc tmp[16];

	while (tp_now_ms() - last < (uint64_t)quiet_ms) {
		int r = ops->poll_cq(cq, 16, tmp);
		if (r < 0)
			break;
		if (r == 0) {
			usleep(2000);
			continue;
		}
		for (int i = 0; i < r; i++) {
			if (wc && got < max)
				wc[got] = tmp[i];
			got++;
		}
		last = tp_now_ms();
	}
	return got;
}

bool tp_expect_wc(struct rpcrdma_cq *cq, int timeout_ms, uint64_t wr_id,
		  enum rpcrdma_wc_opcode op, enum rpcrdma_wc_status st,
		  struct rpcrdma_wc *out)
{
	struct rpcrdma_wc wc;

	memset(&wc, 0, sizeof(wc));
	if (tp_wait_wc(cq, 1, timeout_ms, &wc) != 1) {
		if (out)
			memset(out, 0, sizeof(*out));
		return tp_check_fail(__FILE__, __LINE__, "completion",
				     "no completion for wr_id %#llx (%s) "
				     "within %d ms",
				     (unsigned long long)wr_id,
				     tp_wc_opcode_str(op), timeout_ms);
	}
	if (out)
		*out = wc;
	bool ok = true;
	if (wc.wr_id != wr_id)
		ok = tp_check_fail(__FILE__, __LINE__, "wc.wr_id",
				   "expected %#llx, got %#llx",
				   (unsigned long long)wr_id,
				   (unsigned long long)wc.wr_id);
	if (wc.status != st)
		ok = tp_check_fail(__FILE__, __LINE__, "wc.status",
				   "wr_id %#llx: expected %s, got %s "
				   "(vendor_err %#x)",
				   (unsigned long long)wc.wr_id,
				   tp_wc_status_str(st),
				   tp_wc_status_str(wc.status), wc.vendor_err);
	if (wc.opcode != op)
		ok = tp_check_fail(__FILE__, __LINE__, "wc.opcode",
				   "wr_id %#llx: expected %s, got %s",
				   (unsigned long long)wc.wr_id,
				   tp_wc_opcode_str(op),
				   tp_wc_opcode_str(wc.opcode));
	return ok;
}

/* ------------------------------------------------------------------ */

void tp_fill(void *p, size_t len, uint32_t seed, size_t base_off)
{
	uint8_t *b = p;
	for (size_t i = 0; i < len; i++)
		b[i] = tp_pat(seed, base_off + i);
}

size_t tp_verify(const void *p, size_t len, uint32_t seed, size_t base_off)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < len; i++)
		if (b[i] != tp_pat(seed, base_off + i))
			return i;
	return SIZE_MAX;
}

#define CANARY_SEED TP_CANARY_SEED

bool tp_canary_range(const struct tp_buf *b, size_t from, size_t n)
{
	size_t off = tp_verify(b->mem + from, n, CANARY_SEED, from);
	if (off == SIZE_MAX)
		return true;
	tp_note("canary broken at offset %zd from the region start",
		(ssize_t)(from + off) - (ssize_t)b->guard);
	return false;
}

void tp_canary_fill(struct tp_buf *b)
{
	tp_fill(b->mem, b->len + 2 * b->guard, CANARY_SEED, 0);
}

bool tp_canary_intact(const struct tp_buf *b)
{
	size_t off = tp_verify(b->mem, b->len + 2 * b->guard, CANARY_SEED, 0);
	if (off == SIZE_MAX)
		return true;
	tp_note("canary broken at offset %zd from the region start",
		(ssize_t)off - (ssize_t)b->guard);
	return false;
}

int tp_buf_alloc(struct rpcrdma_pd *pd, size_t len, unsigned access,
		 size_t guard, struct tp_buf *b)
{
	memset(b, 0, sizeof(*b));
	/* Never zero bytes: a zero-length region still gets an address. */
	b->mem = aligned_alloc(4096,
			       (((len + 2 * guard) | 1) + 4095) & ~(size_t)4095);
	if (!b->mem) {
		tp_check_fail(__FILE__, __LINE__, "aligned_alloc",
			      "%zu bytes", len);
		return RPCRDMA_ERR_NOMEM;
	}
	b->guard = guard;
	b->p = b->mem + guard;
	b->len = len;
	memset(b->mem, 0, len + 2 * guard);
	int rc = pd->dev->ops->reg_mr(pd, b->p, len, access, &b->mr);
	if (rc < 0 || !b->mr) {
		tp_check_fail(__FILE__, __LINE__, "reg_mr",
			      "%zu bytes access %#x: %d (%s)", len, access,
			      rc, rpcrdma_strerror(rc));
		free(b->mem);
		b->mem = NULL;
		b->mr = NULL;
		return rc < 0 ? rc : RPCRDMA_ERR_INVAL;
	}
	TP_CHECK(b->mr->addr == b->p && b->mr->length == len &&
		 b->mr->access == access,
		 "mr fields addr %p length %zu access %#x (want %p %zu %#x)",
		 b->mr->addr, b->mr->length, b->mr->access, (void *)b->p,
		 len, access);
	return 0;
}

void tp_buf_free(struct tp_buf *b)
{
	if (b->mr) {
		int rc = b->mr->pd->dev->ops->dereg_mr(b->mr);
		if (rc < 0)
			tp_check_fail(__FILE__, __LINE__, "dereg_mr",
				      "returned %d", rc);
	}
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ */

const struct sockaddr *tp_addr_with_port(uint16_t port,
					 struct sockaddr_storage *ss)
{
	*ss = tp.addr;
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	return (const struct sockaddr *)ss;
}

static int side_open(struct tp_side *s, struct rpcrdma_dev *dev, int cqe)
{
	const struct rpcrdma_provider_ops *ops = dev->ops;

	s->dev = dev;
	if (TP_OK(ops->create_channel(dev, &s->ch)) < 0)
		return -1;
	if (TP_OK(ops->alloc_pd(dev, &s->pd)) < 0)
		return -1;
	if (TP_OK(ops->create_cq(dev, cqe, s, &s->scq)) < 0)
		return -1;
	if (TP_OK(ops->create_cq(dev, cqe, s, &s->rcq)) < 0)
		return -1;
	TP_CHECK(s->scq->cqe >= cqe, "cq->cqe %d < requested %d",
		 s->scq->cqe, cqe);
	return 0;
}

int tp_pair_open(struct tp_pair *p, const struct tp_conn_opts *o)
{
	const struct rpcrdma_provider_ops *ops = tp.ops;
	static const struct tp_conn_opts none;
	int cqe;

	if (!o)
		o = &none;
	memset(p, 0, sizeof(*p));
	cqe = o->cqe ? o->cqe : 256;
	if (side_open(&p->srv, tp.dev_srv, cqe) < 0 ||
	    side_open(&p->cli, tp.dev_cli, cqe) < 0)
		return -1;

	for (int attempt = 0; attempt < 20; attempt++) {
		struct sockaddr_storage ss;
		uint16_t port = tp.port_next++;
		if (tp.port_next >= tp.port_limit)
			tp.port_next = tp.port_base;
		if (TP_OK(ops->create_id(p->srv.ch, p, &p->listen_id)) < 0)
			return -1;
		const struct sockaddr *sa = tp_addr_with_port(port, &ss);
		int rc = ops->listen(p->listen_id, sa, tp.addrlen, 128);
		if (rc == 0) {
			p->port = port;
			break;
		}
		tp_note("listen on port %u: %d (%s); trying the next", port,
			rc, rpcrdma_strerror(rc));
		ops->destroy_id(p->listen_id);
		p->listen_id = NULL;
	}
	if (!p->listen_id) {
		TP_CHECK(p->listen_id, "no port to listen on");
		return -1;
	}
	if (TP_OK(ops->create_id(p->cli.ch, p, &p->cli.id)) < 0)
		return -1;
	return 0;
}

int tp_side_create_qp(struct tp_pair *p, struct tp_side *s,
		      const struct tp_conn_opts *o)
{
	struct rpcrdma_qp_attr qa;
	uint32_t sge = o->max_sge ? o->max_sge : 4;

	if (sge > tp.attr.max_sge)
		sge = tp.attr.max_sge;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.max_send_wr = o->max_send_wr ? o->max_send_wr : 64;
	qa.max_recv_wr = o->max_recv_wr ? o->max_recv_wr : 64;
	qa.max_send_sge = sge;
	qa.max_recv_sge = sge;
	qa.context = s;
	if (TP_OK(s->dev->ops->create_qp(s->id, s->pd, &qa, &s->qp)) < 0)
		return -1;
	TP_CHECK(s->qp->max_send_wr >= qa.max_send_wr &&
		 s->qp->max_recv_wr >= qa.max_recv_wr &&
		 s->qp->max_send_sge >= sge && s->qp->max_recv_sge >= sge,
		 "qp sizes %u/%u/%u/%u below requested %u/%u/%u",
		 s->qp->max_send_wr, s->qp->max_recv_wr,
		 s->qp->max_send_sge, s->qp->max_recv_sge, qa.max_send_wr,
		 qa.max_recv_wr, sge);
	TP_CHECK(s->qp->send_cq == s->scq && s->qp->recv_cq == s->rcq &&
		 s->qp->context == s && s->qp->pd == s->pd,
		 "qp base fields not filled in");
	TP_CHECK(s->id->qp == s->qp, "cm_id->qp not set by create_qp");
	p->max_sge = sge;
	return 0;
}

uint8_t tp_default_ird(void)
{
	return (uint8_t)(tp.attr.max_qp_rd_atom < 16 ? tp.attr.max_qp_rd_atom
						     : 16);
}

uint8_t tp_default_ord(void)
{
	return (uint8_t)(tp.attr.max_qp_init_rd_atom < 16
				 ? tp.attr.max_qp_init_rd_atom : 16);
}

static int post_side_recvs(struct tp_pair *p, struct tp_side *s,
			   struct tp_buf *rb, int n)
{
	if (n <= 0)
		return 0;
	if (tp_buf_alloc(s->pd, (size_t)n * 4096, RPCRDMA_ACCESS_LOCAL_WRITE,
			 0, rb) < 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (tp_post_recv1(s->qp, 0x5000u + (unsigned)i,
				  rb->p + (size_t)i * 4096, 4096,
				  rb->mr->lkey) < 0)
			return -1;
	return 0;
}

int tp_pair_connect(struct tp_pair *p, const struct tp_conn_opts *o)
{
	const struct rpcrdma_provider_ops *ops = tp.ops;
	static const struct tp_conn_opts none;
	struct sockaddr_storage ss;
	struct rpcrdma_conn_param cp;
	int to = 10000;

	if (!o)
		o = &none;
	const struct sockaddr *sa = tp_addr_with_port(p->port, &ss);
	if (TP_OK(ops->resolve(p->cli.id, sa, tp.addrlen)) < 0)
		return -1;
	if (tp_side_create_qp(p, &p->cli, o) < 0)
		return -1;
	if (post_side_recvs(p, &p->cli, &p->cli_recv_buf, o->cli_recvs) < 0)
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = o->cli_pd;
	cp.private_data_len = o->cli_pd_len;
	cp.responder_resources = o->cli_ird ? o->cli_ird : tp_default_ird();
	cp.initiator_depth = o->cli_ord ? o->cli_ord : tp_default_ord();
	if (TP_OK(ops->connect(p->cli.id, &cp)) < 0)
		return -1;

	if (tp_expect_cm(p->srv.ch, RPCRDMA_CM_EVENT_CONNECT_REQUEST, to,
			 &p->srv.ev) < 0)
		return -1;
	TP_CHECK(p->srv.ev.listen_id == p->listen_id,
		 "CONNECT_REQUEST listen_id %p, listener %p",
		 (void *)p->srv.ev.listen_id, (void *)p->listen_id);
	TP_CHECK(p->srv.ev.id && p->srv.ev.id != p->listen_id,
		 "CONNECT_REQUEST must carry a new id");
	p->srv.id = p->srv.ev.id;
	if (!p->srv.id)
		return -1;
	if (tp_side_create_qp(p, &p->srv, o) < 0)
		return -1;
	if (post_side_recvs(p, &p->srv, &p->srv_recv_buf, o->srv_recvs) < 0)
		return -1;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = o->srv_pd;
	cp.private_data_len = o->srv_pd_len;
	cp.responder_resources = o->srv_ird ? o->srv_ird : tp_default_ird();
	cp.initiator_depth = o->srv_ord ? o->srv_ord : tp_default_ord();
	if (TP_OK(ops->accept(p->srv.id, &cp)) < 0)
		return -1;
	/* Both channels are serviced together: on IB/RoCE the passive side's
	 * ESTABLISHED follows the RTU, which librdmacm sends only while the
	 * active side's consumer reads its channel (the CONNECT_RESPONSE it
	 * turns into ESTABLISHED), so waiting for the server first would
	 * stall until the CM's REP time-out. */
	struct tp_cm_ev ev;
	bool srv_est = false, cli_est = false;
	uint64_t end = tp_now_ms() + (uint64_t)to;
	while (!srv_est || !cli_est) {
		bool progress = false;
		if (!srv_est && tp_wait_cm(p->srv.ch, 0, &ev) == 0) {
			progress = true;
			if (!TP_CHECK(ev.type == RPCRDMA_CM_EVENT_ESTABLISHED,
				      "server: expected ESTABLISHED, got %s "
				      "(status %d)", tp_cm_event_str(ev.type),
				      ev.status))
				return -1;
			TP_CHECK(ev.id == p->srv.id,
				 "server ESTABLISHED on id %p, not %p",
				 (void *)ev.id, (void *)p->srv.id);
			srv_est = true;
		}
		if (!cli_est && tp_wait_cm(p->cli.ch, 0, &p->cli.ev) == 0) {
			progress = true;
			if (!TP_CHECK(p->cli.ev.type ==
					      RPCRDMA_CM_EVENT_ESTABLISHED,
				      "client: expected ESTABLISHED, got %s "
				      "(status %d)",
				      tp_cm_event_str(p->cli.ev.type),
				      p->cli.ev.status))
				return -1;
			TP_CHECK(p->cli.ev.id == p->cli.id,
				 "client ESTABLISHED on id %p, not %p",
				 (void *)p->cli.ev.id, (void *)p->cli.id);
			cli_est = true;
		}
		if (progress)
			continue;
		if (tp_now_ms() >= end) {
			TP_CHECK(0, "ESTABLISHED within %d ms: server %s, "
				 "client %s", to, srv_est ? "yes" : "no",
				 cli_est ? "yes" : "no");
			return -1;
		}
		struct pollfd pfd[2] = {
			{ .fd = p->srv.ch->fd, .events = POLLIN },
			{ .fd = p->cli.ch->fd, .events = POLLIN },
		};
		(void)poll(pfd, 2, 20);
	}
	return 0;
}

int tp_pair_up(struct tp_pair *p, const struct tp_conn_opts *o)
{
	if (tp_pair_open(p, o) < 0)
		return -1;
	return tp_pair_connect(p, o);
}

struct tp_buf *tp_pair_buf(struct tp_pair *p, struct tp_side *s,
			   size_t len, unsigned access, size_t guard)
{
	if (p->nbufs >= (int)(sizeof(p->bufs) / sizeof(p->bufs[0]))) {
		tp_check_fail(__FILE__, __LINE__, "nbufs", "too many bufs");
		return NULL;
	}
	struct tp_buf *b = &p->bufs[p->nbufs];
	if (tp_buf_alloc(s->pd, len, access, guard, b) < 0)
		return NULL;
	p->nbufs++;
	return b;
}

/* Reads whatever events both sides have for up to quiet_ms, noting
 * DISCONNECTED, until `s` has seen it.  Servicing the peer's channel too
 * matters on IB/RoCE: the DREP that ends the disconnecting side's wait is
 * sent when the peer's consumer reads its DISCONNECTED. */
static void pair_wait_disconnected(struct tp_pair *p, struct tp_side *s,
				   int timeout_ms)
{
	struct tp_side *sides[2] = { &p->cli, &p->srv };
	uint64_t end = tp_now_ms() + (uint64_t)timeout_ms;

	while (!s->disconnected && tp_now_ms() < end) {
		bool progress = false;
		for (int i = 0; i < 2; i++) {
			struct tp_cm_ev ev;
			if (!sides[i]->ch || !sides[i]->id || !sides[i]->qp)
				continue;
			if (tp_wait_cm(sides[i]->ch, 0, &ev) < 0)
				continue;
			progress = true;
			if (ev.type == RPCRDMA_CM_EVENT_DISCONNECTED)
				sides[i]->disconnected = true;
		}
		if (progress)
			continue;
		struct pollfd pfd[2];
		int n = 0;
		for (int i = 0; i < 2; i++)
			if (sides[i]->ch && sides[i]->id && sides[i]->qp)
				pfd[n++] = (struct pollfd){
					.fd = sides[i]->ch->fd,
					.events = POLLIN };
		(void)poll(pfd, (nfds_t)n, 20);
	}
}

static void side_disconnect(struct tp_pair *p, struct tp_side *s)
{
	if (!s->id || !s->qp || s->disconnected)
		return;
	s->dev->ops->disconnect(s->id);
	pair_wait_disconnected(p, s, 1500);
}

static void side_close(struct tp_side *s, struct rpcrdma_cm_id *listen)
{
	const struct rpcrdma_provider_ops *ops = s->dev ? s->dev->ops : NULL;

	if (!ops)
		return;
	if (s->qp)
		ops->destroy_qp(s->qp);
	if (s->id)
		ops->destroy_id(s->id);
	if (listen)
		ops->destroy_id(listen);
	s->qp = NULL;
	s->id = NULL;
}

static void side_free(struct tp_side *s)
{
	const struct rpcrdma_provider_ops *ops = s->dev ? s->dev->ops : NULL;

	if (!ops)
		return;
	if (s->scq)
		ops->destroy_cq(s->scq);
	if (s->rcq)
		ops->destroy_cq(s->rcq);
	if (s->pd)
		TP_OK(ops->dealloc_pd(s->pd));
	if (s->ch)
		ops->destroy_channel(s->ch);
	memset(s, 0, sizeof(*s));
}

void tp_pair_close(struct tp_pair *p)
{
	side_disconnect(p, &p->cli);
	side_disconnect(p, &p->srv);
	side_close(&p->cli, NULL);
	side_close(&p->srv, p->listen_id);
	p->listen_id = NULL;
	for (int i = 0; i < p->nbufs; i++)
		tp_buf_free(&p->bufs[i]);
	p->nbufs = 0;
	if (p->srv_recv_buf.mem)
		tp_buf_free(&p->srv_recv_buf);
	if (p->cli_recv_buf.mem)
		tp_buf_free(&p->cli_recv_buf);
	side_free(&p->cli);
	side_free(&p->srv);
}

/* ------------------------------------------------------------------ */

int tp_post_recv1(struct rpcrdma_qp *qp, uint64_t wr_id, void *addr,
		  uint32_t len, uint32_t lkey)
{
	struct rpcrdma_sge sge = { .addr = tp_addr(addr), .length = len,
				   .lkey = lkey };
	struct rpcrdma_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				      .num_sge = 1 };
	struct rpcrdma_recv_wr *bad = NULL;

	return TP_OK(rpcrdma_post_recv(qp, &wr, &bad));
}

int tp_try_send1(struct rpcrdma_qp *qp, uint64_t wr_id,
		 enum rpcrdma_wr_opcode op, unsigned flags, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 uint32_t inv_rkey)
{
	struct rpcrdma_sge sge = { .addr = tp_addr(addr), .length = len,
				   .lkey = lkey };
	struct rpcrdma_send_wr wr;
	struct rpcrdma_send_wr *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = addr ? &sge : NULL;
	wr.num_sge = addr ? 1 : 0;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.rdma.remote_addr = raddr;
	wr.rdma.rkey = rkey;
	wr.invalidate_rkey = inv_rkey;
	return rpcrdma_post_send(qp, &wr, &bad);
}

int tp_post_send1(struct rpcrdma_qp *qp, uint64_t wr_id,
		  enum rpcrdma_wr_opcode op, unsigned flags, void *addr,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		  uint32_t inv_rkey)
{
	int rc = tp_try_send1(qp, wr_id, op, flags, addr, len, lkey, raddr,
			      rkey, inv_rkey);
	if (rc < 0)
		tp_check_fail(__FILE__, __LINE__, "post_send",
			      "wr_id %#llx opcode %d: %d (%s)",
			      (unsigned long long)wr_id, op, rc,
			      rpcrdma_strerror(rc));
	return rc;
}

int tp_wait_terminate(struct rpcrdma_qp *qp, int timeout_ms,
		      struct rpcrdma_terminate_info *ti)
{
	uint64_t end = tp_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		memset(ti, 0, sizeof(*ti));
		int rc = qp->dev->ops->get_terminate(qp, ti);
		if (rc == RPCRDMA_ERR_NOTSUP)
			return 0;
		if (rc == 0 && ti->valid)
			return 1;
		if (tp_now_ms() >= end)
			return -1;
		usleep(5000);
	}
}
