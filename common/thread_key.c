/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Per-thread state that goes with its thread: why in common/thread_key.h. */
#include "common/thread_key.h"

/* Keys are made once per process, so one lock serves them all. */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static int key_state(struct rpcrdma_thread_key *k)
{
	int s = atomic_load_explicit(&k->state, memory_order_acquire);
	if (s)
		return s;
	pthread_mutex_lock(&make_lock);
	s = atomic_load_explicit(&k->state, memory_order_relaxed);
	if (!s) {
		/* A failure is for good: the keys of a process are only
		 * given back when their users delete them, and trying
		 * again on every call would cost each a lock. */
		s = pthread_key_create(&k->key, k->destroy) == 0 ? 1 : -1;
		atomic_store_explicit(&k->state, s, memory_order_release);
	}
	pthread_mutex_unlock(&make_lock);
	return s;
}

bool rpcrdma_thread_key_usable(struct rpcrdma_thread_key *k)
{
	return key_state(k) > 0;
}

bool rpcrdma_thread_key_set(struct rpcrdma_thread_key *k, void *p)
{
	return key_state(k) > 0 && pthread_setspecific(k->key, p) == 0;
}
