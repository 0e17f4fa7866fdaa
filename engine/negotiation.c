/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Version negotiation (draft-cel-nfsv4-rpcrdma-version-two-09 §7) and the
 * connection properties it carries (§5.3.4), in one place: what a new
 * connection starts in, the client's v2 opener and its answer or loss,
 * the fallback to version 1 a v1-only server gets (§7.2), and the inline
 * thresholds each version derives (RFC 8797 private data for v1, the
 * peer's Receive Buffer Size for v2).  The choices on the draft's open
 * points are in docs/v2.md.
 */
#include "engine/engine_internal.h"
#include "wire/xdr.h"

/* The versions we would accept now: ERR_VERS reports this range. */
void rpcrdma_vers_range(const struct rpcrdma_engine *e, uint32_t *lo,
			uint32_t *hi)
{
	if (e->vers) {
		*lo = *hi = e->vers; /* §7.3: never switch mid-connection */
		return;
	}
	*lo = e->cfg.versions == RPCRDMA_ENGINE_V2_ONLY ? 2 : 1;
	*hi = e->cfg.versions == RPCRDMA_ENGINE_V1_ONLY ? 1 : 2;
}
/* Inline thresholds for the connection's version: v1 from the RFC 8797
 * private data; v2 from the peer's Receive Buffer Size (§4.2.1: 4096 when
 * it sent none) and our own buffers, which our RDMA2_CONNPROP
 * advertises. */
static void set_thresholds(struct rpcrdma_engine *e)
{
	rpcrdma_cm_pdata_thresholds(e->ssize, e->rsize, e->cfg.remote_inv,
				    &e->peer_pdata, &e->thr);
	if (e->vers != RPCRDMA_VERSION_2)
		return;
	e->thr.send = e->peer_rbsiz < e->ssize ? e->peer_rbsiz : e->ssize;
	e->thr.recv = e->rsize;
	/* §3.3: the Requester names the handle in each call; whether we
	 * may Send With Invalidate is ours alone to know. */
	e->thr.send_with_inv = e->cfg.remote_inv;
}

void rpcrdma_neg_fix(struct rpcrdma_engine *e, uint32_t vers)
{
	e->vers = vers;
	e->negotiating = false;
	set_thresholds(e);
}

/* The v2 opener failed: ERR_VERS (range lo..hi) or no answer in time. */
static void negotiation_failed(struct rpcrdma_engine *e, uint32_t lo,
			       uint32_t hi, int status)
{
	e->negotiating = false;
	if (e->cfg.versions == RPCRDMA_ENGINE_PREFER_V2 && lo <= 1 && hi >= 1) {
		/* §7.2: continue in v1 on this connection, remember it. */
		e->peer_v1_only = true;
		e->ctr.vers_fallbacks++;
		rpcrdma_neg_fix(e, RPCRDMA_VERSION_1);
		rpcrdma_credits_grant(e, 1); /* until v1's first reply */
		return;
	}
	/* V2_ONLY, or a server that speaks neither: every call fails. */
	e->vers_failed = true;
	rpcrdma_rq_fail_queued(e, status);
	/* The reason goes with CLOSE so that the driver can fail later
	 * calls with it too, rather than with a bare "disconnected". */
	rpcrdma_ask_close(e, status);
}

/* The opener was answered ERR_VERS, in whichever layout (§7.2). */
void rpcrdma_neg_refused(struct rpcrdma_engine *e, uint32_t lo, uint32_t hi)
{
	e->ctr.v2_err_recv[RPCRDMA_V2_ERR_VERS]++;
	e->ctr.err_vers_recv++;
	negotiation_failed(e, lo, hi, RPCRDMA_ERR_PEER_ERR_VERS);
}

/* Linux svcrdma (and any v1-only peer built the same way) answers a v2
 * message with a v1 RDMA_ERROR that echoes rdma_vers 2: seven words,
 * xid, 2, credit, 4, ERR_VERS, low, high, without rdma_flags.  A real
 * RDMA2_ERR_VERS is eight words long, so the length tells them apart. */
bool rpcrdma_neg_v1_err_vers(const uint8_t *buf, size_t len, uint32_t *lo,
			       uint32_t *hi)
{
	if (len != 28 || rpcrdma_be32_get(buf + 12) != RPCRDMA_V1_ERROR ||
	    rpcrdma_be32_get(buf + 16) != RPCRDMA_V1_ERR_VERS)
		return false;
	*lo = rpcrdma_be32_get(buf + 20);
	*hi = rpcrdma_be32_get(buf + 24);
	return true;
}

void rpcrdma_neg_apply_props(struct rpcrdma_engine *e, const struct rpcrdma_v2_hdr *h)
{
	e->ctr.connprop_recv++;
	/* §5.3.4: properties "are not allowed to change subsequently":
	 * only the first RDMA2_CONNPROP counts. */
	if (e->peer_props)
		return;
	e->peer_props = true;
	for (uint32_t i = 0; i < h->nprops; i++) {
		const struct rpcrdma_v2_prop *p = &h->props[i];
		/* §4.1: empty rdma_data means the default; unknown
		 * properties are skipped. */
		if (p->propid == RPCRDMA_V2_PROPID_RBSIZ)
			e->peer_rbsiz = p->has_value ? p->value
						     : RPCRDMA_V2_RBSIZ_DEFAULT;
		else if (p->propid == RPCRDMA_V2_PROPID_BRS)
			e->peer_brs = p->has_value ? p->value
						   : RPCRDMA_V2_RVREQSUP_INLINE;
	}
	set_thresholds(e);
}

/* The client's v2 opener was answered without an error: v2 it is.  A
 * response (F_RESPONSE) carries the first credit grant (§7). */
void rpcrdma_neg_answered(struct rpcrdma_engine *e, const struct rpcrdma_v2_hdr *h)
{
	rpcrdma_neg_fix(e, RPCRDMA_VERSION_2);
	if (h->flags & RPCRDMA_V2_F_RESPONSE && h->htype != RPCRDMA_V2_ERROR)
		rpcrdma_credits_grant(e, h->credit);
}

void rpcrdma_neg_start(struct rpcrdma_engine *e, uint64_t now)
{
	e->fallback_reconnect = false;
	e->vers = 0;
	e->negotiating = false;
	e->vers_failed = false;
	e->neg_lost = false;
	e->rx_closing = false;
	e->peer_props = false;
	e->peer_rbsiz = RPCRDMA_V2_RBSIZ_DEFAULT;
	e->peer_brs = RPCRDMA_V2_RVREQSUP_INLINE; /* §4.2 Table 1 */
	set_thresholds(e);
	if (e->cfg.versions == RPCRDMA_ENGINE_V1_ONLY) {
		rpcrdma_neg_fix(e, RPCRDMA_VERSION_1);
	} else if (e->cfg.client) {
		if (e->cfg.versions == RPCRDMA_ENGINE_PREFER_V2 &&
		    e->peer_v1_only) {
			/* §7.2: this server said ERR_VERS (or never answered)
			 * before; do not loop through negotiation again. */
			rpcrdma_neg_fix(e, RPCRDMA_VERSION_1);
		} else {
			/* §7: exactly one v2 message, at most 1024 bytes,
			 * then nothing until a non-error answer.  Ours is
			 * RDMA2_CONNPROP (§5.3.4: "the first message"). */
			e->negotiating = true;
			e->neg_xid = e->next_xid++;
			e->neg_deadline = now + e->cfg.neg_timeout_ms;
			rpcrdma_rs_connprop(e, e->neg_xid, false);
		}
	}
	/* A server learns the version from the client's first message. */
}

bool rpcrdma_neg_tick(struct rpcrdma_engine *e, uint64_t now)
{
	if (!e->negotiating || now < e->neg_deadline)
		return false;
	/* §7.2: "A client can assume the same situation (no server support
	 * for RPC-over-RDMA version 2) if the initial negotiation message is
	 * lost or dropped."  Not on this connection, though: a server that
	 * was only slow (starved, a connection storm) got the opener and
	 * follows it (§7.1): it would answer every v1 message here with
	 * ERR_VERS.  So the fallback is a new connection, which starts in
	 * v1 (peer_v1_only) and whose first message the server follows.
	 * Nothing but the opener went on this one (§7), so the calls held
	 * go there whatever their retries (docs/v2.md). */
	e->neg_lost = true; /* a late answer is dropped (receive.c) */
	if (e->cfg.versions == RPCRDMA_ENGINE_PREFER_V2) {
		e->negotiating = false;
		e->peer_v1_only = true;
		e->ctr.vers_fallbacks++;
		e->fallback_reconnect = true;
		rpcrdma_ask_close(e, RPCRDMA_ERR_TIMEOUT);
		return true;
	}
	negotiation_failed(e, 1, 1, RPCRDMA_ERR_TIMEOUT);
	return true;
}

void rpcrdma_neg_conn_lost(struct rpcrdma_engine *e)
{
	if (e->negotiating && e->cfg.versions == RPCRDMA_ENGINE_PREFER_V2) {
		/* §7.2: a server that drops the connection on our v2 opener
		 * is taken for a v1 server, or we would loop. */
		e->peer_v1_only = true;
		e->ctr.vers_fallbacks++;
	}
	e->negotiating = false;
}
