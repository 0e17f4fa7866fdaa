/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Transport counters read from another process (rpcrdma-stat(1)).
 *
 * Mechanism: a process that has a client or a server listens on one
 * abstract unix socket, "\0rpcrdma-stats.PID" (no file to clean up: it
 * goes with the process).  The listening socket sits in the epoll set of
 * every client's and server's event-loop thread, so no thread, timer or
 * signal handler is added to the program.  A reader connects; the loop
 * thread that wakes checks the reader's credentials (SO_PEERCRED: the
 * same user, or root), writes a snapshot of every counter into a sealed
 * memfd and passes its descriptor back (SCM_RIGHTS), then closes: one
 * small non-blocking message, however many connections, so a slow or
 * stuck reader never holds the loop.
 *
 * The snapshot is self-describing: a header, the field table of struct
 * rpcrdma_stats as this library knows it (RPCRDMA_STATS_FIELDS: name,
 * offset, element size, count), then one entry per server or client and
 * per live connection, each followed by its counters.  A reader prints
 * every field the process has, including fields newer than the reader.
 * Native byte order: reader and process share the machine.
 */
#ifndef RPCRDMA_RPC_STATS_EXPORT_H
#define RPCRDMA_RPC_STATS_EXPORT_H

#include <stdint.h>

#define RPCRDMA_STATX_MAGIC "RPCRDMAS"
#define RPCRDMA_STATX_VERSION 1u
#define RPCRDMA_STATX_SOCKET "rpcrdma-stats." /* + pid, abstract */

struct rpcrdma_statx_hdr {
	char magic[8];            /* RPCRDMA_STATX_MAGIC, not terminated */
	uint32_t version;         /* RPCRDMA_STATX_VERSION */
	uint32_t hdr_size;        /* sizeof(struct rpcrdma_statx_hdr) */
	uint32_t field_size;      /* sizeof(struct rpcrdma_statx_field) */
	uint32_t entry_size;      /* sizeof(struct rpcrdma_statx_entry) */
	uint32_t stats_size;      /* counters after each entry */
	uint32_t nfields;
	uint32_t nentries;
	uint32_t pid;
	uint64_t uptime_ms;       /* since the first client or server */
	char lib_version[16];     /* "0.1.0" */
	char comm[16];            /* the program's name */
};

struct rpcrdma_statx_field {
	char name[40];
	uint32_t offset, size, count; /* size: of one element (1, 4, 8) */
};

enum rpcrdma_statx_kind {
	RPCRDMA_STATX_SERVER = 1, /* totals over all its connections, past
				     and present */
	RPCRDMA_STATX_CLIENT = 2,
	RPCRDMA_STATX_CONN = 3,   /* one live connection of `owner` */
};

struct rpcrdma_statx_entry {
	uint32_t kind;            /* enum rpcrdma_statx_kind */
	uint32_t owner;           /* CONN: index of its server or client
				     entry; else its own index */
	uint32_t prog, vers;      /* CLIENT: bound to */
	uint32_t live;            /* SERVER: connections up; CLIENT, CONN:
				     1 connected, 0 not */
	uint32_t pad;
	char name[64];            /* SERVER: listening address; CLIENT,
				     CONN: the peer */
	char provider[16];
	/* then stats_size bytes of struct rpcrdma_stats */
};

/* The library's own table (stats_export.c). */
const struct rpcrdma_statx_field *rpcrdma_rpc_stats_fields(unsigned *n);

#endif
