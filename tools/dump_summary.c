/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-dump's default view of a capture: one line per message, as
 * tshark prints one per packet, and the display filter (--xid, --prog,
 * --type) that -V's detail obeys too.  A reply carries no program
 * number (RFC 5531 §9), so the program and procedure of the call with
 * the same XID, when the capture holds it, are shown and filtered on.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "dump_summary.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t chunk_bytes(const struct rpcrdma_write_chunk *c)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < c->nsegs; i++)
		n += c->segs[i].length;
	return n;
}

static void remember(struct dump_view *v, const struct dump_info *in)
{
	struct dump_seen *s = &v->seen[v->nseen++ % DUMP_SEEN];
	s->xid = in->xid;
	s->prog = in->prog;
	s->vers = in->vers;
	s->proc = in->proc;
}

static const struct dump_seen *recall(const struct dump_view *v, uint32_t xid)
{
	unsigned n = v->nseen < DUMP_SEEN ? v->nseen : DUMP_SEEN;
	for (unsigned i = 0; i < n; i++) {
		const struct dump_seen *s = &v->seen[(v->nseen - 1 - i) % DUMP_SEEN];
		if (s->xid == xid)
			return s;
	}
	return NULL;
}

static void rpc_part(struct dump_info *in, const uint8_t *p, size_t len)
{
	struct rpcrdma_rpc_msg m;
	if (rpcrdma_rpc_msg_decode(p, len, &m) < 0)
		return;
	in->has_rpc = true;
	in->is_call = m.mtype == RPCRDMA_RPC_CALL;
	if (in->is_call) {
		in->prog = m.call.prog;
		in->vers = m.call.vers;
		in->proc = m.call.proc;
	} else {
		in->reply_stat = m.reply.stat;
		in->accept_stat = m.reply.accepted.stat;
	}
}

void dump_info_parse(struct dump_view *v, const uint8_t *buf, size_t len,
		     struct dump_info *in)
{
	memset(in, 0, sizeof *in);
	if (len < 16) {
		in->type = "short";
		return;
	}
	in->xid = be32(buf);
	in->rdma_vers = be32(buf + 4);
	in->credit = be32(buf + 8);
	uint32_t t = be32(buf + 12);
	const struct rpcrdma_chunk_lists *cl = NULL;
	static struct rpcrdma_v1_hdr h1;
	static struct rpcrdma_v2_hdr h2;
	size_t hl = 0;
	if (in->rdma_vers == 2 && rpcrdma_v2_decode(buf, len, NULL, &h2) >= 0) {
		static const char *const n[] = {"MSG", "NOMSG", "?", "?", "ERROR",
						"CONNPROP"};
		in->type = t < 6 ? n[t] : "?";
		cl = &h2.chunks;
		hl = h2.hdr_len;
		if (t == RPCRDMA_V2_ERROR)
			in->err = h2.error.code;
		in->is_msg = t == RPCRDMA_V2_MSG;
		in->is_nomsg = t == RPCRDMA_V2_NOMSG;
	} else if (rpcrdma_v1_decode(buf, len, NULL, &h1) >= 0 ||
		   (t == RPCRDMA_V1_ERROR && len >= 20)) {
		static const char *const n[] = {"MSG", "NOMSG", "MSGP", "DONE",
						"ERROR"};
		in->type = t < 5 ? n[t] : "?";
		if (t == RPCRDMA_V1_ERROR) {
			in->err = be32(buf + 16);
		} else {
			cl = &h1.chunks;
			hl = h1.hdr_len;
		}
		in->is_msg = t == RPCRDMA_V1_MSG || t == RPCRDMA_V1_MSGP;
		in->is_nomsg = t == RPCRDMA_V1_NOMSG;
	} else {
		in->type = "undecodable";
		return;
	}
	if (cl) {
		in->nreads = cl->nreads;
		in->nwrites = cl->nwrites;
		in->has_reply = cl->has_reply;
		if (cl->has_reply)
			in->reply_bytes = chunk_bytes(&cl->reply);
	}
	if (in->is_msg)
		rpc_part(in, buf + hl, len - hl);
	/* A NOMSG carries its RPC message in chunks: a Position-Zero Read
	 * chunk is a Long Call, a returned Reply chunk a Long Reply. */
	if (in->is_nomsg && in->nreads) {
		in->is_call = true;
		in->long_call = true;
	}
	if (in->is_call && in->has_rpc)
		remember(v, in);
	if (!in->is_call && (in->has_rpc || in->is_nomsg || in->err)) {
		const struct dump_seen *s = recall(v, in->xid);
		if (s) {
			in->prog = s->prog;
			in->vers = s->vers;
			in->proc = s->proc;
			in->call_known = true;
		}
	}
}

/* The --type words. */
static bool type_is(const struct dump_info *in, const char *t)
{
	if (!strcmp(t, "call"))
		return in->is_call;
	if (!strcmp(t, "reply"))
		return !in->is_call && (in->has_rpc || in->is_nomsg);
	if (!strcmp(t, "error"))
		return !strcmp(in->type, "ERROR");
	return !strcasecmp(t, in->type);
}

bool dump_view_match(const struct dump_view *v, const struct dump_info *in)
{
	if (v->has_xid && in->xid != v->xid)
		return false;
	if (v->has_prog && !((in->is_call && in->has_rpc) || in->call_known))
		return false;
	if (v->has_prog && in->prog != v->prog)
		return false;
	if (v->type && !type_is(in, v->type))
		return false;
	return true;
}

bool dump_view_filters(const struct dump_view *v)
{
	return v->has_xid || v->has_prog || v->type;
}

/* "0x186a3 nfs": the program number in hex and its name in /etc/rpc. */
void dump_prog_name(uint32_t prog, char *out, size_t cap)
{
	struct rpcent *r = getrpcbynumber((int)prog);
	if (r && r->r_name)
		snprintf(out, cap, "%#x %s", prog, r->r_name);
	else
		snprintf(out, cap, "%#x", prog);
}

void dump_summary_line(FILE *f, unsigned frame, double t, const char *src,
		       const char *dst, const struct dump_info *in)
{
	char rpc[160] = "", chunks[96] = "", pn[64];
	if (in->is_call && in->has_rpc) {
		dump_prog_name(in->prog, pn, sizeof pn);
		snprintf(rpc, sizeof rpc, " CALL prog %s vers %u proc %u", pn,
			 in->vers, in->proc);
	} else if (in->long_call) {
		snprintf(rpc, sizeof rpc, " CALL (Long Call, in the Read chunk)");
	} else if (in->has_rpc || in->is_nomsg || in->err) {
		const char *what =
			in->err ? (in->rdma_vers == 2
				   ? (in->err == RPCRDMA_V2_ERR_VERS ? "RDMA2_ERR_VERS"
				      : in->err == RPCRDMA_V2_ERR_BAD_XDR ? "RDMA2_ERR_BAD_XDR"
				      : "RDMA2_ERROR")
				   : (in->err == RPCRDMA_V1_ERR_VERS ? "ERR_VERS"
				      : "ERR_CHUNK"))
			: in->is_nomsg ? "REPLY (Long Reply, in the Reply chunk)"
			: in->reply_stat ? "REPLY denied"
			: in->accept_stat ? rpcrdma_rpc_accept_stat_name(in->accept_stat)
			: "REPLY";
		int n = snprintf(rpc, sizeof rpc, " %s%s", what,
				 !in->err && !in->is_nomsg && !in->reply_stat &&
						 in->accept_stat
					 ? " (REPLY)"
					 : "");
		if (in->call_known && n > 0 && (size_t)n < sizeof rpc) {
			dump_prog_name(in->prog, pn, sizeof pn);
			snprintf(rpc + n, sizeof rpc - (size_t)n,
				 " to prog %s vers %u proc %u", pn, in->vers,
				 in->proc);
		}
	}
	if (in->nreads || in->nwrites || in->has_reply) {
		int n = snprintf(chunks, sizeof chunks, " [");
		if (in->nreads)
			n += snprintf(chunks + n, sizeof chunks - (size_t)n,
				      "read %u seg%s", in->nreads,
				      in->nreads == 1 ? "" : "s");
		if (in->nwrites)
			n += snprintf(chunks + n, sizeof chunks - (size_t)n,
				      "%swrite %u", in->nreads ? ", " : "",
				      in->nwrites);
		if (in->has_reply)
			n += snprintf(chunks + n, sizeof chunks - (size_t)n,
				      "%sreply %llu B",
				      in->nreads || in->nwrites ? ", " : "",
				      (unsigned long long)in->reply_bytes);
		snprintf(chunks + n, sizeof chunks - (size_t)n, "]");
	}
	fprintf(f, "%6u %10.6f %s -> %s v%u %-8s xid 0x%08x cr %u%s%s\n", frame,
		t, src, dst, in->rdma_vers, in->type, in->xid, in->credit, rpc,
		chunks);
}
