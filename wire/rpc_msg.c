/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ONC RPC version 2 call and reply headers (RFC 5531 §9).
 *
 * Decisions where the RFC leaves room:
 *  - rpcvers: §9 "rpcvers MUST be equal to 2".  Anything else is
 *    RPCRDMA_ERR_BAD_RPCVERS, but the xid is returned so that the server
 *    can send the rejected_reply RPC_MISMATCH {2, 2} that §9 describes
 *    ("In case of an RPC version mismatch, the server returns the lowest
 *    and highest supported RPC version numbers") and which must carry the
 *    call's xid ("The xid of a REPLY message always matches that of the
 *    initiating CALL message").  Nothing after rpcvers is decoded: with
 *    another RPC version its layout is unknown.
 *  - msg_type, reply_stat, accept_stat and reject_stat are closed XDR
 *    enums with no registry; RFC 4506 §4.3 makes any other value an
 *    error, so they are rejected (BAD_MSG_TYPE / BAD_STAT).
 *  - auth_stat is open: §9 "IANA will hand out new auth_stat numbers"
 *    (§13.5).  An unknown value still forms a complete, well-formed
 *    rejected_reply and the client must be able to report it, so it is
 *    decoded as a plain number (13 and 14, RPCSEC_GSS_CREDPROBLEM and
 *    RPCSEC_GSS_CTXPROBLEM, are known names).
 *  - auth_flavor is open too (§8.2, §13.4): any number is accepted.
 *  - prog/vers/proc are not range-checked.  §8.1's "MUST NOT be the
 *    number zero" binds whoever assigns program version numbers; a call
 *    for version 0 is well-formed and the server answers PROG_MISMATCH.
 *  - the header ends where the decoder stops; bytes after it are the
 *    procedure's (§9 "procedure-specific parameters start here"), so
 *    trailing data is never an error here.
 */
#include "wire/rpc_msg.h"

#include <stdbool.h>
#include <string.h>

static int dec_call(struct rpcrdma_xdr_dec *d, struct rpcrdma_rpc_call *c)
{
	int rc = rpcrdma_xdr_get_u32(d, &c->rpcvers);
	if (rc)
		return rc;
	/* RFC 5531 §9: "rpcvers MUST be equal to 2" */
	if (c->rpcvers != RPCRDMA_RPC_VERS)
		return RPCRDMA_ERR_BAD_RPCVERS;
	if ((rc = rpcrdma_xdr_get_u32(d, &c->prog)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &c->vers)) ||
	    (rc = rpcrdma_xdr_get_u32(d, &c->proc)) ||
	    (rc = rpcrdma_opaque_auth_dec(d, &c->cred)) ||
	    (rc = rpcrdma_opaque_auth_dec(d, &c->verf)))
		return rc;
	return 0;
}

static int dec_mismatch(struct rpcrdma_xdr_dec *d,
			struct rpcrdma_rpc_mismatch *mm)
{
	int rc = rpcrdma_xdr_get_u32(d, &mm->low);
	return rc ? rc : rpcrdma_xdr_get_u32(d, &mm->high);
}

static int dec_reply(struct rpcrdma_xdr_dec *d, struct rpcrdma_rpc_reply *r)
{
	int rc = rpcrdma_xdr_get_u32(d, &r->stat);
	if (rc)
		return rc;
	switch (r->stat) {
	case RPCRDMA_RPC_MSG_ACCEPTED: {
		struct rpcrdma_rpc_accepted *a = &r->accepted;
		if ((rc = rpcrdma_opaque_auth_dec(d, &a->verf)) ||
		    (rc = rpcrdma_xdr_get_u32(d, &a->stat)))
			return rc;
		switch (a->stat) {
		case RPCRDMA_RPC_SUCCESS:
			/* "procedure-specific results start here" */
			return 0;
		case RPCRDMA_RPC_PROG_MISMATCH:
			return dec_mismatch(d, &a->mismatch);
		case RPCRDMA_RPC_PROG_UNAVAIL:
		case RPCRDMA_RPC_PROC_UNAVAIL:
		case RPCRDMA_RPC_GARBAGE_ARGS:
		case RPCRDMA_RPC_SYSTEM_ERR:
			return 0; /* void arms */
		default:
			return RPCRDMA_ERR_BAD_STAT;
		}
	}
	case RPCRDMA_RPC_MSG_DENIED: {
		struct rpcrdma_rpc_rejected *j = &r->rejected;
		if ((rc = rpcrdma_xdr_get_u32(d, &j->stat)))
			return rc;
		switch (j->stat) {
		case RPCRDMA_RPC_RPC_MISMATCH:
			return dec_mismatch(d, &j->mismatch);
		case RPCRDMA_RPC_AUTH_ERROR:
			/* any number: see the comment at the top */
			return rpcrdma_xdr_get_u32(d, &j->auth_stat);
		default:
			return RPCRDMA_ERR_BAD_STAT;
		}
	}
	default:
		return RPCRDMA_ERR_BAD_STAT;
	}
}

int rpcrdma_rpc_msg_decode(const void *buf, size_t len,
			   struct rpcrdma_rpc_msg *m)
{
	static const uint8_t empty[4];
	struct rpcrdma_xdr_dec d;
	int rc;

	if (!m || (!buf && len))
		return RPCRDMA_ERR_INVAL;
	memset(m, 0, sizeof(*m));
	/* Never do arithmetic on a NULL base, even with zero length. */
	rpcrdma_xdr_dec_init(&d, buf ? buf : empty, buf ? len : 0);
	if ((rc = rpcrdma_xdr_get_u32(&d, &m->xid)) ||
	    (rc = rpcrdma_xdr_get_u32(&d, &m->mtype)))
		return rc;
	switch (m->mtype) {
	case RPCRDMA_RPC_CALL:
		rc = dec_call(&d, &m->call);
		break;
	case RPCRDMA_RPC_REPLY:
		rc = dec_reply(&d, &m->reply);
		break;
	default:
		return RPCRDMA_ERR_BAD_MSG_TYPE;
	}
	return rc ? rc : (int)d.pos;
}

static bool auth_ok(const struct rpcrdma_opaque_auth *a)
{
	return a->len <= RPCRDMA_AUTH_MAX_BODY && (a->len == 0 || a->body);
}

/* Check that *m is something the decoder would accept and compute its
 * encoded size. */
static int check_msg(const struct rpcrdma_rpc_msg *m, size_t *size)
{
	size_t n = 8; /* xid, mtype */

	switch (m->mtype) {
	case RPCRDMA_RPC_CALL:
		if (!auth_ok(&m->call.cred) || !auth_ok(&m->call.verf))
			return RPCRDMA_ERR_BAD_AUTH;
		n += 16 + rpcrdma_opaque_auth_size(&m->call.cred) +
		     rpcrdma_opaque_auth_size(&m->call.verf);
		break;
	case RPCRDMA_RPC_REPLY:
		n += 4; /* reply_stat */
		if (m->reply.stat == RPCRDMA_RPC_MSG_ACCEPTED) {
			const struct rpcrdma_rpc_accepted *a = &m->reply.accepted;
			if (!auth_ok(&a->verf))
				return RPCRDMA_ERR_BAD_AUTH;
			n += rpcrdma_opaque_auth_size(&a->verf) + 4;
			if (a->stat == RPCRDMA_RPC_PROG_MISMATCH)
				n += 8;
			else if (a->stat > RPCRDMA_RPC_SYSTEM_ERR)
				return RPCRDMA_ERR_BAD_STAT;
		} else if (m->reply.stat == RPCRDMA_RPC_MSG_DENIED) {
			const struct rpcrdma_rpc_rejected *j = &m->reply.rejected;
			if (j->stat == RPCRDMA_RPC_RPC_MISMATCH)
				n += 12;
			else if (j->stat == RPCRDMA_RPC_AUTH_ERROR)
				n += 8;
			else
				return RPCRDMA_ERR_BAD_STAT;
		} else {
			return RPCRDMA_ERR_BAD_STAT;
		}
		break;
	default:
		return RPCRDMA_ERR_BAD_MSG_TYPE;
	}
	*size = n;
	return 0;
}

/* Encode an already checked message; the buffer is known to be large
 * enough, but every put is still checked. */
static int enc_msg(struct rpcrdma_xdr_enc *e, const struct rpcrdma_rpc_msg *m)
{
	int rc;

	if ((rc = rpcrdma_xdr_put_u32(e, m->xid)) ||
	    (rc = rpcrdma_xdr_put_u32(e, m->mtype)))
		return rc;
	if (m->mtype == RPCRDMA_RPC_CALL) {
		const struct rpcrdma_rpc_call *c = &m->call;
		/* RFC 5531 §9: "rpcvers MUST be equal to 2" */
		if ((rc = rpcrdma_xdr_put_u32(e, RPCRDMA_RPC_VERS)) ||
		    (rc = rpcrdma_xdr_put_u32(e, c->prog)) ||
		    (rc = rpcrdma_xdr_put_u32(e, c->vers)) ||
		    (rc = rpcrdma_xdr_put_u32(e, c->proc)) ||
		    (rc = rpcrdma_opaque_auth_enc(e, &c->cred)))
			return rc;
		return rpcrdma_opaque_auth_enc(e, &c->verf);
	}
	if ((rc = rpcrdma_xdr_put_u32(e, m->reply.stat)))
		return rc;
	if (m->reply.stat == RPCRDMA_RPC_MSG_ACCEPTED) {
		const struct rpcrdma_rpc_accepted *a = &m->reply.accepted;
		if ((rc = rpcrdma_opaque_auth_enc(e, &a->verf)) ||
		    (rc = rpcrdma_xdr_put_u32(e, a->stat)))
			return rc;
		if (a->stat == RPCRDMA_RPC_PROG_MISMATCH &&
		    ((rc = rpcrdma_xdr_put_u32(e, a->mismatch.low)) ||
		     (rc = rpcrdma_xdr_put_u32(e, a->mismatch.high))))
			return rc;
		return 0;
	}
	const struct rpcrdma_rpc_rejected *j = &m->reply.rejected;
	if ((rc = rpcrdma_xdr_put_u32(e, j->stat)))
		return rc;
	if (j->stat == RPCRDMA_RPC_RPC_MISMATCH) {
		if ((rc = rpcrdma_xdr_put_u32(e, j->mismatch.low)))
			return rc;
		return rpcrdma_xdr_put_u32(e, j->mismatch.high);
	}
	return rpcrdma_xdr_put_u32(e, j->auth_stat);
}

int rpcrdma_rpc_msg_encode(const struct rpcrdma_rpc_msg *m, void *buf,
			   size_t cap)
{
	struct rpcrdma_xdr_enc e;
	size_t size;
	int rc;

	if (!m || (!buf && cap))
		return RPCRDMA_ERR_INVAL;
	rc = check_msg(m, &size);
	if (rc)
		return rc;
	if (cap < size)
		return RPCRDMA_ERR_NOSPACE;
	rpcrdma_xdr_enc_init(&e, buf, cap);
	rc = enc_msg(&e, m);
	return rc ? rc : (int)e.pos;
}

int rpcrdma_rpc_msg_size(const struct rpcrdma_rpc_msg *m)
{
	size_t size;
	int rc;

	if (!m)
		return RPCRDMA_ERR_INVAL;
	rc = check_msg(m, &size);
	return rc ? rc : (int)size;
}

const char *rpcrdma_rpc_msg_type_name(uint32_t mtype)
{
	switch (mtype) {
	case RPCRDMA_RPC_CALL:
		return "CALL";
	case RPCRDMA_RPC_REPLY:
		return "REPLY";
	default:
		return "unknown";
	}
}

const char *rpcrdma_rpc_reply_stat_name(uint32_t stat)
{
	switch (stat) {
	case RPCRDMA_RPC_MSG_ACCEPTED:
		return "MSG_ACCEPTED";
	case RPCRDMA_RPC_MSG_DENIED:
		return "MSG_DENIED";
	default:
		return "unknown";
	}
}

const char *rpcrdma_rpc_accept_stat_name(uint32_t stat)
{
	static const char *const names[] = {
		"SUCCESS", "PROG_UNAVAIL", "PROG_MISMATCH",
		"PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR",
	};
	return stat < sizeof(names) / sizeof(names[0]) ? names[stat]
						       : "unknown";
}

const char *rpcrdma_rpc_reject_stat_name(uint32_t stat)
{
	switch (stat) {
	case RPCRDMA_RPC_RPC_MISMATCH:
		return "RPC_MISMATCH";
	case RPCRDMA_RPC_AUTH_ERROR:
		return "AUTH_ERROR";
	default:
		return "unknown";
	}
}

const char *rpcrdma_rpc_auth_stat_name(uint32_t stat)
{
	static const char *const names[] = {
		"AUTH_OK",
		"AUTH_BADCRED",
		"AUTH_REJECTEDCRED",
		"AUTH_BADVERF",
		"AUTH_REJECTEDVERF",
		"AUTH_TOOWEAK",
		"AUTH_INVALIDRESP",
		"AUTH_FAILED",
		"AUTH_KERB_GENERIC",
		"AUTH_TIMEEXPIRE",
		"AUTH_TKT_FILE",
		"AUTH_DECODE",
		"AUTH_NET_ADDR",
		"RPCSEC_GSS_CREDPROBLEM",
		"RPCSEC_GSS_CTXPROBLEM",
	};
	return stat < sizeof(names) / sizeof(names[0]) ? names[stat]
						       : "unknown";
}
