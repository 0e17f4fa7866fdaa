/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Internal pieces of the libtirpc adapters (rpc/tirpc/).
 *
 * xdr_rdma.c: two libtirpc XDR streams.
 *  - The gather stream encodes into a growing buffer, except that the
 *    first opaque body of at least ddp_min bytes (when DDP is allowed) is
 *    referenced in place and marked as a DDP-eligible piece (RFC 8166
 *    §6.1); its XDR roundup, which libxdr emits as a separate putbytes
 *    of zeros right after it, is dropped, since chunks carry no padding
 *    (§3.4.5.2, §3.4.6.2) and the engine accounts for it.
 *  - The scatter stream decodes a results stream from which one DDP item
 *    was removed (§3.4.6): the first getbytes whose length equals the bytes
 *    the Responder wrote into the Write chunk is served from the chunk,
 *    and the roundup read that follows it is served with zeros.
 */
#ifndef RPCRDMA_RPC_TIRPC_INTERNAL_H
#define RPCRDMA_RPC_TIRPC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/socket.h>

#include <rpc/rpc.h>

#include "rpcrdma/rpcrdma.h"
#include "rpcrdma/tirpc.h"

#define XDR_GATHER_FIRST 512
struct xdr_gather {
	uint8_t *buf;          /* inline bytes: first, or from malloc */
	size_t len, cap;
	bool ddp_allowed;
	size_t ddp_min;
	bool ddp_taken;        /* one DDP item per stream */
	bool skip_pad;         /* next putbytes is the DDP item's roundup */
	const void *ddp;       /* the DDP item, in the caller's memory */
	size_t ddp_len;
	size_t ddp_at;         /* inline offset the item was taken from */
	bool failed;           /* out of memory */
	/* (first stays last: xdr_gather_create zeroes what is before it.)
	 * The bytes of a small message (a NULL reply is 24, an rpcgen
	 * call's arguments are mostly well under this): encoded in place,
	 * with no malloc and free for each call and each reply.  So a
	 * gather stream lives where it was created, and its bytes no
	 * longer than the stream (xdr_gather_free). */
	_Alignas(8) uint8_t first[XDR_GATHER_FIRST];
};

/* Initialises xdrs as an encode stream over g. */
void xdr_gather_create(XDR *xdrs, struct xdr_gather *g, bool ddp_allowed,
		       size_t ddp_min);
/* The encoded stream as rpcrdma_iov pieces (at most 3).  Returns the
 * count. */
unsigned xdr_gather_iov(const struct xdr_gather *g, struct rpcrdma_iov *iov);
void xdr_gather_free(struct xdr_gather *g);

/* The reply message msg on xdrs, byte for byte as xdr_replymsg() writes
 * it (svc_rdma.c). */
bool_t tirpc_encode_reply(XDR *xdrs, struct rpc_msg *msg);

struct xdr_scatter {
	const uint8_t *p;      /* inline results */
	size_t len, pos;
	const uint8_t *ddp;    /* Write chunk contents (NULL: none) */
	size_t ddp_len;
	bool ddp_used;
	size_t copied;         /* DDP bytes copied out of the chunk, or
				  out of the ranges below */
	/* Ranges of the stream that came by RDMA Read (a call's DDP items
	 * reinserted, RFC 8166 §3.4.5): bytes copied out of them count. */
	unsigned nranges;
	const uint32_t *range_pos, *range_len; /* stream offsets */
	size_t range_base;     /* subtracted from range_pos */
	unsigned pad_left;     /* roundup of the DDP item still to serve */
	struct rpcrdma_padding msgp; /* RFC 5666 padding to skip */
};

/* The stream's data came as RFC 5666 RDMA_MSGP: skip its padding. */
void xdr_scatter_set_padding(struct xdr_scatter *s,
			     const struct rpcrdma_padding *pad);

/* Initialises xdrs as a decode stream over [p, p+len) plus one DDP item. */
void xdr_scatter_create(XDR *xdrs, struct xdr_scatter *s, const void *p,
			size_t len, const void *ddp, size_t ddp_len);

/* ------------------------------------------------------------------ */
/* Binding table shared by client and server adapters. */

struct ulb_entry {
	uint32_t prog, vers, proc;
	bool ddp_arg;
	size_t ddp_result_max, reply_max, ddp_min;
};

/* The table is read without a lock on every call (ulb_lookup): it is
 * replaced whole when bindings are set (rare), and a replaced one is
 * freed once no reader can still be looking at it. */
struct ulb_entries {
	struct ulb_entries *older;   /* replaced, not yet freed */
	size_t n;
	struct ulb_entry e[];
};

struct ulb_table {
	_Atomic(struct ulb_entries *) cur; /* NULL: no bindings */
	atomic_uint readers;               /* inside ulb_lookup */
};

/* Copies the entry of (prog, vers, proc) to *out; false when there is
 * none.  No lock. */
bool ulb_lookup(struct ulb_table *t, uint32_t prog, uint32_t vers,
		uint32_t proc, struct ulb_entry *out);
void ulb_free(struct ulb_table *t);
/* Sets the bindings of n procedures of (prog, vers), replacing earlier
 * ones of the same procedures; writers are serialised by lock.  FALSE
 * when out of memory (nothing changes then). */
bool_t ulb_set_procs(struct ulb_table *t, pthread_mutex_t *lock, uint32_t prog,
		     uint32_t vers, const struct rpcrdma_ulb_proc *procs,
		     unsigned n);

/* Sets libtirpc's rpc_createerr (clnt_pcreateerror prints it); rc is an
 * errno or a negative rpcrdma error, kept as a positive re_errno. */
void tirpc_create_error(enum clnt_stat st, int rc);

/* The errno that names a library error (errmap.c). */
int tirpc_errno(int rc);
/* rpc_createerr for a create call that failed with rc (addr: what the
 * caller asked for, NULL if none). */
void tirpc_create_fail(int rc, const char *addr);

/* A libtirpc CLIENT around a native client, which it owns from now on
 * (destroyed on failure too).  NULL with rpc_createerr set. */
CLIENT *tirpc_wrap_clnt(struct rpcrdma_clnt *nc, uint32_t prog, uint32_t vers,
			const struct sockaddr_storage *addr, socklen_t addrlen);

/* ------------------------------------------------------------------ */
/* The request-side SVCXPRT used by both svc_rdma_create's transport and
 * client callbacks (svc_rdma.c). */

struct svc_rdma_req;

/* Runs an rpcgen dispatch function for one incoming call, synchronously,
 * on the calling thread (client callbacks).  Returns the handler status
 * for the native server. */
enum rpcrdma_svc_stat tirpc_dispatch_direct(
	struct rpcrdma_svc_req *req,
	void (*dispatch)(struct svc_req *, SVCXPRT *),
	struct ulb_table *ulb);

#endif
