/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf soak (perf_soak.c): a server and client processes making
 * calls through real faults; the TCP proxy it runs in front of the server
 * (soak_proxy.c).
 */
#ifndef RPCRDMA_BENCH_SOAK_H
#define RPCRDMA_BENCH_SOAK_H

#include <stdbool.h>
#include <stdint.h>

/* A byte-level TCP proxy on 127.0.0.1:listen_port forwarding to
 * 127.0.0.1:upstream_port, run by a thread of its own.  iWARP (MPA over
 * TCP) passes through it unchanged unless it decides otherwise: it
 * delays data, stalls a direction for a while, cuts what it forwards into
 * small segments, and resets connections (both sides get an RST), each
 * at random with the rates below. */
struct soak_proxy_cfg {
	uint16_t listen_port, upstream_port;
	unsigned delay_max_ms;   /* each read is held up to this long */
	unsigned stall_every_ms; /* on average, one stall this often ... */
	unsigned stall_max_ms;   /* ... of up to this long */
	unsigned split_pct;      /* reads forwarded in pieces of 1..64 B */
	unsigned reset_every_ms; /* one random connection reset this often */
	uint32_t seed;
};

struct soak_proxy_stats {
	uint64_t accepted, upstream_failed, resets, stalls, split_writes;
	uint64_t bytes;
};

struct soak_proxy;

/* 0, or -1 (errno) when the port cannot be bound. */
int soak_proxy_start(const struct soak_proxy_cfg *cfg, struct soak_proxy **out);
/* Resets every connection now (a server "crash" seen from the wire). */
void soak_proxy_reset_all(struct soak_proxy *p);
void soak_proxy_stats(struct soak_proxy *p, struct soak_proxy_stats *st);
void soak_proxy_stop(struct soak_proxy *p);

#endif
