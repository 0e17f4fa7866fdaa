/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * provider_conformance: one suite, every provider.
 *
 *   provider_conformance [--provider NAME] [--addr IP] [--filter A,B,...]
 *                        [--port BASE] [--mpa-crc] [--max-fpdu N]
 *                        [--max-rdma BYTES] [--list] [-v]
 *
 * Runs a server side and a client side in this process (one thread drives
 * both; the provider moves data on its own) and prints one line per case:
 * PASS, FAIL (with the failed checks above it) or SKIP (capability the
 * device does not claim).  The last line is exactly "N passed, N failed";
 * the exit status is 1 when any case failed.
 *
 * A watchdog gives every case a time budget: a provider call that never
 * returns fails the case and ends the run instead of hanging it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp.h"

extern int tp_cur_failed;
extern int tp_cur_skipped;
extern char tp_cur_skip_reason[400];
void tp_case_reset(void);

static int n_passed, n_failed, n_skipped;
static _Atomic uint64_t wd_deadline;  /* ms; 0 = idle */
static const char *_Atomic wd_case;

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(100 * 1000);
		uint64_t d = atomic_load(&wd_deadline);
		if (d && tp_now_ms() > d) {
			printf("FAIL %s (watchdog: case exceeded its time "
			       "budget; a provider call or wait hung)\n",
			       atomic_load(&wd_case));
			printf("%d passed, %d failed\n", n_passed,
			       n_failed + 1);
			fflush(stdout);
			_exit(1);
		}
	}
	return NULL;
}

static bool filter_match(const char *filter, const char *name)
{
	char buf[512];
	char *save = NULL;

	if (!filter || !*filter)
		return true;
	snprintf(buf, sizeof(buf), "%s", filter);
	for (char *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (*tok && strstr(name, tok))
			return true;
	return false;
}

static void run_case(const struct tp_case *c)
{
	uint64_t t0 = tp_now_ms();

	tp_case_reset();
	atomic_store(&wd_case, c->name);
	atomic_store(&wd_deadline, t0 + (uint64_t)c->timeout_s * 1000u);
	if (tp.verbose)
		printf("---- %s: %s\n", c->name, c->what);
	fflush(stdout);
	c->fn();
	atomic_store(&wd_deadline, 0);
	uint64_t ms = tp_now_ms() - t0;
	if (tp_cur_failed) {
		n_failed++;
		printf("FAIL %s (%d checks failed, %llu ms)\n", c->name,
		       tp_cur_failed, (unsigned long long)ms);
	} else if (tp_cur_skipped) {
		n_skipped++;
		printf("SKIP %s (%s)\n", c->name, tp_cur_skip_reason);
	} else {
		n_passed++;
		printf("PASS %s (%llu ms)\n", c->name,
		       (unsigned long long)ms);
	}
	fflush(stdout);
}

static int parse_addr(const char *s)
{
	memset(&tp.addr, 0, sizeof(tp.addr));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&tp.addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&tp.addr;

	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		tp.addrlen = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		tp.addrlen = sizeof(*a6);
		return 0;
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: provider_conformance [--provider NAME] [--addr IP]\n"
		"       [--filter SUBSTR[,SUBSTR...]] [--port BASE] "
		"[--mpa-crc]\n"
		"       [--max-fpdu N] [--max-rdma BYTES] [--device NAME] "
		"[--list] [-v]\n");
}

static const struct tp_case *const *all_sets(void)
{
	static const struct tp_case *const sets[] = {
		tp_cases_data, tp_cases_access, tp_cases_cm, tp_cases_place,
		tp_cases_srq, NULL,
	};
	return sets;
}

int main(int argc, char **argv)
{
	const char *provider = "iwarp";
	const char *filter = NULL;
	const char *addr = "127.0.0.1";
	long port = 0;
	bool list = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--provider") && v) {
			provider = v;
			i++;
		} else if (!strcmp(a, "--addr") && v) {
			addr = v;
			i++;
		} else if (!strcmp(a, "--filter") && v) {
			filter = v;
			i++;
		} else if (!strcmp(a, "--port") && v) {
			port = strtol(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--max-rdma") && v) {
			tp.max_rdma = (size_t)strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--max-fpdu") && v) {
			tp.params.max_fpdu = (unsigned)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--device") && v) {
			tp.params.device = v;
			i++;
		} else if (!strcmp(a, "--mpa-crc")) {
			tp.params.mpa_crc = true;
		} else if (!strcmp(a, "--list")) {
			list = true;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			tp.verbose = true;
		} else {
			usage();
			return 2;
		}
	}

	if (list) {
		for (const struct tp_case *const *s = all_sets(); *s; s++)
			for (const struct tp_case *c = *s; c->name; c++)
				printf("%-32s %s\n", c->name, c->what);
		return 0;
	}

	tp.addr_str = addr;
	if (parse_addr(addr) < 0) {
		fprintf(stderr, "bad address %s\n", addr);
		return 2;
	}
	if (port > 0 && port < 65000) {
		tp.port_base = (uint16_t)port;
		tp.port_limit = (uint16_t)(port + 200);
	} else {
		tp.port_base = (uint16_t)(20000 + (getpid() % 2000) * 20);
		tp.port_limit = (uint16_t)(tp.port_base + 1000);
	}
	tp.port_next = tp.port_base;

	tp.ops = rpcrdma_provider_find(provider);
	if (!tp.ops) {
		fprintf(stderr, "unknown provider %s\n", provider);
		printf("0 passed, 1 failed\n");
		return 1;
	}

	pthread_t wd;
	pthread_create(&wd, NULL, watchdog, NULL);
	pthread_detach(wd);

	/* Opening and querying is a case of its own: nothing else can run
	 * without it. */
	atomic_store(&wd_case, "open");
	atomic_store(&wd_deadline, tp_now_ms() + 30000);
	int rc = tp.ops->open(&tp.params, &tp.dev_srv);
	if (rc == 0)
		rc = tp.ops->open(&tp.params, &tp.dev_cli);
	if (rc == 0)
		rc = tp.ops->query(tp.dev_srv, &tp.attr);
	atomic_store(&wd_deadline, 0);
	if (rc < 0) {
		printf("FAIL open (provider %s: %d %s)\n", provider, rc,
		       rpcrdma_strerror(rc));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	printf("# provider %s device %s addr %s ports %u..%u\n", provider,
	       tp.attr.name, addr, tp.port_base, tp.port_limit - 1);
	printf("# max_qp_wr %u max_sge %u max_cqe %u max_mr_size %llu "
	       "max_msg_size %u ird %u ord %u max_private_data %u caps %#x\n",
	       tp.attr.max_qp_wr, tp.attr.max_sge, tp.attr.max_cqe,
	       (unsigned long long)tp.attr.max_mr_size, tp.attr.max_msg_size,
	       tp.attr.max_qp_rd_atom, tp.attr.max_qp_init_rd_atom,
	       tp.attr.max_private_data, tp.attr.caps);

	for (const struct tp_case *const *s = all_sets(); *s; s++)
		for (const struct tp_case *c = *s; c->name; c++)
			if (filter_match(filter, c->name))
				run_case(c);

	atomic_store(&wd_case, "close");
	atomic_store(&wd_deadline, tp_now_ms() + 30000);
	tp.ops->close(tp.dev_cli);
	tp.ops->close(tp.dev_srv);
	atomic_store(&wd_deadline, 0);

	if (n_skipped)
		printf("# %d skipped\n", n_skipped);
	printf("%d passed, %d failed\n", n_passed, n_failed);
	return n_failed || !n_passed ? 1 : 0;
}
