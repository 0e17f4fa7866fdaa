/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Options and their defaults; the size convention of the public structs
 * that grow (rpcrdma.h, "Binary compatibility"); the engine's monotonic
 * clock; tracing. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_internal.h"
#include "rpcrdma/export.h"

/* ---------------------------------------------------------------------
 * The environment (rpcrdma(7), ENVIRONMENT).  Every variable is parsed
 * strictly: a value that is not one the variable accepts is never
 * replaced by a default behind the user's back.  rpcrdma_opts_init()
 * cannot fail, so it keeps the default of a refused variable; every
 * create call (through rpcrdma_rpc_opts_fill) then fails with
 * RPCRDMA_ERR_CONFIG and one line on stderr naming the variable, its
 * value and what it accepts.  An empty value is the same as unset.
 */
struct env_err {
	char line[256];
	bool set;
};

static void env_refuse(struct env_err *err, const char *name, const char *val,
		       const char *accepted)
{
	if (err->set)
		return; /* the first one is enough to act on */
	err->set = true;
	snprintf(err->line, sizeof err->line,
		 "rpcrdma: %s=%s refused: accepted: %s", name, val, accepted);
}

static const char *env_get(const char *name)
{
	const char *s = getenv(name);
	return s && *s ? s : NULL;
}

/* A decimal number from lo to hi. */
static bool env_uint(const char *name, unsigned long lo, unsigned long hi,
		     const char *accepted, unsigned *out, struct env_err *err)
{
	const char *s = env_get(name);
	if (!s)
		return false;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < lo || v > hi) {
		env_refuse(err, name, s, accepted);
		return false;
	}
	*out = (unsigned)v;
	return true;
}

/* One of the words of choices ("a|b|c"); its index. */
static bool env_choice(const char *name, const char *const *choices,
		       const char *accepted, unsigned *out, struct env_err *err)
{
	const char *s = env_get(name);
	if (!s)
		return false;
	for (unsigned i = 0; choices[i]; i++)
		if (!strcmp(s, choices[i])) {
			*out = i;
			return true;
		}
	env_refuse(err, name, s, accepted);
	return false;
}

/* A number of bytes from lo to hi (hi at most 2^50): decimal with an
 * optional K, M, G or T suffix (KiB ... TiB). */
static bool bytes_value(const char *s, uint64_t lo, uint64_t hi,
			uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	switch (*end) {
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	case 'T': case 't': shift = 40; break;
	default: break;
	}
	if (shift)
		end++;
	/* v checked before the shift, so it cannot overflow. */
	if (*s < '0' || *s > '9' || *end || errno || v > hi >> shift ||
	    ((uint64_t)v << shift) < lo)
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

#define MAX_MSG_MIN 4096u
#define MAX_MSG_MAX (1u << 30)
#define MAX_MSG_ACCEPTED \
	"bytes from 4096 to 1G, decimal, with an optional K or M suffix (KiB, MiB)"

/* RPCRDMA_MAX_MSG: bytes, "4259840", "4M", "512K" (also "1G"). */
static bool env_size(const char *name, uint32_t *out, struct env_err *err)
{
	const char *s = env_get(name);
	uint64_t v;
	if (!s)
		return false;
	if (!bytes_value(s, MAX_MSG_MIN, MAX_MSG_MAX, &v)) {
		env_refuse(err, name, s, MAX_MSG_ACCEPTED);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

#define MAX_MEMORY_ACCEPTED \
	"0 (no budget) or bytes up to 1P, decimal, with an optional K, M, G " \
	"or T suffix (KiB, MiB, GiB, TiB)"

/* RPCRDMA_MAX_MEMORY: bytes, "0", "268435456", "256M", "2G". */
static bool env_bytes(const char *name, uint64_t *out, struct env_err *err)
{
	const char *s = env_get(name);
	if (!s)
		return false;
	if (!bytes_value(s, 0, 1ull << 50, out)) {
		env_refuse(err, name, s, MAX_MEMORY_ACCEPTED);
		return false;
	}
	return true;
}

/* The providers this library was built with, "iwarp or verbs". */
static char provider_names_buf[64];

static void provider_names_make(void)
{
	const struct rpcrdma_provider_ops *const *l = rpcrdma_provider_list();
	size_t o = 0;
	for (size_t i = 0; l[i] && o < sizeof provider_names_buf; i++)
		o += (size_t)snprintf(provider_names_buf + o,
				      sizeof provider_names_buf - o, "%s%s",
				      i == 0 ? "" : l[i + 1] ? ", " : " or ",
				      l[i]->name);
}

static const char *provider_names(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, provider_names_make);
	return provider_names_buf;
}

/* The environment over the defaults in o; the first refusal in err. */
static void env_apply(struct rpcrdma_opts *o, struct env_err *err)
{
	unsigned u;
	const char *p = env_get("RPCRDMA_PROVIDER");
	if (p && !rpcrdma_provider_find(p))
		env_refuse(err, "RPCRDMA_PROVIDER", p, provider_names());
	else if (p)
		o->provider = p;
	const char *d = env_get("RPCRDMA_DEVICE");
	if (d && strlen(d) > 63)
		env_refuse(err, "RPCRDMA_DEVICE", d,
			   "an RDMA device name of at most 63 characters");
	else if (d)
		o->device = d;
	/* Handlers run on the thread that takes the call (libtirpc's way:
	 * no hand-off); RPCRDMA_WORKERS=N gives a pool of N threads to
	 * servers whose handlers block. */
	if (env_uint("RPCRDMA_WORKERS", 0, 1024, "0 to 1024 (handler threads)",
		     &u, err))
		o->workers = u;
	static const char *const bits[] = {"0", "1", NULL};
	if (env_choice("RPCRDMA_MPA_CRC", bits, "0 or 1", &u, err))
		o->mpa_crc = u == 1;
	static const char *const vers[] = {"prefer", "1", "2", NULL};
	static const unsigned vers_val[] = {RPCRDMA_PREFER_V2, RPCRDMA_V1_ONLY,
					    RPCRDMA_V2_ONLY};
	if (env_choice("RPCRDMA_VERSIONS", vers, "1, 2 or prefer", &u, err))
		o->versions = vers_val[u];
	if (env_uint("RPCRDMA_MAX_CONNECTIONS", 0, UINT_MAX,
		     "0 to 4294967295 (0: no limit)", &u, err))
		o->max_connections = u;
	if (env_uint("RPCRDMA_RDMA_TIMEOUT_MS", 1, UINT_MAX,
		     "1 to 4294967295 (milliseconds)", &u, err))
		o->rdma_timeout_ms = u;
	/* Linux's recommended busy-poll time (net.core.busy_read) is the
	 * default; 0 turns it off. */
	if (env_uint("RPCRDMA_BUSY_POLL_US", 0, 1000000,
		     "0 to 1000000 (microseconds; 0: off)", &u, err))
		o->busy_poll_us = u ? (int)u : -1;
	uint32_t m;
	if (env_size("RPCRDMA_MAX_MSG", &m, err))
		o->max_msg = m;
	uint64_t mm;
	if (env_bytes("RPCRDMA_MAX_MEMORY", &mm, err))
		o->max_memory = mm;
	if (env_uint("RPCRDMA_THREADS", 0, RPCRDMA_RPC_MAX_THREADS,
		     "0 to 256 (poll groups, client loops; 0: one per CPU)",
		     &u, err))
		o->threads = u;
	if (env_size("RPCRDMA_READ_WINDOW", &m, err))
		o->read_window = m;
	if (env_uint("RPCRDMA_CREDIT_BUDGET", 0, UINT_MAX,
		     "0 to 4294967295 (credits; 0: no budget)", &u, err))
		o->credit_budget = u;
	if (env_choice("RPCRDMA_DEBUG", bits, "0 or 1", &u, err))
		(void)u; /* read by rpcrdma_rpc_trace */
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

static void opts_defaults(struct rpcrdma_opts *o, struct env_err *err)
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
	o->workers = 0;
	o->remote_inv = true;
	o->versions = RPCRDMA_PREFER_V2;
	o->rdma_timeout_ms = 30000;
	o->busy_poll_us = 50;
	o->read_window = RPC_READ_WINDOW;
	/* The environment, for programs that take the defaults (rpcgen
	 * clients, the examples): RPCRDMA_PROVIDER=verbs runs them on an
	 * RDMA NIC, and so on. */
	env_apply(o, err);
}

/* A program built against an older header passes a smaller size: it gets
 * the defaults of the fields it knows; one built against a newer header
 * gets ours and zeroes in the fields we do not know (it finds size > our
 * sizeof in rpcrdma_rpc_opts_fill and does not set them, or is refused). */
RPCRDMA_EXPORT void rpcrdma_opts_init(struct rpcrdma_opts *o, size_t size)
{
	struct rpcrdma_opts d;
	struct env_err err = {.set = false};

	if (!o || size < sizeof(o->size))
		return;
	opts_defaults(&d, &err);
	memset(o, 0, size);
	memcpy(o, &d, size < sizeof(d) ? size : sizeof(d));
	o->size = size;
}

int rpcrdma_rpc_opts_fill(const struct rpcrdma_opts *in,
			  struct rpcrdma_opts *out)
{
	struct rpcrdma_opts d;
	struct env_err err = {.set = false};

	opts_defaults(&d, &err);
	if (err.set) {
		/* The one line; the caller's create fails with CONFIG. */
		fprintf(stderr, "%s\n", err.line);
		return RPCRDMA_ERR_CONFIG;
	}
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
	if (!out->max_memory)
		out->max_memory = d.max_memory;
	if (!out->threads)
		out->threads = d.threads;
	if (out->threads > RPCRDMA_RPC_MAX_THREADS)
		out->threads = RPCRDMA_RPC_MAX_THREADS;
	if (!out->read_window)
		out->read_window = d.read_window;
	if (!out->credit_budget)
		out->credit_budget = d.credit_budget;
	if (out->read_window < 4096)
		out->read_window = 4096;
	if (out->busy_poll_us > 1000000)
		out->busy_poll_us = 1000000;
	return 0;
}

unsigned rpcrdma_rpc_threads(const struct rpcrdma_opts *o)
{
	if (o->threads)
		return o->threads;
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n < 1)
		n = 1;
	return (unsigned)n > RPCRDMA_RPC_MAX_THREADS ? RPCRDMA_RPC_MAX_THREADS
						     : (unsigned)n;
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

/* One line on stderr: head, then fmt; one write, so that the lines of
 * threads (and of processes sharing the file) do not interleave. */
static void emit(const char *head, const char *fmt, va_list ap)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s", head);
	if (n > 0 && (size_t)n < sizeof line)
		n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line - 1)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, (size_t)n);
	(void)w;
}

void rpcrdma_rpc_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("rpcrdma: ", fmt, ap);
	va_end(ap);
}

void rpcrdma_rpc_trace(const char *fmt, ...)
{
	/* Looked up once; threads may race to do it, to the same value. */
	static atomic_int on = -1;
	va_list ap;

	int v = atomic_load_explicit(&on, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("RPCRDMA_DEBUG");
		v = e && !strcmp(e, "1");
		atomic_store_explicit(&on, v, memory_order_relaxed);
	}
	if (!v)
		return;
	/* A log line: who, when (wall clock, to line up with other logs),
	 * what. */
	char head[64];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	snprintf(head, sizeof head, "rpcrdma[%ld] %02d:%02d:%02d.%06ld ",
		 (long)getpid(), tm.tm_hour, tm.tm_min, tm.tm_sec,
		 ts.tv_nsec / 1000);
	va_start(ap, fmt);
	emit(head, fmt, ap);
	va_end(ap);
}
