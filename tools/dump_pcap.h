/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-dump: captures.  A minimal pcap and pcapng reader (no libpcap),
 * a TCP stream follower (per 4-tuple, in sequence order, segments that
 * split or merge FPDUs), MPA (RFC 5044: Request/Reply, then FPDUs with
 * CRC), DDP/RDMAP (RFC 5041, RFC 5040) and reassembly of untagged Sends
 * on queue 0 by MSN/MO; every complete Send payload is decoded with
 * dump_message().
 */
#ifndef RPCRDMA_TOOLS_DUMP_PCAP_H
#define RPCRDMA_TOOLS_DUMP_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* True when buf starts with a pcap (either byte order, micro- or
 * nanosecond) or pcapng magic. */
bool dump_pcap_is_capture(const uint8_t *buf, size_t len);

/*
 * Decode every RPC-over-RDMA message in the capture buf[0..len) to out.
 * Returns the exit status: 0 when the capture was read and every message
 * decoded, 1 when the capture is malformed or some message did not decode
 * (each is reported, in JSON as an "error" member), 2 on allocation
 * failure.
 */
struct dump_view;
int dump_pcap(FILE *out, bool json, struct dump_view *view, const char *src,
	      const uint8_t *buf, size_t len);

#endif
