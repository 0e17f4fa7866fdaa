/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * A hand-made iWARP peer for tests: plain blocking TCP plus the MPA
 * (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP (RFC 5040) framing of
 * provider/iwarp/iwarp_wire.h, and nothing else: no queue pair, no
 * memory registration, no progress engine.  A test drives it message by
 * message, so it can do what our provider never does: send any
 * RPC-over-RDMA version, send a malformed or oversized frame, or leave an
 * RDMA Read Request unanswered.
 *
 * Every function returns 0 or a negative enum rpcrdma_error; waits are
 * bounded by timeout_ms (failure detection only, never a measurement).
 */
#ifndef RPCRDMA_TESTS_IWPEER_H
#define RPCRDMA_TESTS_IWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "provider/iwarp/iwarp_wire.h"

struct iwpeer {
	int fd;
	bool crc;              /* MPA CRC in use (RFC 5044 §7.1: either
				  side asked) */
	uint32_t msn[3];       /* next MSN we send, per untagged queue */
	size_t max_ulpdu;      /* payload bytes we put in one FPDU */
	struct rpcrdma_iwarp_mpa_rr peer; /* the peer's Request or Reply */
	uint8_t peer_pd[512];
	size_t peer_pd_len;
	/* Sends that came while iwpeer_rdma_read waited (FIFO). */
	struct iwpeer_msg *stash[16];
	unsigned nstash;
	/* Regions served to the peer's Read Requests (iwpeer_expose). */
	struct iwpeer_region {
		uint32_t stag;
		uint64_t to;
		const uint8_t *mem;
		size_t len;
	} regions[16];
	unsigned nregions;
	unsigned reads_served; /* Read Requests answered from regions */
	bool defer_reads;      /* return Read Requests to the caller
				  (iwpeer_answer_read) instead */
};

/* TCP connect to addr (numeric "host:port" or "[v6]:port"); no MPA yet. */
int iwpeer_tcp_connect(struct iwpeer *p, const char *addr, int timeout_ms);

/* As initiator: TCP connect, MPA Request revision 1 with C set and
 * ulp_pd, then the Reply.  0: accepted; RPCRDMA_ERR_CONNREFUSED: the
 * Reply had R set (its private data in peer_pd). */
int iwpeer_connect(struct iwpeer *p, const char *addr, const void *pd,
		   size_t pd_len, int timeout_ms);
/* The same with an enhanced (revision 2) Request offering IRD and ORD
 * (RFC 6581 §7.1): the responder's ORD is then at most ird. */
int iwpeer_connect_ird(struct iwpeer *p, const char *addr, const void *pd,
		       size_t pd_len, uint16_t ird, int timeout_ms);
/* The same (ird 0 taken as 1), the Request also offering peer-to-peer
 * set-up with a zero-length RDMA Write RTR (RFC 6581 §9.2); if the Reply
 * takes it, the RTR is sent (p->peer.irdord says what the Reply chose). */
int iwpeer_connect_p2p(struct iwpeer *p, const char *addr, const void *pd,
		       size_t pd_len, uint16_t ird, int timeout_ms);

/* Reads one MPA Request or Reply frame whatever its PD_Length (up to
 * 0xFFFF bytes of private data are read and the first 512 kept). */
int iwpeer_read_mpa(struct iwpeer *p, int timeout_ms);

/* As responder: listen on 127.0.0.1 (port 0: ephemeral; *port gets it),
 * then accept one connection, read its Request and answer a Reply with
 * ulp_pd (enhanced with a zero-length-Write RTR when the Request asked
 * for peer-to-peer set-up, RFC 6581 §9.2), then read the RTR. */
int iwpeer_listen(int *lfd, uint16_t *port);
int iwpeer_accept(struct iwpeer *p, int lfd, const void *pd, size_t pd_len,
		  int timeout_ms);

void iwpeer_close(struct iwpeer *p);

/* Raw bytes, written whole. */
int iwpeer_write(struct iwpeer *p, const void *buf, size_t len);

/* One FPDU around ulpdu (length, pad, CRC). */
int iwpeer_send_fpdu(struct iwpeer *p, const void *ulpdu, size_t len);

/* An untagged Send (RDMAP Send, QN 0, next MSN), segmented into FPDUs
 * of max_ulpdu payload bytes with their message offsets. */
int iwpeer_send(struct iwpeer *p, const void *msg, size_t len);

/* The same as a Send With Invalidate of stag (RFC 5040 §5.1, §6.10). */
int iwpeer_send_inv(struct iwpeer *p, const void *msg, size_t len,
		    uint32_t stag);

/* An RDMA Write of len bytes to (stag, to), segmented into tagged FPDUs
 * (RFC 5040 §4.3).  The peer checks the STag; a bad one gets us a
 * Terminate (read it with iwpeer_recv). */
int iwpeer_rdma_write(struct iwpeer *p, uint32_t stag, uint64_t to,
		      const void *data, size_t len);

/* An RDMA Read of len bytes from (stag, to) into out (RFC 5040 §4.4):
 * a Read Request, then the Read Response's tagged segments.  Sends that
 * arrive meanwhile are kept for iwpeer_recv.  RPCRDMA_ERR_PROTOCOL when
 * the peer answers with a Terminate (then *term, if not NULL, has it). */
int iwpeer_rdma_read(struct iwpeer *p, uint32_t stag, uint64_t to,
		     void *out, size_t len, int timeout_ms);

enum iwpeer_kind {
	IWPEER_SEND = 1,     /* a whole untagged Send: msg, len, inv_stag */
	IWPEER_READ_REQ,     /* an RDMA Read Request: rr */
	IWPEER_WRITE,        /* an RDMA Write segment (len bytes, ignored) */
	IWPEER_READ_RESP,    /* a Read Response segment (ignored) */
	IWPEER_TERMINATE,    /* term */
	IWPEER_EOF,          /* the peer closed (FIN) */
	IWPEER_RESET,        /* the connection was reset (RST) */
};

struct iwpeer_msg {
	enum iwpeer_kind kind;
	uint8_t opcode;
	uint8_t msg[65536];  /* a Send; or a tagged segment's payload */
	size_t len;
	uint32_t inv_stag;
	uint32_t stag;       /* tagged: STag, TO, L bit */
	uint64_t to;
	bool last;
	struct rpcrdma_iwarp_read_req rr;
	struct rpcrdma_iwarp_term term;
};

/* The next message (a Send kept by iwpeer_rdma_read first).
 * RPCRDMA_ERR_TIMEOUT when nothing complete came; RPCRDMA_ERR_PROTOCOL
 * for a frame we cannot parse (bad CRC included). */
int iwpeer_recv(struct iwpeer *p, struct iwpeer_msg *m, int timeout_ms);

/* Local memory the peer exposes to RDMA Reads from the other side (a
 * Read chunk we offer in a call): iwpeer_recv answers a Read Request
 * for stag within it with a Read Response, instead of returning it. */
int iwpeer_expose(struct iwpeer *p, uint32_t stag, uint64_t to,
		  const void *mem, size_t len);
void iwpeer_unexpose(struct iwpeer *p, uint32_t stag);
/* Answer a Read Request (with defer_reads) from the exposed regions: a
 * Read Response, or a Terminate when it is outside them (RFC 5040
 * §8.1; the peer's QP then fails). */
int iwpeer_answer_read(struct iwpeer *p, const struct rpcrdma_iwarp_read_req *rr);

/* The next Send, skipping zero-length RDMA Writes (RTRs). */
int iwpeer_recv_send(struct iwpeer *p, struct iwpeer_msg *m, int timeout_ms);

#endif
