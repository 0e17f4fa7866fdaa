/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rpcrdma/tirpc.h — RPC-over-RDMA for libtirpc programs.
 *
 * A CLIENT* and an SVCXPRT* that carry ONC RPC over RPC-over-RDMA
 * (version 1, RFC 8166, or version 2, draft-cel-nfsv4-rpcrdma-version-two,
 * as negotiated: see rpcrdma/rpcrdma.h), so rpcgen-generated stubs and
 * dispatch functions run unchanged: only the line that creates the client
 * or the transport changes.
 *
 *   CLIENT *c = clnt_rdma_create("server:20049", PROG, VERS, NULL);
 *   ... rpcgen client stubs, clnt_call, clnt_control, clnt_geterr,
 *       clnt_perror, clnt_freeres, clnt_destroy ...
 *
 *   SVCXPRT *x = svc_rdma_create("0.0.0.0:20049", NULL);
 *   svc_register(x, PROG, VERS, prog_1, 0);   protocol 0: no rpcbind
 *   svc_run();
 *
 * Upper-Layer Binding (RFC 8166 §6): which XDR data item of a procedure's
 * arguments or results may be moved by direct data placement is a
 * property of the program, not of the generated code.  Declare it per
 * procedure with clnt_rdma_set_ulb() / svc_rdma_set_ulb(); the generated
 * XDR routines are not edited.  The eligible item is the first opaque or
 * string body of at least ddp_min bytes that the XDR routine moves (an
 * NFS WRITE's data, a READ result's data).  Everything else travels
 * inline, or in a Long Call / Reply chunk when too big for the inline
 * threshold.
 *
 * Without a binding, any argument and any result up to max_msg (struct
 * rpcrdma_opts, 4 MiB + 64 KiB by default, the whole RPC message) gets
 * through, both ways, sync calls and callbacks alike, and no call is ever
 * sent twice to get its reply through.  An argument too large to go
 * inline goes as a Long Call (a Position-Zero Read chunk registered for
 * that call only).  Since the result's size is not known before the call,
 * every call whose results routine is not xdr_void offers a Reply chunk of
 * max_msg: the connection's reply region, max_msg bytes registered once,
 * the first time the connection needs it, and lent to one call at a time
 * (exposed to the server through a memory window bound for that call and
 * invalidated before it completes).  Small calls so pay no registration.
 * Cost in registered memory: max_msg per connection that makes such a
 * call (a client's connection, or a server's connection on which a
 * callback with results is made), on top of the connection's own
 * buffers (README, "Memory per connection").  Two calls at once on one
 * connection: the second gets max_msg of its own, registered for it;
 * likewise on a device without memory windows.  A result larger than
 * max_msg fails the call with RPC_CANTRECV, errno EMSGSIZE ("Unable to
 * receive; errno = Message too long"); arguments larger than this side's
 * max_msg with RPC_CANTSEND, EMSGSIZE (not sent), larger than the
 * server's with RPC_CANTDECODEARGS, re_errno EMSGSIZE.  Client and
 * server need the same max_msg (RPCRDMA_MAX_MSG in the environment).
 *
 * Link with -lrpcrdma -ltirpc (pkg-config rpcrdma).
 */
#ifndef RPCRDMA_TIRPC_H
#define RPCRDMA_TIRPC_H

#include <rpc/rpc.h>

#include "rpcrdma/rpcrdma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One procedure's Upper-Layer Binding. */
struct rpcrdma_ulb_proc {
	rpcproc_t proc;
	/* The first opaque/string argument body of at least ddp_min bytes
	 * goes in a Read chunk (RFC 8166 §3.4.5). */
	bool ddp_arg;
	/* > 0: offer one Write chunk of this many bytes for the first
	 * opaque/string result body of at least ddp_min bytes (§3.4.6). */
	size_t ddp_result_max;
	/* Largest results stream besides the DDP result; a Reply chunk is
	 * offered when it may not fit inline (§4.3.3).  0: the client's
	 * default: any size up to max_msg (RPCRDMA_REPLY_ANY), or 512 bytes
	 * (inline) when the results routine is xdr_void. */
	size_t reply_max;
	/* 0: RPCRDMA_TIRPC_DDP_MIN. */
	size_t ddp_min;
};

#define RPCRDMA_TIRPC_DDP_MIN 1024u
/* The default reply_max (it was 256 KiB): any size up to max_msg. */
#define RPCRDMA_TIRPC_REPLY_MAX RPCRDMA_REPLY_ANY

/*
 * A CLIENT for (prog, vers) at host: "name", "name:port" or
 * "[v6addr]:port" (default port 20049).  opts NULL: defaults (provider
 * "iwarp").  On failure returns NULL with rpc_createerr set
 * (clnt_pcreateerror prints it): RPC_UNKNOWNHOST for a name that does not
 * resolve, RPC_TIMEDOUT for a server that does not answer,
 * RPC_UNKNOWNPROTO for a provider this library lacks, RPC_SYSTEMERROR
 * with a real errno otherwise: ECONNREFUSED (nothing listens, or the
 * server is at its max_connections), EPROTO (not an RPC-over-RDMA peer),
 * ENODEV (no RDMA device), EINVAL (an RPCRDMA_* variable refused, named
 * on stderr; a port that is not a number) ...  clnt_rdma_create(3),
 * DIAGNOSTICS, lists every message.
 * The CLIENT starts with AUTH_NONE in cl_auth; replace it as with any
 * libtirpc client (authunix_create_default()); clnt_destroy does not
 * destroy it, as in libtirpc.
 *
 * clnt_control: CLSET_TIMEOUT / CLGET_TIMEOUT, CLSET_RETRY_TIMEOUT
 * (accepted, unused: there are no retransmissions on a reliable
 * transport), CLGET_XID / CLSET_XID (CLSET_XID is refused: the engine
 * owns XIDs), CLGET_VERS / CLSET_VERS, CLGET_PROG / CLSET_PROG,
 * CLGET_SERVER_ADDR, CLGET_SVC_ADDR.
 */
CLIENT *clnt_rdma_create(const char *host, rpcprog_t prog, rpcvers_t vers,
			 const struct rpcrdma_opts *opts);

/* Declares the Upper-Layer Binding of n procedures of a CLIENT from
 * clnt_rdma_create (later entries replace earlier ones for the same
 * procedure).  FALSE for a CLIENT of another kind or out of memory. */
bool_t clnt_rdma_set_ulb(CLIENT *c, const struct rpcrdma_ulb_proc *procs,
			 unsigned n);

/*
 * The DDP-eligible result of the next call this thread makes on c goes
 * straight into buf: the Write chunk offered for it (RFC 8166 §4.3.2) is
 * buf itself, len bytes at most (and no more than the binding's
 * ddp_result_max), so the server's RDMA Write lands there; when the
 * results routine then decodes that opaque into buf too — give it buf in
 * the results structure, as rpcgen allows (res.data.data_val = buf before
 * the call: xdr_bytes decodes into memory it is given) — not a byte is
 * copied.  Into other memory (a NULL pointer: xdr_bytes allocates) it is
 * copied once from buf.  buf is lent to the library for that one call
 * (it returns only once the server can no longer reach it, a time-out
 * included: see rpcrdma_clnt_call_into()); the setting is then
 * forgotten.  Without it, the result lands in the library's memory and
 * the results routine copies it once.  FALSE for a CLIENT of another
 * kind.
 */
bool_t clnt_rdma_result_buffer(CLIENT *c, void *buf, size_t len);

/* The transport counters of the client's connection, filled as by
 * rpcrdma_clnt_stats_sized() (rpcrdma.h).  Call it through
 * clnt_rdma_stats(). */
bool_t clnt_rdma_stats_sized(CLIENT *c, struct rpcrdma_stats *s, size_t size);

static inline bool_t clnt_rdma_stats(CLIENT *c, struct rpcrdma_stats *s)
{
	return clnt_rdma_stats_sized(c, s, sizeof(*s));
}

/*
 * Reverse direction (RFC 8167): serve the callback program (prog, vers)
 * of the server this CLIENT is connected to, on the same connection.
 * dispatch is an rpcgen-style dispatch function; it runs on a library
 * thread with an SVCXPRT that supports svc_getargs, svc_freeargs,
 * svc_sendreply and the svcerr_* functions.  FALSE for a CLIENT of
 * another kind or out of memory.
 */
bool_t clnt_rdma_register_callback(CLIENT *c, rpcprog_t prog, rpcvers_t vers,
				   void (*dispatch)(struct svc_req *, SVCXPRT *));

/*
 * A listening transport for svc_register(xprt, prog, vers, dispatch, 0)
 * and svc_run().  listen_addr: "host[:port]", "[v6]:port" (default port
 * 20049; port 0: ephemeral, see svc_rdma_port()).  Every connection
 * accepted on it is served through this one SVCXPRT: svc_run() wakes on
 * its file descriptor and dispatches one call at a time, as libtirpc does
 * for its own transports; PROG_UNAVAIL, PROG_MISMATCH and AUTH errors come
 * from libtirpc itself.  NULL with rpc_createerr set on failure, and,
 * as libtirpc's svc_tli_create does, a line on stderr that names the
 * address (RPC_SYSTEMERROR, EADDRINUSE for an address in use).
 * svc_destroy(xprt) stops it.
 *
 * Dispatch functions run on svc_run()'s thread, which also polls the
 * device and posts to it: they must not change that thread's credentials
 * (setfsuid, setgroups...).  On devices whose posts go through the
 * kernel's uverbs file (Soft-RoCE, siw) the kernel refuses every later
 * post from a thread whose credentials changed since the device was
 * opened, even once changed back.  Work under a caller's identity
 * belongs on a thread of its own that does not call the library (as
 * rpcrdma-nfs3d does, docs/NFS3D.md).
 */
SVCXPRT *svc_rdma_create(const char *listen_addr,
			 const struct rpcrdma_opts *opts);

/*
 * Reverse direction from a server (RFC 8167): inside a dispatch function
 * running for an SVCXPRT of svc_rdma_create, a CLIENT for the peer's
 * callback program (prog, vers) on the connection the current call came
 * in on.  Usable from the dispatch function and after it returns, until
 * clnt_destroy() (the connection stays up).  NULL with rpc_createerr set
 * when rq is not an RDMA request or the connection is gone.
 */
CLIENT *svc_rdma_callback_client(struct svc_req *rq, rpcprog_t prog,
				 rpcvers_t vers);

/* The port an SVCXPRT from svc_rdma_create listens on (0 if not one). */
uint16_t svc_rdma_port(SVCXPRT *x);

/* Declares which results of (prog, vers) procedures may be placed in the
 * client's Write chunks (ddp_result_max > 0 means "may"; the size the
 * client offered is what limits it).  FALSE for another kind of SVCXPRT. */
bool_t svc_rdma_set_ulb(SVCXPRT *x, rpcprog_t prog, rpcvers_t vers,
			const struct rpcrdma_ulb_proc *procs, unsigned n);

/* The transport counters of every connection the SVCXPRT has served,
 * filled as by rpcrdma_svc_stats_sized() (rpcrdma.h).  FALSE for another
 * kind of SVCXPRT.  Call it through svc_rdma_stats(). */
bool_t svc_rdma_stats_sized(SVCXPRT *x, struct rpcrdma_stats *s, size_t size);

static inline bool_t svc_rdma_stats(SVCXPRT *x, struct rpcrdma_stats *s)
{
	return svc_rdma_stats_sized(x, s, sizeof(*s));
}

/*
 * Inside a dispatch function of an SVCXPRT from svc_rdma_create (or a
 * client callback): drop the call being dispatched instead of answering
 * it (rpcrdma_svc_req_drop): no reply goes out and its connection is
 * closed, so the client sends the call again with the same XID once it
 * has reconnected.  The dispatch function then returns without replying.
 * FALSE when rq is not such a call or has already been answered.
 *
 * svc_getrpccaller(xprt) gives, during a dispatch, the address of the
 * peer the call came from.
 */
bool_t svc_rdma_drop(struct svc_req *rq);

/* The XID of the call being dispatched (libtirpc's svc_req has none; a
 * duplicate-request cache keys on it).  FALSE when rq is not a call of
 * an SVCXPRT from svc_rdma_create (or a client callback). */
bool_t svc_rdma_xid(struct svc_req *rq, uint32_t *xid);

#ifdef __cplusplus
}
#endif
#endif
