/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Poll groups and idle loops (iwarp on loopback, one process):
 *
 *  spread   a server with threads 3 and 12 clients: each connection is
 *           served by one poll-group thread ("rpcrdma-pgN") for all its
 *           calls, inline handlers run there, and the groups get 4
 *           connections each (a new one goes to the group with the
 *           fewest).  When group 1's four clients close, that group
 *           reaps them, and the next four connections all go to it.
 *  idle     the same server and 12 clients held idle 1.5 s: no loop
 *           thread, server or client, wakes on a 20 ms tick (that would
 *           be 75 wake-ups); each may look once every 2 s (the quiet
 *           tick, RPC_QUIET_TICK_MS).  Counted as
 *           the voluntary context switches of each thread in /proc.
 *           The 12 clients share the process's client loops, one per
 *           CPU ("rpcrdma-clntN").
 *  timeout  after the client's loop has slept through an idle second, an
 *           asynchronous call whose handler does not answer in time
 *           still times out on time (call timeout 200 ms, reported
 *           before 500 ms; started 300 ms into a second, when the loop
 *           would sleep 700 ms or more): the call wakes the sleeping loop
 *           (rpcrdma_rpc_loop_unquiet).  Three times.
 *  waiting  an asynchronous call (time-out 30 s) waits about a second
 *           for a handler that answers late: the client's loop is not
 *           woken on a 20 ms tick meanwhile (that would be some 45
 *           wake-ups), but at the call's deadline or the quiet tick,
 *           whichever comes first (rpcrdma_engine_next_deadline and the
 *           Requester's earliest call deadline, rpc/progress.c); the
 *           reply then arrives and completes the call.
 *  env      RPCRDMA_THREADS=2 gives two groups; a value out of range is
 *           refused (RPCRDMA_ERR_CONFIG).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpcrdma/rpcrdma.h"
#include "test.h"
#include "threads.h"

#define PROG 0x20000777u
#define NCLNT 12
#define NGROUPS 3

/* The handler answers with the group number of the thread it runs on
 * (-1: not a poll-group thread). */
static enum rpcrdma_svc_stat which_group(struct rpcrdma_svc_req *r, void *arg)
{
	(void)arg;
	char name[16] = "";
	pthread_getname_np(pthread_self(), name, sizeof name);
	int32_t g = -1;
	if (strncmp(name, "rpcrdma-pg", 10) == 0)
		g = atoi(name + 10);
	uint8_t *res = rpcrdma_svc_req_alloc(r, 4);
	if (!res)
		return RPCRDMA_SVC_SYSTEM_ERR;
	res[0] = (uint8_t)((uint32_t)g >> 24);
	res[1] = (uint8_t)((uint32_t)g >> 16);
	res[2] = (uint8_t)((uint32_t)g >> 8);
	res[3] = (uint8_t)g;
	struct rpcrdma_iov iov = {.base = res, .len = 4};
	return rpcrdma_svc_req_reply(r, &iov, 1) == 0 ? RPCRDMA_SVC_OK
						       : RPCRDMA_SVC_SYSTEM_ERR;
}

/* Procedure 2: answers late (after 1 s), on a worker. */
static enum rpcrdma_svc_stat late(struct rpcrdma_svc_req *r, void *arg)
{
	(void)r;
	(void)arg;
	sleep_ms(1000);
	return RPCRDMA_SVC_OK;
}

static int call_group(struct rpcrdma_clnt *c)
{
	struct rpcrdma_call call = {.proc = 1};
	struct rpcrdma_reply rep;
	int rc = rpcrdma_clnt_call(c, &call, &rep);
	int g = -100;
	if (rc == 0 && rep.len == 4)
		g = (int32_t)((uint32_t)rep.data[0] << 24 |
			      (uint32_t)rep.data[1] << 16 |
			      (uint32_t)rep.data[2] << 8 | rep.data[3]);
	rpcrdma_reply_free(&rep);
	return g;
}

/* The CPUs this process may run on (the default number of loops). */
static int ncpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 1;
	return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

static struct rpcrdma_svc *server(unsigned threads, unsigned workers)
{
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	o.threads = threads;
	o.workers = workers;
	struct rpcrdma_svc *s = NULL;
	CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", &o, &s), 0);
	if (s) {
		CHECK_EQ(rpcrdma_svc_register(s, PROG, 1, 1, which_group, NULL,
					      0), 0);
		CHECK_EQ(rpcrdma_svc_register(s, PROG, 1, 2, late, NULL, 0), 0);
	}
	return s;
}

static void spread_and_idle(void)
{
	struct rpcrdma_svc *s = server(NGROUPS, 0);
	if (!s)
		return;
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", rpcrdma_svc_port(s));
	struct rpcrdma_clnt *c[NCLNT] = {0};
	int per[NGROUPS] = {0}, grp[NCLNT];
	for (int i = 0; i < NCLNT; i++) {
		grp[i] = -1;
		CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, NULL, &c[i]), 0);
		if (!c[i])
			continue;
		int g = call_group(c[i]);
		grp[i] = g;
		CHECK(g >= 0 && g < NGROUPS);
		if (g >= 0 && g < NGROUPS)
			per[g]++;
		/* The same group for every call of a connection. */
		for (int k = 0; k < 5; k++)
			CHECK_EQ(call_group(c[i]), g);
	}
	for (int g = 0; g < NGROUPS; g++)
		CHECK_EQ(per[g], NCLNT / NGROUPS);

	/* Idle: let every loop settle into its quiet sleep, then count. */
	sleep_ms(1200);
	long before_s[16], after_s[16], before_c[NCLNT + 4],
		after_c[NCLNT + 4];
	int ns = thread_switches("rpcrdma-pg", before_s, 16);
	int nc = thread_switches("rpcrdma-clnt", before_c, NCLNT + 4);
	sleep_ms(1500);
	int ns2 = thread_switches("rpcrdma-pg", after_s, 16);
	int nc2 = thread_switches("rpcrdma-clnt", after_c, NCLNT + 4);
	CHECK_EQ(ns, NGROUPS);
	/* The clients share the process's client loops: one per CPU. */
	CHECK_EQ(nc, NCLNT < ncpus() ? NCLNT : ncpus());
	CHECK_EQ(ns2, ns);
	CHECK_EQ(nc2, nc);
	long most = 0;
	for (int i = 0; i < ns && i < ns2; i++)
		if (after_s[i] - before_s[i] > most)
			most = after_s[i] - before_s[i];
	for (int i = 0; i < nc && i < nc2; i++)
		if (after_c[i] - before_c[i] > most)
			most = after_c[i] - before_c[i];
	printf("idle 1.5 s: at most %ld wake-ups of a loop thread\n", most);
	CHECK(most <= 10);

	/* Group 1's clients leave; once it has reaped them it has the
	 * fewest connections, and the next four all go there. */
	for (int i = 0; i < NCLNT; i++)
		if (grp[i] == 1) {
			rpcrdma_clnt_destroy(c[i]);
			c[i] = NULL;
		}
	sleep_ms(500);
	struct rpcrdma_clnt *d[NCLNT / NGROUPS] = {0};
	for (int i = 0; i < NCLNT / NGROUPS; i++) {
		CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, NULL, &d[i]), 0);
		if (d[i])
			CHECK_EQ(call_group(d[i]), 1);
	}
	for (int i = 0; i < NCLNT / NGROUPS; i++)
		rpcrdma_clnt_destroy(d[i]);
	for (int i = 0; i < NCLNT; i++)
		rpcrdma_clnt_destroy(c[i]);
	struct rpcrdma_stats st;
	CHECK_EQ(rpcrdma_svc_stats(s, &st), 0);
	CHECK_EQ(st.connections, NCLNT + NCLNT / NGROUPS);
	rpcrdma_svc_destroy(s);
}

struct done {
	_Atomic uint64_t at; /* when the callback ran (ms) */
	int status;
};

static void on_done(void *arg, struct rpcrdma_reply *rep)
{
	struct done *d = arg;
	d->status = rep->status;
	rpcrdma_reply_free(rep);
	atomic_store(&d->at, now_ms());
}

/* A server with handler workers and one client of it whose first call
 * was answered (the version settled); NULL (and no server) on failure. */
static struct rpcrdma_clnt *worker_server_client(struct rpcrdma_svc **out)
{
	*out = NULL;
	struct rpcrdma_svc *s = server(NGROUPS, 2);
	if (!s)
		return NULL;
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%u", rpcrdma_svc_port(s));
	struct rpcrdma_clnt *c = NULL;
	CHECK_EQ(rpcrdma_clnt_create(addr, PROG, 1, NULL, &c), 0);
	if (!c) {
		rpcrdma_svc_destroy(s);
		return NULL;
	}
	CHECK(call_group(c) != -100); /* (a worker: not a group's thread) */
	*out = s;
	return c;
}

static void timeout_after_idle(void)
{
	struct rpcrdma_svc *s;
	struct rpcrdma_clnt *c = worker_server_client(&s);
	if (!c)
		return;
	for (unsigned k = 0; k < 3; k++) {
		/* Idle past a quiet tick (the client's loop sleeps until
		 * the next multiple of RPC_QUIET_TICK_MS, 2 s, of
		 * CLOCK_MONOTONIC, progress.c), then 300 ms into a second:
		 * the loop would sleep 700 ms or more if nothing woke it. */
		sleep_ms(1200);
		uint64_t t = now_ms();
		sleep_ms((unsigned)(1300 - t % 1000) % 1000);
		/* Asynchronous: its time-out is the loop's to see (a
		 * synchronous caller watches its own). */
		struct rpcrdma_call call = {.proc = 2, .timeout_ms = 200};
		struct done d = {.at = 0};
		uint64_t t0 = now_ms();
		CHECK_EQ(rpcrdma_clnt_call_async(c, &call, on_done, &d), 0);
		while (!atomic_load(&d.at) && now_ms() < t0 + 5000)
			sleep_ms(1);
		uint64_t took = atomic_load(&d.at) - t0;
		printf("time-out after an idle second: %d in %llu ms\n",
		       d.status, (unsigned long long)took);
		CHECK_EQ(d.status, RPCRDMA_ERR_TIMEOUT);
		CHECK(took >= 200 && took < 500);
	}
	rpcrdma_clnt_destroy(c);
	rpcrdma_svc_destroy(s);
}

static void waiting_sleeps(void)
{
	struct rpcrdma_svc *s;
	struct rpcrdma_clnt *c = worker_server_client(&s);
	if (!c)
		return;
	struct rpcrdma_call call = {.proc = 2, .timeout_ms = 30000};
	struct done d = {.at = 0};
	uint64_t t0 = now_ms();
	CHECK_EQ(rpcrdma_clnt_call_async(c, &call, on_done, &d), 0);
	/* From 100 ms after the call (it went out) until 900 ms, while the
	 * handler sleeps: the client loop's wake-ups. */
	sleep_ms(100);
	long before[16], after[16];
	int n = thread_switches("rpcrdma-clnt", before, 16);
	sleep_ms(800);
	int n2 = thread_switches("rpcrdma-clnt", after, 16);
	CHECK(n >= 1);
	CHECK_EQ(n2, n);
	CHECK_EQ(atomic_load(&d.at), 0); /* still waiting */
	long most = 0;
	for (int i = 0; i < n && i < n2; i++)
		if (after[i] - before[i] > most)
			most = after[i] - before[i];
	printf("a call waiting 0.8 s: at most %ld wake-ups of a client loop "
	       "thread\n", most);
	CHECK(most <= 8);
	while (!atomic_load(&d.at) && now_ms() < t0 + 10000)
		sleep_ms(1);
	CHECK_EQ(d.status, 0); /* answered */
	rpcrdma_clnt_destroy(c);
	rpcrdma_svc_destroy(s);
}

static void env_threads(void)
{
	setenv("RPCRDMA_THREADS", "2", 1);
	struct rpcrdma_svc *s = server(0, 0);
	long sw[16];
	CHECK_EQ(thread_switches("rpcrdma-pg", sw, 16), 2);
	rpcrdma_svc_destroy(s);
	setenv("RPCRDMA_THREADS", "257", 1);
	struct rpcrdma_opts o;
	rpcrdma_opts_default(&o);
	o.provider = "iwarp";
	s = NULL;
	CHECK_EQ(rpcrdma_svc_create("127.0.0.1:0", &o, &s), RPCRDMA_ERR_CONFIG);
	unsetenv("RPCRDMA_THREADS");
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	if (!strcmp(what, "spread") || !strcmp(what, "all"))
		spread_and_idle();
	if (!strcmp(what, "timeout") || !strcmp(what, "all"))
		timeout_after_idle();
	if (!strcmp(what, "waiting") || !strcmp(what, "all"))
		waiting_sleeps();
	if (!strcmp(what, "env") || !strcmp(what, "all"))
		env_threads();
	TEST_MAIN_END();
}
