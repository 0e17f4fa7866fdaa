/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Bounds-checked XDR cursor (RFC 4506).
 *
 * A decode cursor reads from a caller buffer it never modifies; an encode
 * cursor writes into a caller buffer it never grows.  Neither allocates.
 * Every read checks the remaining length first, with arithmetic that
 * cannot overflow (lengths are compared against what remains, never added
 * to a position first).  All functions return 0 or a negative
 * enum rpcrdma_error; on error the cursor position is left unchanged.
 *
 * XDR basics used here (RFC 4506): every item is a multiple of four bytes
 * (§3); integers are big-endian (§4.1, §4.5); opaque data is padded with
 * zero bytes to a multiple of four (§4.9, §4.10).  On decode, pad bytes
 * are not required to be zero: RFC 4506 §4.9 only says what a sender
 * writes, and peers (e.g. Linux) do not check, so neither do we.
 */
#ifndef RPCRDMA_WIRE_XDR_H
#define RPCRDMA_WIRE_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rpcrdma/error.h"

#define RPCRDMA_XDR_UNIT 4u

/* Round n up to the XDR unit.  Returns false if that would overflow. */
static inline bool rpcrdma_xdr_roundup(size_t n, size_t *out)
{
	if (n > SIZE_MAX - 3)
		return false;
	*out = (n + 3) & ~(size_t)3;
	return true;
}

/* The zero bytes XDR puts after n bytes of opaque data to reach the next
 * unit (RFC 4506 §4.10): 0 to 3. */
static inline size_t rpcrdma_xdr_pad(size_t n)
{
	return (RPCRDMA_XDR_UNIT - (n & 3)) & 3;
}

struct rpcrdma_xdr_dec {
	const uint8_t *base;
	size_t len;
	size_t pos;
};

struct rpcrdma_xdr_enc {
	uint8_t *base;
	size_t cap;
	size_t pos;
};

static inline void rpcrdma_xdr_dec_init(struct rpcrdma_xdr_dec *d,
					const void *buf, size_t len)
{
	d->base = (const uint8_t *)buf;
	d->len = len;
	d->pos = 0;
}

static inline size_t rpcrdma_xdr_dec_remaining(const struct rpcrdma_xdr_dec *d)
{
	return d->len - d->pos;
}

static inline const uint8_t *rpcrdma_xdr_dec_ptr(const struct rpcrdma_xdr_dec *d)
{
	return d->base + d->pos;
}

/* A 32-bit unsigned integer in network order (RFC 4506 §4.1) at p,
 * without a cursor: for fixed-layout headers (MPA/DDP, private data) and
 * for patching a word already encoded (the XID). */
static inline uint32_t rpcrdma_be32_get(const void *p)
{
	const uint8_t *b = (const uint8_t *)p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static inline void rpcrdma_be32_put(void *p, uint32_t v)
{
	uint8_t *b = (uint8_t *)p;
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static inline int rpcrdma_xdr_get_u32(struct rpcrdma_xdr_dec *d, uint32_t *v)
{
	if (d->len - d->pos < 4)
		return RPCRDMA_ERR_TRUNCATED;
	*v = rpcrdma_be32_get(d->base + d->pos);
	d->pos += 4;
	return 0;
}

static inline int rpcrdma_xdr_get_u64(struct rpcrdma_xdr_dec *d, uint64_t *v)
{
	if (d->len - d->pos < 8)
		return RPCRDMA_ERR_TRUNCATED;
	const uint8_t *p = d->base + d->pos;
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x = x << 8 | p[i];
	*v = x;
	d->pos += 8;
	return 0;
}

/* XDR bool / optional-data discriminator (RFC 4506 §4.4, §4.19): only 0
 * and 1 are valid. */
static inline int rpcrdma_xdr_get_bool(struct rpcrdma_xdr_dec *d, bool *v)
{
	uint32_t w;
	size_t save = d->pos;
	int rc = rpcrdma_xdr_get_u32(d, &w);
	if (rc)
		return rc;
	if (w > 1) {
		d->pos = save;
		return RPCRDMA_ERR_BAD_BOOL;
	}
	*v = w != 0;
	return 0;
}

/* Fixed-length opaque of n bytes plus its padding (RFC 4506 §4.9).  Gives
 * a pointer into the buffer (zero copy). */
static inline int rpcrdma_xdr_get_fixed(struct rpcrdma_xdr_dec *d, size_t n,
					const uint8_t **p)
{
	size_t padded;
	if (!rpcrdma_xdr_roundup(n, &padded))
		return RPCRDMA_ERR_BAD_LENGTH;
	if (d->len - d->pos < padded)
		return RPCRDMA_ERR_TRUNCATED;
	*p = d->base + d->pos;
	d->pos += padded;
	return 0;
}

/* Variable-length opaque<max> (RFC 4506 §4.10): length word, bytes, pad.
 * A length over max is RPCRDMA_ERR_BAD_LENGTH; one past the buffer end is
 * RPCRDMA_ERR_TRUNCATED. */
static inline int rpcrdma_xdr_get_opaque(struct rpcrdma_xdr_dec *d,
					 uint32_t max, const uint8_t **p,
					 uint32_t *len)
{
	size_t save = d->pos;
	uint32_t n;
	int rc = rpcrdma_xdr_get_u32(d, &n);
	if (rc)
		return rc;
	if (n > max) {
		d->pos = save;
		return RPCRDMA_ERR_BAD_LENGTH;
	}
	rc = rpcrdma_xdr_get_fixed(d, n, p);
	if (rc) {
		d->pos = save;
		return rc;
	}
	*len = n;
	return 0;
}

static inline void rpcrdma_xdr_enc_init(struct rpcrdma_xdr_enc *e, void *buf,
					size_t cap)
{
	e->base = (uint8_t *)buf;
	e->cap = cap;
	e->pos = 0;
}

static inline int rpcrdma_xdr_put_u32(struct rpcrdma_xdr_enc *e, uint32_t v)
{
	if (e->cap - e->pos < 4)
		return RPCRDMA_ERR_NOSPACE;
	rpcrdma_be32_put(e->base + e->pos, v);
	e->pos += 4;
	return 0;
}

static inline int rpcrdma_xdr_put_u64(struct rpcrdma_xdr_enc *e, uint64_t v)
{
	if (e->cap - e->pos < 8)
		return RPCRDMA_ERR_NOSPACE;
	uint8_t *p = e->base + e->pos;
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
	e->pos += 8;
	return 0;
}

/* Fixed-length opaque: n bytes then zero padding to the XDR unit. */
static inline int rpcrdma_xdr_put_fixed(struct rpcrdma_xdr_enc *e,
					const void *src, size_t n)
{
	size_t padded;
	if (!rpcrdma_xdr_roundup(n, &padded))
		return RPCRDMA_ERR_BAD_LENGTH;
	if (e->cap - e->pos < padded)
		return RPCRDMA_ERR_NOSPACE;
	if (n)
		memcpy(e->base + e->pos, src, n);
	memset(e->base + e->pos + n, 0, padded - n);
	e->pos += padded;
	return 0;
}

static inline int rpcrdma_xdr_put_opaque(struct rpcrdma_xdr_enc *e,
					 const void *src, uint32_t n)
{
	size_t padded;
	if (!rpcrdma_xdr_roundup(n, &padded))
		return RPCRDMA_ERR_BAD_LENGTH;
	if (e->cap - e->pos < 4 || e->cap - e->pos - 4 < padded)
		return RPCRDMA_ERR_NOSPACE;
	(void)rpcrdma_xdr_put_u32(e, n);
	return rpcrdma_xdr_put_fixed(e, src, n);
}

#endif
