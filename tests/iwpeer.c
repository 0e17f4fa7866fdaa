/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* A hand-made iWARP peer for tests (see iwpeer.h). */
#include "iwpeer.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"
#include "rpcrdma/error.h"
#include "wire/crc32c.h"

/* Payload per FPDU we send: small enough for any MULPDU (RFC 5044 §8.1). */
#define IWPEER_SEG 1024

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Reads exactly n bytes.  0; RPCRDMA_ERR_TIMEOUT; RPCRDMA_ERR_DISCONNECTED
 * at a clean end of stream, RPCRDMA_ERR_FLUSHED when it was reset. */
static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	size_t got = 0;
	while (got < n) {
		int64_t left = end - now_ms();
		if (left <= 0)
			return RPCRDMA_ERR_TIMEOUT;
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		ssize_t r = recv(fd, (uint8_t *)buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == ECONNRESET)
			return RPCRDMA_ERR_FLUSHED;
		if (r < 0)
			return RPCRDMA_ERR_SYSTEM;
		if (r == 0)
			return RPCRDMA_ERR_DISCONNECTED;
		got += (size_t)r;
	}
	return 0;
}

int iwpeer_write(struct iwpeer *p, const void *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t r = send(p->fd, (const uint8_t *)buf + off, len - off,
				 MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return RPCRDMA_ERR_DISCONNECTED;
		off += (size_t)r;
	}
	return 0;
}

static void peer_init(struct iwpeer *p, int fd)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	for (int i = 0; i < 3; i++)
		p->msn[i] = 1; /* RFC 5041 §5.1 */
	p->max_ulpdu = IWPEER_SEG;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int iwpeer_tcp_connect(struct iwpeer *p, const char *addr, int timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (rpcrdma_rpc_parse_addr(addr, &ss, &sl) < 0)
		return RPCRDMA_ERR_ADDR;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RPCRDMA_ERR_SYSTEM;
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, sl) != 0) {
		close(fd);
		return RPCRDMA_ERR_CONNREFUSED;
	}
	peer_init(p, fd);
	return 0;
}

/* An MPA Request or Reply frame of any PD_Length (RFC 5044 §7.1.1),
 * built by hand so that a test can exceed what our builder allows. */
static size_t mpa_frame(uint8_t *out, bool reply, uint8_t flags, uint8_t rev,
			const uint8_t *irdord, const void *pd, size_t pd_len)
{
	memcpy(out, reply ? RPCRDMA_IWARP_MPA_KEY_REP : RPCRDMA_IWARP_MPA_KEY_REQ,
	       RPCRDMA_IWARP_MPA_KEY_LEN);
	size_t total = pd_len + (irdord ? RPCRDMA_IWARP_MPA_IRDORD_LEN : 0);
	out[16] = flags | (irdord ? RPCRDMA_IWARP_MPA_FLAG_S : 0);
	out[17] = rev;
	out[18] = (uint8_t)(total >> 8);
	out[19] = (uint8_t)total;
	size_t off = RPCRDMA_IWARP_MPA_HDR_LEN;
	if (irdord) {
		memcpy(out + off, irdord, RPCRDMA_IWARP_MPA_IRDORD_LEN);
		off += RPCRDMA_IWARP_MPA_IRDORD_LEN;
	}
	if (pd_len)
		memcpy(out + off, pd, pd_len);
	return off + pd_len;
}

int iwpeer_read_mpa(struct iwpeer *p, int timeout_ms)
{
	uint8_t h[RPCRDMA_IWARP_MPA_HDR_LEN];
	int rc = read_full(p->fd, h, sizeof(h), timeout_ms);
	if (rc)
		return rc;
	struct rpcrdma_iwarp_mpa_rr *rr = &p->peer;
	memset(rr, 0, sizeof(*rr));
	if (!memcmp(h, RPCRDMA_IWARP_MPA_KEY_REP, RPCRDMA_IWARP_MPA_KEY_LEN))
		rr->reply = true;
	else if (memcmp(h, RPCRDMA_IWARP_MPA_KEY_REQ, RPCRDMA_IWARP_MPA_KEY_LEN))
		return RPCRDMA_ERR_PROTOCOL;
	rr->markers = h[16] & RPCRDMA_IWARP_MPA_FLAG_M;
	rr->crc = h[16] & RPCRDMA_IWARP_MPA_FLAG_C;
	rr->reject = h[16] & RPCRDMA_IWARP_MPA_FLAG_R;
	rr->enhanced = h[16] & RPCRDMA_IWARP_MPA_FLAG_S;
	rr->rev = h[17];
	rr->pd_len = (uint16_t)(h[18] << 8 | h[19]);
	static uint8_t pd[0x10000];
	rc = rr->pd_len ? read_full(p->fd, pd, rr->pd_len, timeout_ms) : 0;
	if (rc)
		return rc;
	size_t off = 0;
	if (rr->enhanced && rr->pd_len >= RPCRDMA_IWARP_MPA_IRDORD_LEN) {
		rpcrdma_iwarp_irdord_get(pd, &rr->irdord);
		off = RPCRDMA_IWARP_MPA_IRDORD_LEN;
	}
	p->peer_pd_len = rr->pd_len - off;
	if (p->peer_pd_len > sizeof(p->peer_pd))
		p->peer_pd_len = sizeof(p->peer_pd);
	memcpy(p->peer_pd, pd + off, p->peer_pd_len);
	return 0;
}

int iwpeer_connect(struct iwpeer *p, const char *addr, const void *pd,
		   size_t pd_len, int timeout_ms)
{
	return iwpeer_connect_ird(p, addr, pd, pd_len, 0, timeout_ms);
}

static int connect_mpa(struct iwpeer *p, const char *addr, const void *pd,
		       size_t pd_len, uint16_t ird, bool p2p, int timeout_ms)
{
	int rc = iwpeer_tcp_connect(p, addr, timeout_ms);
	if (rc)
		return rc;
	uint8_t f[RPCRDMA_IWARP_MPA_HDR_LEN + 512];
	if (pd_len > 512)
		return RPCRDMA_ERR_INVAL;
	uint8_t io[RPCRDMA_IWARP_MPA_IRDORD_LEN];
	struct rpcrdma_iwarp_irdord r = {.p2p = p2p, .rtr_write = p2p,
					 .ird = ird, .ord = ird};
	rpcrdma_iwarp_irdord_put(&r, io);
	size_t n = mpa_frame(f, false, RPCRDMA_IWARP_MPA_FLAG_C, ird ? 2 : 1,
			     ird ? io : NULL, pd, pd_len);
	rc = iwpeer_write(p, f, n);
	if (!rc)
		rc = iwpeer_read_mpa(p, timeout_ms);
	if (rc)
		return rc;
	if (!p->peer.reply || p->peer.markers)
		return RPCRDMA_ERR_PROTOCOL;
	if (p->peer.reject)
		return RPCRDMA_ERR_CONNREFUSED;
	p->crc = true; /* we set C */
	/* RFC 6581 §9.2: the responder chose the RTR among those offered;
	 * the initiator's first FPDU is that RTR. */
	if (p2p && p->peer.enhanced && p->peer.irdord.p2p)
		return p->peer.irdord.rtr_write
			       ? iwpeer_rdma_write(p, 0, 0, NULL, 0)
			       : RPCRDMA_ERR_PROTOCOL;
	return 0;
}

int iwpeer_connect_ird(struct iwpeer *p, const char *addr, const void *pd,
		       size_t pd_len, uint16_t ird, int timeout_ms)
{
	return connect_mpa(p, addr, pd, pd_len, ird, false, timeout_ms);
}

int iwpeer_connect_p2p(struct iwpeer *p, const char *addr, const void *pd,
		       size_t pd_len, uint16_t ird, int timeout_ms)
{
	return connect_mpa(p, addr, pd, pd_len, ird ? ird : 1, true,
			   timeout_ms);
}

int iwpeer_listen(int *lfd, uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RPCRDMA_ERR_SYSTEM;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &sl) != 0) {
		close(fd);
		return RPCRDMA_ERR_SYSTEM;
	}
	*lfd = fd;
	*port = ntohs(a.sin_port);
	return 0;
}

int iwpeer_accept(struct iwpeer *p, int lfd, const void *pd, size_t pd_len,
		  int timeout_ms)
{
	struct pollfd pf = {.fd = lfd, .events = POLLIN};
	if (poll(&pf, 1, timeout_ms) != 1)
		return RPCRDMA_ERR_TIMEOUT;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return RPCRDMA_ERR_SYSTEM;
	peer_init(p, fd);
	int rc = iwpeer_read_mpa(p, timeout_ms);
	if (rc)
		return rc;
	if (p->peer.reply)
		return RPCRDMA_ERR_PROTOCOL;
	p->crc = p->peer.crc;
	bool p2p = p->peer.enhanced && p->peer.irdord.p2p;
	uint8_t io[RPCRDMA_IWARP_MPA_IRDORD_LEN];
	if (p->peer.enhanced) {
		/* RFC 6581 §9: IRD and ORD of 1; the zero-length Write RTR
		 * when the initiator offered peer-to-peer set-up. */
		struct rpcrdma_iwarp_irdord r = {.p2p = p2p, .rtr_write = p2p,
						 .ird = 1, .ord = 1};
		rpcrdma_iwarp_irdord_put(&r, io);
	}
	uint8_t f[RPCRDMA_IWARP_MPA_HDR_LEN + 512];
	size_t n = mpa_frame(f, true, p->crc ? RPCRDMA_IWARP_MPA_FLAG_C : 0,
			     p->peer.rev, p->peer.enhanced ? io : NULL, pd, pd_len);
	rc = iwpeer_write(p, f, n);
	if (rc || !p2p)
		return rc;
	/* RFC 5044 §7.1.2 rule 4: nothing from the responder before the
	 * initiator's first FPDU, here the RTR. */
	struct iwpeer_msg *m = malloc(sizeof(*m));
	if (!m)
		return RPCRDMA_ERR_NOMEM;
	rc = iwpeer_recv(p, m, timeout_ms);
	if (!rc && (m->kind != IWPEER_WRITE || m->len != 0))
		rc = RPCRDMA_ERR_PROTOCOL;
	free(m);
	return rc;
}

void iwpeer_close(struct iwpeer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	while (p->nstash)
		free(p->stash[--p->nstash]);
	p->nregions = 0;
}

int iwpeer_send_fpdu(struct iwpeer *p, const void *ulpdu, size_t len)
{
	size_t cap = rpcrdma_iwarp_fpdu_size(len);
	uint8_t *f = malloc(cap);
	if (!f)
		return RPCRDMA_ERR_NOMEM;
	int n = rpcrdma_iwarp_fpdu_build(ulpdu, len, p->crc, f, cap);
	int rc = n < 0 ? n : iwpeer_write(p, f, (size_t)n);
	free(f);
	return rc;
}

/* One DDP message (untagged on queue qn, or tagged at stag/to) cut
 * into FPDUs of max_ulpdu bytes: message offsets or tagged offsets
 * advance, the last segment has L set (RFC 5041 §5). */
static int send_message(struct iwpeer *p, struct rpcrdma_iwarp_ddp_hdr h,
			const void *msg, size_t len)
{
	size_t seg = p->max_ulpdu - rpcrdma_iwarp_ddp_hlen(h.tagged);
	size_t off = 0;
	uint64_t to = h.to;
	do {
		size_t k = len - off < seg ? len - off : seg;
		h.last = off + k == len;
		h.dv = RPCRDMA_IWARP_DDP_VERSION;
		h.rv = RPCRDMA_IWARP_RDMAP_VERSION;
		if (h.tagged)
			h.to = to + off;
		else
			h.mo = (uint32_t)off;
		uint8_t u[IWPEER_SEG];
		int hl = rpcrdma_iwarp_ddp_build(&h, u, sizeof(u));
		if (hl < 0)
			return hl;
		if (k)
			memcpy(u + hl, (const uint8_t *)msg + off, k);
		int rc = iwpeer_send_fpdu(p, u, (size_t)hl + k);
		if (rc)
			return rc;
		off += k;
	} while (off < len);
	return 0;
}

static int send_untagged(struct iwpeer *p, uint8_t opcode, uint32_t inv,
			 const void *msg, size_t len)
{
	struct rpcrdma_iwarp_ddp_hdr h = {
		.opcode = opcode, .inval_stag = inv,
		.qn = RPCRDMA_IWARP_QN_SEND,
		.msn = p->msn[RPCRDMA_IWARP_QN_SEND]++,
	};
	return send_message(p, h, msg, len);
}

int iwpeer_send(struct iwpeer *p, const void *msg, size_t len)
{
	return send_untagged(p, RPCRDMA_IWARP_OP_SEND, 0, msg, len);
}

int iwpeer_send_inv(struct iwpeer *p, const void *msg, size_t len,
		    uint32_t stag)
{
	return send_untagged(p, RPCRDMA_IWARP_OP_SEND_INV, stag, msg, len);
}

int iwpeer_rdma_write(struct iwpeer *p, uint32_t stag, uint64_t to,
		      const void *data, size_t len)
{
	struct rpcrdma_iwarp_ddp_hdr h = {
		.tagged = true, .opcode = RPCRDMA_IWARP_OP_WRITE,
		.stag = stag, .to = to,
	};
	return send_message(p, h, data, len);
}

/* The sink STag of our Read Requests: tagged Read Response segments
 * naming it land in the caller's buffer. */
#define IWPEER_SINK_STAG 0x5157u

static int stash_push(struct iwpeer *p, const struct iwpeer_msg *m)
{
	if (p->nstash >= sizeof(p->stash) / sizeof(p->stash[0]))
		return RPCRDMA_ERR_NOSPACE;
	struct iwpeer_msg *c = malloc(sizeof(*c));
	if (!c)
		return RPCRDMA_ERR_NOMEM;
	memcpy(c, m, sizeof(*c));
	p->stash[p->nstash++] = c;
	return 0;
}

int iwpeer_rdma_read(struct iwpeer *p, uint32_t stag, uint64_t to,
		     void *out, size_t len, int timeout_ms)
{
	struct rpcrdma_iwarp_read_req rr = {
		.sink_stag = IWPEER_SINK_STAG, .sink_to = 0,
		.size = (uint32_t)len, .src_stag = stag, .src_to = to,
	};
	uint8_t b[RPCRDMA_IWARP_READ_REQ_LEN];
	int n = rpcrdma_iwarp_read_req_build(&rr, b, sizeof(b));
	if (n < 0)
		return n;
	struct rpcrdma_iwarp_ddp_hdr h = {
		.opcode = RPCRDMA_IWARP_OP_READ_REQ,
		.qn = RPCRDMA_IWARP_QN_READ_REQ,
		.msn = p->msn[RPCRDMA_IWARP_QN_READ_REQ]++,
	};
	int rc = send_message(p, h, b, (size_t)n);
	if (rc)
		return rc;
	struct iwpeer_msg *m = malloc(sizeof(*m));
	if (!m)
		return RPCRDMA_ERR_NOMEM;
	/* Read Responses come in order (RFC 5040 §5.2): all of ours. */
	size_t got = 0;
	while (!rc) {
		rc = iwpeer_recv(p, m, timeout_ms);
		if (rc)
			break;
		if (m->kind == IWPEER_READ_RESP && m->stag == IWPEER_SINK_STAG &&
		    m->to <= len && m->len <= len - m->to) {
			memcpy((uint8_t *)out + m->to, m->msg, m->len);
			got += m->len;
			if (m->last)
				break;
		} else if (m->kind == IWPEER_SEND ||
			   (m->kind == IWPEER_WRITE && !m->len)) {
			if (m->kind == IWPEER_SEND)
				rc = stash_push(p, m);
		} else {
			rc = RPCRDMA_ERR_PROTOCOL; /* Terminate, end, junk */
		}
	}
	free(m);
	if (!rc && got != len)
		rc = RPCRDMA_ERR_PROTOCOL; /* a short Read Response */
	return rc;
}

int iwpeer_expose(struct iwpeer *p, uint32_t stag, uint64_t to,
		  const void *mem, size_t len)
{
	if (p->nregions >= sizeof(p->regions) / sizeof(p->regions[0]))
		return RPCRDMA_ERR_NOSPACE;
	p->regions[p->nregions++] =
		(struct iwpeer_region){stag, to, mem, len};
	return 0;
}

void iwpeer_unexpose(struct iwpeer *p, uint32_t stag)
{
	for (unsigned i = 0; i < p->nregions;)
		if (p->regions[i].stag == stag)
			p->regions[i] = p->regions[--p->nregions];
		else
			i++;
}

int iwpeer_answer_read(struct iwpeer *p, const struct rpcrdma_iwarp_read_req *rr)
{
	for (unsigned i = 0; i < p->nregions; i++) {
		const struct iwpeer_region *g = &p->regions[i];
		if (g->stag != rr->src_stag || rr->src_to < g->to ||
		    rr->src_to - g->to > g->len ||
		    g->len - (rr->src_to - g->to) < rr->size)
			continue;
		struct rpcrdma_iwarp_ddp_hdr h = {
			.tagged = true, .opcode = RPCRDMA_IWARP_OP_READ_RESP,
			.stag = rr->sink_stag, .to = rr->sink_to,
		};
		p->reads_served++;
		return send_message(p, h, g->mem + (rr->src_to - g->to),
				    rr->size);
	}
	/* RFC 5040 §8.1: an invalid STag is a Terminate, then the stream
	 * ends. */
	struct rpcrdma_iwarp_term t = {
		.layer = RPCRDMA_IWARP_LAYER_RDMAP,
		.etype = RPCRDMA_IWARP_RDMAP_ET_PROT,
		.ecode = RPCRDMA_IWARP_RDMAP_EC_INV_STAG,
	};
	uint8_t b[RPCRDMA_IWARP_TERM_MAX_LEN];
	int n = rpcrdma_iwarp_term_build(&t, b, sizeof(b));
	if (n < 0)
		return n;
	struct rpcrdma_iwarp_ddp_hdr h = {
		.opcode = RPCRDMA_IWARP_OP_TERMINATE,
		.qn = RPCRDMA_IWARP_QN_TERMINATE,
		.msn = p->msn[RPCRDMA_IWARP_QN_TERMINATE]++,
	};
	send_message(p, h, b, (size_t)n);
	shutdown(p->fd, SHUT_RDWR);
	return RPCRDMA_ERR_PROTOCOL;
}

static int end_kind(int rc, struct iwpeer_msg *m)
{
	if (rc == RPCRDMA_ERR_DISCONNECTED) {
		m->kind = IWPEER_EOF;
		return 0;
	}
	if (rc == RPCRDMA_ERR_FLUSHED) {
		m->kind = IWPEER_RESET;
		return 0;
	}
	return rc;
}

int iwpeer_recv(struct iwpeer *p, struct iwpeer_msg *m, int timeout_ms)
{
	static _Thread_local uint8_t f[2 + 0xFFFF + 3 + 4];
	if (p->nstash) {
		memcpy(m, p->stash[0], sizeof(*m));
		free(p->stash[0]);
		memmove(p->stash, p->stash + 1,
			--p->nstash * sizeof(p->stash[0]));
		return 0;
	}
	int64_t end = now_ms() + timeout_ms;
	for (;;) {
		int64_t left = end - now_ms();
		if (left <= 0)
			return RPCRDMA_ERR_TIMEOUT;
		int rc = read_full(p->fd, f, 2, (int)left);
		if (rc)
			return end_kind(rc, m);
		size_t ul = (size_t)f[0] << 8 | f[1];
		size_t rest = ul + rpcrdma_iwarp_fpdu_pad(ul) + 4;
		rc = read_full(p->fd, f + 2, rest, timeout_ms);
		if (rc)
			return end_kind(rc, m);
		const uint8_t *u;
		size_t ulen;
		if (rpcrdma_iwarp_fpdu_parse(f, 2 + rest, p->crc, &u, &ulen) < 0)
			return RPCRDMA_ERR_PROTOCOL;
		struct rpcrdma_iwarp_ddp_hdr h;
		int hl = rpcrdma_iwarp_ddp_parse(u, ulen, &h);
		if (hl < 0)
			return RPCRDMA_ERR_PROTOCOL;
		const uint8_t *pl = u + hl;
		size_t plen = ulen - (size_t)hl;
		m->opcode = h.opcode;
		if (h.tagged) {
			m->kind = h.opcode == RPCRDMA_IWARP_OP_WRITE ? IWPEER_WRITE
								     : IWPEER_READ_RESP;
			m->len = plen;
			m->stag = h.stag;
			m->to = h.to;
			m->last = h.last;
			if (plen <= sizeof(m->msg))
				memcpy(m->msg, pl, plen);
			return 0;
		}
		if (h.qn == RPCRDMA_IWARP_QN_READ_REQ) {
			if (rpcrdma_iwarp_read_req_parse(pl, plen, &m->rr) < 0)
				return RPCRDMA_ERR_PROTOCOL;
			if (p->nregions && !p->defer_reads) {
				rc = iwpeer_answer_read(p, &m->rr);
				if (rc)
					return rc;
				continue;
			}
			m->kind = IWPEER_READ_REQ;
			return 0;
		}
		if (h.qn == RPCRDMA_IWARP_QN_TERMINATE) {
			if (rpcrdma_iwarp_term_parse(pl, plen, &m->term) < 0)
				return RPCRDMA_ERR_PROTOCOL;
			m->kind = IWPEER_TERMINATE;
			return 0;
		}
		if (h.mo > sizeof(m->msg) || plen > sizeof(m->msg) - h.mo)
			return RPCRDMA_ERR_PROTOCOL;
		memcpy(m->msg + h.mo, pl, plen);
		if (!h.last)
			continue;
		m->kind = IWPEER_SEND;
		m->len = h.mo + plen;
		m->inv_stag = h.inval_stag;
		return 0;
	}
}

int iwpeer_recv_send(struct iwpeer *p, struct iwpeer_msg *m, int timeout_ms)
{
	for (;;) {
		int rc = iwpeer_recv(p, m, timeout_ms);
		if (rc || m->kind != IWPEER_WRITE || m->len)
			return rc;
	}
}
