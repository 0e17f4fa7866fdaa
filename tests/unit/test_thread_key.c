/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Per-thread state that goes with its thread (common/thread_key.h): the
 * state is freed at the thread's exit; and in a process that has taken
 * every pthread key (PTHREAD_KEYS_MAX), a key that cannot be made is
 * never set (pthread_setspecific on it would have set another key, the
 * one numbered 0), and the library's per-thread users go on without it:
 * call records uncached, the waiter kept for the thread.
 */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/thread_key.h"
#include "rpc/call.h"
#include "rpc/rpc_internal.h"
#include "test.h"

static void *_Atomic freed_at_exit;

static void note_free(void *p)
{
	atomic_store(&freed_at_exit, p);
	free(p);
}

static struct rpcrdma_thread_key k1 = RPCRDMA_THREAD_KEY_INIT(note_free);
static struct rpcrdma_thread_key k2 = RPCRDMA_THREAD_KEY_INIT(note_free);
static struct rpcrdma_thread_key k3 = RPCRDMA_THREAD_KEY_INIT(note_free);

struct tied {
	struct rpcrdma_thread_key *k;
	void *p;
	bool set;
};

static void *tie(void *arg)
{
	struct tied *t = arg;
	t->p = malloc(16);
	t->set = t->p && rpcrdma_thread_key_set(t->k, t->p);
	if (!t->set)
		free(t->p);
	return NULL;
}

/* Set on a thread that then exits: destroy gets the pointer. */
static bool tied_freed(struct rpcrdma_thread_key *k)
{
	struct tied t = {k, NULL, false};
	pthread_t th;
	atomic_store(&freed_at_exit, NULL);
	if (pthread_create(&th, NULL, tie, &t))
		return false;
	pthread_join(th, NULL);
	return t.set && atomic_load(&freed_at_exit) == t.p;
}

#define MAX_TAKEN (PTHREAD_KEYS_MAX + 16)
static pthread_key_t taken[MAX_TAKEN];
static unsigned ntaken;

int main(void)
{
	/* Key 0 is the first a process makes: k1's below, or (under
	 * AddressSanitizer) the runtime's own, whose value must not move. */
	void *key0 = pthread_getspecific(0);
	CHECK(tied_freed(&k1));
	CHECK(rpcrdma_thread_key_usable(&k1));

	/* Every key of the process taken. */
	while (ntaken < MAX_TAKEN &&
	       pthread_key_create(&taken[ntaken], NULL) == 0)
		ntaken++;
	CHECK(ntaken < MAX_TAKEN);
	CHECK(ntaken > 0);
	CHECK(!rpcrdma_thread_key_usable(&k2));
	int mine;
	CHECK(!rpcrdma_thread_key_set(&k2, &mine));
	CHECK(!tied_freed(&k2));

	/* The library's users, meanwhile: a call record is made and freed
	 * (not cached: no leak), the thread's waiter is made and is the
	 * same on the next call. */
	for (int i = 0; i < 3; i++) {
		struct rpc_call *c = rpcrdma_rpc_call_alloc(64);
		CHECK(c != NULL);
		if (!c)
			break;
		c->region = NULL; /* what its user sets before any use */
		c->big = NULL;
		rpcrdma_rpc_call_free(c);
	}
	struct rpc_waiter *w = rpcrdma_rpc_waiter_self();
	CHECK(w != NULL);
	CHECK(rpcrdma_rpc_waiter_self() == w);
	/* Nobody's key got one of our pointers: not key 0, not k1's, not
	 * any other this process made. */
	CHECK(pthread_getspecific(0) == key0);
	CHECK(pthread_getspecific(k1.key) == NULL);
	bool clean = true;
	for (unsigned i = 0; i < ntaken; i++)
		clean = clean && pthread_getspecific(taken[i]) == NULL;
	CHECK(clean);

	/* Keys given back: a key not tried before is made again. */
	for (unsigned i = 0; i < ntaken; i++)
		pthread_key_delete(taken[i]);
	CHECK(tied_freed(&k3));
	CHECK(!rpcrdma_thread_key_usable(&k2)); /* a failure is for good */
	TEST_MAIN_END();
}
