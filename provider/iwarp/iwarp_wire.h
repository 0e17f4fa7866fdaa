/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * iWARP wire formats: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP
 * (RFC 5040) headers as pure, bounds-checked build/parse functions.
 *
 * Nothing here knows about sockets, queue pairs or memory registration, so
 * the same code serves the provider's TX/RX engines and offline decoders
 * (rpcrdma-dump reading pcap captures).  Every parse function takes a
 * (pointer, length) pair, never reads outside it, and returns the number of
 * bytes consumed or a negative enum rpcrdma_error:
 *   RPCRDMA_ERR_TRUNCATED  the buffer ends before the structure does
 *                          (a streaming reader waits for more bytes);
 *   RPCRDMA_ERR_PROTOCOL   the bytes can never form a valid structure.
 * Every build function takes an output capacity and returns the number of
 * bytes written or RPCRDMA_ERR_NOSPACE / RPCRDMA_ERR_INVAL.
 *
 * All multi-byte fields are big-endian (network order) except the MPA CRC,
 * which is sent least-significant byte first (RFC 5044 §4.4; checked
 * against tshark's dissector by provider_capture_tshark).
 */
#ifndef RPCRDMA_IWARP_WIRE_H
#define RPCRDMA_IWARP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------
 * MPA Request / Reply frames (RFC 5044 §7.1, RFC 6581 §6 and §9)
 */
#define RPCRDMA_IWARP_MPA_KEY_LEN 16
#define RPCRDMA_IWARP_MPA_KEY_REQ "MPA ID Req Frame"
#define RPCRDMA_IWARP_MPA_KEY_REP "MPA ID Rep Frame"
#define RPCRDMA_IWARP_MPA_HDR_LEN 20  /* key + flags/rev/PD_Length */
/* RFC 5044 §7.1.1 allows PD_Length up to 512, and so we take up to 512;
 * Linux siw accepts at most 256 including the RFC 6581 IRD/ORD block, so
 * that is the most we send. */
#define RPCRDMA_IWARP_MPA_MAX_PD 256
#define RPCRDMA_IWARP_MPA_MAX_PD_RECV 512
#define RPCRDMA_IWARP_MPA_IRDORD_LEN 4
/* The largest frame we parse (and so the buffer a frame is read into). */
#define RPCRDMA_IWARP_MPA_MAX_FRAME \
	(RPCRDMA_IWARP_MPA_HDR_LEN + RPCRDMA_IWARP_MPA_MAX_PD_RECV)

/* Byte 16 of the frame (RFC 5044 §7.1, RFC 6581 §6). */
#define RPCRDMA_IWARP_MPA_FLAG_M 0x80u  /* markers */
#define RPCRDMA_IWARP_MPA_FLAG_C 0x40u  /* CRC */
#define RPCRDMA_IWARP_MPA_FLAG_R 0x20u  /* reject (Reply only) */
#define RPCRDMA_IWARP_MPA_FLAG_S 0x10u  /* enhanced setup data present */

/* RFC 6581 §9: |A|B| IRD(14) |C|D| ORD(14) | */
#define RPCRDMA_IWARP_IRDORD_MAX 0x3FFFu
struct rpcrdma_iwarp_irdord {
	bool p2p;          /* A: peer-to-peer model, RTR required */
	bool rtr_send;     /* B: zero-length Send RTR */
	bool rtr_write;    /* C: zero-length RDMA Write RTR */
	bool rtr_read;     /* D: zero-length RDMA Read RTR */
	uint16_t ird;      /* 14 bits; 0x3FFF = "no automatic negotiation" */
	uint16_t ord;
};

struct rpcrdma_iwarp_mpa_rr {
	bool reply;        /* key is "MPA ID Rep Frame" */
	bool markers;      /* M */
	bool crc;          /* C */
	bool reject;       /* R */
	bool enhanced;     /* S: private data starts with the IRD/ORD block */
	uint8_t rev;       /* 1 or 2 */
	uint16_t pd_len;   /* PD_Length: all private data incl. IRD/ORD */
	struct rpcrdma_iwarp_irdord irdord; /* valid when enhanced */
	const uint8_t *ulp_pd;  /* parse: ULP private data (after IRD/ORD),
				   points into the parsed buffer */
	uint16_t ulp_pd_len;
};

/* Builds a frame: header, IRD/ORD block when rr->enhanced, then
 * ulp_pd_len bytes of ulp_pd (all of it at most RPCRDMA_IWARP_MPA_MAX_PD).
 * rr->pd_len/ulp_pd are ignored (computed). */
int rpcrdma_iwarp_mpa_rr_build(const struct rpcrdma_iwarp_mpa_rr *rr,
			       const void *ulp_pd, size_t ulp_pd_len,
			       uint8_t *out, size_t cap);
/* Parses the 20-byte header only: checks the key (RFC 5044 §7.1.2 rule 5)
 * and that PD_Length <= RPCRDMA_IWARP_MPA_MAX_PD_RECV (§7.1.1).  Returns
 * RPCRDMA_IWARP_MPA_HDR_LEN + pd_len (the full frame size). */
int rpcrdma_iwarp_mpa_rr_parse_hdr(const uint8_t *buf, size_t len,
				   struct rpcrdma_iwarp_mpa_rr *rr);
/* Parses a whole frame; returns its size.  An enhanced frame whose
 * PD_Length is below 4 is malformed. */
int rpcrdma_iwarp_mpa_rr_parse(const uint8_t *buf, size_t len,
			       struct rpcrdma_iwarp_mpa_rr *rr);
void rpcrdma_iwarp_irdord_put(const struct rpcrdma_iwarp_irdord *io,
			      uint8_t out[4]);
void rpcrdma_iwarp_irdord_get(const uint8_t in[4],
			      struct rpcrdma_iwarp_irdord *io);

/* ------------------------------------------------------------------
 * MPA FPDU framing (RFC 5044 §4): ULPDU_Length(2) | ULPDU | pad | CRC(4).
 * Pad makes 2 + ULPDU_Length + pad a multiple of 4 (§4.1); the CRC covers
 * length, ULPDU and pad (§4.4) and is always present (zero when off).
 */
#define RPCRDMA_IWARP_MPA_LEN_BYTES 2
#define RPCRDMA_IWARP_MPA_CRC_BYTES 4
#define RPCRDMA_IWARP_MAX_ULPDU 0xFFFFu

static inline size_t rpcrdma_iwarp_fpdu_pad(size_t ulpdu_len)
{
	return (4 - ((2 + ulpdu_len) & 3)) & 3;
}

static inline size_t rpcrdma_iwarp_fpdu_size(size_t ulpdu_len)
{
	return 2 + ulpdu_len + rpcrdma_iwarp_fpdu_pad(ulpdu_len) + 4;
}

/* Largest ULPDU for a given TCP MSS (RFC 5044 §8.1 MULPDU, no markers):
 * the FPDU must fit one segment; clamped to [64, 65532] and a multiple of
 * four.  max_fpdu (0 = none) caps the whole FPDU size. */
size_t rpcrdma_iwarp_mulpdu(size_t mss, size_t max_fpdu);

/* Frames a contiguous ULPDU.  CRC computed when crc is set, else zero. */
int rpcrdma_iwarp_fpdu_build(const void *ulpdu, size_t ulpdu_len, bool crc,
			     uint8_t *out, size_t cap);
/* Parses one FPDU at buf.  On success sets *ulpdu and *ulpdu_len, returns the
 * FPDU size.  check_crc: a mismatch returns RPCRDMA_ERR_PROTOCOL. */
int rpcrdma_iwarp_fpdu_parse(const uint8_t *buf, size_t len, bool check_crc,
			     const uint8_t **ulpdu, size_t *ulpdu_len);
/* Streaming helpers: the CRC state after the 2 length bytes and the ULPDU
 * (crc_state from rpcrdma_crc32c_update starting at init), finished over
 * the pad.  Writes pad + CRC (pad + 4 bytes) into out[8]; returns that. */
size_t rpcrdma_iwarp_fpdu_trailer(uint32_t crc_state, size_t ulpdu_len,
				  bool crc, uint8_t out[8]);

/* ------------------------------------------------------------------
 * DDP headers (RFC 5041 §4) with the RDMAP control byte (RFC 5040 §4.1)
 *
 * byte 0: T(1) L(1) Rsvd(4) DV(2)     byte 1: RV(2) Rsv(2) Opcode(4)
 * tagged:   STag(4) TO(8)                                 = 14 bytes
 * untagged: RsvdULP/Invalidate STag(4) QN(4) MSN(4) MO(4)  = 18 bytes
 */
#define RPCRDMA_IWARP_DDP_TAGGED_HLEN 14
#define RPCRDMA_IWARP_DDP_UNTAGGED_HLEN 18
#define RPCRDMA_IWARP_DDP_VERSION 1   /* DV = 01b (RFC 5041 §4.2) */
#define RPCRDMA_IWARP_RDMAP_VERSION 1 /* RV = 01b (RFC 5040 §4.2) */

/* Untagged queues (RFC 5040 §4.6: QN 0 Send, 1 Read Request, 2 Terminate). */
enum rpcrdma_iwarp_qn {
	RPCRDMA_IWARP_QN_SEND = 0,
	RPCRDMA_IWARP_QN_READ_REQ = 1,
	RPCRDMA_IWARP_QN_TERMINATE = 2,
};

/* RDMAP opcodes (RFC 5040 §4.2 Figure 4). */
enum rpcrdma_iwarp_opcode {
	RPCRDMA_IWARP_OP_WRITE = 0,
	RPCRDMA_IWARP_OP_READ_REQ = 1,
	RPCRDMA_IWARP_OP_READ_RESP = 2,
	RPCRDMA_IWARP_OP_SEND = 3,
	RPCRDMA_IWARP_OP_SEND_INV = 4,
	RPCRDMA_IWARP_OP_SEND_SE = 5,
	RPCRDMA_IWARP_OP_SEND_SE_INV = 6,
	RPCRDMA_IWARP_OP_TERMINATE = 7,
};

struct rpcrdma_iwarp_ddp_hdr {
	bool tagged;       /* T */
	bool last;         /* L */
	uint8_t dv;        /* DDP version */
	uint8_t rv;        /* RDMAP version */
	uint8_t opcode;    /* enum rpcrdma_iwarp_opcode */
	/* tagged */
	uint32_t stag;
	uint64_t to;
	/* untagged */
	uint32_t inval_stag; /* Send with Invalidate; else 0 */
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

static inline size_t rpcrdma_iwarp_ddp_hlen(bool tagged)
{
	return tagged ? RPCRDMA_IWARP_DDP_TAGGED_HLEN
		      : RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
}

int rpcrdma_iwarp_ddp_build(const struct rpcrdma_iwarp_ddp_hdr *h,
			    uint8_t *out, size_t cap);
/* Parses whatever header the T bit announces; versions and opcodes are
 * returned as found (a decoder shows them; the receiver checks them with
 * rpcrdma_iwarp_ddp_check). */
int rpcrdma_iwarp_ddp_parse(const uint8_t *buf, size_t len,
			    struct rpcrdma_iwarp_ddp_hdr *h);

/* ------------------------------------------------------------------
 * RDMAP Read Request header (RFC 5040 §4.4), 28 bytes after the DDP
 * header of an untagged QN 1 message.
 */
#define RPCRDMA_IWARP_READ_REQ_LEN 28
struct rpcrdma_iwarp_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};
int rpcrdma_iwarp_read_req_build(const struct rpcrdma_iwarp_read_req *r,
				 uint8_t *out, size_t cap);
int rpcrdma_iwarp_read_req_parse(const uint8_t *buf, size_t len,
				 struct rpcrdma_iwarp_read_req *r);

/* ------------------------------------------------------------------
 * Terminate (RFC 5040 §4.8): control(4) [seg len(2)] [DDP hdr] [RDMA hdr]
 */
enum rpcrdma_iwarp_term_layer {
	RPCRDMA_IWARP_LAYER_RDMAP = 0,
	RPCRDMA_IWARP_LAYER_DDP = 1,
	RPCRDMA_IWARP_LAYER_LLP = 2,
};
/* RDMAP error types and codes (RFC 5040 §4.8 Figure 9). */
#define RPCRDMA_IWARP_RDMAP_ET_CATASTROPHIC 0
#define RPCRDMA_IWARP_RDMAP_ET_PROT 1
#define RPCRDMA_IWARP_RDMAP_ET_OP 2
#define RPCRDMA_IWARP_RDMAP_EC_INV_STAG 0x00
#define RPCRDMA_IWARP_RDMAP_EC_BOUNDS 0x01
#define RPCRDMA_IWARP_RDMAP_EC_ACCESS 0x02
#define RPCRDMA_IWARP_RDMAP_EC_NOT_ASSOC 0x03
#define RPCRDMA_IWARP_RDMAP_EC_TO_WRAP 0x04
#define RPCRDMA_IWARP_RDMAP_EC_BAD_VERSION 0x05
#define RPCRDMA_IWARP_RDMAP_EC_BAD_OPCODE 0x06
#define RPCRDMA_IWARP_RDMAP_EC_CATASTROPHIC_STREAM 0x07
#define RPCRDMA_IWARP_RDMAP_EC_CANT_INVALIDATE 0x09
#define RPCRDMA_IWARP_RDMAP_EC_UNSPECIFIED 0xFF
/* DDP error types and codes (RFC 5041 §7.2). */
#define RPCRDMA_IWARP_DDP_ET_CATASTROPHIC 0
#define RPCRDMA_IWARP_DDP_ET_TAGGED 1
#define RPCRDMA_IWARP_DDP_ET_UNTAGGED 2
#define RPCRDMA_IWARP_DDP_EC_T_INV_STAG 0x00
#define RPCRDMA_IWARP_DDP_EC_T_BOUNDS 0x01
#define RPCRDMA_IWARP_DDP_EC_T_NOT_ASSOC 0x02
#define RPCRDMA_IWARP_DDP_EC_T_TO_WRAP 0x03
#define RPCRDMA_IWARP_DDP_EC_T_BAD_VERSION 0x04
#define RPCRDMA_IWARP_DDP_EC_U_INV_QN 0x01
#define RPCRDMA_IWARP_DDP_EC_U_NO_BUF 0x02
#define RPCRDMA_IWARP_DDP_EC_U_MSN_RANGE 0x03
#define RPCRDMA_IWARP_DDP_EC_U_INV_MO 0x04
#define RPCRDMA_IWARP_DDP_EC_U_TOO_LONG 0x05
#define RPCRDMA_IWARP_DDP_EC_U_BAD_VERSION 0x06
/* MPA (LLP) error codes (RFC 5044 §8 "Error codes"; RFC 6581 §9.1-9.2). */
#define RPCRDMA_IWARP_MPA_EC_CLOSED 0x01
#define RPCRDMA_IWARP_MPA_EC_CRC 0x02
#define RPCRDMA_IWARP_MPA_EC_MARKER 0x03
#define RPCRDMA_IWARP_MPA_EC_BAD_RR 0x04
#define RPCRDMA_IWARP_MPA_EC_RESOURCES 0x06
#define RPCRDMA_IWARP_MPA_EC_NO_RTR 0x07

#define RPCRDMA_IWARP_TERM_CTRL_LEN 4
#define RPCRDMA_IWARP_TERM_MAX_LEN \
	(4 + 2 + RPCRDMA_IWARP_DDP_UNTAGGED_HLEN + RPCRDMA_IWARP_READ_REQ_LEN)

struct rpcrdma_iwarp_term {
	uint8_t layer;    /* 4 bits */
	uint8_t etype;    /* 4 bits */
	uint8_t ecode;
	bool m;           /* DDP Segment Length valid */
	bool d;           /* DDP header included */
	bool r;           /* RDMAP (Read Request) header included */
	uint16_t seg_len;
	uint8_t ddp_hdr[RPCRDMA_IWARP_DDP_UNTAGGED_HLEN];
	size_t ddp_hdr_len; /* 14 or 18 when d */
	uint8_t rdma_hdr[RPCRDMA_IWARP_READ_REQ_LEN];
};
int rpcrdma_iwarp_term_build(const struct rpcrdma_iwarp_term *t,
			     uint8_t *out, size_t cap);
int rpcrdma_iwarp_term_parse(const uint8_t *buf, size_t len,
			     struct rpcrdma_iwarp_term *t);

/* ------------------------------------------------------------------
 * Receiver checks of a parsed DDP/RDMAP header that need no connection
 * state (RFC 5041 §7.2, RFC 5040 §4.2, §4.6).  On failure fills
 * *layer, *etype and *ecode for the Terminate and returns RPCRDMA_ERR_PROTOCOL.
 */
int rpcrdma_iwarp_ddp_check(const struct rpcrdma_iwarp_ddp_hdr *h,
			    uint8_t *layer, uint8_t *etype, uint8_t *ecode);

/* Short names for decoders ("Send", "RDMA Write", ...); never NULL. */
const char *rpcrdma_iwarp_opcode_name(unsigned opcode);

#endif
