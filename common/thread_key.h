/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Per-thread state that goes with its thread: a pthread key made at
 * first use, whose destructor frees the state at the thread's exit.
 *
 * Why one module: the library keeps three such states (a thread's cache
 * of call records, rpc/call.c; its waiter, rpc/progress.c; the iwarp RX
 * staging buffer, provider/iwarp/iwarp_qp_rx.c), and making the key can
 * fail: a process has PTHREAD_KEYS_MAX of them (1024 in glibc), and an
 * application may have taken them all.  A key that was never made must
 * never be set: pthread_setspecific() on it would set another key (the
 * variable still holds 0, the first key made in the process) and hand
 * our pointer to its destructor.  So each user asks here, and learns
 * whether its state can go with the thread.
 *
 * The fast path stays with each user, a _Thread_local pointer to its
 * state; its destructor clears that pointer when it is the one freed, so
 * that a call made later in the thread's exit (another key's destructor)
 * makes a new state instead of using the freed one.
 */
#ifndef RPCRDMA_COMMON_THREAD_KEY_H
#define RPCRDMA_COMMON_THREAD_KEY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct rpcrdma_thread_key {
	void (*destroy)(void *);
	atomic_int state; /* 0: not tried yet, 1: made, -1: cannot be */
	pthread_key_t key;
};

#define RPCRDMA_THREAD_KEY_INIT(fn) {.destroy = (fn)}

/* Whether k is made or can be (made now if not tried yet): a user that
 * cannot keep its state without it learns so before making one. */
bool rpcrdma_thread_key_usable(struct rpcrdma_thread_key *k);

/* Ties p to the calling thread: k's destroy(p) runs at the thread's exit
 * (a NULL p unties it).  False when k cannot be made or set; p is then
 * not tied, and the caller must not keep it for the thread. */
bool rpcrdma_thread_key_set(struct rpcrdma_thread_key *k, void *p);

#endif
