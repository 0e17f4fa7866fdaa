/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * What nfs3_interop and nfs41_interop share: their report lines and the
 * reading of nfsd's own counters.  Define REPORT_NAME before including.
 */
#ifndef RPCRDMA_TESTS_KERNEL_INTEROP_REPORT_H
#define RPCRDMA_TESTS_KERNEL_INTEROP_REPORT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, REPORT_NAME ": FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	failures++;
}

static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf(REPORT_NAME ": ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Reads an nfsd statistics file (/proc/net/rpc/nfsd or a saved copy):
 * the "rpc calls badcalls badfmt badauth badclnt" line and the counter
 * line named by key ("proc3", "proc4ops"), whose first number is how many
 * counters follow.  0, or -1 when either line is missing. */
static int nfsd_stats(const char *path, const char *key, unsigned long rpc[5],
		      unsigned long *counts, unsigned max)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[4096];
	size_t kl = strlen(key);
	int got = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "rpc ", 4) == 0 &&
		    sscanf(line + 4, "%lu %lu %lu %lu %lu", &rpc[0], &rpc[1],
			   &rpc[2], &rpc[3], &rpc[4]) == 5)
			got |= 1;
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			char *p = line + kl + 1, *end;
			unsigned long n = strtoul(p, &end, 10);
			p = end;
			for (unsigned long i = 0; i < n && i < max; i++) {
				counts[i] = strtoul(p, &end, 10);
				p = end;
			}
			got |= 2;
		}
	}
	fclose(f);
	return got == 3 ? 0 : -1;
}

#endif
