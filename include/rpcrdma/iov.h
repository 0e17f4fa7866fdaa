/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * struct rpcrdma_iov: one piece of an XDR stream, shared by the public RPC
 * API (rpcrdma.h) and the engine (engine/engine.h), so a caller's argument
 * and result descriptions reach the engine unchanged.
 */
#ifndef RPCRDMA_IOV_H
#define RPCRDMA_IOV_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A piece of an XDR stream.  ddp marks a DDP-eligible data item (RFC 8166
 * §6.1): the bytes of the item only (its length word, if any, stays in the
 * preceding piece, §3.4.4.1; no roundup padding, the transport adds or
 * drops it, §3.4.4.4).  Every other piece must be a multiple of 4 bytes
 * long. */
struct rpcrdma_iov {
	void *base;
	size_t len;
	bool ddp;
};

#ifdef __cplusplus
}
#endif
#endif
