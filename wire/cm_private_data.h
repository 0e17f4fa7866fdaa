/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * RPC-over-RDMA version 1 CM Private Data (RFC 8797).
 *
 * The eight-octet message each peer puts in the RDMA-CM Private Data of
 * its connect request / accept (RFC 8797 §4):
 *
 *   octets 0-3  Format Identifier 0xf6ab0e18, network byte order
 *   octet  4    Version (1)
 *   octet  5    7 reserved bits, then R (least significant bit, bit 15
 *               of the second word in the RFC diagram): the sender
 *               supports remote invalidation (§4.1)
 *   octet  6    Send Size    (encoded, §4.2)
 *   octet  7    Receive Size (encoded, §4.2)
 *
 * A size is encoded as bytes / 1024 - 1, so codes 0..255 stand for
 * 1 KiB .. 256 KiB (§4.2).
 *
 * Receiver rules: absent, short, wrong-identifier or unknown-version
 * private data is never an error.  The peer is then treated as if it had
 * sent R = 0 and both sizes = 0, i.e. 1024-byte inline thresholds and no
 * remote invalidation (§5.1, §5.2).  The decoders below therefore return
 * "present or not", never a failure; the reason a message was not
 * recognised is kept only for logging and tools.
 *
 * RFC 8797 §4: "An implementation ... MUST be prepared for the settings
 * to change upon a reconnection."  Nothing here keeps state: decode the
 * peer's message and derive thresholds afresh for every connection.
 *
 * Pure functions: no I/O, no allocation, no global state.
 */
#ifndef RPCRDMA_WIRE_CM_PRIVATE_DATA_H
#define RPCRDMA_WIRE_CM_PRIVATE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/error.h"

#define RPCRDMA_CM_PDATA_MAGIC 0xf6ab0e18u  /* RFC 8797 §4 Format Identifier */
#define RPCRDMA_CM_PDATA_VERSION 1u         /* RFC 8797 §4 Version */
#define RPCRDMA_CM_PDATA_LEN 8u             /* octets in version 1 */
#define RPCRDMA_CM_PDATA_FLAG_REMOTE_INV 0x01u /* R bit within octet 5 */
#define RPCRDMA_CM_PDATA_MIN_SIZE 1024u     /* code 0   (RFC 8797 §4.2) */
#define RPCRDMA_CM_PDATA_MAX_SIZE 262144u   /* code 255 (RFC 8797 §4.2) */
/* RFC 8166 §3.3.3 / RFC 8797 §3.1: the version 1 default inline threshold. */
#define RPCRDMA_V1_DEFAULT_INLINE 1024u

/*
 * A decoded (or to-be-encoded) private data message.  When present is
 * false every other field holds the §5.1 defaults (version 0, flags 0,
 * codes 0, sizes 1024, remote_inv false) and status says why.
 */
struct rpcrdma_cm_pdata {
	bool present;       /* a valid version 1 message was found */
	int status;         /* 0, or why not: RPCRDMA_ERR_TRUNCATED (too
			     * short), _BAD_MAGIC, _BAD_VERSION.  Diagnostic
			     * only: never fail a connection on it. */
	uint8_t version;    /* octet 4 as received */
	uint8_t flags;      /* octet 5 as received, reserved bits included */
	uint8_t send_code;  /* octet 6 as received */
	uint8_t recv_code;  /* octet 7 as received */
	bool remote_inv;    /* R bit (reserved bits ignored, §4) */
	uint32_t max_send;  /* (send_code + 1) * 1024 bytes */
	uint32_t max_recv;  /* (recv_code + 1) * 1024 bytes */
};

/* The inline thresholds and remote-invalidation permission in force on a
 * connection, from our point of view. */
struct rpcrdma_inline_thresholds {
	uint32_t send;      /* largest RDMA Send we may post to the peer */
	uint32_t recv;      /* largest message the peer may send to us */
	bool send_with_inv; /* when we are the responder we MAY reply with
			     * Send With Invalidate (both R bits set, §4.1);
			     * each such Send MUST invalidate an STag of that
			     * reply's XID only (§4.1, the engine's job) */
};

/*
 * Size field encoding (RFC 8797 §4.2).  bytes is rounded DOWN to a
 * multiple of 1024 (we must never advertise more than we have) and
 * clamped to 1024..262144.  A value below 1024 is clamped UP to 1024,
 * since 1024 is the smallest threshold version 1 allows (RFC 8166
 * §3.3.3); callers must not configure buffers smaller than that.
 */
uint8_t rpcrdma_cm_pdata_size_to_code(size_t bytes);
/* Inverse: (code + 1) * 1024, always 1024..262144. */
uint32_t rpcrdma_cm_pdata_code_to_size(uint8_t code);

/*
 * Write the 8-octet version 1 message for our own maxima into buf.
 * Reserved bits are written as zero (RFC 8797 §4 MUST).  Sizes are
 * encoded with rpcrdma_cm_pdata_size_to_code().
 * Returns RPCRDMA_CM_PDATA_LEN, or RPCRDMA_ERR_NOSPACE if cap < 8
 * (buf untouched), or RPCRDMA_ERR_INVAL if buf is NULL.
 */
int rpcrdma_cm_pdata_encode(void *buf, size_t cap, size_t max_send,
			    size_t max_recv, bool remote_inv);

/*
 * Decode private data that starts at buf[0] (a tool looking at a buffer
 * known to hold the message there; a receiver on a connection searches
 * with rpcrdma_cm_pdata_find(), §5.2).  Trailing octets after the
 * first eight are accepted and ignored (RFC 8797 §6: later formats add
 * fields from byte eight on).  buf may be NULL when len is 0.
 * Always fills *pd; returns pd->present.
 */
bool rpcrdma_cm_pdata_decode(const void *buf, size_t len,
			     struct rpcrdma_cm_pdata *pd);

/*
 * RFC 8797 §5.2: search buf for the Format Identifier at any octet
 * offset (no alignment) and decode the message found there.  A hit
 * whose version is not 1 or that runs past the end of buf is skipped and
 * the search goes on.  Returns pd->present; on success *offset (if not
 * NULL) is the octet offset of the identifier.  When nothing is found,
 * pd holds the defaults and pd->status the reason for the first
 * candidate rejected (or RPCRDMA_ERR_BAD_MAGIC if none).
 */
bool rpcrdma_cm_pdata_find(const void *buf, size_t len,
			   struct rpcrdma_cm_pdata *pd, size_t *offset);

/* Fill *pd with the §5.1 "no private data" defaults (present = false,
 * status = 0). */
void rpcrdma_cm_pdata_defaults(struct rpcrdma_cm_pdata *pd);

/*
 * Derive the connection's inline thresholds (RFC 8797 §4.2) and the
 * Send With Invalidate permission (§4.1) from our configured maxima
 * (what we advertise, in bytes; rounded and clamped exactly as the
 * encoder does, so we never exceed what we advertised) and the peer's
 * decoded message.  peer may be NULL or !peer->present: then the §5.1
 * defaults apply (sizes 1024, R = 0).
 *   send = min(our max send, peer's max receive)
 *   recv = min(our max receive, peer's max send)
 *   send_with_inv = our_remote_inv && peer R bit
 */
void rpcrdma_cm_pdata_thresholds(size_t our_max_send, size_t our_max_recv,
				 bool our_remote_inv,
				 const struct rpcrdma_cm_pdata *peer,
				 struct rpcrdma_inline_thresholds *out);

#endif
