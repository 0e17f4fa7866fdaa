/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* The hand-made peer's RPC-over-RDMA headers (see peer_proto.h). */
#include "peer_proto.h"

#include <string.h>

void pp_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t pp_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

struct rd {
	const uint8_t *b;
	size_t len, off;
	bool bad;
};

static uint32_t w(struct rd *r)
{
	if (r->len - r->off < 4) {
		r->bad = true;
		return 0;
	}
	uint32_t v = pp_get32(r->b + r->off);
	r->off += 4;
	return v;
}

static void seg(struct rd *r, struct pp_seg *s)
{
	s->handle = w(r);
	s->length = w(r);
	uint64_t hi = w(r);
	s->offset = hi << 32 | w(r);
}

static void chunk(struct rd *r, struct pp_chunk *c)
{
	c->nsegs = w(r);
	if (c->nsegs > PP_MAX_SEGS) {
		r->bad = true;
		c->nsegs = 0;
		return;
	}
	for (uint32_t i = 0; i < c->nsegs && !r->bad; i++)
		seg(r, &c->segs[i]);
}

/* XDR optional-data discriminators are 0 or 1 (RFC 4506 §4.19). */
static bool more(struct rd *r)
{
	uint32_t v = w(r);
	if (v > 1)
		r->bad = true;
	return v == 1 && !r->bad;
}

static void lists(struct rd *r, struct pp_hdr *h)
{
	while (more(r)) {
		if (h->nreads >= PP_MAX_READS) {
			r->bad = true;
			return;
		}
		h->reads[h->nreads].pos = w(r);
		seg(r, &h->reads[h->nreads].seg);
		h->nreads++;
	}
	while (more(r)) {
		if (h->nwrites >= PP_MAX_WRITES) {
			r->bad = true;
			return;
		}
		chunk(r, &h->writes[h->nwrites++]);
	}
	if (more(r)) {
		h->has_reply = true;
		chunk(r, &h->reply);
	}
}

static void body(struct rd *r, struct pp_hdr *h, uint32_t max)
{
	while (h->nbody < max && r->len - r->off >= 4 &&
	       h->nbody < sizeof(h->body) / sizeof(h->body[0]))
		h->body[h->nbody++] = w(r);
}

int pp_parse(const uint8_t *b, size_t len, struct pp_hdr *h)
{
	struct rd r = {b, len, 0, false};
	memset(h, 0, sizeof(*h));
	h->xid = w(&r);
	h->vers = w(&r);
	h->credit = w(&r);
	h->proc = w(&r);
	if (h->vers == 2) {
		h->flags = w(&r);
		if (h->proc == PP_ERROR) {
			h->err = w(&r);
			body(&r, h, 4);
		} else if (h->proc == PP_CONNPROP) {
			body(&r, h, 64);
		} else if (h->proc == PP_MSG || h->proc == PP_NOMSG) {
			h->inv_handle = w(&r);
			lists(&r, h);
		}
	} else if (h->proc == PP_ERROR) {
		h->err = w(&r);
		body(&r, h, 2);
	} else if (h->proc == PP_MSG || h->proc == PP_NOMSG ||
		   h->proc == PP_MSGP) {
		if (h->proc == PP_MSGP) {
			h->align = w(&r);
			h->thresh = w(&r);
		}
		lists(&r, h);
	}
	h->hdr_len = r.off;
	return r.bad ? -1 : 0;
}

struct wr {
	uint8_t *b;
	size_t off;
};

static void put(struct wr *o, uint32_t v)
{
	pp_put32(o->b + o->off, v);
	o->off += 4;
}

static void put_seg(struct wr *o, const struct pp_seg *s)
{
	put(o, s->handle);
	put(o, s->length);
	put(o, (uint32_t)(s->offset >> 32));
	put(o, (uint32_t)s->offset);
}

static void put_chunk(struct wr *o, const struct pp_chunk *c)
{
	put(o, c->nsegs);
	for (uint32_t i = 0; i < c->nsegs; i++)
		put_seg(o, &c->segs[i]);
}

size_t pp_build(uint8_t *b, const struct pp_hdr *h)
{
	struct wr o = {b, 0};
	put(&o, h->xid);
	put(&o, h->vers);
	put(&o, h->credit);
	put(&o, h->proc);
	if (h->vers == 2)
		put(&o, h->flags);
	if (h->proc == PP_ERROR) {
		put(&o, h->err);
		for (uint32_t i = 0; i < h->nbody; i++)
			put(&o, h->body[i]);
		return o.off;
	}
	if (h->proc == PP_CONNPROP || h->proc == PP_DONE) {
		for (uint32_t i = 0; i < h->nbody; i++)
			put(&o, h->body[i]);
		return o.off;
	}
	if (h->vers == 2)
		put(&o, h->inv_handle);
	if (h->vers != 2 && h->proc == PP_MSGP) {
		put(&o, h->align);
		put(&o, h->thresh);
	}
	for (uint32_t i = 0; i < h->nreads; i++) {
		put(&o, 1);
		put(&o, h->reads[i].pos);
		put_seg(&o, &h->reads[i].seg);
	}
	put(&o, 0);
	for (uint32_t i = 0; i < h->nwrites; i++) {
		put(&o, 1);
		put_chunk(&o, &h->writes[i]);
	}
	put(&o, 0);
	put(&o, h->has_reply ? 1 : 0);
	if (h->has_reply)
		put_chunk(&o, &h->reply);
	return o.off;
}

void pp_init(struct pp_hdr *h, uint32_t xid, uint32_t vers, uint32_t credit,
	     uint32_t proc)
{
	memset(h, 0, sizeof(*h));
	h->xid = xid;
	h->vers = vers;
	h->credit = credit;
	h->proc = proc;
}

uint64_t pp_chunk_len(const struct pp_chunk *c)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < c->nsegs; i++)
		t += c->segs[i].length;
	return t;
}

size_t pp_rpc_reply(uint8_t *b, uint32_t xid)
{
	const uint32_t v[6] = {xid, 1, 0, 0, 0, 0};
	for (int i = 0; i < 6; i++)
		pp_put32(b + 4 * i, v[i]);
	return 24;
}

size_t pp_rpc_call(uint8_t *b, uint32_t xid, uint32_t prog, uint32_t vers,
		   uint32_t proc)
{
	const uint32_t v[10] = {xid, 0, 2, prog, vers, proc, 0, 0, 0, 0};
	for (int i = 0; i < 10; i++)
		pp_put32(b + 4 * i, v[i]);
	return 40;
}
