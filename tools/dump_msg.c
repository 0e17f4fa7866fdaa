/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* rpcrdma-dump: decode and emit one message (see dump_msg.h). */
#include "dump_msg.h"
#include "dump_summary.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rpcrdma/error.h"
#include "wire/auth.h"
#include "wire/chunk_lists.h"
#include "wire/cm_private_data.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_common.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"
#include "wire/xdr.h"

/* ------------------------------------------------------------------ */
/* Error reporting                                                     */

static void set_err(struct dump_error *err, size_t offset, int code,
		    const char *fmt, ...)
{
	char what[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	err->offset = offset;
	err->code = code;
	snprintf(err->msg, sizeof err->msg, "offset %zu: %s", offset, what);
}

/*
 * The structural walk ("locator").  It runs only after a library decoder
 * has rejected the input, and re-reads the same XDR item by item so the
 * error can name the offset and the item.  Each helper returns false
 * after recording the first problem.
 */
struct loc {
	struct rpcrdma_xdr_dec d;
	struct dump_error *err;
	size_t base; /* offset of this buffer within the whole message */
};

static size_t loc_off(const struct loc *l)
{
	return l->base + l->d.pos;
}

static bool loc_need(struct loc *l, size_t n, const char *what)
{
	size_t left = rpcrdma_xdr_dec_remaining(&l->d);
	if (left >= n)
		return true;
	set_err(l->err, loc_off(l), RPCRDMA_ERR_TRUNCATED,
		"truncated: expected %s (%zu bytes), only %zu left", what, n,
		left);
	return false;
}

static bool loc_u32(struct loc *l, uint32_t *v, const char *what)
{
	if (!loc_need(l, 4, what))
		return false;
	(void)rpcrdma_xdr_get_u32(&l->d, v);
	return true;
}

static bool loc_skip(struct loc *l, size_t n, const char *what)
{
	if (!loc_need(l, n, what))
		return false;
	l->d.pos += n;
	return true;
}

/* XDR optional-data / bool discriminator. */
static bool loc_bool(struct loc *l, bool *v, const char *what)
{
	size_t at = loc_off(l);
	uint32_t w = 0; /* set by loc_u32 on success; gcc -O2 cannot see it */
	if (!loc_u32(l, &w, what))
		return false;
	if (w > 1) {
		set_err(l->err, at, RPCRDMA_ERR_BAD_BOOL,
			"%s is %u: expected 0 or 1", what, w);
		return false;
	}
	*v = w != 0;
	return true;
}

static bool loc_segments(struct loc *l, const char *chunk, uint32_t max)
{
	char what[96];
	size_t at = loc_off(l);
	uint32_t n;
	snprintf(what, sizeof what, "%s segment count", chunk);
	if (!loc_u32(l, &n, what))
		return false;
	if (n > max) {
		set_err(l->err, at, RPCRDMA_ERR_TOO_MANY_SEGMENTS,
			"%s has %u segments: expected at most %u", chunk, n,
			max);
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		snprintf(what, sizeof what,
			 "%s segment %u of %u (handle,length,offset)", chunk,
			 i + 1, n);
		if (!loc_skip(l, 16, what))
			return false;
	}
	return true;
}

/* Read list, Write list, Reply chunk (RFC 8166 §4.1.2 / draft §3.3). */
static bool loc_chunk_lists(struct loc *l, bool *any)
{
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	bool more;
	uint32_t n = 0;
	*any = false;
	for (;;) {
		if (!loc_bool(l, &more, "read list entry discriminator"))
			return false;
		if (!more)
			break;
		*any = true;
		if (++n > lim.max_read_segments) {
			set_err(l->err, loc_off(l) - 4,
				RPCRDMA_ERR_TOO_MANY_SEGMENTS,
				"read list has more than %u segments",
				lim.max_read_segments);
			return false;
		}
		size_t at = loc_off(l);
		if (!loc_need(l, 20, "read segment (position,handle,length,offset)"))
			return false;
		uint32_t pos = 0; /* loc_need() made room; gcc -Os cannot see it */
		(void)rpcrdma_xdr_get_u32(&l->d, &pos);
		l->d.pos += 16;
		if (pos % 4) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_POSITION,
				"read segment position %u: expected a multiple of 4",
				pos);
			return false;
		}
	}
	n = 0;
	for (;;) {
		if (!loc_bool(l, &more, "write list entry discriminator"))
			return false;
		if (!more)
			break;
		*any = true;
		if (++n > lim.max_write_chunks) {
			set_err(l->err, loc_off(l) - 4,
				RPCRDMA_ERR_TOO_MANY_CHUNKS,
				"write list has more than %u chunks",
				lim.max_write_chunks);
			return false;
		}
		char chunk[32];
		snprintf(chunk, sizeof chunk, "write chunk %u", n);
		if (!loc_segments(l, chunk, lim.max_chunk_segments))
			return false;
	}
	if (!loc_bool(l, &more, "reply chunk discriminator"))
		return false;
	if (more) {
		*any = true;
		if (!loc_segments(l, "reply chunk", lim.max_chunk_segments))
			return false;
	}
	return true;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Both versions: the header walked so far fits the default limit. */
static bool header_size_ok(struct loc *l)
{
	struct rpcrdma_limits lim = rpcrdma_limits_default();
	if (l->d.pos > lim.max_header_size) {
		set_err(l->err, lim.max_header_size, RPCRDMA_ERR_HEADER_TOO_LONG,
			"transport header is %zu bytes: expected at most %u",
			l->d.pos, lim.max_header_size);
		return false;
	}
	return true;
}

/* Walk a v1 header; true if the walk found nothing wrong. */
static bool locate_v1(struct loc *l)
{
	uint32_t xid, vers, credit, proc, w;
	bool any;
	if (!loc_u32(l, &xid, "rdma_xid") || !loc_u32(l, &vers, "rdma_vers") ||
	    !loc_u32(l, &credit, "rdma_credit"))
		return false;
	size_t at = loc_off(l);
	if (!loc_u32(l, &proc, "rdma_proc"))
		return false;
	switch (proc) {
	case RPCRDMA_V1_MSGP:
		at = loc_off(l);
		if (!loc_u32(l, &w, "rdma_align"))
			return false;
		if (!is_pow2(w)) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_ALIGN,
				"rdma_align %u: expected a power of two", w);
			return false;
		}
		if (!loc_u32(l, &w, "rdma_thresh"))
			return false;
		/* fall through */
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
		at = loc_off(l);
		if (!loc_chunk_lists(l, &any))
			return false;
		if (proc == RPCRDMA_V1_NOMSG && !any) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_CHUNK,
				"RDMA_NOMSG with no chunk list: expected a Read list, Write list or Reply chunk");
			return false;
		}
		if (proc != RPCRDMA_V1_NOMSG &&
		    !loc_need(l, 4, "RPC message (its XID word at least)"))
			return false;
		break;
	case RPCRDMA_V1_DONE:
		break;
	case RPCRDMA_V1_ERROR:
		at = loc_off(l);
		if (!loc_u32(l, &w, "rdma_err"))
			return false;
		if (w == RPCRDMA_V1_ERR_VERS) {
			if (!loc_u32(l, &w, "rdma_vers_low") ||
			    !loc_u32(l, &w, "rdma_vers_high"))
				return false;
		} else if (w != RPCRDMA_V1_ERR_CHUNK) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_ERRCODE,
				"rdma_err %u: expected ERR_VERS (1) or ERR_CHUNK (2)",
				w);
			return false;
		}
		break;
	default:
		set_err(l->err, at, RPCRDMA_ERR_BAD_PROC,
			"rdma_proc %u: expected RDMA_MSG (0), RDMA_NOMSG (1), RDMA_MSGP (2), RDMA_DONE (3) or RDMA_ERROR (4)",
			proc);
		return false;
	}
	return header_size_ok(l);
}

/* Walk a v2 header; true if the walk found nothing wrong. */
static bool locate_v2(struct loc *l)
{
	uint32_t w, htype, flags;
	bool any;
	if (!loc_u32(l, &w, "rdma_xid") || !loc_u32(l, &w, "rdma_vers") ||
	    !loc_u32(l, &w, "rdma_credit"))
		return false;
	size_t at_htype = loc_off(l);
	if (!loc_u32(l, &htype, "rdma_htype"))
		return false;
	size_t at_flags = loc_off(l);
	if (!loc_u32(l, &flags, "rdma_flags"))
		return false;
	size_t at;
	switch (htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		if (!loc_u32(l, &w, "rdma_inv_handle"))
			return false;
		at = loc_off(l);
		if (!loc_chunk_lists(l, &any))
			return false;
		if (htype == RPCRDMA_V2_NOMSG && !any) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_CHUNK,
				"RDMA2_NOMSG with no chunk list: expected a Read list, Write list or Reply chunk");
			return false;
		}
		if (htype == RPCRDMA_V2_MSG &&
		    !loc_need(l, 4, "rdma_rpc_first_word (the RPC message)"))
			return false;
		break;
	case RPCRDMA_V2_ERROR:
		if (!(flags & RPCRDMA_V2_F_RESPONSE)) {
			set_err(l->err, at_flags, RPCRDMA_ERR_BAD_FLAGS,
				"rdma_flags 0x%x: expected RDMA2_F_RESPONSE (bit 0) set in an RDMA2_ERROR",
				flags);
			return false;
		}
		if (!loc_u32(l, &w, "rdma_err"))
			return false;
		switch (w) {
		case RPCRDMA_V2_ERR_VERS:
			if (!loc_u32(l, &w, "rdma_vers_low") ||
			    !loc_u32(l, &w, "rdma_vers_high"))
				return false;
			break;
		case RPCRDMA_V2_ERR_READ_CHUNKS:
		case RPCRDMA_V2_ERR_WRITE_CHUNKS:
			if (!loc_u32(l, &w, "rdma_max_chunks"))
				return false;
			break;
		case RPCRDMA_V2_ERR_SEGMENTS:
			if (!loc_u32(l, &w, "rdma_max_segments"))
				return false;
			break;
		case RPCRDMA_V2_ERR_WRITE_RESOURCE:
			if (!loc_u32(l, &w, "rdma_chunk_index") ||
			    !loc_u32(l, &w, "rdma_length_needed"))
				return false;
			break;
		case RPCRDMA_V2_ERR_REPLY_RESOURCE:
			if (!loc_u32(l, &w, "rdma_length_needed"))
				return false;
			break;
		default:
			break; /* void arm */
		}
		break;
	case RPCRDMA_V2_CONNPROP: {
		struct rpcrdma_limits lim = rpcrdma_limits_default();
		uint32_t n;
		at = loc_off(l);
		if (!loc_u32(l, &n, "rdma_props count"))
			return false;
		if (n > lim.max_properties) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_PROPERTY,
				"rdma_props has %u properties: expected at most %u",
				n, lim.max_properties);
			return false;
		}
		for (uint32_t i = 0; i < n; i++) {
			char what[64];
			uint32_t which, plen;
			snprintf(what, sizeof what, "property %u rdma_which", i + 1);
			if (!loc_u32(l, &which, what))
				return false;
			at = loc_off(l);
			snprintf(what, sizeof what, "property %u rdma_data length", i + 1);
			if (!loc_u32(l, &plen, what))
				return false;
			size_t padded = ((size_t)plen + 3) & ~(size_t)3;
			size_t data_at = loc_off(l);
			snprintf(what, sizeof what, "property %u rdma_data", i + 1);
			if (!loc_skip(l, padded, what))
				return false;
			bool known = which == RPCRDMA_V2_PROPID_RBSIZ ||
				     which == RPCRDMA_V2_PROPID_BRS;
			if (known && plen != 0 && plen != 4) {
				set_err(l->err, at, RPCRDMA_ERR_BAD_PROPERTY,
					"property %u (%s) rdma_data is %u bytes: expected 0 or 4",
					i + 1, rpcrdma_v2_propid_name(which), plen);
				return false;
			}
			if (which == RPCRDMA_V2_PROPID_BRS && plen == 4) {
				const uint8_t *p = l->d.base + (data_at - l->base);
				uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
					     (uint32_t)p[2] << 8 | p[3];
				if (v > RPCRDMA_V2_RVREQSUP_GENL) {
					set_err(l->err, data_at, RPCRDMA_ERR_BAD_PROPERTY,
						"BRS value %u: expected RDMA2_RVREQSUP_NONE (0), _INLINE (1) or _GENL (2)",
						v);
					return false;
				}
			}
		}
		break;
	}
	default:
		set_err(l->err, at_htype, RPCRDMA_ERR_BAD_PROC,
			"rdma_htype %u: expected RDMA2_MSG (0), RDMA2_NOMSG (1), RDMA2_ERROR (4) or RDMA2_CONNPROP (5)",
			htype);
		return false;
	}
	return header_size_ok(l);
}

static bool loc_auth(struct loc *l, const char *name)
{
	char what[64];
	uint32_t flavor, n;
	snprintf(what, sizeof what, "%s flavor", name);
	if (!loc_u32(l, &flavor, what))
		return false;
	size_t at = loc_off(l);
	snprintf(what, sizeof what, "%s body length", name);
	if (!loc_u32(l, &n, what))
		return false;
	if (n > RPCRDMA_AUTH_MAX_BODY) {
		set_err(l->err, at, RPCRDMA_ERR_BAD_AUTH,
			"%s body length %u: expected at most %u", name, n,
			RPCRDMA_AUTH_MAX_BODY);
		return false;
	}
	snprintf(what, sizeof what, "%s body", name);
	return loc_skip(l, ((size_t)n + 3) & ~(size_t)3, what);
}

/* Walk an ONC RPC message header (RFC 5531 §9). */
static bool locate_rpc(struct loc *l)
{
	uint32_t w, mtype;
	if (!loc_u32(l, &w, "RPC xid"))
		return false;
	size_t at = loc_off(l);
	if (!loc_u32(l, &mtype, "RPC msg_type"))
		return false;
	if (mtype == RPCRDMA_RPC_CALL) {
		at = loc_off(l);
		if (!loc_u32(l, &w, "RPC rpcvers"))
			return false;
		if (w != RPCRDMA_RPC_VERS) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_RPCVERS,
				"RPC rpcvers %u: expected 2", w);
			return false;
		}
		return loc_u32(l, &w, "RPC prog") && loc_u32(l, &w, "RPC vers") &&
		       loc_u32(l, &w, "RPC proc") && loc_auth(l, "RPC cred") &&
		       loc_auth(l, "RPC verf");
	}
	if (mtype != RPCRDMA_RPC_REPLY) {
		set_err(l->err, at, RPCRDMA_ERR_BAD_MSG_TYPE,
			"RPC msg_type %u: expected CALL (0) or REPLY (1)", mtype);
		return false;
	}
	at = loc_off(l);
	if (!loc_u32(l, &w, "RPC reply_stat"))
		return false;
	if (w == RPCRDMA_RPC_MSG_ACCEPTED) {
		if (!loc_auth(l, "RPC verf"))
			return false;
		at = loc_off(l);
		if (!loc_u32(l, &w, "RPC accept_stat"))
			return false;
		if (w == RPCRDMA_RPC_PROG_MISMATCH)
			return loc_u32(l, &w, "RPC mismatch_info low") &&
			       loc_u32(l, &w, "RPC mismatch_info high");
		if (w > RPCRDMA_RPC_SYSTEM_ERR) {
			set_err(l->err, at, RPCRDMA_ERR_BAD_STAT,
				"RPC accept_stat %u: expected 0..5", w);
			return false;
		}
		return true;
	}
	if (w != RPCRDMA_RPC_MSG_DENIED) {
		set_err(l->err, at, RPCRDMA_ERR_BAD_STAT,
			"RPC reply_stat %u: expected MSG_ACCEPTED (0) or MSG_DENIED (1)",
			w);
		return false;
	}
	at = loc_off(l);
	if (!loc_u32(l, &w, "RPC reject_stat"))
		return false;
	if (w == RPCRDMA_RPC_RPC_MISMATCH)
		return loc_u32(l, &w, "RPC mismatch_info low") &&
		       loc_u32(l, &w, "RPC mismatch_info high");
	if (w == RPCRDMA_RPC_AUTH_ERROR)
		return loc_u32(l, &w, "RPC auth_stat");
	set_err(l->err, at, RPCRDMA_ERR_BAD_STAT,
		"RPC reject_stat %u: expected RPC_MISMATCH (0) or AUTH_ERROR (1)",
		w);
	return false;
}

/* A library decoder said rc; find the offset, or fall back to offset of
 * the whole item with the library's own words. */
static void explain(struct dump_error *err, int rc, const uint8_t *buf,
		    size_t len, size_t base, bool (*walk)(struct loc *),
		    const char *what)
{
	struct loc l;
	rpcrdma_xdr_dec_init(&l.d, buf, len);
	l.err = err;
	l.base = base;
	if (!walk(&l))
		return;
	set_err(err, base, rc, "%s rejected: %s", what, rpcrdma_strerror(rc));
}

/* ------------------------------------------------------------------ */
/* Emitting                                                            */

static void emit_segment(struct dump_out *o, const struct rpcrdma_segment *s)
{
	dump_obj_begin_inline(o, NULL);
	dump_x32(o, "handle", s->handle, NULL);
	dump_u32(o, "length", s->length, NULL);
	dump_x64(o, "offset", s->offset);
	dump_obj_end(o);
}

static void emit_chunk(struct dump_out *o, const char *key,
		       const struct rpcrdma_write_chunk *c)
{
	dump_arr_begin(o, key);
	for (uint32_t i = 0; i < c->nsegs; i++)
		emit_segment(o, &c->segs[i]);
	dump_arr_end(o);
}

static void emit_chunk_lists(struct dump_out *o,
			     const struct rpcrdma_chunk_lists *cl)
{
	dump_arr_begin(o, "rdma_reads");
	for (uint32_t i = 0; i < cl->nreads; i++) {
		const struct rpcrdma_read_segment *r = &cl->reads[i];
		dump_obj_begin_inline(o, NULL);
		dump_u32(o, "position", r->position, NULL);
		dump_x32(o, "handle", r->target.handle, NULL);
		dump_u32(o, "length", r->target.length, NULL);
		dump_x64(o, "offset", r->target.offset);
		dump_obj_end(o);
	}
	dump_arr_end(o);
	dump_arr_begin(o, "rdma_writes");
	for (uint32_t i = 0; i < cl->nwrites; i++)
		emit_chunk(o, NULL, &cl->writes[i]);
	dump_arr_end(o);
	if (cl->has_reply)
		emit_chunk(o, "rdma_reply", &cl->reply);
	else
		dump_null(o, "rdma_reply");
}

static void emit_auth(struct dump_out *o, const char *key,
		      const struct rpcrdma_opaque_auth *a)
{
	dump_obj_begin(o, key);
	dump_u32(o, "flavor", a->flavor, rpcrdma_auth_flavor_name(a->flavor));
	dump_cstr(o, "flavor_name", rpcrdma_auth_flavor_name(a->flavor));
	dump_u32(o, "length", a->len, NULL);
	if (a->flavor == RPCRDMA_AUTH_SYS) {
		struct rpcrdma_authsys_parms p;
		int rc = rpcrdma_authsys_decode(a, &p);
		if (rc == 0) {
			dump_u32(o, "stamp", p.stamp, NULL);
			dump_str(o, "machinename", p.machinename,
				 p.machinename_len);
			dump_u32(o, "uid", p.uid, NULL);
			dump_u32(o, "gid", p.gid, NULL);
			dump_arr_begin(o, "gids");
			for (uint32_t i = 0; i < p.ngids; i++)
				dump_u32(o, NULL, p.gids[i], NULL);
			dump_arr_end(o);
		} else {
			dump_cstr(o, "auth_sys_error", rpcrdma_strerror(rc));
			dump_hex(o, "body", a->body, a->len);
		}
	} else if (a->len) {
		dump_hex(o, "body", a->body, a->len);
	}
	dump_obj_end(o);
}

static const char *nn(const char *s)
{
	return s ? s : "unknown";
}

static void emit_rpc(struct dump_out *o, const struct rpcrdma_rpc_msg *m,
		     size_t hdr_len, size_t total)
{
	dump_obj_begin(o, "rpc");
	dump_x32(o, "xid", m->xid, NULL);
	dump_u32(o, "msg_type", m->mtype, rpcrdma_rpc_msg_type_name(m->mtype));
	dump_cstr(o, "msg_type_name", rpcrdma_rpc_msg_type_name(m->mtype));
	if (m->mtype == RPCRDMA_RPC_CALL) {
		dump_u32(o, "rpcvers", m->call.rpcvers, NULL);
		char pn[64];
		dump_prog_name(m->call.prog, pn, sizeof pn);
		dump_u32(o, "prog", m->call.prog, pn);
		dump_u32(o, "vers", m->call.vers, NULL);
		dump_u32(o, "proc", m->call.proc, NULL);
		emit_auth(o, "cred", &m->call.cred);
		emit_auth(o, "verf", &m->call.verf);
	} else {
		const struct rpcrdma_rpc_reply *r = &m->reply;
		dump_u32(o, "reply_stat", r->stat,
			 rpcrdma_rpc_reply_stat_name(r->stat));
		dump_cstr(o, "reply_stat_name",
			  rpcrdma_rpc_reply_stat_name(r->stat));
		if (r->stat == RPCRDMA_RPC_MSG_ACCEPTED) {
			emit_auth(o, "verf", &r->accepted.verf);
			dump_u32(o, "accept_stat", r->accepted.stat,
				 rpcrdma_rpc_accept_stat_name(r->accepted.stat));
			dump_cstr(o, "accept_stat_name",
				  rpcrdma_rpc_accept_stat_name(r->accepted.stat));
			if (r->accepted.stat == RPCRDMA_RPC_PROG_MISMATCH) {
				dump_u32(o, "mismatch_low", r->accepted.mismatch.low, NULL);
				dump_u32(o, "mismatch_high", r->accepted.mismatch.high, NULL);
			}
		} else {
			dump_u32(o, "reject_stat", r->rejected.stat,
				 rpcrdma_rpc_reject_stat_name(r->rejected.stat));
			dump_cstr(o, "reject_stat_name",
				  rpcrdma_rpc_reject_stat_name(r->rejected.stat));
			if (r->rejected.stat == RPCRDMA_RPC_RPC_MISMATCH) {
				dump_u32(o, "mismatch_low", r->rejected.mismatch.low, NULL);
				dump_u32(o, "mismatch_high", r->rejected.mismatch.high, NULL);
			} else {
				dump_u32(o, "auth_stat", r->rejected.auth_stat,
					 rpcrdma_rpc_auth_stat_name(r->rejected.auth_stat));
				dump_cstr(o, "auth_stat_name",
					  rpcrdma_rpc_auth_stat_name(r->rejected.auth_stat));
			}
		}
	}
	dump_u32(o, "header_length", (uint32_t)hdr_len, NULL);
	dump_u32(o, "body_length", (uint32_t)(total - hdr_len),
		 m->mtype == RPCRDMA_RPC_CALL ? "call arguments inline"
					       : "results inline");
	dump_obj_end(o);
}

/* Decode the RPC message at buf[off..len); 0 or -1 with *err. */
static int decode_rpc(const uint8_t *buf, size_t len, size_t off,
		      struct rpcrdma_rpc_msg *m, int *hdr_len,
		      struct dump_error *err)
{
	int rc = rpcrdma_rpc_msg_decode(buf + off, len - off, m);
	if (rc < 0) {
		explain(err, rc, buf + off, len - off, off, locate_rpc,
			"RPC message header");
		return -1;
	}
	*hdr_len = rc;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The three kinds of message                                          */

static int dump_v1(struct dump_out *o, const char *key, const uint8_t *buf,
		   size_t len, struct dump_error *err)
{
	static struct rpcrdma_v1_hdr h; /* large: embedded chunk arrays */
	rpcrdma_v1_hdr_init(&h);
	int rc = rpcrdma_v1_decode(buf, len, NULL, &h);
	/* An ERR_VERS answer echoes whatever version it was sent (RFC 8166
	 * §4.5); its body layout is fixed for all versions. */
	bool echo = rc == RPCRDMA_ERR_BAD_VERSION &&
		    h.proc == RPCRDMA_V1_ERROR && h.err == RPCRDMA_V1_ERR_VERS;
	if (rc < 0 && !echo) {
		explain(err, rc, buf, len, 0, locate_v1,
			"RPC-over-RDMA version 1 header");
		return -1;
	}
	struct rpcrdma_rpc_msg m;
	int rpc_len = 0;
	bool has_rpc = h.proc == RPCRDMA_V1_MSG || h.proc == RPCRDMA_V1_MSGP;
	if (has_rpc && decode_rpc(buf, len, h.hdr_len, &m, &rpc_len, err))
		return -1;

	dump_obj_begin(o, key);
	dump_cstr(o, "kind", "rpcrdma_v1");
	dump_u32(o, "length", (uint32_t)len, NULL);
	dump_x32(o, "rdma_xid", h.xid, NULL);
	dump_u32(o, "rdma_vers", h.vers, NULL);
	dump_u32(o, "rdma_credit", h.credit, NULL);
	dump_u32(o, "rdma_proc", h.proc, rpcrdma_v1_proc_name(h.proc));
	dump_cstr(o, "rdma_proc_name", nn(rpcrdma_v1_proc_name(h.proc)));
	switch (h.proc) {
	case RPCRDMA_V1_MSGP:
		dump_u32(o, "rdma_align", h.align, NULL);
		dump_u32(o, "rdma_thresh", h.thresh, NULL);
		/* fall through */
	case RPCRDMA_V1_MSG:
	case RPCRDMA_V1_NOMSG:
		emit_chunk_lists(o, &h.chunks);
		break;
	case RPCRDMA_V1_ERROR:
		dump_u32(o, "rdma_err", h.err, rpcrdma_v1_err_name(h.err));
		dump_cstr(o, "rdma_err_name", nn(rpcrdma_v1_err_name(h.err)));
		if (h.err == RPCRDMA_V1_ERR_VERS) {
			dump_u32(o, "rdma_vers_low", h.vers_low, NULL);
			dump_u32(o, "rdma_vers_high", h.vers_high, NULL);
		}
		break;
	default:
		break;
	}
	dump_u32(o, "header_length", (uint32_t)h.hdr_len, NULL);
	if (has_rpc)
		emit_rpc(o, &m, (size_t)rpc_len, len - h.hdr_len);
	else if (len > h.hdr_len)
		dump_u32(o, "trailing_bytes", (uint32_t)(len - h.hdr_len),
			 "not part of this header");
	dump_obj_end(o);
	return 0;
}

static void emit_v2_error(struct dump_out *o, const struct rpcrdma_v2_error *e)
{
	dump_u32(o, "rdma_err", e->code, rpcrdma_v2_err_name(e->code));
	dump_cstr(o, "rdma_err_name", nn(rpcrdma_v2_err_name(e->code)));
	switch (e->code) {
	case RPCRDMA_V2_ERR_VERS:
		dump_u32(o, "rdma_vers_low", e->vers_low, NULL);
		dump_u32(o, "rdma_vers_high", e->vers_high, NULL);
		break;
	case RPCRDMA_V2_ERR_READ_CHUNKS:
	case RPCRDMA_V2_ERR_WRITE_CHUNKS:
		dump_u32(o, "rdma_max_chunks", e->max_chunks, NULL);
		break;
	case RPCRDMA_V2_ERR_SEGMENTS:
		dump_u32(o, "rdma_max_segments", e->max_segments, NULL);
		break;
	case RPCRDMA_V2_ERR_WRITE_RESOURCE:
		dump_u32(o, "rdma_chunk_index", e->chunk_index, NULL);
		dump_u32(o, "rdma_length_needed", e->length_needed, NULL);
		break;
	case RPCRDMA_V2_ERR_REPLY_RESOURCE:
		dump_u32(o, "rdma_length_needed", e->length_needed, NULL);
		break;
	default:
		break;
	}
}

static const char *brs_name(uint32_t v)
{
	switch (v) {
	case RPCRDMA_V2_RVREQSUP_NONE: return "RDMA2_RVREQSUP_NONE";
	case RPCRDMA_V2_RVREQSUP_INLINE: return "RDMA2_RVREQSUP_INLINE";
	case RPCRDMA_V2_RVREQSUP_GENL: return "RDMA2_RVREQSUP_GENL";
	default: return NULL;
	}
}

static void emit_v2_props(struct dump_out *o, const struct rpcrdma_v2_hdr *h)
{
	dump_arr_begin(o, "rdma_props");
	for (uint32_t i = 0; i < h->nprops; i++) {
		const struct rpcrdma_v2_prop *p = &h->props[i];
		const char *name = rpcrdma_v2_propid_name(p->propid);
		bool known = p->propid == RPCRDMA_V2_PROPID_RBSIZ ||
			     p->propid == RPCRDMA_V2_PROPID_BRS;
		dump_obj_begin_inline(o, NULL);
		dump_u32(o, "rdma_which", p->propid, NULL);
		dump_cstr(o, "name", nn(name));
		if (known && p->has_value)
			dump_u32(o, "value", p->value,
				 p->propid == RPCRDMA_V2_PROPID_BRS
					 ? brs_name(p->value) : NULL);
		else if (known)
			dump_cstr(o, "value", "default");
		else
			dump_hex(o, "data", p->data, p->len);
		dump_obj_end(o);
	}
	dump_arr_end(o);
}

static int dump_v2(struct dump_out *o, const char *key, const uint8_t *buf,
		   size_t len, struct dump_error *err)
{
	static struct rpcrdma_v2_hdr h;
	rpcrdma_v2_hdr_init(&h);
	int rc = rpcrdma_v2_decode(buf, len, NULL, &h);
	if (rc < 0) {
		explain(err, rc, buf, len, 0, locate_v2,
			"RPC-over-RDMA version 2 header");
		return -1;
	}
	struct rpcrdma_rpc_msg m;
	int rpc_len = 0;
	bool has_rpc = h.htype == RPCRDMA_V2_MSG;
	if (has_rpc && decode_rpc(buf, len, h.hdr_len, &m, &rpc_len, err))
		return -1;

	dump_obj_begin(o, key);
	dump_cstr(o, "kind", "rpcrdma_v2");
	dump_u32(o, "length", (uint32_t)len, NULL);
	dump_x32(o, "rdma_xid", h.xid, NULL);
	dump_u32(o, "rdma_vers", h.vers, NULL);
	dump_u32(o, "rdma_credit", h.credit, NULL);
	dump_u32(o, "rdma_htype", h.htype, rpcrdma_v2_htype_name(h.htype));
	dump_cstr(o, "rdma_htype_name", nn(rpcrdma_v2_htype_name(h.htype)));
	dump_x32(o, "rdma_flags", h.flags,
		 (h.flags & RPCRDMA_V2_F_RESPONSE) ? "RDMA2_F_RESPONSE" : NULL);
	dump_bool(o, "response", (h.flags & RPCRDMA_V2_F_RESPONSE) != 0);
	if (h.flags & RPCRDMA_V2_F_RESERVED)
		dump_x32(o, "reserved_flags", h.flags & RPCRDMA_V2_F_RESERVED,
			 "senders MUST send these as zero");
	switch (h.htype) {
	case RPCRDMA_V2_MSG:
	case RPCRDMA_V2_NOMSG:
		dump_x32(o, "rdma_inv_handle", h.inv_handle,
			 h.inv_handle ? NULL : "none");
		emit_chunk_lists(o, &h.chunks);
		break;
	case RPCRDMA_V2_ERROR:
		emit_v2_error(o, &h.error);
		break;
	case RPCRDMA_V2_CONNPROP:
		emit_v2_props(o, &h);
		break;
	default:
		break;
	}
	dump_u32(o, "header_length", (uint32_t)h.hdr_len, NULL);
	if (has_rpc)
		emit_rpc(o, &m, (size_t)rpc_len, len - h.hdr_len);
	else if (len > h.hdr_len)
		dump_u32(o, "trailing_bytes", (uint32_t)(len - h.hdr_len),
			 "not part of this header");
	dump_obj_end(o);
	return 0;
}

static int dump_pdata(struct dump_out *o, const char *key, const uint8_t *buf,
		      size_t len, struct dump_error *err)
{
	struct rpcrdma_cm_pdata pd;
	if (!rpcrdma_cm_pdata_decode(buf, len, &pd)) {
		if (len < RPCRDMA_CM_PDATA_LEN)
			set_err(err, 4, RPCRDMA_ERR_TRUNCATED,
				"truncated: expected RFC 8797 version, flags, send size, receive size (4 bytes), only %zu left",
				len - 4);
		else if (pd.status == RPCRDMA_ERR_BAD_VERSION)
			set_err(err, 4, RPCRDMA_ERR_BAD_VERSION,
				"RFC 8797 private data version %u: expected 1",
				buf[4]);
		else
			set_err(err, 0, pd.status,
				"RFC 8797 private data rejected: %s",
				rpcrdma_strerror(pd.status));
		return -1;
	}
	dump_obj_begin(o, key);
	dump_cstr(o, "kind", "cm_private_data");
	dump_u32(o, "length", (uint32_t)len, NULL);
	dump_x32(o, "magic", RPCRDMA_CM_PDATA_MAGIC, "RFC 8797 format identifier");
	dump_u32(o, "version", pd.version, NULL);
	dump_x32(o, "flags", pd.flags, NULL);
	dump_bool(o, "remote_invalidation", pd.remote_inv);
	dump_u32(o, "send_size_code", pd.send_code, NULL);
	dump_u32(o, "recv_size_code", pd.recv_code, NULL);
	dump_u32(o, "max_send_size", pd.max_send, "bytes");
	dump_u32(o, "max_recv_size", pd.max_recv, "bytes");
	if (len > RPCRDMA_CM_PDATA_LEN)
		dump_hex(o, "extension_bytes", buf + RPCRDMA_CM_PDATA_LEN,
			 len - RPCRDMA_CM_PDATA_LEN);
	dump_obj_end(o);
	return 0;
}

static uint32_t word(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

int dump_message(struct dump_out *o, const char *key, const uint8_t *buf,
		 size_t len, struct dump_error *err)
{
	memset(err, 0, sizeof *err);
	if (len < 4) {
		set_err(err, 0, RPCRDMA_ERR_TRUNCATED,
			"truncated: expected rdma_xid or the RFC 8797 format identifier (4 bytes), only %zu left",
			len);
		return -1;
	}
	/* Private data: magic first, and a second word that cannot be a
	 * transport version (octet 4 is the private data version, so the
	 * word is 0x01xxxxxx for version 1). */
	if (word(buf) == RPCRDMA_CM_PDATA_MAGIC &&
	    (len < 8 || (word(buf + 4) != RPCRDMA_VERSION_1 &&
			 word(buf + 4) != RPCRDMA_VERSION_2)))
		return dump_pdata(o, key, buf, len, err);
	if (len < 8) {
		set_err(err, 4, RPCRDMA_ERR_TRUNCATED,
			"truncated: expected rdma_vers (4 bytes), only %zu left",
			len - 4);
		return -1;
	}
	uint32_t vers = word(buf + 4);
	if (vers == RPCRDMA_VERSION_1)
		return dump_v1(o, key, buf, len, err);
	if (vers == RPCRDMA_VERSION_2)
		return dump_v2(o, key, buf, len, err);
	/* An ERR_VERS reply carries the version it answers. */
	if (len >= 20 && word(buf + 12) == RPCRDMA_V1_ERROR &&
	    word(buf + 16) == RPCRDMA_V1_ERR_VERS)
		return dump_v1(o, key, buf, len, err);
	set_err(err, 4, RPCRDMA_ERR_BAD_VERSION,
		"rdma_vers %u: expected 1 or 2 (RPC-over-RDMA version), or the RFC 8797 format identifier 0xf6ab0e18 at offset 0",
		vers);
	return -1;
}
