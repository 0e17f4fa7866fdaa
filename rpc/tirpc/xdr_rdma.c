/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * libtirpc XDR streams that know about direct data placement: see
 * tirpc_internal.h for what they do and why.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/tirpc/tirpc_internal.h"

/* ---------------------------------------------------------------------
 * Gather (encode)
 */

static struct xdr_gather *G(XDR *x)
{
	return (struct xdr_gather *)x->x_private;
}

static bool g_reserve(struct xdr_gather *g, size_t more)
{
	if (g->failed)
		return false;
	if (g->cap - g->len >= more)
		return true;
	size_t cap = g->cap;
	while (cap - g->len < more) {
		if (cap > SIZE_MAX / 2) {
			g->failed = true;
			return false;
		}
		cap *= 2;
	}
	uint8_t *b;
	if (g->buf == g->first) {
		b = malloc(cap);
		if (b)
			memcpy(b, g->first, g->len);
	} else {
		b = realloc(g->buf, cap);
	}
	if (!b) {
		g->failed = true;
		return false;
	}
	g->buf = b;
	g->cap = cap;
	return true;
}

static bool_t g_putlong(XDR *x, const long *lp)
{
	struct xdr_gather *g = G(x);
	g->skip_pad = false;
	if (!g_reserve(g, 4))
		return FALSE;
	uint32_t v = htonl((uint32_t)*lp);
	memcpy(g->buf + g->len, &v, 4);
	g->len += 4;
	return TRUE;
}

static bool_t g_putbytes(XDR *x, const char *p, u_int n)
{
	struct xdr_gather *g = G(x);
	if (g->skip_pad) {
		g->skip_pad = false;
		/* xdr_opaque writes the roundup of the item it just wrote as
		 * one putbytes of 1..3 zeros: the DDP item travels without it
		 * (RFC 8166 §3.4.5.2). */
		if (n < 4)
			return TRUE;
	}
	if (g->ddp_allowed && !g->ddp_taken && n >= g->ddp_min && g->len % 4 == 0) {
		g->ddp_taken = true;
		g->ddp = p;
		g->ddp_len = n;
		g->ddp_at = g->len;
		g->skip_pad = (n % 4) != 0;
		return TRUE;
	}
	if (!g_reserve(g, n))
		return FALSE;
	memcpy(g->buf + g->len, p, n);
	g->len += n;
	return TRUE;
}

static u_int g_getpostn(XDR *x)
{
	struct xdr_gather *g = G(x);
	size_t pos = g->len;
	if (g->ddp_taken)
		pos += g->ddp_len + ((4 - g->ddp_len % 4) % 4);
	return (u_int)pos;
}

static bool_t g_setpostn(XDR *x, u_int pos)
{
	(void)x;
	(void)pos;
	return FALSE; /* a gather stream only grows */
}

static int32_t *g_inline(XDR *x, u_int n)
{
	struct xdr_gather *g = G(x);
	if (g->len % 4 || n % 4 || !g_reserve(g, n))
		return NULL;
	g->skip_pad = false;
	int32_t *p = (int32_t *)(void *)(g->buf + g->len);
	g->len += n;
	return p;
}

static void x_nop_destroy(XDR *x)
{
	(void)x;
}

static bool_t x_no_control(XDR *x, int req, void *info)
{
	(void)x;
	(void)req;
	(void)info;
	return FALSE;
}

static bool_t g_getlong(XDR *x, long *lp)
{
	(void)x;
	(void)lp;
	return FALSE;
}

static bool_t g_getbytes(XDR *x, char *p, u_int n)
{
	(void)x;
	(void)p;
	(void)n;
	return FALSE;
}

static const struct xdr_ops gather_ops = {
	.x_getlong = g_getlong,
	.x_putlong = g_putlong,
	.x_getbytes = g_getbytes,
	.x_putbytes = g_putbytes,
	.x_getpostn = g_getpostn,
	.x_setpostn = g_setpostn,
	.x_inline = g_inline,
	.x_destroy = x_nop_destroy,
	.x_control = x_no_control,
};

void xdr_gather_create(XDR *xdrs, struct xdr_gather *g, bool ddp_allowed,
		       size_t ddp_min)
{
	/* Everything but the bytes, which need no zeroing. */
	memset(g, 0, offsetof(struct xdr_gather, first));
	g->buf = g->first;
	g->cap = sizeof(g->first);
	g->ddp_allowed = ddp_allowed;
	g->ddp_min = ddp_min ? ddp_min : 1;
	memset(xdrs, 0, sizeof(*xdrs));
	xdrs->x_op = XDR_ENCODE;
	xdrs->x_ops = &gather_ops;
	xdrs->x_private = g;
}

unsigned xdr_gather_iov(const struct xdr_gather *g, struct rpcrdma_iov *iov)
{
	unsigned n = 0;
	if (!g->ddp_taken) {
		iov[n++] = (struct rpcrdma_iov){ g->buf, g->len, false };
		return n;
	}
	if (g->ddp_at)
		iov[n++] = (struct rpcrdma_iov){ g->buf, g->ddp_at, false };
	iov[n++] = (struct rpcrdma_iov){ (void *)(uintptr_t)g->ddp, g->ddp_len, true };
	if (g->len > g->ddp_at)
		iov[n++] = (struct rpcrdma_iov){ g->buf + g->ddp_at,
						 g->len - g->ddp_at, false };
	return n;
}

void xdr_gather_free(struct xdr_gather *g)
{
	if (g->buf != g->first)
		free(g->buf);
	g->buf = g->first;
	g->len = 0;
	g->cap = sizeof(g->first);
}

/* ---------------------------------------------------------------------
 * Scatter (decode)
 */

static struct xdr_scatter *S(XDR *x)
{
	return (struct xdr_scatter *)x->x_private;
}

static bool_t s_getlong(XDR *x, long *lp)
{
	struct xdr_scatter *s = S(x);
	s->pad_left = 0;
	if (s->len - s->pos < 4)
		return FALSE;
	uint32_t v;
	memcpy(&v, s->p + s->pos, 4);
	s->pos += 4;
	/* As libtirpc's memory stream: the unsigned word, widened. */
	*lp = (long)ntohl(v);
	return TRUE;
}

static bool_t s_getbytes(XDR *x, char *p, u_int n)
{
	struct xdr_scatter *s = S(x);
	if (s->pad_left) {
		unsigned pad = s->pad_left;
		s->pad_left = 0;
		if (n == pad) {
			/* The roundup xdr_opaque reads into a scratch buffer
			 * of libtirpc's and never looks at: nothing to
			 * write (and that buffer is shared by every
			 * thread). */
			return TRUE;
		}
	}
	if (s->ddp && !s->ddp_used && n == s->ddp_len) {
		/* RFC 8166 §3.4.6: this item was placed in the Write chunk
		 * and is absent from the inline stream, with its roundup.
		 * Decoded into the chunk itself (the caller lent it,
		 * clnt_rdma_result_buffer), it is there already. */
		if ((const uint8_t *)p != s->ddp) {
			memcpy(p, s->ddp, n);
			s->copied += n;
		}
		s->ddp_used = true;
		s->pad_left = (4 - n % 4) % 4;
		return TRUE;
	}
	if (s->msgp.align && n >= s->msgp.thresh) {
		/* RFC 5666 §3.7: "Where the decoded length exceeds the
		 * rdma_thresh, the XDR decode MUST skip over the appropriate
		 * padding as indicated by rdma_align and the current XDR
		 * stream position."  The sender pads "at or above" the
		 * threshold (same section); we follow the sender's words. */
		size_t at = s->msgp.base + s->pos;
		size_t skip = (s->msgp.align - at % s->msgp.align) % s->msgp.align;
		if (s->len - s->pos < skip)
			return FALSE;
		s->pos += skip;
	}
	if (s->len - s->pos < n)
		return FALSE;
	memcpy(p, s->p + s->pos, n);
	for (unsigned i = 0; i < s->nranges; i++) {
		/* Overlap of [pos, pos + n) with a range that came by DDP. */
		size_t a = s->range_pos[i] >= s->range_base
				   ? s->range_pos[i] - s->range_base : 0;
		size_t b = s->range_pos[i] + (size_t)s->range_len[i];
		b = b >= s->range_base ? b - s->range_base : 0;
		size_t lo = a > s->pos ? a : s->pos;
		size_t hi = b < s->pos + n ? b : s->pos + n;
		if (hi > lo)
			s->copied += hi - lo;
	}
	s->pos += n;
	return TRUE;
}

void xdr_scatter_set_padding(struct xdr_scatter *s,
			     const struct rpcrdma_padding *pad)
{
	s->msgp = *pad;
	/* The roundup of an opaque (1..3 bytes, its own getbytes) is never
	 * padded: a threshold under 4 would pad it. */
	if (s->msgp.align && s->msgp.thresh < 4)
		s->msgp.thresh = 4;
}

static u_int s_getpostn(XDR *x)
{
	return (u_int)S(x)->pos;
}

static bool_t s_setpostn(XDR *x, u_int pos)
{
	struct xdr_scatter *s = S(x);
	if (pos > s->len)
		return FALSE;
	s->pos = pos;
	s->pad_left = 0;
	return TRUE;
}

static int32_t *s_inline(XDR *x, u_int n)
{
	struct xdr_scatter *s = S(x);
	/* Only aligned runs: IXDR_GET_* reads int32_t through the pointer. */
	if (n % 4 || s->len - s->pos < n || ((uintptr_t)(s->p + s->pos) & 3))
		return NULL;
	s->pad_left = 0;
	int32_t *p = (int32_t *)(uintptr_t)(s->p + s->pos);
	s->pos += n;
	return p;
}

static bool_t s_putlong(XDR *x, const long *lp)
{
	(void)x;
	(void)lp;
	return FALSE;
}

static bool_t s_putbytes(XDR *x, const char *p, u_int n)
{
	(void)x;
	(void)p;
	(void)n;
	return FALSE;
}

static const struct xdr_ops scatter_ops = {
	.x_getlong = s_getlong,
	.x_putlong = s_putlong,
	.x_getbytes = s_getbytes,
	.x_putbytes = s_putbytes,
	.x_getpostn = s_getpostn,
	.x_setpostn = s_setpostn,
	.x_inline = s_inline,
	.x_destroy = x_nop_destroy,
	.x_control = x_no_control,
};

void xdr_scatter_create(XDR *xdrs, struct xdr_scatter *s, const void *p,
			size_t len, const void *ddp, size_t ddp_len)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->len = len;
	s->ddp = ddp_len ? ddp : NULL;
	s->ddp_len = ddp_len;
	memset(xdrs, 0, sizeof(*xdrs));
	xdrs->x_op = XDR_DECODE;
	xdrs->x_ops = &scatter_ops;
	xdrs->x_private = s;
}

/* ---------------------------------------------------------------------
 * Binding table
 */

bool ulb_lookup(struct ulb_table *t, uint32_t prog, uint32_t vers,
		uint32_t proc, struct ulb_entry *out)
{
	/* Counted before the table is loaded: a writer that sees no reader
	 * after publishing a new table knows nobody holds an older one. */
	atomic_fetch_add(&t->readers, 1);
	const struct ulb_entries *c = atomic_load(&t->cur);
	bool found = false;
	for (size_t i = 0; c && i < c->n; i++)
		if (c->e[i].prog == prog && c->e[i].vers == vers &&
		    c->e[i].proc == proc) {
			*out = c->e[i];
			found = true;
			break;
		}
	atomic_fetch_sub(&t->readers, 1);
	return found;
}

static void entries_free(struct ulb_entries *c)
{
	while (c) {
		struct ulb_entries *o = c->older;
		free(c);
		c = o;
	}
}

void ulb_free(struct ulb_table *t)
{
	entries_free(atomic_load(&t->cur));
	atomic_store(&t->cur, NULL);
}

/* The entry of (prog, vers, proc) in c, or NULL. */
static struct ulb_entry *entry_of(struct ulb_entries *c, uint32_t prog,
				  uint32_t vers, uint32_t proc)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].prog == prog && c->e[i].vers == vers &&
		    c->e[i].proc == proc)
			return &c->e[i];
	return NULL;
}

bool_t ulb_set_procs(struct ulb_table *t, pthread_mutex_t *lock, uint32_t prog,
		     uint32_t vers, const struct rpcrdma_ulb_proc *procs,
		     unsigned n)
{
	pthread_mutex_lock(lock);
	struct ulb_entries *old = atomic_load(&t->cur);
	size_t have = old ? old->n : 0;
	/* The new table: a copy of the current one with the n procedures
	 * replaced or added (at most n more entries). */
	struct ulb_entries *c = malloc(sizeof(*c) +
				       (have + n) * sizeof(c->e[0]));
	if (!c) {
		pthread_mutex_unlock(lock);
		return FALSE;
	}
	c->older = old;
	c->n = have;
	if (have)
		memcpy(c->e, old->e, have * sizeof(c->e[0]));
	for (unsigned i = 0; i < n; i++) {
		struct ulb_entry e = {
			.prog = prog, .vers = vers,
			.proc = (uint32_t)procs[i].proc,
			.ddp_arg = procs[i].ddp_arg,
			.ddp_result_max = procs[i].ddp_result_max,
			.reply_max = procs[i].reply_max,
			.ddp_min = procs[i].ddp_min,
		};
		struct ulb_entry *u = entry_of(c, prog, vers, e.proc);
		if (u)
			*u = e;
		else
			c->e[c->n++] = e;
	}
	/* Published whole: a reader sees the old table or the new one,
	 * never one half written.  The older ones go as soon as no reader
	 * is inside ulb_lookup (one that comes in now finds the new table);
	 * until then they stay, for the next writer or ulb_free. */
	atomic_store(&t->cur, c);
	if (atomic_load(&t->readers) == 0) {
		entries_free(c->older);
		c->older = NULL;
	}
	pthread_mutex_unlock(lock);
	return TRUE;
}

void tirpc_create_error(enum clnt_stat st, int rc)
{
	rpc_createerr.cf_stat = st;
	rpc_createerr.cf_error.re_status = st;
	rpc_createerr.cf_error.re_errno = rc < 0 ? -rc : rc;
}
