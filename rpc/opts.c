/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Options and their defaults; the size convention of the public structs
 * that grow (rpcrdma.h, "Binary compatibility"); the engine's monotonic
 * clock; tracing. */
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/rpc_internal.h"
#include "rpcrdma/export.h"

/* A decimal number from the environment; def when unset or not a
 * number (a typo must not turn a limit off). */
static unsigned env_uint(const char *name, unsigned def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v > UINT_MAX || *s == '-')
		return def;
	return (unsigned)v;
}

/* The end of a field, and the sizes of the first published layouts of the
 * two structs that grow (rpcrdma.h, "Binary compatibility"): a smaller
 * size is a caller's bug (an uninitialised size, a pointer's size). */
#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define OPTS_MIN_SIZE END_OF(struct rpcrdma_opts, accept_msgp)
#define STATS_MIN_SIZE END_OF(struct rpcrdma_stats, v2_err_recv)
/* Bytes of a caller's options past this are options we do not know. */
#define OPTS_KNOWN_END END_OF(struct rpcrdma_opts, RPCRDMA_OPTS_LAST_FIELD)

/* A field appended without updating RPCRDMA_OPTS_LAST_FIELD would be
 * refused as unknown when set; this catches most such slips at build
 * time (what remains after the last field can only be padding). */
_Static_assert(sizeof(struct rpcrdma_opts) - OPTS_KNOWN_END <
		       _Alignof(struct rpcrdma_opts),
	       "RPCRDMA_OPTS_LAST_FIELD is not the last field of rpcrdma_opts");

static void opts_defaults(struct rpcrdma_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->provider = "iwarp";
	o->inline_send = 4096;
	o->inline_recv = 4096;
	o->credits = 32;
	o->backchannel_credits = 8;
	/* A 4 MiB payload plus room for the RPC and upper-layer headers. */
	o->max_msg = (4u << 20) + (64u << 10);
	o->connect_timeout_ms = 5000;
	o->call_timeout_ms = 30000;
	/* Handlers run on the thread that takes the call (libtirpc's way:
	 * no hand-off); RPCRDMA_WORKERS=N gives a pool of N threads to
	 * servers whose handlers block. */
	o->workers = 0;
	const char *w = getenv("RPCRDMA_WORKERS");
	if (w && *w) {
		char *end;
		unsigned long n = strtoul(w, &end, 10);
		if (!*end && n <= 1024)
			o->workers = (unsigned)n;
	}
	o->remote_inv = true;
	/* The environment picks the provider for programs that take the
	 * defaults (rpcgen clients, the examples): RPCRDMA_PROVIDER=verbs
	 * runs them on an RDMA NIC, RPCRDMA_DEVICE picks the device. */
	const char *p = getenv("RPCRDMA_PROVIDER");
	if (p && *p)
		o->provider = p;
	const char *d = getenv("RPCRDMA_DEVICE");
	if (d && *d)
		o->device = d;
	const char *crc = getenv("RPCRDMA_MPA_CRC");
	o->mpa_crc = crc && !strcmp(crc, "1");
	o->versions = RPCRDMA_PREFER_V2;
	const char *v = getenv("RPCRDMA_VERSIONS");
	if (v && !strcmp(v, "1"))
		o->versions = RPCRDMA_V1_ONLY;
	else if (v && !strcmp(v, "2"))
		o->versions = RPCRDMA_V2_ONLY;
	o->max_connections = env_uint("RPCRDMA_MAX_CONNECTIONS", 0);
	o->rdma_timeout_ms = env_uint("RPCRDMA_RDMA_TIMEOUT_MS", 30000);
	/* Linux's recommended busy-poll time (net.core.busy_read); from
	 * the environment, 0 turns it off. */
	unsigned bp = env_uint("RPCRDMA_BUSY_POLL_US", 50);
	o->busy_poll_us = bp ? (bp > 1000000 ? 1000000 : (int)bp) : -1;
}

/* A program built against an older header passes a smaller size: it gets
 * the defaults of the fields it knows; one built against a newer header
 * gets ours and zeroes in the fields we do not know (it finds size > our
 * sizeof in rpcrdma_rpc_opts_fill and does not set them, or is refused). */
RPCRDMA_EXPORT void rpcrdma_opts_init(struct rpcrdma_opts *o, size_t size)
{
	struct rpcrdma_opts d;

	if (!o || size < sizeof(o->size))
		return;
	opts_defaults(&d);
	memset(o, 0, size);
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	o->size = size;
}

int rpcrdma_rpc_opts_fill(const struct rpcrdma_opts *in,
			  struct rpcrdma_opts *out)
{
	struct rpcrdma_opts d;

	opts_defaults(&d);
	if (!in) {
		*out = d;
		return 0;
	}
	if (in->size < OPTS_MIN_SIZE)
		return RPCRDMA_ERR_INVAL;
	/* A newer program's options past the ones we know: only zero (the
	 * value rpcrdma_opts_init gave them) is honoured by ignoring it. */
	const unsigned char *b = (const unsigned char *)in;
	for (size_t i = OPTS_KNOWN_END; i < in->size; i++)
		if (b[i])
			return RPCRDMA_ERR_NOTSUP;
	*out = d;
	memcpy(out, in, in->size < OPTS_KNOWN_END ? in->size : OPTS_KNOWN_END);
	out->size = sizeof(*out);
	if (!out->provider)
		out->provider = d.provider;
	if (!out->inline_send)
		out->inline_send = d.inline_send;
	if (!out->inline_recv)
		out->inline_recv = d.inline_recv;
	if (!out->credits)
		out->credits = d.credits;
	if (!out->backchannel_credits)
		out->backchannel_credits = d.backchannel_credits;
	if (!out->max_msg)
		out->max_msg = d.max_msg;
	if (!out->connect_timeout_ms)
		out->connect_timeout_ms = d.connect_timeout_ms;
	if (!out->workers)
		out->workers = d.workers;
	if (!out->versions)
		out->versions = d.versions;
	if (!out->max_connections)
		out->max_connections = d.max_connections;
	if (!out->rdma_timeout_ms)
		out->rdma_timeout_ms = d.rdma_timeout_ms;
	if (!out->busy_poll_us)
		out->busy_poll_us = d.busy_poll_us;
	if (out->busy_poll_us > 1000000)
		out->busy_poll_us = 1000000;
	return 0;
}

int rpcrdma_rpc_stats_out(const struct rpcrdma_stats *all,
			  struct rpcrdma_stats *s, size_t size)
{
	if (!s || size < STATS_MIN_SIZE)
		return RPCRDMA_ERR_INVAL;
	memcpy(s, all, size < sizeof(*all) ? size : sizeof(*all));
	if (size > sizeof(*all))
		memset((unsigned char *)s + sizeof(*all), 0, size - sizeof(*all));
	return 0;
}

uint64_t rpcrdma_rpc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rpcrdma_rpc_now_ms(void)
{
	/* On every call's path: no 64-bit division of the sum. */
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rpcrdma_rpc_trace(const char *fmt, ...)
{
	/* Looked up once; threads may race to do it, to the same value. */
	static atomic_int on = -1;
	va_list ap;

	int v = atomic_load_explicit(&on, memory_order_relaxed);
	if (v < 0) {
		v = getenv("RPCRDMA_DEBUG") != NULL;
		atomic_store_explicit(&on, v, memory_order_relaxed);
	}
	if (!v)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[rpcrdma] ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}
