/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The in-memory provider of fake_provider.h.  Work requests execute at
 * post time on the posting thread: that is all a connection layer test
 * needs (the arrival of a completion is what it reacts to), and it keeps
 * every test deterministic, since nothing moves unless a test or the
 * library posts.
 */
#include "fake_provider.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <netinet/in.h>

struct fake_net fake_net = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------------------------
 * Objects
 */
struct fdev {
	struct rpcrdma_dev base;
};

struct fpd {
	struct rpcrdma_pd base;
};

/* CM events a test posts (fake_cm_post), taken in order; the fd is
 * readable while one waits, as a provider's is (provider.h). */
#define FAKE_CM_QUEUE 256u

struct fch {
	struct rpcrdma_cm_channel base;
	pthread_mutex_t lock;
	struct rpcrdma_cm_event *q[FAKE_CM_QUEUE];
	unsigned head, n;
};

/* Registrations live in a table indexed by the key's upper 24 bits (as
 * an STag, provider.h); the low 8 bits change on every reuse of a slot,
 * so a key that was deregistered never names the next registration. */
#define FAKE_MR_SLOTS 8192u

struct fmr {
	struct rpcrdma_mr base;
	bool rvalid;                 /* the rkey still gives remote access */
};

static struct fmr *mr_tab[FAKE_MR_SLOTS];
static uint8_t mr_gen[FAKE_MR_SLOTS];

struct fcq {
	struct rpcrdma_cq base;
	int efd;
	bool armed;
	struct rpcrdma_wc *ring;
	unsigned cap, head, count;
	bool overflow;
	struct fake_cq_stats st;
};

struct frecv {
	uint64_t wr_id;
	int nsge;
	struct rpcrdma_sge sge[4];
};

struct fqp {
	struct rpcrdma_qp base;
	struct fqp *peer;
	bool error;
	struct frecv *rq;
	unsigned rq_cap, rq_head, rq_count;
};

/* ---------------------------------------------------------------------
 * Helpers (fake_net.lock held)
 */
static void push_wc(struct rpcrdma_cq *cq, struct fqp *qp, uint64_t wr_id,
		    enum rpcrdma_wc_status st, enum rpcrdma_wc_opcode op,
		    uint32_t byte_len, unsigned flags, uint32_t inv)
{
	struct fcq *c = (struct fcq *)cq;
	if (c->count == c->cap) {
		/* A CQ sized too small loses a completion: poll_cq says so
		 * (provider.h, RPCRDMA_ERR_OVERFLOW). */
		c->overflow = true;
		fake_net.violations++;
		return;
	}
	struct rpcrdma_wc *wc = &c->ring[(c->head + c->count++) % c->cap];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = st;
	wc->opcode = op;
	wc->byte_len = byte_len;
	wc->wc_flags = flags;
	wc->invalidated_rkey = inv;
	wc->qp = &qp->base;
	c->st.pushed++;
	if (c->armed) {
		/* One event per arm, as a verbs completion channel gives. */
		c->armed = false;
		c->st.events++;
		uint64_t one = 1;
		ssize_t r = write(c->efd, &one, sizeof(one));
		(void)r;
	}
}

static struct fmr *mr_find(uint32_t key)
{
	uint32_t idx = key >> 8;
	if (idx == 0 || idx >= FAKE_MR_SLOTS || !mr_tab[idx])
		return NULL;
	struct fmr *m = mr_tab[idx];
	return m->base.lkey == key ? m : NULL;
}

static bool in_range(const struct fmr *m, uint64_t addr, uint64_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)m->base.addr;
	return addr >= a && len <= m->base.length &&
	       addr - a <= m->base.length - len;
}

/* Local access through an SGE of a QP of pd. */
static uint8_t *local_ptr(struct rpcrdma_pd *pd, const struct rpcrdma_sge *s)
{
	struct fmr *m = mr_find(s->lkey);
	if (!m || m->base.pd != pd || !in_range(m, s->addr, s->length))
		return NULL;
	return (uint8_t *)(uintptr_t)s->addr;
}

/* Remote access of the peer (pd) through an rkey. */
static uint8_t *remote_ptr(struct rpcrdma_pd *pd, uint32_t rkey, uint64_t addr,
			   uint64_t len, unsigned need)
{
	struct fmr *m = mr_find(rkey);
	if (!m || m->base.pd != pd || !m->rvalid || !(m->base.access & need) ||
	    !in_range(m, addr, len))
		return NULL;
	return (uint8_t *)(uintptr_t)addr;
}

static size_t sge_total(const struct rpcrdma_sge *s, int n)
{
	size_t t = 0;
	for (int i = 0; i < n; i++)
		t += s[i].length;
	return t;
}

static enum rpcrdma_wc_opcode wc_op(enum rpcrdma_wr_opcode op)
{
	switch (op) {
	case RPCRDMA_WR_RDMA_WRITE:
		return RPCRDMA_WC_RDMA_WRITE;
	case RPCRDMA_WR_RDMA_READ:
		return RPCRDMA_WC_RDMA_READ;
	case RPCRDMA_WR_LOCAL_INV:
		return RPCRDMA_WC_LOCAL_INV;
	case RPCRDMA_WR_BIND_MW:
		return RPCRDMA_WC_BIND_MW;
	default:
		return RPCRDMA_WC_SEND;
	}
}

/* The QP breaks: what is posted completes flushed. */
static void flush_locked(struct fqp *q)
{
	q->error = true;
	while (q->rq_count) {
		struct frecv *r = &q->rq[q->rq_head];
		q->rq_head = (q->rq_head + 1) % q->rq_cap;
		q->rq_count--;
		push_wc(q->base.recv_cq, q, r->wr_id, RPCRDMA_WC_WR_FLUSH_ERR,
			RPCRDMA_WC_RECV, 0, 0, 0);
	}
}

/* A Send lands in the peer's oldest posted receive (RFC 5040 untagged
 * placement; on iWARP a Send with none posted is fatal). */
static enum rpcrdma_wc_status deliver_send(struct fqp *q,
					   const struct rpcrdma_send_wr *wr)
{
	struct fqp *p = q->peer;
	size_t n = sge_total(wr->sg_list, wr->num_sge);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return RPCRDMA_WC_GENERAL_ERR;
	size_t o = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		uint8_t *src = local_ptr(q->base.pd, &wr->sg_list[i]);
		if (!src) {
			free(buf);
			fake_net.violations++;
			return RPCRDMA_WC_LOC_PROT_ERR;
		}
		memcpy(buf + o, src, wr->sg_list[i].length);
		o += wr->sg_list[i].length;
	}
	if (!p || p->error) {
		free(buf);
		return RPCRDMA_WC_WR_FLUSH_ERR;
	}
	if (!p->rq_count) {
		free(buf);
		fake_net.violations++;
		return RPCRDMA_WC_RNR_RETRY_EXC_ERR;
	}
	struct frecv r = p->rq[p->rq_head];
	p->rq_head = (p->rq_head + 1) % p->rq_cap;
	p->rq_count--;
	if (n > sge_total(r.sge, r.nsge)) {
		free(buf);
		fake_net.violations++;
		push_wc(p->base.recv_cq, p, r.wr_id, RPCRDMA_WC_LOC_LEN_ERR,
			RPCRDMA_WC_RECV, 0, 0, 0);
		return RPCRDMA_WC_REM_OP_ERR;
	}
	o = 0;
	for (int i = 0; i < r.nsge && o < n; i++) {
		uint8_t *dst = local_ptr(p->base.pd, &r.sge[i]);
		size_t k = n - o < r.sge[i].length ? n - o : r.sge[i].length;
		if (!dst) {
			fake_net.violations++;
			break;
		}
		memcpy(dst, buf + o, k);
		o += k;
	}
	free(buf);
	unsigned flags = 0;
	uint32_t inv = 0;
	if (wr->opcode == RPCRDMA_WR_SEND_WITH_INV) {
		struct fmr *m = mr_find(wr->invalidate_rkey);
		if (!m || m->base.pd != p->base.pd || !m->rvalid)
			fake_net.violations++;
		else
			m->rvalid = false;
		flags = RPCRDMA_WC_WITH_INV;
		inv = wr->invalidate_rkey;
	}
	push_wc(p->base.recv_cq, p, r.wr_id, RPCRDMA_WC_SUCCESS,
		RPCRDMA_WC_RECV, (uint32_t)n, flags, inv);
	return RPCRDMA_WC_SUCCESS;
}

/* RDMA Write (to the peer's memory) and Read (from it). */
static enum rpcrdma_wc_status do_rdma(struct fqp *q,
				      const struct rpcrdma_send_wr *wr)
{
	struct fqp *p = q->peer;
	if (!p || p->error)
		return RPCRDMA_WC_WR_FLUSH_ERR;
	bool write = wr->opcode == RPCRDMA_WR_RDMA_WRITE;
	size_t n = sge_total(wr->sg_list, wr->num_sge);
	uint8_t *rem = remote_ptr(p->base.pd, wr->rdma.rkey,
				  wr->rdma.remote_addr, n,
				  write ? RPCRDMA_ACCESS_REMOTE_WRITE
					: RPCRDMA_ACCESS_REMOTE_READ);
	if (!rem) {
		fake_net.violations++;
		return RPCRDMA_WC_REM_ACCESS_ERR;
	}
	for (int i = 0; i < wr->num_sge; i++) {
		uint8_t *loc = local_ptr(q->base.pd, &wr->sg_list[i]);
		if (!loc) {
			fake_net.violations++;
			return RPCRDMA_WC_LOC_PROT_ERR;
		}
		if (write)
			memcpy(rem, loc, wr->sg_list[i].length);
		else
			memcpy(loc, rem, wr->sg_list[i].length);
		rem += wr->sg_list[i].length;
	}
	return RPCRDMA_WC_SUCCESS;
}

/* ---------------------------------------------------------------------
 * Device
 */
static int f_query(struct rpcrdma_dev *dev, struct rpcrdma_dev_attr *a)
{
	(void)dev;
	memset(a, 0, sizeof(*a));
	strcpy(a->name, "fake");
	a->max_qp_wr = 16384;
	a->max_sge = 4;
	a->max_cqe = 1u << 20;
	a->max_mr_size = 1ull << 32;
	a->max_msg_size = 1u << 30;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_private_data = 56;
	a->max_sge_rd = 4;
	/* No windows, no invalidation work requests: chunks are plain MRs
	 * and releasing one deregisters it (rpc/invalidate.c), the simplest
	 * strategy, and the one that needs nothing of the fake but MRs. */
	a->caps = 0;
	return 0;
}

static int f_open(const struct rpcrdma_dev_params *p, struct rpcrdma_dev **out)
{
	(void)p;
	struct fdev *d = calloc(1, sizeof(*d));
	if (!d)
		return RPCRDMA_ERR_NOMEM;
	d->base.ops = &fake_ops;
	*out = &d->base;
	return 0;
}

static void f_close(struct rpcrdma_dev *dev)
{
	free(dev);
}

static int f_alloc_pd(struct rpcrdma_dev *dev, struct rpcrdma_pd **out)
{
	struct fpd *p = calloc(1, sizeof(*p));
	if (!p)
		return RPCRDMA_ERR_NOMEM;
	p->base.dev = dev;
	*out = &p->base;
	return 0;
}

static int f_dealloc_pd(struct rpcrdma_pd *pd)
{
	free(pd);
	return 0;
}

/* ---------------------------------------------------------------------
 * Memory
 */
static int f_reg_mr(struct rpcrdma_pd *pd, void *addr, size_t length,
		    unsigned access, struct rpcrdma_mr **out)
{
	struct fmr *m = calloc(1, sizeof(*m));
	if (!m)
		return RPCRDMA_ERR_NOMEM;
	pthread_mutex_lock(&fake_net.lock);
	uint32_t idx = 1;
	while (idx < FAKE_MR_SLOTS && mr_tab[idx])
		idx++;
	if (idx == FAKE_MR_SLOTS) {
		pthread_mutex_unlock(&fake_net.lock);
		free(m);
		return RPCRDMA_ERR_NOMEM;
	}
	uint32_t key = rpcrdma_stag(idx, ++mr_gen[idx]);
	m->base = (struct rpcrdma_mr){pd, addr, length, key, key, access};
	m->rvalid = (access & (RPCRDMA_ACCESS_REMOTE_READ |
			       RPCRDMA_ACCESS_REMOTE_WRITE)) != 0;
	mr_tab[idx] = m;
	fake_net.live_mrs++;
	pthread_mutex_unlock(&fake_net.lock);
	*out = &m->base;
	return 0;
}

static int f_dereg_mr(struct rpcrdma_mr *mr)
{
	pthread_mutex_lock(&fake_net.lock);
	uint32_t idx = mr->lkey >> 8;
	if (idx < FAKE_MR_SLOTS && mr_tab[idx] == (struct fmr *)mr)
		mr_tab[idx] = NULL;
	else
		fake_net.violations++;
	fake_net.live_mrs--;
	pthread_mutex_unlock(&fake_net.lock);
	free(mr);
	return 0;
}

static int f_alloc_mw(struct rpcrdma_pd *pd, struct rpcrdma_mw **out)
{
	(void)pd;
	(void)out;
	return RPCRDMA_ERR_NOTSUP;
}

static int f_dealloc_mw(struct rpcrdma_mw *mw)
{
	(void)mw;
	return RPCRDMA_ERR_NOTSUP;
}

/* ---------------------------------------------------------------------
 * Completion queues
 */
static int f_create_cq(struct rpcrdma_dev *dev, int cqe, void *context,
		       struct rpcrdma_cq **out)
{
	struct fcq *c = calloc(1, sizeof(*c));
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	c->cap = cqe > 0 ? (unsigned)cqe : 1;
	c->ring = calloc(c->cap, sizeof(*c->ring));
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!c->ring || c->efd < 0) {
		int rc = c->ring ? RPCRDMA_ERR_SYSTEM : RPCRDMA_ERR_NOMEM;
		if (c->efd >= 0)
			close(c->efd);
		free(c->ring);
		free(c);
		return rc;
	}
	c->base = (struct rpcrdma_cq){dev, context, cqe};
	pthread_mutex_lock(&fake_net.lock);
	fake_net.live_cqs++;
	pthread_mutex_unlock(&fake_net.lock);
	*out = &c->base;
	return 0;
}

static int f_destroy_cq(struct rpcrdma_cq *cq)
{
	struct fcq *c = (struct fcq *)cq;
	pthread_mutex_lock(&fake_net.lock);
	fake_net.live_cqs--;
	pthread_mutex_unlock(&fake_net.lock);
	close(c->efd);
	free(c->ring);
	free(c);
	return 0;
}

static int f_poll_cq(struct rpcrdma_cq *cq, int n, struct rpcrdma_wc *wc)
{
	struct fcq *c = (struct fcq *)cq;
	pthread_mutex_lock(&fake_net.lock);
	c->st.polls++;
	int got = 0;
	while (got < n && c->count) {
		wc[got++] = c->ring[c->head];
		c->head = (c->head + 1) % c->cap;
		c->count--;
	}
	bool lost = c->overflow && !got;
	pthread_mutex_unlock(&fake_net.lock);
	return lost ? RPCRDMA_ERR_OVERFLOW : got;
}

static int f_req_notify_cq(struct rpcrdma_cq *cq)
{
	struct fcq *c = (struct fcq *)cq;
	pthread_mutex_lock(&fake_net.lock);
	c->armed = true;
	c->st.notifies++;
	/* provider.h: 0 when nothing can be queued already (the consumer
	 * may sleep at once), 1 when something may be. */
	int rc = fake_net.notify_always || c->count ? 1 : 0;
	if (rc)
		c->st.notify_said_1++;
	pthread_mutex_unlock(&fake_net.lock);
	return rc;
}

static int f_cq_fd(struct rpcrdma_cq *cq)
{
	return ((struct fcq *)cq)->efd;
}

static int f_ack_cq_events(struct rpcrdma_cq *cq)
{
	uint64_t v;
	ssize_t r = read(((struct fcq *)cq)->efd, &v, sizeof(v));
	(void)r;
	return 0;
}

void fake_cq_stats(struct rpcrdma_cq *cq, struct fake_cq_stats *out)
{
	struct fcq *c = (struct fcq *)cq;
	pthread_mutex_lock(&fake_net.lock);
	*out = c->st;
	out->queued = c->count;
	out->armed = c->armed;
	pthread_mutex_unlock(&fake_net.lock);
}

/* ---------------------------------------------------------------------
 * Queue pairs
 */
static int f_create_qp(struct rpcrdma_cm_id *id, struct rpcrdma_pd *pd,
		       const struct rpcrdma_qp_attr *a, struct rpcrdma_qp **out)
{
	struct fqp *q = calloc(1, sizeof(*q));
	if (!q)
		return RPCRDMA_ERR_NOMEM;
	q->rq_cap = a->max_recv_wr ? a->max_recv_wr : 1;
	q->rq = calloc(q->rq_cap, sizeof(*q->rq));
	if (!q->rq) {
		free(q);
		return RPCRDMA_ERR_NOMEM;
	}
	q->base = (struct rpcrdma_qp){
		.dev = id->dev, .pd = pd, .id = id, .send_cq = a->send_cq,
		.recv_cq = a->recv_cq, .context = a->context,
		.max_send_wr = a->max_send_wr, .max_recv_wr = a->max_recv_wr,
		.max_send_sge = a->max_send_sge, .max_recv_sge = a->max_recv_sge,
	};
	id->qp = &q->base;
	pthread_mutex_lock(&fake_net.lock);
	fake_net.live_qps++;
	pthread_mutex_unlock(&fake_net.lock);
	*out = &q->base;
	return 0;
}

static int f_destroy_qp(struct rpcrdma_qp *qp)
{
	struct fqp *q = (struct fqp *)qp;
	pthread_mutex_lock(&fake_net.lock);
	if (q->peer)
		q->peer->peer = NULL;
	fake_net.live_qps--;
	pthread_mutex_unlock(&fake_net.lock);
	if (qp->id && qp->id->qp == qp)
		qp->id->qp = NULL;
	free(q->rq);
	free(q);
	return 0;
}

static int f_post_recv(struct rpcrdma_qp *qp, struct rpcrdma_recv_wr *wr,
		       struct rpcrdma_recv_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;
	int rc = 0;
	pthread_mutex_lock(&fake_net.lock);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > 4) {
			rc = RPCRDMA_ERR_INVAL;
			break;
		}
		if (q->error) {
			push_wc(qp->recv_cq, q, wr->wr_id,
				RPCRDMA_WC_WR_FLUSH_ERR, RPCRDMA_WC_RECV, 0, 0,
				0);
			continue;
		}
		if (q->rq_count == q->rq_cap) {
			fake_net.violations++;
			rc = RPCRDMA_ERR_NOSPACE;
			break;
		}
		for (int i = 0; i < wr->num_sge; i++)
			if (!local_ptr(qp->pd, &wr->sg_list[i]))
				fake_net.violations++;
		struct frecv *r = &q->rq[(q->rq_head + q->rq_count++) % q->rq_cap];
		r->wr_id = wr->wr_id;
		r->nsge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(r->sge[0]));
	}
	pthread_mutex_unlock(&fake_net.lock);
	if (rc < 0 && bad)
		*bad = wr;
	return rc;
}

static int f_post_send(struct rpcrdma_qp *qp, struct rpcrdma_send_wr *wr,
		       struct rpcrdma_send_wr **bad)
{
	struct fqp *q = (struct fqp *)qp;
	int rc = 0;
	pthread_mutex_lock(&fake_net.lock);
	for (; wr; wr = wr->next) {
		enum rpcrdma_wc_status st = RPCRDMA_WC_SUCCESS;
		if (wr->opcode == RPCRDMA_WR_BIND_MW) {
			rc = RPCRDMA_ERR_NOTSUP; /* no windows (f_query) */
			break;
		}
		if (q->error) {
			st = RPCRDMA_WC_WR_FLUSH_ERR;
		} else {
			switch (wr->opcode) {
			case RPCRDMA_WR_SEND:
			case RPCRDMA_WR_SEND_WITH_INV:
				st = deliver_send(q, wr);
				break;
			case RPCRDMA_WR_RDMA_WRITE:
			case RPCRDMA_WR_RDMA_READ:
				st = do_rdma(q, wr);
				break;
			case RPCRDMA_WR_LOCAL_INV: {
				struct fmr *m = mr_find(wr->invalidate_rkey);
				if (!m || m->base.pd != qp->pd)
					fake_net.violations++;
				else
					m->rvalid = false;
				break;
			}
			default:
				st = RPCRDMA_WC_GENERAL_ERR;
				break;
			}
		}
		/* An error completes every work request, signalled or not,
		 * and breaks the QP (verbs: it goes to the error state). */
		if (st != RPCRDMA_WC_SUCCESS) {
			if (st != RPCRDMA_WC_WR_FLUSH_ERR)
				flush_locked(q);
			q->error = true;
		}
		if (st != RPCRDMA_WC_SUCCESS ||
		    (wr->send_flags & RPCRDMA_SEND_SIGNALED))
			push_wc(qp->send_cq, q, wr->wr_id, st, wc_op(wr->opcode),
				0, 0, 0);
	}
	pthread_mutex_unlock(&fake_net.lock);
	if (rc < 0 && bad)
		*bad = wr;
	return rc;
}

void fake_qp_pair(struct rpcrdma_qp *a, struct rpcrdma_qp *b)
{
	pthread_mutex_lock(&fake_net.lock);
	((struct fqp *)a)->peer = (struct fqp *)b;
	((struct fqp *)b)->peer = (struct fqp *)a;
	pthread_mutex_unlock(&fake_net.lock);
}

void fake_qp_break(struct rpcrdma_qp *qp)
{
	struct fqp *q = (struct fqp *)qp;
	pthread_mutex_lock(&fake_net.lock);
	flush_locked(q);
	if (q->peer)
		flush_locked(q->peer);
	pthread_mutex_unlock(&fake_net.lock);
}

static int f_get_terminate(struct rpcrdma_qp *qp,
			   struct rpcrdma_terminate_info *info)
{
	(void)qp;
	(void)info;
	return RPCRDMA_ERR_NOTSUP;
}

/* ---------------------------------------------------------------------
 * Connection manager: ids only (the tests connect QPs themselves)
 */
static int f_create_channel(struct rpcrdma_dev *dev,
			    struct rpcrdma_cm_channel **out)
{
	struct fch *c = calloc(1, sizeof(*c));
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	c->base.dev = dev;
	c->base.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->base.fd < 0) {
		free(c);
		return RPCRDMA_ERR_SYSTEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = &c->base;
	return 0;
}

static int f_destroy_channel(struct rpcrdma_cm_channel *ch)
{
	struct fch *c = (struct fch *)ch;
	close(ch->fd);
	pthread_mutex_destroy(&c->lock);
	free(ch);
	return 0;
}

int fake_cm_post(struct rpcrdma_cm_channel *ch, struct rpcrdma_cm_event *ev)
{
	struct fch *c = (struct fch *)ch;
	int rc = -1;
	pthread_mutex_lock(&c->lock);
	if (c->n < FAKE_CM_QUEUE) {
		c->q[(c->head + c->n++) % FAKE_CM_QUEUE] = ev;
		uint64_t one = 1;
		rc = write(ch->fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int f_get_cm_event(struct rpcrdma_cm_channel *ch,
			  struct rpcrdma_cm_event **ev)
{
	struct fch *c = (struct fch *)ch;
	*ev = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->n) {
		*ev = c->q[c->head];
		c->head = (c->head + 1) % FAKE_CM_QUEUE;
		c->n--;
	}
	if (!c->n) {
		/* Nothing left: the fd stops being readable. */
		uint64_t v;
		ssize_t r = read(ch->fd, &v, sizeof(v));
		(void)r;
	}
	pthread_mutex_unlock(&c->lock);
	return *ev ? 0 : RPCRDMA_ERR_AGAIN;
}

static int f_ack_cm_event(struct rpcrdma_cm_event *ev)
{
	(void)ev;
	return 0;
}

static int f_create_id(struct rpcrdma_cm_channel *ch, void *context,
		       struct rpcrdma_cm_id **out)
{
	struct rpcrdma_cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return RPCRDMA_ERR_NOMEM;
	id->dev = ch->dev;
	id->channel = ch;
	id->context = context;
	pthread_mutex_lock(&fake_net.lock);
	fake_net.live_ids++;
	pthread_mutex_unlock(&fake_net.lock);
	*out = id;
	return 0;
}

static int f_destroy_id(struct rpcrdma_cm_id *id)
{
	pthread_mutex_lock(&fake_net.lock);
	fake_net.live_ids--;
	fake_net.ids_destroyed++;
	pthread_mutex_unlock(&fake_net.lock);
	free(id);
	return 0;
}

static int f_no_addr(struct rpcrdma_cm_id *id, const struct sockaddr *a,
		     socklen_t l)
{
	(void)id;
	(void)a;
	(void)l;
	return RPCRDMA_ERR_NOTSUP;
}

static int f_listen(struct rpcrdma_cm_id *id, const struct sockaddr *a,
		    socklen_t l, int backlog)
{
	(void)backlog;
	return f_no_addr(id, a, l);
}

static int f_no_conn(struct rpcrdma_cm_id *id,
		     const struct rpcrdma_conn_param *p)
{
	(void)id;
	(void)p;
	return RPCRDMA_ERR_NOTSUP;
}

static int f_reject(struct rpcrdma_cm_id *id, const void *pd, uint8_t len)
{
	(void)id;
	(void)pd;
	(void)len;
	return 0;
}

static int f_disconnect(struct rpcrdma_cm_id *id)
{
	pthread_mutex_lock(&fake_net.lock);
	fake_net.disconnects++;
	pthread_mutex_unlock(&fake_net.lock);
	if (id->qp)
		fake_qp_break(id->qp);
	return 0;
}

const struct rpcrdma_provider_ops fake_ops = {
	.name = "fake",
	.open = f_open,
	.close = f_close,
	.query = f_query,
	.alloc_pd = f_alloc_pd,
	.dealloc_pd = f_dealloc_pd,
	.reg_mr = f_reg_mr,
	.dereg_mr = f_dereg_mr,
	.alloc_mw = f_alloc_mw,
	.dealloc_mw = f_dealloc_mw,
	.create_cq = f_create_cq,
	.destroy_cq = f_destroy_cq,
	.poll_cq = f_poll_cq,
	.req_notify_cq = f_req_notify_cq,
	.cq_fd = f_cq_fd,
	.ack_cq_events = f_ack_cq_events,
	.create_qp = f_create_qp,
	.destroy_qp = f_destroy_qp,
	.post_send = f_post_send,
	.post_recv = f_post_recv,
	.get_terminate = f_get_terminate,
	.create_channel = f_create_channel,
	.destroy_channel = f_destroy_channel,
	.get_cm_event = f_get_cm_event,
	.ack_cm_event = f_ack_cm_event,
	.create_id = f_create_id,
	.destroy_id = f_destroy_id,
	.resolve = f_no_addr,
	.listen = f_listen,
	.connect = f_no_conn,
	.accept = f_no_conn,
	.reject = f_reject,
	.disconnect = f_disconnect,
};

/* ---------------------------------------------------------------------
 * For the tests
 */
void fake_net_reset(void)
{
	pthread_mutex_lock(&fake_net.lock);
	fake_net.notify_always = false;
	fake_net.violations = 0;
	fake_net.ids_destroyed = 0;
	fake_net.disconnects = 0;
	pthread_mutex_unlock(&fake_net.lock);
}

int fake_open(struct rpcrdma_dev **dev, struct rpcrdma_pd **pd,
	      struct rpcrdma_cm_channel **ch, struct rpcrdma_dev_attr *attr)
{
	*pd = NULL;
	*ch = NULL;
	int rc = f_open(NULL, dev);
	if (rc < 0)
		return rc;
	f_query(*dev, attr);
	rc = f_alloc_pd(*dev, pd);
	if (rc == 0)
		rc = f_create_channel(*dev, ch);
	if (rc < 0) {
		if (*pd)
			f_dealloc_pd(*pd);
		f_close(*dev);
	}
	return rc;
}

void fake_close(struct rpcrdma_dev *dev, struct rpcrdma_pd *pd,
		struct rpcrdma_cm_channel *ch)
{
	f_destroy_channel(ch);
	f_dealloc_pd(pd);
	f_close(dev);
}

struct rpcrdma_cm_id *fake_id_new(struct rpcrdma_dev *dev,
				  struct rpcrdma_cm_channel *ch, uint16_t port)
{
	(void)dev;
	struct rpcrdma_cm_id *id = NULL;
	if (f_create_id(ch, NULL, &id) < 0)
		return NULL;
	struct sockaddr_in *sin = (struct sockaddr_in *)&id->peer_addr;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(0x7f000001);
	return id;
}
