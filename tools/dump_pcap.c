/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-dump: captures (see dump_pcap.h).
 *
 * Pipeline, per packet:
 *   capture record (pcap / pcapng) -> link layer (Ethernet, VLAN, Linux
 *   cooked v1/v2, BSD loopback, raw IP) -> IPv4 / IPv6 -> TCP -> per
 *   direction byte stream (ordered by sequence number; retransmitted
 *   bytes dropped, early segments held until the gap fills) -> MPA
 *   Request/Reply, then FPDUs (CRC checked when negotiated) -> DDP/RDMAP
 *   header -> untagged Sends on queue 0 reassembled by MSN/MO ->
 *   dump_message().
 *
 * Not handled (reported, never guessed): MPA markers, IPv4 fragments,
 * streams whose first bytes are not an MPA Request/Reply (capture
 * started mid-connection).
 */
#include "dump_pcap.h"
#include "dump_summary.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dump_msg.h"
#include "dump_out.h"
#include "provider/iwarp/iwarp_wire.h"
#include "rpcrdma/error.h"
#include "wire/cm_private_data.h"

#define MAX_SEND (1u << 20)   /* largest reassembled Send we keep */
#define MAX_PENDING_SENDS 8   /* Sends in progress per direction */
#define MAX_STREAM_BACKLOG (4u << 20) /* held out-of-order bytes */

/* ------------------------------------------------------------------ */
/* Little helpers                                                      */

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}
static uint16_t rd16(const uint8_t *p, bool swap)
{
	return swap ? be16(p) : (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const uint8_t *p, bool swap)
{
	return swap ? be32(p)
		    : (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			      (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

bool dump_pcap_is_capture(const uint8_t *buf, size_t len)
{
	if (len < 4)
		return false;
	uint32_t le = rd32(buf, false);
	return le == 0xa1b2c3d4u || le == 0xd4c3b2a1u || le == 0xa1b23c4du ||
	       le == 0x4d3cb2a1u || le == 0x0a0d0d0au;
}

/* ------------------------------------------------------------------ */
/* Per-connection state                                                */

struct send_asm {            /* a Send being reassembled */
	bool used;
	uint32_t msn;
	uint8_t *buf;
	size_t len;          /* bytes received, contiguous from MO 0 */
	unsigned segments;
	bool crc_ok;
};

struct held {                /* an early TCP segment */
	uint32_t seq;
	uint8_t *data;
	size_t len;
	unsigned frame;
	struct held *next;
};

enum mpa_state { MPA_WAIT_RR, MPA_FPDU, MPA_DEAD };

struct dir_state {
	uint8_t src[16], dst[16];
	int af;                      /* 4 or 6 */
	uint16_t sport, dport;
	bool seq_known;
	uint32_t next_seq;
	uint8_t *stream;             /* unconsumed in-order bytes */
	size_t slen, scap;
	struct held *held;
	size_t held_bytes;
	enum mpa_state mpa;
	bool is_request_side;        /* sent the MPA Request */
	bool sent_crc;               /* its C bit */
	bool markers;
	struct send_asm sends[MAX_PENDING_SENDS];
	unsigned fpdus;
};

struct conn {
	struct dir_state d[2];       /* d[0]: first direction seen */
};

struct ctx {
	struct dump_out *o;
	struct dump_view *view;
	bool summary;                /* one line per message (not -V, --json) */
	uint64_t t0_ns;              /* the first frame's time */
	const char *src;
	struct conn *conns;
	size_t nconns, cap;
	unsigned frame;
	uint64_t ts_ns;
	unsigned nmsgs, nerrors, nnotes;
	unsigned ndata;              /* summary: RDMA Write / Read Response
					segments, not shown */
	uint64_t data_bytes;
	int status;
};

static struct dir_state *peer_of(struct ctx *c, struct dir_state *d)
{
	for (size_t i = 0; i < c->nconns; i++) {
		if (&c->conns[i].d[0] == d)
			return &c->conns[i].d[1];
		if (&c->conns[i].d[1] == d)
			return &c->conns[i].d[0];
	}
	return NULL;
}

static void fmt_ep(char *out, size_t cap, int af, const uint8_t *ip,
		   uint16_t port)
{
	if (af == 4) {
		snprintf(out, cap, "%u.%u.%u.%u:%u", ip[0], ip[1], ip[2], ip[3],
			 port);
		return;
	}
	size_t n = 0;
	n += (size_t)snprintf(out + n, cap - n, "[");
	for (int i = 0; i < 16 && n < cap; i += 2)
		n += (size_t)snprintf(out + n, cap - n, "%s%x", i ? ":" : "",
				      be16(ip + i));
	if (n < cap)
		snprintf(out + n, cap - n, "]:%u", port);
}

/* Common members of every entry: frame, time, endpoints, direction. */
static void entry_head(struct ctx *c, struct dir_state *d)
{
	char a[64], b[64];
	fmt_ep(a, sizeof a, d->af, d->src, d->sport);
	fmt_ep(b, sizeof b, d->af, d->dst, d->dport);
	dump_obj_begin(c->o, NULL);
	dump_u32(c->o, "frame", c->frame, NULL);
	dump_cstr(c->o, "src", a);
	dump_cstr(c->o, "dst", b);
	/* c2s: from the MPA initiator (the side that sent the Request). */
	dump_cstr(c->o, "dir", d->is_request_side ? "c2s" : "s2c");
}

/* The summary line's start: frame, seconds since the first frame. */
static void line_head(struct ctx *c, struct dir_state *d, char *a, char *b,
		      size_t cap, double *t)
{
	fmt_ep(a, cap, d->af, d->src, d->sport);
	fmt_ep(b, cap, d->af, d->dst, d->dport);
	*t = (double)(c->ts_ns - c->t0_ns) / 1e9;
}

static void entry_error(struct ctx *c, struct dir_state *d, const char *what)
{
	if (c->summary) {
		char a[64], b[64];
		double t;
		line_head(c, d, a, b, sizeof a, &t);
		if (!dump_view_filters(c->view))
			fprintf(c->o->f, "%6u %10.6f %s -> %s error: %s\n",
				c->frame, t, a, b, what);
		c->nerrors++;
		c->status = 1;
		return;
	}
	entry_head(c, d);
	dump_cstr(c->o, "error", what);
	dump_obj_end(c->o);
	c->nerrors++;
	c->status = 1;
}

/* ------------------------------------------------------------------ */
/* DDP / RDMAP                                                         */

static void emit_send(struct ctx *c, struct dir_state *d, struct send_asm *s)
{
	struct dump_error err;
	struct dump_info in;
	dump_info_parse(c->view, s->buf, s->len, &in);
	if (!dump_view_match(c->view, &in)) {
		c->nmsgs++;
		return;
	}
	c->view->shown++;
	if (c->summary) {
		char a[64], b[64];
		double t;
		line_head(c, d, a, b, sizeof a, &t);
		dump_summary_line(c->o->f, c->frame, t, a, b, &in);
		if (!strcmp(in.type, "undecodable") || !s->crc_ok) {
			c->nerrors++;
			c->status = 1;
		} else {
			c->nmsgs++;
		}
		return;
	}
	entry_head(c, d);
	dump_u32(c->o, "msn", s->msn, NULL);
	dump_u32(c->o, "ddp_segments", s->segments, NULL);
	dump_bool(c->o, "crc_ok", s->crc_ok);
	/* dump_message emits nothing on failure, so try it first into
	 * the entry, and fall back to an error member. */
	if (dump_message(c->o, "message", s->buf, s->len, &err) < 0) {
		dump_cstr(c->o, "error", err.msg);
		dump_hex(c->o, "bytes", s->buf, s->len);
		c->nerrors++;
		c->status = 1;
	} else {
		c->nmsgs++;
	}
	dump_obj_end(c->o);
	if (!s->crc_ok)
		c->status = 1;
}

static void on_ulpdu(struct ctx *c, struct dir_state *d, const uint8_t *u,
		     size_t ulen, bool crc_ok)
{
	struct rpcrdma_iwarp_ddp_hdr h;
	int hl = rpcrdma_iwarp_ddp_parse(u, ulen, &h);
	char msg[160];
	if (hl < 0) {
		snprintf(msg, sizeof msg,
			 "DDP: ULPDU of %zu bytes too short for a DDP header", ulen);
		entry_error(c, d, msg);
		return;
	}
	const uint8_t *payload = u + hl;
	size_t plen = ulen - (size_t)hl;
	bool is_send = !h.tagged && h.qn == RPCRDMA_IWARP_QN_SEND &&
		       h.opcode >= RPCRDMA_IWARP_OP_SEND &&
		       h.opcode <= RPCRDMA_IWARP_OP_SEND_SE_INV;
	if (!is_send) {
		/* Not a Send: no message a filter selects; in the summary,
		 * a line for the RDMA Read Requests and Terminates, the
		 * data segments (RDMA Write, Read Response) only counted. */
		c->nnotes++;
		if (dump_view_filters(c->view))
			return;
		if (c->summary) {
			if (h.opcode == RPCRDMA_IWARP_OP_READ_REQ ||
			    h.opcode == RPCRDMA_IWARP_OP_TERMINATE) {
				char a[64], b[64];
				double t;
				line_head(c, d, a, b, sizeof a, &t);
				fprintf(c->o->f, "%6u %10.6f %s -> %s RDMAP %s\n",
					c->frame, t, a, b,
					rpcrdma_iwarp_opcode_name(h.opcode));
			} else {
				c->ndata++;
				c->data_bytes += plen;
			}
			return;
		}
		entry_head(c, d);
		dump_cstr(c->o, "rdmap", rpcrdma_iwarp_opcode_name(h.opcode));
		if (h.tagged) {
			dump_x32(c->o, "stag", h.stag, NULL);
			dump_x64(c->o, "tagged_offset", h.to);
		} else {
			dump_u32(c->o, "qn", h.qn, NULL);
			dump_u32(c->o, "msn", h.msn, NULL);
			dump_u32(c->o, "mo", h.mo, NULL);
		}
		dump_bool(c->o, "last", h.last);
		dump_u32(c->o, "payload_length", (uint32_t)plen, NULL);
		dump_bool(c->o, "crc_ok", crc_ok);
		dump_obj_end(c->o);
		return;
	}
	struct send_asm *s = NULL, *fresh = NULL;
	for (int i = 0; i < MAX_PENDING_SENDS; i++) {
		if (d->sends[i].used && d->sends[i].msn == h.msn)
			s = &d->sends[i];
		else if (!d->sends[i].used && !fresh)
			fresh = &d->sends[i];
	}
	if (!s) {
		if (!fresh) {
			entry_error(c, d, "DDP: too many Sends in progress");
			return;
		}
		s = fresh;
		s->used = true;
		s->msn = h.msn;
		s->len = 0;
		s->segments = 0;
		s->crc_ok = true;
		if (!s->buf)
			s->buf = malloc(MAX_SEND);
		if (!s->buf) {
			c->status = 2;
			s->used = false;
			return;
		}
	}
	if (h.mo != s->len) {
		snprintf(msg, sizeof msg,
			 "DDP: Send MSN %" PRIu32 " segment at MO %" PRIu32
			 ", expected MO %zu (segments out of order or lost)",
			 h.msn, h.mo, s->len);
		entry_error(c, d, msg);
		s->used = false;
		return;
	}
	if (plen > MAX_SEND - s->len) {
		entry_error(c, d, "DDP: Send larger than 1 MiB; not reassembled");
		s->used = false;
		return;
	}
	memcpy(s->buf + s->len, payload, plen);
	s->len += plen;
	s->segments++;
	s->crc_ok = s->crc_ok && crc_ok;
	if (h.last) {
		emit_send(c, d, s);
		s->used = false;
	}
}

/* ------------------------------------------------------------------ */
/* MPA                                                                 */

static void on_rr(struct ctx *c, struct dir_state *d,
		  const struct rpcrdma_iwarp_mpa_rr *rr)
{
	if (dump_view_filters(c->view))
		return; /* not a message any filter selects */
	if (c->summary) {
		char a[64], b[64], pd[96] = "";
		double t;
		line_head(c, d, a, b, sizeof a, &t);
		struct rpcrdma_cm_pdata p;
		size_t at = 0;
		if (rpcrdma_cm_pdata_find(rr->ulp_pd, rr->ulp_pd_len, &p, &at))
			snprintf(pd, sizeof pd,
				 ", RPC-over-RDMA v%u inline send %u receive %u%s",
				 p.version, p.max_send, p.max_recv,
				 p.remote_inv ? " R" : "");
		fprintf(c->o->f, "%6u %10.6f %s -> %s MPA %s%s%s\n", c->frame, t, a,
			b, rr->reply ? "Reply" : "Request",
			rr->reject ? " (reject)" : "", pd);
		return;
	}
	entry_head(c, d);
	dump_cstr(c->o, "mpa", rr->reply ? "reply" : "request");
	dump_u32(c->o, "rev", rr->rev, NULL);
	dump_bool(c->o, "crc", rr->crc);
	dump_bool(c->o, "markers", rr->markers);
	dump_bool(c->o, "reject", rr->reject);
	if (rr->enhanced) {
		dump_u32(c->o, "ird", rr->irdord.ird, NULL);
		dump_u32(c->o, "ord", rr->irdord.ord, NULL);
	}
	dump_hex(c->o, "private_data", rr->ulp_pd, rr->ulp_pd_len);
	struct rpcrdma_cm_pdata pd;
	size_t at = 0;
	if (rpcrdma_cm_pdata_find(rr->ulp_pd, rr->ulp_pd_len, &pd, &at)) {
		struct dump_error err;
		(void)dump_message(c->o, "rpcrdma_private_data", rr->ulp_pd + at,
				   rr->ulp_pd_len - at, &err);
	}
	dump_obj_end(c->o);
}

/* Consume what can be consumed from d's stream. */
static void mpa_run(struct ctx *c, struct dir_state *d)
{
	size_t off = 0;
	char msg[160];
	while (d->mpa != MPA_DEAD && off < d->slen) {
		const uint8_t *p = d->stream + off;
		size_t left = d->slen - off;
		if (d->mpa == MPA_WAIT_RR) {
			struct rpcrdma_iwarp_mpa_rr rr;
			int n = rpcrdma_iwarp_mpa_rr_parse(p, left, &rr);
			if (n == RPCRDMA_ERR_TRUNCATED &&
			    left < RPCRDMA_IWARP_MPA_MAX_FRAME)
				break;
			if (n < 0) {
				/* Not MPA (or mid-stream): leave it alone. */
				d->mpa = MPA_DEAD;
				break;
			}
			d->is_request_side = !rr.reply;
			d->sent_crc = rr.crc;
			d->markers = rr.markers;
			on_rr(c, d, &rr);
			off += (size_t)n;
			struct dir_state *peer = peer_of(c, d);
			if (rr.markers || (peer && peer->markers)) {
				entry_error(c, d, "MPA markers negotiated: not supported");
				d->mpa = MPA_DEAD;
				break;
			}
			d->mpa = MPA_FPDU;
			continue;
		}
		/* FPDU: the CRC is checked when either side set C
		 * (RFC 5044 §7.1: CRC is used if either endpoint asks). */
		struct dir_state *peer = peer_of(c, d);
		bool use_crc = d->sent_crc || (peer && peer->sent_crc);
		const uint8_t *u;
		size_t ulen;
		int n = rpcrdma_iwarp_fpdu_parse(p, left, false, &u, &ulen);
		if (n == RPCRDMA_ERR_TRUNCATED)
			break;
		if (n < 0) {
			snprintf(msg, sizeof msg,
				 "MPA: stream offset %zu: bad FPDU (%s); rest of this direction skipped",
				 off, rpcrdma_strerror(n));
			entry_error(c, d, msg);
			d->mpa = MPA_DEAD;
			break;
		}
		bool crc_ok = true;
		if (use_crc)
			crc_ok = rpcrdma_iwarp_fpdu_parse(p, left, true, &u,
							   &ulen) >= 0;
		d->fpdus++;
		on_ulpdu(c, d, u, ulen, crc_ok);
		off += (size_t)n;
	}
	if (d->mpa == MPA_DEAD) {
		d->slen = 0;
		return;
	}
	if (off) {
		memmove(d->stream, d->stream + off, d->slen - off);
		d->slen -= off;
	}
}

/* ------------------------------------------------------------------ */
/* TCP                                                                 */

static int stream_append(struct dir_state *d, const uint8_t *p, size_t n)
{
	if (d->mpa == MPA_DEAD || n == 0)
		return 0;
	if (d->slen + n > d->scap) {
		size_t cap = d->scap ? d->scap : 4096;
		while (cap < d->slen + n)
			cap *= 2;
		uint8_t *s = realloc(d->stream, cap);
		if (!s)
			return -1;
		d->stream = s;
		d->scap = cap;
	}
	memcpy(d->stream + d->slen, p, n);
	d->slen += n;
	return 0;
}

static int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/* In-order data: trim what we already have, append the rest. */
static int deliver(struct dir_state *d, uint32_t seq, const uint8_t *p,
		   size_t n)
{
	int32_t ahead = seq_diff(d->next_seq, seq);
	if (ahead > 0) {
		if ((size_t)ahead >= n)
			return 0; /* retransmission */
		p += ahead;
		n -= (size_t)ahead;
	}
	d->next_seq += (uint32_t)n;
	return stream_append(d, p, n);
}

static int drain_held(struct dir_state *d)
{
	bool progress = true;
	while (progress) {
		progress = false;
		for (struct held **pp = &d->held; *pp;) {
			struct held *h = *pp;
			if (seq_diff(h->seq, d->next_seq) <= 0) {
				*pp = h->next;
				int rc = deliver(d, h->seq, h->data, h->len);
				d->held_bytes -= h->len;
				free(h->data);
				free(h);
				if (rc)
					return rc;
				progress = true;
			} else {
				pp = &h->next;
			}
		}
	}
	return 0;
}

static struct dir_state *find_dir(struct ctx *c, int af, const uint8_t *src,
				  const uint8_t *dst, uint16_t sport,
				  uint16_t dport)
{
	size_t alen = af == 4 ? 4 : 16;
	for (size_t i = 0; i < c->nconns; i++) {
		for (int k = 0; k < 2; k++) {
			struct dir_state *d = &c->conns[i].d[k];
			if (d->af == af && d->sport == sport && d->dport == dport &&
			    !memcmp(d->src, src, alen) && !memcmp(d->dst, dst, alen))
				return d;
		}
	}
	if (c->nconns == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct conn *n = realloc(c->conns, cap * sizeof *n);
		if (!n)
			return NULL;
		c->conns = n;
		c->cap = cap;
	}
	struct conn *k = &c->conns[c->nconns++];
	memset(k, 0, sizeof *k);
	for (int j = 0; j < 2; j++) {
		struct dir_state *d = &k->d[j];
		d->af = af;
		memcpy(d->src, j ? dst : src, alen);
		memcpy(d->dst, j ? src : dst, alen);
		d->sport = j ? dport : sport;
		d->dport = j ? sport : dport;
	}
	return &k->d[0];
}

static void on_tcp(struct ctx *c, int af, const uint8_t *src,
		   const uint8_t *dst, const uint8_t *t, size_t len)
{
	if (len < 20)
		return;
	size_t hl = (size_t)(t[12] >> 4) * 4;
	if (hl < 20 || hl > len)
		return;
	uint16_t sport = be16(t), dport = be16(t + 2);
	uint32_t seq = be32(t + 4);
	uint8_t flags = t[13];
	struct dir_state *d = find_dir(c, af, src, dst, sport, dport);
	if (!d) {
		c->status = 2;
		return;
	}
	const uint8_t *data = t + hl;
	size_t n = len - hl;
	if (flags & 0x04) /* RST */
		return;
	if (flags & 0x02) { /* SYN: data starts at seq + 1 */
		d->seq_known = true;
		d->next_seq = seq + 1;
		seq += 1;
	} else if (!d->seq_known) {
		/* Mid-stream start: take this segment as the beginning. */
		d->seq_known = true;
		d->next_seq = seq;
	}
	if (n == 0)
		return;
	if (seq_diff(seq, d->next_seq) > 0) {
		/* Early: hold it until the gap fills. */
		if (d->held_bytes + n > MAX_STREAM_BACKLOG)
			return;
		struct held *h = malloc(sizeof *h);
		uint8_t *copy = malloc(n);
		if (!h || !copy) {
			free(h);
			free(copy);
			c->status = 2;
			return;
		}
		memcpy(copy, data, n);
		h->seq = seq;
		h->data = copy;
		h->len = n;
		h->frame = c->frame;
		h->next = d->held;
		d->held = h;
		d->held_bytes += n;
		return;
	}
	if (deliver(d, seq, data, n) || drain_held(d)) {
		c->status = 2;
		return;
	}
	mpa_run(c, d);
}

/* ------------------------------------------------------------------ */
/* IP and link layers                                                  */

static void on_ipv4(struct ctx *c, const uint8_t *p, size_t len)
{
	if (len < 20 || (p[0] >> 4) != 4)
		return;
	size_t ihl = (size_t)(p[0] & 15) * 4;
	size_t tot = be16(p + 2);
	if (ihl < 20 || tot < ihl || tot > len)
		return; /* truncated capture (snaplen) or bad header */
	if ((be16(p + 6) & 0x3fff) != 0)
		return; /* fragment: not reassembled */
	if (p[9] != 6)
		return;
	on_tcp(c, 4, p + 12, p + 16, p + ihl, tot - ihl);
}

static void on_ipv6(struct ctx *c, const uint8_t *p, size_t len)
{
	if (len < 40 || (p[0] >> 4) != 6)
		return;
	size_t plen = be16(p + 4);
	if (plen > len - 40)
		return;
	uint8_t nh = p[6];
	const uint8_t *q = p + 40;
	size_t left = plen;
	/* Hop-by-hop, routing, destination options: skip them. */
	while (nh == 0 || nh == 43 || nh == 60) {
		if (left < 8)
			return;
		size_t el = ((size_t)q[1] + 1) * 8;
		if (el > left)
			return;
		nh = q[0];
		q += el;
		left -= el;
	}
	if (nh != 6)
		return;
	on_tcp(c, 6, p + 8, p + 24, q, left);
}

static void on_ethertype(struct ctx *c, uint16_t type, const uint8_t *p,
			 size_t len)
{
	while ((type == 0x8100 || type == 0x88a8) && len >= 4) {
		type = be16(p + 2);
		p += 4;
		len -= 4;
	}
	if (type == 0x0800)
		on_ipv4(c, p, len);
	else if (type == 0x86dd)
		on_ipv6(c, p, len);
}

static void on_packet(struct ctx *c, uint32_t linktype, const uint8_t *p,
		      size_t len)
{
	switch (linktype) {
	case 1: /* LINKTYPE_ETHERNET */
		if (len >= 14)
			on_ethertype(c, be16(p + 12), p + 14, len - 14);
		break;
	case 113: /* LINKTYPE_LINUX_SLL */
		if (len >= 16)
			on_ethertype(c, be16(p + 14), p + 16, len - 16);
		break;
	case 276: /* LINKTYPE_LINUX_SLL2 */
		if (len >= 20)
			on_ethertype(c, be16(p), p + 20, len - 20);
		break;
	case 0:   /* LINKTYPE_NULL: host-order family */
	case 108: /* LINKTYPE_LOOP: network-order family */
		if (len >= 4) {
			uint32_t fam = linktype == 108 ? be32(p) : rd32(p, false);
			if (fam == 2 || (fam & 0xff000000u) == 0x02000000u)
				on_ipv4(c, p + 4, len - 4);
			else
				on_ipv6(c, p + 4, len - 4);
		}
		break;
	case 101: /* LINKTYPE_RAW */
	case 228: /* LINKTYPE_IPV4 */
	case 229: /* LINKTYPE_IPV6 */
		if (len >= 1 && (p[0] >> 4) == 4)
			on_ipv4(c, p, len);
		else if (len >= 1)
			on_ipv6(c, p, len);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Capture formats                                                     */

static int read_pcap(struct ctx *c, const uint8_t *buf, size_t len,
		     char *why, size_t whycap)
{
	if (len < 24) {
		snprintf(why, whycap, "offset 0: truncated pcap file header");
		return -1;
	}
	uint32_t magic = rd32(buf, false);
	bool swap = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
	bool nano = magic == 0xa1b23c4du || magic == 0x4d3cb2a1u;
	uint32_t linktype = rd32(buf + 20, swap) & 0x0fffffffu;
	size_t off = 24;
	while (off < len) {
		if (len - off < 16) {
			snprintf(why, whycap,
				 "offset %zu: truncated pcap record header", off);
			return -1;
		}
		uint32_t sec = rd32(buf + off, swap);
		uint32_t frac = rd32(buf + off + 4, swap);
		uint32_t incl = rd32(buf + off + 8, swap);
		if (incl > len - off - 16) {
			snprintf(why, whycap,
				 "offset %zu: pcap record of %" PRIu32
				 " bytes runs past the end of the file", off, incl);
			return -1;
		}
		c->frame++;
		c->ts_ns = (uint64_t)sec * 1000000000u +
			   (uint64_t)frac * (nano ? 1u : 1000u);
		if (c->frame == 1)
			c->t0_ns = c->ts_ns;
		on_packet(c, linktype, buf + off + 16, incl);
		off += 16 + (size_t)incl;
	}
	return 0;
}

#define NG_MAX_IF 64

static int read_pcapng(struct ctx *c, const uint8_t *buf, size_t len,
		       char *why, size_t whycap)
{
	bool swap = false;
	uint32_t linktypes[NG_MAX_IF];
	double tsres[NG_MAX_IF];
	size_t nif = 0;
	size_t off = 0;
	while (off < len) {
		if (len - off < 12) {
			snprintf(why, whycap, "offset %zu: truncated pcapng block", off);
			return -1;
		}
		uint32_t type = rd32(buf + off, false);
		if (type == 0x0a0d0d0au) {
			/* Section Header Block: byte order from its magic. */
			uint32_t bom = rd32(buf + off + 8, false);
			if (bom == 0x1a2b3c4du)
				swap = false;
			else if (bom == 0x4d3c2b1au)
				swap = true;
			else {
				snprintf(why, whycap,
					 "offset %zu: pcapng byte-order magic 0x%08" PRIx32
					 ": expected 0x1a2b3c4d", off + 8, bom);
				return -1;
			}
			nif = 0;
		} else {
			type = rd32(buf + off, swap);
		}
		uint32_t blen = rd32(buf + off + 4, swap);
		if (blen < 12 || blen % 4 || blen > len - off) {
			snprintf(why, whycap,
				 "offset %zu: pcapng block length %" PRIu32
				 " impossible (file has %zu bytes left)", off, blen,
				 len - off);
			return -1;
		}
		const uint8_t *b = buf + off + 8;
		size_t bl = blen - 12; /* body length */
		if (type == 1) { /* Interface Description Block */
			if (bl >= 8 && nif < NG_MAX_IF) {
				/* if_tsresol (option 9): 10^-v seconds, or
				 * 2^-v with the high bit; default 10^-6. */
				double res = 1e-6;
				for (uint32_t o = 8; o + 4 <= bl;) {
					uint16_t code = rd16(b + o, swap);
					uint16_t olen = rd16(b + o + 2, swap);
					if (code == 0 || o + 4 + olen > bl)
						break;
					if (code == 9 && olen >= 1) {
						uint8_t v = b[o + 4];
						res = v & 0x80 ? 1.0 / (double)(1ull << (v & 63))
							       : 1.0;
						if (!(v & 0x80))
							for (int k = 0; k < v && k < 19; k++)
								res /= 10;
					}
					o += 4 + ((olen + 3u) & ~3u);
				}
				tsres[nif] = res;
				linktypes[nif++] = rd16(b, swap);
			}
		} else if (type == 6 || type == 2) { /* EPB / obsolete PB */
			if (bl >= 20) {
				uint32_t ifid = type == 6 ? rd32(b, swap) : rd16(b, swap);
				uint32_t caplen = rd32(b + 12, swap);
				if (caplen <= bl - 20 && ifid < nif) {
					c->frame++;
					uint64_t ts = (uint64_t)rd32(b + 4, swap) << 32 |
						      rd32(b + 8, swap);
					c->ts_ns = (uint64_t)((double)ts *
							      tsres[ifid] * 1e9);
					if (c->frame == 1)
						c->t0_ns = c->ts_ns;
					on_packet(c, linktypes[ifid], b + 20, caplen);
				} else {
					c->frame++;
				}
			}
		} else if (type == 3) { /* Simple Packet Block: interface 0 */
			if (bl >= 4 && nif > 0) {
				uint32_t olen = rd32(b, swap);
				size_t caplen = olen < bl - 4 ? olen : bl - 4;
				c->frame++;
				on_packet(c, linktypes[0], b + 4, caplen);
			}
		}
		off += blen;
	}
	return 0;
}

int dump_pcap(FILE *out, bool json, struct dump_view *view, const char *src,
	      const uint8_t *buf, size_t len)
{
	struct dump_out o;
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.o = &o;
	c.src = src;
	c.view = view;
	c.summary = !json && !view->detail;
	dump_out_init(&o, out, json);
	bool ng = rd32(buf, false) == 0x0a0d0d0au;
	char why[200] = "";
	if (c.summary) {
		int rc = ng ? read_pcapng(&c, buf, len, why, sizeof why)
			    : read_pcap(&c, buf, len, why, sizeof why);
		fprintf(out, "%s: %u frames, %u RPC-over-RDMA messages, %u shown, "
			"%u errors", src, c.frame, c.nmsgs + c.nerrors,
			view->shown, c.nerrors);
		if (c.ndata)
			fprintf(out, "; %u RDMA Write and Read Response "
				"segments, %llu bytes (-V lists them)", c.ndata,
				(unsigned long long)c.data_bytes);
		fputc('\n', out);
		if (rc < 0) {
			fprintf(stderr, "rpcrdma-dump: %s: %s\n", src, why);
			c.status = c.status ? c.status : 1;
		}
		goto out;
	}
	dump_obj_begin(&o, NULL);
	dump_cstr(&o, "capture", src);
	dump_cstr(&o, "format", ng ? "pcapng" : "pcap");
	dump_arr_begin(&o, "messages");
	int rc = ng ? read_pcapng(&c, buf, len, why, sizeof why)
		    : read_pcap(&c, buf, len, why, sizeof why);
	dump_arr_end(&o);
	dump_u32(&o, "frames", c.frame, NULL);
	dump_u32(&o, "rpcrdma_messages", c.nmsgs, NULL);
	dump_u32(&o, "errors", c.nerrors, NULL);
	/* Bytes left in a stream: an FPDU or Send the capture cut off. */
	unsigned partial = 0;
	for (size_t i = 0; i < c.nconns; i++)
		for (int k = 0; k < 2; k++) {
			struct dir_state *d = &c.conns[i].d[k];
			if (d->mpa == MPA_FPDU && d->slen)
				partial++;
			for (int j = 0; j < MAX_PENDING_SENDS; j++)
				if (d->sends[j].used)
					partial++;
		}
	dump_u32(&o, "incomplete_at_end", partial, NULL);
	if (rc < 0)
		dump_cstr(&o, "capture_error", why);
	dump_obj_end(&o);
	dump_out_finish(&o);
	if (rc < 0) {
		fprintf(stderr, "rpcrdma-dump: %s: %s\n", src, why);
		c.status = c.status ? c.status : 1;
	}
out:
	for (size_t i = 0; i < c.nconns; i++)
		for (int k = 0; k < 2; k++) {
			struct dir_state *d = &c.conns[i].d[k];
			free(d->stream);
			for (struct held *h = d->held, *nx; h; h = nx) {
				nx = h->next;
				free(h->data);
				free(h);
			}
			for (int j = 0; j < MAX_PENDING_SENDS; j++)
				free(d->sends[j].buf);
		}
	free(c.conns);
	return c.status;
}
