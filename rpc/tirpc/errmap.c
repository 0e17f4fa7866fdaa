/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Library errors as libtirpc reports them: a clnt_stat and a real errno,
 * chosen so that clnt_perror() / clnt_pcreateerror(), whose wording is
 * libtirpc's own ("RPC: Timed out", "RPC: Remote system error - No such
 * device", "RPC: Unable to send; errno = Message too long"), name the
 * true cause, as they do for libtirpc's TCP and UDP transports.
 * clnt_rdma_create(3), DIAGNOSTICS, lists every message.
 */
#include <errno.h>

#include "rpc/rpc_internal.h"
#include "rpc/tirpc/tirpc_internal.h"

int tirpc_errno(int rc)
{
	switch (rc) {
	case RPCRDMA_ERR_INVAL:
	case RPCRDMA_ERR_CONFIG:
		return EINVAL;
	case RPCRDMA_ERR_NOMEM:
		return ENOMEM;
	case RPCRDMA_ERR_NOTSUP:
		return EOPNOTSUPP;
	case RPCRDMA_ERR_AGAIN:
	case RPCRDMA_ERR_NO_CREDIT:
		return EAGAIN;
	case RPCRDMA_ERR_TIMEOUT:
		return ETIMEDOUT;
	case RPCRDMA_ERR_BUSY:
		return EADDRINUSE;
	case RPCRDMA_ERR_NOENT:
		return ENOENT;
	case RPCRDMA_ERR_OVERFLOW:
	case RPCRDMA_ERR_CALL_TOO_BIG:
	case RPCRDMA_ERR_PEER_CALL_TOO_BIG:
	case RPCRDMA_ERR_REPLY_TOO_BIG:
		return EMSGSIZE;
	case RPCRDMA_ERR_NO_DEVICE:
		return ENODEV;
	case RPCRDMA_ERR_ADDR:
		return EADDRNOTAVAIL;
	case RPCRDMA_ERR_CONNREFUSED:
		return ECONNREFUSED;
	case RPCRDMA_ERR_DISCONNECTED:
	case RPCRDMA_ERR_FLUSHED:
		return ECONNRESET;
	case RPCRDMA_ERR_TERMINATED:
		return ECONNABORTED;
	case RPCRDMA_ERR_PROTECTION:
		return EFAULT;
	case RPCRDMA_ERR_CANCELLED:
		return ECANCELED;
	case RPCRDMA_ERR_PEER_NO_REVERSE:
		return EOPNOTSUPP;
	case RPCRDMA_ERR_SYSTEM:
		return EIO;
	default:
		/* Decoding errors (-100 ..), a broken or foreign peer
		 * (PROTOCOL, NOT_RDMA, NO_RECV, QP_STATE), its RDMA_ERROR
		 * replies (PEER_ERR_*). */
		return EPROTO;
	}
}

void tirpc_create_fail(int rc, const char *addr)
{
	enum clnt_stat st = RPC_SYSTEMERROR;
	switch (rc) {
	case RPCRDMA_ERR_ADDR:
		/* A name that does not resolve: an unknown host.  In
		 * "host:notaport" the host is fine and the argument is not:
		 * "Invalid argument" (libtirpc has no text for
		 * RPC_UNKNOWNADDR or RPC_N2AXLATEFAILURE). */
		if (addr && rpcrdma_rpc_addr_bad_port(addr)) {
			tirpc_create_error(RPC_SYSTEMERROR, EINVAL);
			return;
		}
		st = RPC_UNKNOWNHOST;
		break;
	case RPCRDMA_ERR_NOTSUP:
		/* A provider this library was not built with, set in the
		 * options (the environment's is refused as CONFIG). */
		st = RPC_UNKNOWNPROTO;
		break;
	case RPCRDMA_ERR_TIMEOUT:
		st = RPC_TIMEDOUT;
		break;
	default:
		break;
	}
	tirpc_create_error(st, tirpc_errno(rc));
}
