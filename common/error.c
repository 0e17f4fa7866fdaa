/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* rpcrdma_strerror(): text for every code in include/rpcrdma/error.h. */
#include "rpcrdma/error.h"
#include "rpcrdma/export.h"

RPCRDMA_EXPORT const char *rpcrdma_strerror(int err)
{
	switch ((enum rpcrdma_error)err) {
	case RPCRDMA_OK: return "success";
	case RPCRDMA_ERR_INVAL: return "invalid argument";
	case RPCRDMA_ERR_NOMEM: return "out of memory";
	case RPCRDMA_ERR_NOSPACE: return "buffer too small";
	case RPCRDMA_ERR_NOTSUP: return "not supported";
	case RPCRDMA_ERR_AGAIN: return "resource temporarily unavailable";
	case RPCRDMA_ERR_TIMEOUT: return "timed out";
	case RPCRDMA_ERR_SYSTEM: return "system call failed";
	case RPCRDMA_ERR_BUSY:
		return "address already in use, or resource busy";
	case RPCRDMA_ERR_NOENT: return "no such object";
	case RPCRDMA_ERR_OVERFLOW: return "length overflow";
	case RPCRDMA_ERR_CONFIG:
		return "invalid RPCRDMA_* environment variable (named on stderr)";
	case RPCRDMA_ERR_TRUNCATED: return "message truncated";
	case RPCRDMA_ERR_BAD_VERSION: return "unsupported RPC-over-RDMA version";
	case RPCRDMA_ERR_BAD_PROC: return "unknown transport header type";
	case RPCRDMA_ERR_BAD_BOOL: return "XDR boolean/optional word not 0 or 1";
	case RPCRDMA_ERR_TOO_MANY_SEGMENTS: return "too many segments";
	case RPCRDMA_ERR_TOO_MANY_CHUNKS: return "too many chunks";
	case RPCRDMA_ERR_HEADER_TOO_LONG: return "transport header too long";
	case RPCRDMA_ERR_BAD_LENGTH: return "invalid length";
	case RPCRDMA_ERR_BAD_POSITION: return "invalid Read chunk position";
	case RPCRDMA_ERR_BAD_ALIGN: return "invalid RDMA_MSGP alignment";
	case RPCRDMA_ERR_BAD_ERRCODE: return "unknown RDMA_ERROR code";
	case RPCRDMA_ERR_BAD_FLAGS: return "reserved flag bits set";
	case RPCRDMA_ERR_BAD_PROPERTY: return "malformed transport property";
	case RPCRDMA_ERR_BAD_MAGIC: return "bad private data magic";
	case RPCRDMA_ERR_BAD_MSG_TYPE: return "invalid RPC msg_type";
	case RPCRDMA_ERR_BAD_RPCVERS: return "unsupported RPC version";
	case RPCRDMA_ERR_BAD_AUTH: return "malformed RPC credential or verifier";
	case RPCRDMA_ERR_BAD_STAT: return "invalid RPC reply status";
	case RPCRDMA_ERR_TRAILING: return "unexpected trailing bytes";
	case RPCRDMA_ERR_BAD_CHUNK: return "chunk inconsistent with message";
	case RPCRDMA_ERR_TOO_MANY_PROPERTIES: return "too many transport properties";
	case RPCRDMA_ERR_NO_DEVICE: return "no RDMA device";
	case RPCRDMA_ERR_ADDR: return "bad or unresolvable address";
	case RPCRDMA_ERR_CONNREFUSED: return "connection refused";
	case RPCRDMA_ERR_DISCONNECTED: return "disconnected";
	case RPCRDMA_ERR_PROTECTION: return "memory protection error";
	case RPCRDMA_ERR_NO_RECV: return "no receive buffer posted";
	case RPCRDMA_ERR_QP_STATE: return "queue pair in wrong state";
	case RPCRDMA_ERR_PROTOCOL: return "protocol violation by peer";
	case RPCRDMA_ERR_FLUSHED: return "work request flushed";
	case RPCRDMA_ERR_TERMINATED: return "peer terminated the connection";
	case RPCRDMA_ERR_NOT_RDMA:
		return "peer is not an RDMA endpoint (a plain TCP service?)";
	case RPCRDMA_ERR_PEER_ERR_VERS: return "peer reported ERR_VERS";
	case RPCRDMA_ERR_PEER_ERR_CHUNK: return "peer reported ERR_CHUNK";
	case RPCRDMA_ERR_PEER_ERROR: return "peer reported a transport error";
	case RPCRDMA_ERR_NO_CREDIT: return "no credit available";
	case RPCRDMA_ERR_CANCELLED: return "cancelled";
	case RPCRDMA_ERR_PEER_ERR_SYSTEM: return "peer reported RDMA2_ERR_SYSTEM";
	case RPCRDMA_ERR_PEER_ERR_RESOURCE:
		return "peer lacks the resources the call needs";
	case RPCRDMA_ERR_PEER_NO_REVERSE:
		return "peer does not accept this reverse-direction call";
	case RPCRDMA_ERR_RPC_PROG_UNAVAIL: return "RPC program unavailable";
	case RPCRDMA_ERR_RPC_PROG_MISMATCH: return "RPC program version mismatch";
	case RPCRDMA_ERR_RPC_PROC_UNAVAIL: return "RPC procedure unavailable";
	case RPCRDMA_ERR_RPC_GARBAGE_ARGS: return "RPC arguments undecodable";
	case RPCRDMA_ERR_RPC_SYSTEM_ERR: return "RPC server system error";
	case RPCRDMA_ERR_RPC_MISMATCH: return "RPC version mismatch";
	case RPCRDMA_ERR_RPC_AUTH: return "RPC authentication error";
	case RPCRDMA_ERR_RPC_BAD_REPLY: return "malformed RPC reply";
	case RPCRDMA_ERR_CALL_TOO_BIG:
		return "call larger than this side's max_msg: not sent";
	case RPCRDMA_ERR_PEER_CALL_TOO_BIG:
		return "peer refused the call: larger than the peer's max_msg "
		       "(both sides need the same max_msg)";
	case RPCRDMA_ERR_REPLY_TOO_BIG:
		return "reply larger than the call's reply_max "
		       "(RPCRDMA_REPLY_ANY: any size up to max_msg)";
	}
	return "unknown error";
}
