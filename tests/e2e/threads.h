/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Time and the threads of this process, for the end-to-end tests that
 * look at the library's loop threads (test_groups.c, test_clnt_loops.c).
 */
#ifndef RPCRDMA_TEST_THREADS_H
#define RPCRDMA_TEST_THREADS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static inline void sleep_ms(unsigned ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

/* The threads of this process whose name starts with prefix: how many;
 * with sw, the voluntary context switches of each (at most max). */
static inline int thread_switches(const char *prefix, long *sw, int max)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && (!sw || n < max)) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], line[256], comm[32] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof comm, f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, prefix, strlen(prefix)) != 0)
			continue;
		if (!sw) {
			n++;
			continue;
		}
		snprintf(path, sizeof path, "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		long v = -1;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
				break;
		fclose(f);
		sw[n++] = v;
	}
	closedir(d);
	return n;
}

#endif
