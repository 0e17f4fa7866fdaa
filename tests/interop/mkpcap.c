/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * mkpcap: write a synthetic capture of one loopback TCP connection that
 * carries RPC-over-RDMA version 1 over iWARP, for checking our encoders
 * against an independent decoder (tshark) and for rpcrdma-dump's capture
 * reader.
 *
 *   mkpcap [--rev 1|2] [--stress] [--reorder] [--split] [--pcapng]
 *          [--v2 | --v2-violations] OUT.pcap EXPECTED.json
 *
 * The conversation (client 127.0.0.1:40001, server 127.0.0.1:20049):
 *   TCP three-way handshake;
 *   MPA Request (C bit set, revision 1 per RFC 5044 §7.1, or revision 2
 *   with the enhanced IRD/ORD block per RFC 6581) carrying RFC 8797
 *   private data, MPA Reply likewise;
 *   then one FPDU per message: DDP untagged, QN 0, MSN 1, 2, ... per
 *   direction, MO 0, Last, RDMAP Send, holding one of our v1 encodings.
 * Every byte of the RPC-over-RDMA and RPC headers comes from the library
 * encoders (rpcrdma_v1_encode, rpcrdma_rpc_msg_encode,
 * rpcrdma_authsys_encode); MPA/DDP framing from provider/iwarp/iwarp_wire.
 * IPv4 and TCP checksums and sequence/acknowledgement numbers are right.
 *
 * --stress changes only the framing, to exercise stream reassembly: one
 * Send is split into three DDP segments (MO 0, k, 2k; Last on the third),
 * several FPDUs share one TCP segment and one FPDU straddles two.
 * --reorder (implies --stress) also sends TCP segments out of order and
 * retransmits one, as a capture of a lossy link shows them.
 * --split sends only the last Send as three DDP segments, each FPDU in a
 * TCP segment of its own (every other message as without options).
 *
 * EXPECTED.json records, for each message, the values we asked the
 * encoders to write (not what any decoder says), the frame number that
 * carries it (the frame with its last byte) and its bytes in hex.
 *
 * --v2: the messages are RPC-over-RDMA version 2 instead
 * (draft-cel-nfsv4-rpcrdma-version-two-09, rpcrdma_v2_encode), one of
 * every header type: RDMA2_CONNPROP both ways (known, defaulted and
 * unknown properties), RDMA2_MSG and RDMA2_NOMSG with every chunk list
 * and rdma_inv_handle, calls and replies in both directions, and
 * RDMA2_ERROR with each error code's body and an unknown code.  For these
 * EXPECTED.json holds the prefix values only; the Wireshark dissector
 * test (wireshark_v2_check.py) compares against rpcrdma-dump.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider/iwarp/iwarp_wire.h"
#include "wire/auth.h"
#include "wire/cm_private_data.h"
#include "wire/rpc_msg.h"
#include "wire/rpcrdma_v1.h"
#include "wire/rpcrdma_v2.h"

/* The RPC program in the calls.  tshark's RPC dissector, reached from
 * rpcordma, turns a call to a program it has no dissector for into
 * "Continuation" with no rpc.* fields, so the calls name a program it
 * knows: PMAP (100000) version 2, with procedure numbers above PMAP's
 * 0..5 so the arguments stay opaque ("proc-N") instead of being
 * dissected. */
#define TEST_PROG 100000u
#define TEST_VERS 2u
#define TEST_PROC_BASE 16u

static void die(const char *what, int rc)
{
	fprintf(stderr, "mkpcap: %s failed (%d)\n", what, rc);
	exit(1);
}

/* ------------------------------------------------------------------ */
/* Capture file writer: classic pcap or pcapng, Ethernet link type.    */

struct cap {
	FILE *f;
	bool ng;
	uint64_t t_us;
	unsigned frames;
};

static void put16le(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32le(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put16be(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32be(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void wr(struct cap *c, const void *p, size_t n)
{
	if (fwrite(p, 1, n, c->f) != n)
		die("write", -1);
}

static void cap_open(struct cap *c, FILE *f, bool ng)
{
	c->f = f;
	c->ng = ng;
	c->t_us = 1700000000ull * 1000000ull;
	c->frames = 0;
	if (!ng) {
		uint8_t h[24];
		put32le(h, 0xa1b2c3d4u);  /* microsecond pcap */
		put16le(h + 4, 2);
		put16le(h + 6, 4);
		put32le(h + 8, 0);
		put32le(h + 12, 0);
		put32le(h + 16, 65535);   /* snaplen */
		put32le(h + 20, 1);       /* LINKTYPE_ETHERNET */
		wr(c, h, sizeof h);
		return;
	}
	/* Section Header Block, then one Interface Description Block. */
	uint8_t shb[28];
	put32le(shb, 0x0a0d0d0au);
	put32le(shb + 4, sizeof shb);
	put32le(shb + 8, 0x1a2b3c4du);
	put16le(shb + 12, 1);
	put16le(shb + 14, 0);
	memset(shb + 16, 0xff, 8);        /* section length unknown */
	put32le(shb + 24, sizeof shb);
	wr(c, shb, sizeof shb);
	uint8_t idb[20];
	put32le(idb, 1);
	put32le(idb + 4, sizeof idb);
	put16le(idb + 8, 1);              /* LINKTYPE_ETHERNET */
	put16le(idb + 10, 0);
	put32le(idb + 12, 65535);
	put32le(idb + 16, sizeof idb);
	wr(c, idb, sizeof idb);           /* default resolution: 1 us */
}

static void cap_packet(struct cap *c, const uint8_t *data, size_t len)
{
	c->t_us += 100;
	c->frames++;
	if (!c->ng) {
		uint8_t h[16];
		put32le(h, (uint32_t)(c->t_us / 1000000u));
		put32le(h + 4, (uint32_t)(c->t_us % 1000000u));
		put32le(h + 8, (uint32_t)len);
		put32le(h + 12, (uint32_t)len);
		wr(c, h, sizeof h);
		wr(c, data, len);
		return;
	}
	size_t padded = (len + 3) & ~(size_t)3;
	uint32_t total = (uint32_t)(28 + padded + 4);
	uint8_t h[28], z[4] = {0, 0, 0, 0}, t[4];
	put32le(h, 6);                    /* Enhanced Packet Block */
	put32le(h + 4, total);
	put32le(h + 8, 0);                /* interface 0 */
	put32le(h + 12, (uint32_t)(c->t_us >> 32));
	put32le(h + 16, (uint32_t)c->t_us);
	put32le(h + 20, (uint32_t)len);
	put32le(h + 24, (uint32_t)len);
	wr(c, h, sizeof h);
	wr(c, data, len);
	wr(c, z, padded - len);
	put32le(t, total);
	wr(c, t, sizeof t);
}

/* ------------------------------------------------------------------ */
/* Ethernet + IPv4 + TCP                                               */

struct endpoint {
	uint8_t ip[4];
	uint16_t port;
	uint32_t seq; /* next sequence number this end sends */
};

struct conn {
	struct cap *cap;
	struct endpoint c, s;
	uint16_t ip_id;
};

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void tcp_send(struct conn *k, bool from_client, uint8_t flags,
		     const uint8_t *payload, size_t len)
{
	struct endpoint *src = from_client ? &k->c : &k->s;
	struct endpoint *dst = from_client ? &k->s : &k->c;
	static uint8_t pkt[14 + 20 + 20 + 65536];
	if (len > 65535 - 40)
		die("tcp_send (segment too large)", -1);
	uint8_t *eth = pkt, *ip = pkt + 14, *tcp = ip + 20;
	memset(eth, 0, 12);               /* loopback: zero MAC addresses */
	put16be(eth + 12, 0x0800);
	size_t tcp_len = 20 + len;
	ip[0] = 0x45;
	ip[1] = 0;
	put16be(ip + 2, (uint16_t)(20 + tcp_len));
	put16be(ip + 4, k->ip_id++);
	put16be(ip + 6, 0x4000);          /* DF */
	ip[8] = 64;
	ip[9] = 6;
	put16be(ip + 10, 0);
	memcpy(ip + 12, src->ip, 4);
	memcpy(ip + 16, dst->ip, 4);
	put16be(ip + 10, csum_fold(csum_add(0, ip, 20)));

	put16be(tcp, src->port);
	put16be(tcp + 2, dst->port);
	put32be(tcp + 4, src->seq);
	put32be(tcp + 8, (flags & TCP_ACK) ? dst->seq : 0);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	put16be(tcp + 14, 65535);
	put16be(tcp + 16, 0);
	put16be(tcp + 18, 0);
	if (len)
		memcpy(tcp + 20, payload, len);
	uint8_t pseudo[12];
	memcpy(pseudo, src->ip, 4);
	memcpy(pseudo + 4, dst->ip, 4);
	pseudo[8] = 0;
	pseudo[9] = 6;
	put16be(pseudo + 10, (uint16_t)tcp_len);
	uint32_t sum = csum_add(0, pseudo, sizeof pseudo);
	sum = csum_add(sum, tcp, tcp_len);
	put16be(tcp + 16, csum_fold(sum));

	cap_packet(k->cap, pkt, 14 + 20 + tcp_len);
	src->seq += (uint32_t)len;
	if (flags & (TCP_SYN | TCP_FIN))
		src->seq++;
}

/* ------------------------------------------------------------------ */
/* The messages                                                        */

struct msg {
	bool from_client;
	uint8_t bytes[2048];
	size_t len;
	struct rpcrdma_v1_hdr h;
	bool v2;                   /* encoded from h2 instead of h */
	struct rpcrdma_v2_hdr h2;
	bool has_rpc;
	struct rpcrdma_rpc_msg rpc;
	struct rpcrdma_authsys_parms sys;
	unsigned frame; /* frame carrying the message's last byte */
	uint32_t msn;
	size_t args_len;
	/* DDP segments it was sent in: message offset, length, Last. */
	unsigned nddp;
	struct { uint32_t mo; size_t len; bool last; } ddp[4];
};

static struct rpcrdma_segment seg(uint32_t handle, uint32_t length,
				  uint64_t offset)
{
	struct rpcrdma_segment s = {handle, length, offset};
	return s;
}

static uint8_t cred_body[RPCRDMA_AUTHSYS_MAX_BODY];

/* A CALL header with AUTH_SYS, encoded after the transport header. */
static void set_call(struct msg *m, uint32_t xid, uint32_t proc)
{
	static const char name[] = "rpcrdma-test";
	m->has_rpc = true;
	memset(&m->sys, 0, sizeof m->sys);
	m->sys.stamp = 0x5eed;
	m->sys.machinename = name;
	m->sys.machinename_len = (uint32_t)strlen(name);
	m->sys.uid = 1000;
	m->sys.gid = 100;
	m->sys.ngids = 2;
	m->sys.gids[0] = 100;
	m->sys.gids[1] = 27;
	int n = rpcrdma_authsys_encode(&m->sys, cred_body, sizeof cred_body);
	if (n < 0)
		die("rpcrdma_authsys_encode", n);
	memset(&m->rpc, 0, sizeof m->rpc);
	m->rpc.xid = xid;
	m->rpc.mtype = RPCRDMA_RPC_CALL;
	m->rpc.call.prog = TEST_PROG;
	m->rpc.call.vers = TEST_VERS;
	m->rpc.call.proc = proc;
	m->rpc.call.cred.flavor = RPCRDMA_AUTH_SYS;
	m->rpc.call.cred.len = (uint32_t)n;
	m->rpc.call.cred.body = cred_body;
	m->rpc.call.verf = rpcrdma_auth_none();
}

static void set_reply(struct msg *m, uint32_t xid)
{
	m->has_rpc = true;
	memset(&m->rpc, 0, sizeof m->rpc);
	m->rpc.xid = xid;
	m->rpc.mtype = RPCRDMA_RPC_REPLY;
	m->rpc.reply.stat = RPCRDMA_RPC_MSG_ACCEPTED;
	m->rpc.reply.accepted.verf = rpcrdma_auth_none();
	m->rpc.reply.accepted.stat = RPCRDMA_RPC_SUCCESS;
}

/* Encode transport header + RPC header + args_len bytes of arguments. */
static void encode(struct msg *m)
{
	int n = m->v2 ? rpcrdma_v2_encode(m->bytes, sizeof m->bytes, &m->h2)
		      : rpcrdma_v1_encode(m->bytes, sizeof m->bytes, &m->h);
	if (n < 0)
		die(m->v2 ? "rpcrdma_v2_encode" : "rpcrdma_v1_encode", n);
	m->len = (size_t)n;
	if (!m->has_rpc)
		return;
	n = rpcrdma_rpc_msg_encode(&m->rpc, m->bytes + m->len,
				   sizeof m->bytes - m->len);
	if (n < 0)
		die("rpcrdma_rpc_msg_encode", n);
	m->len += (size_t)n;
	for (size_t i = 0; i < m->args_len; i++)
		m->bytes[m->len + i] = (uint8_t)(0xa0 + (i & 0x1f));
	m->len += m->args_len;
}

static size_t build_messages(struct msg *ms)
{
	size_t k = 0;
	struct msg *m;
	int rpc_hdr;

	/* 1. Call, RDMA_MSG, Read list: a chunk of two segments at one
	 * position and a chunk of one segment at a later position.  The
	 * inline part is the RPC header and 16 + 32 bytes of arguments;
	 * positions count in the unreduced stream (RFC 8166 §3.4.5), so
	 * the second chunk sits after the first chunk's 12288 bytes and
	 * the 32 inline bytes between the two. */
	m = &ms[k++];
	m->from_client = true;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c01;
	m->h.vers = 1;
	m->h.credit = 32;
	m->h.proc = RPCRDMA_V1_MSG;
	set_call(m, m->h.xid, TEST_PROC_BASE + 1);
	m->args_len = 48;
	rpc_hdr = rpcrdma_rpc_msg_size(&m->rpc);
	if (rpc_hdr < 0)
		die("rpcrdma_rpc_msg_size", rpc_hdr);
	m->h.chunks.nreads = 3;
	m->h.chunks.reads[0].position = (uint32_t)rpc_hdr + 16;
	m->h.chunks.reads[0].target = seg(0x00010001, 8192, 0x00007f1200001000ull);
	m->h.chunks.reads[1].position = (uint32_t)rpc_hdr + 16;
	m->h.chunks.reads[1].target = seg(0x00010002, 4096, 0x00007f1200003000ull);
	m->h.chunks.reads[2].position = (uint32_t)rpc_hdr + 16 + 12288 + 32;
	m->h.chunks.reads[2].target = seg(0x00010103, 512, 0x00007f1200010200ull);
	encode(m);

	/* 2. Reply to it, RDMA_MSG, no chunks. */
	m = &ms[k++];
	m->from_client = false;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c01;
	m->h.vers = 1;
	m->h.credit = 31;
	m->h.proc = RPCRDMA_V1_MSG;
	set_reply(m, m->h.xid);
	m->args_len = 16;
	encode(m);

	/* 3. Call, RDMA_MSG with a Write list of two chunks (2 + 1 segments). */
	m = &ms[k++];
	m->from_client = true;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c02;
	m->h.vers = 1;
	m->h.credit = 32;
	m->h.proc = RPCRDMA_V1_MSG;
	set_call(m, m->h.xid, TEST_PROC_BASE + 2);
	m->args_len = 24;
	m->h.chunks.nwrites = 2;
	m->h.chunks.writes[0].nsegs = 2;
	m->h.chunks.writes[0].segs[0] = seg(0x00020001, 32768, 0x00007f1300000000ull);
	m->h.chunks.writes[0].segs[1] = seg(0x00020002, 16384, 0x00007f1300008000ull);
	m->h.chunks.writes[1].nsegs = 1;
	m->h.chunks.writes[1].segs[0] = seg(0x00020103, 1024, 0x00007f1300100000ull);
	encode(m);

	/* 4. Call, RDMA_NOMSG: the whole call in a position-zero Read chunk
	 * (Long Call) and a Reply chunk for a Long Reply. */
	m = &ms[k++];
	m->from_client = true;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c03;
	m->h.vers = 1;
	m->h.credit = 32;
	m->h.proc = RPCRDMA_V1_NOMSG;
	m->h.chunks.nreads = 2;
	m->h.chunks.reads[0].position = 0;
	m->h.chunks.reads[0].target = seg(0x00030001, 4096, 0x00007f1400000000ull);
	m->h.chunks.reads[1].position = 0;
	m->h.chunks.reads[1].target = seg(0x00030002, 1200, 0x00007f1400001000ull);
	m->h.chunks.has_reply = true;
	m->h.chunks.reply.nsegs = 2;
	m->h.chunks.reply.segs[0] = seg(0x00030103, 8192, 0x00007f1400100000ull);
	m->h.chunks.reply.segs[1] = seg(0x00030104, 8192, 0x00007f1400102000ull);
	encode(m);

	/* 5. RDMA_ERROR ERR_VERS (low = high = 1). */
	m = &ms[k++];
	m->from_client = false;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c02;
	m->h.vers = 1;
	m->h.credit = 30;
	m->h.proc = RPCRDMA_V1_ERROR;
	m->h.err = RPCRDMA_V1_ERR_VERS;
	m->h.vers_low = 1;
	m->h.vers_high = 1;
	encode(m);

	/* 6. RDMA_ERROR ERR_CHUNK. */
	m = &ms[k++];
	m->from_client = false;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c03;
	m->h.vers = 1;
	m->h.credit = 30;
	m->h.proc = RPCRDMA_V1_ERROR;
	m->h.err = RPCRDMA_V1_ERR_CHUNK;
	encode(m);

	/* 7. RDMA_DONE (RFC 5666; RFC 8166 §4.6.2 reserves it). */
	m = &ms[k++];
	m->from_client = true;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c03;
	m->h.vers = 1;
	m->h.credit = 32;
	m->h.proc = RPCRDMA_V1_DONE;
	encode(m);

	/* 8. A larger Call (RDMA_MSG, no chunks, 600 bytes of arguments):
	 * the one split into several DDP segments under --stress. */
	m = &ms[k++];
	m->from_client = true;
	rpcrdma_v1_hdr_init(&m->h);
	m->h.xid = 0x1a2b3c04;
	m->h.vers = 1;
	m->h.credit = 32;
	m->h.proc = RPCRDMA_V1_MSG;
	set_call(m, m->h.xid, TEST_PROC_BASE + 4);
	m->args_len = 600;
	encode(m);
	return k;
}

/* A v2 header with the prefix filled in (§3.2). */
static struct rpcrdma_v2_hdr *v2_msg(struct msg *m, bool from_client,
				     uint32_t xid, uint32_t htype, bool response)
{
	m->v2 = true;
	m->from_client = from_client;
	rpcrdma_v2_hdr_init(&m->h2);
	m->h2.xid = xid;
	m->h2.vers = 2;
	m->h2.credit = from_client ? 32 : 31;
	m->h2.htype = htype;
	m->h2.flags = response ? RPCRDMA_V2_F_RESPONSE : 0;
	return &m->h2;
}

static void v2_prop(struct rpcrdma_v2_hdr *h, uint32_t id, bool has_value,
		    uint32_t value, const uint8_t *data, uint32_t len)
{
	struct rpcrdma_v2_prop *p = &h->props[h->nprops++];
	p->propid = id;
	p->has_value = has_value;
	p->value = value;
	p->data = data;
	p->len = len;
}

/* One RDMA2_ERROR from the server per error code, with its body (§5.3.3),
 * then one with a code the draft does not define (void body). */
static size_t v2_errors(struct msg *ms, size_t k)
{
	static const struct rpcrdma_v2_error errs[] = {
		{ .code = RPCRDMA_V2_ERR_VERS, .vers_low = 2, .vers_high = 2 },
		{ .code = RPCRDMA_V2_ERR_BAD_XDR },
		{ .code = RPCRDMA_V2_ERR_INVAL_HTYPE },
		{ .code = RPCRDMA_V2_ERR_READ_CHUNKS, .max_chunks = 4 },
		{ .code = RPCRDMA_V2_ERR_WRITE_CHUNKS, .max_chunks = 2 },
		{ .code = RPCRDMA_V2_ERR_SEGMENTS, .max_segments = 8 },
		{ .code = RPCRDMA_V2_ERR_WRITE_RESOURCE, .chunk_index = 1,
		  .length_needed = 65536 },
		{ .code = RPCRDMA_V2_ERR_REPLY_RESOURCE, .length_needed = 300000 },
		{ .code = RPCRDMA_V2_ERR_SYSTEM },
		{ .code = 77 },
	};
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		struct msg *m = &ms[k++];
		struct rpcrdma_v2_hdr *h = v2_msg(m, false, 0x2b3c4d10 + (uint32_t)i,
						  RPCRDMA_V2_ERROR, true);
		h->error = errs[i];
		encode(m);
	}
	return k;
}

static size_t build_messages_v2(struct msg *ms)
{
	static const uint8_t unknown_prop[6] = { 'r', 'p', 'c', 'v', '2', '!' };
	size_t k = 0;
	struct msg *m;
	struct rpcrdma_v2_hdr *h;
	int rpc_hdr;

	/* 1. The client's RDMA2_CONNPROP (§5.3.4, §7): RBSIZ and BRS with
	 * values and a property the draft does not define. */
	m = &ms[k++];
	h = v2_msg(m, true, 0x2b3c4d01, RPCRDMA_V2_CONNPROP, false);
	v2_prop(h, RPCRDMA_V2_PROPID_RBSIZ, true, 8192, NULL, 0);
	v2_prop(h, RPCRDMA_V2_PROPID_BRS, true, RPCRDMA_V2_RVREQSUP_GENL, NULL, 0);
	v2_prop(h, 0x4242, false, 0, unknown_prop, sizeof unknown_prop);
	encode(m);

	/* 2. The server's answer: RBSIZ with empty rdma_data (the default,
	 * §4.1) and BRS INLINE. */
	m = &ms[k++];
	h = v2_msg(m, false, 0x2b3c4d01, RPCRDMA_V2_CONNPROP, true);
	v2_prop(h, RPCRDMA_V2_PROPID_RBSIZ, false, 0, NULL, 0);
	v2_prop(h, RPCRDMA_V2_PROPID_BRS, true, RPCRDMA_V2_RVREQSUP_INLINE, NULL, 0);
	encode(m);

	/* 3. A call with all three lists: a Read chunk of two segments, a
	 * Write chunk of two, a Reply chunk, rdma_inv_handle naming the
	 * Write chunk's first handle (§3.3). */
	m = &ms[k++];
	h = v2_msg(m, true, 0x2b3c4d02, RPCRDMA_V2_MSG, false);
	set_call(m, h->xid, TEST_PROC_BASE + 1);
	m->args_len = 16;
	rpc_hdr = rpcrdma_rpc_msg_size(&m->rpc);
	if (rpc_hdr < 0)
		die("rpcrdma_rpc_msg_size", rpc_hdr);
	h->chunks.nreads = 2;
	h->chunks.reads[0].position = (uint32_t)rpc_hdr + 8;
	h->chunks.reads[0].target = seg(0x00040001, 8192, 0x00007f1500001000ull);
	h->chunks.reads[1].position = (uint32_t)rpc_hdr + 8;
	h->chunks.reads[1].target = seg(0x00040002, 100, 0x00007f1500003000ull);
	h->chunks.nwrites = 1;
	h->chunks.writes[0].nsegs = 2;
	h->chunks.writes[0].segs[0] = seg(0x00040101, 65536, 0x00007f1600000000ull);
	h->chunks.writes[0].segs[1] = seg(0x00040102, 4096, 0x00007f1600010000ull);
	h->chunks.has_reply = true;
	h->chunks.reply.nsegs = 1;
	h->chunks.reply.segs[0] = seg(0x00040201, 2048, 0x00007f1700000000ull);
	h->inv_handle = 0x00040101;
	encode(m);

	/* 4. Its reply: F_RESPONSE, the Write chunk with the length written. */
	m = &ms[k++];
	h = v2_msg(m, false, 0x2b3c4d02, RPCRDMA_V2_MSG, true);
	set_reply(m, h->xid);
	m->args_len = 8;
	h->chunks.nwrites = 1;
	h->chunks.writes[0].nsegs = 1;
	h->chunks.writes[0].segs[0] = seg(0x00040101, 30000, 0x00007f1600000000ull);
	encode(m);

	/* 5. A Long Call: RDMA2_NOMSG, position-zero Read chunk of two
	 * segments, a Reply chunk of two (§5.3.2). */
	m = &ms[k++];
	h = v2_msg(m, true, 0x2b3c4d03, RPCRDMA_V2_NOMSG, false);
	h->chunks.nreads = 2;
	h->chunks.reads[0].position = 0;
	h->chunks.reads[0].target = seg(0x00050001, 4096, 0x00007f1800000000ull);
	h->chunks.reads[1].position = 0;
	h->chunks.reads[1].target = seg(0x00050002, 904, 0x00007f1800001000ull);
	h->chunks.has_reply = true;
	h->chunks.reply.nsegs = 2;
	h->chunks.reply.segs[0] = seg(0x00050101, 8192, 0x00007f1900000000ull);
	h->chunks.reply.segs[1] = seg(0x00050102, 8192, 0x00007f1900002000ull);
	h->inv_handle = 0x00050101;
	encode(m);

	/* 6. The Long Reply: RDMA2_NOMSG, F_RESPONSE, Reply chunk used. */
	m = &ms[k++];
	h = v2_msg(m, false, 0x2b3c4d03, RPCRDMA_V2_NOMSG, true);
	h->chunks.has_reply = true;
	h->chunks.reply.nsegs = 1;
	h->chunks.reply.segs[0] = seg(0x00050101, 6000, 0x00007f1900000000ull);
	encode(m);

	/* 7-16. RDMA2_ERROR, every code. */
	k = v2_errors(ms, k);

	/* 17. A reverse-direction call from the server (RFC 8167 in v2:
	 * F_RESPONSE clear, §3.2) and 18. the client's reply. */
	m = &ms[k++];
	h = v2_msg(m, false, 0x7a000001, RPCRDMA_V2_MSG, false);
	set_call(m, h->xid, TEST_PROC_BASE + 7);
	m->args_len = 12;
	encode(m);
	m = &ms[k++];
	h = v2_msg(m, true, 0x7a000001, RPCRDMA_V2_MSG, true);
	set_reply(m, h->xid);
	m->args_len = 4;
	encode(m);

	/* 19. A larger call, no chunks: the one split into three DDP
	 * segments under --stress. */
	m = &ms[k++];
	h = v2_msg(m, true, 0x2b3c4d04, RPCRDMA_V2_MSG, false);
	set_call(m, h->xid, TEST_PROC_BASE + 4);
	m->args_len = 600;
	encode(m);
	return k;
}

/* --v2-violations: v2 headers that break one rule each, for the
 * Wireshark dissector's checks (wireshark_v2_synthetic.sh names the
 * expert info each must raise).  Encoded right, then patched. */
static size_t build_violations_v2(struct msg *ms)
{
	size_t k = 0;
	struct msg *m;
	struct rpcrdma_v2_hdr *h;

	/* 1. A reserved flag bit set (§3.2). */
	m = &ms[k++];
	h = v2_msg(m, true, 0x3c000001, RPCRDMA_V2_MSG, false);
	set_call(m, h->xid, TEST_PROC_BASE + 1);
	encode(m);
	put32be(m->bytes + 16, 0x00000002);

	/* 2. RDMA2_ERROR without F_RESPONSE (§3.2). */
	m = &ms[k++];
	h = v2_msg(m, false, 0x3c000002, RPCRDMA_V2_ERROR, true);
	h->error.code = RPCRDMA_V2_ERR_SYSTEM;
	encode(m);
	put32be(m->bytes + 16, 0);

	/* 3. RDMA2_NOMSG with no chunk at all (§5.3.2): an RDMA2_MSG header
	 * without RPC message, retyped. */
	m = &ms[k++];
	v2_msg(m, true, 0x3c000003, RPCRDMA_V2_MSG, false);
	encode(m);
	put32be(m->bytes + 12, RPCRDMA_V2_NOMSG);

	/* 4. A call whose rdma_inv_handle is none of its handles (§3.3). */
	m = &ms[k++];
	h = v2_msg(m, true, 0x3c000004, RPCRDMA_V2_NOMSG, false);
	h->chunks.has_reply = true;
	h->chunks.reply.nsegs = 1;
	h->chunks.reply.segs[0] = seg(0x00060001, 4096, 0x00007f2000000000ull);
	h->inv_handle = 0x00069999;
	encode(m);

	/* 5. RDMA2_PROPID_RBSIZ with two bytes of data (§4.1): an unknown
	 * property of two bytes, renumbered. */
	m = &ms[k++];
	h = v2_msg(m, true, 0x3c000005, RPCRDMA_V2_CONNPROP, false);
	static const uint8_t two[2] = { 0x10, 0x00 };
	v2_prop(h, 0x4242, false, 0, two, sizeof two);
	encode(m);
	put32be(m->bytes + 24, RPCRDMA_V2_PROPID_RBSIZ);

	/* 6. A header cut inside its Write list, in a last DDP segment. */
	m = &ms[k++];
	h = v2_msg(m, true, 0x3c000006, RPCRDMA_V2_NOMSG, false);
	h->chunks.nwrites = 1;
	h->chunks.writes[0].nsegs = 2;
	h->chunks.writes[0].segs[0] = seg(0x00070001, 4096, 0x00007f2100000000ull);
	h->chunks.writes[0].segs[1] = seg(0x00070002, 4096, 0x00007f2100001000ull);
	encode(m);
	m->len -= 20;
	return k;
}

/* ------------------------------------------------------------------ */
/* Expected values                                                     */

static void json_segment(FILE *f, const struct rpcrdma_segment *s)
{
	fprintf(f, "{\"handle\":%" PRIu32 ",\"length\":%" PRIu32
		   ",\"offset\":%" PRIu64 "}", s->handle, s->length, s->offset);
}

static void json_chunk(FILE *f, const struct rpcrdma_write_chunk *c)
{
	fputc('[', f);
	for (uint32_t i = 0; i < c->nsegs; i++) {
		if (i)
			fputc(',', f);
		json_segment(f, &c->segs[i]);
	}
	fputc(']', f);
}

static void json_msg(FILE *f, const struct msg *m)
{
	const struct rpcrdma_v1_hdr *h = &m->h;
	fprintf(f, "{\"frame\":%u,\"dir\":\"%s\",\"msn\":%" PRIu32
		   ",\"length\":%zu,\"hex\":\"",
		m->frame, m->from_client ? "c2s" : "s2c", m->msn, m->len);
	for (size_t i = 0; i < m->len; i++)
		fprintf(f, "%02x", m->bytes[i]);
	fputs("\",\"ddp\":[", f);
	for (unsigned i = 0; i < m->nddp; i++)
		fprintf(f, "%s{\"mo\":%" PRIu32 ",\"len\":%zu,\"last\":%s}",
			i ? "," : "", m->ddp[i].mo, m->ddp[i].len,
			m->ddp[i].last ? "true" : "false");
	if (m->v2) {
		fprintf(f, "],\"expect\":{\"rdma_xid\":%" PRIu32 ",\"rdma_vers\":%"
			   PRIu32 ",\"rdma_credit\":%" PRIu32 ",\"rdma_htype\":%" PRIu32
			   ",\"rdma_flags\":%" PRIu32 "}}", m->h2.xid, m->h2.vers,
			m->h2.credit, m->h2.htype, m->h2.flags);
		return;
	}
	fprintf(f, "],\"expect\":{\"rdma_xid\":%" PRIu32 ",\"rdma_vers\":%" PRIu32
		   ",\"rdma_credit\":%" PRIu32 ",\"rdma_proc\":%" PRIu32,
		h->xid, h->vers, h->credit, h->proc);
	if (h->proc == RPCRDMA_V1_MSG || h->proc == RPCRDMA_V1_NOMSG ||
	    h->proc == RPCRDMA_V1_MSGP) {
		fputs(",\"rdma_reads\":[", f);
		for (uint32_t i = 0; i < h->chunks.nreads; i++) {
			const struct rpcrdma_read_segment *r = &h->chunks.reads[i];
			fprintf(f, "%s{\"position\":%" PRIu32 ",\"handle\":%" PRIu32
				   ",\"length\":%" PRIu32 ",\"offset\":%" PRIu64 "}",
				i ? "," : "", r->position, r->target.handle,
				r->target.length, r->target.offset);
		}
		fputs("],\"rdma_writes\":[", f);
		for (uint32_t i = 0; i < h->chunks.nwrites; i++) {
			if (i)
				fputc(',', f);
			json_chunk(f, &h->chunks.writes[i]);
		}
		fputs("],\"rdma_reply\":", f);
		if (h->chunks.has_reply)
			json_chunk(f, &h->chunks.reply);
		else
			fputs("null", f);
	}
	if (h->proc == RPCRDMA_V1_ERROR) {
		fprintf(f, ",\"rdma_err\":%" PRIu32, h->err);
		if (h->err == RPCRDMA_V1_ERR_VERS)
			fprintf(f, ",\"rdma_vers_low\":%" PRIu32
				   ",\"rdma_vers_high\":%" PRIu32,
				h->vers_low, h->vers_high);
	}
	if (m->has_rpc) {
		const struct rpcrdma_rpc_msg *r = &m->rpc;
		fprintf(f, ",\"rpc\":{\"xid\":%" PRIu32 ",\"msg_type\":%" PRIu32,
			r->xid, r->mtype);
		if (r->mtype == RPCRDMA_RPC_CALL) {
			fprintf(f, ",\"rpcvers\":2,\"prog\":%" PRIu32
				   ",\"vers\":%" PRIu32 ",\"proc\":%" PRIu32
				   ",\"cred\":{\"flavor\":%" PRIu32
				   ",\"stamp\":%" PRIu32 ",\"machinename\":\"%.*s\""
				   ",\"uid\":%" PRIu32 ",\"gid\":%" PRIu32 ",\"gids\":[",
				r->call.prog, r->call.vers, r->call.proc,
				r->call.cred.flavor, m->sys.stamp,
				(int)m->sys.machinename_len, m->sys.machinename,
				m->sys.uid, m->sys.gid);
			for (uint32_t i = 0; i < m->sys.ngids; i++)
				fprintf(f, "%s%" PRIu32, i ? "," : "", m->sys.gids[i]);
			fprintf(f, "]},\"verf\":{\"flavor\":%" PRIu32 "}",
				r->call.verf.flavor);
		} else {
			fprintf(f, ",\"reply_stat\":%" PRIu32 ",\"accept_stat\":%" PRIu32,
				r->reply.stat, r->reply.accepted.stat);
		}
		fprintf(f, ",\"body_length\":%zu}", m->args_len);
	}
	fputs("}}", f);
}

/* ------------------------------------------------------------------ */
/* iWARP framing                                                       */

/* The RFC 8797 private data each side sent, for EXPECTED.json. */
static uint8_t pdata[2][RPCRDMA_CM_PDATA_LEN];

static size_t mpa_frame(bool reply, int rev, uint8_t *out, size_t cap)
{
	uint8_t *pd = pdata[reply];
	int n = rpcrdma_cm_pdata_encode(pd, RPCRDMA_CM_PDATA_LEN,
					reply ? 8192 : 4096,
					reply ? 4096 : 8192, true);
	if (n < 0)
		die("rpcrdma_cm_pdata_encode", n);
	struct rpcrdma_iwarp_mpa_rr rr;
	memset(&rr, 0, sizeof rr);
	rr.reply = reply;
	rr.crc = true;
	rr.rev = (uint8_t)rev;
	if (rev == 2) {
		rr.enhanced = true;
		rr.irdord.ird = 16;
		rr.irdord.ord = 16;
	}
	n = rpcrdma_iwarp_mpa_rr_build(&rr, pd, (size_t)n, out, cap);
	if (n < 0)
		die("rpcrdma_iwarp_mpa_rr_build", n);
	return (size_t)n;
}

/* One DDP segment of a Send: header + payload framed as an FPDU. */
static size_t send_fpdu(uint32_t msn, uint32_t mo, bool last,
			const uint8_t *p, size_t len, uint8_t *out, size_t cap)
{
	uint8_t ulpdu[RPCRDMA_IWARP_DDP_UNTAGGED_HLEN + 2048];
	struct rpcrdma_iwarp_ddp_hdr d;
	memset(&d, 0, sizeof d);
	d.tagged = false;
	d.last = last;
	d.dv = RPCRDMA_IWARP_DDP_VERSION;
	d.rv = RPCRDMA_IWARP_RDMAP_VERSION;
	d.opcode = RPCRDMA_IWARP_OP_SEND;
	d.qn = RPCRDMA_IWARP_QN_SEND;
	d.msn = msn;
	d.mo = mo;
	int n = rpcrdma_iwarp_ddp_build(&d, ulpdu, sizeof ulpdu);
	if (n < 0)
		die("rpcrdma_iwarp_ddp_build", n);
	if ((size_t)n + len > sizeof ulpdu)
		die("send_fpdu (payload too large)", -1);
	memcpy(ulpdu + n, p, len);
	n = rpcrdma_iwarp_fpdu_build(ulpdu, (size_t)n + len, true, out, cap);
	if (n < 0)
		die("rpcrdma_iwarp_fpdu_build", n);
	return (size_t)n;
}

int main(int argc, char **argv)
{
	int rev = 1;
	bool stress = false, ng = false, reorder = false, v2 = false, split = false;
	bool violations = false;
	const char *out_path = NULL, *exp_path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rev") == 0 && i + 1 < argc)
			rev = atoi(argv[++i]);
		else if (strcmp(argv[i], "--stress") == 0)
			stress = true;
		else if (strcmp(argv[i], "--reorder") == 0)
			stress = reorder = true;
		else if (strcmp(argv[i], "--pcapng") == 0)
			ng = true;
		else if (strcmp(argv[i], "--v2") == 0)
			v2 = true;
		else if (strcmp(argv[i], "--split") == 0)
			split = true;
		else if (strcmp(argv[i], "--v2-violations") == 0)
			violations = true;
		else if (!out_path)
			out_path = argv[i];
		else if (!exp_path)
			exp_path = argv[i];
		else
			out_path = NULL, i = argc;
	}
	if (!out_path || !exp_path || (rev != 1 && rev != 2)) {
		fprintf(stderr, "usage: mkpcap [--rev 1|2] [--stress] [--reorder] [--split] "
			"[--pcapng] [--v2 | --v2-violations] OUT.pcap EXPECTED.json\n");
		return 2;
	}
	FILE *f = fopen(out_path, "wb");
	FILE *ef = fopen(exp_path, "w");
	if (!f || !ef) {
		perror("mkpcap: fopen");
		return 2;
	}
	static struct msg ms[24];
	size_t nmsg = violations ? build_violations_v2(ms) :
		      v2 ? build_messages_v2(ms) : build_messages(ms);

	struct cap cap;
	cap_open(&cap, f, ng);
	struct conn k = {
		.cap = &cap,
		.c = {{127, 0, 0, 1}, 40001, 0x10000000u},
		.s = {{127, 0, 0, 1}, 20049, 0x50000000u},
		.ip_id = 1,
	};
	tcp_send(&k, true, TCP_SYN, NULL, 0);
	tcp_send(&k, false, TCP_SYN | TCP_ACK, NULL, 0);
	tcp_send(&k, true, TCP_ACK, NULL, 0);

	uint8_t buf[8192];
	size_t n = mpa_frame(false, rev, buf, sizeof buf);
	tcp_send(&k, true, TCP_PSH | TCP_ACK, buf, n);
	unsigned req_frame = cap.frames;
	n = mpa_frame(true, rev, buf, sizeof buf);
	tcp_send(&k, false, TCP_PSH | TCP_ACK, buf, n);
	unsigned rep_frame = cap.frames;

	uint32_t msn_c = 1, msn_s = 1;
	/* --stress: bytes held back per direction until flushed. */
	static uint8_t pend[2][16384];
	size_t npend[2] = {0, 0};
	for (size_t i = 0; i < nmsg; i++) {
		struct msg *m = &ms[i];
		int dir = m->from_client ? 0 : 1;
		m->msn = m->from_client ? msn_c++ : msn_s++;
		if (split && !stress && i == nmsg - 1) {
			size_t third = (m->len / 3) & ~(size_t)3;
			size_t cuts[4] = {0, third, 2 * third, m->len};
			for (int s = 0; s < 3; s++) {
				n = send_fpdu(m->msn, (uint32_t)cuts[s], s == 2,
					      m->bytes + cuts[s], cuts[s + 1] - cuts[s],
					      buf, sizeof buf);
				m->ddp[s].mo = (uint32_t)cuts[s];
				m->ddp[s].len = cuts[s + 1] - cuts[s];
				m->ddp[s].last = s == 2;
				tcp_send(&k, m->from_client, TCP_PSH | TCP_ACK, buf, n);
			}
			m->nddp = 3;
			m->frame = cap.frames;
			continue;
		}
		if (!stress) {
			n = send_fpdu(m->msn, 0, true, m->bytes, m->len, buf,
				      sizeof buf);
			m->nddp = 1;
			m->ddp[0].mo = 0;
			m->ddp[0].len = m->len;
			m->ddp[0].last = true;
			tcp_send(&k, m->from_client, TCP_PSH | TCP_ACK, buf, n);
			m->frame = cap.frames;
			continue;
		}
		/* Stress framing.  The last message is sent as three DDP
		 * segments; FPDUs of consecutive client messages are
		 * coalesced and then cut at odd places. */
		uint8_t *p = pend[dir];
		if (i == nmsg - 1) {
			size_t third = (m->len / 3) & ~(size_t)3;
			size_t cuts[4] = {0, third, 2 * third, m->len};
			for (int s = 0; s < 3; s++) {
				npend[dir] += send_fpdu(m->msn, (uint32_t)cuts[s],
							s == 2, m->bytes + cuts[s],
							cuts[s + 1] - cuts[s],
							p + npend[dir],
							sizeof pend[dir] - npend[dir]);
				m->ddp[s].mo = (uint32_t)cuts[s];
				m->ddp[s].len = cuts[s + 1] - cuts[s];
				m->ddp[s].last = s == 2;
			}
			m->nddp = 3;
		} else {
			npend[dir] += send_fpdu(m->msn, 0, true, m->bytes, m->len,
						p + npend[dir],
						sizeof pend[dir] - npend[dir]);
			m->nddp = 1;
			m->ddp[0].mo = 0;
			m->ddp[0].len = m->len;
			m->ddp[0].last = true;
		}
		/* Flush when the next message goes the other way, or at the
		 * end, in segments of 173 bytes then the rest (an odd size,
		 * so FPDUs straddle segment boundaries). */
		bool flush = i + 1 == nmsg || ms[i + 1].from_client != m->from_client;
		if (!flush) {
			m->frame = 0; /* filled in when flushed */
			continue;
		}
		/* Cut into TCP segments: 173 bytes, then up to 1400 (or
		 * 100 under --reorder, which then sends the 2nd and 3rd
		 * segments swapped and the 1st once more at the end). */
		struct endpoint *src = m->from_client ? &k.c : &k.s;
		uint32_t base = src->seq;
		size_t offs[64], lens[64], nseg = 0, off = 0;
		while (off < npend[dir] && nseg < 64) {
			size_t chunk = npend[dir] - off;
			size_t most = off == 0 ? 173 : reorder ? 100 : 1400;
			if (chunk > most)
				chunk = most;
			offs[nseg] = off;
			lens[nseg++] = chunk;
			off += chunk;
		}
		if (off != npend[dir])
			die("stress flush (too many segments)", -1);
		size_t order[65], norder = 0;
		for (size_t s2 = 0; s2 < nseg; s2++)
			order[norder++] = s2;
		if (reorder && nseg >= 3) {
			order[1] = 2;
			order[2] = 1;
			order[norder++] = 0;
		}
		for (size_t s2 = 0; s2 < norder; s2++) {
			size_t x = order[s2];
			src->seq = base + (uint32_t)offs[x];
			tcp_send(&k, m->from_client, TCP_PSH | TCP_ACK,
				 p + offs[x], lens[x]);
		}
		src->seq = base + (uint32_t)npend[dir];
		npend[dir] = 0;
		for (size_t j = 0; j <= i; j++)
			if (ms[j].frame == 0 && ms[j].from_client == m->from_client)
				ms[j].frame = cap.frames;
	}
	/* Orderly close. */
	tcp_send(&k, true, TCP_FIN | TCP_ACK, NULL, 0);
	tcp_send(&k, false, TCP_FIN | TCP_ACK, NULL, 0);
	tcp_send(&k, true, TCP_ACK, NULL, 0);

	fprintf(ef, "{\"rev\":%d,\"stress\":%s,\"pcapng\":%s,\"frames\":%u,"
		    "\"mpa_request_frame\":%u,\"mpa_reply_frame\":%u,",
		rev, stress ? "true" : "false", ng ? "true" : "false",
		cap.frames, req_frame, rep_frame);
	fputs("\"mpa_private_data\":[", ef);
	for (int r = 0; r < 2; r++) {
		fputs(r ? ",\"" : "\"", ef);
		for (size_t i = 0; i < RPCRDMA_CM_PDATA_LEN; i++)
			fprintf(ef, "%02x", pdata[r][i]);
		fputc('"', ef);
	}
	fputs("],\n\"messages\":[\n", ef);
	for (size_t i = 0; i < nmsg; i++) {
		json_msg(ef, &ms[i]);
		fputs(i + 1 < nmsg ? ",\n" : "\n", ef);
	}
	fputs("]}\n", ef);
	if (fclose(f) || fclose(ef)) {
		perror("mkpcap: close");
		return 2;
	}
	return 0;
}
