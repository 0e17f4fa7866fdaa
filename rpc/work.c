/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Deferred work: what a connection's progress hands up (a callback to
 * run, an incoming call to dispatch) is queued under the connection's
 * lock and run after it is dropped, by the thread that polled.
 *
 * Running work is never re-entered.  Work that running work produces (a
 * handler's reply frees a Responder slot and lets the next incoming call
 * through; a callback starts a call that fails at once) joins the queue
 * the thread is already running and runs after the current item returns,
 * not inside it: the stack stays one item deep however many calls a
 * connection holds (the old delivery nested as deep as the Responder
 * slots).
 *
 * The one exception is a synchronous wait: a thread that waits for an
 * outcome of its own (a synchronous call made from a callback or a
 * handler) must run what its own polling finds, or it could wait for
 * work queued behind it.  Its wait runs a queue of its own
 * (rpcrdma_rpc_work_run_nested).
 */
#include "rpc/rpc_internal.h"

/* The queue this thread is running, or NULL. */
static _Thread_local struct rpc_work *running;

static void drain(struct rpc_work *w)
{
	struct rpc_work_item *it;
	while ((it = w->head)) {
		w->head = it->next;
		if (!w->head)
			w->tail = &w->head;
		it->next = NULL;
		it->run(it);
	}
}

/* w's wake-ups (struct rpc_work): here and now, before its items,
 * even inside running work. */
static void run_wakes(struct rpc_work *w)
{
	struct rpc_work_item *it;
	while ((it = w->wakes)) {
		w->wakes = it->next;
		it->next = NULL;
		it->run(it);
	}
}

void rpcrdma_rpc_work_run(struct rpc_work *w)
{
	run_wakes(w);
	if (!w->head)
		return;
	if (running && running != w) {
		/* Inside running work: after the current item, not in it. */
		*running->tail = w->head;
		running->tail = w->tail;
		rpc_work_init(w);
		return;
	}
	running = w;
	drain(w);
	running = NULL;
}

void rpcrdma_rpc_work_run_nested(struct rpc_work *w)
{
	run_wakes(w);
	if (!w->head)
		return;
	struct rpc_work *outer = running;
	running = w;
	drain(w);
	running = outer;
}
