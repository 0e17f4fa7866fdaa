/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* rpcrdma-dump: one line per message, and the display filter. */
#ifndef RPCRDMA_TOOLS_DUMP_SUMMARY_H
#define RPCRDMA_TOOLS_DUMP_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DUMP_SEEN 4096 /* calls remembered to name their replies */

struct dump_seen {
	uint32_t xid, prog, vers, proc;
};

struct dump_view {
	bool detail;          /* -V: every field, as --json has them */
	bool has_xid, has_prog;
	uint32_t xid, prog;
	const char *type;     /* call, reply, error, msg, nomsg, connprop ... */
	unsigned shown;
	struct dump_seen seen[DUMP_SEEN];
	unsigned nseen;
};

/* What the one line says about a message. */
struct dump_info {
	uint32_t xid, rdma_vers, credit;
	const char *type;     /* "MSG", "NOMSG", "ERROR", "CONNPROP" ... */
	bool is_msg, is_nomsg, has_rpc, is_call, long_call, call_known;
	uint32_t prog, vers, proc;
	uint32_t reply_stat, accept_stat;
	uint32_t err;
	uint32_t nreads, nwrites;
	bool has_reply;
	uint64_t reply_bytes;
};

/* Parses a transport message (remembering calls in v). */
void dump_info_parse(struct dump_view *v, const uint8_t *buf, size_t len,
		     struct dump_info *in);
bool dump_view_match(const struct dump_view *v, const struct dump_info *in);
bool dump_view_filters(const struct dump_view *v);
void dump_summary_line(FILE *f, unsigned frame, double t, const char *src,
		       const char *dst, const struct dump_info *in);
/* "0x186a3 nfs" */
void dump_prog_name(uint32_t prog, char *out, size_t cap);

#endif
