/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ONC RPC opaque_auth and AUTH_SYS (RFC 5531 §8.2, §10.1, Appendix A).
 */
#include "wire/auth.h"

int rpcrdma_opaque_auth_dec(struct rpcrdma_xdr_dec *d,
			    struct rpcrdma_opaque_auth *a)
{
	size_t save = d->pos;
	uint32_t flavor, len;
	const uint8_t *body;
	int rc;

	rc = rpcrdma_xdr_get_u32(d, &flavor);
	if (rc)
		return rc;
	/* RFC 5531 §8.2: "opaque body<400>".  A longer body is a malformed
	 * credential or verifier, not a short buffer. */
	rc = rpcrdma_xdr_get_opaque(d, RPCRDMA_AUTH_MAX_BODY, &body, &len);
	if (rc) {
		d->pos = save;
		return rc == RPCRDMA_ERR_BAD_LENGTH ? RPCRDMA_ERR_BAD_AUTH : rc;
	}
	/* The flavor is not checked: the space is open (§8.2 "and more to
	 * be defined", IANA §13.4); the RPC layer decides what it accepts.
	 * RFC 5531 §10.1: AUTH_NONE body contents are "undefined", so any
	 * length up to 400 is accepted. */
	a->flavor = flavor;
	a->len = len;
	a->body = len ? body : NULL;
	return 0;
}

int rpcrdma_opaque_auth_enc(struct rpcrdma_xdr_enc *e,
			    const struct rpcrdma_opaque_auth *a)
{
	size_t save = e->pos;
	int rc;

	if (a->len > RPCRDMA_AUTH_MAX_BODY || (a->len && !a->body))
		return RPCRDMA_ERR_BAD_AUTH;
	rc = rpcrdma_xdr_put_u32(e, a->flavor);
	if (!rc)
		rc = rpcrdma_xdr_put_opaque(e, a->body, a->len);
	if (rc)
		e->pos = save;
	return rc;
}

size_t rpcrdma_opaque_auth_size(const struct rpcrdma_opaque_auth *a)
{
	/* Callers pass a validated len (<= 400); with a 64-bit size_t even
	 * UINT32_MAX cannot overflow. */
	return 8u + (((size_t)a->len + 3u) & ~(size_t)3u);
}

int rpcrdma_authsys_decode(const struct rpcrdma_opaque_auth *cred,
			   struct rpcrdma_authsys_parms *p)
{
	struct rpcrdma_xdr_dec d;
	const uint8_t *name;
	uint32_t n;

	if (cred->flavor != RPCRDMA_AUTH_SYS)
		return RPCRDMA_ERR_BAD_AUTH;
	if (cred->len > RPCRDMA_AUTH_MAX_BODY || (cred->len && !cred->body))
		return RPCRDMA_ERR_BAD_AUTH;
	memset(p, 0, sizeof(*p));
	rpcrdma_xdr_dec_init(&d, cred->body, cred->len);

	/* Every failure inside the body is a bad credential: the opaque
	 * length told us how much there is, so "truncated" here means the
	 * credential itself is malformed (the server answers AUTH_ERROR /
	 * AUTH_BADCRED). */
	if (rpcrdma_xdr_get_u32(&d, &p->stamp))
		return RPCRDMA_ERR_BAD_AUTH;
	/* Appendix A: "string machinename<255>" */
	if (rpcrdma_xdr_get_opaque(&d, RPCRDMA_AUTHSYS_MAX_NAME, &name, &n))
		return RPCRDMA_ERR_BAD_AUTH;
	p->machinename_len = n;
	p->machinename = n ? (const char *)name : NULL;
	if (rpcrdma_xdr_get_u32(&d, &p->uid) ||
	    rpcrdma_xdr_get_u32(&d, &p->gid))
		return RPCRDMA_ERR_BAD_AUTH;
	/* Appendix A: "unsigned int gids<16>" */
	if (rpcrdma_xdr_get_u32(&d, &n) || n > RPCRDMA_AUTHSYS_MAX_GIDS)
		return RPCRDMA_ERR_BAD_AUTH;
	for (uint32_t i = 0; i < n; i++)
		if (rpcrdma_xdr_get_u32(&d, &p->gids[i]))
			return RPCRDMA_ERR_BAD_AUTH;
	p->ngids = n;
	/* The body is exactly one authsys_parms; extra bytes mean the
	 * sender and we disagree on its layout. */
	if (rpcrdma_xdr_dec_remaining(&d) != 0)
		return RPCRDMA_ERR_BAD_AUTH;
	return 0;
}

int rpcrdma_authsys_encode(const struct rpcrdma_authsys_parms *p, void *buf,
			   size_t cap)
{
	struct rpcrdma_xdr_enc e;
	int rc;

	if (p->machinename_len > RPCRDMA_AUTHSYS_MAX_NAME ||
	    p->ngids > RPCRDMA_AUTHSYS_MAX_GIDS ||
	    (p->machinename_len && !p->machinename))
		return RPCRDMA_ERR_BAD_AUTH;
	if (!buf && cap)
		return RPCRDMA_ERR_INVAL;
	rpcrdma_xdr_enc_init(&e, buf, cap);
	rc = rpcrdma_xdr_put_u32(&e, p->stamp);
	if (!rc)
		rc = rpcrdma_xdr_put_opaque(&e, p->machinename,
					    p->machinename_len);
	if (!rc)
		rc = rpcrdma_xdr_put_u32(&e, p->uid);
	if (!rc)
		rc = rpcrdma_xdr_put_u32(&e, p->gid);
	if (!rc)
		rc = rpcrdma_xdr_put_u32(&e, p->ngids);
	for (uint32_t i = 0; !rc && i < p->ngids; i++)
		rc = rpcrdma_xdr_put_u32(&e, p->gids[i]);
	return rc ? rc : (int)e.pos;
}

const char *rpcrdma_auth_flavor_name(uint32_t flavor)
{
	switch (flavor) {
	case RPCRDMA_AUTH_NONE:
		return "AUTH_NONE";
	case RPCRDMA_AUTH_SYS:
		return "AUTH_SYS";
	case RPCRDMA_AUTH_SHORT:
		return "AUTH_SHORT";
	case RPCRDMA_AUTH_DH:
		return "AUTH_DH";
	case RPCRDMA_AUTH_RPCSEC_GSS:
		return "RPCSEC_GSS";
	default:
		return "unknown";
	}
}
