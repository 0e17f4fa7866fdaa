/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A fake RDMA "wire" for engine tests: two engines back to back in memory.
 * It executes the work requests the engines hand out: Sends land in the
 * peer's posted receives (in order), RDMA Read/Write move bytes between
 * fake registrations after checking rkey, access and bounds, LOCAL_INV
 * and Send With Invalidate kill rkeys.  Every violation is counted in
 * fake.violations so tests can CHECK it is zero.
 */
#ifndef TEST_ENGINE_FAKE_H
#define TEST_ENGINE_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "wire/cm_private_data.h"
#include "wire/xdr.h"

#define FAKE_MAX_MR 65536
#define FAKE_MAX_POSTED 4096
#define FAKE_MAX_CQ 8192

struct fake_mr {
	bool used;
	int owner;        /* side id */
	uint8_t *addr;
	size_t len;
	unsigned access;
	bool rvalid;      /* rkey usable by the peer */
};

struct fake {
	struct fake_mr mr[FAKE_MAX_MR];
	uint32_t next_key;
	int violations;
	bool conn_down;   /* releases of live rkeys are fine then */
	int again_budget; /* next N remote registrations return AGAIN */
	int local_again;  /* next N local-only registrations return AGAIN */
	int local_fail;   /* ... then the next N return NOMEM */
	int live_remote[2];
	bool drop_sends;  /* test hook: Sends vanish (peer never answers) */
	/* Side i's releases deregister, which invalidates (an engine with
	 * cfg.local_inv false); counted in dereg_invs. */
	bool release_invalidates[2];
	int dereg_invs[2];
	int local_inv_wrs[2]; /* LOCAL_INVs executed per side */
	/* Side i's remote registrations are windows the engine must bind
	 * (engine_mr.bind_pending): their rkeys are valid only once the
	 * BIND_MW has run; counted in binds. */
	bool bind_mode[2];
	int binds[2];
};

struct side {
	int id;
	struct fake *f;
	struct rpcrdma_engine *e;
	struct {
		uint64_t wr_id, addr;
		uint32_t len, lkey;
	} posted[FAKE_MAX_POSTED];
	uint32_t ph, pc;
	struct rpcrdma_wc cq[FAKE_MAX_CQ];
	uint32_t ncq;
	/* Last Send this side posted (for header inspection). */
	uint8_t last_send[65536];
	size_t last_send_len;
	enum rpcrdma_wr_opcode last_send_op;
	uint32_t last_inv_rkey;
};

struct mem_ctx {
	struct fake *f;
	int id;
};

static inline int fake_reg(void *ctx, void *addr, size_t len, unsigned access,
		    struct rpcrdma_engine_mr *mr)
{
	struct mem_ctx *m = ctx;
	struct fake *f = m->f;
	bool remote = access & (RPCRDMA_ACCESS_REMOTE_READ |
				RPCRDMA_ACCESS_REMOTE_WRITE);
	if (remote && f->again_budget > 0) {
		f->again_budget--;
		return RPCRDMA_ERR_AGAIN;
	}
	if (!remote && access != RPCRDMA_ACCESS_LOCAL_WRITE &&
	    f->local_again > 0) {
		f->local_again--;
		return RPCRDMA_ERR_AGAIN;
	}
	if (!remote && access != RPCRDMA_ACCESS_LOCAL_WRITE &&
	    f->local_fail > 0) {
		f->local_fail--;
		return RPCRDMA_ERR_NOMEM;
	}
	if (f->next_key + 1 >= FAKE_MAX_MR)
		return RPCRDMA_ERR_NOMEM;
	uint32_t key = ++f->next_key;
	struct fake_mr *r = &f->mr[key];
	r->used = true;
	r->owner = m->id;
	r->addr = addr;
	r->len = len;
	r->access = access;
	r->rvalid = remote && !f->bind_mode[m->id];
	if (remote)
		f->live_remote[m->id]++;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = key;
	mr->rkey = remote ? key : 0;
	mr->remote_addr = (uint64_t)(uintptr_t)addr;
	mr->cookie = r;
	/* The fake's window is the registration itself (fake_bind). */
	mr->bind_pending = remote && f->bind_mode[m->id];
	return 0;
}

static inline void fake_bind(void *ctx, const struct rpcrdma_engine_mr *mr,
			     struct rpcrdma_send_wr *w)
{
	struct mem_ctx *m = ctx;
	struct fake_mr *r = &m->f->mr[mr->lkey];
	w->bind_mw.mw = NULL;
	w->bind_mw.mr = (struct rpcrdma_mr *)(void *)r;
	w->bind_mw.addr = (uint64_t)(uintptr_t)mr->addr;
	w->bind_mw.length = mr->length;
	w->bind_mw.access = r->access & (RPCRDMA_ACCESS_REMOTE_READ |
					 RPCRDMA_ACCESS_REMOTE_WRITE);
	w->bind_mw.key = (uint8_t)mr->lkey;
}

static inline void fake_release(void *ctx, struct rpcrdma_engine_mr *mr)
{
	struct mem_ctx *m = ctx;
	struct fake *f = m->f;
	struct fake_mr *r = &f->mr[mr->lkey];
	if (!r->used || r->owner != m->id) {
		f->violations++;
		return;
	}
	if (r->rvalid && f->release_invalidates[m->id])
		f->dereg_invs[m->id]++;
	else if (r->rvalid && !f->conn_down)
		f->violations++; /* released while the peer could still use it */
	if (r->access & (RPCRDMA_ACCESS_REMOTE_READ | RPCRDMA_ACCESS_REMOTE_WRITE))
		f->live_remote[m->id]--;
	r->used = false;
	r->rvalid = false;
}

/* Count the owner's registrations whose rkey the peer can still use. */
static inline int fake_open_rkeys(const struct fake *f, int owner)
{
	int n = 0;
	for (uint32_t k = 1; k <= f->next_key; k++)
		if (f->mr[k].used && f->mr[k].owner == owner && f->mr[k].rvalid)
			n++;
	return n;
}

/* Local access through an SGE: the lkey must cover the range. */
static inline uint8_t *fake_local(struct fake *f, int owner, uint64_t addr,
			   uint32_t len, uint32_t lkey)
{
	if (lkey == 0 || lkey >= FAKE_MAX_MR) {
		f->violations++;
		return NULL;
	}
	struct fake_mr *r = &f->mr[lkey];
	uint8_t *p = (uint8_t *)(uintptr_t)addr;
	if (!r->used || r->owner != owner || p < r->addr ||
	    (size_t)(p - r->addr) > r->len || r->len - (size_t)(p - r->addr) < len) {
		f->violations++;
		return NULL;
	}
	return p;
}

static inline uint8_t *fake_remote(struct fake *f, int owner, uint64_t addr,
			    uint32_t len, uint32_t rkey, unsigned need)
{
	if (rkey == 0 || rkey >= FAKE_MAX_MR)
		return NULL;
	struct fake_mr *r = &f->mr[rkey];
	uint8_t *p = (uint8_t *)(uintptr_t)addr;
	if (!r->used || r->owner != owner || !r->rvalid || !(r->access & need) ||
	    p < r->addr || (size_t)(p - r->addr) > r->len ||
	    r->len - (size_t)(p - r->addr) < len)
		return NULL;
	return p;
}

static inline void side_init(struct side *s, struct fake *f, int id)
{
	memset(s, 0, sizeof *s);
	s->id = id;
	s->f = f;
}

static inline void cq_add(struct side *s, uint64_t wr_id, enum rpcrdma_wc_status st,
		   enum rpcrdma_wc_opcode op, uint32_t byte_len, unsigned flags,
		   uint32_t inv)
{
	if (s->ncq >= FAKE_MAX_CQ) {
		s->f->violations++;
		return;
	}
	struct rpcrdma_wc *wc = &s->cq[s->ncq++];
	memset(wc, 0, sizeof *wc);
	wc->wr_id = wr_id;
	wc->status = st;
	wc->opcode = op;
	wc->byte_len = byte_len;
	wc->wc_flags = flags;
	wc->invalidated_rkey = inv;
}

static inline void execute(struct side *s, struct side *o, struct rpcrdma_engine_wr *w)
{
	struct fake *f = s->f;
	if (w->is_recv) {
		if (s->pc >= FAKE_MAX_POSTED) {
			f->violations++;
			return;
		}
		uint32_t at = (s->ph + s->pc++) % FAKE_MAX_POSTED;
		s->posted[at].wr_id = w->recv.wr_id;
		s->posted[at].addr = w->recv.sg_list[0].addr;
		s->posted[at].len = w->recv.sg_list[0].length;
		s->posted[at].lkey = w->recv.sg_list[0].lkey;
		if (!fake_local(f, s->id, s->posted[at].addr, s->posted[at].len,
				s->posted[at].lkey))
			f->violations++;
		return;
	}
	struct rpcrdma_send_wr *sw = &w->send;
	switch (sw->opcode) {
	case RPCRDMA_WR_SEND:
	case RPCRDMA_WR_SEND_WITH_INV: {
		size_t n = 0;
		for (int i = 0; i < sw->num_sge; i++) {
			uint8_t *p = fake_local(f, s->id, sw->sg_list[i].addr,
						sw->sg_list[i].length,
						sw->sg_list[i].lkey);
			if (!p || n + sw->sg_list[i].length > sizeof s->last_send)
				return;
			memcpy(s->last_send + n, p, sw->sg_list[i].length);
			n += sw->sg_list[i].length;
		}
		s->last_send_len = n;
		s->last_send_op = sw->opcode;
		s->last_inv_rkey = sw->invalidate_rkey;
		if (sw->send_flags & RPCRDMA_SEND_SIGNALED)
			cq_add(s, sw->wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_SEND, 0, 0, 0);
		if (f->drop_sends)
			return;
		if (!o->pc) {
			f->violations++; /* RNR: no receive posted */
			return;
		}
		uint32_t at = o->ph;
		o->ph = (o->ph + 1) % FAKE_MAX_POSTED;
		o->pc--;
		if (n > o->posted[at].len) {
			f->violations++;
			cq_add(o, o->posted[at].wr_id, RPCRDMA_WC_LOC_LEN_ERR,
			       RPCRDMA_WC_RECV, 0, 0, 0);
			return;
		}
		memcpy((void *)(uintptr_t)o->posted[at].addr, s->last_send, n);
		unsigned flags = 0;
		uint32_t inv = 0;
		if (sw->opcode == RPCRDMA_WR_SEND_WITH_INV) {
			struct fake_mr *r = sw->invalidate_rkey < FAKE_MAX_MR
						    ? &f->mr[sw->invalidate_rkey]
						    : NULL;
			if (!r || !r->used || r->owner != o->id || !r->rvalid)
				f->violations++;
			else
				r->rvalid = false;
			flags = RPCRDMA_WC_WITH_INV;
			inv = sw->invalidate_rkey;
		}
		cq_add(o, o->posted[at].wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_RECV,
		       (uint32_t)n, flags, inv);
		return;
	}
	case RPCRDMA_WR_RDMA_WRITE: {
		uint32_t len = sw->sg_list[0].length;
		uint8_t *src = fake_local(f, s->id, sw->sg_list[0].addr, len,
					  sw->sg_list[0].lkey);
		uint8_t *dst = fake_remote(f, o->id, sw->rdma.remote_addr, len,
					   sw->rdma.rkey,
					   RPCRDMA_ACCESS_REMOTE_WRITE);
		if (!src || !dst) {
			f->violations++;
			cq_add(s, sw->wr_id, RPCRDMA_WC_REM_ACCESS_ERR,
			       RPCRDMA_WC_RDMA_WRITE, 0, 0, 0);
			return;
		}
		memcpy(dst, src, len);
		if (sw->send_flags & RPCRDMA_SEND_SIGNALED)
			cq_add(s, sw->wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_RDMA_WRITE, 0,
			       0, 0);
		return;
	}
	case RPCRDMA_WR_RDMA_READ: {
		uint32_t len = sw->sg_list[0].length;
		uint8_t *dst = fake_local(f, s->id, sw->sg_list[0].addr, len,
					  sw->sg_list[0].lkey);
		uint8_t *src = fake_remote(f, o->id, sw->rdma.remote_addr, len,
					   sw->rdma.rkey,
					   RPCRDMA_ACCESS_REMOTE_READ);
		if (!src || !dst) {
			f->violations++;
			cq_add(s, sw->wr_id, RPCRDMA_WC_REM_ACCESS_ERR,
			       RPCRDMA_WC_RDMA_READ, 0, 0, 0);
			return;
		}
		memcpy(dst, src, len);
		if (sw->send_flags & RPCRDMA_SEND_SIGNALED)
			cq_add(s, sw->wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_RDMA_READ, 0,
			       0, 0);
		return;
	}
	case RPCRDMA_WR_BIND_MW: {
		/* Valid from here on: it must name one of this side's
		 * windows, not yet bound, over exactly what it registered. */
		struct fake_mr *r = (struct fake_mr *)(void *)sw->bind_mw.mr;
		if (!f->bind_mode[s->id] || !r || r < f->mr ||
		    r >= f->mr + FAKE_MAX_MR || !r->used || r->owner != s->id ||
		    r->rvalid || sw->bind_mw.addr != (uintptr_t)r->addr ||
		    sw->bind_mw.length != r->len ||
		    sw->bind_mw.key != (uint8_t)(r - f->mr)) {
			f->violations++;
			return;
		}
		r->rvalid = true;
		f->binds[s->id]++;
		if (sw->send_flags & RPCRDMA_SEND_SIGNALED)
			cq_add(s, sw->wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_BIND_MW,
			       0, 0, 0);
		return;
	}
	case RPCRDMA_WR_LOCAL_INV: {
		struct fake_mr *r = sw->invalidate_rkey < FAKE_MAX_MR
					    ? &f->mr[sw->invalidate_rkey]
					    : NULL;
		f->local_inv_wrs[s->id]++;
		if (!r || !r->used || r->owner != s->id || !r->rvalid)
			f->violations++;
		else
			r->rvalid = false;
		if (sw->send_flags & RPCRDMA_SEND_SIGNALED)
			cq_add(s, sw->wr_id, RPCRDMA_WC_SUCCESS, RPCRDMA_WC_LOCAL_INV, 0,
			       0, 0);
		return;
	}
	default:
		f->violations++;
		return;
	}
}

/* Optional per-step invariant check (credits never exceeded). */
static int fake_credit_violations;

static inline void check_credit(struct side *s)
{
	struct rpcrdma_engine_info in;
	rpcrdma_engine_get_info(s->e, &in);
	if (in.calls_in_flight > in.credits_granted)
		fake_credit_violations++;
}

/* Run both sides until nothing moves.  Completions are delivered in
 * order after each batch of work requests. */
/* Called with every work request a side hands out, before it runs
 * (tests that look at what goes on the wire); NULL: none. */
static void (*fake_on_wr)(const struct side *s,
			  const struct rpcrdma_engine_wr *w);

/* One step: every work request both sides have is executed, then every
 * completion that made is given back.  False when nothing moved. */
static inline bool pump_step(struct side *a, struct side *b)
{
	bool moved = false;
	struct side *sides[2] = {a, b};
	for (int k = 0; k < 2; k++) {
		struct side *s = sides[k], *o = sides[1 - k];
		struct rpcrdma_engine_wr w;
		while (rpcrdma_engine_pop_wr(s->e, &w)) {
			moved = true;
			if (fake_on_wr)
				fake_on_wr(s, &w);
			execute(s, o, &w);
			check_credit(s);
		}
	}
	for (int k = 0; k < 2; k++) {
		struct side *s = sides[k];
		uint32_t n = s->ncq;
		if (!n)
			continue;
		moved = true;
		struct rpcrdma_wc *tmp = malloc(n * sizeof *tmp);
		memcpy(tmp, s->cq, n * sizeof *tmp);
		s->ncq = 0;
		for (uint32_t i = 0; i < n; i++) {
			rpcrdma_engine_completion(s->e, &tmp[i]);
			check_credit(s);
		}
		free(tmp);
	}
	return moved;
}

static inline void pump(struct side *a, struct side *b)
{
	for (int guard = 0; guard < 100000; guard++)
		if (!pump_step(a, b))
			return;
}

/* Both sides connect with each other's private data. */
static inline void connect_pair(struct side *a, struct side *b, uint32_t ord)
{
	uint8_t pa[8], pb[8];
	rpcrdma_engine_private_data(a->e, pa, sizeof pa);
	rpcrdma_engine_private_data(b->e, pb, sizeof pb);
	a->f->conn_down = false;
	a->ph = a->pc = 0;
	b->ph = b->pc = 0;
	a->ncq = b->ncq = 0;
	/* The passive side posts its receives before it accepts (as
	 * librdmacm users do), so it is established first. */
	rpcrdma_engine_established(b->e, pa, sizeof pa, ord, 0);
	pump(a, b);
	rpcrdma_engine_established(a->e, pb, sizeof pb, ord, 0);
	pump(a, b);
}

static inline void disconnect_pair(struct side *a, struct side *b)
{
	a->f->conn_down = true;
	rpcrdma_engine_conn_lost(a->e, 0);
	rpcrdma_engine_conn_lost(b->e, 0);
	a->ph = a->pc = 0;
	b->ph = b->pc = 0;
	a->ncq = b->ncq = 0; /* flushed completions: engines ignore them */
}

static struct mem_ctx mem_ctx_storage[2];

static inline int side_create(struct side *s, const struct rpcrdma_engine_config *cfg)
{
	mem_ctx_storage[s->id].f = s->f;
	mem_ctx_storage[s->id].id = s->id;
	struct rpcrdma_engine_mem_ops ops = {
		.ctx = &mem_ctx_storage[s->id],
		.reg = fake_reg,
		.release = fake_release,
		.bind = fake_bind,
	};
	return rpcrdma_engine_create(cfg, &ops, &s->e);
}

/* One engine alone on a fresh fake (*f allocated on first use), created
 * with cfg and connected with the peer's private data pd[0..len) (NULL:
 * none) and an ORD of 4.  Returns what create / established returned. */
static inline int fake_single(struct fake **f, struct side *s,
			      const struct rpcrdma_engine_config *cfg,
			      const void *pd, size_t len, uint64_t now)
{
	if (!*f)
		*f = calloc(1, sizeof **f);
	if (!*f)
		return RPCRDMA_ERR_NOMEM;
	memset(*f, 0, sizeof **f);
	side_init(s, *f, 0);
	int rc = side_create(s, cfg);
	return rc ? rc : rpcrdma_engine_established(s->e, pd, len, 4, now);
}

/* For tests driving one engine (fake_single) by hand: the bytes of a
 * Send's SGEs, gathered into dst (which holds them), and their length. */
static inline size_t fake_send_gather(const struct rpcrdma_send_wr *sw,
				      uint8_t *dst)
{
	size_t len = 0;
	for (int i = 0; i < sw->num_sge; i++) {
		memcpy(dst + len, (void *)(uintptr_t)sw->sg_list[i].addr,
		       sw->sg_list[i].length);
		len += sw->sg_list[i].length;
	}
	return len;
}

/* Complete a send-queue request at once, successfully, if it is
 * signalled (a provider reports only those). */
static inline void fake_send_done(struct rpcrdma_engine *e,
				  const struct rpcrdma_send_wr *sw, uint64_t now)
{
	if (!(sw->send_flags & RPCRDMA_SEND_SIGNALED))
		return;
	struct rpcrdma_wc wc = {0};
	wc.wr_id = sw->wr_id;
	wc.status = RPCRDMA_WC_SUCCESS;
	rpcrdma_engine_completion(e, &wc);
}

/* ONC RPC helpers (RFC 5531 §9): a CALL header with AUTH_NONE, 40 bytes,
 * and an accepted SUCCESS REPLY header, 24 bytes. */
static inline void rpc_call_hdr(uint8_t *p, uint32_t prog, uint32_t vers,
			 uint32_t proc)
{
	uint32_t w[10] = {0, 0, 2, prog, vers, proc, 0, 0, 0, 0};
	for (int i = 0; i < 10; i++)
		rpcrdma_be32_put(p + 4 * i, w[i]);
}

static inline void rpc_reply_hdr(uint8_t *p, uint32_t xid)
{
	uint32_t w[6] = {xid, 1, 0, 0, 0, 0};
	for (int i = 0; i < 6; i++)
		rpcrdma_be32_put(p + 4 * i, w[i]);
}

/* XDR words w[0..n) into p, big-endian; returns the byte count. */
static inline size_t xdr_words(uint8_t *p, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rpcrdma_be32_put(p + 4 * i, w[i]);
	return 4 * n;
}

static inline void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

#endif
