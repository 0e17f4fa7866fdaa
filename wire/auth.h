/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ONC RPC authentication fields (RFC 5531 §8.2, §10.1, Appendix A).
 *
 *   struct opaque_auth { auth_flavor flavor; opaque body<400>; };
 *
 *   struct authsys_parms {
 *       unsigned int stamp;
 *       string machinename<255>;
 *       unsigned int uid;
 *       unsigned int gid;
 *       unsigned int gids<16>;
 *   };
 *
 * Decoders never allocate: opaque bodies and the machine name point into
 * the caller's buffer (the name is NOT NUL-terminated).
 */
#ifndef RPCRDMA_WIRE_AUTH_H
#define RPCRDMA_WIRE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "rpcrdma/error.h"
#include "wire/xdr.h"

/* RFC 5531 §8.2 auth_flavor.  The flavor space is open (IANA registry,
 * §13.4), so decoders accept any number. */
enum rpcrdma_auth_flavor {
	RPCRDMA_AUTH_NONE = 0,
	RPCRDMA_AUTH_SYS = 1,
	RPCRDMA_AUTH_SHORT = 2,
	RPCRDMA_AUTH_DH = 3,
	RPCRDMA_AUTH_RPCSEC_GSS = 6,
};

#define RPCRDMA_AUTH_MAX_BODY 400u        /* opaque body<400> (§8.2) */
#define RPCRDMA_AUTHSYS_MAX_NAME 255u     /* machinename<255> (App. A) */
#define RPCRDMA_AUTHSYS_MAX_GIDS 16u      /* gids<16> (App. A) */
/* Largest encoded authsys_parms: 4 + (4 + 256) + 4 + 4 + (4 + 64). */
#define RPCRDMA_AUTHSYS_MAX_BODY 340u

struct rpcrdma_opaque_auth {
	uint32_t flavor;        /* enum rpcrdma_auth_flavor or any other */
	uint32_t len;           /* body length, 0..400 */
	const uint8_t *body;    /* may be NULL when len == 0 */
};

struct rpcrdma_authsys_parms {
	uint32_t stamp;
	uint32_t machinename_len;   /* 0..255 */
	const char *machinename;    /* not NUL-terminated; NULL ok if len 0 */
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;             /* 0..16 */
	uint32_t gids[RPCRDMA_AUTHSYS_MAX_GIDS];
};

/* AUTH_NONE with an empty body (RFC 5531 §10.1 recommends length 0). */
static inline struct rpcrdma_opaque_auth rpcrdma_auth_none(void)
{
	struct rpcrdma_opaque_auth a = {RPCRDMA_AUTH_NONE, 0, NULL};
	return a;
}

/*
 * Decode one opaque_auth at the cursor.  Returns 0;
 * RPCRDMA_ERR_TRUNCATED if the buffer ends inside it; RPCRDMA_ERR_BAD_AUTH
 * if the body length is over 400 (§8.2).  On error the cursor is unmoved.
 * Any flavor number is accepted; an AUTH_NONE body of any length is
 * accepted (§10.1: its contents are undefined).
 */
int rpcrdma_opaque_auth_dec(struct rpcrdma_xdr_dec *d,
			    struct rpcrdma_opaque_auth *a);

/* Encode one opaque_auth.  Returns 0; RPCRDMA_ERR_BAD_AUTH if len > 400
 * or body is NULL with len > 0; RPCRDMA_ERR_NOSPACE (cursor unmoved). */
int rpcrdma_opaque_auth_enc(struct rpcrdma_xdr_enc *e,
			    const struct rpcrdma_opaque_auth *a);

/* Encoded size of an opaque_auth: 8 + body rounded up to 4. */
size_t rpcrdma_opaque_auth_size(const struct rpcrdma_opaque_auth *a);

/*
 * Decode the AUTH_SYS credential carried in cred->body (Appendix A).
 * Returns 0, or RPCRDMA_ERR_BAD_AUTH when the flavor is not AUTH_SYS,
 * the body is truncated, the name is over 255 octets, there are more
 * than 16 gids, or bytes follow the structure inside the body.
 */
int rpcrdma_authsys_decode(const struct rpcrdma_opaque_auth *cred,
			   struct rpcrdma_authsys_parms *p);

/*
 * Encode authsys_parms into buf (the body of an AUTH_SYS opaque_auth).
 * Returns the body length (<= RPCRDMA_AUTHSYS_MAX_BODY);
 * RPCRDMA_ERR_BAD_AUTH if machinename_len > 255, ngids > 16 or the name
 * is NULL with a non-zero length; RPCRDMA_ERR_NOSPACE if cap is short.
 */
int rpcrdma_authsys_encode(const struct rpcrdma_authsys_parms *p, void *buf,
			   size_t cap);

/* Short names for tools ("AUTH_NONE", ...; "unknown" otherwise). */
const char *rpcrdma_auth_flavor_name(uint32_t flavor);

#endif
