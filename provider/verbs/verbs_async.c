/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Asynchronous events of a device context (ibv_get_async_event).
 *
 * librdmacm's contexts are shared by every user of the device in the
 * process, and the provider runs no thread for their events: it reads
 * whatever is pending, without blocking, when it needs an answer.  Two
 * events matter:
 *  - IBV_EVENT_SRQ_LIMIT_REACHED, handed to the SRQ it names when
 *    query_srq asks (verbs_srq.c);
 *  - IBV_EVENT_CQ_ERR: the device lost a completion because the CQ was
 *    full.  Nothing else says so.  On rxe the QP that lost it takes no
 *    more messages and its peer retransmits for ever, with no completion
 *    and no CM event anywhere (docs/DEVICES.md, "A CQ that overflows").
 *    provider.h asks poll_cq to answer RPCRDMA_ERR_OVERFLOW once such a
 *    CQ is drained, so that its consumer disconnects instead of waiting;
 *    verbs_cq.c reads the events when a CQ may have been full.
 * Every event read is acked at once: ibv_destroy_cq and ibv_destroy_srq
 * wait for the events that named them to be acked.  The others
 * (QP_FATAL, COMM_EST, ...) are of no use here: a QP's failure shows in
 * its completions and CM events.
 */
#include <fcntl.h>

#include "provider/verbs/verbs_int.h"

void rpcrdma_verbs_async_drain(struct rpcrdma_verbs_dev *d)
{
	struct ibv_context *ctx = d->ctx;
	struct ibv_async_event ev;

	/* The context's async fd is made non-blocking here, the one place
	 * that reads it, on the first read through this device. */
	if (!atomic_load_explicit(&d->async_nonblock, memory_order_acquire)) {
		int fl = fcntl(ctx->async_fd, F_GETFL);
		if (fl < 0 || (!(fl & O_NONBLOCK) &&
			       fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0))
			return;
		atomic_store_explicit(&d->async_nonblock, true,
				      memory_order_release);
	}
	while (ibv_get_async_event(ctx, &ev) == 0) {
		/* The event is not acked yet: the object it names is not
		 * destroyed meanwhile. */
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			rpcrdma_verbs_srq_limit_event(ev.element.srq);
		else if (ev.event_type == IBV_EVENT_CQ_ERR)
			rpcrdma_verbs_cq_error_event(ev.element.cq);
		ibv_ack_async_event(&ev);
	}
}
