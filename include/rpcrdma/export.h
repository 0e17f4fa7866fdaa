/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
#ifndef RPCRDMA_EXPORT_H
#define RPCRDMA_EXPORT_H
/* The library builds with -fvisibility=hidden; public API is marked.
 * Internal: not installed (the public headers do not need it). */
#define RPCRDMA_EXPORT __attribute__((visibility("default")))
#endif
