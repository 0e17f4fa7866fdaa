/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Fuzz target for the iWARP wire parsers (provider/iwarp/iwarp_wire.h):
 * the first byte picks a parser, the rest is its input.  Every successful
 * parse must consume no more than it was given, and whatever parsed must
 * rebuild into the same bytes where the format is canonical.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "provider/iwarp/iwarp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	uint8_t out[RPCRDMA_IWARP_MPA_MAX_FRAME + 64];
	switch (sel % 6) {
	case 0: {
		struct rpcrdma_iwarp_mpa_rr rr;
		int r = rpcrdma_iwarp_mpa_rr_parse(p, n, &rr);
		if (r > 0 && ((size_t)r > n || rr.pd_len > RPCRDMA_IWARP_MPA_MAX_PD_RECV ||
			      (rr.ulp_pd && rr.ulp_pd + rr.ulp_pd_len > p + n)))
			abort();
		/* We take up to 512 bytes of private data (RFC 5044
		 * §7.1.1) but send at most 256: only those rebuild. */
		if (r > 0 && rr.pd_len <= RPCRDMA_IWARP_MPA_MAX_PD) {
			int b = rpcrdma_iwarp_mpa_rr_build(&rr, rr.ulp_pd, rr.ulp_pd_len,
							   out, sizeof(out));
			if (b != r)
				abort();
			/* Flags other than M/C/R/S, and R in a Request, may
			 * differ; the key, revision and data may not. */
			if (memcmp(out, p, 16) != 0 || out[17] != p[17] ||
			    memcmp(out + 18, p + 18, (size_t)r - 18) != 0)
				abort();
		}
		break;
	}
	case 1: {
		const uint8_t *u;
		size_t ul;
		int r = rpcrdma_iwarp_fpdu_parse(p, n, (sel & 0x80) != 0, &u, &ul);
		if (r > 0 && ((size_t)r > n || u + ul > p + n))
			abort();
		break;
	}
	case 2: {
		struct rpcrdma_iwarp_ddp_hdr h;
		int r = rpcrdma_iwarp_ddp_parse(p, n, &h);
		if (r > 0) {
			uint8_t l, t, c;
			rpcrdma_iwarp_ddp_check(&h, &l, &t, &c);
			int b = rpcrdma_iwarp_ddp_build(&h, out, sizeof(out));
			if (b != r || (size_t)r > n)
				abort();
			/* Reserved bits are not kept; compare the fields. */
			if (memcmp(out + 2, p + 2, (size_t)r - 2) != 0)
				abort();
		}
		break;
	}
	case 3: {
		struct rpcrdma_iwarp_read_req rr;
		if (rpcrdma_iwarp_read_req_parse(p, n, &rr) > 0) {
			rpcrdma_iwarp_read_req_build(&rr, out, sizeof(out));
			if (memcmp(out, p, RPCRDMA_IWARP_READ_REQ_LEN) != 0)
				abort();
		}
		break;
	}
	case 4: {
		struct rpcrdma_iwarp_term t;
		int r = rpcrdma_iwarp_term_parse(p, n, &t);
		if (r > 0) {
			if ((size_t)r > n)
				abort();
			int b = rpcrdma_iwarp_term_build(&t, out, sizeof(out));
			if (b != r)
				abort();
		}
		break;
	}
	default: {
		/* Walk a stream of FPDUs as a decoder would. */
		size_t off = 0;
		while (off < n) {
			const uint8_t *u;
			size_t ul;
			int r = rpcrdma_iwarp_fpdu_parse(p + off, n - off, false, &u, &ul);
			if (r <= 0)
				break;
			struct rpcrdma_iwarp_ddp_hdr h;
			if (rpcrdma_iwarp_ddp_parse(u, ul, &h) > 0 && !h.tagged &&
			    h.qn == RPCRDMA_IWARP_QN_TERMINATE) {
				struct rpcrdma_iwarp_term t;
				size_t hl = RPCRDMA_IWARP_DDP_UNTAGGED_HLEN;
				rpcrdma_iwarp_term_parse(u + hl, ul - hl, &t);
			}
			off += (size_t)r;
		}
		break;
	}
	}
	return 0;
}
