/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma-perf soak: a server process and several client processes making
 * calls with unique payloads for a while, through real faults, and an
 * account of every call.
 *
 *   rpcrdma-perf soak [--seconds N] [--clients N] [--depth N]
 *                     [--max-retries N] [--timeout-ms N] [--kill-every N]
 *                     [--stop-every N] [--port N] [--seed N] [--keep]
 *
 * The faults: the server is killed with SIGKILL and started again on the
 * same port (the clients reconnect and resend, max_retries); it is
 * stopped with SIGSTOP for longer than the call time-out, then continued;
 * half the clients go through a TCP proxy of our own (soak_proxy.c) that
 * delays, stalls, splits and resets their connections; some clients close
 * their connection and open a new one every few hundred calls.
 *
 * Each call carries a unique id (client, sequence) and data whose CRC the
 * server returns with a pattern derived from the id, inline, in a Write
 * chunk or through a Reply chunk; the client checks both.  The server logs
 * every execution (id, XID, life) with write(2), which survives SIGKILL,
 * and answers a call it has already executed in this life from a reply
 * cache keyed on XID and the arguments' CRC (as rpcrdma-nfs3d's
 * duplicate-request cache does), so a call resent after a lost connection
 * runs at most once per server life.  A SIGKILL loses that cache: a call
 * whose reply died with the server runs again in the next life.
 *
 * Counted: calls issued, completed once with the right data, failed with
 * an error (by error), completed with wrong data, completed twice, never
 * completed (still outstanding a minute after the end: must be 0); calls
 * executed twice in one server life (must be 0) and across a restart
 * (reported); the server's resident memory after warm-up, its peak and
 * after the clients left, per life.  Exit status 1 when a count that must
 * be 0 is not.
 *
 * Internal roles (the same binary): soak --role server|client.
 * SOAK_DEBUG=1 makes a client print every reply it finds wrong.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "rpcrdma/rpcrdma.h"
#include "soak.h"
#include "wire/crc32c.h"
#include "wire/xdr.h"

#define SOAK_PROG 0x20000270u
#define SOAK_VERS 1u
#define SOAK_WRITE 1u
#define MAGIC 0x50414b53u /* "SOAK" */
#define ARGS_HDR 24u      /* magic, client, seq hi/lo, want, len */
#define RES_HDR 24u       /* magic, client, seq hi/lo, crc, n */
#define MAX_DATA (256u << 10)
#define MAX_WANT (128u << 10)

static const char *opt_val(int argc, char **argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return NULL;
}

static long opt_num(int argc, char **argv, const char *name, long dflt)
{
	const char *v = opt_val(argc, argv, name);
	return v ? strtol(v, NULL, 0) : dflt;
}

static bool opt_flag(int argc, char **argv, const char *name)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

/* The reply pattern of call id: what the server puts in its results. */
static void pattern(uint8_t *p, size_t n, uint64_t id)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		p[i] = (uint8_t)(x >> (8 * (i & 7)));
	}
}

static uint32_t crc(const void *p, size_t n)
{
	return rpcrdma_crc32c_final(
		rpcrdma_crc32c_update(rpcrdma_crc32c_init(), p, n));
}

/* =====================================================================
 * Server role
 */
struct drc_ent {
	uint32_t xid, args_crc;
	uint64_t id;
	uint32_t data_crc, want;
	bool used;
};

#define DRC_BITS 18
#define DRC_SIZE (1u << DRC_BITS)
static struct drc_ent *drc;
static uint32_t drc_ring[DRC_SIZE / 2];
static uint32_t drc_head, drc_count;
static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static uint32_t life;
static uint64_t n_exec, n_drc_hits, n_garbage;

static uint32_t drc_slot(uint32_t xid, uint32_t args_crc)
{
	uint32_t h = (xid * 2654435761u) ^ (args_crc * 40503u);
	return h & (DRC_SIZE - 1);
}

/* Open addressing; the oldest entry goes when half full (the ring of
 * what was put). */
static struct drc_ent *drc_find(uint32_t xid, uint32_t args_crc)
{
	for (uint32_t i = drc_slot(xid, args_crc), k = 0; k < DRC_SIZE;
	     i = (i + 1) & (DRC_SIZE - 1), k++) {
		struct drc_ent *e = &drc[i];
		if (!e->used)
			return NULL;
		if (e->xid == xid && e->args_crc == args_crc)
			return e;
	}
	return NULL;
}

static void drc_remove(uint32_t at)
{
	/* Backward-shift deletion keeps probe chains whole. */
	uint32_t i = at;
	drc[i].used = false;
	for (uint32_t j = (i + 1) & (DRC_SIZE - 1); drc[j].used;
	     j = (j + 1) & (DRC_SIZE - 1)) {
		uint32_t home = drc_slot(drc[j].xid, drc[j].args_crc);
		bool move = i <= j ? (home <= i || home > j) : (home <= i && home > j);
		if (move) {
			drc[i] = drc[j];
			drc[j].used = false;
			for (uint32_t r = 0; r < drc_count; r++)
				if (drc_ring[(drc_head + r) % (DRC_SIZE / 2)] == j)
					drc_ring[(drc_head + r) % (DRC_SIZE / 2)] = i;
			i = j;
		}
	}
}

static void drc_put(const struct drc_ent *v)
{
	if (drc_count == DRC_SIZE / 2) {
		drc_remove(drc_ring[drc_head]);
		drc_head = (drc_head + 1) % (DRC_SIZE / 2);
		drc_count--;
	}
	uint32_t i = drc_slot(v->xid, v->args_crc);
	while (drc[i].used)
		i = (i + 1) & (DRC_SIZE - 1);
	drc[i] = *v;
	drc[i].used = true;
	drc_ring[(drc_head + drc_count++) % (DRC_SIZE / 2)] = i;
}

static enum rpcrdma_svc_stat h_write(struct rpcrdma_svc_req *r, void *a)
{
	(void)a;
	size_t len;
	const uint8_t *p = rpcrdma_svc_req_args(r, &len);
	if (len < ARGS_HDR || rpcrdma_be32_get(p) != MAGIC ||
	    rpcrdma_be32_get(p + 20) > len - ARGS_HDR ||
	    rpcrdma_be32_get(p + 16) > MAX_WANT) {
		__atomic_fetch_add(&n_garbage, 1, __ATOMIC_RELAXED);
		return RPCRDMA_SVC_GARBAGE_ARGS;
	}
	uint32_t client = rpcrdma_be32_get(p + 4);
	uint64_t id = (uint64_t)rpcrdma_be32_get(p + 8) << 32 |
		      rpcrdma_be32_get(p + 12);
	uint32_t want = rpcrdma_be32_get(p + 16);
	uint32_t dlen = rpcrdma_be32_get(p + 20);
	uint32_t xid = rpcrdma_svc_req_xid(r);
	uint32_t acrc = crc(p, len);
	struct drc_ent v = {xid, acrc, id, crc(p + ARGS_HDR, dlen), want, true};
	pthread_mutex_lock(&srv_lock);
	const struct drc_ent *hit = drc_find(xid, acrc);
	if (hit) {
		/* Executed in this life already: the cached results. */
		v = *hit;
		n_drc_hits++;
	} else {
		drc_put(&v);
		n_exec++;
		uint32_t rec[4] = {(uint32_t)(id >> 32), (uint32_t)id, xid, life};
		if (write(log_fd, rec, sizeof rec) != (ssize_t)sizeof rec) {
			/* a lost record shows as a call never executed */
		}
	}
	pthread_mutex_unlock(&srv_lock);
	uint8_t *out = rpcrdma_svc_req_alloc(r, RES_HDR + v.want);
	if (!out)
		return RPCRDMA_SVC_SYSTEM_ERR;
	rpcrdma_be32_put(out, MAGIC);
	rpcrdma_be32_put(out + 4, client);
	rpcrdma_be32_put(out + 8, (uint32_t)(v.id >> 32));
	rpcrdma_be32_put(out + 12, (uint32_t)v.id);
	rpcrdma_be32_put(out + 16, v.data_crc);
	rpcrdma_be32_put(out + 20, v.want);
	pattern(out + RES_HDR, v.want, v.id);
	/* The pattern is opaque<>: DDP-eligible (a Write chunk when the
	 * client offered one, else inline or a Long Reply). */
	struct rpcrdma_iov res[2] = {{out, RES_HDR, false},
				     {out + RES_HDR, v.want, true}};
	return rpcrdma_svc_req_reply(r, res, 2) ? RPCRDMA_SVC_SYSTEM_ERR
						: RPCRDMA_SVC_OK;
}

static volatile sig_atomic_t srv_stop;

static void on_term(int sig)
{
	(void)sig;
	srv_stop = 1;
}

static int role_server(int argc, char **argv)
{
	const char *listen = opt_val(argc, argv, "--listen");
	const char *logp = opt_val(argc, argv, "--log");
	life = (uint32_t)opt_num(argc, argv, "--life", 1);
	if (!listen || !logp)
		return 2;
	drc = calloc(DRC_SIZE, sizeof(*drc));
	log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (!drc || log_fd < 0) {
		perror("soak server");
		return 1;
	}
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	struct rpcrdma_svc *s = NULL;
	int rc;
	/* The old life's port may still be held for a moment. */
	for (int i = 0; i < 200; i++) {
		rc = rpcrdma_svc_create(listen, &o, &s);
		if (rc != RPCRDMA_ERR_BUSY)
			break;
		usleep(50000);
	}
	if (rc) {
		fprintf(stderr, "soak server: %s: %s\n", listen, rpcrdma_strerror(rc));
		return 1;
	}
	rc = rpcrdma_svc_register(s, SOAK_PROG, SOAK_VERS, SOAK_WRITE, h_write,
				  NULL, RPCRDMA_ULB_DDP_RESULT);
	if (rc) {
		fprintf(stderr, "soak server: register: %s\n", rpcrdma_strerror(rc));
		return 1;
	}
	signal(SIGTERM, on_term);
	printf("listening\n");
	fflush(stdout);
	while (!srv_stop)
		pause();
	rpcrdma_svc_destroy(s);
	pthread_mutex_lock(&srv_lock);
	printf("SOAK-SERVER life %u executed %llu cache %llu garbage %llu", life,
	       (unsigned long long)n_exec, (unsigned long long)n_drc_hits,
	       (unsigned long long)n_garbage);
	pthread_mutex_unlock(&srv_lock);
	close(log_fd);
	free(drc);
	return 0;
}

/* =====================================================================
 * Client role
 */
enum outcome { O_OK, O_WRONG, O_ERR };

struct slot {
	atomic_int state;     /* 0 free, 1 in flight, 3 completing, 2 done */
	uint64_t id;
	uint32_t data_crc, want;
	bool ddp_result;
	uint8_t *args;        /* header + data */
	size_t args_len, data_len;
};

struct client {
	unsigned id;
	struct rpcrdma_clnt *c;
	struct slot *slots;
	unsigned depth;
	atomic_uint inflight;
	atomic_ullong issued, ok, wrong, failed, twice;
	atomic_ullong err_timeout, err_disconnected, err_cancelled, err_other;
	atomic_ullong bytes;
	int last_err;
	uint64_t rng;
};

static uint32_t crnd(struct client *cl)
{
	cl->rng ^= cl->rng << 13;
	cl->rng ^= cl->rng >> 7;
	cl->rng ^= cl->rng << 17;
	return (uint32_t)(cl->rng >> 16);
}

struct cb_arg {
	struct client *cl;
	struct slot *s;
};
static struct cb_arg *cb_args;

static void done_cb(void *arg, struct rpcrdma_reply *rep)
{
	struct cb_arg *a = arg;
	struct client *cl = a->cl;
	struct slot *s = a->s;
	/* 1 -> 3 (being completed) -> 2 (done: the slot may be reused). */
	int expect = 1;
	if (!atomic_compare_exchange_strong(&s->state, &expect, 3)) {
		atomic_fetch_add(&cl->twice, 1); /* a second completion */
		rpcrdma_reply_free(rep);
		return;
	}
	if (rep->status) {
		atomic_fetch_add(&cl->failed, 1);
		if (rep->status == RPCRDMA_ERR_TIMEOUT)
			atomic_fetch_add(&cl->err_timeout, 1);
		else if (rep->status == RPCRDMA_ERR_DISCONNECTED)
			atomic_fetch_add(&cl->err_disconnected, 1);
		else if (rep->status == RPCRDMA_ERR_CANCELLED)
			atomic_fetch_add(&cl->err_cancelled, 1);
		else {
			atomic_fetch_add(&cl->err_other, 1);
			cl->last_err = rep->status;
		}
	} else {
		/* The results: the header inline, the pattern inline (in
		 * the data after it) or in the Write chunk. */
		bool good = rep->len >= RES_HDR &&
			    rpcrdma_be32_get(rep->data) == MAGIC &&
			    rpcrdma_be32_get(rep->data + 4) == cl->id &&
			    ((uint64_t)rpcrdma_be32_get(rep->data + 8) << 32 |
			     rpcrdma_be32_get(rep->data + 12)) == s->id &&
			    rpcrdma_be32_get(rep->data + 16) == s->data_crc &&
			    rpcrdma_be32_get(rep->data + 20) == s->want;
		const uint8_t *pat = NULL;
		size_t plen = 0;
		if (good && rep->nddp && rep->ddp_len[0]) {
			pat = rep->ddp[0];
			plen = rep->ddp_len[0];
		} else if (good) {
			/* Inline: the opaque<>'s body after its length (the
			 * header's last word), padded to 4. */
			if (rep->len == RES_HDR + s->want + ((4 - (s->want & 3)) & 3)) {
				pat = rep->data + RES_HDR;
				plen = s->want;
			} else {
				good = false;
			}
		}
		if (good && plen != s->want)
			good = false;
		if (good && plen) {
			uint8_t *want = malloc(plen);
			if (want) {
				pattern(want, plen, s->id);
				good = !memcmp(want, pat, plen);
				free(want);
			}
		}
		if (!good && getenv("SOAK_DEBUG"))
			fprintf(stderr, "client %u id %llx: len %zu nddp %u ddp0 %zu "
				"want %u words %x %x %x %x %x %x %x crc %x\n", cl->id,
				(unsigned long long)s->id, rep->len, rep->nddp,
				rep->nddp ? rep->ddp_len[0] : 0, s->want,
				rep->len >= 4 ? rpcrdma_be32_get(rep->data) : 0,
				rep->len >= 8 ? rpcrdma_be32_get(rep->data + 4) : 0,
				rep->len >= 12 ? rpcrdma_be32_get(rep->data + 8) : 0,
				rep->len >= 16 ? rpcrdma_be32_get(rep->data + 12) : 0,
				rep->len >= 20 ? rpcrdma_be32_get(rep->data + 16) : 0,
				rep->len >= 24 ? rpcrdma_be32_get(rep->data + 20) : 0,
				rep->len >= 28 ? rpcrdma_be32_get(rep->data + 24) : 0,
				s->data_crc);
		atomic_fetch_add(good ? &cl->ok : &cl->wrong, 1);
		atomic_fetch_add(&cl->bytes, s->data_len + s->want);
	}
	rpcrdma_reply_free(rep);
	atomic_store(&s->state, 2);
	atomic_fetch_sub(&cl->inflight, 1);
}

/* A new call in slot i: sizes from a mix that crosses every shape
 * (Short, Chunked by a DDP argument, Long Call, inline results, Write
 * chunk, Long Reply). */
static int issue(struct client *cl, unsigned i, uint64_t seq)
{
	struct slot *s = &cl->slots[i];
	uint32_t r = crnd(cl) % 100;
	uint32_t dlen, want;
	bool ddp_arg = false, ddp_res = false;
	if (r < 55) {
		dlen = crnd(cl) % 512;
		want = crnd(cl) % 512;
	} else if (r < 80) {
		dlen = 2000 + crnd(cl) % 30000;
		want = crnd(cl) % 3000;
		ddp_arg = crnd(cl) & 1;
	} else if (r < 95) {
		dlen = crnd(cl) % 2000;
		want = 4000 + crnd(cl) % 60000;
		ddp_res = crnd(cl) & 1;
	} else {
		dlen = 64000 + crnd(cl) % (MAX_DATA - 64000);
		want = 16000 + crnd(cl) % (MAX_WANT - 16000);
		ddp_arg = ddp_res = true;
	}
	size_t pad = (4 - (dlen & 3)) & 3;
	s->args = malloc(ARGS_HDR + dlen + pad + 1);
	if (!s->args)
		return RPCRDMA_ERR_NOMEM;
	s->id = (uint64_t)cl->id << 40 | seq;
	uint8_t *p = s->args;
	rpcrdma_be32_put(p, MAGIC);
	rpcrdma_be32_put(p + 4, cl->id);
	rpcrdma_be32_put(p + 8, (uint32_t)(s->id >> 32));
	rpcrdma_be32_put(p + 12, (uint32_t)s->id);
	rpcrdma_be32_put(p + 16, want);
	rpcrdma_be32_put(p + 20, dlen);
	for (uint32_t k = 0; k < dlen; k++)
		p[ARGS_HDR + k] = (uint8_t)(crnd(cl) ^ seq);
	memset(p + ARGS_HDR + dlen, 0, pad);
	s->data_crc = crc(p + ARGS_HDR, dlen);
	s->want = want;
	s->data_len = dlen;
	s->ddp_result = ddp_res;
	/* The data is the opaque's body: DDP-eligible when asked (its
	 * length word belongs to the header piece). */
	struct rpcrdma_iov iov[3];
	unsigned n = 0;
	iov[n++] = (struct rpcrdma_iov){p, ARGS_HDR, false};
	if (dlen)
		iov[n++] = (struct rpcrdma_iov){p + ARGS_HDR, ddp_arg ? dlen : dlen + pad,
						ddp_arg};
	size_t dmax = want;
	struct rpcrdma_call call = {.proc = SOAK_WRITE, .args = iov, .nargs = n};
	if (ddp_res) {
		call.ddp_result_max = &dmax;
		call.nddp_results = 1;
		call.reply_max = RES_HDR;
	} else if (crnd(cl) % 4 == 0) {
		call.reply_max = RPCRDMA_REPLY_ANY;
	} else {
		call.reply_max = RES_HDR + want + 4;
	}
	atomic_store(&s->state, 1);
	atomic_fetch_add(&cl->inflight, 1);
	atomic_fetch_add(&cl->issued, 1);
	cb_args[i] = (struct cb_arg){cl, s};
	int rc = rpcrdma_clnt_call_async(cl->c, &call, done_cb, &cb_args[i]);
	/* The library copied the arguments. */
	free(s->args);
	s->args = NULL;
	if (rc) {
		/* Not started: the callback will not run; an error outcome. */
		atomic_store(&s->state, 2);
		atomic_fetch_sub(&cl->inflight, 1);
		atomic_fetch_add(&cl->failed, 1);
		if (rc == RPCRDMA_ERR_DISCONNECTED)
			atomic_fetch_add(&cl->err_disconnected, 1);
		else
			atomic_fetch_add(&cl->err_other, 1);
	}
	return rc;
}

static int connect_client(struct client *cl, const char *addr,
			  const struct rpcrdma_opts *o, uint64_t deadline)
{
	while (perf_now_ns() < deadline) {
		int rc = rpcrdma_clnt_create(addr, SOAK_PROG, SOAK_VERS, o, &cl->c);
		if (rc == 0)
			return 0;
		usleep(100000); /* the server is down or restarting */
	}
	return -1;
}

static bool wait_idle(struct client *cl, uint64_t deadline)
{
	while (atomic_load(&cl->inflight) && perf_now_ns() < deadline)
		usleep(10000);
	return atomic_load(&cl->inflight) == 0;
}

static int role_client(int argc, char **argv)
{
	const char *addr = opt_val(argc, argv, "--addr");
	if (!addr)
		return 2;
	struct client cl;
	memset(&cl, 0, sizeof cl);
	cl.id = (unsigned)opt_num(argc, argv, "--id", 0);
	cl.depth = (unsigned)opt_num(argc, argv, "--depth", 8);
	long secs = opt_num(argc, argv, "--seconds", 60);
	long churn = opt_num(argc, argv, "--churn", 0);
	cl.rng = (uint64_t)opt_num(argc, argv, "--seed", 1) * 0x100000001b3ull +
		 cl.id + 1;
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.max_retries = (unsigned)opt_num(argc, argv, "--max-retries", 10);
	o.call_timeout_ms = (unsigned)opt_num(argc, argv, "--timeout-ms", 3000);
	cl.slots = calloc(cl.depth, sizeof(*cl.slots));
	cb_args = calloc(cl.depth, sizeof(*cb_args));
	if (!cl.slots || !cb_args)
		return 1;
	uint64_t end = perf_now_ns() + (uint64_t)secs * 1000000000u;
	uint64_t seq = 0, conns = 0, since = 0;
	bool never_up = false;
	while (perf_now_ns() < end) {
		if (!cl.c) {
			if (connect_client(&cl, addr, &o, end)) {
				never_up = conns == 0;
				break;
			}
			conns++;
			since = 0;
		}
		bool started = false, gone = false;
		for (unsigned i = 0; i < cl.depth && !gone; i++) {
			int st = atomic_load(&cl.slots[i].state);
			if (st == 1 || st == 3)
				continue;
			/* The client gave up reconnecting (max_retries
			 * attempts failed in a row): a new one. */
			gone = issue(&cl, i, ++seq) == RPCRDMA_ERR_DISCONNECTED;
			since++;
			started = true;
		}
		if (!started)
			usleep(1000);
		/* Open and close connections all along: drain, destroy, new. */
		if (gone || (churn && since >= (uint64_t)churn)) {
			wait_idle(&cl, perf_now_ns() + 60000000000ull);
			if (atomic_load(&cl.inflight) == 0) {
				rpcrdma_clnt_destroy(cl.c);
				cl.c = NULL;
			}
		}
	}
	/* Everything issued must complete: a minute past the last call's
	 * time-out and retries is "never". */
	wait_idle(&cl, perf_now_ns() + 60000000000ull);
	unsigned long long never = atomic_load(&cl.inflight);
	struct rpcrdma_stats st;
	memset(&st, 0, sizeof st);
	if (cl.c) {
		rpcrdma_clnt_stats(cl.c, &st);
		/* Never-completed calls get CANCELLED here; they stay counted
		 * as never completed. */
		rpcrdma_clnt_destroy(cl.c);
	}
	printf("SOAK-CLIENT %u issued %llu ok %llu failed %llu never %llu "
	       "twice %llu wrong %llu timeout %llu disconnected %llu "
	       "cancelled %llu other %llu connections %llu reconnects %llu "
	       "retransmissions %llu bytes %llu last_err %d up %d\n",
	       cl.id, (unsigned long long)atomic_load(&cl.issued),
	       (unsigned long long)atomic_load(&cl.ok),
	       (unsigned long long)atomic_load(&cl.failed), never,
	       (unsigned long long)atomic_load(&cl.twice),
	       (unsigned long long)atomic_load(&cl.wrong),
	       (unsigned long long)atomic_load(&cl.err_timeout),
	       (unsigned long long)atomic_load(&cl.err_disconnected),
	       (unsigned long long)atomic_load(&cl.err_cancelled),
	       (unsigned long long)atomic_load(&cl.err_other),
	       (unsigned long long)conns, (unsigned long long)st.reconnects,
	       (unsigned long long)st.retransmissions,
	       (unsigned long long)atomic_load(&cl.bytes), cl.last_err,
	       !never_up);
	fflush(stdout);
	for (unsigned i = 0; i < cl.depth; i++)
		free(cl.slots[i].args);
	free(cl.slots);
	free(cb_args);
	return 0;
}

/* =====================================================================
 * The conductor
 */
struct life_mem {
	uint32_t life;
	double start_s;       /* how long the life lasted */
	long warm_kb, peak_kb, last_kb;
	double secs;
};

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	uint16_t port = 0;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* fork + exec ourselves in a role; stdout into *out_fd when asked. */
static pid_t spawn(char *const args[], int *out_fd)
{
	int pfd[2] = {-1, -1};
	if (out_fd && pipe2(pfd, O_CLOEXEC))
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* No orphan: the child goes when the conductor does (a
		 * time-out killing it, say). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		if (out_fd)
			dup2(pfd[1], 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	if (out_fd) {
		close(pfd[1]);
		*out_fd = pfd[0];
	}
	return pid;
}

/* Signals one child of ours: never a pid <= 0 (kill(-1, ...) would
 * reach every process we may signal). */
static void signal_child(pid_t pid, int sig)
{
	if (pid > 0)
		kill(pid, sig);
}

static void reap_child(pid_t pid)
{
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static pid_t start_server(const char *dir, uint16_t port, uint32_t n,
			  int *out_fd)
{
	char listen[64], logp[512], lifes[16];
	snprintf(listen, sizeof listen, "127.0.0.1:%u", port);
	snprintf(logp, sizeof logp, "%s/exec.log", dir);
	snprintf(lifes, sizeof lifes, "%u", n);
	char *args[] = {"rpcrdma-perf", "soak", "--role", "server", "--listen",
			listen, "--log", logp, "--life", lifes, NULL};
	pid_t pid = spawn(args, out_fd);
	/* Wait for "listening" (or its death). */
	char buf[64];
	ssize_t r = pid > 0 ? read(*out_fd, buf, sizeof buf - 1) : -1;
	if (r <= 0) {
		signal_child(pid, SIGKILL);
		reap_child(pid);
		return -1;
	}
	return pid;
}

static int cmp_rec(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;
	for (int i = 0; i < 4; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

struct totals {
	unsigned long long issued, ok, failed, never, twice, wrong, timeout,
		disconnected, cancelled, other, connections, reconnects,
		retransmissions, bytes;
};

static void sleep_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Nanoseconds until the next fault: uniform in [mean / 2, 3 mean / 2]. */
static uint64_t next_delay(uint64_t *rng, long mean_s)
{
	*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
	uint64_t ms = (uint64_t)mean_s * 500u +
		      (*rng >> 33) % ((uint64_t)mean_s * 1000u + 1);
	return ms * 1000000u;
}

static int conductor(int argc, char **argv)
{
	long secs = opt_num(argc, argv, "--seconds", 120);
	long nclients = opt_num(argc, argv, "--clients", 4);
	long depth = opt_num(argc, argv, "--depth", 8);
	long retries = opt_num(argc, argv, "--max-retries", 10);
	long tmo = opt_num(argc, argv, "--timeout-ms", 3000);
	long kill_every = opt_num(argc, argv, "--kill-every", 20);
	long stop_every = opt_num(argc, argv, "--stop-every", 25);
	long churn = opt_num(argc, argv, "--churn", 300);
	uint32_t seed = (uint32_t)opt_num(argc, argv, "--seed", 1);
	uint16_t port = (uint16_t)opt_num(argc, argv, "--port", 0);
	bool keep = opt_flag(argc, argv, "--keep");
	if (nclients < 1 || nclients > 64 || depth < 1 || secs < 1)
		return 2;
	if (!port)
		port = free_port();
	uint16_t pport = free_port();
	char dir[] = "/tmp/rpcrdma-soak.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("soak: mkdtemp");
		return 1;
	}
#if defined(__SANITIZE_ADDRESS__)
	/* ASan's quarantine would show as growth: keep it small in the
	 * children whose memory is measured. */
	setenv("ASAN_OPTIONS", "quarantine_size_mb=8:detect_leaks=0", 0);
#endif
	signal(SIGPIPE, SIG_IGN);
	printf("soak: %ld s, %ld clients (depth %ld, max_retries %ld, time-out "
	       "%ld ms, every other one through the proxy, every other one "
	       "reconnecting every %ld calls), server SIGKILL every ~%ld s, "
	       "SIGSTOP every ~%ld s; port %u, proxy %u, logs %s\n", secs,
	       nclients, depth, retries, tmo, churn, kill_every, stop_every,
	       port, pport, dir);
	fflush(stdout);

	uint32_t nlife = 1;
	int sfd = -1;
	pid_t server = start_server(dir, port, nlife, &sfd);
	if (server <= 0) {
		fprintf(stderr, "soak: the server did not start\n");
		return 1;
	}
	struct soak_proxy_cfg pc = {
		.listen_port = pport, .upstream_port = port, .delay_max_ms = 3,
		.stall_every_ms = 2000, .stall_max_ms = 1500, .split_pct = 20,
		.reset_every_ms = 4000, .seed = seed,
	};
	struct soak_proxy *proxy = NULL;
	if (soak_proxy_start(&pc, &proxy)) {
		perror("soak: proxy");
		signal_child(server, SIGKILL);
		reap_child(server);
		return 1;
	}
	pid_t *cpid = calloc((size_t)nclients, sizeof(*cpid));
	int *cfd = calloc((size_t)nclients, sizeof(*cfd));
	for (long i = 0; i < nclients; i++) {
		char a[64], id[24], s[24], d[24], r[24], t[24], ch[24], sd[24];
		snprintf(a, sizeof a, "127.0.0.1:%u", i % 2 ? pport : port);
		snprintf(id, sizeof id, "%ld", i);
		snprintf(s, sizeof s, "%ld", secs);
		snprintf(d, sizeof d, "%ld", depth);
		snprintf(r, sizeof r, "%ld", retries);
		snprintf(t, sizeof t, "%ld", tmo);
		snprintf(ch, sizeof ch, "%ld", (i / 2) % 2 ? churn : 0);
		snprintf(sd, sizeof sd, "%u", seed);
		char *args[] = {"rpcrdma-perf", "soak", "--role", "client",
				"--addr", a, "--id", id, "--seconds", s,
				"--depth", d, "--max-retries", r, "--timeout-ms",
				t, "--churn", ch, "--seed", sd, NULL};
		cpid[i] = spawn(args, &cfd[i]);
	}

	/* Faults until the end; the server's memory sampled meanwhile. */
	uint64_t t0 = perf_now_ns(), life_t0 = t0;
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 7;
#define NEXT(mean) next_delay(&rng, (mean))
	uint64_t next_kill = t0 + NEXT(kill_every);
	uint64_t next_stop = t0 + NEXT(stop_every);
	struct life_mem mem[4096];
	unsigned nmem = 0;
	mem[0] = (struct life_mem){1, 0, -1, 0, 0, 0};
	unsigned kills = 0, stops = 0;
	uint64_t end = t0 + (uint64_t)secs * 1000000000u;
	while (perf_now_ns() < end) {
		sleep_ms(250);
		uint64_t now = perf_now_ns();
		long kb = server > 0 ? rss_kb(server) : -1;
		struct life_mem *m = &mem[nmem];
		double in_life = (double)(now - life_t0) / 1e9;
		if (kb > 0) {
			/* Start: 10 s in, the clients back (reconnected,
			 * with back-off) and the server's buffers in use. */
			if (m->warm_kb < 0 && in_life >= 10)
				m->warm_kb = kb;
			if (kb > m->peak_kb)
				m->peak_kb = kb;
			m->last_kb = kb;
			m->secs = in_life;
		}
		if (kill_every && now >= next_kill && now + 3000000000ull < end) {
			signal_child(server, SIGKILL);
			reap_child(server);
			close(sfd);
			kills++;
			/* The proxy's connections die with the server. */
			soak_proxy_reset_all(proxy);
			sleep_ms((unsigned)(rng % 800));
			nlife++;
			server = start_server(dir, port, nlife, &sfd);
			if (server <= 0) {
				fprintf(stderr, "soak: the server did not restart\n");
				break;
			}
			life_t0 = perf_now_ns();
			if (nmem + 1 < sizeof mem / sizeof mem[0])
				nmem++;
			mem[nmem] = (struct life_mem){nlife, 0, -1, 0, 0, 0};
			next_kill = life_t0 + NEXT(kill_every);
		}
		if (stop_every && now >= next_stop && now + 3000000000ull < end) {
			signal_child(server, SIGSTOP);
			stops++;
			sleep_ms((unsigned)tmo + 1500);
			signal_child(server, SIGCONT);
			next_stop = perf_now_ns() + NEXT(stop_every);
		}
	}

	/* The clients finish their calls and report. */
	struct totals tot;
	memset(&tot, 0, sizeof tot);
	unsigned reported = 0;
	for (long i = 0; i < nclients; i++) {
		char line[1024];
		FILE *f = fdopen(cfd[i], "r");
		while (f && fgets(line, sizeof line, f)) {
			unsigned id;
			struct totals t;
			int lerr, up;
			if (sscanf(line,
				   "SOAK-CLIENT %u issued %llu ok %llu failed %llu "
				   "never %llu twice %llu wrong %llu timeout %llu "
				   "disconnected %llu cancelled %llu other %llu "
				   "connections %llu reconnects %llu retransmissions "
				   "%llu bytes %llu last_err %d up %d",
				   &id, &t.issued, &t.ok, &t.failed, &t.never, &t.twice,
				   &t.wrong, &t.timeout, &t.disconnected, &t.cancelled,
				   &t.other, &t.connections, &t.reconnects,
				   &t.retransmissions, &t.bytes, &lerr, &up) != 17)
				continue;
			reported++;
			tot.issued += t.issued;
			tot.ok += t.ok;
			tot.failed += t.failed;
			tot.never += t.never;
			tot.twice += t.twice;
			tot.wrong += t.wrong;
			tot.timeout += t.timeout;
			tot.disconnected += t.disconnected;
			tot.cancelled += t.cancelled;
			tot.other += t.other;
			tot.connections += t.connections;
			tot.reconnects += t.reconnects;
			tot.retransmissions += t.retransmissions;
			tot.bytes += t.bytes;
			if (t.other)
				printf("  client %u: last other error %d (%s)\n", id,
				       lerr, rpcrdma_strerror(lerr));
		}
		if (f)
			fclose(f);
		reap_child(cpid[i]);
	}
	/* The server with no client left: its memory "after". */
	sleep_ms(2000);
	long after_kb = server > 0 ? rss_kb(server) : -1;
	signal_child(server, SIGTERM);
	char sline[256] = "";
	FILE *sf = fdopen(sfd, "r");
	while (sf && fgets(sline, sizeof sline, sf) &&
	       strncmp(sline, "SOAK-SERVER", 11))
		;
	if (sf)
		fclose(sf);
	reap_child(server);
	struct soak_proxy_stats ps;
	soak_proxy_stats(proxy, &ps);
	soak_proxy_stop(proxy);

	/* Executions: (id, xid, life) records, sorted. */
	char logp[600];
	snprintf(logp, sizeof logp, "%s/exec.log", dir);
	FILE *lf = fopen(logp, "rb");
	struct stat sb;
	size_t nrec = lf && !fstat(fileno(lf), &sb) ? (size_t)sb.st_size / 16 : 0;
	uint32_t (*rec)[4] = nrec ? malloc(nrec * 16) : NULL;
	if (rec && fread(rec, 16, nrec, lf) != nrec)
		nrec = 0;
	if (lf)
		fclose(lf);
	unsigned long long twice_life = 0, twice_restart = 0, executed = 0;
	if (rec) {
		/* Sort by id, then life: equal ids are neighbours. */
		for (size_t i = 0; i < nrec; i++) {
			uint32_t x = rec[i][2];
			rec[i][2] = rec[i][3];
			rec[i][3] = x; /* id hi, id lo, life, xid */
		}
		qsort(rec, nrec, 16, cmp_rec);
		for (size_t i = 0; i < nrec; i++) {
			bool same_id = i && rec[i][0] == rec[i - 1][0] &&
				       rec[i][1] == rec[i - 1][1];
			if (!same_id) {
				executed++;
				continue;
			}
			if (rec[i][2] == rec[i - 1][2])
				twice_life++;
			else
				twice_restart++;
		}
	}
	free(rec);

	printf("\nclients reported: %u of %ld\n", reported, nclients);
	printf("calls issued            %12llu\n", tot.issued);
	printf("  completed once, right %12llu\n", tot.ok);
	printf("  failed with an error  %12llu  (time-out %llu, disconnected %llu, "
	       "cancelled %llu, other %llu)\n", tot.failed, tot.timeout,
	       tot.disconnected, tot.cancelled, tot.other);
	printf("  completed, wrong data %12llu  (must be 0)\n", tot.wrong);
	printf("  completed twice       %12llu  (must be 0)\n", tot.twice);
	printf("  never completed       %12llu  (must be 0)\n", tot.never);
	bool accounted = tot.ok + tot.failed + tot.wrong + tot.never == tot.issued;
	printf("  accounted             %12s\n", accounted ? "yes" : "NO");
	printf("server: calls executed  %12llu  (distinct ids; %s)\n", executed,
	       sline[0] ? sline : "last life's counters lost");
	printf("  executed twice, same life     %6llu  (must be 0: reply cache)\n",
	       twice_life);
	printf("  executed twice, across SIGKILL %5llu  (no reply cache survives "
	       "a restart)\n", twice_restart);
	printf("faults: %u SIGKILL + restart, %u SIGSTOP of %ld ms; proxy: %llu "
	       "connections, %llu resets, %llu stalls, %llu split writes, %llu "
	       "refused (server down)\n", kills, stops, tmo + 1500,
	       (unsigned long long)ps.accepted, (unsigned long long)ps.resets,
	       (unsigned long long)ps.stalls, (unsigned long long)ps.split_writes,
	       (unsigned long long)ps.upstream_failed);
	printf("clients: %llu connections opened, %llu reconnections, %llu calls "
	       "resent on a new connection, %.1f MiB moved\n", tot.connections,
	       tot.reconnects, tot.retransmissions, (double)tot.bytes / 1048576.0);
	/* Memory: each life after warm-up, its peak, its last sample; the
	 * last life again once the clients were gone. */
	printf("server resident memory per life (KiB): life  seconds  at-10s  "
	       "peak  last\n");
	/* Flat: every life of 30 s or more ends within 10% + 8 MiB of where
	 * it stood 10 s in, and the last one idles there once the clients
	 * have gone.  A goal, printed, as every rpcrdma-perf goal is. */
	bool flat = true;
	unsigned judged = 0;
	for (unsigned i = 0; i <= nmem; i++) {
		struct life_mem *m = &mem[i];
		printf("  %4u %8.1f %7ld %7ld %7ld\n", m->life, m->secs, m->warm_kb,
		       m->peak_kb, m->last_kb);
		if (m->warm_kb > 0 && m->secs >= 30) {
			judged++;
			if (m->last_kb > m->warm_kb + m->warm_kb / 10 + 8192)
				flat = false;
		}
	}
	const struct life_mem *lm = &mem[nmem];
	printf("  after the clients left (last life): %ld KiB\n", after_kb);
	if (lm->warm_kb > 0 && after_kb > lm->warm_kb + lm->warm_kb / 10 + 8192)
		flat = false;
	if (judged)
		printf("memory flat (%u lives of 30 s or more; the last %.0f s: "
		       "%ld -> %ld -> %ld KiB after): %s\n", judged, lm->secs,
		       lm->warm_kb, lm->last_kb, after_kb, flat ? "MET" : "MISSED");
	else
		printf("memory flat: not judged (no life of 30 s)\n");
	bool bad = tot.never || tot.twice || tot.wrong || twice_life ||
		   reported != (unsigned)nclients ||
		   tot.ok + tot.failed + tot.wrong + tot.never != tot.issued ||
		   !tot.ok;
	if (!keep) {
		unlink(logp);
		rmdir(dir);
	}
	printf("soak: %s\n", bad ? "FAILED" : "passed");
	free(cpid);
	free(cfd);
	return bad ? 1 : 0;
}

int perf_cmd_soak(int argc, char **argv)
{
	const char *role = opt_val(argc, argv, "--role");
	if (role && !strcmp(role, "server"))
		return role_server(argc, argv);
	if (role && !strcmp(role, "client"))
		return role_client(argc, argv);
	return conductor(argc, argv);
}
