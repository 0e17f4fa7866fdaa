/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * clnt_rdma_create: a libtirpc CLIENT over the native rpcrdma client, so
 * rpcgen client stubs run unchanged over RPC-over-RDMA.
 *
 * cl_call encodes the arguments with the caller's XDR routine into a
 * gather stream (the procedure's DDP-eligible argument is referenced in
 * place and goes in a Read chunk), makes one native call, maps the outcome
 * to enum clnt_stat as libtirpc's own transports do, and decodes the
 * results with the caller's XDR routine from a scatter stream (the DDP
 * result comes from the Write chunk).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc_internal.h"
#include "rpc/tirpc/tirpc_internal.h"
#include "rpcrdma/export.h"
#include "rpcrdma/tirpc.h"

struct cb_prog {
	uint32_t prog, vers;
	void (*dispatch)(struct svc_req *, SVCXPRT *);
};

/* A call takes no lock of this file (issue: one lock per connection per
 * poll pass, none beyond it on the synchronous path): what it reads is
 * atomic (the time-out set, the bindings' table, the native client's
 * credential), and what it leaves for clnt_geterr / CLGET_XID is written
 * under the lock only when it is not what is there already (a failure
 * after a success, a success after a failure). */
struct clnt_rdma {
	struct rpcrdma_clnt *c;
	uint32_t prog, vers;
	pthread_mutex_t lock;      /* the fields below, unless atomic */
	struct timeval timeout;    /* for CLGET_TIMEOUT */
	atomic_uint_fast64_t set_ms; /* CLSET_TIMEOUT's, in ms, plus 1
					(0: not set), overriding
					clnt_call's */
	struct rpc_err err;        /* of the last call (clnt_geterr) */
	atomic_bool err_ok;        /* err is RPC_SUCCESS, all zero */
	atomic_uint last_xid;
	struct ulb_table ulb;      /* written under lock */
	struct cb_prog **cbs;      /* owned; the native registrations
				      point at them */
	size_t ncbs;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

static struct clnt_rdma *CR(CLIENT *cl)
{
	return (struct clnt_rdma *)cl->cl_private;
}

/* libtirpc's "is this one of ours" test: our ops table. */
static const struct clnt_ops clnt_rdma_ops;

static bool is_rdma(CLIENT *cl)
{
	return cl && cl->cl_ops == &clnt_rdma_ops;
}

static unsigned timeout_ms(const struct timeval *tv)
{
	if (tv->tv_sec < 0 || tv->tv_usec < 0)
		return 0;
	uint64_t ms = (uint64_t)tv->tv_sec * 1000u + (uint64_t)tv->tv_usec / 1000u;
	if (ms == 0)
		ms = 1; /* libtirpc: zero means "send and don't wait"; we
			   still wait the least we can, the call completes */
	return ms > UINT32_MAX ? UINT32_MAX : (unsigned)ms;
}

/* The native client's credential becomes cl_auth's, when it is not
 * already (compared with what its calls carry, without a lock). */
static int sync_cred(struct clnt_rdma *cr, AUTH *a)
{
	uint32_t flavor = a ? (uint32_t)a->ah_cred.oa_flavor : 0;
	const void *body = a ? a->ah_cred.oa_base : NULL;
	size_t len = a ? a->ah_cred.oa_length : 0;
	if (len > MAX_AUTH_BYTES)
		return RPCRDMA_ERR_INVAL;
	if (rpcrdma_rpc_clnt_cred_is(cr->c, flavor, body, len))
		return 0;
	return rpcrdma_clnt_set_cred_raw(cr->c, flavor, body, len);
}

/* The outcome of the last call, for clnt_geterr.  A success after a
 * success writes nothing, so a client's calls in a row take no lock. */
static void set_err(struct clnt_rdma *cr, const struct rpc_err *err)
{
	bool ok = err->re_status == RPC_SUCCESS && !err->re_errno;
	if (ok && atomic_load(&cr->err_ok))
		return;
	pthread_mutex_lock(&cr->lock);
	if (ok)
		memset(&cr->err, 0, sizeof(cr->err));
	else
		cr->err = *err;
	atomic_store(&cr->err_ok, ok);
	pthread_mutex_unlock(&cr->lock);
}

/* The native outcome as libtirpc reports it (clnt_perror's wording). */
static void map_status(const struct rpcrdma_reply *rep, struct rpc_err *e)
{
	memset(e, 0, sizeof(*e));
	switch (rep->status) {
	case 0:
		e->re_status = RPC_SUCCESS;
		break;
	case RPCRDMA_ERR_RPC_PROG_UNAVAIL:
		e->re_status = RPC_PROGUNAVAIL;
		break;
	case RPCRDMA_ERR_RPC_PROG_MISMATCH:
		e->re_status = RPC_PROGVERSMISMATCH;
		e->re_vers.low = rep->low;
		e->re_vers.high = rep->high;
		break;
	case RPCRDMA_ERR_RPC_PROC_UNAVAIL:
		e->re_status = RPC_PROCUNAVAIL;
		break;
	case RPCRDMA_ERR_RPC_GARBAGE_ARGS:
		e->re_status = RPC_CANTDECODEARGS;
		break;
	case RPCRDMA_ERR_RPC_SYSTEM_ERR:
		e->re_status = RPC_SYSTEMERROR;
		e->re_errno = EIO;
		break;
	case RPCRDMA_ERR_RPC_MISMATCH:
		e->re_status = RPC_VERSMISMATCH;
		e->re_vers.low = rep->low;
		e->re_vers.high = rep->high;
		break;
	case RPCRDMA_ERR_RPC_AUTH:
		e->re_status = RPC_AUTHERROR;
		e->re_why = (enum auth_stat)rep->auth_stat;
		break;
	case RPCRDMA_ERR_RPC_BAD_REPLY:
		e->re_status = RPC_CANTDECODERES;
		break;
	case RPCRDMA_ERR_TIMEOUT:
		e->re_status = RPC_TIMEDOUT;
		break;
	case RPCRDMA_ERR_PEER_ERR_VERS:
		/* RFC 8166 §4.5.1: the transport versions did not match. */
		e->re_status = RPC_VERSMISMATCH;
		e->re_vers.low = rep->low;
		e->re_vers.high = rep->high;
		break;
	case RPCRDMA_ERR_CALL_TOO_BIG:
		/* Refused here, before sending: "Unable to send; errno =
		 * Message too long". */
		e->re_status = RPC_CANTSEND;
		e->re_errno = EMSGSIZE;
		break;
	case RPCRDMA_ERR_PEER_CALL_TOO_BIG:
		/* Refused by the server, which could not take the
		 * arguments: "Server can't decode arguments" (clnt_perror
		 * prints no errno with it; clnt_geterr has EMSGSIZE). */
		e->re_status = RPC_CANTDECODEARGS;
		e->re_errno = EMSGSIZE;
		break;
	case RPCRDMA_ERR_REPLY_TOO_BIG:
		e->re_status = RPC_CANTRECV;
		e->re_errno = EMSGSIZE;
		break;
	case RPCRDMA_ERR_DISCONNECTED:
	case RPCRDMA_ERR_CANCELLED:
	case RPCRDMA_ERR_FLUSHED:
	case RPCRDMA_ERR_TERMINATED:
		/* The connection went away under the call. */
		e->re_status = RPC_CANTRECV;
		e->re_errno = tirpc_errno(rep->status);
		break;
	case RPCRDMA_ERR_PEER_ERR_CHUNK:
	case RPCRDMA_ERR_PEER_ERR_RESOURCE:
	case RPCRDMA_ERR_PEER_ERROR:
	case RPCRDMA_ERR_PEER_ERR_SYSTEM:
		/* The server could not parse our transport header or
		 * deliver the reply (§4.5.2, §4.5.3). */
		e->re_status = RPC_CANTSEND;
		e->re_errno = EPROTO;
		break;
	default:
		e->re_status = RPC_SYSTEMERROR;
		e->re_errno = tirpc_errno(rep->status);
		break;
	}
}

/* clnt_rdma_result_buffer: for the next call of this thread on cl. */
static _Thread_local struct {
	CLIENT *cl;
	void *buf;
	size_t len;
} result_buf;

static enum clnt_stat clnt_rdma_call(CLIENT *cl, rpcproc_t proc,
				     xdrproc_t xargs, void *argsp,
				     xdrproc_t xres, void *resp,
				     struct timeval tmo)
{
	struct clnt_rdma *cr = CR(cl);
	struct rpc_err err;
	memset(&err, 0, sizeof(err));
	/* clnt_rdma_result_buffer lends a buffer to this call only. */
	bool lent = result_buf.cl == cl;
	void *lent_buf = result_buf.buf;
	size_t lent_len = result_buf.len;
	result_buf.cl = NULL;

	uint64_t set_ms = atomic_load(&cr->set_ms);
	struct ulb_entry b;
	if (!ulb_lookup(&cr->ulb, cr->prog, cr->vers, (uint32_t)proc, &b))
		b = (struct ulb_entry){ 0 };
	if (sync_cred(cr, cl->cl_auth) < 0) {
		err.re_status = RPC_CANTENCODEARGS;
		goto out;
	}

	XDR x;
	struct xdr_gather g;
	xdr_gather_create(&x, &g, b.ddp_arg,
			  b.ddp_min ? b.ddp_min : RPCRDMA_TIRPC_DDP_MIN);
	if (xargs && !xargs(&x, argsp)) {
		err.re_status = g.failed ? RPC_SYSTEMERROR : RPC_CANTENCODEARGS;
		err.re_errno = g.failed ? ENOMEM : 0;
		xdr_gather_free(&g);
		goto out;
	}
	struct rpcrdma_iov iov[3];
	unsigned niov = xdr_gather_iov(&g, iov);
	size_t ddp_max = b.ddp_result_max;
	/* Without a binding the reply's size is unknown: it may be anything
	 * up to max_msg, so a Reply chunk that large goes with the call (RFC
	 * 8166 §4.3.3): the connection's reply region, registered once
	 * (rpc/reply_region.c).  Nothing is ever resent to get a reply
	 * through.  A procedure with void results (NULL pings above all)
	 * has a reply of one RPC reply header at most: 24 bytes plus a
	 * verifier of up to 400 (RFC 5531 §8.2), inline. */
	size_t reply_max = b.reply_max ? b.reply_max
		: xres == (xdrproc_t)xdr_void || !xres ? 512
		: RPCRDMA_REPLY_ANY;
	struct rpcrdma_call call = {
		.proc = (uint32_t)proc,
		.args = iov,
		.nargs = niov,
		.reply_max = reply_max,
		.ddp_result_max = ddp_max ? &ddp_max : NULL,
		.nddp_results = ddp_max ? 1 : 0,
		.timeout_ms = set_ms ? (unsigned)(set_ms - 1) : timeout_ms(&tmo),
	};
	/* Zeroed by rpcrdma_clnt_call and _into, whatever they return. */
	struct rpcrdma_reply rep;
	/* A result buffer lent for this call (clnt_rdma_result_buffer):
	 * the Write chunk is that buffer. */
	struct rpcrdma_iov into = {NULL, 0, true};
	if (lent && ddp_max) {
		into.base = lent_buf;
		into.len = lent_len < ddp_max ? lent_len : ddp_max;
	}
	if (into.base)
		rpcrdma_clnt_call_into(cr->c, &call, &into, 1, &rep);
	else
		rpcrdma_clnt_call(cr->c, &call, &rep);
	xdr_gather_free(&g);
	map_status(&rep, &err);
	if (err.re_status == RPC_SUCCESS && xres) {
		struct xdr_scatter s;
		const void *ddp = rep.nddp ? rep.ddp[0] : NULL;
		size_t ddp_len = rep.nddp ? rep.ddp_len[0] : 0;
		xdr_scatter_create(&x, &s, rep.data, rep.len, ddp, ddp_len);
		xdr_scatter_set_padding(&s, &rep.pad);
		if (!xres(&x, resp))
			err.re_status = RPC_CANTDECODERES;
		rpcrdma_rpc_clnt_count_copied(cr->c, s.copied);
	}
	atomic_store_explicit(&cr->last_xid, rep.xid, memory_order_relaxed);
	rpcrdma_reply_free(&rep);
out:
	set_err(cr, &err);
	return err.re_status;
}

static void clnt_rdma_abort(CLIENT *cl)
{
	(void)cl;
}

static void clnt_rdma_geterr(CLIENT *cl, struct rpc_err *e)
{
	struct clnt_rdma *cr = CR(cl);
	if (atomic_load(&cr->err_ok)) {
		memset(e, 0, sizeof(*e));
		return;
	}
	pthread_mutex_lock(&cr->lock);
	*e = cr->err;
	pthread_mutex_unlock(&cr->lock);
}

static bool_t clnt_rdma_freeres(CLIENT *cl, xdrproc_t xres, void *resp)
{
	(void)cl;
	XDR x;
	memset(&x, 0, sizeof(x));
	x.x_op = XDR_FREE;
	return xres(&x, resp);
}

static void clnt_rdma_destroy(CLIENT *cl)
{
	struct clnt_rdma *cr = CR(cl);
	rpcrdma_clnt_destroy(cr->c); /* no handler runs after this */
	pthread_mutex_destroy(&cr->lock);
	ulb_free(&cr->ulb);
	for (size_t i = 0; i < cr->ncbs; i++)
		free(cr->cbs[i]);
	free(cr->cbs);
	free(cr);
	free(cl->cl_netid);
	free(cl->cl_tp);
	free(cl);
}

static bool_t clnt_rdma_control(CLIENT *cl, u_int req, void *info)
{
	struct clnt_rdma *cr = CR(cl);
	bool_t ok = TRUE;
	pthread_mutex_lock(&cr->lock);
	switch (req) {
	case CLSET_TIMEOUT:
		if (!info || ((struct timeval *)info)->tv_sec < 0 ||
		    ((struct timeval *)info)->tv_usec < 0) {
			ok = FALSE;
			break;
		}
		cr->timeout = *(struct timeval *)info;
		atomic_store(&cr->set_ms, (uint64_t)timeout_ms(&cr->timeout) + 1);
		break;
	case CLGET_TIMEOUT:
		if (info)
			*(struct timeval *)info = cr->timeout;
		break;
	case CLSET_RETRY_TIMEOUT:
		/* Datagram-only in libtirpc; a reliable transport does not
		 * retransmit.  Accepted so portable code keeps working. */
		break;
	case CLGET_XID:
		if (info)
			*(uint32_t *)info = atomic_load_explicit(
				&cr->last_xid, memory_order_relaxed);
		break;
	case CLGET_VERS:
		if (info)
			*(uint32_t *)info = cr->vers;
		break;
	case CLGET_PROG:
		if (info)
			*(uint32_t *)info = cr->prog;
		break;
	case CLGET_SERVER_ADDR:
	case CLGET_SVC_ADDR:
		if (!info) {
			ok = FALSE;
			break;
		}
		if (req == CLGET_SERVER_ADDR) {
			memcpy(info, &cr->addr, cr->addrlen);
		} else {
			struct netbuf *nb = info;
			nb->buf = &cr->addr;
			nb->len = nb->maxlen = cr->addrlen;
		}
		break;
	default:
		/* CLSET_XID, CLSET_VERS, CLSET_PROG, fd controls: the
		 * connection and its engine own these. */
		ok = FALSE;
		break;
	}
	pthread_mutex_unlock(&cr->lock);
	return ok;
}

static const struct clnt_ops clnt_rdma_ops = {
	.cl_call = clnt_rdma_call,
	.cl_abort = clnt_rdma_abort,
	.cl_geterr = clnt_rdma_geterr,
	.cl_freeres = clnt_rdma_freeres,
	.cl_destroy = clnt_rdma_destroy,
	.cl_control = clnt_rdma_control,
};

/* A CLIENT around a native client (owned from now on). */
CLIENT *tirpc_wrap_clnt(struct rpcrdma_clnt *nc, uint32_t prog, uint32_t vers,
			const struct sockaddr_storage *addr, socklen_t addrlen)
{
	CLIENT *cl = calloc(1, sizeof(*cl));
	struct clnt_rdma *cr = calloc(1, sizeof(*cr));
	if (!cl || !cr) {
		free(cl);
		free(cr);
		rpcrdma_clnt_destroy(nc);
		tirpc_create_error(RPC_SYSTEMERROR, ENOMEM);
		return NULL;
	}
	cr->c = nc;
	pthread_mutex_init(&cr->lock, NULL);
	cr->prog = prog;
	cr->vers = vers;
	cr->timeout.tv_sec = 25; /* libtirpc's customary default */
	atomic_init(&cr->err_ok, true); /* err: all zero */
	if (addr && addrlen <= sizeof(cr->addr)) {
		memcpy(&cr->addr, addr, addrlen);
		cr->addrlen = addrlen;
	}
	cl->cl_ops = (struct clnt_ops *)(uintptr_t)&clnt_rdma_ops;
	cl->cl_private = cr;
	cl->cl_auth = authnone_create();
	cl->cl_netid = strdup("rdma");
	cl->cl_tp = strdup("rpcrdma");
	return cl;
}

RPCRDMA_EXPORT CLIENT *clnt_rdma_create(const char *host, rpcprog_t prog,
					rpcvers_t vers,
					const struct rpcrdma_opts *opts)
{
	struct sockaddr_storage addr;
	socklen_t addrlen;
	if (!host || rpcrdma_rpc_parse_addr(host, &addr, &addrlen) < 0) {
		tirpc_create_fail(RPCRDMA_ERR_ADDR, host);
		return NULL;
	}
	struct rpcrdma_clnt *nc;
	int rc = rpcrdma_clnt_create(host, (uint32_t)prog, (uint32_t)vers, opts,
				     &nc);
	if (rc < 0) {
		/* A refused connection reads as it does over TCP:
		 * "Remote system error - Connection refused"; a server that
		 * does not answer, "Timed out". */
		tirpc_create_fail(rc, host);
		return NULL;
	}
	return tirpc_wrap_clnt(nc, (uint32_t)prog, (uint32_t)vers, &addr, addrlen);
}

RPCRDMA_EXPORT bool_t clnt_rdma_set_ulb(CLIENT *cl,
					const struct rpcrdma_ulb_proc *procs,
					unsigned n)
{
	if (!is_rdma(cl) || (n && !procs))
		return FALSE;
	struct clnt_rdma *cr = CR(cl);
	return ulb_set_procs(&cr->ulb, &cr->lock, cr->prog, cr->vers, procs, n);
}

RPCRDMA_EXPORT bool_t clnt_rdma_result_buffer(CLIENT *cl, void *buf,
					      size_t len)
{
	if (!is_rdma(cl) || (!buf && len))
		return FALSE;
	result_buf.cl = buf ? cl : NULL;
	result_buf.buf = buf;
	result_buf.len = len;
	return TRUE;
}

RPCRDMA_EXPORT bool_t clnt_rdma_stats_sized(CLIENT *cl, struct rpcrdma_stats *s,
					    size_t size)
{
	if (!is_rdma(cl) || !s)
		return FALSE;
	return rpcrdma_clnt_stats_sized(CR(cl)->c, s, size) == 0;
}

/* Reverse direction: every call for a registered callback program runs
 * the rpcgen dispatch function on the library's handler thread. */
static enum rpcrdma_svc_stat cb_handler(struct rpcrdma_svc_req *req, void *arg)
{
	struct cb_prog *p = arg;
	return tirpc_dispatch_direct(req, p->dispatch, NULL);
}

RPCRDMA_EXPORT bool_t clnt_rdma_register_callback(
	CLIENT *cl, rpcprog_t prog, rpcvers_t vers,
	void (*dispatch)(struct svc_req *, SVCXPRT *))
{
	if (!is_rdma(cl) || !dispatch)
		return FALSE;
	struct clnt_rdma *cr = CR(cl);
	struct cb_prog *p = malloc(sizeof(*p));
	if (!p)
		return FALSE;
	*p = (struct cb_prog){ (uint32_t)prog, (uint32_t)vers, dispatch };
	pthread_mutex_lock(&cr->lock);
	struct cb_prog **n = realloc(cr->cbs, (cr->ncbs + 1) * sizeof(*n));
	if (!n) {
		pthread_mutex_unlock(&cr->lock);
		free(p);
		return FALSE;
	}
	cr->cbs = n;
	cr->cbs[cr->ncbs++] = p;
	pthread_mutex_unlock(&cr->lock);
	/* Every procedure of the program goes to dispatch, which answers
	 * PROC_UNAVAIL itself for the ones it does not know.  p is freed
	 * with the CLIENT, after the native client stops its handlers. */
	return rpcrdma_clnt_register_any(cr->c, (uint32_t)prog, (uint32_t)vers,
					 cb_handler, p) == 0;
}
